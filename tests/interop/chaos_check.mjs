// chaos_check.mjs — the oracle of tests/integration/process_chaos.sh.
// Reads the lake's live data files (listed by `freshet tables --json
// --files`) with DuckDB and checks them against the feed's ground truth,
// against a control lake built from the same log without kills, and against
// DuckDB's own recomputation of gold_edits_per_minute from silver.
// usage: node chaos_check.mjs truth.json chaos_tables.json control_tables.json LOG_RECORDS
import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

const [truthPath, chaosPath, controlPath, logRecordsArg] = process.argv.slice(2);
const truth = JSON.parse(readFileSync(truthPath, 'utf8'));
const logRecords = Number(logRecordsArg);
const db = await DuckDBInstance.create(':memory:', {
  autoinstall_known_extensions: 'false', autoload_known_extensions: 'false' });
const con = await db.connect();
const q = async (sql) => (await con.runAndReadAll(sql)).getRowObjectsJson();

function files(path) {
  const t = JSON.parse(readFileSync(path, 'utf8'));
  const out = {};
  for (const tbl of t.tables) out[tbl.name] = (tbl.data_files || []).map((f) => f.local_path);
  return out;
}
const lakes = { chaos: files(chaosPath), control: files(controlPath) };
const schemas = {
  gold_edits_per_minute: 'window_start TIMESTAMPTZ, window_end TIMESTAMPTZ, wiki VARCHAR, events BIGINT, edits BIGINT, new_pages BIGINT, bot_events BIGINT, bytes_added BIGINT, bytes_removed BIGINT, distinct_users BIGINT, distinct_users_exact BOOLEAN',
  gold_top_pages: 'window_start TIMESTAMPTZ, window_end TIMESTAMPTZ, rank INTEGER, wiki VARCHAR, title VARCHAR, edits BIGINT',
  late_arrivals: 'meta_id VARCHAR, log_partition INTEGER, log_offset BIGINT',
  dlq: 'reason VARCHAR, log_partition INTEGER, log_offset BIGINT',
};
for (const [lake, tables] of Object.entries(lakes)) {
  for (const name of ['bronze_recentchange', 'silver_recentchange', 'gold_edits_per_minute',
    'gold_top_pages', 'late_arrivals', 'dlq']) {
    const list = tables[name] || [];
    const view = `${lake}_${name}`;
    if (list.length) {
      await q(`CREATE VIEW ${view} AS SELECT * FROM read_parquet([${list.map((p) => `'${p}'`).join(',')}])`);
    } else {
      await q(`CREATE TABLE ${view} (${schemas[name] || 'x INTEGER'})`);
    }
  }
}

let failed = 0;
function check(name, ok, detail) {
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}: ${detail}`);
  if (!ok) failed++;
}

// Ground truth from the feed: what each position is.
const rows = truth.events;
const reasonOf = {
  truncated: 'not_json', missing_meta_id: 'missing_meta_id', missing_meta_dt: 'missing_meta_dt',
  missing_wiki: 'missing_wiki', missing_type: 'missing_type', namespace_string: 'bad_field_type',
  bot_string: 'bad_field_type', meta_dt_not_date: 'bad_meta_dt', meta_id_not_uuid: 'bad_meta_id',
  type_invalid: 'bad_type',
};
const expectDlq = {}; const lateIds = new Set(); const silverIds = new Set();
let canaries = 0; let positions = 0;
for (const r of rows) {
  positions++;
  const tags = r.slice(3);
  if (tags.includes('canary')) { canaries++; continue; }
  const mal = tags.find((t) => t.startsWith('malformed:'));
  if (mal) { const reason = reasonOf[mal.slice(10)]; expectDlq[reason] = (expectDlq[reason] || 0) + 1; continue; }
  if (tags.some((t) => t.startsWith('future:'))) { expectDlq.future_event = (expectDlq.future_event || 0) + 1; continue; }
  if (tags.some((t) => t.startsWith('late:'))) { lateIds.add(r[1]); continue; }
  silverIds.add(r[1]);
}
const expectDlqTotal = Object.values(expectDlq).reduce((a, b) => a + b, 0);
check('feed sent every position', truth.positions_sent === truth.source.count,
  `${truth.positions_sent} of ${truth.source.count}`);
check('log holds every non-canary position', logRecords >= positions - canaries,
  `${logRecords} log records for ${positions - canaries} non-canary positions`);

const one = async (sql) => Object.values((await q(sql))[0])[0];
const bronze = Number(await one('SELECT count(*) FROM chaos_bronze_recentchange'));
const bronzePos = Number(await one('SELECT count(*) FROM (SELECT DISTINCT log_partition, log_offset FROM chaos_bronze_recentchange)'));
const dlq = Number(await one('SELECT count(*) FROM chaos_dlq'));
check('nothing lost: bronze + dlq == log records', bronze + dlq === logRecords,
  `${bronze} + ${dlq} vs ${logRecords}`);
check('nothing duplicated: bronze positions unique', bronze === bronzePos, `${bronze} rows, ${bronzePos} positions`);

const dlqByReason = {};
for (const r of await q('SELECT reason, count(*) AS n FROM chaos_dlq GROUP BY 1')) dlqByReason[r.reason] = Number(r.n);
const reasons = new Set([...Object.keys(dlqByReason), ...Object.keys(expectDlq)]);
const dlqOk = [...reasons].every((k) => (dlqByReason[k] || 0) === (expectDlq[k] || 0));
check('dlq == injected malformed and future events, by reason', dlqOk && dlq === expectDlqTotal,
  JSON.stringify(dlqByReason) + ' expected ' + JSON.stringify(expectDlq));

const silver = await q('SELECT meta_id FROM chaos_silver_recentchange');
const silverSet = new Set(silver.map((r) => r.meta_id));
const missingSilver = [...silverIds].filter((id) => !silverSet.has(id));
const extraSilver = [...silverSet].filter((id) => !silverIds.has(id));
check('silver == first on-time occurrence of each valid meta.id', silver.length === silverSet.size
  && missingSilver.length === 0 && extraSilver.length === 0,
  `${silver.length} rows, ${silverSet.size} distinct, expected ${silverIds.size}, missing ${missingSilver.length}, unexpected ${extraSilver.length}`);

const late = await q('SELECT meta_id FROM chaos_late_arrivals');
const lateSet = new Set(late.map((r) => r.meta_id));
check('late_arrivals == the late events', late.length === lateIds.size
  && [...lateIds].every((id) => lateSet.has(id)), `${late.length} rows, expected ${lateIds.size}`);

for (const name of ['gold_edits_per_minute', 'gold_top_pages', 'silver_recentchange', 'late_arrivals', 'dlq']) {
  const cols = name === 'dlq' ? 'log_partition, log_offset, reason, detail' : '*';
  const a = Number(await one(`SELECT count(*) FROM (SELECT ${cols} FROM chaos_${name} EXCEPT ALL SELECT ${cols} FROM control_${name})`));
  const b = Number(await one(`SELECT count(*) FROM (SELECT ${cols} FROM control_${name} EXCEPT ALL SELECT ${cols} FROM chaos_${name})`));
  const n = Number(await one(`SELECT count(*) FROM control_${name}`));
  check(`${name} equals the control run`, a === 0 && b === 0 && (n > 0 || name === 'late_arrivals'),
    `${n} control rows; ${a} only in chaos, ${b} only in control`);
}

// Independent oracle: gold_edits_per_minute recomputed by DuckDB from silver.
const oracle = `
  WITH wm AS (SELECT max(event_time) - INTERVAL 120 SECOND AS w FROM chaos_bronze_recentchange),
  s AS (SELECT *, CASE WHEN type IN ('edit','new') AND length_new IS NOT NULL
                       THEN length_new - coalesce(length_old, 0) END AS delta
        FROM chaos_silver_recentchange)
  SELECT time_bucket(INTERVAL 1 MINUTE, event_time) AS window_start,
         time_bucket(INTERVAL 1 MINUTE, event_time) + INTERVAL 1 MINUTE AS window_end, wiki,
         count(*) AS events, count(*) FILTER (WHERE type = 'edit') AS edits,
         count(*) FILTER (WHERE type = 'new') AS new_pages,
         count(*) FILTER (WHERE bot) AS bot_events,
         coalesce(sum(delta) FILTER (WHERE delta > 0), 0) AS bytes_added,
         coalesce(-sum(delta) FILTER (WHERE delta < 0), 0) AS bytes_removed,
         count(DISTINCT "user") AS distinct_users
  FROM s GROUP BY 1, 2, 3
  HAVING time_bucket(INTERVAL 1 MINUTE, event_time) + INTERVAL 1 MINUTE <= (SELECT w FROM wm)`;
const gcols = 'window_start, window_end, wiki, events, edits, new_pages, bot_events, bytes_added, bytes_removed, distinct_users';
const oa = Number(await one(`SELECT count(*) FROM (SELECT ${gcols} FROM chaos_gold_edits_per_minute EXCEPT ALL (${oracle}))`));
const ob = Number(await one(`SELECT count(*) FROM ((${oracle}) EXCEPT ALL SELECT ${gcols} FROM chaos_gold_edits_per_minute)`));
const on = Number(await one(`SELECT count(*) FROM (${oracle})`));
check('gold_edits_per_minute == DuckDB over silver', oa === 0 && ob === 0 && on > 0,
  `${on} oracle rows; ${oa} only in freshet, ${ob} only in DuckDB`);

// The epoch files carry their offsets as deltas (ADR 0035): every row group
// of bronze's and silver's epoch files (compaction's output is written with
// the writer's defaults) stores log_offset, all distinct, so never worth a
// dictionary, DELTA_BINARY_PACKED, as DuckDB reads the metadata.
const epochFiles = ['bronze_recentchange', 'silver_recentchange'].flatMap((t) =>
  [...lakes.chaos[t] || [], ...lakes.control[t] || []].filter((f) => !/\/compacted-/.test(f)));
let chunks = 0; const notDelta = [];
for (const f of epochFiles) {
  for (const r of await q(`SELECT path_in_schema AS c, encodings AS e FROM parquet_metadata('${f}')
      WHERE path_in_schema = 'log_offset'`)) {
    chunks++;
    if (!String(r.e).includes('DELTA_BINARY_PACKED')) notDelta.push(`${f} ${r.c}: ${r.e}`);
  }
}
check('offsets as deltas', epochFiles.length > 0 && chunks > 0 && notDelta.length === 0,
  `${chunks} chunks in ${epochFiles.length} epoch files${notDelta.length ? `; not deltas: ${notDelta.slice(0, 3).join('; ')}` : ''}`);

console.log(failed ? `${13 - failed} passed, ${failed} failed` : '13 passed, 0 failed');
process.exit(failed ? 1 : 0);
