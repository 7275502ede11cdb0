/*
 * source.c - what a version's source may not hold (rules.h, "version sources").
 */
#include "rules.h"

/* The code point of the UTF-8 sequence at s (n bytes left) and its length; an invalid or cut
 * sequence is one byte of code point 0xFFFD. */
static uint32_t decode(const unsigned char *s, size_t n, size_t *ret_len)
{
    unsigned need = s[0] < 0x80 ? 0 : s[0] >= 0xF0 ? 3 : s[0] >= 0xE0 ? 2 : s[0] >= 0xC0 ? 1 : 4;
    uint32_t cp = need == 0   ? s[0]
                  : need == 1 ? s[0] & 0x1Fu
                  : need == 2 ? s[0] & 0x0Fu
                              : s[0] & 0x07u;
    *ret_len = 1;
    if (need == 4 || need >= n) {
        return need ? 0xFFFD : cp;
    }
    for (unsigned i = 1; i <= need; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            return 0xFFFD;
        }
        cp = cp << 6 | (s[i] & 0x3Fu);
    }
    *ret_len = need + 1;
    return cp;
}

static int is_bidi_control(uint32_t cp)
{
    return (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200E ||
           cp == 0x200F || cp == 0x061C;
}

int gov_source_bidi(const char *src, size_t len, struct gov_source_char *ret)
{
    const unsigned char *s = (const unsigned char *)src;
    unsigned line = 1, column = 1;
    for (size_t i = 0, step; i < len; i += step) {
        uint32_t cp = decode(s + i, len - i, &step);
        if (is_bidi_control(cp)) {
            *ret = (struct gov_source_char){ line, column, cp };
            return 1;
        }
        if (cp == '\n') {
            line++;
            column = 1;
        } else {
            column++;
        }
    }
    return 0;
}
