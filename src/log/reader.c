/*
 * reader.c — follow one partition of the embedded log from any offset, in
 * any process, while the writer appends. A reader takes no lock and writes
 * nothing; one thread uses it at a time.
 *
 * Invariants:
 *   1. Only acknowledged records are returned: the reader returns offset o
 *      only when o < end_offset of the durable marker, which the writer
 *      updates after each fdatasync.
 *   2. Only durable bytes are read: in the active segment (the marker's
 *      seg_base) reads stop at the marker's seg_bytes, so the read-ahead
 *      buffer never holds bytes the writer may still rewrite or cut.
 *      Sealed segments never change.
 *   3. Offsets come back dense and in order; a frame with a bad CRC, a
 *      wrong offset, or a segment that ends early is an error naming the
 *      file and byte position, never skipped.
 *
 * Waiting: an inotify watch on the marker (IN_MODIFY, written after every
 * flush) and on the partition directory (IN_CREATE, for a marker that does
 * not exist yet), set up on the first wait. The marker is looked at again
 * after a watch is added and before sleeping, so no publish between a look
 * and the wait is missed. Waits are sliced to one second to re-check even
 * where inotify is silent (network filesystems): no busy loop either way.
 *
 * Segment roll and retention: at the end of a sealed segment the reader
 * opens the segment named by its next offset. If that file is gone and the
 * oldest remaining segment starts later, retention outran the reader:
 * FR_ERANGE. A deleted segment already open stays readable (open fd).
 */
#include "log/log_int.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"
#include "core/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_CHUNK (256 * 1024)
#define WAIT_SLICE_MS 1000

struct emb_reader {
    struct fr_log_reader base;
    char dir[PATH_MAX];
    char mark_path[PATH_MAX];
    char seg_path[PATH_MAX];
    int ino_fd, wd_dir, wd_mark, mark_fd, seg_fd;
    struct fr_log_mark mark; /* last valid marker seen (end_offset 0 before any) */
    int have_mark;
    int64_t seg_base;    /* base of the open segment */
    int64_t seg_size;    /* its size once known to be sealed, else -1 */
    int64_t pos;         /* byte position of the next frame in it */
    int64_t next_offset; /* offset of the next record to return */
    struct fr_buf rbuf;  /* read-ahead: file bytes [rbuf_pos, rbuf_pos + rbuf.len) */
    int64_t rbuf_pos;
    struct fr_log_header hdrs[FR_LOG_MAX_HEADERS];
};

/* ---- Marker ------------------------------------------------------------------ */

/* Watches are set up on the first wait only: closing an inotify instance
 * costs the kernel a grace period (milliseconds), too much for readers
 * that never block (`log dump`, catch-up reads). */
static int reader_watch(struct emb_reader *er)
{
    if (er->ino_fd < 0) {
        er->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (er->ino_fd < 0) {
            return fr_err_from_errno(errno);
        }
        er->wd_dir = inotify_add_watch(er->ino_fd, er->dir, IN_CREATE | IN_MOVED_TO);
        if (er->wd_dir < 0) {
            return fr_err_from_errno(errno);
        }
    }
    if (er->wd_mark < 0) {
        /* Fails while the marker does not exist: the directory watch tells. */
        er->wd_mark = inotify_add_watch(er->ino_fd, er->mark_path,
                                        IN_MODIFY | IN_CLOSE_WRITE | IN_DELETE_SELF);
    }
    return FR_OK;
}

static void reader_refresh(struct emb_reader *er)
{
    struct fr_log_mark mark;
    if (er->mark_fd < 0) {
        er->mark_fd = open(er->mark_path, O_RDONLY | O_CLOEXEC);
    }
    if (er->mark_fd >= 0 && fr_log_mark_load(er->mark_fd, &mark) == FR_OK) {
        er->mark = mark;
        er->have_mark = 1;
    }
}

/* Sleep until an inotify event or the slice ends. deadline -1: none. */
static int reader_wait(struct emb_reader *er, int64_t deadline)
{
    int slice = WAIT_SLICE_MS;
    if (deadline >= 0) {
        int64_t rem = deadline - fr_mono_ms();
        if (rem <= 0) {
            return FR_OK;
        }
        if (rem < slice) {
            slice = (int)rem;
        }
    }
    struct pollfd pfd = {.fd = er->ino_fd, .events = POLLIN};
    if (poll(&pfd, 1, slice) < 0 && errno != EINTR) {
        return fr_err_from_errno(errno);
    }
    char events[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        ssize_t n = read(er->ino_fd, events, sizeof events);
        if (n <= 0) {
            break;
        }
        for (char *p = events; p < events + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            if (ev->wd == er->wd_mark && (ev->mask & (IN_DELETE_SELF | IN_IGNORED))) {
                /* The marker was removed: watch and read the next one. */
                if (er->mark_fd >= 0) {
                    close(er->mark_fd);
                }
                er->mark_fd = -1;
                er->wd_mark = -1;
            }
            p += sizeof *ev + ev->len;
        }
    }
    return FR_OK;
}

/* ---- Segments and the read-ahead buffer ---------------------------------------- */

static void reader_seg_close(struct emb_reader *er)
{
    if (er->seg_fd >= 0) {
        close(er->seg_fd);
    }
    er->seg_fd = -1;
    er->seg_size = -1;
    fr_buf_reset(&er->rbuf);
    er->rbuf_pos = 0;
}

/* Open segment base and check its header. FR_ENOTFOUND when absent. */
static int reader_seg_open(struct emb_reader *er, int64_t base)
{
    uint8_t hdr[FR_LOG_SEG_HDR];
    struct fr_log_seghdr sh;
    reader_seg_close(er);
    int rc = fr_log_seg_path(er->seg_path, er->dir, base);
    if (rc != FR_OK) {
        return rc;
    }
    er->seg_fd = open(er->seg_path, O_RDONLY | O_CLOEXEC);
    if (er->seg_fd < 0) {
        return fr_err_from_errno(errno);
    }
    rc = fr_fs_pread_all(er->seg_fd, hdr, sizeof hdr, 0);
    if (rc == FR_OK) {
        rc = fr_log_seghdr_decode(hdr, sizeof hdr, &sh);
    }
    if (rc == FR_OK && sh.base != base) {
        rc = FR_ECORRUPT;
    }
    if (rc != FR_OK) {
        fr_error("log", "%s: bad segment header (%s)", er->seg_path, fr_strerror(rc));
        reader_seg_close(er);
        return rc == FR_ETRUNC ? FR_ECORRUPT : rc;
    }
    er->seg_base = base;
    er->pos = FR_LOG_SEG_HDR;
    return FR_OK;
}

/* Move to the segment that starts at next_offset. */
static int reader_seg_next(struct emb_reader *er)
{
    int rc = reader_seg_open(er, er->next_offset);
    if (rc != FR_ENOTFOUND) {
        return rc;
    }
    int64_t *bases = NULL;
    size_t n = 0;
    rc = fr_log_seg_list(er->dir, &bases, &n);
    if (rc == FR_OK && (n == 0 || bases[0] > er->next_offset)) {
        fr_error("log",
                 "%s: offset %lld was deleted by retention before it was read "
                 "(earliest retained: %lld)",
                 er->dir, (long long)er->next_offset,
                 n ? (long long)bases[0] : (long long)er->mark.end_offset);
        rc = FR_ERANGE;
    } else if (rc == FR_OK) {
        fr_error("log", "%s: no segment starts at offset %lld, where the previous one ends",
                 er->dir, (long long)er->next_offset);
        rc = FR_ECORRUPT;
    }
    free(bases);
    return rc;
}

/* Bytes of the open segment that may be read (invariant 2). A segment
 * other than the marker's active one is sealed and never changes, so its
 * size is taken once, not once per record. */
static int reader_seg_limit(struct emb_reader *er, int64_t *limit)
{
    if (er->have_mark && er->seg_base == er->mark.seg_base) {
        *limit = er->mark.seg_bytes;
        return FR_OK;
    }
    if (er->seg_size < 0) {
        struct stat st;
        if (fstat(er->seg_fd, &st) < 0) {
            return fr_err_from_errno(errno);
        }
        er->seg_size = (int64_t)st.st_size;
    }
    *limit = er->seg_size;
    return FR_OK;
}

/* Make file bytes [pos, pos + n) available in rbuf; FR_ETRUNC past limit. */
static int reader_ensure(struct emb_reader *er, int64_t pos, size_t n, int64_t limit)
{
    int64_t have_end = er->rbuf_pos + (int64_t)er->rbuf.len;
    if (pos >= er->rbuf_pos && pos + (int64_t)n <= have_end) {
        return FR_OK;
    }
    if (pos + (int64_t)n > limit) {
        return FR_ETRUNC;
    }
    if (pos >= er->rbuf_pos && pos <= have_end) {
        fr_buf_consume(&er->rbuf, (size_t)(pos - er->rbuf_pos));
    } else {
        fr_buf_reset(&er->rbuf);
    }
    er->rbuf_pos = pos;
    int64_t want = (int64_t)n > READ_CHUNK ? (int64_t)n : READ_CHUNK;
    if (want > limit - pos) {
        want = limit - pos;
    }
    size_t more = (size_t)want - er->rbuf.len;
    int rc = fr_buf_reserve(&er->rbuf, more);
    if (rc == FR_OK) {
        rc = fr_fs_pread_all(er->seg_fd, er->rbuf.data + er->rbuf.len, more,
                             (off_t)(pos + (int64_t)er->rbuf.len));
    }
    if (rc != FR_OK) {
        fr_buf_reset(&er->rbuf);
        return rc;
    }
    er->rbuf.len += more;
    return FR_OK;
}

/* Read the record at next_offset, which the marker says is durable. */
static int reader_read(struct emb_reader *er, struct fr_log_rec *out)
{
    int64_t limit = 0;
    int rc;
    for (;;) {
        if (er->seg_fd < 0) {
            rc = reader_seg_next(er);
            if (rc != FR_OK) {
                return rc;
            }
        }
        rc = reader_seg_limit(er, &limit);
        if (rc != FR_OK) {
            return rc;
        }
        if (er->pos < limit) {
            break;
        }
        if (er->have_mark && er->seg_base == er->mark.seg_base) {
            fr_error("log",
                     "%s: offset %lld is published as durable but the segment ends at "
                     "byte %lld",
                     er->seg_path, (long long)er->next_offset, (long long)er->pos);
            return FR_ECORRUPT;
        }
        if (er->next_offset == er->seg_base) {
            /* a sealed segment without a record: the next one would start
             * at its own base, which is this file again (a loop) */
            fr_error("log",
                     "%s: a sealed segment (not the marker's active one) without any record: "
                     "offset %lld is in no segment",
                     er->seg_path, (long long)er->next_offset);
            return FR_ECORRUPT;
        }
        reader_seg_close(er); /* a sealed segment, read to its end */
    }
    size_t total = 0;
    rc = reader_ensure(er, er->pos, 8, limit);
    if (rc == FR_OK) {
        rc = fr_log_frame_total(er->rbuf.data + (er->pos - er->rbuf_pos), 8, &total);
    }
    if (rc == FR_OK) {
        rc = reader_ensure(er, er->pos, total, limit);
    }
    if (rc == FR_OK) {
        rc = fr_log_frame_decode(er->rbuf.data + (er->pos - er->rbuf_pos), total, out, er->hdrs);
    }
    if (rc == FR_OK && out->offset != er->next_offset) {
        fr_error("log", "%s: record at byte %lld has offset %lld, expected %lld", er->seg_path,
                 (long long)er->pos, (long long)out->offset, (long long)er->next_offset);
        return FR_ECORRUPT;
    }
    if (rc != FR_OK) {
        if (rc == FR_ETRUNC) {
            rc = FR_ECORRUPT;
        }
        fr_error("log", "%s: %s at byte %lld (record offset %lld)", er->seg_path,
                 rc == FR_ECRC ? "checksum mismatch" : fr_strerror(rc), (long long)er->pos,
                 (long long)er->next_offset);
        return rc;
    }
    er->pos += (int64_t)total;
    er->next_offset++;
    return FR_OK;
}

/* ---- Public entry points -------------------------------------------------------- */

void fr_log_emb_reader_close(struct fr_log_reader *reader)
{
    struct emb_reader *er = (struct emb_reader *)reader;
    if (!er) {
        return;
    }
    reader_seg_close(er);
    if (er->mark_fd >= 0) {
        close(er->mark_fd);
    }
    if (er->ino_fd >= 0) {
        close(er->ino_fd);
    }
    fr_buf_free(&er->rbuf);
    free(er);
}

/* Position er at from (<= the durable end): open the segment holding it
 * and skip the records before it. */
static int reader_seek(struct emb_reader *er, int64_t from)
{
    int64_t *bases = NULL;
    size_t n = 0;
    int rc = FR_OK;
    for (int attempt = 0; attempt < 5; attempt++) {
        free(bases);
        bases = NULL;
        rc = fr_log_seg_list(er->dir, &bases, &n);
        if (rc != FR_OK) {
            goto cleanup;
        }
        int64_t earliest = n ? bases[0] : er->mark.end_offset;
        if (from < earliest || from > er->mark.end_offset) {
            fr_error("log",
                     "%s: offset %lld is out of range: retained offsets are %lld..%lld "
                     "(or start at the earliest retained offset)",
                     er->dir, (long long)from, (long long)earliest, (long long)er->mark.end_offset);
            rc = FR_ERANGE;
            goto cleanup;
        }
        er->next_offset = from;
        if (n == 0) {
            goto cleanup; /* nothing yet: the segment named from is opened when data comes */
        }
        size_t i = n - 1;
        while (i > 0 && bases[i] > from) {
            i--;
        }
        rc = reader_seg_open(er, bases[i]);
        if (rc == FR_ENOTFOUND) {
            continue; /* retention removed it meanwhile: list again */
        }
        if (rc != FR_OK) {
            goto cleanup;
        }
        er->next_offset = bases[i];
        struct fr_log_rec skip;
        while (rc == FR_OK && er->next_offset < from) {
            rc = reader_read(er, &skip);
        }
        goto cleanup;
    }

cleanup:
    free(bases);
    return rc;
}

int fr_log_emb_reader_open(const char *data_dir, const char *topic, int32_t partition,
                           int64_t from_offset, const struct fr_log_opts *opts,
                           struct fr_log_reader **out)
{
    struct emb_reader *er = NULL;
    struct stat st;
    int rc = FR_OK;
    (void)opts;
    *out = NULL;
    if (!data_dir || from_offset < FR_LOG_OFFSET_EARLIEST) {
        return FR_EINVAL;
    }
    er = calloc(1, sizeof *er);
    if (!er) {
        return FR_ENOMEM;
    }
    er->base.ops = &fr_log_embedded;
    er->ino_fd = er->wd_dir = er->wd_mark = er->mark_fd = er->seg_fd = -1;
    er->seg_size = -1;
    fr_buf_init(&er->rbuf, FR_LOG_MAX_FRAME + READ_CHUNK);
    rc = fr_log_part_dir(er->dir, data_dir, topic, partition);
    if (rc != FR_OK) {
        fr_error("log", "invalid topic \"%s\" or partition %d", topic ? topic : "(null)",
                 (int)partition);
        goto cleanup;
    }
    if (stat(er->dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        fr_error("log", "no topic %s partition %d under %s/log", topic, (int)partition, data_dir);
        rc = FR_ENOTFOUND;
        goto cleanup;
    }
    if (snprintf(er->mark_path, sizeof er->mark_path, "%s/" FR_LOG_MARK_NAME, er->dir) >=
        (int)sizeof er->mark_path) {
        rc = FR_EINVAL;
        goto cleanup;
    }
    reader_refresh(er);
    if (from_offset == FR_LOG_OFFSET_END) {
        from_offset = er->mark.end_offset;
    } else if (from_offset == FR_LOG_OFFSET_EARLIEST) {
        int64_t *bases = NULL;
        size_t n = 0;
        rc = fr_log_seg_list(er->dir, &bases, &n);
        from_offset = n ? bases[0] : er->mark.end_offset;
        free(bases);
        if (rc != FR_OK) {
            goto cleanup;
        }
    }
    rc = reader_seek(er, from_offset);
    if (rc == FR_OK) {
        *out = &er->base;
        er = NULL;
    }

cleanup:
    fr_log_emb_reader_close(er ? &er->base : NULL);
    return rc;
}

int fr_log_emb_reader_next(struct fr_log_reader *reader, struct fr_log_rec *out, int timeout_ms)
{
    struct emb_reader *er = (struct emb_reader *)reader;
    /* Taken when the first wait starts: a record that is already durable
     * needs no clock (reading it once a record was ~1 % of a backfill's
     * CPU time). -1: no deadline. */
    int64_t deadline = timeout_ms < 0 ? -1 : INT64_MAX;
    for (;;) {
        if (er->next_offset < er->mark.end_offset) {
            int rc = reader_read(er, out);
            return rc < 0 ? rc : 1;
        }
        reader_refresh(er);
        if (er->next_offset < er->mark.end_offset) {
            continue;
        }
        if (deadline == INT64_MAX) {
            deadline = fr_mono_ms() + timeout_ms;
        }
        if (timeout_ms == 0 || (deadline >= 0 && fr_mono_ms() >= deadline)) {
            return 0;
        }
        if (er->ino_fd < 0 || er->wd_mark < 0) {
            /* New watches: look at the marker again before sleeping. */
            int had = er->ino_fd >= 0;
            int rc = reader_watch(er);
            if (rc != FR_OK) {
                return rc;
            }
            if (!had || er->wd_mark >= 0) {
                continue;
            }
        }
        int rc = reader_wait(er, deadline);
        if (rc != FR_OK) {
            return rc;
        }
    }
}

int64_t fr_log_emb_reader_end(struct fr_log_reader *reader)
{
    return ((struct emb_reader *)reader)->mark.end_offset;
}
