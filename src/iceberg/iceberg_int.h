/*
 * iceberg_int.h — private to src/iceberg: the in-memory model of table
 * metadata, manifests and manifest lists, the Avro codec, the catalog's
 * SQL, and the helpers the files share. Files, in layering order:
 *
 *   util.c        arena, error message, ids, URIs <-> local paths, POSIX io ops
 *   avro.c        Avro binary encoding, object-container framing, decoder
 *   manifest.c    manifest and manifest-list records (write and read)
 *   metadata.c    table metadata JSON (write and parse back)
 *   catalog.c     SQLite catalog in the JDBC layout, compare-and-swap
 *   table.c       create / load, and each change applied to a base version
 *   commit.c      the commit protocol (state machine) and the public txn API
 *   read.c        live files of a snapshot, time travel, epoch markers
 *   maintenance.c expiry, orphan removal, compaction
 *   tables_cmd.c  `freshet tables` and `freshet compact`
 *   rest_updates.c  REST requirements / updates as a change (ICE_CH_REST),
 *                 LoadTableResult, create from a CreateTableRequest (rest.h)
 *   rest_client.c the REST catalog client, staging an append for it (rest.h)
 *
 * Everything here is used by one thread at a time (see iceberg.h).
 */
#ifndef FR_ICEBERG_INT_H
#define FR_ICEBERG_INT_H

#include "core/buf.h"
#include "iceberg/iceberg.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------- limits -- */

#define ICE_MAX_METADATA_BYTES (64u << 20) /* a metadata JSON file */
#define ICE_MAX_AVRO_BYTES (512u << 20)    /* a manifest or manifest list */
#define ICE_MAX_FIELDS 4096
#define ICE_MAX_PARTS 64
#define ICE_MAX_CHANGES 16 /* tables in one transaction (fr_ice_commit_result) */
#define ICE_PATH_MAX 4096

/* ------------------------------------------------------------- arena -- */

/* A bump allocator: many small allocations, one free. Capped. */
struct fr_ice_arena {
    struct ice_chunk *head;
    size_t used; /* bytes handed out, for the cap */
    size_t cap;
    size_t peak; /* most bytes handed out at once (across resets) */
};

struct fr_ice_arena *ice_arena_new(size_t cap);
void ice_arena_free(struct fr_ice_arena *arena);
/* Forget everything handed out; keep one chunk for what comes next. */
void ice_arena_reset(struct fr_ice_arena *arena);
/* Zeroed memory, 16-byte aligned; NULL when the cap or malloc refuses. */
void *ice_alloc(struct fr_ice_arena *arena, size_t size);
char *ice_strdup(struct fr_ice_arena *arena, const char *s);
char *ice_strndup(struct fr_ice_arena *arena, const char *s, size_t len);
void *ice_memdup(struct fr_ice_arena *arena, const void *p, size_t len);
/* Deep copies into arena: a value (its string), a column's metrics (its
 * bounds). FR_ENOMEM. out may not alias in. */
int ice_value_copy(struct fr_ice_arena *a, const struct fr_ice_value *in, struct fr_ice_value *out);
int ice_metrics_copy(struct fr_ice_arena *a, const struct fr_ice_col_metrics *in,
                     struct fr_ice_col_metrics *out);
char *ice_sprintf(struct fr_ice_arena *arena, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ----------------------------------------------------- error messages -- */

/* Set the thread's error message and return code (for `return ice_err(...)`). */
int ice_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ice_err_clear(void);

/* ----------------------------------------------------- ids and names -- */

void ice_uuid(char out[37]);        /* random (v4) UUID text */
int64_t ice_snapshot_id(void);      /* random, positive, < 2^53 (exact in JSON readers) */
bool ice_name_ok(const char *name); /* [A-Za-z_][A-Za-z0-9_]*, <= 127 bytes */

/* -------------------------------------------------------------- JSON -- */

#include "core/json.h"

/* Iterate the members of an object or the items of an array. */
struct ice_jit {
    const char *p, *end;
    bool obj, first;
};
void ice_jit_init(struct ice_jit *it, const struct fr_json_val *container);
/* 1 and the next member (key: its raw name; may be NULL) or item, 0 at the
 * end, FR_EJSON when malformed. */
int ice_jit_next(struct ice_jit *it, struct fr_json_val *key, struct fr_json_val *val);
/* Decode a JSON string value into the arena; NULL when not a string. */
char *ice_json_str(struct fr_ice_arena *arena, const struct fr_json_val *v);

/* --------------------------------------------------------- string set -- */

/* A set of strings (not copied: they must outlive the set). */
struct ice_strset {
    const char **slots;
    size_t cap, n;
};
void ice_strset_init(struct ice_strset *set);
void ice_strset_free(struct ice_strset *set);
/* 1 when added, 0 when already present, FR_ENOMEM. */
int ice_strset_add(struct ice_strset *set, const char *s);
bool ice_strset_has(const struct ice_strset *set, const char *s);

/* ---------------------------------------------------------------- io -- */

/* Flush the catalog's sync set (fr_ice_catalog_defer_sync), if any: the
 * first step of every catalog write that names files. */
int ice_cat_sync(struct fr_ice_catalog *cat);
/* The writes go through the catalog: one that defers its fsyncs
 * (fr_ice_catalog_defer_sync) hands them to its sync set (util.c). */
/* The files are on local disk (the POSIX ops, whatever the step hook), where
 * a link is free; false for an object store. */
bool ice_io_local(const struct fr_ice_catalog *cat);
int ice_io_create(struct fr_ice_catalog *cat, const char *path, const void *data, size_t len);
int ice_io_replace(struct fr_ice_catalog *cat, const char *path, const void *data, size_t len);
int ice_io_link(struct fr_ice_catalog *cat, const char *existing, const char *path);
/* A deferring catalog's replace in two steps, so that the content's fsync
 * joins the barrier before a catalog write and only the rename comes after
 * it: prepare writes data to a new temporary beside path (its name in tmp)
 * and hands its fsync to the set; finish renames it over path (the
 * directory's fsync to the set as well). A catalog that does not defer
 * gets FR_OK and an empty tmp from prepare, and replaces with
 * ice_io_replace later instead. */
int ice_io_prepare_replace(struct fr_ice_catalog *cat, const char *path, const void *data,
                           size_t len, char *tmp, size_t cap);
int ice_io_finish_replace(struct fr_ice_catalog *cat, const char *tmp, const char *path);
int ice_io_read(const struct fr_ice_io *io, const char *path, struct fr_buf *buf);
int ice_io_remove(const struct fr_ice_io *io, const char *path);
int ice_io_stat(const struct fr_ice_io *io, const char *path, int64_t *size, int64_t *mtime);
void ice_io_step(const struct fr_ice_io *io, enum fr_ice_step step, const char *detail);

/* ----------------------------------------------------- metadata model -- */

struct ice_schema {
    int32_t schema_id;
    uint32_t nfields;
    struct fr_ice_field *fields;
    const char **type_names; /* Iceberg type text per field (other engines' types kept) */
};

struct ice_pfield {
    int32_t source_id;
    int32_t field_id;
    const char *name;
    const char *transform;    /* text as written ("identity", "day", ...) */
    enum fr_ice_transform tf; /* 0 when the transform is not one freshet writes */
};

struct ice_spec {
    int32_t spec_id;
    uint32_t nfields;
    struct ice_pfield *fields;
};

struct ice_snapshot {
    struct fr_ice_snapshot pub; /* ids, times, summary */
    int32_t schema_id;          /* -1: absent */
};

struct ice_log_entry {
    int64_t timestamp_ms;
    int64_t snapshot_id; /* snapshot-log */
    const char *file;    /* metadata-log */
};

struct ice_ref {
    const char *name;
    const char *raw; /* the ref's JSON object as read (kept verbatim unless "main") */
};

struct ice_meta {
    struct fr_ice_arena *arena; /* owns everything below */
    /* References besides the first (ice_meta_share): a committed version is
     * shared, read-only, by the handle's cache and the tables loaded from
     * it; ice_meta_free releases one and frees at the last. Atomic because
     * a loaded table may be freed on another thread than its handle's. */
    atomic_uint shares;
    int format_version;
    char uuid[37];
    const char *location;
    int64_t last_sequence_number;
    int64_t last_updated_ms;
    int32_t last_column_id;
    int32_t current_schema_id;
    uint32_t nschemas;
    struct ice_schema *schemas;
    int32_t default_spec_id;
    int32_t last_partition_id;
    uint32_t nspecs;
    struct ice_spec *specs;
    int32_t default_sort_order_id;
    const char *sort_orders_raw; /* JSON array, kept verbatim */
    uint32_t nprops;
    struct fr_ice_kv *props;
    int64_t current_snapshot_id; /* -1: none */
    uint32_t nsnapshots;
    struct ice_snapshot *snapshots;
    uint32_t nsnapshot_log;
    struct ice_log_entry *snapshot_log;
    uint32_t nmetadata_log;
    struct ice_log_entry *metadata_log;
    uint32_t nrefs; /* refs other than main */
    struct ice_ref *refs;
    const char *statistics_raw;           /* kept verbatim, may be NULL */
    const char *partition_statistics_raw; /* kept verbatim, may be NULL */
};

/* metadata.c */
int ice_meta_parse(const char *json, size_t len, struct ice_meta **meta);
int ice_meta_write(const struct ice_meta *meta, struct fr_buf *out);
/* Release one reference (the last frees the arena). Accepts NULL. */
void ice_meta_free(struct ice_meta *meta);
/* One more reference to meta, which from now on nobody may change (the
 * version a commit wrote, the cached one): meta. */
struct ice_meta *ice_meta_share(struct ice_meta *meta);
/* Deep copy into a new arena (to build the next version from a base). */
int ice_meta_clone(const struct ice_meta *meta, struct ice_meta **copy);
const struct ice_schema *ice_meta_schema(const struct ice_meta *meta, int32_t schema_id);
const struct ice_spec *ice_meta_spec(const struct ice_meta *meta, int32_t spec_id);
const struct ice_snapshot *ice_meta_snapshot(const struct ice_meta *meta, int64_t snapshot_id);
const char *ice_meta_prop(const struct ice_meta *meta, const char *key);
int64_t ice_meta_prop_int(const struct ice_meta *meta, const char *key, int64_t dflt);
const char *ice_summary_get(const struct fr_ice_snapshot *snap, const char *key);
/* Parse one schema / snapshot object (REST updates) into meta's arena;
 * FR_ECORRUPT naming the bad field. */
int ice_schema_parse(struct ice_meta *meta, const struct fr_json_val *obj, struct ice_schema *s);
int ice_snapshot_parse(struct ice_meta *meta, const struct fr_json_val *obj,
                       struct ice_snapshot *s);
/* One snapshot object as the metadata file holds it. */
int ice_snapshot_json(const struct ice_snapshot *snap, struct fr_buf *out);
/* Schema JSON of one schema ({"type":"struct","schema-id":..,"fields":[..]}). */
int ice_schema_json(const struct ice_schema *schema, struct fr_buf *out);
/* Partition-spec fields JSON array (the manifest's "partition-spec" key). */
int ice_spec_fields_json(const struct ice_spec *spec, struct fr_buf *out);
const char *ice_type_name(enum fr_ice_type type);
enum fr_ice_type ice_type_parse(const char *name); /* 0 when not one of ours */
const char *ice_transform_name(enum fr_ice_transform tf);
/* Result type of a partition field (0 when unknown). */
enum fr_ice_type ice_pfield_type(const struct ice_meta *meta, const struct ice_pfield *pf);

/* ---------------------------------------------------------- avro.c -- */

/* Binary encoding (Avro 1.12 "Binary Encoding"). */
int ice_avro_long(struct fr_buf *buf, int64_t v);
int ice_avro_bytes(struct fr_buf *buf, const void *p, size_t len);
int ice_avro_str(struct fr_buf *buf, const char *s);
int ice_avro_double(struct fr_buf *buf, double v);
int ice_avro_bool(struct fr_buf *buf, bool v);

/* Object container writer: header, then blocks of records. */
struct ice_avro_writer {
    struct fr_buf *out;  /* the whole file */
    struct fr_buf block; /* records of the open block */
    uint8_t sync[16];
    uint32_t block_count;
};

/* Write magic, metadata (avro.schema, avro.codec=null, then meta pairs) and
 * the sync marker into out. */
int ice_avro_begin(struct ice_avro_writer *w, struct fr_buf *out, const char *schema_json,
                   const struct fr_ice_kv *meta, uint32_t nmeta);
/* The buffer to encode the next record into; then call ice_avro_record_end. */
static inline struct fr_buf *ice_avro_record(struct ice_avro_writer *w)
{
    return &w->block;
}
int ice_avro_record_end(struct ice_avro_writer *w);
/* Flush the last block; releases the writer's block buffer. */
int ice_avro_finish(struct ice_avro_writer *w);
void ice_avro_writer_free(struct ice_avro_writer *w);

/* Decoded values (schema-driven; every record type inline). */
enum ice_avro_kind {
    AV_NULL = 1,
    AV_BOOLEAN,
    AV_INT,
    AV_LONG,
    AV_FLOAT,
    AV_DOUBLE,
    AV_BYTES,
    AV_STRING,
    AV_FIXED,
    AV_ENUM,
    AV_RECORD,
    AV_ARRAY,
    AV_MAP,
    AV_UNION
};

struct ice_avro_schema;

struct ice_avro_val {
    enum ice_avro_kind kind; /* of the value (a union's chosen branch) */
    const struct ice_avro_schema *schema;
    union {
        bool b;
        int64_t l; /* int, long, enum index */
        double d;
        struct {
            const uint8_t *p; /* into the file buffer */
            size_t n;
        } bytes;
        struct {
            struct ice_avro_val *items; /* record fields, array items, map key/value pairs */
            uint32_t n;
        } list;
    } u;
};

/* An Avro file read back: metadata and the top-level records. */
struct ice_avro_file {
    struct fr_ice_arena *arena;
    const struct ice_avro_schema *schema;
    uint32_t nmeta;
    struct fr_ice_kv *meta; /* values NUL-terminated copies */
    uint32_t nrecords;
    struct ice_avro_val *records;
};

/* Parse a whole container file (codec null only; others FR_EUNSUPPORTED).
 * data must outlive file (values point into it). */
int ice_avro_read(const uint8_t *data, size_t len, struct ice_avro_file *file);
void ice_avro_file_free(struct ice_avro_file *file);
const char *ice_avro_meta(const struct ice_avro_file *file, const char *key);
/* The field of record rec whose field-id is id, or NULL. Null union values
 * come back as NULL too. */
const struct ice_avro_val *ice_avro_field(const struct ice_avro_val *rec, int32_t id);
bool ice_avro_get_long(const struct ice_avro_val *rec, int32_t id, int64_t *out);

/* -------------------------------------------------------- manifest.c -- */

/* A data-file entry of a manifest (a copy the caller owns in an arena). */
struct ice_dfile {
    const char *path; /* URI */
    int32_t content;  /* 0 data */
    const char *format;
    uint32_t npart;
    struct fr_ice_value *part;
    int64_t record_count;
    int64_t file_size;
    uint32_t nmetrics;
    struct fr_ice_col_metrics *metrics;
    uint32_t nsplit;
    int64_t *split;
    int32_t sort_order_id; /* -1: absent */
};

enum { ICE_EXISTING = 0, ICE_ADDED = 1, ICE_DELETED = 2 };

struct ice_entry {
    int32_t status;
    int64_t snapshot_id;          /* -1: null (inherited) */
    int64_t sequence_number;      /* -1: null */
    int64_t file_sequence_number; /* -1: null */
    struct ice_dfile file;
};

struct ice_part_summary {
    bool contains_null;
    int contains_nan; /* -1 absent */
    const uint8_t *lower;
    uint32_t lower_len;
    const uint8_t *upper;
    uint32_t upper_len;
};

/* A manifest-list row. */
struct ice_mfile {
    const char *path;
    int64_t length;
    int32_t spec_id;
    int32_t content;
    int64_t sequence_number;
    int64_t min_sequence_number;
    int64_t added_snapshot_id;
    int32_t added_files, existing_files, deleted_files;
    int64_t added_rows, existing_rows, deleted_rows;
    uint32_t nparts;
    struct ice_part_summary *parts; /* NULL when absent */
};

/* Write a manifest of entries for spec under schema into out. ADDED
 * entries with snapshot_id -1 inherit (null ids); others must carry both
 * sequence numbers. mf receives the row for the manifest list, except path
 * and length, which the caller sets after writing; sequence numbers of
 * the row are left -1 for the caller (the snapshot's). */
int ice_manifest_write(const struct ice_meta *meta, const struct ice_schema *schema,
                       const struct ice_spec *spec, int64_t snapshot_id,
                       const struct ice_entry *entries, uint32_t nentries, struct fr_buf *out,
                       struct ice_mfile *mf, struct fr_ice_arena *arena);
/* Read a manifest; entries are copied into arena; ADDED entries with null
 * ids inherit them from mf (the manifest-list row). */
int ice_manifest_read(const uint8_t *data, size_t len, const struct ice_mfile *mf,
                      struct fr_ice_arena *arena, struct ice_entry **entries, uint32_t *n);
int ice_mlist_write(int64_t snapshot_id, int64_t parent_id, int64_t seq,
                    const struct ice_mfile *mfiles, uint32_t n, struct fr_buf *out);
int ice_mlist_read(const uint8_t *data, size_t len, struct fr_ice_arena *arena,
                   struct ice_mfile **mfiles, uint32_t *n);
/* Iceberg single-value binary serialisation of v (bounds, summaries). */
int ice_value_bin(const struct fr_ice_value *v, uint8_t *out, uint32_t cap, uint32_t *len);
/* Decode a partition value of type from its binary form. */
int ice_value_from_bin(enum fr_ice_type type, const uint8_t *p, uint32_t len,
                       struct fr_ice_value *v);
/* Compare two non-null values of one type (strings byte-wise). */
int ice_value_cmp(const struct fr_ice_value *a, const struct fr_ice_value *b);

/* ---------------------------------------------------------- catalog.c -- */

struct ice_cat_update {
    const char *ns;
    const char *name;
    const char *old_location;
    const char *new_location;
};

/* One cached metadata file (table.c): while the catalog row still names
 * `location` (and, for a local file, the file is still there with its
 * size: damage from outside is still seen), its content is `meta`
 * (parsed) and/or `raw` (its bytes, for answering a REST load). */
struct ice_meta_slot {
    char *ns, *name, *location; /* NULL: empty slot */
    struct ice_meta *meta;      /* NULL or one reference (shared with loaded tables) */
    void *raw;                  /* NULL or the file's bytes (malloc'ed) */
    int64_t bytes;              /* the file's size */
    uint64_t used;              /* for replacing the least recently used */
};
#define ICE_META_CACHE 32 /* slots: the tables of one lake, twice over */
#define ICE_META_RAW_MAX ((size_t)8 << 20) /* larger files are not kept as bytes */

/* The cache itself: one per handle, or one shared by every handle of a
 * process that opens many (serve: a handle per request). Bounded:
 * ICE_META_CACHE slots, each at most ICE_MAX_METADATA_BYTES parsed plus
 * ICE_META_RAW_MAX bytes. */
struct fr_ice_meta_cache {
    pthread_mutex_t lock;
    struct ice_meta_slot slot[ICE_META_CACHE];
    uint64_t tick;
};

struct fr_ice_catalog {
    struct sqlite3 *db;
    char *lake_dir;      /* <data_dir>/lake */
    char *warehouse;     /* local */
    char *warehouse_uri; /* prefix of every location */
    char *catalog_name;
    int max_retries;
    bool v1; /* iceberg_tables has the iceberg_type column */
    struct fr_ice_io io;
    /* NULL, or the set that POSIX writes leave their fsyncs to: flushed
     * before every catalog write (ice_cat_sync) and at close. */
    struct fr_syncset *defer;
    /* Loads and commits of a table whose row names a version this handle
     * (or another sharing the cache) wrote or read copy it from here
     * instead of reading (and parsing) the file (table.c). */
    struct fr_ice_meta_cache *mcache;
    bool mcache_owned;
};

/* table.c: remember meta (shared, ice_meta_share: nobody may change it
 * afterwards) as the content of location (bytes long) for ns.name; a
 * failure only means the next load reads the file. */
void ice_meta_cache_put(struct fr_ice_catalog *cat, const char *ns, const char *name,
                        const char *location, int64_t bytes, struct ice_meta *meta);
/* Remember the bytes of location's metadata file (taken: *raw is set to
 * NULL when the cache keeps them, else left to the caller). */
void ice_meta_cache_put_raw(struct fr_ice_catalog *cat, const char *ns, const char *name,
                            const char *location, void **raw, size_t len);
/* The cached bytes of location (path: its local path) copied into out: 1,
 * or 0 (read the file). */
int ice_meta_cache_raw(struct fr_ice_catalog *cat, const char *ns, const char *name,
                       const char *location, const char *path, struct fr_buf *out);

int ice_cat_open_db(struct fr_ice_catalog *cat, const char *path, int busy_ms);
/* metadata_location of ns.name into buf (NUL-terminated): FR_OK,
 * FR_ENOTFOUND, FR_EBUSY, FR_EIO. */
int ice_cat_get(struct fr_ice_catalog *cat, const char *ns, const char *name, char *buf,
                size_t cap);
int ice_cat_insert(struct fr_ice_catalog *cat, const char *ns, const char *name,
                   const char *location);
/* All updates in one transaction: FR_OK, FR_ECONFLICT (a row had moved;
 * rolled back), FR_EBUSY (locked; nothing done), FR_EIO. io->step is called
 * at CATALOG_BEGIN, after each UPDATE and after COMMIT. */
int ice_cat_swap(struct fr_ice_catalog *cat, const struct ice_cat_update *updates, uint32_t n);
int ice_cat_delete(struct fr_ice_catalog *cat, const char *ns, const char *name);

/* ------------------------------------------------------------ tables -- */

struct fr_ice_table {
    struct fr_ice_catalog *cat;
    char ns[128];
    char name[128];
    char *dir;           /* local table directory */
    char *meta_location; /* URI of the metadata file the catalog points at */
    struct ice_meta *meta;
    char *schema_json;
    struct fr_ice_part_field *parts;
    uint32_t nparts;
    struct fr_ice_snapshot *pub_snaps; /* the snapshots' public parts, packed */
};

/* Map a URI inside the table (or a file: URI) to a local path. */
int ice_local_path(const struct fr_ice_table *table, const char *uri, char *out, size_t cap);
int ice_local_path_meta(const struct fr_ice_catalog *cat, const char *ns, const char *name,
                        const struct ice_meta *meta, const char *uri, char *out, size_t cap);
/* The table's local directory and its URI. */
int ice_table_dir(const struct fr_ice_catalog *cat, const char *ns, const char *name, char *out,
                  size_t cap);
/* Load with an already known catalog row (used by commit retries). */
int ice_table_load_at(struct fr_ice_catalog *cat, const char *ns, const char *name,
                      const char *location, struct fr_ice_table **table);
/* A table from metadata JSON another catalog returned (REST), its files
 * mapped through cat's warehouse. */
int ice_table_from_json(struct fr_ice_catalog *cat, const char *ns, const char *name,
                        const char *location, const char *json, size_t len,
                        struct fr_ice_table **table);
/* Read a snapshot's manifest list and all its manifests' entries. */
int ice_read_mlist(const struct fr_ice_table *table, const struct ice_snapshot *snap,
                   struct fr_ice_arena *arena, struct ice_mfile **mfiles, uint32_t *n);
int ice_read_manifest(const struct fr_ice_table *table, const struct ice_mfile *mf,
                      struct fr_ice_arena *arena, struct ice_entry **entries, uint32_t *n);

/* The kinds of change a transaction carries. */
enum ice_change_kind {
    ICE_CH_APPEND = 1,
    ICE_CH_OVERWRITE,
    ICE_CH_REWRITE,
    ICE_CH_ADD_COLUMN,
    ICE_CH_EXPIRE,
    ICE_CH_REST, /* requirements + updates as Iceberg REST JSON (rest_updates.c) */
};

struct ice_change {
    enum ice_change_kind kind;
    char ns[128];
    char name[128];
    struct fr_ice_arena *arena; /* owns the inputs below, lives as long as the txn */
    struct ice_dfile *files;    /* to add */
    uint32_t nfiles;
    const char **remove; /* rewrite: URIs that must be live */
    uint32_t nremove;
    struct fr_ice_kv *summary; /* caller's summary keys (freshet.* and extra) */
    uint32_t nsummary;
    const char *pipeline_id;
    int64_t epoch;
    /* add column */
    const char *column;
    enum fr_ice_type column_type;
    const char *column_doc;
    int32_t new_field_id;
    /* expire */
    int64_t older_than_ms;
    uint32_t retain_last;
    /* REST: the table-change object ({"requirements":[..],"updates":[..]}),
     * a NUL-terminated copy in arena, checked and applied per attempt */
    const char *rest_json;
    size_t rest_len;
    /* per attempt */
    struct fr_ice_table *base;
    struct ice_meta *next; /* the new version */
    char *next_location;   /* its URI */
    int64_t snapshot_id;
    /* files written by this change, for cleanup: the append manifest is
     * kept across attempts (it does not depend on the base) */
    char *kept_manifest; /* local path, may be NULL */
    struct ice_mfile kept_mf;
    char **attempt_files; /* local paths written by the current attempt */
    uint32_t nattempt_files;
    uint32_t attempt_cap;
    int attempt;
    /* A deferring catalog: the next version hint, written and fsynced with
     * the attempt's files, renamed into place by the publish (malloc'ed;
     * ice_publish_prepare) */
    char *hint_tmp;
    /* An object store (io not POSIX): the new metadata file's bytes, kept
     * from METADATA to PUBLISH, which writes the v<N> copy from them instead
     * of reading the file back (malloc'ed, NULL on local disk) */
    void *next_json;
    size_t next_json_len;
    /* expire: files to delete once the commit has landed */
    char **doomed;
    uint32_t ndoomed;
    uint32_t expired;        /* expiry: snapshots removed */
    uint32_t deleted;        /* doomed files actually removed */
    size_t expire_scan_peak; /* expiry: most manifest bytes held at once */
    /* sizes of what the last attempt wrote (fr_ice_commit_timing) */
    uint32_t nmanifests;     /* rows of its manifest list */
    uint64_t metadata_bytes; /* its metadata file */
};

/* Build c->next (and write its manifests and manifest list) from c->base.
 * FR_ECONFLICT when the change no longer applies (a rewrite's input is gone,
 * a column now exists). */
int ice_change_apply(struct ice_change *c);
/* Forget what one attempt wrote (deleting its files when remove is true). */
void ice_change_reset(struct ice_change *c, bool remove_files);
int ice_change_note_file(struct ice_change *c, const char *local_path);
void ice_change_free(struct ice_change *c);

/* Run one change as its own transaction (used by the one-table calls). */
int ice_commit_one(struct fr_ice_catalog *cat, struct ice_change *c, int64_t *snapshot_id);
int ice_change_new(struct fr_ice_catalog *cat, enum ice_change_kind kind, const char *ns,
                   const char *name, struct ice_change **c);
int ice_change_set_files(struct ice_change *c, const struct fr_ice_table *hint,
                         const struct fr_ice_data_file *files, uint32_t nfiles);
int ice_change_set_info(struct ice_change *c, const struct fr_ice_commit_info *info);

/* maintenance.c: fr_ice_remove_orphans over a loaded table (from the
 * SQLite catalog or a REST one); publish: bring version-hint.text up to
 * date first (not behind a REST catalog, whose commits publish). */
int ice_remove_orphans_in(const struct fr_ice_table *t, int64_t older_than_ms, bool dry_run,
                          bool publish, struct fr_ice_orphan_stats *stats);

/* rest_client.c: a LoadTableResult (result[0..len)) as a table whose
 * files map through cat's warehouse. FR_EPROTO when it is not one. */
int ice_rest_table_from_result(struct fr_ice_catalog *cat, const char *ns, const char *name,
                               const char *result, size_t len, struct fr_ice_table **table);
/* What a staged REST snapshot carries: files to add and, for a rewrite,
 * the live files it replaces (nremove > 0). */
struct ice_rest_stage_in {
    const struct fr_ice_data_file *files;
    uint32_t nfiles;
    const char *const *remove;
    uint32_t nremove;
    const struct fr_ice_commit_info *info; /* may be NULL */
    bool overwrite; /* replace every live file (rebuild, dlq replay) */
};
/* Stage in against the table of load_result (write its manifests and
 * manifest list in the shared warehouse) and append the change that
 * commits it to out (fr_ice_rest_stage_append says which). remove holds
 * manifest paths (fr_ice_file.path), as fr_ice_rewrite's do. A rewrite
 * whose input is no longer live is FR_ECONFLICT. */
int ice_rest_stage(struct fr_ice_catalog *cat, const char *ns, const char *name,
                   const char *load_result, size_t len, const struct ice_rest_stage_in *in,
                   struct fr_buf *out);

/* rest_updates.c: check c->rest_json's requirements against c->base and
 * apply its updates to c->next (FR_EREQUIREMENT, FR_EINVAL naming the bad
 * update, FR_EUNSUPPORTED naming an action freshet does not implement).
 * An empty update list leaves c->next NULL (nothing to commit). */
int ice_rest_apply(struct ice_change *c);
/* commit.c: add a prepared change to txn (the txn owns it from then on,
 * also on error). */
int ice_txn_add_change(struct fr_ice_txn *txn, struct ice_change *c);
/* table.c: write meta as the first version of ns.name and insert the
 * catalog row (the namespace must exist or is created). *location
 * receives the metadata URI in meta's arena. */
int ice_table_create_meta(struct fr_ice_catalog *cat, const char *ns, const char *name,
                          struct ice_meta *meta, const char **location);

/* Write metadata JSON for next as "NNNNN-<uuid>.metadata.json" (no clobber). */
int ice_write_metadata(struct ice_change *c);
/* After the catalog moved: v<N>.metadata.json (a hard link to the
 * metadata file, or written from json/json_len when they are given: an
 * object store, where a link is a GET and a PUT) and version-hint.text
 * (hint_tmp: the prepared one, which this renames into place or removes;
 * NULL: written here). */
int ice_publish(struct fr_ice_catalog *cat, const char *table_dir, const char *meta_location,
                const char *hint_tmp, const void *json, size_t json_len);
/* The version hint that publishing meta_location will write, prepared
 * before the catalog write (ice_io_prepare_replace): *tmp_out (malloc'ed)
 * is NULL when the catalog does not defer or the name is not freshet's. */
int ice_publish_prepare(struct fr_ice_catalog *cat, const char *table_dir,
                        const char *meta_location, char **tmp_out);
/* Version number N of a metadata file name "NNNNN-<uuid>.metadata.json"; -1 if none. */
int64_t ice_meta_version(const char *location);

#endif
