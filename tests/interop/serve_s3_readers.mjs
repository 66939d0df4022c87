// serve_s3_readers.mjs — independent readers of an S3 lake through
// `freshet serve`'s /lake/ routes (tests/integration/serve_s3.sh).
//
//   node serve_s3_readers.mjs BASE WAREHOUSE_URI DOWNLOADED_JSON
//
// BASE is serve's http://127.0.0.1:PORT, WAREHOUSE_URI the lake's
// s3://bucket/prefix, DOWNLOADED_JSON the data files downloaded from the
// bucket with s3_tool (not through serve): [{table, rel, local}].
//
// 1. DuckDB (@duckdb/node-api, extension autoload off) counts every table's
//    rows over the downloaded files: the expected figures.
// 2. icebird reads every table from BASE/lake/wiki/<table>: version-hint,
//    metadata JSON, manifest list and manifests, data files. The metadata
//    names objects as s3://bucket/prefix/..., which icebird turns into
//    https://bucket.s3.amazonaws.com/prefix/...; a fetch wrapper sends
//    those to BASE/lake/... (what a reader pointed at serve instead of the
//    bucket does). Any other URL fails the test: nothing leaves loopback.
// 3. hyparquet reads every data file /api/v1/tables lists, with range
//    requests through /lake/ (asyncBufferFromUrl), all rows.
// Rows counted by icebird and by hyparquet must equal DuckDB's, table by
// table. Exit 0 pass, 1 fail, 77 when a package is missing.
import fs from 'node:fs';
import path from 'node:path';
import {fileURLToPath} from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
for (const pkg of ['icebird', 'hyparquet', '@duckdb/node-api']) {
    if (!fs.existsSync(path.join(here, 'node_modules', pkg, 'package.json'))) {
        console.log(`skip: ${pkg} is not installed in tests/interop/node_modules`);
        process.exit(77);
    }
}
const {icebergRead} = await import('icebird');
const {asyncBufferFromUrl, parquetMetadataAsync, parquetReadObjects} = await import('hyparquet');
const {compressors} = await import('hyparquet-compressors');
const {DuckDBInstance} = await import('@duckdb/node-api');

const [base, warehouse, downloadedPath] = process.argv.slice(2);
if (!base || !warehouse || !downloadedPath) {
    console.log('usage: node serve_s3_readers.mjs BASE WAREHOUSE_URI DOWNLOADED_JSON');
    process.exit(2);
}
const m = /^s3:\/\/([^/]+)\/(.*)$/.exec(warehouse);
const s3Https = `https://${m[1]}.s3.amazonaws.com/${m[2]}/`;
const downloaded = JSON.parse(fs.readFileSync(downloadedPath, 'utf8'));

let failures = 0;
function check(ok, what, detail) {
    console.log(`${ok ? 'ok' : 'FAIL'}: ${what}${ok || detail === undefined ? '' : ` — ${JSON.stringify(detail)}`}`);
    if (!ok) {
        failures++;
    }
}

// Every request goes to serve; the bucket's URLs are mapped onto /lake/.
const realFetch = globalThis.fetch;
const seen = {mapped: 0, direct: 0, other: []};
globalThis.fetch = async (url, init) => {
    let u = String(url instanceof Request ? url.url : url);
    if (u.startsWith(s3Https)) {
        u = `${base}/lake/${u.slice(s3Https.length)}`;
        seen.mapped++;
    } else if (u.startsWith(`${base}/`)) {
        seen.direct++;
    } else {
        seen.other.push(u);
        throw new Error(`refused: ${u} is not serve's`);
    }
    return realFetch(u, init);
};

// 1. DuckDB over the downloads.
const duck = await DuckDBInstance.create(':memory:', {
    autoinstall_known_extensions: 'false',
    autoload_known_extensions: 'false',
});
const dc = await duck.connect();
const byTable = new Map();
for (const d of downloaded) {
    if (!byTable.has(d.table)) {
        byTable.set(d.table, []);
    }
    byTable.get(d.table).push(d.local);
}
const expected = {};
for (const [table, files] of byTable) {
    const list = files.map(f => `'${f.replace(/'/g, "''")}'`).join(',');
    const r = await dc.runAndReadAll(`SELECT count(*) AS n FROM read_parquet([${list}])`);
    expected[table] = Number(r.getRowObjects()[0].n);
}
console.log(`DuckDB over the bucket's files: ${JSON.stringify(expected)}`);

const api = await (await realFetch(`${base}/api/v1/tables`)).json();
check(api.tables.length >= 6, 'serve lists the lake\'s tables', api.tables.map(t => t.name));
let tablesRead = 0;
for (const t of api.tables) {
    const want = expected[t.name] ?? 0;
    if (!t.files.length) {
        check(want === 0, `${t.name}: no data file listed, none downloaded`, want);
        continue;
    }
    // 2. icebird through /lake/.
    let rows;
    try {
        rows = await icebergRead({tableUrl: `${base}/lake/${t.namespace}/${t.name}`});
    } catch (err) {
        check(false, `${t.name}: icebird read`, String(err && err.stack || err));
        continue;
    }
    check(rows.length === want && want > 0, `${t.name}: icebird reads ${rows.length} rows, DuckDB counts ${want}`,
          {icebird: rows.length, duckdb: want});
    // 3. hyparquet, every listed file with range requests.
    let hy = 0;
    let footer = 0;
    for (const f of t.files) {
        const file = await asyncBufferFromUrl({url: `${base}${f.url}`});
        const meta = await parquetMetadataAsync(file);
        footer += Number(meta.num_rows);
        const objs = await parquetReadObjects({file, metadata: meta, compressors});
        hy += objs.length;
    }
    check(hy === want && footer === want, `${t.name}: hyparquet reads ${hy} rows from ${t.files.length} files`,
          {hyparquet: hy, footers: footer, duckdb: want});
    tablesRead++;
}
check(tablesRead >= 6, `${tablesRead} tables read by both readers`);
check(seen.mapped > 0 && seen.other.length === 0,
      `icebird's ${seen.mapped} bucket URLs all went to serve's /lake/ (and ${seen.direct} direct requests)`,
      seen.other.slice(0, 3));
globalThis.fetch = realFetch;
dc.closeSync?.();
process.exit(failures ? 1 : 0);
