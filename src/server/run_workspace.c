/*
 * run_workspace.c - one execution's workspace (run_workspace.h). The file operations the
 * observer reports come from the thread driving the run or the workspace's own thread (when it
 * has mounts), so their list has a lock of its own; everything else is used by one thread at a
 * time: built before the run starts, finished after it ended, recorded by the writer after that.
 *
 * Credentials: an S3 mount's secret goes from the plan into its s3_mount (copied, cleansed on
 * free) and nowhere else - not into an error, a record or a log line; errors come from s3.c,
 * which names the bucket and the operation only.
 */
#include "run_workspace.h"

#include <inttypes.h>
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "error.h"
#include "hex.h"
#include "json.h"
#include "mounts.h"
#include "runs.h"
#include "s3.h"

/* One file operation of the guest, as its run.file record says it. */
struct run_workspace_op {
    char *op;
    char *path;
    uint64_t size;
    char sha256[65]; /* "" when none */
    char *error;     /* NULL on success */
};

/* One output at the end: its bytes kept, or a file committed to a mount. */
struct run_workspace_output {
    char *path;
    char *data;
    size_t len;
    char sha256[65];
    char *mount; /* NULL: not in a mount */
    char *key;
};

struct run_workspace {
    struct al_workspace *ws;
    size_t ns3;
    struct s3_mount **s3; /* the S3 mounts it serves, freed after ws */
    pthread_mutex_t lock; /* the ops */
    size_t nops;
    size_t ops_cap;
    struct run_workspace_op *ops;
    int lost; /* an op could not be kept (out of memory): its record is missing */
    /* after run_workspace_finish succeeded */
    int finished;
    int kept; /* its run was recorded completed: the commit stands (run_workspace_keep) */
    size_t noutputs;
    size_t outputs_cap;
    struct run_workspace_output *outputs;
    char *tar;
    size_t tar_len;
};

static void run_workspace_observe(const struct al_workspace_op *op, void *ud)
{
    struct run_workspace *w = ud;
    pthread_mutex_lock(&w->lock);
    if (w->nops == w->ops_cap) {
        size_t cap = w->ops_cap ? 2 * w->ops_cap : 16;
        struct run_workspace_op *ops = realloc(w->ops, cap * sizeof *ops);
        if (!ops) {
            w->lost = 1;
            pthread_mutex_unlock(&w->lock);
            return;
        }
        w->ops = ops;
        w->ops_cap = cap;
    }
    struct run_workspace_op *o = &w->ops[w->nops];
    memset(o, 0, sizeof *o);
    o->op = strdup(op->op ? op->op : "");
    o->path = strdup(op->path ? op->path : "");
    o->size = op->size;
    snprintf(o->sha256, sizeof o->sha256, "%s", op->sha256 ? op->sha256 : "");
    o->error = op->error ? strdup(op->error) : NULL;
    if (!o->op || !o->path || (op->error && !o->error)) {
        free(o->op);
        free(o->path);
        free(o->error);
        w->lost = 1;
    } else {
        w->nops++;
    }
    pthread_mutex_unlock(&w->lock);
}

/* Serves the plan's mount `m` in w. */
static enum al_code run_workspace_mount(struct run_workspace *w, const struct mounts_mount *m,
                                        struct al_error *reterr)
{
    if (!m->s3) {
        return al_workspace_set_mount_local(w->ws, m->name, m->path);
    }
    struct s3_mount_config c = { m->endpoint,          m->bucket, m->region, m->access_key_id,
                                 m->secret_access_key, 0 };
    struct s3_mount *s3 = NULL;
    struct s3_mount **all = realloc(w->s3, (w->ns3 + 1) * sizeof *all);
    if (!all) {
        error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        return AL_INTERNAL_ERROR;
    }
    w->s3 = all;
    enum al_code code = s3_mount_new(&c, &s3, reterr);
    if (code != AL_OK) {
        return code;
    }
    w->s3[w->ns3++] = s3;
    return al_workspace_set_mount(w->ws, m->name, &s3_mount_ops, s3);
}

/* A mount a replay never reaches. */
static enum al_mount_status run_workspace_unreached(char *err, size_t errlen)
{
    snprintf(err, errlen, "a replay reaches no mount");
    return AL_MOUNT_ERROR;
}

/* NOLINTBEGIN(readability-non-const-parameter): al_mount_ops' out-parameters, never written
 * by a backend that cannot answer */
static enum al_mount_status run_workspace_unreached_stat(void *ud, const char *key,
                                                         uint64_t *ret_size, int *ret_is_dir,
                                                         char *err, size_t errlen)
{
    (void)ud;
    (void)key;
    (void)ret_size;
    (void)ret_is_dir;
    return run_workspace_unreached(err, errlen);
}

static enum al_mount_status run_workspace_unreached_read(void *ud, const char *key, uint64_t offset,
                                                         uint64_t len, char **ret, size_t *ret_len,
                                                         char *err, size_t errlen)
{
    (void)ud;
    (void)key;
    (void)offset;
    (void)len;
    (void)ret;
    (void)ret_len;
    return run_workspace_unreached(err, errlen);
}
/* NOLINTEND(readability-non-const-parameter) */

static enum al_mount_status run_workspace_unreached_list(void *ud, const char *key,
                                                         al_mount_list_fn *each, void *list_ud,
                                                         char *err, size_t errlen)
{
    (void)ud;
    (void)key;
    (void)each;
    (void)list_ud;
    return run_workspace_unreached(err, errlen);
}

static const struct al_mount_ops run_workspace_unreached_ops = {
    .version = AL_MOUNT_OPS_VERSION,
    .stat = run_workspace_unreached_stat,
    .read = run_workspace_unreached_read,
    .list = run_workspace_unreached_list,
};

/* Every mount the manifest names served by run_workspace_unreached_ops. */
static enum al_code run_workspace_unreachable(struct run_workspace *w, const char *manifest,
                                              struct al_error *reterr)
{
    struct json_doc *doc = NULL;
    if (json_parse(manifest, strlen(manifest), API_DEPTH_MAX, &doc, reterr) != AL_OK) {
        return error_set(reterr, AL_CONFIG_ERROR, "the workspace manifest is not JSON");
    }
    enum al_code code = AL_OK;
    const struct json_node *entries = json_get(json_root(doc), "entries");
    for (const struct json_node *e = entries && entries->type == JSON_OBJECT ? entries->child
                                                                             : NULL;
         e && code == AL_OK; e = e->next) {
        const struct json_node *mount = e->type == JSON_OBJECT ? json_get(e, "mount") : NULL;
        if (mount && mount->type == JSON_STRING) {
            code = al_workspace_set_mount(w->ws, mount->str, &run_workspace_unreached_ops, NULL);
        }
    }
    json_doc_free(doc);
    if (code != AL_OK) {
        error_set(reterr, code, "the workspace's mounts cannot be set");
    }
    return code;
}

static enum al_code run_workspace_build(const struct runs_plan *plan, int replay,
                                        struct run_workspace **ret, struct al_error *reterr)
{
    struct run_workspace *w = calloc(1, sizeof *w);
    if (!w) {
        error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        return AL_INTERNAL_ERROR;
    }
    pthread_mutex_init(&w->lock, NULL);
    const char *manifest = plan->workspace_manifest;
    enum al_code code = al_workspace_new(manifest, strlen(manifest), &w->ws, reterr);
    if (code == AL_OK && plan->workspace_tar) {
        code = al_workspace_load_tar(w->ws, plan->workspace_tar, plan->workspace_tar_len, reterr);
    }
    if (code == AL_OK && replay) {
        code = run_workspace_unreachable(w, manifest, reterr);
    }
    for (size_t i = 0; i < plan->nmounts && code == AL_OK && !replay; i++) {
        code = run_workspace_mount(w, &plan->mounts[i], reterr);
        if (code != AL_OK && !reterr->message[0]) {
            error_set(reterr, code, "mount %s cannot be used", plan->mounts[i].name);
        }
    }
    if (code != AL_OK) {
        run_workspace_free(w);
        return code;
    }
    al_workspace_set_observer(w->ws, run_workspace_observe, w);
    *ret = w;
    return AL_OK;
}

enum al_code run_workspace_new(const struct runs_plan *plan, struct run_workspace **ret,
                               struct al_error *reterr)
{
    return run_workspace_build(plan, 0, ret, reterr);
}

enum al_code run_workspace_new_replay(const struct runs_plan *plan, struct run_workspace **ret,
                                      struct al_error *reterr)
{
    return run_workspace_build(plan, 1, ret, reterr);
}

void run_workspace_free(struct run_workspace *w)
{
    if (!w) {
        return;
    }
    if (w->finished && !w->kept) {
        /* committed, but the run was not recorded completed (cancelled while its writes were
         * in flight, or its end failed to record): a run that did not complete writes nothing */
        struct al_error err;
        memset(&err, 0, sizeof err);
        if (al_workspace_rollback(w->ws, &err) != AL_OK) {
            struct buf b;
            buf_init(&b, 1024);
            json_write_string(&b, err.message, strlen(err.message));
            fprintf(stderr,
                    "{\"log\":\"runs\",\"error\":\"a run that did not complete "
                    "could not undo its writes to its mounts\",\"why\":%s}\n",
                    b.data ? b.data : "\"\"");
            buf_done(&b);
        }
    }
    al_workspace_free(w->ws); /* before the mounts it borrows */
    for (size_t i = 0; i < w->ns3; i++) {
        s3_mount_free(w->s3[i]);
    }
    free(w->s3);
    for (size_t i = 0; i < w->nops; i++) {
        free(w->ops[i].op);
        free(w->ops[i].path);
        free(w->ops[i].error);
    }
    free(w->ops);
    for (size_t i = 0; i < w->noutputs; i++) {
        free(w->outputs[i].path);
        free(w->outputs[i].data);
        free(w->outputs[i].mount);
        free(w->outputs[i].key);
    }
    free(w->outputs);
    free(w->tar);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

static void *run_workspace_free_thread(void *arg)
{
    run_workspace_free(arg);
    return NULL;
}

void run_workspace_free_later(struct run_workspace *w)
{
    if (!w) {
        return;
    }
    pthread_t t;
    pthread_attr_t attr;
    int started = pthread_attr_init(&attr) == 0;
    started = started && pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0 &&
              pthread_create(&t, &attr, run_workspace_free_thread, w) == 0;
    pthread_attr_destroy(&attr);
    if (!started) {
        run_workspace_free(w); /* here, then: late rather than never */
    }
}

struct al_workspace *run_workspace_of(struct run_workspace *w)
{
    return w->ws;
}

static void run_workspace_output(const struct al_workspace_file *f, void *ud)
{
    struct run_workspace *w = ud;
    if (w->noutputs == w->outputs_cap) {
        size_t cap = w->outputs_cap ? 2 * w->outputs_cap : 8;
        struct run_workspace_output *outputs = realloc(w->outputs, cap * sizeof *outputs);
        if (!outputs) {
            w->lost = 1;
            return;
        }
        w->outputs = outputs;
        w->outputs_cap = cap;
    }
    struct run_workspace_output *o = &w->outputs[w->noutputs];
    memset(o, 0, sizeof *o);
    o->path = strdup(f->path);
    o->data = malloc(f->len ? f->len : 1);
    o->mount = f->mount ? strdup(f->mount) : NULL;
    o->key = f->key ? strdup(f->key) : NULL;
    snprintf(o->sha256, sizeof o->sha256, "%s", f->sha256);
    if (!o->path || !o->data || (f->mount && !o->mount) || (f->key && !o->key)) {
        free(o->path);
        free(o->data);
        free(o->mount);
        free(o->key);
        w->lost = 1;
        return;
    }
    memcpy(o->data, f->data, f->len);
    o->len = f->len;
    w->noutputs++;
}

enum al_code run_workspace_finish(struct run_workspace *w, struct al_error *reterr)
{
    enum al_code code = al_workspace_commit(w->ws, reterr);
    if (code != AL_OK) {
        return code;
    }
    code = al_workspace_tar(w->ws, &w->tar, &w->tar_len, reterr);
    if (code != AL_OK) {
        return code;
    }
    al_workspace_outputs(w->ws, run_workspace_output, w);
    if (w->lost) {
        error_set(reterr, AL_INTERNAL_ERROR, "the workspace's outputs could not be kept");
        return AL_INTERNAL_ERROR;
    }
    w->finished = 1;
    return AL_OK;
}

/* One run.file record: the run's members, then the op's. */
static enum store_rc run_workspace_audit(struct store *s, const struct runs_plan *plan,
                                         struct buf *d, const char *op, const char *path,
                                         uint64_t size, const char *sha256, const char *error,
                                         const char *mount, const char *key)
{
    buf_reset(d);
    api_member(d, "{\"run\":", plan->id);
    api_member(d, ",\"template\":", plan->template_name);
    buf_printf(d, ",\"version\":%" PRId64, plan->version);
    api_member(d, ",\"op\":", op);
    api_member(d, ",\"path\":", path);
    buf_printf(d, ",\"size\":%" PRIu64, size);
    api_member(d, ",\"sha256\":", sha256 && sha256[0] ? sha256 : NULL);
    api_member(d, ",\"error\":", error);
    if (mount) {
        api_member(d, ",\"mount\":", mount);
        api_member(d, ",\"key\":", key);
    }
    buf_append_str(d, "}");
    return d->data ? s->ops->audit_append(s, "airlockd", "run.file", plan->id, plan->department,
                                          d->data, NULL)
                   : STORE_ERROR;
}

void run_workspace_keep(struct run_workspace *w)
{
    if (w) {
        w->kept = 1;
    }
}

enum store_rc run_workspace_record(struct store *s, struct run_workspace *w,
                                   const struct runs_plan *plan, int completed, struct buf *d)
{
    enum store_rc rc = STORE_OK;
    pthread_mutex_lock(&w->lock);
    for (size_t i = 0; i < w->nops && rc == STORE_OK; i++) {
        const struct run_workspace_op *o = &w->ops[i];
        rc = run_workspace_audit(s, plan, d, o->op, o->path, o->size, o->sha256, o->error, NULL,
                                 NULL);
    }
    pthread_mutex_unlock(&w->lock);
    if (rc != STORE_OK || !w->finished || !completed) {
        return rc;
    }
    struct store_run_file *files = calloc(w->noutputs ? w->noutputs : 1, sizeof *files);
    char(*hashes)[65] = calloc(w->noutputs ? w->noutputs : 1, sizeof *hashes);
    char tar_sha256[65];
    if (!files || !hashes) {
        rc = STORE_ERROR;
    }
    for (size_t i = 0; i < w->noutputs && rc == STORE_OK; i++) {
        const struct run_workspace_output *o = &w->outputs[i];
        rc = s->ops->blob_put(s, o->data, o->len, hashes[i]);
        files[i] = (struct store_run_file){ plan->id,  o->path,  (int64_t)o->len,
                                            hashes[i], o->mount, o->key };
        if (rc == STORE_OK && o->mount) {
            rc = run_workspace_audit(s, plan, d, "commit", o->path, o->len, hashes[i], NULL,
                                     o->mount, o->key);
        }
    }
    if (rc == STORE_OK) {
        rc = s->ops->blob_put(s, w->tar, w->tar_len, tar_sha256);
    }
    if (rc == STORE_OK) {
        rc = s->ops->run_workspace_end(s, plan->id, tar_sha256, files, w->noutputs);
    }
    free(files);
    free(hashes);
    return rc;
}

/* ---------------------------------------------------------------- workspace reads in the journal
 */

#define RUN_WORKSPACE_READ_FN "workspace.readFile"
#define RUN_WORKSPACE_REF     "{\"$workspace_blob\":\""

/* A Uint8Array's tagged form exactly as libairlock writes a file's bytes (byteOffset 0, the
 * whole buffer): its bytes, decoded. 0, or -1 when it is another value or out of memory. */
static int run_workspace_tagged_bytes(const struct json_node *v, unsigned char **ret,
                                      size_t *ret_len)
{
    const struct json_node *t = json_get(v, "$type");
    const struct json_node *buffer = json_get(v, "buffer");
    const struct json_node *bt = buffer ? json_get(buffer, "$type") : NULL;
    const struct json_node *b64 = buffer ? json_get(buffer, "base64") : NULL;
    const struct json_node *off = json_get(v, "byteOffset");
    const struct json_node *length = json_get(v, "length");
    if (v->count != 4 || !t || t->type != JSON_STRING || strcmp(t->str, "Uint8Array") != 0 ||
        !buffer || buffer->type != JSON_OBJECT || buffer->count != 2 || !bt ||
        bt->type != JSON_STRING || strcmp(bt->str, "arraybuffer") != 0 || !b64 ||
        b64->type != JSON_STRING || b64->str_len % 4 != 0 || b64->str_len > INT_MAX || !off ||
        off->type != JSON_NUMBER || off->num != 0 || !length || length->type != JSON_NUMBER) {
        return -1;
    }
    size_t n = b64->str_len;
    size_t pad = n > 0 && b64->str[n - 1] == '=' ? (n > 1 && b64->str[n - 2] == '=' ? 2 : 1) : 0;
    unsigned char *bytes = malloc(n / 4 * 3 + 1);
    int got = bytes ? EVP_DecodeBlock(bytes, (const unsigned char *)b64->str, (int)n) : -1;
    if (got < 0 || (size_t)got < pad || length->num != (double)((size_t)got - pad)) {
        free(bytes);
        return -1;
    }
    *ret = bytes;
    *ret_len = (size_t)got - pad;
    return 0;
}

int run_workspace_read_ref(const char *function, int kind, const unsigned char *answer, size_t len,
                           struct run_workspace_read *ret)
{
    if (strcmp(function, RUN_WORKSPACE_READ_FN) != 0 || kind != STORE_JOURNAL_VALUE) {
        return 0;
    }
    struct json_doc *doc = NULL;
    if (json_parse((const char *)answer, len, 4, &doc, NULL) != AL_OK) {
        return 0; /* not a value libairlock writes for a read: kept as it is */
    }
    const struct json_node *v = json_root(doc);
    const char *form = v->type == JSON_STRING ? "text" : "bytes";
    unsigned char *bytes = NULL;
    size_t n = 0;
    int found = 0;
    if (v->type == JSON_STRING) {
        bytes = malloc(v->str_len ? v->str_len : 1);
        if (bytes) {
            memcpy(bytes, v->str, v->str_len);
            n = v->str_len;
        }
        found = bytes ? 1 : -1;
    } else if (v->type == JSON_OBJECT) {
        found = run_workspace_tagged_bytes(v, &bytes, &n) == 0;
    }
    json_doc_free(doc);
    if (found != 1) {
        return found;
    }
    unsigned char md[SHA256_DIGEST_LENGTH];
    char hex[2 * SHA256_DIGEST_LENGTH + 1];
    SHA256(bytes, n, md);
    hex_encode(md, sizeof md, hex);
    snprintf(ret->ref, sizeof ret->ref, RUN_WORKSPACE_REF "%s\",\"form\":\"%s\"}", hex, form);
    ret->bytes = bytes;
    ret->len = n;
    return 1;
}

struct run_workspace_rebuild {
    int text;
    struct buf answer;
};

static int run_workspace_rebuild_fn(void *userdata, const unsigned char *bytes, size_t len)
{
    struct run_workspace_rebuild *r = userdata;
    if (r->text) {
        json_write_string(&r->answer, (const char *)bytes, len);
        return 0;
    }
    /* as libairlock's workspace writes a file's bytes (workspace_ops.c put_bytes) */
    buf_append_str(&r->answer,
                   "{\"$type\":\"Uint8Array\",\"buffer\":{\"$type\":\"arraybuffer\",\"base64\":\"");
    size_t n64 = (len + 2) / 3 * 4;
    enum buf_status st;
    /* SIZE_MAX: more than the cap, which poisons it (buf.h) */
    char *out = buf_reserve(&r->answer, len <= INT_MAX / 4 * 3 ? n64 + 1 : SIZE_MAX, &st);
    if (!out) {
        return 0;
    }
    EVP_EncodeBlock((unsigned char *)out, bytes, (int)len);
    buf_commit(&r->answer, n64);
    buf_printf(&r->answer, "\"},\"byteOffset\":0,\"length\":%zu}", len);
    return 0;
}

int run_workspace_read_answer(struct store *s, const char *function, int kind,
                              const unsigned char *stored, size_t len, char **ret_answer,
                              size_t *ret_len)
{
    static const char text_tail[] = "\",\"form\":\"text\"}";
    static const char bytes_tail[] = "\",\"form\":\"bytes\"}";
    size_t head = sizeof RUN_WORKSPACE_REF - 1;
    size_t hex = 2 * SHA256_DIGEST_LENGTH;
    if (strcmp(function, RUN_WORKSPACE_READ_FN) != 0 || kind != STORE_JOURNAL_VALUE ||
        len <= head + hex || memcmp(stored, RUN_WORKSPACE_REF, head) != 0) {
        return 0;
    }
    const char *tail = (const char *)stored + head + hex;
    size_t tail_len = len - head - hex;
    struct run_workspace_rebuild r = { 0 };
    if (tail_len == sizeof text_tail - 1 && memcmp(tail, text_tail, tail_len) == 0) {
        r.text = 1;
    } else if (tail_len != sizeof bytes_tail - 1 || memcmp(tail, bytes_tail, tail_len) != 0) {
        return 0;
    }
    char sha256[2 * SHA256_DIGEST_LENGTH + 1];
    memcpy(sha256, stored + head, hex);
    sha256[hex] = '\0';
    buf_init(&r.answer, SIZE_MAX / 2);
    enum store_rc rc = s->ops->blob_get(s, sha256, run_workspace_rebuild_fn, &r);
    if (rc != STORE_OK || buf_failed(&r.answer)) {
        buf_done(&r.answer);
        return -1;
    }
    *ret_answer = buf_steal(&r.answer, ret_len); /* never empty: "" at least */
    return *ret_answer ? 1 : -1;
}
