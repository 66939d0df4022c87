/*
 * buf.h — growable byte buffers with a hard cap (after curl's dynbuf).
 *
 * A struct fr_buf owns its memory; fr_buf_free releases it and leaves the
 * buffer empty and reusable. Every append checks the cap first and fails
 * with FR_ETOOBIG without changing the contents, so no producer can grow a
 * buffer without bound. Not thread-safe: one owner at a time.
 */
#ifndef FR_BUF_H
#define FR_BUF_H

#include <stddef.h>
#include <stdint.h>

struct fr_buf {
    uint8_t *data; /* owned; NULL while empty and unallocated */
    size_t len;    /* bytes in use */
    size_t alloc;  /* bytes allocated */
    size_t cap;    /* hard maximum for len */
};

/* Initialise an empty buffer that may hold at most cap bytes. Allocates nothing. */
void fr_buf_init(struct fr_buf *buf, size_t cap);
/* Release the memory; the buffer is empty and keeps its cap. Accepts NULL. */
void fr_buf_free(struct fr_buf *buf);
/* Forget the contents but keep the allocation. */
static inline void fr_buf_reset(struct fr_buf *buf) { buf->len = 0; }
/* Make room for extra more bytes. FR_ETOOBIG past the cap, FR_ENOMEM. */
int fr_buf_reserve(struct fr_buf *buf, size_t extra);
int fr_buf_append(struct fr_buf *buf, const void *data, size_t len);
int fr_buf_putc(struct fr_buf *buf, uint8_t c);
int fr_buf_puts(struct fr_buf *buf, const char *s);
/* printf-style append. */
int fr_buf_printf(struct fr_buf *buf, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Append s as a JSON string literal (with quotes), escaping as RFC 8259
 * requires. Bytes >= 0x80 are copied as they are. */
int fr_buf_json_str(struct fr_buf *buf, const char *s, size_t len);
/* Ensure data[len] == 0 (not counted in len) and return data as a string. */
const char *fr_buf_cstr(struct fr_buf *buf);
/* Drop the first n bytes, moving the rest to the front. */
void fr_buf_consume(struct fr_buf *buf, size_t n);

#endif
