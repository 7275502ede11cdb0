/* unit.store_file - the file-backed continuation store (al_store_file_new, src/lib/store_file.c):
 * a stored id is claimed at most once at a time, released ids can be claimed again, consumed
 * and expired ones never, and ids that could name other files are refused. */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "airlock.h"

struct fixture {
    char dir[64];
    struct al_store *store;
};

static int64_t in_an_hour(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + 3600 * 1000;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/airlock-unit-store-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    struct al_error err;
    assert_int_equal(al_store_file_new(f->dir, &f->store, &err), AL_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    al_store_free(f->store);
    DIR *d = opendir(f->dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] != '.') {
            char p[512];
            snprintf(p, sizeof p, "%s/%s", f->dir, e->d_name);
            unlink(p);
        }
    }
    if (d) {
        closedir(d);
    }
    rmdir(f->dir);
    free(f);
    return 0;
}

static void put(struct fixture *f, const char *id, const char *data, int64_t expires_ms)
{
    struct al_error err;
    assert_int_equal(f->store->put(f->store, id, data, strlen(data), expires_ms, &err), AL_OK);
}

static enum al_code claim(struct fixture *f, const char *id, char **ret, size_t *ret_len)
{
    struct al_error err;
    void *data = NULL;
    enum al_code rc = f->store->claim(f->store, id, &data, ret_len, &err);
    *ret = data;
    return rc;
}

static void test_store_file_put_claim_returns_data(void **state)
{
    struct fixture *f = *state;
    put(f, "abc", "alc1.token\nwith a newline", in_an_hour());
    char *got = NULL;
    size_t len = 0;
    assert_int_equal(claim(f, "abc", &got, &len), AL_OK);
    assert_int_equal(len, strlen("alc1.token\nwith a newline"));
    assert_string_equal(got, "alc1.token\nwith a newline");
    free(got);
}

static void test_store_file_claim_is_exclusive(void **state)
{
    struct fixture *f = *state;
    put(f, "once", "x", in_an_hour());
    char *got = NULL;
    size_t len = 0;
    assert_int_equal(claim(f, "once", &got, &len), AL_OK);
    free(got);
    got = NULL;
    assert_int_equal(claim(f, "once", &got, &len), AL_PROTOCOL_ERROR);
    assert_null(got);
}

static void test_store_file_release_allows_claim_again(void **state)
{
    struct fixture *f = *state;
    struct al_error err;
    put(f, "back", "data", in_an_hour());
    char *got = NULL;
    size_t len = 0;
    assert_int_equal(claim(f, "back", &got, &len), AL_OK);
    free(got);
    assert_int_equal(f->store->release(f->store, "back", &err), AL_OK);
    assert_int_equal(claim(f, "back", &got, &len), AL_OK);
    assert_string_equal(got, "data");
    free(got);
    /* release of an id that is not claimed */
    assert_int_equal(f->store->release(f->store, "back", &err), AL_OK);
    assert_int_equal(f->store->release(f->store, "back", &err), AL_PROTOCOL_ERROR);
}

static void test_store_file_consume_is_final(void **state)
{
    struct fixture *f = *state;
    struct al_error err;
    put(f, "gone", "data", in_an_hour());
    /* consume needs a claim first */
    assert_int_equal(f->store->consume(f->store, "gone", &err), AL_PROTOCOL_ERROR);
    char *got = NULL;
    size_t len = 0;
    assert_int_equal(claim(f, "gone", &got, &len), AL_OK);
    free(got);
    assert_int_equal(f->store->consume(f->store, "gone", &err), AL_OK);
    assert_int_equal(claim(f, "gone", &got, &len), AL_PROTOCOL_ERROR);
    assert_int_equal(f->store->release(f->store, "gone", &err), AL_PROTOCOL_ERROR);
    assert_int_equal(f->store->consume(f->store, "gone", &err), AL_PROTOCOL_ERROR);
}

static void test_store_file_expired_is_refused_and_removed(void **state)
{
    struct fixture *f = *state;
    put(f, "old", "data", 1); /* 1 ms after the epoch */
    char *got = NULL;
    size_t len = 0;
    struct al_error err;
    void *data = NULL;
    assert_int_equal(f->store->claim(f->store, "old", &data, &len, &err), AL_PROTOCOL_ERROR);
    assert_non_null(strstr(err.message, "expired"));
    assert_int_equal(claim(f, "old", &got, &len), AL_PROTOCOL_ERROR);
    char p[512];
    snprintf(p, sizeof p, "%s/old.cont", f->dir);
    assert_int_not_equal(access(p, F_OK), 0);
    snprintf(p, sizeof p, "%s/old.claimed", f->dir);
    assert_int_not_equal(access(p, F_OK), 0);
}

static void test_store_file_unknown_id(void **state)
{
    struct fixture *f = *state;
    char *got = NULL;
    size_t len = 0;
    assert_int_equal(claim(f, "never-stored", &got, &len), AL_PROTOCOL_ERROR);
}

static void test_store_file_refuses_bad_ids(void **state)
{
    struct fixture *f = *state;
    static const char *const bad
            [] = { "",
                   "../escape",
                   "a/b",
                   "a.b",
                   "sp ace",
                   "\xc3\xa9",
                   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" /* 65 */ };
    struct al_error err;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(f->store->put(f->store, bad[i], "x", 1, in_an_hour(), &err),
                         AL_PROTOCOL_ERROR);
        void *data = NULL;
        size_t len = 0;
        assert_int_equal(f->store->claim(f->store, bad[i], &data, &len, &err), AL_PROTOCOL_ERROR);
        assert_int_equal(f->store->consume(f->store, bad[i], &err), AL_PROTOCOL_ERROR);
        assert_int_equal(f->store->release(f->store, bad[i], &err), AL_PROTOCOL_ERROR);
    }
    /* nothing was written anywhere: the folder is still empty, and its parent has no escape */
    DIR *d = opendir(f->dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        assert_int_equal(e->d_name[0], '.');
    }
    closedir(d);
    assert_int_not_equal(access("/tmp/escape.cont", F_OK), 0);
    /* the longest valid id works */
    put(f, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "x", in_an_hour());
}

static void test_store_file_files_are_private(void **state)
{
    struct fixture *f = *state;
    put(f, "secret", "x", in_an_hour());
    char p[512];
    snprintf(p, sizeof p, "%s/secret.cont", f->dir);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0077, 0);
}

static void test_store_file_new_refuses_bad_dirs(void **state)
{
    (void)state;
    struct al_store *s = NULL;
    struct al_error err;
    assert_int_equal(al_store_file_new(NULL, &s, &err), AL_CONFIG_ERROR);
    assert_int_equal(al_store_file_new("", &s, &err), AL_CONFIG_ERROR);
    assert_int_equal(al_store_file_new("/proc/version", &s, &err), AL_CONFIG_ERROR);
    assert_null(s);
    al_store_free(NULL);
}

struct racer {
    struct fixture *f;
    int won;
};

static void *race(void *arg)
{
    struct racer *r = arg;
    char *got = NULL;
    size_t len = 0;
    r->won = claim(r->f, "race", &got, &len) == AL_OK;
    free(got);
    return NULL;
}

static void test_store_file_concurrent_claims_one_wins(void **state)
{
    struct fixture *f = *state;
    struct al_error err;
    for (int round = 0; round < 50; round++) {
        put(f, "race", "x", in_an_hour());
        enum { N = 4 };
        struct racer r[N];
        pthread_t t[N];
        for (int i = 0; i < N; i++) {
            r[i].f = f;
            r[i].won = 0;
            assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
        }
        int wins = 0;
        for (int i = 0; i < N; i++) {
            assert_int_equal(pthread_join(t[i], NULL), 0);
            wins += r[i].won;
        }
        assert_int_equal(wins, 1);
        assert_int_equal(f->store->consume(f->store, "race", &err), AL_OK);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_store_file_put_claim_returns_data, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_file_claim_is_exclusive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_file_release_allows_claim_again, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_store_file_consume_is_final, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_file_expired_is_refused_and_removed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_store_file_unknown_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_file_refuses_bad_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_file_files_are_private, setup, teardown),
        cmocka_unit_test(test_store_file_new_refuses_bad_dirs),
        cmocka_unit_test_setup_teardown(test_store_file_concurrent_claims_one_wins, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
