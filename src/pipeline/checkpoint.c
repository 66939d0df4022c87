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
 * offsets.wal (append-only, fsync after each entry; rotated to
 * offsets.wal.1 past 1 MiB, so it stays bounded):
 *
 *   0       4     magic "FRWL"
 *   4       8     epoch
 *   12      4     nparts
 *   16      16*n  (start, end) per partition
 *   ..      4     CRC-32C of the entry's bytes before it
 */
#include "pipeline/checkpoint.h"

#include "core/crc32c.h"
#include "core/err.h"
#include "core/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define CK_MAGIC "FRCK"
#define WAL_MAGIC "FRWL"
#define WAL_ROTATE_BYTES (1 << 20)

_Static_assert(sizeof(int64_t) == 8, "8-byte offsets");

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

static int put(struct fr_buf *b, const void *p, size_t n) { return fr_buf_append(b, p, n); }

int fr_ck_save(const char *dir, const struct fr_ck *ck)
{
    if (ck->nparts > FR_CK_MAX_PARTS) {
        return FR_EINVAL;
    }
    struct fr_buf b;
    fr_buf_init(&b, ck->state.len + 4096);
    uint32_t version = 1;
    uint64_t state_len = ck->state.len;
    int rc = put(&b, CK_MAGIC, 4);
    rc = rc ? rc : put(&b, &version, 4);
    rc = rc ? rc : put(&b, &ck->epoch, 8);
    rc = rc ? rc : put(&b, &ck->nparts, 4);
    rc = rc ? rc : put(&b, ck->next, 8 * (size_t)ck->nparts);
    rc = rc ? rc : put(&b, &state_len, 8);
    rc = rc ? rc : put(&b, ck->state.data, ck->state.len);
    uint32_t crc = fr_crc32c(0, b.data, b.len);
    rc = rc ? rc : put(&b, &crc, 4);
    if (rc == FR_OK) {
        char path[4200];
        snprintf(path, sizeof path, "%s/checkpoint", dir);
        rc = fr_fs_write_atomic(path, b.data, b.len);
    }
    fr_buf_free(&b);
    return rc;
}

int fr_ck_load(const char *dir, struct fr_ck *ck)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/checkpoint", dir);
    struct fr_buf b;
    fr_buf_init(&b, (size_t)1 << 30);
    int rc = fr_fs_read_file(path, &b);
    if (rc < 0) {
        fr_buf_free(&b);
        return rc;
    }
    rc = FR_ECORRUPT;
    const uint8_t *p = b.data;
    size_t len = b.len;
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
    if (version != 1 || ck->nparts > FR_CK_MAX_PARTS || len < 20 + 8 * (size_t)ck->nparts + 12) {
        goto cleanup;
    }
    memcpy(ck->next, p + 20, 8 * (size_t)ck->nparts);
    size_t at = 20 + 8 * (size_t)ck->nparts;
    memcpy(&state_len, p + at, 8);
    at += 8;
    if (state_len != len - at - 4) {
        goto cleanup;
    }
    fr_buf_reset(&ck->state);
    rc = fr_buf_append(&ck->state, p + at, (size_t)state_len);

cleanup:
    fr_buf_free(&b);
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
    size_t at = 0;
    while (at + 20 <= b.len && memcmp(b.data + at, WAL_MAGIC, 4) == 0) {
        uint32_t nparts;
        memcpy(&nparts, b.data + at + 12, 4);
        if (nparts > FR_CK_MAX_PARTS) {
            break;
        }
        size_t n = 16 + 16 * (size_t)nparts;
        if (at + n + 4 > b.len) {
            break; /* torn tail */
        }
        uint32_t crc;
        memcpy(&crc, b.data + at + n, 4);
        if (fr_crc32c(0, b.data + at, n) != crc) {
            break;
        }
        memcpy(&range->epoch, b.data + at + 4, 8);
        range->nparts = nparts;
        for (uint32_t i = 0; i < nparts; i++) {
            memcpy(&range->start[i], b.data + at + 16 + 16 * i, 8);
            memcpy(&range->end[i], b.data + at + 24 + 16 * i, 8);
        }
        rc = FR_OK;
        at += n + 4;
    }
    if (at < b.len) {
        /* A torn or damaged tail: cut it, so later appends stay readable. */
        if (truncate(path, (off_t)at) < 0) {
            rc = fr_err_from_errno(errno);
        }
    }
    fr_buf_free(&b);
    return rc;
}
