/*
 * strip.c - the TypeScript stripper: a JavaScript parser that walks TypeScript without building
 * a tree and records which byte ranges are types. The output is the input with those ranges
 * blanked (line terminators kept), so every surviving token keeps its position.
 *
 * Why a parser and not a token filter: whether `<` opens type arguments, a generic arrow or a
 * comparison, whether `(` starts arrow parameters with annotations or an expression, whether
 * `{` after `):` is a return type or a body, and whether `/` is a regex, depend on the grammar.
 *
 * Ambiguities are settled the way TypeScript's own parser settles them, by bounded speculation:
 * save the lexer (a struct copy), try one reading, keep it or restore. A failed attempt at a
 * position is memoized (one byte of flags per input byte), so no position is retried for the
 * same reading and nested parentheses cost O(depth^2) at worst, never exponential time. Every
 * recursion goes through enter(), which bounds nesting (TS_MAX_NESTING), so the C stack is
 * bounded whatever the input. Errors set a sticky flag and turn the current token into EOF;
 * every loop stops at EOF, so a failed parse unwinds without jumps.
 *
 * Never: read outside src[0..len), trust the input to be valid, allocate without checking.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lex.h"
#include "tsstrip.h"

#define F_ASYNC 1u /* function context: await is an operator */
#define F_GEN   2u /* function context: yield is an operator */

#define E_NOIN 1u /* expression context: `in` is not an operator (for-in heads) */
#define E_COND_TRUE \
    2u /* the true branch of ?: (an arrow with a return type must be followed by :) */

#define M_ARROW  1u /* memo: `(` here does not start arrow parameters */
#define M_GARROW 2u /* memo: `<` here does not start a generic arrow */
#define M_TARGS  4u /* memo: `<` here does not start type arguments */

/* While guessing whether `<` in an expression opens type arguments, nested argument lists
 * deeper than this mean no: real code never nests so deep there, and the bound keeps a long
 * run of `a < b, c < d, ...` from costing (nesting limit x length). */
#define MAX_SPEC_TARGS_NEST 16

enum param_mode { PARAM_FN, PARAM_ARROW, PARAM_CTOR, PARAM_TYPE };

struct range {
    size_t start;
    size_t end;
};

/* A rewrite (TS_TRANSFORM): src[start..end) is replaced by text[0..len). */
struct edit {
    size_t start;
    size_t end;
    char *text;
    size_t len;
};

/* Text being built for an edit. */
struct sbuf {
    char *p;
    size_t n;
    size_t cap;
    bool nomem;
};

struct snap {
    struct lexer lx;
    size_t prev_end;
    size_t nblanks;
    size_t nsemis;
    size_t nedits;
    unsigned fn;
};

/* A parameter property seen in the constructor being parsed (TS_TRANSFORM). */
struct pprop {
    size_t name_start;
    size_t name_end;
};

struct parser {
    struct lexer lx;
    size_t prev_end; /* end offset of the previous token */
    const char *src;
    size_t len;

    struct range *blanks;
    size_t nblanks;
    size_t cap_blanks;
    size_t *semis; /* offsets that become ';' (after blanking) */
    size_t nsemis;
    size_t cap_semis;
    struct edit *edits;
    size_t nedits;
    size_t cap_edits;

    uint8_t *memo; /* len + 1 bytes of M_* flags */
    unsigned spec; /* > 0 while speculating: failures are silent */
    bool failed;
    bool nomem;
    unsigned depth;
    unsigned fn;         /* F_* of the innermost function */
    unsigned in_type;    /* > 0 inside a type: nothing is recorded (the whole type is erased) */
    unsigned targs_spec; /* > 0 while try_type_args() guesses */
    unsigned targs_nest; /* type argument lists open */
    unsigned ambient;    /* > 0 inside `declare`: bodies optional, nothing refused */

    bool peek_valid; /* peek_lx holds the lexer after the current token */
    struct lexer peek_lx;

    /* parameter properties of the constructor being parsed (TS_TRANSFORM) */
    struct pprop *pprops;
    size_t npprops;
    size_t cap_pprops;
    bool in_derived;   /* the class being parsed has `extends` */
    size_t class_open; /* just after the `{` of the class body being parsed, or SIZE_MAX */

    /* Offsets, so never restored by a snapshot: a stale one from an undone reading names a
     * token that is no longer before the current one, and is ignored. */
    size_t restricted_end; /* end of the last `return`/`yield` keyword, or SIZE_MAX */
    size_t assertion_open; /* start of the last erased `<T>` type assertion, or SIZE_MAX */

    const struct ts_options *opts;
    struct ts_error *err;
};

static void parse_statement(struct parser *p, bool *ret_type_only);
static bool parse_statements_until_brace(struct parser *p);
static void parse_expression(struct parser *p, unsigned ef);
static void parse_assignment(struct parser *p, unsigned ef);
static void parse_lhs(struct parser *p);
static void parse_primary(struct parser *p);
static void parse_suffixes(struct parser *p, bool allow_call);
static void parse_type(struct parser *p);
static void parse_type_nocond(struct parser *p);
static void parse_type_args_inner(struct parser *p);
static void parse_params(struct parser *p, enum param_mode mode);
static void parse_binding_target(struct parser *p);
static void parse_class(struct parser *p);
static void parse_function(struct parser *p, size_t start, bool is_async, bool is_decl);
static void parse_template(struct parser *p, bool in_type);
static void parse_object_literal(struct parser *p);
static void transform_enum(struct parser *p, size_t start, size_t kw_start);
static void transform_pprops(struct parser *p, size_t body, size_t from);
static bool is_param_modifier(uint8_t kw);

/* ---- tokens ---- */

static inline uint8_t tt(const struct parser *p)
{
    return p->lx.tok.type;
}

static inline uint8_t tkw(const struct parser *p)
{
    return p->lx.tok.type == T_NAME ? p->lx.tok.kw : KW_NONE;
}

static inline bool at(const struct parser *p, uint8_t type)
{
    return p->lx.tok.type == type;
}

static inline bool at_kw(const struct parser *p, uint8_t kw)
{
    return p->lx.tok.type == T_NAME && p->lx.tok.kw == kw;
}

static inline size_t tstart(const struct parser *p)
{
    return p->lx.tok.start;
}

static inline bool nl_before(const struct parser *p)
{
    return p->lx.tok.nl_before;
}

/* Reserved words cannot name a binding; contextual keywords (type, as, async...) can. */
static bool is_reserved(uint8_t kw)
{
    return kw != KW_NONE && kw < KW_FIRST_CONTEXTUAL;
}

static bool is_ident_tok(const struct tok *t)
{
    return t->type == T_NAME && !is_reserved(t->kw);
}

/* ---- errors ---- */

static void kill_tokens(struct parser *p)
{
    p->lx.pos = p->len;
    p->lx.tok.type = T_EOF;
    p->lx.tok.kw = KW_NONE;
    p->lx.tok.start = p->len;
    p->lx.tok.end = p->len;
    p->peek_valid = false;
}

static void position(const struct parser *p, size_t pos, unsigned *ret_line, unsigned *ret_col)
{
    unsigned line = 1;
    unsigned col = 1;
    const unsigned char *s = (const unsigned char *)p->src;
    if (pos > p->len) {
        pos = p->len;
    }
    for (size_t i = 0; i < pos; i++) {
        unsigned char c = s[i];
        if (c == '\n' || (c == '\r' && !(i + 1 < p->len && s[i + 1] == '\n'))) {
            line++;
            col = 1;
        } else if (c == 0xE2 && i + 2 < p->len && s[i + 1] == 0x80 &&
                   (s[i + 2] == 0xA8 || s[i + 2] == 0xA9)) {
            line++;
            col = 1;
            i += 2;
        } else if ((c & 0xC0) != 0x80 && c != '\r') {
            col++;
        }
    }
    *ret_line = line;
    *ret_col = col;
}

/* Records the first error: what went wrong (a construct or "syntax error") and a detail. */
__attribute__((format(printf, 5, 6))) static void report(struct parser *p, enum ts_error_kind kind,
                                                         size_t pos, const char *what,
                                                         const char *fmt, ...)
{
    if (p->failed) {
        return;
    }
    p->failed = true;
    kill_tokens(p);
    if (p->spec > 0 || p->err == NULL) {
        return;
    }
    struct ts_error *e = p->err;
    unsigned line;
    unsigned col;
    position(p, pos, &line, &col);
    e->kind = kind;
    e->line = line;
    e->column = col;
    e->offset = pos;
    const char *name = p->opts != NULL ? p->opts->name : NULL;
    int n = snprintf(e->message, sizeof(e->message), "%s (%s%s%u:%u): ", what,
                     name != NULL ? name : "", name != NULL ? ":" : "", line, col);
    if (n < 0 || (size_t)n >= sizeof(e->message)) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message + n, sizeof(e->message) - (size_t)n, fmt, ap);
    va_end(ap);
    /* one line: a token quoted from the input may hold control characters */
    for (char *c = e->message; *c != '\0'; c++) {
        if ((unsigned char)*c < 0x20) {
            *c = ' ';
        }
    }
}

static void fail_nomem(struct parser *p)
{
    if (!p->nomem && p->err != NULL) {
        p->err->kind = TS_ERR_NOMEM;
        snprintf(p->err->message, sizeof(p->err->message), "out of memory");
    }
    p->nomem = true;
    p->failed = true;
    kill_tokens(p);
}

/* A syntax error at the current token: "expected X, found `tok`". */
static void syntax(struct parser *p, const char *expected)
{
    if (p->failed) {
        return;
    }
    if (p->lx.error != NULL) {
        report(p, TS_ERR_SYNTAX, p->lx.error_pos, "TypeScript syntax error", "%s", p->lx.error);
        return;
    }
    if (p->spec > 0) {
        p->failed = true;
        kill_tokens(p);
        return;
    }
    const struct tok *t = &p->lx.tok;
    if (t->type == T_EOF) {
        report(p, TS_ERR_SYNTAX, t->start, "TypeScript syntax error",
               "expected %s, found the end of the input", expected);
        return;
    }
    size_t n = t->end - t->start;
    report(p, TS_ERR_SYNTAX, t->start, "TypeScript syntax error", "expected %s, found `%.*s%s`",
           expected, (int)(n > 24 ? 24 : n), p->src + t->start, n > 24 ? "..." : "");
}

static void refuse(struct parser *p, size_t pos, const char *what, const char *hint)
{
    report(p, TS_ERR_UNSUPPORTED, pos, what, "%s", hint);
}

static bool enter(struct parser *p)
{
    if (p->failed) {
        return false;
    }
    if (p->depth >= TS_MAX_NESTING) {
        report(p, TS_ERR_LIMIT, tstart(p), "TypeScript nesting too deep",
               "more than %d levels of nested brackets, statements or types", TS_MAX_NESTING);
        return false;
    }
    p->depth++;
    return true;
}

static void leave(struct parser *p)
{
    p->depth--;
}

/* ---- moving ---- */

static void next(struct parser *p)
{
    p->prev_end = p->lx.tok.end;
    if (p->peek_valid) {
        p->lx = p->peek_lx;
        p->peek_valid = false;
    } else {
        lex_next(&p->lx);
    }
    if (p->lx.error != NULL) {
        syntax(p, "a token");
    }
}

static const struct tok *peek(struct parser *p)
{
    if (!p->peek_valid) {
        p->peek_lx = p->lx;
        lex_next(&p->peek_lx);
        p->peek_valid = true;
    }
    return &p->peek_lx.tok;
}

static void expect(struct parser *p, uint8_t type, const char *what)
{
    if (at(p, type)) {
        next(p);
    } else {
        syntax(p, what);
    }
}

static void expect_name(struct parser *p)
{
    if (at(p, T_NAME)) {
        next(p);
    } else {
        syntax(p, "a name");
    }
}

static void save(struct parser *p, struct snap *s)
{
    s->lx = p->lx;
    s->prev_end = p->prev_end;
    s->nblanks = p->nblanks;
    s->nsemis = p->nsemis;
    s->nedits = p->nedits;
    s->fn = p->fn;
    p->spec++;
}

static void restore(struct parser *p, const struct snap *s)
{
    p->spec--;
    p->lx = s->lx;
    p->prev_end = s->prev_end;
    p->nblanks = s->nblanks;
    p->nsemis = s->nsemis;
    while (p->nedits > s->nedits) {
        free(p->edits[--p->nedits].text);
    }
    p->fn = s->fn;
    p->peek_valid = false;
    p->failed = p->nomem;
    if (p->nomem) {
        kill_tokens(p);
    }
}

static void commit(struct parser *p)
{
    p->spec--;
}

/* `<<` where a `<` opens type arguments (`f<<T>(x: T) => T>()`): keep only the first `<`. */
static void split_shl(struct parser *p)
{
    if (at(p, P_SHL)) {
        p->lx.tok.type = P_LT;
        p->lx.tok.end = p->lx.tok.start + 1;
        p->lx.pos = p->lx.tok.end;
        p->peek_valid = false;
    }
}

static void rescan_gt(struct parser *p)
{
    lex_gt(&p->lx);
    p->peek_valid = false;
}

/* ---- recording ---- */

static bool grow(struct parser *p, void **v, size_t *cap, size_t n, size_t size)
{
    if (n < *cap) {
        return true;
    }
    size_t ncap = *cap ? *cap * 2 : 64;
    void *nv = realloc(*v, ncap * size);
    if (nv == NULL) {
        fail_nomem(p);
        return false;
    }
    *v = nv;
    *cap = ncap;
    return true;
}

static void blank(struct parser *p, size_t start, size_t end)
{
    if (p->in_type > 0 || start >= end || p->failed) {
        return;
    }
    if (!grow(p, (void **)&p->blanks, &p->cap_blanks, p->nblanks, sizeof(struct range))) {
        return;
    }
    p->blanks[p->nblanks].start = start;
    p->blanks[p->nblanks].end = end;
    p->nblanks++;
}

static void blank_tok(struct parser *p)
{
    blank(p, p->lx.tok.start, p->lx.tok.end);
}

static void semi_at(struct parser *p, size_t pos)
{
    if (p->in_type > 0 || p->failed) {
        return;
    }
    if (!grow(p, (void **)&p->semis, &p->cap_semis, p->nsemis, sizeof(size_t))) {
        return;
    }
    p->semis[p->nsemis++] = pos;
}

/* Erases a whole statement or class member, src[start..prev_end), and puts a `;` in its first
 * byte: the statement before it may have ended by automatic semicolon insertion, which the
 * JavaScript must still see once the TypeScript between them is gone. */
static void blank_stmt(struct parser *p, size_t start)
{
    if (p->in_type > 0 || p->failed) {
        return;
    }
    while (p->nblanks > 0 && p->blanks[p->nblanks - 1].start >= start) {
        p->nblanks--;
    }
    while (p->nsemis > 0 && p->semis[p->nsemis - 1] >= start) {
        p->nsemis--;
    }
    blank(p, start, p->prev_end);
    semi_at(p, start);
}

/* Automatic semicolon insertion. When the statement's last tokens were erased (`x = y as T`),
 * the `;` goes where they were, so `(`, `[` or a template on the next line cannot continue it. */
static void semicolon(struct parser *p)
{
    if (at(p, P_SEMI)) {
        next(p);
        return;
    }
    if (at(p, P_RBRACE) || at(p, T_EOF)) {
        return;
    }
    if (nl_before(p)) {
        if (p->nblanks > 0 && p->blanks[p->nblanks - 1].end == p->prev_end) {
            semi_at(p, p->blanks[p->nblanks - 1].start);
        }
        return;
    }
    syntax(p, "';'");
}

/* ---- types ---- */

/* Parses `<T, U extends X = Y>` (at `<`), recording nothing. */
static void parse_type_params(struct parser *p)
{
    next(p);
    if (at(p, P_GT)) {
        syntax(p, "a type parameter");
        return;
    }
    while (!p->failed) {
        while ((at_kw(p, KW_CONST) || at_kw(p, KW_IN) || at_kw(p, KW_OUT)) &&
               peek(p)->type == T_NAME) {
            next(p);
        }
        expect_name(p);
        if (at_kw(p, KW_EXTENDS)) {
            next(p);
            parse_type(p);
        }
        if (at(p, P_ASSIGN)) {
            next(p);
            parse_type(p);
        }
        if (!at(p, P_COMMA)) {
            break;
        }
        next(p);
        if (at(p, P_GT)) {
            break;
        }
    }
    expect(p, P_GT, "'>'");
}

/* Type parameters at `<`, erased. */
static void blank_type_params(struct parser *p)
{
    size_t s = tstart(p);
    p->in_type++;
    parse_type_params(p);
    p->in_type--;
    blank(p, s, p->prev_end);
}

/* `<A, B>` at `<`. */
static void parse_type_args(struct parser *p)
{
    if (p->targs_spec > 0 && p->targs_nest >= MAX_SPEC_TARGS_NEST) {
        syntax(p, "'>'");
        return;
    }
    p->targs_nest++;
    parse_type_args_inner(p);
    p->targs_nest--;
}

static void parse_type_args_inner(struct parser *p)
{
    next(p);
    if (at(p, P_GT)) {
        syntax(p, "a type");
        return;
    }
    while (!p->failed) {
        parse_type(p);
        if (!at(p, P_COMMA)) {
            break;
        }
        next(p);
        if (at(p, P_GT)) {
            break;
        }
    }
    expect(p, P_GT, "'>'");
}

/* A return type or the result of a function type: a type, or a predicate `x is T`,
 * `asserts x`, `asserts x is T`. */
static void parse_return_type_inner(struct parser *p)
{
    if (at_kw(p, KW_ASSERTS)) {
        const struct tok *n = peek(p);
        if (n->type == T_NAME && !n->nl_before && n->kw != KW_IS) {
            next(p);
            next(p);
            if (at_kw(p, KW_IS) && !nl_before(p)) {
                next(p);
                parse_type(p);
            }
            return;
        }
    }
    if (at(p, T_NAME)) {
        const struct tok *n = peek(p);
        if (n->type == T_NAME && n->kw == KW_IS && !n->nl_before) {
            next(p);
            next(p);
            parse_type(p);
            return;
        }
    }
    parse_type(p);
}

/* `: T` at the colon, erased. */
static void annotation(struct parser *p)
{
    size_t s = tstart(p);
    next(p);
    parse_type(p);
    blank(p, s, p->prev_end);
}

/* `: R` of a function at the colon, erased. */
static void return_annotation(struct parser *p)
{
    size_t s = tstart(p);
    next(p);
    p->in_type++;
    parse_return_type_inner(p);
    p->in_type--;
    blank(p, s, p->prev_end);
}

/* At `(` in a type: does a function type start here (TypeScript's
 * isUnambiguouslyStartOfFunctionType)? Looks ahead, consumes nothing. */
static bool paren_starts_function_type(struct parser *p)
{
    struct snap s;
    bool yes = false;
    save(p, &s);
    next(p);
    if (at(p, P_RPAREN) || at(p, P_ELLIPSIS)) {
        yes = true;
        goto out;
    }
    while (tkw(p) == KW_PUBLIC || tkw(p) == KW_PRIVATE || tkw(p) == KW_PROTECTED ||
           tkw(p) == KW_READONLY) {
        next(p);
    }
    if (at_kw(p, KW_THIS) || is_ident_tok(&p->lx.tok)) {
        next(p);
    } else if (at(p, P_LBRACE) || at(p, P_LBRACK)) {
        parse_binding_target(p);
        if (p->failed) {
            goto out;
        }
    } else {
        goto out;
    }
    if (at(p, P_COLON) || at(p, P_COMMA) || at(p, P_QUESTION) || at(p, P_ASSIGN)) {
        yes = true;
    } else if (at(p, P_RPAREN)) {
        next(p);
        yes = at(p, P_ARROW);
    }
out:
    restore(p, &s);
    return yes;
}

static bool starts_function_type(struct parser *p)
{
    switch (tt(p)) {
    case P_LT:
        return true;
    case P_LPAREN:
        return paren_starts_function_type(p);
    case T_NAME:
        if (p->lx.tok.kw == KW_NEW) {
            return true;
        }
        if (p->lx.tok.kw == KW_ABSTRACT) {
            const struct tok *n = peek(p);
            return n->type == T_NAME && n->kw == KW_NEW;
        }
        return false;
    default:
        return false;
    }
}

/* `(params) => R`, `new (params) => R`, `<T>(params) => R`, `abstract new ...` */
static void parse_function_type(struct parser *p)
{
    if (at_kw(p, KW_ABSTRACT)) {
        next(p);
    }
    if (at_kw(p, KW_NEW)) {
        next(p);
    }
    if (at(p, P_LT)) {
        parse_type_params(p);
    }
    parse_params(p, PARAM_TYPE);
    expect(p, P_ARROW, "'=>'");
    parse_return_type_inner(p);
}

static void parse_property_name(struct parser *p)
{
    switch (tt(p)) {
    case T_NAME:
    case T_STR:
    case T_NUM:
    case T_PRIVATE:
        next(p);
        return;
    case P_LBRACK:
        next(p);
        parse_assignment(p, 0);
        expect(p, P_RBRACK, "']'");
        return;
    default:
        syntax(p, "a property name");
        return;
    }
}

static bool tok_starts_property_name(const struct tok *t)
{
    return t->type == T_NAME || t->type == T_STR || t->type == T_NUM || t->type == T_PRIVATE ||
           t->type == P_LBRACK;
}

/* At `[`: an index signature `[key: T]` rather than a computed name? */
static bool is_index_signature(struct parser *p)
{
    struct snap s;
    save(p, &s);
    next(p);
    bool yes = false;
    if (at(p, T_NAME)) {
        next(p);
        yes = at(p, P_COLON);
    }
    restore(p, &s);
    return yes;
}

/* A signature's rest: `<T>(params): R` (type context). */
static void parse_signature(struct parser *p)
{
    if (at(p, P_LT)) {
        parse_type_params(p);
    }
    if (!at(p, P_LPAREN)) {
        syntax(p, "'('");
        return;
    }
    parse_params(p, PARAM_TYPE);
    if (at(p, P_COLON)) {
        next(p);
        parse_return_type_inner(p);
    }
}

static void parse_type_member(struct parser *p)
{
    if (at(p, P_LPAREN) || at(p, P_LT)) {
        parse_signature(p);
        return;
    }
    if (at_kw(p, KW_NEW)) {
        const struct tok *n = peek(p);
        if (n->type == P_LPAREN || n->type == P_LT) {
            next(p);
            parse_signature(p);
            return;
        }
    }
    if (at_kw(p, KW_READONLY)) {
        const struct tok *n = peek(p);
        if (tok_starts_property_name(n) && !n->nl_before) {
            next(p);
        }
    }
    if (at_kw(p, KW_GET) || at_kw(p, KW_SET)) {
        const struct tok *n = peek(p);
        if (tok_starts_property_name(n) && !n->nl_before) {
            next(p);
        }
    }
    if (at(p, P_LBRACK) && is_index_signature(p)) {
        next(p);
        next(p);
        next(p);
        parse_type(p);
        expect(p, P_RBRACK, "']'");
        if (at(p, P_COLON)) {
            next(p);
            parse_type(p);
        }
        return;
    }
    parse_property_name(p);
    if (at(p, P_QUESTION)) {
        next(p);
    }
    if (at(p, P_LPAREN) || at(p, P_LT)) {
        parse_signature(p);
    } else if (at(p, P_COLON)) {
        next(p);
        parse_type(p);
    }
}

static bool at_mapped_type(struct parser *p)
{
    struct snap s;
    save(p, &s);
    next(p);
    if (at(p, P_PLUS) || at(p, P_MINUS)) {
        next(p);
    }
    if (at_kw(p, KW_READONLY)) {
        next(p);
    }
    bool yes = false;
    if (at(p, P_LBRACK)) {
        next(p);
        if (at(p, T_NAME)) {
            next(p);
            yes = at_kw(p, KW_IN);
        }
    }
    restore(p, &s);
    return yes;
}

static void parse_object_type(struct parser *p)
{
    if (at_mapped_type(p)) {
        next(p);
        if (at(p, P_PLUS) || at(p, P_MINUS)) {
            next(p);
        }
        if (at_kw(p, KW_READONLY)) {
            next(p);
        }
        next(p); /* [ */
        next(p); /* K */
        next(p); /* in */
        parse_type(p);
        if (at_kw(p, KW_AS)) {
            next(p);
            parse_type(p);
        }
        expect(p, P_RBRACK, "']'");
        if (at(p, P_PLUS) || at(p, P_MINUS)) {
            next(p);
        }
        if (at(p, P_QUESTION)) {
            next(p);
        }
        if (at(p, P_COLON)) {
            next(p);
            parse_type(p);
        }
        if (at(p, P_SEMI) || at(p, P_COMMA)) {
            next(p);
        }
        expect(p, P_RBRACE, "'}'");
        return;
    }
    next(p);
    while (!at(p, P_RBRACE) && !at(p, T_EOF)) {
        parse_type_member(p);
        if (at(p, P_SEMI) || at(p, P_COMMA)) {
            next(p);
        } else if (!at(p, P_RBRACE) && !nl_before(p)) {
            syntax(p, "';' or '}'");
        }
    }
    expect(p, P_RBRACE, "'}'");
}

static void parse_tuple_type(struct parser *p)
{
    next(p);
    while (!at(p, P_RBRACK) && !at(p, T_EOF)) {
        if (at(p, P_ELLIPSIS)) {
            next(p);
        }
        parse_type(p);
        if (at(p, P_QUESTION)) {
            next(p);
        }
        if (at(p, P_COLON)) { /* a named member: what came before was its name */
            next(p);
            parse_type(p);
        }
        if (!at(p, P_COMMA)) {
            break;
        }
        next(p);
    }
    expect(p, P_RBRACK, "']'");
}

/* A.B.C<T> after the first name has been consumed. */
static void parse_type_reference_rest(struct parser *p)
{
    while (at(p, P_DOT)) {
        next(p);
        if (at(p, T_NAME) || at(p, T_PRIVATE)) {
            next(p);
        } else {
            syntax(p, "a name");
            return;
        }
    }
    if ((at(p, P_LT) || at(p, P_SHL)) && !nl_before(p)) {
        split_shl(p);
        parse_type_args(p);
    }
}

static void parse_primary_type(struct parser *p)
{
    switch (tt(p)) {
    case T_NAME:
        if (at_kw(p, KW_TYPEOF)) {
            next(p);
            if (at_kw(p, KW_IMPORT)) {
                next(p);
                expect(p, P_LPAREN, "'('");
                parse_assignment(p, 0);
                if (at(p, P_COMMA)) {
                    next(p);
                    if (!at(p, P_RPAREN)) {
                        parse_assignment(p, 0);
                    }
                }
                expect(p, P_RPAREN, "')'");
            } else {
                expect_name(p);
            }
            parse_type_reference_rest(p);
            return;
        }
        if (at_kw(p, KW_IMPORT)) {
            next(p);
            expect(p, P_LPAREN, "'('");
            expect(p, T_STR, "a module name");
            if (at(p, P_COMMA)) {
                next(p);
                if (!at(p, P_RPAREN)) {
                    parse_assignment(p, 0);
                }
            }
            expect(p, P_RPAREN, "')'");
            parse_type_reference_rest(p);
            return;
        }
        next(p);
        parse_type_reference_rest(p);
        return;
    case T_STR:
    case T_NUM:
    case T_TPL:
        next(p);
        return;
    case T_TPL_HEAD:
        parse_template(p, true);
        return;
    case P_MINUS:
        next(p);
        expect(p, T_NUM, "a number");
        return;
    case P_LPAREN:
        next(p);
        parse_type(p);
        expect(p, P_RPAREN, "')'");
        return;
    case P_LBRACK:
        parse_tuple_type(p);
        return;
    case P_LBRACE:
        parse_object_type(p);
        return;
    default:
        syntax(p, "a type");
        return;
    }
}

static void parse_postfix_type(struct parser *p)
{
    parse_primary_type(p);
    while (at(p, P_LBRACK) && !nl_before(p) && !p->failed) {
        next(p);
        if (!at(p, P_RBRACK)) {
            parse_type(p);
        }
        expect(p, P_RBRACK, "']'");
    }
}

static void parse_type_operator(struct parser *p)
{
    if (!enter(p)) {
        return;
    }
    switch (tkw(p)) {
    case KW_KEYOF:
    case KW_UNIQUE:
    case KW_READONLY:
        next(p);
        parse_type_operator(p);
        break;
    case KW_INFER:
        next(p);
        expect_name(p);
        if (at_kw(p, KW_EXTENDS) && !nl_before(p)) {
            /* `infer U extends C`, unless the extends belongs to an enclosing conditional */
            struct snap s;
            save(p, &s);
            next(p);
            parse_type_nocond(p);
            if (p->failed || at(p, P_QUESTION)) {
                restore(p, &s);
            } else {
                commit(p);
            }
        }
        break;
    default:
        if (starts_function_type(p)) {
            parse_function_type(p);
        } else {
            parse_postfix_type(p);
        }
        break;
    }
    leave(p);
}

static void parse_intersection_type(struct parser *p)
{
    if (at(p, P_AMP)) {
        next(p);
    }
    parse_type_operator(p);
    while (at(p, P_AMP) && !p->failed) {
        next(p);
        parse_type_operator(p);
    }
}

static void parse_union_type(struct parser *p)
{
    if (at(p, P_BAR)) {
        next(p);
    }
    parse_intersection_type(p);
    while (at(p, P_BAR) && !p->failed) {
        next(p);
        parse_intersection_type(p);
    }
}

static void parse_type_inner(struct parser *p, bool allow_cond)
{
    if (!enter(p)) {
        return;
    }
    p->in_type++;
    if (starts_function_type(p)) {
        parse_function_type(p);
    } else {
        parse_union_type(p);
        if (allow_cond && at_kw(p, KW_EXTENDS) && !nl_before(p)) {
            next(p);
            parse_type_nocond(p);
            expect(p, P_QUESTION, "'?'");
            parse_type(p);
            expect(p, P_COLON, "':'");
            parse_type(p);
        }
    }
    p->in_type--;
    leave(p);
}

static void parse_type(struct parser *p)
{
    parse_type_inner(p, true);
}

static void parse_type_nocond(struct parser *p)
{
    parse_type_inner(p, false);
}

/* ---- expressions ---- */

static bool is_start_of_expression(const struct tok *t)
{
    switch (t->type) {
    case T_NAME:
        switch (t->kw) {
        case KW_THIS:
        case KW_SUPER:
        case KW_NULL:
        case KW_TRUE:
        case KW_FALSE:
        case KW_FUNCTION:
        case KW_CLASS:
        case KW_NEW:
        case KW_TYPEOF:
        case KW_VOID:
        case KW_DELETE:
        case KW_IMPORT:
            return true;
        default:
            return !is_reserved(t->kw);
        }
    case T_PRIVATE:
    case T_NUM:
    case T_STR:
    case T_TPL:
    case T_TPL_HEAD:
    case P_LPAREN:
    case P_LBRACK:
    case P_LBRACE:
    case P_SLASH:
    case P_DIV_ASSIGN:
    case P_PLUS:
    case P_MINUS:
    case P_TILDE:
    case P_BANG:
    case P_INC:
    case P_DEC:
    case P_LT:
    case P_AT:
        return true;
    default:
        return false;
    }
}

static int binary_prec(const struct tok *t, unsigned ef)
{
    switch (t->type) {
    case P_NULLISH:
    case P_OR:
        return 1;
    case P_AND:
        return 2;
    case P_BAR:
        return 3;
    case P_CARET:
        return 4;
    case P_AMP:
        return 5;
    case P_EQ:
    case P_NE:
    case P_EQ3:
    case P_NE3:
        return 6;
    case P_LT:
    case P_GT:
    case P_LE:
    case P_GE:
        return 7;
    case P_SHL:
    case P_SHR:
    case P_USHR:
        return 8;
    case P_PLUS:
    case P_MINUS:
        return 9;
    case P_STAR:
    case P_SLASH:
    case P_PERCENT:
        return 10;
    case P_POW:
        return 11;
    case T_NAME:
        switch (t->kw) {
        case KW_INSTANCEOF:
            return 7;
        case KW_IN:
            return (ef & E_NOIN) ? 0 : 7;
        case KW_AS:
        case KW_SATISFIES:
            return t->nl_before ? 0 : 7;
        default:
            return 0;
        }
    default:
        return 0;
    }
}

/* TypeScript's canFollowTypeArgumentsInExpression: after `f<T>`, is this a type argument list? */
static bool can_follow_type_args(struct parser *p)
{
    const struct tok *t = &p->lx.tok;
    switch (t->type) {
    case P_LPAREN:
    case T_TPL:
    case T_TPL_HEAD:
        return true;
    case P_LT:
    case P_GT:
    case P_PLUS:
    case P_MINUS:
        return false;
    default:
        return t->nl_before || binary_prec(t, 0) > 0 || !is_start_of_expression(t);
    }
}

/* At `<` after an expression: type arguments (erased) or an operator (left alone)? */
static bool try_type_args(struct parser *p)
{
    size_t pos = tstart(p);
    if (p->memo[pos] & M_TARGS) {
        return false;
    }
    struct snap s;
    save(p, &s);
    split_shl(p);
    p->in_type++;
    p->targs_spec++;
    unsigned saved_nest = p->targs_nest;
    p->targs_nest = 0;
    parse_type_args(p);
    p->targs_nest = saved_nest;
    p->targs_spec--;
    p->in_type--;
    if (!p->failed && can_follow_type_args(p)) {
        commit(p);
        blank(p, pos, p->prev_end);
        return true;
    }
    restore(p, &s);
    p->memo[pos] |= M_TARGS;
    return false;
}

static void refuse_jsx(struct parser *p)
{
    refuse(p, tstart(p), "JSX is not supported",
           "`<` here starts neither a type assertion nor a generic arrow function; JSX needs a "
           ".tsx source, and airlock strips only .ts");
}

/* At `<` where an operand is expected: the type assertion `<T>x` of .ts sources, erased like
 * `x as T` (the operand is the unary expression that follows, as in TypeScript). Whatever is
 * not a type closed by `>` is JSX, refused. After `return` or `yield` the operand must start on
 * the line of the `>`: once `<T>` is blank, a line break there would end the statement. */
static void parse_type_assertion(struct parser *p)
{
    size_t pos = tstart(p);
    bool restricted = p->prev_end == p->restricted_end;
    struct snap s;
    save(p, &s);
    p->in_type++;
    next(p); /* < */
    if (at_kw(p, KW_CONST) && peek(p)->type == P_GT) {
        next(p); /* <const>, like `as const` */
    } else {
        parse_type(p);
    }
    p->in_type--;
    if (p->failed || !at(p, P_GT)) {
        restore(p, &s);
        refuse_jsx(p);
        return;
    }
    commit(p); /* before moving on: an error in the operand's first token is a real one */
    next(p);   /* > */
    blank(p, pos, p->prev_end);
    p->assertion_open = pos;
    if (restricted && nl_before(p)) {
        refuse(p, pos, "TypeScript type assertion needs its operand on the same line",
               "after `return` or `yield`, the line break would end the statement once `<T>` is "
               "erased; start the operand on the line of `<T>`, or write `x as T`");
        return;
    }
    if (restricted) {
        p->restricted_end = p->prev_end; /* `return <A><B>` NL `x` */
    }
}

/* At `<` directly followed by `/` after an operand: a JSX closing tag (`<b>c</b>` reads as an
 * assertion up to there). A comparison with a regular expression written without a space,
 * `a </re/`, is refused with it: no real code writes that. */
static bool at_jsx_close(struct parser *p)
{
    size_t e = p->lx.tok.end;
    return at(p, P_LT) && e + 1 < p->len && p->src[e] == '/' && p->src[e + 1] != '/' &&
           p->src[e + 1] != '*';
}

static void parse_function_body(struct parser *p, unsigned fn)
{
    unsigned saved = p->fn;
    p->fn = fn;
    next(p); /* { */
    parse_statements_until_brace(p);
    expect(p, P_RBRACE, "'}'");
    p->fn = saved;
}

static void parse_arrow_body(struct parser *p, unsigned ef, bool is_async)
{
    unsigned saved = p->fn;
    p->fn = (p->fn & F_ASYNC) | (is_async ? F_ASYNC : 0);
    if (at(p, P_LBRACE)) {
        parse_function_body(p, p->fn);
    } else {
        parse_assignment(p, ef & (E_NOIN | E_COND_TRUE));
    }
    p->fn = saved;
}

/* At `(`: a look at the next three tokens rules out most parenthesized expressions before
 * any speculation (TypeScript's isParenthesizedArrowFunctionExpression does the same). */
static bool paren_may_start_arrow(struct parser *p)
{
    const struct tok *n = peek(p);
    switch (n->type) {
    case P_RPAREN:
    case P_ELLIPSIS:
    case P_LBRACE:
    case P_LBRACK:
        return true;
    case T_NAME:
        break;
    default:
        return false;
    }
    if (is_param_modifier(n->kw) || n->kw == KW_THIS) {
        return true;
    }
    if (is_reserved(n->kw)) {
        return false;
    }
    struct lexer l2 = p->peek_lx;
    lex_next(&l2);
    switch (l2.tok.type) {
    case P_COLON:
    case P_COMMA:
    case P_QUESTION:
    case P_ASSIGN:
        return true;
    case P_RPAREN:
        lex_next(&l2);
        return l2.tok.type == P_ARROW || l2.tok.type == P_COLON;
    default:
        return false;
    }
}

/* At `(` or `<`: tries `<T>(params): R => body`. On success the arrow is parsed and true is
 * returned (and `outer` enclosing snapshots are committed with it, before the body is parsed);
 * otherwise nothing moved. In the true branch of ?:, an arrow with a return type
 * counts only if a `:` follows it (as in TypeScript: `a ? (b) : c => d` is not an arrow). */
static bool try_arrow(struct parser *p, unsigned ef, bool is_async, unsigned outer)
{
    size_t pos = tstart(p);
    uint8_t bit = at(p, P_LT) ? M_GARROW : M_ARROW;
    if (p->memo[pos] & bit) {
        return false;
    }
    if (bit == M_ARROW && !paren_may_start_arrow(p)) {
        p->memo[pos] |= bit;
        return false;
    }
    struct snap s;
    save(p, &s);
    if (at(p, P_LT)) {
        blank_type_params(p);
    }
    if (!at(p, P_LPAREN)) {
        syntax(p, "'('");
    }
    parse_params(p, PARAM_ARROW);
    bool has_ret = false;
    if (at(p, P_COLON)) {
        return_annotation(p);
        has_ret = true;
    }
    if (!p->failed && at(p, P_ARROW) && !nl_before(p)) {
        if (has_ret && (ef & E_COND_TRUE)) {
            next(p);
            parse_arrow_body(p, ef, is_async);
            if (!p->failed && at(p, P_COLON)) {
                commit(p);
                p->spec -= outer;
                return true;
            }
        } else {
            /* committed before the body: an error in it is a real one, with a message */
            commit(p);
            p->spec -= outer;
            next(p);
            parse_arrow_body(p, ef, is_async);
            return true;
        }
    }
    restore(p, &s);
    p->memo[pos] |= bit;
    return false;
}

static void parse_args(struct parser *p)
{
    next(p); /* ( */
    while (!at(p, P_RPAREN) && !at(p, T_EOF)) {
        if (at(p, P_ELLIPSIS)) {
            next(p);
        }
        parse_assignment(p, 0);
        if (!at(p, P_COMMA)) {
            break;
        }
        next(p);
    }
    expect(p, P_RPAREN, "')'");
}

/* A template literal at T_TPL_HEAD; substitutions are expressions, or types in a type. */
static void parse_template(struct parser *p, bool in_type)
{
    size_t start = tstart(p);
    while (!p->failed) {
        next(p);
        if (in_type) {
            parse_type(p);
        } else {
            parse_expression(p, 0);
        }
        if (!at(p, P_RBRACE)) {
            syntax(p, "'}'");
            return;
        }
        lex_template(&p->lx);
        p->peek_valid = false;
        if (p->lx.error != NULL) {
            p->lx.error_pos = start; /* point at the template, not at its last `}` */
            syntax(p, "a template");
            return;
        }
        if (at(p, T_TPL_TAIL)) {
            break;
        }
    }
    next(p);
}

static void parse_array_literal(struct parser *p)
{
    next(p);
    while (!at(p, P_RBRACK) && !at(p, T_EOF)) {
        if (at(p, P_COMMA)) {
            next(p);
            continue;
        }
        if (at(p, P_ELLIPSIS)) {
            next(p);
        }
        parse_assignment(p, 0);
        if (!at(p, P_COMMA)) {
            break;
        }
        next(p);
    }
    expect(p, P_RBRACK, "']'");
}

/* Method rest after its name: `<T>(params): R { body }`. Without a body: an overload or an
 * abstract member, erased whole from member_start when allowed (class members). */
static void parse_method_rest(struct parser *p, unsigned fn, size_t member_start, bool in_class,
                              bool is_ctor)
{
    if (at(p, P_LT)) {
        blank_type_params(p);
    }
    if (!at(p, P_LPAREN)) {
        syntax(p, "'('");
        return;
    }
    size_t pprops_before = p->npprops;
    parse_params(p, is_ctor ? PARAM_CTOR : PARAM_FN);
    if (at(p, P_COLON)) {
        return_annotation(p);
    }
    if (at(p, P_LBRACE)) {
        size_t body = tstart(p);
        parse_function_body(p, fn);
        if (is_ctor && p->npprops > pprops_before && !p->failed) {
            transform_pprops(p, body, pprops_before);
        }
        p->npprops = pprops_before;
        return;
    }
    p->npprops = pprops_before;
    if (in_class || p->ambient > 0) {
        semicolon(p);
        blank_stmt(p, member_start);
        return;
    }
    syntax(p, "'{'");
}

static bool peek_starts_member_name(struct parser *p)
{
    const struct tok *n = peek(p);
    return !n->nl_before && (tok_starts_property_name(n) || n->type == P_STAR);
}

static void parse_object_member(struct parser *p)
{
    size_t start = tstart(p);
    unsigned fn = 0;
    bool modified = false;
    if (at_kw(p, KW_ASYNC) && peek_starts_member_name(p)) {
        next(p);
        fn |= F_ASYNC;
        modified = true;
    }
    if (at(p, P_STAR)) {
        next(p);
        fn |= F_GEN;
        modified = true;
    }
    if ((at_kw(p, KW_GET) || at_kw(p, KW_SET)) && peek_starts_member_name(p) &&
        peek(p)->type != P_STAR) {
        next(p);
        modified = true;
    }
    bool shorthand = at(p, T_NAME) && !modified;
    parse_property_name(p);
    if (at(p, P_LPAREN) || at(p, P_LT)) {
        parse_method_rest(p, fn, start, false, false);
        return;
    }
    if (modified) {
        syntax(p, "'('");
        return;
    }
    if (at(p, P_COLON)) {
        next(p);
        parse_assignment(p, 0);
        return;
    }
    if (shorthand) {
        if (at(p, P_ASSIGN)) {
            next(p);
            parse_assignment(p, 0);
        }
        return;
    }
    syntax(p, "':'");
}

static void parse_object_literal(struct parser *p)
{
    next(p);
    while (!at(p, P_RBRACE) && !at(p, T_EOF)) {
        if (at(p, P_ELLIPSIS)) {
            next(p);
            parse_assignment(p, 0);
        } else {
            parse_object_member(p);
        }
        if (!at(p, P_COMMA)) {
            break;
        }
        next(p);
    }
    expect(p, P_RBRACE, "'}'");
}

static void parse_primary(struct parser *p)
{
    if (!enter(p)) {
        return;
    }
    switch (tt(p)) {
    case T_NAME:
        switch (p->lx.tok.kw) {
        case KW_FUNCTION:
            parse_function(p, tstart(p), false, false);
            break;
        case KW_ASYNC: {
            const struct tok *n = peek(p);
            if (n->type == T_NAME && n->kw == KW_FUNCTION && !n->nl_before) {
                size_t s = tstart(p);
                next(p);
                parse_function(p, s, true, false);
            } else {
                next(p);
            }
            break;
        }
        case KW_CLASS:
            parse_class(p);
            break;
        case KW_IMPORT:
            next(p);
            if (at(p, P_LPAREN)) {
                parse_args(p);
            } else if (at(p, P_DOT)) {
                next(p);
                expect_name(p);
            } else {
                syntax(p, "'(' or '.'");
            }
            break;
        case KW_THIS:
        case KW_SUPER:
        case KW_NULL:
        case KW_TRUE:
        case KW_FALSE:
            next(p);
            break;
        default:
            if (is_reserved(p->lx.tok.kw)) {
                syntax(p, "an expression");
            } else {
                next(p);
            }
            break;
        }
        break;
    case T_NUM:
    case T_STR:
    case T_TPL:
    case T_PRIVATE:
        next(p);
        break;
    case T_TPL_HEAD:
        parse_template(p, false);
        break;
    case P_SLASH:
    case P_DIV_ASSIGN:
        lex_regex(&p->lx);
        p->peek_valid = false;
        if (p->lx.error != NULL) {
            syntax(p, "a regular expression");
            break;
        }
        next(p);
        break;
    case P_LPAREN:
        next(p);
        parse_expression(p, 0);
        expect(p, P_RPAREN, "')'");
        break;
    case P_LBRACK:
        parse_array_literal(p);
        break;
    case P_LBRACE:
        parse_object_literal(p);
        break;
    case P_LT:
        refuse_jsx(p);
        break;
    case P_AT:
        refuse(p, tstart(p), "TypeScript decorators are not supported",
               "decorators generate code; call the function on the class instead");
        break;
    default:
        syntax(p, "an expression");
        break;
    }
    leave(p);
}

static void parse_new(struct parser *p)
{
    if (!enter(p)) {
        return;
    }
    next(p); /* new */
    if (at(p, P_DOT)) {
        next(p);
        expect_name(p);
        leave(p);
        return;
    }
    if (at_kw(p, KW_NEW)) {
        parse_new(p);
    } else {
        parse_primary(p);
    }
    parse_suffixes(p, false);
    if (at(p, P_LPAREN)) {
        parse_args(p);
    }
    leave(p);
}

static void parse_suffixes(struct parser *p, bool allow_call)
{
    while (!p->failed) {
        switch (tt(p)) {
        case P_DOT:
            next(p);
            if (at(p, T_NAME) || at(p, T_PRIVATE)) {
                next(p);
            } else {
                syntax(p, "a property name");
            }
            break;
        case P_QDOT:
            if (!allow_call) {
                return;
            }
            next(p);
            if (at(p, P_LT)) {
                size_t s = tstart(p);
                p->in_type++;
                parse_type_args(p);
                p->in_type--;
                blank(p, s, p->prev_end);
                if (!at(p, P_LPAREN)) {
                    syntax(p, "'('");
                    return;
                }
            }
            if (at(p, P_LPAREN)) {
                parse_args(p);
            } else if (at(p, P_LBRACK)) {
                next(p);
                parse_expression(p, 0);
                expect(p, P_RBRACK, "']'");
            } else if (at(p, T_NAME) || at(p, T_PRIVATE)) {
                next(p);
            } else {
                syntax(p, "a property name");
            }
            break;
        case P_LBRACK:
            next(p);
            parse_expression(p, 0);
            expect(p, P_RBRACK, "']'");
            break;
        case T_TPL:
            next(p);
            break;
        case T_TPL_HEAD:
            parse_template(p, false);
            break;
        case P_BANG:
            if (nl_before(p)) {
                return;
            }
            blank_tok(p);
            next(p);
            break;
        case P_LT:
        case P_SHL:
            if (!try_type_args(p)) {
                return;
            }
            break;
        case P_LPAREN:
            if (!allow_call) {
                return;
            }
            parse_args(p);
            break;
        default:
            return;
        }
    }
}

static void parse_lhs(struct parser *p)
{
    if (at_kw(p, KW_NEW)) {
        parse_new(p);
    } else {
        parse_primary(p);
    }
    parse_suffixes(p, true);
}

static void parse_unary(struct parser *p)
{
    for (;;) {
        switch (tt(p)) {
        case P_PLUS:
        case P_MINUS:
        case P_TILDE:
        case P_BANG:
        case P_INC:
        case P_DEC:
            next(p);
            continue;
        case P_LT:
            parse_type_assertion(p);
            continue;
        case T_NAME:
            switch (p->lx.tok.kw) {
            case KW_DELETE:
            case KW_VOID:
            case KW_TYPEOF:
                next(p);
                continue;
            case KW_AWAIT:
                if (p->fn & F_ASYNC) {
                    next(p);
                    continue;
                }
                break;
            default:
                break;
            }
            break;
        default:
            break;
        }
        break;
    }
    parse_lhs(p);
    if ((at(p, P_INC) || at(p, P_DEC)) && !nl_before(p)) {
        next(p);
    }
}

/* Precedence climbing. `as`/`satisfies` bind like relational operators; erasing one must not
 * let a tighter operator that follows regroup the operand before it (`a + b as T * c` is
 * `(a + b) * c` in TypeScript but `a + b * c` once erased), so that case is refused. */
static void parse_binary(struct parser *p, int minprec, unsigned ef)
{
    if (!enter(p)) {
        return;
    }
    parse_unary(p);
    int top = 0;     /* precedence of the last operator applied at this level */
    int as_left = 0; /* after `as T`: the precedence of its operand's operator */
    bool after_as = false;
    while (!p->failed) {
        if (at(p, P_GT)) {
            rescan_gt(p);
        }
        if (at_jsx_close(p)) {
            size_t open = p->assertion_open;
            refuse(p, open < tstart(p) ? open : tstart(p), "JSX is not supported",
                   "`</` closes a JSX element; JSX needs a .tsx source, and airlock strips only "
                   ".ts");
            break;
        }
        int prec = binary_prec(&p->lx.tok, ef);
        if (prec <= minprec) {
            break;
        }
        if (at_kw(p, KW_AS) || at_kw(p, KW_SATISFIES)) {
            size_t s = tstart(p);
            next(p);
            parse_type(p);
            blank(p, s, p->prev_end);
            as_left = top;
            after_as = true;
            top = 7;
            continue;
        }
        if (after_as && as_left > 0 && prec > as_left) {
            refuse(p, tstart(p), "TypeScript `as` expression needs parentheses",
                   "once the type is erased, the operator that follows would take the "
                   "operand before `as`; write `(x as T)`");
            break;
        }
        after_as = false;
        next(p);
        parse_binary(p, prec == 11 ? prec - 1 : prec, ef);
        top = prec;
    }
    leave(p);
}

static void parse_conditional(struct parser *p, unsigned ef)
{
    parse_binary(p, 0, ef);
    if (at(p, P_QUESTION)) {
        next(p);
        parse_assignment(p, E_COND_TRUE);
        expect(p, P_COLON, "':'");
        parse_assignment(p, ef & (E_NOIN | E_COND_TRUE));
    }
}

static void parse_assignment(struct parser *p, unsigned ef)
{
    if (!enter(p)) {
        return;
    }
    switch (tt(p)) {
    case P_LPAREN:
        if (try_arrow(p, ef, false, 0)) {
            goto out;
        }
        break;
    case P_LT:
        if (try_arrow(p, ef, false, 0)) {
            goto out;
        }
        break; /* a type assertion (parse_unary) */
    case T_NAME: {
        uint8_t kw = p->lx.tok.kw;
        const struct tok *n = peek(p);
        if (kw == KW_ASYNC && !n->nl_before) {
            if (n->type == P_LPAREN || n->type == P_LT) {
                struct snap s;
                save(p, &s);
                next(p);
                if (try_arrow(p, ef, true, 1)) {
                    goto out;
                }
                restore(p, &s);
                n = peek(p);
            } else if (is_ident_tok(n)) {
                struct snap s;
                save(p, &s);
                next(p);
                next(p);
                if (at(p, P_ARROW) && !nl_before(p)) {
                    commit(p);
                    next(p);
                    parse_arrow_body(p, ef, true);
                    goto out;
                }
                restore(p, &s);
                n = peek(p);
            }
        }
        if (kw == KW_YIELD && (p->fn & F_GEN)) {
            next(p);
            p->restricted_end = p->prev_end;
            if (at(p, P_STAR)) {
                next(p);
                parse_assignment(p, ef & E_NOIN);
            } else if (!nl_before(p) && is_start_of_expression(&p->lx.tok)) {
                parse_assignment(p, ef & E_NOIN);
            }
            goto out;
        }
        if (!is_reserved(kw) && n->type == P_ARROW && !n->nl_before) {
            next(p);
            next(p);
            parse_arrow_body(p, ef, false);
            goto out;
        }
        break;
    }
    default:
        break;
    }
    parse_conditional(p, ef);
    if (tt(p) >= P_ASSIGN && tt(p) <= P_NULLISH_ASSIGN) {
        next(p);
        parse_assignment(p, ef & (E_NOIN | E_COND_TRUE));
    }
out:
    leave(p);
}

static void parse_expression(struct parser *p, unsigned ef)
{
    parse_assignment(p, ef);
    while (at(p, P_COMMA) && !p->failed) {
        next(p);
        parse_assignment(p, ef & E_NOIN);
    }
}

/* ---- bindings and parameters ---- */

static void parse_binding_target(struct parser *p)
{
    if (!enter(p)) {
        return;
    }
    switch (tt(p)) {
    case T_NAME:
        if (is_reserved(p->lx.tok.kw)) {
            syntax(p, "a binding name");
        } else {
            next(p);
        }
        break;
    case P_LBRACK:
        next(p);
        while (!at(p, P_RBRACK) && !at(p, T_EOF)) {
            if (at(p, P_COMMA)) {
                next(p);
                continue;
            }
            if (at(p, P_ELLIPSIS)) {
                next(p);
            }
            parse_binding_target(p);
            if (at(p, P_ASSIGN)) {
                next(p);
                parse_assignment(p, 0);
            }
            if (!at(p, P_COMMA)) {
                break;
            }
            next(p);
        }
        expect(p, P_RBRACK, "']'");
        break;
    case P_LBRACE:
        next(p);
        while (!at(p, P_RBRACE) && !at(p, T_EOF)) {
            if (at(p, P_ELLIPSIS)) {
                next(p);
                parse_binding_target(p);
            } else {
                bool ident = is_ident_tok(&p->lx.tok);
                parse_property_name(p);
                if (at(p, P_COLON)) {
                    next(p);
                    parse_binding_target(p);
                } else if (!ident) {
                    syntax(p, "':'");
                }
                if (at(p, P_ASSIGN)) {
                    next(p);
                    parse_assignment(p, 0);
                }
            }
            if (!at(p, P_COMMA)) {
                break;
            }
            next(p);
        }
        expect(p, P_RBRACE, "'}'");
        break;
    default:
        syntax(p, "a binding name or pattern");
        break;
    }
    leave(p);
}

static bool is_param_modifier(uint8_t kw)
{
    return kw == KW_PUBLIC || kw == KW_PRIVATE || kw == KW_PROTECTED || kw == KW_READONLY ||
           kw == KW_OVERRIDE;
}

static void parse_params(struct parser *p, enum param_mode mode)
{
    if (!at(p, P_LPAREN)) {
        syntax(p, "'('");
        return;
    }
    next(p);
    bool first = true;
    while (!at(p, P_RPAREN) && !at(p, T_EOF)) {
        size_t ps = tstart(p);
        if (at(p, P_AT)) {
            refuse(p, ps, "TypeScript decorators are not supported",
                   "parameter decorators generate code");
            return;
        }
        bool prop = false;
        while (is_param_modifier(tkw(p))) {
            const struct tok *n = peek(p);
            if (n->nl_before || !(n->type == T_NAME || n->type == P_LBRACE || n->type == P_LBRACK ||
                                  n->type == P_ELLIPSIS)) {
                break;
            }
            prop = true;
            blank_tok(p);
            next(p);
        }
        if (prop && mode != PARAM_TYPE && p->ambient == 0 && p->in_type == 0) {
            if (mode == PARAM_CTOR && p->opts != NULL && (p->opts->flags & TS_TRANSFORM) &&
                is_ident_tok(&p->lx.tok)) {
                if (!grow(p, (void **)&p->pprops, &p->cap_pprops, p->npprops,
                          sizeof(struct pprop))) {
                    return;
                }
                p->pprops[p->npprops].name_start = tstart(p);
                p->pprops[p->npprops].name_end = p->lx.tok.end;
                p->npprops++;
            } else {
                refuse(p, ps, "TypeScript parameter property is not supported",
                       "`constructor(private x: T)` generates an assignment; declare the field "
                       "and assign it in the constructor");
                return;
            }
        }
        if (first && at_kw(p, KW_THIS) && mode != PARAM_ARROW) {
            next(p);
            if (at(p, P_COLON)) {
                p->in_type++;
                next(p);
                parse_type(p);
                p->in_type--;
            }
            if (at(p, P_COMMA)) {
                next(p);
                blank(p, ps, p->prev_end);
                first = false;
                continue;
            }
            blank(p, ps, p->prev_end);
            break;
        }
        if (at(p, P_ELLIPSIS)) {
            next(p);
        }
        parse_binding_target(p);
        if (at(p, P_QUESTION)) {
            blank_tok(p);
            next(p);
        }
        if (at(p, P_COLON)) {
            annotation(p);
        }
        if (at(p, P_ASSIGN)) {
            next(p);
            parse_assignment(p, 0);
        }
        first = false;
        if (!at(p, P_COMMA)) {
            break;
        }
        next(p);
    }
    expect(p, P_RPAREN, "')'");
}

/* ---- classes and functions ---- */

static bool peek_can_follow_modifier(struct parser *p, bool same_line)
{
    const struct tok *n = peek(p);
    if (same_line && n->nl_before) {
        return false;
    }
    return tok_starts_property_name(n) || n->type == P_LBRACE || n->type == P_STAR ||
           n->type == P_ELLIPSIS;
}

static void parse_class_member(struct parser *p)
{
    size_t start = tstart(p);
    bool ts_only = false;
    bool lead_blanked = false;
    unsigned fn = 0;
    if (at(p, P_AT)) {
        refuse(p, start, "TypeScript decorators are not supported",
               "decorators generate code; call the function on the class instead");
        return;
    }
    for (bool first = true; !p->failed; first = false) {
        uint8_t kw = tkw(p);
        if (kw == KW_PUBLIC || kw == KW_PRIVATE || kw == KW_PROTECTED || kw == KW_READONLY ||
            kw == KW_OVERRIDE || kw == KW_ABSTRACT || kw == KW_DECLARE) {
            if (!peek_can_follow_modifier(p, true)) {
                break;
            }
            if (kw == KW_ABSTRACT || kw == KW_DECLARE) {
                ts_only = true;
            }
            if (first) {
                lead_blanked = true;
            }
            blank_tok(p);
            next(p);
            continue;
        }
        if (kw == KW_STATIC) {
            if (peek(p)->type == P_LBRACE) {
                next(p);
                unsigned saved = p->fn;
                parse_function_body(p, 0);
                p->fn = saved;
                return;
            }
            if (!peek_can_follow_modifier(p, false)) {
                break;
            }
            next(p);
            continue;
        }
        if (kw == KW_ACCESSOR) {
            if (!peek_can_follow_modifier(p, true)) {
                break;
            }
            next(p);
            continue;
        }
        break;
    }
    if (lead_blanked &&
        (at(p, P_LBRACK) || at(p, P_STAR) || at_kw(p, KW_IN) || at_kw(p, KW_INSTANCEOF))) {
        /* `x = a` NL `private [k] = 1`: without a `;`, `[k]` would index `a` */
        semi_at(p, start);
    }
    if (at_kw(p, KW_ASYNC) && peek_starts_member_name(p)) {
        next(p);
        fn |= F_ASYNC;
    }
    if (at(p, P_STAR)) {
        next(p);
        fn |= F_GEN;
    }
    bool accessor = false;
    if ((at_kw(p, KW_GET) || at_kw(p, KW_SET)) && peek_starts_member_name(p) &&
        peek(p)->type != P_STAR) {
        next(p);
        accessor = true;
    }
    if (at(p, P_LBRACK) && is_index_signature(p)) {
        p->in_type++;
        next(p);
        next(p);
        next(p);
        parse_type(p);
        expect(p, P_RBRACK, "']'");
        if (at(p, P_COLON)) {
            next(p);
            parse_type(p);
        }
        p->in_type--;
        semicolon(p);
        blank_stmt(p, start);
        return;
    }
    bool is_ctor =
            !accessor && fn == 0 &&
            (at_kw(p, KW_CONSTRUCTOR) || (at(p, T_STR) && p->lx.tok.end - p->lx.tok.start == 13 &&
                                          memcmp(p->src + tstart(p) + 1, "constructor", 11) == 0));
    parse_property_name(p);
    if (at(p, P_QUESTION)) {
        blank_tok(p);
        next(p);
    } else if (at(p, P_BANG) && !nl_before(p)) {
        blank_tok(p);
        next(p);
    }
    if (at(p, P_LPAREN) || at(p, P_LT)) {
        parse_method_rest(p, fn, start, true, is_ctor);
        if (ts_only) {
            blank_stmt(p, start);
        }
        return;
    }
    if (fn != 0 || accessor) {
        syntax(p, "'('");
        return;
    }
    if (at(p, P_COLON)) {
        annotation(p);
    }
    if (at(p, P_ASSIGN)) {
        next(p);
        unsigned saved = p->fn;
        p->fn = 0;
        parse_assignment(p, 0);
        p->fn = saved;
    }
    semicolon(p);
    if (ts_only) {
        blank_stmt(p, start);
    }
}

static void parse_class_body(struct parser *p)
{
    if (!at(p, P_LBRACE)) {
        syntax(p, "'{'");
        return;
    }
    size_t saved_open = p->class_open;
    p->class_open = p->lx.tok.end;
    next(p);
    while (!at(p, P_RBRACE) && !at(p, T_EOF)) {
        if (at(p, P_SEMI)) {
            next(p);
            continue;
        }
        if (!enter(p)) {
            return;
        }
        parse_class_member(p);
        leave(p);
    }
    p->class_open = saved_open;
    expect(p, P_RBRACE, "'}'");
}

/* At `class` (declaration or expression). */
static void parse_class(struct parser *p)
{
    if (!enter(p)) {
        return;
    }
    bool saved_derived = p->in_derived;
    next(p);
    if (at(p, T_NAME) && !at_kw(p, KW_EXTENDS) && !at_kw(p, KW_IMPLEMENTS)) {
        next(p);
    }
    if (at(p, P_LT)) {
        blank_type_params(p);
    }
    p->in_derived = false;
    if (at_kw(p, KW_EXTENDS)) {
        p->in_derived = true;
        next(p);
        parse_lhs(p);
        if (at(p, P_LT)) {
            size_t s = tstart(p);
            p->in_type++;
            parse_type_args(p);
            p->in_type--;
            blank(p, s, p->prev_end);
        }
    }
    if (at_kw(p, KW_IMPLEMENTS)) {
        size_t s = tstart(p);
        next(p);
        p->in_type++;
        parse_type(p);
        while (at(p, P_COMMA) && !p->failed) {
            next(p);
            parse_type(p);
        }
        p->in_type--;
        blank(p, s, p->prev_end);
    }
    parse_class_body(p);
    p->in_derived = saved_derived;
    leave(p);
}

/* At `function`; start is where the declaration starts (for erasing an overload whole). */
static void parse_function(struct parser *p, size_t start, bool is_async, bool is_decl)
{
    if (!enter(p)) {
        return;
    }
    next(p);
    unsigned fn = is_async ? F_ASYNC : 0;
    if (at(p, P_STAR)) {
        next(p);
        fn |= F_GEN;
    }
    if (at(p, T_NAME)) {
        next(p);
    }
    if (at(p, P_LT)) {
        blank_type_params(p);
    }
    parse_params(p, PARAM_FN);
    if (at(p, P_COLON)) {
        return_annotation(p);
    }
    if (at(p, P_LBRACE)) {
        parse_function_body(p, fn);
    } else if (is_decl || p->ambient > 0) {
        semicolon(p);
        blank_stmt(p, start);
    } else {
        syntax(p, "'{'");
    }
    leave(p);
}

/* ---- statements ---- */

static void parse_block(struct parser *p)
{
    next(p);
    parse_statements_until_brace(p);
    expect(p, P_RBRACE, "'}'");
}

static void parse_var_decls(struct parser *p, unsigned ef)
{
    while (!p->failed) {
        parse_binding_target(p);
        if (at(p, P_BANG) && !nl_before(p)) {
            blank_tok(p);
            next(p);
        }
        if (at(p, P_COLON)) {
            annotation(p);
        }
        if (at(p, P_ASSIGN)) {
            next(p);
            parse_assignment(p, ef & E_NOIN);
        }
        if (!at(p, P_COMMA)) {
            break;
        }
        next(p);
    }
}

/* At `let`, `using`, `await`: does a declaration start here? */
static bool at_declaration(struct parser *p)
{
    const struct tok *n = peek(p);
    switch (tkw(p)) {
    case KW_VAR:
    case KW_CONST:
        return true;
    case KW_LET:
        return (n->type == T_NAME && n->kw != KW_IN && n->kw != KW_INSTANCEOF &&
                (!n->nl_before || !is_reserved(n->kw))) ||
               n->type == P_LBRACK || n->type == P_LBRACE;
    case KW_USING:
        return is_ident_tok(n) && !n->nl_before && n->kw != KW_IN && n->kw != KW_OF;
    case KW_AWAIT: {
        if (!(n->type == T_NAME && n->kw == KW_USING && !n->nl_before)) {
            return false;
        }
        struct snap s;
        save(p, &s);
        next(p);
        next(p);
        bool yes = is_ident_tok(&p->lx.tok) && !nl_before(p);
        restore(p, &s);
        return yes;
    }
    default:
        return false;
    }
}

static void parse_for(struct parser *p)
{
    next(p);
    if (at_kw(p, KW_AWAIT)) {
        next(p);
    }
    expect(p, P_LPAREN, "'('");
    if (at(p, P_SEMI)) {
        /* no initializer */
    } else if (at(p, T_NAME) && at_declaration(p)) {
        if (at_kw(p, KW_AWAIT)) {
            next(p);
        }
        next(p);
        parse_var_decls(p, E_NOIN);
    } else {
        parse_expression(p, E_NOIN);
    }
    if (at_kw(p, KW_OF)) {
        next(p);
        parse_assignment(p, 0);
    } else if (at_kw(p, KW_IN)) {
        next(p);
        parse_expression(p, 0);
    } else {
        expect(p, P_SEMI, "';'");
        if (!at(p, P_SEMI)) {
            parse_expression(p, 0);
        }
        expect(p, P_SEMI, "';'");
        if (!at(p, P_RPAREN)) {
            parse_expression(p, 0);
        }
    }
    expect(p, P_RPAREN, "')'");
    parse_statement(p, NULL);
}

static void parse_paren_expr(struct parser *p)
{
    expect(p, P_LPAREN, "'('");
    parse_expression(p, 0);
    expect(p, P_RPAREN, "')'");
}

static void parse_if(struct parser *p)
{
    while (!p->failed) {
        next(p); /* if */
        parse_paren_expr(p);
        parse_statement(p, NULL);
        if (!at_kw(p, KW_ELSE)) {
            break;
        }
        next(p);
        if (!at_kw(p, KW_IF)) {
            parse_statement(p, NULL);
            break;
        }
    }
}

static void parse_try(struct parser *p)
{
    next(p);
    if (!at(p, P_LBRACE)) {
        syntax(p, "'{'");
        return;
    }
    parse_block(p);
    if (at_kw(p, KW_CATCH)) {
        next(p);
        if (at(p, P_LPAREN)) {
            next(p);
            parse_binding_target(p);
            if (at(p, P_COLON)) {
                annotation(p);
            }
            expect(p, P_RPAREN, "')'");
        }
        if (!at(p, P_LBRACE)) {
            syntax(p, "'{'");
            return;
        }
        parse_block(p);
    }
    if (at_kw(p, KW_FINALLY)) {
        next(p);
        if (!at(p, P_LBRACE)) {
            syntax(p, "'{'");
            return;
        }
        parse_block(p);
    }
}

static void parse_switch(struct parser *p)
{
    next(p);
    parse_paren_expr(p);
    expect(p, P_LBRACE, "'{'");
    while (!at(p, P_RBRACE) && !at(p, T_EOF)) {
        if (at_kw(p, KW_CASE)) {
            next(p);
            parse_expression(p, 0);
            expect(p, P_COLON, "':'");
        } else if (at_kw(p, KW_DEFAULT)) {
            next(p);
            expect(p, P_COLON, "':'");
        } else {
            parse_statement(p, NULL);
        }
    }
    expect(p, P_RBRACE, "'}'");
}

/* `interface I<T> extends A, B { ... }` at `interface`. */
static void parse_interface(struct parser *p, size_t start)
{
    p->in_type++;
    next(p);
    expect_name(p);
    if (at(p, P_LT)) {
        parse_type_params(p);
    }
    if (at_kw(p, KW_EXTENDS)) {
        next(p);
        parse_type(p);
        while (at(p, P_COMMA) && !p->failed) {
            next(p);
            parse_type(p);
        }
    }
    if (!at(p, P_LBRACE)) {
        syntax(p, "'{'");
    } else {
        parse_object_type(p);
    }
    p->in_type--;
    blank_stmt(p, start);
}

/* `type A<T> = ...` at `type`. */
static void parse_type_alias(struct parser *p, size_t start)
{
    p->in_type++;
    next(p);
    expect_name(p);
    if (at(p, P_LT)) {
        parse_type_params(p);
    }
    expect(p, P_ASSIGN, "'='");
    parse_type(p);
    p->in_type--;
    semicolon(p);
    blank_stmt(p, start);
}

/* `enum E { A, B = 1 }` at `enum`: parsed (ambient), refused or rewritten. */
static void parse_enum(struct parser *p, size_t start, size_t kw_start)
{
    if (p->ambient == 0 && !(p->opts != NULL && (p->opts->flags & TS_TRANSFORM))) {
        refuse(p, start, "TypeScript enum is not supported",
               "enums generate code; use an object literal (`as const`) or TS_TRANSFORM");
        return;
    }
    if (p->ambient == 0) {
        transform_enum(p, start, kw_start);
        return;
    }
    next(p);
    expect_name(p);
    expect(p, P_LBRACE, "'{'");
    while (!at(p, P_RBRACE) && !at(p, T_EOF)) {
        parse_property_name(p);
        if (at(p, P_ASSIGN)) {
            next(p);
            parse_assignment(p, 0);
        }
        if (!at(p, P_COMMA)) {
            break;
        }
        next(p);
    }
    expect(p, P_RBRACE, "'}'");
}

/* `namespace A.B { ... }` / `module "m" { ... }` at the keyword. Erased when it holds only
 * types (TypeScript emits nothing for it either), refused otherwise. */
static void parse_namespace(struct parser *p, size_t start)
{
    next(p);
    if (at(p, T_STR)) {
        next(p);
    } else {
        expect_name(p);
        while (at(p, P_DOT) && !p->failed) {
            next(p);
            expect_name(p);
        }
    }
    if (p->ambient > 0 && !at(p, P_LBRACE)) {
        semicolon(p);
        return;
    }
    if (!at(p, P_LBRACE)) {
        syntax(p, "'{'");
        return;
    }
    next(p);
    bool types_only = parse_statements_until_brace(p);
    expect(p, P_RBRACE, "'}'");
    if (p->ambient == 0 && !types_only) {
        refuse(p, start, "TypeScript namespace is not supported",
               "a namespace with values generates code; use a module or an object");
        return;
    }
    blank_stmt(p, start);
}

/* `declare ...` at `declare`: the declaration is parsed and erased whole. */
static void parse_declare(struct parser *p, size_t start)
{
    next(p);
    p->ambient++;
    if (at_kw(p, KW_GLOBAL) && peek(p)->type == P_LBRACE) {
        next(p);
        parse_block(p);
    } else {
        parse_statement(p, NULL);
    }
    p->ambient--;
    blank_stmt(p, start);
}

/* Import or export specifiers `{ a, type B, c as d }` at `{`. Inline `type` specifiers are
 * erased with their comma. Returns true when every specifier (at least one) is type-only. */
static bool parse_specifiers(struct parser *p)
{
    next(p);
    size_t count = 0;
    size_t types = 0;
    size_t last_comma = SIZE_MAX;
    while (!at(p, P_RBRACE) && !at(p, T_EOF)) {
        size_t s = tstart(p);
        bool is_type = false;
        if (at_kw(p, KW_TYPE)) {
            struct snap sn;
            save(p, &sn);
            next(p);
            if (at_kw(p, KW_AS)) {
                next(p);
                /* `type as` / `type as as X` are type-only; `type as X` renames `type` */
                is_type = at(p, P_COMMA) || at(p, P_RBRACE) || at_kw(p, KW_AS);
            } else {
                is_type = at(p, T_NAME) || at(p, T_STR);
            }
            restore(p, &sn);
            if (is_type) {
                next(p);
            }
        }
        if (at(p, T_NAME) || at(p, T_STR)) {
            next(p);
        } else {
            syntax(p, "a name");
            return false;
        }
        if (at_kw(p, KW_AS)) {
            next(p);
            if (at(p, T_NAME) || at(p, T_STR)) {
                next(p);
            } else {
                syntax(p, "a name");
                return false;
            }
        }
        count++;
        size_t e = p->prev_end;
        if (is_type) {
            types++;
            if (at(p, P_COMMA)) {
                blank(p, s, p->lx.tok.end);
            } else if (last_comma != SIZE_MAX) {
                blank(p, last_comma, e);
            } else {
                blank(p, s, e);
            }
        }
        if (!at(p, P_COMMA)) {
            break;
        }
        last_comma = tstart(p);
        next(p);
    }
    expect(p, P_RBRACE, "'}'");
    return count > 0 && types == count;
}

static void parse_from_clause(struct parser *p)
{
    if (!at_kw(p, KW_FROM)) {
        syntax(p, "'from'");
        return;
    }
    next(p);
    expect(p, T_STR, "a module name");
    if ((at_kw(p, KW_WITH) || (at(p, T_NAME) && p->lx.tok.end - p->lx.tok.start == 6 &&
                               memcmp(p->src + tstart(p), "assert", 6) == 0)) &&
        !nl_before(p)) {
        next(p);
        if (at(p, P_LBRACE)) {
            parse_object_literal(p);
        } else {
            syntax(p, "'{'");
        }
    }
}

/* At `import` (a declaration, not import() or import.meta). Returns true if erased. */
static bool parse_import(struct parser *p, size_t start)
{
    next(p);
    if (at(p, T_STR)) {
        next(p);
        if (at_kw(p, KW_WITH) && !nl_before(p)) {
            next(p);
            if (at(p, P_LBRACE)) {
                parse_object_literal(p);
            }
        }
        semicolon(p);
        return false;
    }
    bool type_only = false;
    if (at_kw(p, KW_TYPE)) {
        const struct tok *n = peek(p);
        if (n->type == P_LBRACE || n->type == P_STAR) {
            type_only = true;
        } else if (n->type == T_NAME && n->kw != KW_FROM) {
            type_only = true;
        } else if (n->type == T_NAME && n->kw == KW_FROM) {
            struct snap s;
            save(p, &s);
            next(p);
            next(p);
            type_only = at_kw(p, KW_FROM) || at(p, P_ASSIGN);
            restore(p, &s);
        }
        if (type_only) {
            next(p);
        }
    }
    bool has_default = false;
    bool all_types = false;
    bool has_named = false;
    if (at(p, T_NAME) && !(at_kw(p, KW_FROM) && peek(p)->type == T_STR)) {
        next(p);
        if (at(p, P_ASSIGN)) {
            next(p);
            bool req = at_kw(p, KW_REQUIRE) && peek(p)->type == P_LPAREN;
            if (req) {
                next(p);
                next(p);
                expect(p, T_STR, "a module name");
                expect(p, P_RPAREN, "')'");
            } else {
                expect_name(p);
                while (at(p, P_DOT) && !p->failed) {
                    next(p);
                    expect_name(p);
                }
            }
            semicolon(p);
            if (type_only) {
                blank_stmt(p, start);
                return true;
            }
            refuse(p, start,
                   req ? "TypeScript `import x = require()` is not supported"
                       : "TypeScript import alias is not supported",
                   req ? "use `import x from \"m\"` or `import * as x from \"m\"`"
                       : "use `const x = N.y`");
            return false;
        }
        has_default = true;
        if (at(p, P_COMMA)) {
            next(p);
        }
    }
    if (at(p, P_STAR)) {
        next(p);
        if (!at_kw(p, KW_AS)) {
            syntax(p, "'as'");
            return false;
        }
        next(p);
        expect_name(p);
        has_named = true;
    } else if (at(p, P_LBRACE)) {
        all_types = parse_specifiers(p);
    } else if (!has_default) {
        syntax(p, "an import clause");
        return false;
    }
    parse_from_clause(p);
    semicolon(p);
    if (type_only || (all_types && !has_default && !has_named)) {
        blank_stmt(p, start);
        return true;
    }
    return false;
}

static bool parse_name_statement(struct parser *p, size_t start);

/* At `export`. Returns true if the statement was erased whole. */
static bool parse_export(struct parser *p, size_t start)
{
    next(p);
    switch (tt(p)) {
    case P_STAR:
        next(p);
        if (at_kw(p, KW_AS)) {
            next(p);
            if (at(p, T_NAME) || at(p, T_STR)) {
                next(p);
            } else {
                syntax(p, "a name");
            }
        }
        parse_from_clause(p);
        semicolon(p);
        return false;
    case P_LBRACE: {
        bool all_types = parse_specifiers(p);
        if (at_kw(p, KW_FROM)) {
            parse_from_clause(p);
        }
        semicolon(p);
        if (all_types) {
            blank_stmt(p, start);
        }
        return all_types;
    }
    case P_ASSIGN:
        refuse(p, start, "TypeScript `export =` is not supported", "use `export default`");
        return false;
    case T_NAME:
        break;
    default:
        syntax(p, "a declaration");
        return false;
    }
    const struct tok *n = peek(p);
    switch (tkw(p)) {
    case KW_TYPE:
        if (n->type == P_LBRACE || n->type == P_STAR) {
            next(p);
            if (at(p, P_STAR)) {
                next(p);
                if (at_kw(p, KW_AS)) {
                    next(p);
                    expect_name(p);
                }
                parse_from_clause(p);
            } else {
                parse_specifiers(p);
                if (at_kw(p, KW_FROM)) {
                    parse_from_clause(p);
                }
            }
            semicolon(p);
            blank_stmt(p, start);
            return true;
        }
        break;
    case KW_DEFAULT:
        next(p);
        if (at_kw(p, KW_INTERFACE) && is_ident_tok(peek(p))) {
            parse_interface(p, start);
            return true;
        }
        if (at_kw(p, KW_ABSTRACT) && peek(p)->kw == KW_CLASS && !peek(p)->nl_before) {
            blank_tok(p);
            next(p);
        }
        if (at_kw(p, KW_FUNCTION)) {
            parse_function(p, start, false, true);
            return false;
        }
        if (at_kw(p, KW_ASYNC) && peek(p)->kw == KW_FUNCTION && !peek(p)->nl_before) {
            next(p);
            parse_function(p, start, true, true);
            return false;
        }
        if (at_kw(p, KW_CLASS)) {
            parse_class(p);
            return false;
        }
        parse_assignment(p, 0);
        semicolon(p);
        return false;
    case KW_AS:
        /* export as namespace X; (UMD declaration) */
        next(p);
        expect_name(p);
        expect_name(p);
        semicolon(p);
        blank_stmt(p, start);
        return true;
    case KW_IMPORT:
        refuse(p, start, "TypeScript `export import` alias is not supported",
               "use `export const x = N.y`");
        return false;
    default:
        break;
    }
    return parse_name_statement(p, start);
}

/* A statement starting with a name; start is where it starts (before any `export`). Returns
 * true if it was erased whole. */
static bool parse_name_statement(struct parser *p, size_t start)
{
    const struct tok *n = peek(p);
    bool same_line_name = n->type == T_NAME && !n->nl_before;
    switch (tkw(p)) {
    case KW_CONST:
        if (n->type == T_NAME && n->kw == KW_ENUM) {
            size_t kw_start = tstart(p);
            next(p);
            parse_enum(p, start, kw_start);
            return p->ambient > 0;
        }
        /* fall through */
    case KW_VAR:
        next(p);
        parse_var_decls(p, 0);
        semicolon(p);
        return false;
    case KW_LET:
    case KW_USING:
    case KW_AWAIT:
        if (at_declaration(p)) {
            if (at_kw(p, KW_AWAIT)) {
                next(p);
            }
            next(p);
            parse_var_decls(p, 0);
            semicolon(p);
            return false;
        }
        break;
    case KW_IF:
        parse_if(p);
        return false;
    case KW_FOR:
        parse_for(p);
        return false;
    case KW_WHILE:
    case KW_WITH:
        next(p);
        parse_paren_expr(p);
        parse_statement(p, NULL);
        return false;
    case KW_DO:
        next(p);
        parse_statement(p, NULL);
        if (!at_kw(p, KW_WHILE)) {
            syntax(p, "'while'");
            return false;
        }
        next(p);
        parse_paren_expr(p);
        if (at(p, P_SEMI)) {
            next(p);
        }
        return false;
    case KW_RETURN:
        next(p);
        p->restricted_end = p->prev_end;
        if (!at(p, P_SEMI) && !at(p, P_RBRACE) && !at(p, T_EOF) && !nl_before(p)) {
            parse_expression(p, 0);
        }
        semicolon(p);
        return false;
    case KW_THROW:
        next(p);
        parse_expression(p, 0);
        semicolon(p);
        return false;
    case KW_BREAK:
    case KW_CONTINUE:
        next(p);
        if (at(p, T_NAME) && !nl_before(p)) {
            next(p);
        }
        semicolon(p);
        return false;
    case KW_DEBUGGER:
        next(p);
        semicolon(p);
        return false;
    case KW_TRY:
        parse_try(p);
        return false;
    case KW_SWITCH:
        parse_switch(p);
        return false;
    case KW_FUNCTION:
        parse_function(p, start, false, true);
        return p->ambient > 0;
    case KW_ASYNC:
        if (n->type == T_NAME && n->kw == KW_FUNCTION && !n->nl_before) {
            next(p);
            parse_function(p, start, true, true);
            return false;
        }
        break;
    case KW_CLASS:
        parse_class(p);
        return p->ambient > 0;
    case KW_ABSTRACT:
        if (same_line_name && n->kw == KW_CLASS) {
            blank_tok(p);
            next(p);
            parse_class(p);
            return p->ambient > 0;
        }
        break;
    case KW_IMPORT:
        if (n->type != P_LPAREN && n->type != P_DOT) {
            return parse_import(p, start);
        }
        break;
    case KW_EXPORT:
        return parse_export(p, start);
    case KW_INTERFACE:
        if (same_line_name) {
            parse_interface(p, start);
            return true;
        }
        break;
    case KW_TYPE:
        if (same_line_name) {
            parse_type_alias(p, start);
            return true;
        }
        break;
    case KW_DECLARE:
        if (same_line_name || (n->type == T_NAME && p->ambient > 0)) {
            parse_declare(p, start);
            return true;
        }
        break;
    case KW_ENUM:
        parse_enum(p, start, tstart(p));
        return p->ambient > 0;
    case KW_NAMESPACE:
    case KW_MODULE:
        if ((n->type == T_NAME || n->type == T_STR) && !n->nl_before) {
            parse_namespace(p, start);
            return true;
        }
        break;
    case KW_GLOBAL:
        if (p->ambient > 0 && n->type == P_LBRACE) {
            next(p);
            parse_block(p);
            return true;
        }
        break;
    default:
        break;
    }
    if (!is_reserved(tkw(p)) && n->type == P_COLON) {
        /* a label */
        next(p);
        next(p);
        parse_statement(p, NULL);
        return false;
    }
    if (is_reserved(tkw(p)) && !is_start_of_expression(&p->lx.tok)) {
        syntax(p, "a statement");
        return false;
    }
    parse_expression(p, 0);
    semicolon(p);
    return false;
}

static void parse_statement(struct parser *p, bool *ret_type_only)
{
    bool type_only = false;
    if (!enter(p)) {
        return;
    }
    size_t start = tstart(p);
    switch (tt(p)) {
    case P_LBRACE:
        parse_block(p);
        break;
    case P_SEMI:
        next(p);
        type_only = true;
        break;
    case P_AT:
        refuse(p, start, "TypeScript decorators are not supported",
               "decorators generate code; call the function on the class instead");
        break;
    case T_NAME:
        type_only = parse_name_statement(p, start);
        break;
    default:
        parse_expression(p, 0);
        semicolon(p);
        break;
    }
    leave(p);
    if (ret_type_only != NULL) {
        *ret_type_only = type_only;
    }
}

/* Statements up to `}` or the end. Returns true if every one of them was erased. */
static bool parse_statements_until_brace(struct parser *p)
{
    bool all = true;
    while (!at(p, P_RBRACE) && !at(p, T_EOF) && !p->failed) {
        bool type_only = false;
        parse_statement(p, &type_only);
        all = all && type_only;
    }
    return all;
}

/* ---- transforms (TS_TRANSFORM) ---- */

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
    if (b->nomem) {
        return;
    }
    if (b->n + n + 1 > b->cap) {
        size_t ncap = b->cap ? b->cap : 64;
        while (ncap < b->n + n + 1) {
            ncap *= 2;
        }
        char *np = realloc(b->p, ncap);
        if (np == NULL) {
            b->nomem = true;
            return;
        }
        b->p = np;
        b->cap = ncap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void sb_str(struct sbuf *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

/* Copies src[from..to) keeping only its line terminators (for a rewrite to keep its lines). */
static void sb_newlines(struct sbuf *b, const char *src, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        if (src[i] == '\n') {
            sb_add(b, "\n", 1);
        }
    }
}

static void add_edit(struct parser *p, size_t start, size_t end, struct sbuf *b)
{
    if (b->nomem) {
        free(b->p);
        fail_nomem(p);
        return;
    }
    if (p->failed || !grow(p, (void **)&p->edits, &p->cap_edits, p->nedits, sizeof(struct edit))) {
        free(b->p);
        return;
    }
    p->edits[p->nedits].start = start;
    p->edits[p->nedits].end = end;
    p->edits[p->nedits].text = b->p;
    p->edits[p->nedits].len = b->n;
    p->nedits++;
}

/* Parameter properties: `constructor(private x: T) { body }` gets `this.x = x;` at the start
 * of the body, or right after the `super(...)` statement in a derived class, and the class
 * body starts with the field declarations `x;` (TypeScript's order with [[Define]] fields). */
static void transform_pprops(struct parser *p, size_t body, size_t from)
{
    size_t at_pos = body + 1;
    bool need_semi = false;
    if (p->in_derived) {
        /* after the statement that starts with `super` at the top level of the body */
        struct lexer lx;
        lex_init(&lx, p->src, p->len);
        lx.pos = body + 1;
        lex_next(&lx);
        int nest = 0;
        bool found = false;
        size_t last_end = body + 1;
        while (lx.tok.type != T_EOF && lx.error == NULL) {
            uint8_t t = lx.tok.type;
            if (found && nest == 0) {
                if (t == P_SEMI) {
                    at_pos = lx.tok.end;
                    break;
                }
                if (t == P_RBRACE ||
                    (lx.tok.nl_before && t != P_DOT && t != P_LPAREN && t != P_QDOT)) {
                    at_pos = last_end;
                    need_semi = true;
                    break;
                }
            }
            if (t == P_LBRACE || t == P_LPAREN || t == P_LBRACK) {
                nest++;
            } else if (t == P_RBRACE || t == P_RPAREN || t == P_RBRACK) {
                if (nest == 0) {
                    break;
                }
                nest--;
            } else if (nest == 0 && t == T_NAME && lx.tok.kw == KW_SUPER) {
                found = true;
            }
            last_end = lx.tok.end;
            lex_next(&lx);
        }
    }
    struct sbuf fields = { 0 };
    struct sbuf b = { 0 };
    if (need_semi) {
        sb_str(&b, ";");
    }
    for (size_t i = from; i < p->npprops; i++) {
        const struct pprop *pp = &p->pprops[i];
        const char *name = p->src + pp->name_start;
        size_t n = pp->name_end - pp->name_start;
        sb_str(&fields, " ");
        sb_add(&fields, name, n);
        sb_str(&fields, ";");
        sb_str(&b, " this.");
        sb_add(&b, name, n);
        sb_str(&b, " = ");
        sb_add(&b, name, n);
        sb_str(&b, ";");
    }
    if (p->class_open != SIZE_MAX) {
        add_edit(p, p->class_open, p->class_open, &fields);
    } else {
        free(fields.p);
    }
    add_edit(p, at_pos, at_pos, &b);
}

/* `enum E { A, B = 2, C }` becomes
 * `var E; (function (E) { var A = 0; E[E["A"] = A] = "A"; ... })(E || (E = {}));`
 * on the same lines: member values are also local names, so `B = A << 1` works as in
 * TypeScript. A member without initializer follows the previous one (+1); string members get
 * no reverse mapping. */
static void transform_enum(struct parser *p, size_t start, size_t kw_start)
{
    struct sbuf b = { 0 };
    size_t name_s;
    size_t name_e;
    next(p); /* enum */
    if (!is_ident_tok(&p->lx.tok)) {
        syntax(p, "an enum name");
        return;
    }
    name_s = tstart(p);
    name_e = p->lx.tok.end;
    int nl = (int)(name_e - name_s);
    const char *name = p->src + name_s;
    bool exported = false;
    if (start != kw_start) {
        /* `export enum` / `export const enum` (start is at `export`) */
        exported = p->src[start] == 'e' && memcmp(p->src + start, "export", 6) == 0;
    }
    next(p);
    if (!at(p, P_LBRACE)) {
        syntax(p, "'{'");
        return;
    }
    sb_str(&b, exported ? "export var " : "var ");
    sb_add(&b, name, (size_t)nl);
    sb_str(&b, "; (function (");
    sb_add(&b, name, (size_t)nl);
    sb_str(&b, ") {");
    size_t copied = tstart(p) + 1;
    sb_newlines(&b, p->src, start, copied);
    next(p);
    /* auto-increment: a known number, else the previous member's value + 1 */
    long long autoval = 0;
    bool have_auto = true;
    struct sbuf prev = { 0 };
    while (!at(p, P_RBRACE) && !at(p, T_EOF) && !p->failed) {
        size_t ms = tstart(p);
        size_t me = p->lx.tok.end;
        sb_newlines(&b, p->src, copied, ms);
        copied = ms;
        if (!at(p, T_NAME) && !at(p, T_STR)) {
            syntax(p, "an enum member name");
            break;
        }
        bool is_str = at(p, T_STR);
        /* members are also local names, so initializers can refer to them (not when that
         * would shadow the enum or be a strict-mode error) */
        bool local = is_ident_tok(&p->lx.tok) &&
                     !(me - ms == (size_t)nl && memcmp(p->src + ms, name, me - ms) == 0) &&
                     !(me - ms == 4 && memcmp(p->src + ms, "eval", 4) == 0) &&
                     !(me - ms == 9 && memcmp(p->src + ms, "arguments", 9) == 0);
        next(p);
        struct sbuf key = { 0 }; /* "A" for a name, the literal itself for a string */
        struct sbuf val = { 0 };
        if (is_str) {
            sb_add(&key, p->src + ms, me - ms);
        } else {
            sb_str(&key, "\"");
            sb_add(&key, p->src + ms, me - ms);
            sb_str(&key, "\"");
        }
        bool string_value = false;
        if (at(p, P_ASSIGN)) {
            next(p);
            size_t vs = tstart(p);
            size_t first_end = p->lx.tok.end;
            bool first_str = at(p, T_STR) || at(p, T_TPL);
            bool first_num = at(p, T_NUM);
            parse_assignment(p, 0);
            size_t ve = p->prev_end;
            bool lone = ve == first_end;
            string_value = lone && first_str; /* no reverse mapping for a string member */
            sb_str(&val, "(");
            for (size_t k = vs; k < ve; k++) {
                char c = p->src[k];
                sb_add(&val, (c == '\n' || c == '\r') ? " " : &p->src[k], 1);
            }
            sb_str(&val, ")");
            have_auto = false;
            if (lone && first_num && ve - vs < 20) {
                char tmp[24];
                char *endp = NULL;
                memcpy(tmp, p->src + vs, ve - vs);
                tmp[ve - vs] = '\0';
                errno = 0;
                long long v = strtoll(tmp, &endp, 10);
                /* counted on natively only while exact as a JavaScript number (|v| < 2^53);
                 * past that the next member is written as "previous + 1", as TypeScript does */
                if (endp != NULL && *endp == '\0' && errno == 0 && v < (1LL << 53) &&
                    v > -(1LL << 53)) {
                    autoval = v;
                    have_auto = true;
                }
            }
        } else if (have_auto) {
            char num[32];
            snprintf(num, sizeof(num), "%lld", autoval);
            sb_str(&val, num);
        } else {
            sb_str(&val, "(");
            if (prev.p != NULL) {
                sb_add(&val, prev.p, prev.n);
            }
            sb_str(&val, " + 1)");
        }
        /* var A = value; E[E["A"] = A] = "A";   or, for a string member, E["A"] = A; */
        const char *v = local ? p->src + ms : val.p;
        size_t vn = local ? me - ms : val.n;
        sb_str(&b, " ");
        if (local) {
            sb_str(&b, "var ");
            sb_add(&b, p->src + ms, me - ms);
            sb_str(&b, " = ");
            sb_add(&b, val.p != NULL ? val.p : "", val.n);
            sb_str(&b, "; ");
        }
        sb_add(&b, name, (size_t)nl);
        sb_str(&b, "[");
        if (!string_value) {
            sb_add(&b, name, (size_t)nl);
            sb_str(&b, "[");
        }
        sb_add(&b, key.p != NULL ? key.p : "", key.n);
        sb_str(&b, "] = ");
        sb_add(&b, v != NULL ? v : "", vn);
        if (!string_value) {
            sb_str(&b, "] = ");
            sb_add(&b, key.p != NULL ? key.p : "", key.n);
        }
        sb_str(&b, ";");
        /* what the next member without initializer counts from */
        if (have_auto) {
            autoval++;
            have_auto = autoval < (1LL << 53);
        }
        prev.n = 0;
        if (local) {
            sb_add(&prev, p->src + ms, me - ms);
        } else {
            sb_add(&prev, name, (size_t)nl);
            sb_str(&prev, "[");
            sb_add(&prev, key.p != NULL ? key.p : "", key.n);
            sb_str(&prev, "]");
        }
        if (key.nomem || val.nomem || prev.nomem) {
            b.nomem = true;
        }
        free(key.p);
        free(val.p);
        if (!at(p, P_COMMA)) {
            break;
        }
        next(p);
    }
    free(prev.p);
    if (!at(p, P_RBRACE)) {
        free(b.p);
        syntax(p, "'}'");
        return;
    }
    sb_newlines(&b, p->src, copied, tstart(p));
    next(p);
    sb_str(&b, " })(");
    sb_add(&b, name, (size_t)nl);
    sb_str(&b, " || (");
    sb_add(&b, name, (size_t)nl);
    sb_str(&b, " = {}));");
    add_edit(p, start, p->prev_end, &b);
}

/* ---- output ---- */

static bool is_line_sep(const char *s, size_t len, size_t i)
{
    return (unsigned char)s[i] == 0xE2 && i + 2 < len && (unsigned char)s[i + 1] == 0x80 &&
           ((unsigned char)s[i + 2] == 0xA8 || (unsigned char)s[i + 2] == 0xA9);
}

static int cmp_edit(const void *a, const void *b)
{
    const struct edit *x = a;
    const struct edit *y = b;
    return x->start < y->start ? -1 : x->start > y->start ? 1 : 0;
}

/* Blanks, then semicolons, then edits (which replace whatever those did in their range). */
static int build_output(struct parser *p, char **ret_out, size_t *ret_len)
{
    const char *src = p->src;
    size_t len = p->len;
    char *out = malloc(len + 1);
    if (out == NULL) {
        fail_nomem(p);
        return -1;
    }
    if (len > 0) {
        memcpy(out, src, len);
    }
    out[len] = '\0';
    for (size_t k = 0; k < p->nblanks; k++) {
        size_t e = p->blanks[k].end;
        for (size_t i = p->blanks[k].start; i < e && i < len; i++) {
            char c = src[i];
            if (c == '\n' || c == '\r') {
                continue;
            }
            if (is_line_sep(src, len, i)) {
                i += 2;
                continue;
            }
            out[i] = ' ';
        }
    }
    for (size_t k = 0; k < p->nsemis; k++) {
        if (p->semis[k] < len) {
            out[p->semis[k]] = ';';
        }
    }
    if (p->nedits == 0) {
        *ret_out = out;
        *ret_len = len;
        return 0;
    }
    qsort(p->edits, p->nedits, sizeof(struct edit), cmp_edit);
    size_t total = len;
    for (size_t k = 0; k < p->nedits; k++) {
        total = total - (p->edits[k].end - p->edits[k].start) + p->edits[k].len;
    }
    char *res = malloc(total + 1);
    if (res == NULL) {
        free(out);
        fail_nomem(p);
        return -1;
    }
    size_t o = 0;
    size_t i = 0;
    for (size_t k = 0; k < p->nedits; k++) {
        const struct edit *ed = &p->edits[k];
        if (ed->start < i) {
            continue; /* nested in an earlier edit: already replaced */
        }
        memcpy(res + o, out + i, ed->start - i);
        o += ed->start - i;
        if (ed->len > 0) {
            memcpy(res + o, ed->text, ed->len);
        }
        o += ed->len;
        i = ed->end;
    }
    memcpy(res + o, out + i, len - i);
    o += len - i;
    res[o] = '\0';
    free(out);
    *ret_out = res;
    *ret_len = o;
    return 0;
}

int ts_strip_opts(const char *src, size_t len, const struct ts_options *opts, char **ret_out,
                  size_t *ret_len, struct ts_error *reterr)
{
    struct parser p;
    int rc = -1;
    if (reterr != NULL) {
        memset(reterr, 0, sizeof(*reterr));
    }
    if (ret_out == NULL || ret_len == NULL || (src == NULL && len > 0)) {
        if (reterr != NULL) {
            reterr->kind = TS_ERR_ARGUMENT;
            snprintf(reterr->message, sizeof(reterr->message),
                     "ts_strip: src, ret_out and ret_len must not be NULL");
        }
        return -1;
    }
    if (len > TS_MAX_INPUT) {
        if (reterr != NULL) {
            reterr->kind = TS_ERR_LIMIT;
            snprintf(reterr->message, sizeof(reterr->message),
                     "TypeScript source too large: %zu bytes (limit %zu)", len,
                     (size_t)TS_MAX_INPUT);
        }
        return -1;
    }
    if (src == NULL) {
        src = "";
    }
    memset(&p, 0, sizeof(p));
    p.src = src;
    p.len = len;
    p.opts = opts;
    p.err = reterr;
    p.fn = F_ASYNC; /* top-level await */
    p.class_open = SIZE_MAX;
    p.restricted_end = SIZE_MAX;
    p.assertion_open = SIZE_MAX;
    p.memo = calloc(len + 1, 1);
    if (p.memo == NULL) {
        fail_nomem(&p);
        goto out;
    }
    lex_init(&p.lx, src, len);
    if (p.lx.error != NULL) {
        syntax(&p, "a token");
    }
    while (!at(&p, T_EOF) && !p.failed) {
        if (at(&p, P_RBRACE)) {
            syntax(&p, "a statement");
            break;
        }
        parse_statement(&p, NULL);
    }
    if (p.failed) {
        if (reterr != NULL && reterr->message[0] == '\0') {
            /* every failure is reported where it happens; this is a net under that rule */
            reterr->kind = TS_ERR_SYNTAX;
            snprintf(reterr->message, sizeof(reterr->message),
                     "TypeScript syntax error: cannot parse the input");
        }
        goto out;
    }
    rc = build_output(&p, ret_out, ret_len);
out:
    for (size_t k = 0; k < p.nedits; k++) {
        free(p.edits[k].text);
    }
    free(p.edits);
    free(p.blanks);
    free(p.semis);
    free(p.pprops);
    free(p.memo);
    return rc;
}

int ts_strip(const char *src, size_t len, char **ret_out, size_t *ret_len, struct ts_error *reterr)
{
    return ts_strip_opts(src, len, NULL, ret_out, ret_len, reterr);
}
