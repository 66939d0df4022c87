/*
 * truth.c — the ground-truth file: what the feed sent, for tests to compare
 * with what the pipeline stored.
 *
 * Only the sent *ranges* are recorded (each connection sends one contiguous
 * run of positions); what a position is — meta.id, Kafka timestamp, fault
 * tags — is recomputed from the stream when the file is written, because
 * the stream is a pure function of its options. Memory is O(connections),
 * not O(events). Connection records beyond TRUTH_MAX_CONNS are counted and
 * dropped (their ranges are still kept).
 *
 * The file (format "freshet-feed-truth/1", docs/FEED.md has the schema) is
 * written whole with fr_fs_write_atomic: by a background writer after each
 * connection closes (closes that arrive during a write coalesce into one
 * more write), and once more at finish with "complete": true.
 *
 * Threads: connection threads call conn_open/sent/stall/close (one mutex);
 * the writer thread and finish serialise writes on a second mutex and
 * never hold the first while rendering.
 */
#include "feed/feed_int.h"

#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"
#include "core/fsutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRUTH_MAX_CONNS 100000
#define TRUTH_MAX_BYTES ((size_t)2 << 30)

struct truth_conn {
    struct fr_feed_conn_info ci;
    int64_t next; /* one past the last position sent */
    int64_t stalls;
    int64_t opened_ms, closed_ms;
    char reason[24]; /* empty while open */
};

struct truth_range {
    int64_t a, b; /* [a, b) */
};

struct fr_feed_truth {
    const struct fr_feed_stream *stream;
    char *path;
    pthread_mutex_t mu; /* guards everything below up to write_mu */
    pthread_cond_t cv;
    struct truth_conn *conns;
    size_t nconns, conns_alloc;
    int64_t dropped;
    struct truth_range *ranges; /* closed connections, merged, sorted */
    size_t nranges, ranges_alloc;
    int dirty, stop, started;
    pthread_t thread;
    pthread_mutex_t write_mu; /* one write at a time */
    struct fr_feed_cursor *cur;
    int last_rc;
};

/* Merge [a, b) into a sorted, disjoint set. */
static int truth_range_add(struct truth_range **set, size_t *n, size_t *alloc, int64_t a, int64_t b)
{
    if (a >= b) {
        return FR_OK;
    }
    size_t i = 0;
    while (i < *n && (*set)[i].b < a) {
        i++;
    }
    size_t j = i;
    while (j < *n && (*set)[j].a <= b) {
        a = (*set)[j].a < a ? (*set)[j].a : a;
        b = (*set)[j].b > b ? (*set)[j].b : b;
        j++;
    }
    if (j == i) { /* insert */
        if (*n == *alloc) {
            size_t next = *alloc ? *alloc * 2 : 16;
            struct truth_range *r = realloc(*set, next * sizeof *r);
            if (!r) {
                return FR_ENOMEM;
            }
            *set = r;
            *alloc = next;
        }
        memmove(*set + i + 1, *set + i, (*n - i) * sizeof **set);
        (*n)++;
    } else if (j > i + 1) { /* collapse i..j-1 into i */
        memmove(*set + i + 1, *set + j, (*n - j) * sizeof **set);
        *n -= j - i - 1;
    }
    (*set)[i].a = a;
    (*set)[i].b = b;
    return FR_OK;
}

int fr_feed_truth_new(const struct fr_feed_stream *stream, const char *path,
                      struct fr_feed_truth **out)
{
    *out = NULL;
    if (!path) {
        return FR_OK;
    }
    struct fr_feed_truth *truth = calloc(1, sizeof *truth);
    if (!truth) {
        return FR_ENOMEM;
    }
    truth->stream = stream;
    truth->path = strdup(path);
    if (!truth->path || fr_feed_cursor_new(stream, &truth->cur) < 0) {
        free(truth->path);
        free(truth);
        return FR_ENOMEM;
    }
    pthread_mutex_init(&truth->mu, NULL);
    pthread_mutex_init(&truth->write_mu, NULL);
    pthread_cond_init(&truth->cv, NULL);
    *out = truth;
    return FR_OK;
}

static void *truth_writer(void *arg)
{
    struct fr_feed_truth *truth = arg;
    pthread_mutex_lock(&truth->mu);
    for (;;) {
        while (!truth->dirty && !truth->stop) {
            pthread_cond_wait(&truth->cv, &truth->mu);
        }
        if (truth->stop) {
            break;
        }
        truth->dirty = 0;
        pthread_mutex_unlock(&truth->mu);
        fr_feed_truth_write(truth, 0);
        pthread_mutex_lock(&truth->mu);
    }
    pthread_mutex_unlock(&truth->mu);
    return NULL;
}

int fr_feed_truth_start(struct fr_feed_truth *truth)
{
    if (!truth) {
        return FR_OK;
    }
    if (pthread_create(&truth->thread, NULL, truth_writer, truth) != 0) {
        return FR_ENOMEM;
    }
    truth->started = 1;
    return FR_OK;
}

int fr_feed_truth_finish(struct fr_feed_truth *truth)
{
    if (!truth) {
        return FR_OK;
    }
    if (truth->started) {
        pthread_mutex_lock(&truth->mu);
        truth->stop = 1;
        pthread_cond_signal(&truth->cv);
        pthread_mutex_unlock(&truth->mu);
        pthread_join(truth->thread, NULL);
    }
    int rc = fr_feed_truth_write(truth, 1);
    pthread_mutex_destroy(&truth->mu);
    pthread_mutex_destroy(&truth->write_mu);
    pthread_cond_destroy(&truth->cv);
    fr_feed_cursor_free(truth->cur);
    free(truth->conns);
    free(truth->ranges);
    free(truth->path);
    free(truth);
    return rc;
}

/* ---- connection records ---------------------------------------------- */

int fr_feed_truth_conn_open(struct fr_feed_truth *truth, const struct fr_feed_conn_info *ci,
                            int64_t *handle)
{
    *handle = -1;
    if (!truth) {
        return FR_OK;
    }
    int rc = FR_OK;
    pthread_mutex_lock(&truth->mu);
    if (truth->nconns >= TRUTH_MAX_CONNS) {
        truth->dropped++;
        goto cleanup;
    }
    if (truth->nconns == truth->conns_alloc) {
        size_t next = truth->conns_alloc ? truth->conns_alloc * 2 : 64;
        struct truth_conn *c = realloc(truth->conns, next * sizeof *c);
        if (!c) {
            rc = FR_ENOMEM;
            goto cleanup;
        }
        truth->conns = c;
        truth->conns_alloc = next;
    }
    struct truth_conn *c = &truth->conns[truth->nconns];
    memset(c, 0, sizeof *c);
    c->ci = *ci;
    c->next = ci->start;
    c->opened_ms = fr_wall_ms();
    *handle = (int64_t)truth->nconns++;
cleanup:
    pthread_mutex_unlock(&truth->mu);
    return rc;
}

void fr_feed_truth_conn_sent(struct fr_feed_truth *truth, int64_t handle, int64_t pos)
{
    if (!truth || handle < 0) {
        return;
    }
    pthread_mutex_lock(&truth->mu);
    truth->conns[handle].next = pos + 1;
    pthread_mutex_unlock(&truth->mu);
}

void fr_feed_truth_conn_stall(struct fr_feed_truth *truth, int64_t handle)
{
    if (!truth || handle < 0) {
        return;
    }
    pthread_mutex_lock(&truth->mu);
    truth->conns[handle].stalls++;
    pthread_mutex_unlock(&truth->mu);
}

void fr_feed_truth_conn_close(struct fr_feed_truth *truth, int64_t handle, const char *reason)
{
    if (!truth || handle < 0) {
        return;
    }
    pthread_mutex_lock(&truth->mu);
    struct truth_conn *c = &truth->conns[handle];
    snprintf(c->reason, sizeof c->reason, "%s", reason);
    c->closed_ms = fr_wall_ms();
    if (truth_range_add(&truth->ranges, &truth->nranges, &truth->ranges_alloc, c->ci.start,
                        c->next) < 0) {
        fr_error("feed", "truth: out of memory recording a range");
    }
    truth->dirty = 1;
    pthread_cond_signal(&truth->cv);
    pthread_mutex_unlock(&truth->mu);
}

/* ---- the file -------------------------------------------------------- */

static const char *truth_resume_name(enum fr_feed_resume_kind k)
{
    static const char *const names[] = {"default", "timestamp", "offset",
                                        "latest",  "none",      "since"};
    return (unsigned)k < 6 ? names[k] : "default";
}

static int truth_head(struct fr_feed_truth *truth, struct fr_buf *out, int complete)
{
    const struct fr_feed_opts *o = fr_feed_stream_opts(truth->stream);
    char now[32], start[32];
    fr_time_format_ms(fr_wall_us(), now);
    fr_time_format_ms(o->start_ms * 1000, start);
    int64_t count = fr_feed_stream_count(truth->stream);
    int rc = fr_buf_printf(
        out, "{\"format\":\"freshet-feed-truth/1\",\"complete\":%s,\"written_at\":\"%s\",",
        complete ? "true" : "false", now);
    if (rc < 0) {
        return rc;
    }
    if (o->synthetic) {
        rc = fr_buf_printf(
            out, "\"source\":{\"kind\":\"synthetic\",\"seed\":%llu,\"start\":\"%s\",\"count\":",
            (unsigned long long)o->seed, start);
    } else {
        rc = fr_buf_puts(out, "\"source\":{\"kind\":\"files\",\"files\":[");
        for (size_t i = 0; i < o->nfiles && rc == FR_OK; i++) {
            rc = i ? fr_buf_putc(out, ',') : FR_OK;
            if (rc == FR_OK) {
                rc = fr_buf_json_str(out, o->files[i], strlen(o->files[i]));
            }
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, "],\"count\":");
        }
    }
    if (rc == FR_OK) {
        rc = count == FR_FEED_UNBOUNDED ? fr_buf_puts(out, "null")
                                        : fr_buf_printf(out, "%lld", (long long)count);
    }
    if (rc == FR_OK) {
        rc = fr_buf_printf(out, ",\"offset_base\":%lld},", (long long)o->offset_base);
    }
    if (rc == FR_OK) {
        rc = fr_buf_printf(
            out,
            "\"flags\":{\"rate\":%g,\"canary_rate\":%g,\"dup_rate\":%g,\"dup_window\":%lld,"
            "\"malformed_rate\":%g,\"oversize_bytes\":%lld,\"late_rate\":%g,\"late_ms\":%lld,"
            "\"late_random\":%s,\"ooo_rate\":%g,\"ooo_ms\":%lld,\"future_rate\":%g,"
            "\"future_ms\":%lld,\"disconnect_every\":%lld,\"stall_every\":%lld,"
            "\"stall_ms\":%lld,\"overlap\":%lld},",
            o->rate, o->synthetic ? o->canary_rate : 0.0, o->dup_rate, (long long)o->dup_window,
            o->malformed_rate, (long long)o->oversize_bytes, o->late_rate, (long long)o->late_ms,
            o->late_random ? "true" : "false", o->ooo_rate, (long long)o->ooo_ms, o->future_rate,
            (long long)o->future_ms, (long long)o->disconnect_every, (long long)o->stall_every,
            (long long)o->stall_ms, (long long)o->overlap);
    }
    return rc;
}

static int truth_conns(struct fr_buf *out, const struct truth_conn *conns, size_t n,
                       int64_t dropped)
{
    int rc = fr_buf_puts(out, "\"connections\":[");
    for (size_t i = 0; i < n && rc == FR_OK; i++) {
        const struct truth_conn *c = &conns[i];
        char opened[32], closed[32];
        fr_time_format_ms(c->opened_ms * 1000, opened);
        fr_time_format_ms(c->closed_ms * 1000, closed);
        rc = fr_buf_printf(
            out,
            "%s{\"id\":%zu,\"remote\":\"%s\",\"mode\":\"%s\",\"resume\":\"%s\","
            "\"requested\":%lld,\"start\":%lld,\"overlap\":%lld,\"end\":%lld,\"sent\":%lld,"
            "\"stalls\":%lld,\"disconnect_injected\":%s,\"close\":",
            i ? "," : "", i, c->ci.remote, c->ci.ndjson ? "ndjson" : "sse",
            truth_resume_name(c->ci.resume), (long long)c->ci.requested, (long long)c->ci.start,
            (long long)(c->ci.requested - c->ci.start), (long long)c->next,
            (long long)(c->next - c->ci.start), (long long)c->stalls,
            strcmp(c->reason, "disconnect_every") == 0 ? "true" : "false");
        if (rc == FR_OK) {
            rc = c->reason[0] ? fr_buf_printf(out, "\"%s\"", c->reason) : fr_buf_puts(out, "null");
        }
        if (rc == FR_OK) {
            rc = fr_buf_printf(out, ",\"opened\":\"%s\",\"closed\":", opened);
        }
        if (rc == FR_OK) {
            rc = c->reason[0] ? fr_buf_printf(out, "\"%s\"}", closed) : fr_buf_puts(out, "null}");
        }
    }
    if (rc == FR_OK) {
        rc = fr_buf_printf(out, "],\"connections_dropped\":%lld,", (long long)dropped);
    }
    return rc;
}

static int truth_events(struct fr_feed_truth *truth, struct fr_buf *out,
                        const struct truth_range *ranges, size_t nranges)
{
    int64_t n = 0, counts[7] = {0}; /* canary, malformed, dup, late, ooo, future, without id */
    int rc = fr_buf_puts(out, "\"sent_ranges\":[");
    for (size_t i = 0; i < nranges && rc == FR_OK; i++) {
        rc = fr_buf_printf(out, "%s[%lld,%lld]", i ? "," : "", (long long)ranges[i].a,
                           (long long)ranges[i].b);
        n += ranges[i].b - ranges[i].a;
    }
    if (rc == FR_OK) {
        rc = fr_buf_printf(out, "],\"positions_sent\":%lld,\"events\":[", (long long)n);
    }
    const char *sep = "";
    for (size_t i = 0; i < nranges && rc == FR_OK; i++) {
        for (int64_t pos = ranges[i].a; pos < ranges[i].b && rc == FR_OK; pos++) {
            struct fr_feed_info info;
            rc = fr_feed_stream_info(truth->cur, pos, &info);
            if (rc < 0) {
                break;
            }
            counts[0] += info.canary;
            if (info.fault != FR_FEED_FAULT_NONE) {
                counts[info.fault]++;
            }
            counts[6] += !info.has_id;
            rc = info.has_id ? fr_buf_printf(out, "%s[%lld,\"%s\",%lld", sep, (long long)pos,
                                             info.meta_id, (long long)info.ts_ms)
                             : fr_buf_printf(out, "%s[%lld,null,%lld", sep, (long long)pos,
                                             (long long)info.ts_ms);
            sep = ",\n";
            if (rc == FR_OK && (info.canary || info.fault != FR_FEED_FAULT_NONE)) {
                rc = fr_buf_putc(out, ',');
                if (rc == FR_OK) {
                    rc = fr_feed_info_tags(&info, out);
                }
            }
            if (rc == FR_OK) {
                rc = fr_buf_putc(out, ']');
            }
        }
    }
    if (rc == FR_OK) {
        rc = fr_buf_printf(
            out,
            "],\"summary\":{\"canary\":%lld,\"malformed\":%lld,\"dup\":%lld,\"late\":%lld,"
            "\"ooo\":%lld,\"future\":%lld,\"without_id\":%lld}}\n",
            (long long)counts[0], (long long)counts[1], (long long)counts[2], (long long)counts[3],
            (long long)counts[4], (long long)counts[5], (long long)counts[6]);
    }
    return rc;
}

int fr_feed_truth_write(struct fr_feed_truth *truth, int complete)
{
    if (!truth) {
        return FR_OK;
    }
    pthread_mutex_lock(&truth->write_mu);
    struct fr_buf out;
    fr_buf_init(&out, TRUTH_MAX_BYTES);
    struct truth_range *ranges = NULL;
    struct truth_conn *conns = NULL;
    size_t nranges = 0, ranges_alloc = 0, nconns;
    int64_t dropped;
    int rc = FR_OK;

    /* Snapshot under the lock: closed ranges plus open connections' progress. */
    pthread_mutex_lock(&truth->mu);
    nconns = truth->nconns;
    dropped = truth->dropped;
    conns = malloc((nconns ? nconns : 1) * sizeof *conns);
    if (!conns) {
        rc = FR_ENOMEM;
    }
    for (size_t i = 0; i < truth->nranges && rc == FR_OK; i++) {
        rc = truth_range_add(&ranges, &nranges, &ranges_alloc, truth->ranges[i].a,
                             truth->ranges[i].b);
    }
    for (size_t i = 0; i < nconns && rc == FR_OK; i++) {
        conns[i] = truth->conns[i];
        if (!conns[i].reason[0]) {
            rc =
                truth_range_add(&ranges, &nranges, &ranges_alloc, conns[i].ci.start, conns[i].next);
        }
    }
    pthread_mutex_unlock(&truth->mu);

    if (rc == FR_OK) {
        rc = truth_head(truth, &out, complete);
    }
    if (rc == FR_OK) {
        rc = truth_conns(&out, conns, nconns, dropped);
    }
    if (rc == FR_OK) {
        rc = truth_events(truth, &out, ranges, nranges);
    }
    if (rc == FR_OK) {
        rc = fr_fs_write_atomic(truth->path, out.data, out.len);
    }
    if (rc < 0) {
        fr_error("feed", "truth: cannot write %s: %s", truth->path, fr_strerror(rc));
    }
    truth->last_rc = rc;
    free(conns);
    free(ranges);
    fr_buf_free(&out);
    pthread_mutex_unlock(&truth->write_mu);
    return rc;
}
