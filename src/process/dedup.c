/*
 * dedup.c — the watermark-bounded set of meta.id keys (DESIGN.md: silver
 * holds the first on-time occurrence of each meta.id).
 *
 * Structure: keys are UUIDs parsed to 16 bytes. Each live key is an entry
 * in a pool { key, event time, insert sequence } (32 bytes, no per-key
 * allocation; a released entry holds the next free one in its sequence
 * field, so the free list costs nothing); an open-addressing table of
 * 4-byte entry numbers (linear probing, load <= 1/2, backward-shift
 * deletion, so no tombstones) maps a key to its entry, comparing the keys
 * in the pool. Eviction order is (event time, insert sequence), kept by
 * two queues of entry indices: a FIFO ring for keys that arrive in event
 * time order (a key no older than the ring's newest is appended: its
 * sequence is the largest yet, so the ring stays sorted), and a binary
 * min-heap for the others. The next key to evict is the smaller of their
 * two fronts. Events come nearly in order (96-97 % of the issue-7
 * generator's), so most keys cost O(1) to queue and evict instead of a
 * heap's O(log n) pool lookups (docs/BENCHMARKS.md, issue 7's session-18
 * section). Lookup and insert are O(1) expected, eviction O(1) from the
 * ring and O(log n) from the heap. A live key costs 40 bytes plus 8-32
 * bytes of table (docs/adr/0023).
 *
 * Rules (docs/SEMANTICS.md):
 *   1. fr_dedup_expire(wm) evicts every key with event time < wm, so the
 *      set holds about (event rate x allowed lateness) keys. A copy of an
 *      evicted key has event time < wm: it is late and never reaches the
 *      set, so silver never holds a duplicate.
 *   2. Hard cap: inserting into a full set first evicts the smallest
 *      (event time, sequence), counted in forced_evictions. Past the cap a
 *      duplicate older than the evicted keys can reach silver; the counter
 *      says when that risk was taken.
 *   3. The insert sequence orders keys with equal event times, so eviction
 *      order, and therefore every output, is the same after save/load.
 *
 * Hash: the two 64-bit halves of the key mixed with a fixed seed. It is not
 * keyed: crafted colliding ids slow lookups down but cannot grow the state
 * past the cap (docs/adr/0007). One thread at a time.
 *
 * Saved state (envelope "FRDD", version 1; body, little-endian):
 *
 *   size  field
 *   8     next insert sequence
 *   8     inserts      (counters, carried across restarts)
 *   8     duplicates
 *   8     expired
 *   8     forced_evictions
 *   4     n live keys
 *   n x   { 16 key, 8 event_us, 8 sequence }
 *         ascending by (event_us, sequence), strictly; sequence < next
 */
#include "process/process_int.h"

#include "core/err.h"

#include <stdlib.h>

#define DD_MAGIC "FRDD"
#define DD_VERSION 1
#define DD_ENTRY_BYTES (16 + 8 + 8)
#define DD_MIN_SLOTS 1024u
#define DD_MAX_KEYS ((uint64_t)1 << 28)

struct dd_entry {
    uint8_t key[16];
    int64_t t;
    uint64_t seq;
};
static_assert(sizeof(struct dd_entry) == DD_ENTRY_BYTES, "dedup entry layout");

#define DD_NO_FREE UINT32_MAX

struct fr_dedup {
    struct fr_dedup_opts opts;
    struct dd_entry *pool; /* entries, indexed by the table and the heap */
    uint32_t pool_alloc;
    uint32_t pool_top;  /* entries [0, pool_top) have been handed out */
    uint32_t free_head; /* released entry (its seq: the next), or DD_NO_FREE */
    uint32_t *slots;    /* entry + 1; 0 is empty */
    uint32_t slot_mask;
    uint32_t *heap; /* entry indices, min-heap on (t, seq) */
    uint32_t heap_n;
    uint32_t *fifo; /* ring of pool_alloc entry indices, ascending (t, seq) */
    uint32_t fifo_head, fifo_n;
    uint64_t seq_next;
    struct fr_dedup_stats st;
};

static uint64_t dd_hash(const uint8_t key[16])
{
    uint64_t a, b;
    memcpy(&a, key, 8);
    memcpy(&b, key + 8, 8);
    return fr_proc_mix64(a ^ fr_proc_mix64(b ^ UINT64_C(0x2545f4914f6cdd1d)));
}

static int dd_less(const struct fr_dedup *dd, uint32_t x, uint32_t y)
{
    const struct dd_entry *a = &dd->pool[x], *b = &dd->pool[y];
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

/* Put idx at the hole heap[i], moving it up past larger parents. */
static void dd_sift_up(struct fr_dedup *dd, uint32_t i, uint32_t idx)
{
    uint32_t *heap = dd->heap;
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (!dd_less(dd, idx, heap[parent])) {
            break;
        }
        heap[i] = heap[parent];
        i = parent;
    }
    heap[i] = idx;
}

static void dd_heap_push(struct fr_dedup *dd, uint32_t idx)
{
    dd_sift_up(dd, dd->heap_n++, idx);
}

/* Bottom-up (after Wegener): the hole left by the minimum goes down to a
 * leaf along the smaller children, one comparison a level, and the last
 * entry rises from there. It is nearly always the newest key, so it
 * rarely rises at all: half the comparisons (each two loads from the
 * pool) of sifting it down from the root. */
static uint32_t dd_heap_pop(struct fr_dedup *dd)
{
    uint32_t *heap = dd->heap;
    uint32_t top = heap[0];
    uint32_t n = --dd->heap_n;
    if (n == 0) {
        return top;
    }
    uint32_t last = heap[n];
    uint32_t i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n) {
            break;
        }
        if (c + 1 < n && dd_less(dd, heap[c + 1], heap[c])) {
            c++;
        }
        heap[i] = heap[c];
        i = c;
    }
    dd_sift_up(dd, i, last);
    return top;
}

static uint32_t dd_fifo_at(const struct fr_dedup *dd, uint32_t k)
{
    return dd->fifo[(dd->fifo_head + k) & (dd->pool_alloc - 1)];
}

/* Queue entry idx (the newest: its sequence is the largest): on the ring
 * when it is no older than the ring's newest, else on the heap. */
static void dd_queue(struct fr_dedup *dd, uint32_t idx)
{
    if (dd->fifo_n == 0 || dd->pool[dd_fifo_at(dd, dd->fifo_n - 1)].t <= dd->pool[idx].t) {
        dd->fifo[(dd->fifo_head + dd->fifo_n++) & (dd->pool_alloc - 1)] = idx;
    } else {
        dd_heap_push(dd, idx);
    }
}

/* The entry to evict next, the smaller (t, seq) of the two fronts, or
 * DD_NO_FREE when the set is empty. */
static uint32_t dd_front(const struct fr_dedup *dd)
{
    if (dd->fifo_n && (!dd->heap_n || dd_less(dd, dd_fifo_at(dd, 0), dd->heap[0]))) {
        return dd_fifo_at(dd, 0);
    }
    return dd->heap_n ? dd->heap[0] : DD_NO_FREE;
}

/* Take idx, which dd_front returned, off its queue (an entry is on one). */
static void dd_drop_front(struct fr_dedup *dd, uint32_t idx)
{
    if (dd->fifo_n && idx == dd_fifo_at(dd, 0)) {
        dd->fifo_head = (dd->fifo_head + 1) & (dd->pool_alloc - 1);
        dd->fifo_n--;
    } else {
        dd_heap_pop(dd);
    }
}

/* Slot holding key, or the empty slot where it would go (*found = 0). */
static uint32_t dd_probe(const struct fr_dedup *dd, const uint8_t key[16], uint64_t h, int *found)
{
    uint32_t i = (uint32_t)h & dd->slot_mask;
    for (;;) {
        uint32_t s = dd->slots[i];
        if (s == 0) {
            *found = 0;
            return i;
        }
        if (memcmp(dd->pool[s - 1].key, key, 16) == 0) {
            *found = 1;
            return i;
        }
        i = (i + 1) & dd->slot_mask;
    }
}

/* Remove the slot i, shifting back the entries probed past it. */
static void dd_slot_delete(struct fr_dedup *dd, uint32_t i)
{
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & dd->slot_mask;
        uint32_t s = dd->slots[j];
        if (s == 0) {
            break;
        }
        uint32_t home = (uint32_t)dd_hash(dd->pool[s - 1].key) & dd->slot_mask;
        /* Move s back into i unless its home lies cyclically in (i, j]. */
        int stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            dd->slots[i] = s;
            i = j;
        }
    }
    dd->slots[i] = 0;
}

static void dd_release(struct fr_dedup *dd, uint32_t idx)
{
    int found;
    uint32_t slot = dd_probe(dd, dd->pool[idx].key, dd_hash(dd->pool[idx].key), &found);
    if (found) {
        dd_slot_delete(dd, slot);
    }
    dd->pool[idx].seq = dd->free_head;
    dd->free_head = idx;
    dd->st.keys--;
}

static int dd_rehash(struct fr_dedup *dd, uint32_t nslots)
{
    uint32_t *slots = calloc(nslots, sizeof *slots);
    if (!slots) {
        return FR_ENOMEM;
    }
    free(dd->slots);
    dd->slots = slots;
    dd->slot_mask = nslots - 1;
    for (uint32_t k = 0; k < dd->heap_n + dd->fifo_n; k++) {
        uint32_t idx = k < dd->heap_n ? dd->heap[k] : dd_fifo_at(dd, k - dd->heap_n);
        uint64_t h = dd_hash(dd->pool[idx].key);
        int found;
        uint32_t slot = dd_probe(dd, dd->pool[idx].key, h, &found);
        dd->slots[slot] = idx + 1;
    }
    return FR_OK;
}

/* Room for one more entry: pool, heap, ring, and table load <= 1/2. The
 * ring is laid out again from its head when it grows. */
static int dd_reserve(struct fr_dedup *dd)
{
    if (dd->free_head == DD_NO_FREE && dd->pool_top == dd->pool_alloc) {
        uint32_t n = dd->pool_alloc ? dd->pool_alloc * 2 : 256;
        struct dd_entry *pool = realloc(dd->pool, (size_t)n * sizeof *pool);
        if (!pool) {
            return FR_ENOMEM;
        }
        dd->pool = pool;
        uint32_t *heap = realloc(dd->heap, (size_t)n * sizeof *heap);
        if (!heap) {
            return FR_ENOMEM;
        }
        dd->heap = heap;
        uint32_t *fifo = malloc((size_t)n * sizeof *fifo);
        if (!fifo) {
            return FR_ENOMEM;
        }
        for (uint32_t k = 0; k < dd->fifo_n; k++) {
            fifo[k] = dd_fifo_at(dd, k);
        }
        free(dd->fifo);
        dd->fifo = fifo;
        dd->fifo_head = 0;
        dd->pool_alloc = n;
    }
    if ((uint64_t)(dd->st.keys + 1) * 2 > (uint64_t)dd->slot_mask + 1) {
        return dd_rehash(dd, (dd->slot_mask + 1) * 2);
    }
    return FR_OK;
}

static void dd_update_bytes(struct fr_dedup *dd)
{
    dd->st.bytes =
        sizeof *dd + ((uint64_t)dd->slot_mask + 1) * sizeof *dd->slots +
        (uint64_t)dd->pool_alloc * (sizeof *dd->pool + sizeof *dd->heap + sizeof *dd->fifo);
}

int fr_dedup_create(const struct fr_dedup_opts *opts, struct fr_dedup **out)
{
    *out = NULL;
    if (!opts || opts->max_keys < 16 || opts->max_keys > DD_MAX_KEYS) {
        return FR_EINVAL;
    }
    struct fr_dedup *dd = calloc(1, sizeof *dd);
    if (!dd) {
        return FR_ENOMEM;
    }
    dd->opts = *opts;
    dd->free_head = DD_NO_FREE;
    dd->slots = calloc(DD_MIN_SLOTS, sizeof *dd->slots);
    if (!dd->slots) {
        free(dd);
        return FR_ENOMEM;
    }
    dd->slot_mask = DD_MIN_SLOTS - 1;
    dd_update_bytes(dd);
    *out = dd;
    return FR_OK;
}

void fr_dedup_destroy(struct fr_dedup *dd)
{
    if (!dd) {
        return;
    }
    free(dd->pool);
    free(dd->heap);
    free(dd->fifo);
    free(dd->slots);
    free(dd);
}

int fr_dedup_contains(const struct fr_dedup *dd, const uint8_t key[16])
{
    int found;
    dd_probe(dd, key, dd_hash(key), &found);
    return found;
}

int fr_dedup_insert(struct fr_dedup *dd, const uint8_t key[16], int64_t event_us)
{
    uint64_t h = dd_hash(key);
    int found;
    dd_probe(dd, key, h, &found);
    if (found) {
        dd->st.duplicates++;
        return 0;
    }
    if (dd->st.keys >= dd->opts.max_keys) {
        uint32_t oldest = dd_front(dd);
        dd_drop_front(dd, oldest);
        dd_release(dd, oldest);
        dd->st.forced_evictions++;
    }
    int rc = dd_reserve(dd);
    if (rc < 0) {
        return rc;
    }
    uint32_t idx = dd->free_head;
    if (idx != DD_NO_FREE) {
        dd->free_head = (uint32_t)dd->pool[idx].seq;
    } else {
        idx = dd->pool_top++;
    }
    struct dd_entry *e = &dd->pool[idx];
    memcpy(e->key, key, 16);
    e->t = event_us;
    e->seq = dd->seq_next++;
    uint32_t slot = dd_probe(dd, key, h, &found);
    dd->slots[slot] = idx + 1;
    dd_queue(dd, idx);
    dd->st.keys++;
    dd->st.inserts++;
    dd_update_bytes(dd);
    return 1;
}

void fr_dedup_prefetch(const struct fr_dedup *dd, const uint8_t key[16])
{
    __builtin_prefetch(&dd->slots[(uint32_t)dd_hash(key) & dd->slot_mask]);
}

/* Expiry releases the ring's keys in order, about one per record as the
 * watermark moves: the pool entries DD_AHEAD keys ahead, then their table
 * slots DD_AHEAD / 2 ahead (hashed from the entries fetched before), are
 * asked for early, so a release does not wait for either. */
#define DD_AHEAD 8u

void fr_dedup_expire(struct fr_dedup *dd, int64_t watermark_us)
{
    for (uint32_t idx; (idx = dd_front(dd)) != DD_NO_FREE && dd->pool[idx].t < watermark_us;) {
        if (dd->fifo_n > DD_AHEAD) {
            __builtin_prefetch(&dd->pool[dd_fifo_at(dd, DD_AHEAD)]);
            fr_dedup_prefetch(dd, dd->pool[dd_fifo_at(dd, DD_AHEAD / 2)].key);
        }
        dd_drop_front(dd, idx);
        dd_release(dd, idx);
        dd->st.expired++;
    }
    /* Give memory back after a burst: shrink the table to load ~1/4. */
    uint32_t nslots = dd->slot_mask + 1;
    if (nslots > DD_MIN_SLOTS && dd->st.keys * 8 < nslots) {
        while (nslots > DD_MIN_SLOTS && dd->st.keys * 8 < nslots) {
            nslots /= 2;
        }
        if (dd_rehash(dd, nslots) == FR_OK) {
            dd_update_bytes(dd);
        }
    }
}

void fr_dedup_stats(const struct fr_dedup *dd, struct fr_dedup_stats *stats)
{
    *stats = dd->st;
}

/* Sift heap[i] down within heap[0..n). */
static void dd_sift_down(const struct fr_dedup *dd, uint32_t i, uint32_t n)
{
    uint32_t *heap = dd->heap;
    uint32_t moving = heap[i];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n) {
            break;
        }
        if (c + 1 < n && dd_less(dd, heap[c + 1], heap[c])) {
            c++;
        }
        if (!dd_less(dd, heap[c], moving)) {
            break;
        }
        heap[i] = heap[c];
        i = c;
    }
    heap[i] = moving;
}

/*
 * Put the heap array in ascending (event time, sequence) order, in place:
 * the order the saved state lists the keys in. An ascending array is
 * itself a valid min-heap, so the set is unchanged for every other
 * operation, and no copy of the keys is made. Heapsort on the min-heap
 * leaves it descending, then it is reversed; an array already ascending
 * (nothing changed since the last save) costs one linear check.
 *
 * Only the heap array's order changes, which no result depends on (ties
 * are broken by the sequence, never by position); that is why a save may
 * do it through a const set, as topk.c caches its saved order.
 */
static void dd_sort_heap(const struct fr_dedup *dd)
{
    uint32_t *heap = dd->heap;
    uint32_t n = dd->heap_n;
    uint32_t k = 1;
    while (k < n && dd_less(dd, heap[k - 1], heap[k])) {
        k++;
    }
    if (k >= n) {
        return;
    }
    for (uint32_t end = n - 1; end > 0; end--) {
        uint32_t top = heap[0];
        heap[0] = heap[end];
        heap[end] = top;
        dd_sift_down(dd, 0, end);
    }
    for (uint32_t i = 0, j = n - 1; i < j; i++, j--) {
        uint32_t x = heap[i];
        heap[i] = heap[j];
        heap[j] = x;
    }
}

int fr_dedup_save(const struct fr_dedup *dd, struct fr_buf *out)
{
    struct fr_proc_out o;
    fr_proc_out_buf(&o, out);
    return fr_dedup_save_out(dd, &o);
}

int fr_dedup_save_out(const struct fr_dedup *dd, struct fr_proc_out *out)
{
    if (out->mode != FR_PROC_OUT_COUNT) { /* a count does not depend on the order */
        dd_sort_heap(dd);
    }
    struct fr_proc_enc enc;
    fr_proc_enc_begin_out(&enc, out, DD_MAGIC, DD_VERSION);
    fr_proc_enc_u64(&enc, dd->seq_next);
    fr_proc_enc_u64(&enc, dd->st.inserts);
    fr_proc_enc_u64(&enc, dd->st.duplicates);
    fr_proc_enc_u64(&enc, dd->st.expired);
    fr_proc_enc_u64(&enc, dd->st.forced_evictions);
    fr_proc_enc_u32(&enc, dd->heap_n + dd->fifo_n);
    /* The sorted heap and the ring, merged. */
    for (uint32_t h = 0, f = 0; (h < dd->heap_n || f < dd->fifo_n) && enc.err == FR_OK;) {
        uint32_t idx;
        if (f < dd->fifo_n && (h == dd->heap_n || dd_less(dd, dd_fifo_at(dd, f), dd->heap[h]))) {
            idx = dd_fifo_at(dd, f++);
        } else {
            idx = dd->heap[h++];
        }
        const struct dd_entry *e = &dd->pool[idx];
        fr_proc_enc_bytes(&enc, e->key, 16);
        fr_proc_enc_i64(&enc, e->t);
        fr_proc_enc_u64(&enc, e->seq);
    }
    return fr_proc_enc_end(&enc);
}

int fr_dedup_load(struct fr_dedup *dd, const void *bytes, size_t len)
{
    struct fr_dedup *fresh = NULL;
    struct fr_proc_dec dec;
    int rc = fr_proc_dec_begin(&dec, bytes, len, DD_MAGIC, DD_VERSION);
    if (rc < 0) {
        return rc;
    }
    uint64_t seq_next = fr_proc_dec_u64(&dec);
    struct fr_dedup_stats st = {0};
    st.inserts = fr_proc_dec_u64(&dec);
    st.duplicates = fr_proc_dec_u64(&dec);
    st.expired = fr_proc_dec_u64(&dec);
    st.forced_evictions = fr_proc_dec_u64(&dec);
    uint32_t n = fr_proc_dec_count(&dec, UINT32_MAX, DD_ENTRY_BYTES);
    if (dec.err != FR_OK) {
        return dec.err;
    }
    if (n > dd->opts.max_keys) {
        return FR_ETOOBIG;
    }
    rc = fr_dedup_create(&dd->opts, &fresh);
    if (rc < 0) {
        return rc;
    }
    int64_t prev_t = 0;
    uint64_t prev_seq = 0;
    for (uint32_t k = 0; k < n; k++) {
        const uint8_t *key = fr_proc_dec_bytes(&dec, 16);
        int64_t t = fr_proc_dec_i64(&dec);
        uint64_t seq = fr_proc_dec_u64(&dec);
        if (dec.err != FR_OK || !FR_PROC_TIME_OK(t) || seq >= seq_next ||
            (k > 0 && (t < prev_t || (t == prev_t && seq <= prev_seq)))) {
            rc = FR_ECORRUPT;
            goto cleanup;
        }
        prev_t = t;
        prev_seq = seq;
        rc = dd_reserve(fresh);
        if (rc < 0) {
            goto cleanup;
        }
        uint64_t h = dd_hash(key);
        int found;
        uint32_t slot = dd_probe(fresh, key, h, &found);
        if (found) {
            rc = FR_ECORRUPT;
            goto cleanup;
        }
        uint32_t idx = fresh->pool_top++;
        memcpy(fresh->pool[idx].key, key, 16);
        fresh->pool[idx].t = t;
        fresh->pool[idx].seq = seq;
        fresh->slots[slot] = idx + 1;
        /* Ascending: all on the ring. */
        fresh->fifo[fresh->fifo_n++] = idx;
        fresh->st.keys++;
    }
    rc = fr_proc_dec_end(&dec);
    if (rc < 0) {
        goto cleanup;
    }
    fresh->seq_next = seq_next;
    st.keys = fresh->st.keys;
    fresh->st = st;
    dd_update_bytes(fresh);
    /* Swap the contents so dd keeps its address. */
    struct fr_dedup tmp = *dd;
    *dd = *fresh;
    *fresh = tmp;
cleanup:
    fr_dedup_destroy(fresh);
    return rc;
}
