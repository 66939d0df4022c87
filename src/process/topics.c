/*
 * topics.c — gold_top_topics: for every minute s, the window [s, s + 10 min)
 * ranks the Wikidata items of the enriched edits by count across all wikis
 * and keeps the top 20: edits descending, then the item number ascending,
 * ranks 1..20; each row also carries the number of distinct wikis that
 * edited the item in the window and its top 3 wikis (edits descending, then
 * the wiki name ascending, bytewise).
 *
 * Panes: each resolved edit is counted once in the 1-minute pane that holds
 * its event time, keyed by (item, wiki). A window sums its ten panes when it
 * is settled; rows are never rescanned. Settling follows a frontier the
 * caller supplies (fr_topics_advance): the processor passes the minimum of
 * the watermark and the event time of the oldest edit whose lookup is still
 * outstanding, so a window is emitted once, after every lookup of an edit in
 * it has an answer (docs/SEMANTICS.md, "gold_top_topics"). The frontier
 * never moves back (a smaller one is ignored). A pane is dropped once the
 * window starting at it is settled.
 *
 * Wikis are interned: a table of names, ids in first-seen order, capped
 * (max_wikis); entries refer to ids. Caps are logical (entries, wikis): an
 * edit whose (item, wiki) is new to its pane when a cap is reached is not
 * counted (dropped_keys); an edit for a pane no open window needs is
 * dropped_closed. One thread at a time.
 *
 * Labels (issue 33): each (pane, item, wiki) entry keeps the label of the
 * last edit added for it (NULL: none). A row's label is the one its top
 * wiki (top[0]) holds in the newest pane of the window that has one, so a
 * topic reads in the language of the wiki that edits it most. Label text
 * is capped in total (TT_LABEL_BYTES); past it a label is not kept
 * (dropped_labels) and rows may go without one.
 *
 * Saved state (envelope "FRTT", version 2; body, little-endian; version 1
 * is version 2 without the labels and loads with none):
 *
 *   size  field
 *   8     next_start (INT64_MIN: nothing settled yet)
 *   8 x 4 windows, rows, dropped_keys, dropped_closed
 *   4     w wikis, in id order, each { 4+n name }
 *   4     p panes, ascending start, each start >= next_start
 *   p x   { 8 start_us, 4 e entries (insertion order),
 *           e x { 8 item, 4 wiki id (< w), 8 count (>= 1),
 *                 v2: 4+n label (n = 0: none) } }
 */
#include "process/process_int.h"

#include "core/err.h"

#include <stdlib.h>

#define TT_MAGIC "FRTT"
#define TT_VERSION 2
#define TT_LABEL_BYTES ((size_t)64 << 20)
#define TT_PANES (FR_TOP_WINDOW_US / FR_PROC_MINUTE_US)

struct tt_entry {
    uint64_t item;
    uint32_t wiki;
    uint32_t label_len;
    uint64_t count;
    char *label; /* NULL: none */
};

struct tt_pane {
    int64_t start;
    struct tt_entry *entries;
    uint32_t n, alloc;
    uint32_t *index; /* entry + 1; 0 empty */
    uint32_t mask;
};

struct tt_wiki {
    uint64_t hash;
    uint32_t off, len;
};

/* One item while a window is combined. */
struct tt_slot {
    uint64_t item, count;
    uint32_t gen;
    int rank; /* 0, or 1..FR_TOP_N once selected */
};

struct fr_topics {
    struct fr_topics_opts opts;
    struct tt_pane *panes; /* ascending start */
    uint32_t n_panes, alloc;
    int64_t next_start;
    struct tt_wiki *wikis;
    uint32_t n_wikis, wikis_alloc;
    uint32_t *wiki_index, wiki_mask;
    char *wiki_text;
    size_t wiki_text_len, wiki_text_alloc;
    struct tt_slot *scratch;
    uint32_t scratch_mask, gen;
    uint64_t entries;
    size_t label_bytes;
    struct fr_topics_stats st;
};

static uint64_t tt_key_hash(uint64_t item, uint32_t wiki)
{
    return fr_proc_mix64(item * UINT64_C(0x9e3779b97f4a7c15) ^ wiki);
}

/* ------------------------------------------------------------------ wikis */

/* The id of wiki into *id, interning it: FR_OK, 1 at the cap (or when
 * absent and !add), FR_ENOMEM. */
static int tt_wiki_id(struct fr_topics *t, const char *wiki, uint32_t len, int add, uint32_t *id)
{
    uint64_t h = fr_proc_hash(wiki, len, 0x7717);
    if (t->wiki_index) {
        for (uint32_t i = (uint32_t)h & t->wiki_mask; t->wiki_index[i];
             i = (i + 1) & t->wiki_mask) {
            const struct tt_wiki *w = &t->wikis[t->wiki_index[i] - 1];
            if (w->hash == h && w->len == len && memcmp(t->wiki_text + w->off, wiki, len) == 0) {
                *id = t->wiki_index[i] - 1;
                return FR_OK;
            }
        }
    }
    if (!add || t->n_wikis >= t->opts.max_wikis || len > FR_PROC_WIKI_MAX) {
        return 1;
    }
    if (!t->wiki_index || (uint64_t)(t->n_wikis + 1) * 2 > (uint64_t)t->wiki_mask + 1) {
        uint32_t nslots = t->wiki_index ? (t->wiki_mask + 1) * 2 : 64;
        uint32_t *index = calloc(nslots, sizeof *index);
        if (!index) {
            return FR_ENOMEM;
        }
        for (uint32_t k = 0; k < t->n_wikis; k++) {
            uint32_t i = (uint32_t)t->wikis[k].hash & (nslots - 1);
            while (index[i]) {
                i = (i + 1) & (nslots - 1);
            }
            index[i] = k + 1;
        }
        free(t->wiki_index);
        t->wiki_index = index;
        t->wiki_mask = nslots - 1;
    }
    if (t->n_wikis == t->wikis_alloc) {
        uint32_t n = t->wikis_alloc ? t->wikis_alloc * 2 : 64;
        struct tt_wiki *w = realloc(t->wikis, (size_t)n * sizeof *w);
        if (!w) {
            return FR_ENOMEM;
        }
        t->wikis = w;
        t->wikis_alloc = n;
    }
    if (!t->wiki_text || t->wiki_text_len + len > t->wiki_text_alloc) {
        size_t n = t->wiki_text_alloc ? t->wiki_text_alloc : 4096;
        while (n < t->wiki_text_len + len) {
            n *= 2;
        }
        char *text = realloc(t->wiki_text, n);
        if (!text) {
            return FR_ENOMEM;
        }
        t->wiki_text = text;
        t->wiki_text_alloc = n;
    }
    memcpy(t->wiki_text + t->wiki_text_len, wiki, len);
    t->wikis[t->n_wikis] = (struct tt_wiki){h, (uint32_t)t->wiki_text_len, len};
    t->wiki_text_len += len;
    uint32_t i = (uint32_t)h & t->wiki_mask;
    while (t->wiki_index[i]) {
        i = (i + 1) & t->wiki_mask;
    }
    t->wiki_index[i] = ++t->n_wikis;
    *id = t->n_wikis - 1;
    return FR_OK;
}

static struct fr_proc_str tt_wiki_name(const struct fr_topics *t, uint32_t id)
{
    return (struct fr_proc_str){t->wiki_text + t->wikis[id].off, t->wikis[id].len};
}

/* ------------------------------------------------------------------ panes */

static void tt_drop_front(struct fr_topics *t, uint32_t n)
{
    if (n == 0) {
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        t->entries -= t->panes[i].n;
        for (uint32_t j = 0; j < t->panes[i].n; j++) {
            t->label_bytes -= t->panes[i].entries[j].label_len;
            free(t->panes[i].entries[j].label);
        }
        free(t->panes[i].entries);
        free(t->panes[i].index);
    }
    memmove(&t->panes[0], &t->panes[n], (size_t)(t->n_panes - n) * sizeof *t->panes);
    t->n_panes -= n;
}

static struct tt_pane *tt_pane_get(struct fr_topics *t, int64_t start)
{
    uint32_t i = t->n_panes;
    while (i > 0 && t->panes[i - 1].start > start) {
        i--;
    }
    if (i > 0 && t->panes[i - 1].start == start) {
        return &t->panes[i - 1];
    }
    if (t->n_panes == t->alloc) {
        uint32_t n = t->alloc ? t->alloc * 2 : 16;
        struct tt_pane *panes = realloc(t->panes, (size_t)n * sizeof *panes);
        if (!panes) {
            return NULL;
        }
        t->panes = panes;
        t->alloc = n;
    }
    memmove(&t->panes[i + 1], &t->panes[i], (size_t)(t->n_panes - i) * sizeof *t->panes);
    t->n_panes++;
    memset(&t->panes[i], 0, sizeof t->panes[i]);
    t->panes[i].start = start;
    return &t->panes[i];
}

static struct tt_entry *tt_pane_find(const struct tt_pane *pane, uint64_t item, uint32_t wiki)
{
    if (!pane->index) {
        return NULL;
    }
    uint64_t h = tt_key_hash(item, wiki);
    for (uint32_t i = (uint32_t)h & pane->mask; pane->index[i]; i = (i + 1) & pane->mask) {
        struct tt_entry *e = &pane->entries[pane->index[i] - 1];
        if (e->item == item && e->wiki == wiki) {
            return e;
        }
    }
    return NULL;
}

/* Keep label[0..len) as e's label (the last one added wins). FR_ENOMEM. */
static int tt_entry_label(struct fr_topics *t, struct tt_entry *e, const char *label, size_t len)
{
    if (!label || len == 0 ||
        (e->label && e->label_len == len && memcmp(e->label, label, len) == 0)) {
        return FR_OK;
    }
    if (len > UINT32_MAX || t->label_bytes - e->label_len + len > TT_LABEL_BYTES) {
        t->st.dropped_labels++;
        return FR_OK;
    }
    char *copy = malloc(len);
    if (!copy) {
        return FR_ENOMEM;
    }
    memcpy(copy, label, len);
    t->label_bytes = t->label_bytes - e->label_len + len;
    free(e->label);
    e->label = copy;
    e->label_len = (uint32_t)len;
    return FR_OK;
}

/* Add count to (item, wiki) in pane with label (may be NULL): FR_OK, 1
 * when the cap refused a new pair, FR_ENOMEM. */
static int tt_pane_add(struct fr_topics *t, struct tt_pane *pane, uint64_t item, uint32_t wiki,
                       uint64_t count, const char *label, size_t label_len)
{
    uint64_t h = tt_key_hash(item, wiki);
    struct tt_entry *found = tt_pane_find(pane, item, wiki);
    if (found) {
        found->count = fr_proc_sat_add(found->count, count);
        return tt_entry_label(t, found, label, label_len);
    }
    if (t->entries >= t->opts.max_entries) {
        return 1;
    }
    if (!pane->index || (uint64_t)(pane->n + 1) * 2 > (uint64_t)pane->mask + 1) {
        uint32_t nslots = pane->index ? (pane->mask + 1) * 2 : 64;
        uint32_t *index = calloc(nslots, sizeof *index);
        if (!index) {
            return FR_ENOMEM;
        }
        for (uint32_t k = 0; k < pane->n; k++) {
            uint32_t i =
                (uint32_t)tt_key_hash(pane->entries[k].item, pane->entries[k].wiki) & (nslots - 1);
            while (index[i]) {
                i = (i + 1) & (nslots - 1);
            }
            index[i] = k + 1;
        }
        free(pane->index);
        pane->index = index;
        pane->mask = nslots - 1;
    }
    if (pane->n == pane->alloc) {
        uint32_t n = pane->alloc ? pane->alloc * 2 : 32;
        struct tt_entry *entries = realloc(pane->entries, (size_t)n * sizeof *entries);
        if (!entries) {
            return FR_ENOMEM;
        }
        pane->entries = entries;
        pane->alloc = n;
    }
    pane->entries[pane->n] = (struct tt_entry){item, wiki, 0, count, NULL};
    uint32_t i = (uint32_t)h & pane->mask;
    while (pane->index[i]) {
        i = (i + 1) & pane->mask;
    }
    pane->index[i] = ++pane->n;
    t->entries++;
    return tt_entry_label(t, &pane->entries[pane->n - 1], label, label_len);
}

/* ---------------------------------------------------------------- windows */

static int tt_before(const struct tt_slot *a, const struct tt_slot *b)
{
    return a->count != b->count ? a->count > b->count : a->item < b->item;
}

static struct tt_slot *tt_slot_find(struct fr_topics *t, uint64_t item, int add)
{
    for (uint32_t i = (uint32_t)fr_proc_mix64(item) & t->scratch_mask;;
         i = (i + 1) & t->scratch_mask) {
        struct tt_slot *s = &t->scratch[i];
        if (s->gen != t->gen) {
            if (!add) {
                return NULL;
            }
            *s = (struct tt_slot){item, 0, t->gen, 0};
            return s;
        }
        if (s->item == item) {
            return s;
        }
    }
}

struct tt_wc {
    uint32_t rank, wiki;
    uint64_t count;
};

static int tt_wc_cmp(const void *x, const void *y)
{
    const struct tt_wc *a = x, *b = y;
    if (a->rank != b->rank) {
        return a->rank < b->rank ? -1 : 1;
    }
    return (a->wiki > b->wiki) - (a->wiki < b->wiki);
}

/* Combine the panes [first, last) of the window starting at s into rows,
 * handing each to emit (rows[] when emit is NULL, *n set). */
static int tt_window(struct fr_topics *t, int64_t s, uint32_t first, uint32_t last,
                     fr_topics_emit_fn emit, void *arg, struct fr_topic_row *rows, uint32_t *nrows)
{
    uint64_t total = 0;
    for (uint32_t k = first; k < last; k++) {
        total += t->panes[k].n;
    }
    uint64_t want = 64;
    while (want < total * 2) {
        want *= 2;
    }
    if (!t->scratch || want > (uint64_t)t->scratch_mask + 1) {
        if (want > ((uint64_t)1 << 31)) {
            return FR_ENOMEM;
        }
        struct tt_slot *scratch = calloc((size_t)want, sizeof *scratch);
        if (!scratch) {
            return FR_ENOMEM;
        }
        free(t->scratch);
        t->scratch = scratch;
        t->scratch_mask = (uint32_t)(want - 1);
        t->gen = 0;
    }
    if (++t->gen == 0) {
        for (uint32_t i = 0; i <= t->scratch_mask; i++) {
            t->scratch[i].gen = 0;
        }
        t->gen = 1;
    }
    struct tt_slot *best[FR_TOP_N];
    uint32_t n = 0;
    for (uint32_t k = first; k < last; k++) {
        for (uint32_t j = 0; j < t->panes[k].n; j++) {
            const struct tt_entry *e = &t->panes[k].entries[j];
            struct tt_slot *sl = tt_slot_find(t, e->item, 1);
            sl->count = fr_proc_sat_add(sl->count, e->count);
        }
    }
    for (uint32_t i = 0; i <= t->scratch_mask; i++) {
        struct tt_slot *sl = &t->scratch[i];
        if (sl->gen != t->gen || (n == FR_TOP_N && !tt_before(sl, best[FR_TOP_N - 1]))) {
            continue;
        }
        uint32_t at = n < FR_TOP_N ? n++ : FR_TOP_N - 1;
        while (at > 0 && tt_before(sl, best[at - 1])) {
            best[at] = best[at - 1];
            at--;
        }
        best[at] = sl;
    }
    if (n == 0) {
        *nrows = 0;
        return FR_OK;
    }
    for (uint32_t r = 0; r < n; r++) {
        best[r]->rank = (int)r + 1;
    }
    /* The selected items' edits by wiki. */
    size_t nwc = 0, capwc = 256;
    struct tt_wc *wc = malloc(capwc * sizeof *wc);
    if (!wc) {
        return FR_ENOMEM;
    }
    for (uint32_t k = first; k < last; k++) {
        for (uint32_t j = 0; j < t->panes[k].n; j++) {
            const struct tt_entry *e = &t->panes[k].entries[j];
            const struct tt_slot *sl = tt_slot_find(t, e->item, 0);
            if (!sl || sl->rank == 0) {
                continue;
            }
            if (nwc == capwc) {
                struct tt_wc *bigger = realloc(wc, capwc * 2 * sizeof *wc);
                if (!bigger) {
                    free(wc);
                    return FR_ENOMEM;
                }
                wc = bigger;
                capwc *= 2;
            }
            wc[nwc++] = (struct tt_wc){(uint32_t)sl->rank, e->wiki, e->count};
        }
    }
    qsort(wc, nwc, sizeof *wc, tt_wc_cmp);
    struct fr_topic_row row_buf[FR_TOP_N];
    struct fr_topic_row *out = rows ? rows : row_buf;
    size_t at = 0;
    int rc = FR_OK;
    for (uint32_t r = 0; r < n; r++) {
        struct fr_topic_row *row = &out[r];
        memset(row, 0, sizeof *row);
        row->window_start_us = s;
        row->window_end_us = s + FR_TOP_WINDOW_US;
        row->rank = r + 1;
        row->item = best[r]->item;
        row->edits = best[r]->count;
        while (at < nwc && wc[at].rank == r + 1) {
            uint32_t wiki = wc[at].wiki;
            uint64_t c = 0;
            while (at < nwc && wc[at].rank == r + 1 && wc[at].wiki == wiki) {
                c = fr_proc_sat_add(c, wc[at].count);
                at++;
            }
            row->wikis++;
            struct fr_proc_str name = tt_wiki_name(t, wiki);
            /* Bounded insertion into the top 3: edits desc, name asc. */
            uint32_t pos = row->n_top < FR_TOPICS_TOP_WIKIS ? row->n_top++ : FR_TOPICS_TOP_WIKIS;
            while (pos > 0) {
                const struct fr_topic_wiki *p = &row->top[pos - 1];
                int before = c != p->edits ? c > p->edits
                                           : fr_proc_strcmp(name.s, name.len, p->wiki.s,
                                                            p->wiki.len) < 0;
                if (!before) {
                    break;
                }
                if (pos < FR_TOPICS_TOP_WIKIS) {
                    row->top[pos] = *p;
                }
                pos--;
            }
            if (pos < FR_TOPICS_TOP_WIKIS) {
                row->top[pos] = (struct fr_topic_wiki){name, c};
            }
        }
        /* The label its top wiki holds, newest pane first. */
        uint32_t top_id = 0;
        if (row->n_top > 0 &&
            tt_wiki_id(t, row->top[0].wiki.s, (uint32_t)row->top[0].wiki.len, 0, &top_id) == 0) {
            for (uint32_t k = last; k > first; k--) {
                const struct tt_entry *e = tt_pane_find(&t->panes[k - 1], row->item, top_id);
                if (e && e->label) {
                    row->label = (struct fr_proc_str){e->label, e->label_len};
                    break;
                }
            }
        }
        if (emit) {
            t->st.rows++;
            rc = emit(arg, row);
            if (rc != 0) {
                break;
            }
        }
    }
    free(wc);
    *nrows = n;
    return rc;
}

static void tt_window_panes(const struct fr_topics *t, int64_t s, uint32_t *first, uint32_t *last)
{
    uint32_t a = 0;
    while (a < t->n_panes && t->panes[a].start < s) {
        a++;
    }
    uint32_t b = a;
    while (b < t->n_panes && t->panes[b].start < s + FR_TOP_WINDOW_US) {
        b++;
    }
    *first = a;
    *last = b;
}

/* ------------------------------------------------------------------ API */

int fr_topics_create(const struct fr_topics_opts *opts, struct fr_topics **out)
{
    *out = NULL;
    if (!opts || opts->max_entries < 1 || opts->max_entries > ((uint64_t)1 << 30) ||
        opts->max_wikis < 1 || opts->max_wikis > ((uint64_t)1 << 20)) {
        return FR_EINVAL;
    }
    struct fr_topics *t = calloc(1, sizeof *t);
    if (!t) {
        return FR_ENOMEM;
    }
    t->opts = *opts;
    t->next_start = INT64_MIN;
    *out = t;
    return FR_OK;
}

void fr_topics_destroy(struct fr_topics *t)
{
    if (!t) {
        return;
    }
    tt_drop_front(t, t->n_panes);
    free(t->panes);
    free(t->wikis);
    free(t->wiki_index);
    free(t->wiki_text);
    free(t->scratch);
    free(t);
}

int fr_topics_add(struct fr_topics *t, int64_t event_us, uint64_t item, const char *wiki,
                  size_t wiki_len, const char *label, size_t label_len)
{
    if (!FR_PROC_TIME_OK(event_us) || wiki_len > FR_PROC_WIKI_MAX ||
        label_len > FR_ENRICH_LABEL_BYTES) {
        return FR_EINVAL;
    }
    int64_t start = fr_proc_floor(event_us, FR_PROC_MINUTE_US);
    if (t->next_start != INT64_MIN && start < t->next_start) {
        t->st.dropped_closed++;
        return FR_OK;
    }
    uint32_t id = 0;
    int rc = tt_wiki_id(t, wiki, (uint32_t)wiki_len, 1, &id);
    if (rc != FR_OK) {
        if (rc == 1) {
            t->st.dropped_keys++;
        }
        return rc < 0 ? rc : FR_OK;
    }
    struct tt_pane *pane = tt_pane_get(t, start);
    if (!pane) {
        return FR_ENOMEM;
    }
    rc = tt_pane_add(t, pane, item, id, 1, label, label_len);
    if (pane->n == 0) { /* a new pane the cap left empty */
        uint32_t i = (uint32_t)(pane - t->panes);
        free(pane->index);
        memmove(pane, pane + 1, (size_t)(t->n_panes - i - 1) * sizeof *pane);
        t->n_panes--;
    }
    if (rc == 1) {
        t->st.dropped_keys++;
        return FR_OK;
    }
    return rc;
}

int fr_topics_advance(struct fr_topics *t, int64_t frontier_us, fr_topics_emit_fn emit, void *arg)
{
    if (frontier_us == FR_PROC_WM_NONE || !FR_PROC_TIME_OK(frontier_us)) {
        return FR_OK;
    }
    /* The last window start settled at this frontier. */
    int64_t s_max = fr_proc_floor(frontier_us - FR_TOP_WINDOW_US, FR_PROC_MINUTE_US);
    if (t->next_start != INT64_MIN && s_max < t->next_start) {
        return FR_OK; /* the frontier did not move past the next window */
    }
    int64_t s = t->next_start;
    while (t->n_panes) {
        int64_t lo = t->panes[0].start - (TT_PANES - 1) * FR_PROC_MINUTE_US;
        if (s != INT64_MIN && s > lo) {
            lo = s;
        }
        if (lo > s_max) {
            break;
        }
        uint32_t first, last, n;
        tt_window_panes(t, lo, &first, &last);
        int rc = tt_window(t, lo, first, last, emit, arg, NULL, &n);
        if (rc != 0) {
            return rc;
        }
        if (n) {
            t->st.windows++;
        }
        s = lo + FR_PROC_MINUTE_US;
        t->next_start = s;
        uint32_t done = 0;
        while (done < t->n_panes && t->panes[done].start < s) {
            done++;
        }
        tt_drop_front(t, done);
    }
    t->next_start = s_max + FR_PROC_MINUTE_US;
    uint32_t done = 0;
    while (done < t->n_panes && t->panes[done].start < t->next_start) {
        done++;
    }
    tt_drop_front(t, done);
    return FR_OK;
}

int64_t fr_topics_settled(const struct fr_topics *t)
{
    return t->next_start == INT64_MIN ? FR_PROC_WM_NONE
                                      : t->next_start - FR_PROC_MINUTE_US + FR_TOP_WINDOW_US;
}

int fr_topics_view(struct fr_topics *t, struct fr_topic_row rows[FR_TOP_N], uint32_t *n)
{
    *n = 0;
    if (!t->n_panes) {
        return FR_OK;
    }
    int64_t s = t->panes[t->n_panes - 1].start - (TT_PANES - 1) * FR_PROC_MINUTE_US;
    uint32_t first, last;
    tt_window_panes(t, s, &first, &last);
    return tt_window(t, s, first, last, NULL, NULL, rows, n);
}

void fr_topics_stats(const struct fr_topics *t, struct fr_topics_stats *stats)
{
    *stats = t->st;
    stats->panes = t->n_panes;
    stats->entries = t->entries;
    stats->wikis = t->n_wikis;
}

int fr_topics_save(const struct fr_topics *t, struct fr_buf *out)
{
    struct fr_proc_enc enc;
    fr_proc_enc_begin(&enc, out, TT_MAGIC, TT_VERSION);
    fr_proc_enc_i64(&enc, t->next_start);
    fr_proc_enc_u64(&enc, t->st.windows);
    fr_proc_enc_u64(&enc, t->st.rows);
    fr_proc_enc_u64(&enc, t->st.dropped_keys);
    fr_proc_enc_u64(&enc, t->st.dropped_closed);
    fr_proc_enc_u32(&enc, t->n_wikis);
    for (uint32_t w = 0; w < t->n_wikis; w++) {
        struct fr_proc_str name = tt_wiki_name(t, w);
        fr_proc_enc_str(&enc, name.s, name.len);
    }
    fr_proc_enc_u32(&enc, t->n_panes);
    for (uint32_t k = 0; k < t->n_panes; k++) {
        const struct tt_pane *pane = &t->panes[k];
        fr_proc_enc_i64(&enc, pane->start);
        fr_proc_enc_u32(&enc, pane->n);
        for (uint32_t j = 0; j < pane->n; j++) {
            fr_proc_enc_u64(&enc, pane->entries[j].item);
            fr_proc_enc_u32(&enc, pane->entries[j].wiki);
            fr_proc_enc_u64(&enc, pane->entries[j].count);
            fr_proc_enc_str(&enc, pane->entries[j].label ? pane->entries[j].label : "",
                            pane->entries[j].label_len);
        }
    }
    return fr_proc_enc_end(&enc);
}

int fr_topics_load(struct fr_topics *t, const void *bytes, size_t len)
{
    struct fr_topics *fresh = NULL;
    struct fr_proc_dec dec;
    int version = TT_VERSION;
    int rc = fr_proc_dec_begin(&dec, bytes, len, TT_MAGIC, TT_VERSION);
    if (rc == FR_ECORRUPT && fr_proc_dec_begin(&dec, bytes, len, TT_MAGIC, 1) == FR_OK) {
        version = 1; /* saved before labels */
        rc = FR_OK;
    }
    if (rc < 0) {
        return rc;
    }
    rc = fr_topics_create(&t->opts, &fresh);
    if (rc < 0) {
        return rc;
    }
    rc = FR_ECORRUPT;
    fresh->next_start = fr_proc_dec_i64(&dec);
    fresh->st.windows = fr_proc_dec_u64(&dec);
    fresh->st.rows = fr_proc_dec_u64(&dec);
    fresh->st.dropped_keys = fr_proc_dec_u64(&dec);
    fresh->st.dropped_closed = fr_proc_dec_u64(&dec);
    if (dec.err == FR_OK && fresh->next_start != INT64_MIN &&
        (!FR_PROC_TIME_OK(fresh->next_start) ||
         fr_proc_floor(fresh->next_start, FR_PROC_MINUTE_US) != fresh->next_start)) {
        goto cleanup;
    }
    uint32_t nw = fr_proc_dec_count(&dec, UINT32_MAX, 4);
    if (dec.err == FR_OK && nw > t->opts.max_wikis) {
        rc = FR_ETOOBIG;
        goto cleanup;
    }
    for (uint32_t w = 0; w < nw && dec.err == FR_OK; w++) {
        uint32_t wlen;
        const char *name = fr_proc_dec_str(&dec, FR_PROC_WIKI_MAX, &wlen);
        if (dec.err != FR_OK) {
            goto cleanup;
        }
        uint32_t id = 0;
        int wrc = tt_wiki_id(fresh, name, wlen, 1, &id);
        if (wrc != FR_OK || id != w) { /* out of memory, or a duplicate name */
            rc = wrc < 0 ? wrc : FR_ECORRUPT;
            goto cleanup;
        }
    }
    uint32_t np = fr_proc_dec_count(&dec, UINT32_MAX, 12);
    for (uint32_t k = 0; k < np && dec.err == FR_OK; k++) {
        int64_t start = fr_proc_dec_i64(&dec);
        uint32_t ne = fr_proc_dec_count(&dec, UINT32_MAX, 20);
        if (dec.err != FR_OK || ne == 0 || !FR_PROC_TIME_OK(start) ||
            fr_proc_floor(start, FR_PROC_MINUTE_US) != start ||
            (k > 0 && start <= fresh->panes[fresh->n_panes - 1].start) ||
            (fresh->next_start != INT64_MIN && start < fresh->next_start)) {
            goto cleanup;
        }
        struct tt_pane *pane = tt_pane_get(fresh, start);
        if (!pane) {
            rc = FR_ENOMEM;
            goto cleanup;
        }
        for (uint32_t j = 0; j < ne; j++) {
            uint64_t item = fr_proc_dec_u64(&dec);
            uint32_t wiki = fr_proc_dec_u32(&dec);
            uint64_t count = fr_proc_dec_u64(&dec);
            uint32_t llen = 0;
            const char *label = version >= 2 ? fr_proc_dec_str(&dec, FR_ENRICH_LABEL_BYTES, &llen)
                                             : NULL;
            if (dec.err != FR_OK || count == 0 || wiki >= fresh->n_wikis) {
                goto cleanup;
            }
            uint32_t before = pane->n;
            int arc = tt_pane_add(fresh, pane, item, wiki, count, label, llen);
            if (arc != FR_OK) {
                rc = arc < 0 ? arc : FR_ETOOBIG;
                goto cleanup;
            }
            if (pane->n == before) { /* a repeated (item, wiki) */
                goto cleanup;
            }
        }
    }
    rc = fr_proc_dec_end(&dec);
    if (rc < 0) {
        goto cleanup;
    }
    struct fr_topics tmp = *t;
    *t = *fresh;
    *fresh = tmp;
    rc = FR_OK;
cleanup:
    fr_topics_destroy(fresh);
    return rc;
}
