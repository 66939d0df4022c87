/*
 * pipeline.h — `freshet process`: the log to the lake, one epoch at a time;
 * in the scale-out mode (docs/SCALEOUT.md, ADR 0014) one shard per log
 * partition, a finalizer for the gold tables, and the consumer-group member
 * that runs the shards its instance is assigned.
 */
#ifndef FR_PIPELINE_H
#define FR_PIPELINE_H

#include "conf/conf.h"

#include <stdint.h>

/* Longest pipeline id of a shard or finalizer ("<general.pipeline_id>-p63"). */
#define FR_PIPE_ID_MAX 160
/* The finalizer's pipeline id: "<general.pipeline_id>" FR_PIPE_FINAL_SUFFIX. */
#define FR_PIPE_FINAL_SUFFIX "-gold"
/* The finalizer's markers record ranges of shard epochs with this prefix:
 * freshet.source-offsets "shard/0:4-9,shard/1:3-3" (fr_ck_range_text). */
#define FR_PIPE_FINAL_RANGE "shard"

int fr_cmd_process(struct fr_conf *conf, int argc, char **argv);

/* `freshet compact` (compact_cmd.c) on the configured lake: 0 success, 1
 * failure (message on stderr), 2 usage error. */
int fr_cmd_compact(struct fr_conf *conf, int argc, char **argv);

/* `freshet process --finalize` (final.c): returns the exit status.
 * instance: the identity published in its stats file (NULL: hostname:pid). */
int fr_final_run(struct fr_conf *conf, int once, const char *instance);

/* The finalizer's checkpoint state (final.c's format, version 1: without
 * the enrichment's topics section) from its window operators, its frontier
 * and the watermark of each partition's shard: for `freshet rebuild` on a
 * group's lake (rebuild_group.c), which writes the finalizer's checkpoint. */
struct fr_win;
struct fr_top;
struct fr_buf;
int fr_final_state_save(const struct fr_win *win, const struct fr_top *top, int64_t frontier,
                        uint32_t nparts, const int64_t *wm, struct fr_buf *out);

/* `freshet process --group` (group.c): returns the exit status. */
int fr_group_run(struct fr_conf *conf, int argc, char **argv);

#endif
