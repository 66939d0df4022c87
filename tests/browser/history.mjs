// history.mjs — browser test of the dashboard's charts with history (issue
// 33, ADR 0054): a page opened after the pipeline has run a while shows
// serve's past at once, then goes on live. Two real pipelines on loopback
// ephemeral ports, each stage its own process, fed by one `freshet feed`:
//
//   single: ingest, process, serve on one data directory;
//   group:  a 2-partition log, shards 0 and 1 and the finalizer (the
//           scale-out mode, ADR 0042) and a serve on a second one.
//
//   node tests/browser/history.mjs [--out DIR] [--points N]
//
// Checks, for each pipeline:
//   1. serve's /api/v1/history holds at least --points (default 60) points
//      before the page opens (waited for, bounded);
//   2. the page, at the moment its first `event: history` has arrived and
//      before many live updates did, has every time-series chart filled:
//      at least --points x-values, and in every series at least --points - 5
//      values (the first few points of a rate are null by definition), far
//      more than the live updates it received (so the points came from
//      serve, not from the page's own accumulation);
//   3. the page draws serve's numbers: for every time the page took from
//      the history that /api/v1/history (read after) also holds, the
//      freshness, the events rate and the batch duration are the same values;
//   4. the page goes on live: a later look has more points, ending later;
//   5. (group) `freshet status --json` on the group's data directory says
//      group, lists three members up and the same silver total as serve.
// Screenshots: history-single.png, history-group.png in --out.
//
// Environment (set by fr_add_script_test): FR_BINARY, FR_SOURCE_DIR,
// FR_BUILD_DIR. Exit 0 pass, 1 fail, 77 skip (no chromium, node_modules or
// web/vendor).
import {execFile} from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {fileURLToPath} from 'node:url';
import {promisify} from 'node:util';
import {check, fail, failures, launchOffline, log, skipUnlessReady, stageRunner, waitFor} from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const source = process.env.FR_SOURCE_DIR || path.resolve(here, '../..');
const binary = process.env.FR_BINARY || path.join(source, 'build/release/freshet');

const args = {out: null, points: 60};
for (let i = 2; i < process.argv.length; i += 2) {
    const [a, v] = [process.argv[i], process.argv[i + 1]];
    if (a === '--out') {
        args.out = v;
    } else if (a === '--points') {
        args.points = Number(v);
    } else {
        console.error(`usage: history.mjs [--out DIR] [--points N] (not "${a}")`);
        process.exit(2);
    }
}
const buildDir = process.env.FR_BUILD_DIR || path.join(source, 'build/release');
const out = path.resolve(args.out || path.join(buildDir, 'browser-artifacts-history'));

skipUnlessReady(here, {source, vendor: ['web/vendor/uplot/uPlot.esm.js'], binary});

fs.mkdirSync(out, {recursive: true});
for (const f of fs.readdirSync(out)) {
    fs.rmSync(path.join(out, f), {recursive: true, force: true});
}

const {stages, startStage, stopStage, listening} = stageRunner(binary, out);

async function getJSON(url) {
    const res = await fetch(url, {cache: 'no-store'});
    if (!res.ok) {
        throw new Error(`${url}: HTTP ${res.status}`);
    }
    return res.json();
}

// What the page holds right now.
async function pageLook(page) {
    return page.evaluate(() => {
        const d = window.freshetDashboard;
        const charts = {};
        for (const name of ['freshness', 'throughput', 'batch', 'quality']) {
            const u = d.charts[name];
            charts[name] = {
                points: u.data[0].length,
                nonNull: u.data.slice(1).map(s => s.filter(v => v !== null && v !== undefined).length),
            };
        }
        const h = d.history;
        return {
            updates: {...d.state.updates},
            lastHistory: d.state.lastHistory,
            charts,
            t: [...h.t],
            freshness: [...h.freshness],
            ingestRate: [...h.ingestRate],
            batch: [...h.batch],
        };
    });
}

async function historyChecks(page, base, label) {
    const need = args.points;
    await waitFor(`${label}: ${need} points in serve's history with values`, async () => {
        const h = await getJSON(`${base}api/v1/history`);
        const filled = h.records_per_s.filter(v => v !== null && v > 0).length;
        return h.points >= need && filled >= need - 10;
    }, 240000, 1000);
    log(`${label}: open the dashboard`);
    await page.goto(base, {waitUntil: 'load'});
    const a = await waitFor(`${label}: the page's first history event`, async () => {
        const l = await pageLook(page);
        return l.updates.history >= 1 ? l : null;
    }, 30000, 20);
    await page.screenshot({path: path.join(out, `history-${label}.png`), fullPage: true});
    fs.writeFileSync(path.join(out, `history-${label}-look.json`), JSON.stringify(a));
    log(`${label}: ${JSON.stringify({updates: a.updates, charts: a.charts})}`);
    for (const [name, c] of Object.entries(a.charts)) {
        check(c.points >= need && c.nonNull.every(n => n >= need - 5),
              `${label}: the ${name} chart has ${need}+ points of history at once (every series)`, c);
        check(c.points >= a.updates.status + need - 5,
              `${label}: the ${name} chart's points came from serve, not the page's ${a.updates.status} live updates`,
              [c.points, a.updates.status]);
    }
    // The page draws serve's figures.
    const h = await getJSON(`${base}api/v1/history`);
    const at = new Map(h.t_ms.map((t, i) => [t / 1000, i]));
    let same = 0;
    const diff = [];
    // Only the points that came in the history: a live point the page
    // drew itself may share a millisecond with one of serve's, with the
    // page's own unrounded freshness.
    a.t.forEach((t, i) => {
        const j = at.get(t);
        if (j === undefined || t > a.lastHistory.last) {
            return;
        }
        const pairs = [[a.freshness[i], h.freshness_s[j]], [a.ingestRate[i], h.events_per_s[j]],
                       [a.batch[i], h.batch_ms[j]]];
        if (pairs.every(([x, y]) => x === y)) {
            same++;
        } else if (diff.length < 5) {
            diff.push({t, pairs});
        }
    });
    check(same >= need - 5 && diff.length === 0,
          `${label}: the page's freshness, event rate and batch are serve's history values (${same} times compared)`, diff);
    // Live after the history.
    const b = await waitFor(`${label}: live updates after the history`, async () => {
        const l = await pageLook(page);
        return l.updates.status >= a.updates.status + 3 && l.t.length > 0 ? l : null;
    }, 30000, 250);
    check(b.t[b.t.length - 1] > a.t[a.t.length - 1] && b.charts.freshness.points >= a.charts.freshness.points,
          `${label}: the charts go on live after the history`, [a.t.at(-1), b.t.at(-1)]);
}

const execFileP = promisify(execFile);
let ctx = null;
let offBox = [];

async function main() {
    const single = fs.mkdtempSync(path.join(out, 'data-single-'));
    const grp = fs.mkdtempSync(path.join(out, 'data-group-'));
    startStage('feed', ['feed', '--listen', '127.0.0.1:0', '--synthetic', '--rate', '60', '--seed', '33',
                        '--dup-rate', '0.05', '--late-rate', '0.03', '--malformed-rate', '0.02'], single);
    const feedUrl = await listening('feed');
    startStage('ingest', ['ingest', '--source', feedUrl.href], single);
    startStage('process', ['process'], single);
    startStage('serve', ['serve', '--listen', '127.0.0.1:0'], single);
    const set = ['--set', 'log.partitions=2', '--set', 'process.trigger_ms=500'];
    startStage('group-ingest', [...set, 'ingest', '--source', feedUrl.href], grp);
    startStage('group-shard0', [...set, 'process', '--partition', '0', '--instance', 'host-a:7'], grp);
    startStage('group-shard1', [...set, 'process', '--partition', '1', '--instance', 'host-b:8'], grp);
    startStage('group-final', [...set, 'process', '--finalize', '--instance', 'host-a:7'], grp);
    startStage('group-serve', ['serve', '--listen', '127.0.0.1:0'], grp);
    const base = `http://127.0.0.1:${(await listening('serve')).port}/`;
    const gbase = `http://127.0.0.1:${(await listening('group-serve')).port}/`;

    const browser = await launchOffline(out);
    ({ctx, offBox} = browser);
    const {page, errors} = browser;

    await historyChecks(page, base, 'single');
    const gs = await getJSON(`${gbase}api/v1/status`);
    check(gs.stages.process.group === true, 'group: serve shows the group', gs.stages.process.group);
    await historyChecks(page, gbase, 'group');

    // freshet status on the group's directory agrees with serve.
    const {stdout} = await execFileP(binary, ['--data', grp, 'status', '--json'], {maxBuffer: 1 << 22});
    const st = JSON.parse(stdout);
    const sv = await getJSON(`${gbase}api/v1/status`);
    const silver = sv.stages.process.metrics.process_records_total.silver;
    check(st.stages.process.group === true && st.stages.process.members.length === 3 &&
          st.stages.process.members.every(m => m.up), 'group: freshet status --json lists three members up',
          st.stages.process);
    check(Math.abs(st.totals.silver - silver) <= 200 && st.totals.silver > 0,
          'group: freshet status --json and serve give the same silver total (within the rows of a trigger)',
          [st.totals.silver, silver]);
    check(errors.length === 0, 'no script errors on the page', errors.slice(0, 5));
    check(offBox.length === 0, 'no request left 127.0.0.1', offBox.slice(0, 5));
}

let status = 0;
try {
    await main();
} catch (err) {
    fail(`${err.stack || err}`);
}
if (ctx) {
    await ctx.close().catch(() => {});
}
for (const name of [...stages.keys()].reverse()) {
    const e = await stopStage(name);
    if (e && e.code !== 0) {
        log(`note: ${name} exited ${JSON.stringify(e)}`);
    }
}
status = failures() ? 1 : 0;
log(`${failures() ? 'FAIL' : 'PASS'}: ${failures()} failure(s); artefacts in ${out}`);
process.exit(status);
