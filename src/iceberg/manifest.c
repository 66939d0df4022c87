/*
 * manifest.c — Iceberg v2 manifests (data-file entries) and manifest lists
 * (one row per manifest), written as Avro containers with Iceberg field ids
 * and read back through the generic decoder in avro.c, so manifests other
 * engines wrote into the same table read too.
 *
 * Manifest entry (ICE-SPEC "Manifest Entry Fields"), fields in write order:
 *   id   name                  Avro type
 *   0    status                int (0 EXISTING, 1 ADDED, 2 DELETED)
 *   1    snapshot_id           ["null","long"]  null on ADDED: inherited
 *   3    sequence_number       ["null","long"]  null on ADDED: inherited
 *   4    file_sequence_number  ["null","long"]  null on ADDED: inherited
 *   2    data_file             record r2:
 *     134 content int | 100 file_path string | 101 file_format string |
 *     102 partition record r102 (one ["null",T] field per partition field,
 *         field id = the partition field id) | 103 record_count long |
 *     104 file_size_in_bytes long | 108 column_sizes, 109 value_counts,
 *     110 null_value_counts, 137 nan_value_counts (opt array of
 *     k<key>_v<value> {key int, value long}) | 125 lower_bounds,
 *     128 upper_bounds (same, value bytes) | 131 key_metadata opt bytes |
 *     132 split_offsets opt array<long> (element 133) | 135 equality_ids
 *     opt array<int> (element 136) | 140 sort_order_id opt int
 * Manifest file metadata: schema, schema-id, partition-spec (fields only),
 * partition-spec-id, format-version "2", content "data".
 *
 * Manifest list row (ICE-SPEC "Manifest Lists"):
 *   500 manifest_path string | 501 manifest_length long |
 *   502 partition_spec_id int | 517 content int | 515 sequence_number long |
 *   516 min_sequence_number long | 503 added_snapshot_id long |
 *   504/505/506 added/existing/deleted_files_count int |
 *   512/513/514 added/existing/deleted_rows_count long |
 *   507 partitions opt array<r508 {509 contains_null boolean,
 *       518 contains_nan opt boolean, 510 lower_bound opt bytes,
 *       511 upper_bound opt bytes}> (element 508) | 519 key_metadata opt bytes
 * Metadata: snapshot-id, parent-snapshot-id ("null" when none),
 * sequence-number, format-version "2".
 *
 * Invariants: EXISTING and DELETED entries always carry both sequence
 * numbers (icebird refuses them otherwise); record counts and sizes are
 * copied exactly (readers range-read with them).
 */
#include "iceberg/iceberg_int.h"

#include "core/err.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------ single-value binary -- */

int ice_value_bin(const struct fr_ice_value *v, uint8_t *out, uint32_t cap, uint32_t *len)
{
    uint64_t u = 0;
    uint32_t n = 0;
    switch (v->type) {
    case FR_ICE_BOOLEAN:
        u = v->v.b ? 1 : 0;
        n = 1;
        break;
    case FR_ICE_INT:
    case FR_ICE_DATE:
        u = (uint32_t)v->v.i32;
        n = 4;
        break;
    case FR_ICE_LONG:
    case FR_ICE_TIMESTAMP:
    case FR_ICE_TIMESTAMPTZ:
        u = (uint64_t)v->v.i64;
        n = 8;
        break;
    case FR_ICE_DOUBLE:
        memcpy(&u, &v->v.f64, 8);
        n = 8;
        break;
    case FR_ICE_STRING:
        if (v->v.str.len > cap) {
            return FR_ETOOBIG;
        }
        memcpy(out, v->v.str.ptr, v->v.str.len);
        *len = (uint32_t)v->v.str.len;
        return FR_OK;
    default:
        return FR_EINVAL;
    }
    if (n > cap) {
        return FR_ETOOBIG;
    }
    for (uint32_t i = 0; i < n; i++) {
        out[i] = (uint8_t)(u >> (8 * i));
    }
    *len = n;
    return FR_OK;
}

int ice_value_from_bin(enum fr_ice_type type, const uint8_t *p, uint32_t len,
                       struct fr_ice_value *v)
{
    memset(v, 0, sizeof *v);
    v->type = type;
    uint64_t u = 0;
    for (uint32_t i = 0; i < len && i < 8; i++) {
        u |= (uint64_t)p[i] << (8 * i);
    }
    switch (type) {
    case FR_ICE_BOOLEAN:
        if (len != 1) {
            return FR_ECORRUPT;
        }
        v->v.b = u != 0;
        return FR_OK;
    case FR_ICE_INT:
    case FR_ICE_DATE:
        if (len != 4) {
            return FR_ECORRUPT;
        }
        v->v.i32 = (int32_t)(uint32_t)u;
        return FR_OK;
    case FR_ICE_LONG:
    case FR_ICE_TIMESTAMP:
    case FR_ICE_TIMESTAMPTZ:
    case FR_ICE_DOUBLE:
        if (len != 8) {
            return FR_ECORRUPT;
        }
        if (type == FR_ICE_DOUBLE) {
            memcpy(&v->v.f64, &u, 8);
        } else {
            v->v.i64 = (int64_t)u;
        }
        return FR_OK;
    case FR_ICE_STRING:
        v->v.str.ptr = (const char *)p;
        v->v.str.len = len;
        return FR_OK;
    }
    return FR_EINVAL;
}

int ice_value_cmp(const struct fr_ice_value *a, const struct fr_ice_value *b)
{
    switch (a->type) {
    case FR_ICE_BOOLEAN:
        return (int)a->v.b - (int)b->v.b;
    case FR_ICE_INT:
    case FR_ICE_DATE:
        return a->v.i32 < b->v.i32 ? -1 : a->v.i32 > b->v.i32;
    case FR_ICE_LONG:
    case FR_ICE_TIMESTAMP:
    case FR_ICE_TIMESTAMPTZ:
        return a->v.i64 < b->v.i64 ? -1 : a->v.i64 > b->v.i64;
    case FR_ICE_DOUBLE:
        return a->v.f64 < b->v.f64 ? -1 : a->v.f64 > b->v.f64;
    case FR_ICE_STRING: {
        size_t n = a->v.str.len < b->v.str.len ? a->v.str.len : b->v.str.len;
        int c = n ? memcmp(a->v.str.ptr, b->v.str.ptr, n) : 0;
        if (c) {
            return c;
        }
        return a->v.str.len < b->v.str.len ? -1 : a->v.str.len > b->v.str.len;
    }
    }
    return 0;
}

/* ------------------------------------------------------- schema text -- */

static int avro_type_json(struct fr_buf *b, enum fr_ice_type t)
{
    switch (t) {
    case FR_ICE_BOOLEAN:
        return fr_buf_puts(b, "\"boolean\"");
    case FR_ICE_INT:
        return fr_buf_puts(b, "\"int\"");
    case FR_ICE_LONG:
        return fr_buf_puts(b, "\"long\"");
    case FR_ICE_DOUBLE:
        return fr_buf_puts(b, "\"double\"");
    case FR_ICE_STRING:
        return fr_buf_puts(b, "\"string\"");
    case FR_ICE_DATE:
        return fr_buf_puts(b, "{\"type\":\"int\",\"logicalType\":\"date\"}");
    case FR_ICE_TIMESTAMP:
        return fr_buf_puts(b, "{\"type\":\"long\",\"logicalType\":\"timestamp-micros\","
                              "\"adjust-to-utc\":false}");
    case FR_ICE_TIMESTAMPTZ:
        return fr_buf_puts(b, "{\"type\":\"long\",\"logicalType\":\"timestamp-micros\","
                              "\"adjust-to-utc\":true}");
    }
    return FR_EINVAL;
}

static int map_field_json(struct fr_buf *b, const char *name, int id, int kid, int vid,
                          const char *vtype)
{
    return fr_buf_printf(b,
                         ",{\"name\":\"%s\",\"type\":[\"null\",{\"type\":\"array\",\"logicalType\":"
                         "\"map\",\"items\":{\"type\":\"record\",\"name\":\"k%d_v%d\",\"fields\":"
                         "[{\"name\":\"key\",\"type\":\"int\",\"field-id\":%d},{\"name\":\"value\","
                         "\"type\":\"%s\",\"field-id\":%d}]}}],\"default\":null,\"field-id\":%d}",
                         name, kid, vid, kid, vtype, vid, id);
}

static int manifest_schema_json(const struct ice_meta *meta, const struct ice_spec *spec,
                                struct fr_buf *b)
{
    int rc =
        fr_buf_puts(b, "{\"type\":\"record\",\"name\":\"manifest_entry\",\"fields\":["
                       "{\"name\":\"status\",\"type\":\"int\",\"field-id\":0},"
                       "{\"name\":\"snapshot_id\",\"type\":[\"null\",\"long\"],\"default\":null,"
                       "\"field-id\":1},"
                       "{\"name\":\"sequence_number\",\"type\":[\"null\",\"long\"],\"default\":"
                       "null,\"field-id\":3},"
                       "{\"name\":\"file_sequence_number\",\"type\":[\"null\",\"long\"],"
                       "\"default\":null,\"field-id\":4},"
                       "{\"name\":\"data_file\",\"type\":{\"type\":\"record\",\"name\":\"r2\","
                       "\"fields\":["
                       "{\"name\":\"content\",\"type\":\"int\",\"field-id\":134},"
                       "{\"name\":\"file_path\",\"type\":\"string\",\"field-id\":100},"
                       "{\"name\":\"file_format\",\"type\":\"string\",\"field-id\":101},"
                       "{\"name\":\"partition\",\"type\":{\"type\":\"record\",\"name\":\"r102\","
                       "\"fields\":[");
    for (uint32_t i = 0; rc == FR_OK && i < spec->nfields; i++) {
        const struct ice_pfield *pf = &spec->fields[i];
        enum fr_ice_type t = ice_pfield_type(meta, pf);
        if (t == 0) {
            return ice_err(FR_EUNSUPPORTED, "partition field %s: unsupported transform %s",
                           pf->name, pf->transform);
        }
        rc = fr_buf_printf(b, "%s{\"name\":", i ? "," : "");
        if (rc == FR_OK) {
            rc = fr_buf_json_str(b, pf->name, strlen(pf->name));
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(b, ",\"type\":[\"null\",");
        }
        if (rc == FR_OK) {
            rc = avro_type_json(b, t);
        }
        if (rc == FR_OK) {
            rc = fr_buf_printf(b, "],\"default\":null,\"field-id\":%d}", (int)pf->field_id);
        }
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(b, "]},\"field-id\":102},"
                            "{\"name\":\"record_count\",\"type\":\"long\",\"field-id\":103},"
                            "{\"name\":\"file_size_in_bytes\",\"type\":\"long\",\"field-id\":104}");
    }
    if (rc == FR_OK) {
        rc = map_field_json(b, "column_sizes", 108, 117, 118, "long");
    }
    if (rc == FR_OK) {
        rc = map_field_json(b, "value_counts", 109, 119, 120, "long");
    }
    if (rc == FR_OK) {
        rc = map_field_json(b, "null_value_counts", 110, 121, 122, "long");
    }
    if (rc == FR_OK) {
        rc = map_field_json(b, "nan_value_counts", 137, 138, 139, "long");
    }
    if (rc == FR_OK) {
        rc = map_field_json(b, "lower_bounds", 125, 126, 127, "bytes");
    }
    if (rc == FR_OK) {
        rc = map_field_json(b, "upper_bounds", 128, 129, 130, "bytes");
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(b, ",{\"name\":\"key_metadata\",\"type\":[\"null\",\"bytes\"],\"default\":"
                            "null,\"field-id\":131},"
                            "{\"name\":\"split_offsets\",\"type\":[\"null\",{\"type\":\"array\","
                            "\"items\":\"long\",\"element-id\":133}],\"default\":null,\"field-id\":"
                            "132},"
                            "{\"name\":\"equality_ids\",\"type\":[\"null\",{\"type\":\"array\","
                            "\"items\":\"int\",\"element-id\":136}],\"default\":null,\"field-id\":"
                            "135},"
                            "{\"name\":\"sort_order_id\",\"type\":[\"null\",\"int\"],\"default\":"
                            "null,\"field-id\":140}"
                            "]},\"field-id\":2}]}");
    }
    return rc;
}

static const char mlist_schema[] =
    "{\"type\":\"record\",\"name\":\"manifest_file\",\"fields\":["
    "{\"name\":\"manifest_path\",\"type\":\"string\",\"field-id\":500},"
    "{\"name\":\"manifest_length\",\"type\":\"long\",\"field-id\":501},"
    "{\"name\":\"partition_spec_id\",\"type\":\"int\",\"field-id\":502},"
    "{\"name\":\"content\",\"type\":\"int\",\"field-id\":517},"
    "{\"name\":\"sequence_number\",\"type\":\"long\",\"field-id\":515},"
    "{\"name\":\"min_sequence_number\",\"type\":\"long\",\"field-id\":516},"
    "{\"name\":\"added_snapshot_id\",\"type\":\"long\",\"field-id\":503},"
    "{\"name\":\"added_files_count\",\"type\":\"int\",\"field-id\":504},"
    "{\"name\":\"existing_files_count\",\"type\":\"int\",\"field-id\":505},"
    "{\"name\":\"deleted_files_count\",\"type\":\"int\",\"field-id\":506},"
    "{\"name\":\"added_rows_count\",\"type\":\"long\",\"field-id\":512},"
    "{\"name\":\"existing_rows_count\",\"type\":\"long\",\"field-id\":513},"
    "{\"name\":\"deleted_rows_count\",\"type\":\"long\",\"field-id\":514},"
    "{\"name\":\"partitions\",\"type\":[\"null\",{\"type\":\"array\",\"items\":{\"type\":"
    "\"record\",\"name\":\"r508\",\"fields\":["
    "{\"name\":\"contains_null\",\"type\":\"boolean\",\"field-id\":509},"
    "{\"name\":\"contains_nan\",\"type\":[\"null\",\"boolean\"],\"default\":null,\"field-id\":518},"
    "{\"name\":\"lower_bound\",\"type\":[\"null\",\"bytes\"],\"default\":null,\"field-id\":510},"
    "{\"name\":\"upper_bound\",\"type\":[\"null\",\"bytes\"],\"default\":null,\"field-id\":511}"
    "]},\"element-id\":508}],\"default\":null,\"field-id\":507},"
    "{\"name\":\"key_metadata\",\"type\":[\"null\",\"bytes\"],\"default\":null,\"field-id\":519}"
    "]}";

/* --------------------------------------------------------- writing -- */

/* Optional long: union index then value. */
static int put_opt_long(struct fr_buf *b, int64_t v, bool present)
{
    int rc = ice_avro_long(b, present ? 1 : 0);
    return rc == FR_OK && present ? ice_avro_long(b, v) : rc;
}

enum metric_kind { M_SIZE, M_VALUES, M_NULLS, M_NANS, M_LOWER, M_UPPER };

static bool metric_present(const struct fr_ice_col_metrics *m, enum metric_kind k)
{
    switch (k) {
    case M_SIZE:
        return m->column_size >= 0;
    case M_VALUES:
        return m->value_count >= 0;
    case M_NULLS:
        return m->null_count >= 0;
    case M_NANS:
        return m->nan_count >= 0;
    case M_LOWER:
        return m->lower != NULL;
    case M_UPPER:
        return m->upper != NULL;
    }
    return false;
}

static int put_metric_map(struct fr_buf *b, const struct ice_dfile *f, enum metric_kind k)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < f->nmetrics; i++) {
        n += metric_present(&f->metrics[i], k);
    }
    if (n == 0) {
        return ice_avro_long(b, 0);
    }
    int rc = ice_avro_long(b, 1);
    if (rc == FR_OK) {
        rc = ice_avro_long(b, n);
    }
    for (uint32_t i = 0; rc == FR_OK && i < f->nmetrics; i++) {
        const struct fr_ice_col_metrics *m = &f->metrics[i];
        if (!metric_present(m, k)) {
            continue;
        }
        rc = ice_avro_long(b, m->field_id);
        if (rc < 0) {
            break;
        }
        switch (k) {
        case M_SIZE:
            rc = ice_avro_long(b, m->column_size);
            break;
        case M_VALUES:
            rc = ice_avro_long(b, m->value_count);
            break;
        case M_NULLS:
            rc = ice_avro_long(b, m->null_count);
            break;
        case M_NANS:
            rc = ice_avro_long(b, m->nan_count);
            break;
        case M_LOWER:
            rc = ice_avro_bytes(b, m->lower, m->lower_len);
            break;
        case M_UPPER:
            rc = ice_avro_bytes(b, m->upper, m->upper_len);
            break;
        }
    }
    return rc == FR_OK ? ice_avro_long(b, 0) : rc;
}

static int put_value(struct fr_buf *b, const struct fr_ice_value *v)
{
    switch (v->type) {
    case FR_ICE_BOOLEAN:
        return ice_avro_bool(b, v->v.b);
    case FR_ICE_INT:
    case FR_ICE_DATE:
        return ice_avro_long(b, v->v.i32);
    case FR_ICE_LONG:
    case FR_ICE_TIMESTAMP:
    case FR_ICE_TIMESTAMPTZ:
        return ice_avro_long(b, v->v.i64);
    case FR_ICE_DOUBLE:
        return ice_avro_double(b, v->v.f64);
    case FR_ICE_STRING:
        return ice_avro_bytes(b, v->v.str.ptr, v->v.str.len);
    }
    return FR_EINVAL;
}

static int put_entry(struct fr_buf *b, const struct ice_spec *spec, const struct ice_entry *e)
{
    const struct ice_dfile *f = &e->file;
    bool inherit = e->status == ICE_ADDED;
    int rc = ice_avro_long(b, e->status);
    if (rc == FR_OK) {
        rc = put_opt_long(b, e->snapshot_id, e->snapshot_id >= 0);
    }
    if (rc == FR_OK) {
        rc = put_opt_long(b, e->sequence_number, e->sequence_number >= 0);
    }
    if (rc == FR_OK) {
        rc = put_opt_long(b, e->file_sequence_number, e->file_sequence_number >= 0);
    }
    if (rc == FR_OK && !inherit && (e->sequence_number < 0 || e->file_sequence_number < 0)) {
        return ice_err(FR_EINVAL, "manifest entry %s: status %d without sequence numbers", f->path,
                       (int)e->status);
    }
    if (rc == FR_OK) {
        rc = ice_avro_long(b, f->content);
    }
    if (rc == FR_OK) {
        rc = ice_avro_str(b, f->path);
    }
    if (rc == FR_OK) {
        rc = ice_avro_str(b, f->format ? f->format : "PARQUET");
    }
    if (rc == FR_OK && f->npart != spec->nfields) {
        return ice_err(FR_EINVAL, "data file %s: %u partition values for a spec of %u fields",
                       f->path, f->npart, spec->nfields);
    }
    for (uint32_t i = 0; rc == FR_OK && i < f->npart; i++) {
        rc = ice_avro_long(b, f->part[i].is_null ? 0 : 1);
        if (rc == FR_OK && !f->part[i].is_null) {
            rc = put_value(b, &f->part[i]);
        }
    }
    if (rc == FR_OK) {
        rc = ice_avro_long(b, f->record_count);
    }
    if (rc == FR_OK) {
        rc = ice_avro_long(b, f->file_size);
    }
    for (int k = M_SIZE; rc == FR_OK && k <= M_NANS; k++) {
        rc = put_metric_map(b, f, (enum metric_kind)k);
    }
    if (rc == FR_OK) {
        rc = put_metric_map(b, f, M_LOWER);
    }
    if (rc == FR_OK) {
        rc = put_metric_map(b, f, M_UPPER);
    }
    if (rc == FR_OK) {
        rc = ice_avro_long(b, 0); /* key_metadata: null */
    }
    if (rc == FR_OK) {
        if (f->nsplit == 0) {
            rc = ice_avro_long(b, 0);
        } else {
            rc = ice_avro_long(b, 1);
            if (rc == FR_OK) {
                rc = ice_avro_long(b, f->nsplit);
            }
            for (uint32_t i = 0; rc == FR_OK && i < f->nsplit; i++) {
                rc = ice_avro_long(b, f->split[i]);
            }
            if (rc == FR_OK) {
                rc = ice_avro_long(b, 0);
            }
        }
    }
    if (rc == FR_OK) {
        rc = ice_avro_long(b, 0); /* equality_ids: null (data files) */
    }
    if (rc == FR_OK) {
        rc = put_opt_long(b, f->sort_order_id, f->sort_order_id >= 0);
    }
    return rc;
}

/* Partition summaries of the live-or-deleted entries, one per spec field. */
static int summarize_parts(const struct ice_spec *spec, const struct ice_entry *entries, uint32_t n,
                           struct ice_mfile *mf, struct fr_ice_arena *arena)
{
    mf->nparts = spec->nfields;
    if (spec->nfields == 0) {
        mf->parts = NULL;
        return FR_OK;
    }
    mf->parts = ice_alloc(arena, sizeof *mf->parts * spec->nfields);
    if (!mf->parts) {
        return FR_ENOMEM;
    }
    for (uint32_t p = 0; p < spec->nfields; p++) {
        const struct fr_ice_value *lo = NULL, *hi = NULL;
        struct ice_part_summary *ps = &mf->parts[p];
        ps->contains_nan = 0;
        for (uint32_t i = 0; i < n; i++) {
            const struct fr_ice_value *v = &entries[i].file.part[p];
            if (v->is_null) {
                ps->contains_null = true;
                continue;
            }
            if (!lo || ice_value_cmp(v, lo) < 0) {
                lo = v;
            }
            if (!hi || ice_value_cmp(v, hi) > 0) {
                hi = v;
            }
        }
        uint8_t tmp[1024];
        uint32_t len;
        if (lo && ice_value_bin(lo, tmp, sizeof tmp, &len) == FR_OK) {
            ps->lower = ice_memdup(arena, tmp, len);
            ps->lower_len = len;
        }
        if (hi && ice_value_bin(hi, tmp, sizeof tmp, &len) == FR_OK) {
            ps->upper = ice_memdup(arena, tmp, len);
            ps->upper_len = len;
        }
    }
    return FR_OK;
}

int ice_manifest_write(const struct ice_meta *meta, const struct ice_schema *schema,
                       const struct ice_spec *spec, int64_t snapshot_id,
                       const struct ice_entry *entries, uint32_t nentries, struct fr_buf *out,
                       struct ice_mfile *mf, struct fr_ice_arena *arena)
{
    struct fr_buf sjson, schema_text, spec_text;
    struct ice_avro_writer w;
    char schema_id[16], spec_id[16];
    fr_buf_init(&sjson, 1u << 20);
    fr_buf_init(&schema_text, 4u << 20);
    fr_buf_init(&spec_text, 1u << 20);
    memset(&w, 0, sizeof w);
    int rc = manifest_schema_json(meta, spec, &sjson);
    if (rc == FR_OK) {
        rc = ice_schema_json(schema, &schema_text);
    }
    if (rc == FR_OK) {
        rc = ice_spec_fields_json(spec, &spec_text);
    }
    if (rc < 0) {
        goto cleanup;
    }
    snprintf(schema_id, sizeof schema_id, "%d", (int)schema->schema_id);
    snprintf(spec_id, sizeof spec_id, "%d", (int)spec->spec_id);
    struct fr_ice_kv kv[] = {
        {"schema", fr_buf_cstr(&schema_text)},
        {"schema-id", schema_id},
        {"partition-spec", fr_buf_cstr(&spec_text)},
        {"partition-spec-id", spec_id},
        {"format-version", "2"},
        {"content", "data"},
    };
    rc = ice_avro_begin(&w, out, fr_buf_cstr(&sjson), kv, sizeof kv / sizeof kv[0]);
    memset(mf, 0, sizeof *mf);
    mf->spec_id = spec->spec_id;
    mf->content = 0;
    mf->sequence_number = -1;
    mf->min_sequence_number = -1;
    mf->added_snapshot_id = snapshot_id;
    for (uint32_t i = 0; rc == FR_OK && i < nentries; i++) {
        const struct ice_entry *e = &entries[i];
        rc = put_entry(ice_avro_record(&w), spec, e);
        if (rc == FR_OK) {
            rc = ice_avro_record_end(&w);
        }
        if (e->status == ICE_ADDED) {
            mf->added_files++;
            mf->added_rows += e->file.record_count;
        } else if (e->status == ICE_EXISTING) {
            mf->existing_files++;
            mf->existing_rows += e->file.record_count;
        } else {
            mf->deleted_files++;
            mf->deleted_rows += e->file.record_count;
        }
        if (e->status != ICE_DELETED && e->sequence_number >= 0 &&
            (mf->min_sequence_number < 0 || e->sequence_number < mf->min_sequence_number)) {
            mf->min_sequence_number = e->sequence_number;
        }
    }
    if (rc == FR_OK) {
        rc = ice_avro_finish(&w);
    }
    if (rc == FR_OK) {
        rc = summarize_parts(spec, entries, nentries, mf, arena);
    }
cleanup:
    ice_avro_writer_free(&w);
    fr_buf_free(&sjson);
    fr_buf_free(&schema_text);
    fr_buf_free(&spec_text);
    return rc;
}

static int put_opt_bytes(struct fr_buf *b, const uint8_t *p, uint32_t len)
{
    if (!p) {
        return ice_avro_long(b, 0);
    }
    int rc = ice_avro_long(b, 1);
    return rc == FR_OK ? ice_avro_bytes(b, p, len) : rc;
}

int ice_mlist_write(int64_t snapshot_id, int64_t parent_id, int64_t seq,
                    const struct ice_mfile *mfiles, uint32_t n, struct fr_buf *out)
{
    char sid[24], pid[24], sq[24];
    snprintf(sid, sizeof sid, "%" PRId64, snapshot_id);
    if (parent_id >= 0) {
        snprintf(pid, sizeof pid, "%" PRId64, parent_id);
    } else {
        snprintf(pid, sizeof pid, "null");
    }
    snprintf(sq, sizeof sq, "%" PRId64, seq);
    struct fr_ice_kv kv[] = {
        {"snapshot-id", sid},
        {"parent-snapshot-id", pid},
        {"sequence-number", sq},
        {"format-version", "2"},
    };
    struct ice_avro_writer w;
    int rc = ice_avro_begin(&w, out, mlist_schema, kv, sizeof kv / sizeof kv[0]);
    for (uint32_t i = 0; rc == FR_OK && i < n; i++) {
        const struct ice_mfile *m = &mfiles[i];
        struct fr_buf *b = ice_avro_record(&w);
        int64_t mseq = m->sequence_number >= 0 ? m->sequence_number : seq;
        int64_t mmin = m->min_sequence_number;
        if (m->sequence_number < 0) {
            /* written by this snapshot: entries that inherit get seq */
            if (mmin < 0 || (m->added_files > 0 && mmin > seq)) {
                mmin = seq;
            }
        } else if (mmin < 0) {
            mmin = mseq;
        }
        rc = ice_avro_str(b, m->path);
        if (rc == FR_OK) {
            rc = ice_avro_long(b, m->length);
        }
        if (rc == FR_OK) {
            rc = ice_avro_long(b, m->spec_id);
        }
        if (rc == FR_OK) {
            rc = ice_avro_long(b, m->content);
        }
        if (rc == FR_OK) {
            rc = ice_avro_long(b, mseq);
        }
        if (rc == FR_OK) {
            rc = ice_avro_long(b, mmin);
        }
        if (rc == FR_OK) {
            rc = ice_avro_long(b, m->added_snapshot_id);
        }
        int64_t counts[] = {m->added_files, m->existing_files, m->deleted_files,
                            m->added_rows,  m->existing_rows,  m->deleted_rows};
        for (size_t k = 0; rc == FR_OK && k < 6; k++) {
            rc = ice_avro_long(b, counts[k]);
        }
        if (rc == FR_OK) {
            /* partitions: always a list, empty for an unpartitioned spec */
            rc = ice_avro_long(b, 1);
            uint32_t np = m->parts ? m->nparts : 0;
            if (rc == FR_OK && np > 0) {
                rc = ice_avro_long(b, np);
            }
            for (uint32_t p = 0; rc == FR_OK && p < np; p++) {
                const struct ice_part_summary *ps = &m->parts[p];
                rc = ice_avro_bool(b, ps->contains_null);
                if (rc == FR_OK) {
                    rc = ice_avro_long(b, ps->contains_nan < 0 ? 0 : 1);
                }
                if (rc == FR_OK && ps->contains_nan >= 0) {
                    rc = ice_avro_bool(b, ps->contains_nan != 0);
                }
                if (rc == FR_OK) {
                    rc = put_opt_bytes(b, ps->lower, ps->lower_len);
                }
                if (rc == FR_OK) {
                    rc = put_opt_bytes(b, ps->upper, ps->upper_len);
                }
            }
            if (rc == FR_OK) {
                rc = ice_avro_long(b, 0);
            }
        }
        if (rc == FR_OK) {
            rc = ice_avro_long(b, 0); /* key_metadata: null */
        }
        if (rc == FR_OK) {
            rc = ice_avro_record_end(&w);
        }
    }
    if (rc == FR_OK) {
        rc = ice_avro_finish(&w);
    }
    ice_avro_writer_free(&w);
    return rc;
}

/* --------------------------------------------------------- reading -- */

static char *val_str(struct fr_ice_arena *arena, const struct ice_avro_val *v)
{
    if (!v || (v->kind != AV_STRING && v->kind != AV_BYTES)) {
        return NULL;
    }
    return ice_strndup(arena, (const char *)v->u.bytes.p, v->u.bytes.n);
}

static struct fr_ice_col_metrics *metric_slot(struct ice_dfile *f, int32_t id, uint32_t cap)
{
    for (uint32_t i = 0; i < f->nmetrics; i++) {
        if (f->metrics[i].field_id == id) {
            return &f->metrics[i];
        }
    }
    if (f->nmetrics >= cap) {
        return NULL;
    }
    struct fr_ice_col_metrics *m = &f->metrics[f->nmetrics++];
    m->field_id = id;
    m->column_size = m->value_count = m->null_count = m->nan_count = -1;
    return m;
}

static int read_metric_map(struct ice_dfile *f, const struct ice_avro_val *map, enum metric_kind k,
                           uint32_t cap, struct fr_ice_arena *arena)
{
    if (!map) {
        return FR_OK;
    }
    if (map->kind != AV_ARRAY) {
        return ice_err(FR_ECORRUPT, "data file %s: metric map is not an array", f->path);
    }
    for (uint32_t i = 0; i < map->u.list.n; i++) {
        const struct ice_avro_val *kvrec = &map->u.list.items[i];
        if (kvrec->kind != AV_RECORD || kvrec->u.list.n < 2) {
            return ice_err(FR_ECORRUPT, "data file %s: bad metric map entry", f->path);
        }
        const struct ice_avro_val *key = &kvrec->u.list.items[0];
        const struct ice_avro_val *val = &kvrec->u.list.items[1];
        if (key->kind != AV_INT && key->kind != AV_LONG) {
            return ice_err(FR_ECORRUPT, "data file %s: bad metric key", f->path);
        }
        struct fr_ice_col_metrics *m = metric_slot(f, (int32_t)key->u.l, cap);
        if (!m) {
            return ice_err(FR_ECORRUPT, "data file %s: too many metric columns", f->path);
        }
        if (val->kind == AV_NULL) {
            continue;
        }
        switch (k) {
        case M_SIZE:
            m->column_size = val->u.l;
            break;
        case M_VALUES:
            m->value_count = val->u.l;
            break;
        case M_NULLS:
            m->null_count = val->u.l;
            break;
        case M_NANS:
            m->nan_count = val->u.l;
            break;
        case M_LOWER:
        case M_UPPER: {
            uint8_t *p = ice_memdup(arena, val->u.bytes.p, val->u.bytes.n);
            if (!p) {
                return FR_ENOMEM;
            }
            if (k == M_LOWER) {
                m->lower = p;
                m->lower_len = (uint32_t)val->u.bytes.n;
            } else {
                m->upper = p;
                m->upper_len = (uint32_t)val->u.bytes.n;
            }
            break;
        }
        }
    }
    return FR_OK;
}

static int read_part_value(const struct ice_avro_val *v, struct fr_ice_value *out,
                           struct fr_ice_arena *arena)
{
    memset(out, 0, sizeof *out);
    if (!v || v->kind == AV_NULL) {
        out->is_null = true;
        return FR_OK;
    }
    switch (v->kind) {
    case AV_BOOLEAN:
        out->type = FR_ICE_BOOLEAN;
        out->v.b = v->u.b;
        return FR_OK;
    case AV_INT:
        out->type = FR_ICE_INT;
        out->v.i32 = (int32_t)v->u.l;
        return FR_OK;
    case AV_LONG:
        out->type = FR_ICE_LONG;
        out->v.i64 = v->u.l;
        return FR_OK;
    case AV_FLOAT:
    case AV_DOUBLE:
        out->type = FR_ICE_DOUBLE;
        out->v.f64 = v->u.d;
        return FR_OK;
    case AV_STRING:
        out->type = FR_ICE_STRING;
        out->v.str.ptr = ice_strndup(arena, (const char *)v->u.bytes.p, v->u.bytes.n);
        out->v.str.len = v->u.bytes.n;
        return out->v.str.ptr ? FR_OK : FR_ENOMEM;
    default:
        return ice_err(FR_EUNSUPPORTED, "partition value of an unsupported Avro type");
    }
}

int ice_manifest_read(const uint8_t *data, size_t len, const struct ice_mfile *mf,
                      struct fr_ice_arena *arena, struct ice_entry **entries, uint32_t *n)
{
    struct ice_avro_file file;
    int rc = ice_avro_read(data, len, &file);
    if (rc < 0) {
        return rc;
    }
    const char *content = ice_avro_meta(&file, "content");
    *n = 0;
    *entries = NULL;
    if (content && strcmp(content, "data") != 0) {
        goto cleanup; /* delete manifests: freshet writes none; readers of data skip them */
    }
    *entries = ice_alloc(arena, sizeof **entries * (file.nrecords + 1));
    if (!*entries) {
        rc = FR_ENOMEM;
        goto cleanup;
    }
    for (uint32_t i = 0; i < file.nrecords; i++) {
        const struct ice_avro_val *rec = &file.records[i];
        struct ice_entry *e = &(*entries)[i];
        int64_t status = -1, v;
        if (!ice_avro_get_long(rec, 0, &status) || status < 0 || status > 2) {
            rc = ice_err(FR_ECORRUPT, "manifest entry %u: bad status", i);
            goto cleanup;
        }
        e->status = (int32_t)status;
        e->snapshot_id = ice_avro_get_long(rec, 1, &v) ? v : mf->added_snapshot_id;
        e->sequence_number = ice_avro_get_long(rec, 3, &v) ? v : -1;
        e->file_sequence_number = ice_avro_get_long(rec, 4, &v) ? v : -1;
        if (e->sequence_number < 0) {
            if (e->status != ICE_ADDED) {
                rc = ice_err(FR_ECORRUPT, "manifest entry %u: status %d without a sequence number",
                             i, (int)e->status);
                goto cleanup;
            }
            e->sequence_number = mf->sequence_number;
        }
        if (e->file_sequence_number < 0) {
            e->file_sequence_number =
                e->status == ICE_ADDED ? mf->sequence_number : e->sequence_number;
        }
        const struct ice_avro_val *df = ice_avro_field(rec, 2);
        struct ice_dfile *f = &e->file;
        f->path = val_str(arena, ice_avro_field(df, 100));
        f->format = val_str(arena, ice_avro_field(df, 101));
        if (!df || !f->path || !f->format) {
            rc = ice_err(FR_ECORRUPT, "manifest entry %u: data_file without path or format", i);
            goto cleanup;
        }
        f->content = ice_avro_get_long(df, 134, &v) ? (int32_t)v : 0;
        if (!ice_avro_get_long(df, 103, &f->record_count) ||
            !ice_avro_get_long(df, 104, &f->file_size)) {
            rc = ice_err(FR_ECORRUPT, "data file %s: no record count or size", f->path);
            goto cleanup;
        }
        const struct ice_avro_val *part = ice_avro_field(df, 102);
        if (part && part->kind == AV_RECORD && part->u.list.n > 0) {
            f->npart = part->u.list.n;
            f->part = ice_alloc(arena, sizeof *f->part * f->npart);
            if (!f->part) {
                rc = FR_ENOMEM;
                goto cleanup;
            }
            for (uint32_t p = 0; p < f->npart; p++) {
                rc = read_part_value(&part->u.list.items[p], &f->part[p], arena);
                if (rc < 0) {
                    goto cleanup;
                }
            }
        }
        static const struct {
            int32_t id;
            enum metric_kind k;
        } maps[] = {{108, M_SIZE}, {109, M_VALUES}, {110, M_NULLS},
                    {137, M_NANS}, {125, M_LOWER},  {128, M_UPPER}};
        uint32_t cap = 0;
        for (size_t m = 0; m < sizeof maps / sizeof maps[0]; m++) {
            const struct ice_avro_val *mv = ice_avro_field(df, maps[m].id);
            cap += mv && mv->kind == AV_ARRAY ? mv->u.list.n : 0;
        }
        if (cap) {
            f->metrics = ice_alloc(arena, sizeof *f->metrics * cap);
            if (!f->metrics) {
                rc = FR_ENOMEM;
                goto cleanup;
            }
        }
        for (size_t m = 0; m < sizeof maps / sizeof maps[0] && rc == FR_OK; m++) {
            rc = read_metric_map(f, ice_avro_field(df, maps[m].id), maps[m].k, cap, arena);
        }
        if (rc < 0) {
            goto cleanup;
        }
        const struct ice_avro_val *splits = ice_avro_field(df, 132);
        if (splits && splits->kind == AV_ARRAY && splits->u.list.n) {
            f->nsplit = splits->u.list.n;
            f->split = ice_alloc(arena, sizeof *f->split * f->nsplit);
            if (!f->split) {
                rc = FR_ENOMEM;
                goto cleanup;
            }
            for (uint32_t s = 0; s < f->nsplit; s++) {
                f->split[s] = splits->u.list.items[s].u.l;
            }
        }
        f->sort_order_id = ice_avro_get_long(df, 140, &v) ? (int32_t)v : -1;
        (*n)++;
    }
cleanup:
    ice_avro_file_free(&file);
    return rc;
}

int ice_mlist_read(const uint8_t *data, size_t len, struct fr_ice_arena *arena,
                   struct ice_mfile **mfiles, uint32_t *n)
{
    struct ice_avro_file file;
    int rc = ice_avro_read(data, len, &file);
    if (rc < 0) {
        return rc;
    }
    *n = 0;
    *mfiles = ice_alloc(arena, sizeof **mfiles * (file.nrecords + 1));
    if (!*mfiles) {
        rc = FR_ENOMEM;
        goto cleanup;
    }
    for (uint32_t i = 0; i < file.nrecords; i++) {
        const struct ice_avro_val *rec = &file.records[i];
        struct ice_mfile *m = &(*mfiles)[i];
        int64_t v;
        m->path = val_str(arena, ice_avro_field(rec, 500));
        if (!m->path || !ice_avro_get_long(rec, 501, &m->length)) {
            rc = ice_err(FR_ECORRUPT, "manifest list row %u: no path or length", i);
            goto cleanup;
        }
        m->spec_id = ice_avro_get_long(rec, 502, &v) ? (int32_t)v : 0;
        m->content = ice_avro_get_long(rec, 517, &v) ? (int32_t)v : 0;
        m->sequence_number = ice_avro_get_long(rec, 515, &v) ? v : 0;
        m->min_sequence_number = ice_avro_get_long(rec, 516, &v) ? v : m->sequence_number;
        m->added_snapshot_id = ice_avro_get_long(rec, 503, &v) ? v : -1;
        m->added_files = ice_avro_get_long(rec, 504, &v) ? (int32_t)v : 0;
        m->existing_files = ice_avro_get_long(rec, 505, &v) ? (int32_t)v : 0;
        m->deleted_files = ice_avro_get_long(rec, 506, &v) ? (int32_t)v : 0;
        m->added_rows = ice_avro_get_long(rec, 512, &v) ? v : 0;
        m->existing_rows = ice_avro_get_long(rec, 513, &v) ? v : 0;
        m->deleted_rows = ice_avro_get_long(rec, 514, &v) ? v : 0;
        const struct ice_avro_val *parts = ice_avro_field(rec, 507);
        if (parts && parts->kind == AV_ARRAY) {
            m->nparts = parts->u.list.n;
            m->parts = ice_alloc(arena, sizeof *m->parts * (m->nparts + 1));
            if (!m->parts) {
                rc = FR_ENOMEM;
                goto cleanup;
            }
            for (uint32_t p = 0; p < m->nparts; p++) {
                const struct ice_avro_val *ps = &parts->u.list.items[p];
                const struct ice_avro_val *cn = ice_avro_field(ps, 509);
                const struct ice_avro_val *nan = ice_avro_field(ps, 518);
                const struct ice_avro_val *lo = ice_avro_field(ps, 510);
                const struct ice_avro_val *hi = ice_avro_field(ps, 511);
                if ((cn && cn->kind != AV_BOOLEAN) || (nan && nan->kind != AV_BOOLEAN) ||
                    (lo && lo->kind != AV_BYTES) || (hi && hi->kind != AV_BYTES)) {
                    rc = ice_err(FR_ECORRUPT,
                                 "manifest list row %u: partition summary of the wrong types", i);
                    goto cleanup;
                }
                m->parts[p].contains_null = cn && cn->u.b;
                m->parts[p].contains_nan = nan ? nan->u.b : -1;
                if (lo) {
                    m->parts[p].lower = ice_memdup(arena, lo->u.bytes.p, lo->u.bytes.n);
                    m->parts[p].lower_len = (uint32_t)lo->u.bytes.n;
                }
                if (hi) {
                    m->parts[p].upper = ice_memdup(arena, hi->u.bytes.p, hi->u.bytes.n);
                    m->parts[p].upper_len = (uint32_t)hi->u.bytes.n;
                }
            }
        }
        (*n)++;
    }
cleanup:
    ice_avro_file_free(&file);
    return rc;
}
