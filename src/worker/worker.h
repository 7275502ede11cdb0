/*
 * worker.h - state of one airlock-worker process, shared by its modules:
 *   main.c     process setup, the host socket, frame I/O
 *   engine.c   QuickJS runtime and guest context, hardening, limits, the run's event loop
 *   bridge.c   host-function group objects, calls out, answers in, detached-call tracking
 *   console.c  the console object and its byte limit
 *   builtins.c the ES2022-ES2025 library the engine lacks (preludes, structuredClone, Intl)
 *   sites.c    the source text of callees and member reads, for messages naming the expression
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
    int file;         /* a workspace operation (hidden): bounded by req.file_args_max */
    const void *self; /* its function object (compared only, never read): airlock_call_line */
};

struct bridge_call {
    uint32_t fn; /* index into worker.fns; the call's id is its index + 1 */
    char *args;  /* encoded arguments until dispatched; owned */
    size_t args_len;
    uint32_t line;   /* the line of the run's source that made it (airlock_call_line), or 0 */
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

/* Where the guest's promise stands (engine.c: the run's event loop watches it). */
enum engine_settle_state {
    ENGINE_PENDING,   /* not settled yet */
    ENGINE_FULFILLED, /* the guest returned: value is its result */
    ENGINE_REJECTED,  /* the guest threw: value is the thrown value */
};

struct engine_settle {
    enum engine_settle_state state;
    JSValue value; /* owned; JS_UNDEFINED while pending */
};

/* One group object ("store") as bridge_install built it. */
struct bridge_group {
    uint32_t first;  /* index of its first function in worker.req.fns */
    uint32_t count;  /* its functions, contiguous from first */
    const void *obj; /* the frozen group object: compared by identity only, never dereferenced */
};

/* One worker process, grouped by the module that owns each part: a module writes only its own
 * part (and reads the request); the fatal code is the one thing every module may set. */
struct worker {
    /* main.c: the host socket and frame I/O */
    struct worker_io {
        int fd;                 /* the host socket */
        struct buf in;          /* bytes received, not yet consumed */
        struct buf out;         /* frames to send; flushed before blocking, at the end, and every
                                   few ms of computation so console output survives a kill */
        uint64_t last_flush_us; /* monotonic */
        uint64_t last_host_check_us; /* monotonic: when the engine last looked for a hang-up */
    } io;

    /* engine.c (parse_run): the run's request; read-only once parsed */
    struct worker_request {
        uint64_t limits[AL_LIMIT_COUNT_];
        uint64_t seed;
        uint8_t run_flags; /* WIRE_RUN_* */
        char *ts_error;    /* the TypeScript source could not be stripped: why (run.ts:L:C) */
        char *filename;    /* "run.js"; owned */
        char *source;      /* the user's body inside the wrapper; owned */
        size_t source_len;
        struct bridge_fn *fns; /* the registered host functions, groups contiguous; owned */
        uint32_t nfns;
        uint64_t file_args_max; /* bytes of a workspace operation's arguments */
    } req;

    /* engine.c: QuickJS, the guest's limits, clock and randomness, the guest's outcome */
    struct worker_engine {
        JSRuntime *rt;
        JSContext *cc;              /* compile context (has eval); freed before guest code runs */
        JSContext *ctx;             /* the guest context (no eval) */
        struct value_cache *values; /* the codec's view of ctx's intrinsics */
        uint64_t start_us;          /* monotonic, when the guest started */
        uint64_t wall_deadline_us;  /* monotonic */
        uint64_t cpu_start_us;      /* process CPU at the guest's start */
        uint64_t cpu_deadline_us;   /* process CPU */
        size_t mem_peak;            /* bytes, allocator overhead included */
        size_t mem_cap;             /* current allocation cap: the limit, plus slack once tripped */
        uint64_t rng;               /* Math.random state */
        int64_t clock_ms;           /* the guest's clock: ms since the epoch (answers move it) */
        int compiling_user;         /* the parser reads req.source: the wrapper check applies */
        struct engine_settle settle; /* the guest's promise, once it settles */
    } eng;

    /* modules.c: the host's module loader (hidden host functions) */
    struct worker_modules {
        int resolve; /* index into req.fns, -1: no loader */
        int load;
        JSValue fs; /* node:fs/promises' exports (an object), JS_UNDEFINED: no workspace */
    } mods;

    /* bridge.c: the calls to host functions */
    struct worker_bridge {
        struct bridge_call *calls; /* every call of the run, in call order; owned */
        uint32_t ncalls;
        uint32_t cap_calls;
        uint32_t in_flight;          /* calls made and not answered */
        uint32_t dispatched_pending; /* calls sent to the host and not answered */
        JSValue promise_then;        /* the intrinsic Promise.prototype.then */
        uint32_t unobserved;         /* async calls whose promise has no reaction yet */
        uint32_t interrupted;        /* calls the host interrupted */
        uint32_t answers_applied;    /* ANSWER frames applied (IDLE reports it) */
        struct buf deferred; /* async answers that arrived during a sync call, applied later */
        struct bridge_group *groups; /* the group objects installed; owned */
        uint32_t ngroups;
        int closed; /* the guest has settled: a new call can never be awaited (bridge_close) */
    } bridge;

    /* sites.c: noted by the parser, read only when a call or member read throws */
    struct worker_sites {
        struct sites_entry *tab; /* owned; sorted by key when `sorted` */
        size_t n;
        size_t cap;
        int sorted;
        char **files; /* the file names noted, owned */
        uint32_t nfiles;
        struct buf text; /* the noted source texts, capped */
    } sites;

    /* console.c */
    struct worker_console {
        uint64_t bytes; /* text bytes + 1 per entry */
        int cut;        /* the limit tripped: later entries are dropped (and marked) */
    } console;

    /* worker_fail (main.c): the first limit or fault that tripped decides the run's code; later
     * ones are ignored */
    struct worker_fatal {
        enum al_code code;
        char msg[256];
    } fatal;
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
/* The run's workspace (docs/workspace.md), when the host sent its operations: the frozen global
 * `workspace` and the module node:fs/promises, built by workspace.js over the hidden
 * operations. 0, or -1 (out of memory, or the prelude threw). */
int modules_install_workspace(struct worker *w, JSContext *ctx);
/* Lets go of what modules_install_workspace kept (with the run's other values). */
void modules_free(struct worker *w, JSRuntime *rt);
int modules_have_loader(const struct worker *w);
/* Links and evaluates the entry module (consumed); a promise of its default export. */
JSValue modules_run_entry(struct worker *w, JSContext *ctx, JSValue module);
/* quickjs_airlock.c (appended by cmake/quickjs_patch.cmake) */
JSValue airlock_module_namespace(JSContext *ctx, JSModuleDef *m);
/* The line (1...) of file `filename` whose explicit call is calling the host function object
 * `self` right now, else 0 (a call made any other way: a getter, .call, a promise job...).
 * Read once, on entry to the host function, before any guest code can run. */
int airlock_call_line(JSContext *ctx, const void *self, const char *filename);

/* bridge.c: bridge_prepare before hardening, bridge_install (the request's groups) after. */
int bridge_prepare(struct worker *w, JSContext *ctx);
int bridge_install(struct worker *w, JSContext *ctx);
/* Calls host function `fn` synchronously from C (the module loader): its value, or
 * JS_EXCEPTION with the host's error pending. */
JSValue bridge_call(struct worker *w, JSContext *ctx, uint32_t fn, int argc, JSValueConst *argv);
/* A JavaScript function calling host function `fn` as a group's member does (asynchronous
 * unless the host function is synchronous), for a hidden one a prelude wraps. */
JSValue bridge_function(struct worker *w, JSContext *ctx, uint32_t fn);
/* Appends CALL frames for calls the guest has observed and that were not sent yet. */
void bridge_dispatch(struct worker *w);
/* The guest has settled: from now on a call fails the run with DETACHED_BRIDGE_REQUEST and
 * never reaches the host (getters of the result run after this). */
void bridge_close(struct worker *w);
/* If obj is a host group object: "GROUP has: fn1, fn2" in out (NUL-terminated, cut to size),
 * its length; else 0. Never calls into the guest. */
size_t bridge_group_members(const struct worker *w, JSValueConst obj, char *out, size_t size);
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

/* sites.c. The kinds match AIRLOCK_SITE_* in cmake/quickjs_patch.cmake. */
#define SITES_CALL  1 /* the callee of f(), o.m(), f(...a), f`x` */
#define SITES_NEW   2 /* the constructor of new C(), new C */
#define SITES_FIELD 3 /* the object of o.x */
#define SITES_ELEM  4 /* the object of o[k] */
void sites_init(struct worker *w);
void sites_free(struct worker *w);
/* Called by the parser (hook in quickjs_airlock.c): the source text of a site, kept (bounded)
 * for the run; `pos` is the packed position of the site's opcode. */
void sites_note(JSContext *ctx, const char *file, int kind, int pos, const char *text, size_t len);
/* Called by the interpreter (hook in quickjs_airlock.c) when the operation at a site threw a
 * TypeError with message `msg`: writes the message naming the expression (and, for a call on a
 * host group, what the group has) into out and returns its length, or 0 to keep `msg`.
 * `receiver` is the `this` of a method call, else undefined. Never throws. */
size_t sites_describe(JSContext *ctx, const char *file, int kind, int pos, JSValueConst receiver,
                      const char *msg, char *out, size_t size);

/* console.c */
int console_install(struct worker *w, JSContext *ctx);

/* builtins.c: adds the missing standard library to the guest context before it is hardened
 * (called once by engine_prepare). 0, or -1 (out of memory or a prelude bug). */
int builtins_install(JSContext *ctx, JSValueConst global);

#endif
