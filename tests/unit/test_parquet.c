/*
 * test_parquet.c — unit tests for the byte-level layers of src/parquet:
 * Thrift compact round trips and the worked bytes of ICEBERG-PARQUET-NOTES
 * §1.2; the RLE / bit-packed hybrid against bytes computed by hand from the
 * spec (PQ-ENC), both directions, plus random round trips at every width;
 * UTF-8 validation; the writer's dictionary; string statistics bounds; the
 * codecs; the footer and page header encoders against their decoders,
 * including every truncation of an encoded footer.
 */
#include "check.h"

#include "core/crc32.h"
#include "parquet/parquet_int.h"

#include <stdlib.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static bool has_bytes(const struct fr_buf *b, const uint8_t *want, size_t n)
{
    for (size_t i = 0; i + n <= b->len; i++) {
        if (memcmp(b->data + i, want, n) == 0) {
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------- thrift */

static void test_thrift_worked_bytes(void)
{
    struct fr_buf buf;
    fr_buf_init(&buf, 1 << 16);
    struct pq_tw tw;

    /* field 17 after field 1 uses the long form: 05 22 <value>. */
    pq_tw_init(&tw, &buf);
    pq_tw_begin(&tw);
    pq_tw_i32(&tw, 1, 0);
    pq_tw_i32(&tw, 17, 1);
    pq_tw_end(&tw);
    CHECK_EQ_INT(tw.rc, FR_OK);
    static const uint8_t long_form[] = {0x15, 0x00, 0x05, 0x22, 0x02, 0x00};
    CHECK_EQ_INT(buf.len, sizeof long_form);
    CHECK_MEM(buf.data, long_form, sizeof long_form);

    /* list<string>["id"] -> 18 02 69 64 ; a list of 20 i32 -> f5 14 ... */
    fr_buf_reset(&buf);
    pq_tw_init(&tw, &buf);
    pq_tw_begin(&tw);
    pq_tw_list(&tw, 1, PQ_T_BINARY, 1);
    pq_tw_elem_bin(&tw, "id", 2);
    pq_tw_list(&tw, 2, PQ_T_I32, 20);
    for (int i = 0; i < 20; i++) {
        pq_tw_elem_i32(&tw, i - 10);
    }
    pq_tw_end(&tw);
    CHECK_EQ_INT(tw.rc, FR_OK);
    static const uint8_t lists[] = {0x19, 0x18, 0x02, 0x69, 0x64, 0x19, 0xf5, 0x14};
    CHECK_MEM(buf.data, lists, sizeof lists);

    /* Decode it back. */
    struct pq_tr tr;
    pq_tr_init(&tr, buf.data, buf.len);
    CHECK_EQ_INT(pq_tr_begin(&tr), FR_OK);
    int16_t id;
    uint8_t t, et;
    uint32_t n;
    CHECK_EQ_INT(pq_tr_field(&tr, &id, &t), 1);
    CHECK_EQ_INT(id, 1);
    CHECK_EQ_INT(pq_tr_list(&tr, t, &et, &n), FR_OK);
    CHECK_EQ_INT(n, 1);
    const uint8_t *s;
    uint32_t slen;
    CHECK_EQ_INT(pq_tr_bin(&tr, et, &s, &slen), FR_OK);
    CHECK(slen == 2 && memcmp(s, "id", 2) == 0);
    CHECK_EQ_INT(pq_tr_field(&tr, &id, &t), 1);
    CHECK_EQ_INT(pq_tr_list(&tr, t, &et, &n), FR_OK);
    CHECK_EQ_INT(n, 20);
    for (int i = 0; i < 20; i++) {
        int32_t v;
        CHECK_EQ_INT(pq_tr_i32(&tr, et, &v), FR_OK);
        CHECK_EQ_INT(v, i - 10);
    }
    CHECK_EQ_INT(pq_tr_field(&tr, &id, &t), 0);
    CHECK(tr.p == tr.end);
    fr_buf_free(&buf);
}

static void test_thrift_round_trip_and_skip(void)
{
    struct fr_buf buf;
    fr_buf_init(&buf, 1 << 16);
    struct pq_tw tw;
    pq_tw_init(&tw, &buf);
    pq_tw_begin(&tw);
    pq_tw_i64(&tw, 1, INT64_MIN);
    pq_tw_i64(&tw, 2, INT64_MAX);
    pq_tw_i32(&tw, 3, INT32_MIN);
    pq_tw_bool(&tw, 4, true);
    pq_tw_bool(&tw, 5, false);
    pq_tw_double(&tw, 6, -2.5);
    pq_tw_struct(&tw, 40); /* nested, long-form id, skipped by the reader */
    pq_tw_i32(&tw, 1, 7);
    pq_tw_struct(&tw, 2);
    pq_tw_bin(&tw, 3, "xyz", 3);
    pq_tw_end(&tw);
    pq_tw_end(&tw);
    pq_tw_i16(&tw, 41, -3);
    pq_tw_end(&tw);
    CHECK_EQ_INT(tw.rc, FR_OK);

    struct pq_tr tr;
    pq_tr_init(&tr, buf.data, buf.len);
    CHECK_EQ_INT(pq_tr_begin(&tr), FR_OK);
    int16_t id;
    uint8_t t;
    int64_t v64;
    int32_t v32;
    bool b;
    CHECK_EQ_INT(pq_tr_field(&tr, &id, &t), 1);
    CHECK_EQ_INT(pq_tr_i64(&tr, t, &v64), FR_OK);
    CHECK(v64 == INT64_MIN);
    CHECK_EQ_INT(pq_tr_field(&tr, &id, &t), 1);
    CHECK_EQ_INT(pq_tr_i64(&tr, t, &v64), FR_OK);
    CHECK(v64 == INT64_MAX);
    CHECK_EQ_INT(pq_tr_field(&tr, &id, &t), 1);
    CHECK_EQ_INT(pq_tr_i32(&tr, t, &v32), FR_OK);
    CHECK(v32 == INT32_MIN);
    CHECK_EQ_INT(pq_tr_field(&tr, &id, &t), 1);
    CHECK_EQ_INT(pq_tr_bool(&tr, t, &b), FR_OK);
    CHECK(b);
    CHECK_EQ_INT(pq_tr_field(&tr, &id, &t), 1);
    CHECK_EQ_INT(pq_tr_bool(&tr, t, &b), FR_OK);
    CHECK(!b);
    CHECK_EQ_INT(pq_tr_field(&tr, &id, &t), 1);
    CHECK_EQ_INT(t, PQ_T_DOUBLE);
    CHECK_EQ_INT(pq_tr_skip(&tr, t), FR_OK);
    CHECK_EQ_INT(pq_tr_field(&tr, &id, &t), 1);
    CHECK_EQ_INT(id, 40);
    CHECK_EQ_INT(pq_tr_skip(&tr, t), FR_OK);
    CHECK_EQ_INT(pq_tr_field(&tr, &id, &t), 1);
    CHECK_EQ_INT(id, 41);
    CHECK_EQ_INT(pq_tr_i32(&tr, t, &v32), FR_OK);
    CHECK_EQ_INT(v32, -3);
    CHECK_EQ_INT(pq_tr_field(&tr, &id, &t), 0);

    /* Every proper prefix fails cleanly while skipping the whole struct. */
    for (size_t cut = 0; cut < buf.len; cut++) {
        pq_tr_init(&tr, buf.data, cut);
        CHECK(pq_tr_skip(&tr, PQ_T_STRUCT) < 0);
    }
    fr_buf_free(&buf);
}

static void test_thrift_hostile(void)
{
    /* Nesting deeper than the limit. */
    uint8_t deep[200];
    for (size_t i = 0; i < sizeof deep; i++) {
        deep[i] = 0x1c; /* field delta 1, struct */
    }
    struct pq_tr tr;
    pq_tr_init(&tr, deep, sizeof deep);
    CHECK_EQ_INT(pq_tr_skip(&tr, PQ_T_STRUCT), FR_ECORRUPT);
    /* A list claiming more elements than bytes. */
    static const uint8_t biglist[] = {0x19, 0xf5, 0xff, 0xff, 0xff, 0x0f, 0x00};
    pq_tr_init(&tr, biglist, sizeof biglist);
    CHECK(pq_tr_skip(&tr, PQ_T_STRUCT) < 0);
    /* A varint longer than 10 bytes. */
    static const uint8_t longvar[] = {0x16, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                      0xff, 0xff, 0xff, 0xff, 0x01, 0x00};
    pq_tr_init(&tr, longvar, sizeof longvar);
    CHECK_EQ_INT(pq_tr_skip(&tr, PQ_T_STRUCT), FR_ECORRUPT);
    /* An unknown type nibble. */
    static const uint8_t badtype[] = {0x1e, 0x00};
    pq_tr_init(&tr, badtype, sizeof badtype);
    CHECK_EQ_INT(pq_tr_skip(&tr, PQ_T_STRUCT), FR_ECORRUPT);
    /* A binary longer than the input. */
    static const uint8_t badbin[] = {0x18, 0x10, 'a'};
    pq_tr_init(&tr, badbin, sizeof badbin);
    CHECK_EQ_INT(pq_tr_skip(&tr, PQ_T_STRUCT), FR_ETRUNC);
}

static void test_page_header_bytes(void)
{
    struct fr_buf buf;
    fr_buf_init(&buf, 1024);
    struct pq_page pg = {.type = PQ_PAGE_DATA,
                         .uncompressed_size = 40,
                         .compressed_size = 40,
                         .has_data = true,
                         .num_values = 5,
                         .encoding = PQ_ENC_PLAIN,
                         .def_encoding = PQ_ENC_RLE,
                         .rep_encoding = PQ_ENC_RLE};
    CHECK_EQ_INT(pq_page_encode(&pg, &buf), FR_OK);
    static const uint8_t want[] = {0x15, 0x00, 0x15, 0x50, 0x15, 0x50, 0x2c, 0x15, 0x0a,
                                   0x15, 0x00, 0x15, 0x06, 0x15, 0x06, 0x00, 0x00};
    CHECK_EQ_INT(buf.len, sizeof want);
    CHECK_MEM(buf.data, want, sizeof want);
    struct pq_page back;
    size_t used;
    CHECK_EQ_INT(pq_page_decode(buf.data, buf.len, &back, &used), FR_OK);
    CHECK_EQ_INT(used, buf.len);
    CHECK(back.has_data && back.num_values == 5 && back.uncompressed_size == 40);
    CHECK_EQ_INT(back.def_encoding, PQ_ENC_RLE);
    for (size_t cut = 0; cut < buf.len; cut++) {
        CHECK_EQ_INT(pq_page_decode(buf.data, cut, &back, &used), FR_ETRUNC);
    }
    /* Largest header fits the declared bound. */
    fr_buf_reset(&buf);
    pg = (struct pq_page){.type = PQ_PAGE_DATA,
                          .uncompressed_size = INT32_MIN,
                          .compressed_size = INT32_MIN,
                          .has_crc = true,
                          .crc = INT32_MIN,
                          .has_data = true,
                          .num_values = INT32_MIN,
                          .encoding = INT32_MIN,
                          .def_encoding = INT32_MIN,
                          .rep_encoding = INT32_MIN};
    CHECK_EQ_INT(pq_page_encode(&pg, &buf), FR_OK);
    CHECK(buf.len <= PQ_PAGE_HEADER_MAX);
    fr_buf_free(&buf);
}

static void test_footer_round_trip(void)
{
    struct pq_selem schema[3] = {
        {.name = {(const uint8_t *)"schema", 6},
         .type = -1,
         .repetition = -1,
         .num_children = 2,
         .converted = -1,
         .field_id = -1},
        {.name = {(const uint8_t *)"ts", 2},
         .type = PQ_INT64,
         .repetition = PQ_OPTIONAL,
         .converted = PQ_CT_TIMESTAMP_MICROS,
         .field_id = 7,
         .logical = PQ_LT_TIMESTAMP,
         .ts_utc = true,
         .ts_unit = PQ_UNIT_MICROS},
        {.name = {(const uint8_t *)"s", 1},
         .type = PQ_BYTE_ARRAY,
         .repetition = PQ_REQUIRED,
         .converted = PQ_CT_UTF8,
         .field_id = 8,
         .logical = PQ_LT_STRING},
    };
    struct pq_chunk chunks[2] = {
        {.type = PQ_INT64,
         .encodings = 1u << PQ_ENC_PLAIN | 1u << PQ_ENC_RLE,
         .path = {(const uint8_t *)"ts", 2},
         .path_len = 1,
         .codec = FR_PQ_ZSTD,
         .num_values = 3,
         .total_uncompressed = 100,
         .total_compressed = 50,
         .data_page_offset = 4,
         .has_stats = true,
         .stats = {.has = PQ_ST_NULL_COUNT | PQ_ST_MIN_VALUE | PQ_ST_MAX_VALUE,
                   .null_count = 1,
                   .min_value = {(const uint8_t *)"\1\0\0\0\0\0\0\0", 8},
                   .max_value = {(const uint8_t *)"\2\0\0\0\0\0\0\0", 8}}},
        {.type = PQ_BYTE_ARRAY,
         .encodings = 1u << PQ_ENC_RLE_DICTIONARY,
         .path = {(const uint8_t *)"s", 1},
         .path_len = 1,
         .codec = FR_PQ_ZSTD,
         .num_values = 3,
         .total_uncompressed = 10,
         .total_compressed = 9,
         .data_page_offset = 60,
         .has_dict_offset = true,
         .dict_page_offset = 54},
    };
    struct pq_rowgroup rg = {.chunks = chunks,
                             .nchunks = 2,
                             .total_byte_size = 110,
                             .num_rows = 3,
                             .file_offset = 4,
                             .total_compressed = 59};
    struct pq_kv kv = {{(const uint8_t *)"iceberg.schema", 14}, {(const uint8_t *)"{}", 2}, true};
    uint8_t orders[2] = {1, 1};
    struct pq_meta m = {.version = 1,
                        .schema = schema,
                        .nschema = 3,
                        .num_rows = 3,
                        .rgs = &rg,
                        .nrgs = 1,
                        .kv = &kv,
                        .nkv = 1,
                        .created_by = {(const uint8_t *)"freshet version 0", 17},
                        .has_created_by = true,
                        .ncolumn_orders = 2,
                        .column_orders = orders};
    struct fr_buf buf;
    fr_buf_init(&buf, 1 << 20);
    CHECK_EQ_INT(pq_meta_encode(&m, &buf), FR_OK);
    /* LogicalType TIMESTAMP(UTC, MICROS) and STRING, as in the notes. */
    static const uint8_t ts[] = {0x8c, 0x11, 0x1c, 0x2c, 0x00, 0x00, 0x00, 0x00};
    static const uint8_t str[] = {0x1c, 0x00, 0x00};
    CHECK(has_bytes(&buf, ts, sizeof ts));
    CHECK(has_bytes(&buf, str, sizeof str));

    struct pq_meta back;
    CHECK_EQ_INT(pq_meta_decode(buf.data, buf.len, &back), FR_OK);
    CHECK_EQ_INT(back.nschema, 3);
    CHECK_EQ_INT(back.schema[1].field_id, 7);
    CHECK_EQ_INT(back.schema[1].logical, PQ_LT_TIMESTAMP);
    CHECK(back.schema[1].ts_utc);
    CHECK_EQ_INT(back.schema[1].ts_unit, PQ_UNIT_MICROS);
    CHECK_EQ_INT(back.schema[2].logical, PQ_LT_STRING);
    CHECK_EQ_INT(back.nrgs, 1);
    CHECK_EQ_INT(back.rgs[0].nchunks, 2);
    CHECK_EQ_INT(back.rgs[0].chunks[1].dict_page_offset, 54);
    CHECK(back.rgs[0].chunks[1].has_dict_offset);
    CHECK_EQ_INT(back.rgs[0].chunks[0].stats.null_count, 1);
    CHECK_EQ_INT(back.rgs[0].chunks[0].encodings, chunks[0].encodings);
    CHECK_EQ_INT(back.nkv, 1);
    CHECK(back.kv[0].value.len == 2 && memcmp(back.kv[0].value.ptr, "{}", 2) == 0);
    CHECK_EQ_INT(back.ncolumn_orders, 2);
    CHECK(back.column_orders[0] == 1);
    pq_meta_free(&back);

    /* Every truncation is an error, never a crash or a leak. */
    for (size_t cut = 0; cut < buf.len; cut++) {
        CHECK(pq_meta_decode(buf.data, cut, &back) < 0);
    }
    /* Random byte flips: any outcome but a crash. */
    for (int i = 0; i < 2000; i++) {
        uint8_t *copy = malloc(buf.len);
        memcpy(copy, buf.data, buf.len);
        for (int k = 0; k < 3; k++) {
            copy[rnd() % buf.len] = (uint8_t)rnd();
        }
        if (pq_meta_decode(copy, buf.len, &back) == FR_OK) {
            pq_meta_free(&back);
        }
        free(copy);
    }
    fr_buf_free(&buf);
}

/* ------------------------------------------------------------- hybrid */

static void expect_u8(const uint8_t *vals, uint32_t n, int width, const uint8_t *want,
                      size_t wlen)
{
    struct fr_buf buf;
    fr_buf_init(&buf, 1 << 20);
    CHECK_EQ_INT(pq_hyb_encode_u8(&buf, vals, n, width), FR_OK);
    CHECK_EQ_INT(buf.len, wlen);
    if (buf.len == wlen) {
        CHECK_MEM(buf.data, want, wlen);
    }
    fr_buf_free(&buf);
}

static void test_hybrid_hand_bytes(void)
{
    /* Def levels 1 1 1 0 1: runs shorter than 8 are bit-packed -> 03 17. */
    static const uint8_t lv[] = {1, 1, 1, 0, 1};
    static const uint8_t bp[] = {0x03, 0x17};
    expect_u8(lv, 5, 1, bp, sizeof bp);
    /* 100 ones: one RLE run, header 100 << 1 = 200 = c8 01, value 01. */
    uint8_t ones[100];
    memset(ones, 1, sizeof ones);
    static const uint8_t rle[] = {0xc8, 0x01, 0x01};
    expect_u8(ones, 100, 1, rle, sizeof rle);
    /* 1 0 then eleven 1s: filling the first group would leave a repeat of
     * 5 < 8, so everything is bit-packed: 2 groups -> 05 fd 1f. */
    uint8_t mix[13] = {1, 0};
    memset(mix + 2, 1, 11);
    static const uint8_t mixb[] = {0x05, 0xfd, 0x1f};
    expect_u8(mix, 13, 1, mixb, sizeof mixb);
    /* 0 0 0 then twenty 1s: the group borrows five 1s (03 f8), the other
     * fifteen are an RLE run (1e 01). */
    uint8_t br[23] = {0};
    memset(br + 3, 1, 20);
    static const uint8_t brb[] = {0x03, 0xf8, 0x1e, 0x01};
    expect_u8(br, 23, 1, brb, sizeof brb);
    /* The spec's example: 0..7 at width 3 -> 03 88 c6 fa. */
    static const uint8_t seq[] = {0, 1, 2, 3, 4, 5, 6, 7};
    static const uint8_t seqb[] = {0x03, 0x88, 0xc6, 0xfa};
    expect_u8(seq, 8, 3, seqb, sizeof seqb);

    /* Decoding the RLE spelling of 1 1 1 0 1 from the notes. */
    static const uint8_t rl[] = {0x06, 0x01, 0x02, 0x00, 0x02, 0x01};
    struct pq_hyb h;
    uint32_t out[8];
    pq_hyb_init(&h, rl, sizeof rl, 1);
    CHECK_EQ_INT(pq_hyb_get(&h, out, 5), FR_OK);
    CHECK(out[0] == 1 && out[1] == 1 && out[2] == 1 && out[3] == 0 && out[4] == 1);
    CHECK_EQ_INT(pq_hyb_get(&h, out, 1), FR_ETRUNC);
    uint8_t nulls[5];
    pq_hyb_init(&h, bp, sizeof bp, 1);
    CHECK_EQ_INT(pq_hyb_get_nulls(&h, nulls, 5), 4);
    CHECK(nulls[3] == 1 && nulls[0] == 0 && nulls[4] == 0);
    pq_hyb_init(&h, seqb, sizeof seqb, 3);
    CHECK_EQ_INT(pq_hyb_get(&h, out, 8), FR_OK);
    for (uint32_t i = 0; i < 8; i++) {
        CHECK_EQ_INT(out[i], i);
    }
    /* An RLE value wider than the bit width is corrupt. */
    static const uint8_t wide[] = {0x02, 0x05};
    pq_hyb_init(&h, wide, sizeof wide, 2);
    CHECK_EQ_INT(pq_hyb_get(&h, out, 1), FR_ECORRUPT);
    /* Width 0: every value is 0. */
    static const uint8_t zero[] = {0x08};
    pq_hyb_init(&h, zero, sizeof zero, 0);
    CHECK_EQ_INT(pq_hyb_get(&h, out, 4), FR_OK);
    CHECK(out[0] == 0 && out[3] == 0);
}

/* Runs of distinct values are bit-packed: the bytes against a packer
 * written here bit by bit (LSB first, groups of 8 padded with zeros, one
 * header per 63 groups), at every width. */
static size_t ref_packed(const uint32_t *v, uint32_t n, int width, uint8_t *out)
{
    size_t o = 0;
    for (uint32_t at = 0; at < n; at += 63 * 8) {
        uint32_t take = n - at < 63 * 8 ? n - at : 63 * 8, groups = (take + 7) / 8;
        out[o++] = (uint8_t)(groups << 1 | 1);
        memset(out + o, 0, (size_t)groups * (size_t)width);
        for (uint32_t k = 0; k < groups * 8; k++) {
            uint32_t x = k < take ? v[at + k] : 0;
            for (int b = 0; b < width; b++) {
                size_t bit = (size_t)k * (size_t)width + (size_t)b;
                if ((x >> b) & 1) {
                    out[o + bit / 8] |= (uint8_t)(1u << (bit % 8));
                }
            }
        }
        o += (size_t)groups * (size_t)width;
    }
    return o;
}

static void test_hybrid_packed_bytes(void)
{
    struct fr_buf buf;
    fr_buf_init(&buf, 1 << 20);
    uint32_t vals[1100];
    uint8_t want[1100 * 4 + 64];
    uint8_t small[1100];
    for (int width = 1; width <= 32; width++) {
        for (int rep = 0; rep < 4; rep++) {
            uint32_t n = rep == 0 ? 8 : 1 + (uint32_t)(rnd() % 1100);
            uint64_t mask = width == 32 ? 0xffffffffull : (1ull << width) - 1;
            for (uint32_t i = 0; i < n; i++) {
                /* no two neighbours equal: nothing becomes an RLE run */
                do {
                    vals[i] = (uint32_t)(rnd() & mask);
                } while (i > 0 && vals[i] == vals[i - 1] && width > 1);
                if (width == 1) {
                    vals[i] = i & 1;
                }
            }
            size_t wlen = ref_packed(vals, n, width, want);
            fr_buf_reset(&buf);
            CHECK_EQ_INT(pq_hyb_encode_u32(&buf, vals, n, width), FR_OK);
            CHECK_EQ_INT(buf.len, wlen);
            CHECK(buf.len == wlen && memcmp(buf.data, want, wlen) == 0);
            if (width <= 8) {
                for (uint32_t i = 0; i < n; i++) {
                    small[i] = (uint8_t)vals[i];
                }
                fr_buf_reset(&buf);
                CHECK_EQ_INT(pq_hyb_encode_u8(&buf, small, n, width), FR_OK);
                CHECK(buf.len == wlen && memcmp(buf.data, want, wlen) == 0);
            }
        }
    }
    fr_buf_free(&buf);
}

static void test_hybrid_random(void)
{
    struct fr_buf buf;
    fr_buf_init(&buf, 1 << 24);
    uint32_t *vals = malloc(5000 * sizeof *vals), *back = malloc(5000 * sizeof *back);
    for (int iter = 0; iter < 400; iter++) {
        int width = 1 + (int)(rnd() % 32);
        uint32_t n = (uint32_t)(rnd() % 5000);
        uint64_t mask = width == 32 ? 0xffffffffull : (1ull << width) - 1;
        for (uint32_t i = 0; i < n; i++) {
            /* Mix long repeats and noise. */
            if (i > 0 && rnd() % 4 != 0) {
                vals[i] = vals[i - 1];
            } else {
                vals[i] = (uint32_t)(rnd() & mask);
            }
        }
        fr_buf_reset(&buf);
        CHECK_EQ_INT(pq_hyb_encode_u32(&buf, vals, n, width), FR_OK);
        if (width <= 8) {
            /* the byte encoder finds runs its own way: the same bytes */
            uint8_t *small = malloc(n + 1);
            for (uint32_t i = 0; i < n; i++) {
                small[i] = (uint8_t)vals[i];
            }
            struct fr_buf b8;
            fr_buf_init(&b8, 1 << 24);
            CHECK_EQ_INT(pq_hyb_encode_u8(&b8, small, n, width), FR_OK);
            CHECK(b8.len == buf.len && memcmp(b8.data, buf.data, buf.len) == 0);
            fr_buf_free(&b8);
            free(small);
        }
        struct pq_hyb h;
        pq_hyb_init(&h, buf.data, buf.len, width);
        CHECK_EQ_INT(pq_hyb_get(&h, back, n), FR_OK);
        CHECK(n == 0 || memcmp(vals, back, n * sizeof *vals) == 0);
        /* Chopping the encoding short is an error, not an over-read. */
        if (buf.len > 1 && n > 0) {
            pq_hyb_init(&h, buf.data, buf.len / 2, width);
            (void)pq_hyb_get(&h, back, n);
        }
    }
    free(vals);
    free(back);
    fr_buf_free(&buf);
}

/* --------------------------------------------------------------- UTF-8 */

static void test_utf8(void)
{
    static const struct {
        const char *s;
        ptrdiff_t bad;
    } cases[] = {
        {"", -1},
        {"plain ascii text, long enough for the word path", -1},
        {"\xc3\xa9t\xc3\xa9", -1},              /* été */
        {"\xe6\x97\xa5\xe6\x9c\xac", -1},       /* 日本 */
        {"\xf0\x9f\x98\x80 emoji", -1},         /* U+1F600 */
        {"\xf4\x8f\xbf\xbf", -1},               /* U+10FFFF */
        {"ok\xc0\x80", 2},                      /* overlong NUL */
        {"\xe0\x80\x80", 0},                    /* overlong */
        {"abc\xed\xa0\x80", 3},                 /* surrogate */
        {"\xf4\x90\x80\x80", 0},                /* past U+10FFFF */
        {"\xf5\x80\x80\x80", 0},
        {"12345678\x80", 8},                    /* lone continuation */
        {"\xe2\x82", 0},                        /* truncated */
        {"\xc3\x28", 0},                        /* bad continuation */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ptrdiff_t got = pq_utf8_check((const uint8_t *)cases[i].s, strlen(cases[i].s));
        if (got != cases[i].bad) {
            fprintf(stderr, "utf8 case %zu: got %td want %td\n", i, got, cases[i].bad);
        }
        CHECK(got == cases[i].bad);
    }
}

/* ---------------------------------------------------------- dictionary */

static void test_dictionary(void)
{
    struct pq_dict d;
    pq_dict_init(&d, 8, 8 * 1000);
    uint32_t ix;
    for (uint64_t v = 0; v < 1000; v++) {
        CHECK_EQ_INT(pq_dict_put_fixed(&d, v * 7919, &ix), 1);
        CHECK_EQ_INT(ix, v);
    }
    for (uint64_t v = 0; v < 1000; v++) {
        CHECK_EQ_INT(pq_dict_put_fixed(&d, v * 7919, &ix), 0);
        CHECK_EQ_INT(ix, v);
    }
    CHECK_EQ_INT(pq_dict_put_fixed(&d, 1, &ix), FR_ETOOBIG);
    CHECK_EQ_INT(d.vals.len, 8000);
    pq_dict_clear(&d);
    CHECK_EQ_INT(pq_dict_put_fixed(&d, 42, &ix), 1);
    CHECK_EQ_INT(ix, 0);
    pq_dict_free(&d);

    pq_dict_init(&d, 0, 1 << 16);
    char key[32];
    for (int i = 0; i < 500; i++) {
        int n = snprintf(key, sizeof key, "key-%d", i);
        CHECK_EQ_INT(pq_dict_put_bytes(&d, (const uint8_t *)key, (uint32_t)n,
                                       pq_hash_bytes((const uint8_t *)key, (size_t)n), &ix),
                     1);
        CHECK_EQ_INT(ix, i);
    }
    size_t before = d.vals.len;
    uint64_t h = pq_hash_bytes((const uint8_t *)"fresh", 5);
    CHECK_EQ_INT(pq_dict_put_bytes(&d, (const uint8_t *)"fresh", 5, h, &ix), 1);
    pq_dict_pop(&d, h);
    CHECK_EQ_INT(d.n, 500);
    CHECK_EQ_INT(d.vals.len, before);
    CHECK_EQ_INT(pq_dict_put_bytes(&d, (const uint8_t *)"key-7", 5,
                                   pq_hash_bytes((const uint8_t *)"key-7", 5), &ix),
                 0);
    CHECK_EQ_INT(ix, 7);
    CHECK_EQ_INT(pq_dict_put_bytes(&d, (const uint8_t *)"fresh", 5, h, &ix), 1);
    CHECK_EQ_INT(ix, 500);
    /* The empty string is a value like any other. */
    CHECK_EQ_INT(pq_dict_put_bytes(&d, (const uint8_t *)"", 0, pq_hash_bytes(NULL, 0), &ix), 1);
    CHECK_EQ_INT(pq_dict_put_bytes(&d, (const uint8_t *)"", 0, pq_hash_bytes(NULL, 0), &ix), 0);
    pq_dict_free(&d);
}

/* ------------------------------------------------------- string bounds */

static void test_string_bounds(void)
{
    char lo[300], hi[300];
    memset(lo, 'a', sizeof lo);
    memset(hi, 'z', sizeof hi);
    struct pq_bound b;
    CHECK_EQ_INT(pq_str_bounds((uint8_t *)lo, 300, (uint8_t *)hi, 300, 16, &b), FR_OK);
    CHECK_EQ_INT(b.lolen, 16);
    CHECK(!b.lo_exact && !b.hi_exact);
    CHECK_EQ_INT(b.hilen, 16);
    CHECK(memcmp(b.mem + 16, "zzzzzzzzzzzzzzz{", 16) == 0);
    free(b.mem);

    /* Short values stay exact. */
    CHECK_EQ_INT(pq_str_bounds((uint8_t *)"abc", 3, (uint8_t *)"abd", 3, 16, &b), FR_OK);
    CHECK(b.lo_exact && b.hi_exact && b.lolen == 3 && b.hilen == 3);
    free(b.mem);

    /* Cuts never split a code point: "é" x 10 cut at 5 bytes keeps 2 of them;
     * the upper bound becomes "éê". */
    const char *e10 = "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9";
    CHECK_EQ_INT(pq_str_bounds((const uint8_t *)e10, 20, (const uint8_t *)e10, 20, 16, &b), FR_OK);
    CHECK_EQ_INT(b.lolen, 16);
    CHECK_EQ_INT(b.hilen, 16);
    CHECK(memcmp(b.mem + 16 + 14, "\xc3\xaa", 2) == 0);
    free(b.mem);
    const char *e3 = "x\xe6\x97\xa5\xe6\x9c\xac\xe6\x9c\xac\xe6\x9c\xac\xe6\x9c\xac\xe6\x9c\xac";
    CHECK_EQ_INT(pq_str_bounds((const uint8_t *)e3, 19, (const uint8_t *)e3, 19, 17, &b), FR_OK);
    CHECK_EQ_INT(b.lolen, 16); /* 1 + 5 x 3 */
    free(b.mem);

    /* A prefix of U+10FFFF cannot grow: the whole value is kept. */
    uint8_t maxcp[24];
    for (int i = 0; i < 6; i++) {
        memcpy(maxcp + 4 * i, "\xf4\x8f\xbf\xbf", 4);
    }
    CHECK_EQ_INT(pq_str_bounds(maxcp, 24, maxcp, 24, 16, &b), FR_OK);
    CHECK(b.hi_exact);
    CHECK_EQ_INT(b.hilen, 24);
    free(b.mem);
    /* 'a' then U+10FFFF...: the bound drops them and bumps 'a' to 'b'. */
    uint8_t amax[21] = {'a'};
    memcpy(amax + 1, maxcp, 20);
    CHECK_EQ_INT(pq_str_bounds(amax, 21, amax, 21, 16, &b), FR_OK);
    CHECK_EQ_INT(b.hilen, 1);
    CHECK(b.mem[b.lolen] == 'b');
    free(b.mem);
}

/* -------------------------------------------------------------- codecs */

static void test_codecs(void)
{
    struct pq_codec *codec;
    CHECK_EQ_INT(pq_codec_new(&codec, 3), FR_OK);
    struct fr_buf out;
    fr_buf_init(&out, 1 << 22);
    size_t n = 100000;
    uint8_t *src = malloc(n), *back = malloc(n);
    for (size_t i = 0; i < n; i++) {
        src[i] = (uint8_t)(i % 251 < 200 ? 'a' + i % 7 : rnd());
    }
    static const int ids[] = {FR_PQ_UNCOMPRESSED, FR_PQ_SNAPPY, FR_PQ_ZSTD};
    for (size_t k = 0; k < 3; k++) {
        CHECK_EQ_INT(pq_compress(codec, ids[k], PQ_COMP_DEFAULT, src, n, &out), FR_OK);
        CHECK_EQ_INT(pq_decompress(codec, ids[k], out.data, out.len, back, n), FR_OK);
        CHECK_MEM(src, back, n);
        /* A size other than the header's is corrupt. */
        CHECK_EQ_INT(pq_decompress(codec, ids[k], out.data, out.len, back, n - 1), FR_ECORRUPT);
        if (ids[k] != FR_PQ_UNCOMPRESSED) {
            CHECK(pq_decompress(codec, ids[k], out.data, out.len / 2, back, n) < 0);
        }
    }
    CHECK_EQ_INT(pq_compress(codec, 2, PQ_COMP_DEFAULT, src, n, &out), FR_EUNSUPPORTED);
    free(src);
    free(back);
    fr_buf_free(&out);
    pq_codec_free(codec);
}

/* DELTA_BINARY_PACKED bytes worked by hand from PQ-ENC's description. */
static void test_dbp_bytes(void)
{
    struct fr_buf out;
    fr_buf_init(&out, 1 << 16);
    uint8_t v[8 * 300];
    /* 1 2 3 4 5: every delta is the minimum, 1, so every width is 0. */
    for (int i = 0; i < 5; i++) {
        int64_t x = i + 1;
        memcpy(v + 8 * i, &x, 8);
    }
    CHECK_EQ_INT(pq_dbp_encode_i64(&out, v, 5), FR_OK);
    static const uint8_t want1[] = {0x80, 0x01, 0x04, 0x05, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00};
    CHECK_EQ_INT(out.len, sizeof want1);
    CHECK_MEM(out.data, want1, sizeof want1);
    /* 7 5 3 1 2 3 4 5: deltas -2 -2 -2 1 1 1 1, minimum -2 (zigzag 3), so
     * 0 0 0 3 3 3 3 at width 2 in the first miniblock: bits 6-7 of byte 0
     * and 0-5 of byte 1; 8 bytes for its 32 values. */
    static const int64_t in2[] = {7, 5, 3, 1, 2, 3, 4, 5};
    memcpy(v, in2, sizeof in2);
    fr_buf_reset(&out);
    CHECK_EQ_INT(pq_dbp_encode_i64(&out, v, 8), FR_OK);
    static const uint8_t want2[] = {0x80, 0x01, 0x04, 0x08, 0x0e, 0x03, 0x02, 0x00, 0x00,
                                    0x00, 0xc0, 0x3f, 0,    0,    0,    0,    0,    0};
    CHECK_EQ_INT(out.len, sizeof want2);
    CHECK_MEM(out.data, want2, sizeof want2);
    /* No values: the header alone, first value 0. One value: no block. */
    fr_buf_reset(&out);
    CHECK_EQ_INT(pq_dbp_encode_i64(&out, v, 0), FR_OK);
    static const uint8_t want3[] = {0x80, 0x01, 0x04, 0x00, 0x00};
    CHECK_EQ_INT(out.len, sizeof want3);
    CHECK_MEM(out.data, want3, sizeof want3);
    fr_buf_reset(&out);
    CHECK_EQ_INT(pq_dbp_encode_i64(&out, v, 1), FR_OK);
    static const uint8_t want4[] = {0x80, 0x01, 0x04, 0x01, 0x0e};
    CHECK_EQ_INT(out.len, sizeof want4);
    CHECK_MEM(out.data, want4, sizeof want4);
    /* INT64_MIN then INT64_MAX: the delta -1 wraps; 130 values fill one
     * block (128 deltas) and put one delta in a second block, whose
     * miniblocks 2-4 have width 0 and no bytes. */
    for (int i = 0; i < 130; i++) {
        int64_t x = i % 2 ? INT64_MAX : INT64_MIN;
        memcpy(v + 8 * i, &x, 8);
    }
    fr_buf_reset(&out);
    CHECK_EQ_INT(pq_dbp_encode_i64(&out, v, 130), FR_OK);
    /* header 80 01 04 82 01 + zigzag(INT64_MIN) = 2^64 - 1 (10 bytes);
     * block 1: deltas alternate -1 and +1, minimum -1 (zigzag 1), so
     * values 0 and 2 at width 2 in all four miniblocks (4 x 8 bytes);
     * block 2: one delta -1, minimum -1, width 0. */
    size_t want_len = 5 + 10 + (1 + 4 + 32) + (1 + 4);
    CHECK_EQ_INT(out.len, want_len);
    if (out.len == want_len) {
        const uint8_t *b = out.data + 15;
        CHECK(b[0] == 0x01 && b[1] == 2 && b[2] == 2 && b[3] == 2 && b[4] == 2);
        /* deltas-min: 0 2 0 2 ... -> bits 00 10 00 10 = 0x88 per byte */
        for (int i = 0; i < 32; i++) {
            CHECK(b[5 + i] == 0x88);
        }
        CHECK(b[37] == 0x01 && b[38] == 0 && b[39] == 0 && b[40] == 0 && b[41] == 0);
    }
    fr_buf_free(&out);
}

/* PQ_COMP_RANDOM on a page of length-prefixed random UUIDs, as the writer
 * makes of meta_id: a plain zstd frame that decompresses to the bytes, and
 * still entropy-coded. 32 random hex digits in 40 bytes hold 16 bytes of
 * information, so Huffman codes reach about 2x; stored raw (what zstd does
 * with targetLength set unless told to keep coding literals) it would be
 * ~1.06x. The default mode is the control. */
static void test_codec_random(void)
{
    struct pq_codec *codec;
    CHECK_EQ_INT(pq_codec_new(&codec, 1), FR_OK);
    struct fr_buf out;
    fr_buf_init(&out, 1 << 22);
    size_t rows = 20000, n = rows * 40;
    uint8_t *src = malloc(n), *back = malloc(n);
    static const char hex[] = "0123456789abcdef";
    for (size_t r = 0; r < rows; r++) {
        uint8_t *v = src + r * 40;
        pq_put_u32le(v, 36);
        for (int i = 0; i < 36; i++) {
            v[4 + i] = (i == 8 || i == 13 || i == 18 || i == 23) ? '-' : hex[rnd() & 15];
        }
        v[4 + 14] = '4';
    }
    size_t size[2];
    static const enum pq_comp_mode modes[] = {PQ_COMP_DEFAULT, PQ_COMP_RANDOM};
    for (int k = 0; k < 2; k++) {
        CHECK_EQ_INT(pq_compress(codec, FR_PQ_ZSTD, modes[k], src, n, &out), FR_OK);
        CHECK_EQ_INT(pq_decompress(codec, FR_PQ_ZSTD, out.data, out.len, back, n), FR_OK);
        CHECK_MEM(src, back, n);
        size[k] = out.len;
        CHECK(out.len * 10 < n * 6); /* better than 1.67x: the literals are coded */
    }
    /* Within 10 % of the default's size. */
    CHECK(size[1] * 10 < size[0] * 11);
    /* A default page after a random one: the same bytes as a fresh
     * codec's, so the parameters zstd_random sets on the shared context do
     * not reach the pages after it (they would if the default path ever
     * took the context's sticky parameters). */
    struct pq_codec *fresh;
    CHECK_EQ_INT(pq_codec_new(&fresh, 1), FR_OK);
    struct fr_buf want;
    fr_buf_init(&want, 1 << 22);
    CHECK_EQ_INT(pq_compress(fresh, FR_PQ_ZSTD, PQ_COMP_DEFAULT, src, n, &want), FR_OK);
    CHECK_EQ_INT(pq_compress(codec, FR_PQ_ZSTD, PQ_COMP_DEFAULT, src, n, &out), FR_OK);
    CHECK_EQ_INT(out.len, want.len);
    CHECK_MEM(out.data, want.data, want.len);
    fr_buf_free(&want);
    pq_codec_free(fresh);
    free(src);
    free(back);
    fr_buf_free(&out);
    pq_codec_free(codec);
}

/* pq_emit_page compresses zstd pages straight into the destination after
 * room for a header sized for a guessed compressed size (a quarter of the
 * input), moving the bytes when the real size's varint is shorter or
 * longer. Every case must give what composing the steps does (compress,
 * encode the header with the real size, append both), after bytes already
 * in the destination, and decode back: pages that compress far better
 * than 4x (the varint shrinks), far worse (it grows), about 4x (it stays),
 * empty, and a destination whose cap leaves no room for zstd's bound but
 * enough for the page (the copying path). Both paths write the page's
 * CRC-32 (fr_crc32, checked against zlib's in test_parquet_crc.c). */
/* pq_emit_page of n bytes at src into dst after the 6 bytes "prefix";
 * dst must come out equal to want. Returns what it added to *uncomp. */
static uint64_t emit_after_prefix(struct pq_codec *codec, enum pq_comp_mode m, struct fr_buf *comp,
                                  struct pq_page *pg, const uint8_t *src, size_t n,
                                  struct fr_buf *dst, const struct fr_buf *want)
{
    fr_buf_reset(dst);
    CHECK_EQ_INT(fr_buf_append(dst, "prefix", 6), FR_OK);
    uint64_t uncomp = 7; /* pq_emit_page adds to it */
    CHECK_EQ_INT(pq_emit_page(codec, FR_PQ_ZSTD, m, comp, pg, src, n, dst, &uncomp), FR_OK);
    CHECK_EQ_INT(dst->len, want->len);
    CHECK_MEM(dst->data, want->data, want->len);
    return uncomp - 7;
}

static void test_emit_page_direct(void)
{
    struct pq_codec *codec, *ref;
    CHECK_EQ_INT(pq_codec_new(&codec, 1), FR_OK);
    CHECK_EQ_INT(pq_codec_new(&ref, 1), FR_OK);
    struct fr_buf comp, want, got, ref_comp;
    fr_buf_init(&comp, 1 << 22);
    fr_buf_init(&ref_comp, 1 << 22);
    fr_buf_init(&want, 1 << 23);
    fr_buf_init(&got, 1 << 23);
    size_t max = 300000;
    uint8_t *src = malloc(max), *back = malloc(max);
    static const size_t sizes[] = {0, 1, 100, 5000, 20000, 300000};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        for (int kind = 0; kind < 3; kind++) {
            size_t n = sizes[si];
            for (size_t i = 0; i < n; i++) {
                src[i] = kind == 0   ? (uint8_t)'x'   /* compresses ~1000x */
                         : kind == 1 ? (uint8_t)rnd() /* not at all */
                                     : (uint8_t)("abcdefgh"[rnd() & 7] | (rnd() & 1)); /* ~3-4x */
            }
            for (int mode = 0; mode < 2; mode++) {
                enum pq_comp_mode m = mode ? PQ_COMP_RANDOM : PQ_COMP_DEFAULT;
                struct pq_page pg = {.type = PQ_PAGE_DATA,
                                     .has_data = true,
                                     .num_values = (int32_t)n,
                                     .encoding = PQ_ENC_PLAIN,
                                     .def_encoding = PQ_ENC_RLE,
                                     .rep_encoding = PQ_ENC_RLE};
                /* the reference: compress, then header, then bytes */
                fr_buf_reset(&want);
                CHECK_EQ_INT(fr_buf_append(&want, "prefix", 6), FR_OK);
                CHECK_EQ_INT(pq_compress(ref, FR_PQ_ZSTD, m, src, n, &ref_comp), FR_OK);
                struct pq_page rp = pg;
                rp.uncompressed_size = (int32_t)n;
                rp.compressed_size = (int32_t)ref_comp.len;
                rp.has_crc = true; /* every page carries its CRC-32 (ADR 0062) */
                rp.crc = (int32_t)fr_crc32(0, ref_comp.data, ref_comp.len);
                CHECK_EQ_INT(pq_page_encode(&rp, &want), FR_OK);
                size_t hlen = want.len - 6;
                CHECK_EQ_INT(fr_buf_append(&want, ref_comp.data, ref_comp.len), FR_OK);

                CHECK_EQ_INT(emit_after_prefix(codec, m, &comp, &pg, src, n, &got, &want),
                             hlen + n);
                struct pq_page back_pg;
                size_t used = 0;
                CHECK_EQ_INT(pq_page_decode(got.data + 6, got.len - 6, &back_pg, &used), FR_OK);
                CHECK_EQ_INT(back_pg.compressed_size, (int64_t)(got.len - 6 - used));
                CHECK_EQ_INT(pq_decompress(codec, FR_PQ_ZSTD, got.data + 6 + used,
                                           got.len - 6 - used, back, n),
                             FR_OK);
                CHECK(n == 0 || memcmp(back, src, n) == 0);

                /* room for the page but not for zstd's bound: copied */
                struct fr_buf tight;
                fr_buf_init(&tight, want.len);
                CHECK_EQ_INT(emit_after_prefix(codec, m, &comp, &pg, src, n, &tight, &want),
                             hlen + n);
                fr_buf_free(&tight);
            }
        }
    }
    free(src);
    free(back);
    fr_buf_free(&comp);
    fr_buf_free(&ref_comp);
    fr_buf_free(&want);
    fr_buf_free(&got);
    pq_codec_free(codec);
    pq_codec_free(ref);
}

int main(void)
{
    RUN(test_thrift_worked_bytes);
    RUN(test_thrift_round_trip_and_skip);
    RUN(test_thrift_hostile);
    RUN(test_page_header_bytes);
    RUN(test_footer_round_trip);
    RUN(test_hybrid_hand_bytes);
    RUN(test_hybrid_packed_bytes);
    RUN(test_hybrid_random);
    RUN(test_utf8);
    RUN(test_dictionary);
    RUN(test_string_bounds);
    RUN(test_codecs);
    RUN(test_codec_random);
    RUN(test_emit_page_direct);
    RUN(test_dbp_bytes);
    return check_report();
}
