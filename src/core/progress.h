/*
 * progress.h — progress of long work (process --once, rebuild, verify,
 * compact, dlq replay, ingest --file) on stderr.
 *
 * On a terminal: one line, rewritten in place at most every 250 ms:
 *   process: 412,000 of 1,000,000 records (41.2%), 98,100 records/s, ETA 6s
 * Elsewhere (a log file, a pipe, a supervisor): the same text as an info
 * line every general.progress_interval_ms (default 5 s). `-q` (diagnostics
 * below info) silences both. When the work ends, a meter that has shown
 * anything prints one final line with the total, the time and the rate; a
 * short task that never reached the interval prints nothing.
 *
 * Use (one thread owns a meter; no allocation, no locks):
 *
 *   struct fr_progress pg;
 *   fr_progress_start(&pg, "rebuild", "rows", total);  // total 0: unknown
 *   for (...) fr_progress_tick(&pg, ++done);           // cheap: one clock read
 *   fr_progress_end(&pg);
 *
 * The meter keeps the what/unit pointers: they must outlive it (string
 * literals). fr_progress_total raises the total when the work grows (a log
 * still being appended to); done beyond total raises it too.
 */
#ifndef FR_PROGRESS_H
#define FR_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

/* What tests replace: the clock, the output and whether it is a terminal.
 * fr_progress_start uses the real ones (stderr, isatty, monotonic ms). */
struct fr_progress_ops {
    int64_t (*now_ms)(void *ctx);
    void *ctx;
    FILE *out; /* non-terminal lines go here as "what: text\n"; NULL: fr_info */
    int tty;   /* 1: the updating-line form */
    int64_t interval_ms;
};

struct fr_progress {
    const char *what, *unit;
    uint64_t total, done;
    int64_t t0_ms, last_ms;
    int64_t interval_ms;
    int on;    /* 0: silenced (-q) */
    int shown; /* lines printed (or redraws on a terminal) */
    int drawn; /* a terminal line is on screen */
    struct fr_progress_ops ops;
};

/* The non-terminal interval for every meter started after the call (main
 * sets general.progress_interval_ms; at least 1 ms). */
void fr_progress_set_interval_ms(int64_t ms);

void fr_progress_start(struct fr_progress *pg, const char *what, const char *unit, uint64_t total);
/* As above with injected ops (copied). ops->tty and ->out are used as
 * given; silencing by -q still applies. */
void fr_progress_start_with(struct fr_progress *pg, const char *what, const char *unit,
                            uint64_t total, const struct fr_progress_ops *ops);
void fr_progress_total(struct fr_progress *pg, uint64_t total);
/* done so far (absolute). */
void fr_progress_tick(struct fr_progress *pg, uint64_t done);
/* Final line (when anything was shown), terminal line ended. */
void fr_progress_end(struct fr_progress *pg);

/* The text of one progress line for these figures into out (no newline):
 * "D of T UNIT (P%), R UNIT/s, ETA E" (total 0: "D UNIT, R UNIT/s"). */
void fr_progress_format(char *out, size_t cap, const char *unit, uint64_t done, uint64_t total,
                        int64_t elapsed_ms);

#endif
