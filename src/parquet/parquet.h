/*
 * parquet.h — freshet's Parquet writer and reader (flat schemas only).
 *
 * freshet's tables are Iceberg tables whose data files are Parquet. Debian
 * ships no C Parquet library, so this module writes and reads the subset
 * freshet needs: one level of REQUIRED or OPTIONAL columns of the types in
 * enum fr_pq_type, v1 data pages, PLAIN and dictionary encodings (the
 * reader also takes DATA_PAGE_V2, RLE booleans and the DELTA / BYTE_STREAM_
 * SPLIT encodings other writers emit), codecs UNCOMPRESSED, SNAPPY and ZSTD.
 * docs/adr/0005-parquet-writer.md records why it is shaped this way.
 *
 * Writer. Values are appended one row at a time (fr_pq_write_* for each
 * column, then fr_pq_row_end) or a batch of rows at a time
 * (fr_pq_write_batch). Each column buffers its pages for the current row
 * group; when the buffered bytes reach opts.row_group_bytes the row group is
 * written out and the memory is reused, so memory is bounded by the row-group
 * size whatever the input length. The bytes go through a small output
 * interface (struct fr_pq_out) so the same code can target a local file
 * (fr_pq_out_file: temporary name, fsync, rename) or an object store.
 *
 * Reader. fr_pq_reader_open parses and validates the footer; a scan
 * (fr_pq_scan_open) reads a projection of the columns in batches of typed
 * values with NULL flags, skipping row groups whose statistics rule out a
 * predicate. Every length, count and offset in the file is checked before it
 * is used, and every allocation is bounded by the file size or an explicit
 * cap, so a hostile file gets an error code, never a crash.
 *
 * Errors. Every function returns FR_OK or a negative code from core/err.h.
 * fr_pq_errmsg() describes the most recent error on the calling thread in one
 * line (which column, which row, which offset). Bad data gives FR_EUTF8,
 * FR_ETOOBIG, FR_ECORRUPT or FR_ETRUNC; the output's own errors (FR_ENOSPC,
 * FR_EIO) pass through unchanged.
 *
 * Threads. A writer, reader or scan is used by one thread at a time (a writer
 * with opts.compress_workers = 1 runs one internal thread of its own). Several
 * scans of one reader may run on different threads: they share only the
 * immutable metadata and the input's read_at, which must be thread-safe (the
 * file input uses pread).
 */
#ifndef FR_PARQUET_H
#define FR_PARQUET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- types -- */

/* Logical column types and their Parquet representation:
 *   BOOL          BOOLEAN
 *   INT32         INT32                 (no annotation, as Iceberg writes int)
 *   INT64         INT64                 (no annotation, as Iceberg writes long)
 *   DOUBLE        DOUBLE
 *   STRING        BYTE_ARRAY  STRING / UTF8; bytes must be valid UTF-8
 *   DATE          INT32       DATE; days since 1970-01-01
 *   TIMESTAMP     INT64       TIMESTAMP(isAdjustedToUTC=true, MICROS); Iceberg timestamptz
 *   TIMESTAMP_NTZ INT64       TIMESTAMP(isAdjustedToUTC=false, MICROS); Iceberg timestamp
 * The reader converts MILLIS and NANOS timestamps to microseconds. */
enum fr_pq_type {
    FR_PQ_BOOL = 1,
    FR_PQ_INT32,
    FR_PQ_INT64,
    FR_PQ_DOUBLE,
    FR_PQ_STRING,
    FR_PQ_DATE,
    FR_PQ_TIMESTAMP,
    FR_PQ_TIMESTAMP_NTZ,
};

/* Compression codecs; the values are Parquet's CompressionCodec ids. */
enum fr_pq_codec {
    FR_PQ_UNCOMPRESSED = 0,
    FR_PQ_SNAPPY = 1,
    FR_PQ_ZSTD = 6,
};

/* A string value: len bytes at ptr, not NUL-terminated. */
struct fr_pq_str {
    const char *ptr;
    uint32_t len;
};

/* One typed value (statistics bounds, predicates). INT32 and DATE use i32;
 * INT64 and both timestamps use i64. */
struct fr_pq_value {
    enum fr_pq_type type;
    union {
        bool b;
        int32_t i32;
        int64_t i64;
        double f64;
        struct fr_pq_str str;
    } v;
};

/* One leaf column. Names must match [A-Za-z_][A-Za-z0-9_]* when writing
 * (what Iceberg's name sanitiser leaves unchanged); field_id is the Iceberg
 * column id, required (>= 0) and unique when writing, -1 when a file read
 * has none. */
struct fr_pq_column {
    const char *name;
    enum fr_pq_type type;
    bool optional; /* false: REQUIRED, every row has a value */
    int32_t field_id;
};

/* A flat schema. The caller owns the array; the writer copies what it needs
 * during fr_pq_writer_open. */
struct fr_pq_schema {
    const struct fr_pq_column *columns;
    uint32_t ncolumns;
};

/* Check a schema for writing: 1..4096 columns, valid unique names, known
 * types, unique field ids >= 0. FR_OK or FR_EINVAL (fr_pq_errmsg says why). */
int fr_pq_schema_check(const struct fr_pq_schema *schema);

/* The text of the most recent error returned by an fr_pq_* function on this
 * thread; "" when there was none. Valid until the next fr_pq_* call. */
const char *fr_pq_errmsg(void);

/* Name of a type ("string", "timestamp", ...); never NULL. */
const char *fr_pq_type_name(enum fr_pq_type type);

/* ---------------------------------------------------------- batches -- */

/* One column of a batch of rows: value i belongs to row i. nulls[i] != 0
 * marks row i NULL (its value slot is ignored); nulls may be NULL when the
 * batch has no NULLs. The union member follows the column type as in struct
 * fr_pq_value; booleans are bytes 0/1. */
struct fr_pq_vec {
    uint32_t column; /* schema column index */
    enum fr_pq_type type;
    const uint8_t *nulls;
    union {
        const uint8_t *b;
        const int32_t *i32;
        const int64_t *i64;
        const double *f64;
        const struct fr_pq_str *str;
    } v;
};

/* nrows rows of ncols columns. From a scan, first_row is the file row
 * number of row 0 and row_group its row group. */
struct fr_pq_batch {
    uint64_t first_row;
    uint32_t row_group;
    uint32_t nrows;
    uint32_t ncols;
    const struct fr_pq_vec *cols;
};

/* ---------------------------------------------------------- output -- */

/* Where the writer's bytes go. write appends len bytes (all or an error);
 * close makes everything written durable and visible under the final name
 * and releases ctx; abort discards everything (no partial file may remain
 * looking complete) and releases ctx. Exactly one of close or abort is
 * called, once. Errors are fr_err codes; FR_ENOSPC and FR_EIO are typical. */
struct fr_pq_out_ops {
    int (*write)(void *ctx, const void *data, size_t len);
    int (*close)(void *ctx);
    void (*abort)(void *ctx);
};

struct fr_pq_out {
    const struct fr_pq_out_ops *ops;
    void *ctx;
};

/* A local file: bytes go to "<path>.tmp.<pid>.<n>"; close fsyncs it, renames
 * it over path and fsyncs the directory; abort unlinks it. */
int fr_pq_out_file(const char *path, struct fr_pq_out *out);
/* fr_pq_out_file whose close renames the file into place at once and
 * leaves its fsync and the directory's to set (core/syncset.h): the file
 * is durable only after the set's next flush, and a crash before that may
 * leave it torn under its final name. For a file that nothing durable
 * names before that flush, under a name that a retry writes over (the
 * processor's epoch files: the catalog flushes the set before it names
 * them). */
struct fr_syncset;
int fr_pq_out_file_deferred(const char *path, struct fr_syncset *set, struct fr_pq_out *out);
/* Mark a file output as bulk (a backfill epoch's): past 16 MiB it writes
 * around the page cache from an 8 MiB ring of staging blocks on huge
 * pages and a thread of its own (docs/adr/0037). Not for live outputs,
 * whose memory budget the ring would spend. No effect on other outputs. */
void fr_pq_out_bulk(struct fr_pq_out *out);

/* ---------------------------------------------------------- writer -- */

struct fr_pq_kv {
    const char *key;
    const char *value;
};

/* Writer options. Start from fr_pq_opts_default and change fields. */
struct fr_pq_opts {
    enum fr_pq_codec codec;   /* default ZSTD */
    int zstd_level;           /* 1..19, default 3 */
    size_t row_group_bytes;   /* buffered bytes that cut a row group; default 128 MiB */
    size_t page_bytes;        /* target data page size; default 1 MiB */
    uint32_t page_rows;       /* most values per data page; default 20000 */
    size_t dict_max_bytes;    /* dictionary page limit per chunk, 0 = no dictionaries; default 2 MiB */
    size_t max_value_bytes;   /* longest accepted value, <= 1 GiB; default 16 MiB */
    size_t stats_max_bytes;   /* longer string bounds are truncated; default 256, >= 16 */
    /* Bit i set: column i (< 64) is written PLAIN only, never with a
     * dictionary. For columns whose values are (nearly) all distinct — ids,
     * documents — where trying a dictionary at the start of every row group
     * only costs hashing and copying. Default 0. */
    uint64_t plain_columns;
    /* Bit i set: column i (< 64) holds random-looking values (UUIDs,
     * hashes), in which zstd finds next to no repeats to match: its PLAIN
     * pages are compressed with the match search stepping 9 bytes at a time
     * and the literals still entropy-coded. On the events' meta.id
     * (36-character UUIDs) that nearly halves zstd's instructions for under
     * 2 % more bytes (docs/adr/0034). Only for codec ZSTD; default 0. */
    uint64_t random_columns;
    /* Bit i set: column i (< 64), if INT64 or a timestamp, has its pages
     * that are not dictionary-encoded written DELTA_BINARY_PACKED instead
     * of PLAIN: each value as its difference from the previous one,
     * bit-packed in blocks. Ids and times that mostly rise take a few bits
     * a value, and the compressor then has a fraction of the bytes to work
     * on (docs/adr/0035). DuckDB, hyparquet and Polars read it on v1
     * pages. Default 0. */
    uint64_t delta_columns;
    unsigned compress_workers; /* 0: compress pages on the caller's thread (default);
                                  1: on one background thread, at most 4 pages queued */
    const struct fr_pq_kv *kv; /* key/value metadata, e.g. iceberg.schema; copied */
    uint32_t nkv;
};

void fr_pq_opts_default(struct fr_pq_opts *opts);

/* Per-column totals over the whole file, as Iceberg's manifests need them
 * (value_counts, null_value_counts, nan_value_counts, column_sizes,
 * lower_bounds, upper_bounds). Bounds exclude NULL and NaN; string bounds are
 * truncated to opts.stats_max_bytes (then *_exact is false: min is a prefix
 * of the true minimum, max is greater than the true maximum). For doubles a
 * zero lower bound is -0.0 and a zero upper bound +0.0, as Parquet requires. */
struct fr_pq_col_stats {
    uint64_t value_count; /* values including NULLs */
    uint64_t null_count;
    uint64_t nan_count;
    uint64_t compressed_bytes;   /* page headers + bodies, all row groups */
    uint64_t uncompressed_bytes;
    bool has_bounds;             /* false when every value is NULL or NaN */
    bool min_exact, max_exact;
    struct fr_pq_value min, max; /* string bytes owned by the stats */
};

struct fr_pq_file_stats {
    uint64_t rows;
    uint64_t file_bytes;
    uint32_t ncols;
    uint32_t nrow_groups;
    struct fr_pq_col_stats *cols;  /* ncols entries */
    uint64_t *row_group_offsets;   /* nrow_groups entries: Iceberg split_offsets */
};

/* Release what stats owns; the struct is left zeroed. Accepts NULL. */
void fr_pq_file_stats_free(struct fr_pq_file_stats *stats);

struct fr_pq_writer;

/* Open a writer. Takes ownership of out in every case: on failure out has
 * been aborted and *writer is NULL. FR_EINVAL for a bad schema or options. */
int fr_pq_writer_open(const struct fr_pq_schema *schema, const struct fr_pq_opts *opts,
                      const struct fr_pq_out *out, struct fr_pq_writer **writer);

/* Append one value to column col of the current row. Each column takes
 * exactly one value (or NULL) per row, in any column order. INT32 and DATE
 * columns take fr_pq_write_int32; INT64 and timestamps fr_pq_write_int64.
 * Errors that leave the writer usable, with nothing of the value written:
 *   FR_EINVAL  wrong type, column out of range, NULL for a REQUIRED column
 *   FR_ESTATE  this column already has a value in the current row
 *   FR_EUTF8   string is not valid UTF-8 (the message names column and row)
 *   FR_ETOOBIG value longer than opts.max_value_bytes
 * The caller may then write another value (e.g. a NULL) for that column.
 * Any other error (I/O, memory) is sticky: every later call returns it. */
int fr_pq_write_null(struct fr_pq_writer *writer, uint32_t col);
int fr_pq_write_bool(struct fr_pq_writer *writer, uint32_t col, bool value);
int fr_pq_write_int32(struct fr_pq_writer *writer, uint32_t col, int32_t value);
int fr_pq_write_int64(struct fr_pq_writer *writer, uint32_t col, int64_t value);
int fr_pq_write_double(struct fr_pq_writer *writer, uint32_t col, double value);
int fr_pq_write_str(struct fr_pq_writer *writer, uint32_t col, const char *ptr, size_t len);
/* fr_pq_write_str for a value the caller has already validated as UTF-8
 * (e.g. fields of a JSON document its parser checked byte by byte): the
 * writer does not check it again. Passing invalid UTF-8 writes a file that
 * readers may reject. */
int fr_pq_write_str_valid(struct fr_pq_writer *writer, uint32_t col, const char *ptr, size_t len);

/* Hints, not writes: start loading the dictionary slot that writing this
 * value to column col would probe, so that the write a row later finds it
 * in cache (a large chunk's dictionary is megabytes of slots, and each
 * probe of it used to miss). No effect on the output, nor on any state;
 * nothing when col is out of range, of another type, or not dictionary
 * encoded at the moment. */
void fr_pq_prefetch_int64(const struct fr_pq_writer *writer, uint32_t col, int64_t value);
void fr_pq_prefetch_str(const struct fr_pq_writer *writer, uint32_t col, const char *ptr,
                        size_t len);

/* Finish the current row: FR_ESTATE (naming the column) when a column has no
 * value yet. May write a row group to the output. */
int fr_pq_row_end(struct fr_pq_writer *writer);

/* Append batch->nrows rows. The batch must hold every column once, in
 * schema order, with the schema's types. All strings are validated first,
 * so on FR_EUTF8 / FR_ETOOBIG / FR_EINVAL no row of the batch was written.
 * Not allowed in the middle of a row started with fr_pq_write_*. */
int fr_pq_write_batch(struct fr_pq_writer *writer, const struct fr_pq_batch *batch);

/* Rows appended so far (complete rows only). */
uint64_t fr_pq_writer_rows(const struct fr_pq_writer *writer);

/* Bytes the writer holds for column's dictionary now (0: none, or
 * dropped: a dictionary the chunk's first page refused is freed at once). */
size_t fr_pq_writer_dict_bytes(const struct fr_pq_writer *writer, uint32_t column);

/* Write the last row group and the footer, then close the output. On
 * success the file is complete under its final name and, if stats is not
 * NULL, *stats is filled (free it with fr_pq_file_stats_free). On failure the
 * output is aborted. FR_ESTATE when a row is incomplete. Either way the
 * writer must still be released with fr_pq_writer_free. */
int fr_pq_writer_close(struct fr_pq_writer *writer, struct fr_pq_file_stats *stats);

/* Release the writer; if it was not closed successfully, abort the output
 * (the file never appears). Accepts NULL. */
void fr_pq_writer_free(struct fr_pq_writer *writer);

/* ---------------------------------------------------------- input -- */

/* Where the reader's bytes come from. read_at reads exactly len bytes at
 * off (FR_ETRUNC when the source is shorter); it must be safe to call from
 * several threads at once. close releases ctx. */
struct fr_pq_in_ops {
    int (*read_at)(void *ctx, void *dst, size_t len, uint64_t off);
    void (*close)(void *ctx);
};

struct fr_pq_in {
    const struct fr_pq_in_ops *ops;
    void *ctx;
    uint64_t size; /* total bytes */
};

/* A local file, read with pread. */
int fr_pq_in_file(const char *path, struct fr_pq_in *in);
/* A caller-owned memory region that must outlive the reader. */
int fr_pq_in_mem(const void *data, size_t len, struct fr_pq_in *in);

/* ---------------------------------------------------------- reader -- */

struct fr_pq_read_opts {
    size_t max_footer_bytes; /* default 64 MiB */
    size_t max_page_bytes;   /* largest page, compressed or not; default 256 MiB */
    uint32_t batch_rows;     /* rows per batch; default 4096 */
};

void fr_pq_read_opts_default(struct fr_pq_read_opts *opts);

struct fr_pq_reader;

/* Open a reader over in, taking ownership of in in every case (on failure
 * it is closed and *reader is NULL). Reads and validates the footer:
 * FR_ETRUNC / FR_ECORRUPT for a damaged file, FR_EUNSUPPORTED for nested
 * schemas. Columns of types outside enum fr_pq_type (FLOAT, DECIMAL, BLOB,
 * ...) are listed with type 0 and cannot be projected. */
int fr_pq_reader_open(const struct fr_pq_in *in, const struct fr_pq_read_opts *opts,
                      struct fr_pq_reader **reader);
/* Shorthand: fr_pq_in_file + fr_pq_reader_open. opts may be NULL. */
int fr_pq_reader_open_file(const char *path, const struct fr_pq_read_opts *opts,
                           struct fr_pq_reader **reader);
void fr_pq_reader_free(struct fr_pq_reader *reader);

/* The file's schema; names are NUL-terminated and live as long as reader. */
const struct fr_pq_schema *fr_pq_reader_schema(const struct fr_pq_reader *reader);
/* Column index of name, or FR_ENOTFOUND. */
int fr_pq_reader_column(const struct fr_pq_reader *reader, const char *name);
uint64_t fr_pq_reader_rows(const struct fr_pq_reader *reader);
uint32_t fr_pq_reader_row_groups(const struct fr_pq_reader *reader);
/* created_by, or "" when absent; lives as long as reader. */
const char *fr_pq_reader_created_by(const struct fr_pq_reader *reader);
/* Value of key in the key/value metadata: FR_OK and *value and *len pointing
 * into the reader (not NUL-terminated), or FR_ENOTFOUND. */
int fr_pq_reader_kv(const struct fr_pq_reader *reader, const char *key, const char **value,
                    size_t *len);

/* One column chunk's metadata. Bounds are decoded into typed values (string
 * bytes point into the reader); has_bounds is false when the file has no
 * usable min/max for the chunk. */
struct fr_pq_chunk_info {
    uint64_t rows;
    uint64_t null_count;
    bool has_null_count;
    bool has_bounds;
    struct fr_pq_value min, max;
    enum fr_pq_codec codec;
    uint64_t compressed_bytes;
    uint64_t uncompressed_bytes;
    uint64_t offset; /* first page */
    bool has_dictionary;
};

int fr_pq_reader_chunk(const struct fr_pq_reader *reader, uint32_t row_group, uint32_t col,
                       struct fr_pq_chunk_info *info);

/* Pages seen by fr_pq_reader_check_pages. */
struct fr_pq_page_check {
    uint64_t pages;    /* every page of every column chunk */
    uint64_t with_crc; /* of them, the pages whose header has a crc (all of it matched) */
};

/* Read every page of every column chunk (header and bytes, not decoded)
 * and check the CRC-32 of each page whose header carries one. FR_OK;
 * FR_ECRC on the first mismatch, FR_ECORRUPT / FR_ETRUNC on a page header
 * that does not parse or a page that runs past its chunk, with
 * fr_pq_errmsg naming the row group, column, page and byte. One page in
 * memory at a time (max_page_bytes). The scans never check CRCs: this is
 * `freshet verify`'s pass over the bytes (docs/adr/0062). */
int fr_pq_reader_check_pages(struct fr_pq_reader *reader, struct fr_pq_page_check *out);

/* A predicate for skipping row groups: keep only rows whose value in column
 * lies in [min, max] (either side optional). Rows where the column is NULL
 * never match. Row groups are skipped only when the statistics prove no row
 * can match; rows inside a kept row group are not filtered. */
struct fr_pq_pred {
    uint32_t column;
    bool has_min, has_max;
    struct fr_pq_value min, max;
};

/* True when row group row_group may hold rows matching every predicate. */
bool fr_pq_row_group_may_match(const struct fr_pq_reader *reader, uint32_t row_group,
                               const struct fr_pq_pred *preds, uint32_t npreds);

struct fr_pq_scan_opts {
    const uint32_t *columns; /* projection in output order; NULL = every column */
    uint32_t ncolumns;
    const struct fr_pq_pred *preds; /* row-group skipping; may be NULL */
    uint32_t npreds;
};

struct fr_pq_scan;

/* Start a scan of reader (which must outlive it). FR_EINVAL for a column out
 * of range or of an unsupported type. */
int fr_pq_scan_open(struct fr_pq_reader *reader, const struct fr_pq_scan_opts *opts,
                    struct fr_pq_scan **scan);
/* The next batch: FR_OK and *batch (cols in projection order; every vec has
 * a nulls array), or FR_EEOF after the last row. The batch and every pointer
 * in it stay valid until the next call or fr_pq_scan_free. Batches never
 * span row groups. After an error the scan is unusable. */
int fr_pq_scan_next(struct fr_pq_scan *scan, const struct fr_pq_batch **batch);
/* Row groups skipped by predicates so far. */
uint32_t fr_pq_scan_skipped(const struct fr_pq_scan *scan);
void fr_pq_scan_free(struct fr_pq_scan *scan);

#endif
