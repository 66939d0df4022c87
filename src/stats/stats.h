/*
 * stats.h — freshet's metrics across processes (docs/adr/0009-stats-files.md).
 *
 * Each stage process (ingest, process) owns one small memory-mapped stats
 * file, <data>/stats/<stage>.stats, laid out from the metric table in
 * stats_table.h (byte table and seqlock protocol at the top of stats.c).
 * The stage updates its figures in private memory and publishes them into
 * the file under a seqlock; `freshet serve` reads the files, so any stage
 * can die or restart without taking the others' metrics or the dashboard
 * down. The processor also writes its provisional view of the open windows
 * to <data>/stats/view.json (view.c).
 *
 * Writer side (one handle per stage process):
 *   fr_stats_open(data_dir, FR_STATS_INGEST, &st);
 *   fr_stats_add(st, FR_STATS_INGEST_EVENTS, 0, 1);      any thread
 *   fr_stats_observe(st, FR_STATS_INGEST_FSYNC, 0.004);   any thread
 *   fr_stats_publish(st);                                 any thread, often
 *   fr_stats_close(st);
 * Every writer function accepts a NULL handle and then does nothing, so a
 * stage never branches on whether it publishes. A handle whose file cannot
 * be created (read-only disk, another live writer) keeps working in memory
 * and says so once on stderr: observability never stops the pipeline.
 *
 * Reader side: fr_stats_read(data_dir, stage, &snap) takes a consistent
 * snapshot (all values from one publish) without blocking the writer.
 *
 * The scale-out mode (docs/SCALEOUT.md, docs/adr/0042): every shard and the
 * finalizer own a file of their own (fr_stats_open_member), with the
 * process stage's layout plus who they are: role, partition, instance
 * (hostname:pid of the `process --group` instance running them). Readers
 * take them as one group (fr_stats_group_read) and render group totals
 * under the existing names, plus per-member series (group.c).
 *
 * Threads: all writer functions are thread-safe on one handle (counters and
 * gauges are atomics; histograms and publish take the handle's mutex).
 * Readers are independent of writers and of each other.
 */
#ifndef FR_STATS_H
#define FR_STATS_H

#include "stats/stats_table.h"

#include <stddef.h>
#include <stdint.h>

struct fr_buf;
struct fr_proc;

enum fr_stats_stage { FR_STATS_INGEST = 0, FR_STATS_PROCESS, FR_STATS_SERVE, FR_STATS_STAGES };
enum fr_stats_type { FR_STATS_COUNTER = 1, FR_STATS_GAUGE, FR_STATS_HISTOGRAM };
/* Who writes a process-stage file: the single processor (process.stats),
 * a shard (process-p<N>.stats) or the finalizer (finalize.stats). */
enum fr_stats_role { FR_STATS_ROLE_SINGLE = 0, FR_STATS_ROLE_SHARD, FR_STATS_ROLE_FINALIZER };

/* Bytes of the instance identity in a file's header, NUL included. */
#define FR_STATS_INSTANCE_MAX 40

/* A member of the scale-out mode. instance: "hostname:pid" of the group
 * instance running it; NULL or "": this process's own (the caller keeps
 * the string; it is copied, truncated to FR_STATS_INSTANCE_MAX - 1). */
struct fr_stats_member {
    enum fr_stats_role role;
    int partition; /* a shard's; ignored for the finalizer */
    const char *instance;
};

/* Sizes of the label and bucket sets. */
enum {
#define FR_STATS_NLAB_ENUM(set, name, n) FR_STATS_NLAB_##set = (n),
    FR_STATS_LABEL_SETS(FR_STATS_NLAB_ENUM)
#undef FR_STATS_NLAB_ENUM
#define FR_STATS_NBUCK_ENUM(set, n) FR_STATS_NBUCK_##set = (n),
        FR_STATS_BUCKET_SETS(FR_STATS_NBUCK_ENUM)
#undef FR_STATS_NBUCK_ENUM
};

/* One id per metric, in table order. */
enum fr_stats_id {
#define FR_STATS_ID_ENUM(id, stage, name, type, unit, labels, buckets, help) FR_STATS_##id,
    FR_STATS_TABLE(FR_STATS_ID_ENUM)
#undef FR_STATS_ID_ENUM
        FR_STATS_COUNT
};

/* Slots (8 bytes each) a metric takes: one per label value for counters and
 * gauges; for a histogram one per bucket, one for +Inf, one for the sum. */
#define FR_STATS_WIDTH_COUNTER(labels, buckets) FR_STATS_NLAB_##labels
#define FR_STATS_WIDTH_GAUGE(labels, buckets) FR_STATS_NLAB_##labels
#define FR_STATS_WIDTH_HISTOGRAM(labels, buckets) (FR_STATS_NBUCK_##buckets + 2)

/* The first slot of each metric, computed at compile time: each metric's
 * _LAST constant makes the next one start right after it. */
enum fr_stats_slot {
#define FR_STATS_SLOT_ENUM(id, stage, name, type, unit, labels, buckets, help)                     \
    FR_STATS_SLOT_##id,                                                                            \
        FR_STATS_SLOT_##id##_LAST =                                                                \
            FR_STATS_SLOT_##id + FR_STATS_WIDTH_##type(labels, buckets) - 1,
    FR_STATS_TABLE(FR_STATS_SLOT_ENUM)
#undef FR_STATS_SLOT_ENUM
        FR_STATS_NSLOTS
};

/* What the table says about one metric. */
struct fr_stats_meta {
    enum fr_stats_id id;
    enum fr_stats_stage stage;
    const char *name; /* without the freshet_ prefix */
    enum fr_stats_type type;
    const char *unit;  /* "seconds", "bytes" or "" */
    const char *label; /* label name, "" when unlabelled */
    unsigned nlabels;  /* label values (1 when unlabelled) */
    unsigned nbuckets; /* histogram bounds, +Inf excluded */
    const double *bounds;
    const char *help;
    unsigned slot;  /* first slot */
    unsigned width; /* slots */
};

const struct fr_stats_meta *fr_stats_meta(enum fr_stats_id id);
/* The i-th value of the metric's label set ("oversize", "silver", "ingest"). */
const char *fr_stats_label_value(const struct fr_stats_meta *meta, unsigned i);
/* "ingest", "process", "serve". */
const char *fr_stats_stage_name(enum fr_stats_stage stage);
/* Checksum of the table's layout (names, types, labels, buckets), stored in
 * every file so that a reader never misreads a file from another build. */
uint32_t fr_stats_layout_crc(void);

/* ------------------------------------------------------------ writing -- */

struct fr_stats;

/* Create <data_dir>/stats/<stage>.stats (replacing a dead writer's file and
 * carrying its counters over, so counters stay monotonic across restarts)
 * and return a handle. FR_ENOMEM only; a file that cannot be set up gives
 * an in-memory handle and one warning. FR_EINVAL for FR_STATS_SERVE. */
int fr_stats_open(const char *data_dir, enum fr_stats_stage stage, struct fr_stats **out);
/* Create the file of a member of the scale-out mode (role SHARD with its
 * partition, or FINALIZER): <data>/stats/process-p<N>.stats or
 * finalize.stats, with the process stage's metrics; otherwise as
 * fr_stats_open. FR_EINVAL for role SINGLE or a shard without a partition. */
int fr_stats_open_member(const char *data_dir, const struct fr_stats_member *who,
                         struct fr_stats **out);
/* Path of a member's file (role SINGLE: process.stats). */
int fr_stats_member_path(const char *data_dir, const struct fr_stats_member *who, char *out,
                         size_t outlen);
/* "single", "shard", "finalizer". */
const char *fr_stats_role_name(enum fr_stats_role role);
/* "hostname:pid" of this process, cut to fit outlen (the ":pid" is kept). */
void fr_stats_default_instance(char *out, size_t outlen);
/* A handle with no file (serve's own figures, tests). */
int fr_stats_open_memory(enum fr_stats_stage stage, struct fr_stats **out);
/* Publish one last time and release. The file stays: readers see the
 * values with the stage down. Accepts NULL. */
void fr_stats_close(struct fr_stats *st);
/* 1 when the handle publishes into a file. */
int fr_stats_has_file(const struct fr_stats *st);

/* Counters: add n, or set an absolute value (for totals the stage keeps
 * itself, e.g. in its checkpoint). label is the index in the label set. */
void fr_stats_add(struct fr_stats *st, enum fr_stats_id id, unsigned label, uint64_t n);
void fr_stats_set_counter(struct fr_stats *st, enum fr_stats_id id, unsigned label, uint64_t v);
/* Gauges (NaN: no value yet; published as absent). */
void fr_stats_set(struct fr_stats *st, enum fr_stats_id id, unsigned label, double v);
double fr_stats_get(const struct fr_stats *st, enum fr_stats_id id, unsigned label);
/* Histograms: one observation. */
void fr_stats_observe(struct fr_stats *st, enum fr_stats_id id, double v);
/* Copy every value into the file under the seqlock and beat the heartbeat. */
void fr_stats_publish(struct fr_stats *st);
/* Take the processor's provisional view (fr_proc_view) and write it to
 * <data>/stats/view.json (fr_stats_view_json below; replaced atomically by
 * rename, not fsynced: it is derived and rewritten every epoch; not written
 * by a handle without a file). *max_event_us (may be NULL) receives the
 * largest event time the processor has seen, FR_PROC_WM_NONE when none. */
int fr_stats_view_publish(struct fr_stats *st, struct fr_proc *proc, int64_t epoch,
                          int64_t *max_event_us);

/* The finalizer's provisional view (the scale-out mode, where shards write
 * none: their windows are partial): its open windows (fr_win_view,
 * fr_win_top_view) with watermark_us (gold's frontier) and max_event_us,
 * written to view.json as fr_stats_view_publish does. The finalizer's
 * thread only. */
struct fr_win;
struct fr_top;
int fr_stats_view_publish_windows(struct fr_stats *st, const struct fr_win *win, struct fr_top *top,
                                  int64_t watermark_us, int64_t max_event_us, int64_t epoch);

/* ------------------------------------------------------------ reading -- */

/* Heartbeats older than this mark a live process as not up. */
#define FR_STATS_STALE_MS 30000

struct fr_stats_snap {
    enum fr_stats_stage stage;
    int present;          /* a file (or handle) was read */
    int alive;            /* a live process holds the file's lock */
    int torn;             /* the writer died mid-publish: values may mix two publishes */
    int64_t pid;          /* of the writer (the last one, when it died) */
    int64_t started_ms;   /* Unix ms */
    int64_t heartbeat_ms; /* Unix ms of the newest publish */
    uint64_t publishes;   /* publish count of this file */
    int64_t read_mono_ns; /* when the snapshot was taken (fr_mono_ns) */
    enum fr_stats_role role;
    int partition; /* a shard's, -1 otherwise */
    int closed;    /* the writer closed the file on a clean exit */
    char instance[FR_STATS_INSTANCE_MAX];
    uint64_t slots[FR_STATS_NSLOTS];
};

/* Snapshot the stage's file. FR_ENOTFOUND when there is none (snap->present
 * 0), FR_ECORRUPT for a file of another format or layout. */
int fr_stats_read(const char *data_dir, enum fr_stats_stage stage, struct fr_stats_snap *snap);
/* Snapshot the file at path, which must hold stage's layout written by
 * role (a member's file: fr_stats_member_path). As fr_stats_read. */
int fr_stats_read_file(const char *path, enum fr_stats_stage stage, enum fr_stats_role role,
                       struct fr_stats_snap *snap);
/* Snapshot a handle's own values (serve's in-memory figures). */
void fr_stats_snapshot(struct fr_stats *st, struct fr_stats_snap *snap);
/* "up": alive and a heartbeat younger than FR_STATS_STALE_MS at now_ms. */
int fr_stats_snap_up(const struct fr_stats_snap *snap, int64_t now_ms);
uint64_t fr_stats_snap_counter(const struct fr_stats_snap *snap, enum fr_stats_id id,
                               unsigned label);
double fr_stats_snap_gauge(const struct fr_stats_snap *snap, enum fr_stats_id id, unsigned label);
/* Histogram: observations (the +Inf bucket) and their sum. */
uint64_t fr_stats_snap_hist_count(const struct fr_stats_snap *snap, enum fr_stats_id id);
double fr_stats_snap_hist_sum(const struct fr_stats_snap *snap, enum fr_stats_id id);
/* Path of a stage's file: <data_dir>/stats/<stage>.stats. */
int fr_stats_path(const char *data_dir, enum fr_stats_stage stage, char *out, size_t outlen);

/* ------------------------------------------------- the group (group.c) -- */

/* Members one data directory can hold: a shard per partition the
 * checkpoint allows (64) and the finalizer. */
#define FR_STATS_MEMBERS_MAX 65

/* The members found in one data directory: shards by partition, then the
 * finalizer. Large (a snapshot each): allocate it. */
struct fr_stats_group {
    unsigned n;
    unsigned skipped; /* member files refused (another build's, damaged) */
    struct fr_stats_snap member[FR_STATS_MEMBERS_MAX];
};

/* Read every member file of <data_dir>/stats (process-p<N>.stats,
 * finalize.stats) into g. FR_OK with g->n 0 when there are none. */
int fr_stats_group_read(const char *data_dir, struct fr_stats_group *g);
/* Whether serve shows the group rather than the single processor's
 * process.stats (single: its snapshot, present or not): members exist, and
 * the single file has no live writer or some member is alive too. */
int fr_stats_group_active(const struct fr_stats_group *g, const struct fr_stats_snap *single);
/* The group's totals as one process-stage snapshot under the existing
 * names: counters and histograms summed, each gauge by the aggregate
 * fr_stats_group_agg names (docs/METRICS.md, "Consumer group"). Liveness:
 * alive when some member is up and every member that did not close its file
 * on a clean exit is up; heartbeat the oldest among those. */
void fr_stats_group_total(const struct fr_stats_group *g, int64_t now_ms,
                          struct fr_stats_snap *total);
/* How a metric is combined across members: "sum", "min" or "max". */
const char *fr_stats_group_agg(enum fr_stats_id id);
/* Per-member series (Prometheus text): freshet_process_member_up,
 * _heartbeat_age_seconds, _start_time_seconds, and every counter and gauge
 * of the process stage as freshet_process_member_<name without process_>,
 * labelled role, partition (shards) and instance. */
int fr_stats_render_members_prom(const struct fr_stats_group *g, int64_t now_ms,
                                 struct fr_buf *out);
/* JSON array of the members (docs/API.md, stages.process.members). */
int fr_stats_render_members_json(const struct fr_stats_group *g, int64_t now_ms,
                                 struct fr_buf *out);

/* ---------------------------------------------------------- rendering -- */

/* Prometheus text format 0.0.4: every metric of every present snapshot
 * (snaps indexed by stage; NULL or not present: that stage's samples are
 * left out), HELP and TYPE lines, `freshet_` prefix. FR_ETOOBIG past out's cap. */
int fr_stats_render_prom(const struct fr_stats_snap *const snaps[FR_STATS_STAGES],
                         struct fr_buf *out);
/* JSON object of one stage's metrics, keyed by name (docs/API.md). */
int fr_stats_render_json(const struct fr_stats_snap *snap, struct fr_buf *out);
/* JSON object of one stage's counter rates per second between old and now
 * (old NULL: every rate null). */
int fr_stats_render_rates(const struct fr_stats_snap *now, const struct fr_stats_snap *old,
                          struct fr_buf *out);
/* docs/METRICS.md. */
int fr_stats_markdown(struct fr_buf *out);

/* The provisional view as the JSON object of docs/API.md (/api/v1/live's
 * "view"), bounded by the view's own caps. */
struct fr_proc_view;
int fr_stats_view_json(const struct fr_proc_view *view, int64_t epoch, int64_t now_ms,
                       struct fr_buf *out);

/* ---------------------------------------------- summary (summary.c) -- */

/* Read the ingest stage's file and the process stage's: the single
 * processor's, or in the scale-out mode the group's totals (as serve
 * shows them). A file of another build or a damaged one reads as absent.
 * *group receives the members when the group is shown (the caller frees
 * it), else NULL. FR_ENOMEM only. */
int fr_stats_read_pipeline(const char *data_dir, int64_t now_ms, struct fr_stats_snap *ingest,
                           struct fr_stats_snap *process, struct fr_stats_group **group);
/* The per-second increase of counter id between old and now (label -1:
 * summed over its labels), rounded to 1/1000; NaN without two present
 * snapshots apart in time. */
double fr_stats_rate(const struct fr_stats_snap *now, const struct fr_stats_snap *old,
                     enum fr_stats_id id, int label);

/* The figures a person looks at first. Rates are NaN without an older
 * snapshot; gauges NaN when absent. stage[0] ingest, stage[1] process. */
struct fr_stats_summary {
    int64_t now_ms;
    struct {
        int present, up;
        int64_t pid, started_ms, heartbeat_ms;
    } stage[2];
    double events_rate, records_rate, silver_rate, duplicate_rate, late_rate, dlq_rate;
    uint64_t events, log_records, records, silver, duplicates, late, dlq, epochs;
    /* enrichment: edits looked up (every outcome), and resolved edits by
     * label outcome (process_enrich_labels_total, its label order) */
    uint64_t enrich_edits, labels[FR_STATS_NLAB_LABEL];
    double last_epoch;
    double freshness_s;     /* now minus the newest committed event time */
    double watermark_s;     /* Unix seconds */
    double watermark_lag_s; /* now minus the watermark */
    double offsets_behind;
    double batch_s, trigger_s, commit_s;
};

/* Summarize the two stages' snapshots (old_*: earlier snapshots for the
 * rates, may be NULL) at now_ms (Unix ms). */
void fr_stats_summarize(const struct fr_stats_snap *ingest, const struct fr_stats_snap *process,
                        const struct fr_stats_snap *old_ingest,
                        const struct fr_stats_snap *old_process, int64_t now_ms,
                        struct fr_stats_summary *sum);

#endif
