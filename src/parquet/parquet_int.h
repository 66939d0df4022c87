/*
 * parquet_int.h — private interface of src/parquet, shared by its files and
 * its unit tests; nothing outside src/parquet and tests/ includes it.
 *
 * Layers, in reading order (each file's header has its byte tables):
 *   thrift.c  Thrift compact protocol encoder (struct pq_tw) and bounded
 *             decoder (struct pq_tr)
 *   encode.c  RLE/bit-packed hybrid, UTF-8 check, hashing, the writer's
 *             dictionary (open addressing)
 *   codec.c   page compression: UNCOMPRESSED, SNAPPY, ZSTD
 *   pool.c    the writer's optional background compression thread
 *   footer.c  FileMetaData and PageHeader <-> struct pq_meta / pq_page
 *   io.c      file and memory inputs/outputs, the per-thread error text
 *   schema.c  schema and option validation for the writer
 *   writer.c  column buffers, pages, row groups, statistics
 *   column.c  the reader's column cursor: pages, decompression, decoding
 *   reader.c  footer validation, statistics, row-group skipping, scans
 */
#ifndef FR_PARQUET_INT_H
#define FR_PARQUET_INT_H

#include "parquet/parquet.h"

#include "core/buf.h"
#include "core/err.h"

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---------------------------------------------- Parquet enums (parquet.thrift) */

enum pq_phys { /* Type */
    PQ_BOOLEAN = 0,
    PQ_INT32 = 1,
    PQ_INT64 = 2,
    PQ_INT96 = 3,
    PQ_FLOAT = 4,
    PQ_DOUBLE = 5,
    PQ_BYTE_ARRAY = 6,
    PQ_FIXED_LEN_BYTE_ARRAY = 7,
};

enum pq_encoding { /* Encoding */
    PQ_ENC_PLAIN = 0,
    PQ_ENC_PLAIN_DICTIONARY = 2,
    PQ_ENC_RLE = 3,
    PQ_ENC_BIT_PACKED = 4,
    PQ_ENC_DELTA_BINARY_PACKED = 5,
    PQ_ENC_DELTA_LENGTH_BYTE_ARRAY = 6,
    PQ_ENC_DELTA_BYTE_ARRAY = 7,
    PQ_ENC_RLE_DICTIONARY = 8,
    PQ_ENC_BYTE_STREAM_SPLIT = 9,
};

enum pq_page_type { /* PageType */
    PQ_PAGE_DATA = 0,
    PQ_PAGE_INDEX = 1,
    PQ_PAGE_DICTIONARY = 2,
    PQ_PAGE_DATA_V2 = 3,
};

enum pq_repetition { PQ_REQUIRED = 0, PQ_OPTIONAL = 1, PQ_REPEATED = 2 };

enum pq_converted { /* ConvertedType, the ones we read or write */
    PQ_CT_UTF8 = 0,
    PQ_CT_DATE = 6,
    PQ_CT_TIMESTAMP_MILLIS = 9,
    PQ_CT_TIMESTAMP_MICROS = 10,
    PQ_CT_INT_32 = 17,
    PQ_CT_INT_64 = 18,
};

enum pq_logical { /* LogicalType union field ids */
    PQ_LT_NONE = 0,
    PQ_LT_STRING = 1,
    PQ_LT_DATE = 6,
    PQ_LT_TIMESTAMP = 8,
    PQ_LT_INTEGER = 10,
    PQ_LT_OTHER = 255, /* any other annotation: the column is unsupported */
};

enum pq_time_unit { PQ_UNIT_MILLIS = 1, PQ_UNIT_MICROS = 2, PQ_UNIT_NANOS = 3 };

#define PQ_MAGIC "PAR1"
#define PQ_MAGIC_LEN 4
#define PQ_TAIL_LEN 8 /* footer length (u32 LE) + magic */
#define PQ_MAX_COLUMNS 4096u
#define PQ_MAX_ROW_GROUPS 32767u /* RowGroup.ordinal is an i16 */
#define PQ_MAX_NAME 255u

/* ---------------------------------------------------------- errors (io.c) */

/* Record a one-line description for fr_pq_errmsg() and return code. */
int pq_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Forget the previous message. */
void pq_err_clear(void);
/* How many file outputs have gone direct (io.c, docs/adr/0037): tests. */
unsigned long pq_out_direct_count(void);

/* ------------------------------------------------------------ thrift.c */

enum pq_ttype { /* compact protocol type ids */
    PQ_T_STOP = 0,
    PQ_T_TRUE = 1,
    PQ_T_FALSE = 2,
    PQ_T_I8 = 3,
    PQ_T_I16 = 4,
    PQ_T_I32 = 5,
    PQ_T_I64 = 6,
    PQ_T_DOUBLE = 7,
    PQ_T_BINARY = 8,
    PQ_T_LIST = 9,
    PQ_T_SET = 10,
    PQ_T_MAP = 11,
    PQ_T_STRUCT = 12,
    PQ_T_UUID = 13,
};

#define PQ_THRIFT_DEPTH 32

/* Encoder: appends to buf. The first error sticks in rc and later calls do
 * nothing, so a whole structure is written and checked once at the end. */
struct pq_tw {
    struct fr_buf *buf;
    int rc;
    int depth;
    int16_t last[PQ_THRIFT_DEPTH]; /* previous field id, per open struct */
};

void pq_tw_init(struct pq_tw *tw, struct fr_buf *buf);
void pq_tw_i32(struct pq_tw *tw, int16_t id, int32_t v);
void pq_tw_i64(struct pq_tw *tw, int16_t id, int64_t v);
void pq_tw_i16(struct pq_tw *tw, int16_t id, int16_t v);
void pq_tw_bool(struct pq_tw *tw, int16_t id, bool v);
void pq_tw_double(struct pq_tw *tw, int16_t id, double v);
void pq_tw_bin(struct pq_tw *tw, int16_t id, const void *data, size_t len);
/* A struct-valued field: header, then the fields, then pq_tw_end. */
void pq_tw_struct(struct pq_tw *tw, int16_t id);
/* Start a top-level struct or a struct element of a list. */
void pq_tw_begin(struct pq_tw *tw);
/* Stop byte; closes the innermost struct. */
void pq_tw_end(struct pq_tw *tw);
/* A list-valued field with n elements of compact type etype. */
void pq_tw_list(struct pq_tw *tw, int16_t id, enum pq_ttype etype, uint32_t n);
void pq_tw_elem_i32(struct pq_tw *tw, int32_t v);
void pq_tw_elem_bin(struct pq_tw *tw, const void *data, size_t len);

/* Decoder over [p, end). Errors: FR_ETRUNC when the input ends inside a
 * value, FR_ECORRUPT for malformed bytes. */
struct pq_tr {
    const uint8_t *p, *end;
    int depth;
    int16_t last[PQ_THRIFT_DEPTH];
};

void pq_tr_init(struct pq_tr *tr, const uint8_t *p, size_t len);
/* Enter a struct (top level or a list element). */
int pq_tr_begin(struct pq_tr *tr);
/* Next field of the current struct: 1 with *id and *type, or 0 at the stop
 * byte (which also leaves the struct). A bool field's value is its type. */
int pq_tr_field(struct pq_tr *tr, int16_t *id, uint8_t *type);
int pq_tr_i32(struct pq_tr *tr, uint8_t type, int32_t *v);
int pq_tr_i64(struct pq_tr *tr, uint8_t type, int64_t *v);
int pq_tr_bool(struct pq_tr *tr, uint8_t type, bool *v);
int pq_tr_bin(struct pq_tr *tr, uint8_t type, const uint8_t **data, uint32_t *len);
/* A list (or set) header; *n is at most the bytes left, so callers may
 * allocate n elements. */
int pq_tr_list(struct pq_tr *tr, uint8_t type, uint8_t *etype, uint32_t *n);
/* Check that a field has the struct type before calling pq_tr_begin. */
int pq_tr_expect(uint8_t type, uint8_t want);
/* Skip one value of the given type (depth-limited). */
int pq_tr_skip(struct pq_tr *tr, uint8_t type);

/* Varints, shared with the page encoders. */
static inline size_t pq_uleb_put(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

/* Zigzag, as Thrift's compact protocol and DELTA_BINARY_PACKED store
 * signed integers: 0, -1, 1, -2, ... as 0, 1, 2, 3, ... */
static inline uint64_t pq_zigzag64(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t pq_unzigzag64(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline void pq_put_u32le(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t pq_get_u32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ------------------------------------------------------------ encode.c */

/* Bits needed to store max_value (0 for 0). */
static inline int pq_bit_width(uint32_t max_value)
{
    return max_value ? 32 - __builtin_clz(max_value) : 0;
}

/* pq_bit_width for 64-bit values. */
static inline int pq_bit_width64(uint64_t max_value)
{
    return max_value ? 64 - __builtin_clzll(max_value) : 0;
}

/* Append the RLE/bit-packed hybrid encoding of n values, each < 2^width
 * (width 1..32), without a length prefix. */
int pq_hyb_encode_u8(struct fr_buf *out, const uint8_t *vals, uint32_t n, int width);
int pq_hyb_encode_u32(struct fr_buf *out, const uint32_t *vals, uint32_t n, int width);

/* Append n little-endian 8-byte integers at vals as DELTA_BINARY_PACKED
 * (PQ-ENC): blocks of PQ_DBP_BLOCK values in PQ_DBP_MINIBLOCKS miniblocks;
 * the deltas wrap as the readers' 64-bit arithmetic does. */
#define PQ_DBP_BLOCK 128
#define PQ_DBP_MINIBLOCKS 4
int pq_dbp_encode_i64(struct fr_buf *out, const uint8_t *vals, uint32_t n);

/* Hybrid decoder over [p, end). */
struct pq_hyb {
    const uint8_t *p, *end;
    int width;
    uint32_t left;     /* values left in the current run */
    bool rle;          /* current run is a repeat */
    uint32_t value;    /* repeated value of an RLE run */
    const uint8_t *bp; /* bit-packed run: its first byte */
    const uint8_t *bp_end;
    uint32_t bp_next;  /* next value index within the bit-packed run */
};

void pq_hyb_init(struct pq_hyb *hyb, const uint8_t *p, size_t len, int width);
/* Decode exactly n values; FR_ETRUNC when the data ends first. */
int pq_hyb_get(struct pq_hyb *hyb, uint32_t *out, uint32_t n);
/* Decode n definition levels of a flat column (width 1) as NULL flags:
 * out[i] = 1 when level i is 0. Returns the count of non-NULL values. */
int64_t pq_hyb_get_nulls(struct pq_hyb *hyb, uint8_t *out, uint32_t n);

/* Offset of the first byte of p that breaks UTF-8 (RFC 3629: no overlongs,
 * surrogates or code points past U+10FFFF), or -1 when all of it is valid. */
ptrdiff_t pq_utf8_check(const uint8_t *p, size_t len);

static inline uint64_t pq_hash64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

uint64_t pq_hash_bytes(const uint8_t *p, size_t len);

/* The writer's per-chunk dictionary. Entries are stored PLAIN-encoded in
 * vals, so vals is the dictionary page body as it stands; the hash table
 * maps a value to its entry index. Capped at max_bytes of vals. */
struct pq_dict {
    int width;         /* 4 or 8 for fixed-width values, 0 for byte arrays */
    uint32_t n;        /* entries */
    uint32_t mask;     /* slots - 1 */
    uint64_t *slots;   /* 0 empty, else (hash >> 32) << 32 | (index + 1); byte
                          arrays: two words a slot, the second len << 32 | offset */
    uint32_t *offs;    /* byte arrays: offset of entry i's length prefix in vals */
    uint32_t offs_cap;
    struct fr_buf vals;
    size_t max_bytes;
};

int pq_dict_init(struct pq_dict *dict, int width, size_t max_bytes);
/* Prefetch the first slot pq_dict_put_fixed(bits) / pq_dict_put_bytes(hash)
 * would probe (nothing while the dictionary has no slots). */
void pq_dict_prefetch_fixed(const struct pq_dict *dict, uint64_t bits);
void pq_dict_prefetch_bytes(const struct pq_dict *dict, uint64_t hash);
void pq_dict_free(struct pq_dict *dict);
void pq_dict_clear(struct pq_dict *dict);
/* Bytes allocated for dict: slots, offsets and values. */
size_t pq_dict_mem(const struct pq_dict *dict);
/* Index of a value, inserting it if new. Returns 0 (found), 1 (inserted),
 * FR_ETOOBIG (the dictionary is full; nothing inserted), FR_ENOMEM. */
int pq_dict_put_fixed(struct pq_dict *dict, uint64_t bits, uint32_t *index);
int pq_dict_put_bytes(struct pq_dict *dict, const uint8_t *p, uint32_t len, uint64_t hash,
                      uint32_t *index);
/* Remove the newest entry (hash is the one it was put with). Safe with
 * linear probing: no other entry was placed after it, so no probe chain
 * runs through its slot. */
void pq_dict_pop(struct pq_dict *dict, uint64_t hash);

/* Byte-wise unsigned comparison, shorter first on a common prefix: the
 * order of STRING statistics. */
static inline int pq_str_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int r = n ? memcmp(a, b, n) : 0;
    return r ? r : (alen > blen) - (alen < blen);
}

/* String statistics bounds for [lo, hi] limited to about max bytes: lo is
 * cut to a prefix on a UTF-8 boundary; hi is cut and its last code point
 * incremented, so it stays above every string with that prefix (if no code
 * point can grow, hi is kept whole). mem holds lo then hi; free() it. */
struct pq_bound {
    uint8_t *mem;
    size_t lolen, hilen;
    bool lo_exact, hi_exact;
};

int pq_str_bounds(const uint8_t *lo, size_t lolen, const uint8_t *hi, size_t hilen, size_t max,
                  struct pq_bound *out);

/* ------------------------------------------------------------- codec.c */

struct pq_codec; /* reusable compression contexts; one per writer or scan */

int pq_codec_new(struct pq_codec **codec, int zstd_level);
void pq_codec_free(struct pq_codec *codec);
/* How a page's bytes are compressed, besides the codec: PQ_COMP_RANDOM for
 * a column of random-looking values (fr_pq_opts.random_columns). */
enum pq_comp_mode { PQ_COMP_DEFAULT = 0, PQ_COMP_RANDOM };

/* Compress len bytes at src with codec id into dst (replacing its contents). */
int pq_compress(struct pq_codec *codec, int id, enum pq_comp_mode mode, const void *src, size_t len,
                struct fr_buf *dst);
/* Decompress exactly dst_len bytes; FR_ECORRUPT when the output size
 * differs from dst_len or the input is malformed. */
int pq_decompress(struct pq_codec *codec, int id, const void *src, size_t len, void *dst,
                  size_t dst_len);
bool pq_codec_known(int id);

struct pq_page;
/* Compress a page body with codec id (scratch output in comp), then append
 * the PageHeader (sizes filled in) and the compressed bytes to dst; add
 * header + uncompressed body bytes to *uncomp. On error dst is unchanged. */
int pq_emit_page(struct pq_codec *codec, int id, enum pq_comp_mode mode, struct fr_buf *comp,
                 struct pq_page *pg, const uint8_t *body, size_t len, struct fr_buf *dst,
                 uint64_t *uncomp);

/* ------------------------------------------------------------ footer.c */

struct pq_bytes {
    const uint8_t *ptr;
    uint32_t len;
};

enum {
    PQ_ST_MIN_VALUE = 1 << 0,
    PQ_ST_MAX_VALUE = 1 << 1,
    PQ_ST_MIN = 1 << 2, /* deprecated signed min / max */
    PQ_ST_MAX = 1 << 3,
    PQ_ST_NULL_COUNT = 1 << 4,
    PQ_ST_MIN_EXACT = 1 << 5, /* is_min_value_exact present */
    PQ_ST_MAX_EXACT = 1 << 6,
};

struct pq_stats {
    unsigned has;
    struct pq_bytes min_value, max_value, min, max;
    int64_t null_count;
    bool min_exact, max_exact;
};

struct pq_chunk {
    int64_t file_offset;
    int32_t type;
    uint32_t encodings;    /* bit e set when Encoding e (< 32) is listed */
    struct pq_bytes path;  /* the one path element of a flat column */
    uint32_t path_len;     /* elements in path_in_schema */
    int32_t codec;
    int64_t num_values;
    int64_t total_uncompressed;
    int64_t total_compressed;
    int64_t data_page_offset;
    int64_t dict_page_offset; /* valid when has_dict_offset */
    bool has_dict_offset;
    bool has_meta;
    bool has_stats;
    struct pq_stats stats;
};

struct pq_rowgroup {
    struct pq_chunk *chunks;
    uint32_t nchunks;
    int64_t total_byte_size;
    int64_t num_rows;
    int64_t file_offset;
    int64_t total_compressed;
    int16_t ordinal;
};

struct pq_selem {
    struct pq_bytes name;
    int32_t type; /* -1 when absent (groups) */
    int32_t type_length;
    int32_t repetition; /* -1 when absent */
    int32_t num_children;
    int32_t converted; /* -1 when absent */
    int32_t field_id;  /* -1 when absent */
    uint8_t logical;   /* enum pq_logical */
    bool ts_utc;
    uint8_t ts_unit;   /* enum pq_time_unit */
    uint8_t int_bits;
    bool int_signed;
};

struct pq_kv {
    struct pq_bytes key, value;
    bool has_value;
};

struct pq_meta {
    int32_t version;
    struct pq_selem *schema; /* element 0 is the root */
    uint32_t nschema;
    int64_t num_rows;
    struct pq_rowgroup *rgs;
    uint32_t nrgs;
    struct pq_kv *kv;
    uint32_t nkv;
    struct pq_bytes created_by;
    bool has_created_by;
    uint32_t ncolumn_orders; /* 0 when absent */
    uint8_t *column_orders;  /* 1 = TYPE_ORDER, 0 = other */
};

/* Serialise meta as FileMetaData into out. Root and leaves are written as
 * the writer needs them: every required field, LogicalType and the
 * matching ConvertedType, field_id, statistics, column_orders. */
int pq_meta_encode(const struct pq_meta *meta, struct fr_buf *out);
/* Parse FileMetaData. Byte fields point into [p, p + len), which must
 * outlive meta. Allocation is bounded by len. */
int pq_meta_decode(const uint8_t *p, size_t len, struct pq_meta *meta);
/* Release what pq_meta_decode allocated. Accepts NULL. */
void pq_meta_free(struct pq_meta *meta);

struct pq_page {
    int32_t type;
    int32_t uncompressed_size;
    int32_t compressed_size;
    bool has_crc;
    int32_t crc;
    bool has_data, has_dict, has_v2;
    int32_t num_values;
    int32_t encoding;
    int32_t def_encoding, rep_encoding; /* v1 */
    int32_t num_nulls, num_rows;        /* v2 */
    int32_t def_len, rep_len;           /* v2 */
    bool is_compressed;                 /* v2, default true */
};

/* Largest header pq_page_encode writes. */
#define PQ_PAGE_HEADER_MAX 64

/* Append a PageHeader for a v1 data page or a dictionary page. */
int pq_page_encode(const struct pq_page *page, struct fr_buf *out);
/* Parse a PageHeader at p; *used is its length. FR_ETRUNC when more bytes
 * are needed. */
int pq_page_decode(const uint8_t *p, size_t len, struct pq_page *page, size_t *used);

/* ------------------------------------------------------------ schema.c */

/* Check writer options: FR_OK or FR_EINVAL with the reason in the message. */
int pq_opts_check(const struct fr_pq_opts *opts);

/* -------------------------------------------------------------- pool.c */

/* The writer's optional background compression thread: pages are queued
 * (at most PQ_POOL_JOBS in flight) and compressed and appended, in order, to
 * their column's chunk buffer on the worker. */
#define PQ_POOL_JOBS 4

struct pq_pool;

int pq_pool_new(struct pq_pool **pool, int codec_id, int zstd_level, size_t body_cap,
                size_t comp_cap);
/* Finish the queued jobs, stop and join the worker, release. Accepts NULL. */
void pq_pool_free(struct pq_pool *pool);
/* The body buffer of a free job, emptied (waits while every job is queued).
 * The first error of the worker, if any, is returned instead. */
int pq_pool_acquire(struct pq_pool *pool, struct fr_buf **body);
/* Queue the job acquired last: the worker runs pq_emit_page(mode, pg, body,
 * dst, uncomp). dst and uncomp belong to the worker until pq_pool_drain. */
void pq_pool_submit(struct pq_pool *pool, enum pq_comp_mode mode, const struct pq_page *pg,
                    struct fr_buf *dst, uint64_t *uncomp);
/* pq_pool_submit for the job acquired last, compressing len bytes at src
 * (which the caller leaves untouched until pq_pool_drain) instead of the
 * job's body: a chunk's dictionary page, without copying it. */
void pq_pool_submit_src(struct pq_pool *pool, const struct pq_page *pg, const uint8_t *src,
                        size_t len, struct fr_buf *dst, uint64_t *uncomp);
/* Wait until every queued job is done; FR_OK or the worker's first error. */
int pq_pool_drain(struct pq_pool *pool);
/* Compressed bytes appended by the worker since the pool began. */
size_t pq_pool_appended(const struct pq_pool *pool);
/* Bytes the pool holds. */
size_t pq_pool_mem(const struct pq_pool *pool);

/* ------------------------------------------------------------ writer.c */

struct fr_pq_writer;
/* Bytes the writer holds right now (buffers, dictionaries, arrays, footer
 * records): what the memory-bound tests watch. */
size_t pq_writer_mem(const struct fr_pq_writer *writer);

/* ------------------------------------------------------------ column.c */

/* A chained arena for the string bytes of one batch: pointers stay valid
 * until pq_arena_reset. At most cap bytes in use. */
struct pq_arena_block;
struct pq_arena {
    struct pq_arena_block *head;
    size_t used;
    size_t cap;
};

void pq_arena_init(struct pq_arena *arena, size_t cap);
void *pq_arena_alloc(struct pq_arena *arena, size_t len);
void pq_arena_reset(struct pq_arena *arena);
void pq_arena_free(struct pq_arena *arena);

/* What a column cursor must know about its column. */
struct pq_colspec {
    const char *name;
    enum fr_pq_type type;
    uint8_t phys;
    bool optional;
    int32_t ts_scale; /* 0, or 1000 (MILLIS -> MICROS), or -1000 (NANOS -> MICROS) */
};

struct pq_rcol;

int pq_rcol_new(const struct pq_colspec *spec, const struct fr_pq_read_opts *opts,
                struct pq_rcol **rcol);
void pq_rcol_free(struct pq_rcol *rcol);
/* Start on a column chunk: bytes [start, start + len) of in hold rows values. */
void pq_rcol_begin(struct pq_rcol *rcol, const struct fr_pq_in *in, struct pq_codec *codec,
                   int codec_id, uint64_t start, uint64_t len, uint64_t rows);
/* Decode the next n rows (n <= opts.batch_rows) into the cursor's arrays and
 * point vec at them; string bytes go to arena (or stay in the dictionary). */
int pq_rcol_read(struct pq_rcol *rcol, uint32_t n, struct pq_arena *arena, struct fr_pq_vec *vec);

/* Scale a timestamp to microseconds; false on overflow. */
static inline bool pq_ts_scale(int32_t scale, int64_t *v)
{
    if (scale > 0) {
        return !__builtin_mul_overflow(*v, (int64_t)scale, v);
    }
    if (scale < 0) {
        int64_t d = -(int64_t)scale;
        int64_t q = *v / d;
        *v = (*v % d < 0) ? q - 1 : q; /* floor */
    }
    return true;
}

#endif
