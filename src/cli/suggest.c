/*
 * suggest.c - "did you mean": the known name closest to a mistyped one, by optimal string
 * alignment distance (Levenshtein plus swapping two neighbours, the commonest typo: --limti).
 * A name is only suggested when it is close: at most 2 edits, and fewer than half of the
 * longer name's length, so '--frobnicate' suggests nothing rather than something arbitrary.
 */
#include "suggest.h"

#include <string.h>

#define SUGGEST_MAX_LEN 64

static size_t distance(const char *a, size_t la, const char *b, size_t lb)
{
    /* three rows of the dynamic programme: i-2, i-1, i */
    size_t rows[3][SUGGEST_MAX_LEN + 1];
    for (size_t j = 0; j <= lb; j++) {
        rows[0][j] = j;
    }
    for (size_t i = 1; i <= la; i++) {
        size_t *cur = rows[i % 3], *prev = rows[(i - 1) % 3], *prev2 = rows[(i + 1) % 3];
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t d = prev[j] + 1;
            if (cur[j - 1] + 1 < d) {
                d = cur[j - 1] + 1;
            }
            if (prev[j - 1] + cost < d) {
                d = prev[j - 1] + cost;
            }
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                prev2[j - 2] + 1 < d) {
                d = prev2[j - 2] + 1;
            }
            cur[j] = d;
        }
    }
    return rows[la % 3][lb];
}

const char *suggest_closest(const char *given, size_t given_len, const char *const *names,
                            size_t count)
{
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    if (given_len == 0 || given_len > SUGGEST_MAX_LEN) {
        return NULL;
    }
    for (size_t i = 0; i < count; i++) {
        size_t len = strlen(names[i]);
        if (len > SUGGEST_MAX_LEN) {
            continue;
        }
        size_t d = distance(given, given_len, names[i], len);
        size_t longer = len > given_len ? len : given_len;
        if (d <= 2 && d * 2 < longer && d < best_d) {
            best = names[i];
            best_d = d;
        }
    }
    return best;
}
