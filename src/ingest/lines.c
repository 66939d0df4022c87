/*
 * lines.c — the pure parts of `ingest --file` (file.h): the `file_pos`
 * header value and the line splitter. No I/O, no threads.
 *
 * Splitter buffer (cap = max_line + chunk + 2):
 *
 *   buf: [ consumed | current line ... scan | unscanned input | free ]
 *          0        start            scan     ...       len      cap
 *
 * Invariants: start <= scan <= len <= cap; base + i is the stream offset
 * of buf[i]; outside discarding, len - start <= max_line + 1 after a call
 * to next that returned 0 (else the line is already known to be oversize),
 * so compaction in space() always leaves room for chunk bytes.
 */
#include "ingest/file.h"

#include "core/err.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fr_ingest_fpos_format(const struct fr_ingest_fpos *pos, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%" PRId64 " %016" PRIx64 " %" PRId64 " %s", pos->size, pos->head,
                     pos->offset, pos->name);
    if (n < 0 || (size_t)n >= cap) {
        return FR_ETOOBIG;
    }
    return n;
}

/* One signed decimal field followed by a space; advances *p. */
static int fpos_int(const char **p, const char *end, int64_t *out)
{
    const char *s = *p;
    int neg = 0;
    if (s < end && *s == '-') {
        neg = 1;
        s++;
    }
    if (s >= end || *s < '0' || *s > '9') {
        return FR_ECORRUPT;
    }
    int64_t v = 0;
    while (s < end && *s >= '0' && *s <= '9') {
        if (v > (INT64_MAX - 9) / 10) {
            return FR_ECORRUPT;
        }
        v = v * 10 + (*s++ - '0');
    }
    if (s >= end || *s != ' ') {
        return FR_ECORRUPT;
    }
    *out = neg ? -v : v;
    *p = s + 1;
    return FR_OK;
}

int fr_ingest_fpos_parse(const void *value, size_t len, struct fr_ingest_fpos *pos)
{
    const char *p = value, *end = p + len;
    memset(pos, 0, sizeof *pos);
    if (fpos_int(&p, end, &pos->size) < 0 || pos->size < -1) {
        return FR_ECORRUPT;
    }
    if (end - p < 17 || p[16] != ' ') {
        return FR_ECORRUPT;
    }
    for (int i = 0; i < 16; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) {
            return FR_ECORRUPT;
        }
        pos->head = pos->head << 4 | (uint64_t)d;
    }
    p += 17;
    if (fpos_int(&p, end, &pos->offset) < 0 || pos->offset < 0) {
        return FR_ECORRUPT;
    }
    size_t nl = (size_t)(end - p);
    if (nl == 0 || nl >= sizeof pos->name || memchr(p, 0, nl)) {
        return FR_ECORRUPT;
    }
    memcpy(pos->name, p, nl);
    pos->name[nl] = 0;
    return FR_OK;
}

int fr_ingest_lines_init(struct fr_ingest_lines *lines, size_t max_line, size_t chunk)
{
    memset(lines, 0, sizeof *lines);
    lines->max_line = max_line;
    lines->cap = max_line + chunk + 2;
    lines->buf = malloc(lines->cap);
    return lines->buf ? FR_OK : FR_ENOMEM;
}

void fr_ingest_lines_free(struct fr_ingest_lines *lines)
{
    free(lines->buf);
    lines->buf = NULL;
}

void fr_ingest_lines_space(struct fr_ingest_lines *lines, uint8_t **at, size_t *room)
{
    if (lines->start > 0) {
        size_t keep = lines->len - lines->start;
        memmove(lines->buf, lines->buf + lines->start, keep);
        lines->base += lines->start;
        lines->scan -= lines->start;
        lines->len = keep;
        lines->start = 0;
    }
    *at = lines->buf + lines->len;
    *room = lines->cap - lines->len;
}

void fr_ingest_lines_added(struct fr_ingest_lines *lines, size_t n)
{
    lines->len += n;
}

int fr_ingest_lines_next(struct fr_ingest_lines *lines, int eof, struct fr_ingest_line *line)
{
    memset(line, 0, sizeof *line);
    uint8_t *nl = lines->scan < lines->len
                      ? memchr(lines->buf + lines->scan, '\n', lines->len - lines->scan)
                      : NULL;
    if (lines->discarding) {
        /* Drop everything up to the end of the oversize line. */
        size_t upto = nl ? (size_t)(nl - lines->buf) : lines->len;
        lines->discard_len += upto - lines->start;
        if (upto > lines->start) {
            lines->discard_cr = lines->buf[upto - 1] == '\r';
        }
        lines->start = lines->scan = nl ? upto + 1 : lines->len;
        if (!nl && !eof) {
            return 0;
        }
        lines->discarding = 0;
        if (lines->discard_cr) {
            lines->discard_len--; /* its CRLF's '\r' is not part of it */
        }
        line->oversize = 1;
        line->offset = lines->discard_off;
        line->len = (size_t)lines->discard_len;
        return 1;
    }
    size_t end;
    if (nl) {
        end = (size_t)(nl - lines->buf);
    } else if (eof && lines->start < lines->len) {
        end = lines->len; /* a final line without '\n' */
    } else {
        lines->scan = lines->len;
        if (lines->len - lines->start > lines->max_line + 1) {
            /* No '\n' within max_line + 1 bytes (room for a '\r'): oversize. */
            lines->discarding = 1;
            lines->discard_off = lines->base + lines->start;
            lines->discard_len = lines->len - lines->start;
            lines->discard_cr = lines->buf[lines->len - 1] == '\r';
            lines->start = lines->scan = lines->len;
        }
        return 0;
    }
    size_t len = end - lines->start;
    const uint8_t *data = lines->buf + lines->start;
    if (len > 0 && data[len - 1] == '\r') {
        len--;
    }
    line->offset = lines->base + lines->start;
    line->len = len;
    if (len > lines->max_line) {
        line->oversize = 1;
    } else {
        line->data = data;
    }
    lines->start = lines->scan = nl ? end + 1 : end;
    return 1;
}
