/*
 * dlq_lookup.c — `freshet dlq replay --lookups`: the dead letters of the
 * enrichment stage (wiki.dlq_lookups: lookups that failed, edits refused
 * by a full pending table) looked up again, once the API is healthy, and
 * landed exactly once (docs/ENRICH.md, "Replaying failed lookups").
 *
 *   LOCK ──► CLEAN ──► SELECT ──► LOOK UP ──► FILES ──► COMMIT
 *
 *   CLEAN    files a crashed replay left (named <pipeline>-lookups-*) and
 *            that no snapshot lists are removed;
 *   SELECT   dead letters whose meta_id has no silver_topics row yet (a
 *            replayed edit's row carries replay_id: landed means present),
 *            and whose windows are all settled (every 10-minute window
 *            holding the edit ends at or before the frontier committed
 *            with the newest epoch); edits of windows still open stay for
 *            a later replay (the processor settles those windows itself);
 *            at most REPLAY_SPAN_US of event time per run;
 *   LOOK UP  through the same client as the processor (src/enrich);
 *            failures stay dead letters;
 *   FILES    silver_topics: one row per answered edit, replay_id set;
 *            gold_top_topics: every window holding a newly resolved edit
 *            recomputed from silver_topics (and the new rows), the rest of
 *            the table copied unchanged into the same new file;
 *   COMMIT   ONE catalog transaction: append to silver_topics, overwrite
 *            gold_top_topics; summary freshet.lookup-replay=<id>, no epoch
 *            marker.
 * A crash before COMMIT leaves nothing visible (its files are CLEANed by
 * the next run); after it, the rows are there and are not selected again.
 * So each dead letter lands at most once, and after a rerun at least once.
 *
 * One thread; holds the pipeline lock (the processor must not run: it
 * would race the overwrite of gold_top_topics).
 */
#include "pipeline/maint.h"

#include "pipeline/estage.h"
#include "pipeline/lake.h"

#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"
#include "enrich/enrich.h"
#include "process/process.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FR_SUMMARY_LOOKUP_REPLAY "freshet.lookup-replay"
#define REPLAY_MAX ((size_t)1 << 20)              /* dead letters per run */
#define REPLAY_SPAN_US (INT64_C(6) * 3600 * 1000000) /* event time per run */
#define DONE_MAX ((size_t)1 << 24)
#define POLL_BATCH 64

struct lk_edit {
    struct fr_topic_edit e;
    char *text; /* wiki NUL server NUL title NUL */
    uint8_t key[16];
    int outcome; /* 0 until answered: enum fr_enrich_outcome */
    int why;
    uint64_t item;
    int label_why;  /* enum fr_enrich_label_why, RESOLVED only */
    char label_lang[FR_ENRICH_LANG_MAX + 1];
    char *label;    /* NULL: none */
};

struct lk {
    struct fr_conf *conf;
    const struct fr_lake *lake; /* data files are read and written through it */
    struct fr_ice_catalog *cat; /* lake->cat */
    char id[32];
    int64_t frontier;
    /* meta_ids already in silver_topics with a replay_id, sorted */
    uint8_t (*done)[16];
    size_t ndone, done_cap;
    struct lk_edit *edits;
    size_t n, cap;
    uint64_t selected, open, already, beyond;
    uint64_t resolved, no_item, failed;
    /* windows to recompute: starts, sorted, unique */
    int64_t *wins;
    size_t nwins;
    struct fr_tw tw_topics, tw_gold;
    /* the recomputation of the windows: silver_topics' resolved rows with
     * event times in [lo, hi) */
    struct fr_topics *topics;
    int64_t lo, hi;
    /* dlq list: counts by reason, and a few samples of each */
    struct lk_reason {
        char name[32];
        uint64_t count, replayed;
        uint32_t nsamples;
        char samples[3][200];
    } reasons[8];
    uint32_t nreasons;
};

static int key_cmp(const void *a, const void *b)
{
    return memcmp(a, b, 16);
}

static int i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int edit_cmp(const void *a, const void *b)
{
    const struct lk_edit *x = a, *y = b;
    if (x->e.event_us != y->e.event_us) {
        return x->e.event_us < y->e.event_us ? -1 : 1;
    }
    return memcmp(x->key, y->key, 16);
}

/* ----------------------------------------------------------- scanning */

typedef int (*lk_batch_fn)(struct lk *lk, const struct fr_pq_batch *b);

/* fr_lake_batch_fn over an lk_batch_fn. */
struct lk_scan_arg {
    struct lk *lk;
    lk_batch_fn fn;
};

static int lk_scan_batch(void *arg, const struct fr_pq_batch *b)
{
    struct lk_scan_arg *sa = arg;
    return sa->fn(sa->lk, b);
}

/* Every row of table tbl's live files, columns by name (types checked). */
static int lk_scan(struct lk *lk, enum fr_tbl tbl, const char *const *names,
                   const enum fr_pq_type *types, uint32_t ncols, lk_batch_fn fn)
{
    struct fr_ice_table *table = NULL;
    int rc = fr_lake_table(lk->lake, fr_tbl_name(tbl), &table);
    if (rc == FR_ENOTFOUND) {
        return FR_OK;
    }
    if (rc < 0) {
        fr_error("dlq", "%s: %s %s", fr_tbl_name(tbl), fr_strerror(rc), fr_ice_errmsg());
        return rc;
    }
    struct fr_ice_file_list list;
    rc = fr_ice_files(lk->cat, table, -1, true, &list);
    fr_ice_table_free(table);
    if (rc < 0) {
        fr_error("dlq", "%s: %s %s", fr_tbl_name(tbl), fr_strerror(rc), fr_ice_errmsg());
        return rc;
    }
    struct fr_lake_col cols[16];
    for (uint32_t c = 0; c < ncols && c < 16; c++) {
        cols[c] = (struct fr_lake_col){names[c], types[c]};
    }
    struct lk_scan_arg sa = {lk, fn};
    char err[512];
    for (size_t i = 0; rc == FR_OK && i < list.nfiles; i++) {
        rc = fr_lake_scan_file(lk->lake, list.files[i].local_path, NULL, cols, ncols, lk_scan_batch,
                               &sa, err, sizeof err);
        if (rc < 0) {
            fr_error("dlq", "%s", err[0] ? err : fr_strerror(rc));
        }
    }
    fr_ice_file_list_free(&list);
    return rc;
}

static int lk_done_batch(struct lk *lk, const struct fr_pq_batch *b)
{
    for (uint32_t i = 0; i < b->nrows; i++) {
        if (b->cols[1].nulls[i]) {
            continue; /* landed by the stream: never in dlq_lookups */
        }
        const struct fr_pq_str *id = &b->cols[0].v.str[i];
        uint8_t key[16];
        if (fr_gate_uuid(id->ptr, id->len, key) < 0) {
            continue;
        }
        if (lk->ndone == lk->done_cap) {
            size_t cap = lk->done_cap ? lk->done_cap * 2 : 1024;
            if (cap > DONE_MAX) {
                fr_error("dlq", "more than %zu replayed lookups in silver_topics", DONE_MAX);
                return FR_ETOOBIG;
            }
            void *p = realloc(lk->done, cap * 16);
            if (!p) {
                return FR_ENOMEM;
            }
            lk->done = p;
            lk->done_cap = cap;
        }
        memcpy(lk->done[lk->ndone++], key, 16);
    }
    return FR_OK;
}

static char *text3(const struct fr_pq_str *a, const struct fr_pq_str *b, const struct fr_pq_str *c)
{
    char *t = malloc((size_t)a->len + b->len + c->len + 3);
    if (t) {
        memcpy(t, a->ptr, a->len);
        t[a->len] = 0;
        memcpy(t + a->len + 1, b->ptr, b->len);
        t[a->len + 1 + b->len] = 0;
        memcpy(t + a->len + b->len + 2, c->ptr, c->len);
        t[a->len + b->len + 2 + c->len] = 0;
    }
    return t;
}

/* dlq_lookups: meta_id, event_time, wiki, server_name, title, log_partition, log_offset */
static int lk_dlq_batch(struct lk *lk, const struct fr_pq_batch *b)
{
    for (uint32_t i = 0; i < b->nrows; i++) {
        const struct fr_pq_str *id = &b->cols[0].v.str[i];
        int64_t ev = b->cols[1].v.i64[i];
        struct lk_edit x;
        memset(&x, 0, sizeof x);
        if (id->len != 36 || fr_gate_uuid(id->ptr, id->len, x.key) < 0) {
            continue;
        }
        if (lk->ndone && bsearch(x.key, lk->done, lk->ndone, 16, key_cmp)) {
            lk->already++;
            continue;
        }
        /* Every window holding the edit ends by floor(ev) + 10 min. */
        if (lk->frontier == FR_PROC_WM_NONE ||
            ev - ev % FR_PROC_MINUTE_US + FR_TOP_WINDOW_US > lk->frontier) {
            lk->open++;
            continue;
        }
        if (lk->n == REPLAY_MAX) {
            lk->beyond++;
            continue;
        }
        if (lk->n == lk->cap) {
            size_t cap = lk->cap ? lk->cap * 2 : 1024;
            void *p = realloc(lk->edits, cap * sizeof *lk->edits);
            if (!p) {
                return FR_ENOMEM;
            }
            lk->edits = p;
            lk->cap = cap;
        }
        x.text = text3(&b->cols[2].v.str[i], &b->cols[3].v.str[i], &b->cols[4].v.str[i]);
        if (!x.text) {
            return FR_ENOMEM;
        }
        memcpy(x.e.meta_id, id->ptr, 36);
        x.e.event_us = ev;
        x.e.wiki = x.text;
        x.e.server_name = x.text + strlen(x.text) + 1;
        x.e.title = x.e.server_name + strlen(x.e.server_name) + 1;
        x.e.partition = b->cols[5].v.i32[i];
        x.e.offset = b->cols[6].v.i64[i];
        lk->edits[lk->n++] = x;
    }
    return FR_OK;
}

/* Sort by event time, drop repeated meta_ids, keep REPLAY_SPAN_US of event
 * time (the rest waits for the next run). */
static void lk_select(struct lk *lk)
{
    if (lk->n) {
        qsort(lk->edits, lk->n, sizeof *lk->edits, edit_cmp);
    }
    size_t out = 0;
    for (size_t i = 0; i < lk->n; i++) {
        int repeat = 0;
        for (size_t j = out; j-- > 0 && lk->edits[j].e.event_us == lk->edits[i].e.event_us;) {
            repeat |= memcmp(lk->edits[j].key, lk->edits[i].key, 16) == 0;
        }
        if (repeat || (out && lk->edits[i].e.event_us - lk->edits[0].e.event_us > REPLAY_SPAN_US)) {
            lk->beyond += !repeat;
            free(lk->edits[i].text);
            continue;
        }
        lk->edits[out++] = lk->edits[i];
    }
    lk->n = out;
    lk->selected = out;
}

/* ------------------------------------------------------------ lookups */

static int lk_lookup(struct lk *lk)
{
    struct fr_enrich_config cfg;
    fr_enrich_config_from_conf(lk->conf, &cfg);
    struct fr_enrich *client = NULL;
    char err[256] = "";
    int rc = fr_enrich_new(&cfg, NULL, &client, err, sizeof err);
    if (rc < 0) {
        fr_error("dlq", "enrichment client: %s", err[0] ? err : fr_strerror(rc));
        return rc;
    }
    struct fr_enrich_result *res = calloc(POLL_BATCH, sizeof *res);
    if (!res) {
        fr_enrich_free(client);
        return FR_ENOMEM;
    }
    size_t next = 0, answered = 0;
    while (answered < lk->n) {
        while (next < lk->n) {
            struct lk_edit *x = &lk->edits[next];
            rc = fr_enrich_submit(client, x->e.server_name, x->e.title, strlen(x->e.title), next);
            if (rc == FR_EAGAIN) {
                break;
            }
            if (rc < 0) { /* a server name the client refuses */
                x->outcome = FR_ENRICH_NO_ITEM;
                x->why = FR_ENRICH_WHY_INVALID;
                answered++;
            }
            next++;
        }
        int n = fr_enrich_poll(client, 200, res, POLL_BATCH);
        if (n < 0) {
            rc = n;
            break;
        }
        for (int k = 0; k < n; k++) {
            struct lk_edit *x = &lk->edits[res[k].tag];
            x->outcome = res[k].outcome;
            x->why = res[k].why;
            if (res[k].outcome == FR_ENRICH_RESOLVED) {
                char *end = NULL;
                x->item = strtoull(res[k].item + 1, &end, 10);
                if (res[k].item[0] != 'Q' || x->item == 0 || *end) {
                    x->outcome = FR_ENRICH_NO_ITEM;
                    x->why = FR_ENRICH_WHY_INVALID;
                }
                x->label_why = res[k].label_why;
                memcpy(x->label_lang, res[k].label_lang, sizeof x->label_lang);
                if (res[k].label_why == FR_ENRICH_LABEL_OK && res[k].label[0] &&
                    !(x->label = strdup(res[k].label))) {
                    rc = FR_ENOMEM;
                    break;
                }
            }
            answered++;
        }
        rc = FR_OK;
    }
    free(res);
    fr_enrich_free(client);
    return rc;
}

/* ------------------------------------------------------------- windows */

static const char *lk_why(int why)
{
    return why == FR_ENRICH_WHY_NO_PROP   ? "no_prop"
           : why == FR_ENRICH_WHY_MISSING ? "missing"
           : why == FR_ENRICH_WHY_INVALID ? "invalid"
                                          : NULL;
}

static int lk_has_win(const struct lk *lk, int64_t s)
{
    return lk->nwins && bsearch(&s, lk->wins, lk->nwins, sizeof s, i64_cmp) != NULL;
}

/* The recomputation: silver_topics' resolved rows in the windows' span. */
static int lk_silver_batch(struct lk *lk, const struct fr_pq_batch *b)
{
    for (uint32_t i = 0; i < b->nrows; i++) {
        int64_t ev = b->cols[0].v.i64[i];
        const struct fr_pq_str *outcome = &b->cols[1].v.str[i];
        if (ev < lk->lo || ev >= lk->hi || b->cols[2].nulls[i] || outcome->len != 8 ||
            memcmp(outcome->ptr, "resolved", 8) != 0) {
            continue;
        }
        const struct fr_pq_str *item = &b->cols[2].v.str[i];
        const struct fr_pq_str *wiki = &b->cols[3].v.str[i];
        char buf[32];
        if (item->len < 2 || item->len >= sizeof buf || item->ptr[0] != 'Q') {
            continue;
        }
        memcpy(buf, item->ptr + 1, item->len - 1);
        buf[item->len - 1] = 0;
        const struct fr_pq_str *label = b->cols[4].nulls && b->cols[4].nulls[i]
                                            ? NULL : &b->cols[4].v.str[i];
        int rc = fr_topics_add(lk->topics, ev, strtoull(buf, NULL, 10), wiki->ptr, wiki->len,
                               label ? label->ptr : NULL, label ? label->len : 0);
        if (rc < 0) {
            return rc;
        }
    }
    return FR_OK;
}

struct lk_emit {
    struct lk *lk;
    uint64_t rows;
};

static int lk_emit_row(void *arg, const struct fr_topic_row *row)
{
    struct lk_emit *em = arg;
    if (!lk_has_win(em->lk, row->window_start_us)) {
        return 0;
    }
    em->rows++;
    return fr_tw_gold_topics(&em->lk->tw_gold, row);
}

/* gold_top_topics: copy every row of a window not recomputed. */
static int lk_gold_batch(struct lk *lk, const struct fr_pq_batch *b)
{
    for (uint32_t i = 0; i < b->nrows; i++) {
        if (lk_has_win(lk, b->cols[0].v.i64[i])) {
            continue;
        }
        int rc = fr_tw_gold_topics_raw(
            &lk->tw_gold, b->cols[0].v.i64[i], b->cols[1].v.i64[i], b->cols[2].v.i32[i],
            b->cols[3].v.str[i].ptr, b->cols[3].v.str[i].len, b->cols[4].v.i64[i],
            b->cols[5].v.i32[i], b->cols[6].v.str[i].ptr, b->cols[6].v.str[i].len,
            b->cols[7].nulls && b->cols[7].nulls[i] ? NULL : b->cols[7].v.str[i].ptr,
            b->cols[7].nulls && b->cols[7].nulls[i] ? 0 : b->cols[7].v.str[i].len);
        if (rc < 0) {
            return rc;
        }
    }
    return FR_OK;
}

static int lk_windows(struct lk *lk)
{
    size_t cap = 0;
    for (size_t i = 0; i < lk->n; i++) {
        cap += lk->edits[i].outcome == FR_ENRICH_RESOLVED ? 10 : 0;
    }
    if (cap == 0) {
        return FR_OK;
    }
    lk->wins = malloc(cap * sizeof *lk->wins);
    if (!lk->wins) {
        return FR_ENOMEM;
    }
    for (size_t i = 0; i < lk->n; i++) {
        if (lk->edits[i].outcome != FR_ENRICH_RESOLVED) {
            continue;
        }
        int64_t m = lk->edits[i].e.event_us - lk->edits[i].e.event_us % FR_PROC_MINUTE_US;
        for (int k = 0; k < 10; k++) {
            lk->wins[lk->nwins++] = m - k * FR_PROC_MINUTE_US;
        }
    }
    qsort(lk->wins, lk->nwins, sizeof *lk->wins, i64_cmp);
    size_t u = 0;
    for (size_t i = 0; i < lk->nwins; i++) {
        if (u == 0 || lk->wins[u - 1] != lk->wins[i]) {
            lk->wins[u++] = lk->wins[i];
        }
    }
    lk->nwins = u;
    return FR_OK;
}

/* ---------------------------------------------------------------- list */

/* dlq_lookups: meta_id, reason, detail, wiki, title */
static int lk_list_batch(struct lk *lk, const struct fr_pq_batch *b)
{
    for (uint32_t i = 0; i < b->nrows; i++) {
        const struct fr_pq_str *id = &b->cols[0].v.str[i], *reason = &b->cols[1].v.str[i];
        const struct fr_pq_str *detail = &b->cols[2].v.str[i], *wiki = &b->cols[3].v.str[i];
        const struct fr_pq_str *title = &b->cols[4].v.str[i];
        uint32_t r = 0;
        while (r < lk->nreasons && (strlen(lk->reasons[r].name) != reason->len ||
                                    memcmp(lk->reasons[r].name, reason->ptr, reason->len) != 0)) {
            r++;
        }
        if (r == lk->nreasons) {
            if (r == sizeof lk->reasons / sizeof lk->reasons[0] ||
                reason->len >= sizeof lk->reasons[0].name) {
                continue;
            }
            memset(&lk->reasons[r], 0, sizeof lk->reasons[r]);
            memcpy(lk->reasons[r].name, reason->ptr, reason->len);
            lk->nreasons++;
        }
        struct lk_reason *lr = &lk->reasons[r];
        uint8_t key[16];
        int replayed = fr_gate_uuid(id->ptr, id->len, key) == FR_OK && lk->ndone &&
                       bsearch(key, lk->done, lk->ndone, 16, key_cmp) != NULL;
        lr->count++;
        lr->replayed += (uint64_t)replayed;
        if (lr->nsamples < 3) {
            snprintf(lr->samples[lr->nsamples++], sizeof lr->samples[0], "%.*s \"%.*s\"  %.*s%s",
                     (int)wiki->len, wiki->ptr, (int)(title->len > 80 ? 80 : title->len),
                     title->ptr, (int)detail->len, detail->ptr, replayed ? "  (replayed)" : "");
        }
    }
    return FR_OK;
}

int fr_dlq_list_lookups(struct fr_conf *conf, const struct fr_lake *lake, FILE *out)
{
    struct lk *lk = calloc(1, sizeof *lk);
    if (!lk) {
        return FR_ENOMEM;
    }
    lk->conf = conf;
    lk->lake = lake;
    lk->cat = lake->cat;
    static const char *const done_cols[] = {"meta_id", "replay_id"};
    static const enum fr_pq_type done_types[] = {FR_PQ_STRING, FR_PQ_STRING};
    int rc = lk_scan(lk, FR_TBL_SILVER_TOPICS, done_cols, done_types, 2, lk_done_batch);
    if (rc == FR_OK && lk->ndone) {
        qsort(lk->done, lk->ndone, 16, key_cmp);
    }
    static const char *const cols[] = {"meta_id", "reason", "detail", "wiki", "title"};
    static const enum fr_pq_type types[] = {FR_PQ_STRING, FR_PQ_STRING, FR_PQ_STRING, FR_PQ_STRING,
                                            FR_PQ_STRING};
    rc = rc ? rc : lk_scan(lk, FR_TBL_DLQ_LOOKUPS, cols, types, 5, lk_list_batch);
    uint64_t total = 0, replayed = 0;
    for (uint32_t r = 0; r < lk->nreasons; r++) {
        total += lk->reasons[r].count;
        replayed += lk->reasons[r].replayed;
    }
    if (rc == FR_OK && total) {
        fprintf(out,
                "\ndlq_lookups: %" PRIu64 " failed lookups, %" PRIu64
                " of them replayed (`freshet dlq replay --lookups`)\n  %-20s %10s %10s\n",
                total, replayed, "reason", "count", "replayed");
        for (uint32_t r = 0; r < lk->nreasons; r++) {
            fprintf(out, "  %-20s %10" PRIu64 " %10" PRIu64 "\n", lk->reasons[r].name,
                    lk->reasons[r].count, lk->reasons[r].replayed);
        }
        for (uint32_t r = 0; r < lk->nreasons; r++) {
            fprintf(out, "\n%s:\n", lk->reasons[r].name);
            for (uint32_t k = 0; k < lk->reasons[r].nsamples; k++) {
                fprintf(out, "  %s\n", lk->reasons[r].samples[k]);
            }
        }
    }
    free(lk->done);
    free(lk);
    return rc;
}

/* ------------------------------------------------------------- command */

static int lk_frontier(struct lk *lk)
{
    struct fr_ice_table *bronze = NULL;
    int64_t epoch = -1, snap = -1;
    lk->frontier = FR_PROC_WM_NONE;
    int rc = fr_lake_table(lk->lake, fr_tbl_name(FR_TBL_BRONZE), &bronze);
    if (rc == FR_OK) {
        rc = fr_ice_last_epoch(bronze, lk->conf->general_pipeline_id, &epoch, &snap);
    }
    if (rc == FR_OK) {
        uint32_t ns = 0;
        const struct fr_ice_snapshot *s = fr_ice_table_snapshots(bronze, &ns);
        for (uint32_t i = 0; i < ns; i++) {
            const char *v = s[i].snapshot_id == snap ? fr_maint_summary(&s[i], FR_SUMMARY_TOPICS)
                                                      : NULL;
            if (v) {
                lk->frontier = strtoll(v, NULL, 10);
            }
        }
    }
    fr_ice_table_free(bronze);
    return rc == FR_ENOTFOUND ? FR_OK : rc;
}

static int lk_commit(struct lk *lk, int gold)
{
    struct fr_ice_kv props[] = {{FR_SUMMARY_LOOKUP_REPLAY, lk->id}};
    struct fr_ice_commit_info info = {NULL, -1, NULL, props, 1}; /* no epoch marker */
    if (lk->lake->rest) {
        /* The same append and overwrite in one POST /transactions/commit
         * (maint_rest.c). gold_top_topics was recomputed from the table as
         * loaded: if anything moved it meanwhile (a processor running
         * elsewhere), fail rather than stage that overwrite again. A lost
         * answer needs no intent: the next run's CLEAN keeps the files if
         * they landed (and their rows are then not selected again), else
         * removes them. */
        struct fr_lake_append apps[2] = {
            {fr_tbl_name(FR_TBL_SILVER_TOPICS), &lk->tw_topics.file, 1},
            {fr_tbl_name(FR_TBL_GOLD_TOPICS), &lk->tw_gold.file, lk->tw_gold.rows ? 1 : 0}};
        int rc = fr_maint_commit_rest_mixed(lk->lake, apps, gold ? 2 : 1, 2u, &info, "dlq", 1);
        if (rc == FR_EREQUIREMENT) {
            fr_error("dlq", "lookup replay %s: silver_topics or gold_top_topics moved while it "
                            "ran: is the processor running? Stop it and run the replay again",
                     lk->id);
        }
        return rc;
    }
    struct fr_ice_txn *txn = NULL;
    int rc = fr_ice_txn_begin(lk->cat, &txn);
    if (rc == FR_OK) {
        rc = fr_ice_txn_append(txn, FR_NS, fr_tbl_name(FR_TBL_SILVER_TOPICS), &lk->tw_topics.file,
                               1, &info);
    }
    if (rc == FR_OK && gold) {
        rc = fr_ice_txn_overwrite(txn, FR_NS, fr_tbl_name(FR_TBL_GOLD_TOPICS), &lk->tw_gold.file,
                                  lk->tw_gold.rows ? 1 : 0, &info);
    }
    if (rc == FR_OK) {
        rc = fr_ice_txn_commit(txn, NULL);
    }
    fr_ice_txn_free(txn);
    if (rc < 0) {
        fr_error("dlq", "lookup replay %s: commit failed: %s %s", lk->id, fr_strerror(rc),
                 fr_ice_errmsg());
    }
    return rc;
}

static int lk_table_dir(struct lk *lk, enum fr_tbl tbl, char *out, size_t outlen)
{
    struct fr_ice_table *t = NULL;
    int rc = fr_lake_table(lk->lake, fr_tbl_name(tbl), &t);
    if (rc == FR_OK) {
        snprintf(out, outlen, "%s", fr_ice_table_dir(t));
    }
    fr_ice_table_free(t);
    return rc;
}

int fr_dlq_replay_lookups(struct fr_conf *conf, const char *dir, const struct fr_lake *lake,
                          int dry_run)
{
    (void)dir;
    struct lk *lk = calloc(1, sizeof *lk);
    if (!lk) {
        return FR_ENOMEM;
    }
    struct fr_ice_catalog *cat = lake->cat;
    lk->conf = conf;
    lk->lake = lake;
    lk->cat = cat;
    snprintf(lk->id, sizeof lk->id, "%" PRId64, fr_wall_ms());
    int64_t t0 = fr_mono_ms();
    char prefix[300], rel[512], tdir[4096], gdir[4096];
    snprintf(prefix, sizeof prefix, "%s-lookups-", conf->general_pipeline_id);
    unsigned removed = 0;
    static const enum fr_tbl need[] = {FR_TBL_SILVER_TOPICS, FR_TBL_GOLD_TOPICS,
                                       FR_TBL_DLQ_LOOKUPS};
    int rc = FR_OK;
    for (int k = 0; rc == FR_OK && k < 3; k++) {
        rc = lake->rest ? fr_tbl_ensure_rest(lake->rest, need[k]) : fr_tbl_ensure_one(cat, need[k]);
    }
    if (rc == FR_OK && !dry_run) {
        rc = fr_maint_remove_prefixed(lake, FR_TBL_SILVER_TOPICS, prefix, &removed);
        rc = rc ? rc : fr_maint_remove_prefixed(lake, FR_TBL_GOLD_TOPICS, prefix, &removed);
    }
    rc = rc ? rc : lk_frontier(lk);
    if (rc < 0) {
        fr_error("dlq", "lookup replay: %s %s", fr_strerror(rc), fr_ice_errmsg());
        goto cleanup;
    }
    static const char *const done_cols[] = {"meta_id", "replay_id"};
    static const enum fr_pq_type done_types[] = {FR_PQ_STRING, FR_PQ_STRING};
    rc = lk_scan(lk, FR_TBL_SILVER_TOPICS, done_cols, done_types, 2, lk_done_batch);
    if (rc < 0) {
        goto cleanup;
    }
    if (lk->ndone) {
        qsort(lk->done, lk->ndone, 16, key_cmp);
    }
    static const char *const dlq_cols[] = {"meta_id",     "event_time",    "wiki",      "server_name",
                                           "title",       "log_partition", "log_offset"};
    static const enum fr_pq_type dlq_types[] = {FR_PQ_STRING, FR_PQ_TIMESTAMP, FR_PQ_STRING,
                                                FR_PQ_STRING, FR_PQ_STRING,    FR_PQ_INT32,
                                                FR_PQ_INT64};
    rc = lk_scan(lk, FR_TBL_DLQ_LOOKUPS, dlq_cols, dlq_types, 7, lk_dlq_batch);
    if (rc < 0) {
        goto cleanup;
    }
    lk_select(lk);
    if (lk->n == 0 || dry_run) {
        printf("lookup replay: %" PRIu64 " failed lookups to replay, %" PRIu64
               " already replayed, %" PRIu64 " in windows still open, %" PRIu64
               " beyond this run%s\n",
               lk->selected, lk->already, lk->open, lk->beyond, dry_run ? " (dry run)" : "");
        rc = FR_OK;
        goto cleanup;
    }
    rc = lk_lookup(lk);
    rc = rc ? rc : lk_table_dir(lk, FR_TBL_SILVER_TOPICS, tdir, sizeof tdir);
    rc = rc ? rc : lk_table_dir(lk, FR_TBL_GOLD_TOPICS, gdir, sizeof gdir);
    if (rc < 0) {
        goto cleanup;
    }
    snprintf(rel, sizeof rel, "data/%s%s.parquet", prefix, lk->id);
    fr_tw_init_named(&lk->tw_topics, FR_TBL_SILVER_TOPICS, tdir, rel,
                     (size_t)conf->process_row_group_bytes);
    fr_tw_init_named(&lk->tw_gold, FR_TBL_GOLD_TOPICS, gdir, rel,
                     (size_t)conf->process_row_group_bytes);
    lk->tw_topics.lake = lake;
    lk->tw_gold.lake = lake;
    for (size_t i = 0; rc == FR_OK && i < lk->n; i++) {
        struct lk_edit *x = &lk->edits[i];
        char item[32];
        snprintf(item, sizeof item, "Q%llu", (unsigned long long)x->item);
        if (x->outcome == FR_ENRICH_RESOLVED) {
            lk->resolved++;
            struct fr_topic_label label = {x->label, x->label ? x->label_lang : NULL,
                                           fr_estage_label_why(x->label_why)};
            rc = fr_tw_topic(&lk->tw_topics, &x->e, "resolved", NULL, item, &label, lk->id);
        } else if (x->outcome == FR_ENRICH_NO_ITEM) {
            lk->no_item++;
            rc = fr_tw_topic(&lk->tw_topics, &x->e, "no_item", lk_why(x->why), NULL, NULL,
                             lk->id);
        } else {
            lk->failed++;
        }
    }
    rc = rc ? rc : lk_windows(lk);
    if (rc == FR_OK && lk->nwins) {
        struct fr_topics_opts topts = {FR_TOPICS_DEFAULT_MAX_ENTRIES, FR_TOPICS_DEFAULT_MAX_WIKIS};
        rc = fr_topics_create(&topts, &lk->topics);
        lk->lo = lk->wins[0];
        lk->hi = lk->wins[lk->nwins - 1] + FR_TOP_WINDOW_US;
        static const char *const sil_cols[] = {"event_time", "outcome", "item", "wiki", "?label"};
        static const enum fr_pq_type sil_types[] = {FR_PQ_TIMESTAMP, FR_PQ_STRING, FR_PQ_STRING,
                                                    FR_PQ_STRING, FR_PQ_STRING};
        rc = rc ? rc : lk_scan(lk, FR_TBL_SILVER_TOPICS, sil_cols, sil_types, 5, lk_silver_batch);
        for (size_t i = 0; rc == FR_OK && i < lk->n; i++) {
            const struct lk_edit *x = &lk->edits[i];
            if (x->outcome == FR_ENRICH_RESOLVED) {
                rc = fr_topics_add(lk->topics, x->e.event_us, x->item, x->e.wiki,
                                   strlen(x->e.wiki), x->label, x->label ? strlen(x->label) : 0);
            }
        }
        static const char *const gold_cols[] = {"window_start", "window_end", "rank",
                                                "item",         "edits",      "wikis",
                                                "top_wikis",    "?label"};
        static const enum fr_pq_type gold_types[] = {FR_PQ_TIMESTAMP, FR_PQ_TIMESTAMP,
                                                     FR_PQ_INT32,     FR_PQ_STRING,
                                                     FR_PQ_INT64,     FR_PQ_INT32,
                                                     FR_PQ_STRING,    FR_PQ_STRING};
        rc = rc ? rc : lk_scan(lk, FR_TBL_GOLD_TOPICS, gold_cols, gold_types, 8, lk_gold_batch);
        struct lk_emit em = {lk, 0};
        rc = rc ? rc : fr_topics_advance(lk->topics, lk->hi, lk_emit_row, &em);
    }
    rc = rc ? rc : fr_tw_finish(&lk->tw_topics);
    rc = rc ? rc : fr_tw_finish(&lk->tw_gold);
    if (rc == FR_OK && lk->tw_topics.rows) {
        rc = lk_commit(lk, lk->nwins > 0);
    }
    if (rc < 0) {
        fr_error("dlq", "lookup replay %s: %s %s", lk->id, fr_strerror(rc), fr_pq_errmsg());
        goto cleanup;
    }
    printf("lookup replay %s: %" PRIu64 " looked up again: %" PRIu64 " resolved, %" PRIu64
           " no item, %" PRIu64 " still failing (left in dlq_lookups); %zu gold_top_topics "
           "windows recomputed; %" PRIu64 " already replayed, %" PRIu64
           " in windows still open, %" PRIu64 " beyond this run; %u stale files removed; %" PRId64
           " ms\n",
           lk->id, lk->selected, lk->resolved, lk->no_item, lk->failed, lk->nwins, lk->already,
           lk->open, lk->beyond, removed, fr_mono_ms() - t0);
cleanup:
    fr_tw_abort(&lk->tw_topics);
    fr_tw_abort(&lk->tw_gold);
    if (rc < 0 && rc != FR_EUNKNOWN) { /* nothing committed: what this attempt wrote goes
                                          * (an unknown REST outcome keeps them for CLEAN) */
        unlink(lk->tw_topics.path);
        unlink(lk->tw_gold.path);
    }
    for (size_t i = 0; i < lk->n; i++) {
        free(lk->edits[i].text);
        free(lk->edits[i].label);
    }
    free(lk->edits);
    free(lk->done);
    free(lk->wins);
    fr_topics_destroy(lk->topics);
    free(lk);
    return rc;
}
