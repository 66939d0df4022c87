/*
 * verify_topics.c — `freshet verify`'s gold_topics_recomputed: with
 * enrichment, gold_top_topics is recomputed from silver_topics with plain
 * hash maps and sorts (not src/process/topics.c: the point is an
 * independent check) and compared row by row, within the memory budget.
 *
 * What is expected: for every window [s, s + 10 min), s on a minute, whose
 * end is at or before the cut's topics frontier (freshet.topics-frontier-us
 * of the cut epoch's marker; in the scale-out mode that of the cut
 * finalizer epoch, final_topics.h), the top 20 items of silver_topics'
 * resolved rows by edits across all wikis, ties by the item number; each
 * with the number of distinct wikis and the top 3 wikis as "wiki:edits"
 * (edits descending, then the name bytewise). Windows with no resolved row
 * have no row. Every gold row must be one of those (docs/ENRICH.md).
 *
 * Labels (issue 33): a row's label is the one its top wiki's resolved
 * rows of the item hold in the newest minute of the window that has one
 * (the topics operator keeps, per minute, the last label added; when that
 * minute's rows hold different labels, any of them is accepted, since the
 * order edits were added in is not in the table). A gold label that is not
 * the expected one, or a label where no row holds one, is a mismatch; a
 * gold row without a label where one is expected is counted
 * (label_missing) but is not a failure: the operator keeps at most 64 MiB
 * of label text and a state saved before labels loads without them (ADR
 * 0057), both documented ways to a row without a label.
 *
 * Passes are keyed by window start, like gold_top_recomputed. The two
 * tables are loaded and cut here (verify.c's table list holds the core
 * tables); when neither exists the check passes with nothing to compare.
 *
 * One thread, read-only.
 */
#include "pipeline/verify_int.h"

/* One row of gold_top_topics, expected or found. */
struct trow {
    struct trow *next;
    int64_t start, end, edits;
    int32_t rank, wikis;
    uint32_t item_len, top_len;
    /* gold: the row's label (NULL: none); expected: the newest labelled
     * minute's label, label_many when that minute holds several */
    const char *label;
    uint32_t label_len;
    int label_many;
    char text[]; /* item, then top_wikis, then (gold) the label */
};

struct fam_topics {
    int64_t expected, gold_rows, matched, missing, extra, mismatched, beyond, resolved;
    int64_t labels_checked, label_missing;
    struct trow *want, *gold;
    char ex[300];
};

static uint64_t twin_hash(int64_t start)
{
    return vf_mix((uint64_t)start ^ UINT64_C(0x3c6ef372fe94f82b));
}

static int is_resolved(struct fr_pq_str s)
{
    return s.len == 8 && memcmp(s.ptr, "resolved", 8) == 0;
}

/* The number of "Q<digits>"; 0 when it is not one. */
static uint64_t item_number(const char *p, size_t n)
{
    uint64_t v = 0;
    if (n < 2 || n > 20 || p[0] != 'Q') {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') {
            return 0;
        }
        v = v * 10 + (uint64_t)(p[i] - '0');
    }
    return v;
}

static struct trow *trow_new(struct vf_mem *m, struct trow **list, int64_t start, const char *item,
                             uint32_t item_len, const char *top, uint32_t top_len,
                             const char *label, uint32_t label_len)
{
    struct trow *r = vf_mem_alloc(m, sizeof *r + item_len + top_len + label_len);
    if (!r) {
        return NULL;
    }
    memset(r, 0, sizeof *r);
    r->start = start;
    r->item_len = item_len;
    r->top_len = top_len;
    memcpy(r->text, item, item_len);
    if (top_len) {
        memcpy(r->text + item_len, top, top_len);
    }
    if (label) {
        memcpy(r->text + item_len + top_len, label, label_len);
        r->label = r->text + item_len + top_len;
        r->label_len = label_len;
    }
    r->next = *list;
    *list = r;
    return r;
}

/* ------------------------------------------------------------ the scans */

static const struct vf_col silver_cols[] = {{"event_time", FR_PQ_TIMESTAMP},
                                            {"wiki", FR_PQ_STRING},
                                            {"outcome", FR_PQ_STRING},
                                            {"item", FR_PQ_STRING},
                                            {"?label", FR_PQ_STRING}};

/* The label entry of (minute, item, wiki) (ENT_LAB: key the minute, a the
 * item, b the wiki, then the label's bytes; count: the label's length,
 * LAB_MANY when the minute's rows hold more than one label). */
#define LAB_MANY (UINT64_C(1) << 32)

static uint64_t lab_hash(int64_t minute, struct fr_pq_str item, struct fr_pq_str wiki)
{
    return vf_mix(vf_mix(vf_hash(item.ptr, item.len, 29) ^ vf_hash(wiki.ptr, wiki.len, 31)) ^
                  vf_mix((uint64_t)minute ^ UINT64_C(0x9e3779b97f4a7c15)));
}

/* Note that a resolved row of (item, wiki) in minute holds label. */
static int lab_note(struct vf_mem *m, int64_t minute, struct fr_pq_str item, struct fr_pq_str wiki,
                    struct fr_pq_str label)
{
    struct tent_key key = {ENT_LAB, minute, item, wiki};
    uint64_t h = lab_hash(minute, item, wiki);
    struct tent *e = vf_mem_find(m, h, vf_tent_eq, &key);
    if (e) {
        uint32_t len = (uint32_t)e->count;
        if (len != label.len || !vf_same_bytes(e->text + e->alen + e->blen, label.ptr, len)) {
            e->count |= LAB_MANY;
        }
        return FR_OK;
    }
    e = vf_mem_add(m, h, sizeof *e + item.len + wiki.len + label.len);
    if (!e) {
        return FR_ETOOBIG; /* the pass is full: more passes */
    }
    e->kind = ENT_LAB;
    e->key = minute;
    e->alen = (uint32_t)item.len;
    e->blen = (uint32_t)wiki.len;
    e->count = label.len;
    memcpy(e->text, item.ptr, item.len);
    memcpy(e->text + item.len, wiki.ptr, wiki.len);
    memcpy(e->text + item.len + wiki.len, label.ptr, label.len);
    return FR_OK;
}

/* The expected label of window start's row of item, whose top wiki is
 * wiki: the newest minute of the window whose rows hold one. */
static void lab_expect(const struct vf_mem *m, struct trow *r, struct fr_pq_str item,
                       struct fr_pq_str wiki)
{
    for (int64_t mm = r->start + VF_TOP_WINDOW_US - VF_MINUTE_US; mm >= r->start;
         mm -= VF_MINUTE_US) {
        struct tent_key key = {ENT_LAB, mm, item, wiki};
        const struct tent *e = vf_mem_find(m, lab_hash(mm, item, wiki), vf_tent_eq, &key);
        if (e) {
            r->label = e->text + e->alen + e->blen;
            r->label_len = (uint32_t)e->count;
            r->label_many = (e->count & LAB_MANY) != 0;
            return;
        }
    }
}

/* Resolved rows into (window, item, wiki) counters (ENT_CTR: key the
 * window start, a the item, b the wiki) and their windows (ENT_WIN). */
static int topics_silver(struct vf *vf, const struct fr_pq_batch *b, void *arg)
{
    struct fam_topics *f = arg;
    const struct fr_pq_vec *c = b->cols;
    for (uint32_t i = 0; i < b->nrows && vf->topics_us != INT64_MIN; i++) {
        if (c[2].nulls[i] || !is_resolved(c[2].v.str[i]) || c[3].nulls[i]) {
            continue;
        }
        f->resolved += vf->k == 0;
        struct fr_pq_str wiki = c[1].v.str[i], item = c[3].v.str[i];
        uint64_t kh = vf_mix(vf_hash(item.ptr, item.len, 19) ^ vf_hash(wiki.ptr, wiki.len, 23));
        int64_t m = vf_floor_minute(c[0].v.i64[i]);
        int labelled = c[4].nulls[i] || c[4].v.str[i].len == 0; /* nothing to note */
        for (int64_t s = m - 9 * VF_MINUTE_US; s <= m && s <= vf->topics_us - VF_TOP_WINDOW_US;
             s += VF_MINUTE_US) {
            if (!vf_in_pass(twin_hash(s), vf->k, vf->passes)) {
                continue;
            }
            if (!labelled) { /* once per row, when one of its windows is in this pass */
                labelled = 1;
                if (lab_note(&vf->mem, m, item, wiki, c[4].v.str[i]) < 0) {
                    return FR_ETOOBIG;
                }
            }
            struct tent_key key = {ENT_CTR, s, item, wiki},
                            win = {ENT_WIN, s, {NULL, 0}, {NULL, 0}};
            int added, new_win = 0;
            struct tent *ctr =
                vf_tent_get(&vf->mem, vf_mix(kh ^ vf_mix((uint64_t)s)), &key, &added);
            if (!ctr || (added && !vf_tent_get(&vf->mem, twin_hash(s), &win, &new_win))) {
                return FR_ETOOBIG; /* the pass is full: more passes */
            }
            vf->mem.units += (size_t)new_win;
            ctr->count++;
        }
    }
    return FR_OK;
}

static const struct vf_col gold_cols[] = {{"window_start", FR_PQ_TIMESTAMP},
                                          {"window_end", FR_PQ_TIMESTAMP},
                                          {"rank", FR_PQ_INT32},
                                          {"item", FR_PQ_STRING},
                                          {"edits", FR_PQ_INT64},
                                          {"wikis", FR_PQ_INT32},
                                          {"top_wikis", FR_PQ_STRING},
                                          {"?label", FR_PQ_STRING}};

static int topics_gold(struct vf *vf, const struct fr_pq_batch *b, void *arg)
{
    struct fam_topics *f = arg;
    const struct fr_pq_vec *c = b->cols;
    for (uint32_t i = 0; i < b->nrows; i++) {
        f->gold_rows += vf->k == 0;
        int64_t start = c[0].v.i64[i];
        if (!vf_in_pass(twin_hash(start), vf->k, vf->passes)) {
            continue;
        }
        struct fr_pq_str item = c[3].v.str[i], top = c[6].v.str[i], label = c[7].v.str[i];
        struct trow *r = trow_new(&vf->mem, &f->gold, start, item.ptr, (uint32_t)item.len, top.ptr,
                                  (uint32_t)top.len, c[7].nulls[i] ? NULL : label.ptr,
                                  c[7].nulls[i] ? 0 : (uint32_t)label.len);
        if (!r) {
            return FR_ETOOBIG; /* the pass is full: more passes */
        }
        r->end = c[1].v.i64[i];
        r->rank = c[2].v.i32[i];
        r->edits = c[4].v.i64[i];
        r->wikis = c[5].v.i32[i];
    }
    return FR_OK;
}

/* ------------------------------------------------------ the expectation */

/* Counters by window, item, then edits descending and wiki ascending. */
static int ctr_item_cmp(const void *a, const void *b)
{
    const struct tent *x = *(void *const *)a, *y = *(void *const *)b;
    if (x->key != y->key) {
        return x->key < y->key ? -1 : 1;
    }
    int c = vf_bytes_cmp(x->text, x->alen, y->text, y->alen);
    if (c) {
        return c;
    }
    if (x->count != y->count) {
        return x->count > y->count ? -1 : 1;
    }
    return vf_bytes_cmp(x->text + x->alen, x->blen, y->text + y->alen, y->blen);
}

/* Items of a window: edits descending, then the item number ascending. */
static int item_rank_cmp(const void *a, const void *b)
{
    const struct trow *x = *(struct trow *const *)a, *y = *(struct trow *const *)b;
    if (x->start != y->start) {
        return x->start < y->start ? -1 : 1;
    }
    if (x->edits != y->edits) {
        return x->edits > y->edits ? -1 : 1;
    }
    uint64_t qx = item_number(x->text, x->item_len), qy = item_number(y->text, y->item_len);
    if (qx != qy) {
        return qx < qy ? -1 : 1;
    }
    return vf_bytes_cmp(x->text, x->item_len, y->text, y->item_len);
}

/* Rows by window start, then rank. */
static int row_cmp(const void *a, const void *b)
{
    const struct trow *x = *(struct trow *const *)a, *y = *(struct trow *const *)b;
    if (x->start != y->start) {
        return x->start < y->start ? -1 : 1;
    }
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static struct trow **rows_sorted(struct vf_mem *m, struct trow *list, size_t *n,
                                 int (*cmp)(const void *, const void *))
{
    *n = 0;
    for (struct trow *r = list; r; r = r->next) {
        (*n)++;
    }
    struct trow **arr = vf_mem_alloc(m, sizeof *arr * (*n ? *n : 1));
    if (!arr) {
        return NULL;
    }
    size_t i = 0;
    for (struct trow *r = list; r; r = r->next) {
        arr[i++] = r;
    }
    qsort(arr, *n, sizeof *arr, cmp);
    return arr;
}

/* One aggregate row per (window, item) of this pass into a list, then
 * the ranked top 20 of each window into f->want. */
static int topics_expected(struct vf *vf, struct fam_topics *f)
{
    size_t nc;
    void **ctr = vf_mem_collect(&vf->mem, ENT_CTR, &nc);
    if (!ctr) {
        return FR_ETOOBIG;
    }
    qsort(ctr, nc, sizeof *ctr, ctr_item_cmp);
    struct trow *items = NULL;
    for (size_t i = 0; i < nc;) {
        const struct tent *e = ctr[i];
        char top[3 * (256 + 24)];
        size_t tl = 0;
        int64_t edits = 0;
        int32_t wikis = 0;
        size_t j = i;
        for (; j < nc; j++) {
            const struct tent *x = ctr[j];
            if (x->key != e->key || vf_bytes_cmp(x->text, x->alen, e->text, e->alen) != 0) {
                break;
            }
            edits += (int64_t)x->count;
            if (wikis < 3) { /* the counters come edits descending, then wiki */
                tl += (size_t)snprintf(top + tl, sizeof top - tl, "%s%.*s:%llu", wikis ? "," : "",
                                       (int)(x->blen > 256 ? 256 : x->blen), x->text + x->alen,
                                       (unsigned long long)x->count);
            }
            wikis++;
        }
        struct trow *r =
            trow_new(&vf->mem, &items, e->key, e->text, e->alen, top, (uint32_t)tl, NULL, 0);
        if (!r) {
            return FR_ETOOBIG;
        }
        /* the top wiki is the group's first counter (edits, then name) */
        lab_expect(&vf->mem, r, (struct fr_pq_str){e->text, e->alen},
                   (struct fr_pq_str){e->text + e->alen, e->blen});
        r->end = e->key + VF_TOP_WINDOW_US;
        r->edits = edits;
        r->wikis = wikis;
        i = j;
    }
    size_t n;
    struct trow **arr = rows_sorted(&vf->mem, items, &n, item_rank_cmp);
    if (!arr) {
        return FR_ETOOBIG;
    }
    int32_t rank = 0;
    for (size_t i = 0; i < n; i++) {
        rank = i && arr[i - 1]->start == arr[i]->start ? rank + 1 : 1;
        if (rank <= VF_TOP_N) {
            arr[i]->rank = rank;
            arr[i]->next = f->want;
            f->want = arr[i];
        }
    }
    return FR_OK;
}

static void example(struct fam_topics *f, const char *what, const struct trow *r, const char *more)
{
    char ts[32];
    vf_fmt_time(r->start, ts);
    vf_note(f->ex, sizeof f->ex, "%s: window %s rank %d %.*s%s", what, ts, r->rank,
            (int)(r->item_len > 24 ? 24 : r->item_len), r->text, more);
}

static int topics_finish(struct vf *vf, void *fam)
{
    struct fam_topics *f = fam;
    int rc = topics_expected(vf, f);
    size_t ne = 0, ng = 0;
    struct trow **want = rc == FR_OK ? rows_sorted(&vf->mem, f->want, &ne, row_cmp) : NULL;
    struct trow **gold = want ? rows_sorted(&vf->mem, f->gold, &ng, row_cmp) : NULL;
    if (!gold) {
        return FR_ETOOBIG; /* the pass is full: more passes */
    }
    f->expected += (int64_t)ne;
    size_t i = 0, j = 0;
    while (i < ne || j < ng) {
        int c = i < ne && j < ng ? row_cmp(&want[i], &gold[j]) : (i < ne ? -1 : 1);
        if (c < 0) {
            f->missing++;
            example(f, "missing from gold_top_topics", want[i++], "");
            continue;
        }
        const struct trow *g = gold[j++];
        if (c > 0) {
            f->extra++;
            f->beyond += vf->topics_us == INT64_MIN || g->end > vf->topics_us;
            example(f, "not in the recomputation", g, "");
            continue;
        }
        const struct trow *e = want[i++];
        char more[200] = "";
        if (g->end != e->end) {
            snprintf(more, sizeof more, ": window_end %" PRId64, g->end);
        } else if (g->item_len != e->item_len || !vf_same_bytes(g->text, e->text, e->item_len)) {
            snprintf(more, sizeof more, ": recomputed %.*s",
                     (int)(e->item_len > 24 ? 24 : e->item_len), e->text);
        } else if (g->edits != e->edits || g->wikis != e->wikis) {
            snprintf(more, sizeof more,
                     ": edits %" PRId64 " wikis %d in gold, %" PRId64 " and %d recomputed",
                     g->edits, g->wikis, e->edits, e->wikis);
        } else if (g->top_len != e->top_len ||
                   !vf_same_bytes(g->text + g->item_len, e->text + e->item_len, e->top_len)) {
            snprintf(more, sizeof more, ": top_wikis \"%.*s\", recomputed \"%.*s\"",
                     (int)(g->top_len > 60 ? 60 : g->top_len), g->text + g->item_len,
                     (int)(e->top_len > 60 ? 60 : e->top_len), e->text + e->item_len);
        } else if (g->label && (!e->label || (!e->label_many &&
                                              (g->label_len != e->label_len ||
                                               !vf_same_bytes(g->label, e->label, e->label_len))))) {
            snprintf(more, sizeof more, ": label \"%.*s\", recomputed %s%.*s%s",
                     (int)(g->label_len > 60 ? 60 : g->label_len), g->label, e->label ? "\"" : "",
                     e->label ? (int)(e->label_len > 60 ? 60 : e->label_len) : 4,
                     e->label ? e->label : "none", e->label ? "\"" : "");
        }
        f->labels_checked += e->label != NULL;
        f->label_missing += e->label && !g->label;
        if (more[0]) {
            f->mismatched++;
            example(f, "differs", g, more);
        } else {
            f->matched++;
        }
    }
    f->want = f->gold = NULL; /* the next pass starts from an empty arena */
    return FR_OK;
}

static const struct vf_family fam_topics = {
    "gold_topics",
    {{FR_TBL_SILVER_TOPICS, 0, silver_cols, 5, topics_silver},
     {FR_TBL_GOLD_TOPICS, 0, gold_cols, 8, topics_gold}},
    2,
    topics_finish};

/* ---------------------------------------------------------------- check */

/* Load silver_topics and gold_top_topics when the catalog lists them, and
 * cut them like the other tables. 1 when both exist, 0 when neither,
 * < 0 on an error (vf->err). */
static int topics_tables(struct vf *vf)
{
    static const enum fr_tbl tbls[2] = {FR_TBL_SILVER_TOPICS, FR_TBL_GOLD_TOPICS};
    struct fr_ice_ident *idents = NULL;
    size_t nidents = 0;
    int rc = fr_lake_list(&vf->lake, &idents, &nidents); /* SQLite or REST */
    int found = 0;
    for (int i = 0; rc == FR_OK && i < 2; i++) {
        struct vf_tab *tab = &vf->tab[tbls[i]];
        tab->current = tab->snap = tab->epoch = -1;
        int listed = 0;
        for (size_t k = 0; k < nidents; k++) {
            listed |= strcmp(idents[k].ns, FR_NS) == 0 &&
                      strcmp(idents[k].name, fr_tbl_name(tbls[i])) == 0;
        }
        if (!listed) {
            continue;
        }
        rc = fr_lake_table(&vf->lake, fr_tbl_name(tbls[i]), &tab->table);
        if (rc == FR_OK) {
            tab->current = fr_ice_table_snapshot_id(tab->table);
            rc = vf_cut_table(vf, tbls[i]);
        }
        if (rc == FR_OK) {
            vf_count_table(vf, tab);
            found++;
        }
    }
    free(idents);
    if (rc < 0) {
        return vf_errf(vf, rc, "%s", fr_ice_errmsg());
    }
    if (found == 1) {
        return vf_errf(vf, FR_ENOTFOUND, "only one of silver_topics and gold_top_topics exists");
    }
    return found ? 1 : 0;
}

void vf_check_topics(struct vf *vf)
{
    struct vf_check *c = &vf->ck[CK_GOLD_TOPICS];
    int rc = topics_tables(vf);
    if (rc == 0) {
        vf_figs(c, "expected_rows", (int64_t)0, "gold_rows", (int64_t)0, NULL);
        snprintf(c->detail, sizeof c->detail, "no enrichment tables: nothing to check");
        return;
    }
    struct fam_topics f;
    uint32_t passes = 0;
    if (rc > 0) {
        rc = vf_run_family(vf, &fam_topics,
                           10 * vf->tab[FR_TBL_SILVER_TOPICS].rows +
                               vf->tab[FR_TBL_GOLD_TOPICS].rows,
                           sizeof(struct tent) + 48, &f, sizeof f, &passes);
    }
    vf_figs(c, "passes", (int64_t)passes, NULL);
    if (rc < 0) {
        vf_not_evaluated(vf, CK_GOLD_TOPICS);
        return;
    }
    vf_figs(c, "frontier_us", vf->topics_us, "resolved_rows", f.resolved, "expected_rows",
            f.expected, "gold_rows", f.gold_rows, "matched", f.matched, "missing", f.missing,
            "extra", f.extra, "mismatched", f.mismatched, "beyond_frontier", f.beyond,
            "labels_expected", f.labels_checked, "label_missing", f.label_missing, NULL);
    if (f.missing || f.extra || f.mismatched) {
        vf_problem(c, "%s", f.ex);
    }
}
