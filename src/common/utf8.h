/* utf8.h - cutting UTF-8 text at a character boundary (for limits that count bytes). */
#ifndef AIRLOCK_UTF8_H
#define AIRLOCK_UTF8_H

#include <stddef.h>

/* The longest prefix of s[0..len) that ends on a character boundary, given that s has at least
 * len + 1 readable bytes (the byte at len tells whether a character is split there). */
size_t utf8_cut(const char *s, size_t len);

#endif
