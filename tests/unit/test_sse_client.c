/*
 * test_sse_client.c — unit tests for src/sse/client.c against a scripted
 * HTTP/1.1 server that lives in this file: plain sockets on 127.0.0.1, an
 * ephemeral port, one thread serving connections one after another. Each
 * connection k answers with script[k] (the last entry repeats) and records
 * the request head, so tests compare the exact headers the client sent.
 *
 * Covered: resume with the Last-Event-ID the caller supplies (and the
 * parser's own id by default), the stall timeout, 429 with and without
 * Retry-After, 5xx backoff, 400 and the bad-resume hook, 403 and its limit,
 * `event: error`, chunk boundaries inside lines and CRLF pairs, a truncated
 * chunked body, the wrong content type, refused connections, the stop flag
 * (from a signal handler and from another thread, both timed), callback
 * abort, the size cap, and option validation.
 *
 * Backoff waits run on a fake clock (struct fr_sse_ops) so the delays chosen
 * can be asserted without waiting; stall and stop tests use the real clock.
 * Network: 127.0.0.1 only; proxy variables are removed at start.
 */
#include "check.h"

#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"
#include "sse/sse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>

/* ------------------------------------------------------- scripted server */

#define SRV_MAX_CONN 32
#define SRV_REQ_MAX 4096

struct srv_resp {
    const char *head;     /* status line and headers, each ending in CRLF */
    const char *body[10]; /* body pieces, each sent as one HTTP chunk */
    int pause_ms;         /* pause before each piece */
    int hang_ms;          /* then keep the connection open (until the peer closes) */
    int cut;              /* close without the final zero-length chunk */
    int silent;           /* send nothing at all, only hang */
};

struct srv {
    int fd;
    int port;
    pthread_t thread;
    atomic_int stop;
    const struct srv_resp *script;
    int nscript;
    pthread_mutex_t lock;
    int nconn;
    char req[SRV_MAX_CONN][SRV_REQ_MAX];
};

#define HEAD_OK "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"

static void srv_send(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n <= 0) {
            return; /* the client went away; fine */
        }
        p += n;
        len -= (size_t)n;
    }
}

/* Wait up to ms for the peer to close (or send anything); checks stop. */
static void srv_hang(struct srv *srv, int fd, int ms)
{
    int64_t end = fr_mono_ms() + ms;
    while (!atomic_load(&srv->stop) && fr_mono_ms() < end) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 20) > 0) {
            char tmp[256];
            if (recv(fd, tmp, sizeof tmp, 0) <= 0) {
                return;
            }
        }
    }
}

static void srv_serve(struct srv *srv, int fd)
{
    char req[SRV_REQ_MAX];
    size_t len = 0;
    int64_t deadline = fr_mono_ms() + 3000;
    while (len < sizeof req - 1 && fr_mono_ms() < deadline) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0) {
            continue;
        }
        ssize_t n = recv(fd, req + len, sizeof req - 1 - len, 0);
        if (n <= 0) {
            return;
        }
        len += (size_t)n;
        req[len] = 0;
        if (strstr(req, "\r\n\r\n")) {
            break;
        }
    }
    req[len] = 0;
    pthread_mutex_lock(&srv->lock);
    int k = srv->nconn++;
    if (k < SRV_MAX_CONN) {
        memcpy(srv->req[k], req, len + 1);
    }
    pthread_mutex_unlock(&srv->lock);
    const struct srv_resp *r = &srv->script[k < srv->nscript ? k : srv->nscript - 1];
    if (r->silent) {
        srv_hang(srv, fd, r->hang_ms);
        return;
    }
    char head[1024];
    int n = snprintf(head, sizeof head, "%sTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
                     r->head);
    srv_send(fd, head, (size_t)n);
    for (int i = 0; i < 10 && r->body[i]; i++) {
        if (r->pause_ms) {
            fr_sleep_ms(r->pause_ms);
        }
        size_t blen = strlen(r->body[i]);
        n = snprintf(head, sizeof head, "%zx\r\n", blen);
        srv_send(fd, head, (size_t)n);
        srv_send(fd, r->body[i], blen);
        srv_send(fd, "\r\n", 2);
    }
    if (r->hang_ms) {
        srv_hang(srv, fd, r->hang_ms);
    }
    if (!r->cut) {
        srv_send(fd, "0\r\n\r\n", 5);
    }
}

static void *srv_main(void *arg)
{
    struct srv *srv = arg;
    while (!atomic_load(&srv->stop)) {
        struct pollfd p = {.fd = srv->fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0) {
            continue;
        }
        int fd = accept(srv->fd, NULL, NULL);
        if (fd < 0) {
            continue;
        }
        srv_serve(srv, fd);
        shutdown(fd, SHUT_RDWR);
        close(fd);
    }
    return NULL;
}

static void srv_start(struct srv *srv, const struct srv_resp *script, int nscript)
{
    memset(srv, 0, sizeof *srv);
    srv->script = script;
    srv->nscript = nscript;
    pthread_mutex_init(&srv->lock, NULL);
    srv->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (srv->fd < 0 || bind(srv->fd, (struct sockaddr *)&a, sizeof a) < 0 ||
        listen(srv->fd, 8) < 0) {
        perror("test server");
        exit(1);
    }
    socklen_t alen = sizeof a;
    getsockname(srv->fd, (struct sockaddr *)&a, &alen);
    srv->port = ntohs(a.sin_port);
    pthread_create(&srv->thread, NULL, srv_main, srv);
}

static void srv_stop(struct srv *srv)
{
    atomic_store(&srv->stop, 1);
    pthread_join(srv->thread, NULL);
    close(srv->fd);
    pthread_mutex_destroy(&srv->lock);
}

static int srv_nconn(struct srv *srv)
{
    pthread_mutex_lock(&srv->lock);
    int n = srv->nconn;
    pthread_mutex_unlock(&srv->lock);
    return n;
}

/* Value of header name in request k ("" if absent, "(none)" if no request). */
static const char *srv_header(struct srv *srv, int k, const char *name)
{
    static char out[1024];
    strcpy(out, "(none)");
    if (k >= srv_nconn(srv)) {
        return out;
    }
    out[0] = 0;
    size_t nlen = strlen(name);
    for (const char *line = strstr(srv->req[k], "\r\n"); line; line = strstr(line, "\r\n")) {
        line += 2;
        if (strncasecmp(line, name, nlen) == 0 && line[nlen] == ':') {
            const char *v = line + nlen + 1;
            while (*v == ' ') {
                v++;
            }
            const char *e = strstr(v, "\r\n");
            size_t n = e ? (size_t)(e - v) : strlen(v);
            n = n < sizeof out - 1 ? n : sizeof out - 1;
            memcpy(out, v, n);
            out[n] = 0;
            return out;
        }
    }
    return out;
}

/* ------------------------------------------------------------ harness */

#define UA "freshet/0.1.0 (https://github.com/freshet; freshet@example.org) libcurl/7.88.1"

struct harness {
    struct srv srv;
    struct fr_sse_client *client;
    struct fr_sse_client_opts opts;
    int fake_clock;
    int64_t clock_offset;

    int nevents;
    char ids[32][128];
    char data[32][256];
    char types[32][32];
    int stop_after_events; /* fr_sse_client_stop after this many; 0 = never */
    int fail_code;         /* on_event returns this (once) */
    int stop_after_ends;   /* stop from on_reconnect after this many ends */

    char resume[256];  /* what resume_id returns ("" = none) */
    int resume_prefix; /* set resume to "R:" + id after each event */
    int bad_resume_calls;
    char bad_resume_id[256];

    int nends;
    int why[32];
    long status[32];
    int64_t delay[32];
};

static int64_t fake_now(void *ctx)
{
    struct harness *h = ctx;
    return fr_mono_ms() + h->clock_offset;
}

static void fake_sleep(void *ctx, int64_t ms)
{
    struct harness *h = ctx;
    h->clock_offset += ms; /* time passes without waiting */
}

static const struct fr_sse_ops fake_ops = {fake_now, fake_sleep};

static int h_on_event(void *arg, const struct fr_sse_event *event)
{
    struct harness *h = arg;
    if (h->nevents < 32) {
        snprintf(h->ids[h->nevents], sizeof h->ids[0], "%s", event->id);
        snprintf(h->types[h->nevents], sizeof h->types[0], "%s", event->type);
        snprintf(h->data[h->nevents], sizeof h->data[0], "%.*s", (int)event->data_len, event->data);
    }
    h->nevents++;
    if (h->resume_prefix) {
        snprintf(h->resume, sizeof h->resume, "R:%s", event->id);
    }
    if (h->stop_after_events && h->nevents >= h->stop_after_events) {
        fr_sse_client_stop(h->client);
    }
    if (h->fail_code) {
        int rc = h->fail_code;
        h->fail_code = 0;
        return rc;
    }
    return 0;
}

static const char *h_resume_id(void *arg)
{
    struct harness *h = arg;
    return h->resume;
}

static void h_on_bad_resume(void *arg, const char *rejected)
{
    struct harness *h = arg;
    h->bad_resume_calls++;
    snprintf(h->bad_resume_id, sizeof h->bad_resume_id, "%s", rejected);
}

static void h_on_reconnect(void *arg, enum fr_sse_end why, long status, int64_t delay_ms)
{
    struct harness *h = arg;
    if (h->nends < 32) {
        h->why[h->nends] = (int)why;
        h->status[h->nends] = status;
        h->delay[h->nends] = delay_ms;
    }
    h->nends++;
    if (h->stop_after_ends && h->nends >= h->stop_after_ends) {
        fr_sse_client_stop(h->client);
    }
}

/* Start the server and fill default options; tests adjust opts, then call
 * h_create. */
static void h_init(struct harness *h, const struct srv_resp *script, int nscript, int fake)
{
    memset(h, 0, sizeof *h);
    srv_start(&h->srv, script, nscript);
    static char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v2/stream/recentchange", h->srv.port);
    h->fake_clock = fake;
    h->opts.url = url;
    h->opts.user_agent = UA;
    h->opts.on_event = h_on_event;
    h->opts.arg = h;
    h->opts.resume_id = h_resume_id;
    h->opts.on_bad_resume = h_on_bad_resume;
    h->opts.on_reconnect = h_on_reconnect;
    h->opts.min_backoff_ms = 100;
    h->opts.max_backoff_ms = 10000;
    h->opts.stall_timeout_ms = 10000;
    h->opts.connect_timeout_ms = 2000;
    h->opts.seed = 12345;
    if (fake) {
        h->opts.ops = &fake_ops;
        h->opts.ops_ctx = h;
    }
}

static void h_create(struct harness *h)
{
    CHECK_EQ_INT(fr_sse_client_create(&h->opts, &h->client), FR_OK);
    if (!h->client) {
        exit(1);
    }
}

static void h_done(struct harness *h)
{
    fr_sse_client_destroy(h->client);
    srv_stop(&h->srv);
}

static struct fr_sse_client_stats h_stats(struct harness *h)
{
    struct fr_sse_client_stats stats;
    fr_sse_client_stats(h->client, &stats);
    return stats;
}

/* -------------------------------------------------------------- tests */

static void test_resume_with_caller_id(void)
{
    static const struct srv_resp script[] = {
        {.head = HEAD_OK,
         .body = {":ok\n\n", "event: message\nid: a1\ndata: {\"n\":1}\n\n",
                  "event: message\nid: a2\ndata: {\"n\":2}\n\n"}},
        {.head = HEAD_OK,
         .body = {":ok\n\n", "event: message\nid: b1\ndata: {\"n\":3}\n\n"},
         .hang_ms = 5000},
    };
    struct harness h;
    h_init(&h, script, 2, 1);
    h.resume_prefix = 1; /* the caller's rule: "R:" + the last id */
    h.stop_after_events = 3;
    h_create(&h);
    CHECK_EQ_INT(fr_sse_client_run(h.client), FR_OK);
    CHECK_EQ_INT(h.nevents, 3);
    CHECK_EQ_STR(h.ids[0], "a1");
    CHECK_EQ_STR(h.ids[2], "b1");
    CHECK_EQ_STR(h.data[1], "{\"n\":2}");
    CHECK_EQ_STR(h.types[0], "message");
    CHECK_EQ_INT(srv_nconn(&h.srv), 2);
    CHECK_EQ_STR(srv_header(&h.srv, 0, "Last-Event-ID"), ""); /* nothing to resume yet */
    CHECK_EQ_STR(srv_header(&h.srv, 1, "Last-Event-ID"), "R:a2");
    CHECK_EQ_STR(srv_header(&h.srv, 0, "User-Agent"), UA);
    CHECK_EQ_STR(srv_header(&h.srv, 0, "Accept"), "text/event-stream");
    CHECK_EQ_STR(srv_header(&h.srv, 1, "Cache-Control"), "no-cache");
    CHECK(strncmp(h.srv.req[0], "GET /v2/stream/recentchange HTTP/1.1\r\n", 38) == 0);
    CHECK_EQ_INT(h.nends, 1);
    CHECK_EQ_INT(h.why[0], FR_SSE_END_EOF);
    CHECK_EQ_INT(h.status[0], 200);
    CHECK_EQ_INT(h.delay[0], 100); /* healthy end: the base delay, no jitter */
    struct fr_sse_client_stats st = h_stats(&h);
    CHECK_EQ_INT(st.attempts, 2);
    CHECK_EQ_INT(st.connects, 2);
    CHECK_EQ_INT(st.reconnects, 1);
    CHECK_EQ_INT(st.events, 3);
    CHECK_EQ_INT(st.comments, 2);
    CHECK(st.bytes > 100);
    h_done(&h);
}

static void test_default_resume_is_parser_last_id(void)
{
    /* resume_id NULL: the parser's last-event-id is sent, and a `:ok`
     * prelude on a connection that then drops does not erase it. The first
     * connection ends with a cut chunked body (as Wikimedia's do). */
    static const struct srv_resp script[] = {
        {.head = HEAD_OK,
         .body = {":ok\n\n", "id: x1\ndata: 1\n\n", "id: x2\ndata: 2\n\nid: x3\ndata: partial"},
         .cut = 1},
        {.head = HEAD_OK, .body = {":ok\n\n"}},
        {.head = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n",
         .body = {"busy"}},
    };
    struct harness h;
    h_init(&h, script, 3, 1);
    h.opts.resume_id = NULL;
    h.stop_after_ends = 3;
    h_create(&h);
    CHECK_EQ_INT(fr_sse_client_run(h.client), FR_OK);
    CHECK_EQ_INT(h.nevents, 2);
    CHECK_EQ_INT(srv_nconn(&h.srv), 3);
    CHECK_EQ_STR(srv_header(&h.srv, 0, "Last-Event-ID"), "");
    CHECK_EQ_STR(srv_header(&h.srv, 1, "Last-Event-ID"), "x2");
    CHECK_EQ_STR(srv_header(&h.srv, 2, "Last-Event-ID"), "x2");
    CHECK_EQ_INT(h.why[0], FR_SSE_END_EOF); /* a cut body is a normal end */
    CHECK_EQ_INT(h.why[1], FR_SSE_END_EOF);
    CHECK_EQ_INT(h.why[2], FR_SSE_END_HTTP);
    CHECK_EQ_INT(h.status[2], 503);
    struct fr_sse_client_stats st = h_stats(&h);
    CHECK_EQ_INT(st.truncated, 1); /* "id: x3 / data: partial" was dropped */
    CHECK_EQ_INT(st.http_5xx, 1);
    h_done(&h);
}

static void test_stall_timeout_reconnects(void)
{
    static const struct srv_resp script[] = {
        {.head = HEAD_OK, .body = {":ok\n\n", "id: s1\ndata: 1\n\n"}, .hang_ms = 5000},
        {.head = HEAD_OK, .body = {":ok\n\n", "id: s2\ndata: 2\n\n"}, .hang_ms = 5000},
    };
    struct harness h;
    h_init(&h, script, 2, 0);
    h.opts.stall_timeout_ms = 300;
    h.opts.min_backoff_ms = 10;
    h.stop_after_events = 2;
    h.resume_prefix = 1;
    h_create(&h);
    int64_t t0 = fr_mono_ms();
    CHECK_EQ_INT(fr_sse_client_run(h.client), FR_OK);
    int64_t elapsed = fr_mono_ms() - t0;
    CHECK(elapsed >= 300);
    CHECK(elapsed < 1500);
    CHECK_EQ_INT(h.nevents, 2);
    CHECK_EQ_INT(h.why[0], FR_SSE_END_STALL);
    CHECK_EQ_INT(h.delay[0], 10); /* the connection was healthy: base delay */
    CHECK_EQ_STR(srv_header(&h.srv, 1, "Last-Event-ID"), "R:s1");
    struct fr_sse_client_stats st = h_stats(&h);
    CHECK_EQ_INT(st.stalls, 1);
    CHECK_EQ_INT(st.connects, 2);
    h_done(&h);
}

static void test_stall_before_any_byte(void)
{
    /* A server that accepts but never answers: the stall clock runs from
     * the request, not only from the first byte. */
    static const struct srv_resp script[] = {
        {.head = HEAD_OK, .body = {NULL}, .hang_ms = 5000, .silent = 1},
    };
    struct harness h;
    h_init(&h, script, 1, 0);
    h.opts.stall_timeout_ms = 200;
    h.opts.min_backoff_ms = 10;
    h.stop_after_ends = 2;
    h_create(&h);
    int64_t t0 = fr_mono_ms();
    CHECK_EQ_INT(fr_sse_client_run(h.client), FR_OK);
    int64_t elapsed = fr_mono_ms() - t0;
    CHECK(elapsed >= 400);
    CHECK(elapsed < 2000);
    CHECK_EQ_INT(h.why[0], FR_SSE_END_STALL);
    CHECK_EQ_INT(h.why[1], FR_SSE_END_STALL);
    CHECK(h.delay[1] >= 10 && h.delay[1] <= 40); /* unhealthy: failures grow the range */
    CHECK_EQ_INT(h_stats(&h).stalls, 2);
    h_done(&h);
}

static void test_429_and_5xx_backoff(void)
{
    static const struct srv_resp script[] = {
        {.head = "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nContent-Type: "
                 "application/json\r\n",
         .body = {"{\"title\":\"Too Many Concurrent Connections From Your Client IP\"}"}},
        {.head = "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n",
         .body = {"{}"}},
        {.head = "HTTP/1.1 500 Internal Server Error\r\n", .body = {"oops"}},
        {.head = "HTTP/1.1 503 Service Unavailable\r\n", .body = {"oops"}},
        {.head = HEAD_OK, .body = {"data: finally\n\n"}, .hang_ms = 5000},
    };
    struct harness h;
    h_init(&h, script, 5, 1);
    h.stop_after_events = 1;
    h_create(&h);
    int64_t t0 = fr_mono_ms();
    CHECK_EQ_INT(fr_sse_client_run(h.client), FR_OK);
    CHECK(fr_mono_ms() - t0 < 3000); /* the fake clock did the waiting */
    CHECK_EQ_INT(h.nevents, 1);
    CHECK_EQ_INT(h.nends, 4);
    CHECK_EQ_INT(h.status[0], 429);
    CHECK_EQ_INT(h.delay[0], 7000); /* Retry-After honoured */
    /* 429 without Retry-After, 2nd failure: upper half of min*2^(2+2) = 1600. */
    CHECK_EQ_INT(h.status[1], 429);
    CHECK(h.delay[1] >= 800 && h.delay[1] <= 1600);
    /* 5xx: full jitter in [base, min(max, base*2^failures)]. */
    CHECK_EQ_INT(h.status[2], 500);
    CHECK(h.delay[2] >= 100 && h.delay[2] <= 800);
    CHECK_EQ_INT(h.status[3], 503);
    CHECK(h.delay[3] >= 100 && h.delay[3] <= 1600);
    struct fr_sse_client_stats st = h_stats(&h);
    CHECK_EQ_INT(st.http_429, 2);
    CHECK_EQ_INT(st.http_5xx, 2);
    CHECK_EQ_INT(st.connects, 1);
    CHECK_EQ_INT(st.backoff_ms, h.delay[0] + h.delay[1] + h.delay[2] + h.delay[3]);
    h_done(&h);
}

static void test_backoff_grows_to_max_and_resets(void)
{
    /* Eight 500s: the ceiling doubles up to max; then a healthy connection
     * resets the count, so the next failure is back in the first range. */
    static const struct srv_resp script[] = {
        {.head = "HTTP/1.1 500 Internal Server Error\r\n", .body = {"x"}},
        {.head = "HTTP/1.1 500 Internal Server Error\r\n", .body = {"x"}},
        {.head = "HTTP/1.1 500 Internal Server Error\r\n", .body = {"x"}},
        {.head = "HTTP/1.1 500 Internal Server Error\r\n", .body = {"x"}},
        {.head = "HTTP/1.1 500 Internal Server Error\r\n", .body = {"x"}},
        {.head = "HTTP/1.1 500 Internal Server Error\r\n", .body = {"x"}},
        {.head = "HTTP/1.1 500 Internal Server Error\r\n", .body = {"x"}},
        {.head = "HTTP/1.1 500 Internal Server Error\r\n", .body = {"x"}},
        {.head = HEAD_OK, .body = {"data: ok\n\n"}},
        {.head = "HTTP/1.1 502 Bad Gateway\r\n", .body = {"x"}},
    };
    struct harness h;
    h_init(&h, script, 10, 1);
    h.opts.max_backoff_ms = 3000;
    h.stop_after_ends = 10;
    h_create(&h);
    CHECK_EQ_INT(fr_sse_client_run(h.client), FR_OK);
    CHECK_EQ_INT(h.nends, 10);
    int64_t ceiling = 100;
    for (int i = 0; i < 8; i++) {
        ceiling = ceiling * 2 > 3000 ? 3000 : ceiling * 2;
        CHECK(h.delay[i] >= 100 && h.delay[i] <= ceiling);
    }
    CHECK_EQ_INT(h.why[8], FR_SSE_END_EOF);
    CHECK_EQ_INT(h.delay[8], 100);
    CHECK(h.delay[9] >= 100 && h.delay[9] <= 200);
    h_done(&h);
}

static void test_retry_field_sets_base_delay(void)
{
    static const struct srv_resp script[] = {
        {.head = HEAD_OK, .body = {"retry: 250\n\nid: r1\ndata: 1\n\n"}},
        {.head = HEAD_OK, .body = {"data: 2\n\n"}, .hang_ms = 5000},
    };
    struct harness h;
    h_init(&h, script, 2, 1);
    h.stop_after_events = 2;
    h_create(&h);
    CHECK_EQ_INT(fr_sse_client_run(h.client), FR_OK);
    CHECK_EQ_INT(h.delay[0], 250);
    h_done(&h);
}

static void test_400_calls_hook_and_drops_resume(void)
{
    static const struct srv_resp script[] = {
        {.head = HEAD_OK, .body = {"id: old\ndata: 1\n\n"}},
        {.head = "HTTP/1.1 400 Bad Request\r\nContent-Type: application/problem+json\r\n",
         .body = {"{\"title\":\"Invalid Last-Event-ID\"}"}},
        {.head = HEAD_OK, .body = {"id: new\ndata: 2\n\n"}, .hang_ms = 5000},
    };
    struct harness h;
    h_init(&h, script, 3, 1);
    h.stop_after_events = 2;
    h_create(&h);
    snprintf(h.resume, sizeof h.resume, "old"); /* the hook leaves it as is */
    CHECK_EQ_INT(fr_sse_client_run(h.client), FR_OK);
    CHECK_EQ_INT(h.bad_resume_calls, 1);
    CHECK_EQ_STR(h.bad_resume_id, "old");
    CHECK_EQ_STR(srv_header(&h.srv, 1, "Last-Event-ID"), "old");
    CHECK_EQ_STR(srv_header(&h.srv, 2, "Last-Event-ID"), ""); /* sent without it */
    CHECK_EQ_INT(h.why[1], FR_SSE_END_HTTP);
    CHECK_EQ_INT(h.status[1], 400);
    CHECK_EQ_INT(h_stats(&h).http_400, 1);
    CHECK_EQ_INT(h.nevents, 2);
    h_done(&h);
}

static void test_400_without_resume_is_config_error(void)
{
    static const struct srv_resp script[] = {
        {.head = "HTTP/1.1 400 Bad Request\r\n", .body = {"{\"title\":\"Stream Not Found\"}"}},
    };
    struct harness h;
    h_init(&h, script, 1, 1);
    h_create(&h);
    CHECK_EQ_INT(fr_sse_client_run(h.client), FR_ECONFIG);
    CHECK_EQ_INT(h.bad_resume_calls, 0);
    CHECK_EQ_INT(h.nends, 1);
    CHECK_EQ_INT(h.delay[0], -1); /* not reconnecting */
    CHECK_EQ_INT(srv_nconn(&h.srv), 1);
    h_done(&h);
}

static void test_403_backs_off_to_max_then_fails(void)
{
    static const struct srv_resp script[] = {
        {.head = "HTTP/1.1 403 Forbidden\r\n", .body = {"Please set a user-agent"}},
    };
    struct harness h;
    h_init(&h, script, 1, 1);
    h.opts.forbidden_limit = 3;
    h_create(&h);
    CHECK_EQ_INT(fr_sse_client_run(h.client), FR_EFORBIDDEN);
    CHECK_EQ_INT(srv_nconn(&h.srv), 3);
    CHECK_EQ_INT(h.nends, 3);
    CHECK_EQ_INT(h.delay[0], 10000); /* max_backoff_ms */
    CHECK_EQ_INT(h.delay[1], 10000);
    CHECK_EQ_INT(h.delay[2], -1);
    CHECK_EQ_INT(h_stats(&h).http_403, 3);
    h_done(&h);
}

static void test_error_event_closes_and_reconnects(void)
{
    /* The server sends `event: error` and (unlike KafkaSSE) keeps the
     * connection open: the client closes it at once rather than waiting for
     * the stall timeout. The error frame is not delivered as an event. */
    static const struct srv_resp script[] = {
        {.head = HEAD_OK,
         .body = {":ok\n\n", "event: message\nid: e1\ndata: {\"ok\":1}\n\n",
                  "event: error\nid: e1\ndata: {\"message\":\"Kafka went away\"}\n\n"},
         .hang_ms = 5000},
        {.head = HEAD_OK,
         .body = {"event: message\nid: e2\ndata: {\"ok\":2}\n\n"},
         .hang_ms = 5000},
    };
    struct harness h;
    h_init(&h, script, 2, 0);
    h.opts.min_backoff_ms = 10;
    h.resume_prefix = 1;
    h.stop_after_events = 2;
    h_create(&h);
    int64_t t0 = fr_mono_ms();
    CHECK_EQ_INT(fr_sse_client_run(h.client), FR_OK);
    CHECK(fr_mono_ms() - t0 < 1500);
    CHECK_EQ_INT(h.nevents, 2);
    CHECK_EQ_STR(h.types[0], "message");
    CHECK_EQ_STR(h.types[1], "message");
    CHECK_EQ_INT(h.why[0], FR_SSE_END_ERROR_EVENT);
    CHECK_EQ_STR(srv_header(&h.srv, 1, "Last-Event-ID"), "R:e1");
    struct fr_sse_client_stats st = h_stats(&h);
    CHECK_EQ_INT(st.error_events, 1);
    CHECK_EQ_INT(st.events, 2);
    h_done(&h);
}

static void test_chunk_boundaries(void)
{
    /* HTTP chunks cut lines, fields and CRLF pairs; 20 ms apart so libcurl
     * hands them over one by one. */
    static const struct srv_resp script[] = {
        {.head = HEAD_OK,
         .body = {"\xEF\xBB", "\xBF:ok\r", "\n\r", "\ndata: a\r", "\ndata: b\r", "\n\r", "\nid: 1",
                  "0\ndata: c", "\n", "\n"},
         .pause_ms = 20,
         .hang_ms = 5000},
    };
    struct harness h;
    h_init(&h, script, 1, 0);
    h.stop_after_events = 2;
    h_create(&h);
    CHECK_EQ_INT(fr_sse_client_run(h.client), FR_OK);
    CHECK_EQ_INT(h.nevents, 2);
    CHECK_EQ_STR(h.data[0], "a\nb");
    CHECK_EQ_STR(h.ids[0], "");
    CHECK_EQ_STR(h.data[1], "c");
    CHECK_EQ_STR(h.ids[1], "10");
    h_done(&h);
}

static void test_wrong_content_type(void)
{
    static const struct srv_resp script[] = {
        {.head = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n",
         .body = {"<html>data: no\n\n</html>"}},
        {.head = HEAD_OK, .body = {"data: yes\n\n"}, .hang_ms = 5000},
    };
    struct harness h;
    h_init(&h, script, 2, 1);
    h.stop_after_events = 1;
    h_create(&h);
    CHECK_EQ_INT(fr_sse_client_run(h.client), FR_OK);
    CHECK_EQ_INT(h.nevents, 1);
    CHECK_EQ_STR(h.data[0], "yes");
    CHECK_EQ_INT(h.why[0], FR_SSE_END_PROTO);
    CHECK_EQ_INT(h_stats(&h).proto_errors, 1);
    CHECK_EQ_INT(h_stats(&h).connects, 1);
    h_done(&h);
}

static void test_oversize_event_skipped(void)
{
    static char big[1200];
    memset(big, 'x', sizeof big - 1);
    memcpy(big, "data: ", 6);
    big[sizeof big - 3] = '\n';
    big[sizeof big - 2] = '\n';
    const struct srv_resp script[] = {
        {.head = HEAD_OK, .body = {big, "data: small\n\n"}, .hang_ms = 5000},
    };
    struct harness h;
    h_init(&h, script, 1, 0);
    h.opts.max_event_bytes = 512;
    h.stop_after_events = 1;
    h_create(&h);
    CHECK_EQ_INT(fr_sse_client_run(h.client), FR_OK);
    CHECK_EQ_INT(h.nevents, 1);
    CHECK_EQ_STR(h.data[0], "small");
    CHECK_EQ_INT(h_stats(&h).oversize, 1);
    h_done(&h);
}

static void test_callback_abort(void)
{
    static const struct srv_resp script[] = {
        {.head = HEAD_OK, .body = {"data: 1\n\ndata: 2\n\n"}, .hang_ms = 5000},
    };
    struct harness h;
    h_init(&h, script, 1, 0);
    h.fail_code = FR_EJSON;
    h_create(&h);
    CHECK_EQ_INT(fr_sse_client_run(h.client), FR_EJSON);
    CHECK_EQ_INT(h.nevents, 1);
    CHECK_EQ_INT(h.nends, 0);
    CHECK_EQ_INT(h_stats(&h).attempts, 1);
    h_done(&h);
}

static void test_bad_resume_value_rejected(void)
{
    static const struct srv_resp script[] = {{.head = HEAD_OK, .body = {"data: 1\n\n"}}};
    struct harness h;
    h_init(&h, script, 1, 1);
    h_create(&h);
    snprintf(h.resume, sizeof h.resume, "id\r\nX-Injected: 1");
    CHECK_EQ_INT(fr_sse_client_run(h.client), FR_EINVAL);
    CHECK_EQ_INT(srv_nconn(&h.srv), 0); /* nothing was sent */
    h_done(&h);
}

static void test_connection_refused(void)
{
    /* A port that was just free on 127.0.0.1: nothing listens there. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, (struct sockaddr *)&a, sizeof a);
    socklen_t alen = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &alen);
    close(fd);
    static const struct srv_resp script[] = {{.head = HEAD_OK, .body = {NULL}}};
    struct harness h;
    h_init(&h, script, 1, 1);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v2/stream/recentchange", ntohs(a.sin_port));
    h.opts.url = url;
    h.stop_after_ends = 3;
    h_create(&h);
    CHECK_EQ_INT(fr_sse_client_run(h.client), FR_OK);
    CHECK_EQ_INT(h.why[0], FR_SSE_END_NET);
    CHECK_EQ_INT(h.status[0], 0);
    CHECK_EQ_INT(h_stats(&h).net_errors, 3);
    CHECK_EQ_INT(h_stats(&h).connects, 0);
    h_done(&h);
}

/* ------------------------------------------------------------- stopping */

static volatile sig_atomic_t sig_stop;
static _Atomic int64_t sig_at_ms;

static void on_alarm(int signo)
{
    (void)signo;
    sig_stop = 1; /* what freshet's main does for SIGTERM */
    atomic_store(&sig_at_ms, fr_mono_ms());
}

static void test_stop_flag_from_signal_while_streaming(void)
{
    static const struct srv_resp script[] = {
        {.head = HEAD_OK, .body = {":ok\n\n", "data: 1\n\n"}, .hang_ms = 10000},
    };
    struct harness h;
    h_init(&h, script, 1, 0);
    sig_stop = 0;
    h.opts.stop = &sig_stop;
    h_create(&h);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {.it_value = {.tv_sec = 0, .tv_usec = 300000}};
    setitimer(ITIMER_REAL, &it, NULL);
    CHECK_EQ_INT(fr_sse_client_run(h.client), FR_OK);
    int64_t latency = fr_mono_ms() - atomic_load(&sig_at_ms);
    CHECK_EQ_INT(sig_stop, 1);
    CHECK(latency >= 0 && latency < 200);
    fprintf(stderr, "     stop latency (signal, streaming): %lld ms\n", (long long)latency);
    CHECK_EQ_INT(h.nevents, 1);
    signal(SIGALRM, SIG_DFL);
    h_done(&h);
}

struct stopper {
    struct fr_sse_client *client;
    int delay_ms;
    int64_t at_ms;
};

static void *stopper_main(void *arg)
{
    struct stopper *s = arg;
    fr_sleep_ms(s->delay_ms);
    s->at_ms = fr_mono_ms();
    fr_sse_client_stop(s->client);
    return NULL;
}

static void test_stop_from_thread_while_backing_off(void)
{
    static const struct srv_resp script[] = {
        {.head = "HTTP/1.1 500 Internal Server Error\r\n", .body = {"x"}},
    };
    struct harness h;
    h_init(&h, script, 1, 0);
    h.opts.min_backoff_ms = 5000;
    h.opts.max_backoff_ms = 5000;
    h_create(&h);
    struct stopper s = {h.client, 300, 0};
    pthread_t t;
    pthread_create(&t, NULL, stopper_main, &s);
    CHECK_EQ_INT(fr_sse_client_run(h.client), FR_OK);
    int64_t done = fr_mono_ms();
    pthread_join(t, NULL);
    CHECK(done - s.at_ms < 200);
    fprintf(stderr, "     stop latency (thread, backoff): %lld ms\n", (long long)(done - s.at_ms));
    CHECK_EQ_INT(srv_nconn(&h.srv), 1);
    CHECK_EQ_INT(h.nends, 1);
    /* The stop is sticky: a later run returns at once without connecting. */
    CHECK_EQ_INT(fr_sse_client_run(h.client), FR_OK);
    CHECK_EQ_INT(srv_nconn(&h.srv), 1);
    h_done(&h);
}

static void test_stop_from_thread_while_streaming(void)
{
    static const struct srv_resp script[] = {
        {.head = HEAD_OK, .body = {":ok\n\n", "data: 1\n\n"}, .hang_ms = 10000},
    };
    struct harness h;
    h_init(&h, script, 1, 0);
    h_create(&h);
    struct stopper s = {h.client, 350, 0};
    pthread_t t;
    pthread_create(&t, NULL, stopper_main, &s);
    CHECK_EQ_INT(fr_sse_client_run(h.client), FR_OK);
    int64_t done = fr_mono_ms();
    pthread_join(t, NULL);
    CHECK(done - s.at_ms < 200); /* the poll wakes at least every 100 ms */
    fprintf(stderr, "     stop latency (thread, streaming): %lld ms\n",
            (long long)(done - s.at_ms));
    CHECK_EQ_INT(h.nevents, 1);
    CHECK_EQ_INT(h.nends, 0);
    h_done(&h);
}

/* ------------------------------------------------------------- options */

static int noop_event(void *arg, const struct fr_sse_event *event)
{
    (void)arg;
    (void)event;
    return 0;
}

static void test_create_validation(void)
{
    struct fr_sse_client *client = NULL;
    struct fr_sse_client_opts o = {.url = "https://stream.wikimedia.org/v2/stream/recentchange",
                                   .user_agent = UA,
                                   .on_event = noop_event};
    /* Creating sends nothing, so a real URL is safe here. */
    CHECK_EQ_INT(fr_sse_client_create(&o, &client), FR_OK);
    fr_sse_client_destroy(client);
    fr_sse_client_destroy(NULL);

    struct fr_sse_client_opts bad = o;
    bad.url = NULL;
    CHECK_EQ_INT(fr_sse_client_create(&bad, &client), FR_EINVAL);
    CHECK(client == NULL);
    bad = o;
    bad.user_agent = "";
    CHECK_EQ_INT(fr_sse_client_create(&bad, &client), FR_EINVAL);
    bad = o;
    bad.user_agent = "freshet\r\nX-Evil: 1";
    CHECK_EQ_INT(fr_sse_client_create(&bad, &client), FR_EINVAL);
    bad = o;
    bad.on_event = NULL;
    CHECK_EQ_INT(fr_sse_client_create(&bad, &client), FR_EINVAL);
    bad = o;
    bad.url = "ftp://127.0.0.1/x";
    CHECK_EQ_INT(fr_sse_client_create(&bad, &client), FR_ECONFIG);
    bad = o;
    bad.url = "not a url";
    CHECK_EQ_INT(fr_sse_client_create(&bad, &client), FR_ECONFIG);
    bad = o;
    bad.min_backoff_ms = 5000;
    bad.max_backoff_ms = 1000;
    CHECK_EQ_INT(fr_sse_client_create(&bad, &client), FR_ECONFIG);
    bad = o;
    bad.stall_timeout_ms = -1;
    CHECK_EQ_INT(fr_sse_client_create(&bad, &client), FR_ECONFIG);
    bad = o;
    bad.max_event_bytes = 10;
    CHECK_EQ_INT(fr_sse_client_create(&bad, &client), FR_EINVAL);
    CHECK(client == NULL);
}

int main(void)
{
    /* Never route test traffic through a proxy: 127.0.0.1 only. */
    static const char *proxies[] = {"http_proxy",  "HTTP_PROXY", "https_proxy",
                                    "HTTPS_PROXY", "all_proxy",  "ALL_PROXY"};
    for (size_t i = 0; i < sizeof proxies / sizeof proxies[0]; i++) {
        unsetenv(proxies[i]);
    }
    fr_diag_set_level(getenv("FR_TEST_VERBOSE") ? FR_DIAG_DEBUG : FR_DIAG_ERROR);
    RUN(test_resume_with_caller_id);
    RUN(test_default_resume_is_parser_last_id);
    RUN(test_stall_timeout_reconnects);
    RUN(test_stall_before_any_byte);
    RUN(test_429_and_5xx_backoff);
    RUN(test_backoff_grows_to_max_and_resets);
    RUN(test_retry_field_sets_base_delay);
    RUN(test_400_calls_hook_and_drops_resume);
    RUN(test_400_without_resume_is_config_error);
    RUN(test_403_backs_off_to_max_then_fails);
    RUN(test_error_event_closes_and_reconnects);
    RUN(test_chunk_boundaries);
    RUN(test_wrong_content_type);
    RUN(test_oversize_event_skipped);
    RUN(test_callback_abort);
    RUN(test_bad_resume_value_rejected);
    RUN(test_connection_refused);
    RUN(test_stop_flag_from_signal_while_streaming);
    RUN(test_stop_from_thread_while_backing_off);
    RUN(test_stop_from_thread_while_streaming);
    RUN(test_create_validation);
    return check_report();
}
