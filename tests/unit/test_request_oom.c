/* unit.request_oom - the request path when memory runs out: each request of a set goes through
 * admission and its handler (router_handle, over a SQLite store, its readers and a writer without
 * a thread, as the fuzz target drives it) once for every allocation it makes, that allocation
 * failing. Every answer must be the request's own (as without a failure) or a clean 500 with the
 * error body - never a crash, never a 200 with a cut document - and every allocation the request
 * made must be freed once it is done.
 *
 * The allocations counted and failed are airlockd's own: malloc, calloc, realloc, strdup and
 * strndup as called from the project's code, wrapped at link time (-Wl,--wrap=...); SQLite's,
 * libcurl's and OpenSSL's go past (they are shared libraries). */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "auth.h"
#include "http.h"
#include "json.h"
#include "ratelimit.h"
#include "readers.h"
#include "router.h"
#include "store.h"
#include "writer.h"

/* The linker's names for a wrapped function (--wrap) are reserved identifiers by design. */
/* NOLINTBEGIN(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp) */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

static long calls;   /* allocations counted since counting began */
static long fail_at; /* -1: none counted; 0: counted, none fails; N: the Nth fails */
static long live;    /* allocations not freed yet */

/* Counts an allocation; 1 when it is the one that fails. */
static int next_fails(void)
{
    if (fail_at < 0) {
        return 0;
    }
    calls++;
    return fail_at > 0 && calls == fail_at;
}

void *__wrap_malloc(size_t n)
{
    void *p = next_fails() ? NULL : __real_malloc(n);
    live += p != NULL;
    return p;
}

void *__wrap_calloc(size_t n, size_t size)
{
    void *p = next_fails() ? NULL : __real_calloc(n, size);
    live += p != NULL;
    return p;
}

void *__wrap_realloc(void *p, size_t n)
{
    void *q = next_fails() ? NULL : __real_realloc(p, n);
    live += p == NULL && q != NULL;
    return q;
}

void __wrap_free(void *p)
{
    live -= p != NULL;
    __real_free(p);
}

char *__wrap_strdup(const char *s)
{
    char *p = next_fails() ? NULL : __real_strdup(s);
    live += p != NULL;
    return p;
}

char *__wrap_strndup(const char *s, size_t n)
{
    char *p = next_fails() ? NULL : __real_strndup(s, n);
    live += p != NULL;
    return p;
}
/* NOLINTEND(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp) */

static const char admin_key[] = "oom-admin-key-0123456789abcdef0123456789abcd";

struct world {
    char dir[128];
    char db[192];
    struct store *store;
    struct readers *readers;
    struct writer *writer;
    struct ratelimit *limit;
    struct api_services svc;
    struct router router;
};

static struct world w;
static struct secretbox_keys secrets; /* one key */

static int setup(void **state)
{
    char err[STORE_ERRMSG_MAX];
    char prefix[AUTH_PREFIX_LEN + 1];
    unsigned char hash[STORE_HASH_LEN];
    (void)state;
    fail_at = -1; /* nothing counted while the world is made */
    memset(&w, 0, sizeof w);
    snprintf(w.dir, sizeof w.dir, "/tmp/airlock-oom-XXXXXX");
    assert_non_null(mkdtemp(w.dir));
    snprintf(w.db, sizeof w.db, "%s/airlock.db", w.dir);
    assert_int_equal(store_sqlite_open(w.db, &w.store, err), STORE_OK);
    struct store *s = w.store;
    assert_int_equal(s->ops->principal_create(s, "admin", "user"), STORE_OK);
    assert_int_equal(s->ops->role_grant(s, "admin", "admin", "*"), STORE_OK);
    assert_int_equal(s->ops->department_create(s, "ops"), STORE_OK);
    assert_int_equal(s->ops->role_grant(s, "admin", "author", "ops"), STORE_OK);
    assert_int_equal(s->ops->role_grant(s, "admin", "agent", "ops"), STORE_OK);
    assert_int_equal(auth_key_digest(admin_key, prefix, hash), 0);
    assert_int_equal(s->ops->key_add(s, "admin", prefix, hash), STORE_OK);
    /* checkpoints (the export's seal) are signed with a fixed key */
    static const unsigned char seed[32] = { 1, 2, 3 };
    EVP_PKEY *key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, sizeof seed);
    assert_non_null(key);
    assert_int_equal(s->ops->audit_set_key(s, key), STORE_OK);
    EVP_PKEY_free(key);
    struct ratelimit_options o = { 1e9, 1e9, 64, 1, NULL, NULL };
    assert_int_equal(ratelimit_new(&o, &w.limit), 0);
    assert_int_equal(readers_new(s, 4, &w.readers, NULL), 0);
    assert_int_equal(writer_new_inline(s, &w.writer), 0);
    w.svc.writer = w.writer;
    w.svc.readers = w.readers;
    w.router.readers = w.readers;
    w.router.writer = w.writer;
    w.router.svc = &w.svc;
    w.router.limit = w.limit;
    static const unsigned char secret[SECRETBOX_KEY_LEN] = { 7 };
    assert_int_equal(secretbox_keys_init(&secrets), 0);
    w.router.secret_keys = secretbox_keys_one(&secrets, secret);
    w.router.body_limit_bytes = 1 << 20;
    return 0;
}

static int teardown(void **state)
{
    char path[256];
    (void)state;
    fail_at = -1;
    writer_free(w.writer);
    readers_free(w.readers);
    ratelimit_free(w.limit);
    w.store->ops->close(w.store);
    for (const char *const *f = (const char *const[]){ "", "-wal", "-shm", NULL }; *f; f++) {
        snprintf(path, sizeof path, "%s%s", w.db, *f);
        unlink(path);
    }
    rmdir(w.dir);
    return 0;
}

/* One request through admission and its handler; the answer's status, its body checked. */
static unsigned one(const char *method, const char *path, const char *key, const char *body)
{
    struct http_request req;
    struct http_response resp;
    char authorization[128];
    memset(&req, 0, sizeof req);
    req.method = method;
    req.path = path;
    if (key) {
        snprintf(authorization, sizeof authorization, "Bearer %s", key);
        req.authorization = authorization;
    }
    req.body = body ? body : "";
    req.body_len = strlen(req.body);
    req.has_content_length = body != NULL;
    req.content_length = req.body_len;
    snprintf(req.client, sizeof req.client, "ip4:127.0.0.1");
    snprintf(req.request_id, sizeof req.request_id, "req_0123456789abcdef");
    http_response_init(&resp);
    router_handle(&w.router, &req, &resp);
    long failing = fail_at;
    fail_at = -1; /* the checks' own allocations neither fail nor count */
    /* what http.c does before it sends: a body whose append failed is answered 500 */
    unsigned status = resp.status;
    int failed = buf_failed(&resp.body);
    int json = !resp.content_type || strcmp(resp.content_type, "application/json") == 0;
    if (!failed && !resp.stream_fn && json) {
        struct json_doc *doc = NULL;
        struct al_error err;
        if (json_parse(resp.body.data ? resp.body.data : "", resp.body.len, 64, &doc, &err) !=
            AL_OK) {
            fail_msg("%s %s (allocation %ld failing): %u with a body that is not JSON: %.200s",
                     method, path, failing, status, resp.body.data ? resp.body.data : "");
        }
        const struct json_node *root = json_root(doc);
        if (status >= 400 && !(root->type == JSON_OBJECT && json_get(root, "error"))) {
            fail_msg("%s %s: %u without an error body", method, path, status);
        }
        json_doc_free(doc);
    }
    status = failed ? 500 : status;
    fail_at = failing;
    http_response_done(&resp);
    if (req.app_free) {
        req.app_free(req.app);
    }
    return status;
}

struct request {
    const char *method;
    const char *path;
    const char *key;
    const char *body;
    unsigned ok[3]; /* the answers it may give without a failure (0 ends the list) */
};

static int allowed(const struct request *r, unsigned status)
{
    for (size_t i = 0; i < 3 && r->ok[i]; i++) {
        if (status == r->ok[i]) {
            return 1;
        }
    }
    return 0;
}

/* Runs r with each of its allocations failing in turn. */
static void every_allocation_fails(const struct request *r)
{
    /* once first: what a request makes once and keeps (a reader opened for the pool, a
     * statement prepared for the cache) is not its own */
    fail_at = -1;
    (void)one(r->method, r->path, r->key, r->body);
    fail_at = 0;
    calls = 0;
    long before = live;
    unsigned status = one(r->method, r->path, r->key, r->body);
    long made = calls;
    if (!allowed(r, status)) {
        fail_msg("%s %s without a failure: %u", r->method, r->path, status);
    }
    if (live != before) {
        fail_msg("%s %s without a failure: %ld allocations not freed", r->method, r->path,
                 live - before);
    }
    assert_true(made > 0);
    print_message("%s %s: each of its %ld allocations fails in turn\n", r->method, r->path, made);
    for (long n = 1; n <= made; n++) {
        fail_at = n;
        calls = 0;
        before = live;
        status = one(r->method, r->path, r->key, r->body);
        fail_at = 0;
        if (!allowed(r, status) && status != 500) {
            fail_msg("%s %s with allocation %ld of %ld failing: %u", r->method, r->path, n, made,
                     status);
        }
        if (live != before) {
            fail_msg("%s %s with allocation %ld of %ld failing: %ld allocations not freed",
                     r->method, r->path, n, made, live - before);
        }
    }
    fail_at = -1;
}

static void test_request_oom_reads(void **state)
{
    (void)state;
    static const struct request reads[] = {
        { "GET", "/v1/me", admin_key, NULL, { 200 } },
        { "GET", "/v1/departments", admin_key, NULL, { 200 } },
        { "GET", "/v1/principals", admin_key, NULL, { 200 } },
        { "GET", "/v1/audit", admin_key, NULL, { 200 } },
        { "GET", "/v1/runs", admin_key, NULL, { 200 } },
        { "GET", "/v1/templates", admin_key, NULL, { 200 } },
        { "GET", "/v1/audit/verify", admin_key, NULL, { 200 } },
        { "GET", "/healthz", NULL, NULL, { 200 } },
        { "GET", "/nothing", NULL, NULL, { 404 } },
    };
    for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++) {
        every_allocation_fails(&reads[i]);
    }
}

static void test_request_oom_writes_and_refusals(void **state)
{
    (void)state;
    static const struct request writes[] = {
        /* a refusal is recorded by the writer before it is answered */
        { "GET", "/v1/me", NULL, NULL, { 401 } },
        { "GET",
          "/v1/me",
          "ak_000000000000_00000000000000000000000000000000000000000000000000"
          "00000000000000",
          NULL,
          { 401 } },
        { "POST", "/v1/departments", admin_key, "{\"name\":\"finance\"}", { 201, 409 } },
        { "POST", "/v1/departments", admin_key, "{\"name\":", { 400 } },
        { "POST",
          "/v1/principals",
          admin_key,
          "{\"name\":\"alice\",\"kind\":\"user\"}",
          { 201, 409 } },
        { "POST",
          "/v1/principals/alice/roles",
          admin_key,
          "{\"role\":\"author\",\"department\":\"ops\"}",
          { 201, 409, 404 } },
        { "POST",
          "/v1/templates",
          admin_key,
          "{\"name\":\"t\",\"department\":\"ops\",\"description\":\"d\"}",
          { 201, 409 } },
        { "PUT",
          "/v1/departments/ops/policy",
          admin_key,
          "{\"autonomy\":\"supervised\",\"allow_adhoc\":true}",
          { 200 } },
        { "POST",
          "/v1/templates/t/versions",
          admin_key,
          "{\"source\":\"return input.n * 2;\",\"functions\":[],\"input_schema\":"
          "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}}}}",
          { 201 } },
        { "GET", "/v1/templates/t/versions/1", admin_key, NULL, { 200 } },
        { "GET", "/v1/templates/t/versions/1/types", admin_key, NULL, { 200 } },
        { "GET", "/v1/audit/export", admin_key, NULL, { 200 } },
        { "POST", "/v1/runs", admin_key, "{\"template\":\"t\",\"input\":{\"n\":2}}", { 409 } },
    };
    for (size_t i = 0; i < sizeof writes / sizeof writes[0]; i++) {
        every_allocation_fails(&writes[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_request_oom_reads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_request_oom_writes_and_refusals, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
