/*
 * cmd.h — the subcommands of the freshet binary. Each takes the loaded
 * configuration and its own arguments (argv[0] is the command name) and
 * returns the process exit status: 0 success, 1 failure, 2 usage error.
 */
#ifndef FR_MAIN_CMD_H
#define FR_MAIN_CMD_H

#include "conf/conf.h"

int fr_cmd_config(struct fr_conf *conf, int argc, char **argv);
int fr_cmd_up(struct fr_conf *conf, int argc, char **argv);
int fr_cmd_demo(struct fr_conf *conf, int argc, char **argv);
int fr_cmd_log_main(struct fr_conf *conf, int argc, char **argv);
int fr_cmd_feed_main(struct fr_conf *conf, int argc, char **argv);
int fr_cmd_tables_main(struct fr_conf *conf, int argc, char **argv);
int fr_cmd_compact_main(struct fr_conf *conf, int argc, char **argv);
int fr_cmd_serve_main(struct fr_conf *conf, int argc, char **argv);
/* `freshet status` (status_cmd.c). */
int fr_cmd_status(struct fr_conf *conf, int argc, char **argv);
/* `freshet process`: with --group the scale-out instance (group.c), else
 * fr_cmd_process. */
int fr_cmd_process_main(struct fr_conf *conf, int argc, char **argv);
int fr_cmd_process_group(struct fr_conf *conf);
/* `freshet backfill FILE...`: import, process to the end, summary (backfill.c). */
int fr_cmd_backfill(struct fr_conf *conf, int argc, char **argv);

/* Path of the running executable, for re-executing stages as children. */
const char *fr_main_self(void);
/* The --config path given on the command line, or NULL. */
const char *fr_main_config_path(void);
/* The global options as given (between the program name and the command),
 * so a supervisor can start children with the same configuration. */
char **fr_main_global_args(int *argc);

#endif
