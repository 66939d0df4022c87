// lake_counts.mjs — DuckDB counts the rows of every table's live data files
// (local paths, from `freshet tables --json --files`) and compares them with
// the records that listing reports. usage: node lake_counts.mjs TABLES_JSON
import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

const tables = JSON.parse(readFileSync(process.argv[2], 'utf8')).tables;
const db = await DuckDBInstance.create(':memory:', {
  autoinstall_known_extensions: 'false', autoload_known_extensions: 'false' });
const con = await db.connect();
let bad = 0;
for (const t of tables) {
  const files = (t.data_files || []).map((f) => `'${f.local_path}'`);
  const n = files.length ? Number(Object.values((await con.runAndReadAll(
    `SELECT count(*) FROM read_parquet([${files.join(',')}])`)).getRowObjectsJson()[0])[0]) : 0;
  if (n !== t.records) { console.log(`FAIL ${t.name}: DuckDB reads ${n} rows, the listing says ${t.records}`); bad++; }
}
console.log(`${tables.length - bad} of ${tables.length} tables: DuckDB's row count equals the listing's`);
process.exit(bad || !tables.length ? 1 : 0);
