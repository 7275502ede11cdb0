/*
 * integration.workspace - workspaces through the C API with the real worker: the guest's
 * `workspace` global and node:fs/promises, every error code, path rules (escapes answer
 * EACCES), outputs, limits, large files, local mounts (a symbolic link to /etc answers EACCES),
 * application mounts with commit all or nothing, the observer, and writes applied again when a
 * run is replayed from a journal or resumed from a continuation.
 */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "airlock.h"

#define SEED  42
#define CLOCK 1700000000000LL

static const char key[] = "k1-0123456789abcdef0123456789abcdef";

static const char manifest[] =
        "{\"version\": 1, \"root\": \"/workspace\","
        " \"entries\": {\"README.md\": {\"type\": \"file\", \"content\": "
        "\"hello\"},"
        "  \"in\": {\"type\": \"dir\"},"
        "  \"in/a.csv\": {\"type\": \"file\", \"content\": \"x,y\\n1,2\\n\"}},"
        " \"outputs\": [\"out/\"],"
        " \"limits\": {\"bytes\": 33554432, \"files\": 20, \"file_bytes\": "
        "12582912}}";

/* approve.ask(x): interrupts for a person (a continuation needs one) */
static void host_ask(struct al_call *call, void *ud)
{
    (void)ud;
    if (al_call_resolution(call, NULL)) {
        size_t len;
        const char *r = al_call_resolution(call, &len);
        al_call_return(call, r, len);
        return;
    }
    al_call_interrupt(call, "\"ok?\"", 5);
}

static struct al_runner *new_runner(void)
{
    struct al_config *c = al_config_new();
    assert_non_null(c);
    assert_int_equal(al_config_add_host(c, "approve.ask", host_ask, NULL, 0), AL_OK);
    assert_int_equal(al_config_set_continuation_key(c, key, strlen(key)), AL_OK);
    assert_int_equal(al_config_set_warm_workers(c, 0), AL_OK);
    struct al_runner *r = NULL;
    struct al_error err;
    if (al_runner_new(c, &r, &err) != AL_OK) {
        fail_msg("al_runner_new: %s", err.message);
    }
    al_config_free(c);
    return r;
}

static struct al_workspace *new_ws(const char *m)
{
    struct al_workspace *ws = NULL;
    struct al_error err;
    if (al_workspace_new(m, strlen(m), &ws, &err) != AL_OK) {
        fail_msg("al_workspace_new: %s", err.message);
    }
    return ws;
}

static struct al_result *run_opts(struct al_runner *r, struct al_run_opts *o, const char *src,
                                  struct al_workspace *ws)
{
    assert_int_equal(al_run_opts_set_source(o, src, strlen(src), NULL), AL_OK);
    assert_int_equal(al_run_opts_set_workspace(o, ws), AL_OK);
    al_run_opts_set_seed(o, SEED);
    al_run_opts_set_clock(o, CLOCK);
    struct al_result *res = NULL;
    struct al_error err;
    if (al_run(r, o, &res, &err) != AL_OK) {
        fail_msg("al_run: %s", err.message);
    }
    return res;
}

static struct al_result *run_ws(struct al_runner *r, const char *src, struct al_workspace *ws)
{
    struct al_run_opts *o = al_run_opts_new();
    struct al_result *res = run_opts(r, o, src, ws);
    al_run_opts_free(o);
    return res;
}

/* The run completed with exactly `want`. */
static void expect_done(struct al_result *res, const char *want)
{
    if (al_result_status(res) != AL_STATUS_COMPLETED) {
        fail_msg("the run failed: %s: %s", al_code_name(al_result_error_code(res)),
                 al_result_error_message(res));
    }
    const char *v = al_result_value(res, NULL);
    if (strcmp(v, want) != 0) {
        fail_msg("value %s, expected %s", v, want);
    }
    al_result_free(res);
}

static void check(struct al_runner *r, struct al_workspace *ws, const char *src, const char *want)
{
    expect_done(run_ws(r, src, ws), want);
}

/* ------------------------------------------------------------ the guest's API */

static void test_workspace_guest_api(void **state)
{
    (void)state;
    struct al_runner *r = new_runner();
    struct al_workspace *ws = new_ws(manifest);
    check(r, ws,
          "const t = await workspace.readFile('README.md');\n"
          "const same = await workspace.readFile('/workspace/./in/../README.md');\n"
          "const b = await workspace.readFile('in/a.csv', null);\n"
          "const b2 = await workspace.readFileBytes('in/a.csv');\n"
          "await workspace.writeFile('out/r.md', '# report\\n');\n"
          "await workspace.appendFile('out/r.md', new Uint8Array([104, 105]));\n"
          "await workspace.writeJson('out/s.json', {n: 1});\n"
          "await workspace.mkdir('out/a/b', {recursive: true});\n"
          "await workspace.writeFile('out/a/b/x.txt', 'x');\n"
          "await workspace.rename('out/a', 'out/c');\n"
          "const st = await workspace.stat('out/r.md');\n"
          "const dst = await workspace.stat('out/c');\n"
          "return [t, same, b instanceof Uint8Array, b.length, b2[0], "
          "await workspace.readFile('out/r.md'), await workspace.readJson('out/s.json'), "
          "await workspace.readdir('out'), await workspace.exists('out/a'), "
          "await workspace.exists('out/c/b/x.txt'), st.size, st.isFile(), dst.isDirectory(), "
          "await workspace.glob('**/*.txt'), await workspace.glob('/workspace/*.md'), "
          "(await workspace.readdir('.', {withFileTypes: true})).map(d => d.name + "
          "d.isDirectory())];",
          "[\"hello\",\"hello\",true,8,120,\"# report\\nhi\",{\"n\":1},[\"c\",\"r.md\",\"s.json\"],"
          "false,true,11,true,true,[\"out/c/b/x.txt\"],[\"README.md\"],"
          "[\"README.mdfalse\",\"intrue\",\"outtrue\"]]");
    /* the rm family */
    check(r, ws,
          "await workspace.rm('out/c', {recursive: true});\n"
          "await workspace.rm('out/missing', {force: true});\n"
          "return [await workspace.exists('out/c'), await workspace.readdir('out')];",
          "[false,[\"r.md\",\"s.json\"]]");
    al_workspace_free(ws);
    al_runner_free(r);
}

static void test_workspace_node_fs(void **state)
{
    (void)state;
    struct al_runner *r = new_runner();
    struct al_workspace *ws = new_ws(manifest);
    check(r, ws,
          "const fs = await import('node:fs/promises');\n"
          "const d = await fs.readFile('README.md');\n"
          "const t = await fs.readFile('README.md', 'utf8');\n"
          "const t2 = await fs.readFile('README.md', {encoding: 'utf8'});\n"
          "await fs.writeFile('out/n.txt', 'node');\n"
          "await fs.mkdir('out/d');\n"
          "await fs.rmdir('out/d');\n"
          "await fs.unlink('out/n.txt');\n"
          "let code;\n"
          "try { await fs.access('out/n.txt'); } catch (e) { code = e.code; }\n"
          "const alias = await import('fs/promises');\n"
          "return [d instanceof Uint8Array, t, t2, code, (await fs.stat('in')).isDirectory(), "
          "await fs.readdir('in'), alias.default === fs.default, typeof fs.default.readFile];",
          "[true,\"hello\",\"hello\",\"ENOENT\",true,[\"a.csv\"],true,\"function\"]");
    /* a module imports it statically */
    struct al_run_opts *o = al_run_opts_new();
    assert_int_equal(al_run_opts_set_source_type(o, AL_SOURCE_MODULE), AL_OK);
    expect_done(run_opts(r, o,
                         "import { readFile } from 'node:fs/promises';\n"
                         "export default readFile('README.md', 'utf8');",
                         ws),
                "\"hello\"");
    al_run_opts_free(o);
    al_workspace_free(ws);
    al_runner_free(r);
}

/* Every error code, as Node names it, on an Error. */
static void test_workspace_errors(void **state)
{
    (void)state;
    struct al_runner *r = new_runner();
    struct al_workspace *ws = new_ws(manifest);
    check(r, ws,
          "const codes = [];\n"
          "const t = async (f) => { try { await f(); codes.push('none'); }"
          " catch (e) { codes.push(e instanceof Error ? e.code : 'not an Error'); } };\n"
          "await t(() => workspace.readFile('nope.txt'));\n"
          "await t(() => workspace.readFile('in'));\n"
          "await t(() => workspace.readFile('README.md/x'));\n"
          "await t(() => workspace.mkdir('out'));\n"
          "await t(() => workspace.writeFile('in/new.txt', 'x'));\n"
          "await t(() => workspace.writeFile('README.md', 'x'));\n"
          "await t(() => workspace.readFile('../etc/passwd'));\n"
          "await t(() => workspace.readFile('/etc/passwd'));\n"
          "await t(() => workspace.readFile('in/../../x'));\n"
          "await t(() => workspace.readFile('/workspacex/a'));\n"
          "await t(() => workspace.writeFile('out/missing/x.txt', 'x'));\n"
          "await t(() => workspace.rm('out'));\n"
          "await t(() => workspace.rm('README.md'));\n"
          "await t(() => workspace.readFile('a\\u0000b'));\n"
          "await t(() => workspace.writeFile('out/x', 42));\n"
          "await t(() => workspace.readFile('README.md', 'latin1'));\n"
          "return codes;",
          "[\"ENOENT\",\"EISDIR\",\"ENOTDIR\",\"EEXIST\",\"EROFS\",\"EROFS\",\"EACCES\","
          "\"EACCES\",\"EACCES\",\"EACCES\",\"ENOENT\",\"EISDIR\",\"EROFS\","
          "\"ERR_INVALID_ARG_VALUE\",\"ERR_INVALID_ARG_TYPE\",\"ERR_INVALID_ARG_VALUE\"]");
    /* the message reads as Node's */
    check(r, ws, "try { await workspace.readFile('nope.txt'); } catch (e) { return e.message; }",
          "\"ENOENT: no such file or directory, open 'nope.txt'\"");
    al_workspace_free(ws);
    al_runner_free(r);
}

static void test_workspace_limits(void **state)
{
    (void)state;
    struct al_runner *r = new_runner();
    struct al_workspace *ws = new_ws("{\"outputs\": [\"out\"], \"limits\": {\"bytes\": 100, "
                                     "\"files\": 3, \"file_bytes\": 60}}");
    check(r, ws,
          "const codes = [];\n"
          "const t = async (f) => { try { await f(); codes.push('ok'); }"
          " catch (e) { codes.push(e.code); } };\n"
          "await t(() => workspace.writeFile('out/a', 'x'.repeat(61)));\n"
          "await t(() => workspace.writeFile('out/a', 'x'.repeat(60)));\n"
          "await t(() => workspace.appendFile('out/a', 'x'));\n"
          "await t(() => workspace.writeFile('out/b', 'x'.repeat(41)));\n"
          "await t(() => workspace.writeFile('out/b', 'x'.repeat(40)));\n"
          "await t(() => workspace.writeFile('out/c', ''));\n"
          "await t(() => workspace.writeFile('out/d', ''));\n"
          "await t(() => workspace.writeFile('out/a', 'short'));\n"
          /* directories are bounded too: 2 * files + 1024 */
          "await t(() => workspace.mkdir('out/' + 'd/'.repeat(1100), {recursive: true}));\n"
          "await t(() => workspace.mkdir('out/' + 'd/'.repeat(1000), {recursive: true}));\n"
          "return codes;",
          "[\"EFBIG\",\"ok\",\"EFBIG\",\"ENOSPC\",\"ok\",\"ok\",\"ENOSPC\",\"ok\","
          "\"ENOSPC\",\"ok\"]");
    /* a pattern that backtracks exponentially in a naive matcher costs |pattern| x |path| */
    check(r, ws,
          "await workspace.rm('out/d', {recursive: true});\n"
          "await workspace.rm('out/c');\n"
          "await workspace.writeFile('out/' + 'a'.repeat(3000), '');\n"
          "return await workspace.glob('out/' + '*a'.repeat(40) + '*b');",
          "[]");
    al_workspace_free(ws);
    al_runner_free(r);
}

/* Each file operation is a host call: it counts against the host-calls limit. */
static void test_workspace_ops_are_host_calls(void **state)
{
    (void)state;
    struct al_runner *r = new_runner();
    struct al_workspace *ws = new_ws(manifest);
    struct al_run_opts *o = al_run_opts_new();
    assert_int_equal(al_run_opts_set_limit(o, AL_LIMIT_HOST_CALLS, 3), AL_OK);
    struct al_result *res = run_opts(r, o,
                                     "for (let i = 0; i < 4; i++) await workspace.exists('x');\n"
                                     "return 'done';",
                                     ws);
    assert_int_equal(al_result_error_code(res), AL_BRIDGE_LIMIT);
    al_result_free(res);
    al_run_opts_free(o);
    al_workspace_free(ws);
    al_runner_free(r);
}

/* File bytes are bounded by file_bytes, not by the host-call limits (1 MiB / 4 MiB). */
static void test_workspace_large_file(void **state)
{
    (void)state;
    struct al_runner *r = new_runner();
    struct al_workspace *ws = new_ws(manifest);
    check(r, ws,
          "const n = 10 * 1024 * 1024;\n"
          "const b = new Uint8Array(n);\n"
          "for (let i = 0; i < n; i += 4096) b[i] = i % 251;\n"
          "await workspace.writeFile('out/big.bin', b);\n"
          "const back = await workspace.readFileBytes('out/big.bin');\n"
          "let same = back.length === n;\n"
          "for (let i = 0; same && i < n; i += 4096) same = back[i] === i % 251;\n"
          "await workspace.writeFile('out/big.txt', 'a'.repeat(n));\n"
          "const t = await workspace.readFile('out/big.txt');\n"
          "return [same, t.length];",
          "[true,10485760]");
    al_workspace_free(ws);
    al_runner_free(r);
}

static void test_workspace_manifest_errors(void **state)
{
    (void)state;
    static const char *const bad[][2] = {
        { "[]", "not a JSON object" },
        { "{\"version\": 2}", "version" },
        { "{\"root\": \"workspace\"}", "root" },
        { "{\"root\": \"/a/../b\"}", "root" },
        { "{\"extra\": 1}", "unknown member extra" },
        { "{\"entries\": {\"../x\": {\"type\": \"file\"}}}", "entry '../x'" },
        { "{\"entries\": {\"x\": {\"type\": \"link\"}}}", "type 'link'" },
        { "{\"entries\": {\"x\": {\"type\": \"file\", \"content\": 1}}}", "content" },
        { "{\"entries\": {\"x\": {\"type\": \"file\", \"mode\": 1}}}", "unknown member" },
        { "{\"entries\": {\"x\": {\"type\": \"s3_mount\"}}}", "mount" },
        { "{\"entries\": {\"x\": {\"type\": \"s3_mount\", \"mount\": \"m\", \"read_only\": "
          "false}}}",
          "not under an outputs prefix" },
        { "{\"entries\": {\"x\": {\"type\": \"s3_mount\", \"mount\": \"m\", \"prefix\": "
          "\"../a\"}}}",
          "prefix" },
        { "{\"limits\": {\"bytes\": 0}}", "limits.bytes" },
        { "{\"limits\": {\"file_bytes\": 1e12}}", "limits.file_bytes" },
        { "{\"limits\": {\"files\": 1}, \"entries\": {\"a\": {\"type\": \"file\"}, \"b\": "
          "{\"type\": \"file\"}}}",
          "limits" },
        { "{\"outputs\": [\"/etc\"]}", "output" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct al_workspace *ws = NULL;
        struct al_error err;
        enum al_code rc = al_workspace_new(bad[i][0], strlen(bad[i][0]), &ws, &err);
        if (rc != AL_CONFIG_ERROR || !strstr(err.message, bad[i][1])) {
            fail_msg("manifest %s: %s (%s), expected a CONFIG_ERROR naming %s", bad[i][0],
                     al_code_name(rc), rc ? err.message : "", bad[i][1]);
        }
        assert_null(ws);
    }
    /* a mount never set fails the run, naming it */
    struct al_runner *r = new_runner();
    struct al_workspace *ws =
            new_ws("{\"entries\": {\"docs\": {\"type\": \"local_dir\", \"mount\": \"handbook\"}}}");
    struct al_result *res = run_ws(r, "return 1", ws);
    assert_int_equal(al_result_error_code(res), AL_CONFIG_ERROR);
    assert_non_null(strstr(al_result_error_message(res), "handbook"));
    al_result_free(res);
    /* the group name is reserved */
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "workspace.readFile", host_ask, NULL, 0),
                     AL_CONFIG_ERROR);
    al_config_free(c);
    al_workspace_free(ws);
    al_runner_free(r);
}

/* A run without a workspace has no `workspace` and no node:fs/promises. */
static void test_workspace_absent(void **state)
{
    (void)state;
    struct al_runner *r = new_runner();
    check(r, NULL,
          "let m;\n"
          "try { await import('node:fs/promises'); m = 'imported'; } catch (e) { m = e.name; }\n"
          "return [typeof workspace, m];",
          "[\"undefined\",\"ReferenceError\"]");
    al_runner_free(r);
}

/* ------------------------------------------------------------ local mounts */

static char tmpdir[64];

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void make_tree(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/al-ws-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    char p[256];
    snprintf(p, sizeof p, "%s/policies", tmpdir);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/policies/travel.md", tmpdir);
    write_file(p, "no first class");
    snprintf(p, sizeof p, "%s/policies/etc", tmpdir);
    assert_int_equal(symlink("/etc", p), 0);
    snprintf(p, sizeof p, "%s/policies/passwd", tmpdir);
    assert_int_equal(symlink("/etc/passwd", p), 0);
    snprintf(p, sizeof p, "%s/secret.txt", tmpdir);
    write_file(p, "outside the prefix");
}

static void remove_tree(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    assert_int_equal(system(cmd), 0);
}

static void test_workspace_local_mount(void **state)
{
    (void)state;
    make_tree();
    struct al_runner *r = new_runner();
    struct al_workspace *ws =
            new_ws("{\"entries\": {\"docs\": {\"type\": \"local_dir\", \"mount\": \"handbook\", "
                   "\"prefix\": \"policies/\"},"
                   " \"out/back\": {\"type\": \"local_dir\", \"mount\": \"handbook\", \"prefix\": "
                   "\"written\", \"read_only\": false}},"
                   " \"outputs\": [\"out\"]}");
    assert_int_equal(al_workspace_set_mount_local(ws, "nobody", tmpdir), AL_CONFIG_ERROR);
    assert_int_equal(al_workspace_set_mount_local(ws, "handbook", "/nonexistent/dir"),
                     AL_CONFIG_ERROR);
    assert_int_equal(al_workspace_set_mount_local(ws, "handbook", tmpdir), AL_OK);
    check(r, ws,
          "const codes = [];\n"
          "const t = async (f) => { try { codes.push((await f()) ?? null); }"
          " catch (e) { codes.push(e.code); } };\n"
          "await t(() => workspace.readFile('docs/travel.md'));\n"
          "await t(() => workspace.readdir('docs'));\n"
          "await t(() => workspace.readFile('docs/etc/passwd'));\n"
          "await t(() => workspace.readdir('docs/etc'));\n"
          "await t(() => workspace.readFile('docs/passwd'));\n"
          "await t(() => workspace.stat('docs/passwd'));\n"
          "await t(() => workspace.readFile('docs/../secret.txt'));\n"
          "await t(() => workspace.readFile('docs/nope.md'));\n"
          "await t(() => workspace.writeFile('docs/new.md', 'x'));\n"
          "await t(() => workspace.rm('docs/travel.md'));\n"
          "await t(() => workspace.writeFile('out/back/r.md', 'report'));\n"
          "await t(() => workspace.writeFile('out/back/r.md/x', 'below a file'));\n"
          "await t(() => workspace.glob('docs/*.md'));\n"
          "await t(() => workspace.readdir('out'));\n"
          "return codes;",
          "[\"no first class\",[\"etc\",\"passwd\",\"travel.md\"],\"EACCES\",\"EACCES\","
          "\"EACCES\",\"EACCES\",\"ENOENT\",\"ENOENT\",\"EROFS\",\"EROFS\",null,\"ENOTDIR\","
          "[\"docs/travel.md\"],[\"back\"]]");
    /* nothing reached the directory before commit; commit writes it below the prefix */
    char p[256];
    snprintf(p, sizeof p, "%s/written/r.md", tmpdir);
    assert_int_not_equal(access(p, F_OK), 0);
    struct al_error err;
    assert_int_equal(al_workspace_commit(ws, &err), AL_OK);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    char got[32] = "";
    assert_non_null(fgets(got, sizeof got, f));
    fclose(f);
    assert_string_equal(got, "report");
    al_workspace_free(ws);
    al_runner_free(r);
    remove_tree();
}

/* A host directory as the whole workspace: read-only but for the output prefixes, which
 * commit writes back into it (the shape the Python package's Workspace.directory builds). */
static void test_workspace_directory(void **state)
{
    (void)state;
    make_tree();
    struct al_runner *r = new_runner();
    struct al_workspace *ws = new_ws("{\"entries\": {\".\": {\"type\": \"local_dir\", \"mount\": "
                                     "\"dir\", \"read_only\": false}}, \"outputs\": [\"out/\"]}");
    assert_int_equal(al_workspace_set_mount_local(ws, "dir", tmpdir), AL_OK);
    check(r, ws,
          "const codes = [];\n"
          "const t = async (f) => { try { codes.push((await f()) ?? null); }"
          " catch (e) { codes.push(e.code); } };\n"
          "await t(() => workspace.readdir('/workspace'));\n"
          "await t(() => workspace.readFile('policies/travel.md'));\n"
          "await t(() => workspace.readFile('policies/etc/passwd'));\n"
          "await t(() => workspace.writeFile('secret.txt', 'x'));\n"
          "await t(() => workspace.writeFile('policies/new.md', 'x'));\n"
          "await t(() => workspace.writeFile('out/r.md', 'written back'));\n"
          "await t(() => workspace.readdir('.'));\n"
          "await t(() => workspace.glob('**/*.md'));\n"
          "return codes;",
          "[[\"policies\",\"secret.txt\"],\"no first class\",\"EACCES\",\"EROFS\","
          "\"EROFS\",null,[\"out\",\"policies\",\"secret.txt\"],"
          "[\"out/r.md\",\"policies/travel.md\"]]");
    struct al_error err;
    assert_int_equal(al_workspace_commit(ws, &err), AL_OK);
    char p[256];
    snprintf(p, sizeof p, "%s/out/r.md", tmpdir);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    char got[32] = "";
    assert_non_null(fgets(got, sizeof got, f));
    fclose(f);
    assert_string_equal(got, "written back");
    al_workspace_free(ws);
    al_runner_free(r);
    remove_tree();
}

/* A FIFO (or a device) where commit would write a file is never opened: the commit fails and
 * nothing reaches it. (The test holds the FIFO open for reading, so a write that opened it
 * would not block but land.) */
static void test_workspace_commit_fifo(void **state)
{
    (void)state;
    make_tree();
    struct al_runner *r = new_runner();
    char p[256];
    snprintf(p, sizeof p, "%s/out", tmpdir);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/out/r.md", tmpdir);
    assert_int_equal(mkfifo(p, 0644), 0);
    int rfd = open(p, O_RDONLY | O_NONBLOCK);
    assert_true(rfd >= 0);
    struct al_workspace *ws = new_ws("{\"entries\": {\".\": {\"type\": \"local_dir\", \"mount\": "
                                     "\"dir\", \"read_only\": false}}, \"outputs\": [\"out/\"]}");
    assert_int_equal(al_workspace_set_mount_local(ws, "dir", tmpdir), AL_OK);
    check(r, ws, "await workspace.writeFile('out/r.md', 'into a fifo'); return 1;", "1");
    struct al_error err;
    assert_int_not_equal(al_workspace_commit(ws, &err), AL_OK);
    char got[32];
    assert_true(read(rfd, got, sizeof got) <= 0);
    close(rfd);
    al_workspace_free(ws);
    al_runner_free(r);
    remove_tree();
}

/* ------------------------------------------------------------ application mounts */

struct mem_mount {
    int writes;
    int removes;
    int fail_at; /* the write that fails (1-based), 0: none */
};

static enum al_mount_status mem_stat(void *ud, const char *k, uint64_t *size, int *dir, char *err,
                                     size_t errlen)
{
    (void)ud;
    snprintf(err, errlen, "%s", ""); /* no message: the status says it */
    if (strcmp(k, "2026/") == 0) {
        *dir = 1;
        *size = 0;
        return AL_MOUNT_OK;
    }
    if (strcmp(k, "2026/q1.csv") == 0) {
        *dir = 0;
        *size = 4;
        return AL_MOUNT_OK;
    }
    if (strcmp(k, "2026/broken.csv") == 0) {
        snprintf(err, errlen, "connection reset");
        return AL_MOUNT_ERROR;
    }
    return AL_MOUNT_NOT_FOUND;
}

static enum al_mount_status mem_read(void *ud, const char *k, uint64_t off, uint64_t len,
                                     char **ret, size_t *ret_len, char *err, size_t errlen)
{
    (void)ud;
    snprintf(err, errlen, "%s", ""); /* no message: the status says it */
    (void)off;
    (void)len;
    if (strcmp(k, "2026/q1.csv") != 0) {
        return AL_MOUNT_NOT_FOUND;
    }
    *ret = strdup("a,b\n");
    *ret_len = 4;
    return AL_MOUNT_OK;
}

static enum al_mount_status mem_list(void *ud, const char *k, al_mount_list_fn *each, void *lud,
                                     char *err, size_t errlen)
{
    (void)ud;
    snprintf(err, errlen, "%s", ""); /* no message: the status says it */
    if (strcmp(k, "2026/") != 0) {
        return AL_MOUNT_NOT_FOUND;
    }
    struct al_mount_entry e = { "q1.csv", 4, 0 };
    each(&e, lud);
    struct al_mount_entry b = { "broken.csv", 4, 0 };
    each(&b, lud);
    return AL_MOUNT_OK;
}

static enum al_mount_status mem_write(void *ud, const char *k, const char *data, size_t len,
                                      char *err, size_t errlen)
{
    (void)k;
    (void)data;
    (void)len;
    struct mem_mount *m = ud;
    if (++m->writes == m->fail_at) {
        snprintf(err, errlen, "bucket full");
        return AL_MOUNT_ERROR;
    }
    return AL_MOUNT_OK;
}

static enum al_mount_status mem_remove(void *ud, const char *k, char *err, size_t errlen)
{
    (void)k;
    snprintf(err, errlen, "%s", ""); /* no message: the status says it */
    ((struct mem_mount *)ud)->removes++;
    return AL_MOUNT_OK;
}

static const struct al_mount_ops mem_ops = {
    AL_MOUNT_OPS_VERSION, mem_stat, mem_read, mem_list, mem_write, mem_remove
};

struct seen {
    char ops[1024];
    int outputs;
    char keys[256];
};

static void observe(const struct al_workspace_op *op, void *ud)
{
    struct seen *s = ud;
    size_t n = strlen(s->ops);
    snprintf(s->ops + n, sizeof s->ops - n, "%s %s %llu %s;", op->op, op->path,
             (unsigned long long)op->size, op->error ? op->error : (op->sha256 ? "hash" : "-"));
}

static void each_output(const struct al_workspace_file *f, void *ud)
{
    struct seen *s = ud;
    s->outputs++;
    size_t n = strlen(s->keys);
    snprintf(s->keys + n, sizeof s->keys - n, "%s=%s@%s;", f->path, f->mount ? f->mount : "-",
             f->key ? f->key : "-");
}

static void test_workspace_app_mount(void **state)
{
    (void)state;
    struct al_runner *r = new_runner();
    static const char m[] =
            "{\"entries\": {\"lake\": {\"type\": \"s3_mount\", \"mount\": \"finance-lake\", "
            "\"prefix\": \"2026/\"},"
            " \"out/export\": {\"type\": \"s3_mount\", \"mount\": \"finance-lake\", \"prefix\": "
            "\"reports/\", \"read_only\": false}},"
            " \"outputs\": [\"out/\"]}";
    for (int fail_at = 0; fail_at <= 2; fail_at += 2) {
        struct al_workspace *ws = new_ws(m);
        struct mem_mount mm = { .fail_at = fail_at };
        struct seen s = { 0 };
        assert_int_equal(al_workspace_set_mount(ws, "finance-lake", &mem_ops, &mm), AL_OK);
        al_workspace_set_observer(ws, observe, &s);
        check(r, ws,
              "let e;\n"
              "try { await workspace.readFile('lake/broken.csv'); } catch (x) { e = x.message; }\n"
              "await workspace.writeFile('out/export/a.md', 'A');\n"
              "await workspace.writeFile('out/export/sub/b.md', 'B');\n"
              "await workspace.writeFile('out/local.md', 'L');\n"
              "return [await workspace.readFile('lake/q1.csv'), await workspace.readdir('lake'), "
              "e, await workspace.readFile('out/export/a.md')];",
              "[\"a,b\\n\",[\"broken.csv\",\"q1.csv\"],\"EIO: i/o error, open "
              "'lake/broken.csv': mount finance-lake: connection reset\",\"A\"]");
        assert_string_equal(s.ops, "readFile lake/broken.csv 0 EIO;writeFile out/export/a.md 1 "
                                   "hash;writeFile out/export/sub/b.md 1 hash;writeFile "
                                   "out/local.md 1 hash;readFile lake/q1.csv 4 hash;readdir lake "
                                   "0 -;readFile out/export/a.md 1 hash;");
        al_workspace_outputs(ws, each_output, &s);
        assert_int_equal(s.outputs, 3);
        assert_string_equal(s.keys, "out/export/a.md=finance-lake@reports/a.md;"
                                    "out/export/sub/b.md=finance-lake@reports/sub/b.md;"
                                    "out/local.md=-@-;");
        struct al_error err;
        enum al_code rc = al_workspace_commit(ws, &err);
        if (fail_at == 0) {
            assert_int_equal(rc, AL_OK);
            assert_int_equal(mm.writes, 2);
            assert_int_equal(mm.removes, 0);
        } else {
            /* all or nothing: the first write is removed again; the error names mount and path */
            assert_int_not_equal(rc, AL_OK);
            assert_non_null(strstr(err.message, "finance-lake"));
            assert_non_null(strstr(err.message, "out/export/sub/b.md"));
            assert_int_equal(mm.removes, 1);
        }
        /* a tar holds the workspace's own files, never the mounts' */
        char *tar = NULL;
        size_t tlen = 0;
        assert_int_equal(al_workspace_tar(ws, &tar, &tlen, &err), AL_OK);
        assert_null(memmem(tar, tlen, "a.md", 4));
        assert_non_null(memmem(tar, tlen, "out/local.md", 12));
        free(tar);
        al_workspace_free(ws);
    }
    al_runner_free(r);
}

/* A directory holding a mount entry cannot be renamed: the entry would move in the tree but not
 * in the manifest, so the files written into it would be committed under keys cut at the old
 * entry's length (outside the mount's prefix, or a read past the path). EROFS, as for rm. */
static void test_workspace_rename_holding_mount(void **state)
{
    (void)state;
    struct al_runner *r = new_runner();
    static const char m[] =
            "{\"entries\": {\"out/a-rather-long-directory/export\": {\"type\": \"s3_mount\", "
            "\"mount\": \"finance-lake\", \"prefix\": \"reports/2026/quarterly/\", "
            "\"read_only\": false}},"
            " \"outputs\": [\"out/\"]}";
    struct al_workspace *ws = new_ws(m);
    struct mem_mount mm = { 0 };
    assert_int_equal(al_workspace_set_mount(ws, "finance-lake", &mem_ops, &mm), AL_OK);
    check(r, ws,
          "await workspace.writeFile('out/a-rather-long-directory/export/r.md', 'R');\n"
          "const codes = [];\n"
          "for (const to of ['out/b', 'out/a-rather-long-directory-2', 'out/x/y']) {\n"
          "  try { await workspace.rename('out/a-rather-long-directory', to); codes.push('ok'); }\n"
          "  catch (e) { codes.push(e.code); }\n"
          "}\n"
          "try { await workspace.rename('out', 'out2'); codes.push('ok'); }"
          " catch (e) { codes.push(e.code); }\n"
          "return [codes, await workspace.readdir('out')];",
          "[[\"EROFS\",\"EROFS\",\"EROFS\",\"EROFS\"],[\"a-rather-long-directory\"]]");
    struct seen s = { 0 };
    al_workspace_outputs(ws, each_output, &s);
    assert_string_equal(s.keys, "out/a-rather-long-directory/export/r.md=finance-lake@"
                                "reports/2026/quarterly/r.md;");
    al_workspace_free(ws);
    al_runner_free(r);
}

/* On the runner's event thread (al_run_start), mount operations run on the workspace's own
 * thread and answer from there. */
static void test_workspace_async_run(void **state)
{
    (void)state;
    struct al_runner *r = new_runner();
    struct al_workspace *ws =
            new_ws("{\"entries\": {\"lake\": {\"type\": \"s3_mount\", \"mount\": \"finance-lake\", "
                   "\"prefix\": \"2026/\"}}, \"outputs\": [\"out\"]}");
    struct mem_mount mm = { 0 };
    assert_int_equal(al_workspace_set_mount(ws, "finance-lake", &mem_ops, &mm), AL_OK);
    struct al_run_opts *o = al_run_opts_new();
    static const char src[] = "const all = await Promise.all([workspace.readFile('lake/q1.csv'),\n"
                              "  workspace.writeFile('out/a', 'a'), workspace.readdir('lake')]);\n"
                              "return [all[0], all[2], await workspace.readFile('out/a')];";
    assert_int_equal(al_run_opts_set_source(o, src, strlen(src), NULL), AL_OK);
    assert_int_equal(al_run_opts_set_workspace(o, ws), AL_OK);
    struct al_run *run = NULL;
    struct al_error err;
    assert_int_equal(al_run_start(r, o, NULL, NULL, &run, &err), AL_OK);
    al_run_opts_free(o);
    struct al_result *res = NULL;
    assert_int_equal(al_run_wait(run, &res, &err), AL_OK);
    al_run_release(run);
    expect_done(res, "[\"a,b\\n\",[\"broken.csv\",\"q1.csv\"],\"a\"]");
    al_workspace_free(ws);
    al_runner_free(r);
}

/* ------------------------------------------------------------ replay */

struct journal {
    struct al_journal_entry e[64];
    char *payload[64];
    char *fn[64];
    size_t n;
};

static enum al_journal_verdict keep(const struct al_journal_entry *e, void *ud)
{
    struct journal *j = ud;
    j->e[j->n] = *e;
    j->fn[j->n] = strdup(e->function);
    j->payload[j->n] = malloc(e->len + 1);
    memcpy(j->payload[j->n], e->payload, e->len);
    j->e[j->n].function = j->fn[j->n];
    j->e[j->n].payload = j->payload[j->n];
    j->n++;
    return AL_JOURNAL_DELIVER;
}

static void journal_free(struct journal *j)
{
    for (size_t i = 0; i < j->n; i++) {
        free(j->payload[i]);
        free(j->fn[i]);
    }
    free(j);
}

static const char replay_src[] =
        "await workspace.writeFile('out/a.txt', 'first');\n"
        "await workspace.appendFile('out/a.txt', '+more');\n"
        "await workspace.mkdir('out/d');\n"
        "await workspace.rename('out/a.txt', 'out/d/b.txt');\n"
        "const n = await approve.ask(1);\n"
        "return [n, await workspace.readFile('out/d/b.txt'), await workspace.readdir('out')];";

/* A run restarted from its journal gets a fresh workspace built the same way: the writes
 * answered from the journal are applied to it again, so what the guest reads after them is
 * what it wrote. */
static void test_workspace_journal_replay(void **state)
{
    (void)state;
    struct al_runner *r = new_runner();
    struct journal *j = calloc(1, sizeof *j);
    struct al_workspace *ws = new_ws(manifest);
    struct al_run_opts *o = al_run_opts_new();
    al_run_opts_set_journal(o, keep, j);
    struct al_result *res = run_opts(r, o, replay_src, ws);
    assert_int_equal(al_result_status(res), AL_STATUS_INTERRUPTED);
    al_result_free(res);
    al_run_opts_free(o);
    al_workspace_free(ws);
    assert_int_equal(j->n, 4); /* the four writes */

    /* a journal of the writes, then the rest: the read sees them */
    struct al_workspace *fresh = new_ws(manifest);
    o = al_run_opts_new();
    for (size_t i = 0; i < j->n; i++) {
        assert_int_equal(al_run_opts_add_journal_entry(o, &j->e[i]), AL_OK);
    }
    static const char after[] = "await workspace.writeFile('out/a.txt', 'first');\n"
                                "await workspace.appendFile('out/a.txt', '+more');\n"
                                "await workspace.mkdir('out/d');\n"
                                "await workspace.rename('out/a.txt', 'out/d/b.txt');\n"
                                "return [await workspace.readFile('out/d/b.txt'), "
                                "await workspace.readdir('out')];";
    expect_done(run_opts(r, o, after, fresh), "[\"first+more\",[\"d\"]]");
    al_run_opts_free(o);
    al_workspace_free(fresh);
    journal_free(j);
    al_runner_free(r);
}

/* The same across a continuation: the resumed run's writes come from the ledger. */
static void test_workspace_resume(void **state)
{
    (void)state;
    struct al_runner *r = new_runner();
    struct al_workspace *ws = new_ws(manifest);
    struct al_result *first = run_ws(r, replay_src, ws);
    assert_int_equal(al_result_status(first), AL_STATUS_INTERRUPTED);
    al_workspace_free(ws);
    size_t clen;
    const char *cont = al_result_continuation(first, &clen);
    struct al_interruption in;
    assert_int_equal(al_result_interruption(first, 0, &in), 0);

    struct al_workspace *fresh = new_ws(manifest);
    struct al_run_opts *o = al_run_opts_new();
    assert_int_equal(al_run_opts_set_resume(o, cont, clen), AL_OK);
    assert_int_equal(al_run_opts_add_resolution(o, in.id, "7", 1), AL_OK);
    expect_done(run_opts(r, o, replay_src, fresh), "[7,\"first+more\",[\"d\"]]");
    /* the fresh workspace holds the replayed writes for outputs and tar */
    struct seen s = { 0 };
    al_workspace_outputs(fresh, each_output, &s);
    assert_string_equal(s.keys, "out/d/b.txt=-@-;");
    al_run_opts_free(o);
    al_workspace_free(fresh);
    al_result_free(first);
    al_runner_free(r);
}

/* A bucket of one object, reports/log.txt, whose bytes and health a test changes between runs. */
struct flaky {
    const char *log; /* the object's bytes */
    int broken;      /* every call fails */
};

static enum al_mount_status flaky_stat(void *ud, const char *k, uint64_t *size, int *dir, char *err,
                                       size_t errlen)
{
    struct flaky *f = ud;
    if (f->broken) {
        snprintf(err, errlen, "connection reset");
        return AL_MOUNT_ERROR;
    }
    if (strcmp(k, "reports/log.txt") != 0) {
        return AL_MOUNT_NOT_FOUND;
    }
    *dir = 0;
    *size = strlen(f->log);
    return AL_MOUNT_OK;
}

static enum al_mount_status flaky_read(void *ud, const char *k, uint64_t off, uint64_t len,
                                       char **ret, size_t *ret_len, char *err, size_t errlen)
{
    struct flaky *f = ud;
    (void)off;
    (void)len;
    if (f->broken) {
        snprintf(err, errlen, "connection reset");
        return AL_MOUNT_ERROR;
    }
    if (strcmp(k, "reports/log.txt") != 0) {
        return AL_MOUNT_NOT_FOUND;
    }
    *ret = strdup(f->log);
    *ret_len = strlen(f->log);
    return AL_MOUNT_OK;
}

static enum al_mount_status flaky_list(void *ud, const char *k, al_mount_list_fn *each, void *lud,
                                       char *err, size_t errlen)
{
    (void)ud;
    (void)k;
    (void)each;
    (void)lud;
    snprintf(err, errlen, "not listed");
    return AL_MOUNT_ERROR;
}

static const struct al_mount_ops flaky_ops = { AL_MOUNT_OPS_VERSION, flaky_stat, flaky_read,
                                               flaky_list,           NULL,       NULL };

static const char flaky_manifest[] =
        "{\"entries\": {\"out/export\": {\"type\": \"s3_mount\", \"mount\": \"lake\", "
        "\"prefix\": \"reports/\", \"read_only\": false}}, \"outputs\": [\"out/\"]}";

/* A write that failed in the first run (its mount was down) changed nothing; replayed from the
 * journal against a mount that answers now, it still changes nothing: the replayed workspace is
 * the one the first run left, and its outputs are what the guest saw. */
static void test_workspace_replay_failed_write(void **state)
{
    (void)state;
    struct al_runner *r = new_runner();
    struct journal *j = calloc(1, sizeof *j);
    struct flaky f = { .log = "old", .broken = 1 };
    struct al_workspace *ws = new_ws(flaky_manifest);
    assert_int_equal(al_workspace_set_mount(ws, "lake", &flaky_ops, &f), AL_OK);
    struct al_run_opts *o = al_run_opts_new();
    al_run_opts_set_journal(o, keep, j);
    struct al_result *res = run_opts(r, o,
                                     "let e = 'none';\n"
                                     "try { await workspace.appendFile('out/export/log.txt', "
                                     "'+x'); } catch (x) { e = x.code; }\n"
                                     "await approve.ask(1);\n"
                                     "return e;",
                                     ws);
    assert_int_equal(al_result_status(res), AL_STATUS_INTERRUPTED);
    al_result_free(res);
    al_run_opts_free(o);
    al_workspace_free(ws);

    f.broken = 0;
    struct al_workspace *fresh = new_ws(flaky_manifest);
    assert_int_equal(al_workspace_set_mount(fresh, "lake", &flaky_ops, &f), AL_OK);
    o = al_run_opts_new();
    for (size_t i = 0; i < j->n; i++) {
        assert_int_equal(al_run_opts_add_journal_entry(o, &j->e[i]), AL_OK);
    }
    expect_done(run_opts(r, o,
                         "let e = 'none';\n"
                         "try { await workspace.appendFile('out/export/log.txt', '+x'); }"
                         " catch (x) { e = x.code; }\n"
                         "return e;",
                         fresh),
                "\"EIO\"");
    struct seen s = { 0 };
    al_workspace_outputs(fresh, each_output, &s);
    assert_string_equal(s.keys, "");
    al_run_opts_free(o);
    al_workspace_free(fresh);
    journal_free(j);
    al_runner_free(r);
}

/* A bucket of a few objects held in memory, whose n-th write fails when asked. */
struct kv {
    char *key[8];
    char *val[8];
    int n;
    int writes;
    int fail_at; /* the write that fails (1-based), 0: none */
};

static int kv_find(const struct kv *b, const char *k)
{
    for (int i = 0; i < b->n; i++) {
        if (b->key[i] && strcmp(b->key[i], k) == 0) {
            return i;
        }
    }
    return -1;
}

static enum al_mount_status kv_stat(void *ud, const char *k, uint64_t *size, int *dir, char *err,
                                    size_t errlen)
{
    snprintf(err, errlen, "%s", ""); /* no message: the status says it */
    int i = kv_find(ud, k);
    if (i < 0) {
        return AL_MOUNT_NOT_FOUND;
    }
    *dir = 0;
    *size = strlen(((struct kv *)ud)->val[i]);
    return AL_MOUNT_OK;
}

static enum al_mount_status kv_read(void *ud, const char *k, uint64_t off, uint64_t len, char **ret,
                                    size_t *ret_len, char *err, size_t errlen)
{
    (void)off;
    (void)len;
    snprintf(err, errlen, "%s", ""); /* no message: the status says it */
    int i = kv_find(ud, k);
    if (i < 0) {
        return AL_MOUNT_NOT_FOUND;
    }
    *ret = strdup(((struct kv *)ud)->val[i]);
    *ret_len = strlen(*ret);
    return AL_MOUNT_OK;
}

static enum al_mount_status kv_list(void *ud, const char *k, al_mount_list_fn *each, void *lud,
                                    char *err, size_t errlen)
{
    (void)ud;
    (void)k;
    (void)each;
    (void)lud;
    snprintf(err, errlen, "%s", ""); /* no message: the status says it */
    return AL_MOUNT_NOT_FOUND;
}

static enum al_mount_status kv_write(void *ud, const char *k, const char *data, size_t len,
                                     char *err, size_t errlen)
{
    struct kv *b = ud;
    if (++b->writes == b->fail_at) {
        snprintf(err, errlen, "bucket full");
        return AL_MOUNT_ERROR;
    }
    int i = kv_find(b, k);
    if (i < 0) {
        i = b->n++;
        b->key[i] = strdup(k);
    } else {
        free(b->val[i]);
    }
    b->val[i] = strndup(data, len);
    return AL_MOUNT_OK;
}

static enum al_mount_status kv_remove(void *ud, const char *k, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s", ""); /* no message: the status says it */
    struct kv *b = ud;
    int i = kv_find(b, k);
    if (i >= 0) {
        free(b->key[i]);
        free(b->val[i]);
        b->key[i] = NULL;
        b->val[i] = NULL;
    }
    return AL_MOUNT_OK;
}

static const struct al_mount_ops kv_ops = {
    AL_MOUNT_OPS_VERSION, kv_stat, kv_read, kv_list, kv_write, kv_remove
};

/* A bucket holding last year's reports/a.md, whose write number fail_at fails (0: none). */
static void kv_seed(struct kv *b, int fail_at)
{
    memset(b, 0, sizeof *b);
    b->fail_at = fail_at;
    b->key[0] = strdup("reports/a.md");
    b->val[0] = strdup("last year's");
    b->n = 1;
}

static void kv_free(struct kv *b)
{
    for (int i = 0; i < b->n; i++) {
        free(b->key[i]);
        free(b->val[i]);
    }
}

/* All or nothing: a commit that fails midway leaves the bucket as it was - an object it had
 * replaced before the failure is put back, not deleted. */
static void test_workspace_commit_restores(void **state)
{
    (void)state;
    struct al_runner *r = new_runner();
    struct al_workspace *ws = new_ws(flaky_manifest);
    struct kv b;
    kv_seed(&b, 3);
    assert_int_equal(al_workspace_set_mount(ws, "lake", &kv_ops, &b), AL_OK);
    check(r, ws,
          "await workspace.writeFile('out/export/a.md', 'A');\n"
          "await workspace.writeFile('out/export/b.md', 'B');\n"
          "await workspace.writeFile('out/export/c.md', 'C');\n"
          "return 1;",
          "1");
    struct al_error err;
    assert_int_not_equal(al_workspace_commit(ws, &err), AL_OK);
    assert_non_null(strstr(err.message, "out/export/c.md"));
    int a = kv_find(&b, "reports/a.md");
    assert_true(a >= 0);
    assert_string_equal(b.val[a], "last year's");
    assert_int_equal(kv_find(&b, "reports/b.md"), -1);
    al_workspace_free(ws);
    kv_free(&b);
    al_runner_free(r);
}

/* A commit that succeeded and is then rolled back (its run did not count after all): the
 * object it replaced is put back, the ones it made are removed; a second rollback does nothing. */
static void test_workspace_rollback(void **state)
{
    (void)state;
    struct al_runner *r = new_runner();
    struct al_workspace *ws = new_ws(flaky_manifest);
    struct kv b;
    kv_seed(&b, 0);
    assert_int_equal(al_workspace_set_mount(ws, "lake", &kv_ops, &b), AL_OK);
    check(r, ws,
          "await workspace.writeFile('out/export/a.md', 'A');\n"
          "await workspace.writeFile('out/export/b.md', 'B');\n"
          "return 1;",
          "1");
    struct al_error err;
    assert_int_equal(al_workspace_commit(ws, &err), AL_OK);
    assert_string_equal(b.val[kv_find(&b, "reports/a.md")], "A");
    assert_string_equal(b.val[kv_find(&b, "reports/b.md")], "B");
    assert_int_equal(al_workspace_rollback(ws, &err), AL_OK);
    int a = kv_find(&b, "reports/a.md");
    assert_true(a >= 0);
    assert_string_equal(b.val[a], "last year's");
    assert_int_equal(kv_find(&b, "reports/b.md"), -1);
    int writes = b.writes;
    assert_int_equal(al_workspace_rollback(ws, &err), AL_OK);
    assert_int_equal(b.writes, writes);
    assert_int_equal(al_workspace_rollback(NULL, &err), AL_CONFIG_ERROR);
    al_workspace_free(ws);
    kv_free(&b);
    al_runner_free(r);
}

struct append_bytes {
    char bytes[64];
};

static void each_output_bytes(const struct al_workspace_file *f, void *ud)
{
    struct append_bytes *ab = ud;
    snprintf(ab->bytes, sizeof ab->bytes, "%.*s", (int)f->len, f->data);
}

/* appendFile onto a mount's file reads it first; replayed, it appends to what the first run
 * read (recorded with its answer), never to what the mount holds now - nor fails when the
 * mount cannot be reached (airlockd replays with no mount at all). */
static void test_workspace_replay_append_base(void **state)
{
    (void)state;
    struct al_runner *r = new_runner();
    struct journal *j = calloc(1, sizeof *j);
    struct flaky f = { .log = "old" };
    struct al_workspace *ws = new_ws(flaky_manifest);
    assert_int_equal(al_workspace_set_mount(ws, "lake", &flaky_ops, &f), AL_OK);
    struct al_run_opts *o = al_run_opts_new();
    al_run_opts_set_journal(o, keep, j);
    struct al_result *res = run_opts(r, o,
                                     "const a = await workspace.appendFile('out/export/log.txt', "
                                     "'+x');\n"
                                     "await approve.ask(1);\n"
                                     "return a;",
                                     ws);
    assert_int_equal(al_result_status(res), AL_STATUS_INTERRUPTED);
    al_result_free(res);
    al_run_opts_free(o);
    struct seen first = { 0 };
    al_workspace_outputs(ws, each_output, &first);
    al_workspace_free(ws);

    for (int broken = 0; broken <= 1; broken++) {
        f.log = "changed since";
        f.broken = broken;
        struct al_workspace *fresh = new_ws(flaky_manifest);
        assert_int_equal(al_workspace_set_mount(fresh, "lake", &flaky_ops, &f), AL_OK);
        o = al_run_opts_new();
        for (size_t i = 0; i < j->n; i++) {
            assert_int_equal(al_run_opts_add_journal_entry(o, &j->e[i]), AL_OK);
        }
        /* the answer the guest gets is undefined, first and replayed */
        expect_done(run_opts(r, o,
                             "return [await workspace.appendFile('out/export/log.txt', '+x')];",
                             fresh),
                    "[{\"$type\":\"undefined\"}]");
        struct seen again = { 0 };
        al_workspace_outputs(fresh, each_output, &again);
        assert_string_equal(again.keys, first.keys);
        /* the bytes too: what commit would write is what the first run left */
        struct append_bytes ab = { "" };
        al_workspace_outputs(fresh, each_output_bytes, &ab);
        assert_string_equal(ab.bytes, "old+x");
        al_run_opts_free(o);
        al_workspace_free(fresh);
    }
    journal_free(j);
    al_runner_free(r);
}

/* A mount whose reads block until the test lets them go. */
struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int entered;
    int open;
};

/* NOLINTNEXTLINE(readability-non-const-parameter): the out-parameters of al_mount_ops.stat */
static enum al_mount_status gate_stat(void *ud, const char *k, uint64_t *size, int *dir, char *err,
                                      size_t errlen)
{
    struct gate *g = ud;
    (void)k;
    pthread_mutex_lock(&g->mu);
    g->entered++;
    pthread_cond_broadcast(&g->cv);
    while (!g->open) {
        pthread_cond_wait(&g->cv, &g->mu);
    }
    pthread_mutex_unlock(&g->mu);
    (void)size;
    (void)dir;
    snprintf(err, errlen, "connection reset");
    return AL_MOUNT_ERROR;
}

/* NOLINTBEGIN(readability-non-const-parameter): the out-parameters of al_mount_ops.read */
static enum al_mount_status gate_read(void *ud, const char *k, uint64_t off, uint64_t len,
                                      char **ret, size_t *ret_len, char *err, size_t errlen)
{
    (void)ud;
    (void)k;
    (void)off;
    (void)len;
    (void)ret;
    (void)ret_len;
    snprintf(err, errlen, "unreachable");
    return AL_MOUNT_ERROR;
}
/* NOLINTEND(readability-non-const-parameter) */

static const struct al_mount_ops gate_ops = { AL_MOUNT_OPS_VERSION, gate_stat, gate_read,
                                              flaky_list,           NULL,      NULL };

/* A run whose guest waits on a mount that never answers ends at its deadline, and when
 * cancelled: the mount's thread holds neither. */
static void test_workspace_blocked_mount(void **state)
{
    (void)state;
    struct al_runner *r = new_runner();
    struct gate g = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
    static const char src[] = "await workspace.readFile('out/export/a.txt'); return 'read';";
    struct al_workspace *ws = new_ws(flaky_manifest);
    assert_int_equal(al_workspace_set_mount(ws, "lake", &gate_ops, &g), AL_OK);
    struct al_run_opts *o = al_run_opts_new();
    assert_int_equal(al_run_opts_set_limit(o, AL_LIMIT_TIMEOUT_MS, 300), AL_OK);
    struct al_result *res = run_opts(r, o, src, ws);
    assert_int_equal(al_result_error_code(res), AL_TIMEOUT);
    al_result_free(res);
    al_run_opts_free(o);

    /* cancelled while the read is stuck (another workspace: this one's thread is still in the
     * first run's read) */
    struct al_workspace *ws2 = new_ws(flaky_manifest);
    assert_int_equal(al_workspace_set_mount(ws2, "lake", &gate_ops, &g), AL_OK);
    o = al_run_opts_new();
    assert_int_equal(al_run_opts_set_source(o, src, strlen(src), NULL), AL_OK);
    assert_int_equal(al_run_opts_set_workspace(o, ws2), AL_OK);
    struct al_run *run = NULL;
    struct al_error err;
    assert_int_equal(al_run_start(r, o, NULL, NULL, &run, &err), AL_OK);
    al_run_opts_free(o);
    pthread_mutex_lock(&g.mu);
    while (g.entered < 2) {
        pthread_cond_wait(&g.cv, &g.mu);
    }
    pthread_mutex_unlock(&g.mu);
    al_run_cancel(run);
    assert_int_equal(al_run_wait(run, &res, &err), AL_OK);
    al_run_release(run);
    assert_int_equal(al_result_error_code(res), AL_ABORTED);
    al_result_free(res);

    pthread_mutex_lock(&g.mu);
    g.open = 1;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    al_workspace_free(ws);
    al_workspace_free(ws2);
    al_runner_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_workspace_guest_api),
        cmocka_unit_test(test_workspace_node_fs),
        cmocka_unit_test(test_workspace_errors),
        cmocka_unit_test(test_workspace_limits),
        cmocka_unit_test(test_workspace_ops_are_host_calls),
        cmocka_unit_test(test_workspace_large_file),
        cmocka_unit_test(test_workspace_manifest_errors),
        cmocka_unit_test(test_workspace_absent),
        cmocka_unit_test(test_workspace_local_mount),
        cmocka_unit_test(test_workspace_directory),
        cmocka_unit_test(test_workspace_commit_fifo),
        cmocka_unit_test(test_workspace_app_mount),
        cmocka_unit_test(test_workspace_rename_holding_mount),
        cmocka_unit_test(test_workspace_async_run),
        cmocka_unit_test(test_workspace_journal_replay),
        cmocka_unit_test(test_workspace_resume),
        cmocka_unit_test(test_workspace_replay_failed_write),
        cmocka_unit_test(test_workspace_commit_restores),
        cmocka_unit_test(test_workspace_rollback),
        cmocka_unit_test(test_workspace_replay_append_base),
        cmocka_unit_test(test_workspace_blocked_mount),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
