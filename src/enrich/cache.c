/*
 * cache.c — the lookup cache: (wiki, normalised title) to its answer
 * (RESOLVED with the item, or NO_ITEM), least-recently-used eviction, with
 * two hard caps: entries and bytes (each entry is charged its struct plus
 * its key text, fr_enrich_cache_entry_bytes, plus a label's text). Label
 * keys (wiki "#<lang>", title the item) keep the label's text after the
 * key. FAILED answers are never
 * cached: they are retried through the dead-letter replay.
 *
 * Layout: a chained hash table (power-of-two buckets, about two per entry
 * allowed, at most 2^22) over entries that also sit on one doubly linked
 * recency list, most recent at head. Invariants: every entry is on exactly
 * one chain and on the list; count <= max_entries and bytes <= max_bytes
 * after every put. One client, one thread.
 */
#include "enrich/enrich_int.h"

#include "core/err.h"

#include <stdlib.h>
#include <string.h>

struct cache_entry {
    struct cache_entry *chain;       /* next in the bucket */
    struct cache_entry *prev, *next; /* recency list */
    uint64_t hash;
    struct fr_enrich_answer ans;
    uint16_t wiki_len, title_len, label_len;
    char key[]; /* wiki '\0' title '\0' [label '\0'] */
};

struct fr_enrich_cache {
    struct cache_entry **buckets;
    size_t mask;
    struct cache_entry *head, *tail;
    int64_t count, bytes, evictions;
    int64_t max_entries, max_bytes;
};

size_t fr_enrich_cache_entry_bytes(size_t wiki_len, size_t title_len)
{
    return sizeof(struct cache_entry) + wiki_len + title_len + 2;
}

static size_t cache_charge(size_t wl, size_t tl, size_t ll)
{
    return fr_enrich_cache_entry_bytes(wl, tl) + (ll ? ll + 1 : 0);
}

static uint64_t cache_hash(const char *wiki, size_t wl, const char *title, size_t tl)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < wl; i++) {
        h = (h ^ (uint8_t)wiki[i]) * 1099511628211ULL;
    }
    h = (h ^ 0xFF) * 1099511628211ULL;
    for (size_t i = 0; i < tl; i++) {
        h = (h ^ (uint8_t)title[i]) * 1099511628211ULL;
    }
    return h ^ (h >> 29);
}

int fr_enrich_cache_new(int64_t max_entries, int64_t max_bytes, struct fr_enrich_cache **out)
{
    *out = NULL;
    struct fr_enrich_cache *c = calloc(1, sizeof *c);
    if (!c) {
        return FR_ENOMEM;
    }
    c->max_entries = max_entries > 0 ? max_entries : 0;
    c->max_bytes = max_bytes > 0 ? max_bytes : 0;
    size_t n = 16;
    while ((int64_t)n < c->max_entries * 2 && n < ((size_t)1 << 22)) {
        n *= 2;
    }
    c->buckets = calloc(n, sizeof *c->buckets);
    if (!c->buckets) {
        free(c);
        return FR_ENOMEM;
    }
    c->mask = n - 1;
    *out = c;
    return FR_OK;
}

void fr_enrich_cache_free(struct fr_enrich_cache *c)
{
    if (!c) {
        return;
    }
    for (struct cache_entry *e = c->head, *next; e; e = next) {
        next = e->next;
        free(e);
    }
    free(c->buckets);
    free(c);
}

static void cache_unlink(struct fr_enrich_cache *c, struct cache_entry *e)
{
    if (e->prev) {
        e->prev->next = e->next;
    } else {
        c->head = e->next;
    }
    if (e->next) {
        e->next->prev = e->prev;
    } else {
        c->tail = e->prev;
    }
    e->prev = e->next = NULL;
}

static void cache_push_front(struct fr_enrich_cache *c, struct cache_entry *e)
{
    e->prev = NULL;
    e->next = c->head;
    if (c->head) {
        c->head->prev = e;
    }
    c->head = e;
    if (!c->tail) {
        c->tail = e;
    }
}

static struct cache_entry **cache_slot(struct fr_enrich_cache *c, const char *wiki, size_t wl,
                                       const char *title, size_t tl, uint64_t h)
{
    struct cache_entry **pp = &c->buckets[h & c->mask];
    for (; *pp; pp = &(*pp)->chain) {
        struct cache_entry *e = *pp;
        if (e->hash == h && e->wiki_len == wl && e->title_len == tl &&
            memcmp(e->key, wiki, wl) == 0 && memcmp(e->key + wl + 1, title, tl) == 0) {
            break;
        }
    }
    return pp;
}

/* Remove e from its chain and the list and free it. */
static void cache_drop(struct fr_enrich_cache *c, struct cache_entry *e)
{
    struct cache_entry **pp = &c->buckets[e->hash & c->mask];
    while (*pp != e) {
        pp = &(*pp)->chain;
    }
    *pp = e->chain;
    cache_unlink(c, e);
    c->count--;
    c->bytes -= (int64_t)cache_charge(e->wiki_len, e->title_len, e->label_len);
    free(e);
}

int fr_enrich_cache_get(struct fr_enrich_cache *c, const char *wiki, const char *title,
                        struct fr_enrich_answer *ans)
{
    size_t wl = strlen(wiki), tl = strlen(title);
    struct cache_entry *e = *cache_slot(c, wiki, wl, title, tl, cache_hash(wiki, wl, title, tl));
    if (!e) {
        return 0;
    }
    cache_unlink(c, e);
    cache_push_front(c, e);
    *ans = e->ans;
    ans->label = e->label_len ? e->key + e->wiki_len + e->title_len + 2 : NULL;
    ans->label_len = e->label_len;
    return 1;
}

int fr_enrich_cache_put(struct fr_enrich_cache *c, const char *wiki, const char *title,
                        const struct fr_enrich_answer *ans)
{
    size_t wl = strlen(wiki), tl = strlen(title), ll = ans->label ? ans->label_len : 0;
    if (wl > UINT16_MAX || tl > UINT16_MAX || ll > FR_ENRICH_LABEL_MAX) {
        return FR_ETOOBIG;
    }
    size_t need = cache_charge(wl, tl, ll);
    if (c->max_entries == 0 || (int64_t)need > c->max_bytes) {
        return FR_ETOOBIG;
    }
    uint64_t h = cache_hash(wiki, wl, title, tl);
    struct cache_entry **pp = cache_slot(c, wiki, wl, title, tl, h);
    if (*pp && (*pp)->label_len == ll &&
        (ll == 0 || memcmp((*pp)->key + wl + tl + 2, ans->label, ll) == 0)) {
        (*pp)->ans = *ans; /* replace the answer, refresh recency */
        (*pp)->ans.label = NULL;
        cache_unlink(c, *pp);
        cache_push_front(c, *pp);
        return FR_OK;
    }
    if (*pp) { /* another label: the entry is made again */
        cache_drop(c, *pp);
    }
    while (c->tail && (c->count + 1 > c->max_entries || c->bytes + (int64_t)need > c->max_bytes)) {
        cache_drop(c, c->tail);
        c->evictions++;
    }
    struct cache_entry *e = malloc(need);
    if (!e) {
        return FR_ENOMEM;
    }
    e->hash = h;
    e->ans = *ans;
    e->ans.label = NULL; /* the text lives after the key */
    e->wiki_len = (uint16_t)wl;
    e->title_len = (uint16_t)tl;
    e->label_len = (uint16_t)ll;
    memcpy(e->key, wiki, wl + 1);
    memcpy(e->key + wl + 1, title, tl + 1);
    if (ll) {
        memcpy(e->key + wl + tl + 2, ans->label, ll);
        e->key[wl + tl + 2 + ll] = 0;
    }
    pp = &c->buckets[h & c->mask];
    e->chain = *pp;
    *pp = e;
    cache_push_front(c, e);
    c->count++;
    c->bytes += (int64_t)need;
    return FR_OK;
}

int64_t fr_enrich_cache_entries(const struct fr_enrich_cache *c)
{
    return c ? c->count : 0;
}

int64_t fr_enrich_cache_bytes(const struct fr_enrich_cache *c)
{
    return c ? c->bytes : 0;
}

int64_t fr_enrich_cache_evictions(const struct fr_enrich_cache *c)
{
    return c ? c->evictions : 0;
}
