#!/bin/sh
# exec host that throws: prints a padded message on stderr and exits 1.
cat > /dev/null
printf '  host failed: %s  \n\n' "${1:-no reason}" >&2
exit 1
