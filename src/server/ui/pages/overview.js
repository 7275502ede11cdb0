// pages/overview.js - the last hour at a glance: runs per minute by status (stacked bars) and
// the p95 wall time per minute (a line), drawn as SVG with DOM calls; pending approvals; revoked
// versions.

import { get, q } from '../api.js';
import { add, el, path, svg } from '../dom.js';

const MINUTES = 60;
const STATUSES = ['completed', 'failed', 'awaiting_approval', 'running', 'cancelled', 'denied', 'queued'];

function p95(xs) {
    if (!xs.length) {
        return null;
    }
    const s = xs.slice().sort((a, b) => a - b);
    return s[Math.min(s.length - 1, Math.ceil(0.95 * s.length) - 1)];
}

function chartFrame(label, w, h) {
    return svg('svg', { class: 'chart', viewBox: '0 0 ' + w + ' ' + h, role: 'img', 'aria-label': label });
}

function runsChart(buckets, w, h) {
    const g = chartFrame('Runs per minute by status, last hour', w, h);
    const max = Math.max(1, ...buckets.map((b) => Object.values(b.by).reduce((a, c) => a + c, 0)));
    const bw = w / MINUTES;
    buckets.forEach((b, i) => {
        let y = h - 14;
        for (const s of STATUSES) {
            const n = b.by[s] || 0;
            if (!n) {
                continue;
            }
            const bh = (n / max) * (h - 24);
            y -= bh;
            add(g, svg('rect', { x: (i * bw + 1).toFixed(1), y: y.toFixed(1), width: Math.max(1, bw - 2).toFixed(1), height: bh.toFixed(1), class: 'bar status-' + s },
                svg('title', null, n + ' ' + s + ' at ' + b.label)));
        }
    });
    add(g, svg('text', { x: 2, y: 10, class: 'axis' }, 'max ' + max + '/min'), svg('text', { x: 2, y: h - 2, class: 'axis' }, '-60 min'),
        svg('text', { x: w - 2, y: h - 2, class: 'axis end' }, 'now'));
    return g;
}

function p95Chart(buckets, w, h) {
    const g = chartFrame('p95 run wall time per minute, last hour', w, h);
    const vals = buckets.map((b) => p95(b.wall));
    const max = Math.max(1, ...vals.filter((v) => v !== null));
    const bw = w / MINUTES;
    const pts = [];
    vals.forEach((v, i) => {
        if (v !== null) {
            pts.push((i * bw + bw / 2).toFixed(1) + ',' + (h - 14 - (v / max) * (h - 24)).toFixed(1));
        }
    });
    if (pts.length) {
        add(g, svg('polyline', { points: pts.join(' '), class: 'line' }));
        for (const p of pts) {
            const [x, y] = p.split(',');
            add(g, svg('circle', { cx: x, cy: y, r: 2, class: 'dot' }));
        }
    }
    add(g, svg('text', { x: 2, y: 10, class: 'axis' }, 'max ' + max + ' ms'), svg('text', { x: 2, y: h - 2, class: 'axis' }, '-60 min'),
        svg('text', { x: w - 2, y: h - 2, class: 'axis end' }, 'now'));
    return g;
}

export async function render(ctx) {
    const m = ctx.main;
    const now = Date.now();
    const start = now - MINUTES * 60000;
    let runs = [];
    let after = new Date(start).toISOString().replace(/\.\d+Z$/, 'Z');
    for (let i = 0; i < 10; i++) {
        const page = await get(q('/v1/runs', { after, limit: 1000 }));
        runs = runs.concat(page);
        if (page.length < 1000) {
            break;
        }
        after = page[page.length - 1].id;
    }
    const buckets = [];
    for (let i = 0; i < MINUTES; i++) {
        buckets.push({ by: {}, wall: [], label: new Date(start + i * 60000).toISOString().slice(11, 16) + 'Z' });
    }
    for (const r of runs) {
        const i = Math.floor((Date.parse(r.created) - start) / 60000);
        if (i < 0 || i >= MINUTES) {
            continue;
        }
        buckets[i].by[r.status] = (buckets[i].by[r.status] || 0) + 1;
        if (r.stats && typeof r.stats.wall_ms === 'number' && (r.status === 'completed' || r.status === 'failed')) {
            buckets[i].wall.push(r.stats.wall_ms);
        }
    }
    add(m, el('h1', null, 'Overview'));
    const tiles = el('div', { class: 'tiles' });
    add(tiles, el('div', { class: 'tile card' }, el('span', { class: 'big', id: 'runs-hour' }, String(runs.length)), el('span', null, 'runs in the last hour')));
    if (ctx.me.canListApprovals) {
        const pending = await get('/v1/approvals?status=pending');
        add(tiles, el('a', { class: 'tile card', href: '/approvals' }, el('span', { class: 'big', id: 'pending-count' }, String(pending.length)), el('span', null, 'pending approvals')));
    }
    const all = wallAll(runs);
    add(tiles, el('div', { class: 'tile card' }, el('span', { class: 'big' }, all === null ? '–' : all + ' ms'), el('span', null, 'p95 wall time, last hour')));
    add(m, tiles);
    add(m, el('section', { class: 'grid2' },
        el('div', { class: 'card' }, el('h2', null, 'Runs per minute'), runsChart(buckets, 480, 140),
            el('ul', { class: 'legend' }, STATUSES.slice(0, 6).map((s) => el('li', null, el('span', { class: 'swatch status-' + s }), s)))),
        el('div', { class: 'card' }, el('h2', null, 'p95 wall time per minute'), p95Chart(buckets, 480, 140))));
    const tpls = await get('/v1/templates');
    const revoked = [];
    for (const t of tpls) {
        for (const v of t.versions) {
            if (v.state === 'revoked') {
                revoked.push([t.name, v.version]);
            }
        }
    }
    add(m, el('section', { class: 'card' }, el('h2', null, 'Revoked versions'),
        revoked.length ? el('ul', { class: 'revoked' }, revoked.map(([t, v]) => el('li', null, el('a', { href: path('templates', t, 'versions', v) }, t + ' v' + v))))
            : el('p', { class: 'muted' }, 'None.')));
}

function wallAll(runs) {
    return p95(runs.filter((r) => r.stats && typeof r.stats.wall_ms === 'number').map((r) => r.stats.wall_ms));
}
