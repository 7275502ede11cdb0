#!/bin/sh
# exec host that must never be reached: it fails the call loudly and echoes to stderr.
echo "HOST WAS REACHED: $AIRLOCK_FUNCTION $(cat)" >&2
exit 1
