// api.js - the client of airlockd's /v1/ API. The key lives in sessionStorage only (gone when
// the tab closes; never localStorage, never a URL) and goes out as a bearer header, so no
// cookie is ever sent and a cross-site page cannot make a request in the user's name.
// Signed in with single sign-on instead (docs/sso.md), there is no key: the session cookie
// (HttpOnly, SameSite=Strict) goes with same-origin requests, and every change carries the
// session's CSRF token (from /v1/me) in X-CSRF-Token.

const KEY = 'airlock.key';

export function getKey() {
    return sessionStorage.getItem(KEY);
}

export function setKey(k) {
    sessionStorage.setItem(KEY, k);
}

export function clearKey() {
    sessionStorage.removeItem(KEY);
}

let csrfToken = null; // a session's, from /v1/me; null: signed in with a key, or not at all

export function setCsrf(t) {
    csrfToken = t || null;
}

// the headers of a request: the key's bearer header, or a session's CSRF token on a change
function authHeaders(method) {
    const k = getKey();
    if (k) {
        return { Authorization: 'Bearer ' + k };
    }
    return csrfToken && method !== 'GET' && method !== 'HEAD' ? { 'X-CSRF-Token': csrfToken } : {};
}

export class ApiError extends Error {
    constructor(status, code, message) {
        super(message);
        this.status = status;
        this.code = code;
    }
}

export async function api(method, url, body) {
    const headers = authHeaders(method);
    if (body !== undefined) {
        headers['Content-Type'] = 'application/json';
    }
    let r;
    try {
        r = await fetch(url, {
            method, headers, body: body === undefined ? undefined : JSON.stringify(body),
            cache: 'no-store', credentials: getKey() ? 'omit' : 'same-origin', redirect: 'error',
        });
    } catch (e) {
        throw new ApiError(0, 'NETWORK', 'airlockd did not answer: ' + e.message);
    }
    const text = await r.text();
    let doc = null;
    try {
        doc = text ? JSON.parse(text) : null;
    } catch (e) {
        doc = null;
    }
    if (!r.ok) {
        const err = (doc && doc.error) || {};
        throw new ApiError(r.status, err.code || 'HTTP_' + r.status, err.message || text);
    }
    return doc;
}

export const get = (url) => api('GET', url);
export const post = (url, body) => api('POST', url, body === undefined ? {} : body);
export const put = (url, body) => api('PUT', url, body);
export const del = (url, body) => api('DELETE', url, body);
export const patch = (url, body) => api('PATCH', url, body);

// "/v1/runs" + {template: 'x', status: ''} -> "/v1/runs?template=x" (empty values left out)
export function q(base, params) {
    const u = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) {
        if (v !== undefined && v !== null && v !== '') {
            u.set(k, String(v));
        }
    }
    const s = u.toString();
    return s ? base + '?' + s : base;
}

// The export as a file: fetched with the bearer header, then handed to the browser as a Blob.
export async function download(url, filename) {
    const r = await fetch(url, { headers: authHeaders('GET'), cache: 'no-store', credentials: getKey() ? 'omit' : 'same-origin' });
    if (!r.ok) {
        throw new ApiError(r.status, 'HTTP_' + r.status, 'the export failed: HTTP ' + r.status);
    }
    const blob = await r.blob();
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = filename;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
    return blob.size;
}
