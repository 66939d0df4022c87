/*
 * rebuild_group.c — `freshet rebuild` on a consumer group's lake (the
 * scale-out mode, docs/SCALEOUT.md): each shard's silver and late_arrivals
 * recomputed from its partition's bronze rows by its own operators, gold
 * recomputed from the new silver as the finalizer computes it, and every
 * member's checkpoint rewritten, under a stop-the-group protocol that the
 * catalog enforces (ADR 0066). rebuild.c runs the command; this file is
 * the group's part of it.
 *
 *   CHECK ──► REPLAY ──► SETTLE ──► FENCE ──► COMMIT ──► CHECKPOINTS
 *
 *   CHECK        the shards and the finalizer from bronze's and gold's markers;
 *                the group stopped: none committed within --quiet-s, none holds
 *                its pipeline lock on this machine; enrichment off (not built:
 *                the lookups' state is each shard's own, saved per epoch)
 *   REPLAY       bronze in log order; each row through its partition's
 *                operators; the idle epochs the markers record are raised at
 *                their offsets; silver rows also into gold's operators
 *   SETTLE       the frontier (the minimum of the shards' watermarks) and
 *                gold's windows up to it
 *   FENCE        per shard an empty epoch after its cut, then the finalizer's
 *                next epoch (the shard epochs up to the fences, the new
 *                frontier), each marked freshet.rebuild=<id> through the epoch
 *                marker's compare-and-swap: a member that committed since the
 *                check makes it fail (the rebuild stops), a member that tries
 *                after it is refused (FR_EEXIST) and stops
 *   COMMIT       one overwrite of silver, late_arrivals and gold (rebuild.c),
 *                no marker: it belongs to the finalizer's fenced epoch
 *   CHECKPOINTS  each shard's (epoch = its fence) and the finalizer's, in
 *                their checkpoint directories here and in the bucket
 *                (process.checkpoint_uri)
 *
 * A member that starts with a checkpoint older than the rebuild finds a
 * rebuild's epoch among those it would replay and refuses
 * (fr_maint_rebuilt_after, in epoch.c and final.c): it never continues
 * with the old state. A crash at any arrow is repaired by running the
 * command again: it fences again after the fences already there (empty
 * epochs: a rerun's cut), and makes the overwrite and checkpoints again.
 * A fence is never reused as one: a shard whose checkpoint reached an
 * earlier rebuild's fence could otherwise commit during this one.
 *
 * One thread (the command's).
 */
#include "pipeline/rebuild_int.h"

#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"
#include "pipeline/ckmirror.h"
#include "pipeline/lake.h"
#include "pipeline/tables.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOPIC "recentchange"
/* On a fence: the watermark the shard's last idle epoch raised to, replayed
 * by a rerun that finds the fence as its cut. */
#define RBG_SUMMARY_IDLE "freshet.rebuild-idle-wm-us"
#define RBG_MAX_RAISES 100000

struct rb_group *rb_group_new(int64_t quiet_s)
{
    struct rb_group *g = calloc(1, sizeof *g);
    if (!g) {
        return NULL;
    }
    g->quiet_s = quiet_s;
    g->final_lock_fd = -1;
    for (uint32_t p = 0; p < FR_CK_MAX_PARTS; p++) {
        g->shard[p].lock_fd = -1;
    }
    return g;
}

static int64_t summary_i64(const struct fr_ice_snapshot *s, const char *key, int64_t dflt)
{
    const char *v = fr_maint_summary(s, key);
    char *end;
    if (!v || !*v) {
        return dflt;
    }
    long long x = strtoll(v, &end, 10);
    return *end ? dflt : (int64_t)x;
}

/* The idle epochs of shard p that bronze still holds (their markers). */
static int collect_raises(struct rb *rb, const struct fr_ice_table *bronze, uint32_t p,
                          const char *pipe)
{
    struct rb_shard *sh = &rb->group->shard[p];
    uint32_t n = 0;
    const struct fr_ice_snapshot *snaps = fr_ice_table_snapshots(bronze, &n);
    int64_t lateness_us = rb->conf->process_lateness_s * 1000000;
    for (uint32_t i = 0; i < n; i++) {
        const struct fr_ice_snapshot *s = &snaps[i];
        const char *who = fr_maint_summary(s, FR_ICE_SUMMARY_PIPELINE);
        int64_t epoch = summary_i64(s, FR_ICE_SUMMARY_EPOCH, -1);
        if (!who || strcmp(who, pipe) != 0 || epoch < 0 ||
            summary_i64(s, FR_SUMMARY_RECORDS, -1) != 0 ||
            fr_maint_summary(s, FR_SUMMARY_DLQ_REPLAY)) { /* a replay epoch is not idle */
            continue;
        }
        const char *off = fr_maint_summary(s, FR_ICE_SUMMARY_OFFSETS);
        struct fr_ck_range r;
        if (!off || fr_ck_range_parse(off, TOPIC, epoch, &r) < 0 || r.nparts <= p) {
            continue;
        }
        int64_t wm;
        if (fr_maint_summary(s, FR_SUMMARY_REBUILD)) {
            wm = summary_i64(s, RBG_SUMMARY_IDLE, FR_PROC_WM_NONE); /* a fence */
        } else {
            /* what the raise was, or what it would be now: the wall clock
             * then minus the current lateness, whichever is lower */
            wm = summary_i64(s, FR_SUMMARY_WATERMARK, FR_PROC_WM_NONE);
            int64_t now_rule = s->timestamp_ms * 1000 - lateness_us;
            wm = wm != FR_PROC_WM_NONE && now_rule < wm ? now_rule : wm;
        }
        if (wm == FR_PROC_WM_NONE) {
            continue;
        }
        if (sh->nraises == RBG_MAX_RAISES) {
            fr_warn("rebuild", "%s: more than %d idle epochs kept: the older ones are not replayed",
                    pipe, RBG_MAX_RAISES);
            break;
        }
        if (sh->nraises % 256 == 0) {
            struct rb_raise *grown =
                realloc(sh->raises, sizeof *grown * ((size_t)sh->nraises + 256));
            if (!grown) {
                return FR_ENOMEM;
            }
            sh->raises = grown;
        }
        sh->raises[sh->nraises++] = (struct rb_raise){epoch, r.end[p], wm};
    }
    /* snapshots are in commit order, so in epoch order per shard */
    return FR_OK;
}

static int lock_member(struct rb *rb, const char *pipe, int *fd)
{
    char dir[4096];
    long holder = 0;
    *fd = -1;
    int rc = fr_maint_ck_dir(rb->conf, pipe, dir, sizeof dir);
    if (rc < 0) {
        fr_error("rebuild", "checkpoint directory of %s: %s", pipe, fr_strerror(rc));
        return -1;
    }
    *fd = fr_ck_lock(dir, &holder);
    if (*fd < 0) {
        fr_error("rebuild",
                 "%s is running on this machine (pid %ld holds %s/lock): stop every instance "
                 "of the group first (docs/REBUILD.md, \"A consumer group's lake\")",
                 pipe, holder, dir);
        return -1;
    }
    return 0;
}

static int open_shard(struct rb *rb, const struct fr_ice_table *bronze, uint32_t p,
                      int64_t *newest_ms, char *newest, size_t newestlen)
{
    struct rb_group *g = rb->group;
    struct rb_shard *sh = &g->shard[p];
    char pipe[FR_PIPE_ID_MAX];
    snprintf(pipe, sizeof pipe, "%s-p%u", rb->conf->general_pipeline_id, p);
    int64_t snap;
    int rc = fr_ice_last_epoch(bronze, pipe, &sh->epoch, &snap);
    if (rc == FR_ENOTFOUND) {
        return FR_OK;
    }
    const struct fr_ice_snapshot *m = rc < 0 ? NULL : fr_maint_marker(bronze, pipe, sh->epoch);
    const char *off = m ? fr_maint_summary(m, FR_ICE_SUMMARY_OFFSETS) : NULL;
    struct fr_ck_range r;
    if (!off || fr_ck_range_parse(off, TOPIC, sh->epoch, &r) < 0 || r.nparts <= p) {
        fr_error("rebuild", "%s: epoch %" PRId64 " carries no readable %s", pipe, sh->epoch,
                 FR_ICE_SUMMARY_OFFSETS);
        return FR_ECORRUPT;
    }
    sh->present = 1;
    sh->end = r.end[p];
    sh->at_ms = m->timestamp_ms;
    sh->fenced = fr_maint_summary(m, FR_SUMMARY_REBUILD) != NULL;
    if (sh->at_ms > *newest_ms) {
        *newest_ms = sh->at_ms;
        snprintf(newest, newestlen, "%s (epoch %" PRId64 ")", pipe, sh->epoch);
    }
    rc = collect_raises(rb, bronze, p, pipe);
    if (rc < 0) {
        return rc;
    }
    struct fr_proc_opts popts;
    fr_maint_proc_opts(rb->conf, &popts);
    rc = fr_proc_create(&popts, &sh->proc);
    if (rc < 0) {
        return rc;
    }
    return lock_member(rb, pipe, &sh->lock_fd) < 0 ? FR_EBUSY : FR_OK;
}

int rb_group_open(struct rb *rb, const struct fr_ice_table *bronze)
{
    struct rb_group *g = rb->group;
    const char *id = rb->conf->general_pipeline_id;
    g->final_lock_fd = -1;
    g->gold_epoch = -1;
    g->frontier = FR_PROC_WM_NONE;
    snprintf(g->final_pipe, sizeof g->final_pipe, "%s%s", id, FR_PIPE_FINAL_SUFFIX);
    if (rb->conf->enrich_enabled) {
        fr_error("rebuild",
                 "a consumer group's lake with enrich.enabled: a group rebuild with enrichment "
                 "is not built (the lookups' state is each shard's own, saved per epoch). Turn "
                 "enrich.enabled off for the rebuild only if the group ran without it; else "
                 "reprocess the topic into a new lake (docs/REBUILD.md)");
        return FR_EUNSUPPORTED;
    }
    int64_t newest_ms = INT64_MIN;
    char newest[FR_PIPE_ID_MAX + 40] = "";
    int rc = FR_OK;
    for (uint32_t p = 0; rc == FR_OK && p < FR_CK_MAX_PARTS; p++) {
        rc = open_shard(rb, bronze, p, &newest_ms, newest, sizeof newest);
        g->wm[p] = FR_PROC_WM_NONE;
        if (rc == FR_OK && g->shard[p].present) {
            g->nparts = p + 1;
        }
    }
    if (rc < 0) {
        if (rc != FR_EBUSY) {
            fr_error("rebuild", "reading the shards' epochs: %s %s", fr_strerror(rc),
                     fr_ice_errmsg());
        }
        return rc;
    }
    /* The finalizer: its last epoch and the shard epochs it consumed. */
    struct fr_ice_table *gold = NULL;
    rc = fr_lake_table(&rb->lake, fr_tbl_name(FR_TBL_GOLD_EPM), &gold);
    int64_t snap;
    if (rc == FR_OK && fr_ice_last_epoch(gold, g->final_pipe, &g->gold_epoch, &snap) == FR_OK) {
        const struct fr_ice_snapshot *m = fr_maint_marker(gold, g->final_pipe, g->gold_epoch);
        const char *off = m ? fr_maint_summary(m, FR_ICE_SUMMARY_OFFSETS) : NULL;
        if (!off || fr_ck_range_parse(off, FR_PIPE_FINAL_RANGE, g->gold_epoch, &g->consumed) < 0) {
            fr_error("rebuild", "%s: epoch %" PRId64 " carries no readable %s", g->final_pipe,
                     g->gold_epoch, FR_ICE_SUMMARY_OFFSETS);
            rc = FR_ECORRUPT;
        } else if (m->timestamp_ms > newest_ms) {
            newest_ms = m->timestamp_ms;
            snprintf(newest, sizeof newest, "%s (epoch %" PRId64 ")", g->final_pipe,
                     g->gold_epoch);
        }
        g->nparts = g->consumed.nparts > g->nparts ? g->consumed.nparts : g->nparts;
    } else if (rc == FR_ENOTFOUND) {
        rc = FR_OK;
    }
    fr_ice_table_free(gold);
    if (rc < 0) {
        return rc;
    }
    if (g->nparts == 0) {
        printf("rebuild: nothing to rebuild (bronze holds no shard epoch of %s)\n", id);
        return FR_ENOTFOUND;
    }
    if (fr_maint_group_quiet("rebuild", "rebuild", "docs/REBUILD.md", newest, newest_ms,
                             g->quiet_s) < 0) {
        return FR_EBUSY;
    }
    if (lock_member(rb, g->final_pipe, &g->final_lock_fd) < 0) {
        return FR_EBUSY;
    }
    struct fr_proc_opts popts;
    fr_proc_opts_default(&popts);
    rc = fr_win_create(&popts.win, &g->win);
    rc = rc ? rc : fr_win_top_create(&popts.top, &g->top);
    if (rc < 0) {
        return rc;
    }
    rb->cut_epoch = g->gold_epoch + 1;
    for (uint32_t p = 0; p < g->nparts; p++) {
        const struct rb_shard *sh = &g->shard[p];
        if (sh->present) {
            fr_info("rebuild", "shard %s-p%u: epochs up to %" PRId64 "%s, offsets below %" PRId64
                               ", %u idle epochs kept",
                    id, p, sh->epoch, sh->fenced ? " (a rebuild's fence)" : "", sh->end,
                    sh->nraises);
        } else {
            fr_warn("rebuild", "partition %u has no shard epoch: gold's frontier waits for it", p);
        }
    }
    return FR_OK;
}

/* The idle raises of shard p before offset (INT64_MAX: all that are left). */
static int raise_before(struct rb *rb, uint32_t p, int64_t offset)
{
    static const struct fr_proc_sink none = {NULL, NULL};
    struct rb_shard *sh = &rb->group->shard[p];
    while (sh->next_raise < sh->nraises && sh->raises[sh->next_raise].at <= offset) {
        int rc = fr_proc_raise(sh->proc, sh->raises[sh->next_raise].wm, &none, NULL);
        if (rc < 0 && rc != FR_EINVAL) {
            return rc;
        }
        sh->next_raise++;
    }
    return FR_OK;
}

struct fr_proc *rb_group_proc(struct rb *rb, int32_t partition)
{
    if (partition < 0 || (uint32_t)partition >= rb->group->nparts ||
        !rb->group->shard[partition].present) {
        fr_error("rebuild", "a row of partition %d, of which no shard committed an epoch",
                 partition);
        return NULL;
    }
    return rb->group->shard[partition].proc;
}

int rb_group_silver(struct rb *rb, const struct fr_row *row)
{
    int rc = fr_win_add(rb->group->win, row);
    rc = rc ? rc : fr_win_top_add(rb->group->top, row);
    rb->group->silver_rows += rc == FR_OK;
    return rc;
}

/* Rows of a partition come in offset order (the log-ordered scan). */
int rb_group_before_row(struct rb *rb, int32_t partition, int64_t offset)
{
    if (partition < 0 || (uint32_t)partition >= rb->group->nparts ||
        !rb->group->shard[partition].present) {
        return FR_OK; /* rb_group_proc says why */
    }
    return raise_before(rb, (uint32_t)partition, offset);
}

int rb_group_settle(struct rb *rb)
{
    struct rb_group *g = rb->group;
    int64_t min = INT64_MAX;
    for (uint32_t p = 0; p < g->nparts; p++) {
        if (g->shard[p].present) {
            int rc = raise_before(rb, p, INT64_MAX);
            if (rc < 0) {
                return rc;
            }
            struct fr_proc_stats st;
            fr_proc_stats(g->shard[p].proc, &st);
            g->wm[p] = st.watermark_us;
        }
        min = g->wm[p] < min ? g->wm[p] : min;
    }
    g->frontier = min;
    if (g->frontier == FR_PROC_WM_NONE) {
        return FR_OK; /* a partition without a watermark: no window is settled */
    }
    int rc = fr_win_advance(g->win, g->frontier, rb_minute, rb);
    return rc ? rc : fr_win_top_advance(g->top, g->frontier, rb_top, rb);
}

/* One fence: an empty append to table carrying pipe's marker for info's
 * epoch and this rebuild's id, through the lake's catalog (SQLite: the
 * marker's compare-and-swap; REST: the epoch commit, fr_lake_commit_rest).
 * A member that committed that epoch first: FR_EEXIST (logged). */
static int fence_one(struct rb *rb, enum fr_tbl tbl, const struct fr_ice_commit_info *info)
{
    const char *table = fr_tbl_name(tbl);
    int rc;
    if (rb->lake.rest) {
        struct fr_lake_append app = {table, NULL, 0};
        rc = fr_lake_commit_rest(&rb->lake, &app, 1, info, rb->conf->lake_catalog_uri);
    } else {
        rc = fr_ice_append(rb->cat, FR_NS, table, NULL, 0, info, NULL);
    }
    if (rc == FR_OK) { /* the epoch's marker must be this rebuild's */
        rc = fr_maint_marker_is(&rb->lake, tbl, info->pipeline_id, info->epoch,
                                FR_SUMMARY_REBUILD, rb->id);
    }
    if (rc == FR_EEXIST) {
        fr_error("rebuild",
                 "%s committed epoch %" PRId64 " while the rebuild ran: the group is not "
                 "stopped. Nothing of the rebuild landed but the fences before it; stop every "
                 "instance of the group and run `freshet rebuild` again (docs/REBUILD.md)",
                 info->pipeline_id, info->epoch);
    } else if (rc < 0) {
        fr_error("rebuild", "fencing %s: %s (%s) %s", info->pipeline_id, fr_strerror(rc),
                 fr_err_name(rc), fr_ice_errmsg());
    }
    return rc;
}

int rb_group_fence(struct rb *rb)
{
    struct rb_group *g = rb->group;
    int rc = FR_OK;
    for (uint32_t p = 0; rc == FR_OK && p < g->nparts; p++) {
        struct rb_shard *sh = &g->shard[p];
        if (!sh->present) {
            continue;
        }
        char pipe[FR_PIPE_ID_MAX], offsets[256], wm[32], idle[32];
        snprintf(pipe, sizeof pipe, "%s-p%u", rb->conf->general_pipeline_id, p);
        struct fr_ck_range r = {.epoch = sh->epoch + 1, .nparts = p + 1};
        r.start[p] = r.end[p] = sh->end;
        fr_ck_range_text(&r, TOPIC, (int)p, offsets, sizeof offsets);
        snprintf(wm, sizeof wm, "%" PRId64, g->wm[p]);
        snprintf(idle, sizeof idle, "%" PRId64,
                 sh->nraises ? sh->raises[sh->nraises - 1].wm : FR_PROC_WM_NONE);
        struct fr_ice_kv props[] = {{FR_SUMMARY_WATERMARK, wm},
                                    {FR_SUMMARY_RECORDS, "0"},
                                    {FR_SUMMARY_REBUILD, rb->id},
                                    {RBG_SUMMARY_IDLE, idle}};
        /* the idle raise only when there is one */
        struct fr_ice_commit_info info = {pipe, r.epoch, offsets, props,
                                          sh->nraises ? 4u : 3u};
        rc = fence_one(rb, FR_TBL_BRONZE, &info);
        if (rc == FR_OK) {
            sh->epoch = r.epoch;
            sh->fenced = 1;
        }
    }
    if (rc == FR_OK) {
        /* The finalizer's next epoch: the shard epochs up to the fences,
         * settled at the new frontier. gold's overwrite then carries no
         * marker: it belongs to this epoch (verify's cut). */
        char offsets[4096], wm[32], rows[32];
        int64_t epoch;
        rb_group_gold_marker(rb, offsets, sizeof offsets, &epoch);
        snprintf(wm, sizeof wm, "%" PRId64, g->frontier);
        snprintf(rows, sizeof rows, "%" PRIu64, g->silver_rows);
        struct fr_ice_kv props[] = {
            {FR_SUMMARY_WATERMARK, wm}, {FR_SUMMARY_RECORDS, rows}, {FR_SUMMARY_REBUILD, rb->id}};
        struct fr_ice_commit_info info = {g->final_pipe, epoch, offsets, props, 3};
        rc = fence_one(rb, FR_TBL_GOLD_EPM, &info);
    }
    return rc;
}

void rb_group_gold_marker(struct rb *rb, char *offsets, size_t offlen, int64_t *epoch)
{
    struct rb_group *g = rb->group;
    struct fr_ck_range r = {.epoch = g->gold_epoch + 1, .nparts = g->nparts};
    for (uint32_t p = 0; p < g->nparts; p++) {
        int64_t from = p < g->consumed.nparts ? g->consumed.end[p] : 0;
        r.start[p] = from;
        r.end[p] = g->shard[p].present && g->shard[p].epoch + 1 > from ? g->shard[p].epoch + 1
                                                                         : from;
    }
    fr_ck_range_text(&r, FR_PIPE_FINAL_RANGE, -1, offsets, offlen);
    *epoch = r.epoch;
}

/* Write ck (state: bytes) in pipe's checkpoint directory and the bucket. */
static int write_ck(struct rb *rb, const char *pipe, struct fr_ck *ck)
{
    char dir[4096];
    int rc = fr_maint_ck_dir(rb->conf, pipe, dir, sizeof dir);
    rc = rc ? rc : fr_ck_save(dir, ck);
    if (rc < 0) {
        fr_error("rebuild", "the tables are rebuilt but %s's checkpoint could not be written in "
                            "%s: %s; run `freshet rebuild` again before starting the group",
                 pipe, dir, fr_strerror(rc));
        return rc;
    }
    struct fr_ckm *m = NULL;
    rc = fr_ckm_open(rb->conf, pipe, &m);
    if (rc == FR_OK && m) {
        rc = fr_ckm_upload(m, dir);
        if (rc < 0) {
            fr_error("rebuild", "%s's checkpoint could not be copied to %s: %s; run `freshet "
                                "rebuild` again before starting the group",
                     pipe, fr_ckm_uri(m), fr_strerror(rc));
        }
    }
    fr_ckm_close(m);
    return rc;
}

int rb_group_checkpoints(struct rb *rb)
{
    struct rb_group *g = rb->group;
    struct fr_ck ck;
    fr_buf_init(&ck.state, (size_t)1 << 30);
    int rc = FR_OK;
    for (uint32_t p = 0; rc == FR_OK && p < g->nparts; p++) {
        struct rb_shard *sh = &g->shard[p];
        if (!sh->present) {
            continue;
        }
        char pipe[FR_PIPE_ID_MAX];
        snprintf(pipe, sizeof pipe, "%s-p%u", rb->conf->general_pipeline_id, p);
        ck.epoch = sh->epoch;
        ck.nparts = p + 1;
        memset(ck.next, 0, sizeof ck.next);
        ck.next[p] = sh->end;
        fr_buf_reset(&ck.state);
        rc = fr_proc_save(sh->proc, &ck.state);
        rc = rc ? rc : write_ck(rb, pipe, &ck);
    }
    if (rc == FR_OK) {
        char offsets[4096];
        int64_t epoch;
        rb_group_gold_marker(rb, offsets, sizeof offsets, &epoch);
        struct fr_ck_range r;
        rc = fr_ck_range_parse(offsets, FR_PIPE_FINAL_RANGE, epoch, &r);
        ck.epoch = epoch;
        ck.nparts = g->nparts;
        memset(ck.next, 0, sizeof ck.next);
        for (uint32_t p = 0; rc == FR_OK && p < g->nparts; p++) {
            ck.next[p] = r.end[p];
        }
        fr_buf_reset(&ck.state);
        rc = rc ? rc : fr_final_state_save(g->win, g->top, g->frontier, g->nparts, g->wm, &ck.state);
        rc = rc ? rc : write_ck(rb, g->final_pipe, &ck);
    }
    fr_buf_free(&ck.state);
    return rc;
}

void rb_group_report(const struct rb *rb)
{
    const struct rb_group *g = rb->group;
    char wm[32] = "none";
    if (g->frontier != FR_PROC_WM_NONE) {
        fr_time_format_ms(g->frontier, wm);
    }
    printf("rebuild %s of consumer group %s: %" PRIu64 " bronze rows under lateness %" PRId64
           " s\n",
           rb->id, rb->conf->general_pipeline_id, rb->bronze_rows, rb->conf->process_lateness_s);
    for (int k = 0; k < RB_NOUT; k++) {
        printf("  %-22s %10" PRId64 " -> %10" PRIu64 " rows\n", fr_tbl_name(rb_tbl[k]),
               rb->out[k].old_rows, rb->out[k].rows);
    }
    printf("  duplicates %" PRIu64 "; bronze rows the gate now rejects %" PRIu64
           "; dlq rows still rejected %" PRIu64 ", now accepted %" PRIu64 "\n",
           rb->duplicates, rb->rejected, rb->dlq_rejected, rb->dlq_now_valid);
    for (uint32_t p = 0; p < g->nparts; p++) {
        const struct rb_shard *sh = &g->shard[p];
        if (sh->present) {
            char w[32] = "none";
            if (g->wm[p] != FR_PROC_WM_NONE) {
                fr_time_format_ms(g->wm[p], w);
            }
            printf("  shard %s-p%u: checkpoint at its fence, epoch %" PRId64
                   ", offset %" PRId64 ", watermark %s\n",
                   rb->conf->general_pipeline_id, p, sh->epoch, sh->end, w);
        }
    }
    printf("  finalizer %s: checkpoint at epoch %" PRId64 ", frontier %s\n", g->final_pipe,
           g->gold_epoch + 1, wm);
}

void rb_group_free(struct rb *rb)
{
    struct rb_group *g = rb->group;
    if (!g) {
        return;
    }
    for (uint32_t p = 0; p < FR_CK_MAX_PARTS; p++) {
        struct rb_shard *sh = &g->shard[p];
        fr_proc_destroy(sh->proc);
        if (sh->lock_fd >= 0) {
            close(sh->lock_fd);
        }
        free(sh->raises);
    }
    if (g->final_lock_fd >= 0) {
        close(g->final_lock_fd);
    }
    fr_win_destroy(g->win);
    fr_win_top_destroy(g->top);
    free(g);
    rb->group = NULL;
}
