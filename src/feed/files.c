/*
 * files.c — recorded events as a stream. Files are read whole at open and
 * split into records, in file order (the ingest order):
 *
 *   - a JSON value on one line is kept byte for byte (NDJSON);
 *   - a JSON value spread over lines (pretty-printed, like the ircstream
 *     fixtures) is compacted: whitespace outside strings removed, so it fits
 *     one SSE data line;
 *   - a line that is not JSON is kept as it is (a recorded bad line is
 *     served bad, for the ingest's quality gate to catch); empty lines are
 *     skipped, a trailing CR is dropped.
 *
 * Each record's Kafka timestamp is ms(meta.dt) where that parses, raised to
 * the previous record's so the sequence is monotone (the recorded order is
 * not always time order); records before the first parseable date take the
 * first one, and a file set without any takes fallback_ms.
 *
 * Immutable after load: thread-safe to read.
 */
#include "feed/feed_int.h"

#include "core/clock.h"
#include "core/err.h"
#include "core/fsutil.h"
#include "core/json.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One record costs 32 bytes beside its text (offsets, Kafka ts, meta.id span). */
static_assert(sizeof(struct fr_feed_rec) == 32, "struct fr_feed_rec layout");

#define FILES_MAX_BYTES ((size_t)2 << 30)
#define FILES_MAX_RECORD ((size_t)64 << 20)

/* Copy one JSON value [p, end) without insignificant whitespace. */
static int files_compact(struct fr_buf *out, const char *p, const char *end)
{
    int in_str = 0;
    const char *run = p;
    for (const char *q = p; q < end; q++) {
        char c = *q;
        if (in_str) {
            if (c == '\\') {
                q++;
            } else if (c == '"') {
                in_str = 0;
            }
            continue;
        }
        if (c == '"') {
            in_str = 1;
        } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            int rc = fr_buf_append(out, run, (size_t)(q - run));
            if (rc < 0) {
                return rc;
            }
            run = q + 1;
        }
    }
    return fr_buf_append(out, run, (size_t)(end - run));
}

/* Fill ts / id / canary of a record from its JSON. */
static void files_inspect(struct fr_feed_files *files, struct fr_feed_rec *rec, int64_t *ts)
{
    const char *s = (const char *)files->text.data + rec->off;
    struct fr_json_val obj, meta, v;
    *ts = INT64_MIN;
    const char *end = fr_json_value(fr_json_ws(s, s + rec->len), s + rec->len, &obj);
    if (!end || obj.type != FR_JSON_OBJECT || fr_json_member(&obj, "meta", &meta) != 1 ||
        meta.type != FR_JSON_OBJECT) {
        return;
    }
    if (fr_json_member(&meta, "dt", &v) == 1 && v.type == FR_JSON_STRING) {
        int64_t us;
        if (fr_time_parse_rfc3339(v.start, (size_t)(v.end - v.start), &us) == FR_OK) {
            *ts = us >= 0 ? us / 1000 : -((-us + 999) / 1000);
        }
    }
    if (fr_json_member(&meta, "id", &v) == 1 && v.type == FR_JSON_STRING && v.end - v.start > 0 &&
        v.end - v.start < 40 && !memchr(v.start, '\\', (size_t)(v.end - v.start))) {
        rec->id_off = (uint32_t)(v.start - s);
        rec->id_len = (uint8_t)(v.end - v.start);
    }
    if (fr_json_member(&meta, "domain", &v) == 1 && fr_json_str_eq(&v, "canary")) {
        rec->canary = 1;
    }
}

static int files_add(struct fr_feed_files *files, size_t *alloc, int64_t off, size_t len)
{
    if ((size_t)files->n == *alloc) {
        size_t next = *alloc ? *alloc * 2 : 1024;
        struct fr_feed_rec *recs = realloc(files->recs, next * sizeof *recs);
        if (!recs) {
            return FR_ENOMEM;
        }
        files->recs = recs;
        *alloc = next;
    }
    struct fr_feed_rec *rec = &files->recs[files->n++];
    memset(rec, 0, sizeof *rec);
    rec->off = off;
    rec->len = (uint32_t)len;
    return FR_OK;
}

static int files_split(struct fr_feed_files *files, size_t *alloc, const char *p, const char *end,
                       int64_t limit)
{
    int rc = FR_OK;
    while (rc == FR_OK && files->n < limit) {
        p = fr_json_ws(p, end);
        if (p >= end) {
            break;
        }
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) {
            eol = end;
        }
        struct fr_json_val v;
        const char *after = fr_json_value(p, end, &v);
        int64_t off = (int64_t)files->text.len;
        /* The value must end its line (trailing blanks allowed). */
        const char *q = after;
        while (q && q < end && (*q == ' ' || *q == '\t' || *q == '\r')) {
            q++;
        }
        int ends_line = after && (q == end || *q == '\n');
        if (ends_line && (after <= eol || v.type == FR_JSON_OBJECT || v.type == FR_JSON_ARRAY)) {
            if (after - p > (ptrdiff_t)FILES_MAX_RECORD) {
                return FR_ETOOBIG;
            }
            rc = memchr(p, '\n', (size_t)(after - p))
                     ? files_compact(&files->text, p, after)
                     : fr_buf_append(&files->text, p, (size_t)(after - p));
            p = after;
        } else {
            const char *stop = eol;
            while (stop > p && stop[-1] == '\r') {
                stop--;
            }
            if (stop - p > (ptrdiff_t)FILES_MAX_RECORD) {
                return FR_ETOOBIG;
            }
            rc = fr_buf_append(&files->text, p, (size_t)(stop - p));
            p = eol;
        }
        if (rc == FR_OK) {
            rc = files_add(files, alloc, off, files->text.len - (size_t)off);
        }
    }
    return rc;
}

int fr_feed_files_load(struct fr_feed_files *files, const char *const *paths, size_t npaths,
                       int64_t limit, int64_t fallback_ms, char *err, size_t errlen)
{
    memset(files, 0, sizeof *files);
    fr_buf_init(&files->text, FILES_MAX_BYTES);
    size_t alloc = 0;
    struct fr_buf raw;
    fr_buf_init(&raw, FILES_MAX_BYTES);
    int rc = FR_OK;
    for (size_t i = 0; i < npaths && files->n < limit; i++) {
        fr_buf_reset(&raw);
        rc = fr_fs_read_file(paths[i], &raw);
        if (rc < 0) {
            snprintf(err, errlen, "%s: %s", paths[i], fr_strerror(rc));
            goto cleanup;
        }
        rc = files_split(files, &alloc, (const char *)raw.data, (const char *)raw.data + raw.len,
                         limit);
        if (rc < 0) {
            snprintf(err, errlen, "%s: %s", paths[i], fr_strerror(rc));
            goto cleanup;
        }
    }
    if (files->n == 0) {
        snprintf(err, errlen, "no events in the given files");
        rc = FR_ECONFIG;
        goto cleanup;
    }
    int64_t first = INT64_MIN;
    for (int64_t k = 0; k < files->n; k++) {
        int64_t ts;
        files_inspect(files, &files->recs[k], &ts);
        files->recs[k].ts_ms = ts;
        if (first == INT64_MIN && ts != INT64_MIN) {
            first = ts;
        }
    }
    int64_t prev = first != INT64_MIN ? first : fallback_ms;
    for (int64_t k = 0; k < files->n; k++) {
        int64_t ts = files->recs[k].ts_ms;
        prev = ts != INT64_MIN && ts > prev ? ts : prev;
        files->recs[k].ts_ms = prev;
    }
cleanup:
    fr_buf_free(&raw);
    if (rc < 0) {
        fr_feed_files_free(files);
    }
    return rc;
}

void fr_feed_files_free(struct fr_feed_files *files)
{
    if (!files) {
        return;
    }
    fr_buf_free(&files->text);
    free(files->recs);
    files->recs = NULL;
    files->n = 0;
}
