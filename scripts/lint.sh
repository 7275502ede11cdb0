#!/bin/sh
# make lint: the checks that need no test run, over the files git knows.
#   1. clang-format --dry-run -Werror over every .c and .h (.clang-format, STYLE §10)
#   2. clang-tidy (.clang-tidy, tests/.clang-tidy) over every .c the build compiles, using its
#      compile_commands.json
#   3. scripts/checksrc.sh: banned calls (STYLE §11.4)
# Each step runs even when an earlier one failed, so one pass reports everything.
#
#   scripts/lint.sh BUILD_DIR
set -u
cd "$(dirname "$0")/.."
build=${1:-build}
db=$build/compile_commands.json
jobs=${JOBS:-2}
failed=""

for tool in clang-format clang-tidy; do
    if ! command -v $tool >/dev/null 2>&1; then
        echo "lint: $tool not found: run scripts/bootstrap.sh (Debian package $tool)" >&2
        exit 1
    fi
done

echo "lint: clang-format"
if ! git ls-files -z '*.c' '*.h' | xargs -0 clang-format --dry-run -Werror; then
    failed="$failed clang-format(run make format)"
fi

echo "lint: clang-tidy"
if [ ! -f "$db" ]; then
    echo "lint: $db not found: configure the build first (make build)" >&2
    failed="$failed clang-tidy"
else
    root=$(pwd)
    # Only files the build compiles have their flags in the database.
    files=$(git ls-files '*.c' | while read -r f; do
        grep -qF "\"file\": \"$root/$f\"" "$db" && echo "$f"
    done)
    if ! echo "$files" | xargs -P "$jobs" -n 4 clang-tidy -p "$build" --quiet 2>/dev/null; then
        failed="$failed clang-tidy"
    fi
fi

echo "lint: checksrc"
if ! scripts/checksrc.sh; then
    failed="$failed checksrc"
fi

if [ -n "$failed" ]; then
    echo "lint: failed:$failed" >&2
    exit 1
fi
echo "lint: clang-format, clang-tidy and checksrc passed"
