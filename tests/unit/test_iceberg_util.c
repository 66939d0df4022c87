/*
 * test_iceberg_util.c — shared by the iceberg tests (unit, crash, interop
 * writer, benchmark), included as source like test_log_util.c: a standard
 * edits table, Parquet data files written with src/parquet whose values
 * follow from (first id, count), and readers that sum them back.
 *
 * Rows of a file starting at id k: id = k + i (long, required),
 * wiki = "w<id % 7>" (string), ts = TI_DAY0 + id * 1000 us (timestamptz),
 * delta = id % 3 == 0 ? NULL : id * 2 - 5 (int). Tables partition by
 * day(ts) when asked; every test file stays within one day.
 */
/* Included by several programs, each using a part of it. */
#pragma GCC diagnostic ignored "-Wunused-function"

#include "iceberg/iceberg.h"
#include "parquet/parquet.h"

#include "core/err.h"
#include "core/fsutil.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TI_DAY0 INT64_C(1790000000000000) /* 2026-09-21T...Z, microseconds */
#define TI_NS "wiki"

static const struct fr_ice_field ti_fields[] = {
    {1, "id", FR_ICE_LONG, true, "row id"},
    {2, "wiki", FR_ICE_STRING, false, NULL},
    {3, "ts", FR_ICE_TIMESTAMPTZ, false, NULL},
    {4, "delta", FR_ICE_INT, false, NULL},
};

static const struct fr_ice_part_field ti_parts[] = {{3, FR_ICE_DAY, NULL}};

static struct fr_ice_table_def ti_def(bool partitioned, const struct fr_ice_kv *props,
                                      uint32_t nprops)
{
    struct fr_ice_table_def def = {
        ti_fields, 4, partitioned ? ti_parts : NULL, partitioned ? 1u : 0u, props, nprops};
    return def;
}

/* A written file and the memory its descriptor points into. */
struct ti_file {
    char path[4096];
    struct fr_pq_file_stats stats;
    struct fr_pq_column cols[4];
    struct fr_pq_schema schema;
    struct fr_ice_col_metrics metrics[4];
    uint8_t bounds[1024];
    struct fr_ice_value part;
    struct fr_ice_data_file df;
};

static int64_t ti_ts(int64_t id)
{
    return TI_DAY0 + id * 1000;
}

/* Write rows [first, first+n) to path (all of one day) and describe it. */
/* Non-NULL: ti_write leaves its data file's fsyncs to this set. */
static struct fr_syncset *ti_defer;

static int ti_write(struct ti_file *f, const char *path, int64_t first, int n, bool partitioned)
{
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", path);
    char *slash = strrchr(f->path, '/');
    if (slash) {
        *slash = 0;
        fr_fs_mkdirs(f->path, 0755);
        *slash = '/';
    }
    static const enum fr_pq_type types[] = {FR_PQ_INT64, FR_PQ_STRING, FR_PQ_TIMESTAMP,
                                            FR_PQ_INT32};
    for (int i = 0; i < 4; i++) {
        f->cols[i] = (struct fr_pq_column){ti_fields[i].name, types[i], !ti_fields[i].required,
                                           ti_fields[i].id};
    }
    f->schema = (struct fr_pq_schema){f->cols, 4};
    struct fr_pq_opts opts;
    fr_pq_opts_default(&opts);
    opts.codec = FR_PQ_UNCOMPRESSED;
    struct fr_pq_out out;
    struct fr_pq_writer *w = NULL;
    int rc = ti_defer ? fr_pq_out_file_deferred(path, ti_defer, &out) : fr_pq_out_file(path, &out);
    if (rc == FR_OK) {
        rc = fr_pq_writer_open(&f->schema, &opts, &out, &w);
    }
    for (int i = 0; rc == FR_OK && i < n; i++) {
        int64_t id = first + i;
        char wiki[16];
        snprintf(wiki, sizeof wiki, "w%d", (int)(id % 7));
        rc = fr_pq_write_int64(w, 0, id);
        if (rc == FR_OK) {
            rc = fr_pq_write_str(w, 1, wiki, strlen(wiki));
        }
        if (rc == FR_OK) {
            rc = fr_pq_write_int64(w, 2, ti_ts(id));
        }
        if (rc == FR_OK) {
            rc = id % 3 == 0 ? fr_pq_write_null(w, 3)
                             : fr_pq_write_int32(w, 3, (int32_t)(id * 2 - 5));
        }
        if (rc == FR_OK) {
            rc = fr_pq_row_end(w);
        }
    }
    if (rc == FR_OK) {
        rc = fr_pq_writer_close(w, &f->stats);
    }
    fr_pq_writer_free(w);
    if (rc < 0) {
        fprintf(stderr, "ti_write %s: %s\n", path, fr_pq_errmsg());
        return rc;
    }
    rc = fr_ice_file_from_pq(f->path, &f->schema, &f->stats, &f->df, f->metrics, f->bounds,
                             sizeof f->bounds);
    if (rc == FR_OK && partitioned) {
        struct fr_ice_value src = {.type = FR_ICE_TIMESTAMPTZ, .v.i64 = ti_ts(first)};
        rc = fr_ice_transform(FR_ICE_DAY, &src, &f->part);
        f->df.partition = &f->part;
        f->df.npartition = 1;
    }
    return rc;
}

static void ti_free(struct ti_file *f)
{
    fr_pq_file_stats_free(&f->stats);
}

/* Sum of ids, row count and count of ids seen twice over a list of files
 * (ids must be < max_id). Reads with src/parquet. */
struct ti_sum {
    int64_t rows, id_sum, dupes, bad_values;
    int64_t row_groups; /* over every file read */
};

static int ti_read(const char *path, struct ti_sum *sum, uint8_t *seen, int64_t max_id)
{
    struct fr_pq_reader *r = NULL;
    struct fr_pq_scan *scan = NULL;
    int rc = fr_pq_reader_open_file(path, NULL, &r);
    if (rc == FR_OK) {
        rc = fr_pq_scan_open(r, &(struct fr_pq_scan_opts){0}, &scan);
        sum->row_groups += fr_pq_reader_row_groups(r);
    }
    const struct fr_pq_batch *b;
    int id_col = -1, wiki_col = -1, delta_col = -1;
    const struct fr_pq_schema *s = r ? fr_pq_reader_schema(r) : NULL;
    for (uint32_t i = 0; s && i < s->ncolumns; i++) {
        if (strcmp(s->columns[i].name, "id") == 0) {
            id_col = (int)i;
        } else if (strcmp(s->columns[i].name, "wiki") == 0) {
            wiki_col = (int)i;
        } else if (strcmp(s->columns[i].name, "delta") == 0) {
            delta_col = (int)i;
        }
    }
    while (rc == FR_OK && (rc = fr_pq_scan_next(scan, &b)) == FR_OK) {
        for (uint32_t i = 0; i < b->nrows; i++) {
            int64_t id = b->cols[id_col].v.i64[i];
            sum->rows++;
            sum->id_sum += id;
            if (id >= 0 && id < max_id && seen) {
                sum->dupes += seen[id];
                seen[id] = 1;
            }
            char wiki[16];
            snprintf(wiki, sizeof wiki, "w%d", (int)(id % 7));
            const struct fr_pq_str *ws = &b->cols[wiki_col].v.str[i];
            if (b->cols[wiki_col].nulls[i] || ws->len != strlen(wiki) ||
                memcmp(ws->ptr, wiki, ws->len) != 0) {
                sum->bad_values++;
            }
            bool dnull = b->cols[delta_col].nulls[i] != 0;
            if (dnull != (id % 3 == 0) || (!dnull && b->cols[delta_col].v.i32[i] != id * 2 - 5)) {
                sum->bad_values++;
            }
        }
    }
    if (rc == FR_EEOF) {
        rc = FR_OK;
    }
    fr_pq_scan_free(scan);
    fr_pq_reader_free(r);
    return rc;
}

/* Read every live file of the current snapshot of ns.name. */
static int ti_read_table(struct fr_ice_catalog *cat, const char *name, struct ti_sum *sum,
                         int64_t max_id)
{
    struct fr_ice_table *t = NULL;
    struct fr_ice_file_list list = {0};
    uint8_t *seen = max_id > 0 ? calloc((size_t)max_id, 1) : NULL;
    memset(sum, 0, sizeof *sum);
    int rc = fr_ice_table_load(cat, TI_NS, name, &t);
    if (rc == FR_OK) {
        rc = fr_ice_files(cat, t, -1, true, &list);
    }
    for (size_t i = 0; rc == FR_OK && i < list.nfiles; i++) {
        rc = ti_read(list.files[i].local_path, sum, seen, max_id);
    }
    fr_ice_file_list_free(&list);
    fr_ice_table_free(t);
    free(seen);
    return rc;
}

/* Write rows [first, first + n) into a data file of ns.name's data
 * directory and append it with info (may be NULL). The error is printed
 * when FR_TEST_VERBOSE is set (some tests expect failures). */
static int ti_append(struct fr_ice_catalog *cat, const char *name, int64_t first, int n,
                     bool partitioned, const struct fr_ice_commit_info *info)
{
    char path[4096];
    struct ti_file f;
    snprintf(path, sizeof path, "%s/%s/%s/data/f-%" PRId64 ".parquet",
             fr_ice_catalog_warehouse(cat), TI_NS, name, first);
    int rc = ti_write(&f, path, first, n, partitioned);
    if (rc == FR_OK) {
        rc = fr_ice_append(cat, TI_NS, name, &f.df, 1, info, NULL);
    }
    if (rc < 0 && getenv("FR_TEST_VERBOSE")) {
        fprintf(stderr, "ti_append %s %" PRId64 ": %s\n", name, first, fr_ice_errmsg());
    }
    ti_free(&f);
    return rc;
}

static int64_t ti_expected_sum(int64_t first, int64_t n)
{
    return n * first + n * (n - 1) / 2;
}
