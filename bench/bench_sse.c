/*
 * bench_sse.c — throughput of the SSE parser against the memchr floor.
 *
 * Builds about 256 MB of frames shaped like Wikimedia's (event: message, a
 * ~200-byte JSON id, one ~1 KB JSON data line, a blank line) in memory, then
 * in the same run measures
 *   - fr_sse_parser_feed over the buffer in 64 KiB chunks (and in 16 KiB
 *     chunks, libcurl's default delivery size), and
 *   - a memchr loop counting '\n' over the same bytes in the same chunks,
 * and prints MB/s (10^6 bytes), events/s and the parser/memchr ratio. Each
 * figure is the best of several passes. Single-threaded; no I/O after setup.
 *
 *   usage: bench_sse [total_mb] [passes]      (defaults 256 and 5)
 */
#include "core/clock.h"
#include "core/err.h"
#include "sse/sse.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bench_sink {
    uint64_t events;
    uint64_t data_bytes;
    uint64_t checksum;
};

static int bench_on_event(void *arg, const struct fr_sse_event *event)
{
    struct bench_sink *sink = arg;
    sink->events++;
    sink->data_bytes += event->data_len;
    /* Touch the payload so the work cannot be optimised away. */
    sink->checksum += (uint8_t)event->data[event->data_len / 2] + event->id_len;
    return 0;
}

static uint64_t bench_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* One frame like a recentchange event; returns its length. */
static size_t bench_frame(char *out, size_t cap, uint64_t i, uint64_t *rng)
{
    static const char *const wikis[] = {"enwiki", "wikidatawiki", "commonswiki", "dewiki",
                                        "frwiki", "jawiki"};
    static const char *const types[] = {"edit", "categorize", "log", "new"};
    char filler[600];
    size_t fl = 80 + bench_rand(rng) % 100;
    for (size_t k = 0; k < fl; k++) {
        filler[k] = (char)('a' + bench_rand(rng) % 26);
        if (k % 9 == 8) {
            filler[k] = ' ';
        }
    }
    filler[fl] = 0;
    const char *wiki = wikis[bench_rand(rng) % 6];
    int64_t ts = 1791207722236 + (int64_t)i * 37;
    int n = snprintf(
        out, cap,
        "event: message\n"
        "id: [{\"topic\":\"eqiad.mediawiki.recentchange\",\"partition\":0,\"timestamp\":%lld},"
        "{\"topic\":\"codfw.mediawiki.recentchange\",\"partition\":0,\"offset\":-1}]\n"
        "data: {\"$schema\":\"/mediawiki/recentchange/1.0.0\",\"meta\":{\"uri\":\"https://"
        "en.wikipedia.org/wiki/Page_%llu\",\"request_id\":\"%08llx-09db-401f-9bbe-8cd8e1c6d2a1\","
        "\"id\":\"%08llx-fcc4-4695-b6f5-759b920c76ec\",\"dt\":\"2026-10-05T13:42:02.235Z\","
        "\"domain\":\"en.wikipedia.org\",\"stream\":\"mediawiki.recentchange\",\"topic\":"
        "\"eqiad.mediawiki.recentchange\",\"partition\":0,\"offset\":%llu},\"id\":%llu,"
        "\"type\":\"%s\",\"namespace\":0,\"title\":\"Page %llu\",\"title_url\":\"https://"
        "en.wikipedia.org/wiki/Page_%llu\",\"comment\":\"%s\",\"timestamp\":1791207722,"
        "\"user\":\"Editor%llu\",\"bot\":false,\"notify_url\":\"https://en.wikipedia.org/w/"
        "index.php?diff=%llu\",\"minor\":false,\"length\":{\"old\":%llu,\"new\":%llu},"
        "\"revision\":{\"old\":%llu,\"new\":%llu},\"server_url\":\"https://en.wikipedia.org\","
        "\"server_name\":\"en.wikipedia.org\",\"server_script_path\":\"/w\",\"wiki\":\"%s\","
        "\"parsedcomment\":\"%s\"}\n\n",
        (long long)ts, (unsigned long long)i, (unsigned long long)bench_rand(rng) & 0xffffffffu,
        (unsigned long long)bench_rand(rng) & 0xffffffffu, 6600000000ull + i,
        3500000000ull + i, types[i % 4], (unsigned long long)i, (unsigned long long)i,
        filler + fl / 2, (unsigned long long)(i % 5000), 1200000000ull + i,
        (unsigned long long)(bench_rand(rng) % 90000), (unsigned long long)(bench_rand(rng) % 90000),
        1200000000ull + i - 1, 1200000000ull + i, wiki, filler);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

static double bench_parse(const char *buf, size_t len, size_t chunk, struct bench_sink *sink)
{
    struct fr_sse_parser *parser = NULL;
    struct fr_sse_parser_opts opts = {.on_event = bench_on_event, .arg = sink};
    if (fr_sse_parser_create(&opts, &parser) < 0) {
        fprintf(stderr, "bench_sse: parser create failed\n");
        exit(1);
    }
    memset(sink, 0, sizeof *sink);
    int64_t t0 = fr_mono_ns();
    for (size_t at = 0; at < len; at += chunk) {
        size_t n = len - at < chunk ? len - at : chunk;
        if (fr_sse_parser_feed(parser, buf + at, n) < 0) {
            fprintf(stderr, "bench_sse: feed failed\n");
            exit(1);
        }
    }
    int64_t t1 = fr_mono_ns();
    fr_sse_parser_destroy(parser);
    return (double)(t1 - t0) / 1e9;
}

static double bench_memchr(const char *buf, size_t len, size_t chunk, uint64_t *lines)
{
    uint64_t count = 0;
    int64_t t0 = fr_mono_ns();
    for (size_t at = 0; at < len; at += chunk) {
        size_t n = len - at < chunk ? len - at : chunk;
        const char *p = buf + at, *end = p + n;
        while ((p = memchr(p, '\n', (size_t)(end - p)))) {
            count++;
            p++;
        }
    }
    int64_t t1 = fr_mono_ns();
    *lines = count;
    return (double)(t1 - t0) / 1e9;
}

int main(int argc, char **argv)
{
    size_t total_mb = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 256;
    int passes = argc > 2 ? atoi(argv[2]) : 5;
    if (total_mb == 0 || passes <= 0) {
        fprintf(stderr, "usage: bench_sse [total_mb] [passes]\n");
        return 2;
    }
    size_t cap = total_mb << 20;
    char *buf = malloc(cap + 4096);
    if (!buf) {
        fprintf(stderr, "bench_sse: cannot allocate %zu MB\n", total_mb);
        return 1;
    }
    size_t len = 0;
    uint64_t frames = 0, rng = 0x9E3779B97F4A7C15ULL;
    while (len + 4096 < cap) {
        size_t n = bench_frame(buf + len, 4096, frames, &rng);
        if (!n) {
            fprintf(stderr, "bench_sse: frame too long\n");
            return 1;
        }
        len += n;
        frames++;
    }
    printf("bench_sse: %.1f MB of SSE frames, %llu events, %.0f bytes/event\n", (double)len / 1e6,
           (unsigned long long)frames, (double)len / (double)frames);

    static const size_t chunks[] = {65536, 16384};
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
        size_t chunk = chunks[c];
        double best_parse = 1e30, best_scan = 1e30;
        struct bench_sink sink = {0};
        uint64_t lines = 0;
        for (int p = 0; p < passes; p++) {
            double t = bench_parse(buf, len, chunk, &sink);
            best_parse = t < best_parse ? t : best_parse;
            t = bench_memchr(buf, len, chunk, &lines);
            best_scan = t < best_scan ? t : best_scan;
        }
        if (sink.events != frames) {
            fprintf(stderr, "bench_sse: parsed %llu events, expected %llu\n",
                    (unsigned long long)sink.events, (unsigned long long)frames);
            return 1;
        }
        double parse_mbs = (double)len / 1e6 / best_parse;
        double scan_mbs = (double)len / 1e6 / best_scan;
        printf("chunk %6zu B: parser %8.0f MB/s (%.2f M events/s) | memchr '\\n' %8.0f MB/s "
               "(%llu lines) | parser/memchr %.2f  [checksum %llu]\n",
               chunk, parse_mbs, (double)frames / best_parse / 1e6, scan_mbs,
               (unsigned long long)lines, parse_mbs / scan_mbs, (unsigned long long)sink.checksum);
    }
    free(buf);
    return 0;
}
