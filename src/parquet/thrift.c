/*
 * thrift.c — the Thrift compact protocol, as much of it as Parquet's footer
 * and page headers use. The encoder appends to a capped fr_buf with a sticky
 * error; the decoder never reads past its end, limits nesting to
 * PQ_THRIFT_DEPTH and reports every list count as at most the bytes left, so
 * a caller that allocates per element allocates no more than the input size.
 * Pure functions over caller memory: any thread.
 *
 * Byte formats (THRIFT-CP, apache/thrift doc/specs/thrift-compact-protocol.md):
 *
 *   value          bytes
 *   -------------  ---------------------------------------------------------
 *   i8             1 raw byte
 *   i16, i32, i64  zigzag (n << 1) ^ (n >> 63), then ULEB128 (7 bits a byte,
 *                  low group first, high bit = more); at most 3 / 5 / 10 bytes
 *   double         8 bytes, IEEE 754, little-endian
 *   binary         ULEB128 byte length, then the bytes
 *   bool field     no value bytes: the type nibble is 1 (true) or 2 (false)
 *   bool element   1 byte: 1 true, anything else false
 *
 *   field header   1 byte  dddd tttt   d = id delta 1..15 from the previous
 *                                      field of the same struct, t = type
 *                  or      0000 tttt   followed by the id as zigzag i16
 *   stop           1 byte  0x00        ends a struct
 *   list / set     1 byte  ssss tttt   s = size 0..14, t = element type
 *                  or      1111 tttt   followed by the size as ULEB128
 *   map            ULEB128 size; if size > 0 one byte kkkk vvvv
 *   uuid           16 raw bytes
 *
 *   type ids: 1 TRUE 2 FALSE 3 I8 4 I16 5 I32 6 I64 7 DOUBLE 8 BINARY
 *             9 LIST 10 SET 11 MAP 12 STRUCT 13 UUID
 */
#include "parquet/parquet_int.h"

static_assert(sizeof(double) == 8, "doubles are 8 bytes on the wire");
static_assert(PQ_T_STRUCT == 12 && PQ_T_LIST == 9, "compact protocol type ids");

/* ---------------------------------------------------------------- encoder */

void pq_tw_init(struct pq_tw *tw, struct fr_buf *buf)
{
    tw->buf = buf;
    tw->rc = FR_OK;
    tw->depth = 0;
    tw->last[0] = 0;
}

static void tw_bytes(struct pq_tw *tw, const void *p, size_t len)
{
    if (tw->rc == FR_OK) {
        tw->rc = fr_buf_append(tw->buf, p, len);
    }
}

static void tw_uleb(struct pq_tw *tw, uint64_t v)
{
    uint8_t tmp[10];
    tw_bytes(tw, tmp, pq_uleb_put(tmp, v));
}

static void tw_header(struct pq_tw *tw, int16_t id, enum pq_ttype type)
{
    if (tw->depth < 1) {
        if (tw->rc == FR_OK) {
            tw->rc = FR_ESTATE;
        }
        return;
    }
    int16_t *last = &tw->last[tw->depth - 1];
    int delta = id - *last;
    if (delta > 0 && delta <= 15) {
        uint8_t b = (uint8_t)(delta << 4 | type);
        tw_bytes(tw, &b, 1);
    } else {
        uint8_t b = (uint8_t)type;
        tw_bytes(tw, &b, 1);
        tw_uleb(tw, pq_zigzag64(id));
    }
    *last = id;
}

void pq_tw_i32(struct pq_tw *tw, int16_t id, int32_t v)
{
    tw_header(tw, id, PQ_T_I32);
    tw_uleb(tw, pq_zigzag64(v));
}

void pq_tw_i64(struct pq_tw *tw, int16_t id, int64_t v)
{
    tw_header(tw, id, PQ_T_I64);
    tw_uleb(tw, pq_zigzag64(v));
}

void pq_tw_i16(struct pq_tw *tw, int16_t id, int16_t v)
{
    tw_header(tw, id, PQ_T_I16);
    tw_uleb(tw, pq_zigzag64(v));
}

void pq_tw_bool(struct pq_tw *tw, int16_t id, bool v)
{
    tw_header(tw, id, v ? PQ_T_TRUE : PQ_T_FALSE);
}

void pq_tw_double(struct pq_tw *tw, int16_t id, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, 8);
    uint8_t le[8];
    for (int i = 0; i < 8; i++) {
        le[i] = (uint8_t)(bits >> (8 * i));
    }
    tw_header(tw, id, PQ_T_DOUBLE);
    tw_bytes(tw, le, 8);
}

void pq_tw_bin(struct pq_tw *tw, int16_t id, const void *data, size_t len)
{
    tw_header(tw, id, PQ_T_BINARY);
    pq_tw_elem_bin(tw, data, len);
}

void pq_tw_begin(struct pq_tw *tw)
{
    if (tw->depth >= PQ_THRIFT_DEPTH) {
        if (tw->rc == FR_OK) {
            tw->rc = FR_ESTATE;
        }
        return;
    }
    tw->last[tw->depth++] = 0;
}

void pq_tw_struct(struct pq_tw *tw, int16_t id)
{
    tw_header(tw, id, PQ_T_STRUCT);
    pq_tw_begin(tw);
}

void pq_tw_end(struct pq_tw *tw)
{
    uint8_t stop = 0;
    tw_bytes(tw, &stop, 1);
    if (tw->depth > 0) {
        tw->depth--;
    } else if (tw->rc == FR_OK) {
        tw->rc = FR_ESTATE;
    }
}

void pq_tw_list(struct pq_tw *tw, int16_t id, enum pq_ttype etype, uint32_t n)
{
    tw_header(tw, id, PQ_T_LIST);
    if (n < 15) {
        uint8_t b = (uint8_t)(n << 4 | etype);
        tw_bytes(tw, &b, 1);
    } else {
        uint8_t b = (uint8_t)(0xf0 | etype);
        tw_bytes(tw, &b, 1);
        tw_uleb(tw, n);
    }
}

void pq_tw_elem_i32(struct pq_tw *tw, int32_t v)
{
    tw_uleb(tw, pq_zigzag64(v));
}

void pq_tw_elem_bin(struct pq_tw *tw, const void *data, size_t len)
{
    if (len > INT32_MAX) {
        if (tw->rc == FR_OK) {
            tw->rc = FR_ETOOBIG;
        }
        return;
    }
    tw_uleb(tw, len);
    tw_bytes(tw, data, len);
}

/* ---------------------------------------------------------------- decoder */

void pq_tr_init(struct pq_tr *tr, const uint8_t *p, size_t len)
{
    tr->p = p;
    tr->end = p + len;
    tr->depth = 0;
}

static int tr_uleb(struct pq_tr *tr, uint64_t *v, int max_bytes)
{
    uint64_t out = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (tr->p >= tr->end) {
            return FR_ETRUNC;
        }
        uint8_t b = *tr->p++;
        out |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            if (i == 9 && b > 1) {
                return FR_ECORRUPT; /* more than 64 bits */
            }
            *v = out;
            return FR_OK;
        }
    }
    return FR_ECORRUPT;
}

int pq_tr_begin(struct pq_tr *tr)
{
    if (tr->depth >= PQ_THRIFT_DEPTH) {
        return FR_ECORRUPT;
    }
    tr->last[tr->depth++] = 0;
    return FR_OK;
}

int pq_tr_field(struct pq_tr *tr, int16_t *id, uint8_t *type)
{
    if (tr->depth < 1) {
        return FR_ESTATE;
    }
    if (tr->p >= tr->end) {
        return FR_ETRUNC;
    }
    uint8_t b = *tr->p++;
    if (b == 0) {
        tr->depth--;
        return 0;
    }
    uint8_t t = b & 0x0f;
    int16_t *last = &tr->last[tr->depth - 1];
    int delta = b >> 4;
    if (delta) {
        int next = *last + delta;
        if (next > INT16_MAX) {
            return FR_ECORRUPT;
        }
        *id = (int16_t)next;
    } else {
        uint64_t raw;
        int rc = tr_uleb(tr, &raw, 3);
        if (rc < 0) {
            return rc;
        }
        int64_t v = pq_unzigzag64(raw);
        if (v < INT16_MIN || v > INT16_MAX) {
            return FR_ECORRUPT;
        }
        *id = (int16_t)v;
    }
    if (t > PQ_T_UUID) {
        return FR_ECORRUPT;
    }
    *last = *id;
    *type = t;
    return 1;
}

int pq_tr_i32(struct pq_tr *tr, uint8_t type, int32_t *v)
{
    if (type == PQ_T_I8) {
        if (tr->p >= tr->end) {
            return FR_ETRUNC;
        }
        *v = (int8_t)*tr->p++;
        return FR_OK;
    }
    if (type != PQ_T_I32 && type != PQ_T_I16) {
        return FR_ECORRUPT;
    }
    uint64_t raw;
    int rc = tr_uleb(tr, &raw, 5);
    if (rc < 0) {
        return rc;
    }
    int64_t x = pq_unzigzag64(raw);
    if (x < INT32_MIN || x > INT32_MAX) {
        return FR_ECORRUPT;
    }
    *v = (int32_t)x;
    return FR_OK;
}

int pq_tr_i64(struct pq_tr *tr, uint8_t type, int64_t *v)
{
    if (type != PQ_T_I64) {
        int32_t x;
        int rc = pq_tr_i32(tr, type, &x);
        *v = x;
        return rc;
    }
    uint64_t raw;
    int rc = tr_uleb(tr, &raw, 10);
    if (rc < 0) {
        return rc;
    }
    *v = pq_unzigzag64(raw);
    return FR_OK;
}

int pq_tr_bool(struct pq_tr *tr, uint8_t type, bool *v)
{
    (void)tr;
    if (type != PQ_T_TRUE && type != PQ_T_FALSE) {
        return FR_ECORRUPT;
    }
    *v = type == PQ_T_TRUE;
    return FR_OK;
}

int pq_tr_bin(struct pq_tr *tr, uint8_t type, const uint8_t **data, uint32_t *len)
{
    if (type != PQ_T_BINARY) {
        return FR_ECORRUPT;
    }
    uint64_t n;
    int rc = tr_uleb(tr, &n, 5);
    if (rc < 0) {
        return rc;
    }
    if (n > (uint64_t)(tr->end - tr->p)) {
        return FR_ETRUNC;
    }
    *data = tr->p;
    *len = (uint32_t)n;
    tr->p += n;
    return FR_OK;
}

int pq_tr_list(struct pq_tr *tr, uint8_t type, uint8_t *etype, uint32_t *n)
{
    if (type != PQ_T_LIST && type != PQ_T_SET) {
        return FR_ECORRUPT;
    }
    if (tr->p >= tr->end) {
        return FR_ETRUNC;
    }
    uint8_t b = *tr->p++;
    uint64_t size = b >> 4;
    if (size == 15) {
        int rc = tr_uleb(tr, &size, 5);
        if (rc < 0) {
            return rc;
        }
    }
    *etype = b & 0x0f;
    /* Every element takes at least one byte, except bools in the field
     * nibble, which cannot occur in a list; a count past the bytes left is
     * a lie that would make the caller over-allocate. */
    if (size > (uint64_t)(tr->end - tr->p)) {
        return FR_ETRUNC;
    }
    *n = (uint32_t)size;
    return FR_OK;
}

int pq_tr_expect(uint8_t type, uint8_t want)
{
    return type == want ? FR_OK : FR_ECORRUPT;
}

static int tr_skip(struct pq_tr *tr, uint8_t type, int depth);

static int tr_skip_struct(struct pq_tr *tr, int depth)
{
    int rc = pq_tr_begin(tr);
    if (rc < 0) {
        return rc;
    }
    for (;;) {
        int16_t id;
        uint8_t t;
        rc = pq_tr_field(tr, &id, &t);
        if (rc <= 0) {
            return rc;
        }
        if (t == PQ_T_TRUE || t == PQ_T_FALSE) {
            continue;
        }
        rc = tr_skip(tr, t, depth + 1);
        if (rc < 0) {
            return rc;
        }
    }
}

static int tr_skip(struct pq_tr *tr, uint8_t type, int depth)
{
    if (depth > PQ_THRIFT_DEPTH) {
        return FR_ECORRUPT;
    }
    uint64_t raw;
    switch (type) {
    case PQ_T_TRUE:
    case PQ_T_FALSE:
    case PQ_T_I8:
        /* Reached only as list elements: one byte. */
        if (tr->p >= tr->end) {
            return FR_ETRUNC;
        }
        tr->p++;
        return FR_OK;
    case PQ_T_I16:
    case PQ_T_I32:
    case PQ_T_I64:
        return tr_uleb(tr, &raw, 10);
    case PQ_T_DOUBLE:
        if (tr->end - tr->p < 8) {
            return FR_ETRUNC;
        }
        tr->p += 8;
        return FR_OK;
    case PQ_T_UUID:
        if (tr->end - tr->p < 16) {
            return FR_ETRUNC;
        }
        tr->p += 16;
        return FR_OK;
    case PQ_T_BINARY: {
        const uint8_t *d;
        uint32_t n;
        return pq_tr_bin(tr, type, &d, &n);
    }
    case PQ_T_LIST:
    case PQ_T_SET: {
        uint8_t et;
        uint32_t n;
        int rc = pq_tr_list(tr, type, &et, &n);
        for (uint32_t i = 0; rc == FR_OK && i < n; i++) {
            rc = tr_skip(tr, et, depth + 1);
        }
        return rc;
    }
    case PQ_T_MAP: {
        int rc = tr_uleb(tr, &raw, 5);
        if (rc < 0 || raw == 0) {
            return rc;
        }
        if (raw > (uint64_t)(tr->end - tr->p)) {
            return FR_ETRUNC;
        }
        if (tr->p >= tr->end) {
            return FR_ETRUNC;
        }
        uint8_t kv = *tr->p++;
        for (uint64_t i = 0; rc == FR_OK && i < raw; i++) {
            rc = tr_skip(tr, kv >> 4, depth + 1);
            if (rc == FR_OK) {
                rc = tr_skip(tr, kv & 0x0f, depth + 1);
            }
        }
        return rc;
    }
    case PQ_T_STRUCT:
        return tr_skip_struct(tr, depth);
    default:
        return FR_ECORRUPT;
    }
}

int pq_tr_skip(struct pq_tr *tr, uint8_t type)
{
    if (type == PQ_T_TRUE || type == PQ_T_FALSE) {
        return FR_OK; /* a bool field carries its value in the header */
    }
    return tr_skip(tr, type, tr->depth);
}
