/*
 * test_sse_oracle.c — a deliberately naive reimplementation of the WHATWG
 * event-stream interpretation, used as the model that src/sse/parser.c is
 * compared with (model-based unit test in test_sse_parser.c, and the
 * libFuzzer target tests/fuzz/fuzz_sse.c). It is not a test by itself: both
 * files #include it. It reads the whole stream at once, byte by byte,
 * follows the spec's steps literally, has no size cap and no zero copy.
 *
 * Both sides write a transcript with the same two functions, so equal
 * transcripts mean equal events (id, type, data: raw bytes with lengths) and
 * equal retry values, in the same order. Single-threaded, test-only.
 */
#include "core/buf.h"
#include "sse/sse.h"

#include <stdint.h>
#include <string.h>

static void tr_event(struct fr_buf *t, const struct fr_sse_event *event)
{
    fr_buf_printf(t, "E%zu:", event->id_len);
    fr_buf_append(t, event->id, event->id_len);
    fr_buf_printf(t, "%zu:", event->type_len);
    fr_buf_append(t, event->type, event->type_len);
    fr_buf_printf(t, "%zu:", event->data_len);
    fr_buf_append(t, event->data, event->data_len);
}

static void tr_retry(struct fr_buf *t, int64_t ms) { fr_buf_printf(t, "R%lld;", (long long)ms); }

struct oracle {
    struct fr_buf data, type, id_buffer, last_id;
    struct fr_buf *out;
};

static int oracle_is(const uint8_t *s, size_t n, const char *name)
{
    return n == strlen(name) && memcmp(s, name, n) == 0;
}

static void oracle_dispatch(struct oracle *o)
{
    /* 1. last event ID string := last event ID buffer */
    o->last_id.len = 0;
    fr_buf_append(&o->last_id, o->id_buffer.data, o->id_buffer.len);
    /* 2. empty data buffer: reset data and type, stop */
    if (o->data.len == 0) {
        o->type.len = 0;
        return;
    }
    /* 3. strip one trailing LF */
    if (o->data.data[o->data.len - 1] == '\n') {
        o->data.len--;
    }
    /* 4-6. the event, type "message" unless the type buffer is set */
    struct fr_sse_event event;
    event.id = o->last_id.len ? (const char *)o->last_id.data : "";
    event.id_len = o->last_id.len;
    event.type = o->type.len ? (const char *)o->type.data : "message";
    event.type_len = o->type.len ? o->type.len : 7;
    event.data = o->data.len ? (const char *)o->data.data : "";
    event.data_len = o->data.len;
    tr_event(o->out, &event);
    o->data.len = 0;
    o->type.len = 0;
}

static void oracle_field(struct oracle *o, const uint8_t *name, size_t nlen, const uint8_t *value,
                         size_t vlen)
{
    if (oracle_is(name, nlen, "event")) {
        o->type.len = 0;
        fr_buf_append(&o->type, value, vlen);
    } else if (oracle_is(name, nlen, "data")) {
        fr_buf_append(&o->data, value, vlen);
        fr_buf_putc(&o->data, '\n');
    } else if (oracle_is(name, nlen, "id")) {
        if (!memchr(value, 0, vlen)) {
            o->id_buffer.len = 0;
            fr_buf_append(&o->id_buffer, value, vlen);
        }
    } else if (oracle_is(name, nlen, "retry")) {
        int digits = vlen > 0;
        int64_t ms = 0;
        for (size_t i = 0; i < vlen; i++) {
            if (value[i] < '0' || value[i] > '9') {
                digits = 0;
                break;
            }
            int d = value[i] - '0';
            ms = ms > (INT64_MAX - d) / 10 ? INT64_MAX : ms * 10 + d;
        }
        if (digits) {
            tr_retry(o->out, ms);
        }
    }
}

static void oracle_line(struct oracle *o, const uint8_t *s, size_t n)
{
    if (n == 0) {
        oracle_dispatch(o);
        return;
    }
    if (s[0] == ':') {
        return;
    }
    for (size_t c = 0; c < n; c++) {
        if (s[c] == ':') {
            const uint8_t *value = s + c + 1;
            size_t vlen = n - c - 1;
            if (vlen && value[0] == ' ') {
                value++;
                vlen--;
            }
            oracle_field(o, s, c, value, vlen);
            return;
        }
    }
    oracle_field(o, s, n, s + n, 0);
}

/* Parse one whole stream; append its transcript to out. */
static void oracle_parse(const uint8_t *s, size_t len, struct fr_buf *out)
{
    struct oracle o;
    fr_buf_init(&o.data, SIZE_MAX / 4);
    fr_buf_init(&o.type, SIZE_MAX / 4);
    fr_buf_init(&o.id_buffer, SIZE_MAX / 4);
    fr_buf_init(&o.last_id, SIZE_MAX / 4);
    o.out = out;
    size_t i = 0;
    if (len >= 3 && s[0] == 0xEF && s[1] == 0xBB && s[2] == 0xBF) {
        i = 3;
    }
    size_t start = i;
    while (i < len) {
        if (s[i] == '\r' || s[i] == '\n') {
            oracle_line(&o, s + start, i - start);
            if (s[i] == '\r' && i + 1 < len && s[i + 1] == '\n') {
                i++;
            }
            start = i + 1;
        }
        i++;
    }
    /* EOF: a partial line and an unfinished event are dropped. */
    fr_buf_free(&o.data);
    fr_buf_free(&o.type);
    fr_buf_free(&o.id_buffer);
    fr_buf_free(&o.last_id);
}
