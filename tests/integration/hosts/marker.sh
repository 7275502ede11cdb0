#!/bin/sh
# exec host that records each call: appends "$AIRLOCK_FUNCTION <args>" to the file named by $1,
# then echoes its arguments back. Usage: --host 'g.f=exec:sh HOSTS/marker.sh FILE'
args=$(cat)
printf '%s %s\n' "$AIRLOCK_FUNCTION" "$args" >> "$1"
printf '%s' "$args"
