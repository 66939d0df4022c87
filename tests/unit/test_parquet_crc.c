/*
 * test_parquet_crc.c — the CRC-32 in every Parquet page freshet writes, and
 * fr_pq_reader_check_pages, which `freshet verify` runs over every live
 * data file (docs/adr/0062).
 *
 * The writer's CRCs are checked against zlib's crc32 (an implementation
 * freshet does not use), over every page found by walking each column
 * chunk from its first page, for every codec, with and without the
 * compression thread, data and dictionary pages. Then a bit flip that still
 * decodes: one character of a title inside an UNCOMPRESSED data page. The
 * ordinary scan reads the changed title without an error (that is the
 * damage no other check sees); check_pages refuses the file with
 * FR_ECRC, naming the column, the page and the byte. A flip in a zstd page
 * is refused the same way.
 */
#include "check.h"

#include "core/crc32.h"
#include "parquet/parquet.h"
#include "parquet/parquet_int.h"

#include <stdlib.h>
#include <zlib.h>

struct mem_out {
    struct fr_buf buf;
};

static int mem_write(void *ctx, const void *data, size_t len)
{
    return fr_buf_append(&((struct mem_out *)ctx)->buf, data, len);
}

static int mem_close(void *ctx)
{
    (void)ctx;
    return FR_OK;
}

static void mem_abort(void *ctx)
{
    (void)ctx;
}

static const struct fr_pq_out_ops mem_ops = {mem_write, mem_close, mem_abort};

static const struct fr_pq_column cols[3] = {
    {"title", FR_PQ_STRING, false, 1},
    {"wiki", FR_PQ_STRING, true, 2}, /* few values: dictionary-encoded */
    {"rev", FR_PQ_INT64, false, 3},
};

/* rows rows: distinct titles (PLAIN pages), 3 wikis (a dictionary). */
static void write_file(struct mem_out *m, enum fr_pq_codec codec, unsigned workers, int rows)
{
    struct fr_pq_opts o;
    fr_pq_opts_default(&o);
    o.codec = codec;
    o.compress_workers = workers;
    o.page_rows = 100;
    o.row_group_bytes = 16 * 1024;
    fr_buf_init(&m->buf, 64u << 20);
    struct fr_pq_schema schema = {cols, 3};
    struct fr_pq_out out = {&mem_ops, m};
    struct fr_pq_writer *w = NULL;
    CHECK_EQ_INT(fr_pq_writer_open(&schema, &o, &out, &w), FR_OK);
    static const char *const wikis[3] = {"enwiki", "dewiki", "wikidatawiki"};
    for (int i = 0; w && i < rows; i++) {
        char title[64];
        int n = snprintf(title, sizeof title, "Page_%05d_of_the_encyclopedia", i);
        CHECK_EQ_INT(fr_pq_write_str(w, 0, title, (size_t)n), FR_OK);
        if (i % 7 == 0) {
            CHECK_EQ_INT(fr_pq_write_null(w, 1), FR_OK);
        } else {
            CHECK_EQ_INT(fr_pq_write_str(w, 1, wikis[i % 3], strlen(wikis[i % 3])), FR_OK);
        }
        CHECK_EQ_INT(fr_pq_write_int64(w, 2, 1000000 + (int64_t)i * 37), FR_OK);
        CHECK_EQ_INT(fr_pq_row_end(w), FR_OK);
    }
    CHECK_EQ_INT(fr_pq_writer_close(w, NULL), FR_OK);
    fr_pq_writer_free(w);
}

static struct fr_pq_reader *open_mem(const uint8_t *p, size_t n)
{
    struct fr_pq_in in;
    struct fr_pq_reader *r = NULL;
    CHECK_EQ_INT(fr_pq_in_mem(p, n, &in), FR_OK);
    CHECK_EQ_INT(fr_pq_reader_open(&in, NULL, &r), FR_OK);
    return r;
}

/* Walk every page of every chunk; each must carry zlib's CRC-32 of its
 * bytes. Returns the pages; *dict counts dictionary pages. */
static uint64_t walk_pages(const struct mem_out *m, uint64_t *dict)
{
    struct fr_pq_reader *r = open_mem(m->buf.data, m->buf.len);
    uint64_t pages = 0;
    *dict = 0;
    for (uint32_t g = 0; r && g < fr_pq_reader_row_groups(r); g++) {
        for (uint32_t c = 0; c < 3; c++) {
            struct fr_pq_chunk_info ci;
            CHECK_EQ_INT(fr_pq_reader_chunk(r, g, c, &ci), FR_OK);
            uint64_t pos = ci.offset, end = ci.offset + ci.compressed_bytes;
            while (pos < end) {
                struct pq_page pg;
                size_t hlen = 0;
                CHECK_EQ_INT(pq_page_decode(m->buf.data + pos, (size_t)(end - pos), &pg, &hlen),
                             FR_OK);
                CHECK(pg.has_crc);
                uLong z = crc32(0L, Z_NULL, 0);
                z = crc32(z, m->buf.data + pos + hlen, (uInt)pg.compressed_size);
                CHECK_EQ_INT((uint32_t)pg.crc, (uint32_t)z);
                *dict += pg.type == PQ_PAGE_DICTIONARY;
                pages++;
                pos += hlen + (uint64_t)pg.compressed_size;
            }
            CHECK_EQ_INT(pos, end);
        }
    }
    struct fr_pq_page_check pc;
    CHECK_EQ_INT(fr_pq_reader_check_pages(r, &pc), FR_OK);
    CHECK_EQ_INT(pc.pages, pages);
    CHECK_EQ_INT(pc.with_crc, pages);
    fr_pq_reader_free(r);
    return pages;
}

static void test_crc32_vectors(void)
{
    CHECK_EQ_INT(fr_crc32(0, "123456789", 9), 0xCBF43926u); /* the check value */
    CHECK_EQ_INT(fr_crc32(0, "", 0), 0u);
    uint8_t data[3000];
    for (int i = 0; i < 3000; i++) {
        data[i] = (uint8_t)(i * 131 + (i >> 3));
    }
    for (size_t len = 0; len < 2990; len += len < 300 ? 1 : 41) {
        const uint8_t *d = data + len % 7;
        uLong z = crc32(crc32(0L, Z_NULL, 0), d, (uInt)len);
        CHECK_EQ_INT(fr_crc32(0, d, len), (uint32_t)z);
        CHECK_EQ_INT(fr_crc32(fr_crc32(0, d, len / 3), d + len / 3, len - len / 3), (uint32_t)z);
    }
}

static void test_every_page_has_its_crc(void)
{
    static const enum fr_pq_codec codecs[3] = {FR_PQ_UNCOMPRESSED, FR_PQ_SNAPPY, FR_PQ_ZSTD};
    for (int k = 0; k < 3; k++) {
        for (unsigned workers = 0; workers < 2; workers++) {
            struct mem_out m;
            write_file(&m, codecs[k], workers, 2500);
            uint64_t dict = 0, pages = walk_pages(&m, &dict);
            CHECK(pages > 30);
            CHECK(dict > 0); /* wiki's dictionary pages are covered too */
            fr_buf_free(&m.buf);
        }
    }
}

/* Scan title; returns 1 when want is among its values. */
static int title_present(struct fr_pq_reader *r, const char *want, int *scan_rc)
{
    uint32_t idx = 0;
    struct fr_pq_scan_opts so = {&idx, 1, NULL, 0};
    struct fr_pq_scan *s = NULL;
    const struct fr_pq_batch *b;
    int found = 0, rc = fr_pq_scan_open(r, &so, &s);
    while (rc == FR_OK && (rc = fr_pq_scan_next(s, &b)) == FR_OK) {
        for (uint32_t i = 0; i < b->nrows; i++) {
            struct fr_pq_str t = b->cols[0].v.str[i];
            found |= t.len == strlen(want) && memcmp(t.ptr, want, t.len) == 0;
        }
    }
    *scan_rc = rc;
    fr_pq_scan_free(s);
    return found;
}

static void test_flip_that_still_decodes(void)
{
    struct mem_out m;
    write_file(&m, FR_PQ_UNCOMPRESSED, 0, 2500);
    const char *hit = memmem(m.buf.data, m.buf.len, "Page_01234_of", 13);
    CHECK(hit != NULL);
    if (!hit) {
        return;
    }
    size_t at = (size_t)(hit - (const char *)m.buf.data);
    m.buf.data[at] ^= 0x01; /* 'P' -> 'Q': still UTF-8, still a title */
    struct fr_pq_reader *r = open_mem(m.buf.data, m.buf.len);
    int scan_rc = 0;
    CHECK(title_present(r, "Qage_01234_of_the_encyclopedia", &scan_rc));
    CHECK_EQ_INT(scan_rc, FR_EEOF); /* the damage decodes: the scan sees nothing wrong */
    struct fr_pq_page_check pc;
    CHECK_EQ_INT(fr_pq_reader_check_pages(r, &pc), FR_ECRC);
    const char *msg = fr_pq_errmsg();
    CHECK(strstr(msg, "column 'title'") != NULL);
    CHECK(strstr(msg, ", page ") != NULL && strstr(msg, " at byte ") != NULL);
    fr_pq_reader_free(r);
    fr_buf_free(&m.buf);
}

static void test_flip_in_a_zstd_page(void)
{
    struct mem_out m;
    write_file(&m, FR_PQ_ZSTD, 1, 2500);
    struct fr_pq_reader *r = open_mem(m.buf.data, m.buf.len);
    struct fr_pq_chunk_info ci;
    CHECK_EQ_INT(fr_pq_reader_chunk(r, 0, 2, &ci), FR_OK); /* rev, row group 0 */
    fr_pq_reader_free(r);
    struct pq_page pg;
    size_t hlen = 0;
    CHECK_EQ_INT(pq_page_decode(m.buf.data + ci.offset, 256, &pg, &hlen), FR_OK);
    m.buf.data[ci.offset + hlen + (size_t)pg.compressed_size / 2] ^= 0x10;
    r = open_mem(m.buf.data, m.buf.len);
    struct fr_pq_page_check pc;
    CHECK_EQ_INT(fr_pq_reader_check_pages(r, &pc), FR_ECRC);
    CHECK(strstr(fr_pq_errmsg(), "row group 0, column 'rev', page 0") != NULL);
    fr_pq_reader_free(r);
    fr_buf_free(&m.buf);
}

int main(void)
{
    RUN(test_crc32_vectors);
    RUN(test_every_page_has_its_crc);
    RUN(test_flip_that_still_decodes);
    RUN(test_flip_in_a_zstd_page);
    return check_report();
}
