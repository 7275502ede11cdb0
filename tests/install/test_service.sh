#!/bin/sh
# install.service - airlockd as the Debian package installs it as a service: the package built
# from this tree (cpack, as make deb) and extracted (dpkg-deb -x, not installed), then
#   - its unit has what the operator relies on (user airlock, ProtectSystem=strict,
#     NoNewPrivileges, PrivateTmp, StateDirectory, SIGHUP as reload, the config as a conffile
#     with its defaults: data in /var/lib/airlock, listening on 127.0.0.1) and passes
#     `systemd-analyze verify` with not one warning (its ExecStart checked in the package);
#   - as root: the maintainer scripts run as dpkg runs them where systemd does not run (install,
#     remove, purge) in a mount namespace over copies of /etc and /var/lib: the user, the state
#     directory, the config's mode, the service enabled offline, no systemctl but offline;
#   - as root: the user made by the postinst's own lines, airlockd started exactly as ExecStart
#     says (the package's binary and config; --listen and --data-dir added for a free port and
#     a temporary state directory), as that user with no new privileges (setpriv), runs the
#     README demo's curl line: the packaged worker runs the template under the service's user.
# systemd need not run (a container): nothing here talks to it.
#
# usage: test_service.sh BUILD_DIR SOURCE_DIR
set -eu
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
tmp=$(mktemp -d /tmp/airlock-service-XXXXXX)
made_user=""
demo_pid=""
cleanup() {
    if [ -n "$demo_pid" ]; then
        kill -INT "$demo_pid" 2>/dev/null || true
        wait "$demo_pid" 2>/dev/null || true
    fi
    if [ -n "$made_user" ]; then
        userdel airlock 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

(cd "$build" && cpack -G DEB -B "$tmp/deb" >"$tmp/cpack.log" 2>&1) || fail "cpack: $(tail -5 "$tmp/cpack.log")"
deb=$(ls "$tmp"/deb/*.deb)
root="$tmp/root"
dpkg-deb -x "$deb" "$root"
dpkg-deb -e "$deb" "$tmp/control"
unit=$(cd "$root" && find . -path '*/lib/systemd/system/airlockd.service' | sed 's/^\.//')
[ -n "$unit" ] || fail "the package has no lib/systemd/system/airlockd.service"
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
if [ "$prefix" = /usr ]; then want_unit=/lib/systemd/system/airlockd.service; else want_unit=$prefix/lib/systemd/system/airlockd.service; fi
[ "$unit" = "$want_unit" ] || fail "the unit is at $unit, not $want_unit"
for line in User=airlock Group=airlock ProtectSystem=strict NoNewPrivileges=yes PrivateTmp=yes \
    StateDirectory=airlock 'ExecReload=/bin/kill -HUP $MAINPID'; do
    grep -qxF "$line" "$root$unit" || fail "the unit lacks $line"
done
exec_start=$(sed -n 's/^ExecStart=//p' "$root$unit")
config=$(echo "$exec_start" | sed -n 's/.* --config \([^ ]*\).*/\1/p')
[ -n "$config" ] || fail "ExecStart names no --config: $exec_start"
grep -qxF "$config" "$tmp/control/conffiles" || fail "$config is not a conffile: $(cat "$tmp/control/conffiles")"
python3 - "$root$config" <<'PY' || fail "the packaged config $config is not the default it should be"
import json, sys
with open(sys.argv[1]) as f:
    c = json.load(f)
sys.exit(0 if c.get("data_dir") == "/var/lib/airlock" and c.get("listen", "").startswith("127.0.0.1:") else 1)
PY
for s in postinst prerm postrm; do
    [ -x "$tmp/control/$s" ] || fail "the package has no executable $s"
    sh -n "$tmp/control/$s" || fail "$s is not valid sh"
    # systemctl only where systemd runs: every call sits after a test of /run/systemd/system
    awk '/^ *#/ {next} /-d \/run\/systemd\/system/ {guard=1} /systemctl|deb-systemd-invoke/ && !guard {bad=1} END {exit bad}' \
        "$tmp/control/$s" || fail "$s calls systemctl without checking that systemd runs"
done
echo "ok   the package holds $unit (user airlock, sandboxed, SIGHUP to reload) and the conffile $config"

# systemd-analyze verify reads the unit as systemd would; the commands and man page it names
# must exist, so ExecStart and MANPATH point into the extracted package. Any warning fails.
command -v systemd-analyze >/dev/null || fail "systemd-analyze missing (scripts/bootstrap.sh installs systemd)"
mkdir "$tmp/verify"
sed "s|^ExecStart=\([^ ]*\)|ExecStart=$root\1|" "$root$unit" >"$tmp/verify/airlockd.service"
man=--man=no
if command -v man >/dev/null; then
    man=--man=yes
fi
if ! MANPATH="$root$prefix/share/man" systemd-analyze verify $man "$tmp/verify/airlockd.service" \
    >"$tmp/verify.log" 2>&1 || [ -s "$tmp/verify.log" ]; then
    fail "systemd-analyze verify: $(cat "$tmp/verify.log")"
fi
echo "ok   systemd-analyze verify passes the unit without a warning"

if [ "$(id -u)" -ne 0 ]; then
    echo "skip the maintainer scripts and airlockd as the user airlock need root (unshare, useradd, setpriv)"
    echo "2 passed, 0 failed, 2 skipped"
    exit 0
fi
# The maintainer scripts as dpkg runs them on a machine where systemd does not run (install,
# remove, purge), in a mount namespace whose /etc, /var/lib, systemd's unit directory and the
# config's directory are copies: this machine's own are never touched. systemctl and
# deb-systemd-invoke are wrapped to log each call: only systemctl's offline form (--root, which
# deb-systemd-helper uses to enable) may run.
ns="$tmp/ns"
mkdir -p "$ns/bin" "$ns/varlib" "$ns/conf/airlock"
cp -a /etc "$ns/etc"
cp -a /lib/systemd/system "$ns/units"
cp "$root$unit" "$ns/units/airlockd.service"
confparent=$(dirname "$(dirname "$config")")
[ "$confparent" = /etc ] && confcopy="$ns/etc" || confcopy="$ns/conf"
mkdir -p "$confcopy/airlock"
cp "$root$config" "$confcopy/airlock/"
for tool in systemctl deb-systemd-invoke; do
    real=$(command -v $tool || echo /bin/false)
    printf '#!/bin/sh
echo "%s $*" >>"%s/calls"
exec %s "$@"
' "$tool" "$ns" "$real" >"$ns/bin/$tool"
    chmod 0755 "$ns/bin/$tool"
done
cat >"$ns/run.sh" <<SH
set -e
mount --bind "$ns/etc" /etc
mount --bind "$ns/varlib" /var/lib
mount --bind "$ns/units" /lib/systemd/system
[ "$confparent" = /etc ] || mount --bind "$ns/conf" "$confparent"
export PATH="$ns/bin:\$PATH" DPKG_MAINTSCRIPT_PACKAGE=airlock DPKG_MAINTSCRIPT_ARCH=all
[ ! -d /run/systemd/system ] || { echo "systemd runs here" >&2; exit 3; }
DPKG_MAINTSCRIPT_NAME=postinst sh "$tmp/control/postinst" configure
getent passwd airlock >"$ns/passwd"
stat -c '%a %U' /var/lib/airlock >"$ns/state"
stat -c '%a %U %G' "$config" >"$ns/config"
ls /etc/systemd/system/multi-user.target.wants/ >"$ns/wants"
DPKG_MAINTSCRIPT_NAME=prerm sh "$tmp/control/prerm" remove
DPKG_MAINTSCRIPT_NAME=postrm sh "$tmp/control/postrm" remove
DPKG_MAINTSCRIPT_NAME=postrm sh "$tmp/control/postrm" purge
ls /etc/systemd/system/multi-user.target.wants/ >"$ns/wants-after"
[ -d /var/lib/airlock ] && echo kept >"$ns/purged"
SH
unshare -m sh "$ns/run.sh" >"$ns/log" 2>&1 || fail "the maintainer scripts failed: $(cat "$ns/log")"
grep -q '^airlock:.*:/var/lib/airlock:/usr/sbin/nologin$' "$ns/passwd" || fail "postinst made no user airlock: $(cat "$ns/passwd")"
[ "$(cat "$ns/state")" = "700 airlock" ] || fail "/var/lib/airlock is $(cat "$ns/state")"
[ "$(cat "$ns/config")" = "640 root airlock" ] || fail "$config is $(cat "$ns/config")"
grep -qx airlockd.service "$ns/wants" || fail "postinst did not enable airlockd.service: $(cat "$ns/wants")"
! grep -qx airlockd.service "$ns/wants-after" || fail "the service is still enabled after purge"
[ "$(cat "$ns/purged" 2>/dev/null)" = kept ] || fail "purge removed /var/lib/airlock"
if [ -f "$ns/calls" ] && grep -v -e '^systemctl --root=' "$ns/calls" >"$ns/bad-calls"; then
    fail "with no systemd running, the scripts called: $(cat "$ns/bad-calls")"
fi
echo "ok   postinst, prerm, postrm without systemd: user, state directory, config 0640, enabled offline; purge keeps the data"

# the user, by the postinst's own lines
if ! getent passwd airlock >/dev/null; then
    made_user=1
fi
sed -n '/# user: begin/,/# user: end/p' "$tmp/control/postinst" >"$tmp/user.sh"
grep -q useradd "$tmp/user.sh" || fail "the postinst's user lines were not found"
sh -e "$tmp/user.sh" || fail "the postinst's user lines failed"
getent passwd airlock >/dev/null || fail "the postinst's lines made no user airlock"
# the state directory as systemd makes it (StateDirectory=airlock, StateDirectoryMode=0700)
chmod 0755 "$tmp"
state="$tmp/state"
install -d -m 0700 -o airlock -g airlock "$state"
# ExecStart's command line, its files found in the package, run as the unit's user with no new
# privileges
argv=""
for word in $exec_start; do
    case "$word" in /*) [ -e "$root$word" ] && word="$root$word" ;; esac
    argv="$argv $word"
done
cat >"$tmp/airlockd-service" <<SH
#!/bin/sh
exec setpriv --reuid=airlock --regid=airlock --init-groups --no-new-privs --$argv "\$@"
SH
chmod 0755 "$tmp/airlockd-service"

: >"$tmp/demo.log"
python3 "$src/scripts/demo.py" --airlockd "$tmp/airlockd-service" --data-dir "$state" \
    --listen 127.0.0.1:0 --connector-port 0 >"$tmp/demo.log" 2>&1 &
demo_pid=$!
i=0
while ! grep -q '^airlock demo: ready' "$tmp/demo.log"; do
    i=$((i + 1))
    kill -0 "$demo_pid" 2>/dev/null || fail "the demo stopped: $(tail -20 "$tmp/demo.log")"
    [ $i -lt 600 ] || fail "the demo was not ready within 60 s: $(tail -20 "$tmp/demo.log")"
    sleep 0.1
done
pgrep -u airlock -f "^$root.*/airlockd --config $root$config" >/dev/null ||
    fail "no airlockd of the package runs as airlock: $(ps -eo user,args | grep '[a]irlockd')"
[ "$(stat -c %U "$state/airlock.db")" = airlock ] || fail "the database is not the user airlock's"
# the README's line, as the demo prints it for this server (its URL and key file)
curl_line=$(sed -n 's/^ *\(curl -s .*\/v1\/runs\)$/\1/p' "$tmp/demo.log")
[ -n "$curl_line" ] || fail "the demo printed no curl line: $(tail -20 "$tmp/demo.log")"
grep -q 'curl -s -H "Authorization: Bearer $(cat ./var/demo-agent.key)" -d .{"template":"orders-summary"}. http://127.0.0.1:8080/v1/runs' \
    "$src/README.md" || fail "the README's curl line is not the demo's"
answer=$(sh -c "$curl_line") || fail "the curl line failed: $curl_line"
echo "$answer" | python3 -c '
import json, sys
run = json.load(sys.stdin)
ok = run.get("template") == "orders-summary" and run.get("status") == "completed"
sys.exit(0 if ok else 1)' || fail "the demo run: $answer"
echo "ok   airlockd started as ExecStart says, as airlock, ran the README demo's curl line"
echo "4 passed, 0 failed"
