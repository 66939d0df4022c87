/*
 * writer_chunk.c — the Parquet writer's output, pages and row groups: a
 * full page is encoded, compressed (here or on the compression thread,
 * pool.c) and appended, header first, to its column's chunk buffer; a row
 * group writes each column's chunk, dictionary page first, and records the
 * chunk's statistics for the footer. The data page layout, the dictionary
 * policy and the invariants are at the top of writer.c; the state is in
 * writer_int.h. One thread at a time per writer.
 */
#include "parquet/writer_int.h"

#include <stdio.h>
#include <stdlib.h>

/* ---------------------------------------------------------------- output */

int pq_w_fail(struct fr_pq_writer *w, int rc)
{
    if (rc < 0 && !w->failed) {
        w->failed = rc;
    }
    return rc;
}

int pq_w_out_write(struct fr_pq_writer *w, const void *p, size_t len)
{
    if (len == 0) {
        return FR_OK;
    }
    int rc = w->out.ops->write(w->out.ctx, p, len);
    if (rc < 0) {
        if (!fr_pq_errmsg()[0]) {
            pq_err(rc, "output write failed: %s", fr_strerror(rc));
        }
        return pq_w_fail(w, rc);
    }
    w->offset += len;
    return FR_OK;
}

void pq_w_out_abort(struct fr_pq_writer *w)
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

int pq_w_flush_page(struct fr_pq_writer *w, struct pq_wcol *c)
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

/* The dictionary is full: write the page it encodes, continue PLAIN. */
int pq_w_dict_fallback(struct fr_pq_writer *w, struct pq_wcol *c)
{
    if (c->page_n > 0) {
        int rc = pq_w_flush_page(w, c);
        if (rc < 0) {
            return rc;
        }
    }
    c->dict_on = false;
    c->dict_checked = true;
    return FR_OK;
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

void pq_w_col_reset_chunk(const struct fr_pq_writer *w, struct pq_wcol *c)
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

int pq_w_flush_row_group(struct fr_pq_writer *w)
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
        if (w->cols[i].page_n > 0 && (rc = pq_w_flush_page(w, &w->cols[i])) < 0) {
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
        if ((rc = pq_w_out_write(w, dictbuf->data, dictbuf->len)) < 0 ||
            (rc = pq_w_out_write(w, c->chunk.data, c->chunk.len)) < 0) {
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
        pq_w_col_reset_chunk(w, c);
    }
    w->rg_rows = 0;
    w->pool_rg_base = w->pool ? pq_pool_appended(w->pool) : 0;
    return FR_OK;
}

/* Bytes buffered for the current row group. With the compression thread
 * the chunk buffers grow on the worker, so their total comes from its
 * counter (pages still queued are not counted: at most PQ_POOL_JOBS). */
size_t pq_w_rg_estimate(const struct fr_pq_writer *w)
{
    size_t est = w->pool ? pq_pool_appended(w->pool) - w->pool_rg_base : 0;
    for (uint32_t i = 0; i < w->ncols; i++) {
        const struct pq_wcol *c = &w->cols[i];
        est += (w->pool ? 0 : c->chunk.len) + c->plain.len + c->page_nn + c->dict.vals.len;
    }
    return est;
}
