/*
 * test_progress.c — the progress meter (core/progress.h) with a hand-driven
 * clock: the text of a line, when lines appear (non-terminal: every
 * interval; terminal: "\r\e[K" redraws and a final newline), the final
 * line only after something was shown, and silence below the info level.
 * Expected strings are written out by hand.
 */
#include "check.h"

#include "core/diag.h"
#include "core/progress.h"

static int64_t clock_ms;
static int64_t test_now(void *ctx)
{
    (void)ctx;
    return clock_ms;
}

/* The bytes written to f so far, as a C string in buf. */
static const char *contents(FILE *f, char *buf, size_t cap)
{
    fflush(f);
    long n = ftell(f);
    rewind(f);
    size_t got = fread(buf, 1, n > 0 && (size_t)n < cap ? (size_t)n : cap - 1, f);
    buf[got] = 0;
    fseek(f, 0, SEEK_END);
    return buf;
}

static void test_format(void)
{
    char s[256];
    fr_progress_format(s, sizeof s, "records", 412000, 1000000, 4200);
    CHECK_EQ_STR(s, "412,000 of 1,000,000 records (41.2%), 98,095 records/s, ETA 6s");
    fr_progress_format(s, sizeof s, "rows", 5, 0, 1000);
    CHECK_EQ_STR(s, "5 rows, 5 rows/s");
    fr_progress_format(s, sizeof s, "rows", 100, 1000000, 10000);
    CHECK_EQ_STR(s, "100 of 1,000,000 rows (0.0%), 10 rows/s, ETA 27h46m");
    fr_progress_format(s, sizeof s, "rows", 600, 6000, 60000);
    CHECK_EQ_STR(s, "600 of 6,000 rows (10.0%), 10 rows/s, ETA 9m00s");
    fr_progress_format(s, sizeof s, "rows", 0, 10, 0);
    CHECK_EQ_STR(s, "0 of 10 rows (0.0%), 0 rows/s, ETA ?");
}

static void test_lines(void)
{
    fr_diag_set_level(FR_DIAG_INFO);
    FILE *f = tmpfile();
    char buf[4096];
    struct fr_progress_ops ops = {test_now, NULL, f, 0, 5000};
    struct fr_progress pg;
    clock_ms = 1000;
    fr_progress_start_with(&pg, "process", "records", 100, &ops);
    clock_ms = 5999;
    fr_progress_tick(&pg, 10);
    CHECK_EQ_STR(contents(f, buf, sizeof buf), ""); /* before the interval */
    clock_ms = 6000;
    fr_progress_tick(&pg, 20);
    CHECK_EQ_STR(contents(f, buf, sizeof buf),
                 "process: 20 of 100 records (20.0%), 4 records/s, ETA 20s\n");
    clock_ms = 9000;
    fr_progress_tick(&pg, 50); /* 3 s after the last line: nothing */
    clock_ms = 11000;
    fr_progress_tick(&pg, 130); /* beyond the total: the total follows */
    clock_ms = 12000;
    fr_progress_end(&pg);
    CHECK_EQ_STR(contents(f, buf, sizeof buf),
                 "process: 20 of 100 records (20.0%), 4 records/s, ETA 20s\n"
                 "process: 130 of 130 records (100.0%), 13 records/s, ETA 0s\n"
                 "process: done, 130 records in 11s, 12 records/s\n");
    fclose(f);

    /* A short task that never reached the interval prints nothing at all. */
    f = tmpfile();
    ops.out = f;
    clock_ms = 0;
    fr_progress_start_with(&pg, "verify", "rows", 10, &ops);
    clock_ms = 4000;
    fr_progress_tick(&pg, 10);
    fr_progress_end(&pg);
    CHECK_EQ_STR(contents(f, buf, sizeof buf), "");
    fclose(f);
}

static void test_terminal(void)
{
    fr_diag_set_level(FR_DIAG_INFO);
    FILE *f = tmpfile();
    char buf[4096];
    struct fr_progress_ops ops = {test_now, NULL, f, 1, 5000}; /* redraws every 250 ms */
    struct fr_progress pg;
    clock_ms = 0;
    fr_progress_start_with(&pg, "rebuild", "rows", 1000, &ops);
    clock_ms = 250;
    fr_progress_tick(&pg, 250);
    clock_ms = 400;
    fr_progress_tick(&pg, 400); /* 150 ms later: not redrawn */
    clock_ms = 500;
    fr_progress_tick(&pg, 500);
    clock_ms = 1000;
    fr_progress_tick(&pg, 1000);
    fr_progress_end(&pg);
    CHECK_EQ_STR(contents(f, buf, sizeof buf),
                 "\r\033[Krebuild: 250 of 1,000 rows (25.0%), 1,000 rows/s, ETA 1s"
                 "\r\033[Krebuild: 500 of 1,000 rows (50.0%), 1,000 rows/s, ETA 1s"
                 "\r\033[Krebuild: 1,000 of 1,000 rows (100.0%), 1,000 rows/s, ETA 0s"
                 "\r\033[Krebuild: done, 1,000 rows in 1.0s, 1,000 rows/s\n");
    fclose(f);
}

static void test_quiet(void)
{
    fr_diag_set_level(FR_DIAG_WARN); /* -q */
    FILE *f = tmpfile();
    char buf[256];
    struct fr_progress_ops ops = {test_now, NULL, f, 1, 1};
    struct fr_progress pg;
    clock_ms = 0;
    fr_progress_start_with(&pg, "compact", "tables", 3, &ops);
    for (int i = 1; i <= 3; i++) {
        clock_ms += 1000;
        fr_progress_tick(&pg, (uint64_t)i);
    }
    fr_progress_end(&pg);
    CHECK_EQ_STR(contents(f, buf, sizeof buf), "");
    fclose(f);
    fr_diag_set_level(FR_DIAG_INFO);
}

int main(void)
{
    RUN(test_format);
    RUN(test_lines);
    RUN(test_terminal);
    RUN(test_quiet);
    return check_report();
}
