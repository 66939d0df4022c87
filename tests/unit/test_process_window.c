/*
 * test_process_window.c — the gold operators on hand-built rows:
 * gold_edits_per_minute (src/process/window.c: every counter, the bytes
 * rule, distinct users, emission exactly at window end, order, caps) and
 * gold_top_pages (src/process/topk.c: ranks, the three tie-breakers, the
 * 20-row limit, sliding windows from panes, skipped empty windows, caps),
 * their provisional views and save/load, including hostile re-checksummed
 * blobs; and gold_top_pages against a plain recomputation over random,
 * out-of-order rows (frozen panes, dropped rows, save/load, views).
 */
#include "check.h"

#include "core/buf.h"
#include "core/crc32c.h"
#include "core/err.h"
#include "process/process.h"

#define MIN INT64_C(60000000)
#define T0 (INT64_C(29000000) * MIN) /* a minute boundary in 2025 */

static struct fr_row mk(int64_t t, const char *wiki, enum fr_proc_type type, const char *title,
                        const char *user)
{
    struct fr_row row;
    memset(&row, 0, sizeof row);
    row.event_us = t;
    row.wiki = (struct fr_proc_str){wiki, (uint32_t)strlen(wiki)};
    row.type = type;
    if (title) {
        row.has |= FR_ROW_TITLE;
        row.title = (struct fr_proc_str){title, (uint32_t)strlen(title)};
    }
    if (user) {
        row.has |= FR_ROW_USER;
        row.user = (struct fr_proc_str){user, (uint32_t)strlen(user)};
    }
    return row;
}

static void set_len(struct fr_row *row, int has_old, int64_t old, int has_new, int64_t nw)
{
    if (has_old) {
        row->has |= FR_ROW_LENGTH_OLD;
        row->length_old = old;
    }
    if (has_new) {
        row->has |= FR_ROW_LENGTH_NEW;
        row->length_new = nw;
    }
}

/* Collected rows, as text. */
static char got[1 << 19];
static size_t got_len;

static int on_minute(void *arg, const struct fr_win_row *r)
{
    (void)arg;
    got_len += (size_t)snprintf(
        got + got_len, sizeof got - got_len,
        "%lld %.*s ev=%llu ed=%llu np=%llu bot=%llu +%llu -%llu du=%llu%s\n",
        (long long)((r->window_start_us - T0) / MIN), (int)r->wiki.len, r->wiki.s,
        (unsigned long long)r->counts.events, (unsigned long long)r->counts.edits,
        (unsigned long long)r->counts.new_pages, (unsigned long long)r->counts.bot_events,
        (unsigned long long)r->counts.bytes_added, (unsigned long long)r->counts.bytes_removed,
        (unsigned long long)r->counts.distinct_users, r->users_exact ? "" : " floor");
    return 0;
}

static int on_top(void *arg, const struct fr_top_row *r)
{
    (void)arg;
    got_len +=
        (size_t)snprintf(got + got_len, sizeof got - got_len, "%lld #%u %.*s|%.*s %llu\n",
                         (long long)((r->window_start_us - T0) / MIN), r->rank, (int)r->wiki.len,
                         r->wiki.s, (int)r->title.len, r->title.s, (unsigned long long)r->count);
    return 0;
}

static struct fr_win *win_new(uint64_t groups, uint64_t users, uint64_t text)
{
    struct fr_win_opts o = {groups, users, text};
    struct fr_win *win = NULL;
    if (fr_win_create(&o, &win) != FR_OK) {
        exit(1);
    }
    return win;
}

/* opts.map_pairs of every operator top_new makes: main runs the top-pages
 * tests with windows always merged (-1), always ranked from the map (the
 * default, 0: these windows are small), and mixed (400 pairs: about half
 * of test_top_vs_model's windows are larger). */
static int64_t top_map_pairs;

static struct fr_top *top_new(uint64_t entries, uint64_t text)
{
    struct fr_top_opts o = {entries, text, top_map_pairs};
    struct fr_top *top = NULL;
    if (fr_win_top_create(&o, &top) != FR_OK) {
        exit(1);
    }
    return top;
}

static void reseal(uint8_t *b, size_t len)
{
    uint32_t crc = fr_crc32c(0, b, len - 4);
    for (int i = 0; i < 4; i++) {
        b[len - 4 + (size_t)i] = (uint8_t)(crc >> (8 * i));
    }
}

/* ------------------------------------------------------------------------ */
/* gold_edits_per_minute                                                      */
/* ------------------------------------------------------------------------ */

static void test_minute_counts(void)
{
    struct fr_win *win = win_new(1000, 1000, 1 << 20);
    struct fr_row r;
    got_len = 0;
    /* minute 0, enwiki */
    r = mk(T0, "enwiki", FR_TYPE_EDIT, "A", "alice");
    set_len(&r, 1, 100, 1, 150); /* +50 */
    r.has |= FR_ROW_BOT;
    r.bot = 1;
    CHECK_EQ_INT(fr_win_add(win, &r), FR_OK);
    r = mk(T0 + 1, "enwiki", FR_TYPE_EDIT, "A", "bob");
    set_len(&r, 1, 100, 1, 70); /* -30 */
    CHECK_EQ_INT(fr_win_add(win, &r), FR_OK);
    r = mk(T0 + 2, "enwiki", FR_TYPE_NEW, "B", "alice");
    set_len(&r, 0, 0, 1, 40); /* missing old counts as 0: +40 */
    CHECK_EQ_INT(fr_win_add(win, &r), FR_OK);
    r = mk(T0 + 3, "enwiki", FR_TYPE_EDIT, "A", NULL); /* no user, no new length */
    set_len(&r, 1, 5, 0, 0);
    r.has |= FR_ROW_BOT; /* bot present but false */
    CHECK_EQ_INT(fr_win_add(win, &r), FR_OK);
    r = mk(T0 + 4, "enwiki", FR_TYPE_LOG, "C", "");
    set_len(&r, 0, 0, 1, 999); /* log rows never count bytes */
    CHECK_EQ_INT(fr_win_add(win, &r), FR_OK);
    r = mk(T0 + MIN - 1, "enwiki", FR_TYPE_CATEGORIZE, "D", "carol");
    CHECK_EQ_INT(fr_win_add(win, &r), FR_OK);
    /* same minute, other wikis, shorter name sorts first */
    r = mk(T0 + 5, "en", FR_TYPE_EDIT, "A", "x");
    CHECK_EQ_INT(fr_win_add(win, &r), FR_OK);
    r = mk(T0 + 5, "dewiki", FR_TYPE_EXTERNAL, NULL, "x");
    CHECK_EQ_INT(fr_win_add(win, &r), FR_OK);
    /* minute 1 */
    r = mk(T0 + MIN, "enwiki", FR_TYPE_EDIT, "A", "alice");
    CHECK_EQ_INT(fr_win_add(win, &r), FR_OK);

    /* Not yet: the window end is T0 + MIN. */
    CHECK_EQ_INT(fr_win_advance(win, T0 + MIN - 1, on_minute, NULL), FR_OK);
    CHECK_EQ_INT(got_len, 0);
    struct fr_win_stats st;
    fr_win_stats(win, &st);
    CHECK_EQ_INT(st.groups, 4);
    CHECK_EQ_INT(st.users, 7); /* alice, bob, "", carol; x; x; alice */
    CHECK_EQ_INT(fr_win_advance(win, T0 + MIN, on_minute, NULL), FR_OK);
    CHECK_EQ_STR(got, "0 dewiki ev=1 ed=0 np=0 bot=0 +0 -0 du=1\n"
                      "0 en ev=1 ed=1 np=0 bot=0 +0 -0 du=1\n"
                      "0 enwiki ev=6 ed=3 np=1 bot=1 +90 -30 du=4\n");
    /* Emitted once: a second advance emits nothing new; rows for an
     * emitted window are dropped and counted. */
    got_len = 0;
    CHECK_EQ_INT(fr_win_advance(win, T0 + MIN, on_minute, NULL), FR_OK);
    CHECK_EQ_INT(got_len, 0);
    r = mk(T0 + 7, "enwiki", FR_TYPE_EDIT, "A", "zed");
    CHECK_EQ_INT(fr_win_add(win, &r), FR_OK);
    fr_win_stats(win, &st);
    CHECK_EQ_INT(st.dropped_closed, 1);
    CHECK_EQ_INT(st.groups, 1);
    CHECK_EQ_INT(st.rows, 3);
    CHECK_EQ_INT(fr_win_advance(win, T0 + 100 * MIN, on_minute, NULL), FR_OK);
    CHECK_EQ_STR(got, "1 enwiki ev=1 ed=1 np=0 bot=0 +0 -0 du=1\n");
    fr_win_stats(win, &st);
    CHECK_EQ_INT(st.groups, 0);
    CHECK_EQ_INT(st.users, 0);
    CHECK_EQ_INT(st.text_bytes, 0);
    fr_win_destroy(win);
    fr_win_destroy(NULL);
}

/* Regression (found by fuzz_gate): a group whose only user is "" kept no
 * name arena, and saving it did pointer arithmetic on NULL. Same for a
 * top-pages pane holding only an empty wiki and title. */
static void test_empty_names(void)
{
    struct fr_win *win = win_new(10, 10, 1 << 10);
    struct fr_row r = mk(T0, "w", FR_TYPE_EDIT, "", "");
    CHECK_EQ_INT(fr_win_add(win, &r), FR_OK);
    struct fr_buf a, b;
    fr_buf_init(&a, 1 << 16);
    fr_buf_init(&b, 1 << 16);
    CHECK_EQ_INT(fr_win_save(win, &a), FR_OK);
    struct fr_win *copy = win_new(10, 10, 1 << 10);
    CHECK_EQ_INT(fr_win_load(copy, a.data, a.len), FR_OK);
    CHECK_EQ_INT(fr_win_save(copy, &b), FR_OK);
    CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
    r = mk(T0, "w", FR_TYPE_EDIT, "", "");
    CHECK_EQ_INT(fr_win_add(copy, &r), FR_OK);
    got_len = 0;
    CHECK_EQ_INT(fr_win_advance(copy, T0 + MIN, on_minute, NULL), FR_OK);
    CHECK_EQ_STR(got, "0 w ev=2 ed=2 np=0 bot=0 +0 -0 du=1\n");
    struct fr_top *top = top_new(10, 1 << 10);
    r = mk(T0, "", FR_TYPE_EDIT, "", NULL);
    CHECK_EQ_INT(fr_win_top_add(top, &r), FR_OK);
    fr_buf_reset(&a);
    CHECK_EQ_INT(fr_win_top_save(top, &a), FR_OK);
    struct fr_top *tcopy = top_new(10, 1 << 10);
    CHECK_EQ_INT(fr_win_top_load(tcopy, a.data, a.len), FR_OK);
    got_len = 0;
    CHECK_EQ_INT(fr_win_top_advance(tcopy, T0 + 10 * MIN, on_top, NULL), FR_OK);
    CHECK(strncmp(got, "-9 #1 | 1\n-8 #1 | 1\n", 20) == 0 && strstr(got, "\n0 #1 | 1\n"));
    fr_buf_free(&a);
    fr_buf_free(&b);
    fr_win_destroy(win);
    fr_win_destroy(copy);
    fr_win_top_destroy(top);
    fr_win_top_destroy(tcopy);
}

static void test_minute_extremes(void)
{
    struct fr_win *win = win_new(1000, 1000, 1 << 20);
    struct fr_row r = mk(-MIN / 2, "w", FR_TYPE_EDIT, NULL, NULL); /* 1969: floor, not trunc */
    set_len(&r, 1, INT64_MIN, 1, INT64_MAX);                       /* saturates */
    CHECK_EQ_INT(fr_win_add(win, &r), FR_OK);
    set_len(&r, 1, INT64_MAX, 1, INT64_MIN);
    CHECK_EQ_INT(fr_win_add(win, &r), FR_OK);
    CHECK_EQ_INT(fr_win_add(win, &r), FR_OK);
    got_len = 0;
    CHECK_EQ_INT(fr_win_advance(win, -1, on_minute, NULL), FR_OK);
    CHECK_EQ_INT(got_len, 0);
    CHECK_EQ_INT(fr_win_advance(win, 0, on_minute, NULL), FR_OK);
    char want[200];
    snprintf(want, sizeof want, "%lld w ev=3 ed=3 np=0 bot=0 +%llu -%llu du=0\n",
             (long long)((-MIN - T0) / MIN), (unsigned long long)INT64_MAX,
             (unsigned long long)UINT64_MAX);
    CHECK_EQ_STR(got, want);
    r = mk(INT64_MAX, "w", FR_TYPE_EDIT, NULL, NULL);
    CHECK_EQ_INT(fr_win_add(win, &r), FR_EINVAL);
    char wiki[300];
    memset(wiki, 'w', sizeof wiki);
    r = mk(T0, "w", FR_TYPE_EDIT, NULL, NULL);
    r.wiki = (struct fr_proc_str){wiki, 256};
    CHECK_EQ_INT(fr_win_add(win, &r), FR_EINVAL);
    fr_win_destroy(win);
}

static void test_minute_caps(void)
{
    /* 2 groups, 3 users, 64 bytes of text. */
    struct fr_win *win = win_new(2, 3, 300);
    struct fr_row r;
    r = mk(T0, "a", FR_TYPE_EDIT, NULL, "u1");
    fr_win_add(win, &r);
    r = mk(T0, "b", FR_TYPE_EDIT, NULL, "u1");
    fr_win_add(win, &r);
    r = mk(T0, "c", FR_TYPE_EDIT, NULL, "u1"); /* third group: refused */
    fr_win_add(win, &r);
    r = mk(T0, "a", FR_TYPE_EDIT, NULL, "u2");
    fr_win_add(win, &r);
    r = mk(T0, "a", FR_TYPE_EDIT, NULL, "u3"); /* fourth user: not kept */
    fr_win_add(win, &r);
    r = mk(T0, "a", FR_TYPE_EDIT, NULL, "u2"); /* known: still fine */
    fr_win_add(win, &r);
    struct fr_win_stats st;
    fr_win_stats(win, &st);
    CHECK_EQ_INT(st.groups, 2);
    CHECK_EQ_INT(st.users, 3);
    CHECK_EQ_INT(st.dropped_groups, 1);
    CHECK_EQ_INT(st.dropped_users, 1);
    /* Save/load keeps the caps' decisions (logical sizes, users_exact). */
    struct fr_buf a, b;
    fr_buf_init(&a, 1 << 20);
    fr_buf_init(&b, 1 << 20);
    CHECK_EQ_INT(fr_win_save(win, &a), FR_OK);
    struct fr_win *copy = win_new(2, 3, 300);
    CHECK_EQ_INT(fr_win_load(copy, a.data, a.len), FR_OK);
    CHECK_EQ_INT(fr_win_save(copy, &b), FR_OK);
    CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
    /* A state over the loader's caps does not fit. */
    struct fr_win *tiny = win_new(1, 3, 300);
    CHECK_EQ_INT(fr_win_load(tiny, a.data, a.len), FR_ETOOBIG);
    fr_win_destroy(tiny);
    got_len = 0;
    CHECK_EQ_INT(fr_win_advance(copy, T0 + MIN, on_minute, NULL), FR_OK);
    CHECK_EQ_STR(got, "0 a ev=4 ed=4 np=0 bot=0 +0 -0 du=2 floor\n"
                      "0 b ev=1 ed=1 np=0 bot=0 +0 -0 du=1\n");
    /* Every group of an open minute shows in the view. */
    static struct fr_proc_view view;
    memset(&view, 0, sizeof view);
    fr_win_view(win, &view);
    CHECK_EQ_INT(view.n_groups, 2);
    CHECK_EQ_INT(view.groups[0].counts.distinct_users, 2);
    CHECK_EQ_INT(view.groups[0].users_exact, 0);
    fr_buf_free(&a);
    fr_buf_free(&b);
    fr_win_destroy(copy);
    fr_win_destroy(win);

    /* The view truncates past FR_VIEW_MAX_GROUPS, dropping the oldest. */
    win = win_new(100000, 1000, 1 << 20);
    char name[16];
    for (int m = 0; m < 3; m++) {
        for (int w = 0; w < 300; w++) {
            snprintf(name, sizeof name, "w%03d", w);
            r = mk(T0 + m * MIN, name, FR_TYPE_EDIT, NULL, NULL);
            CHECK_EQ_INT(fr_win_add(win, &r), FR_OK);
        }
    }
    memset(&view, 0, sizeof view);
    fr_win_view(win, &view);
    CHECK_EQ_INT(view.n_groups, FR_VIEW_MAX_GROUPS);
    CHECK_EQ_INT(view.truncated, 1);
    CHECK_EQ_INT(view.groups[0].window_start_us, T0 + 2 * MIN);
    CHECK_EQ_INT(view.groups[299].window_start_us, T0 + 2 * MIN);
    CHECK_EQ_INT(view.groups[300].window_start_us, T0 + MIN);
    fr_win_destroy(win);
}

/* ------------------------------------------------------------------------ */
/* gold_top_pages                                                             */
/* ------------------------------------------------------------------------ */

static void add_n(struct fr_top *top, int64_t t, const char *wiki, const char *title, int n,
                  enum fr_proc_type type)
{
    for (int i = 0; i < n; i++) {
        struct fr_row r = mk(t, wiki, type, title, NULL);
        CHECK_EQ_INT(fr_win_top_add(top, &r), FR_OK);
    }
}

static void test_top_ranks_and_ties(void)
{
    struct fr_top *top = top_new(1000, 1 << 20);
    /* One pane (minute 9): ties on count broken by wiki, then title. */
    int64_t t = T0 + 9 * MIN;
    add_n(top, t, "enwiki", "B", 3, FR_TYPE_EDIT);
    add_n(top, t, "enwiki", "A", 3, FR_TYPE_NEW);
    add_n(top, t, "dewiki", "Z", 3, FR_TYPE_EDIT);
    add_n(top, t, "en", "Z", 3, FR_TYPE_EDIT);
    add_n(top, t, "enwiki", "AA", 3, FR_TYPE_EDIT);
    add_n(top, t, "enwiki", "", 3, FR_TYPE_EDIT);
    add_n(top, t, "zz", "top", 5, FR_TYPE_EDIT);
    add_n(top, t, "zz", "log", 9, FR_TYPE_LOG);        /* not counted */
    add_n(top, t, "zz", "cat", 9, FR_TYPE_CATEGORIZE); /* not counted */
    struct fr_row untitled = mk(t, "zz", FR_TYPE_EDIT, NULL, NULL);
    CHECK_EQ_INT(fr_win_top_add(top, &untitled), FR_OK); /* not counted */
    got_len = 0;
    /* The first window holding minute 9 starts at minute 0 and ends at 10. */
    CHECK_EQ_INT(fr_win_top_advance(top, T0 + 10 * MIN - 1, on_top, NULL), FR_OK);
    CHECK_EQ_INT(got_len, 0);
    CHECK_EQ_INT(fr_win_top_advance(top, T0 + 10 * MIN, on_top, NULL), FR_OK);
    CHECK_EQ_STR(got, "0 #1 zz|top 5\n"
                      "0 #2 dewiki|Z 3\n"
                      "0 #3 en|Z 3\n"
                      "0 #4 enwiki| 3\n"
                      "0 #5 enwiki|A 3\n"
                      "0 #6 enwiki|AA 3\n"
                      "0 #7 enwiki|B 3\n");
    /* Windows 1..9 hold the pane too; window 10 does not. */
    got_len = 0;
    CHECK_EQ_INT(fr_win_top_advance(top, T0 + 30 * MIN, on_top, NULL), FR_OK);
    int windows = 0;
    for (size_t i = 0; i < got_len; i++) {
        windows += got[i] == '#' && got[i + 1] == '1' && got[i + 2] == ' ';
    }
    CHECK_EQ_INT(windows, 9);
    CHECK(strstr(got, "\n9 #7 enwiki|B 3\n") != NULL);
    struct fr_top_stats st;
    fr_win_top_stats(top, &st);
    CHECK_EQ_INT(st.windows, 10);
    CHECK_EQ_INT(st.rows, 70);
    CHECK_EQ_INT(st.panes, 0);
    CHECK_EQ_INT(st.entries, 0);
    CHECK_EQ_INT(st.text_bytes, 0);
    fr_win_top_destroy(top);
    fr_win_top_destroy(NULL);
}

static void test_top_sliding(void)
{
    struct fr_top *top = top_new(1000, 1 << 20);
    /* 25 pages with distinct counts in minute 0, one page in minute 5, and
     * one far later (a gap of empty windows that must be skipped). */
    char title[8];
    for (int p = 0; p < 25; p++) {
        snprintf(title, sizeof title, "p%02d", p);
        add_n(top, T0 + 30 * 1000000, "w", title, p + 1, FR_TYPE_EDIT);
    }
    add_n(top, T0 + 5 * MIN, "w", "p00", 100, FR_TYPE_EDIT);
    add_n(top, T0 + 500 * MIN, "w", "late", 1, FR_TYPE_EDIT);
    got_len = 0;
    CHECK_EQ_INT(fr_win_top_advance(top, T0 + 10 * MIN, on_top, NULL), FR_OK);
    /* Window starting at -9 .. 0 all hold minute 0; the first one emitted
     * is [-9 min, 1 min), which ends <= 10 min: emitted. */
    CHECK(strncmp(got, "-9 #1 w|p24 25\n-9 #2 w|p23 24\n", 30) == 0);
    /* Only 20 rows per window. */
    CHECK(strstr(got, "-9 #20 w|p05 6\n") != NULL);
    CHECK(strstr(got, "-9 #21") == NULL);
    /* Window 0 holds minute 0 and minute 5: p00 is first with 101. */
    CHECK(strstr(got, "\n0 #1 w|p00 101\n") != NULL);
    /* Window -4 does not hold minute 5 ([-4, 6) does: minute 5 < 6). */
    CHECK(strstr(got, "\n-4 #1 w|p00 101\n") != NULL);
    CHECK(strstr(got, "\n-5 #1 w|p24 25\n") != NULL);
    struct fr_top_stats st;
    fr_win_top_stats(top, &st);
    CHECK_EQ_INT(st.windows, 10); /* starts -9 .. 0 */
    got_len = 0;
    CHECK_EQ_INT(fr_win_top_advance(top, T0 + 600 * MIN, on_top, NULL), FR_OK);
    fr_win_top_stats(top, &st);
    /* starts 1..5 (minute 5), then 491..500 (minute 500): 15 more. */
    CHECK_EQ_INT(st.windows, 25);
    CHECK(strncmp(got, "1 #1 w|p00 100\n", 15) == 0);
    CHECK(strstr(got, "\n491 #1 w|late 1\n") != NULL);
    CHECK(strstr(got, "\n500 #1 w|late 1\n") != NULL);
    CHECK_EQ_INT(st.panes, 0);
    /* A row for a settled pane is dropped and counted. */
    add_n(top, T0 + 595 * MIN, "w", "x", 1, FR_TYPE_EDIT);
    fr_win_top_stats(top, &st);
    CHECK_EQ_INT(st.dropped_closed, 1);
    add_n(top, T0 + 600 * MIN, "w", "x", 1, FR_TYPE_EDIT);
    fr_win_top_stats(top, &st);
    CHECK_EQ_INT(st.dropped_closed, 1);
    CHECK_EQ_INT(st.panes, 1);
    fr_win_top_destroy(top);
}

/* ---- gold_top_pages against a plain recomputation ---------------------- */

static uint64_t rng = 99;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

enum { MODEL_ROWS = 6000 };
struct model_row {
    int64_t t;
    char wiki[8], title[320];
    int counted;
};
static struct model_row mrows[MODEL_ROWS];

struct model_pair {
    const char *wiki, *title;
    uint64_t count;
};

static int model_rank_cmp(const void *x, const void *y)
{
    const struct model_pair *a = x, *b = y;
    if (a->count != b->count) {
        return a->count > b->count ? -1 : 1;
    }
    int c = strcmp(a->wiki, b->wiki);
    return c ? c : strcmp(a->title, b->title);
}

/* The window [s, s + 10 min) over the counted rows: every pair's count by
 * a linear scan, sorted, the first 20 printed as on_top prints them. */
static void model_window(int64_t s, size_t nrows, char *out, size_t *len, size_t cap)
{
    static struct model_pair pairs[MODEL_ROWS];
    size_t np = 0;
    for (size_t i = 0; i < nrows; i++) {
        const struct model_row *r = &mrows[i];
        if (!r->counted || r->t < s || r->t >= s + 10 * MIN) {
            continue;
        }
        size_t k = 0;
        while (k < np && (strcmp(pairs[k].wiki, r->wiki) || strcmp(pairs[k].title, r->title))) {
            k++;
        }
        if (k == np) {
            pairs[np++] = (struct model_pair){r->wiki, r->title, 0};
        }
        pairs[k].count++;
    }
    qsort(pairs, np, sizeof pairs[0], model_rank_cmp);
    for (size_t k = 0; k < np && k < 20; k++) {
        *len += (size_t)snprintf(out + *len, cap - *len, "%lld #%zu %s|%s %llu\n",
                                 (long long)((s - T0) / MIN), k + 1, pairs[k].wiki,
                                 pairs[k].title, (unsigned long long)pairs[k].count);
    }
}

static const char long_pad[] =
    "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"
    "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"
    "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy";

static int64_t floor_min(int64_t t)
{
    return t - (((t - T0) % MIN) + MIN) % MIN;
}

/*
 * Random rows over 20 minutes, out of order by up to 4 minutes (so rows
 * arrive for panes the watermark has passed, which the operator has frozen
 * and whose oldest window is settled: dropped), a watermark 2 minutes behind the
 * newest row advanced every 150 rows, a save and load into a fresh
 * operator every 1,000 rows, the provisional view now and then: every
 * window emitted must equal the recomputation over the rows counted, and
 * a row is counted exactly when no window holding its minute was settled.
 * Rows 10 s to 2 min older than the newest reach panes frozen early, which
 * thaw (counted; at least one must).
 */
static void test_top_vs_model(void)
{
    static char want[1 << 19], have[1 << 19];
    static struct fr_proc_view view;
    struct fr_top *top = top_new(1 << 20, 1 << 26);
    int64_t max_t = T0, settled = INT64_MIN; /* last window start emitted */
    size_t wlen = 0;
    got_len = 0;
    uint64_t views = 0, thaws = 0, slid = 0, built = 0;
    struct fr_top_stats st;
    for (size_t i = 0; i < MODEL_ROWS; i++) {
        struct model_row *r = &mrows[i];
        int64_t base = T0 + (int64_t)(i * 20 * (uint64_t)MIN / MODEL_ROWS);
        r->t = base - (int64_t)(rnd() % (4 * (uint64_t)MIN));
        if (r->t < T0) {
            r->t = T0 + (int64_t)(rnd() % 1000);
        }
        snprintf(r->wiki, sizeof r->wiki, "w%d", (int)(rnd() % 3));
        /* a skewed title distribution: a few hot pages, a long tail; one
         * tail title in five is 248..263 bytes (sharing a long prefix), so
         * frozen panes hold titles on both sides of the front coding's
         * 255-byte limit */
        uint64_t t = rnd() % 8 ? rnd() % 12 : rnd() % 400;
        if (t >= 12 && t % 5 == 0) {
            int pad = 248 - 9 + (int)(t % 16);
            snprintf(r->title, sizeof r->title, "Page %.*s%04d", pad, long_pad, (int)t);
        } else if (t >= 12 && t % 5 == 1) {
            /* 1..24 bytes of one string (UTF-8 in it): titles that are
             * prefixes of each other, either side of the merge keys' 8- and
             * 16-byte words */
            static const char pre[] = "Zz\xc3\xa9zZ\xc3\xa9Zz\xc3\xa9-zZ\xc3\xa9zz\xc3\xa9Z";
            snprintf(r->title, sizeof r->title, "%.*s", 1 + (int)(t % 24), pre);
        } else {
            snprintf(r->title, sizeof r->title, "Page %d", (int)t);
        }
        int64_t pane = floor_min(r->t);
        r->counted = settled == INT64_MIN || pane - 9 * MIN > settled;
        struct fr_row row = mk(r->t, r->wiki, rnd() % 2 ? FR_TYPE_EDIT : FR_TYPE_NEW, r->title,
                               NULL);
        CHECK_EQ_INT(fr_win_top_add(top, &row), FR_OK);
        if (r->t > max_t) {
            max_t = r->t;
        }
        if (i % 150 == 149 || i == MODEL_ROWS - 1) {
            int64_t wm = i == MODEL_ROWS - 1 ? max_t + 20 * MIN : max_t - 2 * MIN;
            int64_t s_max = floor_min(wm - 10 * MIN);
            /* Emitted windows: starts after the last one settled, holding a row. */
            int64_t s = settled == INT64_MIN ? T0 - 9 * MIN : settled + MIN;
            for (; s <= s_max; s += MIN) {
                model_window(s, i + 1, want, &wlen, sizeof want);
            }
            if (settled == INT64_MIN || s_max > settled) {
                settled = s_max;
            }
            CHECK_EQ_INT(fr_win_top_advance(top, wm, on_top, NULL), FR_OK);
            CHECK(got_len < sizeof got - 4096 && wlen < sizeof want - 4096);
            if (got_len != wlen || memcmp(got, want, wlen) != 0) {
                fprintf(stderr, "  at row %zu:\n--- operator\n%.*s--- model\n%.*s", i,
                        (int)got_len, got, (int)wlen, want);
                CHECK(!"top pages differ from the recomputation");
                break;
            }
            got_len = wlen = 0;
        }
        if (i % 400 == 200) {
            /* The view: the newest pane's window, provisional. */
            fr_win_top_view(top, &view);
            size_t vl = 0;
            model_window(view.top_start_us, i + 1, want, &vl, sizeof want);
            size_t hl = 0;
            for (size_t k = 0; k < view.n_top; k++) {
                const struct fr_top_row *v = &view.top[k];
                hl += (size_t)snprintf(have + hl, sizeof have - hl, "%lld #%u %.*s|%.*s %llu\n",
                                       (long long)((v->window_start_us - T0) / MIN), v->rank,
                                       (int)v->wiki.len, v->wiki.s, (int)v->title.len,
                                       v->title.s, (unsigned long long)v->count);
            }
            CHECK(view.n_top == 20);
            CHECK_EQ_INT(hl, vl);
            if (hl == vl) {
                CHECK_MEM(have, want, vl);
            }
            views++;
        }
        if (i % 1000 == 999) {
            struct fr_buf b;
            fr_buf_init(&b, 1 << 26);
            CHECK_EQ_INT(fr_win_top_save(top, &b), FR_OK);
            struct fr_top *copy = top_new(1 << 20, 1 << 26);
            CHECK_EQ_INT(fr_win_top_load(copy, b.data, b.len), FR_OK);
            fr_buf_free(&b);
            fr_win_top_stats(top, &st);
            thaws += st.thaws;
            slid += st.map_slid;
            built += st.map_built;
            fr_win_top_destroy(top);
            top = copy;
        }
    }
    fr_win_top_stats(top, &st);
    thaws += st.thaws;
    slid += st.map_slid;
    built += st.map_built;
    CHECK_EQ_INT(st.panes, 0);
    CHECK(st.windows > 20 && st.dropped_closed > 0);
    CHECK(views >= 10);
    CHECK(thaws > 0);
    /* Every window merged (-1); every one from the map, slid on from the
     * one before except after a load (0); or some of each (400). */
    if (top_map_pairs < 0) {
        CHECK(slid == 0 && built == 0);
    } else if (top_map_pairs == 0) {
        CHECK(slid > built && built > 0 && slid + built == st.windows);
    } else {
        CHECK(slid > 0 && built > 0 && slid + built < st.windows);
    }
    fprintf(stderr, "  %llu thaws; windows from the map: %llu slid, %llu built\n",
            (unsigned long long)thaws, (unsigned long long)slid, (unsigned long long)built);
    fr_win_top_destroy(top);
}

/* Rows ranked as text into the fr_buf at arg. */
static int on_top_buf(void *arg, const struct fr_top_row *r)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "%lld #%u %.*s|%.*s %llu\n",
                     (long long)((r->window_start_us - T0) / MIN), r->rank, (int)r->wiki.len,
                     r->wiki.s, (int)r->title.len, r->title.s, (unsigned long long)r->count);
    return fr_buf_append(arg, line, (size_t)n) == FR_OK ? 0 : -1;
}

/*
 * A long slide: 400 minutes, the watermark a minute at a time, so the
 * map moves on from window to window without a reload and removes most
 * of what it adds (three titles in four are new each minute), which
 * makes it reclaim its text many times over. Every window must be the
 * merge's (checked against the recomputation in test_top_vs_model).
 */
static void test_top_map_long_slide(void)
{
    int64_t keep = top_map_pairs;
    top_map_pairs = 0;
    struct fr_top *map = top_new(1 << 20, 1 << 26);
    top_map_pairs = -1;
    struct fr_top *merge = top_new(1 << 20, 1 << 26);
    top_map_pairs = keep;
    struct fr_buf a, b;
    fr_buf_init(&a, 1 << 24);
    fr_buf_init(&b, 1 << 24);
    char title[300];
    for (int m = 0; m < 400; m++) {
        for (int r = 0; r < 120; r++) {
            uint64_t x = rnd();
            int hot = x % 4 == 0;
            /* hot: one of 40 titles any minute; else new this minute, a
             * quarter of them long (front coding and whole titles) */
            snprintf(title, sizeof title, "%s %d %.*s", hot ? "Hot" : "New",
                     hot ? (int)(x >> 8) % 40 : m * 1000 + r,
                     x % 16 == 1 ? 260 : (int)(x >> 20) % 12, long_pad);
            char wiki[8];
            snprintf(wiki, sizeof wiki, "w%d", (int)(x >> 40) % 3);
            struct fr_row row = mk(T0 + m * MIN + (int64_t)((x >> 24) % (uint64_t)MIN), wiki,
                                   FR_TYPE_EDIT, title, NULL);
            CHECK_EQ_INT(fr_win_top_add(map, &row), FR_OK);
            CHECK_EQ_INT(fr_win_top_add(merge, &row), FR_OK);
        }
        int64_t wm = T0 + (m + 1) * MIN;
        CHECK_EQ_INT(fr_win_top_advance(map, wm, on_top_buf, &a), FR_OK);
        CHECK_EQ_INT(fr_win_top_advance(merge, wm, on_top_buf, &b), FR_OK);
    }
    CHECK_EQ_INT(fr_win_top_advance(map, T0 + 500 * MIN, on_top_buf, &a), FR_OK);
    CHECK_EQ_INT(fr_win_top_advance(merge, T0 + 500 * MIN, on_top_buf, &b), FR_OK);
    CHECK(a.len > 0);
    CHECK_EQ_INT(a.len, b.len);
    if (a.len == b.len) {
        CHECK_MEM(a.data, b.data, a.len);
    }
    struct fr_top_stats st;
    fr_win_top_stats(map, &st);
    CHECK(st.windows > 390 && st.map_slid > 390 && st.map_built == 1);
    fprintf(stderr, "  %llu windows, %zu bytes of rows\n", (unsigned long long)st.windows, a.len);
    fr_buf_free(&a);
    fr_buf_free(&b);
    fr_win_top_destroy(map);
    fr_win_top_destroy(merge);
}

static void test_top_caps_view_save(void)
{
    struct fr_top *top = top_new(3, 1 << 20);
    add_n(top, T0, "w", "a", 2, FR_TYPE_EDIT);
    add_n(top, T0, "w", "b", 1, FR_TYPE_EDIT);
    add_n(top, T0 + MIN, "w", "a", 1, FR_TYPE_EDIT);
    add_n(top, T0 + MIN, "w", "c", 5, FR_TYPE_EDIT); /* 4th counter: refused */
    add_n(top, T0 + MIN, "w", "a", 1, FR_TYPE_EDIT); /* known: counts */
    struct fr_top_stats st;
    fr_win_top_stats(top, &st);
    CHECK_EQ_INT(st.entries, 3);
    CHECK_EQ_INT(st.dropped_keys, 5);
    static struct fr_proc_view view;
    memset(&view, 0, sizeof view);
    fr_win_top_view(top, &view);
    CHECK_EQ_INT(view.top_start_us, T0 - 8 * MIN);
    CHECK_EQ_INT(view.top_end_us, T0 + 2 * MIN);
    CHECK_EQ_INT(view.n_top, 2);
    CHECK(view.top[0].count == 4 && view.top[0].title.len == 1 && view.top[0].title.s[0] == 'a');
    CHECK(view.top[1].count == 1 && view.top[1].title.s[0] == 'b');
    /* Round trip, then the same output from both. */
    struct fr_buf a, b;
    fr_buf_init(&a, 1 << 20);
    fr_buf_init(&b, 1 << 20);
    CHECK_EQ_INT(fr_win_top_save(top, &a), FR_OK);
    struct fr_top *copy = top_new(3, 1 << 20);
    CHECK_EQ_INT(fr_win_top_load(copy, a.data, a.len), FR_OK);
    CHECK_EQ_INT(fr_win_top_save(copy, &b), FR_OK);
    CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
    got_len = 0;
    fr_win_top_advance(top, T0 + 20 * MIN, on_top, NULL);
    static char first[1 << 16];
    memcpy(first, got, got_len + 1);
    got_len = 0;
    fr_win_top_advance(copy, T0 + 20 * MIN, on_top, NULL);
    CHECK_EQ_STR(got, first);
    struct fr_top *tiny = top_new(2, 1 << 20);
    CHECK_EQ_INT(fr_win_top_load(tiny, a.data, a.len), FR_ETOOBIG);
    fr_win_top_destroy(tiny);
    fr_buf_free(&a);
    fr_buf_free(&b);
    fr_win_top_destroy(copy);
    fr_win_top_destroy(top);
}

/*
 * Frozen forms against an operator that never freezes. A and B get the
 * same rows (titles of 0..300 bytes sharing prefixes, several wikis, a
 * counter cap that is hit); A is advanced with a watermark far behind, so
 * only the early-freeze rule applies: the panes 10 s older than its newest
 * row are packed. B is never advanced before the end, so all its panes
 * stay live. Then: A holds fewer bytes; the same saved bytes, stats and
 * view; a row for a frozen pane thaws it (thaws == 1) and is counted as in
 * B; the cap refuses the same rows; and both emit the same windows, whose
 * first ranks are checked by hand.
 */
static void add_title(struct fr_top *top, int64_t t, const char *wiki, int len, int n)
{
    char title[400];
    if (len < 0 || len >= (int)sizeof title) {
        CHECK(!"add_title: len out of range");
        return;
    }
    memset(title, 'p', (size_t)len);
    if (len > 0) {
        title[len - 1] = (char)('a' + len % 26);
    }
    title[len] = 0;
    add_n(top, t, wiki, title, n, FR_TYPE_EDIT);
}

static void test_top_frozen_forms(void)
{
    static const int lens[] = {0, 1, 2, 30, 31, 254, 255, 256, 257, 300};
    enum { NLENS = sizeof lens / sizeof lens[0], CAP = 3 * 2 * NLENS + 5 };
    struct fr_top *a = top_new(CAP, 1 << 20), *b = top_new(CAP, 1 << 20);
    struct fr_top_stats sa, sb;
    /* Both have settled up to the same window before any row. */
    CHECK_EQ_INT(fr_win_top_advance(a, T0 - 30 * MIN, on_top, NULL), FR_OK);
    CHECK_EQ_INT(fr_win_top_advance(b, T0 - 30 * MIN, on_top, NULL), FR_OK);
    for (int p = 0; p < 3; p++) {
        for (int w = 0; w < 2; w++) {
            for (int k = 0; k < NLENS; k++) {
                int n = 1 + (k + p + w) % 4;
                add_title(a, T0 + p * MIN + k, w ? "enwiki" : "de", lens[k], n);
                add_title(b, T0 + p * MIN + k, w ? "enwiki" : "de", lens[k], n);
            }
        }
    }
    /* The newest row, 10 s past pane 1's end: panes 0 and 1 freeze early. */
    add_n(a, T0 + 2 * MIN + 10000000, "en", "newest", 7, FR_TYPE_EDIT);
    add_n(b, T0 + 2 * MIN + 10000000, "en", "newest", 7, FR_TYPE_EDIT);
    fr_win_top_stats(b, &sb);
    CHECK_EQ_INT(fr_win_top_advance(a, T0 - 30 * MIN, on_top, NULL), FR_OK);
    fr_win_top_stats(a, &sa);
    CHECK(sa.bytes < sb.bytes);
    CHECK_EQ_INT(sa.entries, sb.entries);
    CHECK_EQ_INT(sa.text_bytes, sb.text_bytes);
    CHECK_EQ_INT(sa.thaws, 0);
    fprintf(stderr, "  3 panes: %llu bytes live, %llu with 2 frozen early\n",
            (unsigned long long)sb.bytes, (unsigned long long)sa.bytes);
    /* Same saved bytes from packed and live panes: the format is unchanged. */
    struct fr_buf ba, bb;
    fr_buf_init(&ba, 1 << 20);
    fr_buf_init(&bb, 1 << 20);
    CHECK_EQ_INT(fr_win_top_save(a, &ba), FR_OK);
    CHECK_EQ_INT(fr_win_top_save(b, &bb), FR_OK);
    CHECK(ba.len == bb.len && memcmp(ba.data, bb.data, ba.len) == 0);
    static struct fr_proc_view va, vb;
    memset(&va, 0, sizeof va);
    memset(&vb, 0, sizeof vb);
    fr_win_top_view(a, &va);
    fr_win_top_view(b, &vb);
    CHECK_EQ_INT(va.n_top, vb.n_top);
    for (size_t k = 0; k < va.n_top && k < vb.n_top; k++) {
        CHECK(va.top[k].count == vb.top[k].count && va.top[k].title.len == vb.top[k].title.len &&
              memcmp(va.top[k].title.s, vb.top[k].title.s, va.top[k].title.len) == 0);
    }
    /* A late row for frozen pane 1: thawed, counted; a new pair there is
     * refused by the cap in both once it is reached. */
    add_title(a, T0 + MIN + 5, "enwiki", 255, 3);
    add_title(b, T0 + MIN + 5, "enwiki", 255, 3);
    for (int k = 0; k < 8; k++) {
        add_title(a, T0 + 5, "fr", 10 + k, 1);
        add_title(b, T0 + 5, "fr", 10 + k, 1);
    }
    fr_win_top_stats(a, &sa);
    fr_win_top_stats(b, &sb);
    CHECK_EQ_INT(sa.thaws, 2);
    CHECK_EQ_INT(sa.entries, CAP);
    CHECK_EQ_INT(sa.entries, sb.entries);
    CHECK_EQ_INT(sa.dropped_keys, 4);
    CHECK_EQ_INT(sa.dropped_keys, sb.dropped_keys);
    fr_buf_reset(&ba);
    fr_buf_reset(&bb);
    CHECK_EQ_INT(fr_win_top_advance(a, T0 - 30 * MIN, on_top, NULL), FR_OK);
    CHECK_EQ_INT(fr_win_top_save(a, &ba), FR_OK);
    CHECK_EQ_INT(fr_win_top_save(b, &bb), FR_OK);
    CHECK(ba.len == bb.len && memcmp(ba.data, bb.data, ba.len) == 0);
    /* Everything settles: the same rows from both. */
    got_len = 0;
    CHECK_EQ_INT(fr_win_top_advance(a, T0 + 30 * MIN, on_top, NULL), FR_OK);
    static char first[1 << 19];
    memcpy(first, got, got_len + 1);
    size_t first_len = got_len;
    got_len = 0;
    CHECK_EQ_INT(fr_win_top_advance(b, T0 + 30 * MIN, on_top, NULL), FR_OK);
    CHECK(first_len == got_len && memcmp(first, got, got_len) == 0);
    /* By hand: window -9 holds pane 0 only. Counts 1 + (k + w) % 4: the
     * 4s are k = 3, 7 (de, 30 and 256 bytes) and k = 2, 6 (enwiki, 2 and
     * 255 bytes), ranked wiki then title; the late 255-byte enwiki row went
     * to pane 1. */
    char want[2048];
    char t30[31], t2[3], t255[256], t256[257];
    memset(t30, 'p', 30);
    t30[29] = (char)('a' + 30 % 26);
    t30[30] = 0;
    memcpy(t2, "pa", 3);
    t2[1] = (char)('a' + 2 % 26);
    memset(t255, 'p', 255);
    t255[254] = (char)('a' + 255 % 26);
    t255[255] = 0;
    memset(t256, 'p', 256);
    t256[255] = (char)('a' + 256 % 26);
    t256[256] = 0;
    snprintf(want, sizeof want,
             "-9 #1 de|%s 4\n-9 #2 de|%s 4\n-9 #3 enwiki|%s 4\n-9 #4 enwiki|%s 4\n", t30, t256,
             t2, t255);
    if (strncmp(first, want, strlen(want)) != 0) {
        fprintf(stderr, "--- emitted\n%.600s\n--- want\n%s", first, want);
    }
    CHECK(strncmp(first, want, strlen(want)) == 0);
    fr_buf_free(&ba);
    fr_buf_free(&bb);
    fr_win_top_destroy(a);
    fr_win_top_destroy(b);
}

/*
 * The merge's 16-byte keys decide only where the strings differ in their
 * first 16 bytes: ties (all counts 2, one row in a frozen pane and one in
 * a live one, so every pair is met by two cursors) are ranked bytewise,
 * shorter first, across NUL bytes, empty strings and 16-byte prefixes of
 * wikis and titles. The expected order is written by hand.
 */
static int on_top_esc(void *arg, const struct fr_top_row *r)
{
    (void)arg;
    const struct fr_proc_str *f[2] = {&r->wiki, &r->title};
    got_len += (size_t)snprintf(got + got_len, sizeof got - got_len, "%lld #%u ",
                                (long long)((r->window_start_us - T0) / MIN), r->rank);
    for (int k = 0; k < 2; k++) {
        for (uint32_t i = 0; i < f[k]->len; i++) {
            got[got_len++] = f[k]->s[i] ? f[k]->s[i] : '~';
        }
        got[got_len++] = k ? ' ' : '|';
    }
    got_len += (size_t)snprintf(got + got_len, sizeof got - got_len, "%llu\n",
                                (unsigned long long)r->count);
    return 0;
}

static void test_top_key_order(void)
{
    static const struct {
        const char *s;
        uint32_t len;
    } wikis[] = {{"w", 1},
                 {"aaaaaaaaaaaaaaaaX", 17},
                 {"aaaaaaaaaaaaaaaa", 16},
                 {"aaaaaaaaaaaaaaaa\0", 17}},
      titles[] = {{"abc", 3},
                  {"ab\0x", 4},
                  {"ab\0", 3},
                  {"ab", 2},
                  {"\0", 1},
                  {"", 0},
                  {"ttttttttttttttttu", 17},
                  {"tttttttttttttttt\0", 17},
                  {"tttttttttttttttt", 16}};
    /* The ranking, by hand ('~' for a NUL byte). */
    static const char *const order[] = {
        "aaaaaaaaaaaaaaaa|abc",  "aaaaaaaaaaaaaaaa~|abc", "aaaaaaaaaaaaaaaaX|",
        "aaaaaaaaaaaaaaaaX|~",   "aaaaaaaaaaaaaaaaX|ab",  "aaaaaaaaaaaaaaaaX|ab~",
        "aaaaaaaaaaaaaaaaX|ab~x", "aaaaaaaaaaaaaaaaX|abc",
        "aaaaaaaaaaaaaaaaX|tttttttttttttttt", "aaaaaaaaaaaaaaaaX|tttttttttttttttt~",
        "aaaaaaaaaaaaaaaaX|ttttttttttttttttu", "w|", "w|~", "w|ab", "w|ab~", "w|ab~x", "w|abc",
        "w|tttttttttttttttt", "w|tttttttttttttttt~", "w|ttttttttttttttttu"};
    struct fr_top *top = top_new(1000, 1 << 20);
    for (int pane = 0; pane < 2; pane++) {
        for (int w = 0; w < 4; w++) {
            for (int t = 0; t < (w < 2 ? 9 : 1); t++) {
                struct fr_row r = mk(T0 + pane * MIN + t, "x", FR_TYPE_EDIT, "x", NULL);
                r.wiki = (struct fr_proc_str){wikis[w].s, wikis[w].len};
                r.title = (struct fr_proc_str){titles[t].s, titles[t].len};
                CHECK_EQ_INT(fr_win_top_add(top, &r), FR_OK);
            }
        }
        if (pane == 0) {
            /* pane 0 freezes early: a row 70 s past its end (pane 2) */
            add_n(top, T0 + 2 * MIN + 10000000, "zz", "late", 1, FR_TYPE_EDIT);
            CHECK_EQ_INT(fr_win_top_advance(top, T0 - 30 * MIN, NULL, NULL), FR_OK);
        }
    }
    /* Windows -9 (pane 0: counts 1) and -8 (panes 0, frozen, and 1, live:
     * counts 2); pane 2 is in neither. */
    got_len = 0;
    CHECK_EQ_INT(fr_win_top_advance(top, T0 + 2 * MIN, on_top_esc, NULL), FR_OK);
    got[got_len] = 0;
    char want[4096];
    size_t wl = 0;
    for (int c = 1; c <= 2; c++) {
        for (int k = 0; k < 20; k++) {
            wl += (size_t)snprintf(want + wl, sizeof want - wl, "%d #%d %s %d\n", c - 10, k + 1,
                                   order[k], c);
        }
    }
    CHECK_EQ_STR(got, want);
    fr_win_top_destroy(top);
}

/* A thawed pane's arrays are exact: one with a single empty pair (1 entry,
 * 1 byte of text) must grow again. Against a never-frozen operator. */
static void test_top_thaw_tiny(void)
{
    struct fr_top *a = top_new(1000, 1 << 20), *b = top_new(1000, 1 << 20);
    struct fr_top *both[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        CHECK_EQ_INT(fr_win_top_advance(both[k], T0 - 30 * MIN, NULL, NULL), FR_OK);
        add_n(both[k], T0, "", "", 2, FR_TYPE_EDIT);
        add_n(both[k], T0 + 2 * MIN, "w", "newest", 1, FR_TYPE_EDIT);
    }
    CHECK_EQ_INT(fr_win_top_advance(a, T0 - 30 * MIN, NULL, NULL), FR_OK); /* freezes pane 0 */
    char title[64];
    for (int i = 0; i < 100; i++) {
        snprintf(title, sizeof title, "a fairly long title number %03d, to outgrow 1 KiB", i);
        add_n(a, T0 + 1, "wiki", title, 1 + i % 3, FR_TYPE_EDIT);
        add_n(b, T0 + 1, "wiki", title, 1 + i % 3, FR_TYPE_EDIT);
    }
    struct fr_top_stats st;
    fr_win_top_stats(a, &st);
    CHECK_EQ_INT(st.thaws, 1);
    struct fr_buf ba, bb;
    fr_buf_init(&ba, 1 << 20);
    fr_buf_init(&bb, 1 << 20);
    CHECK_EQ_INT(fr_win_top_save(a, &ba), FR_OK);
    CHECK_EQ_INT(fr_win_top_save(b, &bb), FR_OK);
    CHECK(ba.len == bb.len && memcmp(ba.data, bb.data, ba.len) == 0);
    fr_buf_free(&ba);
    fr_buf_free(&bb);
    fr_win_top_destroy(a);
    fr_win_top_destroy(b);
}

/*
 * A checkpoint of the version-1 layout, written out by hand from the byte
 * table in topk.c (not by the code under test): it loads, saves back byte
 * for byte (also once its panes are frozen), and emits what the counts
 * say.
 */
static void put_le(struct fr_buf *b, uint64_t v, int n)
{
    uint8_t x[8];
    for (int i = 0; i < n; i++) {
        x[i] = (uint8_t)(v >> (8 * i));
    }
    fr_buf_append(b, x, (size_t)n);
}

static void put_str(struct fr_buf *b, const char *s)
{
    put_le(b, strlen(s), 4);
    fr_buf_append(b, s, strlen(s));
}

/* One pane row: wiki, title, count. */
static void put_row(struct fr_buf *b, const char *wiki, const char *title, uint64_t n)
{
    put_str(b, wiki);
    put_str(b, title);
    put_le(b, n, 8);
}

/* The version-1 blob: next_start T0 - 9 min, counters 5, 60, 2, 1; pane
 * T0 {enwiki Apple 3, enwiki Apples 1, enwiki B 1}, pane T0 + 1 min
 * {dewiki X 2, enwiki Apple 1}, and with extra a pane T0 + 2 min
 * {en newest 1}. */
static void old_blob(struct fr_buf *blob, int extra)
{
    fr_buf_reset(blob);
    fr_buf_append(blob, "FRTK", 4);
    put_le(blob, 1, 2); /* version */
    put_le(blob, 0, 2); /* zero */
    put_le(blob, 0, 8); /* body length, patched below */
    put_le(blob, (uint64_t)(T0 - 9 * MIN), 8);
    put_le(blob, 5, 8);  /* windows */
    put_le(blob, 60, 8); /* rows */
    put_le(blob, 2, 8);  /* dropped_keys */
    put_le(blob, 1, 8);  /* dropped_closed */
    put_le(blob, extra ? 3 : 2, 4);
    put_le(blob, (uint64_t)T0, 8);
    put_le(blob, 3, 4);
    put_row(blob, "enwiki", "Apple", 3);
    put_row(blob, "enwiki", "Apples", 1);
    put_row(blob, "enwiki", "B", 1);
    put_le(blob, (uint64_t)(T0 + MIN), 8);
    put_le(blob, 2, 4);
    put_row(blob, "dewiki", "X", 2);
    put_row(blob, "enwiki", "Apple", 1);
    if (extra) {
        put_le(blob, (uint64_t)(T0 + 2 * MIN), 8);
        put_le(blob, 1, 4);
        put_row(blob, "en", "newest", 1);
    }
    uint64_t body = blob->len - 16;
    for (int i = 0; i < 8; i++) {
        blob->data[8 + i] = (uint8_t)(body >> (8 * i));
    }
    put_le(blob, 0, 4);
    reseal(blob->data, blob->len);
}

static void test_top_old_blob(void)
{
    struct fr_buf blob, out;
    fr_buf_init(&blob, 1 << 16);
    fr_buf_init(&out, 1 << 16);
    old_blob(&blob, 0);
    struct fr_top *top = top_new(1000, 1 << 20);
    CHECK_EQ_INT(fr_win_top_load(top, blob.data, blob.len), FR_OK);
    CHECK_EQ_INT(fr_win_top_save(top, &out), FR_OK);
    CHECK(out.len == blob.len && memcmp(out.data, blob.data, blob.len) == 0);
    /* A row 10 s past the second pane's end freezes both loaded panes
     * early (no window settles at this watermark). */
    struct fr_top_stats before, after;
    fr_win_top_stats(top, &before);
    add_n(top, T0 + 2 * MIN + 10000000, "en", "newest", 1, FR_TYPE_EDIT);
    got_len = 0;
    CHECK_EQ_INT(fr_win_top_advance(top, T0 + MIN - 1, on_top, NULL), FR_OK);
    CHECK_EQ_INT(got_len, 0);
    fr_win_top_stats(top, &after);
    CHECK(after.bytes < before.bytes);
    old_blob(&blob, 1);
    fr_buf_reset(&out);
    CHECK_EQ_INT(fr_win_top_save(top, &out), FR_OK);
    CHECK(out.len == blob.len && memcmp(out.data, blob.data, blob.len) == 0);
    CHECK_EQ_INT(fr_win_top_advance(top, T0 + 11 * MIN, on_top, NULL), FR_OK);
    CHECK_EQ_STR(got, "-9 #1 enwiki|Apple 3\n"
                      "-9 #2 enwiki|Apples 1\n"
                      "-9 #3 enwiki|B 1\n"
                      "-8 #1 enwiki|Apple 4\n"
                      "-8 #2 dewiki|X 2\n"
                      "-8 #3 enwiki|Apples 1\n"
                      "-8 #4 enwiki|B 1\n"
                      "-7 #1 enwiki|Apple 4\n"
                      "-7 #2 dewiki|X 2\n"
                      "-7 #3 en|newest 1\n"
                      "-7 #4 enwiki|Apples 1\n"
                      "-7 #5 enwiki|B 1\n"
                      "-6 #1 enwiki|Apple 4\n"
                      "-6 #2 dewiki|X 2\n"
                      "-6 #3 en|newest 1\n"
                      "-6 #4 enwiki|Apples 1\n"
                      "-6 #5 enwiki|B 1\n"
                      "-5 #1 enwiki|Apple 4\n"
                      "-5 #2 dewiki|X 2\n"
                      "-5 #3 en|newest 1\n"
                      "-5 #4 enwiki|Apples 1\n"
                      "-5 #5 enwiki|B 1\n"
                      "-4 #1 enwiki|Apple 4\n"
                      "-4 #2 dewiki|X 2\n"
                      "-4 #3 en|newest 1\n"
                      "-4 #4 enwiki|Apples 1\n"
                      "-4 #5 enwiki|B 1\n"
                      "-3 #1 enwiki|Apple 4\n"
                      "-3 #2 dewiki|X 2\n"
                      "-3 #3 en|newest 1\n"
                      "-3 #4 enwiki|Apples 1\n"
                      "-3 #5 enwiki|B 1\n"
                      "-2 #1 enwiki|Apple 4\n"
                      "-2 #2 dewiki|X 2\n"
                      "-2 #3 en|newest 1\n"
                      "-2 #4 enwiki|Apples 1\n"
                      "-2 #5 enwiki|B 1\n"
                      "-1 #1 enwiki|Apple 4\n"
                      "-1 #2 dewiki|X 2\n"
                      "-1 #3 en|newest 1\n"
                      "-1 #4 enwiki|Apples 1\n"
                      "-1 #5 enwiki|B 1\n"
                      "0 #1 enwiki|Apple 4\n"
                      "0 #2 dewiki|X 2\n"
                      "0 #3 en|newest 1\n"
                      "0 #4 enwiki|Apples 1\n"
                      "0 #5 enwiki|B 1\n"
                      "1 #1 dewiki|X 2\n"
                      "1 #2 en|newest 1\n"
                      "1 #3 enwiki|Apple 1\n");
    struct fr_top_stats st;
    fr_win_top_stats(top, &st);
    CHECK_EQ_INT(st.windows, 5 + 11);
    CHECK_EQ_INT(st.dropped_keys, 2);
    CHECK_EQ_INT(st.panes, 1);
    fr_buf_free(&blob);
    fr_buf_free(&out);
    fr_win_top_destroy(top);
}

/* Hostile blobs for the window loaders: random bytes with a valid CRC. */
static void test_hostile_window_blobs(void)
{
    struct fr_win *win = win_new(1000, 1000, 1 << 20);
    struct fr_top *top = top_new(1000, 1 << 20);
    char wiki[8], title[8], user[8];
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < 400; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        snprintf(wiki, sizeof wiki, "w%d", (int)(x % 4));
        snprintf(title, sizeof title, "t%d", (int)(x / 7 % 9));
        snprintf(user, sizeof user, "u%d", (int)(x / 63 % 11));
        struct fr_row r = mk(T0 + (int64_t)(x / 999 % 5) * MIN, wiki, FR_TYPE_EDIT, title, user);
        fr_win_add(win, &r);
        fr_win_top_add(top, &r);
    }
    struct fr_buf wa, ta, m;
    fr_buf_init(&wa, 1 << 20);
    fr_buf_init(&ta, 1 << 20);
    fr_buf_init(&m, 1 << 20);
    CHECK_EQ_INT(fr_win_save(win, &wa), FR_OK);
    CHECK_EQ_INT(fr_win_top_save(top, &ta), FR_OK);
    struct fr_win *wv = win_new(1000, 1000, 1 << 20);
    struct fr_top *tv = top_new(1000, 1 << 20);
    int loaded = 0;
    for (int round = 0; round < 4000; round++) {
        const struct fr_buf *src = round % 2 ? &wa : &ta;
        fr_buf_reset(&m);
        fr_buf_append(&m, src->data, src->len);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int flips = 1 + (int)(x % 3);
        for (int f = 0; f < flips; f++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            size_t at = 16 + x % (m.len - 20);
            m.data[at] = (uint8_t)(x >> 40 & 1 ? m.data[at] ^ (1u << (x >> 20 & 7)) : x >> 32);
        }
        if (x >> 50 & 1) {
            m.len = 16 + (x >> 24) % (m.len - 16); /* truncated */
        }
        reseal(m.data, m.len);
        int rc = round % 2 ? fr_win_load(wv, m.data, m.len) : fr_win_top_load(tv, m.data, m.len);
        loaded += rc == FR_OK;
        CHECK(rc == FR_OK || rc == FR_ECORRUPT || rc == FR_ETOOBIG || rc == FR_ECRC);
    }
    /* Whatever loaded is still a consistent state: it emits and frees. */
    got_len = 0;
    CHECK_EQ_INT(fr_win_advance(wv, T0 + 100 * MIN, NULL, NULL), FR_OK);
    CHECK_EQ_INT(fr_win_top_advance(tv, T0 + 100 * MIN, NULL, NULL), FR_OK);
    struct fr_win_stats ws;
    fr_win_stats(wv, &ws);
    CHECK_EQ_INT(ws.groups, 0);
    CHECK_EQ_INT(ws.users, 0);
    fprintf(stderr, "  4000 mutated window/top blobs: %d loaded\n", loaded);
    fr_buf_free(&wa);
    fr_buf_free(&ta);
    fr_buf_free(&m);
    fr_win_destroy(wv);
    fr_win_top_destroy(tv);
    fr_win_destroy(win);
    fr_win_top_destroy(top);
}

int main(void)
{
    RUN(test_minute_counts);
    RUN(test_empty_names);
    RUN(test_minute_extremes);
    RUN(test_minute_caps);
    static const int64_t map_pairs[] = {-1, 0, 400};
    for (size_t k = 0; k < sizeof map_pairs / sizeof map_pairs[0]; k++) {
        top_map_pairs = map_pairs[k];
        fprintf(stderr, "top pages with map_pairs %lld:\n", (long long)top_map_pairs);
        RUN(test_top_ranks_and_ties);
        RUN(test_top_sliding);
        RUN(test_top_vs_model);
        RUN(test_top_caps_view_save);
        RUN(test_top_frozen_forms);
        RUN(test_top_key_order);
        RUN(test_top_thaw_tiny);
    }
    RUN(test_top_map_long_slide);
    RUN(test_top_old_blob);
    RUN(test_hostile_window_blobs);
    return check_report();
}
