// app.js - the approver's desk: sign-in, the page router and the navigation. Each page path
// is a link a person can paste (airlockd answers every one with this shell); the page module
// renders into <main> from location.pathname. Internal links are real <a href> elements whose
// clicks are taken over with history.pushState, so the browser's back and forward work.

import { ApiError, clearKey, get, getKey, post, setCsrf, setKey } from './api.js';
import { add, clear, el, notice } from './dom.js';
import { Me } from './roles.js';
import * as approvals from './pages/approvals.js';
import * as overview from './pages/overview.js';
import * as templates from './pages/templates.js';
import * as runs from './pages/runs.js';
import * as audit from './pages/audit.js';
import * as admin from './pages/admin.js';

const POLL_MS = 3000;

// options: what the sign-in offers (GET /auth/options), read once
const state = { me: null, pollTimer: null, pending: null, page: null, options: null };

// [pattern, page module, nav title]
const ROUTES = [
    [/^\/overview$/, overview.render],
    [/^\/approvals$/, approvals.render],
    [/^\/templates$/, templates.renderList],
    [/^\/templates\/([^/]+)$/, templates.renderTemplate],
    [/^\/templates\/([^/]+)\/versions\/([^/]+)$/, templates.renderVersion],
    [/^\/runs$/, runs.renderList],
    [/^\/runs\/([^/]+)$/, runs.renderRun],
    [/^\/audit$/, audit.render],
    [/^\/admin$/, admin.render],
];

export function navigate(url, replace) {
    if (replace) {
        history.replaceState(null, '', url);
    } else {
        history.pushState(null, '', url);
    }
    route();
}

function main() {
    return document.getElementById('main');
}

function navLinks(me) {
    const links = [['/overview', 'Overview']];
    if (me.canListApprovals) {
        links.push(['/approvals', 'Approvals']);
    }
    links.push(['/templates', 'Templates'], ['/runs', 'Runs']);
    if (me.reader) {
        links.push(['/audit', 'Audit']);
    }
    if (me.reader) {
        links.push(['/admin', 'Admin']);
    }
    return links;
}

function renderChrome() {
    const nav = clear(document.getElementById('nav'));
    const who = clear(document.getElementById('who'));
    if (!state.me || !state.me.uiRole) {
        if (state.me) {
            add(who, el('button', { type: 'button', class: 'link', onclick: signOut }, 'Sign out'));
        }
        return;
    }
    const here = location.pathname;
    const ul = el('ul');
    for (const [href, title] of navLinks(state.me)) {
        const current = here === href || (href !== '/' && here.startsWith(href + '/'));
        const a = el('a', { href, 'aria-current': current ? 'page' : null }, title);
        if (href === '/approvals') {
            // the number is part of the link's accessible name ("Approvals 3")
            add(a, ' ', el('span', { id: 'pending-badge', class: 'count', title: 'pending approvals', 'aria-live': 'polite' },
                state.pending === null ? '…' : String(state.pending)));
        }
        add(ul, el('li', null, a));
    }
    add(nav, ul);
    const roles = state.me.roles.map((r) => r.role + '@' + r.department).join(', ');
    add(who, el('span', { class: 'me', title: roles }, state.me.name), ' ',
        el('button', { type: 'button', class: 'link', onclick: signOut }, 'Sign out'));
}

async function signOut() {
    if (state.me && state.me.session) {
        // a session of single sign-on ends on the server, not just in this tab
        try {
            await post('/auth/logout');
        } catch (e) {
            /* ended already (expired, or the principal disabled): nothing left to end */
        }
        setCsrf(null);
    }
    clearKey();
    state.me = null;
    stopPolling();
    navigate('/');
}

// No key in this tab: a session of single sign-on, when the browser holds one (its cookie is
// HttpOnly: only /v1/me can tell). true once state.me is its principal.
async function resumeSession() {
    try {
        const doc = await get('/v1/me');
        if (!doc || !doc.csrf_token) {
            return false;
        }
        setCsrf(doc.csrf_token);
        state.me = new Me(doc);
    } catch (e) {
        return false;
    }
    if (state.me.uiRole) {
        startPolling();
    }
    return true;
}

async function signInOptions() {
    if (!state.options) {
        try {
            state.options = await get('/auth/options');
        } catch (e) {
            state.options = { oidc: false, key_sign_in: true };
        }
    }
    return state.options;
}

async function pollPending() {
    if (!state.me || !state.me.canListApprovals) {
        return;
    }
    try {
        const list = await get('/v1/approvals?status=pending');
        state.pending = list.length;
        const b = document.getElementById('pending-badge');
        if (b) {
            b.textContent = String(list.length);
        }
        if (state.page && state.page.onPending) {
            state.page.onPending(list);
        }
    } catch (e) {
        if (e instanceof ApiError && e.status === 401) {
            signOut();
        } else if (e instanceof ApiError && e.status === 403) {
            route(); /* a role was taken away: the page is drawn again with what is left */
        }
    }
}

function startPolling() {
    stopPolling();
    pollPending();
    state.pollTimer = setInterval(pollPending, POLL_MS);
}

function stopPolling() {
    if (state.pollTimer) {
        clearInterval(state.pollTimer);
        state.pollTimer = null;
    }
}

async function renderSignIn(message) {
    const options = await signInOptions();
    const m = clear(main());
    if (options.oidc) {
        add(m, el('section', { class: 'signin', 'aria-labelledby': 'sso-title' },
            el('h1', { id: 'sso-title' }, 'Sign in'),
            el('p', null, 'Sign in with your organisation\'s identity provider.'),
            // a plain link: the browser goes to airlockd's /auth/login, then to the provider
            el('a', { href: '/auth/login', class: 'button primary', id: 'sso-login' }, 'Sign in with single sign-on')));
    }
    if (!options.key_sign_in) {
        if (message) {
            add(m, notice(message, 'error'));
        }
        return;
    }
    const input = el('input', { id: 'api-key', name: 'api-key', type: 'password', autocomplete: 'off', spellcheck: 'false', required: true });
    const form = el('form', { class: 'signin', 'aria-labelledby': 'signin-title' },
        el('h1', { id: 'signin-title' }, 'Sign in'),
        el('p', null, 'Sign in with your airlock API key. It is kept in this tab only (sessionStorage) and sent as a bearer header.'),
        el('div', { class: 'field' }, el('label', { for: 'api-key' }, 'API key'), input),
        message ? notice(message, 'error') : null,
        el('button', { type: 'submit', class: 'primary' }, 'Sign in'));
    form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        const k = input.value.trim();
        if (!k) {
            return;
        }
        setKey(k);
        input.value = '';
        await signIn();
    });
    add(m, form);
    input.focus();
}

function renderNoRole() {
    const me = state.me;
    const m = clear(main());
    add(m, el('section', { class: 'norole' },
        el('h1', null, me.session ? 'You have no role on the desk' : 'This key has no role on the desk'),
        el('p', null, 'You are signed in as ', el('strong', null, me.name),
            me.roles.length ? ', with the roles ' + me.roles.map((r) => r.role + ' in ' + r.department).join(', ') + '.' : ', with no roles at all.'),
        el('p', null, 'The approver\'s desk is for admins, authors, approvers and auditors. Agents use the API. Ask an admin to grant you a role, or sign in with another key.'),
        el('button', { type: 'button', class: 'primary', onclick: signOut }, me.session ? 'Sign out' : 'Sign in with another key')));
}

async function signIn() {
    try {
        state.me = new Me(await get('/v1/me'));
    } catch (e) {
        clearKey();
        state.me = null;
        renderChrome();
        renderSignIn(e instanceof ApiError && e.status === 401 ? 'That key was refused: it is unknown, revoked or malformed.' : e.message);
        return;
    }
    if (state.me.uiRole) {
        startPolling();
    }
    route();
}

async function route() {
    const p = location.pathname;
    state.page = null;
    if (!getKey() && !(state.me && state.me.session) && !(await resumeSession())) {
        state.me = null;
        renderChrome();
        await renderSignIn();
        return;
    }
    if (!state.me) {
        await signIn();
        return;
    }
    // roles may change while the desk is open: read them again at every page, so nothing is
    // offered that the API would refuse now
    try {
        state.me = new Me(await get('/v1/me'));
    } catch (e) {
        if (e instanceof ApiError && e.status === 401) {
            signOut();
            return;
        }
    }
    renderChrome();
    if (!state.me.uiRole) {
        renderNoRole();
        return;
    }
    if (p === '/') {
        navigate(state.me.canListApprovals && state.me.hasAnywhere('approver') ? '/approvals' : '/overview', true);
        return;
    }
    // a fresh container per visit: a page still loading when the person moves on writes into
    // its own detached container, never into the next page
    const m = el('div', { class: 'page' });
    add(clear(main()), m);
    for (const [re, fn] of ROUTES) {
        const hit = re.exec(p);
        if (hit) {
            const args = hit.slice(1).map((s) => decodeURIComponent(s));
            const ctx = { me: state.me, main: m, navigate, args, page: {} };
            state.page = ctx.page;
            try {
                await fn(ctx, ...args);
            } catch (e) {
                add(m, notice(e instanceof ApiError ? e.message + ' (' + e.code + ')' : String(e), 'error'));
            }
            if (state.page === ctx.page) {
                main().focus({ preventScroll: true });
            }
            return;
        }
    }
    add(m, el('h1', null, 'Not found'), el('p', null, 'No page at this address. ', el('a', { href: '/' }, 'Back to the start')));
}

document.addEventListener('click', (ev) => {
    const a = ev.target.closest && ev.target.closest('a[href]');
    if (!a || a.target || a.hasAttribute('download') || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) {
        return;
    }
    const url = new URL(a.href, location.href);
    if (url.origin !== location.origin || url.pathname.startsWith('/v1/') || url.pathname.startsWith('/ui/') ||
        url.pathname.startsWith('/auth/')) {
        return;
    }
    ev.preventDefault();
    if (url.hash && url.pathname === location.pathname) {
        const t = document.getElementById(url.hash.slice(1));
        if (t) {
            t.focus();
        }
        return;
    }
    navigate(url.pathname + url.search);
});

window.addEventListener('popstate', route);
route();
