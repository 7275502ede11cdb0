/* unit.gov - the rules of airlockd (src/gov/rules.h) as tables: every version, run and approval
 * transition from every state; four eyes on versions and approvals; effective autonomy; and who
 * may see, start, cancel and decide, for principals holding mixed roles across departments (an
 * agent in finance who is an author in hr must not see another agent's finance run). Each row
 * names the principal and the object; a failure names the table and the row. */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <stdio.h>
#include <string.h>

#include "rules.h"

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* short names for the expected reasons, so a table row fits a line */
#define OK  GOV_ALLOWED
#define NR  GOV_NO_ROLE
#define HID GOV_HIDDEN
#define FE  GOV_FOUR_EYES
#define WS  GOV_WRONG_STATE
#define REV GOV_REVOKED
#define NA  GOV_NOT_APPROVED
#define SR  GOV_STARTER_REVOKED

static size_t gov_rows; /* table rows checked, printed at the end */

/* The principals of the tables: a label, the name it authenticates as, its grants as
 * "role:department ..." */
static const struct gov_spec {
    const char *label;
    const char *name;
    const char *grants;
} gov_specs[] = {
    { "nobody", "nobody", "" },
    { "agent1", "agent1", "agent:finance" },
    { "agent2", "agent2", "agent:finance agent:hr" },
    { "agent_all", "agent_all", "agent:*" },
    { "mixed", "mixed", "agent:finance author:hr" },
    { "mixed2", "mixed2", "agent:finance approver:hr" },
    { "agent_auditor", "agent_auditor", "agent:finance auditor:finance" },
    { "author_fin", "author_fin", "author:finance" },
    { "author2", "author2", "author:finance" },
    { "wa", "wa", "author:finance approver:finance" },
    { "author_hr_approver_fin", "ahaf", "author:hr approver:finance" },
    { "approver_fin", "approver_fin", "approver:finance" },
    { "approver_hr", "approver_hr", "approver:hr" },
    { "approver_all", "approver_all", "approver:*" },
    { "auditor_hr", "auditor_hr", "auditor:hr" },
    { "auditor_all", "auditor_all", "auditor:*" },
    /* an auditor of one department who is an agent in another */
    { "auditor_fin_agent_hr", "afah", "auditor:finance agent:hr" },
    { "admin_fin", "admin_fin", "admin:finance" },
    { "admin_hr", "admin_hr", "admin:hr" },
    { "admin_all", "admin_all", "admin:*" },
    { "every_role", "every_role", "admin:* author:* approver:* auditor:* agent:*" },
    /* agent1 again, now also an approver of finance: four eyes on its own run's approvals */
    { "agent1+approver", "agent1", "agent:finance approver:finance" },
};

/* Builds the principal of a label from gov_specs. */
static void gov_make(struct gov_principal *p, const char *label)
{
    const struct gov_spec *spec = NULL;
    for (size_t i = 0; i < NELEMS(gov_specs); i++) {
        if (strcmp(gov_specs[i].label, label) == 0) {
            spec = &gov_specs[i];
        }
    }
    if (!spec) {
        fail_msg("no principal labelled %s", label);
    }
    assert_int_equal(gov_principal_init(p, spec->name), 0);
    for (const char *s = spec->grants; *s;) {
        char role[16];
        char dept[GOV_NAME_MAX + 1];
        int used = 0;
        if (sscanf(s, " %15[^:]:%64s%n", role, dept, &used) != 2) {
            fail_msg("principal %s: bad grants \"%s\"", label, spec->grants);
        }
        if (gov_principal_grant(p, gov_role_bit(role), dept) != 0) {
            fail_msg("principal %s: grant %s:%s refused", label, role, dept);
        }
        s += used;
        while (*s == ' ') {
            s++;
        }
    }
}

/* Checks one row: the answer, the reason, and that status, code and message go with it; `why`,
 * when not NULL, is the exact message. */
static void gov_check(const char *table, size_t row, const char *label, int got,
                      const struct gov_decision *d, enum gov_reason want, const char *why)
{
    int allowed = want == GOV_ALLOWED;
    gov_rows++;
    if (d->reason != want || got != allowed || d->status != gov_reason_status(want) ||
        strcmp(d->code, gov_reason_code(want)) != 0 || allowed != (d->why[0] == '\0')) {
        fail_msg("%s row %zu (%s): got %s %d %u %s \"%s\", want %s", table, row, label,
                 gov_reason_name(d->reason), got, d->status, d->code, d->why,
                 gov_reason_name(want));
    }
    if (why && strcmp(d->why, why) != 0) {
        fail_msg("%s row %zu (%s): message \"%s\", want \"%s\"", table, row, label, d->why, why);
    }
}

static void gov_check_int(const char *table, size_t row, const char *label, long got, long want)
{
    gov_rows++;
    if (got != want) {
        fail_msg("%s row %zu (%s): got %ld, want %ld", table, row, label, got, want);
    }
}

/* ---------------------------------------------------------------- roles and principals */

static void test_gov_role_names_round_trip(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        unsigned bit;
    } rows[] = {
        { "admin", GOV_ROLE_ADMIN },
        { "author", GOV_ROLE_AUTHOR },
        { "approver", GOV_ROLE_APPROVER },
        { "auditor", GOV_ROLE_AUDITOR },
        { "agent", GOV_ROLE_AGENT },
        { "Admin", 0 },
        { "", 0 },
        { "agents", 0 },
        { NULL, 0 },
    };
    for (size_t i = 0; i < NELEMS(rows); i++) {
        const char *label = rows[i].name ? rows[i].name : "NULL";
        gov_check_int("role_bit", i, label, gov_role_bit(rows[i].name), rows[i].bit);
        if (rows[i].bit) {
            gov_check_int("role_name", i, label, strcmp(gov_role_name(rows[i].bit), rows[i].name),
                          0);
        }
    }
    static const unsigned not_one[] = { 0, GOV_ROLE_ADMIN | GOV_ROLE_AGENT, 1u << 5, ~0u };
    for (size_t i = 0; i < NELEMS(not_one); i++) {
        gov_check_int("role_name not one", i, "?", strcmp(gov_role_name(not_one[i]), "?"), 0);
    }
}

static void test_gov_principal_limits(void **state)
{
    (void)state;
    struct gov_principal p;
    char name[GOV_NAME_MAX + 2];
    memset(name, 'n', sizeof name);
    name[GOV_NAME_MAX + 1] = '\0';
    assert_int_equal(gov_principal_init(&p, name), -1); /* 65 bytes */
    assert_string_equal(p.name, "");
    assert_int_equal(gov_principal_init(&p, ""), -1);
    assert_int_equal(gov_principal_init(&p, NULL), -1);
    name[GOV_NAME_MAX] = '\0';
    assert_int_equal(gov_principal_init(&p, name), 0); /* 64 bytes */
    assert_string_equal(p.name, name);

    static const struct {
        unsigned role;
        const char *dept;
        int want;
    } rows[] = {
        { GOV_ROLE_AGENT, "finance", 0 },
        { GOV_ROLE_ADMIN, GOV_EVERYWHERE, 0 },
        { 0, "finance", -1 },
        { GOV_ROLE_AGENT | GOV_ROLE_AUTHOR, "finance", -1 },
        { 1u << 5, "finance", -1 },
        { GOV_ROLE_AGENT, "", -1 },
        { GOV_ROLE_AGENT, NULL, -1 },
    };
    gov_principal_init(&p, "p");
    for (size_t i = 0; i < NELEMS(rows); i++) {
        size_t before = p.ngrants;
        int got = gov_principal_grant(&p, rows[i].role, rows[i].dept);
        gov_check_int("grant", i, rows[i].dept ? rows[i].dept : "NULL", got, rows[i].want);
        gov_check_int("grant count", i, "", (long)p.ngrants, (long)before + (rows[i].want == 0));
    }
    /* a department name of 64 bytes fits, 65 does not */
    assert_int_equal(gov_principal_grant(&p, GOV_ROLE_AGENT, name), 0);
    name[GOV_NAME_MAX] = 'n';
    assert_int_equal(gov_principal_grant(&p, GOV_ROLE_AGENT, name), -1);
    /* GOV_GRANTS_MAX grants, not one more */
    while (p.ngrants < GOV_GRANTS_MAX) {
        assert_int_equal(gov_principal_grant(&p, GOV_ROLE_AUDITOR, "hr"), 0);
    }
    assert_int_equal(gov_principal_grant(&p, GOV_ROLE_AUDITOR, "hr"), -1);
    assert_int_equal(p.ngrants, GOV_GRANTS_MAX);
}

static void test_gov_holds_per_department(void **state)
{
    (void)state;
    static const struct {
        const char *who;
        unsigned roles;
        const char *dept;
        int want;
    } rows[] = {
        { "mixed", GOV_ROLE_AGENT, "finance", 1 },
        { "mixed", GOV_ROLE_AGENT, "hr", 0 },
        { "mixed", GOV_ROLE_AUTHOR, "hr", 1 },
        { "mixed", GOV_ROLE_AUTHOR, "finance", 0 },
        { "mixed", GOV_ROLE_AUTHOR, NULL, 1 },
        { "mixed", GOV_ROLE_ADMIN, NULL, 0 },
        { "approver_all", GOV_ROLE_APPROVER, "anything", 1 },
        { "approver_all", GOV_ROLE_AGENT, "finance", 0 },
        { "nobody", GOV_ROLES_ALL, NULL, 0 },
        { "agent_all", GOV_ROLE_AGENT | GOV_ROLE_ADMIN, "ops", 1 },
        /* "*" is a grant's department, not a wildcard in the question */
        { "agent1", GOV_ROLE_AGENT, GOV_EVERYWHERE, 0 },
    };
    for (size_t i = 0; i < NELEMS(rows); i++) {
        struct gov_principal p;
        gov_make(&p, rows[i].who);
        gov_check_int("holds", i, rows[i].who, gov_holds(&p, rows[i].roles, rows[i].dept),
                      rows[i].want);
    }
}

static void test_gov_reasons_have_status_and_code(void **state)
{
    (void)state;
    static const struct {
        enum gov_reason reason;
        const char *name;
        unsigned status;
        const char *code;
    } rows[] = {
        { GOV_ALLOWED, "allowed", 0, "" },
        { GOV_NO_ROLE, "no_role", 403, "FORBIDDEN" },
        { GOV_HIDDEN, "hidden", 404, "NOT_FOUND" },
        { GOV_FOUR_EYES, "four_eyes", 409, "CONFLICT" },
        { GOV_WRONG_STATE, "wrong_state", 409, "CONFLICT" },
        { GOV_REVOKED, "revoked", 409, "TEMPLATE_REVOKED" },
        { GOV_NOT_APPROVED, "not_approved", 409, "VERSION_NOT_APPROVED" },
        { GOV_STARTER_REVOKED, "starter_revoked", 409, "CONFLICT" },
        { (enum gov_reason)99, "?", 500, "INTERNAL" },
    };
    for (size_t i = 0; i < NELEMS(rows); i++) {
        gov_check_int("reason name", i, rows[i].name,
                      strcmp(gov_reason_name(rows[i].reason), rows[i].name), 0);
        gov_check_int("reason status", i, rows[i].name, gov_reason_status(rows[i].reason),
                      rows[i].status);
        gov_check_int("reason code", i, rows[i].name,
                      strcmp(gov_reason_code(rows[i].reason), rows[i].code), 0);
    }
}

/* gov_may: the router's check (anywhere) then the department's, in auth_check's words. */
static void test_gov_may_words(void **state)
{
    (void)state;
    static const struct {
        const char *who;
        unsigned roles;
        const char *dept;
        enum gov_reason want;
        const char *why;
    } rows[] = {
        { "nobody", GOV_ROLE_AUTHOR, "finance", NR, "nobody needs role author" },
        { "mixed", GOV_ROLE_AUTHOR, "finance", NR,
          "mixed needs role author in department finance" },
        { "mixed", GOV_ROLE_AUTHOR, "hr", OK, NULL },
        { "mixed", GOV_ROLE_AUTHOR, NULL, OK, NULL },
        { "agent1", GOV_ROLE_ADMIN | GOV_ROLE_APPROVER | GOV_ROLE_AGENT, "hr", NR,
          "agent1 needs role admin|approver|agent in department hr" },
        { "agent1", GOV_ROLES_ALL & ~(unsigned)GOV_ROLE_AGENT, NULL, NR,
          "agent1 needs role admin|author|approver|auditor" },
        { "admin_all", GOV_ROLE_ADMIN, "ops", OK, NULL },
    };
    for (size_t i = 0; i < NELEMS(rows); i++) {
        struct gov_principal p;
        struct gov_decision d;
        gov_make(&p, rows[i].who);
        int got = gov_may(&p, rows[i].roles, rows[i].dept, &d);
        gov_check("may", i, rows[i].who, got, &d, rows[i].want, rows[i].why);
    }
}

/* ---------------------------------------------------------------- versions */

static void test_gov_version_names_round_trip(void **state)
{
    (void)state;
    static const char *const names[GOV_VERSION_STATES] = { "draft", "submitted", "approved",
                                                           "rejected", "revoked" };
    for (int s = 0; s < GOV_VERSION_STATES; s++) {
        enum gov_version_state got = GOV_VERSION_REVOKED;
        gov_check_int("version name", (size_t)s, names[s],
                      strcmp(gov_version_state_name((enum gov_version_state)s), names[s]), 0);
        gov_check_int("version parse", (size_t)s, names[s], gov_version_state_parse(names[s], &got),
                      0);
        gov_check_int("version parse value", (size_t)s, names[s], got, s);
    }
    static const char *const bad[] = { "Draft", "", "approved ", "pending", "running" };
    for (size_t i = 0; i < NELEMS(bad); i++) {
        enum gov_version_state got = GOV_VERSION_SUBMITTED;
        gov_check_int("version parse bad", i, bad[i], gov_version_state_parse(bad[i], &got), -1);
        gov_check_int("version parse bad untouched", i, bad[i], got, GOV_VERSION_SUBMITTED);
    }
    enum gov_version_state got = GOV_VERSION_DRAFT;
    assert_int_equal(gov_version_state_parse(NULL, &got), -1);
    assert_string_equal(gov_version_state_name((enum gov_version_state)GOV_VERSION_STATES), "?");
}

/* Every (from, to) pair: only draft -> submitted -> approved | rejected, approved -> revoked. */
static void test_gov_version_moves_every_pair(void **state)
{
    (void)state;
    static const int allowed[GOV_VERSION_STATES][GOV_VERSION_STATES] = {
        /*               draft sub appr rej rev */
        /* draft     */ { 0, 1, 0, 0, 0 },
        /* submitted */ { 0, 0, 1, 1, 0 },
        /* approved  */ { 0, 0, 0, 0, 1 },
        /* rejected  */ { 0, 0, 0, 0, 0 },
        /* revoked   */ { 0, 0, 0, 0, 0 },
    };
    for (int from = 0; from < GOV_VERSION_STATES; from++) {
        for (int to = 0; to < GOV_VERSION_STATES; to++) {
            char label[64];
            snprintf(label, sizeof label, "%s -> %s",
                     gov_version_state_name((enum gov_version_state)from),
                     gov_version_state_name((enum gov_version_state)to));
            gov_check_int(
                    "version move", (size_t)from * GOV_VERSION_STATES + (size_t)to, label,
                    gov_version_may_move((enum gov_version_state)from, (enum gov_version_state)to),
                    allowed[from][to]);
        }
    }
    assert_int_equal(gov_version_may_move((enum gov_version_state) - 1, GOV_VERSION_DRAFT), 0);
    assert_int_equal(gov_version_may_move(GOV_VERSION_DRAFT, (enum gov_version_state)9), 0);
}

/* Every action from every state, by a principal holding every role everywhere (not the author):
 * allowed exactly from the action's state, and the action's move is in the table. */
static void test_gov_version_act_every_state(void **state)
{
    (void)state;
    static const char *const action_names[GOV_VERSION_ACTIONS] = { "submit", "approve", "reject",
                                                                   "revoke" };
    struct gov_principal p;
    gov_make(&p, "every_role");
    size_t row = 0;
    for (int a = 0; a < GOV_VERSION_ACTIONS; a++) {
        enum gov_version_action action = (enum gov_version_action)a;
        gov_check_int("action name", (size_t)a, action_names[a],
                      strcmp(gov_version_action_name(action), action_names[a]), 0);
        gov_check_int("action move", (size_t)a, action_names[a],
                      gov_version_may_move(gov_version_action_from(action),
                                           gov_version_action_to(action)),
                      1);
        for (int s = 0; s < GOV_VERSION_STATES; s++, row++) {
            struct gov_version v = { "payroll", 3, "finance", "wa", (enum gov_version_state)s };
            struct gov_decision d;
            char label[64];
            char why[128];
            snprintf(label, sizeof label, "%s a %s version", action_names[a],
                     gov_version_state_name(v.state));
            snprintf(why, sizeof why, "version 3 of payroll is %s, not %s",
                     gov_version_state_name(v.state),
                     gov_version_state_name(gov_version_action_from(action)));
            int ok = v.state == gov_version_action_from(action);
            int got = gov_version_may_act(&p, &v, action, &d);
            gov_check("version act", row, label, got, &d, ok ? OK : WS, ok ? NULL : why);
        }
    }
    struct gov_version v = { "payroll", 3, "finance", "wa", GOV_VERSION_DRAFT };
    struct gov_decision d;
    gov_check("version act", row, "an action outside the enum",
              gov_version_may_act(&p, &v, (enum gov_version_action)7, &d), &d, NR, NULL);
}

/* Who may take each action on a finance version written by "wa", in the state the action
 * leaves. Four eyes: wa holds approver there and still may not approve its own version; it may
 * reject or revoke it. */
static void test_gov_version_act_roles(void **state)
{
    (void)state;
    static const struct {
        const char *who;
        enum gov_reason want[GOV_VERSION_ACTIONS]; /* submit, approve, reject, revoke */
    } rows[] = {
        { "wa", { OK, FE, OK, OK } },           { "author2", { OK, NR, NR, NR } },
        { "author_fin", { OK, NR, NR, NR } },   { "approver_fin", { NR, OK, OK, OK } },
        { "approver_all", { NR, OK, OK, OK } }, { "author_hr_approver_fin", { NR, OK, OK, OK } },
        { "admin_fin", { NR, NR, NR, OK } },    { "admin_all", { NR, NR, NR, OK } },
        { "admin_hr", { NR, NR, NR, NR } },     { "approver_hr", { NR, NR, NR, NR } },
        { "auditor_all", { NR, NR, NR, NR } },  { "agent1", { NR, NR, NR, NR } },
        { "mixed", { NR, NR, NR, NR } },        { "nobody", { NR, NR, NR, NR } },
    };
    for (size_t i = 0; i < NELEMS(rows); i++) {
        struct gov_principal p;
        gov_make(&p, rows[i].who);
        for (int a = 0; a < GOV_VERSION_ACTIONS; a++) {
            enum gov_version_action action = (enum gov_version_action)a;
            struct gov_version v = { "payroll", 3, "finance", "wa",
                                     gov_version_action_from(action) };
            struct gov_decision d;
            char label[96];
            snprintf(label, sizeof label, "%s %s", rows[i].who, gov_version_action_name(action));
            int got = gov_version_may_act(&p, &v, action, &d);
            gov_check("version roles", i * GOV_VERSION_ACTIONS + (size_t)a, label, got, &d,
                      rows[i].want[a], NULL);
        }
    }
}

/* The exact refusals of tpl_move, and four eyes coming before the state. */
static void test_gov_version_act_words(void **state)
{
    (void)state;
    static const struct {
        const char *who;
        enum gov_version_action action;
        enum gov_version_state st;
        enum gov_reason want;
        const char *why;
    } rows[] = {
        { "wa", GOV_VERSION_APPROVE, GOV_VERSION_SUBMITTED, FE,
          "four eyes: wa wrote version 3 of payroll and cannot approve it" },
        /* four eyes before the state, whatever the state */
        { "wa", GOV_VERSION_APPROVE, GOV_VERSION_DRAFT, FE, NULL },
        { "wa", GOV_VERSION_APPROVE, GOV_VERSION_APPROVED, FE, NULL },
        { "wa", GOV_VERSION_APPROVE, GOV_VERSION_REJECTED, FE, NULL },
        { "wa", GOV_VERSION_APPROVE, GOV_VERSION_REVOKED, FE, NULL },
        /* the role before four eyes */
        { "author2", GOV_VERSION_APPROVE, GOV_VERSION_SUBMITTED, NR,
          "author2 needs role approver" },
        { "approver_hr", GOV_VERSION_APPROVE, GOV_VERSION_SUBMITTED, NR,
          "approver_hr needs role approver in department finance" },
        { "nobody", GOV_VERSION_SUBMIT, GOV_VERSION_DRAFT, NR, "nobody needs role author" },
        { "admin_hr", GOV_VERSION_REVOKE, GOV_VERSION_APPROVED, NR,
          "admin_hr needs role admin|approver in department finance" },
        { "approver_fin", GOV_VERSION_REVOKE, GOV_VERSION_SUBMITTED, WS,
          "version 3 of payroll is submitted, not approved" },
        { "author2", GOV_VERSION_SUBMIT, GOV_VERSION_REJECTED, WS,
          "version 3 of payroll is rejected, not draft" },
    };
    for (size_t i = 0; i < NELEMS(rows); i++) {
        struct gov_principal p;
        struct gov_decision d;
        struct gov_version v = { "payroll", 3, "finance", "wa", rows[i].st };
        gov_make(&p, rows[i].who);
        int got = gov_version_may_act(&p, &v, rows[i].action, &d);
        gov_check("version words", i, rows[i].who, got, &d, rows[i].want, rows[i].why);
    }
}

/* How much of finance's templates each principal sees, and which templates and versions it may
 * read: one it may not read is not there (404, naming no department). */
static void test_gov_template_view_and_read(void **state)
{
    (void)state;
    static const struct {
        const char *who;
        enum gov_view finance;
        enum gov_view hr;
    } views[] = {
        { "nobody", GOV_VIEW_NONE, GOV_VIEW_NONE },
        { "agent1", GOV_VIEW_APPROVED, GOV_VIEW_NONE },
        { "agent2", GOV_VIEW_APPROVED, GOV_VIEW_APPROVED },
        { "mixed", GOV_VIEW_APPROVED, GOV_VIEW_ALL },
        { "mixed2", GOV_VIEW_APPROVED, GOV_VIEW_ALL },
        { "author_fin", GOV_VIEW_ALL, GOV_VIEW_NONE },
        { "approver_all", GOV_VIEW_ALL, GOV_VIEW_ALL },
        /* an auditor reads the departments it audits; admins (granted for all) every one */
        { "auditor_hr", GOV_VIEW_NONE, GOV_VIEW_ALL },
        { "auditor_all", GOV_VIEW_ALL, GOV_VIEW_ALL },
        { "auditor_fin_agent_hr", GOV_VIEW_ALL, GOV_VIEW_APPROVED },
        { "admin_hr", GOV_VIEW_ALL, GOV_VIEW_ALL },
        { "agent_auditor", GOV_VIEW_ALL, GOV_VIEW_NONE },
    };
    for (size_t i = 0; i < NELEMS(views); i++) {
        struct gov_principal p;
        gov_make(&p, views[i].who);
        int roleless = strcmp(views[i].who, "nobody") == 0;
        gov_check_int("view finance", i, views[i].who, gov_template_view(&p, "finance"),
                      views[i].finance);
        gov_check_int("view hr", i, views[i].who, gov_template_view(&p, "hr"), views[i].hr);
        for (int s = 0; s < GOV_VERSION_STATES; s++) {
            struct gov_version v = { "payroll", 2, "finance", "wa", (enum gov_version_state)s };
            struct gov_decision d;
            enum gov_reason want = roleless                            ? NR
                                   : views[i].finance == GOV_VIEW_NONE ? HID
                                   : views[i].finance == GOV_VIEW_ALL  ? OK
                                   : v.state == GOV_VERSION_APPROVED   ? OK
                                                                       : HID;
            char label[96];
            snprintf(label, sizeof label, "%s reads a %s version", views[i].who,
                     gov_version_state_name(v.state));
            int got = gov_version_may_read(&p, &v, &d);
            gov_check("version read", i * GOV_VERSION_STATES + (size_t)s, label, got, &d, want,
                      want != HID                         ? NULL
                      : views[i].finance == GOV_VIEW_NONE ? "no template payroll"
                                                          : "no version 2 of template payroll");
        }
        for (int approved = 0; approved < 2; approved++) {
            struct gov_template t = { "payroll", "finance", approved };
            struct gov_decision d;
            enum gov_reason want = roleless                            ? NR
                                   : views[i].finance == GOV_VIEW_NONE ? HID
                                   : views[i].finance == GOV_VIEW_ALL  ? OK
                                   : approved                          ? OK
                                                                       : HID;
            int got = gov_template_may_read(&p, &t, &d);
            gov_check("template read", i * 2 + (size_t)approved, views[i].who, got, &d, want,
                      want == HID ? "no template payroll" : NULL);
        }
    }
    struct gov_principal p;
    struct gov_decision d;
    struct gov_template hr = { "payroll", "hr", 1 };
    gov_make(&p, "agent1");
    gov_check("template read", 0, "agent1 in hr", gov_template_may_read(&p, &hr, &d), &d, HID,
              "no template payroll");
    gov_make(&p, "nobody");
    gov_check("template read", 1, "nobody", gov_template_may_read(&p, &hr, &d), &d, NR,
              "nobody needs role admin|author|approver|auditor|agent");
}

/* ---------------------------------------------------------------- runs */

static void test_gov_run_names_round_trip(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int ended;
        unsigned http;
        int initial;
    } rows[GOV_RUN_STATES] = {
        { "queued", 0, 202, 1 },    { "running", 0, 202, 1 }, { "awaiting_approval", 0, 202, 1 },
        { "completed", 1, 200, 0 }, { "failed", 1, 200, 0 },  { "cancelled", 1, 200, 0 },
        { "denied", 1, 200, 0 },
    };
    for (int s = 0; s < GOV_RUN_STATES; s++) {
        enum gov_run_state st = (enum gov_run_state)s;
        enum gov_run_state got = GOV_RUN_DENIED;
        const char *name = rows[s].name;
        gov_check_int("run name", (size_t)s, name, strcmp(gov_run_state_name(st), name), 0);
        gov_check_int("run parse", (size_t)s, name, gov_run_state_parse(name, &got), 0);
        gov_check_int("run parse value", (size_t)s, name, got, s);
        gov_check_int("run ended", (size_t)s, name, gov_run_state_ended(st), rows[s].ended);
        gov_check_int("run http", (size_t)s, name, gov_run_state_http_status(st), rows[s].http);
        gov_check_int("run initial", (size_t)s, name, gov_run_state_initial(st), rows[s].initial);
    }
    static const char *const bad[] = { "Running", "", "awaiting", "approved", "running " };
    for (size_t i = 0; i < NELEMS(bad); i++) {
        enum gov_run_state got = GOV_RUN_QUEUED;
        gov_check_int("run parse bad", i, bad[i], gov_run_state_parse(bad[i], &got), -1);
        gov_check_int("run parse bad untouched", i, bad[i], got, GOV_RUN_QUEUED);
    }
    enum gov_run_state got = GOV_RUN_QUEUED;
    assert_int_equal(gov_run_state_parse(NULL, &got), -1);
    assert_string_equal(gov_run_state_name((enum gov_run_state)GOV_RUN_STATES), "?");
    /* a state outside the enum is no waiting state: nothing treats it as running */
    assert_int_equal(gov_run_state_ended((enum gov_run_state)GOV_RUN_STATES), 1);
}

/* Every (from, to) pair against the moves the server records. */
static void test_gov_run_moves_every_pair(void **state)
{
    (void)state;
    static const int allowed[GOV_RUN_STATES][GOV_RUN_STATES] = {
        /*                 que run awa com fai can den */
        /* queued       */ { 0, 1, 0, 0, 1, 1, 0 },
        /* running      */ { 1, 0, 1, 1, 1, 1, 0 },
        /* awaiting     */ { 1, 1, 0, 0, 1, 1, 1 },
        /* completed    */ { 0, 0, 0, 0, 0, 0, 0 },
        /* failed       */ { 0, 0, 0, 0, 0, 0, 0 },
        /* cancelled    */ { 0, 0, 0, 0, 0, 1, 0 },
        /* denied       */ { 0, 0, 0, 0, 0, 0, 0 },
    };
    for (int from = 0; from < GOV_RUN_STATES; from++) {
        for (int to = 0; to < GOV_RUN_STATES; to++) {
            char label[64];
            snprintf(label, sizeof label, "%s -> %s", gov_run_state_name((enum gov_run_state)from),
                     gov_run_state_name((enum gov_run_state)to));
            gov_check_int("run move", (size_t)from * GOV_RUN_STATES + (size_t)to, label,
                          gov_run_may_move((enum gov_run_state)from, (enum gov_run_state)to),
                          allowed[from][to]);
        }
    }
    assert_int_equal(gov_run_may_move((enum gov_run_state) - 1, GOV_RUN_RUNNING), 0);
    assert_int_equal(gov_run_may_move(GOV_RUN_RUNNING, (enum gov_run_state)GOV_RUN_STATES), 0);
}

/* The runs of the visibility tables, all running: finance runs of agent1, agent2 and mixed, and
 * an hr run of agent2. */
static const struct gov_run gov_runs[] = {
    { "run_0", "finance", "agent1", GOV_RUN_RUNNING },
    { "run_1", "finance", "agent2", GOV_RUN_RUNNING },
    { "run_2", "hr", "agent2", GOV_RUN_RUNNING },
    { "run_3", "finance", "mixed", GOV_RUN_RUNNING },
};
#define GOV_NRUNS (sizeof gov_runs / sizeof gov_runs[0])

/* Who sees which run, decided per run. mixed (agent in finance, author in hr) and mixed2 (agent
 * in finance, approver in hr) see no other agent's finance run: the handlers showed them all. */
static void test_gov_run_see_mixed_roles(void **state)
{
    (void)state;
    static const struct {
        const char *who;
        enum gov_reason want[GOV_NRUNS];
    } rows[] = {
        { "mixed", { HID, HID, OK, OK } },       { "mixed2", { HID, HID, OK, HID } },
        { "agent1", { OK, HID, NR, HID } },      { "agent2", { HID, OK, OK, HID } },
        { "agent_all", { HID, HID, HID, HID } }, { "agent_auditor", { OK, OK, NR, OK } },
        { "approver_all", { OK, OK, OK, OK } },  { "approver_fin", { OK, OK, NR, OK } },
        { "author_fin", { OK, OK, NR, OK } },    { "auditor_hr", { NR, NR, OK, NR } },
        { "auditor_all", { OK, OK, OK, OK } },   { "admin_all", { OK, OK, OK, OK } },
        { "admin_hr", { NR, NR, OK, NR } },      { "admin_fin", { OK, OK, NR, OK } },
        { "nobody", { NR, NR, NR, NR } },
    };
    for (size_t i = 0; i < NELEMS(rows); i++) {
        struct gov_principal p;
        gov_make(&p, rows[i].who);
        for (size_t r = 0; r < GOV_NRUNS; r++) {
            struct gov_decision d;
            char label[96];
            snprintf(label, sizeof label, "%s sees %s (%s, %s)", rows[i].who, gov_runs[r].id,
                     gov_runs[r].department, gov_runs[r].principal);
            int got = gov_run_may_see(&p, &gov_runs[r], &d);
            gov_check("run see", i * GOV_NRUNS + r, label, got, &d, rows[i].want[r], NULL);
        }
    }
}

/* Who may cancel which run: its own agent, an approver or admin of its department; an agent
 * that may not see a run finds no run, one that sees it is refused. */
static void test_gov_run_cancel_mixed_roles(void **state)
{
    (void)state;
    static const struct {
        const char *who;
        enum gov_reason want[GOV_NRUNS];
    } rows[] = {
        { "mixed", { HID, HID, NR, OK } },       { "mixed2", { HID, HID, OK, HID } },
        { "agent1", { OK, HID, NR, HID } },      { "agent2", { HID, OK, OK, HID } },
        { "agent_all", { HID, HID, HID, HID } }, { "agent_auditor", { NR, NR, NR, NR } },
        { "approver_all", { OK, OK, OK, OK } },  { "approver_fin", { OK, OK, NR, OK } },
        { "author_fin", { NR, NR, NR, NR } },    { "auditor_hr", { NR, NR, NR, NR } },
        { "auditor_all", { NR, NR, NR, NR } },   { "admin_all", { OK, OK, OK, OK } },
        { "admin_hr", { NR, NR, OK, NR } },      { "admin_fin", { OK, OK, NR, OK } },
        { "nobody", { NR, NR, NR, NR } },
    };
    for (size_t i = 0; i < NELEMS(rows); i++) {
        struct gov_principal p;
        gov_make(&p, rows[i].who);
        for (size_t r = 0; r < GOV_NRUNS; r++) {
            struct gov_decision d;
            char label[96];
            snprintf(label, sizeof label, "%s cancels %s (%s, %s)", rows[i].who, gov_runs[r].id,
                     gov_runs[r].department, gov_runs[r].principal);
            int got = gov_run_may_cancel(&p, &gov_runs[r], &d);
            gov_check("run cancel", i * GOV_NRUNS + r, label, got, &d, rows[i].want[r], NULL);
        }
    }
}

/* The exact refusals of api_run_visible and api_runs_cancel. */
static void test_gov_run_words(void **state)
{
    (void)state;
    static const struct {
        const char *who;
        size_t run;
        int cancel;
        enum gov_reason want;
        const char *why;
    } rows[] = {
        { "mixed", 1, 0, HID, "no run run_1" },
        { "agent1", 2, 0, NR,
          "agent1 needs role admin|author|approver|auditor|agent in department hr" },
        { "nobody", 0, 0, NR, "nobody needs role admin|author|approver|auditor|agent" },
        { "mixed", 1, 1, HID, "no run run_1" },
        { "mixed", 2, 1, NR, "mixed needs role admin|approver|agent in department hr" },
        { "agent_auditor", 1, 1, NR,
          "agent_auditor needs role admin|approver in department finance" },
        { "auditor_hr", 2, 1, NR, "auditor_hr needs role admin|approver|agent" },
    };
    for (size_t i = 0; i < NELEMS(rows); i++) {
        struct gov_principal p;
        struct gov_decision d;
        gov_make(&p, rows[i].who);
        const struct gov_run *r = &gov_runs[rows[i].run];
        int got = rows[i].cancel ? gov_run_may_cancel(&p, r, &d) : gov_run_may_see(&p, r, &d);
        gov_check("run words", i, rows[i].who, got, &d, rows[i].want, rows[i].why);
    }
}

/* A permitted cancel of a run in each state: refused once it has ended; the permission is
 * checked first. */
static void test_gov_run_cancel_every_state(void **state)
{
    (void)state;
    static const char *const who[] = { "agent1", "approver_fin", "admin_all" };
    size_t row = 0;
    for (size_t w = 0; w < NELEMS(who); w++) {
        struct gov_principal p;
        gov_make(&p, who[w]);
        for (int s = 0; s < GOV_RUN_STATES; s++, row++) {
            struct gov_run r = { "run_0", "finance", "agent1", (enum gov_run_state)s };
            struct gov_decision d;
            char why[96];
            char label[96];
            snprintf(why, sizeof why, "run run_0 has ended (%s)", gov_run_state_name(r.state));
            snprintf(label, sizeof label, "%s cancels a %s run", who[w],
                     gov_run_state_name(r.state));
            int ended = gov_run_state_ended(r.state);
            int got = gov_run_may_cancel(&p, &r, &d);
            gov_check("cancel state", row, label, got, &d, ended ? WS : OK, ended ? why : NULL);
            /* a principal refused the run is refused the same in every state */
            struct gov_principal other;
            gov_make(&other, "agent2");
            got = gov_run_may_cancel(&other, &r, &d);
            gov_check("cancel state other", row, label, got, &d, HID, NULL);
        }
    }
}

static void test_gov_run_start(void **state)
{
    (void)state;
    static const struct {
        const char *who;
        enum gov_run_kind kind;
        const char *dept;
        enum gov_version_state st;
        enum gov_reason want;
        const char *why;
    } rows[] = {
        { "agent1", GOV_RUN_TEMPLATE, "finance", GOV_VERSION_APPROVED, OK, NULL },
        /* a revoked version was approved: its agents learn it was taken back */
        { "agent1", GOV_RUN_TEMPLATE, "finance", GOV_VERSION_REVOKED, REV,
          "template payroll version 4 is revoked" },
        /* a version an agent may not read is not there, in the words of a missing one */
        { "agent1", GOV_RUN_TEMPLATE, "finance", GOV_VERSION_DRAFT, HID,
          "no template payroll with that version" },
        { "agent1", GOV_RUN_TEMPLATE, "finance", GOV_VERSION_SUBMITTED, HID, NULL },
        { "agent1", GOV_RUN_TEMPLATE, "finance", GOV_VERSION_REJECTED, HID, NULL },
        { "agent_all", GOV_RUN_TEMPLATE, "ops", GOV_VERSION_DRAFT, HID, NULL },
        { "agent_all", GOV_RUN_TEMPLATE, "ops", GOV_VERSION_REVOKED, REV, NULL },
        /* ... and another department's template, naming no department, in every state */
        { "agent1", GOV_RUN_TEMPLATE, "hr", GOV_VERSION_APPROVED, HID,
          "no template payroll with that version" },
        { "agent1", GOV_RUN_TEMPLATE, "hr", GOV_VERSION_REVOKED, HID, NULL },
        { "agent1", GOV_RUN_TEMPLATE, "hr", GOV_VERSION_DRAFT, HID, NULL },
        { "auditor_fin_agent_hr", GOV_RUN_TEMPLATE, "ops", GOV_VERSION_APPROVED, HID, NULL },
        /* a caller who reads every version of the department learns its state */
        { "agent1+approver", GOV_RUN_TEMPLATE, "finance", GOV_VERSION_DRAFT, NA,
          "template payroll version 4 is draft, not approved" },
        { "agent1+approver", GOV_RUN_TEMPLATE, "finance", GOV_VERSION_SUBMITTED, NA, NULL },
        { "agent_auditor", GOV_RUN_TEMPLATE, "finance", GOV_VERSION_REJECTED, NA, NULL },
        { "agent1+approver", GOV_RUN_TEMPLATE, "finance", GOV_VERSION_REVOKED, REV, NULL },
        /* one who reads it and is no agent there: the role, then the state */
        { "mixed", GOV_RUN_TEMPLATE, "hr", GOV_VERSION_APPROVED, NR,
          "mixed needs role agent in department hr" },
        { "mixed2", GOV_RUN_TEMPLATE, "hr", GOV_VERSION_DRAFT, NR, NULL },
        { "auditor_fin_agent_hr", GOV_RUN_TEMPLATE, "finance", GOV_VERSION_DRAFT, NR,
          "afah needs role agent in department finance" },
        { "auditor_fin_agent_hr", GOV_RUN_TEMPLATE, "hr", GOV_VERSION_APPROVED, OK, NULL },
        { "author_fin", GOV_RUN_TEMPLATE, "finance", GOV_VERSION_DRAFT, NR,
          "author_fin needs role agent" },
        { "mixed", GOV_RUN_ADHOC, "finance", GOV_VERSION_DRAFT, OK, NULL },
        { "agent_all", GOV_RUN_ADHOC, "ops", GOV_VERSION_DRAFT, OK, NULL },
        { "approver_all", GOV_RUN_TEMPLATE, "finance", GOV_VERSION_APPROVED, NR,
          "approver_all needs role agent" },
        { "admin_all", GOV_RUN_ADHOC, "finance", GOV_VERSION_DRAFT, NR, NULL },
        { "nobody", GOV_RUN_ADHOC, "finance", GOV_VERSION_DRAFT, NR, NULL },
    };
    for (size_t i = 0; i < NELEMS(rows); i++) {
        struct gov_principal p;
        struct gov_decision d;
        struct gov_run_start s = { rows[i].kind, rows[i].dept, "payroll", 4, rows[i].st };
        gov_make(&p, rows[i].who);
        int got = gov_run_may_start(&p, &s, &d);
        gov_check("run start", i, rows[i].who, got, &d, rows[i].want, rows[i].why);
    }
    /* the newest approved version asked for (0), where there is none it may read */
    struct gov_principal p;
    struct gov_decision d;
    struct gov_run_start s = { GOV_RUN_TEMPLATE, "hr", "payroll", 0, GOV_VERSION_DRAFT };
    gov_make(&p, "agent1");
    gov_check("run start", 0, "agent1, newest", gov_run_may_start(&p, &s, &d), &d, HID,
              "no template payroll");
}

/* gov_run_may_go_on: a run goes on (executes, starts once approved, resumes after a decision)
 * only while its principal still holds role agent in its department, or everywhere, and a key
 * not revoked; the grants of another principal vouch for nothing. */
static void test_gov_run_go_on(void **state)
{
    (void)state;
    static const struct {
        const char *starter; /* its grants as the store has them now */
        const char *principal;
        size_t keys;
        const char *dept;
        enum gov_reason want;
        const char *why;
    } rows[] = {
        { "agent1", "agent1", 1, "finance", OK, NULL },
        { "agent1", "agent1", 3, "finance", OK, NULL },
        { "agent_all", "agent_all", 1, "ops", OK, NULL },
        { "mixed", "mixed", 1, "finance", OK, NULL },
        /* its last key revoked */
        { "agent1", "agent1", 0, "finance", SR, "agent1 has no API key left" },
        { "agent_all", "agent_all", 0, "finance", SR, NULL },
        /* its agent role taken back (here: never held in the run's department) */
        { "agent1", "agent1", 1, "hr", SR, "agent1 no longer holds role agent in department hr" },
        { "nobody", "nobody", 1, "finance", SR,
          "nobody no longer holds role agent in department finance" },
        { "mixed", "mixed", 1, "hr", SR, NULL },                    /* author there: not agent */
        { "approver_all", "approver_all", 1, "finance", SR, NULL }, /* other roles everywhere */
        { "every_role", "every_role", 0, "finance", SR, NULL },
        /* another principal's grants */
        { "agent1", "agent2", 1, "finance", SR,
          "agent2 no longer holds role agent in department finance" },
    };
    for (size_t i = 0; i < NELEMS(rows); i++) {
        for (int st = GOV_RUN_QUEUED; st <= GOV_RUN_AWAITING_APPROVAL; st++) {
            struct gov_principal p;
            struct gov_decision d;
            struct gov_run r = { "run_1", rows[i].dept, rows[i].principal, (enum gov_run_state)st };
            gov_make(&p, rows[i].starter);
            int got = gov_run_may_go_on(&p, rows[i].keys, &r, &d);
            gov_check("run go on", i, rows[i].starter, got, &d, rows[i].want, rows[i].why);
        }
    }
}

/* ---------------------------------------------------------------- autonomy */

static void test_gov_autonomy_effective(void **state)
{
    (void)state;
    static const struct {
        enum gov_run_kind kind;
        enum gov_autonomy version;
        enum gov_autonomy department;
        enum gov_autonomy want;
    } rows[] = {
        { GOV_RUN_TEMPLATE, GOV_AUTONOMOUS, GOV_AUTONOMOUS, GOV_AUTONOMOUS },
        { GOV_RUN_TEMPLATE, GOV_AUTONOMOUS, GOV_SUPERVISED, GOV_SUPERVISED },
        { GOV_RUN_TEMPLATE, GOV_SUPERVISED, GOV_AUTONOMOUS, GOV_SUPERVISED },
        { GOV_RUN_TEMPLATE, GOV_SUPERVISED, GOV_SUPERVISED, GOV_SUPERVISED },
        /* ad-hoc: the department's, whatever is passed for the version */
        { GOV_RUN_ADHOC, GOV_AUTONOMOUS, GOV_AUTONOMOUS, GOV_AUTONOMOUS },
        { GOV_RUN_ADHOC, GOV_SUPERVISED, GOV_AUTONOMOUS, GOV_AUTONOMOUS },
        { GOV_RUN_ADHOC, GOV_AUTONOMOUS, GOV_SUPERVISED, GOV_SUPERVISED },
        { GOV_RUN_ADHOC, GOV_SUPERVISED, GOV_SUPERVISED, GOV_SUPERVISED },
    };
    for (size_t i = 0; i < NELEMS(rows); i++) {
        char label[96];
        snprintf(label, sizeof label, "%s: version %s, department %s",
                 rows[i].kind == GOV_RUN_ADHOC ? "ad-hoc" : "template",
                 gov_autonomy_name(rows[i].version), gov_autonomy_name(rows[i].department));
        gov_check_int("autonomy", i, label,
                      gov_autonomy_effective(rows[i].kind, rows[i].version, rows[i].department),
                      rows[i].want);
        if (rows[i].kind == GOV_RUN_TEMPLATE) {
            gov_check_int("stricter", i, label,
                          gov_autonomy_stricter(rows[i].version, rows[i].department), rows[i].want);
        }
    }
    static const char *const names[] = { "autonomous", "supervised" };
    for (int a = 0; a < 2; a++) {
        enum gov_autonomy got = a ? GOV_AUTONOMOUS : GOV_SUPERVISED;
        gov_check_int("autonomy name", (size_t)a, names[a],
                      strcmp(gov_autonomy_name((enum gov_autonomy)a), names[a]), 0);
        gov_check_int("autonomy parse", (size_t)a, names[a], gov_autonomy_parse(names[a], &got), 0);
        gov_check_int("autonomy parse value", (size_t)a, names[a], got, a);
    }
    enum gov_autonomy got = GOV_AUTONOMOUS;
    assert_int_equal(gov_autonomy_parse("Supervised", &got), -1);
    assert_int_equal(gov_autonomy_parse(NULL, &got), -1);
    assert_int_equal(got, GOV_AUTONOMOUS);
    /* a value outside the enum never makes a run go without a person */
    assert_int_equal(gov_autonomy_stricter((enum gov_autonomy)7, GOV_AUTONOMOUS), GOV_SUPERVISED);
}

/* ---------------------------------------------------------------- approvals */

static void test_gov_approval_states(void **state)
{
    (void)state;
    static const char *const names[GOV_APPROVAL_STATES] = { "pending", "approved", "denied",
                                                            "cancelled", "answered" };
    for (int s = 0; s < GOV_APPROVAL_STATES; s++) {
        enum gov_approval_state got = GOV_APPROVAL_CANCELLED;
        gov_check_int("approval name", (size_t)s, names[s],
                      strcmp(gov_approval_state_name((enum gov_approval_state)s), names[s]), 0);
        gov_check_int("approval parse", (size_t)s, names[s],
                      gov_approval_state_parse(names[s], &got), 0);
        gov_check_int("approval parse value", (size_t)s, names[s], got, s);
        for (int to = 0; to < GOV_APPROVAL_STATES; to++) {
            gov_check_int(
                    "approval move", (size_t)s * GOV_APPROVAL_STATES + (size_t)to, names[s],
                    gov_approval_may_move((enum gov_approval_state)s, (enum gov_approval_state)to),
                    s == GOV_APPROVAL_PENDING && to != GOV_APPROVAL_PENDING);
        }
    }
    enum gov_approval_state got = GOV_APPROVAL_PENDING;
    assert_int_equal(gov_approval_state_parse("Pending", &got), -1);
    assert_int_equal(gov_approval_state_parse(NULL, &got), -1);
    assert_string_equal(gov_approval_state_name((enum gov_approval_state)9), "?");
}

static const struct gov_approval gov_approvals[] = {
    { "apr_0", "run_0", "finance", "agent1", GOV_APPROVAL_PENDING },
    { "apr_1", "run_2", "hr", "agent2", GOV_APPROVAL_PENDING },
    { "apr_2", "run_1", "finance", "agent2", GOV_APPROVAL_APPROVED },
    { "apr_3", "run_0", "finance", "agent1", GOV_APPROVAL_DENIED },
};
#define GOV_NAPPROVALS (sizeof gov_approvals / sizeof gov_approvals[0])

/* Who sees and who decides each approval. agent1+approver is an approver of finance that
 * started run_0: four eyes refuses it apr_0, and apr_3 too (four eyes before the state). */
static void test_gov_approval_see_and_decide(void **state)
{
    (void)state;
    static const struct {
        const char *who;
        enum gov_reason see[GOV_NAPPROVALS];
        enum gov_reason decide[GOV_NAPPROVALS];
    } rows[] = {
        { "approver_fin", { OK, NR, OK, OK }, { OK, NR, WS, WS } },
        { "approver_all", { OK, OK, OK, OK }, { OK, OK, WS, WS } },
        { "approver_hr", { NR, OK, NR, NR }, { NR, OK, NR, NR } },
        { "agent1+approver", { OK, NR, OK, OK }, { FE, NR, WS, FE } },
        { "author_hr_approver_fin", { OK, NR, OK, OK }, { OK, NR, WS, WS } },
        { "mixed2", { NR, OK, NR, NR }, { NR, OK, NR, NR } },
        { "auditor_hr", { NR, OK, NR, NR }, { NR, NR, NR, NR } },
        { "auditor_all", { OK, OK, OK, OK }, { NR, NR, NR, NR } },
        { "admin_all", { OK, OK, OK, OK }, { NR, NR, NR, NR } },
        { "admin_hr", { NR, OK, NR, NR }, { NR, NR, NR, NR } },
        { "agent1", { NR, NR, NR, NR }, { NR, NR, NR, NR } },
        { "mixed", { NR, NR, NR, NR }, { NR, NR, NR, NR } },
        { "author_fin", { NR, NR, NR, NR }, { NR, NR, NR, NR } },
        { "nobody", { NR, NR, NR, NR }, { NR, NR, NR, NR } },
    };
    for (size_t i = 0; i < NELEMS(rows); i++) {
        struct gov_principal p;
        gov_make(&p, rows[i].who);
        for (size_t a = 0; a < GOV_NAPPROVALS; a++) {
            struct gov_decision d;
            char label[96];
            snprintf(label, sizeof label, "%s and %s (%s, by %s, %s)", rows[i].who,
                     gov_approvals[a].id, gov_approvals[a].department,
                     gov_approvals[a].requested_by,
                     gov_approval_state_name(gov_approvals[a].state));
            int got = gov_approval_may_see(&p, &gov_approvals[a], &d);
            gov_check("approval see", i * GOV_NAPPROVALS + a, label, got, &d, rows[i].see[a], NULL);
            got = gov_approval_may_decide(&p, &gov_approvals[a], &d);
            gov_check("approval decide", i * GOV_NAPPROVALS + a, label, got, &d, rows[i].decide[a],
                      NULL);
        }
    }
}

static void test_gov_approval_words(void **state)
{
    (void)state;
    static const struct {
        const char *who;
        size_t approval;
        enum gov_reason want;
        const char *why;
    } rows[] = {
        { "agent1+approver", 0, FE,
          "four eyes: agent1 started run run_0 and cannot decide its "
          "approval" },
        { "approver_fin", 2, WS, "approval apr_2 is approved already" },
        { "approver_fin", 1, NR, "approver_fin needs role approver in department hr" },
        { "admin_all", 0, NR, "admin_all needs role approver" },
    };
    for (size_t i = 0; i < NELEMS(rows); i++) {
        struct gov_principal p;
        struct gov_decision d;
        gov_make(&p, rows[i].who);
        int got = gov_approval_may_decide(&p, &gov_approvals[rows[i].approval], &d);
        gov_check("approval words", i, rows[i].who, got, &d, rows[i].want, rows[i].why);
    }
    struct gov_principal p;
    struct gov_decision d;
    gov_make(&p, "agent1");
    gov_check("approval see words", 0, "agent1", gov_approval_may_see(&p, &gov_approvals[0], &d),
              &d, NR, "agent1 needs role admin|approver|auditor");
}

/* ---------------------------------------------------------------- audit */

static void test_gov_audit_read(void **state)
{
    (void)state;
    static const struct {
        const char *who;
        enum gov_reason want;
    } rows[] = {
        { "admin_all", OK },    { "admin_hr", OK },      { "auditor_hr", OK },
        { "auditor_all", OK },  { "agent_auditor", OK }, { "every_role", OK },
        { "approver_all", NR }, { "author_fin", NR },    { "agent1", NR },
        { "mixed", NR },        { "mixed2", NR },        { "nobody", NR },
    };
    for (size_t i = 0; i < NELEMS(rows); i++) {
        struct gov_principal p;
        struct gov_decision d;
        gov_make(&p, rows[i].who);
        int got = gov_audit_may_read(&p, &d);
        gov_check("audit read", i, rows[i].who, got, &d, rows[i].want, NULL);
    }
    struct gov_principal p;
    struct gov_decision d;
    gov_make(&p, "nobody");
    gov_check("audit words", 0, "nobody", gov_audit_may_read(&p, &d), &d, NR,
              "nobody needs role admin|auditor");
}

/* Which records a reader of the audit log sees: its departments', and those without a
 * department only when it sees every department. */
static void test_gov_audit_see(void **state)
{
    (void)state;
    static const struct {
        const char *who;
        const char *dept; /* NULL: a record without one */
        enum gov_reason want;
        const char *why;
    } rows[] = {
        { "auditor_hr", "hr", OK, NULL },
        { "auditor_hr", "finance", NR,
          "auditor_hr needs role admin|auditor in department finance" },
        { "auditor_hr", NULL, NR, "auditor_hr needs role admin|auditor in department *" },
        { "auditor_hr", "", NR, NULL },
        { "auditor_hr", "*", NR, NULL },
        { "agent_auditor", "finance", OK, NULL },
        { "agent_auditor", "hr", NR, NULL },
        { "agent_auditor", NULL, NR, NULL },
        { "auditor_fin_agent_hr", "hr", NR, NULL },
        { "auditor_fin_agent_hr", "finance", OK, NULL },
        { "auditor_all", "hr", OK, NULL },
        { "auditor_all", NULL, OK, NULL },
        { "auditor_all", "*", OK, NULL },
        { "admin_all", "finance", OK, NULL },
        { "admin_all", NULL, OK, NULL },
        { "admin_hr", "finance", OK, NULL },
        { "admin_hr", NULL, OK, NULL },
        { "every_role", NULL, OK, NULL },
        { "approver_all", "finance", NR, "approver_all needs role admin|auditor" },
        { "agent1", "finance", NR, NULL },
        { "nobody", NULL, NR, NULL },
    };
    for (size_t i = 0; i < NELEMS(rows); i++) {
        struct gov_principal p;
        struct gov_decision d;
        gov_make(&p, rows[i].who);
        int got = gov_audit_may_see(&p, rows[i].dept, &d);
        gov_check("audit see", i, rows[i].who, got, &d, rows[i].want, rows[i].why);
    }
}

/* A principal without a name owns nothing: not a run or approval whose principal is "". */
static void test_gov_nameless_owns_nothing(void **state)
{
    (void)state;
    struct gov_principal p;
    struct gov_decision d;
    memset(&p, 0, sizeof p);
    assert_int_equal(gov_principal_grant(&p, GOV_ROLE_AGENT, "finance"), 0);
    struct gov_run r = { "run_9", "finance", "", GOV_RUN_RUNNING };
    struct gov_approval a = { "apr_9", "run_9", "finance", "", GOV_APPROVAL_PENDING };
    struct gov_version v = { "payroll", 1, "finance", NULL, GOV_VERSION_SUBMITTED };
    gov_check("nameless", 0, "run", gov_run_may_see(&p, &r, &d), &d, HID, NULL);
    assert_int_equal(gov_principal_grant(&p, GOV_ROLE_APPROVER, "finance"), 0);
    gov_check("nameless", 1, "approval", gov_approval_may_decide(&p, &a, &d), &d, OK, NULL);
    gov_check("nameless", 2, "version", gov_version_may_act(&p, &v, GOV_VERSION_APPROVE, &d), &d,
              OK, NULL);
}

/* Trojan Source: every bidirectional control is found, wherever it is, at its line and column
 * in characters; the invisible but harmless characters and escapes of them are not. */
static void test_gov_source_bidi(void **state)
{
    (void)state;
    static const struct {
        const char *src;
        unsigned line, column;
        uint32_t cp;
    } found[] = {
        { "\xe2\x80\xae", 1, 1, 0x202E },
        { "if (a) {\n  /* x \xe2\x80\xae } \xe2\x81\xa6 if (amount <= 50) { */", 2, 8, 0x202E },
        { "const s = \"\xe2\x81\xa7\";", 1, 12, 0x2067 },
        { "// \xc3\xa9\xc3\xa9 \xe2\x80\xaa", 1, 7, 0x202A },
        { "x\n\ny\xe2\x80\x8e", 3, 2, 0x200E },
        { "\xe2\x80\x8f", 1, 1, 0x200F },
        { "a\xd8\x9c", 1, 2, 0x061C },
        { "\xe2\x81\xa9", 1, 1, 0x2069 },
        { "\xe2\x81\xa6", 1, 1, 0x2066 },
        { "\xff\xe2\x80\xab", 1, 2, 0x202B }, /* an invalid byte is one character */
    };
    for (size_t i = 0; i < sizeof found / sizeof found[0]; i++) {
        struct gov_source_char c = { 0 };
        assert_int_equal(gov_source_bidi(found[i].src, strlen(found[i].src), &c), 1);
        if (c.line != found[i].line || c.column != found[i].column || c.code_point != found[i].cp) {
            fail_msg("case %zu: %u:%u U+%04X, want %u:%u U+%04X", i, c.line, c.column,
                     (unsigned)c.code_point, found[i].line, found[i].column, (unsigned)found[i].cp);
        }
    }
    static const char *const clean[] = {
        "",
        "return input.amount <= 50;",
        "const s = \"\\u202e\"; // an escape is fine",
        "zero\xe2\x80\x8bwidth \xef\xbb\xbf \xe2\x81\xa0 \xe2\x80\x8d", /* invisible, not bidi */
        "\xe2\x80",                           /* truncated: U+202D without its last byte */
        "\xe2\x80\xaf \xe2\x81\xaa \xd8\x9b", /* U+202F, U+206A, U+061B: neighbours */
    };
    for (size_t i = 0; i < sizeof clean / sizeof clean[0]; i++) {
        struct gov_source_char c = { 0 };
        if (gov_source_bidi(clean[i], strlen(clean[i]), &c) != 0) {
            fail_msg("clean case %zu: found U+%04X at %u:%u", i, (unsigned)c.code_point, c.line,
                     c.column);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gov_role_names_round_trip),
        cmocka_unit_test(test_gov_principal_limits),
        cmocka_unit_test(test_gov_holds_per_department),
        cmocka_unit_test(test_gov_reasons_have_status_and_code),
        cmocka_unit_test(test_gov_may_words),
        cmocka_unit_test(test_gov_version_names_round_trip),
        cmocka_unit_test(test_gov_version_moves_every_pair),
        cmocka_unit_test(test_gov_version_act_every_state),
        cmocka_unit_test(test_gov_version_act_roles),
        cmocka_unit_test(test_gov_version_act_words),
        cmocka_unit_test(test_gov_template_view_and_read),
        cmocka_unit_test(test_gov_audit_see),
        cmocka_unit_test(test_gov_run_names_round_trip),
        cmocka_unit_test(test_gov_run_moves_every_pair),
        cmocka_unit_test(test_gov_run_see_mixed_roles),
        cmocka_unit_test(test_gov_run_cancel_mixed_roles),
        cmocka_unit_test(test_gov_run_words),
        cmocka_unit_test(test_gov_run_cancel_every_state),
        cmocka_unit_test(test_gov_run_start),
        cmocka_unit_test(test_gov_run_go_on),
        cmocka_unit_test(test_gov_autonomy_effective),
        cmocka_unit_test(test_gov_approval_states),
        cmocka_unit_test(test_gov_approval_see_and_decide),
        cmocka_unit_test(test_gov_approval_words),
        cmocka_unit_test(test_gov_audit_read),
        cmocka_unit_test(test_gov_nameless_owns_nothing),
        cmocka_unit_test(test_gov_source_bidi),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    printf("unit.gov: %zu table rows checked\n", gov_rows);
    return failed;
}
