/*
 * lake.h — the lake a pipeline command works on: the Iceberg catalog and
 * where the tables' data files are written, on local disk (the default) or
 * in an S3/MinIO bucket (lake.warehouse = s3://bucket/prefix, src/objstore).
 * The catalog is the local SQLite file, or an Iceberg REST catalog
 * (lake.catalog_uri) that shares the warehouse.
 *
 * Ownership: fr_lake_open fills a struct the caller owns; fr_lake_close
 * releases what it opened (accepts a zeroed struct). One thread at a time:
 * the S3 client behind a remote warehouse serves one thread.
 */
#ifndef FR_PIPELINE_LAKE_H
#define FR_PIPELINE_LAKE_H

#include "conf/conf.h"
#include "iceberg/iceberg.h"
#include "parquet/parquet.h"

struct fr_s3_warehouse;
struct fr_ice_rest;

struct fr_lake {
    struct fr_ice_catalog *cat;
    struct fr_s3_warehouse *wh; /* NULL: the warehouse is local */
    /* With lake.catalog_uri: the REST catalog the tables live in (cat then
     * only maps the shared warehouse's paths and does its file I/O). */
    struct fr_ice_rest *rest;
};

/* Open the lake of conf: the warehouse of lake.warehouse and its catalog,
 * the SQLite file <data>/lake/catalog.db, or with lake.catalog_uri the
 * REST catalog (lake->rest), and then cat is opened files_only: it maps
 * the shared warehouse's locations and does its file I/O, and no local
 * catalog.db is opened or created. Every command goes through here, so
 * none reads a local catalog that is not the lake's. Errors are logged
 * (naming the setting or the bucket) and returned: FR_ECONFIG for a bad
 * URI or missing credentials, the catalog's, the S3 client's or the REST
 * client's codes otherwise. */
int fr_lake_open(const struct fr_conf *conf, struct fr_lake *lake);
void fr_lake_close(struct fr_lake *lake);
/* Load table name of namespace wiki from the lake's catalog (REST or
 * SQLite). The caller frees *table. */
int fr_lake_table(const struct fr_lake *lake, const char *name, struct fr_ice_table **table);
/* Every table of the lake's catalog (REST or SQLite), sorted by namespace
 * and name; *idents is malloc'd (free() it). */
int fr_lake_list(const struct fr_lake *lake, struct fr_ice_ident **idents, size_t *count);
/* Where the lake's tables are, for messages and --json: the REST catalog's
 * URI or the path of catalog.db. Written to out (cap bytes). */
const char *fr_lake_catalog_name(const struct fr_conf *conf, char *out, size_t cap);
/* 1 when there may be a lake to read: catalog.db exists (a command that
 * only reads never creates one), or the catalog is a REST catalog (only
 * asking it tells). */
int fr_lake_maybe_exists(const struct fr_conf *conf);

/*
 * Refusing early (docs/TOPOLOGIES.md, ADR 0044). A command names the
 * capabilities of the topology it needs, each with the reason; before it
 * opens anything, fr_lake_require checks them against conf and, for the
 * first one missing, prints
 *   freshet CMD: not yet supported with <topology> (<setting>=<value>): <why>
 * and returns 2 (the command's exit status). 0: everything is there.
 */
enum fr_lake_cap {
    FR_LAKE_CAP_SQLITE_CATALOG = 1u << 0,  /* commits through <data>/lake/catalog.db */
    FR_LAKE_CAP_LOCAL_WAREHOUSE = 1u << 1, /* data files on local disk */
};
struct fr_lake_need {
    enum fr_lake_cap cap;
    const char *why; /* what the command does that needs it, and what to do instead */
};
int fr_lake_require(const struct fr_conf *conf, const char *cmd, const struct fr_lake_need *needs,
                    uint32_t nneeds);

/* 1 when data files live in an object store (nothing local to read). */
int fr_lake_remote(const struct fr_lake *lake);
/* An output for the data file at path (a local warehouse path, as
 * fr_ice_table_dir gives): a temporary file renamed into place, or an
 * upload that only becomes visible when closed. When the catalog defers
 * its fsyncs (fr_ice_catalog_defer_sync: the processor's), the file's
 * fsync waits for the catalog's next write. */
int fr_lake_pq_out(const struct fr_lake *lake, const char *path, struct fr_pq_out *out);
/* An input for the data file at path (as fr_ice_files' local_path gives):
 * the local file, or ranged GETs of the object. */
int fr_lake_pq_in(const struct fr_lake *lake, const char *path, struct fr_pq_in *in);

/*
 * Table maintenance on whatever the lake is: the SQLite catalog or the
 * REST one (lake.catalog_uri), a local warehouse or S3 (inputs read with
 * ranged GETs, outputs uploaded as they are written). The same rules and
 * stats as fr_ice_compact, fr_ice_expire and fr_ice_remove_orphans, whose
 * errors (fr_ice_errmsg) they return. fr_lake_compact sets opts' data_io
 * and rest from the lake (the caller's other options stay).
 */
int fr_lake_compact(struct fr_lake *lake, const char *ns, const char *name,
                    const struct fr_ice_compact_opts *opts, struct fr_ice_compact_stats *stats);
int fr_lake_expire(struct fr_lake *lake, const char *ns, const char *name, int64_t older_than_ms,
                   uint32_t retain_last, struct fr_ice_expire_stats *stats);
int fr_lake_remove_orphans(struct fr_lake *lake, const char *ns, const char *name,
                           int64_t older_than_ms, bool dry_run, struct fr_ice_orphan_stats *stats);
/* The lake's tables in namespace ns (the catalog's list). *idents is
 * malloc'd (free()). */
int fr_lake_list_tables(struct fr_lake *lake, const char *ns, struct fr_ice_ident **idents,
                        size_t *count);

/* One table's part of a commit: append files[0..nfiles) (nfiles 0: an
 * empty snapshot, which still carries the commit's marker). */
#define FR_LAKE_MAX_APPENDS 16
struct fr_lake_append {
    const char *table; /* in namespace wiki */
    const struct fr_ice_data_file *files;
    uint32_t nfiles;
};

/*
 * Commit apps[0..napps) as one transaction through the lake's REST catalog
 * (lake.catalog_uri; uri names it in messages), the epoch marker from
 * info: every append is staged against the table as the catalog returns
 * it (manifests in the shared warehouse) and all go in one
 * POST /transactions/commit. An answer 5xx or a lost connection leaves the
 * outcome unknown: fr_ice_rest_commit_epoch looks for the marker. Landed:
 * FR_OK. Not there: staged again and retried (a few times). Still unknown:
 * FR_EUNKNOWN (or the last error), logged; the caller stops with its
 * checkpoint where it was, and its restart finds the marker or not.
 */
int fr_lake_commit_rest(struct fr_lake *lake, const struct fr_lake_append *apps, uint32_t napps,
                        const struct fr_ice_commit_info *info, const char *uri);

/* A column to read by name, with the type it must have. */
struct fr_lake_col {
    const char *name;
    enum fr_pq_type type;
};

typedef int (*fr_lake_batch_fn)(void *arg, const struct fr_pq_batch *b);

/*
 * Read columns cols[0..ncols) (at most 16) of the data file at path (as
 * fr_ice_files' local_path gives) and call fn with each batch, columns in
 * cols order; ropts may be NULL. A non-zero return from fn stops the scan
 * and is returned. Errors are returned with a message in err ("<path>: no
 * column wiki of type STRING", or the reader's): FR_ECORRUPT for a missing
 * or mistyped column, the reader's codes otherwise. Not logged: the caller
 * decides (verify retries some of them with more passes). A name that
 * starts with '?' ("?label") is optional: a file written before the column
 * existed (schema evolution, ADR 0057) reads it as all nulls.
 */
int fr_lake_scan_file(const struct fr_lake *lake, const char *path,
                      const struct fr_pq_read_opts *ropts, const struct fr_lake_col *cols,
                      uint32_t ncols, fr_lake_batch_fn fn, void *arg, char *err, size_t errlen);

/* What fr_lake_check_file found in one data file. */
struct fr_lake_page_check {
    uint64_t pages, with_crc; /* fr_pq_reader_check_pages' counts */
};

/* Check the data file f lists (local, or in the bucket) against itself and
 * its manifest entry: every page's CRC-32 (fr_pq_reader_check_pages); the
 * footer's rows against record_count; the file's size against file_size;
 * and per column the footer's values, nulls and compressed bytes against
 * the manifest's value_counts, null_value_counts and column_sizes. FR_OK,
 * or the reader's code (FR_ECRC for a page) or FR_ECORRUPT with the file
 * named in err. `freshet verify` (page_checksums, ADR 0062). */
int fr_lake_check_file(const struct fr_lake *lake, const struct fr_ice_file *f,
                       const struct fr_pq_read_opts *ropts, struct fr_lake_page_check *out,
                       char *err, size_t errlen);

#endif
