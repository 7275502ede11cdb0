/*
 * diff.h - a unified diff of two texts, line by line, as `diff -u` writes it: "--- A" and
 * "+++ B" headers, then hunks "@@ -start,count +start,count @@" with DIFF_CONTEXT lines of
 * context, lines prefixed ' ', '-' or '+', and "\ No newline at end of file" after a last line
 * that has none. Identical texts give an empty diff (no headers). The template API shows what
 * changed between two versions with it, so an approver reads the change, not the whole source.
 *
 * Bounds: the edit script is minimal (Myers' O(ND) algorithm after stripping the common prefix
 * and suffix) while it needs at most DIFF_EDITS_MAX insertions and deletions and neither text
 * has more than DIFF_LINES_MAX lines; past either bound the differing middle is shown as one
 * replacement (every old line removed, every new one added). The result is still a correct
 * diff, only not the shortest, and time and memory stay linear in the input beyond the bound.
 */
#ifndef AIRLOCK_DIFF_H
#define AIRLOCK_DIFF_H

#include <stddef.h>

#include "airlock.h"

#include "buf.h"

#define DIFF_CONTEXT   3
#define DIFF_LINES_MAX 20000u /* lines of either text for a minimal diff */
#define DIFF_EDITS_MAX 2000u  /* insertions + deletions for a minimal diff */

/* Appends the unified diff of a (a_len bytes) and b to `out`, labelled a_label and b_label in
 * the headers (NUL-terminated, borrowed). a or b may be NULL when their length is 0. AL_OK,
 * AL_OUTPUT_LIMIT when `out`'s cap is reached (out then holds part of the diff),
 * AL_INTERNAL_ERROR when out of memory; `reterr` (may be NULL) says which. */
AL_NODISCARD enum al_code diff_unified(const char *a, size_t a_len, const char *b, size_t b_len,
                                       const char *a_label, const char *b_label, struct buf *out,
                                       struct al_error *reterr);

#endif
