/*
 * rest.h — the Iceberg REST catalog (apache/iceberg
 * open-api/rest-catalog-open-api.yaml) over freshet's library: the table
 * operations `freshet serve` answers with (rest_updates.c), and a client
 * for any REST catalog (rest_client.c). docs/REST.md, adr/0015.
 *
 * Server side. The functions take request JSON as sent and append answer
 * JSON to out; they run on the calling thread with that thread's catalog
 * handle (see iceberg.h). Error codes map to the REST error model:
 *   FR_ENOTFOUND -> 404 (NoSuchTableException / NoSuchNamespaceException)
 *   FR_EEXIST    -> 409 AlreadyExistsException
 *   FR_EREQUIREMENT, FR_ECONFLICT -> 409 CommitFailedException
 *   FR_EJSON, FR_EINVAL, FR_EUNSUPPORTED, FR_ETOOBIG -> 400 BadRequestException
 *   FR_EBUSY -> 503; FR_EIO after a failed COMMIT (outcome unknown) -> 500
 *   CommitStateUnknownException.
 *
 * Client side. fr_ice_rest_* below talk to a REST catalog through an ops
 * table (libcurl in production, faults in tests). Reads and non-commit
 * writes retry 5xx and transport errors with backoff. A commit is never
 * retried by the client: a 500/502/503/504 or a lost connection after the
 * request was sent is FR_EUNKNOWN, because the server may have applied it.
 * The caller then reloads the table and looks for its own marker (freshet's
 * snapshot summary keys, FR_ICE_SUMMARY_*) with fr_ice_rest_find_epoch
 * before it retries; fr_ice_rest_commit_epoch does exactly that.
 */
#ifndef FR_ICEBERG_REST_H
#define FR_ICEBERG_REST_H

#include "iceberg/iceberg.h"

#include <stddef.h>
#include <stdint.h>

struct fr_buf;

/* One table's change: a CommitTableRequest body (or a table-changes item)
 * without the identifier: {"requirements":[...],"updates":[...]}. */
struct fr_ice_rest_change {
    const char *ns;
    const char *name;
    const char *json;
    size_t len;
};

/* ------------------------------------------------------------- server -- */

/* LoadTableResult of ns.name: {"metadata-location", "metadata" (the
 * metadata file's JSON as stored), "config": {}}. */
int fr_ice_rest_load(struct fr_ice_catalog *cat, const char *ns, const char *name,
                     struct fr_buf *out);
/* CreateTableRequest -> a new table in ns (which must exist): name,
 * schema (field ids kept, schema id 0), partition-spec, write-order,
 * properties; location only when it is the one freshet assigns;
 * stage-create is FR_EUNSUPPORTED. LoadTableResult into out (may be NULL). */
int fr_ice_rest_create(struct fr_ice_catalog *cat, const char *ns, const char *json, size_t len,
                       struct fr_buf *out);
/* Apply every change in one catalog transaction (the compare-and-swap of
 * iceberg.h: all tables move or none). Requirements are checked against
 * the version each attempt loads. When out is not NULL, the first table's
 * CommitTableResponse ({"metadata-location","metadata"}) is appended. */
int fr_ice_rest_commit(struct fr_ice_catalog *cat, const struct fr_ice_rest_change *changes,
                       uint32_t n, struct fr_buf *out);

/* ------------------------------------------------------------- client -- */

/*
 * The HTTP effect, an ops table. request sends one request (body may be
 * NULL; token NULL or "" sends no Authorization) and stores the status and
 * the answer's body (capped by resp's cap: FR_ETOOBIG past it). It returns
 * FR_OK whenever an HTTP answer arrived, whatever its status, and a
 * negative code when none did: FR_EAGAIN when the request was certainly
 * not sent (connection refused), FR_ETIMEOUT, FR_ECLOSED or FR_EIO when it
 * may have been.
 * fr_ice_rest_curl() is libcurl (one easy handle per call; loopback or
 * any URL the caller configures). sleep_ms may be NULL (nanosleep).
 */
struct fr_ice_http_ops {
    int (*request)(void *ctx, const char *method, const char *url, const char *token,
                   const char *body, size_t len, int timeout_ms, long *status, struct fr_buf *resp);
    void (*sleep_ms)(void *ctx, int ms);
};

const struct fr_ice_http_ops *fr_ice_rest_curl(void);

struct fr_ice_rest_opts {
    const char *uri;       /* the catalog's base, e.g. "http://127.0.0.1:8787/iceberg" */
    const char *token;     /* bearer token (secret: never logged); may be NULL */
    const char *warehouse; /* sent to GET /v1/config; may be NULL */
    int timeout_ms;        /* per request; 0: 10000 */
    int max_retries;       /* reads and idempotent calls; 0: 4, -1: none */
    int backoff_ms;        /* first backoff, doubled per retry; 0: 100 */
    size_t max_body;       /* cap on one answer; 0: 64 MiB */
    const struct fr_ice_http_ops *ops; /* NULL: fr_ice_rest_curl() */
    void *ctx;
};

struct fr_ice_rest; /* a client (opaque); one thread at a time */

/* Copy opts and ask GET {uri}/v1/config for the prefix (overrides, then
 * defaults). FR_EHTTP / transport codes when the catalog does not answer. */
int fr_ice_rest_open(const struct fr_ice_rest_opts *opts, struct fr_ice_rest **rest);
void fr_ice_rest_close(struct fr_ice_rest *rest); /* accepts NULL */
/* The prefix the server gave ("" for none); lives as long as rest. */
const char *fr_ice_rest_prefix(const struct fr_ice_rest *rest);
/* The catalog's URI (opts.uri), for messages that name the peer. */
const char *fr_ice_rest_uri(const struct fr_ice_rest *rest);
/* HTTP status and error message of the last answer (for diagnostics). */
long fr_ice_rest_last_status(const struct fr_ice_rest *rest);
const char *fr_ice_rest_last_error(const struct fr_ice_rest *rest);

/* GET .../namespaces/{ns}/tables/{name}: the LoadTableResult appended to
 * out. FR_ENOTFOUND on 404. */
int fr_ice_rest_load_table(struct fr_ice_rest *rest, const char *ns, const char *name,
                           struct fr_buf *out);
/* Load ns.name through the catalog as a struct fr_ice_table whose files
 * map through cat's warehouse (which the REST catalog must share), for the
 * read calls of iceberg.h (snapshots, fr_ice_find_epoch, fr_ice_files).
 * FR_ENOTFOUND on 404. The caller frees *table. */
int fr_ice_rest_table(struct fr_ice_rest *rest, struct fr_ice_catalog *cat, const char *ns,
                      const char *name, struct fr_ice_table **table);
/* Every table of the catalog, sorted by namespace and name, as
 * fr_ice_list_tables gives them: GET .../namespaces (then ?parent= each,
 * up to 8 levels) and GET .../namespaces/{ns}/tables for each one; one
 * page each (freshet's server answers in one page; a next-page-token is
 * not followed). *idents is malloc'd (free() it). FR_ENOTFOUND when the
 * catalog answers 404 (freshet serve's before any lake exists). */
int fr_ice_rest_list_tables(struct fr_ice_rest *rest, struct fr_ice_ident **idents, size_t *count);
/* POST .../namespaces: create ns ("a.b" for a nested one) without
 * properties. FR_EEXIST on 409. */
int fr_ice_rest_create_namespace(struct fr_ice_rest *rest, const char *ns);
/* POST .../namespaces/{ns}/tables with a CreateTableRequest. FR_EEXIST on
 * 409, FR_ENOTFOUND on 404. Not retried after the request was sent (a
 * retry could meet its own table: FR_EEXIST says so). */
int fr_ice_rest_create_table(struct fr_ice_rest *rest, const char *ns, const char *json, size_t len,
                             struct fr_buf *out);

/*
 * Commit one table (POST .../tables/{name}) or several atomically (POST
 * .../transactions/commit). Outcomes:
 *
 *   SEND ──200/204──────────────────────► FR_OK (out: CommitTableResponse)
 *     ├──409─────────────────────────────► FR_EREQUIREMENT  nothing applied
 *     ├──400/404/other 4xx──────────────► FR_EINVAL / FR_ENOTFOUND / FR_EHTTP
 *     ├──no connection (before sending)─► retried with backoff, then that code
 *     └──500/502/503/504, timeout,
 *        connection lost after sending ─► FR_EUNKNOWN: reload, look for the
 *                                         marker, then retry or not
 */
int fr_ice_rest_commit_table(struct fr_ice_rest *rest, const struct fr_ice_rest_change *change,
                             struct fr_buf *out);
int fr_ice_rest_commit_txn(struct fr_ice_rest *rest, const struct fr_ice_rest_change *changes,
                           uint32_t n);

/* Reload ns.name and look for pipeline_id's epoch: 1 when a snapshot
 * carries FR_ICE_SUMMARY_PIPELINE == pipeline_id and FR_ICE_SUMMARY_EPOCH
 * >= epoch, 0 when none does, or an error (then the outcome stays
 * unknown). */
int fr_ice_rest_find_epoch(struct fr_ice_rest *rest, const char *ns, const char *name,
                           const char *pipeline_id, int64_t epoch);

/* Commit changes (one or several tables) whose snapshots carry
 * pipeline_id's epoch in their summaries, resolving an unknown outcome by
 * reloading changes[0]'s table and looking for the marker. *landed (may be
 * NULL): 1 the epoch is in the catalog (FR_OK), 0 it is not (the commit's
 * own error: FR_EREQUIREMENT ..., or FR_EABORTED when a server error was
 * followed by a reload without the marker: retrying with fresh
 * requirements is safe), -1 the reload failed too (FR_EUNKNOWN: do not
 * advance the checkpoint; look again before retrying). */
int fr_ice_rest_commit_epoch(struct fr_ice_rest *rest, const struct fr_ice_rest_change *changes,
                             uint32_t n, const char *pipeline_id, int64_t epoch, int *landed);

/*
 * Table maintenance through the REST catalog (rest_maint.c), for a table
 * whose warehouse cat shares (cat maps paths and does the file I/O; its
 * catalog rows are not read). Each is a compare-and-swap on main that is
 * made again from the new version when another commit lands first, up to
 * 16 times (then FR_ECONFLICT). An unknown outcome (5xx, lost connection)
 * is settled by reading the table again; when that fails too, FR_EUNKNOWN
 * and nothing is deleted.
 *
 * fr_ice_rest_rewrite: replace the live files remove_paths (as
 * fr_ice_file.path gives) with files, as fr_ice_rewrite does;
 * FR_ECONFLICT when one of them is no longer live (nothing changed; the
 * caller deletes its output). FR_EUNKNOWN: the output may be in the table,
 * do not delete it.
 * fr_ice_rest_expire: fr_ice_expire's rules; the files only the expired
 * snapshots reached are deleted once the commit has landed.
 * fr_ice_rest_remove_orphans: fr_ice_remove_orphans over the table as the
 * catalog returns it.
 */
int fr_ice_rest_rewrite(struct fr_ice_rest *rest, struct fr_ice_catalog *cat, const char *ns,
                        const char *name, const char *const *remove_paths, uint32_t nremove,
                        const struct fr_ice_data_file *files, uint32_t nfiles);
int fr_ice_rest_expire(struct fr_ice_rest *rest, struct fr_ice_catalog *cat, const char *ns,
                       const char *name, int64_t older_than_ms, uint32_t retain_last,
                       struct fr_ice_expire_stats *stats);
int fr_ice_rest_remove_orphans(struct fr_ice_rest *rest, struct fr_ice_catalog *cat,
                               const char *ns, const char *name, int64_t older_than_ms,
                               bool dry_run, struct fr_ice_orphan_stats *stats);

/* Schema evolution through the REST catalog (rest_schema.c, ADR 0059):
 * bring ns.name's current schema to def's columns. Every column of def
 * must be there by name with def's field id; the optional ones that are
 * missing are appended in def's order, each with def's id, which must be
 * the id the table assigns next (last-column-id + 1, + 2 ...). They go in
 * one commit: requirements assert-table-uuid, assert-current-schema-id,
 * assert-last-assigned-field-id; updates add-schema (the current fields
 * and the new ones; last-column-id), set-current-schema -1. A 409 or an
 * unknown outcome reloads and plans again (another process may have added
 * them), up to 8 times, then FR_ECONFLICT. FR_ECONFIG, nothing sent: a
 * column under another id, a required one missing, or an id that would
 * come out different. *added (may be NULL): a bit per def field this call
 * added by a commit that answered 200. */
int fr_ice_rest_evolve(struct fr_ice_rest *rest, const char *ns, const char *name,
                       const struct fr_ice_table_def *def, uint64_t *added);

/* A CreateTableRequest for def (the table freshet's own create would make:
 * the same field ids, spec field ids from 1000, unsorted, def's
 * properties), appended to out, for fr_ice_rest_create_table. */
int fr_ice_rest_create_request(const char *name, const struct fr_ice_table_def *def,
                               struct fr_buf *out);

/* Stage an append for a REST commit: from a table as the catalog returned
 * it (load_result: a LoadTableResult, e.g. from fr_ice_rest_load_table),
 * write the manifest and the manifest list for files (under the table's
 * directory in cat's warehouse: the REST catalog and cat must share the
 * warehouse), and append to out the change that commits them:
 *   requirements assert-table-uuid, assert-ref-snapshot-id (main = the
 *                loaded snapshot, null when none)
 *   updates      add-snapshot (the new snapshot, with info's summary keys:
 *                the epoch marker), set-snapshot-ref main
 * FR_EEXIST when info's epoch is already in the loaded table. On
 * FR_EREQUIREMENT from the commit (another writer moved main), reload and
 * stage again; the files of the stale attempt are orphans
 * (fr_ice_remove_orphans). cat is used for paths and file I/O only; its
 * catalog rows are not read. */
int fr_ice_rest_stage_append(struct fr_ice_catalog *cat, const char *ns, const char *name,
                             const char *load_result, size_t len,
                             const struct fr_ice_data_file *files, uint32_t nfiles,
                             const struct fr_ice_commit_info *info, struct fr_buf *out);

/* The same as fr_ice_rest_stage_append, but the staged snapshot replaces
 * every live file of the table with files (an "overwrite", what
 * fr_ice_txn_overwrite commits through SQLite: `freshet rebuild`). */
int fr_ice_rest_stage_overwrite(struct fr_ice_catalog *cat, const char *ns, const char *name,
                                const char *load_result, size_t len,
                                const struct fr_ice_data_file *files, uint32_t nfiles,
                                const struct fr_ice_commit_info *info, struct fr_buf *out);

#endif
