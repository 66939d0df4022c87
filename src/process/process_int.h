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

/*
 * Where an encoder's bytes go (struct fr_proc_out), one of three modes:
 *
 *   BUF     appended to a caller's fr_buf; each envelope's length is patched
 *           into its header and its CRC computed at its end (the original
 *           path: fr_proc_enc_begin).
 *   COUNT   nothing is stored: the bytes are counted, and the body length of
 *           every envelope begun is recorded on a small tape, in begin order.
 *   STREAM  the bytes, identical to BUF's, go through a bounded staging
 *           buffer (the caller's memory) to a writer, in chunks of at most
 *           the stage's size. A header cannot be patched once sent, so it
 *           takes its body length from the tape a COUNT pass over the same
 *           unchanged state recorded; each open envelope keeps a running
 *           CRC-32C, updated whenever the stage is flushed (the stage is
 *           flushed at every envelope's begin and end, so the CRC ranges
 *           are exact). A body that comes out longer or shorter than the
 *           tape says is FR_ESTATE: the state changed between the passes.
 *
 * So a save of any size needs stage bytes of memory, not the size of the
 * state (fr_proc_save_stream, docs/adr/0023). The encoders of every
 * operator are unchanged: they call fr_proc_enc_* whatever the mode.
 */
enum fr_proc_out_mode { FR_PROC_OUT_BUF = 1, FR_PROC_OUT_COUNT, FR_PROC_OUT_STREAM };

#define FR_PROC_OUT_LEVELS 4 /* envelopes open at once (FRPS holds one level) */
#define FR_PROC_OUT_TAPE 16  /* envelopes in one save */

struct fr_proc_out {
    enum fr_proc_out_mode mode;
    struct fr_buf *buf;             /* BUF */
    const struct fr_proc_writer *w; /* STREAM */
    uint8_t *stage;                 /* STREAM: caller's memory, stage_cap bytes */
    size_t stage_len, stage_cap;
    uint64_t pos;                     /* COUNT, STREAM: bytes emitted so far */
    uint32_t depth;                   /* STREAM: envelopes open */
    uint32_t crc[FR_PROC_OUT_LEVELS]; /* STREAM: running CRC of each open envelope */
    uint64_t tape[FR_PROC_OUT_TAPE];  /* body lengths in begin order */
    uint32_t n_tape, next_tape;
    int err; /* first error of the writer (sticks) */
};

void fr_proc_out_buf(struct fr_proc_out *out, struct fr_buf *buf);
void fr_proc_out_count(struct fr_proc_out *out);
/* Switch a counted out to STREAM over the same tape (pos back to 0). */
void fr_proc_out_stream(struct fr_proc_out *out, const struct fr_proc_writer *w, uint8_t *stage,
                        size_t stage_cap);
/* STREAM: hand what is staged to the writer. FR_OK or the first error. */
int fr_proc_out_flush(struct fr_proc_out *out);

/* Encoder of one envelope; the first error sticks. */
struct fr_proc_enc {
    struct fr_buf *buf;      /* BUF mode: the buffer appended to */
    struct fr_proc_out *out; /* NULL when begun with fr_proc_enc_begin */
    size_t start;            /* BUF: offset of the envelope in buf */
    uint64_t body_at;        /* COUNT, STREAM: out->pos where the body starts */
    uint64_t body_len;       /* STREAM: the body length the tape gave */
    uint32_t slot;           /* COUNT: this envelope's tape slot */
    int err;
};

void fr_proc_enc_begin(struct fr_proc_enc *enc, struct fr_buf *out, const char magic[4],
                       uint16_t version);
/* The same, into any out. */
void fr_proc_enc_begin_out(struct fr_proc_enc *enc, struct fr_proc_out *out, const char magic[4],
                           uint16_t version);
/* STREAM: the whole length (header, body, CRC) of the next envelope to be
 * begun, from the tape (for a nested state's u64 length prefix); 0 in the
 * other modes, where the prefix is patched (BUF) or only counted. */
uint64_t fr_proc_enc_next_len(const struct fr_proc_enc *enc);
void fr_proc_enc_u8(struct fr_proc_enc *enc, uint8_t v);
void fr_proc_enc_u32(struct fr_proc_enc *enc, uint32_t v);
void fr_proc_enc_u64(struct fr_proc_enc *enc, uint64_t v);
void fr_proc_enc_i64(struct fr_proc_enc *enc, int64_t v);
void fr_proc_enc_bytes(struct fr_proc_enc *enc, const void *data, size_t len);
/* u32 length, then the bytes. */
void fr_proc_enc_str(struct fr_proc_enc *enc, const char *s, size_t len);
/* Patch the body length (BUF) or check it (STREAM), and append the CRC.
 * Returns the first error; on error in BUF mode buf is cut back to where
 * the envelope started (a STREAM writer discards what it was sent). */
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

/* The operators' saves into any out (their fr_*_save wrap these with a
 * BUF out). */
int fr_proc_wm_save_out(const struct fr_proc_wm *wm, struct fr_proc_out *out);
int fr_dedup_save_out(const struct fr_dedup *dedup, struct fr_proc_out *out);
int fr_win_save_out(const struct fr_win *win, struct fr_proc_out *out);
int fr_win_top_save_out(const struct fr_top *top, struct fr_proc_out *out);

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
