/*
 * since.c — `--since TIME`, SSE-id positions topic by topic, and the
 * retention-gap check (since.h; docs/adr/0049-ingest-since-and-gaps.md).
 *
 * Pure functions over caller-owned values; no I/O, no allocation, no
 * threads. The gap check's rule, in one place:
 *
 *   asked(t)  the timestamp the connection asked for on topic t
 *             (?since= for every topic, or the resume id's value for t)
 *   first(t)  the Kafka timestamp of the first event delivered on t: the
 *             id's value for t minus 1 (KafkaSSE adds 1), taken from the
 *             first event whose id moved t away from asked(t)
 *   decide    once every asked topic has delivered, or after
 *             FR_INGEST_GAP_WINDOW events, or at the end of the connection:
 *             delay = min over delivered t of first(t) - asked(t);
 *             a gap when delay > tolerance, from asked to first of that t.
 *
 * The minimum, not the first event alone, because historical reads
 * interleave the datacenters (PROTOCOL.md §4): the idle datacenter's topic
 * may deliver a stray event hours after `since` before the active topic's
 * first batch arrives, and may never deliver at all. Retention is per topic
 * with one setting, so a real gap delays every topic that delivers.
 */
#include "ingest/since.h"

#include "core/clock.h"
#include "core/err.h"
#include "core/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- --since TIME ---------------------------------------------------- */

static int since_duration(const char *s, int64_t *out_ms)
{
    int64_t total = 0;
    const char *p = s;
    int parts = 0;
    while (*p) {
        int64_t n = 0;
        int digits = 0;
        while (*p >= '0' && *p <= '9') {
            if (n > (int64_t)1e12) {
                return FR_EINVAL;
            }
            n = n * 10 + (*p++ - '0');
            digits++;
        }
        int64_t unit;
        switch (*p) {
        case 's':
            unit = 1000;
            break;
        case 'm':
            unit = 60 * 1000;
            break;
        case 'h':
            unit = 3600 * 1000;
            break;
        case 'd':
            unit = 86400 * 1000;
            break;
        default:
            return FR_EINVAL;
        }
        if (!digits || n > (int64_t)1e6 * 86400 / (unit / 1000)) {
            return FR_EINVAL; /* no number, or more than a million days */
        }
        total += n * unit;
        p++;
        parts++;
    }
    if (!parts) {
        return FR_EINVAL;
    }
    *out_ms = total;
    return FR_OK;
}

int fr_ingest_since_parse(const char *s, int64_t now_ms, int64_t *out_ms)
{
    size_t len = strlen(s);
    if (len == 0 || len > 64) {
        return FR_EINVAL;
    }
    size_t digits = strspn(s, "0123456789");
    if (digits == len) {
        if (len > 15) {
            return FR_EINVAL;
        }
        *out_ms = strtoll(s, NULL, 10);
        return FR_OK;
    }
    const char *last = s + len - 1;
    if (digits > 0 && strchr("smhd", *last) && !strpbrk(s, "-:T")) {
        int64_t back;
        if (since_duration(s, &back) < 0) {
            return FR_EINVAL;
        }
        *out_ms = now_ms - back;
        return FR_OK;
    }
    return fr_time_parse_date_ms(s, out_ms);
}

/* ---- positions ------------------------------------------------------- */

int fr_ingest_pos_parse(const char *id, size_t len, struct fr_ingest_pos *pos)
{
    memset(pos, 0, sizeof *pos);
    const char *end = id + len;
    struct fr_json_val arr;
    const char *after = fr_json_value(id, end, &arr);
    if (!after || fr_json_ws(after, end) != end || arr.type != FR_JSON_ARRAY) {
        return FR_EJSON;
    }
    const char *p = fr_json_ws(arr.start + 1, arr.end);
    while (p < arr.end && *p != ']') {
        struct fr_json_val elem, topic, v;
        p = fr_json_value(p, arr.end, &elem);
        if (!p || elem.type != FR_JSON_OBJECT || fr_json_member(&elem, "topic", &topic) != 1 ||
            topic.type != FR_JSON_STRING) {
            return FR_EJSON;
        }
        int has_ts;
        if (fr_json_member(&elem, "offset", &v) == 1) { /* offset wins (PROTOCOL.md §3) */
            has_ts = 0;
        } else if (fr_json_member(&elem, "timestamp", &v) == 1) {
            has_ts = 1;
        } else {
            return FR_EJSON;
        }
        int64_t value;
        if (fr_json_int64(&v, &value) < 0) {
            return FR_EJSON;
        }
        if (pos->n < FR_INGEST_POS_TOPICS) {
            struct fr_ingest_pos_topic *t = &pos->t[pos->n];
            if (fr_json_cstr(&topic, t->topic, sizeof t->topic) < 0) {
                return FR_EJSON;
            }
            t->has_ts = has_ts;
            t->value = value;
            pos->n++;
        }
        p = fr_json_ws(p, arr.end);
        if (p < arr.end && *p == ',') {
            p = fr_json_ws(p + 1, arr.end);
        }
    }
    return pos->n > 0 ? FR_OK : FR_EJSON;
}

static const struct fr_ingest_pos_topic *pos_find(const struct fr_ingest_pos *pos,
                                                  const char *topic)
{
    for (int i = 0; i < pos->n; i++) {
        if (strcmp(pos->t[i].topic, topic) == 0) {
            return &pos->t[i];
        }
    }
    return NULL;
}

int fr_ingest_pos_beyond(const struct fr_ingest_pos *ev, const struct fr_ingest_pos *horizon)
{
    for (int i = 0; i < ev->n; i++) {
        if (!ev->t[i].has_ts) {
            continue;
        }
        const struct fr_ingest_pos_topic *h = pos_find(horizon, ev->t[i].topic);
        if (!h || !h->has_ts || ev->t[i].value > h->value) {
            return 1;
        }
    }
    return 0;
}

void fr_ingest_pos_merge(struct fr_ingest_pos *horizon, const struct fr_ingest_pos *ev)
{
    for (int i = 0; i < ev->n; i++) {
        if (!ev->t[i].has_ts) {
            continue;
        }
        struct fr_ingest_pos_topic *h =
            (struct fr_ingest_pos_topic *)pos_find(horizon, ev->t[i].topic);
        if (h) {
            if (!h->has_ts || ev->t[i].value > h->value) {
                h->has_ts = 1;
                h->value = ev->t[i].value;
            }
        } else if (horizon->n < FR_INGEST_POS_TOPICS) {
            horizon->t[horizon->n++] = ev->t[i];
        }
    }
}

/* ---- the retention-gap check ---------------------------------------- */

void fr_ingest_gap_none(struct fr_ingest_gap *gap)
{
    memset(gap, 0, sizeof *gap);
    gap->asked_default = -1;
}

void fr_ingest_gap_since(struct fr_ingest_gap *gap, int64_t since_ms, int64_t tolerance_ms)
{
    fr_ingest_gap_none(gap);
    gap->active = 1;
    gap->asked_default = since_ms;
    gap->tolerance_ms = tolerance_ms;
}

void fr_ingest_gap_resume(struct fr_ingest_gap *gap, const char *resume_id, size_t len,
                          int64_t tolerance_ms)
{
    fr_ingest_gap_none(gap);
    struct fr_ingest_pos pos;
    if (fr_ingest_pos_parse(resume_id, len, &pos) < 0) {
        return;
    }
    for (int i = 0; i < pos.n; i++) {
        if (pos.t[i].has_ts) {
            struct fr_ingest_gap_topic *t = &gap->t[gap->n++];
            snprintf(t->topic, sizeof t->topic, "%s", pos.t[i].topic);
            t->asked = pos.t[i].value;
            t->first = -1;
        }
    }
    gap->active = gap->n > 0;
    gap->tolerance_ms = tolerance_ms;
}

static int gap_decide(struct fr_ingest_gap *gap, struct fr_ingest_gap_report *report)
{
    int found = 0;
    int64_t best = 0;
    for (int i = 0; i < gap->n; i++) {
        const struct fr_ingest_gap_topic *t = &gap->t[i];
        if (t->first < 0) {
            continue;
        }
        int64_t delay = t->first - t->asked;
        if (!found || delay < best) {
            best = delay;
            report->from_ms = t->asked;
            report->to_ms = t->first;
            found = 1;
        }
    }
    if (!found) {
        return 0; /* nothing delivered: nothing to judge yet */
    }
    gap->active = 0;
    return best > gap->tolerance_ms;
}

int fr_ingest_gap_event(struct fr_ingest_gap *gap, const char *id, size_t len,
                        struct fr_ingest_gap_report *report)
{
    if (!gap->active) {
        return 0;
    }
    struct fr_ingest_pos pos;
    if (fr_ingest_pos_parse(id, len, &pos) < 0) {
        gap->active = 0; /* not a Wikimedia id: positions cannot be compared */
        return 0;
    }
    gap->events++;
    for (int i = 0; i < pos.n; i++) {
        if (!pos.t[i].has_ts) {
            continue;
        }
        struct fr_ingest_gap_topic *t = NULL;
        for (int k = 0; k < gap->n; k++) {
            if (strcmp(gap->t[k].topic, pos.t[i].topic) == 0) {
                t = &gap->t[k];
            }
        }
        if (!t) {
            if (gap->asked_default < 0 || gap->n == FR_INGEST_POS_TOPICS) {
                continue; /* a resume never asked this topic from history */
            }
            t = &gap->t[gap->n++];
            snprintf(t->topic, sizeof t->topic, "%s", pos.t[i].topic);
            t->asked = gap->asked_default;
            t->first = -1;
        }
        /* An undelivered topic still shows the asked value; a delivered
         * one shows its Kafka timestamp + 1, which is > asked. */
        if (t->first < 0 && pos.t[i].value != t->asked) {
            t->first = pos.t[i].value - 1;
        }
    }
    int all = gap->n > 0;
    for (int k = 0; k < gap->n; k++) {
        all &= gap->t[k].first >= 0;
    }
    if (all || gap->events >= FR_INGEST_GAP_WINDOW) {
        return gap_decide(gap, report);
    }
    return 0;
}

int fr_ingest_gap_end(struct fr_ingest_gap *gap, struct fr_ingest_gap_report *report)
{
    if (!gap->active) {
        return 0;
    }
    int rc = gap_decide(gap, report);
    gap->active = 0;
    return rc;
}
