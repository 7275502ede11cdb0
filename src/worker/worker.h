/*
 * worker.h - state of one airlock-worker process, shared by its modules:
 *   main.c     process setup, the host socket, frame I/O
 *   engine.c   QuickJS runtime and guest context, hardening, limits, the run's event loop
 *   bridge.c   host-function group objects, calls out, answers in, detached-call tracking
 *   console.c  the console object and its byte limit
 *   builtins.c the ES2022-ES2025 library the engine lacks (preludes, structuredClone, Intl)
 * A worker serves exactly one run and exits: nothing survives between runs.
 */
#ifndef AIRLOCK_WORKER_H
#define AIRLOCK_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "airlock.h"

#include "buf.h"
#include "quickjs.h"
#include "value.h"
#include "wire.h"

#define WORKER_MAX_FRAME (128u * 1024 * 1024) /* body cap of a frame from the host */
#define WORKER_SPIN_US   50u /* how long a wait for the host looks before it sleeps */

struct bridge_fn {
    char *name;       /* "group.fn"; owned */
    size_t group_len; /* bytes of the group part */
    int sync;         /* the group is synchronous */
    int hidden;       /* the host's module loader: callable by the worker, not a guest global */
};

struct bridge_call {
    uint32_t fn; /* index into worker.fns; the call's id is its index + 1 */
    char *args;  /* encoded arguments until dispatched; owned */
    size_t args_len;
    JSValue promise; /* async: the guest's promise (a weak-ish handle: we hold a reference) */
    JSValue resolve; /* async: resolving functions, JS_UNDEFINED once answered */
    JSValue reject;
    JSValue error;      /* the Error built from the host's throw, else JS_UNDEFINED */
    JSValue sync_value; /* sync: the decoded answer */
    int sync_threw;
    int observed;   /* the guest attached a reaction (await, then, Promise.all, ...) */
    int dispatched; /* the CALL frame went to the host */
    int answered;
    int interrupted; /* the host will not answer it in this run */
};

struct worker {
    int fd;                 /* the host socket */
    struct buf in;          /* bytes received, not yet consumed */
    struct buf out;         /* frames to send; flushed before blocking, at the end, and every few
                               ms of computation so console output survives a supervisor kill */
    uint64_t last_flush_us; /* monotonic */

    /* the run's request */
    uint64_t limits[AL_LIMIT_COUNT_];
    uint64_t seed;
    int64_t clock_ms;    /* the guest's clock: ms since the epoch */
    uint8_t run_flags;   /* WIRE_RUN_* */
    char *ts_error;      /* the TypeScript source could not be stripped: why (run.ts:L:C) */
    int modules_resolve; /* index of the loader's hidden functions, -1: no loader */
    int modules_load;
    char *filename; /* "run.js" */
    char *source;   /* the user's body inside the wrapper */
    size_t source_len;
    int compiling_user; /* the parser is reading `source`: the wrapper check applies */
    struct bridge_fn *fns;
    uint32_t nfns;

    /* engine */
    JSRuntime *rt;
    JSContext *cc;              /* compile context (has eval); freed before any guest code runs */
    JSContext *ctx;             /* the guest context (no eval) */
    struct value_cache *values; /* the codec's view of ctx's intrinsics */
    uint64_t start_us;          /* monotonic, when the guest started */
    uint64_t wall_deadline_us;  /* monotonic */
    uint64_t cpu_start_us;      /* process CPU at the guest's start */
    uint64_t cpu_deadline_us;   /* process CPU */
    size_t mem_used;            /* bytes held by the guest heap, allocator overhead included */
    size_t mem_peak;
    size_t mem_cap; /* current allocation cap: the limit, plus slack once tripped */
    uint64_t rng;   /* Math.random state */

    /* the first limit or fault that tripped decides the run's code; later ones are ignored */
    enum al_code fatal_code;
    char fatal_msg[256];

    /* bridge */
    struct bridge_call *calls; /* every call of the run, in call order */
    uint32_t ncalls;
    uint32_t cap_calls;
    uint32_t in_flight;          /* calls made and not answered */
    uint32_t dispatched_pending; /* calls sent to the host and not answered */
    JSValue promise_then;        /* the intrinsic Promise.prototype.then */
    uint32_t unobserved;         /* async calls whose promise has no reaction yet */
    uint32_t interrupted;        /* calls the host interrupted */
    uint32_t answers_applied;    /* ANSWER frames applied (IDLE reports it) */
    struct buf deferred; /* async answers that arrived during a sync call, applied afterwards */

    void *settle; /* engine.c: where the guest's promise outcome lands */

    /* console */
    uint64_t console_bytes; /* text bytes + 1 per entry */
    int console_cut;        /* the limit tripped: later entries are dropped (and marked) */
};

/* Latches the run's fatal code (first one wins). */
void worker_fail(struct worker *w, enum al_code code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* main.c: frame I/O on the host socket. */
/* Sends what is buffered in w->out. 0, or -1 when the host is gone. */
int worker_flush(struct worker *w);
/* Before decoding `text_len` bytes of boundary JSON: makes the heap the decoder will fill
 * present in one go (see main.c), at most half of `cap`, the guest's heap cap. */
void worker_heap_ready(size_t text_len, size_t cap);
/* Flushes, then waits until a whole frame is buffered or the monotonic deadline (us, 0 = none)
 * passes. 1 = frame ready (type, cursor, length to consume with worker_consume), 0 = deadline,
 * -1 = the host is gone or sent a malformed frame. */
int worker_wait_frame(struct worker *w, uint64_t deadline_us, uint8_t *ret_type,
                      struct wire_cursor *ret_cursor, size_t *ret_frame_len);
void worker_consume(struct worker *w, size_t frame_len);

/* engine.c: builds the runtime, the compile context and the hardened guest context before any
 * request arrives (so a warm worker has them ready). 0, or -1 (out of memory). */
int engine_prepare(struct worker *w);
/* Reads the RUN request, runs it and appends the DONE frame to w->out. */
void engine_run(struct worker *w, int prepared);
/* Called by the engine (hook in quickjs_airlock.c) whenever it throws a stack overflow. */
void engine_on_stack_overflow(JSContext *ctx);
/* Called by the parser (hook in quickjs_airlock.c): the exact source length of the function the
 * user's body is wrapped in while that source is compiled, else 0. */
size_t engine_wrapper_length(JSContext *ctx);
/* The deadline for blocking waits: the wall deadline (monotonic us). */
uint64_t engine_wall_deadline(const struct worker *w);

/* engine.c: compiles in the compile context and reads the bytecode into the guest context:
 * 1 and *ret, 0 with the exception pending in the compile context, -1 out of memory.
 * eval_type: JS_EVAL_TYPE_GLOBAL or JS_EVAL_TYPE_MODULE. */
int engine_compile(struct worker *w, const char *src, size_t len, const char *filename,
                   int eval_type, JSValue *ret);
/* Moves the compile context's pending SyntaxError into `ctx` (message and position). */
void engine_rethrow_compile_error(struct worker *w, JSContext *ctx);

/* Strips TypeScript (src/tsstrip, enums and parameter properties transformed): a malloc'd
 * JavaScript text, or NULL with *ret_error set (malloc'd message naming NAME:LINE:COL). */
char *engine_strip_ts(const char *src, size_t len, const char *name, size_t *ret_len,
                      char **ret_error);

/* modules.c */
void modules_prepare(struct worker *w);
int modules_have_loader(const struct worker *w);
/* Links and evaluates the entry module (consumed); a promise of its default export. */
JSValue modules_run_entry(struct worker *w, JSContext *ctx, JSValue module);
/* quickjs_airlock.c (appended by cmake/quickjs_patch.cmake) */
JSValue airlock_module_namespace(JSContext *ctx, JSModuleDef *m);

/* bridge.c: bridge_prepare before hardening, bridge_install (the request's groups) after. */
int bridge_prepare(struct worker *w, JSContext *ctx);
int bridge_install(struct worker *w, JSContext *ctx);
/* Calls host function `fn` synchronously from C (the module loader): its value, or
 * JS_EXCEPTION with the host's error pending. */
JSValue bridge_call(struct worker *w, JSContext *ctx, uint32_t fn, int argc, JSValueConst *argv);
/* Appends CALL frames for calls the guest has observed and that were not sent yet. */
void bridge_dispatch(struct worker *w);
/* Whether a call was made that is not answered and not dispatched: never observed. */
int bridge_has_unobserved(const struct worker *w);
/* Called by the engine (hook in quickjs_airlock.c) for every reaction on a promise. */
void bridge_on_promise_then(JSContext *ctx, JSValueConst promise);
/* Handles one ANSWER frame. 0, or -1 on a protocol violation. */
int bridge_answer(struct worker *w, JSContext *ctx, struct wire_cursor *c);
/* Applies the oldest answer deferred during a sync call: 1 applied, 0 none, -1 protocol
 * violation. */
int bridge_apply_deferred(struct worker *w, JSContext *ctx);
/* A call still unanswered, or answered but never observed: its name, else NULL. */
const char *bridge_detached(struct worker *w);
/* Whether `err` is an Error object built from a host function's throw. */
int bridge_is_host_error(struct worker *w, JSContext *ctx, JSValueConst err);
void bridge_free(struct worker *w, JSRuntime *rt);

/* console.c */
int console_install(struct worker *w, JSContext *ctx);

/* builtins.c: adds the missing standard library to the guest context before it is hardened
 * (called once by engine_prepare). 0, or -1 (out of memory or a prelude bug). */
int builtins_install(JSContext *ctx, JSValueConst global);

#endif
