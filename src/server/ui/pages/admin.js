// pages/admin.js - principals and their keys (create, revoke; a new key is shown once, with a
// copy button; a user's identity, disable, enable, delete), role grants, departments and their
// policies (rename, delete when empty), connectors (their functions and header names; edit,
// delete; airlockd never gives out a signing secret or a header value, and a change of what an
// approved version may do is refused unless the admin ticks the box that revokes them). Admins
// change things; auditors see the same tables without the buttons.

import { del, get, patch, post, put } from '../api.js';
import { add, clear, confirmDialog, el, field, notice } from '../dom.js';

const ROLES = ['approver', 'author', 'auditor', 'agent', 'admin'];

function newKeyBox(who, key) {
    const out = el('output', { class: 'key mono', id: 'new-key' }, key);
    const copied = el('span', { role: 'status' });
    const copy = el('button', { type: 'button', id: 'copy-key' }, 'Copy');
    copy.addEventListener('click', async () => {
        try {
            await navigator.clipboard.writeText(key);
            copied.textContent = 'Copied.';
        } catch (e) {
            const r = document.createRange();
            r.selectNodeContents(out);
            const s = getSelection();
            s.removeAllRanges();
            s.addRange(r);
            copied.textContent = 'Selected: press Ctrl+C to copy.';
        }
    });
    return el('div', { class: 'card newkey', role: 'alert' }, el('h3', null, 'New key for ', who),
        el('p', null, 'Shown this once: airlockd keeps only its hash. Copy it now.'), out, ' ', copy, ' ', copied);
}

export async function render(ctx) {
    const m = ctx.main;
    const admin = ctx.me.admin;
    const reload = () => ctx.navigate(location.pathname, true);
    const msg = el('div', { id: 'admin-msg' });
    const act = async (fn) => {
        try {
            await fn();
            return true;
        } catch (e) {
            add(clear(msg), notice(e.message, 'error'));
            return false;
        }
    };
    const [principals, departments, connectors] = await Promise.all([
        get('/v1/principals'), get('/v1/departments'), get('/v1/connectors')]);
    add(m, el('h1', null, 'Admin'), admin ? null : el('p', { class: 'muted' }, 'Read only: changes need the admin role.'), msg);

    // principals
    const sec = el('section', { class: 'card', 'aria-labelledby': 'h-principals' }, el('h2', { id: 'h-principals' }, 'Principals and keys'));
    const keyArea = el('div');
    if (admin) {
        const name = el('input', { type: 'text', required: true, pattern: '[a-z0-9][a-z0-9._-]{0,63}' });
        const kind = el('select', null, el('option', { value: 'user' }, 'user'), el('option', { value: 'agent' }, 'agent'));
        const form = el('form', { class: 'inline-form', 'aria-label': 'New principal' }, field('Name', name), field('Kind', kind),
            el('button', { type: 'submit', class: 'primary' }, 'Create principal'));
        form.addEventListener('submit', async (ev) => {
            ev.preventDefault();
            await act(async () => {
                const doc = await post('/v1/principals', { name: name.value, kind: kind.value });
                await renderPrincipals();
                add(clear(keyArea), newKeyBox(doc.name, doc.key));
            });
        });
        add(sec, form);
    }
    add(sec, keyArea);
    const tableBox = el('div');
    add(sec, tableBox);
    add(m, sec);
    let whoSelect = null;
    const renderPrincipals = async (list) => {
        list = list || await get('/v1/principals');
        if (whoSelect) {
            const keep = whoSelect.value;
            add(clear(whoSelect), list.map((p) => el('option', { value: p.name, selected: p.name === keep }, p.name)));
        }
        add(clear(tableBox), el('table', { class: 'list principals' },
            el('thead', null, el('tr', null, ['Name', 'Kind', 'Identity', 'Roles', 'Keys', ''].map((h) => el('th', { scope: 'col' }, h)))),
            el('tbody', null, list.map((p) => el('tr', { 'data-principal': p.name },
                el('td', null, p.name, p.disabled ? [' ', el('span', { class: 'badge' }, 'disabled')] : null), el('td', null, p.kind),
                el('td', null, p.identity || ''),
                el('td', null, el('ul', { class: 'plain' }, p.roles.map((r) => el('li', null, r.role + ' in ' + r.department,
                    admin ? [' ', el('button', { type: 'button', class: 'link', 'aria-label': 'Revoke role ' + r.role + ' in ' + r.department + ' from ' + p.name,
                        onclick: async (ev) => {
                            if (await confirmDialog('Revoke role ' + r.role + ' in ' + r.department + ' from ' + p.name + '?', el('p', null, 'It takes effect from the next request.'), 'Revoke role', { opener: ev.currentTarget })) {
                                await act(async () => {
                                    await del('/v1/principals/' + encodeURIComponent(p.name) + '/roles', { role: r.role, department: r.department });
                                    await renderPrincipals();
                                });
                            }
                        } }, 'revoke')] : null)))),
                el('td', null, el('ul', { class: 'plain' }, p.keys.map((k) => el('li', null, el('code', null, k.prefix), k.revoked ? ' (revoked)' : '',
                    admin && !k.revoked ? [' ', el('button', { type: 'button', class: 'link', 'aria-label': 'Revoke key ' + k.prefix,
                        onclick: async (ev) => {
                            if (await confirmDialog('Revoke key ' + k.prefix + '?', el('p', null, 'Requests with this key are refused from the next one on.'), 'Revoke key', { opener: ev.currentTarget })) {
                                await act(async () => {
                                    await del('/v1/principals/' + encodeURIComponent(p.name) + '/keys/' + encodeURIComponent(k.prefix));
                                    await renderPrincipals();
                                });
                            }
                        } }, 'revoke')] : null))),
                admin ? el('button', { type: 'button', class: 'small', onclick: () => act(async () => {
                    const doc = await post('/v1/principals/' + encodeURIComponent(p.name) + '/keys');
                    await renderPrincipals();
                    add(clear(keyArea), newKeyBox(p.name, doc.key));
                }) }, 'New key') : null),
                el('td', null, admin ? principalActions(p) : null))))));
    };
    // a user's identity, disable or enable, delete; never offered on the admin's own row
    const principalActions = (p) => {
        const url = '/v1/principals/' + encodeURIComponent(p.name);
        const out = [];
        if (p.kind === 'user') {
            out.push(el('button', { type: 'button', class: 'small', 'aria-label': 'Identity of ' + p.name, onclick: async (ev) => {
                const input = el('input', { type: 'text', value: p.identity || '', maxlength: 256 });
                if (await confirmDialog('Identity of ' + p.name, el('div', null,
                    el('p', null, 'Who the identity provider signs this person in as (an e-mail address or a subject). Empty: none.'),
                    field('Identity', input)), 'Save identity', { opener: ev.currentTarget })) {
                    await act(async () => {
                        await patch(url, { identity: input.value.trim() || null });
                        await renderPrincipals();
                    });
                }
            } }, 'Identity'));
        }
        if (p.name === ctx.me.name) {
            return out;
        }
        out.push(' ', el('button', { type: 'button', class: 'small', 'aria-label': (p.disabled ? 'Enable ' : 'Disable ') + p.name, onclick: async (ev) => {
            if (p.disabled || await confirmDialog('Disable ' + p.name + '?', el('p', null, 'Its keys are refused from the next request on and its runs in progress are cancelled. Its keys and roles stay: enable it to give them back.'), 'Disable', { opener: ev.currentTarget })) {
                await act(async () => {
                    await patch(url, { disabled: !p.disabled });
                    await renderPrincipals();
                });
            }
        } }, p.disabled ? 'Enable' : 'Disable'), ' ', el('button', { type: 'button', class: 'small', 'aria-label': 'Delete principal ' + p.name, onclick: async (ev) => {
            if (await confirmDialog('Delete ' + p.name + '?', el('p', null, 'Its keys and roles go with it and its runs in progress are cancelled. Runs and the audit log keep its name.'), 'Delete principal', { opener: ev.currentTarget })) {
                await act(async () => {
                    await del(url);
                    await renderPrincipals();
                });
            }
        } }, 'Delete'));
        return out;
    };
    await renderPrincipals(principals);

    if (admin) {
        const who = el('select', null, principals.map((p) => el('option', { value: p.name }, p.name)));
        whoSelect = who;
        const role = el('select', null, ROLES.map((r) => el('option', { value: r }, r)));
        const dept = el('select', null, el('option', { value: '*' }, '* (all)'), departments.map((d) => el('option', { value: d.name }, d.name)));
        // admin is only granted for "*" (the API refuses it per department)
        role.addEventListener('change', () => {
            if (role.value === 'admin') {
                dept.value = '*';
            }
            dept.disabled = role.value === 'admin';
        });
        const form = el('form', { class: 'inline-form', 'aria-label': 'Grant a role' },
            field('Principal', who), field('Role', role), field('Department', dept), el('button', { type: 'submit', class: 'primary' }, 'Grant'));
        form.addEventListener('submit', async (ev) => {
            ev.preventDefault();
            await act(async () => {
                await post('/v1/principals/' + encodeURIComponent(who.value) + '/roles', { role: role.value, department: dept.value });
                await renderPrincipals();
            });
        });
        add(m, el('section', { class: 'card', 'aria-labelledby': 'h-grant' }, el('h2', { id: 'h-grant' }, 'Grant a role'), form));
    }

    // departments
    const dsec = el('section', { class: 'card', 'aria-labelledby': 'h-departments' }, el('h2', { id: 'h-departments' }, 'Departments and policies'));
    if (admin) {
        const name = el('input', { type: 'text', required: true });
        const form = el('form', { class: 'inline-form', 'aria-label': 'New department' }, field('Name', name), el('button', { type: 'submit', class: 'primary' }, 'Create department'));
        form.addEventListener('submit', async (ev) => {
            ev.preventDefault();
            if (await act(() => post('/v1/departments', { name: name.value }))) {
                reload();
            }
        });
        add(dsec, form);
    }
    add(dsec, el('table', { class: 'list departments' },
        el('thead', null, el('tr', null, ['Department', 'Autonomy', 'Ad-hoc runs', ''].map((h) => el('th', { scope: 'col' }, h)))),
        el('tbody', null, departments.map((d) => {
            if (!admin) {
                return el('tr', null, el('td', null, d.name), el('td', null, d.autonomy), el('td', null, d.allow_adhoc ? 'allowed' : 'not allowed'), el('td'));
            }
            const auto = el('select', { 'aria-label': 'Autonomy of ' + d.name }, ['autonomous', 'supervised'].map((a) => el('option', { value: a, selected: a === d.autonomy }, a)));
            const adhoc = el('input', { type: 'checkbox', checked: d.allow_adhoc, 'aria-label': 'Allow ad-hoc runs in ' + d.name });
            const url = '/v1/departments/' + encodeURIComponent(d.name);
            return el('tr', { 'data-department': d.name }, el('td', null, d.name), el('td', null, auto), el('td', null, adhoc),
                el('td', null, el('button', { type: 'button', class: 'small', onclick: async () => {
                    if (await act(() => put(url + '/policy', { autonomy: auto.value, allow_adhoc: adhoc.checked }))) {
                        add(clear(msg), notice('Saved the policy of ' + d.name + '.', 'ok'));
                    }
                } }, 'Save policy'), ' ', el('button', { type: 'button', class: 'small', 'aria-label': 'Rename department ' + d.name, onclick: async (ev) => {
                    const input = el('input', { type: 'text', value: d.name, required: true, pattern: '[a-z0-9][a-z0-9._-]{0,63}' });
                    if (await confirmDialog('Rename ' + d.name, el('div', null,
                        el('p', null, 'Its templates, connectors, mounts, roles and runs follow it; the audit log keeps the old name in its records.'),
                        field('New name', input)), 'Rename', { opener: ev.currentTarget }) && await act(() => patch(url, { name: input.value }))) {
                        reload();
                    }
                } }, 'Rename'), ' ', el('button', { type: 'button', class: 'small', 'aria-label': 'Delete department ' + d.name, onclick: async (ev) => {
                    if (await confirmDialog('Delete ' + d.name + '?', el('p', null, 'Only an empty department can go: no template, connector, mount, role, run or snapshot may name it.'), 'Delete department', { opener: ev.currentTarget }) && await act(() => del(url))) {
                        reload();
                    }
                } }, 'Delete')));
        }))));
    add(m, dsec);

    // connectors
    add(m, el('section', { class: 'card', 'aria-labelledby': 'h-connectors' }, el('h2', { id: 'h-connectors' }, 'Connectors'),
        el('p', { class: 'muted' }, 'Signing secrets and header values are sealed in airlockd and never shown.'),
        connectors.length ? el('table', { class: 'list connectors' },
            el('thead', null, el('tr', null, ['Connector', 'Department', 'URL', 'Functions', 'Headers', ''].map((h) => el('th', { scope: 'col' }, h)))),
            el('tbody', null, connectors.map((c) => el('tr', { 'data-connector': c.name }, el('td', null, c.name), el('td', null, c.department), el('td', null, el('code', null, c.url)),
                el('td', null, el('ul', { class: 'plain' }, Object.entries(c.functions || {}).map(([f, s]) => el('li', null, el('code', null, f), s.sensitive ? ' (sensitive)' : '')))),
                el('td', null, (c.header_names || []).join(', ')),
                el('td', null, admin ? connectorActions(c) : null))))) : el('p', { class: 'muted' }, 'No connectors.')));

    // Edit: what is left as it was is not sent; Delete. Either is refused (409, its message shown)
    // while it would change what an approved version may do, unless the box that revokes them is
    // ticked (?force=true).
    function connectorActions(c) {
        const url = '/v1/connectors/' + encodeURIComponent(c.name);
        const forceBox = (what) => el('label', null, el('input', { type: 'checkbox', name: 'force' }),
            ' Also revoke the approved versions ' + what + ' would change');
        return [el('button', { type: 'button', class: 'small', 'aria-label': 'Edit connector ' + c.name, onclick: async (ev) => {
            const fns = JSON.stringify(c.functions || {}, null, 2);
            const f = {
                url: el('input', { type: 'url', value: c.url }),
                timeout: el('input', { type: 'number', min: 1, max: 60000, value: String(c.timeout_ms) }),
                secret: el('input', { type: 'password', autocomplete: 'off', placeholder: 'unchanged' }),
                headers: el('textarea', { rows: 3, placeholder: 'unchanged: a JSON object of name -> value replaces them all' }),
                functions: el('textarea', { rows: 8, class: 'mono' }, fns),
            };
            const force = forceBox('this change');
            if (!await confirmDialog('Edit connector ' + c.name, el('div', { class: 'connector-edit' },
                field('URL', f.url), field('Timeout (ms)', f.timeout), field('New signing secret', f.secret),
                field('Headers', f.headers), field('Functions', f.functions), force), 'Save connector', { opener: ev.currentTarget })) {
                return;
            }
            const body = {};
            if (f.url.value !== c.url) {
                body.url = f.url.value;
            }
            if (Number(f.timeout.value) !== c.timeout_ms) {
                body.timeout_ms = Number(f.timeout.value);
            }
            if (f.secret.value) {
                body.signing_secret = f.secret.value;
            }
            if (await act(async () => {
                if (f.headers.value.trim()) {
                    body.headers = JSON.parse(f.headers.value);
                }
                if (f.functions.value !== fns) {
                    body.functions = JSON.parse(f.functions.value);
                }
                await patch(url + (force.querySelector('input').checked ? '?force=true' : ''), body);
            })) {
                reload();
            }
        } }, 'Edit'), ' ', el('button', { type: 'button', class: 'small', 'aria-label': 'Delete connector ' + c.name, onclick: async (ev) => {
            const force = forceBox('deleting it');
            if (await confirmDialog('Delete connector ' + c.name + '?', el('div', null,
                el('p', null, 'Runs calling its functions fail from then on.'), force), 'Delete connector', { opener: ev.currentTarget }) &&
                await act(() => del(url + (force.querySelector('input').checked ? '?force=true' : '')))) {
                reload();
            }
        } }, 'Delete')];
    }
}
