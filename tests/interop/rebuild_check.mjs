// rebuild_check.mjs — the DuckDB oracle of tests/integration/rebuild.sh.
// Reads lakes through the live data files `freshet tables --json --files`
// lists and compares them table by table (EXCEPT ALL both ways).
//
// usage:
//   node rebuild_check.mjs same   A.json B.json [--marked]
//       silver, late_arrivals and both gold tables of B equal A's; bronze
//       and dlq are the very same files; --marked: B's four derived tables
//       are at a snapshot carrying freshet.rebuild
//   node rebuild_check.mjs equal  A.json B.json
//       all six tables hold the same rows (B built another way, e.g. from
//       scratch under the policy A was rebuilt to)
//   node rebuild_check.mjs either A.json C.json X.json...
//       each X's four derived tables all equal A's, or all equal C's (an
//       interrupted rebuild is all or nothing), bronze and dlq A's files;
//       prints which
//   node rebuild_check.mjs late   A.json B.json LATENESS_S
//       B was rebuilt from A with a larger lateness: every late row of A
//       is in B's silver, B's late rows are a subset of A's, silver gained
//       exactly what late_arrivals lost, gold changed, and B's
//       gold_edits_per_minute equals DuckDB's recomputation from B's
//       silver under B's watermark (freshet.watermark-us of the rebuild)
import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

const [mode, ...args] = process.argv.slice(2);
const db = await DuckDBInstance.create(':memory:', {
  autoinstall_known_extensions: 'false', autoload_known_extensions: 'false' });
const con = await db.connect();
const q = async (sql) => (await con.runAndReadAll(sql)).getRowObjectsJson();
const one = async (sql) => Number(Object.values((await q(sql))[0])[0]);

const DERIVED = ['silver_recentchange', 'late_arrivals', 'gold_edits_per_minute', 'gold_top_pages'];
// The full column lists (tables.c), for a table with no live file.
const SILVER = 'meta_id VARCHAR, event_time TIMESTAMPTZ, wiki VARCHAR, type VARCHAR, namespace INTEGER, title VARCHAR, "user" VARCHAR, bot BOOLEAN, minor BOOLEAN, patrolled BOOLEAN, length_old BIGINT, length_new BIGINT, revision_old BIGINT, revision_new BIGINT, server_name VARCHAR, comment VARCHAR, log_type VARCHAR, log_action VARCHAR, rc_id BIGINT, log_id BIGINT, log_partition INTEGER, log_offset BIGINT, ingest_time TIMESTAMPTZ';
const schemas = {
  silver_recentchange: SILVER,
  late_arrivals: `${SILVER}, watermark TIMESTAMPTZ, lateness_ms BIGINT`,
  gold_edits_per_minute: 'window_start TIMESTAMPTZ, window_end TIMESTAMPTZ, wiki VARCHAR, events BIGINT, edits BIGINT, new_pages BIGINT, bot_events BIGINT, bytes_added BIGINT, bytes_removed BIGINT, distinct_users BIGINT, distinct_users_exact BOOLEAN',
  gold_top_pages: 'window_start TIMESTAMPTZ, window_end TIMESTAMPTZ, rank INTEGER, wiki VARCHAR, title VARCHAR, edits BIGINT',
  bronze_recentchange: 'log_partition INTEGER, log_offset BIGINT, ingest_time TIMESTAMPTZ, event_time TIMESTAMPTZ, meta_id VARCHAR, wiki VARCHAR, type VARCHAR, raw VARCHAR',
  dlq: 'log_partition INTEGER, log_offset BIGINT, ingest_time TIMESTAMPTZ, reason VARCHAR, detail VARCHAR, raw VARCHAR, raw_base64 VARCHAR',
};

let failed = 0; let passed = 0;
function check(name, ok, detail) {
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}: ${detail}`);
  if (ok) passed++; else failed++;
}

let nlakes = 0;
async function lake(path) {
  const t = JSON.parse(readFileSync(path, 'utf8'));
  const id = `l${nlakes++}`;
  const info = {};
  for (const tbl of t.tables) {
    const files = (tbl.data_files || []).map((f) => f.local_path);
    const snap = (tbl.snapshots || []).find((s) => s.snapshot_id === tbl.current_snapshot_id);
    info[tbl.name] = { files, summary: snap ? snap.summary : {} };
  }
  for (const name of Object.keys(schemas)) {
    const files = (info[name] || { files: [] }).files;
    const view = `${id}_${name}`;
    if (files.length) {
      await q(`CREATE VIEW ${view} AS SELECT * FROM read_parquet([${files.map((p) => `'${p}'`).join(',')}])`);
    } else {
      await q(`CREATE TABLE ${view} (${schemas[name]})`);
    }
  }
  return { id, info, warehouse: t.warehouse };
}

async function diff(a, b, name) {
  const x = await one(`SELECT count(*) FROM (SELECT * FROM ${a.id}_${name} EXCEPT ALL SELECT * FROM ${b.id}_${name})`);
  const y = await one(`SELECT count(*) FROM (SELECT * FROM ${b.id}_${name} EXCEPT ALL SELECT * FROM ${a.id}_${name})`);
  const n = await one(`SELECT count(*) FROM ${a.id}_${name}`);
  return { x, y, n, equal: x === 0 && y === 0 };
}

const sameFiles = (a, b, name) =>
  JSON.stringify([...a.info[name].files].sort()) === JSON.stringify([...b.info[name].files].sort());

if (mode === 'same') {
  const a = await lake(args[0]); const b = await lake(args[1]);
  for (const name of DERIVED) {
    const d = await diff(a, b, name);
    check(`${name} reproduced`, d.equal && (d.n > 0 || name === 'late_arrivals'),
      `${d.n} rows before; ${d.x} only before, ${d.y} only after`);
  }
  for (const name of ['bronze_recentchange', 'dlq']) {
    const d = await diff(a, b, name);
    const files = a.warehouse !== b.warehouse || sameFiles(a, b, name);
    check(`${name} untouched`, d.equal && files,
      `${b.info[name].files.length} files${a.warehouse === b.warehouse ? ' (the same files)' : ''}, ${d.x + d.y} rows differ`);
  }
  if (args.includes('--marked')) {
    const ids = DERIVED.map((n) => b.info[n].summary['freshet.rebuild']);
    check('one rebuild snapshot on the four tables', ids.every((v) => v && v === ids[0]),
      `freshet.rebuild = ${JSON.stringify(ids)}`);
  }
} else if (mode === 'equal') {
  const a = await lake(args[0]); const b = await lake(args[1]);
  for (const name of [...DERIVED, 'bronze_recentchange', 'dlq']) {
    const d = await diff(a, b, name);
    check(`${name} equal`, d.equal && (d.n > 0 || name === 'late_arrivals'),
      `${d.n} rows; ${d.x} only in the first, ${d.y} only in the second`);
  }
} else if (mode === 'either') {
  const a = await lake(args[0]); const c = await lake(args[1]);
  for (const path of args.slice(2)) {
    const x = await lake(path);
    const isA = []; const isC = [];
    for (const name of DERIVED) {
      isA.push((await diff(a, x, name)).equal);
      isC.push((await diff(c, x, name)).equal);
    }
    const allA = isA.every(Boolean); const allC = isC.every(Boolean);
    const bronze = sameFiles(a, x, 'bronze_recentchange') && sameFiles(a, x, 'dlq');
    check(`${path}: derived tables all old or all new`, (allA || allC) && bronze,
      (allA ? 'old snapshot (rebuild did not land)' : allC ? 'new snapshot (rebuild landed)'
        : `mixed: old ${JSON.stringify(isA)}, new ${JSON.stringify(isC)}`)
      + (bronze ? '; bronze and dlq untouched' : '; bronze or dlq changed'));
  }
} else if (mode === 'late') {
  const a = await lake(args[0]); const b = await lake(args[1]);
  const lateness = Number(args[2]);
  const aLate = await one(`SELECT count(*) FROM ${a.id}_late_arrivals`);
  const bLate = await one(`SELECT count(*) FROM ${b.id}_late_arrivals`);
  const moved = await one(`SELECT count(*) FROM ${a.id}_late_arrivals l
    WHERE EXISTS (SELECT 1 FROM ${b.id}_silver_recentchange s WHERE s.meta_id = l.meta_id AND s.event_time = l.event_time
                  AND s.log_partition = l.log_partition AND s.log_offset = l.log_offset)`);
  check('the late events moved into silver', aLate > 0 && moved === aLate,
    `${moved} of ${aLate} late rows now in silver`);
  const stray = await one(`SELECT count(*) FROM (SELECT log_partition, log_offset FROM ${b.id}_late_arrivals
    EXCEPT SELECT log_partition, log_offset FROM ${a.id}_late_arrivals)`);
  check('late_arrivals shrank', bLate < aLate && stray === 0, `${aLate} -> ${bLate} rows, ${stray} new`);
  const aS = await one(`SELECT count(*) FROM ${a.id}_silver_recentchange`);
  const bS = await one(`SELECT count(*) FROM ${b.id}_silver_recentchange`);
  const dup = await one(`SELECT count(*) - count(DISTINCT (meta_id, event_time)) FROM ${b.id}_silver_recentchange`);
  check('silver gained what late_arrivals lost', bS - aS === aLate - bLate && dup === 0,
    `${aS} -> ${bS} rows; ${dup} duplicate ids`);
  const g = await diff(a, b, 'gold_edits_per_minute');
  check('gold changed', !g.equal, `${g.x} rows only before, ${g.y} only after`);
  const wm = b.info.gold_edits_per_minute.summary['freshet.watermark-us'];
  const lat = b.info.gold_edits_per_minute.summary['freshet.rebuild-lateness-s'];
  check('rebuild snapshot names its policy', lat === String(lateness) && wm !== undefined,
    `lateness ${lat}, watermark ${wm}`);
  const oracle = `
    WITH s AS (SELECT *, CASE WHEN type IN ('edit','new') AND length_new IS NOT NULL
                         THEN length_new - coalesce(length_old, 0) END AS delta
               FROM ${b.id}_silver_recentchange)
    SELECT time_bucket(INTERVAL 1 MINUTE, event_time) AS window_start,
           time_bucket(INTERVAL 1 MINUTE, event_time) + INTERVAL 1 MINUTE AS window_end, wiki,
           count(*) AS events, count(*) FILTER (WHERE type = 'edit') AS edits,
           count(*) FILTER (WHERE type = 'new') AS new_pages,
           count(*) FILTER (WHERE bot) AS bot_events,
           coalesce(sum(delta) FILTER (WHERE delta > 0), 0) AS bytes_added,
           coalesce(-sum(delta) FILTER (WHERE delta < 0), 0) AS bytes_removed,
           count(DISTINCT "user") AS distinct_users
    FROM s GROUP BY 1, 2, 3
    HAVING time_bucket(INTERVAL 1 MINUTE, event_time) + INTERVAL 1 MINUTE <= make_timestamptz(${wm}::BIGINT)`;
  const gcols = 'window_start, window_end, wiki, events, edits, new_pages, bot_events, bytes_added, bytes_removed, distinct_users';
  const oa = await one(`SELECT count(*) FROM (SELECT ${gcols} FROM ${b.id}_gold_edits_per_minute EXCEPT ALL (${oracle}))`);
  const ob = await one(`SELECT count(*) FROM ((${oracle}) EXCEPT ALL SELECT ${gcols} FROM ${b.id}_gold_edits_per_minute)`);
  const on = await one(`SELECT count(*) FROM (${oracle})`);
  check('gold_edits_per_minute == DuckDB over the rebuilt silver', oa === 0 && ob === 0 && on > 0,
    `${on} oracle rows; ${oa} only in freshet, ${ob} only in DuckDB`);
} else {
  console.error('usage: rebuild_check.mjs same|equal|either|late ...');
  process.exit(2);
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
