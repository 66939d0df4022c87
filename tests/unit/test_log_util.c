/*
 * test_log_util.c — shared by the log tests (included, not linked: every
 * function is static): a seeded record generator whose records are a pure
 * function of (seed, partition, offset), so a test or a crashed child's
 * parent can check any record it reads back; a fault-injecting io table
 * (byte budget for ENOSPC, failing syncs, fake clocks); file helpers.
 */
#include "log/log.h"

#include "core/err.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TL_UNUSED __attribute__((unused))

/* ---- Deterministic randomness --------------------------------------------------- */

static TL_UNUSED uint64_t tl_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static TL_UNUSED size_t tl_below(uint64_t *state, size_t n)
{
    return n ? tl_rand(state) % n : 0;
}

/* ---- Generated records ------------------------------------------------------------ */

struct tl_rec {
    uint8_t key[64];
    char names[4][16];
    uint8_t values[4][96];
    uint8_t payload[4096];
    struct fr_log_header hdrs[4];
    struct fr_log_rec rec;
};

/* The record that belongs at (seed, partition, offset); payloads up to
 * max_payload bytes (<= 4096), binary, text or JSON. */
static TL_UNUSED void tl_gen(struct tl_rec *g, uint64_t seed, int32_t partition, int64_t offset,
                             size_t max_payload)
{
    uint64_t st = seed * 1000003u + (uint64_t)partition * 7919u + (uint64_t)offset * 104729u;
    memset(&g->rec, 0, sizeof g->rec);
    g->rec.timestamp = 1700000000000 + offset * 7;
    g->rec.key_len = tl_below(&st, 40);
    for (size_t i = 0; i < g->rec.key_len; i++) {
        g->key[i] = (uint8_t)tl_rand(&st);
    }
    g->rec.key = g->key;
    g->rec.header_count = tl_below(&st, 4);
    for (size_t h = 0; h < g->rec.header_count; h++) {
        int n = snprintf(g->names[h], sizeof g->names[h], h == 0 ? "sse_id" : "h%zu", h);
        size_t vlen = tl_below(&st, sizeof g->values[h]);
        for (size_t i = 0; i < vlen; i++) {
            g->values[h][i] = (uint8_t)tl_rand(&st);
        }
        g->hdrs[h] = (struct fr_log_header){g->names[h], (size_t)n, g->values[h], vlen};
    }
    g->rec.headers = g->hdrs;
    size_t plen = tl_below(&st, max_payload + 1);
    int kind = (int)tl_below(&st, 3);
    for (size_t i = 0; i < plen; i++) {
        g->payload[i] = kind == 0 ? (uint8_t)tl_rand(&st) : (uint8_t)('a' + tl_below(&st, 26));
    }
    if (kind == 2 && plen >= 10) {
        memcpy(g->payload, "{\"o\":\"", 6);
        memcpy(g->payload + plen - 2, "\"}", 2);
    }
    g->rec.payload = g->payload;
    g->rec.payload_len = plen;
}

/* Does got carry exactly what want does (offset not compared)? */
static TL_UNUSED int tl_same(const struct fr_log_rec *got, const struct fr_log_rec *want)
{
    if (got->timestamp != want->timestamp || got->key_len != want->key_len ||
        got->payload_len != want->payload_len || got->header_count != want->header_count) {
        return 0;
    }
    if ((got->key_len && memcmp(got->key, want->key, got->key_len) != 0) ||
        (got->payload_len && memcmp(got->payload, want->payload, got->payload_len) != 0)) {
        return 0;
    }
    for (size_t i = 0; i < got->header_count; i++) {
        const struct fr_log_header *a = &got->headers[i], *b = &want->headers[i];
        if (a->name_len != b->name_len || memcmp(a->name, b->name, a->name_len) != 0 ||
            a->value_len != b->value_len ||
            (a->value_len && memcmp(a->value, b->value, a->value_len) != 0)) {
            return 0;
        }
    }
    return 1;
}

/* Read partition from offset 0 to its end and compare every record with
 * the generator; returns the number of records that matched in order, or
 * -1 on the first mismatch or error. */
static TL_UNUSED int64_t tl_verify(const char *dir, const char *topic, int32_t partition,
                                   uint64_t seed, size_t max_payload)
{
    struct fr_log_reader *reader = NULL;
    struct tl_rec g;
    int64_t n = 0;
    if (fr_log_reader_open(dir, topic, partition, 0, NULL, &reader) != FR_OK) {
        return -1;
    }
    for (;;) {
        struct fr_log_rec rec;
        int rc = fr_log_reader_next(reader, &rec, 0);
        if (rc == 0) {
            break;
        }
        tl_gen(&g, seed, partition, n, max_payload);
        if (rc < 0 || rec.offset != n || !tl_same(&rec, &g.rec)) {
            fprintf(stderr, "tl_verify: mismatch at offset %lld (rc %d)\n", (long long)n, rc);
            n = -1;
            break;
        }
        n++;
    }
    fr_log_reader_close(reader);
    return n;
}

/* ---- Fault-injecting io --------------------------------------------------------------- */

struct tl_io {
    int64_t budget;     /* bytes pwrite may still write; < 0: unlimited */
    int sync_failures;  /* the next N syncs fail with EIO */
    int real_sync;      /* 0: syncs succeed without touching the disk */
    int64_t wall, mono; /* fake clocks, when fake_clock */
    int fake_clock;
    int64_t bytes_written;
    int64_t syncs;
};

static TL_UNUSED ssize_t tl_pwrite(void *ctx, int fd, const void *buf, size_t len, off_t off)
{
    struct tl_io *io = ctx;
    if (io->budget == 0) {
        errno = ENOSPC;
        return -1;
    }
    if (io->budget > 0 && (int64_t)len > io->budget) {
        len = (size_t)io->budget;
    }
    ssize_t n = pwrite(fd, buf, len, off);
    if (n > 0) {
        io->bytes_written += n;
        if (io->budget > 0) {
            io->budget -= n;
        }
    }
    return n;
}

static TL_UNUSED int tl_sync(void *ctx, int fd)
{
    struct tl_io *io = ctx;
    io->syncs++;
    if (io->sync_failures > 0) {
        io->sync_failures--;
        errno = EIO;
        return -1;
    }
    return io->real_sync ? fdatasync(fd) : 0;
}

static TL_UNUSED int tl_ftruncate(void *ctx, int fd, off_t len)
{
    (void)ctx;
    return ftruncate(fd, len);
}

static TL_UNUSED int64_t tl_wall(void *ctx)
{
    struct tl_io *io = ctx;
    return io->fake_clock ? io->wall : fr_log_io_posix.wall_ms(NULL);
}

static TL_UNUSED int64_t tl_mono(void *ctx)
{
    struct tl_io *io = ctx;
    return io->fake_clock ? io->mono : fr_log_io_posix.mono_ms(NULL);
}

static TL_UNUSED void tl_writeback(void *ctx, int fd, off_t off, off_t len)
{
    (void)ctx;
    (void)fd;
    (void)off;
    (void)len;
}

static const struct fr_log_io tl_io_table = {
    .pwrite = tl_pwrite,
    .sync = tl_sync,
    .ftruncate = tl_ftruncate,
    .wall_ms = tl_wall,
    .mono_ms = tl_mono,
    .writeback = tl_writeback,
};

/* Options using io (budget unlimited, syncs skipped unless real_sync). */
static TL_UNUSED void tl_opts(struct fr_log_opts *opts, struct tl_io *io)
{
    fr_log_opts_init(opts);
    memset(io, 0, sizeof *io);
    io->budget = -1;
    opts->io = &tl_io_table;
    opts->io_ctx = io;
}

/* ---- Files ---------------------------------------------------------------------------- */

static int tl_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static TL_UNUSED void tl_rm_rf(const char *dir)
{
    nftw(dir, tl_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static TL_UNUSED int64_t tl_file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

static TL_UNUSED void tl_seg_path(char *out, size_t cap, const char *dir, const char *topic,
                                  int32_t partition, int64_t base)
{
    snprintf(out, cap, "%s/log/%s/%d/%020lld.seg", dir, topic, (int)partition, (long long)base);
}

/* Read a whole file into a malloc'd buffer. */
static TL_UNUSED uint8_t *tl_slurp(const char *path, size_t *len)
{
    int64_t size = tl_file_size(path);
    if (size < 0) {
        return NULL;
    }
    uint8_t *data = malloc((size_t)size + 1);
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? pread(fd, data, (size_t)size, 0) : -1;
    if (fd >= 0) {
        close(fd);
    }
    if (n != size) {
        free(data);
        return NULL;
    }
    *len = (size_t)size;
    return data;
}

/* Make path hold exactly data[0..len). Written in place and then cut,
 * never truncated to zero first: ext4 flushes a file truncated to zero on
 * close (auto_da_alloc), which would make the torn-tail loop crawl. */
static TL_UNUSED int tl_spew(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    if (fd < 0) {
        return -1;
    }
    ssize_t n = len ? pwrite(fd, data, len, 0) : 0;
    int rc = n == (ssize_t)len && ftruncate(fd, (off_t)len) == 0 ? 0 : -1;
    close(fd);
    return rc;
}

/* Flip one bit of the byte at pos in path. */
static TL_UNUSED int tl_flip(const char *path, int64_t pos)
{
    int fd = open(path, O_RDWR);
    uint8_t b = 0;
    int ok = fd >= 0 && pread(fd, &b, 1, pos) == 1;
    b ^= 0x10;
    ok = ok && pwrite(fd, &b, 1, pos) == 1;
    if (fd >= 0) {
        close(fd);
    }
    return ok ? 0 : -1;
}

/* Byte position of the k-th frame of a segment file (walking the length
 * fields), or -1. */
static TL_UNUSED int64_t tl_frame_pos(const char *path, int64_t k)
{
    size_t len;
    uint8_t *data = tl_slurp(path, &len);
    int64_t pos = 32;
    for (int64_t i = 0; data && i < k; i++) {
        if ((size_t)pos + 8 > len) {
            pos = -1;
            break;
        }
        uint32_t flen = (uint32_t)data[pos + 4] | (uint32_t)data[pos + 5] << 8 |
                        (uint32_t)data[pos + 6] << 16 | (uint32_t)data[pos + 7] << 24;
        pos += 8 + flen;
    }
    free(data);
    return data ? pos : -1;
}

/* A fresh temporary directory (check.h) copied into out. */
static TL_UNUSED void tl_tmpdir(char out[1024])
{
    const char *t = check_tmpdir();
    size_t n = strlen(t);
    if (n >= 1024) {
        abort();
    }
    memcpy(out, t, n + 1);
}
