/*
 * compact.c — compaction: bin-pack a table's small data files into files
 * of about the target size and commit each group as a replace snapshot;
 * and the conversion from src/parquet's writer statistics to an Iceberg
 * data-file descriptor, which compaction and the stream processor share.
 *
 * Plan: take the current snapshot's live files of the default spec, group
 * them by partition tuple, keep the small ones (< small_bytes, by default
 * 3/4 of the target), sort each group by size and cut bins of at most the
 * target size; a bin of at least min_inputs files is rewritten. With
 * tier_factor F >= 2 (the stream processor's policy) files up to half the
 * target are kept too and grouped by (partition, size tier): tier 0 is
 * under small_bytes, tier k >= 1 is [small_bytes F^(k-1), small_bytes F^k);
 * tier 0 is packed whenever it has min_inputs files, a higher tier only once
 * it has F. Without tiers, a merged output under small_bytes is read and
 * rewritten at every later round until it outgrows small_bytes, and outputs
 * above it are never merged again, so the live file count grows with the
 * table (the soak, docs/BENCHMARKS.md); with them a byte is rewritten about
 * once per tier and a partition holds < F files per tier plus files of at
 * least half the target (any two files under half fit in one bin).
 *
 * Rewriting a bin: every row of every input is copied,
 * columns matched by field id (then by name), columns added to the schema
 * later written as NULL, into one new Parquet file in the first input's
 * directory. Then fr_ice_rewrite commits it.
 *
 * Where: the inputs and outputs go through opts->data_io (ranged GETs in,
 * a multipart upload out, for a warehouse in S3) or are local files; the
 * table is loaded and each rewrite committed through the SQLite catalog,
 * or through a REST catalog (opts->rest, rest_maint.c).
 *
 * Concurrency: appends may land while a bin is being written. The rewrite
 * commit retries on them (it keeps every file it does not remove); if a
 * concurrent commit removed one of the bin's inputs (another compaction, an
 * overwrite) the bin is abandoned and its output deleted, so a row is never
 * lost (the inputs stay) nor duplicated (the output never lands).
 */
#include "iceberg/iceberg_int.h"
#include "iceberg/rest.h"

#include "core/clock.h"
#include "core/err.h"
#include "parquet/parquet.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------- Parquet statistics -- */

static enum fr_pq_type pq_type(enum fr_ice_type t)
{
    switch (t) {
    case FR_ICE_BOOLEAN:
        return FR_PQ_BOOL;
    case FR_ICE_INT:
        return FR_PQ_INT32;
    case FR_ICE_LONG:
        return FR_PQ_INT64;
    case FR_ICE_DOUBLE:
        return FR_PQ_DOUBLE;
    case FR_ICE_STRING:
        return FR_PQ_STRING;
    case FR_ICE_DATE:
        return FR_PQ_DATE;
    case FR_ICE_TIMESTAMP:
        return FR_PQ_TIMESTAMP_NTZ;
    case FR_ICE_TIMESTAMPTZ:
        return FR_PQ_TIMESTAMP;
    }
    return 0;
}

static int pq_bound(const struct fr_pq_value *v, uint8_t *out, size_t cap, uint32_t *len)
{
    struct fr_ice_value iv = {0};
    switch (v->type) {
    case FR_PQ_BOOL:
        iv.type = FR_ICE_BOOLEAN;
        iv.v.b = v->v.b;
        break;
    case FR_PQ_INT32:
    case FR_PQ_DATE:
        iv.type = FR_ICE_INT;
        iv.v.i32 = v->v.i32;
        break;
    case FR_PQ_INT64:
    case FR_PQ_TIMESTAMP:
    case FR_PQ_TIMESTAMP_NTZ:
        iv.type = FR_ICE_LONG;
        iv.v.i64 = v->v.i64;
        break;
    case FR_PQ_DOUBLE:
        iv.type = FR_ICE_DOUBLE;
        iv.v.f64 = v->v.f64;
        break;
    case FR_PQ_STRING:
        iv.type = FR_ICE_STRING;
        iv.v.str.ptr = v->v.str.ptr;
        iv.v.str.len = v->v.str.len;
        break;
    default:
        return FR_EINVAL;
    }
    return ice_value_bin(&iv, out, cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap, len);
}

int fr_ice_file_from_pq(const char *path, const struct fr_pq_schema *schema,
                        const struct fr_pq_file_stats *stats, struct fr_ice_data_file *file,
                        struct fr_ice_col_metrics *metrics, uint8_t *bounds, size_t bounds_cap)
{
    if (stats->ncols != schema->ncolumns) {
        return ice_err(FR_EINVAL, "data file %s: %u column stats for %u columns", path,
                       stats->ncols, schema->ncolumns);
    }
    memset(file, 0, sizeof *file);
    file->path = path;
    file->file_size = (int64_t)stats->file_bytes;
    file->record_count = (int64_t)stats->rows;
    file->metrics = metrics;
    file->nmetrics = stats->ncols;
    file->split_offsets = (const int64_t *)stats->row_group_offsets;
    file->nsplit = stats->nrow_groups;
    size_t used = 0;
    for (uint32_t i = 0; i < stats->ncols; i++) {
        const struct fr_pq_col_stats *cs = &stats->cols[i];
        struct fr_ice_col_metrics *m = &metrics[i];
        memset(m, 0, sizeof *m);
        m->field_id = schema->columns[i].field_id;
        m->column_size = (int64_t)cs->compressed_bytes;
        m->value_count = (int64_t)cs->value_count;
        m->null_count = (int64_t)cs->null_count;
        m->nan_count = schema->columns[i].type == FR_PQ_DOUBLE ? (int64_t)cs->nan_count : -1;
        if (!cs->has_bounds) {
            continue;
        }
        uint32_t len;
        int rc = pq_bound(&cs->min, bounds + used, bounds_cap - used, &len);
        if (rc < 0) {
            return ice_err(FR_ETOOBIG, "data file %s: bounds buffer too small", path);
        }
        m->lower = bounds + used;
        m->lower_len = len;
        used += len;
        rc = pq_bound(&cs->max, bounds + used, bounds_cap - used, &len);
        if (rc < 0) {
            return ice_err(FR_ETOOBIG, "data file %s: bounds buffer too small", path);
        }
        m->upper = bounds + used;
        m->upper_len = len;
        used += len;
    }
    return FR_OK;
}

/* ------------------------------------------------------------ rewriting -- */

/* Copy every row of the inputs into out_path with the table's schema. */
static int rewrite_bin(const struct fr_ice_table *t, const struct fr_ice_file *const *in,
                       uint32_t nin, const char *out_path, const struct fr_ice_compact_opts *opts,
                       struct fr_pq_file_stats *stats, struct fr_pq_schema *schema_out)
{
    uint32_t nf;
    const struct fr_ice_field *fields = fr_ice_table_fields(t, &nf);
    struct fr_pq_column *cols = calloc(nf, sizeof *cols);
    struct fr_pq_vec *vecs = calloc(nf, sizeof *vecs);
    uint8_t *all_null = NULL;
    uint32_t null_cap = 0;
    struct fr_pq_writer *writer = NULL;
    struct fr_pq_out out;
    struct fr_pq_opts popts;
    int rc = cols && vecs ? FR_OK : FR_ENOMEM;
    if (rc < 0) {
        goto cleanup;
    }
    for (uint32_t i = 0; i < nf; i++) {
        cols[i].name = fields[i].name;
        cols[i].type = pq_type(fields[i].type);
        cols[i].optional = !fields[i].required;
        cols[i].field_id = fields[i].id;
    }
    schema_out->columns = cols;
    schema_out->ncolumns = nf;
    fr_pq_opts_default(&popts);
    popts.codec = opts->uncompressed ? FR_PQ_UNCOMPRESSED : FR_PQ_ZSTD;
    if (opts->row_group_bytes) {
        popts.row_group_bytes = opts->row_group_bytes;
    }
    if (opts->page_bytes) {
        popts.page_bytes = opts->page_bytes;
    }
    if (opts->dict_max_bytes) {
        popts.dict_max_bytes = opts->dict_max_bytes;
    }
    struct fr_pq_read_opts ropts;
    fr_pq_read_opts_default(&ropts);
    if (opts->read_batch_rows) {
        ropts.batch_rows = opts->read_batch_rows;
    }
    struct fr_pq_kv kv = {"iceberg.schema", fr_ice_table_schema_json(t)};
    popts.kv = &kv;
    popts.nkv = 1;
    rc = opts->data_io ? opts->data_io->pq_out(opts->data_io->ctx, out_path, &out)
                       : fr_pq_out_file(out_path, &out);
    if (rc == FR_OK) {
        rc = fr_pq_writer_open(schema_out, &popts, &out, &writer);
    }
    if (rc < 0) {
        ice_err(rc, "table %s.%s: cannot write %s: %s", t->ns, t->name, out_path, fr_pq_errmsg());
        goto cleanup;
    }
    for (uint32_t f = 0; f < nin && rc == FR_OK; f++) {
        struct fr_pq_reader *reader = NULL;
        struct fr_pq_scan *scan = NULL;
        uint32_t proj[ICE_MAX_FIELDS];
        int32_t map[ICE_MAX_FIELDS]; /* output column -> projection index, -1: NULLs */
        uint32_t nproj = 0;
        struct fr_pq_in pin;
        rc = opts->data_io ? opts->data_io->pq_in(opts->data_io->ctx, in[f]->local_path, &pin)
                           : fr_pq_in_file(in[f]->local_path, &pin);
        if (rc == FR_OK) {
            rc = fr_pq_reader_open(&pin, &ropts, &reader);
        }
        if (rc < 0) {
            ice_err(rc, "table %s.%s: cannot read %s: %s", t->ns, t->name, in[f]->path,
                    fr_pq_errmsg());
            break;
        }
        const struct fr_pq_schema *fs = fr_pq_reader_schema(reader);
        for (uint32_t i = 0; i < nf && rc == FR_OK; i++) {
            int found = -1;
            for (uint32_t j = 0; j < fs->ncolumns && found < 0; j++) {
                if (fs->columns[j].field_id == fields[i].id) {
                    found = (int)j;
                }
            }
            for (uint32_t j = 0; j < fs->ncolumns && found < 0; j++) {
                if (fs->columns[j].field_id < 0 &&
                    strcmp(fs->columns[j].name, fields[i].name) == 0) {
                    found = (int)j;
                }
            }
            if (found >= 0 && fs->columns[found].type != cols[i].type) {
                rc = ice_err(FR_EUNSUPPORTED, "table %s.%s: %s: column %s is %s, the table says %s",
                             t->ns, t->name, in[f]->local_path, fields[i].name,
                             fr_pq_type_name(fs->columns[found].type),
                             fr_pq_type_name(cols[i].type));
            }
            if (found < 0 && fields[i].required) {
                rc = ice_err(FR_ECORRUPT, "table %s.%s: %s lacks required column %s", t->ns,
                             t->name, in[f]->local_path, fields[i].name);
            }
            map[i] = found < 0 ? -1 : (int32_t)nproj;
            if (found >= 0) {
                proj[nproj++] = (uint32_t)found;
            }
        }
        struct fr_pq_scan_opts so = {.columns = proj, .ncolumns = nproj};
        if (rc == FR_OK) {
            rc = fr_pq_scan_open(reader, &so, &scan);
        }
        const struct fr_pq_batch *batch;
        uint64_t rows = 0;
        while (rc == FR_OK && (rc = fr_pq_scan_next(scan, &batch)) == FR_OK) {
            if (batch->nrows > null_cap) {
                free(all_null);
                null_cap = batch->nrows;
                all_null = malloc(null_cap);
                if (!all_null) {
                    rc = FR_ENOMEM;
                    break;
                }
                memset(all_null, 1, null_cap);
            }
            for (uint32_t i = 0; i < nf; i++) {
                if (map[i] >= 0) {
                    vecs[i] = batch->cols[map[i]];
                } else {
                    memset(&vecs[i], 0, sizeof vecs[i]);
                    vecs[i].type = cols[i].type;
                    vecs[i].nulls = all_null;
                    /* value slots of NULL rows are ignored; point at the flags */
                    vecs[i].v.b = all_null;
                }
                vecs[i].column = i;
            }
            struct fr_pq_batch ob = {0, 0, batch->nrows, nf, vecs};
            rc = fr_pq_write_batch(writer, &ob);
            rows += batch->nrows;
        }
        if (rc == FR_EEOF) {
            rc = FR_OK;
        }
        if (rc == FR_OK && (int64_t)rows != in[f]->record_count) {
            rc = ice_err(FR_ECORRUPT,
                         "table %s.%s: %s holds %" PRIu64 " rows, the manifest says %" PRId64,
                         t->ns, t->name, in[f]->local_path, rows, in[f]->record_count);
        }
        if (rc < 0 && !*fr_ice_errmsg()) {
            ice_err(rc, "table %s.%s: rewriting %s: %s", t->ns, t->name, in[f]->local_path,
                    fr_pq_errmsg());
        }
        fr_pq_scan_free(scan);
        fr_pq_reader_free(reader);
    }
    if (rc == FR_OK) {
        rc = fr_pq_writer_close(writer, stats);
        if (rc < 0) {
            ice_err(rc, "table %s.%s: cannot finish %s: %s", t->ns, t->name, out_path,
                    fr_pq_errmsg());
        }
    }
cleanup:
    fr_pq_writer_free(writer);
    free(vecs);
    free(all_null);
    if (rc < 0) {
        free(cols);
        schema_out->columns = NULL;
    }
    return rc;
}

/* ------------------------------------------------------------ planning -- */

static int part_cmp(const struct fr_ice_file *a, const struct fr_ice_file *b)
{
    if (a->npartition != b->npartition) {
        return a->npartition < b->npartition ? -1 : 1;
    }
    for (uint32_t i = 0; i < a->npartition; i++) {
        const struct fr_ice_value *x = &a->partition[i], *y = &b->partition[i];
        if (x->is_null != y->is_null) {
            return x->is_null ? -1 : 1;
        }
        if (!x->is_null) {
            int c = ice_value_cmp(x, y);
            if (c) {
                return c;
            }
        }
    }
    return 0;
}

/* A file the plan may rewrite, with its size tier (0 without tiers). */
struct cand {
    const struct fr_ice_file *f;
    uint32_t tier;
};

static uint32_t tier_of(int64_t size, const struct fr_ice_compact_opts *opts)
{
    if (opts->tier_factor < 2 || size < opts->small_bytes) {
        return 0;
    }
    uint32_t k = 1;
    for (int64_t lo = opts->small_bytes; size / opts->tier_factor >= lo; k++) {
        lo *= opts->tier_factor; /* <= size: no overflow */
    }
    return k;
}

static int by_part_tier_size(const void *pa, const void *pb)
{
    const struct cand *a = pa, *b = pb;
    int c = part_cmp(a->f, b->f);
    if (c) {
        return c;
    }
    if (a->tier != b->tier) {
        return a->tier < b->tier ? -1 : 1;
    }
    return a->f->file_size < b->f->file_size ? -1 : a->f->file_size > b->f->file_size;
}

void fr_ice_compact_opts_stream(int64_t target_bytes, struct fr_ice_compact_opts *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->target_bytes = target_bytes;
    opts->small_bytes = target_bytes / 64;
    opts->tier_factor = 4;
}

static int compact_bin(struct fr_ice_catalog *cat, const struct fr_ice_table *t,
                       const struct fr_ice_file *const *bin, uint32_t n,
                       const struct fr_ice_compact_opts *opts, struct fr_ice_compact_stats *st)
{
    char out_path[ICE_PATH_MAX], uuid[37];
    const char *dir_end = strrchr(bin[0]->local_path, '/');
    ice_uuid(uuid);
    snprintf(out_path, sizeof out_path, "%.*s/compacted-%s.parquet",
             (int)(dir_end - bin[0]->local_path), bin[0]->local_path, uuid);
    struct fr_pq_file_stats pst = {0};
    struct fr_pq_schema schema = {0};
    int rc = rewrite_bin(t, bin, n, out_path, opts, &pst, &schema);
    if (rc < 0) {
        return rc;
    }
    struct fr_ice_col_metrics *metrics = calloc(schema.ncolumns + 1, sizeof *metrics);
    size_t bcap = 0;
    for (uint32_t i = 0; i < pst.ncols; i++) {
        bcap += 32 + (pst.cols[i].min.type == FR_PQ_STRING ? pst.cols[i].min.v.str.len : 0) +
                (pst.cols[i].max.type == FR_PQ_STRING ? pst.cols[i].max.v.str.len : 0);
    }
    uint8_t *bounds = malloc(bcap + 1);
    const char **remove = calloc(n, sizeof *remove);
    struct fr_ice_data_file df;
    rc = metrics && bounds && remove ? FR_OK : FR_ENOMEM;
    if (rc == FR_OK) {
        rc = fr_ice_file_from_pq(out_path, &schema, &pst, &df, metrics, bounds, bcap);
    }
    if (rc == FR_OK) {
        df.partition = bin[0]->partition;
        df.npartition = bin[0]->npartition;
        for (uint32_t i = 0; i < n; i++) {
            remove[i] = bin[i]->path;
        }
        rc = opts->rest ? fr_ice_rest_rewrite(opts->rest, cat, t->ns, t->name, remove, n, &df, 1)
                        : fr_ice_rewrite(cat, t->ns, t->name, remove, n, &df, 1, NULL);
    }
    if (rc == FR_OK) {
        st->groups++;
        st->inputs += n;
        for (uint32_t i = 0; i < n; i++) {
            st->bytes_in += bin[i]->file_size;
        }
        st->rows += (int64_t)pst.rows;
    } else {
        if (rc != FR_EUNKNOWN) { /* unknown: it may be in the table */
            ice_io_remove(&cat->io, out_path);
        }
        if (rc == FR_ECONFLICT) {
            st->conflicts++;
            rc = FR_OK;
        }
    }
    free(remove);
    free(bounds);
    free(metrics);
    free((void *)schema.columns);
    fr_pq_file_stats_free(&pst);
    return rc;
}

/* The table as its catalog has it now: the SQLite row, or the REST catalog's. */
static int compact_load(struct fr_ice_catalog *cat, const struct fr_ice_compact_opts *opts,
                        const char *ns, const char *name, struct fr_ice_table **t)
{
    return opts->rest ? fr_ice_rest_table(opts->rest, cat, ns, name, t)
                      : fr_ice_table_load(cat, ns, name, t);
}

int fr_ice_compact(struct fr_ice_catalog *cat, const char *ns, const char *name,
                   const struct fr_ice_compact_opts *opts_in, struct fr_ice_compact_stats *stats)
{
    struct fr_ice_compact_opts opts = opts_in ? *opts_in : (struct fr_ice_compact_opts){0};
    struct fr_ice_compact_stats local;
    struct fr_ice_table *t = NULL;
    struct fr_ice_file_list list = {0}, after = {0};
    const struct fr_ice_file **small = NULL;
    struct cand *cands = NULL;
    if (opts.target_bytes <= 0) {
        opts.target_bytes = INT64_C(128) << 20;
    }
    if (opts.small_bytes <= 0 || opts.small_bytes > opts.target_bytes / 4 * 3) {
        opts.small_bytes = opts.target_bytes / 4 * 3;
    }
    if (opts.min_inputs < 2) {
        opts.min_inputs = 2;
    }
    if (opts.tier_factor > 1024) {
        opts.tier_factor = 1024;
    }
    /* With tiers, files from half the target up are final: two of them
     * would not fit in one bin, so they could only pile up as inputs. */
    int64_t limit = opts.small_bytes;
    if (opts.tier_factor >= 2 && opts.target_bytes / 2 > limit) {
        limit = opts.target_bytes / 2;
    }
    if (!stats) {
        stats = &local;
    }
    memset(stats, 0, sizeof *stats);
    ice_err_clear();
    /* Without local files the inputs are checked as they are read (a
     * missing object fails its bin) rather than with a HEAD each here. */
    bool check_files = !opts.data_io;
    int rc = compact_load(cat, &opts, ns, name, &t);
    if (rc == FR_OK) {
        rc = fr_ice_files(cat, t, -1, check_files, &list);
    }
    if (rc < 0) {
        goto cleanup;
    }
    stats->files_before = (uint32_t)list.nfiles;
    stats->bytes_before = list.total_bytes;
    size_t nsmall = 0;
    small = calloc(list.nfiles + 1, sizeof *small);
    cands = calloc(list.nfiles + 1, sizeof *cands);
    if (!small || !cands) {
        rc = FR_ENOMEM;
        goto cleanup;
    }
    for (size_t i = 0; i < list.nfiles; i++) {
        if (list.files[i].spec_id == t->meta->default_spec_id && list.files[i].file_size < limit) {
            cands[nsmall].f = &list.files[i];
            cands[nsmall].tier = tier_of(list.files[i].file_size, &opts);
            nsmall++;
        }
    }
    qsort(cands, nsmall, sizeof *cands, by_part_tier_size);
    for (size_t i = 0; i < nsmall; i++) {
        small[i] = cands[i].f;
    }
    /* Runs of one partition and tier; bins cut inside a full run. */
    for (size_t r = 0; r < nsmall && rc == FR_OK;) {
        size_t end = r;
        while (end < nsmall && part_cmp(small[r], small[end]) == 0 &&
               cands[end].tier == cands[r].tier) {
            end++;
        }
        size_t need = opts.min_inputs;
        if (cands[r].tier > 0 && opts.tier_factor > need) {
            need = opts.tier_factor;
        }
        for (size_t i = r; end - r >= need && i < end && rc == FR_OK;) {
            size_t j = i;
            int64_t bytes = 0;
            while (j < end && (j == i || bytes + small[j]->file_size <= opts.target_bytes)) {
                bytes += small[j]->file_size;
                j++;
            }
            if (opts.deadline_ms > 0 && fr_mono_ms() >= opts.deadline_ms &&
                !(opts.first_bin_always && stats->groups == 0)) {
                stats->deferred++;
            } else if (j - i >= opts.min_inputs) {
                rc = compact_bin(cat, t, small + i, (uint32_t)(j - i), &opts, stats);
            }
            i = j;
        }
        r = end;
    }
    if (rc < 0) {
        goto cleanup;
    }
    fr_ice_table_free(t);
    t = NULL;
    rc = compact_load(cat, &opts, ns, name, &t);
    if (rc == FR_OK) {
        rc = fr_ice_files(cat, t, -1, false, &after);
    }
    if (rc == FR_OK) {
        stats->files_after = (uint32_t)after.nfiles;
        stats->bytes_after = after.total_bytes;
    }
cleanup:
    free(cands);
    free(small);
    fr_ice_file_list_free(&list);
    fr_ice_file_list_free(&after);
    fr_ice_table_free(t);
    return rc;
}
