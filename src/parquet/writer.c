/*
 * writer.c — the Parquet writer: column buffers, pages, dictionaries, row
 * groups, statistics, the footer.
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
#include "parquet/parquet_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define KIB ((size_t)1024)
#define MIB (KIB * KIB)
#define BATCH_SLICE_ROWS 1024u

static_assert(sizeof(int32_t) == 4 && sizeof(int64_t) == 8, "PLAIN widths");

enum api { API_BOOL, API_I32, API_I64, API_F64, API_STR };

enum out_state { OUT_OPEN, OUT_CLOSED, OUT_ABORTED };

/* Running per-file totals of one column (for fr_pq_file_stats). */
struct fstat {
    uint64_t values, nulls, nans, comp, uncomp;
    bool has_bounds, min_exact, max_exact;
    int64_t imin, imax;
    double dmin, dmax;
    struct fr_buf smin, smax;
};

struct pq_wcol {
    /* schema */
    char *name;
    uint32_t name_len;
    enum fr_pq_type type;
    uint8_t api;
    uint8_t phys;
    uint8_t width; /* PLAIN bytes of a fixed-width value, else 0 */
    bool optional;
    int32_t field_id;

    /* current row group */
    uint64_t count; /* values including NULLs */

    /* current page */
    uint32_t page_n;  /* values including NULLs */
    uint32_t page_nn; /* non-NULL values */
    uint8_t *defs;    /* page_rows levels (OPTIONAL columns) */
    uint32_t *idx;    /* page_rows dictionary indices */
    struct fr_buf plain;
    uint8_t bool_acc;
    uint8_t bool_bits;

    /* dictionary */
    bool dict_never;   /* the schema says PLAIN only */
    bool random;       /* opts.random_columns: PLAIN pages compressed as PQ_COMP_RANDOM */
    bool delta;        /* opts.delta_columns, INT64: DELTA_BINARY_PACKED, not PLAIN */
    bool dict_refused; /* a row group's first page found the dictionary does not pay:
                          later row groups of the file start PLAIN */
    bool dict_on;      /* values of this page go to the dictionary */
    bool dict_used;    /* a page of this chunk is dictionary-encoded */
    bool dict_checked; /* the first-page size check is done */
    uint64_t page_plain; /* PLAIN bytes the first page's values would take */
    struct pq_dict dict;

    /* current chunk */
    struct fr_buf chunk; /* data page headers + bodies */
    uint64_t chunk_uncomp;
    struct fr_buf dict_page; /* with the compression thread: the chunk's dictionary
                                page, header + body, until the row group is out */
    uint64_t dict_uncomp;
    uint32_t encodings;
    uint64_t nulls, nans;
    bool has_minmax;
    int64_t imin, imax;
    double dmin, dmax;
    struct fr_buf smin, smax;
    uint64_t smin_key, smax_key; /* str_key8 of smin and smax */

    struct fstat file;
};

struct fr_pq_writer {
    struct fr_pq_opts opts;
    struct fr_pq_out out;
    enum out_state out_state;
    int failed; /* sticky error, 0 while healthy */
    bool closed;
    uint32_t ncols;
    struct pq_wcol *cols;
    uint32_t row_filled;
    uint64_t rg_rows;
    uint64_t rows;
    uint64_t offset; /* bytes written */
    struct pq_codec *codec;
    struct pq_pool *pool;  /* background compression, or NULL */
    size_t pool_rg_base;   /* pq_pool_appended at the start of the row group */
    struct fr_buf body, comp, dictbuf, footer;
    struct pq_rowgroup *rgs;
    uint32_t nrgs, rgs_cap;
    uint8_t **chunk_mem; /* nrgs x ncols statistics blocks */
    struct pq_kv *kv;
    uint32_t nkv;
};

/* ---------------------------------------------------------------- output */

static int fail(struct fr_pq_writer *w, int rc)
{
    if (rc < 0 && !w->failed) {
        w->failed = rc;
    }
    return rc;
}

static int out_write(struct fr_pq_writer *w, const void *p, size_t len)
{
    if (len == 0) {
        return FR_OK;
    }
    int rc = w->out.ops->write(w->out.ctx, p, len);
    if (rc < 0) {
        if (!fr_pq_errmsg()[0]) {
            pq_err(rc, "output write failed: %s", fr_strerror(rc));
        }
        return fail(w, rc);
    }
    w->offset += len;
    return FR_OK;
}

static void out_abort(struct fr_pq_writer *w)
{
    if (w->out_state == OUT_OPEN) {
        w->out.ops->abort(w->out.ctx);
        w->out_state = OUT_ABORTED;
    }
}

/* ----------------------------------------------------------------- pages */

/* Compress body and append header + bytes to dst on this thread. */
static int emit_page(struct fr_pq_writer *w, enum pq_comp_mode mode, struct pq_page *pg,
                     const uint8_t *body, size_t len, struct fr_buf *dst, uint64_t *uncomp)
{
    return pq_emit_page(w->codec, (int)w->opts.codec, mode, &w->comp, pg, body, len, dst, uncomp);
}

/* Rewrite the dictionary-encoded values of the current page as PLAIN and
 * drop the dictionary: the first-page check refused it, so this writer
 * never starts one for the column again (dict_refused) and its memory,
 * the slot table most of all (two to four times the values), goes back
 * now, not when the writer is freed. */
static int dict_to_plain(struct pq_wcol *c)
{
    fr_buf_reset(&c->plain);
    for (uint32_t i = 0; i < c->page_nn; i++) {
        const uint8_t *v;
        size_t n;
        if (c->width) {
            v = c->dict.vals.data + (size_t)c->idx[i] * c->width;
            n = c->width;
        } else {
            v = c->dict.vals.data + c->dict.offs[c->idx[i]];
            n = 4 + (size_t)pq_get_u32le(v);
        }
        int rc = fr_buf_append(&c->plain, v, n);
        if (rc < 0) {
            return rc;
        }
    }
    c->dict_on = false;
    pq_dict_free(&c->dict);
    return FR_OK;
}

static int flush_page(struct fr_pq_writer *w, struct pq_wcol *c)
{
    struct fr_buf *body = &w->body;
    int rc;
    if (w->pool) {
        /* The body goes to the compression thread: build it in a job. */
        if ((rc = pq_pool_acquire(w->pool, &body)) < 0) {
            return rc;
        }
    }
    fr_buf_reset(body);
    bool dict_page = c->dict_on;
    if (dict_page && !c->dict_checked) {
        c->dict_checked = true;
        int bw = pq_bit_width(c->dict.n ? c->dict.n - 1 : 0);
        bw = bw ? bw : 1;
        uint64_t with_dict = c->dict.vals.len + ((uint64_t)c->page_nn * (uint64_t)bw + 7) / 8;
        if (with_dict * 4 >= c->page_plain * 3) {
            c->dict_refused = true;
            rc = dict_to_plain(c);
            if (rc < 0) {
                return rc;
            }
            dict_page = false;
        }
    }
    if (c->optional) {
        rc = fr_buf_reserve(body, 4);
        if (rc < 0) {
            return rc;
        }
        body->len = 4;
        rc = pq_hyb_encode_u8(body, c->defs, c->page_n, 1);
        if (rc < 0) {
            return rc;
        }
        pq_put_u32le(body->data, (uint32_t)(body->len - 4));
    }
    struct pq_page pg = {.type = PQ_PAGE_DATA,
                         .has_data = true,
                         .num_values = (int32_t)c->page_n,
                         .def_encoding = PQ_ENC_RLE,
                         .rep_encoding = PQ_ENC_RLE};
    const uint8_t *src = body->data;
    size_t len = body->len;
    if (dict_page) {
        int bw = pq_bit_width(c->dict.n ? c->dict.n - 1 : 0);
        bw = bw ? bw : 1;
        rc = fr_buf_putc(body, (uint8_t)bw);
        if (rc == FR_OK) {
            rc = pq_hyb_encode_u32(body, c->idx, c->page_nn, bw);
        }
        if (rc < 0) {
            return rc;
        }
        src = body->data;
        len = body->len;
        pg.encoding = PQ_ENC_RLE_DICTIONARY;
        c->dict_used = true;
    } else {
        if (c->bool_bits) {
            rc = fr_buf_putc(&c->plain, c->bool_acc);
            if (rc < 0) {
                return rc;
            }
        }
        if (c->delta) {
            /* After the levels, if any: the values as deltas. */
            rc = pq_dbp_encode_i64(body, c->plain.data, c->page_nn);
            if (rc < 0) {
                return rc;
            }
            src = body->data;
            len = body->len;
        } else if (w->pool && !c->optional) {
            /* No levels: the job takes the values' buffer, the column the
             * job's (emptied below), instead of copying the page. */
            struct fr_buf vals = c->plain;
            c->plain.data = body->data;
            c->plain.alloc = body->alloc;
            body->data = vals.data;
            body->len = vals.len;
            body->alloc = vals.alloc;
        } else if (c->optional || w->pool) {
            rc = fr_buf_append(body, c->plain.data, c->plain.len);
            if (rc < 0) {
                return rc;
            }
            src = body->data;
            len = body->len;
        } else {
            src = c->plain.data; /* no levels: compress the values in place */
            len = c->plain.len;
        }
        pg.encoding = c->delta ? PQ_ENC_DELTA_BINARY_PACKED : PQ_ENC_PLAIN;
    }
    /* Dictionary indices are not the values: only PLAIN pages of a random
     * column are. */
    enum pq_comp_mode mode = c->random && !dict_page ? PQ_COMP_RANDOM : PQ_COMP_DEFAULT;
    if (w->pool) {
        pq_pool_submit(w->pool, mode, &pg, &c->chunk, &c->chunk_uncomp);
    } else {
        rc = emit_page(w, mode, &pg, src ? src : (const uint8_t *)"", len, &c->chunk,
                       &c->chunk_uncomp);
        if (rc < 0) {
            return rc;
        }
    }
    c->encodings |= 1u << pg.encoding | 1u << PQ_ENC_RLE;
    c->page_n = c->page_nn = 0;
    c->bool_acc = c->bool_bits = 0;
    fr_buf_reset(&c->plain);
    return FR_OK;
}

static inline int maybe_flush(struct fr_pq_writer *w, struct pq_wcol *c)
{
    size_t pb = w->opts.page_bytes;
    if (c->page_n >= w->opts.page_rows || c->plain.len >= pb ||
        (c->dict_on && ((size_t)c->page_nn * 4 >= pb || (!c->dict_checked && c->page_plain >= pb)))) {
        return flush_page(w, c);
    }
    return FR_OK;
}

/* The dictionary is full: write the page it encodes, continue PLAIN. */
static int dict_fallback(struct fr_pq_writer *w, struct pq_wcol *c)
{
    if (c->page_n > 0) {
        int rc = flush_page(w, c);
        if (rc < 0) {
            return rc;
        }
    }
    c->dict_on = false;
    c->dict_checked = true;
    return FR_OK;
}

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
            return maybe_flush(w, c);
        }
        if (rc != FR_ETOOBIG) {
            return rc;
        }
        rc = dict_fallback(w, c);
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
    return maybe_flush(w, c);
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
    return maybe_flush(w, c);
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
            return maybe_flush(w, c);
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
        rc = dict_fallback(w, c);
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
    return maybe_flush(w, c);
}

static inline int put_null(struct fr_pq_writer *w, struct pq_wcol *c)
{
    c->nulls++;
    put_level(c, 0);
    return maybe_flush(w, c);
}

/* ----------------------------------------------------------- row groups */

/* Merge a chunk's bounds into the file totals. lo/hi are the chunk's
 * statistics bytes (strings possibly truncated / bumped). */
static int fstat_merge(struct pq_wcol *c, const uint8_t *lo, size_t lolen, bool lo_exact,
                       const uint8_t *hi, size_t hilen, bool hi_exact)
{
    struct fstat *f = &c->file;
    bool first = !f->has_bounds;
    f->has_bounds = true;
    if (c->type == FR_PQ_STRING) {
        int cmp = first ? -1 : pq_str_cmp(lo, lolen, f->smin.data, f->smin.len);
        if (cmp < 0 || (cmp == 0 && lo_exact)) {
            fr_buf_reset(&f->smin);
            int rc = fr_buf_append(&f->smin, lo, lolen);
            if (rc < 0) {
                return rc;
            }
            f->min_exact = lo_exact;
        }
        cmp = first ? 1 : pq_str_cmp(hi, hilen, f->smax.data, f->smax.len);
        if (cmp > 0 || (cmp == 0 && hi_exact)) {
            fr_buf_reset(&f->smax);
            int rc = fr_buf_append(&f->smax, hi, hilen);
            if (rc < 0) {
                return rc;
            }
            f->max_exact = hi_exact;
        }
        return FR_OK;
    }
    f->min_exact = f->max_exact = true;
    if (c->type == FR_PQ_DOUBLE) {
        double mn = c->dmin == 0 ? -0.0 : c->dmin, mx = c->dmax == 0 ? 0.0 : c->dmax;
        if (first || mn < f->dmin) {
            f->dmin = mn;
        }
        if (first || mx > f->dmax) {
            f->dmax = mx;
        }
        return FR_OK;
    }
    if (first || c->imin < f->imin) {
        f->imin = c->imin;
    }
    if (first || c->imax > f->imax) {
        f->imax = c->imax;
    }
    return FR_OK;
}

/* Fill ch->stats for column c's chunk; the bytes live in *mem (owned by
 * the writer until it is freed). */
static int chunk_stats(struct fr_pq_writer *w, struct pq_wcol *c, struct pq_chunk *ch,
                       uint8_t **mem)
{
    struct pq_stats *st = &ch->stats;
    ch->has_stats = true;
    st->has = PQ_ST_NULL_COUNT;
    st->null_count = (int64_t)c->nulls;
    if (!c->has_minmax) {
        return FR_OK;
    }
    uint8_t lo[8], hi[8];
    size_t lolen = c->width, hilen = c->width;
    bool lo_exact = true, hi_exact = true;
    uint8_t *m;
    switch (c->type) {
    case FR_PQ_BOOL:
        lo[0] = (uint8_t)c->imin;
        hi[0] = (uint8_t)c->imax;
        lolen = hilen = 1;
        break;
    case FR_PQ_DOUBLE: {
        double mn = c->dmin == 0 ? -0.0 : c->dmin, mx = c->dmax == 0 ? 0.0 : c->dmax;
        memcpy(lo, &mn, 8);
        memcpy(hi, &mx, 8);
        break;
    }
    case FR_PQ_STRING:
        break;
    default:
        memcpy(lo, &c->imin, c->width); /* little-endian: the low bytes */
        memcpy(hi, &c->imax, c->width);
        break;
    }
    if (c->type == FR_PQ_STRING) {
        struct pq_bound b;
        int rc = pq_str_bounds(c->smin.data, c->smin.len, c->smax.data, c->smax.len,
                               w->opts.stats_max_bytes, &b);
        if (rc < 0) {
            return rc;
        }
        m = b.mem;
        lolen = b.lolen;
        hilen = b.hilen;
        lo_exact = b.lo_exact;
        hi_exact = b.hi_exact;
    } else {
        m = malloc(lolen + hilen);
        if (!m) {
            return FR_ENOMEM;
        }
        memcpy(m, lo, lolen);
        memcpy(m + lolen, hi, hilen);
    }
    *mem = m;
    st->has |= PQ_ST_MIN_VALUE | PQ_ST_MAX_VALUE;
    st->min_value = (struct pq_bytes){m, (uint32_t)lolen};
    st->max_value = (struct pq_bytes){m + lolen, (uint32_t)hilen};
    if (c->type == FR_PQ_STRING) {
        st->has |= PQ_ST_MIN_EXACT | PQ_ST_MAX_EXACT;
        st->min_exact = lo_exact;
        st->max_exact = hi_exact;
    } else if (c->type != FR_PQ_BOOL) {
        /* Signed types: the deprecated fields say the same for old readers. */
        st->has |= PQ_ST_MIN | PQ_ST_MAX;
        st->min = st->min_value;
        st->max = st->max_value;
    }
    return fstat_merge(c, m, lolen, lo_exact, m + lolen, hilen, hi_exact);
}

static void col_reset_chunk(const struct fr_pq_writer *w, struct pq_wcol *c)
{
    c->count = 0;
    fr_buf_reset(&c->chunk);
    c->chunk_uncomp = 0;
    c->encodings = 0;
    c->nulls = c->nans = 0;
    c->has_minmax = false;
    c->dict_on = c->type != FR_PQ_BOOL && w->opts.dict_max_bytes > 0 && !c->dict_never &&
                 !c->dict_refused;
    c->dict_used = false;
    c->dict_checked = false;
    c->page_plain = 0;
    pq_dict_clear(&c->dict);
}

static int grow_row_groups(struct fr_pq_writer *w)
{
    if (w->nrgs < w->rgs_cap) {
        return FR_OK;
    }
    uint32_t cap = w->rgs_cap ? w->rgs_cap * 2 : 8;
    struct pq_rowgroup *rgs = realloc(w->rgs, cap * sizeof *rgs);
    if (!rgs) {
        return FR_ENOMEM;
    }
    w->rgs = rgs;
    uint8_t **mem = realloc(w->chunk_mem, (size_t)cap * w->ncols * sizeof *mem);
    if (!mem) {
        return FR_ENOMEM;
    }
    w->chunk_mem = mem;
    w->rgs_cap = cap;
    return FR_OK;
}

static struct pq_page dict_page_header(const struct pq_wcol *c)
{
    return (struct pq_page){.type = PQ_PAGE_DICTIONARY,
                            .has_dict = true,
                            .num_values = (int32_t)c->dict.n,
                            .encoding = PQ_ENC_PLAIN};
}

static int flush_row_group(struct fr_pq_writer *w)
{
    if (w->nrgs >= PQ_MAX_ROW_GROUPS) {
        return pq_err(FR_ETOOBIG, "more than %u row groups: raise row_group_bytes",
                      PQ_MAX_ROW_GROUPS);
    }
    int rc = grow_row_groups(w);
    if (rc < 0) {
        return rc;
    }
    struct pq_rowgroup *rg = &w->rgs[w->nrgs];
    memset(rg, 0, sizeof *rg);
    uint8_t **mem = &w->chunk_mem[(size_t)w->nrgs * w->ncols];
    memset(mem, 0, w->ncols * sizeof *mem);
    rg->chunks = calloc(w->ncols, sizeof *rg->chunks);
    if (!rg->chunks) {
        return FR_ENOMEM;
    }
    rg->nchunks = w->ncols;
    rg->ordinal = (int16_t)w->nrgs;
    rg->num_rows = (int64_t)w->rg_rows;
    rg->file_offset = (int64_t)w->offset;
    w->nrgs++;
    for (uint32_t i = 0; i < w->ncols; i++) {
        if (w->cols[i].page_n > 0 && (rc = flush_page(w, &w->cols[i])) < 0) {
            return rc;
        }
    }
    /* Dictionary pages go first in their chunks, so they are compressed
     * (on the compression thread when there is one) before anything is
     * written. */
    for (uint32_t i = 0; w->pool && i < w->ncols; i++) {
        struct pq_wcol *c = &w->cols[i];
        fr_buf_reset(&c->dict_page);
        c->dict_uncomp = 0;
        if (c->dict_used) {
            struct fr_buf *unused;
            if ((rc = pq_pool_acquire(w->pool, &unused)) < 0) {
                return rc;
            }
            struct pq_page pg = dict_page_header(c);
            pq_pool_submit_src(w->pool, &pg, c->dict.vals.data, c->dict.vals.len, &c->dict_page,
                               &c->dict_uncomp);
        }
    }
    if (w->pool && (rc = pq_pool_drain(w->pool)) < 0) {
        return rc;
    }
    for (uint32_t i = 0; i < w->ncols; i++) {
        struct pq_wcol *c = &w->cols[i];
        struct pq_chunk *ch = &rg->chunks[i];
        uint64_t start = w->offset, uncomp = 0;
        struct fr_buf *dictbuf = w->pool ? &c->dict_page : &w->dictbuf;
        if (!w->pool) {
            fr_buf_reset(&w->dictbuf);
        }
        if (c->dict_used) {
            if (w->pool) {
                uncomp = c->dict_uncomp;
            } else {
                struct pq_page pg = dict_page_header(c);
                const uint8_t *body =
                    c->dict.vals.data ? c->dict.vals.data : (const uint8_t *)"";
                rc = emit_page(w, PQ_COMP_DEFAULT, &pg, body, c->dict.vals.len, &w->dictbuf,
                               &uncomp);
                if (rc < 0) {
                    return rc;
                }
            }
            c->encodings |= 1u << PQ_ENC_PLAIN;
            ch->has_dict_offset = true;
            ch->dict_page_offset = (int64_t)start;
        }
        if ((rc = out_write(w, dictbuf->data, dictbuf->len)) < 0 ||
            (rc = out_write(w, c->chunk.data, c->chunk.len)) < 0) {
            return rc;
        }
        ch->file_offset = 0; /* deprecated: "writers should write 0" */
        ch->type = c->phys;
        ch->encodings = c->encodings;
        ch->path = (struct pq_bytes){(const uint8_t *)c->name, c->name_len};
        ch->path_len = 1;
        ch->codec = (int32_t)w->opts.codec;
        ch->num_values = (int64_t)c->count;
        ch->total_uncompressed = (int64_t)(uncomp + c->chunk_uncomp);
        ch->total_compressed = (int64_t)(dictbuf->len + c->chunk.len);
        ch->data_page_offset = (int64_t)(start + dictbuf->len);
        ch->has_meta = true;
        if ((rc = chunk_stats(w, c, ch, &mem[i])) < 0) {
            return rc;
        }
        c->file.values += c->count;
        c->file.nulls += c->nulls;
        c->file.nans += c->nans;
        c->file.comp += (uint64_t)ch->total_compressed;
        c->file.uncomp += (uint64_t)ch->total_uncompressed;
        rg->total_byte_size += ch->total_uncompressed;
        rg->total_compressed += ch->total_compressed;
        col_reset_chunk(w, c);
    }
    w->rg_rows = 0;
    w->pool_rg_base = w->pool ? pq_pool_appended(w->pool) : 0;
    return FR_OK;
}

/* Bytes buffered for the current row group. With the compression thread
 * the chunk buffers grow on the worker, so their total comes from its
 * counter (pages still queued are not counted: at most PQ_POOL_JOBS). */
static size_t rg_estimate(const struct fr_pq_writer *w)
{
    size_t est = w->pool ? pq_pool_appended(w->pool) - w->pool_rg_base : 0;
    for (uint32_t i = 0; i < w->ncols; i++) {
        const struct pq_wcol *c = &w->cols[i];
        est += (w->pool ? 0 : c->chunk.len) + c->plain.len + c->page_nn + c->dict.vals.len;
    }
    return est;
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
        col_reset_chunk(w, c);
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
    if ((rc = out_write(w, PQ_MAGIC, PQ_MAGIC_LEN)) < 0) {
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
        return fail(w, rc);
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
    if (rg_estimate(w) >= w->opts.row_group_bytes) {
        return fail(w, flush_row_group(w));
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
                return fail(w, rc);
            }
            w->cols[i].count += r1 - r0;
        }
        w->rg_rows += r1 - r0;
        w->rows += r1 - r0;
        if (rg_estimate(w) >= w->opts.row_group_bytes && (rc = flush_row_group(w)) < 0) {
            return fail(w, rc);
        }
        r0 = r1;
    }
    return FR_OK;
}

/* ----------------------------------------------------------------- close */

static void leaf_elem(const struct pq_wcol *c, struct pq_selem *e)
{
    e->name = (struct pq_bytes){(const uint8_t *)c->name, c->name_len};
    e->type = c->phys;
    e->repetition = c->optional ? PQ_OPTIONAL : PQ_REQUIRED;
    e->converted = -1;
    e->field_id = c->field_id;
    e->logical = PQ_LT_NONE;
    switch (c->type) {
    case FR_PQ_STRING:
        e->converted = PQ_CT_UTF8;
        e->logical = PQ_LT_STRING;
        break;
    case FR_PQ_DATE:
        e->converted = PQ_CT_DATE;
        e->logical = PQ_LT_DATE;
        break;
    case FR_PQ_TIMESTAMP:
    case FR_PQ_TIMESTAMP_NTZ:
        e->converted = PQ_CT_TIMESTAMP_MICROS;
        e->logical = PQ_LT_TIMESTAMP;
        e->ts_utc = c->type == FR_PQ_TIMESTAMP;
        e->ts_unit = PQ_UNIT_MICROS;
        break;
    default:
        break;
    }
}

static int write_footer(struct fr_pq_writer *w)
{
    int rc = FR_ENOMEM;
    struct pq_selem *schema = calloc(w->ncols + 1, sizeof *schema);
    uint8_t *orders = calloc(w->ncols, 1);
    if (!schema || !orders) {
        goto cleanup;
    }
    schema[0] = (struct pq_selem){.name = {(const uint8_t *)"schema", 6},
                                  .type = -1,
                                  .repetition = -1,
                                  .num_children = (int32_t)w->ncols,
                                  .converted = -1,
                                  .field_id = -1};
    for (uint32_t i = 0; i < w->ncols; i++) {
        leaf_elem(&w->cols[i], &schema[i + 1]);
        orders[i] = 1;
    }
    static const char created_by[] = "freshet version " FR_VERSION;
    struct pq_meta meta = {
        .version = 1,
        .schema = schema,
        .nschema = w->ncols + 1,
        .num_rows = (int64_t)w->rows,
        .rgs = w->rgs,
        .nrgs = w->nrgs,
        .kv = w->kv,
        .nkv = w->nkv,
        .created_by = {(const uint8_t *)created_by, sizeof created_by - 1},
        .has_created_by = true,
        .ncolumn_orders = w->ncols,
        .column_orders = orders,
    };
    fr_buf_reset(&w->footer);
    rc = pq_meta_encode(&meta, &w->footer);
    if (rc == FR_OK) {
        uint8_t tail[PQ_TAIL_LEN];
        pq_put_u32le(tail, (uint32_t)w->footer.len);
        memcpy(tail + 4, PQ_MAGIC, PQ_MAGIC_LEN);
        rc = fr_buf_append(&w->footer, tail, sizeof tail);
    }
    if (rc < 0) {
        rc = pq_err(rc, "encoding the footer: %s", fr_strerror(rc));
        goto cleanup;
    }
    rc = out_write(w, w->footer.data, w->footer.len);

cleanup:
    free(schema);
    free(orders);
    return rc;
}

static int make_stats(const struct fr_pq_writer *w, struct fr_pq_file_stats *st)
{
    st->rows = w->rows;
    st->file_bytes = w->offset;
    st->ncols = w->ncols;
    st->nrow_groups = w->nrgs;
    st->cols = calloc(w->ncols, sizeof *st->cols);
    st->row_group_offsets = calloc(w->nrgs ? w->nrgs : 1, sizeof *st->row_group_offsets);
    if (!st->cols || !st->row_group_offsets) {
        return FR_ENOMEM;
    }
    for (uint32_t g = 0; g < w->nrgs; g++) {
        st->row_group_offsets[g] = (uint64_t)w->rgs[g].file_offset;
    }
    for (uint32_t i = 0; i < w->ncols; i++) {
        const struct pq_wcol *c = &w->cols[i];
        const struct fstat *f = &c->file;
        struct fr_pq_col_stats *cs = &st->cols[i];
        cs->value_count = f->values;
        cs->null_count = f->nulls;
        cs->nan_count = f->nans;
        cs->compressed_bytes = f->comp;
        cs->uncompressed_bytes = f->uncomp;
        cs->has_bounds = f->has_bounds;
        cs->min_exact = f->min_exact;
        cs->max_exact = f->max_exact;
        cs->min.type = cs->max.type = c->type;
        if (!f->has_bounds) {
            continue;
        }
        switch (c->api) {
        case API_BOOL:
            cs->min.v.b = f->imin != 0;
            cs->max.v.b = f->imax != 0;
            break;
        case API_I32:
            cs->min.v.i32 = (int32_t)f->imin;
            cs->max.v.i32 = (int32_t)f->imax;
            break;
        case API_I64:
            cs->min.v.i64 = f->imin;
            cs->max.v.i64 = f->imax;
            break;
        case API_F64:
            cs->min.v.f64 = f->dmin;
            cs->max.v.f64 = f->dmax;
            break;
        default: {
            char *lo = malloc(f->smin.len + 1), *hi = malloc(f->smax.len + 1);
            if (!lo || !hi) {
                free(lo);
                free(hi);
                return FR_ENOMEM;
            }
            if (f->smin.len) {
                memcpy(lo, f->smin.data, f->smin.len);
            }
            if (f->smax.len) {
                memcpy(hi, f->smax.data, f->smax.len);
            }
            lo[f->smin.len] = hi[f->smax.len] = 0;
            cs->min.v.str = (struct fr_pq_str){lo, (uint32_t)f->smin.len};
            cs->max.v.str = (struct fr_pq_str){hi, (uint32_t)f->smax.len};
            break;
        }
        }
    }
    return FR_OK;
}

void fr_pq_file_stats_free(struct fr_pq_file_stats *st)
{
    if (!st) {
        return;
    }
    for (uint32_t i = 0; st->cols && i < st->ncols; i++) {
        if (st->cols[i].min.type == FR_PQ_STRING) {
            free((void *)st->cols[i].min.v.str.ptr);
            free((void *)st->cols[i].max.v.str.ptr);
        }
    }
    free(st->cols);
    free(st->row_group_offsets);
    memset(st, 0, sizeof *st);
}

int fr_pq_writer_close(struct fr_pq_writer *w, struct fr_pq_file_stats *stats)
{
    if (stats) {
        memset(stats, 0, sizeof *stats);
    }
    if (!w) {
        return pq_err(FR_EINVAL, "no writer");
    }
    if (w->closed) {
        return pq_err(FR_ESTATE, "the writer is already closed");
    }
    int rc = w->failed;
    if (rc == FR_OK && w->row_filled) {
        rc = pq_err(FR_ESTATE, "row %llu is incomplete (%u of %u columns)",
                    (unsigned long long)w->rows, w->row_filled, w->ncols);
    }
    if (rc == FR_OK && w->rg_rows) {
        rc = flush_row_group(w);
    }
    if (rc == FR_OK) {
        rc = write_footer(w);
    }
    if (rc < 0 || w->out_state != OUT_OPEN) {
        rc = rc < 0 ? rc : pq_err(FR_ESTATE, "the output is gone");
        fail(w, rc);
        out_abort(w);
        return rc;
    }
    rc = w->out.ops->close(w->out.ctx);
    w->out_state = OUT_CLOSED;
    if (rc < 0) {
        return fail(w, rc);
    }
    w->closed = true;
    if (stats && (rc = make_stats(w, stats)) < 0) {
        fr_pq_file_stats_free(stats);
        return pq_err(rc, "out of memory for the file statistics");
    }
    return FR_OK;
}

size_t pq_writer_mem(const struct fr_pq_writer *w)
{
    size_t n = sizeof *w + w->body.alloc + w->comp.alloc + w->dictbuf.alloc + w->footer.alloc;
    for (uint32_t i = 0; i < w->ncols; i++) {
        const struct pq_wcol *c = &w->cols[i];
        n += sizeof *c + c->plain.alloc + c->chunk.alloc + c->dict_page.alloc + c->smin.alloc +
             c->smax.alloc +
             c->file.smin.alloc + c->file.smax.alloc + c->dict.vals.alloc +
             (c->dict.slots ? ((size_t)c->dict.mask + 1) * (c->width ? 8 : 16) : 0) +
             (size_t)c->dict.offs_cap * sizeof *c->dict.offs +
             (c->defs ? w->opts.page_rows : 0) +
             (c->idx ? (size_t)w->opts.page_rows * sizeof *c->idx : 0);
    }
    n += w->pool ? pq_pool_mem(w->pool) : 0;
    n += (size_t)w->rgs_cap * (sizeof *w->rgs + w->ncols * sizeof *w->chunk_mem);
    n += (size_t)w->nrgs * w->ncols * (sizeof(struct pq_chunk) + 32);
    return n;
}

void fr_pq_writer_free(struct fr_pq_writer *w)
{
    if (!w) {
        return;
    }
    out_abort(w);
    pq_pool_free(w->pool); /* finishes queued pages before the buffers go */
    for (uint32_t i = 0; w->cols && i < w->ncols; i++) {
        struct pq_wcol *c = &w->cols[i];
        free(c->name);
        free(c->defs);
        free(c->idx);
        fr_buf_free(&c->plain);
        fr_buf_free(&c->chunk);
        fr_buf_free(&c->dict_page);
        fr_buf_free(&c->smin);
        fr_buf_free(&c->smax);
        fr_buf_free(&c->file.smin);
        fr_buf_free(&c->file.smax);
        pq_dict_free(&c->dict);
    }
    for (uint32_t g = 0; g < w->nrgs; g++) {
        free(w->rgs[g].chunks);
        for (uint32_t i = 0; i < w->ncols; i++) {
            free(w->chunk_mem[(size_t)g * w->ncols + i]);
        }
    }
    for (uint32_t i = 0; w->kv && i < w->nkv; i++) {
        free((void *)w->kv[i].key.ptr);
        free((void *)w->kv[i].value.ptr);
    }
    free(w->kv);
    free(w->rgs);
    free(w->chunk_mem);
    free(w->cols);
    fr_buf_free(&w->body);
    fr_buf_free(&w->comp);
    fr_buf_free(&w->dictbuf);
    fr_buf_free(&w->footer);
    pq_codec_free(w->codec);
    free(w);
}
