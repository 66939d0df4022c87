/*
 * main.c — the freshet binary: global options, the command table, and
 * dispatch. Global options come before the command:
 *
 *   freshet [--config FILE] [--data DIR] [--set section.key=value]... [-v|-q] COMMAND ...
 *
 * Configuration is loaded here once (defaults, file, environment, flags)
 * before any command runs; commands never reread it. The command names are
 * a contract (DESIGN.md): extend them, rename only with an ADR.
 */
#include "main/cmd.h"

#include "conf/conf.h"
#include "core/diag.h"
#include "core/err.h"
#include "core/progress.h"
#include "ingest/ingest.h"
#include "pipeline/maint.h"
#include "pipeline/pipeline.h"
#include "pipeline/verify.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct main_cmd {
    const char *name;
    int (*run)(struct fr_conf *conf, int argc, char **argv);
    const char *summary;
};

static const struct main_cmd main_cmds[] = {
    {"up", fr_cmd_up, "run ingest and process on the live Wikimedia stream, supervised"},
    {"demo", fr_cmd_demo, "run the pipeline against a built-in synthetic feed (offline)"},
    {"feed", fr_cmd_feed_main, "serve recorded or synthetic events as an SSE stream, with faults"},
    {"ingest", fr_cmd_ingest, "read an SSE stream into the log, resuming where it stopped"},
    {"backfill", fr_cmd_backfill, "load recorded NDJSON files into the lake: import, process, summary"},
    {"process", fr_cmd_process_main, "the log to the lake, one exactly-once epoch at a time"},
    {"serve", fr_cmd_serve_main, "metrics, JSON API, live dashboard and SQL explorer over HTTP"},
    {"log", fr_cmd_log_main, "list | dump: what the log holds (records as NDJSON)"},
    {"tables", fr_cmd_tables_main, "tables, snapshots, files and sizes (--json)"},
    {"status", fr_cmd_status, "one screen: stages, rates, freshness, lag, drops, tables (--json, --watch)"},
    {"verify", fr_cmd_verify, "check the lake against the delivery contract (exit 0: all hold)"},
    {"compact", fr_cmd_compact_main, "table maintenance: compaction, snapshot expiry, orphans"},
    {"rebuild", fr_cmd_rebuild, "recompute silver and gold from bronze under the current policy"},
    {"dlq", fr_cmd_dlq, "list | replay: dead letters by reason; land the ones now accepted"},
    {"config", fr_cmd_config, "print the effective configuration (--markdown: the docs)"},
};

static char main_self[PATH_MAX];
static const char *main_config_path;
static char **main_global_argv;
static int main_global_argc;

const char *fr_main_self(void) { return main_self; }
const char *fr_main_config_path(void) { return main_config_path; }

char **fr_main_global_args(int *argc)
{
    *argc = main_global_argc;
    return main_global_argv;
}

static void main_usage(FILE *out)
{
    fprintf(out, "usage: freshet [--config FILE] [--data DIR] [--set section.key=value]... "
                 "[-v|-q] COMMAND [ARGS]\n"
                 "       freshet --version | --help\n\n"
                 "freshet catches the Wikimedia recentchange stream into a durable log and\n"
                 "turns it into Iceberg tables. Commands (each takes --help):\n\n");
    for (size_t i = 0; i < sizeof main_cmds / sizeof main_cmds[0]; i++) {
        fprintf(out, "  %-8s %s\n", main_cmds[i].name, main_cmds[i].summary);
    }
    fprintf(out, "\n  --data DIR defaults to ./freshet-data (general.data_dir).\n");
}

int main(int argc, char **argv)
{
    ssize_t n = readlink("/proc/self/exe", main_self, sizeof main_self - 1);
    if (n > 0) {
        main_self[n] = 0;
    } else {
        snprintf(main_self, sizeof main_self, "%s", argv[0]);
    }

    struct fr_conf conf;
    if (fr_conf_init(&conf) < 0) {
        fprintf(stderr, "freshet: internal error: bad configuration defaults\n");
        return 1;
    }
    int status = 2;
    char err[512];
    const char *data_dir = NULL;
    /* --set values are applied after the file, so remember them. */
    char **sets = calloc((size_t)argc, sizeof *sets);
    int nsets = 0;
    if (!sets) {
        fprintf(stderr, "freshet: out of memory\n");
        goto cleanup;
    }

    static const struct option opts[] = {
        {"config", required_argument, 0, 'c'}, {"data", required_argument, 0, 'd'},
        {"set", required_argument, 0, 's'},    {"verbose", no_argument, 0, 'v'},
        {"quiet", no_argument, 0, 'q'},        {"version", no_argument, 0, 'V'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    int c;
    /* "+" stops at the first non-option: the command and its own flags follow. */
    while ((c = getopt_long(argc, argv, "+c:d:s:vqVh", opts, NULL)) != -1) {
        switch (c) {
        case 'c': main_config_path = optarg; break;
        case 'd': data_dir = optarg; break;
        case 's': sets[nsets++] = optarg; break;
        case 'v': fr_diag_set_level(FR_DIAG_DEBUG); break;
        case 'q': fr_diag_set_level(FR_DIAG_WARN); break;
        case 'V':
            printf("freshet %s\n", FR_VERSION);
            status = 0;
            goto cleanup;
        case 'h':
            main_usage(stdout);
            status = 0;
            goto cleanup;
        default: main_usage(stderr); goto cleanup;
        }
    }
    if (optind >= argc) {
        main_usage(stderr);
        goto cleanup;
    }
    if (main_config_path && fr_conf_load_file(&conf, main_config_path, err, sizeof err) < 0) {
        fprintf(stderr, "freshet: config: %s\n", err);
        goto cleanup;
    }
    if (fr_conf_load_env(&conf, err, sizeof err) < 0) {
        fprintf(stderr, "freshet: environment: %s\n", err);
        goto cleanup;
    }
    for (int i = 0; i < nsets; i++) {
        if (fr_conf_set(&conf, sets[i], FR_CONF_FLAG, err, sizeof err) < 0) {
            fprintf(stderr, "freshet: --set: %s\n", err);
            goto cleanup;
        }
    }
    if (data_dir) {
        char assign[PATH_MAX + 32];
        snprintf(assign, sizeof assign, "general.data_dir=%s", data_dir);
        if (fr_conf_set(&conf, assign, FR_CONF_FLAG, err, sizeof err) < 0) {
            fprintf(stderr, "freshet: --data: %s\n", err);
            goto cleanup;
        }
    }

    fr_progress_set_interval_ms(conf.general_progress_interval_ms);
    int cmd_index = optind;
    main_global_argv = argv + 1;
    main_global_argc = cmd_index - 1;
    const char *name = argv[cmd_index];
    for (size_t i = 0; i < sizeof main_cmds / sizeof main_cmds[0]; i++) {
        if (strcmp(main_cmds[i].name, name) == 0) {
            optind = 0; /* reset getopt for the command's own parser */
            status = main_cmds[i].run(&conf, argc - cmd_index, argv + cmd_index);
            goto cleanup;
        }
    }
    fprintf(stderr, "freshet: unknown command \"%s\"; see freshet --help\n", name);

cleanup:
    free(sets);
    fr_conf_free(&conf);
    return status;
}
