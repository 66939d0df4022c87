/*
 * test_iceberg_interop.c — the writer half of the Iceberg interop test
 * (tests/interop/iceberg_interop.mjs is the reader half).
 *
 *   test_iceberg_interop DATA_DIR WAREHOUSE_URI EXPECT_JSON
 *
 * Builds a lake under DATA_DIR/lake whose metadata names every file under
 * WAREHOUSE_URI (the node test serves DATA_DIR/lake/warehouse there over
 * loopback HTTP) with every operation freshet performs: appends, identity /
 * day / hour partitions, schema evolution (a column added later), a
 * compaction (replace) followed by expiry, an overwrite. Then writes
 * EXPECT_JSON: per table, the rows the current snapshot must hold, and the
 * local paths of its live files. Exit status 0, or 1 with a message.
 */
#include "test_iceberg_util.c"

#include "core/buf.h"
#include "core/clock.h"

struct row_spec {
    int64_t first;
    int n;
    const char *wiki; /* NULL: "w<id % 7>" */
    int64_t ts_base;  /* ts = ts_base + id * 1000 */
    bool extra;       /* the file has the later column "extra" = "x<id>" */
};

static int failures;

static void die(const char *what, int rc)
{
    fprintf(stderr, "test_iceberg_interop: %s: %s (%s)\n", what, fr_strerror(rc), fr_ice_errmsg());
    exit(1);
}

static void wiki_of(const struct row_spec *rs, int64_t id, char *out, size_t cap)
{
    if (rs->wiki) {
        snprintf(out, cap, "%s", rs->wiki);
    } else {
        snprintf(out, cap, "w%d", (int)(id % 7));
    }
}

/* Write one file of rows, describe it, append it (or return it). */
static void write_file(struct fr_ice_catalog *cat, const char *table, const struct row_spec *rs,
                       const char *fname, struct fr_pq_file_stats *stats,
                       struct fr_ice_data_file *df, struct fr_ice_col_metrics *metrics,
                       uint8_t *bounds, struct fr_ice_value *parts, uint32_t nparts)
{
    static struct fr_pq_column cols[5];
    static const struct fr_pq_column all[5] = {{"id", FR_PQ_INT64, false, 1},
                                               {"wiki", FR_PQ_STRING, true, 2},
                                               {"ts", FR_PQ_TIMESTAMP, true, 3},
                                               {"delta", FR_PQ_INT32, true, 4},
                                               {"extra", FR_PQ_STRING, true, 5}};
    memcpy(cols, all, sizeof cols);
    struct fr_pq_schema schema = {cols, rs->extra ? 5u : 4u};
    char path[4096];
    snprintf(path, sizeof path, "%s/wiki/%s/data/%s", fr_ice_catalog_warehouse(cat), table, fname);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = 0;
    fr_fs_mkdirs(dir, 0755);
    struct fr_pq_opts opts;
    fr_pq_opts_default(&opts);
    opts.codec = rs->first % 2 ? FR_PQ_ZSTD : FR_PQ_SNAPPY;
    struct fr_pq_out out;
    struct fr_pq_writer *w = NULL;
    int rc = fr_pq_out_file(path, &out);
    if (rc == FR_OK) {
        rc = fr_pq_writer_open(&schema, &opts, &out, &w);
    }
    for (int i = 0; rc == FR_OK && i < rs->n; i++) {
        int64_t id = rs->first + i;
        char wiki[32], extra[32];
        wiki_of(rs, id, wiki, sizeof wiki);
        rc = fr_pq_write_int64(w, 0, id);
        if (rc == FR_OK) {
            rc = fr_pq_write_str(w, 1, wiki, strlen(wiki));
        }
        if (rc == FR_OK) {
            rc = fr_pq_write_int64(w, 2, rs->ts_base + id * 1000);
        }
        if (rc == FR_OK) {
            rc = id % 3 == 0 ? fr_pq_write_null(w, 3)
                             : fr_pq_write_int32(w, 3, (int32_t)(id * 2 - 5));
        }
        if (rc == FR_OK && rs->extra) {
            snprintf(extra, sizeof extra, "x%" PRId64, id);
            rc = id % 5 == 0 ? fr_pq_write_null(w, 4) : fr_pq_write_str(w, 4, extra, strlen(extra));
        }
        if (rc == FR_OK) {
            rc = fr_pq_row_end(w);
        }
    }
    if (rc == FR_OK) {
        rc = fr_pq_writer_close(w, stats);
    }
    fr_pq_writer_free(w);
    if (rc < 0) {
        fprintf(stderr, "parquet: %s\n", fr_pq_errmsg());
        die(path, rc);
    }
    static char keep[64][4096];
    static int nkeep;
    char *p = keep[nkeep++ % 64];
    snprintf(p, 4096, "%s", path);
    rc = fr_ice_file_from_pq(p, &schema, stats, df, metrics, bounds, 2048);
    if (rc < 0) {
        die("file_from_pq", rc);
    }
    df->partition = parts;
    df->npartition = nparts;
}

static void append(struct fr_ice_catalog *cat, const char *table, const struct row_spec *rs,
                   const char *fname, const struct fr_ice_part_field *pf, uint32_t npf)
{
    struct fr_pq_file_stats stats = {0};
    struct fr_ice_data_file df;
    struct fr_ice_col_metrics metrics[5];
    uint8_t bounds[2048];
    struct fr_ice_value parts[4];
    char wiki[32];
    for (uint32_t i = 0; i < npf; i++) {
        struct fr_ice_value src = {0};
        if (pf[i].source_id == 3) {
            src.type = FR_ICE_TIMESTAMPTZ;
            src.v.i64 = rs->ts_base + rs->first * 1000;
        } else {
            wiki_of(rs, rs->first, wiki, sizeof wiki);
            src.type = FR_ICE_STRING;
            src.v.str.ptr = wiki;
            src.v.str.len = strlen(wiki);
        }
        int rc = fr_ice_transform(pf[i].transform, &src, &parts[i]);
        if (rc < 0) {
            die("transform", rc);
        }
    }
    write_file(cat, table, rs, fname, &stats, &df, metrics, bounds, parts, npf);
    struct fr_ice_commit_info info = {"interop", rs->first, "interop-offsets", NULL, 0};
    int rc = fr_ice_append(cat, TI_NS, table, &df, 1, &info, NULL);
    if (rc < 0) {
        die("append", rc);
    }
    fr_pq_file_stats_free(&stats);
}

static void create(struct fr_ice_catalog *cat, const char *table,
                   const struct fr_ice_part_field *pf, uint32_t npf)
{
    struct fr_ice_table_def def = {ti_fields, 4, pf, npf, NULL, 0};
    int rc = fr_ice_table_create(cat, TI_NS, table, &def, NULL);
    if (rc < 0) {
        die("create", rc);
    }
}

/* ------------------------------------------------------ expected JSON -- */

static void expect_rows(FILE *out, const struct row_spec *specs, int nspecs, bool has_extra)
{
    bool first = true;
    for (int s = 0; s < nspecs; s++) {
        const struct row_spec *rs = &specs[s];
        for (int i = 0; i < rs->n; i++) {
            int64_t id = rs->first + i;
            char wiki[32];
            wiki_of(rs, id, wiki, sizeof wiki);
            fprintf(out, "%s[%" PRId64 ",\"%s\",%" PRId64 ",", first ? "" : ",", id, wiki,
                    rs->ts_base + id * 1000);
            if (id % 3 == 0) {
                fputs("null", out);
            } else {
                fprintf(out, "%d", (int)(id * 2 - 5));
            }
            if (has_extra) {
                if (!rs->extra || id % 5 == 0) {
                    fputs(",null", out);
                } else {
                    fprintf(out, ",\"x%" PRId64 "\"", id);
                }
            }
            fputc(']', out);
            first = false;
        }
    }
}

static void expect_table(FILE *out, struct fr_ice_catalog *cat, const char *table,
                         const struct row_spec *specs, int nspecs, bool has_extra, bool first)
{
    struct fr_ice_table *t = NULL;
    struct fr_ice_file_list list = {0};
    int rc = fr_ice_table_load(cat, TI_NS, table, &t);
    if (rc == FR_OK) {
        rc = fr_ice_files(cat, t, -1, true, &list);
    }
    if (rc < 0) {
        die(table, rc);
    }
    fprintf(out,
            "%s\"%s\":{\"location\":\"%s\",\"columns\":[\"id\",\"wiki\",\"ts\",\"delta\"%s],"
            "\"rows\":[",
            first ? "" : ",", table, fr_ice_table_location(t), has_extra ? ",\"extra\"" : "");
    expect_rows(out, specs, nspecs, has_extra);
    fputs("],\"files\":[", out);
    for (size_t i = 0; i < list.nfiles; i++) {
        fprintf(out, "%s\"%s\"", i ? "," : "", list.files[i].local_path);
    }
    fprintf(out, "],\"snapshot_id\":%" PRId64 "}", fr_ice_table_snapshot_id(t));
    fr_ice_file_list_free(&list);
    fr_ice_table_free(t);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: test_iceberg_interop DATA_DIR WAREHOUSE_URI EXPECT_JSON\n");
        return 2;
    }
    struct fr_ice_catalog *cat = NULL;
    struct fr_ice_catalog_opts o = {.data_dir = argv[1], .warehouse_uri = argv[2]};
    int rc = fr_ice_catalog_open(&o, &cat);
    if (rc < 0) {
        die("catalog", rc);
    }
    const int64_t day = INT64_C(86400000000), hour = INT64_C(3600000000);

    /* plain: appends, then a column added, then a file that has it */
    create(cat, "plain", NULL, 0);
    struct row_spec plain[] = {{0, 100, NULL, TI_DAY0, false},
                               {100, 50, NULL, TI_DAY0, false},
                               {150, 30, NULL, TI_DAY0, true}};
    append(cat, "plain", &plain[0], "p0.parquet", NULL, 0);
    append(cat, "plain", &plain[1], "p1.parquet", NULL, 0);
    int32_t fid = 0;
    rc = fr_ice_add_column(cat, TI_NS, "plain", "extra", FR_ICE_STRING, "added later", &fid);
    if (rc < 0 || fid != 5) {
        die("add column", rc);
    }
    append(cat, "plain", &plain[2], "p2.parquet", NULL, 0);

    /* daily: day(ts), three days */
    struct fr_ice_part_field dayp[] = {{3, FR_ICE_DAY, NULL}};
    create(cat, "daily", dayp, 1);
    struct row_spec daily[] = {{200, 40, NULL, TI_DAY0, false},
                               {240, 40, NULL, TI_DAY0 + day, false},
                               {280, 40, NULL, TI_DAY0 + 2 * day, false}};
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "ts_day=%d/d%d.parquet", i, i);
        append(cat, "daily", &daily[i], name, dayp, 1);
    }

    /* hourly: hour(ts) and identity(wiki) */
    struct fr_ice_part_field hourp[] = {{3, FR_ICE_HOUR, NULL}, {2, FR_ICE_IDENTITY, NULL}};
    create(cat, "hourly", hourp, 2);
    struct row_spec hourly[] = {{400, 20, "enwiki", TI_DAY0, false},
                                {420, 20, "dewiki", TI_DAY0, false},
                                {440, 20, "enwiki", TI_DAY0 + hour, false},
                                {460, 20, "frwiki", TI_DAY0 + 5 * hour, false}};
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "h%d.parquet", i);
        append(cat, "hourly", &hourly[i], name, hourp, 2);
    }

    /* compacted: many small appends, compaction, one more, expiry */
    create(cat, "compacted", NULL, 0);
    struct row_spec comp[13];
    for (int i = 0; i < 13; i++) {
        comp[i] = (struct row_spec){500 + i * 10, 10, NULL, TI_DAY0, false};
        char name[32];
        snprintf(name, sizeof name, "c%d.parquet", i);
        append(cat, "compacted", &comp[i], name, NULL, 0);
        if (i == 11) {
            struct fr_ice_compact_opts co = {.target_bytes = 1 << 20};
            struct fr_ice_compact_stats cs;
            rc = fr_ice_compact(cat, TI_NS, "compacted", &co, &cs);
            if (rc < 0 || cs.files_after != 1) {
                die("compact", rc);
            }
        }
    }
    struct fr_ice_expire_stats es;
    rc = fr_ice_expire(cat, TI_NS, "compacted", fr_wall_ms() + 1, 2, &es);
    if (rc < 0 || es.snapshots_expired == 0) {
        die("expire", rc);
    }

    /* rebuilt: appends, then an overwrite */
    create(cat, "rebuilt", NULL, 0);
    struct row_spec reb[] = {{600, 10, NULL, TI_DAY0, false}, {610, 10, NULL, TI_DAY0, false}};
    append(cat, "rebuilt", &reb[0], "r0.parquet", NULL, 0);
    append(cat, "rebuilt", &reb[1], "r1.parquet", NULL, 0);
    struct row_spec rb = {1000, 50, NULL, TI_DAY0, false};
    {
        struct fr_pq_file_stats stats = {0};
        struct fr_ice_data_file df;
        struct fr_ice_col_metrics metrics[5];
        uint8_t bounds[2048];
        write_file(cat, "rebuilt", &rb, "rebuilt.parquet", &stats, &df, metrics, bounds, NULL, 0);
        rc = fr_ice_overwrite(cat, TI_NS, "rebuilt", &df, 1, NULL, NULL);
        if (rc < 0) {
            die("overwrite", rc);
        }
        fr_pq_file_stats_free(&stats);
    }

    FILE *out = fopen(argv[3], "w");
    if (!out) {
        die(argv[3], FR_EIO);
    }
    fprintf(out, "{\"warehouse\":\"%s\",\"tables\":{", argv[2]);
    expect_table(out, cat, "plain", plain, 3, true, true);
    expect_table(out, cat, "daily", daily, 3, false, false);
    expect_table(out, cat, "hourly", hourly, 4, false, false);
    expect_table(out, cat, "compacted", comp, 13, false, false);
    expect_table(out, cat, "rebuilt", &rb, 1, false, false);
    fputs("}}\n", out);
    fclose(out);
    fr_ice_catalog_close(cat);
    return failures ? 1 : 0;
}
