/*
 * sse.h — the SSE stage's interface: an incremental text/event-stream parser
 * and a reconnecting HTTP client for Wikimedia EventStreams (and freshet's
 * own `feed`, which speaks the same protocol).
 *
 * The parser (parser.c) implements the WHATWG HTML "interpretation of the
 * event stream" over raw bytes. It is a plain state machine with no I/O and
 * no threads: one owner feeds it chunks split anywhere and receives one
 * callback per dispatched event. Every buffer it holds is capped by
 * max_event_bytes; an event larger than that is dropped, counted, and the
 * parser resynchronises at the next blank line.
 *
 * The client (client.c) owns one libcurl handle and one parser. Its run
 * function blocks the calling thread, reconnecting with backoff until the
 * stop flag is raised or the event callback fails. Only fr_sse_client_stop()
 * and fr_sse_client_stats() may be called from other threads; stop is
 * async-signal-safe. docs/adr/0003-sse-client.md records the decisions.
 *
 * Errors are codes from core/err.h.
 */
#ifndef FR_SSE_H
#define FR_SSE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- events */

/* One dispatched event. Every pointer is valid only during the callback;
 * copy what must outlive it. */
struct fr_sse_event {
    const char *id; /* the last-event-id string after this event; NUL-terminated, may be "" */
    size_t id_len;
    const char *type; /* event type; "message" when the stream gave none; NUL-terminated */
    size_t type_len;
    const char *data; /* data lines joined with LF; NOT NUL-terminated; may point into the
                         caller's chunk */
    size_t data_len;
};

/* Called once per dispatched event. Return 0 to go on, or a negative code
 * from core/err.h to stop: the parser (or client) returns that code. */
typedef int (*fr_sse_event_fn)(void *arg, const struct fr_sse_event *event);
/* Called when a valid `retry:` field sets the reconnection time. */
typedef void (*fr_sse_retry_fn)(void *arg, int64_t retry_ms);

/* ---------------------------------------------------------------- parser */

#define FR_SSE_DEFAULT_MAX_EVENT (1u << 20) /* 1 MiB */
#define FR_SSE_MIN_MAX_EVENT 64u

struct fr_sse_parser_stats {
    uint64_t bytes;     /* bytes fed, BOM included */
    uint64_t lines;     /* complete lines seen, blank lines included */
    uint64_t events;    /* events dispatched to the callback */
    uint64_t comments;  /* lines starting with ':' */
    uint64_t oversize;  /* events dropped for exceeding max_event_bytes */
    uint64_t truncated; /* streams that ended inside an event or a line */
    uint64_t retries;   /* valid `retry:` fields */
};

struct fr_sse_parser_opts {
    fr_sse_event_fn on_event; /* required */
    fr_sse_retry_fn on_retry; /* optional */
    void *arg;                /* passed to both callbacks */
    size_t max_event_bytes;   /* cap on the bytes of all lines of one event, line ends
                                 excluded; 0 = FR_SSE_DEFAULT_MAX_EVENT; at least
                                 FR_SSE_MIN_MAX_EVENT */
};

struct fr_sse_parser;

/* Create a parser. The options are copied. FR_EINVAL for a missing callback
 * or a cap below the minimum, FR_ENOMEM. */
int fr_sse_parser_create(const struct fr_sse_parser_opts *opts, struct fr_sse_parser **out);
/* Free the parser. Accepts NULL. */
void fr_sse_parser_destroy(struct fr_sse_parser *parser);

/* Feed len bytes of the stream (any split). Calls on_event for each event
 * completed by these bytes, in order. Returns FR_OK, FR_ENOMEM, or the first
 * negative value returned by on_event; after an error the rest of the chunk
 * is dropped and the caller should end the stream with fr_sse_parser_reset().
 * The chunk is not retained after the call returns. */
int fr_sse_parser_feed(struct fr_sse_parser *parser, const void *bytes, size_t len);

/* End of stream: discard an unterminated event or line (counted as
 * truncated) and get ready for a new stream (a new BOM is allowed). The
 * last-event-id, the retry time and the counters survive, as a browser keeps
 * them across reconnections. */
void fr_sse_parser_reset(struct fr_sse_parser *parser);

/* The last-event-id string: "" until an event (or a blank line after an
 * `id:` field) sets it. Valid until the next feed, reset or set call. */
const char *fr_sse_parser_last_id(const struct fr_sse_parser *parser);
/* Replace the last-event-id string (e.g. "" after the server rejected it).
 * FR_ETOOBIG past max_event_bytes, FR_ENOMEM. */
int fr_sse_parser_set_last_id(struct fr_sse_parser *parser, const char *id, size_t len);
/* The reconnection time from the last valid `retry:` field, or -1 if none. */
int64_t fr_sse_parser_retry_ms(const struct fr_sse_parser *parser);
/* Copy the counters. */
void fr_sse_parser_stats(const struct fr_sse_parser *parser, struct fr_sse_parser_stats *out);

/* ---------------------------------------------------------------- client */

/* Why a connection ended, reported to on_reconnect. */
enum fr_sse_end {
    FR_SSE_END_EOF = 0,     /* the server ended a 200 response (normal; Wikimedia does it
                               every few minutes) */
    FR_SSE_END_STALL,       /* no byte for stall_timeout_ms */
    FR_SSE_END_NET,         /* connect, TLS, or transfer error */
    FR_SSE_END_HTTP,        /* non-200 status; see the status argument */
    FR_SSE_END_ERROR_EVENT, /* the server sent `event: error` */
    FR_SSE_END_PROTO,       /* 200 but not text/event-stream */
};

/* The client's external effects that tests replace: a monotonic clock and a
 * sleep. sleep_ms is always called with at most 50 ms so a stop request is
 * seen promptly; it may return early. */
struct fr_sse_ops {
    int64_t (*now_ms)(void *ctx);
    void (*sleep_ms)(void *ctx, int64_t ms);
};

/* Counter names, in one table so exporters can walk them. */
#define FR_SSE_CLIENT_STATS(X)                                                                     \
    X(attempts)     /* HTTP requests started */                                                    \
    X(connects)     /* 200 text/event-stream responses */                                          \
    X(reconnects)   /* attempts after the first */                                                 \
    X(events)       /* events delivered to on_event */                                             \
    X(bytes)        /* response body bytes received */                                             \
    X(stalls)       /* connections dropped by the stall timeout */                                 \
    X(net_errors)   /* connect/TLS/transfer failures */                                            \
    X(http_400)     /* 400 and 404: the resume id was refused */                                   \
    X(http_403)     /* 403: User-Agent policy or a block */                                        \
    X(http_429)     /* 429: too many connections */                                                \
    X(http_4xx)     /* other 4xx */                                                                \
    X(http_5xx)     /* 5xx */                                                                      \
    X(http_other)   /* 1xx, 2xx other than 200, 3xx */                                             \
    X(proto_errors) /* 200 with a content type other than text/event-stream */                     \
    X(error_events) /* `event: error` frames */                                                    \
    X(oversize)     /* events dropped by the parser's size cap */                                  \
    X(truncated)    /* connections that ended inside an event */                                   \
    X(comments)     /* comment lines */                                                            \
    X(backoff_ms)   /* total time spent waiting to reconnect */

struct fr_sse_client_stats {
#define FR_SSE_STAT_FIELD(name) uint64_t name;
    FR_SSE_CLIENT_STATS(FR_SSE_STAT_FIELD)
#undef FR_SSE_STAT_FIELD
};

struct fr_sse_client_opts {
    const char *url;          /* required; http or https; copied */
    const char *user_agent;   /* required; descriptive per Wikimedia policy:
                                 "name/version (contact) libcurl/x"; copied */
    fr_sse_event_fn on_event; /* required; runs on the run thread */
    void *arg;                /* passed to every callback below */

    /* Called before every connect. Returns the Last-Event-ID to send, or NULL
     * or "" to send none; the string must stay valid until the next call.
     * NULL callback: the parser's last-event-id (browser behaviour). */
    const char *(*resume_id)(void *arg);
    /* Called when the server answered 400/404 to a request that carried
     * rejected_id as Last-Event-ID. The next connect sends no Last-Event-ID
     * whatever resume_id returns; clear or repair the stored id here. */
    void (*on_bad_resume)(void *arg, const char *rejected_id);
    /* Optional: called after each connection ends, before the wait. status
     * is the HTTP status (0 if none), delay_ms the wait chosen. */
    void (*on_reconnect)(void *arg, enum fr_sse_end why, long status, int64_t delay_ms);

    int64_t min_backoff_ms;       /* 0 = 1000; the base when the server sent no retry: */
    int64_t max_backoff_ms;       /* 0 = 60000 */
    int64_t stall_timeout_ms;     /* 0 = 60000; no byte for this long = dead connection */
    int64_t connect_timeout_ms;   /* 0 = 15000 */
    int64_t retry_after_cap_ms;   /* 0 = 600000; longest Retry-After honoured */
    size_t max_event_bytes;       /* 0 = FR_SSE_DEFAULT_MAX_EVENT */
    unsigned forbidden_limit;     /* consecutive 403s before run fails with
                                     FR_EFORBIDDEN; 0 = 5 */
    volatile sig_atomic_t *stop;  /* optional external stop flag (e.g. set by a signal
                                     handler); nonzero ends the run */
    uint64_t seed;                /* jitter seed; 0 = from the clock */
    const struct fr_sse_ops *ops; /* NULL = real clock and nanosleep */
    void *ops_ctx;
};

struct fr_sse_client;

/* Create a client; nothing is sent yet. Calls curl_global_init (reference
 * counted by libcurl). FR_EINVAL for a missing url, user agent or callback,
 * or a header-breaking byte in them; FR_ECONFIG for an unusable URL or
 * inconsistent limits; FR_ENOMEM. */
int fr_sse_client_create(const struct fr_sse_client_opts *opts, struct fr_sse_client **out);
/* Free the client. Not while run is executing. Accepts NULL. */
void fr_sse_client_destroy(struct fr_sse_client *client);

/* Connect, parse, and reconnect until stopped. Blocks the calling thread.
 * Returns FR_OK after a stop request (within about 100 ms of it), the
 * negative code an on_event call returned, FR_EFORBIDDEN after
 * forbidden_limit consecutive 403s, FR_ECONFIG when the server answers 400
 * or 404 to a request without Last-Event-ID (the URL is wrong), FR_EINVAL if
 * resume_id returns a value with a control byte, FR_ENOMEM. A stop request
 * is sticky: once made, every later run returns FR_OK at once. */
int fr_sse_client_run(struct fr_sse_client *client);

/* Ask run to return. Async-signal-safe; callable from any thread. */
void fr_sse_client_stop(struct fr_sse_client *client);

/* Copy the counters; callable from any thread while run executes. */
void fr_sse_client_stats(const struct fr_sse_client *client, struct fr_sse_client_stats *out);

#endif
