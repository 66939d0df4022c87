/*
 * process_int.h — private helpers shared by the operators in src/process:
 * the checkpoint envelope (state.c), a bounds-checked little-endian
 * encoder/decoder, the string hash, floor division for event times, and
 * the view's text arena. Nothing here is exported beyond src/process.
 *
 * Every saved state is one envelope (all integers little-endian):
 *
 *   offset  size  field
 *   0       4     magic, four ASCII bytes naming the operator
 *   4       2     format version
 *   6       2     zero
 *   8       8     body length N
 *   16      N     body (each operator's byte table is in its own file)
 *   16+N    4     CRC-32C of bytes [0, 16+N)
 *
 * A body is a sequence of fields written with fr_proc_enc_* and read back in
 * the same order with fr_proc_dec_*; strings are a u32 length then bytes.
 * Decoding never reads past the body: a short or overlong body is
 * FR_ECORRUPT, a checksum mismatch FR_ECRC.
 */
#ifndef FR_PROCESS_INT_H
#define FR_PROCESS_INT_H

#include "process/process.h"

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FR_PROC_ENV_HEAD 16
#define FR_PROC_ENV_TAIL 4
static_assert(FR_PROC_ENV_HEAD == 4 + 2 + 2 + 8, "envelope header layout");

/* Encoder: appends to a caller's buffer; the first error sticks. */
struct fr_proc_enc {
    struct fr_buf *buf;
    size_t start; /* offset of the envelope in buf */
    int err;
};

void fr_proc_enc_begin(struct fr_proc_enc *enc, struct fr_buf *out, const char magic[4],
                       uint16_t version);
void fr_proc_enc_u8(struct fr_proc_enc *enc, uint8_t v);
void fr_proc_enc_u32(struct fr_proc_enc *enc, uint32_t v);
void fr_proc_enc_u64(struct fr_proc_enc *enc, uint64_t v);
void fr_proc_enc_i64(struct fr_proc_enc *enc, int64_t v);
void fr_proc_enc_bytes(struct fr_proc_enc *enc, const void *data, size_t len);
/* u32 length, then the bytes. */
void fr_proc_enc_str(struct fr_proc_enc *enc, const char *s, size_t len);
/* Patch the body length and append the CRC. Returns the first error; on
 * error buf is cut back to where the envelope started. */
int fr_proc_enc_end(struct fr_proc_enc *enc);

/* Decoder over one envelope's body. */
struct fr_proc_dec {
    const uint8_t *p, *end;
    int err;
};

/* Check magic, version, length and CRC; position dec at the body. */
int fr_proc_dec_begin(struct fr_proc_dec *dec, const void *bytes, size_t len, const char magic[4],
                      uint16_t version);
uint8_t fr_proc_dec_u8(struct fr_proc_dec *dec);
uint32_t fr_proc_dec_u32(struct fr_proc_dec *dec);
uint64_t fr_proc_dec_u64(struct fr_proc_dec *dec);
int64_t fr_proc_dec_i64(struct fr_proc_dec *dec);
/* n raw bytes in place, or NULL (and err set) when fewer remain. */
const uint8_t *fr_proc_dec_bytes(struct fr_proc_dec *dec, size_t n);
/* A u32-length string of at most max bytes, in place. */
const char *fr_proc_dec_str(struct fr_proc_dec *dec, size_t max, uint32_t *len);
/* A u32 count no larger than max and no larger than the bytes left could
 * hold at min_each bytes per item (so a corrupt count cannot make the
 * loader allocate). */
uint32_t fr_proc_dec_count(struct fr_proc_dec *dec, uint64_t max, size_t min_each);
/* FR_OK when no error occurred and the body was consumed exactly. */
int fr_proc_dec_end(struct fr_proc_dec *dec);

/* 64-bit hash of a byte string (fast, not keyed: flooding is bounded by
 * the operators' caps, see docs/adr/0007). */
uint64_t fr_proc_hash(const void *data, size_t len, uint64_t seed);
static inline uint64_t fr_proc_mix64(uint64_t x)
{
    x ^= x >> 32;
    x *= UINT64_C(0xd6e8feb86659fd93);
    x ^= x >> 32;
    x *= UINT64_C(0xd6e8feb86659fd93);
    x ^= x >> 32;
    return x;
}

/* Event times the operators accept: RFC 3339 years 0000..9999 are within
 * +-2^58 us; anything beyond +-2^60 is a caller bug or a corrupt blob, and
 * excluding it keeps every window and lateness sum free of overflow. */
#define FR_PROC_TIME_LIMIT (INT64_C(1) << 60)
#define FR_PROC_TIME_OK(t) ((t) >= -FR_PROC_TIME_LIMIT && (t) <= FR_PROC_TIME_LIMIT)

/* floor(t / unit) * unit, correct for negative t (events before 1970). */
static inline int64_t fr_proc_floor(int64_t t, int64_t unit)
{
    int64_t q = t / unit;
    if (t % unit < 0) {
        q--;
    }
    return q * unit;
}

static inline uint64_t fr_proc_sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Bytewise order of two strings, shorter first on a common prefix. */
static inline int fr_proc_strcmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c) {
        return c;
    }
    return alen < blen ? -1 : alen > blen;
}

/* Copy s into the view's text arena; NULL when it does not fit. */
const char *fr_proc_view_text(struct fr_proc_view *view, const char *s, size_t len);

#endif
