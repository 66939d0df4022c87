/*
 * parser.c — incremental text/event-stream parser (WHATWG HTML, "Server-sent
 * events", interpretation of the event stream), over bytes.
 *
 * Owns: the per-stream buffers in struct fr_sse_parser (sse_int.h). One
 * thread at a time; no I/O, no globals.
 *
 * Line splitting. A line ends at CRLF, at LF, or at a CR not followed by LF.
 * Each chunk is scanned with memchr for '\n' and for '\r'; the position of
 * the next of each is cached, so every byte is scanned at most once per
 * character whatever the mix of line ends (a CR-only stream does not make
 * the LF search quadratic). A CR as the last byte of a chunk ends its line
 * at once and sets cr_pending, which drops one LF at the start of the next
 * chunk. Complete lines inside a chunk are parsed in place; only a line cut
 * by the chunk end is copied (into `line`).
 *
 * Zero copy. The first `data` value of an event that lies inside the current
 * chunk is only remembered (borrow). If the event ends in the same chunk the
 * callback gets a pointer into the caller's bytes; a second data line, or
 * the end of the chunk, copies it into `data` first.
 *
 * Invariants.
 *   1. event_bytes + line.len <= max at all times; every buffer holds at most
 *      max bytes, so the parser's memory is bounded by about 5 * max.
 *   2. After a blank line, the spec's "last event ID buffer" equals the last
 *      event ID string. We store the buffer only while it differs
 *      (id_pending); discarding an event therefore restores it for free.
 *   3. borrow is NULL whenever feed returns.
 *
 * Oversize. If a line would push event_bytes + line length past max, the
 * event is dropped (its data, type and pending id), stats.oversize counts
 * it, and the parser enters skipping: it reads no line contents, only line
 * ends, until a blank line, which ends the dropped event without dispatch.
 * A `retry:` field already applied before the overflow stays applied.
 *
 * Deliberate differences from the spec (docs/adr/0003-sse-client.md):
 *   - bytes are not UTF-8-decoded: invalid sequences pass through unchanged
 *     instead of becoming U+FFFD (the JSON layer validates UTF-8);
 *   - a new stream (fr_sse_parser_reset) starts its last event ID buffer from
 *     the last event ID string, as Chromium does, so a `:ok` prelude and a
 *     blank line do not clear the resume position after a reconnection.
 */
#include "sse/sse_int.h"

#include "core/err.h"

#include <stdlib.h>
#include <string.h>

static const uint8_t sse_bom[3] = {0xEF, 0xBB, 0xBF};

/* ------------------------------------------------------------ life cycle */

int fr_sse_parser_create(const struct fr_sse_parser_opts *opts, struct fr_sse_parser **out)
{
    *out = NULL;
    if (!opts || !opts->on_event) {
        return FR_EINVAL;
    }
    size_t max = opts->max_event_bytes ? opts->max_event_bytes : FR_SSE_DEFAULT_MAX_EVENT;
    if (max < FR_SSE_MIN_MAX_EVENT || max > SIZE_MAX / 8) {
        return FR_EINVAL;
    }
    struct fr_sse_parser *parser = calloc(1, sizeof *parser);
    if (!parser) {
        return FR_ENOMEM;
    }
    parser->on_event = opts->on_event;
    parser->on_retry = opts->on_retry;
    parser->arg = opts->arg;
    parser->max = max;
    parser->retry_ms = -1;
    fr_buf_init(&parser->line, max);
    fr_buf_init(&parser->data, max);
    fr_buf_init(&parser->type, max);
    fr_buf_init(&parser->id, max);
    fr_buf_init(&parser->last_id, max);
    *out = parser;
    return FR_OK;
}

void fr_sse_parser_destroy(struct fr_sse_parser *parser)
{
    if (!parser) {
        return;
    }
    fr_buf_free(&parser->line);
    fr_buf_free(&parser->data);
    fr_buf_free(&parser->type);
    fr_buf_free(&parser->id);
    fr_buf_free(&parser->last_id);
    free(parser);
}

/* Forget the current event: data, type, pending id, size. */
static void sse_drop_event(struct fr_sse_parser *parser)
{
    parser->ndata = 0;
    parser->borrow = NULL;
    parser->borrow_len = 0;
    parser->data.len = 0;
    parser->type.len = 0;
    parser->id_pending = 0;
    parser->event_bytes = 0;
}

void fr_sse_parser_reset(struct fr_sse_parser *parser)
{
    if (parser->line.len || parser->event_bytes || parser->ndata || parser->skipping ||
        (parser->bom > 0 && parser->bom < SSE_BOM_DONE)) {
        parser->stats.truncated++;
    }
    sse_drop_event(parser);
    parser->line.len = 0;
    parser->skipping = 0;
    parser->skip_nonempty = 0;
    parser->cr_pending = 0;
    parser->bom = 0;
}

const char *fr_sse_parser_last_id(const struct fr_sse_parser *parser)
{
    return parser->last_id.len ? (const char *)parser->last_id.data : "";
}

/* Store len bytes as the last event ID string, NUL-terminated. */
static int sse_store_last_id(struct fr_sse_parser *parser, const void *id, size_t len)
{
    parser->last_id.len = 0;
    int rc = fr_buf_append(&parser->last_id, id, len);
    if (rc < 0) {
        return rc;
    }
    fr_buf_cstr(&parser->last_id);
    return FR_OK;
}

int fr_sse_parser_set_last_id(struct fr_sse_parser *parser, const char *id, size_t len)
{
    int rc = sse_store_last_id(parser, id, len);
    if (rc == FR_OK) {
        parser->id_pending = 0;
    }
    return rc;
}

int64_t fr_sse_parser_retry_ms(const struct fr_sse_parser *parser)
{
    return parser->retry_ms;
}

void fr_sse_parser_stats(const struct fr_sse_parser *parser, struct fr_sse_parser_stats *out)
{
    *out = parser->stats;
}

/* ---------------------------------------------------------------- fields */

/* A blank line: the spec's "dispatch the event" steps. */
static int sse_dispatch(struct fr_sse_parser *parser)
{
    if (parser->id_pending) {
        /* last event ID string := buffer. Swapping is enough: with
         * id_pending clear, the buffer is by definition the string. */
        struct fr_buf tmp = parser->last_id;
        parser->last_id = parser->id;
        parser->id = tmp;
        parser->id_pending = 0;
    }
    parser->event_bytes = 0;
    if (parser->ndata == 0) {
        parser->type.len = 0;
        return FR_OK;
    }
    struct fr_sse_event event;
    event.id = fr_sse_parser_last_id(parser);
    event.id_len = parser->last_id.len;
    if (parser->type.len) {
        event.type = fr_buf_cstr(&parser->type);
        event.type_len = parser->type.len;
    } else {
        event.type = "message";
        event.type_len = 7;
    }
    if (parser->borrow) {
        event.data = (const char *)parser->borrow;
        event.data_len = parser->borrow_len;
    } else {
        event.data = parser->data.len ? (const char *)parser->data.data : "";
        event.data_len = parser->data.len;
    }
    /* The event's pointers stay valid: resetting lengths frees nothing. */
    parser->ndata = 0;
    parser->borrow = NULL;
    parser->data.len = 0;
    parser->type.len = 0;
    parser->stats.events++;
    return parser->on_event(parser->arg, &event);
}

/* Copy a borrowed data value into the data buffer (invariant 3). */
static int sse_unborrow(struct fr_sse_parser *parser)
{
    const uint8_t *value = parser->borrow;
    parser->borrow = NULL;
    return fr_buf_append(&parser->data, value, parser->borrow_len);
}

/* A `data` field: append the value and a LF (the LF is written before the
 * next value instead, so the buffer never needs trimming). */
static int sse_add_data(struct fr_sse_parser *parser, const uint8_t *value, size_t len,
                        int in_chunk)
{
    int rc;
    if (parser->ndata == 0 && in_chunk) {
        parser->borrow = value;
        parser->borrow_len = len;
        parser->ndata = 1;
        return FR_OK;
    }
    if (parser->borrow && (rc = sse_unborrow(parser)) < 0) {
        return rc;
    }
    if (parser->ndata && (rc = fr_buf_putc(&parser->data, '\n')) < 0) {
        return rc;
    }
    parser->ndata++;
    return fr_buf_append(&parser->data, value, len);
}

/* `retry`: only ASCII digits, at least one; saturates instead of wrapping. */
static void sse_set_retry(struct fr_sse_parser *parser, const uint8_t *value, size_t len)
{
    if (len == 0) {
        return;
    }
    int64_t ms = 0;
    for (size_t i = 0; i < len; i++) {
        if (value[i] < '0' || value[i] > '9') {
            return;
        }
        int digit = value[i] - '0';
        ms = ms > (INT64_MAX - digit) / 10 ? INT64_MAX : ms * 10 + digit;
    }
    parser->retry_ms = ms;
    parser->stats.retries++;
    if (parser->on_retry) {
        parser->on_retry(parser->arg, ms);
    }
}

/* Enter skipping after the current event grew past the cap. */
static void sse_oversize(struct fr_sse_parser *parser, int mid_line)
{
    sse_drop_event(parser);
    parser->line.len = 0;
    parser->skipping = 1;
    parser->skip_nonempty = (uint8_t)mid_line;
    parser->stats.oversize++;
}

/* One complete line without its end. in_chunk: the bytes belong to the
 * caller's chunk (and may be borrowed until the chunk ends). */
static int sse_line(struct fr_sse_parser *parser, const uint8_t *s, size_t n, int in_chunk)
{
    parser->stats.lines++;
    if (n == 0) {
        return sse_dispatch(parser);
    }
    if (n > parser->max - parser->event_bytes) {
        sse_oversize(parser, 0);
        return FR_OK;
    }
    parser->event_bytes += n;
    if (s[0] == ':') {
        parser->stats.comments++;
        return FR_OK;
    }
    const uint8_t *colon = memchr(s, ':', n);
    size_t name_len = colon ? (size_t)(colon - s) : n;
    const uint8_t *value = colon ? colon + 1 : s + n;
    size_t len = colon ? n - name_len - 1 : 0;
    if (len && value[0] == ' ') {
        value++;
        len--;
    }
    switch (name_len) {
    case 4:
        if (memcmp(s, "data", 4) == 0) {
            return sse_add_data(parser, value, len, in_chunk);
        }
        break;
    case 2:
        if (memcmp(s, "id", 2) == 0 && !memchr(value, 0, len)) {
            parser->id.len = 0;
            int rc = fr_buf_append(&parser->id, value, len);
            if (rc < 0) {
                return rc;
            }
            fr_buf_cstr(&parser->id);
            parser->id_pending = 1;
        }
        break;
    case 5:
        if (memcmp(s, "event", 5) == 0) {
            parser->type.len = 0;
            return fr_buf_append(&parser->type, value, len);
        }
        if (memcmp(s, "retry", 5) == 0) {
            sse_set_retry(parser, value, len);
        }
        break;
    default:
        break; /* unknown field: ignored */
    }
    return FR_OK;
}

/* A line end was found; s[0..n) is the part of the line in this chunk. */
static int sse_line_end(struct fr_sse_parser *parser, const uint8_t *s, size_t n)
{
    if (parser->skipping) {
        parser->stats.lines++;
        if (n == 0 && !parser->skip_nonempty) {
            parser->skipping = 0; /* the blank line that ends the dropped event */
            parser->event_bytes = 0;
        }
        parser->skip_nonempty = 0;
        return FR_OK;
    }
    if (parser->line.len == 0) {
        return sse_line(parser, s, n, 1);
    }
    if (n > parser->max - parser->event_bytes - parser->line.len) {
        parser->stats.lines++;
        sse_oversize(parser, 0);
        return FR_OK;
    }
    int rc = fr_buf_append(&parser->line, s, n);
    if (rc == FR_OK) {
        rc = sse_line(parser, parser->line.data, parser->line.len, 0);
    }
    parser->line.len = 0;
    return rc;
}

/* The chunk ended inside a line: keep the piece (or skip it). */
static int sse_line_part(struct fr_sse_parser *parser, const uint8_t *s, size_t n)
{
    if (parser->skipping) {
        parser->skip_nonempty = 1;
        return FR_OK;
    }
    if (n > parser->max - parser->event_bytes - parser->line.len) {
        sse_oversize(parser, 1);
        return FR_OK;
    }
    return fr_buf_append(&parser->line, s, n);
}

/* --------------------------------------------------------------- scanning */

static size_t sse_find(const uint8_t *buf, size_t from, size_t len, int c)
{
    const uint8_t *hit = memchr(buf + from, c, len - from);
    return hit ? (size_t)(hit - buf) : len;
}

static int sse_scan(struct fr_sse_parser *parser, const uint8_t *buf, size_t len)
{
    size_t i = 0;
    int rc = FR_OK;
    if (parser->cr_pending && len) {
        parser->cr_pending = 0;
        if (buf[0] == '\n') {
            i = 1;
        }
    }
    size_t lf = sse_find(buf, i, len, '\n');
    size_t cr = sse_find(buf, i, len, '\r');
    while (i < len) {
        if (lf < i) {
            lf = sse_find(buf, i, len, '\n');
        }
        if (cr < i) {
            cr = sse_find(buf, i, len, '\r');
        }
        size_t eol = lf < cr ? lf : cr;
        if (eol == len) {
            break;
        }
        if ((rc = sse_line_end(parser, buf + i, eol - i)) < 0) {
            goto cleanup;
        }
        if (buf[eol] == '\r') {
            if (eol + 1 == len) {
                parser->cr_pending = 1;
            } else if (buf[eol + 1] == '\n') {
                eol++;
            }
        }
        i = eol + 1;
    }
    if (i < len && (rc = sse_line_part(parser, buf + i, len - i)) < 0) {
        goto cleanup;
    }
    if (parser->borrow) {
        rc = sse_unborrow(parser);
    }
cleanup:
    if (rc < 0) {
        /* Leave no pointer into the caller's bytes and no half event. */
        sse_drop_event(parser);
        parser->line.len = 0;
    }
    return rc;
}

int fr_sse_parser_feed(struct fr_sse_parser *parser, const void *bytes, size_t len)
{
    const uint8_t *s = bytes;
    parser->stats.bytes += len;
    while (parser->bom < SSE_BOM_DONE && len) {
        if (s[0] == sse_bom[parser->bom]) {
            parser->bom++;
            s++;
            len--;
            continue;
        }
        /* Not a BOM: the bytes that looked like one are content. */
        size_t matched = parser->bom;
        parser->bom = SSE_BOM_DONE;
        int rc = sse_scan(parser, sse_bom, matched);
        if (rc < 0) {
            return rc;
        }
    }
    return len ? sse_scan(parser, s, len) : FR_OK;
}
