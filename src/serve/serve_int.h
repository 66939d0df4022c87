/*
 * serve_int.h — private to src/serve: the server's state, the route table
 * and the functions the files of the module share.
 *
 *   http.c    the daemon, routing, limits, errors, authentication
 *   stream.c  the ticker thread, stats samples and rates, /api/v1/stream
 *   history.c the charts' ten minutes of history, /api/v1/history
 *   docs.c    the JSON documents (status, live) and /metrics
 *   files.c   safe paths, /lake/ and the web root, HTTP Range
 *   lake_s3.c /lake/ over an S3 warehouse: a pool of S3 clients, ranged
 *             GETs passed through in bounded chunks
 *   tables.c  /api/v1/tables from the catalog
 *   jobs.c    maintenance jobs as child processes
 *   rest.c    the Iceberg REST catalog under /iceberg/ (REST_ROUTES)
 *
 * Locking: srv->lock guards the stream list, the frames, the samples,
 * the history ring,
 * the jobs and topics_err. It may be held while calling
 * MHD_suspend_connection and MHD_resume_connection (libmicrohttpd takes
 * its own locks inside them and never calls back into freshet while
 * holding those), never while doing I/O.
 */
#ifndef FR_SERVE_INT_H
#define FR_SERVE_INT_H

#include "core/buf.h"
#include "serve/serve.h"
#include "stats/stats.h"

#include <netinet/in.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Route table: X(ID, methods, path as documented, auth, answer). The
 * methods column is a bit set of SERVE_GET | SERVE_HEAD | SERVE_POST. */
#define SERVE_GET 1u
#define SERVE_HEAD 2u
#define SERVE_POST 4u
#define SERVE_DELETE 8u
/* clang-format off */
#define SERVE_ROUTES(X)                                                                            \
    X(METRICS, SERVE_GET | SERVE_HEAD, "/metrics", 0,                                             \
      "Prometheus text format 0.0.4: every metric of METRICS.md, `freshet_` prefix, HELP and TYPE.") \
    X(STATUS, SERVE_GET | SERVE_HEAD, "/api/v1/status", 0,                                        \
      "JSON: every stage's figures, `up` from its stats file, per-second rates.")                 \
    X(LIVE, SERVE_GET | SERVE_HEAD, "/api/v1/live", 0,                                            \
      "JSON: the processor's provisional view of the open windows (per-wiki counts and rates, top pages, trending topics).") \
    X(STREAM, SERVE_GET, "/api/v1/stream", 0,                                                     \
      "Server-Sent Events: `event: history` once when it opens, then `event: status` and `event: live` once a second.")                     \
    X(HISTORY, SERVE_GET | SERVE_HEAD, "/api/v1/history", 0,                                      \
      "JSON: the last 10 minutes of the dashboard's chart figures, one point a second (also sent as `event: history` when a stream opens).") \
    X(TABLES, SERVE_GET | SERVE_HEAD, "/api/v1/tables", 0,                                        \
      "JSON: the lake's tables and their live Parquet data files as URLs under `/lake/`.")        \
    X(JOBS, SERVE_GET | SERVE_HEAD, "/api/v1/jobs", 0,                                            \
      "JSON: maintenance jobs started through this server (newest first) and how they ended.")    \
    X(COMPACT, SERVE_POST, "/api/v1/compact", 1,                                                  \
      "Start `freshet compact` as a child process: 202 with the job.")                            \
    X(DLQ_REPLAY, SERVE_POST, "/api/v1/dlq/replay", 1,                                            \
      "Start `freshet dlq replay` as a child process: 202 with the job.")                         \
    X(ICEBERG, SERVE_GET | SERVE_HEAD | SERVE_POST | SERVE_DELETE, "/iceberg/v1/<path>", 2,      \
      "The Iceberg REST catalog over the lake's catalog: the routes in the table below (REST.md).") \
    X(LAKE, SERVE_GET | SERVE_HEAD, "/lake/<path>", 0,                                            \
      "A file under `<data>/lake/warehouse`, or the object `<prefix>/<path>` of an S3 warehouse (lake.warehouse = s3://bucket/prefix), read-only, with HTTP Range support.") \
    X(WEB, SERVE_GET | SERVE_HEAD, "/`, `/explorer`, `/<file>", 0,                                \
      "The dashboard (`index.html`), the explorer (`explorer.html`) and static assets from the web root.")

/* The Iceberg REST routes under /iceberg (apache/iceberg
 * open-api/rest-catalog-open-api.yaml): X(ID, method, path, auth, answer).
 * "{prefix}/" is optional (the catalog name, as GET /v1/config says);
 * {namespace} is levels joined by %1F. auth 1: bearer token. */
#define REST_ROUTES(X)                                                                             \
    X(CONFIG, SERVE_GET, "/v1/config", 0,                                                          \
      "CatalogConfig: `overrides.prefix` is the catalog name (`freshet`).")                        \
    X(NS_LIST, SERVE_GET, "/v1/{prefix}/namespaces", 0,                                            \
      "ListNamespacesResponse: one level below `?parent=` (all of them in one page).")             \
    X(NS_CREATE, SERVE_POST, "/v1/{prefix}/namespaces", 1,                                         \
      "CreateNamespaceResponse; properties in `iceberg_namespace_properties`; 409 when it exists.") \
    X(NS_LOAD, SERVE_GET, "/v1/{prefix}/namespaces/{namespace}", 0,                                \
      "GetNamespaceResponse: the namespace and its properties; 404 when absent.")                 \
    X(NS_EXISTS, SERVE_HEAD, "/v1/{prefix}/namespaces/{namespace}", 0, "204 or 404.")              \
    X(NS_DROP, SERVE_DELETE, "/v1/{prefix}/namespaces/{namespace}", 1,                             \
      "204; 409 NamespaceNotEmptyException while it holds tables.")                               \
    X(NS_PROPS, SERVE_POST, "/v1/{prefix}/namespaces/{namespace}/properties", 1,                   \
      "UpdateNamespacePropertiesResponse (updated, removed, missing).")                           \
    X(T_LIST, SERVE_GET, "/v1/{prefix}/namespaces/{namespace}/tables", 0,                          \
      "ListTablesResponse (all of them in one page).")                                            \
    X(T_CREATE, SERVE_POST, "/v1/{prefix}/namespaces/{namespace}/tables", 1,                       \
      "LoadTableResult of the new table (no stage-create; location is freshet's).")               \
    X(T_LOAD, SERVE_GET, "/v1/{prefix}/namespaces/{namespace}/tables/{table}", 0,                  \
      "LoadTableResult: `metadata-location`, `metadata` (the file's JSON), `config`.")            \
    X(T_EXISTS, SERVE_HEAD, "/v1/{prefix}/namespaces/{namespace}/tables/{table}", 0, "204 or 404.") \
    X(T_DROP, SERVE_DELETE, "/v1/{prefix}/namespaces/{namespace}/tables/{table}", 1,               \
      "204: the catalog row goes, the files stay (purgeRequested=true: 400).")                     \
    X(T_COMMIT, SERVE_POST, "/v1/{prefix}/namespaces/{namespace}/tables/{table}", 1,               \
      "CommitTableResponse; 409 CommitFailedException when a requirement fails.")                 \
    X(TXN_COMMIT, SERVE_POST, "/v1/{prefix}/transactions/commit", 1,                               \
      "204: every table change in one catalog transaction, or none; 409 as above.")
/* clang-format on */

enum serve_route {
#define SERVE_ROUTE_ENUM(id, methods, path, auth, doc) SERVE_R_##id,
    SERVE_ROUTES(SERVE_ROUTE_ENUM)
#undef SERVE_ROUTE_ENUM
        SERVE_R_COUNT
};

#define SERVE_BODY_MAX ((size_t)64 * 1024)
#define SERVE_THREADS 4 /* libmicrohttpd's worker threads; also the S3 clients in the pool */
#define SERVE_JOBS_KEPT 16
#define SERVE_SAMPLES 8 /* one a second: rates over about 5 s */

/* The charts' history (history.c, ADR 0054): X(ID, name in the document).
 * Durations in ms, rates per second, ages in seconds. */
#define SERVE_HIST_FIG_TABLE(X)                                                                    \
    X(FRESHNESS, "freshness_s")                                                                    \
    X(EVENTS_RATE, "events_per_s")                                                                 \
    X(RECORDS_RATE, "records_per_s")                                                               \
    X(BATCH, "batch_ms")                                                                           \
    X(TRIGGER, "trigger_ms")                                                                       \
    X(COMMIT, "commit_ms")                                                                         \
    X(DUP_RATE, "duplicates_per_s")                                                                \
    X(LATE_RATE, "late_per_s")                                                                     \
    X(DLQ_RATE, "dlq_per_s")                                                                       \
    X(WM_LAG, "watermark_lag_s")
enum serve_hist_fig {
#define SERVE_HIST_ENUM(id, name) SERVE_HIST_##id,
    SERVE_HIST_FIG_TABLE(SERVE_HIST_ENUM)
#undef SERVE_HIST_ENUM
        SERVE_HIST_FIGS
};
#define SERVE_HISTORY 600 /* points: ten minutes at one a second */
/* The history document: 600 points of 11 numbers of at most ~16 bytes. */
#define SERVE_HIST_JSON_CAP ((size_t)160 << 10)
struct serve_hist_point {
    int64_t t_ms;              /* Unix ms */
    double v[SERVE_HIST_FIGS]; /* NaN: no value */
};

#define SERVE_REST_BODY_MAX ((size_t)1024 * 1024) /* an Iceberg REST request */

/* serve's own counters, rendered after the stats table's series in
 * /metrics and listed by --metrics-markdown (serve_cmd.c). X(ID, label
 * value, meaning) of freshet_serve_lake_s3_failures_total{answer=...}. */
#define SERVE_S3_FAILURES(X)                                                                       \
    X(BAD_GATEWAY, "502",                                                                          \
      "the store refused the request (a credential, a 4xx, an answer that does not parse): 502")   \
    X(UNAVAILABLE, "503",                                                                          \
      "the store was unavailable after the client's retries (5xx, 429, a timeout, a dropped "      \
      "connection): 503 with Retry-After")                                                         \
    X(ABORTED, "aborted",                                                                          \
      "a chunk of a streamed body failed after the headers were sent: the connection was closed")

enum serve_s3_fail {
#define SERVE_S3_FAIL_ENUM(id, label, doc) SERVE_S3_FAIL_##id,
    SERVE_S3_FAILURES(SERVE_S3_FAIL_ENUM)
#undef SERVE_S3_FAIL_ENUM
        SERVE_S3_FAIL_COUNT
};

/* One request (allocated when its URI arrives, freed when it completes). */
struct serve_req {
    char raw[4096]; /* the request target as sent (percent-encoding intact) */
    int raw_too_long;
    int started;
    size_t body_bytes;
    struct fr_buf body; /* kept for /iceberg/ only (cap SERVE_REST_BODY_MAX) */
};

/* One stream frame: "event: status ... event: live ..." (shared, refcounted
 * under srv->lock). */
struct serve_frame {
    unsigned refs;
    uint64_t gen;
    size_t len;
    char *data;
};

/* One /api/v1/stream connection. */
struct serve_stream {
    struct fr_serve *srv;
    struct MHD_Connection *conn;
    struct serve_frame *frame; /* being sent, or NULL */
    size_t off;
    char *intro; /* "event: history" frame to send before any other, or NULL */
    size_t intro_len, intro_off;
    uint64_t gen; /* of the newest frame taken */
    int prelude;  /* "retry:" line not yet sent */
    int suspended;
    int resume_pending;
    struct serve_stream *next;
};

enum serve_job_state { SERVE_JOB_RUNNING = 1, SERVE_JOB_EXITED, SERVE_JOB_KILLED };

struct serve_job {
    int id;
    char command[32];
    pid_t pid;
    enum serve_job_state state;
    int64_t started_ms, ended_ms;
    int code; /* exit code or signal */
};

struct fr_serve {
    struct fr_serve_opts opts; /* strings below are owned copies */
    char *data_dir, *web_root, *api_token, *self;
    char warehouse[4200];
    struct MHD_Daemon *daemon;
    int port;

    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t ticker;
    int ticker_started;
    int stopping;
    struct serve_stream *streams;
    int nstreams;
    struct serve_frame *frame; /* newest */
    uint64_t frame_gen;
    /* stats samples per stage, newest at [sample_next - 1] */
    struct fr_stats_snap *samples[FR_STATS_STAGES][SERVE_SAMPLES];
    unsigned sample_next, nsamples;
    /* the charts' history, oldest at [hist_next - nhist] (history.c) */
    struct serve_hist_point hist[SERVE_HISTORY];
    unsigned hist_next, nhist;
    struct serve_job jobs[SERVE_JOBS_KEPT]; /* ring, newest at job_next - 1 */
    int job_next, njobs, job_seq;

    struct fr_stats *own; /* serve's own figures (FR_STATS_SERVE) */
    struct serve_s3 *s3;  /* the S3 warehouse's clients, NULL for a local one (lake_s3.c) */
    /* metadata files read or committed, shared by every request's catalog
     * handle (bounded: iceberg/table.c); a REST load of a version already
     * seen is answered without reading the file again */
    struct fr_ice_meta_cache *mcache;
    /* serve's own counters outside the stats table (SERVE_OWN_METRICS) */
    _Atomic uint64_t lake_s3_failures[SERVE_S3_FAIL_COUNT];
    int topics_err; /* last refusal of stats/topics.json (0: none), docs.c */
};

/* rest.c: open a catalog handle for one request (handles are one-thread
 * objects) over the lake's warehouse: the data directory's, or with
 * lake.warehouse = s3://bucket/prefix the bucket (*wh, to be closed with
 * fr_s3_warehouse_close after the catalog). A read (!write) of a lake that
 * does not exist yet is FR_ENOTFOUND: nothing is created. With
 * lake.catalog_uri the handle is files_only (no catalog.db): the tables
 * are that REST catalog's. */
struct fr_s3_warehouse;
struct fr_ice_catalog;
int serve_catalog_open(struct fr_serve *srv, bool write, struct fr_ice_catalog **cat,
                       struct fr_s3_warehouse **wh);

/* http.c */
enum MHD_Result serve_send_json(struct MHD_Connection *conn, unsigned status, struct fr_buf *body);
enum MHD_Result serve_error(struct MHD_Connection *conn, unsigned status, const char *code,
                            const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* serve_error with one more header (hname: value). */
enum MHD_Result serve_error_hdr(struct MHD_Connection *conn, unsigned status, const char *code,
                                const char *hname, const char *hvalue, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* 416 with Content-Range: bytes * /size, for a file of size bytes. */
enum MHD_Result serve_range_unsatisfiable(struct MHD_Connection *conn, uint64_t size);

/* docs.c: documents into out (appending). The snapshots are read here. */
/* group (may be NULL): receives the scale-out members when the process
 * stage is a group (snaps[FR_STATS_PROCESS] then holds its totals), else
 * NULL; the caller frees it. */
int serve_read_snaps(struct fr_serve *srv, struct fr_stats_snap *snaps[FR_STATS_STAGES],
                     struct fr_stats_group **group);
int serve_status_json(struct fr_serve *srv, struct fr_stats_snap *const snaps[FR_STATS_STAGES],
                      const struct fr_stats_group *group, struct fr_buf *out);
int serve_live_json(struct fr_serve *srv, const struct fr_stats_snap *process, struct fr_buf *out);
enum MHD_Result serve_metrics(struct fr_serve *srv, struct MHD_Connection *conn);
enum MHD_Result serve_status(struct fr_serve *srv, struct MHD_Connection *conn);
enum MHD_Result serve_live(struct fr_serve *srv, struct MHD_Connection *conn);

/* stream.c */
int serve_ticker_start(struct fr_serve *srv);
void serve_ticker_stop(struct fr_serve *srv);
/* The sample about 5 s older than now for stage (a copy into out): 1 when
 * there is one, 0 when not. */
int serve_old_sample(struct fr_serve *srv, enum fr_stats_stage stage, struct fr_stats_snap *out);
enum MHD_Result serve_stream(struct fr_serve *srv, struct MHD_Connection *conn);
/* Resume every suspended stream and wait (bounded) until they noticed. */
void serve_streams_close(struct fr_serve *srv);

/* history.c. Record one point from the ticker's snapshots (before they
 * join the sample ring); the document into out (appending); the route. */
void serve_hist_record(struct fr_serve *srv, struct fr_stats_snap *const snaps[FR_STATS_STAGES],
                       int64_t now_ms);
int serve_hist_json(struct fr_serve *srv, struct fr_buf *out);
enum MHD_Result serve_history(struct fr_serve *srv, struct MHD_Connection *conn);

/* files.c */
enum MHD_Result serve_lake(struct fr_serve *srv, struct MHD_Connection *conn,
                           const struct serve_req *req, const char *method);
/* Decode a relative request path (percent-encoded, no query) into out as
 * "seg/seg/...": FR_EINVAL for any segment files.c refuses ("", ".",
 * "..", dot-names, encoded separators or control bytes, malformed escapes,
 * more than 32 segments) or a path longer than outcap. */
int serve_path_decode(const char *raw, char *out, size_t outcap);
/* Parse a Range header ("bytes=A-B", "bytes=A-", "bytes=-N") against size:
 * 1 with [*off, *off + *len), 0 to ignore it (several ranges or a syntax
 * not served: the whole file), -1 when unsatisfiable (416). */
int serve_range(const char *h, uint64_t size, uint64_t *off, uint64_t *len);
/* The Content-Type for a file name, by its extension. */
const char *serve_content_type(const char *name);
enum MHD_Result serve_web(struct fr_serve *srv, struct MHD_Connection *conn,
                          const struct serve_req *req);
/* Percent-encode a relative path for a URL (segments kept). */
int serve_url_path(struct fr_buf *out, const char *rel);

/* lake_s3.c. The pool is opened by fr_serve_start before any thread that
 * uses it and closed after they stopped. */
struct fr_s3;
struct fr_s3_io;
struct fr_ice_catalog;
struct fr_conf;
/* Open SERVE_THREADS clients for the warehouse uri (s3://bucket/prefix)
 * from conf's [s3] section. FR_ECONFIG with a message in err for a bad URI,
 * endpoint or missing credential. */
int serve_s3_open(const struct fr_conf *conf, const char *uri, struct serve_s3 **out, char *err,
                  size_t errlen);
/* Accepts NULL. */
void serve_s3_close(struct serve_s3 *s3);
enum MHD_Result serve_lake_s3(struct fr_serve *srv, struct MHD_Connection *conn, const char *rel,
                              const char *method);
/* The catalog over the S3 warehouse (tables.c): a client taken from the
 * pool, its adapter and the catalog in <data>/lake. On success close it
 * with serve_s3_catalog_close (which gives the client back). */
struct serve_s3_catalog {
    struct serve_s3 *pool;
    struct fr_s3 *client;
    struct fr_s3_io *io;
    struct fr_ice_catalog *cat;
};
/* files_only: the tables are in a REST catalog (lake.catalog_uri): no
 * catalog.db is opened; the handle maps paths and does file I/O. */
int serve_s3_catalog_open(struct fr_serve *srv, struct serve_s3_catalog *sc, bool files_only);
void serve_s3_catalog_close(struct serve_s3_catalog *sc);
/* The message of the client's last failure (while it is still held). */
const char *serve_s3_catalog_errmsg(const struct serve_s3_catalog *sc);
/* "s3://bucket/prefix" of the warehouse. */
const char *serve_s3_uri(const struct serve_s3 *s3);
/* The HTTP status for an S3 failure rc (404, 502 or 503), counted. */
unsigned serve_s3_status(struct fr_serve *srv, int rc);
/* serve's own counters in the Prometheus text format. */
int serve_own_metrics(struct fr_serve *srv, struct fr_buf *out);
int serve_own_metrics_markdown(struct fr_buf *out);

/* tables.c */
enum MHD_Result serve_tables(struct fr_serve *srv, struct MHD_Connection *conn);

/* rest.c */
enum MHD_Result serve_rest(struct fr_serve *srv, struct MHD_Connection *conn,
                           const struct serve_req *req, const char *method);
int serve_rest_routes_markdown(struct fr_buf *out);

/* jobs.c */
enum MHD_Result serve_job_start(struct fr_serve *srv, struct MHD_Connection *conn,
                                enum serve_route route);
enum MHD_Result serve_jobs(struct fr_serve *srv, struct MHD_Connection *conn);
/* Reap finished jobs (ticker thread). */
void serve_jobs_reap(struct fr_serve *srv);
/* Constant-time check of an Authorization header against the token. */
int serve_bearer_ok(const char *header, const char *token);

#endif
