/*
 * iceberg.h — Apache Iceberg v2 tables in a SQLite catalog (the Iceberg
 * JDBC-catalog layout), so DuckDB, Spark, Trino and pyiceberg read what
 * freshet writes. This is the interface the stream processor, verify,
 * rebuild and maintenance use; iceberg_int.h is private to src/iceberg.
 *
 * Layout (docs/adr/0006-iceberg-tables.md):
 *   <data_dir>/lake/catalog.db                              the catalog (WAL mode)
 *   <data_dir>/lake/warehouse/<ns>/<table>/data/...         Parquet files (caller writes)
 *   <data_dir>/lake/warehouse/<ns>/<table>/metadata/
 *       NNNNN-<uuid>.metadata.json   table metadata, the version the catalog points at
 *       v<N>.metadata.json           version N again (a hard link), for catalog-free readers
 *       version-hint.text            "N": the latest published version
 *       snap-<id>-<attempt>-<uuid>.avro, <uuid>-m<k>.avro   manifest lists, manifests
 * Every location inside metadata is an absolute URI: the warehouse root URI
 * (default "file://" + the absolute warehouse directory; any other prefix,
 * e.g. "http://127.0.0.1:8080", may be configured) + "/<ns>/<table>/...".
 *
 * Commits. Every change (append, overwrite, rewrite, schema change, expiry)
 * writes new manifests, a manifest list and a metadata file, then swaps the
 * table's metadata_location in the catalog with a compare-and-swap; several
 * tables in one transaction swap in ONE SQLite transaction, so all move or
 * none does. A lost race (FR_ECONFLICT) reloads and re-applies the change a
 * bounded number of times; a rewrite re-checks that its inputs are still
 * live. Crash at any step: the table is at the old or the new snapshot, and
 * fr_ice_remove_orphans finds what the crash left behind. The state machine
 * is drawn in commit.c.
 *
 * Errors. Functions return FR_OK or a negative code from core/err.h; the
 * retriable ones (fr_err_class == FR_ERRC_RETRY) are FR_ECONFLICT (lost a
 * race; nothing moved), FR_EBUSY (catalog locked past the busy timeout;
 * nothing moved) and FR_EIO. fr_ice_errmsg() names the table and the file
 * of the most recent error on the calling thread.
 *
 * Threads. A catalog handle, and every table and transaction made from it,
 * belong to one thread at a time. Any number of handles in any number of
 * threads and processes may work on the same catalog: SQLite and the
 * compare-and-swap keep them consistent.
 *
 * Ownership. Callers own what they pass in; the library copies what it
 * keeps. Pointers handed out live as long as the handle they came from.
 */
#ifndef FR_ICEBERG_H
#define FR_ICEBERG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fr_buf;
struct fr_ice_catalog; /* a catalog connection (opaque) */
struct fr_ice_table;   /* one table's metadata as loaded (opaque, immutable) */
struct fr_ice_txn;     /* a multi-table commit being assembled (opaque) */
struct fr_ice_arena;   /* memory owned by a result (opaque) */

/* ---------------------------------------------------------------- types -- */

/* Column types (Iceberg primitive types freshet writes). */
enum fr_ice_type {
    FR_ICE_BOOLEAN = 1,
    FR_ICE_INT,  /* 32-bit */
    FR_ICE_LONG, /* 64-bit */
    FR_ICE_DOUBLE,
    FR_ICE_STRING,      /* UTF-8 */
    FR_ICE_DATE,        /* days since 1970-01-01, in i32 */
    FR_ICE_TIMESTAMP,   /* microseconds, no zone, in i64 */
    FR_ICE_TIMESTAMPTZ, /* microseconds since 1970-01-01T00:00Z, in i64 */
};

/* Partition transforms. DAY gives days since 1970-01-01 (a date), HOUR hours
 * since the epoch (an int); both floor, so -1 us is day -1. */
enum fr_ice_transform { FR_ICE_IDENTITY = 1, FR_ICE_DAY, FR_ICE_HOUR };

struct fr_ice_kv {
    const char *key;
    const char *value;
};

/* One column. Ids are positive and unique; names match [A-Za-z_][A-Za-z0-9_]*
 * (what Iceberg's Avro-name sanitiser leaves unchanged). */
struct fr_ice_field {
    int32_t id;
    const char *name;
    enum fr_ice_type type;
    bool required;
    const char *doc; /* may be NULL */
};

/* One partition field of the table's spec. name NULL gives the Iceberg
 * default: "<source>" for identity, "<source>_day" / "<source>_hour". */
struct fr_ice_part_field {
    int32_t source_id;
    enum fr_ice_transform transform;
    const char *name;
};

/* What fr_ice_table_create needs. */
struct fr_ice_table_def {
    const struct fr_ice_field *fields;
    uint32_t nfields;
    const struct fr_ice_part_field *parts; /* NULL / 0: unpartitioned */
    uint32_t nparts;
    const struct fr_ice_kv *props; /* table properties; may be NULL */
    uint32_t nprops;
};

/* A typed value: a partition value or a bound. INT and DATE use i32; LONG,
 * TIMESTAMP and TIMESTAMPTZ use i64. */
struct fr_ice_value {
    enum fr_ice_type type;
    bool is_null;
    union {
        bool b;
        int32_t i32;
        int64_t i64;
        double f64;
        struct {
            const char *ptr;
            size_t len;
        } str;
    } v;
};

/* Per-column metrics of one data file, by field id. Counts of -1 are
 * absent. Bounds use Iceberg's single-value binary serialisation (little
 * endian ints, UTF-8 bytes for strings); NULL means absent. */
struct fr_ice_col_metrics {
    int32_t field_id;
    int64_t column_size; /* bytes on disk */
    int64_t value_count; /* including NULLs */
    int64_t null_count;
    int64_t nan_count; /* doubles only; -1 otherwise */
    const uint8_t *lower;
    uint32_t lower_len;
    const uint8_t *upper;
    uint32_t upper_len;
};

/* A data file the caller has written, described for a manifest. */
struct fr_ice_data_file {
    /* An absolute URI, an absolute local path inside the table directory,
     * or a path relative to the table location ("data/part-1.parquet"). */
    const char *path;
    int64_t file_size;    /* exact bytes (readers range-read with it) */
    int64_t record_count; /* exact rows */
    /* One value per partition field of the table's default spec, in spec
     * order, typed as the transform's result (identity: the source type;
     * DAY: FR_ICE_DATE; HOUR: FR_ICE_INT). */
    const struct fr_ice_value *partition;
    uint32_t npartition;
    const struct fr_ice_col_metrics *metrics; /* may be NULL */
    uint32_t nmetrics;
    const int64_t *split_offsets; /* row-group starts, ascending; may be NULL */
    uint32_t nsplit;
};

/* Describe a Parquet file written with src/parquet (parquet.h) from the
 * writer's statistics at close: size, rows, split offsets, and per column
 * (field ids from schema) sizes, value / null / NaN counts and bounds in
 * Iceberg's binary form. metrics must hold schema->ncolumns entries; the
 * bounds' bytes are copied into bounds (FR_ETOOBIG when bounds_cap is too
 * small: 32 bytes per column plus the string bounds' lengths is enough).
 * file->path is path (not copied); the caller sets the partition values.
 * file points into stats, metrics and bounds: keep them until committed. */
struct fr_pq_schema;
struct fr_pq_file_stats;
int fr_ice_file_from_pq(const char *path, const struct fr_pq_schema *schema,
                        const struct fr_pq_file_stats *stats, struct fr_ice_data_file *file,
                        struct fr_ice_col_metrics *metrics, uint8_t *bounds, size_t bounds_cap);

/* freshet's own snapshot summary keys, beside the standard ones. */
#define FR_ICE_SUMMARY_PIPELINE "freshet.pipeline-id"
#define FR_ICE_SUMMARY_EPOCH "freshet.epoch"
#define FR_ICE_SUMMARY_OFFSETS "freshet.source-offsets"

/* What a commit records about itself. All fields optional (NULL / -1). */
struct fr_ice_commit_info {
    const char *pipeline_id;
    int64_t epoch;                 /* >= 0, or -1 for none */
    const char *source_offsets;    /* free text, e.g. "recentchange/0:100-200" */
    const struct fr_ice_kv *props; /* more summary keys; may be NULL */
    uint32_t nprops;
};

/* ------------------------------------------------------------ file I/O -- */

/* Commit steps reported to fr_ice_io_ops.step, in order. The crash tests
 * stop the writer at each one. */
enum fr_ice_step {
    FR_ICE_STEP_LOADED = 1,        /* base metadata read */
    FR_ICE_STEP_MANIFEST,          /* a manifest written */
    FR_ICE_STEP_MANIFEST_LIST,     /* the manifest list written */
    FR_ICE_STEP_METADATA,          /* the new metadata file written */
    FR_ICE_STEP_CATALOG_BEGIN,     /* catalog write transaction open */
    FR_ICE_STEP_CATALOG_UPDATED,   /* one table's row swapped, not yet committed */
    FR_ICE_STEP_CATALOG_COMMITTED, /* the catalog transaction is durable */
    FR_ICE_STEP_PUBLISHED,         /* v<N>.metadata.json + version-hint.text written */
};

const char *fr_ice_step_name(enum fr_ice_step step);

/*
 * The filesystem effects of the library, an ops table so tests can count
 * them, fail them or stop the process between any two of them. Paths are
 * local. Each returns FR_OK or an fr_err code. fr_ice_io_posix() is the real
 * thing; copy it and replace members. All members must be set. A catalog
 * that defers its fsyncs (fr_ice_catalog_defer_sync) and whose create is
 * the POSIX one does its create, replace and link itself, with the fsyncs
 * handed to its sync set.
 */
struct fr_ice_io_ops {
    /* Create path holding data, durably, failing with FR_EEXIST when it
     * exists: write "<path>.tmp-<pid>-<n>", fsync, link to path, unlink the
     * temporary, fsync the directory. Creates missing parent directories. */
    int (*create)(void *ctx, const char *path, const void *data, size_t len);
    /* Durably replace path (temporary, fsync, rename, fsync the directory). */
    int (*replace)(void *ctx, const char *path, const void *data, size_t len);
    /* Give the existing file another name (link(2), fsync the directory);
     * FR_EEXIST when path exists. */
    int (*link)(void *ctx, const char *existing, const char *path);
    /* Append the whole file to buf (FR_ENOTFOUND when absent). */
    int (*read)(void *ctx, const char *path, struct fr_buf *buf);
    /* Remove a file; FR_ENOTFOUND when absent. */
    int (*remove)(void *ctx, const char *path);
    /* Size and modification time (ms); FR_ENOTFOUND when absent. */
    int (*stat)(void *ctx, const char *path, int64_t *size, int64_t *mtime_ms);
    /* Call fn for every regular file under dir, recursively (local paths).
     * A missing dir lists nothing. A negative return from fn stops it. */
    int (*list)(void *ctx, const char *dir, int (*fn)(void *arg, const char *path), void *arg);
    /* A commit reached step (detail: the table or file). May not return. */
    void (*step)(void *ctx, enum fr_ice_step step, const char *detail);
};

struct fr_ice_io {
    const struct fr_ice_io_ops *ops;
    void *ctx;
};

/* The POSIX implementation (ctx unused); step does nothing. */
const struct fr_ice_io_ops *fr_ice_io_posix(void);

/* ------------------------------------------------------------- catalog -- */

struct fr_ice_catalog_opts {
    const char *data_dir;       /* the lake lives in <data_dir>/lake */
    const char *warehouse_uri;  /* NULL: "file://<abs data_dir>/lake/warehouse" */
    const char *catalog_name;   /* catalog_name column; NULL: "freshet" */
    int busy_timeout_ms;        /* wait for a locked catalog; 0: 5000 */
    int max_retries;            /* commit attempts after a lost race; 0: 4, -1: none */
    const struct fr_ice_io *io; /* NULL: POSIX; copied */
    /* The tables live in another catalog (a REST catalog, lake.catalog_uri):
     * this handle maps the shared warehouse's locations and does its file
     * I/O only. No catalog.db is opened or created; every call that needs
     * the catalog's rows (load by name, list, commit, namespaces) fails
     * with FR_EUNSUPPORTED naming the reason. */
    bool files_only;
    /* NULL: the handle keeps its own cache of metadata files it wrote or
     * read. Else a cache shared with other handles of this process
     * (fr_ice_meta_cache_new; thread-safe), which must outlive them. */
    struct fr_ice_meta_cache *meta_cache;
};

/* A cache of metadata files, by table and file name, shared by handles
 * that come and go (serve opens one per request): bounded (table.c), freed
 * after every handle that uses it. NULL on ENOMEM. */
struct fr_ice_meta_cache;
struct fr_ice_meta_cache *fr_ice_meta_cache_new(void);
void fr_ice_meta_cache_free(struct fr_ice_meta_cache *mc);

/* Open (creating when absent) the catalog and the warehouse directory
 * (with opts->files_only: the warehouse directory only).
 * FR_EIO / FR_EBUSY when the SQLite file cannot be opened or set up. */
int fr_ice_catalog_open(const struct fr_ice_catalog_opts *opts, struct fr_ice_catalog **cat);
/* Close. Tables and transactions made from it must be freed first. Accepts NULL. */
void fr_ice_catalog_close(struct fr_ice_catalog *cat);
/* Defer the fsyncs of the files this handle writes through the POSIX io
 * (manifests, manifest lists, metadata files, published versions) to one
 * barrier: they go into a sync set (core/syncset.h) that the handle
 * flushes at the start of every catalog write, before the catalog can name
 * any of them, and at close. A commit of a few tables then pays its file
 * and directory fsyncs back to back, each directory once, instead of two
 * per file in turn (docs/adr/0029). A crash may leave files that no
 * catalog row names torn; removing orphans cleans them. Only for a
 * catalog whose commits all go through this handle (not behind a REST
 * catalog). Idempotent; FR_ENOMEM. */
int fr_ice_catalog_defer_sync(struct fr_ice_catalog *cat);
/* The handle's sync set (NULL when it does not defer): data files written
 * for its next commit may be added to it (fr_pq_out_file_deferred). */
struct fr_syncset;
struct fr_syncset *fr_ice_catalog_syncset(const struct fr_ice_catalog *cat);
/* The local warehouse directory and its URI; live as long as cat. */
const char *fr_ice_catalog_warehouse(const struct fr_ice_catalog *cat);
const char *fr_ice_catalog_warehouse_uri(const struct fr_ice_catalog *cat);

/* The message of the most recent error on this thread ("" when none); names
 * the table and the file. Valid until the next fr_ice_* call. */
const char *fr_ice_errmsg(void);

/* A random (version 4) UUID as text, for names that must not repeat. */
void fr_ice_uuid(char out[37]);

/* Table identifiers: namespace (levels joined with '.') and name. */
struct fr_ice_ident {
    char ns[128];
    char name[128];
};

/* All tables in the catalog, sorted by namespace and name. *idents is
 * malloc'd (free it with free()). */
int fr_ice_list_tables(struct fr_ice_catalog *cat, struct fr_ice_ident **idents, size_t *count);

/* Namespaces: levels joined with '.', kept in iceberg_namespace_properties
 * as the JDBC layout does (one row per property; the marker "exists" =
 * "true" for a namespace without properties, never reported). A namespace
 * also exists while a table row names it. Callbacks run inside the call;
 * a negative return from one stops it with that code. */
/* 1 when ns exists, 0 when not, or an error. */
int fr_ice_ns_exists(struct fr_ice_catalog *cat, const char *ns);
/* The namespaces one level below parent (NULL or "": the top level),
 * sorted. */
int fr_ice_ns_list(struct fr_ice_catalog *cat, const char *parent,
                   int (*fn)(void *arg, const char *ns), void *arg);
/* FR_EEXIST when ns exists; FR_EINVAL for a bad name. */
int fr_ice_ns_create(struct fr_ice_catalog *cat, const char *ns, const struct fr_ice_kv *props,
                     uint32_t nprops);
/* Every property of ns (FR_ENOTFOUND when it does not exist). */
int fr_ice_ns_props(struct fr_ice_catalog *cat, const char *ns,
                    int (*fn)(void *arg, const char *key, const char *value), void *arg);
/* Set updates and remove removals in one transaction; missing is called
 * for each removal that was not there (may be NULL). */
int fr_ice_ns_update(struct fr_ice_catalog *cat, const char *ns, const struct fr_ice_kv *updates,
                     uint32_t nupdates, const char *const *removals, uint32_t nremovals,
                     int (*missing)(void *arg, const char *key), void *arg);
/* Drop an empty namespace: FR_ENOTEMPTY while a table is in it (or below
 * it), FR_ENOTFOUND when it has no property rows. */
int fr_ice_ns_drop(struct fr_ice_catalog *cat, const char *ns);

/* ------------------------------------------------------------- tables -- */

/* Create a table (and its namespace) with no snapshot. FR_EEXIST when it
 * exists; FR_EINVAL for a bad definition. *table may be NULL. */
int fr_ice_table_create(struct fr_ice_catalog *cat, const char *ns, const char *name,
                        const struct fr_ice_table_def *def, struct fr_ice_table **table);
/* Load the current metadata. FR_ENOTFOUND when the table is absent or its
 * metadata file is missing, FR_ECORRUPT when that file does not parse. */
int fr_ice_table_load(struct fr_ice_catalog *cat, const char *ns, const char *name,
                      struct fr_ice_table **table);
/* Drop the catalog row (files stay; remove them with the directory). */
int fr_ice_table_drop(struct fr_ice_catalog *cat, const char *ns, const char *name);
void fr_ice_table_free(struct fr_ice_table *table);

/* Facts about a loaded table (strings live as long as table). */
const char *fr_ice_table_ns(const struct fr_ice_table *table);
const char *fr_ice_table_name(const struct fr_ice_table *table);
const char *fr_ice_table_location(const struct fr_ice_table *table);      /* URI */
const char *fr_ice_table_dir(const struct fr_ice_table *table);           /* local */
const char *fr_ice_table_metadata_file(const struct fr_ice_table *table); /* URI */
int64_t fr_ice_table_snapshot_id(const struct fr_ice_table *table);       /* -1: none */
int64_t fr_ice_table_sequence(const struct fr_ice_table *table);
/* The current schema's fields (names live as long as table). */
const struct fr_ice_field *fr_ice_table_fields(const struct fr_ice_table *table, uint32_t *n);
/* The default spec's fields (source ids, transforms, names). */
const struct fr_ice_part_field *fr_ice_table_parts(const struct fr_ice_table *table, uint32_t *n);
/* The current schema as Iceberg JSON, for a Parquet file's iceberg.schema key. */
const char *fr_ice_table_schema_json(const struct fr_ice_table *table);

/* Apply a transform to a source value (NULL stays NULL). FR_EINVAL when the
 * transform does not take that type. */
int fr_ice_transform(enum fr_ice_transform transform, const struct fr_ice_value *src,
                     struct fr_ice_value *out);

/* Snapshots of a table, oldest first. */
struct fr_ice_snapshot {
    int64_t snapshot_id;
    int64_t parent_id; /* -1: none */
    int64_t sequence_number;
    int64_t timestamp_ms;
    const char *operation;     /* "append", "overwrite", "replace", ... */
    const char *manifest_list; /* URI */
    const struct fr_ice_kv *summary;
    uint32_t nsummary;
};

const struct fr_ice_snapshot *fr_ice_table_snapshots(const struct fr_ice_table *table, uint32_t *n);
/* The snapshot that was current at timestamp_ms (time travel), from the
 * snapshot log. FR_ENOTFOUND when the table had none then. */
int fr_ice_snapshot_at(const struct fr_ice_table *table, int64_t timestamp_ms,
                       int64_t *snapshot_id);

/* Whether this pipeline's epoch is already in the table: 1 when a snapshot
 * carries pipeline_id with an epoch >= epoch (epochs only grow), 0 when not.
 * Expiry always keeps the newest marker, so this holds after maintenance. */
int fr_ice_find_epoch(const struct fr_ice_table *table, const char *pipeline_id, int64_t epoch);
/* The newest epoch committed by pipeline_id and its snapshot;
 * FR_ENOTFOUND when none. */
int fr_ice_last_epoch(const struct fr_ice_table *table, const char *pipeline_id, int64_t *epoch,
                      int64_t *snapshot_id);

/* ------------------------------------------------------------ reading -- */

/* One live data file of a snapshot. */
struct fr_ice_file {
    const char *path;       /* URI as in the manifest */
    const char *local_path; /* on this machine */
    int64_t file_size;
    int64_t record_count;
    int32_t spec_id;
    int64_t snapshot_id;     /* the snapshot that added it */
    int64_t sequence_number; /* data sequence number */
    const struct fr_ice_value *partition;
    uint32_t npartition;
    const struct fr_ice_col_metrics *metrics;
    uint32_t nmetrics;
};

struct fr_ice_file_list {
    struct fr_ice_file *files;
    size_t nfiles;
    int64_t snapshot_id;
    int64_t total_records;
    int64_t total_bytes;
    struct fr_ice_arena *arena; /* owns everything above */
};

/* List the live data files of snapshot_id (-1: the current one), in
 * manifest order. Checks each file against the manifest when check_files
 * is true: a missing file or a size mismatch is FR_ECORRUPT naming both the
 * table and the file. An empty table gives an empty list. */
int fr_ice_files(struct fr_ice_catalog *cat, const struct fr_ice_table *table, int64_t snapshot_id,
                 bool check_files, struct fr_ice_file_list *list);
/* The same, but only the manifests added at or after sequence number
 * min_sequence are read: every live file added by a snapshot of that
 * sequence number or later is listed (an entry's sequence number is at most
 * its manifest's), older files may be missing, and the totals count what
 * was listed. For a reader that wants the files of its recent snapshots
 * only (the scale-out finalizer), without reading every manifest. */
int fr_ice_files_since(struct fr_ice_catalog *cat, const struct fr_ice_table *table,
                       int64_t snapshot_id, bool check_files, int64_t min_sequence,
                       struct fr_ice_file_list *list);
void fr_ice_file_list_free(struct fr_ice_file_list *list);

/* ------------------------------------------------------------- commits -- */

/* Start a transaction over any number of tables of cat. */
int fr_ice_txn_begin(struct fr_ice_catalog *cat, struct fr_ice_txn **txn);
/* Add "append these files" for table ns.name (at most one change per table
 * per transaction: FR_EINVAL otherwise). The files are copied. */
int fr_ice_txn_append(struct fr_ice_txn *txn, const char *ns, const char *name,
                      const struct fr_ice_data_file *files, uint32_t nfiles,
                      const struct fr_ice_commit_info *info);
/* Add "replace every live file of ns.name with these files" (rebuild). */
int fr_ice_txn_overwrite(struct fr_ice_txn *txn, const char *ns, const char *name,
                         const struct fr_ice_data_file *files, uint32_t nfiles,
                         const struct fr_ice_commit_info *info);

/* A check of each table of a transaction, made at every LOAD (below), so
 * inside the compare-and-swap: a commit by someone else that lands after
 * the check moves the table's catalog row, the swap fails and the table is
 * loaded and checked again. Return FR_OK to go on, or a negative code to
 * stop the commit with it (nothing moved). base is the loaded table, valid
 * during the call only. Called on the committing thread. */
typedef int (*fr_ice_guard_fn)(const struct fr_ice_table *base, void *arg);
/* Set txn's guard (one; NULL: none) before fr_ice_txn_commit. */
void fr_ice_txn_guard(struct fr_ice_txn *txn, fr_ice_guard_fn fn, void *arg);

/* Where one commit's time went, summed over its tables and attempts, in
 * microseconds of the monotonic clock: cat_us the catalog row reads, load_us
 * reading and parsing the base metadata, apply_us manifests and the manifest
 * list (read the parent's list, merge, write), metadata_us writing the new
 * metadata file, swap_us the catalog transaction, publish_us the v<N> link
 * and version hint, finish_us deleting expired files. The sizes are of the
 * newest version written: metadata_bytes summed over the tables, max_* the
 * largest table's. For logs and benchmarks only; nothing decides on them. */
struct fr_ice_commit_timing {
    int64_t cat_us, load_us, apply_us, metadata_us, swap_us, publish_us, finish_us;
    uint64_t metadata_bytes;
    uint32_t max_snapshots, max_metadata_log, max_manifests;
};

/* What a commit did, per change in the order they were added. */
struct fr_ice_commit_result {
    int64_t snapshot_id[16];
    int64_t sequence_number[16];
    int attempts;
    struct fr_ice_commit_timing timing;
};

/*
 * Commit every change: write every table's manifests, manifest list and
 * metadata file, then swap all metadata_locations in one SQLite
 * transaction. A lost race reloads and re-applies (at most max_retries
 * times). Before each attempt, a change whose commit_info names a pipeline
 * and epoch is checked against the table: if that epoch is already there
 * the commit stops with FR_EEXIST and nothing moves. Returns FR_OK,
 * FR_ECONFLICT or FR_EBUSY (retriable, nothing moved), FR_EEXIST, or
 * another error. res may be NULL. The txn cannot be committed twice.
 */
int fr_ice_txn_commit(struct fr_ice_txn *txn, struct fr_ice_commit_result *res);
void fr_ice_txn_free(struct fr_ice_txn *txn);

/* One-table shorthands: begin, add, commit, free. snapshot_id may be NULL. */
int fr_ice_append(struct fr_ice_catalog *cat, const char *ns, const char *name,
                  const struct fr_ice_data_file *files, uint32_t nfiles,
                  const struct fr_ice_commit_info *info, int64_t *snapshot_id);
int fr_ice_overwrite(struct fr_ice_catalog *cat, const char *ns, const char *name,
                     const struct fr_ice_data_file *files, uint32_t nfiles,
                     const struct fr_ice_commit_info *info, int64_t *snapshot_id);

/* Replace snapshot (compaction): remove the files at remove_paths (URIs as
 * fr_ice_files reports them) and add files, without changing the table's
 * rows. Every removed file must still be live when the commit lands, or
 * the result is FR_ECONFLICT and nothing moves; appends racing with it are
 * kept. */
int fr_ice_rewrite(struct fr_ice_catalog *cat, const char *ns, const char *name,
                   const char *const *remove_paths, uint32_t nremove,
                   const struct fr_ice_data_file *files, uint32_t nfiles, int64_t *snapshot_id);

/* Schema evolution: add an optional column; *field_id receives its id.
 * FR_EEXIST when a column of that name exists. */
int fr_ice_add_column(struct fr_ice_catalog *cat, const char *ns, const char *name,
                      const char *column, enum fr_ice_type type, const char *doc,
                      int32_t *field_id);

/* --------------------------------------------------------- maintenance -- */

struct fr_ice_expire_stats {
    uint32_t snapshots_expired;
    uint32_t files_deleted; /* manifest lists, manifests and data files */
    /* Bytes of parsed manifest lists and manifests held at once, at most,
     * while finding what the expired snapshots alone reached: one list and
     * one manifest plus the paths seen, whatever the number of snapshots. */
    size_t scratch_peak_bytes;
};

/* Expire snapshots older than older_than_ms, keeping at least retain_last
 * (>= 1) and always the current one and, per pipeline, the newest snapshot
 * carrying an epoch marker. Then delete the files only expired snapshots
 * reached. stats may be NULL. */
int fr_ice_expire(struct fr_ice_catalog *cat, const char *ns, const char *name,
                  int64_t older_than_ms, uint32_t retain_last, struct fr_ice_expire_stats *stats);

struct fr_ice_orphan_stats {
    uint32_t files_seen;
    uint32_t orphans; /* not reachable from the metadata */
    uint32_t removed; /* orphans older than the cutoff, removed */
    int64_t bytes_removed;
};

/* Remove files under the table directory that no retained metadata file,
 * snapshot, manifest or data-file entry reaches and that were modified
 * before older_than_ms (so in-flight commits are safe; pass the current
 * time only when no writer is running). dry_run counts without removing.
 * A manifest that cannot be read stops it with an error: it never deletes
 * on a partial view. */
int fr_ice_remove_orphans(struct fr_ice_catalog *cat, const char *ns, const char *name,
                          int64_t older_than_ms, bool dry_run, struct fr_ice_orphan_stats *stats);

/* The data files' I/O for maintenance (compaction's inputs and outputs).
 * pq_in opens path for reading (fr_pq_reader_open takes it over); pq_out
 * opens an output that becomes visible under path only when closed.
 * Both return FR_OK or an fr_err code; ctx is the caller's. */
struct fr_pq_in;
struct fr_pq_out;
struct fr_ice_rest;
struct fr_ice_data_io {
    int (*pq_in)(void *ctx, const char *path, struct fr_pq_in *in);
    int (*pq_out)(void *ctx, const char *path, struct fr_pq_out *out);
    void *ctx;
};

struct fr_ice_compact_opts {
    int64_t target_bytes; /* output file size; 0: 128 MiB */
    /* Inputs are the files under this; 0 (or more): 3/4 of target_bytes.
     * Merged small files compress far better than apart, so outputs are
     * often much smaller than the bytes that went in: a low threshold keeps
     * them from being picked again and again (rewriting a growing table at
     * every round). */
    int64_t small_bytes;
    uint32_t min_inputs; /* smallest group worth rewriting; 0: 2 */
    /* 0 or 1: one tier, every file under small_bytes is an input at every
     * round (`freshet compact`). >= 2: size tiers. Files under small_bytes
     * are tier 0 and packed whenever there are min_inputs of them; files
     * from small_bytes up to half the target are tier k >= 1 when
     * small_bytes * F^(k-1) <= size < small_bytes * F^k, and a tier is
     * packed only once it holds F files. A merged file moves up a tier and
     * is not read again until F files of its size exist, so each byte is
     * rewritten about once per tier (log_F(target / small_bytes) times, not
     * once per round) and a partition keeps fewer than F files per tier plus
     * files of at least half the target: the live file count is bounded by
     * the table's bytes / (target / 2) + a constant. */
    uint32_t tier_factor;
    bool uncompressed; /* outputs without compression; default ZSTD */
    /* Row-group size of the outputs; 0: the Parquet writer's default (128
     * MiB). A row group's pages, and its columns' dictionaries, are held in
     * memory while it is written, so the live processor passes its
     * process.compact_row_group_bytes (1 MiB). */
    size_t row_group_bytes;
    /* The outputs' data pages and each column chunk's dictionary, at most;
     * 0: the writer's defaults (1 MiB, 2 MiB). Each column holds one page
     * of values and one dictionary while a row group is written, and the
     * page is compressed through a scratch buffer of its size. */
    size_t page_bytes;
    size_t dict_max_bytes;
    /* Rows per read batch of the inputs; 0: the reader's default (4,096).
     * A batch holds the string values of its rows (bronze's raw JSON). */
    uint32_t read_batch_rows;
    /* Where the data files are read and written (local warehouse paths, as
     * fr_ice_files' local_path gives); NULL: local files. A warehouse in an
     * object store passes ranged GETs in and a streaming upload out, so a
     * rewrite holds a row group and the reader's window, not a file. */
    const struct fr_ice_data_io *data_io;
    /* Not NULL: load the table from this REST catalog and commit every
     * rewrite through it (fr_ice_rest_rewrite); cat then only maps the
     * shared warehouse's paths and does its file I/O. */
    struct fr_ice_rest *rest;
    /* > 0: start no bin at or after this time (fr_mono_ms): the live
     * processor bounds a round; the bins left wait for the next one. */
    int64_t deadline_ms;
    /* With deadline_ms: the call's first bin starts even past it (a
     * maintenance round's first step, so every round makes progress). */
    bool first_bin_always;
};

/* The stream processor's policy for a target size (src/pipeline/epoch.c):
 * tiers of factor 4 above target / 64, so that its frequent rounds cost the
 * same at the table's first hour as at its hundredth (the soak in
 * docs/BENCHMARKS.md; ADR 0020). Fills *opts. */
void fr_ice_compact_opts_stream(int64_t target_bytes, struct fr_ice_compact_opts *opts);

struct fr_ice_compact_stats {
    uint32_t groups;                    /* output files committed */
    uint32_t inputs;                    /* files those replaced */
    int64_t bytes_in;                   /* their bytes, read and rewritten this round */
    uint32_t files_before, files_after; /* the table's live files around the round */
    int64_t bytes_before, bytes_after;
    int64_t rows;       /* rows rewritten */
    uint32_t conflicts; /* groups abandoned because a racing commit removed an input */
    uint32_t deferred;  /* bins not started: opts->deadline_ms had passed */
};

/* Bin-pack the current snapshot's small files (under opts->small_bytes;
 * with opts->tier_factor, full tiers of larger ones, see above), per
 * partition, into files of about target_bytes, and commit each group
 * as a replace snapshot. Concurrent appends are kept; a group whose inputs
 * another commit removed is abandoned (its output deleted). stats may be
 * NULL. */
int fr_ice_compact(struct fr_ice_catalog *cat, const char *ns, const char *name,
                   const struct fr_ice_compact_opts *opts, struct fr_ice_compact_stats *stats);

#endif
