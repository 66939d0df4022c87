/*
 * summary.c — the pipeline in a few figures, from the stats files: what
 * `freshet status` prints, what `up` and `demo` say every 10 s, and what
 * `freshet serve` keeps in its chart history (stats.h, "Summary").
 *
 * The process stage is the single processor's file or, in the scale-out
 * mode, the group's totals (group.c), chosen as serve chooses
 * (fr_stats_group_active), so every reader agrees on one answer. Rates are
 * counter increases between two snapshots over the monotonic time between
 * their reads, as fr_stats_render_rates computes them; freshness and
 * watermark lag are measured against the caller's clock (now_ms), so they
 * keep growing while the processor is stopped.
 *
 * Pure functions over snapshots the caller owns, except
 * fr_stats_read_pipeline (reads files). Any thread.
 */
#include "stats/stats.h"

#include "core/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int fr_stats_read_pipeline(const char *data_dir, int64_t now_ms, struct fr_stats_snap *ingest,
                           struct fr_stats_snap *process, struct fr_stats_group **group)
{
    *group = NULL;
    int rc = fr_stats_read(data_dir, FR_STATS_INGEST, ingest);
    if (rc < 0 && rc != FR_ENOTFOUND) {
        memset(ingest, 0, sizeof *ingest); /* another build's or damaged: down */
        ingest->stage = FR_STATS_INGEST;
    }
    rc = fr_stats_read(data_dir, FR_STATS_PROCESS, process);
    if (rc < 0 && rc != FR_ENOTFOUND) {
        memset(process, 0, sizeof *process);
        process->stage = FR_STATS_PROCESS;
    }
    struct fr_stats_group *g = malloc(sizeof *g);
    if (!g) {
        return FR_ENOMEM;
    }
    if (fr_stats_group_read(data_dir, g) == FR_OK && fr_stats_group_active(g, process)) {
        fr_stats_group_total(g, now_ms, process);
        *group = g;
        return FR_OK;
    }
    free(g);
    return FR_OK;
}

double fr_stats_rate(const struct fr_stats_snap *now, const struct fr_stats_snap *old,
                     enum fr_stats_id id, int label)
{
    if (!now || !old || !now->present || !old->present) {
        return NAN;
    }
    double dt = (double)(now->read_mono_ns - old->read_mono_ns) / 1e9;
    const struct fr_stats_meta *m = fr_stats_meta(id);
    if (dt <= 0 || !m || m->type != FR_STATS_COUNTER) {
        return NAN;
    }
    double inc = 0;
    for (unsigned l = 0; l < m->nlabels; l++) {
        if (label >= 0 && (unsigned)label != l) {
            continue;
        }
        uint64_t a = now->slots[m->slot + l], b = old->slots[m->slot + l];
        /* A counter that went down was reset (layout change): count from 0. */
        inc += a >= b ? (double)(a - b) : (double)a;
    }
    return round(inc / dt * 1000.0) / 1000.0;
}

static uint64_t summary_sum(const struct fr_stats_snap *snap, enum fr_stats_id id)
{
    const struct fr_stats_meta *m = fr_stats_meta(id);
    uint64_t total = 0;
    for (unsigned l = 0; l < m->nlabels; l++) {
        total += fr_stats_snap_counter(snap, id, l);
    }
    return total;
}

void fr_stats_summarize(const struct fr_stats_snap *ingest, const struct fr_stats_snap *process,
                        const struct fr_stats_snap *old_ingest,
                        const struct fr_stats_snap *old_process, int64_t now_ms,
                        struct fr_stats_summary *sum)
{
    memset(sum, 0, sizeof *sum);
    sum->now_ms = now_ms;
    const struct fr_stats_snap *snaps[2] = {ingest, process};
    for (int s = 0; s < 2; s++) {
        const struct fr_stats_snap *snap = snaps[s];
        sum->stage[s].present = snap->present;
        sum->stage[s].up = fr_stats_snap_up(snap, now_ms);
        sum->stage[s].pid = snap->present ? snap->pid : 0;
        sum->stage[s].started_ms = snap->present ? snap->started_ms : 0;
        sum->stage[s].heartbeat_ms = snap->present ? snap->heartbeat_ms : 0;
    }
    sum->events_rate = fr_stats_rate(ingest, old_ingest, FR_STATS_INGEST_EVENTS, -1);
    sum->records_rate = fr_stats_rate(process, old_process, FR_STATS_PROC_RECORDS, -1);
    sum->silver_rate = fr_stats_rate(process, old_process, FR_STATS_PROC_RECORDS, 0);
    sum->duplicate_rate = fr_stats_rate(process, old_process, FR_STATS_PROC_RECORDS, 1);
    sum->late_rate = fr_stats_rate(process, old_process, FR_STATS_PROC_RECORDS, 2);
    sum->dlq_rate = fr_stats_rate(process, old_process, FR_STATS_PROC_RECORDS, 3);

    sum->events = fr_stats_snap_counter(ingest, FR_STATS_INGEST_EVENTS, 0);
    sum->log_records = fr_stats_snap_counter(ingest, FR_STATS_INGEST_LOG_RECORDS, 0);
    sum->records = summary_sum(process, FR_STATS_PROC_RECORDS);
    sum->silver = fr_stats_snap_counter(process, FR_STATS_PROC_RECORDS, 0);
    sum->duplicates = fr_stats_snap_counter(process, FR_STATS_PROC_RECORDS, 1);
    sum->late = fr_stats_snap_counter(process, FR_STATS_PROC_RECORDS, 2);
    sum->dlq = fr_stats_snap_counter(process, FR_STATS_PROC_RECORDS, 3);
    sum->epochs = fr_stats_snap_counter(process, FR_STATS_PROC_EPOCHS, 0);
    sum->enrich_edits = summary_sum(process, FR_STATS_PROC_ENRICH_EDITS);
    for (unsigned l = 0; l < FR_STATS_NLAB_LABEL; l++) {
        sum->labels[l] = fr_stats_snap_counter(process, FR_STATS_PROC_ENRICH_LABELS, l);
    }
    sum->last_epoch = fr_stats_snap_gauge(process, FR_STATS_PROC_LAST_EPOCH, 0);

    double now_s = (double)now_ms / 1000.0;
    double newest = fr_stats_snap_gauge(process, FR_STATS_PROC_NEWEST, 0);
    sum->freshness_s = !isnan(newest) ? fmax(0, now_s - newest)
                                      : fr_stats_snap_gauge(process, FR_STATS_PROC_FRESHNESS, 0);
    double wm = fr_stats_snap_gauge(process, FR_STATS_PROC_WATERMARK, 0);
    sum->watermark_s = wm;
    sum->watermark_lag_s =
        !isnan(wm) ? fmax(0, now_s - wm) : fr_stats_snap_gauge(process, FR_STATS_PROC_WM_LAG, 0);
    sum->offsets_behind = fr_stats_snap_gauge(process, FR_STATS_PROC_BEHIND, 0);
    sum->batch_s = fr_stats_snap_gauge(process, FR_STATS_PROC_LAST_BATCH, 0);
    sum->trigger_s = fr_stats_snap_gauge(process, FR_STATS_PROC_TRIGGER, 0);
    sum->commit_s = fr_stats_snap_gauge(process, FR_STATS_PROC_LAST_COMMIT, 0);
    if (!process->present) { /* no file: no value, not zeros */
        sum->last_epoch = sum->freshness_s = sum->watermark_s = sum->watermark_lag_s = NAN;
        sum->offsets_behind = sum->batch_s = sum->trigger_s = sum->commit_s = NAN;
    }
}
