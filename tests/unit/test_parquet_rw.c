/*
 * test_parquet_rw.c — the writer against freshet's own reader: every type,
 * REQUIRED and OPTIONAL, NULLs, extremes, long strings, dictionary
 * fallback, many row groups, projection, predicates, key/value metadata,
 * file statistics; the per-value and batch APIs' error contracts (wrong
 * type, UTF-8 naming column and row, too-long values, incomplete rows); the
 * output contract (a failed or abandoned write leaves no file; ENOSPC from
 * the output is reported); hostile files (every truncation, random damage);
 * memory bounded across many row groups; the encodings only other writers
 * use (DELTA_*, BYTE_STREAM_SPLIT, RLE booleans, v2 pages) from hand-built
 * bytes; and a model-based round trip of random schemas and data over many
 * seeds.
 *
 * The interop tests (tests/interop) check the same files against
 * independent readers; here freshet's reader is only a convenient oracle.
 */
#include "check.h"

#include "core/bgsync.h"
#include "parquet/parquet.h"
#include "parquet/parquet_int.h"

#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>

/* Writer internals for the memory test. */
size_t pq_writer_mem(const struct fr_pq_writer *w);

static uint64_t rng_state;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* ------------------------------------------------- memory output + faults */

struct mem_out {
    struct fr_buf buf;
    int fail_at;   /* write call number that fails (1-based), 0 never */
    int writes;
    int closed, aborted;
};

static int mem_write(void *ctx, const void *data, size_t len)
{
    struct mem_out *m = ctx;
    if (++m->writes == m->fail_at) {
        return FR_ENOSPC;
    }
    return fr_buf_append(&m->buf, data, len);
}

static int mem_close(void *ctx)
{
    ((struct mem_out *)ctx)->closed++;
    return FR_OK;
}

static void mem_abort(void *ctx)
{
    ((struct mem_out *)ctx)->aborted++;
}

static const struct fr_pq_out_ops mem_ops = {mem_write, mem_close, mem_abort};

static void mem_init(struct mem_out *m)
{
    memset(m, 0, sizeof *m);
    fr_buf_init(&m->buf, (size_t)1 << 30);
}

static struct fr_pq_out mem_out(struct mem_out *m)
{
    return (struct fr_pq_out){&mem_ops, m};
}

static struct fr_pq_reader *open_mem(const struct mem_out *m, const struct fr_pq_read_opts *o)
{
    struct fr_pq_in in;
    struct fr_pq_reader *r = NULL;
    if (fr_pq_in_mem(m->buf.data, m->buf.len, &in) != FR_OK) {
        return NULL;
    }
    int rc = fr_pq_reader_open(&in, o, &r);
    if (rc != FR_OK) {
        fprintf(stderr, "open: %s: %s\n", fr_err_name(rc), fr_pq_errmsg());
    }
    return r;
}

/* --------------------------------------------------------- a fixed table */

enum { C_B, C_I32, C_I64, C_F64, C_S, C_D, C_TS, C_OB, C_OI32, C_OI64, C_OF64, C_OS, C_OD, C_OTS,
       NCOLS };

static const struct fr_pq_column all_cols[NCOLS] = {
    {"b", FR_PQ_BOOL, false, 1},          {"i32", FR_PQ_INT32, false, 2},
    {"i64", FR_PQ_INT64, false, 3},       {"f64", FR_PQ_DOUBLE, false, 4},
    {"s", FR_PQ_STRING, false, 5},        {"d", FR_PQ_DATE, false, 6},
    {"ts", FR_PQ_TIMESTAMP, false, 7},    {"ob", FR_PQ_BOOL, true, 11},
    {"oi32", FR_PQ_INT32, true, 12},      {"oi64", FR_PQ_INT64, true, 13},
    {"of64", FR_PQ_DOUBLE, true, 14},     {"os", FR_PQ_STRING, true, 15},
    {"od", FR_PQ_DATE, true, 16},         {"ots", FR_PQ_TIMESTAMP_NTZ, true, 17},
};

static const int32_t i32_special[] = {INT32_MIN, INT32_MAX, 0, -1, 1};
static const int64_t i64_special[] = {INT64_MIN, INT64_MAX, 0, -1, 1};
static const char *const str_special[] = {"", "plain", "\xc3\xa9t\xc3\xa9",
                                          "\xf0\x9f\x98\x80\xf0\x9f\x8e\x89",
                                          "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"};

/* Deterministic value generators for row r. */
static bool g_null(uint64_t r, int c) { return (r * 7 + (uint64_t)c * 3) % 5 == 0; }
static bool g_b(uint64_t r) { return (r % 3) == 1; }
static int32_t g_i32(uint64_t r) { return r < 5 ? i32_special[r] : (int32_t)(r * 2654435761u); }
static int64_t g_i64(uint64_t r)
{
    return r < 5 ? i64_special[r] : (int64_t)(r * 0x9e3779b97f4a7c15ull);
}
static double g_f64(uint64_t r)
{
    static const double sp[] = {-0.0, 0.0, INFINITY, -INFINITY, 1e308, -1e-308};
    return r < 6 ? sp[r] : (double)r / 7.0 - 1000.0;
}
static int g_str(uint64_t r, char *buf, size_t cap)
{
    if (r < 5) {
        return snprintf(buf, cap, "%s", str_special[r]);
    }
    return snprintf(buf, cap, "value-%llu-%s", (unsigned long long)(r % 97),
                    r % 2 ? "\xce\xb1\xce\xb2" : "x");
}

static int write_row(struct fr_pq_writer *w, uint64_t r)
{
    char s[64];
    int n = g_str(r, s, sizeof s);
    int rc = 0;
    rc |= fr_pq_write_bool(w, C_B, g_b(r));
    rc |= fr_pq_write_int32(w, C_I32, g_i32(r));
    rc |= fr_pq_write_int64(w, C_I64, g_i64(r));
    rc |= fr_pq_write_double(w, C_F64, g_f64(r));
    rc |= fr_pq_write_str(w, C_S, s, (size_t)n);
    rc |= fr_pq_write_int32(w, C_D, (int32_t)(r % 40000) - 20000);
    rc |= fr_pq_write_int64(w, C_TS, g_i64(r) / 4);
    rc |= g_null(r, C_OB) ? fr_pq_write_null(w, C_OB) : fr_pq_write_bool(w, C_OB, g_b(r + 1));
    rc |= g_null(r, C_OI32) ? fr_pq_write_null(w, C_OI32) : fr_pq_write_int32(w, C_OI32, g_i32(r));
    rc |= g_null(r, C_OI64) ? fr_pq_write_null(w, C_OI64) : fr_pq_write_int64(w, C_OI64, g_i64(r));
    rc |= g_null(r, C_OF64) ? fr_pq_write_null(w, C_OF64)
                            : fr_pq_write_double(w, C_OF64, g_f64(r));
    rc |= g_null(r, C_OS) ? fr_pq_write_null(w, C_OS) : fr_pq_write_str(w, C_OS, s, (size_t)n);
    rc |= g_null(r, C_OD) ? fr_pq_write_null(w, C_OD) : fr_pq_write_int32(w, C_OD, (int32_t)r);
    rc |= g_null(r, C_OTS) ? fr_pq_write_null(w, C_OTS) : fr_pq_write_int64(w, C_OTS, -(int64_t)r);
    rc |= fr_pq_row_end(w);
    return rc;
}

static bool same_f64(double a, double b)
{
    return memcmp(&a, &b, 8) == 0;
}

/* Check every value of every row against the generators. */
static uint64_t check_table(struct fr_pq_reader *r, const struct fr_pq_scan_opts *so)
{
    struct fr_pq_scan *s;
    uint64_t rows = 0;
    int bad = 0;
    CHECK_EQ_INT(fr_pq_scan_open(r, so, &s), FR_OK);
    const struct fr_pq_batch *b;
    int rc;
    while ((rc = fr_pq_scan_next(s, &b)) == FR_OK) {
        for (uint32_t i = 0; i < b->nrows && bad < 5; i++) {
            uint64_t row = b->first_row + i;
            char str[64];
            int n = g_str(row, str, sizeof str);
            for (uint32_t k = 0; k < b->ncols; k++) {
                const struct fr_pq_vec *v = &b->cols[k];
                int c = (int)v->column;
                bool isnull = all_cols[c].optional && g_null(row, c);
                bool ok = (v->nulls[i] != 0) == isnull;
                if (ok && !isnull) {
                    switch (c) {
                    case C_B: ok = v->v.b[i] == g_b(row); break;
                    case C_OB: ok = v->v.b[i] == g_b(row + 1); break;
                    case C_I32: case C_OI32: ok = v->v.i32[i] == g_i32(row); break;
                    case C_I64: case C_OI64: ok = v->v.i64[i] == g_i64(row); break;
                    case C_F64: case C_OF64: ok = same_f64(v->v.f64[i], g_f64(row)); break;
                    case C_S: case C_OS:
                        ok = v->v.str[i].len == (uint32_t)n &&
                             memcmp(v->v.str[i].ptr, str, (size_t)n) == 0;
                        break;
                    case C_D: ok = v->v.i32[i] == (int32_t)(row % 40000) - 20000; break;
                    case C_OD: ok = v->v.i32[i] == (int32_t)row; break;
                    case C_TS: ok = v->v.i64[i] == g_i64(row) / 4; break;
                    case C_OTS: ok = v->v.i64[i] == -(int64_t)row; break;
                    default: ok = false;
                    }
                }
                if (!ok) {
                    fprintf(stderr, "row %llu column %s differs\n", (unsigned long long)row,
                            all_cols[c].name);
                    bad++;
                }
            }
        }
        rows += b->nrows;
    }
    CHECK_EQ_INT(rc, FR_EEOF);
    CHECK_EQ_INT(bad, 0);
    fr_pq_scan_free(s);
    return rows;
}

static void write_table(struct mem_out *m, const struct fr_pq_opts *o, uint64_t rows,
                        struct fr_pq_file_stats *st)
{
    struct fr_pq_schema schema = {all_cols, NCOLS};
    struct fr_pq_writer *w;
    struct fr_pq_out out = mem_out(m);
    CHECK_EQ_INT(fr_pq_writer_open(&schema, o, &out, &w), FR_OK);
    for (uint64_t r = 0; r < rows; r++) {
        if (write_row(w, r) != 0) {
            fprintf(stderr, "write row %llu: %s\n", (unsigned long long)r, fr_pq_errmsg());
            CHECK(0);
            break;
        }
    }
    CHECK_EQ_INT(fr_pq_writer_close(w, st), FR_OK);
    fr_pq_writer_free(w);
    CHECK_EQ_INT(m->closed, 1);
    CHECK_EQ_INT(m->aborted, 0);
}

/* ------------------------------------------------------------------ tests */

static void test_round_trip_codecs(void)
{
    static const enum fr_pq_codec codecs[] = {FR_PQ_UNCOMPRESSED, FR_PQ_SNAPPY, FR_PQ_ZSTD};
    for (int k = 0; k < 8; k++) {
        struct fr_pq_opts o;
        fr_pq_opts_default(&o);
        o.codec = codecs[k % 3];
        o.compress_workers = k % 6 >= 3; /* the same file through the compression thread */
        if (k >= 6) { /* zstd, every column's PLAIN pages as random values (ADR 0034) */
            o.codec = FR_PQ_ZSTD;
            o.random_columns = ~(uint64_t)0;
            o.compress_workers = k == 7;
        }
        o.page_rows = 1000; /* several pages per chunk */
        struct mem_out m;
        mem_init(&m);
        struct fr_pq_file_stats st;
        write_table(&m, &o, 5000, &st);
        CHECK_EQ_INT(st.rows, 5000);
        CHECK_EQ_INT(st.file_bytes, m.buf.len);
        CHECK_EQ_INT(st.nrow_groups, 1);
        struct fr_pq_read_opts ro;
        fr_pq_read_opts_default(&ro);
        ro.batch_rows = 333; /* batches that straddle pages */
        struct fr_pq_reader *r = open_mem(&m, &ro);
        CHECK(r != NULL);
        if (r) {
            CHECK_EQ_INT(fr_pq_reader_rows(r), 5000);
            CHECK_EQ_INT(check_table(r, NULL), 5000);
            const struct fr_pq_schema *sc = fr_pq_reader_schema(r);
            CHECK_EQ_INT(sc->ncolumns, NCOLS);
            for (int c = 0; c < NCOLS; c++) {
                CHECK_EQ_STR(sc->columns[c].name, all_cols[c].name);
                CHECK_EQ_INT(sc->columns[c].type, all_cols[c].type);
                CHECK_EQ_INT(sc->columns[c].optional, all_cols[c].optional);
                CHECK_EQ_INT(sc->columns[c].field_id, all_cols[c].field_id);
            }
            CHECK(strncmp(fr_pq_reader_created_by(r), "freshet version ", 16) == 0);
            struct fr_pq_chunk_info ci;
            CHECK_EQ_INT(fr_pq_reader_chunk(r, 0, C_I32, &ci), FR_OK);
            CHECK_EQ_INT(ci.codec, o.codec);
            CHECK(ci.has_bounds && ci.min.v.i32 == INT32_MIN && ci.max.v.i32 == INT32_MAX);
        }
        fr_pq_reader_free(r);
        /* File statistics: exact null counts, bounds, -0.0 / +0.0 rule. */
        uint64_t nulls = 0;
        for (uint64_t row = 0; row < 5000; row++) {
            nulls += g_null(row, C_OS);
        }
        CHECK_EQ_INT(st.cols[C_OS].null_count, nulls);
        CHECK_EQ_INT(st.cols[C_OS].value_count, 5000);
        CHECK_EQ_INT(st.cols[C_S].null_count, 0);
        CHECK(st.cols[C_S].has_bounds && st.cols[C_S].min.v.str.len == 0);
        CHECK(st.cols[C_I64].min.v.i64 == INT64_MIN && st.cols[C_I64].max.v.i64 == INT64_MAX);
        CHECK(st.cols[C_F64].min.v.f64 == -INFINITY && st.cols[C_F64].max.v.f64 == INFINITY);
        CHECK(st.cols[C_B].min.v.b == false && st.cols[C_B].max.v.b == true);
        CHECK(st.cols[C_S].compressed_bytes > 0);
        CHECK_EQ_INT(st.row_group_offsets[0], 4);
        fr_pq_file_stats_free(&st);
        fr_buf_free(&m.buf);
    }
}

static void test_many_row_groups_projection_predicates(void)
{
    struct fr_pq_opts o;
    fr_pq_opts_default(&o);
    o.compress_workers = 1;
    o.row_group_bytes = 64 * 1024;
    o.page_bytes = 8 * 1024;
    struct mem_out m;
    mem_init(&m);
    struct fr_pq_file_stats st;
    write_table(&m, &o, 60000, &st);
    CHECK(st.nrow_groups > 10);
    struct fr_pq_reader *r = open_mem(&m, NULL);
    CHECK(r != NULL);
    if (!r) {
        return;
    }
    CHECK_EQ_INT(fr_pq_reader_row_groups(r), st.nrow_groups);
    CHECK_EQ_INT(check_table(r, NULL), 60000);
    /* Projection in a different order, with a duplicate. */
    uint32_t proj[] = {C_OS, C_I64, C_OS, C_B};
    struct fr_pq_scan_opts so = {.columns = proj, .ncolumns = 4};
    CHECK_EQ_INT(check_table(r, &so), 60000);
    /* Predicates: C_OD holds the row number, so a range keeps few groups. */
    struct fr_pq_pred pred = {.column = C_OD,
                              .has_min = true,
                              .has_max = true,
                              .min = {.type = FR_PQ_DATE, .v.i32 = 30000},
                              .max = {.type = FR_PQ_DATE, .v.i32 = 30010}};
    so = (struct fr_pq_scan_opts){.columns = proj, .ncolumns = 4, .preds = &pred, .npreds = 1};
    struct fr_pq_scan *s;
    CHECK_EQ_INT(fr_pq_scan_open(r, &so, &s), FR_OK);
    const struct fr_pq_batch *b;
    uint64_t rows = 0;
    bool seen = false;
    while (fr_pq_scan_next(s, &b) == FR_OK) {
        rows += b->nrows;
        seen |= b->first_row <= 30005 && b->first_row + b->nrows > 30005;
    }
    CHECK(seen);
    CHECK(rows < 60000 / 4);
    CHECK_EQ_INT(fr_pq_scan_skipped(s) + 1 + (rows > 0 ? 0 : 0),
                 fr_pq_scan_skipped(s) + 1); /* counted */
    CHECK(fr_pq_scan_skipped(s) >= st.nrow_groups - 2);
    fr_pq_scan_free(s);
    /* A predicate nothing can meet skips everything. */
    pred.min.v.i32 = 1000000;
    pred.max.v.i32 = 2000000;
    CHECK_EQ_INT(fr_pq_scan_open(r, &so, &s), FR_OK);
    CHECK_EQ_INT(fr_pq_scan_next(s, &b), FR_EEOF);
    CHECK_EQ_INT(fr_pq_scan_skipped(s), st.nrow_groups);
    fr_pq_scan_free(s);
    /* String predicate on a required column: the special strings sort first. */
    struct fr_pq_pred sp = {.column = C_S,
                            .has_max = true,
                            .max = {.type = FR_PQ_STRING, .v.str = {"", 0}}};
    CHECK(fr_pq_row_group_may_match(r, 0, &sp, 1));
    CHECK(!fr_pq_row_group_may_match(r, 1, &sp, 1));
    /* Type mismatch in a predicate is refused. */
    pred.min.type = FR_PQ_STRING;
    CHECK_EQ_INT(fr_pq_scan_open(r, &so, &s), FR_EINVAL);
    fr_pq_reader_free(r);
    fr_pq_file_stats_free(&st);
    fr_buf_free(&m.buf);
}

static void test_batch_api(void)
{
    /* Write the same table through batches; it must read back the same. */
    struct fr_pq_schema schema = {all_cols, NCOLS};
    struct mem_out m;
    mem_init(&m);
    struct fr_pq_out out = mem_out(&m);
    struct fr_pq_opts o;
    fr_pq_opts_default(&o);
    o.codec = FR_PQ_SNAPPY;
    o.page_rows = 700;
    o.compress_workers = 1;
    struct fr_pq_writer *w;
    CHECK_EQ_INT(fr_pq_writer_open(&schema, &o, &out, &w), FR_OK);
    enum { N = 3000 };
    static uint8_t nulls[NCOLS][N], bools[2][N];
    static int32_t i32[3][N];
    static int64_t i64[3][N];
    static double f64[N];
    static struct fr_pq_str strs[N];
    static char strmem[N][64];
    for (uint64_t r = 0; r < N; r++) {
        for (int c = 0; c < NCOLS; c++) {
            nulls[c][r] = all_cols[c].optional && g_null(r, c);
        }
        bools[0][r] = g_b(r);
        bools[1][r] = g_b(r + 1);
        i32[0][r] = g_i32(r);
        i32[1][r] = (int32_t)(r % 40000) - 20000;
        i32[2][r] = (int32_t)r;
        i64[0][r] = g_i64(r);
        i64[1][r] = g_i64(r) / 4;
        i64[2][r] = -(int64_t)r;
        f64[r] = g_f64(r);
        int n = g_str(r, strmem[r], 64);
        strs[r] = (struct fr_pq_str){strmem[r], (uint32_t)n};
    }
    struct fr_pq_vec v[NCOLS];
    for (int c = 0; c < NCOLS; c++) {
        v[c] = (struct fr_pq_vec){.column = (uint32_t)c, .type = all_cols[c].type,
                                  .nulls = all_cols[c].optional ? nulls[c] : NULL};
    }
    v[C_B].v.b = bools[0];
    v[C_OB].v.b = bools[1];
    v[C_I32].v.i32 = v[C_OI32].v.i32 = i32[0];
    v[C_D].v.i32 = i32[1];
    v[C_OD].v.i32 = i32[2];
    v[C_I64].v.i64 = v[C_OI64].v.i64 = i64[0];
    v[C_TS].v.i64 = i64[1];
    v[C_OTS].v.i64 = i64[2];
    v[C_F64].v.f64 = v[C_OF64].v.f64 = f64;
    v[C_S].v.str = v[C_OS].v.str = strs;
    /* Two halves, and a bad batch in between that must change nothing. */
    struct fr_pq_batch b1 = {.nrows = 1700, .ncols = NCOLS, .cols = v};
    CHECK_EQ_INT(fr_pq_write_batch(w, &b1), FR_OK);
    struct fr_pq_vec bad[NCOLS];
    memcpy(bad, v, sizeof bad);
    struct fr_pq_str badstr[N];
    memcpy(badstr, strs, sizeof badstr);
    badstr[1700 + 10] = (struct fr_pq_str){"ok\xff", 3};
    bad[C_S].v.str = badstr + 1700;
    for (int c = 0; c < NCOLS; c++) {
        bad[c].v.b = (const uint8_t *)bad[c].v.b;
    }
    struct fr_pq_vec shifted[NCOLS];
    for (int c = 0; c < NCOLS; c++) {
        shifted[c] = v[c];
        size_t es = c == C_B || c == C_OB ? 1
                    : (c == C_I32 || c == C_OI32 || c == C_D || c == C_OD) ? 4
                    : (c == C_S || c == C_OS) ? sizeof(struct fr_pq_str)
                                              : 8;
        shifted[c].v.b = v[c].v.b + 1700 * es;
        if (shifted[c].nulls) {
            shifted[c].nulls += 1700;
        }
    }
    struct fr_pq_vec shifted_bad[NCOLS];
    memcpy(shifted_bad, shifted, sizeof shifted_bad);
    shifted_bad[C_S].v.str = badstr + 1700;
    struct fr_pq_batch bb = {.nrows = N - 1700, .ncols = NCOLS, .cols = shifted_bad};
    CHECK_EQ_INT(fr_pq_write_batch(w, &bb), FR_EUTF8);
    CHECK(strstr(fr_pq_errmsg(), "column 's'") && strstr(fr_pq_errmsg(), "row 1710"));
    CHECK_EQ_INT(fr_pq_writer_rows(w), 1700);
    struct fr_pq_batch b2 = {.nrows = N - 1700, .ncols = NCOLS, .cols = shifted};
    CHECK_EQ_INT(fr_pq_write_batch(w, &b2), FR_OK);
    CHECK_EQ_INT(fr_pq_writer_close(w, NULL), FR_OK);
    fr_pq_writer_free(w);
    struct fr_pq_reader *r = open_mem(&m, NULL);
    CHECK(r != NULL);
    if (r) {
        CHECK_EQ_INT(check_table(r, NULL), N);
    }
    fr_pq_reader_free(r);
    fr_buf_free(&m.buf);
}

/* A batch whose NULL rows have no value slots at all: an OPTIONAL string
 * column given only its flags (as compaction gives a column that an older
 * file lacks). The writer must not read a value of a NULL row; under ASan
 * a read past the 1-byte-per-row flags fails this test. */
static void test_batch_nulls_without_values(void)
{
    static const struct fr_pq_column cols[] = {{"id", FR_PQ_INT64, false, 1},
                                               {"added", FR_PQ_STRING, true, 2}};
    struct fr_pq_schema schema = {cols, 2};
    enum { N = 3000 };
    int64_t *ids = malloc(N * sizeof *ids);
    uint8_t *flags = malloc(N);
    for (int i = 0; i < N; i++) {
        ids[i] = i;
    }
    memset(flags, 1, N);
    struct mem_out m;
    mem_init(&m);
    struct fr_pq_out out = mem_out(&m);
    struct fr_pq_opts o;
    fr_pq_opts_default(&o);
    o.page_bytes = 4096; /* several slices and pages */
    struct fr_pq_writer *w;
    CHECK_EQ_INT(fr_pq_writer_open(&schema, &o, &out, &w), FR_OK);
    struct fr_pq_vec v[2] = {{.column = 0, .type = FR_PQ_INT64, .v.i64 = ids},
                             {.column = 1, .type = FR_PQ_STRING, .nulls = flags, .v.b = flags}};
    struct fr_pq_batch b = {0, 0, N, 2, v};
    CHECK_EQ_INT(fr_pq_write_batch(w, &b), FR_OK);
    struct fr_pq_file_stats st;
    CHECK_EQ_INT(fr_pq_writer_close(w, &st), FR_OK);
    fr_pq_writer_free(w);
    CHECK_EQ_INT(st.rows, N);
    CHECK_EQ_INT(st.cols[1].null_count, N);
    CHECK(!st.cols[1].has_bounds);
    fr_pq_file_stats_free(&st);
    fr_buf_free(&m.buf);
    free(ids);
    free(flags);
}

static void test_value_errors(void)
{
    static const struct fr_pq_column cols[] = {
        {"title", FR_PQ_STRING, false, 1},
        {"n", FR_PQ_INT64, true, 2},
    };
    struct fr_pq_schema schema = {cols, 2};
    struct mem_out m;
    mem_init(&m);
    struct fr_pq_out out = mem_out(&m);
    struct fr_pq_opts o;
    fr_pq_opts_default(&o);
    o.max_value_bytes = 100;
    struct fr_pq_writer *w;
    CHECK_EQ_INT(fr_pq_writer_open(&schema, &o, &out, &w), FR_OK);
    CHECK_EQ_INT(fr_pq_write_str(w, 0, "a", 1), FR_OK);
    CHECK_EQ_INT(fr_pq_write_int64(w, 1, 1), FR_OK);
    CHECK_EQ_INT(fr_pq_row_end(w), FR_OK);
    /* Row 1: a bad string, then a good one; the row completes. */
    CHECK_EQ_INT(fr_pq_write_str(w, 0, "bad\xc3", 4), FR_EUTF8);
    CHECK(strstr(fr_pq_errmsg(), "column 'title', row 1") != NULL);
    CHECK_EQ_INT(fr_pq_write_str(w, 0, "b\xc3\xa9", 3), FR_OK);
    CHECK_EQ_INT(fr_pq_write_str(w, 0, "again", 5), FR_ESTATE);
    CHECK_EQ_INT(fr_pq_write_int32(w, 1, 5), FR_EINVAL);
    CHECK_EQ_INT(fr_pq_write_int64(w, 2, 5), FR_EINVAL);
    CHECK_EQ_INT(fr_pq_row_end(w), FR_ESTATE);
    CHECK(strstr(fr_pq_errmsg(), "'n'") != NULL);
    CHECK_EQ_INT(fr_pq_write_null(w, 1), FR_OK);
    CHECK_EQ_INT(fr_pq_row_end(w), FR_OK);
    /* Row 2: NULL in a required column, a too-long value. */
    CHECK_EQ_INT(fr_pq_write_null(w, 0), FR_EINVAL);
    char big[101];
    memset(big, 'x', sizeof big);
    CHECK_EQ_INT(fr_pq_write_str(w, 0, big, 101), FR_ETOOBIG);
    CHECK_EQ_INT(fr_pq_write_str(w, 0, big, 100), FR_OK);
    CHECK_EQ_INT(fr_pq_write_int64(w, 1, -7), FR_OK);
    CHECK_EQ_INT(fr_pq_row_end(w), FR_OK);
    /* Row 3 left incomplete: close refuses and aborts. */
    CHECK_EQ_INT(fr_pq_write_str(w, 0, "", 0), FR_OK);
    CHECK_EQ_INT(fr_pq_writer_close(w, NULL), FR_ESTATE);
    fr_pq_writer_free(w);
    CHECK_EQ_INT(m.aborted, 1);
    CHECK_EQ_INT(m.closed, 0);
    fr_buf_free(&m.buf);

    /* A bad schema is refused and the output aborted. */
    static const struct fr_pq_column dup[] = {{"a", FR_PQ_INT32, false, 1},
                                              {"a", FR_PQ_INT32, false, 2}};
    struct fr_pq_schema ds = {dup, 2};
    mem_init(&m);
    out = mem_out(&m);
    CHECK_EQ_INT(fr_pq_writer_open(&ds, NULL, &out, &w), FR_EINVAL);
    CHECK(w == NULL && m.aborted == 1);
    static const struct fr_pq_column badname[] = {{"9lives", FR_PQ_INT32, false, 1}};
    struct fr_pq_schema bs = {badname, 1};
    CHECK_EQ_INT(fr_pq_schema_check(&bs), FR_EINVAL);
    struct fr_pq_opts bad_o;
    fr_pq_opts_default(&bad_o);
    bad_o.compress_workers = 2;
    out = mem_out(&m);
    CHECK_EQ_INT(fr_pq_writer_open(&schema, &bad_o, &out, &w), FR_EINVAL);
    bad_o.compress_workers = 0;
    bad_o.stats_max_bytes = 4;
    out = mem_out(&m);
    CHECK_EQ_INT(fr_pq_writer_open(&schema, &bad_o, &out, &w), FR_EINVAL);
    fr_buf_free(&m.buf);
}

/* String min/max against a plain memcmp order computed here, over values
 * built to sit on the writer's 8-byte-prefix shortcut: shared 8-byte
 * prefixes, prefixes of each other, NUL bytes, the empty string; with the
 * dictionary (repeating values) and without (a plain column). */
static int lex_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    return c ? c : (alen > blen) - (alen < blen);
}

static void test_string_bounds_order(void)
{
    static const struct fr_pq_column cols[] = {
        {"d", FR_PQ_STRING, false, 1},
        {"p", FR_PQ_STRING, false, 2},
    };
    struct fr_pq_schema schema = {cols, 2};
    static const char alphabet[] = {'\0', 'a', 'b', '~'};
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (int round = 0; round < 40; round++) {
        struct mem_out m;
        mem_init(&m);
        struct fr_pq_out out = mem_out(&m);
        struct fr_pq_opts o;
        fr_pq_opts_default(&o);
        o.plain_columns = 2; /* column p */
        struct fr_pq_writer *w;
        CHECK_EQ_INT(fr_pq_writer_open(&schema, &o, &out, &w), FR_OK);
        char v[2][16], lo[2][16], hi[2][16];
        size_t vlen[2], lolen[2] = {0, 0}, hilen[2] = {0, 0};
        for (int r = 0; r < 300; r++) {
            for (int c = 0; c < 2; c++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                /* "aaaaaaa" + a few chosen bytes: most values share 8 bytes */
                vlen[c] = x % 13;
                for (size_t i = 0; i < vlen[c]; i++) {
                    v[c][i] = i < 7 && (x >> 60) ? 'a' : alphabet[(x >> (4 + 2 * i)) & 3];
                }
                if (r == 0 || lex_cmp(v[c], vlen[c], lo[c], lolen[c]) < 0) {
                    memcpy(lo[c], v[c], vlen[c]);
                    lolen[c] = vlen[c];
                }
                if (r == 0 || lex_cmp(v[c], vlen[c], hi[c], hilen[c]) > 0) {
                    memcpy(hi[c], v[c], vlen[c]);
                    hilen[c] = vlen[c];
                }
                CHECK_EQ_INT(fr_pq_write_str(w, (uint32_t)c, v[c], vlen[c]), FR_OK);
            }
            CHECK_EQ_INT(fr_pq_row_end(w), FR_OK);
        }
        struct fr_pq_file_stats st;
        CHECK_EQ_INT(fr_pq_writer_close(w, &st), FR_OK);
        for (int c = 0; c < 2; c++) {
            const struct fr_pq_col_stats *cs = &st.cols[c];
            CHECK(cs->has_bounds && cs->min_exact && cs->max_exact);
            CHECK(cs->min.v.str.len == lolen[c] && memcmp(cs->min.v.str.ptr, lo[c], lolen[c]) == 0);
            CHECK(cs->max.v.str.len == hilen[c] && memcmp(cs->max.v.str.ptr, hi[c], hilen[c]) == 0);
        }
        fr_pq_file_stats_free(&st);
        fr_pq_writer_free(w);
        fr_buf_free(&m.buf);
    }
}

/* A writer into m with 4 KiB pages (so that a few thousand rows make
 * several), otherwise the defaults. */
static struct fr_pq_writer *open_4k_pages(const struct fr_pq_schema *schema, struct mem_out *m)
{
    mem_init(m);
    struct fr_pq_out out = mem_out(m);
    struct fr_pq_opts o;
    fr_pq_opts_default(&o);
    o.page_bytes = 4096;
    struct fr_pq_writer *w = NULL;
    CHECK_EQ_INT(fr_pq_writer_open(schema, &o, &out, &w), FR_OK);
    return w;
}

/* A chunk keeps its dictionary only when the first page shows it saving at
 * least a quarter of the PLAIN bytes. A first page of 512 INT64 values
 * (4 KiB): 384 distinct values cost 3,072 bytes of dictionary and 576 of
 * 9-bit indices, 11 % less than PLAIN (refused); 128 distinct cost 1,024
 * + 448, 64 % less (kept). */
static void test_dictionary_must_save_a_quarter(void)
{
    static const struct fr_pq_column cols[] = {
        {"saves_11pct", FR_PQ_INT64, true, 1},
        {"saves_64pct", FR_PQ_INT64, true, 2},
    };
    struct fr_pq_schema schema = {cols, 2};
    struct mem_out m;
    struct fr_pq_writer *w = open_4k_pages(&schema, &m);
    if (!w) {
        return;
    }
    enum { N = 3000 };
    for (int r = 0; r < N; r++) {
        CHECK_EQ_INT(fr_pq_write_int64(w, 0, 1000000 + r % 384), FR_OK);
        CHECK_EQ_INT(fr_pq_write_int64(w, 1, 2000000 + r % 128), FR_OK);
        CHECK_EQ_INT(fr_pq_row_end(w), FR_OK);
    }
    CHECK_EQ_INT(fr_pq_writer_close(w, NULL), FR_OK);
    fr_pq_writer_free(w);
    struct fr_pq_reader *r = open_mem(&m, NULL);
    CHECK(r != NULL);
    if (!r) {
        return;
    }
    struct fr_pq_chunk_info ci;
    fr_pq_reader_chunk(r, 0, 0, &ci);
    CHECK(!ci.has_dictionary);
    fr_pq_reader_chunk(r, 0, 1, &ci);
    CHECK(ci.has_dictionary);
    struct fr_pq_scan *sc;
    CHECK_EQ_INT(fr_pq_scan_open(r, NULL, &sc), FR_OK);
    const struct fr_pq_batch *b;
    int bad = 0, rows = 0;
    while (fr_pq_scan_next(sc, &b) == FR_OK) {
        for (uint32_t i = 0; i < b->nrows; i++) {
            int row = (int)(b->first_row + i);
            bad += b->cols[0].v.i64[i] != 1000000 + row % 384;
            bad += b->cols[1].v.i64[i] != 2000000 + row % 128;
            rows++;
        }
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(rows, N);
    fr_pq_scan_free(sc);
    fr_pq_reader_free(r);
    fr_buf_free(&m.buf);
}

/* fr_pq_prefetch_* are hints: a file written with them before every value
 * (and with some aimed at no column, or at one of another type) is byte for
 * byte the file written without them. */
static void write_prefetch_case(struct mem_out *m, int hints)
{
    static const struct fr_pq_column cols[] = {
        {"s", FR_PQ_STRING, true, 1},
        {"n", FR_PQ_INT64, true, 2},
    };
    struct fr_pq_schema schema = {cols, 2};
    struct fr_pq_writer *w = open_4k_pages(&schema, m);
    if (!w) {
        return;
    }
    char s[32];
    for (int r = 0; r < 5000; r++) {
        int n = snprintf(s, sizeof s, "v%d", r % 300);
        if (hints) {
            fr_pq_prefetch_str(w, 0, s, (size_t)n);
            fr_pq_prefetch_int64(w, 1, r % 77);
            fr_pq_prefetch_int64(w, 0, r);        /* wrong type */
            fr_pq_prefetch_str(w, 1, s, (size_t)n); /* wrong type */
            fr_pq_prefetch_str(w, 9, s, (size_t)n); /* no such column */
        }
        CHECK_EQ_INT(fr_pq_write_str(w, 0, s, (size_t)n), FR_OK);
        CHECK_EQ_INT(fr_pq_write_int64(w, 1, r % 77), FR_OK);
        CHECK_EQ_INT(fr_pq_row_end(w), FR_OK);
    }
    CHECK_EQ_INT(fr_pq_writer_close(w, NULL), FR_OK);
    fr_pq_writer_free(w);
}

static void test_prefetch_changes_nothing(void)
{
    struct mem_out a, b;
    write_prefetch_case(&a, 0);
    write_prefetch_case(&b, 1);
    CHECK(a.buf.len > 0);
    CHECK_EQ_INT(a.buf.len, b.buf.len);
    CHECK(a.buf.len == b.buf.len && memcmp(a.buf.data, b.buf.data, a.buf.len) == 0);
    fr_buf_free(&a.buf);
    fr_buf_free(&b.buf);
}

static void test_dictionary_fallback_and_long_strings(void)
{
    static const struct fr_pq_column cols[] = {
        {"user", FR_PQ_STRING, true, 1},     /* repeats: stays dictionary */
        {"unique", FR_PQ_STRING, false, 2},  /* all distinct: PLAIN at once */
        {"grows", FR_PQ_STRING, false, 3},   /* repeats, then overflows */
        {"long", FR_PQ_STRING, true, 4},     /* values larger than a page */
        {"n", FR_PQ_INT64, false, 5},
    };
    struct fr_pq_schema schema = {cols, 5};
    struct mem_out m;
    mem_init(&m);
    struct fr_pq_out out = mem_out(&m);
    struct fr_pq_opts o;
    fr_pq_opts_default(&o);
    o.page_bytes = 4096;
    o.dict_max_bytes = 16 * 1024;
    struct fr_pq_writer *w;
    CHECK_EQ_INT(fr_pq_writer_open(&schema, &o, &out, &w), FR_OK);
    enum { N = 20000 };
    char *longv = malloc(20000);
    for (int i = 0; i < 20000; i++) {
        longv[i] = (char)('a' + i % 26);
    }
    char s[64];
    for (int r = 0; r < N; r++) {
        int n = snprintf(s, sizeof s, "user%d", r % 50);
        CHECK_EQ_INT(fr_pq_write_str(w, 0, s, (size_t)n), FR_OK);
        n = snprintf(s, sizeof s, "u%08d", r);
        CHECK_EQ_INT(fr_pq_write_str(w, 1, s, (size_t)n), FR_OK);
        n = snprintf(s, sizeof s, "g%d", r < 2000 ? r % 10 : r);
        CHECK_EQ_INT(fr_pq_write_str(w, 2, s, (size_t)n), FR_OK);
        if (r % 1000 == 3) {
            CHECK_EQ_INT(fr_pq_write_str(w, 3, longv, 5000 + (size_t)r % 15000), FR_OK);
        } else {
            CHECK_EQ_INT(fr_pq_write_null(w, 3), FR_OK);
        }
        CHECK_EQ_INT(fr_pq_write_int64(w, 4, r % 7), FR_OK);
        CHECK_EQ_INT(fr_pq_row_end(w), FR_OK);
        if (r == 2000) {
            /* past the first pages: the refused dictionary is gone, the
             * ones in use are kept */
            CHECK_EQ_INT(fr_pq_writer_dict_bytes(w, 1), 0);
            CHECK(fr_pq_writer_dict_bytes(w, 0) > 0);
            CHECK(fr_pq_writer_dict_bytes(w, 4) > 0);
        }
    }
    CHECK_EQ_INT(fr_pq_writer_close(w, NULL), FR_OK);
    fr_pq_writer_free(w);
    struct fr_pq_reader *r = open_mem(&m, NULL);
    CHECK(r != NULL);
    if (!r) {
        return;
    }
    struct fr_pq_chunk_info ci;
    fr_pq_reader_chunk(r, 0, 0, &ci);
    CHECK(ci.has_dictionary);
    fr_pq_reader_chunk(r, 0, 1, &ci);
    CHECK(!ci.has_dictionary);
    fr_pq_reader_chunk(r, 0, 2, &ci);
    CHECK(ci.has_dictionary);
    fr_pq_reader_chunk(r, 0, 4, &ci);
    CHECK(ci.has_dictionary);
    CHECK(ci.has_bounds && ci.min.v.i64 == 0 && ci.max.v.i64 == 6);
    struct fr_pq_scan *sc;
    CHECK_EQ_INT(fr_pq_scan_open(r, NULL, &sc), FR_OK);
    const struct fr_pq_batch *b;
    int bad = 0;
    while (fr_pq_scan_next(sc, &b) == FR_OK) {
        for (uint32_t i = 0; i < b->nrows; i++) {
            int row = (int)(b->first_row + i);
            int n = snprintf(s, sizeof s, "user%d", row % 50);
            bad += b->cols[0].v.str[i].len != (uint32_t)n ||
                   memcmp(b->cols[0].v.str[i].ptr, s, (size_t)n) != 0;
            n = snprintf(s, sizeof s, "u%08d", row);
            bad += memcmp(b->cols[1].v.str[i].ptr, s, (size_t)n) != 0;
            n = snprintf(s, sizeof s, "g%d", row < 2000 ? row % 10 : row);
            bad += b->cols[2].v.str[i].len != (uint32_t)n ||
                   memcmp(b->cols[2].v.str[i].ptr, s, (size_t)n) != 0;
            if (row % 1000 == 3) {
                bad += b->cols[3].nulls[i] != 0 ||
                       b->cols[3].v.str[i].len != 5000 + (uint32_t)row % 15000 ||
                       memcmp(b->cols[3].v.str[i].ptr, longv, 5000) != 0;
            } else {
                bad += b->cols[3].nulls[i] == 0;
            }
            bad += b->cols[4].v.i64[i] != row % 7;
        }
    }
    CHECK_EQ_INT(bad, 0);
    fr_pq_scan_free(sc);
    fr_pq_reader_free(r);
    free(longv);
    fr_buf_free(&m.buf);
}

static void test_kv_empty_all_null(void)
{
    static const struct fr_pq_column cols[] = {{"x", FR_PQ_DOUBLE, true, 1}};
    struct fr_pq_schema schema = {cols, 1};
    struct fr_pq_kv kv[] = {{"iceberg.schema", "{\"type\":\"struct\"}"}, {"empty", NULL}};
    struct fr_pq_opts o;
    fr_pq_opts_default(&o);
    o.kv = kv;
    o.nkv = 2;
    for (int rows = 0; rows <= 3; rows += 3) {
        struct mem_out m;
        mem_init(&m);
        struct fr_pq_out out = mem_out(&m);
        struct fr_pq_writer *w;
        CHECK_EQ_INT(fr_pq_writer_open(&schema, &o, &out, &w), FR_OK);
        for (int i = 0; i < rows; i++) {
            CHECK_EQ_INT(fr_pq_write_double(w, 0, NAN), FR_OK);
            CHECK_EQ_INT(fr_pq_row_end(w), FR_OK);
            CHECK_EQ_INT(fr_pq_write_null(w, 0), FR_OK);
            CHECK_EQ_INT(fr_pq_row_end(w), FR_OK);
        }
        struct fr_pq_file_stats st;
        CHECK_EQ_INT(fr_pq_writer_close(w, &st), FR_OK);
        fr_pq_writer_free(w);
        CHECK_EQ_INT(st.rows, (uint64_t)rows * 2);
        CHECK_EQ_INT(st.cols[0].nan_count, (uint64_t)rows);
        CHECK_EQ_INT(st.cols[0].null_count, (uint64_t)rows);
        CHECK(!st.cols[0].has_bounds);
        fr_pq_file_stats_free(&st);
        struct fr_pq_reader *r = open_mem(&m, NULL);
        CHECK(r != NULL);
        if (r) {
            const char *v;
            size_t len;
            CHECK_EQ_INT(fr_pq_reader_kv(r, "iceberg.schema", &v, &len), FR_OK);
            CHECK(len == 17 && memcmp(v, "{\"type\":\"struct\"}", 17) == 0);
            CHECK_EQ_INT(fr_pq_reader_kv(r, "empty", &v, &len), FR_OK);
            CHECK_EQ_INT(len, 0);
            CHECK_EQ_INT(fr_pq_reader_kv(r, "nope", &v, &len), FR_ENOTFOUND);
            CHECK_EQ_INT(fr_pq_reader_row_groups(r), rows ? 1 : 0);
            struct fr_pq_scan *s;
            const struct fr_pq_batch *b;
            CHECK_EQ_INT(fr_pq_scan_open(r, NULL, &s), FR_OK);
            uint64_t n = 0, nn = 0;
            while (fr_pq_scan_next(s, &b) == FR_OK) {
                for (uint32_t i = 0; i < b->nrows; i++, n++) {
                    nn += b->cols[0].nulls[i];
                    CHECK(b->cols[0].nulls[i] || isnan(b->cols[0].v.f64[i]));
                }
            }
            CHECK_EQ_INT(n, (uint64_t)rows * 2);
            CHECK_EQ_INT(nn, (uint64_t)rows);
            fr_pq_scan_free(s);
        }
        fr_pq_reader_free(r);
        fr_buf_free(&m.buf);
    }
}

static void test_output_failures(void)
{
    struct fr_pq_opts o;
    fr_pq_opts_default(&o);
    o.row_group_bytes = 32 * 1024;
    struct fr_pq_schema schema = {all_cols, NCOLS};
    /* Fail each of the first writes in turn: ENOSPC surfaces, never a file;
     * with and without the compression thread. */
    for (int fail_at = 1; fail_at < 80; fail_at += 3) {
        o.compress_workers = fail_at % 2;
        struct mem_out m;
        mem_init(&m);
        m.fail_at = fail_at;
        struct fr_pq_out out = mem_out(&m);
        struct fr_pq_writer *w = NULL;
        int rc = fr_pq_writer_open(&schema, &o, &out, &w);
        for (uint64_t r = 0; rc == FR_OK && r < 5000; r++) {
            rc = write_row(w, r) ? FR_ENOSPC : FR_OK;
        }
        if (w) {
            int crc = fr_pq_writer_close(w, NULL);
            rc = rc ? rc : crc;
            CHECK_EQ_INT(fr_pq_write_null(w, C_OB), FR_ENOSPC); /* sticky */
            fr_pq_writer_free(w);
        }
        CHECK_EQ_INT(rc, FR_ENOSPC);
        CHECK_EQ_INT(m.closed, 0);
        CHECK_EQ_INT(m.aborted, 1);
        fr_buf_free(&m.buf);
    }
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        n += e->d_name[0] != '.';
    }
    if (d) {
        closedir(d);
    }
    return n;
}

static void test_file_output(void)
{
    const char *dir = check_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/t.parquet", dir);
    struct fr_pq_schema schema = {all_cols, NCOLS};
    struct fr_pq_out out;
    struct fr_pq_writer *w;
    /* Abandoned: no file at all. */
    CHECK_EQ_INT(fr_pq_out_file(path, &out), FR_OK);
    CHECK_EQ_INT(fr_pq_writer_open(&schema, NULL, &out, &w), FR_OK);
    CHECK_EQ_INT(count_files(dir), 1); /* the temporary */
    CHECK_EQ_INT(write_row(w, 0), 0);
    fr_pq_writer_free(w);
    CHECK_EQ_INT(count_files(dir), 0);
    /* Completed: only the final name. */
    CHECK_EQ_INT(fr_pq_out_file(path, &out), FR_OK);
    CHECK_EQ_INT(fr_pq_writer_open(&schema, NULL, &out, &w), FR_OK);
    for (uint64_t r = 0; r < 100; r++) {
        CHECK_EQ_INT(write_row(w, r), 0);
    }
    CHECK_EQ_INT(fr_pq_writer_close(w, NULL), FR_OK);
    fr_pq_writer_free(w);
    CHECK_EQ_INT(count_files(dir), 1);
    struct fr_pq_reader *r;
    CHECK_EQ_INT(fr_pq_reader_open_file(path, NULL, &r), FR_OK);
    if (r) {
        CHECK_EQ_INT(check_table(r, NULL), 100);
    }
    fr_pq_reader_free(r);
    /* The kernel refuses a write halfway (RLIMIT_FSIZE: EFBIG, as a full
     * disk gives ENOSPC): the error surfaces and no file is left, neither
     * the final name nor the temporary. */
    unlink(path);
    struct rlimit old;
    getrlimit(RLIMIT_FSIZE, &old);
    struct rlimit small = {.rlim_cur = 200 * 1024, .rlim_max = old.rlim_max};
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    CHECK_EQ_INT(setrlimit(RLIMIT_FSIZE, &small), 0);
    struct fr_pq_opts o;
    fr_pq_opts_default(&o);
    o.row_group_bytes = 16 * 1024;
    CHECK_EQ_INT(fr_pq_out_file(path, &out), FR_OK);
    CHECK_EQ_INT(fr_pq_writer_open(&schema, &o, &out, &w), FR_OK);
    bool failed = false;
    for (uint64_t row = 0; !failed && row < 100000; row++) {
        failed = write_row(w, row) != 0;
    }
    int crc = fr_pq_writer_close(w, NULL);
    fr_pq_writer_free(w);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, prev);
    CHECK(failed);
    CHECK_EQ_INT(crc, FR_ETOOBIG); /* EFBIG; ENOSPC would be FR_ENOSPC */
    CHECK(strstr(fr_pq_errmsg(), ".tmp.") != NULL);
    CHECK_EQ_INT(count_files(dir), 0);
    /* A large output queues background fdatasyncs as it grows (one every
     * 16 MiB, core/bgsync.h), so that close's fsync finds little to flush,
     * and past 16 MiB goes around the page cache (O_DIRECT from aligned
     * staging blocks, docs/adr/0037). Writes of odd sizes, so that the
     * switch, the blocks and the tail all fall at unaligned offsets; the
     * file must hold exactly the bytes written, under its final name. */
    struct fr_bgsync_stats bg0, bg1;
    fr_bgsync_drain();
    fr_bgsync_stats(&bg0);
    unsigned long direct0 = pq_out_direct_count();
    CHECK_EQ_INT(fr_pq_out_file(path, &out), FR_OK);
    fr_pq_out_bulk(&out);
    static uint8_t chunk[(1 << 20) + 4099];
    size_t total = 0;
    for (int i = 0; i < 40; i++) {
        size_t len = sizeof chunk - (size_t)(i * 997) % 8191;
        for (size_t k = 0; k < len; k++) {
            chunk[k] = (uint8_t)((total + k) * 2654435761u >> 24);
        }
        CHECK_EQ_INT(out.ops->write(out.ctx, chunk, len), FR_OK);
        total += len;
    }
    CHECK_EQ_INT(out.ops->close(out.ctx), FR_OK);
    fr_bgsync_drain();
    fr_bgsync_stats(&bg1);
    /* at 16 and 32 MiB */
    CHECK_EQ_INT(bg1.requested + bg1.dropped - bg0.requested - bg0.dropped, 2);
    CHECK_EQ_INT(bg1.done - bg0.done, bg1.requested - bg0.requested);
    CHECK_EQ_INT(pq_out_direct_count() - direct0, 1);
    struct stat big;
    CHECK_EQ_INT(stat(path, &big), 0);
    CHECK_EQ_INT(big.st_size, total);
    CHECK_EQ_INT(count_files(dir), 1);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    size_t at = 0, bad = 0, n;
    while (f && (n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        for (size_t k = 0; k < n; k++) {
            bad += chunk[k] != (uint8_t)((at + k) * 2654435761u >> 24);
        }
        at += n;
    }
    if (f) {
        fclose(f);
    }
    CHECK_EQ_INT(at, total);
    CHECK_EQ_INT(bad, 0);
    unlink(path);
    /* A write error after the switch (the file size limit again, at
     * 20 MiB: the staging thread's block fails) surfaces from the next
     * write that hands over a block, and no file is left. */
    small.rlim_cur = 20 << 20;
    signal(SIGXFSZ, SIG_IGN);
    CHECK_EQ_INT(setrlimit(RLIMIT_FSIZE, &small), 0);
    CHECK_EQ_INT(fr_pq_out_file(path, &out), FR_OK);
    fr_pq_out_bulk(&out);
    int wrc = FR_OK;
    for (int i = 0; i < 40 && wrc == FR_OK; i++) {
        wrc = out.ops->write(out.ctx, chunk, sizeof chunk);
    }
    int closerc = wrc == FR_OK ? out.ops->close(out.ctx) : FR_OK;
    if (wrc != FR_OK) {
        out.ops->abort(out.ctx);
    }
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, prev);
    CHECK_EQ_INT(wrc, FR_ETOOBIG);
    CHECK_EQ_INT(closerc, FR_OK); /* not called */
    CHECK(strstr(fr_pq_errmsg(), ".tmp.") != NULL);
    CHECK_EQ_INT(count_files(dir), 0);
    /* A missing file and a directory are clear errors. */
    char missing[4300];
    snprintf(missing, sizeof missing, "%s/none.parquet", dir);
    CHECK_EQ_INT(fr_pq_reader_open_file(missing, NULL, &r), FR_ENOTFOUND);
    snprintf(missing, sizeof missing, "%s/no/such/dir/x.parquet", dir);
    CHECK(fr_pq_out_file(missing, &out) < 0);
    unlink(path);
    rmdir(dir);
}

static void test_hostile_files(void)
{
    struct fr_pq_opts o;
    fr_pq_opts_default(&o);
    o.page_rows = 50;
    o.row_group_bytes = 4096;
    struct mem_out m;
    mem_init(&m);
    write_table(&m, &o, 300, NULL);
    struct fr_pq_read_opts ro;
    fr_pq_read_opts_default(&ro);
    ro.max_page_bytes = 1 << 20;
    ro.batch_rows = 64;
    /* Every truncation: open fails, or the scan fails; never a crash. */
    int opened = 0;
    for (size_t cut = 0; cut < m.buf.len; cut += 1 + cut / 50) {
        struct fr_pq_in in;
        struct fr_pq_reader *r;
        fr_pq_in_mem(m.buf.data, cut, &in);
        int rc = fr_pq_reader_open(&in, &ro, &r);
        CHECK(rc == FR_ETRUNC || rc == FR_ECORRUPT);
        opened += rc == FR_OK;
        fr_pq_reader_free(r);
    }
    CHECK_EQ_INT(opened, 0);
    /* Not Parquet at all. */
    struct fr_pq_in in;
    struct fr_pq_reader *r;
    fr_pq_in_mem("PAR1 this is not a footer PAR1", 30, &in);
    int rc0 = fr_pq_reader_open(&in, &ro, &r);
    CHECK(rc0 == FR_ETRUNC || rc0 == FR_ECORRUPT);
    fr_pq_in_mem("PAR1\x02\x00\x00\x00" "\x00\x00\x00\x00PAR1", 16, &in);
    CHECK_EQ_INT(fr_pq_reader_open(&in, &ro, &r), FR_ECORRUPT);
    fr_pq_in_mem("PAR0xxxxxxxxxxxxxxxxPAR1", 24, &in);
    CHECK_EQ_INT(fr_pq_reader_open(&in, &ro, &r), FR_ECORRUPT);
    /* Random damage anywhere: open and scan everything, any error is fine. */
    uint8_t *copy = malloc(m.buf.len);
    int errors = 0;
    for (int iter = 0; iter < 1500; iter++) {
        memcpy(copy, m.buf.data, m.buf.len);
        int flips = 1 + (int)(rnd() % 4);
        for (int k = 0; k < flips; k++) {
            size_t at = (size_t)(rnd() % m.buf.len);
            if (rnd() % 4 == 0) {
                at = m.buf.len - 8 - (size_t)(rnd() % 300); /* the footer */
            }
            copy[at] ^= (uint8_t)(1 + rnd() % 255);
        }
        fr_pq_in_mem(copy, m.buf.len, &in);
        int rc = fr_pq_reader_open(&in, &ro, &r);
        if (rc == FR_OK) {
            struct fr_pq_scan *s;
            const struct fr_pq_batch *b;
            if (fr_pq_scan_open(r, NULL, &s) == FR_OK) {
                while ((rc = fr_pq_scan_next(s, &b)) == FR_OK) {
                }
                errors += rc != FR_EEOF;
                fr_pq_scan_free(s);
            }
            fr_pq_reader_free(r);
        } else {
            errors++;
            CHECK(fr_pq_errmsg()[0] != 0 || rc == FR_ETRUNC || rc == FR_ECORRUPT);
        }
    }
    CHECK(errors > 100);
    free(copy);
    fr_buf_free(&m.buf);
}

static void test_memory_bounded(void)
{
    static const struct fr_pq_column cols[] = {
        {"id", FR_PQ_INT64, false, 1},
        {"title", FR_PQ_STRING, false, 2},
        {"user", FR_PQ_STRING, true, 3},
    };
    struct fr_pq_schema schema = {cols, 3};
    struct mem_out m;
    mem_init(&m);
    struct fr_pq_out out = mem_out(&m);
    struct fr_pq_opts o;
    fr_pq_opts_default(&o);
    o.row_group_bytes = 256 * 1024;
    o.page_bytes = 32 * 1024;
    o.dict_max_bytes = 64 * 1024;
    o.max_value_bytes = 64 * 1024;
    struct fr_pq_writer *w;
    CHECK_EQ_INT(fr_pq_writer_open(&schema, &o, &out, &w), FR_OK);
    size_t peak_early = 0, peak_late = 0;
    const uint64_t rows = 1000000;
    char s[96];
    for (uint64_t r = 0; r < rows; r++) {
        fr_pq_write_int64(w, 0, (int64_t)(r * 2654435761u));
        int n = snprintf(s, sizeof s, "Title %llu of a page about %llu things",
                         (unsigned long long)(r * 31), (unsigned long long)(r % 977));
        fr_pq_write_str(w, 1, s, (size_t)n);
        n = snprintf(s, sizeof s, "User%llu", (unsigned long long)(r % 3000));
        fr_pq_write_str(w, 2, s, (size_t)n);
        CHECK_EQ_INT(fr_pq_row_end(w), FR_OK);
        size_t mem = pq_writer_mem(w);
        if (r >= rows / 5 && r < rows / 2) {
            peak_early = mem > peak_early ? mem : peak_early;
        } else if (r >= rows / 2) {
            peak_late = mem > peak_late ? mem : peak_late;
        }
        fr_buf_free(&m.buf); /* the sink keeps nothing */
        fr_buf_init(&m.buf, (size_t)1 << 30);
    }
    struct fr_pq_file_stats st;
    CHECK_EQ_INT(fr_pq_writer_close(w, &st), FR_OK);
    fr_pq_writer_free(w);
    fprintf(stderr, "  %u row groups, writer memory: early peak %zu, late peak %zu bytes\n",
            st.nrow_groups, peak_early, peak_late);
    CHECK(st.nrow_groups >= 40);
    /* Bounded by the options, not by the input: the second half of the
     * rows peaks no higher than the second fifth, but for the footer
     * records (~0.2 KiB per column per row group). */
    CHECK(peak_late < peak_early + (size_t)st.nrow_groups * 1024);
    CHECK(peak_late < 4 * o.row_group_bytes + 3 * (2 * o.page_bytes + o.max_value_bytes +
                                                   o.dict_max_bytes * 3) + 2 * 1024 * 1024);
    fr_pq_file_stats_free(&st);
    fr_buf_free(&m.buf);
}

/* ------------------------------------- encodings freshet only reads */

/* Append one uncompressed page (v1, or v2) of a REQUIRED column to f. */
static void hand_page(struct fr_buf *f, int enc, int nvalues, const uint8_t *body, size_t len,
                      bool v2)
{
    struct pq_tw tw;
    pq_tw_init(&tw, f);
    pq_tw_begin(&tw);
    pq_tw_i32(&tw, 1, v2 ? PQ_PAGE_DATA_V2 : PQ_PAGE_DATA);
    pq_tw_i32(&tw, 2, (int32_t)len);
    pq_tw_i32(&tw, 3, (int32_t)len);
    if (v2) {
        pq_tw_struct(&tw, 8);
        pq_tw_i32(&tw, 1, nvalues);
        pq_tw_i32(&tw, 2, 0);
        pq_tw_i32(&tw, 3, nvalues);
        pq_tw_i32(&tw, 4, enc);
        pq_tw_i32(&tw, 5, 0);
        pq_tw_i32(&tw, 6, 0);
        pq_tw_bool(&tw, 7, false);
    } else {
        pq_tw_struct(&tw, 5);
        pq_tw_i32(&tw, 1, nvalues);
        pq_tw_i32(&tw, 2, enc);
        pq_tw_i32(&tw, 3, PQ_ENC_RLE);
        pq_tw_i32(&tw, 4, PQ_ENC_RLE);
    }
    pq_tw_end(&tw);
    pq_tw_end(&tw);
    CHECK_EQ_INT(tw.rc, FR_OK);
    fr_buf_append(f, body, len);
}

/* A file with the encodings other writers use, built by hand from the
 * examples of PQ-ENC, read back through the reader: DELTA_BINARY_PACKED in
 * v2 pages, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT,
 * RLE booleans. (DuckDB's files in the interop test cover most of these;
 * DELTA_BYTE_ARRAY only appears here.) */
static void test_foreign_encodings(void)
{
    static const uint8_t dlba[] = {0x80, 0x01, 0x04, 0x04, 0x0a, 0x00, 0x01, 0x00, 0x00, 0x00,
                                   0x02, 0x00, 0x00, 0x00, 'H',  'e',  'l',  'l',  'o',  'W',
                                   'o',  'r',  'l',  'd',  'F',  'o',  'o',  'b',  'a',  'r',
                                   'A',  'B',  'C',  'D',  'E',  'F'};
    static const uint8_t dba[] = {
        0x80, 0x01, 0x04, 0x04, 0x00, 0x03, 0x03, 0x00, 0x00, 0x00, 0x44, 0x01, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,                   /* prefixes 0 2 0 3 */
        0x80, 0x01, 0x04, 0x04, 0x08, 0x03, 0x03, 0x00, 0x00, 0x00, 0x70, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,                   /* suffix lengths 4 2 6 5 */
        'a',  'x',  'i',  's',  'l',  'e',  'b',  'a',  'b',  'b',  'l',  'e',  'y',  'h',  'o',
        'o',  'd'};
    uint8_t bss[4 * 8];
    static const double dv[4] = {1.5, -2.0, 0.0, 1e300};
    for (int i = 0; i < 4; i++) {
        for (int k = 0; k < 8; k++) {
            bss[k * 4 + i] = ((const uint8_t *)&dv[i])[k];
        }
    }
    static const uint8_t rleb[] = {0x02, 0x00, 0x00, 0x00, 0x03, 0x0d}; /* 1 0 1 1 */

    struct fr_buf f;
    fr_buf_init(&f, 1 << 20);
    fr_buf_append(&f, PQ_MAGIC, 4);
    struct pq_chunk chunks[5] = {0};
    const char *names[5] = {"d", "s", "p", "f", "b"};
    static const int phys[5] = {PQ_INT64, PQ_BYTE_ARRAY, PQ_BYTE_ARRAY, PQ_DOUBLE, PQ_BOOLEAN};
    static const int encs[5] = {PQ_ENC_DELTA_BINARY_PACKED, PQ_ENC_DELTA_LENGTH_BYTE_ARRAY,
                                PQ_ENC_DELTA_BYTE_ARRAY, PQ_ENC_BYTE_STREAM_SPLIT, PQ_ENC_RLE};
    const uint8_t *bodies[5] = {NULL, dlba, dba, bss, rleb};
    const size_t lens[5] = {0, sizeof dlba, sizeof dba, sizeof bss, sizeof rleb};
    for (int c = 0; c < 5; c++) {
        int64_t start = (int64_t)f.len;
        if (c == 0) {
            /* The spec's 7 5 3 1 2 3 4 5 in two v2 pages of 4 (each page
             * has its own stream): first 7, min delta -2, width 2 (all
             * zero); then first 2, min delta 1, width 0. */
            static const uint8_t a[] = {0x08, 0x01, 0x04, 0x0e, 0x03, 0x02, 0x00, 0x00};
            static const uint8_t b[] = {0x08, 0x01, 0x04, 0x04, 0x02, 0x00};
            hand_page(&f, PQ_ENC_DELTA_BINARY_PACKED, 4, a, sizeof a, true);
            hand_page(&f, PQ_ENC_DELTA_BINARY_PACKED, 4, b, sizeof b, true);
        } else {
            hand_page(&f, encs[c], 4, bodies[c], lens[c], false);
        }
        chunks[c] = (struct pq_chunk){.type = phys[c],
                                      .encodings = 1u << encs[c],
                                      .path = {(const uint8_t *)names[c], 1},
                                      .path_len = 1,
                                      .codec = FR_PQ_UNCOMPRESSED,
                                      .num_values = c == 0 ? 8 : 4,
                                      .total_uncompressed = (int64_t)f.len - start,
                                      .total_compressed = (int64_t)f.len - start,
                                      .data_page_offset = start};
    }
    /* Column d has 8 rows, the others 4: two files over the same bytes,
     * the first with columns s p f b, the second with d alone. */
    struct pq_selem schema[6] = {{.name = {(const uint8_t *)"schema", 6},
                                  .type = -1,
                                  .repetition = -1,
                                  .num_children = 4,
                                  .converted = -1,
                                  .field_id = -1}};
    for (int c = 1; c < 5; c++) {
        schema[c] = (struct pq_selem){.name = {(const uint8_t *)names[c], 1},
                                      .type = phys[c],
                                      .repetition = PQ_REQUIRED,
                                      .converted = phys[c] == PQ_BYTE_ARRAY ? PQ_CT_UTF8 : -1,
                                      .field_id = c};
    }
    struct pq_rowgroup rg = {.chunks = chunks + 1, .nchunks = 4, .num_rows = 4};
    struct pq_meta m = {.version = 1, .schema = schema, .nschema = 5, .num_rows = 4,
                        .rgs = &rg, .nrgs = 1};
    struct fr_buf foot;
    fr_buf_init(&foot, 1 << 20);
    CHECK_EQ_INT(pq_meta_encode(&m, &foot), FR_OK);
    struct fr_buf file;
    fr_buf_init(&file, 1 << 20);
    fr_buf_append(&file, f.data, f.len);
    fr_buf_append(&file, foot.data, foot.len);
    uint8_t tail[8];
    pq_put_u32le(tail, (uint32_t)foot.len);
    memcpy(tail + 4, PQ_MAGIC, 4);
    fr_buf_append(&file, tail, 8);

    struct fr_pq_in in;
    struct fr_pq_reader *r;
    fr_pq_in_mem(file.data, file.len, &in);
    CHECK_EQ_INT(fr_pq_reader_open(&in, NULL, &r), FR_OK);
    struct fr_pq_scan *s;
    const struct fr_pq_batch *b;
    if (r && fr_pq_scan_open(r, NULL, &s) == FR_OK) {
        CHECK_EQ_INT(fr_pq_scan_next(s, &b), FR_OK);
        if (b) {
            static const char *const sv[] = {"Hello", "World", "Foobar", "ABCDEF"};
            static const char *const pv[] = {"axis", "axle", "babble", "babyhood"};
            static const uint8_t bv[] = {1, 0, 1, 1};
            for (int i = 0; i < 4; i++) {
                CHECK(b->cols[0].v.str[i].len == strlen(sv[i]) &&
                      memcmp(b->cols[0].v.str[i].ptr, sv[i], strlen(sv[i])) == 0);
                CHECK(b->cols[1].v.str[i].len == strlen(pv[i]) &&
                      memcmp(b->cols[1].v.str[i].ptr, pv[i], strlen(pv[i])) == 0);
                CHECK(same_f64(b->cols[2].v.f64[i], dv[i]));
                CHECK_EQ_INT(b->cols[3].v.b[i], bv[i]);
            }
        }
        CHECK_EQ_INT(fr_pq_scan_next(s, &b), FR_EEOF);
        fr_pq_scan_free(s);
    }
    fr_pq_reader_free(r);

    /* Column d alone: 8 rows in two v2 pages of DELTA_BINARY_PACKED. */
    schema[0].num_children = 1;
    schema[1] = (struct pq_selem){.name = {(const uint8_t *)"d", 1}, .type = PQ_INT64,
                                  .repetition = PQ_REQUIRED, .converted = -1, .field_id = 1};
    rg = (struct pq_rowgroup){.chunks = chunks, .nchunks = 1, .num_rows = 8};
    m.nschema = 2;
    m.num_rows = 8;
    fr_buf_reset(&foot);
    CHECK_EQ_INT(pq_meta_encode(&m, &foot), FR_OK);
    fr_buf_reset(&file);
    fr_buf_append(&file, f.data, f.len);
    fr_buf_append(&file, foot.data, foot.len);
    pq_put_u32le(tail, (uint32_t)foot.len);
    fr_buf_append(&file, tail, 8);
    fr_pq_in_mem(file.data, file.len, &in);
    CHECK_EQ_INT(fr_pq_reader_open(&in, NULL, &r), FR_OK);
    if (r && fr_pq_scan_open(r, NULL, &s) == FR_OK) {
        static const int64_t want[] = {7, 5, 3, 1, 2, 3, 4, 5};
        CHECK_EQ_INT(fr_pq_scan_next(s, &b), FR_OK);
        for (int i = 0; b && i < 8; i++) {
            CHECK_EQ_INT(b->cols[0].v.i64[i], want[i]);
        }
        fr_pq_scan_free(s);
    }
    fr_pq_reader_free(r);
    fr_buf_free(&f);
    fr_buf_free(&foot);
    fr_buf_free(&file);
}

/* ------------------------------------------------- model-based property */

struct model_col {
    struct fr_pq_column def;
    char name[16];
    uint8_t *nulls;
    int64_t *ints;
    double *dbl;
    char **strs;
    uint32_t *lens;
};

static void gen_string(char *out, uint32_t *len, int style)
{
    static const char *const pieces[] = {"a", "Zz", "\xc3\xa9", "\xe6\x97\xa5",
                                         "\xf0\x9f\x98\x80", " ", "0", "\x7f"};
    uint32_t n = 0, want = style == 0 ? (uint32_t)(rnd() % 4) : (uint32_t)(rnd() % 40);
    if (style == 2 && rnd() % 50 == 0) {
        want = 2000 + (uint32_t)(rnd() % 3000);
    }
    for (uint32_t i = 0; i < want; i++) {
        const char *p = pieces[rnd() % 8];
        size_t l = strlen(p);
        memcpy(out + n, p, l);
        n += (uint32_t)l;
    }
    *len = n;
}

static void test_property_random_schemas(void)
{
    for (uint64_t seed = 1; seed <= 60; seed++) {
        rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
        uint32_t ncols = 1 + (uint32_t)(rnd() % 8);
        uint32_t rows = (uint32_t)(rnd() % 3000);
        struct model_col *mc = calloc(ncols, sizeof *mc);
        struct fr_pq_column *defs = calloc(ncols, sizeof *defs);
        for (uint32_t c = 0; c < ncols; c++) {
            struct model_col *m = &mc[c];
            snprintf(m->name, sizeof m->name, "c%u", c);
            m->def = (struct fr_pq_column){m->name, (enum fr_pq_type)(1 + rnd() % 8),
                                           rnd() % 2 == 0, (int32_t)(100 + c)};
            defs[c] = m->def;
            int null_style = (int)(rnd() % 4); /* none, some, most, all */
            int card = (int)(rnd() % 3);       /* value variety */
            m->nulls = calloc(rows + 1, 1);
            m->ints = calloc(rows + 1, sizeof *m->ints);
            m->dbl = calloc(rows + 1, sizeof *m->dbl);
            m->strs = calloc(rows + 1, sizeof *m->strs);
            m->lens = calloc(rows + 1, sizeof *m->lens);
            for (uint32_t r = 0; r < rows; r++) {
                bool isnull = m->def.optional &&
                              (null_style == 3 || (null_style == 1 && rnd() % 5 == 0) ||
                               (null_style == 2 && rnd() % 5 != 0));
                m->nulls[r] = isnull;
                uint64_t x = card == 0 ? rnd() % 3 : card == 1 ? rnd() % 200 : rnd();
                switch (m->def.type) {
                case FR_PQ_BOOL: m->ints[r] = (int64_t)(x & 1); break;
                case FR_PQ_INT32: case FR_PQ_DATE: m->ints[r] = (int32_t)x; break;
                case FR_PQ_DOUBLE: {
                    uint64_t bits = x % 7 == 0 ? rnd() : 0;
                    memcpy(&m->dbl[r], &bits, 8);
                    if (!bits) {
                        m->dbl[r] = (double)(int64_t)x / 3.0;
                    }
                    break;
                }
                case FR_PQ_STRING:
                    m->strs[r] = malloc(20000);
                    gen_string(m->strs[r], &m->lens[r], card);
                    break;
                default:
                    /* Rising with jitter and some steps back, like times
                     * and ids, half the time among the widest values. */
                    m->ints[r] = card == 2 && seed % 2 ? (int64_t)r * 1000 + (int64_t)(x % 3000)
                                                       : (int64_t)x;
                    break;
                }
            }
        }
        struct fr_pq_opts o;
        fr_pq_opts_default(&o);
        static const enum fr_pq_codec codecs[] = {FR_PQ_UNCOMPRESSED, FR_PQ_SNAPPY, FR_PQ_ZSTD};
        o.codec = codecs[rnd() % 3];
        o.row_group_bytes = 1024 + rnd() % 100000;
        o.page_bytes = 64 + rnd() % 20000;
        o.page_rows = 1 + (uint32_t)(rnd() % 3000);
        o.dict_max_bytes = rnd() % 3 == 0 ? 0 : rnd() % 20000;
        o.compress_workers = (unsigned)(rnd() % 2);
        o.delta_columns = rnd() % 2 ? ~(uint64_t)0 : 0;
        struct fr_pq_schema schema = {defs, ncols};
        /* Passes 1 and 2 write the rows again in one row group (where the
         * compression thread's queued pages cannot move a cut), without
         * and with the compression thread: the bytes must be the same. */
        struct mem_out mo, other[2];
        mem_init(&mo);
        mem_init(&other[0]);
        mem_init(&other[1]);
        for (int pass = 0; pass < 3; pass++) {
            struct fr_pq_out out = mem_out(pass ? &other[pass - 1] : &mo);
            if (pass) {
                o.compress_workers = (unsigned)(pass - 1);
                o.row_group_bytes = (size_t)1 << 30;
            }
            struct fr_pq_writer *w;
            CHECK_EQ_INT(fr_pq_writer_open(&schema, &o, &out, &w), FR_OK);
            for (uint32_t r = 0; r < rows; r++) {
                for (uint32_t c = 0; c < ncols; c++) {
                    struct model_col *m = &mc[c];
                    int rc;
                    if (m->nulls[r]) {
                        rc = fr_pq_write_null(w, c);
                    } else {
                        switch (m->def.type) {
                        case FR_PQ_BOOL: rc = fr_pq_write_bool(w, c, m->ints[r] != 0); break;
                        case FR_PQ_INT32: case FR_PQ_DATE:
                            rc = fr_pq_write_int32(w, c, (int32_t)m->ints[r]);
                            break;
                        case FR_PQ_DOUBLE: rc = fr_pq_write_double(w, c, m->dbl[r]); break;
                        case FR_PQ_STRING: rc = fr_pq_write_str(w, c, m->strs[r], m->lens[r]); break;
                        default: rc = fr_pq_write_int64(w, c, m->ints[r]); break;
                        }
                    }
                    CHECK_EQ_INT(rc, FR_OK);
                }
                CHECK_EQ_INT(fr_pq_row_end(w), FR_OK);
            }
            CHECK_EQ_INT(fr_pq_writer_close(w, NULL), FR_OK);
            fr_pq_writer_free(w);
        }
        CHECK_EQ_INT(other[0].buf.len, other[1].buf.len);
        CHECK(other[0].buf.len == other[1].buf.len &&
              memcmp(other[0].buf.data, other[1].buf.data, other[0].buf.len) == 0);
        fr_buf_free(&other[0].buf);
        fr_buf_free(&other[1].buf);
        struct fr_pq_read_opts ro;
        fr_pq_read_opts_default(&ro);
        ro.batch_rows = 1 + (uint32_t)(rnd() % 2000);
        struct fr_pq_reader *rd = open_mem(&mo, &ro);
        CHECK(rd != NULL);
        struct fr_pq_scan *s = NULL;
        if (rd && fr_pq_scan_open(rd, NULL, &s) == FR_OK) {
            const struct fr_pq_batch *b;
            uint64_t seen = 0;
            int bad = 0, rc;
            while ((rc = fr_pq_scan_next(s, &b)) == FR_OK) {
                for (uint32_t i = 0; i < b->nrows; i++) {
                    uint64_t r = b->first_row + i;
                    for (uint32_t c = 0; c < ncols; c++) {
                        const struct fr_pq_vec *v = &b->cols[c];
                        struct model_col *m = &mc[c];
                        bool ok = (v->nulls[i] != 0) == (m->nulls[r] != 0);
                        if (ok && !m->nulls[r]) {
                            switch (m->def.type) {
                            case FR_PQ_BOOL: ok = v->v.b[i] == m->ints[r]; break;
                            case FR_PQ_INT32: case FR_PQ_DATE: ok = v->v.i32[i] == m->ints[r]; break;
                            case FR_PQ_DOUBLE: ok = same_f64(v->v.f64[i], m->dbl[r]); break;
                            case FR_PQ_STRING:
                                ok = v->v.str[i].len == m->lens[r] &&
                                     memcmp(v->v.str[i].ptr, m->strs[r], m->lens[r]) == 0;
                                break;
                            default: ok = v->v.i64[i] == m->ints[r]; break;
                            }
                        }
                        if (!ok && bad++ < 3) {
                            fprintf(stderr, "seed %llu row %llu col %u (%s) differs\n",
                                    (unsigned long long)seed, (unsigned long long)r, c,
                                    fr_pq_type_name(m->def.type));
                        }
                    }
                }
                seen += b->nrows;
            }
            if (rc != FR_EEOF) {
                fprintf(stderr, "seed %llu: %s\n", (unsigned long long)seed, fr_pq_errmsg());
            }
            CHECK_EQ_INT(rc, FR_EEOF);
            CHECK_EQ_INT(seen, rows);
            CHECK_EQ_INT(bad, 0);
        }
        fr_pq_scan_free(s);
        fr_pq_reader_free(rd);
        for (uint32_t c = 0; c < ncols; c++) {
            for (uint32_t r = 0; r < rows; r++) {
                free(mc[c].strs[r]);
            }
            free(mc[c].nulls);
            free(mc[c].ints);
            free(mc[c].dbl);
            free(mc[c].strs);
            free(mc[c].lens);
        }
        free(mc);
        free(defs);
        fr_buf_free(&mo.buf);
    }
}

int main(void)
{
    rng_state = 0x2545f4914f6cdd1dull;
    RUN(test_round_trip_codecs);
    RUN(test_many_row_groups_projection_predicates);
    RUN(test_batch_api);
    RUN(test_batch_nulls_without_values);
    RUN(test_value_errors);
    RUN(test_string_bounds_order);
    RUN(test_dictionary_fallback_and_long_strings);
    RUN(test_dictionary_must_save_a_quarter);
    RUN(test_prefetch_changes_nothing);
    RUN(test_kv_empty_all_null);
    RUN(test_output_failures);
    RUN(test_file_output);
    RUN(test_hostile_files);
    RUN(test_memory_bounded);
    RUN(test_foreign_encodings);
    RUN(test_property_random_schemas);
    return check_report();
}
