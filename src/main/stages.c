/*
 * stages.c — adapters from the stage modules' command entry points to the
 * command table's signature (the modules take the data directory, not the
 * whole configuration, when that is all they need).
 */
#include "main/cmd.h"

#include "feed/feed_cmd.h"
#include "iceberg/iceberg_cmd.h"
#include "log/log_cmd.h"

int fr_cmd_log_main(struct fr_conf *conf, int argc, char **argv)
{
    return fr_cmd_log(conf->general_data_dir, argc, argv);
}

int fr_cmd_feed_main(struct fr_conf *conf, int argc, char **argv)
{
    return fr_cmd_feed(conf->general_data_dir, argc, argv);
}

int fr_cmd_tables_main(struct fr_conf *conf, int argc, char **argv)
{
    return fr_cmd_tables(conf->general_data_dir, argc, argv);
}

int fr_cmd_compact_main(struct fr_conf *conf, int argc, char **argv)
{
    return fr_cmd_compact(conf->general_data_dir, argc, argv);
}
