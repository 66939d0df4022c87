/*
 * test_kafka.c — the Kafka log backend (src/kafka) against librdkafka's
 * mock cluster running in its own process (tests/integration/kafka_mock,
 * loopback only; argv[1] is its path). Each case creates its own topic in
 * the mock, so cases do not see each other's records.
 *
 *   - append + flush + read back byte-equal (keys, headers, timestamps,
 *     payloads with NUL bytes); predicted offsets; durable_end; stat; last;
 *     a reader at an exact offset; offsets outside the topic
 *   - produce errors injected: retried by the idempotent producer (flush
 *     OK, no duplicate); persistent: flush fails with a classified error,
 *     durable_end does not move, the handle stays failed
 *   - a broker down with the leaders moved: the producer follows, nothing
 *     lost or duplicated; a broker down for good: a clear error
 *   - the reader's prefetch stays under its cap while a backlog is read
 *   - the backend selector refuses an unknown log.backend
 */
#include "check.h"

#include "conf/conf.h"
#include "core/err.h"
#include "kafka/kafka.h"
#include "kafka/kafka_int.h"

#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <time.h>

/* ---- the mock process ---------------------------------------------------------- */

static pid_t mock_pid = -1;
static FILE *mock_to, *mock_from;
static char mock_boot[1024];

static int mock_start(const char *bin)
{
    int to[2], from[2];
    if (pipe(to) < 0 || pipe(from) < 0) {
        return -1;
    }
    mock_pid = fork();
    if (mock_pid < 0) {
        return -1;
    }
    if (mock_pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[1]);
        close(from[0]);
        execl(bin, bin, "--brokers", "3", "--partitions", "1", NULL);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    mock_to = fdopen(to[1], "w");
    mock_from = fdopen(from[0], "r");
    if (!mock_to || !mock_from || !fgets(mock_boot, sizeof mock_boot, mock_from)) {
        return -1;
    }
    mock_boot[strcspn(mock_boot, "\r\n")] = 0;
    return strncmp(mock_boot, "127.0.0.1:", 10) == 0 ? 0 : -1;
}

/* Send one command; 0 when the mock answered "ok". */
static int mock_cmd(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(mock_to, "%s\n", line);
    fflush(mock_to);
    char reply[600];
    if (!fgets(reply, sizeof reply, mock_from)) {
        return -1;
    }
    if (strncmp(reply, "ok", 2) != 0) {
        fprintf(stderr, "mock: %s -> %s", line, reply);
        return -1;
    }
    return 0;
}

static void mock_stop(void)
{
    if (mock_to) {
        fclose(mock_to); /* EOF: the mock exits */
    }
    if (mock_pid > 0) {
        int status;
        waitpid(mock_pid, &status, 0);
    }
    if (mock_from) {
        fclose(mock_from);
    }
}

/* ---- helpers --------------------------------------------------------------------- */

struct kctx {
    struct fr_kafka *kafka;
    struct fr_log_opts opts;
};

static int kctx_open(struct kctx *k, const char *topic, int64_t timeout_ms, int64_t queued_kbytes,
                     int64_t queued_min)
{
    struct fr_kafka_settings s;
    fr_kafka_settings_init(&s);
    s.brokers = mock_boot;
    s.topic = topic;
    s.message_timeout_ms = timeout_ms;
    s.queued_max_kbytes = queued_kbytes;
    s.queued_min_messages = queued_min;
    s.fetch_max_bytes = 65536;
    fr_log_opts_init(&k->opts);
    k->opts.backend = &fr_log_kafka;
    int rc = fr_kafka_new(&s, &k->kafka);
    k->opts.backend_ctx = k->kafka;
    return rc;
}

/* Record i of a test stream: key, three headers (one binary, one empty),
 * a payload with NUL bytes, a timestamp. */
struct trec {
    char key[32], sse[48], payload[400];
    size_t payload_len;
    uint8_t bin[4];
    struct fr_log_header h[3];
    struct fr_log_rec rec;
};

static void trec_make(struct trec *t, int i, size_t payload_len)
{
    memset(t, 0, sizeof *t);
    snprintf(t->key, sizeof t->key, "wiki\x1fpage-%d", i % 7);
    snprintf(t->sse, sizeof t->sse, "[{\"offset\":%d}]", i);
    t->payload_len = payload_len;
    for (size_t j = 0; j < payload_len; j++) {
        t->payload[j] = (char)((i * 31 + (int)j) % 251);
    }
    t->bin[0] = 0;
    t->bin[1] = 0xff;
    t->bin[2] = (uint8_t)i;
    t->bin[3] = 0x80;
    t->h[0] = (struct fr_log_header){"sse_id", 6, t->sse, strlen(t->sse)};
    t->h[1] = (struct fr_log_header){"bin", 3, t->bin, 4};
    t->h[2] = (struct fr_log_header){"empty", 5, "", 0};
    t->rec = (struct fr_log_rec){.timestamp = 1700000000000LL + i * 13,
                                 .key = t->key,
                                 .key_len = strlen(t->key),
                                 .headers = t->h,
                                 .header_count = 3,
                                 .payload = t->payload,
                                 .payload_len = payload_len};
}

/* 1 when got equals record i as made by trec_make. */
static int trec_same(const struct fr_log_rec *got, int i, size_t payload_len)
{
    struct trec t;
    trec_make(&t, i, payload_len);
    if (got->timestamp != t.rec.timestamp || got->key_len != t.rec.key_len ||
        memcmp(got->key, t.key, t.rec.key_len) != 0 || got->payload_len != payload_len ||
        memcmp(got->payload, t.payload, payload_len) != 0 || got->header_count != 3) {
        return 0;
    }
    for (size_t h = 0; h < 3; h++) {
        const struct fr_log_header *a = &got->headers[h], *b = &t.h[h];
        if (a->name_len != b->name_len || memcmp(a->name, b->name, b->name_len) != 0 ||
            a->value_len != b->value_len ||
            (b->value_len && memcmp(a->value, b->value, b->value_len) != 0)) {
            return 0;
        }
    }
    return 1;
}

/* The i of a record (from its sse_id header), or -1. */
static int trec_index(const struct fr_log_rec *rec)
{
    const void *v;
    size_t len;
    if (fr_log_rec_header(rec, "sse_id", &v, &len) != 1) {
        return -1;
    }
    char text[64];
    snprintf(text, sizeof text, "%.*s", (int)len, (const char *)v);
    int i = -1;
    return sscanf(text, "[{\"offset\":%d}]", &i) == 1 ? i : -1;
}

/* Read partition p from EARLIEST to its end; seen[i]++ per record i, and
 * check offsets are dense. Returns the records read, or < 0. */
static int64_t read_all(struct kctx *k, int32_t p, int *seen, int nseen, size_t payload_len)
{
    struct fr_log_reader *reader = NULL;
    int rc = fr_log_reader_open(NULL, "recentchange", p, FR_LOG_OFFSET_EARLIEST, &k->opts, &reader);
    if (rc < 0) {
        return rc;
    }
    int64_t n = 0, expect = -1;
    struct fr_log_rec rec;
    while ((rc = fr_log_reader_next(reader, &rec, 0)) == 1) {
        if (expect >= 0 && rec.offset != expect) {
            fprintf(stderr, "partition %d: offset %lld after %lld\n", (int)p, (long long)rec.offset,
                    (long long)expect - 1);
            n = FR_ECORRUPT;
            break;
        }
        expect = rec.offset + 1;
        int i = trec_index(&rec);
        if (i < 0 || i >= nseen || !trec_same(&rec, i, payload_len)) {
            fprintf(stderr, "partition %d offset %lld: not the record appended\n", (int)p,
                    (long long)rec.offset);
            n = FR_ECORRUPT;
            break;
        }
        seen[i]++;
        n++;
    }
    if (rc < 0) {
        n = rc;
    }
    fr_log_reader_close(reader);
    return n;
}

/* ---- cases ----------------------------------------------------------------------- */

static void test_roundtrip(void)
{
    CHECK_EQ_INT(mock_cmd("topic rt 3 3"), 0);
    struct kctx k;
    CHECK_EQ_INT(kctx_open(&k, "rt", 10000, 4096, 1000), FR_OK);
    k.opts.partitions = 3;
    struct fr_log *log = NULL;
    CHECK_EQ_INT(fr_log_open(NULL, "recentchange", &k.opts, &log), FR_OK);
    if (!log) {
        fr_kafka_free(k.kafka);
        return;
    }
    CHECK_EQ_INT(fr_log_partitions(log), 3);
    enum { N = 60 };
    int64_t t0 = 0;
    {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        t0 = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    }
    for (int i = 0; i < N; i++) {
        struct trec t;
        trec_make(&t, i, (size_t)(i * 5 % 300));
        int64_t off = -1;
        CHECK_EQ_INT(fr_log_append(log, i % 3, &t.rec, &off), FR_OK);
        CHECK_EQ_INT(off, i / 3);
    }
    CHECK_EQ_INT(fr_log_next_flush_in(log, 0) >= 0, 1);
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    CHECK_EQ_INT(fr_log_next_flush_in(log, 0), -1);
    for (int32_t p = 0; p < 3; p++) {
        CHECK_EQ_INT(fr_log_durable_end(log, p), N / 3);
        struct fr_log_info info;
        CHECK_EQ_INT(fr_log_stat_with(NULL, "recentchange", p, &k.opts, &info), FR_OK);
        CHECK_EQ_INT(info.earliest_offset, 0);
        CHECK_EQ_INT(info.end_offset, N / 3);
        /* last: the newest record of the partition */
        struct fr_log_rec last;
        memset(&last, 0, sizeof last);
        if (fr_log_last(log, p, &last) != 1) {
            CHECK(!"fr_log_last found the partition's tail");
            continue;
        }
        CHECK_EQ_INT(last.offset, N / 3 - 1);
        CHECK_EQ_INT(trec_index(&last), N - 3 + p);
        CHECK(trec_same(&last, N - 3 + p, (size_t)((N - 3 + p) * 5 % 300)));
    }
    struct fr_log_info info;
    CHECK_EQ_INT(fr_log_stat_with(NULL, "recentchange", 3, &k.opts, &info), FR_ENOTFOUND);
    CHECK_EQ_INT(fr_log_durable_end(log, 3), FR_EINVAL);

    /* read back byte-equal, append times within the run and non-decreasing */
    for (int32_t p = 0; p < 3; p++) {
        struct fr_log_reader *reader = NULL;
        CHECK_EQ_INT(
            fr_log_reader_open(NULL, "recentchange", p, FR_LOG_OFFSET_EARLIEST, &k.opts, &reader),
            FR_OK);
        if (!reader) {
            continue;
        }
        int64_t prev_append = 0;
        for (int j = 0; j < N / 3; j++) {
            struct fr_log_rec rec;
            CHECK_EQ_INT(fr_log_reader_next(reader, &rec, 5000), 1);
            int i = j * 3 + p;
            CHECK_EQ_INT(rec.offset, j);
            CHECK(trec_same(&rec, i, (size_t)(i * 5 % 300)));
            CHECK(rec.append_time >= t0 - 1000 && rec.append_time >= prev_append);
            prev_append = rec.append_time;
        }
        struct fr_log_rec rec;
        CHECK_EQ_INT(fr_log_reader_next(reader, &rec, 0), 0); /* nothing beyond the end */
        CHECK_EQ_INT(fr_log_reader_end(reader), N / 3);
        fr_log_reader_close(reader);
    }
    /* a reader at an exact offset */
    struct fr_log_reader *reader = NULL;
    CHECK_EQ_INT(fr_log_reader_open(NULL, "recentchange", 1, 7, &k.opts, &reader), FR_OK);
    if (reader) {
        struct fr_log_rec rec;
        CHECK_EQ_INT(fr_log_reader_next(reader, &rec, 5000), 1);
        CHECK_EQ_INT(rec.offset, 7);
        CHECK_EQ_INT(trec_index(&rec), 7 * 3 + 1);
        fr_log_reader_close(reader);
    }
    reader = NULL;
    CHECK_EQ_INT(fr_log_reader_open(NULL, "recentchange", 1, N / 3 + 1, &k.opts, &reader),
                 FR_ERANGE);
    CHECK_EQ_INT(fr_log_reader_open(NULL, "recentchange", 5, 0, &k.opts, &reader), FR_ENOTFOUND);
    CHECK_EQ_INT(fr_log_reader_open(NULL, "recentchange", 1, FR_LOG_OFFSET_END, &k.opts, &reader),
                 FR_OK);
    if (reader) {
        struct fr_log_rec rec;
        CHECK_EQ_INT(fr_log_reader_next(reader, &rec, 300), 0);
        fr_log_reader_close(reader);
    }
    struct fr_log_recovery recov;
    CHECK_EQ_INT(fr_log_recovery(log, 0, &recov), FR_OK);
    CHECK_EQ_INT(recov.bytes_cut + recov.records_cut, 0);
    CHECK_EQ_INT(fr_log_retention_run(log, 0), 0);
    fr_log_close(log);

    /* reopened: the ends come from the broker; offsets continue */
    log = NULL;
    CHECK_EQ_INT(fr_log_open(NULL, "recentchange", &k.opts, &log), FR_OK);
    if (log) {
        CHECK_EQ_INT(fr_log_durable_end(log, 2), N / 3);
        struct trec t;
        trec_make(&t, N, 10);
        int64_t off = -1;
        CHECK_EQ_INT(fr_log_append(log, 2, &t.rec, &off), FR_OK);
        CHECK_EQ_INT(off, N / 3);
        CHECK_EQ_INT(fr_log_flush(log), FR_OK);
        CHECK_EQ_INT(fr_log_durable_end(log, 2), N / 3 + 1);
        fr_log_close(log);
    }
    /* a topic with fewer partitions than asked */
    k.opts.partitions = 4;
    log = NULL;
    CHECK_EQ_INT(fr_log_open(NULL, "recentchange", &k.opts, &log), FR_ECONFIG);
    fr_kafka_free(k.kafka);
    /* a topic that does not exist */
    CHECK_EQ_INT(kctx_open(&k, "absent", 10000, 4096, 1000), FR_OK);
    CHECK_EQ_INT(fr_log_open(NULL, "recentchange", &k.opts, &log), FR_ENOTFOUND);
    fr_kafka_free(k.kafka);
}

/* Retriable produce errors: the idempotent producer retries; the stream is
 * stored exactly once, in order. */
static void test_produce_errors_retried(void)
{
    CHECK_EQ_INT(mock_cmd("topic pe 1 3"), 0);
    struct kctx k;
    CHECK_EQ_INT(kctx_open(&k, "pe", 20000, 4096, 1000), FR_OK);
    struct fr_log *log = NULL;
    CHECK_EQ_INT(fr_log_open(NULL, "recentchange", &k.opts, &log), FR_OK);
    if (!log) {
        fr_kafka_free(k.kafka);
        return;
    }
    enum { N = 200 };
    CHECK_EQ_INT(mock_cmd("produce-errors 6 NOT_ENOUGH_REPLICAS REQUEST_TIMED_OUT "
                          "NOT_LEADER_FOR_PARTITION"),
                 0);
    for (int i = 0; i < N; i++) {
        struct trec t;
        trec_make(&t, i, 50);
        CHECK_EQ_INT(fr_log_append(log, 0, &t.rec, NULL), FR_OK);
        if (i % 40 == 39) {
            CHECK_EQ_INT(fr_log_flush(log), FR_OK);
        }
    }
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    CHECK_EQ_INT(fr_log_durable_end(log, 0), N);
    fr_log_close(log);
    CHECK_EQ_INT(mock_cmd("clear"), 0);
    int seen[N] = {0};
    CHECK_EQ_INT(read_all(&k, 0, seen, N, 50), N);
    for (int i = 0; i < N; i++) {
        CHECK_EQ_INT(seen[i], 1);
    }
    fr_kafka_free(k.kafka);
}

/* A Produce request the broker applied but whose answer never arrives
 * (answer delayed, then the connection drops): librdkafka sends it again,
 * and the idempotent producer's sequence numbers make the broker drop the
 * copy. Without idempotence the partition would hold the batch twice.
 * Measured with librdkafka 2.0.2: its mock cluster writes the resent batch
 * again (it does not check producer sequence numbers), so there the case
 * cannot prove broker-side deduplication and is skipped; it runs with any
 * later librdkafka. */
static void test_idempotent_resend(void)
{
    if (rd_kafka_version() <= 0x020002ff) {
        fprintf(stderr, "skipped: librdkafka %s's mock cluster does not deduplicate a resent "
                        "Produce request\n",
                rd_kafka_version_str());
        return;
    }
    CHECK_EQ_INT(mock_cmd("topic id 1 1"), 0);
    CHECK_EQ_INT(mock_cmd("leader 0 1 id"), 0);
    struct kctx k;
    CHECK_EQ_INT(kctx_open(&k, "id", 20000, 4096, 1000), FR_OK);
    struct fr_log *log = NULL;
    CHECK_EQ_INT(fr_log_open(NULL, "recentchange", &k.opts, &log), FR_OK);
    if (!log) {
        fr_kafka_free(k.kafka);
        return;
    }
    enum { N = 30 };
    for (int i = 0; i < N / 3; i++) {
        struct trec t;
        trec_make(&t, i, 40);
        CHECK_EQ_INT(fr_log_append(log, 0, &t.rec, NULL), FR_OK);
    }
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    CHECK_EQ_INT(mock_cmd("produce-delay 1 4000"), 0);
    for (int i = N / 3; i < N; i++) {
        struct trec t;
        trec_make(&t, i, 40);
        CHECK_EQ_INT(fr_log_append(log, 0, &t.rec, NULL), FR_OK);
    }
    fr_log_maybe_flush(log, 0); /* sends the batch */
    usleep(1000 * 1000);        /* applied by the broker, the answer held back */
    CHECK_EQ_INT(mock_cmd("down 1"), 0);
    usleep(300 * 1000);
    CHECK_EQ_INT(mock_cmd("up 1"), 0);
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    CHECK_EQ_INT(fr_log_durable_end(log, 0), N);
    fr_log_close(log);
    int seen[N] = {0};
    CHECK_EQ_INT(read_all(&k, 0, seen, N, 40), N);
    for (int i = 0; i < N; i++) {
        CHECK_EQ_INT(seen[i], 1);
    }
    fr_kafka_free(k.kafka);
}

/* Errors that outlast the message timeout: the flush fails with a
 * classified error, nothing is acknowledged, the handle stays failed, and
 * what was acknowledged before is intact. */
static void test_produce_errors_fail(void)
{
    CHECK_EQ_INT(mock_cmd("topic pf 1 3"), 0);
    struct kctx k;
    CHECK_EQ_INT(kctx_open(&k, "pf", 1500, 4096, 1000), FR_OK);
    struct fr_log *log = NULL;
    CHECK_EQ_INT(fr_log_open(NULL, "recentchange", &k.opts, &log), FR_OK);
    if (!log) {
        fr_kafka_free(k.kafka);
        return;
    }
    enum { N = 20 };
    for (int i = 0; i < N / 2; i++) {
        struct trec t;
        trec_make(&t, i, 20);
        CHECK_EQ_INT(fr_log_append(log, 0, &t.rec, NULL), FR_OK);
    }
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    CHECK_EQ_INT(mock_cmd("produce-errors 2000 NOT_ENOUGH_REPLICAS"), 0);
    for (int i = N / 2; i < N; i++) {
        struct trec t;
        trec_make(&t, i, 20);
        CHECK_EQ_INT(fr_log_append(log, 0, &t.rec, NULL), FR_OK);
    }
    int rc = fr_log_flush(log);
    fprintf(stderr, "flush under persistent produce errors: %s (%s)\n", fr_err_name(rc),
            fr_strerror(rc));
    CHECK(rc == FR_EKAFKA || rc == FR_EKAFKA_FATAL);
    CHECK_EQ_INT(fr_log_durable_end(log, 0), N / 2);
    struct trec t;
    trec_make(&t, N, 20);
    CHECK_EQ_INT(fr_log_append(log, 0, &t.rec, NULL), rc); /* stays failed */
    CHECK_EQ_INT(fr_log_flush(log), rc);
    fr_log_close(log);
    CHECK_EQ_INT(mock_cmd("clear"), 0);
    int seen[N + 1] = {0};
    int64_t n = read_all(&k, 0, seen, N + 1, 20);
    CHECK_EQ_INT(n, N / 2);
    for (int i = 0; i < N / 2; i++) {
        CHECK_EQ_INT(seen[i], 1);
    }
    fr_kafka_free(k.kafka);
}

/* Broker 1 leads both partitions and goes down mid-stream; the leaders
 * move to brokers 2 and 3: the producer follows, every record once. */
static void test_broker_down_leader_moves(void)
{
    CHECK_EQ_INT(mock_cmd("topic bd 2 3"), 0);
    CHECK_EQ_INT(mock_cmd("leader 0 1 bd"), 0);
    CHECK_EQ_INT(mock_cmd("leader 1 1 bd"), 0);
    struct kctx k;
    CHECK_EQ_INT(kctx_open(&k, "bd", 20000, 4096, 1000), FR_OK);
    k.opts.partitions = 2;
    struct fr_log *log = NULL;
    CHECK_EQ_INT(fr_log_open(NULL, "recentchange", &k.opts, &log), FR_OK);
    if (!log) {
        fr_kafka_free(k.kafka);
        return;
    }
    enum { N = 400 };
    for (int i = 0; i < N; i++) {
        if (i == N / 2) {
            CHECK_EQ_INT(mock_cmd("down 1"), 0);
            CHECK_EQ_INT(mock_cmd("leader 0 2 bd"), 0);
            CHECK_EQ_INT(mock_cmd("leader 1 3 bd"), 0);
        }
        struct trec t;
        trec_make(&t, i, 64);
        CHECK_EQ_INT(fr_log_append(log, i % 2, &t.rec, NULL), FR_OK);
        if (i % 50 == 49) {
            CHECK_EQ_INT(fr_log_flush(log), FR_OK);
        }
    }
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    CHECK_EQ_INT(fr_log_durable_end(log, 0) + fr_log_durable_end(log, 1), N);
    fr_log_close(log);
    int seen[N] = {0};
    CHECK_EQ_INT(read_all(&k, 0, seen, N, 64) + read_all(&k, 1, seen, N, 64), N);
    for (int i = 0; i < N; i++) {
        CHECK_EQ_INT(seen[i], 1);
    }
    CHECK_EQ_INT(mock_cmd("up 1"), 0);
    fr_kafka_free(k.kafka);
}

/* The only replica's broker goes down for good: the flush fails with a
 * retriable error, a reader cannot open (clear error), and after the
 * broker is back everything acknowledged is there once. */
static void test_broker_down_fails(void)
{
    CHECK_EQ_INT(mock_cmd("topic bf 1 1"), 0);
    CHECK_EQ_INT(mock_cmd("leader 0 2 bf"), 0);
    struct kctx k;
    CHECK_EQ_INT(kctx_open(&k, "bf", 2000, 4096, 1000), FR_OK);
    struct fr_log *log = NULL;
    CHECK_EQ_INT(fr_log_open(NULL, "recentchange", &k.opts, &log), FR_OK);
    if (!log) {
        fr_kafka_free(k.kafka);
        return;
    }
    enum { N = 40 };
    for (int i = 0; i < N / 2; i++) {
        struct trec t;
        trec_make(&t, i, 30);
        CHECK_EQ_INT(fr_log_append(log, 0, &t.rec, NULL), FR_OK);
    }
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    CHECK_EQ_INT(mock_cmd("down 2"), 0);
    for (int i = N / 2; i < N; i++) {
        struct trec t;
        trec_make(&t, i, 30);
        CHECK_EQ_INT(fr_log_append(log, 0, &t.rec, NULL), FR_OK);
    }
    int rc = fr_log_flush(log);
    fprintf(stderr, "flush with the leader down: %s (%s)\n", fr_err_name(rc), fr_strerror(rc));
    CHECK_EQ_INT(rc, FR_EKAFKA);
    CHECK_EQ_INT(fr_err_class(rc), FR_ERRC_RETRY);
    CHECK_EQ_INT(fr_log_durable_end(log, 0), N / 2);
    fr_log_close(log);
    struct fr_log_reader *reader = NULL;
    rc = fr_log_reader_open(NULL, "recentchange", 0, 0, &k.opts, &reader);
    fprintf(stderr, "reader with the leader down: %s\n", fr_err_name(rc));
    CHECK(rc < 0 && fr_err_class(rc) == FR_ERRC_RETRY);
    fr_log_reader_close(reader);
    CHECK_EQ_INT(mock_cmd("up 2"), 0);
    int seen[N] = {0};
    int64_t n = read_all(&k, 0, seen, N, 30);
    CHECK(n >= N / 2);
    for (int i = 0; i < N; i++) {
        CHECK(i < N / 2 ? seen[i] == 1 : seen[i] <= 1);
    }
    fr_kafka_free(k.kafka);
}

/* Messages queued ahead by a reader that does not read, until the count
 * stops growing (or 8 s). */
static int64_t queued_plateau(struct fr_log_reader *reader)
{
    int64_t prev = -1, now = 0;
    int still = 0;
    for (int i = 0; i < 80 && still < 6; i++) {
        usleep(100 * 1000);
        now = fr_kafka_reader_queued(reader);
        still = now == prev ? still + 1 : 0;
        prev = now;
    }
    return now;
}

/* A backlog of 6,000 records of 300 bytes (1.8 MB): with a 64 KiB prefetch
 * cap the reader holds a few hundred at most; with a 64 MiB cap it takes
 * far more (the test can tell the difference); the capped reader still
 * reads the whole backlog. */
static void test_prefetch_cap(void)
{
    CHECK_EQ_INT(mock_cmd("topic pc 1 1"), 0);
    enum { N = 6000, LEN = 300 };
    struct kctx k;
    CHECK_EQ_INT(kctx_open(&k, "pc", 20000, 64, 10000000), FR_OK);
    struct fr_log *log = NULL;
    CHECK_EQ_INT(fr_log_open(NULL, "recentchange", &k.opts, &log), FR_OK);
    if (!log) {
        fr_kafka_free(k.kafka);
        return;
    }
    for (int i = 0; i < N; i++) {
        struct trec t;
        trec_make(&t, i, LEN);
        CHECK_EQ_INT(fr_log_append(log, 0, &t.rec, NULL), FR_OK);
    }
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    fr_log_close(log);
    /* the cap's bound: 64 KiB plus one fetch (64 KiB) of overshoot, twice over */
    const int64_t bound = 2 * (64 * 1024 + 65536) / LEN;
    struct fr_log_reader *reader = NULL;
    CHECK_EQ_INT(fr_log_reader_open(NULL, "recentchange", 0, 0, &k.opts, &reader), FR_OK);
    if (reader) {
        struct fr_log_rec rec;
        CHECK_EQ_INT(fr_log_reader_next(reader, &rec, 5000), 1);
        int64_t capped = queued_plateau(reader);
        fprintf(stderr, "prefetch with a 64 KiB cap: %lld messages queued (bound %lld)\n",
                (long long)capped, (long long)bound);
        CHECK(capped > 0 && capped <= bound);
        int64_t n = 1;
        while (fr_log_reader_next(reader, &rec, 0) == 1) {
            CHECK_EQ_INT(rec.offset, n);
            n++;
            if (n == N / 2) {
                CHECK(fr_kafka_reader_queued(reader) <= bound);
            }
        }
        CHECK_EQ_INT(n, N);
        fr_log_reader_close(reader);
    }
    fr_kafka_free(k.kafka);

    /* control: a large cap queues much more than the bound */
    CHECK_EQ_INT(kctx_open(&k, "pc", 20000, 65536, 10000000), FR_OK);
    reader = NULL;
    CHECK_EQ_INT(fr_log_reader_open(NULL, "recentchange", 0, 0, &k.opts, &reader), FR_OK);
    if (reader) {
        struct fr_log_rec rec;
        CHECK_EQ_INT(fr_log_reader_next(reader, &rec, 5000), 1);
        int64_t uncapped = queued_plateau(reader);
        fprintf(stderr, "prefetch with a 64 MiB cap: %lld messages queued\n", (long long)uncapped);
        CHECK(uncapped > bound);
        fr_log_reader_close(reader);
    }
    fr_kafka_free(k.kafka);
}

static void test_selector(void)
{
    struct fr_conf conf;
    char err[256];
    CHECK_EQ_INT(fr_conf_init(&conf), FR_OK);
    struct fr_log_opts opts;
    fr_log_opts_init(&opts);
    struct fr_kafka *kafka = (struct fr_kafka *)&opts; /* must be overwritten */
    CHECK_EQ_INT(fr_kafka_backend_from_conf(&conf, &opts, &kafka), FR_OK);
    CHECK(kafka == NULL && opts.backend == NULL);
    CHECK_EQ_INT(fr_conf_set(&conf, "log.backend=bogus", FR_CONF_FLAG, err, sizeof err), FR_OK);
    CHECK_EQ_INT(fr_kafka_backend_from_conf(&conf, &opts, &kafka), FR_ECONFIG);
    CHECK_EQ_INT(fr_conf_set(&conf, "log.backend=kafka", FR_CONF_FLAG, err, sizeof err), FR_OK);
    CHECK_EQ_INT(fr_kafka_backend_from_conf(&conf, &opts, &kafka), FR_OK);
    CHECK(kafka != NULL && opts.backend == &fr_log_kafka && opts.backend_ctx == kafka);
    fr_kafka_free(kafka);
    fr_conf_free(&conf);
}

int main(int argc, char **argv)
{
    if (argc < 2 || access(argv[1], X_OK) != 0) {
        printf("skipped: the kafka_mock tool is not built\n");
        return 77;
    }
    signal(SIGPIPE, SIG_IGN);
    RUN(test_selector);
    if (mock_start(argv[1]) < 0) {
        fprintf(stderr, "cannot start %s\n", argv[1]);
        return 1;
    }
    fprintf(stderr, "mock cluster at %s\n", mock_boot);
    RUN(test_roundtrip);
    RUN(test_produce_errors_retried);
    RUN(test_produce_errors_fail);
    RUN(test_idempotent_resend);
    RUN(test_prefetch_cap);
    RUN(test_broker_down_leader_moves);
    RUN(test_broker_down_fails);
    mock_stop();
    return check_report();
}
