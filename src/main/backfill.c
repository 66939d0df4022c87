/*
 * backfill.c — `freshet backfill FILE...`: load recorded events into the
 * lake with one command (docs/adr/0048).
 *
 *   import (ingest --file, in this process) ──► process --once ──► summary
 *
 * Pipelined (the default): once the import has opened the log, a child
 * (fork + exec, with PR_SET_PDEATHSIG so that it never outlives a killed
 * backfill) `freshet <same global options> process` follows the log and commits
 * epochs while the import appends (the two use the two stages' own
 * processes, as `freshet up` does). At the end of the import the child gets
 * SIGTERM (it finishes its epoch and exits 0), then `process --once` runs
 * in this process for what is left. --sequential: no child; the import,
 * then process --once.
 *
 *   import ──appends──► log ──► child `process` (epochs)    ┐
 *      │ end of input: SIGTERM child, wait                   │ same lake,
 *      ▼                                                     │ one writer
 *   process --once (the rest) ──► summary                    ┘ at a time
 *
 * Each step is an existing command with its own guarantees: the import is
 * exactly resumable (file.h), the processor exactly-once-effective (a
 * killed child's epoch is found again or redone by --once); so re-running
 * backfill after a kill or a failure continues where it stopped, and
 * re-running it after success adds nothing. Memory: each process holds one
 * step's (the import's bounded by ingest.file_fsync_bytes).
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

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* The child processor of a pipelined backfill. */
struct backfill_child {
    pid_t pid; /* 0: none */
};

/* on_open of the import: start `freshet <global options> process`. A child
 * that cannot start is not an error: --once then does all the work. */
static void backfill_spawn(void *arg)
{
    struct backfill_child *child = arg;
    int gargc;
    char **gargv = fr_main_global_args(&gargc);
    char **argv = calloc((size_t)gargc + 3, sizeof *argv);
    if (!argv) {
        return;
    }
    int n = 0;
    argv[n++] = (char *)fr_main_self();
    for (int i = 0; i < gargc; i++) {
        argv[n++] = gargv[i];
    }
    argv[n++] = "process";
    argv[n] = NULL;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        /* If backfill dies (SIGKILL), the processor must not follow the log
         * forever as an orphan: it gets SIGTERM and finishes its epoch. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) {
            _exit(0);
        }
        execv(fr_main_self(), argv);
        _exit(127);
    }
    if (pid < 0) {
        fr_warn("backfill",
                "cannot start the processor alongside the import (%s); it will run "
                "after it",
                strerror(errno));
    }
    child->pid = pid > 0 ? pid : 0;
    free(argv);
}

/* SIGTERM the child (it finishes its epoch) and wait for it. */
static void backfill_reap(struct backfill_child *child)
{
    if (child->pid <= 0) {
        return;
    }
    /* Again every second until it exits: a SIGTERM that arrives before the
     * child has exec'd and installed its own handler is lost (between fork
     * and exec it runs the import's handler, which only sets a flag). */
    int st = 0;
    for (;;) {
        kill(child->pid, SIGTERM);
        pid_t got = 0;
        for (int i = 0; i < 10 && (got = waitpid(child->pid, &st, WNOHANG)) == 0; i++) {
            fr_sleep_ms(100);
        }
        if (got == child->pid || (got < 0 && errno != EINTR)) {
            break;
        }
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fr_warn("backfill",
                "the processor beside the import ended with %s %d; process --once "
                "continues from its last committed epoch",
                WIFEXITED(st) ? "status" : "signal",
                WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    }
    child->pid = 0;
}

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
            "usage: freshet backfill [-q] [--sequential] FILE...\n\n"
            "Load recorded events into the lake: import FILE... into the log exactly as\n"
            "`freshet ingest --file` does (- = standard input, .gz and .zst decompressed),\n"
            "process the log to its end as `freshet process --once` does, then print each\n"
            "table's rows, files and bytes. Safe to re-run: after a kill it continues where\n"
            "it stopped; after success it adds nothing. -q: no progress lines.\n"
            "The processor runs beside the import (a child `freshet process`, stopped at\n"
            "the end of input, then --once for the rest); --sequential: one after the other.\n");
}

int fr_cmd_backfill(struct fr_conf *conf, int argc, char **argv)
{
    static const struct option opts[] = {{"quiet", no_argument, 0, 'q'},
                                         {"sequential", no_argument, 0, 's'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int quiet = 0, sequential = 0, c;
    optind = 0;
    while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
        switch (c) {
        case 'q':
            quiet = 1;
            break;
        case 's':
            sequential = 1;
            break;
        case 'h':
            backfill_usage(stdout);
            return 0;
        default:
            backfill_usage(stderr);
            return 2;
        }
    }
    if (optind >= argc) {
        backfill_usage(stderr);
        return 2;
    }
    int64_t t0 = fr_mono_ms();
    struct backfill_child child = {0};
    int status = fr_ingest_file_run(conf, argv + optind, argc - optind, quiet,
                                    sequential ? NULL : backfill_spawn, &child);
    backfill_reap(&child);
    if (status != 0) {
        fr_error("backfill", "the import stopped; run the same command again to continue");
        return status;
    }
    int64_t t1 = fr_mono_ms();
    char *pargv[] = {"process", "--once", NULL};
    optind = 0;
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
        fr_info("backfill", "done: import %.2f s%s, then processing %.2f s",
                (double)(t1 - t0) / 1e3, sequential ? "" : " (the processor beside it)",
                (double)(t2 - t1) / 1e3);
    }
    return 0;
}
