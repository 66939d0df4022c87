/*
 * reader.c — the Parquet reader: finds and validates the footer, maps the
 * schema to freshet's types, decodes chunk statistics, skips row groups by
 * predicate, and drives one column cursor (column.c) per projected column.
 *
 * Opening reads the last 8 bytes (u32 LE footer length, "PAR1"), the first
 * 4 ("PAR1") and the footer, then checks everything later code relies on,
 * so a scan never meets an offset outside the file:
 *   - the schema is flat: a root whose children are all leaves, each
 *     REQUIRED or OPTIONAL;
 *   - every row group has one chunk per leaf, of the leaf's physical type,
 *     holding exactly the row group's row count of values;
 *   - every chunk's byte range [first page, + total_compressed_size) lies
 *     between the leading magic and the footer;
 *   - the row groups' rows add up to the file's num_rows.
 * A file failing any of these is FR_ECORRUPT (FR_ETRUNC when it is shorter
 * than its own footer claims), with fr_pq_errmsg() naming the check.
 *
 * Types (ICEBERG-PARQUET-NOTES §1.6, and what DuckDB writes):
 *   BOOLEAN                                        -> BOOL
 *   INT32, no annotation / INT_8..INT_32 / signed INTEGER(<=32) -> INT32
 *   INT32 DATE                                     -> DATE
 *   INT64, no annotation / INT_8..INT_64 / signed INTEGER       -> INT64
 *   INT64 TIMESTAMP(utc, unit) / TIMESTAMP_MICROS / _MILLIS
 *                                                  -> TIMESTAMP (micros)
 *   INT64 TIMESTAMP(not utc, unit)                 -> TIMESTAMP_NTZ (micros)
 *   DOUBLE                                         -> DOUBLE
 *   BYTE_ARRAY STRING / UTF8                       -> STRING (bytes as stored)
 *   anything else                                  -> type 0, not readable
 *
 * The reader is immutable after open: scans on other threads may share it.
 */
#include "parquet/parquet_int.h"

#include "core/crc32.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define MIB ((size_t)1 << 20)

struct rinfo {
    enum fr_pq_type type; /* 0: not readable */
    uint8_t phys;
    int32_t ts_scale;
};

struct fr_pq_reader {
    struct fr_pq_in in;
    struct fr_pq_read_opts opts;
    uint8_t *footer;
    uint64_t data_end; /* offset of the footer */
    struct pq_meta meta;
    uint32_t ncols;
    struct fr_pq_column *cols;
    char *names;
    struct rinfo *info;
    struct fr_pq_schema schema;
    char *created_by;
};

struct fr_pq_scan {
    struct fr_pq_reader *r;
    uint32_t ncols;
    uint32_t *colidx;
    struct pq_rcol **cols;
    struct fr_pq_vec *vecs;
    struct fr_pq_batch batch;
    uint8_t *skip;
    uint32_t skipped;
    int64_t rg;
    uint64_t rg_left;
    uint64_t row;
    struct pq_codec *codec;
    struct pq_arena arena;
    int failed;
};

void fr_pq_read_opts_default(struct fr_pq_read_opts *opts)
{
    opts->max_footer_bytes = 64 * MIB;
    opts->max_page_bytes = 256 * MIB;
    opts->batch_rows = 4096;
}

/* ----------------------------------------------------------------- types */

static void map_type(const struct pq_selem *e, struct rinfo *ri)
{
    int ct = e->converted;
    int lt = e->logical;
    bool plain = lt == PQ_LT_NONE && ct < 0;
    bool int_ct = lt == PQ_LT_NONE && ct >= 15 && ct <= 18; /* INT_8 .. INT_64 */
    bool int_lt = lt == PQ_LT_INTEGER && e->int_signed;
    ri->type = 0;
    ri->phys = (uint8_t)e->type;
    ri->ts_scale = 0;
    switch (e->type) {
    case PQ_BOOLEAN:
        ri->type = plain ? FR_PQ_BOOL : 0;
        break;
    case PQ_INT32:
        if (lt == PQ_LT_DATE || (lt == PQ_LT_NONE && ct == PQ_CT_DATE)) {
            ri->type = FR_PQ_DATE;
        } else if (plain || (int_ct && ct != PQ_CT_INT_64) || (int_lt && e->int_bits <= 32)) {
            ri->type = FR_PQ_INT32;
        }
        break;
    case PQ_INT64:
        if (lt == PQ_LT_TIMESTAMP) {
            ri->type = e->ts_utc ? FR_PQ_TIMESTAMP : FR_PQ_TIMESTAMP_NTZ;
            ri->ts_scale = e->ts_unit == PQ_UNIT_MILLIS ? 1000
                           : e->ts_unit == PQ_UNIT_NANOS ? -1000
                                                         : 0;
        } else if (lt == PQ_LT_NONE && ct == PQ_CT_TIMESTAMP_MICROS) {
            ri->type = FR_PQ_TIMESTAMP;
        } else if (lt == PQ_LT_NONE && ct == PQ_CT_TIMESTAMP_MILLIS) {
            ri->type = FR_PQ_TIMESTAMP;
            ri->ts_scale = 1000;
        } else if (plain || int_ct || int_lt) {
            ri->type = FR_PQ_INT64;
        }
        break;
    case PQ_DOUBLE:
        ri->type = plain ? FR_PQ_DOUBLE : 0;
        break;
    case PQ_BYTE_ARRAY:
        if (lt == PQ_LT_STRING || (lt == PQ_LT_NONE && ct == PQ_CT_UTF8)) {
            ri->type = FR_PQ_STRING;
        }
        break;
    default:
        break;
    }
}

/* ------------------------------------------------------------ validation */

static uint64_t chunk_start(const struct pq_chunk *ch)
{
    if (ch->has_dict_offset && ch->dict_page_offset >= PQ_MAGIC_LEN &&
        ch->dict_page_offset < ch->data_page_offset) {
        return (uint64_t)ch->dict_page_offset;
    }
    return (uint64_t)ch->data_page_offset;
}

static int validate(struct fr_pq_reader *r)
{
    const struct pq_meta *m = &r->meta;
    if (m->nschema < 2) {
        return pq_err(FR_EUNSUPPORTED, "the file has no columns");
    }
    if (m->schema[0].num_children != (int32_t)(m->nschema - 1)) {
        return pq_err(FR_EUNSUPPORTED, "nested schemas are not supported");
    }
    r->ncols = m->nschema - 1;
    for (uint32_t i = 1; i < m->nschema; i++) {
        const struct pq_selem *e = &m->schema[i];
        if (e->num_children > 0 || e->type < 0) {
            return pq_err(FR_EUNSUPPORTED, "nested schemas are not supported");
        }
        if (e->repetition == PQ_REPEATED) {
            return pq_err(FR_EUNSUPPORTED, "repeated columns are not supported");
        }
        if (e->repetition != PQ_REQUIRED && e->repetition != PQ_OPTIONAL) {
            return pq_err(FR_ECORRUPT, "schema element %u has no valid repetition", i);
        }
    }
    if (m->num_rows < 0) {
        return pq_err(FR_ECORRUPT, "negative num_rows");
    }
    uint64_t total = 0;
    for (uint32_t g = 0; g < m->nrgs; g++) {
        const struct pq_rowgroup *rg = &m->rgs[g];
        if (rg->nchunks != r->ncols) {
            return pq_err(FR_ECORRUPT, "row group %u has %u chunks for %u columns", g,
                          rg->nchunks, r->ncols);
        }
        if (rg->num_rows < 0 || (uint64_t)rg->num_rows > (uint64_t)INT64_MAX - total) {
            return pq_err(FR_ECORRUPT, "row group %u: bad num_rows", g);
        }
        total += (uint64_t)rg->num_rows;
        for (uint32_t c = 0; c < rg->nchunks; c++) {
            const struct pq_chunk *ch = &rg->chunks[c];
            if (ch->type != m->schema[c + 1].type) {
                return pq_err(FR_ECORRUPT, "row group %u column %u: chunk type %d, schema %d", g,
                              c, ch->type, m->schema[c + 1].type);
            }
            if (ch->num_values != rg->num_rows) {
                return pq_err(FR_ECORRUPT,
                              "row group %u column %u: %lld values in %lld rows (metadata is "
                              "corrupt)",
                              g, c, (long long)ch->num_values, (long long)rg->num_rows);
            }
            uint64_t start = chunk_start(ch);
            if (ch->total_compressed < 0 || ch->data_page_offset < PQ_MAGIC_LEN ||
                start > r->data_end || (uint64_t)ch->total_compressed > r->data_end - start ||
                (ch->total_compressed > 0 &&
                 (uint64_t)ch->data_page_offset >= start + (uint64_t)ch->total_compressed)) {
                return pq_err(FR_ECORRUPT, "row group %u column %u: chunk bytes outside the file",
                              g, c);
            }
        }
    }
    if (total != (uint64_t)m->num_rows) {
        return pq_err(FR_ECORRUPT, "row groups hold %llu rows, the footer says %lld",
                      (unsigned long long)total, (long long)m->num_rows);
    }
    return FR_OK;
}

static int build_schema(struct fr_pq_reader *r)
{
    const struct pq_meta *m = &r->meta;
    size_t bytes = 0;
    for (uint32_t i = 1; i < m->nschema; i++) {
        bytes += m->schema[i].name.len + 1;
    }
    r->cols = calloc(r->ncols, sizeof *r->cols);
    r->info = calloc(r->ncols, sizeof *r->info);
    r->names = malloc(bytes ? bytes : 1);
    size_t cb = m->has_created_by ? m->created_by.len : 0;
    r->created_by = malloc(cb + 1);
    if (!r->cols || !r->info || !r->names || !r->created_by) {
        return FR_ENOMEM;
    }
    if (cb) {
        memcpy(r->created_by, m->created_by.ptr, cb);
    }
    r->created_by[cb] = 0;
    char *p = r->names;
    for (uint32_t i = 0; i < r->ncols; i++) {
        const struct pq_selem *e = &m->schema[i + 1];
        memcpy(p, e->name.ptr, e->name.len);
        p[e->name.len] = 0;
        map_type(e, &r->info[i]);
        r->cols[i] = (struct fr_pq_column){.name = p,
                                           .type = r->info[i].type,
                                           .optional = e->repetition == PQ_OPTIONAL,
                                           .field_id = e->field_id};
        p += e->name.len + 1;
    }
    r->schema.columns = r->cols;
    r->schema.ncolumns = r->ncols;
    return FR_OK;
}

/* ------------------------------------------------------------------ open */

int fr_pq_reader_open(const struct fr_pq_in *in, const struct fr_pq_read_opts *opts,
                      struct fr_pq_reader **reader)
{
    struct fr_pq_reader *r = NULL;
    int rc = FR_ENOMEM;
    *reader = NULL;
    pq_err_clear();
    r = calloc(1, sizeof *r);
    if (!r) {
        in->ops->close(in->ctx);
        return pq_err(FR_ENOMEM, "out of memory");
    }
    r->in = *in;
    if (opts) {
        r->opts = *opts;
    } else {
        fr_pq_read_opts_default(&r->opts);
    }
    if (r->opts.batch_rows < 1 || r->opts.batch_rows > (1u << 20) ||
        r->opts.max_page_bytes < 1024 || r->opts.max_page_bytes > ((size_t)1 << 31) ||
        r->opts.max_footer_bytes < 16) {
        rc = pq_err(FR_EINVAL, "read options out of range");
        goto cleanup;
    }
    uint64_t size = in->size;
    uint8_t tail[PQ_TAIL_LEN], head[PQ_MAGIC_LEN];
    if (size < PQ_MAGIC_LEN + PQ_TAIL_LEN) {
        rc = pq_err(FR_ETRUNC, "%llu bytes: too short for a Parquet file",
                    (unsigned long long)size);
        goto cleanup;
    }
    if ((rc = in->ops->read_at(in->ctx, tail, sizeof tail, size - PQ_TAIL_LEN)) < 0 ||
        (rc = in->ops->read_at(in->ctx, head, sizeof head, 0)) < 0) {
        pq_err(rc, "reading the file: %s", fr_strerror(rc));
        goto cleanup;
    }
    if (memcmp(tail + 4, "PARE", 4) == 0) {
        rc = pq_err(FR_EUNSUPPORTED, "encrypted Parquet footers are not supported");
        goto cleanup;
    }
    if (memcmp(tail + 4, PQ_MAGIC, 4) != 0 || memcmp(head, PQ_MAGIC, 4) != 0) {
        rc = pq_err(FR_ECORRUPT, "not a Parquet file (no PAR1 magic at %s)",
                    memcmp(head, PQ_MAGIC, 4) ? "the start" : "the end");
        goto cleanup;
    }
    uint32_t flen = pq_get_u32le(tail);
    if (flen > size - PQ_MAGIC_LEN - PQ_TAIL_LEN) {
        rc = pq_err(FR_ETRUNC, "footer of %u bytes does not fit in a %llu-byte file", flen,
                    (unsigned long long)size);
        goto cleanup;
    }
    if (flen > r->opts.max_footer_bytes) {
        rc = pq_err(FR_ETOOBIG, "footer of %u bytes exceeds max_footer_bytes", flen);
        goto cleanup;
    }
    r->data_end = size - PQ_TAIL_LEN - flen;
    r->footer = malloc(flen ? flen : 1);
    if (!r->footer) {
        rc = pq_err(FR_ENOMEM, "out of memory");
        goto cleanup;
    }
    if ((rc = in->ops->read_at(in->ctx, r->footer, flen, r->data_end)) < 0) {
        pq_err(rc, "reading the footer: %s", fr_strerror(rc));
        goto cleanup;
    }
    if ((rc = pq_meta_decode(r->footer, flen, &r->meta)) < 0) {
        if (rc == FR_ETRUNC) {
            rc = FR_ECORRUPT; /* the footer's bytes are all there: they lie */
        }
        goto cleanup;
    }
    if ((rc = validate(r)) < 0) {
        goto cleanup;
    }
    if ((rc = build_schema(r)) < 0) {
        pq_err(rc, "out of memory");
        goto cleanup;
    }
    *reader = r;
    return FR_OK;

cleanup:
    fr_pq_reader_free(r);
    return rc;
}

int fr_pq_reader_open_file(const char *path, const struct fr_pq_read_opts *opts,
                           struct fr_pq_reader **reader)
{
    struct fr_pq_in in;
    *reader = NULL;
    int rc = fr_pq_in_file(path, &in);
    return rc < 0 ? rc : fr_pq_reader_open(&in, opts, reader);
}

void fr_pq_reader_free(struct fr_pq_reader *r)
{
    if (!r) {
        return;
    }
    if (r->in.ops) {
        r->in.ops->close(r->in.ctx);
    }
    pq_meta_free(&r->meta);
    free(r->footer);
    free(r->cols);
    free(r->names);
    free(r->info);
    free(r->created_by);
    free(r);
}

/* ------------------------------------------------------------- metadata */

const struct fr_pq_schema *fr_pq_reader_schema(const struct fr_pq_reader *r)
{
    return &r->schema;
}

int fr_pq_reader_column(const struct fr_pq_reader *r, const char *name)
{
    for (uint32_t i = 0; i < r->ncols; i++) {
        if (strcmp(r->cols[i].name, name) == 0) {
            return (int)i;
        }
    }
    return pq_err(FR_ENOTFOUND, "no column '%s'", name);
}

uint64_t fr_pq_reader_rows(const struct fr_pq_reader *r)
{
    return (uint64_t)r->meta.num_rows;
}

uint32_t fr_pq_reader_row_groups(const struct fr_pq_reader *r)
{
    return r->meta.nrgs;
}

const char *fr_pq_reader_created_by(const struct fr_pq_reader *r)
{
    return r->created_by;
}

int fr_pq_reader_kv(const struct fr_pq_reader *r, const char *key, const char **value,
                    size_t *len)
{
    size_t klen = strlen(key);
    for (uint32_t i = 0; i < r->meta.nkv; i++) {
        const struct pq_kv *kv = &r->meta.kv[i];
        if (kv->key.len == klen && memcmp(kv->key.ptr, key, klen) == 0) {
            *value = kv->has_value ? (const char *)kv->value.ptr : "";
            *len = kv->has_value ? kv->value.len : 0;
            return FR_OK;
        }
    }
    return FR_ENOTFOUND;
}

/* Decode one statistics bound; false when it is absent or unusable. */
static bool stat_value(const struct rinfo *ri, struct pq_bytes b, struct fr_pq_value *out)
{
    out->type = ri->type;
    switch (ri->type) {
    case FR_PQ_BOOL:
        if (b.len != 1) {
            return false;
        }
        out->v.b = b.ptr[0] != 0;
        return true;
    case FR_PQ_INT32:
    case FR_PQ_DATE:
        if (b.len != 4) {
            return false;
        }
        memcpy(&out->v.i32, b.ptr, 4);
        return true;
    case FR_PQ_INT64:
    case FR_PQ_TIMESTAMP:
    case FR_PQ_TIMESTAMP_NTZ:
        if (b.len != 8) {
            return false;
        }
        memcpy(&out->v.i64, b.ptr, 8);
        return pq_ts_scale(ri->ts_scale, &out->v.i64);
    case FR_PQ_DOUBLE:
        if (b.len != 8) {
            return false;
        }
        memcpy(&out->v.f64, b.ptr, 8);
        return !isnan(out->v.f64);
    case FR_PQ_STRING:
        out->v.str = (struct fr_pq_str){(const char *)b.ptr, b.len};
        return true;
    default:
        return false;
    }
}

int fr_pq_reader_chunk(const struct fr_pq_reader *r, uint32_t row_group, uint32_t col,
                       struct fr_pq_chunk_info *info)
{
    memset(info, 0, sizeof *info);
    if (row_group >= r->meta.nrgs || col >= r->ncols) {
        return pq_err(FR_EINVAL, "row group %u / column %u out of range", row_group, col);
    }
    const struct pq_chunk *ch = &r->meta.rgs[row_group].chunks[col];
    const struct pq_stats *st = &ch->stats;
    const struct rinfo *ri = &r->info[col];
    info->rows = (uint64_t)r->meta.rgs[row_group].num_rows;
    info->codec = (enum fr_pq_codec)ch->codec;
    info->compressed_bytes = (uint64_t)ch->total_compressed;
    info->uncompressed_bytes = ch->total_uncompressed > 0 ? (uint64_t)ch->total_uncompressed : 0;
    info->offset = chunk_start(ch);
    info->has_dictionary = ch->has_dict_offset && ch->dict_page_offset >= PQ_MAGIC_LEN;
    if (!ch->has_stats) {
        return FR_OK;
    }
    if ((st->has & PQ_ST_NULL_COUNT) && st->null_count >= 0) {
        info->has_null_count = true;
        info->null_count = (uint64_t)st->null_count;
    }
    /* min_value / max_value follow the column order (TYPE_ORDER is the only
     * one defined for these types); the deprecated min / max were compared
     * signed, which is right for numbers and wrong for strings. */
    bool ordered = col >= r->meta.ncolumn_orders || r->meta.column_orders[col];
    struct pq_bytes lo, hi;
    if (ordered && (st->has & PQ_ST_MIN_VALUE) && (st->has & PQ_ST_MAX_VALUE)) {
        lo = st->min_value;
        hi = st->max_value;
    } else if (ri->type != FR_PQ_STRING && (st->has & PQ_ST_MIN) && (st->has & PQ_ST_MAX)) {
        lo = st->min;
        hi = st->max;
    } else {
        return FR_OK;
    }
    info->has_bounds = stat_value(ri, lo, &info->min) && stat_value(ri, hi, &info->max);
    return FR_OK;
}

/* Compare a and b as values of column type t: -1, 0, 1; *ok false when
 * they cannot be compared. */
static int val_cmp(enum fr_pq_type t, const struct fr_pq_value *a, const struct fr_pq_value *b,
                   bool *ok)
{
    *ok = true;
    switch (t) {
    case FR_PQ_BOOL:
        return (a->v.b > b->v.b) - (a->v.b < b->v.b);
    case FR_PQ_INT32:
    case FR_PQ_DATE:
        return (a->v.i32 > b->v.i32) - (a->v.i32 < b->v.i32);
    case FR_PQ_INT64:
    case FR_PQ_TIMESTAMP:
    case FR_PQ_TIMESTAMP_NTZ:
        return (a->v.i64 > b->v.i64) - (a->v.i64 < b->v.i64);
    case FR_PQ_DOUBLE:
        if (isnan(a->v.f64) || isnan(b->v.f64)) {
            *ok = false;
            return 0;
        }
        return (a->v.f64 > b->v.f64) - (a->v.f64 < b->v.f64);
    case FR_PQ_STRING:
        return pq_str_cmp((const uint8_t *)a->v.str.ptr, a->v.str.len,
                          (const uint8_t *)b->v.str.ptr, b->v.str.len);
    default:
        *ok = false;
        return 0;
    }
}

/* The predicate's value type may differ only within one storage class. */
static bool pred_type_ok(enum fr_pq_type col, enum fr_pq_type v)
{
    static const uint8_t cls[] = {
        [FR_PQ_BOOL] = 1,   [FR_PQ_INT32] = 2,     [FR_PQ_DATE] = 2,
        [FR_PQ_INT64] = 3,  [FR_PQ_TIMESTAMP] = 3, [FR_PQ_TIMESTAMP_NTZ] = 3,
        [FR_PQ_DOUBLE] = 4, [FR_PQ_STRING] = 5,
    };
    return col >= FR_PQ_BOOL && col <= FR_PQ_TIMESTAMP_NTZ && v >= FR_PQ_BOOL &&
           v <= FR_PQ_TIMESTAMP_NTZ && cls[col] == cls[v];
}

bool fr_pq_row_group_may_match(const struct fr_pq_reader *r, uint32_t row_group,
                               const struct fr_pq_pred *preds, uint32_t npreds)
{
    if (row_group >= r->meta.nrgs) {
        return false;
    }
    for (uint32_t i = 0; i < npreds; i++) {
        const struct fr_pq_pred *p = &preds[i];
        if (p->column >= r->ncols) {
            continue;
        }
        enum fr_pq_type t = r->info[p->column].type;
        struct fr_pq_chunk_info info;
        fr_pq_reader_chunk(r, row_group, p->column, &info);
        if (info.rows > 0 && info.has_null_count && info.null_count == info.rows) {
            return false; /* only NULLs, which never match */
        }
        if (!info.has_bounds) {
            continue;
        }
        bool ok;
        if (p->has_min && pred_type_ok(t, p->min.type) && val_cmp(t, &info.max, &p->min, &ok) < 0 &&
            ok) {
            return false;
        }
        if (p->has_max && pred_type_ok(t, p->max.type) && val_cmp(t, &info.min, &p->max, &ok) > 0 &&
            ok) {
            return false;
        }
    }
    return true;
}

/* ----------------------------------------------------------------- scans */

int fr_pq_scan_open(struct fr_pq_reader *r, const struct fr_pq_scan_opts *opts,
                    struct fr_pq_scan **scan)
{
    int rc = FR_ENOMEM;
    *scan = NULL;
    pq_err_clear();
    uint32_t n = opts && opts->columns ? opts->ncolumns : r->ncols;
    for (uint32_t i = 0; opts && opts->columns && i < n; i++) {
        uint32_t c = opts->columns[i];
        if (c >= r->ncols) {
            return pq_err(FR_EINVAL, "column %u out of range (%u columns)", c, r->ncols);
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t c = opts && opts->columns ? opts->columns[i] : i;
        if (r->info[c].type == 0) {
            return pq_err(FR_EUNSUPPORTED, "column '%s' has a type this reader does not map",
                          r->cols[c].name);
        }
    }
    for (uint32_t i = 0; opts && i < opts->npreds; i++) {
        const struct fr_pq_pred *p = &opts->preds[i];
        if (p->column >= r->ncols ||
            (p->has_min && !pred_type_ok(r->info[p->column].type, p->min.type)) ||
            (p->has_max && !pred_type_ok(r->info[p->column].type, p->max.type))) {
            return pq_err(FR_EINVAL, "predicate %u: bad column or value type", i);
        }
    }
    struct fr_pq_scan *s = calloc(1, sizeof *s);
    if (!s) {
        return pq_err(FR_ENOMEM, "out of memory");
    }
    s->r = r;
    s->ncols = n;
    s->rg = -1;
    size_t arena_cap = 2 * r->opts.max_page_bytes > 64 * MIB ? 2 * r->opts.max_page_bytes : 64 * MIB;
    pq_arena_init(&s->arena, arena_cap);
    s->colidx = calloc(n ? n : 1, sizeof *s->colidx);
    s->cols = calloc(n ? n : 1, sizeof *s->cols);
    s->vecs = calloc(n ? n : 1, sizeof *s->vecs);
    s->skip = calloc(r->meta.nrgs ? r->meta.nrgs : 1, 1);
    if (!s->colidx || !s->cols || !s->vecs || !s->skip) {
        goto cleanup;
    }
    if ((rc = pq_codec_new(&s->codec, 0)) < 0) {
        goto cleanup;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t c = opts && opts->columns ? opts->columns[i] : i;
        s->colidx[i] = c;
        struct pq_colspec spec = {.name = r->cols[c].name,
                                  .type = r->info[c].type,
                                  .phys = r->info[c].phys,
                                  .optional = r->cols[c].optional,
                                  .ts_scale = r->info[c].ts_scale};
        if ((rc = pq_rcol_new(&spec, &r->opts, &s->cols[i])) < 0) {
            goto cleanup;
        }
        s->vecs[i].column = c;
        s->vecs[i].type = spec.type;
    }
    for (uint32_t g = 0; opts && opts->npreds && g < r->meta.nrgs; g++) {
        s->skip[g] = !fr_pq_row_group_may_match(r, g, opts->preds, opts->npreds);
    }
    *scan = s;
    return FR_OK;

cleanup:
    fr_pq_scan_free(s);
    return pq_err(rc, "out of memory");
}

static int scan_fail(struct fr_pq_scan *s, int rc)
{
    s->failed = rc;
    return rc;
}

int fr_pq_scan_next(struct fr_pq_scan *s, const struct fr_pq_batch **batch)
{
    *batch = NULL;
    if (s->failed) {
        return s->failed;
    }
    const struct fr_pq_reader *r = s->r;
    pq_arena_reset(&s->arena);
    while (s->rg_left == 0) {
        if (s->rg + 1 >= (int64_t)r->meta.nrgs) {
            return FR_EEOF;
        }
        s->rg++;
        const struct pq_rowgroup *rg = &r->meta.rgs[s->rg];
        if (s->skip[s->rg]) {
            s->skipped++;
            s->row += (uint64_t)rg->num_rows;
            continue;
        }
        for (uint32_t i = 0; i < s->ncols; i++) {
            const struct pq_chunk *ch = &rg->chunks[s->colidx[i]];
            if (!pq_codec_known(ch->codec)) {
                return scan_fail(s, pq_err(FR_EUNSUPPORTED, "column '%s': codec %d",
                                           r->cols[s->colidx[i]].name, ch->codec));
            }
            pq_rcol_begin(s->cols[i], &r->in, s->codec, ch->codec, chunk_start(ch),
                          (uint64_t)ch->total_compressed, (uint64_t)rg->num_rows);
        }
        s->rg_left = (uint64_t)rg->num_rows;
    }
    uint32_t n = s->rg_left < r->opts.batch_rows ? (uint32_t)s->rg_left : r->opts.batch_rows;
    for (uint32_t i = 0; i < s->ncols; i++) {
        int rc = pq_rcol_read(s->cols[i], n, &s->arena, &s->vecs[i]);
        if (rc < 0) {
            return scan_fail(s, rc);
        }
        s->vecs[i].column = s->colidx[i];
    }
    s->batch = (struct fr_pq_batch){.first_row = s->row,
                                    .row_group = (uint32_t)s->rg,
                                    .nrows = n,
                                    .ncols = s->ncols,
                                    .cols = s->vecs};
    s->row += n;
    s->rg_left -= n;
    *batch = &s->batch;
    return FR_OK;
}

uint32_t fr_pq_scan_skipped(const struct fr_pq_scan *s)
{
    return s->skipped;
}

void fr_pq_scan_free(struct fr_pq_scan *s)
{
    if (!s) {
        return;
    }
    for (uint32_t i = 0; s->cols && i < s->ncols; i++) {
        pq_rcol_free(s->cols[i]);
    }
    free(s->cols);
    free(s->colidx);
    free(s->vecs);
    free(s->skip);
    pq_codec_free(s->codec);
    pq_arena_free(&s->arena);
    free(s);
}

/* ----------------------------------------------------------- page CRCs */

int fr_pq_reader_check_pages(struct fr_pq_reader *r, struct fr_pq_page_check *out)
{
    memset(out, 0, sizeof *out);
    pq_err_clear();
    struct fr_buf b;
    fr_buf_init(&b, r->opts.max_page_bytes + (16u << 20));
    int rc = FR_OK;
    for (uint32_t g = 0; rc == FR_OK && g < r->meta.nrgs; g++) {
        const struct pq_rowgroup *rg = &r->meta.rgs[g];
        for (uint32_t c = 0; rc == FR_OK && c < rg->nchunks; c++) {
            const struct pq_chunk *ch = &rg->chunks[c];
            const char *col = c < r->ncols ? r->cols[c].name : "?";
            uint64_t pos = chunk_start(ch), end = pos + (uint64_t)ch->total_compressed;
            for (uint32_t page = 0; rc == FR_OK && pos < end; page++) {
                /* The header: 256 bytes, more while it does not parse. */
                uint64_t avail = end - pos;
                size_t want = avail < 256 ? (size_t)avail : 256, hlen = 0;
                struct pq_page pg;
                for (;;) {
                    fr_buf_reset(&b);
                    if ((rc = fr_buf_reserve(&b, want)) < 0 ||
                        (rc = r->in.ops->read_at(r->in.ctx, b.data, want, pos)) < 0) {
                        break;
                    }
                    rc = pq_page_decode(b.data, want, &pg, &hlen);
                    if (rc != FR_ETRUNC || want >= avail || want >= 16u << 20) {
                        break;
                    }
                    want = want * 8 > avail ? (size_t)avail : want * 8;
                }
                if (rc == FR_OK && (pg.compressed_size < 0 ||
                                    (uint64_t)pg.compressed_size > avail - hlen ||
                                    (size_t)pg.compressed_size > r->opts.max_page_bytes)) {
                    rc = FR_ECORRUPT;
                }
                if (rc < 0) {
                    rc = pq_err(rc, "row group %u, column '%s', page %u at byte %llu: the page "
                                    "header does not parse or runs past its chunk (%s)",
                                g, col, page, (unsigned long long)pos, fr_strerror(rc));
                    break;
                }
                if (pg.has_crc) {
                    size_t n = (size_t)pg.compressed_size;
                    fr_buf_reset(&b);
                    if ((rc = fr_buf_reserve(&b, n ? n : 1)) < 0 ||
                        (rc = r->in.ops->read_at(r->in.ctx, b.data, n, pos + hlen)) < 0) {
                        rc = pq_err(rc, "row group %u, column '%s', page %u: reading %zu bytes at "
                                        "%llu: %s",
                                    g, col, page, n, (unsigned long long)(pos + hlen),
                                    fr_strerror(rc));
                        break;
                    }
                    uint32_t crc = fr_crc32(0, b.data, n);
                    if (crc != (uint32_t)pg.crc) {
                        rc = pq_err(FR_ECRC, "row group %u, column '%s', page %u at byte %llu: "
                                             "CRC-32 of its %zu bytes is %08x, the page header "
                                             "says %08x",
                                    g, col, page, (unsigned long long)pos, n, crc,
                                    (uint32_t)pg.crc);
                        break;
                    }
                    out->with_crc++;
                }
                out->pages++;
                pos += hlen + (uint64_t)pg.compressed_size;
            }
        }
    }
    fr_buf_free(&b);
    return rc;
}
