// api.js — the one place the pages know freshet's HTTP API (docs/API.md):
// the endpoint paths, and readers that turn the JSON documents into the
// plain figures the dashboard and the explorer draw. When the API changes,
// this file changes; the pages do not.
//
// Runs in the browser's main thread only. Nothing here polls: the dashboard
// gets its updates pushed over /api/v1/stream (Server-Sent Events).

// Relative, so the pages also work behind a proxy that adds a path prefix.
export const PATHS = {
    status: 'api/v1/status',
    history: 'api/v1/history',
    live: 'api/v1/live',
    stream: 'api/v1/stream',
    tables: 'api/v1/tables',
};

// The freshness objective the dashboard measures against, in seconds.
export const FRESHNESS_SLO_S = 120;

export async function getJSON(path, init) {
    const res = await fetch(path, {cache: 'no-store', ...init});
    if (!res.ok) {
        throw new Error(`${path}: HTTP ${res.status}`);
    }
    return res.json();
}

function num(v) {
    if (v === null || v === undefined || v === '') {
        return null;
    }
    const n = Number(v);
    return Number.isFinite(n) ? n : null;
}

// The value of a labelled metric (an object from label value to number),
// summed over its labels; null while any is null.
function sumLabels(v) {
    if (!v || typeof v !== 'object') {
        return num(v);
    }
    let total = 0;
    for (const x of Object.values(v)) {
        if (num(x) === null) {
            return null;
        }
        total += num(x);
    }
    return total;
}

function ms(seconds) {
    const v = num(seconds);
    return v === null ? null : v * 1000;
}

// A histogram {count, sum, le, counts} (counts cumulative, one more than
// le: the last is +Inf) as per-bucket counts with upper bounds in ms.
function buckets(h) {
    if (!h || !Array.isArray(h.le) || !Array.isArray(h.counts)) {
        return {bounds: [], counts: []};
    }
    const bounds = [...h.le.map(b => Number(b) * 1000), Infinity];
    const counts = h.counts.map((c, i) => Number(c) - (i ? Number(h.counts[i - 1]) : 0));
    return {bounds, counts};
}

// One member of the group (docs/API.md, stages.process.members): its state
// is "up", "left" (stopped cleanly: a revoked shard) or "down" (crashed,
// hung or gone); freshness against serve's clock, as the tile's.
function readMember(m, t) {
    const mm = (m && m.metrics) || {};
    const newest = num(mm.process_last_committed_event_timestamp_seconds);
    return {
        role: String(m.role ?? ''),
        partition: num(m.partition),
        instance: String(m.instance ?? ''),
        pid: num(m.pid),
        up: Boolean(m.up),
        state: m.up ? 'up' : m.closed ? 'left' : 'down',
        heartbeatAgeS: num(m.heartbeat_age_seconds),
        epochs: num(mm.process_epochs_total),
        records: m.role === 'finalizer' ? null : sumLabels(mm.process_records_total),
        freshnessS: newest !== null ? Math.max(0, t / 1000 - newest) : num(mm.process_freshness_seconds),
        watermarkLagS: num(mm.process_watermark_lag_seconds),
    };
}

// readStatus(doc) -> the dashboard's figures from one /api/v1/status
// document (or one `event: status` payload, which is the same document).
// Durations come out in milliseconds, timestamps in Unix milliseconds.
export function readStatus(doc) {
    const stages = doc.stages || {};
    const ing = stages.ingest || {};
    const pr = stages.process || {};
    const im = ing.metrics || {};
    const ir = ing.rates || {};
    const pm = pr.metrics || {};
    const prr = pr.rates || {};
    const t = num(doc.now_ms) ?? Date.now();
    const outcomes = pm.process_records_total || {};
    const outRates = prr.process_records_total || {};
    const newest = num(pm.process_last_committed_event_timestamp_seconds);
    const reasons = {};
    for (const [k, v] of Object.entries(pm.process_dlq_records_total || {})) {
        if (num(v)) {
            reasons[k] = num(v);
        }
    }
    return {
        t,
        ingest: {
            up: Boolean(ing.up),
            events: num(im.ingest_events_received_total),
            rate: num(ir.ingest_events_received_total),
            reconnects: num(im.ingest_sse_reconnects_total),
            lastEvent: ms(im.ingest_last_event_timestamp_seconds),
        },
        process: {
            up: Boolean(pr.up),
            epochs: num(pm.process_epochs_total),
            batchMs: ms(pm.process_last_batch_duration_seconds),
            triggerMs: ms(pm.process_trigger_interval_seconds),
            commitMs: ms(pm.process_last_commit_duration_seconds),
            hist: buckets(pm.process_batch_duration_seconds),
            silver: num(outcomes.silver),
            duplicate: num(outcomes.duplicate),
            late: num(outcomes.late),
            dlq: num(outcomes.dlq),
            recordsRate: sumLabels(prr.process_records_total),
            duplicateRate: num(outRates.duplicate),
            lateRate: num(outRates.late),
            dlqRate: num(outRates.dlq),
            dlqByReason: reasons,
            watermarkLagS: num(pm.process_watermark_lag_seconds),
            // The scale-out mode: the figures above are the group's totals;
            // members lists the shards and the finalizer (empty otherwise).
            group: Boolean(pr.group),
            members: (Array.isArray(pr.members) ? pr.members : []).map(m => readMember(m, t)),
            dedupKeys: num(pm.process_dedup_keys),
            dedupBytes: num(pm.process_dedup_bytes),
            offsetsBehind: num(pm.process_offsets_behind),
            // Measured against serve's clock, so it keeps growing while
            // the processor is stopped; the gauge is the fallback.
            freshnessS: newest !== null ? Math.max(0, t / 1000 - newest) : num(pm.process_freshness_seconds),
        },
    };
}

// readHistory(doc) -> the charts' last ten minutes from serve (one
// /api/v1/history document, or the stream's `event: history`), as columns
// oldest first: t (Unix seconds), freshness (s), ingestRate, rowsRate
// (/s), batch, trigger, commit (ms), dup, late, dlq (/s); null where a
// figure had no value. Columns of unequal length are cut to the shortest.
export function readHistory(doc) {
    const col = name => (Array.isArray(doc && doc[name]) ? doc[name].map(num) : []);
    const cols = {
        t: col('t_ms').map(v => (v === null ? null : v / 1000)),
        freshness: col('freshness_s'),
        ingestRate: col('events_per_s'),
        rowsRate: col('records_per_s'),
        batch: col('batch_ms'),
        trigger: col('trigger_ms'),
        commit: col('commit_ms'),
        dup: col('duplicates_per_s'),
        late: col('late_per_s'),
        dlq: col('dlq_per_s'),
    };
    const n = Math.min(...Object.values(cols).map(c => c.length));
    for (const k of Object.keys(cols)) {
        cols[k] = cols[k].slice(0, n);
    }
    return cols;
}

// A Wikidata item id the page may link to (https://www.wikidata.org/wiki/Q…);
// anything else is shown as text only.
const ITEM_RE = /^Q[1-9][0-9]{0,11}$/;

export function wikidataUrl(item) {
    return ITEM_RE.test(item) ? `https://www.wikidata.org/wiki/${item}` : null;
}

// readTopics(t) -> null when the document has no "topics" (enrichment off,
// or serve refused stats/topics.json), else {epoch, counts {submitted,
// resolved, noItem, failed, backlog, pending, cacheHits, cacheMisses,
// requests, labelled} (null where absent), hitRate (0..1, null before any lookup),
// topics [{rank, item, label (null: none), edits, wikis, topWikis [{wiki,
// edits}]}] in rank
// order, topStart/topEnd (ms; null while there is no open window)}. The
// strings are the processor's (from page titles and wiki names, so
// hostile): the pages put them in the DOM as text only.
export function readTopics(t) {
    if (!t || typeof t !== 'object' || Array.isArray(t)) {
        return null;
    }
    const c = t.counts && typeof t.counts === 'object' ? t.counts : {};
    const top = t.top && typeof t.top === 'object' ? t.top : null;
    const hits = num(c.cache_hits);
    const misses = num(c.cache_misses);
    const list = top && Array.isArray(top.topics) ? top.topics : [];
    return {
        epoch: num(t.epoch),
        updated: num(t.updated_ms),
        counts: {
            submitted: num(c.submitted),
            resolved: num(c.resolved),
            noItem: num(c.no_item),
            failed: num(c.failed),
            backlog: num(c.backlog),
            pending: num(c.pending),
            cacheHits: hits,
            cacheMisses: misses,
            requests: num(c.requests),
            labelled: num(c.labelled),
        },
        hitRate: hits !== null && misses !== null && hits + misses > 0 ? hits / (hits + misses) : null,
        topics: list.filter(x => x && typeof x === 'object').map(x => ({
            rank: num(x.rank),
            item: String(x.item ?? ''),
            label: typeof x.label === 'string' && x.label !== '' ? x.label : null,
            edits: num(x.edits),
            wikis: num(x.wikis),
            topWikis: (Array.isArray(x.top_wikis) ? x.top_wikis : [])
                .filter(w => w && typeof w === 'object')
                .map(w => ({wiki: String(w.wiki ?? ''), edits: num(w.edits)})),
        })),
        topStart: top ? num(top.start_ms) : null,
        topEnd: top ? num(top.end_ms) : null,
    };
}

// readLive(doc) -> {up, windows (open minutes), wikis [{wiki, events, edits,
// perMinute}] most events first, pages [{rank, wiki, title, edits}],
// topStart/topEnd (ms) of the window the pages rank, topics (readTopics)}.
export function readLive(doc) {
    const view = doc.view || null;
    const minutes = view ? view.minutes || [] : [];
    const top = view ? view.top : null;
    return {
        t: view ? num(view.updated_ms) ?? Date.now() : Date.now(),
        up: Boolean(doc.up),
        hasView: view !== null,
        epoch: view ? num(view.epoch) : null,
        windows: new Set(minutes.map(m => m.start_ms)).size,
        wikis: (view ? view.wikis || [] : []).map(w => ({
            wiki: String(w.wiki),
            events: num(w.events) || 0,
            edits: num(w.edits) || 0,
            perMinute: num(w.events_per_minute),
        })),
        pages: (top ? top.pages || [] : []).map(p => ({
            rank: num(p.rank),
            wiki: String(p.wiki),
            title: String(p.title),
            edits: num(p.count) || 0,
        })),
        topStart: top ? num(top.start_ms) : null,
        topEnd: top ? num(top.end_ms) : null,
        topics: readTopics(doc.topics),
    };
}

// readTables(doc, base) -> [{name, records, columns [{name, type}], files
// [absolute URL], truncated}]. The file URLs are made absolute against the
// page so DuckDB-WASM can fetch them.
export function readTables(doc, base) {
    return (doc.tables || []).map(t => ({
        name: String(t.name),
        records: num(t.records) || 0,
        columns: (t.columns || []).map(c => ({name: String(c.name), type: String(c.type)})),
        files: (t.files || []).map(f => new URL(f.url, base).href),
        truncated: Boolean(t.files_truncated),
    }));
}
