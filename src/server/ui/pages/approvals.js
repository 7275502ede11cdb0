// pages/approvals.js - the inbox: pending approvals of the caller's departments, newest first.
// Each item shows what is asked (a sensitive call's function and its exact arguments, pretty
// printed, or a supervised run's start), has its own comment field and Approve / Deny buttons
// when the API would let this person decide it, and a checkbox for batch approval, which sends
// one POST per item so each decision is its own audit record. The list follows the poll of
// app.js: items decided elsewhere leave, new ones arrive, typed comments stay.

import { get, post } from '../api.js';
import { add, badge, clear, el, notice, path, pretty, when } from '../dom.js';

function item(ctx, a, onDecided) {
    const can = ctx.me.canDecideApproval(a);
    const comment = el('input', { type: 'text', id: 'comment-' + a.id, name: 'comment', maxlength: 4096, autocomplete: 'off' });
    const status = el('p', { class: 'item-status', role: 'status' });
    const decide = async (verb) => {
        for (const b of buttons.querySelectorAll('button')) {
            b.disabled = true;
        }
        try {
            const body = comment.value ? { comment: comment.value } : {};
            await post('/v1/approvals/' + encodeURIComponent(a.id) + '/' + verb, body);
            onDecided(a.id, verb === 'approve' ? 'approved' : 'denied');
        } catch (e) {
            add(clear(status), notice(e.message, 'error'));
            for (const b of buttons.querySelectorAll('button')) {
                b.disabled = false;
            }
        }
    };
    const buttons = el('div', { class: 'actions' });
    let select = null;
    if (can.ok) {
        select = el('input', { type: 'checkbox', class: 'select', id: 'select-' + a.id, 'aria-label': 'Select ' + (a.function || 'run start') + ' of ' + a.run });
        add(buttons, 
            el('div', { class: 'field inline' }, el('label', { for: comment.id }, 'Comment'), comment),
            el('button', { type: 'button', class: 'approve', onclick: () => decide('approve') }, 'Approve'),
            el('button', { type: 'button', class: 'deny', onclick: () => decide('deny') }, 'Deny'));
    } else {
        add(buttons, el('p', { class: 'muted why' }, can.why));
    }
    const title = a.kind === 'host_call'
        ? el('h3', null, 'Sensitive call ', el('code', { class: 'function' }, a.function))
        : el('h3', null, 'Start of a supervised run');
    const args = a.kind === 'host_call'
        ? el('div', { class: 'args-box' }, el('p', { class: 'label' }, 'Arguments'), el('pre', { class: 'args' }, pretty(a.args)))
        : null;
    const tpl = a.template
        ? el('a', { href: path('templates', a.template, 'versions', a.version) }, a.template + ' v' + a.version)
        : el('span', null, 'ad-hoc run');
    return el('li', { class: 'approval card', 'data-id': a.id },
        el('div', { class: 'approval-head' }, select, title),
        el('p', { class: 'meta' }, tpl, ' · run ', el('a', { href: path('runs', a.run) }, a.run), ' · started by ',
            el('strong', { class: 'requested-by' }, a.requested_by), ' · ', a.department, ' · ', el('time', { datetime: a.created }, when(a.created))),
        args, buttons, status);
}

export async function render(ctx) {
    const m = ctx.main;
    const list = el('ol', { class: 'approvals', 'aria-label': 'Pending approvals' });
    const empty = el('p', { class: 'muted empty', tabindex: -1 }, 'Nothing waits for a decision.');
    const live = el('p', { class: 'live', role: 'status', 'aria-live': 'polite' });
    const batchComment = el('input', { type: 'text', id: 'batch-comment', autocomplete: 'off', maxlength: 4096 });
    const batchButton = el('button', { type: 'button', class: 'approve', id: 'approve-selected' }, 'Approve selected');
    const shown = new Map();
    let syncBatch = () => {};

    const decided = (id, how) => {
        const node = shown.get(id);
        if (node) {
            // the focus was on this item's button (or fell to the page when the button was
            // disabled during the request): it moves to the next item (or the one before, or
            // the "nothing waits" line), never back to the page's start
            const had = node.contains(document.activeElement) || document.activeElement === document.body;
            const next = node.nextElementSibling || node.previousElementSibling;
            node.remove();
            shown.delete(id);
            if (had) {
                const target = next && next.querySelector('button:not([disabled])');
                empty.hidden = shown.size > 0;
                (target || empty).focus();
            }
        }
        live.textContent = 'Approval ' + id + ' ' + how + '.';
        empty.hidden = shown.size > 0;
        heading.textContent = String(shown.size);
        syncBatch();
    };
    const update = (pending) => {
        // newest first; the id breaks ties, so the order is the same at every poll (a moved
        // node would lose its focus)
        const key = (a) => a.created + ' ' + a.id;
        pending = pending.slice().sort((x, y) => (key(x) < key(y) ? 1 : key(x) > key(y) ? -1 : 0));
        const ids = new Set(pending.map((a) => a.id));
        for (const [id, node] of shown) {
            if (!ids.has(id)) {
                node.remove();
                shown.delete(id);
            }
        }
        let prev = null;
        for (const a of pending) {
            let node = shown.get(a.id);
            if (!node) {
                node = item(ctx, a, decided);
                shown.set(a.id, node);
            }
            if (prev ? prev.nextSibling !== node : list.firstChild !== node) {
                if (prev) {
                    prev.after(node);
                } else {
                    list.prepend(node);
                }
            }
            prev = node;
        }
        empty.hidden = shown.size > 0;
        syncBatch();
    };
    batchButton.addEventListener('click', async () => {
        const chosen = [...list.querySelectorAll('input.select:checked')].map((c) => c.closest('li').dataset.id);
        if (!chosen.length) {
            live.textContent = 'Select the approvals to approve first.';
            return;
        }
        batchButton.disabled = true;
        const failed = [];
        for (const id of chosen) {
            try {
                await post('/v1/approvals/' + encodeURIComponent(id) + '/approve', batchComment.value ? { comment: batchComment.value } : {});
                decided(id, 'approved');
            } catch (e) {
                failed.push(id + ': ' + e.message);
            }
        }
        batchButton.disabled = false;
        live.textContent = (chosen.length - failed.length) + ' approved' + (failed.length ? '; failed: ' + failed.join('; ') : '.');
    });

    add(m, el('h1', null, 'Approvals ', badge(String(0), 'count')));
    const heading = m.querySelector('h1 .badge');
    heading.id = 'inbox-count';
    add(m, el('p', { class: 'muted' }, 'Pending decisions of your departments, newest first. The list refreshes every few seconds.'));
    // in the page only while an item is selected, so an item's own Approve and Comment are
    // otherwise the only ones there
    const batch = el('div', { class: 'batch card' },
        el('div', { class: 'field inline' }, el('label', { for: 'batch-comment' }, 'Comment for the selected'), batchComment),
        batchButton);
    syncBatch = () => {
        const any = Boolean(list.querySelector('input.select:checked'));
        if (any && !batch.isConnected) {
            live.before(batch);
        } else if (!any && batch.isConnected) {
            batch.remove();
        }
    };
    list.addEventListener('change', syncBatch);
    add(m, live, empty, list);
    const refresh = (pending) => {
        update(pending);
        heading.textContent = String(shown.size);
    };
    refresh(await get('/v1/approvals?status=pending'));
    ctx.page.onPending = refresh;
}
