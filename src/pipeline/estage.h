/*
 * estage.h — the enrichment stage of `freshet process` (issue 9,
 * docs/ENRICH.md "In the processor", ADR 0021): every on-time edit (silver
 * row of type edit or new with a title and a server_name) is looked up,
 * off the hot path, through the client of src/enrich; answers land in
 * silver_topics, failures in dlq_lookups, resolved items in the topics
 * operator (gold_top_topics). With enrich.labels a resolved answer carries
 * the item's label (issue 33, ADR 0056): the client asks for it before it
 * answers, so an edit is pending until both are known and nothing about
 * labels needs its own state here.
 *
 * Edits waiting for an answer are held in a bounded pending table
 * (enrich.pending_max slots; a full table sends the edit to dlq_lookups
 * with reason "backlog", never grows, after waiting up to
 * enrich.backlog_wait_ms for room). Answers arrive whenever libcurl has
 * them (fr_estage_pump, also while the planner waits) and are only marked;
 * fr_estage_write writes the marked ones into the epoch's tables, and
 * fr_estage_apply at the epoch's end also settles gold_top_topics windows
 * at the frontier
 *
 *     frontier = min(watermark, event time of the oldest edit still waiting)
 *
 * so a window is emitted once, after every lookup in it was answered.
 *
 * Exactly once. Answers are not a function of the log (they depend on
 * when the API answered), so the stage's state cannot be rebuilt by
 * replaying an epoch. Instead it is saved before the epoch's commit to
 * <checkpoint dir>/enrich/state-<epoch>-<fingerprint> (durably: temp,
 * fsync, rename; the fingerprint is the file's own CRC-32C, in hex), and
 * the epoch's marker names it (freshet.enrich-state, ADR 0064), so the
 * state a committed epoch was made with is known, whoever else saved a
 * state for that epoch (a fenced owner on a shared volume), and can be
 * fetched from the bucket (process.checkpoint_uri) on another machine:
 *
 *   - restart after the checkpoint of E: load state-E (pending edits are
 *     submitted again; an answer that arrived after E's save but before the
 *     crash was never applied, so it is asked again, never counted twice);
 *   - crash after E+1's commit, before its checkpoint: the epoch loop
 *     replays E+1 without writing (already in the lake) and then loads
 *     state-E+1, written before that commit: exactly the state the commit
 *     holds;
 *   - crash before E+1's commit: state-E+1 may exist but is ignored (E+1
 *     is redone from state-E and saved again, under its own fingerprint).
 * The state files of the last three epochs are kept. Files of lakes
 * written before fingerprints are named state-<epoch> and still load
 * (fr_estage_load).
 *
 * Byte table of a state file (little-endian):
 *
 *   size   field
 *   4      magic "FRES"
 *   2      version (2; 1 before issue 33's label counters, still loaded)
 *   2      zero
 *   8      epoch
 *   8 x 6  counters: submitted, resolved, no_item, failed, backlog, skipped
 *   4      n pending edits, each:
 *            8 event_us, 4 partition, 8 offset, 36 meta_id,
 *            2 wiki length, 2 server_name length, 2 title length, the bytes
 *   8      m, then m bytes: the topics operator (fr_topics_save)
 *   8 x 5  (version 2) label counters, enum fr_estage_label order
 *   4      CRC-32C of everything before
 *
 * Thread: the epoch loop's. The lookup client runs on it too (inside
 * fr_estage_pump, never blocking longer than the timeout given).
 */
#ifndef FR_PIPELINE_ESTAGE_H
#define FR_PIPELINE_ESTAGE_H

#include "conf/conf.h"
#include "pipeline/tables.h"
#include "process/process.h"

#include <stddef.h>
#include <stdint.h>

struct fr_estage;
struct fr_stats;

/* Counters, exactly once (saved with the state): edits submitted for a
 * lookup, their committed outcomes, edits refused by a full pending table
 * (backlog), and edits not enriched (no title or server_name). */
/* What a resolved edit's row says of its label (label_why, docs/ENRICH.md
 * "Labels"), and FR_ESTAGE_LABEL_FAILED: dead-lettered because the label
 * round failed. The order of the stats label set LABEL (stats.c). */
enum fr_estage_label {
    FR_ESTAGE_LABELLED = 0,
    FR_ESTAGE_LABEL_NONE,    /* label_why no_label */
    FR_ESTAGE_LABEL_MISSING, /* label_why missing */
    FR_ESTAGE_LABEL_OFF,     /* label_why off */
    FR_ESTAGE_LABEL_FAILED,
    FR_ESTAGE_LABEL_OUTCOMES
};

struct fr_estage_counts {
    uint64_t submitted, resolved, no_item, failed, backlog, skipped;
    /* counted where the row's label_why is decided (fr_estage_write),
     * saved with the state: exactly once across restarts */
    uint64_t labels[FR_ESTAGE_LABEL_OUTCOMES];
};

/* A shard of the scale-out mode (docs/SCALEOUT.md, ADR 0046): resolved
 * items are not counted and fr_estage_apply settles no window (nothing is
 * written to gold_top_topics); the frontier is still computed and
 * published with each epoch, so the finalizer knows up to when this
 * shard's silver_topics rows are complete. Call right after open. */
void fr_estage_no_gold(struct fr_estage *es);

/* Create the stage when conf->enrich_enabled (else FR_OK and *out NULL).
 * ck_dir is the pipeline's checkpoint directory. FR_ECONFIG (logged) for
 * bad [enrich] settings, FR_ENOMEM. */
int fr_estage_open(const struct fr_conf *conf, const char *ck_dir, struct fr_estage **out);
/* Accepts NULL. Lookups in flight are abandoned (their edits are in the
 * last saved state). */
void fr_estage_free(struct fr_estage *es);

/* Replace the state with state-<epoch>: FR_OK, FR_ENOTFOUND when there is
 * no such file (the state is then left as it was), FR_ECRC / FR_ECORRUPT /
 * FR_ETOOBIG for a damaged one (logged; the state is then empty and the
 * caller must stop). Answers still in flight for the old state are
 * ignored when they arrive. */
int fr_estage_load(struct fr_estage *es, int64_t epoch);
/* The same for the state named by an epoch's marker: the file
 * state-<epoch>-<fp> whose CRC-32C is fp (FR_ENOTFOUND when absent,
 * FR_ECRC when its bytes are not those). */
int fr_estage_load_exact(struct fr_estage *es, int64_t epoch, uint32_t fp);
/* Load the state committed epoch was made with: the one its marker
 * names (freshet.enrich-state), from the checkpoint directory or, when
 * that lacks it (another machine, another owner's file), from the
 * bucket's copy through ckm (may be NULL). need: the lake's newest epoch,
 * whose state the run continues with: not finding it is FR_ENOTFOUND
 * (logged: the run must stop); for an older epoch a missing state is
 * FR_OK, since the newest one's replaces it. An epoch whose marker names
 * none (enrichment was off, or a lake from before fingerprints) takes
 * state-<epoch> if the directory has it, else keeps the state (FR_OK).
 * Code: estage_lake.c (ADR 0064). */
struct fr_lake;
struct fr_ckm;
int fr_estage_load_committed(struct fr_estage *es, struct fr_lake *lake, const char *pipeline,
                             struct fr_ckm *ckm, int64_t epoch, int need);
/* "state-<epoch>-<fp>", the file name of that state (in fr_estage_dir and
 * in the bucket's copy), and the directory the stage keeps its files in. */
void fr_estage_state_name(int64_t epoch, uint32_t fp, char *out, size_t outlen);
const char *fr_estage_dir(const struct fr_estage *es);
/* Start with an empty state (no checkpoint yet). */
void fr_estage_reset(struct fr_estage *es);

/* An on-time silver row: queue its lookup. A full pending table writes a
 * dlq_lookups row (reason "backlog") to tw[FR_TBL_DLQ_LOOKUPS]. tw is the
 * epoch's writers, indexed by enum fr_tbl. */
int fr_estage_edit(struct fr_estage *es, const struct fr_row *row, struct fr_tw *tw);
/* Drive lookups for up to timeout_ms and mark what was answered. Returns
 * FR_OK or a fatal client error. */
int fr_estage_pump(struct fr_estage *es, int timeout_ms);
/* Edits still waiting for an answer / answered but not yet applied. */
size_t fr_estage_waiting(const struct fr_estage *es);
size_t fr_estage_answered(const struct fr_estage *es);
/* Write every answered edit to the epoch's tables (silver_topics,
 * dlq_lookups) and count it, freeing its slot (any time inside an epoch
 * being written). */
int fr_estage_write(struct fr_estage *es, struct fr_tw *tw, int64_t now_us);
/* fr_estage_write, then settle gold_top_topics up to the frontier (rows to
 * tw[FR_TBL_GOLD_TOPICS]); at the end of the epoch. *gold_rows gets the
 * rows emitted. */
int fr_estage_apply(struct fr_estage *es, struct fr_tw *tw, int64_t watermark_us, int64_t now_us,
                    uint64_t *gold_rows);
/* Durably write state-<epoch>-<fp> (before the epoch's commit), *fp
 * getting its fingerprint (the epoch's marker records it), and remove the
 * files of epochs older than the last three. */
int fr_estage_save(struct fr_estage *es, int64_t epoch, uint32_t *fp);

/* silver_topics' label_why for an enum fr_enrich_label_why: NULL (a
 * label), "no_label", "missing", "off" (enrich.labels = 0). */
const char *fr_estage_label_why(int label_why);

void fr_estage_counts(const struct fr_estage *es, struct fr_estage_counts *counts);
/* The frontier after the last apply (FR_PROC_WM_NONE before any). */
int64_t fr_estage_frontier(const struct fr_estage *es);
/* Publish the counters and gauges to st, and <data_dir>/stats/topics.json
 * (docs/ENRICH.md): counts, the frontier, the provisional top topics of the
 * newest open window. Errors are logged, never fatal. */
void fr_estage_publish(struct fr_estage *es, struct fr_stats *st, const char *data_dir,
                       int64_t epoch);
/* The counters and gauges alone, into the caller's own stats file: what a
 * scale-out shard publishes (serve sums the members'; the topics view is
 * the finalizer's). */
void fr_estage_publish_stats(struct fr_estage *es, struct fr_stats *st);
/* The topics view document (docs/ENRICH.md "topics.json") of a topics
 * operator: the provisional top topics of its newest open window, the
 * frontier (FR_PROC_WM_NONE: null), and counts (a JSON object, or NULL:
 * null, as the scale-out finalizer writes it: the lookups' counts are the
 * shards'). Appended to out. */
#define FR_TOPICS_JSON_CAP ((size_t)64 << 10) /* FR_TOP_N topics of a few hundred bytes */
struct fr_buf;
struct fr_topics;
int fr_topics_json(struct fr_topics *topics, int64_t epoch, int64_t frontier_us,
                   const char *counts, struct fr_buf *out);
/* Write doc to <data_dir>/stats/topics.json (replaced whole; a view, no
 * fsync); a failure is logged as who's warning. */
void fr_topics_json_write(const char *data_dir, const struct fr_buf *doc, const char *who);

#endif
