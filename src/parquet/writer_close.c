/*
 * writer_close.c — the end of a Parquet file: the schema elements and the
 * footer (FileMetaData, its length and the magic), the per-file statistics
 * handed to the caller, close and free. The state is in writer_int.h. One
 * thread at a time per writer.
 */
#include "parquet/writer_int.h"

#include <stdlib.h>

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
    rc = pq_w_out_write(w, w->footer.data, w->footer.len);

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
        rc = pq_w_flush_row_group(w);
    }
    if (rc == FR_OK) {
        rc = write_footer(w);
    }
    if (rc < 0 || w->out_state != OUT_OPEN) {
        rc = rc < 0 ? rc : pq_err(FR_ESTATE, "the output is gone");
        pq_w_fail(w, rc);
        pq_w_out_abort(w);
        return rc;
    }
    rc = w->out.ops->close(w->out.ctx);
    w->out_state = OUT_CLOSED;
    if (rc < 0) {
        return pq_w_fail(w, rc);
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
    pq_w_out_abort(w);
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
