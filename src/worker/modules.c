/*
 * modules.c - ES modules through the host's loader (docs/modules.md).
 *
 * QuickJS asks the runtime's normalize and load callbacks for every static import, every
 * dynamic import() and the module graph's cycles (each name is loaded once per run). Both
 * callbacks are synchronous, so each becomes a synchronous call to one of two hidden host
 * functions the host registers with its loader ("#modules.resolve" and "#modules.load"): they
 * are host calls like any other - counted, bounded, recorded in a continuation's ledger and
 * replayed - but never guest-visible globals.
 *
 * A loaded module is compiled in the compile context (the guest context has no compiler: it
 * has no eval) and its bytecode read into the guest context. So with a loader the compile
 * context stays alive during the run; nothing from it is ever reachable by the guest.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker.h"

#define MODULES_RESOLVE "#modules.resolve"
#define MODULES_LOAD    "#modules.load"
#define MODULES_FS      "node:fs/promises"

/* workspace_bc.c: workspace.js, compiled at build time by prelude_compile */
extern const unsigned char builtins_workspace[];
extern const size_t builtins_workspace_len;

/* node:fs/promises' exports: the members of workspace.js's `fs`, and `default` (all of it). */
static const char *const fs_exports[] = {
    "readFile", "writeFile", "appendFile", "readdir", "stat",   "lstat",  "access",
    "mkdir",    "rm",        "rmdir",      "unlink",  "rename", "glob",
};

/* A JSON string answer as a C string (js_malloc'd), or NULL with an exception pending. */
static char *string_answer(JSContext *ctx, JSValue v, const char *what)
{
    if (JS_IsException(v)) {
        return NULL;
    }
    if (!JS_IsString(v)) {
        JS_FreeValue(ctx, v);
        JS_ThrowTypeError(ctx, "the module loader's %s answer is not a string", what);
        return NULL;
    }
    size_t len;
    const char *s = JS_ToCStringLen(ctx, &len, v);
    JS_FreeValue(ctx, v);
    if (!s) {
        return NULL;
    }
    char *copy = js_malloc(ctx, len + 1);
    if (copy) {
        memcpy(copy, s, len + 1);
    }
    JS_FreeCString(ctx, s);
    return copy;
}

static int is_fs(const struct worker *w, const char *name)
{
    return !JS_IsUndefined(w->mods.fs) &&
           (strcmp(name, MODULES_FS) == 0 || strcmp(name, "fs/promises") == 0);
}

static int fs_module_init(JSContext *ctx, JSModuleDef *m)
{
    struct worker *w = JS_GetContextOpaque(ctx);
    for (size_t i = 0; i < sizeof fs_exports / sizeof fs_exports[0]; i++) {
        JSValue f = JS_GetPropertyStr(ctx, w->mods.fs, fs_exports[i]);
        if (JS_IsException(f) || JS_SetModuleExport(ctx, m, fs_exports[i], f) < 0) {
            return -1;
        }
    }
    return JS_SetModuleExport(ctx, m, "default", JS_DupValue(ctx, w->mods.fs));
}

/* node:fs/promises as a native module over the workspace's `fs` object: no host loader, no
 * compiler. */
static JSModuleDef *fs_module(JSContext *ctx)
{
    JSModuleDef *m = JS_NewCModule(ctx, MODULES_FS, fs_module_init);
    if (!m) {
        return NULL;
    }
    for (size_t i = 0; i < sizeof fs_exports / sizeof fs_exports[0]; i++) {
        if (JS_AddModuleExport(ctx, m, fs_exports[i]) < 0) {
            return NULL;
        }
    }
    return JS_AddModuleExport(ctx, m, "default") < 0 ? NULL : m;
}

static char *module_normalize(JSContext *ctx, const char *base, const char *name, void *opaque)
{
    struct worker *w = opaque;
    if (is_fs(w, name)) {
        return js_strdup(ctx, MODULES_FS);
    }
    if (w->mods.resolve < 0) {
        JS_ThrowReferenceError(ctx, "cannot import '%s': this run has no module loader", name);
        return NULL;
    }
    JSValue args[2] = { JS_NewString(ctx, name), JS_NewString(ctx, base) };
    JSValue v = bridge_call(w, ctx, (uint32_t)w->mods.resolve, 2, args);
    JS_FreeValue(ctx, args[0]);
    JS_FreeValue(ctx, args[1]);
    return string_answer(ctx, v, "resolve");
}

static JSModuleDef *module_load(JSContext *ctx, const char *name, void *opaque)
{
    struct worker *w = opaque;
    if (is_fs(w, name)) {
        return fs_module(ctx);
    }
    if (w->mods.load < 0) {
        JS_ThrowReferenceError(ctx, "cannot import '%s': this run has no module loader", name);
        return NULL;
    }
    JSValue arg = JS_NewString(ctx, name);
    JSValue v = bridge_call(w, ctx, (uint32_t)w->mods.load, 1, &arg);
    JS_FreeValue(ctx, arg);
    if (JS_IsException(v)) {
        return NULL;
    }
    size_t len;
    const char *src = JS_IsString(v) ? JS_ToCStringLen(ctx, &len, v) : NULL;
    JS_FreeValue(ctx, v);
    if (!src) {
        JS_ThrowTypeError(ctx, "the module loader's load answer for '%s' is not a string", name);
        return NULL;
    }
    if (len > w->req.limits[AL_LIMIT_SOURCE_BYTES]) {
        JS_FreeCString(ctx, src);
        worker_fail(w, AL_SOURCE_TOO_LARGE,
                    "module '%.100s' exceeds the source limit of %llu bytes", name,
                    (unsigned long long)w->req.limits[AL_LIMIT_SOURCE_BYTES]);
        JS_ThrowInternalError(ctx, "the run is ending: %s", w->fatal.msg);
        return NULL;
    }
    JSValue m = JS_UNDEFINED;
    size_t nlen = strlen(name);
    char *js = NULL;
    if ((nlen > 3 && strcmp(name + nlen - 3, ".ts") == 0) ||
        (nlen > 4 && strcmp(name + nlen - 4, ".mts") == 0)) {
        char *why = NULL;
        js = engine_strip_ts(src, len, name, &len, &why);
        if (!js) {
            JS_FreeCString(ctx, src);
            JS_ThrowSyntaxError(ctx, "%s", why ? why : "cannot strip the TypeScript module");
            free(why);
            return NULL;
        }
    }
    int cr = engine_compile(w, js ? js : src, len, name, JS_EVAL_TYPE_MODULE, &m);
    JS_FreeCString(ctx, src);
    free(js);
    if (cr == 0) {
        engine_rethrow_compile_error(w, ctx); /* a SyntaxError in the module */
        return NULL;
    }
    if (cr < 0) {
        JS_ThrowOutOfMemory(ctx);
        return NULL;
    }
    JSModuleDef *def = JS_VALUE_GET_PTR(m);
    JS_FreeValue(ctx, m); /* the context keeps the module */
    return def;
}

int modules_install_workspace(struct worker *w, JSContext *ctx)
{
    int rc = -1;
    JSValue native = JS_UNDEFINED;
    JSValue ops = JS_UNDEFINED;
    JSValue install = JS_UNDEFINED;
    JSValue made = JS_UNDEFINED;
    JSValue global = JS_GetGlobalObject(ctx);
    int any = 0;
    for (uint32_t i = 0; i < w->req.nfns; i++) {
        any |= w->req.fns[i].file;
    }
    if (!any) {
        rc = 0;
        goto out;
    }
    native = JS_NewObject(ctx);
    ops = JS_NewObject(ctx);
    if (JS_IsException(native) || JS_IsException(ops)) {
        goto out;
    }
    for (uint32_t i = 0; i < w->req.nfns; i++) {
        const struct bridge_fn *f = &w->req.fns[i];
        if (!f->file) {
            continue;
        }
        JSValue fn = bridge_function(w, ctx, i);
        if (JS_IsException(fn) ||
            JS_DefinePropertyValueStr(ctx, ops, f->name + f->group_len + 1, fn, 0) < 0) {
            goto out;
        }
    }
    if (JS_DefinePropertyValueStr(ctx, native, "ops", JS_DupValue(ctx, ops), 0) < 0) {
        goto out;
    }
    JSValue bc = JS_ReadObject(ctx, builtins_workspace, builtins_workspace_len,
                               JS_READ_OBJ_BYTECODE);
    if (JS_IsException(bc)) {
        goto out;
    }
    install = JS_EvalFunction(ctx, bc); /* consumes bc */
    if (JS_IsException(install)) {
        goto out;
    }
    made = JS_Call(ctx, install, JS_UNDEFINED, 1, (JSValueConst *)&native);
    if (JS_IsException(made)) {
        goto out;
    }
    JSValue ws = JS_GetPropertyStr(ctx, made, "workspace");
    /* like a host group: a non-writable, non-configurable global binding */
    if (JS_IsException(ws) || JS_DefinePropertyValueStr(ctx, global, "workspace", ws, 0) < 0) {
        goto out;
    }
    w->mods.fs = JS_GetPropertyStr(ctx, made, "fs");
    rc = JS_IsException(w->mods.fs) ? -1 : 0;
    if (rc < 0) {
        w->mods.fs = JS_UNDEFINED;
    }
out:
    if (rc < 0) {
        JS_FreeValue(ctx, JS_GetException(ctx));
    }
    JS_FreeValue(ctx, made);
    JS_FreeValue(ctx, install);
    JS_FreeValue(ctx, ops);
    JS_FreeValue(ctx, native);
    JS_FreeValue(ctx, global);
    return rc;
}

void modules_free(struct worker *w, JSRuntime *rt)
{
    JS_FreeValueRT(rt, w->mods.fs);
    w->mods.fs = JS_UNDEFINED;
}

void modules_prepare(struct worker *w)
{
    w->mods.resolve = -1;
    w->mods.load = -1;
    w->mods.fs = JS_UNDEFINED;
    for (uint32_t i = 0; i < w->req.nfns; i++) {
        if (strcmp(w->req.fns[i].name, MODULES_RESOLVE) == 0 && w->req.fns[i].hidden) {
            w->mods.resolve = (int)i;
        } else if (strcmp(w->req.fns[i].name, MODULES_LOAD) == 0 && w->req.fns[i].hidden) {
            w->mods.load = (int)i;
        }
    }
    if (w->mods.load < 0) {
        w->mods.resolve = -1;
    }
    JS_SetModuleLoaderFunc(w->eng.rt, module_normalize, module_load, w);
}

int modules_have_loader(const struct worker *w)
{
    return w->mods.resolve >= 0;
}

/* The entry module's default export, as a promise of it (a thenable default is awaited). */
JSValue modules_run_entry(struct worker *w, JSContext *ctx, JSValue module)
{
    JSModuleDef *m = JS_VALUE_GET_PTR(module);
    if (JS_ResolveModule(ctx, module) < 0) {
        return JS_EXCEPTION; /* QuickJS freed the module with the failed attempt */
    }
    JSValue r = JS_EvalFunction(ctx, module); /* consumes module */
    if (JS_IsException(r)) {
        return r;
    }
    JS_FreeValue(ctx, r);
    JSValue ns = airlock_module_namespace(ctx, m);
    if (JS_IsException(ns)) {
        return ns;
    }
    JSValue def = JS_GetPropertyStr(ctx, ns, "default");
    JS_FreeValue(ctx, ns);
    if (JS_IsException(def)) {
        return def;
    }
    JSValue resolving[2];
    JSValue promise = JS_NewPromiseCapability(ctx, resolving);
    if (!JS_IsException(promise)) {
        JSValue c = JS_Call(ctx, resolving[0], JS_UNDEFINED, 1, (JSValueConst *)&def);
        JS_FreeValue(ctx, c);
        JS_FreeValue(ctx, resolving[0]);
        JS_FreeValue(ctx, resolving[1]);
    }
    JS_FreeValue(ctx, def);
    (void)w;
    return promise;
}
