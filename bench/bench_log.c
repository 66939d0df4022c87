/*
 * bench_log.c — append bandwidth of the embedded log with group commit.
 *
 * Appends records of record_bytes payload (default 1 KiB, plus a 24-byte
 * key and an sse_id header, like ingest's) to one partition in a fresh
 * temporary directory, calling fr_log_maybe_flush after every 16 appends
 * with the group-commit policy fsync every 4 MiB or 10 ms (an appended
 * record also flushes when the 8 MiB write buffer is full), then a final
 * flush.
 * The clock runs from open to the last acknowledgement, so every byte
 * counted is on stable storage. Prints records/s, MB/s (10^6 bytes) of
 * frames written to disk and of payload, and the number of fdatasyncs;
 * the last line is machine-readable for bench/log.sh. Single-threaded.
 *
 *   usage: bench_log [total_mib] [record_bytes] [dir]   (512, 1024, $TMPDIR or /tmp)
 */
#include "core/clock.h"
#include "core/err.h"
#include "log/log.h"

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int64_t bench_syncs;

static int bench_sync(void *ctx, int fd)
{
    bench_syncs++;
    return fr_log_io_posix.sync(ctx, fd);
}

static int bench_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int main(int argc, char **argv)
{
    int64_t total_mib = argc > 1 ? atoll(argv[1]) : 512;
    int64_t record_bytes = argc > 2 ? atoll(argv[2]) : 1024;
    const char *base = argc > 3 ? argv[3] : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    if (total_mib <= 0 || record_bytes <= 0 || record_bytes > 1 << 20) {
        fprintf(stderr, "usage: bench_log [total_mib] [record_bytes] [dir]\n");
        return 2;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/frbench_log.XXXXXX", base);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }

    struct fr_log_io io = fr_log_io_posix;
    io.sync = bench_sync;
    struct fr_log_opts opts;
    fr_log_opts_init(&opts);
    opts.io = &io;
    opts.fsync_bytes = 4 << 20;
    opts.fsync_interval_ms = 10;
    opts.retention_ms = 0;

    uint8_t *payload = malloc((size_t)record_bytes);
    for (int64_t i = 0; i < record_bytes; i++) {
        payload[i] = (uint8_t)('a' + i % 26);
    }
    char key[24], sse_id[96];
    struct fr_log_header hdr = {"sse_id", 6, sse_id, 0};
    struct fr_log_rec rec = {.key = key,
                             .key_len = sizeof key,
                             .headers = &hdr,
                             .header_count = 1,
                             .payload = payload,
                             .payload_len = (size_t)record_bytes};
    size_t frame = 48 + sizeof key + 6 + 6; /* frame header, key, header entry and name */
    int64_t count = total_mib * (1 << 20) / record_bytes;

    struct fr_log *log = NULL;
    int64_t t0 = fr_mono_ns();
    int rc = fr_log_open(dir, "bench", &opts, &log);
    int64_t disk = 0;
    for (int64_t i = 0; rc == FR_OK && i < count; i++) {
        memset(key, 'k', sizeof key);
        hdr.value_len = (size_t)snprintf(sse_id, sizeof sse_id,
                                         "[{\"topic\":\"eqiad.rc\",\"partition\":0,"
                                         "\"offset\":%lld}]",
                                         (long long)i);
        payload[i % record_bytes] ^= 1;
        rc = fr_log_append(log, 0, &rec, NULL);
        disk += (int64_t)(frame + hdr.value_len) + record_bytes;
        if (rc == FR_OK && i % 16 == 15) {
            /* An ingest loop applies the policy once per batch it reads. */
            int f = fr_log_maybe_flush(log, fr_mono_ms());
            rc = f < 0 ? f : FR_OK;
        }
    }
    if (rc == FR_OK) {
        rc = fr_log_flush(log);
    }
    int64_t t1 = fr_mono_ns();
    int64_t end = rc == FR_OK ? fr_log_durable_end(log, 0) : -1;
    fr_log_close(log);
    nftw(dir, bench_rm, 16, FTW_DEPTH | FTW_PHYS);
    free(payload);
    if (rc != FR_OK || end != count) {
        fprintf(stderr, "bench_log: %s (durable end %lld of %lld)\n", fr_strerror(rc),
                (long long)end, (long long)count);
        return 1;
    }

    double secs = (double)(t1 - t0) / 1e9;
    double disk_mb = (double)disk / 1e6 / secs;
    double payload_mb = (double)count * (double)record_bytes / 1e6 / secs;
    printf("records         %lld x %lld B payload (%.1f MB on disk)\n", (long long)count,
           (long long)record_bytes, (double)disk / 1e6);
    printf("time            %.3f s, %lld fdatasyncs (group commit: 4 MiB or 10 ms)\n", secs,
           (long long)bench_syncs);
    printf("records/s       %.0f\n", (double)count / secs);
    printf("MB/s on disk    %.1f\n", disk_mb);
    printf("MB/s payload    %.1f\n", payload_mb);
    printf("bench_log disk_mb_s=%.1f payload_mb_s=%.1f records_s=%.0f\n", disk_mb, payload_mb,
           (double)count / secs);
    return 0;
}
