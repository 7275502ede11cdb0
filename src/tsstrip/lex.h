/*
 * lex.h - the tokenizer of the TypeScript stripper (internal to src/tsstrip).
 *
 * The lexer is driven by the parser (strip.c), TypeScript-style: it never decides alone what a
 * `/`, a `}` or a `>` means. `/` always comes out as a division operator and the parser rescans
 * it as a regular expression where an operand is expected (lex_regex); `}` comes out as a brace
 * and the parser rescans it as the rest of a template literal after a substitution
 * (lex_template); `>` always comes out alone, so `A<B<C>>` closes two type argument lists, and
 * the parser joins `>>`, `>=`, `>>>=` where a binary operator is expected (lex_gt). Everything
 * the lexer needs is in struct lexer, so a snapshot for the parser's bounded speculation is a
 * plain struct copy.
 */
#ifndef AIRLOCK_TSSTRIP_LEX_H
#define AIRLOCK_TSSTRIP_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum tok_type {
    T_EOF,
    T_NAME,    /* identifier or keyword; tok.kw tells which keyword */
    T_PRIVATE, /* #name */
    T_NUM,
    T_STR,
    T_TPL,      /* `...` without substitution */
    T_TPL_HEAD, /* `...${ */
    T_TPL_MID,  /* }...${ (after lex_template) */
    T_TPL_TAIL, /* }...` (after lex_template) */
    T_REGEX,    /* after lex_regex */
    P_LBRACE,
    P_RBRACE,
    P_LPAREN,
    P_RPAREN,
    P_LBRACK,
    P_RBRACK,
    P_SEMI,
    P_COMMA,
    P_DOT,
    P_ELLIPSIS,
    P_QDOT, /* ?. */
    P_QUESTION,
    P_COLON,
    P_ARROW,
    P_AT,
    P_LT,
    P_GT,
    P_LE,
    P_GE,
    P_EQ,
    P_NE,
    P_EQ3,
    P_NE3,
    P_PLUS,
    P_MINUS,
    P_STAR,
    P_SLASH,
    P_PERCENT,
    P_POW,
    P_INC,
    P_DEC,
    P_SHL,
    P_SHR,
    P_USHR,
    P_AMP,
    P_BAR,
    P_CARET,
    P_BANG,
    P_TILDE,
    P_AND,
    P_OR,
    P_NULLISH,
    /* assignment operators: keep P_ASSIGN first and P_NULLISH_ASSIGN last */
    P_ASSIGN,
    P_ADD_ASSIGN,
    P_SUB_ASSIGN,
    P_MUL_ASSIGN,
    P_DIV_ASSIGN,
    P_MOD_ASSIGN,
    P_POW_ASSIGN,
    P_SHL_ASSIGN,
    P_SHR_ASSIGN,
    P_USHR_ASSIGN,
    P_AND_ASSIGN,
    P_OR_ASSIGN,
    P_XOR_ASSIGN,
    P_LAND_ASSIGN,
    P_LOR_ASSIGN,
    P_NULLISH_ASSIGN,
};

/* Keywords. Those before KW_FIRST_CONTEXTUAL are reserved words (never a binding name). */
enum kw {
    KW_NONE,
    KW_BREAK,
    KW_CASE,
    KW_CATCH,
    KW_CLASS,
    KW_CONST,
    KW_CONTINUE,
    KW_DEBUGGER,
    KW_DEFAULT,
    KW_DELETE,
    KW_DO,
    KW_ELSE,
    KW_ENUM,
    KW_EXPORT,
    KW_EXTENDS,
    KW_FALSE,
    KW_FINALLY,
    KW_FOR,
    KW_FUNCTION,
    KW_IF,
    KW_IMPORT,
    KW_IN,
    KW_INSTANCEOF,
    KW_NEW,
    KW_NULL,
    KW_RETURN,
    KW_SUPER,
    KW_SWITCH,
    KW_THIS,
    KW_THROW,
    KW_TRUE,
    KW_TRY,
    KW_TYPEOF,
    KW_VAR,
    KW_VOID,
    KW_WHILE,
    KW_WITH,
    KW_FIRST_CONTEXTUAL,
    KW_ABSTRACT = KW_FIRST_CONTEXTUAL,
    KW_ACCESSOR,
    KW_AS,
    KW_ASSERTS,
    KW_ASYNC,
    KW_AWAIT,
    KW_CONSTRUCTOR,
    KW_DECLARE,
    KW_FROM,
    KW_GET,
    KW_GLOBAL,
    KW_IMPLEMENTS,
    KW_INFER,
    KW_INTERFACE,
    KW_IS,
    KW_KEYOF,
    KW_LET,
    KW_MODULE,
    KW_NAMESPACE,
    KW_OF,
    KW_OUT,
    KW_OVERRIDE,
    KW_PRIVATE,
    KW_PROTECTED,
    KW_PUBLIC,
    KW_READONLY,
    KW_REQUIRE,
    KW_SATISFIES,
    KW_SET,
    KW_STATIC,
    KW_TYPE,
    KW_UNIQUE,
    KW_USING,
    KW_YIELD,
};

struct tok {
    size_t start; /* byte offsets into the source, end exclusive */
    size_t end;
    uint8_t type;   /* enum tok_type */
    uint8_t kw;     /* enum kw, for T_NAME */
    bool nl_before; /* a line terminator between the previous token and this one */
};

struct lexer {
    const char *src;
    size_t len;
    size_t pos;        /* where the next token's scan starts */
    struct tok tok;    /* the current token */
    const char *error; /* static text of the first lexical error, NULL if none */
    size_t error_pos;
};

/* Starts at offset 0, skipping a hashbang line, and reads the first token. */
void lex_init(struct lexer *lx, const char *src, size_t len);

/* Reads the next token into lx->tok. After an error the token is T_EOF. */
void lex_next(struct lexer *lx);

/* The current token is `/` or `/=`: rescans it as a regular expression literal. */
void lex_regex(struct lexer *lx);

/* The current token is `}`: rescans it as the continuation of a template literal. */
void lex_template(struct lexer *lx);

/* The current token is `>`: joins it with what immediately follows (`>>`, `>=`, `>>>=` ...). */
void lex_gt(struct lexer *lx);

#endif
