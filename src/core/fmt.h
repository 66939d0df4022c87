/*
 * fmt.h — numbers and durations as people read them, for the lines freshet
 * prints (`freshet status`, the `up`/`demo` status line, progress meters).
 * Each writes a NUL-terminated string of at most cap bytes (cap >= 1) into
 * out, truncating, and returns out. No state; thread-safe.
 */
#ifndef FR_CORE_FMT_H
#define FR_CORE_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 1234567 -> "1,234,567" */
const char *fr_fmt_count(char *out, size_t cap, uint64_t v);
/* Seconds as "4.1 s", "2 m 05 s", "3 h 02 m"; "-" for NaN (no value).
 * With days, 3 days or more as "4 d"; without, hours without end. */
const char *fr_fmt_age(char *out, size_t cap, double s, bool days);

#endif
