// explorer.js — the SQL explorer (web/explorer.html).
//
// Start-up: instantiate DuckDB-WASM from web/vendor/duckdb (the bundle the
// browser supports: eh with WebAssembly exceptions, else mvp), switch off
// extension auto-install (nothing may leave freshet's server), then read
// /api/v1/tables and create one view per table:
//
//     CREATE OR REPLACE VIEW <table> AS SELECT * FROM read_parquet([<urls>])
//
// over the table's live data files under /lake/. A table with no data file
// yet becomes an empty view with its declared columns, so presets and
// queries over it answer with no rows instead of an error. "Reload the
// table list" repeats this step: the lake grows every epoch, and the views
// only see the files that were live when they were made.
//
// Queries run in DuckDB's worker; results are drawn as a table (at most
// MAX_ROWS rows; the count line says how many there were). A value of a
// column named "item" that is a well-formed Wikidata id (Q42) is drawn as a
// link to its page on wikidata.org (a link only: nothing is fetched).
//
// window.freshetExplorer exposes ready (a promise), run(sql) and the last
// result as plain rows, for the browser console and tests/browser.
//
// Main thread only; one query at a time.
import * as duckdb from './vendor/duckdb/duckdb-browser.mjs';
import {PATHS, getJSON, readTables, wikidataUrl} from './api.js';

const MAX_ROWS = 1000;

// Presets: name, what it answers, SQL. They use only the table names of
// docs/SEMANTICS.md, so they work on any freshet lake.
const PRESETS = [
    {
        id: 'top-wikis',
        label: 'Top wikis',
        sql: `SELECT wiki,
       count(*) AS events,
       count(*) FILTER (WHERE type = 'edit') AS edits,
       count(*) FILTER (WHERE type = 'new') AS new_pages,
       count(*) FILTER (WHERE bot) AS bot_events,
       count(DISTINCT "user") AS users
FROM silver_recentchange
GROUP BY wiki
ORDER BY events DESC, wiki
LIMIT 25`,
    },
    {
        id: 'bot-vs-human',
        label: 'Bots against humans',
        sql: `SELECT CASE WHEN bot THEN 'bot' WHEN NOT bot THEN 'human' ELSE 'unknown' END AS actor,
       count(*) AS events,
       count(*) FILTER (WHERE type = 'edit') AS edits,
       count(DISTINCT "user") AS users,
       round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS pct_of_events
FROM silver_recentchange
GROUP BY actor
ORDER BY events DESC`,
    },
    {
        id: 'top-pages',
        label: 'Top pages',
        sql: `SELECT wiki, title, count(*) AS edits
FROM silver_recentchange
WHERE type IN ('edit', 'new')
GROUP BY wiki, title
ORDER BY edits DESC, wiki, title
LIMIT 20`,
    },
    {
        id: 'late-arrivals',
        label: 'Late arrivals',
        sql: `SELECT wiki,
       count(*) AS late_events,
       round(avg(lateness_ms) / 1000, 1) AS avg_lateness_s,
       round(max(lateness_ms) / 1000, 1) AS max_lateness_s,
       min(event_time) AS oldest_event
FROM late_arrivals
GROUP BY wiki
ORDER BY late_events DESC, wiki`,
    },
    {
        id: 'dlq-reasons',
        label: 'Dead letters by reason',
        sql: `SELECT reason,
       count(*) AS records,
       min(ingest_time) AS first_seen,
       max(ingest_time) AS last_seen,
       first(detail) AS example
FROM dlq
GROUP BY reason
ORDER BY records DESC, reason`,
    },
    {
        id: 'edits-per-minute',
        label: 'Settled minutes (gold)',
        sql: `SELECT window_start,
       sum(events) AS events,
       sum(edits) AS edits,
       sum(bot_events) AS bot_events,
       sum(bytes_added) AS bytes_added,
       count(*) AS wikis
FROM gold_edits_per_minute
GROUP BY window_start
ORDER BY window_start DESC
LIMIT 30`,
    },
    {
        id: 'trending-topics',
        label: 'Trending topics (gold)',
        sql: `SELECT window_end, rank, label, item, edits, wikis, top_wikis
FROM gold_top_topics
WHERE window_end = (SELECT max(window_end) FROM gold_top_topics)
ORDER BY rank`,
    },
    {
        id: 'row-counts',
        label: 'Rows per table',
        sql: null,  // built from the table list: see rowCountsSql()
    },
];

const $ = sel => document.querySelector(sel);
let db = null;
let conn = null;
let tables = [];
let busy = false;
const state = {lastRows: null, lastColumns: null, queries: 0};

// -------------------------------------------------------------- engine

async function startEngine() {
    const base = new URL('./vendor/duckdb/', location.href).href;
    const bundle = await duckdb.selectBundle({
        mvp: {mainModule: `${base}duckdb-mvp.wasm`, mainWorker: `${base}duckdb-browser-mvp.worker.js`},
        eh: {mainModule: `${base}duckdb-eh.wasm`, mainWorker: `${base}duckdb-browser-eh.worker.js`},
    });
    const worker = new Worker(bundle.mainWorker);
    const logger = new duckdb.ConsoleLogger(duckdb.LogLevel.WARNING);
    db = new duckdb.AsyncDuckDB(logger, worker);
    await db.instantiate(bundle.mainModule, bundle.pthreadWorker);
    await db.open({query: {castDecimalToDouble: true}});
    conn = await db.connect();
    // Nothing may be fetched from extensions.duckdb.org.
    for (const s of ['SET autoinstall_known_extensions = false', 'SET autoload_known_extensions = false']) {
        await conn.query(s);
    }
    const v = await conn.query('SELECT version() AS v');
    const which = bundle.mainModule.endsWith('eh.wasm') ? 'eh' : 'mvp';
    $('#engine').textContent = `DuckDB ${v.getChildAt(0).get(0)} (duckdb-wasm ${duckdb.PACKAGE_VERSION}, ${which} bundle) in a Web Worker`;
}

function quoteIdent(s) {
    return `"${s.replaceAll('"', '""')}"`;
}

function quoteStr(s) {
    return `'${s.replaceAll("'", "''")}'`;
}

// Iceberg primitive types (docs/ENGINES.md) to DuckDB types, for the
// empty views of tables that have no data file yet.
const ICEBERG_TYPES = {
    boolean: 'BOOLEAN', int: 'INTEGER', long: 'BIGINT', float: 'FLOAT', double: 'DOUBLE',
    date: 'DATE', time: 'TIME', timestamp: 'TIMESTAMP', timestamptz: 'TIMESTAMPTZ',
    string: 'VARCHAR', uuid: 'UUID', binary: 'BLOB',
};

function duckType(t) {
    const k = String(t).toLowerCase();
    if (ICEBERG_TYPES[k]) {
        return ICEBERG_TYPES[k];
    }
    const dec = /^decimal\((\d+),\s*(\d+)\)$/.exec(k);
    return dec ? `DECIMAL(${dec[1]}, ${dec[2]})` : 'VARCHAR';
}

function viewSql(t) {
    if (t.files.length) {
        const list = t.files.map(quoteStr).join(', ');
        return `CREATE OR REPLACE VIEW ${quoteIdent(t.name)} AS SELECT * FROM read_parquet([${list}])`;
    }
    const cols = t.columns.map(c => `CAST(NULL AS ${duckType(c.type)}) AS ${quoteIdent(c.name)}`);
    return `CREATE OR REPLACE VIEW ${quoteIdent(t.name)} AS SELECT ${cols.join(', ')} WHERE false`;
}

async function loadTables() {
    const doc = await getJSON(PATHS.tables);
    const next = readTables(doc, location.href);
    for (const t of next) {
        if (!t.files.length && !t.columns.length) {
            continue;  // nothing to make a view of
        }
        await conn.query(viewSql(t));
    }
    tables = next;
    drawTables();
}

function rowCountsSql() {
    const parts = tables
        .filter(t => t.files.length || t.columns.length)
        .map(t => `SELECT ${quoteStr(t.name)} AS table_name, count(*) AS row_count FROM ${quoteIdent(t.name)}`);
    return parts.length ? `${parts.join('\nUNION ALL\n')}\nORDER BY table_name` : "SELECT 'no tables yet' AS note";
}

// ------------------------------------------------------------ results

const intFmt = new Intl.NumberFormat('en-US');

// Plain JavaScript values from an Arrow vector's value (BigInt stays
// exact as a string; timestamps become ISO strings in UTC).
function cellValue(type, v) {
    if (v === null || v === undefined) {
        return null;
    }
    if (typeof v === 'bigint') {
        return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString();
    }
    if (type.typeId === 10) {  // Timestamp: milliseconds
        return new Date(Number(v)).toISOString().replace('T', ' ').replace('.000Z', 'Z');
    }
    if (type.typeId === 8) {  // Date
        return new Date(Number(v)).toISOString().slice(0, 10);
    }
    if (v instanceof Uint8Array) {
        return `<${v.length} bytes>`;
    }
    if (typeof v === 'object') {
        return JSON.stringify(v.toJSON ? v.toJSON() : v, (k, x) => (typeof x === 'bigint' ? x.toString() : x));
    }
    return v;
}

function typeLabel(type) {
    return String(type).replace(/<.*>/, m => (m.length > 24 ? '<…>' : m));
}

function drawResult(table, ms) {
    const fields = table.schema.fields;
    const n = table.numRows;
    const shown = Math.min(n, MAX_ROWS);
    const cols = fields.map((f, i) => ({name: f.name, type: f.type, vec: table.getChildAt(i)}));
    const rows = [];
    for (let r = 0; r < n; r++) {
        rows.push(cols.map(c => cellValue(c.type, c.vec.get(r))));
    }
    state.lastColumns = cols.map(c => c.name);
    state.lastRows = rows;

    const box = $('#result');
    const t = document.createElement('table');
    t.className = 'grid';
    const head = t.createTHead().insertRow();
    for (const c of cols) {
        const th = document.createElement('th');
        th.textContent = c.name;
        const ty = document.createElement('span');
        ty.className = 'type';
        ty.textContent = typeLabel(c.type);
        th.append(ty);
        head.append(th);
    }
    const body = t.createTBody();
    for (let r = 0; r < shown; r++) {
        const tr = body.insertRow();
        rows[r].forEach((v, ci) => {
            const td = tr.insertCell();
            const url = cols[ci].name === 'item' && typeof v === 'string' ? wikidataUrl(v) : null;
            if (url) {
                const a = document.createElement('a');
                a.textContent = v;
                a.href = url;
                a.target = '_blank';
                a.rel = 'noopener noreferrer external';
                a.referrerPolicy = 'no-referrer';
                td.append(a);
            } else if (v === null) {
                td.className = 'null';
                td.textContent = 'NULL';
            } else if (typeof v === 'number') {
                td.className = 'num';
                td.textContent = Number.isInteger(v) ? intFmt.format(v) : String(v);
            } else {
                td.textContent = String(v);
                if (String(v).length > 40) {
                    td.title = String(v);
                }
            }
        });
    }
    if (!n) {
        const td = body.insertRow().insertCell();
        td.colSpan = Math.max(cols.length, 1);
        td.className = 'null';
        td.textContent = 'no rows';
    }
    box.replaceChildren(t);
    box.hidden = false;
    const more = n > shown ? ` (first ${intFmt.format(shown)} shown)` : '';
    $('#run-status').textContent = `${intFmt.format(n)} row${n === 1 ? '' : 's'}${more} in ${Math.round(ms)} ms`;
}

function showError(msg) {
    const e = $('#error');
    e.textContent = msg;
    e.hidden = false;
}

async function run(sql) {
    if (!conn) {
        throw new Error('DuckDB is not ready');
    }
    if (busy) {
        throw new Error('a query is already running');
    }
    busy = true;
    $('#run').disabled = true;
    $('#error').hidden = true;
    $('#run-status').textContent = 'running…';
    const t0 = performance.now();
    try {
        const table = await conn.query(sql);
        state.queries++;
        drawResult(table, performance.now() - t0);
        return {columns: state.lastColumns, rows: state.lastRows};
    } catch (err) {
        state.lastRows = null;
        state.lastColumns = null;
        $('#result').hidden = true;
        $('#run-status').textContent = '';
        showError(String(err.message || err));
        throw err;
    } finally {
        busy = false;
        $('#run').disabled = false;
    }
}

// ---------------------------------------------------------------- page

function drawTables() {
    const ul = $('#tables');
    ul.replaceChildren();
    let files = 0;
    for (const t of tables) {
        files += t.files.length;
        const li = document.createElement('li');
        const b = document.createElement('button');
        b.type = 'button';
        b.dataset.table = t.name;
        const name = document.createElement('span');
        name.className = 'tname';
        name.textContent = t.name;
        const meta = document.createElement('span');
        meta.className = 'tmeta';
        meta.textContent = t.files.length
            ? `${intFmt.format(t.records)} rows · ${intFmt.format(t.files.length)} file${t.files.length === 1 ? '' : 's'}`
            : 'no files yet';
        if (t.truncated) {
            // The API lists at most 10,000 files a table: the view sees
            // only those until `freshet compact` merges them.
            meta.textContent += ' (list truncated: compact the table)';
            meta.title = 'the view reads only the files /api/v1/tables listed';
        }
        b.append(name, meta);
        b.addEventListener('click', () => {
            setSql(`SELECT *\nFROM ${quoteIdent(t.name)}\nLIMIT 100`);
            runFromEditor();
        });
        li.append(b);
        ul.append(li);
    }
    if (!tables.length) {
        ul.innerHTML = '<li class="empty">the lake has no tables yet</li>';
    }
    $('#tables-note').textContent = `${tables.length} tables, ${files} files`;
}

function drawPresets() {
    const box = $('#presets');
    for (const p of PRESETS) {
        const b = document.createElement('button');
        b.type = 'button';
        b.className = 'btn';
        b.dataset.preset = p.id;
        b.textContent = p.label;
        b.addEventListener('click', () => {
            setSql(p.sql || rowCountsSql());
            runFromEditor();
        });
        box.append(b);
    }
}

// The editor grows with its text (up to MAX_EDITOR_LINES lines).
const MAX_EDITOR_LINES = 18;

function setSql(text) {
    const ta = $('#sql');
    ta.value = text;
    ta.rows = Math.min(MAX_EDITOR_LINES, text.split('\n').length + 1);
}

function runFromEditor() {
    run($('#sql').value).catch(() => {});  // the error is on the page
}

async function refresh() {
    $('#refresh').disabled = true;
    try {
        await loadTables();
    } catch (err) {
        showError(`reading the table list: ${err.message || err}`);
    } finally {
        $('#refresh').disabled = false;
    }
}

drawPresets();
$('#run').addEventListener('click', runFromEditor);
$('#refresh').addEventListener('click', refresh);
$('#sql').addEventListener('keydown', e => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        runFromEditor();
    }
});

const ready = (async () => {
    const pill = $('#engine-pill');
    try {
        await startEngine();
        await loadTables();
        pill.className = 'pill pill-ok';
        pill.textContent = 'DuckDB ready';
        $('#run').disabled = false;
    } catch (err) {
        pill.className = 'pill pill-bad';
        pill.textContent = 'DuckDB failed';
        showError(`starting DuckDB-WASM: ${err.message || err}`);
        throw err;
    }
})();

window.freshetExplorer = {
    ready,
    run,
    refresh,
    presets: PRESETS.map(p => p.id),
    presetSql: id => {
        const p = PRESETS.find(x => x.id === id);
        return p ? p.sql || rowCountsSql() : null;
    },
    state,
};
