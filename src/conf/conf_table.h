/*
 * conf_table.h — every configuration option freshet has, in one table.
 *
 * The table is the single source for: the struct fr_conf fields, defaults,
 * range checks, `freshet config` output and docs/CONFIGURATION.md (a test
 * fails when the generated document and the committed one drift).
 *
 * Columns: section, key, type (INT or STR), default, min, max (INT only),
 * flags (0 or FR_CONF_SECRET: may only come from the environment variable
 * FRESHET_<SECTION>_<KEY>, never from a file or a log line), help text.
 * Units are part of the key name (_ms, _s, _bytes), as Prometheus does.
 */
#ifndef FR_CONF_TABLE_H
#define FR_CONF_TABLE_H

#define FR_KiB (1024LL)
#define FR_MiB (1024LL * 1024)
#define FR_GiB (1024LL * 1024 * 1024)

/* clang-format off */
#define FR_CONF_TABLE(X)                                                                   \
    X(general, data_dir, STR, "./freshet-data", 0, 0, 0,                                  \
      "Directory holding the log, the lake, the catalog and the stats files.")            \
    X(general, pipeline_id, STR, "freshet", 0, 0, 0,                                      \
      "Identifier written into every snapshot summary; two pipelines must differ.")       \
    X(general, progress_interval_ms, INT, "5000", 1, 3600000, 0,                          \
      "Long work (process --once, rebuild, verify, compact, dlq replay) prints a progress line this often when stderr is not a terminal; on a terminal one line updates in place. -q silences both.") \
    X(lake, catalog_uri, STR, "", 0, 0, 0,                                                \
      "Empty: the tables are in the SQLite catalog <data_dir>/lake/catalog.db. Else the base URI of an Iceberg REST catalog (e.g. http://127.0.0.1:8787/iceberg, `freshet serve`'s) that shares the warehouse: the processor creates its namespace and tables there if absent and commits every epoch through it, and every other command reads and commits through it too, without a local catalog.db (docs/REST.md, docs/TOPOLOGIES.md).") \
    X(lake, catalog_token, STR, "", 0, 0, FR_CONF_SECRET,                                 \
      "Bearer token for lake.catalog_uri. Secret: environment only (FRESHET_LAKE_CATALOG_TOKEN).") \
    X(lake, warehouse, STR, "", 0, 0, 0,                                                  \
      "Where the tables' files go: empty for <data_dir>/lake/warehouse on local disk, or s3://bucket/prefix for an S3 or MinIO bucket (settings under [s3]; docs/S3.md). The catalog is <data_dir>/lake/catalog.db either way, unless lake.catalog_uri names a REST catalog.") \
    X(log, partitions, INT, "1", 1, 64, 0,                                                \
      "Partitions of the `recentchange` topic created by ingest.")                        \
    X(log, segment_bytes, INT, "134217728", 1 * FR_MiB, 4 * FR_GiB, 0,                    \
      "Roll to a new segment file once the active one reaches this size.")                \
    X(log, fsync_interval_ms, INT, "50", 0, 10000, 0,                                     \
      "Group commit: fsync appended records at least this often (0 = every append).")     \
    X(log, fsync_bytes, INT, "4194304", 4 * FR_KiB, 1 * FR_GiB, 0,                        \
      "Group commit: fsync as soon as this many bytes are pending.")                      \
    X(log, retention_hours, INT, "168", 1, 87600, 0,                                      \
      "Delete sealed segments whose newest record is older than this.")                   \
    X(log, retention_bytes, INT, "10737418240", 16 * FR_MiB, 1024 * FR_GiB, 0,            \
      "Per partition: delete the oldest sealed segments beyond this total size.")         \
    X(log, backend, STR, "embedded", 0, 0, 0,                                             \
      "Where the log lives: `embedded` (segment files under the data directory) or `kafka` (Kafka or Redpanda through librdkafka, see KAFKA.md).") \
    X(kafka, brokers, STR, "127.0.0.1:9092", 0, 0, 0,                                     \
      "Bootstrap brokers (host:port,...) when log.backend = kafka.")                      \
    X(kafka, topic, STR, "recentchange", 0, 0, 0,                                         \
      "Kafka topic holding the raw events (freshet's log topic `recentchange`); create it with log.partitions partitions.") \
    X(kafka, message_timeout_ms, INT, "30000", 1000, 3600000, 0,                          \
      "A produced record not acknowledged by the brokers within this fails the flush (ingest stops and resumes from the tails).") \
    X(kafka, linger_ms, INT, "5", 0, 1000, 0,                                             \
      "Producer batching delay (librdkafka linger.ms).")                                  \
    X(kafka, queue_max_kbytes, INT, "65536", 1024, 2097151, 0,                            \
      "Cap on records queued in the producer (queue.buffering.max.kbytes); a full queue is backpressure.") \
    X(kafka, queued_max_kbytes, INT, "4096", 64, 2097151, 0,                              \
      "Reader prefetch cap per partition (queued.max.messages.kbytes).")                  \
    X(kafka, queued_min_messages, INT, "1000", 1, 10000000, 0,                            \
      "Reader prefetch: fetch more once fewer messages than this are queued (queued.min.messages).") \
    X(kafka, fetch_max_bytes, INT, "1048576", 65536, 1073741824, 0,                       \
      "Reader fetch size cap (fetch.max.bytes and max.partition.fetch.bytes).")           \
    X(kafka, group_id, STR, "freshet-process", 0, 0, 0,                                   \
      "Consumer group of `freshet process --group` (the scale-out mode, SCALEOUT.md): the instances in it split the topic's partitions, one shard per partition.") \
    X(kafka, session_timeout_ms, INT, "10000", 1000, 300000, 0,                           \
      "Group session timeout (librdkafka session.timeout.ms): an instance silent this long loses its partitions to the others.") \
    X(kafka, security_protocol, STR, "plaintext", 0, 0, 0,                                \
      "librdkafka security.protocol: plaintext, ssl, sasl_plaintext or sasl_ssl.")        \
    X(kafka, sasl_mechanism, STR, "", 0, 0, 0,                                            \
      "librdkafka sasl.mechanisms (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512); empty: none.")   \
    X(kafka, sasl_username, STR, "", 0, 0, 0,                                             \
      "SASL user name.")                                                                  \
    X(kafka, sasl_password, STR, "", 0, 0, FR_CONF_SECRET,                                \
      "SASL password. Secret: environment only (FRESHET_KAFKA_SASL_PASSWORD).")          \
    X(ingest, source_url, STR, "https://stream.wikimedia.org/v2/stream/recentchange", 0, 0, 0, \
      "SSE source. `freshet demo` points this at its built-in feed.")                     \
    X(ingest, user_agent, STR,                                                            \
      "freshet/" FR_VERSION " (https://github.com/freshet/freshet; ops@freshet.invalid)", \
      0, 0, 0,                                                                            \
      "Descriptive User-Agent, required by Wikimedia's policy; put your contact here.")    \
    X(ingest, stall_timeout_s, INT, "60", 1, 3600, 0,                                     \
      "Reconnect when the source sends no bytes for this long.")                          \
    X(ingest, backoff_min_ms, INT, "1000", 10, 600000, 0,                                 \
      "First reconnect delay; doubles (with full jitter) on consecutive failures.")       \
    X(ingest, backoff_max_ms, INT, "60000", 100, 3600000, 0,                              \
      "Upper bound of the reconnect delay.")                                              \
    X(ingest, max_event_bytes, INT, "1048576", 1 * FR_KiB, 64 * FR_MiB, 0,                \
      "Events larger than this are discarded and counted, never buffered.")               \
    X(ingest, file_fsync_bytes, INT, "33554432", 4 * FR_KiB, 1 * FR_GiB, 0,               \
      "`ingest --file`: group-commit the log once this many bytes are pending over all partitions (log.fsync_bytes is for live streams; a file import wants throughput, and a kill loses nothing: the re-run reads it again).") \
    X(ingest, file_fsync_interval_ms, INT, "1000", 0, 60000, 0,                           \
      "`ingest --file`: group-commit the log at least this often (0 = every line).")      \
    X(ingest, resume_rewind_ms, INT, "1", 0, 60000, 0,                                    \
      "Subtract this from each timestamp of the stored id before resuming (PROTOCOL.md §4): re-delivers events sharing the last millisecond; downstream dedup removes them.") \
    X(ingest, status_interval_s, INT, "10", 1, 3600, 0,                                   \
      "How often ingest logs its progress line (events, rate, position).")                \
    X(ingest, gap_tolerance_ms, INT, "60000", 0, 86400000, 0,                             \
      "A connection asking for a past position (--since or a resume) whose first events are later than asked by more than this reports a retention gap (warning and metric).") \
    X(process, trigger_ms, INT, "1000", 10, 600000, 0,                                    \
      "Cut an epoch this long after the previous cut (a fixed rate: an epoch's own processing does not add to the wait; only when records are waiting), or sooner at epoch_max_records.") \
    X(process, epoch_max_records, INT, "1000000", 1, 10000000, 0,                         \
      "Cut an epoch once this many log records are in it (backfill epochs are this large: fewer, larger epochs cost less per record; a crash replays at most one).") \
    X(process, lateness_s, INT, "120", 0, 86400, 0,                                       \
      "Allowed lateness: watermark = largest event time seen - this. Shared by dedup and windows.") \
    X(process, max_future_s, INT, "600", 0, 31536000, 0,                                  \
      "An event time further than this ahead of its ingest time is dead-lettered (future_event).") \
    X(process, max_event_bytes, INT, "1048576", 1 * FR_KiB, 64 * FR_MiB, 0,               \
      "Larger log records are dead-lettered (oversize).")                                 \
    X(process, row_group_bytes, INT, "8388608", 1 * FR_MiB, 512 * FR_MiB, 0,              \
      "Parquet row-group size: bounds each table writer's memory.")                       \
    X(process, decode_ahead_records, INT, "65536", 0, 10000000, 0,                        \
      "Epochs of at least this many records are read and decoded on a second thread while the operators run (0: never). Live epochs stay under it, also the larger ones after a maintenance pause: the threads' heaps kept ~20 MB resident after such epochs (docs/BENCHMARKS.md).") \
    X(process, maintain_every_epochs, INT, "100", 0, 1000000, 0,                          \
      "After every this many committed epochs the processor compacts its tables' small files (into files of about process.compact_target_bytes) and expires their snapshots (maintenance.expire_after_s, maintenance.retain_last) itself, so commit cost stays flat however fast epochs come (0: leave it all to `freshet compact`).") \
    X(process, maintain_budget_ms, INT, "10000", 0, 86400000, 0,                          \
      "A maintenance round of the processor (or the scale-out finalizer) starts no new work (a compaction bin, a table's expiry or orphan removal) once it has run this long, and the next round goes on from the table it stopped at. No epoch is cut while a round runs, and on an object store a whole round took 67-164 s (docs/BENCHMARKS.md, S3 warehouse with maintenance), so the stream stalls at most about this long plus one step (0: no limit).") \
    X(process, idle_timeout_s, INT, "60", 0, 86400, 0,                                   \
      "A shard (`freshet process --partition N`, the scale-out mode) whose partition brings nothing new for this long commits an empty idle epoch that raises its watermark to the wall clock minus process.lateness_s, so a quiet partition stops holding back the gold windows of the other partitions; a record arriving on it later is judged against that watermark (0: never).") \
    X(process, shard_stop_timeout_s, INT, "30", 1, 3600, 0,                               \
      "When the consumer group takes a partition away, how long `freshet process --group` lets its shard finish the epoch in flight (SIGTERM) before SIGKILL.") \
    X(process, checkpoint_dir, STR, "", 0, 0, 0,                                          \
      "Where checkpoints and offsets WALs live (empty: <general.data_dir>/process). In the scale-out mode every instance must see the same directory (a shared volume), so a partition that moves resumes from its checkpoint on its new owner.") \
    X(process, checkpoint_uri, STR, "", 0, 0, 0,                                          \
      "An object-store copy of each pipeline's checkpoint (s3://bucket/prefix, with the [s3] settings): a shard that moves to a machine without its checkpoint directory starts from the bucket's copy instead of replaying its history from the lake (SCALEOUT.md); with enrichment, each epoch's enrichment state is copied there before its commit (ADR 0064). Empty: none.") \
    X(process, checkpoint_upload_every_epochs, INT, "10", 1, 1000000, 0,                  \
      "With process.checkpoint_uri: copy the checkpoint to the bucket after every this many epochs (a copy behind the lake costs only the replay of the epochs after it).") \
    X(process, compact_target_bytes, INT, "8388608", 1 * FR_MiB, 4 * FR_GiB, 0,           \
      "Target file size of the processor's own compaction: files under 1/64 of this are packed at every round, larger ones in size tiers (factor 4) once four of a size exist, up to half of this (ADR 0020), so a byte is rewritten a few times and the live file count follows the table's bytes; `freshet compact` (maintenance.target_file_bytes) merges the results into larger files less often.") \
    X(process, compact_row_group_bytes, INT, "524288", 64 * FR_KiB, 512 * FR_MiB, 0,       \
      "Row-group size of the files the processor's own compaction writes. It runs inside the live processor: with 8 MiB row groups (process.row_group_bytes) its writer's chunk buffers and dictionaries grew with the row group and RSS rose from 25 to ~55 MB for every round; 1 MiB still let late rounds (a full state, ~900 snapshots) reach 33-35 MB, 512 KiB keeps every round under 32 MB for ~2-3 % larger compacted files (docs/BENCHMARKS.md, sessions 7 and 9). Its pages are at most half of this (at least 64 KiB) and its dictionaries a quarter, and it reads its inputs 1,024 rows at a time.") \
    X(maintenance, interval_s, INT, "60", 5, 86400, 0,                                    \
      "`up`/`demo` run table maintenance (`freshet compact`) this often, beside the stream.") \
    X(maintenance, expire_after_s, INT, "900", 0, 31536000, 0,                            \
      "Expire snapshots older than this (time travel reaches this far back); each pipeline's newest epoch marker is always kept.") \
    X(maintenance, retain_last, INT, "50", 1, 100000, 0,                                  \
      "Keep at least this many snapshots per table, however old.")                       \
    X(maintenance, orphans_after_s, INT, "3600", 600, 31536000, 0,                        \
      "Remove files no snapshot references once they are this old (a commit in flight writes files first).") \
    X(maintenance, target_file_bytes, INT, "134217728", 1 * FR_MiB, 4 * FR_GiB, 0,        \
      "Compaction bin-packs small data files into files of about this size.")            \
    X(demo, feed_listen, STR, "127.0.0.1:8788", 0, 0, 0,                                 \
      "Where `freshet demo` runs its built-in synthetic feed.")                            \
    X(demo, rate, INT, "200", 1, 1000000, 0,                                              \
      "Events per second the demo feed sends.")                                           \
    X(up, restart_min_ms, INT, "500", 10, 600000, 0,                                      \
      "Supervisor: first restart delay of a child that died; doubles up to the maximum.") \
    X(up, restart_max_ms, INT, "30000", 100, 3600000, 0,                                  \
      "Supervisor: upper bound of the restart delay.")                                    \
    X(enrich, enabled, INT, "0", 0, 1, 0,                                                 \
      "1: `freshet process` looks up the Wikidata item of every on-time edit (types edit and new) and writes silver_topics, gold_top_topics and dlq_lookups (docs/ENRICH.md). Off by default: it calls enrich.api_url; `freshet demo` turns it on against the demo feed's API fixture.") \
    X(enrich, pending_max, INT, "20000", 16, 10000000, 0,                                 \
      "Edits held waiting for their lookup (checkpointed with each epoch). When full, a new edit goes to dlq_lookups with reason backlog (replayable) instead of growing the state.") \
    X(enrich, backlog_wait_ms, INT, "0", 0, 3600000, 0,                                  \
      "When the pending table is full, wait up to this long for room (lookups go on meanwhile) before an edit goes to dlq_lookups as backlog. 0: never wait, so a slow API cannot slow the other tables (live); raise it for backfills, where every edit should be looked up and the API's pace is the pace.") \
    X(enrich, api_url, STR, "https://{wiki}/w/api.php", 0, 0, 0,                         \
      "MediaWiki API endpoint template; `{wiki}` is replaced by the event's server_name (or a wiki name the fixture knows: `freshet feed` serves http://HOST:PORT/api/{wiki}/w/api.php).") \
    X(enrich, user_agent, STR,                                                            \
      "freshet/" FR_VERSION " (https://github.com/freshet/freshet; ops@freshet.invalid) enrich", \
      0, 0, 0,                                                                            \
      "Descriptive User-Agent for API lookups (Wikimedia's policy); put your contact here.") \
    X(enrich, rate_per_s, INT, "10", 0, 10000, 0,                                         \
      "API requests per second (token bucket, burst of one second's worth; 0 = unlimited).") \
    X(enrich, batch_titles, INT, "50", 1, 50, 0,                                          \
      "Titles per API request (the API's limit is 50).")                                  \
    X(enrich, max_inflight, INT, "4", 1, 256, 0,                                          \
      "API requests in flight at once.")                                                  \
    X(enrich, linger_ms, INT, "20", 0, 60000, 0,                                          \
      "Wait up to this long for a batch to fill before sending it.")                      \
    X(enrich, cache_entries, INT, "100000", 0, 100000000, 0,                              \
      "Lookup cache: most entries kept (LRU; resolved and no-item answers; 0 = no cache).") \
    X(enrich, cache_bytes, INT, "33554432", 0, 16 * FR_GiB, 0,                            \
      "Lookup cache: most bytes kept (entries and key text).")                            \
    X(enrich, queue_cap, INT, "10000", 1, 10000000, 0,                                    \
      "Keys pending at once (queued, in flight or unpolled); submit returns FR_EAGAIN beyond.") \
    X(enrich, timeout_ms, INT, "10000", 1, 600000, 0,                                     \
      "Per API request, connect included.")                                               \
    X(enrich, max_attempts, INT, "5", 1, 100, 0,                                          \
      "Requests a key may take part in before its outcome is `failed`.")                  \
    X(enrich, backoff_min_ms, INT, "500", 1, 600000, 0,                                   \
      "First retry delay after a 429, 5xx, maxlag or transport error; doubles (equal jitter), never below Retry-After.") \
    X(enrich, backoff_max_ms, INT, "30000", 1, 3600000, 0,                                \
      "Upper bound of the retry delay.")                                                  \
    X(enrich, maxlag_s, INT, "5", 0, 3600, 0,                                             \
      "maxlag parameter sent with every request (Wikimedia's recommendation: 5; 0 = none).") \
    X(enrich, labels, INT, "1", 0, 1, 0,                                                  \
      "1: a resolved edit also gets its item's label (wbgetentities on www.wikidata.org through enrich.api_url), in the wiki's content language, else English (docs/ENRICH.md, Labels).") \
    X(serve, listen, STR, "127.0.0.1:8787", 0, 0, 0,                                      \
      "Address of the HTTP server (metrics, API, dashboard). Loopback by default.")       \
    X(serve, api_token, STR, "", 0, 0, FR_CONF_SECRET,                                    \
      "Bearer token for endpoints that change things. Secret: environment only.")         \
    X(serve, web_root, STR, "", 0, 0, 0,                                                  \
      "Directory of the dashboard and explorer pages; empty: the installed share/freshet/web, else the source tree's web/.") \
    X(serve, max_connections, INT, "256", 4, 100000, 0,                                   \
      "HTTP connections accepted at once; more are refused.")                             \
    X(serve, max_streams, INT, "64", 1, 10000, 0,                                         \
      "Open /api/v1/stream connections at once; more get 503.")                           \
    X(serve, timeout_s, INT, "30", 1, 3600, 0,                                            \
      "Close an HTTP connection after this many seconds without progress (also a client that stops reading).") \
    X(serve, request_max_bytes, INT, "32768", 4 * FR_KiB, 1 * FR_MiB, 0,                  \
      "Memory per HTTP connection for the request line and headers; larger requests are refused.") \
    X(s3, endpoint, STR, "", 0, 0, 0,                                                     \
      "S3 endpoint for an `s3://` warehouse: `https://s3.<region>.amazonaws.com`, or MinIO / moto such as `http://127.0.0.1:9000` (docs/S3.md).") \
    X(s3, region, STR, "us-east-1", 0, 0, 0,                                              \
      "Region the requests are signed for (SigV4 credential scope).")                     \
    X(s3, path_style, INT, "1", 0, 1, 0,                                                  \
      "1: `<endpoint>/<bucket>/<key>` (MinIO, moto); 0: `<bucket>.<endpoint host>/<key>` (AWS virtual-host style).") \
    X(s3, access_key_id, STR, "", 0, 0, 0,                                                \
      "Access key id; empty: the environment's AWS_ACCESS_KEY_ID.")                       \
    X(s3, secret_access_key, STR, "", 0, 0, FR_CONF_SECRET,                               \
      "Secret access key. Secret: environment only (FRESHET_S3_SECRET_ACCESS_KEY, else AWS_SECRET_ACCESS_KEY); never logged.") \
    X(s3, session_token, STR, "", 0, 0, FR_CONF_SECRET,                                   \
      "Session token of temporary credentials. Secret: environment only (FRESHET_S3_SESSION_TOKEN, else AWS_SESSION_TOKEN).") \
    X(s3, max_attempts, INT, "5", 1, 100, 0,                                              \
      "Attempts per request on 5xx, 429, timeouts and connection errors (exponential backoff with full jitter).") \
    X(s3, retry_budget_ms, INT, "60000", 100, 3600000, 0,                                 \
      "Total time one request may take, retries and backoff included; then the epoch fails and is retried.") \
    X(s3, stall_timeout_ms, INT, "15000", 1000, 600000, 0,                                \
      "Abort (and retry) a transfer that moves no byte for this long.")                  \
    X(s3, part_bytes, INT, "8388608", 5 * FR_MiB, 5 * FR_GiB, 0,                          \
      "Multipart part size; also the memory a streaming upload buffers.")                 \
    X(s3, multipart_threshold_bytes, INT, "16777216", 5 * FR_MiB, 5 * FR_GiB, 0,          \
      "Objects larger than this are uploaded in parts.")
/* clang-format on */

#endif
