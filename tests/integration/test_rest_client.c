/*
 * test_rest_client.c — the REST catalog client (src/iceberg/rest_client.c)
 * against freshet's own REST server (fr_serve, in this process, on
 * 127.0.0.1) through a loopback fault proxy (a thread here) that can:
 *
 *   PASS        forward the request, relay the answer
 *   APPLY_500   forward it (the server commits), then answer 500
 *   DROP_500    answer 500 without forwarding (nothing committed)
 *   APPLY_CLOSE forward it, then close the connection without an answer
 *   GET_503     answer 503 to GETs without forwarding (reads must retry)
 *   RACE_APPEND append a file to table data through the library first (a
 *               shard's commit landing between a maintainer's load and its
 *               commit), then forward
 *
 * Checks: load / create / commit with requirements / multi-table commit
 * through the proxy; a commit answered 500 after it was applied is found
 * by its epoch marker (landed, and not committed twice); one answered 500
 * without being applied is found missing, and its retry lands once; a
 * lost connection after applying is resolved the same way; a naive retry
 * of an applied commit is refused by its requirement (409); a 409 moves
 * nothing; reads retry 503 with backoff; answers past max_body are
 * FR_ETOOBIG; and real Parquet files staged with fr_ice_rest_stage_append
 * and committed through the faults land every row exactly once; table
 * maintenance through the client (compaction's rewrite, expiry, orphans)
 * under lost races and unknown outcomes keeps every row once and deletes
 * no live file; the client's listing of every table (nested namespaces,
 * through 503s) equals the library's; a files_only catalog handle creates
 * no catalog.db and refuses row calls; schema evolution through the client
 * (fr_ice_rest_evolve, ADR 0059) adds the missing columns once with their
 * declared ids through an applied-then-500 and a dropped-then-500 commit,
 * and refuses (sending nothing) a column under another id, a missing
 * required column and an id that would come out different. The catalog is
 * read back with the library (src/iceberg), not through the client, to see
 * what really landed.
 */
#include "check.h"

#include "unit/test_iceberg_util.c"

#include "core/buf.h"
#include "core/err.h"
#include "iceberg/iceberg.h"
#include "iceberg/rest.h"
#include "serve/serve.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

#define TOKEN "test-token-123"
#define PIPE "pipe-rest"

enum proxy_mode { PASS = 0, APPLY_500, DROP_500, APPLY_CLOSE, GET_503, RACE_APPEND };

static void race_append(void);

static struct {
    int fd;
    int upstream_port;
    atomic_int mode;
    atomic_int faults_left; /* requests the mode applies to; then PASS */
    atomic_int forwarded;
    atomic_int injected;
    atomic_int stop;
} proxy;

static int read_request(int c, char *buf, size_t cap, size_t *hlen, size_t *total)
{
    size_t n = 0;
    *hlen = 0;
    while (n < cap - 1) {
        ssize_t r = recv(c, buf + n, cap - 1 - n, 0);
        if (r <= 0) {
            return -1;
        }
        n += (size_t)r;
        buf[n] = 0;
        char *end = strstr(buf, "\r\n\r\n");
        if (!*hlen && end) {
            *hlen = (size_t)(end - buf) + 4;
        }
        if (*hlen) {
            const char *cl = strcasestr(buf, "\r\nContent-Length:");
            size_t len = cl && cl < buf + *hlen ? strtoul(cl + 17, NULL, 10) : 0;
            if (n >= *hlen + len) {
                *total = *hlen + len;
                return 0;
            }
        }
    }
    return -1;
}

static void send_all(int c, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(c, p, n, MSG_NOSIGNAL);
        if (w <= 0) {
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

static void answer(int c, long status, const char *body, size_t len)
{
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %ld X\r\nContent-Type: application/json\r\nContent-Length: "
                     "%zu\r\nConnection: close\r\n\r\n",
                     status, len);
    send_all(c, head, (size_t)n);
    send_all(c, body, len);
}

static void proxy_one(int c)
{
    static char buf[1 << 20];
    size_t hlen, total;
    if (read_request(c, buf, sizeof buf, &hlen, &total) < 0) {
        return;
    }
    char method[16], target[2048];
    if (sscanf(buf, "%15s %2047s", method, target) != 2) {
        return;
    }
    char token[256] = "";
    const char *auth = strcasestr(buf, "\r\nAuthorization: Bearer ");
    if (auth && auth < buf + hlen) {
        sscanf(auth + 24, "%255[^\r]", token);
    }
    int mode = atomic_load(&proxy.mode);
    bool is_get = strcmp(method, "GET") == 0;
    if (mode != PASS && atomic_load(&proxy.faults_left) > 0 && ((mode == GET_503) == is_get)) {
        atomic_fetch_sub(&proxy.faults_left, 1);
    } else {
        mode = PASS;
    }
    static const char err500[] = "{\"error\":{\"message\":\"proxy: injected failure\",\"type\":"
                                 "\"CommitStateUnknownException\",\"code\":500}}";
    static const char err503[] = "{\"error\":{\"message\":\"proxy: injected 503\",\"type\":"
                                 "\"ServiceUnavailableException\",\"code\":503}}";
    if (mode == DROP_500 || mode == GET_503) {
        atomic_fetch_add(&proxy.injected, 1);
        answer(c, mode == DROP_500 ? 500 : 503, mode == DROP_500 ? err500 : err503,
               strlen(mode == DROP_500 ? err500 : err503));
        return;
    }
    if (mode == RACE_APPEND) {
        race_append();
    }
    char url[2300];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", proxy.upstream_port, target);
    struct fr_buf resp;
    fr_buf_init(&resp, 64 << 20);
    long status = 0;
    int rc = fr_ice_rest_curl()->request(NULL, method, url, token, total > hlen ? buf + hlen : NULL,
                                         total - hlen, 10000, &status, &resp);
    atomic_fetch_add(&proxy.forwarded, 1);
    if (rc < 0) {
        answer(c, 502, "{}", 2);
    } else if (mode == APPLY_500) {
        atomic_fetch_add(&proxy.injected, 1);
        answer(c, 500, err500, strlen(err500));
    } else if (mode == APPLY_CLOSE) {
        atomic_fetch_add(&proxy.injected, 1); /* close without an answer */
    } else {
        answer(c, status, (const char *)resp.data, resp.len);
    }
    fr_buf_free(&resp);
}

static void *proxy_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&proxy.stop)) {
        int c = accept(proxy.fd, NULL, NULL);
        if (c < 0) {
            continue;
        }
        proxy_one(c);
        close(c);
    }
    return NULL;
}

static int proxy_start(int upstream, pthread_t *th)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    proxy.fd = socket(AF_INET, SOCK_STREAM, 0);
    if (proxy.fd < 0 || bind(proxy.fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        listen(proxy.fd, 16) < 0 || getsockname(proxy.fd, (struct sockaddr *)&sa, &sl) < 0) {
        return -1;
    }
    proxy.upstream_port = upstream;
    pthread_create(th, NULL, proxy_main, NULL);
    return ntohs(sa.sin_port);
}

static void set_fault(enum proxy_mode mode, int count)
{
    atomic_store(&proxy.faults_left, count);
    atomic_store(&proxy.mode, (int)mode);
}

/* ---------------------------------------------------------------- lake -- */

static const char *data_dir;

/* What the catalog really holds: the newest epoch of PIPE and the number
 * of snapshots carrying a marker of PIPE. */
static void lake_epochs(const char *name, int64_t *last, uint32_t *marked)
{
    struct fr_ice_catalog *cat = NULL;
    struct fr_ice_catalog_opts o = {.data_dir = data_dir};
    struct fr_ice_table *t = NULL;
    *last = -1;
    *marked = 0;
    if (fr_ice_catalog_open(&o, &cat) == FR_OK && fr_ice_table_load(cat, "rc", name, &t) == FR_OK) {
        fr_ice_last_epoch(t, PIPE, last, NULL);
        uint32_t n;
        const struct fr_ice_snapshot *s = fr_ice_table_snapshots(t, &n);
        for (uint32_t i = 0; i < n; i++) {
            for (uint32_t k = 0; k < s[i].nsummary; k++) {
                if (strcmp(s[i].summary[k].key, FR_ICE_SUMMARY_PIPELINE) == 0 &&
                    strcmp(s[i].summary[k].value, PIPE) == 0) {
                    (*marked)++;
                }
            }
        }
    }
    fr_ice_table_free(t);
    fr_ice_catalog_close(cat);
}

/* An epoch's commit: a snapshot carrying the marker, made current, under
 * the requirement that main is still at prev (-1: no snapshot). */
static void epoch_change(char *json, size_t cap, int64_t epoch, int64_t prev)
{
    char req[128], parent[64] = "";
    if (prev < 0) {
        snprintf(req, sizeof req, "null");
    } else {
        snprintf(req, sizeof req, "%" PRId64, prev);
        snprintf(parent, sizeof parent, "\"parent-snapshot-id\":%" PRId64 ",", prev);
    }
    int64_t id = 1000 + epoch;
    snprintf(json, cap,
             "{\"requirements\":[{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\","
             "\"snapshot-id\":%s}],\"updates\":[{\"action\":\"add-snapshot\",\"snapshot\":{"
             "\"snapshot-id\":%" PRId64 ",%s\"sequence-number\":%" PRId64
             ",\"timestamp-ms\":%" PRId64 ",\"manifest-list\":\"file:///nonexistent/snap-%" PRId64
             ".avro\",\"summary\":{\"operation\":\"append\",\"" FR_ICE_SUMMARY_PIPELINE "\":\"" PIPE
             "\",\"" FR_ICE_SUMMARY_EPOCH "\":\"%" PRId64 "\"}}},"
             "{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\",\"type\":\"branch\","
             "\"snapshot-id\":%" PRId64 "}]}",
             req, id, parent, epoch, (int64_t)1790000000000 + epoch, id, epoch, id);
}

static int commit_epoch(struct fr_ice_rest *rest, const char *name, int64_t epoch, int64_t prev,
                        int *landed)
{
    char json[4096];
    epoch_change(json, sizeof json, epoch, prev);
    struct fr_ice_rest_change ch = {"rc", name, json, strlen(json)};
    return fr_ice_rest_commit_epoch(rest, &ch, 1, PIPE, epoch, landed);
}

static struct fr_ice_rest *client;
static int proxy_port;

static void test_basics(void)
{
    CHECK_EQ_STR(fr_ice_rest_prefix(client), "freshet");
    static const char create[] =
        "{\"name\":\"a\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"id\","
        "\"type\":\"long\",\"required\":true}]}}";
    struct fr_buf out;
    fr_buf_init(&out, 1 << 20);
    CHECK_EQ_INT(fr_ice_rest_create_table(client, "rc", create, strlen(create), &out), FR_OK);
    CHECK(strstr(fr_buf_cstr(&out), "\"metadata-location\"") != NULL);
    CHECK_EQ_INT(fr_ice_rest_create_table(client, "rc", create, strlen(create), NULL), FR_EEXIST);
    CHECK_EQ_INT(fr_ice_rest_create_table(client, "nope", create, strlen(create), NULL),
                 FR_ENOTFOUND);
    const char *b = strstr(create, "\"a\"");
    (void)b;
    static const char create_b[] =
        "{\"name\":\"b\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"id\","
        "\"type\":\"long\",\"required\":true}]}}";
    CHECK_EQ_INT(fr_ice_rest_create_table(client, "rc", create_b, strlen(create_b), NULL), FR_OK);
    fr_buf_reset(&out);
    CHECK_EQ_INT(fr_ice_rest_load_table(client, "rc", "a", &out), FR_OK);
    CHECK(strstr(fr_buf_cstr(&out), "\"format-version\":2") != NULL);
    CHECK_EQ_INT(fr_ice_rest_load_table(client, "rc", "zz", NULL), FR_ENOTFOUND);
    CHECK_EQ_INT(fr_ice_rest_last_status(client), 404);
    /* a plain commit with a failing requirement: 409, nothing moves */
    static const char stale[] = "{\"requirements\":[{\"type\":\"assert-current-schema-id\","
                                "\"current-schema-id\":3}],\"updates\":[{\"action\":"
                                "\"set-properties\",\"updates\":{\"x\":\"1\"}}]}";
    struct fr_ice_rest_change ch = {"rc", "a", stale, strlen(stale)};
    CHECK_EQ_INT(fr_ice_rest_commit_table(client, &ch, NULL), FR_EREQUIREMENT);
    CHECK(strstr(fr_ice_rest_last_error(client), "assert-current-schema-id") != NULL);
    fr_buf_free(&out);
}

static void test_epochs_through_faults(void)
{
    int64_t last;
    uint32_t marked;
    int landed = -9;
    /* 1: clean */
    CHECK_EQ_INT(commit_epoch(client, "a", 1, -1, &landed), FR_OK);
    CHECK_EQ_INT(landed, 1);
    lake_epochs("a", &last, &marked);
    CHECK_EQ_INT(last, 1);
    CHECK_EQ_INT(marked, 1);

    /* 2: the server applies it, the proxy answers 500: found by its marker */
    set_fault(APPLY_500, 1);
    int before = atomic_load(&proxy.injected);
    landed = -9;
    CHECK_EQ_INT(commit_epoch(client, "a", 2, 1001, &landed), FR_OK);
    CHECK_EQ_INT(landed, 1);
    CHECK_EQ_INT(atomic_load(&proxy.injected), before + 1);
    lake_epochs("a", &last, &marked);
    CHECK_EQ_INT(last, 2);
    CHECK_EQ_INT(marked, 2);
    /* a naive retry of that commit is refused by its requirement */
    char json[4096];
    epoch_change(json, sizeof json, 2, 1001);
    struct fr_ice_rest_change ch = {"rc", "a", json, strlen(json)};
    CHECK_EQ_INT(fr_ice_rest_commit_table(client, &ch, NULL), FR_EREQUIREMENT);
    lake_epochs("a", &last, &marked);
    CHECK_EQ_INT(marked, 2);

    /* 3: 500 without being applied: found missing, then retried once */
    set_fault(DROP_500, 1);
    before = atomic_load(&proxy.injected);
    landed = -9;
    int rc = commit_epoch(client, "a", 3, 1002, &landed);
    CHECK_EQ_INT(rc, FR_EABORTED);
    CHECK_EQ_INT(landed, 0);
    CHECK(strstr(fr_ice_errmsg(), "did not land") != NULL);
    CHECK_EQ_INT(atomic_load(&proxy.injected), before + 1);
    lake_epochs("a", &last, &marked);
    CHECK_EQ_INT(last, 2);
    CHECK_EQ_INT(marked, 2);
    CHECK_EQ_INT(commit_epoch(client, "a", 3, 1002, &landed), FR_OK);
    CHECK_EQ_INT(landed, 1);
    lake_epochs("a", &last, &marked);
    CHECK_EQ_INT(last, 3);
    CHECK_EQ_INT(marked, 3);

    /* 4: applied, then the connection is lost without an answer */
    set_fault(APPLY_CLOSE, 1);
    landed = -9;
    CHECK_EQ_INT(commit_epoch(client, "a", 4, 1003, &landed), FR_OK);
    CHECK_EQ_INT(landed, 1);
    lake_epochs("a", &last, &marked);
    CHECK_EQ_INT(last, 4);
    CHECK_EQ_INT(marked, 4);

    /* 5: the commit and the reload both fail (500, then 503s past the
     * read retries): the outcome stays unknown */
    set_fault(DROP_500, 1);
    struct fr_ice_rest_change c5;
    epoch_change(json, sizeof json, 5, 1004);
    c5 = (struct fr_ice_rest_change){"rc", "a", json, strlen(json)};
    CHECK_EQ_INT(fr_ice_rest_commit_table(client, &c5, NULL), FR_EUNKNOWN);
    set_fault(GET_503, 100);
    CHECK_EQ_INT(fr_ice_rest_find_epoch(client, "rc", "a", PIPE, 5), FR_EHTTP);
    set_fault(PASS, 0);
    CHECK_EQ_INT(fr_ice_rest_find_epoch(client, "rc", "a", PIPE, 5), 0);
    CHECK_EQ_INT(fr_ice_rest_find_epoch(client, "rc", "a", PIPE, 4), 1);
}

static void test_transaction_and_reads(void)
{
    int64_t last;
    uint32_t marked;
    char ja[4096], jb[4096];
    epoch_change(ja, sizeof ja, 5, 1004); /* a is at epoch 4 */
    epoch_change(jb, sizeof jb, 5, -1);   /* b has no snapshot */
    struct fr_ice_rest_change chs[2] = {{"rc", "a", ja, strlen(ja)}, {"rc", "b", jb, strlen(jb)}};
    /* both tables, applied then 500: found landed through a's marker */
    set_fault(APPLY_500, 1);
    int landed = -9;
    CHECK_EQ_INT(fr_ice_rest_commit_epoch(client, chs, 2, PIPE, 5, &landed), FR_OK);
    CHECK_EQ_INT(landed, 1);
    lake_epochs("a", &last, &marked);
    CHECK_EQ_INT(last, 5);
    lake_epochs("b", &last, &marked);
    CHECK_EQ_INT(last, 5);
    CHECK_EQ_INT(marked, 1);
    /* a transaction with one stale requirement moves neither table */
    epoch_change(ja, sizeof ja, 6, 1005);
    epoch_change(jb, sizeof jb, 6, -1); /* stale: b is at 1005 now */
    chs[0].len = strlen(ja);
    chs[1].len = strlen(jb);
    CHECK_EQ_INT(fr_ice_rest_commit_txn(client, chs, 2), FR_EREQUIREMENT);
    lake_epochs("a", &last, &marked);
    CHECK_EQ_INT(last, 5);
    /* reads retry a 503 with backoff */
    set_fault(GET_503, 2);
    struct fr_buf out;
    fr_buf_init(&out, 1 << 20);
    CHECK_EQ_INT(fr_ice_rest_load_table(client, "rc", "a", &out), FR_OK);
    CHECK_EQ_INT(atomic_load(&proxy.faults_left), 0);
    fr_buf_free(&out);
    /* a bounded answer */
    char uri[128];
    snprintf(uri, sizeof uri, "http://127.0.0.1:%d/iceberg", proxy_port);
    struct fr_ice_rest_opts o = {.uri = uri, .token = TOKEN, .max_body = 1024, .backoff_ms = 1};
    struct fr_ice_rest *small = NULL;
    CHECK_EQ_INT(fr_ice_rest_open(&o, &small), FR_OK);
    fr_buf_init(&out, 1 << 20);
    CHECK_EQ_INT(fr_ice_rest_load_table(small, "rc", "a", &out), FR_ETOOBIG);
    fr_buf_free(&out);
    fr_ice_rest_close(small);
    /* nothing listening: not sent, retried, then FR_EAGAIN */
    struct fr_ice_rest_opts dead = {
        .uri = "http://127.0.0.1:1/iceberg", .max_retries = 2, .backoff_ms = 1};
    struct fr_ice_rest *none = NULL;
    CHECK_EQ_INT(fr_ice_rest_open(&dead, &none), FR_EAGAIN);
}

/* Stage one epoch's append of rows [first, first+n) from the table as the
 * catalog returns it now, and commit it through the proxy. */
static int stage_and_commit(int64_t epoch, int64_t first, int n, int *landed)
{
    struct fr_ice_catalog *cat = NULL;
    struct fr_ice_catalog_opts co = {.data_dir = data_dir};
    struct fr_buf loaded, change;
    struct ti_file f;
    char path[4096];
    fr_buf_init(&loaded, 64 << 20);
    fr_buf_init(&change, 1 << 20);
    int rc = fr_ice_catalog_open(&co, &cat);
    if (rc == FR_OK) {
        snprintf(path, sizeof path, "%s/wiki/data/data/e%" PRId64 "-%" PRId64 ".parquet",
                 fr_ice_catalog_warehouse(cat), epoch, first);
        rc = ti_write(&f, path, first, n, false);
    }
    if (rc == FR_OK) {
        rc = fr_ice_rest_load_table(client, TI_NS, "data", &loaded);
    }
    if (rc == FR_OK) {
        struct fr_ice_commit_info info = {PIPE, epoch, "recentchange/0:x", NULL, 0};
        rc = fr_ice_rest_stage_append(cat, TI_NS, "data", (const char *)loaded.data, loaded.len,
                                      &f.df, 1, &info, &change);
        ti_free(&f);
    }
    if (rc == FR_OK) {
        struct fr_ice_rest_change ch = {TI_NS, "data", (const char *)change.data, change.len};
        rc = fr_ice_rest_commit_epoch(client, &ch, 1, PIPE, epoch, landed);
    }
    fr_buf_free(&loaded);
    fr_buf_free(&change);
    fr_ice_catalog_close(cat);
    return rc;
}

/* Real data through the REST path: an epoch answered 500 after it was
 * applied is found landed, one answered 500 before is found missing and
 * staged again; every row is in the table exactly once. */
static void test_stage_append_through_faults(void)
{
    struct fr_ice_catalog *cat = NULL;
    struct fr_ice_catalog_opts co = {.data_dir = data_dir};
    struct fr_ice_table_def def = ti_def(false, NULL, 0);
    CHECK_EQ_INT(fr_ice_catalog_open(&co, &cat), FR_OK);
    CHECK_EQ_INT(fr_ice_table_create(cat, TI_NS, "data", &def, NULL), FR_OK);
    int landed = -9;
    set_fault(PASS, 0);
    CHECK_EQ_INT(stage_and_commit(1, 0, 100, &landed), FR_OK);
    CHECK_EQ_INT(landed, 1);
    set_fault(APPLY_500, 1);
    CHECK_EQ_INT(stage_and_commit(2, 100, 50, &landed), FR_OK);
    CHECK_EQ_INT(landed, 1);
    /* epoch 2 again: refused before anything is written */
    CHECK_EQ_INT(stage_and_commit(2, 100, 50, &landed), FR_EEXIST);
    set_fault(DROP_500, 1);
    CHECK_EQ_INT(stage_and_commit(3, 150, 50, &landed), FR_EABORTED);
    CHECK_EQ_INT(landed, 0);
    CHECK_EQ_INT(stage_and_commit(3, 150, 50, &landed), FR_OK); /* the retry, staged again */
    CHECK_EQ_INT(landed, 1);
    struct ti_sum sum;
    CHECK_EQ_INT(ti_read_table(cat, "data", &sum, 1000), FR_OK);
    CHECK_EQ_INT(sum.rows, 200);
    CHECK_EQ_INT(sum.dupes, 0);
    CHECK_EQ_INT(sum.id_sum, ti_expected_sum(0, 200));
    struct fr_ice_table *t = NULL;
    CHECK_EQ_INT(fr_ice_table_load(cat, TI_NS, "data", &t), FR_OK);
    int64_t last = -1;
    CHECK_EQ_INT(fr_ice_last_epoch(t, PIPE, &last, NULL), FR_OK);
    CHECK_EQ_INT(last, 3);
    uint32_t ns = 0;
    fr_ice_table_snapshots(t, &ns);
    CHECK_EQ_INT(ns, 3);
    fr_ice_table_free(t);
    /* the dropped attempt's manifest and list are orphans, found as such */
    struct fr_ice_orphan_stats os = {0};
    CHECK_EQ_INT(fr_ice_remove_orphans(cat, TI_NS, "data", INT64_MAX, true, &os), FR_OK);
    CHECK(os.orphans >= 2);
    fr_ice_catalog_close(cat);
}

/* Rows appended by race_append: [race_next, ...), RACE_ROWS at a time. */
#define RACE_ROWS 30
static int64_t race_next;
static int race_done;

static void race_append(void)
{
    struct fr_ice_catalog *cat = NULL;
    struct fr_ice_catalog_opts co = {.data_dir = data_dir};
    struct ti_file f;
    char path[4096];
    int rc = fr_ice_catalog_open(&co, &cat);
    if (rc == FR_OK) {
        snprintf(path, sizeof path, "%s/wiki/data/data/race-%" PRId64 ".parquet",
                 fr_ice_catalog_warehouse(cat), race_next);
        rc = ti_write(&f, path, race_next, RACE_ROWS, false);
        if (rc == FR_OK) {
            rc = fr_ice_append(cat, TI_NS, "data", &f.df, 1, NULL, NULL);
            ti_free(&f);
        }
    }
    if (rc == FR_OK) {
        race_next += RACE_ROWS;
        race_done++;
    } else {
        fprintf(stderr, "race_append: %s %s\n", fr_strerror(rc), fr_ice_errmsg());
    }
    fr_ice_catalog_close(cat);
}

/* Every row of [0, n) in table data exactly once, in files live files. */
static void check_rows(struct fr_ice_catalog *cat, int64_t n, size_t files)
{
    struct ti_sum sum;
    CHECK_EQ_INT(ti_read_table(cat, "data", &sum, 10000), FR_OK);
    CHECK_EQ_INT(sum.rows, n);
    CHECK_EQ_INT(sum.dupes, 0);
    CHECK_EQ_INT(sum.id_sum, ti_expected_sum(0, n));
    struct fr_ice_table *t = NULL;
    struct fr_ice_file_list live = {0};
    CHECK_EQ_INT(fr_ice_table_load(cat, TI_NS, "data", &t), FR_OK);
    CHECK_EQ_INT(fr_ice_files(cat, t, -1, true, &live), FR_OK);
    CHECK_EQ_INT(live.nfiles, files);
    fr_ice_file_list_free(&live);
    fr_ice_table_free(t);
}

static void rest_compact(struct fr_ice_catalog *cat, uint32_t inputs)
{
    struct fr_ice_compact_opts o = {.min_inputs = 2, .rest = client};
    struct fr_ice_compact_stats cs = {0};
    CHECK_EQ_INT(fr_ice_compact(cat, TI_NS, "data", &o, &cs), FR_OK);
    if (*fr_ice_errmsg()) {
        fprintf(stderr, "  compact: %s\n", fr_ice_errmsg());
    }
    CHECK_EQ_INT(cs.groups, 1);
    CHECK_EQ_INT(cs.inputs, inputs);
    CHECK_EQ_INT(cs.conflicts, 0);
}

/* Maintenance through the REST client, after test_stage_append_through_
 * faults left rows [0, 200) in three files and the dropped attempt's
 * manifest and list as orphans. */
static void test_maintenance_through_rest(void)
{
    struct fr_ice_catalog *cat = NULL;
    struct fr_ice_catalog_opts co = {.data_dir = data_dir};
    CHECK_EQ_INT(fr_ice_catalog_open(&co, &cat), FR_OK);
    race_next = 200;
    /* 1. a shard's append lands between the rewrite's load and its commit:
     *    409, made again from the new version; the append stays */
    set_fault(RACE_APPEND, 1);
    rest_compact(cat, 3);
    CHECK_EQ_INT(race_done, 1);
    check_rows(cat, 230, 2); /* the merged file and the raced one */
    /* 2. the rewrite lands, its answer is lost (500): found live, not redone */
    int landed = -9;
    set_fault(PASS, 0);
    CHECK_EQ_INT(stage_and_commit(4, 230, 40, &landed), FR_OK);
    set_fault(APPLY_500, 1);
    rest_compact(cat, 3);
    check_rows(cat, 270, 1);
    /* 3. the rewrite never reached the catalog (500 before it): redone once */
    set_fault(PASS, 0);
    CHECK_EQ_INT(stage_and_commit(5, 270, 30, &landed), FR_OK);
    set_fault(DROP_500, 1);
    rest_compact(cat, 2);
    check_rows(cat, 300, 1);
    /* 4. expiry through REST, racing an append once: everything older than
     *    now but the current snapshot's lineage down to PIPE's newest marker
     *    goes, and the files only they reached with it; every live row stays */
    race_next = 300;
    set_fault(RACE_APPEND, 1);
    struct fr_ice_expire_stats es = {0};
    CHECK_EQ_INT(fr_ice_rest_expire(client, cat, TI_NS, "data", INT64_MAX, 1, &es), FR_OK);
    CHECK_EQ_INT(race_done, 2);
    CHECK(es.snapshots_expired >= 6);
    CHECK(es.files_deleted >= 6); /* the merged inputs, their manifests and lists */
    check_rows(cat, 330, 2);
    struct fr_ice_table *t = NULL;
    CHECK_EQ_INT(fr_ice_table_load(cat, TI_NS, "data", &t), FR_OK);
    uint32_t nsnap = 0;
    fr_ice_table_snapshots(t, &nsnap);
    /* the raced append (current), the replace under it and epoch 5's
     * marker under that: the lineage down to the newest marker */
    CHECK_EQ_INT(nsnap, 3);
    int64_t last = -1;
    CHECK_EQ_INT(fr_ice_last_epoch(t, PIPE, &last, NULL), FR_OK);
    CHECK_EQ_INT(last, 5); /* the newest marker survives expiry */
    fr_ice_table_free(t);
    /* 5. orphans through REST: the staged attempts that lost races go, no
     *    live file does, and a second look finds none */
    set_fault(PASS, 0);
    struct fr_ice_orphan_stats os = {0};
    CHECK_EQ_INT(fr_ice_rest_remove_orphans(client, cat, TI_NS, "data", INT64_MAX, false, &os),
                 FR_OK);
    CHECK(os.removed >= 2);
    check_rows(cat, 330, 2);
    CHECK_EQ_INT(fr_ice_rest_remove_orphans(client, cat, TI_NS, "data", INT64_MAX, true, &os),
                 FR_OK);
    CHECK_EQ_INT(os.orphans, 0);
    /* 6. the catalog lists its tables */
    struct fr_ice_ident *ids = NULL;
    size_t n = 0;
    CHECK_EQ_INT(fr_ice_rest_list_tables(client, &ids, &n), FR_OK);
    bool found = false;
    for (size_t i = 0; i < n; i++) {
        found |= strcmp(ids[i].ns, TI_NS) == 0 && strcmp(ids[i].name, "data") == 0;
    }
    CHECK(found);
    free(ids);
    fr_ice_catalog_close(cat);
}

/* fr_ice_rest_list_tables against the library's own listing of the same
 * catalog (nested namespaces, reads retried through 503s), and a catalog
 * handle opened files_only: no catalog.db, row calls refused by name, and
 * tables loaded through the client still list their files. */
static void test_list_and_files_only(void)
{
    static const char create_c[] =
        "{\"name\":\"c\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"id\","
        "\"type\":\"long\",\"required\":true}]}}";
    CHECK_EQ_INT(fr_ice_rest_create_namespace(client, "rc.deep"), FR_OK);
    CHECK_EQ_INT(fr_ice_rest_create_table(client, "rc.deep", create_c, strlen(create_c), NULL),
                 FR_OK);
    struct fr_ice_catalog *cat = NULL;
    struct fr_ice_catalog_opts co = {.data_dir = data_dir};
    struct fr_ice_ident *want = NULL, *got = NULL;
    size_t nwant = 0, ngot = 0;
    CHECK_EQ_INT(fr_ice_catalog_open(&co, &cat), FR_OK);
    CHECK_EQ_INT(fr_ice_list_tables(cat, &want, &nwant), FR_OK);
    fr_ice_catalog_close(cat);
    set_fault(GET_503, 2);
    CHECK_EQ_INT(fr_ice_rest_list_tables(client, &got, &ngot), FR_OK);
    CHECK(nwant >= 3);
    CHECK_EQ_INT((int)ngot, (int)nwant);
    int deep = 0;
    for (size_t i = 0; i < ngot && i < nwant; i++) {
        CHECK_EQ_STR(got[i].ns, want[i].ns);
        CHECK_EQ_STR(got[i].name, want[i].name);
        deep += strcmp(got[i].ns, "rc.deep") == 0 && strcmp(got[i].name, "c") == 0;
    }
    CHECK_EQ_INT(deep, 1);
    free(want);
    free(got);

    /* files_only: nothing created, row calls refused, REST loads work */
    char other[4200], db[4300];
    snprintf(other, sizeof other, "%s/files-only", data_dir);
    struct fr_ice_catalog_opts fo = {.data_dir = other, .files_only = true};
    CHECK_EQ_INT(fr_ice_catalog_open(&fo, &cat), FR_OK);
    struct fr_ice_ident *ids = NULL;
    size_t n = 0;
    CHECK_EQ_INT(fr_ice_list_tables(cat, &ids, &n), FR_EUNSUPPORTED);
    CHECK(strstr(fr_ice_errmsg(), "REST catalog") != NULL);
    struct fr_ice_table *t = NULL;
    CHECK_EQ_INT(fr_ice_table_load(cat, "rc", "a", &t), FR_EUNSUPPORTED);
    fr_ice_catalog_close(cat);
    snprintf(db, sizeof db, "%s/lake/catalog.db", other);
    CHECK(access(db, F_OK) != 0);
    fo.data_dir = data_dir; /* the served warehouse, shared */
    CHECK_EQ_INT(fr_ice_catalog_open(&fo, &cat), FR_OK);
    /* wiki.data: the real files test_stage_append_through_faults landed */
    CHECK_EQ_INT(fr_ice_rest_table(client, cat, "wiki", "data", &t), FR_OK);
    struct fr_ice_file_list list = {0};
    CHECK_EQ_INT(fr_ice_files(cat, t, -1, true, &list), FR_OK);
    CHECK(list.nfiles > 0 && list.total_records > 0);
    fr_ice_file_list_free(&list);
    fr_ice_table_free(t);
    fr_ice_catalog_close(cat);
}

/* The current columns of rc.name as "id:name," and its number of schemas,
 * read with the library. */
static void ev_columns(const char *name, char *out, size_t cap, int *nschemas)
{
    struct fr_ice_catalog *cat = NULL;
    struct fr_ice_catalog_opts o = {.data_dir = data_dir};
    struct fr_ice_table *t = NULL;
    out[0] = 0;
    *nschemas = 0;
    if (fr_ice_catalog_open(&o, &cat) == FR_OK && fr_ice_table_load(cat, "rc", name, &t) == FR_OK) {
        uint32_t n = 0;
        const struct fr_ice_field *f = fr_ice_table_fields(t, &n);
        size_t at = 0;
        for (uint32_t i = 0; i < n && at < cap; i++) {
            at += (size_t)snprintf(out + at, cap - at, "%d:%s,", (int)f[i].id, f[i].name);
        }
    }
    fr_ice_table_free(t);
    fr_ice_catalog_close(cat);
    struct fr_buf b;
    fr_buf_init(&b, 1 << 20);
    if (fr_ice_rest_load_table(client, "rc", name, &b) == FR_OK) {
        for (const char *p = fr_buf_cstr(&b); (p = strstr(p, "\"type\":\"struct\",\"schema-id\":"));
             p++) {
            (*nschemas)++;
        }
    }
    fr_buf_free(&b);
}

static void test_evolve(void)
{
    static const char create[] =
        "{\"name\":\"ev\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"id\","
        "\"type\":\"long\",\"required\":true},{\"id\":2,\"name\":\"name\",\"type\":\"string\","
        "\"required\":false}]}}";
    CHECK_EQ_INT(fr_ice_rest_create_table(client, "rc", create, strlen(create), NULL), FR_OK);
    struct fr_ice_field f[4] = {{1, "id", FR_ICE_LONG, true, NULL},
                                {2, "name", FR_ICE_STRING, false, NULL},
                                {3, "label", FR_ICE_STRING, false, NULL},
                                {4, "lang", FR_ICE_STRING, false, NULL}};
    struct fr_ice_table_def def = {f, 4, NULL, 0, NULL, 0};
    char cols[512];
    int ns = 0;
    uint64_t added = 99;
    /* applied, answered 500: the reload finds both columns, one schema more */
    set_fault(APPLY_500, 1);
    CHECK_EQ_INT(fr_ice_rest_evolve(client, "rc", "ev", &def, &added), FR_OK);
    CHECK_EQ_INT((int)added, 0); /* no 200 seen */
    ev_columns("ev", cols, sizeof cols, &ns);
    CHECK_EQ_STR(cols, "1:id,2:name,3:label,4:lang,");
    CHECK_EQ_INT(ns, 2);
    /* again: nothing to add, nothing sent */
    CHECK_EQ_INT(fr_ice_rest_evolve(client, "rc", "ev", &def, &added), FR_OK);
    CHECK_EQ_INT((int)added, 0);
    ev_columns("ev", cols, sizeof cols, &ns);
    CHECK_EQ_INT(ns, 2);
    /* dropped, answered 500: the reload finds none, the commit is made again */
    struct fr_ice_field g[5] = {f[0], f[1], f[2], f[3], {5, "note", FR_ICE_INT, false, NULL}};
    struct fr_ice_table_def gdef = {g, 5, NULL, 0, NULL, 0};
    set_fault(DROP_500, 1);
    CHECK_EQ_INT(fr_ice_rest_evolve(client, "rc", "ev", &gdef, &added), FR_OK);
    CHECK_EQ_INT((int)added, 1 << 4);
    ev_columns("ev", cols, sizeof cols, &ns);
    CHECK_EQ_STR(cols, "1:id,2:name,3:label,4:lang,5:note,");
    CHECK_EQ_INT(ns, 3);
    /* refusals, nothing committed: another id, a missing required column,
     * an id that would come out different */
    struct fr_ice_field h[6] = {f[0], f[1], f[2], f[3], g[4], {7, "x", FR_ICE_STRING, false, NULL}};
    struct fr_ice_table_def hdef = {h, 6, NULL, 0, NULL, 0};
    CHECK_EQ_INT(fr_ice_rest_evolve(client, "rc", "ev", &hdef, &added), FR_ECONFIG);
    CHECK(strstr(fr_ice_errmsg(), "would get field id 6") != NULL);
    h[5] = (struct fr_ice_field){6, "x", FR_ICE_STRING, true, NULL};
    CHECK_EQ_INT(fr_ice_rest_evolve(client, "rc", "ev", &hdef, &added), FR_ECONFIG);
    CHECK(strstr(fr_ice_errmsg(), "required column x") != NULL);
    h[5] = (struct fr_ice_field){6, "x", FR_ICE_STRING, false, NULL};
    h[2].id = 9;
    CHECK_EQ_INT(fr_ice_rest_evolve(client, "rc", "ev", &hdef, &added), FR_ECONFIG);
    CHECK(strstr(fr_ice_errmsg(), "column label has field id 3") != NULL);
    ev_columns("ev", cols, sizeof cols, &ns);
    CHECK_EQ_STR(cols, "1:id,2:name,3:label,4:lang,5:note,");
    CHECK_EQ_INT(ns, 3);
}

int main(void)
{
    data_dir = check_tmpdir();
    struct fr_ice_catalog *cat = NULL;
    struct fr_ice_catalog_opts co = {.data_dir = data_dir};
    if (fr_ice_catalog_open(&co, &cat) < 0 || fr_ice_ns_create(cat, "rc", NULL, 0) < 0) {
        fprintf(stderr, "catalog: %s\n", fr_ice_errmsg());
        return 1;
    }
    fr_ice_catalog_close(cat);
    struct fr_serve_opts so = {.data_dir = data_dir, .listen = "127.0.0.1:0", .api_token = TOKEN};
    struct fr_serve *srv = NULL;
    if (fr_serve_start(&so, &srv) < 0) {
        fprintf(stderr, "serve did not start\n");
        return 1;
    }
    pthread_t th;
    proxy_port = proxy_start(fr_serve_port(srv), &th);
    if (proxy_port < 0) {
        perror("proxy");
        return 1;
    }
    char uri[128];
    snprintf(uri, sizeof uri, "http://127.0.0.1:%d/iceberg", proxy_port);
    struct fr_ice_rest_opts o = {
        .uri = uri, .token = TOKEN, .warehouse = "freshet", .backoff_ms = 1, .timeout_ms = 10000};
    if (fr_ice_rest_open(&o, &client) < 0) {
        fprintf(stderr, "client: %s\n", fr_ice_errmsg());
        return 1;
    }
    RUN(test_basics);
    RUN(test_epochs_through_faults);
    RUN(test_transaction_and_reads);
    RUN(test_stage_append_through_faults);
    RUN(test_maintenance_through_rest);
    RUN(test_list_and_files_only);
    RUN(test_evolve);
    fr_ice_rest_close(client);
    atomic_store(&proxy.stop, 1);
    shutdown(proxy.fd, SHUT_RDWR);
    close(proxy.fd);
    /* wake accept() if it is still blocked */
    int w = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)proxy_port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connect(w, (struct sockaddr *)&sa, sizeof sa);
    close(w);
    pthread_join(th, NULL);
    fr_serve_stop(srv);
    return check_report();
}
