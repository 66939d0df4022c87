// explorer_s3.mjs — the SQL explorer in Debian's headless Chromium over a
// lake whose warehouse is an S3 bucket, read through `freshet serve`'s
// /lake/ passthrough (started by tests/integration/serve_s3.sh browser).
//
//   node tests/browser/explorer_s3.mjs BASE DOWNLOADED_JSON OUT_DIR
//
// BASE is serve's http://127.0.0.1:PORT; DOWNLOADED_JSON lists the data
// files the shell downloaded from the bucket with s3_tool, not through
// serve ([{table, rel, local}]); screenshots go to OUT_DIR.
//
// Checks:
//   1. Offline, as tests/browser/pages.mjs: every request not to 127.0.0.1
//      is aborted and fails the test.
//   2. The explorer starts (DuckDB-WASM) and lists the lake's tables.
//   3. The "Rows per table" preset, clicked on the page, shows for every
//      table the count DuckDB (@duckdb/node-api) gives over the downloaded
//      files.
//   4. A query typed into the editor and run with the Run button (rows per
//      wiki and type of silver_recentchange: column data, not only
//      footers) shows exactly the rows DuckDB gives over the downloads.
//   5. DuckDB-WASM read the Parquet files with range requests that serve
//      answered 206 from the bucket.
// Exit 0 pass, 1 fail, 77 skip (no chromium or playwright-core).
import fs from 'node:fs';
import {createRequire} from 'node:module';
import path from 'node:path';
import {fileURLToPath, pathToFileURL} from 'node:url';
import {check, failures, launchOffline, log, skipUnlessReady, waitFor} from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
skipUnlessReady(here);
const [base, downloadedPath, outArg] = process.argv.slice(2);
if (!base || !downloadedPath) {
    console.log('usage: node explorer_s3.mjs BASE DOWNLOADED_JSON [OUT_DIR]');
    process.exit(2);
}
const out = path.resolve(outArg || 'explorer-s3');
fs.mkdirSync(out, {recursive: true});
const interop = createRequire(path.join(here, '../interop/package.json'));
const {DuckDBInstance} = await import(pathToFileURL(interop.resolve('@duckdb/node-api')).href);


// ---- the expected figures: DuckDB over the files downloaded from the bucket
const downloaded = JSON.parse(fs.readFileSync(downloadedPath, 'utf8'));
const duck = await DuckDBInstance.create(':memory:', {
    autoinstall_known_extensions: 'false',
    autoload_known_extensions: 'false',
});
const dc = await duck.connect();
const filesOf = {};
for (const d of downloaded) {
    (filesOf[d.table] ||= []).push(`'${d.local.replace(/'/g, "''")}'`);
}
const expected = {};
for (const [table, files] of Object.entries(filesOf)) {
    const r = await dc.runAndReadAll(`SELECT count(*) AS n FROM read_parquet([${files.join(',')}])`);
    expected[table] = Number(r.getRowObjects()[0].n);
}
const PER_WIKI = 'SELECT wiki, type, count(*) AS n FROM silver_recentchange GROUP BY wiki, type ORDER BY wiki, type';
const wantWiki = (await dc.runAndReadAll(PER_WIKI.replace('FROM silver_recentchange',
    `FROM read_parquet([${filesOf.silver_recentchange.join(',')}])`))).getRowObjects()
    .map(r => `${r.wiki}|${r.type}|${Number(r.n)}`);
log(`DuckDB over the bucket's files: ${JSON.stringify(expected)}; ${wantWiki.length} (wiki, type) rows`);

// ---- the browser, offline
let offBox = [];
const lakeAnswers = {};
let ctx = null;
try {
    const browser = await launchOffline(out);
    ({ctx, offBox} = browser);
    const {page, errors} = browser;
    // The worker's requests show on the context, not only on the page.
    ctx.on('response', r => {
        const u = new URL(r.url());
        if (u.pathname.startsWith('/lake/')) {
            lakeAnswers[r.status()] = (lakeAnswers[r.status()] || 0) + 1;
        }
    });

    log('explorer: open');
    await page.goto(`${base}/explorer`, {waitUntil: 'load'});
    await page.evaluate(() => window.freshetExplorer.ready);
    const listed = await page.evaluate(() => document.querySelector('#tables-note').textContent);
    check(/^[6-9] tables|^[1-9][0-9]+ tables/.test(listed), `the explorer lists the lake's tables (${listed})`);

    // 3. the preset, clicked
    const rows = async () => page.evaluate(() => {
        const heads = [...document.querySelectorAll('#result thead th')].map(th => th.firstChild.textContent);
        return [...document.querySelectorAll('#result tbody tr')]
            .filter(tr => !tr.querySelector('td.null[colspan]'))
            .map(tr => Object.fromEntries([...tr.cells].map((td, i) => [heads[i], td.textContent])));
    });
    const runAndWait = async (what, action) => {
        const n0 = await page.evaluate(() => window.freshetExplorer.state.queries);
        await action();
        await waitFor(what, () => page.evaluate(
            n => window.freshetExplorer.state.queries > n || !document.querySelector('#error').hidden, n0), 60000, 200);
        const err = await page.evaluate(() => (document.querySelector('#error').hidden ? null
            : document.querySelector('#error').textContent));
        if (err) {
            throw new Error(`${what}: ${err}`);
        }
    };
    const int = s => Number(String(s).replace(/,/g, ''));
    await runAndWait('the row-counts preset', () => page.click('[data-preset="row-counts"]'));
    await page.screenshot({path: path.join(out, 'explorer-s3-row-counts.png'), fullPage: true});
    const got = Object.fromEntries((await rows()).map(r => [r.table_name, int(r.row_count)]));
    const names = Object.keys(expected);
    check(names.length >= 6 && names.every(t => got[t] === expected[t] && expected[t] > 0),
          'Rows per table on the page: every table as DuckDB counts the bucket\'s files',
          {explorer: got, duckdb: expected});

    // 4. a query typed into the editor
    await page.fill('#sql', PER_WIKI);
    await runAndWait('the typed query', () => page.click('#run'));
    await page.screenshot({path: path.join(out, 'explorer-s3-per-wiki.png'), fullPage: true});
    const gotWiki = (await rows()).map(r => `${r.wiki}|${r.type}|${int(r.n)}`);
    check(gotWiki.length === wantWiki.length && gotWiki.every((x, i) => x === wantWiki[i]),
          `silver per wiki and type on the page: the ${wantWiki.length} rows DuckDB gives`,
          {explorer: gotWiki.slice(0, 5), duckdb: wantWiki.slice(0, 5)});

    // 5. how the files were read
    check((lakeAnswers[206] || 0) > 0 && !Object.keys(lakeAnswers).some(s => Number(s) >= 400),
          `DuckDB-WASM read /lake/ with range requests (answers by status: ${JSON.stringify(lakeAnswers)})`,
          lakeAnswers);
    check(errors.length === 0, 'no script errors on the page', errors.slice(0, 5));
} catch (err) {
    check(false, 'the explorer over the S3 lake', String(err && err.stack || err));
} finally {
    if (ctx) {
        await ctx.close();
    }
}
check(offBox.length === 0, 'nothing was requested off the machine', offBox.slice(0, 5));
log(failures() ? `${failures()} checks failed` : 'all checks passed');
process.exit(failures() ? 1 : 0);
