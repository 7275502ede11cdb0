/* utf8.h - cutting UTF-8 text at a character boundary (for limits that count bytes), and
 * making text well-formed. */
#ifndef AIRLOCK_UTF8_H
#define AIRLOCK_UTF8_H

#include <stddef.h>

/* The longest prefix of s[0..len) that ends on a character boundary, given that s has at least
 * len + 1 readable bytes (the byte at len tells whether a character is split there). */
size_t utf8_cut(const char *s, size_t len);

/* A NUL-terminated, well-formed UTF-8 copy of s[0..len) (malloc'd; NULL when out of memory):
 * a lone surrogate (CESU-8, ED A0..BF xx) and every other ill-formed byte become U+FFFD.
 * The copy is at most len bytes: what does not fit is cut at a character boundary.
 * *ret_len gets the copy's length; NUL bytes inside are kept. With UTF8_C080_IS_NUL, the
 * overlong C0 80 (how the worker carries a NUL in a C string) becomes NUL. */
#define UTF8_C080_IS_NUL 1u
char *utf8_valid_dup(const char *s, size_t len, unsigned flags, size_t *ret_len);

#endif
