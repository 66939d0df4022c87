/*
 * http.c — the libmicrohttpd daemon of `freshet serve`: binding (loopback
 * by default), limits, routing by the route table, JSON errors, bearer
 * authentication, and the server's start and stop.
 *
 * Daemon: MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL with a pool of
 * SERVE_THREADS worker threads and MHD_ALLOW_SUSPEND_RESUME, so an idle event stream
 * costs nothing (its connection is suspended until the ticker resumes it,
 * docs/reference §7) and a slow catalog read does not stall /metrics on
 * another worker. Limits: serve.max_connections connections
 * (MHD_OPTION_CONNECTION_LIMIT), serve.timeout_s of inactivity
 * (MHD_OPTION_CONNECTION_TIMEOUT: a client that stops reading is closed),
 * serve.request_max_bytes of memory per connection (headers past it are
 * refused by libmicrohttpd), request bodies of 64 KiB (413).
 *
 * Request lifecycle: the URI callback allocates a struct serve_req holding
 * the raw request target (file paths are decoded by files.c, which must see
 * %2F before it becomes a slash); the access handler routes on the first
 * call, except for POST, which it routes once the body has been read;
 * the completion callback frees the request.
 */
#include "serve/serve_int.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"
#include "iceberg/iceberg.h"
#include "lazy/mhd.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ------------------------------------------------------------- answers */

/* Queue body (JSON, taken over) with status and, when hname is not NULL,
 * one more header. */
static enum MHD_Result send_json_hdr(struct MHD_Connection *conn, unsigned status,
                                     struct fr_buf *body, const char *hname, const char *hvalue)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        body->len, body->data, body->data ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        fr_buf_free(body);
        return MHD_NO;
    }
    /* The response owns the bytes now. */
    body->data = NULL;
    body->len = body->alloc = 0;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (hname) {
        MHD_add_response_header(resp, hname, hvalue);
    }
    enum MHD_Result ret = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

enum MHD_Result serve_send_json(struct MHD_Connection *conn, unsigned status, struct fr_buf *body)
{
    return send_json_hdr(conn, status, body, NULL, NULL);
}

static enum MHD_Result verror(struct MHD_Connection *conn, unsigned status, const char *code,
                              const char *hname, const char *hvalue, const char *fmt, va_list ap)
{
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    struct fr_buf body;
    fr_buf_init(&body, 8192);
    int rc = fr_buf_printf(&body, "{\"error\":\"%s\",\"message\":", code);
    if (rc == FR_OK) {
        rc = fr_buf_json_str(&body, msg, strlen(msg));
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(&body, "}\n");
    }
    if (rc < 0) {
        fr_buf_free(&body);
        return MHD_NO;
    }
    return send_json_hdr(conn, status, &body, hname, hvalue);
}

enum MHD_Result serve_error(struct MHD_Connection *conn, unsigned status, const char *code,
                            const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum MHD_Result ret = verror(conn, status, code, NULL, NULL, fmt, ap);
    va_end(ap);
    return ret;
}

enum MHD_Result serve_error_hdr(struct MHD_Connection *conn, unsigned status, const char *code,
                                const char *hname, const char *hvalue, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum MHD_Result ret = verror(conn, status, code, hname, hvalue, fmt, ap);
    va_end(ap);
    return ret;
}

enum MHD_Result serve_range_unsatisfiable(struct MHD_Connection *conn, uint64_t size)
{
    char cr[64];
    snprintf(cr, sizeof cr, "bytes */%" PRIu64, size);
    return serve_error_hdr(conn, MHD_HTTP_RANGE_NOT_SATISFIABLE, "range_not_satisfiable",
                           MHD_HTTP_HEADER_CONTENT_RANGE, cr, "the range is outside the file");
}

static enum MHD_Result serve_not_allowed(struct MHD_Connection *conn, unsigned methods,
                                         const char *method, const char *path)
{
    char allow[48] = "";
    snprintf(allow, sizeof allow, "%s%s%s%s%s", methods & SERVE_GET ? "GET, HEAD" : "",
             (methods & SERVE_GET) && (methods & SERVE_POST) ? ", " : "",
             methods & SERVE_POST ? "POST" : "", methods & SERVE_DELETE ? ", " : "",
             methods & SERVE_DELETE ? "DELETE" : "");
    return serve_error_hdr(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method_not_allowed",
                           MHD_HTTP_HEADER_ALLOW, allow, "%s is not allowed on %s (allowed: %s)",
                           method, path, allow);
}

/* ------------------------------------------------------------- routing */

struct serve_route_def {
    unsigned methods;
    const char *path;
    int auth;
    const char *doc;
};

static const struct serve_route_def serve_routes[SERVE_R_COUNT] = {
#define SERVE_ROUTE_DEF(id, m, p, a, d) {m, p, a, d},
    SERVE_ROUTES(SERVE_ROUTE_DEF)
#undef SERVE_ROUTE_DEF
};

int fr_serve_routes_markdown(struct fr_buf *out)
{
    int rc = fr_buf_puts(out, "| method | path | auth | answer |\n|---|---|---|---|\n");
    for (int r = 0; rc == FR_OK && r < SERVE_R_COUNT; r++) {
        const struct serve_route_def *d = &serve_routes[r];
        rc = fr_buf_printf(out, "| %s%s%s%s%s | `%s` | %s | %s |\n",
                           d->methods & SERVE_GET ? "GET" : "",
                           d->methods & SERVE_HEAD ? ", HEAD" : "",
                           (d->methods & SERVE_GET) && (d->methods & SERVE_POST) ? ", " : "",
                           d->methods & SERVE_POST ? "POST" : "",
                           d->methods & SERVE_DELETE ? ", DELETE" : "", d->path,
                           d->auth == 2 ? "bearer for POST, DELETE" : d->auth ? "bearer" : "—",
                           d->doc);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, "\nIceberg REST routes, under `/iceberg`:\n\n");
    }
    return rc == FR_OK ? serve_rest_routes_markdown(out) : rc;
}

/* The route for a decoded path; SERVE_R_WEB for anything else. */
static enum serve_route serve_route_of(const char *url)
{
    for (int r = 0; r < SERVE_R_COUNT; r++) {
        if (r != SERVE_R_LAKE && r != SERVE_R_WEB && strcmp(url, serve_routes[r].path) == 0) {
            return (enum serve_route)r;
        }
    }
    if (strncmp(url, "/lake/", 6) == 0 || strcmp(url, "/lake") == 0) {
        return SERVE_R_LAKE;
    }
    if (strncmp(url, "/iceberg/", 9) == 0) {
        return SERVE_R_ICEBERG;
    }
    return SERVE_R_WEB;
}

static unsigned serve_method_bit(const char *method)
{
    if (strcmp(method, MHD_HTTP_METHOD_GET) == 0) {
        return SERVE_GET;
    }
    if (strcmp(method, MHD_HTTP_METHOD_HEAD) == 0) {
        return SERVE_HEAD;
    }
    if (strcmp(method, MHD_HTTP_METHOD_POST) == 0) {
        return SERVE_POST;
    }
    if (strcmp(method, MHD_HTTP_METHOD_DELETE) == 0) {
        return SERVE_DELETE;
    }
    return 0;
}

static enum MHD_Result serve_dispatch(struct fr_serve *srv, struct MHD_Connection *conn,
                                      const struct serve_req *req, enum serve_route route,
                                      const char *method)
{
    switch (route) {
    case SERVE_R_ICEBERG:
        return serve_rest(srv, conn, req, method);
    case SERVE_R_METRICS:
        return serve_metrics(srv, conn);
    case SERVE_R_STATUS:
        return serve_status(srv, conn);
    case SERVE_R_LIVE:
        return serve_live(srv, conn);
    case SERVE_R_STREAM:
        return serve_stream(srv, conn);
    case SERVE_R_HISTORY:
        return serve_history(srv, conn);
    case SERVE_R_TABLES:
        return serve_tables(srv, conn);
    case SERVE_R_JOBS:
        return serve_jobs(srv, conn);
    case SERVE_R_COMPACT:
    case SERVE_R_DLQ_REPLAY: {
        if (!srv->api_token || !srv->api_token[0]) {
            return serve_error(conn, MHD_HTTP_FORBIDDEN, "forbidden",
                               "maintenance endpoints are disabled: no API token is "
                               "configured (set FRESHET_SERVE_API_TOKEN for freshet serve)");
        }
        const char *auth =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
        if (!serve_bearer_ok(auth, srv->api_token)) {
            struct fr_buf body;
            fr_buf_init(&body, 4096);
            if (fr_buf_puts(&body, "{\"error\":\"unauthorized\",\"message\":\"this endpoint "
                                   "needs Authorization: Bearer <serve.api_token>\"}\n") < 0) {
                fr_buf_free(&body);
                return MHD_NO;
            }
            struct MHD_Response *resp =
                MHD_create_response_from_buffer(body.len, body.data, MHD_RESPMEM_MUST_FREE);
            if (!resp) {
                fr_buf_free(&body);
                return MHD_NO;
            }
            MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
            MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
            MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                    "Bearer realm=\"freshet\"");
            enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_UNAUTHORIZED, resp);
            MHD_destroy_response(resp);
            return ret;
        }
        return serve_job_start(srv, conn, route);
    }
    case SERVE_R_LAKE:
        return serve_lake(srv, conn, req, method);
    case SERVE_R_WEB:
        return serve_web(srv, conn, req);
    case SERVE_R_COUNT:
        break;
    }
    return serve_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "bad route");
}

static enum MHD_Result serve_handler(void *cls, struct MHD_Connection *conn, const char *url,
                                     const char *method, const char *version,
                                     const char *upload_data, size_t *upload_data_size,
                                     void **con_cls)
{
    (void)version;
    struct fr_serve *srv = cls;
    struct serve_req *req = *con_cls;
    if (!req) {
        return MHD_NO; /* out of memory in the URI callback */
    }
    enum serve_route route = serve_route_of(url);
    const size_t body_max = route == SERVE_R_ICEBERG ? SERVE_REST_BODY_MAX : SERVE_BODY_MAX;
    unsigned bit = serve_method_bit(method);
    if (!req->started) {
        req->started = 1;
        fr_stats_add(srv->own, FR_STATS_SERVE_REQUESTS, 0, 1);
        if (req->raw_too_long) {
            return serve_error(conn, MHD_HTTP_URI_TOO_LONG, "bad_request",
                               "request target too long");
        }
        if (route == SERVE_R_WEB && strncmp(url, "/api/", 5) == 0) {
            return serve_error(conn, MHD_HTTP_NOT_FOUND, "not_found", "no route for %s %s", method,
                               url);
        }
        if (!(serve_routes[route].methods & bit)) {
            return serve_not_allowed(conn, serve_routes[route].methods, method, url);
        }
        if (bit != SERVE_POST) {
            return serve_dispatch(srv, conn, req, route, method);
        }
        /* Refuse a declared oversized body before reading any of it. */
        const char *cl =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > body_max) {
            req->body_bytes = body_max + 1;
            return serve_error(conn, MHD_HTTP_CONTENT_TOO_LARGE, "too_large",
                               "request bodies are limited to %zu bytes", body_max);
        }
        if (route == SERVE_R_ICEBERG) {
            fr_buf_init(&req->body, SERVE_REST_BODY_MAX);
        }
        return MHD_YES; /* read the body first */
    }
    if (*upload_data_size > 0) {
        req->body_bytes += *upload_data_size;
        if (req->body_bytes <= body_max && route == SERVE_R_ICEBERG &&
            fr_buf_append(&req->body, upload_data, *upload_data_size) < 0) {
            req->body_bytes = body_max + 1;
        }
        *upload_data_size = 0;
        if (req->body_bytes > body_max) {
            return serve_error(conn, MHD_HTTP_CONTENT_TOO_LARGE, "too_large",
                               "request bodies are limited to %zu bytes", body_max);
        }
        return MHD_YES;
    }
    if (req->body_bytes > body_max) {
        return MHD_YES; /* the 413 is queued */
    }
    return serve_dispatch(srv, conn, req, route, method);
}

static void *serve_uri_cb(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    (void)conn;
    struct serve_req *req = calloc(1, sizeof *req);
    if (req) {
        size_t n = strlen(uri);
        req->raw_too_long = n >= sizeof req->raw;
        memcpy(req->raw, uri, req->raw_too_long ? 0 : n + 1);
    }
    return req;
}

static void serve_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                            enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    struct serve_req *req = *con_cls;
    if (req) {
        fr_buf_free(&req->body);
    }
    free(req);
    *con_cls = NULL;
}

/* -------------------------------------------------------- start / stop */

/* "host:port" or "[v6]:port" into a socket address. */
static int serve_parse_listen(const char *listen, struct sockaddr_storage *ss, socklen_t *len)
{
    char host[256];
    const char *port;
    if (listen[0] == '[') {
        const char *close = strchr(listen, ']');
        if (!close || close[1] != ':' || (size_t)(close - listen - 1) >= sizeof host) {
            return FR_EINVAL;
        }
        memcpy(host, listen + 1, (size_t)(close - listen - 1));
        host[close - listen - 1] = 0;
        port = close + 2;
    } else {
        const char *colon = strrchr(listen, ':');
        if (!colon || (size_t)(colon - listen) >= sizeof host) {
            return FR_EINVAL;
        }
        memcpy(host, listen, (size_t)(colon - listen));
        host[colon - listen] = 0;
        port = colon + 1;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV | AI_PASSIVE};
    struct addrinfo *ai = NULL;
    if (!port[0] || getaddrinfo(host[0] ? host : NULL, port, &hints, &ai) != 0 || !ai) {
        return FR_EINVAL;
    }
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *len = ai->ai_addrlen;
    freeaddrinfo(ai);
    return FR_OK;
}

static int serve_is_loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
    return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
}

static char *serve_strdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

int fr_serve_start(const struct fr_serve_opts *opts, struct fr_serve **out)
{
    struct sockaddr_storage ss;
    socklen_t sslen = 0;
    memset(&ss, 0, sizeof ss);
    if (!opts->data_dir || !opts->listen || serve_parse_listen(opts->listen, &ss, &sslen) < 0) {
        fr_error("serve", "bad listen address \"%s\" (want HOST:PORT or [V6]:PORT)",
                 opts->listen ? opts->listen : "");
        return FR_EINVAL;
    }
    if (!serve_is_loopback(&ss)) {
        fr_warn("serve",
                "listening on %s, which is not a loopback address: anyone who can "
                "reach it can read the metrics and the lake",
                opts->listen);
    }
    struct fr_serve *srv = calloc(1, sizeof *srv);
    if (!srv) {
        return FR_ENOMEM;
    }
    int rc = FR_ENOMEM;
    srv->opts = *opts;
    srv->data_dir = serve_strdup(opts->data_dir);
    srv->web_root = serve_strdup(opts->web_root ? opts->web_root : "");
    srv->api_token = serve_strdup(opts->api_token ? opts->api_token : "");
    srv->self = serve_strdup(opts->self ? opts->self : "");
    pthread_mutex_init(&srv->lock, NULL);
    pthread_cond_init(&srv->wake, NULL);
    if (!srv->data_dir || !srv->web_root || !srv->api_token || !srv->self) {
        goto cleanup;
    }
    snprintf(srv->warehouse, sizeof srv->warehouse, "%s/lake/warehouse", srv->data_dir);
    const char *uri = opts->conf ? opts->conf->lake_warehouse : NULL;
    if (uri && uri[0]) {
        /* Before any thread: fr_s3_open initialises libcurl. */
        char err[1600] = "";
        if (strncmp(uri, "s3://", 5) != 0) {
            snprintf(err, sizeof err, "lake.warehouse must be empty (local) or s3://bucket/prefix");
            rc = FR_ECONFIG;
        } else {
            rc = serve_s3_open(opts->conf, uri, &srv->s3, err, sizeof err);
        }
        if (rc < 0) {
            fr_error("serve", "%s", err);
            goto cleanup;
        }
    }
    srv->mcache = fr_ice_meta_cache_new();
    if (!srv->mcache) {
        rc = FR_ENOMEM;
        goto cleanup;
    }
    rc = fr_stats_open_memory(FR_STATS_SERVE, &srv->own);
    if (rc < 0) {
        goto cleanup;
    }
    fr_stats_set(srv->own, FR_STATS_SERVE_STREAMS, 0, 0);
    fr_stats_set(srv->own, FR_STATS_STAGE_START, FR_STATS_SERVE, (double)fr_wall_ms() / 1000.0);
    rc = serve_ticker_start(srv);
    if (rc < 0) {
        goto cleanup;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    /* MHD_OPTION_ARRAY's form (src/lazy/mhd.h): a callback option carries
     * the function in value and its closure in ptr_value. */
    const struct MHD_OptionItem options[] = {
        {MHD_OPTION_SOCK_ADDR, 0, &ss},
        {MHD_OPTION_THREAD_POOL_SIZE, SERVE_THREADS, NULL},
        {MHD_OPTION_CONNECTION_LIMIT, opts->max_connections > 0 ? opts->max_connections : 256,
         NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, opts->timeout_s > 0 ? opts->timeout_s : 30, NULL},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT,
         (intptr_t)(opts->request_max_bytes ? opts->request_max_bytes : 32768), NULL},
        {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)serve_uri_cb, srv},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)serve_completed, srv},
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)fr_mhd_log, (void *)"serve"},
        {MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    srv->daemon = fr_mhd_start_daemon(flags, 0, NULL, NULL, serve_handler, srv, options);
    if (!srv->daemon) {
        fr_error("serve", "cannot listen on %s (address in use, or not this machine's?)",
                 opts->listen);
        rc = FR_EIO;
        goto cleanup;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = info ? info->port : 0;
    *out = srv;
    return FR_OK;

cleanup:
    fr_serve_stop(srv);
    return rc;
}

int fr_serve_port(const struct fr_serve *srv)
{
    return srv->port;
}

void fr_serve_stop(struct fr_serve *srv)
{
    if (!srv) {
        return;
    }
    if (srv->daemon) {
        /* No new connections; the listening socket is then ours to close. */
        MHD_socket listen_fd = MHD_quiesce_daemon(srv->daemon);
        serve_streams_close(srv);
        MHD_stop_daemon(srv->daemon);
        if (listen_fd != MHD_INVALID_SOCKET) {
            close(listen_fd);
        }
    }
    serve_ticker_stop(srv);
    for (int s = 0; s < FR_STATS_STAGES; s++) {
        for (int i = 0; i < SERVE_SAMPLES; i++) {
            free(srv->samples[s][i]);
        }
    }
    if (srv->frame) {
        free(srv->frame->data);
        free(srv->frame);
    }
    fr_stats_close(srv->own);
    serve_s3_close(srv->s3); /* after the workers that use it */
    fr_ice_meta_cache_free(srv->mcache);
    pthread_cond_destroy(&srv->wake);
    pthread_mutex_destroy(&srv->lock);
    free(srv->data_dir);
    free(srv->web_root);
    free(srv->api_token);
    free(srv->self);
    free(srv);
}
