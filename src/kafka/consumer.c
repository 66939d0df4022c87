/*
 * consumer.c — the reader side of the Kafka backend: one partition,
 * assigned (rd_kafka_assign) at the exact offset the caller asks for,
 * behind fr_log_reader_open / next / end / close.
 *
 * Invariants:
 *   1. Offsets never come from the broker: group.id is set only because
 *      librdkafka's assign needs one; enable.auto.commit and
 *      enable.auto.offset.store are off and auto.offset.reset=error, so an
 *      offset outside the retained range is FR_ERANGE, never a jump to
 *      "latest" or "earliest".
 *   2. Prefetch is capped (queued.max.messages.kbytes, queued.min.messages,
 *      fetch.max.bytes, max.partition.fetch.bytes from the settings): a
 *      reader far behind a large backlog holds at most about that much.
 *   3. The record handed out points into the librdkafka message held until
 *      the next call; the reserved append-time header is stripped.
 *
 * Threads: the reader's owner; librdkafka fetches on its own threads.
 */
#include "kafka/kafka_int.h"

#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"

#include <stdlib.h>
#include <string.h>

struct fr_kafka_reader {
    struct fr_log_reader base; /* first: fr_log_reader_* dispatch on it */
    rd_kafka_t *rk;
    char topic[FR_LOG_MAX_TOPIC + 1];
    int32_t partition;
    int64_t next; /* offset of the next record to hand out */
    int64_t end;  /* high watermark last seen */
    rd_kafka_message_t *held;
    struct fr_log_header headers[FR_LOG_MAX_HEADERS];
};

static int consumer_conf(struct fr_kafka *kafka, rd_kafka_conf_t **out)
{
    const struct fr_kafka_settings *s = &kafka->s;
    rd_kafka_conf_t *conf = NULL;
    int rc = fr_kafka_conf_new(kafka, &conf);
    if (rc < 0) {
        return rc;
    }
    /* Invariant 1. */
    rc = fr_kafka_conf_set(conf, "group.id", "freshet-reader");
    rc = rc ? rc : fr_kafka_conf_set(conf, "enable.auto.commit", "false");
    rc = rc ? rc : fr_kafka_conf_set(conf, "enable.auto.offset.store", "false");
    rc = rc ? rc : fr_kafka_conf_set(conf, "auto.offset.reset", "error");
    rc = rc ? rc : fr_kafka_conf_set(conf, "enable.partition.eof", "false");
    rc = rc ? rc : fr_kafka_conf_set(conf, "fetch.wait.max.ms", "100");
    /* Invariant 2. */
    rc = rc ? rc : fr_kafka_conf_set_i64(conf, "queued.max.messages.kbytes", s->queued_max_kbytes);
    rc = rc ? rc : fr_kafka_conf_set_i64(conf, "queued.min.messages", s->queued_min_messages);
    rc = rc ? rc : fr_kafka_conf_set_i64(conf, "fetch.max.bytes", s->fetch_max_bytes);
    rc = rc ? rc : fr_kafka_conf_set_i64(conf, "max.partition.fetch.bytes", s->fetch_max_bytes);
    /* librdkafka wants fetch.max.bytes >= message.max.bytes (the largest
     * request this client sends, 1,000,000 by default). */
    rc = rc ? rc
            : fr_kafka_conf_set_i64(conf, "message.max.bytes",
                                    s->fetch_max_bytes < 1000000 ? s->fetch_max_bytes : 1000000);
    if (rc < 0) {
        rd_kafka_conf_destroy(conf);
        return rc;
    }
    *out = conf;
    return FR_OK;
}

int fr_kafka_reader_open_k(struct fr_kafka *kafka, const char *ktopic, int32_t partition,
                           int64_t from_offset, struct fr_kafka_reader **out)
{
    *out = NULL;
    if (partition < 0) {
        return FR_EINVAL;
    }
    struct fr_kafka_reader *kr = calloc(1, sizeof *kr);
    if (!kr) {
        return FR_ENOMEM;
    }
    kr->base.ops = &fr_log_kafka;
    kr->partition = partition;
    snprintf(kr->topic, sizeof kr->topic, "%s", ktopic);
    rd_kafka_topic_partition_list_t *parts = NULL;
    rd_kafka_conf_t *conf = NULL;
    char err[256];
    int rc = consumer_conf(kafka, &conf);
    if (rc < 0) {
        goto cleanup;
    }
    kr->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!kr->rk) {
        rd_kafka_conf_destroy(conf);
        fr_error("kafka", "cannot create a consumer: %s", err);
        rc = FR_ECONFIG;
        goto cleanup;
    }
    int32_t nparts = 0;
    rc = fr_kafka_partition_count(kr->rk, ktopic, &nparts);
    if (rc < 0) {
        goto cleanup;
    }
    if (partition >= nparts) {
        rc = FR_ENOTFOUND;
        goto cleanup;
    }
    int64_t lo = 0, hi = 0;
    rc = fr_kafka_watermarks(kr->rk, ktopic, partition, &lo, &hi);
    if (rc < 0) {
        goto cleanup;
    }
    if (from_offset == FR_LOG_OFFSET_EARLIEST) {
        from_offset = lo;
    } else if (from_offset == FR_LOG_OFFSET_END) {
        from_offset = hi;
    } else if (from_offset < lo || from_offset > hi) {
        fr_debug("kafka", "%s [%d]: offset %lld outside the retained [%lld, %lld]", ktopic,
                 (int)partition, (long long)from_offset, (long long)lo, (long long)hi);
        rc = FR_ERANGE;
        goto cleanup;
    }
    kr->next = from_offset;
    kr->end = hi;
    rd_kafka_poll_set_consumer(kr->rk);
    parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, ktopic, partition)->offset = from_offset;
    rd_kafka_resp_err_t e = rd_kafka_assign(kr->rk, parts);
    if (e) {
        fr_error("kafka", "assign %s [%d] at %lld: %s", ktopic, (int)partition,
                 (long long)from_offset, rd_kafka_err2str(e));
        rc = fr_kafka_err(e);
        goto cleanup;
    }
    rd_kafka_topic_partition_list_destroy(parts);
    *out = kr;
    return FR_OK;

cleanup:
    if (parts) {
        rd_kafka_topic_partition_list_destroy(parts);
    }
    fr_kafka_reader_close(&kr->base);
    return rc;
}

int fr_kafka_reader_open(const char *data_dir, const char *topic, int32_t partition,
                         int64_t from_offset, const struct fr_log_opts *opts,
                         struct fr_log_reader **out)
{
    (void)data_dir;
    struct fr_kafka *kafka = opts ? opts->backend_ctx : NULL;
    if (!kafka || !topic) {
        return FR_EINVAL;
    }
    struct fr_kafka_reader *kr = NULL;
    int rc =
        fr_kafka_reader_open_k(kafka, fr_kafka_topic(kafka, topic), partition, from_offset, &kr);
    *out = kr ? &kr->base : NULL;
    return rc;
}

static int64_t get_be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) {
        v = (v << 8) | p[i];
    }
    return (int64_t)v;
}

/* The held message as a record (invariant 3). */
static int to_rec(struct fr_kafka_reader *kr, const rd_kafka_message_t *msg, struct fr_log_rec *out)
{
    memset(out, 0, sizeof *out);
    out->offset = msg->offset;
    rd_kafka_timestamp_type_t tstype;
    out->timestamp = rd_kafka_message_timestamp(msg, &tstype);
    out->append_time = out->timestamp;
    out->key = msg->key;
    out->key_len = msg->key ? msg->key_len : 0;
    out->payload = msg->payload;
    out->payload_len = msg->payload ? msg->len : 0;
    rd_kafka_headers_t *hdrs = NULL;
    size_t n = 0;
    if (rd_kafka_message_headers(msg, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const char *name;
        const void *value;
        size_t size;
        for (size_t i = 0;
             rd_kafka_header_get_all(hdrs, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR;
             i++) {
            if (strcmp(name, FR_KAFKA_APPEND_HDR) == 0 && value && size == 8) {
                out->append_time = get_be64(value);
                continue;
            }
            if (n == FR_LOG_MAX_HEADERS) {
                fr_error("kafka", "%s [%d] offset %lld: more than %d headers", kr->topic,
                         (int)kr->partition, (long long)msg->offset, FR_LOG_MAX_HEADERS);
                return FR_ECORRUPT;
            }
            kr->headers[n].name = name;
            kr->headers[n].name_len = strlen(name);
            kr->headers[n].value = value ? value : "";
            kr->headers[n].value_len = value ? size : 0;
            n++;
        }
    }
    out->headers = n ? kr->headers : NULL;
    out->header_count = n;
    return FR_OK;
}

/*
 * timeout_ms 0 means "do not wait for records that do not exist yet":
 * records below the high watermark exist, so for them the reader waits up
 * to FR_KAFKA_FETCH_WAIT_MS for the fetch. Error events that librdkafka
 * recovers from by itself (a broker down while another serves, a leader
 * moving) are remembered; when the wait ends without a record, the last
 * one is returned so the caller sees why (FR_EKAFKA, ...). Time this process
 * spends stopped inside a poll (a paused VM) does not count as waiting.
 */
int fr_kafka_reader_next(struct fr_log_reader *reader, struct fr_log_rec *out, int timeout_ms)
{
    struct fr_kafka_reader *kr = (struct fr_kafka_reader *)reader;
    if (kr->held) {
        rd_kafka_message_destroy(kr->held);
        kr->held = NULL;
    }
    int64_t lo = 0, hi = 0;
    if (rd_kafka_get_watermark_offsets(kr->rk, kr->topic, kr->partition, &lo, &hi) == 0 &&
        hi > kr->end) {
        kr->end = hi;
    }
    int64_t wait = timeout_ms;
    if (timeout_ms == 0 && kr->next < kr->end) {
        wait = FR_KAFKA_FETCH_WAIT_MS;
    }
    int64_t deadline = wait < 0 ? -1 : fr_mono_ms() + wait;
    int last_err = FR_OK;
    for (;;) {
        int64_t left = deadline < 0 ? 1000 : deadline - fr_mono_ms();
        if (deadline >= 0 && left < 0) {
            left = 0;
        }
        int ask = (int)(left > 1000 ? 1000 : left);
        int64_t t0 = fr_mono_ms();
        rd_kafka_message_t *msg = rd_kafka_consumer_poll(kr->rk, ask);
        int64_t took = fr_mono_ms() - t0;
        if (deadline >= 0 && took > ask + 1000) {
            /* This process was stopped inside the poll (SIGSTOP, a frozen
             * VM or container): the pause is not time spent waiting for
             * the record, so it does not count against the wait. */
            deadline += took - ask;
        }
        if (msg && msg->err) {
            rd_kafka_resp_err_t e = msg->err;
            if (e == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                rd_kafka_message_destroy(msg);
                msg = NULL;
            } else {
                last_err = fr_kafka_err(e);
                if (last_err == FR_OK) {
                    last_err = FR_EKAFKA;
                }
                fr_warn("kafka", "%s [%d] at offset %lld: %s", kr->topic, (int)kr->partition,
                        (long long)kr->next, rd_kafka_message_errstr(msg));
                rd_kafka_message_destroy(msg);
                msg = NULL;
                if (last_err == FR_ERANGE || fr_err_class(last_err) == FR_ERRC_FATAL) {
                    return last_err;
                }
            }
        }
        if (msg) {
            if (msg->offset < kr->next) {
                rd_kafka_message_destroy(msg); /* a refetch after a retry: seen already */
                continue;
            }
            kr->held = msg;
            int rc = to_rec(kr, msg, out);
            if (rc < 0) {
                return rc;
            }
            kr->next = msg->offset + 1;
            if (kr->next > kr->end) {
                kr->end = kr->next;
            }
            return 1;
        }
        if (deadline >= 0 && fr_mono_ms() >= deadline) {
            return last_err;
        }
    }
}

int64_t fr_kafka_reader_end(struct fr_log_reader *reader)
{
    struct fr_kafka_reader *kr = (struct fr_kafka_reader *)reader;
    int64_t lo = 0, hi = 0;
    if (rd_kafka_get_watermark_offsets(kr->rk, kr->topic, kr->partition, &lo, &hi) == 0 &&
        hi > kr->end) {
        kr->end = hi;
    }
    return kr->end;
}

int64_t fr_kafka_reader_queued(struct fr_log_reader *reader)
{
    struct fr_kafka_reader *kr = (struct fr_kafka_reader *)reader;
    rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(kr->rk);
    if (!q) {
        return 0;
    }
    int64_t n = (int64_t)rd_kafka_queue_length(q);
    rd_kafka_queue_destroy(q);
    return n;
}

void fr_kafka_reader_close(struct fr_log_reader *reader)
{
    struct fr_kafka_reader *kr = (struct fr_kafka_reader *)reader;
    if (!kr) {
        return;
    }
    if (kr->held) {
        rd_kafka_message_destroy(kr->held);
    }
    if (kr->rk) {
        rd_kafka_consumer_close(kr->rk);
        rd_kafka_destroy(kr->rk);
    }
    free(kr);
}
