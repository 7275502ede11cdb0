/*
 * internal.h - libairlock's private structures:
 *   limits.c      defaults, names, parsing
 *   runner.c      al_config, al_runner, al_run_opts
 *   host.c        al_call and the completion queue that lets any thread answer a call
 *   supervisor.c  starting, watching and killing a worker process
 *   pool.c        workers started ahead of time
 *   run.c         al_run's event loop and al_result
 *   ledger.c      the ledger of host calls: continuations out, replay in (docs/continuations.md)
 *   continuation.c  the signed token format
 *   store_file.c  the file-backed continuation store
 */
#ifndef AIRLOCK_LIB_INTERNAL_H
#define AIRLOCK_LIB_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "airlock.h"

#include "buf.h"
#include "continuation.h"

#define AL_STACK_MAX (64ull << 20)

#define HOST_HIDDEN 0x100u /* the module loader: callable by the worker, never a guest global */
#define HOST_FILE   0x200u /* a workspace operation (hidden too): workspace.c answers it */

struct host_entry {
    char *name; /* "group.fn"; owned */
    size_t group_len;
    al_host_fn *fn;
    void *userdata;
    unsigned flags;
};

struct al_config {
    uint64_t limits[AL_LIMIT_COUNT_];
    uint8_t limit_set[AL_LIMIT_COUNT_]; /* set explicitly (cpu follows timeout otherwise) */
    struct host_entry *hosts;
    size_t nhosts;
    char *worker_path; /* NULL: the default lookup */
    unsigned warm_workers;
    int unsafe_no_jail;
    unsigned max_runs; /* 0: no limit */
    unsigned max_queue;
    uint64_t queue_timeout_ms;                      /* 0: wait as long as it takes */
    int short_slice;                                /* al_config_set_short_slice */
    struct cont_key keys[AL_CONTINUATION_KEYS_MAX]; /* [0] signs; all verify */
    size_t nkeys;
    int has_signing_key;
    uint64_t ttl_ms;
    struct al_store *store;
    al_host_fn *module_resolve; /* NULL: no module loader */
    al_host_fn *module_load;
    void *module_userdata;
    char *module_identity;
};

struct pool;

struct al_runner {
    uint64_t limits[AL_LIMIT_COUNT_];
    uint8_t limit_set[AL_LIMIT_COUNT_];
    struct host_entry *hosts; /* ordered so that each group's functions are contiguous */
    size_t nhosts;
    char *worker_path;
    int unsafe_no_jail; /* workers start with --no-jail, and unjailed ones are accepted */
    int short_slice;    /* the event and pool threads take thread_take_short_slice */
    struct pool *pool;
    /* admission: at most max_runs at once, at most max_queue waiting */
    unsigned max_runs;
    unsigned max_queue;
    uint64_t queue_timeout_ms;
    pthread_mutex_t adm_mu;
    unsigned running;
    unsigned queued;
    struct adm_waiter *adm_head; /* first in line */
    struct adm_waiter **adm_tail;
    /* continuations */
    int continuations;       /* made with keys: runs record continuations; never changes */
    pthread_mutex_t keys_mu; /* guards keys and nkeys (al_runner_set_continuation_keys) */
    struct cont_key keys[AL_CONTINUATION_KEYS_MAX]; /* [0] signs; all verify */
    size_t nkeys; /* 0: no continuation key, interrupting fails with CONFIG_ERROR */
    uint64_t ttl_ms;
    struct al_store *store;
    uint8_t manifest[CONT_DIGEST]; /* digest of the sorted host names and their sync flags, and
                                      the module loader's identity */
    char *module_identity;         /* NULL: no module loader */
    /* asynchronous runs (loop.c), started on the first al_run_start */
    pthread_mutex_t loop_mu;
    struct loop *loop;
};

struct al_run_opts {
    char *source;
    size_t source_len;
    char *filename;
    uint64_t limits[AL_LIMIT_COUNT_];
    uint8_t limit_set[AL_LIMIT_COUNT_];
    uint64_t seed;
    int has_seed;
    int64_t clock_ms;
    int has_clock;
    unsigned source_type; /* enum al_source_type, or-ed */
    char *context;        /* NULL: empty */
    size_t context_len;
    char *audience; /* NULL: "airlock" */
    char *resume;   /* a token or a store id; NULL: a fresh run */
    size_t resume_len;
    struct resolution *resolutions;
    size_t nresolutions;
    struct host_entry *hosts; /* this run's own host functions (al_run_opts_add_host) */
    size_t nhosts;
    void *userdata;
    char run_id[AL_RUN_ID_MAX + 1]; /* "": a random one */
    al_event_fn *event_fn;
    void *event_userdata;
    unsigned clock_mode; /* enum al_clock_mode */
    uint64_t clock_step_ms;
    al_journal_fn *journal_fn; /* NULL: no journal callback */
    void *journal_userdata;
    struct al_journal_entry *journal; /* a journal to start from; function and payload owned */
    size_t njournal;
    struct al_workspace *workspace; /* borrowed; NULL: none */
};

struct resolution {
    uint32_t call; /* al_run_opts_add_resolution_for_call: the interrupted call; 0: by id */
    char *id;      /* as given, or "call N" */
    char *json;
    size_t len;
};

/* runner.c: cont_encode with the runner's signing key and cont_decode with its keys, under
 * keys_mu so that the keys cannot be replaced halfway through. */
enum al_code runner_cont_encode(const struct al_runner *runner, const struct continuation *c,
                                size_t max_bytes, char **ret_token, size_t *ret_len,
                                struct al_error *reterr);
enum al_code runner_cont_decode(const struct al_runner *runner, const char *token, size_t len,
                                size_t max_bytes, struct continuation *ret,
                                struct al_error *reterr);
/* runner.c: admission. 1 when the run may start (then runner_leave when it ends), 0 when the
 * concurrency limit and its queue are full, -1 when it waited in the queue past its timeout. */
int runner_admit(struct al_runner *runner);
void runner_leave(struct al_runner *runner);
/* The same without blocking, for the event thread: 1 admitted, 0 full, 2 queued - `waiter`
 * (runner_waiter_new) is in line, and when a slot is handed to it, *wake_fd is written.
 * runner_admit_cancel takes a waiter out of line: 1 if it had been granted the slot meanwhile
 * (the run then holds it and must runner_leave), else 0. */
struct adm_waiter;
struct adm_waiter *runner_waiter_new(int wake_fd);
int runner_admit_async(struct al_runner *runner, struct adm_waiter *waiter);
int runner_waiter_granted(struct al_runner *runner, struct adm_waiter *waiter);
int runner_admit_cancel(struct al_runner *runner, struct adm_waiter *waiter);
void runner_waiter_free(struct adm_waiter *waiter);
/* Checks a host name as al_config_add_host does; *ret_group_len gets the group's length. */
enum al_code runner_check_host_name(const char *name, unsigned flags, size_t *ret_group_len);
/* The manifest digest of a host table (sorted names and sync flags, and the loader). */
enum al_code runner_manifest(const struct host_entry *hosts, size_t n, const char *loader,
                             uint8_t out[CONT_DIGEST]);
/* A deep copy of run options (al_run_start keeps one); NULL when out of memory. */
struct al_run_opts *runner_opts_copy(const struct al_run_opts *opts);
/* Frees the journal of run options (the run has its own copy once it started). */
void runner_opts_drop_journal(struct al_run_opts *opts);

/* limits.c */
enum al_code limits_check(enum al_limit which, uint64_t value);

/* host.c: a completed call, queued for the run loop. */
struct completion {
    struct completion *next;
    uint32_t id;
    uint32_t fn;       /* index into the run's host table */
    uint64_t start_us; /* when the host function was invoked, monotonic */
    uint8_t kind;      /* enum wire_answer_kind */
    int keep_iid;      /* an interrupt of a resumed call: keeps the interruption id */
    uint8_t iid[CONT_IID];
    int64_t clock_ms; /* wall time of the completion */
    char *payload;    /* in the same allocation, NUL-terminated */
    size_t len;
};

/* Shared by a run and its outstanding calls; freed when the last of them lets go. */
struct run_link {
    pthread_mutex_t mu;
    int refs;
    atomic_int closed;    /* the run ended: completions are discarded */
    atomic_int cancelled; /* al_run_cancel was called */
    int wake_fd;          /* eventfd the run loop polls; open until the last reference goes */
    void *userdata;       /* al_call_run_userdata */
    char run_id[AL_RUN_ID_MAX + 1];
    atomic_int pending;    /* a completion was queued since the last take (read without the lock) */
    atomic_uint released;  /* al_run_journal_release: held answers up to this position may go */
    pthread_t loop_thread; /* with skip_self_wake: completions from it need no wake-up */
    int skip_self_wake;    /* al_run's driver: it takes the queue right after each callback */
    struct completion *head;
    struct completion **tail;
};

struct al_call {
    struct run_link *link;
    uint32_t id;
    uint32_t fn;       /* index into the run's host table */
    uint64_t start_us; /* monotonic, when invoked; set only for a run with events */
    char *name;        /* in the same allocation as the handle */
    char *args;        /* likewise, NUL-terminated */
    size_t args_len;
    uint32_t line; /* al_call_line */
    /* resume context of a re-invoked interrupted call (resumed != 0) */
    int resumed;
    uint8_t iid[CONT_IID];
    char iid_hex[CONT_IID_HEX + 1];
    char *resume_payload; /* owned */
    size_t resume_payload_len;
    char *resolution; /* owned */
    size_t resolution_len;
};

struct run_link *host_link_new(void);
/* Marks the run over, discards queued completions and drops the run's reference. */
void host_link_close(struct run_link *link);
/* Another reference (an al_run handle's: al_run_cancel writes its eventfd); host_link_unref. */
void host_link_ref(struct run_link *link);
void host_link_unref(struct run_link *link);
/* Signals eventfd `fd` (async-signal-safe: one write; a saturated counter is signalled already). */
void host_wake(int fd);
/* Asks the run to end ABORTED: async-signal-safe (an atomic store and an eventfd write). */
void host_link_cancel(struct run_link *link);
/* 1 when completions may be queued: a check without a lock or a system call. */
int host_link_pending(struct run_link *link);
/* Takes the queued completions (a list the caller frees with host_completion_free). */
struct completion *host_link_take(struct run_link *link);
void host_completion_free(struct completion *c);
struct al_call *host_call_new(struct run_link *link, uint32_t id, uint32_t fn, const char *name,
                              const char *args, size_t args_len);

/* supervisor.c */
struct worker_proc {
    pid_t pid;
    int pidfd; /* signals go through it, so a recycled pid is never hit; -1 if unavailable */
    int fd;    /* our end of the socket, non-blocking, close-on-exec */
};
/* Resolves the worker executable: explicit path, $AIRLOCK_WORKER, or beside the executable. */
enum al_code supervisor_resolve_path(const char *configured, char **ret_path,
                                     struct al_error *reterr);
/* `no_jail`: start it with --no-jail (no seccomp filter). `zygote`: start a zygote instead, whose
 * fd is the control socket of zygote_fork (pool.c). */
enum al_code supervisor_spawn(const char *path, int no_jail, int zygote,
                              struct worker_proc *ret_proc, struct al_error *reterr);
/* Kills (SIGKILL) and reaps the worker; *ret_status (if not NULL) gets its wait status. */
void supervisor_reap(struct worker_proc *proc, int kill_first, int *ret_status);
/* loop.c: the runner's event thread for al_run_start; stops it after cancelling its runs. */
struct loop;
void loop_free(struct loop *loop);
/* 1 on the loop's own thread (where a wait for one of its runs would never end). */
int loop_is_current(const struct loop *loop);

/* pool.c; `short_slice`: the pool's thread takes thread_take_short_slice */
enum al_code pool_new(const char *path, int no_jail, int short_slice, unsigned warm,
                      struct pool **ret_pool, struct al_error *reterr);
void pool_free(struct pool *pool);
/* Spare workers ready now. */
unsigned pool_spares(struct pool *pool);
/* Hands a worker that has delivered its result over to be killed and reaped off the caller's
 * critical path (by the pool thread; at once when there is none); the thread then starts the
 * replacement warm worker. */
void pool_release(struct pool *pool, struct worker_proc *proc);
/* After a run whose worker the caller reaped itself: the thread starts the replacement. */
void pool_refill(struct pool *pool);
/* A started worker that has received nothing yet: a warm one, or one started now. */
enum al_code pool_take(struct pool *pool, struct worker_proc *ret_proc, struct al_error *reterr);

/* Describes a wait status: "killed by signal SIGSEGV", "exited with status 3". */
void supervisor_describe(int status, char *out, size_t out_len);

#endif
