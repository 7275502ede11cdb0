/*
 * host_process.c - `--host-process COMMAND`: one co-process per run serving many host
 * functions over JSON lines.
 *
 *   co-process -> airlock  first line: {"functions":["group.fn",...],"sync":["group",...]}
 *   airlock -> co-process  {"id":N,"function":"group.fn","args":[...]} per call, plus
 *                          "resume":{"interruptionId":...,"payload":...,"resolution":...}
 *                          when a resumed run invokes an interrupted call again
 *   co-process -> airlock  {"id":N,"result":V}, {"id":N,"error":"message"} or
 *                          {"id":N,"interrupt":PAYLOAD}, any order
 *
 * A reader thread turns answer lines into call completions and a writer thread feeds request
 * lines, so neither a slow nor a stuck co-process can block the run loop (the run's deadlines
 * still hold). If the co-process prints something that is not a valid answer, or exits while
 * calls are pending, every pending and later call throws and the command reports it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "child_env.h"
#include "cli.h"
#include "clock.h"
#include "json.h"
#include "term.h"
#include "utf8.h"

#define HP_MAX_LINE (64u << 20)
#define HP_GRACE_MS 500

struct host_process {
    pid_t pid;
    int to_fd;   /* its stdin */
    int from_fd; /* its stdout */
    pthread_mutex_t mu;
    pthread_cond_t cond;
    struct buf queue; /* request lines not yet written */
    int closing;
    int dead;
    char *error;              /* first failure seen during the run, for the operator */
    char *guest_error;        /* the same, as calls throw it to the guest (never quoting) */
    struct al_call **pending; /* indexed by call id */
    size_t cap_pending;
    struct buf rest; /* bytes read after the declaration line */
    char **functions;
    size_t nfunctions;
    char **sync_groups;
    size_t nsync;
    pthread_t reader, writer;
    int threads;
};

/* The co-process broke down: `why` (for the operator; it may quote the co-process's output)
 * is kept for the command's report, and every pending call throws `guest_msg`, which never
 * quotes it: what a co-process prints by mistake (a debug line, a secret) is not the guest's to
 * read. */
static void fail_locked(struct host_process *hp, const char *guest_msg, const char *why,
                        struct al_call ***ret_calls, size_t *ret_n)
{
    if (!hp->error) {
        hp->error = strdup(why);
        hp->guest_error = strdup(guest_msg);
    }
    hp->dead = 1;
    size_t n = 0;
    struct al_call **calls = calloc(hp->cap_pending ? hp->cap_pending : 1, sizeof *calls);
    for (size_t i = 0; i < hp->cap_pending; i++) {
        if (hp->pending[i]) {
            if (calls) {
                calls[n++] = hp->pending[i];
            }
            hp->pending[i] = NULL;
        }
    }
    *ret_calls = calls;
    *ret_n = n;
}

static void fail(struct host_process *hp, const char *guest_msg, const char *why)
{
    struct al_call **calls;
    size_t n;
    pthread_mutex_lock(&hp->mu);
    fail_locked(hp, guest_msg, why, &calls, &n);
    pthread_mutex_unlock(&hp->mu);
    for (size_t i = 0; i < n; i++) {
        al_call_throw(calls[i], guest_msg);
    }
    free(calls);
}

/* "what: <the first 60 bytes of line, escaped>" for the operator's report. */
static void describe(char *dst, size_t cap, const char *what, const char *line, size_t len)
{
    struct buf b;
    buf_init(&b, 4 * 60);
    size_t cut = utf8_cut(line, len < 60 ? len : 60);
    if (term_escape(&b, line, cut) != BUF_OK) {
        buf_reset(&b);
    }
    snprintf(dst, cap, "%s: %s%s", what, b.data ? b.data : "", cut < len ? "..." : "");
    buf_done(&b);
}

static void handle_line(struct host_process *hp, const char *line, size_t len)
{
    struct json_doc *doc = NULL;
    struct al_error err;
    char msg[400];
    if (len == 0) {
        return;
    }
    if (json_parse(line, len, 256, &doc, &err) != AL_OK) {
        char what[300];
        snprintf(what, sizeof what, "printed a line that is not JSON (%s)", err.message);
        describe(msg, sizeof msg, what, line, len);
        fail(hp, "host process failed: it printed a line that is not JSON", msg);
        return;
    }
    const struct json_node *root = json_root(doc);
    const struct json_node *id = root->type == JSON_OBJECT ? json_get(root, "id") : NULL;
    const struct json_node *result = id ? json_get(root, "result") : NULL;
    const struct json_node *error = id ? json_get(root, "error") : NULL;
    const struct json_node *interrupt = id ? json_get(root, "interrupt") : NULL;
    struct al_call *call = NULL;
    if (id && id->type == JSON_NUMBER && id->num >= 1 && id->num <= 4294967295.0 &&
        id->num == (double)(uint32_t)id->num && (!error || error->type == JSON_STRING)) {
        pthread_mutex_lock(&hp->mu);
        size_t i = (size_t)id->num;
        if (i < hp->cap_pending && hp->pending[i]) {
            call = hp->pending[i];
            hp->pending[i] = NULL;
        }
        pthread_mutex_unlock(&hp->mu);
    }
    if (!call) {
        describe(msg, sizeof msg, "printed an answer to no pending call", line, len);
        fail(hp, "host process failed: it printed an answer to no pending call", msg);
    } else if (error) {
        al_call_throw(call, error->str);
    } else if (interrupt) {
        al_call_interrupt(call, interrupt->raw, interrupt->raw_len);
    } else if (result) {
        al_call_return(call, result->raw, result->raw_len);
    } else {
        al_call_return(call, NULL, 0);
    }
    json_doc_free(doc);
}

static void *reader_main(void *arg)
{
    struct host_process *hp = arg;
    struct buf *b = &hp->rest;
    for (;;) {
        char *nl;
        while (b->len && (nl = memchr(b->data, '\n', b->len)) != NULL) {
            size_t n = (size_t)(nl - b->data);
            b->data[n] = '\0';
            handle_line(hp, b->data, n);
            memmove(b->data, nl + 1, b->len - n - 1);
            b->len -= n + 1;
        }
        enum buf_status st;
        char *p = buf_reserve(b, 65536, &st);
        if (!p) {
            fail(hp, "host process failed: it printed a line longer than 64 MiB",
                 "printed a line longer than 64 MiB");
            break;
        }
        ssize_t n = read(hp->from_fd, p, 65536);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        buf_commit(b, (size_t)n);
    }
    if (b->len > 0) {
        /* Its last answer, without a newline, before it exited: still an answer. */
        b->data[b->len] = '\0';
        handle_line(hp, b->data, b->len);
        buf_reset(b);
    }
    pthread_mutex_lock(&hp->mu);
    int pending = 0;
    for (size_t i = 0; i < hp->cap_pending; i++) {
        pending |= hp->pending[i] != NULL;
    }
    hp->dead = 1;              /* later calls throw; exiting is only an error if a call needed it */
    int closing = hp->closing; /* the run is over: we closed its stdin */
    pthread_mutex_unlock(&hp->mu);
    if (pending && !closing) {
        fail(hp, "host process exited while host calls were pending",
             "exited while host calls were pending");
    }
    return NULL;
}

static void *writer_main(void *arg)
{
    struct host_process *hp = arg;
    struct buf local;
    buf_init(&local, SIZE_MAX / 2);
    pthread_mutex_lock(&hp->mu);
    for (;;) {
        while (hp->queue.len == 0 && !hp->closing) {
            pthread_cond_wait(&hp->cond, &hp->mu);
        }
        if (hp->queue.len == 0 && hp->closing) {
            break;
        }
        struct buf tmp = local;
        local = hp->queue;
        hp->queue = tmp;
        buf_reset(&hp->queue);
        pthread_mutex_unlock(&hp->mu);
        size_t off = 0;
        int broken = 0;
        while (off < local.len) {
            ssize_t n = write(hp->to_fd, local.data + off, local.len - off);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                broken = 1;
                break;
            }
            off += (size_t)n;
        }
        buf_reset(&local);
        pthread_mutex_lock(&hp->mu);
        int closing = hp->closing; /* then the broken pipe is our own kill at the end */
        pthread_mutex_unlock(&hp->mu);
        if (broken && !closing) {
            fail(hp, "host process stopped reading its requests",
                 "stopped reading its requests (its stdin is closed)");
        }
        if (broken) {
            pthread_mutex_lock(&hp->mu);
            break;
        }
        pthread_mutex_lock(&hp->mu);
    }
    pthread_mutex_unlock(&hp->mu);
    close(hp->to_fd);
    hp->to_fd = -1;
    buf_done(&local);
    return NULL;
}

static void hp_call(struct al_call *call, void *userdata)
{
    struct host_process *hp = userdata;
    uint32_t id = al_call_seq(call);
    pthread_mutex_lock(&hp->mu);
    if (hp->dead) {
        char msg[300];
        snprintf(msg, sizeof msg, "%s",
                 hp->guest_error ? hp->guest_error : "host process has exited");
        if (!hp->error) {
            hp->error = strdup("exited before a host call it serves");
        }
        pthread_mutex_unlock(&hp->mu);
        al_call_throw(call, msg);
        return;
    }
    if (id >= hp->cap_pending) {
        size_t cap = hp->cap_pending ? hp->cap_pending : 64;
        while (cap <= id) {
            cap *= 2;
        }
        struct al_call **p = realloc(hp->pending, cap * sizeof *p);
        if (!p) {
            pthread_mutex_unlock(&hp->mu);
            al_call_throw(call, "out of memory");
            return;
        }
        memset(p + hp->cap_pending, 0, (cap - hp->cap_pending) * sizeof *p);
        hp->pending = p;
        hp->cap_pending = cap;
    }
    /* One request, one line. The arguments come from the worker, which a guest may have
     * compromised: valid JSON, but free to hold newlines between tokens. Spliced in as sent,
     * they would let it write a line of its own - a forged call, a fake "resume" with an
     * approved resolution - straight to the co-process, past the ledger and the limits. So
     * every value is re-serialized compactly, and the line is queued whole or not at all. */
    size_t args_len;
    const char *args = al_call_args(call, &args_len);
    size_t start = hp->queue.len;
    int bad = buf_printf(&hp->queue, "{\"id\":%u,\"function\":", id) != BUF_OK;
    bad |= json_write_string(&hp->queue, al_call_name(call), strlen(al_call_name(call))) != BUF_OK;
    bad |= buf_append_str(&hp->queue, ",\"args\":") != BUF_OK;
    bad |= json_write_compact(&hp->queue, args, args_len) != BUF_OK;
    if (!bad && al_call_interruption_id(call)) {
        bad |= buf_append_str(&hp->queue, ",\"resume\":") != BUF_OK;
        bad |= cli_resume_json(call, &hp->queue) < 0;
    }
    bad |= buf_append_str(&hp->queue, "}\n") != BUF_OK;
    if (bad) {
        if (hp->queue.data) {
            hp->queue.len = start;
            hp->queue.data[start] = '\0';
        }
        pthread_mutex_unlock(&hp->mu);
        al_call_throw(call, "out of memory");
        return;
    }
    hp->pending[id] = call;
    pthread_cond_signal(&hp->cond);
    pthread_mutex_unlock(&hp->mu);
}

static int read_declaration(struct host_process *hp, unsigned timeout_ms)
{
    uint64_t deadline = clock_mono_us() + (uint64_t)timeout_ms * 1000;
    struct buf *b = &hp->rest;
    char *nl = NULL;
    while (!(b->len && (nl = memchr(b->data, '\n', b->len)) != NULL)) {
        uint64_t now = clock_mono_us();
        if (now >= deadline) {
            cli_error("host process: no declaration line within %u ms", timeout_ms);
            return -1;
        }
        struct pollfd p = { .fd = hp->from_fd, .events = POLLIN };
        if (poll(&p, 1, (int)((deadline - now) / 1000 + 1)) <= 0) {
            continue;
        }
        enum buf_status st;
        char *dst = buf_reserve(b, 65536, &st);
        ssize_t n = dst ? read(hp->from_fd, dst, 65536) : -1;
        if (n <= 0) {
            cli_error("host process exited before declaring its functions");
            return -1;
        }
        buf_commit(b, (size_t)n);
    }
    size_t len = (size_t)(nl - b->data);
    struct json_doc *doc = NULL;
    struct al_error err;
    int rc = -1;
    if (json_parse(b->data, len, 16, &doc, &err) != AL_OK) {
        char what[300], msg[600];
        snprintf(what, sizeof what, "its first line is not JSON (%s)", err.message);
        b->data[len] = '\0';
        describe(msg, sizeof msg, what, b->data, len);
        cli_error("host process: %s", msg);
        return -1;
    }
    const struct json_node *root = json_root(doc);
    const struct json_node *fns = root->type == JSON_OBJECT ? json_get(root, "functions") : NULL;
    const struct json_node *sync = root->type == JSON_OBJECT ? json_get(root, "sync") : NULL;
    if (!fns || fns->type != JSON_ARRAY || (sync && sync->type != JSON_ARRAY)) {
        cli_error("host process: the first line must be {\"functions\":[\"group.fn\",...],"
                  "\"sync\":[\"group\",...]}");
        goto out;
    }
    hp->functions = calloc(fns->count + 1, sizeof *hp->functions);
    hp->sync_groups = calloc((sync ? sync->count : 0) + 1, sizeof *hp->sync_groups);
    if (!hp->functions || !hp->sync_groups) {
        goto out;
    }
    for (const struct json_node *n = fns->child; n; n = n->next) {
        if (n->type != JSON_STRING) {
            cli_error("host process: \"functions\" must hold strings");
            goto out;
        }
        hp->functions[hp->nfunctions++] = strdup(n->str);
    }
    for (const struct json_node *n = sync ? sync->child : NULL; n; n = n->next) {
        if (n->type != JSON_STRING) {
            cli_error("host process: \"sync\" must hold group names");
            goto out;
        }
        hp->sync_groups[hp->nsync++] = strdup(n->str);
    }
    memmove(b->data, nl + 1, b->len - len - 1);
    b->len -= len + 1;
    rc = 0;
out:
    json_doc_free(doc);
    return rc;
}

struct host_process *host_process_start(const char *command, unsigned timeout_ms)
{
    struct host_process *hp = calloc(1, sizeof *hp);
    int in[2] = { -1, -1 }, out[2] = { -1, -1 };
    if (!hp) {
        cli_error("out of memory");
        return NULL;
    }
    hp->pid = -1;
    hp->to_fd = hp->from_fd = -1;
    pthread_mutex_init(&hp->mu, NULL);
    pthread_cond_init(&hp->cond, NULL);
    buf_init(&hp->queue, SIZE_MAX / 2);
    buf_init(&hp->rest, HP_MAX_LINE);
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) {
        cli_error("host process: pipe: %s", strerror(errno));
        goto fail;
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t pipe_set;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawnattr_init(&attr);
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    posix_spawnattr_setsigdefault(&attr, &pipe_set);
    /* Its own process group, so the grace kill reaches whatever the shell started. */
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    char *argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)command, NULL };
    char **envp = child_env_new(NULL, 0);
    int err = envp ? posix_spawn(&hp->pid, "/bin/sh", &fa, &attr, argv, envp) : ENOMEM;
    child_env_free(envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(in[0]);
    close(out[1]);
    hp->to_fd = in[1];
    hp->from_fd = out[0];
    if (err) {
        hp->pid = -1;
        cli_error("host process: cannot start /bin/sh: %s", strerror(err));
        goto fail;
    }
    if (read_declaration(hp, timeout_ms) != 0) {
        goto fail;
    }
    if (pthread_create(&hp->reader, NULL, reader_main, hp) != 0) {
        cli_error("host process: cannot start a thread");
        goto fail;
    }
    if (pthread_create(&hp->writer, NULL, writer_main, hp) != 0) {
        cli_error("host process: cannot start a thread");
        kill(hp->pid, SIGKILL);
        pthread_join(hp->reader, NULL);
        goto fail;
    }
    hp->threads = 1;
    return hp;
fail:
    host_process_finish(hp);
    host_process_free(hp);
    return NULL;
}

static int is_sync(const struct host_process *hp, const char *name)
{
    const char *dot = strchr(name, '.');
    size_t glen = dot ? (size_t)(dot - name) : strlen(name);
    for (size_t i = 0; i < hp->nsync; i++) {
        if (strlen(hp->sync_groups[i]) == glen && memcmp(hp->sync_groups[i], name, glen) == 0) {
            return 1;
        }
    }
    return 0;
}

int host_process_register(struct host_process *hp, struct al_config *config)
{
    for (size_t i = 0; i < hp->nfunctions; i++) {
        const char *name = hp->functions[i];
        if (!name || al_config_add_host(config, name, hp_call, hp,
                                        is_sync(hp, name) ? AL_HOST_SYNC : 0) != AL_OK) {
            cli_error("host process: invalid or duplicate function name '%s' (expected "
                      "group.fn with identifier parts, not a builtin global or a reserved member)",
                      name ? name : "");
            return -1;
        }
    }
    return 0;
}

/* Waits for the co-process to exit for at most HP_GRACE_MS, then kills its process group
 * (whatever the shell started goes too). The group is killed before the leader is reaped, so
 * its id cannot have been reused. */
static void reap(struct host_process *hp)
{
    if (hp->pid <= 0) {
        return;
    }
    int pidfd = (int)syscall(SYS_pidfd_open, hp->pid, 0);
    if (pidfd >= 0) {
        struct pollfd p = { .fd = pidfd, .events = POLLIN };
        poll(&p, 1, HP_GRACE_MS);
        close(pidfd);
    }
    kill(-hp->pid, SIGKILL);
    kill(hp->pid, SIGKILL);
    int status;
    while (waitpid(hp->pid, &status, 0) < 0 && errno == EINTR) {
    }
    hp->pid = -1;
}

const char *host_process_finish(struct host_process *hp)
{
    if (hp->threads) {
        pthread_mutex_lock(&hp->mu);
        hp->closing = 1;
        pthread_cond_signal(&hp->cond);
        pthread_mutex_unlock(&hp->mu);
        /* The writer closes its stdin once idle; the grace lets it exit. A co-process that
         * stopped reading leaves the writer blocked: the kill in reap() unblocks it (EPIPE). */
        reap(hp);
        pthread_join(hp->writer, NULL);
        pthread_join(hp->reader, NULL);
        hp->threads = 0;
    } else {
        if (hp->to_fd >= 0) {
            close(hp->to_fd);
            hp->to_fd = -1;
        }
        reap(hp);
    }
    if (hp->from_fd >= 0) {
        close(hp->from_fd);
        hp->from_fd = -1;
    }
    return hp->error;
}

void host_process_free(struct host_process *hp)
{
    if (!hp) {
        return;
    }
    for (size_t i = 0; i < hp->nfunctions; i++) {
        free(hp->functions[i]);
    }
    for (size_t i = 0; i < hp->nsync; i++) {
        free(hp->sync_groups[i]);
    }
    free(hp->functions);
    free(hp->sync_groups);
    /* Calls still pending belong to a run that has ended: answer them so they are freed. */
    for (size_t i = 0; i < hp->cap_pending; i++) {
        if (hp->pending[i]) {
            al_call_throw(hp->pending[i], "host process finished");
        }
    }
    free(hp->pending);
    free(hp->error);
    free(hp->guest_error);
    buf_done(&hp->queue);
    buf_done(&hp->rest);
    pthread_mutex_destroy(&hp->mu);
    pthread_cond_destroy(&hp->cond);
    free(hp);
}
