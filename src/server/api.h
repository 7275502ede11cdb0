/*
 * api.h - what a route's handler sees: the request, its path parameters, the authenticated
 * principal and the store, plus the helpers every api_<resource>.c uses to read a JSON body
 * strictly, answer JSON and errors, and record changes. Handlers run after the router has
 * authenticated and authorised the request: on a request thread with a reader as their store,
 * or - for a route that writes - on the writer's thread inside its batch (ctx->tx), with the
 * writer's connection as their store and their answer sent once the batch has committed.
 */
#ifndef AIRLOCK_SERVER_API_H
#define AIRLOCK_SERVER_API_H

#include <stddef.h>

#include "auth.h"
#include "denials.h"
#include "http.h"
#include "json.h"
#include "rules.h"
#include "secretbox.h"
#include "store.h"
#include "writer.h"

#define API_PARAMS_MAX 4
#define API_DEPTH_MAX  32

struct api_param {
    const char *name; /* the pattern's {name}, inside the route table (not NUL-terminated) */
    size_t name_len;
    char value[STORE_NAME_MAX + 1];
};

struct runs;
struct replays;

/* The answer (500) where a request would hand a run to an engine the server lacks (the fuzz
 * harness of the request path has none). */
#define API_NO_RUNS_MESSAGE "this airlockd executes no runs"

struct readers;
struct audit_head;
struct mounts_roots;
struct auditlog_kept;
struct oidc_provider;
struct oidc_claims;

/* What handlers reach beyond the store (main.c fills it). */
struct api_services {
    struct runs *runs;          /* NULL: no run engine (the fuzz target) */
    struct al_runner *runner;   /* the runs' runner, for airlockd's own checks (boundary.h) */
    struct replays *replays;    /* NULL: versions are not replayed (the fuzz target) */
    struct writer *writer;      /* where a read route's refusal is recorded */
    struct readers *readers;    /* for work after the handler has returned (a streamed answer) */
    struct audit_head *audit;   /* what /v1/audit/verify has verified (api_audit.c) */
    struct auditlog_kept *kept; /* the newest checkpoint kept outside the database; NULL: none */
    struct ratelimit *verify_limit; /* full re-verifications of the audit log; NULL: none */
    /* the 401s of admission, tallied per client address (denials.h); NULL: a record each */
    struct denials *denials;
    /* the config's mounts.local_roots (mounts.h); NULL: none, no local mount */
    const struct mounts_roots *mount_roots;
    /* the config's "oidc": single sign-on of the web UI (oidc.h); NULL: none */
    struct oidc_provider *oidc;
};

struct api_ctx {
    struct store *store;
    struct writer_tx *tx; /* the batch a writing route runs in; NULL on a reader */
    struct api_services *svc;
    const struct http_request *req;
    struct http_response *resp;
    const struct auth_principal *who; /* NULL on public routes and before authentication */
    const char *method;               /* the matched route's method and pattern */
    const char *route;
    struct auth_rule rule; /* and its permission rule */
    size_t nparams;
    struct api_param params[API_PARAMS_MAX];
    const char *tail;     /* a {name+} parameter's value: the rest of the path, borrowed; or NULL */
    struct json_doc *doc; /* the parsed body, freed by the router */
    /* the body api_body reads when not NULL, instead of the request's: POST /v1/mcp hands a
     * tool call to the handler of the route it stands for (borrowed) */
    const char *body;
    size_t body_len;
    /* the router's key that seals connector secrets (secretbox.h), may be NULL */
    struct secretbox_keys *secret_keys;
    /* GET /auth/callback: the verified ID token's claims, from its check to its writer job;
     * allocated by the check, freed with the request (NULL before) */
    struct oidc_claims *claims;
};

typedef void api_handler_fn(struct api_ctx *ctx);
/* A check a writing route makes before its writer job, on the request thread: 0 to go on, -1
 * after answering (the job never runs). */
typedef int api_check_fn(struct api_ctx *ctx);

/* 1 when url (len bytes) is http:// or https://, a host, no userinfo, printable ASCII without
 * spaces, at most 2048 bytes: a URL airlockd may call (a connector's, the audit witness's). */
int api_url_ok(const char *url, size_t len);

/* How a body member is read: its name, its JSON type (JSON_TRUE stands for a boolean), whether
 * it must be there; *ret gets the node or NULL. */
struct api_field {
    const char *name;
    enum json_type type;
    int required;
    const struct json_node **ret;
};

/* A field of any JSON type (a value the caller gives as it is). */
#define API_FIELD_ANY ((enum json_type) - 1)

/* Parses the body as one JSON object whose members are exactly among `fields`, each of its
 * type (API_FIELD_ANY: any). An empty body is {}. 0 on success; -1 after answering 400
 * INVALID_REQUEST. */
int api_body(struct api_ctx *ctx, const struct api_field *fields, size_t nfields);
/* The value of path parameter `name` ("" when absent). */
const char *api_param(const struct api_ctx *ctx, const char *name);
/* Answers an error: {"error":{"code","message","request_id"}}. */
void api_error(struct api_ctx *ctx, unsigned status, const char *code, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
void api_error_resp(const struct http_request *req, struct http_response *resp, unsigned status,
                    const char *code, const char *message);
/* Refuses the request: records auth.denied (actor: the principal, or airlockd for a 401; details
 * method, route, path, status, reason, request_id) and answers 401 UNAUTHENTICATED or 403
 * FORBIDDEN with `why` - or 500 when the refusal could not be recorded. Off the writer the
 * record is a job of its own and the request is answered once it has committed (deferred).
 * A 401 made before the writer (no key, a malformed, unknown or revoked one) goes through
 * ctx->svc->denials when there is one: recorded as above only when its address is due a record
 * (details then also hold address, count, first, last and reasons), otherwise answered at once
 * and folded into that address's next record. */
void api_denied(struct api_ctx *ctx, unsigned status, const char *why);
/* A denials_write_fn (userdata: the struct writer): submits a tally's summary as an
 * auth.denied record, as api_denied's. */
void api_denials_write(const struct denials_record *rec, void *writer);
/* For AUTH_RESOURCE routes, once the handler knows the resource's department: 0 when the
 * caller holds one of the route's roles there (or for "*"); -1 after api_denied(403). */
int api_allow(struct api_ctx *ctx, const char *department);
/* Answers a decision of src/gov (rules.h): 0 when it allows; otherwise -1 after answering it,
 * a missing role (GOV_NO_ROLE) with api_denied(403, why) - audited; after it a read route's
 * handler returns without touching ctx->resp -, any other reason with api_error(its status,
 * code and why). */
int api_decision(struct api_ctx *ctx, const struct gov_decision *d);
/* A state read from the store as src/gov's enum (gov_*_state_parse); a name gov does not know
 * is the enum's count, outside it: no rule takes it for a state it allows (a version outside
 * is not approved, a run outside has ended, an approval outside is not pending). */
enum gov_version_state api_version_state(const char *name);
enum gov_run_state api_run_state(const char *name);
enum gov_approval_state api_approval_state(const char *name);
/* Answers a store failure: 500 INTERNAL, logged once. */
void api_store_failed(struct api_ctx *ctx);
/* Starts a JSON answer with status; the handler appends the body to ctx->resp->body. */
void api_reply(struct api_ctx *ctx, unsigned status);
/* Appends s as a JSON string. */
void api_str(struct buf *b, const char *s);
/* Appends key, the text before a member's value (",\"id\":"), then s as a JSON string, or null
 * when s is NULL. */
void api_member(struct buf *b, const char *key, const char *s);
/* A valid principal or department name: [a-z0-9][a-z0-9._-]{0,63}. */
int api_name_ok(const char *s);
/* Records a change through the store's audit append, actor = the caller. details_json is an
 * object. STORE_OK or the store's failure. */
enum store_rc api_audit(struct api_ctx *ctx, const char *action, const char *subject,
                        const char *department, const char *details_json);
/* Ends the transaction a change ran in: commits it when rc is STORE_OK, rolls it back when rc
 * or the commit failed. Returns rc, or the commit's failure. */
enum store_rc api_tx_end(struct store *s, enum store_rc rc);

/* Handlers (api_audit.c, api_departments.c, api_principals.c, api_system.c). */
void api_audit_list(struct api_ctx *ctx);
void api_audit_export(struct api_ctx *ctx);
void api_audit_verify(struct api_ctx *ctx);
void api_audit_checkpoint(struct api_ctx *ctx);
/* What /v1/audit/verify has verified so far (api_audit.c): made once, set from the check at
 * start (full), then by each check. */
struct auditlog_result;
struct audit_head *api_audit_head_new(void);
void api_audit_head_free(struct audit_head *h);
void api_audit_head_set(struct audit_head *h, const struct auditlog_result *res, int full);
void api_departments_create(struct api_ctx *ctx);
void api_departments_list(struct api_ctx *ctx);
void api_departments_policy(struct api_ctx *ctx);
/* A department renamed, or deleted when empty (api_departments.c). */
void api_departments_patch(struct api_ctx *ctx);
void api_departments_delete(struct api_ctx *ctx);
void api_principals_create(struct api_ctx *ctx);
void api_principals_list(struct api_ctx *ctx);
void api_principals_key_create(struct api_ctx *ctx);
void api_principals_key_revoke(struct api_ctx *ctx);
void api_principals_role_grant(struct api_ctx *ctx);
void api_principals_role_revoke(struct api_ctx *ctx);
void api_principals_me(struct api_ctx *ctx);
/* Administration of principals (api_principals.c): one principal with its grants, its identity
 * and disabled flag changed, its removal. */
void api_principals_get(struct api_ctx *ctx);
void api_principals_patch(struct api_ctx *ctx);
void api_principals_delete(struct api_ctx *ctx);
void api_runs_create(struct api_ctx *ctx);
void api_runs_get(struct api_ctx *ctx);
void api_runs_list(struct api_ctx *ctx);
void api_runs_cancel(struct api_ctx *ctx);
void api_runs_fork(struct api_ctx *ctx);
void api_approvals_list(struct api_ctx *ctx);
void api_approvals_approve(struct api_ctx *ctx);
void api_approvals_deny(struct api_ctx *ctx);
void api_approvals_answer(struct api_ctx *ctx);
/* POST .../answer before its writer job, on the request thread (no store; an api_check_fn): a
 * result the worker's decoder refuses (boundary.h) is answered 400 INVALID_REQUEST there, the
 * approval untouched. */
int api_approvals_answer_before(struct api_ctx *ctx);
void api_system_healthz(struct api_ctx *ctx);
void api_system_readyz(struct api_ctx *ctx);
/* Connectors (api_connectors.c). */
void api_connectors_create(struct api_ctx *ctx);
void api_connectors_list(struct api_ctx *ctx);
void api_connectors_get(struct api_ctx *ctx);
/* A connector changed or deleted (api_connectors.c): 409 while that changes what an approved
 * version may do, unless ?force=true, which revokes those versions in the same transaction. */
void api_connectors_patch(struct api_ctx *ctx);
void api_connectors_delete(struct api_ctx *ctx);

/* Mounts (api_mounts.c). */
void api_mounts_create(struct api_ctx *ctx);
void api_mounts_list(struct api_ctx *ctx);
void api_mounts_delete(struct api_ctx *ctx);
/* Reads `ws`, the `workspace` member of a body (a version's, an ad-hoc run's), for a run in
 * `department`: its structure, and every local_dir / s3_mount entry naming a mount of that
 * department of the matching kind (local, s3), on ctx->store. 0 with the manifest's canonical
 * text (RFC 8785) appended to out; -1 after answering 400 INVALID_REQUEST naming the entry (500
 * when the store failed). */
int api_workspace_read(struct api_ctx *ctx, const struct json_node *ws, const char *department,
                       struct buf *out);
/* Before version `workspace` (its stored manifest) of `department` is approved, in the approving
 * transaction: 0 when every mount it names is still a mount of that department of the entry's
 * kind; -1 after answering 409 CONFLICT naming the entry (a mount deleted or replaced since the
 * version was written), or 500. */
int api_workspace_mounts_ready(struct api_ctx *ctx, const char *workspace, const char *department);

/* Templates and versions (api_templates.c). */
void api_templates_create(struct api_ctx *ctx);
void api_templates_list(struct api_ctx *ctx);
void api_templates_get(struct api_ctx *ctx);
void api_versions_create(struct api_ctx *ctx);
void api_versions_get(struct api_ctx *ctx);
void api_versions_types(struct api_ctx *ctx);
void api_versions_submit(struct api_ctx *ctx);
void api_versions_approve(struct api_ctx *ctx);
void api_versions_reject(struct api_ctx *ctx);
void api_versions_revoke(struct api_ctx *ctx);
void api_versions_diff(struct api_ctx *ctx);
void api_versions_replay(struct api_ctx *ctx);

/* A revocation's effect on runs (api_runs.c). Inside the revoking transaction: every run of the
 * version not yet ended is recorded cancelled (error ABORTED), its pending approvals cancelled
 * and its continuation dropped. After its commit (api_version_revoked): once the writer's batch
 * is durable, the runs executing here are cancelled. */
enum store_rc api_version_revoking(struct api_ctx *ctx, const char *template_name, int64_t version);
void api_version_revoked(struct api_ctx *ctx, const char *template_name, int64_t version);

/* A principal's revocation (a key revoked, a role taken back), in its transaction: every run of
 * `principal` in progress that gov_run_may_go_on no longer allows - no role agent left in its
 * department, or no key left - is recorded cancelled as a version's revocation cancels it
 * (error ABORTED, "cancelled: " and gov's reason), its pending approvals cancelled and its
 * continuation dropped; *ret (NULL: none) lists them. After the transaction
 * api_principal_revoked(ctx, list, committed) stops those executing here once the writer's
 * batch is durable (other nodes hear of them from the store), and frees the list. */
struct api_cancels;
enum store_rc api_principal_revoking(struct api_ctx *ctx, const char *principal,
                                     struct api_cancels **ret);
void api_principal_revoked(struct api_ctx *ctx, struct api_cancels *c, int committed);
/* Before a decision on one of run `id`'s approvals, on the writer: 0 when its principal may
 * still go on with it (gov_run_may_go_on), or when it has ended; otherwise the run is cancelled
 * as above and the caller answered 409 CONFLICT ("run R cannot go on: P no longer holds role
 * agent in department D; it was cancelled"), -1. */
int api_run_may_resume(struct api_ctx *ctx, const char *id);

/* Calls fn(arg) once the writer's current job has committed (a writing route's ctx->tx), or at
 * once with no tx; arg is the caller's, fn frees it. Something that must never happen before
 * the change it follows is durable (a run cancelled because its version was revoked). */
void api_after_commit(struct writer_tx *tx, void (*fn)(void *arg, int committed), void *arg);

/* Workspaces on runs (api_workspaces.c): a run's outputs and its workspace at the end, and
 * uploaded snapshots a run may start from. */
void api_runs_files(struct api_ctx *ctx);
void api_runs_file(struct api_ctx *ctx);
void api_runs_workspace_tar(struct api_ctx *ctx);
void api_snapshots_create(struct api_ctx *ctx);
/* POST /v1/snapshots before its writer job, on the request thread (an api_check_fn): the
 * caller an agent of the query's department, the body a tar a workspace loads. */
int api_snapshots_create_before(struct api_ctx *ctx);

/* Webhooks (api_webhooks.c). */
void api_webhooks_create(struct api_ctx *ctx);
void api_webhooks_list(struct api_ctx *ctx);
void api_webhooks_delete(struct api_ctx *ctx);

/* POST /v1/mcp: the Model Context Protocol for agents (api_mcp.c). */
void api_mcp_post(struct api_ctx *ctx);

/* Single sign-on of the web UI (api_auth.c, docs/sso.md). */
void api_auth_options(struct api_ctx *ctx);
void api_auth_login(struct api_ctx *ctx);
void api_auth_callback(struct api_ctx *ctx);
/* GET /auth/callback before its writer job (an api_check_fn): the state, the code's exchange
 * and the ID token's checks; the claims into ctx->claims. */
int api_auth_callback_before(struct api_ctx *ctx);
void api_auth_logout(struct api_ctx *ctx);

/* GET /v1/openapi.json and GET /metrics (api_system.c). */
void api_system_openapi(struct api_ctx *ctx);
void api_system_metrics(struct api_ctx *ctx);

#endif
