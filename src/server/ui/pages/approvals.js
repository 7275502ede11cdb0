// pages/approvals.js - the inbox: pending approvals of the caller's departments, newest first.
// Each item shows what is asked (a sensitive call's function and its exact arguments, pretty
// printed, a supervised run's start, or a call in doubt: a call a dead execution sent whose
// answer was never recorded, with its connector, when it was sent and its idempotency key), what
// informs the decision (the arguments by name, the template's line that made the call, the run's
// input and console so far, how long it has waited, the version's digest), has
// its own comment field and Approve / Deny buttons when the API would let this person decide it
// (a call in doubt also an Answer button, with a JSON box for the result it had at the
// connector), and a checkbox for batch approval, which sends one POST per item so each decision
// is its own audit record. A call in doubt is never batch-approved: each is checked on its own.
//
// The list holds still under the approver's pointer: the poll of app.js never inserts, removes
// or reorders a shown item, or an approval arriving above the one aimed at would take its place
// under the click. New approvals wait behind an "N new approvals" bar (in space kept for it);
// items decided here or elsewhere are marked where they are; opening the bar (or the page) brings
// in the new ones and drops the decided ones. Typed comments stay. Every decision control acts on
// its own item's id, and after any change of the page's layout all of them are disabled for
// HOLD_MS, so a click aimed before a change never lands on what the change put there.

import { get, post } from '../api.js';
import { add, badge, clear, el, notice, path, pretty, when } from '../dom.js';

const HOLD_MS = 500;

// "4 min", "2 h 5 min", "3 d 1 h": how long an approval has waited
export function duration(ms) {
    const min = Math.floor(ms / 60000);
    if (min < 1) {
        return Math.max(0, Math.floor(ms / 1000)) + ' s';
    }
    if (min < 60) {
        return min + ' min';
    }
    const h = Math.floor(min / 60);
    return h < 24 ? h + ' h ' + (min % 60) + ' min' : Math.floor(h / 24) + ' d ' + (h % 24) + ' h';
}

// What informs the decision, as the API gives it: the arguments by name, the line of the
// template that made the call (or that it is not known), the run's input and its console so far.
// Everything the guest wrote is shown as text.
export function informs(a) {
    const parts = [];
    if (a.params && a.params.length) {
        parts.push(el('table', { class: 'kv params', 'aria-label': 'Arguments by name' }, el('tbody', null,
            a.params.map((p) => el('tr', null, el('th', { scope: 'row', class: 'param-name' }, p.name), el('td', null, el('pre', { class: 'param-value' }, pretty(p.value))))))));
    }
    if (a.source_line) {
        parts.push(el('p', { class: 'source-line' }, 'Called at line ', el('strong', { class: 'line-number' }, String(a.source_line.line)), ': ',
            el('code', { class: 'line-text' }, a.source_line.text)));
    } else if (a.kind === 'host_call') {
        parts.push(el('p', { class: 'source-line muted' }, 'The line of the call is not known: it was not made by a plain call in the template.'));
    }
    if (a.input !== undefined) {
        parts.push(el('details', { class: 'run-input' }, el('summary', null, 'Run input'), el('pre', { class: 'json' }, pretty(a.input))));
    }
    if (a.console && a.console.length) {
        parts.push(el('details', { class: 'run-console' }, el('summary', null, 'Console so far (' + a.console.length + ')'),
            el('ol', { class: 'console' }, a.console.map((c) => el('li', { class: 'level-' + c.level }, el('span', { class: 'level' }, c.level), ' ', el('span', { class: 'text' }, c.text))))));
    }
    return el('div', { class: 'informs' }, parts);
}

// One item of the inbox. hold: the page's guard ({ on() }, start()); onDecided(id, how).
function item(ctx, a, hold, onDecided) {
    const can = ctx.me.canDecideApproval(a);
    const comment = el('input', { type: 'text', id: 'comment-' + a.id, name: 'comment', maxlength: 4096, autocomplete: 'off' });
    const status = el('p', { class: 'item-status', role: 'status' });
    const controls = [];
    let select = null;
    let busy = false;
    const it = {
        id: a.id,
        open: true,
        // held: the layout just changed; a control is usable only when none of these holds
        sync(held) {
            for (const c of controls) {
                c.disabled = held || busy || !it.open;
            }
        },
        // decided here or elsewhere: marked in place, same size, nothing left to press
        close(text) {
            it.open = false;
            it.node.classList.add('decided');
            if (select) {
                select.checked = false;
            }
            comment.disabled = true;
            it.sync(false);
            status.textContent = text;
        },
    };
    const doubt = a.kind === 'in_doubt';
    const result = doubt ? el('textarea', { id: 'result-' + a.id, name: 'result', rows: 3, spellcheck: 'false', class: 'result' }) : null;
    const outcome = { approve: 'approved', deny: 'denied', answer: 'answered' };
    const decide = async (verb) => {
        // the button is disabled while held; this catches a click that came first anyway
        if (hold.on() || busy || !it.open) {
            return;
        }
        const body = comment.value ? { comment: comment.value } : {};
        if (verb === 'answer') {
            try {
                body.result = JSON.parse(result.value);
            } catch (e) {
                add(clear(status), notice('The result is not JSON: ' + e.message, 'error'));
                hold.start();
                return;
            }
        }
        busy = true;
        it.sync(false);
        try {
            await post('/v1/approvals/' + encodeURIComponent(a.id) + '/' + verb, body);
            busy = false;
            onDecided(a.id, outcome[verb]);
        } catch (e) {
            busy = false;
            add(clear(status), notice(e.message, 'error'));
            hold.start(); /* the message may take more room than the line kept for it */
        }
    };
    const buttons = el('div', { class: 'actions' });
    if (can.ok) {
        const approve = el('button', { type: 'button', class: 'approve', onclick: () => decide('approve') }, doubt ? 'Approve: send again' : 'Approve');
        const deny = el('button', { type: 'button', class: 'deny', onclick: () => decide('deny') }, doubt ? 'Deny: it fails' : 'Deny');
        if (!doubt) {
            select = el('input', { type: 'checkbox', class: 'select', id: 'select-' + a.id, 'aria-label': 'Select ' + (a.function || 'run start') + ' of ' + a.run });
            controls.push(select);
        }
        controls.push(approve, deny);
        add(buttons,
            el('div', { class: 'field inline' }, el('label', { for: comment.id }, 'Comment'), comment),
            approve, deny);
        if (doubt) {
            const answer = el('button', { type: 'button', class: 'answer', onclick: () => decide('answer') }, 'Answer');
            controls.push(result, answer);
            add(buttons,
                el('div', { class: 'field' }, el('label', { for: result.id }, 'Result it had (JSON): the call returns it, nothing is sent'), result),
                answer);
        }
    } else {
        add(buttons, el('p', { class: 'muted why' }, can.why));
    }
    const title = a.kind === 'host_call'
        ? el('h3', null, 'Sensitive call ', el('code', { class: 'function' }, a.function))
        : doubt
            ? el('h3', null, 'Call in doubt ', el('code', { class: 'function' }, a.function))
            : el('h3', null, 'Start of a supervised run');
    const args = a.kind === 'host_call' || doubt
        ? el('div', { class: 'args-box' }, el('p', { class: 'label' }, 'Arguments'), el('pre', { class: 'args' }, pretty(a.args)))
        : null;
    // where the call went and when, and the key to look it up by at the connector
    const sent = doubt
        ? el('p', { class: 'doubt' }, 'Sent to ', el('strong', { class: 'connector' }, a.connector), ' ',
            el('time', { class: 'sent', datetime: a.sent }, when(a.sent)), ' (call ', String(a.call), '), its answer never recorded; idempotency key ',
            el('code', { class: 'key' }, a.idempotency_key))
        : null;
    const tpl = a.template
        ? el('a', { href: path('templates', a.template, 'versions', a.version) }, a.template + ' v' + a.version)
        : el('span', null, 'ad-hoc run');
    it.node = el('li', { class: 'approval card', 'data-id': a.id, tabindex: -1 },
        el('div', { class: 'approval-head' }, select, title),
        el('p', { class: 'meta' }, tpl, ' · run ', el('a', { href: path('runs', a.run) }, a.run), ' · started by ',
            el('strong', { class: 'requested-by' }, a.requested_by), ' · ', a.department, ' · ', el('time', { datetime: a.created }, when(a.created)),
            a.waiting_ms !== undefined ? [' · waiting ', el('span', { class: 'waiting' }, duration(a.waiting_ms))] : null,
            a.digest ? [' · ', el('code', { class: 'digest', title: a.digest }, a.digest.slice(0, 19) + '…')] : null),
        sent, args, informs(a), buttons, status);
    return it;
}

export async function render(ctx) {
    const m = ctx.main;
    const list = el('ol', { class: 'approvals', 'aria-label': 'Pending approvals' });
    const empty = el('p', { class: 'muted empty', tabindex: -1 }, 'Nothing waits for a decision.');
    const live = el('p', { class: 'live', role: 'status', 'aria-live': 'polite' });
    const bar = el('button', { type: 'button', class: 'news-bar', id: 'new-approvals', hidden: true });
    const news = el('div', { class: 'news', 'aria-live': 'polite' }, bar);
    const batchComment = el('input', { type: 'text', id: 'batch-comment', autocomplete: 'off', maxlength: 4096 });
    const batchButton = el('button', { type: 'button', class: 'approve', id: 'approve-selected' }, 'Approve selected');
    const shown = new Map(); /* id -> item, in the list's order */
    let latest = []; /* the last poll's pending approvals, newest first */
    let batching = false;
    let syncBatch = () => {};

    let heldUntil = 0; /* ms, performance.now() */
    let holdTimer = null;
    const hold = {
        on: () => performance.now() < heldUntil,
        // the layout changed: every control waits HOLD_MS before it acts again
        start() {
            heldUntil = performance.now() + HOLD_MS;
            clearTimeout(holdTimer);
            holdTimer = setTimeout(() => sync(false), HOLD_MS);
            sync(true);
        },
    };
    const sync = (held) => {
        for (const it of shown.values()) {
            it.sync(held);
        }
        batchButton.disabled = held || batching;
    };
    const counts = () => {
        heading.textContent = String(latest.length); /* those behind the bar too */
        empty.hidden = latest.length > 0;
        const fresh = latest.filter((a) => !shown.has(a.id)).length;
        bar.textContent = fresh === 1 ? '1 new approval' : fresh + ' new approvals';
        bar.hidden = fresh === 0;
    };
    // the list becomes latest: decided items leave, new ones come in, in order
    const settle = () => {
        for (const [id, it] of shown) {
            if (!it.open) {
                it.node.remove();
                shown.delete(id);
            }
        }
        let prev = null;
        for (const a of latest) {
            let it = shown.get(a.id);
            if (!it) {
                it = item(ctx, a, hold, decided);
                shown.set(a.id, it);
            }
            if (prev ? prev.nextSibling !== it.node : list.firstChild !== it.node) {
                if (prev) {
                    prev.after(it.node);
                } else {
                    list.prepend(it.node);
                }
            }
            prev = it.node;
        }
        hold.start();
        counts();
        syncBatch();
    };
    const decided = (id, how) => {
        latest = latest.filter((a) => a.id !== id); /* until the next poll says so too */
        const it = shown.get(id);
        if (it) {
            // the focus was on this item's button (or fell to the page when the button was
            // disabled): it stays on the item, never on another item's button (a second Enter
            // would decide that one) and never back at the page's start
            const had = it.node.contains(document.activeElement) || document.activeElement === document.body;
            it.close(how === 'approved' ? 'Approved by you.' : how === 'answered' ? 'Answered by you.' : 'Denied by you.');
            if (had) {
                it.node.focus();
            }
        }
        live.textContent = 'Approval ' + id + ' ' + how + '.';
        counts();
        syncBatch();
    };
    const update = (pending) => {
        // newest first; the id breaks ties, so the order is the same at every poll
        const key = (a) => a.created + ' ' + a.id;
        latest = pending.slice().sort((x, y) => (key(x) < key(y) ? 1 : key(x) > key(y) ? -1 : 0));
        const ids = new Set(latest.map((a) => a.id));
        for (const it of shown.values()) {
            if (it.open && !ids.has(it.id)) {
                it.close('No longer pending: decided elsewhere, cancelled or expired.');
            }
        }
        if (list.childElementCount === 0 && latest.length) {
            settle(); /* an empty list has nothing to move */
        } else {
            counts();
        }
    };
    bar.addEventListener('click', () => {
        settle();
        const first = list.firstElementChild;
        (first || empty).focus();
    });
    batchButton.addEventListener('click', async () => {
        if (hold.on()) {
            return;
        }
        const chosen = [...list.querySelectorAll('input.select:checked')].map((c) => c.closest('li').dataset.id);
        if (!chosen.length) {
            live.textContent = 'Select the approvals to approve first.';
            return;
        }
        batching = true;
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
        batching = false;
        batchButton.disabled = hold.on();
        live.textContent = (chosen.length - failed.length) + ' approved' + (failed.length ? '; failed: ' + failed.join('; ') : '.');
    });

    add(m, el('h1', null, 'Approvals ', badge(String(0), 'count')));
    const heading = m.querySelector('h1 .badge');
    heading.id = 'inbox-count';
    add(m, el('p', { class: 'muted' }, 'Pending decisions of your departments, newest first. The list is checked every few seconds; new approvals wait behind a bar until you open it, so nothing moves under your pointer.'));
    // in the page only while an item is selected, so an item's own Approve and Comment are
    // otherwise the only ones there
    const batch = el('div', { class: 'batch card' },
        el('div', { class: 'field inline' }, el('label', { for: 'batch-comment' }, 'Comment for the selected'), batchComment),
        batchButton);
    syncBatch = () => {
        const any = Boolean(list.querySelector('input.select:checked'));
        if (any !== batch.isConnected) {
            if (any) {
                live.before(batch);
            } else {
                batch.remove();
            }
            hold.start(); /* the list moved down or up */
        }
    };
    list.addEventListener('change', syncBatch);
    // the "nothing waits" line comes after the list, so showing it moves no item
    add(m, live, news, list, empty);
    update(await get('/v1/approvals?status=pending'));
    ctx.page.onPending = update;
}
