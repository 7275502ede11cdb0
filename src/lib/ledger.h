/*
 * ledger.h - the ledger of one run's host calls (ledger.c, docs/continuations.md): recording,
 * continuations out, replay in.
 *
 * The ledger decides and never acts: for each event of the run (a call, an answer, an
 * interruption, the worker waiting, DONE) it returns a decision, and run.c - the only one that
 * talks to the worker socket, the host functions and the result - carries it out. It never calls
 * into run.c. After each event run.c also drains ledger_next, which yields the decisions the
 * event made due (recorded answers in their turn, resolved interruptions once the replay has
 * caught up).
 *
 * Journal: a journal replays as a continuation does (ledger_begin loads it in its place); live
 * answers are numbered and, when the journal callback holds them, kept here until released.
 *
 * Memory: a call's argument bytes are kept only while it is pending or interrupted (the token
 * holds their digest), so what the ledger holds for arguments is bounded by the calls in flight;
 * recorded answers are kept up to the continuation limit, past which the run can no longer make a
 * continuation and keeps none.
 */
#ifndef AIRLOCK_LIB_LEDGER_H
#define AIRLOCK_LIB_LEDGER_H

#include "continuation.h"
#include "internal.h"

struct ledger;

/* An interruption of an interrupted run, as the result lists it. */
struct result_interruption {
    char id[CONT_IID_HEX + 1];
    uint32_t call;  /* the interrupted call's id (al_call_seq) */
    char *function; /* owned */
    char *args;     /* owned */
    char *payload;  /* owned */
};

/* Where a run left its journal (al_result_divergence): noted by the decision that failed it. */
struct ledger_divergence {
    uint32_t call;
    char *expected_fn; /* owned; NULL: the journal has no entry for the call */
    uint8_t expected_digest[CONT_DIGEST];
    char *got_fn; /* owned; NULL: the run waited or ended without making the call */
    uint8_t got_digest[CONT_DIGEST];
};

enum ledger_decision {
    LEDGER_NONE = 0,  /* nothing to do */
    LEDGER_INVOKE,    /* invoke the host function: args; `resumed` for a resolved interruption */
    LEDGER_ANSWER,    /* send the worker this answer (recorded, or replayed from the ledger) */
    LEDGER_INTERRUPT, /* tell the worker the call is interrupted; it stays in flight */
    LEDGER_DIVERGED,  /* the replay diverged: fail the run PROTOCOL_ERROR with `message` */
    LEDGER_FAIL,      /* fail the run with `code` and `message` */
};

/* One decision and what carrying it out needs. Pointers are borrowed from the ledger (or from
 * the arguments of the call that produced it) and stay valid until the next ledger_* call. */
struct ledger_action {
    enum ledger_decision what;
    uint32_t id;      /* the call */
    uint32_t fn;      /* INVOKE: index into the run's host table */
    const char *args; /* INVOKE: the guest's argument array */
    size_t args_len;
    const struct cont_entry *resumed;    /* INVOKE of a resolved interruption, else NULL */
    const struct resolution *resolution; /* with `resumed` */
    uint8_t kind;                        /* ANSWER: enum wire_answer_kind */
    int64_t clock_ms;                    /* ANSWER: the guest clock it sets */
    const char *payload;                 /* ANSWER */
    size_t len;
    int held;          /* ANSWER: a live answer that waited (ledger_deliver) */
    enum al_code code; /* FAIL */
    char message[256]; /* DIVERGED, FAIL */
};

/* What DONE made of an interrupted run (ledger_on_done). Owned by the caller. */
struct ledger_outcome {
    int interrupted;    /* the run ends interrupted with these: */
    char *continuation; /* a token, or a store id */
    size_t continuation_len;
    struct result_interruption *interruptions;
    size_t ninterruptions;
    int worker_lied; /* on failure: the worker reported an interruption that did not happen */
};

/* Before the worker starts. Records when the runner has a continuation key, and checks and loads
 * opts' continuation when it resumes one (claiming it first with a store). `manifest`: the digest
 * of the run's host functions; `seed`, `clock_ms`: the fresh run's, replaced by the
 * continuation's when resuming (ledger_seed, ledger_clock). On failure *ret_ledger is still set
 * (ledger_end releases a claim) and reterr says why; nothing was invoked. */
enum al_code ledger_begin(const struct al_runner *runner, const struct al_run_opts *opts,
                          const uint64_t limits[AL_LIMIT_COUNT_],
                          const uint8_t manifest[CONT_DIGEST], uint64_t seed, int64_t clock_ms,
                          struct ledger **ret_ledger, struct al_error *reterr);
int ledger_replaying(const struct ledger *l);
uint64_t ledger_seed(const struct ledger *l);
int64_t ledger_clock(const struct ledger *l);

/* A CALL from the worker, already validated by run.c. `name` (borrowed: it must outlive the
 * ledger) and `sync` describe host function `fn`. Decides INVOKE (a fresh call, or past the
 * ledger), ANSWER (a synchronous call answered from the ledger), INTERRUPT (an interruption left
 * unresolved), NONE (answered or invoked later: ledger_next), DIVERGED or FAIL. */
enum ledger_decision ledger_on_call(struct ledger *l, uint32_t id, uint32_t fn, const char *name,
                                    int sync, const char *args, size_t len,
                                    struct ledger_action *ret);
/* 1 when call `id`, about to be made, will be answered from the continuation or journal being
 * replayed (not invoked): a workspace write it made is then applied again (ws_replay). */
int ledger_will_replay(const struct ledger *l, uint32_t id);
/* What became due: replayed answers in the order they were first sent, then, once the replay
 * has caught up, the invocations of resolved interruptions (of a journal: the calls it does not
 * have), then live answers that waited and may go now. NONE when nothing is. */
enum ledger_decision ledger_next(struct ledger *l, struct ledger_action *ret);
/* An answer run.c is sending the worker (kind: enum wire_answer_kind, not INTERRUPT): recorded.
 * AL_OK, or AL_INTERNAL_ERROR out of memory. */
enum al_code ledger_on_answer(struct ledger *l, uint32_t id, uint8_t kind, int64_t clock_ms,
                              const char *payload, size_t len, struct al_error *reterr);
/* A live answer to call `id` (from the host, not a replay; kind: enum wire_answer_kind, not
 * INTERRUPT) is about to be delivered: *ret gets its journal entry, with the next position
 * (payload and function borrowed). -1 when no such call is pending. */
int ledger_journal(struct ledger *l, uint32_t id, uint8_t kind, int64_t clock_ms,
                   const char *payload, size_t len, struct al_journal_entry *ret);
/* Delivers the answer of journal entry `e` (ledger_journal; `kind` its wire kind): ANSWER now,
 * or NONE when it waits - `hold` (the journal callback held it), or an earlier answer is held -
 * until ledger_release lets it go (ledger_next then yields it); FAIL out of memory. */
enum ledger_decision ledger_deliver(struct ledger *l, const struct al_journal_entry *e,
                                    uint8_t kind, int hold, struct ledger_action *ret);
/* Held answers up to `position` may go. 1 when some may go now (drain ledger_next). */
int ledger_release(struct ledger *l, uint32_t position);
/* A host function interrupted call `id` (keep_iid: the id a resumed interruption keeps).
 * INTERRUPT, NONE (no such pending call), or FAIL. */
enum ledger_decision ledger_on_interrupt(struct ledger *l, uint32_t id, const char *payload,
                                         size_t len, const uint8_t *keep_iid,
                                         struct ledger_action *ret);
/* The worker waits (replay only); `caught_up`: it has applied every answer sent. NONE (then
 * drain ledger_next) or DIVERGED. */
enum ledger_decision ledger_on_idle(struct ledger *l, int caught_up, struct ledger_action *ret);
/* Before a host function runs: a claimed stored continuation is consumed. */
enum al_code ledger_before_host(struct ledger *l, struct al_error *reterr);
/* The worker's DONE arrived with `code` (interrupted: it said the run is interrupted). Checks the
 * replay finished; for an interrupted run builds the interruptions and the continuation into
 * *ret (zeroed first). AL_OK, or the code the run fails with (reterr says why). */
enum al_code ledger_on_done(struct ledger *l, int interrupted, enum al_code code,
                            struct ledger_outcome *ret, struct al_error *reterr);
void ledger_outcome_done(struct ledger_outcome *o);
/* The divergence from its journal that failed the run; NULL when none did. Owned by the
 * ledger. */
const struct ledger_divergence *ledger_divergence(const struct ledger *l);
/* After the run: consumes or releases a claim, frees everything. `delivered`: the result goes
 * to the caller; `failed`: it is a failure. NULL is fine. */
void ledger_end(struct ledger *l, int delivered, int failed);

#endif
