/*
 * tables.h — the six tables of namespace `wiki` (names and columns are a
 * contract: DESIGN.md "Tables"), and per-epoch writers that turn operator
 * output into Parquet data files ready for an Iceberg commit.
 *
 * Every column has the same field id in the Iceberg schema and in the
 * Parquet files, so engines that map by id and readers that map by name
 * (icebird) both see the same table. Timestamps are microseconds, UTC
 * (Iceberg timestamptz, Parquet TIMESTAMP adjusted to UTC).
 *
 * One struct fr_tw per table and epoch, owned by the epoch loop's thread.
 * Data file names are deterministic per (pipeline, epoch, table): a replay
 * of an uncommitted epoch rewrites the same names with the same bytes, and
 * a committed epoch is never written again. Rebuild and dlq replay name
 * their files themselves (fr_tw_init_named).
 */
#ifndef FR_PIPELINE_TABLES_H
#define FR_PIPELINE_TABLES_H

#include "iceberg/iceberg.h"
#include "parquet/parquet.h"
#include "process/process.h"

#include <stdint.h>

#define FR_NS "wiki"

/* Snapshot summary keys the processor adds beside the epoch marker:
 * the watermark (Unix µs, INT64_MIN when none) after the epoch, and the
 * number of log records the epoch consumed. */
#define FR_SUMMARY_WATERMARK "freshet.watermark-us"
#define FR_SUMMARY_RECORDS "freshet.epoch-records"
/* With enrichment: the frontier up to which gold_top_topics is settled
 * (Unix µs; estage.h). */
#define FR_SUMMARY_TOPICS "freshet.topics-frontier-us"
/* With enrichment: the fingerprint (CRC-32C, 8 hex digits) of the stage's
 * state file the epoch was committed with (estage.h, ADR 0064). */
#define FR_SUMMARY_ENRICH_STATE "freshet.enrich-state"

enum fr_tbl {
    FR_TBL_BRONZE = 0,
    FR_TBL_SILVER,
    FR_TBL_GOLD_EPM,
    FR_TBL_GOLD_TOP,
    FR_TBL_LATE,
    FR_TBL_DLQ,
    FR_TBL_COUNT, /* the six tables `freshet process` writes */
    /* Written only by `freshet dlq replay` (docs/adr/0008-dlq-replay.md):
     * one row per dead letter that a replay landed in bronze. */
    FR_TBL_DLQ_REPLAYS = FR_TBL_COUNT,
    FR_TBL_ALL, /* the tables of the core pipeline (what verify checks) */
    /* Written by the enrichment stage (docs/ENRICH.md) when enrich.enabled:
     * one row per enriched edit with its lookup's answer (or, from a replay,
     * replay_id set); the top Wikidata items per 10-minute window; failed
     * lookups. */
    FR_TBL_SILVER_TOPICS = FR_TBL_ALL,
    FR_TBL_GOLD_TOPICS,
    FR_TBL_DLQ_LOOKUPS,
    FR_TBL_EVERY /* every table declared here */
};

/* The table's name in namespace `wiki`. */
const char *fr_tbl_name(enum fr_tbl tbl);
/* Its Iceberg definition (schema, unpartitioned). */
const struct fr_ice_table_def *fr_tbl_def(enum fr_tbl tbl);
/* Its Parquet schema (same columns and field ids). */
const struct fr_pq_schema *fr_tbl_pq_schema(enum fr_tbl tbl);

/* Create any of the six tables that does not exist yet. */
int fr_tbl_ensure(struct fr_ice_catalog *cat);
struct fr_ice_rest;
/* The same through a REST catalog: namespace wiki and table tbl created
 * when absent (a racing creator's 409 is fine); an existing table lacking
 * declared optional columns gets them by schema evolution
 * (fr_ice_rest_evolve, ADR 0059). */
int fr_tbl_ensure_rest(struct fr_ice_rest *rest, enum fr_tbl tbl);
/* Create table tbl (any of FR_TBL_EVERY) when it does not exist yet. */
int fr_tbl_ensure_one(struct fr_ice_catalog *cat, enum fr_tbl tbl);

/* A table's data file being written for one epoch. */
struct fr_lake;

struct fr_tw {
    enum fr_tbl tbl;
    size_t row_group_bytes;
    char path[4096];         /* local path of the data file */
    char rel[512];           /* path relative to the table location */
    struct fr_pq_writer *pq; /* NULL until the first row */
    struct fr_pq_file_stats stats;
    uint64_t rows;
    /* Set before the first row: a large batch of rows is coming (a
     * catching-up epoch), worth a compression thread for silver too.
     * Bronze, which carries the raw JSON, always has one. */
    int large;
    /* Where the data file goes (NULL: the local warehouse); set before the
     * first row. */
    const struct fr_lake *lake;
    /* fr_tw_init: the name is the epoch's, and on a remote lake gets a
     * suffix of its own per attempt when the file is opened (tw_open) */
    int per_epoch;
    /* Set before the first row: other processes may write this pipeline's
     * epochs too (the scale-out shards and finalizer, docs/SCALEOUT.md,
     * "Fencing"), so the per-epoch name gets its suffix on a local lake as
     * well: a fenced owner's file never replaces the one the winner
     * committed under the same name. */
    int many_owners;
    /* filled by fr_tw_finish for the commit */
    struct fr_ice_data_file file;
    struct fr_ice_col_metrics metrics[32];
    uint8_t bounds[8192];
    int finished;
};

/* Prepare tw for table tbl of epoch (nothing is opened until a row comes). */
void fr_tw_init(struct fr_tw *tw, enum fr_tbl tbl, const char *table_dir, const char *pipeline,
                int64_t epoch, size_t row_group_bytes);
/* Prepare tw for table tbl with the data file rel (relative to the table
 * location, e.g. "data/freshet-rebuild-1791207722301-00000.parquet"): the
 * writers of rebuild and dlq replay, whose files are not per epoch. */
void fr_tw_init_named(struct fr_tw *tw, enum fr_tbl tbl, const char *table_dir, const char *rel,
                      size_t row_group_bytes);
/* Rows. Each returns FR_OK or a Parquet error (with fr_pq_errmsg()). */
int fr_tw_bronze(struct fr_tw *tw, const struct fr_row *row, const char *raw, size_t raw_len);
int fr_tw_silver(struct fr_tw *tw, const struct fr_row *row);
/* Warm the caches for fr_tw_silver(tw, row) a row later (the dictionary
 * slots its values will probe): a hint, no effect on the output. */
void fr_tw_silver_prefetch(const struct fr_tw *tw, const struct fr_row *row);
int fr_tw_late(struct fr_tw *tw, const struct fr_row *row, int64_t watermark_us,
               int64_t lateness_us);
int fr_tw_dlq(struct fr_tw *tw, const struct fr_proc_pos *pos, const char *reason,
              const char *detail, const char *raw, size_t raw_len);
int fr_tw_gold_epm(struct fr_tw *tw, const struct fr_win_row *row);
int fr_tw_gold_top(struct fr_tw *tw, const struct fr_top_row *row);
/* dlq_replays: the dead letter at row's log position, first rejected for
 * reason, landed by replay replay_id at replayed_at_us with outcome
 * ("silver", "late" or "duplicate"). */
int fr_tw_dlq_replay(struct fr_tw *tw, const struct fr_row *row, const char *reason,
                     const char *replay_id, int64_t replayed_at_us, const char *outcome);
/* An enriched edit: what silver_topics and dlq_lookups say about it.
 * Strings are NUL-terminated and owned by the caller. */
struct fr_topic_edit {
    char meta_id[40];
    int64_t event_us;
    int32_t partition;
    int64_t offset;
    const char *wiki, *server_name, *title;
};
/* A resolved edit's label (issue 33): text and lang, or why there is none
 * ("no_label", "missing", "off"); NULL members are written null. */
struct fr_topic_label {
    const char *text, *lang, *why;
};
/* silver_topics: e with outcome ("resolved", "no_item"), why (NULL or
 * "no_prop", "missing", "invalid"), item (NULL or "Q42"), label (NULL:
 * all three label columns null), replay_id (NULL from the stream). */
int fr_tw_topic(struct fr_tw *tw, const struct fr_topic_edit *e, const char *outcome,
                const char *why, const char *item, const struct fr_topic_label *label,
                const char *replay_id);
int fr_tw_gold_topics(struct fr_tw *tw, const struct fr_topic_row *row);
/* A gold_top_topics row as read back (a replay copying a table). */
int fr_tw_gold_topics_raw(struct fr_tw *tw, int64_t start_us, int64_t end_us, int32_t rank,
                          const char *item, size_t item_len, int64_t edits, int32_t wikis,
                          const char *top, size_t top_len, const char *label, size_t label_len);
/* dlq_lookups: e's lookup failed for reason ("lookup_failed", "backlog")
 * with detail after attempts requests, at failed_at_us. */
int fr_tw_dlq_lookup(struct fr_tw *tw, const struct fr_topic_edit *e, const char *reason,
                     const char *detail, int attempts, int64_t failed_at_us);
/* Close the file (temporary name, fsync, rename) and describe it for
 * Iceberg in tw->file. A writer with no rows finishes with no file
 * (tw->rows == 0). */
int fr_tw_finish(struct fr_tw *tw);
/* Abort a writer that will not be committed (removes its temporary file).
 * Accepts a finished or unused writer. */
void fr_tw_abort(struct fr_tw *tw);

#endif
