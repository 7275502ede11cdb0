/* unit.denials - the tally of requests refused for their key (src/server/denials.c) on a clock
 * the test drives: the first refusal of an address recorded at once, the rest folded into one
 * summary per interval with their count and first and last times, nothing lost at the final
 * flush, a bounded table that folds addresses past it into "*"; then the request path
 * (router_handle over a SQLite store and a writer without a thread): requests without a valid key
 * draw from their address's small bucket and leave one auth.denied record per address, while a
 * valid key's 403s stay one record each and a public route keeps the address's large bucket.
 * Nothing sleeps. */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "auth.h"
#include "denials.h"
#include "http.h"
#include "json.h"
#include "ratelimit.h"
#include "readers.h"
#include "router.h"
#include "store.h"
#include "writer.h"

#define MIN INT64_C(60000)

static int64_t fake_clock(void *userdata)
{
    return *(const int64_t *)userdata;
}

static struct denials *make(int64_t interval_ms, size_t max, int64_t *now)
{
    struct denials_options o = { interval_ms, max, fake_clock, NULL };
    o.clock_userdata = now;
    struct denials *d = NULL;
    assert_int_equal(denials_new(&o, &d), 0);
    return d;
}

/* What the flushes wrote: copies of the records. */
struct written {
    size_t n;
    struct denials_record rec[64];
};

static void keep(const struct denials_record *rec, void *userdata)
{
    struct written *w = userdata;
    assert_true(w->n < 64);
    w->rec[w->n++] = *rec;
}

static int note(struct denials *d, const char *address, const char *reason,
                struct denials_record *ret)
{
    struct denials_refusal r = {
        address, "GET", "/v1/me", "/v1/me", reason, "req_0123456789abcdef"
    };
    return denials_note(d, &r, ret);
}

static void test_denials_first_at_once_then_one_summary(void **state)
{
    (void)state;
    int64_t now = 1000 * MIN;
    struct denials_record rec;
    struct written w = { 0 };
    struct denials *d = make(MIN, 0, &now);
    assert_int_equal(note(d, "ip4:127.0.0.2", "no Authorization header", &rec), 1);
    assert_int_equal(rec.count, 1);
    assert_int_equal(rec.first_ms, now);
    assert_int_equal(rec.last_ms, now);
    assert_string_equal(rec.address, "ip4:127.0.0.2");
    assert_string_equal(rec.reasons[0], "no Authorization header");
    int64_t start = now;
    for (int i = 0; i < 99; i++) {
        now += 500;
        assert_int_equal(note(d, "ip4:127.0.0.2", "malformed key", &rec), 0);
    }
    /* not an interval since the record yet: nothing */
    assert_int_equal(denials_flush(d, 0, keep, &w), 0);
    now = start + MIN;
    assert_int_equal(denials_flush(d, 0, keep, &w), 1);
    assert_int_equal(w.rec[0].count, 99);
    assert_int_equal(w.rec[0].first_ms, start + 500);
    assert_int_equal(w.rec[0].last_ms, start + 99 * 500);
    assert_int_equal(w.rec[0].nreasons, 1);
    assert_string_equal(w.rec[0].reasons[0], "malformed key");
    /* the summary was a record: the next refusal waits for the next interval */
    now += 1;
    assert_int_equal(note(d, "ip4:127.0.0.2", "malformed key", &rec), 0);
    assert_int_equal(denials_flush(d, 0, keep, &w), 0);
    /* the final flush writes what waits, due or not */
    assert_int_equal(denials_flush(d, 1, keep, &w), 1);
    assert_int_equal(w.rec[1].count, 1);
    assert_int_equal(denials_flush(d, 1, keep, &w), 0);
    denials_free(d);
}

static void test_denials_addresses_apart(void **state)
{
    (void)state;
    int64_t now = 5 * MIN;
    struct denials_record rec;
    struct denials *d = make(MIN, 0, &now);
    assert_int_equal(note(d, "ip4:127.0.0.2", "x", &rec), 1);
    assert_int_equal(note(d, "ip4:127.0.0.3", "x", &rec), 1);
    assert_string_equal(rec.address, "ip4:127.0.0.3");
    assert_int_equal(note(d, "ip4:127.0.0.2", "x", &rec), 0);
    assert_int_equal(note(d, "ip4:127.0.0.3", "x", &rec), 0);
    assert_int_equal(denials_count(d), 2);
    denials_free(d);
}

/* A steady flood from three addresses for ten minutes, flushed every second: never two records
 * of one address less than an interval apart, and the counts add up to the refusals. */
static void test_denials_at_most_one_per_interval(void **state)
{
    (void)state;
    static const char *const addrs[] = { "ip4:127.0.0.2", "ip4:127.0.0.3", "ip6:fd00::" };
    int64_t now = 7 * MIN;
    int64_t last[3] = { INT64_MIN, INT64_MIN, INT64_MIN };
    uint64_t total[3] = { 0 };
    uint64_t made = 0;
    struct denials_record rec;
    struct written w = { 0 };
    struct denials *d = make(MIN, 0, &now);
    for (int tick = 0; tick < 10 * 60 * 10; tick++) {
        now += 100;
        for (size_t a = 0; a < 3; a++) {
            made++;
            if (note(d, addrs[a], "unknown or revoked key 000000000000", &rec)) {
                keep(&rec, &w);
            }
        }
        if (tick % 10 == 0) {
            (void)denials_flush(d, 0, keep, &w);
        }
        for (size_t i = 0; i < w.n; i++) {
            size_t a = 0;
            while (strcmp(w.rec[i].address, addrs[a]) != 0) {
                a++;
            }
            assert_true(last[a] == INT64_MIN || now - last[a] >= MIN);
            last[a] = now;
            total[a] += w.rec[i].count;
        }
        w.n = 0;
    }
    (void)denials_flush(d, 1, keep, &w);
    for (size_t i = 0; i < w.n; i++) {
        total[strcmp(w.rec[i].address, addrs[0]) == 0   ? 0
              : strcmp(w.rec[i].address, addrs[1]) == 0 ? 1
                                                        : 2] += w.rec[i].count;
    }
    assert_int_equal(total[0] + total[1] + total[2], made);
    assert_int_equal(total[0], made / 3);
    denials_free(d);
}

/* More addresses than the table holds: the extra ones share the "*" entry, under the same rule;
 * nothing grows and nothing is lost. */
static void test_denials_table_bounded(void **state)
{
    (void)state;
    int64_t now = 3 * MIN;
    char addr[32];
    struct denials_record rec;
    struct written w = { 0 };
    uint64_t sum = 0;
    size_t records = 0;
    struct denials *d = make(MIN, 8, &now);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 100; i++) {
            snprintf(addr, sizeof addr, "ip4:10.0.0.%d", i);
            if (note(d, addr, "x", &rec)) {
                assert_true(i < 8 || strcmp(rec.address, DENIALS_OTHERS) == 0);
                sum += rec.count;
                records++;
            }
        }
        assert_true(denials_count(d) <= 9);
    }
    /* 8 addresses and "*": one record each at once */
    assert_int_equal(records, 9);
    assert_int_equal(denials_flush(d, 1, keep, &w), 9);
    for (size_t i = 0; i < w.n; i++) {
        sum += w.rec[i].count;
    }
    assert_int_equal(sum, 300);
    /* an interval later, with nothing waiting, the addresses are forgotten: room again */
    now += MIN;
    assert_int_equal(denials_flush(d, 0, keep, &w), 0);
    assert_int_equal(denials_count(d), 0);
    assert_int_equal(note(d, "ip4:10.0.0.99", "x", &rec), 1);
    assert_string_equal(rec.address, "ip4:10.0.0.99");
    denials_free(d);
}

static void test_denials_reasons_distinct_and_bounded(void **state)
{
    (void)state;
    int64_t now = MIN;
    char why[64];
    struct denials_record rec;
    struct written w = { 0 };
    struct denials *d = make(MIN, 0, &now);
    assert_int_equal(note(d, "ip4:127.0.0.2", "first", &rec), 1);
    for (int i = 0; i < 10; i++) {
        snprintf(why, sizeof why, "reason %d", i % 6);
        assert_int_equal(note(d, "ip4:127.0.0.2", why, &rec), 0);
    }
    assert_int_equal(denials_flush(d, 1, keep, &w), 1);
    assert_int_equal(w.rec[0].count, 10);
    assert_int_equal(w.rec[0].nreasons, DENIALS_REASONS_MAX);
    assert_string_equal(w.rec[0].reasons[0], "reason 0");
    assert_string_equal(w.rec[0].reasons[3], "reason 3");
    denials_free(d);
}

static void test_denials_options_refused(void **state)
{
    (void)state;
    struct denials *d = NULL;
    struct denials_options o = { 0, 0, NULL, NULL };
    assert_int_equal(denials_new(&o, &d), -1);
    o.interval_ms = 1000;
    o.max_addresses = (size_t)1 << 30;
    assert_int_equal(denials_new(&o, &d), -1);
    denials_free(NULL);
    denials_stop(NULL);
}

/* ---------------------------------------------------------------- the request path */

static const char admin_key[] = "denials-admin-key-0123456789abcdef0123456789";
static const char bob_key[] = "denials-bob-key-0123456789abcdef0123456789abc";

struct world {
    char dir[128];
    char db[192];
    struct store *store;
    struct readers *readers;
    struct writer *writer;
    struct ratelimit *limit;
    struct ratelimit *unauth_limit;
    struct denials *denials;
    int64_t now;
    struct api_services svc;
    struct router router;
};

static struct world w;

static int world_setup(void **state)
{
    char err[STORE_ERRMSG_MAX];
    char prefix[AUTH_PREFIX_LEN + 1];
    unsigned char hash[STORE_HASH_LEN];
    (void)state;
    memset(&w, 0, sizeof w);
    snprintf(w.dir, sizeof w.dir, "/tmp/airlock-denials-XXXXXX");
    assert_non_null(mkdtemp(w.dir));
    snprintf(w.db, sizeof w.db, "%s/airlock.db", w.dir);
    assert_int_equal(store_sqlite_open(w.db, &w.store, err), STORE_OK);
    struct store *s = w.store;
    assert_int_equal(s->ops->principal_create(s, "admin", "user"), STORE_OK);
    assert_int_equal(s->ops->role_grant(s, "admin", "admin", "*"), STORE_OK);
    assert_int_equal(auth_key_digest(admin_key, prefix, hash), 0);
    assert_int_equal(s->ops->key_add(s, "admin", prefix, hash), STORE_OK);
    assert_int_equal(s->ops->principal_create(s, "bob", "user"), STORE_OK);
    assert_int_equal(auth_key_digest(bob_key, prefix, hash), 0);
    assert_int_equal(s->ops->key_add(s, "bob", prefix, hash), STORE_OK);
    /* a token every 1000 s: the bursts alone decide */
    struct ratelimit_options o = { 0.001, 100, 64, 1, NULL, NULL };
    assert_int_equal(ratelimit_new(&o, &w.limit), 0);
    o.burst = 3;
    assert_int_equal(ratelimit_new(&o, &w.unauth_limit), 0);
    w.now = 100 * MIN;
    w.denials = make(MIN, 0, &w.now);
    assert_int_equal(readers_new(s, 4, &w.readers, NULL), 0);
    assert_int_equal(writer_new_inline(s, &w.writer), 0);
    w.svc.writer = w.writer;
    w.svc.readers = w.readers;
    w.svc.denials = w.denials;
    w.router.readers = w.readers;
    w.router.writer = w.writer;
    w.router.svc = &w.svc;
    w.router.limit = w.limit;
    w.router.unauth_limit = w.unauth_limit;
    w.router.body_limit_bytes = 1 << 20;
    return 0;
}

static int world_teardown(void **state)
{
    char path[256];
    (void)state;
    writer_free(w.writer);
    readers_free(w.readers);
    ratelimit_free(w.limit);
    ratelimit_free(w.unauth_limit);
    denials_free(w.denials);
    w.store->ops->close(w.store);
    for (const char *const *f = (const char *const[]){ "", "-wal", "-shm", NULL }; *f; f++) {
        snprintf(path, sizeof path, "%s%s", w.db, *f);
        unlink(path);
    }
    rmdir(w.dir);
    return 0;
}

/* One request from client through admission and its handler; its status. */
static unsigned one(const char *path, const char *key, const char *client)
{
    struct http_request req;
    struct http_response resp;
    char authorization[128];
    memset(&req, 0, sizeof req);
    req.method = "GET";
    req.path = path;
    if (key) {
        snprintf(authorization, sizeof authorization, "Bearer %s", key);
        req.authorization = authorization;
    }
    req.body = "";
    snprintf(req.client, sizeof req.client, "%s", client);
    snprintf(req.request_id, sizeof req.request_id, "req_0123456789abcdef");
    http_response_init(&resp);
    router_handle(&w.router, &req, &resp);
    unsigned status = resp.status;
    http_response_done(&resp);
    if (req.app_free) {
        req.app_free(req.app);
    }
    return status;
}

/* The auth.denied records so far: how many, their counts summed (1 for a record without one),
 * and how many have status 403. */
struct tally {
    size_t records;
    uint64_t refusals;
    size_t forbidden;
};

static int count_denied(void *userdata, const struct store_audit *a)
{
    struct tally *t = userdata;
    struct json_doc *doc = NULL;
    struct al_error err;
    assert_int_equal(json_parse(a->details, strlen(a->details), 16, &doc, &err), AL_OK);
    const struct json_node *count = json_get(json_root(doc), "count");
    const struct json_node *status = json_get(json_root(doc), "status");
    t->records++;
    t->refusals += count ? (uint64_t)count->num : 1;
    t->forbidden += status && status->num == 403;
    json_doc_free(doc);
    return 0;
}

static struct tally denied(void)
{
    struct tally t = { 0 };
    struct store_audit_filter f = { "auth.denied", NULL, NULL };
    assert_int_equal(w.store->ops->audit_search(w.store, 0, 100000, &f, count_denied, &t),
                     STORE_OK);
    return t;
}

static void test_denials_router_bad_keys_small_bucket(void **state)
{
    (void)state;
    static const char *const bad[] = { NULL, "ak_000000000000_", "nope" };
    /* the address's small bucket (3): then 429, which costs nothing */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(one("/v1/me", bad[i], "ip4:127.0.0.2"), 401);
    }
    for (int i = 0; i < 5; i++) {
        assert_int_equal(one("/v1/me", "nope", "ip4:127.0.0.2"), 429);
    }
    /* another address has its own */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(one("/v1/me", NULL, "ip4:127.0.0.3"), 401);
    }
    assert_int_equal(one("/v1/me", NULL, "ip4:127.0.0.3"), 429);
    /* a public route and a valid key keep their larger buckets */
    for (int i = 0; i < 10; i++) {
        assert_int_equal(one("/healthz", NULL, "ip4:127.0.0.2"), 200);
        assert_int_equal(one("/v1/me", admin_key, "ip4:127.0.0.2"), 200);
    }
    /* one record per address so far; the rest wait for their summary */
    struct tally t = denied();
    assert_int_equal(t.records, 2);
    assert_int_equal(t.refusals, 2);
    assert_int_equal(denials_flush(w.denials, 1, api_denials_write, w.writer), 2);
    t = denied();
    assert_int_equal(t.records, 4);
    assert_int_equal(t.refusals, 6);
}

static void test_denials_router_forbidden_one_record_each(void **state)
{
    (void)state;
    struct tally before = denied();
    for (int i = 0; i < 4; i++) {
        assert_int_equal(one("/v1/principals", bob_key, "ip4:127.0.0.4"), 403);
    }
    struct tally t = denied();
    assert_int_equal(t.records - before.records, 4);
    assert_int_equal(t.forbidden - before.forbidden, 4);
    /* nothing of them waits in the tally */
    assert_int_equal(denials_flush(w.denials, 1, api_denials_write, w.writer), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_denials_first_at_once_then_one_summary),
        cmocka_unit_test(test_denials_addresses_apart),
        cmocka_unit_test(test_denials_at_most_one_per_interval),
        cmocka_unit_test(test_denials_table_bounded),
        cmocka_unit_test(test_denials_reasons_distinct_and_bounded),
        cmocka_unit_test(test_denials_options_refused),
    };
    const struct CMUnitTest router_tests[] = {
        cmocka_unit_test(test_denials_router_bad_keys_small_bucket),
        cmocka_unit_test(test_denials_router_forbidden_one_record_each),
    };
    int failed = cmocka_run_group_tests_name("denials", tests, NULL, NULL);
    failed += cmocka_run_group_tests_name("denials.router", router_tests, world_setup,
                                          world_teardown);
    return failed;
}
