/*
 * rebuild.c — `freshet rebuild`: silver_recentchange, late_arrivals and
 * both gold tables recomputed from bronze under the current policy
 * (process.lateness_s and the gate's limits) and committed as one
 * overwrite; bronze and dlq are not touched. docs/REBUILD.md is the user's
 * page. The log-ordered scan, the progress meter and the lock it uses are
 * in maint.c, shared with dlq.c.
 *
 * A rebuild, as a state machine (a crash at any arrow leaves the tables at
 * their old snapshot, or at the new one with the old checkpoint; a rerun
 * repairs either):
 *
 *   LOCK ──► CHECK ──► INTENT ──► REPLAY ──► FILES ──► COMMIT ──► CHECKPOINT ──► DONE
 *    │         │          │          │                    │            │
 *    │         │          │          │                    │            └ same epoch and
 *    │         │          │          │                    │              offsets, the new
 *    │         │          │          │                    │              operator state
 *    │         │          │          │                    └ ONE catalog transaction:
 *    │         │          │          │                      overwrite of the four tables
 *    │         │          │          │                      (REST: one POST, maint_rest.c;
 *    │         │          │          │                      unknown outcome: files and
 *    │         │          │          │                      intent kept for the rerun)
 *    │         │          │          └ bronze in log order through a fresh fr_proc
 *    │         │          │            (rows the gate now rejects: counted, left out),
 *    │         │          │            then the dlq's rejects for the counters
 *    │         │          └ rebuild.intent names this rebuild's id, so a rerun
 *    │         │            removes the files of an attempt that never committed
 *    │         └ finish or undo a crashed dlq replay; the bronze cut (epoch L)
 *    │           and the checkpoint it continues from
 *    └ fr_ck_lock: the processor, a dlq replay or another rebuild holds it: refuse
 *
 * Invariants:
 *   1. Bronze and dlq are read at one snapshot each and never written.
 *   2. The four overwrites land in one transaction or none does; the
 *      snapshot summaries carry freshet.rebuild=<id> and the bronze cut
 *      (freshet.rebuild-epoch), never the epoch marker.
 *   3. The checkpoint is written only after the commit, with the epoch
 *      and offsets of the bronze cut, so the processor continues right
 *      after the records the rebuild covered, with the state they left.
 *
 * One thread. Memory: the scan's budget (--memory-mb) plus one row group
 * per output table plus the operators' capped state.
 */
#include "pipeline/rebuild_int.h"

#include "pipeline/lake.h"

#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"
#include "core/fsutil.h"
#include "core/progress.h"
#include "pipeline/checkpoint.h"
#include "process/process.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STATE_CAP ((size_t)1 << 30)
#define RB_DEFAULT_QUIET_S 30
#define RAW_CAP ((size_t)64 << 20) /* process.max_event_bytes at most */

/* ================================================================ rebuild */

static void rb_crash_point(const struct rb *rb, const char *step)
{
    if (rb->crash_after && strcmp(rb->crash_after, step) == 0) {
        fprintf(stderr, "freshet rebuild: --crash-after %s: exiting as if killed\n", step);
        _exit(3);
    }
}

const enum fr_tbl rb_tbl[RB_NOUT] = {FR_TBL_SILVER, FR_TBL_LATE, FR_TBL_GOLD_EPM, FR_TBL_GOLD_TOP};

/* The writer the next row of o goes to (a new file every file_rows rows). */
int rb_tw(struct rb *rb, int which, struct fr_tw **tw)
{
    struct rb_out *o = &rb->out[which];
    if (o->n && o->tw[o->n - 1]->rows < rb->file_rows) {
        *tw = o->tw[o->n - 1];
        return FR_OK;
    }
    if (o->n) {
        int rc = fr_tw_finish(o->tw[o->n - 1]);
        if (rc < 0) {
            return rc;
        }
    }
    if (o->n == RB_MAX_FILES) {
        return FR_ETOOBIG;
    }
    struct fr_tw *t = malloc(sizeof *t);
    if (!t) {
        return FR_ENOMEM;
    }
    char rel[512];
    snprintf(rel, sizeof rel, "data/%s-rebuild-%s-%05u.parquet", rb->conf->general_pipeline_id,
             rb->id, o->n);
    fr_tw_init_named(t, rb_tbl[which], o->table_dir, rel,
                     (size_t)rb->conf->process_row_group_bytes);
    t->lake = &rb->lake;
    o->tw[o->n++] = t;
    *tw = t;
    return FR_OK;
}

int rb_minute(void *arg, const struct fr_win_row *row)
{
    struct rb *rb = arg;
    struct fr_tw *tw;
    int rc = rb_tw(rb, RB_EPM, &tw);
    rc = rc ? rc : fr_tw_gold_epm(tw, row);
    rb->out[RB_EPM].rows += rc == FR_OK;
    return rc;
}

int rb_top(void *arg, const struct fr_top_row *row)
{
    struct rb *rb = arg;
    struct fr_tw *tw;
    int rc = rb_tw(rb, RB_TOP, &tw);
    rc = rc ? rc : fr_tw_gold_top(tw, row);
    rb->out[RB_TOP].rows += rc == FR_OK;
    return rc;
}

static const struct fr_proc_sink rb_sink = {rb_minute, rb_top};
static const struct fr_proc_sink rb_no_sink = {NULL, NULL};

/* Release every writer; on failure also remove the files already closed. */
static void rb_out_release(struct rb *rb, int failed)
{
    for (int k = 0; k < RB_NOUT; k++) {
        struct rb_out *o = &rb->out[k];
        for (uint32_t i = 0; i < o->n; i++) {
            if (failed && o->tw[i]->finished && o->tw[i]->rows) {
                unlink(o->tw[i]->path);
            }
            fr_tw_abort(o->tw[i]);
            free(o->tw[i]);
        }
        o->n = 0;
    }
}

/* Bronze in log order through the operators. */
static int rb_replay_bronze(struct rb *rb, const struct fr_ice_file_list *files)
{
    char spill[4200];
    snprintf(spill, sizeof spill, "%s/rebuild-spill", rb->dir);
    struct fr_lscan_opts lopts = {FR_TBL_BRONZE, rb->memory_bytes, spill, &rb->lake};
    struct fr_lscan *ls = NULL;
    int rc = fr_lscan_open(files, &lopts, &ls);
    struct fr_lscan_row lr;
    while (rc == FR_OK && (rc = fr_lscan_next(ls, &lr)) == 1) {
        rc = FR_OK;
        struct fr_proc_pos pos = {lr.partition, lr.offset, lr.ingest_us / 1000};
        struct fr_proc_result res;
        /* a group's rows go through their partition's shard, whose gold
         * windows are partial (dropped): gold is the finalizer's */
        struct fr_proc *proc = rb->group ? rb_group_proc(rb, lr.partition) : rb->proc;
        if (proc && rb->group) {
            rc = rb_group_before_row(rb, lr.partition, lr.offset);
        }
        rc = !proc ? FR_ESTATE
             : rc  ? rc
                   : fr_proc_record(proc, &pos, lr.raw, lr.raw_len,
                                    rb->group ? &rb_no_sink : &rb_sink, rb, &res);
        if (rc < 0) {
            fr_error("rebuild", "bronze row %d:%" PRId64 ": operators failed: %s", lr.partition,
                     lr.offset, fr_strerror(rc));
            break;
        }
        rb->bronze_rows++;
        struct fr_tw *tw;
        switch (res.outcome) {
        case FR_PROC_REJECTED:
            rb->rejected++;
            rb->rejected_by[res.reason]++;
            break;
        case FR_PROC_DUPLICATE:
            rb->duplicates++;
            break;
        case FR_PROC_LATE:
            rc = rb_tw(rb, RB_LATE, &tw);
            rc = rc ? rc : fr_tw_late(tw, res.row, res.watermark_us, res.lateness_us);
            rb->out[RB_LATE].rows++;
            break;
        case FR_PROC_SILVER:
            rc = rb_tw(rb, RB_SILVER, &tw);
            rc = rc ? rc : fr_tw_silver(tw, res.row);
            rc = rc || !rb->group ? rc : rb_group_silver(rb, res.row);
            rb->out[RB_SILVER].rows++;
            break;
        }
        fr_progress_tick(&rb->pg, ++rb->done);
    }
    if (rc < 0) {
        fr_error("rebuild", "reading bronze: %s %s", fr_strerror(rc), fr_pq_errmsg());
    }
    if (ls) {
        fr_lscan_stats(ls, &rb->scan);
    }
    fr_lscan_free(ls);
    return rc < 0 ? rc : FR_OK;
}

/* The dlq's records that the current gate still rejects, through the
 * operators for their counters (a rejected record changes nothing else),
 * so that an unchanged policy reproduces the processor's state byte for
 * byte. Dead letters the gate now accepts are counted, not processed:
 * that is `freshet dlq replay`'s job. */
static int rb_count_dlq(struct rb *rb, const struct fr_ice_file_list *files)
{
    char spill[4200];
    snprintf(spill, sizeof spill, "%s/rebuild-spill", rb->dir);
    struct fr_lscan_opts lopts = {FR_TBL_DLQ, rb->memory_bytes, spill, &rb->lake};
    struct fr_lscan *ls = NULL;
    struct fr_buf bytes;
    fr_buf_init(&bytes, RAW_CAP * 2);
    int rc = fr_lscan_open(files, &lopts, &ls);
    struct fr_lscan_row lr;
    while (rc == FR_OK && (rc = fr_lscan_next(ls, &lr)) == 1) {
        const char *raw = lr.raw;
        size_t len = lr.raw_len;
        if (lr.b64) {
            fr_buf_reset(&bytes);
            rc = fr_maint_unbase64(lr.raw, lr.raw_len, &bytes);
            if (rc < 0) {
                fr_error("rebuild", "dlq row %d:%" PRId64 ": raw_base64 does not decode",
                         lr.partition, lr.offset);
                break;
            }
            raw = (const char *)bytes.data;
            len = bytes.len;
        }
        struct fr_proc_pos pos = {lr.partition, lr.offset, lr.ingest_us / 1000};
        struct fr_row row;
        char detail[FR_GATE_DETAIL_MAX];
        rc = FR_OK;
        if (fr_gate_decode(rb->gate, &pos, raw, len, &row, detail) == FR_GATE_OK) {
            rb->dlq_now_valid++;
        } else {
            struct fr_proc_result res;
            struct fr_proc *proc = rb->group ? rb_group_proc(rb, lr.partition) : rb->proc;
            rc = !proc ? FR_ESTATE
                       : fr_proc_record(proc, &pos, raw, len, rb->group ? &rb_no_sink : &rb_sink,
                                        rb, &res);
            rb->dlq_rejected++;
            if (rc == FR_OK && res.outcome != FR_PROC_REJECTED) {
                rc = FR_ESTATE; /* the two gates disagree: a bug */
            }
        }
        fr_progress_tick(&rb->pg, ++rb->done);
    }
    if (rc < 0) {
        fr_error("rebuild", "reading dlq: %s %s", fr_strerror(rc), fr_pq_errmsg());
    }
    fr_buf_free(&bytes);
    fr_lscan_free(ls);
    return rc < 0 ? rc : FR_OK;
}

/* "recentchange/0:100-200,recentchange/1:7-9": the end offsets. */
static int rb_parse_offsets(const char *text, struct fr_ck *ck)
{
    const char *p = text;
    while (p && *p) {
        const char *slash = strchr(p, '/');
        if (!slash) {
            return FR_ECORRUPT;
        }
        char *end;
        errno = 0;
        long part = strtol(slash + 1, &end, 10);
        if (*end != ':' || part < 0 || part >= FR_CK_MAX_PARTS) {
            return FR_ECORRUPT;
        }
        strtoll(end + 1, &end, 10);
        if (*end != '-') {
            return FR_ECORRUPT;
        }
        long long hi = strtoll(end + 1, &end, 10);
        if ((*end != ',' && *end != 0) || errno || hi < 0) {
            return FR_ECORRUPT;
        }
        if ((uint32_t)part >= ck->nparts) {
            for (uint32_t q = ck->nparts; q <= (uint32_t)part; q++) {
                ck->next[q] = 0;
            }
            ck->nparts = (uint32_t)part + 1;
        }
        ck->next[part] = hi;
        p = *end ? end + 1 : end;
    }
    return FR_OK;
}

/* The bronze cut and the checkpoint the rebuilt state continues from. */
static int rb_cut(struct rb *rb, struct fr_ice_table *bronze)
{
    int64_t snap;
    int rc = fr_ice_last_epoch(bronze, rb->conf->general_pipeline_id, &rb->cut_epoch, &snap);
    if (rc == FR_ENOTFOUND) {
        printf("rebuild: nothing to rebuild (bronze holds no epoch of pipeline %s)\n",
               rb->conf->general_pipeline_id);
        return rc;
    }
    rc = fr_ck_load(rb->dir, &rb->ck);
    if (rc == FR_ENOTFOUND) {
        rb->ck.epoch = -1;
        rb->ck.nparts = 0;
    } else if (rc < 0) {
        fr_error("rebuild", "checkpoint in %s is damaged: %s; refusing to guess", rb->dir,
                 fr_strerror(rc));
        return rc;
    }
    if (rb->ck.epoch > rb->cut_epoch) {
        fr_error("rebuild",
                 "the checkpoint is at epoch %" PRId64 " but bronze ends at epoch %" PRId64
                 ": the lake lost epochs; refusing",
                 rb->ck.epoch, rb->cut_epoch);
        return FR_ESTATE;
    }
    if (rb->ck.epoch < rb->cut_epoch) {
        /* The processor committed epochs it did not checkpoint: the
         * rebuilt state covers them, so the checkpoint moves to the cut. */
        uint32_t n;
        const struct fr_ice_snapshot *snaps = fr_ice_table_snapshots(bronze, &n);
        const char *offsets = NULL;
        for (uint32_t i = 0; i < n; i++) {
            if (snaps[i].snapshot_id == snap) {
                offsets = fr_maint_summary(&snaps[i], FR_ICE_SUMMARY_OFFSETS);
            }
        }
        if (!offsets || rb_parse_offsets(offsets, &rb->ck) < 0) {
            fr_error("rebuild", "bronze's epoch %" PRId64 " carries no readable %s", rb->cut_epoch,
                     FR_ICE_SUMMARY_OFFSETS);
            return FR_ECORRUPT;
        }
        fr_info("rebuild",
                "the lake holds epochs up to %" PRId64 ", the checkpoint %" PRId64
                ": the new checkpoint covers the lake",
                rb->cut_epoch, rb->ck.epoch);
        rb->ck.epoch = rb->cut_epoch;
    }
    return FR_OK;
}

/* Remove the files of a rebuild that crashed before its commit. */
static int rb_forget_crashed(struct rb *rb)
{
    char path[4200], text[64] = "";
    snprintf(path, sizeof path, "%s/rebuild.intent", rb->dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        return FR_OK;
    }
    if (!fgets(text, sizeof text, f)) {
        text[0] = 0;
    }
    fclose(f);
    text[strcspn(text, "\n")] = 0;
    int committed =
        text[0] ? fr_maint_has_marker(&rb->lake, FR_TBL_SILVER, FR_SUMMARY_REBUILD, text) : 0;
    if (committed < 0) {
        return committed;
    }
    if (!committed && text[0]) {
        char prefix[256];
        snprintf(prefix, sizeof prefix, "%s-rebuild-%s-", rb->conf->general_pipeline_id, text);
        unsigned removed = 0;
        for (int k = 0; k < RB_NOUT; k++) {
            int rc = fr_maint_remove_prefixed(&rb->lake, rb_tbl[k], prefix, &removed);
            if (rc < 0) {
                return rc;
            }
        }
        fr_info("rebuild", "rebuild %s crashed before its commit: removed its %u files", text,
                removed);
    }
    return unlink(path) == 0 || errno == ENOENT ? FR_OK : fr_err_from_errno(errno);
}

static int rb_commit(struct rb *rb, int64_t watermark_us)
{
    char wm[32], epoch[32], late[32], rejected[32], source[32];
    snprintf(wm, sizeof wm, "%" PRId64, watermark_us);
    snprintf(epoch, sizeof epoch, "%" PRId64, rb->cut_epoch);
    snprintf(late, sizeof late, "%" PRId64, rb->conf->process_lateness_s);
    snprintf(rejected, sizeof rejected, "%" PRIu64, rb->rejected);
    snprintf(source, sizeof source, "%" PRId64, rb->bronze_snapshot);
    struct fr_ice_kv props[] = {
        {FR_SUMMARY_REBUILD, rb->id},
        {FR_SUMMARY_REBUILD_EPOCH, epoch},
        {FR_SUMMARY_REBUILD_LATENESS, late},
        {FR_SUMMARY_REBUILD_REJECTED, rejected},
        {"freshet.rebuild-bronze-snapshot", source},
        {FR_SUMMARY_WATERMARK, wm},
    };
    struct fr_ice_commit_info info = {NULL, -1, NULL, props, sizeof props / sizeof props[0]};
    /* with a REST catalog each table's files are kept apart (one
     * allocation per table) and committed together below */
    struct fr_ice_data_file *files = calloc((size_t)RB_MAX_FILES * RB_NOUT, sizeof *files);
    struct fr_lake_append apps[RB_NOUT];
    struct fr_ice_txn *txn = NULL;
    /* A shard or finalizer that committed since the start makes it a
     * group's lake: refused inside the swap (ADR 0045; the SQLite catalog's
     * transaction; through REST the start's check stands). */
    struct fr_maint_group group = {.pipeline_id = rb->conf->general_pipeline_id};
    int rc = !files ? FR_ENOMEM : rb->lake.rest ? FR_OK : fr_ice_txn_begin(rb->cat, &txn);
    if (rc == FR_OK && txn && !rb->group) {
        fr_ice_txn_guard(txn, fr_maint_group_guard, &group);
    }
    for (int k = 0; rc == FR_OK && k < RB_NOUT; k++) {
        struct rb_out *o = &rb->out[k];
        uint32_t n = 0;
        if (o->n) {
            rc = fr_tw_finish(o->tw[o->n - 1]);
        }
        struct fr_ice_data_file *mine = files + (size_t)k * RB_MAX_FILES;
        for (uint32_t i = 0; rc == FR_OK && i < o->n; i++) {
            if (o->tw[i]->rows) {
                mine[n++] = o->tw[i]->file;
            }
        }
        apps[k] = (struct fr_lake_append){fr_tbl_name(rb_tbl[k]), mine, n};
        if (rc == FR_OK && txn) {
            rc = fr_ice_txn_overwrite(txn, FR_NS, fr_tbl_name(rb_tbl[k]), mine, n, &info);
        }
    }
    if (rc == FR_OK) {
        rb_crash_point(rb, "files");
        struct fr_ice_commit_result res;
        rc = txn ? fr_ice_txn_commit(txn, &res)
                 : fr_maint_commit_rest(&rb->lake, apps, RB_NOUT, 1, &info, "rebuild");
        rb->unknown = rc == FR_EUNKNOWN;
    }
    if (rc < 0 && group.found[0]) {
        fr_maint_group_refused("rebuild", &group);
    } else if (rc < 0) {
        fr_error("rebuild", "commit failed: %s (%s) %s %s", fr_strerror(rc), fr_err_name(rc),
                 fr_ice_errmsg(), fr_pq_errmsg());
    }
    fr_ice_txn_free(txn);
    free(files);
    return rc;
}

static void rb_report(struct rb *rb, int64_t ms, int64_t watermark_us)
{
    char wm[32] = "none";
    if (watermark_us != FR_PROC_WM_NONE) {
        fr_time_format_ms(watermark_us, wm);
    }
    printf("rebuild %s: %" PRIu64 " bronze rows (epochs up to %" PRId64 ") under lateness %" PRId64
           " s in %.1f s\n",
           rb->id, rb->bronze_rows, rb->cut_epoch, rb->conf->process_lateness_s,
           (double)ms / 1000.0);
    for (int k = 0; k < RB_NOUT; k++) {
        printf("  %-22s %10" PRId64 " -> %10" PRIu64 " rows\n", fr_tbl_name(rb_tbl[k]),
               rb->out[k].old_rows, rb->out[k].rows);
    }
    printf("  duplicates %" PRIu64 "; bronze rows the gate now rejects %" PRIu64, rb->duplicates,
           rb->rejected);
    const char *sep = " (";
    for (int r = 1; r < FR_GATE_REASON_COUNT; r++) {
        if (rb->rejected_by[r]) {
            printf("%s%s %" PRIu64, sep, fr_gate_reason_name((enum fr_gate_reason)r),
                   rb->rejected_by[r]);
            sep = ", ";
        }
    }
    printf("%s\n", rb->rejected ? ")" : "");
    printf("  dlq rows: %" PRIu64 " still rejected, %" PRIu64
           " accepted by the current gate (land them with `freshet dlq replay`)\n",
           rb->dlq_rejected, rb->dlq_now_valid);
    printf("  bronze read in log order from %" PRIu32 " files, %zu bytes buffered at most",
           rb->scan.files, rb->scan.peak_bytes);
    if (rb->scan.spilled_runs) {
        printf(", sorted through %" PRIu32 " run files", rb->scan.spilled_runs);
    }
    printf("\n");
    printf("  watermark %s; checkpoint: epoch %" PRId64 ", operator state %zu bytes\n", wm,
           rb->ck.epoch, rb->ck.state.len);
}

static void rebuild_usage(FILE *out)
{
    fprintf(out,
            "usage: freshet rebuild [--memory-mb N] [--file-rows N] [--crash-after STEP]\n\n"
            "Recompute silver_recentchange, late_arrivals, gold_edits_per_minute and\n"
            "gold_top_pages from bronze_recentchange under the current policy\n"
            "(process.lateness_s, process.max_future_s, process.max_event_bytes), and commit\n"
            "them as one atomic overwrite; bronze and dlq are not touched. Bronze is replayed\n"
            "in log order (ingest time, partition, offset). Then the processor checkpoint is\n"
            "rewritten with the same epoch and offsets and the operator state the replay\n"
            "left, so `freshet process` continues under the new policy (run it with the\n"
            "same configuration). See docs/REBUILD.md.\n\n"
            "The processor must not run: stop `freshet up` (or `freshet process`) first;\n"
            "rebuild takes the pipeline lock and refuses while another process holds it.\n"
            "A rebuild that is killed leaves the tables as they were; run it again.\n\n"
            "On a consumer group's lake (process --group, its shards and finalizer) it\n"
            "rebuilds every shard and gold, and rewrites every member's checkpoint (here\n"
            "and in process.checkpoint_uri's bucket): stop the whole group first; it\n"
            "refuses while a member committed within --quiet-s, and fences the members'\n"
            "next epochs in the catalog (docs/REBUILD.md).\n\n"
            "  --memory-mb N    rows buffered to put overlapping files in log order before\n"
            "                   sorting through run files on disk (default %d, 1..65536)\n"
            "  --file-rows N    rows per data file written (default %d)\n"
            "  --quiet-s N      a group's lake: every member silent this long (default 30)\n"
            "  --crash-after S  testing: exit(3) right after step S (files: data files\n"
            "                   written, before the commit; fence: a group's fences\n"
            "                   committed; commit: committed, before the checkpoint)\n"
            "Progress: one updating line on a terminal, a log line every 5 s otherwise.\n",
            RB_DEFAULT_MB, RB_DEFAULT_FILE_ROWS);
}

int fr_cmd_rebuild(struct fr_conf *conf, int argc, char **argv)
{
    static const struct option opts[] = {{"memory-mb", required_argument, 0, 'm'},
                                         {"file-rows", required_argument, 0, 'r'},
                                         {"crash-after", required_argument, 0, 'C'},
                                         {"quiet-s", required_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    long long mb = RB_DEFAULT_MB, file_rows = RB_DEFAULT_FILE_ROWS, quiet_s = RB_DEFAULT_QUIET_S;
    const char *crash_after = NULL;
    int c;
    char *end;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'm':
            mb = strtoll(optarg, &end, 10);
            if (*end || mb < 1 || mb > 65536) {
                fprintf(stderr, "freshet rebuild: --memory-mb takes 1..65536\n");
                return 2;
            }
            break;
        case 'r':
            file_rows = strtoll(optarg, &end, 10);
            if (*end || file_rows < 1 || file_rows > 1000000000) {
                fprintf(stderr, "freshet rebuild: --file-rows takes 1..1000000000\n");
                return 2;
            }
            break;
        case 'q':
            quiet_s = strtoll(optarg, &end, 10);
            if (*end || quiet_s < 0 || quiet_s > 86400) {
                fprintf(stderr, "freshet rebuild: --quiet-s takes 0..86400\n");
                return 2;
            }
            break;
        case 'C':
            if (strcmp(optarg, "files") != 0 && strcmp(optarg, "fence") != 0 &&
                strcmp(optarg, "commit") != 0) {
                fprintf(stderr, "freshet rebuild: --crash-after takes files, fence or commit\n");
                return 2;
            }
            crash_after = optarg;
            break;
        case 'h':
            rebuild_usage(stdout);
            return 0;
        default:
            rebuild_usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "freshet rebuild: unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }
    struct rb *rb = calloc(1, sizeof *rb);
    if (!rb) {
        return 1;
    }
    int status = 1;
    int rc;
    int lock_fd = -1;
    struct fr_ice_table *bronze = NULL;
    struct fr_ice_file_list bronze_files = {0}, dlq_files = {0};
    rb->conf = conf;
    rb->crash_after = crash_after;
    rb->memory_bytes = (size_t)mb << 20;
    rb->file_rows = (uint64_t)file_rows;
    fr_buf_init(&rb->ck.state, STATE_CAP);
    int64_t t0 = fr_mono_ms();
    snprintf(rb->id, sizeof rb->id, "%" PRId64, fr_wall_ms());

    if (!fr_lake_maybe_exists(conf)) {
        char where[4200];
        fprintf(stderr, "freshet rebuild: no lake at %s (has `freshet process` run?)\n",
                fr_lake_catalog_name(conf, where, sizeof where));
        goto cleanup;
    }
    lock_fd = fr_maint_lock(conf, "rebuild", rb->dir, sizeof rb->dir);
    if (lock_fd < 0) {
        goto cleanup;
    }
    rc = fr_lake_open(conf, &rb->lake);
    rb->cat = rb->lake.cat;
    if (rc == FR_OK) {
        struct fr_maint_group g = {.pipeline_id = conf->general_pipeline_id};
        int group = fr_maint_is_group(&rb->lake, &g);
        if (group < 0) {
            goto cleanup;
        }
        if (group) {
            rb->group = rb_group_new(quiet_s);
            if (!rb->group) {
                goto cleanup;
            }
        }
    }
    rc = rc ? rc : fr_maint_ensure(&rb->lake, 0);
    for (int k = 0; rc == FR_OK && k < RB_NOUT; k++) {
        struct fr_ice_table *table = NULL;
        rc = fr_lake_table(&rb->lake, fr_tbl_name(rb_tbl[k]), &table);
        if (rc == FR_OK) {
            snprintf(rb->out[k].table_dir, sizeof rb->out[k].table_dir, "%s",
                     fr_ice_table_dir(table));
            struct fr_ice_file_list list;
            rc = fr_ice_files(rb->cat, table, -1, false, &list);
            if (rc == FR_OK) {
                rb->out[k].old_rows = list.total_records;
                fr_ice_file_list_free(&list);
            }
        }
        fr_ice_table_free(table);
    }
    if (rc < 0) {
        fr_error("rebuild", "catalog: %s (%s) %s", fr_strerror(rc), fr_err_name(rc),
                 fr_ice_errmsg());
        goto cleanup;
    }
    rc = fr_dlq_recover(conf, rb->dir, &rb->lake, 1);
    if (rc < 0) {
        goto cleanup;
    }
    rc = rb_forget_crashed(rb);
    if (rc < 0) {
        fr_error("rebuild", "cleaning up a crashed rebuild: %s", fr_strerror(rc));
        goto cleanup;
    }
    rc = fr_lake_table(&rb->lake, fr_tbl_name(FR_TBL_BRONZE), &bronze);
    if (rc < 0) {
        fr_error("rebuild", "bronze: %s %s", fr_strerror(rc), fr_ice_errmsg());
        goto cleanup;
    }
    rc = rb->group ? rb_group_open(rb, bronze) : rb_cut(rb, bronze);
    if (rc == FR_ENOTFOUND) {
        status = 0;
        goto cleanup;
    }
    if (rc < 0) {
        goto cleanup;
    }
    rb->bronze_snapshot = fr_ice_table_snapshot_id(bronze);
    rc = fr_ice_files(rb->cat, bronze, -1, true, &bronze_files);
    if (rc == FR_OK) {
        struct fr_ice_table *dlq = NULL;
        rc = fr_lake_table(&rb->lake, fr_tbl_name(FR_TBL_DLQ), &dlq);
        rc = rc ? rc : fr_ice_files(rb->cat, dlq, -1, true, &dlq_files);
        fr_ice_table_free(dlq);
    }
    if (rc < 0) {
        fr_error("rebuild", "listing files: %s %s", fr_strerror(rc), fr_ice_errmsg());
        goto cleanup;
    }

    struct fr_proc_opts popts;
    fr_maint_proc_opts(conf, &popts);
    rc = fr_proc_create(&popts, &rb->proc);
    rc = rc ? rc : fr_gate_create(&popts.gate, &rb->gate);
    if (rc < 0) {
        fr_error("rebuild", "operators: %s", fr_strerror(rc));
        goto cleanup;
    }

    char intent[4200], text[40];
    snprintf(intent, sizeof intent, "%s/rebuild.intent", rb->dir);
    snprintf(text, sizeof text, "%s\n", rb->id);
    rc = fr_fs_write_atomic(intent, text, strlen(text));
    if (rc < 0) {
        fr_error("rebuild", "%s: %s", intent, fr_strerror(rc));
        goto cleanup;
    }
    fr_info("rebuild",
            "rebuild %s: %" PRId64 " bronze rows in %zu files (epochs up to %" PRId64 "), %" PRId64
            " dlq rows, lateness %" PRId64 " s",
            rb->id, bronze_files.total_records, bronze_files.nfiles, rb->cut_epoch,
            dlq_files.total_records, conf->process_lateness_s);
    fr_progress_start(&rb->pg, "rebuild", "rows",
                      (uint64_t)(bronze_files.total_records + dlq_files.total_records));
    rc = rb_replay_bronze(rb, &bronze_files);
    rc = rc ? rc : rb_count_dlq(rb, &dlq_files);
    fr_progress_end(&rb->pg);
    if (rc < 0) {
        goto cleanup;
    }
    struct fr_proc_stats st;
    fr_proc_stats(rb->proc, &st);
    if (rb->group) {
        rc = rb_group_settle(rb);
        rc = rc ? rc : rb_group_fence(rb);
        if (rc < 0) {
            goto cleanup;
        }
        rb_crash_point(rb, "fence");
        st.watermark_us = rb->group->frontier;
    }
    rc = rb_commit(rb, st.watermark_us);
    if (rc < 0) {
        goto cleanup;
    }
    rb->committed = 1;
    rb_crash_point(rb, "commit");
    if (rb->group) {
        rc = rb_group_checkpoints(rb);
        if (rc < 0) {
            goto cleanup;
        }
        unlink(intent);
        rb_group_report(rb);
        status = 0;
        goto cleanup;
    }
    /* The lake holds the rebuild: the checkpoint continues from it. */
    fr_buf_reset(&rb->ck.state);
    rc = fr_proc_save(rb->proc, &rb->ck.state);
    rc = rc ? rc : fr_ck_save(rb->dir, &rb->ck);
    if (rc < 0) {
        fr_error("rebuild",
                 "the tables are rebuilt but the checkpoint could not be written: %s; run "
                 "`freshet rebuild` again before starting the processor",
                 fr_strerror(rc));
        goto cleanup;
    }
    unlink(intent);
    rb_report(rb, fr_mono_ms() - t0, st.watermark_us);
    status = 0;

cleanup:
    rb_out_release(rb, !rb->committed && !rb->unknown);
    fr_ice_file_list_free(&bronze_files);
    fr_ice_file_list_free(&dlq_files);
    fr_ice_table_free(bronze);
    fr_gate_destroy(rb->gate);
    fr_proc_destroy(rb->proc);
    rb_group_free(rb);
    fr_lake_close(&rb->lake);
    fr_buf_free(&rb->ck.state);
    free(rb);
    if (lock_fd >= 0) {
        close(lock_fd);
    }
    return status;
}
