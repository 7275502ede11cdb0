/* utf8.c - character boundaries: a cut never leaves half a character behind. */
#include "utf8.h"

size_t utf8_cut(const char *s, size_t len)
{
    while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80) {
        len--;
    }
    return len;
}
