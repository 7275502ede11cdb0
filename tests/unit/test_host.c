/* unit.host - host-function calls and the completion queue (src/lib/host.c): any thread may
 * complete a call, completions reach the run loop in order with their outcome, the loop is
 * woken only when another thread completed, and a call answered after its run ended is
 * discarded safely. */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "wire.h"

static size_t count(const struct completion *c)
{
    size_t n = 0;
    for (; c; c = c->next) {
        n++;
    }
    return n;
}

/* 1 when the link's eventfd is readable (and drains it). */
static int woken(struct run_link *l)
{
    struct pollfd p = { .fd = l->wake_fd, .events = POLLIN };
    if (poll(&p, 1, 0) != 1) {
        return 0;
    }
    uint64_t v = 0;
    assert_int_equal(read(l->wake_fd, &v, sizeof v), (ssize_t)sizeof v);
    return v > 0;
}

static void test_host_call_exposes_name_args_and_seq(void **state)
{
    (void)state;
    struct run_link *l = host_link_new();
    assert_non_null(l);
    struct al_call *c = host_call_new(l, 7, 0, "db.get", "[1,\"x\"]", 7);
    assert_non_null(c);
    assert_string_equal(al_call_name(c), "db.get");
    size_t len = 0;
    assert_string_equal(al_call_args(c, &len), "[1,\"x\"]");
    assert_int_equal(len, 7);
    assert_int_equal(al_call_seq(c), 7);
    /* an ordinary call has no resume context */
    assert_null(al_call_interruption_id(c));
    assert_null(al_call_resume_payload(c, &len));
    assert_int_equal(len, 0);
    assert_null(al_call_resolution(c, NULL));
    al_call_return(c, "1", 1);
    host_completion_free(host_link_take(l));
    host_link_close(l);
}

static void test_host_completions_arrive_in_order_with_outcome(void **state)
{
    (void)state;
    struct run_link *l = host_link_new();
    assert_non_null(l);
    assert_int_equal(host_link_pending(l), 0);
    struct al_call *a = host_call_new(l, 1, 0, "g.a", "[]", 2);
    struct al_call *b = host_call_new(l, 2, 0, "g.b", "[]", 2);
    struct al_call *c = host_call_new(l, 3, 0, "g.c", "[]", 2);
    struct al_call *d = host_call_new(l, 4, 0, "g.d", "[]", 2);
    assert_true(a && b && c && d);
    al_call_throw(b, "nope");
    al_call_return(a, "{\"v\":1}xx", 7); /* len counts, not the NUL */
    al_call_interrupt(c, "{\"ask\":1}", 9);
    al_call_throw(d, NULL);
    assert_int_equal(host_link_pending(l), 1);
    struct al_call *e = host_call_new(l, 5, 0, "g.e", "[]", 2);
    assert_non_null(e);
    al_call_throw_type_error(e, NULL);

    struct completion *got = host_link_take(l);
    assert_int_equal(host_link_pending(l), 0);
    assert_int_equal(count(got), 5);
    const struct completion *x = got;
    assert_int_equal(x->id, 2);
    assert_int_equal(x->kind, WIRE_ANSWER_THROW);
    assert_string_equal(x->payload, "nope");
    x = x->next;
    assert_int_equal(x->id, 1);
    assert_int_equal(x->kind, WIRE_ANSWER_VALUE);
    assert_int_equal(x->len, 7);
    assert_string_equal(x->payload, "{\"v\":1}");
    x = x->next;
    assert_int_equal(x->id, 3);
    assert_int_equal(x->kind, WIRE_ANSWER_INTERRUPT);
    assert_string_equal(x->payload, "{\"ask\":1}");
    x = x->next;
    assert_int_equal(x->id, 4);
    assert_int_equal(x->kind, WIRE_ANSWER_THROW);
    assert_string_equal(x->payload, "host function failed");
    x = x->next;
    assert_int_equal(x->id, 5);
    assert_int_equal(x->kind, WIRE_ANSWER_TYPE_ERROR);
    assert_string_equal(x->payload, "host function called with bad arguments");
    host_completion_free(got);
    assert_null(host_link_take(l));
    host_link_close(l);
}

static void test_host_return_null_is_undefined(void **state)
{
    (void)state;
    struct run_link *l = host_link_new();
    assert_non_null(l);
    al_call_return(host_call_new(l, 1, 0, "g.f", "[]", 2), NULL, 42);
    struct completion *got = host_link_take(l);
    assert_non_null(got);
    assert_int_equal(got->kind, WIRE_ANSWER_VALUE);
    assert_int_equal(got->len, 0);
    host_completion_free(got);
    al_call_return(NULL, "1", 1); /* a NULL call is ignored */
    al_call_throw(NULL, "x");
    host_link_close(l);
}

static void test_host_loop_thread_completion_does_not_wake(void **state)
{
    (void)state;
    struct run_link *l = host_link_new();
    assert_non_null(l);
    l->skip_self_wake = 1; /* al_run's driver: it takes the queue after each callback */
    al_call_return(host_call_new(l, 1, 0, "g.f", "[]", 2), "1", 1);
    assert_int_equal(host_link_pending(l), 1);
    assert_int_equal(woken(l), 0);
    host_completion_free(host_link_take(l));
    host_link_close(l);
}

/* The event thread drives many runs: a completion from it must still wake the run it is for. */
static void test_host_event_thread_completion_wakes(void **state)
{
    (void)state;
    struct run_link *l = host_link_new();
    assert_non_null(l);
    al_call_return(host_call_new(l, 1, 0, "g.f", "[]", 2), "1", 1);
    assert_int_equal(host_link_pending(l), 1);
    assert_int_equal(woken(l), 1);
    host_completion_free(host_link_take(l));
    host_link_close(l);
}

/* al_run_cancel's path: flagged, woken, and every call of the run reads cancelled. */
static void test_host_cancel_flags_calls_and_wakes(void **state)
{
    (void)state;
    struct run_link *l = host_link_new();
    assert_non_null(l);
    struct al_call *c = host_call_new(l, 1, 0, "g.f", "[]", 2);
    assert_int_equal(al_call_cancelled(c), 0);
    host_link_cancel(l);
    assert_int_equal(al_call_cancelled(c), 1);
    assert_int_equal(woken(l), 1);
    al_call_return(c, "1", 1);
    host_completion_free(host_link_take(l));
    host_link_close(l);
}

struct answerer {
    struct al_call *call;
    const char *value;
};

static void *answer(void *arg)
{
    struct answerer *a = arg;
    al_call_return(a->call, a->value, strlen(a->value));
    return NULL;
}

static void test_host_other_thread_completion_wakes_loop(void **state)
{
    (void)state;
    struct run_link *l = host_link_new();
    assert_non_null(l);
    struct answerer a = { host_call_new(l, 5, 0, "g.f", "[]", 2), "\"late\"" };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, answer, &a), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(host_link_pending(l), 1);
    assert_int_equal(woken(l), 1);
    struct completion *got = host_link_take(l);
    assert_int_equal(count(got), 1);
    assert_int_equal(got->id, 5);
    assert_string_equal(got->payload, "\"late\"");
    host_completion_free(got);
    host_link_close(l);
}

static void *answer_many(void *arg)
{
    struct al_call **calls = arg;
    for (size_t i = 0; calls[i]; i++) {
        al_call_return(calls[i], "0", 1);
    }
    return NULL;
}

static void test_host_concurrent_completions_none_lost(void **state)
{
    (void)state;
    enum { THREADS = 4, PER = 250 };
    struct run_link *l = host_link_new();
    assert_non_null(l);
    static struct al_call *calls[THREADS][PER + 1];
    for (int t = 0; t < THREADS; t++) {
        for (int i = 0; i < PER; i++) {
            calls[t][i] = host_call_new(l, (uint32_t)(t * PER + i + 1), 0, "g.f", "[]", 2);
            assert_non_null(calls[t][i]);
        }
        calls[t][PER] = NULL;
    }
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) {
        assert_int_equal(pthread_create(&th[t], NULL, answer_many, calls[t]), 0);
    }
    /* take while they complete: nothing may be lost or seen twice */
    uint8_t seen[THREADS * PER + 1];
    memset(seen, 0, sizeof seen);
    size_t total = 0;
    while (total < THREADS * PER) {
        struct completion *got = host_link_take(l);
        for (struct completion *c = got; c; c = c->next) {
            assert_true(c->id >= 1 && c->id <= THREADS * PER);
            assert_int_equal(seen[c->id], 0);
            seen[c->id] = 1;
            total++;
        }
        host_completion_free(got);
    }
    for (int t = 0; t < THREADS; t++) {
        assert_int_equal(pthread_join(th[t], NULL), 0);
    }
    assert_int_equal(total, THREADS * PER);
    assert_null(host_link_take(l));
    host_link_close(l);
}

static void test_host_answer_after_close_is_discarded(void **state)
{
    (void)state;
    struct run_link *l = host_link_new();
    assert_non_null(l);
    struct al_call *late = host_call_new(l, 1, 0, "g.f", "[]", 2);
    struct al_call *queued = host_call_new(l, 2, 0, "g.f", "[]", 2);
    al_call_return(queued, "1", 1);
    /* the run ends: the queued completion is dropped, the link lives on for the late call */
    host_link_close(l);
    assert_int_equal(l->closed, 1);
    assert_int_equal(al_call_cancelled(late), 1); /* the host function may stop early */
    assert_null(l->head);
    /* answering after the run ended frees the call and, as the last reference, the link (ASan
     * and valgrind see a leak or a use after free here) */
    al_call_throw(late, "too late");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_call_exposes_name_args_and_seq),
        cmocka_unit_test(test_host_completions_arrive_in_order_with_outcome),
        cmocka_unit_test(test_host_return_null_is_undefined),
        cmocka_unit_test(test_host_loop_thread_completion_does_not_wake),
        cmocka_unit_test(test_host_event_thread_completion_wakes),
        cmocka_unit_test(test_host_cancel_flags_calls_and_wakes),
        cmocka_unit_test(test_host_other_thread_completion_wakes_loop),
        cmocka_unit_test(test_host_concurrent_completions_none_lost),
        cmocka_unit_test(test_host_answer_after_close_is_discarded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
