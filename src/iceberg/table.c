/*
 * table.c — tables as the catalog sees them: create (first metadata file,
 * then the catalog row), load (catalog row, then the metadata file it
 * names), the accessors of a loaded table, the mapping between URIs in
 * metadata and local paths, and publishing a committed version for
 * catalog-free readers (v<N>.metadata.json + version-hint.text).
 *
 * Invariants:
 *  1. The catalog row is the truth; v<N>.metadata.json (a hard link to
 *     the committed file) and version-hint.text are written after the
 *     catalog moved, never before, so a catalog-free reader never sees an
 *     uncommitted version.
 *  2. The hint never goes backwards: publishing holds flock on the
 *     metadata directory and skips a version older than the hint.
 *  3. A loaded table is immutable; commits load their own base.
 *  4. The metadata cache (cat->mcache) holds only versions this handle
 *     committed, keyed by their unique file name: a hit is exactly the
 *     file's content, so loads from it equal loads from the file.
 *  5. A cached version is shared, not copied: the slot and every table
 *     loaded from it hold a reference to one read-only struct ice_meta
 *     (3 makes that safe). A commit's next version is put there as it is,
 *     after the commit; its change only frees it after that. A copy per
 *     load and per put made the processor's commits hold three copies of a
 *     metadata that lists every retained snapshot (~1.4 KB each in memory;
 *     ~900 of them per table after maintenance.expire_after_s at a 1 s
 *     trigger), and its RSS grew with them (docs/BENCHMARKS.md).
 */
#include "iceberg/iceberg_int.h"

#include "core/clock.h"
#include "core/err.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

/* ------------------------------------------------------------- paths -- */

int ice_table_dir(const struct fr_ice_catalog *cat, const char *ns, const char *name, char *out,
                  size_t cap)
{
    int n = snprintf(out, cap, "%s/%s/%s", cat->warehouse, ns, name);
    if (n < 0 || (size_t)n >= cap) {
        return ice_err(FR_ETOOBIG, "table %s.%s: path too long", ns, name);
    }
    /* namespace levels a.b become directories a/b (Java's default location) */
    size_t wl = strlen(cat->warehouse) + 1;
    for (size_t i = wl; i < wl + strlen(ns); i++) {
        if (out[i] == '.') {
            out[i] = '/';
        }
    }
    return FR_OK;
}

static bool has_prefix(const char *s, const char *prefix, size_t *plen)
{
    size_t n = strlen(prefix);
    if (n > 0 && strncmp(s, prefix, n) == 0 && s[n] == '/') {
        *plen = n;
        return true;
    }
    return false;
}

static int join(char *out, size_t cap, const char *a, const char *b)
{
    int n = snprintf(out, cap, "%s%s", a, b);
    return n < 0 || (size_t)n >= cap ? FR_ETOOBIG : FR_OK;
}

int ice_local_path_meta(const struct fr_ice_catalog *cat, const char *ns, const char *name,
                        const struct ice_meta *meta, const char *uri, char *out, size_t cap)
{
    char dir[ICE_PATH_MAX];
    size_t n;
    int rc = ice_table_dir(cat, ns, name, dir, sizeof dir);
    if (rc < 0) {
        return rc;
    }
    if (meta && has_prefix(uri, meta->location, &n)) {
        return join(out, cap, dir, uri + n);
    }
    if (has_prefix(uri, cat->warehouse_uri, &n)) {
        return join(out, cap, cat->warehouse, uri + n);
    }
    if (strncmp(uri, "file://", 7) == 0 && uri[7] == '/') {
        return join(out, cap, "", uri + 7);
    }
    if (strncmp(uri, "file:/", 6) == 0) {
        return join(out, cap, "", uri + 5);
    }
    if (uri[0] == '/') {
        return join(out, cap, "", uri);
    }
    /* another root (e.g. an HTTP warehouse URI used when the file was
     * written): find "/<ns>/<name>/" and map what follows into the table */
    char seg[300];
    snprintf(seg, sizeof seg, "/%s/%s/", ns, name);
    for (char *p = seg + 1; *p && p < seg + 1 + strlen(ns); p++) {
        if (*p == '.') {
            *p = '/';
        }
    }
    const char *hit = strstr(uri, seg);
    if (hit) {
        return join(out, cap, dir, hit + strlen(seg) - 1);
    }
    return ice_err(FR_EUNSUPPORTED, "table %s.%s: location %s is outside the warehouse %s", ns,
                   name, uri, cat->warehouse_uri);
}

int ice_local_path(const struct fr_ice_table *table, const char *uri, char *out, size_t cap)
{
    return ice_local_path_meta(table->cat, table->ns, table->name, table->meta, uri, out, cap);
}

int64_t ice_meta_version(const char *location)
{
    const char *base = strrchr(location, '/');
    base = base ? base + 1 : location;
    if (base[0] == 'v') {
        base++;
    }
    char *end;
    long long v = strtoll(base, &end, 10);
    if (end == base || (*end != '-' && *end != '.')) {
        return -1;
    }
    return (int64_t)v;
}

/* ------------------------------------------------------------ loading -- */

static int table_finish(struct fr_ice_table *t)
{
    const struct ice_meta *m = t->meta;
    const struct ice_schema *s = ice_meta_schema(m, m->current_schema_id);
    struct fr_buf b;
    fr_buf_init(&b, 4u << 20);
    int rc = ice_schema_json(s, &b);
    if (rc == FR_OK) {
        t->schema_json = strdup(fr_buf_cstr(&b));
        rc = t->schema_json ? FR_OK : FR_ENOMEM;
    }
    fr_buf_free(&b);
    const struct ice_spec *spec = ice_meta_spec(m, m->default_spec_id);
    t->pub_snaps = calloc(m->nsnapshots + 1, sizeof *t->pub_snaps);
    if (!t->pub_snaps) {
        return FR_ENOMEM;
    }
    for (uint32_t i = 0; i < m->nsnapshots; i++) {
        t->pub_snaps[i] = m->snapshots[i].pub;
    }
    t->nparts = spec->nfields;
    t->parts = calloc(spec->nfields + 1, sizeof *t->parts);
    if (!t->parts) {
        return FR_ENOMEM;
    }
    for (uint32_t i = 0; i < spec->nfields; i++) {
        t->parts[i].source_id = spec->fields[i].source_id;
        t->parts[i].transform = spec->fields[i].tf;
        t->parts[i].name = spec->fields[i].name;
    }
    return rc;
}

/* ----------------------------------------------------- metadata cache -- */

struct fr_ice_meta_cache *fr_ice_meta_cache_new(void)
{
    struct fr_ice_meta_cache *mc = calloc(1, sizeof *mc);
    if (mc) {
        pthread_mutex_init(&mc->lock, NULL);
    }
    return mc;
}

static void slot_clear(struct ice_meta_slot *s)
{
    free(s->ns);
    free(s->name);
    free(s->location);
    free(s->raw);
    ice_meta_free(s->meta);
    memset(s, 0, sizeof *s);
}

void fr_ice_meta_cache_free(struct fr_ice_meta_cache *mc)
{
    if (!mc) {
        return;
    }
    for (int i = 0; i < ICE_META_CACHE; i++) {
        slot_clear(&mc->slot[i]);
    }
    pthread_mutex_destroy(&mc->lock);
    free(mc);
}

/* Under mc->lock. */
static struct ice_meta_slot *cache_find(struct fr_ice_meta_cache *mc, const char *ns,
                                        const char *name)
{
    for (int i = 0; i < ICE_META_CACHE; i++) {
        struct ice_meta_slot *s = &mc->slot[i];
        if (s->ns && strcmp(s->ns, ns) == 0 && strcmp(s->name, name) == 0) {
            return s;
        }
    }
    return NULL;
}

/* Under mc->lock: ns.name's slot, emptied unless it holds location (then
 * *same is true); NULL on ENOMEM. */
static struct ice_meta_slot *cache_slot(struct fr_ice_meta_cache *mc, const char *ns,
                                        const char *name, const char *location, bool *same)
{
    struct ice_meta_slot *s = cache_find(mc, ns, name);
    *same = s && strcmp(s->location, location) == 0;
    if (*same) {
        s->used = ++mc->tick;
        return s;
    }
    if (!s) { /* an empty slot (used 0), else the least recently used */
        s = &mc->slot[0];
        for (int i = 1; i < ICE_META_CACHE; i++) {
            s = mc->slot[i].used < s->used ? &mc->slot[i] : s;
        }
    }
    slot_clear(s);
    s->ns = strdup(ns);
    s->name = strdup(name);
    s->location = strdup(location);
    s->used = ++mc->tick;
    if (!s->ns || !s->name || !s->location) {
        slot_clear(s);
        return NULL;
    }
    return s;
}

void ice_meta_cache_put(struct fr_ice_catalog *cat, const char *ns, const char *name,
                        const char *location, int64_t bytes, struct ice_meta *meta)
{
    struct fr_ice_meta_cache *mc = cat->mcache;
    bool same;
    pthread_mutex_lock(&mc->lock);
    struct ice_meta_slot *s = cache_slot(mc, ns, name, location, &same);
    if (s && !s->meta) {
        s->meta = ice_meta_share(meta);
        s->bytes = bytes;
    }
    pthread_mutex_unlock(&mc->lock);
}

void ice_meta_cache_put_raw(struct fr_ice_catalog *cat, const char *ns, const char *name,
                            const char *location, void **raw, size_t len)
{
    struct fr_ice_meta_cache *mc = cat->mcache;
    if (!*raw || len > ICE_META_RAW_MAX) {
        return;
    }
    bool same;
    pthread_mutex_lock(&mc->lock);
    struct ice_meta_slot *s = cache_slot(mc, ns, name, location, &same);
    if (s && !s->raw) {
        s->raw = *raw;
        s->bytes = (int64_t)len;
        *raw = NULL;
    }
    pthread_mutex_unlock(&mc->lock);
}

/* A local file is checked with a stat (someone may have replaced it by
 * hand). An object's name is unique per write and it is written
 * create-only (If-None-Match: *, s3_io.c), so the same location is the
 * same bytes and needs no HEAD: the catalog's row read is the check.
 * Called without the lock (the stat may be slow). */
static bool cache_still_valid(struct fr_ice_catalog *cat, const char *location, const char *path,
                              int64_t bytes)
{
    int64_t size = -1;
    return strncmp(location, "file:", 5) != 0 ||
           (ice_io_stat(&cat->io, path, &size, NULL) == FR_OK && size == bytes);
}

/* The cached parsed content of location (local file path), shared into
 * *meta: 1, or 0 (not cached, or the file is gone or changed size). */
static int cache_get(struct fr_ice_catalog *cat, const char *ns, const char *name,
                     const char *location, const char *path, struct ice_meta **meta)
{
    struct fr_ice_meta_cache *mc = cat->mcache;
    struct ice_meta *m = NULL;
    int64_t bytes = 0;
    pthread_mutex_lock(&mc->lock);
    struct ice_meta_slot *s = cache_find(mc, ns, name);
    if (s && s->meta && strcmp(s->location, location) == 0) {
        m = ice_meta_share(s->meta);
        bytes = s->bytes;
        s->used = ++mc->tick;
    }
    pthread_mutex_unlock(&mc->lock);
    if (m && !cache_still_valid(cat, location, path, bytes)) {
        ice_meta_free(m);
        m = NULL;
    }
    *meta = m;
    return m != NULL;
}

int ice_meta_cache_raw(struct fr_ice_catalog *cat, const char *ns, const char *name,
                       const char *location, const char *path, struct fr_buf *out)
{
    struct fr_ice_meta_cache *mc = cat->mcache;
    int64_t bytes = -1;
    int rc = FR_OK;
    fr_buf_reset(out);
    pthread_mutex_lock(&mc->lock);
    struct ice_meta_slot *s = cache_find(mc, ns, name);
    if (s && s->raw && strcmp(s->location, location) == 0) {
        bytes = s->bytes;
        rc = fr_buf_append(out, s->raw, (size_t)s->bytes);
        s->used = ++mc->tick;
    }
    pthread_mutex_unlock(&mc->lock);
    if (bytes < 0 || rc < 0 || !cache_still_valid(cat, location, path, bytes)) {
        fr_buf_reset(out);
        return 0;
    }
    return 1;
}

int ice_table_load_at(struct fr_ice_catalog *cat, const char *ns, const char *name,
                      const char *location, struct fr_ice_table **out)
{
    *out = NULL;
    struct fr_ice_table *t = calloc(1, sizeof *t);
    char path[ICE_PATH_MAX], dir[ICE_PATH_MAX];
    struct fr_buf b;
    fr_buf_init(&b, ICE_MAX_METADATA_BYTES);
    int rc = FR_OK;
    if (!t) {
        return FR_ENOMEM;
    }
    t->cat = cat;
    snprintf(t->ns, sizeof t->ns, "%s", ns);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->meta_location = strdup(location);
    rc = ice_table_dir(cat, ns, name, dir, sizeof dir);
    if (rc < 0) {
        goto cleanup;
    }
    t->dir = strdup(dir);
    if (!t->meta_location || !t->dir) {
        rc = FR_ENOMEM;
        goto cleanup;
    }
    rc = ice_local_path_meta(cat, ns, name, NULL, location, path, sizeof path);
    if (rc < 0) {
        goto cleanup;
    }
    if (cache_get(cat, ns, name, location, path, &t->meta)) {
        rc = table_finish(t);
        goto cleanup;
    }
    rc = ice_meta_cache_raw(cat, ns, name, location, path, &b) ? FR_OK
                                                                  : ice_io_read(&cat->io, path, &b);
    if (rc == FR_ENOTFOUND) {
        rc = ice_err(FR_ENOTFOUND,
                     "table %s.%s: the catalog points at metadata file %s, which is "
                     "missing",
                     ns, name, location);
        goto cleanup;
    }
    if (rc < 0) {
        ice_err(rc, "table %s.%s: cannot read metadata file %s: %s", ns, name, location,
                fr_strerror(rc));
        goto cleanup;
    }
    rc = ice_meta_parse((const char *)b.data, b.len, &t->meta);
    if (rc < 0) {
        char why[600];
        snprintf(why, sizeof why, "%s", fr_ice_errmsg());
        /* Named by its location (an s3:// URI on a bucket's lake), not the
         * path the io layer maps it to. */
        ice_err(rc, "table %s.%s: metadata file %s does not parse: %s", ns, name, location, why);
        goto cleanup;
    }
    ice_meta_cache_put(cat, ns, name, location, (int64_t)b.len, t->meta);
    rc = table_finish(t);
cleanup:
    fr_buf_free(&b);
    if (rc < 0) {
        fr_ice_table_free(t);
        return rc;
    }
    *out = t;
    return FR_OK;
}

int ice_table_from_json(struct fr_ice_catalog *cat, const char *ns, const char *name,
                        const char *location, const char *json, size_t len,
                        struct fr_ice_table **out)
{
    char dir[ICE_PATH_MAX];
    *out = NULL;
    struct fr_ice_table *t = calloc(1, sizeof *t);
    if (!t) {
        return FR_ENOMEM;
    }
    t->cat = cat;
    snprintf(t->ns, sizeof t->ns, "%s", ns);
    snprintf(t->name, sizeof t->name, "%s", name);
    int rc = ice_table_dir(cat, ns, name, dir, sizeof dir);
    if (rc == FR_OK) {
        t->dir = strdup(dir);
        t->meta_location = strdup(location);
        rc = t->dir && t->meta_location ? FR_OK : FR_ENOMEM;
    }
    if (rc == FR_OK) {
        rc = ice_meta_parse(json, len, &t->meta);
        if (rc < 0) {
            char why[600];
            snprintf(why, sizeof why, "%s", fr_ice_errmsg());
            ice_err(rc, "table %s.%s: metadata of %s does not parse: %s", ns, name, location, why);
        }
    }
    if (rc == FR_OK) {
        rc = table_finish(t);
    }
    if (rc < 0) {
        fr_ice_table_free(t);
        return rc;
    }
    *out = t;
    return FR_OK;
}

int fr_ice_table_load(struct fr_ice_catalog *cat, const char *ns, const char *name,
                      struct fr_ice_table **table)
{
    char loc[ICE_PATH_MAX];
    ice_err_clear();
    *table = NULL;
    int rc = ice_cat_get(cat, ns, name, loc, sizeof loc);
    return rc < 0 ? rc : ice_table_load_at(cat, ns, name, loc, table);
}

void fr_ice_table_free(struct fr_ice_table *table)
{
    if (!table) {
        return;
    }
    ice_meta_free(table->meta);
    free(table->dir);
    free(table->meta_location);
    free(table->schema_json);
    free(table->parts);
    free(table->pub_snaps);
    free(table);
}

int fr_ice_table_drop(struct fr_ice_catalog *cat, const char *ns, const char *name)
{
    ice_err_clear();
    return ice_cat_delete(cat, ns, name);
}

/* ----------------------------------------------------------- creating -- */

static int check_def(const char *ns, const char *name, const struct fr_ice_table_def *def)
{
    if (!def || def->nfields == 0 || def->nfields > ICE_MAX_FIELDS || def->nparts > ICE_MAX_PARTS) {
        return ice_err(FR_EINVAL, "table %s.%s: bad definition (no fields or too many)", ns, name);
    }
    for (uint32_t i = 0; i < def->nfields; i++) {
        const struct fr_ice_field *f = &def->fields[i];
        if (f->id <= 0 || !ice_name_ok(f->name) || !ice_type_name(f->type) ||
            strcmp(ice_type_name(f->type), "unknown") == 0) {
            return ice_err(FR_EINVAL, "table %s.%s: field %u (%s) has a bad id, name or type", ns,
                           name, i, f->name ? f->name : "?");
        }
        for (uint32_t j = 0; j < i; j++) {
            if (def->fields[j].id == f->id || strcmp(def->fields[j].name, f->name) == 0) {
                return ice_err(FR_EINVAL, "table %s.%s: duplicate field %s", ns, name, f->name);
            }
        }
    }
    for (uint32_t i = 0; i < def->nparts; i++) {
        const struct fr_ice_part_field *p = &def->parts[i];
        const struct fr_ice_field *src = NULL;
        for (uint32_t j = 0; j < def->nfields; j++) {
            if (def->fields[j].id == p->source_id) {
                src = &def->fields[j];
            }
        }
        bool ok = src && (p->transform == FR_ICE_IDENTITY ||
                          ((p->transform == FR_ICE_DAY || p->transform == FR_ICE_HOUR) &&
                           (src->type == FR_ICE_TIMESTAMP || src->type == FR_ICE_TIMESTAMPTZ ||
                            (p->transform == FR_ICE_DAY && src->type == FR_ICE_DATE))));
        if (!ok) {
            return ice_err(FR_EINVAL, "table %s.%s: partition field %u: bad source or transform",
                           ns, name, i);
        }
    }
    return FR_OK;
}

static int new_meta(struct fr_ice_catalog *cat, const char *ns, const char *name,
                    const struct fr_ice_table_def *def, struct ice_meta **out)
{
    struct ice_meta *m = calloc(1, sizeof *m);
    if (!m) {
        return FR_ENOMEM;
    }
    m->arena = ice_arena_new(1u << 24);
    if (!m->arena) {
        free(m);
        return FR_ENOMEM;
    }
    *out = m;
    m->format_version = 2;
    ice_uuid(m->uuid);
    char dir[ICE_PATH_MAX];
    int rc = ice_table_dir(cat, ns, name, dir, sizeof dir);
    if (rc < 0) {
        return rc;
    }
    m->location = ice_sprintf(m->arena, "%s%s", cat->warehouse_uri, dir + strlen(cat->warehouse));
    m->last_updated_ms = fr_wall_ms();
    m->current_schema_id = 0;
    m->nschemas = 1;
    m->schemas = ice_alloc(m->arena, sizeof *m->schemas);
    struct ice_schema *s = m->schemas;
    s->nfields = def->nfields;
    s->fields = ice_alloc(m->arena, sizeof *s->fields * def->nfields);
    s->type_names = ice_alloc(m->arena, sizeof *s->type_names * def->nfields);
    if (!m->location || !s->fields || !s->type_names) {
        return FR_ENOMEM;
    }
    for (uint32_t i = 0; i < def->nfields; i++) {
        s->fields[i] = def->fields[i];
        s->fields[i].name = ice_strdup(m->arena, def->fields[i].name);
        s->fields[i].doc = ice_strdup(m->arena, def->fields[i].doc);
        s->type_names[i] = ice_sprintf(m->arena, "\"%s\"", ice_type_name(def->fields[i].type));
        if (def->fields[i].id > m->last_column_id) {
            m->last_column_id = def->fields[i].id;
        }
    }
    m->nspecs = 1;
    m->specs = ice_alloc(m->arena, sizeof *m->specs);
    m->specs->nfields = def->nparts;
    m->specs->fields = ice_alloc(m->arena, sizeof *m->specs->fields * (def->nparts + 1));
    m->last_partition_id = 999;
    for (uint32_t i = 0; i < def->nparts; i++) {
        struct ice_pfield *pf = &m->specs->fields[i];
        const char *src = NULL;
        for (uint32_t j = 0; j < def->nfields; j++) {
            if (def->fields[j].id == def->parts[i].source_id) {
                src = def->fields[j].name;
            }
        }
        pf->source_id = def->parts[i].source_id;
        pf->field_id = 1000 + (int32_t)i;
        pf->tf = def->parts[i].transform;
        pf->transform = ice_transform_name(pf->tf);
        if (def->parts[i].name) {
            pf->name = ice_strdup(m->arena, def->parts[i].name);
        } else if (pf->tf == FR_ICE_IDENTITY) {
            pf->name = ice_strdup(m->arena, src);
        } else {
            pf->name = ice_sprintf(m->arena, "%s_%s", src, pf->transform);
        }
        m->last_partition_id = pf->field_id;
    }
    m->sort_orders_raw = "[{\"order-id\":0,\"fields\":[]}]";
    m->current_snapshot_id = -1;
    m->props = ice_alloc(m->arena, sizeof *m->props * (def->nprops + 1));
    for (uint32_t i = 0; i < def->nprops; i++) {
        m->props[m->nprops].key = ice_strdup(m->arena, def->props[i].key);
        m->props[m->nprops].value = ice_strdup(m->arena, def->props[i].value);
        m->nprops++;
    }
    return FR_OK;
}

int ice_table_create_meta(struct fr_ice_catalog *cat, const char *ns, const char *name,
                          struct ice_meta *m, const char **location_out)
{
    struct fr_buf b;
    char path[ICE_PATH_MAX], uuid[37];
    char *location = NULL;
    fr_buf_init(&b, ICE_MAX_METADATA_BYTES);
    int rc = ice_meta_write(m, &b);
    if (rc < 0) {
        goto cleanup;
    }
    ice_uuid(uuid);
    location = ice_sprintf(m->arena, "%s/metadata/00001-%s.metadata.json", m->location, uuid);
    if (!location) {
        rc = FR_ENOMEM;
        goto cleanup;
    }
    rc = ice_local_path_meta(cat, ns, name, m, location, path, sizeof path);
    if (rc == FR_OK) {
        rc = ice_io_create(cat, path, b.data, b.len);
        if (rc < 0) {
            ice_err(rc, "table %s.%s: cannot write metadata file %s: %s", ns, name, path,
                    fr_strerror(rc));
        }
    }
    if (rc < 0) {
        goto cleanup;
    }
    rc = ice_cat_insert(cat, ns, name, location);
    if (rc < 0) {
        ice_io_remove(&cat->io, path);
        goto cleanup;
    }
    char dir[ICE_PATH_MAX];
    if (ice_table_dir(cat, ns, name, dir, sizeof dir) == FR_OK) {
        ice_publish(cat, dir, location, NULL, NULL, 0);
    }
    if (location_out) {
        *location_out = location;
    }
cleanup:
    fr_buf_free(&b);
    return rc;
}

int fr_ice_table_create(struct fr_ice_catalog *cat, const char *ns, const char *name,
                        const struct fr_ice_table_def *def, struct fr_ice_table **table)
{
    ice_err_clear();
    if (table) {
        *table = NULL;
    }
    if (!ice_name_ok(name) || !ns || !*ns || strlen(ns) > 127 || strchr(ns, '/')) {
        return ice_err(FR_EINVAL, "bad table name %s.%s", ns ? ns : "", name ? name : "");
    }
    int rc = check_def(ns, name, def);
    if (rc < 0) {
        return rc;
    }
    struct ice_meta *m = NULL;
    rc = new_meta(cat, ns, name, def, &m);
    if (rc == FR_OK) {
        rc = ice_table_create_meta(cat, ns, name, m, NULL);
    }
    if (rc == FR_OK && table) {
        rc = fr_ice_table_load(cat, ns, name, table);
    }
    ice_meta_free(m);
    return rc;
}

/* ---------------------------------------------------------- publishing -- */

int ice_publish_prepare(struct fr_ice_catalog *cat, const char *table_dir,
                        const char *meta_location, char **tmp_out)
{
    *tmp_out = NULL;
    int64_t version = ice_meta_version(meta_location);
    if (version < 0 || !strrchr(meta_location, '/')) {
        return FR_OK;
    }
    char path[ICE_PATH_MAX], tmp[ICE_PATH_MAX], hint[24];
    snprintf(path, sizeof path, "%s/metadata/version-hint.text", table_dir);
    int n = snprintf(hint, sizeof hint, "%" PRId64, version);
    int rc = ice_io_prepare_replace(cat, path, hint, (size_t)n, tmp, sizeof tmp);
    if (rc < 0) {
        return ice_err(rc, "publish: cannot write a temporary beside %s: %s", path,
                       fr_strerror(rc));
    }
    if (tmp[0] && !(*tmp_out = strdup(tmp))) {
        unlink(tmp);
        return FR_ENOMEM;
    }
    return FR_OK;
}

int ice_publish(struct fr_ice_catalog *cat, const char *table_dir, const char *meta_location,
                const char *hint_tmp, const void *json, size_t json_len)
{
    int64_t version = ice_meta_version(meta_location);
    const char *base = strrchr(meta_location, '/');
    if (version < 0 || !base) {
        return FR_OK; /* not a freshet-style name: nothing to publish */
    }
    char mdir[ICE_PATH_MAX - 64], path[ICE_PATH_MAX], src[ICE_PATH_MAX];
    snprintf(mdir, sizeof mdir, "%s/metadata", table_dir);
    snprintf(src, sizeof src, "%s%s", mdir, base);
    int dfd = open(mdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 && errno == ENOENT && cat->io.ops != fr_ice_io_posix()) {
        /* The files live elsewhere (an object store through the io ops, see
         * src/objstore/s3_io.c): there is no local metadata directory, so
         * publishers on this machine serialise on the local lake directory
         * (beside catalog.db) instead. */
        dfd = open(cat->lake_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    if (dfd < 0) {
        if (hint_tmp) {
            unlink(hint_tmp);
        }
        return ice_err(fr_err_from_errno(errno), "publish: cannot open %s", mdir);
    }
    int rc = FR_OK;
    struct fr_buf b;
    fr_buf_init(&b, 64);
    while (flock(dfd, LOCK_EX) < 0) {
        if (errno != EINTR) {
            rc = fr_err_from_errno(errno);
            goto cleanup;
        }
    }
    snprintf(path, sizeof path, "%s/version-hint.text", mdir);
    if (ice_io_read(&cat->io, path, &b) == FR_OK) {
        long long cur = strtoll(fr_buf_cstr(&b), NULL, 10);
        if (cur >= version) {
            goto cleanup; /* a newer version is already published */
        }
    }
    snprintf(path, sizeof path, "%s/v%" PRId64 ".metadata.json", mdir, version);
    rc = json ? ice_io_create(cat, path, json, json_len) : ice_io_link(cat, src, path);
    if (rc == FR_EEXIST) {
        rc = FR_OK; /* published before a crash, hint not yet moved */
    }
    if (rc == FR_OK) {
        char hint[24];
        int n = snprintf(hint, sizeof hint, "%" PRId64, version);
        snprintf(path, sizeof path, "%s/version-hint.text", mdir);
        if (hint_tmp) {
            rc = ice_io_finish_replace(cat, hint_tmp, path);
            hint_tmp = NULL; /* renamed, or removed on failure */
        } else {
            rc = ice_io_replace(cat, path, hint, (size_t)n);
        }
    }
    if (rc < 0) {
        ice_err(rc, "publish: cannot write %s: %s", path, fr_strerror(rc));
    }
cleanup:
    if (hint_tmp) {
        unlink(hint_tmp); /* a newer version is published, or the link failed */
    }
    fr_buf_free(&b);
    close(dfd); /* releases the lock */
    return rc;
}

/* ---------------------------------------------------------- accessors -- */

const char *fr_ice_table_ns(const struct fr_ice_table *table)
{
    return table->ns;
}
const char *fr_ice_table_name(const struct fr_ice_table *table)
{
    return table->name;
}
const char *fr_ice_table_location(const struct fr_ice_table *table)
{
    return table->meta->location;
}
const char *fr_ice_table_dir(const struct fr_ice_table *table)
{
    return table->dir;
}
const char *fr_ice_table_metadata_file(const struct fr_ice_table *table)
{
    return table->meta_location;
}
int64_t fr_ice_table_snapshot_id(const struct fr_ice_table *table)
{
    return table->meta->current_snapshot_id;
}
int64_t fr_ice_table_sequence(const struct fr_ice_table *table)
{
    return table->meta->last_sequence_number;
}

const struct fr_ice_field *fr_ice_table_fields(const struct fr_ice_table *table, uint32_t *n)
{
    const struct ice_schema *s = ice_meta_schema(table->meta, table->meta->current_schema_id);
    *n = s->nfields;
    return s->fields;
}

const struct fr_ice_part_field *fr_ice_table_parts(const struct fr_ice_table *table, uint32_t *n)
{
    *n = table->nparts;
    return table->parts;
}

const char *fr_ice_table_schema_json(const struct fr_ice_table *table)
{
    return table->schema_json;
}

const struct fr_ice_snapshot *fr_ice_table_snapshots(const struct fr_ice_table *table, uint32_t *n)
{
    *n = table->meta->nsnapshots;
    return table->pub_snaps;
}

/* ---------------------------------------------------------- transforms -- */

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int fr_ice_transform(enum fr_ice_transform transform, const struct fr_ice_value *src,
                     struct fr_ice_value *out)
{
    memset(out, 0, sizeof *out);
    if (transform == FR_ICE_IDENTITY) {
        *out = *src;
        return FR_OK;
    }
    bool ts = src->type == FR_ICE_TIMESTAMP || src->type == FR_ICE_TIMESTAMPTZ;
    if (transform == FR_ICE_DAY && (ts || src->type == FR_ICE_DATE)) {
        out->type = FR_ICE_DATE;
        out->is_null = src->is_null;
        if (!src->is_null) {
            out->v.i32 = src->type == FR_ICE_DATE
                             ? src->v.i32
                             : (int32_t)floor_div(src->v.i64, INT64_C(86400000000));
        }
        return FR_OK;
    }
    if (transform == FR_ICE_HOUR && ts) {
        out->type = FR_ICE_INT;
        out->is_null = src->is_null;
        if (!src->is_null) {
            out->v.i32 = (int32_t)floor_div(src->v.i64, INT64_C(3600000000));
        }
        return FR_OK;
    }
    return ice_err(FR_EINVAL, "transform %s does not apply to a %s value",
                   ice_transform_name(transform), ice_type_name(src->type));
}
