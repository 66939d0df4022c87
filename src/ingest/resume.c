/*
 * resume.c — the pure parts of ingest: rewriting the stored SSE id for a
 * resume, pulling the few fields ingest needs out of an event, the event's
 * partition and the log options, the same for the live stream (ingest.c)
 * and recorded files (file.c).
 */
#include "ingest/ingest.h"

#include "core/clock.h"
#include "core/crc32c.h"
#include "core/err.h"
#include "core/json.h"
#include "log/log.h"

#include <stdio.h>
#include <string.h>

int fr_ingest_resume_id(const char *id, size_t len, int64_t rewind_ms, struct fr_buf *out)
{
    const char *end = id + len;
    if (fr_json_validate(id, end) < 0) {
        return FR_EJSON;
    }
    struct fr_json_val arr;
    fr_json_value(id, end, &arr);
    if (arr.type != FR_JSON_ARRAY) {
        return FR_EJSON;
    }
    const char *copied = id;
    const char *p = fr_json_ws(arr.start + 1, end);
    int nelems = 0;
    while (p < arr.end && *p != ']') {
        struct fr_json_val elem, ts;
        p = fr_json_value(p, end, &elem);
        if (!p || elem.type != FR_JSON_OBJECT) {
            return FR_EJSON;
        }
        nelems++;
        int found = fr_json_member(&elem, "timestamp", &ts);
        if (found < 0) {
            return FR_EJSON;
        }
        if (found) {
            int64_t t;
            if (fr_json_int64(&ts, &t) < 0 || t < rewind_ms) {
                return FR_EJSON;
            }
            int rc = fr_buf_append(out, copied, (size_t)(ts.start - copied));
            if (rc == FR_OK) {
                rc = fr_buf_printf(out, "%lld", (long long)(t - rewind_ms));
            }
            if (rc < 0) {
                return rc;
            }
            copied = ts.end;
        }
        p = fr_json_ws(p, end);
        if (p < end && *p == ',') {
            p = fr_json_ws(p + 1, end);
        }
    }
    if (nelems == 0) {
        return FR_EJSON;
    }
    return fr_buf_append(out, copied, (size_t)(end - copied));
}

void fr_ingest_extract(const char *json, size_t len, struct fr_ingest_meta *meta)
{
    memset(meta, 0, sizeof *meta);
    meta->event_ms = -1;
    /* One pass over the top-level members (the first of each name wins, as
     * fr_json_member's would): the event is scanned once, not once per
     * field looked up. Anything that is not a valid object gives nothing. */
    struct fr_json_val m = {0}, wiki = {0}, title = {0}, v;
    const char *end = json + len;
    const char *p = fr_json_ws(json, end);
    if (p >= end || *p != '{') {
        return;
    }
    p = fr_json_ws(p + 1, end);
    while (p < end && *p != '}') {
        struct fr_json_val key, val;
        if (*p != '"' || !(p = fr_json_value(p, end, &key)) ||
            (p = fr_json_ws(p, end)) >= end || *p != ':' ||
            !(p = fr_json_value(fr_json_ws(p + 1, end), end, &val))) {
            return;
        }
        if (!m.type && fr_json_str_eq(&key, "meta")) {
            m = val;
        } else if (!wiki.type && fr_json_str_eq(&key, "wiki")) {
            wiki = val;
        } else if (!title.type && fr_json_str_eq(&key, "title")) {
            title = val;
        }
        p = fr_json_ws(p, end);
        if (p < end && *p == ',') {
            p = fr_json_ws(p + 1, end);
            if (p < end && *p == '}') {
                return; /* a trailing comma */
            }
        } else if (p >= end || *p != '}') {
            return;
        }
    }
    if (p >= end) {
        return;
    }
    if (m.type == FR_JSON_OBJECT) {
        if (fr_json_member(&m, "domain", &v) == 1 && fr_json_str_eq(&v, "canary")) {
            meta->canary = 1;
        }
        if (fr_json_member(&m, "dt", &v) == 1 && v.type == FR_JSON_STRING) {
            int64_t us;
            if (fr_time_parse_rfc3339(v.start, (size_t)(v.end - v.start), &us) == FR_OK) {
                meta->event_ms = us / 1000;
            }
        }
        if (fr_json_member(&m, "id", &v) == 1 && v.type == FR_JSON_STRING) {
            fr_json_cstr(&v, meta->meta_id, sizeof meta->meta_id);
        }
    }
    if (wiki.type == FR_JSON_STRING && title.type == FR_JSON_STRING) {
        size_t wl = (size_t)(wiki.end - wiki.start), tl = (size_t)(title.end - title.start);
        if (wl + 1 < sizeof meta->key) {
            memcpy(meta->key, wiki.start, wl);
            meta->key[wl] = 0x1f;
            size_t room = sizeof meta->key - wl - 1;
            if (tl > room) {
                tl = room;
            }
            memcpy(meta->key + wl + 1, title.start, tl);
            meta->key_len = wl + 1 + tl;
        }
    }
}

int32_t fr_ingest_partition(const struct fr_conf *conf, const struct fr_ingest_meta *meta)
{
    if (conf->log_partitions <= 1 || !meta->key_len) {
        return 0;
    }
    return (int32_t)(fr_crc32c(0, meta->key, meta->key_len) % (uint32_t)conf->log_partitions);
}

void fr_ingest_log_opts(const struct fr_conf *conf, int64_t fsync_interval_ms, int64_t fsync_bytes,
                        struct fr_log_opts *o)
{
    fr_log_opts_init(o);
    o->partitions = (int32_t)conf->log_partitions;
    o->segment_bytes = conf->log_segment_bytes;
    o->fsync_interval_ms = fsync_interval_ms;
    o->fsync_bytes = fsync_bytes;
    o->retention_ms = conf->log_retention_hours * 3600 * 1000;
    o->retention_bytes = conf->log_retention_bytes;
    if (o->max_record_bytes < conf->ingest_max_event_bytes + 64 * 1024) {
        o->max_record_bytes = conf->ingest_max_event_bytes + 64 * 1024;
    }
    if (o->max_record_bytes > FR_LOG_MAX_FRAME) {
        o->max_record_bytes = FR_LOG_MAX_FRAME; /* ingest.max_event_bytes = its maximum */
    }
    /* The write buffer holds one whole record at least (the log refuses
     * options where it cannot): ingest.max_event_bytes is allowed up to
     * 64 MiB, past the default buffer. */
    if (o->write_buffer_bytes < o->max_record_bytes) {
        o->write_buffer_bytes = o->max_record_bytes;
    }
}
