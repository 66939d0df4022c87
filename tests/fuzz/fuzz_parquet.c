/*
 * fuzz_parquet.c — libFuzzer target for the Parquet reader: the input is a
 * whole file. It is opened from memory (footer, schema and row-group
 * validation), every chunk's statistics are decoded and tested against a
 * predicate, and every readable column is scanned (page headers,
 * decompression, levels, every value encoding), touching every value so the
 * sanitizers see any over-read; then every page is walked and its CRC
 * checked (fr_pq_reader_check_pages, verify's pass). A hostile file must end in an error code:
 * never a crash, an over-read, a leak or an allocation beyond the caps set
 * below. Rows per input are capped so a file claiming billions of values in
 * a few bytes (legal: RLE runs of NULLs) stays fast.
 *
 * Seed corpus: tests/fuzz/corpus/parquet (small files from freshet's writer
 * and from DuckDB; regenerate with `node tests/interop/parquet_interop.mjs
 * seeds <parquet_interop> <dir>`). Built with clang by tests/fuzz/parquet.cmake
 * when FR_FUZZ is ON.
 */
#include "parquet/parquet.h"

#include "core/err.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MAX_ROWS 200000u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

static void touch(const struct fr_pq_batch *b)
{
    uint64_t h = b->first_row;
    for (uint32_t c = 0; c < b->ncols; c++) {
        const struct fr_pq_vec *v = &b->cols[c];
        for (uint32_t i = 0; i < b->nrows; i++) {
            h = h * 31 + v->nulls[i];
            switch (v->type) {
            case FR_PQ_BOOL: h += v->v.b[i]; break;
            case FR_PQ_INT32:
            case FR_PQ_DATE: h += (uint32_t)v->v.i32[i]; break;
            case FR_PQ_DOUBLE: {
                uint64_t bits;
                memcpy(&bits, &v->v.f64[i], 8);
                h += bits;
                break;
            }
            case FR_PQ_STRING:
                for (uint32_t k = 0; k < v->v.str[i].len; k++) {
                    h += (uint8_t)v->v.str[i].ptr[k];
                }
                break;
            default: h += (uint64_t)v->v.i64[i]; break;
            }
        }
    }
    sink = h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fr_pq_in in;
    struct fr_pq_reader *r;
    struct fr_pq_read_opts o;
    fr_pq_read_opts_default(&o);
    o.max_footer_bytes = 1 << 20;
    o.max_page_bytes = 1 << 20;
    o.batch_rows = 512;
    if (fr_pq_in_mem(data, size, &in) != FR_OK || fr_pq_reader_open(&in, &o, &r) != FR_OK) {
        return 0;
    }
    const struct fr_pq_schema *sc = fr_pq_reader_schema(r);
    uint32_t cols[64];
    uint32_t n = 0;
    for (uint32_t c = 0; c < sc->ncolumns && n < 64; c++) {
        if (sc->columns[c].type != 0) {
            cols[n++] = c;
        }
    }
    /* Statistics of every chunk, and a predicate built from them. */
    struct fr_pq_pred pred = {0};
    bool have_pred = false;
    for (uint32_t g = 0; g < fr_pq_reader_row_groups(r) && g < 1000; g++) {
        for (uint32_t c = 0; c < sc->ncolumns; c++) {
            struct fr_pq_chunk_info ci;
            if (fr_pq_reader_chunk(r, g, c, &ci) == FR_OK && ci.has_bounds && !have_pred &&
                sc->columns[c].type != 0) {
                pred = (struct fr_pq_pred){.column = c, .has_min = true, .min = ci.max};
                have_pred = true;
            }
        }
    }
    const char *kv;
    size_t kvlen;
    (void)fr_pq_reader_kv(r, "iceberg.schema", &kv, &kvlen);
    (void)fr_pq_reader_created_by(r);
    for (int pass = 0; pass < (have_pred ? 2 : 1); pass++) {
        struct fr_pq_scan_opts so = {.columns = cols, .ncolumns = n};
        if (pass == 1) {
            so.preds = &pred;
            so.npreds = 1;
        }
        struct fr_pq_scan *s;
        if (fr_pq_scan_open(r, &so, &s) != FR_OK) {
            break;
        }
        const struct fr_pq_batch *b;
        uint64_t rows = 0;
        while (rows < MAX_ROWS && fr_pq_scan_next(s, &b) == FR_OK) {
            touch(b);
            rows += b->nrows;
        }
        fr_pq_scan_free(s);
    }
    /* `freshet verify`'s walk over every page and its CRC (ADR 0062): an
     * error, or counts that add up. */
    struct fr_pq_page_check pc;
    int rc = fr_pq_reader_check_pages(r, &pc);
    if ((rc == FR_OK && pc.with_crc > pc.pages) || (rc < 0 && !fr_pq_errmsg()[0])) {
        __builtin_trap();
    }
    fr_pq_reader_free(r);
    return 0;
}
