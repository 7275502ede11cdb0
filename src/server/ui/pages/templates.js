// pages/templates.js - templates, a template's versions (with a small authoring form for its
// authors) and the review of one version: its source (numbered, highlighted), input schema,
// limits, functions (sensitive ones marked, from the connectors), autonomy and workspace manifest
// (its entries, which mounts they name, what is writable); the diff against
// the last approved version; how it replays against recent runs of the approved version (the
// same calls, or where it diverges); submit, approve / reject with a comment, revoke with a
// reason.
// The author of a version sees Approve disabled with the reason (four eyes).

import { ApiError, get, post } from '../api.js';
import { add, badge, clear, confirmDialog, el, field, hasHidden, notice, path, pretty, when } from '../dom.js';
import { codeBlock, diffBlock } from '../highlight.js';

function stateBadge(s) {
    return badge(s, 'state-' + s);
}

function versionLink(t, v) {
    return el('a', { href: path('templates', t, 'versions', v) }, t + ' v' + v);
}

export async function renderList(ctx) {
    const m = ctx.main;
    const list = await get('/v1/templates');
    add(m, el('h1', null, 'Templates'));
    const authorDepts = ctx.me.roles.filter((r) => r.role === 'author').map((r) => r.department);
    if (authorDepts.length) {
        const name = el('input', { type: 'text', required: true, pattern: '[a-z0-9][a-z0-9._-]{0,63}' });
        // only the departments this author may create templates in (all of them for "*")
        const depts = authorDepts.includes('*') ? (await get('/v1/departments')).map((d) => d.name) : authorDepts;
        const dept = el('select', { required: true }, depts.map((d) => el('option', { value: d }, d)));
        const desc = el('input', { type: 'text' });
        const msg = el('div');
        const form = el('form', { class: 'card', 'aria-label': 'New template' }, el('h2', null, 'New template'),
            field('Name', name), field('Department', dept), field('Description', desc), msg,
            el('button', { type: 'submit', class: 'primary' }, 'Create template'));
        form.addEventListener('submit', async (ev) => {
            ev.preventDefault();
            try {
                await post('/v1/templates', { name: name.value, department: dept.value, description: desc.value });
                ctx.navigate(path('templates', name.value));
            } catch (e) {
                add(clear(msg), notice(e.message, 'error'));
            }
        });
        add(m, form);
    }
    if (!list.length) {
        add(m, el('p', { class: 'muted' }, 'No templates you can see.'));
        return;
    }
    add(m, el('table', { class: 'list' },
        el('thead', null, el('tr', null, el('th', null, 'Template'), el('th', null, 'Department'), el('th', null, 'Description'), el('th', null, 'Versions'))),
        el('tbody', null, list.map((t) => el('tr', null,
            el('td', null, el('a', { href: path('templates', t.name) }, t.name)),
            el('td', null, t.department),
            el('td', null, t.description || ''),
            el('td', null, t.versions.map((v) => el('span', { class: 'ver' }, versionLink(t.name, v.version), ' ', stateBadge(v.state)))))))));
}

export async function renderTemplate(ctx, t) {
    const m = ctx.main;
    const tpl = await get('/v1/templates/' + encodeURIComponent(t));
    add(m, el('h1', null, 'Template ', el('span', { class: 'name' }, tpl.name)),
        el('p', { class: 'meta' }, 'Department ', tpl.department, ' · created by ', tpl.created_by, ' · ', when(tpl.created)),
        tpl.description ? el('p', { class: 'description' }, tpl.description) : null);
    add(m, el('h2', null, 'Versions'));
    if (!tpl.versions.length) {
        add(m, el('p', { class: 'muted' }, 'No versions yet.'));
    } else {
        add(m, el('table', { class: 'list' },
            el('thead', null, el('tr', null, el('th', null, 'Version'), el('th', null, 'State'), el('th', null, 'Author'), el('th', null, 'Created'))),
            el('tbody', null, tpl.versions.map((v) => el('tr', null,
                el('td', null, versionLink(tpl.name, v.version)), el('td', null, stateBadge(v.state)),
                el('td', null, v.author), el('td', null, when(v.created)))))));
    }
    if (ctx.me.has('author', tpl.department)) {
        const src = el('textarea', { rows: 10, class: 'mono', required: true, spellcheck: 'false' });
        const fns = el('input', { type: 'text', placeholder: 'shop.orders, shop.refund' });
        const schema = el('textarea', { rows: 3, class: 'mono', spellcheck: 'false' }, '{}');
        const autonomy = el('select', null, el('option', { value: 'autonomous' }, 'autonomous'), el('option', { value: 'supervised' }, 'supervised'));
        const msg = el('div');
        const form = el('form', { class: 'card', 'aria-label': 'New version' }, el('h2', null, 'New version'),
            field('Source', src), field('Functions', fns, 'connector.function names, separated by commas'),
            field('Input schema (JSON)', schema), field('Autonomy', autonomy), msg,
            el('button', { type: 'submit', class: 'primary' }, 'Create version'));
        form.addEventListener('submit', async (ev) => {
            ev.preventDefault();
            let inputSchema;
            try {
                inputSchema = JSON.parse(schema.value || '{}');
            } catch (e) {
                add(clear(msg), notice('The input schema is not JSON: ' + e.message, 'error'));
                return;
            }
            try {
                const v = await post('/v1/templates/' + encodeURIComponent(t) + '/versions', {
                    source: src.value, functions: fns.value.split(',').map((s) => s.trim()).filter(Boolean),
                    input_schema: inputSchema, autonomy: autonomy.value,
                });
                ctx.navigate(path('templates', t, 'versions', v.version));
            } catch (e) {
                add(clear(msg), notice(e.message, 'error'));
            }
        });
        add(m, form);
    }
}

function kv(rows) {
    return el('table', { class: 'kv' }, el('tbody', null, rows.filter(Boolean).map(([k, v]) => el('tr', null, el('th', { scope: 'row' }, k), el('td', null, v)))));
}

function changesBlock(ch) {
    const items = [];
    if (ch.functions) {
        for (const f of ch.functions.added || []) {
            items.push(el('li', { class: 'diff-add' }, 'function added: ', el('code', null, f)));
        }
        for (const f of ch.functions.removed || []) {
            items.push(el('li', { class: 'diff-del' }, 'function removed: ', el('code', null, f)));
        }
    }
    for (const [k, d] of Object.entries(ch.limits || {})) {
        items.push(el('li', null, 'limit ', el('code', null, k), ': ', String(d.from ?? 'none'), ' → ', String(d.to ?? 'none')));
    }
    if (ch.input_schema && ch.input_schema.changed) {
        items.push(el('li', null, 'input schema changed',
            el('div', { class: 'sidebyside' },
                el('div', null, el('p', { class: 'label' }, 'before'), el('pre', { class: 'json diff-del' }, pretty(ch.input_schema.from))),
                el('div', null, el('p', { class: 'label' }, 'after'), el('pre', { class: 'json diff-add' }, pretty(ch.input_schema.to))))));
    }
    if (ch.workspace && ch.workspace.changed) {
        items.push(el('li', null, 'workspace changed',
            el('div', { class: 'sidebyside' },
                el('div', null, el('p', { class: 'label' }, 'before'), el('pre', { class: 'json diff-del' }, pretty(ch.workspace.from))),
                el('div', null, el('p', { class: 'label' }, 'after'), el('pre', { class: 'json diff-add' }, pretty(ch.workspace.to))))));
    }
    for (const k of ['autonomy', 'language']) {
        if (ch[k]) {
            items.push(el('li', null, k + ': ' + ch[k].from + ' → ' + ch[k].to));
        }
    }
    return items.length ? el('ul', { class: 'changes' }, items) : el('p', { class: 'muted' }, 'The capabilities are the same.');
}

// The manifest as an approver reads it: each entry's path, what it is (inline, a directory, or
// which mount and prefix), whether the run may write there (only under an output prefix), then
// the manifest itself.
function workspaceCard(ws) {
    const outputs = Array.isArray(ws.outputs) ? ws.outputs : [];
    const writable = (p, e) => outputs.some((o) => (p + '/').startsWith(o.endsWith('/') ? o : o + '/'))
        && ((e.type !== 'local_dir' && e.type !== 's3_mount') || e.read_only === false);
    const rows = Object.entries(ws.entries || {}).map(([p, e]) => el('tr', null,
        el('td', null, el('code', null, p)),
        el('td', null, String(e.type)),
        el('td', null, e.mount ? [el('code', { class: 'mount' }, e.mount), e.prefix ? [' ', el('code', null, e.prefix)] : ''] :
            e.type === 'file' ? String((e.content || '').length) + ' characters inline' : ''),
        el('td', null, writable(p, e) ? badge('writable', 'sensitive') : 'read-only')));
    return el('section', { class: 'card workspace' }, el('h2', null, 'Workspace'),
        rows.length ? el('table', { class: 'entries' },
            el('thead', null, el('tr', null, ['path', 'type', 'source', 'access'].map((h) => el('th', { scope: 'col' }, h)))),
            el('tbody', null, rows)) : el('p', { class: 'muted' }, 'no entries'),
        el('p', null, 'Outputs: ', outputs.length ? outputs.map((o) => [el('code', null, o), ' ']) : el('span', { class: 'muted' }, 'none')),
        el('pre', { class: 'json manifest' }, pretty(ws)));
}

// "replays 18 of 20 recent runs identically; diverges on 2 at call 3" (the CLI's words too).
export function replaySummary(r) {
    if (r.state === 'running') {
        return 'The replay against recent runs is still running: reload to see it.';
    }
    if (r.state === 'none') {
        return 'Not replayed: the version was never submitted.';
    }
    if (r.state === 'superseded') {
        return 'Not replayed: a newer version of the template is submitted, and only the newest is replayed.';
    }
    if (!r.runs) {
        return r.against === null ? 'Nothing to replay: no version was approved before.' : 'No recent runs of v' + r.against + ' to replay.';
    }
    let s = 'replays ' + r.same + ' of ' + r.runs + ' recent runs identically';
    if (r.diverged.length) {
        const calls = [...new Set(r.diverged.map((d) => d.at_call))];
        s += '; diverges on ' + r.diverged.length + ' at call' + (calls.length > 1 ? 's ' : ' ') + calls.join(', ');
    }
    if (r.failed.length) {
        s += '; fails on ' + r.failed.length;
    }
    return s;
}

function replayCall(c) {
    return c ? [el('code', null, c.function), ' ', el('code', { class: 'digest', title: 'SHA-256 of the arguments' }, c.args_sha256.slice(0, 12))] : el('span', { class: 'muted' }, 'nothing');
}

// The replay's card: its summary, then each run it diverges on (what the run called at that
// call, what this version calls) and each it fails on; waiting runs are marked.
function replayCard(r) {
    const sec = el('section', { class: 'card', id: 'replay' }, el('h2', null, 'Replay against recent runs'));
    if (r.error) {
        return add(sec, notice('No replay: ' + r.error.message, 'error'));
    }
    add(sec, el('p', { class: 'replay-summary' }, replaySummary(r)));
    const waiting = new Set(r.waiting || []);
    const runLink = (id) => [el('a', { href: path('runs', id) }, id), waiting.has(id) ? [' ', badge('waiting', 'state-awaiting_approval')] : ''];
    if (r.diverged && r.diverged.length) {
        add(sec, el('table', { class: 'replay-diverged' },
            el('thead', null, el('tr', null, el('th', null, 'Run'), el('th', null, 'Call'), el('th', null, 'The run called'), el('th', null, 'This version calls'))),
            el('tbody', null, r.diverged.map((d) => el('tr', null, el('td', null, runLink(d.run)), el('td', null, String(d.at_call)),
                el('td', null, replayCall(d.expected)), el('td', null, replayCall(d.got)))))));
    }
    if (r.failed && r.failed.length) {
        add(sec, el('ul', { class: 'replay-failed' }, r.failed.map((f) => el('li', null, runLink(f.run), ' fails: ', el('code', null, f.error.code), f.error.same_as_run ? ' (as the run did)' : ' (the run did not)'))));
    }
    return sec;
}

export async function renderVersion(ctx, t, v) {
    const m = ctx.main;
    const base = '/v1/templates/' + encodeURIComponent(t) + '/versions/' + encodeURIComponent(v);
    const ver = await get(base);
    const [tpl, diff, connectors, replay] = await Promise.all([
        get('/v1/templates/' + encodeURIComponent(t)).catch(() => null),
        get(base + '/diff').catch((e) => ({ error: e })),
        get('/v1/connectors').catch(() => []),
        // an agent may not read it (it names runs): no card then
        get(base + '/replay').catch((e) => (e instanceof ApiError && e.status === 403 ? null : { error: e })),
    ]);
    const sensitive = new Set();
    for (const c of connectors) {
        for (const [fn, spec] of Object.entries(c.functions || {})) {
            if (spec.sensitive) {
                sensitive.add(c.name + '.' + fn);
            }
        }
    }
    add(m, el('h1', null, el('span', { class: 'name' }, ver.template), ' version ', String(ver.version), ' ', stateBadge(ver.state)),
        el('p', { class: 'meta' }, 'Department ', ver.department, ' · written by ', el('strong', { class: 'author' }, ver.author), ' · ', when(ver.created),
            ' · ', el('a', { href: path('templates', ver.template) }, 'all versions')),
        tpl && tpl.description ? el('p', { class: 'description' }, tpl.description) : null);

    add(m, actions(ctx, ver, base));

    const diffSec = el('section', { class: 'card', id: 'diff' }, el('h2', null, 'Changes'));
    if (diff.error) {
        add(diffSec, notice('No diff: ' + diff.error.message, 'error'));
    } else {
        add(diffSec, el('p', { class: 'meta' }, diff.from === null ? 'No approved version before this one: the whole source is new.' : 'Against the last approved version, ' + t + ' v' + diff.from + '.'),
            el('h3', null, 'Capabilities'), changesBlock(diff.changes || {}), el('h3', null, 'Source'), diffBlock(diff.source_diff));
    }
    add(m, diffSec);
    if (replay) {
        add(m, replayCard(replay));
    }

    const history = [
        ver.submitted_by && ['Submitted', ver.submitted_by + ' · ' + when(ver.submitted)],
        ver.approved_by && ['Approved', [ver.approved_by + ' · ' + when(ver.approved), ver.approve_comment ? el('q', { class: 'comment' }, ver.approve_comment) : '']],
        ver.rejected_by && ['Rejected', [ver.rejected_by + ' · ' + when(ver.rejected), ver.reject_comment ? el('q', { class: 'comment' }, ver.reject_comment) : '']],
        ver.revoked_by && ['Revoked', [ver.revoked_by + ' · ' + when(ver.revoked), ver.revoke_reason ? el('q', { class: 'comment' }, ver.revoke_reason) : '']],
    ];
    const fnList = ver.functions.length
        ? el('ul', { class: 'functions' }, ver.functions.map((f) => el('li', null, el('code', null, f), sensitive.has(f) ? [' ', badge('sensitive', 'sensitive')] : '')))
        : el('span', { class: 'muted' }, 'none');
    const limits = Object.keys(ver.limits || {}).length
        ? el('ul', { class: 'limits' }, Object.entries(ver.limits).map(([k, val]) => el('li', null, el('code', null, k), ' ', String(val))))
        : el('span', { class: 'muted' }, 'defaults');
    add(m, el('section', { class: 'grid2' },
        el('div', { class: 'card' }, el('h2', null, 'Capabilities'), kv([
            ['Autonomy', ver.autonomy], ['Language', ver.language], ['Functions', fnList], ['Limits', limits],
            ['Digest', el('code', { class: 'digest' }, ver.digest)], ...history.filter(Boolean)])),
        el('div', { class: 'card' }, el('h2', null, 'Input schema'), el('pre', { class: 'json' }, pretty(ver.input_schema)))));
    if (ver.workspace) {
        add(m, workspaceCard(ver.workspace));
    }

    add(m, el('section', { class: 'card' }, el('h2', null, 'Source'),
        hasHidden(ver.source) ? notice('This source holds invisible or bidirectional characters, each shown as a marked code point (U+…): ' +
            'with them code can read otherwise than it runs. Read it with care.', 'error') : null,
        codeBlock(ver.source, 'Source of ' + t + ' v' + v)));
}

function actions(ctx, ver, base) {
    const box = el('section', { class: 'card decide', 'aria-label': 'Decision' });
    const msg = el('div', { role: 'status' });
    const me = ctx.me;
    const reload = () => ctx.navigate(location.pathname, true);
    const run = async (fn) => {
        try {
            await fn();
            reload();
        } catch (e) {
            add(clear(msg), notice(e instanceof ApiError ? e.message : String(e), 'error'));
        }
    };
    if (ver.state === 'draft' && me.has('author', ver.department)) {
        add(box, el('h2', null, 'Draft'), el('button', { type: 'button', class: 'primary', onclick: () => run(() => post(base + '/submit')) }, 'Submit for approval'));
    }
    const own = ver.author === me.name;
    if (ver.state === 'submitted' && (me.has('approver', ver.department) || own)) {
        // the author sees Approve too, disabled, with why: four eyes
        const approver = me.has('approver', ver.department);
        const comment = el('textarea', { rows: 2, id: 'decision-comment', maxlength: 4096 });
        const why = 'You cannot approve this version: you wrote it, and four eyes means another approver must approve it.';
        const approve = el('button', { type: 'button', class: 'approve', disabled: own, 'aria-describedby': own ? 'approve-why' : null, title: own ? why : null,
            onclick: () => run(() => post(base + '/approve', { comment: comment.value })) }, 'Approve');
        add(box, el('h2', null, 'Review'), approver ? field('Comment', comment) : null,
            el('div', { class: 'actions' }, approve,
                approver ? el('button', { type: 'button', class: 'deny', onclick: () => run(() => post(base + '/reject', { comment: comment.value })) }, 'Reject') : null),
            own ? el('p', { id: 'approve-why', class: 'why' }, why) : null);
    }
    if (ver.state === 'approved' && (me.has('approver', ver.department) || me.admin)) {
        const reason = el('input', { type: 'text', id: 'revoke-reason', maxlength: 4096 });
        add(box, el('h2', null, 'Revoke'), field('Reason', reason),
            el('button', { type: 'button', class: 'danger', onclick: async (ev) => {
                const ok = await confirmDialog('Revoke ' + ver.template + ' v' + ver.version + '?',
                    el('p', null, 'Running and waiting runs of this version will be cancelled, and it can never run again.'), 'Revoke',
                    { opener: ev.currentTarget });
                if (ok) {
                    await run(() => post(base + '/revoke', { reason: reason.value }));
                }
            } }, 'Revoke…'));
    }
    if (!box.firstChild) {
        return el('span');
    }
    add(box, msg);
    return box;
}
