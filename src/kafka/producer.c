/*
 * producer.c — the writer side of the Kafka backend: an idempotent
 * librdkafka producer (enable.idempotence=true, acks=all) behind
 * fr_log_open / append / flush / maybe_flush / durable_end / last / close.
 *
 * A record is acknowledged when its delivery report succeeded; durable_end
 * of a partition is one past the highest acknowledged offset (or the high
 * watermark seen at open / by last, whichever is larger).
 *
 * States of a handle:
 *
 *     open ──append──► pending ──flush: every report OK──► open
 *                         │
 *                         └── a report failed / fatal error ──► FAILED
 *     FAILED: append and flush return the recorded error; close frees.
 *
 * Invariants:
 *   1. inflight counts records appended whose report has not arrived; a
 *      flush returns FR_OK only when inflight reached 0 and no report since
 *      the handle opened failed.
 *   2. acked_end[p] never decreases; it only moves on a successful report
 *      (or the watermark read from the broker).
 *   3. Append times are non-decreasing per partition within a handle.
 *   4. Bounded: librdkafka's queue is capped (queue.buffering.max.kbytes);
 *      a full queue serves reports for at most message_timeout_ms, then
 *      append returns FR_EAGAIN without queuing.
 *
 * Threads: the handle's owner; delivery reports and error callbacks run
 * inside rd_kafka_poll / rd_kafka_flush, i.e. in the owner's thread.
 */
#include "kafka/kafka_int.h"

#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"

#include <stdlib.h>
#include <string.h>

struct kafka_log {
    struct fr_log base; /* first: fr_log_* dispatch on it */
    struct fr_kafka *kafka;
    rd_kafka_t *rk;
    char topic[FR_LOG_MAX_TOPIC + 1]; /* the Kafka topic */
    int32_t nparts;
    int64_t *acked_end;    /* per partition, invariant 2 */
    int64_t *next_offset;  /* per partition: the predicted offset of the next append */
    int64_t *append_ms;    /* per partition: the last append time handed out */
    int64_t inflight;      /* invariant 1 */
    int64_t pending_since; /* mono ms of the oldest record appended since the last flush; -1 */
    int64_t flush_interval_ms;
    int64_t max_record_bytes;
    int failed;        /* FR_OK, or the error that put the handle in FAILED */
    int warned_offset; /* a predicted offset differed from the broker's (logged once) */
    /* the record fr_kafka_last handed out (owned) */
    struct fr_log_reader *last_reader;
};

static void log_fail(struct kafka_log *kl, int code)
{
    if (kl->failed == FR_OK) {
        kl->failed = code;
    }
}

/* Delivery report: invariant 1 and 2. Runs inside poll/flush. */
static void dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
{
    (void)rk;
    struct kafka_log *kl = opaque;
    kl->inflight--;
    int32_t p = msg->partition;
    if (msg->err) {
        int code = fr_kafka_err(msg->err);
        if (kl->failed == FR_OK) {
            fr_error("kafka", "delivery to %s [%d] failed, records not acknowledged: %s (%s)",
                     kl->topic, (int)p, rd_kafka_err2str(msg->err), fr_err_name(code));
        }
        log_fail(kl, code == FR_OK ? FR_EKAFKA : code);
        return;
    }
    if (p < 0 || p >= kl->nparts) {
        return;
    }
    if (msg->offset >= kl->acked_end[p]) {
        kl->acked_end[p] = msg->offset + 1;
    }
    if (kl->acked_end[p] > kl->next_offset[p] && !kl->warned_offset) {
        kl->warned_offset = 1;
        fr_warn("kafka",
                "%s [%d]: the broker wrote offset %lld beyond the predicted end: "
                "another producer writes this topic",
                kl->topic, (int)p, (long long)msg->offset);
    }
}

/* Client-level errors. A fatal one (idempotence broken) fails the handle;
 * others (brokers down) are reported: librdkafka retries until the
 * message timeout, and the delivery reports carry the outcome. */
static void error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    struct kafka_log *kl = opaque;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char why[512];
        rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, why, sizeof why);
        fr_error("kafka", "producer fatal error: %s: %s", rd_kafka_err2name(orig), why);
        log_fail(kl, FR_EKAFKA_FATAL);
        return;
    }
    fr_warn("kafka", "%s: %s", rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
}

static int producer_conf(struct kafka_log *kl, rd_kafka_conf_t **out)
{
    const struct fr_kafka_settings *s = &kl->kafka->s;
    rd_kafka_conf_t *conf = NULL;
    int rc = fr_kafka_conf_new(kl->kafka, &conf);
    if (rc < 0) {
        return rc;
    }
    rc = fr_kafka_conf_set(conf, "enable.idempotence", "true");
    rc = rc ? rc : fr_kafka_conf_set(conf, "acks", "all");
    /* One request in flight per broker: a batch that fails and is retried
     * can never land after the next one. Ingest resumes from the oldest of
     * the partitions' last records, which assumes every partition is
     * gap-free; with several requests in flight that holds only where the
     * broker enforces the idempotent producer's sequence numbers, and
     * librdkafka 2.0.2's mock cluster does not: integration_kafka_e2e lost
     * two events of one failed batch about once in five runs (the next batch
     * was acknowledged, then ingest was killed before the retry). */
    rc = rc ? rc : fr_kafka_conf_set(conf, "max.in.flight.requests.per.connection", "1");
    rc = rc ? rc : fr_kafka_conf_set_i64(conf, "message.timeout.ms", s->message_timeout_ms);
    rc = rc ? rc : fr_kafka_conf_set_i64(conf, "linger.ms", s->linger_ms);
    rc = rc ? rc : fr_kafka_conf_set_i64(conf, "queue.buffering.max.kbytes", s->queue_max_kbytes);
    rc = rc ? rc : fr_kafka_conf_set(conf, "queue.buffering.max.messages", "1000000");
    /* Batches no larger than a reader's fetch: a fetch returns at least one
     * whole batch, so this bounds a reader's prefetch overshoot. */
    rc = rc ? rc : fr_kafka_conf_set_i64(conf, "batch.size", s->fetch_max_bytes);
    rc = rc ? rc
            : fr_kafka_conf_set_i64(conf, "message.max.bytes", kl->max_record_bytes + 64 * 1024);
    if (rc < 0) {
        rd_kafka_conf_destroy(conf);
        return rc;
    }
    rd_kafka_conf_set_dr_msg_cb(conf, dr_msg_cb);
    rd_kafka_conf_set_error_cb(conf, error_cb);
    rd_kafka_conf_set_opaque(conf, kl);
    *out = conf;
    return FR_OK;
}

int fr_kafka_open(const char *data_dir, const char *topic, const struct fr_log_opts *opts,
                  struct fr_log **out)
{
    (void)data_dir;
    *out = NULL;
    struct fr_kafka *kafka = opts->backend_ctx;
    if (!kafka || !topic) {
        return FR_EINVAL;
    }
    struct kafka_log *kl = calloc(1, sizeof *kl);
    if (!kl) {
        return FR_ENOMEM;
    }
    kl->base.ops = &fr_log_kafka;
    kl->kafka = kafka;
    kl->pending_since = -1;
    kl->flush_interval_ms = opts->fsync_interval_ms;
    kl->max_record_bytes = opts->max_record_bytes;
    snprintf(kl->topic, sizeof kl->topic, "%s", fr_kafka_topic(kafka, topic));
    rd_kafka_conf_t *conf = NULL;
    char err[256];
    int rc = producer_conf(kl, &conf);
    if (rc < 0) {
        goto cleanup;
    }
    kl->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!kl->rk) {
        rd_kafka_conf_destroy(conf);
        fr_error("kafka", "cannot create the producer: %s", err);
        rc = FR_ECONFIG;
        goto cleanup;
    }
    rc = fr_kafka_partition_count(kl->rk, kl->topic, &kl->nparts);
    if (rc == FR_ENOTFOUND) {
        fr_error("kafka", "topic %s does not exist on %s: create it with %d partition(s)",
                 kl->topic, kafka->brokers, (int)opts->partitions);
    }
    if (rc < 0) {
        goto cleanup;
    }
    if (kl->nparts < opts->partitions) {
        fr_error("kafka", "topic %s has %d partition(s), log.partitions asks for %d", kl->topic,
                 (int)kl->nparts, (int)opts->partitions);
        rc = FR_ECONFIG;
        goto cleanup;
    }
    kl->acked_end = calloc((size_t)kl->nparts, sizeof *kl->acked_end);
    kl->next_offset = calloc((size_t)kl->nparts, sizeof *kl->next_offset);
    kl->append_ms = calloc((size_t)kl->nparts, sizeof *kl->append_ms);
    if (!kl->acked_end || !kl->next_offset || !kl->append_ms) {
        rc = FR_ENOMEM;
        goto cleanup;
    }
    for (int32_t p = 0; p < kl->nparts; p++) {
        int64_t lo = 0, hi = 0;
        rc = fr_kafka_watermarks(kl->rk, kl->topic, p, &lo, &hi);
        if (rc < 0) {
            goto cleanup;
        }
        kl->acked_end[p] = hi;
        kl->next_offset[p] = hi;
    }
    *out = &kl->base;
    return FR_OK;

cleanup:
    fr_kafka_close(&kl->base);
    return rc;
}

/* Big-endian int64, the value of the append-time header. */
static void put_be64(uint8_t *p, int64_t v)
{
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)((uint64_t)v & 0xff);
        v = (int64_t)((uint64_t)v >> 8);
    }
}

int fr_kafka_append(struct fr_log *log, int32_t partition, const struct fr_log_rec *rec,
                    int64_t *out_offset)
{
    struct kafka_log *kl = (struct kafka_log *)log;
    if (kl->failed) {
        return kl->failed;
    }
    if (partition < 0 || partition >= kl->nparts || rec->header_count > FR_LOG_MAX_HEADERS) {
        return FR_EINVAL;
    }
    size_t size = rec->key_len + rec->payload_len;
    for (size_t i = 0; i < rec->header_count; i++) {
        const struct fr_log_header *h = &rec->headers[i];
        if (h->name_len == 0 || h->name_len > 65535) {
            return FR_EINVAL;
        }
        size += h->name_len + h->value_len;
    }
    if ((int64_t)size > kl->max_record_bytes) {
        return FR_ETOOBIG;
    }
    int64_t now = fr_wall_ms();
    int64_t append_ms = now > kl->append_ms[partition] ? now : kl->append_ms[partition];
    uint8_t be[8];
    put_be64(be, append_ms);

    rd_kafka_headers_t *hdrs = rd_kafka_headers_new(rec->header_count + 1);
    for (size_t i = 0; i < rec->header_count; i++) {
        const struct fr_log_header *h = &rec->headers[i];
        rd_kafka_header_add(hdrs, h->name, (ssize_t)h->name_len, h->value, (ssize_t)h->value_len);
    }
    rd_kafka_header_add(hdrs, FR_KAFKA_APPEND_HDR, -1, be, sizeof be);

    int64_t deadline = fr_mono_ms() + kl->kafka->s.message_timeout_ms;
    /* rd_kafka_producev's fields as an array: the library is opened on
     * first use, and a variadic call cannot be passed on (src/lazy). */
    rd_kafka_vu_t vus[7];
    memset(vus, 0, sizeof vus);
    vus[0].vtype = RD_KAFKA_VTYPE_TOPIC;
    vus[0].u.cstr = kl->topic;
    vus[1].vtype = RD_KAFKA_VTYPE_PARTITION;
    vus[1].u.i32 = partition;
    vus[2].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
    vus[2].u.i = RD_KAFKA_MSG_F_COPY;
    vus[3].vtype = RD_KAFKA_VTYPE_KEY;
    vus[3].u.mem.ptr = rec->key_len ? (void *)rec->key : NULL;
    vus[3].u.mem.size = rec->key_len;
    vus[4].vtype = RD_KAFKA_VTYPE_VALUE;
    vus[4].u.mem.ptr = (void *)rec->payload;
    vus[4].u.mem.size = rec->payload_len;
    vus[5].vtype = RD_KAFKA_VTYPE_TIMESTAMP;
    vus[5].u.i64 = rec->timestamp;
    vus[6].vtype = RD_KAFKA_VTYPE_HEADERS;
    vus[6].u.headers = hdrs;
    rd_kafka_resp_err_t err;
    for (;;) {
        rd_kafka_error_t *kerr = rd_kafka_produceva(kl->rk, vus, 7);
        err = kerr ? rd_kafka_error_code(kerr) : RD_KAFKA_RESP_ERR_NO_ERROR;
        if (kerr) {
            rd_kafka_error_destroy(kerr);
        }
        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL || fr_mono_ms() >= deadline) {
            break;
        }
        /* Invariant 4: backpressure, bounded. */
        rd_kafka_poll(kl->rk, 50);
        if (kl->failed) {
            rd_kafka_headers_destroy(hdrs);
            return kl->failed;
        }
    }
    if (err) {
        rd_kafka_headers_destroy(hdrs); /* not taken over on failure */
        fr_error("kafka", "produce to %s [%d]: %s", kl->topic, (int)partition,
                 rd_kafka_err2str(err));
        return fr_kafka_err(err);
    }
    kl->append_ms[partition] = append_ms;
    kl->inflight++;
    if (kl->pending_since < 0) {
        kl->pending_since = fr_mono_ms();
    }
    if (out_offset) {
        *out_offset = kl->next_offset[partition];
    }
    kl->next_offset[partition]++;
    rd_kafka_poll(kl->rk, 0);
    return FR_OK;
}

int fr_kafka_flush(struct fr_log *log)
{
    struct kafka_log *kl = (struct kafka_log *)log;
    if (kl->failed) {
        return kl->failed;
    }
    /* Every report arrives within message.timeout.ms; allow for the
     * broker round trip beyond it. */
    int64_t deadline = fr_mono_ms() + kl->kafka->s.message_timeout_ms + 10000;
    while (kl->inflight > 0) {
        int64_t left = deadline - fr_mono_ms();
        if (left <= 0) {
            fr_error("kafka",
                     "%lld record(s) to %s still unacknowledged after the message "
                     "timeout",
                     (long long)kl->inflight, kl->topic);
            log_fail(kl, FR_ETIMEOUT);
            break;
        }
        rd_kafka_flush(kl->rk, (int)(left < 1000 ? left : 1000));
        if (kl->failed) {
            break;
        }
    }
    if (kl->failed) {
        return kl->failed;
    }
    kl->pending_since = -1;
    return FR_OK;
}

int fr_kafka_maybe_flush(struct fr_log *log, int64_t now_ms)
{
    struct kafka_log *kl = (struct kafka_log *)log;
    rd_kafka_poll(kl->rk, 0);
    if (kl->failed) {
        return kl->failed;
    }
    if (kl->pending_since < 0 || now_ms - kl->pending_since < kl->flush_interval_ms) {
        return 0;
    }
    int rc = fr_kafka_flush(log);
    return rc < 0 ? rc : 1;
}

int64_t fr_kafka_next_flush_in(struct fr_log *log, int64_t now_ms)
{
    struct kafka_log *kl = (struct kafka_log *)log;
    if (kl->pending_since < 0) {
        return -1;
    }
    int64_t due = kl->pending_since + kl->flush_interval_ms - now_ms;
    return due > 0 ? due : 0;
}

int64_t fr_kafka_durable_end(struct fr_log *log, int32_t partition)
{
    struct kafka_log *kl = (struct kafka_log *)log;
    if (partition < 0 || partition >= kl->nparts) {
        return FR_EINVAL;
    }
    return kl->acked_end[partition];
}

int32_t fr_kafka_partitions(struct fr_log *log)
{
    return ((struct kafka_log *)log)->nparts;
}

/* The tail: watermarks, then the single message at high - 1, read with a
 * short-lived reader (kept until the next call: *rec points into it). */
int fr_kafka_last(struct fr_log *log, int32_t partition, struct fr_log_rec *rec)
{
    struct kafka_log *kl = (struct kafka_log *)log;
    if (partition < 0 || partition >= kl->nparts) {
        return FR_EINVAL;
    }
    fr_kafka_reader_close(kl->last_reader);
    kl->last_reader = NULL;
    int64_t lo = 0, hi = 0;
    int rc = fr_kafka_watermarks(kl->rk, kl->topic, partition, &lo, &hi);
    if (rc < 0) {
        return rc;
    }
    if (hi > kl->acked_end[partition]) {
        kl->acked_end[partition] = hi;
    }
    if (hi > kl->next_offset[partition]) {
        kl->next_offset[partition] = hi;
    }
    if (hi <= lo) {
        return 0;
    }
    struct fr_kafka_reader *reader = NULL;
    rc = fr_kafka_reader_open_k(kl->kafka, kl->topic, partition, hi - 1, &reader);
    if (rc < 0) {
        return rc;
    }
    kl->last_reader = (struct fr_log_reader *)reader;
    rc = fr_kafka_reader_next(kl->last_reader, rec, FR_KAFKA_FETCH_WAIT_MS);
    if (rc == 0) {
        fr_error("kafka", "%s [%d]: the last record (offset %lld) was not readable within %d ms",
                 kl->topic, (int)partition, (long long)(hi - 1), FR_KAFKA_FETCH_WAIT_MS);
        return FR_ETIMEOUT;
    }
    if (rc > 0 && rec->append_time > kl->append_ms[partition]) {
        kl->append_ms[partition] = rec->append_time; /* invariant 3 across restarts */
    }
    return rc;
}

int fr_kafka_recovery(struct fr_log *log, int32_t partition, struct fr_log_recovery *out)
{
    struct kafka_log *kl = (struct kafka_log *)log;
    if (partition < 0 || partition >= kl->nparts) {
        return FR_EINVAL;
    }
    memset(out, 0, sizeof *out);
    out->end_offset = kl->acked_end[partition];
    return FR_OK;
}

int fr_kafka_retention_run(struct fr_log *log, int64_t now_ms)
{
    (void)log;
    (void)now_ms;
    return 0; /* the broker owns retention */
}

void fr_kafka_close(struct fr_log *log)
{
    struct kafka_log *kl = (struct kafka_log *)log;
    if (!kl) {
        return;
    }
    fr_kafka_reader_close(kl->last_reader);
    if (kl->rk) {
        if (kl->inflight > 0 && !kl->failed) {
            int rc = fr_kafka_flush(log);
            if (rc < 0) {
                fr_error("kafka", "close: %lld record(s) never acknowledged: %s",
                         (long long)kl->inflight, fr_strerror(rc));
            }
        }
        if (kl->failed) {
            /* Not acknowledged: drop what is queued instead of waiting. */
            rd_kafka_purge(kl->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
            rd_kafka_poll(kl->rk, 0);
        }
        rd_kafka_destroy(kl->rk);
    }
    free(kl->acked_end);
    free(kl->next_offset);
    free(kl->append_ms);
    free(kl);
}
