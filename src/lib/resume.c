/*
 * resume.c - interrupt and resume (docs/continuations.md).
 *
 * Recording: while a run can make a continuation (a key is configured), every host call is
 * kept in a ledger by call id: its function, the digest of its arguments, and how it ended -
 * answered (with the answer, the guest clock it set and its position in the order answers were
 * sent), or interrupted (with the interruption id and payload). The worker ends an interrupted
 * run once nothing else is in flight; the ledger then becomes the signed continuation.
 *
 * Replay: a resumed run evaluates the same source again. Each call it makes is matched against
 * the ledger by id - same function, same argument bytes, or the run fails PROTOCOL_ERROR before
 * any host function runs - and answered from it in the order the answers were first sent, with
 * the recorded clock. The worker applies each answer at the same point of the guest's event loop
 * as the first time (see wait_sync in worker/bridge.c), so the guest takes the same path.
 * Interruptions left unresolved are interrupted again at once; resolved ones are invoked with
 * their resume context once everything recorded is delivered, which is where the first run
 * stopped. Calls past the ledger go to the host as usual.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"
#include "json.h"
#include "run.h"
#include "wire.h"

static const char undefined_json[] = "{\"$type\":\"undefined\"}";

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

/* Sets the result's failure before the worker starts (or after DONE). */
static enum al_code fail_now(struct run_state *st, enum al_code code, const char *msg)
{
    run_fail_result(st->res, code, msg);
    return code;
}

static struct ledger_call *ledger_slot(struct run_state *st, uint32_t id)
{
    if (id > st->nledger) {
        uint32_t n = st->nledger ? st->nledger : 16;
        while (n < id) {
            n *= 2;
        }
        struct ledger_call *l = realloc(st->ledger, n * sizeof *l);
        if (!l) {
            return NULL;
        }
        memset(l + st->nledger, 0, (n - st->nledger) * sizeof *l);
        st->ledger = l;
        st->nledger = n;
    }
    return &st->ledger[id - 1];
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

static enum al_code check_resolutions(struct run_state *st, struct replay *rp, char *msg,
                                      size_t cap)
{
    const struct al_run_opts *o = st->opts;
    if (o->nresolutions == 0) {
        snprintf(msg, cap, "a resume needs at least one resolution (--resolve ID=JSON)");
        return AL_CONFIG_ERROR;
    }
    for (size_t i = 0; i < o->nresolutions; i++) {
        const struct resolution *r = &o->resolutions[i];
        uint8_t iid[CONT_IID];
        int k = -1;
        if (cont_iid_parse(r->id, iid) == 0) {
            for (size_t j = 0; j < rp->cont.nentries; j++) {
                const struct cont_entry *e = &rp->cont.entries[j];
                if (e->kind == CONT_INTERRUPTED && memcmp(e->iid, iid, CONT_IID) == 0) {
                    k = (int)j;
                }
            }
        }
        if (k < 0) {
            snprintf(msg, cap, "the continuation has no pending interruption with id '%.64s'",
                     r->id);
            return AL_CONFIG_ERROR;
        }
        if (rp->resolution[k]) {
            snprintf(msg, cap, "interruption %s is resolved twice", r->id);
            return AL_CONFIG_ERROR;
        }
        if (!run_is_json(r->json, r->len)) {
            snprintf(msg, cap, "the resolution of interruption %s is not valid boundary JSON",
                     r->id);
            return AL_CONFIG_ERROR;
        }
        rp->resolution[k] = r;
    }
    return AL_OK;
}

static enum al_code check_binding(struct run_state *st, const struct continuation *c, char *msg,
                                  size_t cap)
{
    const struct al_run_opts *o = st->opts;
    int64_t now = clock_wall_ms();
    uint8_t d[CONT_DIGEST];
    if (c->expires_ms <= now) {
        snprintf(msg, cap, "the continuation expired %lld s ago",
                 (long long)((now - c->expires_ms) / 1000));
        return AL_PROTOCOL_ERROR;
    }
    if (c->issued_ms > now + AL_CONTINUATION_SKEW_MS || c->expires_ms < c->issued_ms) {
        snprintf(msg, cap, "the continuation was issued in the future (check the clocks)");
        return AL_PROTOCOL_ERROR;
    }
    cont_sha256(o->source, o->source_len, d);
    if (memcmp(d, c->source, CONT_DIGEST) != 0) {
        snprintf(msg, cap, "the continuation was made for another source");
        return AL_PROTOCOL_ERROR;
    }
    if (memcmp(st->manifest, c->manifest, CONT_DIGEST) != 0) {
        snprintf(msg, cap, "the continuation was made for other host functions");
        return AL_PROTOCOL_ERROR;
    }
    const char *aud = o->audience ? o->audience : "airlock";
    if (strcmp(aud, c->audience) != 0) {
        snprintf(msg, cap, "the continuation is for audience '%.100s', not '%.100s'", c->audience,
                 aud);
        return AL_PROTOCOL_ERROR;
    }
    cont_sha256(o->context ? o->context : "", o->context ? o->context_len : 0, d);
    if (memcmp(d, c->context, CONT_DIGEST) != 0) {
        snprintf(msg, cap, "the continuation was made for another application context");
        return AL_PROTOCOL_ERROR;
    }
    return AL_OK;
}

static enum al_code load(struct run_state *st, struct replay *rp, char *msg, size_t cap)
{
    const struct al_runner *r = st->runner;
    const struct al_run_opts *o = st->opts;
    const char *token = o->resume;
    size_t len = o->resume_len;
    void *stored = NULL;
    struct al_error err = { 0 };
    enum al_code rc;

    if (r->store) {
        size_t slen = 0;
        rc = r->store->claim(r->store, o->resume, &stored, &slen, &err);
        if (rc != AL_OK) {
            snprintf(msg, cap, "%s", err.message[0] ? err.message : al_code_message(rc));
            return rc;
        }
        st->claimed_id = strdup(o->resume);
        if (!st->claimed_id) {
            (void)r->store->release(r->store, o->resume, &err);
            free(stored);
            snprintf(msg, cap, "out of memory");
            return AL_INTERNAL_ERROR;
        }
        token = stored;
        len = slen;
    }
    rc = cont_decode(token, len, r->keys, r->nkeys, (size_t)st->limits[AL_LIMIT_CONTINUATION_BYTES],
                     &rp->cont, &err);
    free(stored);
    if (rc != AL_OK) {
        snprintf(msg, cap, "%s", err.message);
        return rc;
    }
    rc = check_binding(st, &rp->cont, msg, cap);
    if (rc != AL_OK) {
        return rc;
    }
    size_t n = rp->cont.nentries;
    rp->order = calloc(n ? n : 1, sizeof *rp->order);
    rp->arrived = calloc(n ? n : 1, 1);
    rp->resolution = calloc(n ? n : 1, sizeof *rp->resolution);
    rp->waiting = calloc(n ? n : 1, sizeof *rp->waiting);
    if (!rp->order || !rp->arrived || !rp->resolution || !rp->waiting) {
        snprintf(msg, cap, "out of memory");
        return AL_INTERNAL_ERROR;
    }
    for (size_t i = 0; i < n; i++) {
        const struct cont_entry *e = &rp->cont.entries[i];
        if (e->kind != CONT_INTERRUPTED && !e->sync) {
            rp->order[e->settle] = (uint32_t)i; /* cont_parse checked it is a permutation */
            rp->norder++;
        }
        if (e->id > st->limits[AL_LIMIT_HOST_CALLS]) {
            snprintf(msg, cap, "the continuation holds more host calls than the host-calls limit");
            return AL_PROTOCOL_ERROR;
        }
    }
    rp->missing = n;
    return check_resolutions(st, rp, msg, cap);
}

enum al_code resume_begin(struct run_state *st)
{
    const struct al_runner *r = st->runner;
    const struct al_run_opts *o = st->opts;
    st->recording = r->nkeys > 0;
    if (!o->resume) {
        if (o->nresolutions > 0) {
            return fail_now(st, AL_CONFIG_ERROR,
                            "resolutions are only for a resume (al_run_opts_set_resume)");
        }
        return AL_OK;
    }
    if (r->nkeys == 0) {
        return fail_now(st, AL_CONFIG_ERROR,
                        "resuming needs the continuation key (al_config_set_continuation_key; "
                        "the CLI reads AIRLOCK_CONTINUATION_SECRET)");
    }
    struct replay *rp = calloc(1, sizeof *rp);
    if (!rp) {
        return fail_now(st, AL_INTERNAL_ERROR, "out of memory");
    }
    st->replay = rp;
    char msg[256] = "";
    enum al_code rc = load(st, rp, msg, sizeof msg);
    if (rc != AL_OK) {
        return fail_now(st, rc, msg); /* resume_end releases a claim */
    }
    st->res->stats.seed = rp->cont.seed;
    st->res->stats.clock_ms = rp->cont.clock_ms;
    return AL_OK;
}

/* ------------------------------------------------------------------ during the run */

static void replay_pump(struct run_state *st)
{
    struct replay *rp = st->replay;
    while (!st->done && rp->next < rp->norder && rp->arrived[rp->order[rp->next]]) {
        const struct cont_entry *e = &rp->cont.entries[rp->order[rp->next++]];
        run_emit_answer(st, e->id, e->kind == CONT_THROW ? WIRE_ANSWER_THROW : WIRE_ANSWER_VALUE,
                        e->clock_ms, e->payload, e->len);
    }
}

/* The worker has applied everything recorded and waits: the run is where the first one stopped,
 * and now the people's decisions take effect. Not earlier: a host function that performs an
 * approved action must never run for a replay that could still fail on its way there. */
static void replay_finish(struct run_state *st)
{
    struct replay *rp = st->replay;
    rp->done = 1;
    for (size_t i = 0; i < rp->nwaiting && !st->done; i++) {
        int k = find_entry(&rp->cont, rp->waiting[i]);
        const struct cont_entry *e = &rp->cont.entries[k];
        const struct ledger_call *lc = &st->ledger[e->id - 1];
        run_invoke_host(st, e->id, lc->fn, lc->args, lc->args_len, e, rp->resolution[k]);
    }
}

#define DIVERGED "the run diverged from its continuation: "

void resume_on_call(struct run_state *st, uint32_t id, uint32_t fn, const char *args, size_t len)
{
    const struct host_entry *h = &st->hosts[fn];
    struct ledger_call *lc = ledger_slot(st, id);
    if (!lc) {
        run_fail(st, AL_INTERNAL_ERROR, "out of memory for a host call");
        return;
    }
    lc->state = LEDGER_PENDING;
    lc->fn = fn;
    lc->entry.id = id;
    lc->entry.fn = h->name;
    lc->entry.sync = (h->flags & AL_HOST_SYNC) != 0;
    if (st->recording) {
        lc->args = buf_dup(args, len);
        lc->args_len = len;
        if (!lc->args) {
            run_fail(st, AL_INTERNAL_ERROR, "out of memory for a host call");
            return;
        }
        /* the digest waits for a continuation: most runs never make one */
    }
    struct replay *rp = st->replay;
    if (!rp || rp->done) {
        run_invoke_host(st, id, fn, args, len, NULL, NULL);
        return;
    }
    int k = find_entry(&rp->cont, id);
    if (k < 0) {
        run_fail(st, AL_PROTOCOL_ERROR, DIVERGED "call #%u (to %s) is not in the ledger", id,
                 h->name);
        return;
    }
    const struct cont_entry *e = &rp->cont.entries[k];
    if (strcmp(e->fn, h->name) != 0) {
        run_fail(st, AL_PROTOCOL_ERROR, DIVERGED "call #%u is to %s, the ledger has %s", id,
                 h->name, e->fn);
        return;
    }
    uint8_t digest[CONT_DIGEST];
    cont_sha256(args, len, digest);
    if (memcmp(e->args_digest, digest, CONT_DIGEST) != 0) {
        run_fail(st, AL_PROTOCOL_ERROR,
                 DIVERGED "call #%u to %s has other arguments than the ledger", id, h->name);
        return;
    }
    rp->arrived[k] = 1;
    rp->missing--;
    if (e->kind == CONT_INTERRUPTED) {
        if (rp->resolution[k]) {
            rp->waiting[rp->nwaiting++] = id;
        } else {
            resume_on_interrupt(st, id, e->payload, e->len, e->iid); /* still undecided */
        }
    } else if (e->sync) {
        run_emit_answer(st, id, e->kind == CONT_THROW ? WIRE_ANSWER_THROW : WIRE_ANSWER_VALUE,
                        e->clock_ms, e->payload, e->len);
    }
    replay_pump(st);
}

void resume_on_idle(struct run_state *st, int caught_up)
{
    struct replay *rp = st->replay;
    if (!caught_up || rp->done || st->done) {
        return;
    }
    if (rp->next == rp->norder && rp->missing == 0) {
        replay_finish(st);
        return;
    }
    /* It waits for us, and we wait for a call it will never make. */
    run_fail(st, AL_PROTOCOL_ERROR,
             DIVERGED "it waits without making every call its ledger records");
}

void resume_record_answer(struct run_state *st, uint32_t id, uint8_t kind, int64_t clock_ms,
                          const char *payload, size_t len)
{
    struct ledger_call *lc = id <= st->nledger ? &st->ledger[id - 1] : NULL;
    if (!lc || lc->state != LEDGER_PENDING) {
        return;
    }
    lc->state = LEDGER_ANSWERED;
    if (!st->recording) {
        return;
    }
    struct cont_entry *e = &lc->entry;
    e->kind = kind == WIRE_ANSWER_THROW ? CONT_THROW : CONT_VALUE;
    e->settle = e->sync ? 0 : st->answers_sent++;
    e->clock_ms = clock_ms;
    e->payload = buf_dup(payload, len);
    e->len = len;
    if (!e->payload) {
        run_fail(st, AL_INTERNAL_ERROR, "out of memory recording a host answer");
    }
}

void resume_on_interrupt(struct run_state *st, uint32_t id, const char *payload, size_t len,
                         const uint8_t *keep_iid)
{
    struct ledger_call *lc = id <= st->nledger ? &st->ledger[id - 1] : NULL;
    if (!lc || lc->state != LEDGER_PENDING) {
        return;
    }
    if (lc->entry.sync) {
        run_fail(st, AL_PROTOCOL_ERROR,
                 "%s is a synchronous host function and cannot interrupt the run", lc->entry.fn);
        return;
    }
    if (!st->recording) {
        run_fail(st, AL_CONFIG_ERROR,
                 "%s interrupted the run, but no continuation key is configured "
                 "(al_config_set_continuation_key; the CLI reads AIRLOCK_CONTINUATION_SECRET)",
                 lc->entry.fn);
        return;
    }
    if (len == 0) {
        payload = undefined_json;
        len = sizeof undefined_json - 1;
    } else if (!run_is_json(payload, len)) {
        run_fail(st, AL_PROTOCOL_ERROR,
                 "%s interrupted with a payload that is not valid boundary JSON", lc->entry.fn);
        return;
    }
    struct cont_entry *e = &lc->entry;
    if (keep_iid) {
        memcpy(e->iid, keep_iid, CONT_IID);
    } else if (cont_random(e->iid, CONT_IID) != 0) {
        run_fail(st, AL_INTERNAL_ERROR, "no random bytes for an interruption id");
        return;
    }
    e->kind = CONT_INTERRUPTED;
    e->payload = compact_copy(payload, len, &e->len);
    if (!e->payload) {
        run_fail(st, AL_INTERNAL_ERROR, "out of memory recording an interruption");
        return;
    }
    lc->state = LEDGER_INTERRUPTED;
    st->interrupted++;
    run_emit_answer(st, id, WIRE_ANSWER_INTERRUPT, 0, "", 0);
}

int resume_before_host(struct run_state *st)
{
    st->host_invoked = 1;
    if (!st->claimed_id) {
        return 0;
    }
    struct al_error err = { 0 };
    struct al_store *store = st->runner->store;
    enum al_code rc = store->consume(store, st->claimed_id, &err);
    free(st->claimed_id);
    st->claimed_id = NULL;
    if (rc != AL_OK) {
        run_fail(st, rc, "%s", err.message);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ the end */

static enum al_code make_continuation(struct run_state *st, char *msg, size_t cap)
{
    const struct al_runner *r = st->runner;
    const struct al_run_opts *o = st->opts;
    struct al_result *res = st->res;
    struct continuation c;
    memset(&c, 0, sizeof c);
    struct al_error err = { 0 };

    cont_sha256(o->source, o->source_len, c.source);
    memcpy(c.manifest, st->manifest, CONT_DIGEST);
    cont_sha256(o->context ? o->context : "", o->context ? o->context_len : 0, c.context);
    snprintf(c.audience, sizeof c.audience, "%s", o->audience ? o->audience : "airlock");
    c.issued_ms = clock_wall_ms();
    c.expires_ms = c.issued_ms + (int64_t)r->ttl_ms;
    c.seed = res->stats.seed;
    c.clock_ms = res->stats.clock_ms;
    if (cont_random(c.nonce, sizeof c.nonce) != 0) {
        snprintf(msg, cap, "no random bytes for a continuation");
        return AL_INTERNAL_ERROR;
    }
    c.entries = calloc(st->nledger ? st->nledger : 1, sizeof *c.entries);
    if (!c.entries) {
        snprintf(msg, cap, "out of memory");
        return AL_INTERNAL_ERROR;
    }
    for (uint32_t i = 0; i < st->nledger; i++) {
        struct ledger_call *lc = &st->ledger[i];
        if (lc->state == LEDGER_ANSWERED || lc->state == LEDGER_INTERRUPTED) {
            cont_sha256(lc->args, lc->args_len, lc->entry.args_digest);
            c.entries[c.nentries++] = lc->entry; /* shallow: nothing is freed */
        }
    }
    char *token = NULL;
    size_t tlen = 0;
    enum al_code rc = cont_encode(&c, &r->keys[0], (size_t)st->limits[AL_LIMIT_CONTINUATION_BYTES],
                                  &token, &tlen, &err);
    free(c.entries);
    if (rc != AL_OK) {
        snprintf(msg, cap, "%s", err.message);
        return rc;
    }
    if (r->store) {
        uint8_t raw[16];
        char id[AL_STORE_ID_MAX + 1];
        char hex[CONT_IID_HEX + 1];
        if (cont_random(raw, sizeof raw) != 0) {
            free(token);
            snprintf(msg, cap, "no random bytes for a continuation id");
            return AL_INTERNAL_ERROR;
        }
        cont_iid_hex(raw, hex);
        snprintf(id, sizeof id, "als_%s", hex);
        rc = r->store->put(r->store, id, token, tlen, c.expires_ms, &err);
        free(token);
        if (rc != AL_OK) {
            snprintf(msg, cap, "%s", err.message);
            return rc;
        }
        token = strdup(id);
        tlen = strlen(id);
        if (!token) {
            snprintf(msg, cap, "out of memory");
            return AL_INTERNAL_ERROR;
        }
    }
    res->continuation = token;
    res->continuation_len = tlen;
    return AL_OK;
}

static enum al_code collect_interruptions(struct run_state *st)
{
    struct al_result *res = st->res;
    res->interruptions = calloc(st->interrupted, sizeof *res->interruptions);
    if (!res->interruptions) {
        return AL_INTERNAL_ERROR;
    }
    for (uint32_t i = 0; i < st->nledger; i++) {
        const struct ledger_call *lc = &st->ledger[i];
        if (lc->state != LEDGER_INTERRUPTED) {
            continue;
        }
        struct result_interruption *ri = &res->interruptions[res->ninterruptions++];
        cont_iid_hex(lc->entry.iid, ri->id);
        ri->function = strdup(lc->entry.fn);
        ri->args = buf_dup(lc->args, lc->args_len);
        ri->payload = buf_dup(lc->entry.payload, lc->entry.len);
        if (!ri->function || !ri->args || !ri->payload) {
            return AL_INTERNAL_ERROR;
        }
    }
    return AL_OK;
}

void resume_on_done(struct run_state *st)
{
    struct al_result *res = st->res;
    struct replay *rp = st->replay;
    if (rp && !rp->done) {
        /* A limit is the run's own failure; anything else the guest did early is divergence. */
        enum al_code c = res->code;
        if (st->worker_interrupted || c == AL_OK || c == AL_USER_ERROR ||
            c == AL_HOST_FUNCTION_ERROR || c == AL_DETACHED_BRIDGE_REQUEST ||
            c == AL_SERIALIZATION_ERROR) {
            st->worker_interrupted = 0;
            free(res->value);
            res->value = NULL;
            fail_now(st, AL_PROTOCOL_ERROR,
                     DIVERGED "it ended before making every call its ledger records");
            return;
        }
    }
    if (!st->worker_interrupted) {
        return;
    }
    st->worker_interrupted = 0;
    int pending = 0;
    for (uint32_t i = 0; i < st->nledger; i++) {
        pending |= st->ledger[i].state == LEDGER_PENDING;
    }
    if (st->interrupted == 0 || pending) {
        fail_now(st, AL_PROTOCOL_ERROR, "the worker reported an interruption that did not happen");
        st->kill = 1;
        return;
    }
    char msg[256] = "";
    enum al_code rc = make_continuation(st, msg, sizeof msg);
    if (rc == AL_OK && collect_interruptions(st) != AL_OK) {
        rc = AL_INTERNAL_ERROR;
        snprintf(msg, sizeof msg, "out of memory");
    }
    if (rc != AL_OK) {
        fail_now(st, rc, msg);
        return;
    }
    res->status = AL_STATUS_INTERRUPTED;
    res->code = AL_OK;
}

void resume_end(struct run_state *st, int delivered)
{
    if (st->claimed_id) {
        /* No host function ran (a claim is consumed before the first one): unless the run was
         * delivered completed or interrupted, give the continuation back, so the legitimate
         * resume still works after a failed attempt. */
        struct al_store *store = st->runner->store;
        struct al_error err = { 0 };
        if (delivered && st->res && st->res->status != AL_STATUS_FAILED) {
            (void)store->consume(store, st->claimed_id, &err);
        } else {
            (void)store->release(store, st->claimed_id, &err);
        }
        free(st->claimed_id);
        st->claimed_id = NULL;
    }
    for (uint32_t i = 0; i < st->nledger; i++) {
        free(st->ledger[i].args);
        free(st->ledger[i].entry.payload);
    }
    free(st->ledger);
    st->ledger = NULL;
    st->nledger = 0;
    if (st->replay) {
        cont_free(&st->replay->cont);
        free(st->replay->order);
        free(st->replay->arrived);
        free(st->replay->resolution);
        free(st->replay->waiting);
        free(st->replay);
        st->replay = NULL;
    }
}
