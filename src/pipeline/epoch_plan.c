/*
 * epoch_plan.c — `freshet process`'s planner (epoch.c runs the epochs):
 * PLAN, the range of the next epoch from the checkpoint's offsets to what
 * the log durably holds, cut at process.epoch_max_records or when
 * process.trigger_ms has passed; a shard's idle epochs (its partition
 * quiet for process.idle_timeout_s) and a new shard's start at gold's
 * frontier (docs/SCALEOUT.md). One thread (the epoch loop).
 */
#include "pipeline/epoch_int.h"

#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"
#include "iceberg/iceberg.h"
#include "pipeline/estage.h"
#include "process/process.h"
#include "stats/stats.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- planning */

/* The durable end of partition p into *end. A partition that does not
 * exist (yet) has nothing new (FR_OK, end = the checkpoint); any other
 * failure (a Kafka leader unreachable) is returned, so that the planner
 * waits, or fails under --once, instead of taking it for "nothing new". */
int ep_partition_end(struct proc_run *run, uint32_t p, int64_t *end)
{
    struct fr_log_info info;
    int rc = fr_log_stat_with(run->conf->general_data_dir, TOPIC, (int32_t)p, &run->lopts, &info);
    *end = rc == FR_OK ? info.end_offset : run->ck.next[p];
    return rc == FR_ENOTFOUND ? FR_OK : rc;
}

/* Discover the topic's partitions (ingest creates them). */
int ep_discover_partitions(struct proc_run *run)
{
    return fr_log_partition_count(run->conf->general_data_dir, TOPIC, &run->lopts,
                                  FR_CK_MAX_PARTS);
}

/* The finalizer's frontier: the watermark its newest epoch committed to
 * gold_edits_per_minute (*frontier FR_PROC_WM_NONE when there is none). */
int ep_gold_frontier(struct proc_run *run, int64_t *frontier)
{
    *frontier = FR_PROC_WM_NONE;
    char pipe[FR_PIPE_ID_MAX + 8];
    snprintf(pipe, sizeof pipe, "%s%s", run->conf->general_pipeline_id, FR_PIPE_FINAL_SUFFIX);
    struct fr_ice_table *t = NULL;
    int rc = fr_lake_table(&run->lake, fr_tbl_name(FR_TBL_GOLD_EPM), &t);
    int64_t epoch, snap;
    if (rc == FR_OK && fr_ice_last_epoch(t, pipe, &epoch, &snap) == FR_OK) {
        const struct fr_ice_snapshot *m = fr_maint_marker(t, pipe, epoch);
        const char *w = m ? fr_maint_summary(m, FR_SUMMARY_WATERMARK) : NULL;
        *frontier = w ? strtoll(w, NULL, 10) : FR_PROC_WM_NONE;
    }
    fr_ice_table_free(t);
    return rc == FR_ENOTFOUND ? FR_OK : rc;
}

/*
 * Whether the shard's partition has been idle for process.idle_timeout_s:
 * everything in it consumed and its end unchanged that long (wall time on
 * this process's monotonic clock), and the shard's watermark would move.
 * Each idle epoch restarts the timer, so a quiet partition commits one
 * empty epoch per timeout. ADR 0014, "Idle partitions".
 */
static int shard_idle(struct proc_run *run, int64_t avail, int64_t end)
{
    int64_t timeout = run->conf->process_idle_timeout_s * 1000;
    int64_t now = fr_mono_ms();
    if (avail > 0 || end != run->idle_end || run->idle_ms == 0) {
        run->idle_end = end;
        run->idle_ms = now;
        return 0;
    }
    if (timeout <= 0 || now - run->idle_ms < timeout || run->once) {
        return 0;
    }
    struct fr_proc_stats st;
    fr_proc_stats(run->proc, &st);
    int64_t raise = fr_wall_ms() * 1000 - run->conf->process_lateness_s * 1000000;
    if (st.watermark_us != FR_PROC_WM_NONE && raise <= st.watermark_us) {
        run->idle_ms = now;
        return 0;
    }
    run->idle_ms = now;
    return 1;
}

/* Wait for records and choose the next epoch's range: everything durable
 * when the trigger fires, at most epoch_max_records. Returns 1 with a
 * range, 0 when asked to stop with nothing pending, < 0 under --once when a
 * partition's end cannot be read. */
int ep_plan_epoch(struct proc_run *run, struct fr_ck_range *range)
{
    int64_t t0 = fr_mono_ms();
    int64_t max = run->conf->process_epoch_max_records;
    for (;;) {
        /* New partitions start at offset 0. The checkpoint's partition
         * count is the truth for the ones it covers (it may be ahead of
         * run->nparts after a replayed first epoch). */
        int n = ep_discover_partitions(run);
        if ((uint32_t)n > run->ck.nparts) {
            for (uint32_t p = run->ck.nparts; p < (uint32_t)n; p++) {
                run->ck.next[p] = 0;
            }
            run->ck.nparts = (uint32_t)n;
        }
        run->nparts = run->ck.nparts;
        if (run->shard >= 0 && run->nparts <= (uint32_t)run->shard) {
            /* The shard's partition does not exist (yet): nothing to plan. */
            if (ep_process_stop || run->once) {
                return 0;
            }
            ep_stats_tick(run, 0);
            fr_sleep_ms(200);
            continue;
        }
        int64_t avail = 0;
        int64_t ends[FR_CK_MAX_PARTS];
        int stat_rc = FR_OK;
        for (uint32_t p = 0; p < run->nparts; p++) {
            if (run->shard >= 0 && p != (uint32_t)run->shard) {
                ends[p] = run->ck.next[p]; /* another shard's */
                continue;
            }
            int rc = ep_partition_end(run, p, &ends[p]);
            if (rc < 0 && stat_rc == FR_OK) {
                stat_rc = rc;
                if (run->once || fr_mono_ms() - run->stat_warned_ms >= 10000) {
                    run->stat_warned_ms = fr_mono_ms();
                    fr_warn("process", "partition %u: cannot read the log's end: %s (%s)%s", p,
                            fr_strerror(rc), fr_err_name(rc),
                            run->once ? "" : "; waiting, nothing is planned past it");
                }
            }
            avail += ends[p] - run->ck.next[p];
        }
        if (stat_rc < 0) {
            /* Planning now could cut an epoch without that partition's new
             * records and turn them late: wait for it (or fail under
             * --once) rather than guess. */
            if (run->once) {
                return stat_rc;
            }
            if (ep_process_stop) {
                return 0;
            }
            fr_sleep_ms(200);
            continue;
        }
        ep_stats_tick(run, avail);
        /* The trigger is a fixed rate, counted from the previous cut. */
        int due =
            fr_ck_trigger_left(run->cut_ms, t0, fr_mono_ms(), run->conf->process_trigger_ms) == 0;
        /* Answered lookups are worth an epoch of their own (no records)
         * when nothing else comes: their rows and the windows they settle
         * should not wait for the stream. */
        /* A shard that joins a running pipeline (a partition added to the
         * topic: no epoch of its own anywhere) first commits an empty epoch
         * raising its watermark to gold's frontier, so that its events in
         * windows already emitted are late, not silver (idle_epoch). */
        int64_t joined = FR_PROC_WM_NONE;
        if (run->shard >= 0 && run->ck.epoch == -1 && run->lake_epoch == -1 &&
            !run->join_checked) {
            run->join_checked = 1;
            if (ep_gold_frontier(run, &joined) < 0) {
                joined = FR_PROC_WM_NONE; /* unreadable: planned without it, as before */
            }
        }
        if (run->shard >= 0 &&
            (joined != FR_PROC_WM_NONE || shard_idle(run, avail, ends[run->shard]))) {
            /* An idle epoch: no records, the shard's watermark raised
             * (run_epoch) so that it stops holding the gold frontier. */
            memset(range, 0, sizeof *range);
            range->epoch = run->ck.epoch + 1;
            range->nparts = run->nparts;
            for (uint32_t p = 0; p < run->nparts; p++) {
                range->start[p] = range->end[p] = run->ck.next[p];
            }
            run->idle_planned = 1;
            return 1;
        }
        run->idle_planned = 0;
        int answers = run->es && fr_estage_answered(run->es) > 0;
        int all_answered = answers && fr_estage_waiting(run->es) == 0;
        if (avail >= max || (avail > 0 && (due || ep_process_stop || run->once)) ||
            (answers && (due || ep_process_stop || (run->once && all_answered)))) {
            range->epoch = run->ck.epoch + 1;
            range->nparts = run->nparts;
            /* Share the record budget evenly between the partitions, then
             * give what some could not use to the others, so that no
             * partition's records run ahead of the rest (read_range merges
             * them by append time). */
            int64_t budget = max;
            int64_t share = max / (run->shard >= 0 ? 1 : (int64_t)run->nparts);
            if (share < 1) {
                share = 1;
            }
            for (uint32_t p = 0; p < run->nparts; p++) {
                int64_t take = ends[p] - run->ck.next[p];
                if (take > share) {
                    take = share;
                }
                if (take > budget) {
                    take = budget;
                }
                budget -= take;
                range->start[p] = run->ck.next[p];
                range->end[p] = run->ck.next[p] + take;
            }
            for (uint32_t p = 0; p < run->nparts && budget > 0; p++) {
                int64_t more = ends[p] - range->end[p];
                if (more > budget) {
                    more = budget;
                }
                range->end[p] += more;
                budget -= more;
            }
            return 1;
        }
        /* --once drains the log, then waits for the lookups still out
         * (each ends resolved, no item or failed after enrich.max_attempts). */
        if (ep_process_stop || (run->once && !(run->es && fr_estage_waiting(run->es) > 0))) {
            return 0;
        }
        int nap = avail > 0 ? 10 : 20;
        if (run->es) {
            /* Lookups move while the planner waits; the poll returns at once
             * when the client has nothing in flight, so sleep out the rest
             * (else this loop would spin until the trigger). */
            int64_t w0 = fr_mono_ms();
            int rc = fr_estage_pump(run->es, nap);
            if (rc < 0) {
                fr_error("process", "enrichment client: %s", fr_strerror(rc));
                return rc;
            }
            int64_t left = nap - (fr_mono_ms() - w0);
            if (left > 0) {
                fr_sleep_ms(left);
            }
        } else {
            fr_sleep_ms(nap);
        }
    }
}

