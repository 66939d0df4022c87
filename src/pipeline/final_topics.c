/*
 * final_topics.c — gold_top_topics in the scale-out mode: the finalizer
 * counts the shards' resolved silver_topics rows into the topics operator
 * and settles windows at the minimum over partitions of the shards'
 * published topics frontiers. The rule, why it is exact and the state's
 * byte table are in final_topics.h; ADR 0046 has the alternatives.
 *
 * One thread (the finalizer's).
 */
#include "pipeline/final_topics.h"

#include "core/buf.h"
#include "core/diag.h"
#include "core/err.h"
#include "pipeline/estage.h"
#include "process/process.h"

#include <stdlib.h>
#include <string.h>

#define FT_MAGIC "FRFT"

struct fr_ftopics {
    struct fr_topics *op;
    int64_t frontier;
    int64_t shard[FR_CK_MAX_PARTS]; /* each shard's newest consumed topics frontier */
    uint64_t rows_in;
};

const struct fr_lake_col fr_ftopics_cols[] = {{"event_time", FR_PQ_TIMESTAMP},
                                              {"wiki", FR_PQ_STRING},
                                              {"outcome", FR_PQ_STRING},
                                              {"item", FR_PQ_STRING},
                                              {"?label", FR_PQ_STRING}};
const uint32_t fr_ftopics_ncols = sizeof fr_ftopics_cols / sizeof fr_ftopics_cols[0];

static int ft_new_op(struct fr_topics **out)
{
    struct fr_topics_opts topts = {FR_TOPICS_DEFAULT_MAX_ENTRIES, FR_TOPICS_DEFAULT_MAX_WIKIS};
    return fr_topics_create(&topts, out);
}

int fr_ftopics_open(struct fr_ftopics **out)
{
    *out = NULL;
    struct fr_ftopics *ft = calloc(1, sizeof *ft);
    if (!ft) {
        return FR_ENOMEM;
    }
    int rc = ft_new_op(&ft->op);
    if (rc < 0) {
        free(ft);
        return rc;
    }
    ft->frontier = FR_PROC_WM_NONE;
    for (uint32_t p = 0; p < FR_CK_MAX_PARTS; p++) {
        ft->shard[p] = FR_PROC_WM_NONE;
    }
    *out = ft;
    return FR_OK;
}

void fr_ftopics_free(struct fr_ftopics *ft)
{
    if (!ft) {
        return;
    }
    fr_topics_destroy(ft->op);
    free(ft);
}

static int is_str(struct fr_pq_str s, const char *want)
{
    size_t n = strlen(want);
    return s.len == n && memcmp(s.ptr, want, n) == 0;
}

/* "Q<digits>" (no sign, no leading zero) into *q: 1, else 0. */
static int item_number(struct fr_pq_str s, uint64_t *q)
{
    if (s.len < 2 || s.len > 20 || s.ptr[0] != 'Q' || s.ptr[1] == '0') {
        return 0;
    }
    uint64_t v = 0;
    for (size_t i = 1; i < s.len; i++) {
        uint8_t d = (uint8_t)s.ptr[i];
        if (d < '0' || d > '9' || v > (UINT64_MAX - (d - '0')) / 10) {
            return 0;
        }
        v = v * 10 + (d - '0');
    }
    *q = v;
    return 1;
}

int fr_ftopics_batch(void *arg, const struct fr_pq_batch *b)
{
    struct fr_ftopics *ft = arg;
    const struct fr_pq_vec *c = b->cols;
    for (uint32_t i = 0; i < b->nrows; i++) {
        if (c[2].nulls[i] || !is_str(c[2].v.str[i], "resolved")) {
            continue; /* no_item rows settle nothing and count nothing */
        }
        uint64_t q = 0;
        if (c[3].nulls[i] || c[1].nulls[i] || !item_number(c[3].v.str[i], &q)) {
            return FR_ECORRUPT;
        }
        struct fr_pq_str wiki = c[1].v.str[i];
        int has_label = !(c[4].nulls && c[4].nulls[i]);
        int rc = fr_topics_add(ft->op, c[0].v.i64[i], q, wiki.ptr, wiki.len,
                               has_label ? c[4].v.str[i].ptr : NULL,
                               has_label ? c[4].v.str[i].len : 0);
        if (rc < 0) {
            return rc;
        }
        ft->rows_in++;
    }
    return FR_OK;
}

void fr_ftopics_shard(struct fr_ftopics *ft, uint32_t p, int64_t us)
{
    if (p < FR_CK_MAX_PARTS) {
        ft->shard[p] = us;
    }
}

int64_t fr_ftopics_next(const struct fr_ftopics *ft, uint32_t nparts)
{
    if (nparts == 0) {
        return ft->frontier;
    }
    int64_t min = INT64_MAX;
    for (uint32_t p = 0; p < nparts && p < FR_CK_MAX_PARTS; p++) {
        min = ft->shard[p] < min ? ft->shard[p] : min;
    }
    return min > ft->frontier ? min : ft->frontier;
}

struct ft_sink {
    struct fr_tw *tw;
    int write;
    uint64_t rows;
};

static int ft_emit(void *arg, const struct fr_topic_row *row)
{
    struct ft_sink *k = arg;
    k->rows++;
    return k->write ? fr_tw_gold_topics(k->tw, row) : FR_OK;
}

int fr_ftopics_advance(struct fr_ftopics *ft, int64_t frontier, struct fr_tw *tw, int write,
                       uint64_t *rows)
{
    struct ft_sink k = {tw, write, 0};
    int rc = FR_OK;
    if (frontier != FR_PROC_WM_NONE) {
        rc = fr_topics_advance(ft->op, frontier, ft_emit, &k);
        if (rc == FR_OK && frontier > ft->frontier) {
            ft->frontier = frontier;
        }
    }
    *rows = k.rows;
    return rc;
}

int64_t fr_ftopics_frontier(const struct fr_ftopics *ft)
{
    return ft->frontier;
}

uint64_t fr_ftopics_take_rows(struct fr_ftopics *ft)
{
    uint64_t n = ft->rows_in;
    ft->rows_in = 0;
    return n;
}

/* ------------------------------------------------------------ the state */

static int put_i64(struct fr_buf *b, int64_t v)
{
    uint8_t x[8];
    for (int i = 0; i < 8; i++) {
        x[i] = (uint8_t)((uint64_t)v >> (8 * i));
    }
    return fr_buf_append(b, x, 8);
}

static int64_t get_i64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) {
        v |= (uint64_t)p[i] << (8 * i);
    }
    return (int64_t)v;
}

int fr_ftopics_save(const struct fr_ftopics *ft, uint32_t nparts, struct fr_buf *out)
{
    if (nparts > FR_CK_MAX_PARTS) {
        return FR_EINVAL;
    }
    uint8_t n[4] = {(uint8_t)nparts, (uint8_t)(nparts >> 8), (uint8_t)(nparts >> 16),
                    (uint8_t)(nparts >> 24)};
    int rc = fr_buf_append(out, FT_MAGIC, 4);
    rc = rc ? rc : put_i64(out, ft->frontier);
    rc = rc ? rc : fr_buf_append(out, n, 4);
    for (uint32_t p = 0; rc == FR_OK && p < nparts; p++) {
        rc = put_i64(out, ft->shard[p]);
    }
    size_t at = out->len;
    rc = rc ? rc : put_i64(out, 0);
    rc = rc ? rc : fr_topics_save(ft->op, out);
    if (rc == FR_OK) {
        int64_t len = (int64_t)(out->len - at - 8);
        for (int i = 0; i < 8; i++) {
            out->data[at + (size_t)i] = (uint8_t)((uint64_t)len >> (8 * i));
        }
    }
    return rc;
}

int fr_ftopics_load(struct fr_ftopics *ft, const uint8_t *b, size_t len, size_t *used)
{
    if (len < 16 || memcmp(b, FT_MAGIC, 4) != 0) {
        return FR_ECORRUPT;
    }
    int64_t frontier = get_i64(b + 4);
    uint32_t n =
        (uint32_t)b[12] | (uint32_t)b[13] << 8 | (uint32_t)b[14] << 16 | (uint32_t)b[15] << 24;
    if (n > FR_CK_MAX_PARTS || len - 16 < 8 * (size_t)n + 8) {
        return FR_ECORRUPT;
    }
    size_t at = 16;
    int64_t shard[FR_CK_MAX_PARTS];
    for (uint32_t p = 0; p < FR_CK_MAX_PARTS; p++) {
        shard[p] = p < n ? get_i64(b + at + 8 * (size_t)p) : FR_PROC_WM_NONE;
    }
    at += 8 * (size_t)n;
    int64_t l = get_i64(b + at);
    at += 8;
    if (l < 0 || (uint64_t)l > len - at) {
        return FR_ECORRUPT;
    }
    struct fr_topics *op = NULL;
    int rc = ft_new_op(&op);
    if (rc == FR_OK) {
        rc = fr_topics_load(op, b + at, (size_t)l);
    }
    if (rc < 0) {
        fr_topics_destroy(op);
        return rc;
    }
    fr_topics_destroy(ft->op);
    ft->op = op;
    ft->frontier = frontier;
    memcpy(ft->shard, shard, sizeof shard);
    *used = at + (size_t)l;
    return FR_OK;
}

void fr_ftopics_publish(struct fr_ftopics *ft, const char *data_dir, int64_t epoch)
{
    struct fr_buf b;
    fr_buf_init(&b, FR_TOPICS_JSON_CAP);
    int rc = fr_topics_json(ft->op, epoch, ft->frontier, NULL, &b);
    if (rc == FR_OK) {
        fr_topics_json_write(data_dir, &b, "finalize");
    } else {
        fr_warn("finalize", "cannot write the topics view: %s", fr_strerror(rc));
    }
    fr_buf_free(&b);
}
