/*
 * lifecycle.c - the states of versions, runs and approvals, their names and their transition
 * tables, and autonomy (rules.h). Each table is data indexed by the enum, so one glance at it
 * answers "can this happen?" and a unit test walks every pair. The tables say what airlockd
 * records (the run_set_status and version_set_state calls of src/server/), not what would be
 * nice: a change to a move is a change here first.
 *
 * Names are the store's column values and the API's; parse is exact (no case folding), since a
 * state read from the store that parses as another would change a decision.
 */
#include <string.h>

#include "rules.h"

/* The index of `name` in a table of n names: 0 and *ret, or -1. */
static int gov_lookup(const char *const *names, size_t n, const char *name, size_t *ret)
{
    if (!name) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (strcmp(names[i], name) == 0) {
            *ret = i;
            return 0;
        }
    }
    return -1;
}

#define GOV_BIT(s) (1u << (unsigned)(s))

/* ---------------------------------------------------------------- versions */

static const char *const gov_version_names[GOV_VERSION_STATES] = {
    "draft", "submitted", "approved", "rejected", "revoked",
};

/* The states each state may move to, as bits. */
static const unsigned gov_version_next[GOV_VERSION_STATES] = {
    [GOV_VERSION_DRAFT] = GOV_BIT(GOV_VERSION_SUBMITTED),
    [GOV_VERSION_SUBMITTED] = GOV_BIT(GOV_VERSION_APPROVED) | GOV_BIT(GOV_VERSION_REJECTED),
    [GOV_VERSION_APPROVED] = GOV_BIT(GOV_VERSION_REVOKED),
};

const char *gov_version_state_name(enum gov_version_state state)
{
    return (unsigned)state < GOV_VERSION_STATES ? gov_version_names[state] : "?";
}

int gov_version_state_parse(const char *name, enum gov_version_state *ret_state)
{
    size_t i = 0;
    if (gov_lookup(gov_version_names, GOV_VERSION_STATES, name, &i) != 0) {
        return -1;
    }
    *ret_state = (enum gov_version_state)i;
    return 0;
}

int gov_version_may_move(enum gov_version_state from, enum gov_version_state to)
{
    if ((unsigned)from >= GOV_VERSION_STATES || (unsigned)to >= GOV_VERSION_STATES) {
        return 0;
    }
    return (gov_version_next[from] & GOV_BIT(to)) != 0;
}

/* Each action: its name, the move it makes, who may make it. Revoking is an approver's or an
 * admin's: an approval taken back must not wait for the one approver who gave it. */
static const struct {
    const char *name;
    enum gov_version_state from;
    enum gov_version_state to;
    unsigned roles;
} gov_actions[GOV_VERSION_ACTIONS] = {
    [GOV_VERSION_SUBMIT] = { "submit", GOV_VERSION_DRAFT, GOV_VERSION_SUBMITTED, GOV_ROLE_AUTHOR },
    [GOV_VERSION_APPROVE] = { "approve", GOV_VERSION_SUBMITTED, GOV_VERSION_APPROVED,
                              GOV_ROLE_APPROVER },
    [GOV_VERSION_REJECT] = { "reject", GOV_VERSION_SUBMITTED, GOV_VERSION_REJECTED,
                             GOV_ROLE_APPROVER },
    [GOV_VERSION_REVOKE] = { "revoke", GOV_VERSION_APPROVED, GOV_VERSION_REVOKED,
                             GOV_ROLE_APPROVER | GOV_ROLE_ADMIN },
};

const char *gov_version_action_name(enum gov_version_action action)
{
    return (unsigned)action < GOV_VERSION_ACTIONS ? gov_actions[action].name : "?";
}

enum gov_version_state gov_version_action_from(enum gov_version_action action)
{
    return (unsigned)action < GOV_VERSION_ACTIONS ? gov_actions[action].from : GOV_VERSION_DRAFT;
}

enum gov_version_state gov_version_action_to(enum gov_version_action action)
{
    return (unsigned)action < GOV_VERSION_ACTIONS ? gov_actions[action].to : GOV_VERSION_DRAFT;
}

unsigned gov_version_action_roles(enum gov_version_action action)
{
    return (unsigned)action < GOV_VERSION_ACTIONS ? gov_actions[action].roles : 0;
}

/* ---------------------------------------------------------------- runs */

static const char *const gov_run_names[GOV_RUN_STATES] = {
    "queued", "running", "awaiting_approval", "completed", "failed", "cancelled", "denied",
};

/* What the server records: api_runs.c, api_approvals.c, runs.c, nodes.c, main.c and the store's
 * run_claim_queued. cancelled -> cancelled is no change of state: an API cancel records the
 * state at once, and the writer adds the execution's outcome when it stops. */
static const unsigned gov_run_next[GOV_RUN_STATES] = {
    [GOV_RUN_QUEUED] =
            GOV_BIT(GOV_RUN_RUNNING) | GOV_BIT(GOV_RUN_CANCELLED) | GOV_BIT(GOV_RUN_FAILED),
    [GOV_RUN_RUNNING] = GOV_BIT(GOV_RUN_COMPLETED) | GOV_BIT(GOV_RUN_FAILED) |
                        GOV_BIT(GOV_RUN_CANCELLED) | GOV_BIT(GOV_RUN_AWAITING_APPROVAL) |
                        GOV_BIT(GOV_RUN_QUEUED),
    [GOV_RUN_AWAITING_APPROVAL] = GOV_BIT(GOV_RUN_RUNNING) | GOV_BIT(GOV_RUN_QUEUED) |
                                  GOV_BIT(GOV_RUN_CANCELLED) | GOV_BIT(GOV_RUN_DENIED) |
                                  GOV_BIT(GOV_RUN_FAILED),
    [GOV_RUN_CANCELLED] = GOV_BIT(GOV_RUN_CANCELLED),
};

const char *gov_run_state_name(enum gov_run_state state)
{
    return (unsigned)state < GOV_RUN_STATES ? gov_run_names[state] : "?";
}

int gov_run_state_parse(const char *name, enum gov_run_state *ret_state)
{
    size_t i = 0;
    if (gov_lookup(gov_run_names, GOV_RUN_STATES, name, &i) != 0) {
        return -1;
    }
    *ret_state = (enum gov_run_state)i;
    return 0;
}

int gov_run_state_ended(enum gov_run_state state)
{
    return state != GOV_RUN_QUEUED && state != GOV_RUN_RUNNING &&
           state != GOV_RUN_AWAITING_APPROVAL;
}

unsigned gov_run_state_http_status(enum gov_run_state state)
{
    return gov_run_state_ended(state) ? 200 : 202;
}

int gov_run_state_initial(enum gov_run_state state)
{
    return state == GOV_RUN_QUEUED || state == GOV_RUN_RUNNING ||
           state == GOV_RUN_AWAITING_APPROVAL;
}

int gov_run_may_move(enum gov_run_state from, enum gov_run_state to)
{
    if ((unsigned)from >= GOV_RUN_STATES || (unsigned)to >= GOV_RUN_STATES) {
        return 0;
    }
    return (gov_run_next[from] & GOV_BIT(to)) != 0;
}

/* ---------------------------------------------------------------- approvals */

static const char *const gov_approval_names[GOV_APPROVAL_STATES] = {
    "pending", "approved", "denied", "cancelled", "answered",
};

const char *gov_approval_state_name(enum gov_approval_state state)
{
    return (unsigned)state < GOV_APPROVAL_STATES ? gov_approval_names[state] : "?";
}

int gov_approval_state_parse(const char *name, enum gov_approval_state *ret_state)
{
    size_t i = 0;
    if (gov_lookup(gov_approval_names, GOV_APPROVAL_STATES, name, &i) != 0) {
        return -1;
    }
    *ret_state = (enum gov_approval_state)i;
    return 0;
}

int gov_approval_may_move(enum gov_approval_state from, enum gov_approval_state to)
{
    return from == GOV_APPROVAL_PENDING &&
           (to == GOV_APPROVAL_APPROVED || to == GOV_APPROVAL_DENIED ||
            to == GOV_APPROVAL_CANCELLED || to == GOV_APPROVAL_ANSWERED);
}

/* ---------------------------------------------------------------- autonomy */

static const char *const gov_autonomy_names[] = { "autonomous", "supervised" };
#define GOV_AUTONOMIES (sizeof gov_autonomy_names / sizeof gov_autonomy_names[0])

const char *gov_autonomy_name(enum gov_autonomy autonomy)
{
    return (unsigned)autonomy < GOV_AUTONOMIES ? gov_autonomy_names[autonomy] : "?";
}

int gov_autonomy_parse(const char *name, enum gov_autonomy *ret_autonomy)
{
    size_t i = 0;
    if (gov_lookup(gov_autonomy_names, GOV_AUTONOMIES, name, &i) != 0) {
        return -1;
    }
    *ret_autonomy = (enum gov_autonomy)i;
    return 0;
}

enum gov_autonomy gov_autonomy_stricter(enum gov_autonomy a, enum gov_autonomy b)
{
    /* anything but autonomous counts as supervised: a value outside the enum must not make a
     * run go without a person */
    return a == GOV_AUTONOMOUS && b == GOV_AUTONOMOUS ? GOV_AUTONOMOUS : GOV_SUPERVISED;
}

enum gov_autonomy gov_autonomy_effective(enum gov_run_kind kind, enum gov_autonomy version,
                                         enum gov_autonomy department)
{
    if (kind == GOV_RUN_ADHOC) {
        /* ad-hoc code has no version: the department alone decides */
        return gov_autonomy_stricter(department, GOV_AUTONOMOUS);
    }
    return gov_autonomy_stricter(version, department);
}
