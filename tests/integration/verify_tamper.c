/*
 * verify_tamper.c — the helper of tests/integration/verify*.sh: damages a
 * healthy lake through the public Iceberg and Parquet APIs, one way per
 * mode, so the test can check that `freshet verify` fails the right check;
 * and loads NDJSON into the log for lakes too big to stream through feed
 * and ingest quickly. Every tampering commit carries no epoch marker, so
 * it belongs to the epoch it follows (what a buggy writer or a hand edit
 * would leave). Single-threaded; run only while no pipeline runs.
 *
 *   verify_tamper load DATA PARTITIONS BLOCK < events.ndjson
 *       append each line as one record of topic recentchange: line n goes
 *       to partition (n / BLOCK) % PARTITIONS (lines over 4 MiB are refused)
 *   verify_tamper MODE DATA     with MODE one of
 *       drop-silver-file   silver rewritten without its oldest data file
 *       copy-bronze-file   a copy of bronze's first file appended (positions twice)
 *       same-file-twice    bronze's first file appended again (live twice)
 *       shared-file        silver's first file appended to late_arrivals
 *       fake-gold          a made-up gold_edits_per_minute row appended
 *       bump-top           gold_top_pages rewritten with one count off by one
 *       relabel-topic      gold_top_topics rewritten with one row's label
 *                          replaced by "Tampered label" (prints its
 *                          window_start in microseconds and its item)
 *       unlabel-topic      gold_top_topics rewritten with one row's label
 *                          removed (null; prints the same)
 *       empty-dlq          dlq overwritten with nothing
 *       empty-replays      dlq_replays overwritten with nothing (after a dlq replay)
 * Exit status: 0 done, 1 failure, 2 usage.
 */
#include "core/err.h"
#include "iceberg/iceberg.h"
#include "log/log.h"
#include "pipeline/tables.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_CAP ((size_t)4 << 20)

static int load(const char *data, int32_t parts, int64_t block)
{
    struct fr_log_opts opts;
    fr_log_opts_init(&opts);
    opts.partitions = parts;
    struct fr_log *log = NULL;
    char *line = NULL;
    size_t cap = 0;
    int status = 1;
    int rc = fr_log_open(data, "recentchange", &opts, &log);
    if (rc < 0) {
        fprintf(stderr, "log: %s\n", fr_strerror(rc));
        goto cleanup;
    }
    int64_t n = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, stdin)) > 0) {
        if ((size_t)len > LINE_CAP) {
            fprintf(stderr, "line %" PRId64 " is longer than %zu bytes\n", n + 1, LINE_CAP);
            goto cleanup;
        }
        if (line[len - 1] == '\n') {
            len--;
        }
        struct fr_log_rec rec = {.timestamp = 0, .payload = line, .payload_len = (size_t)len};
        rc = fr_log_append(log, (int32_t)(n / block % parts), &rec, NULL);
        if (rc < 0) {
            fprintf(stderr, "append: %s\n", fr_strerror(rc));
            goto cleanup;
        }
        n++;
    }
    rc = fr_log_flush(log);
    if (rc < 0) {
        fprintf(stderr, "flush: %s\n", fr_strerror(rc));
        goto cleanup;
    }
    printf("loaded %" PRId64 " records into %d partitions\n", n, (int)parts);
    status = 0;

cleanup:
    free(line);
    fr_log_close(log);
    return status;
}

/* A live file described again for a commit (points into f). */
static struct fr_ice_data_file as_data_file(const struct fr_ice_file *f, const char *path)
{
    return (struct fr_ice_data_file){.path = path ? path : f->path,
                                     .file_size = f->file_size,
                                     .record_count = f->record_count,
                                     .metrics = f->metrics,
                                     .nmetrics = f->nmetrics};
}

static int copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb");
    FILE *out = in ? fopen(to, "wb") : NULL;
    int rc = in && out ? FR_OK : FR_EIO;
    char buf[65536];
    size_t n;
    while (rc == FR_OK && (n = fread(buf, 1, sizeof buf, in)) > 0) {
        if (fwrite(buf, 1, n, out) != n) {
            rc = FR_EIO;
        }
    }
    if (in) {
        fclose(in);
    }
    if (out && fclose(out) != 0) {
        rc = FR_EIO;
    }
    return rc;
}

static int fake_gold(struct fr_ice_catalog *cat, struct fr_ice_table *table)
{
    struct fr_tw tw;
    fr_tw_init(&tw, FR_TBL_GOLD_EPM, fr_ice_table_dir(table), "tamper", 0, 1 << 20);
    struct fr_win_row row = {.window_start_us = INT64_C(1780000000000000),
                             .window_end_us = INT64_C(1780000060000000),
                             .wiki = {"tamperwiki", 10},
                             .counts = {.events = 1, .edits = 1},
                             .users_exact = 1};
    int rc = fr_tw_gold_epm(&tw, &row);
    if (rc == FR_OK) {
        rc = fr_tw_finish(&tw);
    }
    if (rc == FR_OK) {
        rc = fr_ice_append(cat, FR_NS, fr_tbl_name(FR_TBL_GOLD_EPM), &tw.file, 1, NULL, NULL);
    }
    fr_tw_abort(&tw);
    return rc;
}

/* Rewrite gold_top_pages into one file, adding 1 to the first row's count. */
static int bump_top(struct fr_ice_catalog *cat)
{
    struct fr_ice_table *table = NULL;
    struct fr_ice_file_list list = {0};
    struct fr_pq_reader *r = NULL;
    struct fr_pq_scan *scan = NULL;
    struct fr_tw tw;
    int rc = fr_ice_table_load(cat, FR_NS, fr_tbl_name(FR_TBL_GOLD_TOP), &table);
    if (rc == FR_OK) {
        fr_tw_init(&tw, FR_TBL_GOLD_TOP, fr_ice_table_dir(table), "tamper", 1, 1 << 20);
        rc = fr_ice_files(cat, table, -1, true, &list);
    } else {
        return rc;
    }
    uint64_t rows = 0;
    for (size_t i = 0; rc == FR_OK && i < list.nfiles; i++) {
        rc = fr_pq_reader_open_file(list.files[i].local_path, NULL, &r);
        if (rc == FR_OK) {
            rc = fr_pq_scan_open(r, NULL, &scan); /* columns in schema order */
        }
        const struct fr_pq_batch *b;
        while (rc == FR_OK && (rc = fr_pq_scan_next(scan, &b)) == FR_OK) {
            for (uint32_t k = 0; rc == FR_OK && k < b->nrows; k++) {
                const struct fr_pq_vec *c = b->cols;
                struct fr_top_row row = {.window_start_us = c[0].v.i64[k],
                                         .window_end_us = c[1].v.i64[k],
                                         .rank = (uint32_t)c[2].v.i32[k],
                                         .wiki = {c[3].v.str[k].ptr, c[3].v.str[k].len},
                                         .title = {c[4].v.str[k].ptr, c[4].v.str[k].len},
                                         .count = (uint64_t)c[5].v.i64[k] + (rows++ == 0 ? 1 : 0)};
                rc = fr_tw_gold_top(&tw, &row);
            }
        }
        if (rc == FR_EEOF) {
            rc = FR_OK;
        }
        fr_pq_scan_free(scan);
        scan = NULL;
        fr_pq_reader_free(r);
        r = NULL;
    }
    if (rc == FR_OK && rows == 0) {
        fprintf(stderr, "gold_top_pages is empty\n");
        rc = FR_EINVAL;
    }
    if (rc == FR_OK) {
        rc = fr_tw_finish(&tw);
    }
    if (rc == FR_OK) {
        rc = fr_ice_overwrite(cat, FR_NS, fr_tbl_name(FR_TBL_GOLD_TOP), &tw.file, 1, NULL, NULL);
    }
    fr_tw_abort(&tw);
    fr_ice_file_list_free(&list);
    fr_ice_table_free(table);
    return rc;
}

/* gold_top_topics rewritten with the first labelled row's label replaced
 * (relabel) or removed. */
static int relabel_topic(struct fr_ice_catalog *cat, int remove)
{
    struct fr_ice_table *table = NULL;
    struct fr_ice_file_list list = {0};
    struct fr_pq_reader *r = NULL;
    struct fr_pq_scan *scan = NULL;
    struct fr_tw tw;
    int rc = fr_ice_table_load(cat, FR_NS, fr_tbl_name(FR_TBL_GOLD_TOPICS), &table);
    if (rc == FR_OK) {
        fr_tw_init(&tw, FR_TBL_GOLD_TOPICS, fr_ice_table_dir(table), "tamper", 1, 1 << 20);
        rc = fr_ice_files(cat, table, -1, true, &list);
    } else {
        return rc;
    }
    int done = 0;
    for (size_t i = 0; rc == FR_OK && i < list.nfiles; i++) {
        rc = fr_pq_reader_open_file(list.files[i].local_path, NULL, &r);
        if (rc == FR_OK) {
            rc = fr_pq_scan_open(r, NULL, &scan); /* columns in schema order */
        }
        const struct fr_pq_batch *b;
        while (rc == FR_OK && (rc = fr_pq_scan_next(scan, &b)) == FR_OK) {
            const struct fr_pq_vec *c = b->cols;
            for (uint32_t k = 0; rc == FR_OK && k < b->nrows; k++) {
                const char *label = c[7].nulls[k] ? NULL : c[7].v.str[k].ptr;
                size_t label_len = c[7].nulls[k] ? 0 : c[7].v.str[k].len;
                if (label && !done) {
                    done = 1;
                    label = remove ? NULL : "Tampered label";
                    label_len = remove ? 0 : strlen("Tampered label");
                    printf("window_start_us %" PRId64 " item %.*s\n", c[0].v.i64[k],
                           (int)c[3].v.str[k].len, c[3].v.str[k].ptr);
                }
                rc = fr_tw_gold_topics_raw(&tw, c[0].v.i64[k], c[1].v.i64[k], c[2].v.i32[k],
                                           c[3].v.str[k].ptr, c[3].v.str[k].len, c[4].v.i64[k],
                                           c[5].v.i32[k], c[6].v.str[k].ptr, c[6].v.str[k].len,
                                           label, label_len);
            }
        }
        if (rc == FR_EEOF) {
            rc = FR_OK;
        }
        fr_pq_scan_free(scan);
        scan = NULL;
        fr_pq_reader_free(r);
        r = NULL;
    }
    if (rc == FR_OK && !done) {
        fprintf(stderr, "gold_top_topics has no labelled row\n");
        rc = FR_EINVAL;
    }
    if (rc == FR_OK) {
        rc = fr_tw_finish(&tw);
    }
    if (rc == FR_OK) {
        rc = fr_ice_overwrite(cat, FR_NS, fr_tbl_name(FR_TBL_GOLD_TOPICS), &tw.file, 1, NULL,
                              NULL);
    }
    fr_tw_abort(&tw);
    fr_ice_file_list_free(&list);
    fr_ice_table_free(table);
    return rc;
}

static int tamper(const char *mode, const char *data)
{
    struct fr_ice_catalog_opts copts = {.data_dir = data};
    struct fr_ice_catalog *cat = NULL;
    struct fr_ice_table *bronze = NULL, *silver = NULL, *other = NULL;
    struct fr_ice_file_list bl = {0}, sl = {0};
    struct fr_ice_data_file *keep = NULL;
    int rc = fr_ice_catalog_open(&copts, &cat);
    if (rc == FR_OK) {
        rc = fr_ice_table_load(cat, FR_NS, fr_tbl_name(FR_TBL_BRONZE), &bronze);
    }
    if (rc == FR_OK) {
        rc = fr_ice_table_load(cat, FR_NS, fr_tbl_name(FR_TBL_SILVER), &silver);
    }
    if (rc == FR_OK) {
        rc = fr_ice_files(cat, bronze, -1, true, &bl);
    }
    if (rc == FR_OK) {
        rc = fr_ice_files(cat, silver, -1, true, &sl);
    }
    if (rc == FR_OK && (bl.nfiles < 1 || sl.nfiles < 1)) {
        fprintf(stderr, "the lake needs data files in bronze and silver\n");
        rc = FR_EINVAL;
    }
    if (rc < 0) {
        goto cleanup;
    }
    if (strcmp(mode, "drop-silver-file") == 0) {
        /* the oldest (smallest name: epoch 0), whose windows are settled */
        size_t drop = 0;
        for (size_t i = 1; i < sl.nfiles; i++) {
            if (strcmp(sl.files[i].path, sl.files[drop].path) < 0) {
                drop = i;
            }
        }
        keep = calloc(sl.nfiles, sizeof *keep);
        rc = keep ? FR_OK : FR_ENOMEM;
        for (size_t i = 0, n = 0; rc == FR_OK && i < sl.nfiles; i++) {
            if (i != drop) {
                keep[n++] = as_data_file(&sl.files[i], NULL);
            }
        }
        if (rc == FR_OK) {
            rc = fr_ice_overwrite(cat, FR_NS, fr_tbl_name(FR_TBL_SILVER), keep,
                                  (uint32_t)(sl.nfiles - 1), NULL, NULL);
        }
    } else if (strcmp(mode, "copy-bronze-file") == 0) {
        char to[4200];
        snprintf(to, sizeof to, "%s/data/tamper-copy.parquet", fr_ice_table_dir(bronze));
        rc = copy_file(bl.files[0].local_path, to);
        struct fr_ice_data_file df = as_data_file(&bl.files[0], to);
        if (rc == FR_OK) {
            rc = fr_ice_append(cat, FR_NS, fr_tbl_name(FR_TBL_BRONZE), &df, 1, NULL, NULL);
        }
    } else if (strcmp(mode, "same-file-twice") == 0) {
        struct fr_ice_data_file df = as_data_file(&bl.files[0], NULL);
        rc = fr_ice_append(cat, FR_NS, fr_tbl_name(FR_TBL_BRONZE), &df, 1, NULL, NULL);
    } else if (strcmp(mode, "shared-file") == 0) {
        struct fr_ice_data_file df = as_data_file(&sl.files[0], NULL);
        rc = fr_ice_append(cat, FR_NS, fr_tbl_name(FR_TBL_LATE), &df, 1, NULL, NULL);
    } else if (strcmp(mode, "fake-gold") == 0) {
        rc = fr_ice_table_load(cat, FR_NS, fr_tbl_name(FR_TBL_GOLD_EPM), &other);
        if (rc == FR_OK) {
            rc = fake_gold(cat, other);
        }
    } else if (strcmp(mode, "bump-top") == 0) {
        rc = bump_top(cat);
    } else if (strcmp(mode, "relabel-topic") == 0 || strcmp(mode, "unlabel-topic") == 0) {
        rc = relabel_topic(cat, strcmp(mode, "unlabel-topic") == 0);
    } else if (strcmp(mode, "empty-dlq") == 0 || strcmp(mode, "empty-replays") == 0) {
        enum fr_tbl t = strcmp(mode, "empty-dlq") == 0 ? FR_TBL_DLQ : FR_TBL_DLQ_REPLAYS;
        rc = fr_ice_overwrite(cat, FR_NS, fr_tbl_name(t), NULL, 0, NULL, NULL);
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        rc = FR_EINVAL;
    }

cleanup:
    if (rc < 0) {
        fprintf(stderr, "%s: %s (%s) %s\n", mode, fr_strerror(rc), fr_err_name(rc),
                fr_ice_errmsg());
    } else {
        printf("%s: committed\n", mode);
    }
    free(keep);
    fr_ice_file_list_free(&bl);
    fr_ice_file_list_free(&sl);
    fr_ice_table_free(bronze);
    fr_ice_table_free(silver);
    fr_ice_table_free(other);
    fr_ice_catalog_close(cat);
    return rc < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "load") == 0) {
        int parts = atoi(argv[3]);
        long long block = atoll(argv[4]);
        if (parts < 1 || parts > 64 || block < 1) {
            fprintf(stderr, "PARTITIONS must be 1..64 and BLOCK >= 1\n");
            return 2;
        }
        return load(argv[2], parts, block);
    }
    if (argc != 3) {
        fprintf(stderr, "usage: verify_tamper load DATA PARTITIONS BLOCK < ndjson\n"
                        "       verify_tamper MODE DATA\n");
        return 2;
    }
    return tamper(argv[1], argv[2]);
}
