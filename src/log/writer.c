/*
 * writer.c — the embedded log's writer: one struct emb_log per open topic,
 * one struct emb_part per partition. It owns the partition's lock, its
 * active segment, the write buffer of unacknowledged frames and the
 * durable marker that readers follow. One thread at a time (the caller's);
 * other processes only read the files it publishes.
 *
 * Invariants, per partition:
 *   1. The active file holds durable_bytes of fsynced frames, then the
 *      first written_bytes - durable_bytes bytes of wbuf (written early,
 *      not yet synced), and nothing else. After a failed write or fsync the
 *      file is cut back to durable_bytes (file_dirty when even that failed:
 *      the cut is retried before anything is written).
 *   2. wbuf holds the frames of offsets [synced_end, next_offset), encoded
 *      for positions durable_bytes.. of the active segment. A failed flush
 *      keeps them, so a retry writes the same bytes at the same place: an
 *      offset never names two records.
 *   3. The marker never claims more than has been fsynced: it is written
 *      after the segment's fdatasync (durable_end <= synced_end).
 *   4. Sealed segments are complete: the active one is fsynced before the
 *      next is created, so only the last segment can have a torn tail.
 *   5. Append times never decrease within a partition, so segment i's
 *      newest record is no newer than segment i+1's first (retention).
 *
 * Flush (per partition):
 *
 *     BUFFERED --append: >= write_chunk_bytes unwritten--> WRITTEN EARLY
 *        |      (pwrite + start writeback; a failure cuts back, pauses
 *        |       early writes and leaves the error to the flush)
 *        |                                    |
 *        +----------------+-------------------+
 *                         | flush: write the rest + fdatasync
 *                  ok     v        fails
 *     SYNCED <-------------+-------------> cut back to durable_bytes, keep
 *        | marker pwrite                   wbuf, return the error (RETRY);
 *        |                                 automatic flushes back off for
 *        |                                 max(fsync_interval_ms, RETRY_MS)
 *        v ok                 fails
 *     PUBLISHED (acked)   --------------> publish_pending: the next flush
 *                                          publishes again
 *
 * Segment roll (in append, when the next frame would pass segment_bytes):
 *
 *     flush active (fsync) --> create <next_offset>.seg O_EXCL, write header,
 *     fdatasync it, fsync the directory --> it becomes active.
 *     A crash between the steps leaves a last segment with a short or bad
 *     header and no records: open removes it (counted in recovery).
 */
#include "log/log_int.h"

#include "core/buf.h"
#include "core/diag.h"
#include "core/err.h"
#include "core/fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIRST_NONE (-1)    /* segment holds no record */
#define FIRST_UNKNOWN (-2) /* not read yet */
#define MAX_PARTITIONS 1024
#define RETRY_MS 100 /* least backoff of automatic flushes after a failed one */

struct emb_seg {
    int64_t base;
    int64_t bytes;        /* file size; for the active one, durable_bytes */
    int64_t first_append; /* append time of its first record, or FIRST_* */
};

struct emb_part {
    int32_t partition;
    char dir[PATH_MAX];
    int dir_fd, lock_fd, mark_fd, seg_fd; /* seg_fd: the active segment, O_RDWR */
    struct emb_seg *segs;                 /* ascending; the last is active */
    size_t nsegs, segs_cap;

    int64_t next_offset;   /* offset the next append gets */
    int64_t durable_bytes; /* fsynced bytes of the active segment */
    int64_t written_bytes; /* durable bytes + the prefix of wbuf already in the file */
    int file_dirty;        /* bytes past written_bytes may be junk: cut before writing */
    int eager_off;         /* early writes paused after a failure, until a flush succeeds */
    int64_t retry_after;   /* mono ms: automatic flushes wait until then after a failure */
    int last_err;          /* that failure */
    struct fr_buf wbuf;    /* frames not yet fsynced */
    int64_t pending_records;
    int64_t pending_since; /* mono ms of the oldest pending frame */
    int64_t pend_last_pos; /* position of the newest pending frame */
    int64_t last_append;   /* append time of the newest record, pending included */

    /* Fsynced and published state (invariant 3: durable_end <= synced_end). */
    int64_t synced_end, synced_last_seg, synced_last_pos, synced_last_append;
    int64_t durable_end;
    uint64_t mark_seq;
    int publish_pending;

    struct fr_log_recovery recovery;
    struct fr_buf scratch; /* frames read back (fr_log_last, retention) */
    struct fr_log_header hdrs[FR_LOG_MAX_HEADERS];
};

struct emb_log {
    struct fr_log base;
    struct fr_log_opts opts;
    char topic[FR_LOG_MAX_TOPIC + 1];
    struct emb_part *parts;
    int32_t nparts;
    int64_t pending_bytes; /* over all partitions */
};

/* ---- File effects through the io table ------------------------------------ */

static int io_write_all(const struct emb_log *elog, int fd, const void *data, size_t len,
                        int64_t off, size_t *written)
{
    const uint8_t *p = data;
    size_t done = 0;
    int rc = FR_OK;
    while (done < len) {
        ssize_t n = elog->opts.io->pwrite(elog->opts.io_ctx, fd, p + done, len - done,
                                          (off_t)(off + (int64_t)done));
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            rc = fr_err_from_errno(errno);
            break;
        }
        if (n == 0) {
            rc = FR_EIO;
            break;
        }
        done += (size_t)n;
    }
    if (written) {
        *written = done;
    }
    return rc;
}

static int io_sync(const struct emb_log *elog, int fd)
{
    return elog->opts.io->sync(elog->opts.io_ctx, fd) < 0 ? fr_err_from_errno(errno) : FR_OK;
}

static int io_truncate(const struct emb_log *elog, int fd, int64_t len)
{
    return elog->opts.io->ftruncate(elog->opts.io_ctx, fd, (off_t)len) < 0
               ? fr_err_from_errno(errno)
               : FR_OK;
}

/* ---- Segment table ----------------------------------------------------------- */

static int segs_push(struct emb_part *part, int64_t base, int64_t bytes, int64_t first)
{
    if (part->nsegs == part->segs_cap) {
        size_t ncap = part->segs_cap ? part->segs_cap * 2 : 16;
        struct emb_seg *n = realloc(part->segs, ncap * sizeof *n);
        if (!n) {
            return FR_ENOMEM;
        }
        part->segs = n;
        part->segs_cap = ncap;
    }
    part->segs[part->nsegs++] = (struct emb_seg){base, bytes, first};
    return FR_OK;
}

static struct emb_seg *seg_active(struct emb_part *part)
{
    return &part->segs[part->nsegs - 1];
}

/* Create segment base, durably: header written and fsynced, directory
 * fsynced. On failure nothing is left behind. */
static int seg_create(struct emb_log *elog, struct emb_part *part, int64_t base, int *out_fd)
{
    char path[PATH_MAX];
    int rc = fr_log_seg_path(path, part->dir, base);
    if (rc != FR_OK) {
        return rc;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = fr_err_from_errno(errno);
        if (errno == EEXIST) {
            fr_error("log", "%s already exists while rolling to offset %lld", path,
                     (long long)base);
            rc = FR_ECORRUPT;
        }
        return rc;
    }
    uint8_t hdr[FR_LOG_SEG_HDR];
    struct fr_log_seghdr sh = {base, elog->opts.io->wall_ms(elog->opts.io_ctx)};
    fr_log_seghdr_encode(hdr, &sh);
    rc = io_write_all(elog, fd, hdr, sizeof hdr, 0, NULL);
    if (rc == FR_OK) {
        rc = io_sync(elog, fd);
    }
    if (rc == FR_OK) {
        rc = io_sync(elog, part->dir_fd);
    }
    if (rc != FR_OK) {
        fr_warn("log", "cannot create segment %s: %s", path, fr_strerror(rc));
        close(fd);
        unlink(path);
        return rc;
    }
    *out_fd = fd;
    return FR_OK;
}

/* ---- Publishing the durable end ---------------------------------------------- */

/* Write the synced state into the marker. both: write both slots and
 * fsync the marker (at open, so no stale slot can claim more). */
static int part_publish(struct emb_log *elog, struct emb_part *part, int both)
{
    struct fr_log_mark mark = {
        .seq = part->mark_seq + 1,
        .end_offset = part->synced_end,
        .seg_base = seg_active(part)->base,
        .seg_bytes = part->durable_bytes,
        .last_seg = part->synced_last_seg,
        .last_pos = part->synced_last_pos,
        .last_append_ms = part->synced_last_append,
    };
    uint8_t file[FR_LOG_MARK_FILE];
    int rc;
    if (both) {
        fr_log_mark_encode(file + (mark.seq & 1) * FR_LOG_MARK_SLOT, &mark);
        mark.seq++;
        fr_log_mark_encode(file + (mark.seq & 1) * FR_LOG_MARK_SLOT, &mark);
        rc = io_write_all(elog, part->mark_fd, file, sizeof file, 0, NULL);
        if (rc == FR_OK) {
            rc = io_sync(elog, part->mark_fd);
        }
    } else {
        fr_log_mark_encode(file, &mark);
        rc = io_write_all(elog, part->mark_fd, file, FR_LOG_MARK_SLOT,
                          (int64_t)(mark.seq & 1) * FR_LOG_MARK_SLOT, NULL);
    }
    if (rc != FR_OK) {
        part->publish_pending = 1;
        fr_warn("log", "%s: cannot publish the durable end %lld: %s", part->dir,
                (long long)part->synced_end, fr_strerror(rc));
        return rc;
    }
    part->mark_seq = mark.seq;
    part->durable_end = part->synced_end;
    part->publish_pending = 0;
    return FR_OK;
}

/* ---- Flush and roll ------------------------------------------------------------ */

/* A write or fdatasync failed: cut the file back to its durable bytes so
 * that the next attempt rewrites everything (after a failed fdatasync the
 * written pages may be gone even though a later one would succeed). */
static void part_cut_back(struct emb_log *elog, struct emb_part *part)
{
    part->written_bytes = part->durable_bytes;
    part->file_dirty = io_truncate(elog, part->seg_fd, part->durable_bytes) != FR_OK;
}

/* Write the frames of wbuf that are not in the file yet (invariant 1). */
static int part_write(struct emb_log *elog, struct emb_part *part)
{
    if (part->file_dirty) {
        int rc = io_truncate(elog, part->seg_fd, part->durable_bytes);
        if (rc != FR_OK) {
            return rc;
        }
        part->file_dirty = 0;
        part->written_bytes = part->durable_bytes;
    }
    size_t from = (size_t)(part->written_bytes - part->durable_bytes), written = 0;
    int rc = io_write_all(elog, part->seg_fd, part->wbuf.data + from, part->wbuf.len - from,
                          part->written_bytes, &written);
    part->written_bytes += (int64_t)written;
    if (rc != FR_OK) {
        part_cut_back(elog, part);
    }
    return rc;
}

static int part_flush(struct emb_log *elog, struct emb_part *part)
{
    if (part->wbuf.len == 0) {
        return part->publish_pending ? part_publish(elog, part, 0) : FR_OK;
    }
    int rc = part_write(elog, part);
    if (rc == FR_OK) {
        rc = io_sync(elog, part->seg_fd);
        if (rc != FR_OK) {
            part_cut_back(elog, part);
        }
    }
    if (rc != FR_OK) {
        int64_t backoff =
            elog->opts.fsync_interval_ms > RETRY_MS ? elog->opts.fsync_interval_ms : RETRY_MS;
        part->retry_after = elog->opts.io->mono_ms(elog->opts.io_ctx) + backoff;
        part->last_err = rc;
        fr_warn("log",
                "%s: flush of %lld records (offsets %lld..%lld) failed: %s; they stay "
                "buffered and the next flush retries them",
                part->dir, (long long)part->pending_records, (long long)part->synced_end,
                (long long)part->next_offset - 1, fr_strerror(rc));
        return rc;
    }
    part->durable_bytes += (int64_t)part->wbuf.len;
    part->written_bytes = part->durable_bytes;
    part->eager_off = 0;
    part->retry_after = 0;
    seg_active(part)->bytes = part->durable_bytes;
    part->synced_end = part->next_offset;
    part->synced_last_seg = seg_active(part)->base;
    part->synced_last_pos = part->pend_last_pos;
    part->synced_last_append = part->last_append;
    elog->pending_bytes -= (int64_t)part->wbuf.len;
    fr_buf_reset(&part->wbuf);
    part->pending_records = 0;
    return part_publish(elog, part, 0);
}

/* Hand a full chunk of wbuf to the kernel early and start its writeback,
 * so the next fdatasync finds most pages already on their way (it would
 * otherwise start them all at once and the appender would wait for all).
 * A failure here is left for the flush to retry and report. */
static void part_write_early(struct emb_log *elog, struct emb_part *part)
{
    int64_t chunk = elog->opts.write_chunk_bytes;
    int64_t unwritten = part->durable_bytes + (int64_t)part->wbuf.len - part->written_bytes;
    if (chunk <= 0 || part->eager_off || unwritten < chunk) {
        return;
    }
    int64_t from = part->written_bytes;
    if (part_write(elog, part) != FR_OK) {
        part->eager_off = 1; /* until a flush succeeds */
        return;
    }
    elog->opts.io->writeback(elog->opts.io_ctx, part->seg_fd, (off_t)from,
                             (off_t)(part->written_bytes - from));
}

static int part_roll(struct emb_log *elog, struct emb_part *part)
{
    int fd = -1;
    if (part->nsegs == part->segs_cap) {
        /* Make room first so that nothing can fail after the create. */
        int rc = segs_push(part, 0, 0, 0);
        if (rc != FR_OK) {
            return rc;
        }
        part->nsegs--;
    }
    int rc = seg_create(elog, part, part->next_offset, &fd);
    if (rc != FR_OK) {
        return rc;
    }
    close(part->seg_fd);
    part->seg_fd = fd;
    segs_push(part, part->next_offset, FR_LOG_SEG_HDR, FIRST_NONE);
    part->durable_bytes = part->written_bytes = FR_LOG_SEG_HDR;
    return FR_OK;
}

/* ---- Reading frames back --------------------------------------------------------- */

/* Decode the frame at pos of segment base into rec (memory: part->scratch). */
static int part_read_frame(struct emb_part *part, int64_t base, int64_t pos, struct fr_log_rec *rec)
{
    char path[PATH_MAX];
    int fd = -1, own = 0, rc = fr_log_seg_path(path, part->dir, base);
    if (rc != FR_OK) {
        goto cleanup;
    }
    if (base == seg_active(part)->base) {
        fd = part->seg_fd;
    } else {
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            rc = fr_err_from_errno(errno);
            goto cleanup;
        }
        own = 1;
    }
    uint8_t pre[8];
    size_t total = 0;
    rc = fr_fs_pread_all(fd, pre, sizeof pre, (off_t)pos);
    if (rc == FR_OK) {
        rc = fr_log_frame_total(pre, sizeof pre, &total);
    }
    if (rc == FR_OK) {
        fr_buf_reset(&part->scratch);
        rc = fr_buf_reserve(&part->scratch, total);
    }
    if (rc == FR_OK) {
        rc = fr_fs_pread_all(fd, part->scratch.data, total, (off_t)pos);
    }
    if (rc == FR_OK) {
        part->scratch.len = total;
        rc = fr_log_frame_decode(part->scratch.data, total, rec, part->hdrs);
    }
    if (rc == FR_ETRUNC) {
        rc = FR_ECORRUPT;
    }
    if (rc != FR_OK) {
        fr_error("log", "%s: cannot read the record at byte %lld: %s", path, (long long)pos,
                 fr_strerror(rc));
    }

cleanup:
    if (own) {
        close(fd);
    }
    return rc;
}

static int seg_first_append(struct emb_part *part, size_t i, int64_t *out)
{
    struct emb_seg *seg = &part->segs[i];
    if (seg->first_append == FIRST_UNKNOWN) {
        struct fr_log_rec rec;
        int rc = part_read_frame(part, seg->base, FR_LOG_SEG_HDR, &rec);
        if (rc != FR_OK) {
            return rc;
        }
        seg->first_append = rec.append_time;
    }
    *out = seg->first_append;
    return FR_OK;
}

/* ---- Open and recovery ------------------------------------------------------------ */

static int part_lock(struct emb_part *part, const char *topic)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/" FR_LOG_LOCK_NAME, part->dir) >= (int)sizeof path) {
        return FR_EINVAL;
    }
    part->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (part->lock_fd < 0) {
        return fr_err_from_errno(errno);
    }
    if (flock(part->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno != EWOULDBLOCK) {
            return fr_err_from_errno(errno);
        }
        char holder[32] = "unknown";
        ssize_t n = pread(part->lock_fd, holder, sizeof holder - 1, 0);
        if (n > 0) {
            holder[n] = 0;
            holder[strcspn(holder, "\n")] = 0;
        }
        fr_error("log", "topic %s partition %d is locked by another writer (pid %s, lock %s)",
                 topic, (int)part->partition, holder, path);
        return FR_ELOCKED;
    }
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(part->lock_fd, 0) < 0 || pwrite(part->lock_fd, pid, (size_t)len, 0) != len) {
        return fr_err_from_errno(errno);
    }
    return FR_OK;
}

/* Check a sealed segment's header and record its size. */
static int part_add_sealed(struct emb_part *part, int64_t base)
{
    char path[PATH_MAX];
    uint8_t hdr[FR_LOG_SEG_HDR];
    struct fr_log_seghdr sh;
    struct stat st;
    int rc = fr_log_seg_path(path, part->dir, base);
    if (rc != FR_OK) {
        return rc;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return fr_err_from_errno(errno);
    }
    rc = fstat(fd, &st) < 0 ? fr_err_from_errno(errno) : FR_OK;
    if (rc == FR_OK) {
        rc = fr_fs_pread_all(fd, hdr, sizeof hdr, 0);
    }
    if (rc == FR_OK || rc == FR_ETRUNC) {
        rc = rc == FR_OK ? fr_log_seghdr_decode(hdr, sizeof hdr, &sh) : FR_ECORRUPT;
        if (rc == FR_OK && sh.base != base) {
            rc = FR_ECORRUPT;
        }
        if (rc != FR_OK) {
            fr_error("log", "%s: bad header in a sealed segment", path);
        }
    }
    close(fd);
    if (rc == FR_OK) {
        rc = segs_push(part, base, (int64_t)st.st_size, FIRST_UNKNOWN);
    }
    return rc;
}

/* Make the last segment active: truncate a torn tail, remove a segment
 * whose creation was torn, find the last durable record. mark: the durable
 * marker as the last writer left it, or NULL. The marker is written only
 * after the segment's fsync, so it never claims bytes that were not
 * durable: a segment shorter than the marker's claim lost acknowledged
 * records (truncated or damaged after the fact). That is refused, never
 * cut as a torn tail (docs/DAMAGE.md). */
static int part_recover(struct emb_log *elog, struct emb_part *part, int64_t *bases, size_t n,
                        const struct fr_log_mark *mark)
{
    char path[PATH_MAX];
    struct fr_log_scan scan;
    int fd = -1, rc = FR_OK, strict = 0;
    int64_t fresh_base = 0;

    for (size_t i = 0; i + 1 < n; i++) {
        rc = part_add_sealed(part, bases[i]);
        if (rc != FR_OK) {
            goto cleanup;
        }
    }
    for (;;) {
        if (n == 0) {
            rc = seg_create(elog, part, fresh_base, &part->seg_fd);
            if (rc == FR_OK) {
                rc = segs_push(part, fresh_base, FR_LOG_SEG_HDR, FIRST_NONE);
            }
            if (rc != FR_OK) {
                goto cleanup;
            }
            part->next_offset = fresh_base;
            part->durable_bytes = part->written_bytes = FR_LOG_SEG_HDR;
            break;
        }
        int64_t base = bases[n - 1];
        rc = fr_log_seg_path(path, part->dir, base);
        if (rc != FR_OK) {
            goto cleanup;
        }
        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0) {
            rc = fr_err_from_errno(errno);
            goto cleanup;
        }
        rc = fr_log_seg_scan(fd, path, base, strict, &scan);
        if (rc != FR_OK) {
            goto cleanup;
        }
        if (!scan.header_ok) {
            fr_warn("log", "%s: segment creation was torn (%lld bytes, no header); removing it",
                    path, (long long)scan.file_bytes);
            part->recovery.bytes_cut += scan.file_bytes;
            part->recovery.segments_removed++;
            close(fd);
            fd = -1;
            if (unlink(path) < 0) {
                rc = fr_err_from_errno(errno);
                goto cleanup;
            }
            rc = io_sync(elog, part->dir_fd);
            if (rc != FR_OK) {
                goto cleanup;
            }
            fresh_base = base;
            if (--n > 0) {
                part->nsegs--; /* the previous segment becomes the last; it was sealed */
                strict = 1;
            }
            continue;
        }
        if (mark && mark->seg_base == base && scan.valid_bytes < mark->seg_bytes) {
            fr_error("log",
                     "%s: only %lld valid bytes (records up to offset %lld), but %lld bytes "
                     "(records up to offset %lld) were acknowledged durable: the file was "
                     "truncated or damaged after it was written; refusing to cut it. Restore "
                     "the file, or to accept the loss remove %s/" FR_LOG_MARK_NAME
                     " and open the log again",
                     path, (long long)scan.valid_bytes, (long long)scan.end_offset - 1,
                     (long long)mark->seg_bytes, (long long)mark->end_offset - 1, part->dir);
            rc = FR_ECORRUPT;
            goto cleanup;
        }
        if (scan.valid_bytes < scan.file_bytes) {
            int64_t cut = scan.file_bytes - scan.valid_bytes;
            rc = io_truncate(elog, fd, scan.valid_bytes);
            if (rc != FR_OK) {
                goto cleanup;
            }
            fr_warn("log",
                    "%s: torn tail: cut %lld bytes at byte %lld (a record after offset "
                    "%lld was being written when the writer stopped; it was never acknowledged)",
                    path, (long long)cut, (long long)scan.valid_bytes,
                    (long long)scan.end_offset - 1);
            part->recovery.bytes_cut += cut;
            part->recovery.records_cut += 1;
        }
        /* Records a killed writer wrote but never synced are in the page
         * cache and look valid: sync them before publishing them. */
        rc = io_sync(elog, fd);
        if (rc == FR_OK) {
            rc = segs_push(part, base, scan.valid_bytes,
                           scan.records ? scan.first_append_ms : FIRST_NONE);
        }
        if (rc != FR_OK) {
            goto cleanup;
        }
        part->seg_fd = fd;
        fd = -1;
        part->next_offset = scan.end_offset;
        part->durable_bytes = part->written_bytes = scan.valid_bytes;
        if (scan.records) {
            part->synced_last_seg = base;
            part->synced_last_pos = scan.last_pos;
            part->synced_last_append = scan.last_append_ms;
        } else if (n > 1) {
            /* An empty active segment: the last record closes the previous one. */
            struct fr_log_scan prev;
            int64_t pbase = bases[n - 2];
            rc = fr_log_seg_path(path, part->dir, pbase);
            if (rc != FR_OK) {
                goto cleanup;
            }
            fd = open(path, O_RDONLY | O_CLOEXEC);
            if (fd < 0) {
                rc = fr_err_from_errno(errno);
                goto cleanup;
            }
            rc = fr_log_seg_scan(fd, path, pbase, 1, &prev);
            if (rc != FR_OK) {
                goto cleanup;
            }
            if (prev.end_offset != base || prev.records == 0) {
                fr_error("log", "%s ends at offset %lld but the next segment starts at %lld", path,
                         (long long)prev.end_offset, (long long)base);
                rc = FR_ECORRUPT;
                goto cleanup;
            }
            part->synced_last_seg = pbase;
            part->synced_last_pos = prev.last_pos;
            part->synced_last_append = prev.last_append_ms;
        }
        break;
    }
    part->synced_end = part->next_offset;
    part->last_append = part->synced_last_append;
    part->recovery.end_offset = part->next_offset;

cleanup:
    if (fd >= 0) {
        close(fd);
    }
    return rc;
}

static int part_open(struct emb_log *elog, struct emb_part *part, const char *data_dir)
{
    char path[PATH_MAX];
    int64_t *bases = NULL;
    size_t n = 0;
    struct fr_log_mark old;
    int have_old = 0;
    int rc = fr_log_part_dir(part->dir, data_dir, elog->topic, part->partition);
    if (rc != FR_OK) {
        goto cleanup;
    }
    rc = fr_fs_mkdirs(part->dir, 0755);
    if (rc != FR_OK) {
        fr_error("log", "cannot create %s: %s", part->dir, fr_strerror(rc));
        goto cleanup;
    }
    part->dir_fd = open(part->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (part->dir_fd < 0) {
        rc = fr_err_from_errno(errno);
        goto cleanup;
    }
    rc = part_lock(part, elog->topic);
    if (rc != FR_OK) {
        goto cleanup;
    }
    if (snprintf(path, sizeof path, "%s/" FR_LOG_MARK_NAME, part->dir) >= (int)sizeof path) {
        rc = FR_EINVAL;
        goto cleanup;
    }
    part->mark_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (part->mark_fd < 0) {
        rc = fr_err_from_errno(errno);
        goto cleanup;
    }
    if (fr_log_mark_load(part->mark_fd, &old) == FR_OK) {
        part->mark_seq = old.seq;
        have_old = 1;
    }
    rc = fr_log_seg_list(part->dir, &bases, &n);
    if (rc == FR_OK) {
        rc = part_recover(elog, part, bases, n, have_old ? &old : NULL);
    }
    if (rc == FR_OK) {
        rc = part_publish(elog, part, 1);
    }
    if (rc == FR_OK) {
        rc = io_sync(elog, part->dir_fd);
    }

cleanup:
    free(bases);
    return rc;
}

static void part_free(struct emb_part *part)
{
    int *fds[] = {&part->seg_fd, &part->mark_fd, &part->lock_fd, &part->dir_fd};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) {
        if (*fds[i] >= 0) {
            close(*fds[i]);
            *fds[i] = -1;
        }
    }
    free(part->segs);
    part->segs = NULL;
    fr_buf_free(&part->wbuf);
    fr_buf_free(&part->scratch);
}

static void elog_free(struct emb_log *elog)
{
    for (int32_t p = 0; p < elog->nparts; p++) {
        part_free(&elog->parts[p]);
    }
    free(elog->parts);
    free(elog);
}

/* Partitions already on disk: 1 + the largest numeric directory name. */
static int32_t existing_partitions(const char *data_dir, const char *topic)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/log/%s", data_dir, topic) >= (int)sizeof path) {
        return 0;
    }
    DIR *d = opendir(path);
    if (!d) {
        return 0;
    }
    int32_t count = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        const char *s = ent->d_name;
        size_t len = strlen(s);
        if (len == 0 || len > 4 || strspn(s, "0123456789") != len || (len > 1 && s[0] == '0')) {
            continue;
        }
        int32_t p = (int32_t)atoi(s);
        if (p < MAX_PARTITIONS && p + 1 > count) {
            count = p + 1;
        }
    }
    closedir(d);
    return count;
}

static int opts_check(const struct fr_log_opts *o)
{
    if (o->partitions < 1 || o->partitions > MAX_PARTITIONS ||
        o->segment_bytes < FR_LOG_SEG_HDR + FR_LOG_FRAME_HDR || o->fsync_interval_ms < 0 ||
        o->fsync_bytes < 1 || o->max_record_bytes < FR_LOG_FRAME_HDR ||
        o->max_record_bytes > FR_LOG_MAX_FRAME || o->write_buffer_bytes < o->max_record_bytes) {
        return FR_EINVAL;
    }
    const struct fr_log_io *io = o->io;
    if (!io->pwrite || !io->sync || !io->ftruncate || !io->wall_ms || !io->mono_ms ||
        !io->writeback || o->write_chunk_bytes < 0) {
        return FR_EINVAL;
    }
    return FR_OK;
}

int fr_log_emb_open(const char *data_dir, const char *topic, const struct fr_log_opts *opts,
                    struct fr_log **out)
{
    struct emb_log *elog = NULL;
    int rc = FR_OK;
    *out = NULL;
    if (!data_dir || !fr_log_topic_valid(topic)) {
        fr_error("log", "invalid topic name \"%s\" (1..%d of [A-Za-z0-9._-])",
                 topic ? topic : "(null)", FR_LOG_MAX_TOPIC);
        return FR_EINVAL;
    }
    elog = calloc(1, sizeof *elog);
    if (!elog) {
        return FR_ENOMEM;
    }
    elog->base.ops = &fr_log_embedded;
    elog->opts = *opts;
    if (!elog->opts.io) {
        elog->opts.io = &fr_log_io_posix;
    }
    rc = opts_check(&elog->opts);
    if (rc != FR_OK) {
        fr_error("log", "invalid log options (sizes, partitions 1..%d, or io table)",
                 MAX_PARTITIONS);
        goto cleanup;
    }
    snprintf(elog->topic, sizeof elog->topic, "%s", topic);
    int32_t n = existing_partitions(data_dir, topic);
    if (n < elog->opts.partitions) {
        n = elog->opts.partitions;
    }
    elog->parts = calloc((size_t)n, sizeof *elog->parts);
    if (!elog->parts) {
        rc = FR_ENOMEM;
        goto cleanup;
    }
    for (int32_t p = 0; p < n; p++) {
        struct emb_part *part = &elog->parts[p];
        part->partition = p;
        part->dir_fd = part->lock_fd = part->mark_fd = part->seg_fd = -1;
        part->synced_last_seg = part->synced_last_pos = part->synced_last_append = -1;
        fr_buf_init(&part->wbuf, (size_t)elog->opts.write_buffer_bytes);
        fr_buf_init(&part->scratch, FR_LOG_MAX_FRAME);
        elog->nparts = p + 1;
        rc = part_open(elog, part, data_dir);
        if (rc != FR_OK) {
            goto cleanup;
        }
    }
    *out = &elog->base;
    elog = NULL;

cleanup:
    if (elog) {
        elog_free(elog);
    }
    return rc;
}

/* ---- Append ------------------------------------------------------------------------- */

static int rec_check(const struct fr_log_rec *rec)
{
    if ((rec->key_len && !rec->key) || (rec->payload_len && !rec->payload) ||
        rec->header_count > FR_LOG_MAX_HEADERS || (rec->header_count && !rec->headers)) {
        return FR_EINVAL;
    }
    for (size_t i = 0; i < rec->header_count; i++) {
        const struct fr_log_header *h = &rec->headers[i];
        if (!h->name || h->name_len == 0 || h->name_len > UINT16_MAX ||
            (h->value_len && !h->value)) {
            return FR_EINVAL;
        }
        if (!fr_log_utf8_valid(h->name, h->name_len)) {
            return FR_EUTF8;
        }
    }
    return FR_OK;
}

static struct emb_part *part_get(struct fr_log *log, int32_t partition)
{
    struct emb_log *elog = (struct emb_log *)log;
    return partition >= 0 && partition < elog->nparts ? &elog->parts[partition] : NULL;
}

int fr_log_emb_append(struct fr_log *log, int32_t partition, const struct fr_log_rec *rec,
                      int64_t *out_offset)
{
    struct emb_log *elog = (struct emb_log *)log;
    struct emb_part *part = part_get(log, partition);
    if (!part || !rec) {
        return FR_EINVAL;
    }
    int rc = rec_check(rec);
    if (rc != FR_OK) {
        return rc;
    }
    size_t size = fr_log_frame_size(rec);
    if (size == 0 || (int64_t)size > elog->opts.max_record_bytes) {
        return FR_ETOOBIG;
    }
    int64_t seg_size = part->durable_bytes + (int64_t)part->wbuf.len;
    int roll = seg_size > FR_LOG_SEG_HDR && seg_size + (int64_t)size > elog->opts.segment_bytes;
    int full = part->wbuf.len + size > part->wbuf.cap;
    if ((roll || full) && part->wbuf.len && part->retry_after &&
        elog->opts.io->mono_ms(elog->opts.io_ctx) < part->retry_after) {
        return part->last_err; /* the disk refused a moment ago: backpressure */
    }
    if (roll) {
        rc = part_flush(elog, part);
        if (rc == FR_OK) {
            rc = part_roll(elog, part);
        }
    } else if (full) {
        rc = part_flush(elog, part);
    }
    if (rc == FR_OK) {
        rc = fr_buf_reserve(&part->wbuf, size);
    }
    if (rc != FR_OK) {
        return rc;
    }
    int64_t now = elog->opts.io->wall_ms(elog->opts.io_ctx);
    if (now < part->last_append) {
        now = part->last_append; /* invariant 5 */
    }
    int64_t pos = part->durable_bytes + (int64_t)part->wbuf.len;
    fr_log_frame_encode(part->wbuf.data + part->wbuf.len, rec, part->next_offset, now);
    part->wbuf.len += size;
    if (part->pending_records++ == 0) {
        part->pending_since = elog->opts.io->mono_ms(elog->opts.io_ctx);
    }
    elog->pending_bytes += (int64_t)size;
    part->pend_last_pos = pos;
    part->last_append = now;
    if (seg_active(part)->first_append == FIRST_NONE) {
        seg_active(part)->first_append = now;
    }
    if (out_offset) {
        *out_offset = part->next_offset;
    }
    part->next_offset++;
    part_write_early(elog, part);
    return FR_OK;
}

/* ---- Flush policy ---------------------------------------------------------------- */

int fr_log_emb_flush(struct fr_log *log)
{
    struct emb_log *elog = (struct emb_log *)log;
    int first = FR_OK;
    for (int32_t p = 0; p < elog->nparts; p++) {
        int rc = part_flush(elog, &elog->parts[p]);
        if (rc != FR_OK && first == FR_OK) {
            first = rc;
        }
    }
    return first;
}

/* When partition should be flushed by the policy (mono ms), or -1 when it
 * has nothing to flush. After a failure, not before its backoff ends. */
static int64_t part_due(struct emb_log *elog, struct emb_part *part, int64_t now_ms)
{
    int64_t due;
    if (part->pending_records) {
        due = elog->pending_bytes >= elog->opts.fsync_bytes
                  ? now_ms
                  : part->pending_since + elog->opts.fsync_interval_ms;
    } else if (part->publish_pending) {
        due = now_ms;
    } else {
        return -1;
    }
    return part->retry_after > due ? part->retry_after : due;
}

int64_t fr_log_emb_next_flush_in(struct fr_log *log, int64_t now_ms)
{
    struct emb_log *elog = (struct emb_log *)log;
    int64_t first = -1;
    for (int32_t p = 0; p < elog->nparts; p++) {
        int64_t due = part_due(elog, &elog->parts[p], now_ms);
        if (due >= 0 && (first < 0 || due < first)) {
            first = due;
        }
    }
    if (first < 0) {
        return -1;
    }
    return first > now_ms ? first - now_ms : 0;
}

int fr_log_emb_maybe_flush(struct fr_log *log, int64_t now_ms)
{
    struct emb_log *elog = (struct emb_log *)log;
    if (fr_log_emb_next_flush_in(log, now_ms) != 0) {
        return 0;
    }
    /* One partition is due: commit the group, every partition with
     * something to flush, except those still backing off. */
    int first = FR_OK;
    for (int32_t p = 0; p < elog->nparts; p++) {
        struct emb_part *part = &elog->parts[p];
        if (part_due(elog, part, now_ms) < 0 || part->retry_after > now_ms) {
            continue;
        }
        int rc = part_flush(elog, part);
        if (rc != FR_OK && first == FR_OK) {
            first = rc;
        }
    }
    return first != FR_OK ? first : 1;
}

int64_t fr_log_emb_durable_end(struct fr_log *log, int32_t partition)
{
    struct emb_part *part = part_get(log, partition);
    return part ? part->durable_end : FR_EINVAL;
}

int32_t fr_log_emb_partitions(struct fr_log *log)
{
    return ((struct emb_log *)log)->nparts;
}

int fr_log_emb_last(struct fr_log *log, int32_t partition, struct fr_log_rec *rec)
{
    struct emb_part *part = part_get(log, partition);
    if (!part || !rec) {
        return FR_EINVAL;
    }
    if (part->durable_end == 0 || part->synced_last_pos < 0) {
        return 0;
    }
    int rc = part_read_frame(part, part->synced_last_seg, part->synced_last_pos, rec);
    if (rc == FR_OK && rec->offset != part->synced_end - 1) {
        fr_error("log", "%s: last record has offset %lld, expected %lld", part->dir,
                 (long long)rec->offset, (long long)part->synced_end - 1);
        rc = FR_ECORRUPT;
    }
    return rc == FR_OK ? 1 : rc;
}

int fr_log_emb_recovery(struct fr_log *log, int32_t partition, struct fr_log_recovery *out)
{
    struct emb_part *part = part_get(log, partition);
    if (!part || !out) {
        return FR_EINVAL;
    }
    *out = part->recovery;
    return FR_OK;
}

/* ---- Retention ------------------------------------------------------------------- */

static int part_retention(struct emb_log *elog, struct emb_part *part, int64_t now_ms)
{
    const struct fr_log_opts *o = &elog->opts;
    int64_t total = 0;
    size_t i = 0;
    int rc = FR_OK;
    for (size_t k = 0; k < part->nsegs; k++) {
        total += part->segs[k].bytes;
    }
    while (i + 1 < part->nsegs) {
        struct emb_seg *seg = &part->segs[i];
        if (part->segs[i + 1].base >= part->durable_end) {
            break; /* segment i holds the last durable record */
        }
        int expire = o->retention_bytes > 0 && total - seg->bytes >= o->retention_bytes;
        if (!expire && o->retention_ms > 0) {
            /* Invariant 5: segment i+1's first append time bounds segment i's newest. */
            int64_t newest;
            rc = seg_first_append(part, i + 1, &newest);
            if (rc != FR_OK) {
                break;
            }
            expire = newest < now_ms - o->retention_ms;
        }
        if (!expire) {
            break;
        }
        char path[PATH_MAX];
        rc = fr_log_seg_path(path, part->dir, seg->base);
        if (rc == FR_OK && unlink(path) < 0 && errno != ENOENT) {
            rc = fr_err_from_errno(errno);
        }
        if (rc != FR_OK) {
            fr_error("log", "retention: cannot delete %s: %s", path, fr_strerror(rc));
            break;
        }
        fr_info("log", "retention: deleted %s (%lld bytes)", path, (long long)seg->bytes);
        total -= seg->bytes;
        i++;
    }
    if (i > 0) {
        memmove(part->segs, part->segs + i, (part->nsegs - i) * sizeof *part->segs);
        part->nsegs -= i;
        int src = io_sync(elog, part->dir_fd);
        if (rc == FR_OK) {
            rc = src;
        }
    }
    return rc != FR_OK ? rc : (int)i;
}

int fr_log_emb_retention_run(struct fr_log *log, int64_t now_ms)
{
    struct emb_log *elog = (struct emb_log *)log;
    int deleted = 0, first = FR_OK;
    for (int32_t p = 0; p < elog->nparts; p++) {
        int rc = part_retention(elog, &elog->parts[p], now_ms);
        if (rc < 0) {
            if (first == FR_OK) {
                first = rc;
            }
        } else {
            deleted += rc;
        }
    }
    return first != FR_OK ? first : deleted;
}

void fr_log_emb_close(struct fr_log *log)
{
    struct emb_log *elog = (struct emb_log *)log;
    if (!elog) {
        return;
    }
    int rc = fr_log_emb_flush(log);
    if (rc != FR_OK) {
        fr_error("log",
                 "topic %s: final flush failed (%s); the unflushed records were never "
                 "acknowledged and are dropped",
                 elog->topic, fr_strerror(rc));
    }
    elog_free(elog);
}
