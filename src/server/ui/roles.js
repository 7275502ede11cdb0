// roles.js - what the signed-in principal may do, by the rules of src/server/router.c and
// api_allow: a role counts in a department when granted there or for "*"; admin is granted for
// "*" only. The pages offer an action only when these say the API would allow it.

export class Me {
    constructor(doc) {
        this.name = doc.name;
        this.kind = doc.kind;
        // a session of single sign-on: its grants and those its groups gave (docs/sso.md)
        this.roles = doc.session_roles || doc.roles || [];
        this.session = Boolean(doc.csrf_token);
    }

    has(role, dept) {
        return this.roles.some((r) => r.role === role && (r.department === '*' || dept === undefined || r.department === dept));
    }

    hasAnywhere(role) {
        return this.roles.some((r) => r.role === role);
    }

    get admin() {
        return this.has('admin', '*');
    }

    // the routes with AUTH_ANY_DEPARTMENT and READERS: a role in any department
    get reader() {
        return this.admin || this.hasAnywhere('auditor');
    }

    // the export is every record of the log: an admin's, or an auditor's of every department
    get canExportAudit() {
        return this.admin || this.has('auditor', '*');
    }

    get canListApprovals() {
        return this.admin || this.hasAnywhere('auditor') || this.hasAnywhere('approver');
    }

    // A role the desk serves: agents use the API, not the desk.
    get uiRole() {
        return this.roles.some((r) => r.role !== 'agent');
    }

    canDecideApproval(a) {
        if (!this.has('approver', a.department)) {
            return { ok: false, why: 'You are not an approver of department ' + a.department + '.' };
        }
        if (a.requested_by === this.name) {
            return { ok: false, why: 'Four eyes: you started this run, another approver must decide.' };
        }
        if (a.status !== 'pending') {
            return { ok: false, why: 'Already ' + a.status + '.' };
        }
        return { ok: true, why: '' };
    }
}
