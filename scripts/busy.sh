#!/bin/sh
# busy.sh CMD... - runs CMD while CPU-bound processes keep the machine's cores busy (`make
# test-busy`): a test that holds only on an idle machine fails here instead of in CI.
#
# Starts BUSY_HOGS busy loops (default 2: both cores of the CI machine), runs CMD, kills the
# loops and exits with CMD's status. The loops are killed whatever happens: CMD failing, this
# script interrupted (INT, TERM, HUP) or CMD missing. Prints how long CMD took, which is
# information, never a verdict.
set -u

hogs=${BUSY_HOGS:-2}
pids=""
cmd=""

stop_hogs() {
    for p in $pids; do
        kill "$p" 2>/dev/null
    done
    for p in $pids; do
        wait "$p" 2>/dev/null
    done
    pids=""
}

# On a signal CMD gets SIGTERM (it runs in the background, where sh ignores SIGINT for it),
# then the loops go. Called from the traps below only:
# shellcheck disable=SC2317
on_signal() {
    if [ -n "$cmd" ]; then
        kill -TERM "$cmd" 2>/dev/null
        wait "$cmd" 2>/dev/null
    fi
    stop_hogs
    exit "$1"
}

trap 'stop_hogs' EXIT
trap 'on_signal 130' INT
trap 'on_signal 143' TERM
trap 'on_signal 129' HUP

[ "$#" -gt 0 ] || { echo "usage: busy.sh CMD..." >&2; exit 2; }

i=0
while [ "$i" -lt "$hogs" ]; do
    sh -c 'while :; do :; done' </dev/null >/dev/null 2>&1 &
    pids="$pids $!"
    i=$((i + 1))
done
echo "busy.sh: $hogs busy loops (pids$pids) while: $*" >&2

start=$(date +%s)
"$@" &
cmd=$!
wait "$cmd"
rc=$?
cmd=""
end=$(date +%s)

stop_hogs
echo "busy.sh: exit $rc after $((end - start)) s under $hogs busy loops" >&2
exit "$rc"
