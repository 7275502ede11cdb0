/*
 * hex.h - bytes as lowercase hex, and hex back to bytes.
 */
#ifndef AIRLOCK_HEX_H
#define AIRLOCK_HEX_H

#include <stddef.h>

/* The n bytes of `in` as 2n lowercase hex digits into `out`, NUL-ended (2n + 1 bytes). */
void hex_encode(const unsigned char *in, size_t n, char *out);
/* 2n hex digits (either case) into n bytes; -1 at a character that is not a hex digit. */
int hex_decode(const char *hex, size_t n, unsigned char *out);

#endif
