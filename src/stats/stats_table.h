/*
 * stats_table.h — every metric freshet publishes, in one table.
 *
 * The table is the single source for: the slot layout of the stats files
 * (stats.c), the Prometheus exposition and the JSON of `freshet serve`
 * (render.c), and docs/METRICS.md (`freshet serve --metrics-markdown`; a
 * test fails when the committed document drifts from the table).
 *
 * Columns: ID, stage (the process that owns the value: INGEST and PROCESS
 * publish through their stats file, SERVE keeps its own in memory), name
 * (Prometheus name without the `freshet_` prefix; base units in the name as
 * Prometheus's conventions say: `_seconds`, `_bytes`, counters end in
 * `_total`), type (COUNTER, GAUGE, HISTOGRAM), unit ("seconds", "bytes" or
 * "" for a plain count), labels (NONE or a label set below; histograms take
 * NONE), buckets (a bucket set for histograms, NONE otherwise), help.
 *
 * Append rows freely: the file layout follows the table, and a reader
 * refuses a file whose layout checksum differs from its own table. Never
 * rename a metric: dashboards, alert rules and scripts use the names.
 */
#ifndef FR_STATS_TABLE_H
#define FR_STATS_TABLE_H

#include "process/process.h"

/* Label sets: X(set, label name, number of values). The values come from
 * the tables named in stats.c (gate reasons, outcomes, stages). */
#define FR_STATS_LABEL_SETS(X)                                                                     \
    X(NONE, "", 1)                                                                                 \
    X(REASON, "reason", FR_GATE_REASON_COUNT - 1)                                                  \
    X(OUTCOME, "outcome", 4)                                                                       \
    X(STAGE, "stage", 3)                                                                           \
    X(LOOKUP, "outcome", 4)                                                                        \
    X(LABEL, "outcome", 5)

/* Bucket sets: upper bounds in seconds, ascending; +Inf is implicit. */
#define FR_STATS_BUCKETS_FSYNC 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1
#define FR_STATS_BUCKETS_BATCH 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120
#define FR_STATS_BUCKET_SETS(X)                                                                    \
    X(NONE, 0)                                                                                     \
    X(FSYNC, 11)                                                                                   \
    X(BATCH, 13)

/* clang-format off */
#define FR_STATS_TABLE(X)                                                                          \
    /* ---- ingest: <data>/stats/ingest.stats ---- */                                              \
    X(INGEST_EVENTS, INGEST, "ingest_events_received_total", COUNTER, "", NONE, NONE,              \
      "SSE message events received from the source, before the canary and overlap rules.")        \
    X(INGEST_CANARIES, INGEST, "ingest_canaries_dropped_total", COUNTER, "", NONE, NONE,           \
      "Canary events (meta.domain \"canary\") dropped at ingest.")                                 \
    X(INGEST_OVERLAP, INGEST, "ingest_overlap_skipped_total", COUNTER, "", NONE, NONE,             \
      "Events the source re-delivered after a resume, recognised and not appended again.")         \
    X(INGEST_RECONNECTS, INGEST, "ingest_sse_reconnects_total", COUNTER, "", NONE, NONE,           \
      "Connection attempts to the source after the first one.")                                    \
    X(INGEST_STALLS, INGEST, "ingest_sse_stalls_total", COUNTER, "", NONE, NONE,                   \
      "Connections dropped because the source sent nothing for ingest.stall_timeout_s.")           \
    X(INGEST_OVERSIZE, INGEST, "ingest_oversize_events_total", COUNTER, "", NONE, NONE,            \
      "Events longer than ingest.max_event_bytes, discarded by the SSE client.")                   \
    X(INGEST_LAST_EVENT, INGEST, "ingest_last_event_timestamp_seconds", GAUGE, "seconds", NONE,    \
      NONE, "Event time (meta.dt) of the newest event appended to the log, Unix seconds.")         \
    X(INGEST_LAST_APPEND, INGEST, "ingest_last_append_timestamp_seconds", GAUGE, "seconds", NONE,  \
      NONE, "Wall-clock time of the newest append to the log, Unix seconds.")                      \
    X(INGEST_LOG_RECORDS, INGEST, "ingest_log_records_appended_total", COUNTER, "", NONE, NONE,    \
      "Records appended to the log topic recentchange.")                                           \
    X(INGEST_LOG_BYTES, INGEST, "ingest_log_appended_bytes_total", COUNTER, "bytes", NONE, NONE,   \
      "Bytes appended to the log: payload, key and sse_id header of every record.")                \
    X(INGEST_FSYNC, INGEST, "ingest_log_fsync_duration_seconds", HISTOGRAM, "seconds", NONE,       \
      FSYNC, "Duration of each group commit of the log (write, fdatasync, publish).")              \
    X(INGEST_GAPS, INGEST, "ingest_retention_gaps_total", COUNTER, "", NONE, NONE,                \
      "Connections whose source started later than the position asked (--since or a resume) by more than ingest.gap_tolerance_ms: events in between may be lost.") \
    X(INGEST_GAP_FROM, INGEST, "ingest_retention_gap_from_timestamp_seconds", GAUGE, "seconds",   \
      NONE, NONE, "Start of the last retention gap: the position asked for, Unix seconds.")       \
    X(INGEST_GAP_TO, INGEST, "ingest_retention_gap_to_timestamp_seconds", GAUGE, "seconds", NONE, \
      NONE, "End of the last retention gap: the first event the source still had, Unix seconds.") \
    /* ---- process: <data>/stats/process.stats ---- */                                            \
    X(PROC_EPOCHS, PROCESS, "process_epochs_total", COUNTER, "", NONE, NONE,                       \
      "Epochs committed to the lake by this pipeline (replays of committed epochs excluded).")     \
    X(PROC_LAST_EPOCH, PROCESS, "process_last_epoch", GAUGE, "", NONE, NONE,                       \
      "Number of the newest epoch in the lake (the checkpoint).")                                  \
    X(PROC_BATCH, PROCESS, "process_batch_duration_seconds", HISTOGRAM, "seconds", NONE, BATCH,    \
      "Wall time of one epoch, from the start of reading to the saved checkpoint.")                \
    X(PROC_LAST_BATCH, PROCESS, "process_last_batch_duration_seconds", GAUGE, "seconds", NONE,     \
      NONE, "Wall time of the newest epoch (compare with process_trigger_interval_seconds).")      \
    X(PROC_TRIGGER, PROCESS, "process_trigger_interval_seconds", GAUGE, "seconds", NONE, NONE,     \
      "The configured trigger (process.trigger_ms): an epoch is cut this often.")                  \
    X(PROC_RECORDS, PROCESS, "process_records_total", COUNTER, "", OUTCOME, NONE,                  \
      "Log records processed into the lake, by outcome (silver, duplicate, late, dlq); "           \
      "cumulative over the pipeline's life (kept in the checkpoint).")                             \
    X(PROC_DLQ, PROCESS, "process_dlq_records_total", COUNTER, "", REASON, NONE,                   \
      "Records dead-lettered by the quality gate, by reason (docs/QUALITY.md); cumulative "        \
      "over the pipeline's life.")                                                                 \
    X(PROC_WATERMARK, PROCESS, "process_watermark_timestamp_seconds", GAUGE, "seconds", NONE,      \
      NONE, "The watermark after the newest epoch, Unix seconds.")                                 \
    X(PROC_WM_LAG, PROCESS, "process_watermark_lag_seconds", GAUGE, "seconds", NONE, NONE,         \
      "Now minus the watermark (includes the allowed lateness, process.lateness_s).")              \
    X(PROC_DEDUP_KEYS, PROCESS, "process_dedup_keys", GAUGE, "", NONE, NONE,                       \
      "meta.id keys held in the dedup state.")                                                     \
    X(PROC_DEDUP_BYTES, PROCESS, "process_dedup_bytes", GAUGE, "bytes", NONE, NONE,                \
      "Memory allocated for the dedup state.")                                                     \
    X(PROC_COMMIT, PROCESS, "process_commit_duration_seconds", HISTOGRAM, "seconds", NONE, BATCH,  \
      "Duration of an epoch's commit: finishing the Parquet files and the catalog transaction.")   \
    X(PROC_LAST_COMMIT, PROCESS, "process_last_commit_duration_seconds", GAUGE, "seconds", NONE,   \
      NONE, "Duration of the newest epoch's commit.")                                              \
    X(PROC_BEHIND, PROCESS, "process_offsets_behind", GAUGE, "", NONE, NONE,                       \
      "Records durable in the log that no committed epoch holds yet (log end minus checkpoint).")  \
    X(PROC_NEWEST, PROCESS, "process_last_committed_event_timestamp_seconds", GAUGE, "seconds",    \
      NONE, NONE, "Newest event time (meta.dt) committed to the lake, Unix seconds.")              \
    X(PROC_FRESHNESS, PROCESS, "process_freshness_seconds", GAUGE, "seconds", NONE, NONE,          \
      "Now minus the newest event time committed to the lake: how stale the lake is.")             \
    X(PROC_LAST_COMMIT_TS, PROCESS, "process_last_commit_timestamp_seconds", GAUGE, "seconds",     \
      NONE, NONE, "Wall-clock time of the newest commit, Unix seconds.")                           \
    X(PROC_ENRICH_EDITS, PROCESS, "process_enrich_edits_total", COUNTER, "", LOOKUP, NONE,          \
      "Enriched edits by the outcome of their Wikidata lookup, as committed: resolved, no_item "   \
      "(talk, user, missing or invalid pages), failed (to dlq_lookups), backlog (the pending "     \
      "state was full: to dlq_lookups).")                                                          \
    X(PROC_ENRICH_PENDING, PROCESS, "process_enrich_pending", GAUGE, "", NONE, NONE,               \
      "Edits waiting for a lookup (checkpointed with the epoch; capped by enrich.pending_max).")   \
    X(PROC_ENRICH_CACHE_HITS, PROCESS, "process_enrich_cache_hits_total", COUNTER, "", NONE, NONE, \
      "Lookups answered from the cache since the processor started.")                             \
    X(PROC_ENRICH_CACHE_MISSES, PROCESS, "process_enrich_cache_misses_total", COUNTER, "", NONE,   \
      NONE, "Lookups that needed an API request since the processor started.")                     \
    X(PROC_ENRICH_REQUESTS, PROCESS, "process_enrich_api_requests_total", COUNTER, "", NONE, NONE, \
      "MediaWiki API requests made since the processor started (retries included).")              \
    X(PROC_ENRICH_FRONTIER, PROCESS, "process_enrich_frontier_timestamp_seconds", GAUGE,           \
      "seconds", NONE, NONE,                                                                       \
      "gold_top_topics is settled up to here: the watermark, held back by the oldest edit "        \
      "still waiting for its lookup.")                                                             \
    X(PROC_ENRICH_LABELS, PROCESS, "process_enrich_labels_total", COUNTER, "", LABEL, NONE,        \
      "Resolved edits by their label (issue 33), as committed: labelled, no_label (none in the "   \
      "wiki's language nor English), missing (the item is deleted), off (enrich.labels = 0); "     \
      "failed: edits dead-lettered because their label lookup failed.")                            \
    /* ---- serve: kept in serve's memory ---- */                                                  \
    X(STAGE_UP, SERVE, "stage_up", GAUGE, "", STAGE, NONE,                                         \
      "1 when the stage's process is alive (it holds its stats file) and its heartbeat is "        \
      "younger than 30 s, else 0.")                                                                \
    X(STAGE_HEARTBEAT_AGE, SERVE, "stage_heartbeat_age_seconds", GAUGE, "seconds", STAGE, NONE,    \
      "Seconds since the stage last published its figures.")                                       \
    X(STAGE_START, SERVE, "stage_start_time_seconds", GAUGE, "seconds", STAGE, NONE,               \
      "When the stage's current (or last) process started, Unix seconds.")                         \
    X(SERVE_REQUESTS, SERVE, "serve_http_requests_total", COUNTER, "", NONE, NONE,                 \
      "HTTP requests answered by freshet serve.")                                                  \
    X(SERVE_STREAMS, SERVE, "serve_streams", GAUGE, "", NONE, NONE,                                \
      "Open /api/v1/stream connections.")                                                          \
    X(SERVE_DROPPED, SERVE, "serve_stream_frames_dropped_total", COUNTER, "", NONE, NONE,          \
      "Stream frames not sent because the client had not taken the previous ones.")                \
    X(SERVE_JOBS, SERVE, "serve_jobs_started_total", COUNTER, "", NONE, NONE,                      \
      "Maintenance jobs (compact, dlq replay) started through the API.")                      \
    X(SERVE_TOPICS_UNREADABLE, SERVE, "serve_topics_unreadable_total", COUNTER, "", NONE, NONE,    \
      "Reads of `stats/topics.json` refused (malformed, not an object, over its 256 KiB cap, "    \
      "or an I/O error); the live document showed `topics` null instead.")
/* clang-format on */

#endif
