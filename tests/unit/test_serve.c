/*
 * test_serve.c — `freshet serve` in-process on 127.0.0.1:0, driven by a raw
 * HTTP client so that every byte sent is chosen by the test: the metrics
 * and JSON documents (the live one with stats/topics.json absent, good,
 * malformed, oversized and unreadable), the event stream and its
 * connection cap, /lake/ with
 * HTTP Range, path traversal attempts (.., encoded separators, NUL,
 * dot-files, symlinks out of the root), bearer authentication of the job
 * endpoints (401 / 403 / 202 / 409), request limits (oversized headers and
 * bodies), and clients that never finish a request or never read a stream
 * while others are served on time.
 */
#include "check.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/err.h"
#include "core/json.h"
#include "serve/serve.h"
#include "serve/serve_int.h"
#include "stats/stats.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>

#define TOKEN "s3cret-token-0123456789"

static char data_dir[4096];
static char web_dir[4096];
static int port;
static struct fr_serve *srv;

struct resp {
    int status;
    char head[8192];
    struct fr_buf body;
};

static int connect_port(int p)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Send raw (a whole request) and read the answer until the server closes. */
static int http_raw(int p, const char *raw, size_t len, struct resp *r)
{
    memset(r->head, 0, sizeof r->head);
    r->status = 0;
    fr_buf_init(&r->body, 64 << 20);
    int fd = connect_port(p);
    if (fd < 0) {
        return -1;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t n = send(fd, raw + off, len - off, MSG_NOSIGNAL);
        if (n <= 0) {
            break;
        }
        off += (size_t)n;
    }
    struct fr_buf all;
    fr_buf_init(&all, 64 << 20);
    char buf[65536];
    ssize_t n;
    /* Jobs' exits (SIGCHLD) may interrupt recv: retry. */
    while ((n = recv(fd, buf, sizeof buf, 0)) > 0 || (n < 0 && errno == EINTR)) {
        if (n > 0) {
            fr_buf_append(&all, buf, (size_t)n);
        }
    }
    close(fd);
    const char *text = fr_buf_cstr(&all);
    const char *sep = strstr(text, "\r\n\r\n");
    if (sscanf(text, "HTTP/1.%*d %d", &r->status) != 1 || !sep) {
        fr_buf_free(&all);
        return r->status;
    }
    size_t hl = (size_t)(sep - text);
    memcpy(r->head, text, hl < sizeof r->head - 1 ? hl : sizeof r->head - 1);
    fr_buf_append(&r->body, sep + 4, all.len - hl - 4);
    fr_buf_cstr(&r->body);
    fr_buf_free(&all);
    return r->status;
}

static int http(const char *method, const char *target, const char *extra, struct resp *r)
{
    char req[16384];
    snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s\r\n",
             method, target, extra ? extra : "");
    return http_raw(port, req, strlen(req), r);
}

static void resp_free(struct resp *r)
{
    fr_buf_free(&r->body);
}

static int has_header(const struct resp *r, const char *line)
{
    return strcasestr(r->head, line) != NULL;
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, len, f);
        fclose(f);
    }
}

static unsigned char lake_bytes[1000];

static void setup(void)
{
    snprintf(data_dir, sizeof data_dir, "%s", check_tmpdir());
    snprintf(web_dir, sizeof web_dir, "%s", check_tmpdir());
    char path[8192];
    snprintf(path, sizeof path, "%s/lake/warehouse/wiki/t/data", data_dir);
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", path);
    CHECK_EQ_INT(system(cmd), 0);
    for (size_t i = 0; i < sizeof lake_bytes; i++) {
        lake_bytes[i] = (unsigned char)(i * 7 + 3);
    }
    snprintf(path, sizeof path, "%s/lake/warehouse/wiki/t/data/a.parquet", data_dir);
    write_file(path, lake_bytes, sizeof lake_bytes);
    snprintf(path, sizeof path, "%s/lake/warehouse/wiki/t/data/.hidden", data_dir);
    write_file(path, "secret", 6);
    snprintf(path, sizeof path, "%s/lake/warehouse/out", data_dir);
    CHECK_EQ_INT(symlink("/etc", path), 0);
    snprintf(path, sizeof path, "%s/lake/warehouse/wiki/link.parquet", data_dir);
    CHECK_EQ_INT(symlink("t/data/a.parquet", path), 0);
    snprintf(path, sizeof path, "%s/secret.txt", data_dir);
    write_file(path, "outside", 7);
    snprintf(path, sizeof path, "%s/index.html", web_dir);
    write_file(path, "<h1>dashboard</h1>", 18);
    snprintf(path, sizeof path, "%s/explorer.html", web_dir);
    write_file(path, "<h1>explorer</h1>", 17);
    snprintf(path, sizeof path, "%s/app.js", web_dir);
    write_file(path, "export {};", 10);
}

static int start_server(const char *token, int max_streams, int timeout_s, struct fr_serve **out)
{
    struct fr_serve_opts opts = {
        .data_dir = data_dir,
        .listen = "127.0.0.1:0",
        .web_root = web_dir,
        .api_token = token,
        .max_connections = 64,
        .max_streams = max_streams,
        .timeout_s = timeout_s,
        .request_max_bytes = 16384,
        .self = "/bin/true",
    };
    return fr_serve_start(&opts, out);
}

static void test_metrics_status_live(void)
{
    struct fr_stats *ingest = NULL;
    fr_stats_open(data_dir, FR_STATS_INGEST, &ingest);
    fr_stats_add(ingest, FR_STATS_INGEST_EVENTS, 0, 123);
    fr_stats_publish(ingest);
    struct resp r;
    CHECK_EQ_INT(http("GET", "/metrics", NULL, &r), 200);
    CHECK(has_header(&r, "Content-Type: text/plain; version=0.0.4"));
    CHECK(strstr(fr_buf_cstr(&r.body), "freshet_ingest_events_received_total 123\n") != NULL);
    CHECK(strstr(fr_buf_cstr(&r.body), "freshet_stage_up{stage=\"ingest\"} 1\n") != NULL);
    CHECK(strstr(fr_buf_cstr(&r.body), "freshet_stage_up{stage=\"process\"} 0\n") != NULL);
    resp_free(&r);

    CHECK_EQ_INT(http("GET", "/api/v1/status", NULL, &r), 200);
    const char *s = fr_buf_cstr(&r.body);
    CHECK_EQ_INT(fr_json_validate(s, s + r.body.len), FR_OK);
    CHECK(strstr(s, "\"ingest\":{\"up\":true,\"pid\":") != NULL);
    CHECK(strstr(s, "\"process\":{\"up\":false,\"pid\":null") != NULL);
    CHECK(strstr(s, "\"ingest_events_received_total\":123") != NULL);
    CHECK(has_header(&r, "Content-Type: application/json"));
    resp_free(&r);

    CHECK_EQ_INT(http("GET", "/api/v1/live", NULL, &r), 200);
    CHECK_EQ_STR(fr_buf_cstr(&r.body), "{\"up\":false,\"view\":null,\"topics\":null}\n");
    resp_free(&r);
    char path[8192];
    snprintf(path, sizeof path, "%s/stats/view.json", data_dir);
    write_file(path, "{\"epoch\":3}\n", 12);
    CHECK_EQ_INT(http("GET", "/api/v1/live", NULL, &r), 200);
    CHECK_EQ_STR(fr_buf_cstr(&r.body), "{\"up\":false,\"view\":{\"epoch\":3},\"topics\":null}\n");
    resp_free(&r);
    /* A damaged view is null, never broken JSON. */
    write_file(path, "{\"epoch\":", 9);
    CHECK_EQ_INT(http("GET", "/api/v1/live", NULL, &r), 200);
    CHECK_EQ_STR(fr_buf_cstr(&r.body), "{\"up\":false,\"view\":null,\"topics\":null}\n");
    resp_free(&r);

    /* The writer goes away: the figures stay, the stage is down. */
    fr_stats_close(ingest);
    CHECK_EQ_INT(http("GET", "/metrics", NULL, &r), 200);
    CHECK(strstr(fr_buf_cstr(&r.body), "freshet_ingest_events_received_total 123\n") != NULL);
    CHECK(strstr(fr_buf_cstr(&r.body), "freshet_stage_up{stage=\"ingest\"} 0\n") != NULL);
    resp_free(&r);

    CHECK_EQ_INT(http("GET", "/api/v1/tables", NULL, &r), 200);
    CHECK_EQ_STR(fr_buf_cstr(&r.body), "{\"warehouse\":\"/lake/\",\"tables\":[]}\n");
    resp_free(&r);
}

static int read_until(int fd, const char *needle, int count);

/* The value of an unlabelled metric in /metrics, -1 when absent. */
static long long metric_value(const char *name)
{
    struct resp m;
    long long v = -1;
    if (http("GET", "/metrics", NULL, &m) == 200) {
        char line[256];
        snprintf(line, sizeof line, "\n%s ", name);
        const char *at = strstr(fr_buf_cstr(&m.body), line);
        if (at) {
            v = strtoll(at + strlen(line), NULL, 10);
        }
    }
    resp_free(&m);
    return v;
}

/* GET /api/v1/live and compare the whole body with want. */
static void check_live(const char *want)
{
    struct resp r;
    CHECK_EQ_INT(http("GET", "/api/v1/live", NULL, &r), 200);
    CHECK_EQ_STR(fr_buf_cstr(&r.body), want);
    resp_free(&r);
}

/* stats/topics.json (docs/ENRICH.md, "On the dashboard"): embedded
 * verbatim as "topics" when it is one JSON object within 256 KiB; absent
 * is null and not an error; malformed, not an object, oversized or
 * unreadable is null and counted, and the server keeps answering. */
static void test_live_topics(void)
{
    char path[8192], view[8192];
    snprintf(path, sizeof path, "%s/stats/topics.json", data_dir);
    snprintf(view, sizeof view, "%s/stats/view.json", data_dir);
    unlink(view);
    unlink(path);
    const char *counter = "freshet_serve_topics_unreadable_total";
    CHECK_EQ_INT(metric_value(counter), 0);
    check_live("{\"up\":false,\"view\":null,\"topics\":null}\n");
    CHECK_EQ_INT(metric_value(counter), 0);

    /* Hostile strings pass through as the JSON escapes them. */
    const char *good =
        "{\"updated_ms\":1764621000000,\"epoch\":12,\"frontier_ms\":1764620400000,"
        "\"counts\":{\"submitted\":100,\"resolved\":80,\"no_item\":15,\"failed\":2,"
        "\"backlog\":0,\"pending\":3,\"cache_hits\":40,\"cache_misses\":60,\"requests\":5},"
        "\"top\":{\"start_ms\":1764620400000,\"end_ms\":1764621000000,\"topics\":[{\"rank\":1,"
        "\"item\":\"Q42\\\"><img src=x>\",\"edits\":12,\"wikis\":3,\"top_wikis\":[{\"wiki\":"
        "\"<script>x</script>\",\"edits\":7}]}]}}";
    char file[4096];
    snprintf(file, sizeof file, "%s\n", good);
    write_file(path, file, strlen(file));
    char want[4096];
    snprintf(want, sizeof want, "{\"up\":false,\"view\":null,\"topics\":%s}\n", good);
    check_live(want);
    write_file(view, "{\"epoch\":3}", 11);
    snprintf(want, sizeof want, "{\"up\":false,\"view\":{\"epoch\":3},\"topics\":%s}\n", good);
    check_live(want);
    unlink(view);
    write_file(path, "{\"top\":null}", 12);
    check_live("{\"up\":false,\"view\":null,\"topics\":{\"top\":null}}\n");
    CHECK_EQ_INT(metric_value(counter), 0);

    /* Refusals: each read is counted, the document stays valid. */
    const char *bad[] = {"{\"top\":", "[1,2]", "\"Q42\"", "", "{\"a\":1}{", "{\"a\":\"\x01\"}"};
    long long refused = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file(path, bad[i], strlen(bad[i]));
        check_live("{\"up\":false,\"view\":null,\"topics\":null}\n");
        CHECK_EQ_INT(metric_value(counter), ++refused);
    }
    /* Oversized: a valid object of 256 KiB + 1 bytes is refused; one of
     * 200 KiB is served. */
    size_t sizes[] = {(size_t)256 * 1024 + 1, (size_t)200 * 1024};
    for (int k = 0; k < 2; k++) {
        size_t n = sizes[k];
        char *big = malloc(n + 1);
        CHECK(big != NULL);
        memset(big, 'x', n);
        memcpy(big, "{\"pad\":\"", 8);
        memcpy(big + n - 2, "\"}", 2);
        big[n] = 0;
        write_file(path, big, n);
        struct resp r;
        CHECK_EQ_INT(http("GET", "/api/v1/live", NULL, &r), 200);
        const char *body = fr_buf_cstr(&r.body);
        CHECK_EQ_INT(fr_json_validate(body, body + r.body.len), FR_OK);
        if (k == 0) {
            CHECK_EQ_STR(body, "{\"up\":false,\"view\":null,\"topics\":null}\n");
            CHECK_EQ_INT(metric_value(counter), ++refused);
        } else {
            CHECK_EQ_INT(r.body.len, strlen("{\"up\":false,\"view\":null,\"topics\":}\n") + n);
            CHECK(strstr(body, "\"topics\":{\"pad\":\"xxxx") != NULL);
            CHECK_EQ_INT(metric_value(counter), refused);
        }
        resp_free(&r);
        free(big);
    }
    /* An I/O error (a directory where the file should be) is a refusal too. */
    unlink(path);
    CHECK_EQ_INT(mkdir(path, 0700), 0);
    check_live("{\"up\":false,\"view\":null,\"topics\":null}\n");
    CHECK_EQ_INT(metric_value(counter), ++refused);
    rmdir(path);
    check_live("{\"up\":false,\"view\":null,\"topics\":null}\n");
    CHECK_EQ_INT(metric_value(counter), refused);

    /* The stream's live frames carry it too. */
    write_file(path, "{\"epoch\":77,\"top\":null}", 23);
    int fd = connect_port(port);
    const char *req = "GET /api/v1/stream HTTP/1.1\r\nHost: x\r\n\r\n";
    CHECK(fd >= 0 && send(fd, req, strlen(req), MSG_NOSIGNAL) > 0);
    CHECK(read_until(fd, "\"view\":null,\"topics\":{\"epoch\":77,\"top\":null}}\n\n", 2) >= 2);
    close(fd);
    unlink(path);
}

static void test_errors(void)
{
    struct resp r;
    CHECK_EQ_INT(http("POST", "/metrics", "Content-Length: 0\r\n", &r), 405);
    CHECK(has_header(&r, "Allow: GET, HEAD"));
    CHECK(strstr(fr_buf_cstr(&r.body), "\"error\":\"method_not_allowed\"") != NULL);
    resp_free(&r);
    CHECK_EQ_INT(http("GET", "/api/v1/compact", NULL, &r), 405);
    resp_free(&r);
    CHECK_EQ_INT(http("GET", "/api/v1/nope", NULL, &r), 404);
    CHECK(strstr(fr_buf_cstr(&r.body), "{\"error\":\"not_found\"") != NULL);
    resp_free(&r);
    CHECK_EQ_INT(http("DELETE", "/metrics", NULL, &r), 405);
    resp_free(&r);
    CHECK_EQ_INT(http("GET", "/", NULL, &r), 200);
    CHECK_EQ_STR(fr_buf_cstr(&r.body), "<h1>dashboard</h1>");
    CHECK(has_header(&r, "Content-Type: text/html"));
    resp_free(&r);
    CHECK_EQ_INT(http("GET", "/explorer", NULL, &r), 200);
    CHECK_EQ_STR(fr_buf_cstr(&r.body), "<h1>explorer</h1>");
    resp_free(&r);
    CHECK_EQ_INT(http("GET", "/app.js?v=1", NULL, &r), 200);
    CHECK(has_header(&r, "Content-Type: text/javascript"));
    resp_free(&r);
}

static void test_lake_range(void)
{
    const char *url = "/lake/wiki/t/data/a.parquet";
    struct resp r;
    CHECK_EQ_INT(http("GET", url, NULL, &r), 200);
    CHECK_EQ_INT(r.body.len, sizeof lake_bytes);
    CHECK(r.body.len == sizeof lake_bytes && memcmp(r.body.data, lake_bytes, r.body.len) == 0);
    CHECK(has_header(&r, "Accept-Ranges: bytes"));
    CHECK(has_header(&r, "Content-Type: application/vnd.apache.parquet"));
    resp_free(&r);
    CHECK_EQ_INT(http("GET", url, "Range: bytes=10-19\r\n", &r), 206);
    CHECK_EQ_INT(r.body.len, 10);
    CHECK(r.body.len == 10 && memcmp(r.body.data, lake_bytes + 10, 10) == 0);
    CHECK(has_header(&r, "Content-Range: bytes 10-19/1000"));
    resp_free(&r);
    CHECK_EQ_INT(http("GET", url, "Range: bytes=-8\r\n", &r), 206);
    CHECK(r.body.len == 8 && memcmp(r.body.data, lake_bytes + 992, 8) == 0);
    CHECK(has_header(&r, "Content-Range: bytes 992-999/1000"));
    resp_free(&r);
    CHECK_EQ_INT(http("GET", url, "Range: bytes=990-5000\r\n", &r), 206);
    CHECK_EQ_INT(r.body.len, 10);
    resp_free(&r);
    CHECK_EQ_INT(http("GET", url, "Range: bytes=1000-\r\n", &r), 416);
    CHECK(has_header(&r, "Content-Range: bytes */1000"));
    resp_free(&r);
    CHECK_EQ_INT(http("GET", url, "Range: bytes=0-1,5-6\r\n", &r), 200);
    CHECK_EQ_INT(r.body.len, 1000);
    resp_free(&r);
    CHECK_EQ_INT(http("HEAD", url, NULL, &r), 200);
    CHECK(has_header(&r, "Content-Length: 1000"));
    CHECK_EQ_INT(r.body.len, 0);
    resp_free(&r);
}

/* The path rules an S3 warehouse's /lake/ relies on to keep every key
 * under its prefix (lake_s3.c): decoded segments joined by '/', or
 * refused. */
static void test_path_decode(void)
{
    char out[64];
    CHECK_EQ_INT(serve_path_decode("wiki/t/data/a.parquet", out, sizeof out), FR_OK);
    CHECK_EQ_STR(out, "wiki/t/data/a.parquet");
    CHECK_EQ_INT(serve_path_decode("a%20b/c%3Fd", out, sizeof out), FR_OK);
    CHECK_EQ_STR(out, "a b/c?d");
    CHECK_EQ_INT(serve_path_decode("x", out, sizeof out), FR_OK);
    CHECK_EQ_STR(out, "x");
    static const char *const refused[] = {
        "",           "..",    "../x",    "a/../x",   "a/..",  "%2e%2e/x", "%2E%2e", ".",
        "./a",        "a/./b", ".hidden", "a/.git/x", "a//b",  "/a",       "a/",     "a%2Fb",
        "a%2f..%2fb", "a%5Cb", "a\\b",    "a%00b",    "a%0ab", "a%zz",     "a%2",    "a%"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        int rc = serve_path_decode(refused[i], out, sizeof out);
        if (rc != FR_EINVAL) {
            fprintf(stderr, "  \"%s\" was not refused (%d)\n", refused[i], rc);
        }
        CHECK_EQ_INT(rc, FR_EINVAL);
    }
    /* too long for out, and more than 32 segments */
    CHECK_EQ_INT(
        serve_path_decode("0123456789/0123456789/0123456789/0123456789/0123456789/0123456789", out,
                          sizeof out),
        FR_EINVAL);
    char deep[200] = "";
    for (int i = 0; i < 33; i++) {
        strcat(deep, i ? "/a" : "a");
    }
    char big[256];
    CHECK_EQ_INT(serve_path_decode(deep, big, sizeof big), FR_EINVAL);
    deep[strlen(deep) - 2] = 0; /* 32 segments */
    CHECK_EQ_INT(serve_path_decode(deep, big, sizeof big), FR_OK);
}

static void test_traversal(void)
{
    static const char *const refused[] = {
        "/lake/../secret.txt",
        "/lake/wiki/../../secret.txt",
        "/lake/%2e%2e/secret.txt",
        "/lake/wiki%2F..%2F..%2Fsecret.txt",
        "/lake/wiki%2ft%2fdata%2fa.parquet",
        "/lake/wiki%5ct%5cdata%5ca.parquet",
        "/lake/wiki\\t\\data\\a.parquet",
        "/lake/wiki/t/data/a.parquet%00.txt",
        "/lake/wiki/t/data/.hidden",
        "/lake/wiki//t/data/a.parquet",
        "/lake/wiki/t/./data/a.parquet",
        "/lake/wiki/t/data/a.parquet%",
        "/lake/wiki/t/data/a.parquet%zz",
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/..%2fsecret.txt",
        "/lake/out/passwd",
        "/lake/wiki/link.parquet",
        "/lake/wiki/t/data",
        "/lake/",
        "/lake",
        "/nonexistent.js",
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        struct resp r;
        int status = http("GET", refused[i], NULL, &r);
        if (status != 400 && status != 404) {
            fprintf(stderr, "  %s -> %d\n", refused[i], status);
        }
        CHECK(status == 400 || status == 404);
        CHECK(strstr(fr_buf_cstr(&r.body), "outside") == NULL);
        CHECK(strstr(fr_buf_cstr(&r.body), "root:") == NULL);
        resp_free(&r);
    }
}

static void test_auth_jobs(void)
{
    struct resp r;
    CHECK_EQ_INT(http("POST", "/api/v1/compact", "Content-Length: 0\r\n", &r), 401);
    CHECK(has_header(&r, "WWW-Authenticate: Bearer"));
    CHECK(strstr(fr_buf_cstr(&r.body), TOKEN) == NULL);
    resp_free(&r);
    CHECK_EQ_INT(
        http("POST", "/api/v1/compact", "Content-Length: 0\r\nAuthorization: Bearer wrong\r\n", &r),
        401);
    resp_free(&r);
    CHECK_EQ_INT(http("POST", "/api/v1/compact",
                      "Content-Length: 0\r\nAuthorization: Bearer " TOKEN "x\r\n", &r),
                 401);
    resp_free(&r);
    CHECK_EQ_INT(http("POST", "/api/v1/compact",
                      "Content-Length: 0\r\nAuthorization: Basic " TOKEN "\r\n", &r),
                 401);
    resp_free(&r);
    CHECK_EQ_INT(http("POST", "/api/v1/compact",
                      "Content-Length: 0\r\nAuthorization: Bearer " TOKEN "\r\n", &r),
                 202);
    const char *s = fr_buf_cstr(&r.body);
    CHECK(strstr(s, "{\"job\":{\"id\":1,\"command\":\"compact\"") != NULL);
    CHECK_EQ_INT(fr_json_validate(s, s + r.body.len), FR_OK);
    resp_free(&r);
    CHECK_EQ_INT(http("POST", "/api/v1/dlq/replay",
                      "Content-Length: 0\r\nAuthorization: bearer " TOKEN "\r\n", &r),
                 202);
    CHECK(strstr(fr_buf_cstr(&r.body), "\"command\":\"dlq replay\"") != NULL);
    resp_free(&r);
    /* A body over 64 KiB is refused before any job starts. */
    size_t big = 70 * 1024;
    char *req = malloc(big + 1024);
    int n = snprintf(req, 512,
                     "POST /api/v1/dlq/replay HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                     "Authorization: Bearer " TOKEN "\r\nContent-Length: %zu\r\n\r\n",
                     big);
    memset(req + n, 'a', big);
    /* Headers only: the server answers before the body (a client sending
     * the rest after the answer would see its connection reset). */
    CHECK_EQ_INT(http_raw(port, req, (size_t)n, &r), 413);
    resp_free(&r);
    /* A body without a length (chunked) is counted as it arrives. */
    n = snprintf(req, 512,
                 "POST /api/v1/dlq/replay HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                 "Authorization: Bearer " TOKEN "\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "%zx\r\n",
                 big);
    memset(req + n, 'b', big);
    memcpy(req + n + big, "\r\n0\r\n\r\n", 7);
    int status = http_raw(port, req, (size_t)n + big + 7, &r);
    CHECK(status == 413 || status == 0); /* 0: reset while the rest was being sent */
    resp_free(&r);
    free(req);
    /* The jobs (/bin/true) end and are reaped by the ticker. */
    int done = 0;
    for (int i = 0; i < 50 && !done; i++) {
        fr_sleep_ms(100);
        http("GET", "/api/v1/jobs", NULL, &r);
        s = fr_buf_cstr(&r.body);
        done = strstr(s, "\"state\":\"running\"") == NULL && strstr(s, "\"exit_code\":0") != NULL;
        resp_free(&r);
    }
    CHECK(done);
    /* Without a token configured: 403 whatever is sent. */
    struct fr_serve *open_srv = NULL;
    CHECK_EQ_INT(start_server("", 4, 5, &open_srv), FR_OK);
    char raw[512];
    snprintf(raw, sizeof raw,
             "POST /api/v1/compact HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
             "Authorization: Bearer " TOKEN "\r\nContent-Length: 0\r\n\r\n");
    CHECK_EQ_INT(http_raw(fr_serve_port(open_srv), raw, strlen(raw), &r), 403);
    CHECK(strstr(fr_buf_cstr(&r.body), "FRESHET_SERVE_API_TOKEN") != NULL);
    resp_free(&r);
    fr_serve_stop(open_srv);
}

/* Read from fd until needle has been seen count times (or 5 s). */
static int read_until(int fd, const char *needle, int count)
{
    struct fr_buf got;
    fr_buf_init(&got, 16 << 20);
    char buf[65536];
    int seen = 0;
    int64_t deadline = fr_mono_ms() + 5000;
    while (seen < count && fr_mono_ms() < deadline) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        fr_buf_append(&got, buf, (size_t)n);
        seen = 0;
        for (const char *p = fr_buf_cstr(&got); (p = strstr(p, needle)); p++) {
            seen++;
        }
    }
    fr_buf_free(&got);
    return seen;
}

static int open_stream(void)
{
    int fd = connect_port(port);
    const char *req = "GET /api/v1/stream HTTP/1.1\r\nHost: x\r\n\r\n";
    if (fd >= 0 && send(fd, req, strlen(req), MSG_NOSIGNAL) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void test_stream(void)
{
    int fd = open_stream();
    CHECK(fd >= 0);
    CHECK(read_until(fd, "event: live\ndata: {\"up\":", 2) >= 2);
    close(fd);
    /* The server notices a closed stream when it next writes to it. */
    int freed = 0;
    for (int i = 0; i < 30 && !freed; i++) {
        fr_sleep_ms(200);
        struct resp m;
        http("GET", "/metrics", NULL, &m);
        freed = strstr(fr_buf_cstr(&m.body), "freshet_serve_streams 0\n") != NULL;
        resp_free(&m);
    }
    CHECK(freed);
    /* The cap (3 in this server): a fourth stream gets 503. */
    int fds[3];
    for (int i = 0; i < 3; i++) {
        fds[i] = open_stream();
        CHECK(read_until(fds[i], "retry: 2000", 1) == 1);
    }
    struct resp r;
    CHECK_EQ_INT(http("GET", "/api/v1/stream", NULL, &r), 503);
    CHECK(strstr(fr_buf_cstr(&r.body), "\"error\":\"unavailable\"") != NULL);
    resp_free(&r);
    for (int i = 0; i < 3; i++) {
        close(fds[i]);
    }
    /* Closed streams free their slots (the server notices within a frame). */
    int ok = 0;
    for (int i = 0; i < 30 && !ok; i++) {
        fr_sleep_ms(200);
        int f = open_stream();
        ok = read_until(f, "event: status", 1) == 1;
        close(f);
    }
    CHECK(ok);
}

static void test_slow_clients(void)
{
    /* Ten connections that never finish their request line, two streams
     * that never read (tiny receive buffers), one oversized request. */
    int idle[10], deaf[2];
    for (int i = 0; i < 10; i++) {
        idle[i] = connect_port(port);
        send(idle[i], "GET /metr", 9, MSG_NOSIGNAL);
    }
    for (int i = 0; i < 2; i++) {
        deaf[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int small = 4096;
        setsockopt(deaf[i], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        CHECK(connect(deaf[i], (struct sockaddr *)&sa, sizeof sa) == 0);
        const char *req = "GET /api/v1/stream HTTP/1.1\r\nHost: x\r\n\r\n";
        send(deaf[i], req, strlen(req), MSG_NOSIGNAL);
    }
    struct fr_buf big;
    fr_buf_init(&big, 1 << 20);
    fr_buf_puts(&big, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n");
    for (int i = 0; i < 2000; i++) {
        fr_buf_printf(&big, "X-Filler-%d: %064d\r\n", i, i);
    }
    fr_buf_puts(&big, "\r\n");
    struct resp r;
    int status = http_raw(port, (const char *)big.data, big.len, &r);
    CHECK(status != 200); /* 431/413 from libmicrohttpd, or the connection is cut */
    resp_free(&r);
    fr_buf_free(&big);
    /* Meanwhile everyone else is served promptly, for 4 s (past the 2 s
     * connection timeout of this server). */
    int64_t worst = 0;
    int64_t until = fr_mono_ms() + 4000;
    int served = 0;
    while (fr_mono_ms() < until) {
        int64_t t0 = fr_mono_ms();
        CHECK_EQ_INT(http("GET", "/metrics", NULL, &r), 200);
        resp_free(&r);
        int64_t dt = fr_mono_ms() - t0;
        worst = dt > worst ? dt : worst;
        served++;
        fr_sleep_ms(50);
    }
    fprintf(stderr, "     %d /metrics answered beside 12 stuck clients; slowest %lld ms\n", served,
            (long long)worst);
    CHECK(worst < 1000);
    /* The idle connections were closed by the server's timeout. */
    int closed = 0;
    for (int i = 0; i < 10; i++) {
        char c;
        struct timeval tv = {.tv_sec = 1};
        setsockopt(idle[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ssize_t n = recv(idle[i], &c, 1, 0);
        closed += n == 0 || (n < 0 && errno == ECONNRESET);
        close(idle[i]);
    }
    CHECK_EQ_INT(closed, 10);
    for (int i = 0; i < 2; i++) {
        close(deaf[i]);
    }
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    setup();
    if (start_server(TOKEN, 3, 2, &srv) != FR_OK) {
        fprintf(stderr, "cannot start the server on 127.0.0.1\n");
        return 1;
    }
    port = fr_serve_port(srv);
    CHECK(port > 0);
    RUN(test_metrics_status_live);
    RUN(test_live_topics);
    RUN(test_errors);
    RUN(test_lake_range);
    RUN(test_traversal);
    RUN(test_path_decode);
    RUN(test_auth_jobs);
    RUN(test_stream);
    RUN(test_slow_clients);
    fr_serve_stop(srv);
    return check_report();
}
