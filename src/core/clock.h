/*
 * clock.h — time sources. Wall time (event and ingest times) and monotonic
 * time (timeouts, rates, latencies) are never mixed. Thread-safe.
 */
#ifndef FR_CLOCK_H
#define FR_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t fr_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline int64_t fr_wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static inline int64_t fr_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t fr_mono_ms(void) { return fr_mono_ns() / 1000000; }

/* Sleep for ms milliseconds, resuming after signals. */
void fr_sleep_ms(int64_t ms);
/* The backoff before retry attempt (>= 1) after a lost race: a random
 * time between half and all of base_ms * 2^min(attempt, max_shift), so
 * writers racing for the same thing stop colliding in lockstep. */
void fr_sleep_backoff(int attempt, int64_t base_ms, int max_shift);

/* Parse an RFC 3339 timestamp ("2026-10-05T13:42:02.235Z", "...+00:00",
 * second precision or up to 9 fraction digits) into Unix microseconds.
 * Returns FR_OK or FR_ERANGE / FR_EINVAL for a malformed text. */
int fr_time_parse_rfc3339(const char *s, size_t len, int64_t *out_us);
/* A date or date-time as people type it (ingest --since, the feed's
 * ?since=) into Unix milliseconds, rounded down: "2026-10-05" is midnight
 * UTC, "2026-10-05T13:42:02[.fff]" without a zone is UTC, anything else
 * must be RFC 3339 (at most 64 bytes). FR_EINVAL for any other text. */
int fr_time_parse_date_ms(const char *s, int64_t *out_ms);
/* Format Unix microseconds as "YYYY-MM-DDTHH:MM:SS.mmmZ" (millisecond
 * precision, always 24 bytes plus NUL). */
void fr_time_format_ms(int64_t us, char out[32]);

#endif
