/*
 * schema.c — what the writer accepts: schema and option validation, the
 * default options, type names. Pure functions over caller data: any thread.
 *
 * Column names are restricted to [A-Za-z_][A-Za-z0-9_]{0,254}: the names
 * Iceberg-Java's Avro-name sanitiser (and icebird's copy of it) leaves
 * unchanged, so every engine maps them to the same column
 * (ICEBERG-PARQUET-NOTES §1.6). Field ids must be unique and >= 0: Iceberg
 * maps Parquet columns to table columns by field_id.
 */
#include "parquet/parquet_int.h"

#define KIB ((size_t)1024)
#define MIB (KIB * KIB)
#define GIB (MIB * KIB)

/* ------------------------------------------------------------ validation */

static const char *const type_names[] = {
    [FR_PQ_BOOL] = "boolean", [FR_PQ_INT32] = "int32",       [FR_PQ_INT64] = "int64",
    [FR_PQ_DOUBLE] = "double", [FR_PQ_STRING] = "string",    [FR_PQ_DATE] = "date",
    [FR_PQ_TIMESTAMP] = "timestamp", [FR_PQ_TIMESTAMP_NTZ] = "timestamp_ntz",
};

const char *fr_pq_type_name(enum fr_pq_type type)
{
    if ((unsigned)type < sizeof type_names / sizeof type_names[0] && type_names[type]) {
        return type_names[type];
    }
    return "unsupported";
}

static bool name_ok(const char *name)
{
    if (!name || !name[0] || strlen(name) > PQ_MAX_NAME) {
        return false;
    }
    for (const char *p = name; *p; p++) {
        char ch = *p;
        bool alpha = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
        if (!alpha && !(p > name && ch >= '0' && ch <= '9')) {
            return false;
        }
    }
    return true;
}

int fr_pq_schema_check(const struct fr_pq_schema *schema)
{
    if (!schema || !schema->columns || schema->ncolumns == 0 ||
        schema->ncolumns > PQ_MAX_COLUMNS) {
        return pq_err(FR_EINVAL, "a schema needs 1 to %u columns", PQ_MAX_COLUMNS);
    }
    for (uint32_t i = 0; i < schema->ncolumns; i++) {
        const struct fr_pq_column *col = &schema->columns[i];
        if (!name_ok(col->name)) {
            return pq_err(FR_EINVAL, "column %u: name must match [A-Za-z_][A-Za-z0-9_]{0,254}",
                          i);
        }
        if (col->type < FR_PQ_BOOL || col->type > FR_PQ_TIMESTAMP_NTZ) {
            return pq_err(FR_EINVAL, "column '%s': unknown type %d", col->name, (int)col->type);
        }
        if (col->field_id < 0) {
            return pq_err(FR_EINVAL, "column '%s': field_id must be >= 0", col->name);
        }
        for (uint32_t j = 0; j < i; j++) {
            if (strcmp(schema->columns[j].name, col->name) == 0) {
                return pq_err(FR_EINVAL, "column name '%s' appears twice", col->name);
            }
            if (schema->columns[j].field_id == col->field_id) {
                return pq_err(FR_EINVAL, "field_id %d appears twice", (int)col->field_id);
            }
        }
    }
    return FR_OK;
}

void fr_pq_opts_default(struct fr_pq_opts *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->codec = FR_PQ_ZSTD;
    opts->zstd_level = 3;
    opts->row_group_bytes = 128 * MIB;
    opts->page_bytes = MIB;
    opts->page_rows = 20000;
    opts->dict_max_bytes = 2 * MIB;
    opts->max_value_bytes = 16 * MIB;
    opts->stats_max_bytes = 256;
}

int pq_opts_check(const struct fr_pq_opts *o)
{
    if (!pq_codec_known((int)o->codec)) {
        return pq_err(FR_EINVAL, "unknown codec %d", (int)o->codec);
    }
    if (o->codec == FR_PQ_ZSTD && (o->zstd_level < -7 || o->zstd_level > 19)) {
        return pq_err(FR_EINVAL, "zstd_level %d outside -7..19", o->zstd_level);
    }
    if (o->row_group_bytes < 1 || o->row_group_bytes > 16 * GIB) {
        return pq_err(FR_EINVAL, "row_group_bytes outside 1..16 GiB");
    }
    if (o->page_bytes < 1 || o->page_bytes > GIB) {
        return pq_err(FR_EINVAL, "page_bytes outside 1..1 GiB");
    }
    if (o->page_rows < 1 || o->page_rows > (1u << 24)) {
        return pq_err(FR_EINVAL, "page_rows outside 1..16777216");
    }
    if (o->dict_max_bytes > GIB) {
        return pq_err(FR_EINVAL, "dict_max_bytes above 1 GiB");
    }
    if (o->max_value_bytes < 1 || o->max_value_bytes > GIB) {
        return pq_err(FR_EINVAL, "max_value_bytes outside 1..1 GiB");
    }
    if (o->stats_max_bytes < 16 || o->stats_max_bytes > MIB) {
        return pq_err(FR_EINVAL, "stats_max_bytes outside 16..1 MiB");
    }
    if (o->compress_workers > 1) {
        return pq_err(FR_EINVAL, "compress_workers must be 0 or 1");
    }
    if (o->nkv > 4096 || (o->nkv && !o->kv)) {
        return pq_err(FR_EINVAL, "at most 4096 key/value pairs");
    }
    for (uint32_t i = 0; i < o->nkv; i++) {
        if (!o->kv[i].key || strlen(o->kv[i].key) > INT32_MAX ||
            (o->kv[i].value && strlen(o->kv[i].value) > 64 * MIB)) {
            return pq_err(FR_EINVAL, "key/value pair %u: missing key or value above 64 MiB", i);
        }
    }
    return FR_OK;
}

