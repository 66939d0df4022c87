/*
 * lake.c — see lake.h. The Iceberg library speaks local paths and maps
 * every location under the catalog's warehouse URI onto its warehouse
 * directory; with an S3 warehouse the io ops (src/objstore/s3_io.c) turn
 * those paths into keys, so the only difference here is who opens the
 * catalog and how a data file is written.
 *
 * Every command opens the lake here (fr_lake_open): with lake.catalog_uri
 * the catalog handle is files_only (no local catalog.db is opened or
 * created) and the tables are listed and loaded through the REST client.
 * fr_lake_require is the refuse-early check of ADR 0044: from the
 * configuration alone, before anything is opened.
 */
#include "pipeline/lake.h"

#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"
#include "core/fsutil.h"
#include "iceberg/rest.h"
#include "objstore/s3_io.h"
#include "pipeline/maint.h"
#include "pipeline/tables.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Attempts of an epoch commit after lost races, through the SQLite
 * catalog (commit.c's backoff) or a REST one (below). Every lost race is
 * another writer's landed commit, so the group as a whole moves; with six
 * shards and the finalizer on a loaded machine 32 ran out (the shard then
 * stopped and was restarted), so a writer keeps its place longer: 256
 * attempts with backoff capped at 320 ms (commit.c) and 640 ms (REST): at
 * most about 1 and 2.5 minutes of waiting. */
#define LAKE_RACE_ATTEMPTS 256

static int lake_open_rest(const struct fr_conf *conf, struct fr_lake *lake)
{
    if (!conf->lake_catalog_uri || !conf->lake_catalog_uri[0]) {
        return FR_OK;
    }
    struct fr_ice_rest_opts ropts = {.uri = conf->lake_catalog_uri,
                                     .token = conf->lake_catalog_token};
    int rc = fr_ice_rest_open(&ropts, &lake->rest);
    if (rc < 0) {
        fr_error("lake", "REST catalog %s (lake.catalog_uri): %s (%s) %s", conf->lake_catalog_uri,
                 fr_strerror(rc), fr_err_name(rc), fr_ice_errmsg());
        lake->rest = NULL;
    }
    return rc;
}

static int lake_rest_uri(const struct fr_conf *conf)
{
    return conf->lake_catalog_uri && conf->lake_catalog_uri[0];
}

/* The catalog handle: SQLite, or files_only when the tables are in a REST
 * catalog (no local catalog.db is opened or created). */
static int lake_open_cat(const struct fr_conf *conf, struct fr_lake *lake)
{
    /* LAKE_RACE_ATTEMPTS after lost races (with backoff, commit.c): in the
     * scale-out mode shards and the finalizer commit to the same tables. */
    struct fr_ice_catalog_opts copts = {.data_dir = conf->general_data_dir,
                                        .max_retries = LAKE_RACE_ATTEMPTS,
                                        .files_only = lake_rest_uri(conf)};
    const char *uri = conf->lake_warehouse;
    int rc;
    if (!uri || !uri[0]) {
        rc = fr_ice_catalog_open(&copts, &lake->cat);
        if (rc < 0) {
            fr_error("lake", "catalog: %s (%s) %s", fr_strerror(rc), fr_err_name(rc),
                     fr_ice_errmsg());
        }
        return rc;
    }
    if (strncmp(uri, "s3://", 5) != 0) {
        fr_error("lake", "lake.warehouse must be empty (local) or s3://bucket/prefix, not \"%s\"",
                 uri);
        return FR_ECONFIG;
    }
    char err[512] = "";
    rc = fr_s3_warehouse_open(conf, uri, &copts, &lake->wh, &lake->cat, err, sizeof err);
    if (rc < 0) {
        fr_error("lake", "warehouse %s: %s (%s) %s", uri, fr_strerror(rc), fr_err_name(rc), err);
        lake->wh = NULL;
        lake->cat = NULL;
    }
    return rc;
}

int fr_lake_open(const struct fr_conf *conf, struct fr_lake *lake)
{
    memset(lake, 0, sizeof *lake);
    int rc = lake_open_cat(conf, lake);
    if (rc == FR_OK) {
        rc = lake_open_rest(conf, lake);
    }
    if (rc < 0) {
        fr_lake_close(lake);
    }
    return rc;
}

int fr_lake_table(const struct fr_lake *lake, const char *name, struct fr_ice_table **table)
{
    return lake->rest ? fr_ice_rest_table(lake->rest, lake->cat, FR_NS, name, table)
                      : fr_ice_table_load(lake->cat, FR_NS, name, table);
}

int fr_lake_list(const struct fr_lake *lake, struct fr_ice_ident **idents, size_t *count)
{
    return lake->rest ? fr_ice_rest_list_tables(lake->rest, idents, count)
                      : fr_ice_list_tables(lake->cat, idents, count);
}

const char *fr_lake_catalog_name(const struct fr_conf *conf, char *out, size_t cap)
{
    if (lake_rest_uri(conf)) {
        snprintf(out, cap, "%s", conf->lake_catalog_uri);
    } else {
        snprintf(out, cap, "%s/lake/catalog.db", conf->general_data_dir);
    }
    return out;
}

int fr_lake_maybe_exists(const struct fr_conf *conf)
{
    if (lake_rest_uri(conf)) {
        return 1;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/lake/catalog.db", conf->general_data_dir);
    return access(path, F_OK) == 0;
}

/* Whether conf's topology has cap; when not, the setting that took it
 * away, its value and the topology's name. */
static int lake_has(const struct fr_conf *conf, enum fr_lake_cap cap, const char **setting,
                    const char **value, const char **topology)
{
    switch (cap) {
    case FR_LAKE_CAP_SQLITE_CATALOG:
        *setting = "lake.catalog_uri";
        *value = conf->lake_catalog_uri;
        *topology = "a REST catalog";
        return !lake_rest_uri(conf);
    case FR_LAKE_CAP_LOCAL_WAREHOUSE:
        *setting = "lake.warehouse";
        *value = conf->lake_warehouse;
        *topology = "an S3 warehouse";
        return !conf->lake_warehouse || !conf->lake_warehouse[0];
    }
    *setting = *value = *topology = "?";
    return 0;
}

int fr_lake_require(const struct fr_conf *conf, const char *cmd, const struct fr_lake_need *needs,
                    uint32_t nneeds)
{
    for (uint32_t i = 0; i < nneeds; i++) {
        const char *setting, *value, *topology;
        if (!lake_has(conf, needs[i].cap, &setting, &value, &topology)) {
            fprintf(stderr, "freshet %s: not yet supported with %s (%s=%s): %s\n", cmd, topology,
                    setting, value ? value : "", needs[i].why);
            return 2;
        }
    }
    return 0;
}

void fr_lake_close(struct fr_lake *lake)
{
    fr_ice_rest_close(lake->rest);
    fr_ice_catalog_close(lake->cat); /* before the io it uses */
    fr_s3_warehouse_close(lake->wh);
    memset(lake, 0, sizeof *lake);
}

int fr_lake_remote(const struct fr_lake *lake) { return lake && lake->wh != NULL; }

int fr_lake_pq_out(const struct fr_lake *lake, const char *path, struct fr_pq_out *out)
{
    if (fr_lake_remote(lake)) {
        return fr_s3_io_pq_out(fr_s3_warehouse_io(lake->wh), path, out);
    }
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = 0;
        int rc = fr_fs_mkdirs(dir, 0755);
        if (rc < 0) {
            return rc;
        }
    }
    /* The processor's catalog defers its fsyncs (ADR 0029): the data file
     * joins them, and the catalog flushes them all before it names it. */
    struct fr_syncset *set = lake && lake->cat ? fr_ice_catalog_syncset(lake->cat) : NULL;
    return set ? fr_pq_out_file_deferred(path, set, out) : fr_pq_out_file(path, out);
}

int fr_lake_pq_in(const struct fr_lake *lake, const char *path, struct fr_pq_in *in)
{
    if (fr_lake_remote(lake)) {
        return fr_s3_io_pq_in(fr_s3_warehouse_io(lake->wh), path, in);
    }
    return fr_pq_in_file(path, in);
}

/* ---------------------------------------------------------- maintenance -- */

static int dio_in(void *ctx, const char *path, struct fr_pq_in *in)
{
    return fr_lake_pq_in(ctx, path, in);
}

static int dio_out(void *ctx, const char *path, struct fr_pq_out *out)
{
    return fr_lake_pq_out(ctx, path, out);
}

int fr_lake_compact(struct fr_lake *lake, const char *ns, const char *name,
                    const struct fr_ice_compact_opts *opts, struct fr_ice_compact_stats *stats)
{
    struct fr_ice_compact_opts o = *opts;
    /* A local warehouse keeps compaction's own local files (fsynced at
     * close, not deferred to the processor's barrier). */
    struct fr_ice_data_io dio = {dio_in, dio_out, lake};
    o.data_io = fr_lake_remote(lake) ? &dio : NULL;
    o.rest = lake->rest;
    return fr_ice_compact(lake->cat, ns, name, &o, stats);
}

int fr_lake_expire(struct fr_lake *lake, const char *ns, const char *name, int64_t older_than_ms,
                   uint32_t retain_last, struct fr_ice_expire_stats *stats)
{
    return lake->rest ? fr_ice_rest_expire(lake->rest, lake->cat, ns, name, older_than_ms,
                                           retain_last, stats)
                      : fr_ice_expire(lake->cat, ns, name, older_than_ms, retain_last, stats);
}

int fr_lake_remove_orphans(struct fr_lake *lake, const char *ns, const char *name,
                           int64_t older_than_ms, bool dry_run, struct fr_ice_orphan_stats *stats)
{
    return lake->rest ? fr_ice_rest_remove_orphans(lake->rest, lake->cat, ns, name, older_than_ms,
                                                   dry_run, stats)
                      : fr_ice_remove_orphans(lake->cat, ns, name, older_than_ms, dry_run, stats);
}

int fr_lake_list_tables(struct fr_lake *lake, const char *ns, struct fr_ice_ident **idents,
                        size_t *count)
{
    struct fr_ice_ident *all = NULL;
    size_t n = 0, k = 0;
    int rc = fr_lake_list(lake, &all, &n);
    if (rc < 0) {
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        if (!ns || strcmp(all[i].ns, ns) == 0) {
            all[k++] = all[i];
        }
    }
    *idents = all;
    *count = k;
    return FR_OK;
}

/* How messages name the data file at path: itself on local disk; in a
 * bucket its URI (warehouse URI + the path below the local warehouse
 * directory it maps onto), never a local path that does not exist. */
static const char *lake_file_name(const struct fr_lake *lake, const char *path, char *buf,
                                  size_t cap)
{
    const char *dir = fr_lake_remote(lake) ? fr_ice_catalog_warehouse(lake->cat) : NULL;
    size_t n = dir ? strlen(dir) : 0;
    if (!n || strncmp(path, dir, n) != 0 || path[n] != '/') {
        return path;
    }
    snprintf(buf, cap, "%s%s", fr_ice_catalog_warehouse_uri(lake->cat), path + n);
    return buf;
}

/* Compare what the footer says of each column with the manifest's metrics
 * of the file (value and null counts, bytes). FR_OK or FR_ECORRUPT with
 * the column named in err. */
static int check_metrics(const struct fr_pq_reader *r, const struct fr_ice_file *f,
                         const char *name, char *err, size_t errlen)
{
    const struct fr_pq_schema *schema = fr_pq_reader_schema(r);
    for (uint32_t k = 0; k < f->nmetrics; k++) {
        const struct fr_ice_col_metrics *m = &f->metrics[k];
        for (uint32_t c = 0; c < schema->ncolumns; c++) {
            if (schema->columns[c].field_id != m->field_id) {
                continue;
            }
            uint64_t values = 0, nulls = 0, bytes = 0;
            bool have_nulls = true;
            for (uint32_t g = 0; g < fr_pq_reader_row_groups(r); g++) {
                struct fr_pq_chunk_info ci;
                if (fr_pq_reader_chunk(r, g, c, &ci) < 0) {
                    snprintf(err, errlen, "%s: %s", name, fr_pq_errmsg());
                    return FR_ECORRUPT;
                }
                values += ci.rows;
                nulls += ci.null_count;
                bytes += ci.compressed_bytes;
                have_nulls &= ci.has_null_count;
            }
            const char *what = NULL;
            int64_t manifest = 0;
            uint64_t footer = 0;
            if (m->value_count >= 0 && (uint64_t)m->value_count != values) {
                what = "values", manifest = m->value_count, footer = values;
            } else if (have_nulls && m->null_count >= 0 && (uint64_t)m->null_count != nulls) {
                what = "nulls", manifest = m->null_count, footer = nulls;
            } else if (m->column_size >= 0 && (uint64_t)m->column_size != bytes) {
                what = "bytes", manifest = m->column_size, footer = bytes;
            }
            if (what) {
                snprintf(err, errlen,
                         "%s: column %s (field %d) holds %" PRIu64 " %s, the manifest says %" PRId64,
                         name, schema->columns[c].name, (int)m->field_id, footer, what, manifest);
                return FR_ECORRUPT;
            }
        }
    }
    return FR_OK;
}

int fr_lake_check_file(const struct fr_lake *lake, const struct fr_ice_file *f,
                       const struct fr_pq_read_opts *ropts, struct fr_lake_page_check *out,
                       char *err, size_t errlen)
{
    struct fr_pq_reader *r = NULL;
    struct fr_pq_in in;
    char name_buf[4200];
    const char *name = lake_file_name(lake, f->local_path, name_buf, sizeof name_buf);
    memset(out, 0, sizeof *out);
    err[0] = 0;
    int rc = fr_lake_pq_in(lake, f->local_path, &in);
    uint64_t bytes = rc == FR_OK ? in.size : 0;
    if (rc == FR_OK) {
        rc = fr_pq_reader_open(&in, ropts, &r);
    }
    if (rc == FR_OK) {
        struct fr_pq_page_check pc;
        rc = fr_pq_reader_check_pages(r, &pc);
        out->pages = pc.pages;
        out->with_crc = pc.with_crc;
    }
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s", name, fr_pq_errmsg());
        goto cleanup;
    }
    uint64_t rows = fr_pq_reader_rows(r);
    if (rows != (uint64_t)f->record_count) {
        snprintf(err, errlen, "%s holds %" PRIu64 " rows, its manifest says %" PRId64, name, rows,
                 f->record_count);
        rc = FR_ECORRUPT;
    } else if (bytes != (uint64_t)f->file_size) {
        snprintf(err, errlen, "%s is %" PRIu64 " bytes, its manifest says %" PRId64, name, bytes,
                 f->file_size);
        rc = FR_ECORRUPT;
    } else {
        rc = check_metrics(r, f, name, err, errlen);
    }

cleanup:
    fr_pq_reader_free(r);
    return rc;
}

int fr_lake_scan_file(const struct fr_lake *lake, const char *path,
                      const struct fr_pq_read_opts *ropts, const struct fr_lake_col *cols,
                      uint32_t ncols, fr_lake_batch_fn fn, void *arg, char *err, size_t errlen)
{
    struct fr_pq_reader *r = NULL;
    struct fr_pq_scan *scan = NULL;
    struct fr_pq_in in;
    char name_buf[4200];
    const char *name = lake_file_name(lake, path, name_buf, sizeof name_buf);
    uint8_t *nulls = NULL;
    uint32_t nulls_cap = 0;
    err[0] = 0;
    if (ncols > 16) {
        snprintf(err, errlen, "%s: more than 16 columns asked", name);
        return FR_EINVAL;
    }
    int rc = fr_lake_pq_in(lake, path, &in);
    if (rc == FR_OK) {
        rc = fr_pq_reader_open(&in, ropts, &r);
    }
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s", name, fr_pq_errmsg());
        return rc;
    }
    uint32_t idx[16], nidx = 0;
    int at[16]; /* cols[c] is scan column at[c], or -1: an optional column the file lacks */
    const struct fr_pq_schema *schema = fr_pq_reader_schema(r);
    for (uint32_t c = 0; c < ncols; c++) {
        int optional = cols[c].name[0] == '?';
        const char *cname = cols[c].name + optional;
        int ci = fr_pq_reader_column(r, cname);
        if (ci < 0 && optional) {
            at[c] = -1;
            continue;
        }
        if (ci < 0 || schema->columns[ci].type != cols[c].type) {
            snprintf(err, errlen, "%s: no column %s of type %s", name, cname,
                     fr_pq_type_name(cols[c].type));
            rc = FR_ECORRUPT;
            goto cleanup;
        }
        at[c] = (int)nidx;
        idx[nidx++] = (uint32_t)ci;
    }
    struct fr_pq_scan_opts so = {idx, nidx, NULL, 0};
    rc = fr_pq_scan_open(r, &so, &scan);
    const struct fr_pq_batch *b;
    while (rc == FR_OK && (rc = fr_pq_scan_next(scan, &b)) == FR_OK) {
        struct fr_pq_vec vecs[16];
        struct fr_pq_batch full = *b;
        if (nidx < ncols) { /* absent optional columns read as nulls */
            if (b->nrows > nulls_cap) {
                uint8_t *bigger = realloc(nulls, b->nrows);
                if (!bigger) {
                    rc = FR_ENOMEM;
                    goto cleanup;
                }
                nulls = bigger;
                nulls_cap = b->nrows;
                memset(nulls, 1, nulls_cap);
            }
            for (uint32_t c = 0; c < ncols; c++) {
                if (at[c] >= 0) {
                    vecs[c] = b->cols[at[c]];
                } else {
                    memset(&vecs[c], 0, sizeof vecs[c]);
                    vecs[c].type = cols[c].type;
                    vecs[c].nulls = nulls;
                    vecs[c].v.b = nulls; /* never read: every row is null */
                }
            }
            full.ncols = ncols;
            full.cols = vecs;
        }
        rc = fn(arg, &full);
        if (rc != FR_OK) {
            goto cleanup; /* fn's own code: no reader message */
        }
    }
    if (rc == FR_EEOF) {
        rc = FR_OK;
    } else if (rc < 0) {
        snprintf(err, errlen, "%s: %s", name, fr_pq_errmsg());
    }

cleanup:
    free(nulls);
    fr_pq_scan_free(scan);
    fr_pq_reader_free(r);
    return rc;
}

/* Whether the epoch marker of info found in table is this commit's: the
 * same source offsets (the same range gives the same rows) and, with
 * enrichment, the same enrichment state (lookup answers are not a function
 * of the range; ADR 0064). 1 yes, 0 no (another owner of the pipeline
 * committed the epoch: fencing), < 0 error. */
static int landed_as_ours(const struct fr_lake *lake, const char *table,
                          const struct fr_ice_commit_info *info)
{
    struct fr_ice_table *t = NULL;
    int rc = fr_lake_table(lake, table, &t);
    if (rc < 0) {
        return rc;
    }
    const struct fr_ice_snapshot *m = fr_maint_marker(t, info->pipeline_id, info->epoch);
    const char *off = m ? fr_maint_summary(m, FR_ICE_SUMMARY_OFFSETS) : NULL;
    int ours = off && info->source_offsets && strcmp(off, info->source_offsets) == 0;
    for (uint32_t i = 0; ours && i < info->nprops; i++) {
        if (strcmp(info->props[i].key, FR_SUMMARY_ENRICH_STATE) == 0) {
            const char *fp = fr_maint_summary(m, FR_SUMMARY_ENRICH_STATE);
            ours = fp && strcmp(fp, info->props[i].value) == 0;
        }
    }
    fr_ice_table_free(t);
    return ours;
}

int fr_lake_commit_rest(struct fr_lake *lake, const struct fr_lake_append *apps, uint32_t napps,
                        const struct fr_ice_commit_info *info, const char *uri)
{
    if (napps > FR_LAKE_MAX_APPENDS) {
        return FR_EINVAL;
    }
    /* A lost race (another writer moved a table: the scale-out mode's
     * shards and finalizer all commit to bronze, silver, ...) is retried
     * like the SQLite catalog's (commit.c): up to LAKE_RACE_ATTEMPTS with
     * jittered, doubling backoff. An unknown outcome found not to have
     * landed (FR_EABORTED) is retried only a few times. */
    int rc = FR_EABORTED, aborted = 0;
    for (int attempt = 0; attempt < LAKE_RACE_ATTEMPTS &&
                          (rc == FR_EREQUIREMENT || (rc == FR_EABORTED && aborted++ < 4));
         attempt++) {
        if (attempt) {
            fr_sleep_backoff(attempt, 5, 7); /* 5-10 ms, doubling to 320-640 ms */
        }
        struct fr_buf load, staged[FR_LAKE_MAX_APPENDS];
        struct fr_ice_rest_change changes[FR_LAKE_MAX_APPENDS];
        uint32_t n = 0;
        fr_buf_init(&load, (size_t)64 << 20);
        rc = FR_OK;
        for (uint32_t a = 0; rc == FR_OK && a < napps; a++) {
            fr_buf_reset(&load);
            fr_buf_init(&staged[n], (size_t)64 << 20);
            rc = fr_ice_rest_load_table(lake->rest, FR_NS, apps[a].table, &load);
            if (rc == FR_OK) {
                rc = fr_ice_rest_stage_append(lake->cat, FR_NS, apps[a].table,
                                              (const char *)load.data, load.len, apps[a].files,
                                              apps[a].nfiles, info, &staged[n]);
            }
            changes[n] = (struct fr_ice_rest_change){FR_NS, apps[a].table,
                                                     (const char *)staged[n].data, staged[n].len};
            n++;
        }
        int landed = 0;
        if (rc == FR_EEXIST) {
            landed = 1; /* a lost answer's commit landed after all */
            rc = FR_OK;
        } else if (rc == FR_OK) {
            rc = fr_ice_rest_commit_epoch(lake->rest, changes, n, info->pipeline_id, info->epoch,
                                          &landed);
        }
        if (rc < 0) {
            fr_warn("process", "epoch %" PRId64 ": REST commit attempt %d: %s (%s) %s",
                    info->epoch, attempt + 1, fr_strerror(rc), fr_err_name(rc), fr_ice_errmsg());
        }
        for (uint32_t k = 0; k < n; k++) {
            fr_buf_free(&staged[k]);
        }
        fr_buf_free(&load);
        if (rc == FR_OK && landed == 1 && napps > 0) {
            /* Landed: this commit, or another owner's of the same epoch
             * (scale-out: a zombie and its successor)? */
            int ours = landed_as_ours(lake, apps[0].table, info);
            if (ours == 1) {
                return FR_OK;
            }
            if (ours == 0) {
                fr_error("process",
                         "epoch %" PRId64 " was already committed by another owner of pipeline "
                         "%s with other offsets (FR_EEXIST): stopping without committing",
                         info->epoch, info->pipeline_id);
                return FR_EEXIST;
            }
            rc = ours;
        }
    }
    fr_error("process", "epoch %" PRId64 ": commit through %s failed: %s (%s) %s", info->epoch,
             uri, fr_strerror(rc), fr_err_name(rc), fr_ice_errmsg());
    return rc < 0 ? rc : FR_EUNKNOWN;
}
