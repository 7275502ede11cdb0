/* unit.ratelimit - the token buckets of airlockd (src/server/ratelimit.c) on a clock the test
 * drives: burst then refusal with Retry-After, refill at the rate, keys apart, a bounded table
 * that reuses idle buckets first, and options out of range refused. Nothing sleeps. */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <stdio.h>
#include <string.h>

#include "ratelimit.h"

#define SEC UINT64_C(1000000000)

static uint64_t fake_clock(void *userdata)
{
    return *(const uint64_t *)userdata;
}

static struct ratelimit *make(double per_second, double burst, size_t max, uint64_t *now)
{
    struct ratelimit_options o = { per_second, burst, max, 42, fake_clock, NULL };
    o.clock_userdata = now;
    struct ratelimit *rl = NULL;
    assert_int_equal(ratelimit_new(&o, &rl), 0);
    return rl;
}

static void test_ratelimit_burst_then_refused(void **state)
{
    (void)state;
    uint64_t now = 5 * SEC;
    unsigned retry = 0;
    struct ratelimit *rl = make(5, 5, 0, &now);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(ratelimit_take(rl, "key:a", &retry), 0);
    }
    assert_int_equal(ratelimit_take(rl, "key:a", &retry), 1);
    assert_int_equal(retry, 1);
    ratelimit_free(rl);
}

static void test_ratelimit_refills_at_rate(void **state)
{
    (void)state;
    uint64_t now = 0;
    unsigned retry = 0;
    struct ratelimit *rl = make(2, 4, 0, &now);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(ratelimit_take(rl, "k", &retry), 0);
    }
    assert_int_equal(ratelimit_take(rl, "k", &retry), 1);
    now += SEC / 2 - 1; /* not quite one token */
    assert_int_equal(ratelimit_take(rl, "k", &retry), 1);
    now += 1;
    assert_int_equal(ratelimit_take(rl, "k", &retry), 0);
    assert_int_equal(ratelimit_take(rl, "k", &retry), 1);
    now += 100 * SEC; /* refills to burst, never past it */
    for (int i = 0; i < 4; i++) {
        assert_int_equal(ratelimit_take(rl, "k", &retry), 0);
    }
    assert_int_equal(ratelimit_take(rl, "k", &retry), 1);
    ratelimit_free(rl);
}

static void test_ratelimit_retry_after_counts_whole_seconds(void **state)
{
    (void)state;
    uint64_t now = 0;
    unsigned retry = 0;
    struct ratelimit *rl = make(0.1, 1, 0, &now); /* one token per 10 s */
    assert_int_equal(ratelimit_take(rl, "slow", &retry), 0);
    assert_int_equal(ratelimit_take(rl, "slow", &retry), 1);
    assert_int_equal(retry, 10);
    now += 7 * SEC + SEC / 2;
    assert_int_equal(ratelimit_take(rl, "slow", &retry), 1);
    assert_int_equal(retry, 3);
    ratelimit_free(rl);
    rl = make(1e-9, 1, 0, &now);
    assert_int_equal(ratelimit_take(rl, "x", &retry), 0);
    assert_int_equal(ratelimit_take(rl, "x", &retry), 1);
    assert_int_equal(retry, RATELIMIT_RETRY_AFTER_MAX);
    ratelimit_free(rl);
}

static void test_ratelimit_keys_are_apart(void **state)
{
    (void)state;
    uint64_t now = 0;
    unsigned retry = 0;
    struct ratelimit *rl = make(1, 2, 0, &now);
    assert_int_equal(ratelimit_take(rl, "key:a", &retry), 0);
    assert_int_equal(ratelimit_take(rl, "key:a", &retry), 0);
    assert_int_equal(ratelimit_take(rl, "key:a", &retry), 1);
    assert_int_equal(ratelimit_take(rl, "key:b", &retry), 0);
    assert_int_equal(ratelimit_take(rl, "ip:127.0.0.1", &retry), 0);
    assert_int_equal(ratelimit_count(rl), 3);
    ratelimit_free(rl);
}

static void test_ratelimit_clock_going_back_gives_nothing(void **state)
{
    (void)state;
    uint64_t now = 10 * SEC;
    unsigned retry = 0;
    struct ratelimit *rl = make(1, 1, 0, &now);
    assert_int_equal(ratelimit_take(rl, "k", &retry), 0);
    now = 0;
    assert_int_equal(ratelimit_take(rl, "k", &retry), 1);
    ratelimit_free(rl);
}

static void test_ratelimit_table_is_bounded(void **state)
{
    (void)state;
    uint64_t now = 0;
    unsigned retry = 0;
    char key[32];
    struct ratelimit *rl = make(1, 3, 64, &now);
    for (int i = 0; i < 10000; i++) {
        snprintf(key, sizeof key, "ip:10.0.%d.%d", i / 256, i % 256);
        assert_int_equal(ratelimit_take(rl, key, &retry), 0); /* a new bucket starts full */
        now += 1000;
    }
    assert_true(ratelimit_count(rl) <= 64);
    ratelimit_free(rl);
}

static void test_ratelimit_idle_buckets_go_first(void **state)
{
    (void)state;
    uint64_t now = 0;
    unsigned retry = 0;
    char key[32];
    /* One set of eight: a drained key must outlive eight others coming while it is not full
     * again, since idle buckets are reused before it. busy would be full at 2 s, the others
     * one second after their one request. */
    struct ratelimit *rl = make(1, 2, 8, &now);
    assert_int_equal(ratelimit_take(rl, "busy", &retry), 0);
    assert_int_equal(ratelimit_take(rl, "busy", &retry), 0);
    for (int i = 0; i < 8; i++) {
        now += SEC / 5;
        snprintf(key, sizeof key, "other-%d", i);
        assert_int_equal(ratelimit_take(rl, key, &retry), 0);
    }
    /* 1.6 s: busy holds 1.6 tokens if it was kept (a new bucket would hold 2) */
    assert_int_equal(ratelimit_take(rl, "busy", &retry), 0);
    assert_int_equal(ratelimit_take(rl, "busy", &retry), 1);
    assert_true(ratelimit_count(rl) <= 8);
    ratelimit_free(rl);
}

static void test_ratelimit_long_keys_are_cut(void **state)
{
    (void)state;
    uint64_t now = 0;
    unsigned retry = 0;
    char a[200];
    char b[200];
    memset(a, 'x', sizeof a - 1);
    a[sizeof a - 1] = '\0';
    memcpy(b, a, sizeof b);
    b[150] = 'y'; /* differs only past RATELIMIT_KEY_MAX: the same bucket */
    struct ratelimit *rl = make(1, 1, 0, &now);
    assert_int_equal(ratelimit_take(rl, a, &retry), 0);
    assert_int_equal(ratelimit_take(rl, b, &retry), 1);
    ratelimit_free(rl);
}

static void test_ratelimit_options_out_of_range(void **state)
{
    (void)state;
    struct ratelimit *rl = NULL;
    const struct ratelimit_options bad[] = {
        { 0, 10, 0, 0, NULL, NULL },
        { -1, 10, 0, 0, NULL, NULL },
        { 10, 0.5, 0, 0, NULL, NULL },
        { 10, 1.0 / 0.0, 0, 0, NULL, NULL },
        { 10, 10, (size_t)1 << 30, 0, NULL, NULL },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(ratelimit_new(&bad[i], &rl), -1);
    }
    const struct ratelimit_options good = { 200, 1000, 0, 0, NULL, NULL };
    assert_int_equal(ratelimit_new(&good, &rl), 0);
    unsigned retry = 0;
    assert_int_equal(ratelimit_take(rl, "real clock", &retry), 0);
    ratelimit_free(rl);
    ratelimit_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ratelimit_burst_then_refused),
        cmocka_unit_test(test_ratelimit_refills_at_rate),
        cmocka_unit_test(test_ratelimit_retry_after_counts_whole_seconds),
        cmocka_unit_test(test_ratelimit_keys_are_apart),
        cmocka_unit_test(test_ratelimit_clock_going_back_gives_nothing),
        cmocka_unit_test(test_ratelimit_table_is_bounded),
        cmocka_unit_test(test_ratelimit_idle_buckets_go_first),
        cmocka_unit_test(test_ratelimit_long_keys_are_cut),
        cmocka_unit_test(test_ratelimit_options_out_of_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
