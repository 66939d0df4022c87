/*
 * test_pipeline_checkpoint.c — the checkpoint file (src/pipeline/
 * checkpoint.c): the streamed save (fr_ck_save_proc) against the buffered
 * one (fr_proc_save into ck->state, then fr_ck_save) and against the byte
 * table built here by hand, so a checkpoint of either writer (and of the
 * releases before streaming, which wrote the same table) loads; another
 * version, a bad CRC and a short file are refused; and a write that fails
 * half way (a real EFBIG from a file-size limit) leaves the previous
 * checkpoint in place and no temporary file behind. Also the trigger's
 * fixed rate (fr_ck_trigger_left), the rule the processor's planner
 * (epoch.c) waits by.
 */
#include "check.h"

#include "core/buf.h"
#include "core/crc32c.h"
#include "core/err.h"
#include "core/fsutil.h"
#include "pipeline/checkpoint.h"
#include "process/process.h"

#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>

static void feed(struct fr_proc *proc, int from, int to)
{
    char ev[400];
    for (int i = from; i < to; i++) {
        int id = i % 40 == 3 ? i - 1 : i; /* some duplicates */
        snprintf(ev, sizeof ev,
                 "{\"meta\":{\"id\":\"%08x-0000-4000-8000-%012x\",\"dt\":"
                 "\"2026-07-10T16:%02d:%02dZ\"},\"wiki\":\"w%d\",\"type\":\"edit\","
                 "\"title\":\"T%d\",\"user\":\"u%d\"}",
                 id, id, i / 6000 % 60, i / 100 % 60, i % 5, i % 61, i % 13);
        struct fr_proc_pos pos = {0, i, INT64_C(1783699200000) + 3600000};
        struct fr_proc_result res;
        CHECK_EQ_INT(fr_proc_record(proc, &pos, ev, strlen(ev), NULL, NULL, &res), FR_OK);
    }
}

static void read_all(const char *path, struct fr_buf *b)
{
    fr_buf_reset(b);
    CHECK_EQ_INT(fr_fs_read_file(path, b), FR_OK);
}

/* The checkpoint's byte table (checkpoint.c), written out by hand. */
static void by_hand(const struct fr_ck *ck, const struct fr_buf *state, uint32_t version,
                    struct fr_buf *out)
{
    fr_buf_reset(out);
    uint8_t b[8];
    fr_buf_append(out, "FRCK", 4);
    for (int i = 0; i < 4; i++) {
        b[i] = (uint8_t)(version >> (8 * i));
    }
    fr_buf_append(out, b, 4);
    for (int i = 0; i < 8; i++) {
        b[i] = (uint8_t)((uint64_t)ck->epoch >> (8 * i));
    }
    fr_buf_append(out, b, 8);
    for (int i = 0; i < 4; i++) {
        b[i] = (uint8_t)(ck->nparts >> (8 * i));
    }
    fr_buf_append(out, b, 4);
    for (uint32_t p = 0; p < ck->nparts; p++) {
        for (int i = 0; i < 8; i++) {
            b[i] = (uint8_t)((uint64_t)ck->next[p] >> (8 * i));
        }
        fr_buf_append(out, b, 8);
    }
    for (int i = 0; i < 8; i++) {
        b[i] = (uint8_t)((uint64_t)state->len >> (8 * i));
    }
    fr_buf_append(out, b, 8);
    fr_buf_append(out, state->data, state->len);
    uint32_t crc = fr_crc32c(0, out->data, out->len);
    for (int i = 0; i < 4; i++) {
        b[i] = (uint8_t)(crc >> (8 * i));
    }
    fr_buf_append(out, b, 4);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        n += e->d_name[0] != '.';
    }
    if (d) {
        closedir(d);
    }
    return n;
}

static void test_streamed_equals_buffered(void)
{
    const char *dir = check_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/checkpoint", dir);
    struct fr_proc_opts opts;
    fr_proc_opts_default(&opts);
    struct fr_proc *proc = NULL;
    CHECK_EQ_INT(fr_proc_create(&opts, &proc), FR_OK);
    struct fr_ck ck = {.epoch = 41, .nparts = 3, .next = {1000, 0, 77}};
    fr_buf_init(&ck.state, (size_t)1 << 28);
    struct fr_buf state, a, b, hand;
    fr_buf_init(&state, (size_t)1 << 28);
    fr_buf_init(&a, (size_t)1 << 28);
    fr_buf_init(&b, (size_t)1 << 28);
    fr_buf_init(&hand, (size_t)1 << 28);
    int sizes[] = {0, 50, 9000};
    int done = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        feed(proc, done, sizes[s]);
        done = sizes[s];
        ck.epoch++;
        fr_buf_reset(&state);
        CHECK_EQ_INT(fr_proc_save(proc, &state), FR_OK);
        /* buffered */
        fr_buf_reset(&ck.state);
        fr_buf_append(&ck.state, state.data, state.len);
        CHECK_EQ_INT(fr_ck_save(dir, &ck), FR_OK);
        read_all(path, &a);
        /* streamed: ck.state is not used */
        fr_buf_free(&ck.state);
        CHECK_EQ_INT(fr_ck_save_proc(dir, &ck, proc), FR_OK);
        read_all(path, &b);
        by_hand(&ck, &state, 1, &hand);
        CHECK_EQ_INT(a.len, hand.len);
        CHECK_EQ_INT(b.len, hand.len);
        if (a.len == hand.len && b.len == hand.len) {
            CHECK_MEM(a.data, hand.data, hand.len);
            CHECK_MEM(b.data, hand.data, hand.len);
        }
        CHECK_EQ_INT(count_entries(dir), 1); /* no temporary left */
        /* It loads: the header and exactly the state. */
        struct fr_ck got;
        memset(&got, 0, sizeof got);
        fr_buf_init(&got.state, (size_t)1 << 28);
        CHECK_EQ_INT(fr_ck_load(dir, &got), FR_OK);
        CHECK_EQ_INT(got.epoch, ck.epoch);
        CHECK_EQ_INT(got.nparts, 3);
        CHECK_EQ_INT(got.next[0], 1000);
        CHECK_EQ_INT(got.next[2], 77);
        CHECK_EQ_INT(got.state.len, state.len);
        if (got.state.len == state.len) {
            CHECK_MEM(got.state.data, state.data, state.len);
        }
        fr_buf_free(&got.state);
    }
    CHECK(state.len > 8 * FR_PROC_STREAM_CHUNK);
    /* Refused: another version (even with a good CRC), a flipped byte, a cut. */
    struct fr_ck got;
    memset(&got, 0, sizeof got);
    fr_buf_init(&got.state, (size_t)1 << 28);
    by_hand(&ck, &state, 2, &hand);
    CHECK_EQ_INT(fr_fs_write_atomic(path, hand.data, hand.len), FR_OK);
    CHECK_EQ_INT(fr_ck_load(dir, &got), FR_ECORRUPT);
    CHECK_EQ_INT(got.state.len, 0);
    by_hand(&ck, &state, 1, &hand);
    hand.data[hand.len / 2] ^= 0x10;
    CHECK_EQ_INT(fr_fs_write_atomic(path, hand.data, hand.len), FR_OK);
    CHECK_EQ_INT(fr_ck_load(dir, &got), FR_ECRC);
    CHECK_EQ_INT(fr_fs_write_atomic(path, hand.data, 30), FR_OK);
    CHECK(fr_ck_load(dir, &got) < 0);
    unlink(path);
    CHECK_EQ_INT(fr_ck_load(dir, &got), FR_ENOTFOUND);
    fr_buf_free(&got.state);
    fr_buf_free(&state);
    fr_buf_free(&a);
    fr_buf_free(&b);
    fr_buf_free(&hand);
    fr_proc_destroy(proc);
    rmdir(dir);
}

/* A write that fails in the middle of the state: the file-size limit makes
 * write(2) fail with EFBIG once the temporary passes it. */
static void test_failed_write_keeps_old(void)
{
    const char *dir = check_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/checkpoint", dir);
    struct fr_proc_opts opts;
    fr_proc_opts_default(&opts);
    struct fr_proc *proc = NULL;
    CHECK_EQ_INT(fr_proc_create(&opts, &proc), FR_OK);
    feed(proc, 0, 100);
    struct fr_ck ck = {.epoch = 7, .nparts = 1, .next = {100}};
    fr_buf_init(&ck.state, (size_t)1 << 28);
    CHECK_EQ_INT(fr_ck_save_proc(dir, &ck, proc), FR_OK);
    struct fr_buf old, now;
    fr_buf_init(&old, (size_t)1 << 28);
    fr_buf_init(&now, (size_t)1 << 28);
    read_all(path, &old);
    feed(proc, 100, 6000);
    ck.epoch = 8;
    struct rlimit saved, lim;
    CHECK_EQ_INT(getrlimit(RLIMIT_FSIZE, &saved), 0);
    lim = saved;
    lim.rlim_cur = 3 * FR_PROC_STREAM_CHUNK + 100;
    signal(SIGXFSZ, SIG_IGN);
    CHECK_EQ_INT(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = fr_ck_save_proc(dir, &ck, proc);
    CHECK_EQ_INT(setrlimit(RLIMIT_FSIZE, &saved), 0);
    signal(SIGXFSZ, SIG_DFL);
    CHECK(rc < 0);
    read_all(path, &now);
    CHECK_EQ_INT(now.len, old.len);
    if (now.len == old.len) {
        CHECK_MEM(now.data, old.data, old.len);
    }
    CHECK_EQ_INT(count_entries(dir), 1); /* the temporary is gone */
    struct fr_ck got;
    memset(&got, 0, sizeof got);
    fr_buf_init(&got.state, (size_t)1 << 28);
    CHECK_EQ_INT(fr_ck_load(dir, &got), FR_OK);
    CHECK_EQ_INT(got.epoch, 7);
    /* And without the limit the next one goes through. */
    CHECK_EQ_INT(fr_ck_save_proc(dir, &ck, proc), FR_OK);
    CHECK_EQ_INT(fr_ck_load(dir, &got), FR_OK);
    CHECK_EQ_INT(got.epoch, 8);
    CHECK(got.state.len > 3 * FR_PROC_STREAM_CHUNK + 100);
    fr_buf_free(&got.state);
    fr_buf_free(&old);
    fr_buf_free(&now);
    fr_buf_free(&ck.state);
    fr_proc_destroy(proc);
    unlink(path);
    rmdir(dir);
}

/* The trigger's fixed rate (fr_ck_trigger_left): a 1,000 ms trigger whose
 * epochs take 600 ms is due 400 ms after the previous epoch ends, not
 * 1,000 ms, and at once when an epoch took longer than the trigger. */
static void test_trigger_fixed_rate(void)
{
    /* No cut yet in this run: counted from when the planner began. */
    CHECK_EQ_INT(fr_ck_trigger_left(-1, 5000, 5000, 1000), 1000);
    CHECK_EQ_INT(fr_ck_trigger_left(-1, 5000, 5999, 1000), 1);
    CHECK_EQ_INT(fr_ck_trigger_left(-1, 5000, 6000, 1000), 0);
    /* Cut at 10,000; the epoch ran until 10,600, when planning starts again. */
    CHECK_EQ_INT(fr_ck_trigger_left(10000, 10600, 10600, 1000), 400);
    CHECK_EQ_INT(fr_ck_trigger_left(10000, 10600, 10999, 1000), 1);
    CHECK_EQ_INT(fr_ck_trigger_left(10000, 10600, 11000, 1000), 0);
    /* An epoch longer than the trigger: the next one is due at once. */
    CHECK_EQ_INT(fr_ck_trigger_left(10000, 11500, 11500, 1000), 0);
    /* A cut at monotonic time 0 is a cut. */
    CHECK_EQ_INT(fr_ck_trigger_left(0, 700, 700, 1000), 300);
}

int main(void)
{
    RUN(test_streamed_equals_buffered);
    RUN(test_failed_write_keeps_old);
    RUN(test_trigger_fixed_rate);
    return check_report();
}
