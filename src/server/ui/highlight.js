// highlight.js - JavaScript/TypeScript source as numbered lines of spans, for reading. A small
// tokenizer (comments, strings, template literals, numbers, keywords); every token becomes a
// text node inside a <span class="tok-KIND">, so the source is shown exactly as written and
// nothing in it is ever parsed as HTML.

import { el, text as textNode } from './dom.js';

const KEYWORDS = new Set(('await async break case catch class const continue debugger default delete do else export extends ' +
    'false finally for function if import in instanceof let new null return static super switch this throw true try typeof ' +
    'undefined var void while with yield of interface type enum implements private public protected readonly as').split(' '));

const TOKEN = /(\/\/[^\n]*)|(\/\*[\s\S]*?(?:\*\/|$))|('(?:[^'\\\n]|\\.)*'?|"(?:[^"\\\n]|\\.)*"?)|(`(?:[^`\\]|\\[\s\S])*`?)|(\b\d[\d_]*(?:\.\d+)?(?:e[+-]?\d+)?n?\b|\b0x[0-9a-f]+\b)|([A-Za-z_$][\w$]*)/gi;

// [[kind, text], ...] for the whole source; kind '' for plain text.
export function tokens(src) {
    const out = [];
    let last = 0;
    TOKEN.lastIndex = 0;
    let m;
    while ((m = TOKEN.exec(src)) !== null) {
        if (m[0] === '') {
            TOKEN.lastIndex++;
            continue;
        }
        if (m.index > last) {
            out.push(['', src.slice(last, m.index)]);
        }
        let kind = '';
        if (m[1] || m[2]) {
            kind = 'comment';
        } else if (m[3] || m[4]) {
            kind = 'string';
        } else if (m[5]) {
            kind = 'number';
        } else if (m[6]) {
            kind = KEYWORDS.has(m[6]) ? 'keyword' : '';
        }
        out.push([kind, m[0]]);
        last = TOKEN.lastIndex;
    }
    if (last < src.length) {
        out.push(['', src.slice(last)]);
    }
    return out;
}

// A <div class="code"> of lines, each a line number and the line's tokens.
export function codeBlock(src, label) {
    const lines = [[]];
    for (const [kind, text] of tokens(src)) {
        const parts = text.split('\n');
        parts.forEach((part, i) => {
            if (i > 0) {
                lines.push([]);
            }
            if (part) {
                lines[lines.length - 1].push(kind ? el('span', { class: 'tok-' + kind }, part) : textNode(part));
            }
        });
    }
    if (lines.length > 1 && lines[lines.length - 1].length === 0 && src.endsWith('\n')) {
        lines.pop();
    }
    return el('div', { class: 'code', role: 'region', 'aria-label': label || 'Source', tabindex: 0 },
        lines.map((spans, i) => el('div', { class: 'line' },
            el('span', { class: 'ln', 'aria-hidden': 'true' }, String(i + 1)),
            el('span', { class: 'src' }, spans.length ? spans : ' '))));
}

// A unified diff, each line classed by its first character.
export function diffBlock(text) {
    if (!text) {
        return el('p', { class: 'muted' }, 'The sources are the same.');
    }
    const lines = text.replace(/\n$/, '').split('\n');
    return el('pre', { class: 'diff', tabindex: 0, 'aria-label': 'Source diff' },
        lines.map((l) => {
            const c = l.startsWith('+++') || l.startsWith('---') ? 'diff-file'
                : l.startsWith('@@') ? 'diff-hunk' : l.startsWith('+') ? 'diff-add' : l.startsWith('-') ? 'diff-del' : 'diff-ctx';
            return el('span', { class: c }, l + '\n');
        }));
}
