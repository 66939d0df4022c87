/*
 * test_enrich.c — unit tests of the enrichment client's parts: the token
 * bucket and backoff on a fake clock, the LRU cache against a plain model
 * over random keys (entries and bytes caps), the batcher, the API answer
 * parser (good, error and malformed answers), title normalisation, and the
 * client's local paths (invalid titles, a full queue, transport failures
 * ending in FAILED after max_attempts on a fake clock).
 */
#include "check.h"

#include "conf/conf.h"
#include "core/err.h"
#include "enrich/enrich_int.h"

#include <stdint.h>

/* ---- fake clock ------------------------------------------------------- */

struct fake_clock {
    int64_t now;
    int64_t slept;
};

static int64_t fake_now(void *ctx)
{
    return ((struct fake_clock *)ctx)->now;
}

static void fake_sleep(void *ctx, int64_t ms)
{
    struct fake_clock *c = ctx;
    c->now += ms;
    c->slept += ms;
}

/* ---- token bucket ------------------------------------------------------ */

static void test_bucket_basics(void)
{
    struct fr_enrich_bucket b;
    fr_enrich_bucket_init(&b, 10, 10, 1000);
    for (int i = 0; i < 10; i++) {
        CHECK_EQ_INT(fr_enrich_bucket_take(&b, 1000), 0);
    }
    CHECK_EQ_INT(fr_enrich_bucket_take(&b, 1000), 100); /* one token per 100 ms */
    CHECK_EQ_INT(fr_enrich_bucket_take(&b, 1050), 50);
    CHECK_EQ_INT(fr_enrich_bucket_take(&b, 1100), 0);
    CHECK_EQ_INT(fr_enrich_bucket_take(&b, 1100), 100);
    /* a clock going backwards adds nothing */
    CHECK(fr_enrich_bucket_take(&b, 500) > 0);
    CHECK_EQ_INT(fr_enrich_bucket_take(&b, 1200), 0);
    /* a long idle period refills to the burst, not beyond */
    int ok = 0;
    for (int i = 0; i < 100; i++) {
        ok += fr_enrich_bucket_take(&b, 1000000) == 0;
    }
    CHECK_EQ_INT(ok, 10);
    /* rate 0: unlimited */
    fr_enrich_bucket_init(&b, 0, 1, 0);
    for (int i = 0; i < 1000; i++) {
        CHECK_EQ_INT(fr_enrich_bucket_take(&b, 0), 0);
    }
}

/* Over a simulated 20 s with a request attempted every ms, the bucket lets
 * through at most burst + rate * t and, when asked often, at least rate * t. */
static void test_bucket_long_run(void)
{
    const int rates[] = {1, 3, 10, 50, 400};
    for (size_t r = 0; r < sizeof rates / sizeof rates[0]; r++) {
        struct fr_enrich_bucket b;
        fr_enrich_bucket_init(&b, rates[r], rates[r], 0);
        int64_t taken = 0;
        for (int64_t t = 0; t <= 20000; t++) {
            int64_t w = fr_enrich_bucket_take(&b, t);
            CHECK(w >= 0 && w <= 1000);
            taken += w == 0;
        }
        CHECK(taken <= rates[r] + rates[r] * 20);
        CHECK(taken >= rates[r] * 20);
    }
    /* Following the returned wait exactly gives one take per wait. */
    struct fr_enrich_bucket b;
    fr_enrich_bucket_init(&b, 4, 1, 0);
    int64_t t = 0, n = 0;
    while (t < 10000) {
        int64_t w = fr_enrich_bucket_take(&b, t);
        if (w == 0) {
            n++;
        } else {
            t += w;
        }
    }
    CHECK(n >= 40 && n <= 41);
}

static void test_backoff(void)
{
    uint64_t rng = 7;
    for (int attempt = 1; attempt <= 12; attempt++) {
        int64_t base = 500;
        for (int i = 1; i < attempt; i++) {
            base = base * 2 > 30000 ? 30000 : base * 2;
        }
        for (int i = 0; i < 200; i++) {
            int64_t d = fr_enrich_backoff_ms(attempt, 500, 30000, &rng);
            CHECK(d >= base / 2 && d <= base);
        }
    }
    /* jitter: not every delay is the same */
    int64_t first = fr_enrich_backoff_ms(3, 500, 30000, &rng), differ = 0;
    for (int i = 0; i < 50; i++) {
        differ += fr_enrich_backoff_ms(3, 500, 30000, &rng) != first;
    }
    CHECK(differ > 0);
}

/* ---- cache against a model -------------------------------------------- */

#define MODEL_MAX 256

struct model_entry {
    char wiki[32], title[64];
    struct fr_enrich_answer ans;
    int64_t used;
};

struct model {
    struct model_entry e[MODEL_MAX];
    int n;
    int64_t clock, max_entries, max_bytes, bytes;
};

static int64_t model_cost(const struct model_entry *e)
{
    return (int64_t)fr_enrich_cache_entry_bytes(strlen(e->wiki), strlen(e->title));
}

static int model_find(struct model *m, const char *wiki, const char *title)
{
    for (int i = 0; i < m->n; i++) {
        if (strcmp(m->e[i].wiki, wiki) == 0 && strcmp(m->e[i].title, title) == 0) {
            return i;
        }
    }
    return -1;
}

static void model_evict_lru(struct model *m)
{
    int lru = 0;
    for (int i = 1; i < m->n; i++) {
        lru = m->e[i].used < m->e[lru].used ? i : lru;
    }
    m->bytes -= model_cost(&m->e[lru]);
    m->e[lru] = m->e[--m->n];
}

static void model_put(struct model *m, const char *wiki, const char *title,
                      const struct fr_enrich_answer *ans)
{
    int i = model_find(m, wiki, title);
    if (i >= 0) {
        m->e[i].ans = *ans;
        m->e[i].used = ++m->clock;
        return;
    }
    struct model_entry ne;
    memset(&ne, 0, sizeof ne);
    snprintf(ne.wiki, sizeof ne.wiki, "%s", wiki);
    snprintf(ne.title, sizeof ne.title, "%s", title);
    if (m->max_entries == 0 || model_cost(&ne) > m->max_bytes) {
        return;
    }
    while (m->n > 0 && (m->n + 1 > m->max_entries || m->bytes + model_cost(&ne) > m->max_bytes)) {
        model_evict_lru(m);
    }
    ne.ans = *ans;
    ne.used = ++m->clock;
    m->e[m->n++] = ne;
    m->bytes += model_cost(&ne);
}

static uint64_t test_rng(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

static void cache_model_run(int64_t max_entries, int64_t max_bytes, uint64_t seed)
{
    struct fr_enrich_cache *c;
    CHECK_EQ_INT(fr_enrich_cache_new(max_entries, max_bytes, &c), FR_OK);
    static struct model m;
    memset(&m, 0, sizeof m);
    m.max_entries = max_entries;
    m.max_bytes = max_bytes;
    uint64_t s = seed;
    static const char *const wikis[] = {"enwiki", "frwiki", "pl.wikipedia.org"};
    for (int op = 0; op < 20000; op++) {
        char title[64];
        int k = (int)(test_rng(&s) % 120);
        int len = 1 + (int)((unsigned)k * 7u % 40u); /* key-dependent length */
        int wi = k % 3;
        snprintf(title, sizeof title, "T%d%.*s", k, len,
                 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
        if (test_rng(&s) % 3 == 0) {
            struct fr_enrich_answer ans = {.outcome = FR_ENRICH_RESOLVED, .why = FR_ENRICH_WHY_NONE};
            snprintf(ans.item, sizeof ans.item, "Q%d", (int)(test_rng(&s) % 100000));
            if (test_rng(&s) % 4 == 0) {
                ans.outcome = FR_ENRICH_NO_ITEM;
                ans.why = FR_ENRICH_WHY_MISSING;
                ans.item[0] = 0;
            }
            fr_enrich_cache_put(c, wikis[wi], title, &ans);
            model_put(&m, wikis[wi], title, &ans);
        } else {
            struct fr_enrich_answer got;
            int hit = fr_enrich_cache_get(c, wikis[wi], title, &got);
            int mi = model_find(&m, wikis[wi], title);
            CHECK_EQ_INT(hit, mi >= 0);
            if (hit && mi >= 0) {
                m.e[mi].used = ++m.clock;
                CHECK_EQ_INT(got.outcome, m.e[mi].ans.outcome);
                CHECK_EQ_STR(got.item, m.e[mi].ans.item);
            }
        }
        CHECK_EQ_INT(fr_enrich_cache_entries(c), m.n);
        CHECK_EQ_INT(fr_enrich_cache_bytes(c), m.bytes);
        CHECK(fr_enrich_cache_entries(c) <= max_entries);
        CHECK(fr_enrich_cache_bytes(c) <= max_bytes);
        if (check_case_failed) {
            break;
        }
    }
    fr_enrich_cache_free(c);
}

static void test_cache_model(void)
{
    cache_model_run(10, 1 << 20, 1);   /* the entries cap binds */
    cache_model_run(200, 3000, 2);     /* the bytes cap binds */
    cache_model_run(40, 4000, 3);      /* both */
    cache_model_run(0, 1 << 20, 4);    /* disabled */
    cache_model_run(1000, 1 << 20, 5); /* nothing evicted */
}

static void test_cache_too_big(void)
{
    struct fr_enrich_cache *c;
    CHECK_EQ_INT(fr_enrich_cache_new(10, 60, &c), FR_OK);
    struct fr_enrich_answer ans = {.outcome = FR_ENRICH_RESOLVED, .why = FR_ENRICH_WHY_NONE, .item = "Q1"};
    CHECK_EQ_INT(fr_enrich_cache_put(c, "enwiki", "A title far too long for sixty bytes", &ans),
                 FR_ETOOBIG);
    CHECK_EQ_INT(fr_enrich_cache_entries(c), 0);
    fr_enrich_cache_free(c);
    fr_enrich_cache_free(NULL);
}

/* ---- batching ---------------------------------------------------------- */

static void test_batch_pick(void)
{
    static char titles[200][16];
    struct fr_enrich_cand cand[200];
    size_t out[400];
    int ntitles;
    int64_t wake;
    /* 120 keys of enwiki interleaved with 30 of frwiki: the first batch is
     * enwiki's first 50 titles. */
    size_t n = 0;
    for (int i = 0; i < 150; i++) {
        snprintf(titles[i], sizeof titles[i], "T%d", i);
        cand[n++] = (struct fr_enrich_cand){i % 5 == 4 ? "frwiki" : "enwiki", titles[i], 0};
    }
    size_t k = fr_enrich_batch_pick(cand, n, 10, 50, 200, out, &ntitles, &wake);
    CHECK_EQ_INT(k, 50);
    CHECK_EQ_INT(ntitles, 50);
    CHECK_EQ_INT(wake, INT64_MAX);
    for (size_t i = 0; i < k; i++) {
        CHECK_EQ_STR(cand[out[i]].wiki, "enwiki");
    }
    CHECK_EQ_INT(out[0], 0);
    /* the first key decides the wiki */
    cand[0].wiki = "frwiki";
    k = fr_enrich_batch_pick(cand, n, 10, 50, 200, out, &ntitles, &wake);
    CHECK_EQ_INT(k, 31);
    for (size_t i = 0; i < k; i++) {
        CHECK_EQ_STR(cand[out[i]].wiki, "frwiki");
    }
    /* duplicates ride along without counting; a smaller batch size */
    n = 0;
    for (int i = 0; i < 20; i++) {
        cand[n++] = (struct fr_enrich_cand){"enwiki", titles[i % 4], 0};
    }
    k = fr_enrich_batch_pick(cand, n, 10, 3, 200, out, &ntitles, &wake);
    CHECK_EQ_INT(ntitles, 3);
    CHECK_EQ_INT(k, 15); /* titles 0..2, five keys each */
    /* max_keys caps riders */
    k = fr_enrich_batch_pick(cand, n, 10, 50, 7, out, &ntitles, &wake);
    CHECK_EQ_INT(k, 7);
    /* keys not ready yet are skipped and give the wake time */
    cand[0].ready_ms = 500;
    cand[1].ready_ms = 300;
    k = fr_enrich_batch_pick(cand, 2, 10, 50, 200, out, &ntitles, &wake);
    CHECK_EQ_INT(k, 0);
    CHECK_EQ_INT(wake, 300);
    k = fr_enrich_batch_pick(cand, 3, 10, 50, 200, out, &ntitles, &wake);
    CHECK_EQ_INT(k, 1);
    CHECK_EQ_INT(out[0], 2);
    k = fr_enrich_batch_pick(cand, 0, 10, 50, 200, out, &ntitles, &wake);
    CHECK_EQ_INT(k, 0);
}

/* ---- parsing ------------------------------------------------------------ */

static struct fr_enrich_reply reply;

static int parse_s(const char *s)
{
    return fr_enrich_parse(s, strlen(s), &reply);
}

static const char good[] =
    "{\"batchcomplete\":true,\"query\":{\"normalized\":[{\"fromencoded\":false,"
    "\"from\":\"marie_curie\",\"to\":\"Marie curie\"},{\"fromencoded\":false,\"from\":"
    "\"talk:x\",\"to\":\"Talk:X\"}],\"pages\":[{\"pageid\":30740761,\"ns\":0,\"title\":"
    "\"Marie curie\",\"pageprops\":{\"wikibase_item\":\"Q18216394\"}},{\"pageid\":3,\"ns\":1,"
    "\"title\":\"Talk:X\"},{\"ns\":0,\"title\":\"Gone \\u00e9\",\"missing\":true},{\"title\":"
    "\"A<b\",\"invalidreason\":\"The requested page title contains invalid characters.\","
    "\"invalid\":true}]}}";

static void test_parse_good(void)
{
    CHECK_EQ_INT(parse_s(good), FR_OK);
    CHECK_EQ_INT(reply.nnorm, 2);
    CHECK_EQ_INT(reply.npages, 4);
    const struct fr_enrich_reply_page *p = fr_enrich_reply_find(&reply, "marie_curie");
    CHECK(p && strcmp(p->item, "Q18216394") == 0 && !p->missing && !p->invalid);
    p = fr_enrich_reply_find(&reply, "Marie curie");
    CHECK(p && strcmp(p->item, "Q18216394") == 0);
    p = fr_enrich_reply_find(&reply, "talk:x");
    CHECK(p && p->item[0] == 0 && !p->missing);
    p = fr_enrich_reply_find(&reply, "Gone \xc3\xa9");
    CHECK(p && p->missing);
    p = fr_enrich_reply_find(&reply, "A<b");
    CHECK(p && p->invalid);
    CHECK(fr_enrich_reply_find(&reply, "Not asked") == NULL);
    CHECK_EQ_INT(parse_s("{\"batchcomplete\":true}"), FR_OK);
    CHECK_EQ_INT(reply.npages, 0);
    CHECK_EQ_INT(parse_s(" {\"batchcomplete\":true,\"query\":{\"pages\":[]}} \n"), FR_OK);
}

static void test_parse_errors(void)
{
    CHECK_EQ_INT(parse_s("{\"error\":{\"code\":\"maxlag\",\"info\":\"Waiting for 10.64.0.1: 5.5 "
                         "seconds lagged.\",\"host\":\"10.64.0.1\",\"lag\":5.5,\"type\":\"db\"},"
                         "\"servedby\":\"mw1\"}"),
                 FR_EMAXLAG);
    CHECK_EQ_INT(parse_s("{\"error\":{\"code\":\"badvalue\",\"info\":\"x\"}}"), FR_EAPI);
    CHECK_EQ_STR(reply.errcode, "badvalue");
    CHECK_EQ_INT(parse_s("{\"error\":{\"info\":\"no code\"}}"), FR_EJSON);
}

static void test_parse_malformed(void)
{
    static const char *const bad[] = {
        "",
        "<!DOCTYPE html><title>Wikimedia Error</title>",
        "null",
        "[]",
        "{}",
        "{\"batchcomplete\":true,\"query\":{\"pages\":{\"736\":{\"title\":\"A\"}}}}", /* v1 */
        "{\"query\":{\"pages\":[{\"ns\":0}]}}",                                       /* no title */
        "{\"query\":{\"pages\":[{\"title\":5}]}}",
        "{\"query\":{\"pages\":[{\"title\":\"A\",\"pageprops\":{\"wikibase_item\":\"42\"}}]}}",
        "{\"query\":{\"pages\":[{\"title\":\"A\",\"pageprops\":{\"wikibase_item\":\"Q4x\"}}]}}",
        "{\"query\":{\"pages\":[{\"title\":\"A\",\"pageprops\":[]}]}}",
        "{\"query\":{\"normalized\":{},\"pages\":[]}}",
        "{\"query\":{\"normalized\":[{\"from\":\"a\"}],\"pages\":[]}}",
        "{\"query\":[]}",
        "{\"query\":{}}",
        "{\"query\":{\"pages\":[{\"title\":\"A\"}]}} trailing",
        "{\"query\":{\"pages\":[{\"title\":\"\\ud800\"}]}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = parse_s(bad[i]);
        if (rc != FR_EJSON) {
            fprintf(stderr, "  accepted: %s (%d)\n", bad[i], rc);
        }
        CHECK_EQ_INT(rc, FR_EJSON);
    }
    /* every proper prefix of a good answer is malformed */
    for (size_t n = 0; n < strlen(good); n++) {
        CHECK_EQ_INT(fr_enrich_parse(good, n, &reply), FR_EJSON);
    }
    /* more pages than the parser keeps */
    static char many[16384];
    size_t at = (size_t)snprintf(many, sizeof many, "{\"query\":{\"pages\":[");
    for (int i = 0; i < FR_ENRICH_REPLY_MAX + 1; i++) {
        at +=
            (size_t)snprintf(many + at, sizeof many - at, "%s{\"title\":\"P%d\"}", i ? "," : "", i);
    }
    snprintf(many + at, sizeof many - at, "]}}");
    CHECK_EQ_INT(parse_s(many), FR_EJSON);
}

/* ---- normalisation ------------------------------------------------------ */

static void norm_case(const char *wiki, const char *in, const char *want)
{
    char out[FR_ENRICH_TITLE_MAX + 1];
    int n = fr_enrich_norm_title(wiki, in, strlen(in), out);
    if (!want) {
        CHECK_EQ_INT(n, FR_EINVAL);
        return;
    }
    CHECK_EQ_INT(n, strlen(want));
    if (n >= 0) {
        CHECK_EQ_STR(out, want);
    }
}

static void test_norm(void)
{
    norm_case("enwiki", "marie_curie", "Marie curie");
    norm_case("enwiki", "  Marie__Curie  ", "Marie Curie");
    norm_case("en.wikipedia.org", "_a_ _b_", "A b");
    norm_case("enwiki", ":foo", "Foo");
    norm_case("enwiki",
              "\xc3\xa9"
              "cole",
              "\xc3\x89"
              "cole"); /* é -> É */
    norm_case("plwiki",
              "\xc5\x82\xc3\xb3"
              "d\xc5\xba",
              "\xc5\x81\xc3\xb3"
              "d\xc5\xba");                                                      /* ł -> Ł */
    norm_case("ruwiki", "\xd0\xbc\xd0\xb8\xd1\x80", "\xd0\x9c\xd0\xb8\xd1\x80"); /* мир -> Мир */
    norm_case("elwiki", "\xce\xb1", "\xce\x91");
    norm_case("jawiki", "\xe6\x97\xa5\xe6\x9c\xac", "\xe6\x97\xa5\xe6\x9c\xac"); /* no case */
    norm_case("enwiktionary", "word", "word");
    norm_case("fr.wiktionary.org", "mot_x", "mot x");
    norm_case("enwiki", "", NULL);
    norm_case("enwiki", "   ", NULL);
    norm_case("enwiki", "a|b", NULL);
    norm_case("enwiki", "a<b", NULL);
    norm_case("enwiki", "a[b]", NULL);
    norm_case("enwiki", "a{b}", NULL);
    norm_case("enwiki", "a#b", NULL);
    norm_case("enwiki", "a\tb", NULL);
    norm_case("enwiki", "\xff", NULL);
    norm_case("enwiki", "\xc0\x80", NULL);     /* overlong */
    norm_case("enwiki", "\xed\xa0\x80", NULL); /* surrogate */
    char longt[300];
    memset(longt, 'a', 255);
    longt[255] = 0;
    char want[300];
    memcpy(want, longt, 256);
    want[0] = 'A';
    norm_case("enwiki", longt, want);
    longt[255] = 'a';
    longt[256] = 0;
    norm_case("enwiki", longt, NULL);
    CHECK(fr_enrich_norm_is_wiktionary("frwiktionary"));
    CHECK(!fr_enrich_norm_is_wiktionary("frwiki"));
    /* the simple mapping leaves letters without a case alone */
    CHECK_EQ_INT(fr_enrich_norm_upper(0x5D0), 0x5D0);
    CHECK_EQ_INT(fr_enrich_norm_upper('A'), 'A');
    CHECK_EQ_INT(fr_enrich_norm_upper(0xF7), 0xF7);
}

/* ---- the client without a server ---------------------------------------- */

static void client_cfg(struct fr_enrich_config *cfg)
{
    fr_enrich_config_init(cfg);
    /* port 1 on loopback: nothing listens, connections are refused */
    cfg->api_url = "http://127.0.0.1:1/api/{wiki}/w/api.php";
    cfg->linger_ms = 0;
    cfg->backoff_min_ms = 100;
    cfg->backoff_max_ms = 1000;
    cfg->max_attempts = 3;
    cfg->timeout_ms = 2000;
}

static void test_client_config(void)
{
    struct fr_enrich_config cfg;
    struct fr_enrich *e = NULL;
    char err[256];
    client_cfg(&cfg);
    cfg.api_url = "http://127.0.0.1:1/w/api.php"; /* no {wiki} */
    CHECK_EQ_INT(fr_enrich_new(&cfg, NULL, &e, err, sizeof err), FR_ECONFIG);
    client_cfg(&cfg);
    cfg.batch_titles = 51;
    CHECK_EQ_INT(fr_enrich_new(&cfg, NULL, &e, err, sizeof err), FR_ECONFIG);
    client_cfg(&cfg);
    cfg.user_agent = "";
    CHECK_EQ_INT(fr_enrich_new(&cfg, NULL, &e, err, sizeof err), FR_ECONFIG);
    CHECK(e == NULL);
    fr_enrich_free(NULL);
}

/* The [enrich] defaults of the config table are the client's defaults. */
static void test_config_defaults(void)
{
    struct fr_conf conf;
    CHECK_EQ_INT(fr_conf_init(&conf), FR_OK);
    struct fr_enrich_config a, b;
    fr_enrich_config_init(&a);
    fr_enrich_config_from_conf(&conf, &b);
    CHECK_EQ_STR(a.api_url, b.api_url);
    CHECK_EQ_STR(a.user_agent, b.user_agent);
    CHECK_EQ_INT(a.rate_per_s, b.rate_per_s);
    CHECK_EQ_INT(a.batch_titles, b.batch_titles);
    CHECK_EQ_INT(a.max_inflight, b.max_inflight);
    CHECK_EQ_INT(a.linger_ms, b.linger_ms);
    CHECK_EQ_INT(a.cache_entries, b.cache_entries);
    CHECK_EQ_INT(a.cache_bytes, b.cache_bytes);
    CHECK_EQ_INT(a.queue_cap, b.queue_cap);
    CHECK_EQ_INT(a.timeout_ms, b.timeout_ms);
    CHECK_EQ_INT(a.max_attempts, b.max_attempts);
    CHECK_EQ_INT(a.backoff_min_ms, b.backoff_min_ms);
    CHECK_EQ_INT(a.backoff_max_ms, b.backoff_max_ms);
    CHECK_EQ_INT(a.maxlag_s, b.maxlag_s);
    struct fr_enrich *e;
    char err[256];
    CHECK_EQ_INT(fr_enrich_new(&b, NULL, &e, err, sizeof err), FR_OK);
    fr_enrich_free(e);
    fr_conf_free(&conf);
}

static void test_client_local(void)
{
    struct fake_clock clk = {1000, 0};
    struct fr_enrich_ops ops = {fake_now, fake_sleep, &clk};
    struct fr_enrich_config cfg;
    client_cfg(&cfg);
    cfg.queue_cap = 4;
    struct fr_enrich *e;
    char err[256];
    CHECK_EQ_INT(fr_enrich_new(&cfg, &ops, &e, err, sizeof err), FR_OK);
    CHECK_EQ_INT(fr_enrich_submit(e, "", "A", 1, 1), FR_EINVAL);
    CHECK_EQ_INT(fr_enrich_submit(e, "en wiki", "A", 1, 1), FR_EINVAL);
    /* invalid titles are answered without a request */
    CHECK_EQ_INT(fr_enrich_submit(e, "enwiki", "a|b", 3, 10), FR_OK);
    CHECK_EQ_INT(fr_enrich_submit(e, "enwiki", "", 0, 11), FR_OK);
    CHECK_EQ_INT(fr_enrich_pending(e), 2);
    /* the queue holds 4 keys, results included, then pushes back */
    CHECK_EQ_INT(fr_enrich_submit(e, "enwiki", "X", 1, 12), FR_OK);
    CHECK_EQ_INT(fr_enrich_submit(e, "enwiki", "Y", 1, 13), FR_OK);
    CHECK_EQ_INT(fr_enrich_submit(e, "enwiki", "Z", 1, 14), FR_EAGAIN);
    struct fr_enrich_result res[8];
    int n = fr_enrich_poll(e, 0, res, 8);
    CHECK_EQ_INT(n, 2);
    for (int i = 0; i < n; i++) {
        CHECK_EQ_INT(res[i].outcome, FR_ENRICH_NO_ITEM);
        CHECK_EQ_INT(res[i].why, FR_ENRICH_WHY_INVALID);
        CHECK(res[i].tag == 10 || res[i].tag == 11);
    }
    CHECK_EQ_INT(fr_enrich_pending(e), 2);
    /* X and Y: connection refused three times, backoff on the fake clock,
     * then FAILED with a reason */
    int got = 0;
    for (int i = 0; i < 200 && got < 2; i++) {
        n = fr_enrich_poll(e, 5000, res, 8);
        CHECK(n >= 0);
        for (int j = 0; j < n; j++) {
            CHECK_EQ_INT(res[j].outcome, FR_ENRICH_FAILED);
            CHECK_EQ_INT(res[j].attempts, 3);
            CHECK(res[j].err == FR_EIO || res[j].err == FR_ETIMEOUT);
            CHECK(strstr(res[j].reason, "transport") != NULL);
            CHECK(strstr(res[j].reason, "3 attempts") != NULL);
            got++;
        }
    }
    CHECK_EQ_INT(got, 2);
    CHECK(clk.slept >= 100); /* the backoff waited on the fake clock */
    struct fr_enrich_stats st;
    fr_enrich_stats_get(e, &st);
    CHECK_EQ_INT(st.invalid_local, 2);
    CHECK_EQ_INT(st.failed, 2);
    CHECK_EQ_INT(st.rejected_full, 1);
    CHECK_EQ_INT(st.requests, 3); /* X and Y share each request */
    CHECK_EQ_INT(fr_enrich_pending(e), 0);
    fr_enrich_free(e);
}

int main(void)
{
    RUN(test_bucket_basics);
    RUN(test_bucket_long_run);
    RUN(test_backoff);
    RUN(test_cache_model);
    RUN(test_cache_too_big);
    RUN(test_batch_pick);
    RUN(test_parse_good);
    RUN(test_parse_errors);
    RUN(test_parse_malformed);
    RUN(test_norm);
    RUN(test_client_config);
    RUN(test_config_defaults);
    RUN(test_client_local);
    return check_report();
}
