/*
 * iceberg_cmd.h — the lake's commands on the freshet command line:
 *
 *   freshet tables  [--json] [--table NS.NAME] [--files] [--snapshot ID | --at MS]
 *
 * (`freshet compact` works on any lake, so it lives with the lake in
 * src/pipeline/compact_cmd.c.) It opens <data_dir>/lake/catalog.db. Run in the calling thread; write
 * stdout, messages on stderr. argv[0] is the command name. Each returns the
 * exit status: 0 success, 1 failure (message on stderr), 2 usage error.
 */
#ifndef FR_ICEBERG_CMD_H
#define FR_ICEBERG_CMD_H

int fr_cmd_tables(const char *data_dir, int argc, char **argv);
/* The same over a catalog the caller opened (a warehouse in an object
 * store): borrowed, not closed. */
struct fr_ice_catalog;
int fr_cmd_tables_cat(struct fr_ice_catalog *cat, const char *data_dir, int argc, char **argv);

#endif
