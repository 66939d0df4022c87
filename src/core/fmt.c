/*
 * fmt.c — numbers and durations as people read them (fmt.h): thousands
 * separators and ages in s / m / h (/ d). Pure functions of their
 * arguments; the output is always NUL-terminated within cap.
 */
#include "core/fmt.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

const char *fr_fmt_count(char *out, size_t cap, uint64_t v)
{
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%" PRIu64, v);
    size_t k = 0;
    for (int i = 0; i < n && k + 2 < cap; i++) {
        if (i && (n - i) % 3 == 0) {
            out[k++] = ',';
        }
        out[k++] = digits[i];
    }
    out[k] = 0;
    return out;
}

const char *fr_fmt_age(char *out, size_t cap, double s, bool days)
{
    if (isnan(s)) {
        snprintf(out, cap, "-");
    } else if (s < 60) {
        snprintf(out, cap, "%.1f s", s);
    } else if (s < 3600) {
        snprintf(out, cap, "%d m %02d s", (int)(s / 60), (int)fmod(s, 60));
    } else if (!days || s < 86400 * 3) {
        snprintf(out, cap, "%d h %02d m", (int)(s / 3600), (int)fmod(s / 60, 60));
    } else {
        snprintf(out, cap, "%.0f d", s / 86400);
    }
    return out;
}
