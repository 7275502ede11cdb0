/*
 * workspace.c - a run's files (docs/workspace.md): the manifest, the tree, the path rules and
 * limits, and the guest's file operations as the host calls "workspace.<op>".
 *
 * The tree is one array of nodes sorted by path (strcmp), so a directory's descendants are the
 * contiguous run of paths that start with "dir/", a lookup is a binary search and a listing is
 * a scan of that run. Mount entries are directories of the tree whose contents live in a
 * backend (struct al_mount_ops); what the guest writes into a writable mount entry is kept in
 * the tree too (node.mount) until al_workspace_commit.
 *
 * Every path the guest gives is untrusted: it is normalized here ('.' and '..' resolved, a NUL
 * refused), and one that leaves the root - an absolute path elsewhere, '..' past the root -
 * answers EACCES before anything is looked up. Writes are allowed only under an outputs prefix
 * and never into a read-only mount; sizes and counts are checked before anything changes, so a
 * failed operation leaves the tree as it was.
 *
 * An operation's outcome is an answer (boundary JSON) or a Node-style error "CODE: message",
 * which the guest's wrapper (worker/workspace.js) turns into an Error with `code`. Operations
 * that touch no mount run on the thread driving the run; a workspace with mounts runs all of
 * them, in order, on its own thread (workspace_mount.c), since backends may block.
 */
#include "workspace.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "continuation.h"
#include "error.h"
#include "hex.h"
#include "internal.h"
#include "json.h"
#include "utf8.h"

#define WS_PATH_MAX      4096 /* bytes of a path the guest gives */
#define WS_JSON_DEPTH    64
#define WS_GLOB_MAX_WALK 100000 /* entries a glob looks at in mounts */
#define WS_DEPTH_MAX     256    /* directory levels a glob walks into a mount */

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

const char *const ws_op_names[WS_OPS_COUNT] = {
    "readFile", "writeFile", "appendFile", "readdir", "stat",
    "exists",   "mkdir",     "rm",         "rename",  "glob",
};

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
        if (strcmp(name + 10, ws_op_names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

/* ------------------------------------------------------------------ errors */

/* An operation's failure: a Node error code and its message. */
struct ws_err {
    const char *code; /* NULL: none */
    char msg[400];
};

static void ws_fail(struct ws_err *e, const char *code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static void ws_fail(struct ws_err *e, const char *code, const char *fmt, ...)
{
    if (e->code) {
        return;
    }
    e->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
}

/* Node's texts for its codes. */
static const char *code_text(const char *code)
{
    static const char *const texts[][2] = {
        { "ENOENT", "no such file or directory" },
        { "EISDIR", "illegal operation on a directory" },
        { "ENOTDIR", "not a directory" },
        { "EEXIST", "file already exists" },
        { "EROFS", "read-only file system" },
        { "EACCES", "permission denied" },
        { "ENOSPC", "no space left on device" },
        { "EFBIG", "file too large" },
        { "ENOTEMPTY", "directory not empty" },
        { "EXDEV", "cross-device link not permitted" },
        { "EINVAL", "invalid argument" },
        { "EIO", "i/o error" },
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

/* ------------------------------------------------------------------ the tree */

void ws_node_free(struct ws_node *n)
{
    if (n) {
        free(n->path);
        free(n->data);
        free(n);
    }
}

static int path_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int c = memcmp(a, b, n);
    if (c != 0) {
        return c;
    }
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

size_t ws_index(const struct al_workspace *ws, const char *path, size_t len, int *ret_found)
{
    size_t lo = 0;
    size_t hi = ws->nnodes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = path_cmp(ws->nodes[mid]->path, ws->nodes[mid]->path_len, path, len);
        if (c == 0) {
            *ret_found = 1;
            return mid;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *ret_found = 0;
    return lo;
}

struct ws_node *ws_find(const struct al_workspace *ws, const char *path, size_t len)
{
    int found;
    size_t i = ws_index(ws, path, len, &found);
    return found ? ws->nodes[i] : NULL;
}

static struct ws_node *node_new(const char *path, size_t len, int is_dir, int mount)
{
    struct ws_node *n = calloc(1, sizeof *n);
    if (!n || !(n->path = buf_dup(path, len))) {
        free(n);
        return NULL;
    }
    n->path_len = len;
    n->is_dir = is_dir;
    n->mount = mount;
    return n;
}

/* Inserts n (its path not in the tree); 0, or -1 out of memory. */
static int tree_insert(struct al_workspace *ws, struct ws_node *n)
{
    if (ws->nnodes == ws->cap_nodes) {
        size_t cap = ws->cap_nodes ? ws->cap_nodes * 2 : 64;
        struct ws_node **grown = realloc(ws->nodes, cap * sizeof *grown);
        if (!grown) {
            return -1;
        }
        ws->nodes = grown;
        ws->cap_nodes = cap;
    }
    int found;
    size_t i = ws_index(ws, n->path, n->path_len, &found);
    memmove(ws->nodes + i + 1, ws->nodes + i, (ws->nnodes - i) * sizeof *ws->nodes);
    ws->nodes[i] = n;
    ws->nnodes++;
    if (!n->is_dir) {
        ws->files++;
        ws->bytes += n->len;
    }
    return 0;
}

/* Takes node i out of the tree (the caller frees it). */
static struct ws_node *tree_remove(struct al_workspace *ws, size_t i)
{
    struct ws_node *n = ws->nodes[i];
    memmove(ws->nodes + i, ws->nodes + i + 1, (ws->nnodes - i - 1) * sizeof *ws->nodes);
    ws->nnodes--;
    if (!n->is_dir) {
        ws->files--;
        ws->bytes -= n->len;
    }
    return n;
}

/* The range [*ret_lo, *ret_hi) of the descendants of directory `path` ("" = root: all). */
static void descendants(const struct al_workspace *ws, const char *path, size_t len,
                        size_t *ret_lo, size_t *ret_hi)
{
    if (len == 0) {
        *ret_lo = 0;
        *ret_hi = ws->nnodes;
        return;
    }
    char key[WS_PATH_MAX + 2];
    memcpy(key, path, len);
    key[len] = '/';
    int found;
    size_t lo = ws_index(ws, key, len + 1, &found);
    size_t hi = lo;
    while (hi < ws->nnodes && ws->nodes[hi]->path_len > len &&
           memcmp(ws->nodes[hi]->path, key, len + 1) == 0) {
        hi++;
    }
    *ret_lo = lo;
    *ret_hi = hi;
}

/* Adds directory nodes for every missing parent of `path`; 0, or -1 out of memory. `mount`:
 * the value the new nodes get. */
static int add_parents(struct al_workspace *ws, const char *path, size_t len, int mount)
{
    for (size_t i = 0; i < len; i++) {
        if (path[i] == '/' && !ws_find(ws, path, i)) {
            struct ws_node *d = node_new(path, i, 1, mount);
            if (!d || tree_insert(ws, d) != 0) {
                ws_node_free(d);
                return -1;
            }
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ paths */

/* Normalizes `in` (relative to the root, or absolute under it) into out (a path relative to
 * the root, "" for the root itself, no '.', '..' or empty segments). 0, or -1 with e set. */
static int normalize(const char *root, size_t root_len, const char *in, size_t in_len, char *out,
                     size_t *ret_len, struct ws_err *e, const char *syscall)
{
    if (memchr(in, '\0', in_len)) {
        ws_fail(e, "ERR_INVALID_ARG_VALUE",
                "The argument 'path' must be a string without null bytes. Received '%.100s'",
                in);
        return -1;
    }
    if (in_len > WS_PATH_MAX) {
        ws_fail(e, "ENAMETOOLONG", "name too long, %s '%.100s...'", syscall, in);
        return -1;
    }
    const char *p = in;
    const char *end = in + in_len;
    if (in_len > 0 && in[0] == '/') {
        int under = in_len >= root_len && memcmp(in, root, root_len) == 0 &&
                    (in_len == root_len || in[root_len] == '/' || root_len == 1);
        if (!under) {
            ws_fail(e, "EACCES", "permission denied, %s '%.200s' (outside the workspace %s)",
                    syscall, in, root);
            return -1;
        }
        p = in + root_len;
    }
    size_t n = 0;
    while (p < end) {
        while (p < end && *p == '/') {
            p++;
        }
        const char *seg = p;
        while (p < end && *p != '/') {
            p++;
        }
        size_t slen = (size_t)(p - seg);
        if (slen == 0 || (slen == 1 && seg[0] == '.')) {
            continue;
        }
        if (slen == 2 && seg[0] == '.' && seg[1] == '.') {
            if (n == 0) {
                ws_fail(e, "EACCES", "permission denied, %s '%.200s' (outside the workspace %s)",
                        syscall, in, root);
                return -1;
            }
            while (n > 0 && out[n - 1] != '/') {
                n--;
            }
            if (n > 0) {
                n--; /* the '/' before the dropped segment */
            }
            continue;
        }
        if (n > 0) {
            out[n++] = '/';
        }
        memcpy(out + n, seg, slen);
        n += slen;
    }
    out[n] = '\0';
    *ret_len = n;
    return 0;
}

/* Whether `path` lies under prefix `pre` ("" is everything): equal, or below it. */
static int under(const char *path, size_t len, const char *pre)
{
    size_t plen = strlen(pre);
    if (plen == 0) {
        return 1;
    }
    return len >= plen && memcmp(path, pre, plen) == 0 && (len == plen || path[plen] == '/');
}

static int in_outputs(const struct al_workspace *ws, const char *path, size_t len)
{
    for (size_t i = 0; i < ws->noutputs; i++) {
        if (under(path, len, ws->outputs[i])) {
            return 1;
        }
    }
    return 0;
}

/* The mount entry `path` lies in (or is), or -1. */
static int entry_of(const struct al_workspace *ws, const char *path, size_t len)
{
    for (size_t i = 0; i < ws->nentries; i++) {
        if (under(path, len, ws->entries[i].path)) {
            return (int)i;
        }
    }
    return -1;
}

/* The backend key of `path` in mount entry m: the entry's prefix and the rest of the path. */
static char *mount_key(const struct al_workspace *ws, int m, const char *path, size_t len)
{
    const struct ws_mount_entry *me = &ws->entries[m];
    size_t elen = strlen(me->path);
    const char *rest = path + elen + (len > elen ? 1 : 0);
    size_t rlen = len - (size_t)(rest - path);
    size_t plen = strlen(me->prefix);
    char *key = malloc(plen + rlen + 1);
    if (key) {
        memcpy(key, me->prefix, plen);
        memcpy(key + plen, rest, rlen);
        key[plen + rlen] = '\0';
    }
    return key;
}

int ws_ensure_dirs(struct al_workspace *ws)
{
    for (size_t i = 0; i < ws->nentries; i++) {
        if (add_parents(ws, ws->entries[i].path, strlen(ws->entries[i].path), -1) != 0) {
            return -1;
        }
    }
    /* the output prefixes exist as directories, so a guest can write into them at once */
    for (size_t i = 0; i < ws->noutputs; i++) {
        size_t len = strlen(ws->outputs[i]);
        if (len == 0 || entry_of(ws, ws->outputs[i], len) >= 0 ||
            ws_find(ws, ws->outputs[i], len)) {
            continue;
        }
        int blocked = 0; /* a file of a snapshot where the prefix needs a directory */
        for (size_t k = 0; k < len; k++) {
            struct ws_node *a = ws->outputs[i][k] == '/' ? ws_find(ws, ws->outputs[i], k) : NULL;
            blocked |= a && !a->is_dir;
        }
        if (blocked) {
            continue;
        }
        struct ws_node *n = node_new(ws->outputs[i], len, 1, -1);
        if (!n || tree_insert(ws, n) != 0 || add_parents(ws, ws->outputs[i], len, -1) != 0) {
            ws_node_free(n);
            return -1;
        }
    }
    return 0;
}

void ws_drop_own_nodes(struct al_workspace *ws)
{
    size_t k = 0;
    for (size_t i = 0; i < ws->nnodes; i++) {
        struct ws_node *n = ws->nodes[i];
        if (n->mount < 0 && !n->entry) {
            if (!n->is_dir) {
                ws->files--;
                ws->bytes -= n->len;
            }
            ws_node_free(n);
        } else {
            ws->nodes[k++] = n;
        }
    }
    ws->nnodes = k;
}

/* ------------------------------------------------------------------ the manifest */

static int is_uint(const struct json_node *n, uint64_t *ret)
{
    if (!n || n->type != JSON_NUMBER || n->num < 0 || n->num > 9007199254740991.0 ||
        n->num != (double)(uint64_t)n->num) {
        return 0;
    }
    *ret = (uint64_t)n->num;
    return 1;
}

static enum al_code parse_limits(struct al_workspace *ws, const struct json_node *lim,
                                 struct al_error *reterr)
{
    if (lim->type != JSON_OBJECT) {
        return error_set(reterr, AL_CONFIG_ERROR, "workspace manifest: limits is not an object");
    }
    for (const struct json_node *m = lim->child; m; m = m->next) {
        uint64_t *slot;
        uint64_t max;
        if (strcmp(m->key, "bytes") == 0) {
            slot = &ws->max_bytes;
            max = AL_WORKSPACE_BYTES_MAX;
        } else if (strcmp(m->key, "files") == 0) {
            slot = &ws->max_files;
            max = AL_WORKSPACE_FILES_MAX;
        } else if (strcmp(m->key, "file_bytes") == 0) {
            slot = &ws->max_file_bytes;
            max = AL_WORKSPACE_FILE_BYTES_MAX;
        } else {
            return error_set(reterr, AL_CONFIG_ERROR,
                             "workspace manifest: unknown member limits.%.64s", m->key);
        }
        uint64_t v;
        if (!is_uint(m, &v) || v == 0 || v > max) {
            return error_set(reterr, AL_CONFIG_ERROR,
                             "workspace manifest: limits.%s must be an integer from 1 to %llu",
                             m->key, (unsigned long long)max);
        }
        *slot = v;
    }
    return AL_OK;
}

/* Normalizes a manifest path (entry or output) into a malloc'd string; NULL with reterr. */
static char *manifest_path(const struct al_workspace *ws, const char *what, const char *p,
                           size_t len, struct al_error *reterr, enum al_code *rc)
{
    char norm[WS_PATH_MAX + 1];
    size_t nlen;
    struct ws_err e = { 0 };
    int dotdot = 0;
    for (size_t i = 0; i + 1 < len + 1; i++) {
        if ((i == 0 || p[i - 1] == '/') && i + 1 < len && p[i] == '.' && p[i + 1] == '.' &&
            (i + 2 == len || p[i + 2] == '/')) {
            dotdot = 1;
        }
    }
    if (dotdot || normalize(ws->root, ws->root_len, p, len, norm, &nlen, &e, "open") != 0) {
        *rc = error_set(reterr, AL_CONFIG_ERROR,
                        "workspace manifest: %s '%.100s' is not a path inside the root", what, p);
        return NULL;
    }
    char *copy = buf_dup(norm, nlen);
    if (!copy) {
        *rc = error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    return copy;
}

/* Adds an inline entry: a file with its content, or a directory. */
static enum al_code add_inline(struct al_workspace *ws, const char *path, const struct json_node *v,
                               int is_dir, struct al_error *reterr)
{
    size_t len = strlen(path);
    if (len == 0) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "workspace manifest: an entry cannot be the root itself");
    }
    struct ws_node *had = ws_find(ws, path, len);
    if (had && is_dir && had->is_dir && !had->entry) {
        return AL_OK; /* made already as the parent of another entry */
    }
    if (had) {
        return error_set(reterr, AL_CONFIG_ERROR, "workspace manifest: entry '%.100s' is given twice",
                         path);
    }
    const struct json_node *content = json_get(v, "content");
    if (!is_dir && content && content->type != JSON_STRING) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "workspace manifest: entries['%.100s'].content is not a string", path);
    }
    size_t clen = !is_dir && content ? content->str_len : 0;
    if (!is_dir && (clen > ws->max_file_bytes || ws->bytes + clen > ws->max_bytes ||
                    ws->files + 1 > ws->max_files)) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "workspace manifest: entry '%.100s' passes the workspace's limits", path);
    }
    struct ws_node *n = node_new(path, len, is_dir, -1);
    if (!n || (clen && !(n->data = buf_dup(content->str, clen)))) {
        ws_node_free(n);
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    n->len = clen;
    if (tree_insert(ws, n) != 0 || add_parents(ws, path, len, -1) != 0) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    return AL_OK;
}

static enum al_code add_mount_entry(struct al_workspace *ws, const char *path,
                                    const struct json_node *v, struct al_error *reterr)
{
    const struct json_node *mount = json_get(v, "mount");
    const struct json_node *prefix = json_get(v, "prefix");
    const struct json_node *ro = json_get(v, "read_only");
    if (!mount || mount->type != JSON_STRING || mount->str_len == 0 ||
        memchr(mount->str, '\0', mount->str_len)) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "workspace manifest: entries['%.100s'].mount must name a mount", path);
    }
    if (prefix && (prefix->type != JSON_STRING || memchr(prefix->str, '\0', prefix->str_len) ||
                   prefix->str[0] == '/' || strstr(prefix->str, "..") != NULL)) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "workspace manifest: entries['%.100s'].prefix must be a relative key "
                         "prefix without '..'",
                         path);
    }
    if (ro && ro->type != JSON_TRUE && ro->type != JSON_FALSE) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "workspace manifest: entries['%.100s'].read_only is not a boolean", path);
    }
    size_t len = strlen(path);
    if (len == 0) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "workspace manifest: an entry cannot be the root itself");
    }
    if (ws_find(ws, path, len)) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "workspace manifest: mount entry '%.100s' is given twice or holds "
                         "another entry",
                         path);
    }
    struct ws_mount_entry *grown =
            realloc(ws->entries, (ws->nentries + 1) * sizeof *ws->entries);
    if (!grown) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    ws->entries = grown;
    struct ws_mount_entry *me = &ws->entries[ws->nentries];
    memset(me, 0, sizeof *me);
    me->writable = ro && ro->type == JSON_FALSE;
    me->backend = -1;
    size_t plen = prefix ? prefix->str_len : 0;
    me->path = strdup(path);
    me->name = strdup(mount->str);
    me->prefix = malloc(plen + 2);
    if (!me->path || !me->name || !me->prefix) {
        free(me->path);
        free(me->name);
        free(me->prefix);
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    if (plen) {
        memcpy(me->prefix, prefix->str, plen);
    }
    if (plen && me->prefix[plen - 1] != '/') {
        me->prefix[plen++] = '/';
    }
    me->prefix[plen] = '\0';
    ws->nentries++;
    struct ws_node *n = node_new(path, len, 1, (int)ws->nentries - 1);
    if (!n) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    n->entry = 1;
    if (tree_insert(ws, n) != 0 || add_parents(ws, path, len, -1) != 0) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    return AL_OK;
}

/* Checks entries against each other and the outputs once all are read. */
static enum al_code check_entries(struct al_workspace *ws, struct al_error *reterr)
{
    for (size_t i = 0; i < ws->nentries; i++) {
        const struct ws_mount_entry *me = &ws->entries[i];
        if (me->writable && !in_outputs(ws, me->path, strlen(me->path))) {
            return error_set(reterr, AL_CONFIG_ERROR,
                             "workspace manifest: entries['%.100s'] has read_only false but is "
                             "not under an outputs prefix",
                             me->path);
        }
        for (size_t k = 0; k < ws->nnodes; k++) {
            const struct ws_node *n = ws->nodes[k];
            if (n->path_len > strlen(me->path) && under(n->path, n->path_len, me->path)) {
                return error_set(reterr, AL_CONFIG_ERROR,
                                 "workspace manifest: entry '%.100s' lies inside mount entry "
                                 "'%.100s'",
                                 n->path, me->path);
            }
            if (!n->is_dir && under(me->path, strlen(me->path), n->path)) {
                return error_set(reterr, AL_CONFIG_ERROR,
                                 "workspace manifest: mount entry '%.100s' lies inside file "
                                 "'%.100s'",
                                 me->path, n->path);
            }
        }
    }
    return AL_OK;
}

static enum al_code parse_manifest(struct al_workspace *ws, const struct json_node *root,
                                   struct al_error *reterr)
{
    enum al_code rc = AL_OK;
    if (root->type != JSON_OBJECT) {
        return error_set(reterr, AL_CONFIG_ERROR, "workspace manifest: not a JSON object");
    }
    static const char *const known[] = { "version", "root", "entries", "outputs", "limits" };
    for (const struct json_node *m = root->child; m; m = m->next) {
        size_t k = 0;
        while (k < sizeof known / sizeof known[0] && strcmp(known[k], m->key) != 0) {
            k++;
        }
        if (k == sizeof known / sizeof known[0]) {
            return error_set(reterr, AL_CONFIG_ERROR, "workspace manifest: unknown member %.64s",
                             m->key);
        }
    }
    const struct json_node *version = json_get(root, "version");
    uint64_t v;
    if (version && (!is_uint(version, &v) || v != 1)) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "workspace manifest: version must be 1 (the only version)");
    }
    const struct json_node *r = json_get(root, "root");
    const char *rs = "/workspace";
    if (r) {
        if (r->type != JSON_STRING || r->str_len == 0 || r->str[0] != '/' ||
            r->str_len > 1024 || memchr(r->str, '\0', r->str_len) ||
            (r->str_len > 1 && r->str[r->str_len - 1] == '/') || strstr(r->str, "//") ||
            strstr(r->str, "/./") || strstr(r->str, "/../") ||
            (r->str_len >= 3 && strcmp(r->str + r->str_len - 3, "/..") == 0) ||
            (r->str_len >= 2 && strcmp(r->str + r->str_len - 2, "/.") == 0)) {
            return error_set(reterr, AL_CONFIG_ERROR,
                             "workspace manifest: root must be an absolute normalized path "
                             "(\"/workspace\")");
        }
        rs = r->str;
    }
    if (!(ws->root = strdup(rs))) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    ws->root_len = strlen(ws->root);
    const struct json_node *lim = json_get(root, "limits");
    if (lim && (rc = parse_limits(ws, lim, reterr)) != AL_OK) {
        return rc;
    }
    const struct json_node *outs = json_get(root, "outputs");
    if (outs) {
        if (outs->type != JSON_ARRAY) {
            return error_set(reterr, AL_CONFIG_ERROR,
                             "workspace manifest: outputs is not an array of paths");
        }
        ws->outputs = calloc(outs->count + 1, sizeof *ws->outputs);
        if (!ws->outputs) {
            return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        }
        for (const struct json_node *o = outs->child; o; o = o->next) {
            if (o->type != JSON_STRING) {
                return error_set(reterr, AL_CONFIG_ERROR,
                                 "workspace manifest: outputs[%zu] is not a string",
                                 ws->noutputs);
            }
            char *p = manifest_path(ws, "output", o->str, o->str_len, reterr, &rc);
            if (!p) {
                return rc;
            }
            ws->outputs[ws->noutputs++] = p;
        }
    }
    const struct json_node *entries = json_get(root, "entries");
    if (entries && entries->type != JSON_OBJECT) {
        return error_set(reterr, AL_CONFIG_ERROR, "workspace manifest: entries is not an object");
    }
    for (const struct json_node *e = entries ? entries->child : NULL; e; e = e->next) {
        char *path = manifest_path(ws, "entry", e->key, e->key_len, reterr, &rc);
        if (!path) {
            return rc;
        }
        const struct json_node *type = e->type == JSON_OBJECT ? json_get(e, "type") : NULL;
        static const char *const members[] = { "type",   "content",  "mount",
                                               "prefix", "read_only" };
        for (const struct json_node *m = e->type == JSON_OBJECT ? e->child : NULL; m && !rc;
             m = m->next) {
            size_t k = 0;
            while (k < sizeof members / sizeof members[0] && strcmp(members[k], m->key) != 0) {
                k++;
            }
            if (k == sizeof members / sizeof members[0]) {
                rc = error_set(reterr, AL_CONFIG_ERROR,
                               "workspace manifest: unknown member entries['%.100s'].%.64s", path,
                               m->key);
            }
        }
        if (!rc && (!type || type->type != JSON_STRING)) {
            rc = error_set(reterr, AL_CONFIG_ERROR,
                           "workspace manifest: entries['%.100s'] needs a type (file, dir, "
                           "local_dir, s3_mount)",
                           path);
        } else if (!rc && strcmp(type->str, "file") == 0) {
            rc = add_inline(ws, path, e, 0, reterr);
        } else if (!rc && strcmp(type->str, "dir") == 0) {
            rc = add_inline(ws, path, e, 1, reterr);
        } else if (!rc && (strcmp(type->str, "local_dir") == 0 ||
                           strcmp(type->str, "s3_mount") == 0)) {
            rc = add_mount_entry(ws, path, e, reterr);
        } else if (!rc) {
            rc = error_set(reterr, AL_CONFIG_ERROR,
                           "workspace manifest: entries['%.100s'].type '%.32s' is not one of "
                           "file, dir, local_dir, s3_mount",
                           path, type->str);
        }
        free(path);
        if (rc) {
            return rc;
        }
    }
    for (size_t i = 0; i < ws->noutputs; i++) {
        struct ws_node *n = ws_find(ws, ws->outputs[i], strlen(ws->outputs[i]));
        if (n && !n->is_dir) {
            return error_set(reterr, AL_CONFIG_ERROR,
                             "workspace manifest: output '%.100s' is a file entry", n->path);
        }
    }
    if (ws_ensure_dirs(ws) != 0) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    return check_entries(ws, reterr);
}

enum al_code al_workspace_new(const char *manifest, size_t len, struct al_workspace **ret,
                              struct al_error *reterr)
{
    if (!manifest || !ret) {
        return error_set(reterr, AL_CONFIG_ERROR, "al_workspace_new: NULL argument");
    }
    struct json_doc *doc = NULL;
    struct al_error jerr;
    if (json_parse(manifest, len, WS_JSON_DEPTH, &doc, &jerr) != AL_OK) {
        return error_set(reterr, jerr.code == AL_INTERNAL_ERROR ? AL_INTERNAL_ERROR
                                                                : AL_CONFIG_ERROR,
                         "workspace manifest: not JSON (%s)", jerr.message);
    }
    struct al_workspace *ws = calloc(1, sizeof *ws);
    if (!ws) {
        json_doc_free(doc);
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    ws->max_bytes = AL_WORKSPACE_BYTES_DEFAULT;
    ws->max_files = AL_WORKSPACE_FILES_DEFAULT;
    ws->max_file_bytes = AL_WORKSPACE_FILE_BYTES_DEFAULT;
    ws->tail = &ws->head;
    pthread_mutex_init(&ws->mu, NULL);
    pthread_cond_init(&ws->cv, NULL);
    /* limits are read before entries whatever the member order: parse_manifest does */
    enum al_code rc = parse_manifest(ws, json_root(doc), reterr);
    json_doc_free(doc);
    if (rc != AL_OK) {
        al_workspace_free(ws);
        return rc;
    }
    *ret = ws;
    return AL_OK;
}

void al_workspace_free(struct al_workspace *ws)
{
    if (!ws) {
        return;
    }
    ws_thread_stop(ws);
    for (size_t i = 0; i < ws->nnodes; i++) {
        ws_node_free(ws->nodes[i]);
    }
    free(ws->nodes);
    for (size_t i = 0; i < ws->nentries; i++) {
        free(ws->entries[i].path);
        free(ws->entries[i].name);
        free(ws->entries[i].prefix);
    }
    free(ws->entries);
    for (size_t i = 0; i < ws->nbackends; i++) {
        free(ws->backends[i].name);
        ws_local_free(ws->backends[i].local);
    }
    free(ws->backends);
    for (size_t i = 0; i < ws->noutputs; i++) {
        free(ws->outputs[i]);
    }
    free(ws->outputs);
    free(ws->root);
    pthread_mutex_destroy(&ws->mu);
    pthread_cond_destroy(&ws->cv);
    free(ws);
}

/* ------------------------------------------------------------------ mounts */

static enum al_code set_backend(struct al_workspace *ws, const char *name,
                                const struct al_mount_ops *ops, void *ud, struct ws_local *local)
{
    int used = 0;
    for (size_t i = 0; i < ws->nentries; i++) {
        used |= strcmp(ws->entries[i].name, name) == 0;
    }
    if (!used) {
        ws_local_free(local);
        return AL_CONFIG_ERROR;
    }
    ws_thread_drain(ws);
    size_t b = 0;
    while (b < ws->nbackends && strcmp(ws->backends[b].name, name) != 0) {
        b++;
    }
    if (b == ws->nbackends) {
        struct ws_backend *grown = realloc(ws->backends, (b + 1) * sizeof *grown);
        char *copy = strdup(name);
        if (!grown || !copy) {
            if (grown) {
                ws->backends = grown;
            }
            free(copy);
            ws_local_free(local);
            return AL_INTERNAL_ERROR;
        }
        ws->backends = grown;
        ws->backends[b] = (struct ws_backend){ .name = copy };
        ws->nbackends++;
    }
    ws_local_free(ws->backends[b].local);
    ws->backends[b].ops = ops;
    ws->backends[b].ud = ud;
    ws->backends[b].local = local;
    for (size_t i = 0; i < ws->nentries; i++) {
        if (strcmp(ws->entries[i].name, name) == 0) {
            ws->entries[i].backend = (int)b;
        }
    }
    return AL_OK;
}

enum al_code al_workspace_set_mount(struct al_workspace *ws, const char *name,
                                    const struct al_mount_ops *ops, void *ud)
{
    if (!ws || !name || !ops || ops->version != AL_MOUNT_OPS_VERSION || !ops->stat ||
        !ops->read || !ops->list) {
        return AL_CONFIG_ERROR;
    }
    return set_backend(ws, name, ops, ud, NULL);
}

enum al_code al_workspace_set_mount_local(struct al_workspace *ws, const char *name,
                                          const char *dir)
{
    if (!ws || !name || !dir) {
        return AL_CONFIG_ERROR;
    }
    struct ws_local *l = ws_local_new(dir);
    if (!l) {
        return AL_CONFIG_ERROR;
    }
    return set_backend(ws, name, &ws_local_ops, l, l);
}

const char *ws_missing_mount(const struct al_workspace *ws)
{
    for (size_t i = 0; i < ws->nentries; i++) {
        if (ws->entries[i].backend < 0) {
            return ws->entries[i].name;
        }
    }
    return NULL;
}

uint64_t ws_args_max(const struct al_workspace *ws)
{
    return 2 * ws->max_file_bytes + 64 * 1024;
}

void al_workspace_set_observer(struct al_workspace *ws, al_workspace_op_fn *fn, void *ud)
{
    if (ws) {
        ws_thread_drain(ws);
        ws->observer = fn;
        ws->observer_ud = fn ? ud : NULL;
    }
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

static const struct ws_backend *backend_of(const struct al_workspace *ws, int m)
{
    return &ws->backends[ws->entries[m].backend];
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
    static signed char dec[256];
    static int ready;
    if (!ready) {
        memset(dec, -1, sizeof dec);
        for (int i = 0; i < 64; i++) {
            dec[(unsigned char)b64[i]] = (signed char)i;
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
    const struct json_node *b = buffer && buffer->type == JSON_OBJECT ? json_get(buffer, "base64")
                                                                      : NULL;
    uint64_t off = 0;
    uint64_t len = 0;
    if (!t || t->type != JSON_STRING || strcmp(t->str, "Uint8Array") != 0 || !b ||
        b->type != JSON_STRING || !is_uint(json_get(v, "byteOffset"), &off) ||
        !is_uint(json_get(v, "length"), &len)) {
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
    return normalize(c->ws->root, c->ws->root_len, p->str, p->str_len, out, ret_len, c->e,
                     syscall);
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

/* May the guest change `path`? EROFS outside the outputs and in read-only mounts. */
static int writable(struct ws_ctx *c, const char *path, size_t len, const char *shown,
                    const char *syscall)
{
    int m = entry_of(c->ws, path, len);
    if (m >= 0 ? !c->ws->entries[m].writable : !in_outputs(c->ws, path, len)) {
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
    int m = entry_of(ws, path, len);
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
    char *key = mount_key(ws, m, path, len);
    char err[256] = "";
    uint64_t size = 0;
    int is_dir = 0;
    if (!key) {
        ws_fail(c->e, "ENOMEM", "out of memory");
        return -1;
    }
    const struct ws_backend *be = backend_of(ws, m);
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
    if (path_arg(c, 0, path, &len, &shown, "open") != 0) {
        return;
    }
    memcpy(c->path, path, len + 1);
    c->path_len = len;
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
    int m = entry_of(ws, path, len);
    struct ws_node *node = ws_find(ws, path, len);
    if (node && node->is_dir) {
        ws_fail_path(c->e, "EISDIR", syscall, shown);
        return;
    }
    if (m < 0 && parent_is_dir(c, path, len, shown, syscall) != 0) {
        return;
    }
    char *base = NULL; /* an append to a mount's file not written yet: its bytes */
    size_t base_len = 0;
    if (append && m >= 0 && !node) {
        const char *d;
        char *own;
        struct ws_err quiet = { 0 };
        struct ws_err *keep = c->e;
        c->e = &quiet;
        int r = read_bytes(c, path, len, shown, &d, &base_len, &own);
        c->e = keep;
        if (r == 0) {
            base = own ? own : buf_dup(d, base_len);
        } else if (strcmp(quiet.code, "ENOENT") != 0) {
            *c->e = quiet;
            return;
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
        ws_fail(c->e, "ENOSPC", "no space left on device, write '%.200s' (the workspace holds at "
                                "most %llu bytes in %llu files)",
                shown, (unsigned long long)ws->max_bytes, (unsigned long long)ws->max_files);
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
    free(base);
    if (!node) {
        node = node_new(path, len, 0, m);
        if (!node || tree_insert(ws, node) != 0 ||
            (m >= 0 && add_parents(ws, path, len, m) != 0)) {
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
    if (path_arg(c, 0, path, &len, &shown, "open") != 0) {
        return;
    }
    memcpy(c->path, path, len + 1);
    c->path_len = len;
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
    for (size_t i = 0; i < l->n; i++) {
        if (strlen(l->names[i]) == len && memcmp(l->names[i], name, len) == 0) {
            return; /* written over a mount's file: listed once */
        }
    }
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
    int m = entry_of(ws, path, len);
    if (m >= 0 && (!n || n->entry)) {
        char *key = mount_key(ws, m, path, len);
        char err[256] = "";
        if (!key) {
            ws_fail(c->e, "ENOMEM", "out of memory");
            return -1;
        }
        const struct ws_backend *be = backend_of(ws, m);
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
    descendants(ws, path, len, &lo, &hi);
    size_t skip = len ? len + 1 : 0;
    for (size_t i = lo; i < hi; i++) {
        const struct ws_node *d = ws->nodes[i];
        if (!memchr(d->path + skip, '/', d->path_len - skip)) {
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

/* The listing's indexes in name order. */
static size_t *sorted(const struct listing *l)
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
    qsort(ptrs, l->n, sizeof *ptrs, name_cmp);
    for (size_t i = 0; i < l->n; i++) {
        order[i] = (size_t)(ptrs[i] - l->names);
    }
    free(ptrs);
    return order;
}

static void op_readdir(struct ws_ctx *c)
{
    char path[WS_PATH_MAX + 1];
    size_t len;
    const char *shown;
    if (path_arg(c, 0, path, &len, &shown, "scandir") != 0) {
        return;
    }
    memcpy(c->path, path, len + 1);
    c->path_len = len;
    struct listing l = { 0 };
    if (list_dir(c, path, len, shown, &l) == 0) {
        size_t *order = sorted(&l);
        if (!order) {
            ws_fail(c->e, "ENOMEM", "out of memory");
        } else {
            buf_append_byte(c->answer, '[');
            for (size_t k = 0; k < l.n; k++) {
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
    int m = entry_of(ws, path, len);
    if (m < 0) {
        return 0;
    }
    char *key = mount_key(ws, m, path, len);
    char err[256] = "";
    int is_dir = 0;
    if (!key) {
        ws_fail(c->e, "ENOMEM", "out of memory");
        return -1;
    }
    const struct ws_backend *be = backend_of(ws, m);
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
    if (path_arg(c, 0, path, &len, &shown, exists ? "access" : "stat") != 0) {
        return;
    }
    memcpy(c->path, path, len + 1);
    c->path_len = len;
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
    if (path_arg(c, 0, path, &len, &shown, "mkdir") != 0) {
        return;
    }
    memcpy(c->path, path, len + 1);
    c->path_len = len;
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
    int m = entry_of(ws, path, len);
    if (recursive) {
        for (size_t i = 0; i < len; i++) {
            struct ws_node *a = path[i] == '/' ? ws_find(ws, path, i) : NULL;
            if (a && !a->is_dir) {
                ws_fail_path(c->e, "ENOTDIR", "mkdir", shown);
                return;
            }
        }
    } else if (m < 0 && parent_is_dir(c, path, len, shown, "mkdir") != 0) {
        return;
    }
    n = node_new(path, len, 1, m);
    if (!n || tree_insert(ws, n) != 0 || add_parents(ws, path, len, m) != 0) {
        ws_node_free(n);
        ws_fail(c->e, "ENOMEM", "out of memory");
    }
}

static void op_rm(struct ws_ctx *c)
{
    char path[WS_PATH_MAX + 1];
    size_t len;
    const char *shown;
    if (path_arg(c, 0, path, &len, &shown, "rm") != 0) {
        return;
    }
    memcpy(c->path, path, len + 1);
    c->path_len = len;
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
    descendants(ws, path, len, &lo, &hi);
    if (n->is_dir && !recursive && (!dir_only || hi > lo)) {
        if (dir_only) {
            ws_fail_path(c->e, "ENOTEMPTY", "rmdir", shown);
        } else {
            ws_fail(c->e, "EISDIR", "Path is a directory: rm returned EISDIR (is a directory) "
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
        ws_node_free(tree_remove(ws, k));
    }
    ws_node_free(tree_remove(ws, i));
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
    if (entry_of(ws, from, flen) != entry_of(ws, to, tlen)) {
        ws_fail(c->e, "EXDEV", "cross-device link not permitted, rename '%.100s' -> '%.100s'",
                fshown, tshown);
        return;
    }
    struct ws_node *src = ws_find(ws, from, flen);
    if (!src || src->entry) {
        ws_fail(c->e, src ? "EROFS" : "ENOENT", "%s, rename '%.100s' -> '%.100s'",
                src ? "read-only file system" : "no such file or directory", fshown, tshown);
        return;
    }
    if (under(to, tlen, from)) {
        if (tlen != flen) {
            ws_fail(c->e, "EINVAL", "invalid argument, rename '%.100s' -> '%.100s'", fshown,
                    tshown);
        }
        return; /* onto itself: nothing to do */
    }
    if (entry_of(ws, to, tlen) < 0 && parent_is_dir(c, to, tlen, tshown, "rename") != 0) {
        return;
    }
    int found;
    size_t ti = ws_index(ws, to, tlen, &found);
    size_t lo;
    size_t hi;
    if (found) {
        struct ws_node *dst = ws->nodes[ti];
        descendants(ws, to, tlen, &lo, &hi);
        if (dst->entry || (dst->is_dir && !src->is_dir)) {
            ws_fail(c->e, "EISDIR", "illegal operation on a directory, rename '%.100s' -> "
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
            ws_fail(c->e, "ENOTEMPTY", "directory not empty, rename '%.100s' -> '%.100s'",
                    fshown, tshown);
            return;
        }
        ws_node_free(tree_remove(ws, ti));
    }
    /* the source and its descendants, taken out, renamed, put back */
    int sfound;
    size_t si = ws_index(ws, from, flen, &sfound);
    descendants(ws, from, flen, &lo, &hi);
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
        tree_remove(ws, k);
    }
    tree_remove(ws, si);
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
        if (tree_insert(ws, n) != 0) {
            ws_node_free(n);
            ws_fail(c->e, "ENOMEM", "out of memory");
        }
    }
    free(moved);
}

/* ------------------------------------------------------------------ glob */

/* Matches a glob pattern against a path: '*' any run of characters but '/', '?' one such
 * character, '**' as a whole segment any number of segments (zero included). */
static int glob_match(const char *p, size_t plen, const char *s, size_t slen)
{
    if (plen == 0) {
        return slen == 0;
    }
    if (plen >= 2 && p[0] == '*' && p[1] == '*' && (plen == 2 || p[2] == '/')) {
        const char *rest = plen == 2 ? p + 2 : p + 3;
        size_t rlen = plen == 2 ? 0 : plen - 3;
        if (plen == 2) {
            return 1; /* trailing '**': everything below */
        }
        /* zero segments, or skip one segment at a time */
        if (glob_match(rest, rlen, s, slen)) {
            return 1;
        }
        for (size_t i = 0; i < slen; i++) {
            if (s[i] == '/' && glob_match(rest, rlen, s + i + 1, slen - i - 1)) {
                return 1;
            }
        }
        return 0;
    }
    if (p[0] == '*') {
        for (size_t i = 0;; i++) {
            if (glob_match(p + 1, plen - 1, s + i, slen - i)) {
                return 1;
            }
            if (i == slen || s[i] == '/') {
                return 0;
            }
        }
    }
    if (slen == 0) {
        return 0;
    }
    if (p[0] == '?' ? s[0] != '/' : p[0] == s[0]) {
        return glob_match(p + 1, plen - 1, s + 1, slen - 1);
    }
    return 0;
}

struct glob_out {
    struct listing found;
    size_t walked;
};

/* Walks a mount directory (key) below tree path `path`, adding matches. */
static int glob_walk_mount(struct ws_ctx *c, int m, const char *path, size_t len,
                           const char *pat, size_t plen, struct glob_out *g, int depth)
{
    struct listing l = { 0 };
    char *key = mount_key(c->ws, m, path, len);
    char err[256] = "";
    if (!key) {
        ws_fail(c->e, "ENOMEM", "out of memory");
        return -1;
    }
    const struct ws_backend *be = backend_of(c->ws, m);
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
        int n = snprintf(child, sizeof child, "%.*s/%s", (int)len, path, l.names[i]);
        if (n < 0 || (size_t)n >= sizeof child) {
            continue;
        }
        if (glob_match(pat, plen, child, (size_t)n)) {
            listing_add(&g->found, child, (size_t)n, 0, 0);
        }
        if (l.dirs[i] && depth < WS_DEPTH_MAX) {
            rc = glob_walk_mount(c, m, child, (size_t)n, pat, plen, g, depth + 1);
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
    if (normalize(c->ws->root, c->ws->root_len, p->str, p->str_len, pat, &plen, c->e, "glob") !=
        0) {
        return;
    }
    memcpy(c->path, pat, plen + 1);
    c->path_len = plen;
    struct al_workspace *ws = c->ws;
    struct glob_out g = { 0 };
    for (size_t i = 0; i < ws->nnodes; i++) {
        const struct ws_node *n = ws->nodes[i];
        if (glob_match(pat, plen, n->path, n->path_len)) {
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
            glob_walk_mount(c, (int)m, path, elen, pat, plen, &g, 0);
        }
    }
    if (!c->e->code && g.found.oom) {
        ws_fail(c->e, "ENOMEM", "out of memory");
    }
    if (!c->e->code) {
        size_t *order = sorted(&g.found);
        if (!order) {
            ws_fail(c->e, "ENOMEM", "out of memory");
        } else {
            buf_append_byte(c->answer, '[');
            for (size_t k = 0; k < g.found.n; k++) {
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
static void exec_op(struct al_workspace *ws, int op, const char *args, size_t len,
                    struct buf *answer, struct ws_err *e, struct ws_ctx *c)
{
    struct json_doc *doc = NULL;
    struct al_error jerr;
    memset(c, 0, sizeof *c);
    c->ws = ws;
    c->op = op;
    c->answer = answer;
    c->e = e;
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
        ws_fail(e, "ENOMEM", "out of memory for the answer");
    }
}

void ws_run_job(struct al_workspace *ws, struct ws_job *job)
{
    struct buf answer;
    struct ws_err e = { 0 };
    struct ws_ctx *c = malloc(sizeof *c);
    buf_init(&answer, SIZE_MAX / 2);
    if (!c) {
        if (job->call) {
            al_call_throw(job->call, "ENOMEM: out of memory");
        }
        return;
    }
    exec_op(ws, job->op, job->args, job->len, &answer, &e, c);
    if (job->call) {
        if (ws->observer) {
            struct al_workspace_op o = {
                .op = ws_op_names[job->op],
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

void ws_replay(struct al_workspace *ws, int op, const char *args, size_t len)
{
    struct ws_job job = { .op = op, .len = len };
    if (!has_mounts(ws)) {
        job.args = (char *)args;
        ws_run_job(ws, &job);
        return;
    }
    struct ws_job *j = malloc(sizeof *j);
    char *copy = buf_dup(args, len);
    if (!j || !copy || (*j = job, j->args = copy, ws_thread_submit(ws, j) != 0)) {
        free(j);
        free(copy);
    }
}

/* ------------------------------------------------------------------ outputs and commit */

void al_workspace_outputs(const struct al_workspace *ws, al_workspace_file_fn *fn, void *ud)
{
    if (!ws || !fn) {
        return;
    }
    ws_thread_drain((struct al_workspace *)ws);
    for (size_t i = 0; i < ws->nnodes; i++) {
        const struct ws_node *n = ws->nodes[i];
        if (n->is_dir || !in_outputs(ws, n->path, n->path_len)) {
            continue;
        }
        uint8_t d[CONT_DIGEST];
        char hex[CONT_DIGEST * 2 + 1];
        cont_sha256(n->data ? n->data : "", n->len, d);
        hex_encode(d, sizeof d, hex);
        char *key = n->mount >= 0 ? mount_key(ws, n->mount, n->path, n->path_len) : NULL;
        if (n->mount >= 0 && !key) {
            continue; /* out of memory */
        }
        struct al_workspace_file f = {
            .path = n->path,
            .data = n->data ? n->data : "",
            .len = n->len,
            .sha256 = hex,
            .mount = n->mount >= 0 ? ws->entries[n->mount].name : NULL,
            .key = key,
        };
        fn(&f, ud);
        free(key);
    }
}

enum al_code al_workspace_commit(struct al_workspace *ws, struct al_error *reterr)
{
    if (!ws) {
        return error_set(reterr, AL_CONFIG_ERROR, "al_workspace_commit: NULL workspace");
    }
    ws_thread_drain(ws);
    enum al_code rc = AL_OK;
    size_t i = 0;
    for (; i < ws->nnodes; i++) {
        const struct ws_node *n = ws->nodes[i];
        if (n->is_dir || n->mount < 0) {
            continue;
        }
        const struct ws_mount_entry *me = &ws->entries[n->mount];
        const struct ws_backend *be = backend_of(ws, n->mount);
        char *key = mount_key(ws, n->mount, n->path, n->path_len);
        char err[256] = "";
        if (!key) {
            rc = error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
            break;
        }
        int st = be->ops->write ? be->ops->write(be->ud, key, n->data ? n->data : "", n->len,
                                                 err, sizeof err)
                                : AL_MOUNT_ERROR;
        free(key);
        if (st != AL_MOUNT_OK) {
            rc = error_set(reterr, AL_INTERNAL_ERROR, "mount %s: writing %.200s failed: %s",
                           me->name, n->path,
                           be->ops->write ? (err[0] ? err : "the backend failed")
                                          : "the mount is read-only");
            break;
        }
    }
    if (rc == AL_OK) {
        return AL_OK;
    }
    /* all or nothing: what was written is removed again */
    while (i-- > 0) {
        const struct ws_node *n = ws->nodes[i];
        if (n->is_dir || n->mount < 0) {
            continue;
        }
        const struct ws_backend *be = backend_of(ws, n->mount);
        char *key = mount_key(ws, n->mount, n->path, n->path_len);
        char err[256];
        if (key && be->ops->remove) {
            be->ops->remove(be->ud, key, err, sizeof err);
        }
        free(key);
    }
    return rc;
}
