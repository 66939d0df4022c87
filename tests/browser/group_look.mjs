// group_look.mjs — the dashboard of a running consumer group, seen in
// Debian's headless Chromium (issue 31: "the dashboard in Chromium shows
// the group's figures"). Used by tests/integration/scaleout_reference.sh
// while its group drains the log; browser_pages tests the same page on a
// small group of its own (ADR 0042).
//
// Opens BASE (a `freshet serve` on the group's data directory), offline
// (every request not to 127.0.0.1 is aborted and fails the check), and
// waits up to --wait-s for:
//   - the members card shown with one row per shard p0..p<N-1> and the
//     finalizer, every one "up" with epochs > 0;
//   - the process stage "up" and the note "<N+1> of <N+1> up";
//   - the charts drawn with history (at least 10 points; the serve has been
//     up since the group started) and a throughput point above 0;
//   - the page's silver total equal to the sum over /api/v1/status's
//     members at the same moment (read right after the page's figures);
//   - with --topics: the trending topics pane lists at least one ranked
//     item (the finalizer's view of the group's open window, ADR 0046),
//     at some moment of the wait (not necessarily the same one), and the
//     API's resolved lookups are the shards' sum, above 0.
// Screenshot: OUT/dashboard-reference-group.png; the last look:
// OUT/group-look.json.
//
// usage: node group_look.mjs --url BASE --partitions N --out DIR [--wait-s S] [--topics]
// Exit 0 pass, 1 fail, 77 skip (no chromium or no node_modules).
import fs from 'node:fs';
import path from 'node:path';
import {fileURLToPath} from 'node:url';
import {launchOffline, skipUnlessReady} from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const arg = name => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? process.argv[i + 1] : undefined;
};
const base = arg('url');
const parts = Number(arg('partitions') || 0);
const out = arg('out');
const waitS = Number(arg('wait-s') || 90);
const wantTopics = process.argv.includes('--topics');
if (!base || !parts || !out) {
    console.error('usage: node group_look.mjs --url BASE --partitions N --out DIR [--wait-s S]');
    process.exit(2);
}
skipUnlessReady(here);
fs.mkdirSync(out, {recursive: true});

const {ctx, page, offBox: offsite, profile} = await launchOffline(out, {width: 1440, height: 1100});
let code = 1;
try {
    await page.goto(base, {waitUntil: 'load'});
    const look = () => page.evaluate(() => {
        const d = window.freshetDashboard;
        const card = document.querySelector('#members-card');
        const rows = [...document.querySelectorAll('#members tbody tr')].map(tr => {
            const td = [...tr.querySelectorAll('td')].map(c => c.textContent.trim());
            return {member: tr.dataset.member, role: td[1], state: td[3], epochs: td[4]};
        });
        const last = name => {
            const u = d.charts[name];
            return {points: u.data[0].length, last: u.data.slice(1).map(s => s[s.length - 1] ?? null),
                    max: Math.max(0, ...u.data.slice(1).flat().filter(v => typeof v === 'number'))};
        };
        return {
            shown: !!card && !card.hidden && card.getBoundingClientRect().height > 0,
            note: document.querySelector('#members-note').textContent.trim(),
            rows,
            processUp: document.querySelector('[data-figure="process-up"]').textContent.trim(),
            silver: document.querySelector('[data-figure="silver"]').textContent.trim(),
            throughput: last('throughput'),
            freshness: last('freshness'),
            topics: [...document.querySelectorAll('#topics li[data-rank]')].map(li => li.dataset.item),
        };
    });
    const n = s => Number(String(s).replace(/[^0-9.]/g, ''));
    const want = [...Array(parts).keys()].map(p => `p${p}`).concat(['finalizer']);
    const all = `${want.length} of ${want.length} up`;
    // A group under chaos: a member restarting or catching up shows "down"
    // for a while, and the topics pane lists items only while a window is
    // open with resolved edits. So the two are awaited apart: a moment
    // with every member up, and (with --topics) a moment with topics.
    let l = null, topicsSeen = null;
    const end = Date.now() + waitS * 1000;
    while (Date.now() < end) {
        const x = await look().catch(err => ({error: String(err), rows: [], topics: []}));
        if (wantTopics && !topicsSeen && x.topics && x.topics.length > 0) {
            topicsSeen = x.topics;
            await page.screenshot({path: path.join(out, 'dashboard-reference-topics.png'), fullPage: true});
        }
        const ok = x && x.shown && want.every(m => x.rows.some(r => r.member === m && r.state === 'up' &&
                                                                       n(r.epochs) > 0)) &&
            x.rows.length === want.length && x.processUp === 'up' && x.note.startsWith(all) &&
            x.throughput.points >= 10 && x.throughput.max > 0;
        if (!l || !l.ok) {
            l = {...x, ok};
        }
        if (l.ok && (!wantTopics || topicsSeen)) {
            break;
        }
        await new Promise(r => setTimeout(r, 500));
    }
    if (l) {
        l.topics = topicsSeen || l.topics;
    }
    await page.screenshot({path: path.join(out, 'dashboard-reference-group.png'), fullPage: true});
    fs.writeFileSync(path.join(out, 'group-look.json'), JSON.stringify(l, null, 2));
    const fails = [];
    if (!l || !l.shown) fails.push('the members card is not shown');
    for (const m of want) {
        const r = l && l.rows ? l.rows.find(x => x.member === m) : null;
        if (!r) fails.push(`no row for ${m}`);
        else if (r.state !== 'up' || !(n(r.epochs) > 0)) fails.push(`${m}: ${r.state}, epochs ${r.epochs}`);
    }
    if (l && l.rows && l.rows.length !== want.length) fails.push(`${l.rows.length} rows, want ${want.length}`);
    if (l && l.processUp !== 'up') fails.push(`process stage "${l.processUp}"`);
    if (l && l.note && !l.note.startsWith(all)) fails.push(`note "${l.note}", want "${all} ..."`);
    if (l && l.throughput && !(l.throughput.points >= 10 && l.throughput.max > 0))
        fails.push(`the throughput chart: ${l.throughput.points} points, max ${l.throughput.max}`);
    if (wantTopics && !(l && l.topics && l.topics.length > 0)) fails.push('the trending topics pane lists no item');
    // the page's silver total is the group's: the members' sum in the API
    const s = await (await fetch(new URL('api/v1/status', base))).json();
    const ms = s.stages.process.members || [];
    const sum = ms.reduce((t, m) => t + (m.metrics.process_records_total?.silver ?? 0), 0);
    const pageSilver = l && l.silver ? n(l.silver) : NaN;
    if (!(s.stages.process.group === true && sum === s.stages.process.metrics.process_records_total.silver))
        fails.push(`the API's silver total ${s.stages.process.metrics.process_records_total.silver} is not its members' sum ${sum}`);
    if (!(pageSilver > 0)) fails.push(`the page shows silver "${l && l.silver}"`);
    if (wantTopics) { // the shards' lookup counters, summed by serve (ADR 0042)
        const res = m => m.metrics.process_enrich_edits_total?.resolved ?? 0;
        const rsum = ms.reduce((t, m) => t + res(m), 0);
        const total = s.stages.process.metrics.process_enrich_edits_total?.resolved ?? 0;
        if (!(rsum > 0 && rsum === total))
            fails.push(`resolved lookups: the API's total ${total}, its members' sum ${rsum} (want equal, above 0)`);
    }
    if (offsite.length) fails.push(`requests off loopback: ${offsite.slice(0, 3).join(', ')}`);
    if (fails.length) {
        console.log(`FAIL: the group's dashboard: ${fails.join('; ')}`);
    } else {
        console.log(`the group's dashboard: ${l.note}; ${want.length} members up with epochs; ` +
                    `silver ${l.silver}; throughput charted (${l.throughput.points} points)` +
                    (wantTopics ? `; ${l.topics.length} trending topics` : ''));
        code = 0;
    }
} catch (err) {
    console.log(`FAIL: ${err.stack || err}`);
} finally {
    await ctx.close().catch(() => {});
    fs.rmSync(profile, {recursive: true, force: true});
}
process.exit(code);
