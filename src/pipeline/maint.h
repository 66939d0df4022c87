/*
 * maint.h — the lake maintenance commands that rewrite what `freshet
 * process` wrote: `freshet rebuild` (silver, late_arrivals and gold
 * recomputed from bronze under the current policy, docs/REBUILD.md) and
 * `freshet dlq list | replay` (dead letters by reason; replay of the ones
 * the current rules accept, exactly once, docs/DLQ.md and
 * docs/adr/0008-dlq-replay.md).
 *
 * Both take the pipeline lock (fr_ck_lock) for everything that writes, so
 * they never run beside the processor, each other, or themselves; `dlq
 * list` only reads and runs anywhere. Each runs on the calling thread.
 *
 * Both read the lake's data files through src/pipeline/lake.h, so a
 * warehouse in an S3 bucket (lake.warehouse) works as a local one, and
 * with a REST catalog (lake.catalog_uri) they load and commit the tables
 * through it (fr_maint_commit_rest).
 *
 * The second half of this header is private to rebuild.c and dlq.c: the
 * log-ordered scan both replay tables through (maint.c; their progress
 * meter is core/progress.h), and the recovery of a dlq replay that crashed (dlq.c), which
 * rebuild runs too.
 */
#ifndef FR_PIPELINE_MAINT_H
#define FR_PIPELINE_MAINT_H

#include "conf/conf.h"
#include "core/buf.h"
#include "iceberg/iceberg.h"
#include "pipeline/checkpoint.h"
#include "pipeline/lake.h"
#include "pipeline/tables.h"

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

/* The commands (argv[0] is the command name; exit status 0 / 1 / 2). */
int fr_cmd_rebuild(struct fr_conf *conf, int argc, char **argv);
int fr_cmd_dlq(struct fr_conf *conf, int argc, char **argv);

/* ------------------------------------------------------------------------ */
/* Private to rebuild.c and dlq.c                                            */
/* ------------------------------------------------------------------------ */

/* Summary keys of the snapshots rebuild and dlq replay commit. Neither
 * carries the epoch marker (freshet.pipeline-id / freshet.epoch): they are
 * not epochs, and an epoch number on them would make the processor take a
 * later epoch for one already committed. */
/* rebuild: its id, the bronze cut (epoch) it covers, its lateness, and
 * how many bronze rows the current gate rejected. */
#define FR_SUMMARY_REBUILD "freshet.rebuild"
#define FR_SUMMARY_REBUILD_EPOCH "freshet.rebuild-epoch"
#define FR_SUMMARY_REBUILD_LATENESS "freshet.rebuild-lateness-s"
#define FR_SUMMARY_REBUILD_REJECTED "freshet.rebuild-rejected"
/* dlq replay: its id and how many dead letters it landed. */
#define FR_SUMMARY_DLQ_REPLAY "freshet.dlq-replay"
#define FR_SUMMARY_DLQ_REPLAY_RECORDS "freshet.dlq-replay-records"

/*
 * One round of table maintenance between epochs (after the checkpoint):
 * compaction of each wanted table's small data files in size tiers, then
 * expiry of its snapshots older than older_than_ms (Unix ms) beyond
 * maintenance.retain_last, then, when round is not NULL and half of
 * maintenance.orphans_after_s has passed since round->orphans_ms (wall
 * ms, updated), removal of files no retained version reaches that are
 * older than maintenance.orphans_after_s. A round starts no new step after
 * process.maintain_budget_ms, except its first step (at least one bin of
 * a compaction, or an expiry), so that every round makes progress; round->
 * next_table and next_expire remember where the next one goes on: the table
 * it stopped before, or the expiry of the table whose compaction used the
 * budget up (without round every round starts at the first table). On every lake: SQLite or REST
 * catalog, local or S3 warehouse (fr_lake_compact). Run by the one
 * process that maintains the tables (the processor; in the scale-out mode
 * the finalizer). Failures are logged and left to the next round: the
 * epoch is already safe.
 */
struct fr_maint_round {
    int64_t orphans_ms; /* wall ms of the last orphan removal */
    int next_table;     /* where a round cut short by its budget goes on */
    int next_expire;    /* 1: with next_table's expiry (its compaction was done) */
};
void fr_maint_tables(struct fr_lake *lake, const struct fr_conf *conf,
                     const uint8_t want[FR_TBL_EVERY], int64_t older_than_ms,
                     struct fr_maint_round *round);
/* The operators' options under the configuration's policy (lateness and
 * the gate's limits), as the processor, its shards, rebuild and dlq replay
 * all use them. */
struct fr_proc_opts;
void fr_maint_proc_opts(const struct fr_conf *conf, struct fr_proc_opts *opts);
/* The checkpoint directory of pipeline (created): <process.checkpoint_dir>/
 * <pipeline> when that is set, else <general.data_dir>/process/<pipeline>. */
int fr_maint_ck_dir(const struct fr_conf *conf, const char *pipeline, char *out, size_t outlen);
/* Take the pipeline lock for command cmd ("rebuild", "dlq replay"):
 * creates the checkpoint directory (written to dir), returns the lock's
 * descriptor, or -1 after printing why (another holder named by pid). */
int fr_maint_lock(struct fr_conf *conf, const char *cmd, char *dir, size_t dirlen);

/* A group's lake (docs/SCALEOUT.md, ADR 0045): a snapshot of the table
 * carries the epoch marker of a scale-out pipeline of general.pipeline_id,
 * a shard "<id>-p<N>" or the finalizer "<id>-gold". rebuild and dlq replay
 * refuse such a lake, at their start (fr_maint_refuse_group) and inside
 * their commit's compare-and-swap (fr_maint_group_guard as the
 * transaction's guard), so they never write beside a shard or the
 * finalizer, whichever machine those run on. */
struct fr_maint_group {
    const char *pipeline_id; /* general.pipeline_id */
    char found[64];          /* the first scale-out pipeline seen ("" none) */
};
/* 1 (g->found set) when table carries a scale-out marker, else 0. */
int fr_maint_group_marker(const struct fr_ice_table *table, struct fr_maint_group *g);
/* fr_ice_guard_fn over a struct fr_maint_group: FR_EUNSUPPORTED when the
 * table carries a scale-out marker. */
int fr_maint_group_guard(const struct fr_ice_table *base, void *arg);
/* 1 (g->found set) when bronze or gold_edits_per_minute carries a
 * scale-out marker, 0 not, -1 error (logged). */
int fr_maint_is_group(const struct fr_lake *lake, struct fr_maint_group *g);
/* At the start of command cmd: 0 when the lake is not a group's, -1 after
 * printing why cmd refuses it and what to do instead (or a catalog error). */
int fr_maint_refuse_group(struct fr_conf *conf, const struct fr_lake *lake, const char *cmd);
/* The message of that refusal, for a commit the guard stopped. */
void fr_maint_group_refused(const char *cmd, const struct fr_maint_group *g);

/* The value of key in snapshot s's summary, or NULL. */
const char *fr_maint_summary(const struct fr_ice_snapshot *s, const char *key);
/* The snapshot of table carrying pipeline's marker for epoch (its
 * freshet.pipeline-id and freshet.epoch), NULL when none; it lives as long
 * as table. */
const struct fr_ice_snapshot *fr_maint_marker(const struct fr_ice_table *table,
                                              const char *pipeline, int64_t epoch);
/* A consumer group's rebuild (rebuild_group.c) commits each shard's next
 * epoch (an empty fence) and the finalizer's with freshet.rebuild, and a
 * group's dlq replay each shard's next epoch with freshet.dlq-replay: a
 * member whose checkpoint is older than such an epoch must not replay
 * past it with its old state. 1 when a retained snapshot of table carries
 * pipeline's marker for an epoch after `after` and one of those keys (the
 * newest: *epoch, and in id "rebuild <id>" or "dlq replay <id>"), else 0. */
int fr_maint_rebuilt_after(const struct fr_ice_table *table, const char *pipeline, int64_t after,
                           char *id, size_t idlen, int64_t *epoch);
/* A group's rebuild or replay committed pipeline's epoch with key = value
 * (its id): FR_OK when the lake's marker of that epoch in table tbl is that
 * one, FR_EEXIST when another owner's landed first (through REST a
 * member's own empty epoch with the same range passes the epoch commit's
 * check), or an error. */
int fr_maint_marker_is(const struct fr_lake *lake, enum fr_tbl tbl, const char *pipeline,
                       int64_t epoch, const char *key, const char *value);
/* The stop-the-group protocol's first check (ADR 0066, 0067): 0 when the
 * newest commit of a group's member (newest, at newest_ms) is at least
 * quiet_s old, else -1 after saying (under who) to stop the group and run
 * `freshet cmd` again (see doc). */
int fr_maint_group_quiet(const char *who, const char *cmd, const char *doc, const char *newest,
                         int64_t newest_ms, int64_t quiet_s);
/* The message of a member's refusal (logged under who). */
void fr_maint_rebuilt_refused(const char *who, const char *pipeline, int64_t epoch,
                              const char *id, int64_t ck_epoch, const char *dir);
/* 1 when a retained snapshot of table tbl carries key = value, 0 when
 * none does (or the table does not exist), or an error. */
int fr_maint_has_marker(const struct fr_lake *lake, enum fr_tbl tbl, const char *key,
                        const char *value);

/* Remove the files under table tbl's data/ directory whose names start
 * with prefix (a crashed attempt's outputs and their temporary names),
 * except any the table's current snapshot lists (a guard against a
 * marker that expiry removed). Adds the count to *removed. */
int fr_maint_remove_prefixed(const struct fr_lake *lake, enum fr_tbl tbl, const char *prefix,
                             unsigned *removed);

/*
 * The commit of a rebuild (overwrite 1: every table's live files replaced)
 * or a dlq replay (overwrite 0: appends) through the lake's REST catalog
 * (maint_rest.c): each table staged against the catalog's current version,
 * all in one POST /transactions/commit, info's summary keys (the command's
 * id, never an epoch marker) on every snapshot. A 409 (another writer moved
 * a table) stages again, a few times. A 5xx or a lost connection leaves the
 * outcome unknown: FR_EUNKNOWN, and the caller keeps its files and its
 * intent, so that its next run looks for its id (fr_maint_has_marker) and
 * finishes or undoes it, as after a crash. Logged under who.
 */
/* The pipeline's tables (and dlq_replays when with_replays) created where
 * absent, in the lake's catalog: SQLite (fr_tbl_ensure) or REST
 * (fr_tbl_ensure_rest). */
int fr_maint_ensure(const struct fr_lake *lake, int with_replays);
int fr_maint_commit_rest(const struct fr_lake *lake, const struct fr_lake_append *apps,
                         uint32_t napps, int overwrite, const struct fr_ice_commit_info *info,
                         const char *who);
/* The same with apps[a] an overwrite when bit a of overwrite_mask is set,
 * else an append, and at most attempts stagings (1: a table that moved
 * meanwhile fails it with FR_EREQUIREMENT instead of staging again, for an
 * overwrite computed from the table as it was: the lookup replay's
 * gold_top_topics). */
int fr_maint_commit_rest_mixed(const struct fr_lake *lake, const struct fr_lake_append *apps,
                               uint32_t napps, uint32_t overwrite_mask,
                               const struct fr_ice_commit_info *info, const char *who,
                               int attempts);

/* Decode standard base64 (dlq.raw_base64) into out (appended). FR_EJSON
 * for a malformed text, FR_ETOOBIG past out's cap. */
int fr_maint_unbase64(const char *s, size_t len, struct fr_buf *out);

/* Progress meters: core/progress.h. */

/*
 * Log-ordered scan. Reads the rows of a table holding log records (bronze
 * or dlq: log_partition, log_offset, ingest_time, the raw bytes) from
 * its live files and returns them in log order: ascending (ingest_time,
 * log_partition, log_offset). ingest_time is the log's append time, never
 * decreasing within a partition, so each partition comes in offset order,
 * and partitions interleave in append-time order, independent of where
 * the processor cut epochs (docs/SEMANTICS.md §2).
 *
 * Memory is bounded by opts.memory_bytes of buffered rows: files are read
 * in order of their lower ingest_time bound, and a buffered row is handed
 * out as soon as no unread row group can sort before it (per-file and
 * per-row-group bounds), so the processor's per-epoch files, which do not
 * overlap, stream through one at a time. When overlapping files (a
 * compaction's output, a replay's file) need more than the budget, the
 * buffer is sorted and spilled to a run file under opts.spill_dir and the
 * runs are merged at the end (at most 32 at a time).
 */
struct fr_lscan_row {
    int32_t partition;
    int64_t offset;
    int64_t ingest_us;
    const char *raw; /* the record's bytes, or their base64 text when b64 */
    uint32_t raw_len;
    int b64;
    const char *tag; /* dlq: the reason; bronze: "" */
    uint32_t tag_len;
    const char *detail; /* dlq: the gate's detail; bronze: "" */
    uint32_t detail_len;
};

struct fr_lake;
struct fr_lscan_opts {
    enum fr_tbl tbl;       /* FR_TBL_BRONZE or FR_TBL_DLQ */
    size_t memory_bytes;   /* buffered rows before a spill; >= 1 MiB */
    const char *spill_dir; /* created at the first spill; emptied and removed by free */
    const struct fr_lake *lake; /* where the files are read from (NULL: local paths) */
};

struct fr_lscan_stats {
    uint64_t rows;
    uint32_t files;
    uint32_t spilled_runs;
    size_t peak_bytes;
};

struct fr_lscan;

/* Start a scan over the files of list (copied: list may be freed). */
int fr_lscan_open(const struct fr_ice_file_list *list, const struct fr_lscan_opts *opts,
                  struct fr_lscan **out);
/* The next row: 1 and *row (valid until the next call), 0 at the end, or
 * an error (fr_pq_errmsg() says which file). */
int fr_lscan_next(struct fr_lscan *ls, struct fr_lscan_row *row);
void fr_lscan_stats(const struct fr_lscan *ls, struct fr_lscan_stats *stats);
/* Accepts NULL. Removes the spill files. */
void fr_lscan_free(struct fr_lscan *ls);

/*
 * Finish or undo a dlq replay that crashed (docs/DLQ.md, "Crashes"): with
 * no replay in progress, nothing. If the crashed replay's commit never
 * landed, its data files are removed; if it landed, its checkpoint is
 * installed. for_rebuild: the caller recomputes the operator state itself,
 * so a landed replay is only forgotten. Returns FR_OK, or FR_ESTATE after
 * printing why when the checkpoint moved on without the replay's state
 * (a processor ran in between: `freshet rebuild` repairs it).
 */
int fr_dlq_recover(struct fr_conf *conf, const char *dir, const struct fr_lake *lake,
                   int for_rebuild);

/*
 * `freshet dlq replay --lookups` (dlq_lookup.c): the failed lookups of
 * wiki.dlq_lookups looked up again and landed exactly once in
 * silver_topics, with the gold_top_topics windows they change recomputed,
 * in one transaction. The caller holds the pipeline lock (dir) and has
 * cat open. Prints its report; FR_OK or an error (logged).
 */
int fr_dlq_replay_lookups(struct fr_conf *conf, const char *dir, const struct fr_lake *lake,
                          int dry_run);
/* `freshet dlq list`'s part for wiki.dlq_lookups (text): counts by reason,
 * how many were replayed, samples. Prints nothing when the table is empty
 * or absent. */
int fr_dlq_list_lookups(struct fr_conf *conf, const struct fr_lake *lake, FILE *out);

#endif
