/*
 * history.c — the charts' history: the last SERVE_HISTORY seconds of every
 * figure the dashboard draws as a time series, so a page opened at any
 * time shows ten minutes at once (ADR 0054).
 *
 * The ticker (stream.c) records one point a second from the snapshots it
 * has just read (the process stage is the group's totals in the scale-out
 * mode, docs.c), with the same rates the status document carries (the
 * same older sample, fr_stats_rate). The ring is a fixed array inside
 * struct fr_serve: SERVE_HISTORY points of SERVE_HIST_FIGS doubles and a
 * time, 600 x 88 bytes = 52,800 bytes, whatever runs or connects. A new
 * stream is sent the ring once, as `event: history`, before its first
 * status frame (the stream holds that one copy until it is sent: at most
 * SERVE_HIST_JSON_CAP bytes); GET /api/v1/history answers the same
 * document.
 *
 * Document (docs/API.md): {"interval_ms":1000,"capacity":600,"points":N,
 * "t_ms":[...],"freshness_s":[...],...} — one array per figure, oldest
 * first, null where the figure had no value. The columns are
 * SERVE_HIST_FIGS below; the dashboard reads them by name (web/api.js).
 *
 * Threads: the ticker writes, any worker reads; the ring is under
 * srv->lock, copied out before rendering.
 */
#include "serve/serve_int.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const hist_names[SERVE_HIST_FIGS] = {
#define HIST_NAME(id, name) name,
    SERVE_HIST_FIG_TABLE(HIST_NAME)
#undef HIST_NAME
};

void serve_hist_record(struct fr_serve *srv, struct fr_stats_snap *const snaps[FR_STATS_STAGES],
                       int64_t now_ms)
{
    struct fr_stats_snap *old = malloc(2 * sizeof *old);
    if (!old) {
        return; /* a point less in the chart; the next tick tries again */
    }
    int have_ing = serve_old_sample(srv, FR_STATS_INGEST, &old[0]);
    int have_proc = serve_old_sample(srv, FR_STATS_PROCESS, &old[1]);
    struct fr_stats_summary sum;
    fr_stats_summarize(snaps[FR_STATS_INGEST], snaps[FR_STATS_PROCESS], have_ing ? &old[0] : NULL,
                       have_proc ? &old[1] : NULL, now_ms, &sum);
    free(old);
    struct serve_hist_point pt;
    pt.t_ms = now_ms;
    pt.v[SERVE_HIST_FRESHNESS] = sum.freshness_s;
    pt.v[SERVE_HIST_EVENTS_RATE] = sum.events_rate;
    pt.v[SERVE_HIST_RECORDS_RATE] = sum.records_rate;
    pt.v[SERVE_HIST_BATCH] = sum.batch_s * 1000.0;
    pt.v[SERVE_HIST_TRIGGER] = sum.trigger_s * 1000.0;
    pt.v[SERVE_HIST_COMMIT] = sum.commit_s * 1000.0;
    pt.v[SERVE_HIST_DUP_RATE] = sum.duplicate_rate;
    pt.v[SERVE_HIST_LATE_RATE] = sum.late_rate;
    pt.v[SERVE_HIST_DLQ_RATE] = sum.dlq_rate;
    pt.v[SERVE_HIST_WM_LAG] = sum.watermark_lag_s;
    pthread_mutex_lock(&srv->lock);
    srv->hist[srv->hist_next % SERVE_HISTORY] = pt;
    srv->hist_next++;
    if (srv->nhist < SERVE_HISTORY) {
        srv->nhist++;
    }
    pthread_mutex_unlock(&srv->lock);
}

static int hist_put(struct fr_buf *out, double v)
{
    if (isnan(v) || isinf(v)) {
        return fr_buf_puts(out, "null");
    }
    /* Rates are rounded to 1/1000 already; durations and ages to 1 ms. */
    return fr_buf_printf(out, "%.10g", round(v * 1000.0) / 1000.0);
}

int serve_hist_json(struct fr_serve *srv, struct fr_buf *out)
{
    struct serve_hist_point *pts = malloc(SERVE_HISTORY * sizeof *pts);
    if (!pts) {
        return FR_ENOMEM;
    }
    pthread_mutex_lock(&srv->lock);
    unsigned n = srv->nhist;
    for (unsigned k = 0; k < n; k++) { /* oldest first */
        pts[k] = srv->hist[(srv->hist_next - n + k) % SERVE_HISTORY];
    }
    pthread_mutex_unlock(&srv->lock);
    int rc = fr_buf_printf(out, "{\"interval_ms\":1000,\"capacity\":%d,\"points\":%u,\"t_ms\":[",
                           SERVE_HISTORY, n);
    for (unsigned k = 0; rc == FR_OK && k < n; k++) {
        rc = fr_buf_printf(out, "%s%lld", k ? "," : "", (long long)pts[k].t_ms);
    }
    for (int f = 0; rc == FR_OK && f < SERVE_HIST_FIGS; f++) {
        rc = fr_buf_printf(out, "],\"%s\":[", hist_names[f]);
        for (unsigned k = 0; rc == FR_OK && k < n; k++) {
            rc = k ? fr_buf_putc(out, ',') : FR_OK;
            if (rc == FR_OK) {
                rc = hist_put(out, pts[k].v[f]);
            }
        }
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, "]}");
    }
    free(pts);
    return rc;
}

enum MHD_Result serve_history(struct fr_serve *srv, struct MHD_Connection *conn)
{
    struct fr_buf body;
    fr_buf_init(&body, SERVE_HIST_JSON_CAP);
    int rc = serve_hist_json(srv, &body);
    if (rc == FR_OK) {
        rc = fr_buf_putc(&body, '\n');
    }
    if (rc < 0) {
        fr_buf_free(&body);
        return serve_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
                           "cannot build the history: %s", fr_strerror(rc));
    }
    return serve_send_json(conn, MHD_HTTP_OK, &body);
}
