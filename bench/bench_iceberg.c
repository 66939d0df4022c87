/*
 * bench_iceberg.c — the lake's commit cost as history grows, and what
 * compaction does to a table built from many small appends.
 *
 * 1. Commit latency. One table, COMMITS fast appends of one data file each
 *    (a real Parquet file, hard-linked under a new name per commit so the
 *    data write is outside the timing), with manifest merging on (the
 *    defaults: merge when 100 manifests are under 8 MiB) and snapshot
 *    expiry every 100 commits keeping the last 100 snapshots. Prints the
 *    median and p90 latency of commits 1-100 and of the last 100, their
 *    ratio (the goal is <= 2x), and the metadata file size, the manifest
 *    list length and the snapshot count at both ends (bounded).
 * 2. Compaction. A table of SMALL appends of ROWS rows each; prints live
 *    files and bytes before and after fr_ice_compact, and its time.
 *
 * Every commit is durable (fsync of each file, SQLite synchronous=FULL),
 * so the figures include the disk's fsync latency.
 *
 *   usage: bench_iceberg [COMMITS [SMALL [ROWS]]]    (defaults 10000 500 2000)
 */
#include "core/clock.h"
#include "core/err.h"
#include "core/fsutil.h"
#include "iceberg/iceberg.h"
#include "iceberg/iceberg_int.h"
#include "parquet/parquet.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct fr_ice_field fields[] = {
    {1, "id", FR_ICE_LONG, true, NULL},
    {2, "wiki", FR_ICE_STRING, false, NULL},
    {3, "ts", FR_ICE_TIMESTAMPTZ, false, NULL},
};

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench_iceberg: %s: %s (%s)\n", what, fr_strerror(rc), fr_ice_errmsg());
    exit(1);
}

/* Write rows [first, first+n) and describe the file. */
static void write_pq(const char *path, int64_t first, int n, struct fr_pq_file_stats *stats,
                     struct fr_ice_data_file *df, struct fr_ice_col_metrics *metrics,
                     uint8_t *bounds, size_t bcap)
{
    static const struct fr_pq_column cols[] = {{"id", FR_PQ_INT64, false, 1},
                                               {"wiki", FR_PQ_STRING, true, 2},
                                               {"ts", FR_PQ_TIMESTAMP, true, 3}};
    struct fr_pq_schema schema = {cols, 3};
    struct fr_pq_opts opts;
    fr_pq_opts_default(&opts);
    struct fr_pq_out out;
    struct fr_pq_writer *w = NULL;
    int rc = fr_pq_out_file(path, &out);
    if (rc == FR_OK) {
        rc = fr_pq_writer_open(&schema, &opts, &out, &w);
    }
    for (int i = 0; rc == FR_OK && i < n; i++) {
        char wiki[32];
        int len = snprintf(wiki, sizeof wiki, "wiki%d", (int)((first + i) % 50));
        rc = fr_pq_write_int64(w, 0, first + i);
        if (rc == FR_OK) {
            rc = fr_pq_write_str(w, 1, wiki, (size_t)len);
        }
        if (rc == FR_OK) {
            rc = fr_pq_write_int64(w, 2, INT64_C(1790000000000000) + (first + i) * 1000);
        }
        if (rc == FR_OK) {
            rc = fr_pq_row_end(w);
        }
    }
    if (rc == FR_OK) {
        rc = fr_pq_writer_close(w, stats);
    }
    fr_pq_writer_free(w);
    if (rc == FR_OK) {
        rc = fr_ice_file_from_pq(path, &schema, stats, df, metrics, bounds, bcap);
    }
    if (rc < 0) {
        die(path, rc);
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct(int64_t *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof *v, cmp_i64);
    return (double)v[(int)(p * (n - 1))] / 1e6;
}

struct shape {
    int64_t meta_bytes;
    uint32_t manifests;
    uint32_t snapshots;
};

static struct shape table_shape(struct fr_ice_catalog *cat, const char *name)
{
    struct shape s = {0};
    struct fr_ice_table *t = NULL;
    if (fr_ice_table_load(cat, "bench", name, &t) < 0) {
        die("load", FR_EIO);
    }
    char local[4096];
    struct stat st;
    if (ice_local_path(t, fr_ice_table_metadata_file(t), local, sizeof local) == FR_OK &&
        stat(local, &st) == 0) {
        s.meta_bytes = st.st_size;
    }
    fr_ice_table_snapshots(t, &s.snapshots);
    const struct ice_snapshot *snap = ice_meta_snapshot(t->meta, fr_ice_table_snapshot_id(t));
    struct fr_ice_arena *a = ice_arena_new(1u << 28);
    struct ice_mfile *mfs;
    if (snap && a && ice_read_mlist(t, snap, a, &mfs, &s.manifests) < 0) {
        s.manifests = 0;
    }
    ice_arena_free(a);
    fr_ice_table_free(t);
    return s;
}

static void bench_commits(struct fr_ice_catalog *cat, int commits)
{
    struct fr_ice_table_def def = {fields, 3, NULL, 0, NULL, 0};
    int rc = fr_ice_table_create(cat, "bench", "history", &def, NULL);
    if (rc < 0) {
        die("create", rc);
    }
    char dir[4096], src[4200], dst[4300];
    snprintf(dir, sizeof dir, "%s/bench/history/data", fr_ice_catalog_warehouse(cat));
    fr_fs_mkdirs(dir, 0755);
    snprintf(src, sizeof src, "%s/template.parquet", dir);
    struct fr_pq_file_stats stats = {0};
    struct fr_ice_data_file df;
    struct fr_ice_col_metrics metrics[3];
    uint8_t bounds[512];
    write_pq(src, 0, 100, &stats, &df, metrics, bounds, sizeof bounds);
    int64_t *lat = calloc((size_t)commits, sizeof *lat);
    int64_t expire_ns = 0;
    int expiries = 0;
    struct shape early = {0};
    for (int i = 0; i < commits; i++) {
        snprintf(dst, sizeof dst, "%s/f%06d.parquet", dir, i);
        if (link(src, dst) < 0) {
            die("link", FR_EIO);
        }
        df.path = dst;
        struct fr_ice_commit_info info = {"bench", i, "recentchange/0", NULL, 0};
        int64_t t0 = fr_mono_ns();
        rc = fr_ice_append(cat, "bench", "history", &df, 1, &info, NULL);
        lat[i] = fr_mono_ns() - t0;
        if (rc < 0) {
            die("append", rc);
        }
        if ((i + 1) % 100 == 0) {
            t0 = fr_mono_ns();
            rc = fr_ice_expire(cat, "bench", "history", fr_wall_ms(), 100, NULL);
            expire_ns += fr_mono_ns() - t0;
            expiries++;
            if (rc < 0) {
                die("expire", rc);
            }
        }
        if (i + 1 == 100) {
            early = table_shape(cat, "history");
        }
    }
    struct shape late = table_shape(cat, "history");
    int w = commits < 100 ? commits : 100;
    printf("commit latency (ms), %d fast appends, merging + expiry every 100 commits:\n", commits);
    double first50 = 0, last50 = 0;
    int starts[] = {0, 999, 4999, commits - w};
    int printed = -1;
    for (size_t k = 0; k < sizeof starts / sizeof starts[0]; k++) {
        int at = starts[k];
        if (at < 0 || at + w > commits || at <= printed ||
            (k + 1 < sizeof starts / sizeof starts[0] && at + w > commits - w && at != 0)) {
            continue;
        }
        printed = at;
        int64_t *win = malloc(sizeof *win * (size_t)w);
        memcpy(win, lat + at, sizeof *win * (size_t)w);
        double p50 = pct(win, w, 0.5), p90 = pct(win, w, 0.9);
        free(win);
        printf("  commits %5d-%-5d  median %6.2f  p90 %6.2f\n", at + 1, at + w, p50, p90);
        if (at == 0) {
            first50 = p50;
        }
        last50 = p50;
    }
    printf("  ratio last/first (median): %.2fx   (goal <= 2x)\n", last50 / first50);
    printf("  metadata file: %" PRId64 " B at commit %d, %" PRId64 " B at commit %d\n",
           early.meta_bytes, w, late.meta_bytes, commits);
    printf("  manifests in the list: %u at commit %d, %u at commit %d\n", early.manifests, w,
           late.manifests, commits);
    printf("  snapshots kept: %u at commit %d, %u at commit %d\n", early.snapshots, w,
           late.snapshots, commits);
    printf("  expiry: %d runs, mean %.1f ms\n", expiries,
           expiries ? (double)expire_ns / expiries / 1e6 : 0.0);
    free(lat);
    fr_pq_file_stats_free(&stats);
}

static void bench_compaction(struct fr_ice_catalog *cat, int small, int rows)
{
    struct fr_ice_table_def def = {fields, 3, NULL, 0, NULL, 0};
    int rc = fr_ice_table_create(cat, "bench", "small_files", &def, NULL);
    if (rc < 0) {
        die("create", rc);
    }
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/bench/small_files/data", fr_ice_catalog_warehouse(cat));
    fr_fs_mkdirs(dir, 0755);
    for (int i = 0; i < small; i++) {
        struct fr_pq_file_stats stats = {0};
        struct fr_ice_data_file df;
        struct fr_ice_col_metrics metrics[3];
        uint8_t bounds[512];
        snprintf(path, sizeof path, "%s/s%05d.parquet", dir, i);
        write_pq(path, (int64_t)i * rows, rows, &stats, &df, metrics, bounds, sizeof bounds);
        rc = fr_ice_append(cat, "bench", "small_files", &df, 1, NULL, NULL);
        fr_pq_file_stats_free(&stats);
        if (rc < 0) {
            die("append", rc);
        }
    }
    struct fr_ice_compact_opts co = {.target_bytes = INT64_C(128) << 20};
    struct fr_ice_compact_stats cs;
    int64_t t0 = fr_mono_ns();
    rc = fr_ice_compact(cat, "bench", "small_files", &co, &cs);
    double secs = (double)(fr_mono_ns() - t0) / 1e9;
    if (rc < 0) {
        die("compact", rc);
    }
    printf("compaction of %d appends of %d rows (target 128 MiB, zstd):\n", small, rows);
    printf("  files  %u -> %u\n", cs.files_before, cs.files_after);
    printf("  bytes  %" PRId64 " -> %" PRId64 "  (%.1f KiB mean file before)\n", cs.bytes_before,
           cs.bytes_after, cs.files_before ? (double)cs.bytes_before / cs.files_before / 1024 : 0);
    printf("  rows   %" PRId64 " rewritten in %u group(s), %.2f s (%.0f rows/s)\n", cs.rows,
           cs.groups, secs, secs > 0 ? (double)cs.rows / secs : 0);
}

int main(int argc, char **argv)
{
    int commits = argc > 1 ? atoi(argv[1]) : 10000;
    int small = argc > 2 ? atoi(argv[2]) : 500;
    int rows = argc > 3 ? atoi(argv[3]) : 2000;
    char dir[] = "/tmp/bench_iceberg.XXXXXX";
    if (!mkdtemp(dir)) {
        die("mkdtemp", FR_EIO);
    }
    struct fr_ice_catalog *cat = NULL;
    struct fr_ice_catalog_opts o = {.data_dir = dir};
    int rc = fr_ice_catalog_open(&o, &cat);
    if (rc < 0) {
        die("catalog", rc);
    }
    if (commits > 0) {
        bench_commits(cat, commits);
    }
    if (small > 0) {
        bench_compaction(cat, small, rows);
    }
    fr_ice_catalog_close(cat);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "bench_iceberg: could not remove %s\n", dir);
    }
    return 0;
}
