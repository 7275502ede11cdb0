/*
 * term.h - guest and host text made safe to show on a terminal (readable output only; --json
 * output is JSON and escapes control characters itself).
 */
#ifndef AIRLOCK_CLI_TERM_H
#define AIRLOCK_CLI_TERM_H

#include <stddef.h>
#include <stdio.h>

#include "buf.h"
#include "json.h"

/* Appends `text` with every terminal control escaped: C0 controls except tab and newline, and
 * DEL, as \xHH; C1 controls (U+0080-U+009F) as \u0080-\u009f; bytes that are not well-formed
 * UTF-8 as \xHH. All or nothing, like buf_append. */
enum buf_status term_escape(struct buf *b, const char *text, size_t len);
/* Appends valid JSON text with DEL and C1 controls inside strings written as \u escapes (the
 * same JSON value). */
enum buf_status term_json_escape(struct buf *b, const char *json, size_t len);
/* term_escape onto f. */
void term_write(FILE *f, const char *text, size_t len);
/* Valid JSON onto f on one line (json_write_compact), then term_json_escape. */
void term_write_json(FILE *f, const char *json, size_t len);

/* Valid JSON onto f indented by two spaces per level, ending with a newline; strings as
 * term_write_json leaves them. 0, or -1 when out of memory (nothing printed). */
int term_write_pretty(FILE *f, const char *json, size_t len);

#endif
