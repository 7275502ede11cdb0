# quickjs_airlock.c: QuickJS 2021-03-27 with the few things airlock needs and the engine lacks.
#
# This script derives quickjs_airlock.c from the fetched quickjs.c (never edited in place, never
# committed) with small, checked edits. Every edit must match exactly once or the configure
# step fails, so a different QuickJS can never be patched silently.
#   1-5  Column numbers: QuickJS records only lines, airlock reports `run.js:LINE:COL`. The
#        parser packs the column of the last token into the position it records for each
#        opcode (line in the low 20 bits, column in the next 11); the trace printer unpacks it.
#   6    engine_on_stack_overflow(): the worker learns of every stack overflow - also in the
#        tokenizer (JSON.parse) and the RegExp compiler, which reported a SyntaxError; inside the
#        worker (where the hook is defined) stack overflow and out-of-memory errors are uncatchable.
#   7    bridge_on_promise_then(): the worker learns of every reaction registered on a promise
#        (await, then by any route, Promise.all...), which is how it knows a host call is observed.
#   8    engine_wrapper_length(): the function the user's body is wrapped in must end exactly
#        where the wrapper's own closing brace is, so a source cannot close it and run code at
#        script level ("return 1; }), evil(), (function () {").
#   9    ES2022 error `cause`: Error, the native errors and AggregateError read the `cause` option
#        (an own non-enumerable property, created only when the options object has `cause`).
#   10   Syntax the engine cannot parse says which ES feature it is: class static blocks,
#        `#x in obj`, the regexp `d` and `v` flags (docs/javascript.md).
#   11   The token after a function body's closing brace is read as part of the enclosing
#        function, so `await x;` (or `yield x;`) right after a nested function declaration parses
#        (QuickJS 2021-03-27 read it as the nested function's, where `await` is an identifier).
#   12   A compile-only module is not resolved (its imports are loaded in the guest context).
#   13   airlock_module_namespace(): appended; the entry module's default export is the value.
#   14   A failed module resolution frees the whole failed attempt (no half-resolved module).
#   15   sites_note()/sites_describe(): TypeErrors of calls, `new` and member reads name the
#        expression ("tools.missing is not a function"); work is done only on the error path.
#   16   airlock_call_line(): the line of the run's source whose explicit call (f(), o.m(),
#        f(...a)) is calling a host function right now, for the person who approves the call.
#        The interpreter notes each explicit call (frame, pc, callee) as it makes it; a host
#        function reads and clears the note on entry, and trusts it only when its frame is the
#        current one and its callee is that very function, so a call reached any other way (a
#        getter, a coercion, .call/.apply, a bound function, a promise job) has no line.
#        OP_apply also sets the frame's pc, as the other calls do.
# Hooks are weak symbols, so programs that do not define them (unit tests) link unchanged.
#
# Input: QJS_SRC (quickjs.c), QJS_OUT (quickjs_airlock.c).

function(qjs_edit content_var old new)
    string(FIND "${${content_var}}" "${old}" first)
    if(first EQUAL -1)
        message(FATAL_ERROR "quickjs_patch: pattern not found: ${old}")
    endif()
    string(LENGTH "${old}" len)
    math(EXPR after "${first} + ${len}")
    string(SUBSTRING "${${content_var}}" ${after} -1 rest)
    string(FIND "${rest}" "${old}" again)
    if(NOT again EQUAL -1)
        message(FATAL_ERROR "quickjs_patch: pattern found twice: ${old}")
    endif()
    string(REPLACE "${old}" "${new}" result "${${content_var}}")
    set(${content_var} "${result}" PARENT_SCOPE)
endfunction()

file(READ "${QJS_SRC}" src)

# 1. Parser state: where the source starts, where the last token was, and a cursor that makes
#    column computation amortised O(1) as tokens advance.
qjs_edit(src
"    int last_line_num;  /* line number of last token */
    int line_num;       /* line number of current offset */"
"    int last_line_num;  /* line number of last token */
    int line_num;       /* line number of current offset */
    const uint8_t *al_buf_start; /* airlock: start of the source */
    const uint8_t *al_last_tok;  /* airlock: start of the last token */
    const uint8_t *al_cur_ptr;   /* airlock: column cursor */
    int al_cur_line, al_cur_col;")

qjs_edit(src
"    s->buf_ptr = (const uint8_t *)input;
    s->buf_end = s->buf_ptr + input_len;
    s->token.val = ' ';"
"    s->buf_ptr = (const uint8_t *)input;
    s->buf_end = s->buf_ptr + input_len;
    s->al_buf_start = s->buf_ptr;
    s->token.val = ' ';")

qjs_edit(src
"    BOOL ext_json; /* true if accepting JSON superset */
} JSParseState;"
"    BOOL ext_json; /* true if accepting JSON superset */
} JSParseState;

static int airlock_pos(JSParseState *s, int line, const uint8_t *p);")

# 2. Remember the last token's start wherever its line is remembered (four places).
string(REPLACE "s->last_line_num = s->token.line_num;"
    "s->last_line_num = s->token.line_num; s->al_last_tok = s->token.ptr;" src "${src}")

# 3. A packed position (line | column << 20); the column counts characters from 1.
qjs_edit(src
"static void emit_op(JSParseState *s, uint8_t val)
{"
"#define AIRLOCK_POS_LINE_BITS 20
#define AIRLOCK_POS_COL_MAX 2047
static int airlock_pos(JSParseState *s, int line, const uint8_t *p)
{
    int col;
    const uint8_t *q;
    if (!p || p < s->al_buf_start || line <= 0 || line >= (1 << AIRLOCK_POS_LINE_BITS))
        return line;
    if (line == s->al_cur_line && s->al_cur_ptr && p >= s->al_cur_ptr) {
        q = s->al_cur_ptr;
        col = s->al_cur_col;
    } else {
        q = p;
        while (q > s->al_buf_start && q[-1] != '\\n')
            q--;
        col = 1;
    }
    for (; q < p; q++) {
        if ((*q & 0xC0) != 0x80)
            col++;
    }
    s->al_cur_line = line;
    s->al_cur_ptr = p;
    s->al_cur_col = col;
    if (col > AIRLOCK_POS_COL_MAX)
        col = AIRLOCK_POS_COL_MAX;
    return line | (col << AIRLOCK_POS_LINE_BITS);
}

static void emit_op(JSParseState *s, uint8_t val)
{")

qjs_edit(src
"    if (unlikely(fd->last_opcode_line_num != s->last_line_num)) {
        dbuf_putc(bc, OP_line_num);
        dbuf_put_u32(bc, s->last_line_num);
        fd->last_opcode_line_num = s->last_line_num;
    }"
"    int al_pos = airlock_pos(s, s->last_line_num, s->al_last_tok);
    if (unlikely(fd->last_opcode_line_num != al_pos)) {
        dbuf_putc(bc, OP_line_num);
        dbuf_put_u32(bc, al_pos);
        fd->last_opcode_line_num = al_pos;
    }")

# 4. Syntax errors: the position of the offending token.
qjs_edit(src
"    build_backtrace(ctx, ctx->rt->current_exception, s->filename, s->line_num,
                    backtrace_flags);"
"    build_backtrace(ctx, ctx->rt->current_exception, s->filename,
                    airlock_pos(s, s->token.line_num, s->token.ptr), backtrace_flags);")

# 5. Printing: LINE:COL when a column is known; lineNumber stays the line.
qjs_edit(src
"        if (line_num != -1)
            dbuf_printf(&dbuf, \":%d\", line_num);"
"        if (line_num != -1) {
            dbuf_printf(&dbuf, \":%d\", line_num & ((1 << 20) - 1));
            if (line_num >> 20)
                dbuf_printf(&dbuf, \":%d\", line_num >> 20);
        }")
qjs_edit(src
"JS_ATOM_lineNumber, JS_NewInt32(ctx, line_num),"
"JS_ATOM_lineNumber, JS_NewInt32(ctx, line_num == -1 ? -1 : line_num & ((1 << 20) - 1)),")
qjs_edit(src
"                if (line_num1 != -1)
                    dbuf_printf(&dbuf, \":%d\", line_num1);"
"                if (line_num1 != -1) {
                    dbuf_printf(&dbuf, \":%d\", line_num1 & ((1 << 20) - 1));
                    if (line_num1 >> 20)
                        dbuf_printf(&dbuf, \":%d\", line_num1 >> 20);
                }")

# 6. Stack overflow hook: the embedder learns of every overflow, even one the guest catches.
#    A weak symbol, so programs that do not define it (unit tests) link unchanged.
qjs_edit(src
"static JSValue JS_ThrowStackOverflow(JSContext *ctx)
{
    return JS_ThrowInternalError(ctx, \"stack overflow\");
}"
"extern void engine_on_stack_overflow(JSContext *ctx) __attribute__((weak));
static JSValue JS_ThrowStackOverflow(JSContext *ctx)
{
    JSValue ret;
    if (engine_on_stack_overflow)
        engine_on_stack_overflow(ctx);
    ret = JS_ThrowInternalError(ctx, \"stack overflow\");
    if (engine_on_stack_overflow)
        JS_SetUncatchableError(ctx, ctx->rt->current_exception, TRUE);
    return ret;
}")

# 6b. Out of memory: the same, so a guest cannot catch it and keep allocating into the engine's
#     least-tested paths.
qjs_edit(src
"JSValue JS_ThrowOutOfMemory(JSContext *ctx)
{
    JSRuntime *rt = ctx->rt;
    if (!rt->in_out_of_memory) {
        rt->in_out_of_memory = TRUE;
        JS_ThrowInternalError(ctx, \"out of memory\");
        rt->in_out_of_memory = FALSE;
    }
    return JS_EXCEPTION;
}"
"extern void engine_on_stack_overflow(JSContext *ctx) __attribute__((weak));
JSValue JS_ThrowOutOfMemory(JSContext *ctx)
{
    JSRuntime *rt = ctx->rt;
    if (!rt->in_out_of_memory) {
        rt->in_out_of_memory = TRUE;
        JS_ThrowInternalError(ctx, \"out of memory\");
        if (engine_on_stack_overflow)
            JS_SetUncatchableError(ctx, rt->current_exception, TRUE);
        rt->in_out_of_memory = FALSE;
    }
    return JS_EXCEPTION;
}")

# 6c. Stack overflow in the tokenizer (JSON.parse, also inside a reviver, and the parser) and in
#     the RegExp compiler: QuickJS reports these as a SyntaxError; they are stack overflows like
#     any other, so they go through JS_ThrowStackOverflow (uncatchable in the worker) or, in
#     libregexp, reach the hook that latches the run's code.
string(FIND "${src}" "    if (js_check_stack_overflow(s->ctx->rt, 0)) {
        return js_parse_error(s, \"stack overflow\");
    }" al_at)
if(al_at EQUAL -1)
    message(FATAL_ERROR "quickjs_patch: tokenizer stack checks not found")
endif()
string(REPLACE "    if (js_check_stack_overflow(s->ctx->rt, 0)) {
        return js_parse_error(s, \"stack overflow\");
    }" "    if (js_check_stack_overflow(s->ctx->rt, 0)) {
        JS_ThrowStackOverflow(s->ctx);
        return -1;
    }" src "${src}")
string(FIND "${src}" "return js_parse_error(s, \"stack overflow\");" al_at)
if(NOT al_at EQUAL -1)
    message(FATAL_ERROR "quickjs_patch: a tokenizer stack check was left unpatched")
endif()
qjs_edit(src
"BOOL lre_check_stack_overflow(void *opaque, size_t alloca_size)
{
    JSContext *ctx = opaque;
    return js_check_stack_overflow(ctx->rt, alloca_size);
}"
"BOOL lre_check_stack_overflow(void *opaque, size_t alloca_size)
{
    JSContext *ctx = opaque;
    if (!js_check_stack_overflow(ctx->rt, alloca_size))
        return FALSE;
    if (engine_on_stack_overflow)
        engine_on_stack_overflow(ctx);
    return TRUE;
}")

# 7. Promise reactions.
qjs_edit(src
"{
    JSPromiseData *s = JS_GetOpaque(promise, JS_CLASS_PROMISE);
    JSPromiseReactionData *rd_array[2], *rd;
    int i, j;
"
"{
    JSPromiseData *s = JS_GetOpaque(promise, JS_CLASS_PROMISE);
    JSPromiseReactionData *rd_array[2], *rd;
    int i, j;

    if (bridge_on_promise_then)
        bridge_on_promise_then(ctx, promise);
")
qjs_edit(src
"static __exception int perform_promise_then(JSContext *ctx,
                                            JSValueConst promise,
                                            JSValueConst *resolve_reject,
                                            JSValueConst *cap_resolving_funcs);"
"static __exception int perform_promise_then(JSContext *ctx,
                                            JSValueConst promise,
                                            JSValueConst *resolve_reject,
                                            JSValueConst *cap_resolving_funcs);
extern void bridge_on_promise_then(JSContext *ctx, JSValueConst promise) __attribute__((weak));")

# 8. The wrapper function must span exactly the wrapper.
qjs_edit(src
"    while (s->token.val != '}') {
        if (js_parse_source_element(s))
            goto fail;
    }
    if (!(fd->js_mode & JS_MODE_STRIP)) {"
"    while (s->token.val != '}') {
        if (js_parse_source_element(s))
            goto fail;
    }
    if (engine_wrapper_length && ptr == s->al_buf_start + 1) {
        size_t al_want = engine_wrapper_length(ctx);
        if (al_want && (size_t)(s->buf_ptr - ptr) != al_want) {
            js_parse_error(s, \"unexpected '}': the source closes the function body it runs in\");
            goto fail;
        }
    }
    if (!(fd->js_mode & JS_MODE_STRIP)) {")
qjs_edit(src
"static int airlock_pos(JSParseState *s, int line, const uint8_t *p);"
"static int airlock_pos(JSParseState *s, int line, const uint8_t *p);
extern size_t engine_wrapper_length(JSContext *ctx) __attribute__((weak));")

# 12. Compiling a module only compiles it: resolving its imports is the guest context's job (the
#     worker compiles modules in a separate compile context and moves the bytecode).
qjs_edit(src
"        m->func_obj = fun_obj;
        if (js_resolve_module(ctx, m) < 0)
            goto fail1;"
"        m->func_obj = fun_obj;
        if (!(flags & JS_EVAL_FLAG_COMPILE_ONLY) && js_resolve_module(ctx, m) < 0)
            goto fail1;")

# 14. A failed resolution frees every module not evaluated yet. QuickJS marks a module resolved
#     before its imports are, so a module whose import failed stayed "resolved" with a NULL
#     import and crashed the next import of it; everything of the failed attempt goes instead.
qjs_edit(src
"            (flag == JS_FREE_MODULE_NOT_RESOLVED && !m->resolved) ||"
"            (flag == JS_FREE_MODULE_NOT_RESOLVED && (!m->resolved || !m->evaluated)) ||")

# 13. airlock_module_namespace(): the namespace of an evaluated module, so the worker can read the
#    entry module's default export (QuickJS 2021-03-27 has no public call for it).
string(APPEND src "
JSValue airlock_module_namespace(JSContext *ctx, JSModuleDef *m)
{
    return js_get_module_ns(ctx, m);
}
")

# 9. Error cause (ES2022): InstallErrorCause after the message, before AggregateError's errors.
qjs_edit(src
"        JS_DefinePropertyValue(ctx, obj, JS_ATOM_message, msg,
                               JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE);
    }

    if (magic == JS_AGGREGATE_ERROR) {
        JSValue error_list = iterator_to_array(ctx, argv[0]);"
"        JS_DefinePropertyValue(ctx, obj, JS_ATOM_message, msg,
                               JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE);
    }

    {
        int al_opt = magic == JS_AGGREGATE_ERROR ? 2 : 1;
        if (argc > al_opt && JS_IsObject(argv[al_opt])) {
            JSAtom al_cause = JS_NewAtom(ctx, \"cause\");
            int al_has;
            if (al_cause == JS_ATOM_NULL)
                goto exception;
            al_has = JS_HasProperty(ctx, argv[al_opt], al_cause);
            if (al_has > 0) {
                JSValue al_v = JS_GetProperty(ctx, argv[al_opt], al_cause);
                if (JS_IsException(al_v))
                    al_has = -1;
                else
                    JS_DefinePropertyValue(ctx, obj, al_cause, al_v,
                                           JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE);
            }
            JS_FreeAtom(ctx, al_cause);
            if (al_has < 0)
                goto exception;
        }
    }

    if (magic == JS_AGGREGATE_ERROR) {
        JSValue error_list = iterator_to_array(ctx, argv[0]);")

# 10. Unsupported syntax names its ES feature instead of a generic parse error.
qjs_edit(src
"            /* allow \"static\" field name */
            if (s->token.val == ';' || s->token.val == '=') {"
"            if (s->token.val == '{') {
                js_parse_error(s, \"class static blocks (ES2022) are not supported\");
                goto fail;
            }
            /* allow \"static\" field name */
            if (s->token.val == ';' || s->token.val == '=') {")
qjs_edit(src
"    default:
        return js_parse_error(s, \"unexpected token in expression: '%.*s'\","
"    default:
        if (s->token.val == TOK_PRIVATE_NAME && peek_token(s, FALSE) == TOK_IN)
            return js_parse_error(s, \"private brand checks ('#x in obj', ES2022) are not \"
                                  \"supported\");
        return js_parse_error(s, \"unexpected token in expression: '%.*s'\",")
qjs_edit(src
"            bad_flags:
                JS_FreeCString(ctx, str);
                return JS_ThrowSyntaxError(ctx, \"invalid regular expression flags\");"
"            bad_flags:
                {
                    char al_flag = str[i];
                    JS_FreeCString(ctx, str);
                    if (al_flag == 'd')
                        return JS_ThrowSyntaxError(ctx, \"the regexp 'd' flag (match indices, \"
                                                   \"ES2022) is not supported\");
                    if (al_flag == 'v')
                        return JS_ThrowSyntaxError(ctx, \"the regexp 'v' flag (unicode sets, \"
                                                   \"ES2024) is not supported\");
                }
                return JS_ThrowSyntaxError(ctx, \"invalid regular expression flags\");")

# 11. Read the token after a function body in the enclosing function's context.
qjs_edit(src
"    if (next_token(s)) {
        /* consume the '}' */
        goto fail;
    }

    /* in case there is no return, add one */
    if (js_is_live_code(s)) {
        emit_return(s, FALSE);
    }
done:
    s->cur_func = fd->parent;"
"    /* in case there is no return, add one */
    if (js_is_live_code(s)) {
        emit_return(s, FALSE);
    }
    s->cur_func = fd->parent;
    if (next_token(s)) {
        /* consume the '}' */
        goto fail;
    }
done:
    s->cur_func = fd->parent;")

# 15. Messages that name the expression (V8 style): "tools.missing is not a function",
#     "Foo is not a constructor", "cannot read property 'bar' of undefined (o.foo)". The parser
#     tells sites_note() the source text of each callee and of each object whose member is read,
#     keyed by the packed position (edit 3) its opcode gets; the interpreter's exception handler,
#     which runs once for an error thrown by a bytecode operation (before its backtrace exists),
#     finds the operation that threw, asks sites_describe() for the new message and replaces the
#     TypeError's. Nothing runs on a call or property read that succeeds.
qjs_edit(src
"extern void engine_on_stack_overflow(JSContext *ctx) __attribute__((weak));
static JSValue JS_ThrowStackOverflow(JSContext *ctx)"
"#define AIRLOCK_SITE_CALL  1 /* the callee of f(), o.m(), f(...a), f`x` */
#define AIRLOCK_SITE_NEW   2 /* the constructor of new C(), new C */
#define AIRLOCK_SITE_FIELD 3 /* the object of o.x */
#define AIRLOCK_SITE_ELEM  4 /* the object of o[k] */
extern void sites_note(JSContext *ctx, const char *file, int kind, int pos, const char *text,
                       size_t len) __attribute__((weak));
extern size_t sites_describe(JSContext *ctx, const char *file, int kind, int pos,
                             JSValueConst receiver, const char *msg, char *out, size_t size)
    __attribute__((weak));
static void airlock_describe(JSContext *ctx, JSFunctionBytecode *b, const uint8_t *pc,
                             JSValue *sp);
extern void engine_on_stack_overflow(JSContext *ctx) __attribute__((weak));
static JSValue JS_ThrowStackOverflow(JSContext *ctx)")

qjs_edit(src
"        sf->cur_pc = pc;
        build_backtrace(ctx, rt->current_exception, NULL, 0, 0);
    }
    if (!JS_IsUncatchableError(ctx, rt->current_exception)) {"
"        sf->cur_pc = pc;
        if (sites_describe)
            airlock_describe(ctx, b, pc, sp);
        build_backtrace(ctx, rt->current_exception, NULL, 0, 0);
    }
    if (!JS_IsUncatchableError(ctx, rt->current_exception)) {")

qjs_edit(src
"#else
#define short_opcode_info(op) opcode_info[op]
#endif"
"#else
#define short_opcode_info(op) opcode_info[op]
#endif

/* The exception is a fresh TypeError thrown by the operation that ends at pc: if it is a call,
 * a new or a member read the parser noted, its message names the expression. Allocates only
 * the new message (an out-of-memory error then simply replaces the TypeError). */
static void airlock_describe(JSContext *ctx, JSFunctionBytecode *b, const uint8_t *pc,
                             JSValue *sp)
{
    JSValue exc = ctx->rt->current_exception;
    JSValueConst receiver = JS_UNDEFINED;
    JSObject *p;
    JSProperty *pr;
    JSShapeProperty *prs;
    JSString *m;
    const uint8_t *q, *op_pc = NULL;
    const char *fname;
    char msg[256], file[128], out[768];
    int kind, argc, pos;
    uint32_t i;
    size_t n;
    JSValue str;

    if (JS_VALUE_GET_TAG(exc) != JS_TAG_OBJECT || !b->has_debug ||
        JS_VALUE_GET_TAG(ctx->native_error_proto[JS_TYPE_ERROR]) != JS_TAG_OBJECT)
        return;
    p = JS_VALUE_GET_OBJ(exc);
    if (p->class_id != JS_CLASS_ERROR ||
        p->shape->proto != JS_VALUE_GET_OBJ(ctx->native_error_proto[JS_TYPE_ERROR]))
        return;
    prs = find_own_property(&pr, p, JS_ATOM_message);
    if (!prs || (prs->flags & JS_PROP_TMASK) != JS_PROP_NORMAL ||
        JS_VALUE_GET_TAG(pr->u.value) != JS_TAG_STRING)
        return;
    m = JS_VALUE_GET_STRING(pr->u.value);
    if (m->is_wide_char || m->len >= sizeof(msg))
        return;
    for (i = 0; i < m->len; i++) {
        if (m->u.str8[i] >= 0x80)
            return;
        msg[i] = (char)m->u.str8[i];
    }
    msg[i] = '\\0';
    for (q = b->byte_code_buf; q < pc; q += short_opcode_info(*q).size)
        op_pc = q;
    if (!op_pc || q != pc)
        return;
    switch (*op_pc) {
    case OP_call:
    case OP_tail_call:
    case OP_call0:
    case OP_call1:
    case OP_call2:
    case OP_call3:
        kind = AIRLOCK_SITE_CALL;
        break;
    case OP_call_method:
    case OP_tail_call_method:
        kind = AIRLOCK_SITE_CALL;
        argc = get_u16(op_pc + 1);
        receiver = sp[-2 - argc];
        break;
    case OP_apply:
        kind = (get_u16(op_pc + 1) & 1) ? AIRLOCK_SITE_NEW : AIRLOCK_SITE_CALL;
        if (kind == AIRLOCK_SITE_CALL)
            receiver = sp[-2];
        break;
    case OP_call_constructor:
        kind = AIRLOCK_SITE_NEW;
        break;
    case OP_get_field:
    case OP_get_field2:
    case OP_get_length:
        kind = AIRLOCK_SITE_FIELD;
        break;
    case OP_get_array_el:
    case OP_get_array_el2:
        kind = AIRLOCK_SITE_ELEM;
        break;
    default:
        return;
    }
    pos = find_line_num(ctx, b, pc - b->byte_code_buf - 1);
    fname = JS_AtomGetStr(ctx, file, sizeof(file), b->debug.filename);
    n = sites_describe(ctx, fname, kind, pos, receiver, msg, out, sizeof(out));
    if (n == 0 || n >= sizeof(out))
        return;
    str = JS_NewStringLen(ctx, out, n);
    if (JS_IsException(str))
        return;
    JS_DefinePropertyValue(ctx, exc, JS_ATOM_message, str,
                           JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE);
}")

qjs_edit(src
"extern size_t engine_wrapper_length(JSContext *ctx) __attribute__((weak));"
"extern size_t engine_wrapper_length(JSContext *ctx) __attribute__((weak));
static void airlock_note(JSParseState *s, int kind, const uint8_t *start, const uint8_t *end);")

qjs_edit(src
"static void emit_op(JSParseState *s, uint8_t val)
{"
"/* Tells the worker the source text [start, end) of the operand of the opcode about to be
 * emitted (the callee, or the object whose member is read), keyed by that opcode's position. */
static void airlock_note(JSParseState *s, int kind, const uint8_t *start, const uint8_t *end)
{
    if (!sites_note || !start || !end || end <= start)
        return;
    sites_note(s->ctx, s->filename, kind, airlock_pos(s, s->last_line_num, s->al_last_tok),
               (const char *)start, (size_t)(end - start));
}

static void emit_op(JSParseState *s, uint8_t val)
{")

qjs_edit(src
"} FuncCallType;"
"} FuncCallType;

static void airlock_note_call(JSParseState *s, int call_type, int opcode,
                              const uint8_t *start, const uint8_t *new_start,
                              const uint8_t *end)
{
    if (opcode == OP_eval || call_type == FUNC_CALL_SUPER_CTOR)
        return;
    if (call_type == FUNC_CALL_NEW)
        airlock_note(s, AIRLOCK_SITE_NEW, new_start, end);
    else
        airlock_note(s, AIRLOCK_SITE_CALL, start, end);
}")

qjs_edit(src
"    call_type = FUNC_CALL_NORMAL;
    switch(s->token.val) {
    case TOK_NUMBER:"
"    const uint8_t *al_start = s->token.ptr, *al_new_start = NULL;
    call_type = FUNC_CALL_NORMAL;
    switch(s->token.val) {
    case TOK_NUMBER:")

qjs_edit(src
"        } else {
            if (js_parse_postfix_expr(s, 0))
                return -1;
            accept_lparen = TRUE;
            if (s->token.val != '(') {
                /* new operator on an object */
                emit_op(s, OP_dup);"
"        } else {
            al_new_start = s->token.ptr;
            if (js_parse_postfix_expr(s, 0))
                return -1;
            accept_lparen = TRUE;
            if (s->token.val != '(') {
                /* new operator on an object */
                airlock_note(s, AIRLOCK_SITE_NEW, al_new_start, s->token.ptr);
                emit_op(s, OP_dup);")

qjs_edit(src
"        JSFunctionDef *fd = s->cur_func;
        BOOL has_optional_chain = FALSE;
        "
"        JSFunctionDef *fd = s->cur_func;
        BOOL has_optional_chain = FALSE;
        const uint8_t *al_end = NULL;
        ")

qjs_edit(src
"            call_type = FUNC_CALL_TEMPLATE;
            goto parse_func_call2;"
"            call_type = FUNC_CALL_TEMPLATE;
            al_end = s->token.ptr;
            goto parse_func_call2;")

qjs_edit(src
"        parse_func_call:
            if (next_token(s))
                return -1;
"
"        parse_func_call:
            al_end = s->token.ptr;
            if (next_token(s))
                return -1;
")

qjs_edit(src
"                /* drop the index */
                emit_op(s, OP_drop);
"
"                /* drop the index */
                emit_op(s, OP_drop);
                airlock_note_call(s, call_type, opcode, al_start, al_new_start, al_end);
")

qjs_edit(src
"            emit_func_call:
                switch(opcode) {"
"            emit_func_call:
                airlock_note_call(s, call_type, opcode, al_start, al_new_start, al_end);
                switch(opcode) {")

qjs_edit(src
"                    if (has_optional_chain) {
                        optional_chain_test(s, &optional_chaining_label, 1);
                    }
                    emit_op(s, OP_get_field);
                    emit_atom(s, s->token.u.ident.atom);"
"                    if (has_optional_chain) {
                        optional_chain_test(s, &optional_chaining_label, 1);
                    }
                    airlock_note(s, AIRLOCK_SITE_FIELD, al_start, s->al_last_tok);
                    emit_op(s, OP_get_field);
                    emit_atom(s, s->token.u.ident.atom);")

qjs_edit(src
"        parse_array_access:
            prev_op = get_prev_opcode(fd);"
"        parse_array_access:
            al_end = s->token.ptr;
            prev_op = get_prev_opcode(fd);")

qjs_edit(src
"            if (prev_op == OP_get_super) {
                emit_op(s, OP_get_super_value);
            } else {
                emit_op(s, OP_get_array_el);
            }"
"            if (prev_op == OP_get_super) {
                emit_op(s, OP_get_super_value);
            } else {
                airlock_note(s, AIRLOCK_SITE_ELEM, al_start, al_end);
                emit_op(s, OP_get_array_el);
            }")

# 16. The explicit call being made, for airlock_call_line().
qjs_edit(src
"    struct JSStackFrame *current_stack_frame;

    JSInterruptHandler *interrupt_handler;"
"    struct JSStackFrame *current_stack_frame;
    /* airlock: the last explicit call made (its frame, the pc after it, its callee) */
    struct JSStackFrame *al_site_sf;
    const uint8_t *al_site_pc;
    const void *al_site_callee;

    JSInterruptHandler *interrupt_handler;")
qjs_edit(src
"                call_argv = sp - call_argc;
                sf->cur_pc = pc;
                ret_val = JS_CallInternal(ctx, call_argv[-1], JS_UNDEFINED,"
"                call_argv = sp - call_argc;
                sf->cur_pc = pc;
                AIRLOCK_NOTE_CALL(rt, sf, pc, call_argv[-1]);
                ret_val = JS_CallInternal(ctx, call_argv[-1], JS_UNDEFINED,")
qjs_edit(src
"                call_argv = sp - call_argc;
                sf->cur_pc = pc;
                ret_val = JS_CallInternal(ctx, call_argv[-1], call_argv[-2],"
"                call_argv = sp - call_argc;
                sf->cur_pc = pc;
                AIRLOCK_NOTE_CALL(rt, sf, pc, call_argv[-1]);
                ret_val = JS_CallInternal(ctx, call_argv[-1], call_argv[-2],")
qjs_edit(src
"                ret_val = js_function_apply(ctx, sp[-3], 2, (JSValueConst *)&sp[-2], magic);"
"                sf->cur_pc = pc;
                AIRLOCK_NOTE_CALL(rt, sf, pc, sp[-3]);
                ret_val = js_function_apply(ctx, sp[-3], 2, (JSValueConst *)&sp[-2], magic);")
qjs_edit(src
"static JSValue js_c_function_data_call(JSContext *ctx, JSValueConst func_obj,
                                       JSValueConst this_val,
                                       int argc, JSValueConst *argv, int flags);"
"static JSValue js_c_function_data_call(JSContext *ctx, JSValueConst func_obj,
                                       JSValueConst this_val,
                                       int argc, JSValueConst *argv, int flags);
#define AIRLOCK_NOTE_CALL(rt, sf, pc, callee) do { \\
        (rt)->al_site_sf = (sf); \\
        (rt)->al_site_pc = (pc); \\
        (rt)->al_site_callee = JS_VALUE_GET_TAG(callee) == JS_TAG_OBJECT ? \\
            (const void *)JS_VALUE_GET_OBJ(callee) : NULL; \\
    } while (0)")
string(APPEND src "
/* The line (1...) of `filename` whose explicit call is calling the host function object
 * `self` right now (called straight from the interpreter: a JS_NewCFunctionData function
 * pushes no frame), else 0. Clears the note, so it is read once. `self` is only compared,
 * never read: a stale note's callee may be gone, but a live function made before the guest
 * ran never shares its address. */
int airlock_call_line(JSContext *ctx, const void *self, const char *filename)
{
    JSRuntime *rt = ctx->rt;
    JSStackFrame *sf = rt->current_stack_frame;
    JSStackFrame *site_sf = rt->al_site_sf;
    const uint8_t *pc = rt->al_site_pc;
    const void *callee = rt->al_site_callee;
    JSFunctionBytecode *b;
    JSObject *p;
    const char *name;
    int line, same;

    rt->al_site_sf = NULL;
    rt->al_site_pc = NULL;
    rt->al_site_callee = NULL;
    if (!self || !sf || site_sf != sf || callee != self ||
        JS_VALUE_GET_TAG(sf->cur_func) != JS_TAG_OBJECT)
        return 0;
    p = JS_VALUE_GET_OBJ(sf->cur_func);
    if (!js_class_has_bytecode(p->class_id))
        return 0;
    b = p->u.func.function_bytecode;
    if (!b->has_debug || pc <= b->byte_code_buf || pc > b->byte_code_buf + b->byte_code_len)
        return 0;
    name = JS_AtomToCString(ctx, b->debug.filename);
    same = name && strcmp(name, filename) == 0;
    JS_FreeCString(ctx, name);
    if (!same)
        return 0;
    line = find_line_num(ctx, b, pc - b->byte_code_buf - 1);
    return line <= 0 ? 0 : line & ((1 << 20) - 1);
}
")

file(WRITE "${QJS_OUT}.tmp" "${src}")
file(RENAME "${QJS_OUT}.tmp" "${QJS_OUT}")
