// pages.mjs — browser test of the dashboard and the SQL explorer against a
// real pipeline: `freshet feed` (synthetic, with duplicates, late and
// malformed events), `ingest`, `process` and `serve`, each its own process
// on loopback ephemeral ports, in a fresh data directory.
//
//   node tests/browser/pages.mjs [--out DIR] [--dwell S] [--readme-shot PNG]
//
// Environment (set by fr_add_script_test): FR_BINARY, FR_SOURCE_DIR,
// FR_BUILD_DIR. Artefacts (screenshots, the stages' logs, requests seen)
// go to --out, default $FR_BUILD_DIR/browser-artifacts.
//
// Checks, in order:
//   1. Offline: Debian's chromium runs headless with flags that keep it
//      from the network; every request not to 127.0.0.1 is aborted and
//      recorded, and any such request fails the test at the end.
//   2. Dashboard: the pushed stream fills the charts (uPlot data, not empty)
//      and they change as events flow: two looks --dwell seconds apart
//      differ in the series, the canvases and the rendered figures; the
//      per-wiki and top-page lists are filled.
//   3. Reconnect: serve is stopped and started again on the same port; the
//      page shows the broken stream, reconnects and draws new updates.
//   4. Explorer: with the processor stopped (the lake no longer moves),
//      presets in DuckDB-WASM give the numbers `freshet verify --json`
//      prints for the same lake: rows of every table, silver rows split by
//      bot/human, late rows, dead letters (and those by reason against the
//      processor's own counters in /api/v1/status).
//   5. Trending topics (issue 9): the processor above runs with enrichment
//      against the feed's API fixture, so the pane fills with Wikidata items,
//      their labels (issue 33: the fixture's, looked up by the processor)
//      and a resolved count. A second serve on a
//      data directory holding only a hand-written stats/topics.json (the
//      values are literals in this file) renders the pane with exactly those
//      values: rank, label, item linked to wikidata.org (a link, never a fetch),
//      number of wikis, top wikis, edits and the enrichment counters; a
//      hostile item and hostile wiki names are shown as text (no element,
//      no script, no link); a malformed file gives the empty state (and
//      serve counts it), a file with "top": null the no-window state.
//   6. The scale-out mode (ADR 0042): a second data directory with a
//      2-partition log, shards 0 and 1 and the finalizer (each its own stats
//      file) and a serve on it. The members table lists both shards and the
//      finalizer up with epochs, records and freshness, the charts are fed
//      by the group's totals (throughput and freshness have values), the
//      API's silver total is its members' sum, the per-wiki and top-page
//      lists come from the finalizer's open windows; SIGKILL shard 1
//      and its row turns "down" while the others stay "up"
//      (dashboard-group.png, dashboard-group-down.png).
//   7. Every stage exits with status 0 when stopped.
// --readme-shot also writes the dashboard's screenshot there (docs/img/).
//
// Exit 0 pass, 1 fail, 77 skip (no chromium, no node_modules, no web/vendor).
import {execFile} from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {fileURLToPath} from 'node:url';
import {promisify} from 'node:util';
import {
    check, fail, failures, launchOffline, log, skipUnlessReady, sleep, stageRunner, waitFor,
} from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const source = process.env.FR_SOURCE_DIR || path.resolve(here, '../..');
const binary = process.env.FR_BINARY || path.join(source, 'build/release/freshet');

// ---------------------------------------------------------------- args

const args = {out: null, dwell: 4, readmeShot: null};
for (let i = 2; i < process.argv.length; i++) {
    const a = process.argv[i];
    const v = process.argv[i + 1];
    if (a === '--out') {
        args.out = v;
    } else if (a === '--dwell') {
        args.dwell = Number(v);
    } else if (a === '--readme-shot') {
        args.readmeShot = path.resolve(v);
    } else {
        console.error(`usage: pages.mjs [--out DIR] [--dwell S] [--readme-shot PNG] (not "${a}")`);
        process.exit(2);
    }
    i++;
}
const buildDir = process.env.FR_BUILD_DIR || path.join(source, 'build/release');
const out = path.resolve(args.out || path.join(buildDir, 'browser-artifacts'));

skipUnlessReady(here, {
    source, vendor: ['web/vendor/uplot/uPlot.esm.js', 'web/vendor/duckdb/duckdb-browser.mjs'], binary,
});
// ------------------------------------------------------------- helpers

fs.mkdirSync(out, {recursive: true});
for (const f of fs.readdirSync(out)) {
    fs.rmSync(path.join(out, f), {recursive: true, force: true});
}
const data = fs.mkdtempSync(path.join(out, 'data-'));

// The stages. Each is a child process of this script, stopped by its pid.
const {stages, startStage, stopStage, listening} = stageRunner(binary, out, data);

async function getJSON(url) {
    const res = await fetch(url, {cache: 'no-store'});
    if (!res.ok) {
        throw new Error(`${url}: HTTP ${res.status}`);
    }
    return res.json();
}

const execFileP = promisify(execFile);

async function verifyJson() {
    try {
        const {stdout} = await execFileP(binary, ['--data', data, 'verify', '--json'], {maxBuffer: 1 << 24});
        return JSON.parse(stdout);
    } catch (err) {
        if (err.stdout) {
            return JSON.parse(err.stdout);  // exit 1: a check failed; the document says which
        }
        throw new Error(`freshet verify --json gave no document (exit ${err.code}): ${String(err.stderr).trim()}`);
    }
}

// ---------------------------------------------------------------- run

let ctx = null;
let offBox = [];
let seen = {loopback: 0};
let serveAddr = null;

async function main() {
    // 1. The pipeline.
    startStage('feed', ['feed', '--listen', '127.0.0.1:0', '--synthetic', '--rate', '150', '--seed', '11',
                        '--dup-rate', '0.03', '--late-rate', '0.02', '--malformed-rate', '0.01',
                        '--malformed-kinds', 'truncated,missing_meta_id,type_invalid,bot_string']);
    const feedUrl = await listening('feed');
    startStage('ingest', ['ingest', '--source', feedUrl.href]);
    // With enrichment against the feed's own MediaWiki-API fixture.
    startStage('process', ['--set', 'enrich.enabled=1', '--set',
                           `enrich.api_url=http://127.0.0.1:${feedUrl.port}/api/{wiki}/w/api.php`, 'process']);
    startStage('serve', ['serve', '--listen', '127.0.0.1:0']);
    serveAddr = await listening('serve');
    const base = `http://127.0.0.1:${serveAddr.port}/`;
    log(`serve at ${base}`);
    await waitFor('the first epoch in /api/v1/status', async () => {
        const s = await getJSON(`${base}api/v1/status`);
        const rec = s.stages.process.metrics.process_records_total;
        return rec && rec.silver > 0;
    }, 60000, 500);

    // 2. The browser, kept offline.
    const browser = await launchOffline(out);
    ({ctx, offBox, seen} = browser);
    const {page, errors: consoleErrors} = browser;
    page.on('console', m => {
        if (m.type() === 'error') {
            consoleErrors.push(`console: ${m.text()}`);
        }
    });

    await dashboard(page, base);
    await reconnect(page, base);
    await explorer(page, base);
    await topics(page);
    await group(page, feedUrl);

    const errs = consoleErrors.filter(e => !/Failed to load resource|net::ERR_CONNECTION_REFUSED|EventSource/.test(e));
    check(errs.length === 0, 'no script errors on the pages', errs.slice(0, 5));
}

// A look at the dashboard: history, the charts' data and pixels, the
// rendered figures and lists.
async function look(page) {
    return page.evaluate(() => {
        const d = window.freshetDashboard;
        const hash = s => {
            let h = 2166136261;
            for (let i = 0; i < s.length; i++) {
                h = Math.imul(h ^ s.charCodeAt(i), 16777619) >>> 0;
            }
            return h;
        };
        const text = sel => document.querySelector(sel).textContent.trim();
        const charts = {};
        for (const [name, u] of Object.entries(d.charts)) {
            charts[name] = {
                points: u.data[0].length,
                nonNull: u.data.slice(1).map(s => s.filter(v => v !== null && v !== undefined).length),
                last: u.data.slice(1).map(s => s[s.length - 1] ?? null),
                pixels: hash(u.ctx.canvas.toDataURL()),
            };
        }
        return {
            updates: {...d.state.updates},
            lastT: d.history.t[d.history.t.length - 1] ?? null,
            conn: document.querySelector('#conn').dataset.state,
            charts,
            figures: Object.fromEntries([...document.querySelectorAll('[data-figure]')]
                .map(e => [e.dataset.figure, e.textContent.trim()])),
            wikis: [...document.querySelectorAll('#wikis li[data-wiki]')].map(li => li.textContent.trim()),
            pages: [...document.querySelectorAll('#pages li[data-rank]')].map(li => li.textContent.trim()),
            topicsEmpty: document.querySelector('#topics li.empty')?.textContent.trim() ?? null,
            topicItems: [...document.querySelectorAll('#topics li[data-rank] .item .qid')].map(e => e.textContent.trim()),
            topicLabels: [...document.querySelectorAll('#topics li[data-rank] .item')]
                .map(e => e.querySelector('.label')?.textContent ?? null),
            topicCounts: Object.fromEntries([...document.querySelectorAll('[data-topic-count]')]
                .map(e => [e.dataset.topicCount, e.textContent.trim()])),
            updated: text('#updated'),
        };
    });
}

async function dashboard(page, base) {
    log('dashboard: open');
    await page.goto(base, {waitUntil: 'load'});
    await waitFor('three pushed status updates and a live view', () => page.evaluate(() => {
        const d = window.freshetDashboard;
        return d && d.state.updates.status >= 3 && d.state.last.live && d.state.last.live.wikis.length > 0 &&
            d.state.last.live.pages.length > 0;
    }), 30000);
    const a = await look(page);
    await page.screenshot({path: path.join(out, 'dashboard-1.png'), fullPage: true});
    await sleep(args.dwell * 1000);
    await waitFor('more updates', async () => (await look(page)).updates.status >= a.updates.status + 2, 15000);
    await waitFor('trending topics from the pipeline', async () => (await look(page)).topicItems.length > 0, 30000);
    const b = await look(page);
    await page.screenshot({path: path.join(out, 'dashboard-2.png'), fullPage: true});
    fs.writeFileSync(path.join(out, 'dashboard-looks.json'), JSON.stringify({a, b}, null, 2));

    check(b.conn === 'live', 'the stream is connected (pill "live")', b.conn);
    for (const name of ['freshness', 'throughput', 'batch', 'quality']) {
        check(a.charts[name].points >= 2, `chart ${name} has points at the first look`, a.charts[name]);
        check(b.charts[name].points > a.charts[name].points, `chart ${name} grew between the looks`,
              [a.charts[name].points, b.charts[name].points]);
        check(b.charts[name].pixels !== a.charts[name].pixels, `chart ${name} was redrawn with new data`);
    }
    check(b.charts.freshness.nonNull[0] > 0 && b.charts.freshness.last[0] !== null,
          'freshness has values', b.charts.freshness);
    check(b.charts.freshness.last[1] === 120, 'the freshness chart carries the 120 s SLO line', b.charts.freshness.last);
    check(b.charts.throughput.last[0] > 0 && b.charts.throughput.last[1] > 0,
          'throughput: events received and records processed per second are positive', b.charts.throughput.last);
    check(b.charts.batch.last[0] > 0 && b.charts.batch.last[1] === 1000,
          'batch duration is drawn against the 1000 ms trigger', b.charts.batch.last);
    check(b.charts.hist.points > 0 && b.charts.hist.nonNull[0] > 0, 'the batch-duration histogram has buckets', b.charts.hist);
    check(b.lastT > a.lastT, 'the time axis moved on', [a.lastT, b.lastT]);
    check(a.figures.events !== b.figures.events && a.figures.silver !== b.figures.silver,
          'rendered figures changed (events received, silver rows)',
          [a.figures.events, b.figures.events, a.figures.silver, b.figures.silver]);
    const n = s => Number(String(s).replace(/[^0-9.]/g, ''));
    check(n(b.figures.events) > n(a.figures.events), 'events received grew', [a.figures.events, b.figures.events]);
    check(/^[0-9.]+ s$/.test(b.figures.freshness) && n(b.figures.freshness) < 120,
          'freshness is shown and within the SLO', b.figures.freshness);
    check(n(b.figures.duplicates) > 0 && n(b.figures.late) > 0 && n(b.figures.dlq) > 0,
          'duplicates, late and dead letters are counted', [b.figures.duplicates, b.figures.late, b.figures.dlq]);
    check(b.figures['ingest-up'] === 'up' && b.figures['process-up'] === 'up', 'both stages shown up');
    check(b.wikis.length > 0, 'edits per wiki is filled', b.wikis.length);
    check(await page.evaluate(() => document.querySelector('#members-card').hidden),
          'one processor: no members table');
    check(b.pages.length > 0, 'top pages is filled', b.pages.length);
    check(JSON.stringify(a.wikis) !== JSON.stringify(b.wikis), 'edits per wiki changed between the looks');
    check(b.topicItems.length > 0 && b.topicItems.every(t => /^Q[0-9]+$/.test(t)),
          'trending topics: filled with Wikidata items from the pipeline\'s lookups', b.topicItems);
    check(n(b.topicCounts.resolved) > 0, 'trending topics: resolved lookups are counted', b.topicCounts);
    check(n(b.topicCounts.labelled) > 0 && n(b.topicCounts.labelled) <= n(b.topicCounts.resolved),
          'trending topics: labelled edits are counted (some of the resolved)', b.topicCounts);
    check(b.topicLabels.some(l => l !== null && l.trim() !== ''),
          'trending topics: labels looked up by the pipeline are shown beside the items', b.topicLabels);

    if (args.readmeShot) {
        fs.mkdirSync(path.dirname(args.readmeShot), {recursive: true});
        await page.screenshot({path: args.readmeShot, fullPage: true});
        log(`wrote ${args.readmeShot}`);
    }
}

async function reconnect(page, base) {
    log('reconnect: stop serve');
    const before = (await look(page)).updates.status;
    await stopStage('serve', 'SIGTERM');
    await waitFor('the page to notice the broken stream', async () => (await look(page)).conn !== 'live', 15000);
    const down = await look(page);
    check(down.conn !== 'live', 'the pill leaves "live" when serve is gone', down.conn);
    startStage('serve2', ['serve', '--listen', `127.0.0.1:${serveAddr.port}`]);
    await listening('serve2');
    await waitFor('the page to reconnect and draw new updates', async () => {
        const l = await look(page);
        return l.conn === 'live' && l.updates.status > down.updates.status + 1;
    }, 40000, 250);
    const up = await look(page);
    check(up.conn === 'live' && up.updates.status > before, 'the dashboard reconnected by itself and kept updating',
          [before, down.updates.status, up.updates.status]);
    await page.screenshot({path: path.join(out, 'dashboard-reconnected.png'), fullPage: true});
}

// The result table on the explorer page, as rows of cell texts.
async function resultRows(page) {
    return page.evaluate(() => {
        const heads = [...document.querySelectorAll('#result thead th')].map(th => th.firstChild.textContent);
        const rows = [...document.querySelectorAll('#result tbody tr')]
            .filter(tr => !tr.querySelector('td.null[colspan]'))
            .map(tr => Object.fromEntries([...tr.cells].map((td, i) => [heads[i], td.textContent])));
        return rows;
    });
}

async function runPreset(page, id) {
    const n0 = await page.evaluate(() => window.freshetExplorer.state.queries);
    await page.click(`[data-preset="${id}"]`);
    await waitFor(`preset ${id}`, () => page.evaluate(
        n => window.freshetExplorer.state.queries > n || !document.querySelector('#error').hidden, n0), 60000);
    const err = await page.evaluate(() => (document.querySelector('#error').hidden ? null : document.querySelector('#error').textContent));
    if (err) {
        throw new Error(`preset ${id}: ${err}`);
    }
    await page.screenshot({path: path.join(out, `explorer-${id}.png`), fullPage: true});
    return resultRows(page);
}

const int = s => Number(String(s).replace(/,/g, ''));

async function explorer(page, base) {
    // Freeze the lake: the processor stops after its epoch; the table list,
    // the files and verify's cut are then the same.
    await stopStage('process', 'SIGINT');
    const status = await getJSON(`${base}api/v1/status`);
    const v = await verifyJson();
    fs.writeFileSync(path.join(out, 'verify.json'), JSON.stringify(v, null, 2));
    check(v.ok === true, 'freshet verify passes on the lake the pages read', v.checks.filter(c => c.status !== 'PASS'));
    const rows = Object.fromEntries(v.cut.tables.map(t => [t.name, t.rows]));
    log(`verify: ${JSON.stringify(rows)}`);

    log('explorer: open');
    await page.goto(`${base}explorer`, {waitUntil: 'load'});
    await page.evaluate(() => window.freshetExplorer.ready);

    const counts = await runPreset(page, 'row-counts');
    const got = Object.fromEntries(counts.map(r => [r.table_name, int(r.row_count)]));
    check(Object.keys(rows).length >= 6 && Object.keys(rows).every(t => got[t] === rows[t]),
          'Rows per table: every table as verify counts it', {explorer: got, verify: rows});

    const bots = await runPreset(page, 'bot-vs-human');
    const botSum = bots.reduce((s, r) => s + int(r.events), 0);
    check(botSum === rows.silver_recentchange && bots.length >= 2,
          'Bots against humans: the split adds up to verify\'s silver rows', {bots, silver: rows.silver_recentchange});

    const late = await runPreset(page, 'late-arrivals');
    const lateSum = late.reduce((s, r) => s + int(r.late_events), 0);
    check(lateSum === rows.late_arrivals && lateSum > 0, 'Late arrivals: as many as verify counts', [lateSum, rows.late_arrivals]);

    const dlq = await runPreset(page, 'dlq-reasons');
    const dlqGot = Object.fromEntries(dlq.map(r => [r.reason, int(r.records)]));
    const dlqSum = Object.values(dlqGot).reduce((s, x) => s + x, 0);
    check(dlqSum === rows.dlq && dlqSum > 0, 'Dead letters by reason: as many as verify counts', [dlqSum, rows.dlq]);
    const counters = Object.fromEntries(Object.entries(status.stages.process.metrics.process_dlq_records_total || {})
        .filter(([, x]) => x > 0));
    check(JSON.stringify(Object.entries(dlqGot).sort()) === JSON.stringify(Object.entries(counters).sort()),
          'Dead letters by reason: the processor\'s counters per reason', {explorer: dlqGot, status: counters});

    const wikis = await runPreset(page, 'top-wikis');
    check(wikis.length > 0 && int(wikis[0].events) >= int(wikis[wikis.length - 1].events),
          'Top wikis: rows, most events first', wikis.slice(0, 3));
    const pages = await runPreset(page, 'top-pages');
    check(pages.length > 0, 'Top pages: rows', pages.length);
    // Leave the explorer on a readable result for the last screenshot.
    await runPreset(page, 'top-wikis');
}

// ------------------------------------------------------ trending topics

// Hand-written stats/topics.json documents (the processor's contract,
// docs/ENRICH.md "On the dashboard"). The second topic is hostile: its item
// and wiki names would inject markup and script if the page used them as
// HTML, and the fourth's item would be a javascript: link if linked.
const HOSTILE_ITEM = 'Q7"><img src=x onerror="window.__pwned=1">';
const HOSTILE_WIKI = '<script>window.__pwned=2</script>';
const HOSTILE_LABEL = '<img src=y onerror="window.__pwned=3">';
const TOPICS_GOOD = {
    updated_ms: 1764621000000, epoch: 12, frontier_ms: 1764620400000,
    counts: {submitted: 100, resolved: 80, no_item: 15, failed: 2, backlog: 0, pending: 3,
             cache_hits: 40, cache_misses: 60, requests: 5, labelled: 70},
    top: {start_ms: 1764620400000, end_ms: 1764621000000, topics: [
        {rank: 1, item: 'Q42', label: 'Douglas Adams', edits: 12, wikis: 3,
         top_wikis: [{wiki: 'enwiki', edits: 7}, {wiki: 'frwiki', edits: 3}, {wiki: 'plwiki', edits: 2}]},
        {rank: 2, item: HOSTILE_ITEM, label: HOSTILE_LABEL, edits: 9, wikis: 2,
         top_wikis: [{wiki: HOSTILE_WIKI, edits: 5}, {wiki: 'dewiki & <b>x</b>', edits: 4}]},
        {rank: 3, item: 'Q1', label: null, edits: 1, wikis: 1, top_wikis: [{wiki: 'enwiki', edits: 1}]},
        {rank: 4, item: 'javascript:alert(1)', label: 'Städte', edits: 1, wikis: 1, top_wikis: [{wiki: 'svwiki', edits: 1}]},
    ]},
};
// What the pane must show for TOPICS_GOOD, row by row (written out, not
// derived from the document above).
const TOPICS_WANT = [
    {rank: '1', label: 'Douglas Adams', qid: 'Q42', item: 'Douglas Adams Q42',
     href: 'https://www.wikidata.org/wiki/Q42', nwikis: '3 wikis', edits: '12',
     topWikis: 'enwiki 7 · frwiki 3 · plwiki 2'},
    {rank: '2', label: '<img src=y onerror="window.__pwned=3">', qid: 'Q7"><img src=x onerror="window.__pwned=1">',
     item: '<img src=y onerror="window.__pwned=3"> Q7"><img src=x onerror="window.__pwned=1">',
     href: null, nwikis: '2 wikis', edits: '9',
     topWikis: '<script>window.__pwned=2</script> 5 · dewiki & <b>x</b> 4'},
    {rank: '3', label: null, qid: 'Q1', item: 'Q1', href: 'https://www.wikidata.org/wiki/Q1', nwikis: '1 wiki',
     edits: '1', topWikis: 'enwiki 1'},
    {rank: '4', label: 'Städte', qid: 'javascript:alert(1)', item: 'Städte javascript:alert(1)', href: null,
     nwikis: '1 wiki', edits: '1', topWikis: 'svwiki 1'},
];
const COUNTS_WANT = {'resolved': '80', 'labelled': '70', 'no-item': '15', 'failed': '2', 'pending': '3',
    'hit-rate': '40.0%'};

// Replace the file the way the processor does (temp + rename), so serve
// never reads half of it.
function writeTopics(dir, text) {
    const file = path.join(dir, 'stats', 'topics.json');
    fs.writeFileSync(`${file}.tmp`, text);
    fs.renameSync(`${file}.tmp`, file);
}

async function topicsLook(page) {
    return page.evaluate(() => {
        const card = document.querySelector('#topics-card');
        return {
            updates: window.freshetDashboard.state.updates.live,
            note: document.querySelector('#topics-note').textContent.trim(),
            empty: card.querySelector('#topics li.empty')?.textContent.trim() ?? null,
            rows: [...card.querySelectorAll('#topics li[data-rank]')].map(li => {
                const a = li.querySelector('.item a');
                return {
                    rank: li.dataset.rank,
                    item: li.querySelector('.item').textContent,
                    label: li.querySelector('.item .label')?.textContent ?? null,
                    qid: li.querySelector('.item .qid')?.textContent ?? null,
                    href: a ? a.getAttribute('href') : null,
                    rel: a ? a.rel : null,
                    nwikis: li.querySelector('.nwikis').textContent,
                    edits: li.querySelector('.num').textContent,
                    topWikis: li.querySelector('.top-wikis').textContent,
                };
            }),
            counts: Object.fromEntries([...card.querySelectorAll('[data-topic-count]')]
                .map(e => [e.dataset.topicCount, e.textContent.trim()])),
            injected: card.querySelectorAll('img, script, b, iframe').length,
            links: [...card.querySelectorAll('a')].map(a => a.getAttribute('href')),
            pwned: window.__pwned ?? null,
        };
    });
}

async function topics(page) {
    const dir = fs.mkdtempSync(path.join(out, 'data-topics-'));
    fs.mkdirSync(path.join(dir, 'stats'), {recursive: true});
    writeTopics(dir, `${JSON.stringify(TOPICS_GOOD)}\n`);
    startStage('serve-topics', ['serve', '--listen', '127.0.0.1:0'], dir);
    const addr = await listening('serve-topics');
    const base = `http://127.0.0.1:${addr.port}/`;
    log(`topics: serve on a hand-written topics.json at ${base}`);
    await page.goto(base, {waitUntil: 'load'});
    const a = await waitFor('the trending topics pane to fill', async () => {
        const l = await topicsLook(page);
        return l.rows.length ? l : null;
    }, 30000);
    await page.screenshot({path: path.join(out, 'dashboard-topics.png'), fullPage: true});
    fs.writeFileSync(path.join(out, 'topics-look.json'), JSON.stringify(a, null, 2));
    check(a.rows.length === TOPICS_WANT.length, 'trending topics: one row per topic', a.rows.length);
    TOPICS_WANT.forEach((want, i) => {
        const got = a.rows[i] || {};
        check(['rank', 'label', 'qid', 'item', 'href', 'nwikis', 'edits', 'topWikis'].every(k => got[k] === want[k]),
              `trending topics: row ${i + 1} shows ${JSON.stringify(want.item)} as written`, {got, want});
    });
    check(a.rows[0].rel === 'noopener noreferrer external', 'trending topics: the item link opens without opener or referrer',
          a.rows[0].rel);
    check(JSON.stringify(a.counts) === JSON.stringify(COUNTS_WANT), 'trending topics: the enrichment counters as written',
          {got: a.counts, want: COUNTS_WANT});
    check(a.note.includes('20:20–20:30'), 'trending topics: the window 20:20–20:30 UTC is named', a.note);
    check(a.injected === 0 && a.pwned === null, 'trending topics: hostile item, label and wiki names are shown escaped',
          {injected: a.injected, pwned: a.pwned});
    check(a.links.length === 2 && a.links.every(h => h.startsWith('https://www.wikidata.org/wiki/Q')),
          'trending topics: only well-formed items are links, all to wikidata.org', a.links);

    // A malformed file: the empty state, and serve counts the refusal.
    writeTopics(dir, '{"counts":{"resolved":');
    const b = await waitFor('the pane to show the empty state', async () => {
        const l = await topicsLook(page);
        return l.updates > a.updates && l.empty !== null ? l : null;
    }, 15000);
    check(/enrichment is off/.test(b.empty) && b.rows.length === 0 && b.counts.resolved === '—',
          'trending topics: a malformed topics.json gives the empty state', b);
    const metrics = await (await fetch(`${base}metrics`)).text();
    const refused = Number((/^freshet_serve_topics_unreadable_total (\S+)$/m.exec(metrics) || [])[1]);
    check(refused >= 1, 'serve counted the malformed topics.json', refused);

    // No open window yet: "top" is null; the counters still show.
    writeTopics(dir, JSON.stringify({updated_ms: 1764621060000, epoch: 13, frontier_ms: 1764620460000,
        counts: {submitted: 101, resolved: 81, no_item: 15, failed: 0, backlog: 0, pending: 5,
                 cache_hits: 0, cache_misses: 0, requests: 6}, top: null}));
    const c = await waitFor('the pane to show the counters without topics', async () => {
        const l = await topicsLook(page);
        return l.counts.resolved === '81' ? l : null;
    }, 15000);
    check(c.rows.length === 0 && /no resolved edits/.test(c.empty ?? '') && c.counts.pending === '5' &&
          c.counts.failed === '0' && c.counts['hit-rate'] === '—',
          'trending topics: "top": null shows the counters and the no-window state', c);
    await stopStage('serve-topics', 'SIGINT');
}

// The members table and the figures the page shows in the group mode.
async function groupLook(page) {
    return page.evaluate(() => {
        const d = window.freshetDashboard;
        const card = document.querySelector('#members-card');
        const rows = [...document.querySelectorAll('#members tbody tr')].map(tr => {
            const td = [...tr.querySelectorAll('td')].map(c => c.textContent.trim());
            return {member: tr.dataset.member, partition: td[0], role: td[1], instance: td[2], state: td[3],
                    epochs: td[4], records: td[5], freshness: td[6], heartbeat: td[7]};
        });
        const last = name => {
            const u = d.charts[name];
            return {points: u.data[0].length, last: u.data.slice(1).map(s => s[s.length - 1] ?? null)};
        };
        return {
            shown: !card.hidden && card.getBoundingClientRect().height > 0,
            note: document.querySelector('#members-note').textContent.trim(),
            rows,
            updates: d.state.updates.status,
            processUp: document.querySelector('[data-figure="process-up"]').textContent.trim(),
            silver: document.querySelector('[data-figure="silver"]').textContent.trim(),
            epochs: document.querySelector('[data-figure="epochs"]').textContent.trim(),
            freshness: document.querySelector('[data-figure="freshness"]').textContent.trim(),
            throughput: last('throughput'),
            wikis: [...document.querySelectorAll('#wikis li[data-wiki]')].length,
            pages: [...document.querySelectorAll('#pages li[data-rank]')].length,
            fresh: last('freshness'),
            batch: last('batch'),
        };
    });
}

async function group(page, feedUrl) {
    const dir = fs.mkdtempSync(path.join(out, 'data-group-'));
    const set = ['--set', 'log.partitions=2', '--set', 'process.trigger_ms=500'];
    startStage('group-ingest', [...set, 'ingest', '--source', feedUrl.href], dir);
    startStage('group-shard0', [...set, 'process', '--partition', '0', '--instance', 'host-a:7'], dir);
    startStage('group-shard1', [...set, 'process', '--partition', '1', '--instance', 'host-b:8'], dir);
    startStage('group-final', [...set, 'process', '--finalize', '--instance', 'host-a:7'], dir);
    startStage('group-serve', ['serve', '--listen', '127.0.0.1:0'], dir);
    const addr = await listening('group-serve');
    const base = `http://127.0.0.1:${addr.port}/`;
    log(`group: serve on shards 0, 1 and the finalizer at ${base}`);
    await page.goto(base, {waitUntil: 'load'});
    const n = s => Number(String(s).replace(/[^0-9.]/g, ''));
    const a = await waitFor('the members table with three members up and epochs', async () => {
        const l = await groupLook(page);
        // the finalizer publishes its freshness with its first gold-bearing
        // epoch, which may come a trigger after its first epoch
        return l.rows.length === 3 && l.rows.every(r => r.state === 'up' && n(r.epochs) > 0) &&
            l.rows.every(r => /^[0-9.]+ s$/.test(r.freshness)) &&
            l.rows.filter(r => r.role === 'shard').every(r => n(r.records) > 0) &&
            l.throughput.points >= 3 && l.throughput.last[1] > 0 ? l : null;
    }, 60000);
    await page.screenshot({path: path.join(out, 'dashboard-group.png'), fullPage: true});
    fs.writeFileSync(path.join(out, 'group-look.json'), JSON.stringify(a, null, 2));
    check(a.shown, 'group: the members card is shown', a.note);
    check(JSON.stringify(a.rows.map(r => [r.member, r.role, r.instance])) ===
          JSON.stringify([['p0', 'shard', 'host-a:7'], ['p1', 'shard', 'host-b:8'], ['finalizer', 'finalizer', 'host-a:7']]),
          'group: one row per shard and the finalizer, with role and instance', a.rows);
    check(a.rows.every(r => /^[0-9.]+ s$/.test(r.freshness)), 'group: every member shows its freshness', a.rows);
    check(a.processUp === 'up' && /^3 of 3 up/.test(a.note), 'group: the process stage and all members up', [a.processUp, a.note]);
    check(a.throughput.last[1] > 0 && a.fresh.last[0] !== null && a.batch.last[0] > 0,
          'group: the charts are fed by the group (records/s, freshness, batch duration)', [a.throughput, a.fresh, a.batch]);
    // The page's totals against the members' rows and the API's members.
    const s = await getJSON(`${base}api/v1/status`);
    const ms = s.stages.process.members;
    const silverSum = ms.reduce((t, m) => t + (m.metrics.process_records_total?.silver ?? 0), 0);
    check(s.stages.process.group === true && silverSum === s.stages.process.metrics.process_records_total.silver,
          'group: the API\'s silver total is the sum of its members\'', [silverSum, s.stages.process.metrics.process_records_total.silver]);
    check(n(a.epochs) > 0 && n(a.silver) > 0, 'group: the epochs and silver figures show totals', [a.epochs, a.silver]);
    const v = await waitFor('the finalizer\'s live view (edits per wiki, top pages)', async () => {
        const l = await groupLook(page);
        return l.wikis > 0 && l.pages > 0 ? l : null;
    }, 30000);
    check(v.wikis > 0 && v.pages > 0, 'group: edits per wiki and top pages drawn from the finalizer\'s view', [v.wikis, v.pages]);

    // A member down: its row says so, the others stay up.
    const shard1 = stages.get('group-shard1');
    shard1.child.kill('SIGKILL');
    await waitFor('shard 1 to die', () => shard1.exited, 10000, 50);
    stages.delete('group-shard1');  // killed on purpose: not a failed exit
    const b = await waitFor('shard 1 shown down', async () => {
        const l = await groupLook(page);
        const r = l.rows.find(x => x.member === 'p1');
        return r && r.state === 'down' ? l : null;
    }, 30000);
    await page.screenshot({path: path.join(out, 'dashboard-group-down.png'), fullPage: true});
    check(b.rows.find(r => r.member === 'p0').state === 'up' && b.rows.find(r => r.member === 'finalizer').state === 'up',
          'group: after SIGKILL of shard 1 the others stay up', b.rows);
    check(b.processUp === 'down' && /^2 of 3 up/.test(b.note), 'group: the process stage shows down with a member down',
          [b.processUp, b.note]);
    for (const name of ['group-serve', 'group-final', 'group-shard0', 'group-ingest']) {
        await stopStage(name, 'SIGINT');
    }
}

let code = 0;
try {
    await main();
} catch (err) {
    fail(`${err.stack || err}`);
} finally {
    if (ctx) {
        await ctx.close().catch(() => {});
    }
    for (const name of [...stages.keys()].reverse()) {
        await stopStage(name, 'SIGINT').catch(err => log(`stopping ${name}: ${err.message}`));
    }
    // Every stage stops cleanly on SIGINT/SIGTERM with status 0; anything
    // else (a crash, a sanitizer report) is a failure.
    for (const [name, st] of stages) {
        check(st.exited && st.exited.code === 0, `${name} exited with status 0`, st.exited);
    }
    fs.writeFileSync(path.join(out, 'requests.json'), JSON.stringify({loopback: seen.loopback, offBox}, null, 2));
    check(offBox.length === 0, `no request left 127.0.0.1 (${seen.loopback} loopback requests)`, offBox.slice(0, 10));
    code = failures() ? 1 : 0;
    if (!failures()) {
        for (const f of fs.readdirSync(out)) {
            if (f.startsWith('data-') || f.startsWith('profile-')) {
                fs.rmSync(path.join(out, f), {recursive: true, force: true});
            }
        }
    }
    log(failures() ? `${failures()} check(s) failed; artefacts in ${out}` : `pass; screenshots in ${out}`);
}
process.exit(code);
