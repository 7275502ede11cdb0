/*
 * workspace.h - libairlock's private view of struct al_workspace (docs/workspace.md):
 *   workspace.c        the manifest, the tree of files, path rules, mounts, outputs, commit
 *   workspace_ops.c    the guest's file operations (host calls "workspace.<op>"): limits,
 *                      permissions, Node's errors, glob, dispatch
 *   workspace_tar.c    the tar codec: al_workspace_tar, al_workspace_load_tar
 *   workspace_mount.c  local directories as mounts, and the thread that runs the operations of
 *                      a workspace that has mounts (their backends may block)
 */
#ifndef AIRLOCK_LIB_WORKSPACE_H
#define AIRLOCK_LIB_WORKSPACE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock.h"

#include "buf.h"

#define WS_OPS_COUNT     10 /* the host calls of a workspace: ws_host_names */
#define WS_HOST_NAME_MAX 24 /* bytes of the longest, "workspace.appendFile", and its NUL */
#define WS_MOUNT_DENIED \
    3 /* enum al_mount_status of the lib's own local backend: a symbolic link, EACCES */

/* A file or directory of the tree (inline, from a snapshot, or written by the guest). */
struct ws_node {
    char *path; /* normalized, relative to the root; owned */
    size_t path_len;
    int is_dir;
    char *data; /* a file's bytes; owned (NULL when empty) */
    size_t len;
    int mount; /* -1: the workspace's own; else the index of the mount entry this file was
                  written into (buffered for commit) or which this directory stands for */
    int entry; /* a mount entry's own directory: never removed, never in a tar */
};

/* A manifest entry of type local_dir or s3_mount. */
struct ws_mount_entry {
    char *path;   /* normalized entry path; owned */
    char *name;   /* the mount's name; owned */
    char *prefix; /* "" or ending in '/'; owned */
    int writable; /* read_only: false (under an outputs prefix) */
    int backend;  /* index into ws->backends */
};

struct ws_local;

/* A mount as the application set it (al_workspace_set_mount*), by name. */
struct ws_backend {
    char *name; /* owned */
    const struct al_mount_ops *ops;
    void *ud;
    struct ws_local *local; /* al_workspace_set_mount_local: the lib's own backend; owned */
};

/* An operation waiting for the workspace's thread: a live call (answered there), or a write
 * replayed from a journal or continuation (call NULL, applied for its effect only). */
struct ws_job {
    struct ws_job *next;
    struct al_call *call;
    int op;     /* index into ws_host_names */
    char *args; /* owned, NUL-terminated */
    size_t len;
    int replayed; /* a write replayed (call NULL) */
    char *answer; /* ... and the first run's answer to it (owned; NULL when empty) */
    size_t answer_len;
};

struct al_workspace {
    char *root; /* "/workspace"; owned */
    size_t root_len;
    struct ws_node **nodes; /* sorted by path (strcmp) */
    size_t nnodes;
    size_t cap_nodes;
    struct ws_mount_entry *entries;
    size_t nentries;
    struct ws_backend *backends;
    size_t nbackends;
    char **outputs; /* normalized prefixes ("" for the whole tree); owned */
    size_t noutputs;
    uint64_t max_bytes;
    uint64_t max_files;
    uint64_t max_file_bytes;
    uint64_t bytes; /* of the files in the tree */
    uint64_t files;
    uint64_t dirs; /* directories of the tree: at most WS_DIRS_MAX(ws) made by the guest */
    al_workspace_op_fn *observer;
    void *observer_ud;
    /* the thread of a workspace with mounts (workspace_mount.c) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int thread_started;
    int stopping;
    int busy; /* a job is running */
    struct ws_job *head;
    struct ws_job **tail;
    /* what the last successful al_workspace_commit replaced, one per node (NULL: none), until
     * al_workspace_rollback puts it back or the workspace is freed */
    struct ws_backup *committed;
    size_t ncommitted;
};

/* workspace_ops.c: the host calls' names ("workspace.readFile", ...); index = op. */
extern char ws_host_names[WS_OPS_COUNT][WS_HOST_NAME_MAX];
/* The op's name without the group ("readFile"): what the observer reports. */
const char *ws_op_name(int op);
/* 1 for an op that changes the tree (replayed for its effect). */
int ws_op_mutates(int op);
/* The op of a host call name "workspace.<op>", or -1. */
int ws_op_of(const char *name);

/* The host function of every "workspace.<op>" (userdata: the workspace). */
void ws_host(struct al_call *call, void *userdata);
/* Applies a mutating call replayed from a journal or a continuation (its answer comes from
 * there; the outcome here is dropped). `answer` is the first run's answer to it, which holds
 * what it read from a mount (appendFile's base): a replay never reads a mount. */
void ws_replay(struct al_workspace *ws, int op, const char *args, size_t len, const char *answer,
               size_t answer_len);
/* The first mount an entry names that was never set (for the run's CONFIG_ERROR), or NULL. */
const char *ws_missing_mount(const struct al_workspace *ws);
/* The largest encoded argument array one file operation may send (a file of file_bytes as a
 * JSON string or base64, and its path). */
uint64_t ws_args_max(const struct al_workspace *ws);

#define WS_PATH_MAX   4096 /* bytes of a path the guest gives */
#define WS_JSON_DEPTH 64   /* nesting of a manifest or of an operation's arguments */

/* Directories a workspace may hold: as many as a snapshot may bring (twice the files limit
 * and 1024), so that mkdir - which the files limit does not count - is bounded too. */
#define WS_DIRS_MAX(ws) (2 * (ws)->max_files + 1024)

/* An operation's failure: a Node error code and its message. */
struct ws_err {
    const char *code; /* NULL: none */
    char msg[400];
};
/* Sets e (the first failure wins). */
void ws_fail(struct ws_err *e, const char *code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* The tree (workspace.c). */
struct ws_node *ws_find(const struct al_workspace *ws, const char *path, size_t len);
/* The index where `path` is or would go. */
size_t ws_index(const struct al_workspace *ws, const char *path, size_t len, int *ret_found);
struct ws_node *ws_node_new(const char *path, size_t len, int is_dir, int mount);
void ws_node_free(struct ws_node *n);
/* Inserts n (its path not in the tree), counting a file; 0, or -1 out of memory. */
int ws_tree_insert(struct al_workspace *ws, struct ws_node *n);
/* Takes node i out of the tree, uncounted (the caller frees it). */
struct ws_node *ws_tree_remove(struct al_workspace *ws, size_t i);
/* The range [*ret_lo, *ret_hi) of the descendants of directory `path` ("" = root: all). */
void ws_descendants(const struct al_workspace *ws, const char *path, size_t len, size_t *ret_lo,
                    size_t *ret_hi);
/* Adds directory nodes (with `mount`) for every missing parent of `path`; 0, or -1 out of
 * memory. */
int ws_add_parents(struct al_workspace *ws, const char *path, size_t len, int mount);

/* Paths (workspace.c). Normalizes `in` (relative to the root, or absolute under it) into out
 * (WS_PATH_MAX + 1 bytes: relative, "" for the root, no '.', '..' or empty segments). 0, or
 * -1 with e set (EACCES outside the root, ERR_INVALID_ARG_VALUE for a NUL). */
int ws_normalize(const char *root, size_t root_len, const char *in, size_t in_len, char *out,
                 size_t *ret_len, struct ws_err *e, const char *syscall);
/* 1 when `path` is `pre` or lies below it ("" is everything). */
int ws_under(const char *path, size_t len, const char *pre);
int ws_in_outputs(const struct al_workspace *ws, const char *path, size_t len);
/* The mount entry `path` lies in (or is), or -1. */
int ws_entry_of(const struct al_workspace *ws, const char *path, size_t len);
/* The backend key of `path` in mount entry m (malloc'd; NULL out of memory). */
char *ws_mount_key(const struct al_workspace *ws, int m, const char *path, size_t len);
const struct ws_backend *ws_backend_of(const struct al_workspace *ws, int m);
struct json_node;
/* 1 with *ret for a JSON number that is a non-negative integer (at most 2^53 - 1). */
int ws_is_uint(const struct json_node *n, uint64_t *ret);

/* Runs job's operation on the calling thread (workspace_ops.c). */
void ws_run_job(struct al_workspace *ws, struct ws_job *job);

/* workspace_mount.c: queues a job for the workspace's thread (started on the first), which
 * runs them in order; 0, or -1 out of memory (the job is not taken). */
int ws_thread_submit(struct al_workspace *ws, struct ws_job *job);
/* Waits until the thread has run every queued job. */
void ws_thread_drain(struct al_workspace *ws);
/* Stops and joins the thread (al_workspace_free). */
void ws_thread_stop(struct al_workspace *ws);
struct ws_local *ws_local_new(const char *dir);
void ws_local_free(struct ws_local *l);
extern const struct al_mount_ops ws_local_ops;

/* Frees every node that is not a mount's (a snapshot replaces them). */
void ws_drop_own_nodes(struct al_workspace *ws);
/* Adds the directories the mount entries and output prefixes need; 0, or -1 out of memory. */
int ws_ensure_dirs(struct al_workspace *ws);

#endif
