/*
 * terminal.c — the few lines `freshet up` and `freshet demo` print
 * (ADR 0055). At start, where to look:
 *
 *   demo: info: dashboard http://127.0.0.1:8787/ · explorer http://127.0.0.1:8787/explorer
 *   demo: info: data /home/me/freshet-data · stop with Ctrl-C · `freshet status` for one screen
 *   demo: info: the first gold windows settle around 10:04:00 UTC (in about 3 min): ...
 *
 * then one line for the whole pipeline every 10 s, from the stats files
 * (src/stats summary.c, the same figures as `freshet status`):
 *
 *   demo: info: ingest up 200 ev/s · process up 198 rec/s · freshness 3.1 s · watermark lag 2 m 01
 * s · behind 12 · 12,345 events: 12,100 silver, 120 duplicates, 60 late, 20 dead letters
 *
 * (one line in the terminal). Data-quality outcomes are counted in it, never
 * logged one by one. All through core/diag, so every line has its time and
 * level. The supervisor's thread only.
 */
#include "main/terminal.h"

#include "core/clock.h"
#include "core/diag.h"
#include "core/fmt.h"
#include "stats/stats.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void fr_term_banner(const struct fr_conf *conf, const char *cmd)
{
    fr_info(cmd, "dashboard http://%s/ · explorer http://%s/explorer", conf->serve_listen,
            conf->serve_listen);
    /* Absolute, so it can be pasted from anywhere (it may not exist yet:
     * the stages create it). */
    char abs[2 * PATH_MAX + 2], cwd[PATH_MAX];
    const char *data = conf->general_data_dir;
    if (realpath(data, abs)) {
        data = abs;
    } else if (data[0] != '/' && getcwd(cwd, sizeof cwd)) {
        const char *rel = strncmp(data, "./", 2) == 0 ? data + 2 : data;
        snprintf(abs, sizeof abs, "%s/%s", cwd, rel);
        data = abs;
    }
    fr_info(
        cmd,
        "data %s · stop with Ctrl-C · `freshet status` for one screen · -v for every stage's lines",
        data);
    /* A minute's window is final once the watermark (the newest event
     * time minus the allowed lateness) passes its end: for a stream at
     * the wall clock, the end of the current minute plus the lateness. */
    int64_t now_s = fr_wall_ms() / 1000;
    int64_t settle = (now_s / 60 + 1) * 60 + conf->process_lateness_s;
    time_t t = (time_t)settle;
    struct tm tm;
    gmtime_r(&t, &tm);
    fr_info(cmd,
            "the first gold windows settle around %02d:%02d:%02d UTC (in about %lld min): a "
            "minute is final once the watermark, %lld s behind the newest event, passes its end",
            tm.tm_hour, tm.tm_min, tm.tm_sec, (long long)((settle - now_s + 30) / 60),
            (long long)conf->process_lateness_s);
}

static const char *term_rate(char *out, size_t cap, double v, const char *unit)
{
    if (isnan(v)) {
        snprintf(out, cap, "- %s/s", unit);
    } else {
        snprintf(out, cap, v < 10 ? "%.1f %s/s" : "%.0f %s/s", v, unit);
    }
    return out;
}

void fr_term_status(struct fr_term *t, const struct fr_conf *conf)
{
    struct fr_stats_snap *snaps = calloc(2, sizeof *snaps);
    struct fr_stats_group *group = NULL;
    int64_t now = fr_wall_ms();
    if (!snaps ||
        fr_stats_read_pipeline(conf->general_data_dir, now, &snaps[0], &snaps[1], &group) < 0) {
        free(snaps);
        return;
    }
    free(group);
    if (!t->old) { /* the first look: the rates start here */
        t->old = snaps;
        return;
    }
    struct fr_stats_summary s;
    fr_stats_summarize(&snaps[0], &snaps[1], &t->old[0], &t->old[1], now, &s);
    free(t->old);
    t->old = snaps;
    char in[32], out[32], fresh[32], lag[32], behind[32], ev[32], sil[32], dup[32], late[32],
        dlq[32];
    if (isnan(s.offsets_behind)) {
        snprintf(behind, sizeof behind, "-");
    } else {
        fr_fmt_count(behind, sizeof behind, (uint64_t)s.offsets_behind);
    }
    fr_diag(s.stage[0].up && s.stage[1].up ? FR_DIAG_INFO : FR_DIAG_WARN, t->cmd,
            "ingest %s %s · process %s %s · freshness %s · watermark lag %s · behind %s · "
            "%s events: %s silver, %s duplicates, %s late, %s dead letters",
            s.stage[0].up ? "up" : "DOWN", term_rate(in, sizeof in, s.events_rate, "ev"),
            s.stage[1].up ? "up" : "DOWN", term_rate(out, sizeof out, s.records_rate, "rec"),
            fr_fmt_age(fresh, sizeof fresh, s.freshness_s, false),
            fr_fmt_age(lag, sizeof lag, s.watermark_lag_s, false), behind,
            fr_fmt_count(ev, sizeof ev, s.events), fr_fmt_count(sil, sizeof sil, s.silver),
            fr_fmt_count(dup, sizeof dup, s.duplicates), fr_fmt_count(late, sizeof late, s.late),
            fr_fmt_count(dlq, sizeof dlq, s.dlq));
}

void fr_term_free(struct fr_term *t)
{
    free(t->old);
    t->old = NULL;
}
