// dom.js - the only way the UI makes elements. Text is always a text node (textContent), never
// HTML: a guest's console line, arguments, error or source is shown as the characters it is,
// its hidden characters marked (text()).
// Event handlers must be functions (never a string of code), and no attribute takes a URL
// except href/src built by the pages from encoded path pieces (see path()).

const SVG_NS = 'http://www.w3.org/2000/svg';
const FORBIDDEN = new Set(['style', 'srcdoc', 'innerHTML', 'outerHTML']);

// Bidirectional controls and invisible characters: with them text reads otherwise than it is
// (Trojan Source: code shown where a comment is, an argument reversed). Wherever the UI shows
// text, each is shown as a marked "U+202E", so a person deciding reads the text as it is; only
// form fields and options, which hold no elements, keep the characters.
const HIDDEN = /([\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff])/;
const INVISIBLE = /[\u200b-\u200d\u2060\ufeff]/;
const PLAIN = new Set(['OPTION', 'TEXTAREA', 'TITLE']);

// Does s hold a bidirectional control or an invisible character?
export function hasHidden(s) {
    return HIDDEN.test(String(s));
}

// Does s hold an invisible character (zero-width, word joiner, byte order mark)?
export function hasInvisible(s) {
    return INVISIBLE.test(String(s));
}

// A text node of s, or a fragment with each hidden character shown as a marked code point.
export function text(s) {
    const parts = String(s).split(HIDDEN);
    if (parts.length === 1) {
        return document.createTextNode(parts[0]);
    }
    const f = document.createDocumentFragment();
    parts.forEach((part, i) => {
        if (i % 2 === 0) {
            f.append(part);
            return;
        }
        const cp = 'U+' + part.codePointAt(0).toString(16).toUpperCase().padStart(4, '0');
        const mark = document.createElement('span');
        mark.className = 'hidden-char';
        mark.title = 'hidden character ' + cp;
        mark.textContent = cp;
        f.append(mark);
    });
    return f;
}

function textOf(parent, s) {
    return PLAIN.has(String(parent.tagName || '').toUpperCase()) ? document.createTextNode(String(s)) : text(s);
}

function build(e, attrs, children) {
    for (const [k, v] of Object.entries(attrs || {})) {
        if (v === undefined || v === null || v === false) {
            continue;
        }
        if (FORBIDDEN.has(k)) {
            throw new Error('el: attribute ' + k + ' is not allowed');
        }
        if (k.startsWith('on')) {
            if (typeof v !== 'function') {
                throw new Error('el: ' + k + ' must be a function');
            }
            e.addEventListener(k.slice(2), v);
        } else if (k === 'class') {
            e.setAttribute('class', Array.isArray(v) ? v.filter(Boolean).join(' ') : v);
        } else if (k === 'text') {
            e.replaceChildren(textOf(e, v));
        } else if (v === true) {
            e.setAttribute(k, '');
        } else {
            e.setAttribute(k, String(v));
        }
    }
    for (const c of children.flat(Infinity)) {
        if (c === null || c === undefined || c === false) {
            continue;
        }
        e.append(c instanceof Node ? c : textOf(e, c));
    }
    return e;
}

// el('button', {class: 'primary', onclick: fn}, 'Approve')
export function el(tag, attrs, ...children) {
    return build(document.createElement(tag), attrs, children);
}

export function svg(tag, attrs, ...children) {
    return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

// A same-origin path from pieces, each percent-encoded: path('runs', id) -> "/runs/run_1".
export function path(...pieces) {
    return '/' + pieces.map((p) => encodeURIComponent(String(p))).join('/');
}

// parent.append(...children) that leaves out null, undefined and false (as el does).
export function add(parent, ...children) {
    for (const c of children.flat(Infinity)) {
        if (c === null || c === undefined || c === false) {
            continue;
        }
        parent.append(c instanceof Node ? c : textOf(parent, c));
    }
    return parent;
}

export function clear(node) {
    while (node.firstChild) {
        node.firstChild.remove();
    }
    return node;
}

// JSON pretty-printed, as text.
export function pretty(v) {
    return JSON.stringify(v, null, 2);
}

export function when(iso) {
    if (!iso) {
        return '';
    }
    const d = new Date(iso);
    return isNaN(d) ? String(iso) : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

export function badge(text, kind) {
    return el('span', { class: ['badge', kind ? 'badge-' + kind : ''] }, text);
}

// A labelled field: returns [label, input] wrapped in a div.
export function field(label, input, hint) {
    const id = input.id || 'f-' + Math.random().toString(36).slice(2, 10);
    input.id = id;
    return el('div', { class: 'field' }, el('label', { for: id }, label), input,
        hint ? el('span', { class: 'hint' }, hint) : null);
}

export function notice(text, kind) {
    return el('p', { class: ['notice', kind ? 'notice-' + kind : ''], role: kind === 'error' ? 'alert' : 'status' }, text);
}

// A modal confirmation (<dialog>): resolves true when confirmed. body: nodes shown above the
// buttons. The button that opened it (opts.opener) is hidden meanwhile, so the dialog's button
// is the only one of its name, and gets the focus back afterwards.
export function confirmDialog(title, body, confirmLabel, opts) {
    const o = opts || {};
    return new Promise((resolve) => {
        const ok = el('button', { class: 'danger', type: 'button' }, confirmLabel);
        const cancel = el('button', { type: 'button' }, o.cancelLabel || 'Cancel');
        const d = el('dialog', { class: 'confirm', 'aria-labelledby': 'dlg-title' },
            el('h2', { id: 'dlg-title' }, title), body, el('div', { class: 'actions' }, ok, cancel));
        const done = (v) => {
            d.close();
            d.remove();
            if (o.opener) {
                o.opener.hidden = false;
                if (o.opener.isConnected) {
                    o.opener.focus();
                }
            }
            resolve(v);
        };
        ok.addEventListener('click', () => done(true));
        cancel.addEventListener('click', () => done(false));
        d.addEventListener('cancel', (ev) => {
            ev.preventDefault();
            done(false);
        });
        document.body.append(d);
        d.showModal();
        if (o.opener) {
            o.opener.hidden = true;
        }
        cancel.focus();
    });
}
