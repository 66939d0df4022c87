/*
 * test_feed.c — unit tests for src/feed without a network: the generator
 * (determinism, position independence, type mix, schema and types of every
 * event, UTF-8, canary rate), Kafka timestamps and offsetsForTimes resume
 * semantics (shared milliseconds, id timestamp + 1), the fault plan and its
 * byte edits, recorded files, the wire format, Last-Event-ID and ?since=
 * parsing, --listen parsing and the truth file.
 */
#include "check.h"

#include "core/clock.h"
#include "core/err.h"
#include "core/fsutil.h"
#include "core/json.h"
#include "core/utf8.h"
#include "feed/feed.h"
#include "feed/feed_int.h"

#include <math.h>

#define START_MS INT64_C(1783699525864) /* 2026-07-10T16:05:25.864Z */

static struct fr_feed_stream *open_synthetic(struct fr_feed_opts *o)
{
    struct fr_feed_stream *stream = NULL;
    char err[256];
    int rc = fr_feed_stream_open(o, &stream, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "open: %s\n", err);
    }
    CHECK_EQ_INT(rc, FR_OK);
    return stream;
}

static void synth_opts(struct fr_feed_opts *o, uint64_t seed, int64_t count)
{
    fr_feed_opts_init(o);
    o->synthetic = 1;
    o->seed = seed;
    o->count = count;
    o->start_ms = START_MS;
}

static int member(const struct fr_json_val *obj, const char *key, enum fr_json_type type,
                  struct fr_json_val *out)
{
    struct fr_json_val v;
    if (fr_json_member(obj, key, &v) != 1) {
        return 0;
    }
    if (out) {
        *out = v;
    }
    return v.type == type || (type == FR_JSON_TRUE && v.type == FR_JSON_FALSE);
}

static int is_uuid(const struct fr_json_val *v)
{
    if (v->type != FR_JSON_STRING || v->end - v->start != 36) {
        return 0;
    }
    for (int i = 0; i < 36; i++) {
        char c = v->start[i];
        if (i == 8 || i == 13 || i == 18 || i == 23
                ? c != '-'
                : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return 0;
        }
    }
    return v->start[14] == '4';
}

/* The data-quality gate's rules for a valid event (DESIGN.md), plus the
 * per-type field set of PROTOCOL.md §10.3. Returns 1 valid, 2 canary. */
static int check_event(const char *s, size_t n, int *type_out)
{
    struct fr_json_val ev, meta, v, t;
    if (fr_json_validate(s, s + n) < 0 || !fr_json_value(s, s + n, &ev) ||
        ev.type != FR_JSON_OBJECT) {
        return 0;
    }
    if (!member(&ev, "meta", FR_JSON_OBJECT, &meta) || !member(&meta, "id", FR_JSON_STRING, &v) ||
        !is_uuid(&v)) {
        return 0;
    }
    int64_t us;
    if (!member(&meta, "dt", FR_JSON_STRING, &v) ||
        fr_time_parse_rfc3339(v.start, (size_t)(v.end - v.start), &us) < 0) {
        return 0;
    }
    if (!member(&meta, "offset", FR_JSON_NUMBER, NULL) ||
        !member(&meta, "stream", FR_JSON_STRING, NULL)) {
        return 0;
    }
    if (member(&meta, "domain", FR_JSON_STRING, &v) && fr_json_str_eq(&v, "canary")) {
        *type_out = -1;
        return member(&ev, "$schema", FR_JSON_STRING, &v) &&
                       fr_json_str_eq(&v, "/mediawiki/recentchange/1.0.1") &&
                       !member(&ev, "type", FR_JSON_STRING, NULL)
                   ? 2
                   : 0;
    }
    if (!member(&ev, "wiki", FR_JSON_STRING, &v) || v.end == v.start ||
        !member(&ev, "type", FR_JSON_STRING, &t)) {
        return 0;
    }
    static const char *const types[] = {"edit", "categorize", "log", "new"};
    int type = -1;
    for (int i = 0; i < 4; i++) {
        type = fr_json_str_eq(&t, types[i]) ? i : type;
    }
    *type_out = type;
    if (type < 0 || !member(&ev, "namespace", FR_JSON_NUMBER, NULL) ||
        !member(&ev, "bot", FR_JSON_TRUE, NULL) || !member(&ev, "title", FR_JSON_STRING, NULL) ||
        !member(&ev, "comment", FR_JSON_STRING, NULL) ||
        !member(&ev, "parsedcomment", FR_JSON_STRING, NULL) ||
        !member(&ev, "timestamp", FR_JSON_NUMBER, NULL) ||
        !member(&ev, "server_name", FR_JSON_STRING, NULL) ||
        !member(&ev, "title_url", FR_JSON_STRING, NULL)) {
        return 0;
    }
    if (fr_json_member(&ev, "user", &v) == 1 && v.type != FR_JSON_STRING) {
        return 0;
    }
    struct fr_json_val len, rev;
    int has_len = member(&ev, "length", FR_JSON_OBJECT, &len),
        has_rev = member(&ev, "revision", FR_JSON_OBJECT, &rev);
    if (type == 0 || type == 3) {
        if (!has_len || !has_rev || !member(&len, "new", FR_JSON_NUMBER, NULL) ||
            !member(&ev, "minor", FR_JSON_TRUE, NULL)) {
            return 0;
        }
        /* `old` present for edits, omitted for new pages */
        if (member(&len, "old", FR_JSON_NUMBER, NULL) != (type == 0) ||
            member(&rev, "old", FR_JSON_NUMBER, NULL) != (type == 0)) {
            return 0;
        }
    } else if (has_len || has_rev || fr_json_member(&ev, "minor", &v) == 1) {
        return 0;
    }
    if (type == 2) {
        if (!member(&ev, "log_id", FR_JSON_NUMBER, NULL) ||
            !member(&ev, "log_type", FR_JSON_STRING, NULL) ||
            fr_json_member(&ev, "log_params", &v) != 1 ||
            (v.type != FR_JSON_OBJECT && v.type != FR_JSON_ARRAY)) {
            return 0;
        }
    }
    return 1;
}

/* ---- generator -------------------------------------------------------- */

static void test_gen_deterministic(void)
{
    struct fr_feed_opts o;
    synth_opts(&o, 42, 3000);
    struct fr_feed_stream *a = open_synthetic(&o), *b = open_synthetic(&o);
    o.seed = 43;
    struct fr_feed_stream *c = open_synthetic(&o);
    struct fr_feed_cursor *ca, *cb, *cc;
    fr_feed_cursor_new(a, &ca);
    fr_feed_cursor_new(b, &cb);
    fr_feed_cursor_new(c, &cc);
    struct fr_buf x, y, z;
    fr_buf_init(&x, 1 << 20);
    fr_buf_init(&y, 1 << 20);
    fr_buf_init(&z, 1 << 20);
    int same_as_other_seed = 0;
    for (int64_t pos = 0; pos < 3000; pos++) {
        fr_buf_reset(&x);
        fr_buf_reset(&y);
        fr_buf_reset(&z);
        CHECK_EQ_INT(fr_feed_stream_render(ca, pos, &x, NULL), FR_OK);
        CHECK_EQ_INT(fr_feed_stream_render(cb, pos, &y, NULL), FR_OK);
        CHECK_EQ_INT(fr_feed_stream_render(cc, pos, &z, NULL), FR_OK);
        CHECK(x.len == y.len && memcmp(x.data, y.data, x.len) == 0);
        same_as_other_seed += x.len == z.len && memcmp(x.data, z.data, x.len) == 0;
    }
    CHECK_EQ_INT(same_as_other_seed, 0);
    /* Random access: position 2345 alone equals position 2345 in sequence. */
    struct fr_feed_cursor *fresh;
    fr_feed_cursor_new(a, &fresh);
    fr_buf_reset(&x);
    fr_buf_reset(&y);
    fr_feed_stream_render(fresh, 2345, &x, NULL);
    fr_feed_stream_render(ca, 2345, &y, NULL);
    CHECK(x.len == y.len && memcmp(x.data, y.data, x.len) == 0);
    fr_buf_free(&x);
    fr_buf_free(&y);
    fr_buf_free(&z);
    fr_feed_cursor_free(fresh);
    fr_feed_cursor_free(ca);
    fr_feed_cursor_free(cb);
    fr_feed_cursor_free(cc);
    fr_feed_stream_close(a);
    fr_feed_stream_close(b);
    fr_feed_stream_close(c);
}

/* 100k events: valid, typed, UTF-8, the calibrated type mix and bot share,
 * unique meta.id, Kafka timestamps monotone and equal to meta.dt. */
static void test_gen_shape(void)
{
    enum { N = 100000 };
    struct fr_feed_opts o;
    synth_opts(&o, 7, N);
    o.canary_rate = 0;
    struct fr_feed_stream *stream = open_synthetic(&o);
    struct fr_feed_cursor *cur;
    fr_feed_cursor_new(stream, &cur);
    struct fr_buf buf;
    fr_buf_init(&buf, 1 << 20);
    int64_t types[4] = {0}, invalid = 0, bad_utf8 = 0, nonascii = 0, shared_ms = 0, dt_mismatch = 0;
    int64_t prev_ts = INT64_MIN, bytes = 0;
    char prev_id[40] = "";
    int64_t id_repeat = 0;
    for (int64_t pos = 0; pos < N; pos++) {
        fr_buf_reset(&buf);
        struct fr_feed_info info;
        CHECK_EQ_INT(fr_feed_stream_render(cur, pos, &buf, &info), FR_OK);
        int type = -9;
        int v = check_event((const char *)buf.data, buf.len, &type);
        if (v != 1) {
            if (invalid++ < 3) {
                fprintf(stderr, "invalid event at %lld: %.*s\n", (long long)pos, (int)buf.len,
                        (const char *)buf.data);
            }
            continue;
        }
        types[type]++;
        bytes += (int64_t)buf.len;
        bad_utf8 += !fr_utf8_valid(buf.data, buf.len);
        for (size_t i = 0; i < buf.len; i++) {
            if (buf.data[i] >= 0x80) {
                nonascii++;
                break;
            }
        }
        CHECK(info.ts_ms >= prev_ts);
        shared_ms += info.ts_ms == prev_ts;
        prev_ts = info.ts_ms;
        /* meta.dt is the Kafka timestamp for plain events */
        char dt[32];
        fr_time_format_ms(info.ts_ms * 1000, dt);
        dt_mismatch += !strstr((const char *)fr_buf_cstr(&buf), dt);
        id_repeat += strcmp(prev_id, info.meta_id) == 0;
        snprintf(prev_id, sizeof prev_id, "%s", info.meta_id);
    }
    CHECK_EQ_INT(invalid, 0);
    CHECK_EQ_INT(bad_utf8, 0);
    CHECK_EQ_INT(dt_mismatch, 0);
    CHECK_EQ_INT(id_repeat, 0);
    double n = (double)N;
    fprintf(stderr,
            "  mix: edit %.3f categorize %.3f log %.3f new %.3f; non-ASCII %.2f; shared ms %.3f; "
            "mean %.0f B\n",
            types[0] / n, types[1] / n, types[2] / n, types[3] / n, nonascii / n, shared_ms / n,
            bytes / n);
    CHECK(fabs(types[0] / n - 0.627) < 0.01);
    CHECK(fabs(types[1] / n - 0.337) < 0.01);
    CHECK(fabs(types[2] / n - 0.022) < 0.004);
    CHECK(fabs(types[3] / n - 0.014) < 0.004);
    CHECK(nonascii / n > 0.4 && nonascii / n < 0.9); /* sample: 0.68 */
    CHECK(shared_ms / n > 0.01);                     /* many events share a millisecond */
    CHECK(bytes / n > 900 && bytes / n < 1800);      /* sample: mean 1,382 B */
    fr_buf_free(&buf);
    fr_feed_cursor_free(cur);
    fr_feed_stream_close(stream);
}

static void test_gen_canary_rate(void)
{
    struct fr_feed_gen gen;
    fr_feed_gen_init(&gen, 9, START_MS, 38, 0.001, 0);
    int64_t n = 0;
    for (int64_t pos = 0; pos < 1000000; pos++) {
        n += fr_feed_gen_is_canary(&gen, pos);
    }
    CHECK(n > 850 && n < 1150);
    /* A canary renders as $schema 1.0.1 + meta only. */
    struct fr_feed_opts o;
    synth_opts(&o, 9, 1000000);
    o.canary_rate = 0.001;
    struct fr_feed_stream *stream = open_synthetic(&o);
    struct fr_feed_cursor *cur;
    fr_feed_cursor_new(stream, &cur);
    struct fr_buf buf;
    fr_buf_init(&buf, 1 << 20);
    int seen = 0;
    for (int64_t pos = 0; pos < 20000 && seen < 3; pos++) {
        if (!fr_feed_gen_is_canary(&gen, pos)) {
            continue;
        }
        fr_buf_reset(&buf);
        struct fr_feed_info info;
        fr_feed_stream_render(cur, pos, &buf, &info);
        int type;
        CHECK_EQ_INT(check_event((const char *)buf.data, buf.len, &type), 2);
        CHECK(info.canary && info.has_id);
        seen++;
    }
    CHECK(seen > 0);
    fr_buf_free(&buf);
    fr_feed_cursor_free(cur);
    fr_feed_stream_close(stream);
}

/* ---- timestamps and resume ------------------------------------------- */

static void test_seek_semantics(void)
{
    struct fr_feed_opts o;
    synth_opts(&o, 11, 50000);
    o.event_rate = 400; /* dense: many shared milliseconds */
    struct fr_feed_stream *stream = open_synthetic(&o);
    struct fr_feed_cursor *cur, *probe;
    fr_feed_cursor_new(stream, &cur);
    fr_feed_cursor_new(stream, &probe);
    enum { N = 50000 };
    static int64_t ts[N];
    int64_t shared = -1;
    for (int64_t p = 0; p < N; p++) {
        ts[p] = fr_feed_stream_ts(cur, p);
        if (p > 0) {
            CHECK(ts[p] >= ts[p - 1]);
            if (shared < 0 && p > 1000 && ts[p] == ts[p - 1]) {
                shared = p - 1;
            }
        }
    }
    CHECK(shared > 0);
    /* seek(T) is the least position with ts >= T, for T across the range. */
    struct fr_feed_rng r;
    fr_feed_rng_seed(&r, 1, 2, 3);
    for (int i = 0; i < 2000; i++) {
        int64_t t =
            ts[0] - 50 + (int64_t)fr_feed_rng_below(&r, (uint64_t)(ts[N - 1] - ts[0] + 100));
        int64_t want = 0;
        while (want < N && ts[want] < t) {
            want++;
        }
        CHECK_EQ_INT(fr_feed_stream_seek(probe, t), want);
    }
    CHECK_EQ_INT(fr_feed_stream_seek(probe, ts[0] - 100000), 0);
    CHECK_EQ_INT(fr_feed_stream_seek(probe, ts[N - 1] + 1), N);
    /* Resuming from the id of event k (ts_k + 1) skips later events that
     * share ts_k — Wikimedia's behaviour; the ingest rewinds to compensate. */
    int64_t k = shared;
    struct fr_buf id;
    fr_buf_init(&id, 512);
    fr_feed_id_append(&id, ts[k]);
    struct fr_feed_resume res;
    char err[128];
    CHECK_EQ_INT(fr_feed_resume_parse((const char *)id.data, id.len, &res, err, sizeof err), FR_OK);
    CHECK_EQ_INT(res.kind, FR_FEED_RESUME_TIMESTAMP);
    CHECK_EQ_INT(res.ts_ms, ts[k] + 1);
    int64_t start = fr_feed_stream_seek(probe, res.ts_ms);
    CHECK(start > k + 1); /* k+1 shares ts_k and is skipped */
    CHECK(ts[start] > ts[k]);
    CHECK(ts[start - 1] == ts[k]);
    /* Rewinding by 1 ms re-delivers from the first event of that ms. */
    int64_t first = k;
    while (first > 0 && ts[first - 1] == ts[k]) {
        first--;
    }
    CHECK_EQ_INT(fr_feed_stream_seek(probe, res.ts_ms - 1), first);
    fr_buf_free(&id);
    fr_feed_cursor_free(cur);
    fr_feed_cursor_free(probe);
    fr_feed_stream_close(stream);
}

static void test_resume_parse(void)
{
    struct fr_feed_resume r;
    char err[200];
    const char *real =
        "[{\"topic\":\"eqiad.mediawiki.recentchange\",\"partition\":0,\"timestamp\":1670732822001},"
        "{\"topic\":\"codfw.mediawiki.recentchange\",\"partition\":0,\"offset\":-1}]";
    CHECK_EQ_INT(fr_feed_resume_parse(real, strlen(real), &r, err, sizeof err), FR_OK);
    CHECK_EQ_INT(r.kind, FR_FEED_RESUME_TIMESTAMP);
    CHECK_EQ_INT(r.ts_ms, INT64_C(1670732822001));
    const char *both = "[{\"topic\":\"eqiad.mediawiki.recentchange\",\"partition\":0,\"timestamp\":"
                       "5,\"offset\":7}]";
    CHECK_EQ_INT(fr_feed_resume_parse(both, strlen(both), &r, err, sizeof err), FR_OK);
    CHECK_EQ_INT(r.kind, FR_FEED_RESUME_OFFSET); /* offset wins */
    CHECK_EQ_INT(r.offset, 7);
    const char *latest =
        " [ {\"topic\":\"eqiad.mediawiki.recentchange\",\"partition\":0,\"offset\":-1} ] ";
    CHECK_EQ_INT(fr_feed_resume_parse(latest, strlen(latest), &r, err, sizeof err), FR_OK);
    CHECK_EQ_INT(r.kind, FR_FEED_RESUME_LATEST);
    const char *bare = "[\"eqiad.mediawiki.recentchange\"]";
    CHECK_EQ_INT(fr_feed_resume_parse(bare, strlen(bare), &r, err, sizeof err), FR_OK);
    CHECK_EQ_INT(r.kind, FR_FEED_RESUME_DEFAULT);
    const char *codfw =
        "[{\"topic\":\"codfw.mediawiki.recentchange\",\"partition\":0,\"timestamp\":9}]";
    CHECK_EQ_INT(fr_feed_resume_parse(codfw, strlen(codfw), &r, err, sizeof err), FR_OK);
    CHECK_EQ_INT(r.kind, FR_FEED_RESUME_NONE); /* only listed topics are consumed */
    static const char *const bad[] = {
        "",
        "garbage",
        "{}",
        "[]",
        "[1]",
        "[{\"partition\":0,\"timestamp\":1}]",
        "[{\"topic\":\"eqiad.mediawiki.recentchange\",\"timestamp\":1}]",
        "[{\"topic\":\"eqiad.mediawiki.recentchange\",\"partition\":0}]",
        "[{\"topic\":\"eqiad.mediawiki.recentchange\",\"partition\":0,\"timestamp\":1.5}]",
        "[{\"topic\":\"eqiad.mediawiki.recentchange\",\"partition\":0,\"timestamp\":\"1\"}]",
        "[{\"topic\":\"eqiad.mediawiki.recentchange\",\"partition\":0,\"offset\":-3}]",
        "[{\"topic\":\"eqiad.mediawiki.recentchange\",\"partition\":0,\"timestamp\":1}",
        "[{\"topic\":\"eqiad.mediawiki.recentchange\",\"partition\":0,\"timestamp\":1}] x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = fr_feed_resume_parse(bad[i], strlen(bad[i]), &r, err, sizeof err);
        if (rc != FR_EJSON) {
            fprintf(stderr, "  accepted bad id: %s\n", bad[i]);
        }
        CHECK_EQ_INT(rc, FR_EJSON);
    }
    const char *other =
        "[{\"topic\":\"eqiad.mediawiki.page-create\",\"partition\":0,\"timestamp\":1}]";
    CHECK_EQ_INT(fr_feed_resume_parse(other, strlen(other), &r, err, sizeof err), FR_ENOTFOUND);
    const char *part =
        "[{\"topic\":\"eqiad.mediawiki.recentchange\",\"partition\":3,\"timestamp\":1}]";
    CHECK_EQ_INT(fr_feed_resume_parse(part, strlen(part), &r, err, sizeof err), FR_ENOTFOUND);

    int64_t ms;
    CHECK_EQ_INT(fr_feed_since_parse("1783699525864", &ms), FR_OK);
    CHECK_EQ_INT(ms, START_MS);
    CHECK_EQ_INT(fr_feed_since_parse("2026-07-10T16:05:25.864Z", &ms), FR_OK);
    CHECK_EQ_INT(ms, START_MS);
    CHECK_EQ_INT(fr_feed_since_parse("2026-07-10T16:05:25.864", &ms), FR_OK);
    CHECK_EQ_INT(ms, START_MS);
    CHECK_EQ_INT(fr_feed_since_parse("2026-07-10", &ms), FR_OK);
    CHECK_EQ_INT(ms, INT64_C(1783641600000));
    CHECK_EQ_INT(fr_feed_since_parse("2026-07-10T18:05:25+02:00", &ms), FR_OK);
    CHECK_EQ_INT(ms, INT64_C(1783699525000));
    CHECK(fr_feed_since_parse("yesterday", &ms) < 0);
    CHECK(fr_feed_since_parse("", &ms) < 0);
    CHECK(fr_feed_since_parse("2026-13-45", &ms) < 0);
}

static void test_wire_format(void)
{
    struct fr_buf b;
    fr_buf_init(&b, 4096);
    CHECK_EQ_INT(fr_feed_frame_append(&b, INT64_C(1791207722235), "{\"a\":1}", 7), FR_OK);
    CHECK_EQ_STR(
        fr_buf_cstr(&b),
        "event: message\n"
        "id: "
        "[{\"topic\":\"eqiad.mediawiki.recentchange\",\"partition\":0,\"timestamp\":1791207722236},"
        "{\"topic\":\"codfw.mediawiki.recentchange\",\"partition\":0,\"offset\":-1}]\n"
        "data: {\"a\":1}\n\n");
    fr_buf_free(&b);

    char host[64];
    int port;
    CHECK_EQ_INT(fr_feed_listen_parse("127.0.0.1:8788", host, sizeof host, &port), FR_OK);
    CHECK_EQ_STR(host, "127.0.0.1");
    CHECK_EQ_INT(port, 8788);
    CHECK_EQ_INT(fr_feed_listen_parse("0", host, sizeof host, &port), FR_OK);
    CHECK_EQ_STR(host, "127.0.0.1");
    CHECK_EQ_INT(port, 0);
    CHECK_EQ_INT(fr_feed_listen_parse(":9000", host, sizeof host, &port), FR_OK);
    CHECK_EQ_STR(host, "127.0.0.1");
    CHECK_EQ_INT(fr_feed_listen_parse("localhost:1", host, sizeof host, &port), FR_OK);
    CHECK_EQ_STR(host, "127.0.0.1");
    CHECK_EQ_INT(fr_feed_listen_parse("[::1]:80", host, sizeof host, &port), FR_OK);
    CHECK_EQ_STR(host, "::1");
    CHECK(fr_feed_listen_parse("example.org:80", host, sizeof host, &port) < 0);
    CHECK(fr_feed_listen_parse("127.0.0.1:70000", host, sizeof host, &port) < 0);
    CHECK(fr_feed_listen_parse("127.0.0.1:", host, sizeof host, &port) < 0);
}

/* ---- faults ----------------------------------------------------------- */

static int64_t dt_of(const char *s, size_t n)
{
    struct fr_json_val ev, meta, v;
    int64_t us;
    if (!fr_json_value(s, s + n, &ev) || fr_json_member(&ev, "meta", &meta) != 1 ||
        fr_json_member(&meta, "dt", &v) != 1 || v.type != FR_JSON_STRING ||
        fr_time_parse_rfc3339(v.start, (size_t)(v.end - v.start), &us) < 0) {
        return INT64_MIN;
    }
    return us / 1000;
}

static void test_faults(void)
{
    enum { N = 20000 };
    struct fr_feed_opts o;
    synth_opts(&o, 5, N);
    o.dup_rate = 0.03;
    o.malformed_rate = 0.05;
    o.late_rate = 0.02;
    o.ooo_rate = 0.02;
    o.future_rate = 0.01;
    o.oversize_bytes = 4096;
    struct fr_feed_stream *stream = open_synthetic(&o);
    struct fr_feed_cursor *cur, *cur2;
    fr_feed_cursor_new(stream, &cur);
    fr_feed_cursor_new(stream, &cur2);
    struct fr_buf buf, src;
    fr_buf_init(&buf, 1 << 20);
    fr_buf_init(&src, 1 << 20);
    int64_t counts[6] = {0}, kinds[FR_FEED_MAL_COUNT] = {0};
    for (int64_t pos = 0; pos < N; pos++) {
        fr_buf_reset(&buf);
        struct fr_feed_info info, again;
        CHECK_EQ_INT(fr_feed_stream_render(cur, pos, &buf, &info), FR_OK);
        CHECK_EQ_INT(fr_feed_stream_info(cur2, pos, &again), FR_OK);
        CHECK(info.fault == again.fault && info.malformed == again.malformed &&
              info.has_id == again.has_id && strcmp(info.meta_id, again.meta_id) == 0 &&
              info.dup_of == again.dup_of && info.shift_ms == again.shift_ms);
        counts[info.fault]++;
        const char *s = (const char *)buf.data;
        int type;
        int valid = check_event(s, buf.len, &type);
        switch (info.fault) {
        case FR_FEED_FAULT_NONE:
            CHECK(valid);
            break;
        case FR_FEED_FAULT_DUP:
            /* byte-identical to its source, which is earlier and plain */
            CHECK(info.dup_of < pos && info.dup_of >= pos - o.dup_window);
            fr_buf_reset(&src);
            struct fr_feed_info si;
            fr_feed_stream_render(cur2, info.dup_of, &src, &si);
            CHECK(si.fault == FR_FEED_FAULT_NONE && !si.canary);
            CHECK(src.len == buf.len && memcmp(src.data, buf.data, buf.len) == 0);
            CHECK_EQ_STR(si.meta_id, info.meta_id);
            break;
        case FR_FEED_FAULT_LATE:
            CHECK(valid);
            CHECK_EQ_INT(dt_of(s, buf.len), info.ts_ms - o.late_ms);
            CHECK_EQ_INT(info.shift_ms, o.late_ms);
            break;
        case FR_FEED_FAULT_OOO:
            CHECK(valid);
            CHECK(info.shift_ms >= 1 && info.shift_ms <= o.ooo_ms);
            CHECK_EQ_INT(dt_of(s, buf.len), info.ts_ms - info.shift_ms);
            break;
        case FR_FEED_FAULT_FUTURE:
            CHECK(valid);
            CHECK_EQ_INT(dt_of(s, buf.len), info.ts_ms + o.future_ms);
            break;
        case FR_FEED_FAULT_MALFORMED: {
            kinds[info.malformed]++;
            struct fr_json_val ev, meta, v;
            int json = fr_json_validate(s, s + buf.len) == FR_OK;
            if (json) {
                fr_json_value(s, s + buf.len, &ev);
                fr_json_member(&ev, "meta", &meta);
            }
            switch (info.malformed) {
            case FR_FEED_MAL_TRUNCATED:
                CHECK(!json);
                CHECK(!info.has_id);
                break;
            case FR_FEED_MAL_MISSING_ID:
                CHECK(json && fr_json_member(&meta, "id", &v) == 0);
                break;
            case FR_FEED_MAL_MISSING_DT:
                CHECK(json && fr_json_member(&meta, "dt", &v) == 0);
                break;
            case FR_FEED_MAL_MISSING_WIKI:
                CHECK(json && fr_json_member(&ev, "wiki", &v) == 0);
                break;
            case FR_FEED_MAL_MISSING_TYPE:
                CHECK(json && fr_json_member(&ev, "type", &v) == 0);
                break;
            case FR_FEED_MAL_NS_STRING:
                CHECK(json && fr_json_member(&ev, "namespace", &v) == 1 &&
                      v.type == FR_JSON_STRING);
                break;
            case FR_FEED_MAL_BOT_STRING:
                CHECK(json && fr_json_member(&ev, "bot", &v) == 1 && fr_json_str_eq(&v, "yes"));
                break;
            case FR_FEED_MAL_DT_NOT_DATE:
                CHECK(json && dt_of(s, buf.len) == INT64_MIN);
                break;
            case FR_FEED_MAL_ID_NOT_UUID:
                CHECK(json && fr_json_member(&meta, "id", &v) == 1 && !is_uuid(&v));
                CHECK(!info.has_id);
                break;
            case FR_FEED_MAL_BAD_TYPE:
                CHECK(json && fr_json_member(&ev, "type", &v) == 1 && !fr_json_str_eq(&v, "edit") &&
                      !fr_json_str_eq(&v, "new") && !fr_json_str_eq(&v, "log") &&
                      !fr_json_str_eq(&v, "categorize") && !fr_json_str_eq(&v, "external"));
                break;
            case FR_FEED_MAL_OVERSIZE:
                CHECK(json);
                CHECK_EQ_INT(buf.len, 4096);
                break;
            default:
                CHECK(0);
            }
            if (info.malformed != FR_FEED_MAL_OVERSIZE) {
                CHECK(valid == 0);
            }
            CHECK(fr_utf8_valid(buf.data, buf.len));
            break;
        }
        }
    }
    double n = N;
    CHECK(fabs(counts[FR_FEED_FAULT_MALFORMED] / n - 0.05) < 0.01);
    CHECK(fabs(counts[FR_FEED_FAULT_LATE] / n - 0.02) < 0.006);
    CHECK(counts[FR_FEED_FAULT_DUP] / n > 0.02 && counts[FR_FEED_FAULT_DUP] / n < 0.035);
    for (int k = 1; k < FR_FEED_MAL_COUNT; k++) {
        CHECK(kinds[k] > 30); /* every kind shows up */
    }
    fr_buf_free(&buf);
    fr_buf_free(&src);
    fr_feed_cursor_free(cur);
    fr_feed_cursor_free(cur2);
    fr_feed_stream_close(stream);

    /* Kind selection and option checks. */
    uint32_t mask;
    char err[128];
    CHECK_EQ_INT(fr_feed_malformed_parse("truncated,oversize", &mask, err, sizeof err), FR_OK);
    CHECK_EQ_INT(mask, (1u << FR_FEED_MAL_TRUNCATED) | (1u << FR_FEED_MAL_OVERSIZE));
    CHECK(fr_feed_malformed_parse("truncated,bogus", &mask, err, sizeof err) < 0);
    synth_opts(&o, 1, 10);
    o.dup_rate = 0.6;
    o.late_rate = 0.6;
    struct fr_feed_stream *bad = NULL;
    CHECK_EQ_INT(fr_feed_stream_open(&o, &bad, err, sizeof err), FR_ECONFIG);
    CHECK(bad == NULL);
}

/* Oversize beyond the ingest's 1 MiB default is possible. */
static void test_oversize_big(void)
{
    struct fr_feed_opts o;
    synth_opts(&o, 3, 5000);
    o.malformed_rate = 1;
    o.malformed_kinds = 1u << FR_FEED_MAL_OVERSIZE;
    o.oversize_bytes = (1 << 20) + 4096;
    struct fr_feed_stream *stream = open_synthetic(&o);
    struct fr_feed_cursor *cur;
    fr_feed_cursor_new(stream, &cur);
    struct fr_buf buf;
    fr_buf_init(&buf, 4 << 20);
    struct fr_feed_info info;
    int64_t pos = 0;
    while (fr_feed_source_is_canary(stream, pos)) {
        pos++;
    }
    CHECK_EQ_INT(fr_feed_stream_render(cur, pos, &buf, &info), FR_OK);
    CHECK_EQ_INT(buf.len, (1 << 20) + 4096);
    CHECK_EQ_INT(info.malformed, FR_FEED_MAL_OVERSIZE);
    CHECK_EQ_INT(fr_json_validate((const char *)buf.data, (const char *)buf.data + buf.len), FR_OK);
    fr_buf_free(&buf);
    fr_feed_cursor_free(cur);
    fr_feed_stream_close(stream);
}

/* ---- recorded files ---------------------------------------------------- */

static void test_files(void)
{
    const char *dir = check_tmpdir();
    char path[4200], path2[4200];
    snprintf(path, sizeof path, "%s/a.ndjson", dir);
    snprintf(path2, sizeof path2, "%s/b.json", dir);
    const char *a = "{\"meta\":{\"id\":\"11111111-1111-4111-8111-111111111111\",\"dt\":\"2026-07-"
                    "10T16:05:26.000Z\"},\"wiki\":\"x\"}\n"
                    "\n"
                    "{\"meta\":{\"id\":\"22222222-2222-4222-8222-222222222222\",\"dt\":\"2026-07-"
                    "10T16:05:25.000Z\"}}\r\n"
                    "not json at all\n"
                    "{\"meta\":{\"dt\":\"2026-07-10T16:05:27.500Z\",\"domain\":\"canary\",\"id\":"
                    "\"33333333-3333-4333-8333-333333333333\"}}\n";
    const char *b = "{\n  \"meta\": {\n    \"id\": \"44444444-4444-4444-8444-444444444444\",\n"
                    "    \"dt\": \"2026-07-10T16:05:28Z\"\n  },\n  \"title\": \"a  b\"\n}\n";
    CHECK_EQ_INT(fr_fs_write_atomic(path, a, strlen(a)), FR_OK);
    CHECK_EQ_INT(fr_fs_write_atomic(path2, b, strlen(b)), FR_OK);
    struct fr_feed_opts o;
    fr_feed_opts_init(&o);
    const char *files[] = {path, path2};
    o.files = files;
    o.nfiles = 2;
    struct fr_feed_stream *stream = NULL;
    char err[256];
    CHECK_EQ_INT(fr_feed_stream_open(&o, &stream, err, sizeof err), FR_OK);
    if (!stream) {
        return;
    }
    CHECK_EQ_INT(fr_feed_stream_count(stream), 5);
    struct fr_feed_cursor *cur;
    fr_feed_cursor_new(stream, &cur);
    struct fr_buf buf;
    fr_buf_init(&buf, 1 << 20);
    struct fr_feed_info info;
    const int64_t t26 = INT64_C(1783699526000);
    static const int64_t want_ts[] = {t26, t26, t26, t26 + 1500, t26 + 2000}; /* made monotone */
    for (int64_t pos = 0; pos < 5; pos++) {
        CHECK_EQ_INT(fr_feed_stream_ts(cur, pos), want_ts[pos]);
    }
    fr_buf_reset(&buf);
    fr_feed_stream_render(cur, 1, &buf, &info);
    CHECK_EQ_STR(fr_buf_cstr(&buf), "{\"meta\":{\"id\":\"22222222-2222-4222-8222-222222222222\","
                                    "\"dt\":\"2026-07-10T16:05:25.000Z\"}}");
    CHECK_EQ_STR(info.meta_id, "22222222-2222-4222-8222-222222222222");
    fr_buf_reset(&buf);
    fr_feed_stream_render(cur, 2, &buf, &info);
    CHECK_EQ_STR(fr_buf_cstr(&buf), "not json at all");
    CHECK(!info.has_id);
    fr_feed_stream_info(cur, 3, &info);
    CHECK(info.canary);
    fr_buf_reset(&buf);
    fr_feed_stream_render(cur, 4, &buf, &info);
    CHECK_EQ_STR(fr_buf_cstr(&buf), "{\"meta\":{\"id\":\"44444444-4444-4444-8444-444444444444\","
                                    "\"dt\":\"2026-07-10T16:05:28Z\"},\"title\":\"a  b\"}");
    CHECK_EQ_INT(fr_feed_stream_seek(cur, t26), 0);
    CHECK_EQ_INT(fr_feed_stream_seek(cur, t26 + 1), 3);
    CHECK_EQ_INT(fr_feed_stream_seek(cur, t26 + 5000), 5);
    fr_buf_free(&buf);
    fr_feed_cursor_free(cur);
    fr_feed_stream_close(stream);

    /* The recorded sample: 1,200 events, ids extracted, faults apply. */
    const char *sample = check_shared("data/wikimedia/gokulportfolio-sample_events.jsonl");
    if (!sample) {
        fprintf(stderr, "  (shared data absent: recorded-sample checks skipped)\n");
        return;
    }
    const char *one[] = {sample};
    fr_feed_opts_init(&o);
    o.files = one;
    o.nfiles = 1;
    o.malformed_rate = 0.1;
    o.late_rate = 0.1;
    CHECK_EQ_INT(fr_feed_stream_open(&o, &stream, err, sizeof err), FR_OK);
    CHECK_EQ_INT(fr_feed_stream_count(stream), 1200);
    fr_feed_cursor_new(stream, &cur);
    fr_buf_init(&buf, 4 << 20); /* room for oversize events */
    int64_t prev = INT64_MIN, late = 0, ids = 0;
    for (int64_t pos = 0; pos < 1200; pos++) {
        fr_buf_reset(&buf);
        CHECK_EQ_INT(fr_feed_stream_render(cur, pos, &buf, &info), FR_OK);
        CHECK(info.ts_ms >= prev);
        prev = info.ts_ms;
        ids += info.has_id;
        if (info.fault == FR_FEED_FAULT_LATE) {
            late++;
            CHECK_EQ_INT(dt_of((const char *)buf.data, buf.len), info.ts_ms - o.late_ms);
        }
    }
    CHECK(late > 60 && late < 180);
    CHECK(ids > 1000);
    fr_buf_free(&buf);
    fr_feed_cursor_free(cur);
    fr_feed_stream_close(stream);
}

/* ---- truth ------------------------------------------------------------ */

static void test_truth(void)
{
    const char *dir = check_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/truth.json", dir);
    struct fr_feed_opts o;
    synth_opts(&o, 21, 1000);
    o.dup_rate = 0.05;
    o.malformed_rate = 0.05;
    struct fr_feed_stream *stream = open_synthetic(&o);
    struct fr_feed_truth *truth;
    CHECK_EQ_INT(fr_feed_truth_new(stream, path, &truth), FR_OK);
    CHECK_EQ_INT(fr_feed_truth_start(truth), FR_OK);
    struct fr_feed_conn_info ci = {.remote = "127.0.0.1:1", .resume = FR_FEED_RESUME_DEFAULT};
    int64_t h1, h2;
    CHECK_EQ_INT(fr_feed_truth_conn_open(truth, &ci, &h1), FR_OK);
    for (int64_t p = 0; p < 300; p++) {
        fr_feed_truth_conn_sent(truth, h1, p);
    }
    fr_feed_truth_conn_close(truth, h1, "disconnect_every");
    ci.resume = FR_FEED_RESUME_TIMESTAMP;
    ci.requested = 250;
    ci.start = 240;
    CHECK_EQ_INT(fr_feed_truth_conn_open(truth, &ci, &h2), FR_OK);
    for (int64_t p = 240; p < 500; p++) {
        fr_feed_truth_conn_sent(truth, h2, p);
    }
    fr_feed_truth_conn_stall(truth, h2);
    CHECK_EQ_INT(fr_feed_truth_finish(truth), FR_OK); /* h2 still open: counted as sent */

    struct fr_buf file;
    fr_buf_init(&file, 64 << 20);
    CHECK_EQ_INT(fr_fs_read_file(path, &file), FR_OK);
    const char *s = (const char *)file.data, *end = s + file.len;
    CHECK_EQ_INT(fr_json_validate(s, end), FR_OK);
    struct fr_json_val doc, v, conns, events;
    fr_json_value(s, end, &doc);
    CHECK(fr_json_member(&doc, "complete", &v) == 1 && v.type == FR_JSON_TRUE);
    int64_t n;
    CHECK(fr_json_member(&doc, "positions_sent", &v) == 1 && fr_json_int64(&v, &n) == FR_OK);
    CHECK_EQ_INT(n, 500);
    CHECK(fr_json_member(&doc, "connections", &conns) == 1 && conns.type == FR_JSON_ARRAY);
    CHECK(fr_json_member(&doc, "events", &events) == 1 && events.type == FR_JSON_ARRAY);
    /* Every row agrees with the stream. */
    struct fr_feed_cursor *cur;
    fr_feed_cursor_new(stream, &cur);
    const char *p = fr_json_ws(events.start + 1, events.end);
    int64_t rows = 0, tagged = 0;
    while (p < events.end && *p == '[') {
        struct fr_json_val row, f;
        p = fr_json_value(p, events.end, &row);
        const char *q = fr_json_ws(row.start + 1, row.end);
        q = fr_json_value(q, row.end, &f);
        int64_t pos;
        CHECK_EQ_INT(fr_json_int64(&f, &pos), FR_OK);
        CHECK_EQ_INT(pos, rows);
        struct fr_feed_info info;
        fr_feed_stream_info(cur, pos, &info);
        q = fr_json_ws(q, row.end) + 1;
        q = fr_json_value(q, row.end, &f);
        CHECK(info.has_id ? fr_json_str_eq(&f, info.meta_id) : f.type == FR_JSON_NULL);
        q = fr_json_ws(q, row.end) + 1;
        q = fr_json_value(q, row.end, &f);
        int64_t ts;
        CHECK(fr_json_int64(&f, &ts) == FR_OK && ts == info.ts_ms);
        tagged += *fr_json_ws(q, row.end) == ',';
        rows++;
        p = fr_json_ws(p, events.end);
        if (*p == ',') {
            p = fr_json_ws(p + 1, events.end);
        }
    }
    CHECK_EQ_INT(rows, 500);
    CHECK(tagged > 20 && tagged < 100);
    CHECK(strstr(s, "\"disconnect_injected\":true") != NULL);
    CHECK(strstr(s, "\"requested\":250,\"start\":240,\"overlap\":10") != NULL);
    CHECK(strstr(s, "\"stalls\":1") != NULL);
    fr_feed_cursor_free(cur);
    fr_buf_free(&file);
    fr_feed_stream_close(stream);
}

int main(void)
{
    RUN(test_gen_deterministic);
    RUN(test_gen_shape);
    RUN(test_gen_canary_rate);
    RUN(test_seek_semantics);
    RUN(test_resume_parse);
    RUN(test_wire_format);
    RUN(test_faults);
    RUN(test_oversize_big);
    RUN(test_files);
    RUN(test_truth);
    return check_report();
}
