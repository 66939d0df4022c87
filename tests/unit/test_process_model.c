/*
 * test_process_model.c — model-based tests of fr_proc (src/process/proc.c).
 *
 * A tiny, obviously-correct reimplementation of the semantics in
 * docs/SEMANTICS.md (plain arrays, quadratic scans) runs next to the
 * operators over random event streams: several partitions, event times with
 * jitter, exact and same-id duplicates, late events, invalid records, many
 * wikis and titles with ties. Both sides write a transcript (per-record
 * outcome and lateness, every gold_edits_per_minute and gold_top_pages row
 * in emission order) and the transcripts must be identical. Then:
 *   - determinism: the same stream with random cut points where the state
 *     goes through fr_proc_save / destroy / create / fr_proc_load (and a
 *     re-save must be byte-identical) gives the same transcript, and so
 *     does a run that calls fr_proc_view at random points;
 *   - bounded state: on a long stream the dedup keys, open groups and panes
 *     stay within (event rate x lateness) bounds while the watermark moves.
 */
#include "check.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/err.h"
#include "process/process.h"

#define MINUTE INT64_C(60000000)
static int64_t lateness_ms = 120000;    /* per test: both sides read it */
#define T0_US INT64_C(1783699200000000) /* 2026-07-10T16:00:00Z */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * UINT64_C(2685821657736338717);
}

static uint64_t rnd_below(uint64_t n)
{
    return rnd() % n;
}

/* ------------------------------------------------------------------------ */
/* Random events                                                              */
/* ------------------------------------------------------------------------ */

static const char *const wikis[] = {"w1", "w10", "w2", "enwiki", "dewiki", "w\xc3\xa9", "a", "zz"};
#define N_WIKIS (sizeof wikis / sizeof wikis[0])
#define N_TITLES 24
#define N_USERS 12

enum { T_EDIT = 1, T_NEW, T_LOG, T_CATEGORIZE };

struct ev {
    char json[640];
    size_t len;
    int32_t partition;
    int64_t ingest_ms;
    const char *reject; /* expected reason name, or NULL */
    uint64_t id;
    int64_t t;
    int wiki, title, type, user, bot; /* title/user -1: absent */
    int has_old, has_new;
    int64_t old_len, new_len;
};

struct gen_opts {
    int partitions;
    int64_t rate_us;   /* mean gap between events in event time */
    int dup_pct;       /* exact copies of an earlier event */
    int sameid_pct;    /* same meta.id, another event time */
    int late_pct;      /* event time well behind the stream */
    int bad_pct;       /* records the gate rejects */
    int64_t jitter_us; /* event time = clock +- jitter */
    int64_t unit_us;   /* clock step granularity (0: whole seconds) */
};

static void ev_title(int title, char *out, size_t cap)
{
    if (title == 0) {
        snprintf(out, cap, "%s", ""); /* an empty title is still a title */
    } else if (title == 1) {
        snprintf(out, cap, "Caf\\u00e9"); /* escaped: decodes to "Café" */
    } else {
        snprintf(out, cap, "T%d", title);
    }
}

static void ev_render(struct ev *e)
{
    char dt[32], title[64], user[32], len[128];
    fr_time_format_ms(e->t, dt);
    title[0] = user[0] = len[0] = 0;
    if (e->title >= 0) {
        char t[24];
        ev_title(e->title, t, sizeof t);
        snprintf(title, sizeof title, ",\"title\":\"%s\"", t);
    }
    if (e->user >= 0) {
        snprintf(user, sizeof user, ",\"user\":\"u%d\"", e->user);
    }
    if (e->has_new || e->has_old) {
        char inner[80] = "";
        int n = 0;
        if (e->has_old) {
            n += snprintf(inner, sizeof inner, "\"old\":%lld", (long long)e->old_len);
        }
        if (e->has_new) {
            snprintf(inner + n, sizeof inner - (size_t)n, "%s\"new\":%lld", e->has_old ? "," : "",
                     (long long)e->new_len);
        }
        snprintf(len, sizeof len, ",\"length\":{%s}", inner);
    }
    static const char *const types[] = {"?", "edit", "new", "log", "categorize"};
    e->len = (size_t)snprintf(
        e->json, sizeof e->json,
        "{\"meta\":{\"id\":\"%08llx-0000-4000-8000-%012llx\",\"dt\":\"%s\",\"domain\":\"x.org\"},"
        "\"type\":\"%s\",\"wiki\":\"%s\",\"bot\":%s,\"namespace\":0%s%s%s}",
        (unsigned long long)(e->id >> 32), (unsigned long long)(e->id & 0xffffffffffffULL), dt,
        types[e->type], wikis[e->wiki], e->bot ? "true" : "false", title, user, len);
}

/* Generate n events into evs; returns n. */
static size_t gen_stream(struct ev *evs, size_t n, const struct gen_opts *o)
{
    int64_t clock = T0_US;
    uint64_t next_id = 1;
    for (size_t i = 0; i < n; i++) {
        struct ev *e = &evs[i];
        int64_t unit = o->unit_us ? o->unit_us : 1000000;
        clock += (int64_t)rnd_below((uint64_t)(2 * o->rate_us / unit + 1)) * unit;
        int pick = (int)rnd_below(100);
        if (i > 0 && pick < o->dup_pct) {
            /* An exact copy of an earlier event (at-least-once delivery). */
            *e = evs[i - 1 - rnd_below(i < 400 ? i : 400)];
            e->partition = (int32_t)rnd_below((uint64_t)o->partitions);
            if (!e->reject || strcmp(e->reject, "future_event") != 0) {
                e->ingest_ms = clock / 1000 + 1000;
            }
            continue;
        }
        memset(e, 0, sizeof *e);
        e->partition = (int32_t)rnd_below((uint64_t)o->partitions);
        e->ingest_ms = clock / 1000 + 1000;
        e->id = next_id++;
        /* Whole seconds, so event times often equal the watermark. */
        int64_t j = o->jitter_us
                        ? (int64_t)rnd_below((uint64_t)(2 * o->jitter_us / 1000000 + 1)) * 1000000 -
                              o->jitter_us
                        : 0;
        e->t = clock + j;
        if (pick >= o->dup_pct && pick < o->dup_pct + o->late_pct) {
            e->t = clock - (int64_t)(60 + rnd_below(900)) * 1000000;
        }
        if (i > 0 && pick >= o->dup_pct + o->late_pct &&
            pick < o->dup_pct + o->late_pct + o->sameid_pct) {
            e->id = evs[i - 1 - rnd_below(i < 200 ? i : 200)].id;
        }
        e->wiki = (int)rnd_below(N_WIKIS);
        /* Skewed titles, so counts differ and also tie. */
        e->title =
            rnd_below(20) == 0 ? -1 : (int)(rnd_below(N_TITLES) * rnd_below(N_TITLES) / N_TITLES);
        e->type = 1 + (int)rnd_below(4);
        e->user = rnd_below(8) == 0 ? -1 : (int)rnd_below(N_USERS);
        e->bot = (int)rnd_below(3) == 0;
        if (e->type == T_EDIT || e->type == T_NEW || rnd_below(10) == 0) {
            e->has_new = rnd_below(10) != 0;
            e->has_old = e->type != T_NEW && rnd_below(5) != 0;
            e->old_len = (int64_t)rnd_below(5000);
            e->new_len = (int64_t)rnd_below(5000);
        }
        ev_render(e);
        int bad = (int)rnd_below(100) < o->bad_pct;
        if (bad) {
            switch (rnd_below(3)) {
            case 0:
                e->len -= 1 + rnd_below(5); /* truncated: not JSON */
                e->reject = "not_json";
                break;
            case 1:
                /* 11 minutes ahead of its ingest time */
                e->ingest_ms = e->t / 1000 - 660000;
                e->reject = "future_event";
                break;
            default:
                memcpy(e->json + e->len - 1, ",\"bot\":1}", 10);
                e->len += 8;
                e->reject = "duplicate_field";
                break;
            }
        }
    }
    return n;
}

/* ------------------------------------------------------------------------ */
/* Transcripts                                                                */
/* ------------------------------------------------------------------------ */

static void tr_record(struct fr_buf *tr, size_t i, const char *what, int64_t lateness)
{
    fr_buf_printf(tr, "r %zu %s %lld\n", i, what, (long long)lateness);
}

static void tr_minute(struct fr_buf *tr, int64_t start, const char *wiki, size_t wlen,
                      const struct fr_win_counts *c, int exact)
{
    fr_buf_printf(tr,
                  "m %lld %.*s ev=%llu ed=%llu np=%llu bot=%llu add=%llu rem=%llu du=%llu "
                  "ex=%d\n",
                  (long long)start, (int)wlen, wiki, (unsigned long long)c->events,
                  (unsigned long long)c->edits, (unsigned long long)c->new_pages,
                  (unsigned long long)c->bot_events, (unsigned long long)c->bytes_added,
                  (unsigned long long)c->bytes_removed, (unsigned long long)c->distinct_users,
                  exact);
}

static void tr_top(struct fr_buf *tr, int64_t start, unsigned rank, const char *wiki, size_t wlen,
                   const char *title, size_t tlen, uint64_t count)
{
    fr_buf_printf(tr, "t %lld %u %.*s|%.*s %llu\n", (long long)start, rank, (int)wlen, wiki,
                  (int)tlen, title, (unsigned long long)count);
}

static int sink_minute(void *arg, const struct fr_win_row *row)
{
    if (row->window_end_us != row->window_start_us + MINUTE) {
        return -1;
    }
    tr_minute(arg, row->window_start_us, row->wiki.s, row->wiki.len, &row->counts,
              row->users_exact);
    return 0;
}

static int sink_top(void *arg, const struct fr_top_row *row)
{
    if (row->window_end_us != row->window_start_us + 10 * MINUTE) {
        return -1;
    }
    tr_top(arg, row->window_start_us, row->rank, row->wiki.s, row->wiki.len, row->title.s,
           row->title.len, row->count);
    return 0;
}

static const struct fr_proc_sink sink = {sink_minute, sink_top};

/* ------------------------------------------------------------------------ */
/* The model                                                                  */
/* ------------------------------------------------------------------------ */

struct model {
    const struct ev *evs;
    int64_t part_max[8];
    int64_t wm; /* INT64_MIN: none */
    size_t *silver;
    size_t n_silver;
};

static int64_t floor_div(int64_t t, int64_t unit)
{
    int64_t q = t / unit;
    return (t % unit < 0 ? q - 1 : q) * unit;
}

static void title_text(int title, char *out, size_t cap)
{
    if (title == 1) {
        snprintf(out, cap, "Caf\xc3\xa9");
    } else {
        ev_title(title, out, cap);
    }
}

static int cmp_bytes(const char *a, const char *b)
{
    /* strings here have no NUL inside: strcmp is bytewise on unsigned chars */
    return strcmp(a, b);
}

/* Emit the minute windows ending in (from, to]. */
static void model_minutes(struct model *m, int64_t from, int64_t to, struct fr_buf *tr)
{
    /* Collect (minute, wiki) pairs present in silver with end in range. */
    int64_t keys_w[4096];
    int keys_k[4096];
    size_t nk = 0;
    for (size_t s = 0; s < m->n_silver; s++) {
        const struct ev *e = &m->evs[m->silver[s]];
        int64_t w = floor_div(e->t, MINUTE);
        if (!(w + MINUTE <= to && (from == INT64_MIN || w + MINUTE > from))) {
            continue;
        }
        size_t k = 0;
        while (k < nk && !(keys_w[k] == w && keys_k[k] == e->wiki)) {
            k++;
        }
        if (k == nk && nk < 4096) {
            keys_w[nk] = w;
            keys_k[nk++] = e->wiki;
        }
    }
    /* Selection sort by (minute, wiki bytes). */
    for (size_t a = 0; a < nk; a++) {
        for (size_t b = a + 1; b < nk; b++) {
            if (keys_w[b] < keys_w[a] ||
                (keys_w[b] == keys_w[a] && cmp_bytes(wikis[keys_k[b]], wikis[keys_k[a]]) < 0)) {
                int64_t tw = keys_w[a];
                keys_w[a] = keys_w[b];
                keys_w[b] = tw;
                int tk = keys_k[a];
                keys_k[a] = keys_k[b];
                keys_k[b] = tk;
            }
        }
    }
    for (size_t k = 0; k < nk; k++) {
        struct fr_win_counts c = {0};
        int users[N_USERS] = {0};
        for (size_t s = 0; s < m->n_silver; s++) {
            const struct ev *e = &m->evs[m->silver[s]];
            if (floor_div(e->t, MINUTE) != keys_w[k] || e->wiki != keys_k[k]) {
                continue;
            }
            c.events++;
            c.edits += e->type == T_EDIT;
            c.new_pages += e->type == T_NEW;
            c.bot_events += e->bot;
            if ((e->type == T_EDIT || e->type == T_NEW) && e->has_new) {
                int64_t d = e->new_len - (e->has_old ? e->old_len : 0);
                if (d > 0) {
                    c.bytes_added += (uint64_t)d;
                } else {
                    c.bytes_removed += (uint64_t)-d;
                }
            }
            if (e->user >= 0 && !users[e->user]) {
                users[e->user] = 1;
                c.distinct_users++;
            }
        }
        tr_minute(tr, keys_w[k], wikis[keys_k[k]], strlen(wikis[keys_k[k]]), &c, 1);
    }
}

struct page {
    int wiki, title;
    uint64_t count;
};

static int page_before(const struct page *a, const struct page *b)
{
    if (a->count != b->count) {
        return a->count > b->count;
    }
    int c = cmp_bytes(wikis[a->wiki], wikis[b->wiki]);
    if (c) {
        return c < 0;
    }
    char ta[24], tb[24];
    title_text(a->title, ta, sizeof ta);
    title_text(b->title, tb, sizeof tb);
    return cmp_bytes(ta, tb) < 0;
}

/* Emit the top-pages windows ending in (from, to] that hold a count. */
static void model_top(struct model *m, int64_t from, int64_t to, struct fr_buf *tr)
{
    int64_t starts[4096];
    size_t ns = 0;
    for (size_t s = 0; s < m->n_silver; s++) {
        const struct ev *e = &m->evs[m->silver[s]];
        if ((e->type != T_EDIT && e->type != T_NEW) || e->title < 0) {
            continue;
        }
        int64_t p = floor_div(e->t, MINUTE);
        for (int64_t w = p - 9 * MINUTE; w <= p; w += MINUTE) {
            if (!(w + 10 * MINUTE <= to && (from == INT64_MIN || w + 10 * MINUTE > from))) {
                continue;
            }
            size_t k = 0;
            while (k < ns && starts[k] != w) {
                k++;
            }
            if (k == ns && ns < 4096) {
                starts[ns++] = w;
            }
        }
    }
    for (size_t a = 0; a < ns; a++) {
        for (size_t b = a + 1; b < ns; b++) {
            if (starts[b] < starts[a]) {
                int64_t x = starts[a];
                starts[a] = starts[b];
                starts[b] = x;
            }
        }
    }
    static struct page pages[N_WIKIS * N_TITLES];
    for (size_t k = 0; k < ns; k++) {
        size_t np = 0;
        for (size_t s = 0; s < m->n_silver; s++) {
            const struct ev *e = &m->evs[m->silver[s]];
            if ((e->type != T_EDIT && e->type != T_NEW) || e->title < 0 || e->t < starts[k] ||
                e->t >= starts[k] + 10 * MINUTE) {
                continue;
            }
            size_t q = 0;
            while (q < np && !(pages[q].wiki == e->wiki && pages[q].title == e->title)) {
                q++;
            }
            if (q == np) {
                pages[np++] = (struct page){e->wiki, e->title, 0};
            }
            pages[q].count++;
        }
        for (size_t a = 0; a < np; a++) {
            for (size_t b = a + 1; b < np; b++) {
                if (page_before(&pages[b], &pages[a])) {
                    struct page x = pages[a];
                    pages[a] = pages[b];
                    pages[b] = x;
                }
            }
        }
        for (size_t r = 0; r < np && r < 20; r++) {
            char t[24];
            title_text(pages[r].title, t, sizeof t);
            tr_top(tr, starts[k], (unsigned)r + 1, wikis[pages[r].wiki],
                   strlen(wikis[pages[r].wiki]), t, strlen(t), pages[r].count);
        }
    }
}

static void model_run(const struct ev *evs, size_t n, int partitions, struct fr_buf *tr)
{
    struct model m = {.evs = evs, .wm = INT64_MIN};
    m.silver = malloc(n * sizeof *m.silver);
    for (int p = 0; p < 8; p++) {
        m.part_max[p] = INT64_MIN;
    }
    for (size_t i = 0; i < n; i++) {
        const struct ev *e = &evs[i];
        if (e->reject) {
            tr_record(tr, i, e->reject, 0);
            continue;
        }
        /* Rows settled by this record come before its own line, as the
         * operator's sink is called during fr_proc_record. */
        const char *outcome;
        int64_t before = m.wm, lateness = 0;
        if (before != INT64_MIN && e->t < before) {
            outcome = "late";
            lateness = before - e->t;
        } else {
            /* The key is live when its newest silver occurrence is not
             * behind the watermark. */
            int live = 0;
            for (size_t s = m.n_silver; s-- > 0;) {
                if (evs[m.silver[s]].id == e->id) {
                    live = evs[m.silver[s]].t >= before;
                    break;
                }
            }
            if (live) {
                outcome = "duplicate";
            } else {
                outcome = "silver";
                m.silver[m.n_silver++] = i;
            }
        }
        if (e->t > m.part_max[e->partition]) {
            m.part_max[e->partition] = e->t;
        }
        int64_t min = INT64_MAX;
        for (int p = 0; p < partitions; p++) {
            if (m.part_max[p] != INT64_MIN && m.part_max[p] < min) {
                min = m.part_max[p];
            }
        }
        int64_t cand = min - INT64_C(1000) * lateness_ms;
        if (cand > m.wm) {
            m.wm = cand;
        }
        if (m.wm > before &&
            (before == INT64_MIN || floor_div(m.wm, MINUTE) != floor_div(before, MINUTE) ||
             m.wm % MINUTE == 0)) {
            model_minutes(&m, before, m.wm, tr);
            model_top(&m, before, m.wm, tr);
        }
        tr_record(tr, i, outcome, lateness);
    }
    free(m.silver);
}

/* ------------------------------------------------------------------------ */
/* The operators                                                              */
/* ------------------------------------------------------------------------ */

static struct fr_proc *proc_new(const struct fr_proc_opts *opts)
{
    struct fr_proc *proc = NULL;
    if (fr_proc_create(opts, &proc) != FR_OK) {
        fprintf(stderr, "fr_proc_create failed\n");
        exit(1);
    }
    return proc;
}

static void proc_opts(struct fr_proc_opts *opts)
{
    fr_proc_opts_default(opts);
    opts->gate.max_event_bytes = 4096;
    opts->lateness_ms = lateness_ms;
    opts->max_partitions = 8;
}

/* Feed evs[from, to) into proc, writing the transcript. */
static void proc_feed(struct fr_proc *proc, const struct ev *evs, size_t from, size_t to,
                      struct fr_buf *tr)
{
    for (size_t i = from; i < to; i++) {
        const struct ev *e = &evs[i];
        struct fr_proc_pos pos = {e->partition, (int64_t)i, e->ingest_ms};
        struct fr_proc_result res;
        int rc = fr_proc_record(proc, &pos, e->json, e->len, &sink, tr, &res);
        if (rc != FR_OK) {
            fprintf(stderr, "fr_proc_record: %s\n", fr_strerror(rc));
            check_case_failed = 1;
            return;
        }
        switch (res.outcome) {
        case FR_PROC_REJECTED:
            tr_record(tr, i, fr_gate_reason_name(res.reason), 0);
            break;
        case FR_PROC_LATE:
            tr_record(tr, i, "late", res.lateness_us);
            break;
        case FR_PROC_DUPLICATE:
            tr_record(tr, i, "duplicate", 0);
            break;
        case FR_PROC_SILVER:
            tr_record(tr, i, "silver", 0);
            break;
        }
    }
}

/* Compare two transcripts; report the first difference. */
static int same_transcript(const struct fr_buf *a, const struct fr_buf *b, const char *what)
{
    if (a->len == b->len && memcmp(a->data, b->data, a->len) == 0) {
        return 1;
    }
    size_t i = 0, line = 1, start = 0;
    while (i < a->len && i < b->len && a->data[i] == b->data[i]) {
        if (a->data[i] == '\n') {
            line++;
            start = i + 1;
        }
        i++;
    }
    const char *x = (const char *)a->data + start, *y = (const char *)b->data + start;
    const char *xe = memchr(x, '\n', a->len - start), *ye = memchr(y, '\n', b->len - start);
    fprintf(stderr, "  %s: transcripts differ at line %zu:\n    want: %.*s\n    got:  %.*s\n", what,
            line, (int)(xe ? xe - x : 0), x, (int)(ye ? ye - y : 0), y);
    return 0;
}

static const struct gen_opts default_gen = {.partitions = 3,
                                            .rate_us = 500000,
                                            .dup_pct = 8,
                                            .sameid_pct = 3,
                                            .late_pct = 4,
                                            .bad_pct = 3,
                                            .jitter_us = 60000000};

static void test_model_seeds(void)
{
    size_t n = 4000;
    struct ev *evs = calloc(n, sizeof *evs);
    static const int64_t lateness[] = {120000, 0, 30000, 600000};
    for (uint64_t seed = 1; seed <= 12; seed++) {
        rng_state = seed * UINT64_C(0x9E3779B97F4A7C15);
        struct gen_opts g = default_gen;
        g.partitions = 1 + (int)(seed % 3);
        g.rate_us = seed % 2 ? 500000 : 2000000;
        lateness_ms = lateness[seed % 4];
        gen_stream(evs, n, &g);
        struct fr_buf want, got;
        fr_buf_init(&want, 64 << 20);
        fr_buf_init(&got, 64 << 20);
        model_run(evs, n, g.partitions, &want);
        struct fr_proc_opts opts;
        proc_opts(&opts);
        struct fr_proc *proc = proc_new(&opts);
        proc_feed(proc, evs, 0, n, &got);
        CHECK(same_transcript(&want, &got, "model vs fr_proc"));
        struct fr_proc_stats st;
        fr_proc_stats(proc, &st);
        CHECK_EQ_INT(st.records, n);
        CHECK_EQ_INT(st.valid, st.late + st.duplicates + st.silver);
        CHECK(st.late > 0 && st.duplicates > 0 && st.win.rows > 0 && st.top.rows > 0);
        CHECK_EQ_INT(st.dedup.forced_evictions, 0);
        if (seed == 1) {
            fprintf(stderr,
                    "  seed 1: %llu silver, %llu late, %llu dup, %llu minute rows, "
                    "%llu top rows, transcript %zu bytes\n",
                    (unsigned long long)st.silver, (unsigned long long)st.late,
                    (unsigned long long)st.duplicates, (unsigned long long)st.win.rows,
                    (unsigned long long)st.top.rows, got.len);
        }
        fr_proc_destroy(proc);
        fr_buf_free(&want);
        fr_buf_free(&got);
    }
    lateness_ms = 120000;
    free(evs);
}

/* Random cut points with save / destroy / create / load; random views. */
static void test_cuts_and_views(void)
{
    size_t n = 3000;
    struct ev *evs = calloc(n, sizeof *evs);
    for (uint64_t seed = 11; seed <= 14; seed++) {
        rng_state = seed * UINT64_C(0x9E3779B97F4A7C15);
        struct gen_opts g = default_gen;
        g.partitions = 2;
        gen_stream(evs, n, &g);
        struct fr_proc_opts opts;
        proc_opts(&opts);
        struct fr_buf straight, cut, viewed, blob, again;
        fr_buf_init(&straight, 64 << 20);
        fr_buf_init(&cut, 64 << 20);
        fr_buf_init(&viewed, 64 << 20);
        fr_buf_init(&blob, 64 << 20);
        fr_buf_init(&again, 64 << 20);
        struct fr_proc *proc = proc_new(&opts);
        proc_feed(proc, evs, 0, n, &straight);
        fr_proc_destroy(proc);

        proc = proc_new(&opts);
        size_t at = 0;
        int cuts = 0;
        while (at < n) {
            size_t step = 1 + rnd_below(300);
            size_t to = at + step < n ? at + step : n;
            proc_feed(proc, evs, at, to, &cut);
            at = to;
            fr_buf_reset(&blob);
            CHECK_EQ_INT(fr_proc_save(proc, &blob), FR_OK);
            fr_proc_destroy(proc);
            proc = proc_new(&opts);
            CHECK_EQ_INT(fr_proc_load(proc, blob.data, blob.len), FR_OK);
            fr_buf_reset(&again);
            CHECK_EQ_INT(fr_proc_save(proc, &again), FR_OK);
            CHECK(blob.len == again.len && memcmp(blob.data, again.data, blob.len) == 0);
            cuts++;
        }
        CHECK(same_transcript(&straight, &cut, "straight vs save/load cuts"));
        fr_proc_destroy(proc);

        static struct fr_proc_view view;
        proc = proc_new(&opts);
        for (at = 0; at < n;) {
            size_t to = at + 1 + rnd_below(100) < n ? at + 1 + rnd_below(100) : n;
            proc_feed(proc, evs, at, to, &viewed);
            fr_proc_view(proc, &view);
            CHECK(view.n_groups <= FR_VIEW_MAX_GROUPS && view.n_top <= FR_TOP_N);
            for (size_t k = 0; k < view.n_groups; k++) {
                CHECK(view.groups[k].window_end_us > view.watermark_us);
            }
            at = to;
        }
        CHECK(same_transcript(&straight, &viewed, "straight vs with views"));
        fr_proc_destroy(proc);
        if (seed == 11) {
            fprintf(stderr, "  seed 11: %d save/load cuts, last state %zu bytes\n", cuts, blob.len);
        }
        fr_buf_free(&straight);
        fr_buf_free(&cut);
        fr_buf_free(&viewed);
        fr_buf_free(&blob);
        fr_buf_free(&again);
    }
    free(evs);
}

/* The provisional view against the silver rows still in open windows. */
static void test_view_contents(void)
{
    size_t n = 1500;
    struct ev *evs = calloc(n, sizeof *evs);
    size_t *silver = calloc(n, sizeof *silver);
    size_t n_silver = 0;
    rng_state = 99;
    struct gen_opts g = default_gen;
    g.partitions = 1;
    gen_stream(evs, n, &g);
    struct fr_proc_opts opts;
    proc_opts(&opts);
    struct fr_proc *proc = proc_new(&opts);
    for (size_t i = 0; i < n; i++) {
        struct fr_proc_pos pos = {evs[i].partition, (int64_t)i, evs[i].ingest_ms};
        struct fr_proc_result res;
        CHECK_EQ_INT(fr_proc_record(proc, &pos, evs[i].json, evs[i].len, NULL, NULL, &res), FR_OK);
        if (res.outcome == FR_PROC_SILVER) {
            silver[n_silver++] = i;
        }
    }
    static struct fr_proc_view view;
    fr_proc_view(proc, &view);
    struct fr_proc_stats st;
    fr_proc_stats(proc, &st);
    CHECK_EQ_INT(view.watermark_us, st.watermark_us);
    CHECK_EQ_INT(view.max_event_us - view.watermark_us, INT64_C(1000) * lateness_ms);
    CHECK_EQ_INT(view.n_groups, st.win.groups);
    CHECK_EQ_INT(view.truncated, 0);
    uint64_t events = 0;
    for (size_t k = 0; k < view.n_groups; k++) {
        const struct fr_win_row *row = &view.groups[k];
        events += row->counts.events;
        CHECK(row->window_end_us > view.watermark_us);
        CHECK(row->wiki.s >= view.text && row->wiki.s < view.text + view.text_len);
        if (k > 0) {
            /* Newest window first, then wiki ascending. */
            const struct fr_win_row *prev = &view.groups[k - 1];
            size_t l = prev->wiki.len < row->wiki.len ? prev->wiki.len : row->wiki.len;
            int c = memcmp(prev->wiki.s, row->wiki.s, l);
            CHECK(prev->window_start_us > row->window_start_us ||
                  (prev->window_start_us == row->window_start_us &&
                   (c < 0 || (c == 0 && prev->wiki.len < row->wiki.len))));
        }
    }
    uint64_t open = 0;
    for (size_t s = 0; s < n_silver; s++) {
        open += floor_div(evs[silver[s]].t, MINUTE) + MINUTE > view.watermark_us;
    }
    CHECK_EQ_INT(events, open);
    /* Top pages of the newest 10 minutes: counts match the silver rows. */
    CHECK(view.n_top > 0 && view.n_top <= FR_TOP_N);
    CHECK_EQ_INT(view.top_end_us - view.top_start_us, 10 * MINUTE);
    CHECK_EQ_INT(view.top_end_us, floor_div(view.max_event_us, MINUTE) + MINUTE);
    for (size_t r = 0; r < view.n_top; r++) {
        const struct fr_top_row *row = &view.top[r];
        CHECK_EQ_INT(row->rank, r + 1);
        if (r > 0) {
            CHECK(view.top[r - 1].count >= row->count);
        }
        uint64_t want = 0;
        for (size_t s = 0; s < n_silver; s++) {
            const struct ev *e = &evs[silver[s]];
            char t[24];
            if ((e->type != T_EDIT && e->type != T_NEW) || e->title < 0 ||
                e->t < view.top_start_us || e->t >= view.top_end_us) {
                continue;
            }
            title_text(e->title, t, sizeof t);
            want += strlen(wikis[e->wiki]) == row->wiki.len &&
                    memcmp(wikis[e->wiki], row->wiki.s, row->wiki.len) == 0 &&
                    strlen(t) == row->title.len && memcmp(t, row->title.s, row->title.len) == 0;
        }
        CHECK_EQ_INT(row->count, want);
    }
    fr_proc_destroy(proc);
    free(silver);
    free(evs);
}

/* A long stream: state stays bounded by rate x lateness. */
static void test_bounded_state(void)
{
    size_t n = 60000;
    struct ev *evs = calloc(n, sizeof *evs);
    rng_state = 7;
    struct gen_opts g = {.partitions = 2,
                         .rate_us = 100000,
                         .dup_pct = 5,
                         .sameid_pct = 0,
                         .late_pct = 2,
                         .bad_pct = 0,
                         .jitter_us = 30000000,
                         .unit_us = 1000};
    gen_stream(evs, n, &g);
    struct fr_proc_opts opts;
    proc_opts(&opts);
    struct fr_proc *proc = proc_new(&opts);
    struct fr_buf tr;
    fr_buf_init(&tr, 256 << 20);
    uint64_t max_keys = 0, max_groups = 0, max_panes = 0, bytes_mid = 0, max_bytes_late = 0;
    for (size_t at = 0; at < n; at += 1000) {
        proc_feed(proc, evs, at, at + 1000, &tr);
        struct fr_proc_stats st;
        fr_proc_stats(proc, &st);
        max_keys = st.dedup.keys > max_keys ? st.dedup.keys : max_keys;
        max_groups = st.win.groups > max_groups ? st.win.groups : max_groups;
        max_panes = st.top.panes > max_panes ? st.top.panes : max_panes;
        uint64_t bytes = st.dedup.bytes + st.win.bytes + st.top.bytes;
        if (at == n / 2) {
            bytes_mid = bytes;
        }
        if (at > n / 2 && bytes > max_bytes_late) {
            max_bytes_late = bytes;
        }
    }
    /* ~10 events per event-second, lateness 120 s plus 30 s jitter: a
     * dedup key lives at most ~150 s of event time, so ~1500 keys; minute
     * groups: 8 wikis x (lateness + jitter + 1 min) / 1 min; panes: 10 +
     * that span. */
    fprintf(stderr,
            "  %zu events: peak %llu keys, %llu groups, %llu panes; state bytes %llu "
            "at half, peak %llu after\n",
            n, (unsigned long long)max_keys, (unsigned long long)max_groups,
            (unsigned long long)max_panes, (unsigned long long)bytes_mid,
            (unsigned long long)max_bytes_late);
    CHECK(max_keys > 500 && max_keys < 2500);
    CHECK(max_groups <= N_WIKIS * 5);
    CHECK(max_panes <= 16);
    CHECK(max_bytes_late < 2 * bytes_mid);
    struct fr_proc_stats st;
    fr_proc_stats(proc, &st);
    CHECK(st.dedup.expired > st.dedup.inserts - 2500);
    CHECK_EQ_INT(st.dedup.forced_evictions, 0);
    fr_buf_free(&tr);
    fr_proc_destroy(proc);
    free(evs);
}

/* The idle hook through fr_proc: a silent partition holds the watermark
 * until it is marked idle, which settles what it held back. */
static void test_idle_hook(void)
{
    struct fr_proc_opts opts;
    proc_opts(&opts);
    struct fr_proc *proc = proc_new(&opts);
    struct fr_buf tr;
    fr_buf_init(&tr, 1 << 20);
    char ev[256];
    char dt[32];
    for (int i = 0; i < 40; i++) {
        int64_t t = T0_US + (int64_t)i * 30 * 1000000;
        fr_time_format_ms(t, dt);
        snprintf(ev, sizeof ev,
                 "{\"meta\":{\"id\":\"%08x-0000-4000-8000-000000000000\",\"dt\":\"%s\"},"
                 "\"wiki\":\"w\",\"type\":\"edit\",\"title\":\"T\"}",
                 i, dt);
        /* Partition 1 speaks once, at the start. */
        struct fr_proc_pos pos = {i == 0 ? 1 : 0, i, t / 1000 + 1000};
        struct fr_proc_result res;
        CHECK_EQ_INT(fr_proc_record(proc, &pos, ev, strlen(ev), &sink, &tr, &res), FR_OK);
        CHECK_EQ_INT(res.outcome, FR_PROC_SILVER);
    }
    struct fr_proc_stats st;
    fr_proc_stats(proc, &st);
    /* Held at partition 1's only event minus lateness: nothing settled. */
    CHECK_EQ_INT(st.watermark_us, T0_US - INT64_C(1000) * lateness_ms);
    CHECK_EQ_INT(tr.len, 0);
    CHECK_EQ_INT(st.dedup.keys, 40);
    CHECK_EQ_INT(fr_proc_set_idle(proc, 1, 1, &sink, &tr), FR_OK);
    fr_proc_stats(proc, &st);
    CHECK_EQ_INT(st.watermark_us, T0_US + 39 * 30 * INT64_C(1000000) - INT64_C(1000) * lateness_ms);
    CHECK(st.win.rows == 17 && st.top.windows > 0 && tr.len > 0);
    CHECK(st.dedup.keys < 10);
    CHECK_EQ_INT(fr_proc_set_idle(proc, 9, 1, &sink, &tr), FR_EINVAL);
    struct fr_proc_pos bad = {9, 0, 0};
    struct fr_proc_result res;
    CHECK_EQ_INT(fr_proc_record(proc, &bad, "{}", 2, &sink, &tr, &res), FR_EINVAL);
    fr_buf_free(&tr);
    fr_proc_destroy(proc);
}

int main(void)
{
    RUN(test_model_seeds);
    RUN(test_cuts_and_views);
    RUN(test_view_contents);
    RUN(test_bounded_state);
    RUN(test_idle_hook);
    return check_report();
}
