/*
 * codec.c — page compression. A struct pq_codec holds the reusable zstd
 * contexts of one writer or one scan (never shared between threads). Page
 * bodies are compressed whole, with no framing of our own (PQ-COMP):
 *
 *   codec         id  body bytes
 *   ------------  --  ------------------------------------------------------
 *   UNCOMPRESSED   0  the body as it is
 *   SNAPPY         1  raw Snappy block format (snappy_compress)
 *   ZSTD           6  one RFC 8878 frame with the content size in its header
 *
 * Every page written carries a CRC-32 (core/crc32.h) of its bytes as
 * written, after compression, in the page header's crc field (PQ-README:
 * "computed on the serialization binary representation of the page (as
 * written to disk), excluding the page header"), data and dictionary pages
 * alike (docs/adr/0062). Readers check it with fr_pq_reader_check_pages.
 *
 * Decompression checks that the output is exactly the size the page header
 * promised, as DuckDB and hyparquet do, so a lying header is an error here
 * too, and never an over-read or an unbounded allocation: the caller sized
 * dst from the (capped) header.
 */
#include "parquet/parquet_int.h"

#include "core/crc32.h"

#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_c_literalCompressionMode: zstd_random */
#include <zstd.h>

struct pq_codec {
    ZSTD_CCtx *cctx; /* created on first use */
    ZSTD_DCtx *dctx;
    int zstd_level;
};

int pq_codec_new(struct pq_codec **codec, int zstd_level)
{
    struct pq_codec *c = calloc(1, sizeof *c);
    if (!c) {
        return FR_ENOMEM;
    }
    c->zstd_level = zstd_level;
    *codec = c;
    return FR_OK;
}

void pq_codec_free(struct pq_codec *codec)
{
    if (!codec) {
        return;
    }
    ZSTD_freeCCtx(codec->cctx);
    ZSTD_freeDCtx(codec->dctx);
    free(codec);
}

bool pq_codec_known(int id)
{
    return id == FR_PQ_UNCOMPRESSED || id == FR_PQ_SNAPPY || id == FR_PQ_ZSTD;
}

/* zstd for a page of random-looking values (PQ_COMP_RANDOM): the codec's
 * level, but the fast strategy's match search steps 9 bytes at a time
 * (targetLength 8; level 1 steps 2) and the literals stay Huffman-coded
 * (zstd stops coding them whenever targetLength is set, which on hex UUIDs
 * would store them nearly raw). On a page of length-prefixed UUIDs zstd
 * finds only short matches, one at each value's start, and each resets its
 * search to the slow step. callgrind, the meta.id of the first 100,000
 * generated events in 800,000-byte pages: 39.2 instructions a byte at
 * 2.057x by default, 21.7 at 2.029x here. Steps that divide the values'
 * 40-byte stride, or come near it, lose those matches (1.91x at steps 5 to
 * 11, 9 excepted; docs/adr/0034). */
#define PQ_RANDOM_TARGET_LENGTH 8

static size_t zstd_random(ZSTD_CCtx *cctx, void *dst, size_t cap, const void *src, size_t len,
                          int level)
{
    size_t rc = ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
    if (!ZSTD_isError(rc)) {
        rc = ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
    }
    if (!ZSTD_isError(rc)) {
        rc = ZSTD_CCtx_setParameter(cctx, ZSTD_c_strategy, ZSTD_fast);
    }
    if (!ZSTD_isError(rc)) {
        rc = ZSTD_CCtx_setParameter(cctx, ZSTD_c_targetLength, PQ_RANDOM_TARGET_LENGTH);
    }
    if (!ZSTD_isError(rc)) {
        rc = ZSTD_CCtx_setParameter(cctx, ZSTD_c_literalCompressionMode, ZSTD_ps_enable);
    }
    return ZSTD_isError(rc) ? rc : ZSTD_compress2(cctx, dst, cap, src, len);
}

/* zstd-compress len bytes at src into out (cap >= ZSTD_compressBound(len)),
 * *n its size. */
static int zstd_into(struct pq_codec *codec, enum pq_comp_mode mode, const void *src, size_t len,
                     uint8_t *out, size_t cap, size_t *n)
{
    if (!codec->cctx) {
        codec->cctx = ZSTD_createCCtx();
        if (!codec->cctx) {
            return FR_ENOMEM;
        }
    }
    size_t r = mode == PQ_COMP_RANDOM
                   ? zstd_random(codec->cctx, out, cap, src, len, codec->zstd_level)
                   : ZSTD_compressCCtx(codec->cctx, out, cap, src, len, codec->zstd_level);
    if (ZSTD_isError(r)) {
        return pq_err(FR_EIO, "zstd compression failed: %s", ZSTD_getErrorName(r));
    }
    *n = r;
    return FR_OK;
}

int pq_compress(struct pq_codec *codec, int id, enum pq_comp_mode mode, const void *src, size_t len,
                struct fr_buf *dst)
{
    fr_buf_reset(dst);
    int rc;
    switch (id) {
    case FR_PQ_UNCOMPRESSED:
        return fr_buf_append(dst, src, len);
    case FR_PQ_SNAPPY: {
        size_t bound = snappy_max_compressed_length(len);
        rc = fr_buf_reserve(dst, bound);
        if (rc < 0) {
            return rc;
        }
        size_t out_len = bound;
        if (snappy_compress(src, len, (char *)dst->data, &out_len) != SNAPPY_OK) {
            return pq_err(FR_EIO, "snappy compression failed");
        }
        dst->len = out_len;
        return FR_OK;
    }
    case FR_PQ_ZSTD: {
        size_t bound = ZSTD_compressBound(len);
        rc = fr_buf_reserve(dst, bound);
        if (rc < 0) {
            return rc;
        }
        return zstd_into(codec, mode, src, len, dst->data, bound, &dst->len);
    }
    default:
        return pq_err(FR_EUNSUPPORTED, "compression codec %d is not supported", id);
    }
}

int pq_decompress(struct pq_codec *codec, int id, const void *src, size_t len, void *dst,
                  size_t dst_len)
{
    switch (id) {
    case FR_PQ_UNCOMPRESSED:
        if (len != dst_len) {
            return pq_err(FR_ECORRUPT, "uncompressed page: %zu bytes stored, header says %zu",
                          len, dst_len);
        }
        if (len) {
            memcpy(dst, src, len);
        }
        return FR_OK;
    case FR_PQ_SNAPPY: {
        size_t n;
        if (snappy_uncompressed_length(src, len, &n) != SNAPPY_OK) {
            return pq_err(FR_ECORRUPT, "snappy page: malformed length header");
        }
        if (n != dst_len) {
            return pq_err(FR_ECORRUPT, "snappy page decompresses to %zu bytes, header says %zu",
                          n, dst_len);
        }
        size_t out_len = dst_len;
        if (snappy_uncompress(src, len, dst, &out_len) != SNAPPY_OK || out_len != dst_len) {
            return pq_err(FR_ECORRUPT, "snappy page: malformed data");
        }
        return FR_OK;
    }
    case FR_PQ_ZSTD: {
        if (!codec->dctx) {
            codec->dctx = ZSTD_createDCtx();
            if (!codec->dctx) {
                return FR_ENOMEM;
            }
        }
        /* dst_len bounds the output; a frame that would exceed it fails
         * with "destination buffer too small" before writing past it. */
        size_t n = ZSTD_decompressDCtx(codec->dctx, dst, dst_len, src, len);
        if (ZSTD_isError(n)) {
            return pq_err(FR_ECORRUPT, "zstd page: %s", ZSTD_getErrorName(n));
        }
        if (n != dst_len) {
            return pq_err(FR_ECORRUPT, "zstd page decompresses to %zu bytes, header says %zu", n,
                          dst_len);
        }
        return FR_OK;
    }
    default:
        return pq_err(FR_EUNSUPPORTED, "compression codec %d is not supported", id);
    }
}

/* pq_emit_page for zstd, compressing straight into dst after room for the
 * header, which saves copying every compressed page from a scratch buffer
 * into its column's chunk (docs/BENCHMARKS.md, issue 5's session-17
 * section). The header's size depends on the compressed size only through
 * that size's varint, so the room is sized for a guess of a quarter of the
 * input (text pages compress 4-8x, ids 2x: the same varint width as the
 * result for most pages); when the result's varint is shorter or longer,
 * the compressed bytes move by the difference (at most 4 bytes). Only the
 * speed depends on the guess: the bytes are those of the copying path.
 * FR_ETOOBIG when dst has no room for the bound (the caller then copies:
 * the page itself may still fit). */
static int emit_zstd_direct(struct pq_codec *codec, enum pq_comp_mode mode, struct fr_buf *hdr,
                            struct pq_page *pg, const uint8_t *body, size_t len, struct fr_buf *dst,
                            uint64_t *uncomp)
{
    size_t bound = ZSTD_compressBound(len);
    if (len > INT32_MAX || bound > INT32_MAX) {
        return FR_ETOOBIG;
    }
    pg->uncompressed_size = (int32_t)len;
    pg->compressed_size = (int32_t)(len / 4);
    pg->has_crc = true;
    pg->crc = INT32_MIN; /* the widest varint: the real CRC's is never longer */
    fr_buf_reset(hdr);
    int rc = pq_page_encode(pg, hdr);
    if (rc < 0) {
        return rc;
    }
    /* a varint of an int32 is at most 5 bytes: room + 4 covers any size */
    size_t room = hdr->len, before = dst->len;
    if ((rc = fr_buf_reserve(dst, room + 4 + bound)) < 0) {
        return rc;
    }
    size_t n = 0;
    if ((rc = zstd_into(codec, mode, body, len, dst->data + before + room, bound, &n)) < 0) {
        return rc;
    }
    pg->compressed_size = (int32_t)n;
    pg->crc = (int32_t)fr_crc32(0, dst->data + before + room, n);
    fr_buf_reset(hdr);
    if ((rc = pq_page_encode(pg, hdr)) < 0) {
        return rc;
    }
    if (hdr->len != room) {
        memmove(dst->data + before + hdr->len, dst->data + before + room, n);
    }
    memcpy(dst->data + before, hdr->data, hdr->len);
    dst->len = before + hdr->len + n;
    *uncomp += hdr->len + len;
    return FR_OK;
}

int pq_emit_page(struct pq_codec *codec, int id, enum pq_comp_mode mode, struct fr_buf *comp,
                 struct pq_page *pg, const uint8_t *body, size_t len, struct fr_buf *dst,
                 uint64_t *uncomp)
{
    if (id == FR_PQ_ZSTD) {
        int rc = emit_zstd_direct(codec, mode, comp, pg, body ? body : (const uint8_t *)"", len,
                                  dst, uncomp);
        if (rc != FR_ETOOBIG) {
            return rc;
        }
    }
    const uint8_t *data = body;
    size_t clen = len;
    if (id != FR_PQ_UNCOMPRESSED) {
        int rc = pq_compress(codec, id, mode, body, len, comp);
        if (rc < 0) {
            return rc;
        }
        data = comp->data;
        clen = comp->len;
    }
    if (len > INT32_MAX || clen > INT32_MAX) {
        return pq_err(FR_ETOOBIG, "page of %zu bytes exceeds Parquet's 2 GiB limit", len);
    }
    pg->uncompressed_size = (int32_t)len;
    pg->compressed_size = (int32_t)clen;
    pg->has_crc = true;
    pg->crc = (int32_t)fr_crc32(0, data, clen);
    size_t before = dst->len;
    int rc = pq_page_encode(pg, dst);
    if (rc == FR_OK) {
        rc = fr_buf_append(dst, data, clen);
    }
    if (rc < 0) {
        dst->len = before;
        return rc == FR_ETOOBIG ? pq_err(rc, "column buffer full") : rc;
    }
    *uncomp += (dst->len - before - clen) + len;
    return FR_OK;
}
