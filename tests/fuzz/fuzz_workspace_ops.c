/*
 * fuzz_workspace_ops.c - fuzz target for the guest's file operations (src/lib/workspace_ops.c):
 * what a guest - or a compromised worker - can send as "workspace.<op>" arguments.
 *
 * The input is lines "<op digit><JSON argument array>", applied in order to one workspace
 * (inline files, an outputs prefix, small limits, and a read-only and a writable entry of an
 * in-memory mount) through ws_replay, the path a replayed write takes: every operation runs,
 * its answer dropped. After each, the tree's invariants are checked: sorted unique paths, every
 * parent a directory, counts and totals within the limits and equal to what the nodes hold.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workspace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char manifest[] =
        "{\"entries\": {\"README.md\": {\"type\": \"file\", \"content\": \"hello\"},"
        " \"in/a.csv\": {\"type\": \"file\", \"content\": \"x,y\"},"
        " \"lake\": {\"type\": \"s3_mount\", \"mount\": \"m\", \"prefix\": \"p/\"},"
        " \"out/w\": {\"type\": \"s3_mount\", \"mount\": \"m\", \"read_only\": false}},"
        " \"outputs\": [\"out\"], \"limits\": {\"bytes\": 4096, \"files\": 8, "
        "\"file_bytes\": 1024}}";

static enum al_mount_status m_stat(void *ud, const char *k, uint64_t *size, int *dir, char *err,
                                   size_t errlen)
{
    (void)ud;
    snprintf(err, errlen, "%s", ""); /* no message: the status says it */
    size_t n = strlen(k);
    *dir = n == 0 || k[n - 1] == '/' || strchr(k, 'd') != NULL;
    *size = *dir ? 0 : n;
    return strchr(k, 'x') ? AL_MOUNT_NOT_FOUND : AL_MOUNT_OK;
}

static enum al_mount_status m_read(void *ud, const char *k, uint64_t off, uint64_t len, char **ret,
                                   size_t *ret_len, char *err, size_t errlen)
{
    (void)ud;
    (void)off;
    if (strchr(k, 'e')) {
        snprintf(err, errlen, "failing on purpose");
        return AL_MOUNT_ERROR;
    }
    size_t n = strlen(k) < len ? strlen(k) : (size_t)len;
    *ret = malloc(n + 1);
    memcpy(*ret, k, n);
    *ret_len = n;
    return AL_MOUNT_OK;
}

static enum al_mount_status m_list(void *ud, const char *k, al_mount_list_fn *each, void *lud,
                                   char *err, size_t errlen)
{
    (void)ud;
    snprintf(err, errlen, "%s", ""); /* no message: the status says it */
    if (strlen(k) > 40) {
        return AL_MOUNT_OK; /* a bounded tree */
    }
    static const struct al_mount_entry entries[] = {
        { "f.csv", 5, 0 }, { "d", 0, 1 }, { "a/b", 1, 0 }, { "..", 0, 1 }, { "", 0, 0 },
    };
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        each(&entries[i], lud);
    }
    return AL_MOUNT_OK;
}

static const struct al_mount_ops ops = { AL_MOUNT_OPS_VERSION, m_stat, m_read, m_list, NULL, NULL };

static void check_tree(const struct al_workspace *ws)
{
    uint64_t files = 0;
    uint64_t bytes = 0;
    for (size_t i = 0; i < ws->nnodes; i++) {
        const struct ws_node *n = ws->nodes[i];
        if (i > 0) {
            const struct ws_node *p = ws->nodes[i - 1];
            size_t m = p->path_len < n->path_len ? p->path_len : n->path_len;
            int c = memcmp(p->path, n->path, m);
            if (c > 0 || (c == 0 && p->path_len >= n->path_len)) {
                fprintf(stderr, "fuzz_workspace_ops: the tree is not sorted at %s\n", n->path);
                abort();
            }
        }
        const char *slash = memrchr(n->path, '/', n->path_len);
        if (slash) {
            const struct ws_node *parent = ws_find(ws, n->path, (size_t)(slash - n->path));
            if (!parent || !parent->is_dir) {
                fprintf(stderr, "fuzz_workspace_ops: %s has no parent directory\n", n->path);
                abort();
            }
        }
        if (!n->is_dir) {
            files++;
            bytes += n->len;
            if (n->len > ws->max_file_bytes) {
                abort();
            }
        }
    }
    if (files != ws->files || bytes != ws->bytes || files > ws->max_files ||
        bytes > ws->max_bytes) {
        fprintf(stderr, "fuzz_workspace_ops: counts %llu/%llu files, %llu/%llu bytes\n",
                (unsigned long long)files, (unsigned long long)ws->files, (unsigned long long)bytes,
                (unsigned long long)ws->bytes);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct al_workspace *ws = NULL;
    if (al_workspace_new(manifest, sizeof manifest - 1, &ws, NULL) != AL_OK ||
        al_workspace_set_mount(ws, "m", &ops, NULL) != AL_OK) {
        abort();
    }
    const char *p = (const char *)data;
    const char *end = p + size;
    int n = 0;
    while (p < end && n++ < 64) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = nl ? nl : end;
        if (line_end > p) {
            int op = (unsigned char)p[0] % WS_OPS_COUNT;
            ws_replay(ws, op, p + 1, (size_t)(line_end - p - 1), NULL, 0);
            ws_thread_drain(ws);
            check_tree(ws);
        }
        p = nl ? nl + 1 : end;
    }
    al_workspace_free(ws);
    return 0;
}
