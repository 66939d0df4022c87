/*
 * estage_lake.c — which enrichment state a committed epoch was made with,
 * and where to find it (ADR 0064): the epoch's marker in the lake names
 * the state file's fingerprint (freshet.enrich-state); the file is taken
 * from the checkpoint directory, or, when that lacks it (another machine,
 * or another owner's file of the same epoch), from the bucket's copy
 * (process.checkpoint_uri, ckmirror.c). A run that cannot find the state
 * of the lake's newest epoch refuses to go on: the lookups pending then
 * are not a function of the log, so guessing would lose or double rows.
 * The epoch loop's thread only.
 */
#include "pipeline/estage.h"

#include "core/diag.h"
#include "core/err.h"
#include "iceberg/iceberg.h"
#include "pipeline/ckmirror.h"
#include "pipeline/lake.h"
#include "pipeline/maint.h"
#include "pipeline/tables.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fr_estage_load_committed(struct fr_estage *es, struct fr_lake *lake, const char *pipeline,
                             struct fr_ckm *ckm, int64_t epoch, int need)
{
    struct fr_ice_table *bronze = NULL;
    int rc = fr_lake_table(lake, fr_tbl_name(FR_TBL_BRONZE), &bronze);
    if (rc < 0) {
        return rc;
    }
    const struct fr_ice_snapshot *m = fr_maint_marker(bronze, pipeline, epoch);
    const char *v = m ? fr_maint_summary(m, FR_SUMMARY_ENRICH_STATE) : NULL;
    char fps[16] = "";
    if (v) {
        snprintf(fps, sizeof fps, "%s", v);
    }
    fr_ice_table_free(bronze);
    char *end = NULL;
    unsigned long fp = fps[0] ? strtoul(fps, &end, 16) : 0;
    if (!fps[0] || !end || *end || strlen(fps) != 8) {
        rc = fr_estage_load(es, epoch);
        if (rc == FR_ENOTFOUND) {
            fr_warn("process",
                    "epoch %" PRId64 " is in the lake but no enrichment state was saved with it "
                    "(enrichment was off, or the state file is gone): keeping the current state",
                    epoch);
            rc = FR_OK;
        }
        return rc;
    }
    char name[64];
    fr_estage_state_name(epoch, (uint32_t)fp, name, sizeof name);
    rc = fr_estage_load_exact(es, epoch, (uint32_t)fp);
    /* Absent, or damaged here: the bucket's copy, for the state the run
     * continues with (an older epoch's would be replaced at once). */
    if (need && (rc == FR_ENOTFOUND || rc == FR_ECRC)) {
        rc = fr_ckm_get_state(ckm, fr_estage_dir(es), name);
        if (rc == FR_OK) {
            rc = fr_estage_load_exact(es, epoch, (uint32_t)fp);
        }
    }
    if (!need && (rc == FR_ENOTFOUND || rc == FR_ECRC)) {
        fr_debug("process",
                 "epoch %" PRId64 ": enrichment state %s not kept (a later epoch's "
                 "replaces it)",
                 epoch, name);
        return FR_OK;
    }
    if (rc != FR_ENOTFOUND) {
        return rc;
    }
    char where[1200] = "there is no bucket copy (process.checkpoint_uri is not set)";
    const char *fix = "Set process.checkpoint_uri on every machine (every epoch's state is "
                      "copied there before its commit), or restore the checkpoint directory";
    if (ckm) {
        char prefix[1100];
        snprintf(where, sizeof where, "not in %s either",
                 fr_ckm_state_prefix(ckm, prefix, sizeof prefix));
        fix = "The machine that committed it had another (or no) process.checkpoint_uri: "
              "use the same one everywhere, or restore that machine's checkpoint directory";
    }
    fr_error("process",
             "epoch %" PRId64 " of pipeline %s was committed with the enrichment state %s, "
             "which is not in %s and %s: refusing to go on, since the lookups pending then "
             "would get no row or two. %s (docs/ENRICH.md, \"Scale-out\")",
             epoch, pipeline, name, fr_estage_dir(es), where, fix);
    return FR_ENOTFOUND;
}
