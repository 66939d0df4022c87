/*
 * stats_int.h — private to src/stats: what view.c needs from a writer
 * handle (stats.c owns the struct) and the formatters render.c, view.c and
 * group.c share.
 */
#ifndef FR_STATS_INT_H
#define FR_STATS_INT_H

#include "stats/stats.h"

/* The handle's view buffer, allocated on first use (NULL: out of memory).
 * Owned by the handle; one thread (the processor's) uses it. */
struct fr_proc_view *fr_stats_view_buffer_int(struct fr_stats *st);
/* The data directory the handle was opened on ("" for memory handles). */
const char *fr_stats_data_dir_int(const struct fr_stats *st);
/* 1 when the handle writes <data>/stats/view.json: the single processor's
 * or the finalizer's (a shard's windows are partial, and shards would
 * overwrite each other's view). */
int fr_stats_writes_view_int(const struct fr_stats *st);
/* Append v as the shortest of %.15g / %.17g that reads back exactly;
 * NaN and infinities as nan_text / "+Inf" / "-Inf". */
int fr_stats_put_double(struct fr_buf *out, double v, const char *nan_text);
/* Prometheus text escapes: HELP text (backslash, newline) and a label
 * value (backslash, double quote, newline). */
int fr_stats_put_help(struct fr_buf *out, const char *s);
int fr_stats_put_label_value(struct fr_buf *out, const char *s);

#endif
