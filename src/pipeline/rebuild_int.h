/*
 * rebuild_int.h — private to rebuild.c (`freshet rebuild`) and
 * rebuild_group.c (the same command on a consumer group's lake): the
 * rebuild's state, its output writers, and the group's part.
 */
#ifndef FR_PIPELINE_REBUILD_INT_H
#define FR_PIPELINE_REBUILD_INT_H

#include "pipeline/maint.h"

#include "core/progress.h"
#include "pipeline/checkpoint.h"
#include "pipeline/pipeline.h"
#include "process/process.h"

#include <stdint.h>

#define RB_MAX_FILES 4096
#define RB_DEFAULT_MB 256
#define RB_DEFAULT_FILE_ROWS 1000000

enum { RB_SILVER, RB_LATE, RB_EPM, RB_TOP, RB_NOUT };
extern const enum fr_tbl rb_tbl[RB_NOUT];

/* One output table: files of at most file_rows rows each. */
struct rb_out {
    char table_dir[4096];
    struct fr_tw *tw[RB_MAX_FILES];
    uint32_t n;
    uint64_t rows;
    int64_t old_rows;
};

struct rb {
    struct fr_conf *conf;
    char dir[4096];
    char id[32];
    const char *crash_after;
    size_t memory_bytes;
    uint64_t file_rows;
    struct fr_lake lake;        /* the catalog and its warehouse (local or S3) */
    struct fr_ice_catalog *cat; /* lake.cat */
    struct fr_proc *proc;
    struct fr_gate *gate;
    struct rb_out out[RB_NOUT];
    struct fr_ck ck;
    int64_t cut_epoch;
    int64_t bronze_snapshot;
    uint64_t bronze_rows, duplicates, rejected, dlq_rejected, dlq_now_valid;
    uint64_t rejected_by[FR_GATE_REASON_COUNT];
    uint64_t done;
    struct fr_lscan_stats scan; /* of bronze */
    int committed;              /* the overwrite landed: its files are the tables' now */
    int unknown;                /* a REST commit's outcome is unknown: keep the files */
    struct fr_progress pg;
    struct rb_group *group;     /* a consumer group's lake (rebuild_group.c), else NULL */
};

/* The writer the next row of output table which goes to. */
int rb_tw(struct rb *rb, int which, struct fr_tw **tw);
/* Settled gold rows (fr_win_emit_fn, fr_top_emit_fn over a struct rb):
 * into gold_edits_per_minute and gold_top_pages. */
int rb_minute(void *arg, const struct fr_win_row *row);
int rb_top(void *arg, const struct fr_top_row *row);

/* ------------------------------------------------------------- the group */

/* An idle epoch of a shard, as its marker tells: it raised the watermark
 * to wm before the partition's offset at. */
struct rb_raise {
    int64_t epoch, at, wm;
};

/* One shard of the group ("<id>-p<N>"), as bronze's markers tell. */
struct rb_shard {
    int present;          /* bronze carries an epoch of it */
    int64_t epoch;        /* its newest epoch: the cut (after FENCE: the fence) */
    int64_t end;          /* the log offset after that epoch's range */
    int64_t at_ms;        /* when that epoch committed */
    int64_t idle_ms;      /* its idle raise's wall time (ms), -1: its last epoch had records */
    int fenced;           /* that epoch is a rebuild's fence */
    struct fr_proc *proc; /* its partition's operators under the current policy */
    int lock_fd;          /* its pipeline lock on this machine, -1 none */
    struct rb_raise *raises; /* its idle epochs bronze still holds, in epoch order */
    uint32_t nraises, next_raise;
};

struct rb_group {
    uint32_t nparts; /* partitions the shards and the finalizer's ranges name */
    struct rb_shard shard[FR_CK_MAX_PARTS];
    char final_pipe[FR_PIPE_ID_MAX];
    int64_t gold_epoch;         /* the finalizer's newest epoch, -1: none */
    struct fr_ck_range consumed; /* the shard epochs gold had consumed: [0, end[p]) */
    int final_lock_fd;
    struct fr_win *win; /* gold_edits_per_minute, as the finalizer computes it */
    struct fr_top *top; /* gold_top_pages */
    int64_t wm[FR_CK_MAX_PARTS];
    int64_t frontier;
    int64_t quiet_s;
    uint64_t silver_rows;
};

/* A group's part of a rebuild (rb->group); freed by rb_group_free. */
struct rb_group *rb_group_new(int64_t quiet_s);
/* CHECK: the shards and the finalizer, their cut, the group stopped (no
 * commit for quiet_s, no member's lock held here), enrichment off; the
 * operators of every shard. -1 after printing why not. */
int rb_group_open(struct rb *rb, const struct fr_ice_table *bronze);
/* The operators of a bronze or dlq row's partition, NULL (logged) when no
 * shard of it committed. */
struct fr_proc *rb_group_proc(struct rb *rb, int32_t partition);
/* Before a bronze row of partition at offset: the shard's idle epochs
 * recorded before it raise its watermark, as they did when it ran. */
int rb_group_before_row(struct rb *rb, int32_t partition, int64_t offset);
/* A silver row of the rebuild: into gold's operators. */
int rb_group_silver(struct rb *rb, const struct fr_row *row);
/* After the scan: idle raises, the frontier, gold's settled windows. */
int rb_group_settle(struct rb *rb);
/* FENCE: an empty epoch of every shard (marker and freshet.rebuild) after
 * its cut, so that no shard can commit on top of the rebuild. */
int rb_group_fence(struct rb *rb);
/* The finalizer's marker for the overwrite of gold_edits_per_minute. */
void rb_group_gold_marker(struct rb *rb, char *offsets, size_t offlen, int64_t *epoch);
/* CHECKPOINT: every shard's and the finalizer's, here and in the bucket. */
int rb_group_checkpoints(struct rb *rb);
void rb_group_report(const struct rb *rb);
void rb_group_free(struct rb *rb);

#endif
