/*
 * read.c — reading a table: a snapshot's manifest list and manifests, the
 * live data files of any snapshot (time travel by id or timestamp), and the
 * epoch markers freshet leaves in snapshot summaries.
 *
 * Scan semantics (ICE-SPEC "Scan Planning"): a snapshot's live files are
 * the ADDED and EXISTING entries of the data manifests its manifest list
 * names; DELETED entries are history. A file listed live twice is corrupt.
 * Errors name the table and the file: a missing manifest, manifest list or
 * (with check_files) data file is FR_ECORRUPT, never an empty result.
 */
#include "iceberg/iceberg_int.h"

#include "core/err.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int read_avro(const struct fr_ice_table *table, const char *uri, const char *what,
                     struct fr_buf *b)
{
    char local[ICE_PATH_MAX];
    int rc = ice_local_path(table, uri, local, sizeof local);
    if (rc < 0) {
        return rc;
    }
    rc = ice_io_read(&table->cat->io, local, b);
    if (rc == FR_ENOTFOUND) {
        return ice_err(FR_ENOTFOUND, "table %s.%s: %s %s is missing", table->ns, table->name, what,
                       uri);
    }
    if (rc < 0) {
        return ice_err(rc, "table %s.%s: cannot read %s %s: %s", table->ns, table->name, what,
                       uri, fr_strerror(rc));
    }
    return FR_OK;
}

int ice_read_mlist(const struct fr_ice_table *table, const struct ice_snapshot *snap,
                   struct fr_ice_arena *arena, struct ice_mfile **mfiles, uint32_t *n)
{
    struct fr_buf b;
    fr_buf_init(&b, ICE_MAX_AVRO_BYTES);
    int rc = read_avro(table, snap->pub.manifest_list, "manifest list", &b);
    if (rc == FR_OK) {
        rc = ice_mlist_read(b.data, b.len, arena, mfiles, n);
        if (rc < 0) {
            char why[512];
            snprintf(why, sizeof why, "%s", fr_ice_errmsg());
            ice_err(rc, "table %s.%s: manifest list %s: %s", table->ns, table->name,
                    snap->pub.manifest_list, why);
        }
    }
    fr_buf_free(&b);
    return rc;
}

int ice_read_manifest(const struct fr_ice_table *table, const struct ice_mfile *mf,
                      struct fr_ice_arena *arena, struct ice_entry **entries, uint32_t *n)
{
    struct fr_buf b;
    fr_buf_init(&b, ICE_MAX_AVRO_BYTES);
    int rc = read_avro(table, mf->path, "manifest", &b);
    if (rc == FR_OK && (int64_t)b.len != mf->length) {
        rc = ice_err(FR_ECORRUPT, "table %s.%s: manifest %s is %zu bytes, the list says %" PRId64,
                     table->ns, table->name, mf->path, b.len, mf->length);
    }
    if (rc == FR_OK) {
        rc = ice_manifest_read(b.data, b.len, mf, arena, entries, n);
        if (rc < 0) {
            char why[512];
            snprintf(why, sizeof why, "%s", fr_ice_errmsg());
            ice_err(rc, "table %s.%s: manifest %s: %s", table->ns, table->name, mf->path, why);
        }
    }
    fr_buf_free(&b);
    return rc;
}

/* Copy what f points at (its path, partition values and metrics, parsed
 * into a manifest's scratch arena) into the list's arena. */
static int file_keep(struct fr_ice_arena *a, struct fr_ice_file *f)
{
    struct fr_ice_value *part = ice_alloc(a, sizeof *part * (f->npartition + 1));
    struct fr_ice_col_metrics *mx = ice_alloc(a, sizeof *mx * (f->nmetrics + 1));
    if (!part || !mx) {
        return FR_ENOMEM;
    }
    for (uint32_t p = 0; p < f->npartition; p++) {
        if (ice_value_copy(a, &f->partition[p], &part[p]) < 0) {
            return FR_ENOMEM;
        }
    }
    for (uint32_t k = 0; k < f->nmetrics; k++) {
        if (ice_metrics_copy(a, &f->metrics[k], &mx[k]) < 0) {
            return FR_ENOMEM;
        }
    }
    f->partition = part;
    f->metrics = mx;
    f->path = ice_strdup(a, f->path);
    return f->path ? FR_OK : FR_ENOMEM;
}

int fr_ice_files(struct fr_ice_catalog *cat, const struct fr_ice_table *table, int64_t snapshot_id,
                 bool check_files, struct fr_ice_file_list *list)
{
    return fr_ice_files_since(cat, table, snapshot_id, check_files, INT64_MIN, list);
}

int fr_ice_files_since(struct fr_ice_catalog *cat, const struct fr_ice_table *table,
                       int64_t snapshot_id, bool check_files, int64_t min_sequence,
                       struct fr_ice_file_list *list)
{
    (void)cat;
    ice_err_clear();
    memset(list, 0, sizeof *list);
    const struct ice_meta *m = table->meta;
    if (snapshot_id < 0) {
        snapshot_id = m->current_snapshot_id;
    }
    list->snapshot_id = snapshot_id;
    list->arena = ice_arena_new(1u << 30);
    if (!list->arena) {
        return FR_ENOMEM;
    }
    if (snapshot_id < 0) {
        return FR_OK; /* no snapshot yet: no files */
    }
    const struct ice_snapshot *snap = ice_meta_snapshot(m, snapshot_id);
    if (!snap) {
        return ice_err(FR_ENOTFOUND, "table %s.%s: no snapshot %" PRId64 " (expired?)", table->ns,
                       table->name, snapshot_id);
    }
    /* Each manifest is parsed into a scratch arena, and only its live data
     * files are copied into the list: a table's manifests also carry the
     * entries its compactions deleted, each with every column's bounds
     * (~1.3 MB at the live processor's late compaction rounds, whose RSS
     * budget is 32 MB; docs/BENCHMARKS.md, session 9). */
    struct fr_ice_arena *scratch = ice_arena_new(1u << 30);
    if (!scratch) {
        return FR_ENOMEM;
    }
    struct ice_mfile *mfs;
    uint32_t nmf;
    size_t cap = 0;
    struct ice_strset seen;
    ice_strset_init(&seen);
    int rc = ice_read_mlist(table, snap, list->arena, &mfs, &nmf);
    for (uint32_t i = 0; rc == FR_OK && i < nmf; i++) {
        /* a manifest added before min_sequence holds no file added since:
         * an entry's sequence number is at most its manifest's */
        if (mfs[i].content != 0 || mfs[i].sequence_number < min_sequence) {
            continue;
        }
        struct ice_entry *e;
        uint32_t n;
        ice_arena_reset(scratch);
        rc = ice_read_manifest(table, &mfs[i], scratch, &e, &n);
        for (uint32_t k = 0; rc == FR_OK && k < n; k++) {
            if (e[k].status == ICE_DELETED || e[k].file.content != 0) {
                continue;
            }
            if (ice_strset_has(&seen, e[k].file.path)) {
                rc = ice_err(FR_ECORRUPT,
                             "table %s.%s: data file %s is live twice in snapshot %" PRId64,
                             table->ns, table->name, e[k].file.path, snapshot_id);
                break;
            }
            if (list->nfiles == cap) {
                cap = cap ? cap * 2 : 64;
                struct fr_ice_file *nf = ice_alloc(list->arena, sizeof *nf * cap);
                if (!nf) {
                    rc = FR_ENOMEM;
                    break;
                }
                if (list->nfiles) {
                    memcpy(nf, list->files, sizeof *nf * list->nfiles);
                }
                list->files = nf;
            }
            struct fr_ice_file *f = &list->files[list->nfiles];
            const struct ice_dfile *d = &e[k].file;
            char local[ICE_PATH_MAX];
            rc = ice_local_path(table, d->path, local, sizeof local);
            if (rc < 0) {
                break;
            }
            f->path = d->path;
            f->local_path = ice_strdup(list->arena, local);
            f->file_size = d->file_size;
            f->record_count = d->record_count;
            f->spec_id = mfs[i].spec_id;
            f->snapshot_id = e[k].snapshot_id;
            f->sequence_number = e[k].sequence_number;
            /* Avro gives ints and longs; the spec says date, timestamp... */
            const struct ice_spec *spec = ice_meta_spec(m, mfs[i].spec_id);
            for (uint32_t p = 0; spec && p < d->npart && p < spec->nfields; p++) {
                enum fr_ice_type want = ice_pfield_type(m, &spec->fields[p]);
                struct fr_ice_value *pv = &d->part[p];
                bool same_width =
                    ((want == FR_ICE_INT || want == FR_ICE_DATE) && pv->type == FR_ICE_INT) ||
                    ((want == FR_ICE_LONG || want == FR_ICE_TIMESTAMP ||
                      want == FR_ICE_TIMESTAMPTZ) &&
                     pv->type == FR_ICE_LONG);
                if (!pv->is_null && same_width) {
                    pv->type = want;
                }
            }
            f->partition = d->part;
            f->npartition = d->npart;
            f->metrics = d->metrics;
            f->nmetrics = d->nmetrics;
            if (!f->local_path || file_keep(list->arena, f) < 0 ||
                ice_strset_add(&seen, f->path) < 0) {
                rc = FR_ENOMEM;
                break;
            }
            if (check_files) {
                int64_t size;
                int sr = ice_io_stat(&table->cat->io, local, &size, NULL);
                if (sr == FR_ENOTFOUND) {
                    rc = ice_err(FR_ECORRUPT,
                                 "table %s.%s: manifest %s lists data file %s, which is missing",
                                 table->ns, table->name, mfs[i].path, local);
                    break;
                }
                if (sr == FR_OK && size != d->file_size) {
                    rc = ice_err(FR_ECORRUPT,
                                 "table %s.%s: data file %s is %" PRId64
                                 " bytes, manifest %s says %" PRId64,
                                 table->ns, table->name, local, size, mfs[i].path, d->file_size);
                    break;
                }
            }
            list->total_records += d->record_count;
            list->total_bytes += d->file_size;
            list->nfiles++;
        }
    }
    ice_strset_free(&seen);
    ice_arena_free(scratch);
    if (rc < 0) {
        char why[1024];
        snprintf(why, sizeof why, "%s", fr_ice_errmsg());
        fr_ice_file_list_free(list);
        ice_err(rc, "%s", why);
    }
    return rc;
}

void fr_ice_file_list_free(struct fr_ice_file_list *list)
{
    if (list) {
        ice_arena_free(list->arena);
        memset(list, 0, sizeof *list);
    }
}

int fr_ice_snapshot_at(const struct fr_ice_table *table, int64_t timestamp_ms, int64_t *snapshot_id)
{
    const struct ice_meta *m = table->meta;
    int64_t best = -1, best_ts = INT64_MIN;
    /* the snapshot log says which snapshot was current from when */
    for (uint32_t i = 0; i < m->nsnapshot_log; i++) {
        const struct ice_log_entry *e = &m->snapshot_log[i];
        if (e->timestamp_ms <= timestamp_ms && e->timestamp_ms >= best_ts &&
            ice_meta_snapshot(m, e->snapshot_id)) {
            best = e->snapshot_id;
            best_ts = e->timestamp_ms;
        }
    }
    if (best < 0) {
        return ice_err(FR_ENOTFOUND, "table %s.%s: no snapshot at or before %" PRId64 " ms",
                       table->ns, table->name, timestamp_ms);
    }
    *snapshot_id = best;
    return FR_OK;
}

int fr_ice_last_epoch(const struct fr_ice_table *table, const char *pipeline_id, int64_t *epoch,
                      int64_t *snapshot_id)
{
    const struct ice_meta *m = table->meta;
    int64_t best = -1, best_snap = -1;
    for (uint32_t i = 0; i < m->nsnapshots; i++) {
        const struct fr_ice_snapshot *s = &m->snapshots[i].pub;
        const char *p = ice_summary_get(s, FR_ICE_SUMMARY_PIPELINE);
        const char *e = ice_summary_get(s, FR_ICE_SUMMARY_EPOCH);
        if (!p || !e || strcmp(p, pipeline_id) != 0) {
            continue;
        }
        char *end;
        long long v = strtoll(e, &end, 10);
        if (*end || v < 0) {
            continue;
        }
        if (v > best) {
            best = v;
            best_snap = s->snapshot_id;
        }
    }
    if (best < 0) {
        return FR_ENOTFOUND;
    }
    if (epoch) {
        *epoch = best;
    }
    if (snapshot_id) {
        *snapshot_id = best_snap;
    }
    return FR_OK;
}

int fr_ice_find_epoch(const struct fr_ice_table *table, const char *pipeline_id, int64_t epoch)
{
    int64_t last;
    int rc = fr_ice_last_epoch(table, pipeline_id, &last, NULL);
    if (rc == FR_ENOTFOUND) {
        return 0;
    }
    return rc < 0 ? rc : last >= epoch;
}
