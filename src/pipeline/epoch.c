/*
 * epoch.c — `freshet process`: reads the log from its checkpointed offsets
 * and runs one epoch at a time through the operators (src/process) into the
 * six tables (tables.c), committing all of an epoch's snapshots in one
 * catalog transaction, then the checkpoint.
 *
 * One epoch, as a state machine (a crash at any arrow restarts at PLAN
 * from the last checkpoint):
 *
 *   PLAN ──► WAL ──► PROCESS ──► FILES ──► COMMIT ──► CHECKPOINT ──► PLAN
 *    │        │                             │
 *    │        └─ range of epoch E+1 durable  └─ one SQLite transaction: every
 *    │                                          table moves to its snapshot
 *    │                                          for E+1 (marker: pipeline id,
 *    │                                          epoch, offsets) or none does
 *    └─ the WAL already holds E+1 (a crashed attempt): reuse its range
 *
 * Invariants:
 *   1. The checkpoint for E is written only after E is in the lake.
 *   2. An epoch's range is durable (WAL) before any of its records is
 *      processed, and a replay of E uses that same range, so the operators
 *      see the same records and produce the same rows (they are
 *      deterministic and their state is part of the checkpoint).
 *   3. If E+1 is already in the lake (bronze carries the marker), it is
 *      replayed through the operators to rebuild their state but nothing is
 *      written or committed again: exactly once.
 *   4. Any failure (catalog, storage, a full disk) ends the process before
 *      the checkpoint moves; the supervisor restarts it and the epoch is
 *      replayed (crash-only design).
 *
 * Single-threaded. SIGTERM/SIGINT: the current epoch finishes, then exit 0.
 */
#include "pipeline/epoch_int.h"

#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"
#include "core/mem.h"
#include "core/progress.h"
#include "iceberg/iceberg.h"
#include "iceberg/rest.h"
#include "kafka/kafka.h"
#include "log/log.h"
#include "pipeline/ahead.h"
#include "pipeline/checkpoint.h"
#include "pipeline/ckmirror.h"
#include "pipeline/estage.h"
#include "pipeline/lake.h"
#include "pipeline/maint.h"
#include "pipeline/tables.h"
#include "process/process.h"
#include "stats/stats.h"

#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STATE_CAP ((size_t)1 << 30)

volatile sig_atomic_t ep_process_stop;

static void process_on_signal(int sig)
{
    (void)sig;
    ep_process_stop = 1;
}

/* The tables an epoch writes: the six, and the enrichment stage's three
 * when it runs (dlq_replays is only written by `freshet dlq replay`). */
static int epoch_writes(const struct proc_run *run, int t)
{
    if (run->shard >= 0 &&
        (t == FR_TBL_GOLD_EPM || t == FR_TBL_GOLD_TOP || t == FR_TBL_GOLD_TOPICS)) {
        return 0; /* a shard's windows are partial: the finalizer writes gold */
    }
    if (t < FR_TBL_COUNT) {
        return 1;
    }
    return run->es && (t == FR_TBL_SILVER_TOPICS || t == FR_TBL_GOLD_TOPICS ||
                       t == FR_TBL_DLQ_LOOKUPS);
}

/* Log a table writer's failure, with the Parquet detail of the calling
 * thread (fr_pq_errmsg is per thread: call it where the write failed),
 * which names the file and the cause ("writing <path>: no space left on
 * device"). */
static void write_failed(int64_t epoch, int t, int rc)
{
    fr_error("process", "epoch %" PRId64 ": writing %s failed: %s (%s) %s", epoch,
             fr_tbl_name((enum fr_tbl)t), fr_strerror(rc), fr_err_name(rc), fr_pq_errmsg());
}

/* The outcome rc of a row for table t of the epoch in flight, on this
 * thread: a failure (a full disk when a row group or the file's header is
 * written) is described here, where the detail is. */
static int tw_put(const struct proc_run *run, int t, int rc)
{
    if (rc < 0) {
        write_failed(run->epoch_now, t, rc);
    }
    return rc;
}

/* ---------------------------------------------------------------- sinks */

static int sink_minute(void *arg, const struct fr_win_row *row)
{
    struct proc_run *run = arg;
    if (!epoch_writes(run, FR_TBL_GOLD_EPM)) {
        return FR_OK; /* a shard */
    }
    run->n.gold_epm++;
    return run->write ? tw_put(run, FR_TBL_GOLD_EPM, fr_tw_gold_epm(&run->tw[FR_TBL_GOLD_EPM], row))
                      : FR_OK;
}

static int sink_top(void *arg, const struct fr_top_row *row)
{
    struct proc_run *run = arg;
    if (!epoch_writes(run, FR_TBL_GOLD_TOP)) {
        return FR_OK; /* a shard */
    }
    run->n.gold_top++;
    return run->write ? tw_put(run, FR_TBL_GOLD_TOP, fr_tw_gold_top(&run->tw[FR_TBL_GOLD_TOP], row))
                      : FR_OK;
}

static const struct fr_proc_sink proc_sink = {sink_minute, sink_top};

/* -------------------------------------------------------------- records */

/* Write what the operators made of one record to the epoch's tables. */
static int bronze_row(struct proc_run *run, const struct fr_row *row, const char *raw,
                      size_t raw_len)
{
    return run->bronze_ahead
               ? FR_OK
               : tw_put(run, FR_TBL_BRONZE, fr_tw_bronze(&run->tw[FR_TBL_BRONZE], row, raw, raw_len));
}

static int process_result(struct proc_run *run, const struct fr_proc_pos *pos, const char *raw,
                          size_t raw_len, const char *detail, const struct fr_proc_result *res)
{
    int rc;
    run->n.records++;
    switch (res->outcome) {
    case FR_PROC_REJECTED:
        run->n.dlq++;
        return run->write ? tw_put(run, FR_TBL_DLQ,
                                   fr_tw_dlq(&run->tw[FR_TBL_DLQ], pos,
                                             fr_gate_reason_name(res->reason), detail, raw, raw_len))
                          : FR_OK;
    case FR_PROC_LATE:
        run->n.bronze++;
        run->n.late++;
        if (!run->write) {
            return FR_OK;
        }
        rc = bronze_row(run, res->row, raw, raw_len);
        return rc < 0 ? rc
                      : tw_put(run, FR_TBL_LATE,
                               fr_tw_late(&run->tw[FR_TBL_LATE], res->row, res->watermark_us,
                                          res->lateness_us));
    case FR_PROC_DUPLICATE:
        run->n.bronze++;
        run->n.duplicates++;
        return run->write ? bronze_row(run, res->row, raw, raw_len) : FR_OK;
    case FR_PROC_SILVER:
        run->n.bronze++;
        run->n.silver++;
        if (!run->write) {
            return FR_OK;
        }
        rc = bronze_row(run, res->row, raw, raw_len);
        if (rc >= 0) {
            rc = tw_put(run, FR_TBL_SILVER, fr_tw_silver(&run->tw[FR_TBL_SILVER], res->row));
        }
        if (rc >= 0 && run->es) {
            rc = fr_estage_edit(run->es, res->row, run->tw);
            /* Keep the lookups moving while a large epoch is read (never
             * waits: answers are only marked here, applied at the end). */
            if (rc >= 0 && (run->n.silver & 4095) == 0) {
                rc = fr_estage_pump(run->es, 0);
            }
        }
        return rc;
    }
    return FR_EINVAL;
}

/* A record read on this thread: decode and run the operators. */
static int process_record(struct proc_run *run, const struct fr_log_rec *rec, int32_t partition)
{
    struct fr_proc_pos pos = {partition, rec->offset, rec->append_time};
    struct fr_proc_result res;
    int rc = fr_proc_record(run->proc, &pos, rec->payload, rec->payload_len, &proc_sink, run, &res);
    if (rc < 0) {
        return rc;
    }
    return process_result(run, &pos, rec->payload, rec->payload_len, res.detail, &res);
}

/* Ask for the cache lines of a row's strings before the operators and the
 * silver writer hash and copy them. The decode-ahead thread wrote them (the
 * log's bytes, or its decode buffer) on the other core, so the first load of
 * each used to wait on a cache miss (fr_proc_hash, the writers' hashes).
 * The epoch loop spends microseconds on a row, so the strings are asked for
 * two rows ahead, and the dictionary slots the silver writer will probe
 * (which needs the strings' hashes) one row ahead. always_inline: GCC finds
 * a function that only prefetches free of side effects and drops the calls
 * to it (-O1 and up). */
static inline __attribute__((always_inline)) void prefetch_str(struct fr_proc_str s)
{
    if (s.len) {
        __builtin_prefetch(s.s);
        if (s.len > 64) {
            __builtin_prefetch(s.s + 64);
        }
    }
}

static inline __attribute__((always_inline)) void prefetch_strings(const struct fr_ahead_item *item)
{
    const struct fr_row *r = &item->row;
    if (item->reason == FR_GATE_OK) {
        prefetch_str(r->meta_id);
        prefetch_str(r->wiki);
        prefetch_str(r->title);
        prefetch_str(r->user);
        prefetch_str(r->comment);
        prefetch_str(r->server_name);
    }
}

static void prefetch_slots(const struct proc_run *run, const struct fr_ahead_item *item)
{
    if (item->reason == FR_GATE_OK) {
        fr_proc_prefetch(run->proc, &item->row);
        if (run->write) {
            fr_tw_silver_prefetch(&run->tw[FR_TBL_SILVER], &item->row);
        }
    }
}

/* A record the decode-ahead thread read and decoded. */
static int process_item(struct proc_run *run, const struct fr_ahead_item *item)
{
    struct fr_proc_result res;
    int rc = fr_proc_apply(run->proc, &item->pos, item->reason, &item->row, &proc_sink, run, &res);
    if (rc < 0) {
        return rc;
    }
    return process_result(run, &item->pos, item->raw, item->raw_len, item->detail, &res);
}

/* ---------------------------------------------------------------- stats */

/* Publish what moves with the clock and the log (and the heartbeat):
 * called while the planner waits for records. behind: records durable in
 * the log past the checkpoint. */
void ep_stats_tick(struct proc_run *run, int64_t behind)
{
    double now = (double)fr_wall_ms() / 1000.0;
    fr_stats_set(run->stats, FR_STATS_PROC_BEHIND, 0, (double)behind);
    fr_stats_set(run->stats, FR_STATS_PROC_WM_LAG, 0,
                 now - fr_stats_get(run->stats, FR_STATS_PROC_WATERMARK, 0));
    fr_stats_set(run->stats, FR_STATS_PROC_FRESHNESS, 0,
                 now - fr_stats_get(run->stats, FR_STATS_PROC_NEWEST, 0));
    fr_stats_publish(run->stats);
}

/* Publish the state after the checkpoint of epoch (the lake holds exactly
 * what the operators have seen): the pipeline's totals, kept in the
 * checkpoint, and the provisional view. batch_ms < 0: no epoch was run
 * (start-up) or it replayed one already in the lake. */
static void stats_epoch(struct proc_run *run, int64_t epoch, int64_t batch_ms, int64_t commit_ms)
{
    struct fr_stats *st = run->stats;
    struct fr_proc_stats ps;
    fr_proc_stats(run->proc, &ps);
    if (batch_ms >= 0) {
        fr_stats_add(st, FR_STATS_PROC_EPOCHS, 0, 1);
        fr_stats_observe(st, FR_STATS_PROC_BATCH, (double)batch_ms / 1000.0);
        fr_stats_observe(st, FR_STATS_PROC_COMMIT, (double)commit_ms / 1000.0);
        fr_stats_set(st, FR_STATS_PROC_LAST_BATCH, 0, (double)batch_ms / 1000.0);
        fr_stats_set(st, FR_STATS_PROC_LAST_COMMIT, 0, (double)commit_ms / 1000.0);
        fr_stats_set(st, FR_STATS_PROC_LAST_COMMIT_TS, 0, (double)fr_wall_ms() / 1000.0);
    }
    if (epoch >= 0) {
        fr_stats_set(st, FR_STATS_PROC_LAST_EPOCH, 0, (double)epoch);
    }
    uint64_t dlq = 0;
    for (int r = 1; r < FR_GATE_REASON_COUNT; r++) {
        fr_stats_set_counter(st, FR_STATS_PROC_DLQ, (unsigned)(r - 1), ps.rejected[r]);
        dlq += ps.rejected[r];
    }
    fr_stats_set_counter(st, FR_STATS_PROC_RECORDS, 0, ps.silver);
    fr_stats_set_counter(st, FR_STATS_PROC_RECORDS, 1, ps.duplicates);
    fr_stats_set_counter(st, FR_STATS_PROC_RECORDS, 2, ps.late);
    fr_stats_set_counter(st, FR_STATS_PROC_RECORDS, 3, dlq);
    if (ps.watermark_us != FR_PROC_WM_NONE) {
        fr_stats_set(st, FR_STATS_PROC_WATERMARK, 0, (double)ps.watermark_us / 1e6);
    }
    fr_stats_set(st, FR_STATS_PROC_DEDUP_KEYS, 0, (double)ps.dedup.keys);
    fr_stats_set(st, FR_STATS_PROC_DEDUP_BYTES, 0, (double)ps.dedup.bytes);
    int64_t newest = FR_PROC_WM_NONE;
    int rc = fr_stats_view_publish(st, run->proc, epoch, &newest);
    if (rc < 0) {
        fr_warn("process", "cannot write the live view: %s", fr_strerror(rc));
    }
    if (newest != FR_PROC_WM_NONE) {
        fr_stats_set(st, FR_STATS_PROC_NEWEST, 0, (double)newest / 1e6);
    }
    fr_stats_publish(st);
}

/* ------------------------------------------------------------ one epoch */

/* Position partition p's reader at from. The reader of the previous epoch
 * is kept when it stands there (the normal case: epochs are contiguous), so
 * the log is not re-read from the start of its segment at every epoch. */
static int open_reader(struct proc_run *run, uint32_t p, int64_t from)
{
    if (run->readers[p] && run->reader_at[p] == from) {
        return FR_OK;
    }
    fr_log_reader_close(run->readers[p]);
    run->readers[p] = NULL;
    int rc = fr_log_reader_open(run->conf->general_data_dir, TOPIC, (int32_t)p, from, &run->lopts,
                                &run->readers[p]);
    run->reader_at[p] = rc == FR_OK ? from : -1;
    return rc;
}

/* The next record of partition p in the range into rec (1), or 0 at the
 * range's end. Its pointers stay valid until the next call for p. */
static int next_in_range(struct proc_run *run, const struct fr_ck_range *range, uint32_t p,
                         int64_t *expect, struct fr_log_rec *rec)
{
    if (*expect >= range->end[p]) {
        return 0;
    }
    int rc = fr_log_reader_next(run->readers[p], rec, 5000);
    if (rc <= 0) {
        run->reader_at[p] = -1; /* reopen before the next use */
    }
    if (rc == 0) {
        fr_error("process", "partition %u: offset %" PRId64 " not readable within 5 s", p, *expect);
        return FR_ETIMEOUT;
    }
    if (rc < 0) {
        return rc;
    }
    if (rec->offset != *expect) {
        fr_error("process", "partition %u: expected offset %" PRId64 ", read %" PRId64, p, *expect,
                 rec->offset);
        return FR_ECORRUPT;
    }
    (*expect)++;
    run->reader_at[p] = *expect;
    return 1;
}

/* The epoch's records merged across partitions by log append time (ties:
 * lower partition first), so that one partition cannot run ahead of the
 * others and turn their records late merely because of the order in which
 * an epoch reads them. With one partition this is log order. A source for
 * fr_ahead (range_next runs on the decode-ahead thread then) or read
 * inline. */
struct range_src {
    struct proc_run *run;
    const struct fr_ck_range *range;
    struct fr_log_rec head[FR_CK_MAX_PARTS];
    int have[FR_CK_MAX_PARTS];
    int64_t expect[FR_CK_MAX_PARTS];
    int last; /* the partition whose head was handed out last, -1: none */
};

static int range_open(struct range_src *src, struct proc_run *run, const struct fr_ck_range *range)
{
    memset(src->have, 0, sizeof src->have);
    src->run = run;
    src->range = range;
    src->last = -1;
    for (uint32_t p = 0; p < range->nparts; p++) {
        src->expect[p] = range->start[p];
        if (range->end[p] <= range->start[p]) {
            continue;
        }
        int rc = open_reader(run, p, range->start[p]);
        if (rc < 0) {
            fr_error("process", "cannot read partition %u from offset %" PRId64 ": %s", p,
                     range->start[p], fr_strerror(rc));
            return rc;
        }
        rc = next_in_range(run, range, p, &src->expect[p], &src->head[p]);
        if (rc < 0) {
            return rc;
        }
        src->have[p] = rc;
    }
    return FR_OK;
}

/* fr_ahead_source_fn: the next record in merged order. */
static int range_next(void *arg, struct fr_log_rec *rec, int32_t *partition)
{
    struct range_src *src = arg;
    if (src->last >= 0) { /* its record was used: read that partition's next */
        uint32_t p = (uint32_t)src->last;
        src->last = -1;
        int rc = next_in_range(src->run, src->range, p, &src->expect[p], &src->head[p]);
        if (rc < 0) {
            return rc;
        }
        src->have[p] = rc;
    }
    int best = -1;
    for (uint32_t p = 0; p < src->range->nparts; p++) {
        if (src->have[p] && (best < 0 || src->head[p].append_time < src->head[best].append_time)) {
            best = (int)p;
        }
    }
    if (best < 0) {
        return 0;
    }
    *rec = src->head[best];
    *partition = best;
    src->last = best;
    return 1;
}

static int64_t range_records(const struct fr_ck_range *range)
{
    int64_t total = 0;
    for (uint32_t p = 0; p < range->nparts; p++) {
        total += range->end[p] - range->start[p];
    }
    return total;
}

/* fr_ahead_item_fn, on the decode-ahead thread: an accepted record's
 * bronze row. Only this thread touches the bronze writer until
 * fr_ahead_stop has returned; its errors are described here, where
 * fr_pq_errmsg (per thread) holds the detail. */
static int ahead_bronze(void *arg, const struct fr_ahead_item *item)
{
    struct range_src *src = arg;
    if (item->reason != FR_GATE_OK) {
        return FR_OK;
    }
    struct fr_tw *tw = &src->run->tw[FR_TBL_BRONZE];
    int rc = fr_tw_bronze(tw, &item->row, item->raw, item->raw_len);
    if (rc < 0) {
        write_failed(src->range->epoch, FR_TBL_BRONZE, rc);
    }
    return rc;
}

/* A catching-up epoch: decoded ahead on a second thread, silver compressed
 * on its own. One rule for both. */
static int epoch_is_large(const struct proc_run *run, const struct fr_ck_range *range)
{
    return run->ahead && range_records(range) >= run->ahead_min;
}

/* Feed the epoch's records to the operators. Large epochs (catching up)
 * are read and decoded ahead on a second thread; small ones (live mode)
 * inline, which costs no thread and no batch memory. The operators see the
 * same records in the same order either way. */
static int read_range(struct proc_run *run, const struct fr_ck_range *range)
{
    struct range_src src;
    int rc = range_open(&src, run, range);
    if (rc < 0) {
        return rc;
    }
    if (!epoch_is_large(run, range)) {
        struct fr_log_rec rec;
        int32_t part = 0;
        while ((rc = range_next(&src, &rec, &part)) == 1) {
            fr_progress_tick(&run->pg, ++run->pg_done);
            rc = process_record(run, &rec, part);
            if (rc < 0) {
                return rc;
            }
        }
        return rc;
    }
    /* Bronze takes every record the gate accepts, whatever the operators
     * make of it, so its rows are written on the decode-ahead thread, in
     * the same order, while this one runs the operators (ADR 0026). */
    run->bronze_ahead = run->write;
    rc = fr_ahead_start(run->ahead, range_next, run->write ? ahead_bronze : NULL, &src);
    if (rc < 0) {
        run->bronze_ahead = 0;
        fr_error("process", "cannot start the decode-ahead thread: %s", fr_strerror(rc));
        return rc;
    }
    for (;;) {
        const struct fr_ahead_batch *batch = NULL;
        rc = fr_ahead_next(run->ahead, &batch);
        if (rc <= 0) {
            break;
        }
        for (uint32_t i = 0; i < batch->n && rc >= 0; i++) {
            if (i + 2 < batch->n) {
                prefetch_strings(&batch->items[i + 2]);
            }
            if (i + 1 < batch->n) {
                prefetch_slots(run, &batch->items[i + 1]);
            }
            rc = process_item(run, &batch->items[i]);
        }
        run->pg_done += batch->n;
        fr_progress_tick(&run->pg, run->pg_done);
        fr_ahead_release(run->ahead, batch);
        if (rc < 0) {
            break;
        }
    }
    fr_ahead_stop(run->ahead);
    run->bronze_ahead = 0;
    return rc < 0 ? rc : FR_OK;
}

/* The epoch's commit through a REST catalog (lake.catalog_uri):
 * fr_lake_commit_rest with every table the epoch writes (bronze always,
 * it carries the marker; the others when they have rows). */
static int commit_epoch_rest(struct proc_run *run, const struct fr_ice_commit_info *info)
{
    struct fr_lake_append apps[FR_TBL_EVERY];
    uint32_t n = 0;
    for (int t = 0; t < FR_TBL_EVERY; t++) {
        if (!epoch_writes(run, t) || (run->tw[t].rows == 0 && t != FR_TBL_BRONZE)) {
            continue;
        }
        apps[n++] = (struct fr_lake_append){fr_tbl_name(t), &run->tw[t].file,
                                            run->tw[t].rows ? 1 : 0};
    }
    return fr_lake_commit_rest(&run->lake, apps, n, info, run->conf->lake_catalog_uri);
}

static int commit_epoch(struct proc_run *run, const struct fr_ck_range *range)
{
    char offsets[2048];
    fr_ck_range_text(range, TOPIC, run->shard, offsets, sizeof offsets);
    /* The watermark after the epoch: gold holds exactly the windows that
     * end at or before it (verify recomputes them from silver). */
    struct fr_proc_stats st;
    fr_proc_stats(run->proc, &st);
    char wm[32], records[32], settled[32];
    snprintf(wm, sizeof wm, "%" PRId64, st.watermark_us);
    snprintf(records, sizeof records, "%" PRIu64, run->n.records);
    snprintf(settled, sizeof settled, "%" PRId64,
             run->es ? fr_estage_frontier(run->es) : FR_PROC_WM_NONE);
    /* gold_top_topics holds exactly the windows ending at or before the
     * frontier (verify and the tests recompute them from silver_topics). */
    /* ... and the enrichment state it was made with (ADR 0064). */
    struct fr_ice_kv props[] = {{FR_SUMMARY_WATERMARK, wm},
                                {FR_SUMMARY_RECORDS, records},
                                {FR_SUMMARY_TOPICS, settled},
                                {FR_SUMMARY_ENRICH_STATE, run->es_fp}};
    struct fr_ice_commit_info info = {
        .pipeline_id = run->pipe,
        .epoch = range->epoch,
        .source_offsets = offsets,
        .props = props,
        .nprops = run->es ? 4 : 2,
    };
    int rc = FR_OK;
    int64_t f0 = fr_mono_ns();
    for (int t = 0; rc == FR_OK && t < FR_TBL_EVERY; t++) {
        if (!epoch_writes(run, t)) {
            continue;
        }
        rc = fr_tw_finish(&run->tw[t]);
        if (rc < 0) {
            write_failed(range->epoch, t, rc);
        }
    }
    if (rc < 0) {
        return rc;
    }
    if (run->lake.rest) {
        return commit_epoch_rest(run, &info);
    }
    struct fr_ice_txn *txn = NULL;
    rc = fr_ice_txn_begin(run->cat, &txn);
    for (int t = 0; rc == FR_OK && t < FR_TBL_EVERY; t++) {
        /* Bronze always commits (it carries the epoch marker); the others
         * only when the epoch gave them rows. */
        if (!epoch_writes(run, t) || (run->tw[t].rows == 0 && t != FR_TBL_BRONZE)) {
            continue;
        }
        rc = fr_ice_txn_append(txn, FR_NS, fr_tbl_name(t), &run->tw[t].file,
                               run->tw[t].rows ? 1 : 0, &info);
    }
    if (rc == FR_OK) {
        struct fr_ice_commit_result res;
        int64_t f1 = fr_mono_ns();
        rc = fr_ice_txn_commit(txn, &res);
        const struct fr_ice_commit_timing *tm = &res.timing;
        if (rc == FR_OK) { /* where commit's time went (-v; bench/peers/soak.sh) */
            fr_debug("process",
                     "epoch %" PRId64 " commit us: files %" PRId64 " catalog-read %" PRId64
                     " load %" PRId64 " manifests %" PRId64 " metadata %" PRId64 " swap %" PRId64
                     " publish %" PRId64 " finish %" PRId64 "; metadata %" PRIu64
                     " B, snapshots %u, metadata-log %u, manifests %u",
                     range->epoch, (f1 - f0) / 1000, tm->cat_us, tm->load_us, tm->apply_us,
                     tm->metadata_us, tm->swap_us, tm->publish_us, tm->finish_us,
                     tm->metadata_bytes, tm->max_snapshots, tm->max_metadata_log,
                     tm->max_manifests);
        }
    }
    if (rc == FR_EEXIST) {
        /* Fencing (ADR 0014): another process of this pipeline committed
         * the epoch first (a zombie, or its successor). Nothing moved; the
         * restart replays it from the lake. */
        fr_error("process",
                 "epoch %" PRId64 " was already committed by another owner of pipeline %s "
                 "(FR_EEXIST): stopping without committing; a restart continues from the lake",
                 range->epoch, run->pipe);
    } else if (rc < 0) {
        fr_error("process", "epoch %" PRId64 ": commit failed: %s (%s) %s", range->epoch,
                 fr_strerror(rc), fr_err_name(rc), fr_ice_errmsg());
    }
    fr_ice_txn_free(txn);
    return rc;
}

static int epoch_committed(struct proc_run *run, int64_t epoch)
{
    struct fr_ice_table *bronze = NULL;
    int rc = fr_lake_table(&run->lake, fr_tbl_name(FR_TBL_BRONZE), &bronze);
    if (rc < 0) {
        return rc;
    }
    rc = fr_ice_find_epoch(bronze, run->pipe, epoch);
    fr_ice_table_free(bronze);
    return rc;
}

/* The range epoch covered, from bronze's snapshot summary (the marker's
 * freshet.source-offsets): used when the offsets WAL no longer has it (lost
 * or rotated) but the lake does. *wm (may be NULL) gets the watermark the
 * epoch committed (FR_PROC_WM_NONE when it recorded none). 1 found, 0 not
 * committed, < 0 error. */
static int lake_range(struct proc_run *run, int64_t epoch, struct fr_ck_range *range,
                      int64_t *wm)
{
    struct fr_ice_table *bronze = NULL;
    int rc = fr_lake_table(&run->lake, fr_tbl_name(FR_TBL_BRONZE), &bronze);
    if (rc < 0) {
        return rc;
    }
    const struct fr_ice_snapshot *m = fr_maint_marker(bronze, run->pipe, epoch);
    const char *offsets = m ? fr_maint_summary(m, FR_ICE_SUMMARY_OFFSETS) : NULL;
    int found = offsets != NULL;
    if (found && wm) {
        const char *mark = fr_maint_summary(m, FR_SUMMARY_WATERMARK);
        *wm = mark ? strtoll(mark, NULL, 10) : FR_PROC_WM_NONE;
    }
    if (found && fr_ck_range_parse(offsets, TOPIC, epoch, range) < 0) {
        fr_error("process", "epoch %" PRId64 ": unreadable source offsets \"%s\"", epoch, offsets);
        found = FR_ECORRUPT;
    }
    fr_ice_table_free(bronze);
    return found;
}

/* The offsets WAL's planned epoch, checked against the lake: a shard that
 * was fenced (a zombie: another owner committed that epoch first, with
 * the range it planned) finds its own plan in the WAL when it restarts,
 * but the lake's range is the one the tables hold, so the replay takes
 * that one. Returns FR_OK (*range kept or replaced) or an error. */
static int lake_plan(struct proc_run *run, struct fr_ck_range *range)
{
    if (range->epoch > run->lake_epoch) {
        return FR_OK; /* not in the lake: the plan stands */
    }
    struct fr_ck_range lr;
    int rc = lake_range(run, range->epoch, &lr, NULL);
    if (rc <= 0) {
        return rc;
    }
    char planned[2048], committed[2048];
    fr_ck_range_text(range, TOPIC, run->shard, planned, sizeof planned);
    fr_ck_range_text(&lr, TOPIC, run->shard, committed, sizeof committed);
    if (strcmp(planned, committed) != 0) {
        fr_warn("process",
                "epoch %" PRId64 " of pipeline %s: the offsets WAL planned %s but the lake "
                "holds %s (another owner committed it first): replaying the lake's",
                range->epoch, run->pipe, planned, committed);
        *range = lr;
    }
    return FR_OK;
}

/* Table maintenance by the processor itself, between epochs (after the
 * checkpoint): fr_maint_tables over the tables it writes. */
static void maintain_tables(struct proc_run *run)
{
    uint8_t want[FR_TBL_EVERY];
    for (int t = 0; t < FR_TBL_EVERY; t++) {
        want[t] = (uint8_t)epoch_writes(run, t);
    }
    /* The epochs leave up to FR_MEM_TRIM_SLACK of free pages resident
     * (core/mem.h); the round's peak should not stand on them. */
    fr_mem_trim_now();
    fr_maint_tables(&run->lake, run->conf, want,
                    fr_wall_ms() - run->conf->maintenance_expire_after_s * 1000,
                    &run->maint);
}

/* The state a committed epoch was made with (ADR 0064): need for the
 * lake's newest epoch, whose state the run continues with. */
static int enrich_committed(struct proc_run *run, int64_t epoch, int need)
{
    return fr_estage_load_committed(run->es, &run->lake, run->pipe, run->ckm, epoch, need);
}

/* The enrichment stage's part of an epoch, after its records: apply the
 * answers that arrived and save the stage's state before the commit
 * (estage.h, "Exactly once"), copying it to the bucket first when the
 * checkpoint is mirrored there; for an epoch already in the lake, take the
 * state that its commit was made with instead. */
static int enrich_epoch(struct proc_run *run, int64_t epoch)
{
    int rc;
    if (!run->write) {
        return enrich_committed(run, epoch, epoch >= run->lake_epoch);
    }
    rc = fr_estage_pump(run->es, 0);
    struct fr_proc_stats st;
    fr_proc_stats(run->proc, &st);
    if (rc == FR_OK) {
        rc = fr_estage_apply(run->es, run->tw, st.watermark_us, fr_wall_ms() * 1000,
                             &run->n.gold_topics);
    }
    uint32_t fp = 0;
    if (rc == FR_OK) {
        rc = fr_estage_save(run->es, epoch, &fp);
    }
    if (rc == FR_OK) {
        char name[64];
        fr_estage_state_name(epoch, fp, name, sizeof name);
        snprintf(run->es_fp, sizeof run->es_fp, "%08" PRIx32, fp);
        rc = fr_ckm_put_state(run->ckm, fr_estage_dir(run->es), name);
    }
    if (rc < 0) {
        fr_error("process", "epoch %" PRId64 ": enrichment: %s %s", epoch, fr_strerror(rc),
                 fr_pq_errmsg());
    }
    return rc;
}

/* A shard's idle epoch (no records; shard_idle): raise the watermark to
 * the wall clock minus the lateness (a new shard's first epoch: to gold's
 * frontier), or, for an epoch already in the lake, to the watermark it
 * committed, so a replay ends in the same state. */
static int idle_epoch(struct proc_run *run, int64_t epoch)
{
    int64_t wm = fr_wall_ms() * 1000 - run->conf->process_lateness_s * 1000000;
    /* A new shard's first epoch: gold's frontier (plan_epoch), read again
     * here so that a replayed plan commits what holds now. */
    int64_t frontier;
    if (run->write && epoch == 0 && run->lake_epoch == -1 &&
        ep_gold_frontier(run, &frontier) == FR_OK && frontier != FR_PROC_WM_NONE) {
        wm = frontier;
    }
    if (!run->write) {
        struct fr_ck_range r;
        int rc = lake_range(run, epoch, &r, &wm);
        if (rc <= 0) {
            fr_error("process", "idle epoch %" PRId64 ": its marker is not in the lake", epoch);
            return rc < 0 ? rc : FR_ENOTFOUND;
        }
    }
    if (wm == FR_PROC_WM_NONE) {
        return FR_OK;
    }
    return fr_proc_raise(run->proc, wm, &proc_sink, run);
}

/* At start, from one read of bronze: run->lake_epoch, the newest epoch of
 * this pipeline in the lake (every epoch up to it is replayed from its
 * recorded range, never planned anew), and whether a consumer group's
 * rebuild or dlq replay (ADR 0066, 0067) committed one after ck_epoch: the
 * checkpoint then holds the state from before it, so starting from it is
 * refused (logged), before its state is even read (a rebuild under a new
 * policy makes that state refuse the settings). */
static int lake_at_start(struct proc_run *run, int64_t ck_epoch)
{
    struct fr_ice_table *bronze = NULL;
    int64_t snap;
    run->lake_epoch = -1;
    int rc = fr_lake_table(&run->lake, fr_tbl_name(FR_TBL_BRONZE), &bronze);
    if (rc == FR_OK) {
        rc = fr_ice_last_epoch(bronze, run->pipe, &run->lake_epoch, &snap);
        rc = rc == FR_ENOTFOUND ? FR_OK : rc;
    }
    if (rc < 0) {
        fr_error("process", "cannot read the lake's last epoch: %s %s", fr_strerror(rc),
                 fr_ice_errmsg());
    }
    char rebuild[64];
    int64_t rebuilt;
    if (rc == FR_OK && run->lake_epoch > ck_epoch &&
        fr_maint_rebuilt_after(bronze, run->pipe, ck_epoch, rebuild, sizeof rebuild, &rebuilt) ==
            1) {
        fr_maint_rebuilt_refused("process", run->pipe, rebuilt, rebuild, ck_epoch, run->dir);
        rc = FR_ESTATE;
    }
    fr_ice_table_free(bronze);
    return rc;
}

static int run_epoch(struct proc_run *run, const struct fr_ck_range *range)
{
    int64_t t0 = fr_mono_ms();
    /* Only this process commits this pipeline's epochs while it holds the
     * pipeline lock (rebuild and dlq replay take it too), so an epoch past
     * the newest one in the lake at start cannot be there: no need to read
     * bronze's metadata again for every epoch. */
    int committed = 0;
    if (range->epoch <= run->lake_epoch) {
        committed = epoch_committed(run, range->epoch);
        if (committed < 0) {
            return committed;
        }
    }
    run->write = !committed;
    run->epoch_now = range->epoch;
    memset(&run->n, 0, sizeof run->n);
    int large = epoch_is_large(run, range);
    for (int t = 0; t < FR_TBL_EVERY; t++) {
        if (!epoch_writes(run, t)) {
            continue;
        }
        fr_tw_init(&run->tw[t], t, run->table_dir[t], run->pipe, range->epoch,
                   (size_t)run->conf->process_row_group_bytes);
        run->tw[t].large = large;
        run->tw[t].lake = &run->lake;
        run->tw[t].many_owners = run->shard >= 0; /* fenced by the marker, not a lock */
    }
    int rc = read_range(run, range);
    /* An empty shard epoch is idle, except one planned for enrichment
     * answers only (never epoch 0: answers follow an epoch's records); an
     * uncommitted plan replayed from the WAL is not raised then. */
    if (rc == FR_OK && run->shard >= 0 && range_records(range) == 0 &&
        (!run->es || !run->write || run->idle_planned || range->epoch == 0)) {
        rc = idle_epoch(run, range->epoch);
    }
    if (rc == FR_OK && run->es) {
        rc = enrich_epoch(run, range->epoch);
    }
    if (rc < 0) { /* the cause was described where it happened */
        fr_error("process",
                 "epoch %" PRId64 " stopped before its %s (%s): the checkpoint stays at epoch %" PRId64
                 " and a restart replays the epoch",
                 range->epoch,
                 run->write ? "commit, nothing of it is in the lake" : "replay (it is in the lake)",
                 fr_err_name(rc), run->ck.epoch);
    }
    int64_t t1 = fr_mono_ms();
    if (rc == FR_OK && run->write) {
        rc = commit_epoch(run, range);
    }
    for (int t = 0; t < FR_TBL_EVERY; t++) {
        if (epoch_writes(run, t)) {
            fr_tw_abort(&run->tw[t]);
        }
    }
    if (rc < 0) {
        return rc;
    }
    int64_t t2 = fr_mono_ms();
    /* The epoch is in the lake: move the checkpoint. */
    run->ck.epoch = range->epoch;
    if (range->nparts > run->ck.nparts) {
        run->ck.nparts = range->nparts;
    }
    for (uint32_t p = 0; p < range->nparts; p++) {
        run->ck.next[p] = range->end[p];
    }
    rc = fr_ck_save_proc(run->dir, &run->ck, run->proc); /* state streamed: ADR 0023 */
    if (rc < 0) {
        fr_error("process",
                 "epoch %" PRId64 ": writing the checkpoint %s/checkpoint failed: %s (%s); the "
                 "epoch is in the lake, a restart replays it from there without committing it again",
                 range->epoch, run->dir, fr_strerror(rc), fr_err_name(rc));
        return rc;
    }
    fr_ckm_push(run->ckm, run->dir, range->epoch);
    struct fr_proc_stats st;
    fr_proc_stats(run->proc, &st);
    char wm[32] = "none";
    if (st.watermark_us != FR_PROC_WM_NONE) {
        fr_time_format_ms(st.watermark_us, wm);
    }
    fr_info("process",
            "epoch %" PRId64 "%s: %" PRIu64 " records: %" PRIu64 " silver, %" PRIu64
            " duplicates, %" PRIu64 " late, %" PRIu64 " dlq, %" PRIu64 "+%" PRIu64
            " gold rows; batch %" PRId64 " ms, commit %" PRId64 " ms; watermark %s; dedup %" PRIu64
            " keys",
            range->epoch, committed ? " (already in the lake: state rebuilt)" : "", run->n.records,
            run->n.silver, run->n.duplicates, run->n.late, run->n.dlq, run->n.gold_epm,
            run->n.gold_top, t1 - t0, t2 - t1, wm, st.dedup.keys);
    if (run->es) {
        struct fr_estage_counts ec;
        fr_estage_counts(run->es, &ec);
        fr_info("process",
                "epoch %" PRId64 " enrichment: %zu waiting, %" PRIu64 " resolved, %" PRIu64
                " no item, %" PRIu64 " failed, %" PRIu64 " backlog in all; %" PRIu64
                " gold_top_topics rows",
                range->epoch, fr_estage_waiting(run->es), ec.resolved, ec.no_item, ec.failed,
                ec.backlog, run->n.gold_topics);
        if (run->shard < 0) {
            fr_estage_publish(run->es, run->stats, run->conf->general_data_dir, range->epoch);
        } else { /* its counters; the topics view would be partial (and shared) */
            fr_estage_publish_stats(run->es, run->stats);
        }
    }
    stats_epoch(run, range->epoch, committed ? -1 : fr_mono_ms() - t0, t2 - t1);
    if (!large) { /* live: free heap pages back between epochs (core/mem.h) */
        fr_mem_trim_idle(fr_mono_ms());
    }
    int64_t every = run->conf->process_maintain_every_epochs;
    /* Shards leave maintenance to the finalizer (docs/SCALEOUT.md). */
    if (!committed && every > 0 && run->shard < 0 &&
        (range->epoch + 1) % every == 0) {
        maintain_tables(run);
    }
    return FR_OK;
}

/* -------------------------------------------------------------- command */

static void process_usage(FILE *out)
{
    fprintf(out,
            "usage: freshet process [--once] [--partition N | --finalize] [--instance ID]\n"
            "       freshet process --group\n\n"
            "Read the log topic `recentchange` from the checkpointed offsets and commit one\n"
            "epoch at a time to the six tables of namespace `wiki` (bronze_recentchange,\n"
            "silver_recentchange, gold_edits_per_minute, gold_top_pages, late_arrivals, dlq).\n"
            "An epoch is cut every process.trigger_ms (from the previous cut) or at\n"
            "process.epoch_max_records.\n"
            "--once: process what the log holds now, then exit. SIGTERM: finish the\n"
            "current epoch, then exit 0.\n"
            "--partition N: run the shard of partition N only (pipeline <id>-pN; bronze,\n"
            "silver, late_arrivals and dlq), for the scale-out mode (docs/SCALEOUT.md).\n"
            "--finalize: compute the gold tables from the shards' committed silver rows.\n"
            "--group: join the Kafka consumer group kafka.group_id and run a shard for each\n"
            "partition it assigns (and the finalizer with partition 0).\n"
            "--instance ID: the identity a shard or the finalizer publishes in its stats\n"
            "file (the `instance` label of /metrics); default hostname:pid of this process,\n"
            "a --group instance passes its own.\n");
}

int fr_cmd_process(struct fr_conf *conf, int argc, char **argv)
{
    static const struct option opts[] = {{"once", no_argument, 0, 'o'},
                                         {"partition", required_argument, 0, 'p'},
                                         {"finalize", no_argument, 0, 'f'},
                                         {"instance", required_argument, 0, 'i'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int once = 0, finalize = 0;
    long shard = -1;
    const char *instance = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "op:fi:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            once = 1;
            break;
        case 'p': {
            char *end;
            shard = strtol(optarg, &end, 10);
            if (*end || shard < 0 || shard >= FR_CK_MAX_PARTS) {
                fprintf(stderr, "freshet process: --partition wants 0..%d, not \"%s\"\n",
                        FR_CK_MAX_PARTS - 1, optarg);
                return 2;
            }
            break;
        }
        case 'f':
            finalize = 1;
            break;
        case 'i':
            if (!optarg[0] || strlen(optarg) >= FR_STATS_INSTANCE_MAX) {
                fprintf(stderr, "freshet process: --instance wants 1..%d bytes\n",
                        FR_STATS_INSTANCE_MAX - 1);
                return 2;
            }
            instance = optarg;
            break;
        case 'h':
            process_usage(stdout);
            return 0;
        default:
            process_usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "freshet process: unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }
    if (finalize && shard >= 0) {
        fprintf(stderr, "freshet process: --partition and --finalize exclude each other\n");
        return 2;
    }
    if (instance && !finalize && shard < 0) {
        fprintf(stderr, "freshet process: --instance is for a shard or the finalizer\n");
        return 2;
    }
    if (finalize) {
        return fr_final_run(conf, once, instance);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = process_on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    struct proc_run *run = calloc(1, sizeof *run);
    if (!run) {
        return 1;
    }
    int status = 1;
    int rc;
    int lock_fd = -1;
    run->conf = conf;
    run->once = once;
    run->shard = (int)shard;
    run->cut_ms = -1;
    int pn = shard >= 0 ? snprintf(run->pipe, sizeof run->pipe, "%s-p%ld",
                                   conf->general_pipeline_id, shard)
                        : snprintf(run->pipe, sizeof run->pipe, "%s", conf->general_pipeline_id);
    if (pn < 0 || (size_t)pn >= sizeof run->pipe) {
        fr_error("process", "general.pipeline_id is too long");
        goto cleanup;
    }
    fr_buf_init(&run->ck.state, STATE_CAP);
    run->ck.epoch = -1;
    fr_log_opts_init(&run->lopts);
    if (fr_kafka_backend_from_conf(conf, &run->lopts, &run->kafka) < 0) {
        goto cleanup;
    }

    rc = fr_maint_ck_dir(conf, run->pipe, run->dir, sizeof run->dir);
    if (rc < 0) {
        fr_error("process", "cannot create %s/process: %s", conf->general_data_dir,
                 fr_strerror(rc));
        goto cleanup;
    }
    long holder = 0;
    lock_fd = fr_ck_lock(run->dir, &holder);
    if (lock_fd < 0) {
        if (lock_fd == FR_ELOCKED) {
            fr_error("process",
                     "pipeline %s is locked by process %ld (another process, "
                     "rebuild or dlq replay is running)",
                     run->pipe, holder);
        } else {
            fr_error("process", "cannot lock %s: %s", run->dir, fr_strerror(lock_fd));
        }
        goto cleanup;
    }
    /* The single processor's file, or a shard's own (ADR 0042). */
    if (run->shard < 0) {
        fr_stats_open(conf->general_data_dir, FR_STATS_PROCESS, &run->stats);
    } else {
        struct fr_stats_member who = {FR_STATS_ROLE_SHARD, run->shard, instance};
        fr_stats_open_member(conf->general_data_dir, &who, &run->stats);
    }
    fr_stats_set(run->stats, FR_STATS_PROC_TRIGGER, 0, (double)conf->process_trigger_ms / 1000.0);
    /* A dlq replay that committed but did not install its checkpoint must
     * be finished (or undone) by rerunning it before epochs go on. */
    {
        char intent[4200];
        snprintf(intent, sizeof intent, "%s/dlq-replay/intent", run->dir);
        if (access(intent, F_OK) == 0) {
            fr_error("process",
                     "an interrupted `freshet dlq replay` left %s: rerun `freshet dlq "
                     "replay` to finish it before processing",
                     intent);
            goto cleanup;
        }
    }
    rc = fr_lake_open(conf, &run->lake);
    if (rc < 0) {
        goto cleanup;
    }
    run->cat = run->lake.cat;
    /* A local lake whose commits all go through this catalog handle: the
     * epoch's files are fsynced together just before the catalog swap
     * (ADR 0029), data files included (fr_lake_pq_out). */
    rc = run->lake.rest || run->lake.wh ? FR_OK : fr_ice_catalog_defer_sync(run->cat);
    if (rc == FR_OK) {
        rc = run->lake.rest ? FR_OK : fr_tbl_ensure(run->cat);
    }
    for (int t = 0; run->lake.rest && rc == FR_OK && t < FR_TBL_COUNT; t++) {
        rc = fr_tbl_ensure_rest(run->lake.rest, (enum fr_tbl)t);
    }
    if (rc < 0) {
        fr_error("process", "catalog: %s (%s) %s", fr_strerror(rc), fr_err_name(rc),
                 fr_ice_errmsg());
        goto cleanup;
    }
    rc = fr_estage_open(conf, run->dir, &run->es);
    if (rc < 0) {
        fr_error("process", "enrichment: %s", fr_strerror(rc));
        goto cleanup;
    }
    if (run->es && run->shard >= 0) {
        /* The finalizer counts the shards' silver_topics rows into
         * gold_top_topics; the shard publishes its topics frontier with
         * each epoch (commit_epoch). ADR 0046. */
        fr_estage_no_gold(run->es);
    }
    for (int t = FR_TBL_COUNT; run->es && t < FR_TBL_EVERY; t++) {
        if (epoch_writes(run, t) &&
            (rc = run->lake.rest ? fr_tbl_ensure_rest(run->lake.rest, (enum fr_tbl)t)
                                 : fr_tbl_ensure_one(run->cat, (enum fr_tbl)t)) < 0) {
            fr_error("process", "catalog: %s (%s) %s", fr_strerror(rc), fr_err_name(rc),
                     fr_ice_errmsg());
            goto cleanup;
        }
    }
    for (int t = 0; t < FR_TBL_EVERY; t++) {
        if (!epoch_writes(run, t)) {
            continue;
        }
        struct fr_ice_table *table = NULL;
        rc = fr_lake_table(&run->lake, fr_tbl_name(t), &table);
        if (rc < 0) {
            fr_error("process", "table %s: %s %s", fr_tbl_name(t), fr_strerror(rc),
                     fr_ice_errmsg());
            goto cleanup;
        }
        snprintf(run->table_dir[t], sizeof run->table_dir[t], "%s", fr_ice_table_dir(table));
        fr_ice_table_free(table);
    }

    struct fr_proc_opts popts;
    fr_maint_proc_opts(conf, &popts);
    rc = fr_proc_create(&popts, &run->proc);
    if (rc < 0) {
        fr_error("process", "operators: %s", fr_strerror(rc));
        goto cleanup;
    }
    run->ahead_min = conf->process_decode_ahead_records;
    if (run->ahead_min > 0) {
        rc = fr_ahead_create(&popts.gate, &run->ahead);
        if (rc < 0) {
            fr_error("process", "decode ahead: %s", fr_strerror(rc));
            goto cleanup;
        }
    }

    if (fr_ckm_open(conf, run->pipe, &run->ckm) < 0 || fr_ckm_pull(run->ckm, run->dir) < 0) {
        goto cleanup;
    }
    rc = fr_ck_load(run->dir, &run->ck);
    if ((rc == FR_OK || rc == FR_ENOTFOUND) &&
        lake_at_start(run, rc == FR_OK ? run->ck.epoch : -1) < 0) {
        goto cleanup;
    }
    if (rc == FR_OK) {
        rc = fr_proc_load(run->proc, run->ck.state.data, run->ck.state.len);
        fr_buf_free(&run->ck.state); /* loaded: checkpoints stream the state (ADR 0023) */
        if (rc < 0) {
            fr_error("process", "checkpoint state in %s is unusable: %s", run->dir,
                     fr_strerror(rc));
            goto cleanup;
        }
        run->nparts = run->ck.nparts;
        fr_info("process", "resuming after epoch %" PRId64, run->ck.epoch);
    } else if (rc == FR_ENOTFOUND) {
        run->ck.epoch = -1;
        run->ck.nparts = 0;
        fr_info("process", "no checkpoint: starting at the beginning of the log");
    } else {
        fr_error("process",
                 "checkpoint in %s is damaged: %s (%s); refusing to guess. To restore it from "
                 "the log, move %s/checkpoint aside and start again: the epochs already in the "
                 "lake are replayed from their recorded ranges, not committed twice (docs/DAMAGE.md)",
                 run->dir, fr_strerror(rc), fr_err_name(rc), run->dir);
        goto cleanup;
    }
    stats_epoch(run, run->ck.epoch, -1, 0);
    if (run->lake_epoch > run->ck.epoch + 1) { /* lake_at_start read the lake's epoch */
        fr_warn("process",
                "the lake holds epochs up to %" PRId64 " but the checkpoint is at %" PRId64
                ": rebuilding the operators' state from the recorded ranges",
                run->lake_epoch, run->ck.epoch);
    }
    /* The enrichment state of the checkpoint's epoch when it is the lake's
     * newest (else the replay of the newer ones loads theirs). */
    if (run->es && run->ck.epoch >= 0 && run->ck.epoch == run->lake_epoch) {
        if (enrich_committed(run, run->ck.epoch, 1) < 0) {
            goto cleanup;
        }
    } else if (run->es && run->ck.epoch > run->lake_epoch) { /* not in the lake (damage) */
        rc = fr_estage_load(run->es, run->ck.epoch);
        if (rc == FR_ENOTFOUND) {
            fr_info("process", "no enrichment state for epoch %" PRId64
                               ": enrichment starts empty", run->ck.epoch);
        } else if (rc < 0) {
            goto cleanup;
        }
    }
    /* A planned epoch the last run did not finish fixes the next range. */
    struct fr_ck_range planned;
    rc = fr_ck_wal_last(run->dir, &planned);
    if (rc == FR_ECORRUPT) {
        goto cleanup; /* named by fr_ck_wal_last: damage, not a torn tail (ADR 0061) */
    }
    int have_plan = rc == FR_OK && planned.epoch == run->ck.epoch + 1;

    if (once) { /* progress over what the log holds now */
        int64_t total = 0, end;
        for (int p = 0, np = ep_discover_partitions(run); p < np; p++) {
            total += ep_partition_end(run, (uint32_t)p, &end) == FR_OK && end > run->ck.next[p]
                         ? end - run->ck.next[p] : 0;
        }
        fr_progress_start(&run->pg, "process", "records", (uint64_t)total);
    }
    while (!ep_process_stop) {
        struct fr_ck_range range;
        if (have_plan) {
            range = planned;
            have_plan = 0;
            rc = lake_plan(run, &range);
            if (rc < 0) {
                goto cleanup;
            }
            fr_info("process", "replaying planned epoch %" PRId64, range.epoch);
        } else {
            /* The WAL did not have it, but the lake may: then its range is
             * the one the marker records, whatever is in the log now. */
            rc = lake_range(run, run->ck.epoch + 1, &range, NULL);
            if (rc < 0) {
                goto cleanup;
            }
            if (rc == 0 && run->ck.epoch + 1 <= run->lake_epoch) {
                fr_error("process",
                         "epoch %" PRId64 " is in the lake but its snapshot (and range) "
                         "has expired: the operators' state cannot be rebuilt; restore "
                         "the checkpoint or run `freshet rebuild`",
                         run->ck.epoch + 1);
                goto cleanup;
            }
            if (rc == 0) {
                rc = ep_plan_epoch(run, &range);
                if (rc == 1) {
                    run->cut_ms = fr_mono_ms(); /* the trigger counts from here */
                }
                if (rc < 0) {
                    fr_error("process",
                             "cannot plan epoch %" PRId64 ": the log's end is unreadable (%s)",
                             run->ck.epoch + 1, fr_strerror(rc));
                    goto cleanup;
                }
                if (rc == 0) {
                    break;
                }
            }
            rc = fr_ck_wal_append(run->dir, &range);
            if (rc < 0) {
                fr_error("process", "epoch %" PRId64 ": offsets WAL %s/offsets.wal: %s (%s)",
                         range.epoch, run->dir, fr_strerror(rc), fr_err_name(rc));
                goto cleanup;
            }
        }
        rc = run_epoch(run, &range);
        if (rc < 0) {
            goto cleanup;
        }
    }
    fr_progress_end(&run->pg);
    status = 0;

cleanup:
    for (uint32_t p = 0; p < FR_CK_MAX_PARTS; p++) {
        fr_log_reader_close(run->readers[p]);
    }
    fr_ahead_destroy(run->ahead);
    fr_estage_free(run->es);
    fr_kafka_free(run->kafka);
    fr_ckm_close(run->ckm);
    fr_stats_close(run->stats);
    fr_proc_destroy(run->proc);
    fr_lake_close(&run->lake); /* the catalog, then its warehouse */
    fr_buf_free(&run->ck.state);
    free(run);
    if (lock_fd >= 0) {
        close(lock_fd);
    }
    return status;
}
