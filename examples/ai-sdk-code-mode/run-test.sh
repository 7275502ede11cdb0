#!/bin/sh
# run-test.sh - runs agent.test.mjs in a scratch copy of this example, on the `run` that
# @ai-sdk/code-mode installs, or with AIRLOCK_RUN_TGZ=/path/to/airlock-run-X.tgz on that
# tarball, mapped to `run` by npm `overrides` as a user of the AI SDK would map it.
#
# The committed package-lock.json pins the real `run` and never the tarball: a lock holding a
# local tarball's integrity breaks on the next rebuild (npm ci fails with EINTEGRITY on a cold
# cache, and silently installs the old tarball from a warm one). So the copy is installed from
# the lock first, then the override is added and `npm install` resolves `run` alone again,
# from the tarball as it is now. Nothing is written to the source tree.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
npm_flags='--prefer-offline --no-audit --no-fund --loglevel=error'

tgz=
if [ -n "${AIRLOCK_RUN_TGZ:-}" ]; then
    if [ ! -f "$AIRLOCK_RUN_TGZ" ]; then
        echo "run-test.sh: AIRLOCK_RUN_TGZ=$AIRLOCK_RUN_TGZ: no such file" >&2
        exit 2
    fi
    tgz=$(cd "$(dirname "$AIRLOCK_RUN_TGZ")" && pwd)/$(basename "$AIRLOCK_RUN_TGZ")
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/ai-sdk-code-mode.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
trap 'exit 130' INT TERM

cd "$here"
cp package.json package-lock.json .npmrc agent.mjs agent.test.mjs "$scratch/"
cd "$scratch"

# shellcheck disable=SC2086 # npm_flags is a list of flags
npm ci $npm_flags

if [ -n "$tgz" ]; then
    # the package the test must find installed as `run`: the one the tarball holds
    expect=$(tar -xzOf "$tgz" package/package.json |
        node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(0, "utf8")).name)')
    # the one-line change of README.md; an absolute path, since npm resolves a relative file:
    # override of a transitive dependency from the dependent's folder in node_modules
    npm pkg set "overrides.run=file:$tgz"
    # shellcheck disable=SC2086
    npm install $npm_flags
else
    expect=run
fi

EXPECT_RUN_IMPL=$expect node --test agent.test.mjs
