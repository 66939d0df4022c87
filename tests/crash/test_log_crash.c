/*
 * test_log_crash.c — crash loops over seeds (after SQLite's crash tests).
 *
 * Simulated power cut: a forked child appends generated records to two
 * partitions with random flushes and segment rolls, and reports every
 * acknowledged durable end to the parent through a pipe. Its io table
 * counts written bytes; at a seeded byte it writes only part of that
 * write and "loses power": of what each open segment received since its
 * last fdatasync, the file keeps a random size, a random prefix of it as
 * written and the rest as garbage or zeros (the prefix model of a torn
 * write: a disk that persisted later pages but lost earlier ones would
 * leave valid data after a hole, which open reports as corruption; see
 * docs/adr/0002). The child exits on the spot. The crash can land inside
 * a record, a segment header during a roll, or a marker slot.
 *
 * Killed process: a child appending and flushing as fast as it can gets
 * SIGKILL at a random moment.
 *
 * After each crash the parent reopens the log and checks the contract:
 * it opens (a torn tail is cut, never an error), every acknowledged record
 * is there, every record read back is exactly what was appended at its
 * offset (dense, no gaps), and appending continues at the durable end.
 */
#include "check.h"

#include "unit/test_log_util.c"

#include "core/clock.h"
#include "core/diag.h"

#include <signal.h>
#include <sys/wait.h>

#define TOPIC "crash"
#define PARTS 2
#define MAX_PAYLOAD 900
#define SIM_SEEDS 400
#define KILL_SEEDS 20
#define MAX_FD 1024

/* ---- The child's crash-simulating io -------------------------------------------- */

struct crash_io {
    int64_t crash_at; /* crash inside the write that reaches this many bytes */
    int64_t written;
    uint64_t rng;
    int power_loss;                      /* cut unsynced data at the crash */
    int64_t synced[MAX_FD], end[MAX_FD]; /* per fd: bytes at last sync, bytes written */
    ino_t ino[MAX_FD];
};

static struct crash_io cio;

/* What the parent's reopens found, to show the loop reaches the cases. */
static int64_t seen_tails, seen_bytes_cut, seen_segments_removed;

static int is_segment(int fd)
{
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 4) {
        return 0;
    }
    path[n] = 0;
    return strcmp(path + n - 4, ".seg") == 0;
}

static void track(int fd)
{
    struct stat st;
    if (fd < 0 || fd >= MAX_FD || fstat(fd, &st) < 0) {
        return;
    }
    if (cio.ino[fd] != st.st_ino) { /* a new file behind a reused fd number */
        cio.ino[fd] = st.st_ino;
        cio.synced[fd] = cio.end[fd] = (int64_t)st.st_size;
    }
}

static _Noreturn void crash_now(void)
{
    if (cio.power_loss) {
        for (int fd = 0; fd < MAX_FD; fd++) {
            if (!cio.ino[fd] || !is_segment(fd)) {
                continue;
            }
            track(fd);
            /* Of the writes since the last fdatasync, the disk kept a size
             * s in [synced, end]: a prefix [synced, v) of the data, then
             * garbage or zeros up to s. Never anything past what was written. */
            int64_t synced = cio.synced[fd], end = cio.end[fd];
            if (end <= synced) {
                continue;
            }
            int64_t size = synced + (int64_t)tl_below(&cio.rng, (size_t)(end - synced + 1));
            int64_t valid = synced + (int64_t)tl_below(&cio.rng, (size_t)(size - synced + 1));
            int junk = (int)tl_below(&cio.rng, 3); /* 0: data, 1: zeros, 2: random bytes */
            for (int64_t at = valid; junk && at < size; at++) {
                uint8_t b = junk == 1 ? 0 : (uint8_t)tl_rand(&cio.rng);
                if (pwrite(fd, &b, 1, at) != 1) {
                    _exit(91);
                }
            }
            if (ftruncate(fd, size) < 0) {
                _exit(90);
            }
        }
    }
    _exit(0);
}

static ssize_t crash_pwrite(void *ctx, int fd, const void *buf, size_t len, off_t off)
{
    (void)ctx;
    track(fd);
    int crash = cio.written + (int64_t)len >= cio.crash_at;
    if (crash) {
        len = (size_t)(cio.crash_at - cio.written);
    }
    ssize_t n = len ? pwrite(fd, buf, len, off) : 0;
    if (n > 0) {
        cio.written += n;
        if (fd < MAX_FD && off + n > cio.end[fd]) {
            cio.end[fd] = off + n;
        }
    }
    if (crash) {
        crash_now();
    }
    return n;
}

static int crash_sync(void *ctx, int fd)
{
    (void)ctx;
    track(fd);
    if (fd >= 0 && fd < MAX_FD) {
        cio.synced[fd] = cio.end[fd];
    }
    return 0; /* the page cache is the disk here */
}

static int crash_ftruncate(void *ctx, int fd, off_t len)
{
    (void)ctx;
    track(fd);
    int rc = ftruncate(fd, len);
    if (rc == 0 && fd >= 0 && fd < MAX_FD) {
        cio.end[fd] = len;
        if (cio.synced[fd] > len) {
            cio.synced[fd] = len;
        }
    }
    return rc;
}

static int64_t crash_wall(void *ctx)
{
    (void)ctx;
    return fr_wall_ms();
}

static int64_t crash_mono(void *ctx)
{
    (void)ctx;
    return fr_mono_ms();
}

static const struct fr_log_io crash_io_table = {
    .pwrite = crash_pwrite,
    .sync = crash_sync,
    .ftruncate = crash_ftruncate,
    .wall_ms = crash_wall,
    .mono_ms = crash_mono,
    .writeback = tl_writeback,
};

/* ---- The writer child ---------------------------------------------------------------- */

static _Noreturn void writer_child(const char *dir, uint64_t seed, int report, int simulated)
{
    struct fr_log_opts opts;
    struct tl_io io;
    struct fr_log *log = NULL;
    tl_opts(&opts, &io);
    if (simulated) {
        memset(&cio, 0, sizeof cio);
        cio.rng = seed * 31 + 7;
        cio.crash_at = 1 + (int64_t)tl_below(&cio.rng, 120000);
        cio.power_loss = seed % 3 != 0;
        opts.io = &crash_io_table;
        opts.io_ctx = NULL;
    }
    opts.partitions = PARTS;
    opts.segment_bytes = 6000;
    opts.write_buffer_bytes = 16 * 1024;
    opts.write_chunk_bytes = seed % 2 ? 2048 : 0; /* crash inside early writes too */
    opts.max_record_bytes = 8 * 1024;
    if (fr_log_open(dir, TOPIC, &opts, &log) != FR_OK) {
        _exit(20);
    }
    uint64_t st = seed ^ 0xC0FFEE;
    int64_t next[PARTS];
    for (int p = 0; p < PARTS; p++) {
        next[p] = fr_log_durable_end(log, p);
    }
    for (int step = 0; step < 200000; step++) {
        int32_t p = (int32_t)tl_below(&st, PARTS);
        struct tl_rec g;
        int64_t off = -1;
        tl_gen(&g, seed, p, next[p], MAX_PAYLOAD);
        if (fr_log_append(log, p, &g.rec, &off) != FR_OK || off != next[p]) {
            _exit(21);
        }
        next[p]++;
        if (tl_below(&st, 5) == 0) {
            if (fr_log_flush(log) != FR_OK) {
                _exit(22);
            }
            int64_t ends[PARTS];
            for (int q = 0; q < PARTS; q++) {
                ends[q] = fr_log_durable_end(log, q);
            }
            if (write(report, ends, sizeof ends) != (ssize_t)sizeof ends) {
                _exit(23);
            }
        }
    }
    _exit(simulated ? 24 : 0); /* a simulated crash should have come first */
}

/* ---- The parent's checks ------------------------------------------------------------- */

/* Run one crash; returns 0 when the contract held. */
static int crash_round(uint64_t seed, int simulated)
{
    char dir[1024];
    tl_tmpdir(dir);
    int fds[2];
    if (pipe(fds) != 0) {
        return -1;
    }
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        writer_child(dir, seed, fds[1], simulated);
    }
    close(fds[1]);
    if (!simulated) {
        uint64_t st = seed;
        fr_sleep_ms(5 + (int64_t)tl_below(&st, 60));
        kill(pid, SIGKILL);
    }
    int64_t acked[PARTS] = {0}, ends[PARTS];
    while (read(fds[0], ends, sizeof ends) == (ssize_t)sizeof ends) {
        memcpy(acked, ends, sizeof ends);
    }
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    int ok = simulated ? WIFEXITED(status) && WEXITSTATUS(status) == 0
                       : WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(ok);
    if (!ok) {
        fprintf(stderr, "seed %llu: child status %d\n", (unsigned long long)seed, status);
    }

    struct fr_log *log = NULL;
    struct fr_log_opts opts;
    fr_log_opts_init(&opts);
    opts.partitions = PARTS; /* the crash may have come before the child created them */
    opts.segment_bytes = 6000;
    int rc = fr_log_open(dir, TOPIC, &opts, &log);
    CHECK_EQ_INT(rc, FR_OK);
    for (int32_t p = 0; rc == FR_OK && p < PARTS; p++) {
        int64_t end = fr_log_durable_end(log, p);
        CHECK(end >= acked[p]);
        struct fr_log_recovery rec;
        CHECK_EQ_INT(fr_log_recovery(log, p, &rec), FR_OK);
        seen_tails += rec.records_cut;
        seen_bytes_cut += rec.bytes_cut;
        seen_segments_removed += rec.segments_removed;
        struct tl_rec g;
        tl_gen(&g, seed + 99, p, end, MAX_PAYLOAD);
        int64_t off = -1;
        CHECK_EQ_INT(fr_log_append(log, p, &g.rec, &off), FR_OK);
        CHECK_EQ_INT(off, end);
        CHECK_EQ_INT(fr_log_flush(log), FR_OK);
        /* Everything before the new record is what the child appended. */
        struct fr_log_reader *reader = NULL;
        struct fr_log_rec r;
        CHECK_EQ_INT(fr_log_reader_open(dir, TOPIC, p, 0, NULL, &reader), FR_OK);
        for (int64_t i = 0; reader && i <= end; i++) {
            tl_gen(&g, i < end ? seed : seed + 99, p, i, MAX_PAYLOAD);
            int got = fr_log_reader_next(reader, &r, 0);
            CHECK_EQ_INT(got, 1);
            if (got != 1 || r.offset != i || !tl_same(&r, &g.rec)) {
                CHECK(0);
                fprintf(stderr, "seed %llu partition %d: record %lld differs\n",
                        (unsigned long long)seed, (int)p, (long long)i);
                break;
            }
        }
        fr_log_reader_close(reader);
    }
    fr_log_close(log);
    if (check_case_failed) {
        fprintf(stderr, "seed %llu (%s) failed; acked %lld/%lld; data kept in %s\n",
                (unsigned long long)seed, simulated ? "power cut" : "SIGKILL", (long long)acked[0],
                (long long)acked[1], dir);
        return -1;
    }
    tl_rm_rf(dir);
    return 0;
}

static void test_power_cuts(void)
{
    for (uint64_t seed = 1; seed <= SIM_SEEDS; seed++) {
        if (crash_round(seed, 1) != 0) {
            break;
        }
    }
}

static void test_sigkill(void)
{
    fprintf(stderr, "power cuts: %lld torn tails cut (%lld bytes), %lld torn segment creations\n",
            (long long)seen_tails, (long long)seen_bytes_cut, (long long)seen_segments_removed);
    for (uint64_t seed = 1; seed <= KILL_SEEDS; seed++) {
        if (crash_round(seed, 0) != 0) {
            break;
        }
    }
}

int main(void)
{
    fr_diag_set_level(FR_DIAG_ERROR); /* recovery warns on every torn tail */
    RUN(test_power_cuts);
    RUN(test_sigkill);
    return check_report();
}
