/*
 * docs.c — the documents built from the stats files: `GET /metrics`
 * (Prometheus text), `GET /api/v1/status` and `GET /api/v1/live` (JSON,
 * docs/API.md). The stream's frames (stream.c) are the same documents.
 *
 * The process stage is either the single processor (stats/process.stats)
 * or, in the scale-out mode, the group of its members (shards and the
 * finalizer, each its own stats file: src/stats/group.c, ADR 0042): then
 * the process figures are the group's totals under the same names, and
 * /metrics and the status document list the members too.
 * Any worker thread and the ticker call these; they read the files afresh
 * each time (a few microseconds) and share nothing but serve's own stats
 * handle (thread-safe), the sample ring and the topics error latch (both
 * under srv->lock).
 *
 * The live document embeds two files the processor replaces atomically
 * (temp + rename) after every epoch: `view.json` (as "view") and, when
 * enrichment is on, `topics.json` (as "topics", docs/ENRICH.md). Either is
 * embedded verbatim only when it is one valid JSON value within its cap, so
 * a damaged file can never break the document; it shows as null. For
 * topics.json a refusal (malformed, not an object, over DOCS_TOPICS_CAP,
 * an I/O error) is also counted (serve_topics_unreadable_total) and logged
 * once per episode: the first refusal, and again when the reason changes;
 * an absent file is normal (enrichment off) and is neither.
 */
#include "serve/serve_int.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"
#include "core/fsutil.h"
#include "core/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DOCS_CAP ((size_t)8 << 20)
#define DOCS_VIEW_CAP ((size_t)4 << 20)
/* topics.json holds at most 20 topics of a few hundred bytes each. */
#define DOCS_TOPICS_CAP ((size_t)256 << 10)

/* The process stage in the scale-out mode: replace *process (the single
 * file's snapshot) by the group's totals when the group is the one running
 * (fr_stats_group_active); *group receives the members then (the caller
 * frees it), else NULL. Out of memory: the single file's view stays. */
static void docs_group(struct fr_serve *srv, struct fr_stats_snap *process, int64_t now,
                       struct fr_stats_group **group)
{
    *group = NULL;
    struct fr_stats_group *g = malloc(sizeof *g);
    if (!g) {
        return;
    }
    if (fr_stats_group_read(srv->data_dir, g) == FR_OK && fr_stats_group_active(g, process)) {
        fr_stats_group_total(g, now, process);
        *group = g;
        return;
    }
    free(g);
}

int serve_read_snaps(struct fr_serve *srv, struct fr_stats_snap *snaps[FR_STATS_STAGES],
                     struct fr_stats_group **group)
{
    struct fr_stats_group *dummy = NULL;
    if (!group) {
        group = &dummy;
    }
    *group = NULL;
    for (int s = 0; s < FR_STATS_STAGES; s++) {
        snaps[s] = calloc(1, sizeof *snaps[s]);
        if (!snaps[s]) {
            for (int k = 0; k < s; k++) {
                free(snaps[k]);
                snaps[k] = NULL;
            }
            return FR_ENOMEM;
        }
    }
    int64_t now = fr_wall_ms();
    for (int s = 0; s < FR_STATS_SERVE; s++) {
        int rc = fr_stats_read(srv->data_dir, (enum fr_stats_stage)s, snaps[s]);
        if (rc < 0 && rc != FR_ENOTFOUND) {
            /* A file of another build or a damaged one: the stage shows down. */
            memset(snaps[s], 0, sizeof *snaps[s]);
            snaps[s]->stage = (enum fr_stats_stage)s;
        }
        if (s == FR_STATS_PROCESS) {
            docs_group(srv, snaps[s], now, group);
        }
        const struct fr_stats_snap *snap = snaps[s];
        fr_stats_set(srv->own, FR_STATS_STAGE_UP, (unsigned)s, fr_stats_snap_up(snap, now));
        fr_stats_set(srv->own, FR_STATS_STAGE_HEARTBEAT_AGE, (unsigned)s,
                     snap->present ? ((double)now - (double)snap->heartbeat_ms) / 1000.0 : NAN);
        fr_stats_set(srv->own, FR_STATS_STAGE_START, (unsigned)s,
                     snap->present ? (double)snap->started_ms / 1000.0 : NAN);
    }
    fr_stats_set(srv->own, FR_STATS_STAGE_UP, FR_STATS_SERVE, 1);
    fr_stats_set(srv->own, FR_STATS_STAGE_HEARTBEAT_AGE, FR_STATS_SERVE, 0);
    fr_stats_snapshot(srv->own, snaps[FR_STATS_SERVE]);
    free(dummy);
    return FR_OK;
}

/* "null" or the integer. */
static int docs_put_ms(struct fr_buf *out, const char *key, int present, int64_t ms)
{
    return present ? fr_buf_printf(out, "\"%s\":%lld", key, (long long)ms)
                   : fr_buf_printf(out, "\"%s\":null", key);
}

static int docs_stage(struct fr_serve *srv, const struct fr_stats_snap *snap,
                      const struct fr_stats_group *group, int64_t now, struct fr_buf *out)
{
    int rc = fr_buf_printf(out, "\"%s\":{\"up\":%s,", fr_stats_stage_name(snap->stage),
                           fr_stats_snap_up(snap, now) ? "true" : "false");
    if (rc == FR_OK) {
        rc = docs_put_ms(out, "pid", snap->present && !group, snap->pid);
    }
    if (rc == FR_OK) {
        rc = fr_buf_putc(out, ',');
    }
    if (rc == FR_OK) {
        rc = docs_put_ms(out, "started_ms", snap->present, snap->started_ms);
    }
    if (rc == FR_OK) {
        rc = fr_buf_putc(out, ',');
    }
    if (rc == FR_OK) {
        rc = docs_put_ms(out, "heartbeat_ms", snap->present, snap->heartbeat_ms);
    }
    if (rc == FR_OK) {
        rc = snap->present ? fr_buf_printf(out, ",\"heartbeat_age_seconds\":%.3f,",
                                           ((double)now - (double)snap->heartbeat_ms) / 1000.0)
                           : fr_buf_puts(out, ",\"heartbeat_age_seconds\":null,");
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, "\"metrics\":");
    }
    if (rc == FR_OK) {
        rc = fr_stats_render_json(snap, out);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, ",\"rates\":");
    }
    if (rc == FR_OK) {
        struct fr_stats_snap *old = malloc(sizeof *old);
        if (!old) {
            return FR_ENOMEM;
        }
        int have = serve_old_sample(srv, snap->stage, old);
        rc = fr_stats_render_rates(snap, have ? old : NULL, out);
        free(old);
    }
    if (rc == FR_OK && snap->stage == FR_STATS_PROCESS) {
        /* "group": the figures are the members' totals; "members" lists
         * them (empty for the single processor). */
        rc = fr_buf_printf(out, ",\"group\":%s,\"members\":", group ? "true" : "false");
        if (rc == FR_OK) {
            rc = group ? fr_stats_render_members_json(group, now, out) : fr_buf_puts(out, "[]");
        }
    }
    return rc == FR_OK ? fr_buf_putc(out, '}') : rc;
}

int serve_status_json(struct fr_serve *srv, struct fr_stats_snap *const snaps[FR_STATS_STAGES],
                      const struct fr_stats_group *group, struct fr_buf *out)
{
    int64_t now = fr_wall_ms();
    int rc = fr_buf_printf(out, "{\"version\":\"%s\",\"now_ms\":%lld,\"stages\":{", FR_VERSION,
                           (long long)now);
    for (int s = 0; rc == FR_OK && s < FR_STATS_STAGES; s++) {
        if (s) {
            rc = fr_buf_putc(out, ',');
        }
        if (rc == FR_OK) {
            rc = docs_stage(srv, snaps[s], s == FR_STATS_PROCESS ? group : NULL, now, out);
        }
    }
    return rc == FR_OK ? fr_buf_puts(out, "}}") : rc;
}

/* Read <data>/stats/topics.json into buf (cap DOCS_TOPICS_CAP), trailing
 * whitespace dropped. FR_OK: one JSON object, to embed as is; FR_ENOTFOUND:
 * absent (enrichment off); FR_ETOOBIG, FR_EJSON or an I/O error: refused. */
static int docs_read_topics(const struct fr_serve *srv, struct fr_buf *buf)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/stats/topics.json", srv->data_dir);
    int rc = fr_fs_read_file(path, buf);
    if (rc < 0) {
        return rc;
    }
    const char *p = (const char *)buf->data;
    const char *end = p ? p + buf->len : p;
    const char *first = p ? fr_json_ws(p, end) : end;
    if (first == end || *first != '{' || fr_json_validate(p, end) < 0) {
        return FR_EJSON;
    }
    while (buf->len && (buf->data[buf->len - 1] == '\n' || buf->data[buf->len - 1] == ' ' ||
                        buf->data[buf->len - 1] == '\r' || buf->data[buf->len - 1] == '\t')) {
        buf->len--;
    }
    return FR_OK;
}

/* Count a refused topics.json, and log it when it starts a new episode. */
static void docs_topics_outcome(struct fr_serve *srv, int rc)
{
    int refused = rc < 0 && rc != FR_ENOTFOUND;
    if (refused) {
        fr_stats_add(srv->own, FR_STATS_SERVE_TOPICS_UNREADABLE, 0, 1);
    }
    pthread_mutex_lock(&srv->lock);
    int last = srv->topics_err;
    srv->topics_err = refused ? rc : 0;
    pthread_mutex_unlock(&srv->lock);
    if (refused && rc != last) {
        fr_warn("serve",
                "%s/stats/topics.json refused (%s): the live document shows \"topics\": null "
                "until it is readable (serve_topics_unreadable_total counts each read)",
                srv->data_dir, fr_strerror(rc));
    } else if (!refused && last) {
        fr_info("serve", "%s/stats/topics.json is %s again", srv->data_dir,
                rc == FR_OK ? "readable" : "absent");
    }
}

int serve_live_json(struct fr_serve *srv, const struct fr_stats_snap *process, struct fr_buf *out)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/stats/view.json", srv->data_dir);
    struct fr_buf view;
    fr_buf_init(&view, DOCS_VIEW_CAP);
    int have = fr_fs_read_file(path, &view) == FR_OK;
    while (have && view.len &&
           (view.data[view.len - 1] == '\n' || view.data[view.len - 1] == ' ')) {
        view.len--;
    }
    /* The file is ours and replaced atomically; a damaged one shows as null. */
    if (have && fr_json_validate((const char *)view.data, (const char *)view.data + view.len) < 0) {
        have = 0;
    }
    int rc = fr_buf_printf(
        out, "{\"up\":%s,\"view\":", fr_stats_snap_up(process, fr_wall_ms()) ? "true" : "false");
    if (rc == FR_OK) {
        rc = have && view.len ? fr_buf_append(out, view.data, view.len) : fr_buf_puts(out, "null");
    }
    struct fr_buf topics;
    fr_buf_init(&topics, DOCS_TOPICS_CAP);
    int trc = docs_read_topics(srv, &topics);
    docs_topics_outcome(srv, trc);
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, ",\"topics\":");
    }
    if (rc == FR_OK) {
        rc = trc == FR_OK ? fr_buf_append(out, topics.data, topics.len) : fr_buf_puts(out, "null");
    }
    if (rc == FR_OK) {
        rc = fr_buf_putc(out, '}');
    }
    fr_buf_free(&topics);
    fr_buf_free(&view);
    return rc;
}

static void docs_free_snaps(struct fr_stats_snap *snaps[FR_STATS_STAGES])
{
    for (int s = 0; s < FR_STATS_STAGES; s++) {
        free(snaps[s]);
    }
}

enum MHD_Result serve_metrics(struct fr_serve *srv, struct MHD_Connection *conn)
{
    struct fr_stats_snap *snaps[FR_STATS_STAGES] = {0};
    struct fr_stats_group *group = NULL;
    struct fr_buf body;
    fr_buf_init(&body, DOCS_CAP);
    int rc = serve_read_snaps(srv, snaps, &group);
    if (rc == FR_OK) {
        const struct fr_stats_snap *const *cs = (const struct fr_stats_snap *const *)snaps;
        rc = fr_stats_render_prom(cs, &body);
    }
    if (rc == FR_OK) {
        rc = serve_own_metrics(srv, &body);
    }
    if (rc == FR_OK && group) {
        rc = fr_stats_render_members_prom(group, fr_wall_ms(), &body);
    }
    free(group);
    docs_free_snaps(snaps);
    if (rc < 0) {
        fr_buf_free(&body);
        return serve_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
                           "cannot render the metrics: %s", fr_strerror(rc));
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        body.len, body.data, body.data ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        fr_buf_free(&body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            "text/plain; version=0.0.4; charset=utf-8");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ret;
}

enum MHD_Result serve_status(struct fr_serve *srv, struct MHD_Connection *conn)
{
    struct fr_stats_snap *snaps[FR_STATS_STAGES] = {0};
    struct fr_stats_group *group = NULL;
    struct fr_buf body;
    fr_buf_init(&body, DOCS_CAP);
    int rc = serve_read_snaps(srv, snaps, &group);
    if (rc == FR_OK) {
        rc = serve_status_json(srv, snaps, group, &body);
    }
    free(group);
    if (rc == FR_OK) {
        rc = fr_buf_putc(&body, '\n');
    }
    docs_free_snaps(snaps);
    if (rc < 0) {
        fr_buf_free(&body);
        return serve_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
                           "cannot build the status: %s", fr_strerror(rc));
    }
    return serve_send_json(conn, MHD_HTTP_OK, &body);
}

enum MHD_Result serve_live(struct fr_serve *srv, struct MHD_Connection *conn)
{
    struct fr_stats_snap *process = calloc(1, sizeof *process);
    if (!process) {
        return MHD_NO;
    }
    fr_stats_read(srv->data_dir, FR_STATS_PROCESS, process);
    struct fr_stats_group *group = NULL;
    docs_group(srv, process, fr_wall_ms(), &group); /* "up": the group's */
    free(group);
    struct fr_buf body;
    fr_buf_init(&body, DOCS_CAP);
    int rc = serve_live_json(srv, process, &body);
    if (rc == FR_OK) {
        rc = fr_buf_putc(&body, '\n');
    }
    free(process);
    if (rc < 0) {
        fr_buf_free(&body);
        return serve_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
                           "cannot build the live view: %s", fr_strerror(rc));
    }
    return serve_send_json(conn, MHD_HTTP_OK, &body);
}
