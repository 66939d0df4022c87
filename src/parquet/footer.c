/*
 * footer.c — Parquet's Thrift structures: FileMetaData (the footer) and
 * PageHeader, between their compact-protocol bytes and struct pq_meta /
 * struct pq_page. Encoding writes exactly what the writer needs, including
 * every field parquet.thrift marks required (C++ readers reject a footer
 * without them, ICEBERG-PARQUET-NOTES §1.2); decoding reads every field the
 * reader uses and skips the rest. No semantic validation here: reader.c
 * checks the decoded metadata against the file. Pure functions: any thread.
 *
 * File layout (PQ-README):
 *
 *   offset      bytes  content
 *   ----------  -----  --------------------------------------------------------
 *   0           4      "PAR1"
 *   4           ...    row group 0: column 0 chunk, column 1 chunk, ...; then
 *                      row group 1, ...  A chunk = [dictionary page] data pages;
 *                      a page = PageHeader (Thrift) + compressed_page_size bytes
 *   F           L      FileMetaData (Thrift compact)
 *   F + L       4      L, u32 little-endian
 *   F + L + 4   4      "PAR1"
 *
 * Fields written (id: name; * = required by parquet.thrift):
 *
 *   FileMetaData    1* version=1  2* schema  3* num_rows  4* row_groups
 *                   5 key_value_metadata  6 created_by  7 column_orders
 *   SchemaElement   root: 4* name  5 num_children
 *                   leaf: 1 type  3 repetition_type  4* name  6 converted_type
 *                         9 field_id  10 logicalType
 *   RowGroup        1* columns  2* total_byte_size  3* num_rows  5 file_offset
 *                   6 total_compressed_size  7 ordinal
 *   ColumnChunk     2* file_offset  3 meta_data
 *   ColumnMetaData  1* type  2* encodings  3* path_in_schema  4* codec
 *                   5* num_values  6* total_uncompressed_size
 *                   7* total_compressed_size  9* data_page_offset
 *                   11 dictionary_page_offset  12 statistics
 *   Statistics      1 max  2 min (signed types only)  3 null_count
 *                   5 max_value  6 min_value  7 is_max_value_exact
 *                   8 is_min_value_exact
 *   ColumnOrder     union, 1 = TYPE_ORDER (empty struct)
 *   LogicalType     union: 1 STRING {}  6 DATE {}
 *                   8 TIMESTAMP {1* isAdjustedToUTC  2* unit: union 1 MILLIS
 *                   2 MICROS 3 NANOS}  10 INTEGER {1* bitWidth i8  2* isSigned}
 *   PageHeader      1* type  2* uncompressed_page_size  3* compressed_page_size
 *                   4 crc  5 data_page_header  7 dictionary_page_header
 *                   8 data_page_header_v2
 *   DataPageHeader  1* num_values  2* encoding  3* definition_level_encoding
 *                   4* repetition_level_encoding  (5 statistics: skipped)
 *   DictionaryPageHeader  1* num_values  2* encoding  3 is_sorted
 *   DataPageHeaderV2      1* num_values  2* num_nulls  3* num_rows  4* encoding
 *                   5* definition_levels_byte_length
 *                   6* repetition_levels_byte_length  7 is_compressed
 *
 * Worked example (checked by the unit tests): a v1 data page header
 * {DATA_PAGE, 40, 40, {5 values, PLAIN, RLE, RLE}} is
 * 15 00 15 50 15 50 2c 15 0a 15 00 15 06 15 06 00 00.
 */
#include "parquet/parquet_int.h"

#include <stdlib.h>

static_assert(PQ_PAGE_HEADER_MAX >= 1 + 3 * 6 + 6 + 1 + 4 * 6 + 2, "page header bound");

/* Smallest valid encodings, used to reject list counts that cannot fit in
 * the bytes left before allocating for them (allocation stays a small
 * multiple of the footer size). */
enum {
    MIN_SCHEMA_ELEM = 3,  /* name field (2) + stop */
    MIN_ROW_GROUP = 7,    /* columns (2) + total_byte_size (2) + num_rows (2) + stop */
    MIN_COLUMN_CHUNK = 16,
    MIN_KV = 3,
};

/* ---------------------------------------------------------------- encoder */

static void enc_stats(struct pq_tw *tw, const struct pq_stats *st)
{
    pq_tw_struct(tw, 12);
    if (st->has & PQ_ST_MAX) {
        pq_tw_bin(tw, 1, st->max.ptr, st->max.len);
    }
    if (st->has & PQ_ST_MIN) {
        pq_tw_bin(tw, 2, st->min.ptr, st->min.len);
    }
    if (st->has & PQ_ST_NULL_COUNT) {
        pq_tw_i64(tw, 3, st->null_count);
    }
    if (st->has & PQ_ST_MAX_VALUE) {
        pq_tw_bin(tw, 5, st->max_value.ptr, st->max_value.len);
    }
    if (st->has & PQ_ST_MIN_VALUE) {
        pq_tw_bin(tw, 6, st->min_value.ptr, st->min_value.len);
    }
    if (st->has & PQ_ST_MAX_EXACT) {
        pq_tw_bool(tw, 7, st->max_exact);
    }
    if (st->has & PQ_ST_MIN_EXACT) {
        pq_tw_bool(tw, 8, st->min_exact);
    }
    pq_tw_end(tw);
}

static void enc_chunk(struct pq_tw *tw, const struct pq_chunk *c)
{
    pq_tw_begin(tw);
    pq_tw_i64(tw, 2, c->file_offset);
    pq_tw_struct(tw, 3);
    pq_tw_i32(tw, 1, c->type);
    pq_tw_list(tw, 2, PQ_T_I32, (uint32_t)__builtin_popcount(c->encodings));
    for (int e = 0; e < 32; e++) {
        if (c->encodings & (1u << e)) {
            pq_tw_elem_i32(tw, e);
        }
    }
    pq_tw_list(tw, 3, PQ_T_BINARY, 1);
    pq_tw_elem_bin(tw, c->path.ptr, c->path.len);
    pq_tw_i32(tw, 4, c->codec);
    pq_tw_i64(tw, 5, c->num_values);
    pq_tw_i64(tw, 6, c->total_uncompressed);
    pq_tw_i64(tw, 7, c->total_compressed);
    pq_tw_i64(tw, 9, c->data_page_offset);
    if (c->has_dict_offset) {
        pq_tw_i64(tw, 11, c->dict_page_offset);
    }
    if (c->has_stats) {
        enc_stats(tw, &c->stats);
    }
    pq_tw_end(tw); /* ColumnMetaData */
    pq_tw_end(tw); /* ColumnChunk */
}

static void enc_logical(struct pq_tw *tw, const struct pq_selem *e)
{
    pq_tw_struct(tw, 10);
    switch (e->logical) {
    case PQ_LT_STRING:
    case PQ_LT_DATE:
        pq_tw_struct(tw, e->logical);
        pq_tw_end(tw);
        break;
    case PQ_LT_TIMESTAMP:
        pq_tw_struct(tw, PQ_LT_TIMESTAMP);
        pq_tw_bool(tw, 1, e->ts_utc);
        pq_tw_struct(tw, 2);
        pq_tw_struct(tw, e->ts_unit);
        pq_tw_end(tw); /* MILLIS / MICROS / NANOS */
        pq_tw_end(tw); /* TimeUnit */
        pq_tw_end(tw); /* TimestampType */
        break;
    default:
        tw->rc = tw->rc ? tw->rc : FR_EINVAL;
        break;
    }
    pq_tw_end(tw); /* LogicalType */
}

static void enc_selem(struct pq_tw *tw, const struct pq_selem *e)
{
    pq_tw_begin(tw);
    if (e->type >= 0) {
        pq_tw_i32(tw, 1, e->type);
    }
    if (e->repetition >= 0) {
        pq_tw_i32(tw, 3, e->repetition);
    }
    pq_tw_bin(tw, 4, e->name.ptr, e->name.len);
    if (e->num_children > 0) {
        pq_tw_i32(tw, 5, e->num_children);
    }
    if (e->converted >= 0) {
        pq_tw_i32(tw, 6, e->converted);
    }
    if (e->field_id >= 0) {
        pq_tw_i32(tw, 9, e->field_id);
    }
    if (e->logical != PQ_LT_NONE) {
        enc_logical(tw, e);
    }
    pq_tw_end(tw);
}

int pq_meta_encode(const struct pq_meta *meta, struct fr_buf *out)
{
    struct pq_tw tw;
    pq_tw_init(&tw, out);
    pq_tw_begin(&tw);
    pq_tw_i32(&tw, 1, meta->version);
    pq_tw_list(&tw, 2, PQ_T_STRUCT, meta->nschema);
    for (uint32_t i = 0; i < meta->nschema; i++) {
        enc_selem(&tw, &meta->schema[i]);
    }
    pq_tw_i64(&tw, 3, meta->num_rows);
    pq_tw_list(&tw, 4, PQ_T_STRUCT, meta->nrgs);
    for (uint32_t g = 0; g < meta->nrgs; g++) {
        const struct pq_rowgroup *rg = &meta->rgs[g];
        pq_tw_begin(&tw);
        pq_tw_list(&tw, 1, PQ_T_STRUCT, rg->nchunks);
        for (uint32_t c = 0; c < rg->nchunks; c++) {
            enc_chunk(&tw, &rg->chunks[c]);
        }
        pq_tw_i64(&tw, 2, rg->total_byte_size);
        pq_tw_i64(&tw, 3, rg->num_rows);
        pq_tw_i64(&tw, 5, rg->file_offset);
        pq_tw_i64(&tw, 6, rg->total_compressed);
        pq_tw_i16(&tw, 7, rg->ordinal);
        pq_tw_end(&tw);
    }
    if (meta->nkv) {
        pq_tw_list(&tw, 5, PQ_T_STRUCT, meta->nkv);
        for (uint32_t i = 0; i < meta->nkv; i++) {
            pq_tw_begin(&tw);
            pq_tw_bin(&tw, 1, meta->kv[i].key.ptr, meta->kv[i].key.len);
            if (meta->kv[i].has_value) {
                pq_tw_bin(&tw, 2, meta->kv[i].value.ptr, meta->kv[i].value.len);
            }
            pq_tw_end(&tw);
        }
    }
    if (meta->has_created_by) {
        pq_tw_bin(&tw, 6, meta->created_by.ptr, meta->created_by.len);
    }
    if (meta->ncolumn_orders) {
        pq_tw_list(&tw, 7, PQ_T_STRUCT, meta->ncolumn_orders);
        for (uint32_t i = 0; i < meta->ncolumn_orders; i++) {
            pq_tw_begin(&tw);
            pq_tw_struct(&tw, 1); /* TYPE_ORDER: TypeDefinedOrder {} */
            pq_tw_end(&tw);
            pq_tw_end(&tw);
        }
    }
    pq_tw_end(&tw);
    return tw.rc;
}

int pq_page_encode(const struct pq_page *page, struct fr_buf *out)
{
    struct pq_tw tw;
    pq_tw_init(&tw, out);
    pq_tw_begin(&tw);
    pq_tw_i32(&tw, 1, page->type);
    pq_tw_i32(&tw, 2, page->uncompressed_size);
    pq_tw_i32(&tw, 3, page->compressed_size);
    if (page->has_crc) {
        pq_tw_i32(&tw, 4, page->crc);
    }
    if (page->has_data) {
        pq_tw_struct(&tw, 5);
        pq_tw_i32(&tw, 1, page->num_values);
        pq_tw_i32(&tw, 2, page->encoding);
        pq_tw_i32(&tw, 3, page->def_encoding);
        pq_tw_i32(&tw, 4, page->rep_encoding);
        pq_tw_end(&tw);
    }
    if (page->has_dict) {
        pq_tw_struct(&tw, 7);
        pq_tw_i32(&tw, 1, page->num_values);
        pq_tw_i32(&tw, 2, page->encoding);
        pq_tw_end(&tw);
    }
    pq_tw_end(&tw);
    return tw.rc;
}

/* ---------------------------------------------------------------- decoder */

#define TRY(expr)                                                                           \
    do {                                                                                    \
        int try_rc_ = (expr);                                                               \
        if (try_rc_ < 0) {                                                                  \
            return try_rc_;                                                                 \
        }                                                                                   \
    } while (0)

/* Loop over the fields of the struct just entered (nestable: the loop
 * variable is named after the line). */
#define PQ_CAT2(a, b) a##b
#define PQ_CAT(a, b) PQ_CAT2(a, b)
#define FOR_FIELDS(tr, id, type) FOR_FIELDS_(tr, id, type, PQ_CAT(field_rc_, __LINE__))
#define FOR_FIELDS_(tr, id, type, v)                                                        \
    for (int v; (v = pq_tr_field((tr), &(id), &(type))) != 0;)                             \
        if (v < 0) {                                                                        \
            return v;                                                                       \
        } else

static int list_fits(uint32_t n, const struct pq_tr *tr, size_t min_elem)
{
    return (uint64_t)n * min_elem <= (uint64_t)(tr->end - tr->p) ? FR_OK : FR_ETRUNC;
}

static int dec_stats(struct pq_tr *tr, struct pq_stats *st)
{
    int16_t id;
    uint8_t t;
    TRY(pq_tr_begin(tr));
    FOR_FIELDS(tr, id, t)
    {
        switch (id) {
        case 1:
            TRY(pq_tr_bin(tr, t, &st->max.ptr, &st->max.len));
            st->has |= PQ_ST_MAX;
            break;
        case 2:
            TRY(pq_tr_bin(tr, t, &st->min.ptr, &st->min.len));
            st->has |= PQ_ST_MIN;
            break;
        case 3:
            TRY(pq_tr_i64(tr, t, &st->null_count));
            st->has |= PQ_ST_NULL_COUNT;
            break;
        case 5:
            TRY(pq_tr_bin(tr, t, &st->max_value.ptr, &st->max_value.len));
            st->has |= PQ_ST_MAX_VALUE;
            break;
        case 6:
            TRY(pq_tr_bin(tr, t, &st->min_value.ptr, &st->min_value.len));
            st->has |= PQ_ST_MIN_VALUE;
            break;
        case 7:
            TRY(pq_tr_bool(tr, t, &st->max_exact));
            st->has |= PQ_ST_MAX_EXACT;
            break;
        case 8:
            TRY(pq_tr_bool(tr, t, &st->min_exact));
            st->has |= PQ_ST_MIN_EXACT;
            break;
        default:
            TRY(pq_tr_skip(tr, t));
        }
    }
    return FR_OK;
}

enum { CMD_REQUIRED = 1 << 1 | 1 << 2 | 1 << 3 | 1 << 4 | 1 << 5 | 1 << 6 | 1 << 7 | 1 << 9 };

static int dec_column_meta(struct pq_tr *tr, struct pq_chunk *c)
{
    int16_t id;
    uint8_t t;
    unsigned seen = 0;
    TRY(pq_tr_begin(tr));
    FOR_FIELDS(tr, id, t)
    {
        if (id > 0 && id < 32) {
            seen |= 1u << id;
        }
        switch (id) {
        case 1:
            TRY(pq_tr_i32(tr, t, &c->type));
            break;
        case 2: {
            uint8_t et;
            uint32_t n;
            TRY(pq_tr_list(tr, t, &et, &n));
            for (uint32_t i = 0; i < n; i++) {
                int32_t e;
                TRY(pq_tr_i32(tr, et, &e));
                if (e >= 0 && e < 32) {
                    c->encodings |= 1u << e;
                }
            }
            break;
        }
        case 3: {
            uint8_t et;
            uint32_t n;
            TRY(pq_tr_list(tr, t, &et, &n));
            for (uint32_t i = 0; i < n; i++) {
                struct pq_bytes b;
                TRY(pq_tr_bin(tr, et, &b.ptr, &b.len));
                if (i == 0) {
                    c->path = b;
                }
            }
            c->path_len = n;
            break;
        }
        case 4:
            TRY(pq_tr_i32(tr, t, &c->codec));
            break;
        case 5:
            TRY(pq_tr_i64(tr, t, &c->num_values));
            break;
        case 6:
            TRY(pq_tr_i64(tr, t, &c->total_uncompressed));
            break;
        case 7:
            TRY(pq_tr_i64(tr, t, &c->total_compressed));
            break;
        case 9:
            TRY(pq_tr_i64(tr, t, &c->data_page_offset));
            break;
        case 11:
            TRY(pq_tr_i64(tr, t, &c->dict_page_offset));
            c->has_dict_offset = true;
            break;
        case 12:
            TRY(pq_tr_expect(t, PQ_T_STRUCT));
            TRY(dec_stats(tr, &c->stats));
            c->has_stats = true;
            break;
        default:
            TRY(pq_tr_skip(tr, t));
        }
    }
    if ((seen & CMD_REQUIRED) != CMD_REQUIRED) {
        return pq_err(FR_ECORRUPT, "ColumnMetaData lacks a required field");
    }
    c->has_meta = true;
    return FR_OK;
}

static int dec_chunk(struct pq_tr *tr, struct pq_chunk *c)
{
    int16_t id;
    uint8_t t;
    bool has_path = false;
    TRY(pq_tr_begin(tr));
    FOR_FIELDS(tr, id, t)
    {
        switch (id) {
        case 1: {
            struct pq_bytes b;
            TRY(pq_tr_bin(tr, t, &b.ptr, &b.len));
            has_path = true;
            break;
        }
        case 2:
            TRY(pq_tr_i64(tr, t, &c->file_offset));
            break;
        case 3:
            TRY(pq_tr_expect(t, PQ_T_STRUCT));
            TRY(dec_column_meta(tr, c));
            break;
        default:
            TRY(pq_tr_skip(tr, t));
        }
    }
    if (has_path) {
        return pq_err(FR_EUNSUPPORTED, "column chunk stored in another file (file_path)");
    }
    if (!c->has_meta) {
        return pq_err(FR_EUNSUPPORTED, "column chunk without plaintext meta_data");
    }
    return FR_OK;
}

static int dec_rowgroup(struct pq_tr *tr, struct pq_rowgroup *rg)
{
    int16_t id;
    uint8_t t;
    unsigned seen = 0;
    TRY(pq_tr_begin(tr));
    FOR_FIELDS(tr, id, t)
    {
        if (id > 0 && id < 32) {
            seen |= 1u << id;
        }
        switch (id) {
        case 1: {
            uint8_t et;
            uint32_t n;
            TRY(pq_tr_list(tr, t, &et, &n));
            TRY(pq_tr_expect(et, PQ_T_STRUCT));
            TRY(list_fits(n, tr, MIN_COLUMN_CHUNK));
            if (rg->chunks || n > PQ_MAX_COLUMNS) {
                return pq_err(FR_ECORRUPT, "row group with %u columns", n);
            }
            rg->chunks = calloc(n ? n : 1, sizeof *rg->chunks);
            if (!rg->chunks) {
                return FR_ENOMEM;
            }
            for (uint32_t i = 0; i < n; i++) {
                TRY(dec_chunk(tr, &rg->chunks[i]));
                rg->nchunks = i + 1;
            }
            break;
        }
        case 2:
            TRY(pq_tr_i64(tr, t, &rg->total_byte_size));
            break;
        case 3:
            TRY(pq_tr_i64(tr, t, &rg->num_rows));
            break;
        case 5:
            TRY(pq_tr_i64(tr, t, &rg->file_offset));
            break;
        case 6:
            TRY(pq_tr_i64(tr, t, &rg->total_compressed));
            break;
        case 7: {
            int32_t v;
            TRY(pq_tr_i32(tr, t, &v));
            rg->ordinal = (int16_t)v;
            break;
        }
        default:
            TRY(pq_tr_skip(tr, t));
        }
    }
    unsigned need = 1u << 1 | 1u << 2 | 1u << 3;
    if ((seen & need) != need) {
        return pq_err(FR_ECORRUPT, "RowGroup lacks a required field");
    }
    return FR_OK;
}

static int dec_timestamp(struct pq_tr *tr, struct pq_selem *e)
{
    int16_t id;
    uint8_t t;
    unsigned seen = 0;
    TRY(pq_tr_begin(tr));
    FOR_FIELDS(tr, id, t)
    {
        if (id == 1) {
            TRY(pq_tr_bool(tr, t, &e->ts_utc));
            seen |= 1;
        } else if (id == 2) {
            TRY(pq_tr_expect(t, PQ_T_STRUCT));
            TRY(pq_tr_begin(tr)); /* TimeUnit union */
            int16_t uid;
            uint8_t ut;
            FOR_FIELDS(tr, uid, ut)
            {
                if (uid >= 1 && uid <= 3 && ut == PQ_T_STRUCT) {
                    e->ts_unit = (uint8_t)uid;
                }
                TRY(pq_tr_skip(tr, ut));
            }
            seen |= 2;
        } else {
            TRY(pq_tr_skip(tr, t));
        }
    }
    if (seen != 3 || e->ts_unit == 0) {
        e->logical = PQ_LT_OTHER;
    }
    return FR_OK;
}

static int dec_integer(struct pq_tr *tr, struct pq_selem *e)
{
    int16_t id;
    uint8_t t;
    TRY(pq_tr_begin(tr));
    FOR_FIELDS(tr, id, t)
    {
        if (id == 1) {
            int32_t bits;
            TRY(pq_tr_i32(tr, t, &bits));
            e->int_bits = bits > 0 && bits <= 64 ? (uint8_t)bits : 0;
        } else if (id == 2) {
            TRY(pq_tr_bool(tr, t, &e->int_signed));
        } else {
            TRY(pq_tr_skip(tr, t));
        }
    }
    return FR_OK;
}

static int dec_logical(struct pq_tr *tr, struct pq_selem *e)
{
    int16_t id;
    uint8_t t;
    TRY(pq_tr_begin(tr));
    FOR_FIELDS(tr, id, t)
    {
        if (t != PQ_T_STRUCT) {
            TRY(pq_tr_skip(tr, t));
            e->logical = PQ_LT_OTHER;
            continue;
        }
        switch (id) {
        case PQ_LT_STRING:
        case PQ_LT_DATE:
            e->logical = (uint8_t)id;
            TRY(pq_tr_skip(tr, t));
            break;
        case PQ_LT_TIMESTAMP:
            e->logical = PQ_LT_TIMESTAMP;
            TRY(dec_timestamp(tr, e));
            break;
        case PQ_LT_INTEGER:
            e->logical = PQ_LT_INTEGER;
            TRY(dec_integer(tr, e));
            break;
        default:
            e->logical = PQ_LT_OTHER;
            TRY(pq_tr_skip(tr, t));
        }
    }
    return FR_OK;
}

static int dec_selem(struct pq_tr *tr, struct pq_selem *e)
{
    int16_t id;
    uint8_t t;
    bool has_name = false;
    e->type = e->repetition = e->converted = e->field_id = -1;
    TRY(pq_tr_begin(tr));
    FOR_FIELDS(tr, id, t)
    {
        switch (id) {
        case 1:
            TRY(pq_tr_i32(tr, t, &e->type));
            break;
        case 2:
            TRY(pq_tr_i32(tr, t, &e->type_length));
            break;
        case 3:
            TRY(pq_tr_i32(tr, t, &e->repetition));
            break;
        case 4:
            TRY(pq_tr_bin(tr, t, &e->name.ptr, &e->name.len));
            has_name = true;
            break;
        case 5:
            TRY(pq_tr_i32(tr, t, &e->num_children));
            break;
        case 6:
            TRY(pq_tr_i32(tr, t, &e->converted));
            break;
        case 9:
            TRY(pq_tr_i32(tr, t, &e->field_id));
            break;
        case 10:
            TRY(pq_tr_expect(t, PQ_T_STRUCT));
            TRY(dec_logical(tr, e));
            break;
        default:
            TRY(pq_tr_skip(tr, t));
        }
    }
    if (!has_name) {
        return pq_err(FR_ECORRUPT, "SchemaElement without a name");
    }
    return FR_OK;
}

static int dec_meta(struct pq_tr *tr, struct pq_meta *m)
{
    int16_t id;
    uint8_t t;
    unsigned seen = 0;
    TRY(pq_tr_begin(tr));
    FOR_FIELDS(tr, id, t)
    {
        if (id > 0 && id < 32) {
            seen |= 1u << id;
        }
        uint8_t et;
        uint32_t n;
        switch (id) {
        case 1:
            TRY(pq_tr_i32(tr, t, &m->version));
            break;
        case 2:
            TRY(pq_tr_list(tr, t, &et, &n));
            TRY(pq_tr_expect(et, PQ_T_STRUCT));
            TRY(list_fits(n, tr, MIN_SCHEMA_ELEM));
            if (m->schema || n > PQ_MAX_COLUMNS + 1) {
                return pq_err(FR_ECORRUPT, "schema with %u elements", n);
            }
            m->schema = calloc(n ? n : 1, sizeof *m->schema);
            if (!m->schema) {
                return FR_ENOMEM;
            }
            for (uint32_t i = 0; i < n; i++) {
                TRY(dec_selem(tr, &m->schema[i]));
                m->nschema = i + 1;
            }
            break;
        case 3:
            TRY(pq_tr_i64(tr, t, &m->num_rows));
            break;
        case 4:
            TRY(pq_tr_list(tr, t, &et, &n));
            TRY(pq_tr_expect(et, PQ_T_STRUCT));
            TRY(list_fits(n, tr, MIN_ROW_GROUP));
            if (m->rgs || n > PQ_MAX_ROW_GROUPS) {
                return pq_err(FR_ECORRUPT, "%u row groups", n);
            }
            m->rgs = calloc(n ? n : 1, sizeof *m->rgs);
            if (!m->rgs) {
                return FR_ENOMEM;
            }
            for (uint32_t i = 0; i < n; i++) {
                m->nrgs = i + 1;
                TRY(dec_rowgroup(tr, &m->rgs[i]));
            }
            break;
        case 5:
            TRY(pq_tr_list(tr, t, &et, &n));
            TRY(pq_tr_expect(et, PQ_T_STRUCT));
            TRY(list_fits(n, tr, MIN_KV));
            if (m->kv) {
                return pq_err(FR_ECORRUPT, "key_value_metadata twice");
            }
            m->kv = calloc(n ? n : 1, sizeof *m->kv);
            if (!m->kv) {
                return FR_ENOMEM;
            }
            for (uint32_t i = 0; i < n; i++) {
                struct pq_kv *kv = &m->kv[i];
                int16_t kid;
                uint8_t kt;
                bool has_key = false;
                TRY(pq_tr_begin(tr));
                FOR_FIELDS(tr, kid, kt)
                {
                    if (kid == 1) {
                        TRY(pq_tr_bin(tr, kt, &kv->key.ptr, &kv->key.len));
                        has_key = true;
                    } else if (kid == 2) {
                        TRY(pq_tr_bin(tr, kt, &kv->value.ptr, &kv->value.len));
                        kv->has_value = true;
                    } else {
                        TRY(pq_tr_skip(tr, kt));
                    }
                }
                if (!has_key) {
                    return pq_err(FR_ECORRUPT, "KeyValue without a key");
                }
                m->nkv = i + 1;
            }
            break;
        case 6:
            TRY(pq_tr_bin(tr, t, &m->created_by.ptr, &m->created_by.len));
            m->has_created_by = true;
            break;
        case 7:
            TRY(pq_tr_list(tr, t, &et, &n));
            TRY(pq_tr_expect(et, PQ_T_STRUCT));
            if (m->column_orders) {
                return pq_err(FR_ECORRUPT, "column_orders twice");
            }
            m->column_orders = calloc(n ? n : 1, 1);
            if (!m->column_orders) {
                return FR_ENOMEM;
            }
            for (uint32_t i = 0; i < n; i++) {
                int16_t oid;
                uint8_t ot;
                TRY(pq_tr_begin(tr));
                FOR_FIELDS(tr, oid, ot)
                {
                    if (oid == 1 && ot == PQ_T_STRUCT) {
                        m->column_orders[i] = 1;
                    }
                    TRY(pq_tr_skip(tr, ot));
                }
                m->ncolumn_orders = i + 1;
            }
            break;
        default:
            TRY(pq_tr_skip(tr, t));
        }
    }
    unsigned need = 1u << 1 | 1u << 2 | 1u << 3 | 1u << 4;
    if ((seen & need) != need) {
        return pq_err(FR_ECORRUPT, "FileMetaData lacks a required field");
    }
    return FR_OK;
}

int pq_meta_decode(const uint8_t *p, size_t len, struct pq_meta *meta)
{
    memset(meta, 0, sizeof *meta);
    struct pq_tr tr;
    pq_tr_init(&tr, p, len);
    pq_err_clear();
    int rc = dec_meta(&tr, meta);
    if (rc < 0) {
        if (!fr_pq_errmsg()[0]) {
            pq_err(rc, "footer: malformed Thrift at byte %zu of %zu", (size_t)(tr.p - p), len);
        }
        pq_meta_free(meta);
        return rc;
    }
    return FR_OK;
}

void pq_meta_free(struct pq_meta *meta)
{
    if (!meta) {
        return;
    }
    for (uint32_t g = 0; meta->rgs && g < meta->nrgs; g++) {
        free(meta->rgs[g].chunks);
    }
    free(meta->rgs);
    free(meta->schema);
    free(meta->kv);
    free(meta->column_orders);
    memset(meta, 0, sizeof *meta);
}

static int dec_page_sub(struct pq_tr *tr, struct pq_page *pg, int16_t which)
{
    int16_t id;
    uint8_t t;
    TRY(pq_tr_begin(tr));
    FOR_FIELDS(tr, id, t)
    {
        int32_t *dst = NULL;
        if (id == 1) {
            dst = &pg->num_values;
        } else if (id == 2) {
            dst = which == 8 ? &pg->num_nulls : &pg->encoding;
        } else if (which == 5 && id == 3) {
            dst = &pg->def_encoding;
        } else if (which == 5 && id == 4) {
            dst = &pg->rep_encoding;
        } else if (which == 8 && id == 3) {
            dst = &pg->num_rows;
        } else if (which == 8 && id == 4) {
            dst = &pg->encoding;
        } else if (which == 8 && id == 5) {
            dst = &pg->def_len;
        } else if (which == 8 && id == 6) {
            dst = &pg->rep_len;
        } else if (which == 8 && id == 7) {
            TRY(pq_tr_bool(tr, t, &pg->is_compressed));
            continue;
        }
        if (dst) {
            TRY(pq_tr_i32(tr, t, dst));
        } else {
            TRY(pq_tr_skip(tr, t));
        }
    }
    return FR_OK;
}

int pq_page_decode(const uint8_t *p, size_t len, struct pq_page *page, size_t *used)
{
    memset(page, 0, sizeof *page);
    page->is_compressed = true;
    struct pq_tr tr;
    pq_tr_init(&tr, p, len);
    int16_t id;
    uint8_t t;
    unsigned seen = 0;
    TRY(pq_tr_begin(&tr));
    FOR_FIELDS(&tr, id, t)
    {
        switch (id) {
        case 1:
            TRY(pq_tr_i32(&tr, t, &page->type));
            seen |= 1;
            break;
        case 2:
            TRY(pq_tr_i32(&tr, t, &page->uncompressed_size));
            seen |= 2;
            break;
        case 3:
            TRY(pq_tr_i32(&tr, t, &page->compressed_size));
            seen |= 4;
            break;
        case 4:
            TRY(pq_tr_i32(&tr, t, &page->crc));
            page->has_crc = true;
            break;
        case 5:
        case 7:
        case 8:
            TRY(pq_tr_expect(t, PQ_T_STRUCT));
            TRY(dec_page_sub(&tr, page, id));
            page->has_data |= id == 5;
            page->has_dict |= id == 7;
            page->has_v2 |= id == 8;
            break;
        default:
            TRY(pq_tr_skip(&tr, t));
        }
    }
    if (seen != 7 || page->uncompressed_size < 0 || page->compressed_size < 0) {
        return FR_ECORRUPT;
    }
    *used = (size_t)(tr.p - p);
    return FR_OK;
}
