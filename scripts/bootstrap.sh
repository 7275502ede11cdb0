#!/bin/sh
# Installs the Debian packages airlock needs to build, test and run its example (chromium: the
# browser tests of the web UI, tests/e2e/; postgresql: the throwaway cluster of the tests that run
# the store on PostgreSQL, tests/support/pg_cluster.sh, and libpq-dev airlockd's client of it). A no-op when everything is present; otherwise
# installs with apt-get (as root) or says what to install.
set -eu

packages="build-essential binutils cmake pkg-config libcmocka-dev libseccomp-dev libssl-dev clang libclang-rt-dev clang-format clang-tidy npm nodejs python3 ca-certificates locales libmicrohttpd-dev libsqlite3-dev libpq-dev postgresql libcurl4-openssl-dev python3-jsonschema chromium python3-pip python3-setuptools python3-pytest"
# HTTPS (airlockd links GnuTLS; the TLS test makes certificates with openssl and verifies
# them with curl); systemd-analyze checks the service unit of the Debian package
packages="$packages libgnutls28-dev openssl curl systemd"
missing=""
for p in $packages; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
# npm and node may come from outside Debian's packages: accept working commands.
case " $missing " in *" npm "*) command -v npm >/dev/null 2>&1 && missing=$(echo "$missing" | sed 's/ npm//') ;; esac
case " $missing " in *" nodejs "*) command -v node >/dev/null 2>&1 && missing=$(echo "$missing" | sed 's/ nodejs//') ;; esac
case " $missing " in *" python3 "*) command -v python3 >/dev/null 2>&1 && missing=$(echo "$missing" | sed 's/ python3//') ;; esac
# python3-jsonschema (tests/integration/openapi_check.py): accept a python3 that imports it.
case " $missing " in *" python3-jsonschema "*) python3 -c 'import jsonschema' >/dev/null 2>&1 && missing=$(echo "$missing" | sed 's/ python3-jsonschema//') ;; esac

[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "bootstrap: missing Debian packages:$missing" >&2
    echo "bootstrap: install them with: sudo apt-get install -y$missing" >&2
    exit 1
fi
echo "bootstrap: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
