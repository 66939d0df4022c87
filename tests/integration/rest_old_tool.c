/*
 * rest_old_tool.c — a REST-catalog lake as a freshet from before issue 33
 * left it, for tests/integration/rest_evolve.sh: silver_topics (11
 * columns) and gold_top_topics (7) created through the REST catalog
 * without the label columns, and one silver_topics data file written with
 * that old schema (its Parquet has no label columns at all), committed
 * through the catalog.
 *
 *   rest_old_tool DATADIR URI      (token: FRESHET_LAKE_CATALOG_TOKEN)
 *
 * DATADIR is the lake `freshet serve` serves (their warehouse is shared),
 * URI its catalog (http://127.0.0.1:PORT/iceberg). The old rows are three
 * no_item edits of 2020-01-01 (log offsets 900000-900002 of partition 0,
 * past any test log), so that gold never counts them. Exit 0 when every
 * step succeeded.
 */
#include "conf/conf.h"
#include "core/buf.h"
#include "core/err.h"
#include "iceberg/iceberg.h"
#include "iceberg/rest.h"
#include "parquet/parquet.h"
#include "pipeline/lake.h"
#include "pipeline/tables.h"

#include <stdio.h>
#include <string.h>

static const struct fr_ice_field old_topics[] = {
    {1, "meta_id", FR_ICE_STRING, true, NULL},
    {2, "event_time", FR_ICE_TIMESTAMPTZ, true, NULL},
    {3, "wiki", FR_ICE_STRING, true, NULL},
    {4, "server_name", FR_ICE_STRING, true, NULL},
    {5, "title", FR_ICE_STRING, true, NULL},
    {6, "outcome", FR_ICE_STRING, true, NULL},
    {7, "why", FR_ICE_STRING, false, NULL},
    {8, "item", FR_ICE_STRING, false, NULL},
    {9, "log_partition", FR_ICE_INT, true, NULL},
    {10, "log_offset", FR_ICE_LONG, true, NULL},
    {11, "replay_id", FR_ICE_STRING, false, NULL},
};
static const struct fr_ice_field old_gold[] = {
    {1, "window_start", FR_ICE_TIMESTAMPTZ, true, NULL},
    {2, "window_end", FR_ICE_TIMESTAMPTZ, true, NULL},
    {3, "rank", FR_ICE_INT, true, NULL},
    {4, "item", FR_ICE_STRING, true, NULL},
    {5, "edits", FR_ICE_LONG, true, NULL},
    {6, "wikis", FR_ICE_INT, true, NULL},
    {7, "top_wikis", FR_ICE_STRING, true, NULL},
};

static int create_old(struct fr_ice_rest *rest, const char *name, const struct fr_ice_field *f,
                      uint32_t n)
{
    struct fr_ice_table_def def = {f, n, NULL, 0, NULL, 0};
    struct fr_buf req, out;
    fr_buf_init(&req, 1 << 20);
    fr_buf_init(&out, (size_t)16 << 20);
    int rc = fr_ice_rest_create_request(name, &def, &req);
    if (rc == FR_OK) {
        rc = fr_ice_rest_create_table(rest, FR_NS, (const char *)req.data, req.len, &out);
    }
    fr_buf_free(&out);
    fr_buf_free(&req);
    return rc;
}

/* Three no_item rows in the old 11-column layout, as data/old-0.parquet of
 * silver_topics, committed through the catalog. */
static int append_old(struct fr_lake *lake)
{
    static const struct fr_pq_column cols[] = {
        {"meta_id", FR_PQ_STRING, false, 1},      {"event_time", FR_PQ_TIMESTAMP, false, 2},
        {"wiki", FR_PQ_STRING, false, 3},         {"server_name", FR_PQ_STRING, false, 4},
        {"title", FR_PQ_STRING, false, 5},        {"outcome", FR_PQ_STRING, false, 6},
        {"why", FR_PQ_STRING, true, 7},           {"item", FR_PQ_STRING, true, 8},
        {"log_partition", FR_PQ_INT32, false, 9}, {"log_offset", FR_PQ_INT64, false, 10},
        {"replay_id", FR_PQ_STRING, true, 11},
    };
    const struct fr_pq_schema schema = {cols, sizeof cols / sizeof cols[0]};
    struct fr_ice_table *t = NULL;
    struct fr_pq_writer *w = NULL;
    struct fr_pq_file_stats stats = {0};
    struct fr_buf load, change;
    fr_buf_init(&load, (size_t)64 << 20);
    fr_buf_init(&change, (size_t)64 << 20);
    char path[4096];
    int rc = fr_ice_rest_table(lake->rest, lake->cat, FR_NS, "silver_topics", &t);
    if (rc == FR_OK) {
        snprintf(path, sizeof path, "%s/data/old-0.parquet", fr_ice_table_dir(t));
        struct fr_pq_opts opts;
        struct fr_pq_out out;
        fr_pq_opts_default(&opts);
        rc = fr_lake_pq_out(lake, path, &out);
        rc = rc ? rc : fr_pq_writer_open(&schema, &opts, &out, &w);
    }
    for (int i = 0; rc == FR_OK && i < 3; i++) {
        char id[40], title[16];
        snprintf(id, sizeof id, "00000000-0000-4000-8000-00000000000%d", i);
        snprintf(title, sizeof title, "Old %d", i);
        rc = fr_pq_write_str(w, 0, id, strlen(id));
        rc = rc ? rc : fr_pq_write_int64(w, 1, 1577836800000000LL + i); /* 2020-01-01 */
        rc = rc ? rc : fr_pq_write_str(w, 2, "enwiki", 6);
        rc = rc ? rc : fr_pq_write_str(w, 3, "en.wikipedia.org", 16);
        rc = rc ? rc : fr_pq_write_str(w, 4, title, strlen(title));
        rc = rc ? rc : fr_pq_write_str(w, 5, "no_item", 7);
        rc = rc ? rc : fr_pq_write_str(w, 6, "no_prop", 7);
        rc = rc ? rc : fr_pq_write_null(w, 7);
        rc = rc ? rc : fr_pq_write_int32(w, 8, 0);
        rc = rc ? rc : fr_pq_write_int64(w, 9, 900000 + i);
        rc = rc ? rc : fr_pq_write_null(w, 10);
        rc = rc ? rc : fr_pq_row_end(w);
    }
    if (w) {
        int close_rc = rc == FR_OK ? fr_pq_writer_close(w, &stats) : FR_OK;
        fr_pq_writer_free(w);
        rc = rc ? rc : close_rc;
    }
    struct fr_ice_data_file file;
    struct fr_ice_col_metrics metrics[16];
    uint8_t bounds[4096];
    if (rc == FR_OK) {
        rc = fr_ice_file_from_pq("data/old-0.parquet", &schema, &stats, &file, metrics, bounds,
                                 sizeof bounds);
    }
    if (rc == FR_OK) {
        rc = fr_ice_rest_load_table(lake->rest, FR_NS, "silver_topics", &load);
    }
    if (rc == FR_OK) {
        rc = fr_ice_rest_stage_append(lake->cat, FR_NS, "silver_topics", (const char *)load.data,
                                      load.len, &file, 1, NULL, &change);
    }
    if (rc == FR_OK) {
        struct fr_ice_rest_change c = {FR_NS, "silver_topics", (const char *)change.data,
                                       change.len};
        rc = fr_ice_rest_commit_table(lake->rest, &c, NULL);
    }
    fr_pq_file_stats_free(&stats);
    fr_buf_free(&change);
    fr_buf_free(&load);
    fr_ice_table_free(t);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: rest_old_tool DATADIR URI\n");
        return 2;
    }
    struct fr_conf conf;
    struct fr_lake lake = {0};
    char set[4300], err[256];
    int rc = fr_conf_init(&conf);
    snprintf(set, sizeof set, "general.data_dir=%s", argv[1]);
    rc = rc ? rc : fr_conf_set(&conf, set, FR_CONF_FLAG, err, sizeof err);
    snprintf(set, sizeof set, "lake.catalog_uri=%s", argv[2]);
    rc = rc ? rc : fr_conf_set(&conf, set, FR_CONF_FLAG, err, sizeof err);
    rc = rc ? rc : fr_conf_load_env(&conf, err, sizeof err);
    rc = rc ? rc : fr_lake_open(&conf, &lake);
    rc = rc ? rc : fr_ice_rest_create_namespace(lake.rest, FR_NS);
    rc = rc == FR_EEXIST ? FR_OK : rc;
    rc = rc ? rc : create_old(lake.rest, "silver_topics", old_topics, 11);
    rc = rc ? rc : create_old(lake.rest, "gold_top_topics", old_gold, 7);
    rc = rc ? rc : append_old(&lake);
    if (rc < 0) {
        fprintf(stderr, "rest_old_tool: %s (%s) %s\n", fr_strerror(rc), fr_err_name(rc),
                fr_ice_errmsg());
    } else {
        printf("old tables created, 3 old rows in silver_topics\n");
    }
    fr_lake_close(&lake);
    fr_conf_free(&conf);
    return rc < 0 ? 1 : 0;
}
