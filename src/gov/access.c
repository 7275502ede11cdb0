/*
 * access.c - who may do what (rules.h): a principal's grants against an object's department,
 * owner and state, answered as a decision with its HTTP status, code and message.
 *
 * Every decision starts with the check the router makes before a handler runs (the route's
 * roles in any department), so that a decision taken here alone answers what the router and the
 * handler answered together, message included. Then it follows the handler's order of checks:
 * the order is part of the contract, since it decides which refusal a principal sees when
 * several apply (four eyes before the state, for instance).
 *
 * Runs are decided per run: the principal's grants that cover the run's department decide, never
 * its grants elsewhere. The handlers asked "is every grant an agent grant?", so an agent of one
 * department who held any other role anywhere saw every run of its agent departments.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rules.h"

static const char *const gov_role_names[] = { "admin", "author", "approver", "auditor", "agent" };
#define GOV_NROLES (sizeof gov_role_names / sizeof gov_role_names[0])

/* The roles other than agent: the ones that see a department's runs. */
#define GOV_ROLES_STAFF (GOV_ROLES_ALL & ~(unsigned)GOV_ROLE_AGENT)

static const char *gov_str(const char *s)
{
    return s ? s : "";
}

unsigned gov_role_bit(const char *name)
{
    for (unsigned i = 0; name && i < GOV_NROLES; i++) {
        if (strcmp(name, gov_role_names[i]) == 0) {
            return 1u << i;
        }
    }
    return 0;
}

const char *gov_role_name(unsigned bit)
{
    for (unsigned i = 0; i < GOV_NROLES; i++) {
        if (bit == 1u << i) {
            return gov_role_names[i];
        }
    }
    return "?";
}

int gov_principal_init(struct gov_principal *p, const char *name)
{
    memset(p, 0, sizeof *p);
    if (!name || !name[0] || strlen(name) > GOV_NAME_MAX) {
        return -1;
    }
    memcpy(p->name, name, strlen(name) + 1);
    return 0;
}

int gov_principal_grant(struct gov_principal *p, unsigned role, const char *department)
{
    int one_role = role != 0 && (role & (role - 1)) == 0 && (role & ~GOV_ROLES_ALL) == 0;
    if (!one_role || !department || !department[0] || strlen(department) > GOV_NAME_MAX ||
        p->ngrants >= GOV_GRANTS_MAX) {
        return -1;
    }
    struct gov_grant *g = &p->grants[p->ngrants++];
    g->role = role;
    memcpy(g->department, department, strlen(department) + 1);
    return 0;
}

int gov_holds(const struct gov_principal *p, unsigned roles, const char *department)
{
    size_t n = p->ngrants < GOV_GRANTS_MAX ? p->ngrants : GOV_GRANTS_MAX;
    for (size_t i = 0; i < n; i++) {
        const struct gov_grant *g = &p->grants[i];
        if ((g->role & roles) && (!department || strcmp(g->department, GOV_EVERYWHERE) == 0 ||
                                  strcmp(g->department, department) == 0)) {
            return 1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- decisions */

static const struct {
    const char *name;
    unsigned status;
    const char *code;
} gov_reasons[] = {
    [GOV_ALLOWED] = { "allowed", 0, "" },
    [GOV_NO_ROLE] = { "no_role", 403, "FORBIDDEN" },
    [GOV_HIDDEN] = { "hidden", 404, "NOT_FOUND" },
    [GOV_FOUR_EYES] = { "four_eyes", 409, "CONFLICT" },
    [GOV_WRONG_STATE] = { "wrong_state", 409, "CONFLICT" },
    [GOV_REVOKED] = { "revoked", 409, "TEMPLATE_REVOKED" },
    [GOV_NOT_APPROVED] = { "not_approved", 409, "VERSION_NOT_APPROVED" },
    [GOV_STARTER_REVOKED] = { "starter_revoked", 409, "CONFLICT" },
};
#define GOV_NREASONS (sizeof gov_reasons / sizeof gov_reasons[0])

const char *gov_reason_name(enum gov_reason reason)
{
    return (unsigned)reason < GOV_NREASONS ? gov_reasons[reason].name : "?";
}

unsigned gov_reason_status(enum gov_reason reason)
{
    return (unsigned)reason < GOV_NREASONS ? gov_reasons[reason].status : 500;
}

const char *gov_reason_code(enum gov_reason reason)
{
    return (unsigned)reason < GOV_NREASONS ? gov_reasons[reason].code : "INTERNAL";
}

static int gov_allow(struct gov_decision *ret)
{
    ret->reason = GOV_ALLOWED;
    ret->status = 0;
    ret->code = "";
    ret->why[0] = '\0';
    return 1;
}

static int gov_deny(struct gov_decision *ret, enum gov_reason reason, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static int gov_deny(struct gov_decision *ret, enum gov_reason reason, const char *fmt, ...)
{
    va_list ap;
    ret->reason = reason;
    ret->status = gov_reason_status(reason);
    ret->code = gov_reason_code(reason);
    va_start(ap, fmt);
    vsnprintf(ret->why, sizeof ret->why, fmt, ap);
    va_end(ap);
    return 0;
}

/* "admin|approver": the names of a mask's roles in bit order, as auth_check writes them. */
static void gov_roles_text(unsigned roles, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (unsigned i = 0; i < GOV_NROLES && used < len; i++) {
        if (roles & (1u << i)) {
            int n = snprintf(out + used, len - used, "%s%s", used ? "|" : "", gov_role_names[i]);
            used += n > 0 ? (size_t)n : 0;
        }
    }
}

/* Denied GOV_NO_ROLE in auth_check's words: the roles in the department, or anywhere. */
static int gov_deny_role(const struct gov_principal *p, unsigned roles, const char *department,
                         struct gov_decision *ret)
{
    char text[64];
    gov_roles_text(roles, text, sizeof text);
    if (department) {
        return gov_deny(ret, GOV_NO_ROLE, "%s needs role %s in department %s", p->name, text,
                        department);
    }
    return gov_deny(ret, GOV_NO_ROLE, "%s needs role %s", p->name, text);
}

int gov_may(const struct gov_principal *p, unsigned roles, const char *department,
            struct gov_decision *ret)
{
    if (!gov_holds(p, roles, NULL)) {
        return gov_deny_role(p, roles, NULL, ret);
    }
    if (department && !gov_holds(p, roles, department)) {
        return gov_deny_role(p, roles, department, ret);
    }
    return gov_allow(ret);
}

/* An empty name owns nothing: a principal without a name is not the author of every version
 * whose row lost its author. */
static int gov_is(const struct gov_principal *p, const char *name)
{
    return p->name[0] && name && strcmp(p->name, name) == 0;
}

/* ---------------------------------------------------------------- versions */

int gov_version_may_act(const struct gov_principal *p, const struct gov_version *v,
                        enum gov_version_action action, struct gov_decision *ret)
{
    const char *tpl = gov_str(v->template_name);
    unsigned roles = gov_version_action_roles(action);
    if (roles == 0) {
        return gov_deny(ret, GOV_NO_ROLE, "no such action on a version");
    }
    if (!gov_may(p, roles, gov_str(v->department), ret)) {
        return 0;
    }
    if (action == GOV_VERSION_APPROVE && gov_is(p, v->author)) {
        return gov_deny(ret, GOV_FOUR_EYES,
                        "four eyes: %s wrote version %" PRId64 " of %s and cannot approve it",
                        p->name, v->number, tpl);
    }
    enum gov_version_state from = gov_version_action_from(action);
    if (v->state != from) {
        return gov_deny(ret, GOV_WRONG_STATE, "version %" PRId64 " of %s is %s, not %s", v->number,
                        tpl, gov_version_state_name(v->state), gov_version_state_name(from));
    }
    return gov_allow(ret);
}

enum gov_view gov_template_view(const struct gov_principal *p, const char *department)
{
    /* an admin reads every department (admin is granted for all); an auditor reads the
     * departments it audits, as an author or approver those it works in */
    if (gov_holds(p, GOV_ROLE_ADMIN, NULL) ||
        gov_holds(p, GOV_ROLE_AUTHOR | GOV_ROLE_APPROVER | GOV_ROLE_AUDITOR, gov_str(department))) {
        return GOV_VIEW_ALL;
    }
    return gov_holds(p, GOV_ROLES_ALL, gov_str(department)) ? GOV_VIEW_APPROVED : GOV_VIEW_NONE;
}

int gov_template_may_read(const struct gov_principal *p, const struct gov_template *t,
                          struct gov_decision *ret)
{
    if (!gov_may(p, GOV_ROLES_ALL, NULL, ret)) {
        return 0;
    }
    enum gov_view view = gov_template_view(p, t->department);
    if (view == GOV_VIEW_NONE || (view == GOV_VIEW_APPROVED && !t->approved)) {
        /* as if it did not exist: a refusal would confirm the name and name its department */
        return gov_deny(ret, GOV_HIDDEN, "no template %s", gov_str(t->name));
    }
    return gov_allow(ret);
}

int gov_version_may_read(const struct gov_principal *p, const struct gov_version *v,
                         struct gov_decision *ret)
{
    enum gov_view view = gov_template_view(p, v->department);
    if (!gov_may(p, GOV_ROLES_ALL, NULL, ret)) {
        return 0;
    }
    if (view == GOV_VIEW_NONE) {
        return gov_deny(ret, GOV_HIDDEN, "no template %s", gov_str(v->template_name));
    }
    if (view == GOV_VIEW_APPROVED && v->state != GOV_VERSION_APPROVED) {
        /* to an agent, a version not approved does not exist */
        return gov_deny(ret, GOV_HIDDEN, "no version %" PRId64 " of template %s", v->number,
                        gov_str(v->template_name));
    }
    return gov_allow(ret);
}

/* ---------------------------------------------------------------- runs */

int gov_run_may_see(const struct gov_principal *p, const struct gov_run *r,
                    struct gov_decision *ret)
{
    const char *dept = gov_str(r->department);
    if (!gov_may(p, GOV_ROLES_ALL, NULL, ret)) {
        return 0;
    }
    if (gov_is(p, r->principal) || gov_holds(p, GOV_ROLES_STAFF, dept)) {
        return gov_allow(ret);
    }
    if (gov_holds(p, GOV_ROLE_AGENT, dept)) {
        /* another agent's run: as if it did not exist */
        return gov_deny(ret, GOV_HIDDEN, "no run %s", gov_str(r->id));
    }
    return gov_deny_role(p, GOV_ROLES_ALL, dept, ret);
}

int gov_run_may_fork(const struct gov_principal *p, const struct gov_run *r,
                     const struct gov_run_start *s, struct gov_decision *ret)
{
    if (!gov_may(p, GOV_ROLES_ALL, NULL, ret)) {
        return 0;
    }
    /* a fork shows the original's answers: whoever may not see the run is told it is not there */
    if (!gov_run_may_see(p, r, ret)) {
        return gov_deny(ret, GOV_HIDDEN, "no run %s", gov_str(r->id));
    }
    return gov_run_may_start(p, s, ret);
}

int gov_run_may_cancel(const struct gov_principal *p, const struct gov_run *r,
                       struct gov_decision *ret)
{
    const unsigned route = GOV_ROLE_ADMIN | GOV_ROLE_APPROVER | GOV_ROLE_AGENT;
    const unsigned others = GOV_ROLE_ADMIN | GOV_ROLE_APPROVER;
    const char *dept = gov_str(r->department);
    if (!gov_may(p, route, NULL, ret)) {
        return 0;
    }
    if (!gov_is(p, r->principal) && !gov_holds(p, others, dept)) {
        if (!gov_holds(p, route, dept)) {
            return gov_deny_role(p, route, dept, ret);
        }
        /* a run it may not see is not there; one it sees it may not cancel */
        struct gov_decision seen;
        if (!gov_run_may_see(p, r, &seen)) {
            *ret = seen;
            return 0;
        }
        return gov_deny_role(p, others, dept, ret);
    }
    if (gov_run_state_ended(r->state)) {
        return gov_deny(ret, GOV_WRONG_STATE, "run %s has ended (%s)", gov_str(r->id),
                        gov_run_state_name(r->state));
    }
    return gov_allow(ret);
}

int gov_run_may_start(const struct gov_principal *p, const struct gov_run_start *s,
                      struct gov_decision *ret)
{
    const char *dept = gov_str(s->department);
    if (!gov_may(p, GOV_ROLE_AGENT, NULL, ret)) {
        return 0;
    }
    if (s->kind == GOV_RUN_ADHOC) {
        return gov_may(p, GOV_ROLE_AGENT, dept, ret);
    }
    const char *tpl = gov_str(s->template_name);
    enum gov_view view = gov_template_view(p, dept);
    /* a version the caller may not read answers as one that does not exist, in the words of
     * the handler's 404; but a revoked version was approved, and its agents learn that it was
     * taken back */
    if (view == GOV_VIEW_NONE || (view == GOV_VIEW_APPROVED && s->state != GOV_VERSION_APPROVED &&
                                  s->state != GOV_VERSION_REVOKED)) {
        return gov_deny(ret, GOV_HIDDEN, "no template %s%s", tpl,
                        s->version ? " with that version" : "");
    }
    if (!gov_may(p, GOV_ROLE_AGENT, dept, ret)) {
        return 0;
    }
    if (s->state == GOV_VERSION_REVOKED) {
        return gov_deny(ret, GOV_REVOKED, "template %s version %" PRId64 " is revoked", tpl,
                        s->version);
    }
    if (s->state != GOV_VERSION_APPROVED) {
        return gov_deny(ret, GOV_NOT_APPROVED,
                        "template %s version %" PRId64 " is %s, not approved", tpl, s->version,
                        gov_version_state_name(s->state));
    }
    return gov_allow(ret);
}

int gov_run_may_go_on(const struct gov_principal *starter, size_t starter_keys,
                      const struct gov_run *r, struct gov_decision *ret)
{
    const char *who = gov_str(r->principal);
    const char *dept = gov_str(r->department);
    /* grants of anyone but the run's principal vouch for nothing */
    if (starter_keys == 0) {
        return gov_deny(ret, GOV_STARTER_REVOKED, "%s has no API key left", who);
    }
    if (!gov_is(starter, who) || !gov_holds(starter, GOV_ROLE_AGENT, dept)) {
        return gov_deny(ret, GOV_STARTER_REVOKED, "%s no longer holds role agent in department %s",
                        who, dept);
    }
    return gov_allow(ret);
}

/* ---------------------------------------------------------------- approvals and audit */

int gov_approval_may_see(const struct gov_principal *p, const struct gov_approval *a,
                         struct gov_decision *ret)
{
    return gov_may(p, GOV_ROLE_APPROVER | GOV_ROLE_ADMIN | GOV_ROLE_AUDITOR, gov_str(a->department),
                   ret);
}

int gov_approval_may_decide(const struct gov_principal *p, const struct gov_approval *a,
                            struct gov_decision *ret)
{
    if (!gov_may(p, GOV_ROLE_APPROVER, gov_str(a->department), ret)) {
        return 0;
    }
    if (gov_is(p, a->requested_by)) {
        return gov_deny(ret, GOV_FOUR_EYES,
                        "four eyes: %s started run %s and cannot decide its approval", p->name,
                        gov_str(a->run));
    }
    if (a->state != GOV_APPROVAL_PENDING) {
        return gov_deny(ret, GOV_WRONG_STATE, "approval %s is %s already", gov_str(a->id),
                        gov_approval_state_name(a->state));
    }
    return gov_allow(ret);
}

int gov_audit_may_read(const struct gov_principal *p, struct gov_decision *ret)
{
    return gov_may(p, GOV_ROLE_ADMIN | GOV_ROLE_AUDITOR, NULL, ret);
}

int gov_audit_may_see(const struct gov_principal *p, const char *department,
                      struct gov_decision *ret)
{
    const unsigned roles = GOV_ROLE_ADMIN | GOV_ROLE_AUDITOR;
    if (!gov_audit_may_read(p, ret)) {
        return 0;
    }
    /* a record without a department (principals, keys, grants for all, refusals, checkpoints)
     * is everyone's business, so only an admin's or an auditor's of every department */
    const char *dept = department && department[0] ? department : GOV_EVERYWHERE;
    if (gov_holds(p, GOV_ROLE_ADMIN, NULL) || gov_holds(p, GOV_ROLE_AUDITOR, dept)) {
        return gov_allow(ret);
    }
    return gov_deny_role(p, roles, dept, ret);
}
