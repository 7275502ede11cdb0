/*
 * run_workspace.h - one execution's workspace (docs/server.md "Workspaces"): libairlock's
 * al_workspace built from the run's plan (its manifest, the tar it starts from, its mounts:
 * local directories and S3 buckets through s3_mount_ops with the unsealed credentials), every
 * file operation the guest makes kept for its run.file record, and at a completed run's end
 * the writable mounts committed and the outputs and the workspace's tar taken for the store.
 *
 * Each execution of a run (its start, a resume after approvals, a recovery from its journal)
 * builds its workspace the same way from the same plan, so a replayed write lands again and a
 * replayed read is answered from the journal, never from a mount that may have changed.
 */
#ifndef AIRLOCK_SERVER_RUN_WORKSPACE_H
#define AIRLOCK_SERVER_RUN_WORKSPACE_H

#include "airlock.h"

#include "buf.h"
#include "store.h"

struct runs_plan;
struct run_workspace;

/* Builds the workspace of plan (which must have one: plan->workspace_manifest) for one
 * execution. AL_OK with *ret; otherwise the code and reterr's message, which names the
 * manifest's member, the tar's member or the mount (never a credential). */
AL_NODISCARD enum al_code run_workspace_new(const struct runs_plan *plan,
                                            struct run_workspace **ret, struct al_error *reterr);
/* The workspace of a replay of plan (replays.h): as run_workspace_new, but every mount its
 * manifest names is one no file operation reaches (EIO naming the mount): a replay's reads are
 * answered from the journal, and it reaches nothing outside airlockd. */
AL_NODISCARD enum al_code run_workspace_new_replay(const struct runs_plan *plan,
                                                   struct run_workspace **ret,
                                                   struct al_error *reterr);
/* NULL-safe; after the execution has ended (its run released). */
void run_workspace_free(struct run_workspace *w);
/* run_workspace_free on a thread of its own: freeing waits for the operation its mounts' thread
 * is in, which a stalled bucket holds for up to its timeout, and the caller (the writer) must
 * not wait with it. Frees here when no thread can be started. */
void run_workspace_free_later(struct run_workspace *w);
/* What al_run_opts_set_workspace takes (borrowed from w). */
struct al_workspace *run_workspace_of(struct run_workspace *w);

/* The end of a completed run, before its end is recorded and answered: writes what the guest
 * wrote into writable mounts to their backends (all or nothing), then takes its outputs and
 * its workspace as a tar. May block (network): never on the runner's event thread or the
 * writer's. AL_OK, or the code with reterr naming the mount and the path: the run then fails
 * with it and keeps nothing of its workspace. */
AL_NODISCARD enum al_code run_workspace_finish(struct run_workspace *w, struct al_error *reterr);

/* In the writer's transaction that records the execution's end: a run.file record for each
 * file operation of this execution (details: run, template, version, op, path, size, sha256,
 * error; never the bytes) and, when the run is recorded `completed` after a finish that
 * succeeded, each file committed to a mount (op "commit", with mount and key), the outputs and
 * the tar kept in the store (blobs, run_workspace_end). `d` is scratch for the details.
 * STORE_OK or the store's failure. */
enum store_rc run_workspace_record(struct store *s, struct run_workspace *w,
                                   const struct runs_plan *plan, int completed, struct buf *d);
/* After the transaction that recorded its run completed has committed: its commit to the
 * mounts stands. A finished workspace freed without it is rolled back first
 * (al_workspace_rollback): its run was cancelled while its writes were in flight, or its end could
 * not be recorded. */
void run_workspace_keep(struct run_workspace *w);

/* Workspace reads in the journal (docs/journal.md "Workspace reads"). A workspace.readFile
 * answer holds the whole file - a JSON string, or base64 in a Uint8Array's tagged form - while
 * workspace_blobs keeps bytes once under their SHA-256; so the journal keeps a reference,
 * {"$workspace_blob":"HEX","form":"text"|"bytes"}, in the answer's place and the bytes as a
 * blob: a run reading a 16 MiB file three times keeps it once, and a replay needs no copy. */
struct run_workspace_read {
    char ref[128];        /* what the journal keeps as the answer (NUL-terminated) */
    unsigned char *bytes; /* the file's bytes (the text's UTF-8), malloc'd: a blob to keep */
    size_t len;
};
/* 1 with *ret set when `answer` (len bytes) is the value a workspace.readFile call returned
 * (function "workspace.readFile", kind STORE_JOURNAL_VALUE); 0 when it is any other answer,
 * which the journal keeps as it is; -1 out of memory. The caller frees ret->bytes. */
int run_workspace_read_ref(const char *function, int kind, const unsigned char *answer, size_t len,
                           struct run_workspace_read *ret);
/* The answer a journal entry read back stands for: when `stored` is a reference
 * (run_workspace_read_ref), the answer rebuilt from its blob into *ret_answer (malloc'd, the
 * same bytes the guest was given) and *ret_len, 1; 0 when it is none (the stored bytes are the
 * answer); -1 when its blob is missing, no longer matches its SHA-256, or out of memory. */
int run_workspace_read_answer(struct store *s, const char *function, int kind,
                              const unsigned char *stored, size_t len, char **ret_answer,
                              size_t *ret_len);

#endif
