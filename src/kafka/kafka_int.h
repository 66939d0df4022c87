/*
 * kafka_int.h — private to src/kafka: the client context, the handle
 * layouts (each starts with src/log's handle header so fr_log_* can
 * dispatch), and the helpers shared by the producer and the consumer.
 */
#ifndef FR_KAFKA_INT_H
#define FR_KAFKA_INT_H

#include "kafka/kafka.h"
#include "log/log_int.h"

#include <librdkafka/rdkafka.h>

/* The reserved header that carries a record's append time (8 bytes,
 * big-endian int64, ms since the epoch). Readers strip it. */
#define FR_KAFKA_APPEND_HDR "fr.append_ms"
/* How long fr_kafka_stat reuses a partition's watermarks: the processor
 * polls every few milliseconds; this bounds its ListOffsets requests. */
#define FR_KAFKA_WM_CACHE_MS 100
/* Network request timeout of every handle (socket.timeout.ms). */
#define FR_KAFKA_SOCKET_MS 10000
/* Timeout of one metadata / watermark request. */
#define FR_KAFKA_META_MS 5000
/* How long reader_next(timeout 0) waits for records known to exist (below
 * the high watermark) but not yet fetched. */
#define FR_KAFKA_FETCH_WAIT_MS 10000

struct fr_kafka {
    struct fr_kafka_settings s; /* strings below are owned copies */
    char *brokers, *topic, *security_protocol, *sasl_mechanism, *sasl_username, *sasl_password;
    rd_kafka_t *meta;   /* lazily created for stat (metadata, watermarks) */
    int32_t meta_parts; /* cached partition count of meta_topic */
    int64_t meta_at_ms; /* when meta_parts was read (mono) */
    char meta_topic[FR_LOG_MAX_TOPIC + 1];
    /* watermarks per partition of meta_topic, reused for FR_KAFKA_WM_CACHE_MS */
    int64_t *wm_lo, *wm_hi, *wm_at;
};

/* client.c */
/* The Kafka topic for freshet's topic name (`recentchange` -> kafka.topic). */
const char *fr_kafka_topic(const struct fr_kafka *kafka, const char *topic);
/* A configuration with the connection settings (brokers, security) set;
 * FR_ECONFIG with a message when librdkafka refuses a value. */
int fr_kafka_conf_new(const struct fr_kafka *kafka, rd_kafka_conf_t **out);
/* Set name=value on conf; FR_ECONFIG with a message (never the value). */
int fr_kafka_conf_set(rd_kafka_conf_t *conf, const char *name, const char *value);
int fr_kafka_conf_set_i64(rd_kafka_conf_t *conf, const char *name, int64_t value);
/* librdkafka's error -> freshet's error space (see the table in client.c). */
int fr_kafka_err(rd_kafka_resp_err_t err);
/* Earliest and high watermark of a partition, within FR_KAFKA_META_MS. */
int fr_kafka_watermarks(rd_kafka_t *rk, const char *topic, int32_t partition, int64_t *lo,
                        int64_t *hi);
/* The partition count of topic (metadata), FR_ENOTFOUND when absent. */
int fr_kafka_partition_count(rd_kafka_t *rk, const char *topic, int32_t *out);

/* consumer.c */
struct fr_kafka_reader;
/* Open a reader on the Kafka topic ktopic (already mapped). */
int fr_kafka_reader_open_k(struct fr_kafka *kafka, const char *ktopic, int32_t partition,
                           int64_t from_offset, struct fr_kafka_reader **out);
int fr_kafka_reader_next(struct fr_log_reader *reader, struct fr_log_rec *out, int timeout_ms);
void fr_kafka_reader_close(struct fr_log_reader *reader);
int fr_kafka_reader_open(const char *data_dir, const char *topic, int32_t partition,
                         int64_t from_offset, const struct fr_log_opts *opts,
                         struct fr_log_reader **out);
int64_t fr_kafka_reader_end(struct fr_log_reader *reader);
/* Messages fetched ahead and not yet handed out (tests of the prefetch cap). */
int64_t fr_kafka_reader_queued(struct fr_log_reader *reader);
int fr_kafka_stat(const char *data_dir, const char *topic, int32_t partition,
                  const struct fr_log_opts *opts, struct fr_log_info *out);

/* producer.c */
int fr_kafka_open(const char *data_dir, const char *topic, const struct fr_log_opts *opts,
                  struct fr_log **out);
int fr_kafka_append(struct fr_log *log, int32_t partition, const struct fr_log_rec *rec,
                    int64_t *out_offset);
int fr_kafka_flush(struct fr_log *log);
int fr_kafka_maybe_flush(struct fr_log *log, int64_t now_ms);
int64_t fr_kafka_next_flush_in(struct fr_log *log, int64_t now_ms);
int64_t fr_kafka_durable_end(struct fr_log *log, int32_t partition);
int32_t fr_kafka_partitions(struct fr_log *log);
int fr_kafka_last(struct fr_log *log, int32_t partition, struct fr_log_rec *rec);
int fr_kafka_recovery(struct fr_log *log, int32_t partition, struct fr_log_recovery *out);
int fr_kafka_retention_run(struct fr_log *log, int64_t now_ms);
void fr_kafka_close(struct fr_log *log);

#endif
