/*
 * api_runs.h - what the run handlers share with the approval handlers: a run's row copied,
 * turned into what runs.c executes, and resumed once its approvals are decided.
 */
#ifndef AIRLOCK_SERVER_API_RUNS_H
#define AIRLOCK_SERVER_API_RUNS_H

#include "airlock.h"

#include "api.h"
#include "buf.h"
#include "readers.h"
#include "runs.h"
#include "store.h"
#include "writer.h"

/* An owned copy of a run's row: each of its strings is the copy's own; outcome and updated are
 * NULL. api_run_copy_set fills a zeroed copy: 0, or -1 out of memory with the copy zeroed again
 * (row.status NULL). api_run_copy_done frees it (NULL-safe members). */
struct api_run_copy {
    struct store_run row;
    char *strings[12];
};
int api_run_copy_set(struct api_run_copy *c, const struct store_run *row);
void api_run_copy_done(struct api_run_copy *c);
/* The plan of a run's row: its version's (or its own ad-hoc) source, limits and functions, each
 * bound to its connector of the run's department, and its workspace as the store keeps it
 * (its mounts looked up under `roots`, NULL: none). STORE_OK with *ret_plan; STORE_CONFLICT when
 * the version is not approved or a function cannot be bound; the store's failure (the version
 * not read) or STORE_ERROR (out of memory) otherwise. reterr is set on every failure. */
enum store_rc api_run_plan(struct store *s, struct secretbox_keys *secret_keys,
                           const struct mounts_roots *roots, const struct store_run *row,
                           struct runs_plan **ret_plan, struct al_error *reterr);
/* The plan of a replay of run `row` with another version `v` (replays.h): the run's id,
 * principal, input, seed and clock, and v's source and language; its limits are, each one, the
 * stricter of v's and `against_limits` (the limits JSON of the approved version the run ran;
 * NULL: none set), a limit one leaves unset counting as the runner's default. v's functions are
 * named but bound to no connector (a replay sends nothing). The caller adds the run's journal
 * (runs_plan_add_journal). 0 with *ret_plan; -1 with reterr set (CONFIG_ERROR for stored text
 * that is not what this server writes, INTERNAL_ERROR out of memory). */
int api_replay_plan(const struct store_run *row, const struct store_version *v,
                    const char *against_limits, struct runs_plan **ret_plan,
                    struct al_error *reterr);
/* A new run's workspace (docs/server.md "Workspaces"), resolved from POST /v1/runs's
 * "workspace" (api_workspaces.c). api_run_workspace_done frees it (zeroed: none). */
struct api_run_workspace {
    char *manifest;        /* JSON; NULL: the run has no workspace */
    char start_sha256[65]; /* the tar replacing the manifest's inline entries; "": none */
    char *tar;             /* ... its bytes */
    size_t tar_len;
    char from_run[RUNS_ID_LEN + 1]; /* where the tar came from, for run.start */
    char from_snapshot[RUNS_ID_LEN + 2];
};
void api_run_workspace_done(struct api_run_workspace *w);
/* Resolves `ws`, the body's "workspace" (NULL: none), for a new run of `department`: a
 * template run names its template and its version's manifest (NULL: the version has none), an
 * ad-hoc run NULL for both. A template run's workspace is its version's, and the body may only
 * say where its files start from ({"from_run"} or {"from_snapshot"}); an ad-hoc run's is the
 * manifest the body gives, with from_run or from_snapshot beside it (from_run alone takes that
 * run's manifest). from_run: a run the caller may see, of the same template for a template
 * run, that kept its workspace at its end; from_snapshot: one the caller uploaded, for this
 * department. 0 with *ret set; -1 after answering (400, 404, 409, 500). */
int api_run_workspace_resolve(struct api_ctx *ctx, const struct json_node *ws,
                              const char *template_name, const char *version_manifest,
                              const char *department, struct api_run_workspace *ret);
/* In the run's start transaction: keeps w's manifest as a blob and the run's run_workspaces
 * row, and appends to its run.start details (after a member) "workspace" (bounded as
 * runs_put_bounded), "workspace_sha256" and "workspace_from" ({"run"|"snapshot", "sha256"}).
 * Nothing for a run without a workspace. STORE_OK or the store's failure. */
enum store_rc api_run_workspace_record(struct store *s, const char *run,
                                       const struct api_run_workspace *w, struct buf *details);
/* Run `id`'s workspace as the store keeps it, into plan (its manifest and start tar); a run
 * without one leaves the plan as it is. STORE_OK, or the store's failure (STORE_ERROR also out
 * of memory). */
enum store_rc api_run_workspace_plan(struct store *s, const char *id, struct runs_plan *plan);
/* Looks up each mount plan's workspace manifest names (mounts_lookup with secret_keys and
 * roots) into plan->mounts: each must still exist, be of the plan's department and of the kind
 * its entry needs. STORE_OK; STORE_CONFLICT with reterr naming the entry otherwise (nothing
 * starts); STORE_ERROR out of memory. */
enum store_rc api_run_workspace_mounts(struct store *s, struct secretbox_keys *secret_keys,
                                       const struct mounts_roots *roots, struct runs_plan *plan,
                                       struct al_error *reterr);
/* Run `id`'s workspace as it started (its manifest and start tar), for a fork of it: *ret
 * zeroed when it has none. STORE_OK or the store's failure. */
enum store_rc api_run_workspace_of(struct store *s, const char *id, struct api_run_workspace *ret);
/* Run {id} of the route (a request without a body) may be seen by the caller
 * (gov_run_may_see: its starter, a role other than agent in its department, an admin): 0;
 * otherwise -1 after answering (404 "no run ID" also for a run it may not see, 403). */
int api_run_visible(struct api_ctx *ctx);
/* Inside a writer job (tx): resumes a waiting run once none of its approvals is pending: claims
 * its continuation (or, for a supervised run whose start was approved, starts it), marks the
 * decisions consumed and the run running in one (nested) transaction, and launches it, its
 * connector calls held until the job commits. Nothing to do (still pending, resumed already) is
 * STORE_OK; while draining it leaves the run for the next start. STORE_CONFLICT with reterr set
 * when the run cannot be planned (its version is no longer approved). Any other failure is the
 * store's (ops->errmsg says why) and sets reterr only when the run failed for a reason too. */
enum store_rc api_run_resume(struct writer_tx *tx, struct secretbox_keys *secret_keys,
                             struct runs *runs, const char *run_id, struct al_error *reterr);
/* With several nodes (runs_node set) api_run_resume does not resume: it moves the run to the
 * queue (status queued) in a transaction that notifies STORE_CHANNEL_QUEUE, and kicks runs_kick
 * once that has committed. api_run_claim (a writer job too) then takes the oldest queued run for
 * this node (another node never gets it) and resumes it as above; *ret_claimed is 1 when it
 * took one, 0 when the queue was empty or this node drains. */
enum store_rc api_run_claim(struct writer_tx *tx, struct secretbox_keys *secret_keys,
                            struct runs *runs, int *ret_claimed, struct al_error *reterr);

/* Gives cancelled run `id` the outcome of error ABORTED with message `why`, keeping the console,
 * stats and host calls of the outcome it had. Inside a transaction. */
enum store_rc api_run_set_aborted(struct store *s, const char *id, const char *why);

/* How long a run may wait for a person: a department's approval_ttl_ms (docs/server.md
 * "Approvals"), 7 days unless its policy says otherwise, at most a year (a waiting run's
 * continuation is signed for a year). */
#define API_APPROVAL_TTL_DEFAULT_MS 604800000LL
#define API_APPROVAL_TTL_MAX_MS     31536000000LL
/* Ends, as a cancel does (status cancelled, error ABORTED "expired: ..."), every run waiting for
 * a person with an approval pending longer than its department's approval_ttl_ms at now_ms
 * (ms since the epoch): found on a reader taken from `readers`, each ended in a job of its own
 * through `writer` that checks again. From any thread but the writer's. */
void api_approvals_expire(struct readers *readers, struct writer *writer, int64_t now_ms);

#endif
