/*
 * serve.h — `freshet serve`: the HTTP server of docs/API.md (metrics, JSON
 * API, the dashboard's event stream, the lake's files, the web pages and
 * the maintenance jobs), on libmicrohttpd.
 *
 * The server only reads what the stage processes publish (stats files, the
 * live view, the catalog, the warehouse), so it can be started, stopped and
 * killed independently of them, and they of it. The one thing it starts is
 * a maintenance job (`freshet compact`, `freshet dlq replay`), as a child
 * process, on an authenticated request.
 *
 * Threads: fr_serve_start starts libmicrohttpd's worker threads and one
 * ticker thread (once a second: samples the stats files, builds the stream
 * frames, wakes the suspended streams, reaps jobs). fr_serve_stop must be
 * called from the thread that started the server.
 */
#ifndef FR_SERVE_H
#define FR_SERVE_H

#include "conf/conf.h"

#include <stddef.h>

struct fr_buf;

struct fr_serve_opts {
    const char *data_dir;     /* required; read-only use */
    const char *listen;       /* "127.0.0.1:8787", "localhost:0", "[::1]:8787" */
    const char *web_root;     /* the pages' directory; NULL or "": none (404) */
    const char *api_token;    /* bearer token; NULL or "": job endpoints answer 403 */
    int max_connections;      /* accepted at once */
    int max_streams;          /* open /api/v1/stream connections */
    int timeout_s;            /* per-connection inactivity timeout */
    size_t request_max_bytes; /* per-connection memory for the request (headers) */
    /* For jobs: the freshet binary and the global options to pass it. */
    const char *self;
    char **global_args;
    int nglobal;
    /* The loaded configuration (must outlive the server); may be NULL (a
     * local warehouse, no REST client). lake.warehouse and the [s3] section
     * are read from it at start: with an S3 warehouse /lake/ and
     * /api/v1/tables read the bucket, and the REST catalog keeps its files
     * there. With
     * lake.catalog_uri set the lake's tables are in that catalog:
     * /api/v1/tables reads them there, and the /iceberg routes answer 501
     * (this serve's local catalog is not the lake). */
    const struct fr_conf *conf;
};

struct fr_serve;

/* Bind and start serving. FR_EINVAL for a bad listen address, FR_EIO when
 * the address cannot be bound (the message is on stderr), FR_ENOMEM. All
 * strings in opts are copied or must outlive the server (global_args). */
int fr_serve_start(const struct fr_serve_opts *opts, struct fr_serve **out);
/* The bound port (useful after listening on port 0). */
int fr_serve_port(const struct fr_serve *srv);
/* Close every stream, stop the threads, release. Jobs still running are
 * left running (they are ordinary freshet commands). Accepts NULL. */
void fr_serve_stop(struct fr_serve *srv);

/* The route table of docs/API.md as markdown (between its markers). */
int fr_serve_routes_markdown(struct fr_buf *out);

/* `freshet serve`. self and the global options are those of the running
 * binary (main passes them), used to start jobs with the same settings. */
int fr_cmd_serve(struct fr_conf *conf, const char *self, char **global_args, int nglobal, int argc,
                 char **argv);

#endif
