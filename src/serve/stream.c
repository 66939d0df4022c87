/*
 * stream.c — the ticker thread and `GET /api/v1/stream`.
 *
 * Once a second the ticker reads the stats files (into a ring of samples,
 * from which the status document's rates are computed), records a point
 * of the charts' history (history.c), builds one frame ("event: status" +
 * "event: live"), makes it the newest, wakes every suspended stream, and
 * reaps finished jobs.
 *
 * A new stream is first sent the history (`event: history`, rendered once
 * when it connects and owned by the stream until sent), then frames.
 *
 * A stream connection is a libmicrohttpd response whose content reader
 * hands out the newest frame. When a stream has sent everything it has, the
 * reader suspends the connection (no polling, no CPU); the ticker resumes
 * it when a newer frame exists. A client that reads slowly is only ever
 * given the newest frame when it is ready for more: the frames it missed
 * are counted (serve_stream_frames_dropped_total), never queued, so one
 * stream holds at most one frame whatever the client does. A client that
 * stops reading is closed by the connection timeout.
 *
 * Stream states (under srv->lock):
 *
 *   new ──► prelude ──► history ──► SENDING frame g ──► all sent ──► SUSPENDED
 *                                      ▲                               │
 *                                      └──── ticker: frame g' > g ◄────┘ (resume)
 *   any ──► stopping: END_OF_STREAM;  closed by the peer/timeout ──► freed
 */
#include "serve/serve_int.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STREAM_PRELUDE "retry: 2000\n\n"
#define STREAM_FRAME_CAP ((size_t)8 << 20)

/* ------------------------------------------------------------- frames */

static void frame_release(struct fr_serve *srv, struct serve_frame *frame)
{
    (void)srv;
    if (frame && --frame->refs == 0) {
        free(frame->data);
        free(frame);
    }
}

/* Append "event: NAME\ndata: DOC\n\n" with any newline in DOC made a space
 * (the documents are single-line JSON already). */
static int frame_event(struct fr_buf *out, const char *name, const struct fr_buf *doc)
{
    int rc = fr_buf_printf(out, "event: %s\ndata: ", name);
    size_t at = out->len;
    if (rc == FR_OK) {
        rc = fr_buf_append(out, doc->data, doc->len);
    }
    for (size_t i = at; rc == FR_OK && i < out->len; i++) {
        if (out->data[i] == '\n' || out->data[i] == '\r') {
            out->data[i] = ' ';
        }
    }
    return rc == FR_OK ? fr_buf_puts(out, "\n\n") : rc;
}

/* ------------------------------------------------------------ samples */

static void sample_push(struct fr_serve *srv, struct fr_stats_snap *snaps[FR_STATS_STAGES])
{
    unsigned at = srv->sample_next % SERVE_SAMPLES;
    for (int s = 0; s < FR_STATS_STAGES; s++) {
        free(srv->samples[s][at]);
        srv->samples[s][at] = snaps[s];
        snaps[s] = NULL;
    }
    srv->sample_next++;
    if (srv->nsamples < SERVE_SAMPLES) {
        srv->nsamples++;
    }
}

int serve_old_sample(struct fr_serve *srv, enum fr_stats_stage stage, struct fr_stats_snap *out)
{
    int64_t now = fr_mono_ns();
    int found = 0;
    pthread_mutex_lock(&srv->lock);
    /* Newest to oldest: the first sample at least 4.5 s old, else the oldest
     * that is at least 0.5 s old. */
    const struct fr_stats_snap *best = NULL;
    for (unsigned k = 1; k <= srv->nsamples; k++) {
        const struct fr_stats_snap *snap =
            srv->samples[stage][(srv->sample_next - k) % SERVE_SAMPLES];
        if (!snap || !snap->present) {
            continue;
        }
        int64_t age = now - snap->read_mono_ns;
        if (age >= 500000000) {
            best = snap;
        }
        if (age >= 4500000000) {
            break;
        }
    }
    if (best) {
        memcpy(out, best, sizeof *out);
        found = 1;
    }
    pthread_mutex_unlock(&srv->lock);
    return found;
}

/* ------------------------------------------------------------- ticker */

static void ticker_tick(struct fr_serve *srv)
{
    struct fr_stats_snap *snaps[FR_STATS_STAGES] = {0};
    struct fr_buf status, live, frame;
    fr_buf_init(&status, STREAM_FRAME_CAP);
    fr_buf_init(&live, STREAM_FRAME_CAP);
    fr_buf_init(&frame, 2 * STREAM_FRAME_CAP + 256);
    struct serve_frame *fr = NULL;
    struct fr_stats_group *group = NULL;
    int rc = serve_read_snaps(srv, snaps, &group);
    if (rc == FR_OK) {
        rc = serve_status_json(srv, snaps, group, &status);
    }
    free(group);
    if (rc == FR_OK) {
        serve_hist_record(srv, snaps, fr_wall_ms());
    }
    if (rc == FR_OK) {
        rc = serve_live_json(srv, snaps[FR_STATS_PROCESS], &live);
    }
    if (rc == FR_OK) {
        rc = frame_event(&frame, "status", &status);
    }
    if (rc == FR_OK) {
        rc = frame_event(&frame, "live", &live);
    }
    if (rc == FR_OK) {
        fr = calloc(1, sizeof *fr);
        rc = fr ? FR_OK : FR_ENOMEM;
    }
    if (rc < 0) {
        fr_warn("serve", "cannot build the stream frame: %s", fr_strerror(rc));
        free(fr);
        fr = NULL;
    } else {
        fr->refs = 1;
        fr->len = frame.len;
        fr->data = (char *)frame.data;
        frame.data = NULL;
    }
    pthread_mutex_lock(&srv->lock);
    if (snaps[0]) {
        sample_push(srv, snaps);
    }
    if (fr) {
        fr->gen = ++srv->frame_gen;
        frame_release(srv, srv->frame);
        srv->frame = fr;
        for (struct serve_stream *s = srv->streams; s; s = s->next) {
            if (s->suspended) {
                s->suspended = 0;
                s->resume_pending = 1;
                MHD_resume_connection(s->conn);
            }
        }
    }
    pthread_mutex_unlock(&srv->lock);
    for (int s = 0; s < FR_STATS_STAGES; s++) {
        free(snaps[s]);
    }
    fr_buf_free(&status);
    fr_buf_free(&live);
    fr_buf_free(&frame);
    serve_jobs_reap(srv);
}

static void *ticker_main(void *arg)
{
    struct fr_serve *srv = arg;
    pthread_mutex_lock(&srv->lock);
    while (!srv->stopping) {
        pthread_mutex_unlock(&srv->lock);
        ticker_tick(srv);
        pthread_mutex_lock(&srv->lock);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += 1;
        while (!srv->stopping &&
               pthread_cond_timedwait(&srv->wake, &srv->lock, &until) != ETIMEDOUT) {
        }
    }
    pthread_mutex_unlock(&srv->lock);
    return NULL;
}

int serve_ticker_start(struct fr_serve *srv)
{
    /* The ticker waits on a monotonic clock. */
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_destroy(&srv->wake);
    pthread_cond_init(&srv->wake, &attr);
    pthread_condattr_destroy(&attr);
    if (pthread_create(&srv->ticker, NULL, ticker_main, srv) != 0) {
        return FR_ENOMEM;
    }
    srv->ticker_started = 1;
    return FR_OK;
}

void serve_ticker_stop(struct fr_serve *srv)
{
    pthread_mutex_lock(&srv->lock);
    srv->stopping = 1;
    pthread_cond_broadcast(&srv->wake);
    pthread_mutex_unlock(&srv->lock);
    if (srv->ticker_started) {
        pthread_join(srv->ticker, NULL);
        srv->ticker_started = 0;
    }
}

/* ------------------------------------------------------------ streams */

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct serve_stream *s = cls;
    struct fr_serve *srv = s->srv;
    ssize_t n = 0;
    pthread_mutex_lock(&srv->lock);
    s->resume_pending = 0;
    if (srv->stopping) {
        pthread_mutex_unlock(&srv->lock);
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    if (s->prelude && max >= sizeof STREAM_PRELUDE - 1) {
        s->prelude = 0;
        memcpy(buf, STREAM_PRELUDE, sizeof STREAM_PRELUDE - 1);
        pthread_mutex_unlock(&srv->lock);
        return (ssize_t)(sizeof STREAM_PRELUDE - 1);
    }
    if (s->intro && s->intro_off < s->intro_len) {
        size_t left = s->intro_len - s->intro_off;
        n = (ssize_t)(left < max ? left : max);
        memcpy(buf, s->intro + s->intro_off, (size_t)n);
        s->intro_off += (size_t)n;
        if (s->intro_off == s->intro_len) {
            free(s->intro);
            s->intro = NULL;
        }
        pthread_mutex_unlock(&srv->lock);
        return n;
    }
    if (!s->frame || s->off >= s->frame->len) {
        frame_release(srv, s->frame);
        s->frame = NULL;
        if (srv->frame && srv->frame->gen > s->gen) {
            if (s->gen && srv->frame->gen > s->gen + 1) {
                fr_stats_add(srv->own, FR_STATS_SERVE_DROPPED, 0, srv->frame->gen - s->gen - 1);
            }
            s->frame = srv->frame;
            s->frame->refs++;
            s->gen = s->frame->gen;
            s->off = 0;
        } else {
            /* Nothing new: sleep until the ticker resumes us. */
            s->suspended = 1;
            MHD_suspend_connection(s->conn);
            pthread_mutex_unlock(&srv->lock);
            return 0;
        }
    }
    size_t left = s->frame->len - s->off;
    n = (ssize_t)(left < max ? left : max);
    memcpy(buf, s->frame->data + s->off, (size_t)n);
    s->off += (size_t)n;
    pthread_mutex_unlock(&srv->lock);
    return n;
}

static void stream_free(void *cls)
{
    struct serve_stream *s = cls;
    struct fr_serve *srv = s->srv;
    pthread_mutex_lock(&srv->lock);
    for (struct serve_stream **pp = &srv->streams; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    srv->nstreams--;
    fr_stats_set(srv->own, FR_STATS_SERVE_STREAMS, 0, srv->nstreams);
    frame_release(srv, s->frame);
    pthread_mutex_unlock(&srv->lock);
    free(s->intro);
    free(s);
}

enum MHD_Result serve_stream(struct fr_serve *srv, struct MHD_Connection *conn)
{
    struct serve_stream *s = calloc(1, sizeof *s);
    if (!s) {
        return MHD_NO;
    }
    s->srv = srv;
    s->conn = conn;
    s->prelude = 1;
    /* The history first, so a page draws ten minutes at once. Without it
     * (out of memory) the stream still goes on live. */
    struct fr_buf doc, intro;
    fr_buf_init(&doc, SERVE_HIST_JSON_CAP);
    fr_buf_init(&intro, SERVE_HIST_JSON_CAP + 64);
    if (serve_hist_json(srv, &doc) == FR_OK && frame_event(&intro, "history", &doc) == FR_OK) {
        s->intro = (char *)intro.data;
        s->intro_len = intro.len;
        intro.data = NULL;
    }
    fr_buf_free(&doc);
    fr_buf_free(&intro);
    pthread_mutex_lock(&srv->lock);
    int max = srv->opts.max_streams > 0 ? srv->opts.max_streams : 64;
    if (srv->nstreams >= max || srv->stopping) {
        pthread_mutex_unlock(&srv->lock);
        free(s->intro);
        free(s);
        return serve_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "unavailable",
                           "%d event streams are open already (serve.max_streams)", max);
    }
    s->next = srv->streams;
    srv->streams = s;
    srv->nstreams++;
    fr_stats_set(srv->own, FR_STATS_SERVE_STREAMS, 0, srv->nstreams);
    pthread_mutex_unlock(&srv->lock);
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024,
                                                                  stream_reader, s, stream_free);
    if (!resp) {
        stream_free(s);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ret;
}

void serve_streams_close(struct fr_serve *srv)
{
    pthread_mutex_lock(&srv->lock);
    srv->stopping = 1;
    pthread_cond_broadcast(&srv->wake);
    for (struct serve_stream *s = srv->streams; s; s = s->next) {
        if (s->suspended) {
            s->suspended = 0;
            s->resume_pending = 1;
            MHD_resume_connection(s->conn);
        }
    }
    pthread_mutex_unlock(&srv->lock);
    /* libmicrohttpd must have taken every resumed connection back before it
     * is stopped (stopping with suspended connections is undefined). */
    int64_t deadline = fr_mono_ms() + 3000;
    for (;;) {
        int pending = 0;
        pthread_mutex_lock(&srv->lock);
        for (struct serve_stream *s = srv->streams; s; s = s->next) {
            pending |= s->resume_pending || s->suspended;
        }
        pthread_mutex_unlock(&srv->lock);
        if (!pending || fr_mono_ms() > deadline) {
            break;
        }
        fr_sleep_ms(10);
    }
}
