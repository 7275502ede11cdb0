/*
 * lex.c - tokens of TypeScript source for the stripper.
 *
 * Every scan is bounded by len and never reads past it: the input is not NUL-terminated and may
 * contain anything (NUL bytes, invalid UTF-8). Non-ASCII bytes are identifier characters except
 * the Unicode spaces and line terminators JavaScript knows (NBSP, BOM, U+2000..U+200A, U+2028,
 * U+2029, ...), so a non-ASCII name never splits and a U+2028 still counts as a new line. The
 * lexer keeps no state beyond struct lexer, so the parser can snapshot and restore it.
 */
#include "lex.h"

#include <string.h>

struct kw_entry {
    const char *name;
    uint8_t len;
    uint8_t kw;
};

#define KW(s, k)            \
    {                       \
        s, sizeof(s) - 1, k \
    }

static const struct kw_entry kw_table[] = {
    KW("as", KW_AS),
    KW("do", KW_DO),
    KW("if", KW_IF),
    KW("in", KW_IN),
    KW("is", KW_IS),
    KW("of", KW_OF),
    KW("for", KW_FOR),
    KW("get", KW_GET),
    KW("let", KW_LET),
    KW("new", KW_NEW),
    KW("out", KW_OUT),
    KW("set", KW_SET),
    KW("try", KW_TRY),
    KW("var", KW_VAR),
    KW("case", KW_CASE),
    KW("else", KW_ELSE),
    KW("enum", KW_ENUM),
    KW("from", KW_FROM),
    KW("null", KW_NULL),
    KW("this", KW_THIS),
    KW("true", KW_TRUE),
    KW("type", KW_TYPE),
    KW("void", KW_VOID),
    KW("with", KW_WITH),
    KW("async", KW_ASYNC),
    KW("await", KW_AWAIT),
    KW("break", KW_BREAK),
    KW("catch", KW_CATCH),
    KW("class", KW_CLASS),
    KW("const", KW_CONST),
    KW("false", KW_FALSE),
    KW("infer", KW_INFER),
    KW("keyof", KW_KEYOF),
    KW("super", KW_SUPER),
    KW("throw", KW_THROW),
    KW("using", KW_USING),
    KW("while", KW_WHILE),
    KW("yield", KW_YIELD),
    KW("delete", KW_DELETE),
    KW("export", KW_EXPORT),
    KW("global", KW_GLOBAL),
    KW("import", KW_IMPORT),
    KW("module", KW_MODULE),
    KW("public", KW_PUBLIC),
    KW("return", KW_RETURN),
    KW("static", KW_STATIC),
    KW("switch", KW_SWITCH),
    KW("typeof", KW_TYPEOF),
    KW("unique", KW_UNIQUE),
    KW("asserts", KW_ASSERTS),
    KW("declare", KW_DECLARE),
    KW("default", KW_DEFAULT),
    KW("extends", KW_EXTENDS),
    KW("finally", KW_FINALLY),
    KW("private", KW_PRIVATE),
    KW("require", KW_REQUIRE),
    KW("abstract", KW_ABSTRACT),
    KW("accessor", KW_ACCESSOR),
    KW("continue", KW_CONTINUE),
    KW("debugger", KW_DEBUGGER),
    KW("function", KW_FUNCTION),
    KW("override", KW_OVERRIDE),
    KW("readonly", KW_READONLY),
    KW("interface", KW_INTERFACE),
    KW("namespace", KW_NAMESPACE),
    KW("protected", KW_PROTECTED),
    KW("satisfies", KW_SATISFIES),
    KW("implements", KW_IMPLEMENTS),
    KW("instanceof", KW_INSTANCEOF),
    KW("constructor", KW_CONSTRUCTOR),
};

/* A perfect hash of kw_table: kw_hash[(40 s[0] + 53 s[1] + 14 s[n-1] + n) & 255] is the index
 * + 1 of the only keyword that can match (0: none). Found by a search over small multipliers;
 * adding a keyword means searching again (every keyword is exercised by the unit tests). */
static const uint8_t kw_hash[256] = {
    0,  59, 0,  0,  0,  0,  0,  0,  0, 24, 0,  0,  6,  0,  0,  0,  0,  0,  0,  0,  0,  39, 51, 15,
    0,  0,  0,  0,  3,  0,  0,  0,  0, 0,  38, 29, 9,  0,  0,  0,  26, 44, 7,  0,  0,  0,  0,  35,
    0,  0,  0,  0,  4,  61, 0,  0,  0, 0,  33, 0,  12, 0,  0,  0,  0,  0,  28, 1,  21, 0,  56, 0,
    50, 0,  0,  0,  0,  68, 0,  0,  0, 47, 54, 0,  62, 19, 0,  42, 0,  0,  0,  13, 8,  0,  0,  63,
    67, 0,  41, 0,  0,  0,  25, 0,  0, 0,  0,  0,  46, 0,  0,  32, 0,  0,  34, 0,  0,  0,  0,  0,
    0,  0,  0,  0,  0,  0,  0,  0,  0, 0,  0,  5,  18, 0,  0,  0,  17, 0,  0,  0,  0,  0,  0,  43,
    31, 0,  0,  0,  0,  0,  0,  0,  0, 0,  49, 66, 0,  0,  10, 0,  0,  0,  0,  0,  0,  0,  0,  55,
    0,  0,  0,  37, 0,  0,  16, 2,  0, 0,  0,  0,  0,  0,  0,  22, 0,  0,  70, 0,  0,  64, 36, 0,
    0,  0,  0,  45, 14, 0,  0,  48, 0, 27, 0,  0,  69, 60, 0,  0,  30, 0,  57, 0,  65, 0,  0,  0,
    0,  0,  0,  0,  0,  0,  0,  0,  0, 0,  0,  0,  0,  0,  0,  23, 52, 0,  0,  58, 11, 0,  0,  0,
    0,  53, 0,  0,  0,  0,  20, 0,  0, 0,  0,  0,  0,  0,  40, 0,
};

static uint8_t kw_lookup(const char *s, size_t n)
{
    if (n < 2 || n > 11) {
        return KW_NONE;
    }
    const unsigned char *u = (const unsigned char *)s;
    unsigned h = (40u * u[0] + 53u * u[1] + 14u * u[n - 1] + (unsigned)n) & 255u;
    unsigned k = kw_hash[h];
    if (k == 0 || kw_table[k - 1].len != n) {
        return KW_NONE;
    }
    const char *w = kw_table[k - 1].name;
    for (size_t j = 0; j < n; j++) {
        if (w[j] != s[j]) {
            return KW_NONE;
        }
    }
    return kw_table[k - 1].kw;
}

enum {
    C_ID = 1,    /* [A-Za-z0-9_$] */
    C_SPACE = 2, /* space, tab, VT, FF */
    C_NL = 4,    /* \n \r */
};

/* ASCII character classes; bytes >= 0x80 are 0 and take the slow paths. */
static const uint8_t cc[256] = {
    ['\t'] = C_SPACE, ['\v'] = C_SPACE, ['\f'] = C_SPACE, [' '] = C_SPACE, ['\n'] = C_NL,
    ['\r'] = C_NL,    ['$'] = C_ID,     ['_'] = C_ID,     ['0'] = C_ID,    ['1'] = C_ID,
    ['2'] = C_ID,     ['3'] = C_ID,     ['4'] = C_ID,     ['5'] = C_ID,    ['6'] = C_ID,
    ['7'] = C_ID,     ['8'] = C_ID,     ['9'] = C_ID,     ['A'] = C_ID,    ['B'] = C_ID,
    ['C'] = C_ID,     ['D'] = C_ID,     ['E'] = C_ID,     ['F'] = C_ID,    ['G'] = C_ID,
    ['H'] = C_ID,     ['I'] = C_ID,     ['J'] = C_ID,     ['K'] = C_ID,    ['L'] = C_ID,
    ['M'] = C_ID,     ['N'] = C_ID,     ['O'] = C_ID,     ['P'] = C_ID,    ['Q'] = C_ID,
    ['R'] = C_ID,     ['S'] = C_ID,     ['T'] = C_ID,     ['U'] = C_ID,    ['V'] = C_ID,
    ['W'] = C_ID,     ['X'] = C_ID,     ['Y'] = C_ID,     ['Z'] = C_ID,    ['a'] = C_ID,
    ['b'] = C_ID,     ['c'] = C_ID,     ['d'] = C_ID,     ['e'] = C_ID,    ['f'] = C_ID,
    ['g'] = C_ID,     ['h'] = C_ID,     ['i'] = C_ID,     ['j'] = C_ID,    ['k'] = C_ID,
    ['l'] = C_ID,     ['m'] = C_ID,     ['n'] = C_ID,     ['o'] = C_ID,    ['p'] = C_ID,
    ['q'] = C_ID,     ['r'] = C_ID,     ['s'] = C_ID,     ['t'] = C_ID,    ['u'] = C_ID,
    ['v'] = C_ID,     ['w'] = C_ID,     ['x'] = C_ID,     ['y'] = C_ID,    ['z'] = C_ID,
};

static inline bool is_id_ascii(unsigned char c)
{
    return (cc[c] & C_ID) != 0;
}

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* Length of a non-ASCII space or line terminator at s[i], 0 if there is none. */
static size_t uni_space(const char *s, size_t len, size_t i, bool *ret_nl)
{
    const unsigned char *u = (const unsigned char *)s + i;
    size_t n = len - i;
    *ret_nl = false;
    if (n >= 2 && u[0] == 0xC2 && u[1] == 0xA0) {
        return 2; /* NBSP */
    }
    if (n < 3) {
        return 0;
    }
    if (u[0] == 0xE2 && u[1] == 0x80) {
        if (u[2] == 0xA8 || u[2] == 0xA9) {
            *ret_nl = true; /* U+2028, U+2029 */
            return 3;
        }
        if (u[2] <= 0x8A || u[2] == 0xAF) {
            return 3;
        }
        return 0;
    }
    if ((u[0] == 0xE2 && u[1] == 0x81 && u[2] == 0x9F) ||
        (u[0] == 0xE3 && u[1] == 0x80 && u[2] == 0x80) ||
        (u[0] == 0xE1 && u[1] == 0x9A && u[2] == 0x80) ||
        (u[0] == 0xEF && u[1] == 0xBB && u[2] == 0xBF)) {
        return 3;
    }
    return 0;
}

static void lex_fail(struct lexer *lx, size_t at, const char *msg)
{
    if (lx->error == NULL) {
        lx->error = msg;
        lx->error_pos = at;
    }
    lx->pos = lx->len;
    lx->tok.type = T_EOF;
    lx->tok.kw = KW_NONE;
    lx->tok.start = lx->len;
    lx->tok.end = lx->len;
}

/* Skips spaces and comments from lx->pos; returns false on an unterminated comment. */
static bool skip_space(struct lexer *lx, bool *nl)
{
    const char *s = lx->src;
    size_t len = lx->len;
    size_t i = lx->pos;
    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        uint8_t k = cc[c];
        if (k & C_SPACE) {
            i++;
        } else if (k & C_NL) {
            *nl = true;
            i++;
        } else if (c == '/' && i + 1 < len && s[i + 1] == '/') {
            i += 2;
            while (i < len && s[i] != '\n' && s[i] != '\r') {
                bool unl;
                if ((unsigned char)s[i] >= 0x80 && uni_space(s, len, i, &unl) && unl) {
                    break;
                }
                i++;
            }
        } else if (c == '/' && i + 1 < len && s[i + 1] == '*') {
            size_t open = i;
            i += 2;
            for (;;) {
                if (i + 1 >= len) {
                    lx->pos = i;
                    lex_fail(lx, open, "unterminated comment");
                    return false;
                }
                if (s[i] == '*' && s[i + 1] == '/') {
                    i += 2;
                    break;
                }
                if (s[i] == '\n' || s[i] == '\r') {
                    *nl = true;
                } else if ((unsigned char)s[i] == 0xE2) {
                    bool unl;
                    if (uni_space(s, len, i, &unl) && unl) {
                        *nl = true;
                    }
                }
                i++;
            }
        } else if (c >= 0x80) {
            bool unl;
            size_t n = uni_space(s, len, i, &unl);
            if (n == 0) {
                break;
            }
            if (unl) {
                *nl = true;
            }
            i += n;
        } else {
            break;
        }
    }
    lx->pos = i;
    return true;
}

/* Scans identifier characters from i (ASCII, non-ASCII non-space bytes, \u escapes). */
static size_t scan_ident(const struct lexer *lx, size_t i)
{
    const char *s = lx->src;
    size_t len = lx->len;
    while (i < len && (cc[(unsigned char)s[i]] & C_ID)) {
        i++;
    }
    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        if (is_id_ascii(c)) {
            i++;
        } else if (c >= 0x80) {
            bool unl;
            if (uni_space(s, len, i, &unl)) {
                break;
            }
            i++;
        } else if (c == '\\' && i + 1 < len && s[i + 1] == 'u') {
            i += 2;
            if (i < len && s[i] == '{') {
                while (i < len && s[i] != '}' && i - 1 < len) {
                    if (!is_id_ascii((unsigned char)s[i]) && s[i] != '{') {
                        break;
                    }
                    i++;
                }
                if (i < len && s[i] == '}') {
                    i++;
                }
            } else {
                for (int k = 0; k < 4 && i < len && is_id_ascii((unsigned char)s[i]); k++) {
                    i++;
                }
            }
        } else {
            break;
        }
    }
    return i;
}

static size_t scan_number(const struct lexer *lx, size_t i)
{
    const char *s = lx->src;
    size_t len = lx->len;
    if (s[i] == '0' && i + 1 < len &&
        (s[i + 1] == 'x' || s[i + 1] == 'X' || s[i + 1] == 'o' || s[i + 1] == 'O' ||
         s[i + 1] == 'b' || s[i + 1] == 'B')) {
        i += 2;
        while (i < len && (is_id_ascii((unsigned char)s[i]))) {
            i++;
        }
        return i;
    }
    while (i < len && (is_digit((unsigned char)s[i]) || s[i] == '_')) {
        i++;
    }
    if (i < len && s[i] == '.') {
        i++;
        while (i < len && (is_digit((unsigned char)s[i]) || s[i] == '_')) {
            i++;
        }
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (j < len && (s[j] == '+' || s[j] == '-')) {
            j++;
        }
        if (j < len && is_digit((unsigned char)s[j])) {
            i = j;
            while (i < len && (is_digit((unsigned char)s[i]) || s[i] == '_')) {
                i++;
            }
        }
    }
    if (i < len && s[i] == 'n') {
        i++;
    }
    return i;
}

/* Template characters from i (just after ` or }) to the closing ` or the next ${. */
static void scan_template(struct lexer *lx, size_t open, size_t i, bool head)
{
    const char *s = lx->src;
    size_t len = lx->len;
    while (i < len) {
        char c = s[i];
        if (c == '`') {
            lx->tok.type = head ? T_TPL : T_TPL_TAIL;
            lx->tok.end = i + 1;
            lx->pos = i + 1;
            return;
        }
        if (c == '\\') {
            i += 2;
            continue;
        }
        if (c == '$' && i + 1 < len && s[i + 1] == '{') {
            lx->tok.type = head ? T_TPL_HEAD : T_TPL_MID;
            lx->tok.end = i + 2;
            lx->pos = i + 2;
            return;
        }
        i++;
    }
    lex_fail(lx, open, "unterminated template literal");
}

static void scan_string(struct lexer *lx, size_t i)
{
    const char *s = lx->src;
    size_t len = lx->len;
    char q = s[i];
    size_t open = i;
    i++;
    while (i < len) {
        char c = s[i];
        if (c == q) {
            lx->tok.type = T_STR;
            lx->tok.end = i + 1;
            lx->pos = i + 1;
            return;
        }
        if (c == '\\') {
            if (i + 2 < len && s[i + 1] == '\r' && s[i + 2] == '\n') {
                i += 3;
            } else {
                i += 2;
            }
            continue;
        }
        if (c == '\n' || c == '\r') {
            break;
        }
        i++;
    }
    lex_fail(lx, open, "unterminated string literal");
}

/* The longest punctuator at s[i]; `>` is always alone (see lex_gt). */
static size_t scan_punct(const char *s, size_t len, size_t i, uint8_t *ret_type)
{
    char c = s[i];
    char c1 = i + 1 < len ? s[i + 1] : 0;
    char c2 = i + 2 < len ? s[i + 2] : 0;
    char c3 = i + 3 < len ? s[i + 3] : 0;
    switch (c) {
    case '{':
        *ret_type = P_LBRACE;
        return 1;
    case '}':
        *ret_type = P_RBRACE;
        return 1;
    case '(':
        *ret_type = P_LPAREN;
        return 1;
    case ')':
        *ret_type = P_RPAREN;
        return 1;
    case '[':
        *ret_type = P_LBRACK;
        return 1;
    case ']':
        *ret_type = P_RBRACK;
        return 1;
    case ';':
        *ret_type = P_SEMI;
        return 1;
    case ',':
        *ret_type = P_COMMA;
        return 1;
    case ':':
        *ret_type = P_COLON;
        return 1;
    case '~':
        *ret_type = P_TILDE;
        return 1;
    case '@':
        *ret_type = P_AT;
        return 1;
    case '>':
        *ret_type = P_GT;
        return 1;
    case '.':
        if (c1 == '.' && c2 == '.') {
            *ret_type = P_ELLIPSIS;
            return 3;
        }
        *ret_type = P_DOT;
        return 1;
    case '?':
        if (c1 == '.' && !is_digit((unsigned char)c2)) {
            *ret_type = P_QDOT;
            return 2;
        }
        if (c1 == '?') {
            if (c2 == '=') {
                *ret_type = P_NULLISH_ASSIGN;
                return 3;
            }
            *ret_type = P_NULLISH;
            return 2;
        }
        *ret_type = P_QUESTION;
        return 1;
    case '=':
        if (c1 == '>') {
            *ret_type = P_ARROW;
            return 2;
        }
        if (c1 == '=') {
            if (c2 == '=') {
                *ret_type = P_EQ3;
                return 3;
            }
            *ret_type = P_EQ;
            return 2;
        }
        *ret_type = P_ASSIGN;
        return 1;
    case '!':
        if (c1 == '=') {
            if (c2 == '=') {
                *ret_type = P_NE3;
                return 3;
            }
            *ret_type = P_NE;
            return 2;
        }
        *ret_type = P_BANG;
        return 1;
    case '<':
        if (c1 == '<') {
            if (c2 == '=') {
                *ret_type = P_SHL_ASSIGN;
                return 3;
            }
            *ret_type = P_SHL;
            return 2;
        }
        if (c1 == '=') {
            *ret_type = P_LE;
            return 2;
        }
        *ret_type = P_LT;
        return 1;
    case '+':
        if (c1 == '+') {
            *ret_type = P_INC;
            return 2;
        }
        if (c1 == '=') {
            *ret_type = P_ADD_ASSIGN;
            return 2;
        }
        *ret_type = P_PLUS;
        return 1;
    case '-':
        if (c1 == '-') {
            *ret_type = P_DEC;
            return 2;
        }
        if (c1 == '=') {
            *ret_type = P_SUB_ASSIGN;
            return 2;
        }
        *ret_type = P_MINUS;
        return 1;
    case '*':
        if (c1 == '*') {
            if (c2 == '=') {
                *ret_type = P_POW_ASSIGN;
                return 3;
            }
            *ret_type = P_POW;
            return 2;
        }
        if (c1 == '=') {
            *ret_type = P_MUL_ASSIGN;
            return 2;
        }
        *ret_type = P_STAR;
        return 1;
    case '/':
        if (c1 == '=') {
            *ret_type = P_DIV_ASSIGN;
            return 2;
        }
        *ret_type = P_SLASH;
        return 1;
    case '%':
        if (c1 == '=') {
            *ret_type = P_MOD_ASSIGN;
            return 2;
        }
        *ret_type = P_PERCENT;
        return 1;
    case '&':
        if (c1 == '&') {
            if (c2 == '=') {
                *ret_type = P_LAND_ASSIGN;
                return 3;
            }
            *ret_type = P_AND;
            return 2;
        }
        if (c1 == '=') {
            *ret_type = P_AND_ASSIGN;
            return 2;
        }
        *ret_type = P_AMP;
        return 1;
    case '|':
        if (c1 == '|') {
            if (c2 == '=') {
                *ret_type = P_LOR_ASSIGN;
                return 3;
            }
            *ret_type = P_OR;
            return 2;
        }
        if (c1 == '=') {
            *ret_type = P_OR_ASSIGN;
            return 2;
        }
        *ret_type = P_BAR;
        return 1;
    case '^':
        if (c1 == '=') {
            *ret_type = P_XOR_ASSIGN;
            return 2;
        }
        *ret_type = P_CARET;
        return 1;
    default:
        (void)c3;
        return 0;
    }
}

void lex_next(struct lexer *lx)
{
    bool nl = false;
    if (lx->error != NULL) {
        lex_fail(lx, lx->error_pos, lx->error);
        return;
    }
    if (!skip_space(lx, &nl)) {
        return;
    }
    const char *s = lx->src;
    size_t len = lx->len;
    size_t i = lx->pos;
    struct tok *t = &lx->tok;
    t->start = i;
    t->nl_before = nl;
    t->kw = KW_NONE;
    if (i >= len) {
        t->type = T_EOF;
        t->end = len;
        return;
    }
    unsigned char c = (unsigned char)s[i];
    if (is_id_ascii(c) && !is_digit(c)) {
        size_t e = scan_ident(lx, i + 1);
        t->type = T_NAME;
        t->kw = kw_lookup(s + i, e - i);
        t->end = e;
        lx->pos = e;
        return;
    }
    if (c >= 0x80 || (c == '\\' && i + 1 < len && s[i + 1] == 'u')) {
        size_t e = scan_ident(lx, c == '\\' ? i : i + 1);
        if (e == i) {
            lex_fail(lx, i, "unexpected character");
            return;
        }
        t->type = T_NAME;
        t->end = e;
        lx->pos = e;
        return;
    }
    if (is_digit(c) || (c == '.' && i + 1 < len && is_digit((unsigned char)s[i + 1]))) {
        size_t e = scan_number(lx, i);
        t->type = T_NUM;
        t->end = e;
        lx->pos = e;
        return;
    }
    if (c == '"' || c == '\'') {
        scan_string(lx, i);
        return;
    }
    if (c == '`') {
        scan_template(lx, i, i + 1, true);
        return;
    }
    if (c == '#') {
        size_t e = scan_ident(lx, i + 1);
        if (e == i + 1) {
            lex_fail(lx, i, "unexpected character '#'");
            return;
        }
        t->type = T_PRIVATE;
        t->end = e;
        lx->pos = e;
        return;
    }
    uint8_t type = T_EOF;
    size_t n = scan_punct(s, len, i, &type);
    if (n == 0) {
        lex_fail(lx, i, "unexpected character");
        return;
    }
    t->type = type;
    t->end = i + n;
    lx->pos = i + n;
}

void lex_init(struct lexer *lx, const char *src, size_t len)
{
    memset(lx, 0, sizeof(*lx));
    lx->src = src;
    lx->len = len;
    if (len >= 2 && src[0] == '#' && src[1] == '!') {
        size_t i = 2;
        while (i < len && src[i] != '\n' && src[i] != '\r') {
            i++;
        }
        lx->pos = i;
    }
    lex_next(lx);
}

void lex_regex(struct lexer *lx)
{
    const char *s = lx->src;
    size_t len = lx->len;
    size_t start = lx->tok.start;
    size_t i = start + 1;
    bool in_class = false;
    for (;;) {
        if (i >= len || s[i] == '\n' || s[i] == '\r') {
            lex_fail(lx, start, "unterminated regular expression");
            return;
        }
        char c = s[i];
        if (c == '\\') {
            i++;
            if (i < len && (s[i] == '\n' || s[i] == '\r')) {
                continue;
            }
            i++;
            continue;
        }
        if (c == '[') {
            in_class = true;
        } else if (c == ']') {
            in_class = false;
        } else if (c == '/' && !in_class) {
            break;
        }
        i++;
    }
    i = scan_ident(lx, i + 1);
    lx->tok.type = T_REGEX;
    lx->tok.end = i;
    lx->pos = i;
}

void lex_template(struct lexer *lx)
{
    scan_template(lx, lx->tok.start, lx->tok.start + 1, false);
}

void lex_gt(struct lexer *lx)
{
    const char *s = lx->src;
    size_t len = lx->len;
    size_t i = lx->tok.start + 1;
    char c1 = i < len ? s[i] : 0;
    char c2 = i + 1 < len ? s[i + 1] : 0;
    char c3 = i + 2 < len ? s[i + 2] : 0;
    uint8_t type = P_GT;
    size_t n = 1;
    if (c1 == '>') {
        if (c2 == '>') {
            if (c3 == '=') {
                type = P_USHR_ASSIGN;
                n = 4;
            } else {
                type = P_USHR;
                n = 3;
            }
        } else if (c2 == '=') {
            type = P_SHR_ASSIGN;
            n = 3;
        } else {
            type = P_SHR;
            n = 2;
        }
    } else if (c1 == '=') {
        type = P_GE;
        n = 2;
    }
    lx->tok.type = type;
    lx->tok.end = lx->tok.start + n;
    lx->pos = lx->tok.end;
}
