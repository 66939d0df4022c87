/*
 * backfill.c — `freshet backfill FILE...`: load recorded events into the
 * lake with one command (docs/adr/0048).
 *
 *   import (ingest --file, in this process) ──► process --once ──► summary
 *
 * Each step is an existing command with its own guarantees: the import is
 * exactly resumable (file.h), the processor exactly-once-effective; so
 * re-running backfill after a kill or a failure continues where it
 * stopped, and re-running it after success adds nothing. The steps run one
 * after the other in one process and one thread (each frees what it took
 * before the next starts), so peak memory is the largest step's.
 * The summary reads every table's current snapshot summary (rows, files,
 * bytes) through the lake (local, S3 or REST catalog).
 */
#include "main/cmd.h"

#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"
#include "iceberg/iceberg.h"
#include "ingest/file.h"
#include "pipeline/lake.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *backfill_summary_get(const struct fr_ice_snapshot *snap, const char *key)
{
    for (uint32_t i = 0; snap && i < snap->nsummary; i++) {
        if (strcmp(snap->summary[i].key, key) == 0) {
            return snap->summary[i].value;
        }
    }
    return "0";
}

/* One line per table: rows, data files and bytes of its current snapshot. */
static int backfill_summary(struct fr_conf *conf)
{
    struct fr_lake lake;
    struct fr_ice_ident *idents = NULL;
    size_t count = 0;
    int rc = fr_lake_open(conf, &lake);
    if (rc < 0) {
        return rc;
    }
    rc = fr_lake_list(&lake, &idents, &count);
    if (rc < 0) {
        goto cleanup;
    }
    printf("%-32s %12s %7s %14s\n", "table", "rows", "files", "bytes");
    for (size_t i = 0; i < count; i++) {
        struct fr_ice_table *table = NULL;
        rc = fr_lake_table(&lake, idents[i].name, &table);
        if (rc < 0) {
            goto cleanup;
        }
        uint32_t n;
        const struct fr_ice_snapshot *snaps = fr_ice_table_snapshots(table, &n), *cur = NULL;
        for (uint32_t k = 0; k < n; k++) {
            if (snaps[k].snapshot_id == fr_ice_table_snapshot_id(table)) {
                cur = &snaps[k];
            }
        }
        char name[260];
        snprintf(name, sizeof name, "%s.%s", idents[i].ns, idents[i].name);
        printf("%-32s %12s %7s %14s\n", name, backfill_summary_get(cur, "total-records"),
               backfill_summary_get(cur, "total-data-files"),
               backfill_summary_get(cur, "total-files-size"));
        fr_ice_table_free(table);
    }
    rc = FR_OK;

cleanup:
    free(idents);
    fr_lake_close(&lake);
    return rc;
}

static void backfill_usage(FILE *out)
{
    fprintf(out,
            "usage: freshet backfill [-q] FILE...\n\n"
            "Load recorded events into the lake: import FILE... into the log exactly as\n"
            "`freshet ingest --file` does (- = standard input, .gz and .zst decompressed),\n"
            "process the log to its end as `freshet process --once` does, then print each\n"
            "table's rows, files and bytes. Safe to re-run: after a kill it continues where\n"
            "it stopped; after success it adds nothing. -q: no progress lines.\n");
}

int fr_cmd_backfill(struct fr_conf *conf, int argc, char **argv)
{
    static const struct option opts[] = {
        {"quiet", no_argument, 0, 'q'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int quiet = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
        switch (c) {
        case 'q': quiet = 1; break;
        case 'h': backfill_usage(stdout); return 0;
        default: backfill_usage(stderr); return 2;
        }
    }
    if (optind >= argc) {
        backfill_usage(stderr);
        return 2;
    }
    int64_t t0 = fr_mono_ms();
    int status = fr_ingest_file_run(conf, argv + optind, argc - optind, quiet);
    if (status != 0) {
        fr_error("backfill", "the import stopped; run the same command again to continue");
        return status;
    }
    int64_t t1 = fr_mono_ms();
    char *pargv[] = {"process", "--once", NULL};
    optind = 1;
    status = fr_cmd_process_main(conf, 2, pargv);
    if (status != 0) {
        fr_error("backfill", "processing stopped; run the same command again to continue");
        return status;
    }
    int64_t t2 = fr_mono_ms();
    if (backfill_summary(conf) < 0) {
        return 1;
    }
    if (!quiet) {
        fr_info("backfill", "done: import %.2f s, processing %.2f s", (double)(t1 - t0) / 1e3,
                (double)(t2 - t1) / 1e3);
    }
    return 0;
}
