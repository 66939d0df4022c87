/*
 * client.c — what the Kafka producer and consumer share: the client
 * context (settings copied from the configuration), librdkafka
 * configuration with the connection and security settings, the mapping of
 * librdkafka's errors into freshet's error space, partition discovery and
 * fr_log_stat for Kafka, the backend's ops table and the helper that picks
 * the backend from the configuration.
 *
 * Invariants: a secret (sasl.password) is handed to librdkafka and never
 * printed, not even in an error message about it. Thread: the caller's;
 * the log callback runs on librdkafka's threads and only writes stderr.
 */
#include "kafka/kafka_int.h"

#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct fr_log_ops fr_log_kafka = {
    .name = "kafka",
    .open = fr_kafka_open,
    .append = fr_kafka_append,
    .flush = fr_kafka_flush,
    .maybe_flush = fr_kafka_maybe_flush,
    .next_flush_in = fr_kafka_next_flush_in,
    .durable_end = fr_kafka_durable_end,
    .partitions = fr_kafka_partitions,
    .last = fr_kafka_last,
    .recovery = fr_kafka_recovery,
    .retention_run = fr_kafka_retention_run,
    .close = fr_kafka_close,
    .reader_open = fr_kafka_reader_open,
    .reader_next = fr_kafka_reader_next,
    .reader_end = fr_kafka_reader_end,
    .reader_close = fr_kafka_reader_close,
    .stat = fr_kafka_stat,
};

/* ------------------------------------------------------------ settings */

void fr_kafka_settings_init(struct fr_kafka_settings *s)
{
    memset(s, 0, sizeof *s);
    s->message_timeout_ms = 30000;
    s->linger_ms = 5;
    s->queue_max_kbytes = 65536;
    s->queued_max_kbytes = 4096;
    s->queued_min_messages = 1000;
    s->fetch_max_bytes = 1024 * 1024;
}

static int dup_opt(const char *in, char **out)
{
    *out = strdup(in ? in : "");
    return *out ? FR_OK : FR_ENOMEM;
}

int fr_kafka_new(const struct fr_kafka_settings *s, struct fr_kafka **out)
{
    *out = NULL;
    if (!s->brokers || !s->brokers[0] || !s->topic || !s->topic[0] ||
        strlen(s->topic) > FR_LOG_MAX_TOPIC) {
        return FR_EINVAL;
    }
    struct fr_kafka *kafka = calloc(1, sizeof *kafka);
    if (!kafka) {
        return FR_ENOMEM;
    }
    kafka->s = *s;
    int rc = dup_opt(s->brokers, &kafka->brokers);
    rc = rc ? rc : dup_opt(s->topic, &kafka->topic);
    rc = rc ? rc : dup_opt(s->security_protocol, &kafka->security_protocol);
    rc = rc ? rc : dup_opt(s->sasl_mechanism, &kafka->sasl_mechanism);
    rc = rc ? rc : dup_opt(s->sasl_username, &kafka->sasl_username);
    rc = rc ? rc : dup_opt(s->sasl_password, &kafka->sasl_password);
    if (rc < 0) {
        fr_kafka_free(kafka);
        return rc;
    }
    kafka->s.brokers = kafka->brokers;
    kafka->s.topic = kafka->topic;
    kafka->s.security_protocol = kafka->security_protocol;
    kafka->s.sasl_mechanism = kafka->sasl_mechanism;
    kafka->s.sasl_username = kafka->sasl_username;
    kafka->s.sasl_password = kafka->sasl_password;
    *out = kafka;
    return FR_OK;
}

void fr_kafka_free(struct fr_kafka *kafka)
{
    if (!kafka) {
        return;
    }
    if (kafka->meta) {
        rd_kafka_destroy(kafka->meta);
    }
    free(kafka->wm_lo);
    free(kafka->wm_hi);
    free(kafka->wm_at);
    free(kafka->brokers);
    free(kafka->topic);
    free(kafka->security_protocol);
    free(kafka->sasl_mechanism);
    free(kafka->sasl_username);
    if (kafka->sasl_password) {
        memset(kafka->sasl_password, 0, strlen(kafka->sasl_password));
    }
    free(kafka->sasl_password);
    free(kafka);
}

const char *fr_kafka_topic(const struct fr_kafka *kafka, const char *topic)
{
    return strcmp(topic, "recentchange") == 0 ? kafka->topic : topic;
}

/* ------------------------------------------------------- configuration */

int fr_kafka_conf_set(rd_kafka_conf_t *conf, const char *name, const char *value)
{
    char err[256];
    if (rd_kafka_conf_set(conf, name, value, err, sizeof err) != RD_KAFKA_CONF_OK) {
        fr_error("kafka", "librdkafka refuses %s: %s", name, err);
        return FR_ECONFIG;
    }
    return FR_OK;
}

int fr_kafka_conf_set_i64(rd_kafka_conf_t *conf, const char *name, int64_t value)
{
    char text[32];
    snprintf(text, sizeof text, "%lld", (long long)value);
    return fr_kafka_conf_set(conf, name, text);
}

/* librdkafka's log lines, on its own threads: to stderr with our prefix. */
static void kafka_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk;
    if (level <= 4) {
        fr_warn("kafka", "librdkafka %s: %s", fac, buf);
    } else {
        fr_debug("kafka", "librdkafka %s: %s", fac, buf);
    }
}

int fr_kafka_conf_new(const struct fr_kafka *kafka, rd_kafka_conf_t **out)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (!conf) {
        return FR_ENOMEM;
    }
    rd_kafka_conf_set_log_cb(conf, kafka_log_cb);
    int rc = fr_kafka_conf_set(conf, "bootstrap.servers", kafka->brokers);
    rc = rc ? rc : fr_kafka_conf_set(conf, "client.id", "freshet");
    /* librdkafka's watermark query waits for its request's own timeout
     * (socket.timeout.ms, 60 s by default) when the leader is down: keep
     * every request's wait short so a dead broker is a prompt error. */
    rc = rc ? rc : fr_kafka_conf_set_i64(conf, "socket.timeout.ms", FR_KAFKA_SOCKET_MS);
    if (!rc && kafka->security_protocol[0]) {
        rc = fr_kafka_conf_set(conf, "security.protocol", kafka->security_protocol);
    }
    if (!rc && kafka->sasl_mechanism[0]) {
        rc = fr_kafka_conf_set(conf, "sasl.mechanisms", kafka->sasl_mechanism);
    }
    if (!rc && kafka->sasl_username[0]) {
        rc = fr_kafka_conf_set(conf, "sasl.username", kafka->sasl_username);
    }
    if (!rc && kafka->sasl_password[0]) {
        char err[256];
        if (rd_kafka_conf_set(conf, "sasl.password", kafka->sasl_password, err, sizeof err) !=
            RD_KAFKA_CONF_OK) {
            fr_error("kafka", "librdkafka refuses sasl.password (value not shown)");
            rc = FR_ECONFIG;
        }
    }
    if (rc < 0) {
        rd_kafka_conf_destroy(conf);
        return rc;
    }
    *out = conf;
    return FR_OK;
}

/* --------------------------------------------------------------- errors */

/*
 * librdkafka error -> freshet code. Retriable (FR_EKAFKA): the cluster may
 * answer later (brokers down, leader moving, timeouts, throttling). Fatal:
 * the idempotent producer's fatal state (FR_EKAFKA_FATAL), credentials
 * (FR_EKAFKA_AUTH). Data: a record too large (FR_ETOOBIG), an offset the
 * broker no longer holds (FR_ERANGE). Missing topic: FR_ENOTFOUND.
 */
int fr_kafka_err(rd_kafka_resp_err_t err)
{
    switch (err) {
    case RD_KAFKA_RESP_ERR_NO_ERROR:
        return FR_OK;
    case RD_KAFKA_RESP_ERR__QUEUE_FULL:
        return FR_EAGAIN;
    case RD_KAFKA_RESP_ERR__FATAL:
    case RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER:
    case RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH:
    case RD_KAFKA_RESP_ERR_PRODUCER_FENCED:
    case RD_KAFKA_RESP_ERR_UNKNOWN_PRODUCER_ID:
    case RD_KAFKA_RESP_ERR__INCONSISTENT:
    case RD_KAFKA_RESP_ERR__GAPLESS_GUARANTEE:
        return FR_EKAFKA_FATAL;
    case RD_KAFKA_RESP_ERR__AUTHENTICATION:
    case RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED:
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
        return FR_EKAFKA_AUTH;
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
    case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
        return FR_ENOTFOUND;
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
        return FR_ETOOBIG;
    case RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE:
        return FR_ERANGE;
    case RD_KAFKA_RESP_ERR__INVALID_ARG:
    case RD_KAFKA_RESP_ERR_INVALID_CONFIG:
        return FR_ECONFIG;
    default:
        return FR_EKAFKA;
    }
}

/* ------------------------------------------------------------- metadata */

/* Metadata of every topic, not of one: asking for one topic by name lets
 * a broker with auto-creation create it, and freshet never creates topics. */
int fr_kafka_partition_count(rd_kafka_t *rk, const char *topic, int32_t *out)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, NULL, &md, FR_KAFKA_META_MS);
    if (err) {
        fr_error("kafka", "metadata (looking for topic %s): %s", topic, rd_kafka_err2str(err));
        return fr_kafka_err(err);
    }
    int rc = FR_ENOTFOUND;
    for (int i = 0; i < md->topic_cnt; i++) {
        const rd_kafka_metadata_topic_t *t = &md->topics[i];
        if (strcmp(t->topic, topic) != 0) {
            continue;
        }
        if (t->err) {
            rc = fr_kafka_err(t->err);
            if (rc != FR_ENOTFOUND) {
                fr_error("kafka", "metadata of topic %s: %s", topic, rd_kafka_err2str(t->err));
            }
        } else if (t->partition_cnt > 0) {
            *out = t->partition_cnt;
            rc = FR_OK;
        }
        break;
    }
    rd_kafka_metadata_destroy(md);
    return rc;
}

/*
 * librdkafka 2.0.2's rd_kafka_query_watermark_offsets ignores its timeout
 * while the leader is unreachable (its wait loop has no deadline), so the
 * watermarks come from rd_kafka_offsets_for_times, which keeps its
 * deadline: timestamp -2 asks ListOffsets for the earliest offset, -1 for
 * the latest (the high watermark; freshet writes no transactions).
 */
int fr_kafka_watermarks(rd_kafka_t *rk, const char *topic, int32_t partition, int64_t *lo,
                        int64_t *hi)
{
    int64_t out[2];
    int paused = 0;
    for (int i = 0; i < 2; i++) {
        rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
        if (!parts) {
            return FR_ENOMEM;
        }
        rd_kafka_topic_partition_list_add(parts, topic, partition)->offset = i == 0 ? -2 : -1;
        int64_t t0 = fr_mono_ms();
        rd_kafka_resp_err_t err = rd_kafka_offsets_for_times(rk, parts, FR_KAFKA_META_MS);
        if (!err) {
            err = parts->elems[0].err;
        }
        out[i] = parts->elems[0].offset;
        rd_kafka_topic_partition_list_destroy(parts);
        if (err == RD_KAFKA_RESP_ERR__TIMED_OUT && !paused &&
            fr_mono_ms() - t0 > FR_KAFKA_META_MS + 1000) {
            /* This process was stopped inside the call (SIGSTOP, a frozen
             * VM): the pause is not the broker's silence; ask once more. */
            paused = 1;
            i--;
            continue;
        }
        if (err) {
            int rc = fr_kafka_err(err);
            if (rc != FR_ENOTFOUND) {
                fr_error("kafka", "watermarks of %s [%d]: %s", topic, (int)partition,
                         rd_kafka_err2str(err));
            }
            return rc == FR_OK ? FR_EKAFKA : rc;
        }
    }
    *lo = out[0];
    *hi = out[1];
    return FR_OK;
}

/* The context's metadata handle (a producer that never produces). */
static int meta_handle(struct fr_kafka *kafka, rd_kafka_t **out)
{
    if (!kafka->meta) {
        rd_kafka_conf_t *conf = NULL;
        int rc = fr_kafka_conf_new(kafka, &conf);
        if (rc < 0) {
            return rc;
        }
        char err[256];
        kafka->meta = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
        if (!kafka->meta) {
            rd_kafka_conf_destroy(conf);
            fr_error("kafka", "cannot create a client: %s", err);
            return FR_ECONFIG;
        }
    }
    *out = kafka->meta;
    return FR_OK;
}

/* Partition count cached for a second, watermarks for FR_KAFKA_WM_CACHE_MS,
 * so that a processor polling every few milliseconds does not send a
 * request each time. */
int fr_kafka_stat(const char *data_dir, const char *topic, int32_t partition,
                  const struct fr_log_opts *opts, struct fr_log_info *out)
{
    (void)data_dir;
    struct fr_kafka *kafka = opts ? opts->backend_ctx : NULL;
    if (!kafka || partition < 0 || strlen(topic) > FR_LOG_MAX_TOPIC) {
        return FR_EINVAL;
    }
    const char *ktopic = fr_kafka_topic(kafka, topic);
    rd_kafka_t *rk = NULL;
    int rc = meta_handle(kafka, &rk);
    if (rc < 0) {
        return rc;
    }
    int64_t now = fr_mono_ms();
    if (strcmp(kafka->meta_topic, ktopic) != 0 || now - kafka->meta_at_ms >= 1000 ||
        kafka->meta_parts <= 0) {
        int32_t n = 0;
        rc = fr_kafka_partition_count(rk, ktopic, &n);
        if (rc < 0) {
            return rc;
        }
        if (n != kafka->meta_parts || strcmp(kafka->meta_topic, ktopic) != 0) {
            free(kafka->wm_lo);
            free(kafka->wm_hi);
            free(kafka->wm_at);
            kafka->wm_lo = calloc((size_t)n, sizeof *kafka->wm_lo);
            kafka->wm_hi = calloc((size_t)n, sizeof *kafka->wm_hi);
            kafka->wm_at = calloc((size_t)n, sizeof *kafka->wm_at);
            if (!kafka->wm_lo || !kafka->wm_hi || !kafka->wm_at) {
                kafka->meta_parts = 0;
                return FR_ENOMEM;
            }
            for (int32_t p = 0; p < n; p++) {
                kafka->wm_at[p] = INT64_MIN / 2;
            }
        }
        snprintf(kafka->meta_topic, sizeof kafka->meta_topic, "%s", ktopic);
        kafka->meta_parts = n;
        kafka->meta_at_ms = now;
    }
    if (partition >= kafka->meta_parts) {
        return FR_ENOTFOUND;
    }
    if (now - kafka->wm_at[partition] >= FR_KAFKA_WM_CACHE_MS) {
        rc = fr_kafka_watermarks(rk, ktopic, partition, &kafka->wm_lo[partition],
                                 &kafka->wm_hi[partition]);
        if (rc < 0) {
            return rc;
        }
        kafka->wm_at[partition] = now;
    }
    int64_t lo = kafka->wm_lo[partition], hi = kafka->wm_hi[partition];
    memset(out, 0, sizeof *out);
    snprintf(out->topic, sizeof out->topic, "%s", topic);
    out->partition = partition;
    out->earliest_offset = lo;
    out->end_offset = hi;
    out->segments = -1;
    out->bytes = -1;
    out->oldest_append_ms = -1;
    out->newest_append_ms = -1;
    return FR_OK;
}

/* --------------------------------------------------------- the selector */

int fr_kafka_backend_from_conf(const struct fr_conf *conf, struct fr_log_opts *opts,
                               struct fr_kafka **out)
{
    *out = NULL;
    if (strcmp(conf->log_backend, "embedded") == 0) {
        return FR_OK;
    }
    if (strcmp(conf->log_backend, "kafka") != 0) {
        fr_error("kafka", "log.backend must be `embedded` or `kafka`, not \"%s\"",
                 conf->log_backend);
        return FR_ECONFIG;
    }
    struct fr_kafka_settings s;
    fr_kafka_settings_init(&s);
    s.brokers = conf->kafka_brokers;
    s.topic = conf->kafka_topic;
    s.message_timeout_ms = conf->kafka_message_timeout_ms;
    s.linger_ms = conf->kafka_linger_ms;
    s.queue_max_kbytes = conf->kafka_queue_max_kbytes;
    s.queued_max_kbytes = conf->kafka_queued_max_kbytes;
    s.queued_min_messages = conf->kafka_queued_min_messages;
    s.fetch_max_bytes = conf->kafka_fetch_max_bytes;
    s.security_protocol = conf->kafka_security_protocol;
    s.sasl_mechanism = conf->kafka_sasl_mechanism;
    s.sasl_username = conf->kafka_sasl_username;
    s.sasl_password = conf->kafka_sasl_password;
    int rc = fr_kafka_new(&s, out);
    if (rc < 0) {
        fr_error("kafka", "kafka.brokers and kafka.topic must be set (%s)", fr_strerror(rc));
        return rc == FR_EINVAL ? FR_ECONFIG : rc;
    }
    opts->backend = &fr_log_kafka;
    opts->backend_ctx = *out;
    return FR_OK;
}
