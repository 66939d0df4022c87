/*
 * fuzz_sse.c — libFuzzer target for src/sse/parser.c.
 *
 * Input: byte 0 picks the event cap (64..1024 bytes), byte 1 seeds the chunk
 * splitter, the rest is the stream. Each run checks that
 *   1. the parser in one chunk, with a cap larger than the input, produces
 *      exactly the transcript of the naive oracle (tests/unit/test_sse_oracle.c);
 *   2. with the small cap, the parser fed in pseudo-random chunks (1..64
 *      bytes) produces the same transcript, stats and last-event-id as in
 *      one chunk;
 *   3. no buffer ever holds more than the cap (+1 for the terminator).
 * Any difference aborts. Built with clang -fsanitize=fuzzer,address,undefined
 * by tests/fuzz/sse.cmake; run by the ctest test fuzz_sse for 10 s.
 */
#include "sse/sse_int.h"

#include "../unit/test_sse_oracle.c"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fz_on_event(void *arg, const struct fr_sse_event *event)
{
    tr_event(arg, event);
    return 0;
}

static void fz_on_retry(void *arg, int64_t ms) { tr_retry(arg, ms); }

static void fz_check_bound(const struct fr_sse_parser *parser, size_t max)
{
    if (parser->line.alloc > max + 1 || parser->data.alloc > max + 1 ||
        parser->type.alloc > max + 1 || parser->id.alloc > max + 1 ||
        parser->last_id.alloc > max + 1) {
        fprintf(stderr, "buffer past the cap %zu\n", max);
        abort();
    }
}

/* Parse s in chunks chosen by seed (0 = one chunk); the transcript goes to
 * t, and with stats also the counters and the last id. */
static void fz_run(const uint8_t *s, size_t len, size_t max, unsigned seed, struct fr_buf *t,
                   int stats)
{
    struct fr_sse_parser *parser = NULL;
    struct fr_sse_parser_opts opts = {
        .on_event = fz_on_event, .on_retry = fz_on_retry, .arg = t, .max_event_bytes = max};
    if (fr_sse_parser_create(&opts, &parser) < 0) {
        abort();
    }
    uint32_t x = seed * 2654435761u + 1;
    size_t at = 0;
    while (at < len) {
        size_t n = len - at;
        if (seed) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            size_t pick = 1 + x % 64;
            n = pick < n ? pick : n;
        }
        /* A private copy per chunk, so ASan sees any pointer kept into it. */
        uint8_t *chunk = malloc(n ? n : 1);
        memcpy(chunk, s + at, n);
        if (fr_sse_parser_feed(parser, chunk, n) < 0) {
            abort();
        }
        free(chunk);
        fz_check_bound(parser, max);
        at += n;
    }
    fr_sse_parser_reset(parser);
    if (!stats) {
        fr_sse_parser_destroy(parser);
        return;
    }
    struct fr_sse_parser_stats st;
    fr_sse_parser_stats(parser, &st);
    fr_buf_printf(t, "|%llu,%llu,%llu,%llu,%llu,%llu|%s", (unsigned long long)st.bytes,
                  (unsigned long long)st.lines, (unsigned long long)st.events,
                  (unsigned long long)st.comments, (unsigned long long)st.oversize,
                  (unsigned long long)st.truncated, fr_sse_parser_last_id(parser));
    fr_sse_parser_destroy(parser);
}

static void fz_same(const struct fr_buf *a, const struct fr_buf *b, const char *what)
{
    if (a->len != b->len || (a->len && memcmp(a->data, b->data, a->len) != 0)) {
        fprintf(stderr, "mismatch: %s\n", what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) {
        return 0;
    }
    size_t max = 64 + (size_t)(data[0] % 16) * 64;
    unsigned seed = (unsigned)data[1] + 1;
    const uint8_t *s = data + 2;
    size_t len = size - 2;

    /* 1. against the oracle, no cap in play */
    struct fr_buf model, whole_big;
    fr_buf_init(&model, SIZE_MAX / 4);
    fr_buf_init(&whole_big, SIZE_MAX / 4);
    oracle_parse(s, len, &model);
    size_t big = len + 64 > FR_SSE_MIN_MAX_EVENT ? len + 64 : FR_SSE_MIN_MAX_EVENT;
    fz_run(s, len, big, 0, &whole_big, 0);
    fz_same(&model, &whole_big, "parser vs oracle");

    /* 2. small cap: whole vs split */
    struct fr_buf whole, split;
    fr_buf_init(&whole, SIZE_MAX / 4);
    fr_buf_init(&split, SIZE_MAX / 4);
    fz_run(s, len, max, 0, &whole, 1);
    fz_run(s, len, max, seed, &split, 1);
    fz_same(&whole, &split, "one chunk vs many");

    fr_buf_free(&model);
    fr_buf_free(&whole_big);
    fr_buf_free(&whole);
    fr_buf_free(&split);
    return 0;
}
