/*
 * test_log_torn.c — torn tails, at every byte. For each of 20 seeds: write
 * K records of random shape, then cut the segment at every length between
 * the end of record K-1 and the end of record K, and also replace the tail
 * of record K with garbage or zeros (with extra bytes past its end). Each
 * time, opening must keep exactly the records that are whole, report the
 * cut bytes, and continue at the next offset with a new record; a reader
 * must then see the old records and the new one, densely. The durable
 * marker is the one the writer published when K-1 records were synced:
 * a real torn tail is never acknowledged (a segment shorter than the
 * marker's claim is damage, refused: test_log.c test_lost_acknowledged).
 */
#include "check.h"

#include "test_log_util.c"

#include "core/diag.h"

#define TOPIC "t"
#define SEEDS 20
#define MAX_PAYLOAD 1000

static int64_t cycles;
static uint8_t *torn_mark; /* the marker file with K-1 records durable */
static size_t torn_mark_len;
static char torn_mark_path[2100];

/* Make the segment file hold data[0..len), then open and check. */
static void check_cut(const char *dir, const char *seg, const uint8_t *data, size_t len,
                      uint64_t seed, int64_t expect, int64_t cut)
{
    struct fr_log_opts opts;
    struct tl_io io;
    struct fr_log *log = NULL;
    struct fr_log_recovery rec = {0};
    tl_opts(&opts, &io);
    CHECK_EQ_INT(tl_spew(seg, data, len), 0);
    CHECK_EQ_INT(tl_spew(torn_mark_path, torn_mark, torn_mark_len), 0);
    int rc = fr_log_open(dir, TOPIC, &opts, &log);
    CHECK_EQ_INT(rc, FR_OK);
    if (rc != FR_OK) {
        fprintf(stderr, "seed %llu len %zu\n", (unsigned long long)seed, len);
        return;
    }
    CHECK_EQ_INT(fr_log_recovery(log, 0, &rec), FR_OK);
    CHECK_EQ_INT(rec.bytes_cut, cut);
    CHECK_EQ_INT(rec.records_cut, cut > 0);
    CHECK_EQ_INT(rec.end_offset, expect);
    CHECK_EQ_INT(fr_log_durable_end(log, 0), expect);
    /* The next record is new data under the next offset. */
    struct tl_rec g;
    int64_t off = -1;
    tl_gen(&g, seed + 1000, 0, expect, MAX_PAYLOAD);
    CHECK_EQ_INT(fr_log_append(log, 0, &g.rec, &off), FR_OK);
    CHECK_EQ_INT(off, expect);
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    fr_log_close(log);

    struct fr_log_reader *reader = NULL;
    struct fr_log_rec r;
    CHECK_EQ_INT(fr_log_reader_open(dir, TOPIC, 0, 0, NULL, &reader), FR_OK);
    for (int64_t i = 0; i <= expect && reader; i++) {
        CHECK_EQ_INT(fr_log_reader_next(reader, &r, 0), 1);
        tl_gen(&g, i < expect ? seed : seed + 1000, 0, i, MAX_PAYLOAD);
        CHECK_EQ_INT(r.offset, i);
        CHECK(tl_same(&r, &g.rec));
    }
    CHECK_EQ_INT(fr_log_reader_next(reader, &r, 0), 0);
    fr_log_reader_close(reader);
    if (check_case_failed) {
        fprintf(stderr, "seed %llu len %zu expect %lld cut %lld\n", (unsigned long long)seed, len,
                (long long)expect, (long long)cut);
    }
    cycles++;
}

static void torn_seed(uint64_t seed)
{
    char dir[1024], seg[2048];
    tl_tmpdir(dir);
    tl_seg_path(seg, sizeof seg, dir, TOPIC, 0, 0);
    snprintf(torn_mark_path, sizeof torn_mark_path, "%.*s/durable",
             (int)(strrchr(seg, '/') - seg), seg);
    uint64_t st = seed;
    int64_t k = 2 + (int64_t)tl_below(&st, 20);

    struct fr_log_opts opts;
    struct tl_io io;
    struct fr_log *log = NULL;
    tl_opts(&opts, &io);
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, &opts, &log), FR_OK);
    struct tl_rec g;
    for (int64_t i = 0; i < k; i++) {
        tl_gen(&g, seed, 0, i, MAX_PAYLOAD);
        CHECK_EQ_INT(fr_log_append(log, 0, &g.rec, NULL), FR_OK);
        if (i == k - 2) {
            CHECK_EQ_INT(fr_log_flush(log), FR_OK);
            torn_mark = tl_slurp(torn_mark_path, &torn_mark_len);
            CHECK(torn_mark != NULL);
        }
    }
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    fr_log_close(log);
    size_t size_b = 0;
    uint8_t *orig = tl_slurp(seg, &size_b);
    size_t size_a = (size_t)tl_frame_pos(seg, k - 1);
    CHECK(orig && size_a > 32 && size_a < size_b);
    if (!orig || check_case_failed) {
        free(orig);
        return;
    }

    /* Every cut between the end of record K-1 and the end of record K. */
    for (size_t len = size_a; len <= size_b && !check_case_failed; len++) {
        int whole = len == size_b;
        check_cut(dir, seg, orig, len, seed, whole ? k : k - 1,
                  whole ? 0 : (int64_t)(len - size_a));
    }

    /* Record K's tail overwritten with garbage or zeros, possibly longer
     * than the record was (preallocated or recycled blocks). */
    uint8_t *buf = malloc(size_b + 4096);
    for (int t = 0; t < 24 && !check_case_failed; t++) {
        size_t p = size_a + tl_below(&st, size_b - size_a);
        size_t extra = tl_below(&st, 3) == 0 ? 0 : tl_below(&st, 3000);
        size_t len = size_b + extra;
        memcpy(buf, orig, p);
        for (size_t i = p; i < len; i++) {
            buf[i] = t % 2 ? 0 : (uint8_t)tl_rand(&st);
        }
        if (t % 4 == 3) {
            buf[p] = orig[p]; /* keep a prefix of the length field */
        }
        check_cut(dir, seg, buf, len, seed, k - 1, (int64_t)(len - size_a));
    }
    /* All K records whole, followed by zeros. */
    memcpy(buf, orig, size_b);
    memset(buf + size_b, 0, 4096);
    check_cut(dir, seg, buf, size_b + 4096, seed, k, 4096);
    free(buf);
    free(orig);
    free(torn_mark);
    torn_mark = NULL;
    tl_rm_rf(dir);
}

static void test_torn_tails(void)
{
    for (uint64_t seed = 1; seed <= SEEDS && !check_case_failed; seed++) {
        torn_seed(seed);
    }
    fprintf(stderr, "torn tails: %lld reopen cycles over %d seeds\n", (long long)cycles, SEEDS);
}

int main(void)
{
    fr_diag_set_level(FR_DIAG_ERROR); /* one "cut N bytes" warning per cycle otherwise */
    RUN(test_torn_tails);
    return check_report();
}
