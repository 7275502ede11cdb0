/*
 * tsstrip.h - TypeScript without a toolchain: types erased in place, positions kept.
 *
 * ts_strip() turns TypeScript source into JavaScript by replacing every type-only construct with
 * spaces. Line terminators inside erased text are kept, so the output has exactly the input's
 * length and every token that survives stays at its byte offset, line and column: a stack trace
 * of the JavaScript points into the TypeScript. The input may be a module or a function body
 * (top-level `return` and `await` are accepted). Where erasing would let the JavaScript parse
 * differently (automatic semicolon insertion after an erased type), a `;` takes the place of one
 * erased character, so the length guarantee still holds.
 *
 * Erased: annotations (variables, parameters incl. `?` and `this` parameters, return types,
 * class fields), `interface`, `type` aliases, `declare ...`, `abstract` members and the
 * `abstract` modifier, overload signatures, index signatures, `implements`, the modifiers
 * public/private/protected/readonly/override, definite assignment `!`, non-null `!`, `as` and
 * `satisfies` (incl. `as const`), angle-bracket type assertions (`<T>x`, `<const>[...]`: the
 * grammar of .ts files, never .tsx), type arguments of calls, `new`, tagged templates and
 * instantiation expressions, type parameters (incl. `<T,>` and `<const T>`), `import type`,
 * `export type`, inline `type` specifiers (an import or export whose specifiers are all
 * type-only is erased whole), namespaces that hold only types, `export as namespace`.
 *
 * Refused with TS_ERR_UNSUPPORTED (unless transformed, see TS_TRANSFORM): `enum` and
 * `const enum`, namespaces/modules with values, parameter properties, decorators, `export =`,
 * `import x = require(...)` and `import x = N.y`, JSX (`<` that starts no type assertion, and
 * `</` after an operand), a type assertion after `return`/`yield` whose operand starts on a later
 * line, and an `as`/`satisfies` expression whose erasure would regroup the operators around it
 * (`a + b as T * c`). The message names the construct and where it starts:
 *   "TypeScript enum is not supported (run.ts:3:1): ..."
 * docs/typescript.md is the user-facing description.
 *
 * Not a type checker and not a validator of JavaScript: it understands the grammar well enough
 * to find every type, and reports a syntax error where it cannot. Linking: libc only. Thread
 * safety: none needed, no global state; calls on different inputs may run concurrently.
 */
#ifndef AIRLOCK_TSSTRIP_H
#define AIRLOCK_TSSTRIP_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TS_ERROR_MESSAGE_MAX 256

/* What kind of failure ts_strip() reported. */
enum ts_error_kind {
    TS_ERR_NONE = 0,
    TS_ERR_SYNTAX,      /* the input does not parse (as TypeScript without JSX) */
    TS_ERR_UNSUPPORTED, /* valid TypeScript that cannot be erased: enum, namespace, ... */
    TS_ERR_LIMIT,       /* nesting deeper than TS_MAX_NESTING, or input over TS_MAX_INPUT */
    TS_ERR_NOMEM,       /* an allocation failed */
    TS_ERR_ARGUMENT,    /* a NULL pointer where one is required */
};

/* Failure detail. line and column are 1-based (column counts UTF-8 characters, a tab is one);
 * offset is the byte offset of the same place. 0/0/0 when there is no position. */
struct ts_error {
    enum ts_error_kind kind;
    unsigned line;
    unsigned column;
    size_t offset;
    char message[TS_ERROR_MESSAGE_MAX]; /* NUL-terminated, one line, no trailing newline */
};

/* Flags of struct ts_options. */
enum ts_flags {
    /* Rewrite `enum` / `const enum` and constructor parameter properties into JavaScript
     * instead of refusing them. Each rewritten construct keeps its line count, but text on its
     * lines may shift (the output length then differs from the input length); every other line
     * is untouched. Without this flag, the output length always equals the input length. */
    TS_TRANSFORM = 1u << 0,
};

struct ts_options {
    const char *name; /* the file name shown in messages ("run.ts:3:1"); NULL shows "3:1" */
    unsigned flags;   /* enum ts_flags, or-ed */
};

/* Bound on the parser's recursion (nested brackets, statements, types, operators: about 300
 * nested parentheses); deeper input fails TS_ERR_LIMIT. The stack used stays under 256 KiB
 * (512 KiB under AddressSanitizer), so a thread with a small stack can call ts_strip(). */
#define TS_MAX_NESTING 1000
/* Largest input accepted, in bytes. */
#define TS_MAX_INPUT ((size_t)1 << 30)

/*
 * Strips src[0..len) (not NUL-terminated; any bytes, NUL included, are accepted and never read
 * past len) with default options: no name, no transforms.
 *
 * Returns 0 on success: *ret_out is a malloc'd, NUL-terminated string of *ret_len bytes (the
 * caller frees it with free()), and *ret_len == len. Returns -1 on failure: *ret_out and
 * *ret_len are untouched and, if reterr is not NULL, *reterr is filled in. src may be NULL when
 * len is 0. ret_out and ret_len must not be NULL (-1, TS_ERR_ARGUMENT).
 *
 * Time is linear in the input for real code (speculative parsing is bounded and memoized);
 * memory is about 2 bytes per input byte plus the output.
 */
int ts_strip(const char *src, size_t len, char **ret_out, size_t *ret_len, struct ts_error *reterr);

/* ts_strip() with options (opts may be NULL). With TS_TRANSFORM, *ret_len may differ from len
 * when an enum or a parameter property was rewritten. */
int ts_strip_opts(const char *src, size_t len, const struct ts_options *opts, char **ret_out,
                  size_t *ret_len, struct ts_error *reterr);

#ifdef __cplusplus
}
#endif

#endif
