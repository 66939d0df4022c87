/*
 * rest_updates.c — the Iceberg REST catalog's table changes applied to
 * freshet's metadata model: requirements checked against the base
 * version, updates applied to the next one, as one more kind of change
 * (ICE_CH_REST) of the commit protocol in commit.c. So a REST commit writes
 * its metadata file and swaps the catalog row exactly as the library's own
 * commits do, several tables in one SQLite transaction, and a lost race
 * reloads the base and checks the requirements again.
 *
 * Also here: the REST answers built from the catalog (LoadTableResult,
 * CreateTableRequest -> a new table), used by src/serve/rest.c.
 *
 * Wire format (apache/iceberg open-api/rest-catalog-open-api.yaml,
 * schemas TableRequirement, TableUpdate, CommitTableRequest):
 *   {"requirements":[{"type":"assert-…", …}], "updates":[{"action":"…", …}]}
 *
 *   requirement                     checked against the base version
 *   assert-create                   fails: the table exists
 *   assert-table-uuid               uuid
 *   assert-ref-snapshot-id          ref, snapshot-id (null: the ref must not exist)
 *   assert-last-assigned-field-id   last-assigned-field-id == last-column-id
 *   assert-current-schema-id        current-schema-id
 *   assert-last-assigned-partition-id  last-assigned-partition-id
 *   assert-default-spec-id          default-spec-id
 *   assert-default-sort-order-id    default-sort-order-id
 *
 *   update (applied in order)       effect
 *   assign-uuid                     the same uuid only (a table keeps its identity)
 *   upgrade-format-version          2 only (freshet writes v2; 1 is a downgrade)
 *   add-schema                      new schema, id max+1 (or the id of an identical one)
 *   set-current-schema              schema-id (-1: the last added)
 *   add-spec                        new spec, id max+1; field ids from 1000 up
 *   set-default-spec                spec-id (-1: the last added)
 *   add-sort-order                  order-id max+1 (0 for the unsorted order)
 *   set-default-sort-order          sort-order-id (-1: the last added)
 *   add-snapshot                    sequence number above last-sequence-number
 *   set-snapshot-ref                main moves current-snapshot-id + snapshot-log
 *   remove-snapshot-ref             main: no current snapshot
 *   remove-snapshots                and the refs that named them (files stay:
 *                                   the writer or fr_ice_remove_orphans removes them)
 *   set-properties / remove-properties
 *   set-location                    the current location only (freshet maps a
 *                                   table's files through its warehouse path)
 * Any other type or action is FR_EUNSUPPORTED naming it: nothing is
 * pretended. Errors are FR_EREQUIREMENT (409 for REST), FR_EINVAL /
 * FR_EJSON / FR_EUNSUPPORTED (400).
 *
 * One thread at a time per change (as the rest of src/iceberg).
 */
#include "iceberg/iceberg_int.h"
#include "iceberg/rest.h"

#include "core/clock.h"
#include "core/err.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define REST_MAX_ITEMS 4096 /* requirements, updates, ids in one request */

/* ------------------------------------------------------------ JSON -- */

/* 1 and out when obj has key (and it is not null), 0 when absent or null. */
static int jget(const struct fr_json_val *obj, const char *key, struct fr_json_val *out)
{
    int rc = fr_json_member(obj, key, out);
    if (rc < 0) {
        return FR_EJSON;
    }
    return rc == 1 && out->type != FR_JSON_NULL ? 1 : 0;
}

static int jint(const struct fr_json_val *obj, const char *key, int64_t *out, const char *what)
{
    struct fr_json_val v;
    int rc = jget(obj, key, &v);
    if (rc < 0) {
        return rc;
    }
    if (rc == 0 || v.type != FR_JSON_NUMBER || fr_json_int64(&v, out) < 0) {
        return ice_err(FR_EINVAL, "%s: \"%s\" must be an integer", what, key);
    }
    return FR_OK;
}

static int jint32(const struct fr_json_val *obj, const char *key, int32_t *out, const char *what)
{
    int64_t v;
    int rc = jint(obj, key, &v, what);
    if (rc == FR_OK && (v < INT32_MIN || v > INT32_MAX)) {
        rc = ice_err(FR_EINVAL, "%s: \"%s\" out of range", what, key);
    }
    if (rc == FR_OK) {
        *out = (int32_t)v;
    }
    return rc;
}

static const char *jstr(struct fr_ice_arena *a, const struct fr_json_val *obj, const char *key)
{
    struct fr_json_val v;
    return jget(obj, key, &v) == 1 ? ice_json_str(a, &v) : NULL;
}

/* ------------------------------------------------------ requirements -- */

/* The snapshot a ref names in meta; -1 when the ref does not exist. */
static int64_t ref_id(const struct ice_meta *m, const char *ref)
{
    if (strcmp(ref, "main") == 0) {
        return m->current_snapshot_id;
    }
    for (uint32_t i = 0; i < m->nrefs; i++) {
        if (strcmp(m->refs[i].name, ref) == 0) {
            struct fr_json_val obj, v;
            int64_t id = -1;
            const char *raw = m->refs[i].raw;
            if (fr_json_value(raw, raw + strlen(raw), &obj) && obj.type == FR_JSON_OBJECT &&
                jget(&obj, "snapshot-id", &v) == 1 && fr_json_int64(&v, &id) == 0) {
                return id;
            }
            return -1;
        }
    }
    return -1;
}

static int req_fail(const struct ice_change *c, const char *type, const char *fmt, int64_t want,
                    int64_t have)
{
    char detail[200];
    snprintf(detail, sizeof detail, fmt, (long long)want, (long long)have);
    return ice_err(FR_EREQUIREMENT, "table %s.%s: requirement %s failed: %s", c->ns, c->name, type,
                   detail);
}

static int check_requirement(struct ice_change *c, const struct ice_meta *bm,
                             const struct fr_json_val *r)
{
    if (r->type != FR_JSON_OBJECT) {
        return ice_err(FR_EINVAL, "a requirement must be an object");
    }
    const char *type = jstr(c->arena, r, "type");
    if (!type) {
        return ice_err(FR_EINVAL, "a requirement without \"type\"");
    }
    static const struct {
        const char *type, *key;
    } ints[] = {
        {"assert-last-assigned-field-id", "last-assigned-field-id"},
        {"assert-current-schema-id", "current-schema-id"},
        {"assert-last-assigned-partition-id", "last-assigned-partition-id"},
        {"assert-default-spec-id", "default-spec-id"},
        {"assert-default-sort-order-id", "default-sort-order-id"},
    };
    const int64_t have_int[] = {bm->last_column_id, bm->current_schema_id, bm->last_partition_id,
                                bm->default_spec_id, bm->default_sort_order_id};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (strcmp(type, ints[i].type) == 0) {
            int64_t want = 0;
            int rc = jint(r, ints[i].key, &want, type);
            if (rc < 0) {
                return rc;
            }
            return want == have_int[i]
                       ? FR_OK
                       : req_fail(c, type, "expected %lld, the table has %lld", want, have_int[i]);
        }
    }
    if (strcmp(type, "assert-create") == 0) {
        return ice_err(FR_EREQUIREMENT,
                       "table %s.%s: requirement assert-create failed: the table exists", c->ns,
                       c->name);
    }
    if (strcmp(type, "assert-table-uuid") == 0) {
        const char *uuid = jstr(c->arena, r, "uuid");
        if (!uuid) {
            return ice_err(FR_EINVAL, "%s: \"uuid\" must be a string", type);
        }
        if (strcasecmp(uuid, bm->uuid) != 0) {
            return ice_err(FR_EREQUIREMENT,
                           "table %s.%s: requirement %s failed: expected %s, the table is %s",
                           c->ns, c->name, type, uuid, bm->uuid);
        }
        return FR_OK;
    }
    if (strcmp(type, "assert-ref-snapshot-id") == 0) {
        const char *ref = jstr(c->arena, r, "ref");
        struct fr_json_val v;
        int64_t want = -1;
        if (!ref) {
            return ice_err(FR_EINVAL, "%s: \"ref\" must be a string", type);
        }
        int has = jget(r, "snapshot-id", &v);
        if (has < 0 || (has == 1 && fr_json_int64(&v, &want) < 0)) {
            return ice_err(FR_EINVAL, "%s: \"snapshot-id\" must be an integer or null", type);
        }
        int64_t have = ref_id(bm, ref);
        if (want != have) {
            return ice_err(FR_EREQUIREMENT,
                           "table %s.%s: requirement %s failed: ref %s is at %lld, expected "
                           "%lld (-1: absent)",
                           c->ns, c->name, type, ref, (long long)have, (long long)want);
        }
        return FR_OK;
    }
    return ice_err(FR_EUNSUPPORTED, "requirement type \"%s\" is not supported by freshet", type);
}

/* ------------------------------------------------------------ updates -- */

/* What one request's updates added, for the "-1: the last added" ids. */
struct rest_state {
    int32_t last_schema, last_spec, last_order; /* INT32_MIN: none */
};

static bool schema_same(const struct ice_schema *a, const struct ice_schema *b)
{
    if (a->nfields != b->nfields) {
        return false;
    }
    for (uint32_t i = 0; i < a->nfields; i++) {
        const struct fr_ice_field *x = &a->fields[i], *y = &b->fields[i];
        if (x->id != y->id || x->required != y->required || strcmp(x->name, y->name) != 0 ||
            strcmp(a->type_names[i], b->type_names[i]) != 0) {
            return false;
        }
    }
    return true;
}

/* The largest field id anywhere in a JSON value (nested types included). */
static int32_t max_field_id(const struct fr_json_val *v, int depth)
{
    int32_t best = 0;
    if (depth > FR_JSON_MAX_DEPTH || (v->type != FR_JSON_OBJECT && v->type != FR_JSON_ARRAY)) {
        return 0;
    }
    struct ice_jit it;
    struct fr_json_val k, x;
    ice_jit_init(&it, v);
    while (ice_jit_next(&it, v->type == FR_JSON_OBJECT ? &k : NULL, &x) == 1) {
        int64_t id;
        if (v->type == FR_JSON_OBJECT && x.type == FR_JSON_NUMBER &&
            (fr_json_str_eq(&k, "id") || fr_json_str_eq(&k, "element-id") ||
             fr_json_str_eq(&k, "key-id") || fr_json_str_eq(&k, "value-id")) &&
            fr_json_int64(&x, &id) == 0 && id > best && id <= INT32_MAX) {
            best = (int32_t)id;
        }
        int32_t inner = max_field_id(&x, depth + 1);
        best = inner > best ? inner : best;
    }
    return best;
}

static int check_schema(const struct ice_schema *s)
{
    if (s->nfields == 0) {
        return ice_err(FR_EINVAL, "schema: no fields");
    }
    for (uint32_t i = 0; i < s->nfields; i++) {
        if (s->fields[i].id <= 0 || !s->fields[i].name[0]) {
            return ice_err(FR_EINVAL, "schema field %u: bad id or name", i);
        }
        for (uint32_t j = 0; j < i; j++) {
            if (s->fields[j].id == s->fields[i].id ||
                strcmp(s->fields[j].name, s->fields[i].name) == 0) {
                return ice_err(FR_EINVAL, "schema: duplicate field %s (id %d)", s->fields[i].name,
                               (int)s->fields[i].id);
            }
        }
    }
    return FR_OK;
}

static int up_add_schema(struct ice_meta *m, const struct fr_json_val *u, struct rest_state *st)
{
    struct fr_json_val sv;
    if (jget(u, "schema", &sv) != 1) {
        return ice_err(FR_EINVAL, "add-schema: no \"schema\"");
    }
    struct ice_schema s;
    memset(&s, 0, sizeof s);
    int rc = ice_schema_parse(m, &sv, &s);
    if (rc < 0) {
        return rc == FR_ECORRUPT ? ice_err(FR_EINVAL, "add-schema: %s", fr_ice_errmsg()) : rc;
    }
    if ((rc = check_schema(&s)) < 0) {
        return rc;
    }
    int32_t max_id = -1;
    for (uint32_t i = 0; i < m->nschemas; i++) {
        if (schema_same(&m->schemas[i], &s)) {
            st->last_schema = m->schemas[i].schema_id; /* reuse, as Java does */
            return FR_OK;
        }
        max_id = m->schemas[i].schema_id > max_id ? m->schemas[i].schema_id : max_id;
    }
    struct ice_schema *n = ice_alloc(m->arena, sizeof *n * (m->nschemas + 1));
    if (!n) {
        return FR_ENOMEM;
    }
    if (m->nschemas) {
        memcpy(n, m->schemas, sizeof *n * m->nschemas);
    }
    s.schema_id = max_id + 1;
    n[m->nschemas] = s;
    m->schemas = n;
    m->nschemas++;
    int64_t last = 0;
    struct fr_json_val lv;
    if (jget(u, "last-column-id", &lv) == 1 && fr_json_int64(&lv, &last) == 0 && last > 0 &&
        last <= INT32_MAX && last > m->last_column_id) {
        m->last_column_id = (int32_t)last;
    }
    int32_t seen = max_field_id(&sv, 0);
    if (seen > m->last_column_id) {
        m->last_column_id = seen;
    }
    st->last_schema = s.schema_id;
    return FR_OK;
}

static enum fr_ice_transform tf_of(const char *s)
{
    for (int t = FR_ICE_IDENTITY; t <= FR_ICE_HOUR; t++) {
        if (strcmp(s, ice_transform_name((enum fr_ice_transform)t)) == 0) {
            return (enum fr_ice_transform)t;
        }
    }
    return 0;
}

/* A PartitionSpec object into spec (field ids assigned from
 * *last_partition_id when absent). */
static int parse_spec(struct ice_meta *m, const struct fr_json_val *sv, struct ice_spec *spec,
                      int32_t *last_partition_id)
{
    struct fr_json_val fields, f;
    if (sv->type != FR_JSON_OBJECT || jget(sv, "fields", &fields) != 1 ||
        fields.type != FR_JSON_ARRAY) {
        return ice_err(FR_EINVAL, "partition spec: no \"fields\" array");
    }
    struct ice_jit it;
    uint32_t n = 0;
    ice_jit_init(&it, &fields);
    while (ice_jit_next(&it, NULL, &f) == 1) {
        n++;
    }
    if (n > ICE_MAX_PARTS) {
        return ice_err(FR_EINVAL, "partition spec: more than %d fields", ICE_MAX_PARTS);
    }
    spec->nfields = n;
    spec->fields = ice_alloc(m->arena, sizeof *spec->fields * (n + 1));
    if (!spec->fields) {
        return FR_ENOMEM;
    }
    const struct ice_schema *cur = ice_meta_schema(m, m->current_schema_id);
    ice_jit_init(&it, &fields);
    for (uint32_t i = 0; i < n && ice_jit_next(&it, NULL, &f) == 1; i++) {
        struct ice_pfield *pf = &spec->fields[i];
        int64_t fid = -1;
        struct fr_json_val v;
        if (f.type != FR_JSON_OBJECT ||
            jint32(&f, "source-id", &pf->source_id, "partition field") < 0 ||
            !(pf->name = jstr(m->arena, &f, "name")) ||
            !(pf->transform = jstr(m->arena, &f, "transform"))) {
            return ice_err(FR_EINVAL, "partition field %u: needs source-id, name, transform", i);
        }
        if (jget(&f, "field-id", &v) == 1 && fr_json_int64(&v, &fid) < 0) {
            return ice_err(FR_EINVAL, "partition field %u: bad field-id", i);
        }
        if (fid < 0) {
            fid = ++*last_partition_id;
        }
        if (fid > INT32_MAX) {
            return ice_err(FR_EINVAL, "partition field %u: bad field-id", i);
        }
        pf->field_id = (int32_t)fid;
        *last_partition_id = pf->field_id > *last_partition_id ? pf->field_id : *last_partition_id;
        pf->tf = tf_of(pf->transform);
        bool found = pf->source_id > 0 && pf->source_id <= m->last_column_id;
        for (uint32_t k = 0; cur && k < cur->nfields && !found; k++) {
            found = cur->fields[k].id == pf->source_id;
        }
        if (!found) {
            return ice_err(FR_EINVAL, "partition field %s: source-id %d is not a column", pf->name,
                           (int)pf->source_id);
        }
        for (uint32_t k = 0; k < i; k++) {
            if (strcmp(spec->fields[k].name, pf->name) == 0) {
                return ice_err(FR_EINVAL, "partition spec: duplicate field %s", pf->name);
            }
        }
    }
    return FR_OK;
}

static bool spec_same(const struct ice_spec *a, const struct ice_spec *b)
{
    if (a->nfields != b->nfields) {
        return false;
    }
    for (uint32_t i = 0; i < a->nfields; i++) {
        if (a->fields[i].source_id != b->fields[i].source_id ||
            a->fields[i].field_id != b->fields[i].field_id ||
            strcmp(a->fields[i].name, b->fields[i].name) != 0 ||
            strcmp(a->fields[i].transform, b->fields[i].transform) != 0) {
            return false;
        }
    }
    return true;
}

static int up_add_spec(struct ice_meta *m, const struct fr_json_val *u, struct rest_state *st)
{
    struct fr_json_val sv;
    if (jget(u, "spec", &sv) != 1) {
        return ice_err(FR_EINVAL, "add-spec: no \"spec\"");
    }
    struct ice_spec spec;
    int32_t last = m->last_partition_id;
    memset(&spec, 0, sizeof spec);
    int rc = parse_spec(m, &sv, &spec, &last);
    if (rc < 0) {
        return rc;
    }
    int32_t max_id = -1;
    for (uint32_t i = 0; i < m->nspecs; i++) {
        if (spec_same(&m->specs[i], &spec)) {
            st->last_spec = m->specs[i].spec_id;
            return FR_OK;
        }
        max_id = m->specs[i].spec_id > max_id ? m->specs[i].spec_id : max_id;
    }
    struct ice_spec *n = ice_alloc(m->arena, sizeof *n * (m->nspecs + 1));
    if (!n) {
        return FR_ENOMEM;
    }
    if (m->nspecs) {
        memcpy(n, m->specs, sizeof *n * m->nspecs);
    }
    spec.spec_id = max_id + 1;
    n[m->nspecs] = spec;
    m->specs = n;
    m->nspecs++;
    m->last_partition_id = last;
    st->last_spec = spec.spec_id;
    return FR_OK;
}

/* The order ids in sort_orders_raw; *n of them into ids (cap). */
static int order_ids(const struct ice_meta *m, int64_t *ids, uint32_t cap, uint32_t *n)
{
    const char *raw = m->sort_orders_raw ? m->sort_orders_raw : "[]";
    struct fr_json_val arr, o, v;
    *n = 0;
    if (!fr_json_value(raw, raw + strlen(raw), &arr) || arr.type != FR_JSON_ARRAY) {
        return ice_err(FR_ECORRUPT, "sort-orders is not an array");
    }
    struct ice_jit it;
    ice_jit_init(&it, &arr);
    while (*n < cap && ice_jit_next(&it, NULL, &o) == 1) {
        if (o.type != FR_JSON_OBJECT || jget(&o, "order-id", &v) != 1 ||
            fr_json_int64(&v, &ids[*n]) < 0) {
            return ice_err(FR_ECORRUPT, "sort order without order-id");
        }
        (*n)++;
    }
    return FR_OK;
}

static int up_add_sort_order(struct ice_meta *m, const struct fr_json_val *u, struct rest_state *st)
{
    struct fr_json_val ov, fields, f;
    if (jget(u, "sort-order", &ov) != 1 || ov.type != FR_JSON_OBJECT ||
        jget(&ov, "fields", &fields) != 1 || fields.type != FR_JSON_ARRAY) {
        return ice_err(FR_EINVAL, "add-sort-order: needs \"sort-order\" with \"fields\"");
    }
    struct ice_jit it;
    uint32_t nf = 0;
    ice_jit_init(&it, &fields);
    while (ice_jit_next(&it, NULL, &f) == 1) {
        if (f.type != FR_JSON_OBJECT || !jstr(m->arena, &f, "transform") ||
            !jstr(m->arena, &f, "direction") || !jstr(m->arena, &f, "null-order")) {
            return ice_err(FR_EINVAL,
                           "add-sort-order: a field needs transform, direction, null-order");
        }
        nf++;
    }
    int64_t ids[256];
    uint32_t n;
    int rc = order_ids(m, ids, 256, &n);
    if (rc < 0) {
        return rc;
    }
    int64_t id = 0, max_id = 0;
    bool have0 = false;
    for (uint32_t i = 0; i < n; i++) {
        max_id = ids[i] > max_id ? ids[i] : max_id;
        have0 = have0 || ids[i] == 0;
    }
    if (nf == 0 && have0) {
        st->last_order = 0;
        return FR_OK;
    }
    if (n >= 256) {
        return ice_err(FR_EINVAL, "add-sort-order: too many sort orders");
    }
    id = nf == 0 ? 0 : max_id + 1;
    const char *raw = m->sort_orders_raw ? m->sort_orders_raw : "[]";
    size_t rl = strlen(raw);
    while (rl && raw[rl - 1] != ']') {
        rl--;
    }
    char *next =
        ice_sprintf(m->arena, "%.*s%s{\"order-id\":%" PRId64 ",\"fields\":%.*s}]", (int)(rl - 1),
                    raw, n ? "," : "", id, (int)(fields.end - fields.start), fields.start);
    if (!next) {
        return FR_ENOMEM;
    }
    m->sort_orders_raw = next;
    st->last_order = (int32_t)id;
    return FR_OK;
}

static int up_add_snapshot(struct ice_change *c, struct ice_meta *m, const struct fr_json_val *u)
{
    struct fr_json_val sv;
    if (jget(u, "snapshot", &sv) != 1) {
        return ice_err(FR_EINVAL, "add-snapshot: no \"snapshot\"");
    }
    struct ice_snapshot s;
    int rc = ice_snapshot_parse(m, &sv, &s);
    if (rc < 0) {
        return rc == FR_ECORRUPT ? ice_err(FR_EINVAL, "add-snapshot: %s", fr_ice_errmsg()) : rc;
    }
    if (s.pub.snapshot_id < 0 || ice_meta_snapshot(m, s.pub.snapshot_id)) {
        return ice_err(FR_EINVAL, "add-snapshot: snapshot %" PRId64 " exists or is negative",
                       s.pub.snapshot_id);
    }
    if (s.pub.sequence_number <= m->last_sequence_number) {
        return ice_err(FR_EREQUIREMENT,
                       "table %s.%s: add-snapshot: sequence number %" PRId64
                       " is not above the table's last sequence number %" PRId64,
                       c->ns, c->name, s.pub.sequence_number, m->last_sequence_number);
    }
    if (s.pub.parent_id >= 0 && !ice_meta_snapshot(m, s.pub.parent_id)) {
        return ice_err(FR_EINVAL, "add-snapshot: parent %" PRId64 " is not a snapshot",
                       s.pub.parent_id);
    }
    if (s.schema_id >= 0 && !ice_meta_schema(m, s.schema_id)) {
        return ice_err(FR_EINVAL, "add-snapshot: schema-id %d is not a schema", (int)s.schema_id);
    }
    struct ice_snapshot *n = ice_alloc(m->arena, sizeof *n * (m->nsnapshots + 1));
    if (!n) {
        return FR_ENOMEM;
    }
    if (m->nsnapshots) {
        memcpy(n, m->snapshots, sizeof *n * m->nsnapshots);
    }
    n[m->nsnapshots] = s;
    m->snapshots = n;
    m->nsnapshots++;
    m->last_sequence_number = s.pub.sequence_number;
    return FR_OK;
}

static int up_set_ref(struct ice_meta *m, const struct fr_json_val *u)
{
    const char *name = jstr(m->arena, u, "ref-name");
    const char *type = jstr(m->arena, u, "type");
    int64_t id = 0;
    int rc = jint(u, "snapshot-id", &id, "set-snapshot-ref");
    if (rc < 0) {
        return rc;
    }
    if (!name || !type || (strcmp(type, "branch") != 0 && strcmp(type, "tag") != 0)) {
        return ice_err(FR_EINVAL, "set-snapshot-ref: needs ref-name and type branch or tag");
    }
    const struct ice_snapshot *snap = ice_meta_snapshot(m, id);
    if (!snap) {
        return ice_err(FR_EINVAL, "set-snapshot-ref: snapshot %" PRId64 " is not in the table", id);
    }
    if (strcmp(name, "main") == 0) {
        if (strcmp(type, "branch") != 0) {
            return ice_err(FR_EINVAL, "set-snapshot-ref: main must be a branch");
        }
        if (m->current_snapshot_id == id) {
            return FR_OK;
        }
        struct ice_log_entry *log = ice_alloc(m->arena, sizeof *log * (m->nsnapshot_log + 1));
        if (!log) {
            return FR_ENOMEM;
        }
        if (m->nsnapshot_log) {
            memcpy(log, m->snapshot_log, sizeof *log * m->nsnapshot_log);
        }
        log[m->nsnapshot_log] = (struct ice_log_entry){snap->pub.timestamp_ms, id, NULL};
        m->snapshot_log = log;
        m->nsnapshot_log++;
        m->current_snapshot_id = id;
        return FR_OK;
    }
    /* the ref object as Iceberg writes it, retention fields copied */
    char *raw = ice_sprintf(m->arena, "{\"snapshot-id\":%" PRId64 ",\"type\":\"%s\"", id, type);
    static const char *const keep[] = {"min-snapshots-to-keep", "max-snapshot-age-ms",
                                       "max-ref-age-ms"};
    for (size_t i = 0; raw && i < sizeof keep / sizeof keep[0]; i++) {
        int64_t v = 0;
        struct fr_json_val x;
        if (jget(u, keep[i], &x) == 1) {
            if (fr_json_int64(&x, &v) < 0) {
                return ice_err(FR_EINVAL, "set-snapshot-ref: bad %s", keep[i]);
            }
            raw = ice_sprintf(m->arena, "%s,\"%s\":%" PRId64, raw, keep[i], v);
        }
    }
    raw = raw ? ice_sprintf(m->arena, "%s}", raw) : NULL;
    if (!raw) {
        return FR_ENOMEM;
    }
    for (uint32_t i = 0; i < m->nrefs; i++) {
        if (strcmp(m->refs[i].name, name) == 0) {
            m->refs[i].raw = raw;
            return FR_OK;
        }
    }
    struct ice_ref *refs = ice_alloc(m->arena, sizeof *refs * (m->nrefs + 1));
    if (!refs) {
        return FR_ENOMEM;
    }
    if (m->nrefs) {
        memcpy(refs, m->refs, sizeof *refs * m->nrefs);
    }
    refs[m->nrefs] = (struct ice_ref){name, raw};
    m->refs = refs;
    m->nrefs++;
    return FR_OK;
}

static void drop_ref(struct ice_meta *m, const char *name)
{
    if (strcmp(name, "main") == 0) {
        m->current_snapshot_id = -1;
        return;
    }
    for (uint32_t i = 0; i < m->nrefs; i++) {
        if (strcmp(m->refs[i].name, name) == 0) {
            memmove(&m->refs[i], &m->refs[i + 1], sizeof *m->refs * (m->nrefs - i - 1));
            m->nrefs--;
            return;
        }
    }
}

static int up_remove_snapshots(struct ice_meta *m, const struct fr_json_val *u)
{
    struct fr_json_val arr, v;
    if (jget(u, "snapshot-ids", &arr) != 1 || arr.type != FR_JSON_ARRAY) {
        return ice_err(FR_EINVAL, "remove-snapshots: no \"snapshot-ids\" array");
    }
    struct ice_jit it;
    ice_jit_init(&it, &arr);
    int rc;
    while ((rc = ice_jit_next(&it, NULL, &v)) == 1) {
        int64_t id;
        if (fr_json_int64(&v, &id) < 0) {
            return ice_err(FR_EINVAL, "remove-snapshots: ids must be integers");
        }
        for (uint32_t i = 0; i < m->nsnapshots; i++) {
            if (m->snapshots[i].pub.snapshot_id == id) {
                memmove(&m->snapshots[i], &m->snapshots[i + 1],
                        sizeof *m->snapshots * (m->nsnapshots - i - 1));
                m->nsnapshots--;
                break;
            }
        }
    }
    if (rc < 0) {
        return ice_err(FR_EJSON, "remove-snapshots: malformed array");
    }
    /* refs to removed snapshots go with them (Java does the same) */
    if (m->current_snapshot_id >= 0 && !ice_meta_snapshot(m, m->current_snapshot_id)) {
        m->current_snapshot_id = -1;
    }
    for (uint32_t i = 0; i < m->nrefs;) {
        if (!ice_meta_snapshot(m, ref_id(m, m->refs[i].name))) {
            drop_ref(m, m->refs[i].name);
        } else {
            i++;
        }
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < m->nsnapshot_log; i++) {
        if (ice_meta_snapshot(m, m->snapshot_log[i].snapshot_id)) {
            m->snapshot_log[k++] = m->snapshot_log[i];
        }
    }
    m->nsnapshot_log = k;
    return FR_OK;
}

static int set_prop(struct ice_meta *m, const char *key, const char *value)
{
    for (uint32_t i = 0; i < m->nprops; i++) {
        if (strcmp(m->props[i].key, key) == 0) {
            m->props[i].value = value;
            return FR_OK;
        }
    }
    struct fr_ice_kv *p = ice_alloc(m->arena, sizeof *p * (m->nprops + 1));
    if (!p) {
        return FR_ENOMEM;
    }
    if (m->nprops) {
        memcpy(p, m->props, sizeof *p * m->nprops);
    }
    p[m->nprops] = (struct fr_ice_kv){key, value};
    m->props = p;
    m->nprops++;
    return FR_OK;
}

static int up_set_properties(struct ice_meta *m, const struct fr_json_val *u)
{
    struct fr_json_val obj, k, v;
    if (jget(u, "updates", &obj) != 1 || obj.type != FR_JSON_OBJECT) {
        return ice_err(FR_EINVAL, "set-properties: no \"updates\" object");
    }
    struct ice_jit it;
    ice_jit_init(&it, &obj);
    int rc;
    while ((rc = ice_jit_next(&it, &k, &v)) == 1) {
        if (v.type != FR_JSON_STRING) {
            return ice_err(FR_EINVAL, "set-properties: values must be strings");
        }
        const char *key = ice_json_str(m->arena, &k), *value = ice_json_str(m->arena, &v);
        if (!key || !value) {
            return ice_err(FR_ENOMEM, "set-properties: out of memory for the values");
        }
        if ((rc = set_prop(m, key, value)) < 0) {
            return rc;
        }
    }
    return rc < 0 ? ice_err(FR_EJSON, "set-properties: malformed object") : FR_OK;
}

static int up_remove_properties(struct ice_meta *m, const struct fr_json_val *u)
{
    struct fr_json_val arr, v;
    if (jget(u, "removals", &arr) != 1 || arr.type != FR_JSON_ARRAY) {
        return ice_err(FR_EINVAL, "remove-properties: no \"removals\" array");
    }
    struct ice_jit it;
    ice_jit_init(&it, &arr);
    int rc;
    while ((rc = ice_jit_next(&it, NULL, &v)) == 1) {
        const char *key = ice_json_str(m->arena, &v);
        if (!key) {
            return ice_err(FR_EINVAL, "remove-properties: keys must be strings");
        }
        for (uint32_t i = 0; i < m->nprops; i++) {
            if (strcmp(m->props[i].key, key) == 0) {
                memmove(&m->props[i], &m->props[i + 1], sizeof *m->props * (m->nprops - i - 1));
                m->nprops--;
                break;
            }
        }
    }
    return rc < 0 ? ice_err(FR_EJSON, "remove-properties: malformed array") : FR_OK;
}

/* set-current-schema, set-default-spec, set-default-sort-order */
static int up_set_id(struct ice_meta *m, const char *action, const struct fr_json_val *u,
                     const struct rest_state *st)
{
    const bool schema = strcmp(action, "set-current-schema") == 0;
    const bool spec = strcmp(action, "set-default-spec") == 0;
    const char *key = schema ? "schema-id" : spec ? "spec-id" : "sort-order-id";
    int32_t id = 0;
    int rc = jint32(u, key, &id, action);
    if (rc < 0) {
        return rc;
    }
    if (id == -1) {
        id = schema ? st->last_schema : spec ? st->last_spec : st->last_order;
        if (id == INT32_MIN) {
            return ice_err(FR_EINVAL, "%s: -1 (the last added) but this request added none",
                           action);
        }
    }
    if (schema) {
        if (!ice_meta_schema(m, id)) {
            return ice_err(FR_EINVAL, "%s: schema %d does not exist", action, (int)id);
        }
        m->current_schema_id = id;
        return FR_OK;
    }
    if (spec) {
        if (!ice_meta_spec(m, id)) {
            return ice_err(FR_EINVAL, "%s: spec %d does not exist", action, (int)id);
        }
        m->default_spec_id = id;
        return FR_OK;
    }
    int64_t ids[256];
    uint32_t n;
    bool found = false;
    if ((rc = order_ids(m, ids, 256, &n)) < 0) {
        return rc;
    }
    for (uint32_t i = 0; i < n; i++) {
        found = found || ids[i] == id;
    }
    if (!found) {
        return ice_err(FR_EINVAL, "%s: sort order %d does not exist", action, (int)id);
    }
    m->default_sort_order_id = id;
    return FR_OK;
}

static int apply_update(struct ice_change *c, struct ice_meta *m, const struct fr_json_val *u,
                        struct rest_state *st)
{
    if (u->type != FR_JSON_OBJECT) {
        return ice_err(FR_EINVAL, "an update must be an object");
    }
    const char *action = jstr(c->arena, u, "action");
    if (!action) {
        return ice_err(FR_EINVAL, "an update without \"action\"");
    }
    if (strcmp(action, "assign-uuid") == 0) {
        const char *uuid = jstr(c->arena, u, "uuid");
        if (!uuid || strcasecmp(uuid, m->uuid) != 0) {
            return ice_err(FR_EINVAL, "assign-uuid: table %s.%s is %s; its uuid cannot change",
                           c->ns, c->name, m->uuid);
        }
        return FR_OK;
    }
    if (strcmp(action, "upgrade-format-version") == 0) {
        int64_t v = 0;
        int rc = jint(u, "format-version", &v, action);
        if (rc < 0) {
            return rc;
        }
        if (v < m->format_version) {
            return ice_err(FR_EINVAL, "upgrade-format-version: %lld would downgrade v%d",
                           (long long)v, m->format_version);
        }
        if (v > 2) {
            return ice_err(FR_EUNSUPPORTED, "upgrade-format-version: freshet writes v2, not v%lld",
                           (long long)v);
        }
        return FR_OK;
    }
    if (strcmp(action, "add-schema") == 0) {
        return up_add_schema(m, u, st);
    }
    if (strcmp(action, "add-spec") == 0) {
        return up_add_spec(m, u, st);
    }
    if (strcmp(action, "add-sort-order") == 0) {
        return up_add_sort_order(m, u, st);
    }
    if (strcmp(action, "set-current-schema") == 0 || strcmp(action, "set-default-spec") == 0 ||
        strcmp(action, "set-default-sort-order") == 0) {
        return up_set_id(m, action, u, st);
    }
    if (strcmp(action, "add-snapshot") == 0) {
        return up_add_snapshot(c, m, u);
    }
    if (strcmp(action, "set-snapshot-ref") == 0) {
        return up_set_ref(m, u);
    }
    if (strcmp(action, "remove-snapshot-ref") == 0) {
        const char *name = jstr(m->arena, u, "ref-name");
        if (!name) {
            return ice_err(FR_EINVAL, "remove-snapshot-ref: no \"ref-name\"");
        }
        drop_ref(m, name);
        return FR_OK;
    }
    if (strcmp(action, "remove-snapshots") == 0) {
        return up_remove_snapshots(m, u);
    }
    if (strcmp(action, "set-properties") == 0) {
        return up_set_properties(m, u);
    }
    if (strcmp(action, "remove-properties") == 0) {
        return up_remove_properties(m, u);
    }
    if (strcmp(action, "set-location") == 0) {
        const char *loc = jstr(c->arena, u, "location");
        if (!loc) {
            return ice_err(FR_EINVAL, "set-location: no \"location\"");
        }
        size_t a = strlen(loc), b = strlen(m->location);
        while (a && loc[a - 1] == '/') {
            a--;
        }
        if (a != b || strncmp(loc, m->location, b) != 0) {
            return ice_err(FR_EUNSUPPORTED,
                           "set-location: freshet keeps table %s.%s at %s (its warehouse path); "
                           "moving it is not supported",
                           c->ns, c->name, m->location);
        }
        return FR_OK;
    }
    return ice_err(FR_EUNSUPPORTED, "update action \"%s\" is not supported by freshet", action);
}

int ice_rest_apply(struct ice_change *c)
{
    const struct ice_meta *bm = c->base->meta;
    struct fr_json_val root, reqs, ups, v;
    const char *p = c->rest_json;
    if (!fr_json_value(p, p + c->rest_len, &root) || root.type != FR_JSON_OBJECT) {
        return ice_err(FR_EJSON, "table %s.%s: the change is not a JSON object", c->ns, c->name);
    }
    struct ice_jit it;
    int rc, n = 0;
    if ((rc = jget(&root, "requirements", &reqs)) == 1) {
        if (reqs.type != FR_JSON_ARRAY) {
            return ice_err(FR_EINVAL, "\"requirements\" must be an array");
        }
        ice_jit_init(&it, &reqs);
        while ((rc = ice_jit_next(&it, NULL, &v)) == 1) {
            if (++n > REST_MAX_ITEMS) {
                return ice_err(FR_ETOOBIG, "more than %d requirements", REST_MAX_ITEMS);
            }
            if ((rc = check_requirement(c, bm, &v)) < 0) {
                return rc;
            }
        }
    }
    if (rc < 0) {
        return ice_err(FR_EJSON, "malformed requirements");
    }
    if ((rc = jget(&root, "updates", &ups)) != 1 || ups.type != FR_JSON_ARRAY) {
        return rc < 0 ? ice_err(FR_EJSON, "malformed updates")
                      : ice_err(FR_EINVAL, "\"updates\" must be an array");
    }
    /* what the updates add lives in the next version's arena: room for
     * the request's content, whatever the base's size */
    c->next->arena->cap += c->rest_len * 4 + ((size_t)1 << 20);
    struct rest_state st = {INT32_MIN, INT32_MIN, INT32_MIN};
    n = 0;
    ice_jit_init(&it, &ups);
    while ((rc = ice_jit_next(&it, NULL, &v)) == 1) {
        if (++n > REST_MAX_ITEMS) {
            return ice_err(FR_ETOOBIG, "more than %d updates", REST_MAX_ITEMS);
        }
        if ((rc = apply_update(c, c->next, &v, &st)) < 0) {
            return rc;
        }
    }
    if (rc < 0) {
        return ice_err(FR_EJSON, "malformed updates");
    }
    if (n == 0) {
        ice_meta_free(c->next); /* nothing to write: the commit is a no-op */
        c->next = NULL;
    }
    return FR_OK;
}

/* ------------------------------------------------------- REST answers -- */

int fr_ice_rest_load(struct fr_ice_catalog *cat, const char *ns, const char *name,
                     struct fr_buf *out)
{
    char loc[ICE_PATH_MAX], path[ICE_PATH_MAX];
    struct fr_buf b;
    ice_err_clear();
    fr_buf_init(&b, ICE_MAX_METADATA_BYTES);
    int rc = ice_cat_get(cat, ns, name, loc, sizeof loc);
    if (rc == FR_OK) {
        rc = ice_local_path_meta(cat, ns, name, NULL, loc, path, sizeof path);
    }
    bool cached = rc == FR_OK && ice_meta_cache_raw(cat, ns, name, loc, path, &b);
    if (rc == FR_OK && !cached) {
        rc = ice_io_read(&cat->io, path, &b);
        if (rc < 0) {
            ice_err(rc, "table %s.%s: cannot read metadata file %s", ns, name, path);
        }
    }
    if (rc == FR_OK && fr_json_validate((const char *)b.data, (const char *)b.data + b.len) < 0) {
        rc = ice_err(FR_ECORRUPT, "table %s.%s: metadata file %s is not JSON", ns, name, path);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, "{\"metadata-location\":");
    }
    if (rc == FR_OK) {
        rc = fr_buf_json_str(out, loc, strlen(loc));
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, ",\"metadata\":");
    }
    if (rc == FR_OK) {
        rc = fr_buf_append(out, b.data, b.len);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, ",\"config\":{}}\n");
    }
    if (rc == FR_OK && !cached) { /* the next load of this version answers from memory */
        void *raw = b.data;
        ice_meta_cache_put_raw(cat, ns, name, loc, &raw, b.len);
        if (!raw) {
            b.data = NULL; /* the cache took the bytes */
            b.len = b.alloc = 0;
        }
    }
    fr_buf_free(&b);
    return rc;
}

/* A CommitTableResponse / LoadTableResult from a metadata model. */
static int put_result(struct fr_buf *out, const char *location, const struct ice_meta *m,
                      bool config)
{
    int rc = fr_buf_puts(out, "{\"metadata-location\":");
    if (rc == FR_OK) {
        rc = fr_buf_json_str(out, location, strlen(location));
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, ",\"metadata\":");
    }
    if (rc == FR_OK) {
        rc = ice_meta_write(m, out);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, config ? ",\"config\":{}}\n" : "}\n");
    }
    return rc;
}

int fr_ice_rest_create(struct fr_ice_catalog *cat, const char *ns, const char *json, size_t len,
                       struct fr_buf *out)
{
    struct fr_json_val root, v;
    struct ice_meta *m = NULL;
    char dir[ICE_PATH_MAX];
    const char *location = NULL;
    ice_err_clear();
    if (fr_json_validate(json, json + len) < 0 || !fr_json_value(json, json + len, &root) ||
        root.type != FR_JSON_OBJECT) {
        return ice_err(FR_EJSON, "the request is not a JSON object");
    }
    int rc = fr_ice_ns_exists(cat, ns);
    if (rc <= 0) {
        return rc < 0 ? rc : ice_err(FR_ENOTFOUND, "namespace %s does not exist", ns);
    }
    m = calloc(1, sizeof *m);
    if (!m || !(m->arena = ice_arena_new(len * 4 + (1u << 20)))) {
        free(m);
        return FR_ENOMEM;
    }
    const char *name = jstr(m->arena, &root, "name");
    if (!name || !ice_name_ok(name)) {
        rc = ice_err(FR_EINVAL, "\"name\" must match [A-Za-z_][A-Za-z0-9_]*");
        goto cleanup;
    }
    if (jget(&root, "stage-create", &v) == 1 && v.type == FR_JSON_TRUE) {
        rc = ice_err(FR_EUNSUPPORTED, "stage-create is not supported by freshet");
        goto cleanup;
    }
    m->format_version = 2;
    ice_uuid(m->uuid);
    m->last_updated_ms = fr_wall_ms();
    m->current_snapshot_id = -1;
    rc = ice_table_dir(cat, ns, name, dir, sizeof dir);
    if (rc < 0) {
        goto cleanup;
    }
    m->location = ice_sprintf(m->arena, "%s%s", fr_ice_catalog_warehouse_uri(cat),
                              dir + strlen(fr_ice_catalog_warehouse(cat)));
    const char *want = jstr(m->arena, &root, "location");
    if (want && m->location && strcmp(want, m->location) != 0) {
        rc = ice_err(FR_EUNSUPPORTED, "location: freshet places table %s.%s at %s", ns, name,
                     m->location);
        goto cleanup;
    }
    struct fr_json_val sv;
    m->schemas = ice_alloc(m->arena, sizeof *m->schemas);
    if (!m->location || !m->schemas) {
        rc = FR_ENOMEM;
        goto cleanup;
    }
    if (jget(&root, "schema", &sv) != 1) {
        rc = ice_err(FR_EINVAL, "no \"schema\"");
        goto cleanup;
    }
    rc = ice_schema_parse(m, &sv, m->schemas);
    if (rc == FR_ECORRUPT) {
        rc = ice_err(FR_EINVAL, "%s", fr_ice_errmsg());
    }
    if (rc == FR_OK) {
        rc = check_schema(m->schemas);
    }
    if (rc < 0) {
        goto cleanup;
    }
    m->schemas->schema_id = 0;
    m->nschemas = 1;
    m->last_column_id = max_field_id(&sv, 0);
    m->specs = ice_alloc(m->arena, sizeof *m->specs);
    if (!m->specs) {
        rc = FR_ENOMEM;
        goto cleanup;
    }
    m->nspecs = 1;
    m->last_partition_id = 999;
    if (jget(&root, "partition-spec", &v) == 1) {
        rc = parse_spec(m, &v, m->specs, &m->last_partition_id);
        if (rc < 0) {
            goto cleanup;
        }
    }
    m->sort_orders_raw = "[{\"order-id\":0,\"fields\":[]}]";
    struct fr_json_val fields;
    if (jget(&root, "write-order", &v) == 1 && v.type == FR_JSON_OBJECT &&
        jget(&v, "fields", &fields) == 1 && fields.type == FR_JSON_ARRAY &&
        fields.end - fields.start > 2) {
        m->sort_orders_raw = ice_sprintf(
            m->arena, "[{\"order-id\":0,\"fields\":[]},{\"order-id\":1,\"fields\":%.*s}]",
            (int)(fields.end - fields.start), fields.start);
        m->default_sort_order_id = 1;
    }
    if (jget(&root, "properties", &v) == 1) {
        struct fr_json_val u = {0};
        char *wrap = ice_sprintf(m->arena, "{\"updates\":%.*s}", (int)(v.end - v.start), v.start);
        if (!wrap || !fr_json_value(wrap, wrap + strlen(wrap), &u)) {
            rc = FR_ENOMEM;
            goto cleanup;
        }
        rc = up_set_properties(m, &u);
        if (rc < 0) {
            goto cleanup;
        }
    }
    rc = ice_table_create_meta(cat, ns, name, m, &location);
    if (rc == FR_OK && out) {
        rc = put_result(out, location, m, true);
    }
cleanup:
    ice_meta_free(m);
    return rc;
}

int fr_ice_rest_commit(struct fr_ice_catalog *cat, const struct fr_ice_rest_change *changes,
                       uint32_t n, struct fr_buf *out)
{
    struct fr_ice_txn *txn = NULL;
    struct ice_change *first = NULL;
    ice_err_clear();
    if (n == 0 || n > ICE_MAX_CHANGES) {
        return ice_err(FR_EINVAL, "a commit holds 1 to %d table changes", ICE_MAX_CHANGES);
    }
    int rc = fr_ice_txn_begin(cat, &txn);
    for (uint32_t i = 0; rc == FR_OK && i < n; i++) {
        struct ice_change *c;
        rc = ice_change_new(cat, ICE_CH_REST, changes[i].ns, changes[i].name, &c);
        if (rc < 0) {
            break;
        }
        c->rest_json = ice_strndup(c->arena, changes[i].json, changes[i].len);
        c->rest_len = changes[i].len;
        if (!c->rest_json) {
            ice_change_free(c);
            rc = FR_ENOMEM;
            break;
        }
        if (fr_json_validate(c->rest_json, c->rest_json + c->rest_len) < 0) {
            ice_change_free(c);
            rc = ice_err(FR_EJSON, "table %s.%s: the change is not valid JSON", changes[i].ns,
                         changes[i].name);
            break;
        }
        first = first ? first : c;
        rc = ice_txn_add_change(txn, c);
    }
    if (rc == FR_OK) {
        rc = fr_ice_txn_commit(txn, NULL);
    }
    if (rc == FR_OK && out && first) {
        /* the version now current: the new one, or the base of a no-op */
        const struct ice_meta *m = first->next ? first->next : first->base->meta;
        const char *loc = first->next ? first->next_location : first->base->meta_location;
        rc = put_result(out, loc, m, false);
    }
    fr_ice_txn_free(txn);
    return rc;
}
