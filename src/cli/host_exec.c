/*
 * host_exec.c - `--host NAME=exec:COMMAND`: every call runs COMMAND through /bin/sh -c on its
 * own thread, so a slow command never stalls the run loop or its deadlines. The argument array
 * goes to the command's stdin; exit 0 makes stdout (trimmed) the result, anything else throws
 * with stderr (trimmed) as the message. Each command runs in its own process group so the
 * ones still running when the run ends are killed with everything they started.
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
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "child_env.h"
#include "cli.h"
#include "json.h"

struct exec_host {
    char *command;
    size_t output_limit;
};

struct exec_job {
    struct exec_host *host;
    struct al_call *call;
};

/* Process groups of running commands, killed by exec_host_kill_all. */
static pthread_mutex_t running_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t threads_done = PTHREAD_COND_INITIALIZER;
static pid_t *running;
static size_t nrunning, cap_running;
static int cancel_fd = -1; /* eventfd: signalled when the run is over */
static size_t nthreads;    /* call threads not finished yet */
static int killing;        /* the run is over: commands are killed as soon as they start */

struct exec_host *exec_host_new(const char *command, size_t output_limit)
{
    pthread_mutex_lock(&running_mu);
    if (cancel_fd < 0) {
        cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    }
    pthread_mutex_unlock(&running_mu);
    struct exec_host *h = calloc(1, sizeof *h);
    if (!h) {
        return NULL;
    }
    h->command = strdup(command);
    if (!h->command) {
        free(h);
        return NULL;
    }
    h->output_limit = output_limit;
    return h;
}

void exec_host_free(struct exec_host *h)
{
    if (h) {
        free(h->command);
        free(h);
    }
}

static void track(pid_t pid, int add)
{
    pthread_mutex_lock(&running_mu);
    if (add && !killing && nrunning == cap_running) {
        size_t cap = cap_running ? cap_running * 2 : 64;
        pid_t *r = realloc(running, cap * sizeof *r);
        if (r) {
            running = r;
            cap_running = cap;
        }
    }
    if (add && (killing || nrunning == cap_running)) {
        kill(-pid, SIGKILL); /* the run is over (or no memory to track it): no new command */
    } else if (add) {
        running[nrunning++] = pid;
    } else if (!add) {
        for (size_t i = 0; i < nrunning; i++) {
            if (running[i] == pid) {
                running[i] = running[--nrunning];
                break;
            }
        }
    }
    pthread_mutex_unlock(&running_mu);
}

void exec_host_kill_all(void)
{
    pthread_mutex_lock(&running_mu);
    killing = 1;
    if (cancel_fd >= 0) {
        uint64_t one = 1;
        ssize_t n = write(cancel_fd, &one, sizeof one);
        (void)n; /* wakes every call thread still reading a command's output */
    }
    for (size_t i = 0; i < nrunning; i++) {
        kill(-running[i], SIGKILL);
    }
    /* Killed commands end their threads at once; wait so hosts can be freed safely. */
    while (nthreads > 0) {
        pthread_cond_wait(&threads_done, &running_mu);
    }
    pthread_mutex_unlock(&running_mu);
}

static void thread_count(int delta)
{
    pthread_mutex_lock(&running_mu);
    nthreads = (size_t)((long)nthreads + delta);
    if (nthreads == 0) {
        pthread_cond_broadcast(&threads_done);
    }
    pthread_mutex_unlock(&running_mu);
}

static void trim(struct buf *b)
{
    size_t start = 0;
    while (start < b->len && strchr(" \t\r\n", b->data[start])) {
        start++;
    }
    size_t end = b->len;
    while (end > start && strchr(" \t\r\n", b->data[end - 1])) {
        end--;
    }
    if (b->data) {
        memmove(b->data, b->data + start, end - start);
        b->len = end - start;
        b->data[b->len] = '\0';
    }
}

/* Linux refuses a single environment string above 128 KiB (MAX_ARG_STRLEN). */
#define EXEC_RESUME_MAX (128 * 1024 - 64)

int cli_resume_json(const struct al_call *call, struct buf *b)
{
    const char *iid = al_call_interruption_id(call);
    if (!iid) {
        return 0;
    }
    /* Compact, whatever the library hands over: a co-process reads one request per line. */
    size_t plen, rlen;
    const char *payload = al_call_resume_payload(call, &plen);
    const char *resolution = al_call_resolution(call, &rlen);
    size_t start = b->len;
    int bad = buf_append_str(b, "{\"interruptionId\":") != BUF_OK;
    bad |= json_write_string(b, iid, strlen(iid)) != BUF_OK;
    bad |= buf_append_str(b, ",\"payload\":") != BUF_OK;
    bad |= json_write_compact(b, payload, plen) != BUF_OK;
    bad |= buf_append_str(b, ",\"resolution\":") != BUF_OK;
    bad |= json_write_compact(b, resolution, rlen) != BUF_OK;
    bad |= buf_append_str(b, "}") != BUF_OK;
    if (bad && b->data) {
        b->len = start;
        b->data[start] = '\0';
    }
    return bad ? -1 : 1;
}

/* Runs the command with `input` on stdin; collects stdout (up to out->max) and stderr. The
 * environment is ours plus AIRLOCK_FUNCTION and, for a resumed interruption, AIRLOCK_RESUME. */
static int run_command(const char *command, const char *function, const char *resume,
                       const char *input, size_t input_len, struct buf *out, struct buf *errb,
                       int *ret_status, char *why, size_t why_len)
{
    int in[2] = { -1, -1 }, o[2] = { -1, -1 }, e[2] = { -1, -1 };
    int rc = -1;
    pid_t pid = -1;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    char **envp = NULL;
    if (pipe2(in, O_CLOEXEC) || pipe2(o, O_CLOEXEC) || pipe2(e, O_CLOEXEC)) {
        snprintf(why, why_len, "pipe: %s", strerror(errno));
        goto out;
    }
    char *fnvar = malloc(strlen(function) + 32);
    char *resumevar = resume ? malloc(strlen(resume) + 32) : NULL;
    if (!fnvar || (resume && !resumevar)) {
        free(fnvar);
        free(resumevar);
        snprintf(why, why_len, "out of memory");
        goto out;
    }
    snprintf(fnvar, strlen(function) + 32, "AIRLOCK_FUNCTION=%s", function);
    if (resume) {
        snprintf(resumevar, strlen(resume) + 32, "AIRLOCK_RESUME=%s", resume);
    }
    char *extra[] = { fnvar, resumevar };
    envp = child_env_new(extra, resume ? 2 : 1);
    if (!envp) {
        free(fnvar);
        free(resumevar);
        snprintf(why, why_len, "out of memory");
        goto out;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, o[1], 1);
    posix_spawn_file_actions_adddup2(&fa, e[1], 2);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setpgroup(&attr, 0);
    sigset_t none, pipe;
    sigemptyset(&none);
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &pipe);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                            POSIX_SPAWN_SETSIGDEF);
    char *argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)command, NULL };
    int err = posix_spawn(&pid, "/bin/sh", &fa, &attr, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    free(fnvar);
    free(resumevar);
    if (err) {
        snprintf(why, why_len, "cannot start /bin/sh: %s", strerror(err));
        pid = -1;
        goto out;
    }
    track(pid, 1);
    close(in[0]);
    close(o[1]);
    close(e[1]);
    in[0] = o[1] = e[1] = -1;
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    size_t off = 0;
    int too_big = 0;
    int cancelled = 0;
    while (o[0] >= 0 || e[0] >= 0) {
        struct pollfd p[4] = {
            { .fd = in[1], .events = POLLOUT },
            { .fd = o[0], .events = POLLIN },
            { .fd = e[0], .events = POLLIN },
            { .fd = cancel_fd, .events = POLLIN },
        };
        if (poll(p, 4, -1) < 0 && errno != EINTR) {
            break;
        }
        if (p[3].revents & POLLIN) {
            /* The run is over: a command's descendants that left its process group may hold
             * the pipes open forever; stop reading. */
            kill(-pid, SIGKILL);
            cancelled = 1;
            break;
        }
        if (in[1] >= 0 && (p[0].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t n = off < input_len ? write(in[1], input + off, input_len - off) : 0;
            if (n > 0) {
                off += (size_t)n;
            }
            if (off >= input_len || (n < 0 && errno != EAGAIN)) {
                close(in[1]);
                in[1] = -1;
            }
        }
        for (int i = 1; i < 3; i++) {
            int *fd = i == 1 ? &o[0] : &e[0];
            if (*fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) {
                continue;
            }
            char chunk[16384];
            ssize_t n = read(*fd, chunk, sizeof chunk);
            if (n <= 0) {
                close(*fd);
                *fd = -1;
                continue;
            }
            /* what fits is kept (a failed append would empty the buffer): an answer past the
             * limit still reaches the library, which refuses it by its size */
            struct buf *b = i == 1 ? out : errb;
            size_t take = (size_t)n < b->max - b->len ? (size_t)n : b->max - b->len;
            if (take < (size_t)n && i == 1) {
                too_big = 1;
            }
            if (take && buf_append(b, chunk, take) != BUF_OK && i == 1) {
                too_big = 1;
            }
        }
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    track(pid, 0);
    pid = -1;
    if (cancelled) {
        snprintf(why, why_len, "the run ended before the command finished");
        goto out;
    }
    *ret_status = too_big ? 0 : status; /* an overlong answer is answered, and refused */
    rc = 0;
out:
    child_env_free(envp);
    for (int i = 0; i < 2; i++) {
        if (in[i] >= 0) {
            close(in[i]);
        }
        if (o[i] >= 0) {
            close(o[i]);
        }
        if (e[i] >= 0) {
            close(e[i]);
        }
    }
    return rc;
}

static void *exec_thread(void *arg)
{
    struct exec_job *job = arg;
    struct buf out, errb;
    /* Read a little past the limit: whitespace is trimmed first, and anything still longer
     * than the limit goes to the library, which fails the run with BRIDGE_LIMIT. */
    buf_init(&out, job->host->output_limit + 65536);
    buf_init(&errb, 64 * 1024);
    size_t args_len;
    const char *args = al_call_args(job->call, &args_len);
    int status = 0;
    char why[256];
    struct buf resume, line;
    buf_init(&resume, SIZE_MAX / 2);
    buf_init(&line, SIZE_MAX / 2);
    /* The arguments on one line, as for a co-process: `read` in a shell host gets them all. */
    if (json_write_compact(&line, args, args_len) != BUF_OK || !line.data ||
        cli_resume_json(job->call, &resume) < 0) {
        al_call_throw(job->call, "out of memory");
    } else if (resume.len > EXEC_RESUME_MAX) {
        snprintf(why, sizeof why,
                 "the resume context (%zu bytes of payload and resolution) is too large for an "
                 "exec host's environment (at most %d bytes); use --host-process",
                 resume.len, EXEC_RESUME_MAX);
        al_call_throw(job->call, why);
    } else if (run_command(job->host->command, al_call_name(job->call), resume.data, line.data,
                           line.len, &out, &errb, &status, why, sizeof why) != 0) {
        al_call_throw(job->call, why);
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        trim(&out);
        al_call_return(job->call, out.data, out.len);
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == EXEC_EXIT_INTERRUPT) {
        trim(&out);
        al_call_interrupt(job->call, out.data, out.len);
    } else {
        trim(&errb);
        if (errb.len == 0) {
            if (WIFEXITED(status)) {
                snprintf(why, sizeof why, "host command exited with status %d",
                         WEXITSTATUS(status));
            } else {
                snprintf(why, sizeof why, "host command was killed by signal %d", WTERMSIG(status));
            }
            al_call_throw(job->call, why);
        } else {
            al_call_throw(job->call, errb.data);
        }
    }
    buf_done(&out);
    buf_done(&errb);
    buf_done(&resume);
    buf_done(&line);
    free(job);
    thread_count(-1);
    return NULL;
}

void exec_host_call(struct al_call *call, void *userdata)
{
    struct exec_job *job = malloc(sizeof *job);
    pthread_t t;
    pthread_attr_t attr;
    if (!job) {
        al_call_throw(call, "out of memory");
        return;
    }
    job->host = userdata;
    job->call = call;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    thread_count(1);
    if (pthread_create(&t, &attr, exec_thread, job) != 0) {
        thread_count(-1);
        free(job);
        al_call_throw(call, "cannot start a thread for the host command");
    }
    pthread_attr_destroy(&attr);
}
