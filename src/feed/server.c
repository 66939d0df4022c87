/*
 * server.c — the feed's HTTP server (libmicrohttpd, one thread per
 * connection). Routes: GET /v2/stream/recentchange (the stream), GET
 * /api/<wiki>/w/api.php and /api/counters (the MediaWiki-API fixture,
 * api.c), GET /healthz (200 "ok"), anything else 404 with a JSON body.
 *
 * Production clock. With --rate N the stream is produced, not pushed:
 * position p exists from t0 + p/N (t0 = server start), like a Kafka topic
 * that a producer fills at N/s. A connection sends every existing position
 * from its start as fast as the client reads (a resumed client catches up),
 * then follows the head. With --rate 0 every position exists at once.
 *
 * One connection (the body is produced by server_read, called by MHD on the
 * connection's thread whenever the socket can take more):
 *
 *     prelude ":ok\n\n" ──► [next < head?] ──yes──► render frame(next) ──► copy out ──┐
 *                               │ no                                              │
 *                               ▼                                                 │
 *            wait ≤ 50 ms (client hang-up? shutdown? → end)  ◄────────────────────┘
 *     after each event: disconnect_every reached → abort (client sees a cut
 *     chunked body, as from Wikimedia); stall_every reached → wait stall_ms;
 *     finite stream done → end (--close-at-end) or idle.
 *
 * Memory per connection is bounded: MHD pulls at most one block at a time,
 * and the pending frame buffer holds one event (capped). A client that does
 * not read leaves MHD blocked on the socket and the buffer untouched.
 */
#include "feed/feed_int.h"

#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"
#include "lazy/mhd.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define SERVER_BLOCK (32 * 1024)
#define SERVER_WAIT_MS 50
#define SERVER_FRAME_CAP ((size_t)80 << 20)

struct fr_feed_server {
    const struct fr_feed_stream *stream;
    struct fr_feed_truth *truth;
    struct MHD_Daemon *daemon;
    struct fr_feed_api *api;
    atomic_int stopping;
    int64_t t0_ns;
};

struct feed_conn {
    struct fr_feed_server *srv;
    int fd;
    int ndjson;
    int prelude_done;
    struct fr_feed_cursor *cur;
    struct fr_buf frame; /* pending bytes: frame.data[frame_off..len) */
    size_t frame_off;
    int64_t frame_pos; /* position of the pending frame, -1 when none */
    int64_t next;      /* next position to render; -1: nothing is ever sent */
    int64_t sent;
    int64_t stalled_at; /* value of sent when the last stall happened */
    int64_t handle;
    const char *reason;
};

/* Positions that exist now (the production clock). */
static int64_t server_head(const struct fr_feed_server *srv)
{
    int64_t count = fr_feed_stream_count(srv->stream);
    double rate = fr_feed_stream_opts(srv->stream)->rate;
    if (rate <= 0) {
        return count;
    }
    double h = (double)(fr_mono_ns() - srv->t0_ns) / 1e9 * rate;
    return h >= (double)count ? count : (int64_t)h;
}

/* Wait up to ms; 0 to carry on, -1 when the client hung up or we stop. */
static int server_wait(struct feed_conn *conn, int64_t ms)
{
    if (atomic_load(&conn->srv->stopping)) {
        conn->reason = "shutdown";
        return -1;
    }
    if (ms > SERVER_WAIT_MS) {
        ms = SERVER_WAIT_MS;
    }
    if (ms < 1) {
        ms = 1;
    }
    struct pollfd pfd = {.fd = conn->fd, .events = POLLRDHUP};
    int n = conn->fd >= 0 ? poll(&pfd, 1, (int)ms) : 0;
    if (conn->fd < 0) {
        fr_sleep_ms(ms);
    }
    if (n > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))) {
        conn->reason = "client";
        return -1;
    }
    if (atomic_load(&conn->srv->stopping)) {
        conn->reason = "shutdown";
        return -1;
    }
    return 0;
}

static int server_render(struct feed_conn *conn, int64_t pos)
{
    struct fr_buf *f = &conn->frame;
    fr_buf_reset(f);
    conn->frame_off = 0;
    int64_t ts = fr_feed_stream_ts(conn->cur, pos);
    /* The frame of stream.c's wire table, with the payload rendered in place. */
    int rc = conn->ndjson ? FR_OK : fr_buf_puts(f, "event: message\nid: ");
    if (rc == FR_OK && !conn->ndjson) {
        rc = fr_feed_id_append(f, ts);
    }
    if (rc == FR_OK && !conn->ndjson) {
        rc = fr_buf_puts(f, "\ndata: ");
    }
    if (rc == FR_OK) {
        rc = fr_feed_stream_render(conn->cur, pos, f, NULL);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(f, conn->ndjson ? "\n" : "\n\n");
    }
    conn->frame_pos = rc == FR_OK ? pos : -1;
    if (rc < 0) {
        fr_buf_reset(f);
        fr_error("feed", "cannot render position %lld: %s", (long long)pos, fr_strerror(rc));
    }
    return rc;
}

static ssize_t server_read(void *cls, uint64_t offset, char *buf, size_t max)
{
    (void)offset;
    struct feed_conn *conn = cls;
    const struct fr_feed_opts *o = fr_feed_stream_opts(conn->srv->stream);
    int64_t count = fr_feed_stream_count(conn->srv->stream);
    for (;;) {
        if (atomic_load(&conn->srv->stopping)) {
            conn->reason = "shutdown";
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        if (conn->frame_off < conn->frame.len) {
            size_t n = conn->frame.len - conn->frame_off;
            n = n < max ? n : max;
            memcpy(buf, conn->frame.data + conn->frame_off, n);
            conn->frame_off += n;
            if (conn->frame_off == conn->frame.len && conn->frame_pos >= 0) {
                fr_feed_truth_conn_sent(conn->srv->truth, conn->handle, conn->frame_pos);
                conn->next = conn->frame_pos + 1;
                conn->sent++;
                conn->frame_pos = -1;
            }
            return (ssize_t)n;
        }
        fr_buf_reset(&conn->frame);
        conn->frame_off = 0;
        if (!conn->prelude_done) {
            conn->prelude_done = 1;
            if (fr_buf_puts(&conn->frame, fr_feed_prelude(conn->ndjson)) < 0) {
                conn->reason = "error";
                return MHD_CONTENT_READER_END_WITH_ERROR;
            }
            continue;
        }
        if (o->disconnect_every > 0 && conn->sent >= o->disconnect_every) {
            conn->reason = "disconnect_every";
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        if (o->stall_every > 0 && conn->sent > 0 && conn->sent % o->stall_every == 0 &&
            conn->stalled_at != conn->sent) {
            conn->stalled_at = conn->sent;
            fr_feed_truth_conn_stall(conn->srv->truth, conn->handle);
            int64_t until = fr_mono_ms() + o->stall_ms;
            for (int64_t now = fr_mono_ms(); now < until; now = fr_mono_ms()) {
                if (server_wait(conn, until - now) < 0) {
                    return MHD_CONTENT_READER_END_WITH_ERROR;
                }
            }
            continue;
        }
        if (conn->next < 0 || conn->next >= count) {
            if (conn->next >= count && o->close_at_end) {
                conn->reason = "end";
                return MHD_CONTENT_READER_END_OF_STREAM;
            }
            if (server_wait(conn, SERVER_WAIT_MS) < 0) {
                return MHD_CONTENT_READER_END_WITH_ERROR;
            }
            continue;
        }
        if (conn->next >= server_head(conn->srv)) {
            /* Position next exists at t0 + (next + 1) / rate. */
            double at_ns = (double)conn->srv->t0_ns + (double)(conn->next + 1) / o->rate * 1e9;
            int64_t ms = (int64_t)((at_ns - (double)fr_mono_ns()) / 1e6) + 1;
            if (server_wait(conn, ms) < 0) {
                return MHD_CONTENT_READER_END_WITH_ERROR;
            }
            continue;
        }
        if (server_render(conn, conn->next) < 0) {
            conn->reason = "error";
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
    }
}

static void server_conn_free(void *cls)
{
    struct feed_conn *conn = cls;
    fr_feed_truth_conn_close(conn->srv->truth, conn->handle,
                             conn->reason ? conn->reason : "client");
    fr_feed_cursor_free(conn->cur);
    fr_buf_free(&conn->frame);
    free(conn);
}

/* ---- requests -------------------------------------------------------- */

static enum MHD_Result server_reply(struct MHD_Connection *mc, unsigned status, const char *type,
                                    const char *body)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!resp) {
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    enum MHD_Result r = MHD_queue_response(mc, status, resp);
    MHD_destroy_response(resp);
    return r;
}

/* An error in the shape EventStreams (service-runner HTTPError) uses. */
static enum MHD_Result server_error(struct MHD_Connection *mc, unsigned status, const char *type,
                                    const char *title, const char *detail, const char *url)
{
    struct fr_buf body;
    fr_buf_init(&body, 4096);
    int rc = fr_buf_printf(&body,
                           "{\"type\":\"https://mediawiki.org/wiki/HyperSwitch/errors/%s\","
                           "\"title\":\"%s\",\"method\":\"get\",\"detail\":",
                           type, title);
    if (rc == FR_OK) {
        rc = fr_buf_json_str(&body, detail, strlen(detail));
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(&body, ",\"uri\":");
    }
    if (rc == FR_OK) {
        rc = fr_buf_json_str(&body, url, strlen(url) > 1024 ? 1024 : strlen(url));
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(&body, "}");
    }
    enum MHD_Result r = server_reply(mc, status, "application/problem+json",
                                     rc == FR_OK ? fr_buf_cstr(&body) : "{}");
    fr_buf_free(&body);
    return r;
}

static void server_remote(struct MHD_Connection *mc, char *out, size_t outlen)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    snprintf(out, outlen, "?");
    if (!info || !info->client_addr) {
        return;
    }
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (info->client_addr->sa_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)info->client_addr;
        inet_ntop(AF_INET, &sin->sin_addr, host, sizeof host);
        port = ntohs(sin->sin_port);
        snprintf(out, outlen, "%s:%d", host, port);
    } else if (info->client_addr->sa_family == AF_INET6) {
        const struct sockaddr_in6 *sin6 =
            (const struct sockaddr_in6 *)(const void *)info->client_addr;
        inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof host);
        port = ntohs(sin6->sin6_port);
        snprintf(out, outlen, "[%s]:%d", host, port);
    }
}

static enum MHD_Result server_stream(struct fr_feed_server *srv, struct MHD_Connection *mc,
                                     const char *url)
{
    const struct fr_feed_opts *o = fr_feed_stream_opts(srv->stream);
    int64_t count = fr_feed_stream_count(srv->stream);
    char err[256];
    struct fr_feed_resume resume = {FR_FEED_RESUME_DEFAULT, 0, 0};
    const char *leid = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Last-Event-ID");
    if (leid) {
        int rc = fr_feed_resume_parse(leid, strlen(leid), &resume, err, sizeof err);
        if (rc == FR_ENOTFOUND) {
            return server_error(mc, MHD_HTTP_NOT_FOUND, "not_found", "Topic Not Available", err,
                                url);
        }
        if (rc < 0) {
            return server_error(mc, MHD_HTTP_BAD_REQUEST, "bad_request", "Invalid Last-Event-ID",
                                err, url);
        }
    }
    int64_t since = 0;
    const char *since_s = MHD_lookup_connection_value(mc, MHD_GET_ARGUMENT_KIND, "since");
    if (since_s && fr_feed_since_parse(since_s, &since) < 0) {
        return server_error(mc, MHD_HTTP_BAD_REQUEST, "invalid_timestamp", "Invalid timestamp",
                            "since must be integer milliseconds or an ISO-8601 date-time", url);
    }
    const char *accept = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);

    struct feed_conn *conn = calloc(1, sizeof *conn);
    if (!conn || fr_feed_cursor_new(srv->stream, &conn->cur) < 0) {
        free(conn);
        return server_error(mc, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal_error", "Internal Error",
                            "out of memory", url);
    }
    conn->srv = srv;
    conn->ndjson = accept && strncmp(accept, "application/json", 16) == 0;
    conn->frame_pos = -1;
    conn->stalled_at = -1;
    conn->handle = -1;
    fr_buf_init(&conn->frame, SERVER_FRAME_CAP);
    const union MHD_ConnectionInfo *fdi =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
    conn->fd = fdi ? fdi->connect_fd : -1;

    /* Where to start (Kafka semantics), then the injected overlap. */
    int resumed = 1;
    int64_t requested;
    switch (resume.kind) {
    case FR_FEED_RESUME_TIMESTAMP:
        requested = fr_feed_stream_seek(conn->cur, resume.ts_ms);
        break;
    case FR_FEED_RESUME_OFFSET:
        requested = resume.offset == -2 ? 0 : resume.offset - o->offset_base;
        requested = requested < 0 ? 0 : requested > count ? count : requested;
        break;
    case FR_FEED_RESUME_LATEST:
        requested = server_head(srv);
        break;
    case FR_FEED_RESUME_NONE:
        requested = -1;
        break;
    default:
        if (since_s) {
            requested = fr_feed_stream_seek(conn->cur, since);
        } else {
            resumed = 0;
            requested = o->start_latest ? server_head(srv) : 0;
        }
    }
    int64_t start = requested;
    if (resumed && requested > 0 && o->overlap > 0) {
        start = requested > o->overlap ? requested - o->overlap : 0;
    }
    /* Retention (--history-from): like Kafka, start at the oldest retained
     * position without saying so (PROTOCOL.md §6). */
    if (o->history_from_ms != INT64_MIN && requested >= 0) {
        int64_t oldest = fr_feed_stream_seek(conn->cur, o->history_from_ms);
        requested = requested < oldest ? oldest : requested;
        start = start < oldest ? oldest : start;
    }
    conn->next = start;

    struct fr_feed_conn_info ci = {.resume = resume.kind,
                                   .requested = requested,
                                   .start = start < 0 ? 0 : start,
                                   .ndjson = conn->ndjson};
    if (resume.kind == FR_FEED_RESUME_DEFAULT && since_s) {
        ci.resume = FR_FEED_RESUME_SINCE;
    }
    server_remote(mc, ci.remote, sizeof ci.remote);
    if (fr_feed_truth_conn_open(srv->truth, &ci, &conn->handle) < 0) {
        fr_warn("feed", "truth: cannot record connection from %s", ci.remote);
    }
    fr_debug("feed", "connection from %s: resume %d, requested %lld, start %lld", ci.remote,
             (int)resume.kind, (long long)requested, (long long)start);

    struct MHD_Response *resp = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, SERVER_BLOCK, server_read, conn, server_conn_free);
    if (!resp) {
        conn->reason = "error";
        server_conn_free(conn);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            conn->ndjson ? "application/json; charset=utf-8"
                                         : "text/event-stream; charset=utf-8");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    enum MHD_Result r = MHD_queue_response(mc, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return r;
}

static enum MHD_Result server_access(void *cls, struct MHD_Connection *mc, const char *url,
                                     const char *method, const char *version,
                                     const char *upload_data, size_t *upload_data_size,
                                     void **req_cls)
{
    (void)version;
    (void)upload_data;
    struct fr_feed_server *srv = cls;
    static int seen_headers;
    if (!*req_cls) { /* first call: headers only; answer on the next */
        *req_cls = &seen_headers;
        return MHD_YES;
    }
    if (*upload_data_size) {
        *upload_data_size = 0; /* ignore request bodies */
        return MHD_YES;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        return server_error(mc, MHD_HTTP_METHOD_NOT_ALLOWED, "method_not_allowed",
                            "Method Not Allowed", "only GET is supported", url);
    }
    if (strcmp(url, "/healthz") == 0) {
        return server_reply(mc, MHD_HTTP_OK, "text/plain; charset=utf-8", "ok\n");
    }
    if (strcmp(url, FR_FEED_PATH) == 0) {
        return server_stream(srv, mc, url);
    }
    if (strncmp(url, "/api/", 5) == 0) {
        return (enum MHD_Result)fr_feed_api_request(srv->api, mc, url);
    }
    return server_error(mc, MHD_HTTP_NOT_FOUND, "not_found", "Not Found",
                        "the feed serves " FR_FEED_PATH ", " FR_FEED_API_PATH " and /healthz", url);
}

/* ---- lifecycle ------------------------------------------------------- */

int fr_feed_listen_parse(const char *spec, char *host, size_t hostlen, int *port)
{
    const char *colon;
    const char *p = spec;
    if (*p == '[') {
        const char *close = strchr(p, ']');
        if (!close || close[1] != ':') {
            return FR_EINVAL;
        }
        snprintf(host, hostlen, "%.*s", (int)(close - p - 1), p + 1);
        colon = close + 1;
    } else if ((colon = strrchr(p, ':')) != NULL) {
        if (colon == p) {
            snprintf(host, hostlen, "127.0.0.1");
        } else {
            snprintf(host, hostlen, "%.*s", (int)(colon - p), p);
        }
    } else {
        snprintf(host, hostlen, "127.0.0.1");
        colon = p - 1;
    }
    const char *ps = colon + 1;
    char *end;
    long v = strtol(ps, &end, 10);
    if (!*ps || *end || v < 0 || v > 65535) {
        return FR_EINVAL;
    }
    *port = (int)v;
    if (strcmp(host, "localhost") == 0) {
        snprintf(host, hostlen, "127.0.0.1");
    }
    struct in6_addr a6;
    struct in_addr a4;
    if (inet_pton(AF_INET, host, &a4) != 1 && inet_pton(AF_INET6, host, &a6) != 1) {
        return FR_EINVAL;
    }
    return FR_OK;
}

int fr_feed_server_start(const struct fr_feed_stream *stream, struct fr_feed_truth *truth,
                         const char *listen, struct fr_feed_server **out, char *url, size_t urllen,
                         char *err, size_t errlen)
{
    *out = NULL;
    char host[INET6_ADDRSTRLEN + 8];
    int port;
    if (fr_feed_listen_parse(listen, host, sizeof host, &port) < 0) {
        snprintf(err, errlen, "bad --listen \"%s\" (want HOST:PORT with a literal IP)", listen);
        return FR_ECONFIG;
    }
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    int v6 = strchr(host, ':') != NULL;
    if (v6) {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons((uint16_t)port);
        inet_pton(AF_INET6, host, &sin6->sin6_addr);
    } else {
        struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
        sin->sin_family = AF_INET;
        sin->sin_port = htons((uint16_t)port);
        inet_pton(AF_INET, host, &sin->sin_addr);
    }
    struct fr_feed_server *srv = calloc(1, sizeof *srv);
    if (!srv) {
        snprintf(err, errlen, "out of memory");
        return FR_ENOMEM;
    }
    srv->stream = stream;
    srv->truth = truth;
    if (fr_feed_api_new(stream, &srv->api) < 0) {
        snprintf(err, errlen, "out of memory");
        free(srv);
        return FR_ENOMEM;
    }
    srv->t0_ns = fr_mono_ns();
    atomic_init(&srv->stopping, 0);
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | MHD_USE_ERROR_LOG | (v6 ? MHD_USE_IPv6 : 0);
    const struct fr_feed_opts *o = fr_feed_stream_opts(stream);
    const struct MHD_OptionItem options[] = {
        {MHD_OPTION_SOCK_ADDR, 0, &ss},
        {MHD_OPTION_CONNECTION_LIMIT, (intptr_t)o->max_conns, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, 0, NULL},
        {MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL},
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)fr_mhd_log, (void *)"feed"},
        {MHD_OPTION_END, 0, NULL},
    }; /* MHD_OPTION_ARRAY's form (src/lazy/mhd.h) */
    srv->daemon = fr_mhd_start_daemon(flags, (uint16_t)port, NULL, NULL, server_access, srv,
                                      options);
    if (!srv->daemon) {
        snprintf(err, errlen, "cannot listen on %s (address in use or not local?)", listen);
        fr_feed_api_free(srv->api);
        free(srv);
        return FR_EIO;
    }
    const union MHD_DaemonInfo *li = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_LISTEN_FD);
    struct sockaddr_storage bound;
    socklen_t blen = sizeof bound;
    if (li && getsockname(li->listen_fd, (struct sockaddr *)&bound, &blen) == 0) {
        port = bound.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&bound)->sin6_port)
                                           : ntohs(((struct sockaddr_in *)&bound)->sin_port);
    }
    snprintf(url, urllen, v6 ? "http://[%s]:%d%s" : "http://%s:%d%s", host, port, FR_FEED_PATH);
    *out = srv;
    return FR_OK;
}

const struct fr_feed_api *fr_feed_server_api(const struct fr_feed_server *srv)
{
    return srv ? srv->api : NULL;
}

void fr_feed_server_stop(struct fr_feed_server *srv)
{
    if (!srv) {
        return;
    }
    atomic_store(&srv->stopping, 1);
    MHD_stop_daemon(srv->daemon);
    fr_feed_api_free(srv->api);
    free(srv);
}
