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
 * A bulk output (fr_pq_out_bulk: a backfill epoch's files) goes around
 * the page cache once it is large (docs/adr/0037). Past
 * PQ_OUT_DIRECT_AFTER bytes it opens the temporary a second time with
 * O_DIRECT and stages the bytes in a ring of PQ_OUT_DIRECT_BLOCKS aligned
 * blocks on huge pages: its own thread writes the full blocks to the disk
 * in order while the writer fills the next, so the writer neither copies
 * its bytes into the kernel (the costliest copy on this machine, into
 * freshly allocated cache pages) nor waits for the device unless the
 * whole ring is in flight. At close the last block's whole 4 KiB blocks go
 * the same way and its unaligned tail through the ordinary descriptor. A
 * filesystem that refuses O_DIRECT, at the open or at a write (EINVAL),
 * gets the same bytes through the ordinary descriptor. A write error
 * sticks and is returned by the next write that hands over a block or by
 * close, so the writer aborts as before.
 *
 *   mode       event                                     next
 *   ---------  ----------------------------------------  -----------------
 *   buffered   bulk, written >= PQ_OUT_DIRECT_AFTER,     direct
 *              at the next 4 KiB boundary
 *   buffered   O_DIRECT or the ring refused              buffered for good
 *   direct     a block full: hand it to the thread       direct
 *   direct     EINVAL from a direct write                direct, through
 *                                                        the ordinary fd
 *   direct     close: wait, whole blocks, tail, join     (close as above)
 *
 * Thread-safety: an output belongs to one writer; file and memory inputs
 * are safe for concurrent read_at (pread / memcpy, no shared offset).
 */
#include "parquet/parquet_int.h"

#include "core/bgsync.h"
#include "core/fsutil.h"
#include "core/mem.h"
#include "core/syncset.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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
#define PQ_OUT_DIRECT_AFTER ((off_t)16 << 20)
#define PQ_OUT_DIRECT_BLOCK ((size_t)1 << 20)
#define PQ_OUT_DIRECT_BLOCKS 8 /* 8 MiB: a backfill's row group (~7 MB) fits */
#define PQ_OUT_ALIGN 4096 /* covers 512- and 4096-byte logical blocks */

/* The direct mode's state: a ring of PQ_OUT_DIRECT_BLOCKS staging blocks
 * in one bulk mapping. Block k (a counter; slot k % PQ_OUT_DIRECT_BLOCKS)
 * holds the file's bytes from base + k * PQ_OUT_DIRECT_BLOCK. Blocks
 * [done, head) are handed to the thread, which writes them in order;
 * block head is being filled by the writer (fill bytes). Invariant:
 * head - done < PQ_OUT_DIRECT_BLOCKS, so the block being filled is never
 * in flight. head is written by the writer, done and err by the thread,
 * all under mu; fallback belongs to the thread until it is idle. */
struct out_direct {
    int dfd; /* O_DIRECT descriptor of the temporary */
    int bfd; /* the output's ordinary one (not owned) */
    uint8_t *ring;
    size_t fill;
    off_t base;
    uint64_t head, done;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    bool fallback; /* O_DIRECT writes refused: the ordinary fd for the rest */
    int err;       /* the first write error, sticky */
};

static atomic_ulong direct_outputs; /* outputs that went direct (tests) */

struct out_file {
    int fd;
    char *path;
    char *tmp;
    struct fr_syncset *defer; /* NULL: close fsyncs (see the top) */
    off_t written; /* bytes written so far */
    off_t kicked;  /* writeback started for [0, kicked) */
    off_t synced;  /* a background fdatasync was queued at this size */
    bool bulk;     /* may go direct (fr_pq_out_bulk); cleared when direct fails */
    struct out_direct *direct;
};

static uint8_t *direct_block(const struct out_direct *d, uint64_t k)
{
    return d->ring + (k % PQ_OUT_DIRECT_BLOCKS) * PQ_OUT_DIRECT_BLOCK;
}

/* Write one staged block: O_DIRECT, or through the ordinary descriptor
 * once the filesystem has refused O_DIRECT. */
static int direct_put(struct out_direct *d, bool *fallback, const uint8_t *p, size_t len, off_t off)
{
    if (!*fallback) {
        int rc = fr_fs_pwrite_all(d->dfd, p, len, off);
        if (rc != FR_EINVAL) {
            return rc;
        }
        *fallback = true;
    }
    return fr_fs_pwrite_all(d->bfd, p, len, off);
}

static void *direct_main(void *arg)
{
    struct out_direct *d = arg;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (d->done == d->head && !d->stop) {
            pthread_cond_wait(&d->cv, &d->mu);
        }
        if (d->done == d->head) {
            break;
        }
        uint64_t k = d->done;
        bool fallback = d->fallback;
        int failed = d->err || d->stop;
        pthread_mutex_unlock(&d->mu);
        int rc = failed ? FR_OK
                        : direct_put(d, &fallback, direct_block(d, k), PQ_OUT_DIRECT_BLOCK,
                                     d->base + (off_t)(k * PQ_OUT_DIRECT_BLOCK));
        pthread_mutex_lock(&d->mu);
        d->fallback = fallback;
        if (rc < 0 && !d->err) {
            d->err = rc;
        }
        d->done++;
        pthread_cond_broadcast(&d->cv);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

/* Wait until at most `inflight` blocks are in flight; the sticky error. */
static int direct_wait(struct out_direct *d, uint64_t inflight)
{
    pthread_mutex_lock(&d->mu);
    while (d->head - d->done > inflight) {
        pthread_cond_wait(&d->cv, &d->mu);
    }
    int rc = d->err;
    pthread_mutex_unlock(&d->mu);
    return rc;
}

static void direct_free(struct out_direct *d)
{
    pthread_mutex_lock(&d->mu);
    d->stop = true; /* blocks still queued (an abort) are skipped */
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->thread, NULL);
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    close(d->dfd);
    fr_mem_bulk_unmap(d->ring, PQ_OUT_DIRECT_BLOCKS * PQ_OUT_DIRECT_BLOCK);
    free(d);
}

/* Go direct from the output's current size (aligned). Any failure leaves
 * the output buffered for good (no longer bulk): direct is only cheaper,
 * never needed. */
static void direct_start(struct out_file *of)
{
    of->bulk = false; /* unless everything below works */
    struct out_direct *d = calloc(1, sizeof *d);
    if (!d) {
        return;
    }
    d->dfd = open(of->tmp, O_WRONLY | O_DIRECT | O_CLOEXEC);
    /* Huge pages where the system gives them: 4 KiB pages touched one by
     * one cost ~10 us each on a virtual machine (core/mem.h). */
    d->ring = d->dfd < 0 ? NULL : fr_mem_bulk_map(PQ_OUT_DIRECT_BLOCKS * PQ_OUT_DIRECT_BLOCK);
    if (!d->ring) {
        goto fail;
    }
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    if (pthread_create(&d->thread, NULL, direct_main, d) != 0) {
        pthread_mutex_destroy(&d->mu);
        pthread_cond_destroy(&d->cv);
        goto fail;
    }
    d->bfd = of->fd;
    d->base = of->written;
    of->direct = d;
    of->bulk = true;
    atomic_fetch_add_explicit(&direct_outputs, 1, memory_order_relaxed);
    return;
fail:
    if (d->dfd >= 0) {
        close(d->dfd);
    }
    fr_mem_bulk_unmap(d->ring, PQ_OUT_DIRECT_BLOCKS * PQ_OUT_DIRECT_BLOCK);
    free(d);
}

/* Stage len bytes; hand every full block to the thread, waiting only
 * when the whole ring is in flight. */
static int direct_write(struct out_direct *d, const uint8_t *p, size_t len)
{
    while (len > 0) {
        size_t n = PQ_OUT_DIRECT_BLOCK - d->fill;
        n = n < len ? n : len;
        memcpy(direct_block(d, d->head) + d->fill, p, n);
        d->fill += n;
        p += n;
        len -= n;
        if (d->fill < PQ_OUT_DIRECT_BLOCK) {
            break;
        }
        pthread_mutex_lock(&d->mu);
        d->head++;
        pthread_cond_signal(&d->cv);
        pthread_mutex_unlock(&d->mu);
        d->fill = 0;
        int rc = direct_wait(d, PQ_OUT_DIRECT_BLOCKS - 1);
        if (rc < 0) {
            return rc;
        }
    }
    return FR_OK;
}

/* Close's part: every block in flight, the whole 4 KiB blocks of the
 * last one, then its unaligned tail through the ordinary descriptor;
 * frees the mode. */
static int direct_finish(struct out_file *of)
{
    struct out_direct *d = of->direct;
    of->direct = NULL;
    int rc = direct_wait(d, 0);
    const uint8_t *last = direct_block(d, d->head);
    off_t at = d->base + (off_t)(d->head * PQ_OUT_DIRECT_BLOCK);
    size_t whole = d->fill & ~(size_t)(PQ_OUT_ALIGN - 1);
    if (rc == FR_OK && whole) {
        bool fallback = d->fallback;
        rc = direct_put(d, &fallback, last, whole, at);
    }
    if (rc == FR_OK && d->fill > whole) {
        rc = fr_fs_pwrite_all(d->bfd, last + whole, d->fill - whole, at + (off_t)whole);
    }
    direct_free(d);
    return rc;
}

unsigned long pq_out_direct_count(void)
{
    return atomic_load_explicit(&direct_outputs, memory_order_relaxed);
}

static void out_file_release(struct out_file *of, bool unlink_tmp)
{
    if (of->direct) {
        direct_free(of->direct);
    }
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
    const uint8_t *p = data;
    int rc = FR_OK;
    if (of->bulk && !of->direct && of->written + (off_t)len >= PQ_OUT_DIRECT_AFTER) {
        /* Buffered up to the next aligned offset, direct from there. */
        size_t head = (size_t)(-of->written & (PQ_OUT_ALIGN - 1));
        head = head < len ? head : len;
        rc = fr_fs_write_all(of->fd, p, head);
        of->written += (off_t)head;
        p += head;
        len -= head;
        if (rc == FR_OK && len > 0) {
            direct_start(of);
        }
    }
    if (rc == FR_OK) {
        rc = of->direct ? direct_write(of->direct, p, len) : fr_fs_write_all(of->fd, p, len);
    }
    if (rc < 0) {
        return pq_err(rc, "writing %s: %s", of->tmp, fr_strerror(rc));
    }
    of->written += (off_t)len;
    /* Direct bytes never enter the page cache: nothing to kick. */
    if (!of->direct && of->written - of->kicked >= PQ_OUT_KICK_BYTES) {
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
    if (of->direct) {
        int rc = direct_finish(of);
        if (rc < 0) {
            pq_err(rc, "writing %s: %s", of->tmp, fr_strerror(rc));
            out_file_release(of, true);
            return rc;
        }
    }
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

void fr_pq_out_bulk(struct fr_pq_out *out)
{
    if (out->ops == &out_file_ops) {
        ((struct out_file *)out->ctx)->bulk = true;
    }
}

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
