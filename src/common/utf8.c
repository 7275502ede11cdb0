/* utf8.c - character boundaries (a cut never leaves half a character behind) and well-formed
 * text for C callers: what QuickJS hands out for a string with a lone surrogate is CESU-8,
 * which no UTF-8 consumer accepts. */
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

size_t utf8_cut(const char *s, size_t len)
{
    while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80) {
        len--;
    }
    return len;
}

/* Length of the well-formed UTF-8 sequence at s (n bytes left), 0 if there is none. */
static size_t seq_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c < 0x80) {
        return 1;
    }
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF; /* ED A0..BF is a surrogate */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi) {
        return 0;
    }
    for (size_t i = 2; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            return 0;
        }
    }
    return len;
}

char *utf8_valid_dup(const char *text, size_t len, unsigned flags, size_t *ret_len)
{
    const unsigned char *s = (const unsigned char *)text;
    /* at most 3 output bytes per input byte (one U+FFFD each) */
    size_t i = 0;
    while (i < len) {
        size_t n = seq_len(s + i, len - i);
        if (n == 0) {
            break;
        }
        i += n;
    }
    int clean = i == len;
    char *out = malloc(clean ? len + 1 : len * 3 + 1);
    if (!out) {
        return NULL;
    }
    if (clean) {
        if (len) {
            memcpy(out, text, len);
        }
        out[len] = '\0';
        *ret_len = len;
        return out;
    }
    /* The copy is never longer than the text: the bounds that limited the text (console,
     * error texts) bound the copy too, so a replacement that does not fit ends it. */
    size_t o = 0;
    i = 0;
    while (i < len) {
        size_t n = seq_len(s + i, len - i);
        if (n > 0) {
            if (o + n > len) {
                break;
            }
            memcpy(out + o, s + i, n);
            o += n;
            i += n;
            continue;
        }
        if ((flags & UTF8_C080_IS_NUL) && s[i] == 0xC0 && len - i >= 2 && s[i + 1] == 0x80) {
            out[o++] = '\0';
            i += 2;
            continue;
        }
        /* A surrogate's three bytes (CESU-8) are one U+FFFD; any other bad byte is one. */
        if (s[i] == 0xED && len - i >= 3 && s[i + 1] >= 0xA0 && s[i + 1] <= 0xBF &&
            (s[i + 2] & 0xC0) == 0x80) {
            i += 3;
        } else {
            i += 1;
        }
        if (o + 3 > len) {
            break;
        }
        memcpy(out + o, "\xEF\xBF\xBD", 3);
        o += 3;
    }
    out[o] = '\0';
    *ret_len = o;
    return out;
}
