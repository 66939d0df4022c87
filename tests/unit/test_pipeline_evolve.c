/*
 * test_pipeline_evolve.c — issue 33's label columns on a lake written
 * before them (ADR 0057): fr_tbl_ensure_one adds silver_topics' label,
 * label_lang, label_why (field ids 12, 13, 14) and gold_top_topics' label
 * (8) by schema evolution, once; a table whose column ids disagree is
 * refused; a data file written without the columns reads them as nulls
 * through fr_lake_scan_file's optional columns ("?label"), and a required
 * column still must exist. The old schemas are written out here by hand.
 * One thread, a temporary data directory.
 */
#include "check.h"

#include "conf/conf.h"
#include "core/err.h"
#include "iceberg/iceberg.h"
#include "parquet/parquet.h"
#include "pipeline/lake.h"
#include "pipeline/tables.h"

#include <string.h>

/* silver_topics and gold_top_topics as freshet created them before issue 33. */
static const struct fr_ice_field old_topics[] = {
    {1, "meta_id", FR_ICE_STRING, true, NULL},       {2, "event_time", FR_ICE_TIMESTAMPTZ, true, NULL},
    {3, "wiki", FR_ICE_STRING, true, NULL},          {4, "server_name", FR_ICE_STRING, true, NULL},
    {5, "title", FR_ICE_STRING, true, NULL},         {6, "outcome", FR_ICE_STRING, true, NULL},
    {7, "why", FR_ICE_STRING, false, NULL},          {8, "item", FR_ICE_STRING, false, NULL},
    {9, "log_partition", FR_ICE_INT, true, NULL},    {10, "log_offset", FR_ICE_LONG, true, NULL},
    {11, "replay_id", FR_ICE_STRING, false, NULL},
};
static const struct fr_ice_field old_gold[] = {
    {1, "window_start", FR_ICE_TIMESTAMPTZ, true, NULL}, {2, "window_end", FR_ICE_TIMESTAMPTZ, true, NULL},
    {3, "rank", FR_ICE_INT, true, NULL},                 {4, "item", FR_ICE_STRING, true, NULL},
    {5, "edits", FR_ICE_LONG, true, NULL},               {6, "wikis", FR_ICE_INT, true, NULL},
    {7, "top_wikis", FR_ICE_STRING, true, NULL},
};

static void open_lake(struct fr_conf *conf, struct fr_lake *lake)
{
    const char *dir = check_tmpdir();
    CHECK_EQ_INT(fr_conf_init(conf), FR_OK);
    char set[4200], err[256];
    snprintf(set, sizeof set, "general.data_dir=%s", dir);
    CHECK_EQ_INT(fr_conf_set(conf, set, FR_CONF_FLAG, err, sizeof err), FR_OK);
    CHECK_EQ_INT(fr_lake_open(conf, lake), FR_OK);
}

static void create_old(struct fr_lake *lake, enum fr_tbl tbl, const struct fr_ice_field *f,
                       uint32_t n)
{
    struct fr_ice_table_def def = {f, n, NULL, 0, NULL, 0};
    struct fr_ice_table *t = NULL;
    CHECK_EQ_INT(fr_ice_table_create(lake->cat, FR_NS, fr_tbl_name(tbl), &def, &t), FR_OK);
    fr_ice_table_free(t);
}

/* The table's columns as "id:name:required," text. */
static void columns(struct fr_lake *lake, enum fr_tbl tbl, char *out, size_t cap)
{
    struct fr_ice_table *t = NULL;
    out[0] = 0;
    CHECK_EQ_INT(fr_ice_table_load(lake->cat, FR_NS, fr_tbl_name(tbl), &t), FR_OK);
    if (!t) {
        return;
    }
    uint32_t n = 0;
    const struct fr_ice_field *f = fr_ice_table_fields(t, &n);
    size_t at = 0;
    for (uint32_t i = 0; i < n && at < cap; i++) {
        at += (size_t)snprintf(out + at, cap - at, "%d:%s:%d,", (int)f[i].id, f[i].name,
                               f[i].required ? 1 : 0);
    }
    fr_ice_table_free(t);
}

static void test_evolve(void)
{
    struct fr_conf conf;
    struct fr_lake lake = {0};
    open_lake(&conf, &lake);
    create_old(&lake, FR_TBL_SILVER_TOPICS, old_topics, 11);
    create_old(&lake, FR_TBL_GOLD_TOPICS, old_gold, 7);
    char got[2048];
    columns(&lake, FR_TBL_SILVER_TOPICS, got, sizeof got);
    CHECK(strstr(got, "label") == NULL);
    CHECK_EQ_INT(fr_tbl_ensure_one(lake.cat, FR_TBL_SILVER_TOPICS), FR_OK);
    CHECK_EQ_INT(fr_tbl_ensure_one(lake.cat, FR_TBL_GOLD_TOPICS), FR_OK);
    columns(&lake, FR_TBL_SILVER_TOPICS, got, sizeof got);
    CHECK_EQ_STR(got, "1:meta_id:1,2:event_time:1,3:wiki:1,4:server_name:1,5:title:1,6:outcome:1,"
                      "7:why:0,8:item:0,9:log_partition:1,10:log_offset:1,11:replay_id:0,"
                      "12:label:0,13:label_lang:0,14:label_why:0,");
    columns(&lake, FR_TBL_GOLD_TOPICS, got, sizeof got);
    CHECK_EQ_STR(got, "1:window_start:1,2:window_end:1,3:rank:1,4:item:1,5:edits:1,6:wikis:1,"
                      "7:top_wikis:1,8:label:0,");
    /* again: nothing to add, the schema is unchanged */
    char before[2048];
    columns(&lake, FR_TBL_SILVER_TOPICS, before, sizeof before);
    CHECK_EQ_INT(fr_tbl_ensure_one(lake.cat, FR_TBL_SILVER_TOPICS), FR_OK);
    columns(&lake, FR_TBL_SILVER_TOPICS, got, sizeof got);
    CHECK_EQ_STR(got, before);
    fr_lake_close(&lake);
    fr_conf_free(&conf);
}

static void test_refused(void)
{
    struct fr_conf conf;
    struct fr_lake lake = {0};
    open_lake(&conf, &lake);
    /* An extra column took id 12: "label" would get 13, not freshet's 12. */
    struct fr_ice_field f[12];
    memcpy(f, old_topics, sizeof old_topics);
    f[11] = (struct fr_ice_field){12, "note", FR_ICE_STRING, false, NULL};
    create_old(&lake, FR_TBL_SILVER_TOPICS, f, 12);
    CHECK_EQ_INT(fr_tbl_ensure_one(lake.cat, FR_TBL_SILVER_TOPICS), FR_ECONFIG);
    /* A required column missing is refused, never added. */
    create_old(&lake, FR_TBL_GOLD_TOPICS, old_gold, 6);
    CHECK_EQ_INT(fr_tbl_ensure_one(lake.cat, FR_TBL_GOLD_TOPICS), FR_ECONFIG);
    fr_lake_close(&lake);
    fr_conf_free(&conf);
}

struct seen {
    uint32_t rows, label_nulls, ncols;
    char labels[256];
};

static int on_batch(void *arg, const struct fr_pq_batch *b)
{
    struct seen *s = arg;
    s->ncols = b->ncols;
    for (uint32_t i = 0; i < b->nrows; i++, s->rows++) {
        const struct fr_pq_vec *v = &b->cols[1];
        if (v->nulls && v->nulls[i]) {
            s->label_nulls++;
        } else {
            size_t at = strlen(s->labels);
            snprintf(s->labels + at, sizeof s->labels - at, "%.*s;", (int)v->v.str[i].len,
                     v->v.str[i].ptr);
        }
    }
    return FR_OK;
}

static void test_old_file(void)
{
    struct fr_conf conf;
    struct fr_lake lake = {0};
    open_lake(&conf, &lake);
    char path[4300];
    snprintf(path, sizeof path, "%s/old.parquet", check_tmpdir());
    /* a file of the old shape: two columns, no label */
    struct fr_pq_column cols[] = {{"item", FR_PQ_STRING, true, 8}, {"wiki", FR_PQ_STRING, false, 3}};
    struct fr_pq_schema schema = {cols, 2};
    struct fr_pq_opts opts;
    fr_pq_opts_default(&opts);
    struct fr_pq_out out;
    struct fr_pq_writer *w = NULL;
    CHECK_EQ_INT(fr_pq_out_file(path, &out), FR_OK);
    CHECK_EQ_INT(fr_pq_writer_open(&schema, &opts, &out, &w), FR_OK);
    for (int i = 0; w && i < 3; i++) {
        CHECK_EQ_INT(fr_pq_write_str(w, 0, "Q42", 3), FR_OK);
        CHECK_EQ_INT(fr_pq_write_str(w, 1, "enwiki", 6), FR_OK);
        CHECK_EQ_INT(fr_pq_row_end(w), FR_OK);
    }
    CHECK_EQ_INT(fr_pq_writer_close(w, NULL), FR_OK);
    fr_pq_writer_free(w);
    char err[512];
    struct seen s = {0};
    const struct fr_lake_col want[] = {{"item", FR_PQ_STRING}, {"?label", FR_PQ_STRING},
                                       {"wiki", FR_PQ_STRING}};
    CHECK_EQ_INT(fr_lake_scan_file(&lake, path, NULL, want, 3, on_batch, &s, err, sizeof err),
                 FR_OK);
    CHECK_EQ_INT(s.rows, 3);
    CHECK_EQ_INT(s.ncols, 3);
    CHECK_EQ_INT(s.label_nulls, 3);
    /* present: read as written ("?wiki" is optional and there) */
    memset(&s, 0, sizeof s);
    const struct fr_lake_col present[] = {{"item", FR_PQ_STRING}, {"?wiki", FR_PQ_STRING}};
    CHECK_EQ_INT(fr_lake_scan_file(&lake, path, NULL, present, 2, on_batch, &s, err, sizeof err),
                 FR_OK);
    CHECK_EQ_INT(s.label_nulls, 0);
    CHECK_EQ_STR(s.labels, "enwiki;enwiki;enwiki;");
    /* a column asked without '?' must exist */
    const struct fr_lake_col strict[] = {{"item", FR_PQ_STRING}, {"label", FR_PQ_STRING}};
    CHECK_EQ_INT(fr_lake_scan_file(&lake, path, NULL, strict, 2, on_batch, &s, err, sizeof err),
                 FR_ECORRUPT);
    CHECK(strstr(err, "no column label") != NULL);
    fr_lake_close(&lake);
    fr_conf_free(&conf);
}

int main(void)
{
    RUN(test_evolve);
    RUN(test_refused);
    RUN(test_old_file);
    return check_report();
}
