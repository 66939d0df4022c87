// rest_evolve_check.mjs — the checker of tests/integration/rest_evolve.sh
// (issue 33, ADR 0059): a REST-catalog lake created before the label
// columns, after `freshet process` evolved it through the catalog.
//
//   node rest_evolve_check.mjs BASE TABLES_JSON
//
//   BASE         http://127.0.0.1:PORT of the `freshet serve` holding the lake
//   TABLES_JSON  `freshet tables --json --files` of the lake (its live files)
//
// 1. The catalog, as any REST client reads it (GET .../tables/NAME): the
//    current schema of silver_topics is the old 11 columns, unchanged, then
//    label, label_lang, label_why with field ids 12, 13, 14 (optional
//    strings), last-column-id 14; gold_top_topics' is the old 7 and label
//    with id 8. The table has exactly two schemas (the old one and one
//    evolution), so nothing was added twice.
// 2. The data, read as an Iceberg engine does, by field id, by DuckDB: each
//    live file's Parquet field ids (parquet_schema) are mapped to the
//    current schema's columns; a column whose id a file lacks reads null.
//    The old file (no field ids 12-14) reads its three rows with null
//    labels; the new files carry the label columns under ids 12-14 (8 in
//    gold) and every resolved row has a label or a reason (label_why), some
//    of them a label; no_item rows have none; gold rows carry labels.
// Exit 0 when every check holds, 1 otherwise, 77 without DuckDB.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
if (!fs.existsSync(path.join(here, 'node_modules', '@duckdb/node-api', 'package.json'))) {
  console.log('skip: @duckdb/node-api is not installed in tests/interop (scripts/setup.sh --test)');
  process.exit(77);
}
const { DuckDBInstance } = await import('@duckdb/node-api');
const [base, tablesPath] = process.argv.slice(2);
let failed = 0;
function check(name, ok, detail) {
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}: ${detail}`);
  if (!ok) failed++;
}

const cfg = await (await fetch(`${base}/iceberg/v1/config`)).json();
const prefix = cfg.overrides?.prefix ?? cfg.defaults?.prefix ?? '';
async function load(name) {
  const r = await fetch(`${base}/iceberg/v1/${prefix ? `${prefix}/` : ''}namespaces/wiki/tables/${name}`);
  if (!r.ok) throw new Error(`GET ${name}: HTTP ${r.status}`);
  return (await r.json()).metadata;
}
const OLD = {
  silver_topics: ['meta_id', 'event_time', 'wiki', 'server_name', 'title', 'outcome', 'why', 'item',
    'log_partition', 'log_offset', 'replay_id'],
  gold_top_topics: ['window_start', 'window_end', 'rank', 'item', 'edits', 'wikis', 'top_wikis'],
};
const NEW = { silver_topics: ['label', 'label_lang', 'label_why'], gold_top_topics: ['label'] };
const schemas = {};
for (const name of Object.keys(OLD)) {
  const m = await load(name);
  const cur = m.schemas.find((s) => s['schema-id'] === m['current-schema-id']);
  const got = cur.fields.map((f) => `${f.id}:${f.name}:${f.required ? 'req' : 'opt'}:${JSON.stringify(f.type)}`);
  check(`${name} columns`, got.length === OLD[name].length + NEW[name].length &&
    OLD[name].every((n, i) => cur.fields[i].id === i + 1 && cur.fields[i].name === n), got.join(' '));
  const added = got.slice(OLD[name].length);
  check(`${name} new columns`, added.length === NEW[name].length &&
    added.every((a, i) => a === `${OLD[name].length + i + 1}:${NEW[name][i]}:opt:"string"`), added.join(' '));
  check(`${name} last-column-id`, m['last-column-id'] === OLD[name].length + NEW[name].length,
    `${m['last-column-id']}`);
  check(`${name} schemas`, m.schemas.length === 2, `${m.schemas.length} schemas, current ${m['current-schema-id']}`);
  schemas[name] = cur;
}

const db = await DuckDBInstance.create(':memory:', {
  autoinstall_known_extensions: 'false', autoload_known_extensions: 'false' });
const con = await db.connect();
const q = async (sql) => (await con.runAndReadAll(sql)).getRowObjectsJson();
const lit = (s) => `'${s.replaceAll("'", "''")}'`;
const files = {};
for (const t of JSON.parse(fs.readFileSync(tablesPath, 'utf8')).tables) {
  files[t.name] = (t.data_files || []).map((f) => f.local_path);
}
// Rows of one file through the table's current schema, by field id.
async function readById(file, schema) {
  const ids = new Map();
  for (const c of await q(`SELECT name, field_id FROM parquet_schema(${lit(file)}) WHERE field_id IS NOT NULL`)) {
    ids.set(Number(c.field_id), c.name);
  }
  const sel = schema.fields.map((f) => (ids.has(f.id) ? `"${ids.get(f.id)}"` : 'NULL') + ` AS "${f.name}"`);
  return { ids, rows: await q(`SELECT ${sel.join(', ')} FROM read_parquet(${lit(file)})`) };
}

let oldRows = 0; let oldLabelled = 0; let newFiles = 0; let resolved = 0; let labelled = 0;
let unexplained = 0; let noItemLabelled = 0; let badIds = 0;
for (const file of files.silver_topics || []) {
  const { ids, rows } = await readById(file, schemas.silver_topics);
  if (!ids.has(12) && !ids.has(13) && !ids.has(14)) {
    oldRows += rows.length;
    oldLabelled += rows.filter((r) => r.label !== null || r.label_lang !== null || r.label_why !== null).length;
    continue;
  }
  newFiles++;
  if (ids.get(12) !== 'label' || ids.get(13) !== 'label_lang' || ids.get(14) !== 'label_why') badIds++;
  for (const r of rows) {
    if (r.outcome === 'resolved') {
      resolved++;
      if (r.label !== null && r.label_lang !== null) labelled++;
      else if (r.label_why === null) unexplained++;
    } else if (r.label !== null || r.label_lang !== null || r.label_why !== null) {
      noItemLabelled++;
    }
  }
}
check('old file', oldRows === 3 && oldLabelled === 0, `${oldRows} rows without the label columns, ${oldLabelled} read with a label`);
check('new files', newFiles > 0 && badIds === 0, `${newFiles} files carry field ids 12-14 (${badIds} under other names)`);
check('labels', resolved > 0 && labelled > 0 && unexplained === 0,
  `${resolved} resolved rows, ${labelled} with a label, ${unexplained} with neither a label nor a reason`);
check('no_item rows', noItemLabelled === 0, `${noItemLabelled} with a label`);

let goldRows = 0; let goldLabelled = 0; let goldBad = 0;
for (const file of files.gold_top_topics || []) {
  const { ids, rows } = await readById(file, schemas.gold_top_topics);
  if (ids.get(8) !== 'label') goldBad++;
  goldRows += rows.length;
  goldLabelled += rows.filter((r) => r.label !== null).length;
}
check('gold labels', goldRows > 0 && goldLabelled > 0 && goldBad === 0,
  `${goldRows} rows, ${goldLabelled} with a label, ${goldBad} files without field id 8 as label`);
console.log(failed ? `${failed} checks failed` : 'all checks passed');
process.exit(failed ? 1 : 0);
