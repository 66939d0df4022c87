/*
 * parquet_interop.c — the C side of the Parquet interop tests.
 *
 *   parquet_interop gen DIR               write every file shape the writer
 *                                          can produce, each X.parquet with an
 *                                          X.json of the values it was given
 *   parquet_interop random DIR SEED COUNT  random schemas, data and options
 *   parquet_interop dump FILE             read FILE with freshet's reader and
 *                                          print it as JSON lines
 *   parquet_interop seeds DIR             small files for the fuzzer's seed
 *                                          corpus (tests/fuzz/corpus/parquet)
 *
 * The .json files hold the generator's own input values, never values read
 * back through freshet's reader, so the node scripts (parquet_interop.mjs)
 * compare DuckDB's and hyparquet's reading of each file with what was meant
 * to be written. Value encoding in JSON (shared with dump):
 *   NULL -> null; boolean -> true/false; int32, date -> number;
 *   int64, timestamps -> decimal string; double -> number ("%.17g"), or
 *   "NaN", "Infinity", "-Infinity"; string -> JSON string.
 */
#include "core/buf.h"
#include "core/err.h"
#include "parquet/parquet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "parquet_interop: %s: %s (%s)\n", what, fr_err_name(rc), fr_pq_errmsg());
    exit(1);
}

/* ------------------------------------------------------------------ table */

struct tcol {
    struct fr_pq_column def;
    char name[48];
    uint8_t *nulls;
    int64_t *i;
    double *d;
    char **s;
    uint32_t *len;
};

struct table {
    uint32_t ncols, nrows;
    struct tcol *cols;
};

static struct table *table_new(uint32_t ncols, uint32_t nrows)
{
    struct table *t = calloc(1, sizeof *t);
    t->ncols = ncols;
    t->nrows = nrows;
    t->cols = calloc(ncols, sizeof *t->cols);
    for (uint32_t c = 0; c < ncols; c++) {
        struct tcol *tc = &t->cols[c];
        tc->nulls = calloc(nrows + 1, 1);
        tc->i = calloc(nrows + 1, sizeof *tc->i);
        tc->d = calloc(nrows + 1, sizeof *tc->d);
        tc->s = calloc(nrows + 1, sizeof *tc->s);
        tc->len = calloc(nrows + 1, sizeof *tc->len);
    }
    return t;
}

static void table_free(struct table *t)
{
    for (uint32_t c = 0; c < t->ncols; c++) {
        for (uint32_t r = 0; r < t->nrows; r++) {
            free(t->cols[c].s[r]);
        }
        free(t->cols[c].nulls);
        free(t->cols[c].i);
        free(t->cols[c].d);
        free(t->cols[c].s);
        free(t->cols[c].len);
    }
    free(t->cols);
    free(t);
}

static void col_def(struct table *t, uint32_t c, const char *name, enum fr_pq_type type,
                    bool optional, int32_t field_id)
{
    struct tcol *tc = &t->cols[c];
    snprintf(tc->name, sizeof tc->name, "%s", name);
    tc->def = (struct fr_pq_column){tc->name, type, optional, field_id};
}

static void set_str(struct table *t, uint32_t c, uint32_t r, const char *p, size_t len)
{
    struct tcol *tc = &t->cols[c];
    free(tc->s[r]);
    tc->s[r] = malloc(len + 1);
    memcpy(tc->s[r], p, len);
    tc->s[r][len] = 0;
    tc->len[r] = (uint32_t)len;
}

/* ------------------------------------------------------------- generators */

static const char *const pieces[] = {
    "a", "Zz", "wiki", " ", "0", "_", "\"", "\\", "\t", "\n", "\x01", "\x7f",
    "\xc3\xa9",                 /* é */
    "\xce\xa9",                 /* Ω */
    "\xd7\xa9\xd7\x9c",         /* Hebrew */
    "\xe6\x97\xa5\xe6\x9c\xac", /* 日本 */
    "\xe0\xa4\xb9\xe0\xa4\xbf", /* Devanagari with a combining sign */
    "\xf0\x9f\x98\x80",         /* 😀 */
    "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7", /* ZWJ family */
    "\xf0\x9d\x94\xb8",         /* 𝔸 (4 bytes) */
    "e\xcc\x81",                /* e + combining acute */
    "\xef\xbf\xbd",             /* U+FFFD */
    "\xf4\x8f\xbf\xbf",         /* U+10FFFF */
};
#define NPIECES (sizeof pieces / sizeof pieces[0])

/* A random string of about want pieces; style 0 plain ASCII words,
 * 1 anything. */
static void rand_str(struct table *t, uint32_t c, uint32_t r, uint32_t want, int style)
{
    struct fr_buf b;
    fr_buf_init(&b, 1u << 26);
    for (uint32_t k = 0; k < want; k++) {
        const char *p = style == 0 ? pieces[rnd() % 5] : pieces[rnd() % NPIECES];
        fr_buf_puts(&b, p);
    }
    set_str(t, c, r, b.data ? (const char *)b.data : "", b.len);
    fr_buf_free(&b);
}

static int64_t rand_int(enum fr_pq_type type, int card)
{
    uint64_t x = card == 0 ? rnd() % 4 : card == 1 ? rnd() % 300 : rnd();
    switch (type) {
    case FR_PQ_BOOL: return (int64_t)(x & 1);
    case FR_PQ_INT32: return (int32_t)x;
    case FR_PQ_DATE: return (int64_t)(x % 3200000) - 300000; /* years ~1148..10000 */
    case FR_PQ_TIMESTAMP:
    case FR_PQ_TIMESTAMP_NTZ:
        /* 1677..2262, what every engine's timestamp holds */
        return (int64_t)(x % 18000000000000000ull) - 9000000000000000ll;
    default: return (int64_t)x;
    }
}

static double rand_double(int card)
{
    static const double special[] = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, 5e-324,
                                     1.7976931348623157e308, -2.2250738585072014e-308};
    uint64_t k = rnd() % 20;
    if (card > 0 && k < 9) {
        return special[k];
    }
    if (card > 0 && k == 9) {
        return NAN;
    }
    if (card == 0) {
        return (double)(rnd() % 4) / 2.0;
    }
    uint64_t bits = rnd();
    double d;
    memcpy(&d, &bits, 8);
    return isnan(d) ? (double)(int64_t)bits / 1e6 : d;
}

/* Fill column c with random values: null_style 0 none, 1 some, 2 most,
 * 3 all; card 0 tiny, 1 small, 2 anything. */
static void fill_col(struct table *t, uint32_t c, int null_style, int card, int strlen_style)
{
    struct tcol *tc = &t->cols[c];
    for (uint32_t r = 0; r < t->nrows; r++) {
        bool isnull = tc->def.optional &&
                      (null_style == 3 || (null_style == 1 && rnd() % 5 == 0) ||
                       (null_style == 2 && rnd() % 20 != 0));
        tc->nulls[r] = isnull;
        if (isnull) {
            continue;
        }
        switch (tc->def.type) {
        case FR_PQ_DOUBLE:
            tc->d[r] = rand_double(card);
            break;
        case FR_PQ_STRING: {
            uint32_t want = strlen_style == 0 ? (uint32_t)(rnd() % 4) : (uint32_t)(rnd() % 30);
            if (card == 0) {
                static const char *const few[] = {"", "a", "\xc3\xa9t\xc3\xa9",
                                                  "\xf0\x9f\x98\x80 x", "wiki"};
                const char *p = few[rnd() % 5];
                set_str(t, c, r, p, strlen(p));
            } else {
                rand_str(t, c, r, want, card == 1 ? 0 : 1);
            }
            break;
        }
        default:
            tc->i[r] = rand_int(tc->def.type, card);
            break;
        }
    }
}

/* ----------------------------------------------------------------- output */

static void json_value(struct fr_buf *b, const struct tcol *tc, uint32_t r)
{
    if (tc->nulls[r]) {
        fr_buf_puts(b, "null");
        return;
    }
    switch (tc->def.type) {
    case FR_PQ_BOOL:
        fr_buf_puts(b, tc->i[r] ? "true" : "false");
        break;
    case FR_PQ_INT32:
    case FR_PQ_DATE:
        fr_buf_printf(b, "%d", (int)tc->i[r]);
        break;
    case FR_PQ_DOUBLE: {
        double d = tc->d[r];
        if (isnan(d)) {
            fr_buf_puts(b, "\"NaN\"");
        } else if (isinf(d)) {
            fr_buf_puts(b, d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
        } else {
            fr_buf_printf(b, "%.17g", d);
        }
        break;
    }
    case FR_PQ_STRING:
        fr_buf_json_str(b, tc->s[r] ? tc->s[r] : "", tc->len[r]);
        break;
    default:
        fr_buf_printf(b, "\"%lld\"", (long long)tc->i[r]);
        break;
    }
}

static const char *codec_name(enum fr_pq_codec c)
{
    return c == FR_PQ_ZSTD ? "ZSTD" : c == FR_PQ_SNAPPY ? "SNAPPY" : "UNCOMPRESSED";
}

/* Write t to DIR/NAME.parquet (per-value or batch API) and the expected
 * values to DIR/NAME.json; extra is spliced into the JSON object. */
static void emit(const char *dir, const char *name, struct table *t, const struct fr_pq_opts *o,
                 bool batch, const char *extra)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.parquet", dir, name);
    struct fr_pq_column *defs = calloc(t->ncols, sizeof *defs);
    for (uint32_t c = 0; c < t->ncols; c++) {
        defs[c] = t->cols[c].def;
    }
    struct fr_pq_schema schema = {defs, t->ncols};
    struct fr_pq_out out;
    struct fr_pq_writer *w;
    int rc = fr_pq_out_file(path, &out);
    if (rc < 0 || (rc = fr_pq_writer_open(&schema, o, &out, &w)) < 0) {
        die(path, rc);
    }
    if (batch) {
        struct fr_pq_vec *v = calloc(t->ncols, sizeof *v);
        void **mem = calloc(t->ncols, sizeof *mem);
        for (uint32_t c = 0; c < t->ncols; c++) {
            struct tcol *tc = &t->cols[c];
            v[c] = (struct fr_pq_vec){.column = c, .type = tc->def.type, .nulls = tc->nulls};
            switch (tc->def.type) {
            case FR_PQ_BOOL: {
                uint8_t *b = calloc(t->nrows + 1, 1);
                for (uint32_t r = 0; r < t->nrows; r++) {
                    b[r] = (uint8_t)tc->i[r];
                }
                v[c].v.b = b;
                mem[c] = b;
                break;
            }
            case FR_PQ_INT32:
            case FR_PQ_DATE: {
                int32_t *x = calloc(t->nrows + 1, sizeof *x);
                for (uint32_t r = 0; r < t->nrows; r++) {
                    x[r] = (int32_t)tc->i[r];
                }
                v[c].v.i32 = x;
                mem[c] = x;
                break;
            }
            case FR_PQ_DOUBLE:
                v[c].v.f64 = tc->d;
                break;
            case FR_PQ_STRING: {
                struct fr_pq_str *s = calloc(t->nrows + 1, sizeof *s);
                for (uint32_t r = 0; r < t->nrows; r++) {
                    s[r] = (struct fr_pq_str){tc->s[r], tc->len[r]};
                }
                v[c].v.str = s;
                mem[c] = s;
                break;
            }
            default:
                v[c].v.i64 = tc->i;
                break;
            }
        }
        /* In uneven slices, to cross slice and page boundaries. */
        for (uint32_t r0 = 0; r0 < t->nrows;) {
            uint32_t n = 1 + (uint32_t)(rnd() % 5000);
            n = n > t->nrows - r0 ? t->nrows - r0 : n;
            struct fr_pq_vec *sv = calloc(t->ncols, sizeof *sv);
            for (uint32_t c = 0; c < t->ncols; c++) {
                sv[c] = v[c];
                sv[c].nulls = v[c].nulls + r0;
                size_t es = v[c].type == FR_PQ_BOOL                                 ? 1
                            : v[c].type == FR_PQ_INT32 || v[c].type == FR_PQ_DATE ? 4
                            : v[c].type == FR_PQ_STRING ? sizeof(struct fr_pq_str)
                                                        : 8;
                sv[c].v.b = v[c].v.b + (size_t)r0 * es;
            }
            struct fr_pq_batch b = {.nrows = n, .ncols = t->ncols, .cols = sv};
            if ((rc = fr_pq_write_batch(w, &b)) < 0) {
                die("write_batch", rc);
            }
            free(sv);
            r0 += n;
        }
        for (uint32_t c = 0; c < t->ncols; c++) {
            free(mem[c]);
        }
        free(mem);
        free(v);
    } else {
        for (uint32_t r = 0; r < t->nrows; r++) {
            for (uint32_t c = 0; c < t->ncols; c++) {
                struct tcol *tc = &t->cols[c];
                if (tc->nulls[r]) {
                    rc = fr_pq_write_null(w, c);
                    continue;
                }
                switch (tc->def.type) {
                case FR_PQ_BOOL: rc = fr_pq_write_bool(w, c, tc->i[r] != 0); break;
                case FR_PQ_INT32:
                case FR_PQ_DATE: rc = fr_pq_write_int32(w, c, (int32_t)tc->i[r]); break;
                case FR_PQ_DOUBLE: rc = fr_pq_write_double(w, c, tc->d[r]); break;
                case FR_PQ_STRING: rc = fr_pq_write_str(w, c, tc->s[r], tc->len[r]); break;
                default: rc = fr_pq_write_int64(w, c, tc->i[r]); break;
                }
                if (rc < 0) {
                    die("write value", rc);
                }
            }
            if ((rc = fr_pq_row_end(w)) < 0) {
                die("row_end", rc);
            }
        }
    }
    struct fr_pq_file_stats st;
    if ((rc = fr_pq_writer_close(w, &st)) < 0) {
        die("close", rc);
    }
    fr_pq_writer_free(w);
    free(defs);

    struct fr_buf j;
    fr_buf_init(&j, (size_t)1 << 31);
    fr_buf_printf(&j, "{\"file\":\"%s.parquet\",\"codec\":\"%s\",\"row_groups\":%u,", name,
                  codec_name(o->codec), st.nrow_groups);
    fr_buf_printf(&j, "\"stats_max_bytes\":%zu,\"kv\":[", o->stats_max_bytes);
    for (uint32_t k = 0; k < o->nkv; k++) {
        fr_buf_puts(&j, k ? ",[" : "[");
        fr_buf_json_str(&j, o->kv[k].key, strlen(o->kv[k].key));
        fr_buf_putc(&j, ',');
        fr_buf_json_str(&j, o->kv[k].value, strlen(o->kv[k].value));
        fr_buf_putc(&j, ']');
    }
    fr_buf_puts(&j, "],\"columns\":[");
    for (uint32_t c = 0; c < t->ncols; c++) {
        const struct tcol *tc = &t->cols[c];
        fr_buf_printf(&j, "%s{\"name\":\"%s\",\"type\":\"%s\",\"optional\":%s,\"field_id\":%d}",
                      c ? "," : "", tc->name, fr_pq_type_name(tc->def.type),
                      tc->def.optional ? "true" : "false", (int)tc->def.field_id);
    }
    fr_buf_printf(&j, "],%s%s\"rows\":[\n", extra ? extra : "", extra ? "," : "");
    for (uint32_t r = 0; r < t->nrows; r++) {
        fr_buf_putc(&j, '[');
        for (uint32_t c = 0; c < t->ncols; c++) {
            if (c) {
                fr_buf_putc(&j, ',');
            }
            json_value(&j, &t->cols[c], r);
        }
        fr_buf_puts(&j, r + 1 < t->nrows ? "],\n" : "]\n");
    }
    fr_buf_puts(&j, "]}\n");
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    FILE *f = fopen(path, "w");
    if (!f || fwrite(j.data, 1, j.len, f) != j.len || fclose(f) != 0) {
        fprintf(stderr, "parquet_interop: cannot write %s\n", path);
        exit(1);
    }
    fr_buf_free(&j);
    fr_pq_file_stats_free(&st);
    printf("%s: %u rows, %u columns, %s\n", name, t->nrows, t->ncols, codec_name(o->codec));
}

/* ----------------------------------------------------------------- shapes */

static const enum fr_pq_type all_types[] = {FR_PQ_BOOL, FR_PQ_INT32, FR_PQ_INT64,
                                            FR_PQ_DOUBLE, FR_PQ_STRING, FR_PQ_DATE,
                                            FR_PQ_TIMESTAMP, FR_PQ_TIMESTAMP_NTZ};
#define NTYPES 8

/* Every type twice (REQUIRED, OPTIONAL): 16 columns. */
static struct table *typed_table(uint32_t nrows, bool all_optional)
{
    struct table *t = table_new(2 * NTYPES, nrows);
    for (uint32_t k = 0; k < 2 * NTYPES; k++) {
        char name[48];
        enum fr_pq_type ty = all_types[k % NTYPES];
        bool opt = all_optional || k >= NTYPES;
        snprintf(name, sizeof name, "%s_%s%s", opt ? "opt" : "req", fr_pq_type_name(ty),
                 all_optional && k >= NTYPES ? "_2" : "");
        col_def(t, k, name, ty, opt, (int32_t)(k + 1));
    }
    return t;
}

static void shape_all_types(const char *dir)
{
    static const enum fr_pq_codec codecs[] = {FR_PQ_UNCOMPRESSED, FR_PQ_SNAPPY, FR_PQ_ZSTD};
    static const char *const names[] = {"all_types_uncompressed", "all_types_snappy",
                                        "all_types_zstd"};
    for (int k = 0; k < 3; k++) {
        rng_state = 1000 + (uint64_t)k;
        struct table *t = typed_table(30000, false);
        for (uint32_t c = 0; c < t->ncols; c++) {
            fill_col(t, c, 1, (int)(c % 3), 1);
        }
        struct fr_pq_opts o;
        fr_pq_opts_default(&o);
        o.codec = codecs[k];
        o.page_bytes = 64 * 1024;
        o.row_group_bytes = 512 * 1024;
        o.compress_workers = k == 2; /* zstd through the compression thread */
        struct fr_pq_kv kv[] = {{"iceberg.schema", "{\"type\":\"struct\",\"fields\":[]}"},
                                {"freshet.test", "all types \xc3\xa9"}};
        o.kv = kv;
        o.nkv = 2;
        emit(dir, names[k], t, &o, k == 1, NULL);
        table_free(t);
    }
}

static void shape_nulls(const char *dir)
{
    rng_state = 2000;
    struct table *t = typed_table(20000, true);
    for (uint32_t c = 0; c < t->ncols; c++) {
        fill_col(t, c, 2, 2, 1);
    }
    struct fr_pq_opts o;
    fr_pq_opts_default(&o);
    emit(dir, "null_heavy", t, &o, false, NULL);
    table_free(t);

    t = typed_table(5000, true);
    for (uint32_t c = 0; c < t->ncols; c++) {
        fill_col(t, c, 3, 2, 1);
    }
    o.codec = FR_PQ_SNAPPY;
    emit(dir, "all_null", t, &o, true, NULL);
    table_free(t);
}

static void shape_strings(const char *dir)
{
    /* Empty strings everywhere, with NULLs beside them. */
    rng_state = 3000;
    struct table *t = table_new(3, 4000);
    col_def(t, 0, "empty_req", FR_PQ_STRING, false, 1);
    col_def(t, 1, "empty_opt", FR_PQ_STRING, true, 2);
    col_def(t, 2, "mixed", FR_PQ_STRING, true, 3);
    for (uint32_t r = 0; r < t->nrows; r++) {
        set_str(t, 0, r, "", 0);
        t->cols[1].nulls[r] = r % 3 == 0;
        set_str(t, 1, r, "", 0);
        t->cols[2].nulls[r] = r % 7 == 0;
        if (r % 2) {
            set_str(t, 2, r, "", 0);
        } else {
            rand_str(t, 2, r, 3, 1);
        }
    }
    struct fr_pq_opts o;
    fr_pq_opts_default(&o);
    emit(dir, "empty_strings", t, &o, false, NULL);
    table_free(t);

    /* Multi-byte text: every piece, long runs of 4-byte characters. */
    rng_state = 3100;
    t = table_new(3, 6000);
    col_def(t, 0, "text", FR_PQ_STRING, false, 1);
    col_def(t, 1, "emoji", FR_PQ_STRING, true, 2);
    col_def(t, 2, "title", FR_PQ_STRING, true, 3);
    for (uint32_t r = 0; r < t->nrows; r++) {
        if (r < NPIECES) {
            set_str(t, 0, r, pieces[r], strlen(pieces[r]));
        } else {
            rand_str(t, 0, r, 1 + (uint32_t)(rnd() % 40), 1);
        }
        struct fr_buf b;
        fr_buf_init(&b, 1 << 20);
        for (uint32_t k = 0; k < 1 + r % 50; k++) {
            fr_buf_puts(&b, k % 2 ? "\xf0\x9f\x8e\x89" : "\xf0\x9f\x98\x80");
        }
        set_str(t, 1, r, (const char *)b.data, b.len);
        fr_buf_free(&b);
        t->cols[1].nulls[r] = r % 11 == 0;
        rand_str(t, 2, r, 1 + (uint32_t)(rnd() % 400), 1); /* long: truncated bounds */
        t->cols[2].nulls[r] = r % 13 == 0;
    }
    o.page_bytes = 32 * 1024;
    emit(dir, "unicode", t, &o, true, NULL);
    table_free(t);

    /* Values larger than a page. */
    rng_state = 3200;
    t = table_new(2, 120);
    col_def(t, 0, "body", FR_PQ_STRING, true, 1);
    col_def(t, 1, "n", FR_PQ_INT64, false, 2);
    for (uint32_t r = 0; r < t->nrows; r++) {
        size_t len = r % 5 == 0 ? 0 : (size_t)(100000 + rnd() % 300000);
        char *s = malloc(len + 1);
        for (size_t i = 0; i < len; i++) {
            s[i] = (char)('a' + (i * 7 + r) % 26);
        }
        set_str(t, 0, r, s, len);
        free(s);
        t->cols[0].nulls[r] = r % 17 == 3;
        t->cols[1].i[r] = (int64_t)r;
    }
    o.page_bytes = 64 * 1024;
    o.row_group_bytes = 8 * 1024 * 1024;
    o.codec = FR_PQ_ZSTD;
    emit(dir, "long_strings", t, &o, false, NULL);
    table_free(t);
}

static void shape_extremes(const char *dir)
{
    static const int64_t i32v[] = {INT32_MIN, INT32_MAX, 0, -1, 1, INT32_MIN + 1, INT32_MAX - 1};
    static const int64_t i64v[] = {INT64_MIN, INT64_MAX, 0, -1, 1, INT64_MIN + 1, INT64_MAX - 1,
                                   (int64_t)1 << 53, ((int64_t)1 << 53) + 1};
    static const double dv[] = {-0.0, 0.0, INFINITY, -INFINITY, NAN, 5e-324, -5e-324,
                                1.7976931348623157e308, -1.7976931348623157e308,
                                2.2250738585072014e-308, 0.1, 1e16 + 1};
    static const int64_t tsv[] = {0, -1, 1, -9000000000000000ll, 9000000000000000ll,
                                  1783699525024000ll, -62135596800000000ll};
    static const int64_t datev[] = {0, -1, 1, -300000, 2900000, 20000};
    rng_state = 4000;
    struct table *t = table_new(10, 200);
    col_def(t, 0, "i32", FR_PQ_INT32, false, 1);
    col_def(t, 1, "i64", FR_PQ_INT64, false, 2);
    col_def(t, 2, "f64", FR_PQ_DOUBLE, false, 3);
    col_def(t, 3, "ts", FR_PQ_TIMESTAMP, false, 4);
    col_def(t, 4, "date", FR_PQ_DATE, false, 5);
    col_def(t, 5, "oi32", FR_PQ_INT32, true, 6);
    col_def(t, 6, "oi64", FR_PQ_INT64, true, 7);
    col_def(t, 7, "of64", FR_PQ_DOUBLE, true, 8);
    col_def(t, 8, "flag", FR_PQ_BOOL, false, 9);
    col_def(t, 9, "ntz", FR_PQ_TIMESTAMP_NTZ, true, 10);
    for (uint32_t r = 0; r < t->nrows; r++) {
        t->cols[0].i[r] = i32v[r % 7];
        t->cols[1].i[r] = i64v[r % 9];
        t->cols[2].d[r] = dv[r % 12];
        t->cols[3].i[r] = tsv[r % 7];
        t->cols[4].i[r] = datev[r % 6];
        t->cols[5].i[r] = i32v[(r + 3) % 7];
        t->cols[5].nulls[r] = r % 4 == 0;
        t->cols[6].i[r] = i64v[(r + 5) % 9];
        t->cols[6].nulls[r] = r % 5 == 0;
        t->cols[7].d[r] = dv[(r * 5) % 12];
        t->cols[7].nulls[r] = r % 3 == 0;
        t->cols[8].i[r] = 1; /* all true: min and max both true */
        t->cols[9].i[r] = tsv[(r + 2) % 7];
        t->cols[9].nulls[r] = r % 2 == 0;
    }
    struct fr_pq_opts o;
    fr_pq_opts_default(&o);
    o.page_rows = 64;
    o.row_group_bytes = 4096; /* several row groups: per-group statistics */
    emit(dir, "extremes", t, &o, false, NULL);
    /* The INT64 and timestamp columns as DELTA_BINARY_PACKED: deltas that
     * wrap around 2^64, blocks 64 bits wide. */
    o.delta_columns = ~(uint64_t)0;
    o.dict_max_bytes = 0;
    emit(dir, "extremes_delta", t, &o, false, NULL);
    table_free(t);

    /* Doubles whose only values are NaN: no bounds. */
    t = table_new(2, 50);
    col_def(t, 0, "nan", FR_PQ_DOUBLE, false, 1);
    col_def(t, 1, "zero", FR_PQ_DOUBLE, true, 2);
    for (uint32_t r = 0; r < t->nrows; r++) {
        t->cols[0].d[r] = NAN;
        t->cols[1].d[r] = r % 2 ? 0.0 : -0.0;
        t->cols[1].nulls[r] = r % 5 == 0;
    }
    emit(dir, "nan_and_zero", t, &o, true, NULL);
    table_free(t);
}

static void shape_row_groups(const char *dir)
{
    rng_state = 5000;
    struct table *t = table_new(4, 200000);
    col_def(t, 0, "id", FR_PQ_INT64, false, 1);
    col_def(t, 1, "wiki", FR_PQ_STRING, false, 2);
    col_def(t, 2, "delta", FR_PQ_INT32, true, 3);
    col_def(t, 3, "at", FR_PQ_TIMESTAMP, false, 4);
    static const char *const wikis[] = {"enwiki", "dewiki", "commonswiki", "wikidatawiki",
                                        "jawiki", "frwiki"};
    for (uint32_t r = 0; r < t->nrows; r++) {
        t->cols[0].i[r] = 1000000000 + (int64_t)r;
        const char *w = wikis[rnd() % 6];
        set_str(t, 1, r, w, strlen(w));
        t->cols[2].i[r] = (int32_t)(rnd() % 2000) - 1000;
        t->cols[2].nulls[r] = rnd() % 9 == 0;
        t->cols[3].i[r] = 1783699525024000ll + (int64_t)r * 1000 + (int64_t)(rnd() % 1000);
    }
    struct fr_pq_opts o;
    fr_pq_opts_default(&o);
    o.row_group_bytes = 48 * 1024;
    o.page_bytes = 16 * 1024;
    o.compress_workers = 1;
    emit(dir, "many_row_groups", t, &o, false, "\"min_row_groups\":20");
    table_free(t);
}

static void shape_dictionary(const char *dir)
{
    rng_state = 6000;
    struct table *t = table_new(4, 60000);
    col_def(t, 0, "user", FR_PQ_STRING, true, 1);
    col_def(t, 1, "rev", FR_PQ_INT64, false, 2);
    col_def(t, 2, "ns", FR_PQ_INT32, false, 3);
    col_def(t, 3, "score", FR_PQ_DOUBLE, true, 4);
    char buf[64];
    for (uint32_t r = 0; r < t->nrows; r++) {
        /* Repeats at first (the dictionary pays), then all distinct. */
        int n = snprintf(buf, sizeof buf, "User %u \xc3\xa9", r < 25000 ? r % 200 : r);
        set_str(t, 0, r, buf, (size_t)n);
        t->cols[0].nulls[r] = r % 10 == 0;
        t->cols[1].i[r] = r < 25000 ? (int64_t)(r % 100) : (int64_t)r * 7919;
        t->cols[2].i[r] = (int32_t)(r % 15);
        t->cols[3].d[r] = r < 25000 ? (double)(r % 50) / 4 : (double)r / 3;
        t->cols[3].nulls[r] = r % 8 == 0;
    }
    struct fr_pq_opts o;
    fr_pq_opts_default(&o);
    o.dict_max_bytes = 16 * 1024;
    emit(dir, "dict_fallback", t, &o, false, "\"dict_fallback\":[\"user\",\"rev\",\"score\"]");
    o.dict_max_bytes = 0;
    o.codec = FR_PQ_SNAPPY;
    emit(dir, "dict_disabled", t, &o, true, "\"no_dictionary\":true");
    table_free(t);
}

static void shape_small(const char *dir)
{
    struct table *t = typed_table(1, false);
    rng_state = 7000;
    for (uint32_t c = 0; c < t->ncols; c++) {
        fill_col(t, c, 0, 2, 1);
    }
    struct fr_pq_opts o;
    fr_pq_opts_default(&o);
    emit(dir, "single_row", t, &o, false, NULL);
    table_free(t);
    t = typed_table(0, false);
    emit(dir, "zero_rows", t, &o, false, NULL);
    table_free(t);
    /* One value per page. */
    t = typed_table(700, false);
    for (uint32_t c = 0; c < t->ncols; c++) {
        fill_col(t, c, 1, (int)(c % 3), 0);
    }
    o.page_rows = 1;
    emit(dir, "page_per_value", t, &o, true, NULL);
    table_free(t);
    /* Wide: 300 columns. */
    rng_state = 7100;
    t = table_new(300, 400);
    for (uint32_t c = 0; c < 300; c++) {
        char name[48];
        snprintf(name, sizeof name, "c%03u", c);
        col_def(t, c, name, all_types[c % NTYPES], c % 3 != 0, (int32_t)(1000 + c));
        fill_col(t, c, 1, (int)(c % 3), 0);
    }
    fr_pq_opts_default(&o);
    emit(dir, "wide", t, &o, false, NULL);
    table_free(t);
}

static void gen_shapes(const char *dir)
{
    shape_all_types(dir);
    shape_nulls(dir);
    shape_strings(dir);
    shape_extremes(dir);
    shape_row_groups(dir);
    shape_dictionary(dir);
    shape_small(dir);
}

/* --------------------------------------------------------------- property */

static void gen_random(const char *dir, uint64_t seed0, uint64_t count)
{
    for (uint64_t seed = seed0; seed < seed0 + count; seed++) {
        rng_state = seed * 0x9e3779b97f4a7c15ull + 7;
        uint32_t ncols = 1 + (uint32_t)(rnd() % 10);
        uint32_t nrows = (uint32_t)(rnd() % 4000);
        struct table *t = table_new(ncols, nrows);
        for (uint32_t c = 0; c < ncols; c++) {
            char name[48];
            snprintf(name, sizeof name, "col_%u_%llu", c, (unsigned long long)(rnd() % 1000));
            col_def(t, c, name, all_types[rnd() % NTYPES], rnd() % 2 == 0,
                    (int32_t)(rnd() % 1000000) * 16 + (int32_t)c);
            fill_col(t, c, (int)(rnd() % 4), (int)(rnd() % 3), (int)(rnd() % 2));
        }
        struct fr_pq_opts o;
        fr_pq_opts_default(&o);
        static const enum fr_pq_codec codecs[] = {FR_PQ_UNCOMPRESSED, FR_PQ_SNAPPY, FR_PQ_ZSTD};
        o.codec = codecs[rnd() % 3];
        o.zstd_level = 1 + (int)(rnd() % 9);
        o.row_group_bytes = 2048 + rnd() % 200000;
        o.page_bytes = 64 + rnd() % 30000;
        o.page_rows = 1 + (uint32_t)(rnd() % 5000);
        o.dict_max_bytes = rnd() % 4 == 0 ? 0 : rnd() % 30000;
        o.stats_max_bytes = 16 + rnd() % 64;
        o.compress_workers = (unsigned)(rnd() % 2);
        o.delta_columns = rnd() % 2 ? ~(uint64_t)0 : 0;
        o.random_columns = rnd() % 2 ? ~(uint64_t)0 : 0;
        char name[64];
        snprintf(name, sizeof name, "random_%llu", (unsigned long long)seed);
        emit(dir, name, t, &o, rnd() % 2 == 0, NULL);
        table_free(t);
    }
}

/* ------------------------------------------------------------------ seeds */

/* Small files (a few KiB) reaching every page and encoding path of the
 * reader: each codec, dictionary and PLAIN, NULLs, several row groups and
 * pages, key/value metadata. */
static void gen_seeds(const char *dir)
{
    static const enum fr_pq_codec codecs[] = {FR_PQ_UNCOMPRESSED, FR_PQ_SNAPPY, FR_PQ_ZSTD};
    for (int k = 0; k < 9; k++) {
        rng_state = 9000 + (uint64_t)k;
        struct table *t = typed_table(k == 8 ? 3 : 40, k % 2 == 1);
        for (uint32_t c = 0; c < t->ncols; c++) {
            fill_col(t, c, 1 + k % 3, (int)((c + (uint32_t)k) % 3), 0);
        }
        struct fr_pq_opts o;
        fr_pq_opts_default(&o);
        o.codec = codecs[k % 3];
        o.page_rows = k >= 6 ? 7 : 20000;
        o.row_group_bytes = k >= 3 && k < 6 ? 600 : 1 << 20;
        o.dict_max_bytes = k == 4 ? 0 : k == 5 ? 40 : 2 << 20;
        struct fr_pq_kv kv[] = {{"iceberg.schema", "{}"}};
        o.kv = kv;
        o.nkv = k == 0;
        char name[32];
        snprintf(name, sizeof name, "freshet_%d", k);
        emit(dir, name, t, &o, k % 2 == 0, NULL);
        table_free(t);
    }
}

/* ------------------------------------------------------------------- dump */

static int dump(const char *path)
{
    struct fr_pq_reader *r;
    int rc = fr_pq_reader_open_file(path, NULL, &r);
    if (rc < 0) {
        die(path, rc);
    }
    const struct fr_pq_schema *sc = fr_pq_reader_schema(r);
    struct fr_buf b;
    fr_buf_init(&b, (size_t)1 << 30);
    fr_buf_printf(&b, "{\"rows\":%llu,\"row_groups\":%u,\"columns\":[",
                  (unsigned long long)fr_pq_reader_rows(r), fr_pq_reader_row_groups(r));
    for (uint32_t c = 0; c < sc->ncolumns; c++) {
        fr_buf_printf(&b, "%s{\"name\":", c ? "," : "");
        fr_buf_json_str(&b, sc->columns[c].name, strlen(sc->columns[c].name));
        fr_buf_printf(&b, ",\"type\":\"%s\",\"optional\":%s,\"field_id\":%d}",
                      fr_pq_type_name(sc->columns[c].type),
                      sc->columns[c].optional ? "true" : "false", (int)sc->columns[c].field_id);
    }
    fr_buf_puts(&b, "]}\n");
    fwrite(b.data, 1, b.len, stdout);
    struct fr_pq_scan *s;
    if ((rc = fr_pq_scan_open(r, NULL, &s)) < 0) {
        die("scan", rc);
    }
    const struct fr_pq_batch *batch;
    struct tcol tc;
    while ((rc = fr_pq_scan_next(s, &batch)) == FR_OK) {
        for (uint32_t i = 0; i < batch->nrows; i++) {
            fr_buf_reset(&b);
            fr_buf_putc(&b, '[');
            for (uint32_t c = 0; c < batch->ncols; c++) {
                const struct fr_pq_vec *v = &batch->cols[c];
                /* Reuse json_value through a one-row column. */
                uint8_t isnull = v->nulls[i];
                int64_t iv = 0;
                double dv = 0;
                char *sv = NULL;
                uint32_t len = 0;
                switch (v->type) {
                case FR_PQ_BOOL: iv = v->v.b[i]; break;
                case FR_PQ_INT32:
                case FR_PQ_DATE: iv = v->v.i32[i]; break;
                case FR_PQ_DOUBLE: dv = v->v.f64[i]; break;
                case FR_PQ_STRING:
                    sv = (char *)v->v.str[i].ptr;
                    len = v->v.str[i].len;
                    break;
                default: iv = v->v.i64[i]; break;
                }
                tc = (struct tcol){.def = {.type = v->type}, .nulls = &isnull, .i = &iv, .d = &dv,
                                   .s = &sv, .len = &len};
                if (c) {
                    fr_buf_putc(&b, ',');
                }
                json_value(&b, &tc, 0);
            }
            fr_buf_puts(&b, "]\n");
            fwrite(b.data, 1, b.len, stdout);
        }
    }
    if (rc != FR_EEOF) {
        die("scan_next", rc);
    }
    fr_pq_scan_free(s);
    fr_pq_reader_free(r);
    fr_buf_free(&b);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "gen") == 0) {
        gen_shapes(argv[2]);
        return 0;
    }
    if (argc == 5 && strcmp(argv[1], "random") == 0) {
        gen_random(argv[2], strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10));
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "seeds") == 0) {
        gen_seeds(argv[2]);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "dump") == 0) {
        return dump(argv[2]);
    }
    fprintf(stderr,
            "usage: parquet_interop gen DIR | random DIR SEED COUNT | dump FILE | seeds DIR\n");
    return 2;
}
