/*
 * supervisor.c - starting and ending airlock-worker processes.
 *
 * A worker is posix_spawn'ed (never fork without exec in the host) in a session of its own,
 * with an environment of LD_BIND_NOW=1 only, its end of a socketpair on fd 3, /dev/null on stdin,
 * stdout and stderr, and every other descriptor of the host closed, so a compromised worker holds
 * nothing of the host's - not even its terminal. Deadlines are enforced by run.c, which calls
 * supervisor_reap to SIGKILL and collect the process.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "error.h"
#include "internal.h"

/* The worker next to the file that holds `code`'s object - the executable or libairlock.so -
 * at `rel` ("airlock-worker" beside it, or an install's "../libexec/airlock/airlock-worker"). */
static int supervisor_beside(const void *code, const char *rel, char path[PATH_MAX])
{
    char self[PATH_MAX];
    Dl_info info;
    if (code) {
        if (!dladdr(code, &info) || !info.dli_fname || !strchr(info.dli_fname, '/')) {
            return -1;
        }
        snprintf(self, sizeof self, "%s", info.dli_fname);
    } else {
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n < 0) {
            return -1;
        }
        self[n] = '\0';
    }
    char *slash = strrchr(self, '/');
    if (slash) {
        slash[1] = '\0';
    }
    return (size_t)snprintf(path, PATH_MAX, "%s%s", self, rel) < PATH_MAX ? 0 : -1;
}

/* Where the worker is, first found: al_config_set_worker_path, AIRLOCK_WORKER, beside the
 * executable (a build tree, or an installed airlock or airlockd, which link libairlock in),
 * the install's libexec beside libairlock.so (also after DESTDIR or a move), then the
 * libexec of the prefix it was built for. */
enum al_code supervisor_resolve_path(const char *configured, char **ret_path,
                                     struct al_error *reterr)
{
    char path[PATH_MAX] = "";
    const char *env = getenv("AIRLOCK_WORKER");
    if (configured || (env && *env)) {
        snprintf(path, sizeof path, "%s", configured ? configured : env);
        if (access(path, X_OK) != 0) {
            return error_set_errno(reterr, AL_CONFIG_ERROR, errno,
                                   "the worker '%s' is not executable (set AIRLOCK_WORKER or "
                                   "al_config_set_worker_path)",
                                   path);
        }
    } else if (!(supervisor_beside(NULL, "airlock-worker", path) == 0 && access(path, X_OK) == 0) &&
               !(supervisor_beside((const void *)supervisor_resolve_path,
                                   "../libexec/airlock/airlock-worker", path) == 0 &&
                 access(path, X_OK) == 0)) {
        snprintf(path, sizeof path, "%s", AIRLOCK_WORKER_INSTALLED);
        if (access(path, X_OK) != 0) {
            return error_set(reterr, AL_CONFIG_ERROR,
                             "cannot find airlock-worker beside the program, in libexec/airlock "
                             "beside libairlock or in %s (set AIRLOCK_WORKER or "
                             "al_config_set_worker_path)",
                             AIRLOCK_WORKER_INSTALLED);
        }
    }
    char *p = strdup(path);
    if (!p) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    *ret_path = p;
    return AL_OK;
}

enum al_code supervisor_spawn(const char *path, int no_jail, int zygote,
                              struct worker_proc *ret_proc, struct al_error *reterr)
{
    enum al_code rc = AL_INTERNAL_ERROR;
    int sv[2] = { -1, -1 };
    int child = -1;
    posix_spawn_file_actions_t fa;
    int fa_ok = 0;
    pid_t pid;

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        return error_set_errno(reterr, AL_INTERNAL_ERROR, errno, "socketpair");
    }
    /* fd 3 must be a fresh dup2 target so the child's copy loses close-on-exec. */
    child = sv[1];
    if (child == 3) {
        child = fcntl(sv[1], F_DUPFD_CLOEXEC, 4);
        if (child < 0) {
            rc = error_set_errno(reterr, AL_INTERNAL_ERROR, errno, "fcntl");
            goto out;
        }
    }
    if (posix_spawn_file_actions_init(&fa) != 0) {
        goto out;
    }
    fa_ok = 1;
    if (posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0) != 0 ||
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0) != 0 ||
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0) != 0 ||
        posix_spawn_file_actions_adddup2(&fa, child, 3) != 0 ||
        posix_spawn_file_actions_addclosefrom_np(&fa, 4) != 0) {
        rc = error_set(reterr, AL_INTERNAL_ERROR, "posix_spawn_file_actions");
        goto out;
    }
    char *argv[4] = { (char *)"airlock-worker", NULL, NULL, NULL };
    int argc = 1;
    if (no_jail) {
        argv[argc++] = (char *)"--no-jail";
    }
    if (zygote) {
        argv[argc++] = (char *)"--zygote";
    }
    /* Nothing of the host's environment; every symbol bound at start-up, so a worker forked
     * from a zygote never runs the dynamic linker (each lazy binding would write pages it
     * shares with the zygote). */
    char *envp[] = { (char *)"LD_BIND_NOW=1", NULL };
    /* A session of its own: no controlling terminal to inject input into, no job-control
     * signals from the host's terminal. */
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
    int err = posix_spawn(&pid, path, &fa, &attr, argv, envp);
    posix_spawnattr_destroy(&attr);
    if (err != 0) {
        rc = error_set_errno(reterr, AL_INTERNAL_ERROR, err, "cannot start worker '%s'", path);
        goto out;
    }
    int fl = fcntl(sv[0], F_GETFL);
    fcntl(sv[0], F_SETFL, fl | O_NONBLOCK);
    ret_proc->pid = pid;
    ret_proc->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (ret_proc->pidfd >= 0) {
        fcntl(ret_proc->pidfd, F_SETFD, FD_CLOEXEC);
    }
    ret_proc->fd = sv[0];
    sv[0] = -1;
    rc = AL_OK;
out:
    if (fa_ok) {
        posix_spawn_file_actions_destroy(&fa);
    }
    if (child >= 0 && child != sv[1]) {
        close(child);
    }
    if (sv[0] >= 0) {
        close(sv[0]);
    }
    if (sv[1] >= 0) {
        close(sv[1]);
    }
    return rc;
}

void supervisor_reap(struct worker_proc *proc, int kill_first, int *ret_status)
{
    int status = 0;
    if (proc->fd >= 0) {
        close(proc->fd);
        proc->fd = -1;
    }
    if (proc->pid > 0) {
        if (kill_first) {
            /* Through the pidfd: if someone else reaped the worker (SIGCHLD ignored, a
             * waitpid(-1) elsewhere), its pid may belong to another process by now. */
            if (proc->pidfd >= 0) {
                syscall(SYS_pidfd_send_signal, proc->pidfd, SIGKILL, NULL, 0);
            } else {
                kill(proc->pid, SIGKILL);
            }
        }
        while (waitpid(proc->pid, &status, 0) < 0 && errno == EINTR) {
        }
        proc->pid = -1;
    }
    if (proc->pidfd >= 0) {
        close(proc->pidfd);
        proc->pidfd = -1;
    }
    if (ret_status) {
        *ret_status = status;
    }
}

void supervisor_describe(int status, char *out, size_t out_len)
{
    if (WIFSIGNALED(status)) {
        const char *abbrev = sigabbrev_np(WTERMSIG(status));
        snprintf(out, out_len, "killed by signal SIG%s", abbrev ? abbrev : "?");
    } else if (WIFEXITED(status)) {
        snprintf(out, out_len, "exited with status %d", WEXITSTATUS(status));
    } else {
        snprintf(out, out_len, "ended with wait status %d", status);
    }
}

enum al_code al_doctor(const struct al_config *config, char *report, size_t cap, int *ret_jailed,
                       struct al_error *reterr)
{
    char *path = NULL;
    int sv[2] = { -1, -1 };
    posix_spawn_file_actions_t fa;
    pid_t pid;
    if (!config || !report || cap == 0 || !ret_jailed) {
        return error_set(reterr, AL_CONFIG_ERROR, "al_doctor: bad argument");
    }
    enum al_code rc = supervisor_resolve_path(config->worker_path, &path, reterr);
    if (rc != AL_OK) {
        return rc;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        free(path);
        return error_set_errno(reterr, AL_INTERNAL_ERROR, errno, "socketpair");
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
    posix_spawn_file_actions_addclosefrom_np(&fa, 4);
    char *argv[] = { (char *)"airlock-worker", (char *)"--doctor", NULL };
    char *envp[] = { NULL };
    int err = posix_spawn(&pid, path, &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    close(sv[1]);
    free(path);
    if (err != 0) {
        close(sv[0]);
        return error_set_errno(reterr, AL_INTERNAL_ERROR, err, "cannot start the worker");
    }
    size_t len = 0;
    for (;;) {
        ssize_t n = read(sv[0], report + len, cap - 1 - len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        len += (size_t)n;
        if (len == cap - 1) {
            break;
        }
    }
    report[len] = '\0';
    close(sv[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    *ret_jailed = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    return AL_OK;
}
