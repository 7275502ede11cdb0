#!/bin/sh
# Banned calls (STYLE §11): unbounded string functions, hidden global state, process-wide
# signal handling and shell execution have no place in airlock's sources.
set -eu
cd "$(dirname "$0")/.."
pattern='\b(strcpy|strcat|sprintf|vsprintf|gets|strtok|atoi|atol|system|popen|alloca|signal|rand|srand)[[:space:]]*\('
hits=$(grep -nE "$pattern" $(git ls-files 'src/*.c' 'src/*.h' 'include/*.h' 2>/dev/null || find src include -name '*.[ch]') | grep -v 'checksrc: allow' || true)
if [ -n "$hits" ]; then
    echo "checksrc: banned calls found:" >&2
    echo "$hits" >&2
    exit 1
fi
echo "checksrc: 1 passed, 0 failed"
