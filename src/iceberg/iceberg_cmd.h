/*
 * iceberg_cmd.h — the lake's commands on the freshet command line:
 *
 *   freshet tables  [--json] [--table NS.NAME] [--files] [--snapshot ID | --at MS]
 *
 * (`freshet compact` works on any lake, so it lives with the lake in
 * src/pipeline/compact_cmd.c.) It opens <data_dir>/lake/catalog.db (or the
 * catalog given to fr_cmd_tables_cat). Run in the calling thread; write
 * stdout, messages on stderr. argv[0] is the command name. Each returns the
 * exit status: 0 success, 1 failure (message on stderr), 2 usage error.
 */
#ifndef FR_ICEBERG_CMD_H
#define FR_ICEBERG_CMD_H

int fr_cmd_tables(const char *data_dir, int argc, char **argv);
/* The same over a catalog the caller opened (a warehouse in an object
 * store): borrowed, not closed. With rest (may be NULL) the tables are
 * listed and loaded through that REST catalog and cat (opened files_only)
 * only maps the warehouse; catalog names the catalog in --json (NULL:
 * <data_dir>/lake/catalog.db). */
struct fr_ice_catalog;
struct fr_ice_rest;
int fr_cmd_tables_cat(struct fr_ice_catalog *cat, struct fr_ice_rest *rest, const char *catalog,
                      const char *data_dir, int argc, char **argv);

#endif
