/*
 * integration.api - the C API end to end with the real airlock-worker: host functions answered
 * at once, later from another thread, synchronously, by throwing, or never; name validation;
 * workers that crash, hang or speak garbage; resource hygiene over many runs and threads.
 */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "airlock.h"

#include "procinfo.h"

static char fake_dir[] = "/tmp/airlock-test-XXXXXX";

/* ------------------------------------------------------------ helpers */

static struct al_result *run_with(struct al_runner *r, const char *src, const uint64_t *seed)
{
    struct al_run_opts *o = al_run_opts_new();
    assert_non_null(o);
    assert_int_equal(al_run_opts_set_source(o, src, strlen(src), NULL), AL_OK);
    if (seed) {
        al_run_opts_set_seed(o, *seed);
        al_run_opts_set_clock(o, 1700000000000);
    }
    struct al_result *res = NULL;
    struct al_error err;
    enum al_code rc = al_run(r, o, &res, &err);
    if (rc != AL_OK) {
        fail_msg("al_run: %s", err.message);
    }
    al_run_opts_free(o);
    return res;
}

static struct al_runner *runner_of(struct al_config *c)
{
    struct al_runner *r = NULL;
    struct al_error err;
    if (al_runner_new(c, &r, &err) != AL_OK) {
        fail_msg("al_runner_new: %s", err.message);
    }
    return r;
}

static void expect_json(struct al_result *res, const char *json)
{
    if (al_result_status(res) != AL_STATUS_COMPLETED) {
        fail_msg("run failed: %s: %s", al_code_name(al_result_error_code(res)),
                 al_result_error_message(res));
    }
    assert_string_equal(al_result_value(res, NULL), json);
}

static void expect_failure(struct al_result *res, enum al_code code, const char *message_part)
{
    assert_int_equal(al_result_status(res), AL_STATUS_FAILED);
    if (al_result_error_code(res) != code) {
        fail_msg("expected %s, got %s: %s", al_code_name(code),
                 al_code_name(al_result_error_code(res)), al_result_error_message(res));
    }
    if (message_part && !strstr(al_result_error_message(res), message_part)) {
        fail_msg("message '%s' lacks '%s'", al_result_error_message(res), message_part);
    }
}

/* ------------------------------------------------------------ host functions */

static void host_echo(struct al_call *call, void *ud)
{
    (void)ud;
    size_t len;
    const char *args = al_call_args(call, &len);
    al_call_return(call, args, len);
}

static void *answer_later(void *arg)
{
    struct al_call *call = arg;
    al_call_return(call, "{\"late\":true}", strlen("{\"late\":true}"));
    return NULL;
}

static void host_threaded(struct al_call *call, void *ud)
{
    (void)ud;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, answer_later, call), 0);
    pthread_detach(t);
}

static void host_throw(struct al_call *call, void *ud)
{
    (void)ud;
    al_call_throw(call, "card declined");
}

static void host_type_error(struct al_call *call, void *ud)
{
    (void)ud;
    al_call_throw_type_error(call, "amount must be a number");
}

static void host_garbage(struct al_call *call, void *ud)
{
    (void)ud;
    al_call_return(call, "{not json", 9);
}

static void host_big(struct al_call *call, void *ud)
{
    (void)ud;
    static char big[2048];
    memset(big, 'x', sizeof big);
    big[0] = '"';
    big[sizeof big - 1] = '"';
    al_call_return(call, big, sizeof big);
}

static struct al_call *parked;
static void host_park(struct al_call *call, void *ud)
{
    (void)ud;
    parked = call;
}

static void host_kill_worker(struct al_call *call, void *ud)
{
    (void)ud;
    pid_t kids[16];
    int n = procinfo_children(kids, 16);
    for (int i = 0; i < n && i < 16; i++) {
        kill(kids[i], SIGKILL);
    }
    al_call_return(call, "1", 1);
}

/* ------------------------------------------------------------ tests */

static void test_hello(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    struct al_runner *r = runner_of(c);
    struct al_result *res = run_with(r, "return 1 + 1", NULL);
    expect_json(res, "2");
    struct al_stats st;
    al_result_stats(res, &st);
    assert_true(st.wall_us > 0);
    assert_true(st.peak_memory_bytes > 0);
    assert_int_equal(st.host_calls, 0);
    assert_int_equal(al_result_error_code(res), AL_OK);
    al_result_free(res);
    al_runner_free(r);
    al_config_free(c);
}

static void test_host_functions(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "store.echo", host_echo, NULL, 0), AL_OK);
    assert_int_equal(al_config_add_host(c, "store.later", host_threaded, NULL, 0), AL_OK);
    assert_int_equal(al_config_add_host(c, "pay.charge", host_throw, NULL, 0), AL_OK);
    assert_int_equal(al_config_add_host(c, "calc.echo", host_echo, NULL, AL_HOST_SYNC), AL_OK);
    assert_int_equal(al_config_add_host(c, "bad.value", host_garbage, NULL, 0), AL_OK);
    assert_int_equal(al_config_add_host(c, "pay.refund", host_type_error, NULL, 0), AL_OK);
    assert_int_equal(al_config_add_host(c, "calc.typed", host_type_error, NULL, AL_HOST_SYNC),
                     AL_OK);
    struct al_runner *r = runner_of(c);
    al_config_free(c); /* the runner holds its own copy */

    struct al_result *res = run_with(r, "return await store.echo(1, undefined, 'x')", NULL);
    expect_json(res, "[1,{\"$type\":\"undefined\"},\"x\"]");
    al_result_free(res);

    res = run_with(r, "const v = await store.later(); return v.late", NULL);
    expect_json(res, "true");
    al_result_free(res);

    res = run_with(r, "const v = calc.echo(5); return [typeof v, v[0]]", NULL);
    expect_json(res, "[\"object\",5]");
    al_result_free(res);

    res = run_with(r, "try { await pay.charge() } catch (e) { return [e.name, e.message] }", NULL);
    expect_json(res, "[\"Error\",\"card declined\"]");
    al_result_free(res);

    res = run_with(r, "await pay.charge()", NULL);
    expect_failure(res, AL_HOST_FUNCTION_ERROR, "card declined");
    al_result_free(res);

    /* a TypeError, async and sync, the engine's own though the guest replaced the global */
    res = run_with(r,
                   "const T = TypeError; globalThis.TypeError = function F() {};"
                   "const out = [];"
                   "try { await pay.refund('x') } catch (e) { out.push(e instanceof T, e.name,"
                   " e.message) }"
                   "try { calc.typed('x') } catch (e) { out.push(e instanceof T) }"
                   "return out",
                   NULL);
    expect_json(res, "[true,\"TypeError\",\"amount must be a number\",true]");
    al_result_free(res);
    res = run_with(r, "await pay.refund('x')", NULL);
    expect_failure(res, AL_HOST_FUNCTION_ERROR, "amount must be a number");
    assert_string_equal(al_result_error_name(res), "TypeError");
    al_result_free(res);

    res = run_with(r, "try { await bad.value() } catch (e) { return e.message }", NULL);
    assert_int_equal(al_result_status(res), AL_STATUS_COMPLETED);
    assert_non_null(strstr(al_result_value(res, NULL), "invalid value"));
    al_result_free(res);

    res = run_with(r,
                   "const r = await Promise.all([store.echo(1), store.later(), store.echo(2)]);"
                   "return r",
                   NULL);
    expect_json(res, "[[1],{\"late\":true},[2]]");
    al_result_free(res);
    al_runner_free(r);
}

/* Answers the line al_call_line gives the call. */
static void host_line(struct al_call *call, void *ud)
{
    (void)ud;
    char line[16];
    int n = snprintf(line, sizeof line, "%u", al_call_line(call));
    al_call_return(call, line, (size_t)n);
}

/* al_call_line: the line of the explicit call in the run's source (async, sync, spread, in a
 * nested function); 0 for a call made any other way, whatever line the guest's frame was at. */
static void test_call_line(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "at.line", host_line, NULL, 0), AL_OK);
    assert_int_equal(al_config_add_host(c, "now.line", host_line, NULL, AL_HOST_SYNC), AL_OK);
    struct al_runner *r = runner_of(c);
    al_config_free(c);
    struct al_result *res =
            run_with(r,
                     "const out = [await at.line()];\n"
                     "out.push(now.line());\n"
                     "const f = () =>\n"
                     "    at.line(1,\n"
                     "        2);\n"
                     "out.push(await f(), await at.line(...[3]));\n"
                     "out.push(await at.line.call(null), now.line.apply(null, []));\n"
                     "const o = {}; Object.defineProperty(o, 'x', { get: now.line });\n"
                     "out.push(o.x, await Promise.resolve().then(at.line));\n"
                     "return out",
                     NULL);
    expect_json(res, "[1,2,5,6,0,0,0,0]");
    al_result_free(res);
    al_runner_free(r);
}

static void test_names_are_validated(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    const char *bad[] = { "store",
                          "store.",
                          ".fn",
                          "store.constructor",
                          "store.__proto__",
                          "store.then",
                          "store.toString",
                          "store.hasOwnProperty",
                          "store.valueOf",
                          "Math.max",
                          "console.log",
                          "Object.x",
                          "1a.b",
                          "a.b-c",
                          "a.b.c",
                          "constructor.x" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (al_config_add_host(c, bad[i], host_echo, NULL, 0) != AL_CONFIG_ERROR) {
            fail_msg("'%s' was accepted", bad[i]);
        }
    }
    assert_int_equal(al_config_add_host(c, "g.f", host_echo, NULL, 0), AL_OK);
    assert_int_equal(al_config_add_host(c, "g.f", host_echo, NULL, 0), AL_CONFIG_ERROR);
    assert_int_equal(al_config_add_host(c, "g.h", host_echo, NULL, AL_HOST_SYNC), AL_CONFIG_ERROR);
    assert_int_equal(al_config_add_host(c, "g.h", NULL, NULL, 0), AL_CONFIG_ERROR);
    al_config_free(c);
}

static void test_inherited_names_never_reach_host(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "store.echo", host_echo, NULL, 0), AL_OK);
    struct al_runner *r = runner_of(c);
    struct al_result *res = run_with(
            r,
            "'use strict'; const out = [];"
            "for (const k of ['constructor','__proto__','toString','valueOf','hasOwnProperty',"
            "'then']) { const v = store[k]; out.push(typeof v === 'function' ?"
            " (v === Object.prototype[k] || v === Object ? 'inherited' : 'HOST') : typeof v) }"
            "await store; try { store.x = 1 } catch (e) { out.push(e.name) }"
            "try { store = 1 } catch (e) { out.push(e.name) }"
            "out.push(Object.isFrozen(store)); return out",
            NULL);
    expect_json(res, "[\"inherited\",\"object\",\"inherited\",\"inherited\",\"inherited\","
                     "\"undefined\",\"TypeError\",\"TypeError\",true]");
    struct al_stats st;
    al_result_stats(res, &st);
    assert_int_equal(st.host_calls, 0);
    al_result_free(res);
    al_runner_free(r);
    al_config_free(c);
}

static void test_detached_and_late_answers(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "store.park", host_park, NULL, 0), AL_OK);
    assert_int_equal(al_config_add_host(c, "store.echo", host_echo, NULL, 0), AL_OK);
    struct al_runner *r = runner_of(c);

    /* never awaited: never dispatched, and the run fails */
    parked = NULL;
    struct al_result *res = run_with(r, "store.park(1); return 5", NULL);
    expect_failure(res, AL_DETACHED_BRIDGE_REQUEST, "store.park");
    assert_null(parked);
    al_result_free(res);

    /* observed, then the guest returns while it is in flight */
    res = run_with(r, "const p = store.park(1); p.then(() => {}); await store.echo(1); return 5",
                   NULL);
    expect_failure(res, AL_DETACHED_BRIDGE_REQUEST, "store.park");
    assert_non_null(parked);
    al_result_free(res);
    /* answering after the run ended is safe and discarded */
    al_call_return(parked, "1", 1);
    parked = NULL;

    /* awaiting a promise nothing can settle fails at once instead of hanging */
    res = run_with(r, "await new Promise(() => {})", NULL);
    expect_failure(res, AL_USER_ERROR, "never settle");
    al_result_free(res);
    al_runner_free(r);
    al_config_free(c);
}

static void test_limits_from_the_host_side(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "store.big", host_big, NULL, 0), AL_OK);
    assert_int_equal(al_config_set_limit(c, AL_LIMIT_HOST_OUTPUT_BYTES, 1024), AL_OK);
    struct al_runner *r = runner_of(c);
    struct al_result *res = run_with(r, "try { await store.big() } catch (e) {} return 1", NULL);
    expect_failure(res, AL_BRIDGE_LIMIT, "host-output");
    al_result_free(res);

    struct al_run_opts *o = al_run_opts_new();
    assert_int_equal(al_run_opts_set_source(o, "return 12345", 12, NULL), AL_OK);
    assert_int_equal(al_run_opts_set_limit(o, AL_LIMIT_SOURCE_BYTES, 11), AL_OK);
    struct al_error err;
    assert_int_equal(al_run(r, o, &res, &err), AL_OK);
    expect_failure(res, AL_SOURCE_TOO_LARGE, "source limit");
    al_result_free(res);
    assert_int_equal(al_run_opts_set_limit(o, AL_LIMIT_SOURCE_BYTES, 12), AL_OK);
    assert_int_equal(al_run(r, o, &res, &err), AL_OK);
    expect_json(res, "12345");
    al_result_free(res);
    al_run_opts_free(o);
    al_runner_free(r);
    al_config_free(c);
}

static void test_determinism(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    struct al_runner *r = runner_of(c);
    const char *src = "return [Date.now(), new Date().getTime(), Math.random(), Math.random()]";
    uint64_t seed = 42;
    struct al_result *a = run_with(r, src, &seed);
    struct al_result *b = run_with(r, src, &seed);
    assert_string_equal(al_result_value(a, NULL), al_result_value(b, NULL));
    assert_non_null(strstr(al_result_value(a, NULL), "[1700000000000,1700000000000,"));
    seed = 43;
    struct al_result *d = run_with(r, src, &seed);
    assert_string_not_equal(al_result_value(a, NULL), al_result_value(d, NULL));
    struct al_stats st;
    al_result_stats(d, &st);
    assert_true(st.seed == 43);
    assert_true(st.clock_ms == 1700000000000);
    al_result_free(a);
    al_result_free(b);
    al_result_free(d);
    al_runner_free(r);
    al_config_free(c);
}

static void test_console(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    struct al_runner *r = runner_of(c);
    struct al_result *res = run_with(r,
                                     "console.log('a', 1, {b: 2}); console.info('i');"
                                     "console.warn('w'); console.error(new TypeError('e'));"
                                     "console.debug([1, 'x']); return null",
                                     NULL);
    expect_json(res, "null");
    assert_int_equal(al_result_console_count(res), 5);
    const char *want[] = { "a 1 {\"b\":2}", "i", "w", "TypeError: e", "[1,\"x\"]" };
    for (size_t i = 0; i < 5; i++) {
        enum al_console_level level;
        const char *text = al_result_console_text(res, i, &level, NULL);
        assert_string_equal(text, want[i]);
        assert_int_equal(level, (enum al_console_level)i);
    }
    assert_null(al_result_console_text(res, 5, NULL, NULL));
    al_result_free(res);
    al_runner_free(r);
    al_config_free(c);
}

static void test_worker_killed_mid_run(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "chaos.kill", host_kill_worker, NULL, 0), AL_OK);
    /* only the running worker is a child, so the host kills exactly that one */
    assert_int_equal(al_config_set_warm_workers(c, 0), AL_OK);
    struct al_runner *r = runner_of(c);
    struct al_result *res = run_with(r, "await chaos.kill(); return 1", NULL);
    expect_failure(res, AL_WORKER_CRASHED, "SIGKILL");
    al_result_free(res);
    /* the host carries on */
    res = run_with(r, "return 'alive'", NULL);
    expect_json(res, "\"alive\"");
    al_result_free(res);
    al_runner_free(r);
    al_config_free(c);
}

static struct al_result *run_fake_worker(const char *script, uint64_t timeout_ms)
{
    char path[256];
    snprintf(path, sizeof path, "%s/worker.sh", fake_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\n%s\n", script);
    fclose(f);
    chmod(path, 0755);
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_set_worker_path(c, path), AL_OK);
    assert_int_equal(al_config_set_limit(c, AL_LIMIT_TIMEOUT_MS, timeout_ms), AL_OK);
    struct al_runner *r = runner_of(c);
    struct al_result *res = run_with(r, "return 1", NULL);
    al_runner_free(r);
    al_config_free(c);
    return res;
}

static void test_misbehaving_workers(void **state)
{
    (void)state;
    struct al_result *res = run_fake_worker("printf 'garbage!garbage!' >&3; sleep 5", 5000);
    expect_failure(res, AL_PROTOCOL_ERROR, "malformed");
    al_result_free(res);
    /* a well-framed frame of an unknown type, after READY */
    res = run_fake_worker(
            "printf '\\002\\000\\000\\000\\023\\001\\002\\000\\000\\000\\177\\001' >&3;"
            " sleep 5",
            5000);
    expect_failure(res, AL_PROTOCOL_ERROR, "unknown frame type");
    al_result_free(res);
    /* a worker whose seccomp filter did not load is refused unless explicitly allowed */
    res = run_fake_worker("printf '\\002\\000\\000\\000\\023\\000' >&3; sleep 5", 5000);
    expect_failure(res, AL_CONFIG_ERROR, "seccomp");
    al_result_free(res);
    /* anything before READY: a console entry (level 0, empty text) */
    res = run_fake_worker(
            "printf '\\006\\000\\000\\000\\021\\000\\000\\000\\000\\000' >&3; sleep 5", 5000);
    expect_failure(res, AL_PROTOCOL_ERROR, "before READY");
    al_result_free(res);
    res = run_fake_worker("exit 3", 5000);
    expect_failure(res, AL_WORKER_CRASHED, "status 3");
    al_result_free(res);
    res = run_fake_worker("printf '\\002\\000\\000\\000\\023\\001' >&3; exec sleep 30", 200);
    expect_failure(res, AL_TIMEOUT, "timeout of 200 ms");
    struct al_stats st;
    al_result_stats(res, &st);
    assert_true(st.wall_us < 5000000); /* killed, not waited for */
    al_result_free(res);

    struct al_config *c = al_config_new();
    assert_int_equal(al_config_set_worker_path(c, "/nonexistent/airlock-worker"), AL_OK);
    struct al_runner *r = NULL;
    struct al_error err;
    assert_int_equal(al_runner_new(c, &r, &err), AL_CONFIG_ERROR);
    assert_non_null(strstr(err.message, "/nonexistent/airlock-worker"));
    al_config_free(c);
}

/* Security claim: after its jail is applied a worker cannot open files, use the network, run
 * programs, create processes, trace, signal the host, make memory executable or touch any
 * descriptor but its socket. The probe worker attempts each directly; the filter must stop it,
 * the run must say which call, and the host must carry on. Both ways a worker starts are tried:
 * spawned for its run (its filter compiled by itself), and forked from a zygote (the filter
 * compiled once by the zygote and installed by each worker). */
/* 1 when a child of this process runs as a zygote (airlock-worker --zygote). */
static int have_zygote_child(void)
{
    pid_t kids[256];
    int n = procinfo_children(kids, 256);
    for (int k = 0; k < n && k < 256; k++) {
        char path[64];
        char buf[8192];
        snprintf(path, sizeof path, "/proc/%d/cmdline", (int)kids[k]);
        FILE *f = fopen(path, "r");
        if (!f) {
            continue;
        }
        size_t len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        for (size_t i = 0; i + 8 <= len; i++) {
            if (memcmp(buf + i, "--zygote", 8) == 0) {
                return 1;
            }
        }
    }
    return 0;
}

static void jail_stops_forbidden_calls(unsigned warm)
{
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_set_worker_path(c, AIRLOCK_PROBE_WORKER), AL_OK);
    assert_int_equal(al_config_set_warm_workers(c, warm), AL_OK);
    struct al_runner *r = runner_of(c);
    char kill_parent[64];
    snprintf(kill_parent, sizeof kill_parent, "kill:%d", (int)getpid());
    const struct {
        const char *probe;
        const char *syscall;
    } probes[] = {
        { "open", "openat" },    { "socket", "socket" },      { "connect", "connect" },
        { "execve", "execve" },  { "fork", "fork" },          { "clone", "clone" },
        { "ptrace", "ptrace" },  { kill_parent, "kill" },     { "mprotect-exec", "mprotect" },
        { "mmap-exec", "mmap" }, { "write-stderr", "write" }, { "read-stdin", "read" },
    };
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        char src[128];
        snprintf(src, sizeof src, "// jail-probe:%s\nreturn 1", probes[i].probe);
        struct al_result *res = run_with(r, src, NULL);
        char want[64];
        snprintf(want, sizeof want, "forbidden system call: %s ", probes[i].syscall);
        expect_failure(res, AL_WORKER_CRASHED, want);
        al_result_free(res);
    }
    /* the host carries on, and an ordinary run in the same jail works */
    struct al_result *res = run_with(r, "return new Date(0).toString()", NULL);
    expect_json(res, "\"Thu Jan 01 1970 00:00:00 GMT+0000\"");
    struct al_stats st;
    al_result_stats(res, &st);
    assert_true(st.jailed);
    al_result_free(res);
    /* with warm workers, every one of them came from the zygote, which is still serving */
    assert_int_equal(have_zygote_child(), warm > 0);
    al_runner_free(r);
    al_config_free(c);
}

static void test_jail_stops_forbidden_calls(void **state)
{
    (void)state;
    jail_stops_forbidden_calls(0);
}

static void test_jail_stops_forbidden_calls_zygote(void **state)
{
    (void)state;
    jail_stops_forbidden_calls(2);
}

/* The real worker: $AIRLOCK_WORKER (as CTest sets it), else beside this test. */
static const char *real_worker(void)
{
    static char path[4096];
    const char *env = getenv("AIRLOCK_WORKER");
    if (env && *env) {
        return env;
    }
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
    if (n <= 0) {
        return "airlock-worker";
    }
    path[n] = '\0';
    char *slash = strrchr(path, '/');
    snprintf(slash ? slash + 1 : path, 32, "airlock-worker");
    return path;
}

/* A broken zygote that answers with the pid of a process that is not ours - here the host's own
 * pid - must not make the runner signal that process; the runner starts workers itself. */
static void test_lying_zygote_is_not_trusted(void **state)
{
    (void)state;
    char script[8192];
    snprintf(script, sizeof script,
             "for a in \"$@\"; do\n"
             "  if [ \"$a\" = --zygote ]; then\n"
             "    p=$PPID\n"
             "    printf \"$(printf '\\\\%%03o\\\\%%03o\\\\%%03o\\\\%%03o' $((p & 255)) "
             "$(((p >> 8) & 255)) $(((p >> 16) & 255)) $(((p >> 24) & 255)))\" >&3\n"
             "    exec sleep 30\n"
             "  fi\n"
             "done\n"
             "exec %s \"$@\"",
             real_worker());
    char path[256];
    snprintf(path, sizeof path, "%s/worker.sh", fake_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\n%s\n", script);
    fclose(f);
    chmod(path, 0755);
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_set_worker_path(c, path), AL_OK);
    assert_int_equal(al_config_set_warm_workers(c, 1), AL_OK);
    struct al_runner *r = runner_of(c);
    for (int i = 0; i < 5; i++) {
        struct al_result *res = run_with(r, "return 'still here'", NULL);
        expect_json(res, "\"still here\"");
        al_result_free(res);
    }
    al_runner_free(r);
    al_config_free(c);
}

/* Concurrency limit: while one run holds the only slot, another is refused at once with
 * CONCURRENCY_LIMIT (no queue); with a queue of one, of two more callers exactly one waits and
 * then completes, the other is refused. */
static pthread_mutex_t park_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cv = PTHREAD_COND_INITIALIZER;
static struct al_call *parked_call;

static void host_park_signal(struct al_call *call, void *ud)
{
    (void)ud;
    pthread_mutex_lock(&park_mu);
    parked_call = call;
    pthread_cond_broadcast(&park_cv);
    pthread_mutex_unlock(&park_mu);
}

struct limit_job {
    struct al_runner *r;
    const char *src;
    struct al_result *res;
};

static void *limit_thread(void *arg)
{
    struct limit_job *j = arg;
    struct al_run_opts *o = al_run_opts_new();
    if (o && al_run_opts_set_source(o, j->src, strlen(j->src), NULL) == AL_OK) {
        if (al_run(j->r, o, &j->res, NULL) != AL_OK) {
            j->res = NULL;
        }
    }
    al_run_opts_free(o);
    return NULL;
}

static void wait_parked(void)
{
    pthread_mutex_lock(&park_mu);
    while (!parked_call) {
        pthread_cond_wait(&park_cv, &park_mu);
    }
    pthread_mutex_unlock(&park_mu);
}

static void test_concurrency_limit(void **state)
{
    (void)state;
    for (unsigned queue = 0; queue <= 1; queue++) {
        struct al_config *c = al_config_new();
        assert_int_equal(al_config_add_host(c, "store.park", host_park_signal, NULL, 0), AL_OK);
        assert_int_equal(al_config_set_max_concurrency(c, 1, queue), AL_OK);
        struct al_runner *r = runner_of(c);
        parked_call = NULL;
        struct limit_job a = { r, "return (await store.park())[0]", NULL };
        pthread_t ta;
        assert_int_equal(pthread_create(&ta, NULL, limit_thread, &a), 0);
        wait_parked(); /* run A holds the only slot */
        struct limit_job b = { r, "return 'b'", NULL }, d = { r, "return 'd'", NULL };
        pthread_t tb, td;
        if (queue == 0) {
            limit_thread(&b);
            expect_failure(b.res, AL_CONCURRENCY_LIMIT, "concurrency limit");
            al_result_free(b.res);
        } else {
            assert_int_equal(pthread_create(&tb, NULL, limit_thread, &b), 0);
            assert_int_equal(pthread_create(&td, NULL, limit_thread, &d), 0);
        }
        struct al_call *call = parked_call;
        if (queue == 1) {
            /* one of B and D is refused at once: wait for it before letting A finish */
            for (;;) {
                if (pthread_tryjoin_np(tb, NULL) == 0) {
                    expect_failure(b.res, AL_CONCURRENCY_LIMIT, NULL);
                    al_call_return(call, "[\"a\"]", 5);
                    pthread_join(td, NULL);
                    expect_json(d.res, "\"d\"");
                    break;
                }
                if (pthread_tryjoin_np(td, NULL) == 0) {
                    expect_failure(d.res, AL_CONCURRENCY_LIMIT, NULL);
                    al_call_return(call, "[\"a\"]", 5);
                    pthread_join(tb, NULL);
                    expect_json(b.res, "\"b\"");
                    break;
                }
                sched_yield();
            }
            al_result_free(b.res);
            al_result_free(d.res);
        } else {
            al_call_return(call, "[\"a\"]", 5);
        }
        pthread_join(ta, NULL);
        expect_json(a.res, "\"a\"");
        al_result_free(a.res);
        al_runner_free(r);
        al_config_free(c);
    }
}

/* A caller that waits in the queue past its timeout gives up with CONCURRENCY_LIMIT, and leaves
 * the line: the next caller still gets the slot. */
static void test_queue_timeout(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "store.park", host_park_signal, NULL, 0), AL_OK);
    assert_int_equal(al_config_set_max_concurrency(c, 1, 4), AL_OK);
    assert_int_equal(al_config_set_queue_timeout(c, 50), AL_OK);
    struct al_runner *r = runner_of(c);
    parked_call = NULL;
    struct limit_job a = { r, "return (await store.park())[0]", NULL };
    pthread_t ta;
    assert_int_equal(pthread_create(&ta, NULL, limit_thread, &a), 0);
    wait_parked(); /* A holds the only slot until we answer */
    struct limit_job b = { r, "return 'b'", NULL };
    limit_thread(&b); /* waits 50 ms in line, then gives up */
    expect_failure(b.res, AL_CONCURRENCY_LIMIT, "queue timeout");
    al_result_free(b.res);
    al_call_return(parked_call, "[\"a\"]", 5);
    pthread_join(ta, NULL);
    expect_json(a.res, "\"a\"");
    al_result_free(a.res);
    struct limit_job d = { r, "return 'd'", NULL };
    limit_thread(&d);
    expect_json(d.res, "\"d\"");
    al_result_free(d.res);
    al_runner_free(r);
    al_config_free(c);
}

static void test_many_runs_leak_nothing(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "store.echo", host_echo, NULL, 0), AL_OK);
    int fds_before = procinfo_count_fds();
    struct al_runner *r = runner_of(c);
    for (int i = 0; i < 1000; i++) {
        struct al_result *res = run_with(r, i % 2 ? "return await store.echo(1)" : "throw 1", NULL);
        assert_int_equal(al_result_status(res), i % 2 ? AL_STATUS_COMPLETED : AL_STATUS_FAILED);
        al_result_free(res);
    }
    al_runner_free(r); /* kills its warm worker */
    assert_int_equal(procinfo_count_fds(), fds_before);
    pid_t kids[4];
    assert_int_equal(procinfo_children(kids, 4), 0);
    al_config_free(c);
}

static void test_warm_workers(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_set_warm_workers(c, AL_WARM_WORKERS_MAX + 1), AL_CONFIG_ERROR);
    assert_int_equal(al_config_set_warm_workers(c, 4), AL_OK);
    assert_int_equal(al_config_add_host(c, "store.echo", host_echo, NULL, 0), AL_OK);
    int fds_before = procinfo_count_fds();
    struct al_runner *r = runner_of(c);
    assert_int_equal(al_runner_warm_workers(NULL), 0);
    /* the pool fills in the background; it never reports more than it was asked to keep */
    for (int i = 0; i < 20000 && al_runner_warm_workers(r) < 4; i++) {
        struct timespec tick = { 0, 1000 * 1000 };
        nanosleep(&tick, NULL);
    }
    assert_int_equal(al_runner_warm_workers(r), 4);
    for (int i = 0; i < 20; i++) {
        /* each warm worker serves one run: no state survives from one run to the next */
        struct al_result *res = run_with(r,
                                         "const seen = globalThis.mark; globalThis.mark = 1;"
                                         "return [seen, (await store.echo(7))[0]]",
                                         NULL);
        expect_json(res, "[{\"$type\":\"undefined\"},7]");
        struct al_stats st;
        al_result_stats(res, &st);
        assert_true(st.jailed); /* forked from the zygote, then jailed like any worker */
        al_result_free(res);
        assert_true(al_runner_warm_workers(r) <= 4);
    }
    al_runner_free(r); /* kills the spares */
    assert_int_equal(procinfo_count_fds(), fds_before);
    pid_t kids[8];
    assert_int_equal(procinfo_children(kids, 8), 0);
    al_config_free(c);
}

struct thread_job {
    struct al_runner *r;
    int ok;
};

static void *thread_runs(void *arg)
{
    struct thread_job *job = arg;
    for (int i = 0; i < 25; i++) {
        struct al_run_opts *o = al_run_opts_new();
        const char *src = "return (await store.echo(21))[0] * 2";
        if (al_run_opts_set_source(o, src, strlen(src), NULL) != AL_OK) {
            return NULL;
        }
        struct al_result *res = NULL;
        if (al_run(job->r, o, &res, NULL) == AL_OK &&
            al_result_status(res) == AL_STATUS_COMPLETED &&
            strcmp(al_result_value(res, NULL), "42") == 0) {
            job->ok++;
        }
        al_result_free(res);
        al_run_opts_free(o);
    }
    return NULL;
}

static void test_concurrent_runs_share_a_runner(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "store.echo", host_echo, NULL, 0), AL_OK);
    struct al_runner *r = runner_of(c);
    pthread_t t[4];
    struct thread_job jobs[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (struct thread_job){ r, 0 };
        assert_int_equal(pthread_create(&t[i], NULL, thread_runs, &jobs[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(jobs[i].ok, 25);
    }
    al_runner_free(r);
    al_config_free(c);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(fake_dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s/worker.sh", fake_dir);
    unlink(path);
    rmdir(fake_dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hello),
        cmocka_unit_test(test_host_functions),
        cmocka_unit_test(test_names_are_validated),
        cmocka_unit_test(test_inherited_names_never_reach_host),
        cmocka_unit_test(test_detached_and_late_answers),
        cmocka_unit_test(test_limits_from_the_host_side),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_console),
        cmocka_unit_test(test_worker_killed_mid_run),
        cmocka_unit_test(test_misbehaving_workers),
        cmocka_unit_test(test_jail_stops_forbidden_calls),
        cmocka_unit_test(test_jail_stops_forbidden_calls_zygote),
        cmocka_unit_test(test_lying_zygote_is_not_trusted),
        cmocka_unit_test(test_concurrency_limit),
        cmocka_unit_test(test_queue_timeout),
        cmocka_unit_test(test_call_line),
        cmocka_unit_test(test_many_runs_leak_nothing),
        cmocka_unit_test(test_warm_workers),
        cmocka_unit_test(test_concurrent_runs_share_a_runner),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
