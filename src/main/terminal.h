/*
 * terminal.h — what `freshet up` and `freshet demo` print (terminal.c,
 * ADR 0055): where to look at start, then one status line for the whole
 * pipeline at a time. Private to src/main; the supervisor's thread only.
 */
#ifndef FR_MAIN_TERMINAL_H
#define FR_MAIN_TERMINAL_H

#include "conf/conf.h"

#include <stdint.h>

struct fr_stats_snap;

/* The previous snapshots, for the rates between two lines. */
struct fr_term {
    const char *cmd;           /* "up" or "demo": the lines' component */
    struct fr_stats_snap *old; /* [0] ingest, [1] process; NULL before the first look */
};

/* Print where to look: the dashboard and explorer URLs, the data
 * directory, how to stop, when the first gold windows settle. */
void fr_term_banner(const struct fr_conf *conf, const char *cmd);
/* Take the first look (no line); then each call prints one status line
 * with the rates since the previous call. */
void fr_term_status(struct fr_term *t, const struct fr_conf *conf);
void fr_term_free(struct fr_term *t);

#endif
