/*
 * s3_io.c — Iceberg file ops and a Parquet output over S3 (s3_io.h).
 *
 * Owns the mapping between the catalog's local warehouse paths and keys
 * (root + "/" + rest  <->  prefix + "/" + rest) and nothing else: every
 * effect is a call into the S3 client, which owns retries and messages.
 * Invariants:
 *   1. create and link never overwrite: both end in a create-only PUT, so
 *      two committers racing for one metadata file cannot both win.
 *   2. A Parquet upload becomes visible only on close (multipart complete
 *      or one PUT); abort leaves nothing under the key.
 * Threads: one at a time per adapter (the client's rule).
 */
#include "objstore/s3_io.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/err.h"
#include "iceberg/iceberg.h"
#include "objstore/s3.h"
#include "parquet/parquet.h"

#define S3_IO_LINK_MAX (256u << 20) /* largest object link copies */
#define S3_IO_KEY_MAX 1024

struct fr_s3_io {
    struct fr_s3 *s3;
    pthread_mutex_t lock; /* serialises the Parquet inputs' and outputs' requests */
    char *prefix; /* "" or "a/b" (no slashes at the ends) */
    char *root;   /* local warehouse directory, no trailing slash */
};

int fr_s3_parse_uri(const char *uri, char *bucket, size_t bucket_cap, char *prefix,
                    size_t prefix_cap)
{
    if (!uri || strncmp(uri, "s3://", 5) != 0) {
        return FR_EINVAL;
    }
    const char *b = uri + 5;
    size_t bl = strcspn(b, "/");
    if (bl == 0 || bl >= bucket_cap) {
        return FR_EINVAL;
    }
    memcpy(bucket, b, bl);
    bucket[bl] = 0;
    const char *p = b + bl;
    while (*p == '/') {
        p++;
    }
    size_t pl = strlen(p);
    while (pl > 0 && p[pl - 1] == '/') {
        pl--;
    }
    if (pl >= prefix_cap) {
        return FR_EINVAL;
    }
    memcpy(prefix, p, pl);
    prefix[pl] = 0;
    return FR_OK;
}

int fr_s3_io_set_root(struct fr_s3_io *io, const char *local_root)
{
    char *r = strdup(local_root);
    if (!r) {
        return FR_ENOMEM;
    }
    size_t n = strlen(r);
    while (n > 1 && r[n - 1] == '/') {
        r[--n] = 0;
    }
    free(io->root);
    io->root = r;
    return FR_OK;
}

int fr_s3_io_open(struct fr_s3 *s3, const char *prefix, const char *local_root,
                  struct fr_s3_io **out)
{
    *out = NULL;
    struct fr_s3_io *io = calloc(1, sizeof *io);
    if (!io) {
        return FR_ENOMEM;
    }
    io->s3 = s3;
    pthread_mutex_init(&io->lock, NULL);
    const char *p = prefix ? prefix : "";
    while (*p == '/') {
        p++;
    }
    io->prefix = strdup(p);
    if (!io->prefix) {
        free(io);
        return FR_ENOMEM;
    }
    size_t n = strlen(io->prefix);
    while (n > 0 && io->prefix[n - 1] == '/') {
        io->prefix[--n] = 0;
    }
    if (local_root && fr_s3_io_set_root(io, local_root) < 0) {
        fr_s3_io_close(io);
        return FR_ENOMEM;
    }
    *out = io;
    return FR_OK;
}

void fr_s3_io_close(struct fr_s3_io *io)
{
    if (!io) {
        return;
    }
    pthread_mutex_destroy(&io->lock);
    free(io->prefix);
    free(io->root);
    free(io);
}

struct fr_s3 *fr_s3_io_client(const struct fr_s3_io *io) { return io->s3; }

int fr_s3_io_key(const struct fr_s3_io *io, const char *path, char *key, size_t cap)
{
    if (!io->root) {
        return FR_ESTATE;
    }
    size_t rl = strlen(io->root);
    if (strncmp(path, io->root, rl) != 0 || path[rl] != '/' || !path[rl + 1]) {
        return FR_EINVAL;
    }
    const char *rest = path + rl + 1;
    int n = io->prefix[0] ? snprintf(key, cap, "%s/%s", io->prefix, rest)
                          : snprintf(key, cap, "%s", rest);
    return n < 0 || (size_t)n >= cap ? FR_ETOOBIG : FR_OK;
}

/* ------------------------------------------------------------ ice ops -- */

static int io_create(void *ctx, const char *path, const void *data, size_t len)
{
    struct fr_s3_io *io = ctx;
    char key[S3_IO_KEY_MAX];
    int rc = fr_s3_io_key(io, path, key, sizeof key);
    return rc < 0 ? rc : fr_s3_put(io->s3, key, data, len, true, NULL);
}

static int io_replace(void *ctx, const char *path, const void *data, size_t len)
{
    struct fr_s3_io *io = ctx;
    char key[S3_IO_KEY_MAX];
    int rc = fr_s3_io_key(io, path, key, sizeof key);
    return rc < 0 ? rc : fr_s3_put(io->s3, key, data, len, false, NULL);
}

static int io_link(void *ctx, const char *existing, const char *path)
{
    struct fr_s3_io *io = ctx;
    char src[S3_IO_KEY_MAX], dst[S3_IO_KEY_MAX];
    struct fr_buf b;
    fr_buf_init(&b, S3_IO_LINK_MAX);
    int rc = fr_s3_io_key(io, existing, src, sizeof src);
    if (rc == FR_OK) {
        rc = fr_s3_io_key(io, path, dst, sizeof dst);
    }
    if (rc == FR_OK) {
        rc = fr_s3_get(io->s3, src, &b);
    }
    if (rc == FR_OK) {
        rc = fr_s3_put(io->s3, dst, b.data, b.len, true, NULL);
    }
    fr_buf_free(&b);
    return rc;
}

static int io_read(void *ctx, const char *path, struct fr_buf *buf)
{
    struct fr_s3_io *io = ctx;
    char key[S3_IO_KEY_MAX];
    int rc = fr_s3_io_key(io, path, key, sizeof key);
    return rc < 0 ? rc : fr_s3_get(io->s3, key, buf);
}

static int io_remove(void *ctx, const char *path)
{
    struct fr_s3_io *io = ctx;
    char key[S3_IO_KEY_MAX];
    /* One DELETE, no HEAD first: S3 answers 204 whether or not the key
     * existed, so a file another cleaner removed first counts as removed
     * here too. Every caller deletes files it alone decided were dead
     * (expiry, a failed attempt, an orphan), and a HEAD per delete was a
     * fifth of the requests of an epoch on S3 (docs/S3.md). */
    int rc = fr_s3_io_key(io, path, key, sizeof key);
    return rc < 0 ? rc : fr_s3_delete(io->s3, key);
}

static int io_stat(void *ctx, const char *path, int64_t *size, int64_t *mtime_ms)
{
    struct fr_s3_io *io = ctx;
    char key[S3_IO_KEY_MAX];
    struct fr_s3_object o;
    int rc = fr_s3_io_key(io, path, key, sizeof key);
    if (rc == FR_OK) {
        rc = fr_s3_head(io->s3, key, &o);
    }
    if (rc == FR_OK) {
        if (size) {
            *size = o.size;
        }
        if (mtime_ms) {
            *mtime_ms = o.mtime_ms;
        }
    }
    return rc;
}

struct io_list_ctx {
    const struct fr_s3_io *io;
    int (*fn)(void *arg, const char *path);
    void *arg;
    struct fr_buf path;
};

static int io_list_each(void *arg, const struct fr_s3_object *obj)
{
    struct io_list_ctx *lc = arg;
    const char *rest = obj->key;
    size_t pl = strlen(lc->io->prefix);
    if (pl) {
        if (strncmp(rest, lc->io->prefix, pl) != 0 || rest[pl] != '/') {
            return FR_OK;
        }
        rest += pl + 1;
    }
    fr_buf_reset(&lc->path);
    int rc = fr_buf_printf(&lc->path, "%s/%s", lc->io->root, rest);
    if (rc == FR_OK && !fr_buf_cstr(&lc->path)) {
        rc = FR_ENOMEM;
    }
    return rc < 0 ? rc : lc->fn(lc->arg, (const char *)lc->path.data);
}

static int io_list(void *ctx, const char *dir, int (*fn)(void *arg, const char *path), void *arg)
{
    struct fr_s3_io *io = ctx;
    char key[S3_IO_KEY_MAX];
    int rc = fr_s3_io_key(io, dir, key, sizeof key - 1);
    if (rc < 0) {
        return rc;
    }
    size_t kl = strlen(key);
    if (kl && key[kl - 1] != '/') {
        key[kl] = '/';
        key[kl + 1] = 0;
    }
    struct io_list_ctx lc = {io, fn, arg, {0}};
    fr_buf_init(&lc.path, 8192);
    rc = fr_s3_list(io->s3, key, 0, io_list_each, &lc);
    fr_buf_free(&lc.path);
    return rc;
}

static void io_step(void *ctx, enum fr_ice_step step, const char *detail)
{
    (void)ctx;
    (void)step;
    (void)detail;
}

static const struct fr_ice_io_ops s3_ice_ops = {
    .create = io_create,
    .replace = io_replace,
    .link = io_link,
    .read = io_read,
    .remove = io_remove,
    .stat = io_stat,
    .list = io_list,
    .step = io_step,
};

void fr_s3_io_bind(struct fr_s3_io *io, struct fr_ice_io *out)
{
    out->ops = &s3_ice_ops;
    out->ctx = io;
}

int fr_s3_catalog_open(struct fr_s3_io *io, const struct fr_ice_catalog_opts *opts,
                       struct fr_ice_catalog **cat)
{
    *cat = NULL;
    if (!opts->warehouse_uri || strncmp(opts->warehouse_uri, "s3://", 5) != 0) {
        return FR_EINVAL;
    }
    struct fr_ice_io ice_io;
    struct fr_ice_catalog_opts o = *opts;
    fr_s3_io_bind(io, &ice_io);
    o.io = &ice_io; /* copied by the catalog */
    int rc = fr_ice_catalog_open(&o, cat);
    if (rc == FR_OK) {
        /* the catalog resolved its local warehouse directory: that is the
         * root its paths will start with */
        rc = fr_s3_io_set_root(io, fr_ice_catalog_warehouse(*cat));
        if (rc < 0) {
            fr_ice_catalog_close(*cat);
            *cat = NULL;
        }
    }
    return rc;
}

/* ---------------------------------------------------------- warehouse -- */

struct fr_s3_warehouse {
    struct fr_s3 *s3;
    struct fr_s3_io *io;
};

int fr_s3_warehouse_open(const struct fr_conf *conf, const char *uri,
                         const struct fr_ice_catalog_opts *copts, struct fr_s3_warehouse **out,
                         struct fr_ice_catalog **cat, char *err, size_t errlen)
{
    char bucket[128], prefix[S3_IO_KEY_MAX];
    struct fr_s3_opts o;
    *out = NULL;
    *cat = NULL;
    if (fr_s3_parse_uri(uri, bucket, sizeof bucket, prefix, sizeof prefix) < 0) {
        snprintf(err, errlen, "warehouse %s: expected s3://bucket[/prefix]", uri ? uri : "(null)");
        return FR_ECONFIG;
    }
    struct fr_s3_warehouse *wh = calloc(1, sizeof *wh);
    if (!wh) {
        return FR_ENOMEM;
    }
    fr_s3_opts_from_conf(conf, &o);
    o.bucket = bucket;
    int rc = FR_OK;
    if (!o.endpoint || !o.endpoint[0]) {
        snprintf(err, errlen, "warehouse %s: s3.endpoint is not set (docs/S3.md)", uri);
        rc = FR_ECONFIG;
    } else if (!o.access_key_id || !o.access_key_id[0] || !o.secret_access_key ||
               !o.secret_access_key[0]) {
        snprintf(err, errlen,
                 "warehouse %s: no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
                 "(or s3.access_key_id and FRESHET_S3_SECRET_ACCESS_KEY)", uri);
        rc = FR_ECONFIG;
    } else {
        rc = fr_s3_open(&o, &wh->s3);
        if (rc < 0) {
            snprintf(err, errlen, "warehouse %s: bad s3.endpoint %s or bucket name (docs/S3.md)",
                     uri, o.endpoint);
        }
    }
    if (rc < 0) {
        goto cleanup;
    }
    rc = fr_s3_io_open(wh->s3, prefix, NULL, &wh->io);
    if (rc == FR_OK) {
        struct fr_ice_catalog_opts co = *copts;
        co.warehouse_uri = uri;
        rc = fr_s3_catalog_open(wh->io, &co, cat);
        if (rc < 0) {
            snprintf(err, errlen, "warehouse %s: %s", uri, fr_ice_errmsg());
        }
    }
cleanup:
    if (rc < 0) {
        fr_s3_warehouse_close(wh);
        return rc;
    }
    *out = wh;
    return FR_OK;
}

struct fr_s3_io *fr_s3_warehouse_io(const struct fr_s3_warehouse *wh) { return wh->io; }

void fr_s3_warehouse_close(struct fr_s3_warehouse *wh)
{
    if (!wh) {
        return;
    }
    fr_s3_io_close(wh->io);
    fr_s3_close(wh->s3);
    free(wh);
}

/* ------------------------------------------------------ parquet output -- */

/* A Parquet output: an upload on the io's client. Writers on different
 * threads (bronze's on the decode-ahead thread, the others on the epoch
 * loop's) share the client, which serves one thread at a time, so every
 * call that may send a request holds io->lock. */
struct s3_out {
    struct fr_s3_io *io;
    struct fr_s3_upload *up;
};

static int out_write(void *ctx, const void *data, size_t len)
{
    struct s3_out *o = ctx;
    pthread_mutex_lock(&o->io->lock);
    int rc = fr_s3_upload_write(o->up, data, len);
    pthread_mutex_unlock(&o->io->lock);
    return rc;
}

static int out_close(void *ctx)
{
    struct s3_out *o = ctx;
    pthread_mutex_lock(&o->io->lock);
    int rc = fr_s3_upload_commit(o->up, NULL);
    pthread_mutex_unlock(&o->io->lock);
    free(o);
    return rc;
}

static void out_abort(void *ctx)
{
    struct s3_out *o = ctx;
    pthread_mutex_lock(&o->io->lock);
    fr_s3_upload_abort(o->up);
    pthread_mutex_unlock(&o->io->lock);
    free(o);
}

static const struct fr_pq_out_ops s3_pq_out_ops = {
    .write = out_write,
    .close = out_close,
    .abort = out_abort,
};

int fr_s3_io_pq_out(struct fr_s3_io *io, const char *path, struct fr_pq_out *out)
{
    char key[S3_IO_KEY_MAX];
    struct s3_out *o = calloc(1, sizeof *o);
    if (!o) {
        return FR_ENOMEM;
    }
    o->io = io;
    int rc = fr_s3_io_key(io, path, key, sizeof key);
    if (rc == FR_OK) {
        pthread_mutex_lock(&io->lock);
        rc = fr_s3_upload_begin(io->s3, key, true, &o->up);
        pthread_mutex_unlock(&io->lock);
    }
    if (rc < 0) {
        free(o);
        return rc;
    }
    out->ops = &s3_pq_out_ops;
    out->ctx = o;
    return FR_OK;
}

/* ------------------------------------------------------- parquet input -- */

/* A read shorter than this fetches this much (a window kept for the reads
 * after it): the Parquet reader reads a footer, then each column chunk's
 * pages, in pieces of a few hundred bytes to a few KB, and one ranged GET
 * each cost `freshet verify` 62 requests per small silver file. A window
 * near the end of the object ends at its end, so the footer's two reads
 * (its length, then the footer before it) share one. */
#define S3_IN_WINDOW ((size_t)256 << 10)

struct s3_in {
    struct fr_s3_io *io;
    char key[S3_IO_KEY_MAX];
    uint64_t size;
    struct fr_buf win; /* bytes [win_off, win_off + win.len) of the object */
    uint64_t win_off;
};

/* Bytes [off, off + len) of the object into b (reset first). */
static int in_get(struct s3_in *in, uint64_t off, size_t len, struct fr_buf *b)
{
    fr_buf_reset(b);
    pthread_mutex_lock(&in->io->lock);
    int rc = fr_s3_get_range(in->io->s3, in->key, (int64_t)off, (int64_t)len, b);
    pthread_mutex_unlock(&in->io->lock);
    return rc == FR_OK && b->len != len ? FR_ETRUNC : rc;
}

static int in_read_at(void *ctx, void *dst, size_t len, uint64_t off)
{
    struct s3_in *in = ctx;
    if (len == 0) {
        return FR_OK;
    }
    if (off > in->size || len > in->size - off) {
        return FR_ETRUNC;
    }
    if (off >= in->win_off && off - in->win_off <= in->win.len &&
        len <= in->win.len - (off - in->win_off)) {
        memcpy(dst, in->win.data + (off - in->win_off), len);
        return FR_OK;
    }
    if (len >= S3_IN_WINDOW) { /* a whole column chunk: no copy kept */
        struct fr_buf b;
        fr_buf_init(&b, len);
        int rc = in_get(in, off, len, &b);
        if (rc == FR_OK) {
            memcpy(dst, b.data, len);
        }
        fr_buf_free(&b);
        return rc;
    }
    uint64_t start = off;
    if (in->size - off < S3_IN_WINDOW) {
        start = in->size > S3_IN_WINDOW ? in->size - S3_IN_WINDOW : 0;
    }
    size_t n = (size_t)(in->size - start < S3_IN_WINDOW ? in->size - start : S3_IN_WINDOW);
    int rc = in_get(in, start, n, &in->win);
    if (rc < 0) {
        fr_buf_reset(&in->win);
        return rc;
    }
    in->win_off = start;
    memcpy(dst, in->win.data + (off - start), len);
    return FR_OK;
}

static void in_close(void *ctx)
{
    struct s3_in *in = ctx;
    fr_buf_free(&in->win);
    free(in);
}

static const struct fr_pq_in_ops s3_pq_in_ops = {
    .read_at = in_read_at,
    .close = in_close,
};

int fr_s3_io_pq_in(struct fr_s3_io *io, const char *path, struct fr_pq_in *out)
{
    struct s3_in *in = calloc(1, sizeof *in);
    struct fr_s3_object o;
    if (!in) {
        return FR_ENOMEM;
    }
    in->io = io;
    fr_buf_init(&in->win, S3_IN_WINDOW);
    int rc = fr_s3_io_key(io, path, in->key, sizeof in->key);
    if (rc == FR_OK) {
        pthread_mutex_lock(&io->lock);
        rc = fr_s3_head(io->s3, in->key, &o);
        pthread_mutex_unlock(&io->lock);
    }
    if (rc < 0) {
        free(in);
        return rc;
    }
    in->size = (uint64_t)o.size;
    out->ops = &s3_pq_in_ops;
    out->ctx = in;
    out->size = in->size;
    return FR_OK;
}
