#!/bin/sh
# Checks what libairlock shows a program that links it (STYLE §2): the shared and the static
# library define no global symbol but al_ ones, and every symbol they need comes from one of
# the shared library's dependencies (ldd), or libgcc for the archive. libseccomp is not one of
# them: only airlock-worker uses it.
#
#   scripts/symbols.sh CC libairlock.a libairlock.so
set -eu
if [ $# -ne 3 ]; then
    echo "usage: scripts/symbols.sh CC libairlock.a libairlock.so" >&2
    exit 2
fi
cc=$1 archive=$2 shared=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() {
    echo "symbols: $*" >&2
    failed=$((failed + 1))
}

# Global definitions (T D B R V W ... anything but U) that are not al_ names.
nm -g --defined-only "$archive" | awk 'NF == 3 { print $3 }' | sort -u >"$tmp/a.def"
nm -D --defined-only "$shared" | awk 'NF == 3 { sub(/@.*/, "", $3); print $3 }' | sort -u >"$tmp/so.def"
for f in a so; do
    grep -v '^al_' "$tmp/$f.def" >"$tmp/$f.bad" || true
    if [ -s "$tmp/$f.bad" ]; then
        fail "$(if [ $f = a ]; then echo "$archive"; else echo "$shared"; fi) exports non-al_ symbols:" \
            "$(tr '\n' ' ' <"$tmp/$f.bad")"
    fi
done
grep -q '^al_run$' "$tmp/a.def" || fail "$archive does not define al_run"
grep -q '^al_run$' "$tmp/so.def" || fail "$shared does not define al_run"

# The dependencies: what the dynamic linker loads for libairlock.so.
deps=$(ldd "$shared" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
case "$deps" in *libseccomp*) fail "$shared depends on libseccomp" ;; esac
: >"$tmp/provided"
for d in $deps; do
    nm -D --defined-only "$d" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' >>"$tmp/provided"
done
libgcc=$($cc -print-libgcc-file-name)
[ -f "$libgcc" ] && nm -g --defined-only "$libgcc" 2>/dev/null | awk 'NF == 3 { print $3 }' >>"$tmp/provided"
sort -u -o "$tmp/provided" "$tmp/provided"

# Strong undefined references only: weak ones (__gmon_start__, ...) may stay unresolved, and
# _GLOBAL_OFFSET_TABLE_ is made by the linker.
nm -u "$archive" | awk '$1 == "U" && $2 != "_GLOBAL_OFFSET_TABLE_" { print $2 }' | sort -u >"$tmp/a.und"
nm -D -u "$shared" | awk '$1 == "U" { sub(/@.*/, "", $2); print $2 }' | sort -u >"$tmp/so.und"
for f in a so; do
    comm -23 "$tmp/$f.und" "$tmp/provided" >"$tmp/$f.missing"
    if [ -s "$tmp/$f.missing" ]; then
        fail "$(if [ $f = a ]; then echo "$archive"; else echo "$shared"; fi) needs symbols no" \
            "dependency defines: $(tr '\n' ' ' <"$tmp/$f.missing")"
    fi
done

if [ "$failed" -ne 0 ]; then
    echo "symbols: $failed failed" >&2
    exit 1
fi
echo "symbols: $(wc -l <"$tmp/a.def") al_ symbols in each library, $(wc -l <"$tmp/a.und") needed from:" \
    "$(echo $deps | tr '\n' ' ')"
