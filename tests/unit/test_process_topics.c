/*
 * test_process_topics.c — gold_top_topics (src/process/topics.c): ranks and
 * their tie-breakers, distinct wikis and the top 3 wikis per item on a
 * hand-built window; a model test against a plain recomputation of every
 * window from the raw edits (random edits, frontiers and save/load cuts);
 * the frontier rule (nothing settles past it, a frontier behind is a no-op);
 * caps; the provisional view; hostile re-checksummed blobs.
 */
#include "check.h"

#include "core/buf.h"
#include "core/crc32c.h"
#include "core/err.h"
#include "process/process.h"

#define MIN INT64_C(60000000)
#define T0 (INT64_C(29000000) * MIN) /* a minute boundary in 2025 */

static char got[1 << 20];
static size_t got_len;

/* "<start minute - T0> #rank Qitem edits wikis top" */
static int on_row(void *arg, const struct fr_topic_row *r)
{
    (void)arg;
    got_len += (size_t)snprintf(got + got_len, sizeof got - got_len, "%lld #%u Q%llu %llu w%u",
                                (long long)((r->window_start_us - T0) / MIN), r->rank,
                                (unsigned long long)r->item, (unsigned long long)r->edits,
                                r->wikis);
    for (uint32_t i = 0; i < r->n_top; i++) {
        got_len += (size_t)snprintf(got + got_len, sizeof got - got_len, "%s%.*s:%llu",
                                    i ? "," : " ", (int)r->top[i].wiki.len, r->top[i].wiki.s,
                                    (unsigned long long)r->top[i].edits);
    }
    got_len += (size_t)snprintf(got + got_len, sizeof got - got_len, "\n");
    return 0;
}

static struct fr_topics *mk(uint64_t max_entries, uint64_t max_wikis)
{
    struct fr_topics_opts o = {max_entries, max_wikis};
    struct fr_topics *t = NULL;
    CHECK_EQ_INT(fr_topics_create(&o, &t), FR_OK);
    return t;
}

static void add(struct fr_topics *t, int64_t minute, uint64_t item, const char *wiki, int n)
{
    for (int i = 0; i < n; i++) {
        CHECK_EQ_INT(
            fr_topics_add(t, T0 + minute * MIN + 1000 * i, item, wiki, strlen(wiki), NULL, 0),
            FR_OK);
    }
}

static void test_ranks_and_wikis(void)
{
    struct fr_topics *t = mk(1000, 100);
    /* Q42: 3 on enwiki, 2 on frwiki, 2 on dewiki, 1 on plwiki -> 8, four wikis,
     * top: enwiki:3, then dewiki:2 before frwiki:2 (name order). */
    add(t, 0, 42, "enwiki", 3);
    add(t, 1, 42, "frwiki", 2);
    add(t, 2, 42, "dewiki", 2);
    add(t, 9, 42, "plwiki", 1);
    /* Q7 and Q5 tie at 8 with Q42: item number ascending. */
    add(t, 3, 7, "enwiki", 8);
    add(t, 4, 5, "jawiki", 8);
    /* Q9: 1 edit, outside window 0 (minute 10). */
    add(t, 10, 9, "enwiki", 1);
    got_len = 0;
    /* Frontier at minute 10: only window 0 ([0, 10)) settles... and the
     * windows starting before it (-9..-1), which hold the same panes. */
    CHECK_EQ_INT(fr_topics_advance(t, T0 + 10 * MIN, on_row, NULL), FR_OK);
    got[got_len] = 0;
    CHECK(strstr(got, "0 #1 Q5 8 w1 jawiki:8\n0 #2 Q7 8 w1 enwiki:8\n"
                      "0 #3 Q42 8 w4 enwiki:3,dewiki:2,frwiki:2\n") != NULL);
    CHECK(strncmp(got, "-9 #1 Q42 3 w1 enwiki:3\n", 24) == 0);
    CHECK(strstr(got, "Q9") == NULL);
    CHECK(strstr(got, "\n1 #") == NULL);
    CHECK_EQ_INT(fr_topics_settled(t), T0 + 10 * MIN);
    /* A frontier behind does nothing; the next minute settles window 1. */
    got_len = 0;
    CHECK_EQ_INT(fr_topics_advance(t, T0 + 5 * MIN, on_row, NULL), FR_OK);
    CHECK_EQ_INT(got_len, 0);
    CHECK_EQ_INT(fr_topics_advance(t, T0 + 11 * MIN + 59 * 1000000, on_row, NULL), FR_OK);
    got[got_len] = 0;
    CHECK(strncmp(got, "1 #1 Q5 8 w1 jawiki:8\n1 #2 Q7 8 w1 enwiki:8\n"
                       "1 #3 Q42 5 w3 dewiki:2,frwiki:2,plwiki:1\n1 #4 Q9 1 w1 enwiki:1\n",
                  strlen("1 #1 Q5 8 w1 jawiki:8\n1 #2 Q7 8 w1 enwiki:8\n"
                         "1 #3 Q42 5 w3 dewiki:2,frwiki:2,plwiki:1\n1 #4 Q9 1 w1 enwiki:1\n")) ==
          0);
    /* An edit for a settled pane is dropped and counted. */
    add(t, 1, 42, "enwiki", 1);
    struct fr_topics_stats st;
    fr_topics_stats(t, &st);
    CHECK_EQ_INT(st.dropped_closed, 1);
    fr_topics_destroy(t);
}

static void test_top20_and_caps(void)
{
    struct fr_topics *t = mk(1000, 100);
    for (uint64_t q = 1; q <= 25; q++) {
        add(t, 0, q, "enwiki", (int)q);
    }
    struct fr_topic_row rows[FR_TOP_N];
    uint32_t n = 0;
    CHECK_EQ_INT(fr_topics_view(t, rows, &n), FR_OK);
    CHECK_EQ_INT(n, 20);
    CHECK_EQ_INT(rows[0].item, 25);
    CHECK_EQ_INT(rows[19].item, 6);
    CHECK_EQ_INT(rows[0].window_start_us, T0 - 9 * MIN);
    fr_topics_destroy(t);

    /* Entry cap 3: a fourth (item, wiki) in a pane is refused; known pairs
     * keep counting. Wiki cap 2: a third wiki is refused. */
    t = mk(3, 2);
    add(t, 0, 1, "a", 1);
    add(t, 0, 1, "b", 1);
    add(t, 0, 1, "c", 1); /* wiki cap */
    add(t, 0, 2, "a", 1);
    add(t, 0, 3, "a", 1); /* entry cap */
    add(t, 0, 1, "a", 5);
    struct fr_topics_stats st;
    fr_topics_stats(t, &st);
    CHECK_EQ_INT(st.entries, 3);
    CHECK_EQ_INT(st.wikis, 2);
    CHECK_EQ_INT(st.dropped_keys, 2);
    got_len = 0;
    CHECK_EQ_INT(fr_topics_advance(t, T0 + 10 * MIN, on_row, NULL), FR_OK);
    got[got_len] = 0;
    CHECK(strstr(got, "0 #1 Q1 7 w2 a:6,b:1\n0 #2 Q2 1 w1 a:1\n") != NULL);
    CHECK_EQ_INT(fr_topics_add(t, T0, 1, "x", FR_PROC_WIKI_MAX + 1, NULL, 0), FR_EINVAL);
    fr_topics_destroy(t);
}

/* ------------------------------------------------------------- the model */

struct edit {
    int64_t minute;
    uint64_t item;
    int wiki;
};

static const char *const wikis[] = {"enwiki", "frwiki", "plwiki", "dewiki", "jawiki"};

/* Every window [s, s + 10) with s + 10 <= settled_min that holds an edit,
 * recomputed from the edits alone. */
static size_t model(const struct edit *e, size_t n, int64_t settled_min, char *out, size_t cap)
{
    size_t len = 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        lo = e[i].minute < lo ? e[i].minute : lo;
        hi = e[i].minute > hi ? e[i].minute : hi;
    }
    for (int64_t s = lo - 9; n && s <= hi && s + 10 <= settled_min; s++) {
        uint64_t cnt[64][5];
        memset(cnt, 0, sizeof cnt);
        for (size_t i = 0; i < n; i++) {
            if (e[i].minute >= s && e[i].minute < s + 10) {
                cnt[e[i].item][e[i].wiki]++;
            }
        }
        int used[64] = {0};
        for (uint32_t rank = 1; rank <= FR_TOP_N; rank++) {
            int best = -1;
            uint64_t bt = 0;
            for (int q = 1; q < 64; q++) {
                uint64_t tot = 0;
                for (int w = 0; w < 5; w++) {
                    tot += cnt[q][w];
                }
                if (!used[q] && tot > bt) { /* strict: the smaller item wins a tie */
                    best = q;
                    bt = tot;
                }
            }
            if (best < 0) {
                break;
            }
            used[best] = 1;
            int nw = 0, tw[5], ntop = 0;
            for (int w = 0; w < 5; w++) {
                nw += cnt[best][w] > 0;
            }
            /* top 3 wikis: edits desc, name asc */
            int taken[5] = {0};
            for (int k = 0; k < 3; k++) {
                int bw = -1;
                for (int w = 0; w < 5; w++) {
                    if (taken[w] || !cnt[best][w]) {
                        continue;
                    }
                    if (bw < 0 || cnt[best][w] > cnt[best][bw] ||
                        (cnt[best][w] == cnt[best][bw] && strcmp(wikis[w], wikis[bw]) < 0)) {
                        bw = w;
                    }
                }
                if (bw < 0) {
                    break;
                }
                taken[bw] = 1;
                tw[ntop++] = bw;
            }
            len += (size_t)snprintf(out + len, cap - len, "%lld #%u Q%d %llu w%d", (long long)s,
                                    rank, best, (unsigned long long)bt, nw);
            for (int k = 0; k < ntop; k++) {
                len += (size_t)snprintf(out + len, cap - len, "%s%s:%llu", k ? "," : " ",
                                        wikis[tw[k]], (unsigned long long)cnt[best][tw[k]]);
            }
            len += (size_t)snprintf(out + len, cap - len, "\n");
        }
    }
    return len;
}

static char want[1 << 20];

static void test_model(void)
{
    uint64_t seed = 12345;
    for (int round = 0; round < 40; round++) {
        struct fr_topics *t = mk(100000, 100);
        struct edit edits[600];
        size_t n = 0;
        int64_t frontier = 0; /* minutes */
        got_len = 0;
        for (int step = 0; step < 600; step++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            uint64_t r = seed >> 33;
            if (r % 7 == 0) {
                frontier += (int64_t)(r % 3);
                CHECK_EQ_INT(fr_topics_advance(t, T0 + frontier * MIN, on_row, NULL), FR_OK);
                continue;
            }
            if (r % 29 == 0) { /* a checkpoint cut: save, load into a fresh one */
                struct fr_buf b;
                fr_buf_init(&b, 1 << 24);
                CHECK_EQ_INT(fr_topics_save(t, &b), FR_OK);
                struct fr_topics *u = mk(100000, 100);
                CHECK_EQ_INT(fr_topics_load(u, b.data, b.len), FR_OK);
                struct fr_buf c;
                fr_buf_init(&c, 1 << 24);
                CHECK_EQ_INT(fr_topics_save(u, &c), FR_OK);
                CHECK(b.len == c.len && memcmp(b.data, c.data, b.len) == 0);
                fr_buf_free(&b);
                fr_buf_free(&c);
                fr_topics_destroy(t);
                t = u;
                continue;
            }
            /* an edit at or after the frontier (the stage's rule) */
            struct edit e = {frontier + (int64_t)(r % 5), 1 + (r >> 8) % 12, (int)((r >> 16) % 5)};
            edits[n++] = e;
            CHECK_EQ_INT(fr_topics_add(t, T0 + e.minute * MIN + (int64_t)(r % 59) * 1000000,
                                       e.item, wikis[e.wiki], strlen(wikis[e.wiki]), NULL, 0),
                         FR_OK);
        }
        frontier += 20;
        CHECK_EQ_INT(fr_topics_advance(t, T0 + frontier * MIN, on_row, NULL), FR_OK);
        size_t wl = model(edits, n, frontier, want, sizeof want);
        CHECK(wl == got_len && memcmp(want, got, wl) == 0);
        if (wl != got_len || memcmp(want, got, wl) != 0) {
            fprintf(stderr, "round %d: model %zu bytes, operator %zu bytes\n", round, wl, got_len);
            break;
        }
        struct fr_topics_stats st;
        fr_topics_stats(t, &st);
        CHECK_EQ_INT(st.panes, 0);
        CHECK_EQ_INT(st.entries, 0);
        fr_topics_destroy(t);
    }
}

static void reseal(uint8_t *b, size_t len)
{
    uint32_t crc = fr_crc32c(0, b, len - 4);
    memcpy(b + len - 4, &crc, 4);
}

static void test_hostile_blobs(void)
{
    struct fr_topics *t = mk(1000, 100);
    add(t, 0, 42, "enwiki", 3);
    add(t, 1, 43, "frwiki", 2);
    struct fr_buf b;
    fr_buf_init(&b, 1 << 20);
    CHECK_EQ_INT(fr_topics_save(t, &b), FR_OK);
    CHECK(fr_topics_load(t, b.data, b.len - 1) < 0);
    uint8_t *m = malloc(b.len);
    int loaded = 0;
    uint64_t seed = 99;
    for (int i = 0; i < 4000; i++) {
        memcpy(m, b.data, b.len);
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        size_t at = 16 + (size_t)(seed >> 33) % (b.len - 20);
        m[at] ^= (uint8_t)(1u << ((seed >> 20) % 8));
        reseal(m, b.len);
        struct fr_topics *u = mk(1000, 100);
        if (fr_topics_load(u, m, b.len) == FR_OK) {
            loaded++;
            CHECK_EQ_INT(fr_topics_advance(u, T0 + 100 * MIN, NULL, NULL), FR_OK);
        }
        fr_topics_destroy(u);
    }
    fprintf(stderr, "  4000 mutated topics blobs: %d loaded\n", loaded);
    /* A wrong CRC is refused. */
    memcpy(m, b.data, b.len);
    m[20] ^= 1;
    CHECK_EQ_INT(fr_topics_load(t, m, b.len), FR_ECRC);
    free(m);
    fr_buf_free(&b);
    fr_topics_destroy(t);
}

int main(void)
{
    RUN(test_ranks_and_wikis);
    RUN(test_top20_and_caps);
    RUN(test_model);
    RUN(test_hostile_blobs);
    return check_report();
}
