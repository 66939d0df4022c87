/*
 * test_pipeline_ahead.c — the decode-ahead thread (src/pipeline/ahead.c)
 * against decoding inline: for the recorded events of shared/ (and
 * synthetic ones where shared/ is absent), broken copies of them, records
 * bigger than a batch and an oversize one, every item handed out must equal
 * what fr_gate_decode gives for the same bytes on the consumer's thread, in
 * the source's order; plus a source error after some records, a stop in
 * the middle of an epoch, and epochs run back to back on one decoder.
 */
#include "check.h"

#include "core/err.h"
#include "pipeline/ahead.h"
#include "process/process.h"

#include <pthread.h>
#include <stdint.h>

struct src {
    char **recs;
    size_t *lens;
    size_t n, at;
    size_t fail_at; /* return FR_EIO instead of record fail_at; SIZE_MAX: never */
    struct each_log *each; /* test_item_callback's record of the item callback */
};

static int src_next(void *arg, struct fr_log_rec *rec, int32_t *partition)
{
    struct src *s = arg;
    if (s->at == s->fail_at) {
        return FR_EIO;
    }
    if (s->at >= s->n) {
        return 0;
    }
    memset(rec, 0, sizeof *rec);
    rec->offset = (int64_t)s->at;
    rec->append_time = INT64_C(1780000000000) + (int64_t)s->at;
    rec->payload = s->recs[s->at];
    rec->payload_len = s->lens[s->at];
    *partition = (int32_t)(s->at % 3);
    s->at++;
    return 1;
}

static void add(struct src *s, const char *p, size_t len)
{
    s->recs = realloc(s->recs, (s->n + 1) * sizeof *s->recs);
    s->lens = realloc(s->lens, (s->n + 1) * sizeof *s->lens);
    s->recs[s->n] = malloc(len ? len : 1);
    memcpy(s->recs[s->n], p, len);
    s->lens[s->n] = len;
    s->n++;
}

static void src_free(struct src *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->recs[i]);
    }
    free(s->recs);
    free(s->lens);
}

static const char synthetic[] =
    "{\"meta\":{\"id\":\"%08x-0000-4000-8000-000000000000\",\"dt\":\"2026-07-10T16:05:%02d.024Z\","
    "\"domain\":\"en.wikipedia.org\"},\"wiki\":\"enwiki\",\"type\":\"edit\",\"namespace\":0,"
    "\"title\":\"Caf\\u00e9 %u\",\"user\":\"U\\\"ser\",\"bot\":false,\"length\":{\"old\":10,"
    "\"new\":%u},\"comment\":\"%s\"}";

/* Records: the recorded sample (or synthetic events), each also cut in
 * half, with a bad byte, and a few big and oversize ones. */
static void build(struct src *s, size_t big_bytes)
{
    const char *path = check_shared("data/wikimedia/gokulportfolio-sample_events.jsonl");
    FILE *f = path ? fopen(path, "r") : NULL;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    size_t k = 0;
    if (!f) {
        fprintf(stderr, "  note: shared/ absent, using synthetic events\n");
    }
    while (k < 3000) {
        char buf[1024];
        if (f) {
            if ((len = getline(&line, &cap, f)) <= 0) {
                rewind(f); /* the sample again: the same events, as duplicates */
                if ((len = getline(&line, &cap, f)) <= 0) {
                    break;
                }
            }
            while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) {
                len--;
            }
        } else {
            len = snprintf(buf, sizeof buf, synthetic, (unsigned)k, (int)(k % 60), (unsigned)k,
                           (unsigned)k * 7, "edit comment");
            free(line);
            line = strdup(buf);
        }
        add(s, line, (size_t)len);
        if (k % 7 == 0) {
            add(s, line, (size_t)len / 2); /* not_json */
        }
        if (k % 11 == 0 && len > 20) {
            char *bad = malloc((size_t)len);
            memcpy(bad, line, (size_t)len);
            bad[len / 2] = (char)0xff; /* bad_utf8 or not_json */
            add(s, bad, (size_t)len);
            free(bad);
        }
        if (k == 1000) {
            /* A valid event larger than a batch (the batch grows for it). */
            size_t n = big_bytes;
            char *comment = malloc(n + 1);
            memset(comment, 'x', n);
            comment[n] = 0;
            char *big = malloc(n + 1024);
            int blen = snprintf(big, n + 1024, synthetic, 0xabcdefu, 7, 1u, 2u, comment);
            add(s, big, (size_t)blen);
            add(s, big, (size_t)blen + 0); /* twice: a duplicate, back to back */
            free(big);
            free(comment);
        }
        k++;
    }
    free(line);
    if (f) {
        fclose(f);
    }
}

static int str_eq(struct fr_proc_str a, struct fr_proc_str b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.s, b.s, a.len) == 0);
}

static int row_eq(const struct fr_row *a, const struct fr_row *b)
{
    return a->partition == b->partition && a->offset == b->offset &&
           a->ingest_ms == b->ingest_ms && memcmp(a->key, b->key, 16) == 0 &&
           str_eq(a->meta_id, b->meta_id) && a->event_us == b->event_us &&
           str_eq(a->wiki, b->wiki) && a->type == b->type && a->has == b->has &&
           a->rc_id == b->rc_id && a->ns == b->ns && a->bot == b->bot && a->minor == b->minor &&
           a->patrolled == b->patrolled && a->length_old == b->length_old &&
           a->length_new == b->length_new && a->revision_old == b->revision_old &&
           a->revision_new == b->revision_new && a->log_id == b->log_id &&
           str_eq(a->title, b->title) && str_eq(a->user, b->user) &&
           str_eq(a->comment, b->comment) && str_eq(a->server_name, b->server_name) &&
           str_eq(a->log_type, b->log_type) && str_eq(a->log_action, b->log_action);
}

/* Run one epoch over s through ahead and compare every item with an inline
 * decode; stop after stop_after items when not 0. Returns the final code of
 * fr_ahead_next (0 at the end) and the items seen. */
static int run_epoch(struct fr_ahead *ahead, struct fr_gate *gate, struct src *s,
                     size_t stop_after, size_t *seen, size_t *mismatches, uint32_t *reasons)
{
    s->at = 0;
    *seen = 0;
    int rc = fr_ahead_start(ahead, src_next, NULL, s);
    if (rc != FR_OK) {
        return rc;
    }
    for (;;) {
        const struct fr_ahead_batch *batch = NULL;
        rc = fr_ahead_next(ahead, &batch);
        if (rc <= 0) {
            break;
        }
        CHECK(batch->n > 0 && batch->n <= AHEAD_BATCH_ITEMS);
        for (uint32_t i = 0; i < batch->n; i++) {
            const struct fr_ahead_item *it = &batch->items[i];
            size_t idx = *seen;
            struct fr_proc_pos pos = {(int32_t)(idx % 3), (int64_t)idx,
                                      INT64_C(1780000000000) + (int64_t)idx};
            struct fr_row row;
            char detail[FR_GATE_DETAIL_MAX];
            enum fr_gate_reason reason =
                fr_gate_decode(gate, &pos, s->recs[idx], s->lens[idx], &row, detail);
            int same = it->pos.partition == pos.partition && it->pos.offset == pos.offset &&
                       it->pos.ingest_ms == pos.ingest_ms && it->raw_len == s->lens[idx] &&
                       memcmp(it->raw, s->recs[idx], s->lens[idx]) == 0 && it->reason == reason;
            if (same && reason == FR_GATE_OK) {
                same = row_eq(&it->row, &row) && it->detail == NULL;
            } else if (same) {
                same = it->detail && strcmp(it->detail, detail) == 0;
            }
            if (!same) {
                (*mismatches)++;
            }
            if (reasons && reason < FR_GATE_REASON_COUNT) {
                reasons[reason]++;
            }
            (*seen)++;
        }
        fr_ahead_release(ahead, batch);
        if (stop_after && *seen >= stop_after) {
            break;
        }
    }
    fr_ahead_stop(ahead);
    return rc;
}

static void test_equal_to_inline(void)
{
    struct fr_gate_opts gopts = {.max_event_bytes = (size_t)6 << 20, .max_future_ms = INT64_C(86400000) * 366};
    struct src s = {.fail_at = SIZE_MAX};
    /* 5 MiB: bigger than a batch, below max_event_bytes. */
    build(&s, (size_t)5 << 20);
    /* And one over max_event_bytes: oversize, its bytes still handed out. */
    char *huge = malloc((size_t)7 << 20);
    memset(huge, ' ', (size_t)7 << 20);
    huge[0] = '{';
    huge[((size_t)7 << 20) - 1] = '}';
    add(&s, huge, (size_t)7 << 20);
    free(huge);
    struct fr_gate *gate = NULL;
    struct fr_ahead *ahead = NULL;
    CHECK_EQ_INT(fr_gate_create(&gopts, &gate), FR_OK);
    CHECK_EQ_INT(fr_ahead_create(&gopts, &ahead), FR_OK);
    uint32_t reasons[FR_GATE_REASON_COUNT] = {0};
    for (int round = 0; round < 3; round++) { /* one decoder, epochs back to back */
        size_t seen = 0, bad = 0;
        int rc = run_epoch(ahead, gate, &s, 0, &seen, &bad, round == 0 ? reasons : NULL);
        CHECK_EQ_INT(rc, 0);
        CHECK_EQ_INT(seen, s.n);
        CHECK_EQ_INT(bad, 0);
    }
    /* The inputs cover accepted records and several kinds of rejection. */
    CHECK(reasons[FR_GATE_OK] > 1000);
    CHECK(reasons[FR_GATE_NOT_JSON] > 100);
    CHECK(reasons[FR_GATE_OVERSIZE] == 1);
    fr_ahead_destroy(ahead);
    fr_gate_destroy(gate);
    src_free(&s);
}

static void test_source_error_and_stop(void)
{
    struct fr_gate_opts gopts = {.max_event_bytes = 1 << 20, .max_future_ms = INT64_C(86400000) * 366};
    struct src s = {.fail_at = SIZE_MAX};
    build(&s, 1000);
    struct fr_gate *gate = NULL;
    struct fr_ahead *ahead = NULL;
    CHECK_EQ_INT(fr_gate_create(&gopts, &gate), FR_OK);
    CHECK_EQ_INT(fr_ahead_create(&gopts, &ahead), FR_OK);
    size_t seen = 0, bad = 0;
    /* An error from the source comes after every record before it. */
    s.fail_at = s.n / 2 + 1;
    CHECK(s.fail_at > AHEAD_BATCH_ITEMS / 2);
    CHECK_EQ_INT(run_epoch(ahead, gate, &s, 0, &seen, &bad, NULL), FR_EIO);
    CHECK_EQ_INT(seen, s.fail_at);
    CHECK_EQ_INT(bad, 0);
    /* A stop after the first batch: no hang, and the next epoch is whole. */
    s.fail_at = SIZE_MAX;
    CHECK_EQ_INT(run_epoch(ahead, gate, &s, 1, &seen, &bad, NULL), 1);
    CHECK(seen >= 1 && seen <= AHEAD_BATCH_ITEMS);
    CHECK_EQ_INT(run_epoch(ahead, gate, &s, 0, &seen, &bad, NULL), 0);
    CHECK_EQ_INT(seen, s.n);
    CHECK_EQ_INT(bad, 0);
    /* An empty epoch ends at once. */
    struct src empty = {.fail_at = SIZE_MAX};
    CHECK_EQ_INT(run_epoch(ahead, gate, &empty, 0, &seen, &bad, NULL), 0);
    CHECK_EQ_INT(seen, 0);
    /* Destroy while an epoch runs (never drained): stops it first. */
    s.at = 0;
    CHECK_EQ_INT(fr_ahead_start(ahead, src_next, NULL, &s), FR_OK);
    CHECK_EQ_INT(fr_ahead_start(ahead, src_next, NULL, &s), FR_ESTATE);
    fr_ahead_destroy(ahead);
    fr_gate_destroy(gate);
    src_free(&s);
}

/* The item callback: what it saw, and where it fails. */
struct each_log {
    int64_t *offsets;
    enum fr_gate_reason *reasons;
    size_t n, cap;
    size_t fail_at; /* FR_ENOSPC for the item with this offset; SIZE_MAX: never */
    pthread_t thread;
    int other_thread; /* every call came from a thread other than the test's */
};

static int each_item(void *arg, const struct fr_ahead_item *item)
{
    struct src *s = arg;
    struct each_log *e = s->each;
    e->other_thread &= !pthread_equal(pthread_self(), e->thread);
    if ((size_t)item->pos.offset == e->fail_at) {
        return FR_ENOSPC;
    }
    if (e->n < e->cap) {
        e->offsets[e->n] = item->pos.offset;
        e->reasons[e->n] = item->reason;
    }
    e->n++;
    return FR_OK;
}

static void test_item_callback(void)
{
    struct fr_gate_opts gopts = {.max_event_bytes = 1 << 20, .max_future_ms = INT64_C(86400000) * 366};
    struct src s = {.fail_at = SIZE_MAX};
    build(&s, 3000);
    struct fr_gate *gate = NULL;
    struct fr_ahead *ahead = NULL;
    CHECK_EQ_INT(fr_gate_create(&gopts, &gate), FR_OK);
    CHECK_EQ_INT(fr_ahead_create(&gopts, &ahead), FR_OK);
    struct each_log e = {.cap = s.n, .fail_at = SIZE_MAX, .thread = pthread_self(),
                         .other_thread = 1};
    e.offsets = calloc(s.n, sizeof *e.offsets);
    e.reasons = calloc(s.n, sizeof *e.reasons);
    s.each = &e;
    for (int round = 0; round < 2; round++) {
        /* Round 0: every record, in order, with the gate's verdict, before
         * its batch is handed out. Round 1: the callback fails at a record
         * in the second batch: the records before it come out, then the
         * error. */
        e.n = 0;
        e.fail_at = round ? AHEAD_BATCH_ITEMS + 17 : SIZE_MAX;
        s.at = 0;
        CHECK_EQ_INT(fr_ahead_start(ahead, src_next, each_item, &s), FR_OK);
        size_t seen = 0, bad = 0;
        int rc;
        const struct fr_ahead_batch *batch = NULL;
        while ((rc = fr_ahead_next(ahead, &batch)) == 1) {
            for (uint32_t i = 0; i < batch->n; i++, seen++) {
                const struct fr_ahead_item *it = &batch->items[i];
                bad += seen >= e.n || it->pos.offset != (int64_t)seen ||
                       e.offsets[seen] != it->pos.offset || e.reasons[seen] != it->reason;
            }
            fr_ahead_release(ahead, batch);
        }
        fr_ahead_stop(ahead);
        CHECK_EQ_INT(rc, round ? FR_ENOSPC : 0);
        CHECK_EQ_INT(seen, round ? AHEAD_BATCH_ITEMS + 17 : s.n);
        CHECK_EQ_INT(e.n, seen);
        CHECK_EQ_INT(bad, 0);
    }
    CHECK(e.other_thread);
    free(e.offsets);
    free(e.reasons);
    fr_ahead_destroy(ahead);
    fr_gate_destroy(gate);
    src_free(&s);
}

int main(void)
{
    RUN(test_equal_to_inline);
    RUN(test_source_error_and_stop);
    RUN(test_item_callback);
    return check_report();
}
