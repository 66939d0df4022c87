/*
 * tables.c — schemas of the six tables (and of dlq_replays, which only
 * `freshet dlq replay` writes) and the per-epoch Parquet writers.
 *
 * Each table's columns are declared once (TABLE_COLS below) with their
 * field id, name, Iceberg type, Parquet type and nullability; the Iceberg
 * definition and the Parquet schema are both built from that declaration,
 * so the two can never disagree on an id.
 */
#include "pipeline/tables.h"

#include "pipeline/lake.h"

#include "iceberg/rest.h"

#include "core/diag.h"
#include "core/err.h"
#include "core/fsutil.h"
#include "core/utf8.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct tbl_col {
    int32_t id;
    const char *name;
    enum fr_ice_type ice;
    enum fr_pq_type pq;
    bool required;
};

#define TSTZ FR_ICE_TIMESTAMPTZ, FR_PQ_TIMESTAMP
#define STR FR_ICE_STRING, FR_PQ_STRING
#define LONG FR_ICE_LONG, FR_PQ_INT64
#define INT FR_ICE_INT, FR_PQ_INT32
#define BOOL FR_ICE_BOOLEAN, FR_PQ_BOOL

static const struct tbl_col bronze_cols[] = {
    {1, "log_partition", INT, true}, {2, "log_offset", LONG, true},
    {3, "ingest_time", TSTZ, true},  {4, "event_time", TSTZ, true},
    {5, "meta_id", STR, true},       {6, "wiki", STR, true},
    {7, "type", STR, true},          {8, "raw", STR, true},
};

/* silver and late_arrivals share their first 23 columns. */
#define SILVER_COLS                                                                           \
    {1, "meta_id", STR, true}, {2, "event_time", TSTZ, true}, {3, "wiki", STR, true},         \
        {4, "type", STR, true}, {5, "namespace", INT, false}, {6, "title", STR, false},       \
        {7, "user", STR, false}, {8, "bot", BOOL, false}, {9, "minor", BOOL, false},          \
        {10, "patrolled", BOOL, false}, {11, "length_old", LONG, false},                      \
        {12, "length_new", LONG, false}, {13, "revision_old", LONG, false},                   \
        {14, "revision_new", LONG, false}, {15, "server_name", STR, false},                   \
        {16, "comment", STR, false}, {17, "log_type", STR, false},                            \
        {18, "log_action", STR, false}, {19, "rc_id", LONG, false}, {20, "log_id", LONG, false}, \
        {21, "log_partition", INT, true}, {22, "log_offset", LONG, true},                     \
        {23, "ingest_time", TSTZ, true}

static const struct tbl_col silver_cols[] = {SILVER_COLS};
static const struct tbl_col late_cols[] = {
    SILVER_COLS, {24, "watermark", TSTZ, true}, {25, "lateness_ms", LONG, true}};

static const struct tbl_col epm_cols[] = {
    {1, "window_start", TSTZ, true}, {2, "window_end", TSTZ, true},
    {3, "wiki", STR, true},          {4, "events", LONG, true},
    {5, "edits", LONG, true},        {6, "new_pages", LONG, true},
    {7, "bot_events", LONG, true},   {8, "bytes_added", LONG, true},
    {9, "bytes_removed", LONG, true}, {10, "distinct_users", LONG, true},
    {11, "distinct_users_exact", BOOL, true},
};

static const struct tbl_col top_cols[] = {
    {1, "window_start", TSTZ, true}, {2, "window_end", TSTZ, true}, {3, "rank", INT, true},
    {4, "wiki", STR, true},          {5, "title", STR, true},       {6, "edits", LONG, true},
};

static const struct tbl_col dlq_cols[] = {
    {1, "log_partition", INT, true}, {2, "log_offset", LONG, true},
    {3, "ingest_time", TSTZ, true},  {4, "reason", STR, true},
    {5, "detail", STR, true},        {6, "raw", STR, false},
    {7, "raw_base64", STR, false},
};

static const struct tbl_col replay_cols[] = {
    {1, "log_partition", INT, true}, {2, "log_offset", LONG, true},
    {3, "ingest_time", TSTZ, true},  {4, "reason", STR, true},
    {5, "replay_id", STR, true},     {6, "replayed_at", TSTZ, true},
    {7, "outcome", STR, true},       {8, "meta_id", STR, true},
    {9, "event_time", TSTZ, true},
};

static const struct tbl_col topic_cols[] = {
    {1, "meta_id", STR, true},       {2, "event_time", TSTZ, true}, {3, "wiki", STR, true},
    {4, "server_name", STR, true},   {5, "title", STR, true},       {6, "outcome", STR, true},
    {7, "why", STR, false},          {8, "item", STR, false},       {9, "log_partition", INT, true},
    {10, "log_offset", LONG, true},  {11, "replay_id", STR, false},
    /* Issue 33, added by schema evolution to older lakes (fr_tbl_ensure_one). */
    {12, "label", STR, false},       {13, "label_lang", STR, false}, {14, "label_why", STR, false},
};

static const struct tbl_col gold_topic_cols[] = {
    {1, "window_start", TSTZ, true}, {2, "window_end", TSTZ, true}, {3, "rank", INT, true},
    {4, "item", STR, true},          {5, "edits", LONG, true},      {6, "wikis", INT, true},
    {7, "top_wikis", STR, true},
    {8, "label", STR, false}, /* issue 33, added by schema evolution to older lakes */
};

static const struct tbl_col dlq_lookup_cols[] = {
    {1, "meta_id", STR, true},      {2, "event_time", TSTZ, true},    {3, "wiki", STR, true},
    {4, "server_name", STR, true},  {5, "title", STR, true},          {6, "reason", STR, true},
    {7, "detail", STR, true},       {8, "attempts", INT, true},       {9, "log_partition", INT, true},
    {10, "log_offset", LONG, true}, {11, "failed_at", TSTZ, true},
};

struct tbl_info {
    const char *name;
    const struct tbl_col *cols;
    uint32_t ncols;
    struct fr_ice_field ice[32];
    struct fr_pq_column pq[32];
    struct fr_ice_table_def def;
    struct fr_pq_schema schema;
};

#define TBL(name, cols) {name, cols, sizeof cols / sizeof cols[0], {{0}}, {{0}}, {0}, {0}}
static struct tbl_info tbl_infos[FR_TBL_EVERY] = {
    TBL("bronze_recentchange", bronze_cols),     TBL("silver_recentchange", silver_cols),
    TBL("gold_edits_per_minute", epm_cols),      TBL("gold_top_pages", top_cols),
    TBL("late_arrivals", late_cols),             TBL("dlq", dlq_cols),
    TBL("dlq_replays", replay_cols),             TBL("silver_topics", topic_cols),
    TBL("gold_top_topics", gold_topic_cols),     TBL("dlq_lookups", dlq_lookup_cols),
};
static int tbl_built;

static const struct fr_ice_kv tbl_props[] = {
    {"write.format.default", "parquet"},
    {"write.parquet.compression-codec", "zstd"},
    {"freshet.owner", "freshet process"},
};

static void tbl_build(void)
{
    if (tbl_built) {
        return;
    }
    for (int t = 0; t < FR_TBL_EVERY; t++) {
        struct tbl_info *info = &tbl_infos[t];
        for (uint32_t i = 0; i < info->ncols; i++) {
            const struct tbl_col *col = &info->cols[i];
            info->ice[i] = (struct fr_ice_field){col->id, col->name, col->ice, col->required, NULL};
            info->pq[i] = (struct fr_pq_column){col->name, col->pq, !col->required, col->id};
        }
        info->def = (struct fr_ice_table_def){info->ice, info->ncols, NULL, 0, tbl_props,
                                              sizeof tbl_props / sizeof tbl_props[0]};
        info->schema = (struct fr_pq_schema){info->pq, info->ncols};
    }
    tbl_built = 1;
}

const char *fr_tbl_name(enum fr_tbl tbl) { return tbl_infos[tbl].name; }

const struct fr_ice_table_def *fr_tbl_def(enum fr_tbl tbl)
{
    tbl_build();
    return &tbl_infos[tbl].def;
}

const struct fr_pq_schema *fr_tbl_pq_schema(enum fr_tbl tbl)
{
    tbl_build();
    return &tbl_infos[tbl].schema;
}

/* Schema evolution (ADR 0057): a table created by an older freshet lacks
 * the optional columns declared after its last one; add them, in order, so
 * they get the declared field ids. A table whose columns differ otherwise
 * is left alone and refused (FR_ECONFIG, logged). */
static int tbl_evolve(struct fr_ice_catalog *cat, enum fr_tbl tbl, const struct fr_ice_table *table)
{
    const struct tbl_info *info = &tbl_infos[tbl];
    uint32_t n = 0;
    const struct fr_ice_field *have = fr_ice_table_fields(table, &n);
    for (uint32_t i = 0; i < info->ncols; i++) {
        const struct tbl_col *col = &info->cols[i];
        int found = 0;
        for (uint32_t k = 0; k < n && !found; k++) {
            found = strcmp(have[k].name, col->name) == 0;
            if (found && have[k].id != col->id) {
                fr_error("lake", "%s.%s: column %s has field id %d, freshet writes %d", FR_NS,
                         info->name, col->name, (int)have[k].id, (int)col->id);
                return FR_ECONFIG;
            }
        }
        if (found) {
            continue;
        }
        int32_t id = 0;
        int rc = col->required ? FR_ECONFIG
                               : fr_ice_add_column(cat, FR_NS, info->name, col->name, col->ice,
                                                   NULL, &id);
        if (rc == FR_EEXIST) { /* added by a racing process: reload and check */
            return FR_EAGAIN;
        }
        if (rc == FR_OK && id != col->id) {
            rc = FR_ECONFIG;
        }
        if (rc < 0) {
            fr_error("lake", "%s.%s: cannot add column %s (field id %d): %s", FR_NS, info->name,
                     col->name, (int)col->id, fr_strerror(rc));
            return rc;
        }
        fr_info("lake", "%s.%s: added column %s (field id %d)", FR_NS, info->name, col->name,
                (int)id);
    }
    return FR_OK;
}

int fr_tbl_ensure_one(struct fr_ice_catalog *cat, enum fr_tbl tbl)
{
    tbl_build();
    int rc = FR_OK;
    for (int tries = 0; tries < 3; tries++) {
        struct fr_ice_table *table = NULL;
        rc = fr_ice_table_load(cat, FR_NS, tbl_infos[tbl].name, &table);
        if (rc == FR_ENOTFOUND) {
            rc = fr_ice_table_create(cat, FR_NS, tbl_infos[tbl].name, &tbl_infos[tbl].def,
                                     &table);
            if (rc == FR_EEXIST) { /* created by a racing process */
                rc = fr_ice_table_load(cat, FR_NS, tbl_infos[tbl].name, &table);
            }
        }
        if (rc == FR_OK) {
            rc = tbl_evolve(cat, tbl, table);
        }
        fr_ice_table_free(table);
        if (rc != FR_EAGAIN) {
            break;
        }
    }
    return rc < 0 ? rc : FR_OK;
}

/* The same through a REST catalog (ADR 0059): the missing columns in one
 * schema change, the catalog's compare-and-swap settling races. */
static int tbl_evolve_rest(struct fr_ice_rest *rest, enum fr_tbl tbl)
{
    const struct tbl_info *info = &tbl_infos[tbl];
    uint64_t added = 0;
    int rc = fr_ice_rest_evolve(rest, FR_NS, info->name, &info->def, &added);
    if (rc < 0) {
        fr_error("lake", "%s.%s: cannot add its new columns through the REST catalog %s: %s (%s)",
                 FR_NS, info->name, fr_ice_rest_uri(rest), fr_strerror(rc), fr_ice_errmsg());
        return rc;
    }
    for (uint32_t i = 0; i < info->ncols; i++) {
        if (added & ((uint64_t)1 << i)) {
            fr_info("lake", "%s.%s: added column %s (field id %d)", FR_NS, info->name,
                    info->cols[i].name, (int)info->cols[i].id);
        }
    }
    return FR_OK;
}

int fr_tbl_ensure_rest(struct fr_ice_rest *rest, enum fr_tbl tbl)
{
    tbl_build();
    struct fr_buf b;
    fr_buf_init(&b, (size_t)64 << 20);
    int rc = fr_ice_rest_load_table(rest, FR_NS, tbl_infos[tbl].name, &b);
    if (rc == FR_ENOTFOUND) {
        rc = fr_ice_rest_create_namespace(rest, FR_NS);
        if (rc == FR_OK || rc == FR_EEXIST) {
            fr_buf_reset(&b);
            rc = fr_ice_rest_create_request(tbl_infos[tbl].name, &tbl_infos[tbl].def, &b);
        }
        if (rc == FR_OK) {
            struct fr_buf out;
            fr_buf_init(&out, (size_t)64 << 20);
            rc = fr_ice_rest_create_table(rest, FR_NS, (const char *)b.data, b.len, &out);
            fr_buf_free(&out);
        }
        rc = rc == FR_EEXIST ? FR_OK : rc;
    } else if (rc == FR_OK) {
        rc = tbl_evolve_rest(rest, tbl);
    }
    fr_buf_free(&b);
    return rc;
}

int fr_tbl_ensure(struct fr_ice_catalog *cat)
{
    for (int t = 0; t < FR_TBL_COUNT; t++) {
        int rc = fr_tbl_ensure_one(cat, (enum fr_tbl)t);
        if (rc < 0) {
            return rc;
        }
    }
    return FR_OK;
}

/* ------------------------------------------------------------------ writers */

void fr_tw_init(struct fr_tw *tw, enum fr_tbl tbl, const char *table_dir, const char *pipeline,
                int64_t epoch, size_t row_group_bytes)
{
    memset(tw, 0, sizeof *tw);
    tw->tbl = tbl;
    tw->row_group_bytes = row_group_bytes;
    snprintf(tw->rel, sizeof tw->rel, "data/%s-e%012lld.parquet", pipeline, (long long)epoch);
    snprintf(tw->path, sizeof tw->path, "%s/%s", table_dir, tw->rel);
    tw->per_epoch = 1;
}

void fr_tw_init_named(struct fr_tw *tw, enum fr_tbl tbl, const char *table_dir, const char *rel,
                      size_t row_group_bytes)
{
    memset(tw, 0, sizeof *tw);
    tw->tbl = tbl;
    tw->row_group_bytes = row_group_bytes;
    snprintf(tw->rel, sizeof tw->rel, "%s", rel);
    snprintf(tw->path, sizeof tw->path, "%s/%s", table_dir, tw->rel);
}

/* rel "data/P-eN.parquet" becomes "data/P-eN-<uuid>.parquet", and path
 * with it. */
static int tw_unique_name(struct fr_tw *tw)
{
    const size_t ext = sizeof ".parquet" - 1;
    size_t len = strlen(tw->rel), dir = strlen(tw->path) - len;
    if (len < ext) {
        return FR_EINVAL;
    }
    char uuid[37], rel[sizeof tw->rel];
    fr_ice_uuid(uuid);
    int n = snprintf(rel, sizeof rel, "%.*s-%s.parquet", (int)(len - ext), tw->rel, uuid);
    if (n < 0 || (size_t)n >= sizeof rel || dir + (size_t)n >= sizeof tw->path) {
        return FR_EINVAL;
    }
    memcpy(tw->rel, rel, (size_t)n + 1);
    memcpy(tw->path + dir, rel, (size_t)n + 1);
    tw->per_epoch = 0;
    return FR_OK;
}

static int tw_open(struct fr_tw *tw)
{
    if (tw->pq) {
        return FR_OK;
    }
    struct fr_pq_opts opts;
    fr_pq_opts_default(&opts);
    opts.codec = FR_PQ_ZSTD;
    opts.zstd_level = 1;
    opts.row_group_bytes = tw->row_group_bytes;
    /* Columns whose values are all distinct by construction (event ids,
     * the raw JSON): no dictionary, so no hashing and copying of values
     * that the first page's check would throw away in every row group. */
    const struct tbl_info *info = &tbl_infos[tw->tbl];
    for (uint32_t i = 0; i < info->ncols; i++) {
        uint64_t bit = (uint64_t)1 << i;
        bool meta_id = strcmp(info->cols[i].name, "meta_id") == 0;
        if (meta_id || (tw->tbl == FR_TBL_BRONZE && strcmp(info->cols[i].name, "raw") == 0)) {
            opts.plain_columns |= bit;
        }
        /* meta.id is a random UUID (the gate checks its form): zstd finds
         * nothing to match in it, only hex to entropy-code (docs/adr/0034). */
        if (meta_id) {
            opts.random_columns |= bit;
        }
        /* Offsets, times, ids and lengths: as deltas (docs/adr/0035). */
        if (info->cols[i].pq == FR_PQ_INT64 || info->cols[i].pq == FR_PQ_TIMESTAMP) {
            opts.delta_columns |= bit;
        }
    }
    /* Bronze carries the raw JSON (most of the epoch's bytes) and silver
     * the next most: in large epochs compress their pages on background
     * threads while this one decodes the next records. In live mode (small
     * epochs, files that the processor's compaction soon rewrites) the
     * thread's buffers cost more memory than it saves time, and so do 1 MiB
     * pages: 256 KiB pages on this thread take ~3 MB off the live
     * processor's RSS (docs/BENCHMARKS.md, issue 5's live RSS). */
    if (tw->large && (tw->tbl == FR_TBL_BRONZE || tw->tbl == FR_TBL_SILVER)) {
        opts.compress_workers = 1;
    }
    if (!tw->large) {
        opts.page_bytes = (size_t)256 << 10;
    }
    /* On S3 a data file is uploaded create-only (s3_io.c, invariant 1: the
     * fence against another owner of the pipeline), so an epoch's file
     * needs a name no earlier attempt used: a replay after a commit that
     * failed, or a crash between the upload and the commit, would find
     * that attempt's object under the plain name and could never write the
     * epoch. The old object is an orphan (fr_ice_remove_orphans). Local
     * files are renamed into place and keep the plain name, except where
     * another owner of the pipeline may write the same epoch: its rename
     * would replace a committed file (many_owners). */
    if (tw->per_epoch && (fr_lake_remote(tw->lake) || tw->many_owners)) {
        int rc = tw_unique_name(tw);
        if (rc < 0) {
            return rc;
        }
    }
    struct fr_pq_out out;
    int rc = fr_lake_pq_out(tw->lake, tw->path, &out);
    if (rc < 0) {
        return rc;
    }
    if (tw->large) {
        fr_pq_out_bulk(&out); /* docs/adr/0037 */
    }
    return fr_pq_writer_open(fr_tbl_pq_schema(tw->tbl), &opts, &out, &tw->pq);
}

#define TRY(expr)                                                                             \
    do {                                                                                      \
        int try_rc_ = (expr);                                                                 \
        if (try_rc_ < 0) {                                                                    \
            return try_rc_;                                                                   \
        }                                                                                     \
    } while (0)

/* Strings of a row, and the raw bytes of an accepted record, are valid
 * UTF-8: the gate checked every byte (src/process/gate.c, invariant 4), so
 * the writer does not check them a second time. Dead letters' bytes are
 * checked (fr_tw_dlq). */
static int put_str(struct fr_pq_writer *w, uint32_t col, struct fr_proc_str s)
{
    return fr_pq_write_str_valid(w, col, s.s, s.len);
}

static int put_opt_str(struct fr_pq_writer *w, uint32_t col, uint32_t has, uint32_t bit,
                       struct fr_proc_str s)
{
    return (has & bit) ? fr_pq_write_str_valid(w, col, s.s, s.len) : fr_pq_write_null(w, col);
}

static int put_opt_i64(struct fr_pq_writer *w, uint32_t col, uint32_t has, uint32_t bit,
                       int64_t v)
{
    return (has & bit) ? fr_pq_write_int64(w, col, v) : fr_pq_write_null(w, col);
}

static int put_opt_bool(struct fr_pq_writer *w, uint32_t col, uint32_t has, uint32_t bit,
                        uint8_t v)
{
    return (has & bit) ? fr_pq_write_bool(w, col, v != 0) : fr_pq_write_null(w, col);
}

/* Positions of the silver columns that fr_tw_silver_prefetch names too
 * (the order of SILVER_COLS). */
enum { SILVER_USER = 6, SILVER_REVISION_NEW = 13, SILVER_COMMENT = 15, SILVER_RC_ID = 18 };

/* The 23 columns silver and late_arrivals share. */
static int put_silver(struct fr_pq_writer *w, const struct fr_row *r)
{
    const char *type = fr_proc_type_name(r->type);
    TRY(put_str(w, 0, r->meta_id));
    TRY(fr_pq_write_int64(w, 1, r->event_us));
    TRY(put_str(w, 2, r->wiki));
    TRY(fr_pq_write_str_valid(w, 3, type, strlen(type))); /* ASCII names */
    TRY((r->has & FR_ROW_NAMESPACE) ? fr_pq_write_int32(w, 4, r->ns) : fr_pq_write_null(w, 4));
    TRY(put_opt_str(w, 5, r->has, FR_ROW_TITLE, r->title));
    TRY(put_opt_str(w, SILVER_USER, r->has, FR_ROW_USER, r->user));
    TRY(put_opt_bool(w, 7, r->has, FR_ROW_BOT, r->bot));
    TRY(put_opt_bool(w, 8, r->has, FR_ROW_MINOR, r->minor));
    TRY(put_opt_bool(w, 9, r->has, FR_ROW_PATROLLED, r->patrolled));
    TRY(put_opt_i64(w, 10, r->has, FR_ROW_LENGTH_OLD, r->length_old));
    TRY(put_opt_i64(w, 11, r->has, FR_ROW_LENGTH_NEW, r->length_new));
    TRY(put_opt_i64(w, 12, r->has, FR_ROW_REVISION_OLD, r->revision_old));
    TRY(put_opt_i64(w, SILVER_REVISION_NEW, r->has, FR_ROW_REVISION_NEW, r->revision_new));
    TRY(put_opt_str(w, 14, r->has, FR_ROW_SERVER_NAME, r->server_name));
    TRY(put_opt_str(w, SILVER_COMMENT, r->has, FR_ROW_COMMENT, r->comment));
    TRY(put_opt_str(w, 16, r->has, FR_ROW_LOG_TYPE, r->log_type));
    TRY(put_opt_str(w, 17, r->has, FR_ROW_LOG_ACTION, r->log_action));
    TRY(put_opt_i64(w, SILVER_RC_ID, r->has, FR_ROW_RC_ID, r->rc_id));
    TRY(put_opt_i64(w, 19, r->has, FR_ROW_LOG_ID, r->log_id));
    TRY(fr_pq_write_int32(w, 20, r->partition));
    TRY(fr_pq_write_int64(w, 21, r->offset));
    TRY(fr_pq_write_int64(w, 22, r->ingest_ms * 1000));
    return FR_OK;
}

int fr_tw_bronze(struct fr_tw *tw, const struct fr_row *r, const char *raw, size_t raw_len)
{
    TRY(tw_open(tw));
    struct fr_pq_writer *w = tw->pq;
    const char *type = fr_proc_type_name(r->type);
    TRY(fr_pq_write_int32(w, 0, r->partition));
    TRY(fr_pq_write_int64(w, 1, r->offset));
    TRY(fr_pq_write_int64(w, 2, r->ingest_ms * 1000));
    TRY(fr_pq_write_int64(w, 3, r->event_us));
    TRY(put_str(w, 4, r->meta_id));
    TRY(put_str(w, 5, r->wiki));
    TRY(fr_pq_write_str_valid(w, 6, type, strlen(type))); /* ASCII names */
    TRY(fr_pq_write_str_valid(w, 7, raw, raw_len));
    TRY(fr_pq_row_end(w));
    tw->rows++;
    return FR_OK;
}

int fr_tw_silver(struct fr_tw *tw, const struct fr_row *r)
{
    TRY(tw_open(tw));
    TRY(put_silver(tw->pq, r));
    TRY(fr_pq_row_end(tw->pq));
    tw->rows++;
    return FR_OK;
}

void fr_tw_silver_prefetch(const struct fr_tw *tw, const struct fr_row *r)
{
    const struct fr_pq_writer *w = tw->pq;
    if (!w) {
        return;
    }
    /* The columns with large dictionaries (ids, users, comments); the
     * others' dictionaries are a few KiB and stay in cache. */
    if (r->has & FR_ROW_USER) {
        fr_pq_prefetch_str(w, SILVER_USER, r->user.s, r->user.len);
    }
    if (r->has & FR_ROW_REVISION_NEW) {
        fr_pq_prefetch_int64(w, SILVER_REVISION_NEW, r->revision_new);
    }
    if (r->has & FR_ROW_COMMENT) {
        fr_pq_prefetch_str(w, SILVER_COMMENT, r->comment.s, r->comment.len);
    }
    if (r->has & FR_ROW_RC_ID) {
        fr_pq_prefetch_int64(w, SILVER_RC_ID, r->rc_id);
    }
}

int fr_tw_late(struct fr_tw *tw, const struct fr_row *r, int64_t watermark_us,
               int64_t lateness_us)
{
    TRY(tw_open(tw));
    TRY(put_silver(tw->pq, r));
    TRY(fr_pq_write_int64(tw->pq, 23, watermark_us));
    TRY(fr_pq_write_int64(tw->pq, 24, lateness_us / 1000));
    TRY(fr_pq_row_end(tw->pq));
    tw->rows++;
    return FR_OK;
}

/* Standard base64 of raw (dead letters whose bytes are not UTF-8). */
static int put_base64(struct fr_pq_writer *w, uint32_t col, const char *raw, size_t len)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    struct fr_buf out;
    fr_buf_init(&out, (len + 2) / 3 * 4 + 1);
    int rc = fr_buf_reserve(&out, (len + 2) / 3 * 4);
    if (rc < 0) {
        return rc;
    }
    const unsigned char *p = (const unsigned char *)raw;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < len) {
            v |= (uint32_t)p[i + 1] << 8;
        }
        if (i + 2 < len) {
            v |= p[i + 2];
        }
        out.data[out.len++] = (uint8_t)tab[v >> 18];
        out.data[out.len++] = (uint8_t)tab[(v >> 12) & 63];
        out.data[out.len++] = (uint8_t)(i + 1 < len ? tab[(v >> 6) & 63] : '=');
        out.data[out.len++] = (uint8_t)(i + 2 < len ? tab[v & 63] : '=');
    }
    rc = fr_pq_write_str(w, col, (const char *)out.data, out.len);
    fr_buf_free(&out);
    return rc;
}

int fr_tw_dlq(struct fr_tw *tw, const struct fr_proc_pos *pos, const char *reason,
              const char *detail, const char *raw, size_t raw_len)
{
    TRY(tw_open(tw));
    struct fr_pq_writer *w = tw->pq;
    TRY(fr_pq_write_int32(w, 0, pos->partition));
    TRY(fr_pq_write_int64(w, 1, pos->offset));
    TRY(fr_pq_write_int64(w, 2, pos->ingest_ms * 1000));
    TRY(fr_pq_write_str(w, 3, reason, strlen(reason)));
    TRY(fr_pq_write_str(w, 4, detail, strlen(detail)));
    if (fr_utf8_valid((const unsigned char *)raw, raw_len)) {
        TRY(fr_pq_write_str(w, 5, raw, raw_len));
        TRY(fr_pq_write_null(w, 6));
    } else {
        TRY(fr_pq_write_null(w, 5));
        TRY(put_base64(w, 6, raw, raw_len));
    }
    TRY(fr_pq_row_end(w));
    tw->rows++;
    return FR_OK;
}

int fr_tw_gold_epm(struct fr_tw *tw, const struct fr_win_row *r)
{
    TRY(tw_open(tw));
    struct fr_pq_writer *w = tw->pq;
    const struct fr_win_counts *c = &r->counts;
    TRY(fr_pq_write_int64(w, 0, r->window_start_us));
    TRY(fr_pq_write_int64(w, 1, r->window_end_us));
    TRY(put_str(w, 2, r->wiki));
    TRY(fr_pq_write_int64(w, 3, (int64_t)c->events));
    TRY(fr_pq_write_int64(w, 4, (int64_t)c->edits));
    TRY(fr_pq_write_int64(w, 5, (int64_t)c->new_pages));
    TRY(fr_pq_write_int64(w, 6, (int64_t)c->bot_events));
    TRY(fr_pq_write_int64(w, 7, c->bytes_added > INT64_MAX ? INT64_MAX : (int64_t)c->bytes_added));
    TRY(fr_pq_write_int64(w, 8,
                          c->bytes_removed > INT64_MAX ? INT64_MAX : (int64_t)c->bytes_removed));
    TRY(fr_pq_write_int64(w, 9, (int64_t)c->distinct_users));
    TRY(fr_pq_write_bool(w, 10, r->users_exact != 0));
    TRY(fr_pq_row_end(w));
    tw->rows++;
    return FR_OK;
}

int fr_tw_gold_top(struct fr_tw *tw, const struct fr_top_row *r)
{
    TRY(tw_open(tw));
    struct fr_pq_writer *w = tw->pq;
    TRY(fr_pq_write_int64(w, 0, r->window_start_us));
    TRY(fr_pq_write_int64(w, 1, r->window_end_us));
    TRY(fr_pq_write_int32(w, 2, (int32_t)r->rank));
    TRY(put_str(w, 3, r->wiki));
    TRY(put_str(w, 4, r->title));
    TRY(fr_pq_write_int64(w, 5, (int64_t)r->count));
    TRY(fr_pq_row_end(w));
    tw->rows++;
    return FR_OK;
}

int fr_tw_dlq_replay(struct fr_tw *tw, const struct fr_row *r, const char *reason,
                     const char *replay_id, int64_t replayed_at_us, const char *outcome)
{
    TRY(tw_open(tw));
    struct fr_pq_writer *w = tw->pq;
    TRY(fr_pq_write_int32(w, 0, r->partition));
    TRY(fr_pq_write_int64(w, 1, r->offset));
    TRY(fr_pq_write_int64(w, 2, r->ingest_ms * 1000));
    TRY(fr_pq_write_str(w, 3, reason, strlen(reason)));
    TRY(fr_pq_write_str(w, 4, replay_id, strlen(replay_id)));
    TRY(fr_pq_write_int64(w, 5, replayed_at_us));
    TRY(fr_pq_write_str(w, 6, outcome, strlen(outcome)));
    TRY(put_str(w, 7, r->meta_id));
    TRY(fr_pq_write_int64(w, 8, r->event_us));
    TRY(fr_pq_row_end(w));
    tw->rows++;
    return FR_OK;
}

static int put_cstr(struct fr_pq_writer *w, uint32_t col, const char *s)
{
    return s ? fr_pq_write_str(w, col, s, strlen(s)) : fr_pq_write_null(w, col);
}

static int put_edit(struct fr_pq_writer *w, const struct fr_topic_edit *e)
{
    TRY(fr_pq_write_str(w, 0, e->meta_id, strlen(e->meta_id)));
    TRY(fr_pq_write_int64(w, 1, e->event_us));
    TRY(put_cstr(w, 2, e->wiki));
    TRY(put_cstr(w, 3, e->server_name));
    TRY(put_cstr(w, 4, e->title));
    return FR_OK;
}

int fr_tw_topic(struct fr_tw *tw, const struct fr_topic_edit *e, const char *outcome,
                const char *why, const char *item, const struct fr_topic_label *label,
                const char *replay_id)
{
    TRY(tw_open(tw));
    struct fr_pq_writer *w = tw->pq;
    TRY(put_edit(w, e));
    TRY(put_cstr(w, 5, outcome));
    TRY(put_cstr(w, 6, why));
    TRY(put_cstr(w, 7, item));
    TRY(fr_pq_write_int32(w, 8, e->partition));
    TRY(fr_pq_write_int64(w, 9, e->offset));
    TRY(put_cstr(w, 10, replay_id));
    TRY(put_cstr(w, 11, label ? label->text : NULL));
    TRY(put_cstr(w, 12, label ? label->lang : NULL));
    TRY(put_cstr(w, 13, label ? label->why : NULL));
    TRY(fr_pq_row_end(w));
    tw->rows++;
    return FR_OK;
}

int fr_tw_gold_topics(struct fr_tw *tw, const struct fr_topic_row *r)
{
    char item[32], top[3 * (FR_PROC_WIKI_MAX + 24)];
    snprintf(item, sizeof item, "Q%llu", (unsigned long long)r->item);
    size_t len = 0;
    for (uint32_t i = 0; i < r->n_top && i < FR_TOPICS_TOP_WIKIS; i++) {
        len += (size_t)snprintf(top + len, sizeof top - len, "%s%.*s:%llu", i ? "," : "",
                                (int)r->top[i].wiki.len, r->top[i].wiki.s,
                                (unsigned long long)r->top[i].edits);
    }
    return fr_tw_gold_topics_raw(tw, r->window_start_us, r->window_end_us, (int32_t)r->rank, item,
                                 strlen(item),
                                 r->edits > INT64_MAX ? INT64_MAX : (int64_t)r->edits,
                                 (int32_t)r->wikis, top, len, r->label.s, r->label.len);
}

int fr_tw_gold_topics_raw(struct fr_tw *tw, int64_t start_us, int64_t end_us, int32_t rank,
                          const char *item, size_t item_len, int64_t edits, int32_t wikis,
                          const char *top, size_t top_len, const char *label, size_t label_len)
{
    TRY(tw_open(tw));
    struct fr_pq_writer *w = tw->pq;
    TRY(fr_pq_write_int64(w, 0, start_us));
    TRY(fr_pq_write_int64(w, 1, end_us));
    TRY(fr_pq_write_int32(w, 2, rank));
    TRY(fr_pq_write_str(w, 3, item, item_len));
    TRY(fr_pq_write_int64(w, 4, edits));
    TRY(fr_pq_write_int32(w, 5, wikis));
    TRY(fr_pq_write_str(w, 6, top, top_len));
    TRY(label ? fr_pq_write_str(w, 7, label, label_len) : fr_pq_write_null(w, 7));
    TRY(fr_pq_row_end(w));
    tw->rows++;
    return FR_OK;
}

int fr_tw_dlq_lookup(struct fr_tw *tw, const struct fr_topic_edit *e, const char *reason,
                     const char *detail, int attempts, int64_t failed_at_us)
{
    TRY(tw_open(tw));
    struct fr_pq_writer *w = tw->pq;
    TRY(put_edit(w, e));
    TRY(put_cstr(w, 5, reason));
    TRY(put_cstr(w, 6, detail ? detail : ""));
    TRY(fr_pq_write_int32(w, 7, attempts));
    TRY(fr_pq_write_int32(w, 8, e->partition));
    TRY(fr_pq_write_int64(w, 9, e->offset));
    TRY(fr_pq_write_int64(w, 10, failed_at_us));
    TRY(fr_pq_row_end(w));
    tw->rows++;
    return FR_OK;
}

int fr_tw_finish(struct fr_tw *tw)
{
    if (tw->finished || !tw->pq) {
        tw->finished = 1;
        return FR_OK;
    }
    int rc = fr_pq_writer_close(tw->pq, &tw->stats);
    fr_pq_writer_free(tw->pq);
    tw->pq = NULL;
    if (rc < 0) {
        return rc;
    }
    tw->finished = 1;
    return fr_ice_file_from_pq(tw->rel, fr_tbl_pq_schema(tw->tbl), &tw->stats, &tw->file,
                               tw->metrics, tw->bounds, sizeof tw->bounds);
}

void fr_tw_abort(struct fr_tw *tw)
{
    if (tw->pq) {
        fr_pq_writer_free(tw->pq); /* aborts the output: the temporary file is removed */
        tw->pq = NULL;
    }
    if (tw->finished && tw->rows) {
        fr_pq_file_stats_free(&tw->stats);
        memset(&tw->stats, 0, sizeof tw->stats);
    }
}
