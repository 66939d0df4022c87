/*
 * avro.c — Avro binary encoding and the object-container file format, as
 * Iceberg manifests and manifest lists use them. avro-c drops the
 * "field-id" attributes from the schema it writes (DEPENDENCIES-MEASURED
 * §7), so freshet writes the container itself, with the schema text
 * exactly as given, and the "null" codec (icebird's inflater breaks on
 * small deflate blocks; every reader takes "null").
 *
 * Object container file (Avro 1.12, "Object Container Files"):
 *
 *   offset  bytes  field
 *   0       4      magic "Obj" 0x01
 *   4       var    metadata: map<bytes> = blocks of (count: long, then
 *                  count x (key: string, value: bytes)), ended by count 0.
 *                  Keys written: avro.schema, avro.codec ("null"), then the
 *                  caller's pairs (Iceberg's schema, partition-spec, ...)
 *   ...     16     sync marker (random per file)
 *   then per block:
 *           var    object count: long (> 0)
 *           var    byte size of the objects: long
 *           size   the objects, binary encoded back to back (codec null)
 *           16     the sync marker again
 *
 * Binary encoding:
 *   int, long     zig-zag ((n << 1) ^ (n >> 63)) then ULEB128, 7 bits a byte,
 *                 low group first, high bit set on all but the last byte
 *   boolean       one byte 0 or 1
 *   double        8 bytes IEEE 754, little endian
 *   bytes, string long length, then the bytes (strings UTF-8)
 *   union         long branch index, then the value (null: nothing)
 *   array, map    blocks of (long count, items) ended by count 0; a
 *                 negative count -n is followed by the block's byte size
 *   record        the fields in schema order
 *
 * The reader parses the schema from the file's own avro.schema key and
 * decodes generically, so files other engines wrote (field order, extra
 * fields) read the same; named-type references are not supported (icebird
 * does not support them either, and Iceberg writers define every record
 * inline). Every length is checked against the buffer; depth is bounded.
 */
#include "iceberg/iceberg_int.h"

#include "core/err.h"

#include <assert.h>
#include <string.h>
#include <sys/random.h>

static_assert(sizeof(double) == 8, "Avro doubles are 8 bytes");

#define AVRO_MAGIC "Obj\x01"
#define AVRO_BLOCK_BYTES (1u << 20) /* flush a block past this size */
#define AVRO_MAX_DEPTH 32

/* ---------------------------------------------------------- encoding -- */

int ice_avro_long(struct fr_buf *buf, int64_t v)
{
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    uint8_t tmp[10];
    size_t n = 0;
    do {
        uint8_t b = z & 0x7f;
        z >>= 7;
        tmp[n++] = (uint8_t)(b | (z ? 0x80 : 0));
    } while (z);
    return fr_buf_append(buf, tmp, n);
}

int ice_avro_bytes(struct fr_buf *buf, const void *p, size_t len)
{
    int rc = ice_avro_long(buf, (int64_t)len);
    return rc < 0 ? rc : fr_buf_append(buf, p, len);
}

int ice_avro_str(struct fr_buf *buf, const char *s)
{
    return ice_avro_bytes(buf, s, strlen(s));
}

int ice_avro_double(struct fr_buf *buf, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    uint8_t b[8];
    for (int i = 0; i < 8; i++) {
        b[i] = (uint8_t)(u >> (8 * i));
    }
    return fr_buf_append(buf, b, 8);
}

int ice_avro_bool(struct fr_buf *buf, bool v)
{
    return fr_buf_putc(buf, v ? 1 : 0);
}

/* ---------------------------------------------------- container writer -- */

int ice_avro_begin(struct ice_avro_writer *w, struct fr_buf *out, const char *schema_json,
                   const struct fr_ice_kv *meta, uint32_t nmeta)
{
    memset(w, 0, sizeof *w);
    w->out = out;
    fr_buf_init(&w->block, ICE_MAX_AVRO_BYTES);
    if (getrandom(w->sync, sizeof w->sync, 0) != (ssize_t)sizeof w->sync) {
        for (size_t i = 0; i < sizeof w->sync; i++) {
            w->sync[i] = (uint8_t)(i * 37 + (uintptr_t)w);
        }
    }
    int rc = fr_buf_append(out, AVRO_MAGIC, 4);
    if (rc == FR_OK) {
        rc = ice_avro_long(out, 2 + (int64_t)nmeta);
    }
    if (rc == FR_OK) {
        rc = ice_avro_str(out, "avro.schema");
    }
    if (rc == FR_OK) {
        rc = ice_avro_str(out, schema_json);
    }
    if (rc == FR_OK) {
        rc = ice_avro_str(out, "avro.codec");
    }
    if (rc == FR_OK) {
        rc = ice_avro_str(out, "null");
    }
    for (uint32_t i = 0; rc == FR_OK && i < nmeta; i++) {
        rc = ice_avro_str(out, meta[i].key);
        if (rc == FR_OK) {
            rc = ice_avro_str(out, meta[i].value);
        }
    }
    if (rc == FR_OK) {
        rc = ice_avro_long(out, 0);
    }
    if (rc == FR_OK) {
        rc = fr_buf_append(out, w->sync, sizeof w->sync);
    }
    return rc;
}

static int avro_flush_block(struct ice_avro_writer *w)
{
    if (w->block_count == 0) {
        return FR_OK;
    }
    int rc = ice_avro_long(w->out, w->block_count);
    if (rc == FR_OK) {
        rc = ice_avro_long(w->out, (int64_t)w->block.len);
    }
    if (rc == FR_OK) {
        rc = fr_buf_append(w->out, w->block.data, w->block.len);
    }
    if (rc == FR_OK) {
        rc = fr_buf_append(w->out, w->sync, sizeof w->sync);
    }
    fr_buf_reset(&w->block);
    w->block_count = 0;
    return rc;
}

int ice_avro_record_end(struct ice_avro_writer *w)
{
    w->block_count++;
    return w->block.len >= AVRO_BLOCK_BYTES ? avro_flush_block(w) : FR_OK;
}

int ice_avro_finish(struct ice_avro_writer *w)
{
    int rc = avro_flush_block(w);
    fr_buf_free(&w->block);
    return rc;
}

void ice_avro_writer_free(struct ice_avro_writer *w)
{
    if (w) {
        fr_buf_free(&w->block);
    }
}

/* ------------------------------------------------------ schema parsing -- */

struct ice_avro_schema {
    enum ice_avro_kind kind;
    uint32_t n;                         /* record fields, union branches */
    const char **names;                 /* record field names */
    int32_t *ids;                       /* record field ids, -1 when absent */
    const struct ice_avro_schema **sub; /* field types / branches / [0] items or values */
    size_t size;                        /* fixed */
};

static const struct {
    const char *name;
    enum ice_avro_kind kind;
} avro_prims[] = {
    {"null", AV_NULL},   {"boolean", AV_BOOLEAN}, {"int", AV_INT},     {"long", AV_LONG},
    {"float", AV_FLOAT}, {"double", AV_DOUBLE},   {"bytes", AV_BYTES}, {"string", AV_STRING},
};

static int avro_parse_schema(struct fr_ice_arena *arena, const struct fr_json_val *v, int depth,
                             const struct ice_avro_schema **out);

static int avro_prim(struct fr_ice_arena *arena, const struct fr_json_val *v,
                     const struct ice_avro_schema **out)
{
    for (size_t i = 0; i < sizeof avro_prims / sizeof avro_prims[0]; i++) {
        if (fr_json_str_eq(v, avro_prims[i].name)) {
            struct ice_avro_schema *s = ice_alloc(arena, sizeof *s);
            if (!s) {
                return FR_ENOMEM;
            }
            s->kind = avro_prims[i].kind;
            *out = s;
            return FR_OK;
        }
    }
    return ice_err(FR_EUNSUPPORTED, "avro schema: named type reference \"%.*s\" not supported",
                   (int)(v->end - v->start), v->start);
}

static int avro_count(const struct fr_json_val *arr, uint32_t *n)
{
    struct ice_jit it;
    struct fr_json_val item;
    int rc;
    *n = 0;
    ice_jit_init(&it, arr);
    while ((rc = ice_jit_next(&it, NULL, &item)) == 1) {
        (*n)++;
    }
    return rc;
}

static int avro_parse_record(struct fr_ice_arena *arena, const struct fr_json_val *obj, int depth,
                             struct ice_avro_schema *s)
{
    struct fr_json_val fields, f;
    if (fr_json_member(obj, "fields", &fields) != 1 || fields.type != FR_JSON_ARRAY) {
        return ice_err(FR_ECORRUPT, "avro schema: record without fields");
    }
    int rc = avro_count(&fields, &s->n);
    if (rc < 0) {
        return FR_ECORRUPT;
    }
    s->names = ice_alloc(arena, sizeof *s->names * (s->n + 1));
    s->ids = ice_alloc(arena, sizeof *s->ids * (s->n + 1));
    s->sub = ice_alloc(arena, sizeof *s->sub * (s->n + 1));
    if (!s->names || !s->ids || !s->sub) {
        return FR_ENOMEM;
    }
    struct ice_jit it;
    ice_jit_init(&it, &fields);
    for (uint32_t i = 0; i < s->n; i++) {
        if (ice_jit_next(&it, NULL, &f) != 1 || f.type != FR_JSON_OBJECT) {
            return ice_err(FR_ECORRUPT, "avro schema: bad record field");
        }
        struct fr_json_val name, type, id;
        if (fr_json_member(&f, "name", &name) != 1 || fr_json_member(&f, "type", &type) != 1) {
            return ice_err(FR_ECORRUPT, "avro schema: field without name or type");
        }
        s->names[i] = ice_json_str(arena, &name);
        int64_t fid = -1;
        if (fr_json_member(&f, "field-id", &id) == 1 && fr_json_int64(&id, &fid) < 0) {
            return ice_err(FR_ECORRUPT, "avro schema: bad field-id");
        }
        s->ids[i] = (int32_t)fid;
        rc = avro_parse_schema(arena, &type, depth + 1, &s->sub[i]);
        if (rc < 0) {
            return rc;
        }
    }
    return FR_OK;
}

static int avro_parse_schema(struct fr_ice_arena *arena, const struct fr_json_val *v, int depth,
                             const struct ice_avro_schema **out)
{
    if (depth > AVRO_MAX_DEPTH) {
        return ice_err(FR_ECORRUPT, "avro schema nested too deeply");
    }
    if (v->type == FR_JSON_STRING) {
        return avro_prim(arena, v, out);
    }
    struct ice_avro_schema *s = ice_alloc(arena, sizeof *s);
    if (!s) {
        return FR_ENOMEM;
    }
    *out = s;
    if (v->type == FR_JSON_ARRAY) {
        s->kind = AV_UNION;
        int rc = avro_count(v, &s->n);
        if (rc < 0 || s->n == 0) {
            return ice_err(FR_ECORRUPT, "avro schema: bad union");
        }
        s->sub = ice_alloc(arena, sizeof *s->sub * s->n);
        if (!s->sub) {
            return FR_ENOMEM;
        }
        struct ice_jit it;
        struct fr_json_val b;
        ice_jit_init(&it, v);
        for (uint32_t i = 0; i < s->n; i++) {
            if (ice_jit_next(&it, NULL, &b) != 1) {
                return FR_ECORRUPT;
            }
            rc = avro_parse_schema(arena, &b, depth + 1, &s->sub[i]);
            if (rc < 0) {
                return rc;
            }
        }
        return FR_OK;
    }
    if (v->type != FR_JSON_OBJECT) {
        return ice_err(FR_ECORRUPT, "avro schema: unexpected JSON value");
    }
    struct fr_json_val type;
    if (fr_json_member(v, "type", &type) != 1) {
        return ice_err(FR_ECORRUPT, "avro schema: object without type");
    }
    if (type.type != FR_JSON_STRING) {
        /* {"type": {...}} wraps another schema */
        return avro_parse_schema(arena, &type, depth + 1, out);
    }
    if (fr_json_str_eq(&type, "record")) {
        s->kind = AV_RECORD;
        return avro_parse_record(arena, v, depth, s);
    }
    if (fr_json_str_eq(&type, "array") || fr_json_str_eq(&type, "map")) {
        bool arr = fr_json_str_eq(&type, "array");
        s->kind = arr ? AV_ARRAY : AV_MAP;
        struct fr_json_val items;
        if (fr_json_member(v, arr ? "items" : "values", &items) != 1) {
            return ice_err(FR_ECORRUPT, "avro schema: array/map without items");
        }
        s->sub = ice_alloc(arena, sizeof *s->sub);
        if (!s->sub) {
            return FR_ENOMEM;
        }
        s->n = 1;
        return avro_parse_schema(arena, &items, depth + 1, &s->sub[0]);
    }
    if (fr_json_str_eq(&type, "fixed")) {
        struct fr_json_val size;
        int64_t sz;
        if (fr_json_member(v, "size", &size) != 1 || fr_json_int64(&size, &sz) < 0 || sz < 0 ||
            sz > (1 << 20)) {
            return ice_err(FR_ECORRUPT, "avro schema: bad fixed size");
        }
        s->kind = AV_FIXED;
        s->size = (size_t)sz;
        return FR_OK;
    }
    if (fr_json_str_eq(&type, "enum")) {
        s->kind = AV_ENUM;
        return FR_OK;
    }
    const struct ice_avro_schema *prim = NULL;
    int rc = avro_prim(arena, &type, &prim);
    if (rc == FR_OK) {
        *out = prim;
    }
    return rc;
}

/* ------------------------------------------------------------ decoding -- */

struct avro_in {
    const uint8_t *p, *end;
    struct fr_ice_arena *arena;
};

static int avro_read_long(struct avro_in *in, int64_t *v)
{
    uint64_t z = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (in->p >= in->end) {
            return FR_ETRUNC;
        }
        uint8_t b = *in->p++;
        z |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
            return FR_OK;
        }
    }
    return FR_ECORRUPT;
}

static int avro_read_bytes(struct avro_in *in, const uint8_t **p, size_t *n)
{
    int64_t len;
    int rc = avro_read_long(in, &len);
    if (rc < 0) {
        return rc;
    }
    if (len < 0 || len > in->end - in->p) {
        return FR_ETRUNC;
    }
    *p = in->p;
    *n = (size_t)len;
    in->p += len;
    return FR_OK;
}

static int avro_decode(struct avro_in *in, const struct ice_avro_schema *s, int depth,
                       struct ice_avro_val *v);

/* Arrays and maps: blocks of items; items go into a growing array. */
static int avro_decode_blocks(struct avro_in *in, const struct ice_avro_schema *s, int depth,
                              struct ice_avro_val *v)
{
    uint32_t per = s->kind == AV_MAP ? 2 : 1;
    uint32_t cap = 0, n = 0;
    struct ice_avro_val *items = NULL;
    for (;;) {
        int64_t count;
        int rc = avro_read_long(in, &count);
        if (rc < 0) {
            return rc;
        }
        if (count == 0) {
            break;
        }
        if (count == INT64_MIN) {
            return FR_ECORRUPT; /* has no positive count */
        }
        if (count < 0) {
            int64_t size;
            count = -count;
            rc = avro_read_long(in, &size);
            if (rc < 0) {
                return rc;
            }
        }
        if (count > in->end - in->p || count > (1 << 24)) {
            return FR_ETRUNC; /* every item takes at least a byte... except null items */
        }
        uint32_t need = n + (uint32_t)count * per;
        if (need > cap) {
            uint32_t ncap = need < 16 ? 16 : need * 2;
            struct ice_avro_val *nitems = ice_alloc(in->arena, sizeof *nitems * ncap);
            if (!nitems) {
                return FR_ENOMEM;
            }
            if (n) {
                memcpy(nitems, items, sizeof *items * n);
            }
            items = nitems;
            cap = ncap;
        }
        for (int64_t i = 0; i < count; i++) {
            if (s->kind == AV_MAP) {
                const uint8_t *kp;
                size_t kn;
                rc = avro_read_bytes(in, &kp, &kn);
                if (rc < 0) {
                    return rc;
                }
                items[n].kind = AV_STRING;
                items[n].u.bytes.p = kp;
                items[n].u.bytes.n = kn;
                n++;
            }
            rc = avro_decode(in, s->sub[0], depth + 1, &items[n]);
            if (rc < 0) {
                return rc;
            }
            n++;
        }
    }
    v->u.list.items = items;
    v->u.list.n = n;
    return FR_OK;
}

static int avro_decode(struct avro_in *in, const struct ice_avro_schema *s, int depth,
                       struct ice_avro_val *v)
{
    if (depth > AVRO_MAX_DEPTH) {
        return FR_ECORRUPT;
    }
    v->kind = s->kind;
    v->schema = s;
    int rc = FR_OK;
    int64_t l;
    switch (s->kind) {
    case AV_NULL:
        return FR_OK;
    case AV_BOOLEAN:
        if (in->p >= in->end) {
            return FR_ETRUNC;
        }
        v->u.b = *in->p++ != 0;
        return FR_OK;
    case AV_INT:
    case AV_LONG:
    case AV_ENUM:
        return avro_read_long(in, &v->u.l);
    case AV_FLOAT:
    case AV_DOUBLE: {
        size_t w = s->kind == AV_FLOAT ? 4 : 8;
        if ((size_t)(in->end - in->p) < w) {
            return FR_ETRUNC;
        }
        if (w == 4) {
            uint32_t u = (uint32_t)in->p[0] | (uint32_t)in->p[1] << 8 | (uint32_t)in->p[2] << 16 |
                         (uint32_t)in->p[3] << 24;
            float f;
            memcpy(&f, &u, 4);
            v->u.d = f;
        } else {
            uint64_t u = 0;
            for (int i = 7; i >= 0; i--) {
                u = u << 8 | in->p[i];
            }
            memcpy(&v->u.d, &u, 8);
        }
        in->p += w;
        return FR_OK;
    }
    case AV_BYTES:
    case AV_STRING:
        return avro_read_bytes(in, &v->u.bytes.p, &v->u.bytes.n);
    case AV_FIXED:
        if ((size_t)(in->end - in->p) < s->size) {
            return FR_ETRUNC;
        }
        v->u.bytes.p = in->p;
        v->u.bytes.n = s->size;
        in->p += s->size;
        return FR_OK;
    case AV_UNION:
        rc = avro_read_long(in, &l);
        if (rc < 0) {
            return rc;
        }
        if (l < 0 || l >= (int64_t)s->n) {
            return FR_ECORRUPT;
        }
        return avro_decode(in, s->sub[l], depth + 1, v);
    case AV_RECORD:
        v->u.list.n = s->n;
        v->u.list.items = ice_alloc(in->arena, sizeof *v->u.list.items * (s->n + 1));
        if (!v->u.list.items) {
            return FR_ENOMEM;
        }
        for (uint32_t i = 0; i < s->n && rc == FR_OK; i++) {
            rc = avro_decode(in, s->sub[i], depth + 1, &v->u.list.items[i]);
        }
        return rc;
    case AV_ARRAY:
    case AV_MAP:
        return avro_decode_blocks(in, s, depth, v);
    }
    return FR_ECORRUPT;
}

/* -------------------------------------------------------- file reading -- */

int ice_avro_read(const uint8_t *data, size_t len, struct ice_avro_file *file)
{
    memset(file, 0, sizeof *file);
    file->arena =
        ice_arena_new((size_t)len * 64 + (1u << 20)); /* decoded trees run ~10-40x the bytes */
    if (!file->arena) {
        return FR_ENOMEM;
    }
    struct avro_in in = {data, data + len, file->arena};
    int rc = FR_OK;
    const uint8_t *sync = NULL;
    uint32_t cap = 0;
    if (len < 4 || memcmp(data, AVRO_MAGIC, 4) != 0) {
        rc = ice_err(FR_ECORRUPT, "not an Avro container file (bad magic)");
        goto cleanup;
    }
    in.p += 4;
    /* metadata map<bytes> */
    for (;;) {
        int64_t count;
        rc = avro_read_long(&in, &count);
        if (rc < 0) {
            goto cleanup;
        }
        if (count == 0) {
            break;
        }
        if (count == INT64_MIN) {
            rc = ice_err(FR_ECORRUPT, "avro metadata block count out of range");
            goto cleanup;
        }
        if (count < 0) {
            int64_t size;
            count = -count;
            if ((rc = avro_read_long(&in, &size)) < 0) {
                goto cleanup;
            }
        }
        if (count > 4096 || file->nmeta + count > 4096) {
            rc = FR_ECORRUPT;
            goto cleanup;
        }
        struct fr_ice_kv *meta = ice_alloc(file->arena, sizeof *meta * (file->nmeta + count));
        if (!meta) {
            rc = FR_ENOMEM;
            goto cleanup;
        }
        if (file->nmeta) {
            memcpy(meta, file->meta, sizeof *meta * file->nmeta);
        }
        file->meta = meta;
        for (int64_t i = 0; i < count; i++) {
            const uint8_t *kp, *vp;
            size_t kn, vn;
            if ((rc = avro_read_bytes(&in, &kp, &kn)) < 0 ||
                (rc = avro_read_bytes(&in, &vp, &vn)) < 0) {
                goto cleanup;
            }
            meta[file->nmeta].key = ice_strndup(file->arena, (const char *)kp, kn);
            meta[file->nmeta].value = ice_strndup(file->arena, (const char *)vp, vn);
            if (!meta[file->nmeta].key || !meta[file->nmeta].value) {
                rc = FR_ENOMEM;
                goto cleanup;
            }
            file->nmeta++;
        }
    }
    if (in.end - in.p < 16) {
        rc = FR_ETRUNC;
        goto cleanup;
    }
    sync = in.p;
    in.p += 16;
    const char *codec = ice_avro_meta(file, "avro.codec");
    if (codec && strcmp(codec, "null") != 0) {
        rc = ice_err(FR_EUNSUPPORTED, "avro codec \"%s\" not supported (freshet reads \"null\")",
                     codec);
        goto cleanup;
    }
    const char *schema_text = ice_avro_meta(file, "avro.schema");
    if (!schema_text) {
        rc = ice_err(FR_ECORRUPT, "avro file without avro.schema");
        goto cleanup;
    }
    struct fr_json_val sv;
    const char *send = schema_text + strlen(schema_text);
    if (!fr_json_value(schema_text, send, &sv)) {
        rc = ice_err(FR_ECORRUPT, "avro.schema is not valid JSON");
        goto cleanup;
    }
    rc = avro_parse_schema(file->arena, &sv, 0, &file->schema);
    if (rc < 0) {
        goto cleanup;
    }
    while (in.p < in.end) {
        int64_t count, size;
        if ((rc = avro_read_long(&in, &count)) < 0 || (rc = avro_read_long(&in, &size)) < 0) {
            goto cleanup;
        }
        if (count < 0 || size < 0 || size > in.end - in.p || count > size + 1 ||
            file->nrecords + count > (1u << 26)) {
            rc = ice_err(FR_ECORRUPT, "avro block header out of range");
            goto cleanup;
        }
        if (file->nrecords + count > cap) {
            uint32_t ncap = (uint32_t)(file->nrecords + count) * 2;
            struct ice_avro_val *recs = ice_alloc(file->arena, sizeof *recs * ncap);
            if (!recs) {
                rc = FR_ENOMEM;
                goto cleanup;
            }
            if (file->nrecords) {
                memcpy(recs, file->records, sizeof *recs * file->nrecords);
            }
            file->records = recs;
            cap = ncap;
        }
        struct avro_in blk = {in.p, in.p + size, file->arena};
        for (int64_t i = 0; i < count; i++) {
            rc = avro_decode(&blk, file->schema, 0, &file->records[file->nrecords]);
            if (rc < 0) {
                ice_err(rc, "avro record %u does not decode", file->nrecords);
                goto cleanup;
            }
            file->nrecords++;
        }
        if (blk.p != blk.end) {
            rc = ice_err(FR_ECORRUPT, "avro block size does not match its records");
            goto cleanup;
        }
        in.p += size;
        if (in.end - in.p < 16 || memcmp(in.p, sync, 16) != 0) {
            rc = ice_err(FR_ECORRUPT, "avro sync marker mismatch (truncated or torn file)");
            goto cleanup;
        }
        in.p += 16;
    }
cleanup:
    if (rc < 0) {
        if (rc == FR_ETRUNC) {
            ice_err(rc, "avro file truncated");
        }
        ice_avro_file_free(file);
    }
    return rc;
}

void ice_avro_file_free(struct ice_avro_file *file)
{
    if (file) {
        ice_arena_free(file->arena);
        memset(file, 0, sizeof *file);
    }
}

const char *ice_avro_meta(const struct ice_avro_file *file, const char *key)
{
    for (uint32_t i = 0; i < file->nmeta; i++) {
        if (strcmp(file->meta[i].key, key) == 0) {
            return file->meta[i].value;
        }
    }
    return NULL;
}

const struct ice_avro_val *ice_avro_field(const struct ice_avro_val *rec, int32_t id)
{
    if (!rec || rec->kind != AV_RECORD) {
        return NULL;
    }
    const struct ice_avro_schema *s = rec->schema;
    for (uint32_t i = 0; i < s->n && i < rec->u.list.n; i++) {
        if (s->ids[i] == id) {
            const struct ice_avro_val *v = &rec->u.list.items[i];
            return v->kind == AV_NULL ? NULL : v;
        }
    }
    return NULL;
}

bool ice_avro_get_long(const struct ice_avro_val *rec, int32_t id, int64_t *out)
{
    const struct ice_avro_val *v = ice_avro_field(rec, id);
    if (!v || (v->kind != AV_INT && v->kind != AV_LONG)) {
        return false;
    }
    *out = v->u.l;
    return true;
}
