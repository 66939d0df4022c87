/*
 * io.c — the byte sources and sinks behind the reader and writer, and the
 * per-thread error text.
 *
 * File output follows the durable-write recipe of core/fsutil.c, streamed:
 * bytes go to "<path>.tmp.<pid>.<n>" (O_EXCL, so two writers never share a
 * temporary), close fsyncs it, renames it over path and fsyncs the directory;
 * abort, or any failure on the way, unlinks it. So a crash, a full disk or
 * an abandoned writer never leaves a file under the final name that looks
 * complete: readers see the old file, the new file, or none.
 *
 *   state      event              next
 *   ---------  -----------------  ------------------------------------------
 *   open       write ok           open
 *   open       write error        open (the writer turns it into abort)
 *   open       close              fsync, rename, fsync dir -> done | unlinked
 *   open       abort              unlinked
 *
 * A deferred output (fr_pq_out_file_deferred) closes by renaming at once
 * and handing the descriptor and the directory to a sync set
 * (core/syncset.h), whose owner flushes it before anything durable names
 * the file: so the file's name may outlive a crash with torn contents, and
 * the caller's contract (parquet.h) says why that is harmless there.
 *
 * Writeback starts early: every PQ_OUT_KICK_BYTES written, the new bytes
 * are handed to the disk (sync_file_range SYNC_FILE_RANGE_WRITE, advisory,
 * not waited for), as the log writer does, so close's fsync finds them
 * mostly on disk instead of writing a whole epoch's file while the commit
 * waits. On a virtual disk that is not enough (the host writes what it was
 * handed only at the fsync's cache flush), so every PQ_OUT_SYNC_BYTES an
 * fdatasync of the file is also queued on the background thread of
 * core/bgsync.h (docs/adr/0036). Errors are left to the fsync, which
 * reports them.
 *
 * Thread-safety: an output belongs to one writer; file and memory inputs
 * are safe for concurrent read_at (pread / memcpy, no shared offset).
 */
#include "parquet/parquet_int.h"

#include "core/bgsync.h"
#include "core/fsutil.h"
#include "core/syncset.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ error text */

static _Thread_local char pq_errbuf[512];

int pq_err(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pq_errbuf, sizeof pq_errbuf, fmt, ap);
    va_end(ap);
    return code;
}

void pq_err_clear(void)
{
    pq_errbuf[0] = 0;
}

const char *fr_pq_errmsg(void)
{
    return pq_errbuf;
}

/* ------------------------------------------------------------ file output */

#define PQ_OUT_KICK_BYTES ((off_t)8 << 20)
#define PQ_OUT_SYNC_BYTES ((off_t)16 << 20)

struct out_file {
    int fd;
    char *path;
    char *tmp;
    struct fr_syncset *defer; /* NULL: close fsyncs (see the top) */
    off_t written; /* bytes written so far */
    off_t kicked;  /* writeback started for [0, kicked) */
    off_t synced;  /* a background fdatasync was queued at this size */
};

static void out_file_release(struct out_file *of, bool unlink_tmp)
{
    if (of->fd >= 0) {
        close(of->fd);
    }
    if (unlink_tmp) {
        unlink(of->tmp);
    }
    free(of->path);
    free(of->tmp);
    free(of);
}

static int out_file_write(void *ctx, const void *data, size_t len)
{
    struct out_file *of = ctx;
    int rc = fr_fs_write_all(of->fd, data, len);
    if (rc < 0) {
        return pq_err(rc, "writing %s: %s", of->tmp, fr_strerror(rc));
    }
    of->written += (off_t)len;
    if (of->written - of->kicked >= PQ_OUT_KICK_BYTES) {
        (void)sync_file_range(of->fd, of->kicked, of->written - of->kicked,
                              SYNC_FILE_RANGE_WRITE);
        of->kicked = of->written;
    }
    if (of->written - of->synced >= PQ_OUT_SYNC_BYTES) {
        (void)fr_bgsync_file(of->tmp); /* advisory: a dropped request is counted */
        of->synced = of->written;
    }
    return FR_OK;
}

/* Close of a deferred output: rename now, fsyncs at the set's flush. */
static int out_file_close_deferred(struct out_file *of)
{
    if (rename(of->tmp, of->path) < 0) {
        int rc = pq_err(fr_err_from_errno(errno), "rename %s: %s", of->tmp, strerror(errno));
        out_file_release(of, true);
        return rc;
    }
    int rc = fr_syncset_add_file(of->defer, of->fd, of->path);
    of->fd = -1; /* the set's now */
    if (rc < 0) {
        pq_err(rc, "fsync %s: %s", of->path, fr_strerror(rc));
    }
    out_file_release(of, false);
    return rc;
}

static int out_file_close(void *ctx)
{
    struct out_file *of = ctx;
    if (of->defer) {
        return out_file_close_deferred(of);
    }
    int rc = FR_OK;
    if (fsync(of->fd) < 0) {
        rc = pq_err(fr_err_from_errno(errno), "fsync %s: %s", of->tmp, strerror(errno));
    }
    if (close(of->fd) < 0 && rc == FR_OK) {
        rc = pq_err(fr_err_from_errno(errno), "close %s: %s", of->tmp, strerror(errno));
    }
    of->fd = -1;
    if (rc == FR_OK && rename(of->tmp, of->path) < 0) {
        rc = pq_err(fr_err_from_errno(errno), "rename %s: %s", of->tmp, strerror(errno));
    }
    if (rc == FR_OK) {
        rc = fr_fs_fsync_parent(of->path);
        if (rc < 0) {
            pq_err(rc, "fsync the directory of %s: %s", of->path, fr_strerror(rc));
        }
        out_file_release(of, false);
        return rc;
    }
    out_file_release(of, true);
    return rc;
}

static void out_file_abort(void *ctx)
{
    out_file_release(ctx, true);
}

static const struct fr_pq_out_ops out_file_ops = {
    .write = out_file_write,
    .close = out_file_close,
    .abort = out_file_abort,
};

int fr_pq_out_file(const char *path, struct fr_pq_out *out)
{
    return fr_pq_out_file_deferred(path, NULL, out);
}

int fr_pq_out_file_deferred(const char *path, struct fr_syncset *set, struct fr_pq_out *out)
{
    static atomic_uint seq;
    int rc = FR_ENOMEM;
    struct out_file *of = calloc(1, sizeof *of);
    if (!of) {
        return pq_err(FR_ENOMEM, "out of memory");
    }
    of->fd = -1;
    of->defer = set;
    size_t n = strlen(path) + 64;
    of->path = strdup(path);
    of->tmp = malloc(n);
    if (!of->path || !of->tmp) {
        goto cleanup;
    }
    snprintf(of->tmp, n, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&seq, 1));
    of->fd = open(of->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (of->fd < 0) {
        rc = pq_err(fr_err_from_errno(errno), "create %s: %s", of->tmp, strerror(errno));
        goto cleanup;
    }
    out->ops = &out_file_ops;
    out->ctx = of;
    return FR_OK;

cleanup:
    if (rc == FR_ENOMEM) {
        pq_err(rc, "out of memory");
    }
    free(of->path);
    free(of->tmp);
    free(of);
    return rc;
}

/* ------------------------------------------------------------- file input */

static int in_file_read_at(void *ctx, void *dst, size_t len, uint64_t off)
{
    int fd = (int)(intptr_t)ctx;
    if (off > (uint64_t)INT64_MAX) {
        return FR_ETRUNC;
    }
    return fr_fs_pread_all(fd, dst, len, (off_t)off);
}

static void in_file_close(void *ctx)
{
    close((int)(intptr_t)ctx);
}

static const struct fr_pq_in_ops in_file_ops = {
    .read_at = in_file_read_at,
    .close = in_file_close,
};

int fr_pq_in_file(const char *path, struct fr_pq_in *in)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return pq_err(fr_err_from_errno(errno), "open %s: %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int rc = pq_err(fr_err_from_errno(errno), "stat %s: %s", path, strerror(errno));
        close(fd);
        return rc;
    }
    in->ops = &in_file_ops;
    in->ctx = (void *)(intptr_t)fd;
    in->size = (uint64_t)st.st_size;
    return FR_OK;
}

/* ----------------------------------------------------------- memory input */

struct in_mem {
    const uint8_t *data;
    size_t len;
};

static int in_mem_read_at(void *ctx, void *dst, size_t len, uint64_t off)
{
    const struct in_mem *m = ctx;
    if (off > m->len || len > m->len - off) {
        return FR_ETRUNC;
    }
    if (len) {
        memcpy(dst, m->data + off, len);
    }
    return FR_OK;
}

static void in_mem_close(void *ctx)
{
    free(ctx);
}

static const struct fr_pq_in_ops in_mem_ops = {
    .read_at = in_mem_read_at,
    .close = in_mem_close,
};

int fr_pq_in_mem(const void *data, size_t len, struct fr_pq_in *in)
{
    struct in_mem *m = malloc(sizeof *m);
    if (!m) {
        return pq_err(FR_ENOMEM, "out of memory");
    }
    m->data = data;
    m->len = len;
    in->ops = &in_mem_ops;
    in->ctx = m;
    in->size = len;
    return FR_OK;
}
