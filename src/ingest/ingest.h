/*
 * ingest.h — `freshet ingest`: the SSE source to the log.
 *
 * Contract (DESIGN.md, hop SSE → ingest → log): every event is appended
 * with its SSE id in the record header `sse_id`; the resume position is
 * derived only from the last *durable* record, so it can never be ahead of
 * durable data. Resuming follows PROTOCOL.md §4: the stored id's
 * timestamps are moved back by ingest.resume_rewind_ms, so events that
 * share the last millisecond are delivered again (at-least-once); the
 * processor's dedup on meta.id removes that overlap, and ingest counts it.
 */
#ifndef FR_INGEST_H
#define FR_INGEST_H

#include "conf/conf.h"
#include "core/buf.h"

#include <stddef.h>
#include <stdint.h>

/* Rewrite a Wikimedia SSE id (a JSON array of {topic, partition,
 * timestamp|offset}) with every "timestamp" lowered by rewind_ms; offsets
 * are kept. Appends to out. FR_EJSON when id is not such an array. */
int fr_ingest_resume_id(const char *id, size_t len, int64_t rewind_ms, struct fr_buf *out);

/* What ingest needs from one event's JSON: whether it is a canary, its
 * event time, its dedup key, and the record key (wiki and title, so one
 * page's events stay in one partition, in order). Fields absent from a
 * malformed event are left empty; ingest never rejects: the processor's
 * quality gate does that, with a reason. */
struct fr_ingest_meta {
    int canary;          /* meta.domain == "canary" */
    int64_t event_ms;    /* meta.dt in ms, or -1 when absent or malformed */
    char meta_id[64];    /* meta.id (empty when absent) */
    char key[512];       /* "wiki\x1ftitle" truncated, empty when absent */
    size_t key_len;
};
void fr_ingest_extract(const char *json, size_t len, struct fr_ingest_meta *meta);

/* The log partition of an event: its record key's CRC-32C modulo
 * log.partitions (0 with one partition or no key), so one page's events
 * go to one partition, in order. The same for every ingest path. */
int32_t fr_ingest_partition(const struct fr_conf *conf, const struct fr_ingest_meta *meta);

struct fr_log_opts;
/* The log's options for an ingest writer, from conf (log.partitions,
 * log.segment_bytes, log.retention_*) with the given group commit: records
 * up to ingest.max_event_bytes plus 64 KiB for key and headers (at most
 * FR_LOG_MAX_FRAME), a write buffer that holds one whole record. */
void fr_ingest_log_opts(const struct fr_conf *conf, int64_t fsync_interval_ms, int64_t fsync_bytes,
                        struct fr_log_opts *o);

int fr_cmd_ingest(struct fr_conf *conf, int argc, char **argv);

#endif
