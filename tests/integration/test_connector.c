/* integration.connector - airlockd's connector client (src/server/connector.c) against a fake
 * connector (hosts/fake_connector.py) on loopback: the body and the headers it receives, the
 * signature it verifies with the shared secret, and each fault failing the call with a message
 * that names the connector and how, never the connector's body: refused, timed out, HTTP 500,
 * not JSON, the wrong shape, an answer over the cap, closed mid-answer, the connector's own
 * error, schemas on arguments and results, cancellation, 50 calls in flight on one client, and
 * pending calls completed when the client stops. Targets are loaded from a real SQLite store
 * with sealed secrets, as airlockd loads them. */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "connector.h"
#include "json.h"
#include "secretbox.h"
#include "store.h"

#ifndef FAKE_CONNECTOR
#error "FAKE_CONNECTOR must name hosts/fake_connector.py"
#endif

#define SECRET "test-signing-secret-0123456789"

extern char **environ;

static const unsigned char key[SECRETBOX_KEY_LEN] = { 9, 8, 7 };
static struct secretbox_keys keys = { .lock = PTHREAD_MUTEX_INITIALIZER };
static struct store *store;
static struct connector_client *client;
static pid_t fake_pid = -1;
static unsigned fake_port;
static char dir[64];

struct outcome {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int finished;
    int ok;
    enum connector_outcome outcome;
    int calls; /* how many times done ran */
    char *text;
    int cancel; /* what cancelled() answers */
};

static void outcome_init(struct outcome *o)
{
    memset(o, 0, sizeof *o);
    pthread_mutex_init(&o->lock, NULL);
    pthread_cond_init(&o->cond, NULL);
}

static void outcome_done(struct outcome *o)
{
    free(o->text);
    pthread_mutex_destroy(&o->lock);
    pthread_cond_destroy(&o->cond);
}

static void on_done(void *userdata, enum connector_outcome outcome, const char *result_json,
                    size_t len, const char *message)
{
    struct outcome *o = userdata;
    int ok = outcome == CONNECTOR_RETURNED;
    pthread_mutex_lock(&o->lock);
    o->calls++;
    o->ok = ok;
    o->outcome = outcome;
    free(o->text);
    o->text = ok ? strndup(result_json, len) : strdup(message);
    assert_true(ok ? strlen(result_json) == len : message != NULL);
    o->finished = 1;
    pthread_cond_broadcast(&o->cond);
    pthread_mutex_unlock(&o->lock);
}

static int on_cancelled(void *userdata)
{
    struct outcome *o = userdata;
    pthread_mutex_lock(&o->lock);
    int c = o->cancel;
    pthread_mutex_unlock(&o->lock);
    return c;
}

/* Waits for done (a hang guard of 30 s, not a timing assertion). */
static void outcome_wait(struct outcome *o)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    pthread_mutex_lock(&o->lock);
    while (!o->finished) {
        assert_int_equal(pthread_cond_timedwait(&o->cond, &o->lock, &until), 0);
    }
    pthread_mutex_unlock(&o->lock);
}

/* Registers connector `name` at url (with the fake's port for a path starting with '/'),
 * sealed as airlockd seals it, and loads it. */
static struct connector_target *target_at(const char *name, const char *url_or_path,
                                          int64_t timeout_ms, const char *functions,
                                          const char *secret)
{
    char url[256];
    char context[128];
    char *sealed_secret = NULL;
    char *sealed_headers = NULL;
    struct al_error err;
    const char *headers = "{\"Authorization\":\"Bearer crm-token\",\"X-Tenant\":\"acme\"}";
    struct connector_target *t = NULL;
    if (url_or_path[0] == '/') {
        snprintf(url, sizeof url, "http://127.0.0.1:%u%s", fake_port, url_or_path);
    } else {
        snprintf(url, sizeof url, "%s", url_or_path);
    }
    snprintf(context, sizeof context, "connector/%s/signing_secret", name);
    assert_int_equal(secretbox_seal(key, context, secret, strlen(secret), &sealed_secret), 0);
    snprintf(context, sizeof context, "connector/%s/headers", name);
    assert_int_equal(secretbox_seal(key, context, headers, strlen(headers), &sealed_headers), 0);
    struct store_connector c = { name,          "dept",         url,
                                 sealed_secret, sealed_headers, "[\"Authorization\",\"X-Tenant\"]",
                                 functions,     timeout_ms,     NULL,
                                 "admin" };
    assert_int_equal(store->ops->connector_create(store, &c), STORE_OK);
    free(sealed_secret);
    free(sealed_headers);
    memset(&err, 0, sizeof err);
    assert_int_equal(connector_target_load(store, secretbox_keys_one(&keys, key), name, &t, &err),
                     0);
    assert_string_equal(err.message, ""); /* written only on failure */
    return t;
}

static struct connector_target *target(const char *name, const char *path, int64_t timeout_ms)
{
    return target_at(name, path, timeout_ms, "{\"lookup\":{\"sensitive\":false}}", SECRET);
}

static struct connector_request request(const struct connector_target *t, const char *args)
{
    struct connector_request r = { t, "lookup",  args, "run_42",   "refund-small",
                                   3, "agent-7", 5,    "run_42:5", on_cancelled };
    return r;
}

/* One call, waited for: the outcome's text is the result or the message. */
static void call(const struct connector_target *t, const char *args, struct outcome *o)
{
    struct connector_request r = request(t, args);
    outcome_init(o);
    assert_int_equal(connector_client_call(client, &r, on_done, o), 0);
    outcome_wait(o);
    assert_int_equal(o->calls, 1);
}

static void expect_failure(const char *name, const char *path, int64_t timeout_ms, const char *want)
{
    struct outcome o;
    struct connector_target *t = target(name, path, timeout_ms);
    call(t, "[\"q\"]", &o);
    assert_false(o.ok);
    if (!strstr(o.text, want)) {
        fail_msg("message %s, want %s", o.text, want);
    }
    char prefix[128];
    snprintf(prefix, sizeof prefix, "connector %s (%s.lookup): ", name, name);
    assert_int_equal(strncmp(o.text, prefix, strlen(prefix)), 0);
    assert_null(strstr(o.text, "LEAKED-BODY"));
    assert_null(strstr(o.text, SECRET));
    outcome_done(&o);
    connector_target_free(t);
}

static int group_setup(void **state)
{
    (void)state;
    char path[96];
    char err[STORE_ERRMSG_MAX];
    int fds[2];
    posix_spawn_file_actions_t fa;
    static char prog[] = "python3";
    static char script[] = FAKE_CONNECTOR;
    static char secret[] = SECRET;
    char *argv[] = { prog, script, secret, NULL };
    snprintf(dir, sizeof dir, "/tmp/integration-connector-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/airlock.db", dir);
    assert_int_equal(store_sqlite_open(path, &store, err), STORE_OK);
    assert_int_equal(store->ops->department_create(store, "dept"), STORE_OK);
    assert_int_equal(pipe(fds), 0);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    assert_int_equal(posix_spawnp(&fake_pid, "python3", &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    assert_non_null(f);
    assert_int_equal(fscanf(f, "%u", &fake_port), 1);
    fclose(f);
    client = connector_client_new();
    assert_non_null(client);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    char path[128];
    connector_client_free(client);
    if (fake_pid > 0) {
        kill(fake_pid, SIGKILL);
        waitpid(fake_pid, NULL, 0);
    }
    store->ops->close(store);
    const char *suffixes[] = { "", "-wal", "-shm" };
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/airlock.db%s", dir, suffixes[i]);
        unlink(path);
    }
    rmdir(dir);
    return 0;
}

static void test_connector_body_headers_signature(void **state)
{
    (void)state;
    struct outcome o;
    struct json_doc *doc = NULL;
    struct connector_target *t = target("crm", "/echo", 5000);
    call(t, "[{\"id\":7},\"x\"]", &o);
    assert_true(o.ok);
    assert_int_equal(json_parse(o.text, strlen(o.text), 64, &doc, NULL), AL_OK);
    const struct json_node *r = json_root(doc);
    assert_int_equal(json_get(r, "signature_ok")->type, JSON_TRUE);
    assert_true(json_get(r, "skew_s")->num < 300);
    const struct json_node *body = json_get(r, "body");
    assert_string_equal(json_get(body, "function")->str, "crm.lookup");
    const struct json_node *args = json_get(body, "args");
    /* as Python's json.dumps writes the array the connector received */
    assert_int_equal(args->raw_len, strlen("[{\"id\": 7}, \"x\"]"));
    assert_memory_equal(args->raw, "[{\"id\": 7}, \"x\"]", args->raw_len);
    assert_string_equal(json_get(body, "run")->str, "run_42");
    assert_string_equal(json_get(body, "template")->str, "refund-small");
    assert_int_equal((int)json_get(body, "version")->num, 3);
    assert_string_equal(json_get(body, "principal")->str, "agent-7");
    assert_int_equal((int)json_get(body, "call")->num, 5);
    assert_string_equal(json_get(body, "idempotency_key")->str, "run_42:5");
    const struct json_node *h = json_get(r, "headers");
    assert_string_equal(json_get(h, "authorization")->str, "Bearer crm-token");
    assert_string_equal(json_get(h, "x-tenant")->str, "acme");
    assert_string_equal(json_get(h, "content-type")->str, "application/json");
    assert_non_null(strstr(json_get(h, "x-airlock-signature")->str, ",v1="));
    json_doc_free(doc);
    outcome_done(&o);
    connector_target_free(t);
}

static void test_connector_signature_with_another_secret_fails(void **state)
{
    (void)state;
    struct outcome o;
    struct connector_target *t = target_at("crm_wrong", "/echo", 5000, "{\"lookup\":{}}",
                                           "not-the-shared-secret-at-all");
    call(t, "[]", &o);
    assert_true(o.ok);
    assert_non_null(strstr(o.text, "\"signature_ok\": false"));
    outcome_done(&o);
    connector_target_free(t);
}

static void test_connector_result_is_the_member(void **state)
{
    (void)state;
    struct outcome o;
    struct connector_target *t = target("val", "/value", 5000);
    call(t, "[{\"a\": [1, 2, {\"b\": null}]}]", &o);
    assert_true(o.ok);
    assert_string_equal(o.text, "{\"a\": [1, 2, {\"b\": null}]}");
    outcome_done(&o);
    connector_target_free(t);
}

static void test_connector_own_error_message(void **state)
{
    (void)state;
    struct outcome o;
    struct connector_target *t = target("err", "/error", 5000);
    call(t, "[\"customer 7 not found\"]", &o);
    assert_false(o.ok);
    assert_string_equal(o.text, "connector err (err.lookup): customer 7 not found");
    outcome_done(&o);
    /* long messages are cut at ~200 bytes, on a character boundary */
    char args[2048];
    size_t used = (size_t)snprintf(args, sizeof args, "[\"");
    for (int i = 0; i < 300; i++) {
        used += (size_t)snprintf(args + used, sizeof args - used, "\\u00e9");
    }
    snprintf(args + used, sizeof args - used, "\"]");
    call(t, args, &o);
    assert_false(o.ok);
    assert_true(strlen(o.text) < 300);
    assert_non_null(strstr(o.text, "..."));
    struct al_error e;
    struct buf b;
    buf_init(&b, 4096);
    json_write_string(&b, o.text, strlen(o.text));
    assert_int_equal(json_check(b.data, b.len, 2, &e), AL_OK); /* valid UTF-8 */
    buf_done(&b);
    outcome_done(&o);
    connector_target_free(t);
}

static void test_connector_faults(void **state)
{
    (void)state;
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    char url[64];
    /* a port nobody listens on: bound, then closed */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/x", ntohs(sa.sin_port));
    close(fd);
    expect_failure("refused", url, 5000, "connection refused");
    expect_failure("slow", "/slow", 300, "timed out after 300 ms");
    expect_failure("http500", "/500", 5000, "answered HTTP 500");
    expect_failure("garbage", "/garbage", 5000, "the answer is not JSON");
    expect_failure("shape", "/shape", 5000, "neither {\"result\":...} nor {\"error\":\"...\"}");
    expect_failure("huge", "/huge", 5000, "the answer is over 1048576 bytes");
    expect_failure("closer", "/close", 5000, "closed the connection mid-answer");
    expect_failure("nowhere", "/nowhere", 5000, "answered HTTP 404");
    /* docs/server.md: the client follows no redirect */
    expect_failure("redirect", "/redirect", 5000, "answered HTTP 302");
}

/* docs/server.md: the client ignores the proxy variables of the environment - with every one
 * of them pointing at a port nobody listens on, a call still reaches its connector. */
static void test_connector_ignores_proxy_environment(void **state)
{
    (void)state;
    static const char *const names[] = { "http_proxy",  "HTTP_PROXY", "https_proxy",
                                         "HTTPS_PROXY", "all_proxy",  "ALL_PROXY" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        setenv(names[i], "http://127.0.0.1:9", 1);
    }
    struct outcome o;
    struct connector_target *t = target("direct", "/value", 5000);
    call(t, "[42]", &o);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        unsetenv(names[i]);
    }
    assert_true(o.ok);
    assert_string_equal(o.text, "42");
    outcome_done(&o);
    connector_target_free(t);
}

static void test_connector_schemas(void **state)
{
    (void)state;
    struct outcome o;
    struct connector_target *t =
            target_at("typed", "/value", 5000,
                      "{\"lookup\":{\"args_schema\":{\"type\":\"array\",\"minItems\":1,"
                      "\"items\":{\"type\":\"integer\"}},"
                      "\"result_schema\":{\"type\":\"integer\",\"minimum\":10}}}",
                      SECRET);
    call(t, "[12]", &o);
    assert_true(o.ok);
    assert_string_equal(o.text, "12");
    outcome_done(&o);
    /* refused before anything is sent, naming the argument as its declaration does */
    call(t, "[1, \"two\"]", &o);
    assert_int_equal(o.outcome, CONNECTOR_ARGS_REFUSED);
    assert_string_equal(o.text, "typed.lookup: argument 2 (arg2): must be integer");
    outcome_done(&o);
    call(t, "[]", &o);
    assert_int_equal(o.outcome, CONNECTOR_ARGS_REFUSED);
    assert_string_equal(o.text, "typed.lookup: the arguments: must have at least 1 items");
    outcome_done(&o);
    call(t, "[3]", &o);
    assert_false(o.ok);
    assert_string_equal(o.text, "connector typed (typed.lookup): the result breaks "
                                "result_schema: (root): must be >= 10");
    outcome_done(&o);
    connector_target_free(t);
}

static void test_connector_bad_requests_refused(void **state)
{
    (void)state;
    struct outcome o;
    struct connector_target *t = target("strict", "/value", 5000);
    struct connector_request r = request(t, "{\"not\":\"an array\"}");
    outcome_init(&o);
    assert_int_equal(connector_client_call(client, &r, on_done, &o), -1);
    r.args_json = "[1,";
    assert_int_equal(connector_client_call(client, &r, on_done, &o), -1);
    r.args_json = "[]";
    r.function = "refund";
    assert_int_equal(connector_client_call(client, &r, on_done, &o), -1);
    assert_int_equal(o.calls, 0);
    int sensitive = -1;
    int idempotent = -1;
    assert_int_equal(connector_function_flags(t, "refund", &sensitive, &idempotent), -1);
    assert_int_equal(connector_function_flags(t, "lookup", &sensitive, &idempotent), 0);
    assert_int_equal(sensitive, 0);
    assert_int_equal(idempotent, 0);
    outcome_done(&o);
    connector_target_free(t);
    /* flags as registered */
    t = target_at("flags", "/value", 5000,
                  "{\"refund\":{\"sensitive\":true,\"idempotent\":true},\"get\":{}}", SECRET);
    assert_int_equal(connector_function_flags(t, "refund", &sensitive, &idempotent), 0);
    assert_int_equal(sensitive, 1);
    assert_int_equal(idempotent, 1);
    connector_target_free(t);
}

static void test_connector_load_refuses_wrong_key_and_missing(void **state)
{
    (void)state;
    struct connector_target *t = NULL;
    struct al_error err;
    unsigned char other[SECRETBOX_KEY_LEN] = { 1 };
    memset(&err, 0, sizeof err);
    connector_target_free(target("keyed", "/value", 5000));
    assert_int_equal(
            connector_target_load(store, secretbox_keys_one(&keys, other), "keyed", &t, &err), -1);
    assert_null(t);
    assert_int_equal(err.code, AL_CONFIG_ERROR);
    assert_non_null(strstr(err.message, "does not open"));
    assert_int_equal(
            connector_target_load(store, secretbox_keys_one(&keys, key), "no_such", &t, NULL), 1);
    assert_null(t);
}

static void test_connector_cancelled(void **state)
{
    (void)state;
    struct outcome o;
    struct connector_target *t = target("stuck", "/slow", 20000);
    struct connector_request r = request(t, "[]");
    outcome_init(&o);
    assert_int_equal(connector_client_call(client, &r, on_done, &o), 0);
    pthread_mutex_lock(&o.lock);
    o.cancel = 1;
    pthread_mutex_unlock(&o.lock);
    outcome_wait(&o);
    assert_false(o.ok);
    assert_string_equal(o.text, "connector stuck (stuck.lookup): cancelled");
    assert_int_equal(o.calls, 1);
    outcome_done(&o);
    connector_target_free(t);
}

#define NCONCURRENT 50

static void test_connector_fifty_in_flight(void **state)
{
    (void)state;
    static struct outcome o[NCONCURRENT];
    struct connector_target *t = target("wide", "/barrier", 20000);
    for (int i = 0; i < NCONCURRENT; i++) {
        struct connector_request r = request(t, "[]");
        r.call = (uint32_t)i;
        outcome_init(&o[i]);
        assert_int_equal(connector_client_call(client, &r, on_done, &o[i]), 0);
    }
    for (int i = 0; i < NCONCURRENT; i++) {
        outcome_wait(&o[i]);
        if (!o[i].ok) {
            fail_msg("call %d: %s", i, o[i].text);
        }
        assert_non_null(strstr(o[i].text, "\"signature_ok\": true"));
        outcome_done(&o[i]);
    }
    connector_target_free(t);
}

static void test_connector_free_completes_pending(void **state)
{
    (void)state;
    struct outcome o;
    struct connector_client *own = connector_client_new();
    struct connector_target *t = target("pending", "/slow", 20000);
    struct connector_request r = request(t, "[]");
    r.cancelled = NULL;
    outcome_init(&o);
    assert_non_null(own);
    assert_int_equal(connector_client_call(own, &r, on_done, &o), 0);
    connector_client_free(own);
    assert_int_equal(o.calls, 1);
    assert_false(o.ok);
    assert_non_null(strstr(o.text, "stopping"));
    outcome_done(&o);
    connector_target_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connector_body_headers_signature),
        cmocka_unit_test(test_connector_signature_with_another_secret_fails),
        cmocka_unit_test(test_connector_result_is_the_member),
        cmocka_unit_test(test_connector_own_error_message),
        cmocka_unit_test(test_connector_faults),
        cmocka_unit_test(test_connector_ignores_proxy_environment),
        cmocka_unit_test(test_connector_schemas),
        cmocka_unit_test(test_connector_bad_requests_refused),
        cmocka_unit_test(test_connector_load_refuses_wrong_key_and_missing),
        cmocka_unit_test(test_connector_cancelled),
        cmocka_unit_test(test_connector_fifty_in_flight),
        cmocka_unit_test(test_connector_free_completes_pending),
    };
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
