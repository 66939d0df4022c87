// rest_interop.mjs — freshet's Iceberg REST catalog (`freshet serve`,
// /iceberg) driven by independent clients: iceberg-js (npm) for the
// catalog API, icebird (npm) and DuckDB for the tables it serves.
//
//   node rest_interop.mjs BASE TOKEN TABLES_JSON WAREHOUSE_DIR OUT_JSON
//
//   BASE          http://127.0.0.1:PORT (a running `freshet serve`)
//   TOKEN         the server's API token (writes)
//   TABLES_JSON   `freshet tables --json` of the lake, taken before this run
//   WAREHOUSE_DIR the lake's local warehouse directory (<data>/lake/warehouse)
//   OUT_JSON      where to write what this run changed, for the shell half
//
// 1. Reads: config (prefix), namespaces, tables; every table loaded through
//    iceberg-js and compared with `freshet tables --json` (metadata file,
//    current snapshot, every snapshot's id, sequence number and summary)
//    and its current schema's columns with what DuckDB finds in the data
//    files. icebird reads every table with data from the metadata the REST
//    answer carried, the file: URIs in it resolved to the server's /lake/
//    URLs; its row count equals `freshet tables --json` and DuckDB's
//    count over the same files.
// 2. Writes through iceberg-js: a namespace with properties, a table, a
//    commit with requirements (add-schema, set-current-schema,
//    set-properties, add-sort-order, set-default-sort-order), a tag on a
//    wiki table's current snapshot and its removal; 8 concurrent commits
//    each answered 200 or 409, the table holding exactly the 200s' changes;
//    a failing requirement
//    answers 409 CommitFailedException and changes nothing; no token 401;
//    dropping a namespace that holds tables 409.
// Exit status: 0 good, 1 a mismatch, 77 when the npm packages are absent.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
for (const pkg of ['iceberg-js', 'icebird', '@duckdb/node-api']) {
  if (!fs.existsSync(path.join(here, 'node_modules', pkg, 'package.json'))) {
    console.log(`skip: ${pkg} is not installed in tests/interop/node_modules (run scripts/setup.sh --test)`);
    process.exit(77);
  }
}
const { IcebergRestCatalog, IcebergError } = await import('iceberg-js');
const { icebergRead, icebergManifests } = await import('icebird');
const { DuckDBInstance } = await import('@duckdb/node-api');

const [base, token, tablesPath, warehouseDir, outPath] = process.argv.slice(2);
if (!outPath) {
  console.log('usage: node rest_interop.mjs BASE TOKEN TABLES_JSON WAREHOUSE_DIR OUT_JSON');
  process.exit(2);
}
const lakeTables = JSON.parse(fs.readFileSync(tablesPath, 'utf8')).tables;
const warehouse = fs.realpathSync(warehouseDir);

let failures = 0;
let checks = 0;
function ok(cond, what) {
  checks++;
  if (!cond) {
    failures++;
    if (failures <= 60) console.log(`FAIL ${what}`);
  }
  return cond;
}

const realFetch = globalThis.fetch;
let restCalls = 0;
const countingFetch = (url, init) => {
  restCalls++;
  return realFetch(url, init);
};
const catalog = new IcebergRestCatalog({
  baseUrl: `${base}/iceberg`,
  warehouse: 'freshet',
  auth: { type: 'bearer', token },
  fetch: countingFetch,
});

// file:///<warehouse>/... -> BASE/lake/... (what `freshet serve` serves)
function toLake(uri) {
  const u = String(uri);
  const prefix = `file://${warehouse}/`;
  return u.startsWith(prefix) ? `${base}/lake/${u.slice(prefix.length)}` : u;
}
function toLocal(uri) {
  const u = String(uri);
  return u.startsWith('file://') ? decodeURIComponent(new URL(u).pathname) : u;
}

async function expectError(what, status, type, fn) {
  try {
    await fn();
    ok(false, `${what}: expected ${status} ${type}, it succeeded`);
  } catch (e) {
    ok(e instanceof IcebergError, `${what}: not an IcebergError: ${e}`);
    ok(e.status === status, `${what}: status ${e.status}, expected ${status} (${e.message})`);
    if (type) ok(e.icebergType === type, `${what}: type ${e.icebergType}, expected ${type}`);
  }
}

const duck = await DuckDBInstance.create(':memory:', {
  autoinstall_known_extensions: 'false',
  autoload_known_extensions: 'false',
});
const conn = await duck.connect();
const out = { tables: {}, created: null };

try {
  // ------------------------------------------------------------ reads
  const config = await catalog.loadConfig();
  ok(config.overrides?.prefix === 'freshet', `config prefix ${JSON.stringify(config)}`);
  const { namespaces } = await catalog.listNamespaces();
  ok(namespaces.some((n) => n.namespace.join('.') === 'wiki'), `namespaces ${JSON.stringify(namespaces)}`);
  ok(await catalog.namespaceExists({ namespace: ['wiki'] }) === true, 'namespaceExists(wiki)');
  ok(await catalog.namespaceExists({ namespace: ['no_such_ns'] }) === false, 'namespaceExists(no_such_ns)');
  const { identifiers } = await catalog.listTables({ namespace: ['wiki'] });
  const names = identifiers.map((i) => i.name).sort();
  const want = lakeTables.filter((t) => t.namespace === 'wiki').map((t) => t.name).sort();
  ok(JSON.stringify(names) === JSON.stringify(want), `tables ${names} vs freshet tables ${want}`);
  await expectError('load a missing table', 404, 'NoSuchTableException',
    () => catalog.loadTable({ namespace: ['wiki'], name: 'no_such_table' }));
  ok(await catalog.tableExists({ namespace: ['wiki'], name: 'dlq' }) === true, 'tableExists(dlq)');

  let icebirdTables = 0;
  globalThis.fetch = async (url, init) => realFetch(toLake(url), init);
  try {
    for (const t of lakeTables.filter((x) => x.namespace === 'wiki')) {
      const id = { namespace: ['wiki'], name: t.name };
      const res = await catalog.loadTableResult(id);
      const m = res.metadata;
      ok(res['metadata-location'] === t.metadata_file,
        `${t.name}: metadata-location ${res['metadata-location']} vs ${t.metadata_file}`);
      ok(m['format-version'] === 2, `${t.name}: format-version`);
      ok((m['current-snapshot-id'] ?? -1) === t.current_snapshot_id,
        `${t.name}: current snapshot ${m['current-snapshot-id']} vs ${t.current_snapshot_id}`);
      ok(m['last-sequence-number'] === t.sequence_number, `${t.name}: last-sequence-number`);
      const snaps = (m.snapshots ?? []).map((s) => [s['snapshot-id'], s['sequence-number'], JSON.stringify(s.summary)]);
      const wantSnaps = t.snapshots.map((s) => [s.snapshot_id, s.sequence_number, JSON.stringify(s.summary)]);
      ok(JSON.stringify(snaps) === JSON.stringify(wantSnaps), `${t.name}: snapshots differ from freshet tables --json`);
      const schema = m.schemas.find((s) => s['schema-id'] === m['current-schema-id']);
      const cols = schema.fields.map((f) => f.name);
      out.tables[t.name] = { location: res['metadata-location'], records: t.records, snapshot: t.current_snapshot_id };
      if (t.current_snapshot_id < 0) continue;

      // the live files, as icebird decodes the manifests the REST answer points at
      const manifests = await icebergManifests(m);
      const live = manifests.flatMap((mf) => mf.entries).filter((e) => e.status !== 2 && e.data_file.content === 0);
      const paths = live.map((e) => toLocal(e.data_file.file_path));
      ok(paths.length === t.files, `${t.name}: ${paths.length} live files, freshet tables says ${t.files}`);
      const list = paths.map((p) => `'${p.replaceAll("'", "''")}'`).join(',');
      const duckCount = Number((await conn.runAndReadAll(
        `SELECT count(*) AS n FROM read_parquet([${list}], union_by_name = true)`)).getRowObjects()[0].n);
      const duckCols = (await conn.runAndReadAll(
        `DESCRIBE SELECT * FROM read_parquet([${list}], union_by_name = true)`)).getRowObjects().map((r) => r.column_name);
      ok(JSON.stringify(duckCols) === JSON.stringify(cols),
        `${t.name}: REST schema columns ${cols} vs DuckDB over the files ${duckCols}`);
      let rows = [];
      try {
        rows = await icebergRead({ tableUrl: toLake(m.location), metadata: m });
      } catch (e) {
        ok(false, `${t.name}: icebird failed: ${e.message}`);
      }
      icebirdTables++;
      ok(rows.length === t.records, `${t.name}: icebird read ${rows.length} rows, freshet tables says ${t.records}`);
      ok(duckCount === t.records, `${t.name}: DuckDB counts ${duckCount}, freshet tables says ${t.records}`);
      if (rows.length) {
        ok(cols.every((c) => c in rows[0]), `${t.name}: icebird rows lack some of ${cols}`);
      }
    }
  } finally {
    globalThis.fetch = realFetch;
  }
  ok(icebirdTables >= 3, `only ${icebirdTables} tables with data were read by icebird`);

  // ----------------------------------------------------------- writes
  const noAuth = new IcebergRestCatalog({ baseUrl: `${base}/iceberg`, warehouse: 'freshet' });
  await expectError('create a namespace without the token', 401, null,
    () => noAuth.createNamespace({ namespace: ['rest_js'] }));
  const wrongAuth = new IcebergRestCatalog({
    baseUrl: `${base}/iceberg`, warehouse: 'freshet', auth: { type: 'bearer', token: `${token}x` } });
  await expectError('create a namespace with a wrong token', 401, null,
    () => wrongAuth.createNamespace({ namespace: ['rest_js'] }));

  const ns = { namespace: ['rest_js'] };
  await catalog.createNamespace(ns, { properties: { owner: 'iceberg-js', purpose: 'interop' } });
  await expectError('create it again', 409, 'AlreadyExistsException', () => catalog.createNamespace(ns));
  const nsMeta = await catalog.loadNamespaceMetadata(ns);
  ok(nsMeta.properties.owner === 'iceberg-js' && nsMeta.properties.purpose === 'interop',
    `namespace properties ${JSON.stringify(nsMeta)}`);
  const upd = await catalog.updateNamespaceProperties(ns, { updates: { stage: 'test' }, removals: ['purpose', 'absent'] });
  ok(JSON.stringify(upd.updated) === '["stage"]' && JSON.stringify(upd.removed) === '["purpose"]' &&
     JSON.stringify(upd.missing) === '["absent"]', `update properties ${JSON.stringify(upd)}`);

  // a nested namespace: listed one level below its parent, then dropped
  await catalog.createNamespace({ namespace: ['rest_js', 'sub'] });
  const { namespaces: kids } = await catalog.listNamespaces({ parent: ns });
  ok(JSON.stringify(kids.map((k) => k.namespace)) === '[["rest_js","sub"]]', `children ${JSON.stringify(kids)}`);
  const { namespaces: top } = await catalog.listNamespaces();
  ok(!top.some((k) => k.namespace.length > 1), `top level lists a child: ${JSON.stringify(top)}`);
  await catalog.dropNamespace({ namespace: ['rest_js', 'sub'] });
  ok(await catalog.namespaceExists({ namespace: ['rest_js', 'sub'] }) === false, 'nested namespace dropped');

  const tid = { namespace: ['rest_js'], name: 'events' };
  const created = await catalog.createTable(ns, {
    name: 'events',
    schema: {
      type: 'struct',
      'schema-id': 0,
      fields: [
        { id: 1, name: 'id', type: 'long', required: true },
        { id: 2, name: 'at', type: 'timestamptz', required: false },
        { id: 3, name: 'wiki', type: 'string', required: false },
      ],
    },
    'partition-spec': { 'spec-id': 0, fields: [{ 'source-id': 2, 'field-id': 1000, name: 'at_day', transform: 'day' }] },
    'write-order': { 'order-id': 0, fields: [] },
    properties: { 'write.format.default': 'parquet' },
  });
  ok(created['format-version'] === 2 && created['last-column-id'] === 3, `created ${JSON.stringify(created).slice(0, 200)}`);
  ok(created['partition-specs'][0].fields[0].transform === 'day', 'created: partition spec');
  const { identifiers: jsTables } = await catalog.listTables(ns);
  ok(jsTables.length === 1 && jsTables[0].name === 'events', `tables in rest_js ${JSON.stringify(jsTables)}`);

  const committed = await catalog.updateTable(tid, {
    requirements: [
      { type: 'assert-table-uuid', uuid: created['table-uuid'] },
      { type: 'assert-current-schema-id', 'current-schema-id': 0 },
      { type: 'assert-last-assigned-field-id', 'last-assigned-field-id': 3 },
      { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null },
    ],
    updates: [
      { action: 'add-schema', schema: { type: 'struct', 'schema-id': 1, fields: [
        { id: 1, name: 'id', type: 'long', required: true },
        { id: 2, name: 'at', type: 'timestamptz', required: false },
        { id: 3, name: 'wiki', type: 'string', required: false },
        { id: 4, name: 'bytes', type: 'long', required: false },
      ] }, 'last-column-id': 4 },
      { action: 'set-current-schema', 'schema-id': -1 },
      { action: 'add-sort-order', 'sort-order': { 'order-id': 1, fields: [
        { transform: 'identity', 'source-id': 1, direction: 'asc', 'null-order': 'nulls-first' }] } },
      { action: 'set-default-sort-order', 'sort-order-id': -1 },
      { action: 'set-properties', updates: { 'commit.by': 'iceberg-js' } },
    ],
  });
  const cm = committed.metadata;
  ok(cm['current-schema-id'] === 1 && cm['last-column-id'] === 4, `commit: schema ${cm['current-schema-id']} / ${cm['last-column-id']}`);
  ok(cm['default-sort-order-id'] === 1, `commit: sort order ${cm['default-sort-order-id']}`);
  ok(cm.properties['commit.by'] === 'iceberg-js', 'commit: property');
  ok(/\/00002-[0-9a-f-]+\.metadata\.json$/.test(committed['metadata-location']), `commit: ${committed['metadata-location']}`);
  const reloaded = await catalog.loadTableResult(tid);
  ok(reloaded['metadata-location'] === committed['metadata-location'], 'commit: reload names the new file');

  // a failing requirement: 409, and nothing changes
  await expectError('stale schema id', 409, 'CommitFailedException', () => catalog.updateTable(tid, {
    requirements: [{ type: 'assert-current-schema-id', 'current-schema-id': 0 }],
    updates: [{ action: 'set-properties', updates: { stale: 'yes' } }],
  }));
  const after = await catalog.loadTableResult(tid);
  ok(after['metadata-location'] === committed['metadata-location'], 'a failed commit moved the table');
  ok(!('stale' in after.metadata.properties), 'a failed commit changed a property');
  await expectError('unsupported update', 400, 'BadRequestException', () => catalog.updateTable(tid, {
    requirements: [],
    updates: [{ action: 'set-statistics', 'snapshot-id': 1, statistics: {} }],
  }));

  // concurrent commits without requirements: each answers 200 or 409 (lost
  // every retry), and the table holds exactly the properties of the 200s
  const results = await Promise.allSettled([...Array(8).keys()].map((i) =>
    catalog.updateTable(tid, { requirements: [], updates: [{ action: 'set-properties', updates: { [`c${i}`]: String(i) } }] })));
  const conc = (await catalog.loadTable(tid)).properties;
  results.forEach((r, i) => {
    ok(r.status === 'fulfilled' || (r.reason instanceof IcebergError && r.reason.status === 409),
      `concurrent commit ${i}: ${r.status} ${r.reason?.status} ${r.reason?.message}`);
    ok((conc[`c${i}`] === String(i)) === (r.status === 'fulfilled'), `concurrent commit ${i}: property vs answer`);
  });
  ok(results.some((r) => r.status === 'fulfilled'), 'no concurrent commit succeeded');

  // a tag on a wiki table's current snapshot, then removed again
  const tagged = lakeTables.find((t) => t.namespace === 'wiki' && t.current_snapshot_id >= 0);
  const wid = { namespace: ['wiki'], name: tagged.name };
  const tagRes = await catalog.updateTable(wid, {
    requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': tagged.current_snapshot_id }],
    updates: [{ action: 'set-snapshot-ref', 'ref-name': 'rest-tag', type: 'tag', 'snapshot-id': tagged.current_snapshot_id }],
  });
  ok(tagRes.metadata.refs['rest-tag']?.['snapshot-id'] === tagged.current_snapshot_id, 'tag set');
  ok(tagRes.metadata.refs.main?.['snapshot-id'] === tagged.current_snapshot_id, 'main kept');
  const untag = await catalog.updateTable(wid, {
    requirements: [], updates: [{ action: 'remove-snapshot-ref', 'ref-name': 'rest-tag' }] });
  ok(!('rest-tag' in untag.metadata.refs), 'tag removed');
  await expectError('drop a namespace that holds tables', 409, 'NamespaceNotEmptyException',
    () => catalog.dropNamespace({ namespace: ['wiki'] }));

  // a second table, dropped, and its namespace once empty
  await catalog.createNamespace({ namespace: ['rest_tmp'] });
  await catalog.createTable({ namespace: ['rest_tmp'] }, {
    name: 'gone', schema: { type: 'struct', fields: [{ id: 1, name: 'a', type: 'int', required: false }] } });
  await expectError('drop with purge (not supported, so refused)', 400, 'BadRequestException',
    () => catalog.dropTable({ namespace: ['rest_tmp'], name: 'gone' }, { purge: true }));
  ok(await catalog.tableExists({ namespace: ['rest_tmp'], name: 'gone' }) === true, 'a refused drop dropped');
  await catalog.dropTable({ namespace: ['rest_tmp'], name: 'gone' });
  ok(await catalog.tableExists({ namespace: ['rest_tmp'], name: 'gone' }) === false, 'dropped table exists');
  await catalog.dropNamespace({ namespace: ['rest_tmp'] });
  ok(await catalog.namespaceExists({ namespace: ['rest_tmp'] }) === false, 'dropped namespace exists');

  const final = await catalog.loadTableResult(tid);
  out.created = { namespace: 'rest_js', name: 'events', location: final['metadata-location'],
    tagged: tagged.name, tagged_location: untag['metadata-location'] };
  fs.writeFileSync(outPath, JSON.stringify(out, null, 1));
} catch (e) {
  ok(false, `unexpected: ${e.stack || e}`);
} finally {
  conn.closeSync();
}
console.log(`rest_interop: ${checks - failures} of ${checks} checks passed (${restCalls} REST calls)`);
console.log(`${failures ? 0 : 1} passed, ${failures ? 1 : 0} failed`);
process.exit(failures ? 1 : 0);
