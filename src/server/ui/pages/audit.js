// pages/audit.js - the audit browser: records filtered by action, template and run (by the API)
// and by actor and time (here, over the pages fetched); each record's details; the chain's
// state from /v1/audit/verify; an export of the whole log as JSON Lines, fetched with the bearer
// header and handed to the browser as a file.

import { download, get, q } from '../api.js';
import { add, el, field, path, pretty, when } from '../dom.js';

const ACTIONS = ['principal.create', 'key.create', 'key.revoke', 'role.grant', 'role.revoke', 'department.create',
    'principal.update', 'principal.delete', 'department.rename', 'department.delete', 'connector.update', 'connector.delete',
    'department.policy', 'connector.create', 'mount.created', 'mount.deleted', 'webhook.create', 'webhook.delete', 'template.create', 'version.create', 'version.submit', 'version.approve',
    'version.reject', 'version.revoke', 'run.start', 'run.host_call', 'run.wait', 'run.end', 'run.cancel', 'run.retried', 'run.recover',
    'run.abandoned', 'run.file', 'snapshot.create', 'approval.request', 'approval.approve', 'approval.deny', 'approval.answer', 'approval.cancel', 'auth.denied',
    'auth.login', 'auth.logout',
    'audit.checkpoint'];
const WINDOW = 5000; // seqs read per step, from the newest down

function subjectLink(rec) {
    const s = rec.subject || '';
    if (s.startsWith('run_')) {
        return el('a', { href: path('runs', s) }, s);
    }
    if (/^(template|version)\./.test(rec.action) && s) {
        const v = rec.details && rec.details.version;
        return el('a', { href: v ? path('templates', s, 'versions', v) : path('templates', s) }, v ? s + ' v' + v : s);
    }
    return s;
}

export async function render(ctx) {
    const m = ctx.main;
    const p = new URLSearchParams(location.search);
    const action = el('select', { name: 'action' }, el('option', { value: '' }, 'any'),
        ACTIONS.map((a) => el('option', { value: a, selected: p.get('action') === a }, a)));
    const actor = el('input', { type: 'text', name: 'actor', value: p.get('actor') || '' });
    const template = el('input', { type: 'text', name: 'template', value: p.get('template') || '' });
    const run = el('input', { type: 'text', name: 'run', value: p.get('run') || '' });
    const since = el('input', { type: 'datetime-local', name: 'since', value: p.get('since') || '' });
    const form = el('form', { class: 'filters card', 'aria-label': 'Filter the audit log' },
        field('Action', action), field('Actor', actor), field('Template', template), field('Run', run), field('After', since),
        el('button', { type: 'submit', class: 'primary' }, 'Filter'));
    form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        ctx.navigate(q('/audit', { action: action.value, actor: actor.value.trim(), template: template.value.trim(), run: run.value.trim(), since: since.value }));
    });
    const verify = el('p', { id: 'chain', class: 'chain', role: 'status' }, 'Checking the chain…');
    const exportMsg = el('span', { role: 'status' });
    const exportButton = el('button', { type: 'button', id: 'export' }, 'Export JSON Lines');
    exportButton.addEventListener('click', async () => {
        exportButton.disabled = true;
        try {
            const n = await download('/v1/audit/export', 'airlock-audit.jsonl');
            exportMsg.textContent = 'Exported ' + n + ' bytes.';
        } catch (e) {
            exportMsg.textContent = e.message;
        }
        exportButton.disabled = false;
    });
    // an auditor of some departments reads their records, but the export is the whole log
    const exporting = ctx.me.canExportAudit ? [exportButton, exportMsg] : [];
    add(m, el('h1', null, 'Audit log'), el('div', { class: 'actions' }, verify, ...exporting), form);
    get('/v1/audit/verify').then((v) => {
        verify.classList.add(v.ok ? 'ok' : 'bad');
        verify.textContent = v.ok ? 'Chain verified up to seq ' + v.records : 'Chain broken at seq ' + v.first_bad_seq + ': ' + v.reason;
    }, (e) => {
        verify.textContent = 'Could not verify: ' + e.message;
    });

    // the newest first: records are read a window of seqs at a time, from the head down
    const head = (await get('/v1/audit/checkpoint').catch(() => ({ seq: 0 }))).seq || 0;
    const filter = { action: action.value, template: template.value.trim(), run: run.value.trim() };
    const keep = (r) => (!actor.value.trim() || r.actor === actor.value.trim()) &&
        (!since.value || Date.parse(r.time) > new Date(since.value).getTime());
    // the records with seq in (from, to], oldest first
    const range = async (from, to) => {
        let out = [];
        let after = from;
        for (;;) {
            const page = await get(q('/v1/audit', { ...filter, after, limit: 1000 }));
            out = out.concat(page.records.filter((r) => r.seq <= to));
            const last = page.records[page.records.length - 1];
            if (page.records.length < 1000 || !last || last.seq >= to) {
                return out;
            }
            after = page.next;
        }
    };
    const row = (r) => {
        const details = el('tr', { class: 'details', hidden: true }, el('td', { colspan: 7 }, el('pre', { class: 'json' }, pretty(r))));
        const b = el('button', { type: 'button', class: 'link', 'aria-expanded': 'false' }, 'Details');
        b.addEventListener('click', () => {
            details.hidden = !details.hidden;
            b.setAttribute('aria-expanded', String(!details.hidden));
        });
        return [el('tr', { class: 'record', 'data-seq': r.seq, 'data-action': r.action },
            el('td', { class: 'num' }, String(r.seq)), el('td', null, when(r.time)), el('td', null, el('code', null, r.action)),
            el('td', { class: 'actor' }, r.actor), el('td', null, subjectLink(r)), el('td', null, r.department || ''), el('td', null, b)), details];
    };
    const tbody = el('tbody');
    const count = el('p', { class: 'muted', role: 'status' });
    const older = el('button', { type: 'button', id: 'older' }, 'Older records');
    let low = head;
    let shown = 0;
    const load = async () => {
        older.disabled = true;
        const from = Math.max(0, low - WINDOW);
        const recs = (await range(from, low)).filter(keep).reverse();
        low = from;
        add(tbody, recs.map(row));
        shown += recs.length;
        count.textContent = shown ? shown + ' records from seq ' + (low + 1) + ' to ' + head + ', newest first.' : 'No records match from seq ' + (low + 1) + ' to ' + head + '.';
        older.hidden = low === 0;
        older.disabled = false;
    };
    older.addEventListener('click', load);
    add(m, count, el('table', { class: 'list audit' },
        el('thead', null, el('tr', null, ['Seq', 'Time', 'Action', 'Actor', 'Subject', 'Department', ''].map((h) => el('th', { scope: 'col' }, h)))),
        tbody), older);
    await load();
}
