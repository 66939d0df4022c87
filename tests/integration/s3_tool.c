/*
 * s3_tool.c — the S3 client and the Iceberg-on-S3 adapter driven against a
 * real S3 server (moto) on 127.0.0.1, for tests/integration/objstore.sh.
 * Each subcommand checks what it can itself and exits 0 only when every
 * check held; the script adds the faults (s3_fault_proxy.py), the SIGKILL
 * and the independent reader.
 *
 *   s3_tool basic     ENDPOINT BUCKET
 *   s3_tool retry     ENDPOINT BUCKET KEY MIN_RETRIES     (a fault rule is set)
 *   s3_tool fail      ENDPOINT BUCKET KEY                 (a persistent rule is set)
 *   s3_tool multipart ENDPOINT BUCKET KEY EXPECT          (EXPECT: ok | fail)
 *   s3_tool hang      ENDPOINT BUCKET KEY MARKER          (killed by the script)
 *   s3_tool orphans   ENDPOINT BUCKET KEY EXPECTED_UPLOADS
 *   s3_tool iceberg   ENDPOINT BUCKET PREFIX DATADIR OUT.parquet
 *   s3_tool commit    ENDPOINT BUCKET PREFIX DATADIR setup|fail|retry
 *   s3_tool cred      ENDPOINT BUCKET KEY                 (expects a 403)
 *   s3_tool speed     ENDPOINT BUCKET MIB                 (a measurement, not a test)
 *
 * Credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (moto
 * accepts any unless started in its authenticating mode).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/clock.h"
#include "conf/conf.h"
#include "core/diag.h"
#include "core/err.h"
#include "iceberg/iceberg.h"
#include "objstore/s3.h"
#include "objstore/s3_io.h"
#include "parquet/parquet.h"

static int failures;

#define EXPECT(cond)                                                                      \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "s3_tool:%d: check failed: %s\n", __LINE__, #cond);           \
            failures++;                                                                   \
        }                                                                                 \
    } while (0)
#define EXPECT_RC(expr, want)                                                             \
    do {                                                                                  \
        int rc_ = (expr);                                                                 \
        if (rc_ != (want)) {                                                              \
            fprintf(stderr, "s3_tool:%d: %s = %s, want %s (%s)\n", __LINE__, #expr,       \
                    fr_err_name(rc_), fr_err_name(want), fr_s3_errmsg(s3));               \
            failures++;                                                                   \
        }                                                                                 \
    } while (0)

/* Backoff sleeps are recorded, and slept for real but short (the proxy's
 * stalls take real time anyway). */
struct rec_sys {
    int sleeps;
    int64_t longest;
};

static int64_t rs_wall(void *ctx)
{
    (void)ctx;
    return fr_wall_ms();
}
static int64_t rs_mono(void *ctx)
{
    (void)ctx;
    return fr_mono_ms();
}
static void rs_sleep(void *ctx, int64_t ms)
{
    struct rec_sys *r = ctx;
    r->sleeps++;
    if (ms > r->longest) {
        r->longest = ms;
    }
    fr_sleep_ms(ms);
}
static uint64_t rs_random(void *ctx)
{
    (void)ctx;
    return (uint64_t)rand();
}

static struct rec_sys recorded;
static struct fr_s3_sys test_sys = {rs_wall, rs_mono, rs_sleep, rs_random, &recorded};

/* stall_ms: 1 s for the commands run against the fault proxy, whose stalls
 * must be detected quickly; the client's default (15 s) for those that talk
 * to moto directly, which under ASan on a loaded machine can take more than a
 * second to answer a large request and must not be retried for it. */
static struct fr_s3 *open_client(const char *endpoint, const char *bucket, int64_t stall_ms)
{
    struct fr_s3_opts o;
    memset(&o, 0, sizeof o);
    o.endpoint = endpoint;
    o.bucket = bucket;
    o.path_style = true;
    o.access_key_id = getenv("AWS_ACCESS_KEY_ID");
    o.secret_access_key = getenv("AWS_SECRET_ACCESS_KEY");
    o.session_token = getenv("AWS_SESSION_TOKEN");
    o.max_attempts = 4;
    o.retry_budget_ms = 20000;
    o.backoff_base_ms = 20;
    o.backoff_max_ms = 200;
    o.stall_timeout_ms = stall_ms;
    o.connect_timeout_ms = 2000;
    o.part_bytes = 5u << 20;
    o.multipart_threshold = 5u << 20;
    o.sys = &test_sys;
    struct fr_s3 *s3 = NULL;
    int rc = fr_s3_open(&o, &s3);
    if (rc < 0) {
        fprintf(stderr, "s3_tool: open: %s\n", fr_strerror(rc));
        exit(2);
    }
    return s3;
}

/* Deterministic bytes (xorshift), so a read-back is compared exactly. */
static uint8_t *pattern(size_t len, uint64_t seed)
{
    uint8_t *p = malloc(len);
    uint64_t x = seed | 1;
    for (size_t i = 0; p && i < len; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (uint8_t)x;
    }
    return p;
}

struct keys {
    size_t n;
    bool sorted;
    char last[1024];
};

static int count_keys(void *arg, const struct fr_s3_object *o)
{
    struct keys *k = arg;
    if (k->n > 0 && strcmp(o->key, k->last) <= 0) {
        k->sorted = false;
    }
    snprintf(k->last, sizeof k->last, "%s", o->key);
    k->n++;
    return FR_OK;
}

static size_t list_count(struct fr_s3 *s3, const char *prefix, int *rc)
{
    struct keys k = {0, true, ""};
    *rc = fr_s3_list(s3, prefix, 0, count_keys, &k);
    if (!k.sorted) {
        fprintf(stderr, "s3_tool: listing of %s not in key order\n", prefix);
        failures++;
    }
    return k.n;
}

static int cmd_basic(struct fr_s3 *s3)
{
    struct fr_buf b;
    fr_buf_init(&b, 64u << 20);
    EXPECT_RC(fr_s3_create_bucket(s3), FR_OK);
    EXPECT_RC(fr_s3_create_bucket(s3), FR_OK); /* already ours */

    /* put / get / range / head, a key that needs encoding */
    const char *key = "dir/a b+c=d&é.txt";
    char etag[80];
    EXPECT_RC(fr_s3_put(s3, key, "hello world", 11, false, etag), FR_OK);
    EXPECT(etag[0] == '"');
    EXPECT_RC(fr_s3_get(s3, key, &b), FR_OK);
    EXPECT(b.len == 11 && memcmp(b.data, "hello world", 11) == 0);
    fr_buf_reset(&b);
    EXPECT_RC(fr_s3_get_range(s3, key, 6, 5, &b), FR_OK);
    EXPECT(b.len == 5 && memcmp(b.data, "world", 5) == 0);
    fr_buf_reset(&b);
    EXPECT_RC(fr_s3_get_range(s3, key, 9, 100, &b), FR_OK); /* clipped at the end */
    EXPECT(b.len == 2 && memcmp(b.data, "ld", 2) == 0);
    fr_buf_reset(&b);
    struct fr_s3_object o;
    EXPECT_RC(fr_s3_head(s3, key, &o), FR_OK);
    EXPECT(o.size == 11);
    EXPECT(strcmp(o.etag, etag) == 0);
    EXPECT(o.mtime_ms > fr_wall_ms() - 3600 * 1000);

    /* a capped buffer: the object is refused, the buffer unchanged */
    struct fr_buf small;
    fr_buf_init(&small, 4);
    EXPECT_RC(fr_s3_get(s3, key, &small), FR_ETOOBIG);
    EXPECT(small.len == 0);
    fr_buf_free(&small);

    /* create-only */
    EXPECT_RC(fr_s3_put(s3, key, "other", 5, true, NULL), FR_EEXIST);
    EXPECT(strstr(fr_s3_errmsg(s3), "already exists") != NULL);
    EXPECT_RC(fr_s3_get(s3, key, &b), FR_OK);
    EXPECT(b.len == 11 && memcmp(b.data, "hello world", 11) == 0); /* not overwritten */
    fr_buf_reset(&b);
    EXPECT_RC(fr_s3_put(s3, "dir/new", "1", 1, true, NULL), FR_OK);
    EXPECT_RC(fr_s3_put(s3, "dir/new", "2", 1, true, NULL), FR_EEXIST);

    /* compare-and-swap on the ETag (what a checkpoint in the bucket uses) */
    char e1[80], e2[80];
    EXPECT_RC(fr_s3_put(s3, "state/checkpoint", "epoch=1", 7, false, e1), FR_OK);
    EXPECT_RC(fr_s3_put_if_match(s3, "state/checkpoint", "epoch=2", 7, e1, e2), FR_OK);
    EXPECT(strcmp(e1, e2) != 0);
    EXPECT_RC(fr_s3_put_if_match(s3, "state/checkpoint", "epoch=3", 7, e1, NULL), FR_ECONFLICT);
    EXPECT_RC(fr_s3_put_if_match(s3, "state/absent", "epoch=1", 7, e1, NULL), FR_ENOTFOUND);
    fr_buf_reset(&b);
    EXPECT_RC(fr_s3_get(s3, "state/checkpoint", &b), FR_OK);
    EXPECT(b.len == 7 && memcmp(b.data, "epoch=2", 7) == 0);
    fr_buf_reset(&b);

    /* more than one page of keys */
    for (int i = 0; i < 1105; i++) {
        char k[64];
        snprintf(k, sizeof k, "many/k%05d", i);
        EXPECT_RC(fr_s3_put(s3, k, k, strlen(k), false, NULL), FR_OK);
    }
    int rc;
    EXPECT(list_count(s3, "many/", &rc) == 1105);
    EXPECT(rc == FR_OK);
    struct keys k = {0, true, ""};
    EXPECT_RC(fr_s3_list(s3, "many/", 1000, count_keys, &k), FR_ETOOBIG); /* the cap holds */
    EXPECT(list_count(s3, "dir/", &rc) == 2);

    /* delete */
    EXPECT_RC(fr_s3_delete(s3, "many/k00007"), FR_OK);
    EXPECT_RC(fr_s3_head(s3, "many/k00007", NULL), FR_ENOTFOUND);
    EXPECT_RC(fr_s3_get(s3, "many/k00007", &b), FR_ENOTFOUND);
    EXPECT(list_count(s3, "many/", &rc) == 1104);

    /* multipart above the threshold: 12 MiB + 123 in three parts */
    size_t big = (12u << 20) + 123;
    uint8_t *data = pattern(big, 42);
    EXPECT_RC(fr_s3_put(s3, "big/blob", data, big, false, etag), FR_OK);
    EXPECT(strstr(etag, "-3\"") != NULL); /* a multipart ETag names its parts */
    fr_buf_reset(&b);
    EXPECT_RC(fr_s3_get(s3, "big/blob", &b), FR_OK);
    EXPECT(b.len == big && memcmp(b.data, data, big) == 0);
    fr_buf_reset(&b);
    EXPECT_RC(fr_s3_get_range(s3, "big/blob", (int64_t)(6u << 20), 1000, &b), FR_OK);
    EXPECT(b.len == 1000 && memcmp(b.data, data + (6u << 20), 1000) == 0);
    /* create-only multipart on an existing key is refused before sending */
    EXPECT_RC(fr_s3_put(s3, "big/blob", data, big, true, NULL), FR_EEXIST);

    /* a streaming upload that is aborted leaves nothing */
    struct fr_s3_upload *up = NULL;
    EXPECT_RC(fr_s3_upload_begin(s3, "big/aborted", true, &up), FR_OK);
    EXPECT_RC(fr_s3_upload_write(up, data, big), FR_OK);
    fr_s3_upload_abort(up);
    EXPECT_RC(fr_s3_head(s3, "big/aborted", NULL), FR_ENOTFOUND);
    uint32_t aborted = 99;
    EXPECT_RC(fr_s3_abort_stale_uploads(s3, "big/", fr_wall_ms() + 60000, &aborted), FR_OK);
    EXPECT(aborted == 0);
    /* a small streaming upload is one PUT */
    EXPECT_RC(fr_s3_upload_begin(s3, "big/small", true, &up), FR_OK);
    EXPECT_RC(fr_s3_upload_write(up, "abc", 3), FR_OK);
    EXPECT_RC(fr_s3_upload_commit(up, etag), FR_OK);
    EXPECT(list_count(s3, "big/", &rc) == 2);
    free(data);
    fr_buf_free(&b);
    uint64_t req, ret;
    fr_s3_counters(s3, &req, &ret);
    printf("basic: %" PRIu64 " requests, %" PRIu64 " retries\n", req, ret);
    EXPECT(ret == 0);
    return failures ? 1 : 0;
}

/* Under a transient fault rule: a put and a get succeed after retries, and
 * the object holds exactly the bytes put once. */
static int cmd_retry(struct fr_s3 *s3, const char *key, int min_retries)
{
    struct fr_buf b;
    fr_buf_init(&b, 1 << 20);
    char body[256];
    int n = snprintf(body, sizeof body, "retried body for %s", key);
    int64_t t0 = fr_mono_ms();
    EXPECT_RC(fr_s3_create_bucket(s3), FR_OK);
    EXPECT_RC(fr_s3_put(s3, key, body, (size_t)n, true, NULL), FR_OK);
    EXPECT_RC(fr_s3_get(s3, key, &b), FR_OK);
    EXPECT(b.len == (size_t)n && memcmp(b.data, body, (size_t)n) == 0);
    int rc;
    EXPECT(list_count(s3, key, &rc) == 1);
    uint64_t req, ret;
    fr_s3_counters(s3, &req, &ret);
    printf("retry %s: %" PRIu64 " requests, %" PRIu64 " retries, %d backoff sleeps (longest %" PRId64
           " ms), %" PRId64 " ms\n",
           key, req, ret, recorded.sleeps, recorded.longest, fr_mono_ms() - t0);
    EXPECT((int)ret >= min_retries);
    EXPECT(recorded.sleeps == (int)ret);
    EXPECT(recorded.longest <= 200); /* backoff_max_ms */
    fr_buf_free(&b);
    return failures ? 1 : 0;
}

/* Under a persistent fault rule: a clear, retriable failure after exactly
 * max_attempts, and no object. */
static int cmd_fail(struct fr_s3 *s3, const char *key)
{
    int rc = fr_s3_put(s3, key, "x", 1, true, NULL);
    printf("fail %s: %s: %s\n", key, fr_err_name(rc), fr_s3_errmsg(s3));
    EXPECT(rc < 0);
    EXPECT(fr_err_class(rc) == FR_ERRC_RETRY);
    EXPECT(strstr(fr_s3_errmsg(s3), "attempt 4 of 4") != NULL);
    EXPECT(strstr(fr_s3_errmsg(s3), "retriable") != NULL);
    EXPECT(strstr(fr_s3_errmsg(s3), key) != NULL);
    return failures ? 1 : 0;
}

static int cmd_multipart(struct fr_s3 *s3, const char *key, bool expect_ok)
{
    size_t big = (11u << 20) + 7;
    uint8_t *data = pattern(big, 7);
    char etag[80];
    int rc = fr_s3_put(s3, key, data, big, true, etag);
    printf("multipart %s: %s %s\n", key, fr_err_name(rc), fr_s3_errmsg(s3));
    if (expect_ok) {
        EXPECT(rc == FR_OK);
        struct fr_buf b;
        fr_buf_init(&b, 64u << 20);
        EXPECT_RC(fr_s3_get(s3, key, &b), FR_OK);
        EXPECT(b.len == big && memcmp(b.data, data, big) == 0);
        fr_buf_free(&b);
    } else {
        EXPECT(rc < 0 && fr_err_class(rc) == FR_ERRC_RETRY);
    }
    free(data);
    return failures ? 1 : 0;
}

static int cmd_hang(struct fr_s3 *s3, const char *key, const char *marker)
{
    size_t big = (5u << 20) + 1;
    uint8_t *data = pattern(big, 9);
    struct fr_s3_upload *up = NULL;
    EXPECT_RC(fr_s3_upload_begin(s3, key, true, &up), FR_OK);
    EXPECT_RC(fr_s3_upload_write(up, data, big), FR_OK); /* part 1 is sent */
    FILE *f = fopen(marker, "w");
    if (f) {
        fputs("part 1 sent\n", f);
        fclose(f);
    }
    sleep(60); /* the script SIGKILLs us here */
    fr_s3_upload_abort(up);
    free(data);
    return 3;
}

/* After a writer died (or failed) mid-upload: nothing visible under key,
 * and exactly `expect` incomplete uploads for it, which the clean-up
 * aborts. (moto reports every upload as initiated on 2010-11-10, so the
 * age cutoff cannot be exercised against it; a cutoff in the future takes
 * every upload.) */
static int cmd_orphans(struct fr_s3 *s3, const char *key, uint32_t expect)
{
    int rc;
    EXPECT_RC(fr_s3_head(s3, key, NULL), FR_ENOTFOUND); /* nothing visible */
    EXPECT(list_count(s3, key, &rc) == 0);
    uint32_t aborted = 0;
    EXPECT_RC(fr_s3_abort_stale_uploads(s3, key, fr_wall_ms() + 60000, &aborted), FR_OK);
    printf("orphans %s: aborted %u\n", key, aborted);
    EXPECT(aborted == expect);
    EXPECT_RC(fr_s3_abort_stale_uploads(s3, key, fr_wall_ms() + 60000, &aborted), FR_OK);
    EXPECT(aborted == 0);
    EXPECT_RC(fr_s3_head(s3, key, NULL), FR_ENOTFOUND);
    EXPECT(list_count(s3, key, &rc) == 0);
    return failures ? 1 : 0;
}

static int cmd_cred(struct fr_s3 *s3, const char *key)
{
    int rc = fr_s3_put(s3, key, "x", 1, false, NULL);
    const char *secret = getenv("AWS_SECRET_ACCESS_KEY");
    printf("cred: %s: %s\n", fr_err_name(rc), fr_s3_errmsg(s3));
    EXPECT(rc == FR_ECREDENTIAL);
    EXPECT(fr_err_class(rc) == FR_ERRC_FATAL);
    EXPECT(strstr(fr_s3_errmsg(s3), "HTTP 403") != NULL || strstr(fr_s3_errmsg(s3), "Token") != NULL);
    EXPECT(strstr(fr_s3_errmsg(s3), "attempt 1 of") != NULL); /* not retried */
    EXPECT(!secret || !strstr(fr_s3_errmsg(s3), secret));
    return failures ? 1 : 0;
}

/* ------------------------------------------------------------- iceberg -- */

static const struct fr_ice_field ice_fields[] = {
    {1, "id", FR_ICE_LONG, true, NULL},
    {2, "wiki", FR_ICE_STRING, true, NULL},
    {3, "n", FR_ICE_INT, false, NULL},
};

/* Write rows [first, first+count) to path through the S3 output. */
static int write_file(struct fr_s3_io *io, const char *path, int64_t first, int count,
                      struct fr_pq_file_stats *stats)
{
    static const struct fr_pq_column cols[] = {
        {"id", FR_PQ_INT64, false, 1}, {"wiki", FR_PQ_STRING, false, 2}, {"n", FR_PQ_INT32, true, 3}};
    static const struct fr_pq_schema schema = {cols, 3};
    struct fr_pq_opts opts;
    fr_pq_opts_default(&opts);
    struct fr_pq_out out;
    struct fr_pq_writer *w = NULL;
    int rc = fr_s3_io_pq_out(io, path, &out);
    if (rc == FR_OK) {
        rc = fr_pq_writer_open(&schema, &opts, &out, &w);
    }
    for (int i = 0; rc == FR_OK && i < count; i++) {
        int64_t id = first + i;
        char wiki[16];
        int wl = snprintf(wiki, sizeof wiki, "w%d", (int)(id % 5));
        rc = fr_pq_write_int64(w, 0, id);
        if (rc == FR_OK) {
            rc = fr_pq_write_str(w, 1, wiki, (size_t)wl);
        }
        if (rc == FR_OK) {
            rc = id % 4 == 0 ? fr_pq_write_null(w, 2) : fr_pq_write_int32(w, 2, (int32_t)id * 3);
        }
        if (rc == FR_OK) {
            rc = fr_pq_row_end(w);
        }
    }
    if (rc == FR_OK) {
        rc = fr_pq_writer_close(w, stats);
    }
    fr_pq_writer_free(w);
    return rc;
}

static int cmd_iceberg(struct fr_s3 *s3, const char *endpoint, const char *bucket,
                       const char *prefix, const char *data_dir, const char *out_path)
{
    const char *wh_uri_missing_prefix = "http://not-s3/x";
    static const struct fr_pq_column cols[] = {
        {"id", FR_PQ_INT64, false, 1}, {"wiki", FR_PQ_STRING, false, 2}, {"n", FR_PQ_INT32, true, 3}};
    static const struct fr_pq_schema schema = {cols, 3};
    char whu[512];
    snprintf(whu, sizeof whu, "s3://%s/%s", bucket, prefix);
    struct fr_s3_io *io = NULL;
    struct fr_ice_catalog *cat = NULL;
    struct fr_ice_table *t = NULL;
    EXPECT_RC(fr_s3_create_bucket(s3), FR_OK);
    EXPECT_RC(fr_s3_io_open(s3, prefix, NULL, &io), FR_OK);
    struct fr_ice_catalog_opts copts = {.data_dir = data_dir, .warehouse_uri = whu};
    int rc = fr_s3_catalog_open(io, &copts, &cat);
    if (rc < 0) {
        fprintf(stderr, "s3_tool: catalog: %s %s\n", fr_strerror(rc), fr_ice_errmsg());
        return 1;
    }
    struct fr_ice_table_def def = {ice_fields, 3, NULL, 0, NULL, 0};
    rc = fr_ice_table_create(cat, "wiki", "t", &def, &t);
    if (rc < 0) {
        fprintf(stderr, "s3_tool: create: %s: %s | %s\n", fr_strerror(rc), fr_ice_errmsg(),
                fr_s3_errmsg(s3));
        return 1;
    }
    EXPECT(strncmp(fr_ice_table_location(t), whu, strlen(whu)) == 0);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", fr_ice_table_dir(t));
    fr_ice_table_free(t);
    t = NULL;

    /* two epochs, one file each (1000 and 500 rows) */
    for (int e = 1; e <= 2; e++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/data/epoch-%d.parquet", dir, e);
        struct fr_pq_file_stats st;
        memset(&st, 0, sizeof st);
        int count = e == 1 ? 1000 : 500;
        EXPECT_RC(write_file(io, path, e == 1 ? 0 : 1000, count, &st), FR_OK);
        struct fr_ice_data_file df;
        struct fr_ice_col_metrics m[3];
        uint8_t bounds[512];
        EXPECT_RC(fr_ice_file_from_pq(path, &schema, &st, &df, m, bounds, sizeof bounds), FR_OK);
        char off[64];
        snprintf(off, sizeof off, "recentchange/0:%d-%d", e == 1 ? 0 : 1000, e == 1 ? 1000 : 1500);
        struct fr_ice_commit_info info = {"s3test", e, off, NULL, 0};
        rc = fr_ice_append(cat, "wiki", "t", &df, 1, &info, NULL);
        if (rc < 0) {
            fprintf(stderr, "s3_tool: append: %s | %s\n", fr_ice_errmsg(), fr_s3_errmsg(s3));
        }
        EXPECT(rc == FR_OK);
        /* replaying the epoch commits nothing a second time */
        EXPECT(fr_ice_append(cat, "wiki", "t", &df, 1, &info, NULL) == FR_EEXIST);
        fr_pq_file_stats_free(&st);
    }
    fr_ice_catalog_close(cat);
    cat = NULL;

    /* a second handle, opened the way a freshet process would (from the
     * [s3] configuration, credentials from AWS_*), reads it back:
     * metadata, manifests and files from S3 */
    struct fr_conf conf;
    char err[512] = "", set[600];
    EXPECT(fr_conf_init(&conf) == FR_OK);
    snprintf(set, sizeof set, "s3.endpoint=%s", endpoint);
    EXPECT(fr_conf_set(&conf, set, FR_CONF_FLAG, err, sizeof err) == FR_OK);
    struct fr_s3_warehouse *wh = NULL;
    rc = fr_s3_warehouse_open(&conf, wh_uri_missing_prefix, &copts, &wh, &cat, err, sizeof err);
    EXPECT(rc == FR_ECONFIG && strstr(err, "expected s3://") != NULL);
    rc = fr_s3_warehouse_open(&conf, whu, &copts, &wh, &cat, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "s3_tool: warehouse open: %s\n", err);
        return 1;
    }
    struct fr_s3_io *io2 = fr_s3_warehouse_io(wh);
    EXPECT(cat && fr_ice_table_load(cat, "wiki", "t", &t) == FR_OK);
    if (!t) {
        fprintf(stderr, "s3_tool: load: %s\n", fr_ice_errmsg());
        return 1;
    }
    int64_t epoch = -1, snap = -1;
    EXPECT(fr_ice_last_epoch(t, "s3test", &epoch, &snap) == FR_OK && epoch == 2);
    struct fr_ice_file_list fl;
    memset(&fl, 0, sizeof fl);
    rc = fr_ice_files(cat, t, -1, true, &fl); /* HEADs every file: size must match */
    if (rc < 0) {
        fprintf(stderr, "s3_tool: files: %s\n", fr_ice_errmsg());
    }
    EXPECT(rc == FR_OK);
    EXPECT(fl.nfiles == 2 && fl.total_records == 1500);
    int64_t rows = 0;
    for (size_t i = 0; i < fl.nfiles; i++) {
        struct fr_pq_in in;
        struct fr_pq_reader *r = NULL;
        EXPECT(strncmp(fl.files[i].path, whu, strlen(whu)) == 0);
        EXPECT_RC(fr_s3_io_pq_in(io2, fl.files[i].local_path, &in), FR_OK);
        EXPECT(fr_pq_reader_open(&in, NULL, &r) == FR_OK); /* footer and pages by ranged GET */
        if (r) {
            EXPECT((int64_t)fr_pq_reader_rows(r) == fl.files[i].record_count);
            rows += (int64_t)fr_pq_reader_rows(r);
        }
        fr_pq_reader_free(r);
    }
    EXPECT(rows == 1500);
    /* the published metadata and the first data file, for independent readers */
    struct fr_buf b;
    fr_buf_init(&b, 64u << 20);
    char key[1200];
    snprintf(key, sizeof key, "%s/wiki/t/metadata/version-hint.text", prefix);
    EXPECT_RC(fr_s3_get(s3, key, &b), FR_OK);
    EXPECT(b.len >= 1 && b.data[0] == '3'); /* create + two appends */
    for (size_t i = 0; i < fl.nfiles; i++) {
        fr_buf_reset(&b);
        EXPECT(fr_s3_io_key(io2, fl.files[i].local_path, key, sizeof key) == FR_OK);
        EXPECT_RC(fr_s3_get(s3, key, &b), FR_OK);
        char p[1200];
        snprintf(p, sizeof p, "%s.%zu", out_path, i);
        FILE *f = fopen(p, "wb");
        EXPECT(f && fwrite(b.data, 1, b.len, f) == b.len);
        if (f) {
            fclose(f);
        }
    }
    /* nothing was written under the local warehouse directory */
    char local[1200];
    snprintf(local, sizeof local, "%s/wiki", fr_ice_catalog_warehouse(cat));
    EXPECT(access(local, F_OK) != 0);
    printf("iceberg: %zu files, %" PRId64 " rows, snapshot %" PRId64 "\n", fl.nfiles, rows, snap);
    fr_buf_free(&b);
    fr_ice_file_list_free(&fl);
    fr_ice_table_free(t);
    fr_ice_catalog_close(cat);
    fr_s3_warehouse_close(wh);
    fr_conf_free(&conf);
    fr_s3_io_close(io);
    return failures ? 1 : 0;
}

/* An epoch commit whose lake writes fail, then its replay.
 *   setup: create table wiki.c
 *   fail:  (the proxy fails every /metadata/ write) write the data file,
 *          append epoch 1: a retriable error, and the table has no snapshot
 *   retry: replay epoch 1 (a new data file name per attempt): committed
 *          once; a second replay is refused; remove_orphans deletes what
 *          the failed attempt left (its data file), nothing else */
static int cmd_commit(struct fr_s3 *s3, const char *bucket, const char *prefix,
                      const char *data_dir, const char *phase)
{
    static const struct fr_pq_column cols[] = {
        {"id", FR_PQ_INT64, false, 1}, {"wiki", FR_PQ_STRING, false, 2}, {"n", FR_PQ_INT32, true, 3}};
    static const struct fr_pq_schema schema = {cols, 3};
    char whu[512];
    snprintf(whu, sizeof whu, "s3://%s/%s", bucket, prefix);
    struct fr_s3_io *io = NULL;
    struct fr_ice_catalog *cat = NULL;
    struct fr_ice_table *t = NULL;
    EXPECT_RC(fr_s3_io_open(s3, prefix, NULL, &io), FR_OK);
    struct fr_ice_catalog_opts copts = {.data_dir = data_dir, .warehouse_uri = whu};
    if (fr_s3_catalog_open(io, &copts, &cat) < 0) {
        fprintf(stderr, "s3_tool: catalog: %s\n", fr_ice_errmsg());
        return 1;
    }
    if (strcmp(phase, "setup") == 0) {
        EXPECT_RC(fr_s3_create_bucket(s3), FR_OK);
        struct fr_ice_table_def def = {ice_fields, 3, NULL, 0, NULL, 0};
        EXPECT(fr_ice_table_create(cat, "wiki", "c", &def, NULL) == FR_OK);
    } else {
        bool replay = strcmp(phase, "retry") == 0;
        if (fr_ice_table_load(cat, "wiki", "c", &t) < 0) {
            fprintf(stderr, "s3_tool: load: %s\n", fr_ice_errmsg());
            return 1;
        }
        char path[1200];
        snprintf(path, sizeof path, "%s/data/epoch-1-attempt-%d.parquet", fr_ice_table_dir(t),
                 replay ? 2 : 1);
        struct fr_pq_file_stats st;
        memset(&st, 0, sizeof st);
        EXPECT_RC(write_file(io, path, 0, 100, &st), FR_OK);
        struct fr_ice_data_file df;
        struct fr_ice_col_metrics m[3];
        uint8_t bounds[512];
        EXPECT(fr_ice_file_from_pq(path, &schema, &st, &df, m, bounds, sizeof bounds) == FR_OK);
        struct fr_ice_commit_info info = {"s3test", 1, "recentchange/0:0-100", NULL, 0};
        int rc = fr_ice_append(cat, "wiki", "c", &df, 1, &info, NULL);
        printf("commit %s: %s: %s | %s\n", phase, fr_err_name(rc), fr_ice_errmsg(),
               fr_s3_errmsg(s3));
        fr_ice_table_free(t);
        t = NULL;
        EXPECT(fr_ice_table_load(cat, "wiki", "c", &t) == FR_OK);
        if (!replay) {
            EXPECT(rc < 0 && fr_err_class(rc) == FR_ERRC_RETRY);
            EXPECT(t && fr_ice_table_snapshot_id(t) == -1); /* nothing moved */
        } else {
            EXPECT(rc == FR_OK);
            EXPECT(fr_ice_append(cat, "wiki", "c", &df, 1, &info, NULL) == FR_EEXIST);
            struct fr_ice_file_list fl;
            memset(&fl, 0, sizeof fl);
            fr_ice_table_free(t);
            t = NULL;
            EXPECT(fr_ice_table_load(cat, "wiki", "c", &t) == FR_OK);
            EXPECT(t && fr_ice_files(cat, t, -1, true, &fl) == FR_OK);
            EXPECT(fl.nfiles == 1 && fl.total_records == 100);
            fr_ice_file_list_free(&fl);
            struct fr_ice_orphan_stats os;
            memset(&os, 0, sizeof os);
            rc = fr_ice_remove_orphans(cat, "wiki", "c", fr_wall_ms() + 60000, false, &os);
            printf("orphans: seen %u, orphans %u, removed %u (%" PRId64 " bytes)\n", os.files_seen,
                   os.orphans, os.removed, os.bytes_removed);
            EXPECT(rc == FR_OK && os.removed >= 1 && os.removed == os.orphans);
            char key[1200];
            snprintf(key, sizeof key, "%s/wiki/c/data/epoch-1-attempt-1.parquet", prefix);
            EXPECT_RC(fr_s3_head(s3, key, NULL), FR_ENOTFOUND);
            snprintf(key, sizeof key, "%s/wiki/c/data/epoch-1-attempt-2.parquet", prefix);
            EXPECT_RC(fr_s3_head(s3, key, NULL), FR_OK);
            memset(&fl, 0, sizeof fl);
            EXPECT(fr_ice_files(cat, t, -1, true, &fl) == FR_OK && fl.total_records == 100);
            fr_ice_file_list_free(&fl);
        }
        fr_pq_file_stats_free(&st);
    }
    fr_ice_table_free(t);
    fr_ice_catalog_close(cat);
    fr_s3_io_close(io);
    return failures ? 1 : 0;
}

/* Not a test: how fast a multipart put and a get of MIB mebibytes go. */
static int cmd_speed(struct fr_s3 *s3, int mib)
{
    size_t len = (size_t)mib << 20;
    uint8_t *data = pattern(len, 3);
    struct fr_buf b;
    fr_buf_init(&b, len + 1);
    EXPECT_RC(fr_s3_create_bucket(s3), FR_OK);
    int64_t t0 = fr_mono_ms();
    EXPECT_RC(fr_s3_put(s3, "speed/blob", data, len, false, NULL), FR_OK);
    int64_t t1 = fr_mono_ms();
    EXPECT_RC(fr_s3_get(s3, "speed/blob", &b), FR_OK);
    int64_t t2 = fr_mono_ms();
    EXPECT(b.len == len && memcmp(b.data, data, len) == 0);
    uint64_t req, ret;
    fr_s3_counters(s3, &req, &ret);
    printf("speed: put %d MiB in %" PRId64 " ms (%.1f MiB/s), get in %" PRId64
           " ms (%.1f MiB/s), %" PRIu64 " requests\n",
           mib, t1 - t0, mib * 1000.0 / (double)(t1 - t0 + 1), t2 - t1,
           mib * 1000.0 / (double)(t2 - t1 + 1), req);
    fr_buf_free(&b);
    free(data);
    return failures ? 1 : 0;
}

/* get KEY FILE: download one object (for checks by independent readers). */
static int cmd_get(struct fr_s3 *s3, const char *key, const char *file)
{
    struct fr_buf b;
    fr_buf_init(&b, (size_t)1 << 30);
    int rc = fr_s3_get(s3, key, &b);
    FILE *f = rc == FR_OK ? fopen(file, "wb") : NULL;
    if (rc == FR_OK && (!f || fwrite(b.data, 1, b.len, f) != b.len)) {
        rc = FR_EIO;
    }
    if (f && fclose(f) != 0) {
        rc = FR_EIO;
    }
    if (rc != FR_OK) {
        fprintf(stderr, "s3_tool get %s: %s %s\n", key, fr_strerror(rc), fr_s3_errmsg(s3));
    }
    fr_buf_free(&b);
    return rc == FR_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: s3_tool CMD ENDPOINT BUCKET ...\n");
        return 2;
    }
    srand(1);
    const char *cmd = argv[1];
    fr_diag_set_level(FR_DIAG_INFO); /* the client's retries, with their reasons */
    bool faulty = strcmp(cmd, "retry") == 0 || strcmp(cmd, "fail") == 0 ||
                  strcmp(cmd, "multipart") == 0;
    struct fr_s3 *s3 = open_client(argv[2], argv[3], faulty ? 1000 : 0);
    int rc = 2;
    if (strcmp(cmd, "basic") == 0) {
        rc = cmd_basic(s3);
    } else if (strcmp(cmd, "retry") == 0 && argc == 6) {
        rc = cmd_retry(s3, argv[4], atoi(argv[5]));
    } else if (strcmp(cmd, "fail") == 0 && argc == 5) {
        rc = cmd_fail(s3, argv[4]);
    } else if (strcmp(cmd, "multipart") == 0 && argc == 6) {
        rc = cmd_multipart(s3, argv[4], strcmp(argv[5], "ok") == 0);
    } else if (strcmp(cmd, "hang") == 0 && argc == 6) {
        rc = cmd_hang(s3, argv[4], argv[5]);
    } else if (strcmp(cmd, "orphans") == 0 && argc == 6) {
        rc = cmd_orphans(s3, argv[4], (uint32_t)atoi(argv[5]));
    } else if (strcmp(cmd, "iceberg") == 0 && argc == 7) {
        rc = cmd_iceberg(s3, argv[2], argv[3], argv[4], argv[5], argv[6]);
    } else if (strcmp(cmd, "commit") == 0 && argc == 7) {
        rc = cmd_commit(s3, argv[3], argv[4], argv[5], argv[6]);
    } else if (strcmp(cmd, "speed") == 0 && argc == 5) {
        rc = cmd_speed(s3, atoi(argv[4]));
    } else if (strcmp(cmd, "get") == 0 && argc == 6) {
        rc = cmd_get(s3, argv[4], argv[5]);
    } else if (strcmp(cmd, "cred") == 0 && argc == 5) {
        rc = cmd_cred(s3, argv[4]);
    } else {
        fprintf(stderr, "s3_tool: bad command line\n");
    }
    fr_s3_close(s3);
    return rc;
}
