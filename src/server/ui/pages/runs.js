// pages/runs.js - the runs list (filters: template, status, principal, time: the API's) and the run
// inspector: status, input, value or error with its stack, console, the host calls in order
// (arguments, outcome, duration as timeline bars, from the audit log's run.host_call records,
// for those who may read it), the approvals and who decided them - a pending one with what
// informs it and, for whoever may decide it, Approve and Deny - stats. Everything the guest
// wrote is shown as text.

import { get, post, q } from '../api.js';
import { add, badge, clear, confirmDialog, el, field, notice, path, pretty, svg, when } from '../dom.js';
import { informs } from './approvals.js';

const STATUSES = ['', 'queued', 'running', 'awaiting_approval', 'completed', 'failed', 'cancelled', 'denied'];
const SHOWN = 1000;
const PAGES_MAX = 50;
const ENDED = new Set(['completed', 'failed', 'cancelled', 'denied']);

export function statusBadge(s) {
    return badge(s, 'status-' + s);
}

export async function renderList(ctx) {
    const m = ctx.main;
    const params = new URLSearchParams(location.search);
    const tpl = el('input', { type: 'text', name: 'template', value: params.get('template') || '' });
    const status = el('select', { name: 'status' }, STATUSES.map((s) => el('option', { value: s, selected: s === (params.get('status') || '') }, s || 'any')));
    const principal = el('input', { type: 'text', name: 'principal', value: params.get('principal') || '' });
    const since = el('input', { type: 'datetime-local', name: 'since', value: params.get('since') || '' });
    const form = el('form', { class: 'filters card', 'aria-label': 'Filter runs' },
        field('Template', tpl), field('Status', status), field('Principal', principal), field('Started after', since),
        el('button', { type: 'submit', class: 'primary' }, 'Filter'));
    form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        ctx.navigate(q('/runs', { template: tpl.value.trim(), status: status.value, principal: principal.value.trim(), since: since.value }));
    });
    add(m, el('h1', null, 'Runs'), form);
    const after = since.value ? new Date(since.value).toISOString().replace(/\.\d+Z$/, 'Z') : '';
    // the API lists oldest first: page on to the newest, keeping the last SHOWN
    const filter = { template: tpl.value.trim(), status: status.value, principal: principal.value.trim(), limit: 1000 };
    let runs = [];
    let cursor = after;
    for (let i = 0; i < PAGES_MAX; i++) {
        const page = await get(q('/v1/runs', { ...filter, after: cursor }));
        runs = runs.concat(page).slice(-SHOWN);
        if (page.length < 1000) {
            break;
        }
        cursor = page[page.length - 1].id;
    }
    runs.reverse();
    if (!runs.length) {
        add(m, el('p', { class: 'muted' }, 'No runs match.'));
        return;
    }
    add(m, el('table', { class: 'list runs' },
        el('thead', null, el('tr', null, ['Run', 'Status', 'Template', 'Principal', 'Started', 'Wall ms'].map((h) => el('th', { scope: 'col' }, h)))),
        el('tbody', null, runs.map((r) => el('tr', null,
            el('td', null, el('a', { href: path('runs', r.id) }, r.id)),
            el('td', null, statusBadge(r.status)),
            el('td', null, r.template ? el('a', { href: path('templates', r.template, 'versions', r.version) }, r.template + ' v' + r.version) : 'ad-hoc'),
            el('td', null, r.principal), el('td', null, when(r.created)),
            el('td', { class: 'num' }, r.stats && r.stats.wall_ms !== undefined ? String(r.stats.wall_ms) : ''))))));
}

// One bar per host call, in call order, its length the call's duration against the longest;
// the label says the function, outcome and milliseconds (the run's wait for a person is not a
// call's time, so bars are not placed on the run's clock).
function timeline(calls) {
    const w = 720;
    const labelW = 260;
    const rowH = 22;
    const durs = calls.map((c) => Number(c.details.duration_ms) || 0);
    const max = Math.max(0.001, ...durs);
    const g = svg('svg', { class: 'timeline', viewBox: '0 0 ' + w + ' ' + (calls.length * rowH + 6), role: 'img', 'aria-label': 'Host call durations, in call order' });
    calls.forEach((c, i) => {
        const y = i * rowH + 4;
        const bw = Math.max(2, (durs[i] / max) * (w - labelW - 10));
        add(g, svg('text', { x: 4, y: y + 13, class: 'tl-label' }, '#' + c.details.call + ' ' + c.details.function + ' · ' + c.details.outcome + ' · ' + durs[i] + ' ms'),
            svg('rect', { x: labelW, y, width: bw.toFixed(1), height: rowH - 8, class: 'bar outcome-' + c.details.outcome },
                svg('title', null, c.details.function + ': ' + durs[i] + ' ms')));
    });
    return g;
}

// Approve and Deny (with a comment) for a pending approval the viewer may decide; the page
// shows the run again once it is decided.
function decideHere(ctx, a) {
    const can = ctx.me.canDecideApproval(a);
    if (!can.ok) {
        return el('span', { class: 'muted why' }, can.why);
    }
    const comment = el('input', { type: 'text', id: 'comment-' + a.id, name: 'comment', maxlength: 4096, autocomplete: 'off', 'aria-label': 'Comment on ' + a.id });
    const msg = el('p', { class: 'item-status', role: 'status' });
    const buttons = [];
    const decide = async (verb) => {
        for (const b of buttons) {
            b.disabled = true;
        }
        try {
            await post('/v1/approvals/' + encodeURIComponent(a.id) + '/' + verb, comment.value ? { comment: comment.value } : {});
            ctx.navigate(location.pathname, true);
        } catch (e) {
            add(clear(msg), notice(e.message, 'error'));
            for (const b of buttons) {
                b.disabled = false;
            }
        }
    };
    buttons.push(el('button', { type: 'button', class: 'approve', onclick: () => decide('approve') }, 'Approve'),
        el('button', { type: 'button', class: 'deny', onclick: () => decide('deny') }, 'Deny'));
    return el('div', { class: 'actions decide-here' }, comment, buttons, msg);
}

export async function renderRun(ctx, id) {
    const m = ctx.main;
    const me = ctx.me;
    const r = await get('/v1/runs/' + encodeURIComponent(id));
    add(m, el('h1', null, 'Run ', el('span', { class: 'name' }, r.id), ' ', statusBadge(r.status)),
        el('p', { class: 'meta' }, r.template ? el('a', { href: path('templates', r.template, 'versions', r.version) }, r.template + ' v' + r.version) : 'ad-hoc run',
            ' · department ', r.department, ' · started by ', el('strong', null, r.principal), ' · ', when(r.created), ' · updated ', when(r.updated)));
    const msg = el('div');
    if (!ENDED.has(r.status) && (r.principal === me.name || me.has('approver', r.department) || me.admin)) {
        add(m, el('div', { class: 'actions' }, el('button', { type: 'button', class: 'danger', onclick: async (ev) => {
            if (await confirmDialog('Cancel run ' + r.id + '?', el('p', null, 'The run stops and its pending approvals are cancelled.'), 'Cancel run',
                { opener: ev.currentTarget, cancelLabel: 'Keep it running' })) {
                try {
                    await post('/v1/runs/' + encodeURIComponent(r.id) + '/cancel');
                    ctx.navigate(location.pathname, true);
                } catch (e) {
                    add(clear(msg), notice(e.message, 'error'));
                }
            }
        } }, 'Cancel run…'), msg));
    }
    add(m, el('section', { class: 'grid2' },
        el('div', { class: 'card' }, el('h2', null, 'Input'), el('pre', { class: 'json input' }, pretty(r.input))),
        r.error
            ? el('div', { class: 'card error-box' }, el('h2', null, 'Error'),
                el('p', null, el('code', null, r.error.code), ' ', el('strong', { class: 'error-name' }, r.error.name || '')),
                el('pre', { class: 'error-message' }, r.error.message || ''),
                r.error.stack ? [el('h3', null, 'Stack'), el('pre', { class: 'stack' }, r.error.stack)] : null)
            : el('div', { class: 'card' }, el('h2', null, 'Value'), el('pre', { class: 'json value' }, r.value === undefined ? '' : pretty(r.value)))));
    add(m, el('section', { class: 'card' }, el('h2', null, 'Console'),
        r.console && r.console.length
            ? el('ol', { class: 'console' }, r.console.map((c) => el('li', { class: 'level-' + c.level }, el('span', { class: 'level' }, c.level), ' ', el('span', { class: 'text' }, c.text))))
            : el('p', { class: 'muted' }, 'Nothing was written to the console.')));

    const calls = el('section', { class: 'card', id: 'host-calls' }, el('h2', null, 'Host calls'));
    add(m, calls);
    // readers take every call from the audit (a resumed run's run object lists the calls of
    // its last leg only); everyone else who may read the run, from the run itself
    const list = me.reader
        ? (await get(q('/v1/audit', { run: r.id, action: 'run.host_call', limit: 1000 }))).records
        : Array.isArray(r.host_calls) ? r.host_calls.map((c) => ({ details: c })) : null;
    if (list) {
        if (!list.length) {
            add(calls, el('p', { class: 'muted' }, 'No host calls.'));
        } else {
            add(calls, timeline(list), el('table', { class: 'list calls' },
                el('thead', null, el('tr', null, ['#', 'Function', 'Arguments', 'Outcome', 'Duration'].map((h) => el('th', { scope: 'col' }, h)))),
                el('tbody', null, list.map((c) => el('tr', null,
                    el('td', { class: 'num' }, String(c.details.call)),
                    el('td', null, el('code', null, c.details.function)),
                    el('td', null, el('pre', { class: 'args' }, pretty(c.details.args))),
                    el('td', null, badge(c.details.outcome, 'outcome-' + c.details.outcome), c.details.message ? [' ', el('span', { class: 'call-message' }, c.details.message)] : ''),
                    el('td', { class: 'num' }, c.details.duration_ms + ' ms'))))));
        }
    } else {
        add(calls, el('p', { class: 'muted' }, r.stats && r.stats.host_calls !== undefined ? r.stats.host_calls + ' host calls. Their arguments and outcomes are in the audit log, which auditors and admins read.' : 'The host calls are in the audit log, which auditors and admins read.'));
    }

    const apr = el('section', { class: 'card', id: 'approvals' }, el('h2', null, 'Approvals'));
    add(m, apr);
    if (!r.approvals.length) {
        add(apr, el('p', { class: 'muted' }, 'None.'));
    } else if (me.canListApprovals) {
        const mine = (await get('/v1/approvals?run=' + encodeURIComponent(r.id)).catch(() => [])).reverse();
        add(apr, el('table', { class: 'list' },
            el('thead', null, el('tr', null, ['Approval', 'Asked', 'Status', 'Decided by', 'Comment'].map((h) => el('th', { scope: 'col' }, h)))),
            el('tbody', null, mine.map((a) => el('tr', { 'data-id': a.id },
                el('td', null, el('code', null, a.id)),
                el('td', null, a.kind === 'host_call' ? [el('code', null, a.function), el('pre', { class: 'args' }, pretty(a.args))] : 'start of the run',
                    a.status === 'pending' && a.kind === 'host_call' ? informs({ ...a, input: undefined, console: [] }) : null),
                el('td', null, badge(a.status, 'status-' + a.status)),
                el('td', null, a.decided_by || (a.status === 'pending' ? decideHere(ctx, a) : '')),
                el('td', null, a.comment || ''))))));
    } else {
        add(apr, el('ul', null, r.approvals.map((a) => el('li', null, el('code', null, a)))));
    }
    const st = r.stats || {};
    add(m, el('section', { class: 'card' }, el('h2', null, 'Stats'),
        Object.keys(st).length ? el('table', { class: 'kv' }, el('tbody', null, Object.entries(st).map(([k, v]) => el('tr', null, el('th', { scope: 'row' }, k), el('td', null, String(v))))))
            : el('p', { class: 'muted' }, 'The run has not executed yet.')));
}
