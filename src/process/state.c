/*
 * state.c — the pieces every operator in src/process shares: the
 * checkpoint envelope (byte table in process_int.h), the little-endian
 * encoder and bounds-checked decoder, the string hash and the view's text
 * arena. Pure functions over caller memory; any thread.
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

void fr_proc_enc_begin(struct fr_proc_enc *enc, struct fr_buf *out, const char magic[4],
                       uint16_t version)
{
    enc->buf = out;
    enc->start = out->len;
    enc->err = FR_OK;
    uint8_t head[FR_PROC_ENV_HEAD] = {0};
    memcpy(head, magic, 4);
    enc_le(head + 4, version, 2);
    fr_proc_enc_bytes(enc, head, sizeof head);
}

void fr_proc_enc_bytes(struct fr_proc_enc *enc, const void *data, size_t len)
{
    if (enc->err == FR_OK) {
        enc->err = fr_buf_append(enc->buf, data, len);
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

uint64_t fr_proc_hash(const void *data, size_t len, uint64_t seed)
{
    const uint8_t *p = data;
    uint64_t h = seed ^ (UINT64_C(0x9e3779b97f4a7c15) * (len + 1));
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ fr_proc_mix64(w)) * UINT64_C(0xff51afd7ed558ccd);
        p += 8;
        len -= 8;
    }
    uint64_t w = 0;
    for (size_t i = 0; i < len; i++) {
        w |= (uint64_t)p[i] << (8 * i);
    }
    return fr_proc_mix64(h ^ fr_proc_mix64(w ^ 0x5bd1e995));
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
