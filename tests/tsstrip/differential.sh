#!/bin/sh
# differential.sh OUT_DIR TSSTRIP_CLI - the driver of ctest tsstrip.differential.
#
# Installs the pinned TypeScript (tests/tsstrip/package.json + package-lock.json) into
# OUT_DIR/ts-peer with `npm ci` when it is missing or stale (never into the repository), then
# runs differential.mjs over tests/tsstrip/corpus twice: with default options (refusals
# expected where a snippet says so) and with --transform (enums and parameter properties
# compared with TypeScript's own output).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$1
CLI=$2
PEER=$OUT/ts-peer

command -v node >/dev/null || { echo "differential.sh: FAILED: node is required" >&2; exit 1; }
command -v npm >/dev/null || { echo "differential.sh: FAILED: npm is required" >&2; exit 1; }

want=$(node -p "require('$HERE/package.json').dependencies.typescript")
have=$(node -p "try { require('$PEER/node_modules/typescript/package.json').version } catch { '' }")
if [ "$have" != "$want" ] || ! cmp -s "$HERE/package-lock.json" "$PEER/package-lock.json"; then
    echo "differential.sh: installing typescript@$want into $PEER (npm ci)" >&2
    rm -rf "$PEER"
    mkdir -p "$PEER"
    cp "$HERE/package.json" "$HERE/package-lock.json" "$PEER/"
    if ! npm ci --prefix "$PEER" --no-audit --no-fund >&2; then
        rm -f "$PEER/package-lock.json"
        echo "differential.sh: FAILED: npm ci could not install typescript@$want" \
            "from the npm registry (is the network reachable?)" >&2
        exit 1
    fi
fi

node "$HERE/differential.mjs" --typescript "$PEER/node_modules/typescript" --cli "$CLI" \
    --corpus "$HERE/corpus"
node "$HERE/differential.mjs" --typescript "$PEER/node_modules/typescript" --cli "$CLI" \
    --corpus "$HERE/corpus" --transform
