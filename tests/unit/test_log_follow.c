/*
 * test_log_follow.c — a reader in another process follows the tail. The
 * parent appends generated records in small flushed bursts across segment
 * rolls; a forked child reads them with blocking waits and checks every
 * record, in order. Then the handshake: the parent appends one record
 * without flushing and the child must time out (unflushed records are
 * invisible), and get it once the parent flushes. The child also measures
 * its CPU time while blocked: waiting must sleep, not spin.
 */
#include "check.h"

#include "test_log_util.c"

#include "core/clock.h"
#include "core/diag.h"

#include <sys/resource.h>
#include <sys/wait.h>

#define TOPIC "follow"
#define SEED 77
#define COUNT 400
#define MAX_PAYLOAD 700

static int64_t cpu_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

static void sig_write(int fd, char c)
{
    if (write(fd, &c, 1) != 1) {
        _exit(3);
    }
}

static char sig_read(int fd)
{
    char c = 0;
    return read(fd, &c, 1) == 1 ? c : 0;
}

/* The child: returns its exit status (0 when every check held). */
static int child(const char *dir, int to_parent, int from_parent)
{
    struct fr_log_reader *reader = NULL;
    struct fr_log_rec r;
    struct tl_rec g;
    if (fr_log_reader_open(dir, TOPIC, 0, 0, NULL, &reader) != FR_OK) {
        return 10;
    }
    sig_write(to_parent, 'r'); /* reader is ready */
    for (int64_t i = 0; i < COUNT; i++) {
        int rc = fr_log_reader_next(reader, &r, 10000);
        tl_gen(&g, SEED, 0, i, MAX_PAYLOAD);
        if (rc != 1 || r.offset != i || !tl_same(&r, &g.rec)) {
            fprintf(stderr, "child: offset %lld: rc %d\n", (long long)i, rc);
            return 11;
        }
    }
    /* Blocked with nothing to read: about no CPU. */
    int64_t cpu0 = cpu_ms(), t0 = fr_mono_ms();
    if (fr_log_reader_next(reader, &r, 400) != 0) {
        return 12;
    }
    int64_t waited = fr_mono_ms() - t0, cpu = cpu_ms() - cpu0;
    fprintf(stderr, "child: waited %lld ms using %lld ms of CPU\n", (long long)waited,
            (long long)cpu);
    if (waited < 390 || cpu > 40) {
        return 13;
    }
    sig_write(to_parent, 'u'); /* ask for an unflushed append */
    if (sig_read(from_parent) != 'a') {
        return 14;
    }
    if (fr_log_reader_next(reader, &r, 300) != 0) {
        fprintf(stderr, "child: saw a record that was not flushed\n");
        return 15;
    }
    sig_write(to_parent, 'f'); /* now flush it */
    int rc = fr_log_reader_next(reader, &r, 10000);
    tl_gen(&g, SEED, 0, COUNT, MAX_PAYLOAD);
    if (rc != 1 || r.offset != COUNT || !tl_same(&r, &g.rec)) {
        return 16;
    }
    fr_log_reader_close(reader);
    return 0;
}

static void test_follow_other_process(void)
{
    char dir[1024];
    tl_tmpdir(dir);
    struct fr_log_opts opts;
    fr_log_opts_init(&opts);
    opts.segment_bytes = 32 * 1024;
    struct fr_log *log = NULL;
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, &opts, &log), FR_OK);
    int up[2], down[2];
    CHECK_EQ_INT(pipe(up), 0);
    CHECK_EQ_INT(pipe(down), 0);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        _exit(child(dir, up[1], down[0]));
    }
    close(up[1]);
    close(down[0]);
    CHECK_EQ_INT(sig_read(up[0]), 'r');
    struct tl_rec g;
    for (int64_t i = 0; i < COUNT; i++) {
        tl_gen(&g, SEED, 0, i, MAX_PAYLOAD);
        CHECK_EQ_INT(fr_log_append(log, 0, &g.rec, NULL), FR_OK);
        if (i % 10 == 9) {
            CHECK_EQ_INT(fr_log_flush(log), FR_OK);
            fr_sleep_ms(2);
        }
    }
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    CHECK_EQ_INT(sig_read(up[0]), 'u');
    tl_gen(&g, SEED, 0, COUNT, MAX_PAYLOAD);
    CHECK_EQ_INT(fr_log_append(log, 0, &g.rec, NULL), FR_OK);
    sig_write(down[1], 'a');
    CHECK_EQ_INT(sig_read(up[0]), 'f');
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    int status = 0;
    CHECK_EQ_INT(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status));
    CHECK_EQ_INT(WEXITSTATUS(status), 0);
    struct fr_log_info info;
    CHECK_EQ_INT(fr_log_stat(dir, TOPIC, 0, &info), FR_OK);
    CHECK(info.segments > 3); /* the child crossed segment rolls */
    fr_log_close(log);
    close(up[0]);
    close(down[1]);
    tl_rm_rf(dir);
}

int main(void)
{
    fr_diag_set_level(FR_DIAG_WARN);
    RUN(test_follow_other_process);
    return check_report();
}
