/*
 * dlq_replay.c — `freshet dlq replay`: the dead letters the current rules
 * accept, landed exactly once through the processor's operator state (the
 * state machine and its crashes: dlq.c's header; docs/DLQ.md). On a
 * consumer group's lake, once per shard, as that shard's next epoch
 * (ADR 0067).
 */
#include "pipeline/dlq_int.h"

#include "pipeline/ckmirror.h"
#include "pipeline/lake.h"
#include "pipeline/pipeline.h"
#include "pipeline/tables.h"

#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"
#include "core/progress.h"
#include "process/process.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ================================================================== replay */

enum { RP_BRONZE, RP_SILVER, RP_LATE, RP_EPM, RP_TOP, RP_REPLAYS, RP_NOUT };
static const enum fr_tbl rp_tbl[RP_NOUT] = {FR_TBL_BRONZE,   FR_TBL_SILVER,   FR_TBL_LATE,
                                            FR_TBL_GOLD_EPM, FR_TBL_GOLD_TOP, FR_TBL_DLQ_REPLAYS};

struct rp {
    struct fr_conf *conf;
    char dir[4096];
    char id[32];
    int64_t replayed_at_us;
    const char *crash_after;
    int dry_run;
    char **reasons;
    int nreasons;
    struct fr_lake lake;        /* the catalog and its warehouse (local or S3) */
    struct fr_ice_catalog *cat; /* lake.cat */
    struct fr_proc *proc;
    struct fr_gate *gate;
    struct fr_ck ck;
    struct done_set done;
    struct fr_tw tw[RP_NOUT];
    int committed;
    int unknown; /* a REST commit's outcome is unknown: keep files and intent */
    /* a consumer group's lake: the shard being replayed (-1: one process) */
    int shard;
    char pipe[FR_PIPE_ID_MAX]; /* "<id>-p<N>" */
    int64_t lake_epoch;        /* the pipeline's newest epoch in the lake */
    int64_t end;               /* a shard: the offset after that epoch */
    int64_t quiet_s;           /* a group's members silent this long before */
    uint8_t present[FR_CK_MAX_PARTS]; /* the group's shards (rp_group_check) */
    struct rp_counts { /* of one pipeline's replay */
        uint64_t seen, skipped_reason, already, landed;
        uint64_t silver, late, duplicates, gold;
        uint64_t still[FR_GATE_REASON_COUNT];
    } n;
};

static void rp_crash_point(const struct rp *rp, const char *step)
{
    if (rp->crash_after && strcmp(rp->crash_after, step) == 0) {
        fprintf(stderr, "freshet dlq replay: --crash-after %s: exiting as if killed\n", step);
        _exit(3);
    }
}

static int rp_minute(void *arg, const struct fr_win_row *row)
{
    struct rp *rp = arg;
    rp->n.gold++;
    return rp->dry_run ? FR_OK : fr_tw_gold_epm(&rp->tw[RP_EPM], row);
}

static int rp_top(void *arg, const struct fr_top_row *row)
{
    struct rp *rp = arg;
    rp->n.gold++;
    return rp->dry_run ? FR_OK : fr_tw_gold_top(&rp->tw[RP_TOP], row);
}

static const struct fr_proc_sink rp_sink = {rp_minute, rp_top};
/* a shard's windows are partial: gold is the finalizer's */
static const struct fr_proc_sink rp_shard_sink = {NULL, NULL};

/* One dead letter: gate, then the operators, then the rows. */
static int rp_record(struct rp *rp, const struct fr_lscan_row *lr, const char *raw, size_t len)
{
    struct fr_proc_pos pos = {lr->partition, lr->offset, lr->ingest_us / 1000};
    struct fr_row row;
    char detail[FR_GATE_DETAIL_MAX];
    enum fr_gate_reason why = fr_gate_decode(rp->gate, &pos, raw, len, &row, detail);
    if (why != FR_GATE_OK) {
        rp->n.still[why]++;
        return FR_OK; /* still a dead letter: nothing changes */
    }
    struct fr_proc_result res;
    int rc = fr_proc_record(rp->proc, &pos, raw, len, rp->shard >= 0 ? &rp_shard_sink : &rp_sink,
                            rp, &res);
    if (rc < 0) {
        return rc;
    }
    const char *outcome;
    switch (res.outcome) {
    case FR_PROC_SILVER:
        outcome = "silver";
        rp->n.silver++;
        rc = rp->dry_run ? FR_OK : fr_tw_silver(&rp->tw[RP_SILVER], res.row);
        break;
    case FR_PROC_LATE:
        outcome = "late";
        rp->n.late++;
        rc = rp->dry_run ? FR_OK
                         : fr_tw_late(&rp->tw[RP_LATE], res.row, res.watermark_us, res.lateness_us);
        break;
    case FR_PROC_DUPLICATE:
        outcome = "duplicate";
        rp->n.duplicates++;
        break;
    default:
        return FR_ESTATE; /* the gate passed it: fr_proc cannot reject it */
    }
    rp->n.landed++;
    if (rc < 0 || rp->dry_run) {
        return rc;
    }
    char reason[64];
    snprintf(reason, sizeof reason, "%.*s", (int)lr->tag_len, lr->tag);
    rc = fr_tw_bronze(&rp->tw[RP_BRONZE], res.row, raw, len);
    return rc < 0 ? rc
                  : fr_tw_dlq_replay(&rp->tw[RP_REPLAYS], res.row, reason, rp->id,
                                     rp->replayed_at_us, outcome);
}

/* Every selected dead letter not yet replayed, in log order. */
static int rp_scan(struct rp *rp, const struct fr_ice_file_list *files)
{
    char spill[4200];
    snprintf(spill, sizeof spill, "%s/dlq-replay-spill", rp->dir);
    struct fr_lscan_opts lopts = {FR_TBL_DLQ, DLQ_MEMORY, spill, &rp->lake};
    struct fr_lscan *ls = NULL;
    struct fr_buf bytes;
    fr_buf_init(&bytes, RAW_CAP);
    struct fr_progress pg;
    fr_progress_start(&pg, "dlq replay", "rows", (uint64_t)files->total_records);
    uint64_t prev = UINT64_MAX, done = 0;
    int rc = fr_lscan_open(files, &lopts, &ls);
    struct fr_lscan_row lr;
    while (rc == FR_OK && (rc = fr_lscan_next(ls, &lr)) == 1) {
        rc = FR_OK;
        fr_progress_tick(&pg, ++done);
        if (rp->shard >= 0 && lr.partition != rp->shard) {
            continue; /* another shard's dead letter */
        }
        rp->n.seen++;
        uint64_t key = dlq_pos_key(lr.partition, lr.offset);
        if (!dlq_reason_selected(rp->reasons, rp->nreasons, lr.tag, lr.tag_len)) {
            rp->n.skipped_reason++;
            continue;
        }
        if (dlq_done_has(&rp->done, key)) {
            rp->n.already++;
            continue;
        }
        if (key == prev) {
            continue; /* one position twice in dlq: replayed once */
        }
        prev = key;
        const char *raw = lr.raw;
        size_t len = lr.raw_len;
        if (lr.b64) {
            fr_buf_reset(&bytes);
            rc = fr_maint_unbase64(lr.raw, lr.raw_len, &bytes);
            if (rc < 0) {
                fr_error("dlq", "dlq row %d:%" PRId64 ": raw_base64 does not decode", lr.partition,
                         lr.offset);
                break;
            }
            raw = (const char *)bytes.data;
            len = bytes.len;
        }
        rc = rp_record(rp, &lr, raw, len);
        if (rc < 0) {
            fr_error("dlq", "dlq row %d:%" PRId64 ": %s %s", lr.partition, lr.offset,
                     fr_strerror(rc), fr_pq_errmsg());
        }
    }
    fr_progress_end(&pg);
    if (rc < 0) {
        fr_error("dlq", "reading dlq: %s %s", fr_strerror(rc), fr_pq_errmsg());
    }
    fr_buf_free(&bytes);
    fr_lscan_free(ls);
    return rc < 0 ? rc : FR_OK;
}

/* A shard's replay epoch: bronze (with the marker) first, the others with
 * rows, in one transaction: SQLite's (the marker's compare-and-swap) or
 * the REST catalog's epoch commit; the landed marker must be this
 * replay's. FR_EEXIST when the shard committed that epoch first. */
static int rp_commit_shard(struct rp *rp, const struct fr_ice_commit_info *info)
{
    struct fr_lake_append apps[RP_NOUT];
    uint32_t n = 0;
    int rc = FR_OK;
    for (int k = 0; k < RP_NOUT; k++) {
        if (rp->tw[k].rows || k == RP_BRONZE) {
            apps[n++] = (struct fr_lake_append){fr_tbl_name(rp_tbl[k]), &rp->tw[k].file,
                                                rp->tw[k].rows ? 1u : 0u};
        }
    }
    if (rp->lake.rest) {
        rc = fr_lake_commit_rest(&rp->lake, apps, n, info, rp->conf->lake_catalog_uri);
        rp->unknown = rc == FR_EUNKNOWN;
    } else {
        struct fr_ice_txn *txn = NULL;
        rc = fr_ice_txn_begin(rp->cat, &txn);
        for (uint32_t a = 0; rc == FR_OK && a < n; a++) {
            rc = fr_ice_txn_append(txn, FR_NS, apps[a].table, apps[a].files, apps[a].nfiles, info);
        }
        if (rc == FR_OK) {
            struct fr_ice_commit_result res;
            rc = fr_ice_txn_commit(txn, &res);
        }
        fr_ice_txn_free(txn);
    }
    if (rc == FR_OK) { /* the epoch's marker must be this replay's */
        rc = fr_maint_marker_is(&rp->lake, FR_TBL_BRONZE, info->pipeline_id, info->epoch,
                                FR_SUMMARY_DLQ_REPLAY, rp->id);
    }
    if (rc == FR_EEXIST) {
        fr_error("dlq",
                 "shard %s committed epoch %" PRId64 " while the replay ran: the group is not "
                 "stopped, and this shard's dead letters did not land. Stop every instance of "
                 "the group and run `freshet dlq replay` again",
                 info->pipeline_id, info->epoch);
    } else if (rc < 0 && rc != FR_EUNKNOWN) {
        fr_error("dlq", "%s: commit failed: %s (%s) %s", info->pipeline_id, fr_strerror(rc),
                 fr_err_name(rc), fr_ice_errmsg());
    }
    return rc;
}

/* A shard's checkpoint, installed: its copy in the bucket too
 * (process.checkpoint_uri), where its next owner takes it. */
static int rp_upload(struct rp *rp)
{
    struct fr_ckm *m = NULL;
    int rc = fr_ckm_open(rp->conf, rp->pipe, &m);
    if (rc == FR_OK && m) {
        rc = fr_ckm_upload(m, rp->dir);
        if (rc < 0) {
            fr_error("dlq", "%s's checkpoint could not be copied to %s: %s; run `freshet dlq "
                            "replay` again before starting the group",
                     rp->pipe, fr_ckm_uri(m), fr_strerror(rc));
        }
    }
    fr_ckm_close(m);
    return rc;
}

/* STAGE, COMMIT, INSTALL, CLEAN (the state machine at the top). */
static int rp_commit(struct rp *rp)
{
    for (int k = 0; k < RP_NOUT; k++) {
        int rc = fr_tw_finish(&rp->tw[k]);
        if (rc < 0) {
            fr_error("dlq", "writing %s: %s %s", fr_tbl_name(rp_tbl[k]), fr_strerror(rc),
                     fr_pq_errmsg());
            return rc;
        }
    }
    rp_crash_point(rp, "files");
    struct fr_ck staged = rp->ck;
    fr_buf_init(&staged.state, STATE_CAP);
    if (rp->shard >= 0) {
        staged.epoch = rp->lake_epoch + 1; /* a shard's replay is its next epoch */
    }
    struct intent in = {.base_crc = dlq_crc_of(&rp->ck.state), .base_len = rp->ck.state.len};
    snprintf(in.id, sizeof in.id, "%s", rp->id);
    snprintf(in.phase, sizeof in.phase, "staged");
    char sdir[4200];
    dlq_intent_path(rp->dir, "", sdir, sizeof sdir);
    int rc = fr_proc_save(rp->proc, &staged.state);
    rc = rc ? rc : fr_ck_save(sdir, &staged);
    rc = rc ? rc : dlq_intent_write(rp->dir, &in);
    if (rc < 0) {
        fr_error("dlq", "staging the checkpoint in %s: %s", sdir, fr_strerror(rc));
        fr_buf_free(&staged.state);
        return rc;
    }
    rp_crash_point(rp, "staged");

    struct fr_proc_stats st;
    fr_proc_stats(rp->proc, &st);
    char wm[32], records[32];
    snprintf(wm, sizeof wm, "%" PRId64, st.watermark_us);
    snprintf(records, sizeof records, "%" PRIu64, rp->n.landed);
    struct fr_ice_kv props[] = {{FR_SUMMARY_DLQ_REPLAY, rp->id},
                                {FR_SUMMARY_DLQ_REPLAY_RECORDS, records},
                                {FR_SUMMARY_WATERMARK, wm},
                                {FR_SUMMARY_RECORDS, "0"}};
    struct fr_ice_commit_info info = {NULL, -1, NULL, props, 3};
    char offsets[128];
    if (rp->shard >= 0) {
        /* On a group's lake, the shard's next epoch: its marker (no log
         * record: an empty range at its offsets) fences a shard still
         * running, and the finalizer consumes it like any shard epoch, so
         * gold counts the landed rows (ADR 0067). */
        struct fr_ck_range r = {.epoch = staged.epoch, .nparts = (uint32_t)rp->shard + 1};
        r.start[rp->shard] = r.end[rp->shard] = rp->end;
        fr_ck_range_text(&r, "recentchange", rp->shard, offsets, sizeof offsets);
        info = (struct fr_ice_commit_info){rp->pipe, staged.epoch, offsets, props, 4};
        rc = rp_commit_shard(rp, &info);
        if (rc < 0) {
            fr_buf_free(&staged.state);
            return rc; /* logged */
        }
    } else if (rp->lake.rest) {
        /* the same appends in one REST transaction (maint_rest.c) */
        struct fr_lake_append apps[RP_NOUT];
        uint32_t n = 0;
        for (int k = 0; k < RP_NOUT; k++) {
            if (rp->tw[k].rows) {
                apps[n++] = (struct fr_lake_append){fr_tbl_name(rp_tbl[k]), &rp->tw[k].file, 1};
            }
        }
        rc = fr_maint_commit_rest(&rp->lake, apps, n, 0, &info, "dlq");
        rp->unknown = rc == FR_EUNKNOWN;
        if (rc < 0) {
            fr_buf_free(&staged.state);
            return rc; /* logged */
        }
    }
    struct fr_ice_txn *txn = NULL;
    /* A shard or finalizer that committed since the start makes it a
     * group's lake: refused inside the swap (ADR 0045; the SQLite catalog's
     * transaction; through REST the start's check stands). */
    struct fr_maint_group group = {.pipeline_id = rp->conf->general_pipeline_id};
    rc = rp->lake.rest || rp->shard >= 0 ? FR_OK : fr_ice_txn_begin(rp->cat, &txn);
    if (rc == FR_OK && txn) {
        fr_ice_txn_guard(txn, fr_maint_group_guard, &group);
    }
    for (int k = 0; txn && rc == FR_OK && k < RP_NOUT; k++) {
        if (rp->tw[k].rows) {
            rc = fr_ice_txn_append(txn, FR_NS, fr_tbl_name(rp_tbl[k]), &rp->tw[k].file, 1, &info);
        }
    }
    if (txn && rc == FR_OK) {
        struct fr_ice_commit_result res;
        rc = fr_ice_txn_commit(txn, &res);
    }
    fr_ice_txn_free(txn);
    if (rc < 0 && group.found[0]) {
        fr_maint_group_refused("dlq replay", &group);
        fr_buf_free(&staged.state);
        return rc;
    }
    if (rc < 0) {
        fr_error("dlq", "commit failed: %s (%s) %s", fr_strerror(rc), fr_err_name(rc),
                 fr_ice_errmsg());
        fr_buf_free(&staged.state);
        return rc;
    }
    rp->committed = 1;
    rp_crash_point(rp, "commit");
    rc = fr_ck_save(rp->dir, &staged);
    fr_buf_free(&staged.state);
    if (rc == FR_OK && rp->shard >= 0) {
        rc = rp_upload(rp);
    }
    if (rc < 0) {
        fr_error("dlq",
                 "replay %s landed but its checkpoint could not be installed: %s; run "
                 "`freshet dlq replay` again before starting the processor (it finishes this)",
                 rp->id, fr_strerror(rc));
        return rc;
    }
    dlq_intent_clear(rp->dir);
    return FR_OK;
}

static void rp_report(const struct rp *rp, int64_t ms)
{
    printf("dlq replay %s%s%s%s: %" PRIu64 " dead letters read", rp->id,
           rp->shard >= 0 ? " of shard " : "", rp->shard >= 0 ? rp->pipe : "",
           rp->dry_run ? " (dry run: nothing written)" : "", rp->n.seen);
    if (rp->nreasons) {
        printf(", %" PRIu64 " of other reasons skipped", rp->n.skipped_reason);
    }
    printf(", %" PRIu64 " replayed before, in %.1f s\n", rp->n.already, (double)ms / 1000.0);
    printf("  landed %" PRIu64 ": %" PRIu64 " silver, %" PRIu64 " late, %" PRIu64
           " duplicates; %" PRIu64 " gold rows settled\n",
           rp->n.landed, rp->n.silver, rp->n.late, rp->n.duplicates, rp->n.gold);
    uint64_t still = 0;
    for (int r = 1; r < FR_GATE_REASON_COUNT; r++) {
        still += rp->n.still[r];
    }
    printf("  still rejected %" PRIu64, still);
    const char *sep = " (";
    for (int r = 1; r < FR_GATE_REASON_COUNT; r++) {
        if (rp->n.still[r]) {
            printf("%s%s %" PRIu64, sep, fr_gate_reason_name((enum fr_gate_reason)r), rp->n.still[r]);
            sep = ", ";
        }
    }
    printf("%s\n", still ? ")" : "");
}

static void replay_usage(FILE *out)
{
    fprintf(out, "usage: freshet dlq replay [--reason R]... [--dry-run] [--crash-after STEP]\n"
                 "       freshet dlq replay --lookups [--dry-run]\n\n"
                 "Run the dead letters (wiki.dlq) that no replay has landed yet through the\n"
                 "current gate (process.max_future_s, process.max_event_bytes, the schema rules)\n"
                 "and the live operator state from the processor checkpoint, as records arriving\n"
                 "now: each one the gate accepts lands exactly once, in bronze and in silver,\n"
                 "late_arrivals or (a duplicate) bronze only, with its original log position;\n"
                 "wiki.dlq_replays records it, in the same catalog transaction. The others stay\n"
                 "dead letters. See docs/DLQ.md.\n\n"
                 "The processor must not run: stop `freshet up` (or `freshet process`) first;\n"
                 "replay takes the pipeline lock. A replay that is killed is finished or undone\n"
                 "by the next `freshet dlq replay` (or `freshet rebuild`); run it again.\n\n"
                 "On a consumer group's lake each shard's dead letters land through its own\n"
                 "checkpoint as its next epoch: stop the whole group first; it refuses while a\n"
                 "shard committed within --quiet-s (docs/DLQ.md).\n\n"
                 "  --lookups        only the enrichment stage's failed lookups\n"
                 "                   (wiki.dlq_lookups), looked up again through enrich.api_url\n"
                 "                   and landed exactly once in silver_topics, with the\n"
                 "                   gold_top_topics windows they change recomputed\n"
                 "                   (docs/ENRICH.md); without it, a pipeline with\n"
                 "                   enrich.enabled = 1 replays both (unless --reason is given)\n"
                 "  --reason R       only dead letters of reason R (repeatable; docs/QUALITY.md)\n"
                 "  --dry-run        say what would land; write nothing\n"
                 "  --quiet-s N      a group's lake: every shard silent this long (default 30)\n"
                 "  --crash-after S  testing: exit(3) right after step S (files, staged,\n"
                 "                   commit), as a crash would\n");
}

/* A consumer group's lake (ADR 0067): each shard in turn, through its own
 * checkpoint (the bucket's copy when newer), as that shard's next epoch.
 * Refused while a shard committed within --quiet-s or holds its lock
 * here. 0 done, 1 failed (logged). */
static int rp_run(struct rp *rp, int64_t t0);
static int rp_group_check(struct rp *rp)
{
    struct fr_conf *conf = rp->conf;
    struct fr_ice_table *bronze = NULL;
    int rc = fr_lake_table(&rp->lake, fr_tbl_name(FR_TBL_BRONZE), &bronze);
    if (rc < 0) {
        fr_error("dlq", "bronze: %s %s", fr_strerror(rc), fr_ice_errmsg());
        return 1;
    }
    uint8_t *present = rp->present;
    int64_t newest_ms = INT64_MIN;
    char newest[FR_PIPE_ID_MAX + 40] = "";
    uint32_t nshards = 0;
    for (uint32_t p = 0; p < FR_CK_MAX_PARTS; p++) {
        char pipe[FR_PIPE_ID_MAX];
        int64_t epoch, snap;
        snprintf(pipe, sizeof pipe, "%s-p%u", conf->general_pipeline_id, p);
        if (fr_ice_last_epoch(bronze, pipe, &epoch, &snap) != FR_OK) {
            continue;
        }
        const struct fr_ice_snapshot *m = fr_maint_marker(bronze, pipe, epoch);
        present[p] = 1;
        nshards++;
        if (m && m->timestamp_ms > newest_ms) {
            newest_ms = m->timestamp_ms;
            snprintf(newest, sizeof newest, "%s (epoch %" PRId64 ")", pipe, epoch);
        }
    }
    fr_ice_table_free(bronze);
    if (nshards == 0) {
        fr_error("dlq", "no shard of %s committed an epoch", conf->general_pipeline_id);
        return 1;
    }
    if (fr_maint_group_quiet("dlq", "dlq replay", "docs/DLQ.md", newest, newest_ms,
                             rp->quiet_s) < 0) {
        return 1;
    }
    return 0;
}

static int rp_group(struct rp *rp, int64_t t0)
{
    struct fr_conf *conf = rp->conf;
    const uint8_t *present = rp->present;
    int rc;
    char base[20]; /* the replay's id: Unix ms */
    snprintf(base, sizeof base, "%.19s", rp->id);
    int status = 0;
    for (uint32_t p = 0; status == 0 && p < FR_CK_MAX_PARTS; p++) {
        if (!present[p]) {
            continue;
        }
        rp->shard = (int)p;
        snprintf(rp->pipe, sizeof rp->pipe, "%s-p%u", conf->general_pipeline_id, p);
        snprintf(rp->id, sizeof rp->id, "%sp%u", base, p);
        memset(&rp->n, 0, sizeof rp->n);
        rp->committed = rp->unknown = 0;
        fr_buf_reset(&rp->ck.state);
        long holder = 0;
        int fd = -1;
        struct fr_ckm *m = NULL;
        rc = fr_maint_ck_dir(conf, rp->pipe, rp->dir, sizeof rp->dir);
        if (rc == FR_OK && (fd = fr_ck_lock(rp->dir, &holder)) < 0) {
            fr_error("dlq", "%s is running on this machine (pid %ld holds %s/lock): stop every "
                            "instance of the group first",
                     rp->pipe, holder, rp->dir);
            rc = FR_EBUSY;
        }
        if (rc == FR_OK) {
            rc = fr_ckm_open(conf, rp->pipe, &m);
            rc = rc ? rc : fr_ckm_pull(m, rp->dir);
            fr_ckm_close(m);
        }
        rc = rc ? rc : fr_dlq_recover(conf, rp->dir, &rp->lake, 0);
        status = rc < 0 ? 1 : rp_run(rp, t0);
        if (fd >= 0) {
            close(fd);
        }
    }
    return status;
}

/* CHECK .. COMMIT for rp's pipeline (one process's, or one shard's when
 * rp->shard >= 0): its checkpoint in rp->dir must be at the lake's newest
 * epoch of it. 0 done, 1 failed (logged; what this attempt wrote is
 * removed unless its commit's outcome is unknown). Frees what it
 * allocates, so a group's replay calls it once per shard. */
static int rp_run(struct rp *rp, int64_t t0)
{
    struct fr_conf *conf = rp->conf;
    const char *pipe = rp->shard >= 0 ? rp->pipe : conf->general_pipeline_id;
    struct fr_ice_table *bronze = NULL, *dlq = NULL;
    struct fr_ice_file_list files = {0};
    int status = 1;
    /* CHECK: the checkpoint must describe the lake exactly. */
    int rc = fr_lake_table(&rp->lake, fr_tbl_name(FR_TBL_BRONZE), &bronze);
    rp->lake_epoch = -1;
    if (rc == FR_OK) {
        rc = fr_ice_last_epoch(bronze, pipe, &rp->lake_epoch, NULL);
        rc = rc == FR_ENOTFOUND ? FR_OK : rc;
    }
    if (rc == FR_OK && rp->shard >= 0) {
        /* the offset after the shard's newest epoch: its next epoch's start */
        const struct fr_ice_snapshot *m = fr_maint_marker(bronze, pipe, rp->lake_epoch);
        const char *off = m ? fr_maint_summary(m, FR_ICE_SUMMARY_OFFSETS) : NULL;
        struct fr_ck_range r;
        rc = off && fr_ck_range_parse(off, "recentchange", rp->lake_epoch, &r) == FR_OK &&
                     r.nparts > (uint32_t)rp->shard
                 ? FR_OK
                 : FR_ECORRUPT;
        rp->end = rc == FR_OK ? r.end[rp->shard] : 0;
    }
    if (rc < 0) {
        fr_error("dlq", "bronze (%s): %s %s", pipe, fr_strerror(rc), fr_ice_errmsg());
        goto cleanup;
    }
    rc = fr_ck_load(rp->dir, &rp->ck);
    if (rc == FR_ENOTFOUND && rp->lake_epoch < 0) {
        printf("dlq replay: nothing to replay (%s has not committed an epoch)\n", pipe);
        status = 0;
        goto cleanup;
    }
    if (rc < 0) {
        fr_error("dlq", "checkpoint of %s in %s: %s", pipe, rp->dir, fr_strerror(rc));
        goto cleanup;
    }
    if (rp->ck.epoch != rp->lake_epoch) {
        fr_error("dlq",
                 "the lake holds epoch %" PRId64 " of %s but its checkpoint (%s) is at epoch "
                 "%" PRId64 ": run `freshet process %s--once` first so the checkpoint catches up",
                 rp->lake_epoch, pipe, rp->dir, rp->ck.epoch,
                 rp->shard >= 0 ? "--partition N " : "");
        goto cleanup;
    }

    struct fr_proc_opts popts;
    fr_maint_proc_opts(conf, &popts);
    rc = fr_proc_create(&popts, &rp->proc);
    rc = rc ? rc : fr_gate_create(&popts.gate, &rp->gate);
    rc = rc ? rc : fr_proc_load(rp->proc, rp->ck.state.data, rp->ck.state.len);
    if (rc == FR_ECONFIG) {
        fr_error("dlq", "the checkpoint was saved with another process.lateness_s: run the "
                        "replay with the processor's configuration (or `freshet rebuild` "
                        "first to change the policy)");
        goto cleanup;
    }
    if (rc < 0) {
        fr_error("dlq", "operators: %s", fr_strerror(rc));
        goto cleanup;
    }
    rc = dlq_done_load(&rp->lake, &rp->done);
    rc = rc ? rc : fr_lake_table(&rp->lake, fr_tbl_name(FR_TBL_DLQ), &dlq);
    rc = rc ? rc : fr_ice_files(rp->cat, dlq, -1, true, &files);
    if (rc < 0) {
        fr_error("dlq", "reading the dlq: %s %s", fr_strerror(rc), fr_ice_errmsg());
        goto cleanup;
    }
    for (int k = 0; k < RP_NOUT; k++) {
        struct fr_ice_table *table = NULL;
        rc = fr_lake_table(&rp->lake, fr_tbl_name(rp_tbl[k]), &table);
        if (rc < 0) {
            fr_error("dlq", "%s: %s %s", fr_tbl_name(rp_tbl[k]), fr_strerror(rc), fr_ice_errmsg());
            goto cleanup;
        }
        char rel[512];
        snprintf(rel, sizeof rel, "data/%s-replay-%s.parquet", conf->general_pipeline_id, rp->id);
        fr_tw_init_named(&rp->tw[k], rp_tbl[k], fr_ice_table_dir(table), rel,
                         (size_t)conf->process_row_group_bytes);
        rp->tw[k].lake = &rp->lake;
        fr_ice_table_free(table);
    }
    if (!rp->dry_run) {
        struct intent in = {0};
        snprintf(in.id, sizeof in.id, "%s", rp->id);
        snprintf(in.phase, sizeof in.phase, "writing");
        rc = dlq_intent_write(rp->dir, &in);
        if (rc < 0) {
            fr_error("dlq", "%s/dlq-replay/intent: %s", rp->dir, fr_strerror(rc));
            goto cleanup;
        }
    }
    rc = rp_scan(rp, &files);
    if (rc == FR_OK && rp->n.landed && !rp->dry_run) {
        rc = rp_commit(rp);
    }
    if (rc < 0) {
        goto cleanup;
    }
    if (!rp->committed && !rp->dry_run) {
        dlq_intent_clear(rp->dir); /* nothing landed: nothing written */
    }
    rp_report(rp, fr_mono_ms() - t0);
    status = 0;

cleanup:
    if (status == 1 && !rp->committed && !rp->unknown && rp->cat && rp->id[0] && !rp->dry_run) {
        /* undo what this attempt wrote, as recovery would */
        for (int k = 0; k < RP_NOUT; k++) {
            if (rp->tw[k].finished && rp->tw[k].rows) {
                unlink(rp->tw[k].path);
            }
        }
        struct intent in;
        if (dlq_intent_read(rp->dir, &in) == FR_OK && strcmp(in.id, rp->id) == 0) {
            dlq_intent_clear(rp->dir);
        }
    }
    for (int k = 0; k < RP_NOUT; k++) {
        fr_tw_abort(&rp->tw[k]);
        memset(&rp->tw[k], 0, sizeof rp->tw[k]);
    }
    fr_ice_file_list_free(&files);
    fr_ice_table_free(bronze);
    fr_ice_table_free(dlq);
    dlq_done_free(&rp->done);
    memset(&rp->done, 0, sizeof rp->done);
    fr_gate_destroy(rp->gate);
    fr_proc_destroy(rp->proc);
    rp->gate = NULL;
    rp->proc = NULL;
    return status;
}

int fr_dlq_replay_cmd(struct fr_conf *conf, int argc, char **argv)
{
    static const struct option opts[] = {{"reason", required_argument, 0, 'r'},
                                         {"dry-run", no_argument, 0, 'n'},
                                         {"lookups", no_argument, 0, 'L'},
                                         {"crash-after", required_argument, 0, 'C'},
                                         {"quiet-s", required_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    struct rp *rp = calloc(1, sizeof *rp);
    char **reasons = calloc((size_t)argc + 1, sizeof *reasons);
    if (!rp || !reasons) {
        free(rp);
        free(reasons);
        return 1;
    }
    int status = 2;
    int lock_fd = -1;
    int lookups = 0;
    int group = 0;
    long long quiet_s = 30;
    char *end;
    fr_buf_init(&rp->ck.state, STATE_CAP);
    rp->shard = -1;
    rp->conf = conf;
    rp->reasons = reasons;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'r':
            if (fr_gate_reason_from_name(optarg, strlen(optarg)) <= 0) {
                fprintf(stderr, "freshet dlq replay: unknown reason \"%s\" (docs/QUALITY.md)\n",
                        optarg);
                goto cleanup;
            }
            reasons[rp->nreasons++] = optarg;
            break;
        case 'n':
            rp->dry_run = 1;
            break;
        case 'L':
            lookups = 1;
            break;
        case 'q':
            quiet_s = strtoll(optarg, &end, 10);
            if (*end || quiet_s < 0 || quiet_s > 86400) {
                fprintf(stderr, "freshet dlq replay: --quiet-s takes 0..86400\n");
                goto cleanup;
            }
            break;
        case 'C':
            if (strcmp(optarg, "files") != 0 && strcmp(optarg, "staged") != 0 &&
                strcmp(optarg, "commit") != 0) {
                fprintf(stderr, "freshet dlq replay: --crash-after takes files, staged or "
                                "commit\n");
                goto cleanup;
            }
            rp->crash_after = optarg;
            break;
        case 'h':
            replay_usage(stdout);
            status = 0;
            goto cleanup;
        default:
            replay_usage(stderr);
            goto cleanup;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "freshet dlq replay: unexpected argument \"%s\"\n", argv[optind]);
        goto cleanup;
    }
    status = 1;
    int64_t t0 = fr_mono_ms();
    rp->replayed_at_us = fr_wall_us();
    snprintf(rp->id, sizeof rp->id, "%" PRId64, rp->replayed_at_us / 1000);

    if (!fr_lake_maybe_exists(conf)) {
        char where[4200];
        fprintf(stderr, "freshet dlq replay: no lake at %s (has `freshet process` run?)\n",
                fr_lake_catalog_name(conf, where, sizeof where));
        goto cleanup;
    }
    lock_fd = fr_maint_lock(conf, "dlq replay", rp->dir, sizeof rp->dir);
    if (lock_fd < 0) {
        goto cleanup;
    }
    int rc = fr_lake_open(conf, &rp->lake);
    rp->cat = rp->lake.cat;
    if (rc == FR_OK) {
        struct fr_maint_group g = {.pipeline_id = conf->general_pipeline_id};
        group = fr_maint_is_group(&rp->lake, &g);
        if (group < 0) {
            goto cleanup;
        }
        if (group && (lookups || conf->enrich_enabled)) {
            fr_error("dlq", "a consumer group's lake (pipeline %s) with enrichment: the replay of "
                            "a group's dead letters with enrich.enabled, and of its failed "
                            "lookups, is not built (the lookups' state is each shard's own, "
                            "saved per epoch; docs/DLQ.md)",
                     g.found);
            goto cleanup;
        }
        rp->quiet_s = quiet_s;
        if (group && rp_group_check(rp) != 0) {
            goto cleanup; /* before anything is written */
        }
    }
    rc = rc ? rc : fr_maint_ensure(&rp->lake, 1);
    if (rc < 0) {
        fr_error("dlq", "catalog: %s (%s) %s", fr_strerror(rc), fr_err_name(rc), fr_ice_errmsg());
        goto cleanup;
    }
    rc = fr_dlq_recover(conf, rp->dir, &rp->lake, 0);
    if (rc < 0) {
        goto cleanup;
    }
    if (lookups) {
        /* The enrichment stage's dead letters, not the gate's. */
        status = fr_dlq_replay_lookups(conf, rp->dir, &rp->lake, rp->dry_run) < 0 ? 1 : 0;
        goto cleanup;
    }

    if (group) {
        status = rp_group(rp, t0);
        goto cleanup;
    }
    status = rp_run(rp, t0);
    /* A pipeline that enriches: its failed lookups too (all of them: the
     * --reason filters name the gate's reasons). */
    if (status == 0 && conf->enrich_enabled && rp->nreasons == 0 &&
        fr_dlq_replay_lookups(conf, rp->dir, &rp->lake, rp->dry_run) < 0) {
        status = 1;
    }

cleanup:
    fr_lake_close(&rp->lake);
    fr_buf_free(&rp->ck.state);
    free(rp);
    free(reasons);
    if (lock_fd >= 0) {
        close(lock_fd);
    }
    return status;
}
