// freshness.mjs — freshness of a lake built live (bench/process.sh and
// bench/peers/live.sh): for every silver row, the commit time of the snapshot that
// added its file minus the time the event entered the log (ingest_time).
// Prints "rows p50_ms p99_ms max_ms"; writes 101 quantiles (q, ms) to
// CDF_OUT for the plot (give /dev/null to skip).
// usage: node freshness.mjs TABLES_JSON CDF_OUT    (`freshet tables --json --files`)
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(join(dirname(fileURLToPath(import.meta.url)), '../package.json'));
const { DuckDBInstance } = require('@duckdb/node-api');

const [tablesJson, cdfOut] = process.argv.slice(2);
const tables = JSON.parse(readFileSync(tablesJson, 'utf8'));
const silver = tables.tables.find((t) => t.name === 'silver_recentchange');
const commitTs = new Map(silver.snapshots.map((s) => [String(s.snapshot_id), s.timestamp_ms]));
const db = await DuckDBInstance.create(':memory:', {
  autoinstall_known_extensions: 'false', autoload_known_extensions: 'false' });
const con = await db.connect();
await con.run('CREATE TABLE f (ms DOUBLE)');
for (const file of silver.data_files) {
  const ts = commitTs.get(String(file.snapshot_id));
  if (ts === undefined) continue;
  await con.run(`INSERT INTO f SELECT ${ts} - epoch_ms(ingest_time) FROM read_parquet('${file.local_path}')`);
}
const r = (await con.runAndReadAll(
  'SELECT count(*) AS n, quantile_cont(ms, 0.5) AS p50, quantile_cont(ms, 0.99) AS p99, max(ms) AS max FROM f'))
  .getRowObjectsJson()[0];
console.log(`${r.n} ${Math.round(r.p50)} ${Math.round(r.p99)} ${Math.round(r.max)}`);
if (cdfOut && cdfOut !== '/dev/null') {
  const q = (await con.runAndReadAll(
    'SELECT unnest(quantile_cont(ms, [' + Array.from({ length: 101 }, (_, i) => i / 100).join(', ') + '])) AS ms FROM f'))
    .getRowObjectsJson();
  writeFileSync(cdfOut, q.map((x, i) => `${i / 100} ${x.ms}`).join('\n') + '\n');
}
