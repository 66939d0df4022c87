/*
 * s3.h — an S3 client over libcurl with our own SigV4 (sigv4.h): put
 * (create-only with If-None-Match: *), get, ranged get, head, list
 * (ListObjectsV2, paginated), delete, multipart upload (automatic above a
 * threshold, and as a streaming writer), and the clean-up of abandoned
 * multipart uploads. Works with AWS S3 (virtual-host addressing), MinIO
 * and moto (path-style). docs/S3.md says how to configure it;
 * docs/adr/0011-s3-client.md why it is built this way.
 *
 * Retries. Every request is retried on 5xx, 429, a 400 RequestTimeout,
 * timeouts, stalls and connection errors, with exponential backoff and
 * full jitter, bounded by max_attempts and by a total time budget; the
 * clock, the sleep and the random source sit behind struct fr_s3_sys so
 * tests run without waiting. A request that is not retriable, or that ran
 * out of attempts, returns a code whose class (fr_err_class) says what the
 * caller should do:
 *   FR_ECREDENTIAL (fatal)  403, or 400 ExpiredToken / InvalidToken: wrong,
 *                           unknown, expired or insufficient credential; never retried
 *   FR_ENOTFOUND   (fatal)  404
 *   FR_EEXIST      (fatal)  412 on a create-only put: the key exists
 *   FR_EREFUSED    (fatal)  any other 4xx: the request itself is wrong
 *   FR_EUNAVAILABLE (retry) 5xx / 429 still failing after the last attempt
 *   FR_ETIMEOUT    (retry)  the peer stalled or the request timed out
 *   FR_ECLOSED / FR_EIO (retry) connection refused, reset or dropped
 *   FR_EPROTO      (data)   an answer that does not parse
 * fr_s3_errmsg() describes the last failure (method, bucket, key, status,
 * S3 error code, attempts) and never contains the secret key or token.
 *
 * Threads. A struct fr_s3 (one curl handle, one connection) belongs to one
 * thread at a time. Different handles may run in parallel.
 *
 * Ownership. fr_s3_open copies everything from opts. Buffers passed in are
 * the caller's; the client only appends to them (their caps bound what an
 * answer may make us hold).
 */
#ifndef FR_OBJSTORE_S3_H
#define FR_OBJSTORE_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fr_buf;
struct fr_conf;
struct fr_s3; /* a client (opaque) */

/* Time and randomness, so tests control backoff. All members set, or the
 * whole struct NULL for the real ones. */
struct fr_s3_sys {
    int64_t (*wall_ms)(void *ctx);  /* signing date */
    int64_t (*mono_ms)(void *ctx);  /* retry budget */
    void (*sleep_ms)(void *ctx, int64_t ms);
    uint64_t (*random)(void *ctx);  /* jitter */
    void *ctx;
};

struct fr_s3_opts {
    const char *endpoint;    /* "http://127.0.0.1:9000", "https://s3.eu-west-1.amazonaws.com" */
    const char *region;      /* "us-east-1" when NULL */
    const char *bucket;      /* required */
    bool path_style;         /* true: <endpoint>/<bucket>/<key>; false: <bucket>.<host>/<key> */
    const char *access_key_id;     /* required */
    const char *secret_access_key; /* required; never logged */
    const char *session_token;     /* may be NULL; never logged */
    int max_attempts;              /* per request; 0: 5 */
    int64_t retry_budget_ms;       /* total time per request incl. backoff; 0: 60000 */
    int64_t backoff_base_ms;       /* first backoff ceiling; 0: 100 */
    int64_t backoff_max_ms;        /* ceiling of one backoff; 0: 5000 */
    int64_t connect_timeout_ms;    /* 0: 5000 */
    int64_t stall_timeout_ms;      /* abort a transfer without progress this long; 0: 15000 */
    size_t multipart_threshold;    /* fr_s3_put of more bytes goes multipart; 0: 16 MiB */
    size_t part_bytes;             /* multipart part size (>= 5 MiB on AWS); 0: 8 MiB */
    size_t max_answer_bytes;       /* cap of a non-object answer (XML); 0: 4 MiB */
    const struct fr_s3_sys *sys;   /* NULL: the real clock, sleep and random */
};

/* Fill opts from the [s3] configuration (conf_table.h). Credentials come
 * from s3.access_key_id / s3.secret_access_key / s3.session_token (secret
 * keys: environment FRESHET_S3_* only), else from AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN. Pointers point into conf or
 * the environment. bucket is left NULL (it comes from the warehouse URI). */
void fr_s3_opts_from_conf(const struct fr_conf *conf, struct fr_s3_opts *opts);

/* Open a client; nothing is sent yet. FR_ECONFIG naming the missing or
 * bad option (never the value of a secret); FR_ENOMEM. Calls
 * curl_global_init (reference counted by libcurl), so open the first
 * client before starting other threads. */
int fr_s3_open(const struct fr_s3_opts *opts, struct fr_s3 **s3);
/* Close. Accepts NULL. */
void fr_s3_close(struct fr_s3 *s3);

/* The last failure on this handle ("" after a success). Never holds a secret. */
const char *fr_s3_errmsg(const struct fr_s3 *s3);
/* Requests sent and retries made since open (for tests and metrics). */
void fr_s3_counters(const struct fr_s3 *s3, uint64_t *requests, uint64_t *retries);

/* ------------------------------------------------------------ objects -- */

struct fr_s3_object {
    char key[1024];
    int64_t size;
    int64_t mtime_ms; /* -1 when unknown */
    char etag[80];    /* with its quotes, as S3 sends it */
};

/* Put len bytes at key. create_only sends If-None-Match: * and fails with
 * FR_EEXIST when the key exists (atomically: of racing creators exactly
 * one wins). Above multipart_threshold the body goes as a multipart upload
 * (create-only is then checked with a HEAD first and again on complete
 * where the store supports it). etag may be NULL. */
int fr_s3_put(struct fr_s3 *s3, const char *key, const void *data, size_t len, bool create_only,
              char etag[80]);
/* Replace key only if its current ETag is if_etag (If-Match): a
 * compare-and-swap for small state kept in the bucket (a checkpoint). 412
 * gives FR_ECONFLICT (someone else moved it; reload and decide). At most
 * multipart_threshold bytes. new_etag may be NULL. */
int fr_s3_put_if_match(struct fr_s3 *s3, const char *key, const void *data, size_t len,
                       const char *if_etag, char new_etag[80]);
/* Append the object to buf (FR_ETOOBIG, nothing kept, when it exceeds the
 * cap of buf). */
int fr_s3_get(struct fr_s3 *s3, const char *key, struct fr_buf *buf);
/* Append bytes [offset, offset+len) (clipped at the end of the object). */
int fr_s3_get_range(struct fr_s3 *s3, const char *key, int64_t offset, int64_t len,
                    struct fr_buf *buf);
/* Size, mtime and ETag; FR_ENOTFOUND when absent. */
int fr_s3_head(struct fr_s3 *s3, const char *key, struct fr_s3_object *obj);
/* Delete (S3 answers 204 whether or not the key existed). */
int fr_s3_delete(struct fr_s3 *s3, const char *key);
/* Call fn for every object whose key starts with prefix, in key order,
 * following continuation tokens; at most max_keys objects (0: 1,000,000)
 * or FR_ETOOBIG. A negative return from fn stops the listing with it. */
int fr_s3_list(struct fr_s3 *s3, const char *prefix, size_t max_keys,
               int (*fn)(void *arg, const struct fr_s3_object *obj), void *arg);

/* ------------------------------------------------------ streaming put -- */

/*
 * An upload written in pieces (a Parquet file): bytes are buffered up to
 * part_bytes; the first full buffer starts a multipart upload, each later
 * one is a part. commit sends what is left (one plain PUT when no part was
 * needed) and completes; abort (or a failed commit) aborts the multipart
 * upload, so no object appears. State machine in s3.c.
 */
struct fr_s3_upload;
int fr_s3_upload_begin(struct fr_s3 *s3, const char *key, bool create_only,
                       struct fr_s3_upload **up);
int fr_s3_upload_write(struct fr_s3_upload *up, const void *data, size_t len);
/* Complete and free. etag may be NULL. */
int fr_s3_upload_commit(struct fr_s3_upload *up, char etag[80]);
/* Abort and free. Accepts NULL. */
void fr_s3_upload_abort(struct fr_s3_upload *up);

/* Abort multipart uploads under prefix that were initiated before
 * older_than_ms (what a writer killed mid-upload leaves: invisible, but
 * billed). *aborted may be NULL. */
int fr_s3_abort_stale_uploads(struct fr_s3 *s3, const char *prefix, int64_t older_than_ms,
                              uint32_t *aborted);

/* Bucket-level, for tests and setup: create the bucket (FR_OK when it
 * already exists and is ours). */
int fr_s3_create_bucket(struct fr_s3 *s3);

#endif
