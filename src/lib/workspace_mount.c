/*
 * workspace_mount.c - local directories as mounts (al_workspace_set_mount_local), and the
 * thread that runs the file operations of a workspace with mounts.
 *
 * A local mount is reached through one directory descriptor opened when it is set, and every
 * key is walked from it one component at a time with openat(O_NOFOLLOW): a symbolic link
 * anywhere on the way - to /etc or to a sibling directory - is never followed and answers
 * WS_MOUNT_DENIED (the guest's EACCES); so are FIFOs, sockets and devices, which are never
 * opened (a FIFO would block). '..' never reaches a backend (paths are normalized before), and
 * is refused here too.
 *
 * The thread: a mount's backend may block (network, a slow disk), and the run's event thread
 * must not, so a workspace with mounts runs every operation - in call order, one at a time - on
 * a thread of its own, started with the first. Functions that read the workspace from the
 * application (outputs, tar, commit, free) first wait until its queue is empty.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "workspace.h"

struct ws_local {
    int dirfd;
};

struct ws_local *ws_local_new(const char *dir)
{
    struct ws_local *l = malloc(sizeof *l);
    if (!l) {
        return NULL;
    }
    l->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (l->dirfd < 0) {
        free(l);
        return NULL;
    }
    return l;
}

void ws_local_free(struct ws_local *l)
{
    if (l) {
        close(l->dirfd);
        free(l);
    }
}

static int status_of(int err)
{
    if (err == ENOENT || err == ENOTDIR) {
        return AL_MOUNT_NOT_FOUND;
    }
    if (err == ELOOP || err == EACCES || err == EPERM) {
        return WS_MOUNT_DENIED;
    }
    return AL_MOUNT_ERROR;
}

static void say(char *err, size_t errlen, const char *what, int e)
{
    snprintf(err, errlen, "%s: %s", what, strerror(e));
}

/* Opens the directory holding the last component of `key` (*ret_last points at that
 * component, "" for the mount's own directory), walking without following links. `create`:
 * missing directories are made. A descriptor, or -(status). */
static int walk_parent(const struct ws_local *l, const char *key, int create, const char **ret_last)
{
    int fd = dup(l->dirfd);
    if (fd < 0) {
        return -AL_MOUNT_ERROR;
    }
    const char *p = key;
    for (;;) {
        const char *slash = strchr(p, '/');
        if (!slash || slash[1] == '\0') {
            /* the last component (a trailing '/' names a directory: the key's own) */
            if (slash) {
                static char none[1];
                char comp[256];
                size_t n = (size_t)(slash - p);
                if (n == 0 || n >= sizeof comp) {
                    *ret_last = none;
                    return fd;
                }
                memcpy(comp, p, n);
                comp[n] = '\0';
                int next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                int e = errno;
                close(fd);
                if (next < 0) {
                    return -status_of(e);
                }
                *ret_last = none;
                return next;
            }
            *ret_last = p;
            return fd;
        }
        size_t n = (size_t)(slash - p);
        char comp[256];
        if (n >= sizeof comp) {
            close(fd);
            return -AL_MOUNT_NOT_FOUND;
        }
        memcpy(comp, p, n);
        comp[n] = '\0';
        p = slash + 1;
        if (n == 0 || strcmp(comp, ".") == 0) {
            continue;
        }
        if (strcmp(comp, "..") == 0) {
            close(fd);
            return -WS_MOUNT_DENIED;
        }
        if (create && mkdirat(fd, comp, 0755) != 0 && errno != EEXIST) {
            int e = errno;
            close(fd);
            return -status_of(e);
        }
        int next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int e = errno;
        close(fd);
        if (next < 0) {
            /* ENOTDIR with O_NOFOLLOW may be a link: never followed either way */
            return -status_of(e == ENOTDIR ? ELOOP : e);
        }
        fd = next;
    }
}

static enum al_mount_status local_stat(void *ud, const char *key, uint64_t *ret_size,
                                       int *ret_is_dir, char *err, size_t errlen)
{
    const char *last;
    int fd = walk_parent(ud, key, 0, &last);
    if (fd < 0) {
        say(err, errlen, "stat", EIO);
        return (enum al_mount_status)-fd;
    }
    struct stat st;
    int r = last[0] ? fstatat(fd, last, &st, AT_SYMLINK_NOFOLLOW) : fstat(fd, &st);
    int e = errno;
    close(fd);
    if (r != 0) {
        say(err, errlen, "stat", e);
        return (enum al_mount_status)status_of(e);
    }
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        return (enum al_mount_status)WS_MOUNT_DENIED; /* a link, FIFO, socket or device */
    }
    *ret_is_dir = S_ISDIR(st.st_mode);
    *ret_size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
    return AL_MOUNT_OK;
}

static enum al_mount_status local_read(void *ud, const char *key, uint64_t offset, uint64_t len,
                                       char **ret, size_t *ret_len, char *err, size_t errlen)
{
    const char *last;
    int dfd = walk_parent(ud, key, 0, &last);
    if (dfd < 0) {
        return (enum al_mount_status)-dfd;
    }
    int fd = openat(dfd, last[0] ? last : ".", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    int e = errno;
    close(dfd);
    if (fd < 0) {
        say(err, errlen, "open", e);
        return (enum al_mount_status)status_of(e);
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return (enum al_mount_status)WS_MOUNT_DENIED;
    }
    uint64_t avail = (uint64_t)st.st_size > offset ? (uint64_t)st.st_size - offset : 0;
    size_t want = (size_t)(len < avail ? len : avail);
    char *buf = malloc(want + 1);
    size_t got = 0;
    if (!buf) {
        close(fd);
        snprintf(err, errlen, "out of memory");
        return AL_MOUNT_ERROR;
    }
    while (got < want) {
        ssize_t n = pread(fd, buf + got, want - got, (off_t)(offset + got));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            e = errno;
            close(fd);
            free(buf);
            say(err, errlen, "read", e);
            return AL_MOUNT_ERROR;
        }
        if (n == 0) {
            break; /* the file shrank */
        }
        got += (size_t)n;
    }
    close(fd);
    *ret = buf;
    *ret_len = got;
    return AL_MOUNT_OK;
}

static enum al_mount_status local_list(void *ud, const char *key, al_mount_list_fn *each,
                                       void *list_ud, char *err, size_t errlen)
{
    const char *last;
    int dfd = walk_parent(ud, key, 0, &last);
    if (dfd < 0) {
        return (enum al_mount_status)-dfd;
    }
    int fd = last[0] ? openat(dfd, last, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                     : dup(dfd);
    int e = errno;
    close(dfd);
    if (fd < 0) {
        say(err, errlen, "opendir", e);
        return (enum al_mount_status)status_of(e == ENOTDIR ? ELOOP : e);
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        say(err, errlen, "opendir", ENOMEM);
        return AL_MOUNT_ERROR;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
            continue;
        }
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            continue;
        }
        if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) {
            continue; /* FIFOs, sockets, devices: not files of a workspace */
        }
        /* a link is listed as a file; reading it answers EACCES */
        struct al_mount_entry en = {
            .name = de->d_name,
            .size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0,
            .is_dir = S_ISDIR(st.st_mode),
        };
        each(&en, list_ud);
    }
    closedir(d);
    return AL_MOUNT_OK;
}

static enum al_mount_status local_write(void *ud, const char *key, const char *data, size_t len,
                                        char *err, size_t errlen)
{
    const char *last;
    int dfd = walk_parent(ud, key, 1, &last);
    if (dfd < 0) {
        snprintf(err, errlen, "cannot reach the directory of %.200s", key);
        return AL_MOUNT_ERROR;
    }
    if (!last[0]) {
        close(dfd);
        snprintf(err, errlen, "%.200s is a directory", key);
        return AL_MOUNT_ERROR;
    }
    int fd = openat(dfd, last, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    int e = errno;
    close(dfd);
    if (fd < 0) {
        say(err, errlen, "open", e);
        return AL_MOUNT_ERROR;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, data + done, len - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            e = errno;
            close(fd);
            say(err, errlen, "write", e);
            return AL_MOUNT_ERROR;
        }
        done += (size_t)n;
    }
    if (close(fd) != 0) {
        say(err, errlen, "close", errno);
        return AL_MOUNT_ERROR;
    }
    return AL_MOUNT_OK;
}

static enum al_mount_status local_remove(void *ud, const char *key, char *err, size_t errlen)
{
    const char *last;
    int dfd = walk_parent(ud, key, 0, &last);
    if (dfd < 0) {
        return (enum al_mount_status)-dfd;
    }
    int r = last[0] ? unlinkat(dfd, last, 0) : -1;
    int e = errno;
    close(dfd);
    if (r != 0) {
        say(err, errlen, "unlink", e);
        return (enum al_mount_status)status_of(e);
    }
    return AL_MOUNT_OK;
}

const struct al_mount_ops ws_local_ops = {
    .version = AL_MOUNT_OPS_VERSION,
    .stat = local_stat,
    .read = local_read,
    .list = local_list,
    .write = local_write,
    .remove = local_remove,
};

/* ------------------------------------------------------------------ the thread */

static void *thread_main(void *arg)
{
    struct al_workspace *ws = arg;
    pthread_mutex_lock(&ws->mu);
    for (;;) {
        while (!ws->head && !ws->stopping) {
            pthread_cond_wait(&ws->cv, &ws->mu);
        }
        struct ws_job *job = ws->head;
        if (!job) {
            break; /* stopping, and nothing left to answer */
        }
        ws->head = job->next;
        if (!ws->head) {
            ws->tail = &ws->head;
        }
        ws->busy = 1;
        pthread_mutex_unlock(&ws->mu);
        ws_run_job(ws, job);
        free(job->args);
        free(job);
        pthread_mutex_lock(&ws->mu);
        ws->busy = 0;
        pthread_cond_broadcast(&ws->cv);
    }
    pthread_mutex_unlock(&ws->mu);
    return NULL;
}

int ws_thread_submit(struct al_workspace *ws, struct ws_job *job)
{
    pthread_mutex_lock(&ws->mu);
    if (!ws->thread_started) {
        if (pthread_create(&ws->thread, NULL, thread_main, ws) != 0) {
            pthread_mutex_unlock(&ws->mu);
            return -1;
        }
        ws->thread_started = 1;
    }
    job->next = NULL;
    *ws->tail = job;
    ws->tail = &job->next;
    pthread_cond_broadcast(&ws->cv);
    pthread_mutex_unlock(&ws->mu);
    return 0;
}

void ws_thread_drain(struct al_workspace *ws)
{
    pthread_mutex_lock(&ws->mu);
    while (ws->head || ws->busy) {
        pthread_cond_wait(&ws->cv, &ws->mu);
    }
    pthread_mutex_unlock(&ws->mu);
}

void ws_thread_stop(struct al_workspace *ws)
{
    pthread_mutex_lock(&ws->mu);
    ws->stopping = 1;
    pthread_cond_broadcast(&ws->cv);
    int started = ws->thread_started;
    pthread_mutex_unlock(&ws->mu);
    if (started) {
        pthread_join(ws->thread, NULL);
        ws->thread_started = 0;
    }
}
