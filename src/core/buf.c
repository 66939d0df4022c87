/*
 * buf.c — capped growable buffers. Growth doubles the allocation, clamped to
 * the cap, so appends are amortised O(1) and never exceed cap + 1 bytes of
 * memory (the +1 is room for fr_buf_cstr's terminator).
 */
#include "core/buf.h"

#include "core/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fr_buf_init(struct fr_buf *buf, size_t cap)
{
    buf->data = NULL;
    buf->len = 0;
    buf->alloc = 0;
    buf->cap = cap;
}

void fr_buf_free(struct fr_buf *buf)
{
    if (!buf) {
        return;
    }
    free(buf->data);
    buf->data = NULL;
    buf->len = 0;
    buf->alloc = 0;
}

int fr_buf_reserve(struct fr_buf *buf, size_t extra)
{
    if (extra > buf->cap || buf->len > buf->cap - extra) {
        return FR_ETOOBIG;
    }
    size_t need = buf->len + extra + 1;
    if (need <= buf->alloc) {
        return FR_OK;
    }
    size_t next = buf->alloc ? buf->alloc : 256;
    while (next < need) {
        next *= 2;
    }
    if (next > buf->cap + 1) {
        next = buf->cap + 1;
    }
    uint8_t *data = realloc(buf->data, next);
    if (!data) {
        return FR_ENOMEM;
    }
    buf->data = data;
    buf->alloc = next;
    return FR_OK;
}

int fr_buf_append(struct fr_buf *buf, const void *data, size_t len)
{
    int rc = fr_buf_reserve(buf, len);
    if (rc < 0) {
        return rc;
    }
    if (len) {
        memcpy(buf->data + buf->len, data, len);
    }
    buf->len += len;
    return FR_OK;
}

int fr_buf_putc(struct fr_buf *buf, uint8_t c)
{
    return fr_buf_append(buf, &c, 1);
}

int fr_buf_puts(struct fr_buf *buf, const char *s)
{
    return fr_buf_append(buf, s, strlen(s));
}

int fr_buf_printf(struct fr_buf *buf, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return FR_EINVAL;
    }
    if ((size_t)n < sizeof small) {
        return fr_buf_append(buf, small, (size_t)n);
    }
    int rc = fr_buf_reserve(buf, (size_t)n);
    if (rc < 0) {
        return rc;
    }
    va_start(ap, fmt);
    vsnprintf((char *)buf->data + buf->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    buf->len += (size_t)n;
    return FR_OK;
}

int fr_buf_json_str(struct fr_buf *buf, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    /* Worst case every byte becomes \u00XX. */
    int rc = fr_buf_reserve(buf, len * 6 + 2);
    if (rc < 0) {
        return rc;
    }
    uint8_t *out = buf->data + buf->len;
    *out++ = '"';
    for (size_t i = 0; i < len; i++) {
        uint8_t c = (uint8_t)s[i];
        switch (c) {
        case '"': *out++ = '\\'; *out++ = '"'; break;
        case '\\': *out++ = '\\'; *out++ = '\\'; break;
        case '\n': *out++ = '\\'; *out++ = 'n'; break;
        case '\r': *out++ = '\\'; *out++ = 'r'; break;
        case '\t': *out++ = '\\'; *out++ = 't'; break;
        case '\b': *out++ = '\\'; *out++ = 'b'; break;
        case '\f': *out++ = '\\'; *out++ = 'f'; break;
        default:
            if (c < 0x20) {
                *out++ = '\\'; *out++ = 'u'; *out++ = '0'; *out++ = '0';
                *out++ = (uint8_t)hex[c >> 4];
                *out++ = (uint8_t)hex[c & 15];
            } else {
                *out++ = c;
            }
        }
    }
    *out++ = '"';
    buf->len = (size_t)(out - buf->data);
    return FR_OK;
}

const char *fr_buf_cstr(struct fr_buf *buf)
{
    if (!buf->data) {
        if (fr_buf_reserve(buf, 0) < 0) {
            return "";
        }
    }
    buf->data[buf->len] = 0;
    return (const char *)buf->data;
}

void fr_buf_consume(struct fr_buf *buf, size_t n)
{
    if (n >= buf->len) {
        buf->len = 0;
        return;
    }
    memmove(buf->data, buf->data + n, buf->len - n);
    buf->len -= n;
}
