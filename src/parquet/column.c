/*
 * column.c — the reader's column cursor: walks the pages of one column
 * chunk, decompresses them, and decodes batches of values with NULL flags.
 * One cursor per projected column per scan; one thread at a time.
 *
 * Pages taken (PQ-README, PQ-ENC, ICEBERG-PARQUET-NOTES §1.4-1.5):
 *
 *   page type          body (after the PageHeader)
 *   -----------------  ---------------------------------------------------------
 *   DICTIONARY_PAGE    PLAIN values, compressed; must come before data pages
 *   DATA_PAGE (v1)     compressed [u32 LE N][N bytes def levels][values]
 *                      (the level part only for OPTIONAL columns)
 *   DATA_PAGE_V2       [def_len bytes def levels, never compressed, no prefix]
 *                      [values, compressed when is_compressed]
 *   INDEX_PAGE, other  skipped
 *
 *   values encoding          types        bytes
 *   -----------------------  -----------  --------------------------------------
 *   PLAIN                    all          as in writer.c
 *   PLAIN_/RLE_DICTIONARY    all but bool 1 byte bit width, hybrid indices
 *   RLE                      BOOLEAN      u32 LE length, hybrid of width 1
 *   DELTA_BINARY_PACKED      INT32/INT64  header: ULEB block size, ULEB miniblocks
 *                                         per block, ULEB total count, zigzag
 *                                         first value; per block: zigzag min
 *                                         delta, one bit width per miniblock,
 *                                         miniblocks of bit-packed deltas
 *   DELTA_LENGTH_BYTE_ARRAY  BYTE_ARRAY   DELTA_BINARY_PACKED lengths, then the
 *                                         bytes back to back
 *   DELTA_BYTE_ARRAY         BYTE_ARRAY   DELTA_BINARY_PACKED prefix lengths,
 *                                         then the suffixes as
 *                                         DELTA_LENGTH_BYTE_ARRAY
 *   BYTE_STREAM_SPLIT        fixed width  byte k of value i at k * count + i
 *
 * Safety: every length is checked against the bytes present before use;
 * compressed and uncompressed page sizes are capped by opts.max_page_bytes;
 * a page may not claim more values than its chunk has left; dictionaries
 * have at most one entry per 4 (or width) bytes of page; values are decoded
 * batch by batch into arrays of opts.batch_rows entries, so a page that
 * claims billions of values costs no memory, only the decoding time of the
 * rows actually read.
 */
#include "parquet/parquet_int.h"

#include <stdio.h>
#include <stdlib.h>

#define HEADER_READ 256

/* ---------------------------------------------------------------- arena */

struct pq_arena_block {
    struct pq_arena_block *next;
    size_t cap, used;
    uint8_t data[];
};

void pq_arena_init(struct pq_arena *arena, size_t cap)
{
    arena->head = NULL;
    arena->used = 0;
    arena->cap = cap;
}

void *pq_arena_alloc(struct pq_arena *arena, size_t len)
{
    struct pq_arena_block *b = arena->head;
    if (b && b->cap - b->used >= len) {
        void *p = b->data + b->used;
        b->used += len;
        return p;
    }
    size_t cap = len > 256 * 1024 ? len : 256 * 1024;
    if (cap > arena->cap || arena->used > arena->cap - cap) {
        return NULL;
    }
    b = malloc(sizeof *b + cap);
    if (!b) {
        return NULL;
    }
    b->cap = cap;
    b->used = len;
    b->next = arena->head;
    arena->head = b;
    arena->used += cap;
    return b->data;
}

void pq_arena_reset(struct pq_arena *arena)
{
    /* Keep the newest block for reuse, free the rest. */
    struct pq_arena_block *b = arena->head;
    if (!b) {
        return;
    }
    struct pq_arena_block *rest = b->next;
    while (rest) {
        struct pq_arena_block *next = rest->next;
        free(rest);
        rest = next;
    }
    b->next = NULL;
    b->used = 0;
    arena->used = b->cap;
}

void pq_arena_free(struct pq_arena *arena)
{
    pq_arena_reset(arena);
    free(arena->head);
    arena->head = NULL;
    arena->used = 0;
}

/* ------------------------------------------------- DELTA_BINARY_PACKED */

struct dbp {
    const uint8_t *p, *end;
    uint32_t mbs, vpm; /* miniblocks per block, values per miniblock */
    uint64_t total, given;
    uint64_t last;
    uint64_t min_delta;
    const uint8_t *widths;
    uint32_t mb;      /* next miniblock of the block */
    const uint8_t *mbp, *mbend;
    uint32_t mb_left, mb_pos;
    int width;
};

static int uleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t out = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*p >= end) {
            return FR_ETRUNC;
        }
        uint8_t b = *(*p)++;
        out |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = out;
            return FR_OK;
        }
    }
    return FR_ECORRUPT;
}

static int dbp_init(struct dbp *d, const uint8_t *p, const uint8_t *end)
{
    uint64_t block, mbs, total, first;
    int rc;
    memset(d, 0, sizeof *d);
    if ((rc = uleb(&p, end, &block)) < 0 || (rc = uleb(&p, end, &mbs)) < 0 ||
        (rc = uleb(&p, end, &total)) < 0 || (rc = uleb(&p, end, &first)) < 0) {
        return rc;
    }
    if (block == 0 || block > (1u << 20) || mbs == 0 || block % mbs != 0 ||
        (block / mbs) % 8 != 0) {
        return FR_ECORRUPT;
    }
    d->p = p;
    d->end = end;
    d->mbs = (uint32_t)mbs;
    d->vpm = (uint32_t)(block / mbs);
    d->total = total;
    d->last = (uint64_t)pq_unzigzag64(first);
    d->mb = d->mbs;
    return FR_OK;
}

/* Bits [bit, bit + width) of p, LSB first; false past end. */
static bool get_bits(const uint8_t *p, const uint8_t *end, uint64_t bit, int width, uint64_t *v)
{
    if (width == 0) {
        *v = 0;
        return true;
    }
    uint64_t i = bit >> 3, last = (bit + (uint64_t)width - 1) >> 3;
    if (last >= (uint64_t)(end - p)) {
        return false;
    }
    unsigned shift = (unsigned)(bit & 7);
    uint64_t out = p[i++] >> shift;
    int filled = 8 - (int)shift;
    while (filled < width) {
        out |= (uint64_t)p[i++] << filled;
        filled += 8;
    }
    *v = width < 64 ? out & ((1ull << width) - 1) : out;
    return true;
}

static int dbp_get(struct dbp *d, uint64_t *out, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (d->given >= d->total) {
            return FR_ECORRUPT;
        }
        if (d->given++ == 0) {
            out[i] = d->last;
            continue;
        }
        if (d->mb_left == 0) {
            if (d->mb == d->mbs) {
                uint64_t md;
                int rc = uleb(&d->p, d->end, &md);
                if (rc < 0) {
                    return rc;
                }
                if ((size_t)(d->end - d->p) < d->mbs) {
                    return FR_ETRUNC;
                }
                d->min_delta = (uint64_t)pq_unzigzag64(md);
                d->widths = d->p;
                d->p += d->mbs;
                d->mb = 0;
            }
            d->width = d->widths[d->mb++];
            if (d->width > 64) {
                return FR_ECORRUPT;
            }
            size_t bytes = (size_t)d->vpm * (size_t)d->width / 8;
            size_t avail = (size_t)(d->end - d->p);
            d->mbp = d->p;
            d->p += bytes < avail ? bytes : avail;
            d->mbend = d->p;
            d->mb_left = d->vpm;
            d->mb_pos = 0;
        }
        uint64_t delta;
        if (!get_bits(d->mbp, d->mbend, (uint64_t)d->mb_pos * (uint64_t)d->width, d->width,
                      &delta)) {
            return FR_ETRUNC;
        }
        d->mb_pos++;
        d->mb_left--;
        d->last += d->min_delta + delta;
        out[i] = d->last;
    }
    return FR_OK;
}

/* Where a freshly initialised stream ends (to find what follows it). */
static int dbp_skip(const struct dbp *d, const uint8_t **after)
{
    const uint8_t *p = d->p;
    uint64_t left = d->total ? d->total - 1 : 0;
    while (left > 0) {
        uint64_t md;
        int rc = uleb(&p, d->end, &md);
        if (rc < 0) {
            return rc;
        }
        if ((size_t)(d->end - p) < d->mbs) {
            return FR_ETRUNC;
        }
        const uint8_t *widths = p;
        p += d->mbs;
        for (uint32_t m = 0; m < d->mbs && left > 0; m++) {
            if (widths[m] > 64) {
                return FR_ECORRUPT;
            }
            size_t bytes = (size_t)d->vpm * widths[m] / 8;
            if (bytes > (size_t)(d->end - p)) {
                return FR_ETRUNC;
            }
            p += bytes;
            left -= left < d->vpm ? left : d->vpm;
        }
    }
    *after = p;
    return FR_OK;
}

/* --------------------------------------------------------------- cursor */

union vals {
    uint8_t *b;
    int32_t *i32;
    int64_t *i64;
    double *f64;
    struct fr_pq_str *str;
    void *any;
};

struct pq_rcol {
    struct pq_colspec spec;
    struct fr_pq_read_opts opts;
    size_t esize; /* bytes of one output value */
    int width;    /* PLAIN bytes of a fixed-width value, 0 for BOOLEAN / BYTE_ARRAY */

    /* chunk */
    const struct fr_pq_in *in;
    struct pq_codec *codec;
    int codec_id;
    uint64_t pos, end;
    uint64_t values_left; /* values of the chunk in pages not yet loaded */
    bool data_seen;

    /* dictionary */
    struct fr_buf dict_raw;
    union vals dict;
    uint32_t dict_n, dict_cap;
    bool has_dict;

    /* page */
    struct fr_buf hdr, raw, page;
    uint32_t page_left; /* values (with NULLs) left in the page */
    bool has_defs;
    struct pq_hyb defs;
    int encoding;
    const uint8_t *vp, *vend; /* the values section */
    bool vinit;               /* lazily initialised decoder is ready */
    struct pq_hyb hyb;        /* dictionary indices, RLE booleans */
    uint64_t bit;             /* PLAIN booleans: next bit */
    struct dbp d1, d2;        /* DELTA_*: lengths / prefixes, suffix lengths */
    const uint8_t *data, *data_end;
    const uint8_t *prev; /* DELTA_BYTE_ARRAY: previous value */
    uint32_t prev_len;
    struct fr_buf prevbuf;
    uint64_t bss_n, bss_k;

    /* output */
    uint8_t *nulls;
    union vals out;
    uint32_t *idx;
    uint64_t *wide;
};

static int col_err(const struct pq_rcol *rc, int code, const char *what)
{
    return pq_err(code, "column '%s': %s (page at or before byte %llu)", rc->spec.name, what,
                  (unsigned long long)rc->pos);
}

int pq_rcol_new(const struct pq_colspec *spec, const struct fr_pq_read_opts *opts,
                struct pq_rcol **rcol)
{
    struct pq_rcol *rc = calloc(1, sizeof *rc);
    if (!rc) {
        return FR_ENOMEM;
    }
    rc->spec = *spec;
    rc->opts = *opts;
    switch (spec->phys) {
    case PQ_BOOLEAN:
        rc->esize = 1;
        break;
    case PQ_INT32:
        rc->esize = rc->width = 4;
        break;
    case PQ_INT64:
    case PQ_DOUBLE:
        rc->esize = rc->width = 8;
        break;
    default:
        rc->esize = sizeof(struct fr_pq_str);
        break;
    }
    size_t n = opts->batch_rows;
    fr_buf_init(&rc->hdr, opts->max_page_bytes);
    fr_buf_init(&rc->raw, opts->max_page_bytes);
    fr_buf_init(&rc->page, opts->max_page_bytes);
    fr_buf_init(&rc->dict_raw, opts->max_page_bytes);
    fr_buf_init(&rc->prevbuf, opts->max_page_bytes);
    rc->nulls = malloc(n);
    rc->out.any = malloc(n * rc->esize);
    rc->idx = malloc(n * sizeof *rc->idx);
    rc->wide = malloc(n * sizeof *rc->wide);
    if (!rc->nulls || !rc->out.any || !rc->idx || !rc->wide) {
        pq_rcol_free(rc);
        return FR_ENOMEM;
    }
    *rcol = rc;
    return FR_OK;
}

void pq_rcol_free(struct pq_rcol *rc)
{
    if (!rc) {
        return;
    }
    fr_buf_free(&rc->hdr);
    fr_buf_free(&rc->raw);
    fr_buf_free(&rc->page);
    fr_buf_free(&rc->dict_raw);
    fr_buf_free(&rc->prevbuf);
    free(rc->dict.any);
    free(rc->nulls);
    free(rc->out.any);
    free(rc->idx);
    free(rc->wide);
    free(rc);
}

void pq_rcol_begin(struct pq_rcol *rc, const struct fr_pq_in *in, struct pq_codec *codec,
                   int codec_id, uint64_t start, uint64_t len, uint64_t rows)
{
    rc->in = in;
    rc->codec = codec;
    rc->codec_id = codec_id;
    rc->pos = start;
    rc->end = start + len;
    rc->values_left = rows;
    rc->data_seen = false;
    rc->has_dict = false;
    rc->dict_n = 0;
    rc->page_left = 0;
}

/* ---------------------------------------------------------- page loading */

static int read_bytes(struct pq_rcol *rc, struct fr_buf *buf, uint64_t off, size_t len)
{
    fr_buf_reset(buf);
    int rc2 = fr_buf_reserve(buf, len);
    if (rc2 < 0) {
        return col_err(rc, rc2, "page larger than max_page_bytes");
    }
    rc2 = rc->in->ops->read_at(rc->in->ctx, buf->data, len, off);
    if (rc2 < 0) {
        return pq_err(rc2, "column '%s': reading %zu bytes at %llu: %s", rc->spec.name, len,
                      (unsigned long long)off, fr_strerror(rc2));
    }
    buf->len = len;
    return FR_OK;
}

/* Read the next page header and body into rc->raw. */
static int next_page(struct pq_rcol *rc, struct pq_page *pg)
{
    uint64_t avail = rc->end - rc->pos;
    if (avail == 0) {
        return col_err(rc, FR_ECORRUPT, "the chunk ends before all its values");
    }
    size_t max_hdr = rc->opts.max_page_bytes < 16u << 20 ? rc->opts.max_page_bytes : 16u << 20;
    size_t want = avail < HEADER_READ ? (size_t)avail : HEADER_READ;
    size_t hlen = 0;
    for (;;) {
        int rc2 = read_bytes(rc, &rc->hdr, rc->pos, want);
        if (rc2 < 0) {
            return rc2;
        }
        rc2 = pq_page_decode(rc->hdr.data, want, pg, &hlen);
        if (rc2 == FR_ETRUNC && want < avail && want < max_hdr) {
            size_t more = want * 8;
            want = more > avail ? (size_t)avail : more;
            want = want > max_hdr ? max_hdr : want;
            continue;
        }
        if (rc2 < 0) {
            return col_err(rc, rc2 == FR_ETRUNC ? FR_ETRUNC : FR_ECORRUPT, "bad page header");
        }
        break;
    }
    if ((uint64_t)pg->compressed_size > avail - hlen) {
        return col_err(rc, FR_ECORRUPT, "page runs past the end of its chunk");
    }
    if ((size_t)pg->compressed_size > rc->opts.max_page_bytes ||
        (size_t)pg->uncompressed_size > rc->opts.max_page_bytes) {
        return col_err(rc, FR_ETOOBIG, "page larger than max_page_bytes");
    }
    int rc2 = read_bytes(rc, &rc->raw, rc->pos + hlen, (size_t)pg->compressed_size);
    if (rc2 < 0) {
        return rc2;
    }
    rc->pos += hlen + (uint64_t)pg->compressed_size;
    return FR_OK;
}

/* Decompress src into buf (exactly len bytes); returns the bytes. */
static int inflate(struct pq_rcol *rc, const uint8_t *src, size_t srclen, struct fr_buf *buf,
                   size_t len, const uint8_t **out)
{
    if (rc->codec_id == FR_PQ_UNCOMPRESSED) {
        if (srclen != len) {
            return col_err(rc, FR_ECORRUPT, "uncompressed page size mismatch");
        }
        *out = src;
        return FR_OK;
    }
    fr_buf_reset(buf);
    int rc2 = fr_buf_reserve(buf, len);
    if (rc2 < 0) {
        return col_err(rc, rc2, "page larger than max_page_bytes");
    }
    rc2 = pq_decompress(rc->codec, rc->codec_id, src, srclen, buf->data, len);
    if (rc2 < 0) {
        char what[200];
        snprintf(what, sizeof what, "%s", fr_pq_errmsg());
        return col_err(rc, rc2, what);
    }
    buf->len = len;
    *out = buf->data;
    return FR_OK;
}

static int load_dictionary(struct pq_rcol *rc, const struct pq_page *pg)
{
    if (!pg->has_dict || rc->data_seen || rc->has_dict) {
        return col_err(rc, FR_ECORRUPT, "misplaced dictionary page");
    }
    if (pg->encoding != PQ_ENC_PLAIN && pg->encoding != PQ_ENC_PLAIN_DICTIONARY) {
        return col_err(rc, FR_EUNSUPPORTED, "dictionary page not PLAIN");
    }
    if (rc->spec.phys == PQ_BOOLEAN || pg->num_values < 0) {
        return col_err(rc, FR_ECORRUPT, "bad dictionary page");
    }
    /* The dictionary outlives many data pages: decompress into its own
     * buffer, copying even uncompressed bytes out of rc->raw. */
    const uint8_t *p;
    size_t len = (size_t)pg->uncompressed_size;
    int rc2;
    if (rc->codec_id == FR_PQ_UNCOMPRESSED) {
        if ((size_t)pg->compressed_size != len) {
            return col_err(rc, FR_ECORRUPT, "uncompressed page size mismatch");
        }
        fr_buf_reset(&rc->dict_raw);
        if ((rc2 = fr_buf_append(&rc->dict_raw, rc->raw.data, len)) < 0) {
            return rc2;
        }
        p = rc->dict_raw.data;
    } else if ((rc2 = inflate(rc, rc->raw.data, rc->raw.len, &rc->dict_raw, len, &p)) < 0) {
        return rc2;
    }
    uint32_t n = (uint32_t)pg->num_values;
    size_t min_entry = rc->width ? (size_t)rc->width : 4;
    if ((uint64_t)n * min_entry > len) {
        return col_err(rc, FR_ECORRUPT, "dictionary page shorter than its entries");
    }
    if (n > rc->dict_cap) {
        void *d = realloc(rc->dict.any, (size_t)n * rc->esize);
        if (!d) {
            return FR_ENOMEM;
        }
        rc->dict.any = d;
        rc->dict_cap = n;
    }
    if (rc->width) {
        if (n) {
            memcpy(rc->dict.any, p, (size_t)n * rc->esize);
        }
        if (rc->spec.ts_scale) {
            for (uint32_t i = 0; i < n; i++) {
                if (!pq_ts_scale(rc->spec.ts_scale, &rc->dict.i64[i])) {
                    return col_err(rc, FR_ERANGE, "timestamp out of range");
                }
            }
        }
    } else {
        const uint8_t *q = p, *end = p + len;
        for (uint32_t i = 0; i < n; i++) {
            if (end - q < 4 || pq_get_u32le(q) > (size_t)(end - q - 4)) {
                return col_err(rc, FR_ECORRUPT, "dictionary entry past the page");
            }
            uint32_t l = pq_get_u32le(q);
            rc->dict.str[i] = (struct fr_pq_str){(const char *)q + 4, l};
            q += 4 + (size_t)l;
        }
    }
    rc->dict_n = n;
    rc->has_dict = true;
    return FR_OK;
}

/* Load pages until a data page; set up its levels and values section. */
static int load_data_page(struct pq_rcol *rc)
{
    struct pq_page pg;
    for (;;) {
        int rc2 = next_page(rc, &pg);
        if (rc2 < 0) {
            return rc2;
        }
        if (pg.type == PQ_PAGE_DICTIONARY) {
            if ((rc2 = load_dictionary(rc, &pg)) < 0) {
                return rc2;
            }
            continue;
        }
        if (pg.type == PQ_PAGE_DATA || pg.type == PQ_PAGE_DATA_V2) {
            break;
        }
    }
    bool v2 = pg.type == PQ_PAGE_DATA_V2;
    if ((v2 ? !pg.has_v2 : !pg.has_data) || pg.num_values < 0) {
        return col_err(rc, FR_ECORRUPT, "data page without its header");
    }
    if ((uint64_t)pg.num_values > rc->values_left) {
        return col_err(rc, FR_ECORRUPT, "page holds more values than its chunk");
    }
    rc->values_left -= (uint64_t)pg.num_values;
    rc->data_seen = true;
    const uint8_t *p;
    size_t len;
    int rc2;
    if (!v2) {
        len = (size_t)pg.uncompressed_size;
        if ((rc2 = inflate(rc, rc->raw.data, rc->raw.len, &rc->page, len, &p)) < 0) {
            return rc2;
        }
        if (rc->spec.optional) {
            if (pg.def_encoding != PQ_ENC_RLE) {
                return col_err(rc, FR_EUNSUPPORTED, "definition levels not RLE");
            }
            if (len < 4 || pq_get_u32le(p) > len - 4) {
                return col_err(rc, FR_ECORRUPT, "definition levels past the page");
            }
            size_t n = pq_get_u32le(p);
            pq_hyb_init(&rc->defs, p + 4, n, 1);
            p += 4 + n;
            len -= 4 + n;
        }
    } else {
        if (pg.rep_len != 0) {
            return col_err(rc, FR_EUNSUPPORTED, "repetition levels in a flat column");
        }
        if (pg.def_len < 0 || pg.def_len > pg.compressed_size ||
            pg.def_len > pg.uncompressed_size) {
            return col_err(rc, FR_ECORRUPT, "bad level length in a v2 page");
        }
        size_t dl = (size_t)pg.def_len;
        if (rc->spec.optional) {
            pq_hyb_init(&rc->defs, rc->raw.data, dl, 1);
        }
        len = (size_t)pg.uncompressed_size - dl;
        const uint8_t *src = rc->raw.data + dl;
        size_t srclen = rc->raw.len - dl;
        if (pg.is_compressed && rc->codec_id != FR_PQ_UNCOMPRESSED) {
            if ((rc2 = inflate(rc, src, srclen, &rc->page, len, &p)) < 0) {
                return rc2;
            }
        } else if (srclen != len) {
            return col_err(rc, FR_ECORRUPT, "v2 page size mismatch");
        } else {
            p = src;
        }
    }
    rc->has_defs = rc->spec.optional;
    rc->page_left = (uint32_t)pg.num_values;
    rc->encoding = pg.encoding;
    rc->vp = p;
    rc->vend = p + len;
    rc->vinit = false;
    rc->bit = 0;
    return FR_OK;
}

/* First use of the values section of a page. */
static int init_values(struct pq_rcol *rc)
{
    const uint8_t *p = rc->vp, *end = rc->vend;
    size_t len = (size_t)(end - p);
    int rc2 = FR_OK;
    switch (rc->encoding) {
    case PQ_ENC_PLAIN:
        break;
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY:
        if (!rc->has_dict) {
            return col_err(rc, FR_ECORRUPT, "dictionary-encoded page without a dictionary");
        }
        if (len < 1 || p[0] > 32) {
            return col_err(rc, FR_ECORRUPT, "bad dictionary index bit width");
        }
        pq_hyb_init(&rc->hyb, p + 1, len - 1, p[0]);
        break;
    case PQ_ENC_RLE:
        if (rc->spec.phys != PQ_BOOLEAN) {
            return col_err(rc, FR_EUNSUPPORTED, "RLE values outside BOOLEAN");
        }
        if (len < 4 || pq_get_u32le(p) > len - 4) {
            return col_err(rc, FR_ECORRUPT, "RLE booleans past the page");
        }
        pq_hyb_init(&rc->hyb, p + 4, pq_get_u32le(p), 1);
        break;
    case PQ_ENC_DELTA_BINARY_PACKED:
        if (rc->spec.phys != PQ_INT32 && rc->spec.phys != PQ_INT64) {
            return col_err(rc, FR_EUNSUPPORTED, "DELTA_BINARY_PACKED outside integers");
        }
        rc2 = dbp_init(&rc->d1, p, end);
        break;
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
        if (rc->spec.phys != PQ_BYTE_ARRAY) {
            return col_err(rc, FR_EUNSUPPORTED, "DELTA_LENGTH_BYTE_ARRAY outside byte arrays");
        }
        if ((rc2 = dbp_init(&rc->d1, p, end)) == FR_OK) {
            rc2 = dbp_skip(&rc->d1, &rc->data);
            rc->data_end = end;
        }
        break;
    case PQ_ENC_DELTA_BYTE_ARRAY: {
        if (rc->spec.phys != PQ_BYTE_ARRAY) {
            return col_err(rc, FR_EUNSUPPORTED, "DELTA_BYTE_ARRAY outside byte arrays");
        }
        const uint8_t *q;
        if ((rc2 = dbp_init(&rc->d1, p, end)) == FR_OK && (rc2 = dbp_skip(&rc->d1, &q)) == FR_OK &&
            (rc2 = dbp_init(&rc->d2, q, end)) == FR_OK) {
            rc2 = dbp_skip(&rc->d2, &rc->data);
            rc->data_end = end;
        }
        rc->prev = (const uint8_t *)"";
        rc->prev_len = 0;
        break;
    }
    case PQ_ENC_BYTE_STREAM_SPLIT:
        if (!rc->width || len % (size_t)rc->width) {
            return col_err(rc, FR_ECORRUPT, "BYTE_STREAM_SPLIT length not a multiple of the width");
        }
        rc->bss_n = len / (size_t)rc->width;
        rc->bss_k = 0;
        break;
    default:
        return col_err(rc, FR_EUNSUPPORTED, "unsupported value encoding");
    }
    if (rc2 < 0) {
        return col_err(rc, rc2 == FR_ETRUNC ? FR_ETRUNC : FR_ECORRUPT, "bad DELTA header");
    }
    rc->vinit = true;
    return FR_OK;
}

/* ---------------------------------------------------------------- values */

static int store_wide(struct pq_rcol *rc, union vals out, const uint64_t *w, uint32_t m)
{
    if (rc->width == 4) {
        for (uint32_t i = 0; i < m; i++) {
            out.i32[i] = (int32_t)(uint32_t)w[i];
        }
        return FR_OK;
    }
    for (uint32_t i = 0; i < m; i++) {
        int64_t v = (int64_t)w[i];
        if (rc->spec.ts_scale && !pq_ts_scale(rc->spec.ts_scale, &v)) {
            return col_err(rc, FR_ERANGE, "timestamp out of range");
        }
        out.i64[i] = v;
    }
    return FR_OK;
}

static int put_bytes(struct pq_rcol *rc, struct pq_arena *arena, struct fr_pq_str *dst,
                     const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    if (alen + blen > UINT32_MAX) {
        return col_err(rc, FR_ETOOBIG, "value too long");
    }
    char *mem = pq_arena_alloc(arena, alen + blen + 1);
    if (!mem) {
        return col_err(rc, FR_ETOOBIG, "batch strings exceed the arena cap");
    }
    if (alen) {
        memcpy(mem, a, alen);
    }
    if (blen) {
        memcpy(mem + alen, b, blen);
    }
    dst->ptr = mem;
    dst->len = (uint32_t)(alen + blen);
    return FR_OK;
}

/* Decode m values densely into out. */
static int decode(struct pq_rcol *rc, uint32_t m, struct pq_arena *arena, union vals out)
{
    if (m == 0) {
        return FR_OK;
    }
    if (!rc->vinit) {
        int rc2 = init_values(rc);
        if (rc2 < 0) {
            return rc2;
        }
    }
    size_t avail = (size_t)(rc->vend - rc->vp);
    int rc2;
    switch (rc->encoding) {
    case PQ_ENC_PLAIN:
        if (rc->spec.phys == PQ_BOOLEAN) {
            if (rc->bit + m > (uint64_t)avail * 8) {
                return col_err(rc, FR_ETRUNC, "PLAIN booleans past the page");
            }
            for (uint32_t i = 0; i < m; i++, rc->bit++) {
                out.b[i] = (rc->vp[rc->bit >> 3] >> (rc->bit & 7)) & 1;
            }
            return FR_OK;
        }
        if (rc->width) {
            size_t bytes = (size_t)m * (size_t)rc->width;
            if (bytes > avail) {
                return col_err(rc, FR_ETRUNC, "PLAIN values past the page");
            }
            memcpy(out.any, rc->vp, bytes);
            rc->vp += bytes;
            if (rc->spec.ts_scale) {
                for (uint32_t i = 0; i < m; i++) {
                    if (!pq_ts_scale(rc->spec.ts_scale, &out.i64[i])) {
                        return col_err(rc, FR_ERANGE, "timestamp out of range");
                    }
                }
            }
            return FR_OK;
        }
        for (uint32_t i = 0; i < m; i++) {
            size_t left = (size_t)(rc->vend - rc->vp);
            if (left < 4 || pq_get_u32le(rc->vp) > left - 4) {
                return col_err(rc, FR_ETRUNC, "PLAIN string past the page");
            }
            uint32_t l = pq_get_u32le(rc->vp);
            if ((rc2 = put_bytes(rc, arena, &out.str[i], rc->vp + 4, l, NULL, 0)) < 0) {
                return rc2;
            }
            rc->vp += 4 + (size_t)l;
        }
        return FR_OK;
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY:
        if ((rc2 = pq_hyb_get(&rc->hyb, rc->idx, m)) < 0) {
            return col_err(rc, rc2, "bad dictionary indices");
        }
        for (uint32_t i = 0; i < m; i++) {
            uint32_t ix = rc->idx[i];
            if (ix >= rc->dict_n) {
                return col_err(rc, FR_ECORRUPT, "dictionary index out of range");
            }
            memcpy((uint8_t *)out.any + (size_t)i * rc->esize,
                   (const uint8_t *)rc->dict.any + (size_t)ix * rc->esize, rc->esize);
        }
        return FR_OK;
    case PQ_ENC_RLE:
        if ((rc2 = pq_hyb_get(&rc->hyb, rc->idx, m)) < 0) {
            return col_err(rc, rc2, "bad RLE booleans");
        }
        for (uint32_t i = 0; i < m; i++) {
            out.b[i] = (uint8_t)(rc->idx[i] & 1);
        }
        return FR_OK;
    case PQ_ENC_DELTA_BINARY_PACKED:
        if ((rc2 = dbp_get(&rc->d1, rc->wide, m)) < 0) {
            return col_err(rc, rc2, "bad DELTA_BINARY_PACKED data");
        }
        return store_wide(rc, out, rc->wide, m);
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
    case PQ_ENC_DELTA_BYTE_ARRAY: {
        bool dba = rc->encoding == PQ_ENC_DELTA_BYTE_ARRAY;
        struct dbp *lens = dba ? &rc->d2 : &rc->d1;
        if ((rc2 = dbp_get(lens, rc->wide, m)) < 0) {
            return col_err(rc, rc2, "bad DELTA lengths");
        }
        for (uint32_t i = 0; i < m; i++) {
            uint64_t l = rc->wide[i], pfx = 0;
            if (l > (uint64_t)(rc->data_end - rc->data)) {
                return col_err(rc, FR_ETRUNC, "DELTA string past the page");
            }
            if (dba) {
                if ((rc2 = dbp_get(&rc->d1, &pfx, 1)) < 0) {
                    return col_err(rc, rc2, "bad DELTA prefix lengths");
                }
                if (pfx > rc->prev_len) {
                    return col_err(rc, FR_ECORRUPT, "DELTA prefix longer than the previous value");
                }
            }
            rc2 = put_bytes(rc, arena, &out.str[i], rc->prev, (size_t)pfx, rc->data, (size_t)l);
            if (rc2 < 0) {
                return rc2;
            }
            rc->data += l;
            rc->prev = (const uint8_t *)out.str[i].ptr;
            rc->prev_len = out.str[i].len;
        }
        if (dba) {
            /* The arena is reset between batches: keep the last value. */
            fr_buf_reset(&rc->prevbuf);
            if ((rc2 = fr_buf_append(&rc->prevbuf, rc->prev, rc->prev_len)) < 0) {
                return rc2;
            }
            rc->prev = rc->prevbuf.data ? rc->prevbuf.data : (const uint8_t *)"";
        }
        return FR_OK;
    }
    case PQ_ENC_BYTE_STREAM_SPLIT: {
        if (rc->bss_k + m > rc->bss_n) {
            return col_err(rc, FR_ETRUNC, "BYTE_STREAM_SPLIT past the page");
        }
        uint8_t *o = out.any;
        for (uint32_t i = 0; i < m; i++, rc->bss_k++) {
            for (int b = 0; b < rc->width; b++) {
                o[(size_t)i * rc->esize + (size_t)b] = rc->vp[(size_t)b * rc->bss_n + rc->bss_k];
            }
        }
        if (rc->spec.ts_scale) {
            for (uint32_t i = 0; i < m; i++) {
                if (!pq_ts_scale(rc->spec.ts_scale, &out.i64[i])) {
                    return col_err(rc, FR_ERANGE, "timestamp out of range");
                }
            }
        }
        return FR_OK;
    }
    default:
        return col_err(rc, FR_EUNSUPPORTED, "unsupported value encoding");
    }
}

/* Spread m dense values over the take rows whose nulls[i] == 0. */
static void scatter(uint8_t *base, size_t es, const uint8_t *nulls, uint32_t take, uint32_t m)
{
    uint32_t j = m;
    for (uint32_t i = take; i-- > 0;) {
        if (nulls[i]) {
            memset(base + (size_t)i * es, 0, es);
        } else if (--j != i) {
            memcpy(base + (size_t)i * es, base + (size_t)j * es, es);
        }
    }
}

int pq_rcol_read(struct pq_rcol *rc, uint32_t n, struct pq_arena *arena, struct fr_pq_vec *vec)
{
    uint32_t done = 0;
    while (done < n) {
        if (rc->page_left == 0) {
            int rc2 = load_data_page(rc);
            if (rc2 < 0) {
                return rc2;
            }
            continue; /* a page may hold zero values */
        }
        uint32_t take = n - done < rc->page_left ? n - done : rc->page_left;
        uint8_t *nulls = rc->nulls + done;
        uint32_t m = take;
        if (rc->has_defs) {
            int64_t present = pq_hyb_get_nulls(&rc->defs, nulls, take);
            if (present < 0) {
                return col_err(rc, (int)present, "bad definition levels");
            }
            m = (uint32_t)present;
        } else {
            memset(nulls, 0, take);
        }
        union vals out = {.any = (uint8_t *)rc->out.any + (size_t)done * rc->esize};
        int rc2 = decode(rc, m, arena, out);
        if (rc2 < 0) {
            return rc2;
        }
        if (m != take) {
            scatter(out.any, rc->esize, nulls, take, m);
        }
        rc->page_left -= take;
        done += take;
    }
    vec->type = rc->spec.type;
    vec->nulls = rc->nulls;
    vec->v.b = rc->out.b;
    return FR_OK;
}
