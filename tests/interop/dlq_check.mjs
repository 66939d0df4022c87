// dlq_check.mjs — the DuckDB oracle of tests/integration/dlq.sh. Reads the
// lake's live data files (listed by `freshet tables --json --files`).
//
// usage:
//   node dlq_check.mjs list  LIST.json TABLES.json
//       `freshet dlq list --json` agrees with DuckDB: total and count per
//       reason over wiki.dlq, replayed per reason over wiki.dlq_replays
//   node dlq_check.mjs exact TABLES.json LOG_RECORDS REASONS
//       every dead letter of the comma-separated REASONS landed exactly
//       once (one bronze row at its position, one dlq_replays row), no
//       other dead letter landed, each landed row is where its outcome says
//       (silver, late_arrivals, or neither for a duplicate), bronze
//       positions are unique, silver has no meta_id twice, and
//       bronze == log records consumed - dlq + dlq_replays
import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

const [mode, ...args] = process.argv.slice(2);
const db = await DuckDBInstance.create(':memory:', {
  autoinstall_known_extensions: 'false', autoload_known_extensions: 'false' });
const con = await db.connect();
const q = async (sql) => (await con.runAndReadAll(sql)).getRowObjectsJson();
const one = async (sql) => Number(Object.values((await q(sql))[0])[0]);

const schemas = {
  bronze_recentchange: 'log_partition INTEGER, log_offset BIGINT, meta_id VARCHAR',
  silver_recentchange: 'log_partition INTEGER, log_offset BIGINT, meta_id VARCHAR, event_time TIMESTAMPTZ',
  late_arrivals: 'log_partition INTEGER, log_offset BIGINT, meta_id VARCHAR',
  dlq: 'log_partition INTEGER, log_offset BIGINT, reason VARCHAR',
  dlq_replays: 'log_partition INTEGER, log_offset BIGINT, reason VARCHAR, replay_id VARCHAR, outcome VARCHAR, meta_id VARCHAR',
};
async function lake(path) {
  const t = JSON.parse(readFileSync(path, 'utf8'));
  for (const name of Object.keys(schemas)) {
    const tbl = t.tables.find((x) => x.name === name);
    const files = tbl ? (tbl.data_files || []).map((f) => f.local_path) : [];
    if (files.length) {
      await q(`CREATE VIEW ${name} AS SELECT * FROM read_parquet([${files.map((p) => `'${p}'`).join(',')}])`);
    } else {
      await q(`CREATE TABLE ${name} (${schemas[name]})`);
    }
  }
}

let failed = 0; let passed = 0;
function check(name, ok, detail) {
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}: ${detail}`);
  if (ok) passed++; else failed++;
}

if (mode === 'list') {
  const list = JSON.parse(readFileSync(args[0], 'utf8'));
  await lake(args[1]);
  const total = await one('SELECT count(*) FROM dlq');
  check('total', list.total === total, `list ${list.total}, DuckDB ${total}`);
  const by = {};
  for (const r of await q('SELECT reason, count(*) AS n FROM dlq GROUP BY 1')) by[r.reason] = Number(r.n);
  const rep = {};
  for (const r of await q('SELECT reason, count(*) AS n FROM dlq_replays GROUP BY 1')) rep[r.reason] = Number(r.n);
  const listed = {}; const listedRep = {};
  for (const r of list.reasons) { listed[r.reason] = r.count; listedRep[r.reason] = r.replayed; }
  const keys = new Set([...Object.keys(by), ...Object.keys(listed)]);
  check('count per reason', [...keys].every((k) => (by[k] || 0) === (listed[k] || 0)),
    `${JSON.stringify(listed)} vs ${JSON.stringify(by)}`);
  check('replayed per reason', [...keys].every((k) => (rep[k] || 0) === (listedRep[k] || 0)),
    `${JSON.stringify(listedRep)} vs ${JSON.stringify(rep)}`);
  const samplesOk = list.reasons.every((r) => r.samples.every((s) => typeof s.raw_head === 'string'
    && s.raw_head.length > 0 && s.raw_bytes > 0 && typeof s.detail === 'string'));
  check('samples carry position, detail and the head of the record', samplesOk,
    `${list.reasons.reduce((a, r) => a + r.samples.length, 0)} samples`);
} else if (mode === 'exact') {
  await lake(args[0]);
  const logRecords = Number(args[1]);
  const reasons = args[2].split(',').map((r) => `'${r}'`).join(',');
  const want = await one(`SELECT count(*) FROM dlq WHERE reason IN (${reasons})`);
  const once = await one(`SELECT count(*) FROM dlq d WHERE reason IN (${reasons})
    AND (SELECT count(*) FROM bronze_recentchange b WHERE b.log_partition = d.log_partition AND b.log_offset = d.log_offset) = 1
    AND (SELECT count(*) FROM dlq_replays r WHERE r.log_partition = d.log_partition AND r.log_offset = d.log_offset) = 1`);
  check('each replayable dead letter landed exactly once', want > 0 && once === want,
    `${once} of ${want} dead letters of ${args[2]} in bronze and dlq_replays once`);
  const others = await one(`SELECT count(*) FROM dlq d WHERE reason NOT IN (${reasons})
    AND (EXISTS (SELECT 1 FROM bronze_recentchange b WHERE b.log_partition = d.log_partition AND b.log_offset = d.log_offset)
         OR EXISTS (SELECT 1 FROM dlq_replays r WHERE r.log_partition = d.log_partition AND r.log_offset = d.log_offset))`);
  check('no other dead letter landed', others === 0, `${others} landed`);
  const orphans = await one(`SELECT count(*) FROM dlq_replays r WHERE NOT EXISTS
    (SELECT 1 FROM dlq d WHERE d.log_partition = r.log_partition AND d.log_offset = r.log_offset AND d.reason = r.reason)`);
  check('every dlq_replays row is a dead letter', orphans === 0, `${orphans} without one`);
  const misplaced = await one(`SELECT count(*) FROM dlq_replays r WHERE NOT (
      (r.outcome = 'silver' AND (SELECT count(*) FROM silver_recentchange s WHERE s.log_partition = r.log_partition AND s.log_offset = r.log_offset AND s.meta_id = r.meta_id) = 1
                            AND NOT EXISTS (SELECT 1 FROM late_arrivals l WHERE l.log_partition = r.log_partition AND l.log_offset = r.log_offset))
   OR (r.outcome = 'late' AND (SELECT count(*) FROM late_arrivals l WHERE l.log_partition = r.log_partition AND l.log_offset = r.log_offset AND l.meta_id = r.meta_id) = 1
                          AND NOT EXISTS (SELECT 1 FROM silver_recentchange s WHERE s.log_partition = r.log_partition AND s.log_offset = r.log_offset))
   OR (r.outcome = 'duplicate' AND NOT EXISTS (SELECT 1 FROM silver_recentchange s WHERE s.log_partition = r.log_partition AND s.log_offset = r.log_offset)
                               AND NOT EXISTS (SELECT 1 FROM late_arrivals l WHERE l.log_partition = r.log_partition AND l.log_offset = r.log_offset)))`);
  const outcomes = await q('SELECT outcome, count(*) AS n FROM dlq_replays GROUP BY 1 ORDER BY 1');
  check('each landed row is where its outcome says', misplaced === 0,
    `${misplaced} misplaced; ${outcomes.map((r) => `${r.outcome} ${r.n}`).join(', ')}`);
  const bronze = await one('SELECT count(*) FROM bronze_recentchange');
  const positions = await one('SELECT count(*) FROM (SELECT DISTINCT log_partition, log_offset FROM bronze_recentchange)');
  check('bronze positions unique', bronze === positions, `${bronze} rows, ${positions} positions`);
  const silverDup = await one('SELECT count(*) - count(DISTINCT (meta_id, event_time)) FROM silver_recentchange');
  check('silver holds each meta_id once', silverDup === 0, `${silverDup} repeated`);
  const dlq = await one('SELECT count(*) FROM dlq');
  const replays = await one('SELECT count(*) FROM dlq_replays');
  check('bronze == consumed - dlq + dlq_replays', bronze === logRecords - dlq + replays,
    `${bronze} == ${logRecords} - ${dlq} + ${replays}`);
} else {
  console.error('usage: dlq_check.mjs list|exact ...');
  process.exit(2);
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
