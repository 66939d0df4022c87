/*
 * bench_enrich.c — the enrichment client against `freshet feed`'s API
 * fixture on 127.0.0.1 (in this process, on the feed's own threads):
 * lookups per second and API calls per 1,000 events, with the cache cold
 * and warm, on the titles of a generated stream.
 *
 *   bench_enrich [EVENTS] [LATENCY_MS]      (defaults 20000 and 0)
 *
 * Phases: cold (a new client: every distinct key costs a share of one
 * request), warm (the same events again: cache hits only), and the same
 * cold run with the fixture answering after LATENCY_MS (a stand-in for the
 * real API's round trip; lookups/s are then bounded by in-flight x 50 /
 * latency). The client runs unthrottled (rate_per_s 0) so the figures are
 * the client's and the fixture's, not the token bucket's. Last, a live-like
 * run: 5,000 events submitted at 380/s with a 100 requests/s bucket (the real
 * stream's 38/s against the default 10/s, ten times faster), where the
 * bucket, not the linger, decides how full batches get; then the same with a
 * 1 s linger.
 */
#include "core/buf.h"
#include "core/clock.h"
#include "core/err.h"
#include "core/json.h"
#include "enrich/enrich.h"
#include "feed/feed.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct key {
    char wiki[FR_ENRICH_WIKI_MAX + 1];
    char title[512];
};

static struct key *keys;
static int nkeys;

static int load(int n)
{
    struct fr_feed_opts o;
    fr_feed_opts_init(&o);
    o.synthetic = 1;
    o.seed = 7;
    o.count = n;
    o.start_ms = INT64_C(1783699526000);
    o.canary_rate = 0;
    struct fr_feed_stream *stream;
    struct fr_feed_cursor *cur;
    char err[256];
    if (fr_feed_stream_open(&o, &stream, err, sizeof err) < 0 ||
        fr_feed_cursor_new(stream, &cur) < 0) {
        return -1;
    }
    keys = calloc((size_t)n, sizeof *keys);
    struct fr_buf buf;
    fr_buf_init(&buf, 1 << 24);
    for (int p = 0; p < n; p++) {
        fr_buf_reset(&buf);
        struct fr_json_val root, v;
        if (fr_feed_stream_render(cur, p, &buf, NULL) < 0 ||
            !fr_json_value((const char *)buf.data, (const char *)buf.data + buf.len, &root)) {
            continue;
        }
        struct key *k = &keys[nkeys];
        int a = fr_json_member(&root, "server_name", &v) == 1
                    ? fr_json_unescape(&v, k->wiki, sizeof k->wiki - 1)
                    : -1;
        int b = a >= 0 && fr_json_member(&root, "title", &v) == 1
                    ? fr_json_unescape(&v, k->title, sizeof k->title - 1)
                    : -1;
        if (a < 0 || b < 0) {
            continue;
        }
        k->wiki[a] = 0;
        k->title[b] = 0;
        nkeys++;
    }
    fr_buf_free(&buf);
    fr_feed_cursor_free(cur);
    fr_feed_stream_close(stream);
    return nkeys;
}

/* Look every key up once; returns seconds taken. pace > 0: submit at most
 * pace keys per second (a live stream), else as fast as the queue takes. */
static double pass(struct fr_enrich *e, int nk, double pace)
{
    struct fr_enrich_result res[256];
    int64_t t0 = fr_mono_ns(), got = 0;
    int i = 0;
    while (got < nk) {
        int64_t allowed = pace > 0 ? (int64_t)((double)(fr_mono_ns() - t0) / 1e9 * pace) + 1 : nk;
        while (i < nk && i < allowed &&
               fr_enrich_submit(e, keys[i].wiki, keys[i].title, strlen(keys[i].title),
                                (uint64_t)i) == FR_OK) {
            i++;
        }
        int n = fr_enrich_poll(e, pace > 0 ? 2 : 100, res, 256);
        if (n < 0) {
            fprintf(stderr, "poll: %s\n", fr_strerror(n));
            exit(1);
        }
        got += n;
    }
    return (double)(fr_mono_ns() - t0) / 1e9;
}

static int linger_ms = 20;

static void run(const char *api_url, const char *label, int warm, double pace, int rate, int nk)
{
    struct fr_enrich_config cfg;
    fr_enrich_config_init(&cfg);
    cfg.api_url = api_url;
    cfg.user_agent = "freshet-bench/0 (bench_enrich; ops@freshet.invalid)";
    cfg.rate_per_s = rate;
    cfg.linger_ms = linger_ms;
    struct fr_enrich *e;
    char err[256];
    if (fr_enrich_new(&cfg, NULL, &e, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    struct fr_enrich_stats st;
    for (int round = 0; round < (warm ? 2 : 1); round++) {
        int64_t before;
        fr_enrich_stats_get(e, &st);
        before = st.requests;
        int64_t hits0 = st.cache_hits;
        double s = pass(e, nk, pace);
        fr_enrich_stats_get(e, &st);
        printf("%-34s %-5s %6d events %9.0f lookups/s %6.1f API calls per 1000 events, "
               "hit rate %5.1f %%\n",
               label, round ? "warm" : "cold", nk, (double)nk / s,
               1000.0 * (double)(st.requests - before) / (double)nk,
               100.0 * (double)(st.cache_hits - hits0) / (double)nk);
    }
    printf("%-34s cache %lld entries, %lld bytes\n", label, (long long)st.cache_entries,
           (long long)st.cache_bytes);
    fr_enrich_free(e);
}

static void with_fixture(int64_t latency_ms, const char *label, int warm, double pace, int rate,
                         int nk)
{
    struct fr_feed_opts o;
    fr_feed_opts_init(&o);
    o.synthetic = 1;
    o.count = 10;
    o.api_latency_ms = latency_ms;
    struct fr_feed_stream *stream;
    struct fr_feed_server *server;
    char err[256], url[256], api[300];
    if (fr_feed_stream_open(&o, &stream, err, sizeof err) < 0 ||
        fr_feed_server_start(stream, NULL, "127.0.0.1:0", &server, url, sizeof url, err,
                             sizeof err) < 0) {
        fprintf(stderr, "fixture: %s\n", err);
        exit(1);
    }
    *strstr(url + 7, "/") = 0;
    snprintf(api, sizeof api, "%s/api/{wiki}/w/api.php", url);
    run(api, label, warm, pace, rate, nk);
    fr_feed_server_stop(server);
    fr_feed_stream_close(stream);
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    int latency = argc > 2 ? atoi(argv[2]) : 0;
    if (load(n) <= 0) {
        fprintf(stderr, "cannot generate events\n");
        return 1;
    }
    printf("# %d events with a title (synthetic seed 7); defaults: batch 50, 4 in flight, "
           "linger 20 ms, cache 100000 entries\n",
           nkeys);
    with_fixture(0, "fixture, no latency", 1, 0, 0, nkeys);
    if (latency > 0) {
        char label[64];
        snprintf(label, sizeof label, "fixture, %d ms latency", latency);
        with_fixture(latency, label, 0, 0, 0, nkeys);
        /* A live stream, time-compressed 10x: 380 events/s against 100
         * requests/s is the real stream's 38/s against the default 10/s. */
        snprintf(label, sizeof label, "paced 380 ev/s, 100 req/s, %d ms", latency);
        with_fixture(latency, label, 0, 380, 100, nkeys < 5000 ? nkeys : 5000);
        linger_ms = 1000;
        snprintf(label, sizeof label, "  same, linger 1000 ms");
        with_fixture(latency, label, 0, 380, 100, nkeys < 5000 ? nkeys : 5000);
    }
    free(keys);
    return 0;
}
