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

int fr_cmd_tables_main(struct fr_conf *conf, int argc, char **argv)
{
    if (!conf->lake_warehouse[0]) {
        return fr_cmd_tables(conf->general_data_dir, argc, argv);
    }
    struct fr_lake lake;
    if (fr_lake_open_catalog(conf, &lake) < 0) {
        return 1;
    }
    int status = fr_cmd_tables_cat(lake.cat, conf->general_data_dir, argc, argv);
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
