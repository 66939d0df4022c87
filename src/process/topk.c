/*
 * topk.c — gold_top_pages: for every minute s, the window [s, s + 10 min)
 * ranks the (wiki, title) pairs of the edit and new rows in silver by
 * count, and keeps the top 20: count descending, then wiki, then title
 * ascending (bytewise, shorter first on a common prefix), ranks 1..20.
 * Rows without a title are not counted.
 *
 * Panes: each silver row is counted once, in the 1-minute pane
 * [p, p + 1 min) that holds its event time. At emission, a settled window
 * is ranked from a hash map of its pairs' sums that slides from window to
 * window (the pane that leaves subtracted, the one that joins added:
 * top_combine_settled); a window too large for the map, and the
 * provisional view, merge the ten panes, each listed in (wiki, title)
 * order, summing the counts of equal pairs (top_combine_merge). Either
 * way the top 20 come from a bounded insertion, and rows are never
 * rescanned (docs/adr/0031). A pane is
 * frozen (packed, in that order: struct top_pane) once the watermark has
 * passed it, or earlier, once a row TOP_FREEZE_GRACE_US newer than its end
 * has been counted: in a live stream only the newest pane is then still
 * filling. A row that reaches an early-frozen pane (out of order by more
 * than the grace, yet on time) thaws it (counted in thaws), and its grace
 * doubles (top_frozen_early). Freezing and thawing change memory only,
 * never a pair, a count or an order. A window is emitted once, when the
 * watermark reaches its end (s + 10 min <= watermark), and only if it
 * holds a count (a window that holds one always holds its oldest pane, so
 * the emission loop walks panes, not empty minutes). Windows are emitted
 * in start order; next_start is the first window start not yet settled. A
 * pane is dropped once the last window containing it (the one starting at
 * it) is settled, so the retained panes span at most lateness + 10
 * minutes.
 *
 * Caps (logical, so they decide the same way after save/load): counters
 * (pane, wiki, title) and their text bytes. A row whose pair is new to its
 * pane when a cap is reached is not counted (dropped_keys); pairs already
 * in the pane keep counting. A row for a pane some settled window contains
 * (only possible when the operator is used without the watermark rule) is
 * dropped_closed. One thread at a time.
 *
 * Saved state (envelope "FRTK", version 1; body, little-endian):
 *
 *   size  field
 *   8     next_start (INT64_MIN: nothing settled yet)
 *   8 x 4 windows, rows, dropped_keys, dropped_closed
 *   4     p panes, ascending start, each start >= next_start
 *   p x   { 8 start_us, 4 e counters, ascending (wiki, title),
 *           e x { 4+n wiki, 4+n title, 8 count (>= 1) } }
 */
#include "process/process_int.h"

#include "core/err.h"

#include <stdlib.h>

#define TOP_MAGIC "FRTK"
#define TOP_VERSION 1
#define TOP_TITLE_MAX (1u << 20)
#define TOP_PANES_PER_WINDOW (FR_TOP_WINDOW_US / FR_PROC_MINUTE_US)
/* A pane is frozen early once a row this much newer than its end is counted. */
#define TOP_FREEZE_GRACE_US ((int64_t)10 * 1000000)
/* Titles up to this many bytes are front-coded in a frozen pane (share a
 * prefix with the previous title); a cursor rebuilds them in a buffer of
 * this size. Longer ones are stored whole and read in place. */
#define TOP_FC_MAX 255u

/* 24 bytes; the arrays of a live pane grow by half (not double), so a
 * pane holds at most a third more than it uses. */
struct top_entry {
    uint64_t count;
    uint32_t off;  /* wiki then title in the pane's text */
    uint32_t hash; /* top_hash, low 32 bits: index slot and probe filter */
    uint32_t wiki_len, title_len;
};

/* The order in which a pane's entries are saved (by wiki, then title),
 * kept from one save to the next: counts change in place and do not move
 * an entry in that order, so only a new entry makes it stale (n differs).
 * Most panes of a window are behind the watermark and never change again,
 * so a checkpoint sorts only the panes still filling. 4 bytes an entry,
 * bounded by opts.max_entries; not state (nor in st.bytes): a cache. */
struct top_saved {
    uint32_t *order;
    uint32_t n; /* entries order covers; valid while it equals pane->n */
    uint32_t cap;
};

/*
 * A pane is live (entries, text, hash index, saved order) while it can
 * still gain rows; then it is frozen into one packed byte string of its
 * pairs in (wiki, title) order, and the rest is freed. Packed record (in
 * memory only, never written to disk; LEB128 varints; a title front-coded
 * against the previous record's when both are at most TOP_FC_MAX bytes and
 * the wiki is the same):
 *
 *   varint  title_len << 2 | one << 1 | new_wiki
 *   varint  wiki_len     (only when new_wiki; the first record always is)
 *   bytes   wiki         (only when new_wiki; else the previous record's)
 *   varint  shared       (only when title_len <= TOP_FC_MAX: leading bytes
 *                         equal to the previous title's; 0 when new_wiki
 *                         or the previous title is longer than TOP_FC_MAX)
 *   bytes   title[shared .. title_len)
 *   varint  count        (only when not one: one is the count 1, which
 *                         most pairs of a minute have)
 *
 * About 16 bytes a pair for the synthetic stream's ~20-byte titles (24
 * with neither the front coding nor the count flag), against 24 (entry) +
 * wiki + title + 4 (order) + the index's 8-16 live (docs/adr/0024).
 */
struct top_pane {
    int64_t start;
    struct top_entry *entries;
    uint32_t n, alloc; /* n: the pane's pairs, live or frozen */
    uint32_t *index;   /* entry + 1; 0 is empty */
    uint32_t index_mask;
    char *text;
    size_t text_len, text_alloc; /* text_len: logical, kept when frozen */
    struct top_saved *saved;     /* allocated with the pane */
    uint8_t *packed;             /* frozen: the pairs, packed_len bytes; else NULL */
    size_t packed_len;
    /* Times thawed: the early-freeze grace doubles with each (top_frozen_early). */
    uint32_t thaws;
};

/* One (wiki, title) of a window being combined: its text (in one of the
 * panes) and its count summed over the window's panes. */
struct top_slot {
    uint64_t count;
    const char *wiki, *title;
    uint32_t wiki_len, title_len;
    uint64_t wk[2], tk[2]; /* merging: the strings' first 16 bytes (top_key) */
};

struct top_map;

struct fr_top {
    struct fr_top_opts opts;
    struct top_pane *panes; /* ascending start */
    uint32_t n_panes, alloc;
    struct top_map *map; /* settled windows' sliding sums: scratch, not state */
    int64_t next_start;
    /* The newest event time counted (INT64_MIN: none since create or load).
     * Not state: it only decides when a pane is frozen early. */
    int64_t newest_us;
    /* The size of the pane frozen last, for a new pane's first allocation:
     * panes of one stream are of like size, and growing one from 32
     * entries by halves copied it about twice over (docs/BENCHMARKS.md,
     * issue 5's session-17 section). Not state: only memory depends on it. */
    uint32_t hint_n;
    size_t hint_text;
    struct fr_top_stats st;
};

/* The first 16 bytes of s, big-endian, zero-padded. Where two keys differ
 * they order as the strings do (bytewise, shorter first): the first byte
 * that differs is either in both strings, or a 0 of padding against a byte
 * that is not 0, where the shorter is a prefix of the longer. */
static void top_key(const char *s, uint32_t len, uint64_t k[2])
{
    uint8_t b[16] = {0};
    memcpy(b, s, len < 16 ? len : 16);
    uint64_t w[2];
    memcpy(w, b, 16);
    /* little-endian loads (x86-64): swap to big-endian order */
    k[0] = __builtin_bswap64(w[0]);
    k[1] = __builtin_bswap64(w[1]);
}

/* top_key of the len bytes at s, where 16 bytes may be read (a cursor's
 * buffer): two loads, the bytes past len masked off, no copy. */
static inline void top_key_room16(const char *s, uint32_t len, uint64_t k[2])
{
    uint64_t w[2];
    memcpy(w, s, 16);
    uint32_t n0 = len < 8 ? len : 8, n1 = len < 8 ? 0 : len < 16 ? len - 8 : 8;
    /* the high n bytes of a big-endian word: shifting twice keeps n = 0 defined */
    k[0] = n0 ? __builtin_bswap64(w[0]) >> (64 - 8 * n0) << (64 - 8 * n0) : 0;
    k[1] = n1 ? __builtin_bswap64(w[1]) >> (64 - 8 * n1) << (64 - 8 * n1) : 0;
}

/* A key back to its bytes: the first 16 bytes of its string (zeros past
 * the end), all of it when the string has at most 16. */
static inline void top_key_bytes(const uint64_t k[2], char out[16])
{
    uint64_t w[2] = {__builtin_bswap64(k[0]), __builtin_bswap64(k[1])};
    memcpy(out, w, 16);
}

static uint64_t top_hash(const char *wiki, uint32_t wlen, const char *title, uint32_t tlen)
{
    return fr_proc_hash(title, tlen, fr_proc_hash(wiki, wlen, 0x3141));
}

/* ------------------------------------------------------------------------ */
/* Panes                                                                      */
/* ------------------------------------------------------------------------ */

static void top_pane_free(struct fr_top *top, struct top_pane *pane)
{
    top->st.entries -= pane->n;
    top->st.text_bytes -= pane->text_len;
    top->st.panes--;
    top->st.bytes -= (uint64_t)pane->alloc * sizeof *pane->entries + pane->text_alloc +
                     (pane->index ? ((uint64_t)pane->index_mask + 1) * sizeof *pane->index : 0) +
                     pane->packed_len;
    free(pane->entries);
    free(pane->index);
    free(pane->text);
    free(pane->packed);
    if (pane->saved) {
        free(pane->saved->order);
        free(pane->saved);
    }
    memset(pane, 0, sizeof *pane);
}

static void top_map_leave(struct fr_top *top, const struct top_pane *pane);

static void top_drop_front(struct fr_top *top, uint32_t n)
{
    if (n == 0) {
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        top_map_leave(top, &top->panes[i]);
        top_pane_free(top, &top->panes[i]);
    }
    memmove(&top->panes[0], &top->panes[n], (size_t)(top->n_panes - n) * sizeof *top->panes);
    top->n_panes -= n;
}

static struct top_pane *top_pane_get(struct fr_top *top, int64_t start)
{
    uint32_t i = top->n_panes;
    while (i > 0 && top->panes[i - 1].start > start) {
        i--;
    }
    if (i > 0 && top->panes[i - 1].start == start) {
        return &top->panes[i - 1];
    }
    struct top_saved *saved = calloc(1, sizeof *saved);
    if (!saved) {
        return NULL;
    }
    if (top->n_panes == top->alloc) {
        uint32_t n = top->alloc ? top->alloc * 2 : 16;
        struct top_pane *panes = realloc(top->panes, (size_t)n * sizeof *panes);
        if (!panes) {
            free(saved);
            return NULL;
        }
        top->st.bytes += (uint64_t)(n - top->alloc) * sizeof *panes;
        top->panes = panes;
        top->alloc = n;
    }
    memmove(&top->panes[i + 1], &top->panes[i], (size_t)(top->n_panes - i) * sizeof *top->panes);
    top->n_panes++;
    top->st.panes++;
    struct top_pane *pane = &top->panes[i];
    memset(pane, 0, sizeof *pane);
    pane->start = start;
    pane->saved = saved;
    return pane;
}

static int top_pane_order(const struct top_pane *pane);
static int top_pane_thaw(struct fr_top *top, struct top_pane *pane);

/* Put v in the first empty slot from hash h's home (linear probing; the
 * caller keeps the table under half full). Every index in this file. */
static inline void top_slot_put(uint32_t *slots, uint32_t mask, uint64_t h, uint32_t v)
{
    uint32_t i = (uint32_t)h & mask;
    while (slots[i]) {
        i = (i + 1) & mask;
    }
    slots[i] = v;
}

/* A new pane's first allocation for n of the last frozen pane's pairs or
 * text bytes: n and an eighth more. */
static inline uint64_t top_hint_room(uint64_t n)
{
    return n + n / 8;
}

static int top_index_grow(struct fr_top *top, struct top_pane *pane)
{
    uint32_t nslots = pane->index ? (pane->index_mask + 1) * 2 : 64;
    while (!pane->index && (uint64_t)nslots < 2 * top_hint_room(top->hint_n)) {
        nslots *= 2; /* a new pane: room for the last one's pairs at load <= 1/2 */
    }
    uint32_t *index = calloc(nslots, sizeof *index);
    if (!index) {
        return FR_ENOMEM;
    }
    for (uint32_t k = 0; k < pane->n; k++) {
        top_slot_put(index, nslots - 1, pane->entries[k].hash, k + 1);
    }
    top->st.bytes += (uint64_t)nslots * sizeof *index -
                     (pane->index ? ((uint64_t)pane->index_mask + 1) * sizeof *pane->index : 0);
    free(pane->index);
    pane->index = index;
    pane->index_mask = nslots - 1;
    return FR_OK;
}

static size_t top_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    do {
        uint8_t b = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (p) {
            p[n] = (uint8_t)(b | (v ? 0x80 : 0));
        }
        n++;
    } while (v);
    return n;
}

/* Leading bytes of title (tlen) equal to the previous title ptitle
 * (plen) that the front coding may share: 0 unless both fit TOP_FC_MAX. */
static uint32_t top_shared(const char *ptitle, uint32_t plen, const char *title, uint32_t tlen)
{
    uint32_t k = 0;
    if (plen > TOP_FC_MAX || tlen > TOP_FC_MAX) {
        return 0;
    }
    while (k < plen && k < tlen && ptitle[k] == title[k]) {
        k++;
    }
    return k;
}

/* Pack the pane's pairs in saved order into p (NULL: only count). */
static size_t top_pack(const struct top_pane *pane, uint8_t *p)
{
    size_t n = 0;
    const struct top_entry *prev = NULL;
    for (uint32_t j = 0; j < pane->n; j++) {
        const struct top_entry *e = &pane->entries[pane->saved->order[j]];
        const char *wiki = pane->text + e->off;
        const char *title = wiki + e->wiki_len;
        int new_wiki = !prev || prev->wiki_len != e->wiki_len ||
                       memcmp(pane->text + prev->off, wiki, e->wiki_len) != 0;
        uint32_t shared = 0;
        if (!new_wiki) {
            shared = top_shared(pane->text + prev->off + prev->wiki_len, prev->title_len, title,
                                e->title_len);
        }
        uint64_t one = e->count == 1;
        n += top_varint(p ? p + n : NULL,
                        (uint64_t)e->title_len << 2 | one << 1 | (uint64_t)new_wiki);
        if (new_wiki) {
            n += top_varint(p ? p + n : NULL, e->wiki_len);
            if (p) {
                memcpy(p + n, wiki, e->wiki_len);
            }
            n += e->wiki_len;
        }
        if (e->title_len <= TOP_FC_MAX) {
            n += top_varint(p ? p + n : NULL, shared);
        }
        if (p && e->title_len > shared) {
            memcpy(p + n, title + shared, e->title_len - shared);
        }
        n += e->title_len - shared;
        if (!one) {
            n += top_varint(p ? p + n : NULL, e->count);
        }
        prev = e;
    }
    return n;
}

/*
 * A pane the watermark has passed gets no more rows from fr_proc (they
 * would be late), yet it is kept until the last window holding it is
 * settled: up to ten minutes more. No row can reach it even when the
 * operator is used on its own: the window starting nine minutes before
 * the pane ends where the pane ends, so it is settled once the watermark
 * passes the pane, and fr_win_top_add drops the row as dropped_closed. A
 * pane TOP_FREEZE_GRACE_US older than the newest row counted is frozen
 * too, before the watermark passes it: it rarely gets another row, and one
 * that comes thaws it (top_pane_thaw). So the pane is frozen: packed (see
 * struct top_pane) and its entries, text, index and saved order freed.
 * Only memory changes, never a pair, a count or an order; merging and
 * saving read the packed pairs in the same order.
 */
static void top_pane_freeze(struct fr_top *top, struct top_pane *pane)
{
    if (pane->packed || pane->n == 0 || top_pane_order(pane) < 0) {
        return; /* frozen, empty, or out of memory: try at the next advance */
    }
    /* One pass into a bound (a record takes at most its wiki, its title
     * and 18 bytes of varints), then shrunk to what it took. */
    uint8_t *packed = malloc(pane->text_len + (size_t)pane->n * 25);
    if (!packed) {
        return;
    }
    size_t len = top_pack(pane, packed);
    top->hint_n = pane->n;
    top->hint_text = pane->text_len;
    uint8_t *fit = realloc(packed, len);
    if (fit) {
        packed = fit;
    }
    top->st.bytes -= (uint64_t)pane->alloc * sizeof *pane->entries + pane->text_alloc +
                     (pane->index ? ((uint64_t)pane->index_mask + 1) * sizeof *pane->index : 0);
    top->st.bytes += len;
    free(pane->entries);
    free(pane->index);
    free(pane->text);
    free(pane->saved->order);
    pane->entries = NULL;
    pane->index = NULL;
    pane->text = NULL;
    pane->alloc = 0;
    pane->index_mask = 0;
    pane->text_alloc = 0;
    *pane->saved = (struct top_saved){0};
    pane->packed = packed;
    pane->packed_len = len;
}

/*
 * Whether a pane the watermark has not passed is frozen already: once a
 * row TOP_FREEZE_GRACE_US << thaws newer than its end has been counted.
 * fr_proc advances at every record that raises the watermark, so without
 * the doubling a stream out of order by more than the grace would thaw
 * and freeze a pane at every such row; with it a pane is thawed at most
 * log2(lateness / grace) + 1 times (5 at the default 2 minutes) before the
 * watermark freezes it for good.
 */
static int top_frozen_early(const struct fr_top *top, const struct top_pane *pane)
{
    int64_t end = pane->start + FR_PROC_MINUTE_US;
    if (top->newest_us == INT64_MIN || pane->thaws > 30) {
        return 0;
    }
    return end <= top->newest_us - (TOP_FREEZE_GRACE_US << pane->thaws);
}

/* Add count to (wiki, title) in pane: FR_OK, 1 when a cap refused a new
 * pair, FR_ENOMEM. */
static int top_pane_add(struct fr_top *top, struct top_pane *pane, const char *wiki, uint32_t wlen,
                        const char *title, uint32_t tlen, uint64_t count)
{
    uint64_t h = top_hash(wiki, wlen, title, tlen);
    int rc;
    if (pane->packed && (rc = top_pane_thaw(top, pane)) < 0) {
        return rc; /* still frozen, unchanged */
    }
    if (pane->index) {
        for (uint32_t i = (uint32_t)h & pane->index_mask; pane->index[i];
             i = (i + 1) & pane->index_mask) {
            struct top_entry *e = &pane->entries[pane->index[i] - 1];
            if (e->hash == (uint32_t)h && e->wiki_len == wlen && e->title_len == tlen &&
                memcmp(pane->text + e->off, wiki, wlen) == 0 &&
                memcmp(pane->text + e->off + wlen, title, tlen) == 0) {
                e->count = fr_proc_sat_add(e->count, count);
                return FR_OK;
            }
        }
    }
    uint64_t need = (uint64_t)wlen + tlen;
    if (top->st.entries >= top->opts.max_entries ||
        top->st.text_bytes + need > top->opts.max_text_bytes || tlen > TOP_TITLE_MAX ||
        wlen > FR_PROC_WIKI_MAX) {
        return 1;
    }
    if (!pane->index || (uint64_t)(pane->n + 1) * 2 > (uint64_t)pane->index_mask + 1) {
        if ((rc = top_index_grow(top, pane)) < 0) {
            return rc;
        }
    }
    if (pane->n == pane->alloc) {
        /* from 32, or from the last frozen pane's size when new; a thawed
         * pane's may be smaller (exact), even 1 */
        uint32_t n = pane->alloc < 32 ? 32 : pane->alloc + pane->alloc / 2;
        if (pane->alloc == 0 && top_hint_room(top->hint_n) > n) {
            n = (uint32_t)top_hint_room(top->hint_n);
        }
        struct top_entry *entries = realloc(pane->entries, (size_t)n * sizeof *entries);
        if (!entries) {
            return FR_ENOMEM;
        }
        top->st.bytes += (uint64_t)(n - pane->alloc) * sizeof *entries;
        pane->entries = entries;
        pane->alloc = n;
    }
    /* Allocate even for empty strings: text + off is never NULL arithmetic. */
    if (!pane->text || pane->text_len + need > pane->text_alloc) {
        size_t n = pane->text_alloc < 1024 ? 1024 : pane->text_alloc;
        if (pane->text_alloc == 0 && top_hint_room(top->hint_text) > n) {
            n = (size_t)top_hint_room(top->hint_text);
        }
        while (n < pane->text_len + need) {
            n += n / 2;
        }
        char *text = realloc(pane->text, n);
        if (!text) {
            return FR_ENOMEM;
        }
        top->st.bytes += n - pane->text_alloc;
        pane->text = text;
        pane->text_alloc = n;
    }
    struct top_entry *e = &pane->entries[pane->n];
    *e = (struct top_entry){count, (uint32_t)pane->text_len, (uint32_t)h, wlen, tlen};
    memcpy(pane->text + pane->text_len, wiki, wlen);
    if (tlen) {
        memcpy(pane->text + pane->text_len + wlen, title, tlen);
    }
    pane->text_len += need;
    top_slot_put(pane->index, pane->index_mask, h, ++pane->n);
    top->st.entries++;
    top->st.text_bytes += need;
    return FR_OK;
}

/* ------------------------------------------------------------------------ */
/* Combining panes                                                            */
/* ------------------------------------------------------------------------ */

/* Order for ranks: count descending, wiki, title ascending. */
static inline int top_pair_cmp(const struct top_slot *a, const struct top_slot *b);

/* Both need their keys (top_pair_cmp). */
static int top_before(const struct top_slot *a, const struct top_slot *b)
{
    if (a->count != b->count) {
        return a->count > b->count;
    }
    return top_pair_cmp(a, b) < 0;
}

/* A pane's pairs in (wiki, title) order, one at a time: read from the
 * packed form of a frozen pane, or through the saved order of a live one
 * (top_pane_order must be current). A front-coded title is rebuilt in buf,
 * so cur.title may point into the cursor: valid until it moves, and a
 * cursor is not moved by copying (the merge heap holds pointers). */
struct top_cursor {
    const struct top_pane *pane;
    uint32_t at;         /* pairs consumed, the current one included */
    size_t off;          /* frozen: the next record */
    int keys;            /* fill cur's wk and tk (for merging) */
    struct top_slot cur; /* the current pair */
    char buf[TOP_FC_MAX];
};

static uint64_t top_unvarint(const uint8_t *p, size_t *off)
{
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
        uint8_t b = p[(*off)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            return v;
        }
    }
}

/* Move to the next pair: 1, or 0 when the pane has no more. */
static int top_cursor_next(struct top_cursor *c)
{
    const struct top_pane *pane = c->pane;
    if (c->at == pane->n) {
        return 0;
    }
    if (pane->packed) {
        const uint8_t *p = pane->packed;
        uint64_t h = top_unvarint(p, &c->off);
        if (h & 1) {
            c->cur.wiki_len = (uint32_t)top_unvarint(p, &c->off);
            c->cur.wiki = (const char *)p + c->off;
            c->off += c->cur.wiki_len;
            if (c->keys) {
                top_key(c->cur.wiki, c->cur.wiki_len, c->cur.wk);
            }
        }
        uint32_t tlen = (uint32_t)(h >> 2);
        c->cur.title_len = tlen;
        if (tlen <= TOP_FC_MAX) {
            /* buf[0 .. shared) still holds the previous title's bytes */
            uint32_t shared = (uint32_t)top_unvarint(p, &c->off);
            if (tlen > shared) {
                memcpy(c->buf + shared, p + c->off, tlen - shared);
            }
            c->off += tlen - shared;
            c->cur.title = c->buf;
        } else {
            c->cur.title = (const char *)p + c->off;
            c->off += tlen;
        }
        c->cur.count = h & 2 ? 1 : top_unvarint(p, &c->off);
    } else {
        const struct top_entry *e = &pane->entries[pane->saved->order[c->at]];
        c->cur.count = e->count;
        c->cur.wiki = pane->text + e->off;
        c->cur.title = pane->text + e->off + e->wiki_len;
        c->cur.wiki_len = e->wiki_len;
        c->cur.title_len = e->title_len;
        if (c->keys) {
            top_key(c->cur.wiki, c->cur.wiki_len, c->cur.wk);
        }
    }
    if (c->keys) {
        if (c->cur.title == c->buf) {
            top_key_room16(c->buf, c->cur.title_len, c->cur.tk);
        } else {
            top_key(c->cur.title, c->cur.title_len, c->cur.tk);
        }
    }
    c->at++;
    return 1;
}

/* (wiki, title) order, bytewise; the keys decide without touching the
 * strings unless their first 16 bytes are equal. Both need their keys. */
static __attribute__((noinline)) int top_pair_cmp_full(const struct top_slot *a,
                                                       const struct top_slot *b)
{
    for (int h = 0; h < 2; h++) {
        if (a->wk[h] != b->wk[h]) {
            return a->wk[h] < b->wk[h] ? -1 : 1;
        }
    }
    if (a->wiki_len != b->wiki_len || a->wiki_len > 16) {
        int c = fr_proc_strcmp(a->wiki, a->wiki_len, b->wiki, b->wiki_len);
        if (c) {
            return c;
        }
    }
    for (int h = 0; h < 2; h++) {
        if (a->tk[h] != b->tk[h]) {
            return a->tk[h] < b->tk[h] ? -1 : 1;
        }
    }
    if (a->title_len == b->title_len && a->title_len <= 16) {
        return 0;
    }
    return fr_proc_strcmp(a->title, a->title_len, b->title, b->title_len);
}

/* top_pair_cmp_full where the keys and lengths decide (nearly always), inline
 * in the merge's heap; the strings only through the full comparison. */
static inline int top_pair_cmp(const struct top_slot *a, const struct top_slot *b)
{
    if (a->wk[0] != b->wk[0]) {
        return a->wk[0] < b->wk[0] ? -1 : 1;
    }
    if (a->wk[1] != b->wk[1]) {
        return a->wk[1] < b->wk[1] ? -1 : 1;
    }
    if (a->wiki_len != b->wiki_len || a->wiki_len > 16) {
        return top_pair_cmp_full(a, b);
    }
    if (a->tk[0] != b->tk[0]) {
        return a->tk[0] < b->tk[0] ? -1 : 1;
    }
    if (a->tk[1] != b->tk[1]) {
        return a->tk[1] < b->tk[1] ? -1 : 1;
    }
    if (a->title_len == b->title_len && a->title_len <= 16) {
        return 0;
    }
    return top_pair_cmp_full(a, b);
}

static void top_cursor_sift(struct top_cursor **h, uint32_t n, uint32_t i)
{
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n) {
            return;
        }
        if (c + 1 < n && top_pair_cmp(&h[c + 1]->cur, &h[c]->cur) < 0) {
            c++;
        }
        if (top_pair_cmp(&h[c]->cur, &h[i]->cur) >= 0) {
            return;
        }
        struct top_cursor *t = h[i];
        h[i] = h[c];
        h[c] = t;
        i = c;
    }
}

/* Prepare c to read pane from its first pair, with keys or not: 1, or 0
 * when it has none. */
static int top_cursor_start(struct top_cursor *c, const struct top_pane *pane, int keys)
{
    c->pane = pane;
    c->keys = keys;
    c->at = 0;
    c->off = 0;
    c->cur = (struct top_slot){0};
    memset(c->buf, 0, 16); /* top_key_room16 reads 16 bytes of it */
    return top_cursor_next(c);
}

/*
 * Back to live: the entries, text, index and saved order rebuilt from the
 * packed pairs (already in saved order), the packed string freed. FR_OK,
 * or FR_ENOMEM with the pane still frozen and unchanged.
 */
static int top_pane_thaw(struct fr_top *top, struct top_pane *pane)
{
    uint32_t n = pane->n, nslots = 64;
    size_t tlen = pane->text_len ? pane->text_len : 1;
    while ((uint64_t)(n + 1) * 2 > nslots) {
        nslots *= 2;
    }
    struct top_entry *entries = malloc((size_t)n * sizeof *entries);
    uint32_t *index = calloc(nslots, sizeof *index);
    uint32_t *order = malloc((size_t)n * sizeof *order);
    char *text = malloc(tlen);
    struct top_cursor cur, *c = &cur;
    int rc = FR_ENOMEM;
    if (!entries || !index || !order || !text) {
        goto cleanup;
    }
    size_t at = 0;
    uint32_t j = 0;
    for (int more = top_cursor_start(c, pane, 0); more; more = top_cursor_next(c), j++) {
        const struct top_slot *q = &c->cur;
        entries[j] =
            (struct top_entry){q->count, (uint32_t)at,
                               (uint32_t)top_hash(q->wiki, q->wiki_len, q->title, q->title_len),
                               q->wiki_len, q->title_len};
        memcpy(text + at, q->wiki, q->wiki_len);
        if (q->title_len) {
            memcpy(text + at + q->wiki_len, q->title, q->title_len);
        }
        at += (size_t)q->wiki_len + q->title_len;
        top_slot_put(index, nslots - 1, entries[j].hash, j + 1);
        order[j] = j;
    }
    top->st.bytes -= pane->packed_len;
    top->st.bytes += (uint64_t)n * sizeof *entries + tlen + (uint64_t)nslots * sizeof *index;
    top->st.thaws++;
    pane->thaws++;
    free(pane->packed);
    pane->packed = NULL;
    pane->packed_len = 0;
    pane->entries = entries;
    pane->alloc = n;
    pane->index = index;
    pane->index_mask = nslots - 1;
    pane->text = text;
    pane->text_alloc = tlen;
    *pane->saved = (struct top_saved){order, n, n};
    entries = NULL;
    index = NULL;
    order = NULL;
    text = NULL;
    rc = FR_OK;
cleanup:
    free(entries);
    free(index);
    free(order);
    free(text);
    return rc;
}

/* One of a window's best pairs. A title that may live in a cursor (at most
 * TOP_FC_MAX bytes) is copied into buf, so s.title stays valid after the
 * merge; s.title points into buf exactly when inl (top_best_fix). */
struct top_best {
    struct top_slot s;
    int inl;
    char buf[TOP_FC_MAX];
};

static void top_best_fix(struct top_best *best, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++) {
        if (best[k].inl) {
            best[k].s.title = best[k].buf;
        }
    }
}

/*
 * Sum the panes [first, last) and leave the best FR_TOP_N (wiki, title)
 * in best[0..*n), in rank order. A merge, not a map: every pane yields its
 * pairs in (wiki, title) order (a frozen pane as packed, a live one
 * through its saved order, a cache sorted again only for a pane that
 * gained entries), and a heap of one cursor per pane (at most ten) yields
 * each pair once with its count summed over the panes, which a bounded
 * insertion ranks. So combining needs no memory the size of the window (a
 * map of every pair in ten panes used to take ~100 bytes a pair, kept
 * between windows: docs/adr/0023). The result is the same: the pairs and
 * their sums do not depend on how they are met, and the ranking order is
 * total. Wikis and long titles in best point into the panes; short titles
 * into best itself.
 */
static int top_combine_merge(struct fr_top *top, uint32_t first, uint32_t last,
                             struct top_best best[FR_TOP_N], uint32_t *n)
{
    struct top_cursor curs[TOP_PANES_PER_WINDOW];
    struct top_cursor *heap[TOP_PANES_PER_WINDOW];
    char title[TOP_FC_MAX];
    uint32_t hn = 0;
    *n = 0;
    for (uint32_t k = first; k < last && hn < TOP_PANES_PER_WINDOW; k++) {
        const struct top_pane *pane = &top->panes[k];
        int rc = top_pane_order(pane);
        if (rc < 0) {
            return rc;
        }
        if (top_cursor_start(&curs[hn], pane, 1)) {
            heap[hn] = &curs[hn];
            hn++;
        }
    }
    for (uint32_t i = hn / 2; i-- > 0;) {
        top_cursor_sift(heap, hn, i);
    }
    while (hn > 0) {
        struct top_slot cur = heap[0]->cur;
        cur.count = 0;
        if (cur.title == heap[0]->buf) {
            /* the cursor is about to move on and rebuild its buffer; a
             * short title is all in its key */
            if (cur.title_len <= 16) {
                top_key_bytes(cur.tk, title);
            } else {
                memcpy(title, cur.title, cur.title_len);
            }
            cur.title = title;
        }
        /* Every cursor at this pair (the top one is): add its count and
         * move it on. */
        do {
            cur.count = fr_proc_sat_add(cur.count, heap[0]->cur.count);
            if (!top_cursor_next(heap[0])) {
                heap[0] = heap[--hn];
            }
            top_cursor_sift(heap, hn, 0);
        } while (hn > 0 && top_pair_cmp(&heap[0]->cur, &cur) == 0);
        if (*n == FR_TOP_N && !top_before(&cur, &best[FR_TOP_N - 1].s)) {
            continue;
        }
        uint32_t i = *n < FR_TOP_N ? (*n)++ : FR_TOP_N - 1;
        while (i > 0 && top_before(&cur, &best[i - 1].s)) {
            best[i] = best[i - 1];
            i--;
        }
        best[i].s = cur;
        best[i].inl = cur.title_len <= TOP_FC_MAX;
        if (best[i].inl) {
            memcpy(best[i].buf, cur.title, cur.title_len);
        }
        top_best_fix(best, *n);
    }
    return FR_OK;
}

/*
 * Settled windows slide: window s + 1 min is window s less its oldest
 * pane plus one newer pane. So the emission loop keeps the sums of the
 * window just emitted in a hash map of (wiki, title) -> count, and moves
 * it to the next window by subtracting the panes that leave (as they are
 * dropped) and adding the panes that join: each pair is read twice in
 * all, not once for each of the ten windows that hold its pane, and one
 * pass over the map ranks the best FR_TOP_N. The result is the merge's
 * (top_combine_merge): the same pairs with the same sums, in the same
 * total order.
 *
 * Exact because a pane in the map never changes: it is in a settled
 * window or in the one being emitted, so any row for it is dropped_closed
 * (and, in the processor, late). The map covers exactly the panes whose
 * start is in [lo, hi) (those that exist); top_drop_front subtracts a
 * pane before freeing it. Scratch, not state: a load starts without it,
 * and the next window rebuilds it from its panes.
 *
 * Memory: about 24 bytes an entry plus its wiki and title plus 8-16
 * bytes of slots, in st.bytes. A window whose panes hold more than
 * opts.map_pairs pairs is merged instead and the map is freed, so the
 * live processor at high rates keeps the merge's footprint.
 */
struct top_ment {
    uint64_t count;
    uint32_t hash; /* top_hash, low 32 bits */
    uint32_t off;  /* wiki then title in text */
    uint32_t wiki_len, title_len;
};

struct top_map {
    uint32_t *slots; /* live entry + 1; 0 is empty; load <= 1/2 */
    uint32_t nslots;
    /* In the order written, text too; a removed entry stays, with count
     * 0, until top_map_compact squeezes it and its text out. */
    struct top_ment *ents;
    uint32_t n, alloc, dead; /* dead: removed entries among the n */
    char *text;
    size_t text_len, text_alloc, text_dead; /* dead: of removed entries */
    /* The panes summed: those with start in [lo, hi). */
    int64_t lo, hi;
};

static uint64_t top_map_bytes(const struct top_map *m)
{
    return m ? sizeof *m + (uint64_t)m->nslots * sizeof *m->slots +
                   (uint64_t)m->alloc * sizeof *m->ents + m->text_alloc
             : 0;
}

static void top_map_free(struct fr_top *top)
{
    struct top_map *m = top->map;
    if (m) {
        top->st.bytes -= top_map_bytes(m);
        free(m->slots);
        free(m->ents);
        free(m->text);
        free(m);
        top->map = NULL;
    }
}

/* Empty, covering no pane. */
static void top_map_clear(struct top_map *m)
{
    memset(m->slots, 0, (size_t)m->nslots * sizeof *m->slots);
    m->n = m->dead = 0;
    m->text_len = m->text_dead = 0;
    m->lo = m->hi = 0;
}

/* The slot holding (wiki, title), or the empty slot where it would go. */
static uint32_t top_map_find(const struct top_map *m, uint32_t h, const char *wiki, uint32_t wlen,
                             const char *title, uint32_t tlen)
{
    uint32_t mask = m->nslots - 1;
    for (uint32_t i = h & mask;; i = (i + 1) & mask) {
        uint32_t s = m->slots[i];
        if (s == 0) {
            return i;
        }
        const struct top_ment *e = &m->ents[s - 1];
        if (e->hash == h && e->wiki_len == wlen && e->title_len == tlen &&
            memcmp(m->text + e->off, wiki, wlen) == 0 &&
            (tlen == 0 || memcmp(m->text + e->off + wlen, title, tlen) == 0)) {
            return i;
        }
    }
}

/* Index every live entry in the (empty) slots. */
static void top_map_index(struct top_map *m)
{
    uint32_t mask = m->nslots - 1;
    for (uint32_t j = 0; j < m->n; j++) {
        if (m->ents[j].count == 0) {
            continue;
        }
        top_slot_put(m->slots, mask, m->ents[j].hash, j + 1);
    }
}

static int top_map_rehash(struct top_map *m, uint32_t nslots)
{
    uint32_t *slots = calloc(nslots, sizeof *slots);
    if (!slots) {
        return FR_ENOMEM;
    }
    free(m->slots);
    m->slots = slots;
    m->nslots = nslots;
    top_map_index(m);
    return FR_OK;
}

/* Squeeze out the removed entries and their text, in place (both are in
 * the order written, so the live ones only move down), and index the
 * rest again. */
static void top_map_compact(struct top_map *m)
{
    uint32_t k = 0;
    size_t at = 0;
    for (uint32_t j = 0; j < m->n; j++) {
        const struct top_ment *e = &m->ents[j];
        if (e->count == 0) {
            continue;
        }
        size_t len = (size_t)e->wiki_len + e->title_len;
        if (e->off != at) {
            memmove(m->text + at, m->text + e->off, len);
        }
        m->ents[k] = *e;
        m->ents[k].off = (uint32_t)at;
        k++;
        at += len;
    }
    m->n = k;
    m->dead = 0;
    m->text_len = at;
    m->text_dead = 0;
    memset(m->slots, 0, (size_t)m->nslots * sizeof *m->slots);
    top_map_index(m);
}

/* Room for one more entry of len text bytes. Removed entries and their
 * text are reclaimed (top_map_compact) when they are a quarter of the
 * entries or of the text; otherwise the arrays grow (entries double, text
 * by half). So a compaction follows at least a quarter of the map being
 * replaced, and the memory stays within about twice what is live. */
static int top_map_room(struct fr_top *top, size_t len)
{
    struct top_map *m = top->map;
    uint64_t before = top_map_bytes(m);
    int rc = FR_OK;
    int full = m->n == m->alloc, text_full = m->text_alloc - m->text_len < len || !m->text;
    if ((full && m->dead >= m->n / 4) || (text_full && m->text_dead >= m->text_len / 4)) {
        top_map_compact(m);
        full = m->n == m->alloc;
        text_full = m->text_alloc - m->text_len < len || !m->text;
    }
    if (full) {
        uint32_t alloc = m->alloc ? m->alloc * 2 : 256;
        struct top_ment *ents = realloc(m->ents, (size_t)alloc * sizeof *ents);
        if (!ents) {
            return FR_ENOMEM;
        }
        m->ents = ents;
        m->alloc = alloc;
    }
    if ((uint64_t)(m->n - m->dead + 1) * 2 > m->nslots) {
        rc = top_map_rehash(m, m->nslots * 2);
    }
    if (rc == FR_OK && text_full) {
        size_t alloc = m->text_len + len + (m->text_len + len) / 2 + 4096;
        char *text = realloc(m->text, alloc);
        if (!text) {
            rc = FR_ENOMEM;
        } else {
            m->text = text;
            m->text_alloc = alloc;
        }
    }
    top->st.bytes += top_map_bytes(m) - before;
    return rc;
}

/* Add count to (wiki, title) (sign > 0) or take it away (sign < 0; the
 * pair is there with at least count, as the panes it came from are; an
 * entry that reaches 0 is removed). */
static int top_map_put(struct fr_top *top, int sign, uint32_t h, const char *wiki, uint32_t wlen,
                       const char *title, uint32_t tlen, uint64_t count)
{
    struct top_map *m = top->map;
    uint32_t i = top_map_find(m, h, wiki, wlen, title, tlen);
    uint32_t s = m->slots[i];
    if (sign < 0) {
        if (s == 0 || m->ents[s - 1].count < count) {
            return FR_ESTATE;
        }
        struct top_ment *e = &m->ents[s - 1];
        e->count -= count;
        if (e->count) {
            return FR_OK;
        }
        m->text_dead += (size_t)wlen + tlen;
        /* Backward-shift deletion of slot i. */
        uint32_t mask = m->nslots - 1;
        for (uint32_t j = (i + 1) & mask;; j = (j + 1) & mask) {
            uint32_t t = m->slots[j];
            if (t == 0) {
                break;
            }
            uint32_t home = m->ents[t - 1].hash & mask;
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
                m->slots[i] = t;
                i = j;
            }
        }
        m->slots[i] = 0;
        m->dead++; /* stays in ents, count 0, until a compaction */
        return FR_OK;
    }
    if (s) {
        m->ents[s - 1].count = fr_proc_sat_add(m->ents[s - 1].count, count);
        return FR_OK;
    }
    int rc = top_map_room(top, (size_t)wlen + tlen);
    if (rc < 0) {
        return rc;
    }
    i = top_map_find(m, h, wiki, wlen, title, tlen); /* the slots may have moved */
    struct top_ment *e = &m->ents[m->n];
    *e = (struct top_ment){count, h, (uint32_t)m->text_len, wlen, tlen};
    memcpy(m->text + m->text_len, wiki, wlen);
    if (tlen) {
        memcpy(m->text + m->text_len + wlen, title, tlen);
    }
    m->text_len += (size_t)wlen + tlen;
    m->slots[i] = ++m->n;
    return FR_OK;
}

/* Add (sign > 0) or subtract every pair of pane. */
static int top_map_pane(struct fr_top *top, const struct top_pane *pane, int sign)
{
    int rc = FR_OK;
    if (!pane->packed) {
        for (uint32_t j = 0; j < pane->n && rc == FR_OK; j++) {
            const struct top_entry *e = &pane->entries[j];
            const char *w = pane->text + e->off;
            rc = top_map_put(top, sign, e->hash, w, e->wiki_len, w + e->wiki_len, e->title_len,
                             e->count);
        }
        return rc;
    }
    struct top_cursor cur;
    for (int more = top_cursor_start(&cur, pane, 0); more && rc == FR_OK;
         more = top_cursor_next(&cur)) {
        const struct top_slot *q = &cur.cur;
        uint32_t h = (uint32_t)top_hash(q->wiki, q->wiki_len, q->title, q->title_len);
        rc = top_map_put(top, sign, h, q->wiki, q->wiki_len, q->title, q->title_len, q->count);
    }
    return rc;
}

/* top_drop_front is about to free pane: take it out of the map. A map
 * that cannot be kept exact is freed (the next window rebuilds it). */
static void top_map_leave(struct fr_top *top, const struct top_pane *pane)
{
    struct top_map *m = top->map;
    if (!m || pane->start < m->lo || pane->start >= m->hi) {
        return;
    }
    if (top_map_pane(top, pane, -1) < 0) {
        top_map_free(top);
        return;
    }
    m->lo = pane->start + FR_PROC_MINUTE_US;
}

/* The map moved to the panes [first, last) of the window starting at s. */
static int top_map_window(struct fr_top *top, int64_t s, uint32_t first, uint32_t last)
{
    struct top_map *m = top->map;
    if (!m) {
        m = top->map = calloc(1, sizeof *m);
        if (!m || top_map_rehash(m, 64) < 0) {
            free(m);
            top->map = NULL;
            return FR_ENOMEM;
        }
        top->st.bytes += top_map_bytes(m);
    }
    int64_t end = s + FR_TOP_WINDOW_US;
    if (m->hi <= m->lo || m->lo > s || m->hi > end) {
        top_map_clear(m); /* nothing kept that this window can use */
        m->lo = m->hi = s;
        top->st.map_built++;
    } else {
        top->st.map_slid++;
    }
    /* Panes older than s left the map as they were dropped; one still
     * here (not dropped yet) leaves now. */
    for (uint32_t k = 0; k < first; k++) {
        const struct top_pane *pane = &top->panes[k];
        if (pane->start >= m->lo && pane->start < m->hi) {
            int rc = top_map_pane(top, pane, -1);
            if (rc < 0) {
                top_map_free(top);
                return rc;
            }
        }
    }
    for (uint32_t k = first; k < last; k++) {
        const struct top_pane *pane = &top->panes[k];
        if (pane->start >= m->hi) {
            int rc = top_map_pane(top, pane, 1);
            if (rc < 0) {
                top_map_free(top);
                return rc;
            }
        }
    }
    m->lo = s;
    m->hi = end;
    return FR_OK;
}

/* Rank the map's best FR_TOP_N into best, as top_combine_merge does.
 * Wikis and titles point into the map's text, valid until it changes. */
static void top_map_best(const struct top_map *m, struct top_best best[FR_TOP_N], uint32_t *n)
{
    struct top_slot rank[FR_TOP_N]; /* moved while ranking: smaller than top_best */
    uint32_t r = 0;
    for (uint32_t j = 0; j < m->n; j++) {
        const struct top_ment *e = &m->ents[j];
        if (e->count == 0 || (r == FR_TOP_N && e->count < rank[FR_TOP_N - 1].count)) {
            continue; /* the common case, decided without the keys */
        }
        struct top_slot cur = {.count = e->count,
                               .wiki = m->text + e->off,
                               .title = m->text + e->off + e->wiki_len,
                               .wiki_len = e->wiki_len,
                               .title_len = e->title_len};
        top_key(cur.wiki, cur.wiki_len, cur.wk);
        top_key(cur.title, cur.title_len, cur.tk);
        if (r == FR_TOP_N && !top_before(&cur, &rank[FR_TOP_N - 1])) {
            continue;
        }
        uint32_t i = r < FR_TOP_N ? r++ : FR_TOP_N - 1;
        while (i > 0 && top_before(&cur, &rank[i - 1])) {
            rank[i] = rank[i - 1];
            i--;
        }
        rank[i] = cur;
    }
    for (uint32_t i = 0; i < r; i++) {
        best[i].s = rank[i];
        best[i].inl = 0;
    }
    *n = r;
}

/* A settled window [s, s + 10 min): its panes [first, last) summed and
 * ranked through the sliding map, or merged when they hold more than
 * opts.map_pairs pairs. */
static int top_combine_settled(struct fr_top *top, int64_t s, uint32_t first, uint32_t last,
                               struct top_best best[FR_TOP_N], uint32_t *n)
{
    int64_t limit = top->opts.map_pairs ? top->opts.map_pairs : FR_TOP_DEFAULT_MAP_PAIRS;
    uint64_t pairs = 0;
    for (uint32_t k = first; k < last; k++) {
        pairs += top->panes[k].n;
    }
    if (limit < 0 || pairs > (uint64_t)limit) {
        top_map_free(top);
        return top_combine_merge(top, first, last, best, n);
    }
    if (top_map_window(top, s, first, last) < 0) {
        /* No memory for the map, or it lost track of a pane (then the
         * next window rebuilds it, counted in map_built): merge this one. */
        top_map_free(top);
        return top_combine_merge(top, first, last, best, n);
    }
    top_map_best(top->map, best, n);
    return FR_OK;
}

/* Panes [first, last) that fall in the window starting at s. */
static void top_window_panes(const struct fr_top *top, int64_t s, uint32_t *first, uint32_t *last)
{
    uint32_t a = 0;
    while (a < top->n_panes && top->panes[a].start < s) {
        a++;
    }
    uint32_t b = a;
    while (b < top->n_panes && top->panes[b].start < s + FR_TOP_WINDOW_US) {
        b++;
    }
    *first = a;
    *last = b;
}

/* ------------------------------------------------------------------------ */
/* Public API                                                                 */
/* ------------------------------------------------------------------------ */

int fr_win_top_create(const struct fr_top_opts *opts, struct fr_top **out)
{
    *out = NULL;
    if (!opts || opts->max_entries < 1 || opts->max_entries > ((uint64_t)1 << 30) ||
        opts->max_text_bytes < 1 || opts->map_pairs > ((int64_t)1 << 24)) {
        return FR_EINVAL;
    }
    struct fr_top *top = calloc(1, sizeof *top);
    if (!top) {
        return FR_ENOMEM;
    }
    top->opts = *opts;
    top->next_start = INT64_MIN;
    top->newest_us = INT64_MIN;
    top->st.bytes = sizeof *top;
    *out = top;
    return FR_OK;
}

void fr_win_top_destroy(struct fr_top *top)
{
    if (!top) {
        return;
    }
    for (uint32_t i = 0; i < top->n_panes; i++) {
        top_pane_free(top, &top->panes[i]);
    }
    free(top->panes);
    top_map_free(top);
    free(top);
}

int fr_win_top_add(struct fr_top *top, const struct fr_row *row)
{
    if ((row->type != FR_TYPE_EDIT && row->type != FR_TYPE_NEW) || !(row->has & FR_ROW_TITLE)) {
        return FR_OK;
    }
    if (!FR_PROC_TIME_OK(row->event_us)) {
        return FR_EINVAL;
    }
    int64_t start = fr_proc_floor(row->event_us, FR_PROC_MINUTE_US);
    if (top->next_start != INT64_MIN &&
        start - (TOP_PANES_PER_WINDOW - 1) * FR_PROC_MINUTE_US < top->next_start) {
        top->st.dropped_closed++;
        return FR_OK;
    }
    struct top_pane *pane = top_pane_get(top, start);
    if (!pane) {
        return FR_ENOMEM;
    }
    int rc = top_pane_add(top, pane, row->wiki.s, row->wiki.len, row->title.s, row->title.len, 1);
    if (rc == FR_OK && row->event_us > top->newest_us) {
        top->newest_us = row->event_us;
    }
    if (pane->n == 0) {
        top_pane_free(top, pane);
        uint32_t i = (uint32_t)(pane - top->panes);
        memmove(pane, pane + 1, (size_t)(top->n_panes - i - 1) * sizeof *pane);
        top->n_panes--;
    }
    if (rc == 1) {
        top->st.dropped_keys++;
        return FR_OK;
    }
    return rc;
}

int fr_win_top_advance(struct fr_top *top, int64_t watermark_us, fr_top_emit_fn emit, void *arg)
{
    if (watermark_us == FR_PROC_WM_NONE) {
        return FR_OK;
    }
    /* The last window start that is settled at this watermark. */
    int64_t s_max = fr_proc_floor(watermark_us - FR_TOP_WINDOW_US, FR_PROC_MINUTE_US);
    int64_t s = top->next_start;
    while (top->n_panes) {
        int64_t lo = top->panes[0].start - (TOP_PANES_PER_WINDOW - 1) * FR_PROC_MINUTE_US;
        if (s > lo) {
            lo = s;
        }
        if (lo > s_max) {
            break;
        }
        uint32_t first, last, n;
        struct top_best best[FR_TOP_N];
        top_window_panes(top, lo, &first, &last);
        int rc = top_combine_settled(top, lo, first, last, best, &n);
        if (rc < 0) {
            return rc;
        }
        top->st.windows++;
        for (uint32_t r = 0; r < n; r++) {
            const struct top_slot *b = &best[r].s;
            struct fr_top_row row = {.window_start_us = lo,
                                     .window_end_us = lo + FR_TOP_WINDOW_US,
                                     .rank = r + 1,
                                     .wiki = {b->wiki, b->wiki_len},
                                     .title = {b->title, b->title_len},
                                     .count = b->count};
            top->st.rows++;
            rc = emit ? emit(arg, &row) : 0;
            if (rc != 0) {
                return rc;
            }
        }
        s = lo + FR_PROC_MINUTE_US;
        top->next_start = s;
        uint32_t done = 0;
        while (done < top->n_panes && top->panes[done].start < s) {
            done++;
        }
        top_drop_front(top, done);
    }
    if (top->next_start == INT64_MIN || top->next_start < s_max + FR_PROC_MINUTE_US) {
        top->next_start = s_max + FR_PROC_MINUTE_US;
    }
    uint32_t done = 0;
    while (done < top->n_panes && top->panes[done].start < top->next_start) {
        done++;
    }
    top_drop_front(top, done);
    for (uint32_t k = 0; k < top->n_panes; k++) {
        struct top_pane *pane = &top->panes[k];
        if (!pane->packed &&
            (pane->start + FR_PROC_MINUTE_US <= watermark_us || top_frozen_early(top, pane))) {
            top_pane_freeze(top, pane);
        }
    }
    return FR_OK;
}

void fr_win_top_stats(const struct fr_top *top, struct fr_top_stats *stats)
{
    *stats = top->st;
}

void fr_win_top_view(struct fr_top *top, struct fr_proc_view *view)
{
    view->n_top = 0;
    view->top_start_us = view->top_end_us = 0;
    if (!top->n_panes) {
        return;
    }
    int64_t end = top->panes[top->n_panes - 1].start + FR_PROC_MINUTE_US;
    int64_t s = end - FR_TOP_WINDOW_US;
    view->top_start_us = s;
    view->top_end_us = end;
    /* May sort a pane's saved order, a cache that is not part of the state. */
    uint32_t first, last, n;
    struct top_best best[FR_TOP_N];
    top_window_panes(top, s, &first, &last);
    if (top_combine_merge(top, first, last, best, &n) < 0) {
        view->truncated = 1;
        return;
    }
    for (uint32_t r = 0; r < n; r++) {
        struct fr_top_row *row = &view->top[view->n_top];
        const struct top_slot *b = &best[r].s;
        const char *w = fr_proc_view_text(view, b->wiki, b->wiki_len);
        const char *t = fr_proc_view_text(view, b->title, b->title_len);
        if (!w || !t) {
            view->truncated = 1;
            return;
        }
        *row = (struct fr_top_row){s, end, r + 1, {w, b->wiki_len}, {t, b->title_len}, b->count};
        view->n_top++;
    }
}

/* ------------------------------------------------------------------------ */
/* Save / load                                                                */
/* ------------------------------------------------------------------------ */

/* Entry idx of pane as a slot with its keys, for top_pair_cmp; count
 * carries idx. */
static void top_slot_of(const struct top_pane *pane, uint32_t idx, struct top_slot *s)
{
    const struct top_entry *e = &pane->entries[idx];
    s->count = idx;
    s->wiki = pane->text + e->off;
    s->wiki_len = e->wiki_len;
    s->title = s->wiki + e->wiki_len;
    s->title_len = e->title_len;
    top_key(s->wiki, s->wiki_len, s->wk);
    top_key(s->title, s->title_len, s->tk);
}

static int top_cmp_slot(const void *x, const void *y)
{
    return top_pair_cmp(x, y);
}

/* The pane's entries in saved order (by wiki, then title) in
 * pane->saved->order. Entries are only appended, so the order of the first
 * sv->n stays valid: only those added since are sorted (for a live pane,
 * an epoch's new pairs), then merged in from the back, in place. The sort
 * compares the strings' 16-byte keys first (top_pair_cmp), so most
 * comparisons touch no string. Memory: 64 bytes a new entry, for the call. */
static int top_pane_order(const struct top_pane *pane)
{
    struct top_saved *sv = pane->saved;
    if (pane->packed || (sv->order && sv->n == pane->n)) {
        return FR_OK;
    }
    if (pane->n > sv->cap) {
        uint32_t *order = realloc(sv->order, (size_t)pane->alloc * sizeof *order);
        if (!order) {
            return FR_ENOMEM;
        }
        sv->order = order;
        sv->cap = pane->alloc;
    }
    uint32_t old = sv->n, k = pane->n - old;
    struct top_slot *refs = malloc((size_t)k * sizeof *refs + 1);
    if (!refs) {
        return FR_ENOMEM;
    }
    for (uint32_t j = 0; j < k; j++) {
        top_slot_of(pane, old + j, &refs[j]);
    }
    qsort(refs, k, sizeof *refs, top_cmp_slot);
    /* Merge order[0 .. old) and refs[0 .. k) into order[0 .. old + k),
     * largest first; pairs in a pane are distinct, so never a tie. */
    uint32_t i = old, j = k, w = pane->n;
    struct top_slot r;
    if (i > 0) {
        top_slot_of(pane, sv->order[i - 1], &r);
    }
    while (j > 0) {
        if (i > 0 && top_pair_cmp(&r, &refs[j - 1]) > 0) {
            sv->order[--w] = sv->order[--i];
            if (i > 0) {
                top_slot_of(pane, sv->order[i - 1], &r);
            }
        } else {
            sv->order[--w] = (uint32_t)refs[--j].count;
        }
    }
    free(refs);
    sv->n = pane->n;
    return FR_OK;
}

int fr_win_top_save(const struct fr_top *top, struct fr_buf *out)
{
    struct fr_proc_out o;
    fr_proc_out_buf(&o, out);
    return fr_win_top_save_out(top, &o);
}

int fr_win_top_save_out(const struct fr_top *top, struct fr_proc_out *out)
{
    struct fr_proc_enc enc;
    fr_proc_enc_begin_out(&enc, out, TOP_MAGIC, TOP_VERSION);
    fr_proc_enc_i64(&enc, top->next_start);
    fr_proc_enc_u64(&enc, top->st.windows);
    fr_proc_enc_u64(&enc, top->st.rows);
    fr_proc_enc_u64(&enc, top->st.dropped_keys);
    fr_proc_enc_u64(&enc, top->st.dropped_closed);
    fr_proc_enc_u32(&enc, top->n_panes);
    for (uint32_t k = 0; k < top->n_panes && enc.err == FR_OK; k++) {
        const struct top_pane *pane = &top->panes[k];
        int rc = top_pane_order(pane);
        if (rc < 0) {
            enc.err = rc;
            break;
        }
        fr_proc_enc_i64(&enc, pane->start);
        fr_proc_enc_u32(&enc, pane->n);
        struct top_cursor c;
        for (int more = top_cursor_start(&c, pane, 0); more; more = top_cursor_next(&c)) {
            fr_proc_enc_str(&enc, c.cur.wiki, c.cur.wiki_len);
            fr_proc_enc_str(&enc, c.cur.title, c.cur.title_len);
            fr_proc_enc_u64(&enc, c.cur.count);
        }
    }
    return fr_proc_enc_end(&enc);
}

int fr_win_top_load(struct fr_top *top, const void *bytes, size_t len)
{
    struct fr_top *fresh = NULL;
    struct fr_proc_dec dec;
    int rc = fr_proc_dec_begin(&dec, bytes, len, TOP_MAGIC, TOP_VERSION);
    if (rc < 0) {
        return rc;
    }
    rc = fr_win_top_create(&top->opts, &fresh);
    if (rc < 0) {
        return rc;
    }
    fresh->next_start = fr_proc_dec_i64(&dec);
    struct fr_top_stats saved = {0};
    saved.windows = fr_proc_dec_u64(&dec);
    saved.rows = fr_proc_dec_u64(&dec);
    saved.dropped_keys = fr_proc_dec_u64(&dec);
    saved.dropped_closed = fr_proc_dec_u64(&dec);
    uint32_t np = fr_proc_dec_count(&dec, UINT32_MAX, 12);
    rc = FR_ECORRUPT;
    if (dec.err == FR_OK && fresh->next_start != INT64_MIN &&
        (!FR_PROC_TIME_OK(fresh->next_start) ||
         fr_proc_floor(fresh->next_start, FR_PROC_MINUTE_US) != fresh->next_start)) {
        goto cleanup;
    }
    for (uint32_t k = 0; k < np && dec.err == FR_OK; k++) {
        int64_t start = fr_proc_dec_i64(&dec);
        uint32_t ne = fr_proc_dec_count(&dec, UINT32_MAX, 16);
        if (dec.err != FR_OK || ne == 0 || !FR_PROC_TIME_OK(start) ||
            fr_proc_floor(start, FR_PROC_MINUTE_US) != start ||
            (k > 0 && start <= fresh->panes[fresh->n_panes - 1].start) ||
            (fresh->next_start != INT64_MIN && start < fresh->next_start)) {
            goto cleanup;
        }
        struct top_pane *pane = top_pane_get(fresh, start);
        if (!pane) {
            rc = FR_ENOMEM;
            goto cleanup;
        }
        const char *prev_text = NULL;
        uint32_t prev_wlen = 0, prev_tlen = 0;
        for (uint32_t j = 0; j < ne; j++) {
            uint32_t wlen, tlen;
            const char *wiki = fr_proc_dec_str(&dec, FR_PROC_WIKI_MAX, &wlen);
            const char *title = fr_proc_dec_str(&dec, TOP_TITLE_MAX, &tlen);
            uint64_t count = fr_proc_dec_u64(&dec);
            if (dec.err != FR_OK || count == 0) {
                goto cleanup;
            }
            /* Strictly ascending (wiki, title): compare against the last. */
            if (j > 0) {
                int c = fr_proc_strcmp(prev_text, prev_wlen, wiki, wlen);
                if (c > 0 || (c == 0 && fr_proc_strcmp(prev_text + prev_wlen, prev_tlen, title,
                                                       tlen) >= 0)) {
                    goto cleanup;
                }
            }
            rc = top_pane_add(fresh, pane, wiki, wlen, title, tlen, count);
            if (rc != FR_OK) {
                rc = rc < 0 ? rc : FR_ETOOBIG;
                goto cleanup;
            }
            const struct top_entry *e = &pane->entries[pane->n - 1];
            prev_text = pane->text + e->off;
            prev_wlen = wlen;
            prev_tlen = tlen;
            rc = FR_ECORRUPT;
        }
    }
    rc = fr_proc_dec_end(&dec);
    if (rc < 0) {
        goto cleanup;
    }
    fresh->st.windows = saved.windows;
    fresh->st.rows = saved.rows;
    fresh->st.dropped_keys = saved.dropped_keys;
    fresh->st.dropped_closed = saved.dropped_closed;
    struct fr_top tmp = *top;
    *top = *fresh;
    *fresh = tmp;
    rc = FR_OK;
cleanup:
    fr_win_top_destroy(fresh);
    return rc;
}
