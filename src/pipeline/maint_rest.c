/*
 * maint_rest.c — the commits of `freshet rebuild` and `freshet dlq replay`
 * through a REST catalog (lake.catalog_uri), see maint.h. Their SQLite
 * commits are one fr_ice_txn; here the same tables are staged against the
 * versions the catalog returns (manifests and manifest lists in the shared
 * warehouse) and committed in one POST /transactions/commit.
 *
 *   LOAD+STAGE every table ──► COMMIT ──200──────────────────► FR_OK
 *        ▲                        ├──409 (a table moved) ──► again (at most 4 times)
 *        └────────────────────────┘
 *                                 ├──other 4xx ──────────────► that error (nothing landed)
 *                                 └──5xx, lost connection ───► FR_EUNKNOWN
 *
 * Unknown outcomes are not resolved here: the command's intent file names
 * its id, and its next run looks for the id in the snapshot summaries
 * (fr_maint_has_marker), exactly as after a crash between its commit and
 * its checkpoint. The files of a stale attempt (409) are orphans.
 *
 * One thread (the command's).
 */
#include "pipeline/maint.h"

#include "core/buf.h"
#include "core/diag.h"
#include "core/err.h"
#include "iceberg/rest.h"

#define MR_ATTEMPTS 4
#define MR_BODY_CAP ((size_t)64 << 20)

int fr_maint_commit_rest(const struct fr_lake *lake, const struct fr_lake_append *apps,
                         uint32_t napps, int overwrite, const struct fr_ice_commit_info *info,
                         const char *who)
{
    uint32_t mask = overwrite ? (1u << FR_LAKE_MAX_APPENDS) - 1 : 0;
    return fr_maint_commit_rest_mixed(lake, apps, napps, mask, info, who, MR_ATTEMPTS);
}

int fr_maint_commit_rest_mixed(const struct fr_lake *lake, const struct fr_lake_append *apps,
                               uint32_t napps, uint32_t overwrite_mask,
                               const struct fr_ice_commit_info *info, const char *who,
                               int attempts)
{
    if (!lake->rest || napps == 0 || napps > FR_LAKE_MAX_APPENDS) {
        return FR_EINVAL;
    }
    int rc = FR_EREQUIREMENT;
    for (int attempt = 0; attempt < attempts && rc == FR_EREQUIREMENT; attempt++) {
        struct fr_buf load, staged[FR_LAKE_MAX_APPENDS];
        struct fr_ice_rest_change changes[FR_LAKE_MAX_APPENDS];
        uint32_t n = 0;
        fr_buf_init(&load, MR_BODY_CAP);
        rc = FR_OK;
        for (uint32_t a = 0; rc == FR_OK && a < napps; a++) {
            fr_buf_reset(&load);
            fr_buf_init(&staged[n], MR_BODY_CAP);
            rc = fr_ice_rest_load_table(lake->rest, FR_NS, apps[a].table, &load);
            if (rc == FR_OK) {
                int overwrite = (overwrite_mask >> a) & 1u;
                rc = (overwrite ? fr_ice_rest_stage_overwrite : fr_ice_rest_stage_append)(
                    lake->cat, FR_NS, apps[a].table, (const char *)load.data, load.len,
                    apps[a].files, apps[a].nfiles, info, &staged[n]);
            }
            changes[n] = (struct fr_ice_rest_change){FR_NS, apps[a].table,
                                                     (const char *)staged[n].data, staged[n].len};
            n++;
        }
        if (rc == FR_OK) {
            rc = fr_ice_rest_commit_txn(lake->rest, changes, n);
        }
        if (rc == FR_EREQUIREMENT && attempt + 1 < attempts) {
            fr_warn(who, "REST commit attempt %d: a table moved meanwhile (%s): staging again",
                    attempt + 1, fr_ice_errmsg());
        }
        for (uint32_t k = 0; k < n; k++) {
            fr_buf_free(&staged[k]);
        }
        fr_buf_free(&load);
    }
    if (rc == FR_EUNKNOWN) {
        fr_error(who,
                 "the REST commit's outcome is unknown (%s): its files and intent are kept; run "
                 "the command again: it looks for its id in the tables and finishes or undoes it",
                 fr_ice_errmsg());
    } else if (rc < 0) {
        fr_error(who, "REST commit failed: %s (%s) %s", fr_strerror(rc), fr_err_name(rc),
                 fr_ice_errmsg());
    }
    return rc;
}

int fr_maint_ensure(const struct fr_lake *lake, int with_replays)
{
    if (!lake->rest) {
        int rc = fr_tbl_ensure(lake->cat);
        return rc == FR_OK && with_replays ? fr_tbl_ensure_one(lake->cat, FR_TBL_DLQ_REPLAYS) : rc;
    }
    int rc = FR_OK;
    for (int t = 0; rc == FR_OK && t < FR_TBL_COUNT; t++) {
        rc = fr_tbl_ensure_rest(lake->rest, (enum fr_tbl)t);
    }
    return rc == FR_OK && with_replays ? fr_tbl_ensure_rest(lake->rest, FR_TBL_DLQ_REPLAYS) : rc;
}
