/*
 * clock.c — sleeping and RFC 3339 parsing/formatting without locale or
 * timezone state (days-from-civil arithmetic, proleptic Gregorian), and
 * the looser dates people type (a date alone, no zone: UTC).
 */
#include "core/clock.h"

#include "core/err.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void fr_sleep_ms(int64_t ms)
{
    if (ms <= 0) {
        return;
    }
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

void fr_sleep_backoff(int attempt, int64_t base_ms, int max_shift)
{
    int64_t ms = base_ms << (attempt < max_shift ? attempt : max_shift);
    uint64_t x = (uint64_t)fr_mono_ns() * UINT64_C(6364136223846793005) ^
                 (uint64_t)getpid() * UINT64_C(1442695040888963407);
    fr_sleep_ms(ms / 2 + (int64_t)((x >> 33) % (uint64_t)(ms / 2 + 1)));
}

/* Days since 1970-01-01 for a civil date (Howard Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

/* The value of the n digits at s (n <= 4); any non-digit sets *bad. One
 * test for all of a timestamp's fields instead of a branch per byte. */
static inline int digits(const char *s, int n, unsigned *bad)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        unsigned d = (unsigned)(unsigned char)s[i] - '0';
        *bad |= d > 9;
        v = v * 10 + (int)d;
    }
    return v;
}

int fr_time_parse_rfc3339(const char *s, size_t len, int64_t *out_us)
{
    if (len < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
        s[13] != ':' || s[16] != ':') {
        return FR_EINVAL;
    }
    unsigned bad = 0;
    int y = digits(s, 4, &bad), mo = digits(s + 5, 2, &bad), d = digits(s + 8, 2, &bad);
    int h = digits(s + 11, 2, &bad), mi = digits(s + 14, 2, &bad), sec = digits(s + 17, 2, &bad);
    if (bad) {
        return FR_EINVAL;
    }
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || sec > 60) {
        return FR_ERANGE;
    }
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo == 2 && d == 29 && !leap) {
        return FR_ERANGE;
    }
    size_t i = 19;
    int64_t frac_us = 0;
    if (i < len && s[i] == '.') {
        /* 1 to 9 digits, truncated to microseconds */
        static const uint32_t pow10[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
        size_t start = ++i;
        uint64_t f = 0;
        for (unsigned dg; i < len && (dg = (unsigned)(unsigned char)s[i] - '0') <= 9; i++) {
            f = f * 10 + dg; /* wraps only past 19 digits, which fail below */
        }
        size_t n = i - start;
        if (n == 0 || n > 9) {
            return FR_EINVAL;
        }
        frac_us = (int64_t)(n <= 6 ? f * pow10[6 - n] : f / pow10[n - 6]);
    }
    int64_t offset_s = 0;
    if (i < len && (s[i] == 'Z' || s[i] == 'z')) {
        i++;
    } else if (i + 6 == len && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':') {
        int oh = digits(s + i + 1, 2, &bad), om = digits(s + i + 4, 2, &bad);
        if (bad || oh > 23 || om > 59) {
            return FR_EINVAL;
        }
        offset_s = (int64_t)(oh * 3600 + om * 60) * (s[i] == '+' ? 1 : -1);
        i += 6;
    } else {
        return FR_EINVAL;
    }
    if (i != len) {
        return FR_EINVAL;
    }
    int64_t days = days_from_civil(y, mo, d);
    int64_t secs = days * 86400 + h * 3600 + mi * 60 + sec - offset_s;
    *out_us = secs * 1000000 + frac_us;
    return FR_OK;
}

int fr_time_parse_date_ms(const char *s, int64_t *out_ms)
{
    size_t len = strlen(s);
    if (len > 64) {
        return FR_EINVAL;
    }
    char buf[80];
    if (len == 10) { /* a date alone: midnight UTC */
        snprintf(buf, sizeof buf, "%sT00:00:00Z", s);
    } else if (len >= 19 && !strpbrk(s + 19, "Zz+-")) { /* no zone: UTC */
        snprintf(buf, sizeof buf, "%sZ", s);
    } else {
        snprintf(buf, sizeof buf, "%s", s);
    }
    int64_t us;
    if (fr_time_parse_rfc3339(buf, strlen(buf), &us) < 0) {
        return FR_EINVAL;
    }
    *out_ms = us >= 0 ? us / 1000 : -((-us + 999) / 1000);
    return FR_OK;
}

void fr_time_format_ms(int64_t us, char out[32])
{
    int64_t ms = us >= 0 ? us / 1000 : -((-us + 999) / 1000);
    int64_t secs = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
    int msr = (int)(ms - secs * 1000);
    int64_t days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
    int64_t sod = secs - days * 86400;
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    char tmp[96];
    snprintf(tmp, sizeof tmp, "%04lld-%02d-%02dT%02d:%02d:%02d.%03dZ", (long long)y, m, d,
             (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60), msr);
    memcpy(out, tmp, 31);
    out[31] = 0;
}
