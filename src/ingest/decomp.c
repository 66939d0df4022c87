/*
 * decomp.c — the inputs of `ingest --file` (decomp.h): plain, gzip, zstd.
 *
 * Every source reads its stored bytes through one raw buffer (SRC_RAW
 * bytes, filled with read(2)). At open the buffer is filled until it holds
 * FR_INGEST_HEAD_BYTES or the input ends, and those bytes give the
 * identity; they are then decoded like everything after them, so a pipe is
 * read exactly once. Plain sources hand out the raw buffer's rest and then
 * read straight into the caller's buffer; gzip and zstd decode from the raw
 * buffer into it. Memory is bounded: SRC_RAW plus the codec's state (zlib
 * ~44 KiB, zstd's window ≤ 8 MiB for the levels zstd's CLI writes by
 * default, capped at 2^27 by ZSTD_d_windowLogMax's default).
 */
#include "ingest/decomp.h"

#include "core/diag.h"
#include "core/err.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#define SRC_RAW (256 * 1024)

struct fr_ingest_src {
    char path[1024];
    int fd;
    int owns_fd;
    int regular;
    enum fr_ingest_codec codec;
    struct fr_ingest_ident ident;
    uint8_t *raw;
    size_t raw_len, raw_pos;
    int raw_eof;
    z_stream z;
    int z_init;
    int z_member_open; /* inside a gzip member (its end not yet seen) */
    ZSTD_DCtx *zd;
    size_t zst_hint; /* last ZSTD_decompressStream result: 0 = between frames */
};

uint64_t fr_ingest_hash64(const void *data, size_t len)
{
    const uint8_t *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static int src_has_suffix(const char *path, const char *suffix)
{
    size_t pl = strlen(path), sl = strlen(suffix);
    return pl >= sl && strcmp(path + pl - sl, suffix) == 0;
}

/* Read more stored bytes after raw_len (compacting first). 0 at EOF. */
static int src_fill(struct fr_ingest_src *src)
{
    if (src->raw_eof) {
        return FR_OK;
    }
    if (src->raw_pos > 0) {
        memmove(src->raw, src->raw + src->raw_pos, src->raw_len - src->raw_pos);
        src->raw_len -= src->raw_pos;
        src->raw_pos = 0;
    }
    while (src->raw_len < SRC_RAW) {
        ssize_t r = read(src->fd, src->raw + src->raw_len, SRC_RAW - src->raw_len);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            fr_error("ingest", "%s: read failed: %s", src->path, strerror(errno));
            return FR_EIO;
        }
        if (r == 0) {
            src->raw_eof = 1;
        }
        /* One read is enough: the caller decodes what there is. */
        src->raw_len += (size_t)r;
        break;
    }
    return FR_OK;
}

int fr_ingest_src_open(const char *path, struct fr_ingest_src **out)
{
    *out = NULL;
    struct fr_ingest_src *src = calloc(1, sizeof *src);
    int rc = FR_ENOMEM;
    if (!src) {
        goto cleanup;
    }
    src->fd = -1;
    snprintf(src->path, sizeof src->path, "%s", strcmp(path, "-") == 0 ? "standard input" : path);
    src->raw = malloc(SRC_RAW);
    if (!src->raw) {
        goto cleanup;
    }
    if (strcmp(path, "-") == 0) {
        src->fd = 0;
    } else {
        src->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (src->fd < 0) {
            fr_error("ingest", "cannot open %s: %s", path, strerror(errno));
            rc = errno == ENOENT ? FR_ENOTFOUND : FR_EIO;
            goto cleanup;
        }
        src->owns_fd = 1;
    }
    struct stat st;
    if (fstat(src->fd, &st) == 0 && S_ISREG(st.st_mode)) {
        src->regular = 1;
        src->ident.size = st.st_size;
        posix_fadvise(src->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    } else {
        src->ident.size = -1;
    }
    while (!src->raw_eof && src->raw_len < FR_INGEST_HEAD_BYTES) {
        rc = src_fill(src);
        if (rc < 0) {
            goto cleanup;
        }
    }
    src->ident.head = fr_ingest_hash64(
        src->raw, src->raw_len < FR_INGEST_HEAD_BYTES ? src->raw_len : FR_INGEST_HEAD_BYTES);

    if (src_has_suffix(path, ".gz")) {
        src->codec = FR_INGEST_GZIP;
    } else if (src_has_suffix(path, ".zst")) {
        src->codec = FR_INGEST_ZSTD;
    } else if (strcmp(path, "-") == 0 && src->raw_len >= 2 && src->raw[0] == 0x1f &&
               src->raw[1] == 0x8b) {
        src->codec = FR_INGEST_GZIP;
    } else if (strcmp(path, "-") == 0 && src->raw_len >= 4 &&
               memcmp(src->raw, "\x28\xb5\x2f\xfd", 4) == 0) {
        src->codec = FR_INGEST_ZSTD;
    }
    if (src->codec == FR_INGEST_GZIP) {
        /* 15 + 32: a 32 KiB window, gzip or zlib header detected. */
        if (inflateInit2(&src->z, 15 + 32) != Z_OK) {
            fr_error("ingest", "%s: cannot start zlib (is zlib1g installed?)", src->path);
            rc = FR_EUNSUPPORTED;
            goto cleanup;
        }
        src->z_init = 1;
    } else if (src->codec == FR_INGEST_ZSTD) {
        src->zd = ZSTD_createDCtx();
        if (!src->zd) {
            goto cleanup;
        }
    }
    *out = src;
    src = NULL;
    rc = FR_OK;

cleanup:
    fr_ingest_src_close(src);
    return rc;
}

const struct fr_ingest_ident *fr_ingest_src_ident(const struct fr_ingest_src *src)
{
    return &src->ident;
}

enum fr_ingest_codec fr_ingest_src_codec(const struct fr_ingest_src *src)
{
    return src->codec;
}

static int src_read_plain(struct fr_ingest_src *src, uint8_t *buf, size_t cap, size_t *n)
{
    if (src->raw_pos < src->raw_len) {
        size_t k = src->raw_len - src->raw_pos;
        k = k < cap ? k : cap;
        memcpy(buf, src->raw + src->raw_pos, k);
        src->raw_pos += k;
        *n = k;
        return FR_OK;
    }
    for (;;) {
        ssize_t r = read(src->fd, buf, cap);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            fr_error("ingest", "%s: read failed: %s", src->path, strerror(errno));
            return FR_EIO;
        }
        *n = (size_t)r;
        return FR_OK;
    }
}

/* Compressed bytes for the decoder once raw is used up: 0 with bytes to
 * decode, 1 at the end of the input between frames (members), FR_ETRUNC
 * when it ends inside one (in_frame), FR_EIO on a read error. */
static int src_refill(struct fr_ingest_src *src, int in_frame, const char *codec)
{
    if (src->raw_pos < src->raw_len) {
        return 0;
    }
    int rc = src_fill(src);
    if (rc < 0) {
        return rc;
    }
    if (src->raw_pos == src->raw_len && src->raw_eof) {
        if (in_frame) {
            fr_error("ingest", "%s: the %s stream is truncated", src->path, codec);
            return FR_ETRUNC;
        }
        return 1;
    }
    return 0;
}

static int src_read_gzip(struct fr_ingest_src *src, uint8_t *buf, size_t cap, size_t *n)
{
    *n = 0;
    while (*n == 0) {
        int rc = src_refill(src, src->z_member_open, "gzip");
        if (rc != 0) {
            return rc < 0 ? rc : FR_OK;
        }
        if (!src->z_member_open) {
            /* A new member (the first, or one concatenated after another). */
            if (inflateReset(&src->z) != Z_OK) {
                return FR_ECORRUPT;
            }
            src->z_member_open = 1;
        }
        src->z.next_in = src->raw + src->raw_pos;
        src->z.avail_in = (uInt)(src->raw_len - src->raw_pos);
        src->z.next_out = buf;
        src->z.avail_out = (uInt)(cap > UINT32_MAX ? UINT32_MAX : cap);
        int zr = inflate(&src->z, Z_NO_FLUSH);
        src->raw_pos = (size_t)(src->z.next_in - src->raw);
        *n = (size_t)(src->z.next_out - buf);
        if (zr == Z_STREAM_END) {
            src->z_member_open = 0;
        } else if (zr != Z_OK && zr != Z_BUF_ERROR) {
            fr_error("ingest", "%s: not valid gzip data (%s)", src->path,
                     src->z.msg ? src->z.msg : "zlib error");
            return FR_ECORRUPT;
        }
    }
    return FR_OK;
}

static int src_read_zstd(struct fr_ingest_src *src, uint8_t *buf, size_t cap, size_t *n)
{
    *n = 0;
    while (*n == 0) {
        int rc = src_refill(src, src->zst_hint != 0, "zstd");
        if (rc != 0) {
            return rc < 0 ? rc : FR_OK;
        }
        ZSTD_inBuffer in = {src->raw, src->raw_len, src->raw_pos};
        ZSTD_outBuffer outb = {buf, cap, 0};
        size_t zr = ZSTD_decompressStream(src->zd, &outb, &in);
        if (ZSTD_isError(zr)) {
            fr_error("ingest", "%s: not valid zstd data (%s)", src->path, ZSTD_getErrorName(zr));
            return FR_ECORRUPT;
        }
        src->zst_hint = zr;
        src->raw_pos = in.pos;
        *n = outb.pos;
    }
    return FR_OK;
}

int fr_ingest_src_read(struct fr_ingest_src *src, void *buf, size_t cap, size_t *n)
{
    switch (src->codec) {
    case FR_INGEST_GZIP:
        return src_read_gzip(src, buf, cap, n);
    case FR_INGEST_ZSTD:
        return src_read_zstd(src, buf, cap, n);
    default:
        return src_read_plain(src, buf, cap, n);
    }
}

int fr_ingest_src_skip(struct fr_ingest_src *src, uint64_t n)
{
    if (src->codec == FR_INGEST_PLAIN && src->regular) {
        size_t k = src->raw_len - src->raw_pos;
        if (n <= k) {
            src->raw_pos += (size_t)n;
            return FR_OK;
        }
        src->raw_pos = src->raw_len;
        n -= k;
        off_t at = lseek(src->fd, 0, SEEK_CUR);
        if (at < 0 || (uint64_t)at + n > (uint64_t)src->ident.size ||
            lseek(src->fd, (off_t)n, SEEK_CUR) < 0) {
            fr_error("ingest", "%s: cannot skip to the resume position", src->path);
            return FR_ETRUNC;
        }
        return FR_OK;
    }
    uint8_t scratch[64 * 1024];
    while (n > 0) {
        size_t got;
        int rc =
            fr_ingest_src_read(src, scratch, n < sizeof scratch ? (size_t)n : sizeof scratch, &got);
        if (rc < 0) {
            return rc;
        }
        if (got == 0) {
            fr_error("ingest", "%s: ends before the resume position", src->path);
            return FR_ETRUNC;
        }
        n -= got;
    }
    return FR_OK;
}

void fr_ingest_src_close(struct fr_ingest_src *src)
{
    if (!src) {
        return;
    }
    if (src->z_init) {
        inflateEnd(&src->z);
    }
    ZSTD_freeDCtx(src->zd);
    if (src->owns_fd && src->fd >= 0) {
        close(src->fd);
    }
    free(src->raw);
    free(src);
}
