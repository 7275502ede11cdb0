/*
 * term.c - text from the guest or a host shown on a terminal. A guest controls its console
 * lines, error names, messages and stacks; printed raw, escape sequences could move the cursor,
 * erase lines and so hide or fake what airlock itself prints (an "interrupted" block, a
 * failure). Everything readable output shows of them goes through term_escape first.
 *
 * Kept as is: printable UTF-8, tab and newline (console lines and stacks span lines; a new
 * line cannot overwrite anything). Escaped: every other C0 control and DEL as \xHH (ESC is
 * \x1b, CR \x0d), the C1 controls U+0080-U+009F as \u0080-\u009f, and each byte that is not
 * part of well-formed UTF-8 as \xHH. Backslashes are not doubled: this is for display, not a
 * reversible encoding (--json is).
 *
 * Shown visibly as \uXXXX too, in readable output and inside --json's strings on a terminal:
 * the bidirectional controls and the invisible characters, with which text can read otherwise
 * than it is (Trojan Source: code shown as a comment, an argument shown reversed) to a person
 * deciding on it.
 */
#include "term.h"

#include <stdint.h>
#include <stdio.h>

/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlongs, no surrogates,
 * nothing above U+10FFFF), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t len)
{
    unsigned char c = s[0];
    size_t n;
    uint32_t cp;
    if (c < 0x80) {
        return 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (len < n) {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            return 0;
        }
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10ffff))) {
        return 0;
    }
    return n;
}

/* The length of the character at s when it is a bidirectional control (U+061C, U+200E, U+200F,
 * U+202A-U+202E, U+2066-U+2069) or invisible (U+200B-U+200D, U+2060, U+FEFF), with its code
 * point; else 0. */
static size_t hidden_seq(const unsigned char *s, size_t len, unsigned *ret_cp)
{
    if (len >= 2 && s[0] == 0xd8 && s[1] == 0x9c) {
        *ret_cp = 0x061c;
        return 2;
    }
    if (len < 3 || (s[0] != 0xe2 && s[0] != 0xef) || (s[1] & 0xc0) != 0x80 ||
        (s[2] & 0xc0) != 0x80) {
        return 0;
    }
    unsigned cp = (s[0] & 0x0fu) << 12 | (s[1] & 0x3fu) << 6 | (s[2] & 0x3fu);
    *ret_cp = cp;
    return (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) || cp == 0x2060 ||
                           (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff
                   ? 3
                   : 0;
}

enum buf_status term_escape(struct buf *b, const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t start = b->len;
    size_t run = 0; /* start of the bytes not yet appended */
    enum buf_status st = BUF_OK;
    char esc[8];
    for (size_t i = 0; i < len;) {
        size_t n = utf8_seq(s + i, len - i);
        unsigned cp;
        int bad;
        if (n > 1 && hidden_seq(s + i, n, &cp) == n) {
            bad = 1;
            snprintf(esc, sizeof esc, "\\u%04x", cp);
        } else if (n == 1) {
            bad = (s[i] < 0x20 && s[i] != '\t' && s[i] != '\n') || s[i] == 0x7f;
            if (bad) {
                snprintf(esc, sizeof esc, "\\x%02x", s[i]);
            }
        } else if (n == 2 && s[i] == 0xc2 && s[i + 1] < 0xa0) {
            bad = 1;
            snprintf(esc, sizeof esc, "\\u%04x", s[i + 1]);
        } else if (n == 0) {
            bad = 1;
            n = 1;
            snprintf(esc, sizeof esc, "\\x%02x", s[i]);
        } else {
            bad = 0;
        }
        if (bad) {
            st = buf_append(b, text + run, i - run);
            if (st == BUF_OK) {
                st = buf_append_str(b, esc);
            }
            if (st != BUF_OK) {
                goto out;
            }
            run = i + n;
        }
        i += n;
    }
    st = buf_append(b, text + run, len - run);
out:
    if (st != BUF_OK && b->data) {
        b->len = start;
        b->data[start] = '\0';
    }
    return st;
}

void term_write(FILE *f, const char *text, size_t len)
{
    struct buf b;
    buf_init(&b, SIZE_MAX / 2);
    if (term_escape(&b, text, len) == BUF_OK && b.data) {
        fwrite(b.data, 1, b.len, f);
    }
    buf_done(&b);
}

void term_write_json(FILE *f, const char *json, size_t len)
{
    struct buf compact, b;
    buf_init(&compact, SIZE_MAX / 2);
    buf_init(&b, SIZE_MAX / 2);
    if (json_write_compact(&compact, json, len) == BUF_OK && compact.data) {
        term_json_escape(&b, compact.data, compact.len);
        if (b.data) {
            fwrite(b.data, 1, b.len, f);
        }
    }
    buf_done(&compact);
    buf_done(&b);
}

enum buf_status term_json_escape(struct buf *b, const char *json, size_t len)
{
    /* Valid JSON holds no raw C0 control and is well-formed UTF-8: what is left to hide from a
     * terminal is DEL and the C1 controls inside strings, and to show a person the hidden
     * characters (hidden_seq), written as the \u escapes that JSON.parse reads back as the same
     * characters. */
    const unsigned char *s = (const unsigned char *)json;
    size_t start = b->len;
    size_t run = 0;
    enum buf_status st = BUF_OK;
    char esc[8];
    for (size_t i = 0; i < len; i++) {
        size_t skip;
        unsigned cp;
        if ((skip = hidden_seq(s + i, len - i, &cp)) != 0) {
            snprintf(esc, sizeof esc, "\\u%04x", cp);
        } else if (s[i] == 0x7f) {
            snprintf(esc, sizeof esc, "\\u007f");
            skip = 1;
        } else if (s[i] == 0xc2 && i + 1 < len && s[i + 1] >= 0x80 && s[i + 1] < 0xa0) {
            snprintf(esc, sizeof esc, "\\u%04x", s[i + 1]);
            skip = 2;
        } else {
            continue;
        }
        st = buf_append(b, json + run, i - run);
        if (st == BUF_OK) {
            st = buf_append_str(b, esc);
        }
        if (st != BUF_OK) {
            goto out;
        }
        i += skip - 1;
        run = i + 1;
    }
    st = buf_append(b, json + run, len - run);
out:
    if (st != BUF_OK && b->data) {
        b->len = start;
        b->data[start] = '\0';
    }
    return st;
}

/* Prints boundary JSON indented by two spaces per level. The text is compacted first (a
 * compromised worker's value may hold any whitespace between tokens); inside strings, DEL and
 * the C1 controls become \u escapes (term_json_escape), so the output is the same value and
 * shows nothing a terminal would obey. */
int term_write_pretty(FILE *f, const char *json, size_t json_len)
{
    struct buf compact, safe;
    int rc = -1;
    buf_init(&compact, SIZE_MAX / 2);
    buf_init(&safe, SIZE_MAX / 2);
    if (json_write_compact(&compact, json, json_len) != BUF_OK || !compact.data ||
        term_json_escape(&safe, compact.data, compact.len) != BUF_OK || !safe.data) {
        goto out;
    }
    const char *s = safe.data;
    size_t len = safe.len;
    int depth = 0;
    int in_str = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (in_str) {
            fputc(c, f);
            if (c == '\\' && i + 1 < len) {
                fputc(s[++i], f);
            } else if (c == '"') {
                in_str = 0;
            }
            continue;
        }
        switch (c) {
        case '"':
            in_str = 1;
            fputc(c, f);
            break;
        case '{':
        case '[':
            if (i + 1 < len && (s[i + 1] == '}' || s[i + 1] == ']')) {
                fputc(c, f);
                fputc(s[++i], f);
                break;
            }
            depth++;
            fprintf(f, "%c\n%*s", c, depth * 2, "");
            break;
        case '}':
        case ']':
            depth--;
            fprintf(f, "\n%*s%c", depth * 2, "", c);
            break;
        case ',':
            fprintf(f, ",\n%*s", depth * 2, "");
            break;
        case ':':
            fputs(": ", f);
            break;
        default:
            fputc(c, f);
        }
    }
    fputc('\n', f);
    rc = 0;
out:
    buf_done(&compact);
    buf_done(&safe);
    return rc;
}
