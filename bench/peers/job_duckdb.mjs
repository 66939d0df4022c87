// job_duckdb.mjs — freshet's job in DuckDB (issue 7): NDJSON in, six zstd
// Parquet files out (bronze, silver, late_arrivals, dlq,
// gold_edits_per_minute, gold_top_pages), with batch semantics that match
// docs/SEMANTICS.md wherever SQL can express them:
//   - ingest's rules first: canaries (meta.domain = "canary") and lines over
//     1 MiB never reach freshet's log, so they are dropped here too;
//   - the gate (docs/QUALITY.md) in its order, reason for reason, except
//     bad_utf8 (DuckDB refuses invalid UTF-8 outright), duplicate_field (the
//     parser keeps one) and future_event (a file has no ingest time);
//   - the watermark in file order: for each valid line, max(event time of
//     the valid lines before it) - 2 min; a line behind it is late (bronze
//     and late_arrivals only);
//   - silver: the first on-time occurrence of each meta.id (case-folded);
//   - gold: only windows that end at or before the final watermark, as
//     freshet emits them (it holds the last ones open).
// Read path and plan follow shared/reference/PEER-BASELINES.md (its traps:
// read_ndjson(ignore_errors) silently drops the line after a truncated one,
// so lines are read with read_json_objects). Two passes over the file: bronze streams from the
// scan (row groups of 20,000, the baseline's fastest), then one typed table
// that carries each line's number.
// usage: node job_duckdb.mjs EVENTS.ndjson OUTDIR     (prints step times)
import { mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(join(dirname(fileURLToPath(import.meta.url)), '../package.json'));
const { DuckDBInstance } = require('@duckdb/node-api');

const [input, out] = process.argv.slice(2);
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const lit = (s) => `'${s.replace(/'/g, "''")}'`;
const db = await DuckDBInstance.create(':memory:', {
  autoinstall_known_extensions: 'false', autoload_known_extensions: 'false', threads: '2' });
const con = await db.connect();
await con.run("SET TimeZone = 'UTC'");
const t = { start: performance.now() };
const step = async (name, sql) => {
  const t0 = performance.now();
  await con.run(sql);
  t[name] = (performance.now() - t0) / 1000;
};

// One parse per line: every path the gate and silver need, as JSON values.
const P = ['$.meta', '$.meta.id', '$.meta.dt', '$.wiki', '$.type', '$.namespace', '$.title',
  '$.user', '$.bot', '$.minor', '$.patrolled', '$.length.old', '$.length.new', '$.revision.old',
  '$.revision.new', '$.server_name', '$.comment', '$.log_type', '$.log_action', '$.id', '$.log_id',
  '$.meta.domain', '$.length', '$.revision', '$.timestamp'];
const i = (p) => P.indexOf(p) + 1;
const ty = (p) => `json_type(j[${i(p)}])`;
const str = (p) => `(j[${i(p)}] ->> '$')`;
const INT64 = (p) => `(${ty(p)} = 'BIGINT' OR (${ty(p)} = 'UBIGINT' AND TRY_CAST(${str(p)} AS BIGINT) IS NOT NULL))`;
const optStr = (p) => `(${ty(p)} IS NULL OR ${ty(p)} = 'VARCHAR')`;
const optStrNull = (p) => `(${ty(p)} IS NULL OR ${ty(p)} IN ('VARCHAR', 'NULL'))`;
const optBool = (p) => `(${ty(p)} IS NULL OR ${ty(p)} = 'BOOLEAN')`;
const optObj = (p) => `(${ty(p)} IS NULL OR ${ty(p)} = 'OBJECT')`;
const optInt = (p) => `(${ty(p)} IS NULL OR ${INT64(p)})`;
const optIntNull = (p) => `(${ty(p)} IS NULL OR ${ty(p)} = 'NULL' OR ${INT64(p)})`;
const UUID = "'[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}'";
const RFC3339 = "'[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})'";
const fieldsOk = [
  `(${ty('$.namespace')} IS NULL OR (${INT64('$.namespace')} AND TRY_CAST(${str('$.namespace')} AS INTEGER) IS NOT NULL))`,
  ...['$.title', '$.user', '$.comment', '$.server_name'].map(optStr),
  ...['$.bot', '$.minor', '$.patrolled'].map(optBool),
  ...['$.length', '$.revision'].map(optObj),
  ...['$.length.old', '$.length.new', '$.revision.old', '$.revision.new', '$.id', '$.log_id'].map(optIntNull),
  ...['$.log_type', '$.log_action'].map(optStrNull),
  optInt('$.timestamp'),
].join(' AND ');
const REASON = `CASE
  WHEN json IS NULL THEN 'not_json'
  WHEN ${ty('$.meta')} IS DISTINCT FROM 'OBJECT' THEN 'missing_meta'
  WHEN j[${i('$.meta.id')}] IS NULL THEN 'missing_meta_id'
  WHEN ${ty('$.meta.id')} <> 'VARCHAR' OR NOT regexp_full_match(${str('$.meta.id')}, ${UUID}) THEN 'bad_meta_id'
  WHEN j[${i('$.meta.dt')}] IS NULL THEN 'missing_meta_dt'
  WHEN ${ty('$.meta.dt')} <> 'VARCHAR' OR NOT regexp_full_match(${str('$.meta.dt')}, ${RFC3339})
       OR TRY_CAST(${str('$.meta.dt')} AS TIMESTAMPTZ) IS NULL THEN 'bad_meta_dt'
  WHEN j[${i('$.wiki')}] IS NULL THEN 'missing_wiki'
  WHEN ${ty('$.wiki')} <> 'VARCHAR' OR strlen(${str('$.wiki')}) NOT BETWEEN 1 AND 255 THEN 'bad_wiki'
  WHEN j[${i('$.type')}] IS NULL THEN 'missing_type'
  WHEN ${ty('$.type')} <> 'VARCHAR' OR ${str('$.type')} NOT IN ('edit', 'new', 'log', 'categorize', 'external') THEN 'bad_type'
  WHEN NOT (${fieldsOk}) THEN 'bad_field_type'
END`;
// Lines as ingest leaves them: no canaries, nothing over 1 MiB.
// (Line numbers: WITH ORDINALITY. The rowid of a CTAS temp table, which the
// baseline used, did not follow file order for this wider query at 1M
// lines in DuckDB 1.5.6 — half the rows came out late — so only bronze,
// which needs no order, reads without it.)
const src = (ord) => `(SELECT ${ord ? 'ln, ' : ''}json, j FROM (SELECT ${ord ? 'ln, ' : ''}json,
     json_extract(json, [${P.map(lit).join(', ')}]) AS j
   FROM read_json_objects(${lit(input)}, format = 'newline_delimited', ignore_errors = true,
                          maximum_object_size = 67108864)${ord ? ' WITH ORDINALITY AS src(json, ln)' : ''})
   WHERE (json IS NULL OR strlen(json::VARCHAR) <= 1048576)
     AND ${str('$.meta.domain')} IS DISTINCT FROM 'canary')`;
const ET = `TRY_CAST(${str('$.meta.dt')} AS TIMESTAMPTZ)`;

// Pass 1: bronze, streamed from the scan in file order.
await step('bronze', `COPY (SELECT ${ET} AS event_time, ${str('$.meta.id')} AS meta_id,
    ${str('$.wiki')} AS wiki, ${str('$.type')} AS type, json::VARCHAR AS raw
  FROM ${src(false)} WHERE (${REASON}) IS NULL)
  TO ${lit(join(out, 'bronze.parquet'))} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 20000)`);

// Pass 2: one typed row per line (raw kept for dead letters only).
await step('parse', `CREATE TEMP TABLE evn AS SELECT ln AS rn, reason,
    CASE WHEN reason IS NOT NULL THEN json::VARCHAR END AS dlq_raw,
    ${ET} AS event_time, ${str('$.meta.id')} AS meta_id, ${str('$.wiki')} AS wiki,
    ${str('$.type')} AS type, TRY_CAST(${str('$.namespace')} AS INTEGER) AS namespace,
    ${str('$.title')} AS title, ${str('$.user')} AS "user",
    TRY_CAST(${str('$.bot')} AS BOOLEAN) AS bot, TRY_CAST(${str('$.minor')} AS BOOLEAN) AS minor,
    TRY_CAST(${str('$.patrolled')} AS BOOLEAN) AS patrolled,
    TRY_CAST(${str('$.length.old')} AS BIGINT) AS length_old, TRY_CAST(${str('$.length.new')} AS BIGINT) AS length_new,
    TRY_CAST(${str('$.revision.old')} AS BIGINT) AS revision_old, TRY_CAST(${str('$.revision.new')} AS BIGINT) AS revision_new,
    ${str('$.server_name')} AS server_name, ${str('$.comment')} AS comment,
    ${str('$.log_type')} AS log_type, ${str('$.log_action')} AS log_action,
    TRY_CAST(${str('$.id')} AS BIGINT) AS rc_id, TRY_CAST(${str('$.log_id')} AS BIGINT) AS log_id
  FROM (SELECT *, ${REASON} AS reason FROM ${src(true)})`);
await step('dlq', `COPY (SELECT rn AS line, reason, dlq_raw AS raw FROM evn
  WHERE reason IS NOT NULL ORDER BY rn) TO ${lit(join(out, 'dlq.parquet'))} (FORMAT parquet, COMPRESSION zstd)`);
const COLS = `meta_id, event_time, wiki, type, namespace, title, "user", bot, minor, patrolled,
  length_old, length_new, revision_old, revision_new, server_name, comment, log_type, log_action, rc_id, log_id`;
// The watermark each valid line meets: valid lines before it, in file order.
await step('watermark', `CREATE TEMP TABLE v AS SELECT rn, ${COLS},
    max(event_time) OVER (ORDER BY rn ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
      - INTERVAL 120 SECOND AS wm
  FROM evn WHERE reason IS NULL`);
await step('late', `COPY (SELECT ${COLS}, wm AS watermark,
    (epoch_ms(wm) - epoch_ms(event_time))::BIGINT AS lateness_ms
  FROM v WHERE event_time < wm ORDER BY rn)
  TO ${lit(join(out, 'late_arrivals.parquet'))} (FORMAT parquet, COMPRESSION zstd)`);
await step('dedup', `CREATE TEMP TABLE silver AS SELECT ${COLS} FROM v
  WHERE wm IS NULL OR event_time >= wm
  QUALIFY row_number() OVER (PARTITION BY lower(meta_id) ORDER BY rn) = 1 ORDER BY rn`);
await step('silver', `COPY silver TO ${lit(join(out, 'silver.parquet'))} (FORMAT parquet, COMPRESSION zstd)`);
// Final watermark: every valid line raises it, late and duplicate ones too.
const WM = `(SELECT max(event_time) - INTERVAL 120 SECOND FROM v)`;
await step('gold_epm', `COPY (SELECT date_trunc('minute', event_time) AS window_start,
    date_trunc('minute', event_time) + INTERVAL 1 MINUTE AS window_end, wiki,
    count(*)::BIGINT AS events, count(*) FILTER (type = 'edit')::BIGINT AS edits,
    count(*) FILTER (type = 'new')::BIGINT AS new_pages, count(*) FILTER (bot)::BIGINT AS bot_events,
    coalesce(sum(greatest(length_new - coalesce(length_old, 0), 0)) FILTER (type IN ('edit', 'new')), 0)::BIGINT AS bytes_added,
    coalesce(sum(greatest(coalesce(length_old, 0) - length_new, 0)) FILTER (type IN ('edit', 'new')), 0)::BIGINT AS bytes_removed,
    count(DISTINCT "user")::BIGINT AS distinct_users, true AS distinct_users_exact
  FROM silver WHERE date_trunc('minute', event_time) + INTERVAL 1 MINUTE <= ${WM}
  GROUP BY ALL ORDER BY window_start, wiki)
  TO ${lit(join(out, 'gold_edits_per_minute.parquet'))} (FORMAT parquet, COMPRESSION zstd)`);
// Top pages: 1-minute panes, each counted in the ten windows that cover it.
await step('gold_top', `COPY (WITH p AS (SELECT date_trunc('minute', event_time) AS m, wiki, title, count(*) AS c
      FROM silver WHERE type IN ('edit', 'new') AND title IS NOT NULL GROUP BY ALL),
    w AS (SELECT m - to_minutes(k) AS s, wiki, title, sum(c)::BIGINT AS edits
      FROM p, range(10) r(k) GROUP BY ALL)
  SELECT s AS window_start, s + INTERVAL 10 MINUTE AS window_end, rank::INTEGER AS rank, wiki, title, edits
  FROM (SELECT *, row_number() OVER (PARTITION BY s ORDER BY edits DESC, wiki, title) AS rank
        FROM w WHERE s + INTERVAL 10 MINUTE <= ${WM})
  WHERE rank <= 20 ORDER BY window_start, rank)
  TO ${lit(join(out, 'gold_top_pages.parquet'))} (FORMAT parquet, COMPRESSION zstd)`);
const total = (performance.now() - t.start) / 1000;
delete t.start;
console.log(`duckdb steps (s): ${Object.entries(t).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')}; total ${total.toFixed(2)}`);
