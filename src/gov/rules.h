/*
 * rules.h - the rules of airlockd as pure functions: roles and a principal's grants; the
 * lifecycles of versions, runs and approvals as enums with transition tables; four eyes;
 * effective autonomy; and who may see, start, cancel or decide what.
 *
 * The caller brings the facts (copied from its store rows) and gets a decision with its reason,
 * Redis ACL style: nothing here reads, writes, allocates, logs or keeps state, so every function
 * is thread-safe and a table of facts tests it without a server. States are enums; strings only
 * at the edges (the _name and _parse functions, for the store's columns and the API's JSON).
 *
 * Each decision answers what airlockd's handlers answered (HTTP status, error code, message),
 * including the router's first check of a route's roles in any department, with one fix: a run
 * is visible per run (an agent of finance who is an author in hr does not see another agent's
 * finance runs), where the handlers decided over all of a principal's grants at once.
 */
#ifndef AIRLOCK_GOV_RULES_H
#define AIRLOCK_GOV_RULES_H

#include <stddef.h>
#include <stdint.h>

#define GOV_NAME_MAX   64  /* bytes of a principal's or department's name, like STORE_NAME_MAX */
#define GOV_GRANTS_MAX 64  /* grants a principal holds, like AUTH_GRANTS_MAX */
#define GOV_WHY_MAX    256 /* bytes of a decision's message, NUL included */
#define GOV_EVERYWHERE "*" /* the department of a grant for every department */

/* ---------------------------------------------------------------- roles and principals */

/* The roles, as bits (the values of auth.h's enum auth_role, so a mask converts as is). */
enum gov_role {
    GOV_ROLE_ADMIN = 1u << 0,
    GOV_ROLE_AUTHOR = 1u << 1,
    GOV_ROLE_APPROVER = 1u << 2,
    GOV_ROLE_AUDITOR = 1u << 3,
    GOV_ROLE_AGENT = 1u << 4,
};
#define GOV_ROLES_ALL 0x1fu

/* The bit of a role's name ("admin", "author", "approver", "auditor", "agent"); 0 for any other
 * name or NULL. */
unsigned gov_role_bit(const char *name);
/* The name of one role bit; "?" for 0, several bits or an unknown bit. Static storage. */
const char *gov_role_name(unsigned bit);

/* One role granted in one department, or in GOV_EVERYWHERE. */
struct gov_grant {
    unsigned role; /* exactly one enum gov_role bit */
    char department[GOV_NAME_MAX + 1];
};

/* Who asks, and every grant it holds, in any mix of roles and departments. Plain data in the
 * caller's storage (about 4.2 KiB): fill it with gov_principal_init and gov_principal_grant from
 * the store's rows, or by hand. A zeroed struct is a principal without a name or grants. */
struct gov_principal {
    char name[GOV_NAME_MAX + 1];
    size_t ngrants;
    struct gov_grant grants[GOV_GRANTS_MAX];
};

/* Empties *p and names it. 0, or -1 for a NULL, empty or longer than GOV_NAME_MAX name (*p is
 * then a principal without a name, which owns nothing). */
int gov_principal_init(struct gov_principal *p, const char *name);
/* Adds `role` (one bit) in `department` (a name or GOV_EVERYWHERE). 0, or -1 with *p unchanged
 * when role is not exactly one known bit, department is NULL, empty or over GOV_NAME_MAX bytes,
 * or p holds GOV_GRANTS_MAX grants already. A grant held twice changes no decision. */
int gov_principal_grant(struct gov_principal *p, unsigned role, const char *department);
/* 1 when p holds one of `roles` (a mask) in `department` or in GOV_EVERYWHERE; with department
 * NULL, in any department at all. 0 otherwise. */
int gov_holds(const struct gov_principal *p, unsigned roles, const char *department);

/* ---------------------------------------------------------------- decisions */

/* Why a decision came out as it did. Each reason has one HTTP status and error code. */
enum gov_reason {
    GOV_ALLOWED = 0,         /* status 0, code "" */
    GOV_NO_ROLE = 1,         /* 403 FORBIDDEN: a role missing (anywhere, or in the department) */
    GOV_HIDDEN = 2,          /* 404 NOT_FOUND: the object is not shown to this principal */
    GOV_FOUR_EYES = 3,       /* 409 CONFLICT: one's own version or run */
    GOV_WRONG_STATE = 4,     /* 409 CONFLICT: the object is not in the state the action leaves */
    GOV_REVOKED = 5,         /* 409 TEMPLATE_REVOKED: a run of a revoked version */
    GOV_NOT_APPROVED = 6,    /* 409 VERSION_NOT_APPROVED: a run of a version not approved */
    GOV_STARTER_REVOKED = 7, /* 409 CONFLICT: a run whose principal lost its role or its keys */
};

/* A decision: filled by every gov_*_may_* call, allowed or not.
 * A handler answers a denial with GOV_NO_ROLE through api_denied(ctx, 403, why) (the refusal is
 * audited as auth.denied, as the router's and api_allow's are), and any other denial with
 * api_error(ctx, status, code, "%s", why). */
struct gov_decision {
    enum gov_reason reason;
    unsigned status;       /* HTTP status of a denial; 0 when allowed */
    const char *code;      /* its error code ("FORBIDDEN", ...); "" when allowed. Static. */
    char why[GOV_WHY_MAX]; /* the message the handler answers; "" when allowed */
};

/* The reason's name ("allowed", "no_role", "hidden", "four_eyes", "wrong_state", "revoked",
 * "not_approved", "starter_revoked"), its HTTP status and its error code; "?", 500, "INTERNAL" for
 * a value outside the enum. Static storage. */
const char *gov_reason_name(enum gov_reason reason);
unsigned gov_reason_status(enum gov_reason reason);
const char *gov_reason_code(enum gov_reason reason);

/* The generic check of a route's roles (auth_check for AUTH_RESOURCE, then api_allow): allowed
 * when p holds one of `roles` in `department` or GOV_EVERYWHERE (department NULL: in any
 * department). Denied GOV_NO_ROLE "P needs role R1|R2" when p holds them nowhere, "P needs role
 * R1|R2 in department D" when only elsewhere. Returns 1 when allowed, 0 when denied; *ret
 * always filled. Templates and versions are created with roles GOV_ROLE_AUTHOR; MCP lists a
 * template's tool to an agent with gov_holds(p, GOV_ROLE_AGENT, department). */
int gov_may(const struct gov_principal *p, unsigned roles, const char *department,
            struct gov_decision *ret);

/* ---------------------------------------------------------------- versions of templates */

enum gov_version_state {
    GOV_VERSION_DRAFT = 0, /* every version is created a draft */
    GOV_VERSION_SUBMITTED = 1,
    GOV_VERSION_APPROVED = 2,
    GOV_VERSION_REJECTED = 3, /* final: a new version is written instead */
    GOV_VERSION_REVOKED = 4,  /* final */
};
#define GOV_VERSION_STATES 5

/* "draft", "submitted", "approved", "rejected", "revoked"; "?" outside the enum. */
const char *gov_version_state_name(enum gov_version_state state);
/* The state of a name (exact, lower case): 0 and *ret_state, or -1 (NULL or unknown). */
int gov_version_state_parse(const char *name, enum gov_version_state *ret_state);
/* 1 when a version may go from `from` to `to`: draft -> submitted -> approved | rejected,
 * approved -> revoked; nothing else (no resubmission, no revoking a submitted version). */
int gov_version_may_move(enum gov_version_state from, enum gov_version_state to);

enum gov_version_action {
    GOV_VERSION_SUBMIT = 0,  /* draft -> submitted, by an author */
    GOV_VERSION_APPROVE = 1, /* submitted -> approved, by an approver not its author */
    GOV_VERSION_REJECT = 2,  /* submitted -> rejected, by an approver (its author too) */
    GOV_VERSION_REVOKE = 3,  /* approved -> revoked, by an approver or an admin (its author too) */
};
#define GOV_VERSION_ACTIONS 4

/* "submit", "approve", "reject", "revoke" ("version." NAME is the audit action); "?" outside. */
const char *gov_version_action_name(enum gov_version_action action);
/* The state an action leaves and the state it makes (DRAFT for both outside the enum). */
enum gov_version_state gov_version_action_from(enum gov_version_action action);
enum gov_version_state gov_version_action_to(enum gov_version_action action);
/* The roles that may take the action (a mask; 0 outside the enum). */
unsigned gov_version_action_roles(enum gov_version_action action);

/* A version as its row says. Strings are borrowed for the call; NULL reads as "". */
struct gov_version {
    const char *template_name;
    int64_t number;         /* 1, 2, ... (for messages) */
    const char *department; /* the template's */
    const char *author;     /* the principal that wrote it */
    enum gov_version_state state;
};

/* May p take `action` on v (api_versions_submit/approve/reject/revoke)? Checked in the handler's
 * order: the action's roles in v's department (GOV_NO_ROLE, 403), four eyes - v's author never
 * approves it, in whatever state v is (GOV_FOUR_EYES, 409 CONFLICT "four eyes: A wrote version N
 * of T and cannot approve it") -, then v's state (GOV_WRONG_STATE, 409 CONFLICT "version N of T
 * is S, not FROM"). An action outside the enum is denied GOV_NO_ROLE. 1 when allowed; *ret
 * always filled. The caller re-checks the state in its transaction (store version_set_state). */
int gov_version_may_act(const struct gov_principal *p, const struct gov_version *v,
                        enum gov_version_action action, struct gov_decision *ret);

/* How much of a department's templates p sees (tpl_sees, tpl_full_view). */
enum gov_view {
    GOV_VIEW_NONE = 0,     /* nothing: the template is not listed, nor found (404) */
    GOV_VIEW_APPROVED = 1, /* approved versions only (an agent, and nothing more, there) */
    GOV_VIEW_ALL = 2,      /* every version */
};

/* ALL for an admin (of any department: admin is granted for every department) and for an
 * author, approver or auditor in `department` or everywhere (an auditor of finance does not
 * read hr); APPROVED for any other role there (an agent); NONE otherwise. */
enum gov_view gov_template_view(const struct gov_principal *p, const char *department);
/* A template as its rows say. Strings are borrowed for the call; NULL reads as "". */
struct gov_template {
    const char *name;
    const char *department;
    int approved; /* 1 when one of its versions is approved now */
};

/* May p read template t (every route that names a template: reads, the version routes, the
 * moves)? Denied GOV_NO_ROLE to a principal without any role (the router), GOV_HIDDEN (404
 * NOT_FOUND "no template T", what a template that does not exist answers, naming no
 * department) when its view is NONE, or APPROVED and t has no approved version. 1 when
 * allowed; *ret always filled. */
int gov_template_may_read(const struct gov_principal *p, const struct gov_template *t,
                          struct gov_decision *ret);
/* May p read version v (every route that names a version)? As gov_template_may_read (the
 * router's GOV_NO_ROLE, GOV_HIDDEN "no template T" to a view of NONE), then a version other than
 * approved is GOV_HIDDEN (404 NOT_FOUND "no version N of template T") to a view of APPROVED
 * only. 1 when allowed; *ret always filled. */
int gov_version_may_read(const struct gov_principal *p, const struct gov_version *v,
                         struct gov_decision *ret);

/* ---------------------------------------------------------------- runs */

enum gov_run_state {
    GOV_RUN_QUEUED = 0, /* waits for a node to claim it */
    GOV_RUN_RUNNING = 1,
    GOV_RUN_AWAITING_APPROVAL = 2, /* waits for a person */
    GOV_RUN_COMPLETED = 3,         /* ended: returned a value */
    GOV_RUN_FAILED = 4,            /* ended: threw, or could not go on */
    GOV_RUN_CANCELLED = 5,         /* ended: cancelled, or its version revoked */
    GOV_RUN_DENIED = 6,            /* ended: its start was denied */
};
#define GOV_RUN_STATES 7

/* "queued", "running", "awaiting_approval", "completed", "failed", "cancelled", "denied"; "?"
 * outside the enum. */
const char *gov_run_state_name(enum gov_run_state state);
/* The state of a name (exact): 0 and *ret_state, or -1 (NULL or unknown). */
int gov_run_state_parse(const char *name, enum gov_run_state *ret_state);
/* 1 for completed, failed, cancelled and denied (and outside the enum): nothing changes it
 * any more but its recorded outcome. */
int gov_run_state_ended(enum gov_run_state state);
/* The HTTP status of a run's answer (runs_json_by_id): 202 while it waits - queued, running,
 * awaiting_approval -, 200 once ended. */
unsigned gov_run_state_http_status(enum gov_run_state state);
/* 1 for the states a run is created in: running (executes at once), queued (nobody waits for
 * it and a node will claim it), awaiting_approval (supervised: its start waits for a person). */
int gov_run_state_initial(enum gov_run_state state);
/* 1 when the server may record a run going from `from` to `to`:
 *   queued            -> running (claimed), cancelled, failed (abandoned or unresumable)
 *   running           -> completed, failed, cancelled, awaiting_approval (a call to approve),
 *                        queued (its node died: another takes it over)
 *   awaiting_approval -> running (all decided), queued (decided, with several nodes),
 *                        cancelled, denied (its start denied), failed (unresumable)
 *   cancelled         -> cancelled (the execution's outcome added to an API cancel)
 * and nothing else: completed, failed and denied are final. */
int gov_run_may_move(enum gov_run_state from, enum gov_run_state to);

/* A run as its row says. Strings are borrowed for the call; NULL reads as "". */
struct gov_run {
    const char *id;         /* for messages */
    const char *department; /* where it runs */
    const char *principal;  /* the principal that started it */
    enum gov_run_state state;
};

/* May p see run r (api_runs_get; api_runs_list keeps a run when allowed)? Allowed to the
 * principal that started it, and to a holder of a role other than agent (admin, author,
 * approver, auditor) in r's department or everywhere - decided per run: an agent there sees
 * only its own runs, whatever it holds elsewhere. Denied GOV_NO_ROLE to a principal without any
 * role at all (the router), GOV_HIDDEN (404 NOT_FOUND "no run ID") to an agent of the department
 * for another's run, GOV_NO_ROLE to one without a role there. 1 when allowed; *ret always
 * filled. */
int gov_run_may_see(const struct gov_principal *p, const struct gov_run *r,
                    struct gov_decision *ret);
/* May p cancel run r (api_runs_cancel)? The route needs admin, approver or agent somewhere
 * (GOV_NO_ROLE); then its own run, or an approver or admin in r's department or everywhere.
 * Another's run is refused GOV_NO_ROLE ("... admin|approver|agent in department D") without one
 * of those roles there, GOV_HIDDEN when gov_run_may_see hides it, GOV_NO_ROLE ("... admin|
 * approver in department D") when p sees it. A permitted cancel of an ended run is
 * GOV_WRONG_STATE (409 CONFLICT "run ID has ended (S)"). 1 when allowed; *ret always filled. */
int gov_run_may_cancel(const struct gov_principal *p, const struct gov_run *r,
                       struct gov_decision *ret);

enum gov_run_kind {
    GOV_RUN_TEMPLATE = 0, /* the approved version of a template */
    GOV_RUN_ADHOC = 1,    /* source given with the request, where the department allows it */
};

/* What a new run would start (api_runs_create), once its version is found. */
struct gov_run_start {
    enum gov_run_kind kind;
    const char *department;       /* the version's, or the request's for ad-hoc; NULL reads "" */
    const char *template_name;    /* GOV_RUN_TEMPLATE: for messages */
    int64_t version;              /* GOV_RUN_TEMPLATE: the version asked for, 0 for the newest */
    enum gov_version_state state; /* GOV_RUN_TEMPLATE: the version's */
};

/* May p start s? An agent somewhere (GOV_NO_ROLE, the router). A template's version p may not
 * read is GOV_HIDDEN (404 NOT_FOUND "no template T", "... with that version" when one was
 * asked for: what a template or version that does not exist answers), except that a revoked
 * version stays known to a reader of the department's approved versions (it was approved).
 * Then an agent of its department or everywhere (GOV_NO_ROLE); the version must be approved:
 * revoked is GOV_REVOKED (409 TEMPLATE_REVOKED "template T version N is revoked"), any other
 * state GOV_NOT_APPROVED (409 VERSION_NOT_APPROVED "template T version N is S, not approved"),
 * which only a reader of every version of the department (an author, say) gets. The
 * department's policy (allow_adhoc) stays the handler's: its 404 for an unknown department
 * comes first. 1 when allowed; *ret always filled. */
int gov_run_may_start(const struct gov_principal *p, const struct gov_run_start *s,
                      struct gov_decision *ret);

/* May p fork run r (POST /v1/runs/{id}/fork), starting s, a new run of r's version? Only a
 * principal that may see r (gov_run_may_see; any denial but the router's GOV_NO_ROLE reads
 * GOV_HIDDEN, 404 NOT_FOUND "no run ID": a run it may not see is not there) and may start s
 * (gov_run_may_start: a revoked version is GOV_REVOKED). 1 when allowed; *ret always filled. */
int gov_run_may_fork(const struct gov_principal *p, const struct gov_run *r,
                     const struct gov_run_start *s, struct gov_decision *ret);

/* May run r go on - execute, start once approved, resume after a decision? Only while the
 * principal that started it still holds what let it start it: role agent in r's department or
 * everywhere (`starter`: its grants as the store has them now) and at least one API key that is
 * not revoked (`starter_keys`: how many it has). Revoking either takes the run with it, so an
 * approver's decision never resumes a run its principal could no longer start. Denied
 * GOV_STARTER_REVOKED (409 CONFLICT "P has no API key left" or "P no longer holds role agent in
 * department D"). 1 when allowed; *ret always filled. */
int gov_run_may_go_on(const struct gov_principal *starter, size_t starter_keys,
                      const struct gov_run *r, struct gov_decision *ret);

/* ---------------------------------------------------------------- autonomy */

enum gov_autonomy {
    GOV_AUTONOMOUS = 0, /* runs without a person */
    GOV_SUPERVISED = 1, /* its start waits for an approver */
};

/* "autonomous", "supervised"; "?" outside the enum. */
const char *gov_autonomy_name(enum gov_autonomy autonomy);
/* 0 and *ret_autonomy, or -1 (NULL or unknown). */
int gov_autonomy_parse(const char *name, enum gov_autonomy *ret_autonomy);
/* The stricter of two (supervised when either is). */
enum gov_autonomy gov_autonomy_stricter(enum gov_autonomy a, enum gov_autonomy b);
/* A new run's autonomy: for GOV_RUN_TEMPLATE the stricter of its version's and its
 * department's; GOV_RUN_ADHOC has no version and takes the department's (`version` unread). */
enum gov_autonomy gov_autonomy_effective(enum gov_run_kind kind, enum gov_autonomy version,
                                         enum gov_autonomy department);

/* ---------------------------------------------------------------- approvals */

enum gov_approval_state {
    GOV_APPROVAL_PENDING = 0,
    GOV_APPROVAL_APPROVED = 1,
    GOV_APPROVAL_DENIED = 2,
    GOV_APPROVAL_CANCELLED = 3, /* its run was cancelled or its version revoked */
    GOV_APPROVAL_ANSWERED = 4,  /* a call in doubt a person gave the result of */
};
#define GOV_APPROVAL_STATES 5

/* "pending", "approved", "denied", "cancelled", "answered"; "?" outside the enum. */
const char *gov_approval_state_name(enum gov_approval_state state);
/* 0 and *ret_state, or -1 (NULL or unknown). */
int gov_approval_state_parse(const char *name, enum gov_approval_state *ret_state);
/* 1 for pending -> approved | denied | cancelled | answered; an approval is decided once. */
int gov_approval_may_move(enum gov_approval_state from, enum gov_approval_state to);

/* An approval (of a supervised run's start, or of a host call) as its row says. Strings are
 * borrowed for the call; NULL reads as "". */
struct gov_approval {
    const char *id;           /* for messages */
    const char *run;          /* for messages */
    const char *department;   /* its run's */
    const char *requested_by; /* the principal that started the run */
    enum gov_approval_state state;
};

/* May p see approval a (api_approvals_list keeps it when allowed)? An approver, admin or
 * auditor of its department or everywhere; GOV_NO_ROLE otherwise. 1 when allowed; *ret always
 * filled. */
int gov_approval_may_see(const struct gov_principal *p, const struct gov_approval *a,
                         struct gov_decision *ret);
/* May p approve or deny a (api_approvals_decide)? Checked in the handler's order: an approver
 * of its department or everywhere (GOV_NO_ROLE), four eyes - the principal that started the run
 * never decides its approvals, of either kind (GOV_FOUR_EYES, 409 CONFLICT "four eyes: P started
 * run R and cannot decide its approval") -, then pending (GOV_WRONG_STATE, 409 CONFLICT
 * "approval ID is S already"). 1 when allowed; *ret always filled. */
int gov_approval_may_decide(const struct gov_principal *p, const struct gov_approval *a,
                            struct gov_decision *ret);

/* ---------------------------------------------------------------- version sources */

/* A character of a source: its line and column from 1 (the column counts characters). */
struct gov_source_char {
    unsigned line;
    unsigned column;
    uint32_t code_point;
};

/* The first bidirectional control character of a version's source (U+202A..U+202E,
 * U+2066..U+2069, U+200E, U+200F, U+061C), which can make a reviewer read code where a comment
 * or a string is (Trojan Source, CVE-2021-42574). A version holding one anywhere is refused, as
 * rustc refuses them; a string that needs one writes it as an escape ("\u202e"). 1 with *ret
 * filled, 0 when there is none. `src` is UTF-8 (invalid bytes count as one character each). */
int gov_source_bidi(const char *src, size_t len, struct gov_source_char *ret);

/* ---------------------------------------------------------------- audit */

/* May p read the audit log (list, export, verify, checkpoint)? An admin or auditor of any
 * department; GOV_NO_ROLE otherwise. 1 when allowed; *ret always filled. */
int gov_audit_may_read(const struct gov_principal *p, struct gov_decision *ret);
/* May p see a record of `department` (NULL or "": a record without one - principals, keys,
 * grants for all, refusals, checkpoints)? gov_audit_may_read, then an admin, or an auditor of
 * the department or everywhere; a record without a department only to an admin or an auditor
 * everywhere, who thus see every record (the export, whose chain verifies only whole). Denied
 * GOV_NO_ROLE ("P needs role admin|auditor in department D", D "*" for none). 1 when allowed;
 * *ret always filled. */
int gov_audit_may_see(const struct gov_principal *p, const char *department,
                      struct gov_decision *ret);

#endif
