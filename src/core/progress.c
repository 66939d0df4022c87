/*
 * progress.c — the progress meter (progress.h): one caller-owned struct per
 * long task, one thread; figures with thousands separators, rate over the
 * whole run, ETA from that rate. Only the calling thread touches a meter;
 * the interval default is process-wide, set once by main before threads.
 */
#include "core/progress.h"

#include "core/clock.h"
#include "core/diag.h"
#include "core/fmt.h"

#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#define PROGRESS_TTY_MS 250 /* terminal redraws at most this often */

static int64_t progress_interval_ms = 5000;

void fr_progress_set_interval_ms(int64_t ms)
{
    progress_interval_ms = ms < 1 ? 1 : ms;
}

static int64_t progress_real_now(void *ctx)
{
    (void)ctx;
    return fr_mono_ms();
}

/* seconds -> "42s", "3m05s", "2h07m" */
static void progress_dur(char *out, size_t cap, double secs)
{
    uint64_t s = secs < 0 ? 0 : (uint64_t)(secs + 0.5);
    if (s < 60) {
        snprintf(out, cap, "%" PRIu64 "s", s);
    } else if (s < 3600) {
        snprintf(out, cap, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
    } else {
        snprintf(out, cap, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s / 60 % 60);
    }
}

void fr_progress_format(char *out, size_t cap, const char *unit, uint64_t done, uint64_t total,
                        int64_t elapsed_ms)
{
    char d[32], t[32], r[32], eta[32];
    double secs = (double)elapsed_ms / 1000.0;
    double rate = secs > 0 ? (double)done / secs : 0;
    fr_fmt_count(d, sizeof d, done);
    fr_fmt_count(r, sizeof r, (uint64_t)(rate + 0.5));
    if (total == 0) {
        snprintf(out, cap, "%s %s, %s %s/s", d, unit, r, unit);
        return;
    }
    fr_fmt_count(t, sizeof t, total);
    double pct = 100.0 * (double)done / (double)total;
    if (rate > 0) {
        progress_dur(eta, sizeof eta, (double)(total - (done < total ? done : total)) / rate);
    } else {
        snprintf(eta, sizeof eta, "?");
    }
    snprintf(out, cap, "%s of %s %s (%.1f%%), %s %s/s, ETA %s", d, t, unit, pct > 100 ? 100 : pct,
             r, unit, eta);
}

void fr_progress_start_with(struct fr_progress *pg, const char *what, const char *unit,
                            uint64_t total, const struct fr_progress_ops *ops)
{
    memset(pg, 0, sizeof *pg);
    pg->what = what;
    pg->unit = unit;
    pg->total = total;
    pg->ops = *ops;
    pg->interval_ms =
        pg->ops.tty && ops->interval_ms > PROGRESS_TTY_MS ? PROGRESS_TTY_MS : ops->interval_ms;
    pg->on = fr_diag_get_level() >= FR_DIAG_INFO;
    pg->t0_ms = pg->last_ms = pg->ops.now_ms(pg->ops.ctx);
}

void fr_progress_start(struct fr_progress *pg, const char *what, const char *unit, uint64_t total)
{
    struct fr_progress_ops ops = {progress_real_now, NULL, NULL, isatty(STDERR_FILENO),
                                  progress_interval_ms};
    if (ops.tty) {
        ops.out = stderr;
    }
    fr_progress_start_with(pg, what, unit, total, &ops);
}

void fr_progress_total(struct fr_progress *pg, uint64_t total)
{
    if (total > pg->total) {
        pg->total = total;
    }
}

static void progress_emit(struct fr_progress *pg, const char *text, int final)
{
    if (pg->ops.tty) {
        fprintf(pg->ops.out, "\r\033[K%s: %s%s", pg->what, text, final ? "\n" : "");
        fflush(pg->ops.out);
        pg->drawn = !final;
    } else if (pg->ops.out) {
        fprintf(pg->ops.out, "%s: %s\n", pg->what, text);
    } else {
        fr_info(pg->what, "%s", text);
    }
    pg->shown++;
}

void fr_progress_tick(struct fr_progress *pg, uint64_t done)
{
    pg->done = done;
    if (done > pg->total && pg->total) {
        pg->total = done;
    }
    if (!pg->on) {
        return;
    }
    int64_t now = pg->ops.now_ms(pg->ops.ctx);
    if (now - pg->last_ms < pg->interval_ms) {
        return;
    }
    pg->last_ms = now;
    char text[256];
    fr_progress_format(text, sizeof text, pg->unit, pg->done, pg->total, now - pg->t0_ms);
    progress_emit(pg, text, 0);
}

void fr_progress_end(struct fr_progress *pg)
{
    if (!pg->on || !pg->shown) {
        return;
    }
    int64_t el = pg->ops.now_ms(pg->ops.ctx) - pg->t0_ms;
    char d[32], r[32], dur[32], text[256];
    double secs = (double)el / 1000.0;
    fr_fmt_count(d, sizeof d, pg->done);
    fr_fmt_count(r, sizeof r, (uint64_t)(secs > 0 ? (double)pg->done / secs + 0.5 : 0));
    progress_dur(dur, sizeof dur, secs);
    if (secs < 10) {
        snprintf(dur, sizeof dur, "%.1fs", secs);
    }
    snprintf(text, sizeof text, "done, %s %s in %s, %s %s/s", d, pg->unit, dur, r, pg->unit);
    progress_emit(pg, text, 1);
    pg->drawn = 0;
}
