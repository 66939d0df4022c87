/*
 * metadata.c — Iceberg v2 table metadata JSON: written from struct ice_meta
 * and parsed back with the strict scanner in core/json.h.
 *
 * Written fields, in order (ICE-SPEC "Table Metadata Fields"; every field
 * v2 requires is always written, the v1-only "schema" / "partition-spec"
 * never):
 *   format-version 2 · table-uuid · location · last-sequence-number ·
 *   last-updated-ms · last-column-id · current-schema-id · schemas ·
 *   default-spec-id · partition-specs · last-partition-id ·
 *   default-sort-order-id · sort-orders · properties · current-snapshot-id
 *   (-1 for none, as Java writes v2) · refs (main = current) · snapshots ·
 *   statistics / partition-statistics (kept verbatim when another engine
 *   wrote them) · snapshot-log · metadata-log
 *
 * Longs (snapshot ids, timestamps) are bare JSON numbers. freshet's own
 * snapshot ids stay below 2^53 so JavaScript readers (icebird parses with
 * JSON.parse) see them exactly. Fields freshet does not model (sort orders,
 * other refs, column types of other engines) are carried through verbatim,
 * so a table other engines also write keeps what they put there.
 *
 * Parse errors are FR_ECORRUPT with the missing or malformed field named;
 * the caller adds the table and file. Pure functions: thread-safe.
 */
#include "iceberg/iceberg_int.h"

#include "core/err.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- names -- */

static const char *const type_names[] = {
    [FR_ICE_BOOLEAN] = "boolean",     [FR_ICE_INT] = "int",
    [FR_ICE_LONG] = "long",           [FR_ICE_DOUBLE] = "double",
    [FR_ICE_STRING] = "string",       [FR_ICE_DATE] = "date",
    [FR_ICE_TIMESTAMP] = "timestamp", [FR_ICE_TIMESTAMPTZ] = "timestamptz",
};

const char *ice_type_name(enum fr_ice_type type)
{
    return type >= FR_ICE_BOOLEAN && type <= FR_ICE_TIMESTAMPTZ ? type_names[type] : "unknown";
}

enum fr_ice_type ice_type_parse(const char *name)
{
    for (int t = FR_ICE_BOOLEAN; t <= FR_ICE_TIMESTAMPTZ; t++) {
        if (strcmp(name, type_names[t]) == 0) {
            return (enum fr_ice_type)t;
        }
    }
    return 0;
}

const char *ice_transform_name(enum fr_ice_transform tf)
{
    switch (tf) {
    case FR_ICE_IDENTITY:
        return "identity";
    case FR_ICE_DAY:
        return "day";
    case FR_ICE_HOUR:
        return "hour";
    }
    return "unknown";
}

static enum fr_ice_transform transform_parse(const char *s)
{
    if (strcmp(s, "identity") == 0) {
        return FR_ICE_IDENTITY;
    }
    if (strcmp(s, "day") == 0) {
        return FR_ICE_DAY;
    }
    if (strcmp(s, "hour") == 0) {
        return FR_ICE_HOUR;
    }
    return 0;
}

/* ------------------------------------------------------------ lookups -- */

const struct ice_schema *ice_meta_schema(const struct ice_meta *meta, int32_t schema_id)
{
    for (uint32_t i = 0; i < meta->nschemas; i++) {
        if (meta->schemas[i].schema_id == schema_id) {
            return &meta->schemas[i];
        }
    }
    return NULL;
}

const struct ice_spec *ice_meta_spec(const struct ice_meta *meta, int32_t spec_id)
{
    for (uint32_t i = 0; i < meta->nspecs; i++) {
        if (meta->specs[i].spec_id == spec_id) {
            return &meta->specs[i];
        }
    }
    return NULL;
}

const struct ice_snapshot *ice_meta_snapshot(const struct ice_meta *meta, int64_t snapshot_id)
{
    for (uint32_t i = 0; i < meta->nsnapshots; i++) {
        if (meta->snapshots[i].pub.snapshot_id == snapshot_id) {
            return &meta->snapshots[i];
        }
    }
    return NULL;
}

const char *ice_meta_prop(const struct ice_meta *meta, const char *key)
{
    for (uint32_t i = 0; i < meta->nprops; i++) {
        if (strcmp(meta->props[i].key, key) == 0) {
            return meta->props[i].value;
        }
    }
    return NULL;
}

int64_t ice_meta_prop_int(const struct ice_meta *meta, const char *key, int64_t dflt)
{
    const char *v = ice_meta_prop(meta, key);
    if (!v || !*v) {
        return dflt;
    }
    char *end;
    long long n = strtoll(v, &end, 10);
    return *end ? dflt : (int64_t)n;
}

const char *ice_summary_get(const struct fr_ice_snapshot *snap, const char *key)
{
    for (uint32_t i = 0; i < snap->nsummary; i++) {
        if (strcmp(snap->summary[i].key, key) == 0) {
            return snap->summary[i].value;
        }
    }
    return NULL;
}

enum fr_ice_type ice_pfield_type(const struct ice_meta *meta, const struct ice_pfield *pf)
{
    if (pf->tf == FR_ICE_DAY) {
        return FR_ICE_DATE;
    }
    if (pf->tf == FR_ICE_HOUR) {
        return FR_ICE_INT;
    }
    if (pf->tf != FR_ICE_IDENTITY) {
        return 0;
    }
    const struct ice_schema *s = ice_meta_schema(meta, meta->current_schema_id);
    for (uint32_t i = 0; s && i < s->nfields; i++) {
        if (s->fields[i].id == pf->source_id) {
            return s->fields[i].type;
        }
    }
    return 0;
}

/* ------------------------------------------------------------ writing -- */

static int put_str(struct fr_buf *b, const char *s)
{
    return fr_buf_json_str(b, s, strlen(s));
}

int ice_schema_json(const struct ice_schema *schema, struct fr_buf *b)
{
    int rc = fr_buf_printf(b, "{\"type\":\"struct\",\"schema-id\":%d,\"fields\":[",
                           (int)schema->schema_id);
    for (uint32_t i = 0; rc == FR_OK && i < schema->nfields; i++) {
        const struct fr_ice_field *f = &schema->fields[i];
        rc = fr_buf_printf(b, "%s{\"id\":%d,\"name\":", i ? "," : "", (int)f->id);
        if (rc == FR_OK) {
            rc = put_str(b, f->name);
        }
        if (rc == FR_OK) {
            rc = fr_buf_printf(b, ",\"required\":%s,\"type\":", f->required ? "true" : "false");
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(b, schema->type_names[i]);
        }
        if (rc == FR_OK && f->doc) {
            rc = fr_buf_puts(b, ",\"doc\":");
            if (rc == FR_OK) {
                rc = put_str(b, f->doc);
            }
        }
        if (rc == FR_OK) {
            rc = fr_buf_putc(b, '}');
        }
    }
    return rc == FR_OK ? fr_buf_puts(b, "]}") : rc;
}

int ice_spec_fields_json(const struct ice_spec *spec, struct fr_buf *b)
{
    int rc = fr_buf_putc(b, '[');
    for (uint32_t i = 0; rc == FR_OK && i < spec->nfields; i++) {
        const struct ice_pfield *pf = &spec->fields[i];
        rc = fr_buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
        if (rc == FR_OK) {
            rc = put_str(b, pf->name);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(b, ",\"transform\":");
        }
        if (rc == FR_OK) {
            rc = put_str(b, pf->transform);
        }
        if (rc == FR_OK) {
            rc = fr_buf_printf(b, ",\"source-id\":%d,\"field-id\":%d}", (int)pf->source_id,
                               (int)pf->field_id);
        }
    }
    return rc == FR_OK ? fr_buf_putc(b, ']') : rc;
}

static int put_kv_object(struct fr_buf *b, const struct fr_ice_kv *kv, uint32_t n)
{
    int rc = fr_buf_putc(b, '{');
    for (uint32_t i = 0; rc == FR_OK && i < n; i++) {
        if (i) {
            rc = fr_buf_putc(b, ',');
        }
        if (rc == FR_OK) {
            rc = put_str(b, kv[i].key);
        }
        if (rc == FR_OK) {
            rc = fr_buf_putc(b, ':');
        }
        if (rc == FR_OK) {
            rc = put_str(b, kv[i].value);
        }
    }
    return rc == FR_OK ? fr_buf_putc(b, '}') : rc;
}

static int put_snapshot(struct fr_buf *b, const struct ice_snapshot *s)
{
    int rc = fr_buf_printf(b, "{\"snapshot-id\":%" PRId64, s->pub.snapshot_id);
    if (rc == FR_OK && s->pub.parent_id >= 0) {
        rc = fr_buf_printf(b, ",\"parent-snapshot-id\":%" PRId64, s->pub.parent_id);
    }
    if (rc == FR_OK) {
        rc = fr_buf_printf(
            b, ",\"sequence-number\":%" PRId64 ",\"timestamp-ms\":%" PRId64 ",\"manifest-list\":",
            s->pub.sequence_number, s->pub.timestamp_ms);
    }
    if (rc == FR_OK) {
        rc = put_str(b, s->pub.manifest_list);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(b, ",\"summary\":");
    }
    if (rc == FR_OK) {
        rc = put_kv_object(b, s->pub.summary, s->pub.nsummary);
    }
    if (rc == FR_OK && s->schema_id >= 0) {
        rc = fr_buf_printf(b, ",\"schema-id\":%d", (int)s->schema_id);
    }
    return rc == FR_OK ? fr_buf_putc(b, '}') : rc;
}

int ice_meta_write(const struct ice_meta *m, struct fr_buf *b)
{
    int rc = fr_buf_printf(b, "{\"format-version\":%d,\"table-uuid\":\"%s\",\"location\":",
                           m->format_version, m->uuid);
    if (rc == FR_OK) {
        rc = put_str(b, m->location);
    }
    if (rc == FR_OK) {
        rc = fr_buf_printf(b,
                           ",\"last-sequence-number\":%" PRId64 ",\"last-updated-ms\":%" PRId64
                           ",\"last-column-id\":%d,\"current-schema-id\":%d,\"schemas\":[",
                           m->last_sequence_number, m->last_updated_ms, (int)m->last_column_id,
                           (int)m->current_schema_id);
    }
    for (uint32_t i = 0; rc == FR_OK && i < m->nschemas; i++) {
        if (i) {
            rc = fr_buf_putc(b, ',');
        }
        if (rc == FR_OK) {
            rc = ice_schema_json(&m->schemas[i], b);
        }
    }
    if (rc == FR_OK) {
        rc = fr_buf_printf(b, "],\"default-spec-id\":%d,\"partition-specs\":[",
                           (int)m->default_spec_id);
    }
    for (uint32_t i = 0; rc == FR_OK && i < m->nspecs; i++) {
        rc = fr_buf_printf(b, "%s{\"spec-id\":%d,\"fields\":", i ? "," : "",
                           (int)m->specs[i].spec_id);
        if (rc == FR_OK) {
            rc = ice_spec_fields_json(&m->specs[i], b);
        }
        if (rc == FR_OK) {
            rc = fr_buf_putc(b, '}');
        }
    }
    if (rc == FR_OK) {
        rc = fr_buf_printf(b,
                           "],\"last-partition-id\":%d,\"default-sort-order-id\":%d,"
                           "\"sort-orders\":%s,\"properties\":",
                           (int)m->last_partition_id, (int)m->default_sort_order_id,
                           m->sort_orders_raw ? m->sort_orders_raw
                                              : "[{\"order-id\":0,\"fields\":[]}]");
    }
    if (rc == FR_OK) {
        rc = put_kv_object(b, m->props, m->nprops);
    }
    if (rc == FR_OK) {
        rc = fr_buf_printf(b, ",\"current-snapshot-id\":%" PRId64 ",\"refs\":{",
                           m->current_snapshot_id);
    }
    bool first = true;
    if (rc == FR_OK && m->current_snapshot_id >= 0) {
        rc = fr_buf_printf(b, "\"main\":{\"snapshot-id\":%" PRId64 ",\"type\":\"branch\"}",
                           m->current_snapshot_id);
        first = false;
    }
    for (uint32_t i = 0; rc == FR_OK && i < m->nrefs; i++) {
        rc = fr_buf_puts(b, first ? "" : ",");
        first = false;
        if (rc == FR_OK) {
            rc = put_str(b, m->refs[i].name);
        }
        if (rc == FR_OK) {
            rc = fr_buf_putc(b, ':');
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(b, m->refs[i].raw);
        }
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(b, "},\"snapshots\":[");
    }
    for (uint32_t i = 0; rc == FR_OK && i < m->nsnapshots; i++) {
        if (i) {
            rc = fr_buf_putc(b, ',');
        }
        if (rc == FR_OK) {
            rc = put_snapshot(b, &m->snapshots[i]);
        }
    }
    if (rc == FR_OK) {
        rc = fr_buf_putc(b, ']');
    }
    if (rc == FR_OK && m->statistics_raw) {
        rc = fr_buf_printf(b, ",\"statistics\":%s", m->statistics_raw);
    }
    if (rc == FR_OK && m->partition_statistics_raw) {
        rc = fr_buf_printf(b, ",\"partition-statistics\":%s", m->partition_statistics_raw);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(b, ",\"snapshot-log\":[");
    }
    for (uint32_t i = 0; rc == FR_OK && i < m->nsnapshot_log; i++) {
        rc = fr_buf_printf(b, "%s{\"timestamp-ms\":%" PRId64 ",\"snapshot-id\":%" PRId64 "}",
                           i ? "," : "", m->snapshot_log[i].timestamp_ms,
                           m->snapshot_log[i].snapshot_id);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(b, "],\"metadata-log\":[");
    }
    for (uint32_t i = 0; rc == FR_OK && i < m->nmetadata_log; i++) {
        rc = fr_buf_printf(b, "%s{\"timestamp-ms\":%" PRId64 ",\"metadata-file\":", i ? "," : "",
                           m->metadata_log[i].timestamp_ms);
        if (rc == FR_OK) {
            rc = put_str(b, m->metadata_log[i].file);
        }
        if (rc == FR_OK) {
            rc = fr_buf_putc(b, '}');
        }
    }
    return rc == FR_OK ? fr_buf_puts(b, "]}\n") : rc;
}

/* ------------------------------------------------------------ parsing -- */

struct pctx {
    struct ice_meta *m;
    const char *what; /* the field being parsed, for the message */
};

static int bad(struct pctx *c, const char *field)
{
    return ice_err(FR_ECORRUPT, "%s%s%s", c->what ? c->what : "", c->what ? ": " : "", field);
}

/* The root object's members, indexed once per parse: fr_json_member scans
 * (and re-validates) the whole object per lookup, and the root holds the
 * large snapshots array, so ~20 lookups would cost ~20 passes. */
#define ROOT_MEMBERS 64
struct root_index {
    const char *start; /* the indexed object */
    uint32_t n;
    struct {
        struct fr_json_val key, val;
    } m[ROOT_MEMBERS];
};
static _Thread_local struct root_index root_idx;

static void index_root(const struct fr_json_val *root)
{
    struct ice_jit it;
    root_idx.start = NULL;
    root_idx.n = 0;
    ice_jit_init(&it, root);
    while (root_idx.n < ROOT_MEMBERS &&
           ice_jit_next(&it, &root_idx.m[root_idx.n].key, &root_idx.m[root_idx.n].val) == 1) {
        root_idx.n++;
    }
    if (ice_jit_next(&it, NULL, &(struct fr_json_val){0}) == 0) {
        root_idx.start = root->start; /* complete: usable */
    }
}

static int get_member(const struct fr_json_val *obj, const char *key, struct fr_json_val *out,
                      enum fr_json_type type)
{
    int rc = 0;
    if (obj->start == root_idx.start) {
        for (uint32_t i = 0; i < root_idx.n && rc == 0; i++) {
            if (fr_json_str_eq(&root_idx.m[i].key, key)) {
                *out = root_idx.m[i].val;
                rc = 1;
            }
        }
    } else {
        rc = fr_json_member(obj, key, out);
    }
    if (rc != 1) {
        return rc < 0 ? rc : FR_ENOTFOUND;
    }
    if (type != FR_JSON_NONE && out->type != type) {
        return FR_ECORRUPT;
    }
    return FR_OK;
}

static int get_i64(const struct fr_json_val *obj, const char *key, int64_t *out, bool required)
{
    struct fr_json_val v;
    int rc = get_member(obj, key, &v, FR_JSON_NONE);
    if (rc == FR_ENOTFOUND && !required) {
        return FR_OK;
    }
    if (rc < 0) {
        return rc;
    }
    if (v.type == FR_JSON_NULL && !required) {
        return FR_OK;
    }
    return fr_json_int64(&v, out) < 0 ? FR_ECORRUPT : FR_OK;
}

static int get_i32(const struct fr_json_val *obj, const char *key, int32_t *out, bool required)
{
    int64_t v = *out;
    int rc = get_i64(obj, key, &v, required);
    if (rc == FR_OK) {
        if (v < INT32_MIN || v > INT32_MAX) {
            return FR_ECORRUPT;
        }
        *out = (int32_t)v;
    }
    return rc;
}

static char *get_str(struct pctx *c, const struct fr_json_val *obj, const char *key)
{
    struct fr_json_val v;
    if (get_member(obj, key, &v, FR_JSON_STRING) < 0) {
        return NULL;
    }
    return ice_json_str(c->m->arena, &v);
}

static char *raw_text(struct pctx *c, const struct fr_json_val *v)
{
    const char *s = v->type == FR_JSON_STRING ? v->start - 1 : v->start;
    const char *e = v->type == FR_JSON_STRING ? v->end + 1 : v->end;
    return ice_strndup(c->m->arena, s, (size_t)(e - s));
}

static int count_items(const struct fr_json_val *arr, uint32_t *n)
{
    struct ice_jit it;
    struct fr_json_val v;
    int rc;
    *n = 0;
    ice_jit_init(&it, arr);
    while ((rc = ice_jit_next(&it, NULL, &v)) == 1) {
        (*n)++;
    }
    return rc < 0 ? FR_ECORRUPT : FR_OK;
}

static int parse_schema(struct pctx *c, const struct fr_json_val *obj, struct ice_schema *s)
{
    struct fr_json_val fields, f;
    s->schema_id = 0;
    if (get_i32(obj, "schema-id", &s->schema_id, false) < 0) {
        return bad(c, "schema-id");
    }
    if (get_member(obj, "fields", &fields, FR_JSON_ARRAY) < 0 ||
        count_items(&fields, &s->nfields) < 0 || s->nfields > ICE_MAX_FIELDS) {
        return bad(c, "schema fields");
    }
    s->fields = ice_alloc(c->m->arena, sizeof *s->fields * (s->nfields + 1));
    s->type_names = ice_alloc(c->m->arena, sizeof *s->type_names * (s->nfields + 1));
    if (!s->fields || !s->type_names) {
        return FR_ENOMEM;
    }
    struct ice_jit it;
    ice_jit_init(&it, &fields);
    for (uint32_t i = 0; i < s->nfields; i++) {
        struct fr_json_val type, req;
        if (ice_jit_next(&it, NULL, &f) != 1 || f.type != FR_JSON_OBJECT) {
            return bad(c, "schema field");
        }
        struct fr_ice_field *fd = &s->fields[i];
        if (get_i32(&f, "id", &fd->id, true) < 0 || !(fd->name = get_str(c, &f, "name")) ||
            get_member(&f, "type", &type, FR_JSON_NONE) < 0 ||
            get_member(&f, "required", &req, FR_JSON_NONE) < 0 ||
            (req.type != FR_JSON_TRUE && req.type != FR_JSON_FALSE)) {
            return bad(c, "schema field id/name/type/required");
        }
        fd->required = req.type == FR_JSON_TRUE;
        fd->doc = get_str(c, &f, "doc");
        s->type_names[i] = raw_text(c, &type);
        if (type.type == FR_JSON_STRING) {
            char *tn = ice_json_str(c->m->arena, &type);
            fd->type = tn ? ice_type_parse(tn) : 0;
        }
    }
    return FR_OK;
}

static int parse_spec(struct pctx *c, const struct fr_json_val *obj, struct ice_spec *s)
{
    struct fr_json_val fields, f;
    if (get_i32(obj, "spec-id", &s->spec_id, true) < 0) {
        return bad(c, "spec-id");
    }
    if (get_member(obj, "fields", &fields, FR_JSON_ARRAY) < 0 ||
        count_items(&fields, &s->nfields) < 0 || s->nfields > ICE_MAX_PARTS) {
        return bad(c, "partition spec fields");
    }
    s->fields = ice_alloc(c->m->arena, sizeof *s->fields * (s->nfields + 1));
    if (!s->fields) {
        return FR_ENOMEM;
    }
    struct ice_jit it;
    ice_jit_init(&it, &fields);
    for (uint32_t i = 0; i < s->nfields; i++) {
        struct ice_pfield *pf = &s->fields[i];
        if (ice_jit_next(&it, NULL, &f) != 1 || f.type != FR_JSON_OBJECT ||
            get_i32(&f, "source-id", &pf->source_id, true) < 0 ||
            get_i32(&f, "field-id", &pf->field_id, true) < 0 ||
            !(pf->name = get_str(c, &f, "name")) ||
            !(pf->transform = get_str(c, &f, "transform"))) {
            return bad(c, "partition field source-id/field-id/name/transform");
        }
        pf->tf = transform_parse(pf->transform);
    }
    return FR_OK;
}

/* Snapshot-summary words: every snapshot of a table repeats the same keys
 * and a few values ("0", "freshet"), and a metadata lists every retained
 * snapshot (~900 per table at a 1 s trigger, maintenance.expire_after_s),
 * of which the processor holds a copy or two. A summary string equal to
 * one of these points at it instead of taking its bytes from the arena:
 * ~600 of the ~1,400 bytes a snapshot took in memory. The words are one
 * static array, so a copy recognises them by address (summary_word_of). */
static const char summary_words[] =
    "operation\0append\0replace\0overwrite\0delete\0engine-name\0freshet\0"
    "added-data-files\0added-records\0added-files-size\0deleted-data-files\0"
    "deleted-records\0removed-files-size\0total-data-files\0total-records\0"
    "total-files-size\0total-delete-files\0total-position-deletes\0"
    "total-equality-deletes\0manifests-created\0manifests-replaced\0"
    "manifests-kept\0" FR_ICE_SUMMARY_PIPELINE "\0" FR_ICE_SUMMARY_EPOCH "\0"
    FR_ICE_SUMMARY_OFFSETS "\0freshet.watermark-us\0freshet.epoch-records\0"
    "0\0001\0002\0003\0004\0005\0"; /* ends with two NULs */

/* The word equal to s[0..len), or NULL. */
static const char *summary_word(const char *s, size_t len)
{
    for (const char *w = summary_words; *w;) {
        size_t wl = strlen(w);
        if (wl == len && memcmp(w, s, len) == 0) {
            return w;
        }
        w += wl + 1;
    }
    return NULL;
}

/* s itself when it is one of the words (a copy of a copy), else the word
 * equal to it, or NULL (also for NULL). */
static const char *summary_word_of(const char *s)
{
    if (!s) {
        return NULL;
    }
    uintptr_t p = (uintptr_t)s, lo = (uintptr_t)summary_words;
    if (p >= lo && p < lo + sizeof summary_words) {
        return s;
    }
    return summary_word(s, strlen(s));
}

/* A summary key or string value: the word, or a copy in the arena. */
static const char *summary_str(struct pctx *c, const struct fr_json_val *v)
{
    if (v->type == FR_JSON_STRING) { /* [start, end): the raw bytes between the quotes */
        const char *w = summary_word(v->start, (size_t)(v->end - v->start));
        if (w) { /* no word holds a backslash: equal raw text, equal string */
            return w;
        }
    }
    return ice_json_str(c->m->arena, v);
}

static int parse_snapshot(struct pctx *c, const struct fr_json_val *obj, struct ice_snapshot *s)
{
    struct fr_json_val summary, key, val;
    s->pub.parent_id = -1;
    s->schema_id = -1;
    if (get_i64(obj, "snapshot-id", &s->pub.snapshot_id, true) < 0 ||
        get_i64(obj, "parent-snapshot-id", &s->pub.parent_id, false) < 0 ||
        get_i64(obj, "sequence-number", &s->pub.sequence_number, false) < 0 ||
        get_i64(obj, "timestamp-ms", &s->pub.timestamp_ms, true) < 0 ||
        get_i32(obj, "schema-id", &s->schema_id, false) < 0 ||
        !(s->pub.manifest_list = get_str(c, obj, "manifest-list"))) {
        return bad(c, "snapshot snapshot-id/timestamp-ms/manifest-list");
    }
    if (get_member(obj, "summary", &summary, FR_JSON_OBJECT) < 0) {
        return bad(c, "snapshot summary");
    }
    uint32_t n = 0;
    struct ice_jit it;
    ice_jit_init(&it, &summary);
    while (ice_jit_next(&it, &key, &val) == 1) {
        n++;
    }
    struct fr_ice_kv *kv = ice_alloc(c->m->arena, sizeof *kv * (n + 1));
    if (!kv) {
        return FR_ENOMEM;
    }
    ice_jit_init(&it, &summary);
    uint32_t i = 0;
    int rc;
    while ((rc = ice_jit_next(&it, &key, &val)) == 1 && i < n) {
        kv[i].key = summary_str(c, &key);
        kv[i].value = val.type == FR_JSON_STRING ? summary_str(c, &val) : raw_text(c, &val);
        if (!kv[i].key || !kv[i].value) {
            return bad(c, "snapshot summary entry");
        }
        if (strcmp(kv[i].key, "operation") == 0) {
            s->pub.operation = kv[i].value;
        }
        i++;
    }
    if (rc < 0) {
        return bad(c, "snapshot summary");
    }
    if (!s->pub.operation) {
        return bad(c, "snapshot summary without operation");
    }
    s->pub.summary = kv;
    s->pub.nsummary = n;
    return FR_OK;
}

/* Parse an array member into n elements of size sz with fn. */
static int parse_array(struct pctx *c, const struct fr_json_val *root, const char *key,
                       bool required, size_t sz, void **out, uint32_t *n,
                       int (*fn)(struct pctx *, const struct fr_json_val *, void *))
{
    struct fr_json_val arr, item;
    int rc = get_member(root, key, &arr, FR_JSON_NONE);
    *n = 0;
    if ((rc == FR_ENOTFOUND || (rc == FR_OK && arr.type == FR_JSON_NULL)) && !required) {
        return FR_OK;
    }
    if (rc < 0 || arr.type != FR_JSON_ARRAY || count_items(&arr, n) < 0) {
        return bad(c, key);
    }
    char *items = ice_alloc(c->m->arena, sz * (*n + 1));
    if (!items) {
        return FR_ENOMEM;
    }
    struct ice_jit it;
    ice_jit_init(&it, &arr);
    for (uint32_t i = 0; i < *n; i++) {
        if (ice_jit_next(&it, NULL, &item) != 1 || item.type != FR_JSON_OBJECT) {
            return bad(c, key);
        }
        rc = fn(c, &item, items + sz * i);
        if (rc < 0) {
            return rc;
        }
    }
    *out = items;
    return FR_OK;
}

static int p_schema(struct pctx *c, const struct fr_json_val *v, void *out)
{
    return parse_schema(c, v, out);
}

static int p_spec(struct pctx *c, const struct fr_json_val *v, void *out)
{
    return parse_spec(c, v, out);
}

static int p_snapshot(struct pctx *c, const struct fr_json_val *v, void *out)
{
    return parse_snapshot(c, v, out);
}

static int p_snaplog(struct pctx *c, const struct fr_json_val *v, void *out)
{
    struct ice_log_entry *e = out;
    if (get_i64(v, "timestamp-ms", &e->timestamp_ms, true) < 0 ||
        get_i64(v, "snapshot-id", &e->snapshot_id, true) < 0) {
        return bad(c, "snapshot-log entry");
    }
    return FR_OK;
}

static int p_metalog(struct pctx *c, const struct fr_json_val *v, void *out)
{
    struct ice_log_entry *e = out;
    if (get_i64(v, "timestamp-ms", &e->timestamp_ms, true) < 0 ||
        !(e->file = get_str(c, v, "metadata-file"))) {
        return bad(c, "metadata-log entry");
    }
    return FR_OK;
}

static int parse_props(struct pctx *c, const struct fr_json_val *root)
{
    struct fr_json_val props, key, val;
    int rc = get_member(root, "properties", &props, FR_JSON_OBJECT);
    if (rc == FR_ENOTFOUND) {
        return FR_OK;
    }
    if (rc < 0) {
        return bad(c, "properties");
    }
    struct ice_jit it;
    uint32_t n = 0;
    ice_jit_init(&it, &props);
    while (ice_jit_next(&it, &key, &val) == 1) {
        n++;
    }
    c->m->props = ice_alloc(c->m->arena, sizeof *c->m->props * (n + 1));
    if (!c->m->props) {
        return FR_ENOMEM;
    }
    ice_jit_init(&it, &props);
    while (c->m->nprops < n && ice_jit_next(&it, &key, &val) == 1) {
        struct fr_ice_kv *kv = &c->m->props[c->m->nprops++];
        kv->key = ice_json_str(c->m->arena, &key);
        kv->value =
            val.type == FR_JSON_STRING ? ice_json_str(c->m->arena, &val) : raw_text(c, &val);
        if (!kv->key || !kv->value) {
            return bad(c, "properties");
        }
    }
    return FR_OK;
}

static int parse_refs(struct pctx *c, const struct fr_json_val *root)
{
    struct fr_json_val refs, key, val;
    int rc = get_member(root, "refs", &refs, FR_JSON_OBJECT);
    if (rc == FR_ENOTFOUND) {
        return FR_OK;
    }
    if (rc < 0) {
        return bad(c, "refs");
    }
    struct ice_jit it;
    uint32_t n = 0;
    ice_jit_init(&it, &refs);
    while (ice_jit_next(&it, &key, &val) == 1) {
        n++;
    }
    c->m->refs = ice_alloc(c->m->arena, sizeof *c->m->refs * (n + 1));
    if (!c->m->refs) {
        return FR_ENOMEM;
    }
    ice_jit_init(&it, &refs);
    for (uint32_t i = 0; i < n && ice_jit_next(&it, &key, &val) == 1; i++) {
        char *name = ice_json_str(c->m->arena, &key);
        if (!name || val.type != FR_JSON_OBJECT) {
            return bad(c, "refs");
        }
        if (strcmp(name, "main") == 0) {
            int64_t id = -1;
            if (get_i64(&val, "snapshot-id", &id, true) < 0) {
                return bad(c, "refs.main.snapshot-id");
            }
            if (c->m->current_snapshot_id < 0) {
                c->m->current_snapshot_id = id;
            } else if (id != c->m->current_snapshot_id) {
                return bad(c, "refs.main differs from current-snapshot-id");
            }
            continue;
        }
        c->m->refs[c->m->nrefs].name = name;
        c->m->refs[c->m->nrefs].raw = raw_text(c, &val);
        c->m->nrefs++;
    }
    return FR_OK;
}

static int parse_root(struct pctx *c, const struct fr_json_val *root)
{
    struct ice_meta *m = c->m;
    int64_t fv = 0;
    struct fr_json_val v;
    if (get_i64(root, "format-version", &fv, true) < 0) {
        return bad(c, "format-version");
    }
    if (fv != 2) {
        return ice_err(FR_EUNSUPPORTED, "format-version %" PRId64 " (freshet writes 2)", fv);
    }
    m->format_version = 2;
    char *uuid = get_str(c, root, "table-uuid");
    if (!uuid || strlen(uuid) != 36) {
        return bad(c, "table-uuid");
    }
    memcpy(m->uuid, uuid, 37);
    if (!(m->location = get_str(c, root, "location"))) {
        return bad(c, "location");
    }
    if (get_i64(root, "last-sequence-number", &m->last_sequence_number, true) < 0) {
        return bad(c, "last-sequence-number");
    }
    if (get_i64(root, "last-updated-ms", &m->last_updated_ms, true) < 0) {
        return bad(c, "last-updated-ms");
    }
    if (get_i32(root, "last-column-id", &m->last_column_id, true) < 0) {
        return bad(c, "last-column-id");
    }
    if (get_i32(root, "current-schema-id", &m->current_schema_id, true) < 0) {
        return bad(c, "current-schema-id");
    }
    int rc = parse_array(c, root, "schemas", true, sizeof *m->schemas, (void **)&m->schemas,
                         &m->nschemas, p_schema);
    if (rc < 0) {
        return rc;
    }
    if (!ice_meta_schema(m, m->current_schema_id)) {
        return bad(c, "current-schema-id names no schema");
    }
    if (get_i32(root, "default-spec-id", &m->default_spec_id, true) < 0) {
        return bad(c, "default-spec-id");
    }
    rc = parse_array(c, root, "partition-specs", true, sizeof *m->specs, (void **)&m->specs,
                     &m->nspecs, p_spec);
    if (rc < 0) {
        return rc;
    }
    if (!ice_meta_spec(m, m->default_spec_id)) {
        return bad(c, "default-spec-id names no spec");
    }
    if (get_i32(root, "last-partition-id", &m->last_partition_id, true) < 0) {
        return bad(c, "last-partition-id");
    }
    if (get_i32(root, "default-sort-order-id", &m->default_sort_order_id, true) < 0) {
        return bad(c, "default-sort-order-id");
    }
    if (get_member(root, "sort-orders", &v, FR_JSON_ARRAY) < 0) {
        return bad(c, "sort-orders");
    }
    m->sort_orders_raw = raw_text(c, &v);
    if ((rc = parse_props(c, root)) < 0) {
        return rc;
    }
    m->current_snapshot_id = -1;
    if (get_i64(root, "current-snapshot-id", &m->current_snapshot_id, false) < 0) {
        return bad(c, "current-snapshot-id");
    }
    if (m->current_snapshot_id < 0) {
        m->current_snapshot_id = -1;
    }
    if ((rc = parse_refs(c, root)) < 0) {
        return rc;
    }
    rc = parse_array(c, root, "snapshots", false, sizeof *m->snapshots, (void **)&m->snapshots,
                     &m->nsnapshots, p_snapshot);
    if (rc < 0) {
        return rc;
    }
    if (m->current_snapshot_id >= 0 && !ice_meta_snapshot(m, m->current_snapshot_id)) {
        return bad(c, "current-snapshot-id names no snapshot");
    }
    rc = parse_array(c, root, "snapshot-log", false, sizeof *m->snapshot_log,
                     (void **)&m->snapshot_log, &m->nsnapshot_log, p_snaplog);
    if (rc == FR_OK) {
        rc = parse_array(c, root, "metadata-log", false, sizeof *m->metadata_log,
                         (void **)&m->metadata_log, &m->nmetadata_log, p_metalog);
    }
    if (rc < 0) {
        return rc;
    }
    if (get_member(root, "statistics", &v, FR_JSON_ARRAY) == FR_OK) {
        m->statistics_raw = raw_text(c, &v);
    }
    if (get_member(root, "partition-statistics", &v, FR_JSON_ARRAY) == FR_OK) {
        m->partition_statistics_raw = raw_text(c, &v);
    }
    return FR_OK;
}

int ice_meta_parse(const char *json, size_t len, struct ice_meta **out)
{
    *out = NULL;
    struct ice_meta *m = calloc(1, sizeof *m);
    if (!m) {
        return FR_ENOMEM;
    }
    m->arena = ice_arena_new(len * 4 + (1u << 16));
    if (!m->arena) {
        free(m);
        return FR_ENOMEM;
    }
    struct pctx c = {m, NULL};
    struct fr_json_val root;
    int rc;
    if (fr_json_validate(json, json + len) < 0 || !fr_json_value(json, json + len, &root) ||
        root.type != FR_JSON_OBJECT) {
        rc = ice_err(FR_ECORRUPT, "not a JSON object (malformed or truncated)");
    } else {
        index_root(&root);
        rc = parse_root(&c, &root);
        root_idx.start = NULL;
        if (rc == FR_ENOMEM) {
            ice_err(rc, "metadata too large for its memory cap");
        }
    }
    if (rc < 0) {
        ice_meta_free(m);
        return rc;
    }
    *out = m;
    return FR_OK;
}

void ice_meta_free(struct ice_meta *meta)
{
    if (!meta) {
        return;
    }
    unsigned n = atomic_load(&meta->shares);
    while (n > 0) {
        if (atomic_compare_exchange_weak(&meta->shares, &n, n - 1)) {
            return; /* another reference remains */
        }
    }
    ice_arena_free(meta->arena);
    free(meta);
}

struct ice_meta *ice_meta_share(struct ice_meta *meta)
{
    atomic_fetch_add(&meta->shares, 1);
    return meta;
}

/* ice_meta_clone copies the structures themselves: writing the JSON and
 * parsing it again cost two full scans of a file that holds every retained
 * snapshot, at every commit of every table (the soak's commit time followed
 * the snapshot count; docs/BENCHMARKS.md, 2026-12-02). The copy must be
 * exactly what that round trip gave: tests/unit/iceberg/test_meta_cache.c
 * checks that ice_meta_write of a copy is byte-identical to the original's
 * and to a parse of it. */
struct mcopy {
    struct fr_ice_arena *a;
    bool failed;
};

static const char *cp_str(struct mcopy *k, const char *s)
{
    if (!s) {
        return NULL;
    }
    char *d = ice_strdup(k->a, s);
    k->failed |= d == NULL;
    return d;
}

static void *cp_arr(struct mcopy *k, const void *src, size_t n, size_t size)
{
    if (!src) {
        return NULL;
    }
    void *d = ice_memdup(k->a, src, n ? n * size : 1);
    k->failed |= d == NULL;
    return d;
}

static struct fr_ice_kv *cp_kv(struct mcopy *k, const struct fr_ice_kv *src, uint32_t n)
{
    struct fr_ice_kv *d = cp_arr(k, src, n, sizeof *d);
    for (uint32_t i = 0; d && i < n; i++) {
        d[i].key = cp_str(k, src[i].key);
        d[i].value = cp_str(k, src[i].value);
    }
    return d;
}

/* A snapshot's string: its summary word (shared, not copied) or a copy. */
static const char *cp_word(struct mcopy *k, const char *s)
{
    const char *w = summary_word_of(s);
    return w ? w : cp_str(k, s);
}

/* A snapshot summary: its words are shared, not copied. */
static struct fr_ice_kv *cp_summary(struct mcopy *k, const struct fr_ice_kv *src, uint32_t n)
{
    struct fr_ice_kv *d = cp_arr(k, src, n, sizeof *d);
    for (uint32_t i = 0; d && i < n; i++) {
        d[i].key = cp_word(k, src[i].key);
        d[i].value = cp_word(k, src[i].value);
    }
    return d;
}

static struct ice_log_entry *cp_log(struct mcopy *k, const struct ice_log_entry *src, uint32_t n)
{
    struct ice_log_entry *d = cp_arr(k, src, n, sizeof *d);
    for (uint32_t i = 0; d && i < n; i++) {
        d[i].file = cp_str(k, src[i].file);
    }
    return d;
}

int ice_meta_clone(const struct ice_meta *meta, struct ice_meta **copy)
{
    *copy = NULL;
    struct ice_meta *m = malloc(sizeof *m);
    if (!m) {
        return FR_ENOMEM;
    }
    *m = *meta; /* scalars; every pointer is replaced below */
    atomic_init(&m->shares, 0); /* a new version: one owner */
    /* the same headroom ice_meta_parse gives a file of this size */
    m->arena = ice_arena_new(meta->arena->used * 4 + (1u << 16));
    if (!m->arena) {
        free(m);
        return FR_ENOMEM;
    }
    struct mcopy k = {m->arena, false};
    m->location = cp_str(&k, meta->location);
    m->schemas = cp_arr(&k, meta->schemas, meta->nschemas, sizeof *m->schemas);
    for (uint32_t i = 0; m->schemas && i < meta->nschemas; i++) {
        struct ice_schema *d = &m->schemas[i];
        const struct ice_schema *src = &meta->schemas[i];
        d->fields = cp_arr(&k, src->fields, src->nfields, sizeof *d->fields);
        for (uint32_t f = 0; d->fields && f < src->nfields; f++) {
            d->fields[f].name = cp_str(&k, src->fields[f].name);
            d->fields[f].doc = cp_str(&k, src->fields[f].doc);
        }
        d->type_names = cp_arr(&k, src->type_names, src->nfields, sizeof *d->type_names);
        for (uint32_t f = 0; d->type_names && f < src->nfields; f++) {
            d->type_names[f] = cp_str(&k, src->type_names[f]);
        }
    }
    m->specs = cp_arr(&k, meta->specs, meta->nspecs, sizeof *m->specs);
    for (uint32_t i = 0; m->specs && i < meta->nspecs; i++) {
        struct ice_spec *d = &m->specs[i];
        const struct ice_spec *src = &meta->specs[i];
        d->fields = cp_arr(&k, src->fields, src->nfields, sizeof *d->fields);
        for (uint32_t f = 0; d->fields && f < src->nfields; f++) {
            d->fields[f].name = cp_str(&k, src->fields[f].name);
            d->fields[f].transform = cp_str(&k, src->fields[f].transform);
        }
    }
    m->sort_orders_raw = cp_str(&k, meta->sort_orders_raw);
    m->props = cp_kv(&k, meta->props, meta->nprops);
    m->snapshots = cp_arr(&k, meta->snapshots, meta->nsnapshots, sizeof *m->snapshots);
    for (uint32_t i = 0; m->snapshots && i < meta->nsnapshots; i++) {
        struct fr_ice_snapshot *d = &m->snapshots[i].pub;
        const struct fr_ice_snapshot *src = &meta->snapshots[i].pub;
        d->manifest_list = cp_str(&k, src->manifest_list);
        d->summary = cp_summary(&k, src->summary, src->nsummary);
        d->operation = cp_word(&k, src->operation);
    }
    m->snapshot_log = cp_log(&k, meta->snapshot_log, meta->nsnapshot_log);
    m->metadata_log = cp_log(&k, meta->metadata_log, meta->nmetadata_log);
    m->refs = cp_arr(&k, meta->refs, meta->nrefs, sizeof *m->refs);
    for (uint32_t i = 0; m->refs && i < meta->nrefs; i++) {
        m->refs[i].name = cp_str(&k, meta->refs[i].name);
        m->refs[i].raw = cp_str(&k, meta->refs[i].raw);
    }
    m->statistics_raw = cp_str(&k, meta->statistics_raw);
    m->partition_statistics_raw = cp_str(&k, meta->partition_statistics_raw);
    if (k.failed) {
        ice_meta_free(m);
        return ice_err(FR_ENOMEM, "metadata too large for its memory cap");
    }
    *copy = m;
    return FR_OK;
}

/* ------------------------------------------ pieces for REST updates -- */

int ice_schema_parse(struct ice_meta *meta, const struct fr_json_val *obj, struct ice_schema *s)
{
    struct pctx c = {meta, "schema"};
    if (obj->type != FR_JSON_OBJECT) {
        return bad(&c, "not an object");
    }
    return parse_schema(&c, obj, s);
}

int ice_snapshot_parse(struct ice_meta *meta, const struct fr_json_val *obj,
                       struct ice_snapshot *s)
{
    struct pctx c = {meta, "snapshot"};
    if (obj->type != FR_JSON_OBJECT) {
        return bad(&c, "not an object");
    }
    memset(s, 0, sizeof *s);
    return parse_snapshot(&c, obj, s);
}

int ice_snapshot_json(const struct ice_snapshot *snap, struct fr_buf *out)
{
    return put_snapshot(out, snap);
}
