/*
 * workspace_ops.c - the guest's file operations (docs/workspace.md): the host calls
 * "workspace.<op>" that the worker's `workspace` and node:fs/promises wrap.
 *
 * Each operation parses its argument array, normalizes its paths (ws_normalize: a path out of
 * the root answers EACCES before anything is looked up), checks permissions - writes only under
 * an outputs prefix and never into a read-only mount (EROFS) - and checks sizes and counts
 * against the workspace's limits before anything changes (ENOSPC, EFBIG), so a failed
 * operation leaves the tree as it was. Its outcome is an answer (boundary JSON) or a Node-style
 * error "CODE: message", which the guest's wrapper (worker/workspace.js) turns into an Error
 * with `code`. Operations that touch no mount run on the thread driving the run; a workspace
 * with mounts runs all of them, in order, on its own thread (workspace_mount.c), since backends
 * may block.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "continuation.h"
#include "hex.h"
#include "internal.h"
#include "json.h"
#include "utf8.h"
#include "workspace.h"

#define WS_GLOB_MAX_WALK 100000 /* entries a glob looks at in mounts */
#define WS_DEPTH_MAX     256    /* directory levels a glob walks into a mount */
/* bytes of one answer: under the worker's frame cap (128 MiB) with room to spare, and above a
 * file of the largest file_bytes as text (a JSON string of 16 MiB of control characters) */
#define WS_ANSWER_MAX (100u << 20)

enum ws_op {
    OP_READ_FILE = 0,
    OP_WRITE_FILE,
    OP_APPEND_FILE,
    OP_READDIR,
    OP_STAT,
    OP_EXISTS,
    OP_MKDIR,
    OP_RM,
    OP_RENAME,
    OP_GLOB,
};

/* Writable because struct host_entry's name is (the run's table borrows these). */
char ws_host_names[WS_OPS_COUNT][WS_HOST_NAME_MAX] = {
    "workspace.readFile", "workspace.writeFile", "workspace.appendFile", "workspace.readdir",
    "workspace.stat",     "workspace.exists",    "workspace.mkdir",      "workspace.rm",
    "workspace.rename",   "workspace.glob",
};

const char *ws_op_name(int op)
{
    return ws_host_names[op] + 10; /* after "workspace." */
}

int ws_op_mutates(int op)
{
    return op == OP_WRITE_FILE || op == OP_APPEND_FILE || op == OP_MKDIR || op == OP_RM ||
           op == OP_RENAME;
}

int ws_op_of(const char *name)
{
    if (strncmp(name, "workspace.", 10) != 0) {
        return -1;
    }
    for (int i = 0; i < WS_OPS_COUNT; i++) {
        if (strcmp(name, ws_host_names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

/* Node's texts for its codes. */
static const char *code_text(const char *code)
{
    static const char *const texts[][2] = {
        { "ENOENT", "no such file or directory" }, { "EISDIR", "illegal operation on a directory" },
        { "ENOTDIR", "not a directory" },          { "EEXIST", "file already exists" },
        { "EROFS", "read-only file system" },      { "EACCES", "permission denied" },
        { "ENOSPC", "no space left on device" },   { "EFBIG", "file too large" },
        { "ENOTEMPTY", "directory not empty" },    { "EXDEV", "cross-device link not permitted" },
        { "EINVAL", "invalid argument" },          { "EIO", "i/o error" },
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        if (strcmp(texts[i][0], code) == 0) {
            return texts[i][1];
        }
    }
    return "error";
}

/* "ENOENT: no such file or directory, open 'in/a.csv'", as Node words it. */
static void ws_fail_path(struct ws_err *e, const char *code, const char *syscall, const char *path)
{
    ws_fail(e, code, "%s, %s '%.200s%s'", code_text(code), syscall, path,
            strlen(path) > 200 ? "..." : "");
}

/* A backend call's failure as the guest sees it: EIO naming the mount (or ENOENT, EACCES). */
static int mount_failed(const struct al_workspace *ws, int m, int st, const char *err,
                        const char *shown, const char *syscall, struct ws_err *e)
{
    if (st == AL_MOUNT_OK) {
        return 0;
    }
    if (st == AL_MOUNT_NOT_FOUND) {
        ws_fail_path(e, "ENOENT", syscall, shown);
    } else if (st == WS_MOUNT_DENIED) {
        ws_fail(e, "EACCES", "permission denied, %s '%.200s' (a symbolic link in mount %s)",
                syscall, shown, ws->entries[m].name);
    } else {
        ws_fail(e, "EIO", "i/o error, %s '%.200s': mount %s: %s", syscall, shown,
                ws->entries[m].name, err[0] ? err : "the backend failed");
    }
    return -1;
}

/* ------------------------------------------------------------------ values */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static enum buf_status put_base64(struct buf *b, const unsigned char *in, size_t n)
{
    enum buf_status st;
    char *out = buf_reserve(b, (n + 2) / 3 * 4, &st);
    if (!out) {
        return st;
    }
    size_t o = 0;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = b64[v >> 18];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = b64[(v >> 6) & 63];
        out[o++] = b64[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
        out[o++] = b64[v >> 18];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
    buf_commit(b, o);
    return BUF_OK;
}

/* Standard base64 with padding into a malloc'd buffer; -1 when malformed. */
static int get_base64(const char *s, size_t n, char **ret, size_t *ret_len)
{
    static short dec[256]; /* -1: not a base64 digit (every byte 0xff) */
    static int ready;
    if (!ready) {
        memset(dec, -1, sizeof dec);
        for (int i = 0; i < 64; i++) {
            dec[(unsigned char)b64[i]] = (short)i;
        }
        ready = 1; /* idempotent: racing threads write the same table */
    }
    if (n % 4 != 0) {
        return -1;
    }
    size_t pad = n >= 1 && s[n - 1] == '=' ? (n >= 2 && s[n - 2] == '=' ? 2 : 1) : 0;
    size_t out_len = n / 4 * 3 - pad;
    char *out = malloc(out_len + 1);
    if (!out) {
        return -2;
    }
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int last = i + 4 == n;
        int a = dec[(unsigned char)s[i]];
        int b = dec[(unsigned char)s[i + 1]];
        int c = last && pad == 2 ? 0 : dec[(unsigned char)s[i + 2]];
        int d = last && pad >= 1 ? 0 : dec[(unsigned char)s[i + 3]];
        if (a < 0 || b < 0 || c < 0 || d < 0) {
            free(out);
            return -1;
        }
        uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | (uint32_t)d;
        out[o++] = (char)(v >> 16);
        if (o < out_len) {
            out[o++] = (char)(v >> 8);
        }
        if (o < out_len) {
            out[o++] = (char)v;
        }
    }
    *ret = out;
    *ret_len = out_len;
    return 0;
}

/* The bytes of a data argument: a string (its UTF-8) or a Uint8Array's tagged form. *ret_own
 * is set when *ret was allocated. 0, or -1 with e set. */
static int data_arg(const struct json_node *v, const char **ret, size_t *ret_len, char **ret_own,
                    struct ws_err *e)
{
    *ret_own = NULL;
    if (v && v->type == JSON_STRING) {
        *ret = v->str;
        *ret_len = v->str_len;
        return 0;
    }
    const struct json_node *t = v && v->type == JSON_OBJECT ? json_get(v, "$type") : NULL;
    const struct json_node *buffer = t ? json_get(v, "buffer") : NULL;
    const struct json_node *b =
            buffer && buffer->type == JSON_OBJECT ? json_get(buffer, "base64") : NULL;
    uint64_t off = 0;
    uint64_t len = 0;
    if (!t || t->type != JSON_STRING || strcmp(t->str, "Uint8Array") != 0 || !b ||
        b->type != JSON_STRING || !ws_is_uint(json_get(v, "byteOffset"), &off) ||
        !ws_is_uint(json_get(v, "length"), &len)) {
        ws_fail(e, "ERR_INVALID_ARG_TYPE",
                "The \"data\" argument must be of type string or an instance of Buffer, "
                "TypedArray, or DataView");
        return -1;
    }
    char *bytes = NULL;
    size_t n = 0;
    int r = get_base64(b->str, b->str_len, &bytes, &n);
    if (r != 0 || off > n || len > n - off) {
        free(bytes);
        ws_fail(e, r == -2 ? "ENOMEM" : "EINVAL", "invalid data (a malformed byte array)");
        return -1;
    }
    memmove(bytes, bytes + off, len);
    *ret = bytes;
    *ret_len = len;
    *ret_own = bytes;
    return 0;
}

static enum buf_status put_bytes(struct buf *b, const char *data, size_t len)
{
    buf_printf(b, "{\"$type\":\"Uint8Array\",\"buffer\":{\"$type\":\"arraybuffer\",\"base64\":\"");
    put_base64(b, (const unsigned char *)data, len);
    return buf_printf(b, "\"},\"byteOffset\":0,\"length\":%zu}", len);
}

/* A file's text as the guest's string: invalid UTF-8 becomes U+FFFD, as Node decodes it. */
static enum buf_status put_text(struct buf *b, const char *data, size_t len)
{
    size_t tlen;
    char *t = utf8_valid_dup(data ? data : "", len, 0, &tlen);
    if (!t) {
        buf_reserve(b, SIZE_MAX / 2, NULL); /* poisons it: out of memory */
        return BUF_NO_MEMORY;
    }
    enum buf_status st = json_write_string(b, t, tlen);
    free(t);
    return st;
}

/* ------------------------------------------------------------------ operations */

/* What one operation is working on. */
struct ws_ctx {
    struct al_workspace *ws;
    int op;
    const struct json_node *args; /* the argument array */
    struct buf *answer;
    struct ws_err *e;
    int replayed;             /* a write replayed from a journal or continuation */
    const char *first_answer; /* ... and the first run's answer to it ("" for none) */
    size_t first_answer_len;
    /* for the observer */
    char path[WS_PATH_MAX + 1];
    size_t path_len;
    uint64_t size;
    int hashed;
    char sha256[CONT_DIGEST * 2 + 1];
};

static const struct json_node *arg(const struct ws_ctx *c, size_t i)
{
    const struct json_node *n = c->args->child;
    while (n && i-- > 0) {
        n = n->next;
    }
    return n;
}

/* An option of the options argument i ({recursive: true}), 0 when absent. */
static int flag(const struct ws_ctx *c, size_t i, const char *name)
{
    const struct json_node *o = arg(c, i);
    const struct json_node *f = o && o->type == JSON_OBJECT ? json_get(o, name) : NULL;
    return f && f->type == JSON_TRUE;
}

/* The path argument i, normalized into out; its text as given in *ret_shown. */
static int path_arg(const struct ws_ctx *c, size_t i, char *out, size_t *ret_len,
                    const char **ret_shown, const char *syscall)
{
    const struct json_node *p = arg(c, i);
    if (!p || p->type != JSON_STRING) {
        ws_fail(c->e, "ERR_INVALID_ARG_TYPE", "The \"path\" argument must be of type string");
        return -1;
    }
    *ret_shown = p->str;
    return ws_normalize(c->ws->root, c->ws->root_len, p->str, p->str_len, out, ret_len, c->e,
                        syscall);
}

/* The path of an operation on one path (argument 0), recorded for the observer. */
static int op_path(struct ws_ctx *c, char *out, size_t *ret_len, const char **ret_shown,
                   const char *syscall)
{
    if (path_arg(c, 0, out, ret_len, ret_shown, syscall) != 0) {
        return -1;
    }
    memcpy(c->path, out, *ret_len + 1);
    c->path_len = *ret_len;
    return 0;
}

static void note_data(struct ws_ctx *c, const char *data, size_t len)
{
    uint8_t d[CONT_DIGEST];
    cont_sha256(data ? data : "", len, d);
    hex_encode(d, sizeof d, c->sha256);
    c->hashed = 1;
    c->size = len;
}

/* Checks that the parent of `path` is a directory of the tree (the root always is). */
static int parent_is_dir(struct ws_ctx *c, const char *path, size_t len, const char *shown,
                         const char *syscall)
{
    const char *slash = memrchr(path, '/', len);
    if (!slash) {
        return 0;
    }
    struct ws_node *p = ws_find(c->ws, path, (size_t)(slash - path));
    if (!p) {
        /* Node says ENOTDIR when a component is a file, ENOENT when it is missing */
        for (size_t i = 0; i < (size_t)(slash - path); i++) {
            struct ws_node *a = path[i] == '/' ? ws_find(c->ws, path, i) : NULL;
            if (a && !a->is_dir) {
                ws_fail_path(c->e, "ENOTDIR", syscall, shown);
                return -1;
            }
        }
        ws_fail_path(c->e, "ENOENT", syscall, shown);
        return -1;
    }
    if (!p->is_dir) {
        ws_fail_path(c->e, "ENOTDIR", syscall, shown);
        return -1;
    }
    return 0;
}

/* Where a path lies in a mount (whose directories are implicit), none of its parents in the
 * tree may be a file this run wrote there: ENOTDIR, as Node says. */
static int parents_not_files(struct ws_ctx *c, const char *path, size_t len, const char *shown,
                             const char *syscall)
{
    for (size_t i = 0; i < len; i++) {
        struct ws_node *a = path[i] == '/' ? ws_find(c->ws, path, i) : NULL;
        if (a && !a->is_dir) {
            ws_fail_path(c->e, "ENOTDIR", syscall, shown);
            return -1;
        }
    }
    return 0;
}

/* The parent of `path` can hold it: a directory of the tree, or, in a mount, no file. */
static int parent_ok(struct ws_ctx *c, const char *path, size_t len, const char *shown,
                     const char *syscall)
{
    return ws_entry_of(c->ws, path, len) < 0 ? parent_is_dir(c, path, len, shown, syscall)
                                             : parents_not_files(c, path, len, shown, syscall);
}

/* Room for the directories making `path` (its missing parents, and itself with `self`):
 * ENOSPC past WS_DIRS_MAX. */
static int room_for_dirs(struct ws_ctx *c, const char *path, size_t len, int self,
                         const char *shown, const char *syscall)
{
    uint64_t k = self ? 1 : 0;
    for (size_t i = 0; i < len; i++) {
        k += path[i] == '/' && !ws_find(c->ws, path, i);
    }
    if (c->ws->dirs + k > WS_DIRS_MAX(c->ws)) {
        ws_fail(c->e, "ENOSPC",
                "no space left on device, %s '%.200s' (the workspace holds at "
                "most %llu directories)",
                syscall, shown, (unsigned long long)WS_DIRS_MAX(c->ws));
        return -1;
    }
    return 0;
}

/* May the guest change `path`? EROFS outside the outputs and in read-only mounts. */
static int writable(struct ws_ctx *c, const char *path, size_t len, const char *shown,
                    const char *syscall)
{
    int m = ws_entry_of(c->ws, path, len);
    if ((m >= 0 && !c->ws->entries[m].writable) || !ws_in_outputs(c->ws, path, len)) {
        ws_fail_path(c->e, "EROFS", syscall, shown);
        return -1;
    }
    return 0;
}

/* A file's bytes from the tree or a mount; *ret_own set when allocated. */
static int read_bytes(struct ws_ctx *c, const char *path, size_t len, const char *shown,
                      const char **ret, size_t *ret_len, char **ret_own)
{
    struct al_workspace *ws = c->ws;
    *ret_own = NULL;
    struct ws_node *n = ws_find(ws, path, len);
    int m = ws_entry_of(ws, path, len);
    if (n && !n->entry) {
        if (n->is_dir) {
            ws_fail_path(c->e, "EISDIR", "read", shown);
            return -1;
        }
        *ret = n->data ? n->data : "";
        *ret_len = n->len;
        return 0;
    }
    if (m < 0) {
        return parent_is_dir(c, path, len, shown, "open") == 0
                       ? (ws_fail_path(c->e, "ENOENT", "open", shown), -1)
                       : -1;
    }
    char *key = ws_mount_key(ws, m, path, len);
    char err[256] = "";
    uint64_t size = 0;
    int is_dir = 0;
    if (!key) {
        ws_fail(c->e, "ENOMEM", "out of memory");
        return -1;
    }
    const struct ws_backend *be = ws_backend_of(ws, m);
    int st = be->ops->stat(be->ud, key, &size, &is_dir, err, sizeof err);
    if (mount_failed(ws, m, st, err, shown, "open", c->e) == 0) {
        if (is_dir || n) {
            ws_fail_path(c->e, "EISDIR", "read", shown);
        } else if (size > ws->max_file_bytes) {
            ws_fail(c->e, "EFBIG", "file too large, read '%.200s' (%llu bytes, the limit is %llu)",
                    shown, (unsigned long long)size, (unsigned long long)ws->max_file_bytes);
        } else {
            char *data = NULL;
            size_t got = 0;
            st = be->ops->read(be->ud, key, 0, size, &data, &got, err, sizeof err);
            if (mount_failed(ws, m, st, err, shown, "read", c->e) == 0) {
                if (got > ws->max_file_bytes) {
                    free(data);
                    ws_fail(c->e, "EFBIG", "file too large, read '%.200s'", shown);
                } else {
                    *ret = data ? data : "";
                    *ret_len = got;
                    *ret_own = data;
                }
            } else {
                free(data);
            }
        }
    }
    free(key);
    return c->e->code ? -1 : 0;
}

static void op_read_file(struct ws_ctx *c)
{
    char path[WS_PATH_MAX + 1];
    size_t len;
    const char *shown;
    if (op_path(c, path, &len, &shown, "open") != 0) {
        return;
    }
    const struct json_node *enc = arg(c, 1);
    int text = enc && enc->type == JSON_STRING;
    if (text && strcmp(enc->str, "utf8") != 0 && strcmp(enc->str, "utf-8") != 0) {
        ws_fail(c->e, "ERR_INVALID_ARG_VALUE",
                "The argument 'encoding' is invalid encoding. Received '%.40s' (utf8 or null)",
                enc->str);
        return;
    }
    const char *data;
    size_t n;
    char *own;
    if (read_bytes(c, path, len, shown, &data, &n, &own) != 0) {
        return;
    }
    note_data(c, data, n);
    if (text) {
        put_text(c->answer, data, n);
    } else {
        put_bytes(c->answer, data, n);
    }
    free(own);
}

/* The base a replayed appendFile appends to: the bytes its first answer recorded (none when
 * the mount had no such file). 0 with *ret malloc'd or NULL, or -1 with e set. */
static int replayed_base(struct ws_ctx *c, char **ret, size_t *ret_len)
{
    *ret = NULL;
    *ret_len = 0;
    if (c->first_answer_len == 0) {
        return 0;
    }
    struct json_doc *doc = NULL;
    struct al_error jerr;
    const char *d;
    char *own = NULL;
    int rc = -1;
    if (json_parse(c->first_answer, c->first_answer_len, WS_JSON_DEPTH, &doc, &jerr) != AL_OK) {
        ws_fail(c->e, "EINVAL", "invalid argument (a malformed recorded answer)");
    } else if (data_arg(json_root(doc), &d, ret_len, &own, c->e) == 0) {
        *ret = own ? own : buf_dup(d, *ret_len);
        rc = *ret ? 0 : (ws_fail(c->e, "ENOMEM", "out of memory"), -1);
    }
    json_doc_free(doc);
    return rc;
}

/* Writes (or appends) bytes to a file of the tree, within the limits. */
static void put_file(struct ws_ctx *c, const char *path, size_t len, const char *shown,
                     const char *data, size_t n, int append)
{
    struct al_workspace *ws = c->ws;
    const char *syscall = "open";
    if (len == 0) {
        ws_fail_path(c->e, "EISDIR", syscall, shown);
        return;
    }
    if (writable(c, path, len, shown, syscall) != 0) {
        return;
    }
    int m = ws_entry_of(ws, path, len);
    struct ws_node *node = ws_find(ws, path, len);
    if (node && node->is_dir) {
        ws_fail_path(c->e, "EISDIR", syscall, shown);
        return;
    }
    if (parent_ok(c, path, len, shown, syscall) != 0) {
        return;
    }
    char *base = NULL; /* an append to a mount's file not written yet: its bytes */
    size_t base_len = 0;
    int from_mount = append && m >= 0 && !node;
    if (from_mount && c->replayed) {
        /* what the first run read, from its answer: the mount may have changed since, or be
         * out of reach (a replay reaches none) */
        if (replayed_base(c, &base, &base_len) != 0) {
            return;
        }
    } else if (from_mount) {
        const char *d;
        char *own;
        struct ws_err quiet = { 0 };
        struct ws_err *keep = c->e;
        c->e = &quiet;
        int r = read_bytes(c, path, len, shown, &d, &base_len, &own);
        c->e = keep;
        if (r == 0) {
            base = own ? own : buf_dup(d, base_len);
            if (!base) {
                ws_fail(c->e, "ENOMEM", "out of memory");
                return;
            }
        } else if (strcmp(quiet.code, "ENOENT") != 0) {
            *c->e = quiet;
            return;
        } else {
            base_len = 0; /* no such file in the mount: the append makes it */
        }
    }
    size_t old = node ? node->len : 0;
    size_t total = append ? (node ? node->len : base_len) + n : n;
    if (total > ws->max_file_bytes) {
        free(base);
        ws_fail(c->e, "EFBIG",
                "file too large, write '%.200s' (%zu bytes, the limit is %llu per file)", shown,
                total, (unsigned long long)ws->max_file_bytes);
        return;
    }
    if (ws->bytes - old + total > ws->max_bytes || (!node && ws->files + 1 > ws->max_files)) {
        free(base);
        ws_fail(c->e, "ENOSPC",
                "no space left on device, write '%.200s' (the workspace holds at "
                "most %llu bytes in %llu files)",
                shown, (unsigned long long)ws->max_bytes, (unsigned long long)ws->max_files);
        return;
    }
    if (m >= 0 && room_for_dirs(c, path, len, 0, shown, syscall) != 0) {
        free(base);
        return;
    }
    char *bytes = malloc(total ? total : 1);
    if (!bytes) {
        free(base);
        ws_fail(c->e, "ENOMEM", "out of memory");
        return;
    }
    size_t pre = append ? (node ? node->len : base_len) : 0;
    if (pre) {
        memcpy(bytes, node ? node->data : base, pre);
    }
    if (n) {
        memcpy(bytes + pre, data, n);
    }
    if (base && !c->replayed) {
        /* the answer records what was read, for a replay (the guest's wrapper drops it) */
        put_bytes(c->answer, base, base_len);
    }
    free(base);
    if (!node) {
        node = ws_node_new(path, len, 0, m);
        if (!node || ws_tree_insert(ws, node) != 0 ||
            (m >= 0 && ws_add_parents(ws, path, len, m) != 0)) {
            ws_node_free(node); /* NULL-safe; an inserted one stays, empty */
            free(bytes);
            ws_fail(c->e, "ENOMEM", "out of memory");
            return;
        }
    }
    ws->bytes = ws->bytes - node->len + total;
    free(node->data);
    node->data = bytes;
    node->len = total;
    note_data(c, data, n);
}

static void op_write_file(struct ws_ctx *c, int append)
{
    char path[WS_PATH_MAX + 1];
    size_t len;
    const char *shown;
    if (op_path(c, path, &len, &shown, "open") != 0) {
        return;
    }
    const char *data;
    size_t n;
    char *own;
    if (data_arg(arg(c, 1), &data, &n, &own, c->e) != 0) {
        return;
    }
    put_file(c, path, len, shown, data, n, append);
    free(own);
}

/* Children of directory `path`: from the tree, and from its mount when it is in one. */
struct listing {
    char **names;
    uint8_t *dirs;
    uint64_t *sizes;
    size_t n;
    size_t cap;
    int oom;
};

static void listing_add(struct listing *l, const char *name, size_t len, int dir, uint64_t size)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **names = realloc(l->names, cap * sizeof *names);
        if (names) {
            l->names = names;
        }
        uint8_t *dirs = realloc(l->dirs, cap);
        if (dirs) {
            l->dirs = dirs;
        }
        uint64_t *sizes = realloc(l->sizes, cap * sizeof *sizes);
        if (sizes) {
            l->sizes = sizes;
        }
        if (!names || !dirs || !sizes) {
            l->oom = 1;
            return;
        }
        l->cap = cap;
    }
    char *copy = buf_dup(name, len);
    if (!copy) {
        l->oom = 1;
        return;
    }
    l->names[l->n] = copy;
    l->dirs[l->n] = (uint8_t)(dir != 0);
    l->sizes[l->n] = size;
    l->n++;
}

static void listing_done(struct listing *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->names[i]);
    }
    free(l->names);
    free(l->dirs);
    free(l->sizes);
}

static void list_each(const struct al_mount_entry *entry, void *ud)
{
    struct listing *l = ud;
    size_t len = entry->name ? strlen(entry->name) : 0;
    if (len == 0 || memchr(entry->name, '/', len) || strcmp(entry->name, ".") == 0 ||
        strcmp(entry->name, "..") == 0) {
        return; /* a backend's odd name never becomes a path segment */
    }
    listing_add(l, entry->name, len, entry->is_dir, entry->size);
}

/* Fills l with the children of directory `path`; 0, or -1 with e set. */
static int list_dir(struct ws_ctx *c, const char *path, size_t len, const char *shown,
                    struct listing *l)
{
    struct al_workspace *ws = c->ws;
    struct ws_node *n = ws_find(ws, path, len);
    int m = ws_entry_of(ws, path, len);
    if (m >= 0 && (!n || n->entry)) {
        char *key = ws_mount_key(ws, m, path, len);
        char err[256] = "";
        if (!key) {
            ws_fail(c->e, "ENOMEM", "out of memory");
            return -1;
        }
        const struct ws_backend *be = ws_backend_of(ws, m);
        int st = be->ops->list(be->ud, key, list_each, l, err, sizeof err);
        free(key);
        if (st == AL_MOUNT_NOT_FOUND && n) {
            st = AL_MOUNT_OK; /* an empty entry, or one the guest wrote into */
        }
        if (mount_failed(ws, m, st, err, shown, "scandir", c->e) != 0) {
            return -1;
        }
    } else if (len > 0 && !n) {
        parent_is_dir(c, path, len, shown, "scandir");
        ws_fail_path(c->e, "ENOENT", "scandir", shown);
        return -1;
    } else if (n && !n->is_dir) {
        ws_fail_path(c->e, "ENOTDIR", "scandir", shown);
        return -1;
    }
    size_t lo;
    size_t hi;
    ws_descendants(ws, path, len, &lo, &hi);
    size_t skip = len ? len + 1 : 0;
    for (size_t i = lo; i < hi; i++) {
        const struct ws_node *d = ws->nodes[i];
        if (d->path_len > len && !memchr(d->path + skip, '/', d->path_len - skip)) {
            listing_add(l, d->path + skip, d->path_len - skip, d->is_dir, d->len);
        }
    }
    if (l->oom) {
        ws_fail(c->e, "ENOMEM", "out of memory");
        return -1;
    }
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(**(char *const *const *)a, **(char *const *const *)b);
}

/* The listing's indexes in name order, each name once (a file written over a mount's is in
 * both): *ret_n of them. Sorting first keeps a listing of n names O(n log n). */
static size_t *sorted(const struct listing *l, size_t *ret_n)
{
    char ***ptrs = malloc((l->n + 1) * sizeof *ptrs);
    size_t *order = malloc((l->n + 1) * sizeof *order);
    if (!ptrs || !order) {
        free(ptrs);
        free(order);
        return NULL;
    }
    for (size_t i = 0; i < l->n; i++) {
        ptrs[i] = &l->names[i];
    }
    if (l->n) {
        qsort(ptrs, l->n, sizeof *ptrs, name_cmp);
    }
    size_t n = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (i == 0 || strcmp(*ptrs[i], *ptrs[i - 1]) != 0) {
            order[n++] = (size_t)(ptrs[i] - l->names);
        }
    }
    free(ptrs);
    *ret_n = n;
    return order;
}

static void op_readdir(struct ws_ctx *c)
{
    char path[WS_PATH_MAX + 1];
    size_t len;
    const char *shown;
    if (op_path(c, path, &len, &shown, "scandir") != 0) {
        return;
    }
    struct listing l = { 0 };
    if (list_dir(c, path, len, shown, &l) == 0) {
        size_t n = 0;
        size_t *order = sorted(&l, &n);
        if (!order) {
            ws_fail(c->e, "ENOMEM", "out of memory");
        } else {
            buf_append_byte(c->answer, '[');
            for (size_t k = 0; k < n; k++) {
                size_t i = order[k];
                buf_append_str(c->answer, k ? ",{\"name\":" : "{\"name\":");
                put_text(c->answer, l.names[i], strlen(l.names[i]));
                buf_append_str(c->answer, l.dirs[i] ? ",\"dir\":true}" : ",\"dir\":false}");
            }
            buf_append_byte(c->answer, ']');
            free(order);
        }
    }
    listing_done(&l);
}

/* What `path` is: 1 file, 2 directory, 0 missing (e set unless quiet_missing), -1 failed. */
static int stat_path(struct ws_ctx *c, const char *path, size_t len, const char *shown,
                     uint64_t *ret_size)
{
    struct al_workspace *ws = c->ws;
    struct ws_node *n = ws_find(ws, path, len);
    *ret_size = 0;
    if (len == 0) {
        return 2;
    }
    if (n) {
        *ret_size = n->len;
        return n->is_dir ? 2 : 1;
    }
    int m = ws_entry_of(ws, path, len);
    if (m < 0) {
        return 0;
    }
    char *key = ws_mount_key(ws, m, path, len);
    char err[256] = "";
    int is_dir = 0;
    if (!key) {
        ws_fail(c->e, "ENOMEM", "out of memory");
        return -1;
    }
    const struct ws_backend *be = ws_backend_of(ws, m);
    int st = be->ops->stat(be->ud, key, ret_size, &is_dir, err, sizeof err);
    free(key);
    if (st == AL_MOUNT_NOT_FOUND) {
        return 0;
    }
    if (mount_failed(ws, m, st, err, shown, "stat", c->e) != 0) {
        return -1;
    }
    return is_dir ? 2 : 1;
}

static void op_stat(struct ws_ctx *c, int exists)
{
    char path[WS_PATH_MAX + 1];
    size_t len;
    const char *shown;
    if (op_path(c, path, &len, &shown, exists ? "access" : "stat") != 0) {
        return;
    }
    uint64_t size;
    int what = stat_path(c, path, len, shown, &size);
    if (what < 0) {
        return;
    }
    if (exists) {
        buf_append_str(c->answer, what ? "true" : "false");
        return;
    }
    if (what == 0) {
        ws_fail_path(c->e, "ENOENT", "stat", shown);
        return;
    }
    buf_printf(c->answer, "{\"type\":\"%s\",\"size\":%llu}", what == 2 ? "dir" : "file",
               (unsigned long long)(what == 2 ? 0 : size));
}

static void op_mkdir(struct ws_ctx *c)
{
    char path[WS_PATH_MAX + 1];
    size_t len;
    const char *shown;
    if (op_path(c, path, &len, &shown, "mkdir") != 0) {
        return;
    }
    int recursive = flag(c, 1, "recursive");
    struct al_workspace *ws = c->ws;
    struct ws_node *n = ws_find(ws, path, len);
    if (len == 0 || n) {
        if (!recursive || (n && !n->is_dir)) {
            ws_fail_path(c->e, "EEXIST", "mkdir", shown);
        }
        return;
    }
    if (writable(c, path, len, shown, "mkdir") != 0) {
        return;
    }
    int m = ws_entry_of(ws, path, len);
    if (recursive) {
        for (size_t i = 0; i < len; i++) {
            struct ws_node *a = path[i] == '/' ? ws_find(ws, path, i) : NULL;
            if (a && !a->is_dir) {
                ws_fail_path(c->e, "ENOTDIR", "mkdir", shown);
                return;
            }
        }
    } else if (parent_ok(c, path, len, shown, "mkdir") != 0) {
        return;
    }
    if (room_for_dirs(c, path, len, 1, shown, "mkdir") != 0) {
        return;
    }
    n = ws_node_new(path, len, 1, m);
    if (!n || ws_tree_insert(ws, n) != 0 || ws_add_parents(ws, path, len, m) != 0) {
        ws_node_free(n);
        ws_fail(c->e, "ENOMEM", "out of memory");
    }
}

static void op_rm(struct ws_ctx *c)
{
    char path[WS_PATH_MAX + 1];
    size_t len;
    const char *shown;
    if (op_path(c, path, &len, &shown, "rm") != 0) {
        return;
    }
    int recursive = flag(c, 1, "recursive");
    int force = flag(c, 1, "force");
    int dir_only = flag(c, 1, "dir");   /* rmdir */
    int file_only = flag(c, 1, "file"); /* unlink */
    struct al_workspace *ws = c->ws;
    if (len == 0) {
        ws_fail(c->e, "EACCES", "permission denied, rm '%.200s' (the workspace root)", shown);
        return;
    }
    if (writable(c, path, len, shown, "rm") != 0) {
        return;
    }
    int found;
    size_t i = ws_index(ws, path, len, &found);
    if (!found || ws->nodes[i]->entry) {
        uint64_t size;
        int what = found ? 2 : stat_path(c, path, len, shown, &size);
        if (what < 0) {
            return;
        }
        if (what > 0) {
            /* in a mount: only what this run wrote can be removed */
            ws_fail(c->e, "EROFS", "read-only file system, rm '%.200s' (in a mount)", shown);
        } else if (!force) {
            ws_fail_path(c->e, "ENOENT", "rm", shown);
        }
        return;
    }
    struct ws_node *n = ws->nodes[i];
    if (n->is_dir && file_only) {
        ws_fail(c->e, "EISDIR", "illegal operation on a directory, unlink '%.200s'", shown);
        return;
    }
    if (!n->is_dir && dir_only) {
        ws_fail_path(c->e, "ENOTDIR", "rmdir", shown);
        return;
    }
    size_t lo;
    size_t hi;
    ws_descendants(ws, path, len, &lo, &hi);
    if (n->is_dir && !recursive && (!dir_only || hi > lo)) {
        if (dir_only) {
            ws_fail_path(c->e, "ENOTEMPTY", "rmdir", shown);
        } else {
            ws_fail(c->e, "EISDIR",
                    "Path is a directory: rm returned EISDIR (is a directory) "
                    "'%.200s' (use recursive)",
                    shown);
        }
        return;
    }
    for (size_t k = lo; k < hi; k++) {
        if (ws->nodes[k]->entry) {
            ws_fail(c->e, "EROFS", "read-only file system, rm '%.200s' (it holds a mount)", shown);
            return;
        }
    }
    for (size_t k = hi; k-- > lo;) {
        ws_node_free(ws_tree_remove(ws, k));
    }
    ws_node_free(ws_tree_remove(ws, i));
}

static void op_rename(struct ws_ctx *c)
{
    char from[WS_PATH_MAX + 1];
    char to[WS_PATH_MAX + 1];
    size_t flen;
    size_t tlen;
    const char *fshown;
    const char *tshown;
    if (path_arg(c, 0, from, &flen, &fshown, "rename") != 0 ||
        path_arg(c, 1, to, &tlen, &tshown, "rename") != 0) {
        return;
    }
    memcpy(c->path, from, flen + 1);
    c->path_len = flen;
    struct al_workspace *ws = c->ws;
    if (flen == 0 || tlen == 0) {
        ws_fail(c->e, "EACCES", "permission denied, rename '%.100s' -> '%.100s'", fshown, tshown);
        return;
    }
    if (writable(c, from, flen, fshown, "rename") != 0 ||
        writable(c, to, tlen, tshown, "rename") != 0) {
        return;
    }
    if (ws_entry_of(ws, from, flen) != ws_entry_of(ws, to, tlen)) {
        ws_fail(c->e, "EXDEV", "cross-device link not permitted, rename '%.100s' -> '%.100s'",
                fshown, tshown);
        return;
    }
    struct ws_node *src = ws_find(ws, from, flen);
    if (!src || src->entry) {
        /* a mount's own file (or the entry) cannot move; only what this run wrote can */
        uint64_t size;
        int what = src ? 2 : stat_path(c, from, flen, fshown, &size);
        if (what >= 0) {
            ws_fail(c->e, what ? "EROFS" : "ENOENT", "%s, rename '%.100s' -> '%.100s'",
                    what ? "read-only file system" : "no such file or directory", fshown, tshown);
        }
        return;
    }
    /* a mount entry stays where the manifest put it: its keys are cut at that path */
    size_t lo;
    size_t hi;
    ws_descendants(ws, from, flen, &lo, &hi);
    for (size_t k = lo; src->is_dir && k < hi; k++) {
        if (ws->nodes[k]->entry) {
            ws_fail(c->e, "EROFS",
                    "read-only file system, rename '%.100s' -> '%.100s' (it holds "
                    "a mount)",
                    fshown, tshown);
            return;
        }
    }
    if (ws_under(to, tlen, from)) {
        if (tlen != flen) {
            ws_fail(c->e, "EINVAL", "invalid argument, rename '%.100s' -> '%.100s'", fshown,
                    tshown);
        }
        return; /* onto itself: nothing to do */
    }
    if (parent_ok(c, to, tlen, tshown, "rename") != 0) {
        return;
    }
    int found;
    size_t ti = ws_index(ws, to, tlen, &found);
    if (found) {
        struct ws_node *dst = ws->nodes[ti];
        ws_descendants(ws, to, tlen, &lo, &hi);
        if (dst->entry || (dst->is_dir && !src->is_dir)) {
            ws_fail(c->e, "EISDIR",
                    "illegal operation on a directory, rename '%.100s' -> "
                    "'%.100s'",
                    fshown, tshown);
            return;
        }
        if (!dst->is_dir && src->is_dir) {
            ws_fail(c->e, "ENOTDIR", "not a directory, rename '%.100s' -> '%.100s'", fshown,
                    tshown);
            return;
        }
        if (dst->is_dir && hi > lo) {
            ws_fail(c->e, "ENOTEMPTY", "directory not empty, rename '%.100s' -> '%.100s'", fshown,
                    tshown);
            return;
        }
        ws_node_free(ws_tree_remove(ws, ti));
    }
    /* the source and its descendants, taken out, renamed, put back */
    int sfound;
    size_t si = ws_index(ws, from, flen, &sfound);
    ws_descendants(ws, from, flen, &lo, &hi);
    size_t count = 1 + (hi - lo);
    struct ws_node **moved = malloc(count * sizeof *moved);
    if (!moved) {
        ws_fail(c->e, "ENOMEM", "out of memory");
        return;
    }
    for (size_t k = lo; k < hi; k++) {
        moved[1 + (k - lo)] = ws->nodes[k];
    }
    moved[0] = ws->nodes[si];
    for (size_t k = hi; k-- > lo;) {
        ws_tree_remove(ws, k);
    }
    ws_tree_remove(ws, si);
    for (size_t k = 0; k < count; k++) {
        struct ws_node *n = moved[k];
        size_t rest = n->path_len - flen;
        char *p = malloc(tlen + rest + 1);
        if (p) {
            memcpy(p, to, tlen);
            memcpy(p + tlen, n->path + flen, rest + 1);
            free(n->path);
            n->path = p;
            n->path_len = tlen + rest;
        }
        /* out of memory keeps the old name: the tree stays consistent, just not renamed */
        if (ws_tree_insert(ws, n) != 0) {
            ws_node_free(n);
            ws_fail(c->e, "ENOMEM", "out of memory");
        }
    }
    free(moved);
}

/* ------------------------------------------------------------------ glob */

/* Glob matching: '*' any run of characters but '/', '?' one such character, '**' as a whole
 * segment any number of segments (zero included). A pattern and a path are compared segment
 * by segment (a table of pattern segments x path segments, two rows at a time), each segment
 * with the greedy one-star-backtrack match, so no pattern costs more than |pattern| x |path|
 * per path; a budget of steps per glob call bounds the whole walk (EINVAL past it). */
#define GLOB_SEGS_MAX  (WS_PATH_MAX / 2 + 2)
#define GLOB_STEPS_MAX 200000000ull

struct glob {
    const char *seg[GLOB_SEGS_MAX]; /* the pattern's segments */
    size_t seg_len[GLOB_SEGS_MAX];
    size_t nseg;
    uint64_t steps; /* left */
};

static size_t split(const char *s, size_t len, const char **seg, size_t *seg_len, size_t max)
{
    size_t n = 0;
    size_t i = 0;
    while (i < len && n < max) {
        size_t b = i;
        while (i < len && s[i] != '/') {
            i++;
        }
        seg[n] = s + b;
        seg_len[n++] = i - b;
        i++;
    }
    return n;
}

static int seg_match(struct glob *g, const char *p, size_t plen, const char *s, size_t slen)
{
    size_t pi = 0;
    size_t si = 0;
    size_t star = SIZE_MAX;
    size_t mark = 0;
    while (si < slen) {
        if (g->steps == 0) {
            return 0;
        }
        g->steps--;
        if (pi < plen && (p[pi] == '?' || p[pi] == s[si]) && p[pi] != '*') {
            pi++;
            si++;
        } else if (pi < plen && p[pi] == '*') {
            star = pi++;
            mark = si;
        } else if (star != SIZE_MAX) {
            pi = star + 1;
            si = ++mark;
        } else {
            return 0;
        }
    }
    while (pi < plen && p[pi] == '*') {
        pi++;
    }
    return pi == plen;
}

static int glob_match(struct glob *g, const char *s, size_t slen)
{
    static __thread const char *pseg[GLOB_SEGS_MAX];
    static __thread size_t pseg_len[GLOB_SEGS_MAX];
    static __thread uint8_t row_a[GLOB_SEGS_MAX + 1];
    static __thread uint8_t row_b[GLOB_SEGS_MAX + 1];
    size_t ns = split(s, slen, pseg, pseg_len, GLOB_SEGS_MAX);
    uint8_t *next = row_a; /* pattern segments i+1.. against path segments j.. */
    uint8_t *cur = row_b;
    memset(next, 0, ns + 1);
    next[ns] = 1;
    for (size_t i = g->nseg; i-- > 0;) {
        int globstar = g->seg_len[i] == 2 && g->seg[i][0] == '*' && g->seg[i][1] == '*';
        if (globstar) {
            cur[ns] = next[ns];
            for (size_t j = ns; j-- > 0;) {
                cur[j] = next[j] || cur[j + 1];
            }
        } else {
            cur[ns] = 0;
            for (size_t j = 0; j < ns; j++) {
                cur[j] =
                        next[j + 1] && seg_match(g, g->seg[i], g->seg_len[i], pseg[j], pseg_len[j]);
            }
        }
        uint8_t *t = next;
        next = cur;
        cur = t;
    }
    return next[0];
}

struct glob_out {
    struct listing found;
    size_t walked;
};

/* Walks a mount directory (key) below tree path `path`, adding matches. */
static int glob_walk_mount(struct ws_ctx *c, int m, const char *path, size_t len, struct glob *pat,
                           struct glob_out *g, int depth)
{
    struct listing l = { 0 };
    char *key = ws_mount_key(c->ws, m, path, len);
    char err[256] = "";
    if (!key) {
        ws_fail(c->e, "ENOMEM", "out of memory");
        return -1;
    }
    const struct ws_backend *be = ws_backend_of(c->ws, m);
    int st = be->ops->list(be->ud, key, list_each, &l, err, sizeof err);
    free(key);
    if (st == AL_MOUNT_NOT_FOUND) {
        st = AL_MOUNT_OK;
    }
    if (mount_failed(c->ws, m, st, err, path, "scandir", c->e) != 0) {
        listing_done(&l);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < l.n && rc == 0; i++) {
        if (++g->walked > WS_GLOB_MAX_WALK) {
            ws_fail(c->e, "ENOSPC", "glob walked more than %d entries of a mount",
                    WS_GLOB_MAX_WALK);
            rc = -1;
            break;
        }
        char child[WS_PATH_MAX + 1];
        int n = snprintf(child, sizeof child, "%.*s%s%s", (int)len, path, len ? "/" : "",
                         l.names[i]);
        if (n < 0 || (size_t)n >= sizeof child) {
            continue;
        }
        if (glob_match(pat, child, (size_t)n)) {
            listing_add(&g->found, child, (size_t)n, 0, 0);
        }
        if (l.dirs[i] && depth < WS_DEPTH_MAX) {
            rc = glob_walk_mount(c, m, child, (size_t)n, pat, g, depth + 1);
        }
    }
    listing_done(&l);
    return rc;
}

static void op_glob(struct ws_ctx *c)
{
    const struct json_node *p = arg(c, 0);
    if (!p || p->type != JSON_STRING) {
        ws_fail(c->e, "ERR_INVALID_ARG_TYPE", "The \"pattern\" argument must be of type string");
        return;
    }
    /* a pattern is a path, normalized the same way: absolute under the root works too */
    char pat[WS_PATH_MAX + 1];
    size_t plen;
    if (ws_normalize(c->ws->root, c->ws->root_len, p->str, p->str_len, pat, &plen, c->e, "glob") !=
        0) {
        return;
    }
    memcpy(c->path, pat, plen + 1);
    c->path_len = plen;
    struct al_workspace *ws = c->ws;
    struct glob_out g = { 0 };
    struct glob *gp = malloc(sizeof *gp);
    if (!gp) {
        ws_fail(c->e, "ENOMEM", "out of memory");
        return;
    }
    gp->nseg = split(pat, plen, gp->seg, gp->seg_len, GLOB_SEGS_MAX);
    gp->steps = GLOB_STEPS_MAX;
    for (size_t i = 0; i < ws->nnodes && gp->steps; i++) {
        const struct ws_node *n = ws->nodes[i];
        if (n->path_len > 0 && glob_match(gp, n->path, n->path_len)) {
            listing_add(&g.found, n->path, n->path_len, 0, 0);
        }
    }
    for (size_t m = 0; m < ws->nentries && !c->e->code; m++) {
        /* only mounts the pattern can reach: its literal part before the first wildcard */
        const char *path = ws->entries[m].path;
        size_t elen = strlen(path);
        size_t lit = strcspn(pat, "*?");
        size_t cmp = lit < elen ? lit : elen;
        if (memcmp(pat, path, cmp) == 0) {
            glob_walk_mount(c, (int)m, path, elen, gp, &g, 0);
        }
    }
    if (!gp->steps) {
        ws_fail(c->e, "EINVAL",
                "invalid argument, glob '%.200s' (the pattern costs too much to "
                "match against this workspace)",
                p->str);
    }
    free(gp);
    if (!c->e->code && g.found.oom) {
        ws_fail(c->e, "ENOMEM", "out of memory");
    }
    if (!c->e->code) {
        size_t n = 0;
        size_t *order = sorted(&g.found, &n);
        if (!order) {
            ws_fail(c->e, "ENOMEM", "out of memory");
        } else {
            buf_append_byte(c->answer, '[');
            for (size_t k = 0; k < n; k++) {
                if (k) {
                    buf_append_byte(c->answer, ',');
                }
                put_text(c->answer, g.found.names[order[k]], strlen(g.found.names[order[k]]));
            }
            buf_append_byte(c->answer, ']');
            free(order);
        }
    }
    listing_done(&g.found);
}

/* ------------------------------------------------------------------ dispatch */

/* Runs op on args; the answer in `answer` or the failure in e. */
static void exec_op(struct al_workspace *ws, const struct ws_job *job, struct buf *answer,
                    struct ws_err *e, struct ws_ctx *c)
{
    struct json_doc *doc = NULL;
    struct al_error jerr;
    int op = job->op;
    memset(c, 0, sizeof *c);
    c->ws = ws;
    c->op = op;
    c->answer = answer;
    c->e = e;
    c->replayed = job->replayed;
    c->first_answer = job->answer ? job->answer : "";
    c->first_answer_len = job->answer ? job->answer_len : 0;
    const char *args = job->args;
    size_t len = job->len;
    if (json_parse(args, len, WS_JSON_DEPTH, &doc, &jerr) != AL_OK ||
        json_root(doc)->type != JSON_ARRAY) {
        json_doc_free(doc);
        ws_fail(e, "ERR_INVALID_ARG_TYPE", "invalid arguments");
        return;
    }
    c->args = json_root(doc);
    switch (op) {
    case OP_READ_FILE:
        op_read_file(c);
        break;
    case OP_WRITE_FILE:
        op_write_file(c, 0);
        break;
    case OP_APPEND_FILE:
        op_write_file(c, 1);
        break;
    case OP_READDIR:
        op_readdir(c);
        break;
    case OP_STAT:
        op_stat(c, 0);
        break;
    case OP_EXISTS:
        op_stat(c, 1);
        break;
    case OP_MKDIR:
        op_mkdir(c);
        break;
    case OP_RM:
        op_rm(c);
        break;
    case OP_RENAME:
        op_rename(c);
        break;
    case OP_GLOB:
        op_glob(c);
        break;
    default:
        ws_fail(e, "EINVAL", "unknown operation");
        break;
    }
    json_doc_free(doc);
    if (!e->code && buf_failed(answer)) {
        if (answer->err == BUF_TOO_BIG) {
            ws_fail(e, "EFBIG", "the answer to %s passes %u MiB (a listing too long?)",
                    ws_op_name(op), WS_ANSWER_MAX >> 20);
        } else {
            ws_fail(e, "ENOMEM", "out of memory for the answer");
        }
    }
}

void ws_run_job(struct al_workspace *ws, struct ws_job *job)
{
    struct buf answer;
    struct ws_err e = { 0 };
    struct ws_ctx *c = malloc(sizeof *c);
    buf_init(&answer, WS_ANSWER_MAX);
    if (!c) {
        if (job->call) {
            al_call_throw(job->call, "ENOMEM: out of memory");
        }
        return;
    }
    if (job->call && al_call_cancelled(job->call) && !ws_op_mutates(job->op)) {
        /* the run is over (a read queued behind a slow mount): nobody reads the answer */
        al_call_throw(job->call, "EIO: the run is over");
        free(c);
        return;
    }
    exec_op(ws, job, &answer, &e, c);
    if (job->call) {
        if (ws->observer) {
            struct al_workspace_op o = {
                .op = ws_op_name(job->op),
                .path = c->path,
                .size = c->hashed ? c->size : 0,
                .sha256 = c->hashed && !e.code ? c->sha256 : NULL,
                .error = e.code,
            };
            ws->observer(&o, ws->observer_ud);
        }
        if (e.code) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s: %s", e.code, e.msg);
            al_call_throw(job->call, msg);
        } else {
            al_call_return(job->call, answer.data, answer.len);
        }
    }
    free(c);
    buf_done(&answer);
}

static int has_mounts(const struct al_workspace *ws)
{
    return ws->nentries > 0;
}

void ws_host(struct al_call *call, void *userdata)
{
    struct al_workspace *ws = userdata;
    size_t len;
    const char *args = al_call_args(call, &len);
    struct ws_job job = { .call = call, .op = ws_op_of(al_call_name(call)), .len = len };
    if (!has_mounts(ws)) {
        job.args = (char *)args;
        ws_run_job(ws, &job);
        return;
    }
    struct ws_job *j = malloc(sizeof *j);
    char *copy = buf_dup(args, len);
    if (!j || !copy) {
        free(j);
        free(copy);
        al_call_throw(call, "ENOMEM: out of memory");
        return;
    }
    *j = job;
    j->args = copy;
    if (ws_thread_submit(ws, j) != 0) {
        free(j->args);
        free(j);
        al_call_throw(call, "ENOMEM: out of memory");
    }
}

void ws_replay(struct al_workspace *ws, int op, const char *args, size_t len, const char *answer,
               size_t answer_len)
{
    struct ws_job job = { .op = op, .len = len, .replayed = 1, .answer_len = answer_len };
    if (!has_mounts(ws)) {
        job.args = (char *)args;
        job.answer = (char *)answer;
        ws_run_job(ws, &job);
        return;
    }
    struct ws_job *j = malloc(sizeof *j);
    char *copy = buf_dup(args, len);
    char *answer_copy = answer && answer_len ? buf_dup(answer, answer_len) : NULL;
    if (!j || !copy || (answer && answer_len && !answer_copy) ||
        (*j = job, j->args = copy, j->answer = answer_copy, ws_thread_submit(ws, j) != 0)) {
        free(j);
        free(copy);
        free(answer_copy);
    }
}
