/*
 * changes.c — each kind of table change applied to a base version: fast
 * append (with manifest merging), overwrite, rewrite (replace), add column
 * and snapshot expiry. Applying writes the manifests and the manifest list
 * the new version needs and builds the new metadata in memory; commit.c
 * writes the metadata file and swaps the catalog.
 *
 * What each operation writes (ICE-SPEC "Snapshots", notes §2.10):
 *   append     one new manifest of ADDED entries (null ids: inherited), then
 *              the parent's manifests unchanged. When more than
 *              commit.manifest.min-count-to-merge (100) data manifests are
 *              under commit.manifest.target-size-bytes (8 MiB), they are
 *              merged into one: this snapshot's files stay ADDED, older live
 *              files become EXISTING with their sequence numbers, DELETED
 *              entries of older snapshots are dropped. This keeps the
 *              manifest list, and so commit time, bounded as history grows.
 *   overwrite  every live file becomes DELETED (explicit sequence numbers),
 *              the new files ADDED; operation "overwrite".
 *   rewrite    manifests holding a removed file are rewritten (removed ->
 *              DELETED, others -> EXISTING), the others kept; outputs ADDED;
 *              operation "replace". Every input must still be live in the
 *              base, or FR_ECONFLICT; the row counts must match.
 *   add column a new schema (id max+1) with one more optional field.
 *   expiry     snapshots removed from the metadata; the files that only
 *              they reached are listed for deletion after the commit lands.
 *
 * Invariants: a change never modifies its base; every file one attempt
 * writes is recorded so a failed attempt can remove it; the append manifest
 * does not depend on the base and is kept across retries.
 */
#include "iceberg/iceberg_int.h"

#include "core/clock.h"
#include "core/err.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------- lifecycle -- */

int ice_change_new(struct fr_ice_catalog *cat, enum ice_change_kind kind, const char *ns,
                   const char *name, struct ice_change **out)
{
    (void)cat;
    *out = NULL;
    if (!ns || !name || strlen(ns) >= 128 || strlen(name) >= 128) {
        return ice_err(FR_EINVAL, "bad table name");
    }
    struct ice_change *c = calloc(1, sizeof *c);
    if (!c) {
        return FR_ENOMEM;
    }
    c->arena = ice_arena_new(256u << 20);
    if (!c->arena) {
        free(c);
        return FR_ENOMEM;
    }
    c->kind = kind;
    c->epoch = -1;
    snprintf(c->ns, sizeof c->ns, "%s", ns);
    snprintf(c->name, sizeof c->name, "%s", name);
    *out = c;
    return FR_OK;
}

int ice_change_note_file(struct ice_change *c, const char *local_path)
{
    if (c->nattempt_files == c->attempt_cap) {
        uint32_t ncap = c->attempt_cap ? c->attempt_cap * 2 : 8;
        char **n = realloc(c->attempt_files, ncap * sizeof *n);
        if (!n) {
            return FR_ENOMEM;
        }
        c->attempt_files = n;
        c->attempt_cap = ncap;
    }
    c->attempt_files[c->nattempt_files] = strdup(local_path);
    if (!c->attempt_files[c->nattempt_files]) {
        return FR_ENOMEM;
    }
    c->nattempt_files++;
    return FR_OK;
}

static void free_doomed(struct ice_change *c)
{
    for (uint32_t i = 0; i < c->ndoomed; i++) {
        free(c->doomed[i]);
    }
    free(c->doomed);
    c->doomed = NULL;
    c->ndoomed = 0;
}

static int add_doomed(struct ice_change *c, const char *local_path)
{
    char **n = realloc(c->doomed, (c->ndoomed + 1) * sizeof *n);
    if (!n) {
        return FR_ENOMEM;
    }
    c->doomed = n;
    c->doomed[c->ndoomed] = strdup(local_path);
    if (!c->doomed[c->ndoomed]) {
        return FR_ENOMEM;
    }
    c->ndoomed++;
    return FR_OK;
}

void ice_change_reset(struct ice_change *c, bool remove_files)
{
    for (uint32_t i = 0; i < c->nattempt_files; i++) {
        if (remove_files) {
            ice_io_remove(&c->base->cat->io, c->attempt_files[i]);
        }
        free(c->attempt_files[i]);
    }
    c->nattempt_files = 0;
    if (c->hint_tmp) { /* an attempt that did not publish */
        unlink(c->hint_tmp);
        free(c->hint_tmp);
        c->hint_tmp = NULL;
    }
    free_doomed(c);
    free(c->next_json);
    c->next_json = NULL;
    c->next_json_len = 0;
    ice_meta_free(c->next);
    c->next = NULL;
    free(c->next_location);
    c->next_location = NULL;
    fr_ice_table_free(c->base);
    c->base = NULL;
}

void ice_change_free(struct ice_change *c)
{
    if (!c) {
        return;
    }
    if (c->base) {
        ice_change_reset(c, false);
    }
    free(c->attempt_files);
    free(c->kept_manifest);
    free_doomed(c);
    ice_arena_free(c->arena);
    free(c);
}

/* -------------------------------------------------------------- inputs -- */

int ice_change_set_files(struct ice_change *c, const struct fr_ice_table *hint,
                         const struct fr_ice_data_file *files, uint32_t nfiles)
{
    (void)hint;
    struct fr_ice_arena *a = c->arena;
    c->files = ice_alloc(a, sizeof *c->files * (nfiles + 1));
    if (!c->files) {
        return FR_ENOMEM;
    }
    for (uint32_t i = 0; i < nfiles; i++) {
        const struct fr_ice_data_file *in = &files[i];
        struct ice_dfile *f = &c->files[i];
        if (!in->path || !*in->path || in->file_size < 0 || in->record_count < 0) {
            return ice_err(FR_EINVAL, "table %s.%s: data file %u: bad path, size or count", c->ns,
                           c->name, i);
        }
        f->path = ice_strdup(a, in->path);
        f->format = "PARQUET";
        f->record_count = in->record_count;
        f->file_size = in->file_size;
        f->sort_order_id = -1;
        f->npart = in->npartition;
        f->part = ice_alloc(a, sizeof *f->part * (in->npartition + 1));
        f->nmetrics = in->nmetrics;
        f->metrics = ice_alloc(a, sizeof *f->metrics * (in->nmetrics + 1));
        f->nsplit = in->nsplit;
        f->split = ice_memdup(a, in->split_offsets ? (const void *)in->split_offsets : "",
                              sizeof *f->split * in->nsplit);
        if (!f->path || !f->part || !f->metrics || !f->split) {
            return FR_ENOMEM;
        }
        for (uint32_t p = 0; p < in->npartition; p++) {
            if (ice_value_copy(a, &in->partition[p], &f->part[p]) < 0) {
                return FR_ENOMEM;
            }
        }
        for (uint32_t m = 0; m < in->nmetrics; m++) {
            if (ice_metrics_copy(a, &in->metrics[m], &f->metrics[m]) < 0) {
                return FR_ENOMEM;
            }
        }
    }
    c->nfiles = nfiles;
    return FR_OK;
}

int ice_change_set_info(struct ice_change *c, const struct fr_ice_commit_info *info)
{
    if (!info) {
        return FR_OK;
    }
    struct fr_ice_arena *a = c->arena;
    c->summary = ice_alloc(a, sizeof *c->summary * (info->nprops + 3));
    if (!c->summary) {
        return FR_ENOMEM;
    }
    if (info->pipeline_id) {
        c->pipeline_id = ice_strdup(a, info->pipeline_id);
        c->summary[c->nsummary++] = (struct fr_ice_kv){FR_ICE_SUMMARY_PIPELINE, c->pipeline_id};
    }
    if (info->epoch >= 0) {
        if (!info->pipeline_id) {
            return ice_err(FR_EINVAL, "table %s.%s: an epoch needs a pipeline id", c->ns, c->name);
        }
        c->epoch = info->epoch;
        c->summary[c->nsummary++] =
            (struct fr_ice_kv){FR_ICE_SUMMARY_EPOCH, ice_sprintf(a, "%" PRId64, info->epoch)};
    }
    if (info->source_offsets) {
        c->summary[c->nsummary++] =
            (struct fr_ice_kv){FR_ICE_SUMMARY_OFFSETS, ice_strdup(a, info->source_offsets)};
    }
    for (uint32_t i = 0; i < info->nprops; i++) {
        if (!info->props[i].key || !info->props[i].value ||
            strcmp(info->props[i].key, "operation") == 0) {
            return ice_err(FR_EINVAL, "table %s.%s: bad summary property", c->ns, c->name);
        }
        c->summary[c->nsummary++] = (struct fr_ice_kv){ice_strdup(a, info->props[i].key),
                                                       ice_strdup(a, info->props[i].value)};
    }
    return FR_OK;
}

/* ------------------------------------------------------------ helpers -- */

struct kvb {
    struct fr_ice_kv *kv;
    uint32_t n, cap;
    struct fr_ice_arena *a;
};

static int kvb_add(struct kvb *b, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int kvb_add(struct kvb *b, const char *key, const char *fmt, ...)
{
    if (b->n == b->cap) {
        uint32_t ncap = b->cap ? b->cap * 2 : 32;
        struct fr_ice_kv *n = ice_alloc(b->a, sizeof *n * ncap);
        if (!n) {
            return FR_ENOMEM;
        }
        if (b->n) {
            memcpy(n, b->kv, sizeof *n * b->n);
        }
        b->kv = n;
        b->cap = ncap;
    }
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    b->kv[b->n].key = ice_strdup(b->a, key);
    b->kv[b->n].value = ice_strdup(b->a, tmp);
    if (!b->kv[b->n].key || !b->kv[b->n].value) {
        return FR_ENOMEM;
    }
    b->n++;
    return FR_OK;
}

/* The file's URI in the table: relative paths join the location; local
 * absolute paths inside the table directory map to the location. */
static const char *norm_path(struct ice_change *c, const char *path)
{
    const struct fr_ice_table *t = c->base;
    if (strstr(path, "://") || strncmp(path, "file:", 5) == 0) {
        return path;
    }
    if (path[0] == '/') {
        size_t dl = strlen(t->dir);
        if (strncmp(path, t->dir, dl) == 0 && path[dl] == '/') {
            return ice_sprintf(c->arena, "%s%s", t->meta->location, path + dl);
        }
        return ice_sprintf(c->arena, "file://%s", path);
    }
    return ice_sprintf(c->arena, "%s/%s", t->meta->location, path);
}

/* Write one Avro file into the table's metadata directory. */
static int write_meta_file(struct ice_change *c, const char *fname, const struct fr_buf *b,
                           bool attempt, const char **uri_out, char *local, size_t cap)
{
    const struct fr_ice_table *t = c->base;
    const char *uri = ice_sprintf(c->next->arena, "%s/metadata/%s", t->meta->location, fname);
    if (!uri) {
        return FR_ENOMEM;
    }
    int rc = ice_local_path(t, uri, local, cap);
    if (rc < 0) {
        return rc;
    }
    rc = ice_io_create(t->cat, local, b->data, b->len);
    if (rc < 0) {
        return ice_err(rc, "table %s.%s: cannot write %s: %s", c->ns, c->name, local,
                       fr_strerror(rc));
    }
    if (attempt) {
        rc = ice_change_note_file(c, local);
        if (rc < 0) {
            return rc;
        }
    }
    *uri_out = uri;
    return FR_OK;
}

static int write_manifest(struct ice_change *c, const struct ice_spec *spec,
                          const struct ice_entry *entries, uint32_t n, bool attempt,
                          struct ice_mfile *mf, char *local, size_t cap)
{
    const struct ice_meta *m = c->next;
    const struct ice_schema *schema = ice_meta_schema(m, m->current_schema_id);
    struct fr_buf b;
    char uuid[37], fname[64];
    fr_buf_init(&b, ICE_MAX_AVRO_BYTES);
    int rc = ice_manifest_write(m, schema, spec, c->snapshot_id, entries, n, &b, mf, c->arena);
    if (rc == FR_OK) {
        ice_uuid(uuid);
        snprintf(fname, sizeof fname, "%s-m0.avro", uuid);
        const char *uri;
        rc = write_meta_file(c, fname, &b, attempt, &uri, local, cap);
        if (rc == FR_OK) {
            mf->path = ice_strdup(c->arena, uri);
            mf->length = (int64_t)b.len;
            ice_io_step(&c->base->cat->io, FR_ICE_STEP_MANIFEST, local);
        }
    }
    fr_buf_free(&b);
    return rc;
}

/* Entries of every manifest in the list, with the manifest each came from. */
struct all_entries {
    struct ice_entry *e;
    uint32_t *from; /* index into the manifest list */
    uint32_t n;
};

static int read_all(struct ice_change *c, const struct ice_mfile *mfs, uint32_t nmf,
                    struct fr_ice_arena *a, struct all_entries *all)
{
    uint32_t cap = 0;
    memset(all, 0, sizeof *all);
    for (uint32_t i = 0; i < nmf; i++) {
        if (mfs[i].content != 0) {
            continue;
        }
        struct ice_entry *e;
        uint32_t n;
        int rc = ice_read_manifest(c->base, &mfs[i], a, &e, &n);
        if (rc < 0) {
            return rc;
        }
        if (all->n + n > cap) {
            uint32_t ncap = (all->n + n) * 2 + 16;
            struct ice_entry *ne = ice_alloc(a, sizeof *ne * ncap);
            uint32_t *nf = ice_alloc(a, sizeof *nf * ncap);
            if (!ne || !nf) {
                return FR_ENOMEM;
            }
            if (all->n) {
                memcpy(ne, all->e, sizeof *ne * all->n);
                memcpy(nf, all->from, sizeof *nf * all->n);
            }
            all->e = ne;
            all->from = nf;
            cap = ncap;
        }
        for (uint32_t k = 0; k < n; k++) {
            all->e[all->n] = e[k];
            all->from[all->n] = i;
            all->n++;
        }
    }
    return FR_OK;
}

static int64_t summary_int(const struct ice_meta *m, int64_t snap, const char *key)
{
    const struct ice_snapshot *s = snap >= 0 ? ice_meta_snapshot(m, snap) : NULL;
    const char *v = s ? ice_summary_get(&s->pub, key) : NULL;
    return v ? strtoll(v, NULL, 10) : (s ? -1 : 0);
}

/* -------------------------------------------------------- new snapshot -- */

struct snap_build {
    struct ice_mfile *list;
    uint32_t n, cap;
    int64_t added_files, added_rows, added_bytes;
    int64_t deleted_files, deleted_rows, deleted_bytes;
    int64_t manifests_created, manifests_replaced;
};

static int list_push(struct ice_change *c, struct snap_build *sb, const struct ice_mfile *mf)
{
    if (sb->n == sb->cap) {
        uint32_t ncap = sb->cap ? sb->cap * 2 : 32;
        struct ice_mfile *n = ice_alloc(c->arena, sizeof *n * ncap);
        if (!n) {
            return FR_ENOMEM;
        }
        if (sb->n) {
            memcpy(n, sb->list, sizeof *n * sb->n);
        }
        sb->list = n;
        sb->cap = ncap;
    }
    sb->list[sb->n++] = *mf;
    return FR_OK;
}

/* Carry a parent's manifest into the new list, unless it holds only
 * DELETED entries: those matter to the snapshot that wrote them, not to
 * its descendants (Java drops them the same way). */
static int carry(struct ice_change *c, struct snap_build *sb, const struct ice_mfile *mf)
{
    if (mf->content == 0 && mf->added_files == 0 && mf->existing_files == 0) {
        sb->manifests_replaced++;
        return FR_OK;
    }
    return list_push(c, sb, mf);
}

/* Merge small data manifests of the default spec (see the file comment). */
static int merge_manifests(struct ice_change *c, struct snap_build *sb)
{
    const struct ice_meta *m = c->next;
    const char *enabled = ice_meta_prop(m, "commit.manifest-merge.enabled");
    int64_t min_count = ice_meta_prop_int(m, "commit.manifest.min-count-to-merge", 100);
    int64_t target = ice_meta_prop_int(m, "commit.manifest.target-size-bytes", 8 << 20);
    if ((enabled && strcmp(enabled, "false") == 0) || min_count < 2) {
        return FR_OK;
    }
    uint32_t small = 0;
    for (uint32_t i = 0; i < sb->n; i++) {
        small += sb->list[i].content == 0 && sb->list[i].spec_id == m->default_spec_id &&
                 sb->list[i].length < target;
    }
    if (small < min_count) {
        return FR_OK;
    }
    const struct ice_spec *spec = ice_meta_spec(m, m->default_spec_id);
    struct ice_entry *entries = NULL;
    uint32_t n = 0, cap = 0;
    struct snap_build rest = {0};
    int rc = FR_OK;
    struct fr_ice_arena *tmp = ice_arena_new(1u << 30);
    if (!tmp) {
        return FR_ENOMEM;
    }
    for (uint32_t i = 0; i < sb->n && rc == FR_OK; i++) {
        struct ice_mfile *mf = &sb->list[i];
        if (!(mf->content == 0 && mf->spec_id == m->default_spec_id && mf->length < target)) {
            rc = list_push(c, &rest, mf);
            continue;
        }
        struct ice_entry *e;
        uint32_t k;
        bool ours = mf->sequence_number < 0; /* written by this snapshot */
        if (ours) {
            struct ice_mfile probe = *mf;
            probe.sequence_number = 0;
            rc = ice_read_manifest(c->base, &probe, tmp, &e, &k);
        } else {
            rc = ice_read_manifest(c->base, mf, tmp, &e, &k);
        }
        if (rc < 0) {
            break;
        }
        if (n + k > cap) {
            uint32_t ncap = (n + k) * 2 + 64;
            struct ice_entry *ne = ice_alloc(tmp, sizeof *ne * ncap);
            if (!ne) {
                rc = FR_ENOMEM;
                break;
            }
            if (n) {
                memcpy(ne, entries, sizeof *ne * n);
            }
            entries = ne;
            cap = ncap;
        }
        for (uint32_t j = 0; j < k; j++) {
            if (e[j].status == ICE_DELETED) {
                continue; /* deletes of older snapshots are history, not state */
            }
            entries[n] = e[j];
            if (ours && e[j].status == ICE_ADDED) {
                entries[n].snapshot_id = -1;
                entries[n].sequence_number = -1;
                entries[n].file_sequence_number = -1;
            } else {
                entries[n].status = ICE_EXISTING;
            }
            n++;
        }
        sb->manifests_replaced++;
        if (c->kept_manifest && strcmp(mf->path, c->kept_mf.path) == 0) {
            rc = add_doomed(c, c->kept_manifest); /* merged away: delete after the commit */
        }
    }
    if (rc == FR_OK) {
        struct ice_mfile merged;
        char local[ICE_PATH_MAX];
        rc = write_manifest(c, spec, entries, n, true, &merged, local, sizeof local);
        if (rc == FR_OK) {
            sb->n = 0;
            rc = list_push(c, sb, &merged);
            sb->manifests_created++;
        }
        for (uint32_t i = 0; rc == FR_OK && i < rest.n; i++) {
            rc = list_push(c, sb, &rest.list[i]);
        }
    }
    ice_arena_free(tmp);
    return rc;
}

/* Write the manifest list and add the snapshot to c->next. */
static int add_snapshot(struct ice_change *c, const char *op, struct snap_build *sb)
{
    struct ice_meta *m = c->next;
    const struct ice_meta *bm = c->base->meta;
    int64_t parent = bm->current_snapshot_id;
    int64_t seq = bm->last_sequence_number + 1;
    struct fr_buf b;
    char fname[128], uuid[37], local[ICE_PATH_MAX];
    const char *uri = NULL;
    fr_buf_init(&b, ICE_MAX_AVRO_BYTES);
    int rc = ice_mlist_write(c->snapshot_id, parent, seq, sb->list, sb->n, &b);
    c->nmanifests = sb->n;
    if (rc == FR_OK) {
        ice_uuid(uuid);
        snprintf(fname, sizeof fname, "snap-%" PRId64 "-%d-%s.avro", c->snapshot_id, c->attempt + 1,
                 uuid);
        rc = write_meta_file(c, fname, &b, true, &uri, local, sizeof local);
    }
    fr_buf_free(&b);
    if (rc < 0) {
        return rc;
    }
    ice_io_step(&c->base->cat->io, FR_ICE_STEP_MANIFEST_LIST, local);

    /* summary: operation, the caller's keys, then the standard metrics */
    struct kvb kb = {.a = m->arena};
    int64_t total_files = 0, total_rows = 0;
    for (uint32_t i = 0; i < sb->n; i++) {
        if (sb->list[i].content == 0) {
            total_files += sb->list[i].added_files + sb->list[i].existing_files;
            total_rows += sb->list[i].added_rows + sb->list[i].existing_rows;
        }
    }
    int64_t parent_size = summary_int(bm, parent, "total-files-size");
    rc = kvb_add(&kb, "operation", "%s", op);
    for (uint32_t i = 0; rc == FR_OK && i < c->nsummary; i++) {
        rc = kvb_add(&kb, c->summary[i].key, "%s", c->summary[i].value);
    }
    if (rc == FR_OK && sb->added_files) {
        rc = kvb_add(&kb, "added-data-files", "%" PRId64, sb->added_files);
        if (rc == FR_OK) {
            rc = kvb_add(&kb, "added-records", "%" PRId64, sb->added_rows);
        }
        if (rc == FR_OK) {
            rc = kvb_add(&kb, "added-files-size", "%" PRId64, sb->added_bytes);
        }
    }
    if (rc == FR_OK && sb->deleted_files) {
        rc = kvb_add(&kb, "deleted-data-files", "%" PRId64, sb->deleted_files);
        if (rc == FR_OK) {
            rc = kvb_add(&kb, "deleted-records", "%" PRId64, sb->deleted_rows);
        }
        if (rc == FR_OK) {
            rc = kvb_add(&kb, "removed-files-size", "%" PRId64, sb->deleted_bytes);
        }
    }
    if (rc == FR_OK) {
        rc = kvb_add(&kb, "total-data-files", "%" PRId64, total_files);
    }
    if (rc == FR_OK) {
        rc = kvb_add(&kb, "total-records", "%" PRId64, total_rows);
    }
    if (rc == FR_OK && parent_size >= 0) {
        rc = kvb_add(&kb, "total-files-size", "%" PRId64,
                     parent_size + sb->added_bytes - sb->deleted_bytes);
    }
    if (rc == FR_OK) {
        rc = kvb_add(&kb, "total-delete-files", "0");
    }
    if (rc == FR_OK) {
        rc = kvb_add(&kb, "total-position-deletes", "0");
    }
    if (rc == FR_OK) {
        rc = kvb_add(&kb, "total-equality-deletes", "0");
    }
    if (rc == FR_OK) {
        rc = kvb_add(&kb, "manifests-created", "%" PRId64, sb->manifests_created);
    }
    if (rc == FR_OK) {
        rc = kvb_add(&kb, "manifests-replaced", "%" PRId64, sb->manifests_replaced);
    }
    if (rc == FR_OK) {
        rc = kvb_add(&kb, "engine-name", "freshet");
    }
    if (rc < 0) {
        return rc;
    }

    struct ice_snapshot *snaps = ice_alloc(m->arena, sizeof *snaps * (m->nsnapshots + 1));
    struct ice_log_entry *log = ice_alloc(m->arena, sizeof *log * (m->nsnapshot_log + 1));
    if (!snaps || !log) {
        return FR_ENOMEM;
    }
    if (m->nsnapshots) {
        memcpy(snaps, m->snapshots, sizeof *snaps * m->nsnapshots);
    }
    if (m->nsnapshot_log) {
        memcpy(log, m->snapshot_log, sizeof *log * m->nsnapshot_log);
    }
    struct ice_snapshot *s = &snaps[m->nsnapshots];
    s->pub.snapshot_id = c->snapshot_id;
    s->pub.parent_id = parent;
    s->pub.sequence_number = seq;
    s->pub.timestamp_ms = m->last_updated_ms;
    s->pub.operation = kb.kv[0].value;
    s->pub.manifest_list = uri;
    s->pub.summary = kb.kv;
    s->pub.nsummary = kb.n;
    s->schema_id = m->current_schema_id;
    log[m->nsnapshot_log] = (struct ice_log_entry){m->last_updated_ms, c->snapshot_id, NULL};
    m->snapshots = snaps;
    m->nsnapshots++;
    m->snapshot_log = log;
    m->nsnapshot_log++;
    m->current_snapshot_id = c->snapshot_id;
    m->last_sequence_number = seq;
    return FR_OK;
}

/* ------------------------------------------------------------- append -- */

static int check_files(struct ice_change *c, const struct ice_spec *spec)
{
    for (uint32_t i = 0; i < c->nfiles; i++) {
        struct ice_dfile *f = &c->files[i];
        const char *uri = norm_path(c, f->path);
        if (!uri) {
            return FR_ENOMEM;
        }
        f->path = uri;
        if (f->npart != spec->nfields) {
            return ice_err(FR_EINVAL,
                           "table %s.%s: data file %s has %u partition values, the spec has %u",
                           c->ns, c->name, uri, f->npart, spec->nfields);
        }
        for (uint32_t p = 0; p < f->npart; p++) {
            enum fr_ice_type want = ice_pfield_type(c->next, &spec->fields[p]);
            if (!f->part[p].is_null && f->part[p].type != want) {
                return ice_err(FR_EINVAL,
                               "table %s.%s: data file %s: partition value %u is a %s, the spec "
                               "wants a %s",
                               c->ns, c->name, uri, p, ice_type_name(f->part[p].type),
                               ice_type_name(want));
            }
        }
        char local[ICE_PATH_MAX];
        int64_t size;
        if (ice_local_path(c->base, uri, local, sizeof local) == FR_OK) {
            int rc = ice_io_stat(&c->base->cat->io, local, &size, NULL);
            if (rc == FR_ENOTFOUND) {
                return ice_err(FR_ENOTFOUND, "table %s.%s: data file %s does not exist", c->ns,
                               c->name, local);
            }
            if (rc == FR_OK && size != f->file_size) {
                return ice_err(FR_EINVAL,
                               "table %s.%s: data file %s is %" PRId64 " bytes, not %" PRId64,
                               c->ns, c->name, local, size, f->file_size);
            }
        }
    }
    return FR_OK;
}

static int added_manifest(struct ice_change *c, const struct ice_spec *spec, struct snap_build *sb)
{
    for (uint32_t i = 0; i < c->nfiles; i++) {
        sb->added_files++;
        sb->added_rows += c->files[i].record_count;
        sb->added_bytes += c->files[i].file_size;
    }
    if (c->nfiles == 0) {
        return FR_OK;
    }
    if (c->kept_manifest && c->kept_mf.spec_id == spec->spec_id) {
        sb->manifests_created++;
        return list_push(c, sb, &c->kept_mf);
    }
    struct ice_entry *entries = ice_alloc(c->arena, sizeof *entries * c->nfiles);
    if (!entries) {
        return FR_ENOMEM;
    }
    for (uint32_t i = 0; i < c->nfiles; i++) {
        entries[i].status = ICE_ADDED;
        entries[i].snapshot_id = -1;
        entries[i].sequence_number = -1;
        entries[i].file_sequence_number = -1;
        entries[i].file = c->files[i];
    }
    char local[ICE_PATH_MAX];
    struct ice_mfile mf;
    /* The snapshot id is in the manifest's rows only as added_snapshot_id
     * of the list row, which add_snapshot sets per attempt. */
    int rc = write_manifest(c, spec, entries, c->nfiles, false, &mf, local, sizeof local);
    if (rc < 0) {
        return rc;
    }
    free(c->kept_manifest);
    c->kept_manifest = strdup(local);
    c->kept_mf = mf;
    if (!c->kept_manifest) {
        return FR_ENOMEM;
    }
    sb->manifests_created++;
    return list_push(c, sb, &mf);
}

static int parent_list(struct ice_change *c, struct ice_mfile **mfs, uint32_t *n)
{
    const struct ice_meta *bm = c->base->meta;
    *mfs = NULL;
    *n = 0;
    if (bm->current_snapshot_id < 0) {
        return FR_OK;
    }
    return ice_read_mlist(c->base, ice_meta_snapshot(bm, bm->current_snapshot_id), c->arena, mfs,
                          n);
}

static int apply_append(struct ice_change *c)
{
    const struct ice_spec *spec = ice_meta_spec(c->next, c->next->default_spec_id);
    struct snap_build sb = {0};
    struct ice_mfile *parent;
    uint32_t nparent;
    int rc = c->attempt == 0 ? check_files(c, spec) : FR_OK;
    if (rc == FR_OK) {
        rc = parent_list(c, &parent, &nparent);
    }
    if (rc == FR_OK) {
        rc = added_manifest(c, spec, &sb);
    }
    for (uint32_t i = 0; rc == FR_OK && i < nparent; i++) {
        rc = carry(c, &sb, &parent[i]);
    }
    /* the kept manifest's row carries this attempt's snapshot id */
    if (rc == FR_OK && c->nfiles) {
        sb.list[0].added_snapshot_id = c->snapshot_id;
    }
    if (rc == FR_OK) {
        rc = merge_manifests(c, &sb);
    }
    return rc == FR_OK ? add_snapshot(c, "append", &sb) : rc;
}

/* ---------------------------------------------------- overwrite, rewrite -- */

/* Rewrite the manifests of all that hold a file in doomed_paths (or every
 * manifest when doomed_paths is NULL): those entries -> DELETED, other live
 * entries -> EXISTING. Untouched manifests are carried over. */
static int drop_files(struct ice_change *c, const struct ice_strset *doomed_paths,
                      struct snap_build *sb, uint32_t *found)
{
    struct ice_mfile *parent;
    uint32_t nparent;
    struct all_entries all;
    *found = 0;
    int rc = parent_list(c, &parent, &nparent);
    if (rc == FR_OK) {
        rc = read_all(c, parent, nparent, c->arena, &all);
    }
    for (uint32_t i = 0; rc == FR_OK && i < nparent; i++) {
        bool touched = false;
        for (uint32_t k = 0; k < all.n && !touched; k++) {
            touched = all.from[k] == i && all.e[k].status != ICE_DELETED &&
                      (!doomed_paths || ice_strset_has(doomed_paths, all.e[k].file.path));
        }
        if (!touched || parent[i].content != 0) {
            rc = carry(c, sb, &parent[i]);
            continue;
        }
        const struct ice_spec *spec = ice_meta_spec(c->next, parent[i].spec_id);
        if (!spec) {
            return ice_err(FR_ECORRUPT, "table %s.%s: manifest %s names unknown spec %d", c->ns,
                           c->name, parent[i].path, (int)parent[i].spec_id);
        }
        struct ice_entry *out = ice_alloc(c->arena, sizeof *out * (all.n + 1));
        uint32_t nout = 0;
        if (!out) {
            return FR_ENOMEM;
        }
        for (uint32_t k = 0; k < all.n; k++) {
            const struct ice_entry *e = &all.e[k];
            if (all.from[k] != i || e->status == ICE_DELETED) {
                continue;
            }
            out[nout] = *e;
            if (!doomed_paths || ice_strset_has(doomed_paths, e->file.path)) {
                out[nout].status = ICE_DELETED;
                out[nout].snapshot_id = c->snapshot_id;
                sb->deleted_files++;
                sb->deleted_rows += e->file.record_count;
                sb->deleted_bytes += e->file.file_size;
                (*found)++;
            } else {
                out[nout].status = ICE_EXISTING;
            }
            nout++;
        }
        struct ice_mfile mf;
        char local[ICE_PATH_MAX];
        rc = write_manifest(c, spec, out, nout, true, &mf, local, sizeof local);
        if (rc == FR_OK) {
            mf.added_snapshot_id = c->snapshot_id;
            sb->manifests_created++;
            sb->manifests_replaced++;
            rc = list_push(c, sb, &mf);
        }
    }
    return rc;
}

static int apply_overwrite(struct ice_change *c)
{
    const struct ice_spec *spec = ice_meta_spec(c->next, c->next->default_spec_id);
    struct snap_build sb = {0};
    uint32_t found;
    int rc = c->attempt == 0 ? check_files(c, spec) : FR_OK;
    if (rc == FR_OK) {
        rc = added_manifest(c, spec, &sb);
    }
    if (rc == FR_OK && c->nfiles) {
        sb.list[0].added_snapshot_id = c->snapshot_id;
    }
    if (rc == FR_OK) {
        rc = drop_files(c, NULL, &sb, &found);
    }
    return rc == FR_OK ? add_snapshot(c, "overwrite", &sb) : rc;
}

static int apply_rewrite(struct ice_change *c)
{
    const struct ice_spec *spec = ice_meta_spec(c->next, c->next->default_spec_id);
    struct snap_build sb = {0};
    struct ice_strset doomed;
    uint32_t found = 0;
    ice_strset_init(&doomed);
    int rc = c->attempt == 0 ? check_files(c, spec) : FR_OK;
    for (uint32_t i = 0; rc == FR_OK && i < c->nremove; i++) {
        rc = ice_strset_add(&doomed, c->remove[i]) < 0 ? FR_ENOMEM : FR_OK;
    }
    if (rc == FR_OK && c->base->meta->current_snapshot_id < 0) {
        rc = ice_err(FR_ECONFLICT, "table %s.%s: rewrite of a table with no snapshot", c->ns,
                     c->name);
    }
    if (rc == FR_OK) {
        rc = added_manifest(c, spec, &sb);
    }
    if (rc == FR_OK && c->nfiles) {
        sb.list[0].added_snapshot_id = c->snapshot_id;
    }
    if (rc == FR_OK) {
        rc = drop_files(c, &doomed, &sb, &found);
    }
    if (rc == FR_OK && found != doomed.n) {
        rc = ice_err(FR_ECONFLICT,
                     "table %s.%s: %u of %zu files to rewrite are no longer live (a concurrent "
                     "commit removed them)",
                     c->ns, c->name, (unsigned)(doomed.n - found), doomed.n);
    }
    if (rc == FR_OK && sb.added_rows != sb.deleted_rows) {
        rc = ice_err(FR_EINVAL,
                     "table %s.%s: rewrite would change the row count (%" PRId64 " in, %" PRId64
                     " out)",
                     c->ns, c->name, sb.deleted_rows, sb.added_rows);
    }
    ice_strset_free(&doomed);
    return rc == FR_OK ? add_snapshot(c, "replace", &sb) : rc;
}

/* --------------------------------------------------------- add column -- */

static int apply_add_column(struct ice_change *c)
{
    struct ice_meta *m = c->next;
    const struct ice_schema *cur = ice_meta_schema(m, m->current_schema_id);
    for (uint32_t i = 0; i < cur->nfields; i++) {
        if (strcmp(cur->fields[i].name, c->column) == 0) {
            return ice_err(FR_EEXIST, "table %s.%s: column %s exists", c->ns, c->name, c->column);
        }
    }
    struct ice_schema *schemas = ice_alloc(m->arena, sizeof *schemas * (m->nschemas + 1));
    if (!schemas) {
        return FR_ENOMEM;
    }
    memcpy(schemas, m->schemas, sizeof *schemas * m->nschemas);
    struct ice_schema *s = &schemas[m->nschemas];
    int32_t max_id = 0;
    for (uint32_t i = 0; i < m->nschemas; i++) {
        max_id = m->schemas[i].schema_id > max_id ? m->schemas[i].schema_id : max_id;
    }
    cur = ice_meta_schema(m, m->current_schema_id);
    s->schema_id = max_id + 1;
    s->nfields = cur->nfields + 1;
    s->fields = ice_alloc(m->arena, sizeof *s->fields * s->nfields);
    s->type_names = ice_alloc(m->arena, sizeof *s->type_names * s->nfields);
    if (!s->fields || !s->type_names) {
        return FR_ENOMEM;
    }
    memcpy(s->fields, cur->fields, sizeof *s->fields * cur->nfields);
    memcpy(s->type_names, cur->type_names, sizeof *s->type_names * cur->nfields);
    struct fr_ice_field *f = &s->fields[cur->nfields];
    f->id = m->last_column_id + 1;
    f->name = ice_strdup(m->arena, c->column);
    f->type = c->column_type;
    f->required = false;
    f->doc = c->column_doc ? ice_strdup(m->arena, c->column_doc) : NULL;
    s->type_names[cur->nfields] = ice_sprintf(m->arena, "\"%s\"", ice_type_name(c->column_type));
    m->schemas = schemas;
    m->nschemas++;
    m->current_schema_id = s->schema_id;
    m->last_column_id = f->id;
    c->new_field_id = f->id;
    return FR_OK;
}

/* ------------------------------------------------------------- expiry -- */

static int ref_snapshot(const char *raw, int64_t *id)
{
    struct fr_json_val obj, v;
    if (!fr_json_value(raw, raw + strlen(raw), &obj) || obj.type != FR_JSON_OBJECT ||
        fr_json_member(&obj, "snapshot-id", &v) != 1) {
        return FR_ECORRUPT;
    }
    return fr_json_int64(&v, id) < 0 ? FR_ECORRUPT : FR_OK;
}

/* Which snapshots stay: see fr_ice_expire in iceberg.h. */
static int expire_keep(struct ice_change *c, bool *keep)
{
    const struct ice_meta *m = c->base->meta;
    uint32_t n = m->nsnapshots;
    for (uint32_t i = 0; i < n; i++) {
        const struct fr_ice_snapshot *s = &m->snapshots[i].pub;
        keep[i] = s->snapshot_id == m->current_snapshot_id || s->timestamp_ms >= c->older_than_ms;
        /* newer than the retain_last-th newest? */
        uint32_t newer = 0;
        for (uint32_t j = 0; j < n; j++) {
            const struct fr_ice_snapshot *o = &m->snapshots[j].pub;
            newer += o->timestamp_ms > s->timestamp_ms || (o->timestamp_ms == s->timestamp_ms &&
                                                           o->sequence_number > s->sequence_number);
        }
        keep[i] = keep[i] || newer < c->retain_last;
        for (uint32_t r = 0; r < m->nrefs; r++) {
            int64_t id;
            if (ref_snapshot(m->refs[r].raw, &id) == FR_OK && id == s->snapshot_id) {
                keep[i] = true;
            }
        }
        /* the newest epoch marker of each pipeline */
        const char *pipe = ice_summary_get(s, FR_ICE_SUMMARY_PIPELINE);
        const char *ep = ice_summary_get(s, FR_ICE_SUMMARY_EPOCH);
        if (pipe && ep && !keep[i]) {
            int64_t mine = strtoll(ep, NULL, 10);
            bool newest = true;
            for (uint32_t j = 0; j < n && newest; j++) {
                const struct fr_ice_snapshot *o = &m->snapshots[j].pub;
                const char *op = ice_summary_get(o, FR_ICE_SUMMARY_PIPELINE);
                const char *oe = ice_summary_get(o, FR_ICE_SUMMARY_EPOCH);
                if (j != i && op && oe && strcmp(op, pipe) == 0) {
                    int64_t theirs = strtoll(oe, NULL, 10);
                    newest = mine > theirs || (mine == theirs && j < i);
                }
            }
            keep[i] = newest;
        }
    }
    /* The current snapshot's ancestors back to the nearest one carrying an
     * epoch marker: compaction stacks replace snapshots on the marker, and
     * readers walk the lineage from the current snapshot to find it
     * (verify's cut; an expired ancestor ends the walk). A lineage with no
     * marker (a table no pipeline writes) keeps nothing more. */
    uint32_t *chain = malloc(sizeof *chain * (n + 1));
    if (!chain) {
        return FR_ENOMEM;
    }
    uint32_t len = 0;
    bool marked = false;
    for (int64_t id = m->current_snapshot_id; id >= 0 && len < n && !marked;) {
        uint32_t k = 0;
        while (k < n && m->snapshots[k].pub.snapshot_id != id) {
            k++;
        }
        if (k == n) {
            break;
        }
        chain[len++] = k;
        marked = ice_summary_get(&m->snapshots[k].pub, FR_ICE_SUMMARY_EPOCH) != NULL;
        id = m->snapshots[k].pub.parent_id;
    }
    for (uint32_t i = 0; marked && i < len; i++) {
        keep[chain[i]] = true;
    }
    free(chain);
    return FR_OK;
}

/* Files reachable from the kept snapshots; list the rest of what the
 * expired snapshots reached as doomed.
 *
 * Memory: a live table keeps ~900 snapshots (maintenance.expire_after_s at
 * a 1 s trigger) whose lists name up to ~100 manifests each. Parsed into
 * one arena that was ~10 MB for a round of the live processor, whose RSS
 * budget is 32 MB; so each list and each manifest is parsed into a scratch
 * arena dropped when it is done, and only the paths the sets hold are
 * copied (into `paths`): what stays grows with the distinct manifests and
 * files, not with snapshots times manifests. */
static int expire_scan_list(struct ice_change *c, const struct ice_snapshot *snap,
                            struct fr_ice_arena *lst, struct ice_mfile **mfs, uint32_t *n)
{
    ice_arena_reset(lst);
    return ice_read_mlist(c->base, snap, lst, mfs, n);
}

/* Add s to set, the set's copy in paths: 1 added, 0 there already, < 0. */
static int set_add_copy(struct ice_strset *set, struct fr_ice_arena *paths, const char *s)
{
    if (ice_strset_has(set, s)) {
        return 0;
    }
    const char *copy = ice_strdup(paths, s);
    if (!copy) {
        return FR_ENOMEM;
    }
    return ice_strset_add(set, copy) < 0 ? FR_ENOMEM : 1;
}

static int expire_files(struct ice_change *c, const bool *keep)
{
    const struct ice_meta *m = c->base->meta;
    struct ice_strset lists, manifests, live;
    struct fr_ice_arena *paths = ice_arena_new(1u << 30);
    struct fr_ice_arena *lst = ice_arena_new(1u << 30);
    struct fr_ice_arena *man = ice_arena_new(1u << 30);
    int rc = paths && lst && man ? FR_OK : FR_ENOMEM;
    ice_strset_init(&lists);
    ice_strset_init(&manifests);
    ice_strset_init(&live);
    for (uint32_t i = 0; rc == FR_OK && i < m->nsnapshots; i++) {
        if (!keep[i]) {
            continue;
        }
        struct ice_mfile *mfs;
        uint32_t n;
        rc = expire_scan_list(c, &m->snapshots[i], lst, &mfs, &n);
        for (uint32_t k = 0; rc == FR_OK && k < n; k++) {
            int added = set_add_copy(&manifests, paths, mfs[k].path);
            if (added != 1) {
                rc = added < 0 ? added : FR_OK;
                continue; /* seen */
            }
            struct ice_entry *e;
            uint32_t ne;
            ice_arena_reset(man);
            rc = ice_read_manifest(c->base, &mfs[k], man, &e, &ne);
            for (uint32_t j = 0; rc == FR_OK && j < ne; j++) {
                if (e[j].status != ICE_DELETED) {
                    int r = set_add_copy(&live, paths, e[j].file.path);
                    rc = r < 0 ? r : FR_OK;
                }
            }
        }
    }
    char local[ICE_PATH_MAX];
    for (uint32_t i = 0; rc == FR_OK && i < m->nsnapshots; i++) {
        if (keep[i]) {
            continue;
        }
        struct ice_mfile *mfs = NULL;
        uint32_t n = 0;
        int rr = expire_scan_list(c, &m->snapshots[i], lst, &mfs, &n);
        if (rr == FR_ENOTFOUND) {
            continue; /* already gone: nothing of it to delete */
        }
        if (rr < 0) {
            rc = rr;
            break;
        }
        if (ice_local_path(c->base, m->snapshots[i].pub.manifest_list, local, sizeof local) ==
            FR_OK) {
            rc = add_doomed(c, local);
        }
        for (uint32_t k = 0; rc == FR_OK && k < n; k++) {
            if (ice_strset_has(&manifests, mfs[k].path)) {
                continue;
            }
            int added = set_add_copy(&lists, paths, mfs[k].path);
            if (added != 1) {
                rc = added < 0 ? added : FR_OK;
                continue;
            }
            struct ice_entry *e;
            uint32_t ne;
            ice_arena_reset(man);
            rr = ice_read_manifest(c->base, &mfs[k], man, &e, &ne);
            if (rr == FR_ENOTFOUND) {
                continue;
            }
            if (rr < 0) {
                rc = rr;
                break;
            }
            for (uint32_t j = 0; rc == FR_OK && j < ne; j++) {
                int r = set_add_copy(&live, paths, e[j].file.path);
                if (r == 1 &&
                    ice_local_path(c->base, e[j].file.path, local, sizeof local) == FR_OK) {
                    rc = add_doomed(c, local);
                } else if (r < 0) {
                    rc = r;
                }
            }
            if (rc == FR_OK && ice_local_path(c->base, mfs[k].path, local, sizeof local) == FR_OK) {
                rc = add_doomed(c, local);
            }
        }
    }
    if (paths && lst && man) {
        c->expire_scan_peak = lst->peak + man->peak + paths->used;
    }
    ice_strset_free(&lists);
    ice_strset_free(&manifests);
    ice_strset_free(&live);
    ice_arena_free(man);
    ice_arena_free(lst);
    ice_arena_free(paths);
    return rc;
}

static int apply_expire(struct ice_change *c)
{
    struct ice_meta *m = c->next;
    uint32_t n = c->base->meta->nsnapshots;
    bool *keep = calloc(n + 1, sizeof *keep);
    if (!keep) {
        return FR_ENOMEM;
    }
    int rc = expire_keep(c, keep);
    uint32_t expired = 0;
    for (uint32_t i = 0; i < n; i++) {
        expired += !keep[i];
    }
    if (rc == FR_OK && expired == 0) {
        ice_meta_free(c->next);
        c->next = NULL; /* nothing to do */
        free(keep);
        return FR_OK;
    }
    if (rc == FR_OK) {
        rc = expire_files(c, keep);
    }
    if (rc == FR_OK) {
        uint32_t k = 0, l = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (keep[i]) {
                m->snapshots[k++] = m->snapshots[i];
            }
        }
        m->nsnapshots = k;
        for (uint32_t i = 0; i < m->nsnapshot_log; i++) {
            if (ice_meta_snapshot(m, m->snapshot_log[i].snapshot_id)) {
                m->snapshot_log[l++] = m->snapshot_log[i];
            }
        }
        m->nsnapshot_log = l;
        c->expired = expired;
    }
    free(keep);
    return rc;
}

/* ----------------------------------------------------------- dispatch -- */

int ice_change_apply(struct ice_change *c)
{
    const struct ice_meta *bm = c->base->meta;
    int rc = ice_meta_clone(bm, &c->next);
    if (rc < 0) {
        return rc;
    }
    int64_t now = fr_wall_ms();
    c->next->last_updated_ms = now > bm->last_updated_ms ? now : bm->last_updated_ms + 1;
    do {
        c->snapshot_id = ice_snapshot_id();
    } while (ice_meta_snapshot(bm, c->snapshot_id));
    switch (c->kind) {
    case ICE_CH_APPEND:
        return apply_append(c);
    case ICE_CH_OVERWRITE:
        return apply_overwrite(c);
    case ICE_CH_REWRITE:
        return apply_rewrite(c);
    case ICE_CH_ADD_COLUMN:
        return apply_add_column(c);
    case ICE_CH_EXPIRE:
        return apply_expire(c);
    case ICE_CH_REST:
        return ice_rest_apply(c);
    }
    return FR_EINVAL;
}

int ice_write_metadata(struct ice_change *c)
{
    struct ice_meta *m = c->next;
    const struct fr_ice_table *t = c->base;
    /* metadata-log: the previous file, trimmed to previous-versions-max */
    int64_t keep = ice_meta_prop_int(m, "write.metadata.previous-versions-max", 100);
    if (keep < 1) {
        keep = 1;
    }
    struct ice_log_entry *log = ice_alloc(m->arena, sizeof *log * (m->nmetadata_log + 1));
    if (!log) {
        return FR_ENOMEM;
    }
    if (m->nmetadata_log) {
        memcpy(log, m->metadata_log, sizeof *log * m->nmetadata_log);
    }
    log[m->nmetadata_log] = (struct ice_log_entry){t->meta->last_updated_ms, -1,
                                                   ice_strdup(m->arena, t->meta_location)};
    m->nmetadata_log++;
    if (m->nmetadata_log > keep) {
        /* write.metadata.delete-after-commit.enabled (freshet's default:
         * true): files that fall off the log, and their published links,
         * are deleted once this commit has landed */
        const char *del = ice_meta_prop(m, "write.metadata.delete-after-commit.enabled");
        uint32_t drop = m->nmetadata_log - (uint32_t)keep;
        for (uint32_t i = 0; i < drop && !(del && strcmp(del, "false") == 0); i++) {
            char local[ICE_PATH_MAX];
            int64_t k = ice_meta_version(log[i].file);
            int rc = FR_OK;
            if (ice_local_path(t, log[i].file, local, sizeof local) == FR_OK) {
                rc = add_doomed(c, local);
            }
            if (rc == FR_OK && k >= 0) {
                snprintf(local, sizeof local, "%s/metadata/v%" PRId64 ".metadata.json", t->dir, k);
                rc = add_doomed(c, local);
            }
            if (rc < 0) {
                return rc;
            }
        }
        log += drop;
        m->nmetadata_log = (uint32_t)keep;
    }
    m->metadata_log = log;

    int64_t v = ice_meta_version(t->meta_location);
    char uuid[37], fname[96], local[ICE_PATH_MAX];
    ice_uuid(uuid);
    snprintf(fname, sizeof fname, "%05" PRId64 "-%s.metadata.json", (v < 0 ? 0 : v) + 1, uuid);
    struct fr_buf b;
    fr_buf_init(&b, ICE_MAX_METADATA_BYTES);
    const char *uri = NULL;
    int rc = ice_meta_write(m, &b);
    c->metadata_bytes = b.len;
    if (rc == FR_OK) {
        rc = write_meta_file(c, fname, &b, true, &uri, local, sizeof local);
    }
    if (rc == FR_OK && !ice_io_local(t->cat)) {
        free(c->next_json);
        c->next_json = b.data; /* ice_publish's v<N> copy (ice_change_reset frees it) */
        c->next_json_len = b.len;
        b.data = NULL;
    }
    fr_buf_free(&b);
    if (rc < 0) {
        return rc;
    }
    c->next_location = strdup(uri);
    if (!c->next_location) {
        return FR_ENOMEM;
    }
    ice_io_step(&t->cat->io, FR_ICE_STEP_METADATA, local);
    return FR_OK;
}
