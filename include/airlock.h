/*
 * airlock.h - run code that AI agents write in an isolated QuickJS worker process.
 *
 * This header is the reference manual of libairlock. A run takes a source text (a function
 * body: top-level `await` and `return` work) and the host functions the application grants,
 * evaluates it in a fresh QuickJS runtime inside an `airlock-worker` process, and ends in
 * exactly one state: completed with a value, or failed with a stable error code.
 *
 * Objects and threads:
 *   struct al_config   mutable settings: limits, host functions, worker path. One thread at a
 *                      time; copied by al_runner_new, so it may be freed or changed afterwards.
 *   struct al_runner   immutable snapshot of a config. Thread-safe: any number of threads may
 *                      call al_run on one runner at once; each run gets its own worker process.
 *   struct al_run_opts per-run source and overrides. One thread at a time; read during al_run only.
 *   struct al_result   what a run produced. Owned by the caller; read from any one thread.
 *   struct al_call     one host-function invocation, handed to the host callback. See below.
 *
 * Values cross the boundary as "boundary JSON" (docs/values.md): JSON-compatible data is exactly
 * what JSON.stringify gives; undefined, NaN, BigInt, Date, Map, ... travel as tagged objects.
 *
 * Errors: every fallible call returns enum al_code (AL_OK = 0) and, on failure, fills the
 * optional trailing `struct al_error *reterr` (may be NULL). No global error state.
 */
#ifndef AIRLOCK_H
#define AIRLOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AL_VERSION_MAJOR 0
#define AL_VERSION_MINOR 1
#define AL_VERSION_PATCH 0

#if defined(__GNUC__)
#define AL_API       __attribute__((visibility("default")))
#define AL_NODISCARD __attribute__((warn_unused_result))
#else
#define AL_API
#define AL_NODISCARD
#endif

/* The one error space. Numbers are stable and never reused; names are the stable codes that
 * results, the CLI's JSON and the server carry. X(name, number, default message). */
#define AL_CODE_LIST(X)                                                                            \
    X(OK, 0, "success")                                                                            \
    X(ABORTED, 1, "the run was aborted")                                                           \
    X(TIMEOUT, 2, "the run exceeded its wall-clock timeout")                                       \
    X(CPU_LIMIT, 3, "the run exceeded its CPU time limit")                                         \
    X(MEMORY_LIMIT, 4, "the run exceeded its memory limit")                                        \
    X(STACK_OVERFLOW, 5, "the run exceeded its stack limit")                                       \
    X(OUTPUT_LIMIT, 6, "the run's result or console exceeded its limit")                           \
    X(SOURCE_TOO_LARGE, 7, "the source exceeds the source limit")                                  \
    X(BRIDGE_LIMIT, 8, "a host-call limit was exceeded")                                           \
    X(SERIALIZATION_ERROR, 9, "a value cannot cross the boundary")                                 \
    X(USER_ERROR, 10, "the guest threw an uncaught exception or has a syntax error")               \
    X(HOST_FUNCTION_ERROR, 11, "a host function threw and the guest did not catch it")             \
    X(DETACHED_BRIDGE_REQUEST, 12, "the guest finished with a host call unanswered or unobserved") \
    X(CONCURRENCY_LIMIT, 13, "too many concurrent runs")                                           \
    X(PROTOCOL_ERROR, 14, "the worker or a continuation broke the protocol")                       \
    X(CONFIG_ERROR, 15, "invalid configuration or argument")                                       \
    X(WORKER_CRASHED, 16, "the worker process crashed")                                            \
    X(INTERNAL_ERROR, 17, "a host-side failure (out of memory, I/O)")

enum al_code {
#define AL_CODE_ENUM_(name, num, msg) AL_##name = num,
    AL_CODE_LIST(AL_CODE_ENUM_)
#undef AL_CODE_ENUM_
};

/* "TIMEOUT" for AL_TIMEOUT; "UNKNOWN" for a number not in the list. Static storage. */
AL_API const char *al_code_name(enum al_code code);
/* The default one-line message of a code. Static storage. */
AL_API const char *al_code_message(enum al_code code);
/* Parses a code name ("TIMEOUT"); returns -1 when unknown. */
AL_API int al_code_from_name(const char *name);

/* Detail of a failure: the code again and a message naming the limit, value path or errno. */
struct al_error {
    enum al_code code;
    int sys_errno; /* errno when a system call failed, else 0 */
    char message[256];
};

/* The version, "MAJOR.MINOR.PATCH" (CMakeLists.txt's project VERSION). Static storage. */
AL_API const char *al_version(void);

/* ---------------------------------------------------------------- limits */

/* Every limit has a default (listed below, the same as the best-known peer's where one exists)
 * and may be set per runner and overridden per run.
 * Durations are in milliseconds, sizes in bytes (UTF-8 bytes for text), counts plain. */
enum al_limit {
    AL_LIMIT_TIMEOUT_MS = 0,    /* wall clock; default 30000 -> TIMEOUT */
    AL_LIMIT_CPU_MS,            /* worker CPU time; unless set, the timeout -> CPU_LIMIT */
    AL_LIMIT_MEMORY_BYTES,      /* guest heap; default 64 MiB -> MEMORY_LIMIT */
    AL_LIMIT_STACK_BYTES,       /* guest stack; default 2 MiB, at most 64 MiB -> STACK_OVERFLOW */
    AL_LIMIT_SOURCE_BYTES,      /* source text; default 256 KiB -> SOURCE_TOO_LARGE */
    AL_LIMIT_RESULT_BYTES,      /* encoded result; default 1 MiB -> OUTPUT_LIMIT */
    AL_LIMIT_CONSOLE_BYTES,     /* all console text; default 64 KiB -> OUTPUT_LIMIT */
    AL_LIMIT_HOST_ARGS_BYTES,   /* encoded arguments of one host call; default 1 MiB -> BRIDGE_LIMIT
                                 */
    AL_LIMIT_HOST_OUTPUT_BYTES, /* one host call's answer; default 4 MiB -> BRIDGE_LIMIT */
    AL_LIMIT_HOST_CALLS,        /* host calls per run; default 256 -> BRIDGE_LIMIT */
    AL_LIMIT_IN_FLIGHT,         /* unanswered host calls at once; default 32 -> BRIDGE_LIMIT */
    AL_LIMIT_CONTINUATION_BYTES, /* a continuation token; default 32 MiB. A larger new one ->
                                    OUTPUT_LIMIT, a larger one to resume -> PROTOCOL_ERROR */
    AL_LIMIT_COUNT_
};

/* The default of a limit, or 0 for an unknown one. */
AL_API uint64_t al_limit_default(enum al_limit which);
/* "timeout", "cpu", "memory", "stack", "source", "result", "console", "host-args",
 * "host-output", "host-calls", "in-flight", "continuation"; NULL for an unknown limit. */
AL_API const char *al_limit_name(enum al_limit which);

/* Parses "KEY=VALUE" as the CLI's --limit takes it: durations "250ms", "2s" or plain ms;
 * sizes "4096", "64K", "64M", "1G" (powers of 1024); counts plain. On success writes
 * *ret_which and *ret_value. AL_CONFIG_ERROR for an unknown key, a malformed or zero value,
 * or an overflow; the message names the key. */
AL_NODISCARD AL_API enum al_code al_limit_parse(const char *key_value, enum al_limit *ret_which,
                                                uint64_t *ret_value, struct al_error *reterr);

/* ---------------------------------------------------------------- host functions */

struct al_call;

/*
 * A host function. Called on the thread driving its run - the thread in al_run, or the runner's
 * event thread for a run started with al_run_start - with a call handle the function now
 * owns. It must complete the call exactly once with al_call_return or al_call_throw - at once,
 * or later from any thread. The handle is freed by that completion and must not be touched
 * after it. A call completed after its run has ended is accepted and discarded, so a late
 * answer is always safe; a call never completed leaks the handle.
 *
 * The callback must not block for long: the run's deadlines are enforced by the same thread.
 * Slow work belongs on another thread that completes the call when done.
 */
typedef void al_host_fn(struct al_call *call, void *userdata);

/* Flags of al_config_add_host. */
#define AL_HOST_SYNC                                                        \
    1u /* the guest call blocks and returns the value instead of a Promise; \
          applies to the whole group (every function of a group must agree) */

/* The function's full name, "group.fn". Valid until the call is completed. */
AL_API const char *al_call_name(const struct al_call *call);
/* The guest's arguments: a boundary-JSON array, NUL-terminated, *ret_len (if not NULL) set to
 * its length. Valid until the call is completed. */
AL_API const char *al_call_args(const struct al_call *call, size_t *ret_len);
/* 1-based sequence number of the call within its run. */
AL_API uint32_t al_call_seq(const struct al_call *call);
/* The line (1-based, of the text the caller passed: TypeScript stripping keeps lines) of the
 * run's source whose explicit call - f(), o.m(), f(...a) - made this call, as the engine
 * positions that call (the line its argument list ends on); 0 when the call was made any
 * other way (a getter, a coercion, .call/.apply/Reflect.apply, a bound function, a promise
 * job, another module's code), so it is never a line the guest chose. */
AL_API uint32_t al_call_line(const struct al_call *call);
/* The id of the call's run (al_run_opts_set_run_id, or the one airlock chose), NUL-terminated.
 * Valid until the call is completed. */
AL_API const char *al_call_run_id(const struct al_call *call);
/* The userdata of the call's run (al_run_opts_set_userdata; NULL when none was set), so one
 * host function can serve many tenants without thread-locals. */
AL_API void *al_call_run_userdata(const struct al_call *call);
/* 1 once the call's run has ended - completed, failed, cancelled (al_run_cancel) or past a
 * limit - so that nobody will read its answer; 0 while the run waits for it. A host function
 * doing slow work may poll it from any thread and stop early; it must still complete the
 * call, and that late answer is discarded. */
AL_API int al_call_cancelled(const struct al_call *call);

/* Completes the call with a boundary-JSON value (len bytes, need not be NUL-terminated).
 * json == NULL or len == 0 means `undefined`. A value that is not valid boundary JSON makes
 * the guest's call throw an Error saying so; a value above the host-output limit fails the run
 * with BRIDGE_LIMIT. Frees the call. */
AL_API void al_call_return(struct al_call *call, const char *json, size_t len);
/* Completes the call by throwing: the guest sees an Error whose message is `message` (NULL:
 * "host function failed"); uncaught, the run fails with HOST_FUNCTION_ERROR. Frees the call. */
AL_API void al_call_throw(struct al_call *call, const char *message);
/* As al_call_throw, but the guest sees a TypeError: for arguments the host refuses by their
 * type or shape before doing anything (NULL: "host function called with bad arguments"). */
AL_API void al_call_throw_type_error(struct al_call *call, const char *message);

/*
 * Completes the call by interrupting the run for a person's decision (docs/continuations.md).
 * `payload_json` (boundary JSON, len bytes; NULL or 0: undefined) tells the person what is
 * asked. The guest's call stays pending; once nothing else is in flight the run ends
 * AL_STATUS_INTERRUPTED with every interruption of the run and a continuation to resume it.
 * Only asynchronous functions can interrupt: interrupting an AL_HOST_SYNC call fails the run
 * with PROTOCOL_ERROR, and so does a payload that is not valid boundary JSON. A runner without
 * a continuation key (al_config_set_continuation_key) fails the run with CONFIG_ERROR.
 * Frees the call.
 */
AL_API void al_call_interrupt(struct al_call *call, const char *payload_json, size_t len);

/*
 * The resume context of a call: when a resumed run invokes a function again for an interruption
 * the person resolved, these give the interruption's id, its payload and the resolution (boundary
 * JSON, NUL-terminated); all three are NULL for an ordinary call. The function decides what
 * happens: return the resolution, perform the approved action (the id is a stable idempotency
 * key), throw, or interrupt again (the id is kept). Valid until the call is completed.
 */
AL_API const char *al_call_interruption_id(const struct al_call *call);
AL_API const char *al_call_resume_payload(const struct al_call *call, size_t *ret_len);
AL_API const char *al_call_resolution(const struct al_call *call, size_t *ret_len);

/* ---------------------------------------------------------------- config and runner */

struct al_config;
struct al_runner;

/* A config with every default. NULL when out of memory. */
AL_API struct al_config *al_config_new(void);
/* Frees a config; NULL is fine. */
AL_API void al_config_free(struct al_config *config);

/* Sets a limit. AL_CONFIG_ERROR for an unknown limit, a zero value, or a value above the
 * limit's maximum: stack 64 MiB; source, result, console, host-args, host-output 64 MiB; heap
 * 1 TiB; durations one year; counts 2^24. */
AL_NODISCARD AL_API enum al_code al_config_set_limit(struct al_config *config, enum al_limit which,
                                                     uint64_t value);

/*
 * Registers host function `name` = "group.fn": the guest sees a frozen global object `group`
 * whose own property `fn` calls `fn`. Group and function names are JavaScript identifiers
 * (ASCII letters, digits, _ and $; not starting with a digit); names that are not own data
 * (`constructor`, `__proto__`, `toString`, `valueOf`, `hasOwnProperty`, `then`, ...) and names of
 * existing globals (`Math`, `console`, ...) are refused. `flags` is 0 or AL_HOST_SYNC.
 * AL_CONFIG_ERROR for a bad or duplicate name, a NULL fn, or sync flags that disagree within a
 * group; AL_INTERNAL_ERROR when out of memory. `userdata` is passed to every call as is.
 */
AL_NODISCARD AL_API enum al_code al_config_add_host(struct al_config *config, const char *name,
                                                    al_host_fn *fn, void *userdata, unsigned flags);

/* Path of the airlock-worker executable. Default: $AIRLOCK_WORKER if set, else the first that
 * exists of "airlock-worker" beside the running executable, "../libexec/airlock/airlock-worker"
 * beside the file holding libairlock (libairlock.so, or the executable it is linked into), and
 * the libexec of the prefix libairlock was built for (`make install`). AL_CONFIG_ERROR for NULL
 * or "". */
AL_NODISCARD AL_API enum al_code al_config_set_worker_path(struct al_config *config,
                                                           const char *path);

#define AL_WARM_WORKERS_MAX 64

/* How many workers the runner keeps started ahead of time (default 1; 0 starts each run's
 * worker when the run starts). A warm worker takes process start-up (exec, dynamic loading)
 * off the run's critical path; a background thread of the runner starts replacements. Each
 * worker still serves exactly one run. AL_CONFIG_ERROR above AL_WARM_WORKERS_MAX. */
AL_NODISCARD AL_API enum al_code al_config_set_warm_workers(struct al_config *config,
                                                            unsigned count);

/* Runs guests WITHOUT the worker's seccomp filter (allow = 1). By default a run whose worker
 * cannot apply its filter fails with AL_CONFIG_ERROR; with this, workers start without the
 * filter and al_stats.jailed says so. For machines whose kernel refuses seccomp, and for
 * debugging; never for untrusted code. */
AL_NODISCARD AL_API enum al_code al_config_set_unsafe_no_jail(struct al_config *config, int allow);

/* Checks this machine's worker jail: starts the configured worker in report mode, which applies
 * the jail exactly as a worker does, and returns its report (one "layer: state" line each,
 * NUL-terminated, at most cap bytes) in `report`. *ret_jailed is 1 when the seccomp filter is
 * active. AL_CONFIG_ERROR when the worker cannot be found, AL_INTERNAL_ERROR when it cannot be
 * started. */
AL_NODISCARD AL_API enum al_code al_doctor(const struct al_config *config, char *report, size_t cap,
                                           int *ret_jailed, struct al_error *reterr);

/* At most `max_runs` runs of a runner at once (0, the default: no limit). A run beyond it waits
 * in a queue of at most `max_queue` callers (first come, first served); beyond that al_run
 * returns at once a failed result with AL_CONCURRENCY_LIMIT. max_queue 0: never wait. */
AL_NODISCARD AL_API enum al_code
al_config_set_max_concurrency(struct al_config *config, unsigned max_runs, unsigned max_queue);
/* How long a run waits in that queue, in ms, before al_run gives up with a failed result with
 * AL_CONCURRENCY_LIMIT (0, the default: as long as it takes; at most one year). The wait is not
 * part of the run's timeout. */
AL_NODISCARD AL_API enum al_code al_config_set_queue_timeout(struct al_config *config,
                                                             uint64_t timeout_ms);

/* Whether the runner's own threads, the event thread of al_run_start (`airlock-loop`) and the
 * warm-worker thread (`airlock-pool`), ask Linux for a short scheduling slice of 0.5 ms
 * (enabled non-zero) or keep the kernel's default slice (0, the default). Each of them runs
 * briefly and hands a run on while workers keep the processors busy; on the EEVDF scheduler of
 * Linux 6.12 and later a thread that wakes meanwhile may wait for a worker's slice (0.7-3 ms by
 * default) before it runs, and with the short slice it runs at once. Off by default: the gain
 * measured so far (a fraction of a millisecond a run) was within noise. Taken once, when each
 * thread starts; no privilege needed, policy and nice value kept. Needs Linux 6.12 or later
 * (EEVDF with a slice per thread): on older kernels, and for a thread of a real-time or idle
 * policy, it is a no-op. The threads also take SCHED_FLAG_RESET_ON_FORK, so workers never
 * inherit the short slice: what they create (a worker started without the zygote, a process a host
 * function starts) begins with the default slice, at nice 0 if the application's nice value was
 * negative, and without a real-time policy; and a host function that changes the event
 * thread's own policy must keep SCHED_RESET_ON_FORK unless it has CAP_SYS_NICE.
 * AL_CONFIG_ERROR for a NULL config. */
AL_NODISCARD AL_API enum al_code al_config_set_short_slice(struct al_config *config, int enabled);

/* ---------------------------------------------------------------- continuations */

#define AL_CONTINUATION_KEY_MIN  32      /* bytes of a continuation secret */
#define AL_CONTINUATION_KEYS_MAX 8       /* the signing key plus older verification keys */
#define AL_CONTINUATION_SKEW_MS  60000   /* a token issued this far in the future is still taken */
#define AL_CONTINUATION_TTL_MS   3600000 /* default lifetime of a continuation: 1 h */

/* The secret that signs new continuations (HMAC-SHA-256) and verifies them; at least
 * AL_CONTINUATION_KEY_MIN bytes, copied. Setting it again replaces it. AL_CONFIG_ERROR for a
 * short secret. */
AL_NODISCARD AL_API enum al_code al_config_set_continuation_key(struct al_config *config,
                                                                const void *secret, size_t len);
/* An older secret still accepted when verifying (key rotation), never used to sign. At most
 * AL_CONTINUATION_KEYS_MAX - 1 of them. */
AL_NODISCARD AL_API enum al_code al_config_add_verification_key(struct al_config *config,
                                                                const void *secret, size_t len);
/* Lifetime of new continuations in ms (default AL_CONTINUATION_TTL_MS, at most one year). */
AL_NODISCARD AL_API enum al_code al_config_set_continuation_ttl(struct al_config *config,
                                                                uint64_t ttl_ms);
/* Replaces the runner's continuation keys by config's (al_config_set_continuation_key and
 * al_config_add_verification_key): the next continuation is signed with its signing key, and a
 * resume verifies under its keys only. Any thread, while runs go on; a run that is encoding or
 * verifying a continuation finishes under the keys it began with. AL_CONFIG_ERROR for a NULL
 * runner or config, or a config without a signing key, or a runner made without continuation
 * keys (it has none to replace); AL_INTERNAL_ERROR out of memory (the old keys stay). */
AL_NODISCARD AL_API enum al_code al_runner_set_continuation_keys(struct al_runner *runner,
                                                                 const struct al_config *config,
                                                                 struct al_error *reterr);

/*
 * The stored form: continuations live in a store and the application hands out an opaque id
 * that can be resumed at most once. An application store implements these operations (any
 * thread may call them, concurrently); al_store_file_new is the file-backed one. Ids are at
 * most AL_STORE_ID_MAX bytes of [A-Za-z0-9_-]. Every operation returns AL_OK, or
 * AL_PROTOCOL_ERROR when the id is unknown, expired or not in the state the operation needs,
 * or AL_INTERNAL_ERROR for a storage failure, with a message in *reterr.
 */
#define AL_STORE_ID_MAX 64
struct al_store {
    /* Stores `data` under a new id, until expires_ms (ms since the epoch). */
    enum al_code (*put)(struct al_store *store, const char *id, const void *data, size_t len,
                        int64_t expires_ms, struct al_error *reterr);
    /* Takes exclusive hold of a stored, unexpired, unclaimed id and returns its data
     * (malloc'd; the caller frees it). Of two concurrent claims of one id, exactly one wins. */
    enum al_code (*claim)(struct al_store *store, const char *id, void **ret_data, size_t *ret_len,
                          struct al_error *reterr);
    /* Ends a claimed id for good: it can never be claimed again. */
    enum al_code (*consume)(struct al_store *store, const char *id, struct al_error *reterr);
    /* Gives a claimed id back, as if it had never been claimed. */
    enum al_code (*release)(struct al_store *store, const char *id, struct al_error *reterr);
    /* Frees the store. */
    void (*destroy)(struct al_store *store);
};

/* A store keeping one file per continuation in `dir` (created 0700 if missing). Claims are
 * atomic renames, so any number of processes may share the directory. A directory writable by
 * group or others is refused with CONFIG_ERROR (they could plant or copy continuations); a
 * claimed entry that is not a regular file (a symbolic link, a FIFO) is refused, never read. */
AL_NODISCARD AL_API enum al_code al_store_file_new(const char *dir, struct al_store **ret_store,
                                                   struct al_error *reterr);
/* Frees a store made by al_store_file_new or an application (calls its destroy); NULL is fine. */
AL_API void al_store_free(struct al_store *store);
/* Makes runs keep their continuations in `store` (borrowed: it must outlive the runners made
 * from this config) and hand out ids instead of tokens; a resume then takes an id only. NULL
 * goes back to tokens. */
AL_API void al_config_set_store(struct al_config *config, struct al_store *store);

/* ---------------------------------------------------------------- ES modules */

/*
 * The module loader (docs/modules.md): how a guest's `import` (static, dynamic `import()`,
 * cyclic) finds its modules. Both are host functions in every way - called with a call handle,
 * answered at once or later from any thread, counted as host calls, recorded in continuations
 * and replayed - registered under the hidden names "#modules.resolve" and "#modules.load":
 *   resolve  args ["specifier", "referrer"] -> the module's canonical name (a JSON string);
 *            each canonical name is loaded once per run
 *   load     args ["name"] -> its source text (a JSON string); a name ending in ".ts" is
 *            TypeScript. At most the source limit, else the run fails SOURCE_TOO_LARGE.
 * Throwing (al_call_throw) makes the guest's import fail with that message: say what is wrong
 * without host paths. `identity` names the loader (e.g. "dir:v1"); continuations are bound to
 * it. AL_CONFIG_ERROR for a NULL function or identity, or a second loader.
 */
AL_NODISCARD AL_API enum al_code al_config_set_module_loader(struct al_config *config,
                                                             al_host_fn *resolve, al_host_fn *load,
                                                             void *userdata, const char *identity);

/* Snapshots a config into a runner. AL_CONFIG_ERROR when the worker is not executable (the
 * message names the path), AL_INTERNAL_ERROR when out of memory. */
AL_NODISCARD AL_API enum al_code al_runner_new(const struct al_config *config,
                                               struct al_runner **ret_runner,
                                               struct al_error *reterr);
/* Frees a runner, killing its warm workers; NULL is fine. No al_run may be in progress; runs
 * started with al_run_start that are not over yet are cancelled, and their results delivered,
 * before it returns. Called from a host function or callback of one of the runner's own
 * asynchronous runs (on its event thread), it does nothing: that thread cannot wait for
 * itself. */
AL_API void al_runner_free(struct al_runner *runner);
/* How many started workers wait for a run at this moment (0 up to al_config_set_warm_workers'
 * count; the pool thread refills them in the background). For monitoring: the figure may be
 * stale by the time it is read. */
AL_API unsigned al_runner_warm_workers(const struct al_runner *runner);

/* ---------------------------------------------------------------- one run */

struct al_run_opts;

/* Options with no source, no overrides and a random seed. NULL when out of memory. */
AL_API struct al_run_opts *al_run_opts_new(void);
AL_API void al_run_opts_free(struct al_run_opts *opts);
/* The source text (len bytes, UTF-8, copied). `filename` is the name stack traces use:
 * "run.js" when NULL; at most AL_FILENAME_MAX bytes, else AL_CONFIG_ERROR.
 * AL_INTERNAL_ERROR when out of memory. */
#define AL_FILENAME_MAX 255
AL_NODISCARD AL_API enum al_code al_run_opts_set_source(struct al_run_opts *opts, const char *src,
                                                        size_t len, const char *filename);
/* Overrides a runner limit for this run; same rules as al_config_set_limit. */
AL_NODISCARD AL_API enum al_code al_run_opts_set_limit(struct al_run_opts *opts,
                                                       enum al_limit which, uint64_t value);
/* Determinism: Math.random is a PRNG seeded with `seed`; the guest's clock (Date.now(),
 * new Date()) starts at `clock_ms` (ms since the epoch) and advances only when a host call is
 * answered, to the time of that answer. Without this call, a random seed and the current time
 * are used; both are reported in the result. A clock beyond +-AL_CLOCK_MAX_MS (the range of a
 * JavaScript Date) fails the run with CONFIG_ERROR. */
#define AL_CLOCK_MAX_MS 8640000000000000LL
AL_API void al_run_opts_set_seed(struct al_run_opts *opts, uint64_t seed);
AL_API void al_run_opts_set_clock(struct al_run_opts *opts, int64_t clock_ms);

/* What the source is (default AL_SOURCE_BODY): one of the first two, optionally or-ed with
 * AL_SOURCE_TYPESCRIPT. */
enum al_source_type {
    AL_SOURCE_BODY = 0,   /* a function body: top-level await and return; the value is returned */
    AL_SOURCE_MODULE = 1, /* an ES module: the value is its default export (awaited when it is a
                             promise); imports go through the module loader */
    AL_SOURCE_TYPESCRIPT = 0x100, /* TypeScript: the worker strips the types, keeping every line
                                     and column (docs/typescript.md); a construct it cannot strip
                                     fails the run with USER_ERROR naming it and NAME:LINE:COL */
};
/* AL_CONFIG_ERROR for anything else. */
AL_NODISCARD AL_API enum al_code al_run_opts_set_source_type(struct al_run_opts *opts,
                                                             unsigned type);

/* The application context a continuation is bound to: any bytes the application chooses
 * (tenant, user, policy version, ...; the CLI passes JSON), compared byte for byte as a SHA-256
 * digest. Default: empty. */
AL_NODISCARD AL_API enum al_code al_run_opts_set_context(struct al_run_opts *opts,
                                                         const char *context, size_t len);
/* The audience a continuation is bound to: default "airlock", at most 255 bytes. */
AL_NODISCARD AL_API enum al_code al_run_opts_set_audience(struct al_run_opts *opts,
                                                          const char *audience);
/* Resumes from a continuation (a token, or an id when the runner has a store) instead of
 * starting fresh. The source and its type (al_run_opts_set_source_type), host functions,
 * audience and context must be those the continuation was made with; its seed and clock are
 * used. A stored continuation resumes only by its id from its store, never as a token. A
 * continuation that is not valid for this run fails the run with PROTOCOL_ERROR, and no host
 * function is invoked. */
AL_NODISCARD AL_API enum al_code al_run_opts_set_resume(struct al_run_opts *opts,
                                                        const char *continuation, size_t len);
/* Resolves interruption `id` with a boundary-JSON value. A resume needs at least one; an id
 * the continuation does not hold, or one given twice, fails the run with CONFIG_ERROR. */
AL_NODISCARD AL_API enum al_code
al_run_opts_add_resolution(struct al_run_opts *opts, const char *id, const char *json, size_t len);
/* As al_run_opts_add_resolution, naming the interruption by the id of the call that interrupted
 * (al_result_interruption_call) instead of its interruption id, for an application that shows
 * its own ids. AL_CONFIG_ERROR for call 0; a call with no pending interruption fails the run
 * with CONFIG_ERROR, as an unknown id does. */
AL_NODISCARD AL_API enum al_code al_run_opts_add_resolution_for_call(struct al_run_opts *opts,
                                                                     uint32_t call,
                                                                     const char *json, size_t len);

/* The level of a console entry (console.log, .info, .warn, .error, .debug). */
enum al_console_level {
    AL_CONSOLE_LOG = 0,
    AL_CONSOLE_INFO,
    AL_CONSOLE_WARN,
    AL_CONSOLE_ERROR,
    AL_CONSOLE_DEBUG,
};

/* Host functions of this run only, in addition to the runner's: same names and rules as
 * al_config_add_host (AL_CONFIG_ERROR for a bad or duplicate name here). A name the runner has
 * too, or a group whose AL_HOST_SYNC flag disagrees with the runner's functions of that group,
 * fails the run with CONFIG_ERROR. `userdata` is passed to every call of `fn`. A continuation
 * binds the manifest of every function the run had, so a resume must give the same ones. */
AL_NODISCARD AL_API enum al_code al_run_opts_add_host(struct al_run_opts *opts, const char *name,
                                                      al_host_fn *fn, void *userdata,
                                                      unsigned flags);
/* A pointer of the application's for this run: every host call of the run returns it from
 * al_call_run_userdata (the server routes a call to its tenant and connector with it). */
AL_API void al_run_opts_set_userdata(struct al_run_opts *opts, void *userdata);
/* The run's id, as al_call_run_id, al_result_run_id and events give it: 1 to AL_RUN_ID_MAX
 * bytes of [A-Za-z0-9._:-], copied; else AL_CONFIG_ERROR. Default: 32 random hex digits. */
#define AL_RUN_ID_MAX 64
AL_NODISCARD AL_API enum al_code al_run_opts_set_run_id(struct al_run_opts *opts, const char *id);

/* Events of a run while it runs, so a server can stream progress. Strings are borrowed for the
 * duration of the callback; texts are valid UTF-8 and carry their length (they may hold NUL). */
enum al_event_kind {
    AL_EVENT_CONSOLE = 0,      /* a console entry: level, text */
    AL_EVENT_CALL_START = 1,   /* a host function is invoked: seq, function, args */
    AL_EVENT_CALL_END = 2,     /* its outcome reached the run: seq, function, outcome,
                                  duration_us, and for AL_CALL_THREW the message in text */
    AL_EVENT_INTERRUPTION = 3, /* the run ended interrupted: one event per interruption, in call
                                  order: interruption_id, seq (the interrupted call's),
                                  function, args, payload in text */
};
enum al_call_outcome {
    AL_CALL_RETURNED = 0,
    AL_CALL_THREW = 1,
    AL_CALL_INTERRUPTED = 2,
};
struct al_event {
    enum al_event_kind kind;
    const char *run_id;
    enum al_console_level level; /* AL_EVENT_CONSOLE */
    const char *text;            /* see the kinds; "" when none */
    size_t text_len;
    uint32_t seq;         /* the call's al_call_seq (calls, interruptions) */
    const char *function; /* "group.fn" (calls, interruptions); "" otherwise */
    const char *args;     /* boundary-JSON array (CALL_START, INTERRUPTION); "" otherwise */
    size_t args_len;
    enum al_call_outcome outcome; /* CALL_END */
    uint64_t duration_us;        /* CALL_END: from the invocation to the outcome reaching the run */
    const char *interruption_id; /* INTERRUPTION; "" otherwise */
};
/*
 * Called on the thread driving the run (as host functions are), in order, while the run runs;
 * it must return quickly (copy what it needs). Calls a resumed run answers from its
 * continuation never reach the host and have no events. The result still carries everything.
 */
typedef void al_event_fn(const struct al_event *event, void *userdata);
/* Sets (fn != NULL) or clears the run's event callback. */
AL_API void al_run_opts_set_event_callback(struct al_run_opts *opts, al_event_fn *fn,
                                           void *userdata);

/* The guest's clock (Date.now(), new Date()) after each host answer: AL_CLOCK_WALL (default)
 * moves it to the wall time of the answer; AL_CLOCK_LOGICAL moves it by exactly `step_ms`
 * (at least 1) per answer, so a guest cannot time anything with it, and a run with a fixed
 * seed and start (al_run_opts_set_seed, al_run_opts_set_clock) sees the same clock every time.
 * AL_CONFIG_ERROR for an unknown mode or a zero step. */
enum al_clock_mode {
    AL_CLOCK_WALL = 0,
    AL_CLOCK_LOGICAL = 1,
};
AL_NODISCARD AL_API enum al_code
al_run_opts_set_clock_mode(struct al_run_opts *opts, enum al_clock_mode mode, uint64_t step_ms);

/*
 * The journal (docs/journal.md): every answer a host function gave the run, in the order the
 * guest received them, so that a run whose process died can start again from it and go on where
 * it was without calling the host again for the calls it has. A journal is exactly-once for
 * answered calls only: a call the host was working on when the process died is not in it and is
 * invoked again.
 */
enum al_journal_kind {
    AL_JOURNAL_VALUE = 0,      /* the call returned a value */
    AL_JOURNAL_THROW = 1,      /* it threw: the guest saw an Error */
    AL_JOURNAL_THROW_TYPE = 2, /* it threw a TypeError (al_call_throw_type_error) */
};
struct al_journal_entry {
    uint32_t position;       /* 1-based: the order in which answers were delivered to the guest,
                                across every leg of a run resumed from a continuation */
    uint32_t call;           /* the call's id (al_call_seq) */
    const char *function;    /* "group.fn", NUL-terminated */
    uint8_t args_sha256[32]; /* SHA-256 of the call's arguments (the boundary-JSON array that
                                al_call_args gives) */
    enum al_journal_kind kind;
    int sync;            /* 1: a synchronous (AL_HOST_SYNC) call, answered where it was made */
    int64_t clock_ms;    /* the guest clock the answer set (Date.now() after it) */
    const char *payload; /* VALUE: boundary JSON, empty for undefined; THROW*: the message.
                            Not NUL-terminated in general: `len` bytes */
    size_t len;
};
enum al_journal_verdict {
    AL_JOURNAL_DELIVER = 0, /* deliver the answer now */
    AL_JOURNAL_HOLD = 1,    /* hold it until al_run_journal_release */
    AL_JOURNAL_FAIL = 2,    /* the application could not keep it: the run fails */
};
/*
 * Called with each answer just before it is delivered to the guest, in delivery order, exactly
 * once per answered call: answers replayed from a journal or from a continuation were journaled
 * by the run that first received them and are not seen again; an interruption is not an answer
 * and is not journaled. Called on the thread driving the run, as host functions are: it must not
 * block. `entry` and its strings are borrowed for the duration of the callback.
 * DELIVER: the answer goes to the guest now (after any answer still held before it).
 * HOLD: it, and every answer after it, waits until al_run_journal_release(run, p) with
 * p >= entry->position - from any thread, for instance once the application has made the entry
 * durable (group commit). Cancellation and the run's deadlines still end a run that is held.
 * HOLD needs a handle to release with, so only runs started with al_run_start may hold: from a
 * run of al_run it fails the run with CONFIG_ERROR.
 * FAIL: the application could not make the entry durable (its store failed): the run fails with
 * INTERNAL_ERROR and the answer never reaches the guest. Any other value fails it with
 * CONFIG_ERROR.
 */
typedef enum al_journal_verdict al_journal_fn(const struct al_journal_entry *entry, void *userdata);
/* Sets (fn != NULL) or clears the run's journal callback. */
AL_API void al_run_opts_set_journal(struct al_run_opts *opts, al_journal_fn *fn, void *userdata);
/*
 * Starts the run from a journal: add its entries in position order (each is copied). Every
 * entry is answered to the guest in its position with its clock, and never reaches the host
 * (stats.host_calls does not count it; the host-calls limit counts every call the guest makes,
 * as it does for a resumed continuation). Each must match the call the guest makes - its id,
 * function, argument digest and sync flag - or the run fails with PROTOCOL_ERROR, "the run
 * diverges at call K from its journal" (K the call's id), before that call reaches the host; so
 * does a run that ends, or waits, without making every journaled call. Calls the journal does
 * not have are invoked live once every entry has been delivered, and the journal callback sees
 * their answers from position n+1. A journal gives correct results only when the run has the
 * same source and type, host functions, filename, limits, seed and clock (al_run_opts_set_seed,
 * al_run_opts_set_clock, and the clock mode) as the run that wrote it; the seed and the clock
 * must be set (CONFIG_ERROR otherwise).
 * Checked when the run starts, failing it with CONFIG_ERROR before any host call: positions
 * that are not exactly 1, 2, ... n in the order added (a gap, a duplicate, out of order); a call
 * id given twice, 0, or above the host-calls limit; a clock beyond AL_CLOCK_MAX_MS; a journal
 * and a continuation (al_run_opts_set_resume) together. (A VALUE payload is delivered as a host
 * gave it: one that is not boundary JSON makes the guest's call throw, as it did live.)
 * Here: AL_CONFIG_ERROR for a NULL opts, entry or function, an unknown kind, or a NULL payload
 * with len > 0; AL_INTERNAL_ERROR when out of memory.
 * The run keeps an entry's payload only until it has been delivered; al_run_opts_free frees
 * the options' copy.
 */
AL_NODISCARD AL_API enum al_code
al_run_opts_add_journal_entry(struct al_run_opts *opts, const struct al_journal_entry *entry);

enum al_status {
    AL_STATUS_COMPLETED = 0,
    AL_STATUS_FAILED = 1,
    AL_STATUS_INTERRUPTED = 2, /* waiting for a person: see al_result_interruption */
};

struct al_result;

/*
 * Runs opts' source on a fresh worker and blocks until the run ends. Host callbacks are invoked
 * on this thread. On AL_OK *ret_result holds the result - completed or failed, the guest's
 * failure is a result, not a return code - to free with al_result_free. A non-OK return means
 * no run happened: AL_CONFIG_ERROR (no source), AL_INTERNAL_ERROR (out of memory, no worker
 * could be started: the message names the errno).
 */
AL_NODISCARD AL_API enum al_code al_run(struct al_runner *runner, const struct al_run_opts *opts,
                                        struct al_result **ret_result, struct al_error *reterr);

AL_API void al_result_free(struct al_result *result);
AL_API enum al_status al_result_status(const struct al_result *result);
/* The value of a completed run as boundary JSON (NUL-terminated; "undefined" is the tagged
 * form), NULL for a failed run. Borrowed from the result. */
AL_API const char *al_result_value(const struct al_result *result, size_t *ret_len);

/* Bounds of a failed run's error texts (UTF-8 bytes; longer ones are cut at a character). */
#define AL_ERROR_NAME_MAX    256
#define AL_ERROR_MESSAGE_MAX (64 * 1024)
#define AL_ERROR_STACK_MAX   (64 * 1024)

/* The error of a failed run; AL_OK for a completed one. Strings are borrowed from the result,
 * never NULL ("" when absent). `name` is the guest's error name ("TypeError"), `stack` the
 * guest's stack with frames of the user's source only ("    at f (run.js:3)"). */
AL_API enum al_code al_result_error_code(const struct al_result *result);
AL_API const char *al_result_error_message(const struct al_result *result);
AL_API const char *al_result_error_name(const struct al_result *result);
AL_API const char *al_result_error_stack(const struct al_result *result);

/* "log", "info", "warn", "error", "debug". */
AL_API const char *al_console_level_name(enum al_console_level level);
/* Console entries in call order. The text of entry i (UTF-8, NUL-terminated) and its level;
 * NULL for i out of range. When the console limit tripped, the last entry is cut at a UTF-8
 * boundary and followed by an entry of level warn saying so. */
AL_API size_t al_result_console_count(const struct al_result *result);
AL_API const char *al_result_console_text(const struct al_result *result, size_t i,
                                          enum al_console_level *ret_level, size_t *ret_len);

struct al_stats {
    uint64_t wall_us;           /* from al_run's start to the end of the run */
    uint64_t cpu_us;            /* the worker's CPU time spent on the guest */
    uint64_t peak_memory_bytes; /* the guest heap's high-water mark */
    uint32_t host_calls;        /* host calls that reached the host (a call the guest never
                                   awaited is never sent, see docs/sandbox.md) */
    uint64_t seed;              /* the Math.random seed used */
    int64_t clock_ms;           /* the guest clock's start, ms since the epoch */
    int jailed;                 /* the worker ran under its seccomp filter */
};
AL_API void al_result_stats(const struct al_result *result, struct al_stats *ret_stats);

/* One interruption of an interrupted run. Strings are borrowed from the result; `args` and
 * `payload` are boundary JSON. */
struct al_interruption {
    const char *id;       /* stable across resumes until resolved */
    const char *function; /* "group.fn" */
    const char *args;     /* the guest's arguments, an array */
    const char *payload;  /* what the host function asked */
};
/* Interruptions of an interrupted run, in call order (0 for other runs). */
AL_API size_t al_result_interruption_count(const struct al_result *result);
/* Fills *ret for interruption i; -1 when i is out of range. */
AL_API int al_result_interruption(const struct al_result *result, size_t i,
                                  struct al_interruption *ret);
/* The id of interruption i's call (the al_call_seq of the call that interrupted; stable across
 * resumes), 0 when i is out of range. */
AL_API uint32_t al_result_interruption_call(const struct al_result *result, size_t i);
/* The continuation of an interrupted run (a token, or an id with a store), NULL otherwise. */
AL_API const char *al_result_continuation(const struct al_result *result, size_t *ret_len);

/* The run's id (al_run_opts_set_run_id or the one chosen), NUL-terminated; borrowed. */
AL_API const char *al_result_run_id(const struct al_result *result);

/* The error texts of a failed run with their lengths (valid UTF-8; a lone surrogate the guest
 * made is U+FFFD; they may contain NUL, which the NUL-terminated getters above cut at). */
struct al_error_text {
    const char *name;
    size_t name_len;
    const char *message;
    size_t message_len;
    const char *stack;
    size_t stack_len;
};
AL_API void al_result_error_text(const struct al_result *result, struct al_error_text *ret);

/*
 * Where a run left its journal (al_run_opts_add_journal_entry): the structured form of the
 * message "the run diverges at call K from its journal", so that an application can compare a
 * new source against recorded runs (airlockd's replay of a submitted version does) without
 * parsing text. Digests are SHA-256 of the call's arguments, the boundary-JSON array that
 * al_call_args gives, as in struct al_journal_entry.
 */
struct al_divergence {
    uint32_t call;                    /* K: the id of the call where the run and its journal part */
    const char *expected_function;    /* the journal's entry for call K, "group.fn"; NULL when the
                                         journal has none (the run made a synchronous call the
                                         journal does not have while journaled calls were to come) */
    uint8_t expected_args_sha256[32]; /* with expected_function; zero without */
    const char *got_function;         /* the call K the run made, "group.fn"; NULL when it waited or
                                         ended without making it */
    uint8_t got_args_sha256[32];      /* with got_function; zero without */
};
/* 0 with *ret (may be NULL) filled when the run failed PROTOCOL_ERROR because it diverged from
 * its journal; -1 for any other result (completed, interrupted, another failure - a
 * continuation's divergence included) and for a NULL result. The strings are borrowed from the
 * result. */
AL_API int al_result_divergence(const struct al_result *result, struct al_divergence *ret);

/* ---------------------------------------------------------------- workspaces (docs/workspace.md)
 */

/*
 * A run's files: a tree the guest reaches through the global `workspace` and the module
 * `node:fs/promises`, never a real filesystem (the worker has none). Built from a manifest:
 *
 *   {"version": 1, "root": "/workspace",
 *    "entries": {"README.md": {"type": "file", "content": "..."},
 *                "in":   {"type": "dir"},
 *                "docs": {"type": "local_dir", "mount": "handbook", "prefix": "policies/"},
 *                "lake": {"type": "s3_mount", "mount": "finance-lake", "prefix": "2026/"},
 *                "out/export": {"type": "s3_mount", "mount": "finance-lake",
 *                               "prefix": "reports/", "read_only": false}},
 *    "outputs": ["out/"],
 *    "limits": {"bytes": 67108864, "files": 1000, "file_bytes": 16777216}}
 *
 * Every path is read-only except those under an `outputs` prefix; a mount entry with
 * "read_only": false (it must lie under an outputs prefix) buffers what the guest writes into
 * it until al_workspace_commit. Limits (defaults and maxima in AL_WORKSPACE_*): total bytes of
 * the files (inline and written; mounts not counted), number of files, bytes of one file.
 *
 * Each guest file operation is a host call named "workspace.<op>" ("workspace.readFile", ...):
 * counted against the host-calls limit, seen by the journal callback and recorded in a
 * continuation like any answer, but bounded by the workspace's limits instead of the host-call
 * argument and output limits. The group name `workspace` is reserved.
 *
 * Not thread-safe: one thread at a time, and one run at a time (the run reads and writes it on
 * the thread driving the run, or on a thread of its own when it has mounts).
 */
struct al_workspace;

#define AL_WORKSPACE_BYTES_DEFAULT      (64ull << 20)
#define AL_WORKSPACE_BYTES_MAX          (1ull << 30)
#define AL_WORKSPACE_FILES_DEFAULT      1000u
#define AL_WORKSPACE_FILES_MAX          100000u
#define AL_WORKSPACE_FILE_BYTES_DEFAULT (16ull << 20)
#define AL_WORKSPACE_FILE_BYTES_MAX     (16ull << 20)

/* Validates and builds a workspace from a manifest (len bytes of JSON, the shape above; for
 * local_dir and s3_mount entries, "prefix" is optional and "read_only" defaults to true).
 * AL_CONFIG_ERROR with a message naming the member for anything malformed: an unknown member,
 * a version other than 1, a root that is not an absolute normalized path, an entry path with
 * "..", a writable mount outside the outputs, a limit that is 0 or above its maximum, inline
 * content above the limits. Entries of type local_dir / s3_mount need a mount set with
 * al_workspace_set_mount* before a run uses the workspace, else the run fails CONFIG_ERROR
 * naming the mount. AL_INTERNAL_ERROR when out of memory. Free with al_workspace_free. */
AL_NODISCARD AL_API enum al_code al_workspace_new(const char *manifest, size_t len,
                                                  struct al_workspace **ret,
                                                  struct al_error *reterr);
/* Frees a workspace (NULL is fine); waits for a file operation still running on its thread. */
AL_API void al_workspace_free(struct al_workspace *ws);

enum al_mount_status { AL_MOUNT_OK = 0, AL_MOUNT_NOT_FOUND = 1, AL_MOUNT_ERROR = 2 };
struct al_mount_entry {
    const char *name; /* one path segment */
    uint64_t size;
    int is_dir;
};
typedef void al_mount_list_fn(const struct al_mount_entry *entry, void *list_ud);
#define AL_MOUNT_OPS_VERSION 1
/*
 * A mount's backend. `key` is the object key or relative path: the manifest entry's "prefix"
 * (with a '/' added when it has none) followed by the path below the entry, no leading '/'.
 * The entry's own directory is the prefix itself ("" for no prefix, else ending in '/'); a
 * directory below it has no trailing '/' ("reports/2026"): a backend of objects lists the keys
 * under key + "/" then. Every function may block (network): the lib never calls them on its event
 * thread, but on a thread of the workspace's own (and al_workspace_commit on its caller's). On
 * AL_MOUNT_ERROR they write a message into err (errlen bytes, NUL-terminated) that names no
 * credential; the lib prefixes the mount's name.
 */
struct al_mount_ops {
    unsigned version; /* AL_MOUNT_OPS_VERSION */
    enum al_mount_status (*stat)(void *ud, const char *key, uint64_t *ret_size, int *ret_is_dir,
                                 char *err, size_t errlen);
    /* up to `len` bytes from `offset`; *ret is malloc'd, the lib free()s it */
    enum al_mount_status (*read)(void *ud, const char *key, uint64_t offset, uint64_t len,
                                 char **ret, size_t *ret_len, char *err, size_t errlen);
    /* the direct children of directory `key` */
    enum al_mount_status (*list)(void *ud, const char *key, al_mount_list_fn *each, void *list_ud,
                                 char *err, size_t errlen);
    /* NULL for a read-only backend; used only by al_workspace_commit */
    enum al_mount_status (*write)(void *ud, const char *key, const char *data, size_t len,
                                  char *err, size_t errlen);
    enum al_mount_status (*remove)(void *ud, const char *key, char *err, size_t errlen);
};
/* Serves mount `name` (as the manifest's entries name it) with `ops` and `ud` (borrowed: both
 * must outlive the workspace). Setting a name twice replaces it. AL_CONFIG_ERROR for a NULL
 * argument, an unknown ops version, or a name no entry uses. */
AL_NODISCARD AL_API enum al_code al_workspace_set_mount(struct al_workspace *ws, const char *name,
                                                        const struct al_mount_ops *ops, void *ud);
/* Serves mount `name` from the local directory `dir` (copied): files and directories below it,
 * read through O_NOFOLLOW at every step, so a symbolic link - to /etc or anywhere - answers
 * EACCES. Writable entries (commit) write files below it, creating directories. AL_CONFIG_ERROR
 * for a NULL argument, a name no entry uses, or a `dir` that is not a directory. */
AL_NODISCARD AL_API enum al_code al_workspace_set_mount_local(struct al_workspace *ws,
                                                              const char *name, const char *dir);

/* Replaces the manifest's inline entries (and everything written so far outside mounts) by a
 * snapshot: a tar (ustar, with pax or GNU long names), its members checked as untrusted input -
 * names relative and normalized (no absolute path, no ".."), only regular files and
 * directories (no links, devices, FIFOs), sizes and counts within the manifest's limits, no
 * truncated member, no member colliding with a mount entry. AL_CONFIG_ERROR naming the member
 * (the workspace is then unchanged); AL_INTERNAL_ERROR out of memory. */
AL_NODISCARD AL_API enum al_code al_workspace_load_tar(struct al_workspace *ws, const char *tar,
                                                       size_t len, struct al_error *reterr);
/* The workspace now - inline entries and everything written, names relative to the root,
 * mounts (and what was written into them) excluded - as a tar (ustar, pax headers for long or
 * non-ASCII names), directories before their contents, in path order. *ret is malloc'd
 * (free()), *ret_len its length. AL_INTERNAL_ERROR when out of memory. */
AL_NODISCARD AL_API enum al_code al_workspace_tar(const struct al_workspace *ws, char **ret,
                                                  size_t *ret_len, struct al_error *reterr);

/* Every file operation the guest makes, after it is done (also failed ones, with `error` the
 * code "ENOENT"... or NULL): for the audit. Called on the thread that ran the op (the thread
 * driving the run, or the workspace's own when it has mounts); never for an operation replayed
 * from a journal or a continuation. Strings are borrowed for the duration of the call. */
struct al_workspace_op {
    const char *op;     /* "readFile", "writeFile", ... (the host call's name after "workspace.") */
    const char *path;   /* normalized, relative to the root ("" is the root) */
    uint64_t size;      /* bytes read or written; 0 otherwise */
    const char *sha256; /* hex of the bytes read or written; NULL otherwise */
    const char *error;  /* NULL on success */
};
typedef void al_workspace_op_fn(const struct al_workspace_op *op, void *ud);
/* Sets (fn != NULL) or clears the observer. */
AL_API void al_workspace_set_observer(struct al_workspace *ws, al_workspace_op_fn *fn, void *ud);

/* The files under the manifest's outputs, in path order: `mount` is the mount's name for a
 * file written into a writable mount entry (then `key` its object key), NULL otherwise.
 * Strings and data are borrowed for the duration of the call. */
struct al_workspace_file {
    const char *path;
    const char *data;
    size_t len;
    const char *sha256; /* hex */
    const char *mount;
    const char *key;
};
typedef void al_workspace_file_fn(const struct al_workspace_file *file, void *ud);
AL_API void al_workspace_outputs(const struct al_workspace *ws, al_workspace_file_fn *fn, void *ud);

/* Writes the files written into writable mounts (read_only: false under an outputs prefix) to
 * their backends, all or nothing: what each key holds is read first (stat, read; an object
 * above file_bytes, or more than `bytes` of them in all, fails the commit before any write),
 * and after a failed write the objects replaced are written back and the ones made removed;
 * the error (AL_INTERNAL_ERROR) names the mount and the path. The application calls it when the
 * run completed and before it answers; never for a failed or cancelled run. AL_OK with
 * nothing to write. What it replaced is kept until al_workspace_rollback or the workspace's
 * end (at most the workspace's `bytes`). */
AL_NODISCARD AL_API enum al_code al_workspace_commit(struct al_workspace *ws,
                                                     struct al_error *reterr);

/* Undoes the last successful al_workspace_commit: the objects it replaced are written back and
 * the ones it made removed. For an application that learns only after the commit that the run
 * must not count (cancelled while its writes were in flight): commit keeps what it replaced
 * until this call or al_workspace_free. AL_OK (also with nothing to undo), or
 * AL_INTERNAL_ERROR when a backend failed to put an object back (the others are put back). */
AL_NODISCARD AL_API enum al_code al_workspace_rollback(struct al_workspace *ws,
                                                       struct al_error *reterr);

/* The run uses ws (borrowed: it must outlive the run; NULL: no workspace). A run resumed
 * (continuation) or restarted from a journal is given a workspace built the same way (same
 * manifest, snapshot, mounts): the workspace writes the guest made before are applied again as
 * they are replayed, while their answers come from the continuation or the journal. */
AL_NODISCARD AL_API enum al_code al_run_opts_set_workspace(struct al_run_opts *opts,
                                                           struct al_workspace *ws);

/* ---------------------------------------------------------------- asynchronous runs */

/*
 * A run started with al_run_start. It runs on the runner's event thread, which drives every
 * asynchronous run of the runner with one epoll set: a run waiting on a slow host function
 * costs its worker process and a few descriptors, never a thread. Host functions and event
 * callbacks of these runs are called on that thread, so they must not block: slow work goes to
 * another thread that completes the call when done. The event thread keeps the kernel's
 * default scheduling slice unless al_config_set_short_slice asks for a short one (which also
 * changes what its host functions may do with its scheduling policy: see there).
 */
struct al_run;

/* The run is over. Called once, on the runner's event thread; `result` is never NULL and is the
 * callee's to free (al_result_free). A failure that al_run reports as a return code (out of
 * memory, no worker could be started) arrives here as a failed result with that code. The
 * handle stays valid until al_run_release; the callback may call it. */
typedef void al_run_done_fn(struct al_run *run, struct al_result *result, void *userdata);

/*
 * Starts opts' run and returns at once with a handle in *ret_run. `opts` is copied: it may be
 * freed or reused at once. With `done`, the result goes to done(run, result, userdata); with
 * done == NULL it is kept for al_run_wait. Admission (al_config_set_max_concurrency) queues
 * the run without blocking the caller. AL_CONFIG_ERROR for a NULL runner, opts or ret_run, or
 * no source; AL_INTERNAL_ERROR when out of memory or the event thread cannot be started.
 */
AL_NODISCARD AL_API enum al_code al_run_start(struct al_runner *runner,
                                              const struct al_run_opts *opts, al_run_done_fn *done,
                                              void *userdata, struct al_run **ret_run,
                                              struct al_error *reterr);
/*
 * Cancels the run: it ends failed with AL_ABORTED within milliseconds - its worker is killed,
 * even inside a long builtin - and its pending host calls turn al_call_cancelled (their late
 * answers are discarded). A run still waiting for admission leaves the queue. No effect once
 * the run is over. Any thread; async-signal-safe (one atomic store and one write), so a
 * SIGINT handler may call it. The handle must not have been released.
 */
AL_API void al_run_cancel(struct al_run *run);
/* Waits for a run started without `done` and hands its result over (*ret_result, to free with
 * al_result_free); a second wait, a run with `done`, or a wait on the runner's event thread
 * (from a host function or callback, where it would never end) returns AL_CONFIG_ERROR. Never
 * call the blocking al_run from that thread either. */
AL_NODISCARD AL_API enum al_code al_run_wait(struct al_run *run, struct al_result **ret_result,
                                             struct al_error *reterr);
/* The run's id (as al_call_run_id gives it); borrowed from the handle. */
AL_API const char *al_run_id(const struct al_run *run);
/* Lets the answers the journal callback held (AL_JOURNAL_HOLD) go to the guest: those at
 * positions up to `position`, and the answers after them that were not held themselves, in
 * order. Releasing a position twice, or one not held (yet), is harmless: answers at positions up
 * to `position` are never held afterwards. Any thread; no effect once the run is over.
 * AL_CONFIG_ERROR for a NULL run or position 0. The handle must not have been released. */
AL_NODISCARD AL_API enum al_code al_run_journal_release(struct al_run *run, uint32_t position);

/* Gives the handle up; the run goes on (cancel it first to stop it) and its result is still
 * delivered to `done`, or freed when nobody will wait for it. NULL is fine. No other thread may
 * be using the handle (al_run_cancel included) once it is released: an application that
 * cancels from another thread keeps the handle until both are done with it. */
AL_API void al_run_release(struct al_run *run);

#ifdef __cplusplus
}
#endif

#endif /* AIRLOCK_H */
