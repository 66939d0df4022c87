/*
 * faults.c — stream faults: which positions are faulted (the plan) and the
 * byte edits that make them so.
 *
 * The plan of position p is drawn from (seed, p) alone: one uniform u picks
 * at most one fault by cumulative rate (malformed, dup, late, ooo, future,
 * in that order; the rates must sum to at most 1), further draws pick its
 * parameters. Canaries are never faulted. A duplicate repeats an earlier
 * *plain* position q (not a canary, no fault of its own) chosen in the
 * previous --dup-window positions; if the drawn q is not plain, p stays
 * plain. So the plan is a pure function and needs no history.
 *
 * Edits work on the serialized event with the core JSON scanner, so they
 * apply to generated and recorded events alike. An edit whose field is
 * missing (a recorded event without meta.dt, say) is not applied and the
 * position is reported plain — the truth always says what was sent.
 *
 * Pure functions: thread-safe.
 */
#include "feed/feed_int.h"

#include "core/clock.h"
#include "core/err.h"
#include "core/json.h"

#include <stdio.h>
#include <string.h>

static const char *const fault_names[] = {"",
#define FAULT_NAME(sym, name, doc) name,
                                          FR_FEED_MALFORMED_TABLE(FAULT_NAME)
#undef FAULT_NAME
};

const char *fr_feed_malformed_name(enum fr_feed_malformed kind)
{
    return kind > FR_FEED_MAL_NONE && kind < FR_FEED_MAL_COUNT ? fault_names[kind] : "";
}

int fr_feed_malformed_parse(const char *list, uint32_t *mask, char *err, size_t errlen)
{
    *mask = 0;
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        int found = 0;
        if (n == 3 && memcmp(p, "all", 3) == 0) {
            *mask |= ((1u << FR_FEED_MAL_COUNT) - 1) & ~1u;
            found = 1;
        }
        for (int k = 1; k < FR_FEED_MAL_COUNT && !found; k++) {
            if (strlen(fault_names[k]) == n && memcmp(fault_names[k], p, n) == 0) {
                *mask |= 1u << k;
                found = 1;
            }
        }
        if (!found) {
            snprintf(err, errlen, "unknown malformed kind \"%.*s\"", (int)n, p);
            return FR_EINVAL;
        }
        p = e ? e + 1 : p + n;
    }
    if (!*mask) {
        snprintf(err, errlen, "empty malformed kind list");
        return FR_EINVAL;
    }
    return FR_OK;
}

/* ---- the plan -------------------------------------------------------- */

static double plan_draw(const struct fr_feed_stream *stream, int64_t pos, struct fr_feed_rng *r)
{
    fr_feed_rng_seed(r, stream->opts.seed, (uint64_t)pos, FR_FEED_SALT_FAULT);
    return fr_feed_rng_unit(r);
}

static int plan_plain(const struct fr_feed_stream *stream, int64_t pos)
{
    struct fr_feed_rng r;
    return !fr_feed_source_is_canary(stream, pos) && plan_draw(stream, pos, &r) >= stream->cut[4];
}

void fr_feed_plan_at(const struct fr_feed_stream *stream, int64_t pos, struct fr_feed_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    if (stream->cut[4] <= 0 || fr_feed_source_is_canary(stream, pos)) {
        return;
    }
    struct fr_feed_rng r;
    double u = plan_draw(stream, pos, &r);
    plan->salt = fr_feed_rng_next(&r);
    const struct fr_feed_opts *o = &stream->opts;
    if (u < stream->cut[0]) {
        plan->fault = FR_FEED_FAULT_MALFORMED;
        plan->malformed = stream->mal_kinds[fr_feed_rng_below(&r, (uint64_t)stream->nmal_kinds)];
    } else if (u < stream->cut[1]) {
        int64_t window = o->dup_window < pos ? o->dup_window : pos;
        if (window >= 1) {
            int64_t q = pos - fr_feed_rng_range(&r, 1, window);
            if (plan_plain(stream, q)) {
                plan->fault = FR_FEED_FAULT_DUP;
                plan->arg = q;
            }
        }
    } else if (u < stream->cut[2]) {
        plan->fault = FR_FEED_FAULT_LATE;
        plan->arg = o->late_random ? fr_feed_rng_range(&r, 1, o->late_ms) : o->late_ms;
    } else if (u < stream->cut[3]) {
        plan->fault = FR_FEED_FAULT_OOO;
        plan->arg = fr_feed_rng_range(&r, 1, o->ooo_ms);
    } else if (u < stream->cut[4]) {
        plan->fault = FR_FEED_FAULT_FUTURE;
        plan->arg = o->future_ms;
    }
}

int fr_feed_fault_keeps_id(const struct fr_feed_plan *plan)
{
    if (plan->fault != FR_FEED_FAULT_MALFORMED) {
        return 1;
    }
    return !(plan->malformed == FR_FEED_MAL_TRUNCATED ||
             plan->malformed == FR_FEED_MAL_MISSING_ID ||
             plan->malformed == FR_FEED_MAL_ID_NOT_UUID);
}

/* ---- byte edits ------------------------------------------------------ */

/* A member of the event: its value's span, and the span to delete to remove
 * the member with its separating comma. Offsets are into the buffer. */
struct fault_member {
    size_t val_off, val_end;
    size_t del_off, del_end;
};

static int fault_find(const struct fr_buf *buf, size_t start, int in_meta, const char *key,
                      struct fault_member *m)
{
    const char *base = (const char *)buf->data;
    const char *s = base + start, *end = base + buf->len;
    struct fr_json_val obj, meta, v;
    if (!fr_json_value(fr_json_ws(s, end), end, &obj) || obj.type != FR_JSON_OBJECT) {
        return 0;
    }
    if (in_meta) {
        if (fr_json_member(&obj, "meta", &meta) != 1 || meta.type != FR_JSON_OBJECT) {
            return 0;
        }
        obj = meta;
    }
    if (fr_json_member(&obj, key, &v) != 1) {
        return 0;
    }
    const char *vs = v.start, *ve = v.end;
    if (v.type == FR_JSON_STRING) {
        vs--;
        ve++;
    }
    /* Back from the value over `"key" :` to the key's opening quote. */
    const char *k = vs - 1;
    while (k > obj.start && (*k == ' ' || *k == '\t' || *k == '\n' || *k == '\r')) {
        k--;
    }
    if (*k != ':') {
        return 0;
    }
    k--;
    while (k > obj.start && (*k == ' ' || *k == '\t' || *k == '\n' || *k == '\r')) {
        k--;
    }
    size_t klen = strlen(key);
    if (*k != '"' || k - obj.start < (ptrdiff_t)klen + 1 || k[-(ptrdiff_t)klen - 1] != '"') {
        return 0;
    }
    const char *kopen = k - klen - 1;
    const char *ds = kopen, *de = ve;
    const char *n = fr_json_ws(ve, end);
    if (n < end && *n == ',') {
        de = fr_json_ws(n + 1, end);
    } else {
        const char *b = kopen - 1;
        while (b > obj.start && (*b == ' ' || *b == '\t' || *b == '\n' || *b == '\r')) {
            b--;
        }
        if (*b == ',') {
            ds = b;
        }
    }
    m->val_off = (size_t)(vs - base);
    m->val_end = (size_t)(ve - base);
    m->del_off = (size_t)(ds - base);
    m->del_end = (size_t)(de - base);
    return 1;
}

/* Replace buf[off, off+del) with ins. */
static int fault_splice(struct fr_buf *buf, size_t off, size_t del, const char *ins, size_t inslen)
{
    size_t tail = buf->len - off - del;
    if (inslen > del) {
        int rc = fr_buf_reserve(buf, inslen - del);
        if (rc < 0) {
            return rc;
        }
    }
    memmove(buf->data + off + inslen, buf->data + off + del, tail);
    memcpy(buf->data + off, ins, inslen);
    buf->len = off + inslen + tail;
    return FR_OK;
}

static int fault_set(struct fr_buf *buf, size_t start, int in_meta, const char *key,
                     const char *value, int *applied)
{
    struct fault_member m;
    if (!fault_find(buf, start, in_meta, key, &m)) {
        *applied = 0;
        return FR_OK;
    }
    return fault_splice(buf, m.val_off, m.val_end - m.val_off, value, strlen(value));
}

static int fault_remove(struct fr_buf *buf, size_t start, int in_meta, const char *key,
                        int *applied)
{
    struct fault_member m;
    if (!fault_find(buf, start, in_meta, key, &m)) {
        *applied = 0;
        return FR_OK;
    }
    return fault_splice(buf, m.del_off, m.del_end - m.del_off, "", 0);
}

static int fault_pad(const struct fr_feed_stream *stream, struct fr_buf *buf, size_t start)
{
    size_t len = buf->len - start;
    size_t target = (size_t)stream->opts.oversize_bytes;
    static const char head[] = ",\"padding\":\"";
    if (len < 2 || buf->data[buf->len - 1] != '}' || len + sizeof head + 2 > target) {
        return FR_OK; /* already at least that big */
    }
    size_t fill = target - len - (sizeof head - 1) - 1;
    buf->len--; /* drop the closing brace */
    int rc = fr_buf_reserve(buf, (sizeof head - 1) + fill + 2);
    if (rc < 0) {
        buf->len++;
        return rc;
    }
    memcpy(buf->data + buf->len, head, sizeof head - 1);
    buf->len += sizeof head - 1;
    memset(buf->data + buf->len, 'x', fill);
    buf->len += fill;
    memcpy(buf->data + buf->len, "\"}", 2);
    buf->len += 2;
    return FR_OK;
}

int fr_feed_fault_apply(const struct fr_feed_stream *stream, const struct fr_feed_plan *plan,
                        int64_t ts_ms, struct fr_buf *payload, size_t start, int *applied)
{
    *applied = 1;
    struct fr_feed_rng r = {.s = plan->salt};
    char dt[40];
    switch (plan->fault) {
    case FR_FEED_FAULT_NONE:
    case FR_FEED_FAULT_DUP:
        return FR_OK;
    case FR_FEED_FAULT_LATE:
    case FR_FEED_FAULT_OOO:
    case FR_FEED_FAULT_FUTURE: {
        int64_t ms = plan->fault == FR_FEED_FAULT_FUTURE ? ts_ms + plan->arg : ts_ms - plan->arg;
        dt[0] = '"';
        fr_time_format_ms(ms * 1000, dt + 1);
        strcat(dt, "\"");
        return fault_set(payload, start, 1, "dt", dt, applied);
    }
    case FR_FEED_FAULT_MALFORMED:
        break;
    }
    switch (plan->malformed) {
    case FR_FEED_MAL_TRUNCATED: {
        size_t len = payload->len - start;
        if (len < 2) {
            *applied = 0;
            return FR_OK;
        }
        size_t cut = start + (size_t)fr_feed_rng_range(&r, 1, (int64_t)len - 1);
        while (cut > start + 1 && (payload->data[cut] & 0xC0) == 0x80) {
            cut--; /* never split a UTF-8 sequence */
        }
        payload->len = cut;
        return FR_OK;
    }
    case FR_FEED_MAL_MISSING_ID:
        return fault_remove(payload, start, 1, "id", applied);
    case FR_FEED_MAL_MISSING_DT:
        return fault_remove(payload, start, 1, "dt", applied);
    case FR_FEED_MAL_MISSING_WIKI:
        return fault_remove(payload, start, 0, "wiki", applied);
    case FR_FEED_MAL_MISSING_TYPE:
        return fault_remove(payload, start, 0, "type", applied);
    case FR_FEED_MAL_NS_STRING: {
        struct fault_member m;
        if (!fault_find(payload, start, 0, "namespace", &m)) {
            *applied = 0;
            return FR_OK;
        }
        char v[40];
        snprintf(v, sizeof v, "\"%.*s\"", (int)(m.val_end - m.val_off),
                 (const char *)payload->data + m.val_off);
        return fault_splice(payload, m.val_off, m.val_end - m.val_off, v, strlen(v));
    }
    case FR_FEED_MAL_BOT_STRING:
        return fault_set(payload, start, 0, "bot", "\"yes\"", applied);
    case FR_FEED_MAL_DT_NOT_DATE: {
        static const char *const bad[] = {"\"yesterday\"", "\"2026-13-45T99:99:99Z\"",
                                          "\"not a date\"", "\"1783699526000\"",
                                          "\"10/07/2026 16:05\""};
        return fault_set(payload, start, 1, "dt", bad[fr_feed_rng_below(&r, 5)], applied);
    }
    case FR_FEED_MAL_ID_NOT_UUID: {
        char v[48];
        switch (fr_feed_rng_below(&r, 3)) {
        case 0:
            snprintf(v, sizeof v, "\"evt-%016llx\"", (unsigned long long)fr_feed_rng_next(&r));
            break;
        case 1:
            snprintf(v, sizeof v, "\"%llu\"", (unsigned long long)(fr_feed_rng_next(&r) >> 20));
            break;
        default:
            snprintf(v, sizeof v, "\"\"");
            break;
        }
        return fault_set(payload, start, 1, "id", v, applied);
    }
    case FR_FEED_MAL_BAD_TYPE: {
        static const char *const bad[] = {"\"edits\"", "\"Edit\"", "\"delete\"", "\"\"",
                                          "\"unknown\""};
        return fault_set(payload, start, 0, "type", bad[fr_feed_rng_below(&r, 5)], applied);
    }
    case FR_FEED_MAL_OVERSIZE:
        return fault_pad(stream, payload, start);
    default:
        *applied = 0;
        return FR_OK;
    }
}
