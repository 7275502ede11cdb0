/*
 * workspace.c - a run's files (docs/workspace.md): the manifest, the tree, the path rules,
 * mounts as the application sets them, outputs and commit. The guest's operations on them are
 * workspace_ops.c's.
 *
 * The tree is one array of nodes sorted by path (strcmp), so a directory's descendants are the
 * contiguous run of paths that start with "dir/", a lookup is a binary search and a listing is
 * a scan of that run. Mount entries are directories of the tree whose contents live in a
 * backend (struct al_mount_ops); what the guest writes into a writable mount entry is kept in
 * the tree too (node.mount) until al_workspace_commit.
 *
 * Every path the guest gives is untrusted: ws_normalize resolves '.' and '..' and refuses a
 * NUL, and a path that leaves the root - an absolute path elsewhere, '..' past the root -
 * answers EACCES before anything is looked up. The manifest is untrusted too (it may come from
 * a template's author): every member is checked, and anything unknown is refused.
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

/* ------------------------------------------------------------------ errors */

void ws_fail(struct ws_err *e, const char *code, const char *fmt, ...)
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

struct ws_node *ws_node_new(const char *path, size_t len, int is_dir, int mount)
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
int ws_tree_insert(struct al_workspace *ws, struct ws_node *n)
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
    } else {
        ws->dirs++;
    }
    return 0;
}

/* Takes node i out of the tree (the caller frees it). */
struct ws_node *ws_tree_remove(struct al_workspace *ws, size_t i)
{
    struct ws_node *n = ws->nodes[i];
    memmove(ws->nodes + i, ws->nodes + i + 1, (ws->nnodes - i - 1) * sizeof *ws->nodes);
    ws->nnodes--;
    if (!n->is_dir) {
        ws->files--;
        ws->bytes -= n->len;
    } else {
        ws->dirs--;
    }
    return n;
}

/* The range [*ret_lo, *ret_hi) of the descendants of directory `path` ("" = root: all). */
void ws_descendants(const struct al_workspace *ws, const char *path, size_t len, size_t *ret_lo,
                    size_t *ret_hi)
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
int ws_add_parents(struct al_workspace *ws, const char *path, size_t len, int mount)
{
    for (size_t i = 0; i < len; i++) {
        if (path[i] == '/' && !ws_find(ws, path, i)) {
            struct ws_node *d = ws_node_new(path, i, 1, mount);
            if (!d || ws_tree_insert(ws, d) != 0) {
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
int ws_normalize(const char *root, size_t root_len, const char *in, size_t in_len, char *out,
                 size_t *ret_len, struct ws_err *e, const char *syscall)
{
    if (memchr(in, '\0', in_len)) {
        ws_fail(e, "ERR_INVALID_ARG_VALUE",
                "The argument 'path' must be a string without null bytes. Received '%.100s'", in);
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
int ws_under(const char *path, size_t len, const char *pre)
{
    size_t plen = strlen(pre);
    if (plen == 0) {
        return 1;
    }
    return len >= plen && memcmp(path, pre, plen) == 0 && (len == plen || path[plen] == '/');
}

int ws_in_outputs(const struct al_workspace *ws, const char *path, size_t len)
{
    for (size_t i = 0; i < ws->noutputs; i++) {
        if (ws_under(path, len, ws->outputs[i])) {
            return 1;
        }
    }
    return 0;
}

/* The mount entry `path` lies in (or is), or -1. */
int ws_entry_of(const struct al_workspace *ws, const char *path, size_t len)
{
    for (size_t i = 0; i < ws->nentries; i++) {
        if (ws_under(path, len, ws->entries[i].path)) {
            return (int)i;
        }
    }
    return -1;
}

/* The backend key of `path` in mount entry m: the entry's prefix and the rest of the path. */
char *ws_mount_key(const struct al_workspace *ws, int m, const char *path, size_t len)
{
    const struct ws_mount_entry *me = &ws->entries[m];
    size_t elen = strlen(me->path);
    const char *rest = path + elen + (elen > 0 && len > elen ? 1 : 0);
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
        if (ws_add_parents(ws, ws->entries[i].path, strlen(ws->entries[i].path), -1) != 0) {
            return -1;
        }
    }
    /* the output prefixes exist as directories, so a guest can write into them at once */
    for (size_t i = 0; i < ws->noutputs; i++) {
        size_t len = strlen(ws->outputs[i]);
        if (len == 0 || ws_entry_of(ws, ws->outputs[i], len) >= 0 ||
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
        struct ws_node *n = ws_node_new(ws->outputs[i], len, 1, -1);
        if (!n || ws_tree_insert(ws, n) != 0 || ws_add_parents(ws, ws->outputs[i], len, -1) != 0) {
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
            } else {
                ws->dirs--;
            }
            ws_node_free(n);
        } else {
            ws->nodes[k++] = n;
        }
    }
    ws->nnodes = k;
}

/* ------------------------------------------------------------------ the manifest */

int ws_is_uint(const struct json_node *n, uint64_t *ret)
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
        if (!ws_is_uint(m, &v) || v == 0 || v > max) {
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
    if (dotdot || ws_normalize(ws->root, ws->root_len, p, len, norm, &nlen, &e, "open") != 0) {
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
        return error_set(reterr, AL_CONFIG_ERROR,
                         "workspace manifest: entry '%.100s' is given twice", path);
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
    struct ws_node *n = ws_node_new(path, len, is_dir, -1);
    if (!n || (clen && !(n->data = buf_dup(content->str, clen)))) {
        ws_node_free(n);
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    n->len = clen;
    if (ws_tree_insert(ws, n) != 0 || ws_add_parents(ws, path, len, -1) != 0) {
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
    if (ws_find(ws, path, len) || (len == 0 && ws->nnodes > 0)) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "workspace manifest: mount entry '%.100s' is given twice or holds "
                         "another entry",
                         path);
    }
    struct ws_mount_entry *grown = realloc(ws->entries, (ws->nentries + 1) * sizeof *ws->entries);
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
    struct ws_node *n = ws_node_new(path, len, 1, (int)ws->nentries - 1);
    if (!n) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    n->entry = 1;
    if (ws_tree_insert(ws, n) != 0 || ws_add_parents(ws, path, len, -1) != 0) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    return AL_OK;
}

/* Checks entries against each other and the outputs once all are read. */
static enum al_code check_entries(struct al_workspace *ws, struct al_error *reterr)
{
    for (size_t i = 0; i < ws->nentries; i++) {
        const struct ws_mount_entry *me = &ws->entries[i];
        /* a writable mount at the root is writable under the outputs prefixes only */
        if (me->writable && me->path[0] && !ws_in_outputs(ws, me->path, strlen(me->path))) {
            return error_set(reterr, AL_CONFIG_ERROR,
                             "workspace manifest: entries['%.100s'] has read_only false but is "
                             "not under an outputs prefix",
                             me->path);
        }
        for (size_t k = 0; k < ws->nnodes; k++) {
            const struct ws_node *n = ws->nodes[k];
            if (n->path_len > strlen(me->path) && ws_under(n->path, n->path_len, me->path) &&
                !(n->entry && n->path_len == 0)) {
                return error_set(reterr, AL_CONFIG_ERROR,
                                 "workspace manifest: entry '%.100s' lies inside mount entry "
                                 "'%.100s'",
                                 n->path, me->path);
            }
            if (!n->is_dir && ws_under(me->path, strlen(me->path), n->path)) {
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
    if (version && (!ws_is_uint(version, &v) || v != 1)) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "workspace manifest: version must be 1 (the only version)");
    }
    const struct json_node *r = json_get(root, "root");
    const char *rs = "/workspace";
    if (r) {
        if (r->type != JSON_STRING || r->str_len == 0 || r->str[0] != '/' || r->str_len > 1024 ||
            memchr(r->str, '\0', r->str_len) || (r->str_len > 1 && r->str[r->str_len - 1] == '/') ||
            strstr(r->str, "//") || strstr(r->str, "/./") || strstr(r->str, "/../") ||
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
                                 "workspace manifest: outputs[%zu] is not a string", ws->noutputs);
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
        static const char *const members[] = { "type", "content", "mount", "prefix", "read_only" };
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
        } else if (!rc &&
                   (strcmp(type->str, "local_dir") == 0 || strcmp(type->str, "s3_mount") == 0)) {
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
        return error_set(reterr,
                         jerr.code == AL_INTERNAL_ERROR ? AL_INTERNAL_ERROR : AL_CONFIG_ERROR,
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

/* What a key held before commit replaced it, put back when a later write fails or the commit
 * is rolled back. */
struct ws_backup {
    char *data; /* malloc'd; NULL for a key that held nothing */
    size_t len;
    int existed;
};

static void ws_backups_free(struct ws_backup *backups, size_t n)
{
    for (size_t k = 0; backups && k < n; k++) {
        free(backups[k].data);
    }
    free(backups);
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
    ws_backups_free(ws->committed, ws->ncommitted);
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
    if (!ws || !name || !ops || ops->version != AL_MOUNT_OPS_VERSION || !ops->stat || !ops->read ||
        !ops->list) {
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

const struct ws_backend *ws_backend_of(const struct al_workspace *ws, int m)
{
    return &ws->backends[ws->entries[m].backend];
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
        if (n->is_dir || !ws_in_outputs(ws, n->path, n->path_len)) {
            continue;
        }
        uint8_t d[CONT_DIGEST];
        char hex[CONT_DIGEST * 2 + 1];
        cont_sha256(n->data ? n->data : "", n->len, d);
        hex_encode(d, sizeof d, hex);
        char *key = n->mount >= 0 ? ws_mount_key(ws, n->mount, n->path, n->path_len) : NULL;
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

/* Reads what node n's key holds now into *b; AL_OK, or the error naming the mount and path.
 * `*budget`: bytes all backups may still take (the workspace's own limit: a commit never holds
 * more than the guest could write). */
static enum al_code backup_key(const struct al_workspace *ws, const struct ws_node *n,
                               struct ws_backup *b, uint64_t *budget, struct al_error *reterr)
{
    const struct ws_mount_entry *me = &ws->entries[n->mount];
    const struct ws_backend *be = ws_backend_of(ws, n->mount);
    char *key = ws_mount_key(ws, n->mount, n->path, n->path_len);
    char err[256] = "";
    uint64_t size = 0;
    int is_dir = 0;
    enum al_code rc = AL_OK;
    if (!key) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    int st = be->ops->stat(be->ud, key, &size, &is_dir, err, sizeof err);
    if (st == AL_MOUNT_OK && !is_dir) {
        if (size > ws->max_file_bytes || size > *budget) {
            rc = error_set(reterr, AL_INTERNAL_ERROR,
                           "mount %s: writing %.200s failed: it would replace an object of %llu "
                           "bytes, more than a failed commit could put back",
                           me->name, n->path, (unsigned long long)size);
        } else {
            st = be->ops->read(be->ud, key, 0, size, &b->data, &b->len, err, sizeof err);
            b->existed = st == AL_MOUNT_OK;
            if (b->existed) {
                *budget -= b->len < *budget ? b->len : *budget;
            }
        }
    }
    if (rc == AL_OK && st != AL_MOUNT_OK && st != AL_MOUNT_NOT_FOUND) {
        rc = error_set(reterr, AL_INTERNAL_ERROR, "mount %s: writing %.200s failed: %s", me->name,
                       n->path, err[0] ? err : "the backend failed");
    }
    free(key);
    return rc;
}

/* Puts back what writing nodes [0, upto) replaced: replaced objects restored, new ones
 * removed. Best effort, as a failed write leaves nothing better to do; 0 when every key was
 * put back. */
static int ws_put_back(struct al_workspace *ws, const struct ws_backup *backups, size_t upto)
{
    int failed = 0;
    for (size_t i = upto; i-- > 0;) {
        const struct ws_node *n = ws->nodes[i];
        if (n->is_dir || n->mount < 0) {
            continue;
        }
        const struct ws_backend *be = ws_backend_of(ws, n->mount);
        char *key = ws_mount_key(ws, n->mount, n->path, n->path_len);
        char err[256];
        const struct ws_backup *b = &backups[i];
        int st = AL_MOUNT_ERROR;
        if (key && b->existed) {
            st = be->ops->write(be->ud, key, b->data ? b->data : "", b->len, err, sizeof err);
        } else if (key && be->ops->remove) {
            st = be->ops->remove(be->ud, key, err, sizeof err);
        }
        failed |= st != AL_MOUNT_OK && st != AL_MOUNT_NOT_FOUND;
        free(key);
    }
    return failed ? -1 : 0;
}

enum al_code al_workspace_commit(struct al_workspace *ws, struct al_error *reterr)
{
    if (!ws) {
        return error_set(reterr, AL_CONFIG_ERROR, "al_workspace_commit: NULL workspace");
    }
    ws_thread_drain(ws);
    enum al_code rc = AL_OK;
    struct ws_backup *backups = calloc(ws->nnodes + 1, sizeof *backups);
    uint64_t budget = ws->max_bytes;
    if (!backups) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    /* all or nothing: what each key holds is read before anything is written, so that a
     * failed write can put back what the ones before it replaced */
    for (size_t i = 0; i < ws->nnodes && rc == AL_OK; i++) {
        const struct ws_node *n = ws->nodes[i];
        if (!n->is_dir && n->mount >= 0) {
            rc = backup_key(ws, n, &backups[i], &budget, reterr);
        }
    }
    size_t i = 0;
    for (; i < ws->nnodes && rc == AL_OK; i++) {
        const struct ws_node *n = ws->nodes[i];
        if (n->is_dir || n->mount < 0) {
            continue;
        }
        const struct ws_mount_entry *me = &ws->entries[n->mount];
        const struct ws_backend *be = ws_backend_of(ws, n->mount);
        char *key = ws_mount_key(ws, n->mount, n->path, n->path_len);
        char err[256] = "";
        if (!key) {
            rc = error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
            break;
        }
        int st = be->ops->write ? be->ops->write(be->ud, key, n->data ? n->data : "", n->len, err,
                                                 sizeof err)
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
    if (rc != AL_OK) {
        ws_put_back(ws, backups, i);
        ws_backups_free(backups, ws->nnodes);
    } else {
        ws_backups_free(ws->committed, ws->ncommitted);
        ws->committed = backups; /* until a rollback, or the workspace's end */
        ws->ncommitted = ws->nnodes;
    }
    return rc;
}

enum al_code al_workspace_rollback(struct al_workspace *ws, struct al_error *reterr)
{
    if (!ws) {
        return error_set(reterr, AL_CONFIG_ERROR, "al_workspace_rollback: NULL workspace");
    }
    ws_thread_drain(ws);
    if (!ws->committed) {
        return AL_OK;
    }
    int failed = ws_put_back(ws, ws->committed, ws->ncommitted);
    ws_backups_free(ws->committed, ws->ncommitted);
    ws->committed = NULL;
    ws->ncommitted = 0;
    return failed ? error_set(reterr, AL_INTERNAL_ERROR,
                              "a mount's object could not be put back as it was before the commit")
                  : AL_OK;
}
