// dashboard.js — the live dashboard (web/index.html).
//
// Data flow: one EventSource on /api/v1/stream; `event: history` comes
// first (serve's last ten minutes of the charts' figures, ADR 0054), then
// `event: status` and `event: live` about once a second, drawn as they
// come. The page keeps the last HISTORY_POINTS figures in memory for the
// time series (the per-second rates are serve's, over its last ~5 s); a
// history (again after a reconnect) replaces the older points and keeps
// the newer live ones. It never queries the lake itself. If the stream breaks, or stays
// silent for STALE_MS, the page reconnects with a backoff that doubles from
// 1 s to 30 s; the connection pill shows which state it is in.
//
// window.freshetDashboard exposes the charts' data and the update counts,
// read-only, for the browser console and tests/browser.
//
// Main thread only.
import uPlot from './vendor/uplot/uPlot.esm.js';
import {FRESHNESS_SLO_S, PATHS, getJSON, readHistory, readLive, readStatus, wikidataUrl} from './api.js';

const HISTORY_POINTS = 600;  // ten minutes at one update a second
const STALE_MS = 10000;
const BACKOFF_MIN_MS = 1000;
const BACKOFF_MAX_MS = 30000;
const MAX_WIKIS = 12;
const MAX_PAGES = 10;
const MAX_TOPICS = 10;
const MAX_TOP_WIKIS = 3;

const COLORS = {
    blue: '#2563eb',
    green: '#059669',
    amber: '#d97706',
    red: '#dc2626',
    violet: '#7c3aed',
    grey: '#6b7280',
    axis: '#374151',
    grid: 'rgba(17, 24, 39, 0.08)',
};

const $ = sel => document.querySelector(sel);
const intFmt = new Intl.NumberFormat('en-US', {maximumFractionDigits: 0});
const oneFmt = new Intl.NumberFormat('en-US', {minimumFractionDigits: 1, maximumFractionDigits: 1});
const pctFmt = new Intl.NumberFormat('en-US', {style: 'percent', minimumFractionDigits: 1, maximumFractionDigits: 1});

function fmtInt(v) {
    return v === null || v === undefined ? '—' : intFmt.format(v);
}

function fmtRate(v) {
    return v === null || v === undefined ? '—' : v < 100 ? oneFmt.format(v) : intFmt.format(v);
}

function fmtSeconds(v) {
    if (v === null || v === undefined) {
        return '—';
    }
    return v < 10 ? `${oneFmt.format(v)} s` : `${intFmt.format(v)} s`;
}

function fmtMs(v) {
    return v === null || v === undefined ? '—' : `${intFmt.format(v)} ms`;
}

function fmtBytes(v) {
    if (v === null || v === undefined) {
        return '—';
    }
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (v >= 1024 && i < units.length - 1) {
        v /= 1024;
        i++;
    }
    return `${i ? oneFmt.format(v) : intFmt.format(v)} ${units[i]}`;
}

function fmtClock(ms) {
    if (ms === null || ms === undefined) {
        return '—';
    }
    return new Date(ms).toLocaleTimeString('en-GB', {hour12: false});
}

// ------------------------------------------------------------- history

// Column arrays in uPlot's layout: x (Unix seconds) first.
const hist = {
    t: [],
    freshness: [], slo: [],
    ingestRate: [], rowsRate: [],
    batch: [], trigger: [], commit: [],
    dup: [], late: [], dlq: [],
};

function push(col, v) {
    col.push(v);
    if (col.length > HISTORY_POINTS) {
        col.shift();
    }
}

function record(s) {
    const t = s.t / 1000;
    if (hist.t.length && t <= hist.t[hist.t.length - 1]) {
        return false;  // the same status twice (initial read and stream)
    }
    const p = s.process;
    push(hist.t, t);
    push(hist.freshness, p.freshnessS);
    push(hist.slo, FRESHNESS_SLO_S);
    push(hist.ingestRate, s.ingest.rate);
    push(hist.rowsRate, p.recordsRate);
    push(hist.batch, p.batchMs);
    push(hist.trigger, p.triggerMs);
    push(hist.commit, p.commitMs);
    push(hist.dup, p.duplicateRate);
    push(hist.late, p.lateRate);
    push(hist.dlq, p.dlqRate);
    return true;
}

// Serve's history (readHistory's columns): it becomes the charts' past;
// points the page recorded after the history's newest stay.
function adoptHistory(h) {
    const last = h.t.length ? h.t[h.t.length - 1] : -Infinity;
    let from = hist.t.findIndex(t => t > last);
    if (from < 0) {
        from = hist.t.length;
    }
    for (const k of Object.keys(hist)) {
        const past = k === 'slo' ? h.t.map(() => FRESHNESS_SLO_S) : h[k];
        hist[k] = [...past, ...hist[k].slice(from)].slice(-HISTORY_POINTS);
    }
}

// -------------------------------------------------------------- charts

// Whole seconds and up on the time axis: the data arrive once a second.
const TIME_INCRS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600];

// Whole-number steps for axes that count things (no "0, 0, 1, 1" ticks
// on an idle pipeline).
const COUNT_INCRS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1e3, 2e3, 2.5e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6];

function axes(yValues, yIncrs) {
    const common = {stroke: COLORS.axis, grid: {stroke: COLORS.grid, width: 1}, ticks: {stroke: COLORS.grid}};
    const y = {...common, size: 60, values: (u, splits) => splits.map(yValues)};
    if (yIncrs) {
        y.incrs = yIncrs;
    }
    return [
        {...common, space: 70, incrs: TIME_INCRS, values: (u, splits) => splits.map(v => fmtClock(v * 1000))},
        y,
    ];
}

function line(label, stroke, extra = {}) {
    return {label, stroke, width: 2, points: {show: false}, spanGaps: false, ...extra};
}

function chartHeight(el) {
    return el.classList.contains('chart-short') ? 150 : 210;
}

function makeTimeChart(el, series, yValues, yRange, yIncrs) {
    const opts = {
        width: Math.max(el.clientWidth, 200),
        height: chartHeight(el),
        series: [{label: 'time', value: (u, v) => (v === null ? '—' : fmtClock(v * 1000))}, ...series],
        axes: axes(yValues, yIncrs),
        scales: {x: {time: true}, y: {range: yRange}},
        legend: {live: false},
        cursor: {drag: {x: false, y: false}},
    };
    return new uPlot(opts, [[], ...series.map(() => [])], el);
}

const charts = {};

function zeroTo(minTop) {
    return (u, min, max) => [0, Math.max(minTop, (max || 0) * 1.15)];
}

function makeCharts() {
    charts.freshness = makeTimeChart(
        $('#chart-freshness'),
        [
            line('freshness (s)', COLORS.blue, {fill: 'rgba(37, 99, 235, 0.08)'}),
            line(`SLO (${FRESHNESS_SLO_S} s)`, COLORS.red, {dash: [6, 4], width: 1.5}),
        ],
        v => `${intFmt.format(v)} s`, zeroTo(FRESHNESS_SLO_S * 1.2));
    charts.throughput = makeTimeChart(
        $('#chart-throughput'),
        [
            line('events received /s', COLORS.blue),
            line('records processed /s', COLORS.green),
        ],
        v => intFmt.format(v), zeroTo(1), COUNT_INCRS);
    charts.batch = makeTimeChart(
        $('#chart-batch'),
        [
            line('batch (ms)', COLORS.violet),
            line('trigger (ms)', COLORS.red, {dash: [6, 4], width: 1.5}),
            line('commit (ms)', COLORS.grey, {width: 1.5}),
        ],
        v => intFmt.format(v), zeroTo(10), COUNT_INCRS);
    charts.quality = makeTimeChart(
        $('#chart-quality'),
        [
            line('duplicates /s', COLORS.amber),
            line('late /s', COLORS.violet),
            line('dead letters /s', COLORS.red),
        ],
        v => (Number.isInteger(v) ? intFmt.format(v) : oneFmt.format(v)), zeroTo(1), [0.1, 0.2, 0.5, ...COUNT_INCRS]);

    const histEl = $('#chart-hist');
    charts.hist = new uPlot({
        width: Math.max(histEl.clientWidth, 200),
        height: chartHeight(histEl),
        series: [
            {label: 'bucket', value: (u, i) => (i === null ? '—' : histLabel(i))},
            {label: 'epochs', stroke: COLORS.violet, fill: 'rgba(124, 58, 237, 0.35)', width: 1,
             paths: uPlot.paths.bars({size: [0.75, 48]}), points: {show: false}},
        ],
        axes: [
            {stroke: COLORS.axis, grid: {show: false}, ticks: {show: false}, font: '11px system-ui, sans-serif',
             splits: u => u.data[0], values: (u, splits) => splits.map(histLabel)},
            {stroke: COLORS.axis, grid: {stroke: COLORS.grid}, size: 50, incrs: COUNT_INCRS,
             values: (u, splits) => splits.map(v => intFmt.format(v))},
        ],
        scales: {x: {time: false, range: (u, min, max) => [-0.5, (u.data[0].length || 1) - 0.5]},
                 y: {range: zeroTo(1)}},
        legend: {show: false},
        cursor: {drag: {x: false, y: false}},
    }, [[], []], histEl);

    const ro = new ResizeObserver(entries => {
        for (const e of entries) {
            const u = Object.values(charts).find(c => c.root.parentElement === e.target);
            if (u) {
                u.setSize({width: Math.max(e.target.clientWidth, 200), height: chartHeight(e.target)});
            }
        }
    });
    for (const u of Object.values(charts)) {
        ro.observe(u.root.parentElement);
    }
}

let histBounds = [];

function histLabel(i) {
    const b = histBounds[i];
    if (b === undefined) {
        return '';
    }
    const short = ms => (ms < 1000 ? `${intFmt.format(ms)}` : `${+(ms / 1000).toFixed(1)}s`);
    return Number.isFinite(b) ? short(b) : `>${short(histBounds[i - 1] ?? 0)}`;
}

function drawCharts() {
    charts.freshness.setData([hist.t, hist.freshness, hist.slo]);
    charts.throughput.setData([hist.t, hist.ingestRate, hist.rowsRate]);
    charts.batch.setData([hist.t, hist.batch, hist.trigger, hist.commit]);
    charts.quality.setData([hist.t, hist.dup, hist.late, hist.dlq]);
}

// Buckets up to the last non-empty one (at least up to the trigger's), so
// fourteen labels do not crowd a small chart.
function drawHistogram(h, triggerMs) {
    let last = 0;
    h.counts.forEach((c, i) => {
        if (c > 0 || (triggerMs !== null && h.bounds[i - 1] !== undefined && h.bounds[i - 1] < triggerMs)) {
            last = i;
        }
    });
    const n = h.counts.length ? Math.min(h.counts.length, last + 1) : 0;
    histBounds = h.bounds.slice(0, n);
    charts.hist.setData([histBounds.map((_, i) => i), h.counts.slice(0, n)]);
}

// ------------------------------------------------------------- figures

function setFigure(name, text, level) {
    const el = document.querySelector(`[data-figure="${name}"]`);
    el.textContent = text;
    const tile = el.closest('.tile');
    if (tile) {
        if (level) {
            tile.dataset.level = level;
        } else {
            delete tile.dataset.level;
        }
    }
    if (el.tagName === 'DD') {
        el.dataset.level = level || '';
    }
}

function setNote(name, text) {
    $(`[data-note="${name}"]`).textContent = text;
}

function drawStatus(s) {
    const p = s.process;
    const i = s.ingest;

    const f = p.freshnessS;
    setFigure('freshness', fmtSeconds(f),
              f === null ? null : f > FRESHNESS_SLO_S ? 'bad' : f > FRESHNESS_SLO_S * 0.75 ? 'warn' : 'ok');
    setNote('freshness', f === null ? 'no silver row yet'
            : f > FRESHNESS_SLO_S ? `over the ${FRESHNESS_SLO_S} s objective` : `within the ${FRESHNESS_SLO_S} s objective`);

    setFigure('throughput', i.rate === null ? '—' : `${fmtRate(i.rate)}/s`);
    setNote('throughput', p.recordsRate === null ? 'events/s received'
            : `events/s received · ${fmtRate(p.recordsRate)} records/s processed`);

    const b = p.batchMs;
    const trig = p.triggerMs;
    setFigure('batch', fmtMs(b),
              b === null || trig === null ? null : b > trig ? 'bad' : b > trig * 0.8 ? 'warn' : 'ok');
    setNote('batch', trig === null ? 'against the trigger' : `trigger every ${intFmt.format(trig)} ms`);

    setFigure('duplicates', fmtInt(p.duplicate));
    setFigure('late', fmtInt(p.late));
    setFigure('dlq', fmtInt(p.dlq), p.dlq ? 'warn' : null);

    setFigure('ingest-up', i.up ? 'up' : 'down', i.up ? 'ok' : 'bad');
    setFigure('process-up', p.up ? 'up' : 'down', p.up ? 'ok' : 'bad');
    setFigure('events', fmtInt(i.events));
    setFigure('silver', fmtInt(p.silver));
    setFigure('epochs', fmtInt(p.epochs));
    setFigure('commit', fmtMs(p.commitMs));
    setFigure('wm-lag', fmtSeconds(p.watermarkLagS));
    setFigure('behind', fmtInt(p.offsetsBehind));
    setFigure('dedup', p.dedupKeys === null ? '—' : `${fmtInt(p.dedupKeys)} (${fmtBytes(p.dedupBytes)})`);
    setFigure('reconnects', fmtInt(i.reconnects));
    setFigure('last-event', fmtClock(i.lastEvent));

    drawHistogram(p.hist, p.triggerMs);
    drawReasons(p.dlqByReason);
    drawMembers(p);
}

// The group's members (scale-out mode); the card stays hidden otherwise.
// Instance names come from the stats files: text only.
function drawMembers(p) {
    const card = $('#members-card');
    card.hidden = !p.group;
    const body = $('#members tbody');
    body.replaceChildren();
    if (!p.group) {
        return;
    }
    for (const m of p.members) {
        const tr = el('tr');
        tr.dataset.member = m.role === 'shard' ? `p${m.partition}` : m.role;
        const stateCell = el('td', null, m.state);
        stateCell.dataset.state = m.state;
        // The finalizer's figure is gold's frontier: its watermark lag.
        const fresh = m.role === 'finalizer' ? m.watermarkLagS : m.freshnessS;
        tr.append(el('td', 'num', m.partition === null ? '—' : String(m.partition)), el('td', null, m.role),
                  el('td', 'instance', m.instance), stateCell, el('td', 'num', fmtInt(m.epochs)),
                  el('td', 'num', fmtInt(m.records)), el('td', 'num', fmtSeconds(fresh)),
                  el('td', 'num', m.heartbeatAgeS === null ? '—' : `${fmtSeconds(m.heartbeatAgeS)} ago`));
        body.append(tr);
    }
    const up = p.members.filter(m => m.up).length;
    $('#members-note').textContent =
        `${up} of ${p.members.length} up · shards and the finalizer of this data directory; the figures above are their totals`;
}

function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) {
        e.className = cls;
    }
    if (text !== undefined) {
        e.textContent = text;
    }
    return e;
}

function drawReasons(reasons) {
    const body = $('#dlq-reasons tbody');
    const rows = Object.entries(reasons).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    body.replaceChildren();
    if (!rows.length) {
        const tr = el('tr');
        const td = el('td', 'empty', 'none');
        td.colSpan = 2;
        tr.append(td);
        body.append(tr);
        return;
    }
    for (const [reason, n] of rows) {
        const tr = el('tr');
        tr.append(el('td', null, reason), el('td', 'num', fmtInt(Number(n))));
        body.append(tr);
    }
}

function drawLive(l) {
    const wikis = $('#wikis');
    wikis.replaceChildren();
    const shown = l.wikis.slice(0, MAX_WIKIS);
    const max = shown.length ? shown[0].events : 0;
    $('#wikis-note').textContent = l.hasView
        ? `${l.windows} open minute window${l.windows === 1 ? '' : 's'}, provisional`
        : 'no view from the processor yet';
    if (!shown.length) {
        wikis.append(el('li', 'empty', l.hasView ? 'no events in the open windows' : 'waiting for the first epoch…'));
    }
    for (const w of shown) {
        const li = el('li');
        li.dataset.wiki = w.wiki;
        const name = el('span', 'name', w.wiki);
        const track = el('span', 'track');
        const fill = el('span', 'fill');
        fill.style.width = `${max ? Math.max(1, (100 * w.events) / max) : 0}%`;
        const fillEdits = el('span', 'fill-edits');
        fillEdits.style.width = `${w.events ? (100 * w.edits) / w.events : 0}%`;
        fill.append(fillEdits);
        track.append(fill);
        const n = el('span', 'num', `${fmtInt(w.edits)} / ${fmtInt(w.events)}`);
        n.title = `edits / all events${w.perMinute === null ? '' : `; ${fmtRate(w.perMinute)} events a minute`}`;
        li.append(name, track, n);
        wikis.append(li);
    }

    $('#pages-note').textContent = l.topStart === null ? 'edits, newest open 10-minute window'
        : `edits + new pages, ${fmtClock(l.topStart).slice(0, 5)}–${fmtClock(l.topEnd).slice(0, 5)} window`;
    const pages = $('#pages');
    pages.replaceChildren();
    const top = l.pages.slice(0, MAX_PAGES);
    if (!top.length) {
        pages.append(el('li', 'empty', 'no edits in an open window yet'));
    }
    for (const p of top) {
        const li = el('li');
        li.dataset.rank = String(p.rank);
        const title = el('span', 'title', p.title);
        title.title = `${p.wiki}: ${p.title}`;
        li.append(title, el('span', 'wiki', p.wiki), el('span', 'num', fmtInt(p.edits)));
        pages.append(li);
    }
}

// The trending topics pane: the processor's provisional top Wikidata items
// (stats/topics.json through "topics" in the live document) and its
// enrichment counters. A topic reads as its label (in the language of the
// wiki that edits it most, else English; issue 33) followed by its Q-id.
// Every string goes in as text; an item is a link only when it is a
// well-formed item id (wikidataUrl), and a link is all it is: nothing is
// fetched from wikidata.org.
function drawTopics(t) {
    const list = $('#topics');
    list.replaceChildren();
    const note = $('#topics-note');
    if (t === null) {
        note.textContent = 'enrichment off or not reporting';
        list.append(el('li', 'empty', 'no trending topics: enrichment is off, or the processor has not reported yet'));
    } else if (t.topStart === null) {
        note.textContent = 'edits across all wikis, newest open 10-minute window';
        list.append(el('li', 'empty', 'no resolved edits in an open window yet'));
    } else {
        note.textContent = `edits across all wikis, ${fmtClock(t.topStart).slice(0, 5)}–${fmtClock(t.topEnd).slice(0, 5)} window`;
        const top = t.topics.slice(0, MAX_TOPICS);
        if (!top.length) {
            list.append(el('li', 'empty', 'no resolved edits in the open window yet'));
        }
        for (const x of top) {
            const li = el('li');
            li.dataset.rank = String(x.rank);
            li.dataset.item = x.item;
            const item = el('span', 'item');
            if (x.label !== null) {
                item.append(el('span', 'label', x.label), ' ');
            }
            const url = wikidataUrl(x.item);
            if (url) {
                const a = el('a', 'qid', x.item);
                a.href = url;
                a.target = '_blank';
                a.rel = 'noopener noreferrer external';
                a.referrerPolicy = 'no-referrer';
                item.append(a);
            } else {
                item.append(el('span', 'qid', x.item));
            }
            item.title = x.label !== null ? `${x.label} (${x.item})` : x.item;
            const nw = el('span', 'nwikis', x.wikis === null ? '—' : `${fmtInt(x.wikis)} wiki${x.wikis === 1 ? '' : 's'}`);
            const tw = x.topWikis.slice(0, MAX_TOP_WIKIS).map(w => `${w.wiki} ${fmtInt(w.edits)}`).join(' · ');
            const tws = el('span', 'top-wikis', tw || '—');
            tws.title = tw;
            li.append(item, nw, el('span', 'num', fmtInt(x.edits)), tws);
            list.append(li);
        }
    }
    const c = t === null ? {} : t.counts;
    const put = (name, text, level) => {
        const dd = $(`[data-topic-count="${name}"]`);
        dd.textContent = text;
        dd.dataset.level = level || '';
    };
    put('resolved', fmtInt(c.resolved));
    put('labelled', fmtInt(c.labelled));
    put('no-item', fmtInt(c.noItem));
    put('failed', fmtInt(c.failed), c.failed ? 'warn' : null);
    put('pending', fmtInt(c.pending));
    put('hit-rate', t === null || t.hitRate === null ? '—' : pctFmt.format(t.hitRate));
}

// -------------------------------------------------------------- stream

const state = {
    updates: {history: 0, status: 0, live: 0},
    last: {status: null, live: null},
    lastHistory: null,  // {points, first, last (Unix s)} of the last history adopted
    connects: 0,
    lastMessageAt: 0,
};
let source = null;
let backoff = BACKOFF_MIN_MS;
let retryTimer = null;

function setConn(stateName, text) {
    const pill = $('#conn');
    pill.dataset.state = stateName;
    pill.className = `pill pill-${stateName === 'live' ? 'ok' : stateName === 'connecting' ? 'wait' : 'bad'}`;
    pill.textContent = text;
}

function touched() {
    state.lastMessageAt = Date.now();
    $('#updated').textContent = `updated ${fmtClock(state.lastMessageAt)}`;
}

function onStatus(doc) {
    const s = readStatus(doc);
    if (state.last.status && s.t < state.last.status.t) {
        return;  // the initial read answered after a newer push
    }
    state.last.status = s;
    state.updates.status++;
    if (record(s)) {
        drawCharts();
    }
    drawStatus(s);
    touched();
}

function onHistory(doc) {
    const h = readHistory(doc);
    adoptHistory(h);
    state.updates.history++;
    state.lastHistory = {points: h.t.length, first: h.t[0] ?? null, last: h.t.at(-1) ?? null};
    drawCharts();
    touched();
}

function onLive(doc) {
    const l = readLive(doc);
    if (state.last.live && l.t < state.last.live.t) {
        return;
    }
    state.last.live = l;
    state.updates.live++;
    drawLive(l);
    drawTopics(l.topics);
    touched();
}

function handle(fn) {
    return e => {
        let doc;
        try {
            doc = JSON.parse(e.data);
        } catch (err) {
            console.warn('freshet: unreadable stream event', err);
            return;
        }
        fn(doc);
    };
}

function connect() {
    retryTimer = null;
    state.connects++;
    setConn('connecting', state.connects > 1 ? 'reconnecting' : 'connecting');
    const es = new EventSource(PATHS.stream);
    source = es;
    es.addEventListener('history', handle(onHistory));
    es.addEventListener('status', handle(onStatus));
    es.addEventListener('live', handle(onLive));
    es.onopen = () => {
        backoff = BACKOFF_MIN_MS;
        state.lastMessageAt = Date.now();
        setConn('live', 'live');
    };
    es.onerror = () => {
        if (es.readyState === EventSource.CLOSED) {
            retry();  // the browser gave up (an HTTP error): back off ourselves
        } else {
            setConn('connecting', 'reconnecting');  // the browser retries on its own
        }
    };
}

function retry() {
    if (source) {
        source.close();
        source = null;
    }
    if (retryTimer) {
        return;
    }
    setConn('down', `offline — retry in ${Math.round(backoff / 1000)} s`);
    retryTimer = setTimeout(connect, backoff);
    backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
}

// A stream that stays open but silent (a proxy holding it, a stopped
// server behind a live socket) is treated as broken.
setInterval(() => {
    if (source && source.readyState === EventSource.OPEN && Date.now() - state.lastMessageAt > STALE_MS) {
        console.warn('freshet: stream silent for', STALE_MS, 'ms; reconnecting');
        retry();
    }
}, 1000);

// ---------------------------------------------------------------- start

makeCharts();
// history: the column arrays are replaced when serve's history arrives, so
// read them through this object (window.freshetDashboard.history.t).
window.freshetDashboard = {charts, history: hist, state};

// One read of each document paints the page before the first push.
getJSON(PATHS.status).then(onStatus).catch(err => console.warn('freshet:', err.message));
getJSON(PATHS.live).then(onLive).catch(err => console.warn('freshet:', err.message));
connect();
