/*
 * state.c — the pieces every operator in src/process shares: the
 * checkpoint envelope (byte table in process_int.h), the little-endian
 * encoder (into a buffer, counting, or streaming through a bounded stage:
 * the three modes of struct fr_proc_out, process_int.h) and the
 * bounds-checked decoder, the string hash and the view's text arena. Pure
 * functions over caller memory; any thread, one encoder per thread.
 */
#include "process/process_int.h"

#include "core/crc32c.h"
#include "core/err.h"

static void enc_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static uint64_t dec_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++) {
        v |= (uint64_t)p[i] << (8 * i);
    }
    return v;
}

/* ---------------------------------------------------------------- outs */

void fr_proc_out_buf(struct fr_proc_out *out, struct fr_buf *buf)
{
    memset(out, 0, sizeof *out);
    out->mode = FR_PROC_OUT_BUF;
    out->buf = buf;
}

void fr_proc_out_count(struct fr_proc_out *out)
{
    memset(out, 0, sizeof *out);
    out->mode = FR_PROC_OUT_COUNT;
}

void fr_proc_out_stream(struct fr_proc_out *out, const struct fr_proc_writer *w, uint8_t *stage,
                        size_t stage_cap)
{
    out->mode = FR_PROC_OUT_STREAM;
    out->w = w;
    out->stage = stage;
    out->stage_len = 0;
    out->stage_cap = stage_cap;
    out->pos = 0;
    out->depth = 0;
    out->next_tape = 0;
    out->err = FR_OK;
}

int fr_proc_out_flush(struct fr_proc_out *out)
{
    if (out->mode != FR_PROC_OUT_STREAM || out->err != FR_OK || out->stage_len == 0) {
        return out->err;
    }
    for (uint32_t l = 0; l < out->depth; l++) {
        out->crc[l] = fr_crc32c(out->crc[l], out->stage, out->stage_len);
    }
    out->err = out->w->write(out->w->arg, out->stage, out->stage_len);
    out->stage_len = 0;
    return out->err;
}

/* COUNT / STREAM: n bytes emitted. */
static int out_emit(struct fr_proc_out *out, const void *data, size_t len)
{
    out->pos += len;
    if (out->mode == FR_PROC_OUT_COUNT) {
        return FR_OK;
    }
    const uint8_t *p = data;
    while (len > 0 && out->err == FR_OK) {
        size_t n = out->stage_cap - out->stage_len;
        n = n < len ? n : len;
        memcpy(out->stage + out->stage_len, p, n);
        out->stage_len += n;
        p += n;
        len -= n;
        if (out->stage_len == out->stage_cap) {
            fr_proc_out_flush(out);
        }
    }
    return out->err;
}

/* ------------------------------------------------------------ encoder */

static void enc_head(uint8_t head[FR_PROC_ENV_HEAD], const char magic[4], uint16_t version,
                     uint64_t body)
{
    memset(head, 0, FR_PROC_ENV_HEAD);
    memcpy(head, magic, 4);
    enc_le(head + 4, version, 2);
    enc_le(head + 8, body, 8);
}

void fr_proc_enc_begin(struct fr_proc_enc *enc, struct fr_buf *out, const char magic[4],
                       uint16_t version)
{
    memset(enc, 0, sizeof *enc);
    enc->buf = out;
    enc->start = out->len;
    enc->err = FR_OK;
    uint8_t head[FR_PROC_ENV_HEAD];
    enc_head(head, magic, version, 0);
    fr_proc_enc_bytes(enc, head, sizeof head);
}

void fr_proc_enc_begin_out(struct fr_proc_enc *enc, struct fr_proc_out *out, const char magic[4],
                           uint16_t version)
{
    if (out->mode == FR_PROC_OUT_BUF) {
        fr_proc_enc_begin(enc, out->buf, magic, version);
        enc->out = out;
        return;
    }
    memset(enc, 0, sizeof *enc);
    enc->out = out;
    enc->err = out->err;
    uint8_t head[FR_PROC_ENV_HEAD];
    if (out->mode == FR_PROC_OUT_COUNT) {
        if (out->n_tape == FR_PROC_OUT_TAPE) {
            enc->err = enc->err ? enc->err : FR_ETOOBIG;
            return;
        }
        enc->slot = out->n_tape++;
        out->tape[enc->slot] = 0;
        enc_head(head, magic, version, 0);
    } else {
        if (out->next_tape == out->n_tape || out->depth == FR_PROC_OUT_LEVELS) {
            enc->err = enc->err ? enc->err : FR_ESTATE;
            return;
        }
        enc->body_len = out->tape[out->next_tape++];
        enc_head(head, magic, version, enc->body_len);
        /* The outer envelopes' CRCs take what is staged; this one starts here. */
        if (enc->err == FR_OK) {
            enc->err = fr_proc_out_flush(out);
        }
        out->crc[out->depth++] = 0;
    }
    fr_proc_enc_bytes(enc, head, sizeof head);
    enc->body_at = out->pos;
}

uint64_t fr_proc_enc_next_len(const struct fr_proc_enc *enc)
{
    const struct fr_proc_out *out = enc->out;
    if (!out || out->mode != FR_PROC_OUT_STREAM || out->next_tape == out->n_tape) {
        return 0;
    }
    return out->tape[out->next_tape] + FR_PROC_ENV_HEAD + FR_PROC_ENV_TAIL;
}

void fr_proc_enc_bytes(struct fr_proc_enc *enc, const void *data, size_t len)
{
    if (enc->err != FR_OK) {
        return;
    }
    if (enc->buf) {
        enc->err = fr_buf_append(enc->buf, data, len);
    } else {
        enc->err = out_emit(enc->out, data, len);
    }
}
void fr_proc_enc_u8(struct fr_proc_enc *enc, uint8_t v)
{
    fr_proc_enc_bytes(enc, &v, 1);
}

void fr_proc_enc_u32(struct fr_proc_enc *enc, uint32_t v)
{
    uint8_t b[4];
    enc_le(b, v, 4);
    fr_proc_enc_bytes(enc, b, 4);
}

void fr_proc_enc_u64(struct fr_proc_enc *enc, uint64_t v)
{
    uint8_t b[8];
    enc_le(b, v, 8);
    fr_proc_enc_bytes(enc, b, 8);
}

void fr_proc_enc_i64(struct fr_proc_enc *enc, int64_t v)
{
    fr_proc_enc_u64(enc, (uint64_t)v);
}

void fr_proc_enc_str(struct fr_proc_enc *enc, const char *s, size_t len)
{
    if (len > UINT32_MAX) {
        enc->err = enc->err ? enc->err : FR_ETOOBIG;
        return;
    }
    fr_proc_enc_u32(enc, (uint32_t)len);
    fr_proc_enc_bytes(enc, s, len);
}

int fr_proc_enc_end(struct fr_proc_enc *enc)
{
    if (enc->buf) {
        if (enc->err == FR_OK) {
            uint8_t *head = enc->buf->data + enc->start;
            size_t body = enc->buf->len - enc->start - FR_PROC_ENV_HEAD;
            enc_le(head + 8, body, 8);
            uint32_t crc = fr_crc32c(0, head, enc->buf->len - enc->start);
            fr_proc_enc_u32(enc, crc);
        }
        if (enc->err != FR_OK) {
            enc->buf->len = enc->start;
        }
        return enc->err;
    }
    struct fr_proc_out *out = enc->out;
    uint64_t body = out->pos - enc->body_at;
    if (out->mode == FR_PROC_OUT_COUNT) {
        if (enc->err == FR_OK) {
            out->tape[enc->slot] = body;
        }
        fr_proc_enc_u32(enc, 0);
        return enc->err;
    }
    if (enc->err == FR_OK && body != enc->body_len) {
        enc->err = FR_ESTATE;
    }
    if (enc->err == FR_OK) {
        enc->err = fr_proc_out_flush(out);
    }
    if (enc->err != FR_OK) {
        out->err = out->err ? out->err : enc->err;
        return enc->err;
    }
    uint32_t crc = out->crc[--out->depth];
    fr_proc_enc_u32(enc, crc);
    return enc->err;
}

int fr_proc_dec_begin(struct fr_proc_dec *dec, const void *bytes, size_t len, const char magic[4],
                      uint16_t version)
{
    const uint8_t *b = bytes;
    dec->p = dec->end = b;
    dec->err = FR_ECORRUPT;
    if (!b || len < FR_PROC_ENV_HEAD + FR_PROC_ENV_TAIL || memcmp(b, magic, 4) != 0 ||
        dec_le(b + 4, 2) != version || dec_le(b + 6, 2) != 0) {
        return FR_ECORRUPT;
    }
    uint64_t body = dec_le(b + 8, 8);
    if (body != len - FR_PROC_ENV_HEAD - FR_PROC_ENV_TAIL) {
        return FR_ECORRUPT;
    }
    uint32_t want = (uint32_t)dec_le(b + len - FR_PROC_ENV_TAIL, 4);
    if (fr_crc32c(0, b, len - FR_PROC_ENV_TAIL) != want) {
        dec->err = FR_ECRC;
        return FR_ECRC;
    }
    dec->p = b + FR_PROC_ENV_HEAD;
    dec->end = b + len - FR_PROC_ENV_TAIL;
    dec->err = FR_OK;
    return FR_OK;
}

const uint8_t *fr_proc_dec_bytes(struct fr_proc_dec *dec, size_t n)
{
    if (dec->err != FR_OK || (size_t)(dec->end - dec->p) < n) {
        dec->err = FR_ECORRUPT;
        return NULL;
    }
    const uint8_t *at = dec->p;
    dec->p += n;
    return at;
}

uint8_t fr_proc_dec_u8(struct fr_proc_dec *dec)
{
    const uint8_t *b = fr_proc_dec_bytes(dec, 1);
    return b ? b[0] : 0;
}

uint32_t fr_proc_dec_u32(struct fr_proc_dec *dec)
{
    const uint8_t *b = fr_proc_dec_bytes(dec, 4);
    return b ? (uint32_t)dec_le(b, 4) : 0;
}

uint64_t fr_proc_dec_u64(struct fr_proc_dec *dec)
{
    const uint8_t *b = fr_proc_dec_bytes(dec, 8);
    return b ? dec_le(b, 8) : 0;
}

int64_t fr_proc_dec_i64(struct fr_proc_dec *dec)
{
    return (int64_t)fr_proc_dec_u64(dec);
}

const char *fr_proc_dec_str(struct fr_proc_dec *dec, size_t max, uint32_t *len)
{
    uint32_t n = fr_proc_dec_u32(dec);
    if (dec->err == FR_OK && n > max) {
        dec->err = FR_ECORRUPT;
    }
    const uint8_t *b = fr_proc_dec_bytes(dec, n);
    *len = b ? n : 0;
    return (const char *)b;
}

uint32_t fr_proc_dec_count(struct fr_proc_dec *dec, uint64_t max, size_t min_each)
{
    uint32_t n = fr_proc_dec_u32(dec);
    if (dec->err != FR_OK) {
        return 0;
    }
    if (n > max || (min_each && (uint64_t)n > (uint64_t)(dec->end - dec->p) / min_each)) {
        dec->err = FR_ECORRUPT;
        return 0;
    }
    return n;
}

int fr_proc_dec_end(struct fr_proc_dec *dec)
{
    if (dec->err == FR_OK && dec->p != dec->end) {
        dec->err = FR_ECORRUPT;
    }
    return dec->err;
}

/* The 128-bit product of a and b, folded to 64 bits. */
static inline uint64_t proc_fold_mul(uint64_t a, uint64_t b)
{
    __extension__ typedef unsigned __int128 u128;
    u128 r = (u128)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/* 16 bytes a folded multiply; the last (up to) 16 bytes are read as two
 * words that may overlap, so every byte counts and nothing past the string
 * is read; the length enters the last multiply. Not keyed (see dedup.c on
 * crafted keys): callers' caps bound their state whatever the collisions. */
uint64_t fr_proc_hash(const void *data, size_t len, uint64_t seed)
{
    const uint64_t k0 = UINT64_C(0xa0761d6478bd642f), k1 = UINT64_C(0xe7037ed1a0b428db),
                   k2 = UINT64_C(0x8ebc6af09c88c6e3);
    const uint8_t *p = data;
    uint64_t h = seed ^ k0;
    size_t n = len;
    while (n > 16) {
        uint64_t a, b;
        memcpy(&a, p, 8);
        memcpy(&b, p + 8, 8);
        h = proc_fold_mul(a ^ k1, b ^ h);
        p += 16;
        n -= 16;
    }
    uint64_t a = 0, b = 0;
    if (n >= 8) {
        memcpy(&a, p, 8);
        memcpy(&b, p + n - 8, 8);
    } else if (n >= 4) {
        uint32_t x, y;
        memcpy(&x, p, 4);
        memcpy(&y, p + n - 4, 4);
        a = x;
        b = y;
    } else if (n > 0) {
        a = (uint64_t)p[0] << 16 | (uint64_t)p[n >> 1] << 8 | p[n - 1];
    }
    return proc_fold_mul(k2 ^ len, proc_fold_mul(a ^ k1, b ^ h));
}

const char *fr_proc_view_text(struct fr_proc_view *view, const char *s, size_t len)
{
    if (len > sizeof view->text - view->text_len) {
        return NULL;
    }
    char *at = view->text + view->text_len;
    if (len) {
        memcpy(at, s, len);
    }
    view->text_len += len;
    return at;
}
