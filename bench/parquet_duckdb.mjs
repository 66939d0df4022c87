// parquet_duckdb.mjs — the DuckDB side of bench/parquet.sh, and the report.
//
//   node bench/parquet_duckdb.mjs OUTDIR [REPEAT]
//
// Loads OUTDIR/rows.ndjson (the rows bench_parquet wrote with freshet) into
// an in-memory DuckDB table with the same column types (not timed), then
// times DuckDB writing that table to zstd Parquet (COMPRESSION_LEVEL 3, as
// freshet's default) with its default threads and with one thread, and
// reading each file back into a table (every value materialised). Memory is
// the RSS high-water mark during each phase (reset through
// /proc/self/clear_refs) and its growth over the RSS at the phase start,
// measured the same way as bench_parquet does; CPU seconds are the whole
// process's (DuckDB's threads included). Each phase runs REPEAT times
// (default 5): the table shows the median and, in brackets, the best run,
// since the machine may be shared. Checks that DuckDB sees the same
// aggregates in freshet's file and in its own, then prints the side-by-side
// table with the freshet results from OUTDIR/freshet_*.txt.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const req = createRequire(path.join(here, '..', 'tests', 'interop', 'package.json'));
let duckPath;
try {
  duckPath = req.resolve('@duckdb/node-api');
} catch {
  console.log('skip: @duckdb/node-api is not installed in tests/interop (run scripts/setup.sh --test)');
  process.exit(77);
}
const { DuckDBInstance } = await import(pathToFileURL(duckPath).href);

const out = process.argv[2];
const repeat = Number(process.argv[3] ?? 5);
const nd = path.join(out, 'rows.ndjson');
const q = (s) => `'${s.replaceAll("'", "''")}'`;

function status(field) {
  const m = new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) : -1;
}
async function measure(fn) {
  const rss0 = status('VmRSS');
  fs.writeFileSync('/proc/self/clear_refs', '5');
  const c0 = process.cpuUsage(); // the whole process, DuckDB's threads included
  const t0 = process.hrtime.bigint();
  await fn();
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const c1 = process.cpuUsage(c0);
  const hwm = status('VmHWM');
  return { seconds: secs, cpu_seconds: (c1.user + c1.system) / 1e6, peak_rss_mb: hwm / 1024, rss_growth_mb: (hwm - rss0) / 1024 };
}

const inst = await DuckDBInstance.create(':memory:', {
  autoinstall_known_extensions: 'false',
  autoload_known_extensions: 'false',
});
const con = await inst.connect();
await con.run("SET TimeZone = 'UTC'");
await con.run(`CREATE TABLE silver AS SELECT
    meta_id, wiki, type, CAST(namespace AS INTEGER) AS namespace, title, "user", bot, minor, patrolled,
    CAST(length_old AS INTEGER) AS length_old, CAST(length_new AS INTEGER) AS length_new,
    revision_old, revision_new, server_name, comment, log_type, log_action,
    CAST(make_timestamp(event_time) AS TIMESTAMPTZ) AS event_time
  FROM read_json(${q(nd)}, format = 'newline_delimited', columns = {
    meta_id: 'VARCHAR', wiki: 'VARCHAR', type: 'VARCHAR', namespace: 'BIGINT', title: 'VARCHAR',
    "user": 'VARCHAR', bot: 'BOOLEAN', minor: 'BOOLEAN', patrolled: 'BOOLEAN', length_old: 'BIGINT',
    length_new: 'BIGINT', revision_old: 'BIGINT', revision_new: 'BIGINT', server_name: 'VARCHAR',
    comment: 'VARCHAR', log_type: 'VARCHAR', log_action: 'VARCHAR', event_time: 'BIGINT'})`);
const nrows = Number((await con.runAndReadAll('SELECT count(*) FROM silver')).getRows()[0][0]);

const threads = (await con.runAndReadAll("SELECT current_setting('threads')")).getRows()[0][0];
const results = [];
for (let rep = 0; rep < repeat; rep++) {
  for (const th of [threads, 1]) {
    await con.run(`SET threads = ${th}`);
    const file = path.join(out, `duckdb_t${th}.parquet`);
    const m = await measure(() => con.run(`COPY silver TO ${q(file)} (FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 3)`));
    results.push({ phase: 'write', tool: `duckdb ${th} thread${th == 1 ? '' : 's'}`, ...m, file_bytes: fs.statSync(file).size, rows: nrows });
  }
}
await con.run(`SET threads = ${threads}`);
const duckFile = path.join(out, `duckdb_t${threads}.parquet`);
const freshetFile = path.join(out, 'freshet.parquet');
for (let rep = 0; rep < repeat; rep++) {
  for (const [label, file] of [['duckdb reads its file', duckFile], ['duckdb reads freshet file', freshetFile]]) {
    const m = await measure(async () => {
      await con.run(`CREATE OR REPLACE TEMP TABLE r AS SELECT * FROM read_parquet(${q(file)})`);
    });
    await con.run('DROP TABLE r');
    results.push({ phase: 'read', tool: label, ...m, rows: nrows });
  }
}

// DuckDB must see the same data in both files.
const agg = `SELECT count(*), count(title), count(patrolled), sum(length_new), sum(revision_new),
  count(DISTINCT "user"), sum(strlen(comment)), min(event_time)::VARCHAR, max(event_time)::VARCHAR,
  sum(hash(title)), sum(hash(meta_id)) FROM read_parquet(`;
const a1 = JSON.stringify((await con.runAndReadAll(agg + q(freshetFile) + ')')).getRows()[0], (k, v) => typeof v === 'bigint' ? String(v) : v);
const a2 = JSON.stringify((await con.runAndReadAll(agg + q(duckFile) + ')')).getRows()[0], (k, v) => typeof v === 'bigint' ? String(v) : v);
const same = a1 === a2;

// ------------------------------------------------------------ report

const fr = [];
let logical = 0;
for (const f of fs.readdirSync(out).filter((x) => /^freshet_.*\.txt$/.test(x)).sort()) {
  for (const line of fs.readFileSync(path.join(out, f), 'utf8').split('\n')) {
    if (line.startsWith('result ')) fr.push(JSON.parse(line.slice(7)));
    if (line.startsWith('logical_bytes ')) logical = Number(line.split(' ')[1]);
  }
}
const mb = logical / 1e6;
// Group the runs of each (phase, tool): median and best.
const groups = new Map();
const label = (x) => `freshet (${x.api === 'row' ? 'per-value' : 'batch'} API${x.workers ? ', compression thread' : ''})`;
for (const r of [...fr.map((x) => ({ ...x, tool: label(x) })), ...results]) {
  const key = `${r.phase}|${r.tool}`;
  if (!groups.has(key)) groups.set(key, []);
  groups.get(key).push(r);
}
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor((s.length - 1) / 2)]; };
const fmt = (x, d = 1) => (x === undefined || Number.isNaN(x) ? '' : Number(x).toFixed(d));
const summary = new Map();
console.log(`\n${nrows} rows, ${fmt(mb)} MB of values (string bytes + fixed-width values, NULLs excluded), zstd level 3, ${repeat} runs each: median [best]`);
console.log('| phase | tool | seconds | CPU seconds | rows/s | MB/s | file MB | peak RSS MB | RSS growth MB |');
console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|');
for (const [key, rs] of groups) {
  const [phase, tool] = key.split('|');
  const sec = median(rs.map((r) => r.seconds)), best = Math.min(...rs.map((r) => r.seconds));
  const file = rs[0].file_bytes;
  const peak = median(rs.map((r) => r.peak_rss_mb)), growth = median(rs.map((r) => r.rss_growth_mb));
  const cpu = median(rs.map((r) => r.cpu_seconds)), cpuBest = Math.min(...rs.map((r) => r.cpu_seconds));
  summary.set(key, { sec, best, file, cpu });
  console.log(`| ${phase} | ${tool} | ${fmt(sec, 3)} [${fmt(best, 3)}] | ${fmt(cpu, 3)} [${fmt(cpuBest, 3)}] | ${fmt(nrows / sec, 0)} | ${fmt(mb / sec)} [${fmt(mb / best)}] | ${file ? fmt(file / 1e6, 2) : ''} | ${fmt(peak)} | ${fmt(growth)} |`);
}
const fw = summary.get('write|freshet (per-value API)');
const fb = summary.get('write|freshet (batch API)');
const ft = summary.get('write|freshet (per-value API, compression thread)');
const dw = summary.get(`write|duckdb ${threads} threads`);
const d1 = summary.get('write|duckdb 1 thread');
if (fw && dw && d1) {
  console.log(`\nwrite time, freshet per-value API / DuckDB ${threads} threads: ${fmt(fw.sec / dw.sec, 2)}x median, ${fmt(fw.best / dw.best, 2)}x best`);
  if (fb) console.log(`write time, freshet batch API / DuckDB ${threads} threads: ${fmt(fb.sec / dw.sec, 2)}x median, ${fmt(fb.best / dw.best, 2)}x best`);
  if (ft) console.log(`write time, freshet per-value API + compression thread / DuckDB ${threads} threads: ${fmt(ft.sec / dw.sec, 2)}x median, ${fmt(ft.best / dw.best, 2)}x best`);
  console.log(`write time, freshet per-value API / DuckDB 1 thread: ${fmt(fw.sec / d1.sec, 2)}x median, ${fmt(fw.best / d1.best, 2)}x best`);
  console.log(`CPU seconds to write, freshet per-value API / DuckDB ${threads} threads: ${fmt(fw.cpu / dw.cpu, 2)}x; / DuckDB 1 thread: ${fmt(fw.cpu / d1.cpu, 2)}x`);
  console.log(`file size, freshet / DuckDB: ${fmt(fw.file / dw.file, 3)}x (${fmt(fw.file / 1e6, 2)} MB vs ${fmt(dw.file / 1e6, 2)} MB)`);
}
console.log(`DuckDB reads the same aggregates from both files: ${same ? 'yes' : `NO\n  freshet: ${a1}\n  duckdb:  ${a2}`}`);
process.exit(same ? 0 : 1);
