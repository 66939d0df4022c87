/*
 * feed.h — `freshet feed`: a local stand-in for stream.wikimedia.org.
 *
 * The feed serves one stream of positions 0, 1, 2, ... at Wikimedia's path
 * with Wikimedia's framing, ids and resume rules (PROTOCOL.md §2–§5). The
 * content of every position is a pure function of (source, seed, flags):
 * recorded NDJSON files or a calibrated synthetic generator, with stream
 * faults (malformed, duplicate, late, out-of-order, future events) decided
 * per position from the seed. Every connection therefore sees the same
 * bytes at the same position, and a test can recompute what was sent.
 * Connection faults (disconnect, stall, overlap after resume) are counted
 * per connection and do not change the stream.
 *
 * Layers, in reading order:
 *   gen_data.c, gen_text.c, gen.c  the synthetic generator (one event = f(seed, pos))
 *   files.c                        recorded NDJSON as a stream
 *   faults.c                       the per-position fault plan and its byte edits
 *   stream.c                       source + faults, Kafka timestamps, seek, SSE wire format
 *   truth.c                        the ground-truth file
 *   server.c                       libmicrohttpd, one thread per connection
 *   feed_cmd.c                     flags and the process lifecycle
 *
 * Thread safety: a stream is immutable after fr_feed_stream_open and may be
 * read by any number of threads, each through its own cursor. A truth
 * recorder is internally locked. A server owns its threads.
 */
#ifndef FR_FEED_H
#define FR_FEED_H

#include "core/buf.h"

#include <stddef.h>
#include <stdint.h>

#define FR_FEED_PATH "/v2/stream/recentchange"
#define FR_FEED_TOPIC "eqiad.mediawiki.recentchange"
#define FR_FEED_TOPIC_IDLE "codfw.mediawiki.recentchange"
#define FR_FEED_UNBOUNDED INT64_MAX

/* Malformed kinds. Names appear in the truth file as "malformed:<name>";
 * never rename one (tests and scripts match on them). */
#define FR_FEED_MALFORMED_TABLE(X)                                                                 \
    X(TRUNCATED, "truncated", "the JSON text cut short at a random byte (not valid JSON)")         \
    X(MISSING_ID, "missing_meta_id", "meta.id removed")                                            \
    X(MISSING_DT, "missing_meta_dt", "meta.dt removed")                                            \
    X(MISSING_WIKI, "missing_wiki", "wiki removed")                                                \
    X(MISSING_TYPE, "missing_type", "type removed")                                                \
    X(NS_STRING, "namespace_string", "namespace sent as a string (\"0\")")                         \
    X(BOT_STRING, "bot_string", "bot sent as the string \"yes\"")                                  \
    X(DT_NOT_DATE, "meta_dt_not_date", "meta.dt is a string that is not a date")                   \
    X(ID_NOT_UUID, "meta_id_not_uuid", "meta.id is a string that is not a UUID")                   \
    X(BAD_TYPE, "type_invalid", "type is not one of the schema's values")                          \
    X(OVERSIZE, "oversize", "a valid event padded to --oversize-bytes")

enum fr_feed_malformed {
    FR_FEED_MAL_NONE = 0,
#define FR_FEED_MAL_ENUM(sym, name, doc) FR_FEED_MAL_##sym,
    FR_FEED_MALFORMED_TABLE(FR_FEED_MAL_ENUM)
#undef FR_FEED_MAL_ENUM
        FR_FEED_MAL_COUNT
};

/* Name of a malformed kind ("truncated"); "" for NONE. */
const char *fr_feed_malformed_name(enum fr_feed_malformed kind);
/* Parse a comma-separated list of kind names into a bit mask (bit k for
 * kind k); "all" selects every kind. FR_EINVAL names the bad item in err. */
int fr_feed_malformed_parse(const char *list, uint32_t *mask, char *err, size_t errlen);

/* Everything that defines a stream and how connections are served. Plain
 * data; fr_feed_opts_init sets the documented defaults. String pointers are
 * borrowed: they must outlive the stream opened from them. */
struct fr_feed_opts {
    /* source */
    const char *const *files; /* recorded NDJSON files, in ingest order */
    size_t nfiles;
    int synthetic;
    uint64_t seed;
    int64_t count;       /* number of positions; FR_FEED_UNBOUNDED for synthetic default */
    int64_t start_ms;    /* synthetic: event time of position 0 (Unix ms) */
    double rate;         /* events/s released to clients; 0 = all at once */
    double event_rate;   /* synthetic events per second of event time; 0: rate, or 38 */
    double canary_rate;  /* synthetic: probability that a position is a canary */
    int64_t offset_base; /* Kafka offset of position 0 (meta.offset of synthetic events) */
    /* stream faults (per position, from the seed) */
    double dup_rate;
    int64_t dup_window; /* a duplicate repeats one of the previous dup_window positions */
    double malformed_rate;
    uint32_t malformed_kinds; /* bit mask over enum fr_feed_malformed */
    int64_t oversize_bytes;
    double late_rate;
    int64_t late_ms;
    int late_random; /* lateness uniform in [1, late_ms] instead of exactly late_ms */
    double ooo_rate;
    int64_t ooo_ms;
    double future_rate;
    int64_t future_ms;
    /* connection faults and serving */
    int64_t disconnect_every;
    int64_t stall_every;
    int64_t stall_ms;
    int64_t overlap;
    int close_at_end; /* end the response after the last position of a finite stream */
    int start_latest; /* a connection without a resume position starts at the head */
    int64_t history_from_ms; /* retention: positions with Kafka ts below this are gone
                                (INT64_MIN: none) */
    int max_conns;
    /* MediaWiki-API fixture (api.c): faults per request */
    int64_t api_latency_ms; /* added before every answer */
    double api_error_rate;  /* 503 */
    double api_429_rate;    /* 429 with Retry-After */
    double api_maxlag_rate; /* the maxlag error, when the request carries maxlag */
    double api_rate_limit;  /* requests/s over all wikis; beyond: 429; 0 = none */
};

void fr_feed_opts_init(struct fr_feed_opts *opts);

/* ---- the stream ------------------------------------------------------ */

struct fr_feed_stream;
struct fr_feed_cursor;

/* Open a stream: load files (whole, into memory) or set up the generator.
 * Validates opts; on failure returns FR_ECONFIG / FR_EIO / FR_ENOMEM with a
 * message in err. The caller owns *out and frees it with fr_feed_stream_close
 * (which accepts NULL) after every cursor on it is freed. */
int fr_feed_stream_open(const struct fr_feed_opts *opts, struct fr_feed_stream **out, char *err,
                        size_t errlen);
void fr_feed_stream_close(struct fr_feed_stream *stream);
/* Number of positions, FR_FEED_UNBOUNDED for an endless synthetic stream. */
int64_t fr_feed_stream_count(const struct fr_feed_stream *stream);
const struct fr_feed_opts *fr_feed_stream_opts(const struct fr_feed_stream *stream);

/* A cursor holds one thread's caches and scratch buffers. Not shared. */
int fr_feed_cursor_new(const struct fr_feed_stream *stream, struct fr_feed_cursor **out);
void fr_feed_cursor_free(struct fr_feed_cursor *cur);

/* Kafka timestamp (ms) of position pos (0 <= pos < count): monotone
 * non-decreasing in pos; equal to ms(meta.dt) unless a fault moved meta.dt. */
int64_t fr_feed_stream_ts(struct fr_feed_cursor *cur, int64_t pos);
/* Kafka offsetsForTimes: the first position whose timestamp is >= ts_ms, or
 * the count when there is none. */
int64_t fr_feed_stream_seek(struct fr_feed_cursor *cur, int64_t ts_ms);

/* What a position is, for the ground truth. */
enum fr_feed_fault {
    FR_FEED_FAULT_NONE = 0,
    FR_FEED_FAULT_MALFORMED,
    FR_FEED_FAULT_DUP,
    FR_FEED_FAULT_LATE,
    FR_FEED_FAULT_OOO,
    FR_FEED_FAULT_FUTURE
};

struct fr_feed_info {
    int64_t pos;
    int64_t ts_ms; /* Kafka timestamp */
    int canary;    /* meta.domain == "canary" */
    enum fr_feed_fault fault;
    enum fr_feed_malformed malformed;
    int64_t dup_of;   /* DUP: the earlier position repeated */
    int64_t shift_ms; /* LATE/OOO: ms behind ts_ms; FUTURE: ms ahead */
    int has_id;       /* meta_id holds the event's meta.id */
    char meta_id[40];
};

/* Append position pos's event JSON (one line, no newline) to payload and
 * describe it in info (may be NULL). FR_ETOOBIG when payload's cap is too
 * small. */
int fr_feed_stream_render(struct fr_feed_cursor *cur, int64_t pos, struct fr_buf *payload,
                          struct fr_feed_info *info);
/* Describe position pos without keeping its bytes (cheap for plain events). */
int fr_feed_stream_info(struct fr_feed_cursor *cur, int64_t pos, struct fr_feed_info *info);
/* Append info's tags as comma-separated JSON strings ("dup_of:12",
 * "malformed:truncated", "late:300000", "ooo:812", "future:3600000",
 * "canary"); nothing for a plain event. */
int fr_feed_info_tags(const struct fr_feed_info *info, struct fr_buf *out);

/* ---- the wire -------------------------------------------------------- */

/* Append Wikimedia's id for a message with Kafka timestamp ts_ms:
 * [{"topic":"eqiad…","partition":0,"timestamp":ts_ms+1},{"topic":"codfw…","partition":0,"offset":-1}]
 */
int fr_feed_id_append(struct fr_buf *out, int64_t ts_ms);
/* The first bytes of a response: ":ok\n\n" (SSE) or "\n" (NDJSON). */
const char *fr_feed_prelude(int ndjson);
/* Append one SSE frame: "event: message\nid: <id>\ndata: <payload>\n\n". */
int fr_feed_frame_append(struct fr_buf *out, int64_t ts_ms, const void *payload, size_t len);

/* Where a connection starts, from Last-Event-ID and ?since=. */
enum fr_feed_resume_kind {
    FR_FEED_RESUME_DEFAULT = 0, /* no position given: earliest (or head with start_latest) */
    FR_FEED_RESUME_TIMESTAMP,   /* first position with Kafka ts >= ts_ms */
    FR_FEED_RESUME_OFFSET,      /* position offset - offset_base */
    FR_FEED_RESUME_LATEST,      /* offset -1: the head at connect time */
    FR_FEED_RESUME_NONE,        /* our topic not assigned: nothing is ever sent */
    FR_FEED_RESUME_SINCE        /* ?since= (truth records only; seeks like TIMESTAMP) */
};

struct fr_feed_resume {
    enum fr_feed_resume_kind kind;
    int64_t ts_ms;
    int64_t offset;
};

/* Parse a Last-Event-ID header as KafkaSSE validates it: a non-empty JSON
 * array whose items are topic strings or {topic: string, partition: int,
 * timestamp|offset: int}; offset wins over timestamp. FR_EJSON (HTTP 400)
 * with a reason in err when malformed, FR_ENOTFOUND (HTTP 404) when a topic
 * is not one of this stream's. */
int fr_feed_resume_parse(const char *hdr, size_t len, struct fr_feed_resume *resume, char *err,
                         size_t errlen);
/* Parse ?since=: integer Unix ms, or an RFC 3339 / ISO-8601 date-time
 * (a date alone means midnight UTC). FR_EINVAL when neither. */
int fr_feed_since_parse(const char *s, int64_t *ms);

/* ---- ground truth ---------------------------------------------------- */

struct fr_feed_truth;

/* Create a recorder that writes path (atomically) on demand; path NULL
 * records nothing and every call is a no-op. The caller owns *out. */
int fr_feed_truth_new(const struct fr_feed_stream *stream, const char *path,
                      struct fr_feed_truth **out);
/* Stop the background writer, write a final file marked complete, free.
 * Accepts NULL. Returns the result of the last write. */
int fr_feed_truth_finish(struct fr_feed_truth *truth);
/* Start the background writer (writes after each connection closes). */
int fr_feed_truth_start(struct fr_feed_truth *truth);

/* One connection's record. Handles are indexes, valid until finish. */
struct fr_feed_conn_info {
    char remote[64];
    enum fr_feed_resume_kind resume;
    int64_t requested; /* position the client asked for (after resolution) */
    int64_t start;     /* first position sent (requested minus overlap) */
    int ndjson;
};
int fr_feed_truth_conn_open(struct fr_feed_truth *truth, const struct fr_feed_conn_info *ci,
                            int64_t *handle);
/* Position pos (== start + events sent so far) was fully handed to the socket. */
void fr_feed_truth_conn_sent(struct fr_feed_truth *truth, int64_t handle, int64_t pos);
void fr_feed_truth_conn_stall(struct fr_feed_truth *truth, int64_t handle);
/* reason: "client", "disconnect_every", "end", "shutdown", "error". */
void fr_feed_truth_conn_close(struct fr_feed_truth *truth, int64_t handle, const char *reason);
/* Write the file now (synchronously). */
int fr_feed_truth_write(struct fr_feed_truth *truth, int complete);

/* ---- the MediaWiki-API fixture (api.c, docs/ENRICH.md) ---------------- */

#define FR_FEED_API_PATH "/api/{wiki}/w/api.php"
#define FR_FEED_TITLE_MAX 255 /* bytes of a normalised title (MediaWiki's limit) */

enum fr_feed_page_kind {
    FR_FEED_PAGE_ITEM = 0, /* exists, pageprops.wikibase_item = Q<qid> */
    FR_FEED_PAGE_NO_ITEM,  /* exists without an item (talk, user, file, unconnected) */
    FR_FEED_PAGE_MISSING,  /* "missing": true (deleted or never created) */
    FR_FEED_PAGE_INVALID   /* "invalid": true with an invalidreason */
};

/* The fixture's answer for one title. */
struct fr_feed_page {
    enum fr_feed_page_kind kind;
    int ns;
    int64_t pageid;
    int64_t qid;
    const char *reason;                     /* INVALID: the invalidreason */
    char title[2 * FR_FEED_TITLE_MAX + 96]; /* normalised (INVALID: as given) */
};

/* Index of a wiki of the generator by database name ("enwiki") or host
 * ("en.wikipedia.org"); -1 when unknown. */
int fr_feed_api_wiki(const char *name, size_t len);
/* The fixture's deterministic answer for title[0..len) on wiki (an index
 * from fr_feed_api_wiki): a pure function, the rules in api.c's header.
 * Thread-safe. FR_EINVAL for a bad wiki index. */
int fr_feed_api_page(int wiki, const char *title, size_t len, struct fr_feed_page *page);
struct fr_buf;
/* The fixture's label of item Q<qid> in language lang (a pure function,
 * the rules in api_labels.c's header): 1 with the text appended to out,
 * 0 when the item has no label in lang, FR_ENOTFOUND when the item is
 * missing. Thread-safe. */
int fr_feed_api_label(uint64_t qid, const char *lang, struct fr_buf *out);
/* MediaWiki's first-letter upper-casing for the scripts the generator uses. */
uint32_t fr_feed_api_upper(uint32_t cp);

/* What the fixture served (GET /api/counters answers them as JSON). */
#define FR_FEED_API_COUNTERS(X)                                                                    \
    X(REQUESTS, "requests", "requests to /api/<wiki>/w/api.php")                                   \
    X(ANSWERED, "answered", "requests answered with pages")                                        \
    X(TITLES, "titles", "titles asked for in answered requests")                                   \
    X(PAGES_ITEM, "pages_item", "pages answered with a wikibase_item")                             \
    X(PAGES_NO_ITEM, "pages_no_item", "pages answered without an item")                            \
    X(PAGES_MISSING, "pages_missing", "pages answered missing")                                    \
    X(PAGES_INVALID, "pages_invalid", "titles answered invalid")                                   \
    X(ERR_5XX, "err_5xx", "503 answers injected (--api-error-rate)")                               \
    X(ERR_429, "err_429", "429 answers injected (--api-429-rate)")                                 \
    X(RATE_LIMITED, "rate_limited", "429 answers from the rate limit (--api-rate-limit)")          \
    X(MAXLAG, "maxlag", "maxlag errors injected (--api-maxlag)")                                   \
    X(BAD_REQUEST, "bad_request", "requests with unsupported parameters")                          \
    X(ENTITIES, "entities", "items answered by wbgetentities")                                     \
    X(ENTITIES_MISSING, "entities_missing", "items answered missing by wbgetentities")             \
    X(LABELS, "labels", "labels served by wbgetentities")

enum {
#define FR_FEED_API_ENUM(sym, name, doc) FR_FEED_API_##sym,
    FR_FEED_API_COUNTERS(FR_FEED_API_ENUM)
#undef FR_FEED_API_ENUM
        FR_FEED_API_NCOUNTERS
};

struct fr_feed_api;
const char *fr_feed_api_counter_name(int counter);
int64_t fr_feed_api_counter(const struct fr_feed_api *api, int counter);
int fr_feed_api_counters_json(const struct fr_feed_api *api, struct fr_buf *out);

/* ---- the server ------------------------------------------------------ */

struct fr_feed_server;

/* Parse "HOST:PORT", "[V6]:PORT", ":PORT" or "PORT" (host defaults to
 * 127.0.0.1). FR_EINVAL when malformed or the host is not a literal IP or
 * "localhost". */
int fr_feed_listen_parse(const char *spec, char *host, size_t hostlen, int *port);

/* Start serving stream (borrowed, must outlive the server) on listen; truth
 * may be NULL. *url receives "http://HOST:PORT/v2/stream/recentchange" with
 * the bound port. The caller owns *out. */
int fr_feed_server_start(const struct fr_feed_stream *stream, struct fr_feed_truth *truth,
                         const char *listen, struct fr_feed_server **out, char *url, size_t urllen,
                         char *err, size_t errlen);
/* The server's API fixture (its counters); valid until stop. */
const struct fr_feed_api *fr_feed_server_api(const struct fr_feed_server *server);
/* Stop accepting, end every connection within ~100 ms, join, free. NULL ok. */
void fr_feed_server_stop(struct fr_feed_server *server);

#endif
