/*
 * ledger.c - interrupt and resume (docs/continuations.md): the ledger of a run's host calls.
 *
 * Recording: while a run can make a continuation (a key is configured), every host call is
 * kept by call id: its function, the digest of its arguments, and how it ended - answered (with
 * the answer, the guest clock it set and its position in the order answers were sent), or
 * interrupted (with the interruption id and payload). The worker ends an interrupted run once
 * nothing else is in flight; the ledger then becomes the signed continuation. A call's argument
 * bytes are kept only while it is pending or interrupted: the token holds their digest, and
 * keeping every call's bytes let one guest make the host hold 256 host-args limits per run.
 *
 * Replay: a resumed run evaluates the same source again. Each call it makes is matched against
 * the ledger by id - same function, same argument bytes, or the run fails PROTOCOL_ERROR before
 * any host function runs - and answered from it in the order the answers were first sent, with
 * the recorded clock. The worker applies each answer at the same point of the guest's event loop
 * as the first time (see wait_sync in worker/bridge.c), so the guest takes the same path.
 * Interruptions left unresolved are interrupted again at once; resolved ones are invoked with
 * their resume context once everything recorded is delivered, which is where the first run
 * stopped. Calls past the ledger go to the host as usual.
 *
 * A journal (docs/journal.md) is replayed the same way: it is in effect an unsigned continuation
 * the embedder trusts, with no interruptions, that may end anywhere. A call it does not have was
 * in doubt when the journal ended (or came after it): it is invoked once every journaled answer
 * has been delivered - its answer came after them the first time - and never earlier, so a
 * replay that diverges on its way has invoked nothing. The journal's payloads are freed as they
 * are delivered.
 *
 * Journaling out: each live answer gets the next position (replayed answers count too, so a
 * resumed run goes on numbering where the first leg stopped); an answer the journal callback
 * holds waits here, with every answer after it, until it is released.
 *
 * This file only decides (enum ledger_decision); run.c acts. It must never call into run.c.
 */
#include "ledger.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"
#include "json.h"
#include "wire.h"

#define LEDGER_JSON_DEPTH 4096 /* as run.c: any honest value passes */

static const char undefined_json[] = "{\"$type\":\"undefined\"}";

enum call_state {
    CALL_NONE = 0,    /* no such call seen */
    CALL_PENDING,     /* made, not answered yet */
    CALL_ANSWERED,    /* answered: entry.kind is CONT_VALUE, CONT_THROW or CONT_THROW_TYPE */
    CALL_INTERRUPTED, /* waiting for a person: entry.kind is CONT_INTERRUPTED */
};

struct ledger_call {
    uint8_t state;           /* enum call_state */
    uint32_t fn;             /* index into the run's host table */
    struct cont_entry entry; /* fn is borrowed from the run's host table */
    char *args;              /* owned while pending or interrupted (recording only), else NULL */
    size_t args_len;
};

/* Replaying a continuation: the ledger it holds, and how far this run has got through it. */
struct replay {
    struct continuation cont;
    uint32_t *order; /* indexes into cont.entries of answered async calls, by settle */
    size_t norder;
    size_t next;      /* next position of `order` to deliver */
    uint8_t *arrived; /* per entry: the worker made this call again */
    size_t missing;   /* entries that have not arrived yet */
    int done;         /* every entry arrived and every recorded answer was delivered */
    const struct resolution **resolution; /* per entry: the resolution of an interruption */
    uint32_t *waiting; /* ids to invoke once done: resolved interruptions, or the calls a journal
                          does not have */
    size_t nwaiting;
    size_t next_waiting; /* next of `waiting` to invoke */
    int journal;         /* replaying a journal (done as soon as every entry is delivered) */
};

/* A live answer journaled but not delivered yet: held, or behind one that is. */
struct held {
    struct held *next;
    uint32_t id;
    uint32_t position;
    int hold; /* the journal callback held it: it waits for its release */
    uint8_t kind;
    int64_t clock_ms;
    size_t len;
    char payload[]; /* NUL-terminated */
};

struct ledger {
    const struct al_runner *runner;
    const struct al_run_opts *opts;
    uint64_t host_calls_max;
    uint64_t continuation_max; /* bytes */
    uint8_t manifest[CONT_DIGEST];
    uint64_t seed;
    int64_t clock_ms;
    int recording;            /* the run can make a continuation: a key is configured */
    struct ledger_call *call; /* indexed by call id - 1 */
    uint32_t ncall;           /* allocated slots */
    uint32_t answers_sent;    /* the next settle position */
    uint32_t interrupted;     /* calls interrupted now */
    uint64_t recorded_bytes;  /* answer payloads kept for the continuation */
    int too_big;              /* they passed the continuation limit: none are kept any more */
    struct replay *replay;    /* NULL: a fresh run */
    char *claimed_id;         /* a stored continuation this run holds a claim on */
    int journaling;           /* the run has a journal callback: arguments are digested */
    uint32_t position;        /* answers given a place in the delivery order so far */
    uint32_t released;        /* held answers up to this position may go */
    struct held *held;        /* in position order */
    struct held **held_tail;
    struct held *spent; /* the held answer last handed out: freed at the next ledger_next */
    struct ledger_divergence *divergence; /* the first divergence from a journal; NULL: none */
};

static int is_json(const char *text, size_t len)
{
    return len > 0 && json_check(text, len, LEDGER_JSON_DEPTH, NULL) == AL_OK;
}

/* A JSON text on one line: it goes into JSON lines and environment variables. */
static char *compact_copy(const char *json, size_t len, size_t *ret_len)
{
    struct buf b;
    buf_init(&b, SIZE_MAX / 2);
    if (json_write_compact(&b, json, len) != BUF_OK) {
        buf_done(&b);
        return NULL;
    }
    if (!b.data) {
        *ret_len = 0;
        return buf_dup("", 0);
    }
    return buf_steal(&b, ret_len);
}

static enum ledger_decision decide(struct ledger_action *a, enum ledger_decision what, uint32_t id)
{
    memset(a, 0, sizeof *a);
    a->what = what;
    a->id = id;
    return what;
}

static enum ledger_decision fail(struct ledger_action *a, uint32_t id, enum ledger_decision what,
                                 enum al_code code, const char *fmt, ...)
        __attribute__((format(printf, 5, 6)));

static enum ledger_decision fail(struct ledger_action *a, uint32_t id, enum ledger_decision what,
                                 enum al_code code, const char *fmt, ...)
{
    decide(a, what, id);
    a->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->message, sizeof a->message, fmt, ap);
    va_end(ap);
    return what;
}

static struct ledger_call *slot(struct ledger *l, uint32_t id)
{
    if (id > l->ncall) {
        uint32_t n = l->ncall ? l->ncall : 16;
        while (n < id) {
            n *= 2;
        }
        struct ledger_call *c = realloc(l->call, n * sizeof *c);
        if (!c) {
            return NULL;
        }
        memset(c + l->ncall, 0, (n - l->ncall) * sizeof *c);
        l->call = c;
        l->ncall = n;
    }
    return &l->call[id - 1];
}

static struct ledger_call *pending(struct ledger *l, uint32_t id)
{
    struct ledger_call *lc = id >= 1 && id <= l->ncall ? &l->call[id - 1] : NULL;
    return lc && lc->state == CALL_PENDING ? lc : NULL;
}

/* ------------------------------------------------------------------ before the run */

static int find_entry(const struct continuation *c, uint32_t id)
{
    size_t lo = 0;
    size_t hi = c->nentries;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c->entries[mid].id == id) {
            return (int)mid;
        }
        if (c->entries[mid].id < id) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return -1;
}

static enum al_code check_resolutions(struct ledger *l, struct replay *rp, struct al_error *reterr)
{
    const struct al_run_opts *o = l->opts;
    if (o->nresolutions == 0) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "a resume needs at least one resolution (--resolve ID=JSON)");
    }
    for (size_t i = 0; i < o->nresolutions; i++) {
        const struct resolution *r = &o->resolutions[i];
        uint8_t iid[CONT_IID];
        int k = -1;
        int by_id = r->call == 0 && cont_iid_parse(r->id, iid) == 0;
        for (size_t j = 0; (by_id || r->call) && j < rp->cont.nentries; j++) {
            const struct cont_entry *e = &rp->cont.entries[j];
            if (e->kind == CONT_INTERRUPTED &&
                (r->call ? e->id == r->call : memcmp(e->iid, iid, CONT_IID) == 0)) {
                k = (int)j;
            }
        }
        if (k < 0) {
            return error_set(reterr, AL_CONFIG_ERROR,
                             "the continuation has no pending interruption with id '%.64s'", r->id);
        }
        if (rp->resolution[k]) {
            return error_set(reterr, AL_CONFIG_ERROR, "interruption %s is resolved twice", r->id);
        }
        if (!is_json(r->json, r->len)) {
            return error_set(reterr, AL_CONFIG_ERROR,
                             "the resolution of interruption %s is not valid boundary JSON", r->id);
        }
        rp->resolution[k] = r;
    }
    return AL_OK;
}

static const char *type_name(uint32_t type)
{
    switch (type) {
    case AL_SOURCE_BODY:
        return "JavaScript body";
    case AL_SOURCE_MODULE:
        return "JavaScript module";
    case AL_SOURCE_BODY | AL_SOURCE_TYPESCRIPT:
        return "TypeScript body";
    default:
        return "TypeScript module";
    }
}

static enum al_code check_binding(const struct ledger *l, const struct continuation *c,
                                  struct al_error *reterr)
{
    const struct al_run_opts *o = l->opts;
    int64_t now = clock_wall_ms();
    uint8_t d[CONT_DIGEST];
    if (c->expires_ms <= now) {
        return error_set(reterr, AL_PROTOCOL_ERROR, "the continuation expired %lld s ago",
                         (long long)((now - c->expires_ms) / 1000));
    }
    if (c->issued_ms > now + AL_CONTINUATION_SKEW_MS || c->expires_ms < c->issued_ms) {
        return error_set(reterr, AL_PROTOCOL_ERROR,
                         "the continuation was issued in the future (check the clocks)");
    }
    cont_sha256(o->source, o->source_len, d);
    if (memcmp(d, c->source, CONT_DIGEST) != 0) {
        return error_set(reterr, AL_PROTOCOL_ERROR, "the continuation was made for another source");
    }
    /* The same text means another program as TypeScript or as a module. */
    if (c->source_type != o->source_type) {
        return error_set(reterr, AL_PROTOCOL_ERROR,
                         "the continuation was made for a %s source, not a %s one",
                         type_name(c->source_type), type_name(o->source_type));
    }
    if (memcmp(l->manifest, c->manifest, CONT_DIGEST) != 0) {
        return error_set(reterr, AL_PROTOCOL_ERROR,
                         "the continuation was made for other host functions");
    }
    const char *aud = o->audience ? o->audience : "airlock";
    if (strcmp(aud, c->audience) != 0) {
        return error_set(reterr, AL_PROTOCOL_ERROR,
                         "the continuation is for audience '%.100s', not '%.100s'", c->audience,
                         aud);
    }
    cont_sha256(o->context ? o->context : "", o->context ? o->context_len : 0, d);
    if (memcmp(d, c->context, CONT_DIGEST) != 0) {
        return error_set(reterr, AL_PROTOCOL_ERROR,
                         "the continuation was made for another application context");
    }
    return AL_OK;
}

static enum al_code load(struct ledger *l, struct replay *rp, struct al_error *reterr)
{
    const struct al_runner *r = l->runner;
    const struct al_run_opts *o = l->opts;
    const char *token = o->resume;
    size_t len = o->resume_len;
    void *stored = NULL;
    enum al_code rc;

    if (r->store) {
        size_t slen = 0;
        rc = r->store->claim(r->store, o->resume, &stored, &slen, reterr);
        if (rc != AL_OK) {
            return rc;
        }
        l->claimed_id = strdup(o->resume);
        if (!l->claimed_id) {
            struct al_error ignored;
            (void)r->store->release(r->store, o->resume, &ignored);
            free(stored);
            return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        }
        token = stored;
        len = slen;
    }
    rc = runner_cont_decode(r, token, len, (size_t)l->continuation_max, &rp->cont, reterr);
    free(stored);
    if (rc != AL_OK) {
        return rc;
    }
    /* A stored body is complete and signed: copied out of the store, or into it under another
     * name, it would resume once per copy. It resumes only from the store, under its own id. */
    if (r->store &&
        (rp->cont.form != CONT_FORM_STORED || strcmp(rp->cont.store_id, o->resume) != 0)) {
        return error_set(reterr, AL_PROTOCOL_ERROR,
                         "the continuation stored as %.64s was not stored under that id",
                         o->resume);
    }
    if (!r->store && rp->cont.form != CONT_FORM_TOKEN) {
        return error_set(reterr, AL_PROTOCOL_ERROR,
                         "the continuation is a stored one's content: it resumes only by its id, "
                         "from its store");
    }
    rc = check_binding(l, &rp->cont, reterr);
    if (rc != AL_OK) {
        return rc;
    }
    size_t n = rp->cont.nentries;
    rp->order = calloc(n ? n : 1, sizeof *rp->order);
    rp->arrived = calloc(n ? n : 1, 1);
    rp->resolution = calloc(n ? n : 1, sizeof *rp->resolution);
    rp->waiting = calloc(n ? n : 1, sizeof *rp->waiting);
    if (!rp->order || !rp->arrived || !rp->resolution || !rp->waiting) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        const struct cont_entry *e = &rp->cont.entries[i];
        if (e->kind != CONT_INTERRUPTED && !e->sync) {
            rp->order[e->settle] = (uint32_t)i; /* cont_parse checked it is a permutation */
            rp->norder++;
        }
        if (e->id > l->host_calls_max) {
            return error_set(reterr, AL_PROTOCOL_ERROR,
                             "the continuation holds more host calls than the host-calls limit");
        }
    }
    rp->missing = n;
    return check_resolutions(l, rp, reterr);
}

static int by_call(const void *a, const void *b)
{
    uint32_t x = ((const struct cont_entry *)a)->id;
    uint32_t y = ((const struct cont_entry *)b)->id;
    return x < y ? -1 : x > y;
}

/* Loads opts' journal as the replay's ledger: the embedder's input, checked as such. */
static enum al_code load_journal(struct ledger *l, struct replay *rp, struct al_error *reterr)
{
    const struct al_run_opts *o = l->opts;
    size_t n = o->njournal;
    if (o->resume) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "a run starts from a journal or resumes a continuation, not both");
    }
    if (o->nresolutions > 0) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "resolutions are only for a resume (al_run_opts_set_resume)");
    }
    if (!o->has_seed || !o->has_clock) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "a journal replays only with the seed and clock of the run that wrote "
                         "it (al_run_opts_set_seed, al_run_opts_set_clock)");
    }
    rp->journal = 1;
    rp->cont.entries = calloc(n, sizeof *rp->cont.entries);
    rp->order = calloc(n, sizeof *rp->order);
    rp->arrived = calloc(n, 1);
    rp->resolution = calloc(n, sizeof *rp->resolution);
    rp->waiting = calloc((size_t)l->host_calls_max, sizeof *rp->waiting);
    if (!rp->cont.entries || !rp->order || !rp->arrived || !rp->resolution || !rp->waiting) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    uint32_t settle = 0;
    for (size_t i = 0; i < n; i++) {
        const struct al_journal_entry *j = &o->journal[i];
        if (j->position != i + 1) {
            return error_set(reterr, AL_CONFIG_ERROR,
                             "journal entry %zu has position %u: positions must be 1, 2, 3, ... "
                             "in the order the entries are added",
                             i + 1, j->position);
        }
        if (j->call == 0 || j->call > l->host_calls_max) {
            return error_set(reterr, AL_CONFIG_ERROR,
                             "journal entry %u is for call %u, outside 1 to the host-calls limit "
                             "of %llu",
                             j->position, j->call, (unsigned long long)l->host_calls_max);
        }
        if (j->clock_ms < -AL_CLOCK_MAX_MS || j->clock_ms > AL_CLOCK_MAX_MS) {
            return error_set(reterr, AL_CONFIG_ERROR,
                             "journal entry %u has a clock outside the range of a JavaScript Date",
                             j->position);
        }
        struct cont_entry *e = &rp->cont.entries[i];
        e->id = j->call;
        e->kind = j->kind == AL_JOURNAL_THROW        ? CONT_THROW
                  : j->kind == AL_JOURNAL_THROW_TYPE ? CONT_THROW_TYPE
                                                     : CONT_VALUE;
        e->sync = j->sync != 0;
        memcpy(e->args_digest, j->args_sha256, CONT_DIGEST);
        e->settle = e->sync ? 0 : settle++;
        e->clock_ms = j->clock_ms;
        e->fn = strdup(j->function);
        e->payload = buf_dup(j->payload, j->len);
        e->len = j->len;
        rp->cont.nentries++;
        if (!e->fn || !e->payload) {
            return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        }
    }
    qsort(rp->cont.entries, n, sizeof *rp->cont.entries, by_call);
    for (size_t i = 0; i < n; i++) {
        const struct cont_entry *e = &rp->cont.entries[i];
        if (i > 0 && e->id == rp->cont.entries[i - 1].id) {
            return error_set(reterr, AL_CONFIG_ERROR, "the journal answers call %u twice", e->id);
        }
        if (!e->sync) {
            rp->order[e->settle] = (uint32_t)i;
            rp->norder++;
        }
    }
    rp->missing = n;
    return AL_OK;
}

enum al_code ledger_begin(const struct al_runner *runner, const struct al_run_opts *opts,
                          const uint64_t limits[AL_LIMIT_COUNT_],
                          const uint8_t manifest[CONT_DIGEST], uint64_t seed, int64_t clock_ms,
                          struct ledger **ret_ledger, struct al_error *reterr)
{
    struct ledger *l = calloc(1, sizeof *l);
    *ret_ledger = l;
    if (!l) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    l->runner = runner;
    l->opts = opts;
    l->host_calls_max = limits[AL_LIMIT_HOST_CALLS];
    l->continuation_max = limits[AL_LIMIT_CONTINUATION_BYTES];
    memcpy(l->manifest, manifest, CONT_DIGEST);
    l->seed = seed;
    l->clock_ms = clock_ms;
    l->recording = runner->continuations;
    l->journaling = opts->journal_fn != NULL;
    l->held_tail = &l->held;
    if (opts->njournal > 0) {
        l->replay = calloc(1, sizeof *l->replay);
        if (!l->replay) {
            return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        }
        return load_journal(l, l->replay, reterr);
    }
    if (!opts->resume) {
        if (opts->nresolutions > 0) {
            return error_set(reterr, AL_CONFIG_ERROR,
                             "resolutions are only for a resume (al_run_opts_set_resume)");
        }
        return AL_OK;
    }
    if (!runner->continuations) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "resuming needs the continuation key (al_config_set_continuation_key; "
                         "the CLI reads AIRLOCK_CONTINUATION_SECRET)");
    }
    l->replay = calloc(1, sizeof *l->replay);
    if (!l->replay) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    enum al_code rc = load(l, l->replay, reterr);
    if (rc != AL_OK) {
        return rc; /* ledger_end releases a claim */
    }
    l->seed = l->replay->cont.seed;
    l->clock_ms = l->replay->cont.clock_ms;
    return AL_OK;
}

int ledger_replaying(const struct ledger *l)
{
    return l->replay != NULL;
}

uint64_t ledger_seed(const struct ledger *l)
{
    return l->seed;
}

int64_t ledger_clock(const struct ledger *l)
{
    return l->clock_ms;
}

/* ------------------------------------------------------------------ during the run */

#define DIVERGED         "the run diverged from its continuation: "
#define JOURNAL_DIVERGES "the run diverges at call %u from its journal: "

/* The first journaled call the run has not made (0: none). */
static uint32_t first_missing(const struct replay *rp)
{
    for (size_t k = 0; k < rp->cont.nentries; k++) {
        if (!rp->arrived[k]) {
            return rp->cont.entries[k].id;
        }
    }
    return 0;
}

/* Notes where the run left its journal, for al_result_divergence: call `id`, the journal's
 * entry for it (NULL: none) and the call the run made there (got_fn NULL: none). Only the first
 * divergence counts: it is the one that fails the run. Out of memory, nothing is noted (the run
 * fails all the same). */
static void note_divergence(struct ledger *l, uint32_t id, const struct cont_entry *expected,
                            const char *got_fn, const uint8_t *got_digest)
{
    if (l->divergence) {
        return;
    }
    struct ledger_divergence *d = calloc(1, sizeof *d);
    if (!d) {
        return;
    }
    d->call = id;
    if (expected) {
        d->expected_fn = strdup(expected->fn);
        memcpy(d->expected_digest, expected->args_digest, CONT_DIGEST);
    }
    if (got_fn) {
        d->got_fn = strdup(got_fn);
        memcpy(d->got_digest, got_digest, CONT_DIGEST);
    }
    if ((expected && !d->expected_fn) || (got_fn && !d->got_fn)) {
        free(d->expected_fn);
        free(d->got_fn);
        free(d);
        return;
    }
    l->divergence = d;
}

/* The journal's entry for the first call the run has not made, for a divergence's note. */
static const struct cont_entry *missing_entry(const struct replay *rp, uint32_t id)
{
    int k = find_entry(&rp->cont, id);
    return k >= 0 ? &rp->cont.entries[k] : NULL;
}

const struct ledger_divergence *ledger_divergence(const struct ledger *l)
{
    return l ? l->divergence : NULL;
}

/* Records an interruption of pending call `lc` and decides INTERRUPT, or fails. */
static enum ledger_decision interrupt(struct ledger *l, struct ledger_call *lc, const char *payload,
                                      size_t len, const uint8_t *keep_iid,
                                      struct ledger_action *ret)
{
    uint32_t id = lc->entry.id;
    if (lc->entry.sync) {
        return fail(ret, id, LEDGER_FAIL, AL_PROTOCOL_ERROR,
                    "%s is a synchronous host function and cannot interrupt the run", lc->entry.fn);
    }
    if (!l->recording) {
        return fail(ret, id, LEDGER_FAIL, AL_CONFIG_ERROR,
                    "%s interrupted the run, but no continuation key is configured "
                    "(al_config_set_continuation_key; the CLI reads AIRLOCK_CONTINUATION_SECRET)",
                    lc->entry.fn);
    }
    if (len == 0) {
        payload = undefined_json;
        len = sizeof undefined_json - 1;
    } else if (!is_json(payload, len)) {
        return fail(ret, id, LEDGER_FAIL, AL_PROTOCOL_ERROR,
                    "%s interrupted with a payload that is not valid boundary JSON", lc->entry.fn);
    }
    struct cont_entry *e = &lc->entry;
    if (keep_iid) {
        memcpy(e->iid, keep_iid, CONT_IID);
    } else if (cont_random(e->iid, CONT_IID) != 0) {
        return fail(ret, id, LEDGER_FAIL, AL_INTERNAL_ERROR,
                    "no random bytes for an interruption id");
    }
    e->kind = CONT_INTERRUPTED;
    e->payload = compact_copy(payload, len, &e->len);
    if (!e->payload) {
        return fail(ret, id, LEDGER_FAIL, AL_INTERNAL_ERROR,
                    "out of memory recording an interruption");
    }
    lc->state = CALL_INTERRUPTED;
    l->interrupted++;
    return decide(ret, LEDGER_INTERRUPT, id);
}

static enum ledger_decision answer_from(struct ledger *l, const struct cont_entry *e,
                                        struct ledger_action *ret)
{
    l->position++; /* journaled by the run that first received it */
    decide(ret, LEDGER_ANSWER, e->id);
    ret->kind = e->kind == CONT_THROW        ? WIRE_ANSWER_THROW
                : e->kind == CONT_THROW_TYPE ? WIRE_ANSWER_TYPE_ERROR
                                             : WIRE_ANSWER_VALUE;
    ret->clock_ms = e->clock_ms;
    ret->payload = e->payload;
    ret->len = e->len;
    return LEDGER_ANSWER;
}

enum ledger_decision ledger_on_call(struct ledger *l, uint32_t id, uint32_t fn, const char *name,
                                    int sync, const char *args, size_t len,
                                    struct ledger_action *ret)
{
    struct ledger_call *lc = slot(l, id);
    if (!lc) {
        return fail(ret, id, LEDGER_FAIL, AL_INTERNAL_ERROR, "out of memory for a host call");
    }
    lc->state = CALL_PENDING;
    lc->fn = fn;
    lc->entry.id = id;
    lc->entry.fn = (char *)name; /* borrowed: never freed here */
    lc->entry.sync = sync != 0;
    struct replay *rp = l->replay;
    int replaying = rp && !rp->done;
    if (l->recording || replaying || l->journaling) {
        cont_sha256(args, len, lc->entry.args_digest);
    }
    if (l->recording) {
        /* Kept until answered: an interruption reports them, a resolved one is invoked with
         * them. Only the digest outlives the call. */
        lc->args = buf_dup(args, len);
        lc->args_len = len;
        if (!lc->args) {
            return fail(ret, id, LEDGER_FAIL, AL_INTERNAL_ERROR, "out of memory for a host call");
        }
    }
    if (!replaying) {
        decide(ret, LEDGER_INVOKE, id);
        ret->fn = fn;
        ret->args = args;
        ret->args_len = len;
        return LEDGER_INVOKE;
    }
    int k = find_entry(&rp->cont, id);
    if (k < 0 && rp->journal && !sync) {
        /* In doubt, or past the journal: its answer came after every journaled one, so it is
         * invoked once they are all delivered. */
        if (!lc->args && !(lc->args = buf_dup(args, len))) {
            return fail(ret, id, LEDGER_FAIL, AL_INTERNAL_ERROR, "out of memory for a host call");
        }
        lc->args_len = len;
        rp->waiting[rp->nwaiting++] = id;
        return decide(ret, LEDGER_NONE, id);
    }
    if (k < 0 && rp->journal) {
        note_divergence(l, id, NULL, name, lc->entry.args_digest);
        return fail(ret, id, LEDGER_DIVERGED, AL_PROTOCOL_ERROR,
                    JOURNAL_DIVERGES "the journal does not have this synchronous call to %s, "
                                     "and journaled calls are still to come",
                    id, name);
    }
    if (k < 0) {
        return fail(ret, id, LEDGER_DIVERGED, AL_PROTOCOL_ERROR,
                    DIVERGED "call #%u (to %s) is not in the ledger", id, name);
    }
    const struct cont_entry *e = &rp->cont.entries[k];
    if (strcmp(e->fn, name) != 0) {
        if (rp->journal) {
            note_divergence(l, id, e, name, lc->entry.args_digest);
            return fail(ret, id, LEDGER_DIVERGED, AL_PROTOCOL_ERROR,
                        JOURNAL_DIVERGES "it calls %s, the journal has %s", id, name, e->fn);
        }
        return fail(ret, id, LEDGER_DIVERGED, AL_PROTOCOL_ERROR,
                    DIVERGED "call #%u is to %s, the ledger has %s", id, name, e->fn);
    }
    if (memcmp(e->args_digest, lc->entry.args_digest, CONT_DIGEST) != 0) {
        if (rp->journal) {
            note_divergence(l, id, e, name, lc->entry.args_digest);
            return fail(ret, id, LEDGER_DIVERGED, AL_PROTOCOL_ERROR,
                        JOURNAL_DIVERGES "%s has other arguments than in the journal", id, name);
        }
        return fail(ret, id, LEDGER_DIVERGED, AL_PROTOCOL_ERROR,
                    DIVERGED "call #%u to %s has other arguments than the ledger", id, name);
    }
    if (e->sync != (sync != 0)) { /* a continuation binds the sync flags: only a journal */
        note_divergence(l, id, e, name, lc->entry.args_digest);
        return fail(ret, id, LEDGER_DIVERGED, AL_PROTOCOL_ERROR,
                    JOURNAL_DIVERGES "%s is %s, the journal has it %s", id, name,
                    sync ? "synchronous" : "asynchronous",
                    e->sync ? "synchronous" : "asynchronous");
    }
    rp->arrived[k] = 1;
    rp->missing--;
    if (e->kind == CONT_INTERRUPTED) {
        if (rp->resolution[k]) {
            rp->waiting[rp->nwaiting++] = id; /* invoked once the replay has caught up */
            return decide(ret, LEDGER_NONE, id);
        }
        return interrupt(l, lc, e->payload, e->len, e->iid, ret); /* still undecided */
    }
    if (e->sync) {
        return answer_from(l, e, ret);
    }
    return decide(ret, LEDGER_NONE, id); /* in its turn: ledger_next */
}

int ledger_will_replay_value(const struct ledger *l, uint32_t id, const char **ret_payload,
                             size_t *ret_len)
{
    const struct replay *rp = l->replay;
    if (!rp || rp->done) {
        return 0;
    }
    int k = find_entry(&rp->cont, id);
    if (k < 0 || rp->cont.entries[k].kind != CONT_VALUE) {
        return 0;
    }
    *ret_payload = rp->cont.entries[k].payload;
    *ret_len = rp->cont.entries[k].len;
    return 1;
}

/* A live answer that may go now: first in line, and not held past what was released. */
static enum ledger_decision next_held(struct ledger *l, struct ledger_action *ret)
{
    struct held *h = l->held;
    if (!h || (h->hold && h->position > l->released)) {
        return decide(ret, LEDGER_NONE, 0);
    }
    l->held = h->next;
    if (!l->held) {
        l->held_tail = &l->held;
    }
    l->spent = h; /* its payload is borrowed by the action */
    decide(ret, LEDGER_ANSWER, h->id);
    ret->kind = h->kind;
    ret->clock_ms = h->clock_ms;
    ret->payload = h->payload;
    ret->len = h->len;
    ret->held = 1;
    return LEDGER_ANSWER;
}

enum ledger_decision ledger_next(struct ledger *l, struct ledger_action *ret)
{
    free(l->spent);
    l->spent = NULL;
    struct replay *rp = l->replay;
    if (!rp) {
        return next_held(l, ret);
    }
    if (!rp->done) {
        if (rp->next < rp->norder && rp->arrived[rp->order[rp->next]]) {
            return answer_from(l, &rp->cont.entries[rp->order[rp->next++]], ret);
        }
        if (!rp->journal || rp->next < rp->norder || rp->missing > 0) {
            return decide(ret, LEDGER_NONE, 0);
        }
        /* Every journaled answer is delivered: the run goes on live. Unlike a continuation's
         * resolutions this needs no IDLE: a call invoked now answers after them all, and no
         * journaled call is left that could diverge. */
        rp->done = 1;
    }
    /* The worker has applied everything recorded and waits: the run is where the first one
     * stopped, and now the people's decisions take effect. Not earlier: a host function that
     * performs an approved action must never run for a replay that could still fail on its way
     * there. */
    if (rp->next_waiting < rp->nwaiting) {
        uint32_t id = rp->waiting[rp->next_waiting++];
        int k = find_entry(&rp->cont, id); /* -1: a call the journal does not have */
        const struct ledger_call *lc = &l->call[id - 1];
        decide(ret, LEDGER_INVOKE, id);
        ret->fn = lc->fn;
        ret->args = lc->args;
        ret->args_len = lc->args_len;
        ret->resumed = k >= 0 ? &rp->cont.entries[k] : NULL;
        ret->resolution = k >= 0 ? rp->resolution[k] : NULL;
        return LEDGER_INVOKE;
    }
    return next_held(l, ret);
}

enum ledger_decision ledger_on_idle(struct ledger *l, int caught_up, struct ledger_action *ret)
{
    struct replay *rp = l->replay;
    if (!rp || !caught_up || rp->done) {
        return decide(ret, LEDGER_NONE, 0);
    }
    if (rp->next == rp->norder && rp->missing == 0) {
        rp->done = 1; /* ledger_next now yields the resolved interruptions */
        return decide(ret, LEDGER_NONE, 0);
    }
    /* It waits for us, and we wait for a call it will never make. */
    if (rp->journal) {
        uint32_t k = first_missing(rp);
        note_divergence(l, k, missing_entry(rp, k), NULL, NULL);
        return fail(ret, k, LEDGER_DIVERGED, AL_PROTOCOL_ERROR,
                    JOURNAL_DIVERGES "it waits without making that call", k);
    }
    return fail(ret, 0, LEDGER_DIVERGED, AL_PROTOCOL_ERROR,
                DIVERGED "it waits without making every call its ledger records");
}

static enum al_code record_answer(struct ledger *l, uint32_t id, uint8_t kind, int64_t clock_ms,
                                  const char *payload, size_t len, struct al_error *reterr)
{
    struct ledger_call *lc = pending(l, id);
    if (!lc) {
        return AL_OK;
    }
    lc->state = CALL_ANSWERED;
    free(lc->args); /* the digest is all the continuation needs */
    lc->args = NULL;
    lc->args_len = 0;
    if (!l->recording) {
        return AL_OK;
    }
    struct cont_entry *e = &lc->entry;
    e->kind = kind == WIRE_ANSWER_THROW        ? CONT_THROW
              : kind == WIRE_ANSWER_TYPE_ERROR ? CONT_THROW_TYPE
                                               : CONT_VALUE;
    e->settle = e->sync ? 0 : l->answers_sent++;
    e->clock_ms = clock_ms;
    l->recorded_bytes += len;
    if (l->too_big || l->recorded_bytes > l->continuation_max) {
        /* No continuation could hold them: the run goes on, but cannot be interrupted. */
        l->too_big = 1;
        return AL_OK;
    }
    e->payload = buf_dup(payload, len);
    e->len = len;
    if (!e->payload) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory recording a host answer");
    }
    return AL_OK;
}

int ledger_journal(struct ledger *l, uint32_t id, uint8_t kind, int64_t clock_ms,
                   const char *payload, size_t len, struct al_journal_entry *ret)
{
    const struct ledger_call *lc = pending(l, id);
    if (!lc) {
        return -1;
    }
    memset(ret, 0, sizeof *ret);
    ret->position = ++l->position;
    ret->call = id;
    ret->function = lc->entry.fn;
    memcpy(ret->args_sha256, lc->entry.args_digest, CONT_DIGEST);
    ret->kind = kind == WIRE_ANSWER_THROW        ? AL_JOURNAL_THROW
                : kind == WIRE_ANSWER_TYPE_ERROR ? AL_JOURNAL_THROW_TYPE
                                                 : AL_JOURNAL_VALUE;
    ret->sync = lc->entry.sync;
    ret->clock_ms = clock_ms;
    ret->payload = payload;
    ret->len = len;
    return 0;
}

enum ledger_decision ledger_deliver(struct ledger *l, const struct al_journal_entry *e,
                                    uint8_t kind, int hold, struct ledger_action *ret)
{
    if (!hold && !l->held) {
        decide(ret, LEDGER_ANSWER, e->call);
        ret->kind = kind;
        ret->clock_ms = e->clock_ms;
        ret->payload = e->payload;
        ret->len = e->len;
        return LEDGER_ANSWER;
    }
    struct held *h = malloc(sizeof *h + e->len + 1);
    if (!h) {
        return fail(ret, e->call, LEDGER_FAIL, AL_INTERNAL_ERROR,
                    "out of memory holding a host answer");
    }
    h->next = NULL;
    h->id = e->call;
    h->position = e->position;
    h->hold = hold;
    h->kind = kind;
    h->clock_ms = e->clock_ms;
    h->len = e->len;
    memcpy(h->payload, e->payload, e->len);
    h->payload[e->len] = '\0';
    *l->held_tail = h;
    l->held_tail = &h->next;
    return decide(ret, LEDGER_NONE, e->call); /* in its turn: ledger_next */
}

int ledger_release(struct ledger *l, uint32_t position)
{
    if (position <= l->released) {
        return 0;
    }
    l->released = position;
    return l->held != NULL;
}

enum al_code ledger_on_answer(struct ledger *l, uint32_t id, uint8_t kind, int64_t clock_ms,
                              const char *payload, size_t len, struct al_error *reterr)
{
    enum al_code rc = record_answer(l, id, kind, clock_ms, payload, len, reterr);
    struct replay *rp = l->replay;
    if (rp && rp->journal && !rp->done) {
        int k = find_entry(&rp->cont, id);
        if (k >= 0) { /* delivered (and recorded, from these very bytes): the journal's copy goes */
            free(rp->cont.entries[k].payload);
            rp->cont.entries[k].payload = NULL;
            rp->cont.entries[k].len = 0;
        }
    }
    return rc;
}

enum ledger_decision ledger_on_interrupt(struct ledger *l, uint32_t id, const char *payload,
                                         size_t len, const uint8_t *keep_iid,
                                         struct ledger_action *ret)
{
    struct ledger_call *lc = pending(l, id);
    if (!lc) {
        return decide(ret, LEDGER_NONE, id);
    }
    return interrupt(l, lc, payload, len, keep_iid, ret);
}

enum al_code ledger_before_host(struct ledger *l, struct al_error *reterr)
{
    if (!l->claimed_id) {
        return AL_OK;
    }
    struct al_store *store = l->runner->store;
    enum al_code rc = store->consume(store, l->claimed_id, reterr);
    free(l->claimed_id);
    l->claimed_id = NULL;
    return rc;
}

/* ------------------------------------------------------------------ the end */

static enum al_code make_continuation(struct ledger *l, struct ledger_outcome *out,
                                      struct al_error *reterr)
{
    const struct al_runner *r = l->runner;
    const struct al_run_opts *o = l->opts;
    struct continuation c;
    memset(&c, 0, sizeof c);

    if (l->too_big) {
        return error_set(reterr, AL_OUTPUT_LIMIT,
                         "the host answers to record exceed the continuation limit of %llu bytes",
                         (unsigned long long)l->continuation_max);
    }
    cont_sha256(o->source, o->source_len, c.source);
    c.source_type = o->source_type;
    memcpy(c.manifest, l->manifest, CONT_DIGEST);
    cont_sha256(o->context ? o->context : "", o->context ? o->context_len : 0, c.context);
    snprintf(c.audience, sizeof c.audience, "%s", o->audience ? o->audience : "airlock");
    c.issued_ms = clock_wall_ms();
    c.expires_ms = c.issued_ms + (int64_t)r->ttl_ms;
    c.seed = l->seed;
    c.clock_ms = l->clock_ms;
    if (cont_random(c.nonce, sizeof c.nonce) != 0) {
        return error_set(reterr, AL_INTERNAL_ERROR, "no random bytes for a continuation");
    }
    c.entries = calloc(l->ncall ? l->ncall : 1, sizeof *c.entries);
    if (!c.entries) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    for (uint32_t i = 0; i < l->ncall; i++) {
        const struct ledger_call *lc = &l->call[i];
        if (lc->state == CALL_ANSWERED || lc->state == CALL_INTERRUPTED) {
            c.entries[c.nentries++] = lc->entry; /* shallow: nothing is freed */
        }
    }
    if (r->store) {
        uint8_t raw[16];
        char hex[CONT_IID_HEX + 1];
        if (cont_random(raw, sizeof raw) != 0) {
            free(c.entries);
            return error_set(reterr, AL_INTERNAL_ERROR, "no random bytes for a continuation id");
        }
        cont_iid_hex(raw, hex);
        c.form = CONT_FORM_STORED;
        snprintf(c.store_id, sizeof c.store_id, "als_%s", hex);
    }
    char *token = NULL;
    size_t tlen = 0;
    enum al_code rc = runner_cont_encode(r, &c, (size_t)l->continuation_max, &token, &tlen, reterr);
    free(c.entries);
    if (rc != AL_OK) {
        return rc;
    }
    if (r->store) {
        const char *id = c.store_id;
        rc = r->store->put(r->store, id, token, tlen, c.expires_ms, reterr);
        free(token);
        if (rc != AL_OK) {
            return rc;
        }
        token = strdup(id);
        tlen = strlen(id);
        if (!token) {
            return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        }
    }
    out->continuation = token;
    out->continuation_len = tlen;
    return AL_OK;
}

static enum al_code collect_interruptions(struct ledger *l, struct ledger_outcome *out,
                                          struct al_error *reterr)
{
    out->interruptions = calloc(l->interrupted, sizeof *out->interruptions);
    if (!out->interruptions) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    for (uint32_t i = 0; i < l->ncall; i++) {
        const struct ledger_call *lc = &l->call[i];
        if (lc->state != CALL_INTERRUPTED) {
            continue;
        }
        struct result_interruption *ri = &out->interruptions[out->ninterruptions++];
        cont_iid_hex(lc->entry.iid, ri->id);
        ri->call = lc->entry.id;
        ri->function = strdup(lc->entry.fn);
        ri->args = buf_dup(lc->args, lc->args_len);
        ri->payload = buf_dup(lc->entry.payload, lc->entry.len);
        if (!ri->function || !ri->args || !ri->payload) {
            return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        }
    }
    return AL_OK;
}

enum al_code ledger_on_done(struct ledger *l, int interrupted, enum al_code code,
                            struct ledger_outcome *ret, struct al_error *reterr)
{
    memset(ret, 0, sizeof *ret);
    struct replay *rp = l->replay;
    if (rp && !rp->done) {
        /* A limit is the run's own failure; anything else the guest did early is divergence. */
        if ((interrupted || code == AL_OK || code == AL_USER_ERROR ||
             code == AL_HOST_FUNCTION_ERROR || code == AL_DETACHED_BRIDGE_REQUEST ||
             code == AL_SERIALIZATION_ERROR) &&
            rp->journal) {
            uint32_t k = first_missing(rp);
            note_divergence(l, k, missing_entry(rp, k), NULL, NULL);
            return error_set(reterr, AL_PROTOCOL_ERROR,
                             JOURNAL_DIVERGES "it ended without making that call", k);
        }
        if (interrupted || code == AL_OK || code == AL_USER_ERROR ||
            code == AL_HOST_FUNCTION_ERROR || code == AL_DETACHED_BRIDGE_REQUEST ||
            code == AL_SERIALIZATION_ERROR) {
            return error_set(reterr, AL_PROTOCOL_ERROR,
                             DIVERGED "it ended before making every call its ledger records");
        }
    }
    if (!interrupted) {
        return AL_OK;
    }
    int any_pending = 0;
    for (uint32_t i = 0; i < l->ncall; i++) {
        any_pending |= l->call[i].state == CALL_PENDING;
    }
    if (l->interrupted == 0 || any_pending) {
        ret->worker_lied = 1;
        return error_set(reterr, AL_PROTOCOL_ERROR,
                         "the worker reported an interruption that did not happen");
    }
    enum al_code rc = make_continuation(l, ret, reterr);
    if (rc == AL_OK) {
        rc = collect_interruptions(l, ret, reterr);
    }
    if (rc != AL_OK) {
        int lied = ret->worker_lied;
        ledger_outcome_done(ret);
        ret->worker_lied = lied;
        return rc;
    }
    ret->interrupted = 1;
    return AL_OK;
}

void ledger_outcome_done(struct ledger_outcome *o)
{
    for (size_t i = 0; i < o->ninterruptions; i++) {
        free(o->interruptions[i].function);
        free(o->interruptions[i].args);
        free(o->interruptions[i].payload);
    }
    free(o->interruptions);
    free(o->continuation);
    memset(o, 0, sizeof *o);
}

void ledger_end(struct ledger *l, int delivered, int failed)
{
    if (!l) {
        return;
    }
    if (l->claimed_id) {
        /* No host function ran (a claim is consumed before the first one): unless the run was
         * delivered completed or interrupted, give the continuation back, so the legitimate
         * resume still works after a failed attempt. */
        struct al_store *store = l->runner->store;
        struct al_error err = { 0 };
        if (delivered && !failed) {
            (void)store->consume(store, l->claimed_id, &err);
        } else {
            (void)store->release(store, l->claimed_id, &err);
        }
        free(l->claimed_id);
    }
    for (uint32_t i = 0; i < l->ncall; i++) {
        free(l->call[i].args);
        free(l->call[i].entry.payload);
    }
    free(l->call);
    free(l->spent);
    while (l->held) {
        struct held *h = l->held;
        l->held = h->next;
        free(h);
    }
    if (l->replay) {
        cont_free(&l->replay->cont);
        free(l->replay->order);
        free(l->replay->arrived);
        free(l->replay->resolution);
        free(l->replay->waiting);
        free(l->replay);
    }
    if (l->divergence) {
        free(l->divergence->expected_fn);
        free(l->divergence->got_fn);
        free(l->divergence);
    }
    free(l);
}
