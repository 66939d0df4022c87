// topics_check.mjs — the DuckDB oracle of tests/integration/enrich_process.sh
// (issue 9). Reads lakes through the live data files `freshet tables --json
// --files` lists. Every expected value here is computed by DuckDB from the
// tables' rows, never taken from freshet's own figures.
//
// usage:
//   node topics_check.mjs oracle A.json
//       gold_top_topics equals DuckDB's recomputation from silver_topics
//       (resolved rows; 10-minute windows sliding every minute, top 20 by
//       edits then item number, distinct wikis, top 3 wikis by edits then
//       name) for every window ending at or before the frontier committed
//       with the newest epoch, and holds no window past it
//       (in the scale-out mode: the frontier of the finalizer's newest
//       epoch, gold_edits_per_minute's marker "<id>-gold")
//   node topics_check.mjs partition A.json
//       every enrichable silver edit (type edit/new with a title and a
//       server_name) is in exactly one of silver_topics and dlq_lookups (or
//       in both only when silver_topics' row is a replay's), silver_topics
//       has no meta_id twice, nothing else is in either
//   node topics_check.mjs core A.json B.json [--any-epochs]
//       the six core tables hold the same rows in A and B, and (unless
//       --any-epochs) bronze committed the same records per epoch (the
//       API's health did not change what each epoch committed)
//   node topics_check.mjs same A.json B.json [--all]
//       silver_topics agree (meta_id, outcome, why, item) on the edits whose
//       windows are all settled in both, and gold_top_topics agree on the
//       windows ending 10 minutes or more before the smaller frontier
//       (--all: on every row of both tables)
//   node topics_check.mjs replayed A.json
//       every dead letter in dlq_lookups whose windows are all settled has
//       exactly one silver_topics row, from a replay
//   node topics_check.mjs has A.json REASON MIN
//       dlq_lookups holds at least MIN rows of REASON
//   node topics_check.mjs labels A.json API [--all-cases]
//       (issue 33) every resolved silver_topics row carries the label the
//       feed's fixture at API (http://127.0.0.1:PORT) gives for its item in
//       the content language of its wiki (WIKI_LANG below, written here),
//       else English, else none with label_why no_label / missing; no_item
//       rows carry none; gold_top_topics' label is checked by 'oracle'
//       (the label its top wiki's rows hold)
//   node topics_check.mjs labelcounts A.json STATUS.json [--min-failed N]
//       (issue 33) the processor's label counters (`freshet status --json`,
//       "labels": process_enrich_labels_total) equal DuckDB's count of the
//       processor's own silver_topics rows (replay_id null, outcome
//       resolved) by label_why (null: labelled), and "failed" equals the
//       dlq_lookups rows whose detail says the label round failed
//       ("labels: ..."); at least N of those (default 0)
import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

const [mode, ...args] = process.argv.slice(2);
const db = await DuckDBInstance.create(':memory:', {
  autoinstall_known_extensions: 'false', autoload_known_extensions: 'false' });
const con = await db.connect();
const q = async (sql) => (await con.runAndReadAll(sql)).getRowObjectsJson();
const one = async (sql) => Number(Object.values((await q(sql))[0])[0]);

const SILVER = 'meta_id VARCHAR, event_time TIMESTAMPTZ, wiki VARCHAR, type VARCHAR, namespace INTEGER, title VARCHAR, "user" VARCHAR, bot BOOLEAN, minor BOOLEAN, patrolled BOOLEAN, length_old BIGINT, length_new BIGINT, revision_old BIGINT, revision_new BIGINT, server_name VARCHAR, comment VARCHAR, log_type VARCHAR, log_action VARCHAR, rc_id BIGINT, log_id BIGINT, log_partition INTEGER, log_offset BIGINT, ingest_time TIMESTAMPTZ';
const schemas = {
  silver_recentchange: SILVER,
  late_arrivals: `${SILVER}, watermark TIMESTAMPTZ, lateness_ms BIGINT`,
  gold_edits_per_minute: 'window_start TIMESTAMPTZ, window_end TIMESTAMPTZ, wiki VARCHAR, events BIGINT, edits BIGINT, new_pages BIGINT, bot_events BIGINT, bytes_added BIGINT, bytes_removed BIGINT, distinct_users BIGINT, distinct_users_exact BOOLEAN',
  gold_top_pages: 'window_start TIMESTAMPTZ, window_end TIMESTAMPTZ, rank INTEGER, wiki VARCHAR, title VARCHAR, edits BIGINT',
  bronze_recentchange: 'log_partition INTEGER, log_offset BIGINT, ingest_time TIMESTAMPTZ, event_time TIMESTAMPTZ, meta_id VARCHAR, wiki VARCHAR, type VARCHAR, raw VARCHAR',
  dlq: 'log_partition INTEGER, log_offset BIGINT, ingest_time TIMESTAMPTZ, reason VARCHAR, detail VARCHAR, raw VARCHAR, raw_base64 VARCHAR',
  silver_topics: 'meta_id VARCHAR, event_time TIMESTAMPTZ, wiki VARCHAR, server_name VARCHAR, title VARCHAR, outcome VARCHAR, why VARCHAR, item VARCHAR, log_partition INTEGER, log_offset BIGINT, replay_id VARCHAR, label VARCHAR, label_lang VARCHAR, label_why VARCHAR',
  gold_top_topics: 'window_start TIMESTAMPTZ, window_end TIMESTAMPTZ, rank INTEGER, item VARCHAR, edits BIGINT, wikis INTEGER, top_wikis VARCHAR, label VARCHAR',
  dlq_lookups: 'meta_id VARCHAR, event_time TIMESTAMPTZ, wiki VARCHAR, server_name VARCHAR, title VARCHAR, reason VARCHAR, detail VARCHAR, attempts INTEGER, log_partition INTEGER, log_offset BIGINT, failed_at TIMESTAMPTZ',
};
const CORE = ['bronze_recentchange', 'silver_recentchange', 'gold_edits_per_minute',
  'gold_top_pages', 'late_arrivals', 'dlq'];

let failed = 0; let passed = 0;
function check(name, ok, detail) {
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}: ${detail}`);
  if (ok) passed++; else failed++;
}

let nlakes = 0;
async function lake(path) {
  const t = JSON.parse(readFileSync(path, 'utf8'));
  const id = `l${nlakes++}`;
  const info = {};
  for (const tbl of t.tables) {
    info[tbl.name] = { files: (tbl.data_files || []).map((f) => f.local_path), snapshots: tbl.snapshots || [] };
  }
  for (const name of Object.keys(schemas)) {
    const files = (info[name] || { files: [] }).files;
    if (files.length) {
      await q(`CREATE VIEW ${id}_${name} AS SELECT * FROM read_parquet([${files.map((p) => `'${p}'`).join(',')}])`);
    } else {
      await q(`CREATE TABLE ${id}_${name} (${schemas[name]})`);
    }
  }
  // The frontier committed with the newest epoch (bronze's snapshots).
  let frontier = null; let newest = -1;
  const epochRecords = {};
  for (const s of (info.bronze_recentchange || { snapshots: [] }).snapshots) {
    const e = s.summary && s.summary['freshet.epoch'];
    if (e === undefined) continue;
    epochRecords[e] = Number(s.summary['freshet.epoch-records']);
    if (Number(e) > newest && s.summary['freshet.topics-frontier-us'] !== undefined) {
      newest = Number(e);
      frontier = BigInt(s.summary['freshet.topics-frontier-us']);
    }
  }
  // The scale-out mode (docs/SCALEOUT.md): gold_top_topics is the
  // finalizer's, so the frontier is the one its newest epoch committed
  // (gold_edits_per_minute carries its marker, pipeline "<id>-gold").
  let finalNewest = -1;
  for (const s of (info.gold_edits_per_minute || { snapshots: [] }).snapshots) {
    const sm = s.summary || {};
    const e = Number(sm['freshet.epoch']);
    if (!String(sm['freshet.pipeline-id'] || '').endsWith('-gold') || !(e > finalNewest)) continue;
    if (sm['freshet.topics-frontier-us'] === undefined) continue;
    finalNewest = e;
    frontier = BigInt(sm['freshet.topics-frontier-us']);
  }
  return { id, info, frontier, epochRecords, sharded: finalNewest >= 0 };
}


// gold_top_topics recomputed from silver_topics by SQL alone. The label is
// the one the item's rows on its top wiki hold in the window (max(): in
// these tests every row of an (item, wiki) holds the same one, which the
// 'labels' mode checks against the fixture).
const recompute = (l) => `
  WITH m AS (SELECT date_trunc('minute', event_time) AS minute, item, wiki, label
             FROM ${l.id}_silver_topics WHERE outcome = 'resolved'),
  starts AS (SELECT DISTINCT minute - to_minutes(k) AS s FROM m, range(0, 10) t(k)),
  w AS (SELECT s, item, wiki, count(*) AS c, max(label) AS label FROM starts JOIN m
          ON m.minute >= s AND m.minute < s + INTERVAL 10 MINUTE GROUP BY ALL),
  it AS (SELECT s, item, sum(c)::BIGINT AS edits, count(*)::INTEGER AS wikis FROM w GROUP BY ALL),
  ranked AS (SELECT *, row_number() OVER (PARTITION BY s ORDER BY edits DESC,
               CAST(substr(item, 2) AS UBIGINT)) AS rank FROM it),
  tw AS (SELECT s, item, string_agg(wiki || ':' || c, ',' ORDER BY c DESC, wiki) AS top_wikis,
                max(label) FILTER (WHERE k = 1) AS label
         FROM (SELECT *, row_number() OVER (PARTITION BY s, item ORDER BY c DESC, wiki) AS k FROM w)
         WHERE k <= 3 GROUP BY ALL)
  SELECT r.s AS window_start, r.s + INTERVAL 10 MINUTE AS window_end, r.rank::INTEGER AS rank,
         r.item, r.edits, r.wikis, tw.top_wikis, tw.label
  FROM ranked r JOIN tw USING (s, item) WHERE r.rank <= 20`;

async function diffSql(a, b) {
  const x = await one(`SELECT count(*) FROM (${a} EXCEPT ALL ${b})`);
  const y = await one(`SELECT count(*) FROM (${b} EXCEPT ALL ${a})`);
  return { x, y };
}

const ENRICHABLE = (l) => `SELECT meta_id FROM ${l.id}_silver_recentchange
  WHERE type IN ('edit', 'new') AND title IS NOT NULL AND title <> '' AND server_name IS NOT NULL`;

if (mode === 'oracle') {
  const a = await lake(args[0]);
  check('a frontier was committed', a.frontier !== null, `frontier ${a.frontier} us`);
  const f = a.frontier ?? 0n;
  const got = `SELECT * FROM ${a.id}_gold_top_topics`;
  const want = `SELECT * FROM (${recompute(a)}) WHERE epoch_us(window_end) <= ${f}`;
  const n = await one(`SELECT count(*) FROM (${want})`);
  const d = await diffSql(got, want);
  check('gold_top_topics equals the recomputation from silver_topics', n > 0 && d.x === 0 && d.y === 0,
    `${n} rows expected; ${d.x} only in the table, ${d.y} only in the recomputation`);
  const past = await one(`SELECT count(*) FROM ${a.id}_gold_top_topics WHERE epoch_us(window_end) > ${f}`);
  check('no window past the frontier', past === 0, `${past} rows past it`);
} else if (mode === 'partition') {
  const a = await lake(args[0]);
  const dup = await one(`SELECT count(*) - count(DISTINCT meta_id) FROM ${a.id}_silver_topics`);
  check('silver_topics holds no meta_id twice', dup === 0, `${dup} repeats`);
  const e = await one(`SELECT count(*) FROM (${ENRICHABLE(a)})`);
  const lost = await one(`SELECT count(*) FROM (${ENRICHABLE(a)} EXCEPT
      (SELECT meta_id FROM ${a.id}_silver_topics UNION SELECT meta_id FROM ${a.id}_dlq_lookups))`);
  const stray = await one(`SELECT count(*) FROM ((SELECT meta_id FROM ${a.id}_silver_topics UNION ALL
      SELECT meta_id FROM ${a.id}_dlq_lookups) EXCEPT ${ENRICHABLE(a)})`);
  const both = await one(`SELECT count(*) FROM ${a.id}_silver_topics s JOIN ${a.id}_dlq_lookups d
      USING (meta_id) WHERE s.replay_id IS NULL`);
  const dlqDup = await one(`SELECT count(*) - count(DISTINCT meta_id) FROM ${a.id}_dlq_lookups`);
  check('every enrichable edit has one outcome', e > 0 && lost === 0 && stray === 0 && both === 0 && dlqDup === 0,
    `${e} edits; ${lost} with none, ${stray} outcomes for no edit, ${both} both answered and dead, ${dlqDup} dead twice`);
} else if (mode === 'core') {
  const a = await lake(args[0]); const b = await lake(args[1]);
  for (const name of CORE) {
    const d = await diffSql(`SELECT * FROM ${a.id}_${name}`, `SELECT * FROM ${b.id}_${name}`);
    const n = await one(`SELECT count(*) FROM ${a.id}_${name}`);
    check(`${name} equal`, d.x === 0 && d.y === 0 && (n > 0 || name === 'late_arrivals' || name === 'dlq'),
      `${n} rows; ${d.x} only in the first, ${d.y} only in the second`);
  }
  const ea = Object.entries(a.epochRecords).filter(([, n]) => n > 0);
  const eb = Object.entries(b.epochRecords).filter(([, n]) => n > 0);
  if (!args.includes('--any-epochs')) check('the same records committed per epoch', ea.length > 1 && JSON.stringify(ea) === JSON.stringify(eb),
    `${ea.length} epochs with records: ${JSON.stringify(ea.slice(0, 8))}… vs ${JSON.stringify(eb.slice(0, 8))}…`);
} else if (mode === 'same') {
  const a = await lake(args[0]); const b = await lake(args[1]);
  const all = args.includes('--all');
  const fmin = a.frontier < b.frontier ? a.frontier : b.frontier;
  const settled = all ? 'true' : `epoch_us(date_trunc('minute', event_time)) + 600000000 <= ${fmin}`;
  const cols = 'meta_id, outcome, why, item, label, label_lang, label_why';
  const ds = await diffSql(`SELECT ${cols} FROM ${a.id}_silver_topics WHERE ${settled}`,
    `SELECT ${cols} FROM ${b.id}_silver_topics WHERE ${settled}`);
  const ns = await one(`SELECT count(*) FROM ${a.id}_silver_topics WHERE ${settled}`);
  check('silver_topics agree on settled edits', ns > 0 && ds.x === 0 && ds.y === 0,
    `${ns} rows; ${ds.x} only in the first, ${ds.y} only in the second`);
  const early = all ? 'true' : `epoch_us(window_end) <= ${fmin - 600000000n}`;
  const dg = await diffSql(`SELECT * FROM ${a.id}_gold_top_topics WHERE ${early}`,
    `SELECT * FROM ${b.id}_gold_top_topics WHERE ${early}`);
  const ng = await one(`SELECT count(*) FROM ${a.id}_gold_top_topics WHERE ${early}`);
  check('gold_top_topics agree', ng > 0 && dg.x === 0 && dg.y === 0,
    `${ng} rows in windows ending by the frontier - 10 min; ${dg.x} only in the first, ${dg.y} only in the second`);
} else if (mode === 'replayed') {
  const a = await lake(args[0]);
  const settled = `epoch_us(date_trunc('minute', d.event_time)) + 600000000 <= ${a.frontier ?? 0n}`;
  const n = await one(`SELECT count(*) FROM ${a.id}_dlq_lookups d WHERE ${settled}`);
  const bad = await one(`SELECT count(*) FROM ${a.id}_dlq_lookups d WHERE ${settled} AND
      (SELECT count(*) FROM ${a.id}_silver_topics s WHERE s.meta_id = d.meta_id AND s.replay_id IS NOT NULL) <> 1`);
  check('every settled dead letter landed once by replay', n > 0 && bad === 0,
    `${n} dead letters in settled windows, ${bad} without exactly one replayed row`);
} else if (mode === 'has') {
  const a = await lake(args[0]);
  const n = await one(`SELECT count(*) FROM ${a.id}_dlq_lookups WHERE reason = '${args[1].replace(/'/g, '')}'`);
  check(`dlq_lookups holds ${args[1]} rows`, n >= Number(args[2]), `${n} rows (at least ${args[2]} expected)`);
} else if (mode === 'labels') {
  const a = await lake(args[0]);
  const api = args[1];
  // The content language of the generator's wikis, by hand: a language
  // edition's code, with Wikidata's name where it differs; multilingual
  // wikis ask in English.
  const WIKI_LANG = (wiki) => {
    if (['commonswiki', 'wikidatawiki', 'simplewiki', 'metawiki', 'specieswiki'].includes(wiki)) return 'en';
    if (wiki === 'nowiki') return 'nb';
    for (const suffix of ['wiktionary', 'wikibooks', 'wikisource', 'wikiquote', 'wikinews', 'wikivoyage', 'wikiversity', 'wiki']) {
      if (wiki.endsWith(suffix)) return wiki.slice(0, -suffix.length).replace(/_/g, '-');
    }
    return null;
  };
  const rows = await q(`SELECT item, wiki, label, label_lang, label_why, count(*)::INTEGER AS n
      FROM ${a.id}_silver_topics WHERE outcome = 'resolved' GROUP BY ALL`);
  const byLang = new Map();
  for (const r of rows) {
    const lang = WIKI_LANG(r.wiki);
    if (!byLang.has(lang)) byLang.set(lang, new Set());
    byLang.get(lang).add(r.item);
  }
  const want = new Map(); // `${lang} ${item}` -> {label, lang, why}
  for (const [lang, items] of byLang) {
    const ids = [...items];
    for (let i = 0; i < ids.length; i += 50) {
      const langs = lang === 'en' ? 'en' : `${lang}|en`;
      const url = `${api}/api/www.wikidata.org/w/api.php?action=wbgetentities&format=json&props=labels&languages=${encodeURIComponent(langs)}&ids=${ids.slice(i, i + 50).join('|')}`;
      const body = await (await fetch(url)).json();
      for (const id of ids.slice(i, i + 50)) {
        const e = body.entities[id];
        const l = e.missing !== undefined ? null : (e.labels[lang] || e.labels.en || null);
        want.set(`${lang} ${id}`, e.missing !== undefined ? { label: null, lang: null, why: 'missing' }
          : l ? { label: l.value, lang: l.language, why: null } : { label: null, lang: null, why: 'no_label' });
      }
    }
  }
  let bad = 0; let found = 0; let other = 0; let none = 0; let total = 0; const ex = [];
  for (const r of rows) {
    const w = want.get(`${WIKI_LANG(r.wiki)} ${r.item}`);
    total += r.n;
    const ok = w && r.label === w.label && r.label_lang === w.lang && r.label_why === w.why;
    if (!ok) { bad += r.n; if (ex.length < 3) ex.push(`${r.item}@${r.wiki}: ${JSON.stringify([r.label, r.label_lang, r.label_why])} want ${JSON.stringify(w)}`); }
    if (w && w.label !== null) { found += r.n; if (w.lang !== 'en') other += r.n; } else none += r.n;
  }
  // --all-cases (the healthy control run): a label in a content language,
  // and a resolved item without one, must both occur; a run under faults
  // may resolve too few items for that (only correctness is required)
  const allCases = args.includes('--all-cases');
  check('resolved edits carry the fixture\'s label (content language, else English, else a reason)',
    total > 0 && bad === 0 && found > 0 && (!allCases || (other > 0 && none > 0)),
    `${total} resolved rows: ${found} labelled (${other} not in English), ${none} without, ${bad} wrong ${ex.join('; ')}`);
  const stray = await one(`SELECT count(*) FROM ${a.id}_silver_topics WHERE outcome <> 'resolved'
      AND (label IS NOT NULL OR label_lang IS NOT NULL OR label_why IS NOT NULL)`);
  check('no_item rows carry no label', stray === 0, `${stray} rows with one`);
  const glab = await one(`SELECT count(*) FROM ${a.id}_gold_top_topics WHERE label IS NOT NULL`);
  const gall = await one(`SELECT count(*) FROM ${a.id}_gold_top_topics`);
  check('gold_top_topics rows carry labels', gall === 0 || glab > 0, `${glab} of ${gall} rows labelled`);
} else if (mode === 'labelcounts') {
  const a = await lake(args[0]);
  const got = JSON.parse(readFileSync(args[1], 'utf8')).labels;
  const minFailed = args.includes('--min-failed') ? Number(args[args.indexOf('--min-failed') + 1]) : 0;
  const want = { labelled: 0, no_label: 0, missing: 0, off: 0, failed: 0 };
  for (const r of await q(`SELECT coalesce(label_why, 'labelled') AS k, count(*)::INTEGER AS n
      FROM ${a.id}_silver_topics WHERE outcome = 'resolved' AND replay_id IS NULL GROUP BY ALL`)) {
    want[r.k] = (want[r.k] ?? 0) + Number(r.n);
  }
  want.failed = await one(`SELECT count(*) FROM ${a.id}_dlq_lookups WHERE detail LIKE 'labels: %'`);
  const same = Object.keys(want).length === Object.keys(got).length &&
    Object.entries(want).every(([k, n]) => got[k] === n);
  check('label counters equal the lake\'s rows', same && want.labelled > 0 && want.failed >= minFailed,
    `status ${JSON.stringify(got)}, lake ${JSON.stringify(want)}`);
} else {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
