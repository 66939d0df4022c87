/*
 * kafka.h — freshet's log on Kafka or Redpanda, through librdkafka: a
 * second backend behind src/log/log.h's ops table (fr_log_kafka), and the
 * one helper every stage uses to pick the backend from the configuration.
 * Decisions: docs/adr/0013-kafka-backend.md; operator guide: docs/KAFKA.md.
 *
 * Contract differences from the embedded log (everything else in log.h
 * holds as written there):
 *   - A record is ACKNOWLEDGED when its delivery report succeeded
 *     (idempotent producer, acks=all). fr_log_flush waits for every report
 *     (at most kafka.message_timeout_ms). A failed report fails the flush
 *     with FR_EKAFKA (retriable: brokers unavailable, timed out),
 *     FR_EKAFKA_FATAL or FR_EKAFKA_AUTH; those records are not
 *     acknowledged and the handle stays failed: every later append and
 *     flush returns the same code. Close it and open again.
 *   - The offset fr_log_append reports is a prediction (the tail at open
 *     plus the records appended since); it is exact while freshet's ingest
 *     is the only producer of the topic, and the delivery report's offset
 *     is the truth (a difference is logged).
 *   - Append times travel in a reserved header `fr.append_ms` that readers
 *     strip; the producer timestamp is the Kafka CreateTime.
 *   - recovery reports nothing cut; retention_run deletes nothing (the
 *     broker owns its log and its retention).
 *   - The topic must exist (freshet does not create topics) with at least
 *     log.partitions partitions.
 *
 * Threads: a struct fr_kafka is used by one thread at a time (its metadata
 * handle is not locked); log and reader handles as in log.h. librdkafka
 * runs its own threads inside each handle; none of freshet's callbacks run
 * there except the log callback (stderr only).
 */
#ifndef FR_KAFKA_H
#define FR_KAFKA_H

#include "conf/conf.h"
#include "log/log.h"

#include <stdint.h>

/* The backend's ops table; opts->backend_ctx must be a struct fr_kafka. */
extern const struct fr_log_ops fr_log_kafka;

/* Client settings. Strings are copied by fr_kafka_new. */
struct fr_kafka_settings {
    const char *brokers;           /* bootstrap servers "host:port,..." */
    const char *topic;             /* the Kafka topic for freshet's `recentchange` */
    int64_t message_timeout_ms;    /* delivery report deadline */
    int64_t linger_ms;             /* producer batching delay */
    int64_t queue_max_kbytes;      /* producer queue cap */
    int64_t queued_max_kbytes;     /* reader prefetch cap */
    int64_t queued_min_messages;   /* reader prefetch low mark */
    int64_t fetch_max_bytes;       /* fetch.max.bytes, max.partition.fetch.bytes */
    const char *security_protocol; /* NULL or "": plaintext */
    const char *sasl_mechanism;    /* NULL or "": none */
    const char *sasl_username;
    const char *sasl_password; /* secret: never logged */
};

struct fr_kafka; /* client settings plus a metadata handle (opaque) */

/* Defaults (the configuration table's); brokers and topic NULL. */
void fr_kafka_settings_init(struct fr_kafka_settings *s);
/* Copy s into a new client context; no connection is made yet. FR_EINVAL
 * without brokers or topic. Free with fr_kafka_free. */
int fr_kafka_new(const struct fr_kafka_settings *s, struct fr_kafka **out);
/* Accepts NULL. Every log and reader handle opened through it must be
 * closed first. */
void fr_kafka_free(struct fr_kafka *kafka);

/*
 * Point opts at the backend log.backend names: `embedded` leaves opts
 * alone and sets *out NULL; `kafka` sets opts->backend and
 * opts->backend_ctx to a new context (*out, free it with fr_kafka_free
 * after the last handle). Anything else, or `kafka` in a build without
 * FR_KAFKA: FR_ECONFIG with a message on stderr.
 */
int fr_kafka_backend_from_conf(const struct fr_conf *conf, struct fr_log_opts *opts,
                               struct fr_kafka **out);

/* ------------------------------------------------- consumer groups -- */

/* The most partitions a group member reports in one callback. */
#define FR_KAFKA_GROUP_MAX 64

struct fr_kafka_group; /* a consumer-group membership (opaque; group.c) */

/* Called with the partitions of freshet's topic that were assigned or
 * revoked (ids[0..n)), on the thread in fr_kafka_group_poll or close. A
 * revoke callback returns only once those partitions' work has stopped. */
typedef void (*fr_kafka_group_fn)(void *arg, const int32_t *ids, int n);

/*
 * Join consumer group group_id for freshet's topic (kafka.topic): ownership
 * of partitions only (they are paused; nothing is consumed), with the given
 * session timeout. FR_EKAFKA when the client cannot be created, FR_EINVAL
 * without a group id or in a build without FR_KAFKA. Close with
 * fr_kafka_group_close before freeing kafka.
 */
int fr_kafka_group_join(struct fr_kafka *kafka, const char *group_id, int64_t session_timeout_ms,
                        fr_kafka_group_fn on_assign, fr_kafka_group_fn on_revoke, void *arg,
                        struct fr_kafka_group **out);
/* Serve the membership for up to timeout_ms: heartbeats and rebalances
 * (the callbacks run inside). FR_OK, or FR_EKAFKA_FATAL. */
int fr_kafka_group_poll(struct fr_kafka_group *g, int timeout_ms);
/* Leave the group (on_revoke runs for what it holds) and free; NULL ok. */
void fr_kafka_group_close(struct fr_kafka_group *g);

#endif
