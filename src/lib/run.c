/*
 * run.c - al_run: one run on one worker, and the result it produces.
 *
 * The run loop owns the worker socket and polls it together with the completion eventfd,
 * with a timeout at the next deadline: the wall timeout plus a grace for the worker to report
 * it itself, and the point where the worker's CPU clock could first pass its limit (CPU time
 * never runs faster than wall time, so we sleep until then and re-read it - no polling tick).
 * Past a deadline the worker is killed, whatever it is doing: that is the hard limit that holds
 * inside long builtins. Writes to the worker are non-blocking and queued, so a worker that
 * stops reading cannot stall the host.
 *
 * The worker is untrusted: every frame is bounds-checked, call ids and function indexes are
 * validated, counts and sizes are re-checked, and any violation kills it with PROTOCOL_ERROR.
 */
#include "run.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "error.h"
#include "json.h"
#include "sysname.h"
#include "utf8.h"
#include "wire.h"
#include "workspace.h"

#define RUN_GRACE_US     25000u    /* time the worker gets to report a limit itself */
#define RUN_START_US     10000000u /* a worker not ready by then is broken */
#define RUN_SPIN_US      50u       /* how long the loop looks for news before it sleeps */
#define RUN_CPU_CHECK_US 1000u     /* how often it reads the worker's CPU time */
#define RUN_MAX_FRAME    (160u << 20)
#define RUN_JSON_DEPTH   4096 /* above the worker's own value depth: any honest value passes */

/* Decides the run's failure from the host side (the worker is killed). */
void run_fail(struct run_state *st, enum al_code code, const char *fmt, ...)
{
    if (st->done) {
        return;
    }
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    st->done = 1;
    st->kill = 1;
    st->res->status = AL_STATUS_FAILED;
    st->res->code = code;
    free(st->res->message);
    st->res->message = strdup(msg);
    st->res->message_len = st->res->message ? strlen(msg) : 0;
}

static void emit(const struct run_state *st, struct al_event *ev)
{
    ev->run_id = st->res->run_id;
    if (!ev->text) {
        ev->text = "";
    }
    if (!ev->function) {
        ev->function = "";
    }
    if (!ev->args) {
        ev->args = "";
    }
    if (!ev->interruption_id) {
        ev->interruption_id = "";
    }
    st->opts->event_fn(ev, st->opts->event_userdata);
}

static int add_console(struct al_result *res, enum al_console_level level, const char *text,
                       size_t len)
{
    if (res->nconsole == res->cap_console) {
        size_t cap = res->cap_console ? res->cap_console * 2 : 16;
        struct console_entry *c = realloc(res->console, cap * sizeof *c);
        if (!c) {
            return -1;
        }
        res->console = c;
        res->cap_console = cap;
    }
    size_t tlen;
    char *t = utf8_valid_dup(text, len, 0, &tlen);
    if (!t) {
        return -1;
    }
    res->console[res->nconsole++] = (struct console_entry){ level, t, tlen };
    return 0;
}

/* What the worker hands on to the application must be what the protocol promises - JSON -
 * even from a compromised worker: the CLI prints it and splices it into co-process lines. */
int run_is_json(const char *text, size_t len)
{
    return len > 0 && json_check(text, len, RUN_JSON_DEPTH, NULL) == AL_OK;
}

static int is_json_array(const char *text, size_t len)
{
    return len > 0 && text[0] == '[' && run_is_json(text, len);
}

/* Carries out the ledger's decision, then whatever that made due. */
static void carry_out(struct run_state *st, struct ledger_action *a)
{
    for (;;) {
        switch (a->what) {
        case LEDGER_NONE:
            break;
        case LEDGER_INVOKE:
            run_invoke_host(st, a->id, a->fn, a->args, a->args_len, a->resumed, a->resolution);
            break;
        case LEDGER_ANSWER:
            if (!a->held) {
                st->last_clock_ms = a->clock_ms; /* replayed: a held one's counted when made */
            }
            run_emit_answer(st, a->id, a->kind, a->clock_ms, a->payload, a->len);
            break;
        case LEDGER_INTERRUPT:
            run_emit_answer(st, a->id, WIRE_ANSWER_INTERRUPT, 0, "", 0);
            break;
        case LEDGER_DIVERGED:
        case LEDGER_FAIL:
            run_fail(st, a->code, "%s", a->message);
            break;
        }
        if (st->done || ledger_next(st->ledger, a) == LEDGER_NONE) {
            return;
        }
    }
}

static void on_call(struct run_state *st, struct wire_cursor *c)
{
    uint32_t id = wire_get_u32(c);
    uint32_t fn = wire_get_u32(c);
    size_t len;
    const char *args = wire_get_str(c, &len);
    uint32_t line = wire_get_u32(c);
    int file = !c->bad && fn < st->nhosts && (st->hosts[fn].flags & HOST_FILE) != 0;
    if (c->bad || fn >= st->nhosts || id == 0 || id > st->limits[AL_LIMIT_HOST_CALLS] ||
        st->calls[id - 1] || st->in_flight >= st->limits[AL_LIMIT_IN_FLIGHT] ||
        len > (file ? st->file_args_max : st->limits[AL_LIMIT_HOST_ARGS_BYTES]) ||
        line >= (1u << 20) || !is_json_array(args, len)) {
        run_fail(st, AL_PROTOCOL_ERROR, "the worker sent an invalid host call");
        return;
    }
    st->calls[id - 1] = RUN_CALL_SEEN | line;
    st->in_flight++;
    const struct host_entry *h = &st->hosts[fn];
    /* A workspace write answered from a journal or continuation happened in the first run:
     * the fresh workspace gets it again, in call order, before the answer is replayed. One
     * that failed there is not tried again: a mount that answers now would make it succeed. */
    int op = file ? ws_op_of(h->name) : -1;
    const char *answer = NULL;
    size_t answer_len = 0;
    int replay_write = op >= 0 && ws_op_mutates(op) &&
                       ledger_will_replay_value(st->ledger, id, &answer, &answer_len);
    struct ledger_action a; /* from a continuation's ledger, or the host */
    ledger_on_call(st->ledger, id, fn, h->name, (h->flags & AL_HOST_SYNC) != 0, args, len, &a);
    if (replay_write && a.what != LEDGER_DIVERGED && a.what != LEDGER_FAIL) {
        ws_replay(st->opts->workspace, op, args, len, answer, answer_len);
    }
    carry_out(st, &a);
}

void run_invoke_host(struct run_state *st, uint32_t id, uint32_t fn, const char *args,
                     size_t args_len, const struct cont_entry *resumed,
                     const struct resolution *resolution)
{
    struct al_error err;
    enum al_code rc = ledger_before_host(st->ledger, &err);
    if (rc != AL_OK) {
        run_fail(st, rc, "%s", err.message);
        return;
    }
    st->host_calls++;
    const struct host_entry *h = &st->hosts[fn];
    struct al_call *call = host_call_new(st->link, id, fn, h->name, args, args_len);
    if (call) {
        call->line = st->calls[id - 1] & ~RUN_CALL_SEEN;
    }
    if (call && resumed) {
        call->resumed = 1;
        memcpy(call->iid, resumed->iid, CONT_IID);
        cont_iid_hex(resumed->iid, call->iid_hex);
        call->resume_payload = buf_dup(resumed->payload, resumed->len);
        call->resume_payload_len = resumed->len;
        struct buf one_line; /* the CLI puts it in an environment variable and JSON lines */
        buf_init(&one_line, SIZE_MAX / 2);
        if (json_write_compact(&one_line, resolution->json, resolution->len) == BUF_OK &&
            one_line.data) {
            call->resolution = buf_steal(&one_line, &call->resolution_len);
        }
        buf_done(&one_line);
        if (!call->resume_payload || !call->resolution) {
            al_call_throw(call, "host out of memory");
            call = NULL;
            run_fail(st, AL_INTERNAL_ERROR, "out of memory for a host call");
            return;
        }
    }
    if (!call) {
        run_fail(st, AL_INTERNAL_ERROR, "out of memory for a host call");
        return;
    }
    if (st->opts->event_fn) {
        call->start_us = clock_mono_us(); /* for the CALL_END event's duration */
        struct al_event ev = {
            .kind = AL_EVENT_CALL_START,
            .seq = id,
            .function = h->name,
            .args = args,
            .args_len = args_len,
        };
        emit(st, &ev);
    }
    h->fn(call, h->userdata); /* an answer given at once is queued and flagged on the link */
}

static void on_console(struct run_state *st, struct wire_cursor *c)
{
    uint8_t level = wire_get_u8(c);
    size_t len;
    const char *text = wire_get_str(c, &len);
    /* The worker adds one truncation note past the limit; allow it, nothing more. */
    if (c->bad || level > AL_CONSOLE_DEBUG ||
        st->console_bytes + len + 1 > st->limits[AL_LIMIT_CONSOLE_BYTES] + 256) {
        run_fail(st, AL_PROTOCOL_ERROR, "the worker sent an invalid console entry");
        return;
    }
    st->console_bytes += len + 1; /* as the worker counts: text plus a line break */
    if (add_console(st->res, (enum al_console_level)level, text, len) != 0) {
        run_fail(st, AL_INTERNAL_ERROR, "out of memory for console output");
        return;
    }
    if (st->opts->event_fn) {
        const struct console_entry *e = &st->res->console[st->res->nconsole - 1];
        struct al_event ev = {
            .kind = AL_EVENT_CONSOLE,
            .level = e->level,
            .text = e->text,
            .text_len = e->len,
        };
        emit(st, &ev);
    }
}

static void on_done(struct run_state *st, struct wire_cursor *c)
{
    struct al_result *res = st->res;
    uint32_t code = wire_get_u32(c);
    size_t vlen, nlen, mlen, slen;
    const char *value = wire_get_str(c, &vlen);
    const char *name = wire_get_str(c, &nlen);
    const char *message = wire_get_str(c, &mlen);
    const char *stack = wire_get_str(c, &slen);
    uint64_t cpu_us = wire_get_u64(c);
    uint64_t peak = wire_get_u64(c);
    uint32_t calls = wire_get_u32(c);
    int interrupted = code == WIRE_DONE_INTERRUPTED;
    if (interrupted) {
        code = AL_OK;
        vlen = 0;
    }
    if (c->bad || code > AL_INTERNAL_ERROR ||
        (code == AL_OK && !interrupted && !run_is_json(value, vlen)) ||
        vlen > st->limits[AL_LIMIT_RESULT_BYTES] || nlen > AL_ERROR_NAME_MAX ||
        mlen > AL_ERROR_MESSAGE_MAX || slen > AL_ERROR_STACK_MAX) {
        run_fail(st, AL_PROTOCOL_ERROR, "the worker sent an invalid result");
        return;
    }
    res->code = (enum al_code)code;
    res->status = code == AL_OK ? AL_STATUS_COMPLETED : AL_STATUS_FAILED;
    if (code == AL_OK && !interrupted) {
        res->value = buf_dup(value, vlen);
        res->value_len = vlen;
    }
    free(res->message);
    res->name = utf8_valid_dup(name, nlen, UTF8_C080_IS_NUL, &res->name_len);
    res->message = utf8_valid_dup(message, mlen, UTF8_C080_IS_NUL, &res->message_len);
    res->stack = utf8_valid_dup(stack, slen, UTF8_C080_IS_NUL, &res->stack_len);
    /* the worker's own figures; measure_worker replaces them with what the host sees */
    res->stats.cpu_us = cpu_us;
    res->stats.peak_memory_bytes = peak;
    (void)calls; /* the guest's own count; the host counts what reached it */
    if ((code == AL_OK && !interrupted && !res->value) || !res->name || !res->message ||
        !res->stack) {
        run_fail(st, AL_INTERNAL_ERROR, "out of memory for the result");
        return;
    }
    st->done = 1;
    struct ledger_outcome out;
    struct al_error err;
    enum al_code rc = ledger_on_done(st->ledger, interrupted, res->code, &out, &err);
    if (rc != AL_OK) {
        st->kill |= out.worker_lied;
        run_fail_result(res, rc, err.message);
        return;
    }
    if (out.interrupted) {
        res->status = AL_STATUS_INTERRUPTED;
        res->code = AL_OK;
        res->continuation = out.continuation;
        res->continuation_len = out.continuation_len;
        res->interruptions = out.interruptions;
        res->ninterruptions = out.ninterruptions;
    }
}

/* The largest body an honest worker sends in a frame of `type` under this run's limits (0:
 * a type the worker never sends), so an oversized frame fails as soon as its header arrives,
 * before the host buffers it. */
static uint64_t frame_cap(const struct run_state *st, uint8_t type)
{
    const uint64_t *l = st->limits;
    switch (type) {
    case WIRE_READY:
    case WIRE_FAULT:
    case WIRE_IDLE:
        return 16;
    case WIRE_CALL:
        return 1 + 4 + 4 + 4 + 4 +
               (l[AL_LIMIT_HOST_ARGS_BYTES] > st->file_args_max ? l[AL_LIMIT_HOST_ARGS_BYTES]
                                                                : st->file_args_max);
    case WIRE_CONSOLE:
        return 1 + 1 + 4 + l[AL_LIMIT_CONSOLE_BYTES] + 256;
    case WIRE_DONE:
        return 1 + 4 + 4 * 4 + l[AL_LIMIT_RESULT_BYTES] + AL_ERROR_NAME_MAX + AL_ERROR_MESSAGE_MAX +
               AL_ERROR_STACK_MAX + 8 + 8 + 4;
    default:
        return 0;
    }
}

/* 0, or -1 when the (possibly incomplete) frame at p declares a body above its type's cap. */
static int check_frame_header(const struct run_state *st, const uint8_t *p, size_t avail)
{
    if (avail < WIRE_HEADER_BYTES + 1) {
        return 0;
    }
    uint32_t body =
            (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    uint64_t cap = frame_cap(st, p[WIRE_HEADER_BYTES]);
    return body <= cap ? 0 : -1; /* an unknown type has cap 0 */
}

/* Walks the frame headers that arrived since the last walk: 0 once one is above its type's
 * cap, so a worker that keeps the socket full cannot make the host buffer an oversized frame. */
static int headers_within_caps(struct run_state *st)
{
    while (st->in_checked + WIRE_HEADER_BYTES + 1 <= st->in.len) {
        const uint8_t *p = (const uint8_t *)st->in.data + st->in_checked;
        if (check_frame_header(st, p, st->in.len - st->in_checked) != 0) {
            return 0;
        }
        uint32_t body =
                (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        st->in_checked += WIRE_HEADER_BYTES + (size_t)body;
    }
    return 1;
}

/* Parses every complete frame in st->in. */
static void read_frames(struct run_state *st)
{
    size_t off = 0;
    while (!st->done) {
        uint8_t type;
        struct wire_cursor c;
        size_t flen;
        if (check_frame_header(st, (const uint8_t *)st->in.data + off, st->in.len - off) != 0) {
            const uint8_t *p = (const uint8_t *)st->in.data + off;
            if (frame_cap(st, p[WIRE_HEADER_BYTES]) == 0 && p[1] == 0 && p[2] == 0 && p[3] == 0) {
                run_fail(st, AL_PROTOCOL_ERROR, "the worker sent an unknown frame type %u",
                         p[WIRE_HEADER_BYTES]);
                break;
            }
            run_fail(st, AL_PROTOCOL_ERROR,
                     "the worker sent a malformed frame (type %u, a %u-byte body above its cap)",
                     p[WIRE_HEADER_BYTES],
                     (unsigned)p[0] | (unsigned)p[1] << 8 | (unsigned)p[2] << 16 |
                             (unsigned)p[3] << 24);
            break;
        }
        int r = wire_next(st->in.data + off, st->in.len - off, RUN_MAX_FRAME, &type, &c, &flen);
        if (r == 0) {
            break;
        }
        if (r < 0) {
            run_fail(st, AL_PROTOCOL_ERROR, "the worker sent a malformed frame");
            break;
        }
        if (!st->ready && type != WIRE_READY) {
            run_fail(st, AL_PROTOCOL_ERROR, "the worker sent frame type %u before READY", type);
            break;
        }
        switch (type) {
        case WIRE_READY: {
            uint8_t flags = wire_get_u8(&c);
            if (st->ready || c.bad || c.left != 0) {
                run_fail(st, AL_PROTOCOL_ERROR, "the worker sent an unexpected READY");
                break;
            }
            st->res->stats.jailed = (flags & WIRE_READY_JAILED) != 0;
            if (!st->res->stats.jailed && !st->runner->unsafe_no_jail) {
                run_fail(st, AL_CONFIG_ERROR,
                         "the worker's seccomp jail cannot be applied on this machine; "
                         "running guests without it needs al_config_set_unsafe_no_jail "
                         "(--unsafe-no-jail)");
                break;
            }
            st->ready = 1;
            st->ready_us = clock_mono_us();
            st->cpu_base_us = clock_process_cpu_us(st->proc.pid);
            st->cpu_read_us = 0;
            break;
        }
        case WIRE_FAULT: {
            uint32_t nr = wire_get_u32(&c);
            const char *name = sysname_of((long)nr);
            run_fail(st, AL_WORKER_CRASHED,
                     "the jail stopped the worker at a forbidden system call: %s (%u)",
                     name ? name : "unknown", nr);
            break;
        }
        case WIRE_CALL:
            on_call(st, &c);
            break;
        case WIRE_CONSOLE:
            on_console(st, &c);
            break;
        case WIRE_DONE:
            on_done(st, &c);
            break;
        case WIRE_IDLE: {
            uint32_t applied = wire_get_u32(&c);
            if (c.bad || !ledger_replaying(st->ledger) || applied > st->frames_sent) {
                run_fail(st, AL_PROTOCOL_ERROR, "the worker sent an unexpected IDLE");
                break;
            }
            struct ledger_action a;
            ledger_on_idle(st->ledger, applied == st->frames_sent, &a);
            carry_out(st, &a);
            break;
        }
        default:
            run_fail(st, AL_PROTOCOL_ERROR, "the worker sent an unknown frame type %u", type);
            break;
        }
        if (!st->done && c.left != 0) {
            run_fail(st, AL_PROTOCOL_ERROR, "the worker sent a frame with trailing bytes");
        }
        off += flen;
    }
    if (off > 0) {
        memmove(st->in.data, st->in.data + off, st->in.len - off);
        st->in.len -= off;
        st->in_checked = st->in_checked > off ? st->in_checked - off : 0;
    }
}

void run_emit_answer(struct run_state *st, uint32_t id, uint8_t kind, int64_t clock_ms,
                     const char *payload, size_t len)
{
    size_t start;
    if (wire_begin(&st->out, WIRE_ANSWER, &start) != BUF_OK || wire_u32(&st->out, id) != BUF_OK ||
        wire_u8(&st->out, kind) != BUF_OK || wire_u64(&st->out, (uint64_t)clock_ms) != BUF_OK ||
        wire_str(&st->out, payload, len) != BUF_OK) {
        run_fail(st, AL_INTERNAL_ERROR, "out of memory for a host answer");
        return;
    }
    wire_end(&st->out, start);
    st->frames_sent++;
    if (kind != WIRE_ANSWER_INTERRUPT) {
        st->in_flight--; /* an interrupted call stays in flight for the worker too */
        struct al_error err;
        if (ledger_on_answer(st->ledger, id, kind, clock_ms, payload, len, &err) != AL_OK) {
            run_fail(st, AL_INTERNAL_ERROR, "%s", err.message);
        }
    }
}

/* A live answer of a run with a journal callback: journaled, then delivered in its turn (the
 * callback may hold it, and then every answer after it, until al_run_journal_release). */
static void deliver_journaled(struct run_state *st, const struct completion *c, int64_t clock_ms)
{
    struct al_journal_entry e;
    if (ledger_journal(st->ledger, c->id, c->kind, clock_ms, c->payload, c->len, &e) != 0) {
        run_emit_answer(st, c->id, c->kind, clock_ms, c->payload, c->len); /* no such call */
        return;
    }
    enum al_journal_verdict v = st->opts->journal_fn(&e, st->opts->journal_userdata);
    if (v == AL_JOURNAL_FAIL) {
        run_fail(st, AL_INTERNAL_ERROR,
                 "the journal could not keep the answer at position %u (call %u)", e.position,
                 e.call);
        return;
    }
    if (v != AL_JOURNAL_DELIVER && v != AL_JOURNAL_HOLD) {
        run_fail(st, AL_CONFIG_ERROR, "the journal callback returned %d for position %u", (int)v,
                 e.position);
        return;
    }
    if (v == AL_JOURNAL_HOLD && !st->can_hold) {
        run_fail(st, AL_CONFIG_ERROR,
                 "the journal callback held position %u, but only a run started with "
                 "al_run_start can be released (al_run_journal_release)",
                 e.position);
        return;
    }
    /* The callback may have released it already, from this thread or another. */
    ledger_release(st->ledger, atomic_load(&st->link->released));
    struct ledger_action a;
    ledger_deliver(st->ledger, &e, c->kind, v == AL_JOURNAL_HOLD, &a);
    carry_out(st, &a);
}

/* Turns queued completions into ANSWER frames. */
static void send_answers(struct run_state *st)
{
    struct completion *list = host_link_take(st->link);
    for (struct completion *c = list; c && !st->done; c = c->next) {
        int file = c->fn < st->nhosts && (st->hosts[c->fn].flags & HOST_FILE) != 0;
        if (!WIRE_ANSWER_THREW(c->kind) && !file &&
            c->len > st->limits[AL_LIMIT_HOST_OUTPUT_BYTES]) {
            run_fail(st, AL_BRIDGE_LIMIT,
                     "the %s of host call #%u exceeds the host-output limit of %llu bytes",
                     c->kind == WIRE_ANSWER_INTERRUPT ? "interruption payload" : "answer", c->id,
                     (unsigned long long)st->limits[AL_LIMIT_HOST_OUTPUT_BYTES]);
            break;
        }
        if (st->opts->event_fn && c->fn < st->nhosts) {
            /* the host's own message, held to the same promise as the guest's texts */
            size_t tlen = 0;
            char *text = WIRE_ANSWER_THREW(c->kind) ? utf8_valid_dup(c->payload, c->len, 0, &tlen)
                                                    : NULL;
            struct al_event ev = {
                .kind = AL_EVENT_CALL_END,
                .seq = c->id,
                .function = st->hosts[c->fn].name,
                .outcome = WIRE_ANSWER_THREW(c->kind)         ? AL_CALL_THREW
                           : c->kind == WIRE_ANSWER_INTERRUPT ? AL_CALL_INTERRUPTED
                                                              : AL_CALL_RETURNED,
                .duration_us = clock_mono_us() - c->start_us,
                .text = text ? text : "",
                .text_len = text ? tlen : 0,
            };
            emit(st, &ev);
            free(text);
        }
        if (c->kind == WIRE_ANSWER_INTERRUPT) {
            struct ledger_action a;
            ledger_on_interrupt(st->ledger, c->id, c->payload, c->len, c->keep_iid ? c->iid : NULL,
                                &a);
            carry_out(st, &a);
            continue;
        }
        /* The guest's clock: the answer's wall time, or one fixed step past the last answer. */
        int64_t clock_ms = c->clock_ms;
        if (st->opts->clock_mode == AL_CLOCK_LOGICAL) {
            uint64_t step = st->opts->clock_step_ms;
            clock_ms = st->last_clock_ms > AL_CLOCK_MAX_MS - (int64_t)step
                               ? AL_CLOCK_MAX_MS
                               : st->last_clock_ms + (int64_t)step;
        }
        st->last_clock_ms = clock_ms; /* an interruption carries no clock */
        if (st->opts->journal_fn) {
            deliver_journaled(st, c, clock_ms);
        } else {
            run_emit_answer(st, c->id, c->kind, clock_ms, c->payload, c->len);
        }
    }
    host_completion_free(list);
}

static void write_out(struct run_state *st)
{
    while (st->out_off < st->out.len) {
        ssize_t n = send(st->proc.fd, st->out.data + st->out_off, st->out.len - st->out_off,
                         MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                st->out_off = st->out.len; /* the worker is gone; EOF tells the rest */
            }
            break;
        }
        st->out_off += (size_t)n;
    }
    if (st->out_off == st->out.len) {
        buf_reset(&st->out);
        st->out_off = 0;
    }
}

static enum al_code build_run_frame(struct run_state *st, const struct al_run_opts *opts)
{
    struct buf *b = &st->out;
    size_t start;
    int bad = wire_begin(b, WIRE_RUN, &start) != BUF_OK;
    for (int i = 0; i < AL_LIMIT_COUNT_; i++) {
        bad |= wire_u64(b, st->limits[i]) != BUF_OK;
    }
    bad |= wire_u64(b, st->res->stats.seed) != BUF_OK;
    bad |= wire_u64(b, (uint64_t)st->res->stats.clock_ms) != BUF_OK;
    bad |= wire_u8(b, (ledger_replaying(st->ledger) ? WIRE_RUN_REPORT_IDLE : 0) |
                              ((opts->source_type & AL_SOURCE_MODULE) ? WIRE_RUN_MODULE : 0) |
                              ((opts->source_type & AL_SOURCE_TYPESCRIPT) ? WIRE_RUN_TYPESCRIPT
                                                                          : 0)) != BUF_OK;
    bad |= wire_str(b, opts->filename, strlen(opts->filename)) != BUF_OK;
    bad |= wire_u32(b, (uint32_t)st->nhosts) != BUF_OK;
    for (size_t i = 0; i < st->nhosts; i++) {
        const struct host_entry *h = &st->hosts[i];
        bad |= wire_str(b, h->name, strlen(h->name)) != BUF_OK;
        bad |= wire_u8(b, ((h->flags & AL_HOST_SYNC) ? WIRE_FN_SYNC : 0) |
                                  ((h->flags & HOST_HIDDEN) ? WIRE_FN_HIDDEN : 0) |
                                  ((h->flags & HOST_FILE) ? WIRE_FN_FILE : 0)) != BUF_OK;
    }
    bad |= wire_u64(b, st->file_args_max) != BUF_OK;
    bad |= wire_str(b, opts->source, opts->source_len) != BUF_OK;
    if (bad) {
        return AL_INTERNAL_ERROR;
    }
    wire_end(b, start);
    return AL_OK;
}

void run_fail_result(struct al_result *res, enum al_code code, const char *msg)
{
    res->status = AL_STATUS_FAILED;
    res->code = code;
    free(res->message);
    res->message = strdup(msg);
    res->message_len = res->message ? strlen(msg) : 0;
    res->name_len = res->stack_len = 0;
    /* none of the guest's error or value stays behind */
    free(res->name);
    free(res->stack);
    free(res->value);
    res->name = NULL;
    res->stack = NULL;
    res->value = NULL;
}

/* Reads what the worker has sent, without waiting. Returns 1 if bytes arrived, else 0; *eof is
 * set once the worker has closed its end or the socket failed (the worker is gone). */
static int read_socket(struct run_state *st, int *eof)
{
    int got = 0;
    for (;;) {
        enum buf_status bs;
        char *p = buf_reserve(&st->in, 64 * 1024, &bs);
        if (!p) {
            run_fail(st, AL_PROTOCOL_ERROR, "the worker sent more than a frame can hold");
            return got;
        }
        ssize_t n = recv(st->proc.fd, p, 64 * 1024, MSG_DONTWAIT);
        if (n > 0) {
            buf_commit(&st->in, (size_t)n);
            got = 1;
            if ((size_t)n < 64 * 1024 || !headers_within_caps(st)) {
                return got; /* a frame above its cap stops the reading; read_frames says why */
            }
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            *eof = 1;
        }
        return got;
    }
}

/* The worker's CPU time since READY, read at most once per RUN_CPU_CHECK_US of wall time: the
 * read is a system call, and a run with many host calls would otherwise pay it per call. */
static uint64_t run_cpu_us(struct run_state *st, uint64_t now)
{
    if (st->cpu_read_us == 0 || now - st->cpu_read_us >= RUN_CPU_CHECK_US) {
        uint64_t cpu = clock_process_cpu_us(st->proc.pid);
        st->cpu_read_us = now;
        st->cpu_last_us = cpu == UINT64_MAX || st->cpu_base_us == UINT64_MAX
                                  ? UINT64_MAX
                                  : cpu - (cpu < st->cpu_base_us ? cpu : st->cpu_base_us);
    }
    return st->cpu_last_us;
}

static enum al_code merge_hosts(struct run_state *st, const struct host_entry *oh, size_t on,
                                char *msg, size_t msg_len);

/* A run's host table: the runner's, or - when the run brings functions of its own - both,
 * each group's functions contiguous (the worker builds one frozen object per group). */
static enum al_code build_hosts(struct run_state *st, char *msg, size_t msg_len)
{
    const struct al_runner *r = st->runner;
    const struct al_run_opts *o = st->opts;
    if (o->nhosts == 0 && !o->workspace) {
        st->hosts = r->hosts;
        st->nhosts = r->nhosts;
        memcpy(st->manifest, r->manifest, CONT_DIGEST);
        return AL_OK;
    }
    /* the run's own functions: the options', then the workspace's operations */
    size_t nown = o->nhosts + (o->workspace ? WS_OPS_COUNT : 0);
    struct host_entry *own = malloc(nown * sizeof *own);
    if (!own) {
        snprintf(msg, msg_len, "out of memory");
        return AL_INTERNAL_ERROR;
    }
    if (o->nhosts > 0) {
        memcpy(own, o->hosts, o->nhosts * sizeof *own); /* hosts is NULL when there are none */
    }
    for (size_t i = 0; o->workspace && i < WS_OPS_COUNT; i++) {
        own[o->nhosts + i] = (struct host_entry){ ws_host_names[i], 9, ws_host, o->workspace,
                                                  HOST_HIDDEN | HOST_FILE };
    }
    enum al_code rc = merge_hosts(st, own, nown, msg, msg_len);
    free(own);
    return rc;
}

/* The runner's table and the run's own functions `oh`, merged (see build_hosts). */
static enum al_code merge_hosts(struct run_state *st, const struct host_entry *oh, size_t on,
                                char *msg, size_t msg_len)
{
    const struct al_runner *r = st->runner;
    for (size_t i = 0; i < on; i++) {
        const struct host_entry *h = &oh[i];
        for (size_t j = 0; j < r->nhosts; j++) {
            const struct host_entry *g = &r->hosts[j];
            if (strcmp(g->name, h->name) == 0) {
                snprintf(msg, msg_len, "the run's host function %s is the runner's too", h->name);
                return AL_CONFIG_ERROR;
            }
            if (g->group_len == h->group_len && memcmp(g->name, h->name, h->group_len) == 0 &&
                (g->flags & AL_HOST_SYNC) != (h->flags & AL_HOST_SYNC)) {
                snprintf(msg, msg_len,
                         "the run's host function %s and the runner's %s disagree on "
                         "AL_HOST_SYNC",
                         h->name, g->name);
                return AL_CONFIG_ERROR;
            }
        }
    }
    size_t n = r->nhosts + on;
    struct host_entry *all = malloc(n * sizeof *all);
    const struct host_entry **order = malloc(n * sizeof *order);
    if (!all || !order) {
        free(all);
        free(order);
        snprintf(msg, msg_len, "out of memory");
        return AL_INTERNAL_ERROR;
    }
    for (size_t i = 0; i < r->nhosts; i++) {
        order[i] = &r->hosts[i];
    }
    for (size_t i = 0; i < on; i++) {
        order[r->nhosts + i] = &oh[i];
    }
    /* groups in order of first appearance, the runner's first */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!order[i]) {
            continue;
        }
        const struct host_entry *lead = order[i];
        for (size_t j = i; j < n; j++) {
            if (order[j] && order[j]->group_len == lead->group_len &&
                memcmp(order[j]->name, lead->name, lead->group_len) == 0) {
                all[k++] = *order[j];
                if (j != i) {
                    order[j] = NULL;
                }
            }
        }
        order[i] = NULL;
    }
    free(order);
    st->own_hosts = all;
    st->hosts = all;
    st->nhosts = n;
    if (runner_manifest(all, n, r->module_identity, st->manifest) != AL_OK) {
        snprintf(msg, msg_len, "out of memory");
        return AL_INTERNAL_ERROR;
    }
    return AL_OK;
}

void run_fail_early(struct run_state *st, enum al_code code, const char *msg)
{
    run_fail_result(st->res, code, msg);
    st->done = 1;
}

static void set_rc(struct run_state *st, enum al_code code, const char *msg)
{
    st->rc = error_set(&st->err, code, "%s", msg);
    st->done = 1;
}

int run_prepare(struct run_state *st, struct al_runner *runner, const struct al_run_opts *opts)
{
    memset(st, 0, sizeof *st);
    st->start_us = clock_mono_us();
    st->proc.pid = -1;
    st->proc.fd = -1;
    st->proc.pidfd = -1;
    st->runner = runner;
    st->opts = opts;
    buf_init(&st->in, RUN_MAX_FRAME + 128 * 1024);
    buf_init(&st->out, SIZE_MAX / 2);
    struct al_result *res = calloc(1, sizeof *res);
    st->link = host_link_new();
    if (!res || !st->link) {
        free(res);
        st->res = NULL;
        set_rc(st, AL_INTERNAL_ERROR, "out of memory");
        return -1;
    }
    st->res = res;
    if (opts->run_id[0]) {
        memcpy(res->run_id, opts->run_id, sizeof res->run_id);
    } else {
        uint8_t rnd[16];
        if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
            uint64_t t = clock_mono_us() ^ (uint64_t)(uintptr_t)st;
            memcpy(rnd, &t, sizeof t);
            memcpy(rnd + 8, &t, sizeof t);
        }
        for (size_t i = 0; i < sizeof rnd; i++) {
            snprintf(res->run_id + 2 * i, 3, "%02x", rnd[i]);
        }
    }
    memcpy(st->link->run_id, res->run_id, sizeof st->link->run_id);
    st->link->userdata = opts->userdata;
    for (int i = 0; i < AL_LIMIT_COUNT_; i++) {
        st->limits[i] = opts->limit_set[i] ? opts->limits[i] : runner->limits[i];
    }
    if (!opts->limit_set[AL_LIMIT_CPU_MS] && !runner->limit_set[AL_LIMIT_CPU_MS]) {
        st->limits[AL_LIMIT_CPU_MS] = st->limits[AL_LIMIT_TIMEOUT_MS]; /* CPU follows the timeout */
    }
    if (opts->has_seed) {
        res->stats.seed = opts->seed;
    } else if (getrandom(&res->stats.seed, sizeof res->stats.seed, 0) !=
               (ssize_t)sizeof res->stats.seed) {
        res->stats.seed = clock_mono_us() ^ ((uint64_t)getpid() << 32);
    }
    res->stats.clock_ms = opts->has_clock ? opts->clock_ms : clock_wall_ms();
    st->last_clock_ms = res->stats.clock_ms;
    if (res->stats.clock_ms < -AL_CLOCK_MAX_MS || res->stats.clock_ms > AL_CLOCK_MAX_MS) {
        run_fail_early(st, AL_CONFIG_ERROR,
                       "the clock is outside the range of a JavaScript Date (+-8.64e15 ms)");
        return -1;
    }
    char msg[200];
    if (opts->source_len > st->limits[AL_LIMIT_SOURCE_BYTES]) {
        snprintf(msg, sizeof msg, "the source is %zu bytes, above the source limit of %llu bytes",
                 opts->source_len, (unsigned long long)st->limits[AL_LIMIT_SOURCE_BYTES]);
        run_fail_early(st, AL_SOURCE_TOO_LARGE, msg);
        return -1;
    }
    if (opts->workspace && ws_missing_mount(opts->workspace)) {
        snprintf(msg, sizeof msg,
                 "the workspace's mount %.100s was not set (al_workspace_set_mount)",
                 ws_missing_mount(opts->workspace));
        run_fail_early(st, AL_CONFIG_ERROR, msg);
        return -1;
    }
    st->file_args_max = opts->workspace ? ws_args_max(opts->workspace) : 0;
    enum al_code hc = build_hosts(st, msg, sizeof msg);
    if (hc == AL_INTERNAL_ERROR) {
        set_rc(st, hc, msg);
        return -1;
    }
    if (hc != AL_OK) {
        run_fail_early(st, hc, msg);
        return -1;
    }
    return 0;
}

int run_launch(struct run_state *st)
{
    struct al_result *res = st->res;
    struct al_error lerr;
    enum al_code lrc = ledger_begin(st->runner, st->opts, st->limits, st->manifest, res->stats.seed,
                                    res->stats.clock_ms, &st->ledger, &lerr);
    if (lrc != AL_OK) {
        run_fail_early(st, lrc, lerr.message);
        return -1; /* nothing was invoked */
    }
    res->stats.seed = ledger_seed(st->ledger);
    res->stats.clock_ms = ledger_clock(st->ledger);
    st->last_clock_ms = res->stats.clock_ms;
    st->calls = calloc((size_t)st->limits[AL_LIMIT_HOST_CALLS], sizeof *st->calls);
    if (!st->calls || build_run_frame(st, st->opts) != AL_OK) {
        set_rc(st, AL_INTERNAL_ERROR, "out of memory");
        return -1;
    }
    enum al_code rc = pool_take(st->runner->pool, &st->proc, &st->err);
    if (rc != AL_OK) {
        st->rc = rc;
        st->done = 1;
        pool_refill(st->runner->pool); /* the pool thread tries again too */
        return -1;
    }
    /* The worker's start-up deadline counts from here: time spent in the admission queue is
     * not the worker's. */
    st->start_us = clock_mono_us();
    write_out(st);
    return 0;
}

int run_wants_write(const struct run_state *st)
{
    return st->out.len > 0;
}

int run_step(struct run_state *st, int *ret_busy)
{
    /* A frame that ends the spin's extension must be a whole call or answer: a worker
     * trickling bytes cannot keep the driver from sleeping. */
    uint32_t sent = st->frames_sent;
    uint32_t calls = st->host_calls;
    int eof = 0;
    if (read_socket(st, &eof)) {
        read_frames(st); /* whatever arrived before an EOF still counts */
    }
    if (atomic_load(&st->link->cancelled)) {
        run_fail(st, AL_ABORTED, "the run was cancelled"); /* keeps what arrived before */
        return 1;
    }
    if (!st->done && ledger_release(st->ledger, atomic_load(&st->link->released))) {
        struct ledger_action a = { .what = LEDGER_NONE }; /* what the release let go: */
        carry_out(st, &a);
    }
    if (!st->done && host_link_pending(st->link)) {
        send_answers(st);
    }
    if (!st->done && st->out.len) {
        write_out(st);
    }
    if (st->done || eof) {
        return 1;
    }
    uint64_t now = clock_mono_us();
    if (ret_busy) {
        *ret_busy = st->frames_sent != sent || st->host_calls != calls;
    }
    uint64_t wall_deadline;
    uint64_t cpu = UINT64_MAX;
    uint64_t cpu_budget = UINT64_MAX;
    if (!st->ready) {
        wall_deadline = st->start_us + RUN_START_US;
        if (now >= wall_deadline) {
            run_fail(st, AL_WORKER_CRASHED, "the worker did not start within %u s",
                     RUN_START_US / 1000000);
            return 1;
        }
    } else {
        /* The limits measure the run, from the moment the worker was ready for it. */
        wall_deadline = st->ready_us + st->limits[AL_LIMIT_TIMEOUT_MS] * 1000 + RUN_GRACE_US;
        if (now >= wall_deadline) {
            run_fail(st, AL_TIMEOUT, "the run exceeded its timeout of %llu ms",
                     (unsigned long long)st->limits[AL_LIMIT_TIMEOUT_MS]);
            return 1;
        }
        cpu = run_cpu_us(st, now);
        if (cpu != UINT64_MAX) {
            cpu_budget = st->limits[AL_LIMIT_CPU_MS] * 1000 + RUN_GRACE_US;
            if (cpu >= cpu_budget) {
                run_fail(st, AL_CPU_LIMIT, "the run exceeded its CPU limit of %llu ms",
                         (unsigned long long)st->limits[AL_LIMIT_CPU_MS]);
                return 1;
            }
        }
    }
    uint64_t wait_us = wall_deadline - now;
    if (cpu_budget != UINT64_MAX && cpu_budget - cpu < wait_us) {
        wait_us = cpu_budget - cpu; /* CPU time never runs faster than wall time */
    }
    st->wake_at_us = now + wait_us;
    return 0;
}

/* What the host measured of the worker, not what the worker says: its CPU clock (read while
 * it can still be read), and a peak no higher than the heap limit. */
static void measure_worker(struct run_state *st)
{
    struct al_stats *s = &st->res->stats;
    if (!st->ready) {
        s->cpu_us = 0;
        s->peak_memory_bytes = 0;
        return;
    }
    uint64_t cpu = clock_process_cpu_us(st->proc.pid);
    uint64_t wall = clock_mono_us() - st->ready_us;
    if (cpu != UINT64_MAX && st->cpu_base_us != UINT64_MAX && cpu >= st->cpu_base_us) {
        s->cpu_us = cpu - st->cpu_base_us;
    } else if (s->cpu_us > wall) {
        s->cpu_us = wall; /* the worker has one thread: its CPU time never exceeds wall time */
    }
    uint64_t heap = st->limits[AL_LIMIT_MEMORY_BYTES];
    if (st->res->code == AL_MEMORY_LIMIT || s->peak_memory_bytes > heap) {
        s->peak_memory_bytes = heap;
    }
}

void run_conclude(struct run_state *st)
{
    if (st->proc.pid <= 0) {
        return;
    }
    measure_worker(st);
    int status = 0;
    int clean = st->done && !st->kill;
    if (clean) {
        pool_release(st->runner->pool, &st->proc); /* its answer is in: reaping can wait */
    } else {
        /* a worker the host failed (past a deadline, breaking the protocol) may still be
         * running: it is killed now, not when the pool thread gets to it */
        supervisor_reap(&st->proc, 1, &status);
        pool_refill(st->runner->pool);
    }
    if (!st->done) {
        char how[64];
        supervisor_describe(status, how, sizeof how);
        char msg[200];
        snprintf(msg, sizeof msg, "the worker process died without a result (%s)", how);
        run_fail_result(st->res, AL_WORKER_CRASHED, msg);
        st->done = 1;
    }
    st->proc.pid = -1;
}

static void emit_interruptions(struct run_state *st)
{
    const struct al_result *res = st->res;
    if (!st->opts->event_fn || res->status != AL_STATUS_INTERRUPTED) {
        return;
    }
    for (size_t i = 0; i < res->ninterruptions; i++) {
        const struct result_interruption *ri = &res->interruptions[i];
        struct al_event ev = {
            .kind = AL_EVENT_INTERRUPTION,
            .run_id = res->run_id,
            .seq = ri->call,
            .text = ri->payload,
            .text_len = strlen(ri->payload),
            .function = ri->function,
            .args = ri->args,
            .args_len = strlen(ri->args),
            .interruption_id = ri->id,
        };
        st->opts->event_fn(&ev, st->opts->event_userdata);
    }
}

/* The result's copy of where the run left its journal (d NULL: it did not): 0, or -1 out of
 * memory. */
static int keep_divergence(struct al_result *res, const struct ledger_divergence *d)
{
    if (!d) {
        return 0;
    }
    struct al_divergence *v = &res->divergence;
    v->call = d->call;
    v->expected_function = d->expected_fn ? strdup(d->expected_fn) : NULL;
    memcpy(v->expected_args_sha256, d->expected_digest, sizeof v->expected_args_sha256);
    v->got_function = d->got_fn ? strdup(d->got_fn) : NULL;
    memcpy(v->got_args_sha256, d->got_digest, sizeof v->got_args_sha256);
    res->diverged = 1;
    return (d->expected_fn && !v->expected_function) || (d->got_fn && !v->got_function) ? -1 : 0;
}

enum al_code run_deliver(struct run_state *st, struct al_result **ret_result,
                         struct al_error *reterr)
{
    enum al_code rc = st->rc;
    struct al_result *res = st->res;
    if (rc != AL_OK) {
        if (reterr) {
            *reterr = st->err;
        }
        goto out;
    }
    res->stats.wall_us = clock_mono_us() - st->start_us;
    if (!res->name) {
        res->name = strdup("");
    }
    if (!res->stack) {
        res->stack = strdup("");
    }
    if (!res->message) {
        res->message = strdup(res->code == AL_OK ? "" : al_code_message(res->code));
        res->message_len = res->message ? strlen(res->message) : 0;
    }
    if (!res->name || !res->stack || !res->message) {
        rc = error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        goto out;
    }
    res->stats.host_calls = st->host_calls;
    if (res->status == AL_STATUS_FAILED && res->code == AL_PROTOCOL_ERROR &&
        keep_divergence(res, ledger_divergence(st->ledger)) != 0) {
        rc = error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        goto out;
    }
    emit_interruptions(st);
    *ret_result = res;
    res = NULL;
out:
    if (st->proc.pid > 0) {
        supervisor_reap(&st->proc, 1, NULL);
    }
    ledger_end(st->ledger, rc == AL_OK, !st->res || st->res->status == AL_STATUS_FAILED);
    st->ledger = NULL;
    if (st->link) {
        host_link_close(st->link);
        st->link = NULL;
    }
    if (st->admitted) {
        runner_leave((struct al_runner *)st->runner);
        st->admitted = 0;
    }
    free(st->calls);
    free(st->own_hosts);
    buf_done(&st->in);
    buf_done(&st->out);
    al_result_free(res);
    return rc;
}

/* al_run's driver: the run's steps on the caller's thread. While host calls are in flight or
 * were just answered, it looks for news for RUN_SPIN_US before it sleeps in poll: a host call
 * answered at once is then a round trip without a sleep and a wake-up on either side, which
 * on these machines cost more than the rest of the call. Otherwise it sleeps at once, which
 * also leaves its CPU to the worker. */
static void drive(struct run_state *st)
{
    uint64_t spin_until = 0;
    for (;;) {
        int busy = 0;
        if (run_step(st, &busy)) {
            return;
        }
        uint64_t now = clock_mono_us();
        if (busy) {
            spin_until = now + RUN_SPIN_US; /* the next call, or a host's answer, is near */
        }
        if (now < spin_until && !st->out.len) {
            sched_yield(); /* lets the worker run first where it shares our CPU */
            continue;
        }
        uint64_t wait_us = st->wake_at_us > now ? st->wake_at_us - now : 0;
        struct pollfd pfd[2] = {
            { .fd = st->proc.fd, .events = POLLIN | (st->out.len ? POLLOUT : 0) },
            { .fd = st->link->wake_fd, .events = POLLIN },
        };
        uint64_t wait_ms = (wait_us + 999) / 1000;
        int pr = poll(pfd, 2, wait_ms > INT_MAX ? INT_MAX : (int)wait_ms); /* re-checked then */
        if (pr < 0 && errno != EINTR) {
            run_fail(st, AL_INTERNAL_ERROR, "poll: %s", strerror(errno));
            return;
        }
        if (pr > 0 && (pfd[1].revents & POLLIN)) {
            /* only the reset: the completion itself is flagged on the link */
            uint64_t n;
            ssize_t rr = read(st->link->wake_fd, &n, sizeof n);
            (void)rr;
        }
    }
}

enum al_code al_run(struct al_runner *runner, const struct al_run_opts *opts,
                    struct al_result **ret_result, struct al_error *reterr)
{
    if (!runner || !opts || !ret_result) {
        return error_set(reterr, AL_CONFIG_ERROR, "al_run: NULL argument");
    }
    if (!opts->source) {
        return error_set(reterr, AL_CONFIG_ERROR, "al_run: no source (al_run_opts_set_source)");
    }
    struct run_state st;
    if (run_prepare(&st, runner, opts) == 0) {
        int adm = runner_admit(runner);
        if (adm <= 0) {
            char msg[200];
            run_admission_message(runner, adm, msg, sizeof msg);
            run_fail_early(&st, AL_CONCURRENCY_LIMIT, msg);
        } else {
            st.admitted = 1;
            st.link->loop_thread = pthread_self(); /* host functions are called here */
            st.link->skip_self_wake = 1;
            if (run_launch(&st) == 0) {
                drive(&st);
            }
        }
    }
    run_conclude(&st);
    return run_deliver(&st, ret_result, reterr);
}

void run_admission_message(const struct al_runner *runner, int adm, char *msg, size_t len)
{
    if (adm < 0) {
        snprintf(msg, len,
                 "the run waited %llu ms for one of the runner's %u slots (its queue timeout)",
                 (unsigned long long)runner->queue_timeout_ms, runner->max_runs);
    } else {
        snprintf(msg, len, "the runner already has %u runs and %u waiting (its concurrency limit)",
                 runner->max_runs, runner->max_queue);
    }
}

void al_result_free(struct al_result *result)
{
    if (!result) {
        return;
    }
    for (size_t i = 0; i < result->nconsole; i++) {
        free(result->console[i].text);
    }
    free(result->console);
    free(result->value);
    free(result->name);
    free(result->message);
    free(result->stack);
    for (size_t i = 0; i < result->ninterruptions; i++) {
        free(result->interruptions[i].function);
        free(result->interruptions[i].args);
        free(result->interruptions[i].payload);
    }
    free(result->interruptions);
    free(result->continuation);
    free((char *)result->divergence.expected_function);
    free((char *)result->divergence.got_function);
    free(result);
}

enum al_status al_result_status(const struct al_result *result)
{
    return result->status;
}

const char *al_result_value(const struct al_result *result, size_t *ret_len)
{
    if (ret_len) {
        *ret_len = result->value ? result->value_len : 0;
    }
    return result->value;
}

enum al_code al_result_error_code(const struct al_result *result)
{
    return result->code;
}

const char *al_result_error_message(const struct al_result *result)
{
    return result->message ? result->message : "";
}

const char *al_result_error_name(const struct al_result *result)
{
    return result->name ? result->name : "";
}

const char *al_result_error_stack(const struct al_result *result)
{
    return result->stack ? result->stack : "";
}

const char *al_console_level_name(enum al_console_level level)
{
    static const char *const names[] = { "log", "info", "warn", "error", "debug" };
    return (unsigned)level <= AL_CONSOLE_DEBUG ? names[level] : "log";
}

size_t al_result_console_count(const struct al_result *result)
{
    return result->nconsole;
}

const char *al_result_console_text(const struct al_result *result, size_t i,
                                   enum al_console_level *ret_level, size_t *ret_len)
{
    if (i >= result->nconsole) {
        return NULL;
    }
    if (ret_level) {
        *ret_level = result->console[i].level;
    }
    if (ret_len) {
        *ret_len = result->console[i].len;
    }
    return result->console[i].text;
}

const char *al_result_run_id(const struct al_result *result)
{
    return result->run_id;
}

void al_result_error_text(const struct al_result *result, struct al_error_text *ret)
{
    ret->name = al_result_error_name(result);
    ret->name_len = result->name ? result->name_len : 0;
    ret->message = al_result_error_message(result);
    ret->message_len = result->message ? result->message_len : 0;
    ret->stack = al_result_error_stack(result);
    ret->stack_len = result->stack ? result->stack_len : 0;
}

int al_result_divergence(const struct al_result *result, struct al_divergence *ret)
{
    if (!result || !result->diverged) {
        return -1;
    }
    if (ret) {
        *ret = result->divergence;
    }
    return 0;
}

void al_result_stats(const struct al_result *result, struct al_stats *ret_stats)
{
    *ret_stats = result->stats;
}

size_t al_result_interruption_count(const struct al_result *result)
{
    return result->ninterruptions;
}

int al_result_interruption(const struct al_result *result, size_t i, struct al_interruption *ret)
{
    if (i >= result->ninterruptions || !ret) {
        return -1;
    }
    const struct result_interruption *ri = &result->interruptions[i];
    ret->id = ri->id;
    ret->function = ri->function;
    ret->args = ri->args;
    ret->payload = ri->payload;
    return 0;
}

uint32_t al_result_interruption_call(const struct al_result *result, size_t i)
{
    return result && i < result->ninterruptions ? result->interruptions[i].call : 0;
}

const char *al_result_continuation(const struct al_result *result, size_t *ret_len)
{
    if (ret_len) {
        *ret_len = result->continuation ? result->continuation_len : 0;
    }
    return result->continuation;
}
