/*
 * test_serve_history.c — serve's chart history (src/serve/history.c, ADR
 * 0054) against a plain model: 650 ticks into the 600-point ring, each
 * with figures the test sets (freshness k mod 7 s, batch k mod 13 ms,
 * trigger 1000 ms), and the document must hold exactly the last 600 ticks
 * in order with those values, the rates null (no older sample), a tick
 * without a process stats file null in its process columns, and fit its
 * cap. The expected text is built here from the model, not by the code.
 */
#include "check.h"

#include "core/buf.h"
#include "core/err.h"
#include "serve/serve_int.h"
#include "stats/stats.h"

#include <pthread.h>

#define TICKS 650
#define BASE_MS INT64_C(1796550000000)

static void tick(struct fr_serve *srv, struct fr_stats *proc, int k, int present)
{
    int64_t now = BASE_MS + (int64_t)k * 1000;
    /* newest committed event time such that freshness = k mod 7 s */
    fr_stats_set(proc, FR_STATS_PROC_NEWEST, 0, (double)(now / 1000 - k % 7));
    fr_stats_set(proc, FR_STATS_PROC_LAST_BATCH, 0, (double)(k % 13) / 1000.0);
    fr_stats_set(proc, FR_STATS_PROC_TRIGGER, 0, 1.0);
    struct fr_stats_snap *snaps[FR_STATS_STAGES];
    for (int s = 0; s < FR_STATS_STAGES; s++) {
        snaps[s] = calloc(1, sizeof *snaps[s]);
        snaps[s]->stage = (enum fr_stats_stage)s;
    }
    if (present) {
        fr_stats_snapshot(proc, snaps[FR_STATS_PROCESS]);
    }
    serve_hist_record(srv, snaps, now);
    for (int s = 0; s < FR_STATS_STAGES; s++) {
        free(snaps[s]);
    }
}

/* "name":[v0,v1,...] for the last 600 ticks, v from the model. */
static void expect(struct fr_buf *b, const char *name, int (*model)(int k, char *out), int first)
{
    fr_buf_printf(b, "\"%s\":[", name);
    for (int k = first; k < TICKS; k++) {
        char v[32];
        model(k, v);
        fr_buf_printf(b, "%s%s", k == first ? "" : ",", v);
    }
    fr_buf_putc(b, ']');
}

static int absent_tick(int k)
{
    return k == 620;
}

static int m_fresh(int k, char *out)
{
    return snprintf(out, 32, absent_tick(k) ? "null" : "%d", k % 7);
}
static int m_batch(int k, char *out)
{
    return snprintf(out, 32, absent_tick(k) ? "null" : "%d", k % 13);
}
static int m_null(int k, char *out)
{
    (void)k;
    return snprintf(out, 32, "null");
}
static int m_t(int k, char *out)
{
    return snprintf(out, 32, "%lld", (long long)(BASE_MS + (int64_t)k * 1000));
}

static void test_ring(void)
{
    struct fr_serve *srv = calloc(1, sizeof *srv);
    pthread_mutex_init(&srv->lock, NULL);
    struct fr_stats *proc = NULL;
    CHECK_EQ_INT(fr_stats_open_memory(FR_STATS_PROCESS, &proc), FR_OK);

    struct fr_buf doc;
    fr_buf_init(&doc, SERVE_HIST_JSON_CAP);
    /* Empty: zero points, every column empty. */
    CHECK_EQ_INT(serve_hist_json(srv, &doc), FR_OK);
    CHECK(strstr(fr_buf_cstr(&doc), "\"points\":0,\"t_ms\":[],\"freshness_s\":[]") != NULL);

    for (int k = 0; k < TICKS; k++) {
        tick(srv, proc, k, !absent_tick(k));
    }
    doc.len = 0;
    CHECK_EQ_INT(serve_hist_json(srv, &doc), FR_OK);
    const char *got = fr_buf_cstr(&doc);
    CHECK(strncmp(got, "{\"interval_ms\":1000,\"capacity\":600,\"points\":600,", 48) == 0);
    const int first = TICKS - SERVE_HISTORY;
    struct fr_buf want;
    fr_buf_init(&want, SERVE_HIST_JSON_CAP);
    struct {
        const char *name;
        int (*model)(int, char *);
    } cols[] = {{"t_ms", m_t},
                {"freshness_s", m_fresh},
                {"events_per_s", m_null},
                {"records_per_s", m_null},
                {"batch_ms", m_batch},
                {"duplicates_per_s", m_null},
                {"late_per_s", m_null},
                {"dlq_per_s", m_null}};
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
        want.len = 0;
        expect(&want, cols[c].name, cols[c].model, first);
        const char *w = fr_buf_cstr(&want);
        if (!strstr(got, w)) {
            fprintf(stderr, "column %s differs from the model\n", cols[c].name);
            CHECK(strstr(got, w) != NULL);
        }
    }
    /* trigger: 1000 except the absent tick */
    CHECK(strstr(got, "\"trigger_ms\":[1000,1000,") != NULL);
    CHECK(doc.len < SERVE_HIST_JSON_CAP);
    fr_buf_free(&want);
    fr_buf_free(&doc);
    fr_stats_close(proc);
    pthread_mutex_destroy(&srv->lock);
    free(srv);
}

int main(void)
{
    RUN(test_ring);
    return check_report();
}
