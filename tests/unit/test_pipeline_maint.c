/*
 * test_pipeline_maint.c — the processor's own table maintenance
 * (fr_maint_tables, src/pipeline/maint.c) on a local lake with the shipped
 * configuration. It runs inside the live processor, so what bounds its
 * memory is pinned here by a property of what it writes: the row groups of
 * a compacted file stay small (docs/BENCHMARKS.md, "session 7: compaction
 * memory": with 8 MiB row groups a round raised the processor's RSS from
 * 25 to ~55 MB), and its pages stay small (256 KiB, half the 512 KiB row
 * group: with 1 MiB pages a round's page, scratch and batch buffers were
 * 1-2 MiB each, and 1 MiB row groups let late rounds pass 32 MB,
 * "session 9"). The rows and
 * their statistics must survive the rewrite. `freshet compact`
 * (fr_cmd_compact) over the same files merges them and reports it as JSON.
 * One thread; a fresh temporary data directory per test.
 */
#include "check.h"

#include "conf/conf.h"
#include "core/err.h"
#include "iceberg/iceberg.h"
#include "parquet/parquet.h"
#include "pipeline/lake.h"
#include "pipeline/maint.h"
#include "pipeline/pipeline.h"
#include "pipeline/tables.h"

#include "core/buf.h"
#include "core/fsutil.h"
#include "core/json.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <inttypes.h>
#include <stdint.h>

enum { FILES = 60, ROWS = 60, RAW = 1500 };

static uint64_t rng = 88172645463325252u;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* FILES bronze files of ROWS rows, each with RAW bytes of random letters
 * (about 6 bits each: they compress little, so the merge is ~4 MB), one
 * append each, as the processor's epochs make them. */
static void put_small_files(struct fr_lake *lake)
{
    struct fr_ice_table *table = NULL;
    CHECK_EQ_INT(fr_lake_table(lake, fr_tbl_name(FR_TBL_BRONZE), &table), FR_OK);
    if (!table) {
        return;
    }
    static const char abc[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789{}";
    char raw[RAW];
    char id[40];
    int64_t off = 0;
    for (int f = 0; f < FILES; f++) {
        struct fr_tw tw;
        fr_tw_init(&tw, FR_TBL_BRONZE, fr_ice_table_dir(table), "maint", f, (size_t)8 << 20);
        int rc = FR_OK;
        for (int r = 0; r < ROWS && rc == FR_OK; r++, off++) {
            for (int i = 0; i < RAW; i++) {
                raw[i] = abc[rnd() & 63];
            }
            int n = snprintf(id, sizeof id, "00000000-0000-4000-8000-%012" PRId64, off);
            struct fr_row row = {.partition = 0,
                                 .offset = off,
                                 .ingest_ms = INT64_C(1780000000000) + off,
                                 .event_us = INT64_C(1780000000000000) + off * 1000,
                                 .meta_id = {id, (uint32_t)n},
                                 .wiki = {"enwiki", 6},
                                 .type = FR_TYPE_EDIT};
            rc = fr_tw_bronze(&tw, &row, raw, sizeof raw);
        }
        if (rc == FR_OK) {
            rc = fr_tw_finish(&tw);
        }
        if (rc == FR_OK) {
            CHECK(tw.file.file_size < (INT64_C(8) << 20) / 64); /* under small_bytes */
            rc = fr_ice_append(lake->cat, FR_NS, fr_tbl_name(FR_TBL_BRONZE), &tw.file, 1, NULL,
                               NULL);
        }
        CHECK_EQ_INT(rc, FR_OK);
        fr_tw_abort(&tw);
    }
    fr_ice_table_free(table);
}

/* A fresh data directory whose lake holds put_small_files' bronze files,
 * open in *lake with its configuration in *conf. */
static const char *lake_of_small_files(struct fr_conf *conf, struct fr_lake *lake)
{
    const char *dir = check_tmpdir();
    CHECK_EQ_INT(fr_conf_init(conf), FR_OK);
    char set[4200], err[256];
    snprintf(set, sizeof set, "general.data_dir=%s", dir);
    CHECK_EQ_INT(fr_conf_set(conf, set, FR_CONF_FLAG, err, sizeof err), FR_OK);
    CHECK_EQ_INT(fr_lake_open(conf, lake), FR_OK);
    CHECK_EQ_INT(fr_tbl_ensure(lake->cat), FR_OK);
    put_small_files(lake);
    return dir;
}

/* The small files merged by one round with the shipped settings land in
 * files whose row groups hold about 1 MiB: each under 2 MiB compressed (1
 * MiB plus at most one batch slice of 1 MiB of strings, writer.c
 * slice_end), so a ~4 MB merge has several. With process.row_group_bytes
 * (8 MiB) it is one row group of ~4 MB and this fails. */
static void test_own_compaction_row_groups(void)
{
    struct fr_conf conf;
    struct fr_lake lake;
    lake_of_small_files(&conf, &lake);

    uint8_t want[FR_TBL_EVERY] = {0};
    want[FR_TBL_BRONZE] = 1;
    fr_maint_tables(&lake, &conf, want, 0, NULL);

    struct fr_ice_table *table = NULL;
    struct fr_ice_file_list live = {0};
    CHECK_EQ_INT(fr_lake_table(&lake, fr_tbl_name(FR_TBL_BRONZE), &table), FR_OK);
    CHECK_EQ_INT(fr_ice_files(lake.cat, table, -1, false, &live), FR_OK);
    CHECK_EQ_INT(live.nfiles, 1); /* every input was merged */
    uint64_t rows = 0;
    uint32_t groups = 0;
    for (size_t i = 0; i < live.nfiles; i++) {
        CHECK(strstr(live.files[i].local_path, "/compacted-") != NULL);
        struct fr_pq_reader *reader = NULL;
        CHECK_EQ_INT(fr_pq_reader_open_file(live.files[i].local_path, NULL, &reader), FR_OK);
        if (!reader) {
            continue;
        }
        int ingest = fr_pq_reader_column(reader, "ingest_time");
        CHECK(ingest >= 0);
        uint32_t ncols = fr_pq_reader_schema(reader)->ncolumns;
        for (uint32_t g = 0; g < fr_pq_reader_row_groups(reader); g++) {
            uint64_t comp = 0;
            for (uint32_t c = 0; c < ncols; c++) {
                struct fr_pq_chunk_info ci;
                CHECK_EQ_INT(fr_pq_reader_chunk(reader, g, c, &ci), FR_OK);
                comp += ci.compressed_bytes;
                if ((int)c == ingest) {
                    CHECK(ci.has_bounds); /* statistics for readers' pruning */
                    rows += ci.rows;
                }
            }
            if (comp >= (uint64_t)2 << 20) {
                fprintf(stderr, "  row group %u: %" PRIu64 " compressed bytes\n", g, comp);
            }
            CHECK(comp < (uint64_t)2 << 20);
            groups++;
        }
        fr_pq_reader_free(reader);
        /* Pages of at most half the row group and dictionaries of a
         * quarter (maint.c), so the compaction's page buffers, its
         * compression scratch, and a later round reading this file stay
         * small: a reader that refuses pages over 320 KiB (256 KiB + one
         * value + slack) reads every row. With 1 MiB row groups (512 KiB
         * pages) or the writer's 1 MiB pages it fails. */
        struct fr_pq_read_opts capped;
        fr_pq_read_opts_default(&capped);
        capped.max_page_bytes = (size_t)320 << 10;
        CHECK_EQ_INT(fr_pq_reader_open_file(live.files[i].local_path, &capped, &reader), FR_OK);
        struct fr_pq_scan *scan = NULL;
        if (reader && fr_pq_scan_open(reader, NULL, &scan) == FR_OK) {
            const struct fr_pq_batch *batch;
            uint64_t read = 0;
            int rc;
            while ((rc = fr_pq_scan_next(scan, &batch)) == FR_OK) {
                read += batch->nrows;
            }
            if (rc != FR_EEOF) {
                fprintf(stderr, "  capped read: %s\n", fr_pq_errmsg());
            }
            CHECK_EQ_INT(rc, FR_EEOF);
            CHECK_EQ_INT(read, FILES * ROWS);
        }
        fr_pq_scan_free(scan);
        fr_pq_reader_free(reader);
    }
    fprintf(stderr, "  %u row groups, %" PRIu64 " rows\n", groups, rows);
    CHECK_EQ_INT(rows, FILES * ROWS);
    CHECK(groups >= 3);
    fr_ice_file_list_free(&live);
    fr_ice_table_free(table);
    fr_lake_close(&lake);
    fr_conf_free(&conf);
}

/* `freshet compact --json` on a local lake: every small bronze file merged
 * into one, the JSON says so, rows and tables the same; a bad argument is
 * a usage error (2). */
static void test_compact_cmd(void)
{
    struct fr_conf conf;
    struct fr_lake lake;
    const char *dir = lake_of_small_files(&conf, &lake);
    fr_lake_close(&lake);

    char out[4300];
    snprintf(out, sizeof out, "%s/out.json", dir);
    int saved = check_stdout_begin(out);
    char *argv[] = {"compact", "--json", "--table", "wiki.bronze_recentchange",
                    "--orphans-older-than", "0", NULL};
    int st = fr_cmd_compact(&conf, 6, argv);
    char *bad[] = {"compact", "--target-bytes", "lots", NULL};
    int st2 = fr_cmd_compact(&conf, 3, bad);
    check_stdout_end(saved);
    CHECK_EQ_INT(st, 0);
    CHECK_EQ_INT(st2, 2);
    struct fr_buf b;
    fr_buf_init(&b, 1 << 20);
    CHECK_EQ_INT(fr_fs_read_file(out, &b), FR_OK);
    const char *s = fr_buf_cstr(&b);
    const char *nl = strchr(s, '\n');
    CHECK(nl != NULL);
    CHECK_EQ_INT(fr_json_validate(s, nl ? nl : s), FR_OK);
    char want[96];
    snprintf(want, sizeof want, "\"files_before\":%d,\"files_after\":1", FILES);
    CHECK(strstr(s, want) != NULL);
    CHECK(strstr(s, "\"name\":\"silver_recentchange\"") == NULL); /* --table: one */
    fr_buf_free(&b);

    struct fr_ice_table *table = NULL;
    struct fr_ice_file_list live = {0};
    CHECK_EQ_INT(fr_lake_open(&conf, &lake), FR_OK);
    CHECK_EQ_INT(fr_lake_table(&lake, fr_tbl_name(FR_TBL_BRONZE), &table), FR_OK);
    CHECK_EQ_INT(fr_ice_files(lake.cat, table, -1, true, &live), FR_OK);
    CHECK_EQ_INT(live.total_records, FILES * ROWS);
    fr_ice_file_list_free(&live);
    fr_ice_table_free(table);
    fr_lake_close(&lake);
    fr_conf_free(&conf);
}

/* A round's budget (process.maintain_budget_ms). Spent before the first
 * bin (listing 60 files takes longer than 1 ms), the round still merges one
 * bin, its first step, so that every round makes progress; it then goes on
 * next time with that table's expiry, not its compaction again (which used
 * the budget up: a table whose compaction always did would starve every
 * table after it, as on a loaded machine against moto's S3), and the round
 * after that with the next table. Without a budget a round does it all. */
static void test_round_budget(void)
{
    struct fr_conf conf;
    struct fr_lake lake;
    lake_of_small_files(&conf, &lake);
    char err[256];
    CHECK_EQ_INT(fr_conf_set(&conf, "process.maintain_budget_ms=1", FR_CONF_FLAG, err, sizeof err),
                 FR_OK);
    uint8_t want[FR_TBL_EVERY] = {0};
    want[FR_TBL_BRONZE] = 1;
    want[FR_TBL_SILVER] = 1;
    struct fr_maint_round round = {0};
    fr_maint_tables(&lake, &conf, want, 0, &round);
    CHECK_EQ_INT(round.next_table, FR_TBL_BRONZE);
    CHECK_EQ_INT(round.next_expire, 1);
    struct fr_ice_table *table = NULL;
    struct fr_ice_file_list live = {0};
    CHECK_EQ_INT(fr_lake_table(&lake, fr_tbl_name(FR_TBL_BRONZE), &table), FR_OK);
    CHECK_EQ_INT(fr_ice_files(lake.cat, table, -1, false, &live), FR_OK);
    CHECK_EQ_INT(live.nfiles, 1); /* one bin took every small file */
    CHECK_EQ_INT(live.total_records, FILES * ROWS);
    fr_ice_file_list_free(&live);
    fr_ice_table_free(table);
    /* the next round: bronze's expiry (its first step), then silver, before
     * or after whose compaction the budget stops it (or the round ends):
     * never bronze's compaction again */
    fr_maint_tables(&lake, &conf, want, 0, &round);
    CHECK(round.next_table == FR_TBL_SILVER || (round.next_table == 0 && !round.next_expire));
    CHECK_EQ_INT(fr_conf_set(&conf, "process.maintain_budget_ms=0", FR_CONF_FLAG, err, sizeof err),
                 FR_OK);
    fr_maint_tables(&lake, &conf, want, 0, &round);
    CHECK_EQ_INT(round.next_table, 0);
    CHECK_EQ_INT(round.next_expire, 0);
    fr_lake_close(&lake);
    fr_conf_free(&conf);
}

int main(void)
{
    RUN(test_own_compaction_row_groups);
    RUN(test_compact_cmd);
    RUN(test_round_budget);
    return check_report();
}
