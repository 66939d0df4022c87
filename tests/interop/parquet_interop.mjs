// parquet_interop.mjs — freshet's Parquet files against independent readers.
//
//   node parquet_interop.mjs shapes   GEN DIR            every file shape
//   node parquet_interop.mjs property GEN DIR SEED COUNT random schemas and data
//   node parquet_interop.mjs reverse  GEN DIR            DuckDB writes, freshet reads
//   node parquet_interop.mjs check    GEN DIR            re-check files already in DIR
//   node parquet_interop.mjs seeds    GEN DIR            the fuzzer's seed corpus:
//                                     small files from freshet and from DuckDB
//
// GEN is the parquet_interop executable (tests/interop/parquet_interop.c).
// For shapes and property, GEN writes X.parquet plus X.json holding the
// values it was given; every file is then read by DuckDB (@duckdb/node-api)
// and by hyparquet (+ hyparquet-compressors) and compared value by value
// with X.json — NULLs, -0.0, NaN, int64 extremes, multi-byte text — and the
// metadata is checked where the readers expose it: schema, field_id,
// logical and converted types, codec, per-row-group null counts and min/max
// bounds computed here from the expected values, key/value metadata,
// created_by. The oracle is always the independent reader plus X.json,
// never freshet's reader. For reverse, values generated here are loaded into
// DuckDB, written with DuckDB's COPY (V1 and V2 pages, each codec), read by
// `GEN dump` and compared with the values generated here.
//
// Exit status: 0 all good, 1 a mismatch, 77 when the npm packages are not
// installed (run scripts/setup.sh --test).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
for (const pkg of ['@duckdb/node-api', 'hyparquet', 'hyparquet-compressors']) {
  if (!fs.existsSync(path.join(here, 'node_modules', pkg, 'package.json'))) {
    console.log(`skip: ${pkg} is not installed in tests/interop/node_modules (run scripts/setup.sh --test)`);
    process.exit(77);
  }
}
const { DuckDBInstance } = await import('@duckdb/node-api');
const { parquetReadObjects, parquetMetadata } = await import('hyparquet');
const { compressors } = await import('hyparquet-compressors');

let failures = 0;
let checks = 0;
function fail(file, msg) {
  failures++;
  if (failures <= 60) console.log(`FAIL ${file}: ${msg}`);
}
function ok(cond, file, msg) {
  checks++;
  if (!cond) fail(file, msg);
  return cond;
}

// ------------------------------------------------------------- values

// Raw micros / days from hyparquet instead of Dates.
const parsers = {
  timestampFromMicroseconds: (x) => x,
  timestampFromMilliseconds: (x) => x * 1000n,
  timestampFromNanoseconds: (x) => (x - (((x % 1000n) + 1000n) % 1000n)) / 1000n,
  dateFromDays: (d) => d,
};

const WIDE = new Set(['int64', 'timestamp', 'timestamp_ntz']);

// Expected JSON value -> canonical JS value for type.
function canon(v, type) {
  if (v === null) return null;
  if (WIDE.has(type)) return BigInt(v);
  if (type === 'double' && typeof v === 'string') {
    return v === 'NaN' ? NaN : v === 'Infinity' ? Infinity : -Infinity;
  }
  return v;
}

// A DuckDB node-api value -> canonical.
function fromDuck(v) {
  if (v === null || v === undefined) return null;
  if (typeof v === 'object') {
    if ('days' in v) return v.days;
    if ('micros' in v) return BigInt(v.micros);
    if ('millis' in v) return BigInt(v.millis) * 1000n;
    if ('nanos' in v) return parsers.timestampFromNanoseconds(BigInt(v.nanos));
  }
  return v;
}

function same(a, b) {
  if (typeof a === 'number' && typeof b === 'number') return Object.is(a, b);
  return a === b;
}

function show(v) {
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'string') return JSON.stringify(v.length > 60 ? v.slice(0, 60) + '…' : v);
  if (Object.is(v, -0)) return '-0';
  return String(v);
}

// ------------------------------------------------------------- bounds

const enc = new TextEncoder();
function cmpVal(a, b, type) {
  if (type === 'string') return Buffer.compare(Buffer.from(enc.encode(a)), Buffer.from(enc.encode(b)));
  if (type === 'boolean') return (a === b) ? 0 : (a ? 1 : -1);
  return a < b ? -1 : a > b ? 1 : 0;
}

// Expected statistics of rows [lo, hi) of column c.
function expectStats(rows, lo, hi, c, type) {
  let nulls = 0, min, max, have = false;
  for (let r = lo; r < hi; r++) {
    const v = canon(rows[r][c], type);
    if (v === null) { nulls++; continue; }
    if (type === 'double' && Number.isNaN(v)) continue;
    if (!have) { min = max = v; have = true; continue; }
    if (cmpVal(v, min, type) < 0) min = v;
    if (cmpVal(v, max, type) > 0) max = v;
  }
  if (have && type === 'double') {
    if (min === 0) min = -0; // Parquet: a zero lower bound is -0.0,
    if (max === 0) max = 0;  // a zero upper bound +0.0
  }
  return { nulls, have, min, max };
}

// Cut a string to at most n UTF-8 bytes on a character boundary.
function utf8Prefix(s, n) {
  const b = Buffer.from(enc.encode(s));
  if (b.length <= n) return s;
  let k = n;
  while (k > 0 && (b[k] & 0xc0) === 0x80) k--;
  return b.subarray(0, k).toString('utf8');
}

// DuckDB's rendering of a statistics value -> canonical.
function parseDuckStat(s, type) {
  if (s === null || s === undefined) return undefined;
  switch (type) {
    case 'boolean': return s === 'true';
    case 'int32': return Number(s);
    case 'int64': return BigInt(s);
    case 'double': return s === 'inf' ? Infinity : s === '-inf' ? -Infinity : Number(s);
    case 'string': return s;
    case 'date': {
      const m = /^(\d+)-(\d\d)-(\d\d)$/.exec(s);
      if (!m) return `unparsed ${s}`;
      const d = new Date(0);
      d.setUTCFullYear(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
      return Math.round(d.getTime() / 86400000);
    }
    default: { // timestamps
      const m = /^(\d+)-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d+))?(?:\+00)?$/.exec(s);
      if (!m) return `unparsed ${s}`;
      const d = new Date(0);
      d.setUTCFullYear(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
      d.setUTCHours(Number(m[4]), Number(m[5]), Number(m[6]), 0);
      const frac = m[7] ? BigInt((m[7] + '000000').slice(0, 6)) : 0n;
      return BigInt(d.getTime()) * 1000n + frac;
    }
  }
}

// ------------------------------------------------------------- schema

const PHYS = { boolean: 'BOOLEAN', int32: 'INT32', int64: 'INT64', double: 'DOUBLE', string: 'BYTE_ARRAY', date: 'INT32', timestamp: 'INT64', timestamp_ntz: 'INT64' };
const CONVERTED = { string: 'UTF8', date: 'DATE', timestamp: 'TIMESTAMP_MICROS', timestamp_ntz: 'TIMESTAMP_MICROS' };
const DUCKTYPE = { boolean: 'BOOLEAN', int32: 'INTEGER', int64: 'BIGINT', double: 'DOUBLE', string: 'VARCHAR', date: 'DATE', timestamp: 'TIMESTAMP WITH TIME ZONE', timestamp_ntz: 'TIMESTAMP' };

// ------------------------------------------------------------- DuckDB

const duck = await DuckDBInstance.create(':memory:', {
  autoinstall_known_extensions: 'false',
  autoload_known_extensions: 'false',
});
const con = await duck.connect();
await con.run("SET TimeZone = 'UTC'");

const sqlStr = (s) => `'${s.replaceAll("'", "''")}'`;

async function checkFile(dir, e) {
  const file = path.join(dir, e.file);
  const name = e.file;
  const cols = e.columns;
  const rows = e.rows;
  const types = cols.map((c) => c.type);
  const expected = rows.map((row) => row.map((v, c) => canon(v, types[c])));

  // --- DuckDB: values
  const desc = (await con.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${sqlStr(file)})`)).getRowObjectsJson();
  ok(desc.length === cols.length, name, `DuckDB sees ${desc.length} columns, expected ${cols.length}`);
  desc.forEach((d, c) => {
    ok(d.column_name === cols[c].name, name, `DuckDB column ${c} named ${d.column_name}`);
    ok(d.column_type === DUCKTYPE[types[c]], name, `DuckDB column ${cols[c].name} is ${d.column_type}, expected ${DUCKTYPE[types[c]]}`);
  });
  const dr = (await con.runAndReadAll(`SELECT * FROM read_parquet(${sqlStr(file)}, file_row_number = true) ORDER BY file_row_number`)).getRows();
  ok(dr.length === rows.length, name, `DuckDB read ${dr.length} rows, expected ${rows.length}`);
  let bad = 0;
  for (let r = 0; r < Math.min(dr.length, rows.length) && bad < 5; r++) {
    for (let c = 0; c < cols.length; c++) {
      const got = fromDuck(dr[r][c]);
      if (!same(got, expected[r][c])) {
        bad++;
        fail(name, `DuckDB row ${r} column ${cols[c].name}: got ${show(got)}, expected ${show(expected[r][c])}`);
      }
    }
  }
  checks++;

  // --- hyparquet: values
  const buf = fs.readFileSync(file);
  const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
  const objs = await parquetReadObjects({ file: ab, compressors, parsers });
  ok(objs.length === rows.length, name, `hyparquet read ${objs.length} rows, expected ${rows.length}`);
  bad = 0;
  for (let r = 0; r < Math.min(objs.length, rows.length) && bad < 5; r++) {
    for (let c = 0; c < cols.length; c++) {
      let got = objs[r][cols[c].name];
      if (got === undefined) got = null;
      if (!same(got, expected[r][c])) {
        bad++;
        fail(name, `hyparquet row ${r} column ${cols[c].name}: got ${show(got)}, expected ${show(expected[r][c])}`);
      }
    }
  }
  checks++;

  // --- DuckDB: schema
  const sch = (await con.runAndReadAll(`SELECT * FROM parquet_schema(${sqlStr(file)})`)).getRowObjectsJson();
  ok(sch.length === cols.length + 1, name, `parquet_schema has ${sch.length} elements`);
  ok(Number(sch[0].num_children) === cols.length, name, 'root num_children');
  cols.forEach((col, c) => {
    const s = sch[c + 1];
    if (!s) return;
    ok(s.name === col.name, name, `schema element ${c} is ${s.name}`);
    ok(s.type === PHYS[col.type], name, `${col.name}: physical ${s.type}`);
    ok(s.repetition_type === (col.optional ? 'OPTIONAL' : 'REQUIRED'), name, `${col.name}: repetition ${s.repetition_type}`);
    ok(Number(s.field_id) === col.field_id, name, `${col.name}: field_id ${s.field_id}, expected ${col.field_id}`);
    ok((s.converted_type ?? undefined) === CONVERTED[col.type], name, `${col.name}: converted_type ${s.converted_type}`);
    if (col.type === 'timestamp' || col.type === 'timestamp_ntz') {
      const utc = col.type === 'timestamp' ? 1 : 0;
      ok(String(s.logical_type).includes(`isAdjustedToUTC=${utc}`) && String(s.logical_type).includes('MICROS=MicroSeconds()'),
        name, `${col.name}: logical type ${s.logical_type}`);
    }
  });

  // --- DuckDB: row groups, codec, null counts, bounds
  const md = (await con.runAndReadAll(`SELECT * FROM parquet_metadata(${sqlStr(file)}) ORDER BY row_group_id, column_id`)).getRowObjectsJson();
  const nrg = new Set(md.map((m) => m.row_group_id)).size;
  ok(nrg === e.row_groups, name, `DuckDB sees ${nrg} row groups, the writer reported ${e.row_groups}`);
  if (e.min_row_groups) ok(nrg >= e.min_row_groups, name, `only ${nrg} row groups`);
  const rgStart = [];
  let start = 0;
  for (const m of md) {
    const g = Number(m.row_group_id);
    if (rgStart[g] === undefined) { rgStart[g] = start; start += Number(m.row_group_num_rows); }
  }
  ok(start === rows.length, name, `row groups hold ${start} rows`);
  const dictCols = new Map();
  for (const m of md) {
    const g = Number(m.row_group_id), c = Number(m.column_id), type = types[c];
    const lo = rgStart[g], hi = lo + Number(m.row_group_num_rows);
    const st = expectStats(rows, lo, hi, c, type);
    ok(m.compression === e.codec, name, `rg ${g} ${cols[c].name}: codec ${m.compression}`);
    ok(Number(m.num_values) === hi - lo, name, `rg ${g} ${cols[c].name}: num_values ${m.num_values}`);
    ok(Number(m.stats_null_count) === st.nulls, name, `rg ${g} ${cols[c].name}: null_count ${m.stats_null_count}, expected ${st.nulls}`);
    const enc2 = String(m.encodings);
    if (!dictCols.has(c)) dictCols.set(c, new Set());
    for (const x of enc2.split(', ')) dictCols.get(c).add(x);
    const dmin = parseDuckStat(m.stats_min_value, type), dmax = parseDuckStat(m.stats_max_value, type);
    if (!st.have) {
      ok(dmin === undefined && dmax === undefined, name, `rg ${g} ${cols[c].name}: bounds on a column without values`);
      continue;
    }
    const limit = e.stats_max_bytes;
    for (const [got, want, which] of [[dmin, st.min, 'min'], [dmax, st.max, 'max']]) {
      if (type === 'double' && !Number.isFinite(want)) {
        ok(got === undefined || got === want, name, `rg ${g} ${cols[c].name}: ${which} ${show(got)}`);
      } else if (type === 'string' && Buffer.byteLength(want) > limit) {
        // truncated: checked through hyparquet below
      } else if (type === 'double') {
        ok(got === want, name, `rg ${g} ${cols[c].name}: DuckDB ${which} ${show(got)}, expected ${show(want)}`);
      } else {
        ok(same(got, want), name, `rg ${g} ${cols[c].name}: DuckDB ${which} ${show(got)}, expected ${show(want)}`);
      }
    }
  }
  for (const c of e.dict_fallback ?? []) {
    const i = cols.findIndex((x) => x.name === c);
    const s = dictCols.get(i) ?? new Set();
    ok(s.has('RLE_DICTIONARY') && s.has('PLAIN'), name, `${c}: encodings ${[...s]} (expected a dictionary and PLAIN fallback)`);
  }
  if (e.no_dictionary) {
    for (const [c, s] of dictCols) ok(!s.has('RLE_DICTIONARY'), name, `${cols[c].name}: dictionary-encoded with dictionaries off`);
  }

  // --- hyparquet: footer fields and typed bounds
  const meta = parquetMetadata(ab, { parsers });
  ok(String(meta.created_by).startsWith('freshet version '), name, `created_by ${meta.created_by}`);
  ok(Number(meta.num_rows) === rows.length, name, `num_rows ${meta.num_rows}`);
  const kv = (meta.key_value_metadata ?? []).map((x) => [x.key, x.value]);
  ok(JSON.stringify(kv) === JSON.stringify(e.kv), name, `key_value_metadata ${JSON.stringify(kv)}`);
  meta.schema.slice(1).forEach((s, c) => ok(s.field_id === cols[c].field_id, name, `hyparquet field_id ${s.field_id} for ${cols[c].name}`));
  let first = 0;
  meta.row_groups.forEach((rg, g) => {
    const lo = first, hi = first + Number(rg.num_rows);
    first = hi;
    rg.columns.forEach((cc, c) => {
      const type = types[c], s = cc.meta_data.statistics ?? {};
      const st = expectStats(rows, lo, hi, c, type);
      const where = `rg ${g} ${cols[c].name}`;
      ok(Number(s.null_count) === st.nulls, name, `${where}: hyparquet null_count ${s.null_count}`);
      if (!st.have) {
        ok(s.min_value === undefined && s.max_value === undefined, name, `${where}: bounds without values`);
        return;
      }
      const limit = e.stats_max_bytes;
      if (type === 'string' && Buffer.byteLength(st.min) > limit) {
        ok(s.is_min_value_exact === false && s.min_value === utf8Prefix(st.min, limit), name, `${where}: truncated min ${show(s.min_value)}`);
      } else {
        ok(same(s.min_value, st.min), name, `${where}: hyparquet min ${show(s.min_value)}, expected ${show(st.min)}`);
      }
      if (type === 'string' && Buffer.byteLength(st.max) > limit && s.is_max_value_exact === false) {
        ok(cmpVal(s.max_value, st.max, 'string') > 0 && Buffer.byteLength(s.max_value) <= limit + 1, name, `${where}: truncated max ${show(s.max_value)} not above ${show(st.max)}`);
      } else {
        ok(same(s.max_value, st.max), name, `${where}: hyparquet max ${show(s.max_value)}, expected ${show(st.max)}`);
      }
      if (type === 'string') ok(typeof s.is_min_value_exact === 'boolean', name, `${where}: exactness flags`);
    });
  });
}

async function checkDir(dir, only) {
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json') && (!only || f.startsWith(only))).sort();
  for (const f of files) {
    const before = failures;
    const e = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
    try {
      await checkFile(dir, e);
    } catch (err) {
      fail(e.file, `exception: ${err.stack ?? err}`);
    }
    console.log(`${failures === before ? 'ok  ' : 'FAIL'} ${e.file} (${e.rows.length} rows, ${e.columns.length} columns, ${e.codec})`);
  }
  return files.length;
}

// ------------------------------------------------------------- reverse

function rng(seed) {
  let s = BigInt(seed) * 0x9e3779b97f4a7c15n + 1n;
  const M = (1n << 64n) - 1n;
  return () => {
    s ^= (s << 13n) & M; s ^= s >> 7n; s ^= (s << 17n) & M;
    return s;
  };
}

const PIECES = ['a', 'Zz', ' ', '"', '\\', '\t', '\n', 'é', 'Ω', '日本', '😀', '👨‍👩‍👧', '𝔸', 'e\u0301', '\u{10FFFF}', ''];

function reverseRows(seed, n) {
  const next = rng(seed);
  const pick = (k) => Number(next() % BigInt(k));
  const rows = [];
  const dbl = [0, -0, 1.5, -2.25, Infinity, -Infinity, NaN, 5e-324, 1.7976931348623157e308, 0.1];
  for (let r = 0; r < n; r++) {
    const nul = () => pick(10) === 0;
    const bigs = [-(2n ** 63n), 2n ** 63n - 1n, 0n, -1n];
    const i64 = r < 4 ? bigs[r] : BigInt.asIntN(64, next());
    const us = BigInt(pick(18000000)) * 1000000000n + BigInt(pick(1000000000)) - 9000000000000000n;
    let s = '';
    for (let k = pick(12); k > 0; k--) s += PIECES[pick(PIECES.length)];
    rows.push({
      b: nul() ? null : pick(2) === 1,
      i8: nul() ? null : pick(256) - 128,
      i16: nul() ? null : pick(65536) - 32768,
      i32: nul() ? null : (r < 2 ? [-2147483648, 2147483647][r] : pick(4294967296) - 2147483648),
      i64: nul() ? null : i64,
      req: BigInt(r) * 1000003n - 5000000n,
      f64: nul() ? null : (pick(3) === 0 ? dbl[pick(dbl.length)] : (pick(2000000) - 1000000) / 64),
      s: nul() ? null : (pick(5) === 0 ? `user${pick(30)}` : s),
      d: nul() ? null : pick(3200000) - 300000,
      tstz: nul() ? null : us,
      ts: nul() ? null : us + 17n,
      tsms: nul() ? null : (us / 1000n) * 1000n,
      tsns: nul() ? null : us - 3n,
    });
  }
  return rows;
}

const REV_COLS = [
  ['b', 'BOOLEAN', 'boolean'], ['i8', 'TINYINT', 'int32'], ['i16', 'SMALLINT', 'int32'],
  ['i32', 'INTEGER', 'int32'], ['i64', 'BIGINT', 'int64'], ['req', 'BIGINT NOT NULL', 'int64'],
  ['f64', 'DOUBLE', 'double'], ['s', 'VARCHAR', 'string'], ['d', 'DATE', 'date'],
  ['tstz', 'TIMESTAMPTZ', 'timestamp'], ['ts', 'TIMESTAMP', 'timestamp_ntz'],
  ['tsms', 'TIMESTAMP_MS', 'timestamp_ntz'], ['tsns', 'TIMESTAMP_NS', 'timestamp_ntz'],
];

function jsonRow(o) {
  const x = {};
  for (const [k, v] of Object.entries(o)) {
    if (v === null) x[k] = null;
    else if (typeof v === 'bigint') x[k] = v.toString();
    else if (typeof v === 'number' && k === 'f64') x[k] = Number.isNaN(v) ? 'nan' : v === Infinity ? 'inf' : v === -Infinity ? '-inf' : Object.is(v, -0) ? '-0.0' : String(v);
    else x[k] = v;
  }
  return JSON.stringify(x);
}

async function reverse(gen, dir) {
  fs.mkdirSync(dir, { recursive: true });
  const variants = [
    ['v1_zstd', 'V1', 'zstd', 0], ['v1_snappy', 'V1', 'snappy', 0],
    ['v1_uncompressed_small_groups', 'V1', 'uncompressed', 2048],
    ['v2_zstd', 'V2', 'zstd', 0], ['v2_snappy_small_groups', 'V2', 'snappy', 3000],
  ];
  let files = 0;
  for (const [vi, [label, version, codec, rgs]] of variants.entries()) {
    const rows = reverseRows(100 + vi, 20000);
    const nd = path.join(dir, `${label}.ndjson`);
    fs.writeFileSync(nd, rows.map(jsonRow).join('\n') + '\n');
    const jcols = REV_COLS.map(([k, t]) => `${k}: '${['b'].includes(k) ? 'BOOLEAN' : ['i8', 'i16', 'i32', 'd'].includes(k) ? 'BIGINT' : 'VARCHAR'}'`).join(', ');
    await con.run('DROP TABLE IF EXISTS rev');
    await con.run(`CREATE TABLE rev (${REV_COLS.map(([k, t]) => `${k} ${t}`).join(', ')})`);
    await con.run(`INSERT INTO rev SELECT b, i8, i16, i32, CAST(i64 AS BIGINT), CAST(req AS BIGINT),
        CAST(f64 AS DOUBLE), s, DATE '1970-01-01' + CAST(d AS INTEGER),
        CAST(make_timestamp(CAST(tstz AS BIGINT)) AS TIMESTAMPTZ), make_timestamp(CAST(ts AS BIGINT)),
        CAST(make_timestamp(CAST(tsms AS BIGINT)) AS TIMESTAMP_MS),
        CAST(make_timestamp(CAST(tsns AS BIGINT)) AS TIMESTAMP_NS)
      FROM read_json(${sqlStr(nd)}, format = 'newline_delimited', columns = {${jcols}})`);
    const file = path.join(dir, `${label}.parquet`);
    await con.run(`COPY rev TO ${sqlStr(file)} (FORMAT parquet, COMPRESSION ${codec}, PARQUET_VERSION ${version}${rgs ? `, ROW_GROUP_SIZE ${rgs}` : ''})`);
    const encs = (await con.runAndReadAll(`SELECT DISTINCT encodings FROM parquet_metadata(${sqlStr(file)})`)).getRowObjectsJson().map((x) => x.encodings);
    const out = execFileSync(gen, ['dump', file], { maxBuffer: 1 << 30 }).toString('utf8').trimEnd().split('\n');
    const head = JSON.parse(out[0]);
    const name = path.basename(file);
    ok(head.rows === rows.length, name, `freshet reads ${head.rows} rows`);
    REV_COLS.forEach(([k, , t], c) => {
      ok(head.columns[c]?.name === k && head.columns[c]?.type === t, name, `column ${c}: ${JSON.stringify(head.columns[c])}, expected ${k} ${t}`);
    });
    const reps = (await con.runAndReadAll(`SELECT repetition_type FROM parquet_schema(${sqlStr(file)})`)).getRowObjectsJson().slice(1);
    REV_COLS.forEach(([k], c) => ok(head.columns[c]?.optional === (reps[c]?.repetition_type === 'OPTIONAL'), name, `${k}: optional ${head.columns[c]?.optional}, DuckDB wrote ${reps[c]?.repetition_type}`));
    let bad = 0;
    for (let r = 0; r < rows.length && bad < 5; r++) {
      const got = JSON.parse(out[r + 1]);
      REV_COLS.forEach(([k, , t], c) => {
        const want = rows[r][k];
        const g = canon(got[c], t);
        if (!same(g, want)) {
          bad++;
          fail(name, `row ${r} column ${k}: freshet read ${show(g)}, DuckDB was given ${show(want)}`);
        }
      });
    }
    checks++;
    console.log(`${bad ? 'FAIL' : 'ok  '} ${name} (DuckDB ${version} ${codec}, ${head.row_groups} row groups; encodings ${[...new Set(encs.join(', ').split(', '))].join(' ')})`);
    files++;
  }
  return files;
}

// ------------------------------------------------------------- seeds

async function seeds(gen, dir) {
  execFileSync(gen, ['seeds', dir], { stdio: ['ignore', 'ignore', 'inherit'] });
  for (const f of fs.readdirSync(dir)) if (f.endsWith('.json')) fs.rmSync(path.join(dir, f));
  const rows = reverseRows(7, 60);
  const nd = path.join(dir, 'seed.ndjson');
  fs.writeFileSync(nd, rows.map(jsonRow).join('\n') + '\n');
  const jcols = REV_COLS.map(([k]) => `${k}: '${k === 'b' ? 'BOOLEAN' : ['i8', 'i16', 'i32', 'd'].includes(k) ? 'BIGINT' : 'VARCHAR'}'`).join(', ');
  await con.run(`CREATE OR REPLACE TABLE seed AS SELECT b, CAST(i8 AS TINYINT) i8, CAST(i32 AS INTEGER) i32,
      CAST(i64 AS BIGINT) i64, CAST(f64 AS DOUBLE) f64, s, DATE '1970-01-01' + CAST(d AS INTEGER) d,
      CAST(make_timestamp(CAST(tstz AS BIGINT)) AS TIMESTAMPTZ) tstz,
      CAST(make_timestamp(CAST(tsms AS BIGINT)) AS TIMESTAMP_MS) tsms,
      CAST(make_timestamp(CAST(tsns AS BIGINT)) AS TIMESTAMP_NS) tsns
    FROM read_json(${sqlStr(nd)}, format = 'newline_delimited', columns = {${jcols}})`);
  for (const [v, codec] of [['V1', 'snappy'], ['V1', 'zstd'], ['V2', 'uncompressed'], ['V2', 'zstd']]) {
    await con.run(`COPY seed TO ${sqlStr(path.join(dir, `duckdb_${v}_${codec}.parquet`))} (FORMAT parquet, COMPRESSION ${codec}, PARQUET_VERSION ${v}, ROW_GROUP_SIZE 40)`);
  }
  fs.rmSync(nd);
  const n = fs.readdirSync(dir).length;
  console.log(`${n} seed files in ${dir}`);
  return n;
}

// ------------------------------------------------------------- main

const [mode, gen, dir, a, b] = process.argv.slice(2);
if (!mode || !gen || !dir) {
  console.log('usage: parquet_interop.mjs shapes|property|reverse GEN DIR [SEED COUNT]');
  process.exit(2);
}
if (mode !== 'check') {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
}
let files;
if (mode === 'check') {
  files = await checkDir(dir, a);
} else if (mode === 'shapes') {
  execFileSync(gen, ['gen', dir], { stdio: ['ignore', 'ignore', 'inherit'] });
  files = await checkDir(dir);
} else if (mode === 'property') {
  execFileSync(gen, ['random', dir, a ?? '1', b ?? '100'], { stdio: ['ignore', 'ignore', 'inherit'] });
  files = await checkDir(dir);
} else if (mode === 'reverse') {
  files = await reverse(gen, dir);
} else if (mode === 'seeds') {
  files = await seeds(gen, dir);
} else {
  console.log(`unknown mode ${mode}`);
  process.exit(2);
}
console.log(`${files} files, ${checks} checks, ${failures} failures`);
process.exit(failures ? 1 : 0);
