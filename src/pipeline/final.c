/*
 * final.c — the finalizer of the scale-out mode, `freshet process
 * --finalize` (ADR 0014, docs/SCALEOUT.md): gold_edits_per_minute and
 * gold_top_pages computed from what the shards committed.
 *
 * A shard (`freshet process --partition N`, pipeline "<id>-p<N>") sees one
 * partition, and a wiki's pages span partitions, so its windows would be
 * partial: shards write bronze, silver, late_arrivals and dlq only. The
 * finalizer (pipeline "<id>-gold") reads the silver files of each shard's
 * epochs, in each shard's epoch order, into the window operators
 * (window.c, topk.c), and emits a window once the frontier passes its end:
 *
 *     frontier = max(previous frontier,
 *                    min over every partition of the topic of the watermark
 *                    its shard committed with its newest consumed epoch)
 *
 * A shard's silver rows all lie at or after its watermark (older events go
 * to late_arrivals), so a window ending at or before the frontier has every
 * row it will ever have: gold is exact, and equals the recomputation from
 * silver that `freshet verify` makes. A quiet partition does not hold the
 * frontier forever: its shard commits idle epochs that raise its watermark
 * (process.idle_timeout_s, epoch.c).
 *
 * With enrichment (enrich.enabled), gold_top_topics too: the silver_topics
 * files of the same shard epochs feed the topics operator, settled at a
 * second frontier, the minimum over partitions of the topics frontier each
 * shard publishes in its epoch marker (final_topics.c, ADR 0046); it is in
 * each finalizer epoch's marker as freshet.topics-frontier-us.
 *
 * One finalizer epoch (a crash at any arrow restarts at PLAN from the
 * checkpoint):
 *
 *   PLAN ──► WAL ──► READ ──► ADVANCE ──► COMMIT ──► CHECKPOINT ──► MAINTAIN
 *    │                 │         │           │
 *    │                 │         │           └─ gold_edits_per_minute always
 *    │                 │         │              (it carries the marker
 *    │                 │         │              "<id>-gold", epoch, ranges),
 *    │                 │         │              gold_top_pages when it has rows
 *    │                 │         └─ windows ending <= frontier emitted
 *    │                 └─ silver files added by shard epochs [start[p], end[p])
 *    └─ bronze's snapshots scanned for shard markers: the next shard epochs
 *       of every partition, at most process.epoch_max_records records
 *
 * The checkpoint is a struct fr_ck (checkpoint.c) whose next[p] is the next
 * epoch of shard p to consume and whose state is the table below; the WAL
 * holds each epoch's shard-epoch ranges. An epoch already in gold (its
 * marker) is replayed from its range (the WAL's, or the marker's
 * freshet.source-offsets "shard/0:4-9,shard/1:3-3") with nothing written:
 * exactly once, as in epoch.c.
 *
 * State (little-endian, inside the checkpoint, which has its own CRC):
 *
 *   offset  size  field
 *   0       4     magic "FRFN"
 *   4       4     version = 1, or 2
 *   8       8     frontier (Unix µs, INT64_MIN: none)
 *   16      4     n partitions
 *   20      8*n   watermark of each shard's newest consumed epoch
 *   ..      8+L   fr_win_save bytes (length, then bytes)
 *   ..      8+L   fr_win_top_save bytes
 *   ..            version 2 only (with enrichment): the topics section
 *                 (final_topics.h)
 *
 * Maintenance of every table is the finalizer's in this mode (shards run
 * none, so they never race each other's compactions): expiry keeps every
 * snapshot committed after the finalizer last looked, minus a margin, so
 * the shard epochs it has not consumed keep their snapshots.
 *
 * Figures: <data>/stats/finalize.stats (fr_stats_open_member, ADR 0042):
 * epochs, batch and commit durations, the last epoch, and the frontier as
 * its watermark (gold is settled up to there), published after every epoch
 * and while it waits for shard epochs (the heartbeat). It counts no
 * records: the shards count each log record once. It also writes the
 * dashboard's live view, <data>/stats/view.json, from its open windows
 * (those past the frontier: provisional), as the single processor does.
 *
 * Single-threaded; SIGTERM/SIGINT: the current epoch finishes, then exit 0.
 */
#include "pipeline/pipeline.h"

#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"
#include "iceberg/iceberg.h"
#include "kafka/kafka.h"
#include "log/log.h"
#include "pipeline/checkpoint.h"
#include "pipeline/ckmirror.h"
#include "pipeline/final_topics.h"
#include "pipeline/lake.h"
#include "pipeline/maint.h"
#include "pipeline/tables.h"
#include "process/process.h"
#include "stats/stats.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOPIC "recentchange"
#define FN_MAGIC "FRFN"
#define FN_STATE_CAP ((size_t)1 << 30)
/* Snapshots younger than this (before the finalizer's last look) are never
 * expired: they may hold shard epochs it has not consumed yet. */
#define FN_KEEP_MARGIN_MS INT64_C(600000)

static volatile sig_atomic_t final_stop;

static void final_on_signal(int sig)
{
    (void)sig;
    final_stop = 1;
}

/* A shard epoch to consume: its bronze snapshot's facts and silver's. */
struct fn_sepoch {
    int64_t wm;         /* the watermark it committed */
    int64_t records;    /* log records it consumed */
    int64_t silver_snap; /* its silver snapshot, -1: none (no silver rows) */
    int64_t silver_seq;
    int64_t topics;      /* its topics frontier (with enrichment; FR_PROC_WM_NONE: none) */
    int64_t topics_snap; /* its silver_topics snapshot, -1: none */
    int64_t topics_seq;
};

struct fin {
    struct fr_conf *conf;
    struct fr_stats *stats; /* <data>/stats/finalize.stats */
    int64_t max_event_us;   /* newest event time read from silver (the view) */
    char pipe[FR_PIPE_ID_MAX];
    char shard_prefix[FR_PIPE_ID_MAX]; /* "<id>-p" */
    char dir[4096];
    struct fr_lake lake;
    struct fr_log_opts lopts;
    struct fr_kafka *kafka;
    struct fr_ckm *ckm; /* the checkpoint's copy in a bucket, or NULL */
    struct fr_ck ck;
    int64_t wm[FR_CK_MAX_PARTS];
    int64_t frontier;
    struct fr_win *win;
    struct fr_top *top;
    struct fr_ftopics *ft; /* gold_top_topics when enrich.enabled, else NULL */
    int ntw;               /* 2, or 3 with ft */
    struct fr_tw tw[3];    /* gold_edits_per_minute, gold_top_pages, gold_top_topics */
    char table_dir[3][4096];
    int write;
    int once;
    int64_t cut_ms; /* when plan last returned a range (mono ms), -1: not yet */
    int64_t lake_epoch;
    int64_t looked_ms; /* wall time of the last bronze scan */
    struct fr_maint_round maint; /* orphan cadence and budget carry-over (fr_maint_tables) */
    uint64_t silver_rows, rows_epm, rows_top, topic_rows, rows_topics;
    struct fr_pq_read_opts ropts;
    /* the epoch's shard epochs, indexed [p][e - start[p]] */
    struct fn_sepoch *se[FR_CK_MAX_PARTS];
    int64_t se_n[FR_CK_MAX_PARTS];
};

static const enum fr_tbl fn_tables[3] = {FR_TBL_GOLD_EPM, FR_TBL_GOLD_TOP, FR_TBL_GOLD_TOPICS};

/* ---------------------------------------------------------------- state */

static int put_i64(struct fr_buf *b, int64_t v) { return fr_buf_append(b, &v, 8); }

/* The state up to its topics section (version 2 has one after it). */
static int fn_save_head(uint32_t version, const struct fr_win *win, const struct fr_top *top,
                        int64_t frontier, uint32_t n, const int64_t *wm, struct fr_buf *out)
{
    int rc = fr_buf_append(out, FN_MAGIC, 4);
    rc = rc ? rc : fr_buf_append(out, &version, 4);
    rc = rc ? rc : put_i64(out, frontier);
    rc = rc ? rc : fr_buf_append(out, &n, 4);
    for (uint32_t p = 0; rc == FR_OK && p < n; p++) {
        rc = put_i64(out, wm[p]);
    }
    for (int k = 0; rc == FR_OK && k < 2; k++) {
        size_t at = out->len;
        rc = put_i64(out, 0);
        if (rc == FR_OK) {
            rc = k == 0 ? fr_win_save(win, out) : fr_win_top_save(top, out);
        }
        if (rc == FR_OK) {
            int64_t len = (int64_t)(out->len - at - 8);
            memcpy(out->data + at, &len, 8);
        }
    }
    return rc;
}

int fr_final_state_save(const struct fr_win *win, const struct fr_top *top, int64_t frontier,
                        uint32_t nparts, const int64_t *wm, struct fr_buf *out)
{
    return nparts > FR_CK_MAX_PARTS ? FR_EINVAL
                                    : fn_save_head(1, win, top, frontier, nparts, wm, out);
}

static int fn_save(const struct fin *f, struct fr_buf *out)
{
    uint32_t version = f->ft ? 2 : 1, n = f->ck.nparts; /* 2: a topics section follows */
    int rc = fn_save_head(version, f->win, f->top, f->frontier, n, f->wm, out);
    return rc == FR_OK && f->ft ? fr_ftopics_save(f->ft, n, out) : rc;
}

static int fn_load(struct fin *f, const uint8_t *b, size_t len)
{
    uint32_t version, n;
    if (len < 20 || memcmp(b, FN_MAGIC, 4) != 0) {
        return FR_ECORRUPT;
    }
    memcpy(&version, b + 4, 4);
    memcpy(&f->frontier, b + 8, 8);
    memcpy(&n, b + 16, 4);
    if ((version != 1 && version != 2) || n > FR_CK_MAX_PARTS || len < 20 + 8 * (size_t)n) {
        return FR_ECORRUPT;
    }
    size_t at = 20;
    for (uint32_t p = 0; p < n; p++, at += 8) {
        memcpy(&f->wm[p], b + at, 8);
    }
    for (int k = 0; k < 2; k++) {
        int64_t l;
        if (len - at < 8) {
            return FR_ECORRUPT;
        }
        memcpy(&l, b + at, 8);
        at += 8;
        if (l < 0 || (uint64_t)l > len - at) {
            return FR_ECORRUPT;
        }
        int rc = k == 0 ? fr_win_load(f->win, b + at, (size_t)l)
                        : fr_win_top_load(f->top, b + at, (size_t)l);
        if (rc < 0) {
            return rc;
        }
        at += (size_t)l;
    }
    if (version == 2) { /* the topics section (final_topics.h) */
        size_t used = 0;
        struct fr_ftopics *ft = f->ft;
        int rc = ft ? FR_OK : fr_ftopics_open(&ft); /* enrichment now off: skipped */
        rc = rc ? rc : fr_ftopics_load(ft, b + at, len - at, &used);
        if (ft != f->ft) {
            fr_ftopics_free(ft);
        }
        if (rc < 0) {
            return rc;
        }
        at += used;
    }
    return at == len ? FR_OK : FR_ECORRUPT;
}

/* ------------------------------------------------------------ summaries */

static int64_t summary_i64(const struct fr_ice_snapshot *s, const char *key, int64_t dflt)
{
    const char *v = fr_maint_summary(s, key);
    if (!v || !*v) {
        return dflt;
    }
    char *end;
    long long x = strtoll(v, &end, 10);
    return *end ? dflt : (int64_t)x;
}

/* The shard partition and epoch of s's marker: 1, or 0 when s carries no
 * shard marker of this pipeline. */
static int shard_marker(const struct fin *f, const struct fr_ice_snapshot *s, uint32_t *part,
                        int64_t *epoch)
{
    const char *pipe = fr_maint_summary(s, FR_ICE_SUMMARY_PIPELINE);
    size_t pl = strlen(f->shard_prefix);
    if (!pipe || strncmp(pipe, f->shard_prefix, pl) != 0) {
        return 0;
    }
    char *end;
    long p = strtol(pipe + pl, &end, 10);
    if (*end || end == pipe + pl || p < 0 || p >= FR_CK_MAX_PARTS) {
        return 0;
    }
    *epoch = summary_i64(s, FR_ICE_SUMMARY_EPOCH, -1);
    *part = (uint32_t)p;
    return *epoch >= 0;
}

/* Epoch's marker in gold_edits_per_minute: its range ("shard/0:4-9,...")
 * and frontier. 1 found, 0 not committed, < 0 error. */
static int lake_epoch_range(struct fin *f, int64_t epoch, struct fr_ck_range *r, int64_t *frontier,
                            int64_t *topics)
{
    struct fr_ice_table *t = NULL;
    int rc = fr_lake_table(&f->lake, fr_tbl_name(FR_TBL_GOLD_EPM), &t);
    if (rc < 0) {
        return rc;
    }
    const struct fr_ice_snapshot *m = fr_maint_marker(t, f->pipe, epoch);
    const char *off = m ? fr_maint_summary(m, FR_ICE_SUMMARY_OFFSETS) : NULL;
    int found = off != NULL;
    if (found) {
        *frontier = summary_i64(m, FR_SUMMARY_WATERMARK, FR_PROC_WM_NONE);
        *topics = summary_i64(m, FR_SUMMARY_TOPICS, FR_PROC_WM_NONE);
        if (fr_ck_range_parse(off, FR_PIPE_FINAL_RANGE, epoch, r) < 0) {
            fr_error("finalize", "epoch %" PRId64 ": unreadable source offsets \"%s\"", epoch,
                     off);
            found = FR_ECORRUPT;
        }
    }
    fr_ice_table_free(t);
    return found;
}

/* --------------------------------------------------------------- planning */

static void se_free(struct fin *f)
{
    for (uint32_t p = 0; p < FR_CK_MAX_PARTS; p++) {
        free(f->se[p]);
        f->se[p] = NULL;
        f->se_n[p] = 0;
    }
}

/*
 * Collect what bronze and silver say of the shard epochs after next[p]:
 * each one's watermark and record count (bronze carries every shard
 * epoch's marker) and its silver snapshot. With want (a replay) exactly
 * want's ranges are collected, and a missing one is an error (expired);
 * without, at most budget records' worth, contiguous from next[p].
 */
static int collect(struct fin *f, const struct fr_ck_range *want, int64_t budget,
                   struct fr_ck_range *out)
{
    se_free(f);
    struct fr_ice_table *bronze = NULL, *silver = NULL, *topics = NULL;
    int rc = fr_lake_table(&f->lake, fr_tbl_name(FR_TBL_BRONZE), &bronze);
    if (rc == FR_OK) {
        rc = fr_lake_table(&f->lake, fr_tbl_name(FR_TBL_SILVER), &silver);
    }
    if (rc == FR_OK && f->ft) {
        rc = fr_lake_table(&f->lake, fr_tbl_name(FR_TBL_SILVER_TOPICS), &topics);
    }
    f->looked_ms = fr_wall_ms();
    uint32_t nb = 0, ns = 0;
    const struct fr_ice_snapshot *bs = rc == FR_OK ? fr_ice_table_snapshots(bronze, &nb) : NULL;
    const struct fr_ice_snapshot *ss = rc == FR_OK ? fr_ice_table_snapshots(silver, &ns) : NULL;
    uint32_t nt = 0;
    const struct fr_ice_snapshot *ts = rc == FR_OK && topics ? fr_ice_table_snapshots(topics, &nt)
                                                             : NULL;
    memset(out, 0, sizeof *out);
    out->epoch = f->ck.epoch + 1;
    out->nparts = f->ck.nparts;
    for (uint32_t p = 0; p < FR_CK_MAX_PARTS; p++) {
        out->start[p] = out->end[p] = f->ck.next[p];
    }
    if (want) {
        *out = *want;
    }
    int64_t cap[FR_CK_MAX_PARTS];
    for (uint32_t p = 0; p < FR_CK_MAX_PARTS; p++) {
        cap[p] = want ? want->end[p] - want->start[p] : 4096; /* allocated when used */
    }
    int64_t used = 0;
    for (uint32_t i = 0; rc == FR_OK && i < nb; i++) {
        uint32_t p;
        int64_t e;
        if (!shard_marker(f, &bs[i], &p, &e) || e < out->start[p]) {
            continue;
        }
        int64_t k = e - out->start[p];
        if (want ? e >= want->end[p] : (k != f->se_n[p] || k >= cap[p] || used >= budget)) {
            continue; /* beyond the range, a gap, or the budget is spent */
        }
        if (!f->se[p] && !(f->se[p] = calloc((size_t)cap[p], sizeof *f->se[p]))) {
            rc = FR_ENOMEM;
            break;
        }
        f->se[p][k] = (struct fn_sepoch){summary_i64(&bs[i], FR_SUMMARY_WATERMARK, FR_PROC_WM_NONE),
                                         summary_i64(&bs[i], FR_SUMMARY_RECORDS, 0),
                                         -1,
                                         -1,
                                         summary_i64(&bs[i], FR_SUMMARY_TOPICS, FR_PROC_WM_NONE),
                                         -1,
                                         -1};
        used += f->se[p][k].records > 0 ? f->se[p][k].records : 1;
        if (k + 1 > f->se_n[p]) {
            f->se_n[p] = k + 1;
        }
        if (!want) {
            out->end[p] = e + 1;
            out->nparts = p + 1 > out->nparts ? p + 1 : out->nparts;
        }
    }
    for (uint32_t i = 0; rc == FR_OK && i < ns; i++) {
        uint32_t p;
        int64_t e;
        if (shard_marker(f, &ss[i], &p, &e) && e >= out->start[p] && e < out->end[p] &&
            e - out->start[p] < f->se_n[p]) {
            f->se[p][e - out->start[p]].silver_snap = ss[i].snapshot_id;
            f->se[p][e - out->start[p]].silver_seq = ss[i].sequence_number;
        }
    }
    for (uint32_t i = 0; rc == FR_OK && i < nt; i++) { /* silver_topics: with enrichment */
        uint32_t p;
        int64_t e;
        if (shard_marker(f, &ts[i], &p, &e) && e >= out->start[p] && e < out->end[p] &&
            e - out->start[p] < f->se_n[p]) {
            f->se[p][e - out->start[p]].topics_snap = ts[i].snapshot_id;
            f->se[p][e - out->start[p]].topics_seq = ts[i].sequence_number;
        }
    }
    for (uint32_t p = 0; rc == FR_OK && want && p < want->nparts; p++) {
        if (f->se_n[p] != want->end[p] - want->start[p]) {
            fr_error("finalize",
                     "epoch %" PRId64 ": shard %u's epochs %" PRId64 "-%" PRId64
                     " are not all in bronze (expired?): the gold state cannot be rebuilt; "
                     "run `freshet rebuild`",
                     want->epoch, p, want->start[p], want->end[p]);
            rc = FR_ENOTFOUND;
        }
    }
    if (rc < 0 && rc != FR_ENOTFOUND) {
        fr_error("finalize", "reading the lake: %s %s", fr_strerror(rc), fr_ice_errmsg());
    }
    fr_ice_table_free(bronze);
    fr_ice_table_free(silver);
    fr_ice_table_free(topics);
    return rc;
}

/* ---------------------------------------------------------------- reading */

static const struct fr_lake_col fn_cols[] = {
    {"event_time", FR_PQ_TIMESTAMP}, {"wiki", FR_PQ_STRING},       {"type", FR_PQ_STRING},
    {"user", FR_PQ_STRING},          {"bot", FR_PQ_BOOL},          {"length_old", FR_PQ_INT64},
    {"length_new", FR_PQ_INT64},     {"title", FR_PQ_STRING}};

static enum fr_proc_type type_of(struct fr_pq_str s)
{
    for (int t = FR_TYPE_EDIT; t <= FR_TYPE_EXTERNAL; t++) {
        const char *name = fr_proc_type_name((enum fr_proc_type)t);
        if (strlen(name) == s.len && memcmp(name, s.ptr, s.len) == 0) {
            return (enum fr_proc_type)t;
        }
    }
    return (enum fr_proc_type)0;
}

/* fr_lake_batch_fn: silver rows into the windows (what they read of a
 * row: event time, wiki, type, user, bot, lengths, title). */
static int fn_batch(void *arg, const struct fr_pq_batch *b)
{
    struct fin *f = arg;
    const struct fr_pq_vec *c = b->cols;
    for (uint32_t i = 0; i < b->nrows; i++) {
        struct fr_row row;
        memset(&row, 0, sizeof row);
        row.event_us = c[0].v.i64[i];
        row.wiki = (struct fr_proc_str){c[1].v.str[i].ptr, (uint32_t)c[1].v.str[i].len};
        row.type = type_of(c[2].v.str[i]);
        if (!c[3].nulls[i]) {
            row.has |= FR_ROW_USER;
            row.user = (struct fr_proc_str){c[3].v.str[i].ptr, (uint32_t)c[3].v.str[i].len};
        }
        if (!c[4].nulls[i]) {
            row.has |= FR_ROW_BOT;
            row.bot = c[4].v.b[i] ? 1 : 0;
        }
        if (!c[5].nulls[i]) {
            row.has |= FR_ROW_LENGTH_OLD;
            row.length_old = c[5].v.i64[i];
        }
        if (!c[6].nulls[i]) {
            row.has |= FR_ROW_LENGTH_NEW;
            row.length_new = c[6].v.i64[i];
        }
        if (!c[7].nulls[i]) {
            row.has |= FR_ROW_TITLE;
            row.title = (struct fr_proc_str){c[7].v.str[i].ptr, (uint32_t)c[7].v.str[i].len};
        }
        if (row.event_us > f->max_event_us) {
            f->max_event_us = row.event_us;
        }
        int rc = fr_win_add(f->win, &row);
        if (rc == FR_OK) {
            rc = fr_win_top_add(f->top, &row);
        }
        if (rc < 0) {
            return rc;
        }
        f->silver_rows++;
    }
    return FR_OK;
}

static int file_cmp(const void *a, const void *b)
{
    const struct fr_ice_file *x = a, *y = b;
    if (x->sequence_number != y->sequence_number) {
        return x->sequence_number < y->sequence_number ? -1 : 1;
    }
    return strcmp(x->path, y->path);
}

/* Whether snapshot id is one of the range's silver snapshots. */
static int wanted_snap(const struct fin *f, const struct fr_ck_range *r, int topics, int64_t id)
{
    for (uint32_t p = 0; p < r->nparts; p++) {
        for (int64_t k = 0; k < f->se_n[p]; k++) {
            if ((topics ? f->se[p][k].topics_snap : f->se[p][k].silver_snap) == id) {
                return 1;
            }
        }
    }
    return 0;
}

/*
 * Feed the silver files (topics: silver_topics, into the topics operator)
 * that the range's shard epochs added, ordered by
 * (sequence number, path) so a replay reads them in the same order. They
 * are listed at silver's current snapshot when no compaction ran since the
 * oldest of them (the normal case: one listing), else at each one's own
 * snapshot (its files are live there, and kept until expiry).
 */
static int read_silver(struct fin *f, const struct fr_ck_range *r, int topics)
{
    const char *name = fr_tbl_name(topics ? FR_TBL_SILVER_TOPICS : FR_TBL_SILVER);
    int64_t oldest = INT64_MAX;
    uint32_t nsnaps = 0;
    for (uint32_t p = 0; p < r->nparts; p++) {
        for (int64_t k = 0; k < f->se_n[p]; k++) {
            const struct fn_sepoch *se = &f->se[p][k];
            if ((topics ? se->topics_snap : se->silver_snap) >= 0) {
                int64_t seq = topics ? se->topics_seq : se->silver_seq;
                nsnaps++;
                oldest = seq < oldest ? seq : oldest;
            }
        }
    }
    if (nsnaps == 0) {
        return FR_OK;
    }
    struct fr_ice_table *silver = NULL;
    int rc = fr_lake_table(&f->lake, name, &silver);
    if (rc < 0) {
        fr_error("finalize", "%s: %s %s", name, fr_strerror(rc), fr_ice_errmsg());
        return rc;
    }
    uint32_t ns = 0;
    const struct fr_ice_snapshot *ss = fr_ice_table_snapshots(silver, &ns);
    int rewritten = 0;
    for (uint32_t i = 0; i < ns; i++) {
        if (ss[i].sequence_number > oldest && ss[i].operation &&
            strcmp(ss[i].operation, "append") != 0) {
            rewritten = 1;
        }
    }
    /* The listings: one at the current snapshot, or one per snapshot. */
    int64_t lists[2] = {-1, -1};
    uint32_t nlists = 1;
    struct fr_ice_file *files = NULL;
    size_t nfiles = 0, cap = 0;
    for (uint32_t i = 0; rc == FR_OK && i < (rewritten ? ns : nlists); i++) {
        int64_t at = rewritten ? ss[i].snapshot_id : lists[0];
        if (rewritten && !wanted_snap(f, r, topics, at)) {
            continue;
        }
        struct fr_ice_file_list list;
        rc = fr_ice_files_since(f->lake.cat, silver, at, false, oldest, &list);
        if (rc < 0) {
            fr_error("finalize", "%s files: %s %s", name, fr_strerror(rc), fr_ice_errmsg());
            break;
        }
        for (size_t k = 0; rc == FR_OK && k < list.nfiles; k++) {
            const struct fr_ice_file *x = &list.files[k];
            if (rewritten ? x->snapshot_id != at : !wanted_snap(f, r, topics, x->snapshot_id)) {
                continue;
            }
            if (nfiles == cap) {
                cap = cap ? cap * 2 : 64;
                struct fr_ice_file *nf = realloc(files, cap * sizeof *files);
                if (!nf) {
                    rc = FR_ENOMEM;
                    break;
                }
                files = nf;
            }
            files[nfiles] = *x;
            /* the strings die with the list: keep copies */
            files[nfiles].path = strdup(x->path);
            files[nfiles].local_path = strdup(x->local_path);
            if (!files[nfiles].path || !files[nfiles].local_path) {
                free((void *)files[nfiles].path);
                free((void *)files[nfiles].local_path);
                rc = FR_ENOMEM;
                break;
            }
            nfiles++;
        }
        fr_ice_file_list_free(&list);
    }
    fr_ice_table_free(silver);
    if (rc == FR_OK && nfiles) {
        qsort(files, nfiles, sizeof *files, file_cmp);
    }
    char err[512];
    for (size_t k = 0; rc == FR_OK && k < nfiles; k++) {
        rc = topics ? fr_lake_scan_file(&f->lake, files[k].local_path, &f->ropts,
                                        fr_ftopics_cols, fr_ftopics_ncols, fr_ftopics_batch, f->ft,
                                        err, sizeof err)
                    : fr_lake_scan_file(&f->lake, files[k].local_path, &f->ropts, fn_cols,
                                        sizeof fn_cols / sizeof fn_cols[0], fn_batch, f, err,
                                        sizeof err);
        if (rc < 0) {
            fr_error("finalize", "%s: %s (%s)", name, err[0] ? err : fr_strerror(rc),
                     fr_err_name(rc));
        }
    }
    for (size_t k = 0; k < nfiles; k++) {
        free((void *)files[k].path);
        free((void *)files[k].local_path);
    }
    free(files);
    return rc;
}

/* ------------------------------------------------------------------ sinks */

static int sink_minute(void *arg, const struct fr_win_row *row)
{
    struct fin *f = arg;
    f->rows_epm++;
    return f->write ? fr_tw_gold_epm(&f->tw[0], row) : FR_OK;
}

static int sink_top(void *arg, const struct fr_top_row *row)
{
    struct fin *f = arg;
    f->rows_top++;
    return f->write ? fr_tw_gold_top(&f->tw[1], row) : FR_OK;
}

/* --------------------------------------------------------------- one epoch */

static int discover_partitions(struct fin *f)
{
    return fr_log_partition_count(f->conf->general_data_dir, TOPIC, &f->lopts,
                                  FR_CK_MAX_PARTS);
}

/* The frontier after consuming the range: every partition of the topic
 * must have a shard watermark; it never moves back. With enrichment,
 * *topics gets gold_top_topics' frontier the same way from the shards'
 * topics frontiers (final_topics.h). */
static int64_t next_frontier(struct fin *f, const struct fr_ck_range *r, int64_t *topics)
{
    for (uint32_t p = 0; p < r->nparts; p++) {
        if (f->se_n[p] > 0) {
            f->wm[p] = f->se[p][f->se_n[p] - 1].wm;
            if (f->ft) {
                fr_ftopics_shard(f->ft, p, f->se[p][f->se_n[p] - 1].topics);
            }
        }
    }
    int n = discover_partitions(f);
    *topics = f->ft ? fr_ftopics_frontier(f->ft) : FR_PROC_WM_NONE;
    if (n <= 0) {
        return f->frontier;
    }
    if (f->ft) {
        *topics = fr_ftopics_next(f->ft, (uint32_t)n);
    }
    if ((uint32_t)n > f->ck.nparts) {
        f->ck.nparts = (uint32_t)n; /* a new shard's wm[] is still FR_PROC_WM_NONE */
    }
    int64_t min = INT64_MAX;
    for (uint32_t p = 0; p < (uint32_t)n; p++) {
        min = f->wm[p] < min ? f->wm[p] : min;
    }
    return min > f->frontier ? min : f->frontier;
}

static int commit(struct fin *f, const struct fr_ck_range *r)
{
    char offsets[4096], wm[32], rows[32], topics[32];
    fr_ck_range_text(r, FR_PIPE_FINAL_RANGE, -1, offsets, sizeof offsets);
    snprintf(wm, sizeof wm, "%" PRId64, f->frontier);
    snprintf(rows, sizeof rows, "%" PRIu64, f->silver_rows);
    snprintf(topics, sizeof topics, "%" PRId64,
             f->ft ? fr_ftopics_frontier(f->ft) : FR_PROC_WM_NONE);
    /* With enrichment: gold_top_topics holds exactly the windows ending at
     * or before freshet.topics-frontier-us (verify recomputes them). */
    struct fr_ice_kv props[] = {
        {FR_SUMMARY_WATERMARK, wm}, {FR_SUMMARY_RECORDS, rows}, {FR_SUMMARY_TOPICS, topics}};
    struct fr_ice_commit_info info = {f->pipe, r->epoch, offsets, props, f->ft ? 3 : 2};
    int rc = FR_OK;
    for (int k = 0; rc == FR_OK && k < f->ntw; k++) {
        rc = fr_tw_finish(&f->tw[k]);
        if (rc < 0) {
            fr_error("finalize", "epoch %" PRId64 ": writing %s: %s %s", r->epoch,
                     fr_tbl_name(fn_tables[k]), fr_strerror(rc), fr_pq_errmsg());
        }
    }
    if (rc == FR_OK && f->lake.rest) {
        struct fr_lake_append apps[3];
        uint32_t n = 0;
        for (int k = 0; k < f->ntw; k++) {
            if (k == 0 || f->tw[k].rows) {
                apps[n++] = (struct fr_lake_append){fr_tbl_name(fn_tables[k]), &f->tw[k].file,
                                                    f->tw[k].rows ? 1 : 0};
            }
        }
        return fr_lake_commit_rest(&f->lake, apps, n, &info, f->conf->lake_catalog_uri);
    }
    struct fr_ice_txn *txn = NULL;
    if (rc == FR_OK) {
        rc = fr_ice_txn_begin(f->lake.cat, &txn);
    }
    for (int k = 0; rc == FR_OK && k < f->ntw; k++) {
        if (k > 0 && f->tw[k].rows == 0) {
            continue; /* gold_edits_per_minute carries the marker */
        }
        rc = fr_ice_txn_append(txn, FR_NS, fr_tbl_name(fn_tables[k]), &f->tw[k].file,
                               f->tw[k].rows ? 1 : 0, &info);
    }
    if (rc == FR_OK) {
        rc = fr_ice_txn_commit(txn, NULL);
    }
    if (rc == FR_EEXIST) { /* fenced, as a shard is (epoch.c) */
        fr_error("finalize",
                 "epoch %" PRId64 " was already committed by another owner of pipeline %s "
                 "(FR_EEXIST): stopping without committing; a restart continues from the lake",
                 r->epoch, f->pipe);
    } else if (rc < 0) {
        fr_error("finalize", "epoch %" PRId64 ": commit failed: %s (%s) %s", r->epoch,
                 fr_strerror(rc), fr_err_name(rc), fr_ice_errmsg());
    }
    fr_ice_txn_free(txn);
    return rc;
}

/* ---------------------------------------------------------------- stats */

/* The heartbeat, and the lag that grows with the clock. */
static void fn_stats_tick(struct fin *f)
{
    if (f->frontier != FR_PROC_WM_NONE) {
        fr_stats_set(f->stats, FR_STATS_PROC_WATERMARK, 0, (double)f->frontier / 1e6);
        fr_stats_set(f->stats, FR_STATS_PROC_WM_LAG, 0,
                     (double)fr_wall_ms() / 1000.0 - (double)f->frontier / 1e6);
    }
    fr_stats_publish(f->stats);
}

/* After the checkpoint of an epoch; batch_ms < 0: a replay (not counted). */
static void fn_stats_epoch(struct fin *f, int64_t epoch, int64_t batch_ms, int64_t commit_ms)
{
    if (batch_ms >= 0) {
        fr_stats_add(f->stats, FR_STATS_PROC_EPOCHS, 0, 1);
        fr_stats_observe(f->stats, FR_STATS_PROC_BATCH, (double)batch_ms / 1000.0);
        fr_stats_observe(f->stats, FR_STATS_PROC_COMMIT, (double)commit_ms / 1000.0);
        fr_stats_set(f->stats, FR_STATS_PROC_LAST_BATCH, 0, (double)batch_ms / 1000.0);
        fr_stats_set(f->stats, FR_STATS_PROC_LAST_COMMIT, 0, (double)commit_ms / 1000.0);
        fr_stats_set(f->stats, FR_STATS_PROC_LAST_COMMIT_TS, 0, (double)fr_wall_ms() / 1000.0);
    }
    if (epoch >= 0) {
        fr_stats_set(f->stats, FR_STATS_PROC_LAST_EPOCH, 0, (double)epoch);
    }
    /* The dashboard's live view: the windows gold has not settled yet. */
    int rc = fr_stats_view_publish_windows(f->stats, f->win, f->top, f->frontier,
                                           f->max_event_us, epoch);
    if (rc < 0) {
        fr_warn("finalize", "cannot write the live view: %s", fr_strerror(rc));
    }
    fn_stats_tick(f);
}

/* One epoch over range r, whose shard epochs collect has gathered;
 * committed: it is already in gold, so it is replayed to the frontier it
 * committed (recorded) with nothing written. */
static int run_epoch(struct fin *f, const struct fr_ck_range *r, int committed, int64_t recorded,
                     int64_t recorded_topics)
{
    int64_t t0 = fr_mono_ms();
    f->write = !committed;
    f->silver_rows = f->rows_epm = f->rows_top = f->topic_rows = f->rows_topics = 0;
    for (int k = 0; k < f->ntw; k++) {
        fr_tw_init(&f->tw[k], fn_tables[k], f->table_dir[k], f->pipe, r->epoch,
                   (size_t)f->conf->process_row_group_bytes);
        f->tw[k].lake = &f->lake;
        f->tw[k].many_owners = 1; /* fenced by the marker, not a lock */
    }
    int rc = read_silver(f, r, 0);
    if (rc == FR_OK && f->ft) {
        rc = read_silver(f, r, 1);
        f->topic_rows = fr_ftopics_take_rows(f->ft);
    }
    if (rc == FR_OK) {
        int64_t topics;
        int64_t frontier = next_frontier(f, r, &topics);
        /* a replay settles exactly what the committed epoch settled */
        f->frontier = committed ? recorded : frontier;
        if (f->frontier != FR_PROC_WM_NONE) {
            rc = fr_win_advance(f->win, f->frontier, sink_minute, f);
            if (rc == FR_OK) {
                rc = fr_win_top_advance(f->top, f->frontier, sink_top, f);
            }
        }
        if (rc == FR_OK && f->ft) {
            rc = fr_ftopics_advance(f->ft, committed ? recorded_topics : topics, &f->tw[2],
                                    f->write, &f->rows_topics);
        }
    }
    int64_t t1 = fr_mono_ms();
    if (rc == FR_OK && f->write) {
        rc = commit(f, r);
    }
    for (int k = 0; k < f->ntw; k++) {
        fr_tw_abort(&f->tw[k]);
    }
    if (rc < 0) {
        return rc;
    }
    int64_t t2 = fr_mono_ms();
    f->ck.epoch = r->epoch;
    for (uint32_t p = 0; p < r->nparts; p++) {
        f->ck.next[p] = r->end[p];
    }
    if (r->nparts > f->ck.nparts) {
        f->ck.nparts = r->nparts;
    }
    fr_buf_reset(&f->ck.state);
    rc = fn_save(f, &f->ck.state);
    if (rc == FR_OK) {
        rc = fr_ck_save(f->dir, &f->ck);
    }
    if (rc < 0) {
        fr_error("finalize", "epoch %" PRId64 ": writing the checkpoint %s/checkpoint failed: %s (%s)",
                 r->epoch, f->dir, fr_strerror(rc), fr_err_name(rc));
        return rc;
    }
    fr_ckm_push(f->ckm, f->dir, r->epoch);
    fn_stats_epoch(f, r->epoch, committed ? -1 : fr_mono_ms() - t0, t2 - t1);
    char when[32] = "none";
    if (f->frontier != FR_PROC_WM_NONE) {
        fr_time_format_ms(f->frontier, when);
    }
    int64_t shard_epochs = 0;
    for (uint32_t p = 0; p < r->nparts; p++) {
        shard_epochs += r->end[p] - r->start[p];
    }
    fr_info("finalize",
            "epoch %" PRId64 "%s: %" PRId64 " shard epochs, %" PRIu64 " silver rows; %" PRIu64
            "+%" PRIu64 " gold rows; read %" PRId64 " ms, commit %" PRId64 " ms; frontier %s",
            r->epoch, committed ? " (already in the lake: state rebuilt)" : "", shard_epochs,
            f->silver_rows, f->rows_epm, f->rows_top, t1 - t0, t2 - t1, when);
    if (f->ft) {
        char tw[32] = "none";
        if (fr_ftopics_frontier(f->ft) != FR_PROC_WM_NONE) {
            fr_time_format_ms(fr_ftopics_frontier(f->ft), tw);
        }
        fr_info("finalize",
                "epoch %" PRId64 " topics: %" PRIu64 " resolved silver_topics rows; %" PRIu64
                " gold_top_topics rows; topics frontier %s",
                r->epoch, f->topic_rows, f->rows_topics, tw);
        fr_ftopics_publish(f->ft, f->conf->general_data_dir, r->epoch);
    }
    int64_t every = f->conf->process_maintain_every_epochs;
    if (!committed && every > 0 && (r->epoch + 1) % every == 0) {
        uint8_t want[FR_TBL_EVERY] = {0};
        for (int t = 0; t < FR_TBL_EVERY; t++) {
            want[t] = t < FR_TBL_COUNT || (f->ft && t != FR_TBL_DLQ_REPLAYS);
        }
        int64_t cutoff = fr_wall_ms() - f->conf->maintenance_expire_after_s * 1000;
        int64_t keep = f->looked_ms - FN_KEEP_MARGIN_MS;
        fr_maint_tables(&f->lake, f->conf, want, cutoff < keep ? cutoff : keep, &f->maint);
    }
    return FR_OK;
}

/* ---------------------------------------------------------------- command */

/* Wait for shard epochs to consume; 1 with a range, 0 to stop. */
static int plan(struct fin *f, struct fr_ck_range *r)
{
    int64_t t0 = fr_mono_ms();
    for (;;) {
        int rc = collect(f, NULL, f->conf->process_epoch_max_records, r);
        if (rc < 0) {
            return rc;
        }
        int64_t n = 0;
        for (uint32_t p = 0; p < r->nparts; p++) {
            n += r->end[p] - r->start[p];
        }
        /* The trigger's fixed rate, as the shards' (docs/adr/0039). */
        if (n > 0 &&
            (f->once || final_stop ||
             fr_ck_trigger_left(f->cut_ms, t0, fr_mono_ms(), f->conf->process_trigger_ms) == 0)) {
            f->cut_ms = fr_mono_ms();
            return 1;
        }
        if (final_stop || (f->once && n == 0)) {
            return 0;
        }
        fn_stats_tick(f);
        fr_sleep_ms(n > 0 ? 50 : 200);
    }
}

int fr_final_run(struct fr_conf *conf, int once, const char *instance)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = final_on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    int status = 1, lock_fd = -1, rc;
    struct fin *f = calloc(1, sizeof *f);
    if (!f) {
        return 1;
    }
    f->conf = conf;
    f->once = once;
    f->cut_ms = -1;
    f->frontier = FR_PROC_WM_NONE;
    f->max_event_us = FR_PROC_WM_NONE;
    fr_buf_init(&f->ck.state, FN_STATE_CAP);
    f->ck.epoch = -1;
    fr_pq_read_opts_default(&f->ropts);
    for (uint32_t p = 0; p < FR_CK_MAX_PARTS; p++) {
        f->wm[p] = FR_PROC_WM_NONE;
    }
    snprintf(f->pipe, sizeof f->pipe, "%s%s", conf->general_pipeline_id, FR_PIPE_FINAL_SUFFIX);
    snprintf(f->shard_prefix, sizeof f->shard_prefix, "%s-p", conf->general_pipeline_id);
    fr_log_opts_init(&f->lopts);
    struct fr_proc_opts popts;
    fr_proc_opts_default(&popts);
    if (fr_kafka_backend_from_conf(conf, &f->lopts, &f->kafka) < 0 ||
        fr_win_create(&popts.win, &f->win) < 0 || fr_win_top_create(&popts.top, &f->top) < 0 ||
        (conf->enrich_enabled && fr_ftopics_open(&f->ft) < 0)) {
        goto cleanup;
    }
    f->ntw = f->ft ? 3 : 2;
    if (fr_maint_ck_dir(conf, f->pipe, f->dir, sizeof f->dir) < 0) {
        fr_error("finalize", "cannot create the checkpoint directory of %s", f->pipe);
        goto cleanup;
    }
    long holder = 0;
    lock_fd = fr_ck_lock(f->dir, &holder);
    if (lock_fd < 0) {
        fr_error("finalize", "pipeline %s is locked by process %ld", f->pipe, holder);
        goto cleanup;
    }
    {
        struct fr_stats_member who = {FR_STATS_ROLE_FINALIZER, -1, instance};
        fr_stats_open_member(conf->general_data_dir, &who, &f->stats);
        fr_stats_set(f->stats, FR_STATS_PROC_TRIGGER, 0, (double)conf->process_trigger_ms / 1000.0);
    }
    if (fr_lake_open(conf, &f->lake) < 0) {
        goto cleanup;
    }
    rc = f->lake.rest ? FR_OK : fr_tbl_ensure(f->lake.cat);
    for (int t = 0; f->lake.rest && rc == FR_OK && t < FR_TBL_COUNT; t++) {
        rc = fr_tbl_ensure_rest(f->lake.rest, (enum fr_tbl)t);
    }
    if (rc < 0) {
        fr_error("finalize", "catalog: %s %s", fr_strerror(rc), fr_ice_errmsg());
        goto cleanup;
    }
    for (int t = FR_TBL_COUNT; f->ft && rc == FR_OK && t < FR_TBL_EVERY; t++) {
        if (t != FR_TBL_DLQ_REPLAYS) { /* the enrichment tables: the shards write two */
            rc = f->lake.rest ? fr_tbl_ensure_rest(f->lake.rest, (enum fr_tbl)t)
                              : fr_tbl_ensure_one(f->lake.cat, (enum fr_tbl)t);
        }
    }
    if (rc < 0) {
        fr_error("finalize", "catalog: %s %s", fr_strerror(rc), fr_ice_errmsg());
        goto cleanup;
    }
    for (int k = 0; k < f->ntw; k++) {
        struct fr_ice_table *t = NULL;
        if ((rc = fr_lake_table(&f->lake, fr_tbl_name(fn_tables[k]), &t)) < 0) {
            fr_error("finalize", "%s: %s %s", fr_tbl_name(fn_tables[k]), fr_strerror(rc),
                     fr_ice_errmsg());
            goto cleanup;
        }
        snprintf(f->table_dir[k], sizeof f->table_dir[k], "%s", fr_ice_table_dir(t));
        fr_ice_table_free(t);
    }
    if (fr_ckm_open(conf, f->pipe, &f->ckm) < 0 || fr_ckm_pull(f->ckm, f->dir) < 0) {
        goto cleanup;
    }
    rc = fr_ck_load(f->dir, &f->ck);
    if (rc == FR_OK) {
        rc = fn_load(f, f->ck.state.data, f->ck.state.len);
        if (rc < 0) {
            fr_error("finalize", "checkpoint state in %s is unusable: %s", f->dir,
                     fr_strerror(rc));
            goto cleanup;
        }
        fr_info("finalize", "resuming after epoch %" PRId64, f->ck.epoch);
    } else if (rc == FR_ENOTFOUND) {
        f->ck.epoch = -1;
        fr_info("finalize", "no checkpoint: starting with the shards' first epochs");
    } else {
        fr_error("finalize", "checkpoint in %s is damaged: %s; refusing to guess", f->dir,
                 fr_strerror(rc));
        goto cleanup;
    }
    {
        struct fr_ice_table *t = NULL;
        int64_t snap;
        f->lake_epoch = -1;
        rc = fr_lake_table(&f->lake, fr_tbl_name(FR_TBL_GOLD_EPM), &t);
        if (rc == FR_OK) {
            rc = fr_ice_last_epoch(t, f->pipe, &f->lake_epoch, &snap);
            rc = rc == FR_ENOTFOUND || rc == 0 ? FR_OK : rc;
        }
        char rebuild[64];
        int64_t rebuilt;
        if (rc == FR_OK && f->lake_epoch > f->ck.epoch &&
            fr_maint_rebuilt_after(t, f->pipe, f->ck.epoch, rebuild, sizeof rebuild, &rebuilt) ==
                1) {
            fr_maint_rebuilt_refused("finalize", f->pipe, rebuilt, rebuild, f->ck.epoch, f->dir);
            fr_ice_table_free(t);
            goto cleanup;
        }
        fr_ice_table_free(t);
        if (rc < 0) {
            fr_error("finalize", "cannot read gold's last epoch: %s", fr_strerror(rc));
            goto cleanup;
        }
    }
    fn_stats_epoch(f, f->ck.epoch, -1, 0);
    struct fr_ck_range planned;
    rc = fr_ck_wal_last(f->dir, &planned);
    if (rc == FR_ECORRUPT) {
        goto cleanup; /* named by fr_ck_wal_last: damage, not a torn tail (ADR 0061) */
    }
    int have_plan = rc == FR_OK && planned.epoch == f->ck.epoch + 1;
    while (!final_stop) {
        struct fr_ck_range r, lr;
        int64_t recorded = FR_PROC_WM_NONE, recorded_topics = FR_PROC_WM_NONE;
        int committed = 0, planned_now = 0;
        rc = f->ck.epoch + 1 <= f->lake_epoch
                 ? lake_epoch_range(f, f->ck.epoch + 1, &lr, &recorded, &recorded_topics)
                 : 0;
        if (rc < 0) {
            goto cleanup;
        }
        if (rc == 1) {
            r = lr; /* in the lake: its own range, whatever the WAL says */
            committed = 1;
        } else if (f->ck.epoch + 1 <= f->lake_epoch) {
            fr_error("finalize", "epoch %" PRId64 " is in gold but its snapshot has expired",
                     f->ck.epoch + 1);
            goto cleanup;
        } else if (have_plan) {
            r = planned;
            fr_info("finalize", "replaying planned epoch %" PRId64, r.epoch);
        } else {
            rc = plan(f, &r);
            if (rc < 0) {
                goto cleanup;
            }
            if (rc == 0) {
                break;
            }
            if ((rc = fr_ck_wal_append(f->dir, &r)) < 0) {
                fr_error("finalize", "offsets WAL: %s", fr_strerror(rc));
                goto cleanup;
            }
            planned_now = 1;
        }
        have_plan = 0;
        /* A range just planned comes with its shard epochs' facts (collect
         * gathered exactly those); a replayed one's are gathered again. */
        struct fr_ck_range got;
        if (!planned_now && (rc = collect(f, &r, INT64_MAX, &got)) < 0) {
            goto cleanup;
        }
        rc = run_epoch(f, &r, committed, recorded, recorded_topics);
        if (rc < 0) {
            goto cleanup;
        }
    }
    status = 0;

cleanup:
    fr_stats_close(f->stats);
    se_free(f);
    fr_win_destroy(f->win);
    fr_win_top_destroy(f->top);
    fr_ftopics_free(f->ft);
    fr_kafka_free(f->kafka);
    fr_ckm_close(f->ckm);
    fr_lake_close(&f->lake);
    fr_buf_free(&f->ck.state);
    free(f);
    if (lock_fd >= 0) {
        close(lock_fd);
    }
    return status;
}
