/*
 * checkpoint.c — the checkpoint file and the offsets WAL.
 *
 * checkpoint (replaced atomically, little-endian):
 *
 *   offset  size  field
 *   0       4     magic "FRCK"
 *   4       4     version = 1
 *   8       8     epoch (last committed, -1 none)
 *   16      4     nparts (<= FR_CK_MAX_PARTS)
 *   20      8*n   next offset per partition
 *   ..      8     state length L
 *   ..      L     operator state (fr_proc_save)
 *   ..      4     CRC-32C of every byte before it
 *
 * Written either from ck->state (fr_ck_save) or with the state streamed
 * from the operators (fr_ck_save_proc): the same bytes, so either loads
 * the other's checkpoints; the streaming writer holds one stage of
 * FR_PROC_STREAM_CHUNK bytes, never the state (docs/adr/0023). A version
 * other than 1 is refused as FR_ECORRUPT by fr_ck_load.
 *
 * offsets.wal (append-only, fsync after each entry; rotated to
 * offsets.wal.1 past 1 MiB, so it stays bounded):
 *
 *   0       4     magic "FRWL"
 *   4       8     epoch
 *   12      4     nparts
 *   16      16*n  (start, end) per partition
 *   ..      4     CRC-32C of the entry's bytes before it
 *
 * Each entry is one write, so a crash can only tear the last one, which
 * fr_ck_wal_last cuts. A bad entry that a whole entry follows is damage,
 * refused with FR_ECORRUPT and nothing cut (docs/adr/0061).
 */
#include "pipeline/checkpoint.h"

#include "core/crc32c.h"
#include "core/diag.h"
#include "core/err.h"
#include "core/fsutil.h"
#include "process/process.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define CK_MAGIC "FRCK"
#define CK_VERSION 1
#define WAL_MAGIC "FRWL"
#define WAL_ROTATE_BYTES (1 << 20)

_Static_assert(sizeof(int64_t) == 8, "8-byte offsets");

void fr_ck_range_text(const struct fr_ck_range *range, const char *prefix, int only, char *out,
                      size_t outlen)
{
    size_t at = 0;
    out[0] = 0;
    for (uint32_t p = 0; p < range->nparts && at < outlen; p++) {
        if (only >= 0 && p != (uint32_t)only) {
            continue;
        }
        int n = snprintf(out + at, outlen - at, "%s%s/%u:%" PRId64 "-%" PRId64, at ? "," : "",
                         prefix, p, range->start[p], range->end[p]);
        if (n < 0) {
            break;
        }
        at += (size_t)n;
    }
}

int fr_ck_range_parse(const char *text, const char *prefix, int64_t epoch,
                      struct fr_ck_range *range)
{
    memset(range, 0, sizeof *range);
    range->epoch = epoch;
    size_t pl = strlen(prefix);
    for (const char *q = text; *q;) {
        unsigned part;
        long long a, b;
        int used = 0;
        if (strncmp(q, prefix, pl) != 0 || q[pl] != '/' ||
            sscanf(q + pl + 1, "%u:%lld-%lld%n", &part, &a, &b, &used) != 3 ||
            part >= FR_CK_MAX_PARTS || a < 0 || b < a) {
            return FR_ECORRUPT;
        }
        range->start[part] = a;
        range->end[part] = b;
        range->nparts = part + 1 > range->nparts ? part + 1 : range->nparts;
        q += pl + 1 + (size_t)used;
        q += *q == ',';
    }
    return FR_OK;
}

int fr_ck_dir(const char *data_dir, const char *pipeline, char *out, size_t outlen)
{
    int n = snprintf(out, outlen, "%s/process/%s", data_dir, pipeline);
    if (n < 0 || (size_t)n >= outlen) {
        return FR_EINVAL;
    }
    return fr_fs_mkdirs(out, 0755);
}

int fr_ck_lock(const char *dir, long *holder)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        return fr_err_from_errno(errno);
    }
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int err = errno;
        char text[32] = "";
        ssize_t n = pread(fd, text, sizeof text - 1, 0);
        text[n > 0 ? n : 0] = 0;
        *holder = strtol(text, NULL, 10);
        close(fd);
        return err == EWOULDBLOCK ? FR_ELOCKED : fr_err_from_errno(err);
    }
    char text[32];
    int n = snprintf(text, sizeof text, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) < 0 || pwrite(fd, text, (size_t)n, 0) != n) {
        int rc = fr_err_from_errno(errno);
        close(fd);
        return rc;
    }
    return fd;
}

/* The bytes before the state: magic .. state length L. */
#define CK_HEAD_MAX (4 + 4 + 8 + 4 + 8 * FR_CK_MAX_PARTS + 8)

static size_t ck_head(const struct fr_ck *ck, uint64_t state_len, uint8_t head[CK_HEAD_MAX])
{
    uint32_t version = CK_VERSION;
    size_t n = 0;
    memcpy(head + n, CK_MAGIC, 4);
    n += 4;
    memcpy(head + n, &version, 4);
    n += 4;
    memcpy(head + n, &ck->epoch, 8);
    n += 8;
    memcpy(head + n, &ck->nparts, 4);
    n += 4;
    memcpy(head + n, ck->next, 8 * (size_t)ck->nparts);
    n += 8 * (size_t)ck->nparts;
    memcpy(head + n, &state_len, 8);
    return n + 8;
}

/*
 * Writing a checkpoint into the temporary file (fr_fs_write_atomic_with
 * does temp, fsync, rename, fsync dir around it): the header, the state
 * (from a buffer, or streamed from the operators in chunks of at most
 * FR_PROC_STREAM_CHUNK bytes), the CRC of all of it. The file's bytes are
 * the same either way; only the memory differs (docs/adr/0023).
 */
struct ck_fill {
    const struct fr_ck *ck;
    const struct fr_proc *proc; /* streamed state, or NULL: ck->state */
    int fd;
    uint32_t crc;
    uint64_t state_left; /* streaming: bytes of state still to come */
};

static int ck_put(struct ck_fill *cf, const void *data, size_t len)
{
    cf->crc = fr_crc32c(cf->crc, data, len);
    return fr_fs_write_all(cf->fd, data, len);
}

static int ck_stream_begin(void *arg, uint64_t len)
{
    struct ck_fill *cf = arg;
    uint8_t head[CK_HEAD_MAX];
    cf->state_left = len;
    return ck_put(cf, head, ck_head(cf->ck, len, head));
}

static int ck_stream_write(void *arg, const void *bytes, size_t n)
{
    struct ck_fill *cf = arg;
    if (n > cf->state_left) {
        return FR_ESTATE;
    }
    cf->state_left -= n;
    return ck_put(cf, bytes, n);
}

static int ck_fill_file(void *arg, int fd)
{
    struct ck_fill *cf = arg;
    cf->fd = fd;
    cf->crc = 0;
    int rc;
    if (cf->proc) {
        struct fr_proc_writer w = {ck_stream_begin, ck_stream_write, cf};
        rc = fr_proc_save_stream(cf->proc, &w);
        if (rc == FR_OK && cf->state_left != 0) {
            rc = FR_ESTATE;
        }
    } else {
        uint8_t head[CK_HEAD_MAX];
        rc = ck_put(cf, head, ck_head(cf->ck, cf->ck->state.len, head));
        rc = rc ? rc : ck_put(cf, cf->ck->state.data, cf->ck->state.len);
    }
    uint32_t crc = cf->crc;
    return rc ? rc : fr_fs_write_all(fd, &crc, 4);
}

static int ck_write(const char *dir, struct ck_fill *cf)
{
    if (cf->ck->nparts > FR_CK_MAX_PARTS) {
        return FR_EINVAL;
    }
    char path[4200];
    int n = snprintf(path, sizeof path, "%s/checkpoint", dir);
    if (n < 0 || (size_t)n >= sizeof path) {
        return FR_EINVAL;
    }
    return fr_fs_write_atomic_with(path, ck_fill_file, cf);
}

int fr_ck_save(const char *dir, const struct fr_ck *ck)
{
    struct ck_fill cf = {.ck = ck};
    return ck_write(dir, &cf);
}

int fr_ck_save_proc(const char *dir, const struct fr_ck *ck, const struct fr_proc *proc)
{
    struct ck_fill cf = {.ck = ck, .proc = proc};
    return ck_write(dir, &cf);
}

int fr_ck_load(const char *dir, struct fr_ck *ck)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/checkpoint", dir);
    /* The file is read into ck->state itself, and the state moved to its
     * front once checked: one buffer the size of the file, not two. */
    fr_buf_reset(&ck->state);
    int rc = fr_fs_read_file(path, &ck->state);
    if (rc < 0) {
        fr_buf_reset(&ck->state);
        return rc;
    }
    rc = FR_ECORRUPT;
    const uint8_t *p = ck->state.data;
    size_t len = ck->state.len;
    uint32_t version, crc;
    uint64_t state_len;
    if (len < 4 + 4 + 8 + 4 + 8 + 4 || memcmp(p, CK_MAGIC, 4) != 0) {
        goto cleanup;
    }
    memcpy(&crc, p + len - 4, 4);
    if (fr_crc32c(0, p, len - 4) != crc) {
        rc = FR_ECRC;
        goto cleanup;
    }
    memcpy(&version, p + 4, 4);
    memcpy(&ck->epoch, p + 8, 8);
    memcpy(&ck->nparts, p + 16, 4);
    if (version != CK_VERSION || ck->nparts > FR_CK_MAX_PARTS ||
        len < 20 + 8 * (size_t)ck->nparts + 12) {
        goto cleanup;
    }
    memcpy(ck->next, p + 20, 8 * (size_t)ck->nparts);
    size_t at = 20 + 8 * (size_t)ck->nparts;
    memcpy(&state_len, p + at, 8);
    at += 8;
    if (state_len != len - at - 4) {
        goto cleanup;
    }
    fr_buf_consume(&ck->state, at);
    ck->state.len = (size_t)state_len;
    rc = FR_OK;

cleanup:
    if (rc != FR_OK) {
        fr_buf_reset(&ck->state);
    }
    return rc;
}

int fr_ck_wal_append(const char *dir, const struct fr_ck_range *range)
{
    if (range->nparts > FR_CK_MAX_PARTS) {
        return FR_EINVAL;
    }
    char path[4200], old[4210];
    snprintf(path, sizeof path, "%s/offsets.wal", dir);
    struct stat st;
    if (stat(path, &st) == 0 && st.st_size > WAL_ROTATE_BYTES) {
        snprintf(old, sizeof old, "%s.1", path);
        if (rename(path, old) < 0) {
            return fr_err_from_errno(errno);
        }
    }
    uint8_t entry[4 + 8 + 4 + 16 * FR_CK_MAX_PARTS + 4];
    size_t n = 0;
    memcpy(entry, WAL_MAGIC, 4);
    n = 4;
    memcpy(entry + n, &range->epoch, 8);
    n += 8;
    memcpy(entry + n, &range->nparts, 4);
    n += 4;
    for (uint32_t i = 0; i < range->nparts; i++) {
        memcpy(entry + n, &range->start[i], 8);
        memcpy(entry + n + 8, &range->end[i], 8);
        n += 16;
    }
    uint32_t crc = fr_crc32c(0, entry, n);
    memcpy(entry + n, &crc, 4);
    n += 4;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        return fr_err_from_errno(errno);
    }
    int rc = fr_fs_write_all(fd, entry, n);
    if (rc == FR_OK && fsync(fd) < 0) {
        rc = fr_err_from_errno(errno);
    }
    close(fd);
    if (rc == FR_OK && st.st_size == 0) {
        rc = fr_fs_fsync_dir(dir);
    }
    return rc;
}

/* The length of the whole, checksummed WAL entry at b[at], or 0. */
static size_t wal_entry_len(const struct fr_buf *b, size_t at)
{
    if (at + 20 > b->len || memcmp(b->data + at, WAL_MAGIC, 4) != 0) {
        return 0;
    }
    uint32_t nparts;
    memcpy(&nparts, b->data + at + 12, 4);
    if (nparts > FR_CK_MAX_PARTS) {
        return 0;
    }
    size_t n = 16 + 16 * (size_t)nparts;
    if (at + n + 4 > b->len) {
        return 0; /* torn tail */
    }
    uint32_t crc;
    memcpy(&crc, b->data + at + n, 4);
    return fr_crc32c(0, b->data + at, n) == crc ? n + 4 : 0;
}

int fr_ck_wal_last(const char *dir, struct fr_ck_range *range)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/offsets.wal", dir);
    struct fr_buf b;
    fr_buf_init(&b, 4 * WAL_ROTATE_BYTES);
    int rc = fr_fs_read_file(path, &b);
    if (rc < 0) {
        fr_buf_free(&b);
        return rc;
    }
    rc = FR_ENOTFOUND;
    size_t at = 0, len;
    while ((len = wal_entry_len(&b, at)) > 0) {
        memcpy(&range->epoch, b.data + at + 4, 8);
        memcpy(&range->nparts, b.data + at + 12, 4);
        for (uint32_t i = 0; i < range->nparts; i++) {
            memcpy(&range->start[i], b.data + at + 16 + 16 * i, 8);
            memcpy(&range->end[i], b.data + at + 24 + 16 * i, 8);
        }
        rc = FR_OK;
        at += len;
    }
    if (at < b.len) {
        /* Entries are appended whole, one write each, and a crash can only
         * tear the last one: a whole entry after the bad bytes means the
         * file was damaged after it was written (ADR 0061). Cut nothing. */
        size_t next = at + 1;
        while (next < b.len && wal_entry_len(&b, next) == 0) {
            next++;
        }
        if (next < b.len) {
            fr_error("process",
                     "%s: damaged entry at byte %zu, and a whole entry follows at byte %zu: "
                     "not a torn tail, refusing to cut it. The WAL only holds the range of an "
                     "epoch planned but not yet committed (a committed epoch's range is in the "
                     "lake's markers): move %s aside and start again to plan that epoch anew",
                     path, at, next, path);
            rc = FR_ECORRUPT;
            goto cleanup;
        }
        /* A torn tail: cut it, so later appends stay readable. Nothing is
         * lost that the lake does not hold: a committed epoch's range is in
         * its marker, an uncommitted one is planned anew. */
        fr_warn("process",
                "%s: cut %zu bytes of a torn or damaged tail at byte %zu (the lake's epoch "
                "markers hold the ranges of committed epochs)",
                path, b.len - at, at);
        if (truncate(path, (off_t)at) < 0) {
            rc = fr_err_from_errno(errno);
        }
    }
cleanup:
    fr_buf_free(&b);
    return rc;
}

int64_t fr_ck_trigger_left(int64_t last_cut, int64_t plan_start, int64_t now, int64_t trigger_ms)
{
    int64_t from = last_cut >= 0 ? last_cut : plan_start;
    int64_t left = from + trigger_ms - now;
    return left > 0 ? left : 0;
}
