// lake_compare.mjs — two lakes built from the same log must hold the same
// rows in every table (EXCEPT ALL both ways), and bronze no position twice.
// usage: node lake_compare.mjs A_TABLES_JSON B_TABLES_JSON   (freshet tables --json --files)
import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

const lakes = process.argv.slice(2, 4).map((p) => {
  const out = {};
  for (const t of JSON.parse(readFileSync(p, 'utf8')).tables) out[t.name] = (t.data_files || []).map((f) => f.local_path);
  return out;
});
const db = await DuckDBInstance.create(':memory:', {
  autoinstall_known_extensions: 'false', autoload_known_extensions: 'false' });
const con = await db.connect();
const one = async (sql) => Number(Object.values((await con.runAndReadAll(sql)).getRowObjectsJson()[0])[0]);
let passed = 0; let failed = 0;
const check = (name, ok, detail) => { console.log(`${ok ? 'PASS' : 'FAIL'} ${name}: ${detail}`); ok ? passed++ : failed++; };
const src = (files) => `read_parquet([${files.map((f) => `'${f}'`).join(',')}])`;
for (const name of Object.keys(lakes[1])) {
  const [a, b] = [lakes[0][name] || [], lakes[1][name] || []];
  if (!a.length || !b.length) {
    check(`${name} equal`, a.length === b.length, `${a.length} vs ${b.length} files`);
    continue;
  }
  const onlyA = await one(`SELECT count(*) FROM (SELECT * FROM ${src(a)} EXCEPT ALL SELECT * FROM ${src(b)})`);
  const onlyB = await one(`SELECT count(*) FROM (SELECT * FROM ${src(b)} EXCEPT ALL SELECT * FROM ${src(a)})`);
  const n = await one(`SELECT count(*) FROM ${src(b)}`);
  check(`${name} equal`, onlyA === 0 && onlyB === 0, `${n} rows; ${onlyA} only in the first, ${onlyB} only in the second`);
}
const bronze = lakes[0].bronze_recentchange || [];
if (bronze.length) {
  const rows = await one(`SELECT count(*) FROM ${src(bronze)}`);
  const pos = await one(`SELECT count(*) FROM (SELECT DISTINCT log_partition, log_offset FROM ${src(bronze)})`);
  check('bronze positions unique', rows === pos, `${rows} rows, ${pos} positions`);
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
