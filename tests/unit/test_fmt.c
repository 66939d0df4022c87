/*
 * test_fmt.c — core/fmt.h, the figures `freshet status`, the `up`/`demo`
 * status line and the progress meters print: thousands separators (and
 * truncation within cap), ages in s / m / h, and days only when asked.
 * Expected strings are written out by hand.
 */
#include "check.h"

#include "core/fmt.h"

#include <math.h>

static void test_count(void)
{
    char s[32];
    CHECK_EQ_STR(fr_fmt_count(s, sizeof s, 0), "0");
    CHECK_EQ_STR(fr_fmt_count(s, sizeof s, 999), "999");
    CHECK_EQ_STR(fr_fmt_count(s, sizeof s, 1000), "1,000");
    CHECK_EQ_STR(fr_fmt_count(s, sizeof s, 1234567), "1,234,567");
    CHECK_EQ_STR(fr_fmt_count(s, sizeof s, UINT64_MAX), "18,446,744,073,709,551,615");
    char small[6];
    CHECK_EQ_STR(fr_fmt_count(small, sizeof small, 1234567), "1,23");
}

static void test_age(void)
{
    char s[32];
    CHECK_EQ_STR(fr_fmt_age(s, sizeof s, NAN, true), "-");
    CHECK_EQ_STR(fr_fmt_age(s, sizeof s, 4.12, false), "4.1 s");
    CHECK_EQ_STR(fr_fmt_age(s, sizeof s, 125, true), "2 m 05 s");
    CHECK_EQ_STR(fr_fmt_age(s, sizeof s, 3 * 3600 + 2 * 60 + 7, true), "3 h 02 m");
    CHECK_EQ_STR(fr_fmt_age(s, sizeof s, 4 * 86400, true), "4 d");
    CHECK_EQ_STR(fr_fmt_age(s, sizeof s, 4 * 86400, false), "96 h 00 m");
    CHECK_EQ_STR(fr_fmt_age(s, sizeof s, 2 * 86400 + 3600, true), "49 h 00 m");
}

int main(void)
{
    RUN(test_count);
    RUN(test_age);
    return check_report();
}
