/*
 * epoch_int.h — private to epoch.c (`freshet process`: one epoch at a time,
 * the run loop) and epoch_plan.c (the planner: where the next epoch's
 * range ends, when it is cut, a shard's idle epochs). The state of a
 * running processor, shared by both; one thread (the epoch loop).
 */
#ifndef FR_PIPELINE_EPOCH_INT_H
#define FR_PIPELINE_EPOCH_INT_H

#include "pipeline/pipeline.h"

#include "core/progress.h"
#include "log/log.h"
#include "pipeline/checkpoint.h"
#include "pipeline/lake.h"
#include "pipeline/maint.h"
#include "pipeline/tables.h"

#include <signal.h>
#include <stdint.h>

#define TOPIC "recentchange"

/* SIGTERM/SIGINT seen: the epoch in flight finishes, then the loop ends. */
extern volatile sig_atomic_t ep_process_stop;

struct epoch_counts {
    uint64_t records, bronze, silver, duplicates, late, dlq, gold_epm, gold_top, gold_topics;
};

struct proc_run {
    struct fr_conf *conf;
    /* The pipeline whose epochs this process commits: general.pipeline_id,
     * or "<pipeline_id>-p<N>" for the shard of partition N (--partition N,
     * docs/SCALEOUT.md): its own checkpoint, offsets WAL, operator state
     * and epoch sequence. */
    char pipe[FR_PIPE_ID_MAX];
    int shard;          /* the shard's partition, -1: every partition */
    int64_t idle_ms;    /* the shard's partition has had nothing new since (mono ms) */
    int64_t idle_end;   /* its log end then */
    int join_checked;   /* a new shard looked for gold's frontier (plan_epoch) */
    int idle_planned;   /* plan_epoch's last range is an idle epoch (not answers only) */
    char dir[4096]; /* checkpoint directory */
    struct fr_lake lake;        /* the catalog and where data files go */
    struct fr_ice_catalog *cat; /* lake.cat */
    struct fr_proc *proc;
    struct fr_ck ck;
    uint32_t nparts;
    struct fr_log_reader *readers[FR_CK_MAX_PARTS];
    int64_t reader_at[FR_CK_MAX_PARTS]; /* offset readers[p] returns next */
    struct fr_log_opts lopts;           /* the log backend (log.backend) */
    struct fr_kafka *kafka;             /* its client when log.backend = kafka */
    struct fr_ahead *ahead; /* decode ahead for epochs of >= ahead_min records; NULL: never */
    int64_t ahead_min;
    int64_t stat_warned_ms; /* when the planner last warned of an unreadable log end */
    int64_t cut_ms;         /* when the planner last cut an epoch (mono ms), -1: not yet */
    struct fr_estage *es; /* the enrichment stage when enrich.enabled, else NULL */
    char es_fp[16];       /* the fingerprint of the state saved for the epoch in flight */
    char table_dir[FR_TBL_EVERY][4096];
    /* the epoch in flight, indexed by enum fr_tbl (see epoch_writes) */
    struct fr_tw tw[FR_TBL_EVERY];
    int write;          /* 0 while replaying an epoch that is already in the lake */
    int bronze_ahead;   /* bronze rows are written on the decode-ahead thread */
    int once;           /* --once: no waiting; stop when the log is drained */
    int64_t lake_epoch; /* the newest epoch in the lake at start, -1: none */
    struct epoch_counts n;
    int sink_rc;
    int64_t epoch_now; /* the epoch in flight (run_epoch), for the writers' errors */
    struct fr_stats *stats; /* <data>/stats/process.stats, a shard's process-p<N>.stats */
    struct fr_maint_round maint; /* orphan cadence and budget carry-over (fr_maint_tables) */
    struct fr_ckm *ckm;     /* the checkpoint's copy in a bucket, or NULL */
    struct fr_progress pg;  /* --once: records of the log processed (core/progress.h) */
    uint64_t pg_done;
};

/* Publish what moves with the clock and the log (and the heartbeat), while
 * the planner waits for records; behind: records durable in the log past
 * the checkpoint (epoch.c). */
void ep_stats_tick(struct proc_run *run, int64_t behind);

/* The durable end of partition p into *end (epoch_plan.c). */
int ep_partition_end(struct proc_run *run, uint32_t p, int64_t *end);
/* The topic's partitions in the log (at least 1), or a negative error. */
int ep_discover_partitions(struct proc_run *run);
/* gold's frontier (the finalizer's newest marker), FR_PROC_WM_NONE when none. */
int ep_gold_frontier(struct proc_run *run, int64_t *frontier);
/* PLAN: the next epoch's range, cut at the trigger or the record budget
 * (1: a range, 0: stop, < 0 error). */
int ep_plan_epoch(struct proc_run *run, struct fr_ck_range *range);

#endif
