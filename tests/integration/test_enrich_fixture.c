/*
 * test_enrich_fixture.c — the lookup client against `freshet feed`'s
 * MediaWiki-API fixture over 127.0.0.1 (the feed's real HTTP server, run in
 * this process on its own threads).
 *
 * The titles are those of a generated stream; the expected answer of every
 * key comes from the fixture's deterministic rules (fr_feed_api_page, the
 * feed's code, not the client's), so the client's batching, normalisation,
 * answer parsing and result mapping are checked end to end.
 *   A. no faults: every outcome matches; a second pass is answered from the
 *      cache; request and title counts agree with the fixture's counters.
 *   B. 503 on half the requests, 100 ms latency, a queue of 64 keys: every
 *      key ends resolved/no-item (matching) or failed with a reason, none is
 *      lost or answered twice; submit pushes back with FR_EAGAIN.
 *   C. the fixture's rate limit (429 + Retry-After), injected 429s and
 *      maxlag errors: the same accounting holds.
 *   D. labels (issue 33) on: every resolved key carries the fixture's label
 *      (fr_feed_api_label) in its wiki's content language (the generator's
 *      table, not the client's mapping), else English, else none with the
 *      reason; clean, then warm (no request), then under 503s, 429s,
 *      maxlag and latency with none lost or answered twice.
 * Prints calls per 1,000 events and the cache hit rate of each phase.
 */
#include "check.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/json.h"
#include "enrich/enrich.h"
#include "feed/feed.h"
#include "feed/feed_int.h"

#include <signal.h>
#include <stdint.h>

struct ev {
    char wiki[FR_ENRICH_WIKI_MAX + 1]; /* server_name */
    char title[1024];
    struct fr_feed_page want;
};

static struct ev *evs;
static int nevs;
static int labels_on; /* phase D */
/* phase D: labels found, none, item missing, found in a language other than English */
static int64_t label_counts[4];

/* The (server_name, title) of n events of synthetic seed `seed`. */
static int load_events(uint64_t seed, int n)
{
    struct fr_feed_opts o;
    fr_feed_opts_init(&o);
    o.synthetic = 1;
    o.seed = seed;
    o.count = n;
    o.start_ms = INT64_C(1783699526000);
    o.canary_rate = 0;
    struct fr_feed_stream *stream;
    struct fr_feed_cursor *cur;
    char err[256];
    if (fr_feed_stream_open(&o, &stream, err, sizeof err) < 0 ||
        fr_feed_cursor_new(stream, &cur) < 0) {
        fprintf(stderr, "stream: %s\n", err);
        return -1;
    }
    free(evs);
    evs = calloc((size_t)n, sizeof *evs);
    nevs = 0;
    struct fr_buf buf;
    fr_buf_init(&buf, 1 << 24);
    for (int p = 0; p < n; p++) {
        fr_buf_reset(&buf);
        if (fr_feed_stream_render(cur, p, &buf, NULL) < 0) {
            continue;
        }
        struct fr_json_val root, v;
        const char *s = (const char *)buf.data;
        if (!fr_json_value(s, s + buf.len, &root)) {
            continue;
        }
        struct ev *e = &evs[nevs];
        int a = fr_json_member(&root, "server_name", &v) == 1
                    ? fr_json_unescape(&v, e->wiki, sizeof e->wiki - 1)
                    : -1;
        if (a < 0) {
            continue;
        }
        e->wiki[a] = 0;
        int b = fr_json_member(&root, "title", &v) == 1
                    ? fr_json_unescape(&v, e->title, sizeof e->title - 1)
                    : -1;
        if (b < 0) {
            continue;
        }
        e->title[b] = 0;
        int w = fr_feed_api_wiki(e->wiki, strlen(e->wiki));
        if (w < 0 || fr_feed_api_page(w, e->title, strlen(e->title), &e->want) < 0) {
            fprintf(stderr, "fixture does not know %s\n", e->wiki);
            continue;
        }
        nevs++;
    }
    fr_buf_free(&buf);
    fr_feed_cursor_free(cur);
    fr_feed_stream_close(stream);
    return nevs;
}

struct fixture {
    struct fr_feed_stream *stream;
    struct fr_feed_server *server;
    char api_url[300];
};

static int fixture_start(struct fixture *fx, const struct fr_feed_opts *faults)
{
    struct fr_feed_opts o = *faults;
    o.synthetic = 1;
    o.count = 10;
    char err[256], url[256];
    if (fr_feed_stream_open(&o, &fx->stream, err, sizeof err) < 0 ||
        fr_feed_server_start(fx->stream, NULL, "127.0.0.1:0", &fx->server, url, sizeof url, err,
                             sizeof err) < 0) {
        fprintf(stderr, "fixture: %s\n", err);
        return -1;
    }
    char *path = strstr(url + 7, "/");
    *path = 0;
    snprintf(fx->api_url, sizeof fx->api_url, "%s/api/{wiki}/w/api.php", url);
    return 0;
}

static void fixture_stop(struct fixture *fx)
{
    fr_feed_server_stop(fx->server);
    fr_feed_stream_close(fx->stream);
}

static int64_t counter(const struct fixture *fx, int c)
{
    return fr_feed_api_counter(fr_feed_server_api(fx->server), c);
}

/* Check one result against the fixture's answer for its event. */
static void check_result(const struct fr_enrich_result *r, int *seen)
{
    CHECK(r->tag < (uint64_t)nevs);
    if (r->tag >= (uint64_t)nevs) {
        return;
    }
    seen[r->tag]++;
    const struct fr_feed_page *w = &evs[r->tag].want;
    if (r->outcome == FR_ENRICH_FAILED) {
        CHECK(r->err < 0 && r->reason[0] != 0);
        return;
    }
    char item[32];
    switch (w->kind) {
    case FR_FEED_PAGE_ITEM:
        snprintf(item, sizeof item, "Q%lld", (long long)w->qid);
        CHECK_EQ_INT(r->outcome, FR_ENRICH_RESOLVED);
        CHECK_EQ_STR(r->item, item);
        break;
    case FR_FEED_PAGE_NO_ITEM:
        CHECK_EQ_INT(r->outcome, FR_ENRICH_NO_ITEM);
        CHECK_EQ_INT(r->why, FR_ENRICH_WHY_NO_PROP);
        break;
    case FR_FEED_PAGE_MISSING:
        CHECK_EQ_INT(r->outcome, FR_ENRICH_NO_ITEM);
        CHECK_EQ_INT(r->why, FR_ENRICH_WHY_MISSING);
        break;
    default:
        CHECK_EQ_INT(r->outcome, FR_ENRICH_NO_ITEM);
        CHECK_EQ_INT(r->why, FR_ENRICH_WHY_INVALID);
    }
    if (check_case_failed) {
        fprintf(stderr, "  key %s|%s: got %d %s, fixture kind %d\n", evs[r->tag].wiki,
                evs[r->tag].title, r->outcome, r->item, w->kind);
    }
    if (r->outcome != FR_ENRICH_RESOLVED || !labels_on) {
        CHECK_EQ_INT(r->label_why, FR_ENRICH_LABEL_OFF);
        return;
    }
    /* The label the fixture gives in the wiki's content language (the
     * generator's table says which), else in English. */
    int wi = fr_feed_api_wiki(evs[r->tag].wiki, strlen(evs[r->tag].wiki));
    CHECK(wi >= 0);
    const char *lang = wi >= 0 ? fr_feed_wikis[wi].code : "en";
    struct fr_buf text;
    fr_buf_init(&text, 1 << 16);
    int has = fr_feed_api_label((uint64_t)w->qid, lang, &text);
    const char *want_lang = lang;
    if (has == 0 && strcmp(lang, "en") != 0) {
        fr_buf_reset(&text);
        has = fr_feed_api_label((uint64_t)w->qid, "en", &text);
        want_lang = "en";
    }
    if (has == FR_ENOTFOUND) {
        CHECK_EQ_INT(r->label_why, FR_ENRICH_LABEL_MISSING);
        label_counts[2]++;
    } else if (has == 0) {
        CHECK_EQ_INT(r->label_why, FR_ENRICH_LABEL_NONE);
        CHECK_EQ_STR(r->label, "");
        label_counts[1]++;
    } else {
        CHECK_EQ_INT(r->label_why, FR_ENRICH_LABEL_OK);
        CHECK_EQ_STR(r->label_lang, want_lang);
        CHECK(strlen(r->label) == text.len && memcmp(r->label, text.data, text.len) == 0);
        label_counts[0]++;
        label_counts[3] += strcmp(want_lang, "en") != 0;
    }
    if (check_case_failed) {
        fprintf(stderr, "  label of %s on %s: got %d [%s] \"%s\", fixture %d [%s] \"%.*s\"\n",
                r->item, evs[r->tag].wiki, r->label_why, r->label_lang, r->label, has, want_lang,
                (int)text.len, (const char *)text.data);
    }
    fr_buf_free(&text);
}

/* Submit every event (retrying on FR_EAGAIN), poll until all are answered.
 * Returns the number of FR_EAGAIN pushbacks. */
static int64_t run_all(struct fr_enrich *e, int *seen, int64_t *outcomes)
{
    struct fr_enrich_result res[64];
    int64_t eagain = 0, got = 0;
    int i = 0;
    while (got < nevs) {
        while (i < nevs) {
            int rc =
                fr_enrich_submit(e, evs[i].wiki, evs[i].title, strlen(evs[i].title), (uint64_t)i);
            if (rc == FR_EAGAIN) {
                eagain++;
                break;
            }
            CHECK_EQ_INT(rc, FR_OK);
            i++;
        }
        int n = fr_enrich_poll(e, 200, res, 64);
        CHECK(n >= 0);
        if (n < 0) {
            break;
        }
        for (int k = 0; k < n; k++) {
            check_result(&res[k], seen);
            outcomes[res[k].outcome]++;
        }
        got += n;
        CHECK(fr_enrich_pending(e) <= 64 || eagain == 0);
    }
    return eagain;
}

static void report(const char *phase, const struct fr_enrich *e, int64_t events)
{
    struct fr_enrich_stats st;
    fr_enrich_stats_get(e, &st);
    double hits = (double)st.cache_hits, misses = (double)st.cache_misses;
    printf("%s: %lld events, %lld requests (%.1f per 1000 events), cache hit rate %.1f %%, "
           "resolved %lld, no_item %lld, failed %lld, retries %lld, 429 %lld, 5xx %lld, "
           "maxlag %lld\n",
           phase, (long long)events, (long long)st.requests,
           events ? 1000.0 * (double)st.requests / (double)events : 0.0,
           hits + misses > 0 ? 100.0 * hits / (hits + misses) : 0.0, (long long)st.resolved,
           (long long)st.no_item, (long long)st.failed, (long long)st.retries,
           (long long)st.http_429, (long long)st.http_5xx, (long long)st.maxlag);
}

static void base_cfg(struct fr_enrich_config *cfg, const struct fixture *fx)
{
    fr_enrich_config_init(cfg);
    cfg->api_url = fx->api_url;
    cfg->user_agent = "freshet-test/0 (enrich integration test; ops@freshet.invalid)";
}

static void test_clean(void)
{
    CHECK(load_events(11, 3000) > 2500);
    struct fr_feed_opts o;
    fr_feed_opts_init(&o);
    struct fixture fx;
    if (fixture_start(&fx, &o) < 0) {
        CHECK(0);
        return;
    }
    struct fr_enrich_config cfg;
    base_cfg(&cfg, &fx);
    cfg.rate_per_s = 0;
    cfg.queue_cap = 4096;
    struct fr_enrich *e;
    char err[256];
    CHECK_EQ_INT(fr_enrich_new(&cfg, NULL, &e, err, sizeof err), FR_OK);
    int *seen = calloc((size_t)nevs, sizeof *seen);
    int64_t out[4] = {0};
    run_all(e, seen, out);
    for (int i = 0; i < nevs; i++) {
        CHECK_EQ_INT(seen[i], 1);
    }
    struct fr_enrich_stats st;
    fr_enrich_stats_get(e, &st);
    report("clean, cold cache", e, nevs);
    CHECK_EQ_INT(out[FR_ENRICH_FAILED], 0);
    CHECK(out[FR_ENRICH_RESOLVED] > nevs / 2);
    CHECK(out[FR_ENRICH_NO_ITEM] > 0);
    CHECK_EQ_INT(st.requests, counter(&fx, FR_FEED_API_REQUESTS));
    CHECK_EQ_INT(st.requests, counter(&fx, FR_FEED_API_ANSWERED));
    /* batches: at most 50 titles each, and mostly full for the big wikis —
     * a wiki with d distinct titles needs ceil(d / 50) requests; allow one
     * more per wiki for keys that arrived while their title was in flight */
    int64_t titles = counter(&fx, FR_FEED_API_TITLES);
    CHECK(titles <= 50 * st.requests);
    int64_t bound = 0;
    {
        /* distinct (wiki, title) per wiki, by a plain quadratic count */
        static char done_wiki[200][FR_ENRICH_WIKI_MAX + 1];
        int nw = 0;
        for (int i = 0; i < nevs; i++) {
            int k = 0;
            while (k < nw && strcmp(done_wiki[k], evs[i].wiki) != 0) {
                k++;
            }
            if (k < nw || nw == 200) {
                continue;
            }
            snprintf(done_wiki[nw++], sizeof done_wiki[0], "%s", evs[i].wiki);
            int64_t distinct = 0;
            for (int j = i; j < nevs; j++) {
                if (strcmp(evs[j].wiki, evs[i].wiki) != 0 ||
                    evs[j].want.kind == FR_FEED_PAGE_INVALID) {
                    continue;
                }
                int dup = 0;
                for (int m = i; m < j && !dup; m++) {
                    dup = strcmp(evs[m].wiki, evs[j].wiki) == 0 &&
                          strcmp(evs[m].title, evs[j].title) == 0;
                }
                distinct += !dup;
            }
            bound += (distinct + 49) / 50 + 1;
        }
    }
    CHECK(st.requests <= bound);
    printf("clean: %lld requests for %lld titles (bound %lld)\n", (long long)st.requests,
           (long long)titles, (long long)bound);
    /* warm: the same events again come from the cache, no request */
    int64_t before = st.requests;
    memset(seen, 0, (size_t)nevs * sizeof *seen);
    memset(out, 0, sizeof out);
    fr_enrich_free(e);
    CHECK_EQ_INT(fr_enrich_new(&cfg, NULL, &e, err, sizeof err), FR_OK);
    run_all(e, seen, out); /* cold again in a new client: fills the cache */
    fr_enrich_stats_get(e, &st);
    before = st.requests;
    memset(seen, 0, (size_t)nevs * sizeof *seen);
    run_all(e, seen, out);
    fr_enrich_stats_get(e, &st);
    CHECK_EQ_INT(st.requests, before);
    for (int i = 0; i < nevs; i++) {
        CHECK_EQ_INT(seen[i], 1);
    }
    report("clean, cold + warm pass", e, 2 * (int64_t)nevs);
    free(seen);
    fr_enrich_free(e);
    fixture_stop(&fx);
}

static void test_errors_latency(void)
{
    CHECK(load_events(12, 1000) > 800);
    struct fr_feed_opts o;
    fr_feed_opts_init(&o);
    o.seed = 5;
    o.api_error_rate = 0.5;
    o.api_latency_ms = 100;
    struct fixture fx;
    if (fixture_start(&fx, &o) < 0) {
        CHECK(0);
        return;
    }
    struct fr_enrich_config cfg;
    base_cfg(&cfg, &fx);
    cfg.rate_per_s = 0;
    cfg.max_inflight = 8;
    cfg.queue_cap = 64;
    cfg.backoff_min_ms = 20;
    cfg.backoff_max_ms = 200;
    cfg.max_attempts = 4;
    struct fr_enrich *e;
    char err[256];
    CHECK_EQ_INT(fr_enrich_new(&cfg, NULL, &e, err, sizeof err), FR_OK);
    int *seen = calloc((size_t)nevs, sizeof *seen);
    int64_t out[4] = {0};
    int64_t eagain = run_all(e, seen, out);
    for (int i = 0; i < nevs; i++) {
        CHECK_EQ_INT(seen[i], 1); /* none lost, none twice */
    }
    struct fr_enrich_stats st;
    fr_enrich_stats_get(e, &st);
    report("503 on half, 100 ms latency", e, nevs);
    printf("  submit pushed back %lld times (queue of 64)\n", (long long)eagain);
    CHECK(eagain > 0);
    CHECK(st.http_5xx > 0);
    CHECK(st.retries > 0);
    CHECK_EQ_INT(out[1] + out[2] + out[3], nevs);
    CHECK_EQ_INT(st.http_5xx, counter(&fx, FR_FEED_API_ERR_5XX));
    CHECK_EQ_INT(st.requests, counter(&fx, FR_FEED_API_REQUESTS));
    CHECK_EQ_INT(fr_enrich_pending(e), 0);
    free(seen);
    fr_enrich_free(e);
    fixture_stop(&fx);
}

static void test_rate_limit_maxlag(void)
{
    CHECK(load_events(13, 200) > 150);
    struct fr_feed_opts o;
    fr_feed_opts_init(&o);
    o.seed = 9;
    o.api_rate_limit = 10;
    o.api_429_rate = 0.1;
    o.api_maxlag_rate = 0.2;
    struct fixture fx;
    if (fixture_start(&fx, &o) < 0) {
        CHECK(0);
        return;
    }
    struct fr_enrich_config cfg;
    base_cfg(&cfg, &fx);
    cfg.rate_per_s = 100;
    cfg.max_attempts = 8;
    cfg.backoff_min_ms = 20;
    cfg.backoff_max_ms = 500;
    struct fr_enrich *e;
    char err[256];
    CHECK_EQ_INT(fr_enrich_new(&cfg, NULL, &e, err, sizeof err), FR_OK);
    int *seen = calloc((size_t)nevs, sizeof *seen);
    int64_t out[4] = {0};
    run_all(e, seen, out);
    for (int i = 0; i < nevs; i++) {
        CHECK_EQ_INT(seen[i], 1);
    }
    struct fr_enrich_stats st;
    fr_enrich_stats_get(e, &st);
    report("rate limit 10/s + 429 + maxlag", e, nevs);
    CHECK(st.http_429 > 0);
    CHECK(st.maxlag > 0);
    CHECK_EQ_INT(st.http_429,
                 counter(&fx, FR_FEED_API_ERR_429) + counter(&fx, FR_FEED_API_RATE_LIMITED));
    CHECK_EQ_INT(st.maxlag, counter(&fx, FR_FEED_API_MAXLAG));
    free(seen);
    fr_enrich_free(e);
    fixture_stop(&fx);
}

static void test_labels(void)
{
    CHECK(load_events(14, 2000) > 1600);
    labels_on = 1;
    struct fr_feed_opts o;
    fr_feed_opts_init(&o);
    struct fixture fx;
    if (fixture_start(&fx, &o) < 0) {
        CHECK(0);
        return;
    }
    struct fr_enrich_config cfg;
    base_cfg(&cfg, &fx);
    cfg.labels = 1;
    cfg.rate_per_s = 0;
    cfg.queue_cap = 4096;
    struct fr_enrich *e;
    char err[256];
    CHECK_EQ_INT(fr_enrich_new(&cfg, NULL, &e, err, sizeof err), FR_OK);
    int *seen = calloc((size_t)nevs, sizeof *seen);
    int64_t out[4] = {0};
    memset(label_counts, 0, sizeof label_counts);
    run_all(e, seen, out);
    for (int i = 0; i < nevs; i++) {
        CHECK_EQ_INT(seen[i], 1);
    }
    struct fr_enrich_stats st;
    fr_enrich_stats_get(e, &st);
    report("labels, clean", e, nevs);
    printf("  labels: %lld found (%lld not in English), %lld none, %lld items missing; "
           "%lld label requests, fixture served %lld labels for %lld items\n",
           (long long)label_counts[0], (long long)label_counts[3], (long long)label_counts[1],
           (long long)label_counts[2], (long long)st.label_requests,
           (long long)counter(&fx, FR_FEED_API_LABELS),
           (long long)counter(&fx, FR_FEED_API_ENTITIES));
    CHECK_EQ_INT(out[FR_ENRICH_FAILED], 0);
    CHECK(label_counts[0] > 0 && label_counts[1] > 0 && label_counts[3] > 0);
    CHECK_EQ_INT(label_counts[0] + label_counts[1] + label_counts[2], out[FR_ENRICH_RESOLVED]);
    CHECK(st.label_requests > 0);
    CHECK_EQ_INT(st.requests, counter(&fx, FR_FEED_API_ANSWERED));
    CHECK_EQ_INT(counter(&fx, FR_FEED_API_BAD_REQUEST), 0);
    /* ids per request: at most 50 */
    CHECK(counter(&fx, FR_FEED_API_ENTITIES) <= 50 * st.label_requests);
    /* warm: labels come from the cache too */
    int64_t before = st.requests;
    memset(seen, 0, (size_t)nevs * sizeof *seen);
    run_all(e, seen, out);
    fr_enrich_stats_get(e, &st);
    CHECK_EQ_INT(st.requests, before);
    fr_enrich_free(e);
    fixture_stop(&fx);

    /* faults: 503s, 429s, maxlag and latency on item and label requests */
    CHECK(load_events(15, 600) > 450);
    fr_feed_opts_init(&o);
    o.seed = 21;
    o.api_error_rate = 0.3;
    o.api_429_rate = 0.1;
    o.api_maxlag_rate = 0.1;
    o.api_latency_ms = 30;
    if (fixture_start(&fx, &o) < 0) {
        CHECK(0);
        free(seen);
        return;
    }
    cfg.api_url = fx.api_url;
    cfg.max_inflight = 8;
    cfg.queue_cap = 64;
    cfg.backoff_min_ms = 20;
    cfg.backoff_max_ms = 200;
    cfg.max_attempts = 3;
    CHECK_EQ_INT(fr_enrich_new(&cfg, NULL, &e, err, sizeof err), FR_OK);
    free(seen);
    seen = calloc((size_t)nevs, sizeof *seen);
    memset(out, 0, sizeof out);
    memset(label_counts, 0, sizeof label_counts);
    int64_t eagain = run_all(e, seen, out);
    for (int i = 0; i < nevs; i++) {
        CHECK_EQ_INT(seen[i], 1); /* none lost, none twice */
    }
    fr_enrich_stats_get(e, &st);
    report("labels, 503 30 % + 429 10 % + maxlag 10 % + 30 ms", e, nevs);
    printf("  labels: %lld found, %lld none, %lld missing; submit pushed back %lld times\n",
           (long long)label_counts[0], (long long)label_counts[1], (long long)label_counts[2],
           (long long)eagain);
    CHECK_EQ_INT(out[1] + out[2] + out[3], nevs);
    CHECK(st.http_5xx > 0 && st.http_429 > 0 && st.maxlag > 0 && st.retries > 0);
    CHECK(label_counts[0] > 0);
    CHECK_EQ_INT(label_counts[0] + label_counts[1] + label_counts[2], out[FR_ENRICH_RESOLVED]);
    CHECK_EQ_INT(st.requests, counter(&fx, FR_FEED_API_REQUESTS));
    CHECK_EQ_INT(fr_enrich_pending(e), 0);
    labels_on = 0;
    free(seen);
    fr_enrich_free(e);
    fixture_stop(&fx);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    RUN(test_clean);
    RUN(test_errors_latency);
    RUN(test_rate_limit_maxlag);
    RUN(test_labels);
    free(evs);
    return check_report();
}
