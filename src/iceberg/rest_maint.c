/*
 * rest_maint.c — table maintenance through an Iceberg REST catalog: the
 * rewrite that compaction commits, snapshot expiry and orphan removal, for
 * tables whose catalog is `freshet serve` (or any REST catalog) and whose
 * warehouse this process shares (local or S3, through cat's io).
 *
 * Each is a compare-and-swap on the table's main branch, as the library's
 * own commits are against the SQLite row: the change carries
 * assert-table-uuid and assert-ref-snapshot-id main = the version it was
 * made from, so a shard's append that lands first makes it 409, and it is
 * made again from the new version. Appends are never lost: a rewrite keeps
 * every file it does not remove, and one whose input another commit
 * removed is abandoned (FR_ECONFLICT).
 *
 *   rewrite:  LOAD ─► STAGE (manifests, list) ─► COMMIT ─200─► done
 *                       │ input gone                 ├─409─► LOAD again (backoff)
 *                       ▼                            └─5xx/lost─► LOAD: our file live?
 *                   FR_ECONFLICT                         yes: done; no: again;
 *                                                        LOAD failed: FR_EUNKNOWN
 *   expire:   LOAD ─► plan (fr_ice_expire's rules) ─► COMMIT remove-snapshots
 *             ─200─► delete the files only expired snapshots reached.
 *             Files are deleted only after a commit known to have landed.
 *
 * A staged attempt that lost its race leaves its manifests behind: they
 * are orphans, removed after maintenance.orphans_after_s like any other.
 * One thread at a time per rest client and catalog (as the rest of
 * src/iceberg).
 */
#include "iceberg/iceberg_int.h"
#include "iceberg/rest.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/err.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAINT_ATTEMPTS 16          /* per rewrite or expiry, after lost races */
#define MAINT_BODY_CAP (64u << 20) /* one LoadTableResult */

/* Attempt attempt: back off after a lost race, then the table as the
 * catalog has it now into load, change emptied. */
static int load_again(struct fr_ice_rest *rest, const char *ns, const char *name, int attempt,
                      struct fr_buf *load, struct fr_buf *change)
{
    if (attempt) {
        fr_sleep_backoff(attempt, 10, 6); /* 10-20 ms, doubling to 320-640 ms */
    }
    fr_buf_reset(load);
    fr_buf_reset(change);
    return fr_ice_rest_load_table(rest, ns, name, load);
}

/* 1 when path (a URI as in the manifest, or its local path) is a live data
 * file of ns.name now, 0 when not, < 0 when the table cannot be read. */
static int file_live(struct fr_ice_rest *rest, struct fr_ice_catalog *cat, const char *ns,
                     const char *name, const char *path)
{
    struct fr_ice_table *t = NULL;
    struct fr_ice_file_list list = {0};
    int rc = fr_ice_rest_table(rest, cat, ns, name, &t);
    if (rc == FR_OK) {
        rc = fr_ice_files(cat, t, -1, false, &list);
    }
    int live = 0;
    for (size_t i = 0; rc == FR_OK && i < list.nfiles && !live; i++) {
        live = strcmp(list.files[i].path, path) == 0 || strcmp(list.files[i].local_path, path) == 0;
    }
    fr_ice_file_list_free(&list);
    fr_ice_table_free(t);
    return rc < 0 ? rc : live;
}

int fr_ice_rest_rewrite(struct fr_ice_rest *rest, struct fr_ice_catalog *cat, const char *ns,
                        const char *name, const char *const *remove_paths, uint32_t nremove,
                        const struct fr_ice_data_file *files, uint32_t nfiles)
{
    ice_err_clear();
    if (nremove == 0 || !remove_paths || nfiles == 0) {
        return ice_err(FR_EINVAL, "table %s.%s: a rewrite adds and removes files", ns, name);
    }
    struct fr_buf load, change;
    fr_buf_init(&load, MAINT_BODY_CAP);
    fr_buf_init(&change, MAINT_BODY_CAP);
    struct ice_rest_stage_in in = {files, nfiles, remove_paths, nremove, NULL, false};
    int rc = FR_OK;
    bool unknown = false; /* an attempt's outcome was not known at once */
    for (int attempt = 0; attempt < MAINT_ATTEMPTS; attempt++) {
        rc = load_again(rest, ns, name, attempt, &load, &change);
        if (rc == FR_OK) {
            rc = ice_rest_stage(cat, ns, name, (const char *)load.data, load.len, &in, &change);
        }
        if (rc == FR_ECONFLICT && unknown) {
            /* inputs gone after an unknown outcome: ours may be what took
             * them (or the table cannot be read): never delete the output */
            int live = file_live(rest, cat, ns, name, files[0].path);
            if (live != 0) {
                rc = live == 1 ? FR_OK : FR_EUNKNOWN;
                break;
            }
        }
        if (rc < 0) {
            break; /* FR_ECONFLICT: an input is gone; or the catalog's error */
        }
        struct fr_ice_rest_change ch = {ns, name, (const char *)change.data, change.len};
        rc = fr_ice_rest_commit_table(rest, &ch, NULL);
        if (rc == FR_EREQUIREMENT) {
            continue; /* another commit moved main first */
        }
        if (rc != FR_EUNKNOWN) {
            break;
        }
        int live = file_live(rest, cat, ns, name, files[0].path);
        if (live < 0) {
            rc = ice_err(FR_EUNKNOWN,
                         "table %s.%s: the rewrite's outcome is unknown (the catalog did not "
                         "answer, then could not be read): its output stays for orphan removal",
                         ns, name);
            break;
        }
        if (live) {
            rc = FR_OK;
            break;
        }
        unknown = true;
    }
    if (rc == FR_EREQUIREMENT) {
        rc = ice_err(FR_ECONFLICT, "table %s.%s: the rewrite lost the race %d times", ns, name,
                     MAINT_ATTEMPTS);
    }
    fr_buf_free(&load);
    fr_buf_free(&change);
    return rc;
}

/* The change that removes the snapshots c->base has and c->next lost. */
static int expire_json(const struct ice_change *c, struct fr_buf *out)
{
    const struct ice_meta *bm = c->base->meta;
    int rc = fr_buf_printf(out,
                           "{\"requirements\":[{\"type\":\"assert-table-uuid\",\"uuid\":\"%s\"},"
                           "{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\",\"snapshot-id\":"
                           "%" PRId64 "}],\"updates\":[{\"action\":\"remove-snapshots\","
                           "\"snapshot-ids\":[",
                           bm->uuid, bm->current_snapshot_id);
    uint32_t n = 0;
    for (uint32_t i = 0; rc == FR_OK && i < bm->nsnapshots; i++) {
        int64_t id = bm->snapshots[i].pub.snapshot_id;
        if (!ice_meta_snapshot(c->next, id)) {
            rc = fr_buf_printf(out, "%s%" PRId64, n++ ? "," : "", id);
        }
    }
    return rc == FR_OK ? fr_buf_puts(out, "]}]}") : rc;
}

/* 1 when none of the snapshots c meant to expire is in ns.name any more. */
static int expired_landed(struct fr_ice_rest *rest, struct fr_ice_catalog *cat,
                          const struct ice_change *c)
{
    struct fr_ice_table *t = NULL;
    int rc = fr_ice_rest_table(rest, cat, c->ns, c->name, &t);
    if (rc < 0) {
        return rc;
    }
    const struct ice_meta *bm = c->base->meta;
    int landed = 1;
    for (uint32_t i = 0; i < bm->nsnapshots && landed; i++) {
        int64_t id = bm->snapshots[i].pub.snapshot_id;
        landed = ice_meta_snapshot(c->next, id) || !ice_meta_snapshot(t->meta, id);
    }
    fr_ice_table_free(t);
    return landed;
}

int fr_ice_rest_expire(struct fr_ice_rest *rest, struct fr_ice_catalog *cat, const char *ns,
                       const char *name, int64_t older_than_ms, uint32_t retain_last,
                       struct fr_ice_expire_stats *stats)
{
    ice_err_clear();
    if (stats) {
        memset(stats, 0, sizeof *stats);
    }
    struct fr_buf load, change;
    fr_buf_init(&load, MAINT_BODY_CAP);
    fr_buf_init(&change, MAINT_BODY_CAP);
    int rc = FR_OK;
    for (int attempt = 0; attempt < MAINT_ATTEMPTS; attempt++) {
        struct ice_change *c = NULL;
        rc = load_again(rest, ns, name, attempt, &load, &change);
        if (rc == FR_OK) {
            rc = ice_change_new(cat, ICE_CH_EXPIRE, ns, name, &c);
        }
        if (rc == FR_OK) {
            c->older_than_ms = older_than_ms;
            c->retain_last = retain_last < 1 ? 1 : retain_last;
            rc = ice_rest_table_from_result(cat, ns, name, (const char *)load.data, load.len,
                                            &c->base);
        }
        if (rc == FR_OK) {
            rc = ice_change_apply(c); /* plans; writes nothing */
        }
        if (rc == FR_OK && !c->next) {
            ice_change_free(c); /* nothing to expire */
            break;
        }
        if (rc == FR_OK) {
            rc = expire_json(c, &change);
        }
        if (rc == FR_OK) {
            struct fr_ice_rest_change ch = {ns, name, (const char *)change.data, change.len};
            rc = fr_ice_rest_commit_table(rest, &ch, NULL);
        }
        if (rc == FR_EUNKNOWN) {
            int landed = expired_landed(rest, cat, c);
            rc = landed < 0 ? FR_EUNKNOWN : landed ? FR_OK : FR_EREQUIREMENT;
        }
        if (rc == FR_OK) {
            for (uint32_t k = 0; k < c->ndoomed; k++) {
                if (ice_io_remove(&cat->io, c->doomed[k]) == FR_OK) {
                    c->deleted++;
                }
            }
            if (stats) {
                stats->snapshots_expired = c->expired;
                stats->files_deleted = c->deleted;
                stats->scratch_peak_bytes = c->expire_scan_peak;
            }
        }
        ice_change_free(c);
        if (rc != FR_EREQUIREMENT) {
            break;
        }
    }
    if (rc == FR_EREQUIREMENT) {
        rc = ice_err(FR_ECONFLICT, "table %s.%s: expiry lost the race %d times", ns, name,
                     MAINT_ATTEMPTS);
    } else if (rc == FR_EUNKNOWN) {
        rc = ice_err(FR_EUNKNOWN,
                     "table %s.%s: expiry's outcome is unknown: no file was deleted (orphan "
                     "removal takes them once they are unreachable)",
                     ns, name);
    }
    fr_buf_free(&load);
    fr_buf_free(&change);
    return rc;
}

int fr_ice_rest_remove_orphans(struct fr_ice_rest *rest, struct fr_ice_catalog *cat,
                               const char *ns, const char *name, int64_t older_than_ms,
                               bool dry_run, struct fr_ice_orphan_stats *stats)
{
    struct fr_ice_table *t = NULL;
    ice_err_clear();
    int rc = fr_ice_rest_table(rest, cat, ns, name, &t);
    if (rc == FR_OK) {
        rc = ice_remove_orphans_in(t, older_than_ms, dry_run, false, stats);
    } else if (stats) {
        memset(stats, 0, sizeof *stats);
    }
    fr_ice_table_free(t);
    return rc;
}
