/*
 * jcs.c - RFC 8785 canonical JSON: the bytes the audit chain hashes.
 *
 * Numbers: the shortest of 1..17 significant digits whose correctly rounded decimal (glibc's
 * printf is exact), or failing that one of its two neighbours, reads back to the same double,
 * which is ECMAScript's choice of digits, then laid out by Number::toString's rules. The round-trip
 * check reads "DIGITSeN" (no decimal point) and the digits are picked out of printf's text whatever
 * separator it used, so the current locale never changes the output. Members: sorted by UTF-16 code
 * units (supplementary characters sort by their high surrogate, i.e. below U+E000..U+FFFF),
 * duplicates refused. Strings reuse json_write_string, which already escapes exactly as
 * JSON.stringify. Never reads past a node's lengths; recursion is bounded by the depth json_parse
 * accepted.
 */
#include "jcs.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

enum al_code jcs_number(double value, char out[JCS_NUMBER_MAX])
{
    char tmp[64];
    char digits[24];
    size_t k = 0;
    int exp10 = 0;
    size_t o = 0;

    out[0] = '\0';
    if (!isfinite(value)) {
        return AL_CONFIG_ERROR;
    }
    if (value == 0) {
        memcpy(out, "0", 2);
        return AL_OK;
    }
    double mag = fabs(value);
    if (mag < 9007199254740992.0 && (double)(uint64_t)mag == mag) {
        /* An integer below 2^53: a decimal with fewer digits is another integer, at least 1
         * away, so another double; its own digits are the shortest that read back, and
         * Number::toString prints them as they are. The common case (counts, sequence numbers)
         * skips the printf round trips below. */
        char rev[20];
        uint64_t u = (uint64_t)mag;
        size_t r = 0;
        do {
            rev[r++] = (char)('0' + u % 10);
            u /= 10;
        } while (u);
        if (value < 0) {
            out[o++] = '-';
        }
        while (r) {
            out[o++] = rev[--r];
        }
        out[o] = '\0';
        return AL_OK;
    }
    int found = 0;
    for (int prec = 1; prec <= 17 && !found; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, mag);
        uint64_t m = 0;
        const char *p = tmp;
        while (*p && *p != 'e') {
            if (*p >= '0' && *p <= '9') {
                m = m * 10 + (uint64_t)(*p - '0');
            }
            p++;
        }
        int scale = (int)strtol(*p == 'e' ? p + 1 : p, NULL, 10) - (prec - 1);
        /* The correctly rounded digits first; when they miss, their neighbours: just above a
         * power of two the doubles below are twice as dense, so a p-digit decimal above the
         * value can read back to it while the nearest one (below) does not. */
        static const int deltas[] = { 0, 1, -1 };
        for (size_t d = 0; d < sizeof deltas / sizeof deltas[0] && !found; d++) {
            uint64_t cand = m + (uint64_t)(int64_t)deltas[d];
            if (cand == 0) {
                continue;
            }
            char back[64];
            snprintf(back, sizeof back, "%" PRIu64 "e%d", cand, scale);
            if (strtod(back, NULL) == mag) {
                k = (size_t)snprintf(digits, sizeof digits, "%" PRIu64, cand);
                exp10 = scale + (int)k - 1;
                found = 1;
            }
        }
    }
    if (!found) {
        /* Unreachable for a finite double: 17 digits always round-trip. */
        return AL_CONFIG_ERROR;
    }
    while (k > 1 && digits[k - 1] == '0') {
        k--;
    }
    digits[k] = '\0';

    /* ECMAScript: value = 0.DIGITS x 10^n, with k digits. */
    int n = exp10 + 1;
    int kk = (int)k;
    if (value < 0) {
        out[o++] = '-';
    }
    if (kk <= n && n <= 21) {
        memcpy(out + o, digits, k);
        o += k;
        for (int i = 0; i < n - kk; i++) {
            out[o++] = '0';
        }
    } else if (0 < n && n <= 21) {
        memcpy(out + o, digits, (size_t)n);
        o += (size_t)n;
        out[o++] = '.';
        memcpy(out + o, digits + n, k - (size_t)n);
        o += k - (size_t)n;
    } else if (-6 < n && n <= 0) {
        out[o++] = '0';
        out[o++] = '.';
        for (int i = 0; i < -n; i++) {
            out[o++] = '0';
        }
        memcpy(out + o, digits, k);
        o += k;
    } else {
        out[o++] = digits[0];
        if (k > 1) {
            out[o++] = '.';
            memcpy(out + o, digits + 1, k - 1);
            o += k - 1;
        }
        o += (size_t)snprintf(out + o, JCS_NUMBER_MAX - o, "e%c%d", n - 1 < 0 ? '-' : '+',
                              abs(n - 1));
    }
    out[o] = '\0';
    return AL_OK;
}

static enum al_code from_buf(enum buf_status st, struct al_error *reterr)
{
    if (st == BUF_TOO_BIG) {
        return error_set(reterr, AL_OUTPUT_LIMIT, "canonical JSON exceeds its limit");
    }
    if (st == BUF_NO_MEMORY) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    return AL_OK;
}

/* A lone surrogate survives json_parse as 3-byte WTF-8 (ED A0..BF xx); I-JSON has none. */
static int has_surrogate(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i + 1 < len; i++) {
        if (u[i] == 0xed && u[i + 1] >= 0xa0) {
            return 1;
        }
    }
    return 0;
}

/* The code point at s[*pos] of well-formed UTF-8 (json_parse validated it); advances *pos. */
static uint32_t next_cp(const unsigned char *s, size_t len, size_t *pos)
{
    size_t i = *pos;
    uint32_t c = s[i];
    size_t n = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
    if (n > len - i) {
        n = len - i;
    }
    if (n == 2) {
        c &= 0x1f;
    } else if (n == 3) {
        c &= 0x0f;
    } else if (n == 4) {
        c &= 0x07;
    }
    for (size_t j = 1; j < n; j++) {
        c = (c << 6) | (s[i + j] & 0x3fu);
    }
    *pos = i + n;
    return c;
}

static uint32_t high_unit(uint32_t cp)
{
    return cp < 0x10000 ? cp : 0xd800 + ((cp - 0x10000) >> 10);
}

static int key_cmp(const void *a, const void *b)
{
    const struct json_node *x = *(const struct json_node *const *)a;
    const struct json_node *y = *(const struct json_node *const *)b;
    const unsigned char *s = (const unsigned char *)x->key;
    const unsigned char *t = (const unsigned char *)y->key;
    size_t i = 0;
    size_t j = 0;
    while (i < x->key_len && j < y->key_len) {
        uint32_t c = next_cp(s, x->key_len, &i);
        uint32_t d = next_cp(t, y->key_len, &j);
        if (c == d) {
            continue;
        }
        uint32_t hc = high_unit(c);
        uint32_t hd = high_unit(d);
        if (hc != hd) {
            return hc < hd ? -1 : 1;
        }
        /* Same high surrogate: the low surrogates order as the code points do. */
        return c < d ? -1 : 1;
    }
    if (i < x->key_len) {
        return 1;
    }
    if (j < y->key_len) {
        return -1;
    }
    return 0;
}

static enum al_code write_string(struct buf *b, const char *s, size_t len, struct al_error *reterr)
{
    if (has_surrogate(s, len)) {
        return error_set(reterr, AL_SERIALIZATION_ERROR,
                         "a string holds a lone surrogate (not I-JSON)");
    }
    return from_buf(json_write_string(b, s, len), reterr);
}

static enum al_code write_object(struct buf *b, const struct json_node *node, const char *omit_key,
                                 struct al_error *reterr)
{
    enum al_code rc = AL_OK;
    const struct json_node **members = NULL;
    size_t n = 0;

    if (node->count > 0) {
        members = malloc(node->count * sizeof *members);
        if (!members) {
            rc = error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
            goto out;
        }
    }
    for (const struct json_node *m = node->child; m; m = m->next) {
        if (omit_key && strlen(omit_key) == m->key_len &&
            memcmp(omit_key, m->key, m->key_len) == 0) {
            continue;
        }
        if (n < node->count) {
            members[n++] = m;
        }
    }
    if (n > 1) {
        qsort(members, n, sizeof *members, key_cmp);
    }
    rc = from_buf(buf_append_byte(b, '{'), reterr);
    for (size_t i = 0; rc == AL_OK && i < n; i++) {
        if (i > 0 && key_cmp(&members[i - 1], &members[i]) == 0) {
            rc = error_set(reterr, AL_SERIALIZATION_ERROR, "duplicate key \"%.64s\" (not I-JSON)",
                           members[i]->key);
            goto out;
        }
        if (i > 0) {
            rc = from_buf(buf_append_byte(b, ','), reterr);
        }
        if (rc == AL_OK) {
            rc = write_string(b, members[i]->key, members[i]->key_len, reterr);
        }
        if (rc == AL_OK) {
            rc = from_buf(buf_append_byte(b, ':'), reterr);
        }
        if (rc == AL_OK) {
            rc = jcs_write(b, members[i], NULL, reterr);
        }
    }
    if (rc == AL_OK) {
        rc = from_buf(buf_append_byte(b, '}'), reterr);
    }
out:
    free(members);
    return rc;
}

enum al_code jcs_write(struct buf *b, const struct json_node *node, const char *omit_key,
                       struct al_error *reterr)
{
    enum al_code rc = AL_OK;
    char num[JCS_NUMBER_MAX];

    if (!b || !node) {
        return error_set(reterr, AL_CONFIG_ERROR, "jcs_write: NULL argument");
    }
    switch (node->type) {
    case JSON_NULL:
        return from_buf(buf_append_str(b, "null"), reterr);
    case JSON_FALSE:
        return from_buf(buf_append_str(b, "false"), reterr);
    case JSON_TRUE:
        return from_buf(buf_append_str(b, "true"), reterr);
    case JSON_NUMBER:
        if (jcs_number(node->num, num) != AL_OK) {
            return error_set(reterr, AL_SERIALIZATION_ERROR,
                             "number %.*s is outside the range of a double (not I-JSON)",
                             (int)(node->raw_len < 40 ? node->raw_len : 40), node->raw);
        }
        return from_buf(buf_append_str(b, num), reterr);
    case JSON_STRING:
        return write_string(b, node->str, node->str_len, reterr);
    case JSON_ARRAY:
        rc = from_buf(buf_append_byte(b, '['), reterr);
        for (const struct json_node *e = node->child; rc == AL_OK && e; e = e->next) {
            if (e != node->child) {
                rc = from_buf(buf_append_byte(b, ','), reterr);
            }
            if (rc == AL_OK) {
                rc = jcs_write(b, e, NULL, reterr);
            }
        }
        if (rc == AL_OK) {
            rc = from_buf(buf_append_byte(b, ']'), reterr);
        }
        return rc;
    case JSON_OBJECT:
        return write_object(b, node, omit_key, reterr);
    }
    return error_set(reterr, AL_INTERNAL_ERROR, "jcs_write: unknown node type");
}
