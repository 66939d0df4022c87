/*
 * sse_int.h — private to src/sse and its tests: the parser's state, so the
 * unit tests can check the memory bound (every buffer's allocation stays at
 * or below max_event_bytes + 1) without an accessor in the public header.
 * Nothing outside src/sse, tests/unit/test_sse*.c and tests/fuzz/fuzz_sse.c
 * includes this file.
 */
#ifndef FR_SSE_INT_H
#define FR_SSE_INT_H

#include "core/buf.h"
#include "sse/sse.h"

#include <stdint.h>

/* Stream-start BOM matching: 0..2 = bytes of EF BB BF matched so far, 3 =
 * the BOM question is settled for this stream. */
enum { SSE_BOM_DONE = 3 };

struct fr_sse_parser {
    fr_sse_event_fn on_event;
    fr_sse_retry_fn on_retry;
    void *arg;
    size_t max; /* max_event_bytes: cap on event_bytes + a partial line */

    /* Stream state (cleared by fr_sse_parser_reset). */
    uint8_t bom;           /* see SSE_BOM_DONE */
    uint8_t cr_pending;    /* the previous chunk ended with a CR line end: drop one LF */
    uint8_t skipping;      /* dropping an oversize event until a blank line */
    uint8_t skip_nonempty; /* while skipping: the current partial line has bytes */
    uint8_t id_pending;    /* id holds an `id:` value not yet dispatched */
    size_t event_bytes;    /* bytes of the current event's complete lines */
    size_t ndata;          /* `data` fields in the current event */
    const uint8_t *borrow; /* the event's only data value, still in the caller's chunk */
    size_t borrow_len;

    struct fr_buf line;    /* a line split across chunks, without its end */
    struct fr_buf data;    /* data values joined by LF (when not borrowed) */
    struct fr_buf type;    /* the event type buffer */
    struct fr_buf id;      /* the spec's last event ID buffer, when id_pending */
    struct fr_buf last_id; /* the last event ID string (survives reset) */
    int64_t retry_ms;      /* -1 until a valid retry: field */

    struct fr_sse_parser_stats stats;
};

#endif
