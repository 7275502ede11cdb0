#!/bin/sh
# install.destdir - `make install` as a packager runs it: cmake --install into a DESTDIR, then
# what a user of the installed tree relies on: every file in its place, one version everywhere,
# the README's C example built with `pkg-config --cflags --libs airlock` and run with no
# AIRLOCK_WORKER (the library finds its installed worker), the installed airlock running a
# program, and the Debian package's contents (dpkg-deb -c, not installed).
#
# usage: test_install.sh BUILD_DIR SOURCE_DIR
set -eu
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
tmp=$(mktemp -d /tmp/airlock-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
unset AIRLOCK_WORKER

root="$tmp/root"
DESTDIR="$root" cmake --install "$build" >"$tmp/install.log" || fail "cmake --install: $(tail -3 "$tmp/install.log")"
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
p="$root$prefix"
for f in bin/airlock bin/airlockd libexec/airlock/airlock-worker lib/libairlock.so.0 \
    lib/libairlock.so lib/libairlock.a include/airlock.h lib/pkgconfig/airlock.pc \
    share/man/man1/airlock.1 share/man/man8/airlockd.8 share/man/man3/libairlock.3; do
    [ -e "$p/$f" ] || fail "not installed: $prefix/$f"
done
[ "$(readlink "$p/lib/libairlock.so")" = libairlock.so.0 ] || fail "libairlock.so is not a link to the soname"
objdump -p "$p/lib/libairlock.so.0" | grep -q 'SONAME *libairlock.so.0' || fail "no soname libairlock.so.0"
echo "ok   files in place under $prefix"

version=$(sed -n 's/^Version: //p' "$p/lib/pkgconfig/airlock.pc")
[ "$("$p/bin/airlock" --version)" = "airlock $version" ] || fail "airlock --version: $("$p/bin/airlock" --version), want $version"
[ "$("$p/bin/airlockd" --version)" = "airlockd $version" ] || fail "airlockd --version: $("$p/bin/airlockd" --version)"
for page in man1/airlock.1 man8/airlockd.8 man3/libairlock.3; do
    grep -q "airlock $version" "$p/share/man/$page" || fail "$page does not carry version $version"
    ! grep -q '@' "$p/share/man/$page" || fail "$page has an unreplaced @VARIABLE@"
done
echo "ok   one version: $version"

# The README's C example, built as its reader would against the installed tree.
awk '/^```c$/ {on=1; next} /^```$/ {if (on) exit} on' "$src/README.md" >"$tmp/orders.c"
grep -q 'orders.c' "$tmp/orders.c" || fail "the README's C example was not found"
export PKG_CONFIG_PATH="$p/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -o "$tmp/orders" "$tmp/orders.c" \
    $(pkg-config --cflags --libs airlock) || fail "the README example does not build with pkg-config"
out=$(LD_LIBRARY_PATH="$p/lib" "$tmp/orders") || fail "the README example failed: $out"
[ "$out" = '[{"id":1,"amount":12.5}]' ] || fail "the README example printed $out"
echo "ok   the README's C example, built with pkg-config, runs with the installed worker"

printf 'return [1, 2, 3].map((x) => x * 2);\n' >"$tmp/double.js"
out=$("$p/bin/airlock" run "$tmp/double.js" | tr -d ' \n') || fail "the installed airlock run: $out"
[ "$out" = '[2,4,6]' ] || fail "the installed airlock printed $out"
echo "ok   the installed airlock runs a program"

# The Debian package (make deb), built from this tree and inspected, never installed.
(cd "$build" && cpack -G DEB -B "$tmp/deb" >"$tmp/cpack.log" 2>&1) || fail "cpack: $(tail -5 "$tmp/cpack.log")"
deb=$(ls "$tmp"/deb/*.deb)
[ "$(dpkg-deb -f "$deb" Package)" = airlock ] || fail "package name $(dpkg-deb -f "$deb" Package)"
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "package version $(dpkg-deb -f "$deb" Version)"
dpkg-deb -f "$deb" Depends | grep -q libseccomp || fail "Depends lacks libseccomp: $(dpkg-deb -f "$deb" Depends)"
dpkg-deb -c "$deb" >"$tmp/contents"
for f in bin/airlock bin/airlockd libexec/airlock/airlock-worker lib/libairlock.so.0 \
    include/airlock.h lib/pkgconfig/airlock.pc share/man/man8/airlockd.8; do
    grep -q "\.$prefix/$f\$" "$tmp/contents" || grep -q "\.$prefix/$f -> " "$tmp/contents" ||
        fail "the package lacks $prefix/$f"
done
echo "ok   the Debian package $(basename "$deb") holds the installed files"
echo "5 passed, 0 failed"
