/*
 * fuzz_log.c — libFuzzer target for the embedded log's files as a crash,
 * a bad disk or another process may leave them: the segment scan that
 * tells a torn tail from corruption (src/log/segment.c), the reader that
 * follows a partition (src/log/reader.c), the durable marker, and the
 * writer's recovery at open (src/log/writer.c).
 *
 * Input: one flags byte, then the segment file's bytes; with flag 2 the
 * last 128 bytes are the "durable" marker file instead. Random bytes
 * almost never carry a valid CRC, so with flag 1 the target first fixes
 * the header's CRC, each frame's (walking the frames by their length
 * field) and the marker slots', which lets the fuzzer reach the decoders
 * behind the checksums. Each input is written to a fresh partition
 * directory under /dev/shm, then:
 *   1. a reader from the earliest offset reads without waiting until it
 *      has nothing more or an error; the offsets it hands out are dense;
 *   2. the writer opens the topic (recovery). When it accepts the files,
 *      the last segment must then pass a strict scan ending at the
 *      recovered offset, one record appended and flushed must read back
 *      at that offset, and the reader must read every record up to it.
 * Nothing may crash, leak, read out of bounds or overflow (ASan, UBSan).
 * One thread; the directory is removed after each input.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/crc32c.h"
#include "core/diag.h"
#include "core/err.h"
#include "core/fsutil.h"
#include "log/log.h"
#include "log/log_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[128], dir[256], seg[320], mark[320];

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void fix_crcs(uint8_t *s, size_t n, uint8_t *m, size_t mn)
{
    if (n >= FR_LOG_SEG_HDR) {
        put32(s + 28, fr_crc32c(0, s, 28));
    }
    size_t pos = FR_LOG_SEG_HDR;
    while (pos + 8 <= n) {
        uint32_t len = get32(s + pos + 4);
        if (len < 40 || len > n - pos - 8) {
            break;
        }
        put32(s + pos, fr_crc32c(0, s + pos + 4, 4 + (size_t)len));
        pos += 8 + (size_t)len;
    }
    for (size_t k = 0; k + FR_LOG_MARK_SLOT <= mn; k += FR_LOG_MARK_SLOT) {
        put32(m + k + 4, fr_crc32c(0, m + k + 8, FR_LOG_MARK_SLOT - 8));
    }
}

static void write_file(const char *path, const uint8_t *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || (n && write(fd, p, n) != (ssize_t)n)) {
        abort(); /* the harness, not the code under test */
    }
    close(fd);
}

/* Remove every file of the partition directory (segments, marker, lock). */
static void clear_dir(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[600];
    while (d && (e = readdir(d))) {
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    }
    if (d) {
        closedir(d);
    }
}

static void remove_root(void)
{
    char path[320];
    clear_dir();
    rmdir(dir);
    snprintf(path, sizeof path, "%s/log/t", root);
    rmdir(path);
    snprintf(path, sizeof path, "%s/log", root);
    rmdir(path);
    rmdir(root);
}

/* Read from the earliest offset; returns the end reached, or -1. */
static int64_t read_all(void)
{
    struct fr_log_reader *reader = NULL;
    struct fr_log_rec rec;
    int64_t next = -1;
    if (fr_log_reader_open(root, "t", 0, FR_LOG_OFFSET_EARLIEST, NULL, &reader) != FR_OK) {
        return -1;
    }
    for (int i = 0; i < 100000; i++) {
        int rc = fr_log_reader_next(reader, &rec, 0);
        if (rc != 1) {
            next = rc == 0 ? next : -1;
            break;
        }
        if (next >= 0 && rec.offset != next) {
            abort(); /* offsets handed out are dense */
        }
        next = rec.offset + 1;
    }
    fr_log_reader_close(reader);
    return next;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!root[0]) {
        fr_diag_set_level(FR_DIAG_ERROR);
        snprintf(root, sizeof root, "/dev/shm/fuzz_log.%d", (int)getpid());
        snprintf(dir, sizeof dir, "%s/log/t/0", root);
        snprintf(seg, sizeof seg, "%s/00000000000000000000.seg", dir);
        snprintf(mark, sizeof mark, "%s/" FR_LOG_MARK_NAME, dir);
        if (fr_fs_mkdirs(dir, 0755) != FR_OK) {
            abort();
        }
        atexit(remove_root);
    }
    if (size < 1 || size > (1u << 20)) {
        return 0;
    }
    uint8_t flags = data[0];
    size_t n = size - 1, mn = 0;
    uint8_t *s = malloc(n + 1);
    uint8_t m[2 * FR_LOG_MARK_SLOT];
    memcpy(s, data + 1, n);
    if ((flags & 2) && n >= sizeof m) {
        mn = sizeof m;
        n -= mn;
        memcpy(m, s + n, mn);
    }
    if (flags & 1) {
        fix_crcs(s, n, m, mn);
    }
    write_file(seg, s, n);
    if (mn) {
        write_file(mark, m, mn);
    }

    (void)read_all();

    struct fr_log *log = NULL;
    if (fr_log_open(root, "t", NULL, &log) == FR_OK) {
        struct fr_log_recovery rv;
        struct fr_log_scan scan;
        if (fr_log_recovery(log, 0, &rv) != FR_OK) {
            abort();
        }
        int fd = open(seg, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) { /* a segment without a header is removed and recreated */
            if (fr_log_seg_scan(fd, seg, 0, 1, &scan) != FR_OK || !scan.header_ok ||
                scan.end_offset != rv.end_offset || scan.valid_bytes != scan.file_bytes) {
                abort(); /* recovery left something a strict scan refuses */
            }
            close(fd);
        }
        struct fr_log_rec rec = {.timestamp = 1, .payload = "x", .payload_len = 1};
        int64_t off = -1;
        if (fr_log_append(log, 0, &rec, &off) != FR_OK || off != rv.end_offset ||
            fr_log_flush(log) != FR_OK) {
            abort();
        }
        fr_log_close(log);
        int64_t end = read_all();
        if (end != off + 1) {
            abort(); /* the reader does not reach the record just acknowledged */
        }
    }
    clear_dir();
    free(s);
    return 0;
}
