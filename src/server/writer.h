/*
 * writer.h - the one owner of airlockd's write connection. Everything airlockd writes goes
 * through it as a job: the jobs queued while a batch commits make the next batch, committed in
 * one transaction and one fsync (group commit), each job in a savepoint of its own so that a job
 * that fails undoes its own writes and nothing else. A job's hooks and its done run once the
 * batch's commit has reached the disk (or failed), on the writer's thread: nothing a job records
 * is answered or acted on before it is durable. Request threads never touch this connection;
 * they read on their own (readers.h) and wait for no one's commit but their own.
 *
 * A COMMIT that fails where that leaves no way to know what reached the disk (SQLite's fsync:
 * store.h commit_failure_unknown) stops airlockd (abort), as PostgreSQL does in its own place,
 * and its restart recovers from what the database says; one that kept nothing fails the
 * batch's jobs.
 */
#ifndef AIRLOCK_SERVER_WRITER_H
#define AIRLOCK_SERVER_WRITER_H

#include "airlock.h"

#include "store.h"

struct writer;
struct writer_tx; /* the batch a job runs in */

/* A job's work, inside the batch's transaction: STORE_OK keeps its writes, anything else
 * undoes them (and is what its hooks and done get). */
typedef enum store_rc writer_fn(struct writer_tx *tx, void *arg);
/* After the commit (rc STORE_OK: the job's writes are durable) or a failure (rc: the job's own
 * or the batch's); on the writer's thread, which it may submit more jobs from. */
typedef void writer_done_fn(void *arg, enum store_rc rc);

/* Caller storage, untouched by the caller from writer_submit until its done is called. */
struct writer_job {
    writer_fn *fn;
    writer_done_fn *done; /* may be NULL */
    void *arg;
    /* the writer's */
    enum store_rc rc;
    struct writer_hook *hooks;
    struct writer_job *next;
};

/* Something that must happen only once a job's writes are durable - a run launched inside the
 * job sends nothing before (runs.c) - registered by the job's fn; caller storage. Called before
 * the job's done, with the same rc. */
struct writer_hook {
    writer_done_fn *fn;
    void *arg;
    struct writer_hook *next;
};

/* Starts the writer's thread on `store`, which from then on only that thread uses. -1 with reterr
 * set (AL_INTERNAL_ERROR) on failure. */
int writer_new(struct store *store, struct writer **ret, struct al_error *reterr);
/* A writer without a thread, for a harness that drives requests on one thread (the fuzz target,
 * the allocation-failure test): writer_submit runs the batch before it returns (a job its done
 * submits runs right after). -1 when out of memory. */
int writer_new_inline(struct store *store, struct writer **ret);
/* Runs every job queued (and every one they submit), stops the thread, frees. NULL-safe; the
 * store stays open. */
void writer_free(struct writer *w);
/* Queues a job for the next batch; from any thread, including the writer's (a done). */
void writer_submit(struct writer *w, struct writer_job *job);
/* Runs fn(tx, arg) as a job and returns once it is committed: its rc, or the commit's. From
 * any thread but the writer's. */
enum store_rc writer_call(struct writer *w, writer_fn *fn, void *arg);

/* A checkpoint record a batch appended (store.h audit_take_appended), once the batch is durable;
 * on the writer's thread, with its connection (outside any transaction) for reads. */
typedef void writer_checkpoint_fn(void *arg, struct store *s, const struct store_checkpoint *cp);
/* Sets it, before the first job is submitted (NULL: none, the default). */
void writer_on_checkpoint(struct writer *w, writer_checkpoint_fn *fn, void *arg);

/* The connection a job writes (and reads) through; inside the batch's transaction. */
struct store *writer_store(struct writer_tx *tx);
/* Registers hook to run after the current job's batch; see struct writer_hook. */
void writer_after(struct writer_tx *tx, struct writer_hook *hook, writer_done_fn *fn, void *arg);

#endif
