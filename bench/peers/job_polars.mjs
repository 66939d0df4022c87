// job_polars.mjs — freshet's job in Polars (nodejs-polars 0.25.2, eager):
// the same six zstd Parquet files and the same batch semantics as
// job_duckdb.mjs (read its header). Traps avoided, from
// shared/reference/PEER-BASELINES.md: scanJson cannot read a file with
// truncated lines, readCSV takes a path without .csv for inline text, and
// jsonDecode raises on invalid JSON — so lines are read as one text column
// with scanCSV (separator and quote bytes absent from the file), checked
// with jsonPathMatch("$") (null for invalid JSON), and only valid lines are
// decoded. jsonDecode with an explicit schema turns 0 and "0" into the same
// text, so the gate's "wrong JSON type" rule for the fields the feed can
// corrupt (namespace, bot, minor, patrolled) is a pattern on the raw line;
// freshet's lines are compact JSON, so `"namespace":"` is the string case.
// Ingest's 1 MiB cap is applied to characters (nodejs-polars has no byte
// length); the generator makes no line near it.
// usage: node job_polars.mjs EVENTS.ndjson OUTDIR     (prints step times)
import { mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(join(dirname(fileURLToPath(import.meta.url)), '../package.json'));
const pl = require('nodejs-polars');
const { col, lit, when } = pl;

const [input, out] = process.argv.slice(2);
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const t = {};
const t00 = performance.now();
let t0 = t00;
const lap = (name) => { const n = performance.now(); t[name] = (n - t0) / 1000; t0 = n; };
const pq = (df, name) => df.writeParquet(join(out, `${name}.parquet`), { compression: 'zstd' });
const I64 = (x) => lit(x).cast(pl.Int64);
const US = pl.Datetime('us', 'UTC');

// ---- read: one text column per line, in file order
let lines = pl.scanCSV(input, { hasHeader: false, sep: '\x01', quoteChar: '\x02',
  schema: { line: pl.Utf8 } }).collectSync().withRowIndex('rn');
lap('read');

// ---- decode (valid JSON only), every field the gate and silver need, as text
const F = (name, dtype = pl.Utf8) => new pl.Field(name, dtype);
const EV = pl.Struct([
  F('meta', pl.Struct([F('id'), F('dt'), F('domain')])), F('wiki'), F('type'), F('namespace'),
  F('title'), F('user'), F('bot'), F('minor'), F('patrolled'),
  F('length', pl.Struct([F('old'), F('new')])), F('revision', pl.Struct([F('old'), F('new')])),
  F('server_name'), F('comment'), F('log_type'), F('log_action'), F('id'), F('log_id')]);
lines = lines.withColumns(col('line').str.jsonPathMatch('$').isNotNull().alias('ok'),
  col('line').str.jsonPathMatch('$.meta').isNotNull().alias('has_meta'));
lap('validate');
const bad = lines.filter(col('ok').not()).select('rn', 'line');
const good = lines.filter(col('ok')).select('rn', 'line', 'has_meta',
  col('line').str.jsonDecode(EV).alias('v')).unnest('v');
lap('decode');

// ---- typed columns and the gate, in docs/QUALITY.md's order
const m = (f) => col('meta').struct.field(f);
const s = (c, f) => col(c).struct.field(f);
const UUID = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
const RFC3339 = '^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$';
const TYPES = ['edit', 'new', 'log', 'categorize', 'external'];
const strField = (f) => col('line').str.contains(`"${f}":"`);
let ev = good.select(
  'rn', 'line', 'has_meta', m('id').alias('meta_id'), m('dt').alias('dt'), m('domain').alias('domain'),
  col('wiki'), col('type'), col('namespace'),
  col('title'), col('user'), col('bot'), col('minor'), col('patrolled'),
  s('length', 'old').cast(pl.Int64, false).alias('length_old'), s('length', 'new').cast(pl.Int64, false).alias('length_new'),
  s('revision', 'old').cast(pl.Int64, false).alias('revision_old'), s('revision', 'new').cast(pl.Int64, false).alias('revision_new'),
  col('server_name'), col('comment'), col('log_type'), col('log_action'),
  col('id').cast(pl.Int64, false).alias('rc_id'), col('log_id').cast(pl.Int64, false).alias('log_id'),
  strField('namespace').or(strField('bot')).or(strField('minor')).or(strField('patrolled')).alias('str_typed'))
  // ingest drops canaries before the log; and lines over 1 MiB
  .filter(col('domain').neq(lit('canary')).fillNull(true).and(col('line').str.lengths().ltEq(1048576)))
  .withColumns(
    col('dt').str.strptime(pl.Datetime('ms'), '%Y-%m-%dT%H:%M:%S%.fZ', false).cast(pl.Datetime('us')).alias('event_time'),
    col('namespace').cast(pl.Int32, false).alias('ns32'));
ev = ev.withColumns(
  when(col('has_meta').not()).then(lit('missing_meta'))
    .when(col('meta_id').isNull()).then(lit('missing_meta_id'))
    .when(col('meta_id').str.contains(UUID).not()).then(lit('bad_meta_id'))
    .when(col('dt').isNull()).then(lit('missing_meta_dt'))
    .when(col('dt').str.contains(RFC3339).not().or(col('event_time').isNull())).then(lit('bad_meta_dt'))
    .when(col('wiki').isNull()).then(lit('missing_wiki'))
    .when(col('wiki').str.lengths().eq(0)).then(lit('bad_wiki'))
    .when(col('type').isNull()).then(lit('missing_type'))
    .when(col('type').isIn(TYPES).not()).then(lit('bad_type'))
    .when(col('str_typed').or(col('namespace').isNotNull().and(col('ns32').isNull()))).then(lit('bad_field_type'))
    .otherwise(lit(null)).alias('reason'));
lap('gate');

const dlq = pl.concat([
  bad.filter(col('line').str.lengths().ltEq(1048576)).select(col('rn'), lit('not_json').alias('reason'), col('line').alias('raw')),
  ev.filter(col('reason').isNotNull()).select(col('rn'), col('reason'), col('line').alias('raw'))])
  .sort('rn').rename({ rn: 'line' });
pq(dlq, 'dlq');
let valid = ev.filter(col('reason').isNull()).sort('rn');
pq(valid.select(col('event_time').cast(US), 'meta_id', 'wiki', 'type', col('line').alias('raw')), 'bronze');
lap('bronze');

// ---- watermark in file order: max event time of the valid lines before
const etUs = col('event_time').cast(pl.Int64);
valid = valid.drop('line').withColumns(etUs.cumMax().shift(1).minus(I64(120_000_000)).alias('wm_us'));
const SILVER = ['meta_id', 'event_time', 'wiki', 'type', col('ns32').alias('namespace'), 'title', 'user',
  col('bot').eq(lit('true')).alias('bot'), col('minor').eq(lit('true')).alias('minor'),
  col('patrolled').eq(lit('true')).alias('patrolled'), 'length_old', 'length_new', 'revision_old',
  'revision_new', 'server_name', 'comment', 'log_type', 'log_action', 'rc_id', 'log_id'];
const late = valid.filter(etUs.lt(col('wm_us')));
pq(late.select(...SILVER, col('wm_us').cast(pl.Datetime('us')).alias('watermark'),
  col('wm_us').minus(etUs).div(I64(1000)).cast(pl.Int64).alias('lateness_ms'))
  .withColumns(col('event_time').cast(US), col('watermark').cast(US)), 'late_arrivals');
lap('late');
const silver = valid.filter(col('wm_us').isNull().or(etUs.gtEq(col('wm_us'))))
  .withColumns(col('meta_id').str.toLowerCase().alias('key'))
  .unique({ subset: 'key', keep: 'first', maintainOrder: true })
  .select(...SILVER);
lap('dedup');
pq(silver.withColumns(col('event_time').cast(US)), 'silver');
lap('silver');

// ---- gold: settled windows only (end <= final watermark)
// (Series.get(0) truncates an i64 to 32 bits in 0.25.2; toArray() does not)
const wmFinal = Number(valid.select(etUs.max().alias('x')).getColumn('x').toArray()[0]) - 120_000_000;
const MIN = 60_000_000;
const minute = etUs.minus(etUs.modulo(I64(MIN))).alias('ws');
const eNew = col('type').isIn(['edit', 'new']).and(col('length_new').isNotNull());
const delta = col('length_new').minus(col('length_old').fillNull(I64(0)));
const epm = silver.withColumns(minute,
  when(eNew.and(delta.gt(I64(0)))).then(delta).otherwise(I64(0)).alias('add'),
  when(eNew.and(delta.lt(I64(0)))).then(I64(0).minus(delta)).otherwise(I64(0)).alias('rem'))
  .filter(col('ws').plus(I64(MIN)).ltEq(I64(wmFinal)))
  .groupBy(['ws', 'wiki']).agg(
    pl.len().cast(pl.Int64).alias('events'),
    col('type').eq(lit('edit')).sum().cast(pl.Int64).alias('edits'),
    col('type').eq(lit('new')).sum().cast(pl.Int64).alias('new_pages'),
    col('bot').fillNull(false).sum().cast(pl.Int64).alias('bot_events'),
    col('add').sum().cast(pl.Int64).alias('bytes_added'),
    col('rem').sum().cast(pl.Int64).alias('bytes_removed'),
    col('user').dropNulls().nUnique().cast(pl.Int64).alias('distinct_users'))
  .sort(['ws', 'wiki'])
  .select(col('ws').cast(US).alias('window_start'), col('ws').plus(I64(MIN)).cast(US).alias('window_end'),
    'wiki', 'events', 'edits', 'new_pages', 'bot_events', 'bytes_added', 'bytes_removed', 'distinct_users',
    lit(true).alias('distinct_users_exact'));
pq(epm, 'gold_edits_per_minute');
lap('gold_epm');
// top pages: 1-minute panes, each counted in the ten windows that cover it
const panes = silver.filter(col('type').isIn(['edit', 'new']).and(col('title').isNotNull()))
  .withColumns(minute).groupBy(['ws', 'wiki', 'title']).agg(pl.len().cast(pl.Int64).alias('c'));
const ks = pl.DataFrame({ k: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] }).select(col('k').cast(pl.Int64));
const top = panes.join(ks, { how: 'cross' })
  .withColumns(col('ws').minus(col('k').mul(I64(MIN))).alias('s'))
  .filter(col('s').plus(I64(10 * MIN)).ltEq(I64(wmFinal)))
  .groupBy(['s', 'wiki', 'title']).agg(col('c').sum().cast(pl.Int64).alias('edits'))
  .sort(['s', 'edits', 'wiki', 'title'], [false, true, false, false])
  .withColumns(col('s').cumCount().over('s').cast(pl.Int32).alias('rank0'))
  // (cumCount counts from 1 in 0.25.2 and from 0 in other versions)
  .withColumns(col('rank0').minus(col('rank0').min().over('s')).plus(lit(1).cast(pl.Int32)).alias('rank'))
  .filter(col('rank').ltEq(lit(20)))
  .select(col('s').cast(US).alias('window_start'), col('s').plus(I64(10 * MIN)).cast(US).alias('window_end'),
    'rank', 'wiki', 'title', 'edits');
pq(top, 'gold_top_pages');
lap('gold_top');
console.log(`polars steps (s): ${Object.entries(t).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')}; total ${((performance.now() - t00) / 1000).toFixed(2)}`);
