/*
 * ingest.c — `freshet ingest`: the SSE client's events into the log.
 *
 * Threads: the main thread runs the SSE client (blocking); a flusher thread
 * wakes every log.fsync_interval_ms to group-commit what the main thread
 * appended and to print the status line. Both touch the log only under
 * ingest.lock. Nothing else is shared.
 *
 * Failure policy is crash-only: any log error (a full disk, an I/O error)
 * ends the process with status 1 after a clear message; the supervisor
 * restarts it, and the restart resumes from the last durable record, so a
 * failure can repeat events (counted as overlap) but never skip one.
 *
 * Resume: at start, the last durable record of the topic (the OLDEST by
 * append time of the partitions' last records: partitions are
 * acknowledged independently — Kafka's delivery reports, the embedded
 * log's per-partition writes — so after a crash one partition may hold
 * later events than another whose last batch was lost, while each
 * partition is gap-free; every event before the oldest tail is stored)
 * gives the stored SSE id; its timestamps
 * are moved back by ingest.resume_rewind_ms (resume.c). Within one run, a
 * reconnect resumes from the newest appended event the same way: appended
 * but not yet durable events are still in this process and will be flushed
 * before any later position is.
 *
 * Overlap: the rewind makes the source send again the events that share
 * the last stored millisecond. Ingest remembers a fingerprint (payload
 * bytes and SSE id) of the last INGEST_RING events it appended, rebuilt from
 * the durable tail at start. Only a resume connection (one that sent a
 * Last-Event-ID) skips anything, and only up to the resume position (the
 * newest stored position, topic by topic, since.h): there, an event whose
 * fingerprint matches a stored one is an exact re-delivery, counted as
 * overlap and not appended again. Each stored copy absorbs at most one
 * re-delivery per connection (ring_live), so a stream that carried two
 * identical events in one millisecond keeps both. Everything else —
 * every event of a connection that is not a resume, every event past the
 * resume position, an exact copy beyond the stored ones — goes to the log;
 * the processor's dedup on meta.id is the place for duplicates
 * (docs/adr/0050-overlap-only-after-resume.md).
 *
 * --since (an empty log only) and retention gaps: since.h,
 * docs/adr/0049-ingest-since-and-gaps.md.
 */
#include "ingest/ingest.h"
#include "ingest/since.h"

#include "core/clock.h"
#include "core/crc32c.h"
#include "core/diag.h"
#include "core/err.h"
#include "ingest/file.h"
#include "log/log.h"
#include "sse/sse.h"
#include "kafka/kafka.h"
#include "stats/stats.h"

#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INGEST_RING 256
#define INGEST_TOPIC "recentchange"

struct ingest_counters {
    uint64_t events;   /* appended to the log */
    uint64_t canaries; /* dropped by the canary rule */
    uint64_t overlap;  /* re-delivered events recognised after a resume */
    uint64_t ignored;  /* non-message events (other than error) */
    uint64_t gaps;     /* retention gaps reported */
};

struct ingest {
    struct fr_conf *conf;
    struct fr_log *log;
    const struct fr_log_opts *lopts; /* the backend (ring_load's readers) */
    struct fr_sse_client *client;
    struct fr_stats *stats; /* <data>/stats/ingest.stats (thread-safe) */
    struct fr_sse_client_stats published; /* client counters already added to stats */
    pthread_mutex_t lock;
    int log_error; /* first log error, under lock */

    struct fr_buf resume;  /* the Last-Event-ID sent on the next connect */
    struct fr_buf last_id; /* SSE id of the newest appended event */
    uint64_t ring[INGEST_RING]; /* fingerprints of the last appended events */
    unsigned char ring_live[INGEST_RING]; /* 1: may absorb one re-delivery on this connection */
    unsigned ring_next;
    int64_t events_since_connect;
    int overlap_open;            /* a resume connection, not yet past the resume position */
    struct fr_ingest_pos horizon; /* the newest stored position, topic by topic */
    int64_t since_ms;            /* --since on an empty log, -1 without */
    struct fr_ingest_gap gap;    /* the retention-gap check of this connection */

    struct ingest_counters n;
    uint64_t status_events;
    int64_t status_ms;
};

static volatile sig_atomic_t ingest_stop;

static void ingest_on_signal(int sig)
{
    (void)sig;
    ingest_stop = 1;
}

/* Fingerprint of one stored position: its payload and its SSE id. Zero is
 * reserved for an empty ring slot. */
static uint64_t ingest_fingerprint(const void *payload, size_t len, const void *id, size_t id_len)
{
    uint64_t hi = fr_crc32c(0x9e3779b9u, payload, len);
    uint64_t lo = fr_crc32c((uint32_t)len, id, id_len);
    uint64_t fp = hi << 32 | lo;
    return fp ? fp : 1;
}

/* Take one stored copy of fp that has not absorbed a re-delivery on this
 * connection yet: 1 when there was one. */
static int ingest_ring_take(struct ingest *in, uint64_t fp)
{
    for (unsigned i = 0; i < INGEST_RING; i++) {
        if (in->ring[i] == fp && in->ring_live[i]) {
            in->ring_live[i] = 0;
            return 1;
        }
    }
    return 0;
}

/* An event appended now cannot be a re-delivery on this same connection:
 * it becomes live at the next connect. */
static void ingest_ring_put(struct ingest *in, uint64_t fp)
{
    in->ring[in->ring_next] = fp;
    in->ring_live[in->ring_next] = 0;
    in->ring_next = (in->ring_next + 1) % INGEST_RING;
}

/* The stored position of a record's id joins the horizon. */
static void ingest_horizon_add(struct ingest *in, const void *id, size_t id_len)
{
    struct fr_ingest_pos pos;
    if (fr_ingest_pos_parse(id, id_len, &pos) == FR_OK) {
        fr_ingest_pos_merge(&in->horizon, &pos);
    }
}

static void ingest_gap_report(struct ingest *in, const struct fr_ingest_gap_report *r)
{
    char from[32], to[32];
    fr_time_format_ms(r->from_ms * 1000, from);
    fr_time_format_ms(r->to_ms * 1000, to);
    fr_warn("ingest",
            "retention gap: asked the source for events from %s, but the first it still has is "
            "at %s: events between %s and %s may be lost (%.1f s; Wikimedia keeps about 7 to "
            "31 days)",
            from, to, from, to, (double)(r->to_ms - r->from_ms) / 1000.0);
    in->n.gaps++;
    fr_stats_add(in->stats, FR_STATS_INGEST_GAPS, 0, 1);
    fr_stats_set(in->stats, FR_STATS_INGEST_GAP_FROM, 0, (double)r->from_ms / 1000.0);
    fr_stats_set(in->stats, FR_STATS_INGEST_GAP_TO, 0, (double)r->to_ms / 1000.0);
}

/* Rebuild the ring from the last durable records of every partition. */
static int ingest_ring_load(struct ingest *in)
{
    for (int32_t p = 0; p < fr_log_partitions(in->log); p++) {
        int64_t end = fr_log_durable_end(in->log, p);
        if (end <= 0) {
            continue;
        }
        struct fr_log_reader *reader = NULL;
        int64_t from = end > INGEST_RING ? end - INGEST_RING : 0;
        int rc = fr_log_reader_open(in->conf->general_data_dir, INGEST_TOPIC, p, from, in->lopts,
                                    &reader);
        if (rc == FR_ERANGE) {
            rc = fr_log_reader_open(in->conf->general_data_dir, INGEST_TOPIC, p,
                                    FR_LOG_OFFSET_EARLIEST, in->lopts, &reader);
        }
        if (rc < 0) {
            return rc;
        }
        struct fr_log_rec rec;
        while ((rc = fr_log_reader_next(reader, &rec, 0)) == 1 && rec.offset < end) {
            const void *id;
            size_t id_len;
            if (fr_log_rec_header(&rec, "sse_id", &id, &id_len) == 1) {
                ingest_ring_put(in, ingest_fingerprint(rec.payload, rec.payload_len, id, id_len));
                ingest_horizon_add(in, id, id_len);
            }
        }
        fr_log_reader_close(reader);
        if (rc < 0) {
            return rc;
        }
    }
    return FR_OK;
}

/* fr_log_maybe_flush, timing the group commits it performs. Under lock. */
static int ingest_maybe_flush(struct ingest *in, int64_t now_ms)
{
    int64_t t0 = fr_mono_ns();
    int rc = fr_log_maybe_flush(in->log, now_ms);
    if (rc == 1) {
        fr_stats_observe(in->stats, FR_STATS_INGEST_FSYNC, (double)(fr_mono_ns() - t0) / 1e9);
    }
    return rc;
}

/* Add what the SSE client counted since the last call to the stats (which
 * continue across restarts) and publish them. Under lock. */
static void ingest_publish(struct ingest *in)
{
    if (in->client) {
        struct fr_sse_client_stats s;
        fr_sse_client_stats(in->client, &s);
        fr_stats_add(in->stats, FR_STATS_INGEST_RECONNECTS, 0,
                     s.reconnects - in->published.reconnects);
        fr_stats_add(in->stats, FR_STATS_INGEST_STALLS, 0, s.stalls - in->published.stalls);
        fr_stats_add(in->stats, FR_STATS_INGEST_OVERSIZE, 0, s.oversize - in->published.oversize);
        in->published = s;
    }
    fr_stats_publish(in->stats);
}

static const char *ingest_resume_id(void *arg)
{
    struct ingest *in = arg;
    struct fr_ingest_gap_report gap;
    if (fr_ingest_gap_end(&in->gap, &gap)) { /* the previous connection's check */
        ingest_gap_report(in, &gap);
    }
    in->events_since_connect = 0;
    fr_buf_reset(&in->resume);
    if (in->last_id.len == 0) {
        /* Not a resume: nothing is skipped as overlap. With --since the URL
         * carries ?since= (until the first event is appended). */
        in->overlap_open = 0;
        if (in->since_ms >= 0) {
            fr_ingest_gap_since(&in->gap, in->since_ms, in->conf->ingest_gap_tolerance_ms);
        } else {
            fr_ingest_gap_none(&in->gap);
        }
        return NULL;
    }
    int rc = fr_ingest_resume_id((const char *)in->last_id.data, in->last_id.len,
                                 in->conf->ingest_resume_rewind_ms, &in->resume);
    if (rc < 0) {
        /* Not a Wikimedia-style id: send it back verbatim (plain SSE semantics). */
        fr_buf_reset(&in->resume);
        fr_buf_append(&in->resume, in->last_id.data, in->last_id.len);
    }
    /* A resume: the stored events may be re-delivered, each stored copy
     * at most once, up to the newest stored position. */
    in->overlap_open = 1;
    for (unsigned i = 0; i < INGEST_RING; i++) {
        in->ring_live[i] = in->ring[i] != 0;
    }
    ingest_horizon_add(in, in->last_id.data, in->last_id.len);
    fr_ingest_gap_resume(&in->gap, (const char *)in->resume.data, in->resume.len,
                         in->conf->ingest_gap_tolerance_ms);
    return fr_buf_cstr(&in->resume);
}

static void ingest_on_bad_resume(void *arg, const char *rejected)
{
    struct ingest *in = arg;
    /* Without a position the server starts at "now": a hole. Refuse that
     * silently; the operator must decide (e.g. the id is past retention). */
    fr_error("ingest", "the source rejected our resume position %s; stopping so that no gap "
                       "is created silently (clear the log or fix the source)",
             rejected);
    in->log_error = FR_EPROTO;
    fr_sse_client_stop(in->client);
}

static void ingest_on_reconnect(void *arg, enum fr_sse_end why, long status, int64_t delay_ms)
{
    (void)arg;
    static const char *whys[] = {"server closed the stream", "stall timeout", "network error",
                                 "HTTP error", "error event", "not an event stream"};
    fr_debug("ingest", "connection ended (%s%s%ld); reconnecting in %lld ms",
            why <= FR_SSE_END_PROTO ? whys[why] : "?", status ? ", status " : "",
            status ? status : 0L, (long long)delay_ms);
}

static int ingest_on_event(void *arg, const struct fr_sse_event *ev)
{
    struct ingest *in = arg;
    if (ingest_stop) {
        fr_sse_client_stop(in->client);
    }
    if (strcmp(ev->type, "message") != 0) {
        if (strcmp(ev->type, "error") == 0) {
            fr_warn("ingest", "source sent an error event: %.*s", (int)(ev->data_len < 300 ? ev->data_len : 300),
                    ev->data);
        }
        in->n.ignored++;
        return FR_OK;
    }
    fr_stats_add(in->stats, FR_STATS_INGEST_EVENTS, 0, 1);
    struct fr_ingest_gap_report gap;
    if (in->gap.active && fr_ingest_gap_event(&in->gap, ev->id, ev->id_len, &gap)) {
        ingest_gap_report(in, &gap);
    }
    struct fr_ingest_meta meta;
    fr_ingest_extract(ev->data, ev->data_len, &meta);
    if (meta.canary) {
        in->n.canaries++;
        fr_stats_add(in->stats, FR_STATS_INGEST_CANARIES, 0, 1);
        return FR_OK;
    }
    uint64_t fp = ingest_fingerprint(ev->data, ev->data_len, ev->id, ev->id_len);
    if (in->overlap_open) {
        struct fr_ingest_pos pos;
        if (in->events_since_connect++ >= INGEST_RING ||
            (fr_ingest_pos_parse(ev->id, ev->id_len, &pos) == FR_OK &&
             fr_ingest_pos_beyond(&pos, &in->horizon))) {
            in->overlap_open = 0; /* past the resume position: no more overlap */
        }
    }
    if (in->overlap_open && ingest_ring_take(in, fp)) {
        in->n.overlap++;
        fr_stats_add(in->stats, FR_STATS_INGEST_OVERLAP, 0, 1);
        return FR_OK;
    }

    struct fr_log_header hdr = {
        .name = "sse_id", .name_len = 6, .value = ev->id, .value_len = ev->id_len};
    struct fr_log_rec rec = {
        .timestamp = meta.event_ms >= 0 ? meta.event_ms : fr_wall_ms(),
        .key = meta.key,
        .key_len = meta.key_len,
        .headers = &hdr,
        .header_count = 1,
        .payload = ev->data,
        .payload_len = ev->data_len,
    };
    pthread_mutex_lock(&in->lock);
    int rc = in->log_error;
    if (rc == FR_OK) {
        /* One page's events go to one partition, so they stay in order. */
        int32_t partition = fr_ingest_partition(in->conf, &meta);
        int64_t offset;
        rc = fr_log_append(in->log, partition, &rec, &offset);
        if (rc == FR_OK) {
            rc = ingest_maybe_flush(in, fr_mono_ms());
        }
        if (rc < 0) {
            in->log_error = rc;
        }
    }
    pthread_mutex_unlock(&in->lock);
    if (rc < 0) {
        fr_error("ingest", "log append failed: %s (%s); stopping", fr_strerror(rc),
                 fr_err_name(rc));
        return rc;
    }
    in->n.events++;
    fr_stats_add(in->stats, FR_STATS_INGEST_LOG_RECORDS, 0, 1);
    fr_stats_add(in->stats, FR_STATS_INGEST_LOG_BYTES, 0,
                 ev->data_len + meta.key_len + ev->id_len);
    if (meta.event_ms >= 0) {
        fr_stats_set(in->stats, FR_STATS_INGEST_LAST_EVENT, 0, (double)meta.event_ms / 1000.0);
    }
    fr_stats_set(in->stats, FR_STATS_INGEST_LAST_APPEND, 0, (double)fr_wall_ms() / 1000.0);
    ingest_ring_put(in, fp);
    fr_buf_reset(&in->last_id);
    fr_buf_append(&in->last_id, ev->id, ev->id_len);
    return FR_OK;
}

static void ingest_status(struct ingest *in, int64_t now)
{
    struct fr_sse_client_stats s;
    fr_sse_client_stats(in->client, &s);
    double secs = (double)(now - in->status_ms) / 1000.0;
    uint64_t events = in->n.events;
    double rate = secs > 0 ? (double)(events - in->status_events) / secs : 0;
    int64_t end = 0;
    for (int32_t p = 0; p < fr_log_partitions(in->log); p++) {
        end += fr_log_durable_end(in->log, p);
    }
    fr_info("ingest",
            "%llu events (%.1f/s), %llu canaries dropped, %llu re-delivered (overlap) skipped, "
            "%llu retention gaps, %llu reconnects, %llu stalls, %llu oversize, records durable "
            "in the log %lld",
            (unsigned long long)events, rate, (unsigned long long)in->n.canaries,
            (unsigned long long)in->n.overlap, (unsigned long long)in->n.gaps,
            (unsigned long long)s.reconnects,
            (unsigned long long)s.stalls, (unsigned long long)s.oversize, (long long)end);
    in->status_events = events;
    in->status_ms = now;
}

static void *ingest_flusher(void *arg)
{
    struct ingest *in = arg;
    int64_t interval = in->conf->log_fsync_interval_ms > 0 ? in->conf->log_fsync_interval_ms : 10;
    int64_t next_status = fr_mono_ms() + in->conf->ingest_status_interval_s * 1000;
    while (!ingest_stop) {
        fr_sleep_ms(interval);
        int64_t now = fr_mono_ms();
        pthread_mutex_lock(&in->lock);
        if (in->log_error == FR_OK) {
            int rc = ingest_maybe_flush(in, now);
            if (rc < 0) {
                in->log_error = rc;
                fr_error("ingest", "log flush failed: %s (%s); stopping", fr_strerror(rc),
                         fr_err_name(rc));
                fr_sse_client_stop(in->client);
            }
        }
        ingest_publish(in);
        if (now >= next_status) {
            ingest_status(in, now);
            next_status = now + in->conf->ingest_status_interval_s * 1000;
        }
        pthread_mutex_unlock(&in->lock);
    }
    fr_sse_client_stop(in->client);
    return NULL;
}

/* --since: only on an empty log (the log's own position wins); the URL
 * gets ?since=MS, which the source ignores once a Last-Event-ID is sent
 * (PROTOCOL.md §5). Returns 0, or the exit status to stop with. */
static int ingest_since_begin(struct ingest *in, const char *source, const char *arg,
                              int64_t since_ms, char *url, size_t urllen)
{
    int64_t records = 0;
    for (int32_t p = 0; p < fr_log_partitions(in->log); p++) {
        records += fr_log_durable_end(in->log, p);
    }
    if (records > 0 || in->last_id.len) {
        fr_error("ingest",
                 "--since %s refused: the log in %s already holds records (%lld offsets in "
                 "topic %s); ingest resumes from the log's own position. Run without --since, "
                 "or use a new --data directory to start from history",
                 arg, in->conf->general_data_dir, (long long)records, INGEST_TOPIC);
        return 2;
    }
    int n = snprintf(url, urllen, "%s%csince=%lld", source, strchr(source, '?') ? '&' : '?',
                     (long long)since_ms);
    if (n < 0 || (size_t)n >= urllen) {
        fr_error("ingest", "source URL too long");
        return 2;
    }
    in->since_ms = since_ms;
    char when[32];
    fr_time_format_ms(since_ms * 1000, when);
    fr_info("ingest", "empty log: asking the source for its history since %s (?since=%lld)", when,
            (long long)since_ms);
    return 0;
}

static void ingest_usage(FILE *out)
{
    fprintf(out,
            "usage: freshet ingest [--source URL] [--since TIME]\n"
            "       freshet ingest --file PATH... (recorded NDJSON; freshet ingest --file x --help)\n\n"
            "Read the SSE stream at URL (default ingest.source_url: the live Wikimedia\n"
            "recentchange stream) into the log topic `recentchange`. Each record keeps the\n"
            "event's SSE id in its `sse_id` header; on start, ingest resumes from the last\n"
            "durable record's id (moved back by ingest.resume_rewind_ms). Canary events\n"
            "(meta.domain == \"canary\") are dropped and counted. SIGTERM or SIGINT: flush and\n"
            "exit 0.\n\n"
            "  --since TIME  on an empty log only: ask the source for its history from TIME\n"
            "                (?since=): Unix ms, ISO-8601 (2026-12-01T00:00:00Z), or a\n"
            "                duration back from now (24h, 90m, 7d). Refused on a log that\n"
            "                holds records: the log's own position wins. A source whose\n"
            "                history starts later than asked is reported as a retention gap.\n");
}

int fr_cmd_ingest(struct fr_conf *conf, int argc, char **argv)
{
    if (fr_ingest_file_wanted(argc, argv)) { /* recorded files: file.c */
        return fr_cmd_ingest_file(conf, argc, argv);
    }
    static const struct option opts[] = {{"source", required_argument, 0, 's'},
                                         {"since", required_argument, 0, 'S'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *source = conf->ingest_source_url;
    const char *since_arg = NULL;
    int64_t since_ms = -1;
    char since_url[4096];
    int c;
    while ((c = getopt_long(argc, argv, "s:h", opts, NULL)) != -1) {
        switch (c) {
        case 's': source = optarg; break;
        case 'S':
            since_arg = optarg;
            if (fr_ingest_since_parse(optarg, fr_wall_ms(), &since_ms) < 0 || since_ms < 0) {
                fprintf(stderr, "freshet ingest: --since \"%s\": expected Unix ms, an ISO-8601 "
                                "date-time, or a duration such as 24h\n", optarg);
                return 2;
            }
            break;
        case 'h': ingest_usage(stdout); return 0;
        default: ingest_usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "freshet ingest: unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }

    struct ingest in;
    memset(&in, 0, sizeof in);
    in.conf = conf;
    in.since_ms = -1;
    fr_ingest_gap_none(&in.gap);
    pthread_mutex_init(&in.lock, NULL);
    fr_buf_init(&in.resume, 64 * 1024);
    fr_buf_init(&in.last_id, 64 * 1024);
    int status = 1;
    int rc;
    pthread_t flusher;
    int flusher_started = 0;
    struct fr_kafka *kafka = NULL;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = ingest_on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    struct fr_log_opts lopts;
    fr_ingest_log_opts(conf, conf->log_fsync_interval_ms, conf->log_fsync_bytes, &lopts);
    rc = fr_kafka_backend_from_conf(conf, &lopts, &kafka);
    if (rc < 0) {
        goto cleanup;
    }
    in.lopts = &lopts;
    rc = fr_log_open(conf->general_data_dir, INGEST_TOPIC, &lopts, &in.log);
    if (rc < 0) {
        fr_error("ingest", "cannot open the log in %s: %s (%s)", conf->general_data_dir,
                 fr_strerror(rc), fr_err_name(rc));
        goto cleanup;
    }
    fr_stats_open(conf->general_data_dir, FR_STATS_INGEST, &in.stats);
    /* Resume from the oldest of the partitions' last durable records (see
     * the top of the file). */
    int64_t oldest = -1;
    for (int32_t p = 0; p < fr_log_partitions(in.log); p++) {
        struct fr_log_rec last;
        rc = fr_log_last(in.log, p, &last);
        if (rc < 0) {
            fr_error("ingest", "cannot read the log tail of partition %d: %s", (int)p,
                     fr_strerror(rc));
            goto cleanup;
        }
        const void *id;
        size_t id_len;
        if (rc == 1 && (oldest < 0 || last.append_time < oldest) &&
            fr_log_rec_header(&last, "sse_id", &id, &id_len) == 1) {
            fr_buf_reset(&in.last_id);
            fr_buf_append(&in.last_id, id, id_len);
            oldest = last.append_time;
        }
    }
    rc = ingest_ring_load(&in);
    if (rc < 0) {
        fr_error("ingest", "cannot read the log tail: %s (%s)", fr_strerror(rc), fr_err_name(rc));
        goto cleanup;
    }
    if (since_arg) {
        rc = ingest_since_begin(&in, source, since_arg, since_ms, since_url, sizeof since_url);
        if (rc != 0) {
            status = rc;
            goto cleanup;
        }
        source = since_url;
    } else if (in.last_id.len) {
        fr_info("ingest", "resuming after %.*s", (int)in.last_id.len, (const char *)in.last_id.data);
    } else {
        fr_info("ingest", "empty log: starting at the source's current position");
    }

    struct fr_sse_client_opts sopts = {
        .url = source,
        .user_agent = conf->ingest_user_agent,
        .on_event = ingest_on_event,
        .arg = &in,
        .resume_id = ingest_resume_id,
        .on_bad_resume = ingest_on_bad_resume,
        .on_reconnect = ingest_on_reconnect,
        .min_backoff_ms = conf->ingest_backoff_min_ms,
        .max_backoff_ms = conf->ingest_backoff_max_ms,
        .stall_timeout_ms = conf->ingest_stall_timeout_s * 1000,
        .max_event_bytes = (size_t)conf->ingest_max_event_bytes,
        .stop = &ingest_stop,
    };
    rc = fr_sse_client_create(&sopts, &in.client);
    if (rc < 0) {
        fr_error("ingest", "bad source %s: %s", source, fr_strerror(rc));
        goto cleanup;
    }
    in.status_ms = fr_mono_ms();
    if (pthread_create(&flusher, NULL, ingest_flusher, &in) != 0) {
        fr_error("ingest", "cannot start the flusher thread");
        goto cleanup;
    }
    flusher_started = 1;
    fr_info("ingest", "reading %s into topic %s", source, INGEST_TOPIC);
    rc = fr_sse_client_run(in.client);
    struct fr_ingest_gap_report gap;
    if (fr_ingest_gap_end(&in.gap, &gap)) { /* the last connection's check */
        ingest_gap_report(&in, &gap);
    }
    ingest_stop = 1;
    pthread_join(flusher, NULL);
    flusher_started = 0;

    pthread_mutex_lock(&in.lock);
    int64_t flush_t0 = fr_mono_ns();
    int frc = in.log_error == FR_OK ? fr_log_flush(in.log) : in.log_error;
    if (frc == FR_OK) {
        fr_stats_observe(in.stats, FR_STATS_INGEST_FSYNC, (double)(fr_mono_ns() - flush_t0) / 1e9);
    }
    pthread_mutex_unlock(&in.lock);
    ingest_status(&in, fr_mono_ms());
    if (rc < 0 || frc < 0 || in.log_error < 0) {
        int err = rc < 0 ? rc : frc < 0 ? frc : in.log_error;
        fr_error("ingest", "stopped: %s (%s)", fr_strerror(err), fr_err_name(err));
        goto cleanup;
    }
    status = 0;

cleanup:
    if (flusher_started) {
        ingest_stop = 1;
        pthread_join(flusher, NULL);
    }
    ingest_publish(&in);
    fr_sse_client_destroy(in.client);
    fr_stats_close(in.stats);
    fr_log_close(in.log);
    fr_kafka_free(kafka);
    fr_buf_free(&in.resume);
    fr_buf_free(&in.last_id);
    pthread_mutex_destroy(&in.lock);
    return status;
}
