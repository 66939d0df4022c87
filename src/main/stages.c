/*
 * stages.c — adapters from the stage modules' command entry points to the
 * command table's signature (the modules take the data directory, not the
 * whole configuration, when that is all they need).
 */
#include "main/cmd.h"

#include "feed/feed_cmd.h"
#include "iceberg/iceberg_cmd.h"
#include "kafka/kafka.h"
#include "log/log.h"
#include "log/log_cmd.h"
#include "pipeline/lake.h"
#include "pipeline/pipeline.h"
#include "serve/serve.h"

#include <string.h>

int fr_cmd_log_main(struct fr_conf *conf, int argc, char **argv)
{
    struct fr_log_opts lopts;
    struct fr_kafka *kafka = NULL;
    fr_log_opts_init(&lopts);
    if (fr_kafka_backend_from_conf(conf, &lopts, &kafka) < 0) {
        return 1;
    }
    int status = fr_cmd_log_with(conf->general_data_dir, &lopts, argc, argv);
    fr_kafka_free(kafka);
    return status;
}

int fr_cmd_feed_main(struct fr_conf *conf, int argc, char **argv)
{
    return fr_cmd_feed(conf->general_data_dir, argc, argv);
}

/* tables: through the lake's catalog (SQLite, or REST with
 * lake.catalog_uri) and warehouse (local or S3); with no lake yet, the
 * command says so without creating one. */
int fr_cmd_tables_main(struct fr_conf *conf, int argc, char **argv)
{
    if (!fr_lake_maybe_exists(conf)) {
        return fr_cmd_tables(conf->general_data_dir, argc, argv);
    }
    for (int i = 1; i < argc; i++) { /* --help opens nothing */
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            return fr_cmd_tables(conf->general_data_dir, argc, argv);
        }
    }
    struct fr_lake lake;
    if (fr_lake_open(conf, &lake) < 0) {
        return 1;
    }
    char where[4200];
    int status =
        fr_cmd_tables_cat(lake.cat, lake.rest, fr_lake_catalog_name(conf, where, sizeof where),
                          conf->general_data_dir, argc, argv);
    fr_lake_close(&lake);
    return status;
}

int fr_cmd_compact_main(struct fr_conf *conf, int argc, char **argv)
{
    return fr_cmd_compact(conf, argc, argv);
}

/* serve starts jobs as children: it needs the binary and the global options. */
int fr_cmd_serve_main(struct fr_conf *conf, int argc, char **argv)
{
    int gargc;
    char **gargv = fr_main_global_args(&gargc);
    return fr_cmd_serve(conf, fr_main_self(), gargv, gargc, argc, argv);
}
