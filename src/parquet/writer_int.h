/*
 * writer_int.h — the Parquet writer's private state, shared by its three
 * files: writer.c (opening, values, rows, batches), writer_chunk.c (the
 * output, pages, dictionaries and row groups) and writer_close.c (the
 * footer, the file statistics, close and free). The data flow and the
 * invariants are described at the top of writer.c. One thread at a time
 * per writer (plus its compression thread, pool.c).
 */
#ifndef FR_PARQUET_WRITER_INT_H
#define FR_PARQUET_WRITER_INT_H

#include "parquet/parquet_int.h"

enum api { API_BOOL, API_I32, API_I64, API_F64, API_STR };

enum out_state { OUT_OPEN, OUT_CLOSED, OUT_ABORTED };

/* Running per-file totals of one column (for fr_pq_file_stats). */
struct fstat {
    uint64_t values, nulls, nans, comp, uncomp;
    bool has_bounds, min_exact, max_exact;
    int64_t imin, imax;
    double dmin, dmax;
    struct fr_buf smin, smax;
};

struct pq_wcol {
    /* schema */
    char *name;
    uint32_t name_len;
    enum fr_pq_type type;
    uint8_t api;
    uint8_t phys;
    uint8_t width; /* PLAIN bytes of a fixed-width value, else 0 */
    bool optional;
    int32_t field_id;

    /* current row group */
    uint64_t count; /* values including NULLs */

    /* current page */
    uint32_t page_n;  /* values including NULLs */
    uint32_t page_nn; /* non-NULL values */
    uint8_t *defs;    /* page_rows levels (OPTIONAL columns) */
    uint32_t *idx;    /* page_rows dictionary indices */
    struct fr_buf plain;
    uint8_t bool_acc;
    uint8_t bool_bits;

    /* dictionary */
    bool dict_never;   /* the schema says PLAIN only */
    bool random;       /* opts.random_columns: PLAIN pages compressed as PQ_COMP_RANDOM */
    bool delta;        /* opts.delta_columns, INT64: DELTA_BINARY_PACKED, not PLAIN */
    bool dict_refused; /* a row group's first page found the dictionary does not pay:
                          later row groups of the file start PLAIN */
    bool dict_on;      /* values of this page go to the dictionary */
    bool dict_used;    /* a page of this chunk is dictionary-encoded */
    bool dict_checked; /* the first-page size check is done */
    uint64_t page_plain; /* PLAIN bytes the first page's values would take */
    struct pq_dict dict;

    /* current chunk */
    struct fr_buf chunk; /* data page headers + bodies */
    uint64_t chunk_uncomp;
    struct fr_buf dict_page; /* with the compression thread: the chunk's dictionary
                                page, header + body, until the row group is out */
    uint64_t dict_uncomp;
    uint32_t encodings;
    uint64_t nulls, nans;
    bool has_minmax;
    int64_t imin, imax;
    double dmin, dmax;
    struct fr_buf smin, smax;
    uint64_t smin_key, smax_key; /* str_key8 of smin and smax */

    struct fstat file;
};

struct fr_pq_writer {
    struct fr_pq_opts opts;
    struct fr_pq_out out;
    enum out_state out_state;
    int failed; /* sticky error, 0 while healthy */
    bool closed;
    uint32_t ncols;
    struct pq_wcol *cols;
    uint32_t row_filled;
    uint64_t rg_rows;
    uint64_t rows;
    uint64_t offset; /* bytes written */
    struct pq_codec *codec;
    struct pq_pool *pool;  /* background compression, or NULL */
    size_t pool_rg_base;   /* pq_pool_appended at the start of the row group */
    struct fr_buf body, comp, dictbuf, footer;
    struct pq_rowgroup *rgs;
    uint32_t nrgs, rgs_cap;
    uint8_t **chunk_mem; /* nrgs x ncols statistics blocks */
    struct pq_kv *kv;
    uint32_t nkv;
};

/* writer_chunk.c */

/* Record rc as the writer's sticky error (the first one wins); returns rc. */
int pq_w_fail(struct fr_pq_writer *w, int rc);
/* Append len bytes to the output; an error is sticky. */
int pq_w_out_write(struct fr_pq_writer *w, const void *p, size_t len);
/* Abort the output unless it is closed or aborted already. */
void pq_w_out_abort(struct fr_pq_writer *w);
/* Encode, compress and append column c's current page to its chunk. */
int pq_w_flush_page(struct fr_pq_writer *w, struct pq_wcol *c);
/* The dictionary is full: write the page it encodes, continue PLAIN. */
int pq_w_dict_fallback(struct fr_pq_writer *w, struct pq_wcol *c);
/* Flush every column's last page and write the row group's chunks. */
int pq_w_flush_row_group(struct fr_pq_writer *w);
/* Bytes buffered for the current row group. */
size_t pq_w_rg_estimate(const struct fr_pq_writer *w);
/* Start column c's next chunk (the dictionary policy's state included). */
void pq_w_col_reset_chunk(const struct fr_pq_writer *w, struct pq_wcol *c);

static inline int pq_w_maybe_flush(struct fr_pq_writer *w, struct pq_wcol *c)
{
    size_t pb = w->opts.page_bytes;
    if (c->page_n >= w->opts.page_rows || c->plain.len >= pb ||
        (c->dict_on && ((size_t)c->page_nn * 4 >= pb || (!c->dict_checked && c->page_plain >= pb)))) {
        return pq_w_flush_page(w, c);
    }
    return FR_OK;
}

#endif
