/*
 * client.c — the reconnecting SSE client over libcurl.
 *
 * Owns: one libcurl multi handle with one easy handle, one parser, the
 * request header list and the per-connection state. fr_sse_client_run()
 * drives everything on the calling thread; other threads (and signal
 * handlers) touch only the stop flag and the atomic counters.
 *
 * Why the multi interface with one handle: the loop is ours, so the stop
 * flag and the stall deadline are checked at least every 100 ms, and the
 * poll timeout is cut to the exact stall deadline. curl_easy_perform would
 * only wake its progress callback about once a second on an idle stream.
 *
 * Connection life cycle (one call of client_attempt):
 *
 *            build headers (resume id, unless the last one was refused)
 *                 │
 *                 ▼
 *   ┌──── poll ≤100 ms ◄──────────────┐
 *   │  bytes → parser → on_event ─────┘ (each byte resets the stall clock)
 *   │
 *   ├─ stop flag ──────────────────────────► STOPPED   run returns FR_OK
 *   ├─ on_event < 0 ───────────────────────► run returns that code
 *   ├─ `event: error` ─────────────────────► ERROR_EVENT (we close; the
 *   │                                        server would end it anyway)
 *   ├─ no byte for stall_timeout_ms ───────► STALL
 *   ├─ 200 but not text/event-stream ──────► PROTO
 *   ├─ 200, then EOF or a cut chunked body ► EOF (normal disconnect)
 *   ├─ another status ─────────────────────► HTTP
 *   └─ no response ────────────────────────► NET
 *
 * Then client_delay decides (docs/adr/0003-sse-client.md has the reasons):
 *   EOF/STALL after a healthy connection (200 + at least one event): wait
 *   the base delay (server `retry:`, else min_backoff_ms) and reset the
 *   failure count. Anything else counts one failure and waits
 *   uniform[base, min(max, base * 2^failures)] (full jitter above the
 *   base). 429: at least Retry-After (capped), else the upper half of a
 *   range four times larger. 403: max_backoff_ms; forbidden_limit in a row
 *   fails the run with FR_EFORBIDDEN. 400/404: if a Last-Event-ID was sent,
 *   on_bad_resume is told and the next request goes without one; if none
 *   was sent the URL itself is wrong and the run fails with FR_ECONFIG.
 *
 * TLS verification is always on (peer and host); there is no option to
 * turn it off. Only http and https are allowed, redirects are not followed.
 */
#include "sse/sse.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"

#include <assert.h>
#include <curl/curl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static_assert(ATOMIC_INT_LOCK_FREE == 2, "the stop flag must be lock-free to be signal-safe");

#define SSE_COMP "sse"
#define SSE_POLL_MS 100        /* longest wait between stop/stall checks */
#define SSE_SLEEP_SLICE_MS 50  /* longest single sleep while backing off */
#define SSE_MAX_RESUME_ID 8192 /* longest Last-Event-ID we send */
#define SSE_ERRBODY_MAX 512    /* bytes of an error response kept for the log */

enum sse_outcome {
    SSE_OUT_EOF = FR_SSE_END_EOF,
    SSE_OUT_STALL = FR_SSE_END_STALL,
    SSE_OUT_NET = FR_SSE_END_NET,
    SSE_OUT_HTTP = FR_SSE_END_HTTP,
    SSE_OUT_ERROR_EVENT = FR_SSE_END_ERROR_EVENT,
    SSE_OUT_PROTO = FR_SSE_END_PROTO,
    SSE_OUT_STOPPED,
};

/* The state of one connection, cleared before each request. */
struct sse_conn {
    long status;        /* HTTP status once known */
    int checked;        /* status and content type looked at */
    int accepted;       /* 200 text/event-stream: body goes to the parser */
    int abort;          /* a callback asked to end the transfer */
    int error_event;    /* the server sent `event: error` */
    int proto;          /* 200 with the wrong content type */
    int user_rc;        /* on_event's negative code, or 0 */
    int sent_resume;    /* the request carried Last-Event-ID */
    int64_t last_rx_ms; /* ops clock when the last byte arrived */
    uint64_t events;    /* events delivered on this connection */
    CURLcode result;    /* libcurl's result when the transfer ended */
    struct fr_buf body; /* start of a non-200 body, for the log */
};

struct sse_counters {
#define SSE_COUNTER(name) _Atomic uint64_t name;
    FR_SSE_CLIENT_STATS(SSE_COUNTER)
#undef SSE_COUNTER
};

struct fr_sse_client {
    char *url;
    char *user_agent;
    fr_sse_event_fn on_event;
    void *arg;
    const char *(*resume_id)(void *arg);
    void (*on_bad_resume)(void *arg, const char *rejected_id);
    void (*on_reconnect)(void *arg, enum fr_sse_end why, long status, int64_t delay_ms);
    int64_t min_backoff_ms;
    int64_t max_backoff_ms;
    int64_t stall_ms;
    int64_t retry_after_cap_ms;
    unsigned forbidden_limit;
    volatile sig_atomic_t *ext_stop;
    atomic_int stop;
    const struct fr_sse_ops *ops;
    void *ops_ctx;
    uint64_t rng;

    CURLM *multi;
    CURL *easy;
    struct curl_slist *headers;
    struct fr_sse_parser *parser;
    char errbuf[CURL_ERROR_SIZE];

    struct sse_conn conn;
    struct fr_buf resume; /* the Last-Event-ID value of the current request */
    struct fr_buf header; /* scratch for building the header line */
    unsigned failures;    /* consecutive failed connections */
    unsigned forbidden;   /* consecutive 403 answers */
    int skip_resume;      /* the next request goes without Last-Event-ID */
    int curl_inited;

    struct sse_counters stats;
};

#define STAT_ADD(client, name, n)                                                                  \
    atomic_fetch_add_explicit(&(client)->stats.name, (uint64_t)(n), memory_order_relaxed)
#define STAT_SET(client, name, v)                                                                  \
    atomic_store_explicit(&(client)->stats.name, (uint64_t)(v), memory_order_relaxed)

/* ------------------------------------------------------------------ ops */

static int64_t sse_real_now(void *ctx)
{
    (void)ctx;
    return fr_mono_ms();
}

static void sse_real_sleep(void *ctx, int64_t ms)
{
    (void)ctx;
    fr_sleep_ms(ms);
}

static const struct fr_sse_ops sse_real_ops = {sse_real_now, sse_real_sleep};

static int64_t sse_now(struct fr_sse_client *client)
{
    return client->ops->now_ms(client->ops_ctx);
}

static int sse_stopped(struct fr_sse_client *client)
{
    return atomic_load_explicit(&client->stop, memory_order_relaxed) ||
           (client->ext_stop && *client->ext_stop);
}

/* xorshift64*: jitter only, never security. */
static uint64_t sse_random(struct fr_sse_client *client)
{
    uint64_t x = client->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    client->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* ------------------------------------------------------------- helpers */

/* A header value may not hold control bytes other than tab. */
static int sse_header_safe(const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            return 0;
        }
    }
    return 1;
}

/* Copy up to max bytes of s for a log line, with control bytes as '?'. */
static void sse_printable(char *out, size_t cap, const char *s, size_t len)
{
    size_t n = len < cap - 1 ? len : cap - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        out[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    out[n] = 0;
}

/* ------------------------------------------------------- curl callbacks */

/* The parser's callback: intercept `event: error`, count, hand on. */
static int sse_on_parsed(void *arg, const struct fr_sse_event *event)
{
    struct fr_sse_client *client = arg;
    if (event->type_len == 5 && memcmp(event->type, "error", 5) == 0) {
        char text[320];
        sse_printable(text, sizeof text, event->data, event->data_len);
        STAT_ADD(client, error_events, 1);
        fr_warn(SSE_COMP, "server sent an error event (it ends the stream; reconnecting): %s",
                text);
        client->conn.error_event = 1;
        return FR_ECLOSED;
    }
    client->conn.events++;
    STAT_ADD(client, events, 1);
    int rc = client->on_event(client->arg, event);
    if (rc < 0) {
        client->conn.user_rc = rc;
    }
    return rc;
}

/* Look at the status and content type when the first body byte arrives. */
static void sse_check_response(struct fr_sse_client *client)
{
    struct sse_conn *conn = &client->conn;
    conn->checked = 1;
    curl_easy_getinfo(client->easy, CURLINFO_RESPONSE_CODE, &conn->status);
    if (conn->status != 200) {
        return;
    }
    const char *type = NULL;
    curl_easy_getinfo(client->easy, CURLINFO_CONTENT_TYPE, &type);
    if (!type || strncasecmp(type, "text/event-stream", 17) != 0 ||
        (type[17] != 0 && type[17] != ';' && type[17] != ' ')) {
        char text[128];
        sse_printable(text, sizeof text, type ? type : "(none)", strlen(type ? type : "(none)"));
        fr_error(SSE_COMP, "HTTP 200 with Content-Type %s, not text/event-stream", text);
        conn->proto = 1;
        return;
    }
    conn->accepted = 1;
}

static size_t sse_on_body(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct fr_sse_client *client = arg;
    struct sse_conn *conn = &client->conn;
    size_t len = size * nmemb;
    conn->last_rx_ms = sse_now(client);
    STAT_ADD(client, bytes, len);
    if (!conn->checked) {
        sse_check_response(client);
    }
    if (sse_stopped(client) || conn->proto) {
        conn->abort = 1;
        return 0;
    }
    if (!conn->accepted) {
        size_t room = SSE_ERRBODY_MAX - conn->body.len;
        fr_buf_append(&conn->body, ptr, len < room ? len : room);
        return len;
    }
    int rc = fr_sse_parser_feed(client->parser, ptr, len);
    struct fr_sse_parser_stats ps;
    fr_sse_parser_stats(client->parser, &ps);
    STAT_SET(client, oversize, ps.oversize);
    STAT_SET(client, comments, ps.comments);
    if (rc < 0) {
        if (!conn->user_rc && !conn->error_event) {
            conn->user_rc = rc; /* FR_ENOMEM from the parser */
        }
        conn->abort = 1;
        return 0;
    }
    return len;
}

static size_t sse_on_header(char *ptr, size_t size, size_t nmemb, void *arg)
{
    (void)ptr;
    struct fr_sse_client *client = arg;
    client->conn.last_rx_ms = sse_now(client);
    return size * nmemb;
}

/* ---------------------------------------------------------- life cycle */

static char *sse_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *copy = malloc(n);
    if (copy) {
        memcpy(copy, s, n);
    }
    return copy;
}

/* Reject URLs libcurl cannot parse and schemes other than http(s). */
static int sse_check_url(const char *url)
{
    int rc = FR_ECONFIG;
    char *scheme = NULL;
    CURLU *u = curl_url();
    if (!u) {
        return FR_ENOMEM;
    }
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK) {
        goto cleanup;
    }
    if (strcasecmp(scheme, "https") == 0 || strcasecmp(scheme, "http") == 0) {
        rc = FR_OK;
    }
cleanup:
    curl_free(scheme);
    curl_url_cleanup(u);
    return rc;
}

static int sse_setup_curl(struct fr_sse_client *client, int64_t connect_ms)
{
    CURL *h = client->easy;
    CURLcode e = CURLE_OK;
#define SSE_SET(opt, val)                                                                          \
    do {                                                                                           \
        if (e == CURLE_OK) {                                                                       \
            e = curl_easy_setopt(h, (opt), (val));                                                 \
        }                                                                                          \
    } while (0)
    SSE_SET(CURLOPT_URL, client->url);
    SSE_SET(CURLOPT_USERAGENT, client->user_agent);
    SSE_SET(CURLOPT_HTTPGET, 1L);
    SSE_SET(CURLOPT_NOSIGNAL, 1L);
    SSE_SET(CURLOPT_SSL_VERIFYPEER, 1L);
    SSE_SET(CURLOPT_SSL_VERIFYHOST, 2L);
    SSE_SET(CURLOPT_PROTOCOLS_STR, "http,https");
    SSE_SET(CURLOPT_FOLLOWLOCATION, 0L);
    SSE_SET(CURLOPT_CONNECTTIMEOUT_MS, (long)connect_ms);
    SSE_SET(CURLOPT_TCP_KEEPALIVE, 1L);
    SSE_SET(CURLOPT_BUFFERSIZE, 65536L);
    SSE_SET(CURLOPT_WRITEFUNCTION, sse_on_body);
    SSE_SET(CURLOPT_WRITEDATA, client);
    SSE_SET(CURLOPT_HEADERFUNCTION, sse_on_header);
    SSE_SET(CURLOPT_HEADERDATA, client);
    SSE_SET(CURLOPT_ERRORBUFFER, client->errbuf);
#undef SSE_SET
    if (e != CURLE_OK) {
        fr_error(SSE_COMP, "libcurl option setup failed: %s", curl_easy_strerror(e));
        return e == CURLE_OUT_OF_MEMORY ? FR_ENOMEM : FR_ECONFIG;
    }
    return FR_OK;
}

int fr_sse_client_create(const struct fr_sse_client_opts *opts, struct fr_sse_client **out)
{
    int rc;
    *out = NULL;
    if (!opts || !opts->url || !opts->url[0] || !opts->user_agent || !opts->user_agent[0] ||
        !opts->on_event || !sse_header_safe(opts->url) || !sse_header_safe(opts->user_agent)) {
        return FR_EINVAL;
    }
    if (opts->min_backoff_ms < 0 || opts->max_backoff_ms < 0 || opts->stall_timeout_ms < 0 ||
        opts->connect_timeout_ms < 0 || opts->retry_after_cap_ms < 0) {
        return FR_ECONFIG;
    }
    struct fr_sse_client *client = calloc(1, sizeof *client);
    if (!client) {
        return FR_ENOMEM;
    }
    client->on_event = opts->on_event;
    client->arg = opts->arg;
    client->resume_id = opts->resume_id;
    client->on_bad_resume = opts->on_bad_resume;
    client->on_reconnect = opts->on_reconnect;
    client->min_backoff_ms = opts->min_backoff_ms ? opts->min_backoff_ms : 1000;
    client->max_backoff_ms = opts->max_backoff_ms ? opts->max_backoff_ms : 60000;
    client->stall_ms = opts->stall_timeout_ms ? opts->stall_timeout_ms : 60000;
    client->retry_after_cap_ms = opts->retry_after_cap_ms ? opts->retry_after_cap_ms : 600000;
    client->forbidden_limit = opts->forbidden_limit ? opts->forbidden_limit : 5;
    client->ext_stop = opts->stop;
    atomic_init(&client->stop, 0);
    client->ops = opts->ops ? opts->ops : &sse_real_ops;
    client->ops_ctx = opts->ops_ctx;
    client->rng = opts->seed ? opts->seed : (uint64_t)fr_mono_ns() | 1;
    fr_buf_init(&client->conn.body, SSE_ERRBODY_MAX);
    fr_buf_init(&client->resume, SSE_MAX_RESUME_ID);
    fr_buf_init(&client->header, SSE_MAX_RESUME_ID + 64);
#define SSE_COUNTER_INIT(name) atomic_init(&client->stats.name, 0);
    FR_SSE_CLIENT_STATS(SSE_COUNTER_INIT)
#undef SSE_COUNTER_INIT
    int64_t connect_ms = opts->connect_timeout_ms ? opts->connect_timeout_ms : 15000;
    if (client->min_backoff_ms > client->max_backoff_ms || !client->ops->now_ms ||
        !client->ops->sleep_ms || connect_ms > LONG_MAX) {
        rc = FR_ECONFIG;
        goto cleanup;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        rc = FR_ENOMEM;
        goto cleanup;
    }
    client->curl_inited = 1;
    if ((rc = sse_check_url(opts->url)) < 0) {
        fr_error(SSE_COMP, "unusable stream URL (need http:// or https://)");
        goto cleanup;
    }
    if (!strchr(opts->user_agent, '(')) {
        fr_warn(SSE_COMP, "User-Agent \"%s\" has no (contact) part; Wikimedia may answer 403",
                opts->user_agent);
    }
    struct fr_sse_parser_opts popts = {
        .on_event = sse_on_parsed, .arg = client, .max_event_bytes = opts->max_event_bytes};
    if ((rc = fr_sse_parser_create(&popts, &client->parser)) < 0) {
        goto cleanup;
    }
    client->url = sse_strdup(opts->url);
    client->user_agent = sse_strdup(opts->user_agent);
    client->multi = curl_multi_init();
    client->easy = curl_easy_init();
    if (!client->url || !client->user_agent || !client->multi || !client->easy) {
        rc = FR_ENOMEM;
        goto cleanup;
    }
    if ((rc = sse_setup_curl(client, connect_ms)) < 0) {
        goto cleanup;
    }
    *out = client;
    return FR_OK;
cleanup:
    fr_sse_client_destroy(client);
    return rc;
}

void fr_sse_client_destroy(struct fr_sse_client *client)
{
    if (!client) {
        return;
    }
    if (client->easy) {
        curl_easy_cleanup(client->easy);
    }
    if (client->multi) {
        curl_multi_cleanup(client->multi);
    }
    curl_slist_free_all(client->headers);
    fr_sse_parser_destroy(client->parser);
    fr_buf_free(&client->conn.body);
    fr_buf_free(&client->resume);
    fr_buf_free(&client->header);
    free(client->url);
    free(client->user_agent);
    if (client->curl_inited) {
        curl_global_cleanup();
    }
    free(client);
}

void fr_sse_client_stop(struct fr_sse_client *client)
{
    atomic_store_explicit(&client->stop, 1, memory_order_relaxed);
}

void fr_sse_client_stats(const struct fr_sse_client *client, struct fr_sse_client_stats *out)
{
#define SSE_COUNTER_LOAD(name)                                                                     \
    out->name = atomic_load_explicit(&client->stats.name, memory_order_relaxed);
    FR_SSE_CLIENT_STATS(SSE_COUNTER_LOAD)
#undef SSE_COUNTER_LOAD
}

/* ------------------------------------------------------ one connection */

/* Build the request headers; decides and remembers the Last-Event-ID. */
static int sse_build_headers(struct fr_sse_client *client)
{
    int rc;
    const char *id;
    if (client->skip_resume) {
        id = NULL;
        client->skip_resume = 0;
    } else if (client->resume_id) {
        id = client->resume_id(client->arg);
    } else {
        id = fr_sse_parser_last_id(client->parser);
    }
    client->resume.len = 0;
    if (id && id[0]) {
        if (!sse_header_safe(id) || strlen(id) > SSE_MAX_RESUME_ID) {
            fr_error(SSE_COMP,
                     "resume id has control bytes or exceeds %d bytes; refusing to send it",
                     SSE_MAX_RESUME_ID);
            return FR_EINVAL;
        }
        if ((rc = fr_buf_puts(&client->resume, id)) < 0) {
            return rc;
        }
        fr_buf_cstr(&client->resume);
    }
    client->conn.sent_resume = client->resume.len > 0;

    curl_slist_free_all(client->headers);
    client->headers = NULL;
    static const char *const fixed[] = {"Accept: text/event-stream", "Cache-Control: no-cache"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        struct curl_slist *next = curl_slist_append(client->headers, fixed[i]);
        if (!next) {
            return FR_ENOMEM;
        }
        client->headers = next;
    }
    if (client->conn.sent_resume) {
        client->header.len = 0;
        if ((rc = fr_buf_printf(&client->header, "Last-Event-ID: %s",
                                (const char *)client->resume.data)) < 0) {
            return rc;
        }
        struct curl_slist *next = curl_slist_append(client->headers, fr_buf_cstr(&client->header));
        if (!next) {
            return FR_ENOMEM;
        }
        client->headers = next;
    }
    CURLcode e = curl_easy_setopt(client->easy, CURLOPT_HTTPHEADER, client->headers);
    return e == CURLE_OK ? FR_OK : FR_ENOMEM;
}

/* Run one request to its end. Returns a negative code only for what ends
 * the run (on_event's code, FR_ENOMEM, FR_EINVAL); *outcome says how the
 * connection ended otherwise. */
static int sse_attempt(struct fr_sse_client *client, enum sse_outcome *outcome)
{
    struct sse_conn *conn = &client->conn;
    struct fr_buf body = conn->body;
    memset(conn, 0, sizeof *conn);
    conn->body = body;
    conn->body.len = 0;
    conn->result = CURLE_OK;
    client->errbuf[0] = 0;

    int rc = sse_build_headers(client);
    if (rc < 0) {
        return rc;
    }
    if (atomic_load_explicit(&client->stats.attempts, memory_order_relaxed) > 0) {
        STAT_ADD(client, reconnects, 1);
    }
    STAT_ADD(client, attempts, 1);
    if (curl_multi_add_handle(client->multi, client->easy) != CURLM_OK) {
        return FR_ENOMEM;
    }
    conn->last_rx_ms = sse_now(client);
    int stalled = 0, done = 0;
    for (;;) {
        int running = 0;
        CURLMcode mc = curl_multi_perform(client->multi, &running);
        if (mc != CURLM_OK) {
            fr_error(SSE_COMP, "libcurl multi: %s", curl_multi_strerror(mc));
            rc = mc == CURLM_OUT_OF_MEMORY ? FR_ENOMEM : FR_EIO;
            break;
        }
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(client->multi, &left))) {
            if (msg->msg == CURLMSG_DONE && msg->easy_handle == client->easy) {
                conn->result = msg->data.result;
                done = 1;
            }
        }
        if (done || !running || conn->abort || sse_stopped(client)) {
            break;
        }
        int64_t idle = sse_now(client) - conn->last_rx_ms;
        if (idle >= client->stall_ms) {
            stalled = 1;
            break;
        }
        int64_t wait = client->stall_ms - idle;
        curl_multi_poll(client->multi, NULL, 0, (int)(wait < SSE_POLL_MS ? wait : SSE_POLL_MS),
                        NULL);
    }
    if (!conn->checked) {
        curl_easy_getinfo(client->easy, CURLINFO_RESPONSE_CODE, &conn->status);
    }
    curl_multi_remove_handle(client->multi, client->easy);
    fr_sse_parser_reset(client->parser);
    struct fr_sse_parser_stats ps;
    fr_sse_parser_stats(client->parser, &ps);
    STAT_SET(client, truncated, ps.truncated);
    STAT_SET(client, oversize, ps.oversize);
    STAT_SET(client, comments, ps.comments);
    if (rc < 0) {
        return rc;
    }
    if (conn->user_rc) {
        return conn->user_rc;
    }
    if (conn->status == 200 && !conn->proto) {
        STAT_ADD(client, connects, 1);
    }
    if (sse_stopped(client)) {
        *outcome = SSE_OUT_STOPPED;
    } else if (conn->error_event) {
        *outcome = SSE_OUT_ERROR_EVENT;
    } else if (conn->proto) {
        *outcome = SSE_OUT_PROTO;
    } else if (stalled) {
        *outcome = SSE_OUT_STALL;
    } else if (conn->status == 200) {
        *outcome = SSE_OUT_EOF;
    } else if (conn->status > 0) {
        *outcome = SSE_OUT_HTTP;
    } else {
        *outcome = SSE_OUT_NET;
    }
    return FR_OK;
}

/* ------------------------------------------------------------- backoff */

/* Base delay: the server's retry: if it sent one, else min_backoff_ms. */
static int64_t sse_base_ms(struct fr_sse_client *client)
{
    int64_t retry = fr_sse_parser_retry_ms(client->parser);
    int64_t base = retry >= 0 ? retry : client->min_backoff_ms;
    return base < client->max_backoff_ms ? base : client->max_backoff_ms;
}

/* Ceiling after n failures: max(base, min) doubled n times, capped at max. */
static int64_t sse_ceiling_ms(struct fr_sse_client *client, unsigned n)
{
    int64_t base = sse_base_ms(client);
    int64_t hi = base > client->min_backoff_ms ? base : client->min_backoff_ms;
    for (unsigned i = 0; i < n && hi < client->max_backoff_ms; i++) {
        hi *= 2;
    }
    return hi < client->max_backoff_ms ? hi : client->max_backoff_ms;
}

static int64_t sse_uniform(struct fr_sse_client *client, int64_t lo, int64_t hi)
{
    if (hi <= lo) {
        return lo;
    }
    return lo + (int64_t)(sse_random(client) % (uint64_t)(hi - lo + 1));
}

/* Log why the connection ended and choose the wait; FR_EFORBIDDEN or
 * FR_ECONFIG when reconnecting cannot help. */
static int sse_delay(struct fr_sse_client *client, enum sse_outcome outcome, int64_t *delay_ms)
{
    struct sse_conn *conn = &client->conn;
    char body[SSE_ERRBODY_MAX + 1];
    sse_printable(body, sizeof body, conn->body.len ? (const char *)conn->body.data : "",
                  conn->body.len);
    const char *curl_msg = client->errbuf[0] ? client->errbuf : curl_easy_strerror(conn->result);
    int64_t base = sse_base_ms(client);

    if (conn->status == 200 && !conn->proto) {
        client->forbidden = 0;
    }
    if (conn->events > 0) {
        client->failures = 0; /* a healthy connection resets the backoff */
    }
    if ((outcome == SSE_OUT_EOF || outcome == SSE_OUT_STALL) && conn->events > 0) {
        *delay_ms = base;
    } else {
        client->failures++;
        *delay_ms = sse_uniform(client, base, sse_ceiling_ms(client, client->failures));
    }

    switch (outcome) {
    case SSE_OUT_EOF:
        fr_info(SSE_COMP,
                "stream ended after %" PRIu64 " events (%s); reconnecting in %" PRId64 " ms",
                conn->events, conn->result == CURLE_OK ? "closed by server" : curl_msg, *delay_ms);
        break;
    case SSE_OUT_STALL:
        STAT_ADD(client, stalls, 1);
        fr_warn(SSE_COMP,
                "no data for %" PRId64 " ms; dropping the connection, reconnecting in %" PRId64
                " ms",
                client->stall_ms, *delay_ms);
        break;
    case SSE_OUT_NET:
        STAT_ADD(client, net_errors, 1);
        fr_warn(SSE_COMP, "connection failed: %s; retrying in %" PRId64 " ms", curl_msg, *delay_ms);
        break;
    case SSE_OUT_ERROR_EVENT:
        break; /* logged when it arrived */
    case SSE_OUT_PROTO:
        STAT_ADD(client, proto_errors, 1);
        break; /* logged when it arrived */
    case SSE_OUT_HTTP:
    case SSE_OUT_STOPPED:
        break;
    }
    if (outcome != SSE_OUT_HTTP) {
        return FR_OK;
    }

    long status = conn->status;
    if (status == 429) {
        STAT_ADD(client, http_429, 1);
        curl_off_t after_s = 0;
        curl_easy_getinfo(client->easy, CURLINFO_RETRY_AFTER, &after_s);
        if (after_s > 0) {
            int64_t after_ms = after_s > client->retry_after_cap_ms / 1000
                                   ? client->retry_after_cap_ms
                                   : (int64_t)after_s * 1000;
            *delay_ms = after_ms > *delay_ms ? after_ms : *delay_ms;
        } else {
            int64_t hi = sse_ceiling_ms(client, client->failures + 2);
            *delay_ms = sse_uniform(client, hi / 2 > base ? hi / 2 : base, hi);
        }
        fr_warn(SSE_COMP,
                "HTTP 429: too many connections from this address (Retry-After %" PRId64
                " s); waiting %" PRId64 " ms: %s",
                (int64_t)after_s, *delay_ms, body);
    } else if (status == 403) {
        STAT_ADD(client, http_403, 1);
        client->forbidden++;
        *delay_ms = client->max_backoff_ms;
        fr_error(SSE_COMP,
                 "HTTP 403 Forbidden (%u of %u in a row): Wikimedia rejects a missing "
                 "or generic User-Agent; check that \"%s\" names the tool and a contact: %s",
                 client->forbidden, client->forbidden_limit, client->user_agent, body);
        if (client->forbidden >= client->forbidden_limit) {
            fr_error(SSE_COMP, "giving up after %u consecutive 403 answers", client->forbidden);
            return FR_EFORBIDDEN;
        }
    } else if (status == 400 || status == 404) {
        STAT_ADD(client, http_400, 1);
        if (!conn->sent_resume) {
            fr_error(SSE_COMP,
                     "HTTP %ld without Last-Event-ID: the stream URL or its parameters "
                     "are wrong: %s",
                     status, body);
            return FR_ECONFIG;
        }
        fr_error(SSE_COMP,
                 "HTTP %ld: the server refused Last-Event-ID %s; reconnecting without "
                 "it (events since that position may be lost): %s",
                 status, (const char *)client->resume.data, body);
        if (client->on_bad_resume) {
            client->on_bad_resume(client->arg, (const char *)client->resume.data);
        }
        fr_sse_parser_set_last_id(client->parser, "", 0);
        client->skip_resume = 1;
    } else if (status >= 500 && status <= 599) {
        STAT_ADD(client, http_5xx, 1);
        fr_warn(SSE_COMP, "HTTP %ld; retrying in %" PRId64 " ms: %s", status, *delay_ms, body);
    } else if (status >= 400 && status <= 499) {
        STAT_ADD(client, http_4xx, 1);
        fr_warn(SSE_COMP, "HTTP %ld; retrying in %" PRId64 " ms: %s", status, *delay_ms, body);
    } else {
        STAT_ADD(client, http_other, 1);
        fr_warn(SSE_COMP, "unexpected HTTP %ld; retrying in %" PRId64 " ms", status, *delay_ms);
    }
    return FR_OK;
}

/* Wait ms on the ops clock in short slices, returning early on stop. */
static void sse_wait(struct fr_sse_client *client, int64_t ms)
{
    int64_t end = sse_now(client) + ms;
    while (!sse_stopped(client)) {
        int64_t left = end - sse_now(client);
        if (left <= 0) {
            break;
        }
        client->ops->sleep_ms(client->ops_ctx,
                              left < SSE_SLEEP_SLICE_MS ? left : SSE_SLEEP_SLICE_MS);
    }
    STAT_ADD(client, backoff_ms, ms);
}

int fr_sse_client_run(struct fr_sse_client *client)
{
    for (;;) {
        if (sse_stopped(client)) {
            return FR_OK;
        }
        enum sse_outcome outcome = SSE_OUT_NET;
        int rc = sse_attempt(client, &outcome);
        if (rc < 0) {
            return rc;
        }
        if (outcome == SSE_OUT_STOPPED) {
            return FR_OK;
        }
        int64_t delay_ms = 0;
        rc = sse_delay(client, outcome, &delay_ms);
        if (client->on_reconnect) {
            client->on_reconnect(client->arg, (enum fr_sse_end)outcome, client->conn.status,
                                 rc < 0 ? -1 : delay_ms);
        }
        if (rc < 0) {
            return rc;
        }
        sse_wait(client, delay_ms);
    }
}
