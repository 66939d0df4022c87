/*
 * test_process_state.c — the watermark (src/process/watermark.c), the
 * dedup set (src/process/dedup.c) and the checkpoint envelope
 * (src/process/state.c): the exact comparison rules, forced eviction at the
 * cap, the set against a plain array over random keys (after rax-test),
 * growth and shrink, and save/load: byte-identical re-saves, the streamed
 * save against the buffered one (bytes, chunk bounds, writer errors), and damaged
 * or hostile blobs (bit flips, truncation, re-checksummed garbage) that
 * must be refused without crashing or changing the state.
 */
#include "check.h"

#include "core/buf.h"
#include "core/crc32c.h"
#include "core/err.h"
#include "process/process.h"
#include "process/process_int.h"

#define SEC INT64_C(1000000)

static uint64_t rng = 12345;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void key_of(uint64_t n, uint8_t key[16])
{
    memset(key, 0, 16);
    memcpy(key, &n, 8);
    key[15] = (uint8_t)(n * 31);
}

/* Recompute the CRC of an envelope after the test changed its bytes. */
static void reseal(uint8_t *b, size_t len)
{
    uint32_t crc = fr_crc32c(0, b, len - 4);
    for (int i = 0; i < 4; i++) {
        b[len - 4 + (size_t)i] = (uint8_t)(crc >> (8 * i));
    }
}

/* ------------------------------------------------------------------------ */
/* Watermark                                                                  */
/* ------------------------------------------------------------------------ */

static void test_wm_single(void)
{
    struct fr_proc_wm *wm = NULL;
    CHECK_EQ_INT(fr_proc_wm_create(120000, 4, &wm), FR_OK);
    CHECK(fr_proc_wm_get(wm) == FR_PROC_WM_NONE);
    CHECK_EQ_INT(fr_proc_wm_observe(wm, 0, 1000 * SEC), FR_OK);
    CHECK_EQ_INT(fr_proc_wm_get(wm), 880 * SEC);
    CHECK_EQ_INT(fr_proc_wm_observe(wm, 0, 900 * SEC), FR_OK); /* older: no change */
    CHECK_EQ_INT(fr_proc_wm_get(wm), 880 * SEC);
    CHECK_EQ_INT(fr_proc_wm_observe(wm, 0, 1001 * SEC), FR_OK);
    CHECK_EQ_INT(fr_proc_wm_get(wm), 881 * SEC);
    CHECK_EQ_INT(fr_proc_wm_partition_max(wm, 0), 1001 * SEC);
    CHECK(fr_proc_wm_partition_max(wm, 1) == FR_PROC_WM_NONE);
    CHECK(fr_proc_wm_partition_max(wm, 9) == FR_PROC_WM_NONE);
    CHECK_EQ_INT(fr_proc_wm_observe(wm, 4, 1), FR_EINVAL);
    CHECK_EQ_INT(fr_proc_wm_observe(wm, -1, 1), FR_EINVAL);
    CHECK_EQ_INT(fr_proc_wm_observe(wm, 0, INT64_MIN), FR_EINVAL);
    CHECK_EQ_INT(fr_proc_wm_observe(wm, 0, INT64_MAX), FR_EINVAL);
    CHECK_EQ_INT(fr_proc_wm_get(wm), 881 * SEC);
    fr_proc_wm_destroy(wm);
    fr_proc_wm_destroy(NULL);
    CHECK_EQ_INT(fr_proc_wm_create(-1, 4, &wm), FR_EINVAL);
    CHECK_EQ_INT(fr_proc_wm_create(1000, 0, &wm), FR_EINVAL);
    CHECK_EQ_INT(fr_proc_wm_create(1000, 70000, &wm), FR_EINVAL);
}

static void test_wm_partitions(void)
{
    struct fr_proc_wm *wm = NULL;
    CHECK_EQ_INT(fr_proc_wm_create(0, 3, &wm), FR_OK);
    CHECK_EQ_INT(fr_proc_wm_observe(wm, 0, 100 * SEC), FR_OK);
    CHECK_EQ_INT(fr_proc_wm_get(wm), 100 * SEC);
    /* A partition joining behind does not move the watermark back... */
    CHECK_EQ_INT(fr_proc_wm_observe(wm, 1, 50 * SEC), FR_OK);
    CHECK_EQ_INT(fr_proc_wm_get(wm), 100 * SEC);
    /* ...but holds it until it catches up. */
    CHECK_EQ_INT(fr_proc_wm_observe(wm, 0, 200 * SEC), FR_OK);
    CHECK_EQ_INT(fr_proc_wm_get(wm), 100 * SEC);
    CHECK_EQ_INT(fr_proc_wm_observe(wm, 1, 150 * SEC), FR_OK);
    CHECK_EQ_INT(fr_proc_wm_get(wm), 150 * SEC);
    CHECK_EQ_INT(fr_proc_wm_observe(wm, 1, 300 * SEC), FR_OK);
    CHECK_EQ_INT(fr_proc_wm_get(wm), 200 * SEC);
    /* Idle hook: an idle partition leaves the minimum. */
    CHECK_EQ_INT(fr_proc_wm_observe(wm, 2, 210 * SEC), FR_OK);
    CHECK_EQ_INT(fr_proc_wm_get(wm), 200 * SEC);
    CHECK_EQ_INT(fr_proc_wm_observe(wm, 0, 400 * SEC), FR_OK);
    CHECK_EQ_INT(fr_proc_wm_get(wm), 210 * SEC);
    CHECK_EQ_INT(fr_proc_wm_set_idle(wm, 2, 1), FR_OK);
    CHECK_EQ_INT(fr_proc_wm_get(wm), 300 * SEC);
    /* Its next record makes it active again; the watermark stays. */
    CHECK_EQ_INT(fr_proc_wm_observe(wm, 2, 220 * SEC), FR_OK);
    CHECK_EQ_INT(fr_proc_wm_get(wm), 300 * SEC);
    CHECK_EQ_INT(fr_proc_wm_observe(wm, 1, 500 * SEC), FR_OK);
    CHECK_EQ_INT(fr_proc_wm_get(wm), 300 * SEC);
    CHECK_EQ_INT(fr_proc_wm_observe(wm, 2, 450 * SEC), FR_OK);
    CHECK_EQ_INT(fr_proc_wm_get(wm), 400 * SEC);
    /* Idling 0 (the slowest) releases 450; all idle: it stays there. */
    for (int p = 0; p < 3; p++) {
        CHECK_EQ_INT(fr_proc_wm_set_idle(wm, p, 1), FR_OK);
    }
    CHECK_EQ_INT(fr_proc_wm_get(wm), 450 * SEC);
    CHECK_EQ_INT(fr_proc_wm_set_idle(wm, 3, 1), FR_EINVAL);
    CHECK_EQ_INT(fr_proc_wm_set_idle(wm, 0, 0), FR_OK);
    CHECK_EQ_INT(fr_proc_wm_get(wm), 450 * SEC); /* never back */

    /* Save / load round trip, byte-identical. */
    struct fr_buf a, b;
    fr_buf_init(&a, 1 << 20);
    fr_buf_init(&b, 1 << 20);
    CHECK_EQ_INT(fr_proc_wm_save(wm, &a), FR_OK);
    struct fr_proc_wm *copy = NULL;
    CHECK_EQ_INT(fr_proc_wm_create(0, 3, &copy), FR_OK);
    CHECK_EQ_INT(fr_proc_wm_load(copy, a.data, a.len), FR_OK);
    CHECK_EQ_INT(fr_proc_wm_save(copy, &b), FR_OK);
    CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
    CHECK_EQ_INT(fr_proc_wm_get(copy), 450 * SEC);
    CHECK_EQ_INT(fr_proc_wm_partition_max(copy, 2), 450 * SEC);
    /* Other lateness, or fewer partitions: a configuration error. */
    struct fr_proc_wm *other = NULL;
    CHECK_EQ_INT(fr_proc_wm_create(1000, 3, &other), FR_OK);
    CHECK_EQ_INT(fr_proc_wm_load(other, a.data, a.len), FR_ECONFIG);
    fr_proc_wm_destroy(other);
    CHECK_EQ_INT(fr_proc_wm_create(0, 2, &other), FR_OK);
    CHECK_EQ_INT(fr_proc_wm_load(other, a.data, a.len), FR_ECONFIG);
    CHECK(fr_proc_wm_get(other) == FR_PROC_WM_NONE); /* unchanged */
    fr_proc_wm_destroy(other);
    /* Damage. */
    a.data[20] ^= 1;
    CHECK_EQ_INT(fr_proc_wm_load(copy, a.data, a.len), FR_ECRC);
    a.data[20] ^= 1;
    CHECK_EQ_INT(fr_proc_wm_load(copy, a.data, a.len - 1), FR_ECORRUPT);
    /* A watermark behind a saved maximum is inconsistent. */
    memset(a.data + 24, 0, 8);
    reseal(a.data, a.len);
    CHECK_EQ_INT(fr_proc_wm_load(copy, a.data, a.len), FR_ECORRUPT);
    CHECK_EQ_INT(fr_proc_wm_get(copy), 450 * SEC);
    fr_buf_free(&a);
    fr_buf_free(&b);
    fr_proc_wm_destroy(copy);
    fr_proc_wm_destroy(wm);
}

/* ------------------------------------------------------------------------ */
/* Dedup                                                                      */
/* ------------------------------------------------------------------------ */

static struct fr_dedup *dedup_new(uint64_t cap)
{
    struct fr_dedup_opts o = {.max_keys = cap};
    struct fr_dedup *dd = NULL;
    if (fr_dedup_create(&o, &dd) != FR_OK) {
        exit(1);
    }
    return dd;
}

static void test_dedup_basics(void)
{
    struct fr_dedup *dd = dedup_new(1000);
    uint8_t k1[16], k2[16];
    key_of(1, k1);
    key_of(2, k2);
    CHECK_EQ_INT(fr_dedup_insert(dd, k1, 100 * SEC), 1);
    CHECK_EQ_INT(fr_dedup_insert(dd, k1, 100 * SEC), 0);
    CHECK_EQ_INT(fr_dedup_insert(dd, k1, 500 * SEC), 0); /* same id, other time */
    CHECK_EQ_INT(fr_dedup_insert(dd, k2, 101 * SEC), 1);
    /* A key leaves when the watermark passes its event time: t < wm. */
    fr_dedup_expire(dd, 100 * SEC);
    CHECK(fr_dedup_contains(dd, k1));
    fr_dedup_expire(dd, 100 * SEC + 1);
    CHECK(!fr_dedup_contains(dd, k1));
    CHECK(fr_dedup_contains(dd, k2));
    struct fr_dedup_stats st;
    fr_dedup_stats(dd, &st);
    CHECK_EQ_INT(st.keys, 1);
    CHECK_EQ_INT(st.inserts, 2);
    CHECK_EQ_INT(st.duplicates, 2);
    CHECK_EQ_INT(st.expired, 1);
    CHECK_EQ_INT(st.forced_evictions, 0);
    CHECK(st.bytes > 0);
    fr_dedup_destroy(dd);
    fr_dedup_destroy(NULL);
    struct fr_dedup_opts o = {.max_keys = 1};
    CHECK_EQ_INT(fr_dedup_create(&o, &dd), FR_EINVAL);
}

static void test_dedup_forced_eviction(void)
{
    struct fr_dedup *dd = dedup_new(16);
    uint8_t k[16];
    /* 16 keys; times 5,5,5,...: equal times evict in insert order. */
    for (uint64_t i = 0; i < 16; i++) {
        key_of(i, k);
        CHECK_EQ_INT(fr_dedup_insert(dd, k, (i < 8 ? 5 : 4) * SEC), 1);
    }
    key_of(100, k);
    CHECK_EQ_INT(fr_dedup_insert(dd, k, 9 * SEC), 1);
    struct fr_dedup_stats st;
    fr_dedup_stats(dd, &st);
    CHECK_EQ_INT(st.keys, 16);
    CHECK_EQ_INT(st.forced_evictions, 1);
    key_of(8, k); /* the oldest: time 4, inserted first among the 4s */
    CHECK(!fr_dedup_contains(dd, k));
    key_of(9, k);
    CHECK(fr_dedup_contains(dd, k));
    for (uint64_t i = 0; i < 7; i++) {
        key_of(200 + i, k);
        CHECK_EQ_INT(fr_dedup_insert(dd, k, 9 * SEC), 1);
    }
    /* All eight 4 s keys are gone now, the 5 s keys all still there. */
    for (uint64_t i = 0; i < 16; i++) {
        key_of(i, k);
        CHECK_EQ_INT(fr_dedup_contains(dd, k), i < 8);
    }
    /* The order survives save/load: the next forced eviction is key 0. */
    struct fr_buf a;
    fr_buf_init(&a, 1 << 20);
    CHECK_EQ_INT(fr_dedup_save(dd, &a), FR_OK);
    struct fr_dedup *copy = dedup_new(16);
    CHECK_EQ_INT(fr_dedup_load(copy, a.data, a.len), FR_OK);
    key_of(300, k);
    CHECK_EQ_INT(fr_dedup_insert(copy, k, 9 * SEC), 1);
    key_of(0, k);
    CHECK(!fr_dedup_contains(copy, k));
    key_of(1, k);
    CHECK(fr_dedup_contains(copy, k));
    /* A set larger than the loader's cap does not fit. */
    fr_dedup_destroy(copy);
    copy = dedup_new(16);
    key_of(1, k);
    fr_dedup_insert(copy, k, 1);
    struct fr_buf big;
    fr_buf_init(&big, 1 << 20);
    struct fr_dedup *many = dedup_new(64);
    for (uint64_t i = 0; i < 40; i++) {
        key_of(i, k);
        fr_dedup_insert(many, k, (int64_t)i);
    }
    CHECK_EQ_INT(fr_dedup_save(many, &big), FR_OK);
    CHECK_EQ_INT(fr_dedup_load(copy, big.data, big.len), FR_ETOOBIG);
    key_of(1, k);
    CHECK(fr_dedup_contains(copy, k)); /* unchanged */
    fr_dedup_destroy(many);
    fr_dedup_destroy(copy);
    fr_buf_free(&a);
    fr_buf_free(&big);
    fr_dedup_destroy(dd);
}

/* The model's live keys in saved order: (time, insert sequence). */
struct model_key {
    int64_t t;
    uint64_t seq;
    uint64_t id;
};

static int model_key_cmp(const void *x, const void *y)
{
    const struct model_key *a = x, *b = y;
    if (a->t != b->t) {
        return a->t < b->t ? -1 : 1;
    }
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Save dd and check the listed keys against the model: exactly the live
 * keys, ascending by (time, sequence), with their times and sequences. */
static void check_saved_keys(const struct fr_dedup *dd, size_t n, const uint64_t *ids,
                             const int64_t *times, const uint64_t *seqs, const int *live,
                             uint64_t seq_next)
{
    static struct model_key want[20000];
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (live[i]) {
            want[w++] = (struct model_key){times[i], seqs[i], ids[i]};
        }
    }
    qsort(want, w, sizeof want[0], model_key_cmp);
    struct fr_buf b;
    fr_buf_init(&b, 1 << 24);
    CHECK_EQ_INT(fr_dedup_save(dd, &b), FR_OK);
    /* envelope head 16, five u64, u32 count, entries of 32, CRC 4 */
    CHECK_EQ_INT(b.len, 16 + 40 + 4 + 32 * w + 4);
    uint64_t next, count = 0;
    memcpy(&next, b.data + 16, 8);
    CHECK_EQ_INT(next, seq_next);
    memcpy(&count, b.data + 56, 4);
    CHECK_EQ_INT(count, w);
    for (size_t i = 0; i < w && b.len == 16 + 40 + 4 + 32 * w + 4; i++) {
        const uint8_t *e = b.data + 60 + 32 * i;
        uint8_t k[16];
        key_of(want[i].id, k);
        int64_t t;
        uint64_t seq;
        memcpy(&t, e + 16, 8);
        memcpy(&seq, e + 24, 8);
        if (memcmp(e, k, 16) != 0 || t != want[i].t || seq != want[i].seq) {
            CHECK(!"saved key differs from the model");
            break;
        }
    }
    fr_buf_free(&b);
}

/* The set against a plain array: random inserts, duplicates, expiry; every
 * so often a save (which reorders the heap in place and merges it with the
 * ring) is checked against the model's keys sorted by the test, and the
 * set must go on behaving the same after it. in_order: times follow a
 * clock with a few keys behind it, as the feed's do (mostly the ring);
 * else anywhere in the next 1000 units (mostly the heap). */
static void dedup_vs_array(int in_order)
{
    enum { N = 20000 };
    static uint64_t ids[N];
    static int64_t times[N];
    static uint64_t seqs[N];
    static int live[N];
    size_t n = 0;
    uint64_t seq = 0;
    struct fr_dedup *dd = dedup_new(1 << 20);
    int64_t wm = 0, clock = 1000;
    uint8_t k[16];
    int saves = 0;
    for (int step = 0; step < 60000; step++) {
        uint64_t r = rnd() % 100;
        if (step % 2500 == 1249) {
            check_saved_keys(dd, n, ids, times, seqs, live, seq);
            saves++;
        }
        if (r < 60 && n < N) {
            ids[n] = rnd();
            if (in_order) {
                clock += (int64_t)(rnd() % 3);
                times[n] = clock - (rnd() % 100 < 4 ? (int64_t)(rnd() % 500) : 0);
            } else {
                times[n] = wm + (int64_t)(rnd() % 1000);
            }
            seqs[n] = seq++;
            key_of(ids[n], k);
            CHECK_EQ_INT(fr_dedup_insert(dd, k, times[n]), 1);
            live[n++] = 1;
        } else if (r < 85 && n > 0) {
            size_t i = rnd() % n;
            key_of(ids[i], k);
            int want = live[i];
            CHECK_EQ_INT(fr_dedup_contains(dd, k), want);
            if (!want) {
                int64_t t = in_order ? clock : wm + 5000;
                CHECK_EQ_INT(fr_dedup_insert(dd, k, t), 1);
                times[i] = t;
                seqs[i] = seq++;
                live[i] = 1;
            } else {
                CHECK_EQ_INT(fr_dedup_insert(dd, k, wm), 0);
            }
        } else {
            wm = in_order ? (clock - 800 > wm ? clock - 800 : wm) : wm + (int64_t)(rnd() % 40);
            fr_dedup_expire(dd, wm);
            for (size_t i = 0; i < n; i++) {
                if (live[i] && times[i] < wm) {
                    live[i] = 0;
                }
            }
        }
    }
    check_saved_keys(dd, n, ids, times, seqs, live, seq);
    CHECK(saves >= 20);
    size_t want = 0;
    for (size_t i = 0; i < n; i++) {
        key_of(ids[i], k);
        CHECK_EQ_INT(fr_dedup_contains(dd, k), live[i]);
        want += live[i];
    }
    struct fr_dedup_stats st;
    fr_dedup_stats(dd, &st);
    CHECK_EQ_INT(st.keys, want);
    /* Expire everything: the table shrinks back. */
    uint64_t peak = st.bytes;
    fr_dedup_expire(dd, INT64_MAX);
    fr_dedup_stats(dd, &st);
    CHECK_EQ_INT(st.keys, 0);
    CHECK(st.bytes < peak);
    fr_dedup_destroy(dd);
}

static void test_dedup_vs_array(void)
{
    dedup_vs_array(0);
    dedup_vs_array(1);
}

/* A full set evicts the smallest (time, sequence) first, whichever queue
 * holds it: against a model that scans for the minimum. */
static void test_dedup_forced_order(void)
{
    enum { CAP = 64, N = 5000 };
    static uint64_t ids[N];
    static int64_t times[N];
    static uint64_t seqs[N];
    static int live[N];
    struct fr_dedup *dd = dedup_new(CAP);
    uint8_t k[16];
    int64_t clock = 0;
    for (size_t n = 0; n < N; n++) {
        clock += (int64_t)(rnd() % 4);
        ids[n] = rnd();
        times[n] = clock - (rnd() % 100 < 20 ? (int64_t)(rnd() % 300) : 0);
        seqs[n] = n;
        size_t nlive = 0, min = SIZE_MAX;
        for (size_t i = 0; i < n; i++) {
            if (!live[i]) {
                continue;
            }
            nlive++;
            if (min == SIZE_MAX || times[i] < times[min] ||
                (times[i] == times[min] && seqs[i] < seqs[min])) {
                min = i;
            }
        }
        key_of(ids[n], k);
        CHECK_EQ_INT(fr_dedup_insert(dd, k, times[n]), 1);
        live[n] = 1;
        if (nlive == CAP) {
            live[min] = 0;
            key_of(ids[min], k);
            if (fr_dedup_contains(dd, k)) {
                CHECK(!"the forced eviction took another key than the oldest");
                break;
            }
        }
    }
    check_saved_keys(dd, N, ids, times, seqs, live, N);
    struct fr_dedup_stats st;
    fr_dedup_stats(dd, &st);
    CHECK_EQ_INT(st.keys, CAP);
    CHECK_EQ_INT(st.forced_evictions, N - CAP);
    fr_dedup_destroy(dd);
}

static void test_dedup_save_load(void)
{
    struct fr_dedup *dd = dedup_new(100000);
    uint8_t k[16];
    for (uint64_t i = 0; i < 5000; i++) {
        key_of(rnd(), k);
        fr_dedup_insert(dd, k, (int64_t)(rnd() % 100) * SEC);
    }
    fr_dedup_expire(dd, 30 * SEC);
    struct fr_buf a, b;
    fr_buf_init(&a, 1 << 24);
    fr_buf_init(&b, 1 << 24);
    CHECK_EQ_INT(fr_dedup_save(dd, &a), FR_OK);
    struct fr_dedup *copy = dedup_new(100000);
    CHECK_EQ_INT(fr_dedup_load(copy, a.data, a.len), FR_OK);
    CHECK_EQ_INT(fr_dedup_save(copy, &b), FR_OK);
    CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
    struct fr_dedup_stats s1, s2;
    fr_dedup_stats(dd, &s1);
    fr_dedup_stats(copy, &s2);
    CHECK_EQ_INT(s1.keys, s2.keys);
    CHECK_EQ_INT(s1.inserts, s2.inserts);
    CHECK_EQ_INT(s1.expired, s2.expired);
    /* Both evolve identically from here. */
    for (uint64_t i = 0; i < 2000; i++) {
        key_of(rnd() % 50000, k);
        int64_t t = 30 * SEC + (int64_t)(rnd() % 100) * SEC;
        CHECK_EQ_INT(fr_dedup_insert(dd, k, t), fr_dedup_insert(copy, k, t));
    }
    /* Damaged blobs are refused and leave the state alone. */
    a.data[100] ^= 0x10;
    CHECK_EQ_INT(fr_dedup_load(copy, a.data, a.len), FR_ECRC);
    a.data[100] ^= 0x10;
    CHECK_EQ_INT(fr_dedup_load(copy, a.data, 10), FR_ECORRUPT);
    CHECK_EQ_INT(fr_dedup_load(copy, NULL, 0), FR_ECORRUPT);
    uint8_t saved[64];
    memcpy(saved, a.data, 64);
    a.data[0] = 'X';
    CHECK_EQ_INT(fr_dedup_load(copy, a.data, a.len), FR_ECORRUPT);
    memcpy(a.data, saved, 64);
    a.data[4] = 2; /* version */
    CHECK_EQ_INT(fr_dedup_load(copy, a.data, a.len), FR_ECORRUPT);
    memcpy(a.data, saved, 64);
    /* Entries out of order (swap the first two), re-checksummed. */
    size_t first = 16 + 5 * 8 + 4;
    uint8_t tmp[32];
    memcpy(tmp, a.data + first, 32);
    memmove(a.data + first, a.data + first + 32, 32);
    memcpy(a.data + first + 32, tmp, 32);
    reseal(a.data, a.len);
    CHECK_EQ_INT(fr_dedup_load(copy, a.data, a.len), FR_ECORRUPT);
    fr_dedup_stats(copy, &s2);
    fr_dedup_stats(dd, &s1);
    CHECK_EQ_INT(s1.keys, s2.keys);
    fr_buf_free(&a);
    fr_buf_free(&b);
    fr_dedup_destroy(copy);
    fr_dedup_destroy(dd);
}

/* Hostile checkpoints: random mutations with a valid CRC never crash a
 * loader, and a state that loads saves again. */
/* A writer that keeps what it is sent, checks the protocol (begin once,
 * first, with the exact length; chunks of 1..FR_PROC_STREAM_CHUNK bytes)
 * and can fail at its n-th call (begin is call 1). */
struct keep_writer {
    struct fr_buf got;
    uint64_t announced;
    int begins, calls, fail_at, bad_chunk;
    size_t max_chunk;
};

static int keep_begin(void *arg, uint64_t len)
{
    struct keep_writer *kw = arg;
    kw->calls++;
    kw->begins++;
    kw->announced = len;
    if (kw->got.len != 0) {
        kw->bad_chunk = 1;
    }
    return kw->calls == kw->fail_at ? FR_EIO : FR_OK;
}

static int keep_write(void *arg, const void *bytes, size_t n)
{
    struct keep_writer *kw = arg;
    kw->calls++;
    if (kw->begins != 1 || n == 0 || n > FR_PROC_STREAM_CHUNK) {
        kw->bad_chunk = 1;
    }
    kw->max_chunk = n > kw->max_chunk ? n : kw->max_chunk;
    if (kw->calls == kw->fail_at) {
        return FR_ENOSPC;
    }
    return fr_buf_append(&kw->got, bytes, n);
}

static void feed_records(struct fr_proc *proc, int from, int to)
{
    char ev[512];
    for (int i = from; i < to; i++) {
        /* ~2 % duplicates, a few late ones, 9 wikis, titles and users */
        int id = i % 50 == 7 ? i - 3 : i;
        int sec = i / 40 - (i % 97 == 5 ? 200 : 0);
        snprintf(ev, sizeof ev,
                 "{\"meta\":{\"id\":\"%08x-0000-4000-8000-%012x\",\"dt\":"
                 "\"2026-07-10T16:%02d:%02dZ\"},\"wiki\":\"w%d\",\"type\":\"%s\",\"title\":"
                 "\"Page %d\",\"user\":\"user %d\",\"bot\":%s}",
                 id, id * 7, (sec < 0 ? 0 : sec) / 60 % 60, (sec < 0 ? 0 : sec) % 60, i % 9,
                 i % 3 ? "edit" : "new", i % 211, i % 37, i % 5 ? "false" : "true");
        struct fr_proc_pos pos = {0, i, INT64_C(1783699200000) + 3600000};
        struct fr_proc_result res;
        CHECK_EQ_INT(fr_proc_record(proc, &pos, ev, strlen(ev), NULL, NULL, &res), FR_OK);
    }
}

/* fr_proc_save_stream sends exactly fr_proc_save's bytes, in bounded
 * chunks, at every size of state (empty, under one chunk, many chunks);
 * a writer's error stops it and is returned. */
static void test_save_stream(void)
{
    struct fr_proc_opts opts;
    fr_proc_opts_default(&opts);
    struct fr_proc *proc = NULL;
    CHECK_EQ_INT(fr_proc_create(&opts, &proc), FR_OK);
    struct fr_buf want;
    fr_buf_init(&want, 1 << 26);
    int sizes[] = {0, 30, 2000, 12000};
    int done = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        feed_records(proc, done, sizes[s]);
        done = sizes[s];
        fr_buf_reset(&want);
        CHECK_EQ_INT(fr_proc_save(proc, &want), FR_OK);
        struct keep_writer kw = {0};
        fr_buf_init(&kw.got, 1 << 26);
        struct fr_proc_writer w = {keep_begin, keep_write, &kw};
        CHECK_EQ_INT(fr_proc_save_stream(proc, &w), FR_OK);
        CHECK_EQ_INT(kw.begins, 1);
        CHECK(!kw.bad_chunk);
        CHECK_EQ_INT(kw.announced, want.len);
        CHECK_EQ_INT(kw.got.len, want.len);
        if (kw.got.len == want.len) {
            CHECK_MEM(kw.got.data, want.data, want.len);
        }
        if (sizes[s] == 12000) {
            CHECK(want.len > 4 * FR_PROC_STREAM_CHUNK);
            CHECK_EQ_INT(kw.max_chunk, FR_PROC_STREAM_CHUNK);
            /* Fail at every call in turn: the error comes back each time. */
            int calls = kw.calls;
            for (int f = 1; f <= calls; f++) {
                struct keep_writer bad = {.fail_at = f};
                fr_buf_init(&bad.got, 1 << 26);
                struct fr_proc_writer bw = {keep_begin, keep_write, &bad};
                CHECK_EQ_INT(fr_proc_save_stream(proc, &bw), f == 1 ? FR_EIO : FR_ENOSPC);
                CHECK_EQ_INT(bad.calls, f);
                fr_buf_free(&bad.got);
            }
        }
        /* The stream loads back to the same state. */
        struct fr_proc *copy = NULL;
        CHECK_EQ_INT(fr_proc_create(&opts, &copy), FR_OK);
        CHECK_EQ_INT(fr_proc_load(copy, kw.got.data, kw.got.len), FR_OK);
        struct fr_buf again;
        fr_buf_init(&again, 1 << 26);
        CHECK_EQ_INT(fr_proc_save(copy, &again), FR_OK);
        CHECK_EQ_INT(again.len, want.len);
        if (again.len == want.len) {
            CHECK_MEM(again.data, want.data, want.len);
        }
        fr_buf_free(&again);
        fr_proc_destroy(copy);
        fr_buf_free(&kw.got);
    }
    struct fr_proc_stats st;
    fr_proc_stats(proc, &st);
    CHECK(st.duplicates > 0 && st.late > 0 && st.dedup.keys > 1000);
    fr_buf_free(&want);
    fr_proc_destroy(proc);
}

static void test_hostile_blobs(void)
{
    struct fr_proc_opts opts;
    fr_proc_opts_default(&opts);
    opts.gate.max_event_bytes = 4096;
    struct fr_proc *proc = NULL;
    CHECK_EQ_INT(fr_proc_create(&opts, &proc), FR_OK);
    char ev[512];
    for (int i = 0; i < 300; i++) {
        snprintf(ev, sizeof ev,
                 "{\"meta\":{\"id\":\"%08x-0000-4000-8000-000000000000\",\"dt\":"
                 "\"2026-07-10T16:%02d:%02dZ\"},\"wiki\":\"w%d\",\"type\":\"%s\",\"title\":"
                 "\"T%d\",\"user\":\"u%d\"}",
                 i % 250, i / 60, i % 60, i % 3, i % 2 ? "edit" : "new", i % 7, i % 5);
        struct fr_proc_pos pos = {0, i, INT64_C(1783699200000) + 3600000};
        struct fr_proc_result res;
        CHECK_EQ_INT(fr_proc_record(proc, &pos, ev, strlen(ev), NULL, NULL, &res), FR_OK);
    }
    struct fr_buf a, m, again;
    fr_buf_init(&a, 1 << 24);
    fr_buf_init(&m, 1 << 24);
    fr_buf_init(&again, 1 << 24);
    CHECK_EQ_INT(fr_proc_save(proc, &a), FR_OK);
    struct fr_proc *victim = NULL;
    CHECK_EQ_INT(fr_proc_create(&opts, &victim), FR_OK);
    int loaded = 0;
    for (int round = 0; round < 3000; round++) {
        fr_buf_reset(&m);
        fr_buf_append(&m, a.data, a.len);
        int flips = 1 + (int)(rnd() % 4);
        for (int f = 0; f < flips; f++) {
            size_t at = 16 + rnd() % (m.len - 20);
            m.data[at] = (uint8_t)(rnd() % 3 == 0 ? m.data[at] ^ (1u << (rnd() % 8)) : rnd());
        }
        if (rnd() % 2) {
            reseal(m.data, m.len);
        }
        int rc = fr_proc_load(victim, m.data, m.len);
        if (rc == FR_OK) {
            loaded++;
            fr_buf_reset(&again);
            CHECK_EQ_INT(fr_proc_save(victim, &again), FR_OK);
        } else {
            CHECK(rc == FR_ECRC || rc == FR_ECORRUPT || rc == FR_ETOOBIG || rc == FR_ECONFIG);
        }
    }
    fprintf(stderr, "  3000 mutated checkpoints: %d loaded (counter bytes), the rest refused\n",
            loaded);
    fr_buf_free(&a);
    fr_buf_free(&m);
    fr_buf_free(&again);
    fr_proc_destroy(victim);
    fr_proc_destroy(proc);
}

/* The envelope helpers. */
static void test_envelope(void)
{
    struct fr_buf out;
    fr_buf_init(&out, 64);
    struct fr_proc_enc enc;
    fr_proc_enc_begin(&enc, &out, "TEST", 7);
    fr_proc_enc_u8(&enc, 1);
    fr_proc_enc_u32(&enc, 0x01020304);
    fr_proc_enc_i64(&enc, -2);
    fr_proc_enc_str(&enc, "abc", 3);
    CHECK_EQ_INT(fr_proc_enc_end(&enc), FR_OK);
    CHECK_EQ_INT(out.len, 16 + 1 + 4 + 8 + 7 + 4);
    CHECK_MEM(out.data, "TEST\x07\x00\x00\x00\x14\x00\x00\x00\x00\x00\x00\x00", 16);
    struct fr_proc_dec dec;
    CHECK_EQ_INT(fr_proc_dec_begin(&dec, out.data, out.len, "TEST", 7), FR_OK);
    CHECK_EQ_INT(fr_proc_dec_u8(&dec), 1);
    CHECK_EQ_INT(fr_proc_dec_u32(&dec), 0x01020304);
    CHECK_EQ_INT(fr_proc_dec_i64(&dec), -2);
    uint32_t n;
    const char *s = fr_proc_dec_str(&dec, 2, &n); /* longer than allowed */
    CHECK(s == NULL);
    CHECK_EQ_INT(fr_proc_dec_end(&dec), FR_ECORRUPT);
    CHECK_EQ_INT(fr_proc_dec_begin(&dec, out.data, out.len, "TEST", 6), FR_ECORRUPT);
    /* Past the buffer's cap: the envelope is cut back, the error kept. */
    size_t before = out.len;
    fr_proc_enc_begin(&enc, &out, "TEST", 1);
    fr_proc_enc_bytes(&enc, "0123456789012345678901234567890123456789", 40);
    CHECK_EQ_INT(fr_proc_enc_end(&enc), FR_ETOOBIG);
    CHECK_EQ_INT(out.len, before);
    fr_buf_free(&out);
    /* floor division for times before 1970 */
    CHECK_EQ_INT(fr_proc_floor(-1, 60), -60);
    CHECK_EQ_INT(fr_proc_floor(-60, 60), -60);
    CHECK_EQ_INT(fr_proc_floor(59, 60), 0);
    CHECK_EQ_INT(fr_proc_strcmp("a", 1, "ab", 2), -1);
    CHECK_EQ_INT(fr_proc_strcmp("b", 1, "ab", 2), 1);
    CHECK_EQ_INT(fr_proc_strcmp("\xc3\xa9", 2, "z", 1), 1); /* bytewise, unsigned */
}

int main(void)
{
    RUN(test_wm_single);
    RUN(test_wm_partitions);
    RUN(test_dedup_basics);
    RUN(test_dedup_forced_eviction);
    RUN(test_dedup_vs_array);
    RUN(test_dedup_forced_order);
    RUN(test_dedup_save_load);
    RUN(test_save_stream);
    RUN(test_hostile_blobs);
    RUN(test_envelope);
    return check_report();
}
