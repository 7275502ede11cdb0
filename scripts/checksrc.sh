#!/bin/sh
# Banned calls (STYLE §11.4): unbounded string functions, hidden global state, process-wide
# signal handling and shell execution have no place in airlock's sources.
#
#   scripts/checksrc.sh            every .c and .h under src/ and include/ that git knows
#   scripts/checksrc.sh FILE...    those files
# A line may opt out with a comment saying `checksrc: allow` (and why).
set -eu
cd "$(dirname "$0")/.."
pattern='\b(strcpy|strcat|sprintf|vsprintf|gets|strtok|atoi|atol|system|popen|alloca|signal|rand|srand)[[:space:]]*\('
if [ $# -gt 0 ]; then
    files="$*"
else
    files=$(git ls-files 'src/*.c' 'src/*.h' 'include/*.h' 2>/dev/null || find src include -name '*.[ch]')
fi
# shellcheck disable=SC2086
hits=$(grep -nHE "$pattern" $files | grep -v 'checksrc: allow' || true)
if [ -n "$hits" ]; then
    echo "checksrc: banned calls found:" >&2
    echo "$hits" >&2
    exit 1
fi
echo "checksrc: $(echo "$files" | wc -w) files, no banned calls"
