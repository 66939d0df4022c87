/*
 * encode.c — the value-level encodings: the RLE / bit-packed hybrid (used for
 * definition levels, dictionary indices and RLE booleans), UTF-8 validation,
 * hashing, and the writer's dictionary. Everything works on caller memory;
 * no globals; any thread.
 *
 * RLE / bit-packed hybrid (PQ-ENC "Run Length Encoding / Bit-Packing Hybrid"):
 *
 *   run            bytes
 *   -------------  -----------------------------------------------------------
 *   RLE run        ULEB128 header = count << 1          (count >= 1)
 *                  value, ceil(width / 8) bytes, little-endian
 *   bit-packed run ULEB128 header = groups << 1 | 1     (groups of 8 values)
 *                  groups * width bytes: value k occupies bits
 *                  [k * width, (k + 1) * width) counting from the least
 *                  significant bit of the first byte
 *
 * Example, width 1, values 1 1 1 0 1: as RLE runs 06 01 02 00 02 01; as one
 * bit-packed group 03 17 (the unit tests check both directions).
 *
 * The encoder writes a repeat of 8 or more equal values as an RLE run and
 * everything else as bit-packed runs of at most 63 groups (one header byte,
 * as parquet-mr does); a bit-packed run can end only on a group boundary, so
 * it borrows the first values of a following repeat to fill its last group.
 * Only the very last group of the data is padded with zeros; readers stop
 * at the value count the page header gives.
 *
 * Dictionary (writer side): open addressing with linear probing over a
 * power-of-two slot array kept at most half full. A slot holds the top 32
 * bits of the value's 64-bit hash and the entry index + 1, so most probes
 * that miss never touch the values; byte-array slots carry a second word,
 * length << 32 | offset of the entry, so a probe reads one slot and then
 * only the bytes of a candidate with the same hash and length. Entries are
 * stored PLAIN-encoded, which makes the value buffer the dictionary page
 * body as it stands:
 *
 *   dictionary page body   INT32: 4 bytes LE per entry; INT64 / DOUBLE: 8;
 *                          BYTE_ARRAY: u32 LE length + bytes per entry
 *
 * DELTA_BINARY_PACKED (PQ-ENC), for INT64 pages (pq_dbp_encode_i64):
 *
 *   part           bytes
 *   -------------  -----------------------------------------------------------
 *   header         ULEB128 block size (128), miniblocks per block (4), value
 *                  count, then the first value zigzag-encoded
 *   each block     the smallest delta of its (up to) 128 values, zigzag
 *                  ULEB128; one bit-width byte per miniblock; then each
 *                  miniblock that holds values: 32 values of delta - min
 *                  delta, width bits each, packed LSB-first as in the
 *                  hybrid (the last one padded with zeros)
 *
 * Deltas and their differences wrap modulo 2^64, as readers compute them.
 * A miniblock past the last value has width 0 and no bytes.
 */
#include "parquet/parquet_int.h"

#include <stdlib.h>
#include <string.h>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "PLAIN values are copied from memory as they are: little-endian hosts only");

/* ---------------------------------------------------------- hybrid encode */

#define HYB_MAX_GROUPS 63

static uint8_t *hyb_rle(uint8_t *o, uint32_t value, uint32_t count, int width)
{
    o += pq_uleb_put(o, (uint64_t)count << 1);
    for (int b = 0; b < (width + 7) / 8; b++) {
        *o++ = (uint8_t)(value >> (8 * b));
    }
    return o;
}

/* Eight values of width bits, LSB first, as width bytes at o. Up to 8
 * bits they fit one 64-bit word, stored whole (the caller leaves 8 bytes
 * of room; the bytes past o + width are overwritten by what follows or lie
 * past the end); wider ones go out 32 bits at a time. */
static inline uint8_t *hyb_pack8(uint8_t *o, const uint64_t x[8], int width)
{
    if (width <= 8) {
        uint64_t a = 0;
        for (int k = 0; k < 8; k++) {
            a |= x[k] << (k * width);
        }
        memcpy(o, &a, 8);
        return o + width;
    }
    uint64_t acc = 0;
    int bits = 0;
    for (int k = 0; k < 8; k++) {
        acc |= x[k] << bits;
        bits += width;
        if (bits >= 32) {
            uint32_t lo = (uint32_t)acc;
            memcpy(o, &lo, 4);
            o += 4;
            acc >>= 32;
            bits -= 32;
        }
    }
    for (; bits > 0; bits -= 8) { /* 8 x width bits: whole bytes are left */
        *o++ = (uint8_t)acc;
        acc >>= 8;
    }
    return o;
}

/* The end of the run of values equal to v[i] in v[0..n). Definition
 * levels come in long runs: bytes are compared eight at a time. */
static inline uint32_t hyb_run_end_u8(const uint8_t *v, uint32_t i, uint32_t n)
{
    uint64_t x = v[i] * UINT64_C(0x0101010101010101);
    uint32_t j = i + 1;
    for (; n - j >= 8; j += 8) {
        uint64_t w;
        memcpy(&w, v + j, 8);
        if (w != x) {
            return j + (uint32_t)__builtin_ctzll(w ^ x) / 8; /* little-endian */
        }
    }
    while (j < n && v[j] == v[i]) {
        j++;
    }
    return j;
}

static inline uint32_t hyb_run_end_u32(const uint32_t *v, uint32_t i, uint32_t n)
{
    uint32_t j = i + 1;
    while (j < n && v[j] == v[i]) {
        j++;
    }
    return j;
}

#define HYB_ENCODE(NAME, T)                                                             \
    static uint8_t *NAME##_packed(uint8_t *o, const T *v, uint32_t cnt, int width)      \
    {                                                                                   \
        while (cnt > 0) {                                                               \
            uint32_t take = cnt < HYB_MAX_GROUPS * 8 ? cnt : HYB_MAX_GROUPS * 8;        \
            uint32_t groups = (take + 7) / 8;                                           \
            *o++ = (uint8_t)(groups << 1 | 1);                                          \
            for (uint32_t g = 0; g < groups; g++) {                                     \
                uint64_t x[8];                                                          \
                for (uint32_t k = 0; k < 8; k++) {                                      \
                    x[k] = 8 * g + k < take ? (uint64_t)v[8 * g + k] : 0;               \
                }                                                                       \
                o = hyb_pack8(o, x, width);                                             \
            }                                                                           \
            v += take;                                                                  \
            cnt -= take;                                                                \
        }                                                                               \
        return o;                                                                       \
    }                                                                                   \
                                                                                        \
    int NAME(struct fr_buf *out, const T *v, uint32_t n, int width)                     \
    {                                                                                   \
        if (width < 1 || width > 32) {                                                  \
            return FR_EINVAL;                                                           \
        }                                                                               \
        size_t bound = ((size_t)n / 8 + 2) * (size_t)(width + 14) + 16;                 \
        int rc = fr_buf_reserve(out, bound);                                            \
        if (rc < 0) {                                                                   \
            return rc;                                                                  \
        }                                                                               \
        uint8_t *o = out->data + out->len;                                              \
        uint32_t i = 0, start = 0; /* [start, i) waits to be bit-packed */             \
        while (i < n) {                                                                 \
            uint32_t j = NAME##_run_end(v, i, n);                                       \
            uint32_t run = j - i;                                                       \
            if (run < 8) {                                                              \
                i = j;                                                                  \
                continue;                                                               \
            }                                                                           \
            uint32_t pend = (i - start) % 8;                                            \
            if (pend) {                                                                 \
                uint32_t borrow = 8 - pend;                                             \
                if (run - borrow < 8) {                                                 \
                    i = j; /* too short once the group is filled */                     \
                    continue;                                                           \
                }                                                                       \
                i += borrow;                                                            \
                run -= borrow;                                                          \
            }                                                                           \
            o = NAME##_packed(o, v + start, i - start, width);                          \
            o = hyb_rle(o, (uint32_t)v[i], run, width);                                 \
            i = j;                                                                      \
            start = j;                                                                  \
        }                                                                               \
        o = NAME##_packed(o, v + start, n - start, width);                              \
        out->len = (size_t)(o - out->data);                                             \
        return FR_OK;                                                                   \
    }

#define pq_hyb_encode_u8_run_end hyb_run_end_u8
#define pq_hyb_encode_u32_run_end hyb_run_end_u32
HYB_ENCODE(pq_hyb_encode_u8, uint8_t)
HYB_ENCODE(pq_hyb_encode_u32, uint32_t)
#undef pq_hyb_encode_u8_run_end
#undef pq_hyb_encode_u32_run_end

/* --------------------------------------------------- DELTA_BINARY_PACKED */

/* 32 values of width bits, LSB-first, into 4 * width zeroed bytes. */
static void pack32(uint8_t *dst, const uint64_t *x, int width)
{
    uint64_t bit = 0;
    for (int k = 0; k < 32; k++, bit += (uint64_t)width) {
        uint8_t *d = dst + (bit >> 3);
        unsigned sh = (unsigned)(bit & 7);
        uint64_t lo = x[k] << sh;
        int nbytes = (width + (int)sh + 7) / 8;
        for (int i = 0; i < nbytes && i < 8; i++) {
            d[i] |= (uint8_t)(lo >> (8 * i));
        }
        if (nbytes > 8) { /* width + shift past 64 bits: the top bits */
            d[8] |= (uint8_t)(x[k] >> (64 - sh));
        }
    }
}

int pq_dbp_encode_i64(struct fr_buf *out, const uint8_t *vals, uint32_t n)
{
    enum { VPM = PQ_DBP_BLOCK / PQ_DBP_MINIBLOCKS };
    uint64_t first = 0;
    if (n) {
        memcpy(&first, vals, 8);
    }
    /* Header, then per block at most 10 + 4 + 128 * 8 bytes. */
    uint64_t blocks = n > 1 ? ((uint64_t)n - 1 + PQ_DBP_BLOCK - 1) / PQ_DBP_BLOCK : 0;
    int rc = fr_buf_reserve(out, 40 + blocks * (14 + PQ_DBP_BLOCK * 8));
    if (rc < 0) {
        return rc;
    }
    uint8_t *o = out->data + out->len;
    o += pq_uleb_put(o, PQ_DBP_BLOCK);
    o += pq_uleb_put(o, PQ_DBP_MINIBLOCKS);
    o += pq_uleb_put(o, n);
    o += pq_uleb_put(o, pq_zigzag64((int64_t)first));
    uint64_t prev = first;
    for (uint32_t at = 1; at < n; at += PQ_DBP_BLOCK) {
        uint32_t cnt = n - at < PQ_DBP_BLOCK ? n - at : PQ_DBP_BLOCK;
        uint64_t d[PQ_DBP_BLOCK];
        int64_t min = INT64_MAX;
        for (uint32_t j = 0; j < cnt; j++) {
            uint64_t v;
            memcpy(&v, vals + ((size_t)at + j) * 8, 8);
            d[j] = v - prev;
            prev = v;
            min = (int64_t)d[j] < min ? (int64_t)d[j] : min;
        }
        for (uint32_t j = cnt; j < PQ_DBP_BLOCK; j++) {
            d[j] = (uint64_t)min; /* padding: packs as zeros */
        }
        o += pq_uleb_put(o, pq_zigzag64(min));
        uint8_t *widths = o;
        o += PQ_DBP_MINIBLOCKS;
        for (uint32_t m = 0; m < PQ_DBP_MINIBLOCKS; m++) {
            widths[m] = 0;
            if (m * VPM >= cnt) {
                continue;
            }
            uint64_t *x = d + m * VPM, any = 0;
            for (int k = 0; k < VPM; k++) {
                x[k] -= (uint64_t)min;
                any |= x[k];
            }
            int width = pq_bit_width64(any);
            widths[m] = (uint8_t)width;
            memset(o, 0, (size_t)width * 4);
            pack32(o, x, width);
            o += (size_t)width * 4;
        }
    }
    out->len = (size_t)(o - out->data);
    return FR_OK;
}

/* ---------------------------------------------------------- hybrid decode */

void pq_hyb_init(struct pq_hyb *hyb, const uint8_t *p, size_t len, int width)
{
    hyb->p = p;
    hyb->end = p + len;
    hyb->width = width;
    hyb->left = 0;
    hyb->rle = true;
    hyb->value = 0;
    hyb->bp = hyb->bp_end = p;
    hyb->bp_next = 0;
}

static int hyb_next_run(struct pq_hyb *h)
{
    for (;;) {
        uint64_t hdr = 0;
        int shift = 0;
        for (;;) {
            if (h->p >= h->end) {
                return FR_ETRUNC;
            }
            uint8_t b = *h->p++;
            hdr |= (uint64_t)(b & 0x7f) << shift;
            if (!(b & 0x80)) {
                break;
            }
            shift += 7;
            if (shift > 28) {
                return FR_ECORRUPT;
            }
        }
        if (hdr & 1) {
            uint64_t groups = hdr >> 1;
            size_t avail = (size_t)(h->end - h->p);
            uint64_t bytes = groups * (uint64_t)h->width;
            if (bytes > avail) {
                bytes = avail; /* some writers end the last run early */
            }
            uint64_t values = h->width ? bytes * 8 / (uint64_t)h->width : groups * 8;
            if (values > groups * 8) {
                values = groups * 8;
            }
            h->rle = false;
            h->bp = h->p;
            h->bp_end = h->p + bytes;
            h->bp_next = 0;
            h->p += bytes;
            h->left = values > UINT32_MAX ? UINT32_MAX : (uint32_t)values;
        } else {
            int nbytes = (h->width + 7) / 8;
            if (h->end - h->p < nbytes) {
                return FR_ETRUNC;
            }
            uint32_t v = 0;
            for (int b = 0; b < nbytes; b++) {
                v |= (uint32_t)h->p[b] << (8 * b);
            }
            h->p += nbytes;
            if (h->width < 32 && (v >> h->width) != 0) {
                return FR_ECORRUPT;
            }
            uint64_t count = hdr >> 1;
            h->rle = true;
            h->value = v;
            h->left = count > UINT32_MAX ? UINT32_MAX : (uint32_t)count;
        }
        if (h->left > 0) {
            return FR_OK;
        }
    }
}

static inline uint32_t hyb_unpack(const struct pq_hyb *h, uint32_t k)
{
    uint64_t bit = (uint64_t)k * (uint64_t)h->width;
    const uint8_t *b = h->bp + (bit >> 3);
    unsigned shift = (unsigned)(bit & 7);
    uint64_t x;
    if (h->bp_end - b >= 8) {
        memcpy(&x, b, 8);
    } else {
        x = 0;
        for (int i = 0; b + i < h->bp_end; i++) {
            x |= (uint64_t)b[i] << (8 * i);
        }
    }
    uint64_t mask = h->width == 32 ? 0xffffffffull : ((1ull << h->width) - 1);
    return (uint32_t)((x >> shift) & mask);
}

int pq_hyb_get(struct pq_hyb *hyb, uint32_t *out, uint32_t n)
{
    while (n > 0) {
        if (hyb->left == 0) {
            int rc = hyb_next_run(hyb);
            if (rc < 0) {
                return rc;
            }
        }
        uint32_t take = n < hyb->left ? n : hyb->left;
        if (hyb->rle) {
            for (uint32_t i = 0; i < take; i++) {
                out[i] = hyb->value;
            }
        } else if (hyb->width == 0) {
            memset(out, 0, (size_t)take * sizeof *out);
        } else {
            for (uint32_t i = 0; i < take; i++) {
                out[i] = hyb_unpack(hyb, hyb->bp_next + i);
            }
            hyb->bp_next += take;
        }
        hyb->left -= take;
        out += take;
        n -= take;
    }
    return FR_OK;
}

int64_t pq_hyb_get_nulls(struct pq_hyb *hyb, uint8_t *out, uint32_t n)
{
    int64_t present = 0;
    while (n > 0) {
        if (hyb->left == 0) {
            int rc = hyb_next_run(hyb);
            if (rc < 0) {
                return rc;
            }
        }
        uint32_t take = n < hyb->left ? n : hyb->left;
        if (hyb->rle) {
            if (hyb->value > 1) {
                return FR_ECORRUPT;
            }
            memset(out, hyb->value ? 0 : 1, take);
            present += hyb->value ? take : 0;
        } else if (hyb->width == 1) {
            for (uint32_t i = 0; i < take; i++) {
                uint32_t k = hyb->bp_next + i;
                uint8_t bit = (hyb->bp[k >> 3] >> (k & 7)) & 1;
                out[i] = (uint8_t)(bit ^ 1);
                present += bit;
            }
            hyb->bp_next += take;
        } else {
            return FR_ECORRUPT;
        }
        hyb->left -= take;
        out += take;
        n -= take;
    }
    return present;
}

/* ------------------------------------------------------------------ UTF-8 */

ptrdiff_t pq_utf8_check(const uint8_t *p, size_t len)
{
    size_t i = 0;
    while (i < len) {
        if (len - i >= 8) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (!(w & 0x8080808080808080ull)) {
                i += 8;
                continue;
            }
        }
        uint8_t c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        uint8_t lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
        if (c >= 0xc2 && c <= 0xdf) {
            need = 1;
        } else if (c >= 0xe0 && c <= 0xef) {
            need = 2;
            if (c == 0xe0) {
                lo = 0xa0; /* overlong */
            } else if (c == 0xed) {
                hi = 0x9f; /* surrogates */
            }
        } else if (c >= 0xf0 && c <= 0xf4) {
            need = 3;
            if (c == 0xf0) {
                lo = 0x90; /* overlong */
            } else if (c == 0xf4) {
                hi = 0x8f; /* past U+10FFFF */
            }
        } else {
            return (ptrdiff_t)i;
        }
        if (len - i <= need || p[i + 1] < lo || p[i + 1] > hi) {
            return (ptrdiff_t)i;
        }
        for (size_t k = 2; k <= need; k++) {
            if ((p[i + k] & 0xc0) != 0x80) {
                return (ptrdiff_t)i;
            }
        }
        i += need + 1;
    }
    return -1;
}

/* ----------------------------------------------------------------- hashing */

/* Fixed-size loads only (no variable-length memcpy: most dictionary strings
 * are short); the tail is read as an overlapping word ending at the last
 * byte, or as 4 + 4 / 1 + 1 + 1 bytes for strings under 8 bytes. */
static inline uint64_t load64(const uint8_t *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

static inline uint64_t load32(const uint8_t *p)
{
    uint32_t w;
    memcpy(&w, p, 4);
    return w;
}

uint64_t pq_hash_bytes(const uint8_t *p, size_t len)
{
    const uint64_t k = 0x9ddfea08eb382d69ull;
    uint64_t h = 0x9e3779b97f4a7c15ull ^ ((uint64_t)len * k);
    uint64_t w;
    if (len >= 8) {
        const uint8_t *last = p + len - 8;
        while (p < last) {
            h = (h ^ load64(p)) * k;
            h ^= h >> 29;
            p += 8;
        }
        w = load64(last);
    } else if (len >= 4) {
        w = load32(p) << 32 | load32(p + len - 4);
    } else if (len > 0) {
        w = (uint64_t)p[0] << 16 | (uint64_t)p[len / 2] << 8 | p[len - 1];
    } else {
        w = 0;
    }
    h = (h ^ w) * k;
    h ^= h >> 29;
    return pq_hash64(h);
}

/* -------------------------------------------------------------- dictionary */

int pq_dict_init(struct pq_dict *dict, int width, size_t max_bytes)
{
    memset(dict, 0, sizeof *dict);
    dict->width = width;
    dict->max_bytes = max_bytes;
    fr_buf_init(&dict->vals, max_bytes);
    return FR_OK;
}

void pq_dict_free(struct pq_dict *dict)
{
    if (!dict) {
        return;
    }
    free(dict->slots);
    free(dict->offs);
    fr_buf_free(&dict->vals);
    dict->slots = NULL;
    dict->offs = NULL;
    dict->n = dict->mask = dict->offs_cap = 0;
}

/* uint64 words per slot: hash|index, and for byte arrays length|offset. */
static inline size_t stride(const struct pq_dict *dict)
{
    return dict->width ? 1 : 2;
}

size_t pq_dict_mem(const struct pq_dict *dict)
{
    size_t slots = dict->slots ? ((size_t)dict->mask + 1) * stride(dict) * sizeof *dict->slots : 0;
    return slots + (size_t)dict->offs_cap * sizeof *dict->offs + dict->vals.alloc;
}

void pq_dict_clear(struct pq_dict *dict)
{
    if (dict->slots && dict->n) {
        memset(dict->slots, 0, ((size_t)dict->mask + 1) * stride(dict) * sizeof *dict->slots);
    }
    dict->n = 0;
    fr_buf_reset(&dict->vals);
}

/* Double the slot array (or create it) and reinsert every entry from the
 * hash bits kept in the slots. */
static int dict_grow(struct pq_dict *dict)
{
    size_t nslots = dict->slots ? ((size_t)dict->mask + 1) * 2 : 1024;
    size_t st = stride(dict);
    if (nslots > ((size_t)1 << 31)) {
        return FR_ETOOBIG;
    }
    uint64_t *slots = calloc(nslots * st, sizeof *slots);
    if (!slots) {
        return FR_ENOMEM;
    }
    uint32_t mask = (uint32_t)(nslots - 1);
    if (dict->slots) {
        for (size_t s = 0; s <= dict->mask; s++) {
            uint64_t e = dict->slots[s * st];
            if (!e) {
                continue;
            }
            uint32_t at = (uint32_t)(e >> 32) & mask;
            while (slots[at * st]) {
                at = (at + 1) & mask;
            }
            memcpy(&slots[at * st], &dict->slots[s * st], st * sizeof *slots);
        }
        free(dict->slots);
    }
    dict->slots = slots;
    dict->mask = mask;
    return FR_OK;
}

static int dict_room(struct pq_dict *dict, size_t entry_bytes)
{
    if (entry_bytes > dict->max_bytes || dict->vals.len > dict->max_bytes - entry_bytes) {
        return FR_ETOOBIG;
    }
    if (!dict->slots || ((size_t)dict->n + 1) * 2 > (size_t)dict->mask + 1) {
        return dict_grow(dict);
    }
    return FR_OK;
}

static inline uint32_t dict_hash_fixed(uint64_t bits)
{
    return (uint32_t)(pq_hash64(bits * 0x9e3779b97f4a7c15ull) >> 32);
}

void pq_dict_prefetch_fixed(const struct pq_dict *dict, uint64_t bits)
{
    if (dict->slots) {
        __builtin_prefetch(&dict->slots[dict_hash_fixed(bits) & dict->mask]);
    }
}

void pq_dict_prefetch_bytes(const struct pq_dict *dict, uint64_t hash)
{
    if (dict->slots) {
        __builtin_prefetch(&dict->slots[2 * (size_t)((uint32_t)(hash >> 32) & dict->mask)]);
    }
}

int pq_dict_put_fixed(struct pq_dict *dict, uint64_t bits, uint32_t *index)
{
    uint32_t h32 = dict_hash_fixed(bits);
    if (dict->slots) {
        uint32_t at = h32 & dict->mask;
        for (;;) {
            uint64_t e = dict->slots[at];
            if (!e) {
                break;
            }
            if ((uint32_t)(e >> 32) == h32) {
                uint32_t idx = (uint32_t)e - 1;
                const uint8_t *v = dict->vals.data + (size_t)idx * (size_t)dict->width;
                uint64_t have = 0;
                memcpy(&have, v, (size_t)dict->width);
                if (have == bits) {
                    *index = idx;
                    return 0;
                }
            }
            at = (at + 1) & dict->mask;
        }
    }
    int rc = dict_room(dict, (size_t)dict->width);
    if (rc < 0) {
        return rc;
    }
    rc = fr_buf_append(&dict->vals, &bits, (size_t)dict->width);
    if (rc < 0) {
        return rc;
    }
    uint32_t at = h32 & dict->mask;
    while (dict->slots[at]) {
        at = (at + 1) & dict->mask;
    }
    dict->slots[at] = (uint64_t)h32 << 32 | (uint64_t)(dict->n + 1);
    *index = dict->n++;
    return 1;
}

int pq_dict_put_bytes(struct pq_dict *dict, const uint8_t *p, uint32_t len, uint64_t hash,
                      uint32_t *index)
{
    uint32_t h32 = (uint32_t)(hash >> 32);
    if (dict->slots) {
        uint32_t at = h32 & dict->mask;
        for (;;) {
            uint64_t e = dict->slots[2 * (size_t)at];
            if (!e) {
                break;
            }
            if ((uint32_t)(e >> 32) == h32) {
                uint64_t aux = dict->slots[2 * (size_t)at + 1];
                if ((uint32_t)(aux >> 32) == len &&
                    memcmp(dict->vals.data + (uint32_t)aux + 4, p, len) == 0) {
                    *index = (uint32_t)e - 1;
                    return 0;
                }
            }
            at = (at + 1) & dict->mask;
        }
    }
    int rc = dict_room(dict, (size_t)len + 4);
    if (rc < 0) {
        return rc;
    }
    if (dict->n == dict->offs_cap) {
        uint32_t cap = dict->offs_cap ? dict->offs_cap * 2 : 256;
        uint32_t *offs = realloc(dict->offs, (size_t)cap * sizeof *offs);
        if (!offs) {
            return FR_ENOMEM;
        }
        dict->offs = offs;
        dict->offs_cap = cap;
    }
    rc = fr_buf_reserve(&dict->vals, (size_t)len + 4);
    if (rc < 0) {
        return rc;
    }
    uint32_t off = (uint32_t)dict->vals.len;
    dict->offs[dict->n] = off;
    pq_put_u32le(dict->vals.data + off, len);
    if (len) {
        memcpy(dict->vals.data + off + 4, p, len);
    }
    dict->vals.len += (size_t)len + 4;
    uint32_t at = h32 & dict->mask;
    while (dict->slots[2 * (size_t)at]) {
        at = (at + 1) & dict->mask;
    }
    dict->slots[2 * (size_t)at] = (uint64_t)h32 << 32 | (uint64_t)(dict->n + 1);
    dict->slots[2 * (size_t)at + 1] = (uint64_t)len << 32 | off;
    *index = dict->n++;
    return 1;
}

void pq_dict_pop(struct pq_dict *dict, uint64_t hash)
{
    if (dict->n == 0) {
        return;
    }
    uint32_t h32 = (uint32_t)(hash >> 32);
    uint64_t want = (uint64_t)h32 << 32 | (uint64_t)dict->n;
    size_t st = stride(dict);
    for (uint32_t at = h32 & dict->mask; dict->slots[at * st]; at = (at + 1) & dict->mask) {
        if (dict->slots[at * st] == want) {
            memset(&dict->slots[at * st], 0, st * sizeof *dict->slots);
            break;
        }
    }
    dict->n--;
    dict->vals.len = dict->width ? (size_t)dict->n * (size_t)dict->width : dict->offs[dict->n];
}

/* ------------------------------------------------------ string bounds */

/* Shorten s to at most max bytes without splitting a UTF-8 sequence. */
static size_t utf8_cut(const uint8_t *s, size_t len, size_t max)
{
    if (len <= max) {
        return len;
    }
    size_t n = max;
    while (n > 0 && (s[n] & 0xc0) == 0x80) {
        n--;
    }
    return n;
}

static size_t utf8_put(uint8_t *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (uint8_t)(0xc0 | cp >> 6);
        o[1] = (uint8_t)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (uint8_t)(0xe0 | cp >> 12);
        o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (uint8_t)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (uint8_t)(0xf0 | cp >> 18);
    o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (uint8_t)(0x80 | (cp & 0x3f));
    return 4;
}

/* s[0..n) is valid UTF-8 and a prefix of some string; make it the smallest
 * change that is greater than every string with that prefix by incrementing
 * its last code point (dropping trailing U+10FFFF). s has room for n + 1
 * bytes. Returns the new length, 0 when nothing can grow. */
static size_t utf8_bump(uint8_t *s, size_t n)
{
    while (n > 0) {
        size_t st = n - 1;
        while (st > 0 && (s[st] & 0xc0) == 0x80) {
            st--;
        }
        uint32_t cp = s[st];
        size_t k = n - st;
        if (k > 1) {
            cp &= 0x7fu >> k;
            for (size_t i = 1; i < k; i++) {
                cp = cp << 6 | (s[st + i] & 0x3f);
            }
        }
        cp = cp + 1 == 0xd800 ? 0xe000 : cp + 1;
        if (cp <= 0x10ffff) {
            return st + utf8_put(s + st, cp);
        }
        n = st;
    }
    return 0;
}

int pq_str_bounds(const uint8_t *lo, size_t lolen, const uint8_t *hi, size_t hilen, size_t max,
                  struct pq_bound *out)
{
    size_t lc = utf8_cut(lo, lolen, max), hc = utf8_cut(hi, hilen, max);
    uint8_t *m = malloc(lc + hc + 1 + (hc < hilen ? 0 : 0));
    if (!m) {
        return FR_ENOMEM;
    }
    if (lc) {
        memcpy(m, lo, lc);
    }
    out->lo_exact = lc == lolen;
    out->hi_exact = hc == hilen;
    size_t hn = hc;
    if (hc) {
        memcpy(m + lc, hi, hc);
    }
    if (!out->hi_exact) {
        hn = utf8_bump(m + lc, hc);
        if (hn == 0) {
            /* Only U+10FFFF code points: keep the whole value. */
            uint8_t *big = realloc(m, lc + hilen + 1);
            if (!big) {
                free(m);
                return FR_ENOMEM;
            }
            m = big;
            memcpy(m + lc, hi, hilen);
            hn = hilen;
            out->hi_exact = true;
        }
    }
    out->mem = m;
    out->lolen = lc;
    out->hilen = hn;
    return FR_OK;
}
