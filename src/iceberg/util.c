/*
 * util.c — the small shared pieces of src/iceberg: a capped bump arena for
 * parsed metadata and manifests, the per-thread error message, random ids
 * (UUIDs, snapshot ids), and the POSIX implementation of the file ops
 * table through which every filesystem effect of the library goes.
 *
 * Invariants: the arena never hands out more than its cap; the POSIX
 * create never replaces an existing file (link(2) is the no-clobber
 * primitive) and makes the new file and its directory entry durable before
 * returning. Thread-safe: the error message is thread-local; the ops have
 * no shared state except a per-process counter for temporary names.
 */
#include "iceberg/iceberg_int.h"

#include "core/err.h"
#include "core/fsutil.h"
#include "core/syncset.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------- arena -- */

enum { ARENA_CHUNK = 32768 };

struct ice_chunk {
    struct ice_chunk *next;
    size_t size;
    size_t used;
    _Alignas(16) unsigned char data[];
};

struct fr_ice_arena *ice_arena_new(size_t cap)
{
    struct fr_ice_arena *arena = calloc(1, sizeof *arena);
    if (arena) {
        arena->cap = cap;
    }
    return arena;
}

void ice_arena_free(struct fr_ice_arena *arena)
{
    if (!arena) {
        return;
    }
    struct ice_chunk *c = arena->head;
    while (c) {
        struct ice_chunk *next = c->next;
        free(c);
        c = next;
    }
    free(arena);
}

void ice_arena_reset(struct fr_ice_arena *arena)
{
    struct ice_chunk *keep = NULL, *c = arena->head;
    while (c) {
        struct ice_chunk *next = c->next;
        if (!keep && c->size == ARENA_CHUNK) {
            keep = c; /* a standard chunk: reused, not freed */
        } else {
            free(c);
        }
        c = next;
    }
    if (keep) {
        keep->used = 0;
        keep->next = NULL;
    }
    arena->head = keep;
    arena->used = 0;
}

void *ice_alloc(struct fr_ice_arena *arena, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (size == 0) {
        size = 16;
    }
    if (arena->used + size > arena->cap || size > arena->cap) {
        return NULL;
    }
    struct ice_chunk *c = arena->head;
    if (!c || c->size - c->used < size) {
        size_t want = size > ARENA_CHUNK ? size : ARENA_CHUNK;
        c = malloc(sizeof *c + want);
        if (!c) {
            return NULL;
        }
        c->size = want;
        c->used = 0;
        c->next = arena->head;
        arena->head = c;
    }
    void *p = c->data + c->used;
    c->used += size;
    arena->used += size;
    if (arena->used > arena->peak) {
        arena->peak = arena->used;
    }
    memset(p, 0, size);
    return p;
}

char *ice_strndup(struct fr_ice_arena *arena, const char *s, size_t len)
{
    char *p = ice_alloc(arena, len + 1);
    if (p) {
        memcpy(p, s, len);
        p[len] = 0;
    }
    return p;
}

char *ice_strdup(struct fr_ice_arena *arena, const char *s)
{
    return s ? ice_strndup(arena, s, strlen(s)) : NULL;
}

void *ice_memdup(struct fr_ice_arena *arena, const void *p, size_t len)
{
    void *q = ice_alloc(arena, len);
    if (q && len) {
        memcpy(q, p, len);
    }
    return q;
}

int ice_value_copy(struct fr_ice_arena *a, const struct fr_ice_value *in, struct fr_ice_value *out)
{
    *out = *in;
    if (in->type == FR_ICE_STRING && !in->is_null) {
        out->v.str.ptr = ice_strndup(a, in->v.str.ptr, in->v.str.len);
        if (!out->v.str.ptr) {
            return FR_ENOMEM;
        }
    }
    return FR_OK;
}

int ice_metrics_copy(struct fr_ice_arena *a, const struct fr_ice_col_metrics *in,
                     struct fr_ice_col_metrics *out)
{
    *out = *in;
    if ((in->lower && !(out->lower = ice_memdup(a, in->lower, in->lower_len))) ||
        (in->upper && !(out->upper = ice_memdup(a, in->upper, in->upper_len)))) {
        return FR_ENOMEM;
    }
    return FR_OK;
}

char *ice_sprintf(struct fr_ice_arena *arena, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return NULL;
    }
    char *p = ice_alloc(arena, (size_t)n + 1);
    if (!p) {
        return NULL;
    }
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

/* ----------------------------------------------------- error messages -- */

static _Thread_local char ice_errbuf[1024];

int ice_err(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ice_errbuf, sizeof ice_errbuf, fmt, ap);
    va_end(ap);
    return code;
}

void ice_err_clear(void)
{
    ice_errbuf[0] = 0;
}

const char *fr_ice_errmsg(void)
{
    return ice_errbuf;
}

const char *fr_ice_step_name(enum fr_ice_step step)
{
    switch (step) {
    case FR_ICE_STEP_LOADED:
        return "loaded";
    case FR_ICE_STEP_MANIFEST:
        return "manifest";
    case FR_ICE_STEP_MANIFEST_LIST:
        return "manifest-list";
    case FR_ICE_STEP_METADATA:
        return "metadata";
    case FR_ICE_STEP_CATALOG_BEGIN:
        return "catalog-begin";
    case FR_ICE_STEP_CATALOG_UPDATED:
        return "catalog-updated";
    case FR_ICE_STEP_CATALOG_COMMITTED:
        return "catalog-committed";
    case FR_ICE_STEP_PUBLISHED:
        return "published";
    }
    return "unknown";
}

/* ----------------------------------------------------- ids and names -- */

static void ice_random(void *p, size_t len)
{
    unsigned char *b = p;
    while (len > 0) {
        ssize_t n = getrandom(b, len, 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            /* getrandom cannot fail on Linux >= 3.17 short of EINTR; fall
             * back to a time-seeded value rather than abort. */
            for (size_t i = 0; i < len; i++) {
                b[i] = (unsigned char)(rand() ^ (int)getpid());
            }
            return;
        }
        b += n;
        len -= (size_t)n;
    }
}

void ice_uuid(char out[37])
{
    unsigned char b[16];
    ice_random(b, sizeof b);
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

void fr_ice_uuid(char out[37])
{
    ice_uuid(out);
}

int64_t ice_snapshot_id(void)
{
    uint64_t v = 0;
    while (v == 0) {
        ice_random(&v, sizeof v);
        v &= (UINT64_C(1) << 53) - 1;
    }
    return (int64_t)v;
}

bool ice_name_ok(const char *name)
{
    size_t len = name ? strlen(name) : 0;
    if (len == 0 || len > 127) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        bool digit = c >= '0' && c <= '9';
        if (!letter && !(digit && i > 0)) {
            return false;
        }
    }
    return true;
}

/* ---------------------------------------------------------- POSIX io -- */

static atomic_uint ice_tmp_counter;

/* Write data to a new temporary beside path and fsync it; with keep_fd,
 * skip the fsync and leave the descriptor open in *keep_fd instead. */
static int posix_write_tmp(const char *path, const void *data, size_t len, char *tmp, size_t tmpcap,
                           int *keep_fd)
{
    unsigned n = atomic_fetch_add(&ice_tmp_counter, 1);
    int w = snprintf(tmp, tmpcap, "%s.tmp-%ld-%u", path, (long)getpid(), n);
    if (w < 0 || (size_t)w >= tmpcap) {
        return FR_EINVAL;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno == ENOENT) {
        char dir[ICE_PATH_MAX];
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir) {
            *slash = 0;
            int rc = fr_fs_mkdirs(dir, 0755);
            if (rc < 0) {
                return rc;
            }
            fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        }
    }
    if (fd < 0) {
        return fr_err_from_errno(errno);
    }
    int rc = fr_fs_write_all(fd, data, len);
    if (rc == FR_OK && keep_fd) {
        *keep_fd = fd;
        return FR_OK;
    }
    if (rc == FR_OK && fsync(fd) < 0) {
        rc = fr_err_from_errno(errno);
    }
    if (close(fd) < 0 && rc == FR_OK) {
        rc = fr_err_from_errno(errno);
    }
    if (rc != FR_OK) {
        unlink(tmp);
    }
    return rc;
}

/* The POSIX writes. Each makes its result durable either now (defer NULL:
 * the file's and the directory's fsyncs) or at the next flush of defer (a
 * catalog that defers its fsyncs: the descriptor and the directory go to
 * its set, which ice_cat_* flushes before any catalog write). */

/* The directory holding path durable, now or at defer's flush. */
static int dir_durable(struct fr_syncset *defer, const char *path)
{
    return defer ? fr_syncset_add_parent(defer, path) : fr_fs_fsync_parent(path);
}

/* Rename the temporary tmp over path; on failure remove it. */
static int rename_tmp(const char *tmp, const char *path)
{
    if (rename(tmp, path) < 0) {
        int rc = fr_err_from_errno(errno);
        unlink(tmp);
        return rc;
    }
    return FR_OK;
}

/* create: temporary, link to path (FR_EEXIST when it exists), unlink the
 * temporary; the file's fsync before the link, or deferred with it. */
static int put_new(struct fr_syncset *defer, const char *path, const void *data, size_t len)
{
    char tmp[ICE_PATH_MAX];
    int fd = -1;
    int rc = posix_write_tmp(path, data, len, tmp, sizeof tmp, defer ? &fd : NULL);
    if (rc < 0) {
        return rc;
    }
    if (link(tmp, path) < 0) {
        rc = errno == EEXIST ? FR_EEXIST : fr_err_from_errno(errno);
        if (fd >= 0) {
            close(fd);
        }
        unlink(tmp);
        return rc;
    }
    unlink(tmp);
    return defer ? fr_syncset_add_file(defer, fd, path) : fr_fs_fsync_parent(path);
}

/* replace: the content fsynced before the rename in both cases, so that a
 * crash never leaves a torn file under path (the version hint may lag). */
static int put_replace(struct fr_syncset *defer, const char *path, const void *data, size_t len)
{
    char tmp[ICE_PATH_MAX];
    int rc = posix_write_tmp(path, data, len, tmp, sizeof tmp, NULL);
    if (rc == FR_OK) {
        rc = rename_tmp(tmp, path);
    }
    return rc < 0 ? rc : dir_durable(defer, path);
}

static int put_link(struct fr_syncset *defer, const char *existing, const char *path)
{
    if (link(existing, path) < 0) {
        return errno == EEXIST ? FR_EEXIST : fr_err_from_errno(errno);
    }
    return dir_durable(defer, path);
}

static int posix_create(void *ctx, const char *path, const void *data, size_t len)
{
    (void)ctx;
    return put_new(NULL, path, data, len);
}

static int posix_replace(void *ctx, const char *path, const void *data, size_t len)
{
    (void)ctx;
    return put_replace(NULL, path, data, len);
}

static int posix_link(void *ctx, const char *existing, const char *path)
{
    (void)ctx;
    return put_link(NULL, existing, path);
}

static int posix_read(void *ctx, const char *path, struct fr_buf *buf)
{
    (void)ctx;
    int rc = fr_fs_read_file(path, buf);
    return rc == FR_ENOTFOUND || (rc < 0 && errno == ENOENT) ? FR_ENOTFOUND : rc;
}

static int posix_remove(void *ctx, const char *path)
{
    (void)ctx;
    if (unlink(path) < 0) {
        return errno == ENOENT ? FR_ENOTFOUND : fr_err_from_errno(errno);
    }
    return FR_OK;
}

static int posix_stat(void *ctx, const char *path, int64_t *size, int64_t *mtime_ms)
{
    (void)ctx;
    struct stat st;
    if (stat(path, &st) < 0) {
        return errno == ENOENT ? FR_ENOTFOUND : fr_err_from_errno(errno);
    }
    if (size) {
        *size = (int64_t)st.st_size;
    }
    if (mtime_ms) {
        *mtime_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
    }
    return FR_OK;
}

static int posix_list_rec(const char *dir, int depth, int (*fn)(void *, const char *), void *arg)
{
    if (depth > 16) {
        return FR_OK;
    }
    DIR *d = opendir(dir);
    if (!d) {
        return errno == ENOENT ? FR_OK : fr_err_from_errno(errno);
    }
    int rc = FR_OK;
    struct dirent *de;
    char path[ICE_PATH_MAX];
    while (rc >= 0 && (de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
            continue;
        }
        int n = snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (n < 0 || (size_t)n >= sizeof path) {
            continue;
        }
        struct stat st;
        if (lstat(path, &st) < 0) {
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            rc = posix_list_rec(path, depth + 1, fn, arg);
        } else if (S_ISREG(st.st_mode)) {
            rc = fn(arg, path);
        }
    }
    closedir(d);
    return rc;
}

static int posix_list(void *ctx, const char *dir, int (*fn)(void *, const char *), void *arg)
{
    (void)ctx;
    return posix_list_rec(dir, 0, fn, arg);
}

static void posix_step(void *ctx, enum fr_ice_step step, const char *detail)
{
    (void)ctx;
    (void)step;
    (void)detail;
}

static const struct fr_ice_io_ops ice_posix_ops = {
    .create = posix_create,
    .replace = posix_replace,
    .link = posix_link,
    .read = posix_read,
    .remove = posix_remove,
    .stat = posix_stat,
    .list = posix_list,
    .step = posix_step,
};

const struct fr_ice_io_ops *fr_ice_io_posix(void)
{
    return &ice_posix_ops;
}

/* A catalog that defers its fsyncs (fr_ice_catalog_defer_sync) does the
 * POSIX writes itself, with the fsyncs handed to its set (above). */
static bool deferring(const struct fr_ice_catalog *cat)
{
    return cat->defer && cat->io.ops->create == posix_create;
}

bool ice_io_local(const struct fr_ice_catalog *cat)
{
    return cat->io.ops->create == posix_create;
}

int ice_io_create(struct fr_ice_catalog *cat, const char *path, const void *data, size_t len)
{
    if (deferring(cat)) {
        return put_new(cat->defer, path, data, len);
    }
    return cat->io.ops->create(cat->io.ctx, path, data, len);
}

int ice_io_replace(struct fr_ice_catalog *cat, const char *path, const void *data, size_t len)
{
    if (deferring(cat)) {
        return put_replace(cat->defer, path, data, len);
    }
    return cat->io.ops->replace(cat->io.ctx, path, data, len);
}

int ice_io_prepare_replace(struct fr_ice_catalog *cat, const char *path, const void *data,
                           size_t len, char *tmp, size_t cap)
{
    tmp[0] = 0;
    if (!deferring(cat)) {
        return FR_OK;
    }
    int fd = -1;
    int rc = posix_write_tmp(path, data, len, tmp, cap, &fd);
    if (rc < 0) {
        tmp[0] = 0;
        return rc;
    }
    rc = fr_syncset_add_file(cat->defer, fd, tmp);
    if (rc < 0) {
        unlink(tmp);
        tmp[0] = 0;
    }
    return rc;
}

int ice_io_finish_replace(struct fr_ice_catalog *cat, const char *tmp, const char *path)
{
    int rc = rename_tmp(tmp, path);
    return rc < 0 ? rc : dir_durable(cat->defer, path);
}

int ice_io_link(struct fr_ice_catalog *cat, const char *existing, const char *path)
{
    if (deferring(cat)) {
        return put_link(cat->defer, existing, path);
    }
    return cat->io.ops->link(cat->io.ctx, existing, path);
}

int ice_io_read(const struct fr_ice_io *io, const char *path, struct fr_buf *buf)
{
    return io->ops->read(io->ctx, path, buf);
}

int ice_io_remove(const struct fr_ice_io *io, const char *path)
{
    return io->ops->remove(io->ctx, path);
}

int ice_io_stat(const struct fr_ice_io *io, const char *path, int64_t *size, int64_t *mtime)
{
    return io->ops->stat(io->ctx, path, size, mtime);
}

void ice_io_step(const struct fr_ice_io *io, enum fr_ice_step step, const char *detail)
{
    io->ops->step(io->ctx, step, detail);
}

/* -------------------------------------------------------------- JSON -- */

void ice_jit_init(struct ice_jit *it, const struct fr_json_val *container)
{
    it->p = container->start + 1;
    it->end = container->end - 1;
    it->obj = container->type == FR_JSON_OBJECT;
    it->first = true;
}

int ice_jit_next(struct ice_jit *it, struct fr_json_val *key, struct fr_json_val *val)
{
    const char *p = fr_json_ws(it->p, it->end);
    if (p >= it->end) {
        return 0;
    }
    if (!it->first) {
        if (*p != ',') {
            return FR_EJSON;
        }
        p = fr_json_ws(p + 1, it->end);
    }
    it->first = false;
    if (it->obj) {
        struct fr_json_val k;
        p = fr_json_value(p, it->end, &k);
        if (!p || k.type != FR_JSON_STRING) {
            return FR_EJSON;
        }
        p = fr_json_ws(p, it->end);
        if (p >= it->end || *p != ':') {
            return FR_EJSON;
        }
        p++;
        if (key) {
            *key = k;
        }
    }
    p = fr_json_value(p, it->end, val);
    if (!p) {
        return FR_EJSON;
    }
    it->p = p;
    return 1;
}

char *ice_json_str(struct fr_ice_arena *arena, const struct fr_json_val *v)
{
    if (v->type != FR_JSON_STRING) {
        return NULL;
    }
    size_t raw = (size_t)(v->end - v->start);
    char *out = ice_alloc(arena, raw + 1);
    if (!out) {
        return NULL;
    }
    return fr_json_cstr(v, out, raw + 1) < 0 ? NULL : out;
}

/* ---------------------------------------------------------- string set -- */

static uint64_t ice_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    }
    return h;
}

void ice_strset_init(struct ice_strset *set)
{
    memset(set, 0, sizeof *set);
}

void ice_strset_free(struct ice_strset *set)
{
    if (set) {
        free(set->slots);
        memset(set, 0, sizeof *set);
    }
}

static int strset_grow(struct ice_strset *set)
{
    size_t ncap = set->cap ? set->cap * 2 : 256;
    const char **slots = calloc(ncap, sizeof *slots);
    if (!slots) {
        return FR_ENOMEM;
    }
    for (size_t i = 0; i < set->cap; i++) {
        const char *s = set->slots[i];
        if (!s) {
            continue;
        }
        size_t j = ice_hash(s) & (ncap - 1);
        while (slots[j]) {
            j = (j + 1) & (ncap - 1);
        }
        slots[j] = s;
    }
    free(set->slots);
    set->slots = slots;
    set->cap = ncap;
    return FR_OK;
}

int ice_strset_add(struct ice_strset *set, const char *s)
{
    if ((set->n + 1) * 2 > set->cap) {
        int rc = strset_grow(set);
        if (rc < 0) {
            return rc;
        }
    }
    size_t j = ice_hash(s) & (set->cap - 1);
    while (set->slots[j]) {
        if (strcmp(set->slots[j], s) == 0) {
            return 0;
        }
        j = (j + 1) & (set->cap - 1);
    }
    set->slots[j] = s;
    set->n++;
    return 1;
}

bool ice_strset_has(const struct ice_strset *set, const char *s)
{
    if (set->cap == 0) {
        return false;
    }
    size_t j = ice_hash(s) & (set->cap - 1);
    while (set->slots[j]) {
        if (strcmp(set->slots[j], s) == 0) {
            return true;
        }
        j = (j + 1) & (set->cap - 1);
    }
    return false;
}
