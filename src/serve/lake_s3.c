/*
 * lake_s3.c — `/lake/<path>` when the warehouse is an S3 bucket
 * (lake.warehouse = s3://bucket/prefix): the object "<prefix>/<path>" is
 * passed through with the answers files.c gives for a local file (200; 206
 * with Content-Range for one range or a suffix range; 416 for a range past
 * the end; 304 on a matching If-None-Match; HEAD with Content-Length and
 * Accept-Ranges), so the SQL explorer, icebird and hyparquet read an S3
 * lake through the same URLs as a local one. docs/adr/0043 says why a
 * passthrough and not presigned redirects or a local cache.
 *
 * Invariants:
 *   1. Only keys under the prefix. The path is decoded by
 *      serve_path_decode (files.c's rules: no "", ".", ".." or dot-name
 *      segment, no encoded separator or control byte, 400 otherwise), and
 *      the key is "<prefix>/<decoded path>": nothing a request says can
 *      name a key outside the prefix.
 *   2. Bounded memory. The HEAD gives the size. An object of at most
 *      LAKE_S3_CHUNK bytes is then fetched whole with one GET and answered
 *      from that body (so a small object replaced between the HEAD and the
 *      GET, such as version-hint.text, is served as one version); a larger
 *      one (a data file: written once, never replaced) is streamed with
 *      ranged GETs of at most LAKE_S3_CHUNK bytes, one chunk held per
 *      response, whatever the object's size.
 *   3. Failures: a missing key is 404; the store refusing (a credential, a
 *      4xx, an answer that does not parse) is 502; the store unavailable
 *      after the client's retries (5xx, 429, a timeout, a dropped
 *      connection) is 503 with Retry-After. A chunk failing after the
 *      headers went out (or coming back shorter than asked) closes the
 *      connection, so the client sees a short body, never wrong bytes.
 *      Every failure is counted (freshet_serve_lake_s3_failures_total).
 *
 * Threads. libmicrohttpd runs the handler and the body callbacks on its
 * SERVE_THREADS worker threads; a struct fr_s3 serves one thread at a
 * time. The pool holds SERVE_THREADS clients under a mutex: a worker takes
 * a free client for one request (the HEAD, the GET, one chunk, or one
 * /api/v1/tables answer) and gives it back. No worker ever holds two, so
 * with as many clients as workers a take never waits, and each client
 * keeps its connection to the store alive between requests. (One client
 * behind a mutex would queue every worker behind one slow GET; a client
 * per request would pay a new connection each time.)
 */
#include "serve/serve_int.h"

#include "core/buf.h"
#include "core/diag.h"
#include "core/err.h"
#include "iceberg/iceberg.h"
#include "objstore/s3.h"
#include "objstore/s3_io.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LAKE_S3_CHUNK ((size_t)256 * 1024) /* bytes per GET, and held per response */
#define LAKE_S3_BLOCK ((size_t)64 * 1024)  /* libmicrohttpd's send buffer per response */
#define LAKE_S3_KEY_MAX 1024               /* S3's own limit on a key */

struct serve_s3 {
    pthread_mutex_t lock;
    pthread_cond_t freed;
    struct fr_s3 *clients[SERVE_THREADS];
    unsigned free_mask; /* bit i: clients[i] is free */
    char uri[1200];
    char bucket[128];
    char prefix[LAKE_S3_KEY_MAX];
};

/* ---------------------------------------------------------------- pool */

int serve_s3_open(const struct fr_conf *conf, const char *uri, struct serve_s3 **out, char *err,
                  size_t errlen)
{
    *out = NULL;
    struct serve_s3 *p = calloc(1, sizeof *p);
    if (!p) {
        return FR_ENOMEM;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->freed, NULL);
    int rc = FR_OK;
    if (fr_s3_parse_uri(uri, p->bucket, sizeof p->bucket, p->prefix, sizeof p->prefix) < 0 ||
        strlen(uri) >= sizeof p->uri) {
        snprintf(err, errlen, "lake.warehouse %s: expected s3://bucket[/prefix]", uri);
        rc = FR_ECONFIG;
        goto cleanup;
    }
    snprintf(p->uri, sizeof p->uri, "%s", uri);
    struct fr_s3_opts o;
    fr_s3_opts_from_conf(conf, &o);
    o.bucket = p->bucket;
    if (!o.endpoint || !o.endpoint[0]) {
        snprintf(err, errlen, "lake.warehouse %s: s3.endpoint is not set (docs/S3.md)", uri);
        rc = FR_ECONFIG;
        goto cleanup;
    }
    if (!o.access_key_id || !o.access_key_id[0] || !o.secret_access_key ||
        !o.secret_access_key[0]) {
        snprintf(err, errlen,
                 "lake.warehouse %s: no credentials: set AWS_ACCESS_KEY_ID and "
                 "AWS_SECRET_ACCESS_KEY (or s3.access_key_id and FRESHET_S3_SECRET_ACCESS_KEY)",
                 uri);
        rc = FR_ECONFIG;
        goto cleanup;
    }
    for (int i = 0; i < SERVE_THREADS; i++) {
        rc = fr_s3_open(&o, &p->clients[i]);
        if (rc < 0) {
            snprintf(err, errlen, "lake.warehouse %s: bad s3.endpoint %s or bucket name (%s)", uri,
                     o.endpoint, fr_strerror(rc));
            goto cleanup;
        }
        p->free_mask |= 1u << i;
    }
    *out = p;
    return FR_OK;

cleanup:
    serve_s3_close(p);
    return rc;
}

void serve_s3_close(struct serve_s3 *p)
{
    if (!p) {
        return;
    }
    for (int i = 0; i < SERVE_THREADS; i++) {
        fr_s3_close(p->clients[i]);
    }
    pthread_cond_destroy(&p->freed);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

const char *serve_s3_uri(const struct serve_s3 *p)
{
    return p->uri;
}

static struct fr_s3 *pool_take(struct serve_s3 *p)
{
    pthread_mutex_lock(&p->lock);
    while (!p->free_mask) {
        pthread_cond_wait(&p->freed, &p->lock);
    }
    int i = __builtin_ctz(p->free_mask);
    p->free_mask &= ~(1u << i);
    pthread_mutex_unlock(&p->lock);
    return p->clients[i];
}

static void pool_give(struct serve_s3 *p, struct fr_s3 *s3)
{
    pthread_mutex_lock(&p->lock);
    for (int i = 0; i < SERVE_THREADS; i++) {
        if (p->clients[i] == s3) {
            p->free_mask |= 1u << i;
        }
    }
    pthread_cond_signal(&p->freed);
    pthread_mutex_unlock(&p->lock);
}

/* ------------------------------------------------------------- catalog */

int serve_s3_catalog_open(struct fr_serve *srv, struct serve_s3_catalog *sc, bool files_only)
{
    memset(sc, 0, sizeof *sc);
    sc->pool = srv->s3;
    sc->client = pool_take(srv->s3);
    int rc = fr_s3_io_open(sc->client, srv->s3->prefix, NULL, &sc->io);
    if (rc == FR_OK) {
        struct fr_ice_catalog_opts copts = {
            .data_dir = srv->data_dir, .busy_timeout_ms = 2000, .warehouse_uri = srv->s3->uri,
            .files_only = files_only, .meta_cache = srv->mcache};
        rc = fr_s3_catalog_open(sc->io, &copts, &sc->cat);
    }
    return rc;
}

const char *serve_s3_catalog_errmsg(const struct serve_s3_catalog *sc)
{
    return sc->client ? fr_s3_errmsg(sc->client) : "";
}

void serve_s3_catalog_close(struct serve_s3_catalog *sc)
{
    fr_ice_catalog_close(sc->cat); /* before the io it uses */
    fr_s3_io_close(sc->io);
    if (sc->client) {
        pool_give(sc->pool, sc->client);
    }
    memset(sc, 0, sizeof *sc);
}

/* ------------------------------------------------------------- answers */

unsigned serve_s3_status(struct fr_serve *srv, int rc)
{
    if (rc == FR_ENOTFOUND) {
        return MHD_HTTP_NOT_FOUND;
    }
    /* FR_ETOOBIG: a small object grew past a chunk between HEAD and GET;
     * asking again finds it whole. */
    if (fr_err_class(rc) == FR_ERRC_RETRY || rc == FR_ETOOBIG) {
        atomic_fetch_add(&srv->lake_s3_failures[SERVE_S3_FAIL_UNAVAILABLE], 1);
        return MHD_HTTP_SERVICE_UNAVAILABLE;
    }
    atomic_fetch_add(&srv->lake_s3_failures[SERVE_S3_FAIL_BAD_GATEWAY], 1);
    return MHD_HTTP_BAD_GATEWAY;
}

/* A JSON error as serve_error writes it, with Retry-After on a 503. */
static enum MHD_Result lake_s3_error(struct MHD_Connection *conn, unsigned status,
                                     const char *detail)
{
    const char *code = status == MHD_HTTP_NOT_FOUND     ? "not_found"
                       : status == MHD_HTTP_BAD_GATEWAY ? "bad_gateway"
                                                        : "unavailable";
    char msg[1600];
    if (status == MHD_HTTP_NOT_FOUND) {
        snprintf(msg, sizeof msg, "no such file in the lake warehouse");
    } else {
        snprintf(msg, sizeof msg, "the lake's object store %s: %s",
                 status == MHD_HTTP_BAD_GATEWAY ? "refused the read" : "is unavailable", detail);
    }
    return serve_error_hdr(conn, status, code,
                           status == MHD_HTTP_SERVICE_UNAVAILABLE ? MHD_HTTP_HEADER_RETRY_AFTER
                                                                  : NULL,
                           "1", "%s", msg);
}

/* ---------------------------------------------------------- large body */

/* One streamed answer: bytes [start, start + len) of the object, fetched
 * a chunk at a time on the worker thread that sends them. */
struct lake_s3_body {
    struct fr_serve *srv;
    char key[LAKE_S3_KEY_MAX + 1];
    uint64_t start, len;
    uint64_t chunk_at;   /* object offset of chunk.data[0] */
    struct fr_buf chunk; /* cap LAKE_S3_CHUNK */
};

static ssize_t lake_s3_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct lake_s3_body *b = cls;
    if (pos >= b->len) {
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    uint64_t at = b->start + pos;
    if (at < b->chunk_at || at >= b->chunk_at + b->chunk.len) {
        uint64_t want = b->len - pos < LAKE_S3_CHUNK ? b->len - pos : LAKE_S3_CHUNK;
        fr_buf_reset(&b->chunk);
        b->chunk_at = at;
        struct fr_s3 *s3 = pool_take(b->srv->s3);
        int rc = fr_s3_get_range(s3, b->key, (int64_t)at, (int64_t)want, &b->chunk);
        if (rc < 0 || b->chunk.len != want) {
            fr_warn("serve",
                    "/lake/: s3://%s/%s bytes %" PRIu64 "+%" PRIu64
                    " failed after the headers were sent (%s, %zu bytes): %s",
                    b->srv->s3->bucket, b->key, at, want, rc < 0 ? fr_err_name(rc) : "short",
                    b->chunk.len, fr_s3_errmsg(s3));
            pool_give(b->srv->s3, s3);
            fr_buf_reset(&b->chunk);
            atomic_fetch_add(&b->srv->lake_s3_failures[SERVE_S3_FAIL_ABORTED], 1);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        pool_give(b->srv->s3, s3);
    }
    size_t n = (size_t)(b->chunk_at + b->chunk.len - at);
    if (n > max) {
        n = max;
    }
    memcpy(buf, b->chunk.data + (at - b->chunk_at), n);
    return (ssize_t)n;
}

static void lake_s3_body_free(void *cls)
{
    struct lake_s3_body *b = cls;
    if (b) {
        fr_buf_free(&b->chunk);
        free(b);
    }
}

/* --------------------------------------------------------------- route */

enum MHD_Result serve_lake_s3(struct fr_serve *srv, struct MHD_Connection *conn, const char *rel,
                              const char *method)
{
    struct serve_s3 *p = srv->s3;
    char raw[4096], path[LAKE_S3_KEY_MAX + 1], key[LAKE_S3_KEY_MAX + 1];
    size_t n = strcspn(rel, "?#");
    if (n >= sizeof raw) {
        return serve_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request", "path too long");
    }
    memcpy(raw, rel, n);
    raw[n] = 0;
    if (serve_path_decode(raw, path, sizeof path) < 0) {
        return serve_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request",
                           "refused path (.., dot-files, encoded separators and empty segments "
                           "are not served)");
    }
    int kn = snprintf(key, sizeof key, "%s%s%s", p->prefix, p->prefix[0] ? "/" : "", path);
    if (kn < 0 || (size_t)kn >= sizeof key) {
        return serve_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request", "path too long");
    }

    struct fr_s3_object obj;
    struct fr_buf whole;
    fr_buf_init(&whole, LAKE_S3_CHUNK);
    int head_only = strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    const char *inm =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
    char detail[1200] = "";
    struct fr_s3 *s3 = pool_take(p);
    int rc = fr_s3_head(s3, key, &obj);
    int not_modified = rc == FR_OK && inm && obj.etag[0] && strcmp(inm, obj.etag) == 0;
    if (rc == FR_OK && !head_only && !not_modified && obj.size <= (int64_t)LAKE_S3_CHUNK) {
        rc = fr_s3_get(s3, key, &whole); /* invariant 2: the body is the size */
        obj.size = (int64_t)whole.len;
    }
    if (rc < 0) {
        snprintf(detail, sizeof detail, "%s", fr_s3_errmsg(s3));
    }
    pool_give(p, s3);
    if (rc < 0) {
        fr_buf_free(&whole);
        unsigned status = serve_s3_status(srv, rc);
        if (status != MHD_HTTP_NOT_FOUND) {
            fr_warn("serve", "/lake/%s: %s (%s) %s", path, fr_strerror(rc), fr_err_name(rc),
                    detail);
        }
        return lake_s3_error(conn, status, detail);
    }

    uint64_t size = (uint64_t)obj.size, off = 0, len = size;
    unsigned status = MHD_HTTP_OK;
    const char *range = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_RANGE);
    struct MHD_Response *resp = NULL;
    if (not_modified) {
        status = MHD_HTTP_NOT_MODIFIED;
        resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    } else {
        int r = range ? serve_range(range, size, &off, &len) : 0;
        if (r < 0) {
            fr_buf_free(&whole);
            return serve_range_unsatisfiable(conn, size);
        }
        if (r > 0) {
            status = MHD_HTTP_PARTIAL_CONTENT;
        }
        if (len == 0) {
            resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        } else if (whole.len == size && size > 0) {
            /* small: answered from the one GET's body */
            resp = MHD_create_response_from_buffer(len, whole.data + off, MHD_RESPMEM_MUST_COPY);
        } else {
            /* large (or HEAD: libmicrohttpd never calls the reader then) */
            struct lake_s3_body *b = calloc(1, sizeof *b);
            if (b) {
                b->srv = srv;
                memcpy(b->key, key, (size_t)kn + 1);
                b->start = off;
                b->len = len;
                fr_buf_init(&b->chunk, LAKE_S3_CHUNK);
                resp = MHD_create_response_from_callback(len, LAKE_S3_BLOCK, lake_s3_read, b,
                                                         lake_s3_body_free);
                if (!resp) {
                    lake_s3_body_free(b);
                }
            }
        }
    }
    fr_buf_free(&whole);
    if (!resp) {
        return MHD_NO;
    }
    if (status == MHD_HTTP_PARTIAL_CONTENT) {
        char cr[96];
        snprintf(cr, sizeof cr, "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, off, off + len - 1, size);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
    }
    const char *slash = strrchr(path, '/');
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            serve_content_type(slash ? slash + 1 : path));
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
    if (obj.etag[0]) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, obj.etag);
    }
    if (obj.mtime_ms >= 0) {
        char modified[64];
        time_t t = (time_t)(obj.mtime_ms / 1000);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(modified, sizeof modified, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_LAST_MODIFIED, modified);
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    enum MHD_Result ret = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* ------------------------------------------------------------- metrics */

#define LAKE_S3_METRIC "freshet_serve_lake_s3_failures_total"
#define LAKE_S3_HELP                                                                               \
    "Reads of /lake/ from an S3 warehouse that failed on the object store, by answer: 502 (the "   \
    "store refused), 503 (unavailable after retries), aborted (a chunk failed mid-body)."

int serve_own_metrics(struct fr_serve *srv, struct fr_buf *out)
{
    static const char *const labels[] = {
#define SERVE_S3_FAIL_LABEL(id, label, doc) label,
        SERVE_S3_FAILURES(SERVE_S3_FAIL_LABEL)
#undef SERVE_S3_FAIL_LABEL
    };
    int rc = fr_buf_printf(out, "# HELP %s %s\n# TYPE %s counter\n", LAKE_S3_METRIC, LAKE_S3_HELP,
                           LAKE_S3_METRIC);
    for (int i = 0; rc == FR_OK && i < SERVE_S3_FAIL_COUNT; i++) {
        rc = fr_buf_printf(out, "%s{answer=\"%s\"} %" PRIu64 "\n", LAKE_S3_METRIC, labels[i],
                           (uint64_t)atomic_load(&srv->lake_s3_failures[i]));
    }
    return rc;
}

int serve_own_metrics_markdown(struct fr_buf *out)
{
    int rc = fr_buf_puts(
        out, "\n## serve's own\n\nKept in `freshet serve`'s memory, outside the stats table "
             "(`src/serve/serve_int.h`, `SERVE_S3_FAILURES`).\n\n"
             "| name | type | unit | labels | description |\n|---|---|---|---|---|\n"
             "| `" LAKE_S3_METRIC "` | counter | — | answer | " LAKE_S3_HELP " |\n\n"
             "| answer | meaning |\n|---|---|\n");
#define SERVE_S3_FAIL_MD(id, label, doc)                                                           \
    if (rc == FR_OK) {                                                                             \
        rc = fr_buf_printf(out, "| `%s` | %s |\n", label, doc);                                    \
    }
    SERVE_S3_FAILURES(SERVE_S3_FAIL_MD)
#undef SERVE_S3_FAIL_MD
    return rc;
}
