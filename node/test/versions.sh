#!/bin/sh
# versions.sh - @airlock/run's tarball installs into an empty project without a compiler and
# works there, on Node.js 20 (the system's node), 22 and 24 (the official linux-x64 binaries,
# pinned in versions/package-lock.json and installed into the build folder by
# cmake/npm_ci.cmake): one Node-API build of the addon serves them all.
#
# For each version, in a scratch folder of its own: `npm install --offline` of the tarball into
# an empty project, then versions/smoke.mjs with that version's node, both under `env -i` with a
# PATH of one folder holding only node, npm and sh (npm runs on the node being tested), where
# cc, c++, gcc, g++, clang, make, python3 and node-gyp are checked to be absent. Once, on the
# first project: versions/consumer.ts type-checked by `tsc --noEmit` against the installed
# declarations (the typescript and @types/node that build node/ into TS_DEPS).
# Prints each version and what passed; exits non-zero when anything failed.
#   sh versions.sh TGZ NPM WORK TS_DEPS NODE...
set -u

if [ $# -lt 5 ]; then
    echo "usage: $0 TGZ NPM WORK TS_DEPS NODE..." >&2
    exit 2
fi
tgz=$1
npm=$2
work=$3
ts_deps=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
absent="cc c++ gcc g++ clang make python3 node-gyp"

if [ ! -f "$tgz" ]; then
    echo "FAIL: $tgz is missing (the default build target airlock_run_npm makes it)" >&2
    exit 1
fi

passed=0
failed=0
typed=no

# One version: $1 the node binary, $2 its scratch folder. Prints what passed; returns non-zero
# at the first failure, having printed why.
check_version()
{
    node=$1
    dir=$2
    rm -rf "$dir"
    mkdir -p "$dir/bin" "$dir/home" "$dir/project" || return 1
    ln -s "$node" "$dir/bin/node" &&
        ln -s "$npm" "$dir/bin/npm" &&
        ln -s "$(command -v sh)" "$dir/bin/sh" || return 1
    # npm's cache inside the scratch folder: --offline finds nothing there, so the install
    # proves that the tarball needs nothing from the registry.
    set -- env -i "HOME=$dir/home" "PATH=$dir/bin" "npm_config_cache=$dir/npm-cache" \
        "npm_config_update_notifier=false"

    version=$("$@" node --version) || {
        echo "  FAIL: $node does not start"
        return 1
    }
    echo "node $version ($node)"
    for tool in $absent; do
        if "$@" sh -c "command -v $tool" >/dev/null 2>&1; then
            echo "  FAIL: $tool is on the test's PATH"
            return 1
        fi
    done
    echo "  ok no compiler on PATH (absent: $absent)"

    printf '{ "name": "consumer", "version": "1.0.0", "private": true, "type": "module" }\n' \
        >"$dir/project/package.json" || return 1
    if ! (cd "$dir/project" && "$@" npm install --offline --no-audit --no-fund "$tgz") \
        >"$dir/npm-install.log" 2>&1; then
        echo "  FAIL: npm install of the tarball:"
        sed 's/^/    /' "$dir/npm-install.log"
        return 1
    fi
    echo "  ok npm install --offline $(basename "$tgz")"

    cp "$here/versions/smoke.mjs" "$dir/project/smoke.mjs" || return 1
    if ! (cd "$dir/project" && "$@" node smoke.mjs) >"$dir/smoke.log" 2>&1; then
        echo "  FAIL: smoke.mjs:"
        sed 's/^/    /' "$dir/smoke.log"
        return 1
    fi
    grep '^ok ' "$dir/smoke.log" | sed 's/^/  /'

    if [ "$typed" = yes ]; then
        return 0
    fi
    typed=yes
    tsc=$ts_deps/node_modules/typescript/bin/tsc
    if [ ! -f "$tsc" ]; then
        echo "  skipped: types (no typescript in $ts_deps)"
        return 0
    fi
    cp "$here/versions/consumer.ts" "$dir/project/consumer.ts" || return 1
    if ! (cd "$dir/project" && "$@" node "$tsc" --noEmit --strict --target es2022 \
        --module nodenext --moduleResolution nodenext \
        --typeRoots "$ts_deps/node_modules/@types" --types node consumer.ts) \
        >"$dir/tsc.log" 2>&1; then
        echo "  FAIL: tsc --noEmit consumer.ts:"
        sed 's/^/    /' "$dir/tsc.log"
        return 1
    fi
    echo "  ok types: tsc --noEmit of a consumer .ts against the installed declarations"
}

i=0
for node in "$@"; do
    i=$((i + 1))
    if check_version "$node" "$work/$i"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
done
echo "node versions: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
