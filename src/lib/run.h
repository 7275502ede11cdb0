/*
 * run.h - the state of one al_run (run.c: the event loop, the worker, the result). The ledger of
 * host calls, interruptions, continuations and replay is ledger.h's, which run.c consults.
 */
#ifndef AIRLOCK_LIB_RUN_H
#define AIRLOCK_LIB_RUN_H

#include "continuation.h"
#include "internal.h"
#include "ledger.h"

struct console_entry {
    enum al_console_level level;
    char *text;
    size_t len;
};

struct al_result {
    enum al_status status;
    enum al_code code;
    char *value;
    size_t value_len;
    char *name;
    char *message;
    char *stack;
    struct console_entry *console;
    size_t nconsole;
    size_t cap_console;
    struct al_stats stats;
    struct result_interruption *interruptions;
    size_t ninterruptions;
    char *continuation; /* a token or a store id */
    size_t continuation_len;
    size_t name_len; /* lengths of name, message and stack (they may hold NUL) */
    size_t message_len;
    size_t stack_len;
    char run_id[AL_RUN_ID_MAX + 1];
    int diverged;                    /* failed by leaving its journal: */
    struct al_divergence divergence; /* its function names owned */
};

#define RUN_CALL_SEEN ((uint32_t)1 << 31) /* above every line a call may name (< 2^20) */

struct run_state {
    const struct al_runner *runner;
    const struct al_run_opts *opts;
    uint64_t limits[AL_LIMIT_COUNT_];
    /* the run's host table: the runner's, plus the functions of al_run_opts_add_host */
    const struct host_entry *hosts;
    size_t nhosts;
    struct host_entry *own_hosts;  /* the merged table, when the run has functions of its own;
                                      names borrowed from the runner and the options */
    uint8_t manifest[CONT_DIGEST]; /* what a continuation of this run binds */
    uint64_t start_us;             /* monotonic, when the run was asked for */
    int admitted;                  /* holds one of the runner's slots */
    enum al_code rc;               /* not AL_OK: no result (al_run returns it, with err) */
    struct al_error err;
    int64_t last_clock_ms; /* the guest clock of the last answer sent */
    uint64_t wake_at_us;   /* run_step's next deadline, monotonic */
    struct worker_proc proc;
    struct run_link *link;
    struct buf in;
    size_t in_checked; /* frames of `in` before this offset have headers within their caps */
    struct buf out;
    size_t out_off;
    struct al_result *res;
    uint32_t *calls; /* per possible call id: RUN_CALL_SEEN once the worker sent it, with the
                        line of the source that made it (0: not known) */
    uint32_t host_calls;
    uint32_t in_flight;
    uint64_t console_bytes;
    int ready;              /* READY received: the run's wall and CPU clocks start */
    uint64_t ready_us;      /* monotonic */
    uint64_t cpu_base_us;   /* the worker's CPU time at READY (start-up is not the guest's) */
    uint64_t cpu_read_us;   /* when the worker's CPU time was last read (0: never) */
    uint64_t cpu_last_us;   /* its CPU time since READY then (UINT64_MAX: unknown) */
    int done;               /* DONE received or a failure decided */
    int kill;               /* the worker must be killed (it may be alive and misbehaving) */
    uint32_t frames_sent;   /* ANSWER frames written to the worker */
    struct ledger *ledger;  /* host calls, continuations, replay (ledger.h) */
    int can_hold;           /* al_run_start: the journal callback may hold answers */
    uint64_t file_args_max; /* bytes of a workspace operation's arguments (0: no workspace) */
};

/* run.c: one run as steps, driven by al_run on the caller's thread or by loop.c.
 * run_prepare (the result, limits, host table, link), then admission by the driver, then
 * run_launch (ledger, worker, RUN frame), run_step until it returns 1, run_conclude (the
 * worker's end) and run_deliver. A step that fails decides the result; every later phase
 * sees st->res already decided and passes through. Returns of prepare/launch: 0 go on,
 * -1 the run is over. */
int run_prepare(struct run_state *st, struct al_runner *runner, const struct al_run_opts *opts);
int run_launch(struct run_state *st);
/* One pass: what the worker sent, queued answers, writes, deadlines, cancellation. 1: over.
 * Else st->wake_at_us is when to step again at the latest; *ret_busy (may be NULL) is set
 * when a call or answer just went by (another is likely near). */
int run_step(struct run_state *st, int *ret_busy);
int run_wants_write(const struct run_state *st);
void run_conclude(struct run_state *st);
/* The result (*ret_result) or, with rc != AL_OK, none and *reterr; frees what the run held. */
enum al_code run_deliver(struct run_state *st, struct al_result **ret_result,
                         struct al_error *reterr);
/* Fails the result of a run that has no worker (before launch). */
void run_fail_early(struct run_state *st, enum al_code code, const char *msg);
/* Why admission refused (runner_admit's 0 or -1). */
void run_admission_message(const struct al_runner *runner, int adm, char *msg, size_t len);

void run_fail(struct run_state *st, enum al_code code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* Sends an ANSWER frame (and records it). kind: enum wire_answer_kind. */
void run_emit_answer(struct run_state *st, uint32_t id, uint8_t kind, int64_t clock_ms,
                     const char *payload, size_t len);
/* Invokes the host function for call `id` (resume context: `resumed` entry, else NULL). */
void run_invoke_host(struct run_state *st, uint32_t id, uint32_t fn, const char *args,
                     size_t args_len, const struct cont_entry *resumed,
                     const struct resolution *resolution);
int run_is_json(const char *text, size_t len);
/* Sets a failed result without a worker to kill (before it starts, or after DONE). */
void run_fail_result(struct al_result *res, enum al_code code, const char *msg);

#endif
