/*
 * stream.c — the stream: a source (generator or recorded files) plus the
 * fault plan, addressed by position; Kafka timestamps and offsetsForTimes;
 * the wire format (ids, SSE frames) and the resume inputs (Last-Event-ID,
 * ?since=) parsed the way EventStreams/KafkaSSE parse them.
 *
 * Invariants:
 *   1. The bytes of position p depend only on (source, opts, p).
 *   2. ts(p) <= ts(p+1) for every p (Kafka timestamps are monotone).
 *   3. seek(T) is the least p with ts(p) >= T, or count when none.
 *   4. A duplicate at p has exactly the bytes of its source q < p.
 *
 * A stream is immutable after open; each thread reads through its own
 * cursor (timestamp chunk cache and scratch buffer).
 */
#include "feed/feed_int.h"

#include "core/clock.h"
#include "core/err.h"
#include "core/json.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STREAM_DEFAULT_OFFSET_BASE INT64_C(6320664795) /* the sample's first offset */
#define STREAM_SCRATCH_CAP ((size_t)80 << 20)

void fr_feed_opts_init(struct fr_feed_opts *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->seed = 1;
    opts->count = FR_FEED_UNBOUNDED;
    opts->start_ms = fr_wall_ms();
    opts->event_rate = 0; /* follow --rate, or the real stream's 38/s */
    opts->canary_rate = 0.0001;
    opts->offset_base = -1;
    opts->dup_window = 1000;
    opts->malformed_kinds = ((1u << FR_FEED_MAL_COUNT) - 1) & ~1u;
    opts->oversize_bytes = (1 << 20) + (64 << 10);
    opts->late_ms = 300000;
    opts->ooo_ms = 5000;
    opts->future_ms = 3600000;
    opts->stall_ms = 1000;
    opts->max_conns = 64;
    opts->history_from_ms = INT64_MIN;
}

static int stream_check(const struct fr_feed_opts *o, char *err, size_t errlen)
{
#define BAD(...)                                                                                   \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return FR_ECONFIG;                                                                         \
    } while (0)
    if (!!o->synthetic == !!o->nfiles) {
        BAD("give exactly one source: --synthetic or --file");
    }
    const double rates[] = {o->dup_rate, o->malformed_rate, o->late_rate,
                            o->ooo_rate, o->future_rate,    o->canary_rate};
    const char *names[] = {"--dup-rate", "--malformed-rate", "--late-rate",
                           "--ooo-rate", "--future-rate",    "--canary-rate"};
    double sum = 0;
    for (int i = 0; i < 6; i++) {
        if (!(rates[i] >= 0 && rates[i] <= 1)) {
            BAD("%s must be within [0, 1]", names[i]);
        }
        sum += i < 5 ? rates[i] : 0;
    }
    if (sum > 1 + 1e-9) {
        BAD("the fault rates add up to more than 1");
    }
    if (o->count < 1) {
        BAD("--count must be at least 1");
    }
    const double api_rates[] = {o->api_error_rate, o->api_429_rate, o->api_maxlag_rate};
    if (!(api_rates[0] >= 0 && api_rates[1] >= 0 && api_rates[2] >= 0 &&
          api_rates[0] + api_rates[1] + api_rates[2] <= 1 + 1e-9)) {
        BAD("--api-error-rate, --api-429-rate and --api-maxlag must be >= 0 and add up to at "
            "most 1");
    }
    if (o->api_latency_ms < 0 || o->api_latency_ms > 600000) {
        BAD("--api-latency-ms must be within [0, 600000]");
    }
    if (!(o->api_rate_limit >= 0 && o->api_rate_limit <= 1e6)) {
        BAD("--api-rate-limit must be within [0, 1000000]");
    }
    if (!(o->rate >= 0 && o->rate <= 1e6)) {
        BAD("--rate must be within [0, 1000000]");
    }
    if (!(o->event_rate >= 0 && o->event_rate <= 1e6)) {
        BAD("--event-rate must be within [0, 1000000]");
    }
    if (o->dup_window < 1) {
        BAD("--dup-window must be at least 1");
    }
    if (o->late_ms < 1 || o->ooo_ms < 1 || o->future_ms < 1) {
        BAD("--late-ms, --ooo-ms and --future-ms must be at least 1");
    }
    if (o->oversize_bytes < 1024 || o->oversize_bytes > ((int64_t)64 << 20)) {
        BAD("--oversize-bytes must be within [1024, 67108864]");
    }
    if (o->disconnect_every < 0 || o->stall_every < 0 || o->stall_ms < 0 || o->overlap < 0) {
        BAD("connection fault counts must not be negative");
    }
    if (o->max_conns < 1 || o->max_conns > 10000) {
        BAD("--max-conns must be within [1, 10000]");
    }
    if ((o->malformed_kinds & ~(((1u << FR_FEED_MAL_COUNT) - 1) & ~1u)) || !o->malformed_kinds) {
        BAD("bad malformed kind set");
    }
    return FR_OK;
#undef BAD
}

int fr_feed_stream_open(const struct fr_feed_opts *opts, struct fr_feed_stream **out, char *err,
                        size_t errlen)
{
    *out = NULL;
    int rc = stream_check(opts, err, errlen);
    if (rc < 0) {
        return rc;
    }
    struct fr_feed_stream *stream = calloc(1, sizeof *stream);
    if (!stream) {
        snprintf(err, errlen, "out of memory");
        return FR_ENOMEM;
    }
    stream->opts = *opts;
    stream->synthetic = opts->synthetic;
    double acc = 0;
    const double rates[] = {opts->malformed_rate, opts->dup_rate, opts->late_rate, opts->ooo_rate,
                            opts->future_rate};
    for (int i = 0; i < 5; i++) {
        acc += rates[i];
        stream->cut[i] = acc;
    }
    for (int k = 1; k < FR_FEED_MAL_COUNT; k++) {
        if (opts->malformed_kinds & (1u << k)) {
            stream->mal_kinds[stream->nmal_kinds++] = (enum fr_feed_malformed)k;
        }
    }
    if (opts->synthetic) {
        if (stream->opts.offset_base < 0) {
            stream->opts.offset_base = STREAM_DEFAULT_OFFSET_BASE;
        }
        double event_rate = opts->event_rate > 0 ? opts->event_rate
                            : opts->rate > 0     ? opts->rate
                                                 : FR_FEED_REAL_RATE;
        fr_feed_gen_init(&stream->gen, opts->seed, opts->start_ms, event_rate, opts->canary_rate,
                         stream->opts.offset_base);
        stream->count = opts->count;
    } else {
        if (stream->opts.offset_base < 0) {
            stream->opts.offset_base = 0;
        }
        rc = fr_feed_files_load(&stream->files, opts->files, opts->nfiles, opts->count,
                                opts->start_ms, err, errlen);
        if (rc < 0) {
            free(stream);
            return rc;
        }
        stream->count = stream->files.n;
    }
    *out = stream;
    return FR_OK;
}

void fr_feed_stream_close(struct fr_feed_stream *stream)
{
    if (!stream) {
        return;
    }
    fr_feed_files_free(&stream->files);
    free(stream);
}

int64_t fr_feed_stream_count(const struct fr_feed_stream *stream)
{
    return stream->count;
}

const struct fr_feed_opts *fr_feed_stream_opts(const struct fr_feed_stream *stream)
{
    return &stream->opts;
}

int fr_feed_cursor_new(const struct fr_feed_stream *stream, struct fr_feed_cursor **out)
{
    struct fr_feed_cursor *cur = malloc(sizeof *cur);
    if (!cur) {
        return FR_ENOMEM;
    }
    cur->stream = stream;
    cur->chunk = -1;
    fr_buf_init(&cur->scratch, STREAM_SCRATCH_CAP);
    *out = cur;
    return FR_OK;
}

void fr_feed_cursor_free(struct fr_feed_cursor *cur)
{
    if (!cur) {
        return;
    }
    fr_buf_free(&cur->scratch);
    free(cur);
}

int fr_feed_source_is_canary(const struct fr_feed_stream *stream, int64_t pos)
{
    return stream->synthetic ? fr_feed_gen_is_canary(&stream->gen, pos)
                             : stream->files.recs[pos].canary;
}

/* ---- timestamps ------------------------------------------------------ */

int64_t fr_feed_stream_ts(struct fr_feed_cursor *cur, int64_t pos)
{
    const struct fr_feed_stream *stream = cur->stream;
    if (!stream->synthetic) {
        return stream->files.recs[pos].ts_ms;
    }
    int64_t chunk = pos / FR_FEED_CHUNK;
    if (chunk != cur->chunk) {
        fr_feed_gen_chunk_ts(&stream->gen, chunk, cur->chunk_ts);
        cur->chunk = chunk;
    }
    return cur->chunk_ts[pos % FR_FEED_CHUNK];
}

int64_t fr_feed_stream_seek(struct fr_feed_cursor *cur, int64_t ts_ms)
{
    const struct fr_feed_stream *stream = cur->stream;
    int64_t lo, hi;
    if (stream->synthetic) {
        /* The answer is in chunk_of(ts) or is the first position after it. */
        int64_t chunk = fr_feed_gen_chunk_of(&stream->gen, ts_ms);
        if (chunk > (INT64_MAX - 1) / FR_FEED_CHUNK - 1) {
            return stream->count;
        }
        lo = chunk * FR_FEED_CHUNK;
        hi = lo + FR_FEED_CHUNK;
    } else {
        lo = 0;
        hi = stream->count;
    }
    if (hi > stream->count) {
        hi = stream->count;
    }
    if (lo >= hi) {
        return stream->count < lo ? stream->count : lo;
    }
    while (lo < hi) { /* least p in [lo, hi) with ts(p) >= ts_ms, else hi */
        int64_t mid = lo + (hi - lo) / 2;
        if (fr_feed_stream_ts(cur, mid) >= ts_ms) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return lo;
}

/* ---- positions ------------------------------------------------------- */

static int stream_source_render(struct fr_feed_cursor *cur, int64_t src, struct fr_buf *out)
{
    const struct fr_feed_stream *stream = cur->stream;
    if (stream->synthetic) {
        return fr_feed_gen_render(&stream->gen, src, fr_feed_stream_ts(cur, src), out);
    }
    const struct fr_feed_rec *rec = &stream->files.recs[src];
    return fr_buf_append(out, stream->files.text.data + rec->off, rec->len);
}

static void stream_source_id(const struct fr_feed_stream *stream, int64_t src,
                             struct fr_feed_info *info)
{
    if (stream->synthetic) {
        fr_feed_gen_meta_id(&stream->gen, src, info->meta_id);
        info->has_id = 1;
        return;
    }
    const struct fr_feed_rec *rec = &stream->files.recs[src];
    info->has_id = rec->id_len > 0;
    memcpy(info->meta_id, stream->files.text.data + rec->off + rec->id_off, rec->id_len);
    info->meta_id[rec->id_len] = 0;
}

static void stream_describe(struct fr_feed_cursor *cur, int64_t pos,
                            const struct fr_feed_plan *plan, struct fr_feed_info *info)
{
    const struct fr_feed_stream *stream = cur->stream;
    memset(info, 0, sizeof *info);
    info->pos = pos;
    info->ts_ms = fr_feed_stream_ts(cur, pos);
    info->canary = fr_feed_source_is_canary(stream, pos);
    info->fault = plan->fault;
    info->malformed = plan->malformed;
    info->dup_of = plan->fault == FR_FEED_FAULT_DUP ? plan->arg : -1;
    info->shift_ms = plan->fault >= FR_FEED_FAULT_LATE ? plan->arg : 0;
    if (fr_feed_fault_keeps_id(plan)) {
        stream_source_id(stream, plan->fault == FR_FEED_FAULT_DUP ? plan->arg : pos, info);
    }
}

/* Render with the plan; *plan is reset to NONE when the edit did not apply. */
static int stream_render_plan(struct fr_feed_cursor *cur, int64_t pos, struct fr_feed_plan *plan,
                              struct fr_buf *payload)
{
    size_t start = payload->len;
    int64_t src = plan->fault == FR_FEED_FAULT_DUP ? plan->arg : pos;
    int rc = stream_source_render(cur, src, payload);
    if (rc < 0) {
        payload->len = start;
        return rc;
    }
    int applied = 1;
    rc = fr_feed_fault_apply(cur->stream, plan, fr_feed_stream_ts(cur, pos), payload, start,
                             &applied);
    if (rc < 0) {
        payload->len = start;
        return rc;
    }
    if (!applied) {
        memset(plan, 0, sizeof *plan);
    }
    return FR_OK;
}

int fr_feed_stream_render(struct fr_feed_cursor *cur, int64_t pos, struct fr_buf *payload,
                          struct fr_feed_info *info)
{
    struct fr_feed_plan plan;
    fr_feed_plan_at(cur->stream, pos, &plan);
    int rc = stream_render_plan(cur, pos, &plan, payload);
    if (rc == FR_OK && info) {
        stream_describe(cur, pos, &plan, info);
    }
    return rc;
}

int fr_feed_stream_info(struct fr_feed_cursor *cur, int64_t pos, struct fr_feed_info *info)
{
    struct fr_feed_plan plan;
    fr_feed_plan_at(cur->stream, pos, &plan);
    if (plan.fault != FR_FEED_FAULT_NONE && plan.fault != FR_FEED_FAULT_DUP) {
        /* Whether the edit applies depends on the event: render it. */
        fr_buf_reset(&cur->scratch);
        int rc = stream_render_plan(cur, pos, &plan, &cur->scratch);
        if (rc < 0) {
            return rc;
        }
    }
    stream_describe(cur, pos, &plan, info);
    return FR_OK;
}

int fr_feed_info_tags(const struct fr_feed_info *info, struct fr_buf *out)
{
    int rc = FR_OK;
    const char *sep = "";
    if (info->canary) {
        rc = fr_buf_puts(out, "\"canary\"");
        sep = ",";
    }
    switch (info->fault) {
    case FR_FEED_FAULT_MALFORMED:
        rc = rc ? rc
                : fr_buf_printf(out, "%s\"malformed:%s\"", sep,
                                fr_feed_malformed_name(info->malformed));
        break;
    case FR_FEED_FAULT_DUP:
        rc = rc ? rc : fr_buf_printf(out, "%s\"dup_of:%lld\"", sep, (long long)info->dup_of);
        break;
    case FR_FEED_FAULT_LATE:
        rc = rc ? rc : fr_buf_printf(out, "%s\"late:%lld\"", sep, (long long)info->shift_ms);
        break;
    case FR_FEED_FAULT_OOO:
        rc = rc ? rc : fr_buf_printf(out, "%s\"ooo:%lld\"", sep, (long long)info->shift_ms);
        break;
    case FR_FEED_FAULT_FUTURE:
        rc = rc ? rc : fr_buf_printf(out, "%s\"future:%lld\"", sep, (long long)info->shift_ms);
        break;
    default:
        break;
    }
    return rc;
}

/* ---- wire format -----------------------------------------------------
 *
 * Response body (SSE mode), every line ended by one LF:
 *
 *   bytes                                   meaning
 *   ":ok\n\n"                               prelude, once (5 bytes)
 *   "event: message\n"                      per position (15 bytes)
 *   "id: " ID "\n"                          ID below, compact JSON
 *   "data: " PAYLOAD "\n"                   the event JSON, never a raw LF
 *   "\n"                                    end of frame
 *
 *   ID = [{"topic":"eqiad.mediawiki.recentchange","partition":0,"timestamp":T+1},
 *         {"topic":"codfw.mediawiki.recentchange","partition":0,"offset":-1}]
 *   with T the position's Kafka timestamp in ms (KafkaSSE adds 1).
 *
 * NDJSON mode (Accept: application/json): "\n", then PAYLOAD "\n" per position.
 */
#define STREAM_PRELUDE ":ok\n\n"
#define STREAM_EVENT_LINE "event: message\n"
static_assert(sizeof STREAM_PRELUDE - 1 == 5, "SSE prelude is 5 bytes");
static_assert(sizeof STREAM_EVENT_LINE - 1 == 15, "SSE event line is 15 bytes");

const char *fr_feed_prelude(int ndjson)
{
    return ndjson ? "\n" : STREAM_PRELUDE;
}

int fr_feed_id_append(struct fr_buf *out, int64_t ts_ms)
{
    return fr_buf_printf(out,
                         "[{\"topic\":\"" FR_FEED_TOPIC "\",\"partition\":0,\"timestamp\":%lld},"
                         "{\"topic\":\"" FR_FEED_TOPIC_IDLE "\",\"partition\":0,\"offset\":-1}]",
                         (long long)ts_ms + 1);
}

int fr_feed_frame_append(struct fr_buf *out, int64_t ts_ms, const void *payload, size_t len)
{
    size_t start = out->len;
    int rc = fr_buf_puts(out, STREAM_EVENT_LINE "id: ");
    if (rc == FR_OK) {
        rc = fr_feed_id_append(out, ts_ms);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, "\ndata: ");
    }
    if (rc == FR_OK) {
        rc = fr_buf_append(out, payload, len);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, "\n\n");
    }
    if (rc < 0) {
        out->len = start;
    }
    return rc;
}

static int resume_bad(char *err, size_t errlen, const char *msg)
{
    snprintf(err, errlen, "%s", msg);
    return FR_EJSON;
}

/* One assignment; sets *ours when it names our topic. */
static int resume_item(const struct fr_json_val *v, struct fr_feed_resume *r, int *ours, char *err,
                       size_t errlen)
{
    struct fr_json_val topic, part, pos;
    *ours = 0;
    if (v->type == FR_JSON_STRING) {
        topic = *v;
    } else if (v->type == FR_JSON_OBJECT) {
        if (fr_json_member(v, "topic", &topic) != 1 || topic.type != FR_JSON_STRING) {
            return resume_bad(err, errlen, "assignment has no string topic");
        }
        int64_t n;
        if (fr_json_member(v, "partition", &part) != 1 || fr_json_int64(&part, &n) < 0) {
            return resume_bad(err, errlen, "assignment has no integer partition");
        }
        if (n != 0) {
            snprintf(err, errlen, "partition %lld is not available", (long long)n);
            return FR_ENOTFOUND;
        }
    } else {
        return resume_bad(err, errlen, "assignments must be topic strings or objects");
    }
    if (!fr_json_str_eq(&topic, FR_FEED_TOPIC) && !fr_json_str_eq(&topic, FR_FEED_TOPIC_IDLE)) {
        snprintf(err, errlen, "topic %.*s is not available in stream recentchange",
                 (int)(topic.end - topic.start > 200 ? 200 : topic.end - topic.start), topic.start);
        return FR_ENOTFOUND;
    }
    if (!fr_json_str_eq(&topic, FR_FEED_TOPIC)) {
        if (v->type == FR_JSON_OBJECT && fr_json_member(v, "offset", &pos) != 1 &&
            fr_json_member(v, "timestamp", &pos) != 1) {
            return resume_bad(err, errlen, "assignment needs an integer offset or timestamp");
        }
        return FR_OK;
    }
    *ours = 1;
    if (v->type == FR_JSON_STRING) {
        r->kind = FR_FEED_RESUME_DEFAULT;
        return FR_OK;
    }
    int64_t n;
    if (fr_json_member(v, "offset", &pos) == 1) { /* offset wins over timestamp */
        if (fr_json_int64(&pos, &n) < 0 || n < -2) {
            return resume_bad(err, errlen, "offset must be an integer >= -2");
        }
        r->kind = n == -1 ? FR_FEED_RESUME_LATEST : FR_FEED_RESUME_OFFSET;
        r->offset = n;
        return FR_OK;
    }
    if (fr_json_member(v, "timestamp", &pos) == 1) {
        if (fr_json_int64(&pos, &n) < 0) {
            return resume_bad(err, errlen, "timestamp must be an integer (ms)");
        }
        r->kind = FR_FEED_RESUME_TIMESTAMP;
        r->ts_ms = n;
        return FR_OK;
    }
    return resume_bad(err, errlen, "assignment needs an integer offset or timestamp");
}

int fr_feed_resume_parse(const char *hdr, size_t len, struct fr_feed_resume *resume, char *err,
                         size_t errlen)
{
    memset(resume, 0, sizeof *resume);
    resume->kind = FR_FEED_RESUME_NONE;
    const char *end = hdr + len;
    struct fr_json_val arr;
    const char *after = fr_json_value(hdr, end, &arr);
    if (!after || fr_json_ws(after, end) != end) {
        return resume_bad(err, errlen, "Last-Event-ID is not valid JSON");
    }
    if (arr.type != FR_JSON_ARRAY) {
        return resume_bad(err, errlen, "Last-Event-ID must be a JSON array of assignments");
    }
    const char *p = fr_json_ws(arr.start + 1, arr.end);
    if (*p == ']') {
        return resume_bad(err, errlen, "Last-Event-ID must not be an empty array");
    }
    int seen = 0;
    for (;;) {
        struct fr_json_val v;
        p = fr_json_value(p, arr.end, &v);
        if (!p) {
            return resume_bad(err, errlen, "Last-Event-ID is not valid JSON");
        }
        struct fr_feed_resume item = {FR_FEED_RESUME_NONE, 0, 0};
        int ours;
        int rc = resume_item(&v, &item, &ours, err, errlen);
        if (rc < 0) {
            return rc;
        }
        if (ours && !seen) {
            *resume = item;
            seen = 1;
        }
        p = fr_json_ws(p, arr.end);
        if (*p == ',') {
            p = fr_json_ws(p + 1, arr.end);
            continue;
        }
        break;
    }
    return FR_OK;
}

int fr_feed_since_parse(const char *s, int64_t *ms)
{
    size_t len = strlen(s);
    if (len == 0 || len > 64) {
        return FR_EINVAL;
    }
    size_t i = s[0] == '-' ? 1 : 0;
    int digits = i < len;
    for (size_t k = i; k < len; k++) {
        digits &= s[k] >= '0' && s[k] <= '9';
    }
    if (digits && len - i <= 18) {
        *ms = strtoll(s, NULL, 10);
        return FR_OK;
    }
    return fr_time_parse_date_ms(s, ms);
}
