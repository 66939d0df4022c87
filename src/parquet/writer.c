/*
 * writer.c — the Parquet writer: opening, column buffers, values, rows and
 * batches. Pages and row groups are in writer_chunk.c, the footer, close
 * and free in writer_close.c, the shared state in writer_int.h.
 *
 * Data flow. Each column keeps the values of its current page (definition
 * levels, then either dictionary indices or PLAIN bytes). A full page is
 * encoded, compressed and appended, header first, to the column's chunk
 * buffer — compressed on this thread, or with opts.compress_workers = 1
 * queued to the compression thread (pool.c), which appends in order. When
 * the row group's buffered bytes reach opts.row_group_bytes at a row
 * boundary, the last pages are flushed, the queue drained, and every column
 * writes its chunk (dictionary page first) to the output, one column after
 * another; the buffers are reused. The footer is built from the per-chunk
 * records at close.
 *
 * Invariants.
 *  1. Every column of the current row group holds the same number of values
 *     (w->rg_rows) between rows; during a row, a column holds rg_rows or
 *     rg_rows + 1, and row_filled counts the columns that hold rg_rows + 1.
 *  2. A page is all dictionary indices or all PLAIN values; the dictionary
 *     is only ever abandoned at a page boundary, so a chunk is [dictionary
 *     page] [dictionary-encoded pages] [PLAIN pages].
 *  3. Memory: about row_group_bytes of compressed pages, plus per column one
 *     page of values (2 x page_bytes + max_value_bytes at most), page_rows x 5
 *     bytes of levels and indices, and a dictionary of at most
 *     dict_max_bytes; plus the footer records (a few hundred bytes per
 *     column per row group, at most 32767 row groups). Input length does not
 *     enter it. Every buffer is an fr_buf with a cap derived from the options.
 *  4. An error in a value (wrong type, bad UTF-8, too long) is found before
 *     anything of that value is stored; any other error is sticky
 *     (w->failed) and the output is aborted when the writer is released.
 *
 * Dictionary policy (after parquet-mr's FallbackValuesWriter): every column
 * but BOOLEAN starts a chunk dictionary-encoded. At the chunk's first page
 * the dictionary must pay for itself, saving at least a quarter (dictionary
 * bytes + index bytes < 3/4 of the PLAIN bytes), or the page is rewritten
 * PLAIN and the chunk stays PLAIN. A smaller saving is not worth the hash
 * probes: zstd finds most of those repeats in the PLAIN page anyway (silver's
 * title, 12.2 MB PLAIN against 12.9 MB with a dictionary, docs/BENCHMARKS.md).
 * When the dictionary would pass dict_max_bytes, the current page is
 * written with it and the rest of the chunk is PLAIN. Once the first-page
 * check refuses a column's dictionary, the file's later row groups start
 * that column PLAIN (its values will not repeat enough either); a column
 * the schema declares plain never starts one.
 *
 * Data page v1 body, before compression (PQ-README, PQ-ENC):
 *
 *   bytes        content                                    when
 *   -----------  -----------------------------------------  ---------------
 *   4            u32 LE byte length N of the levels         OPTIONAL column
 *   N            definition levels, hybrid, bit width 1     OPTIONAL column
 *   rest         PLAIN values of the non-NULL rows, or      PLAIN page
 *   1 + rest     bit width b (1..32), then hybrid indices   dictionary page
 *                with no length prefix
 *
 * PLAIN values: BOOLEAN 1 bit each, LSB first, last byte zero-padded;
 * INT32 4 bytes LE; INT64 and DOUBLE 8 bytes LE; BYTE_ARRAY u32 LE length +
 * bytes. Statistics values use the same bytes without the length prefix
 * (BOOLEAN: one byte 0 or 1).
 *
 * One thread at a time per writer (plus its own compression thread, which
 * touches only queued pages and their chunk buffers until the next drain).
 */
#include "parquet/writer_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define KIB ((size_t)1024)
#define MIB (KIB * KIB)
#define BATCH_SLICE_ROWS 1024u

static_assert(sizeof(int32_t) == 4 && sizeof(int64_t) == 8, "PLAIN widths");

/* ---------------------------------------------------------------- values */

static inline void put_level(struct pq_wcol *c, uint8_t level)
{
    if (c->optional) {
        c->defs[c->page_n] = level;
    }
    c->page_n++;
}

static int store_fixed(struct fr_pq_writer *w, struct pq_wcol *c, uint64_t bits)
{
    int rc;
    if (c->dict_on) {
        uint32_t ix;
        rc = pq_dict_put_fixed(&c->dict, bits, &ix);
        if (rc >= 0) {
            c->idx[c->page_nn++] = ix;
            c->page_plain += c->width;
            put_level(c, 1);
            return pq_w_maybe_flush(w, c);
        }
        if (rc != FR_ETOOBIG) {
            return rc;
        }
        rc = pq_w_dict_fallback(w, c);
        if (rc < 0) {
            return rc;
        }
    }
    if (c->plain.alloc - c->plain.len <= 8) {
        rc = fr_buf_reserve(&c->plain, 8);
        if (rc < 0) {
            return rc;
        }
    }
    memcpy(c->plain.data + c->plain.len, &bits, c->width);
    c->plain.len += c->width;
    c->page_nn++;
    put_level(c, 1);
    return pq_w_maybe_flush(w, c);
}

static inline int put_i64(struct fr_pq_writer *w, struct pq_wcol *c, int64_t v)
{
    if (!c->has_minmax) {
        c->imin = c->imax = v;
        c->has_minmax = true;
    } else if (v < c->imin) {
        c->imin = v;
    } else if (v > c->imax) {
        c->imax = v;
    }
    return store_fixed(w, c, c->width == 4 ? (uint64_t)(uint32_t)v : (uint64_t)v);
}

static inline int put_f64(struct fr_pq_writer *w, struct pq_wcol *c, double v)
{
    if (isnan(v)) {
        c->nans++;
    } else if (!c->has_minmax) {
        c->dmin = c->dmax = v;
        c->has_minmax = true;
    } else if (v < c->dmin) {
        c->dmin = v;
    } else if (v > c->dmax) {
        c->dmax = v;
    }
    uint64_t bits;
    memcpy(&bits, &v, 8);
    return store_fixed(w, c, bits);
}

static inline int put_bool(struct fr_pq_writer *w, struct pq_wcol *c, bool v)
{
    if (!c->has_minmax) {
        c->imin = c->imax = v;
        c->has_minmax = true;
    } else {
        c->imin &= v;
        c->imax |= v;
    }
    c->bool_acc |= (uint8_t)(v ? 1u << c->bool_bits : 0);
    if (++c->bool_bits == 8) {
        int rc = fr_buf_putc(&c->plain, c->bool_acc);
        if (rc < 0) {
            return rc;
        }
        c->bool_acc = c->bool_bits = 0;
    }
    c->page_nn++;
    put_level(c, 1);
    return pq_w_maybe_flush(w, c);
}

/* The first 8 bytes of a string, big-endian, zero-padded: when two keys
 * differ, they order the strings as pq_str_cmp does (the first differing
 * byte is among them, or the shorter string ends first and pads with 0 <=
 * the other's byte, which then makes the keys equal or the longer larger);
 * only equal keys need the whole comparison. */
static inline uint64_t str_key8(const uint8_t *p, uint32_t len)
{
    uint8_t b[8] = {0};
    memcpy(b, p, len < 8 ? len : 8);
    uint64_t k;
    memcpy(&k, b, 8);
    return __builtin_bswap64(k);
}

static int str_bounds(struct pq_wcol *c, const uint8_t *p, uint32_t len)
{
    uint64_t k = str_key8(p, len);
    if (!c->has_minmax) {
        c->has_minmax = true;
        c->smin_key = c->smax_key = k;
        fr_buf_reset(&c->smin);
        fr_buf_reset(&c->smax);
        int rc = fr_buf_append(&c->smin, p, len);
        return rc < 0 ? rc : fr_buf_append(&c->smax, p, len);
    }
    if (k < c->smin_key ||
        (k == c->smin_key && pq_str_cmp(p, len, c->smin.data, c->smin.len) < 0)) {
        c->smin_key = k;
        fr_buf_reset(&c->smin);
        return fr_buf_append(&c->smin, p, len);
    }
    if (k > c->smax_key ||
        (k == c->smax_key && pq_str_cmp(p, len, c->smax.data, c->smax.len) > 0)) {
        c->smax_key = k;
        fr_buf_reset(&c->smax);
        return fr_buf_append(&c->smax, p, len);
    }
    return FR_OK;
}

static int utf8_error(const struct fr_pq_writer *w, const struct pq_wcol *c, ptrdiff_t at)
{
    return pq_err(FR_EUTF8, "column '%s', row %llu: invalid UTF-8 at byte %td", c->name,
                  (unsigned long long)w->rows, at);
}

/* Store a string. check: validate UTF-8 (skipped for values already found
 * in the dictionary, which were checked when they entered it). */
static int put_str(struct fr_pq_writer *w, struct pq_wcol *c, const uint8_t *p, uint32_t len,
                   bool check)
{
    int rc;
    if (c->dict_on) {
        uint64_t h = pq_hash_bytes(p, len);
        uint32_t ix;
        rc = pq_dict_put_bytes(&c->dict, p, len, h, &ix);
        if (rc == 1 && check) {
            ptrdiff_t bad = pq_utf8_check(p, len);
            if (bad >= 0) {
                /* Take it back out: it is the newest entry. */
                pq_dict_pop(&c->dict, h);
                return utf8_error(w, c, bad);
            }
        }
        if (rc >= 0) {
            if (rc == 1 && (rc = str_bounds(c, p, len)) < 0) {
                return rc;
            }
            c->idx[c->page_nn++] = ix;
            c->page_plain += 4 + (uint64_t)len;
            put_level(c, 1);
            return pq_w_maybe_flush(w, c);
        }
        if (rc != FR_ETOOBIG) {
            return rc;
        }
        if (check) {
            ptrdiff_t bad = pq_utf8_check(p, len);
            if (bad >= 0) {
                return utf8_error(w, c, bad);
            }
            check = false;
        }
        rc = pq_w_dict_fallback(w, c);
        if (rc < 0) {
            return rc;
        }
    }
    if (check) {
        ptrdiff_t bad = pq_utf8_check(p, len);
        if (bad >= 0) {
            return utf8_error(w, c, bad);
        }
    }
    rc = str_bounds(c, p, len);
    if (rc < 0) {
        return rc;
    }
    rc = fr_buf_reserve(&c->plain, 4 + (size_t)len);
    if (rc < 0) {
        return rc == FR_ETOOBIG ? pq_err(rc, "column '%s': page buffer full", c->name) : rc;
    }
    pq_put_u32le(c->plain.data + c->plain.len, len);
    if (len) {
        memcpy(c->plain.data + c->plain.len + 4, p, len);
    }
    c->plain.len += 4 + (size_t)len;
    c->page_nn++;
    put_level(c, 1);
    return pq_w_maybe_flush(w, c);
}

static inline int put_null(struct fr_pq_writer *w, struct pq_wcol *c)
{
    c->nulls++;
    put_level(c, 0);
    return pq_w_maybe_flush(w, c);
}

/* ------------------------------------------------------------------ open */

static size_t comp_bound(size_t n)
{
    return n + n / 4 + 64 * KIB;
}

static void col_init(struct pq_wcol *c, const struct fr_pq_column *def, uint32_t index,
                     const struct fr_pq_opts *o, size_t chunk_cap)
{
    static const struct {
        uint8_t api, phys, width;
    } map[] = {
        [FR_PQ_BOOL] = {API_BOOL, PQ_BOOLEAN, 0},
        [FR_PQ_INT32] = {API_I32, PQ_INT32, 4},
        [FR_PQ_INT64] = {API_I64, PQ_INT64, 8},
        [FR_PQ_DOUBLE] = {API_F64, PQ_DOUBLE, 8},
        [FR_PQ_STRING] = {API_STR, PQ_BYTE_ARRAY, 0},
        [FR_PQ_DATE] = {API_I32, PQ_INT32, 4},
        [FR_PQ_TIMESTAMP] = {API_I64, PQ_INT64, 8},
        [FR_PQ_TIMESTAMP_NTZ] = {API_I64, PQ_INT64, 8},
    };
    c->type = def->type;
    c->api = map[def->type].api;
    c->phys = map[def->type].phys;
    c->width = map[def->type].width;
    c->optional = def->optional;
    c->field_id = def->field_id;
    c->dict_never = index < 64 && ((o->plain_columns >> index) & 1u);
    c->random = index < 64 && ((o->random_columns >> index) & 1u) && o->codec == FR_PQ_ZSTD;
    c->delta = index < 64 && ((o->delta_columns >> index) & 1u) && c->phys == PQ_INT64;
    fr_buf_init(&c->plain, 2 * o->page_bytes + o->max_value_bytes + 64);
    fr_buf_init(&c->chunk, chunk_cap);
    fr_buf_init(&c->dict_page, comp_bound(o->dict_max_bytes) + PQ_PAGE_HEADER_MAX);
    fr_buf_init(&c->smin, o->max_value_bytes);
    fr_buf_init(&c->smax, o->max_value_bytes);
    fr_buf_init(&c->file.smin, o->stats_max_bytes + 8);
    fr_buf_init(&c->file.smax, o->stats_max_bytes + 8);
    pq_dict_init(&c->dict, c->width, o->dict_max_bytes);
}

int fr_pq_writer_open(const struct fr_pq_schema *schema, const struct fr_pq_opts *opts,
                      const struct fr_pq_out *out, struct fr_pq_writer **writer)
{
    struct fr_pq_writer *w = NULL;
    struct fr_pq_opts o;
    int rc;
    *writer = NULL;
    pq_err_clear();
    if (opts) {
        o = *opts;
    } else {
        fr_pq_opts_default(&o);
    }
    if ((rc = fr_pq_schema_check(schema)) < 0 || (rc = pq_opts_check(&o)) < 0) {
        goto cleanup;
    }
    rc = FR_ENOMEM;
    w = calloc(1, sizeof *w);
    if (!w) {
        goto cleanup;
    }
    w->out = *out;
    w->out_state = OUT_OPEN;
    w->opts = o;
    w->opts.kv = NULL;
    w->ncols = schema->ncolumns;
    size_t page_cap = 2 * o.page_bytes + o.max_value_bytes + o.page_rows / 4 + 4 * KIB;
    size_t comp_cap = comp_bound(page_cap > o.dict_max_bytes ? page_cap : o.dict_max_bytes);
    size_t chunk_cap = o.row_group_bytes + 2 * comp_cap + MIB;
    fr_buf_init(&w->body, page_cap);
    fr_buf_init(&w->comp, comp_cap);
    fr_buf_init(&w->dictbuf, comp_cap + PQ_PAGE_HEADER_MAX);
    fr_buf_init(&w->footer, 512 * MIB);
    w->cols = calloc(w->ncols, sizeof *w->cols);
    if (!w->cols) {
        goto cleanup;
    }
    for (uint32_t i = 0; i < w->ncols; i++) {
        struct pq_wcol *c = &w->cols[i];
        const struct fr_pq_column *def = &schema->columns[i];
        col_init(c, def, i, &o, chunk_cap);
        c->name = strdup(def->name);
        c->name_len = (uint32_t)strlen(def->name);
        if (!c->name) {
            goto cleanup;
        }
        if (c->optional && !(c->defs = malloc(o.page_rows))) {
            goto cleanup;
        }
        pq_w_col_reset_chunk(w, c);
        if (c->dict_on && !(c->idx = malloc((size_t)o.page_rows * sizeof *c->idx))) {
            goto cleanup;
        }
    }
    if (o.nkv) {
        w->kv = calloc(o.nkv, sizeof *w->kv);
        if (!w->kv) {
            goto cleanup;
        }
        for (uint32_t i = 0; i < o.nkv; i++) {
            struct pq_kv *kv = &w->kv[i];
            w->nkv = i + 1;
            kv->key.len = (uint32_t)strlen(o.kv[i].key);
            kv->key.ptr = (const uint8_t *)strdup(o.kv[i].key);
            if (o.kv[i].value) {
                kv->has_value = true;
                kv->value.len = (uint32_t)strlen(o.kv[i].value);
                kv->value.ptr = (const uint8_t *)strdup(o.kv[i].value);
            }
            if (!kv->key.ptr || (kv->has_value && !kv->value.ptr)) {
                goto cleanup;
            }
        }
    }
    if ((rc = pq_codec_new(&w->codec, o.zstd_level)) < 0) {
        goto cleanup;
    }
    if (o.compress_workers &&
        (rc = pq_pool_new(&w->pool, (int)o.codec, o.zstd_level, page_cap, comp_cap)) < 0) {
        goto cleanup;
    }
    if ((rc = pq_w_out_write(w, PQ_MAGIC, PQ_MAGIC_LEN)) < 0) {
        goto cleanup;
    }
    *writer = w;
    return FR_OK;

cleanup:
    if (rc == FR_ENOMEM) {
        pq_err(rc, "out of memory");
    }
    if (w) {
        fr_pq_writer_free(w);
    } else {
        out->ops->abort(out->ctx);
    }
    return rc;
}

/* ------------------------------------------------------------ row values */

static int put_begin(struct fr_pq_writer *w, uint32_t col, int api, struct pq_wcol **out)
{
    if (w->failed) {
        return w->failed;
    }
    if (w->closed) {
        return pq_err(FR_ESTATE, "the writer is closed");
    }
    if (col >= w->ncols) {
        return pq_err(FR_EINVAL, "column %u out of range (%u columns)", col, w->ncols);
    }
    struct pq_wcol *c = &w->cols[col];
    if (api >= 0 && c->api != api) {
        return pq_err(FR_EINVAL, "column '%s' is of type %s", c->name, fr_pq_type_name(c->type));
    }
    if (c->count != w->rg_rows) {
        return pq_err(FR_ESTATE, "column '%s' already has a value in row %llu", c->name,
                      (unsigned long long)w->rows);
    }
    *out = c;
    return FR_OK;
}

static int put_end(struct fr_pq_writer *w, struct pq_wcol *c, int rc)
{
    if (rc == FR_EUTF8) {
        return rc; /* nothing of the value was stored */
    }
    if (rc < 0) {
        return pq_w_fail(w, rc);
    }
    c->count++;
    w->row_filled++;
    return FR_OK;
}

int fr_pq_write_null(struct fr_pq_writer *w, uint32_t col)
{
    struct pq_wcol *c = NULL;
    int rc = put_begin(w, col, -1, &c);
    if (rc < 0) {
        return rc;
    }
    if (!c->optional) {
        return pq_err(FR_EINVAL, "column '%s' is required: row %llu cannot be NULL", c->name,
                      (unsigned long long)w->rows);
    }
    return put_end(w, c, put_null(w, c));
}

int fr_pq_write_bool(struct fr_pq_writer *w, uint32_t col, bool value)
{
    struct pq_wcol *c = NULL;
    int rc = put_begin(w, col, API_BOOL, &c);
    return rc < 0 ? rc : put_end(w, c, put_bool(w, c, value));
}

int fr_pq_write_int32(struct fr_pq_writer *w, uint32_t col, int32_t value)
{
    struct pq_wcol *c = NULL;
    int rc = put_begin(w, col, API_I32, &c);
    return rc < 0 ? rc : put_end(w, c, put_i64(w, c, value));
}

int fr_pq_write_int64(struct fr_pq_writer *w, uint32_t col, int64_t value)
{
    struct pq_wcol *c = NULL;
    int rc = put_begin(w, col, API_I64, &c);
    return rc < 0 ? rc : put_end(w, c, put_i64(w, c, value));
}

int fr_pq_write_double(struct fr_pq_writer *w, uint32_t col, double value)
{
    struct pq_wcol *c = NULL;
    int rc = put_begin(w, col, API_F64, &c);
    return rc < 0 ? rc : put_end(w, c, put_f64(w, c, value));
}

static int write_str(struct fr_pq_writer *w, uint32_t col, const char *ptr, size_t len,
                     bool check)
{
    struct pq_wcol *c = NULL;
    int rc = put_begin(w, col, API_STR, &c);
    if (rc < 0) {
        return rc;
    }
    if (len > w->opts.max_value_bytes) {
        return pq_err(FR_ETOOBIG, "column '%s', row %llu: %zu bytes exceed max_value_bytes %zu",
                      c->name, (unsigned long long)w->rows, len, w->opts.max_value_bytes);
    }
    if (!ptr && len) {
        return pq_err(FR_EINVAL, "column '%s': NULL pointer with length %zu", c->name, len);
    }
    const uint8_t *p = ptr ? (const uint8_t *)ptr : (const uint8_t *)"";
    return put_end(w, c, put_str(w, c, p, (uint32_t)len, check));
}

int fr_pq_write_str(struct fr_pq_writer *w, uint32_t col, const char *ptr, size_t len)
{
    return write_str(w, col, ptr, len, true);
}

int fr_pq_write_str_valid(struct fr_pq_writer *w, uint32_t col, const char *ptr, size_t len)
{
    return write_str(w, col, ptr, len, false);
}

/* The column col if it is of type api and dictionary-encoded now. */
static const struct pq_wcol *prefetch_col(const struct fr_pq_writer *w, uint32_t col, int api)
{
    if (w->failed || w->closed || col >= w->ncols) {
        return NULL;
    }
    const struct pq_wcol *c = &w->cols[col];
    return c->api == api && c->dict_on ? c : NULL;
}

void fr_pq_prefetch_int64(const struct fr_pq_writer *w, uint32_t col, int64_t value)
{
    const struct pq_wcol *c = prefetch_col(w, col, API_I64);
    if (c) {
        pq_dict_prefetch_fixed(&c->dict, (uint64_t)value); /* API_I64: 8 bytes wide */
    }
}

void fr_pq_prefetch_str(const struct fr_pq_writer *w, uint32_t col, const char *ptr, size_t len)
{
    const struct pq_wcol *c = prefetch_col(w, col, API_STR);
    if (c && len <= w->opts.max_value_bytes) {
        pq_dict_prefetch_bytes(&c->dict, pq_hash_bytes((const uint8_t *)ptr, len));
    }
}

int fr_pq_row_end(struct fr_pq_writer *w)
{
    if (w->failed) {
        return w->failed;
    }
    if (w->closed) {
        return pq_err(FR_ESTATE, "the writer is closed");
    }
    if (w->row_filled != w->ncols) {
        for (uint32_t i = 0; i < w->ncols; i++) {
            if (w->cols[i].count == w->rg_rows) {
                return pq_err(FR_ESTATE, "row %llu: column '%s' has no value",
                              (unsigned long long)w->rows, w->cols[i].name);
            }
        }
    }
    w->row_filled = 0;
    w->rg_rows++;
    w->rows++;
    if (pq_w_rg_estimate(w) >= w->opts.row_group_bytes) {
        return pq_w_fail(w, pq_w_flush_row_group(w));
    }
    return FR_OK;
}

uint64_t fr_pq_writer_rows(const struct fr_pq_writer *w)
{
    return w->rows;
}

size_t fr_pq_writer_dict_bytes(const struct fr_pq_writer *w, uint32_t column)
{
    if (column >= w->ncols) {
        return 0;
    }
    return pq_dict_mem(&w->cols[column].dict);
}

/* ---------------------------------------------------------------- batches */

static int batch_check(const struct fr_pq_writer *w, const struct fr_pq_batch *b)
{
    if (b->ncols != w->ncols || (b->nrows && !b->cols)) {
        return pq_err(FR_EINVAL, "a batch must hold all %u columns", w->ncols);
    }
    for (uint32_t i = 0; i < w->ncols; i++) {
        const struct pq_wcol *c = &w->cols[i];
        const struct fr_pq_vec *v = &b->cols[i];
        if (v->column != i || v->type != c->type) {
            return pq_err(FR_EINVAL, "batch column %u must be '%s' of type %s", i, c->name,
                          fr_pq_type_name(c->type));
        }
        if (b->nrows && !v->v.b) {
            return pq_err(FR_EINVAL, "batch column '%s' has no values", c->name);
        }
        for (uint32_t r = 0; r < b->nrows; r++) {
            if (v->nulls && v->nulls[r]) {
                if (!c->optional) {
                    return pq_err(FR_EINVAL, "column '%s' is required: row %llu cannot be NULL",
                                  c->name, (unsigned long long)(w->rows + r));
                }
                continue;
            }
            if (c->api != API_STR) {
                continue;
            }
            const struct fr_pq_str *s = &v->v.str[r];
            if (s->len > w->opts.max_value_bytes) {
                return pq_err(FR_ETOOBIG,
                              "column '%s', row %llu: %u bytes exceed max_value_bytes %zu",
                              c->name, (unsigned long long)(w->rows + r), s->len,
                              w->opts.max_value_bytes);
            }
            if (s->len && !s->ptr) {
                return pq_err(FR_EINVAL, "column '%s', row %llu: NULL pointer", c->name,
                              (unsigned long long)(w->rows + r));
            }
            ptrdiff_t bad = pq_utf8_check((const uint8_t *)s->ptr, s->len);
            if (bad >= 0) {
                return pq_err(FR_EUTF8, "column '%s', row %llu: invalid UTF-8 at byte %td",
                              c->name, (unsigned long long)(w->rows + r), bad);
            }
        }
    }
    return FR_OK;
}

/* End of the slice starting at r0: at most BATCH_SLICE_ROWS rows and about
 * page_bytes of string data, so a row group overshoots by little. */
static uint32_t slice_end(const struct fr_pq_writer *w, const struct fr_pq_batch *b, uint32_t r0)
{
    uint32_t r1 = b->nrows - r0 < BATCH_SLICE_ROWS ? b->nrows : r0 + BATCH_SLICE_ROWS;
    size_t bytes = 0;
    for (uint32_t r = r0; r < r1; r++) {
        for (uint32_t i = 0; i < w->ncols; i++) {
            /* a NULL row's value slot is not read (it may not exist:
             * compaction passes the flags themselves for a missing column) */
            if (w->cols[i].api == API_STR && !(b->cols[i].nulls && b->cols[i].nulls[r])) {
                bytes += b->cols[i].v.str[r].len;
            }
        }
        if (bytes >= w->opts.page_bytes) {
            return r + 1;
        }
    }
    return r1;
}

static int put_column(struct fr_pq_writer *w, struct pq_wcol *c, const struct fr_pq_vec *v,
                      uint32_t r0, uint32_t r1)
{
    int rc = FR_OK;
    for (uint32_t r = r0; r < r1 && rc == FR_OK; r++) {
        if (v->nulls && v->nulls[r]) {
            rc = put_null(w, c);
            continue;
        }
        switch (c->api) {
        case API_BOOL:
            rc = put_bool(w, c, v->v.b[r] != 0);
            break;
        case API_I32:
            rc = put_i64(w, c, v->v.i32[r]);
            break;
        case API_I64:
            rc = put_i64(w, c, v->v.i64[r]);
            break;
        case API_F64:
            rc = put_f64(w, c, v->v.f64[r]);
            break;
        default: {
            const struct fr_pq_str *s = &v->v.str[r];
            rc = put_str(w, c, s->ptr ? (const uint8_t *)s->ptr : (const uint8_t *)"", s->len,
                         false);
            break;
        }
        }
    }
    return rc;
}

int fr_pq_write_batch(struct fr_pq_writer *w, const struct fr_pq_batch *b)
{
    if (w->failed) {
        return w->failed;
    }
    if (w->closed || w->row_filled) {
        return pq_err(FR_ESTATE, w->closed ? "the writer is closed"
                                           : "a batch cannot start in the middle of a row");
    }
    int rc = batch_check(w, b);
    if (rc < 0) {
        return rc;
    }
    for (uint32_t r0 = 0; r0 < b->nrows;) {
        uint32_t r1 = slice_end(w, b, r0);
        for (uint32_t i = 0; i < w->ncols; i++) {
            if ((rc = put_column(w, &w->cols[i], &b->cols[i], r0, r1)) < 0) {
                return pq_w_fail(w, rc);
            }
            w->cols[i].count += r1 - r0;
        }
        w->rg_rows += r1 - r0;
        w->rows += r1 - r0;
        if (pq_w_rg_estimate(w) >= w->opts.row_group_bytes && (rc = pq_w_flush_row_group(w)) < 0) {
            return pq_w_fail(w, rc);
        }
        r0 = r1;
    }
    return FR_OK;
}
