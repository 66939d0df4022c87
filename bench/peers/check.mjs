// check.mjs — do freshet, DuckDB and Polars produce the same tables from the
// same input? Reads freshet's lake (the data files `freshet tables --json
// --files` lists) and each peer's Parquet files with DuckDB, and compares:
// row counts of the six tables, dead letters by reason, the sums of every
// gold_edits_per_minute column, and gold rows one by one (EXCEPT ALL both
// ways over window, wiki, counts; over window, rank, wiki, title, count),
// and silver's meta_id sets. Meant for the clean dataset, where batch and
// streaming semantics agree (see bench/peers/lib.sh): on the realistic one
// the counts are printed too, but differences there are expected.
// usage: node check.mjs TABLES_JSON NAME=DIR [NAME=DIR...] [--strict]
// Exit status 1 with --strict when any figure differs.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(join(dirname(fileURLToPath(import.meta.url)), '../package.json'));
const { DuckDBInstance } = require('@duckdb/node-api');

const args = process.argv.slice(2);
const strict = args.includes('--strict');
const [tablesJson, ...peers] = args.filter((a) => a !== '--strict');
const lit = (s) => `'${s.replace(/'/g, "''")}'`;
const db = await DuckDBInstance.create(':memory:', {
  autoinstall_known_extensions: 'false', autoload_known_extensions: 'false', threads: '2' });
const con = await db.connect();
await con.run("SET TimeZone = 'UTC'");
const all = async (sql) => (await con.runAndReadAll(sql)).getRowObjectsJson();

const NAMES = { bronze: 'bronze_recentchange', silver: 'silver_recentchange', late: 'late_arrivals',
  dlq: 'dlq', epm: 'gold_edits_per_minute', top: 'gold_top_pages' };
const PEER_FILES = { bronze: 'bronze', silver: 'silver', late: 'late_arrivals', dlq: 'dlq',
  epm: 'gold_edits_per_minute', top: 'gold_top_pages' };
const lake = JSON.parse(readFileSync(tablesJson, 'utf8'));
const engines = ['freshet', ...peers.map((p) => p.split('=')[0])];
const src = {}; // engine -> table -> read_parquet(...) or an empty relation
src.freshet = {};
for (const [k, name] of Object.entries(NAMES)) {
  const t = lake.tables.find((x) => x.name === name);
  const files = t ? t.data_files.map((f) => lit(f.local_path)) : [];
  src.freshet[k] = files.length ? `read_parquet([${files.join(', ')}], union_by_name = true)` : null;
}
for (const p of peers) {
  const [name, dir] = p.split('=');
  src[name] = {};
  for (const [k, f] of Object.entries(PEER_FILES)) src[name][k] = `read_parquet(${lit(join(dir, f + '.parquet'))})`;
}
// Views with one shape per table, timestamps as epoch microseconds.
for (const e of engines) {
  for (const k of Object.keys(NAMES)) {
    const s = src[e][k];
    const v = `${e}_${k}`;
    if (k === 'epm') {
      await con.run(`CREATE VIEW ${v} AS ${s ? `SELECT epoch_us(window_start::TIMESTAMPTZ) AS ws, wiki,
        events, edits, new_pages, bot_events, bytes_added, bytes_removed, distinct_users FROM ${s}`
        : 'SELECT NULL::BIGINT ws, NULL wiki, 0::BIGINT events, 0::BIGINT edits, 0::BIGINT new_pages, 0::BIGINT bot_events, 0::BIGINT bytes_added, 0::BIGINT bytes_removed, 0::BIGINT distinct_users WHERE false'}`);
    } else if (k === 'top') {
      await con.run(`CREATE VIEW ${v} AS ${s ? `SELECT epoch_us(window_start::TIMESTAMPTZ) AS ws,
        rank::INTEGER AS rank, wiki, title, edits FROM ${s}`
        : 'SELECT NULL::BIGINT ws, NULL::INTEGER rank, NULL wiki, NULL title, NULL::BIGINT edits WHERE false'}`);
    } else if (k === 'dlq') {
      await con.run(`CREATE VIEW ${v} AS ${s ? `SELECT reason FROM ${s}` : 'SELECT NULL reason WHERE false'}`);
    } else if (k === 'silver') {
      await con.run(`CREATE VIEW ${v} AS ${s ? `SELECT lower(meta_id) AS id FROM ${s}` : 'SELECT NULL id WHERE false'}`);
    } else {
      await con.run(`CREATE VIEW ${v} AS ${s ? `SELECT 1 AS x FROM ${s}` : 'SELECT 1 AS x WHERE false'}`);
    }
  }
}

const rows = []; // [figure, ...values per engine]
for (const k of Object.keys(NAMES)) {
  const r = [];
  for (const e of engines) r.push(Number((await all(`SELECT count(*) AS n FROM ${e}_${k}`))[0].n));
  rows.push([`${NAMES[k]} rows`, ...r]);
}
const reasons = (await all(engines.map((e) => `SELECT reason FROM ${e}_dlq`).join(' UNION ') + ' ORDER BY 1'))
  .map((x) => x.reason);
for (const reason of reasons) {
  const r = [];
  for (const e of engines) r.push(Number((await all(`SELECT count(*) AS n FROM ${e}_dlq WHERE reason = ${lit(reason)}`))[0].n));
  rows.push([`  dlq ${reason}`, ...r]);
}
for (const c of ['events', 'edits', 'new_pages', 'bot_events', 'bytes_added', 'bytes_removed', 'distinct_users']) {
  const r = [];
  for (const e of engines) r.push(Number((await all(`SELECT coalesce(sum(${c}), 0)::BIGINT AS n FROM ${e}_epm`))[0].n));
  rows.push([`gold_edits_per_minute sum(${c})`, ...r]);
}
{
  const r = [];
  for (const e of engines) r.push(Number((await all(`SELECT coalesce(sum(edits), 0)::BIGINT AS n FROM ${e}_top`))[0].n));
  rows.push(['gold_top_pages sum(edits)', ...r]);
}
// Row-level: every peer against freshet.
const diff = async (a, b, k, cols) => Number((await all(`SELECT count(*) AS n FROM
  ((SELECT ${cols} FROM ${a}_${k} EXCEPT ALL SELECT ${cols} FROM ${b}_${k})
   UNION ALL (SELECT ${cols} FROM ${b}_${k} EXCEPT ALL SELECT ${cols} FROM ${a}_${k}))`))[0].n);
for (const [k, cols, label] of [
  ['epm', 'ws, wiki, events, edits, new_pages, bot_events, bytes_added, bytes_removed, distinct_users', 'gold_edits_per_minute rows differing from freshet'],
  ['top', 'ws, rank, wiki, title, edits', 'gold_top_pages rows differing from freshet'],
  ['silver', 'id', 'silver meta_ids differing from freshet']]) {
  const r = [0];
  for (const e of engines.slice(1)) r.push(await diff('freshet', e, k, cols));
  rows.push([label, ...r]);
}

let bad = 0;
const w = Math.max(...rows.map((r) => r[0].length));
console.log(`${'figure'.padEnd(w)}  ${engines.map((e) => e.padStart(12)).join('  ')}  same`);
for (const [name, ...v] of rows) {
  const isDiff = name.includes('differing');
  const same = isDiff ? v.every((x) => x === 0) : v.every((x) => x === v[0]);
  if (!same) bad++;
  console.log(`${name.padEnd(w)}  ${v.map((x) => x.toLocaleString('en-US').padStart(12)).join('  ')}  ${same ? 'yes' : 'NO'}`);
}
console.log(bad ? `check: ${bad} figure(s) differ` : 'check: all figures equal');
process.exit(strict && bad ? 1 : 0);
