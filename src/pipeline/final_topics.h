/*
 * final_topics.h — the finalizer's part of enrichment in the scale-out mode
 * (ADR 0046, docs/ENRICH.md "Scale-out"): gold_top_topics computed from the
 * silver_topics rows the shards committed.
 *
 * A shard (`freshet process --partition N` with enrich.enabled) looks up its
 * own partition's edits and writes silver_topics and dlq_lookups in its own
 * epochs (estage.c); an answer may land epochs after its edit. Each shard
 * epoch's marker carries the shard's topics frontier
 * (freshet.topics-frontier-us): min(its watermark, the event time of its
 * oldest edit still waiting for a lookup), so none of its later
 * silver_topics rows is older. The finalizer counts the resolved rows of the
 * shard epochs it consumes into the topics operator (src/process/topics.c)
 * and settles windows at
 *
 *     topics frontier = max(previous, min over every partition of the topics
 *                           frontier its shard committed with its newest
 *                           consumed epoch)
 *
 * so each window is emitted once, after every lookup of an edit in it has
 * landed. A partition whose shard has not published one (none yet, or
 * enrichment off there) holds the table back.
 *
 * Owned by final.c's single thread; nothing here touches the lake: final.c
 * reads the files and commits.
 */
#ifndef FR_PIPELINE_FINAL_TOPICS_H
#define FR_PIPELINE_FINAL_TOPICS_H

#include "core/buf.h"
#include "parquet/parquet.h"
#include "pipeline/checkpoint.h"
#include "pipeline/lake.h"
#include "pipeline/tables.h"

#include <stdint.h>

struct fr_ftopics;

/* The columns of silver_topics that fr_ftopics_batch reads, in its order. */
extern const struct fr_lake_col fr_ftopics_cols[];
extern const uint32_t fr_ftopics_ncols;

/* FR_OK or FR_ENOMEM. Free with fr_ftopics_free (accepts NULL). */
int fr_ftopics_open(struct fr_ftopics **out);
void fr_ftopics_free(struct fr_ftopics *ft);

/* fr_lake_batch_fn over silver_topics (fr_ftopics_cols): every resolved
 * row's item counted in its minute and wiki. A row with an unreadable item
 * is FR_ECORRUPT: the shard wrote it. */
int fr_ftopics_batch(void *arg, const struct fr_pq_batch *b);

/* Partition p's shard committed frontier us with its newest consumed epoch
 * (FR_PROC_WM_NONE: none). */
void fr_ftopics_shard(struct fr_ftopics *ft, uint32_t p, int64_t us);
/* The frontier over partitions 0..nparts-1 (max of the previous one and
 * the minimum of theirs); it never moves back. */
int64_t fr_ftopics_next(const struct fr_ftopics *ft, uint32_t nparts);
/* Emit every window ending at or before frontier (FR_PROC_WM_NONE: none)
 * to tw when write (else only counted, a replay), and remember frontier.
 * *rows gets the rows emitted. Errors of the operator or the writer. */
int fr_ftopics_advance(struct fr_ftopics *ft, int64_t frontier, struct fr_tw *tw, int write,
                       uint64_t *rows);
int64_t fr_ftopics_frontier(const struct fr_ftopics *ft);
/* Resolved rows counted since the last call (then zeroed). */
uint64_t fr_ftopics_take_rows(struct fr_ftopics *ft);
/* <data_dir>/stats/topics.json for the dashboard: the group's provisional
 * top topics of the newest open window and the topics frontier; counts
 * null (each shard publishes its lookups' counts in its own stats file,
 * and serve sums them). In a group only the finalizer writes it. */
void fr_ftopics_publish(struct fr_ftopics *ft, const char *data_dir, int64_t epoch);

/*
 * State, inside the finalizer's checkpoint (final.c, state version 2),
 * little-endian:
 *
 *   size   field
 *   4      magic "FRFT"
 *   8      frontier (INT64_MIN: none)
 *   4      n partitions (<= FR_CK_MAX_PARTS)
 *   8 x n  each shard's topics frontier
 *   8      L, then L bytes: fr_topics_save
 *
 * fr_ftopics_load reads one such section at bytes and sets *used to its
 * length; FR_ECORRUPT for a bad one.
 */
int fr_ftopics_save(const struct fr_ftopics *ft, uint32_t nparts, struct fr_buf *out);
int fr_ftopics_load(struct fr_ftopics *ft, const uint8_t *bytes, size_t len, size_t *used);

#endif
