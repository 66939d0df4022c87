// iceberg_interop.mjs — freshet's Iceberg tables read by independent readers.
//
//   node iceberg_interop.mjs GEN DIR
//
// 1. Starts a static file server on 127.0.0.1 (ephemeral port, HTTP Range
//    support) over DIR/lake/warehouse.
// 2. Runs GEN (test_iceberg_interop) to build a lake whose metadata names
//    every file under http://127.0.0.1:PORT — appends, day / hour /
//    identity partitions, a column added later, compaction + expiry, an
//    overwrite — and to write DIR/expect.json: per table, the rows the
//    current snapshot must hold and the local paths of its live files.
// 3. For every table: icebird (npm) finds the current version through
//    metadata/version-hint.text, reads the Avro manifest list and
//    manifests, and reads every row over HTTP; the rows are compared value
//    by value with expect.json. The metadata JSON is checked for every
//    field the v2 spec requires. The data files the manifests list (as
//    icebird decoded them) are read by DuckDB (@duckdb/node-api, extension
//    autoload off) and compared with the same rows.
// 4. Builds a second lake with the default file:// root and reads every
//    table through icebird with a fetch that maps file: URLs to disk.
//
// Exit status: 0 all good, 1 a mismatch, 77 when node_modules lacks icebird
// or DuckDB (run scripts/setup.sh --test).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
for (const pkg of ['icebird', '@duckdb/node-api']) {
  if (!fs.existsSync(path.join(here, 'node_modules', pkg, 'package.json'))) {
    console.log(`skip: ${pkg} is not installed in tests/interop/node_modules (run scripts/setup.sh --test)`);
    process.exit(77);
  }
}
const { icebergRead, icebergMetadata, icebergManifests } = await import('icebird');
const { DuckDBInstance } = await import('@duckdb/node-api');

const [gen, dir] = process.argv.slice(2);
if (!gen || !dir) {
  console.log('usage: node iceberg_interop.mjs GEN DIR');
  process.exit(2);
}
fs.rmSync(dir, { recursive: true, force: true });
fs.mkdirSync(dir, { recursive: true });
const root = path.join(dir, 'lake', 'warehouse');

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

// ------------------------------------------------------ static server

let requests = 0;
let ranges = 0;
const server = http.createServer((req, res) => {
  requests++;
  const rel = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  const file = path.join(root, rel);
  if (!file.startsWith(root) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
    res.writeHead(404);
    res.end();
    return;
  }
  const size = fs.statSync(file).size;
  const m = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range || '');
  if (m) {
    ranges++;
    let start = m[1] === '' ? size - Number(m[2]) : Number(m[1]);
    let end = m[1] !== '' && m[2] !== '' ? Number(m[2]) : size - 1;
    if (start < 0) start = 0;
    if (end >= size) end = size - 1;
    res.writeHead(206, {
      'Content-Range': `bytes ${start}-${end}/${size}`,
      'Content-Length': end - start + 1,
      'Accept-Ranges': 'bytes',
    });
    if (req.method === 'HEAD') return res.end();
    fs.createReadStream(file, { start, end }).pipe(res);
    return;
  }
  res.writeHead(200, { 'Content-Length': size, 'Accept-Ranges': 'bytes' });
  if (req.method === 'HEAD') return res.end();
  fs.createReadStream(file).pipe(res);
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${server.address().port}`;

try {
  // ------------------------------------------------------ write the lake
  const expectPath = path.join(dir, 'expect.json');
  execFileSync(gen, [dir, base, expectPath], { stdio: 'inherit' });
  const expect = JSON.parse(fs.readFileSync(expectPath, 'utf8'));

  const v2Required = ['format-version', 'table-uuid', 'location', 'last-sequence-number',
    'last-updated-ms', 'last-column-id', 'schemas', 'current-schema-id', 'partition-specs',
    'default-spec-id', 'last-partition-id', 'sort-orders', 'default-sort-order-id'];

  // canonical row: [id, wiki, ts_us, delta, extra?] from an icebird object
  function fromIcebird(r, cols) {
    return cols.map((c) => {
      let v = r[c];
      if (v === undefined || v === null) return null;
      if (c === 'ts') {
        if (v instanceof Date) return BigInt(v.getTime()) * 1000n;
        return BigInt(v);
      }
      if (typeof v === 'bigint') return v;
      if (c === 'id') return BigInt(v);
      return v;
    });
  }
  function fromExpect(r, cols) {
    return cols.map((c, i) => (r[i] === null ? null : c === 'id' || c === 'ts' ? BigInt(r[i]) : r[i]));
  }
  function fromDuck(r, cols) {
    return cols.map((c) => {
      const v = r[c];
      if (v === undefined || v === null) return null;
      if (c === 'ts') return typeof v === 'object' && 'micros' in v ? BigInt(v.micros) : BigInt(v);
      if (c === 'id') return BigInt(v);
      return v;
    });
  }
  const key = (row) => row.map((v) => (v === null ? '∅' : String(v))).join('|');
  function compare(name, reader, got, want) {
    ok(got.length === want.length, `${name} ${reader}: ${got.length} rows, expected ${want.length}`);
    const g = got.map(key).sort();
    const w = want.map(key).sort();
    let bad = 0;
    for (let i = 0; i < Math.min(g.length, w.length); i++) {
      if (g[i] !== w[i]) {
        if (bad++ < 3) ok(false, `${name} ${reader}: row ${i}: got ${g[i]}, expected ${w[i]}`);
      } else {
        checks++;
      }
    }
  }

  const duck = await DuckDBInstance.create(':memory:', {
    autoinstall_known_extensions: 'false',
    autoload_known_extensions: 'false',
  });
  const conn = await duck.connect();

  for (const [name, t] of Object.entries(expect.tables)) {
    const tableUrl = `${base}/wiki/${name}`;
    ok(t.location === tableUrl, `${name}: location ${t.location} is not ${tableUrl}`);
    // metadata through version-hint.text, as a catalog-free reader finds it
    const meta = await icebergMetadata({ tableUrl });
    for (const f of v2Required) ok(f in meta, `${name}: metadata lacks required v2 field ${f}`);
    ok(meta['format-version'] === 2, `${name}: format-version ${meta['format-version']}`);
    ok(!('schema' in meta) && !('partition-spec' in meta), `${name}: v1-only fields present`);
    ok(meta['current-snapshot-id'] === Number(t.snapshot_id) ||
       BigInt(meta['current-snapshot-id']) === BigInt(t.snapshot_id),
       `${name}: current snapshot ${meta['current-snapshot-id']} != ${t.snapshot_id}`);
    const snap = meta.snapshots.find((s) => s['snapshot-id'] === meta['current-snapshot-id']);
    ok(snap && snap.summary && snap.summary.operation, `${name}: current snapshot has no summary`);
    ok(snap && Number(snap.summary['total-records']) === t.rows.length,
       `${name}: summary total-records ${snap && snap.summary['total-records']} != ${t.rows.length}`);

    // every row, through icebird over HTTP
    const want = t.rows.map((r) => fromExpect(r, t.columns));
    let rows = [];
    try {
      rows = await icebergRead({ tableUrl });
    } catch (e) {
      ok(false, `${name}: icebird failed: ${e.message}`);
    }
    compare(name, 'icebird', rows.map((r) => fromIcebird(r, t.columns)), want);

    // the manifests as icebird decodes them name exactly freshet's live files
    const manifests = await icebergManifests(meta);
    const live = [];
    for (const m of manifests) {
      for (const e of m.entries) {
        if (e.status === 2) continue;
        ok(e.sequence_number !== undefined, `${name}: entry without a sequence number`);
        live.push(e.data_file);
      }
    }
    const localOf = (u) => path.join(root, decodeURIComponent(new URL(u).pathname));
    const livePaths = live.map((d) => localOf(d.file_path)).sort();
    ok(JSON.stringify(livePaths) === JSON.stringify([...t.files].sort()),
       `${name}: manifests list ${livePaths.length} files, freshet ${t.files.length}`);
    for (const d of live) {
      ok(Number(d.file_size_in_bytes) === fs.statSync(localOf(d.file_path)).size,
         `${name}: ${d.file_path}: file_size_in_bytes ${d.file_size_in_bytes} is wrong`);
      ok(String(d.file_format).toUpperCase() === 'PARQUET', `${name}: file_format ${d.file_format}`);
    }

    // DuckDB reads those files (union by name: older files lack "extra")
    const list = livePaths.map((p) => `'${p.replaceAll("'", "''")}'`).join(',');
    const reader = await conn.runAndReadAll(
      `SELECT ${t.columns.join(', ')} FROM read_parquet([${list}], union_by_name = true)`);
    const drows = reader.getRowObjects().map((r) => fromDuck(r, t.columns));
    compare(name, 'duckdb', drows, want);
    // record counts in the manifests are exact
    const counted = live.reduce((n, d) => n + Number(d.record_count), 0);
    ok(counted === t.rows.length, `${name}: manifests count ${counted} records, not ${t.rows.length}`);
  }
  // partition values as icebird decodes them (hourly: hour and identity)
  {
    const meta = await icebergMetadata({ tableUrl: `${base}/wiki/hourly` });
    const spec = meta['partition-specs'][0].fields.map((f) => f.transform).join(',');
    ok(spec === 'hour,identity', `hourly: spec ${spec}`);
    const manifests = await icebergManifests(meta);
    const seen = new Set();
    for (const m of manifests) {
      for (const e of m.entries) seen.add(`${e.data_file.partition.ts_hour}/${e.data_file.partition.wiki}`);
    }
    const h0 = Math.floor(Number(1790000000000000n / 3600000000n));
    for (const want of [`${h0}/enwiki`, `${h0}/dewiki`, `${h0 + 1}/enwiki`, `${h0 + 5}/frwiki`]) {
      ok(seen.has(want), `hourly: partition ${want} missing (have ${[...seen].join(' ')})`);
    }
  }
  ok(ranges > 0, 'no HTTP range request was made');
  conn.closeSync();

  // The default configuration: a lake rooted at file:// (what Spark and
  // pyiceberg expect), read by icebird through a fetch that maps file: URLs
  // to disk and honours Range (the recipe in docs/ENGINES.md).
  const dir2 = path.join(dir, 'file-rooted');
  fs.mkdirSync(dir2, { recursive: true });
  const root2 = `file://${path.resolve(dir2)}/lake/warehouse`;
  const expect2Path = path.join(dir2, 'expect.json');
  execFileSync(gen, [dir2, root2, expect2Path], { stdio: 'inherit' });
  const expect2 = JSON.parse(fs.readFileSync(expect2Path, 'utf8'));
  const realFetch = globalThis.fetch;
  let fileReads = 0;
  globalThis.fetch = async (url, init) => {
    const u = String(url);
    if (!u.startsWith('file://')) return realFetch(url, init);
    fileReads++;
    const buf = fs.readFileSync(decodeURIComponent(new URL(u).pathname));
    const m = /bytes=(\d+)-(\d+)?/.exec(new Headers(init?.headers).get('range') ?? '');
    if (!m) return new Response(buf, { status: 200 });
    const end = m[2] ? Number(m[2]) + 1 : buf.length;
    return new Response(buf.subarray(Number(m[1]), end), { status: 206 });
  };
  try {
    for (const [name, t] of Object.entries(expect2.tables)) {
      ok(t.location === `${root2}/wiki/${name}`, `file-rooted ${name}: location ${t.location}`);
      let rows = [];
      try {
        rows = await icebergRead({ tableUrl: t.location });
      } catch (e) {
        ok(false, `file-rooted ${name}: icebird failed: ${e.message}`);
      }
      compare(`file-rooted ${name}`, 'icebird', rows.map((r) => fromIcebird(r, t.columns)),
        t.rows.map((r) => fromExpect(r, t.columns)));
    }
  } finally {
    globalThis.fetch = realFetch;
  }
  ok(fileReads > 0, 'no file: URL was read');
} catch (e) {
  ok(false, `exception: ${e.stack || e}`);
} finally {
  server.close();
}
console.log(`${checks - failures} passed, ${failures} failed (${requests} HTTP requests, ${ranges} ranged)`);
process.exit(failures ? 1 : 0);
