/*
 * verify_gold.c — `freshet verify`: gold_edits_per_minute and gold_top_pages
 * recomputed from silver with plain hash maps and sorts (not the operators
 * of src/process: the point is an independent check) and merged with what
 * gold holds, pass by pass within the memory budget. One thread.
 */
#include "pipeline/verify_int.h"

/* ---------------------------------------------------------------- gold */

/*
 * Both gold tables are checked the same way within a pass: the rows the
 * recomputation expects and the rows gold holds become struct grow, both
 * lists are sorted by their key and merged. The key is (window start,
 * wiki) for gold_edits_per_minute and (window start, rank) for
 * gold_top_pages (keylen: how many text bytes belong to the key).
 */
struct grow {
    uint32_t kind; /* ENT_GROUP: also a (minute, wiki) entry of the index */
    int32_t rank;  /* top: 1..20; epm: 0 */
    uint32_t exact, wiki_len, title_len, keylen;
    struct grow *next;
    int64_t start, end;
    int64_t v[7]; /* epm: events .. distinct_users (saturating); top: edits in v[0] */
    char text[];  /* wiki then title */
};

static const char *const epm_names[7] = {
    "events", "edits", "new_pages", "bot_events", "bytes_added", "bytes_removed", "distinct_users"};

static struct grow *grow_new(struct vf_mem *m, struct grow **list, int64_t start, const char *wiki,
                             uint32_t wiki_len, const char *title, uint32_t title_len)
{
    struct grow *g = vf_mem_alloc(m, sizeof *g + wiki_len + title_len);
    if (!g) {
        return NULL;
    }
    memset(g, 0, sizeof *g);
    g->start = start;
    g->wiki_len = wiki_len;
    g->title_len = title_len;
    if (wiki_len) {
        memcpy(g->text, wiki, wiki_len);
    }
    if (title_len) {
        memcpy(g->text + wiki_len, title, title_len);
    }
    g->next = *list;
    *list = g;
    return g;
}

/* Order of two struct grow * (qsort); the key: start, rank, keylen bytes. */
static int grow_cmp(const void *a, const void *b)
{
    const struct grow *x = *(struct grow *const *)a, *y = *(struct grow *const *)b;
    if (x->start != y->start) {
        return x->start < y->start ? -1 : 1;
    }
    if (x->rank != y->rank) {
        return x->rank < y->rank ? -1 : 1;
    }
    return vf_bytes_cmp(x->text, x->keylen, y->text, y->keylen);
}

static void gold_example(struct fam_gold *f, const char *what, const struct grow *g,
                         const char *more)
{
    char ts[32], rank[16] = "";
    vf_fmt_time(g->start, ts);
    if (g->rank) {
        snprintf(rank, sizeof rank, " rank %d", g->rank);
    }
    vf_note(f->ex, sizeof f->ex, "%s: window %s %.*s%s %.*s%s", what, ts,
            (int)(g->wiki_len > 60 ? 60 : g->wiki_len), g->text, rank,
            (int)(g->title_len > 60 ? 60 : g->title_len), g->text + g->wiki_len, more);
}

/* A list as a sorted array from the arena (NULL when the pass is full). */
static struct grow **grow_sorted(struct vf_mem *m, struct grow *list, size_t *n)
{
    *n = 0;
    for (struct grow *g = list; g; g = g->next) {
        (*n)++;
    }
    struct grow **arr = vf_mem_alloc(m, sizeof *arr * (*n ? *n : 1));
    if (!arr) {
        return NULL;
    }
    size_t i = 0;
    for (struct grow *g = list; g; g = g->next) {
        arr[i++] = g;
    }
    qsort(arr, *n, sizeof *arr, grow_cmp);
    return arr;
}

/* Merge the expected rows with gold's; nv values per row, window width. */
static int gold_compare(struct vf *vf, struct fam_gold *f, int nv, int64_t width)
{
    size_t ne, ng;
    struct grow **want = grow_sorted(&vf->mem, f->want, &ne);
    struct grow **gold = want ? grow_sorted(&vf->mem, f->gold, &ng) : NULL;
    if (!gold) {
        return FR_ETOOBIG; /* the pass is full: more passes */
    }
    f->expected += (int64_t)ne;
    size_t i = 0, j = 0;
    while (i < ne || j < ng) {
        int c = i < ne && j < ng ? grow_cmp(&want[i], &gold[j]) : (i < ne ? -1 : 1);
        if (c < 0) {
            f->missing++;
            gold_example(f, "missing from gold", want[i++], "");
            continue;
        }
        const struct grow *g = gold[j++];
        if (c > 0) {
            f->extra++;
            f->beyond += vf->watermark_us == INT64_MIN || g->end > vf->watermark_us;
            gold_example(f, "not in the recomputation", g, "");
            continue;
        }
        const struct grow *e = want[i++];
        char more[160] = "";
        if (g->end != e->start + width) {
            snprintf(more, sizeof more, ": window_end %" PRId64, g->end);
        } else if (g->wiki_len != e->wiki_len || g->title_len != e->title_len ||
                   vf_bytes_cmp(g->text, g->wiki_len + g->title_len, e->text,
                                e->wiki_len + e->title_len) != 0) {
            snprintf(more, sizeof more, ": recomputed %.*s %.*s",
                     (int)(e->wiki_len > 60 ? 60 : e->wiki_len), e->text,
                     (int)(e->title_len > 60 ? 60 : e->title_len), e->text + e->wiki_len);
        }
        for (int v = 0; v < nv && !more[0]; v++) {
            /* A capped user set makes distinct_users a floor (SEMANTICS §4). */
            int ok = v == 6 && !g->exact ? g->v[v] <= e->v[v] : g->v[v] == e->v[v];
            if (!ok) {
                snprintf(more, sizeof more, ": %s %" PRId64 " in gold, %" PRId64 " recomputed",
                         nv == 7 ? epm_names[v] : "edits", g->v[v], e->v[v]);
            }
        }
        f->inexact += nv == 7 && !g->exact;
        if (more[0]) {
            f->mismatched++;
            gold_example(f, "differs", g, more);
        } else {
            f->matched++;
        }
        while (j < ng && grow_cmp(&want[i - 1], &gold[j]) == 0) {
            f->extra++;
            gold_example(f, "twice in gold", gold[j++], "");
        }
    }
    f->want = f->gold = NULL; /* the next pass starts from an empty arena */
    return FR_OK;
}

/* --------------------------------------------------- gold: per minute */

/* A (minute, wiki) group is its expected row; its users are tents. */
static int group_eq(const void *ent, const void *key)
{
    const struct grow *g = ent;
    const struct tent_key *k = key; /* key: the minute, a: the wiki */
    return g->kind == ENT_GROUP && g->start == k->key && g->wiki_len == k->a.len &&
           vf_same_bytes(g->text, k->a.ptr, k->a.len);
}

static uint64_t group_hash(int64_t start, const char *wiki, size_t len)
{
    return vf_mix(vf_hash(wiki, len, 7) ^ vf_mix((uint64_t)start));
}

/* a + d for a >= 0, saturating where the table does (2^63 - 1). */
static int64_t sat_add(int64_t a, uint64_t d)
{
    return d > (uint64_t)(INT64_MAX - a) ? INT64_MAX : a + (int64_t)d;
}

static int is_type(struct fr_pq_str s, const char *name)
{
    size_t n = strlen(name);
    return s.len == n && memcmp(s.ptr, name, n) == 0;
}

static const struct vf_col epm_silver_cols[] = {
    {"event_time", FR_PQ_TIMESTAMP}, {"wiki", FR_PQ_STRING}, {"type", FR_PQ_STRING},
    {"user", FR_PQ_STRING},          {"bot", FR_PQ_BOOL},    {"length_old", FR_PQ_INT64},
    {"length_new", FR_PQ_INT64}};

static int epm_silver(struct vf *vf, const struct fr_pq_batch *b, void *arg)
{
    struct fam_gold *f = arg;
    const struct fr_pq_vec *c = b->cols;
    for (uint32_t i = 0; i < b->nrows; i++) {
        int64_t start = vf_floor_minute(c[0].v.i64[i]);
        if (vf->watermark_us == INT64_MIN || start > vf->watermark_us - VF_MINUTE_US) {
            continue; /* window not settled at the cut */
        }
        struct fr_pq_str wiki = c[1].v.str[i];
        uint64_t h = group_hash(start, wiki.ptr, wiki.len);
        if (!vf_in_pass(h, vf->k, vf->passes)) {
            continue;
        }
        struct tent_key key = {ENT_GROUP, start, wiki, {NULL, 0}};
        struct grow *g = vf_mem_find(&vf->mem, h, group_eq, &key);
        if (!g) {
            if (!(g = vf_mem_add(&vf->mem, h, sizeof *g + wiki.len))) {
                return FR_ETOOBIG; /* the pass is full: more passes */
            }
            *g = (struct grow){.kind = ENT_GROUP,
                               .exact = 1,
                               .wiki_len = wiki.len,
                               .keylen = wiki.len,
                               .next = f->want,
                               .start = start,
                               .end = start + VF_MINUTE_US};
            if (wiki.len) {
                memcpy(g->text, wiki.ptr, wiki.len);
            }
            f->want = g;
            vf->mem.units++;
        }
        struct fr_pq_str type = c[2].v.str[i];
        int edit = is_type(type, "edit"), created = is_type(type, "new");
        g->v[0]++;
        g->v[1] += edit;
        g->v[2] += created;
        g->v[3] += !c[4].nulls[i] && c[4].v.b[i];
        if ((edit || created) && !c[6].nulls[i]) {
            int64_t lnew = c[6].v.i64[i], lold = c[5].nulls[i] ? 0 : c[5].v.i64[i];
            if (lnew > lold) {
                g->v[4] = sat_add(g->v[4], (uint64_t)lnew - (uint64_t)lold);
            } else if (lnew < lold) {
                g->v[5] = sat_add(g->v[5], (uint64_t)lold - (uint64_t)lnew);
            }
        }
        if (!c[3].nulls[i]) { /* a user: key the group's address, a the name */
            struct tent_key uk = {ENT_USER, (int64_t)(intptr_t)g, c[3].v.str[i], {NULL, 0}};
            uint64_t uh = vf_mix(vf_hash(uk.a.ptr, uk.a.len, 11) ^ (uint64_t)uk.key);
            int added;
            if (!vf_tent_get(&vf->mem, uh, &uk, &added)) {
                return FR_ETOOBIG; /* the pass is full: more passes */
            }
            g->v[6] += (uint64_t)added;
        }
    }
    return FR_OK;
}

static const struct vf_col epm_gold_cols[] = {{"window_start", FR_PQ_TIMESTAMP},
                                              {"window_end", FR_PQ_TIMESTAMP},
                                              {"wiki", FR_PQ_STRING},
                                              {"events", FR_PQ_INT64},
                                              {"edits", FR_PQ_INT64},
                                              {"new_pages", FR_PQ_INT64},
                                              {"bot_events", FR_PQ_INT64},
                                              {"bytes_added", FR_PQ_INT64},
                                              {"bytes_removed", FR_PQ_INT64},
                                              {"distinct_users", FR_PQ_INT64},
                                              {"distinct_users_exact", FR_PQ_BOOL}};

/* ------------------------------------------------------ gold: top pages */

static uint64_t window_hash(int64_t start)
{
    return vf_mix((uint64_t)start ^ UINT64_C(0x7f4a7c159e3779b9));
}

static const struct vf_col top_silver_cols[] = {{"event_time", FR_PQ_TIMESTAMP},
                                                {"wiki", FR_PQ_STRING},
                                                {"type", FR_PQ_STRING},
                                                {"title", FR_PQ_STRING}};

static int top_silver(struct vf *vf, const struct fr_pq_batch *b, void *arg)
{
    (void)arg;
    const struct fr_pq_vec *c = b->cols;
    for (uint32_t i = 0; i < b->nrows && vf->watermark_us != INT64_MIN; i++) {
        struct fr_pq_str type = c[2].v.str[i];
        if (c[3].nulls[i] || !(is_type(type, "edit") || is_type(type, "new"))) {
            continue;
        }
        struct fr_pq_str wiki = c[1].v.str[i], title = c[3].v.str[i];
        uint64_t ph = vf_mix(vf_hash(wiki.ptr, wiki.len, 13) ^ vf_hash(title.ptr, title.len, 17));
        int64_t m = vf_floor_minute(c[0].v.i64[i]);
        /* the ten windows [s, s + 10 min) that hold minute m, if settled */
        for (int64_t s = m - 9 * VF_MINUTE_US; s <= m && s <= vf->watermark_us - VF_TOP_WINDOW_US;
             s += VF_MINUTE_US) {
            if (!vf_in_pass(window_hash(s), vf->k, vf->passes)) {
                continue;
            }
            /* the counter; its window, the unit of this family, once */
            struct tent_key key = {ENT_CTR, s, wiki, title},
                            win = {ENT_WIN, s, {NULL, 0}, {NULL, 0}};
            int added, new_win = 0;
            struct tent *ctr =
                vf_tent_get(&vf->mem, vf_mix(ph ^ vf_mix((uint64_t)s)), &key, &added);
            if (!ctr || (added && !vf_tent_get(&vf->mem, window_hash(s), &win, &new_win))) {
                return FR_ETOOBIG; /* the pass is full: more passes */
            }
            vf->mem.units += (size_t)new_win;
            ctr->count++;
        }
    }
    return FR_OK;
}

static const struct vf_col top_gold_cols[] = {{"window_start", FR_PQ_TIMESTAMP},
                                              {"window_end", FR_PQ_TIMESTAMP},
                                              {"rank", FR_PQ_INT32},
                                              {"wiki", FR_PQ_STRING},
                                              {"title", FR_PQ_STRING},
                                              {"edits", FR_PQ_INT64}};

/* Window start ascending, count descending, wiki then title ascending. */
static int ctr_rank_cmp(const void *a, const void *b)
{
    const struct tent *x = *(void *const *)a, *y = *(void *const *)b;
    if (x->key != y->key) {
        return x->key < y->key ? -1 : 1;
    }
    if (x->count != y->count) {
        return x->count > y->count ? -1 : 1;
    }
    int c = vf_bytes_cmp(x->text, x->alen, y->text, y->alen);
    return c ? c : vf_bytes_cmp(x->text + x->alen, x->blen, y->text + y->alen, y->blen);
}

/* The first 20 counters of each window of this pass, ranked 1..20. */
static int top_expected(struct vf *vf, struct fam_gold *f)
{
    size_t nc;
    void **ctr = vf_mem_collect(&vf->mem, ENT_CTR, &nc);
    if (!ctr) {
        return FR_ETOOBIG; /* the pass is full: more passes */
    }
    qsort(ctr, nc, sizeof *ctr, ctr_rank_cmp);
    int32_t rank = 0;
    for (size_t i = 0; i < nc; i++) {
        const struct tent *e = ctr[i], *prev = i ? ctr[i - 1] : NULL;
        rank = prev && prev->key == e->key ? rank + 1 : 1;
        if (rank > VF_TOP_N) {
            continue;
        }
        struct grow *g =
            grow_new(&vf->mem, &f->want, e->key, e->text, e->alen, e->text + e->alen, e->blen);
        if (!g) {
            return FR_ETOOBIG; /* the pass is full: more passes */
        }
        g->end = e->key + VF_TOP_WINDOW_US;
        g->rank = rank;
        g->v[0] = e->count > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)e->count;
    }
    return FR_OK;
}

/* Gold's own rows of this pass (vf->role: ROLE_EPM or ROLE_TOP). */
static int gold_rows(struct vf *vf, const struct fr_pq_batch *b, void *arg)
{
    struct fam_gold *f = arg;
    const struct fr_pq_vec *c = b->cols;
    int top = vf->role == ROLE_TOP;
    for (uint32_t i = 0; i < b->nrows; i++) {
        f->gold_rows += vf->k == 0;
        int64_t start = c[0].v.i64[i];
        struct fr_pq_str wiki = c[top ? 3 : 2].v.str[i], title = {NULL, 0};
        title = top ? c[4].v.str[i] : title;
        uint64_t h = top ? window_hash(start) : group_hash(start, wiki.ptr, wiki.len);
        if (!vf_in_pass(h, vf->k, vf->passes)) {
            continue;
        }
        struct grow *g =
            grow_new(&vf->mem, &f->gold, start, wiki.ptr, wiki.len, title.ptr, title.len);
        if (!g) {
            return FR_ETOOBIG; /* the pass is full: more passes */
        }
        g->end = c[1].v.i64[i];
        g->rank = top ? c[2].v.i32[i] : 0;
        for (int v = 0; v < (top ? 1 : 7); v++) {
            g->v[v] = c[(top ? 5 : 3) + v].v.i64[i];
        }
        g->exact = top || c[10].v.b[i] != 0;
        g->keylen = top ? 0 : wiki.len;
    }
    return FR_OK;
}

static int epm_finish(struct vf *vf, void *fam)
{
    return gold_compare(vf, fam, 7, VF_MINUTE_US);
}

static int top_finish(struct vf *vf, void *fam)
{
    int rc = top_expected(vf, fam);
    return rc == FR_OK ? gold_compare(vf, fam, 1, VF_TOP_WINDOW_US) : rc;
}

static const struct vf_family fam_epm = {
    "gold_epm",
    {{FR_TBL_SILVER, 0, epm_silver_cols, 7, epm_silver},
     {FR_TBL_GOLD_EPM, ROLE_EPM, epm_gold_cols, 11, gold_rows}},
    2,
    epm_finish};
static const struct vf_family fam_top = {"gold_top",
                                         {{FR_TBL_SILVER, 0, top_silver_cols, 4, top_silver},
                                          {FR_TBL_GOLD_TOP, ROLE_TOP, top_gold_cols, 6, gold_rows}},
                                         2,
                                         top_finish};

void vf_check_gold(struct vf *vf, struct fam_gold *f)
{
    int64_t silver = vf->tab[FR_TBL_SILVER].rows;
    for (int top = 0; top <= 1; top++) {
        uint32_t passes = 0;
        int rc = top ? vf_run_family(vf, &fam_top, 10 * silver + vf->tab[FR_TBL_GOLD_TOP].rows,
                                     sizeof(struct tent) + 64, f, sizeof *f, &passes)
                     : vf_run_family(vf, &fam_epm, 2 * silver + vf->tab[FR_TBL_GOLD_EPM].rows,
                                     sizeof(struct grow) + 32, f, sizeof *f, &passes);
        enum vf_ck ck = top ? CK_GOLD_TOP : CK_GOLD_EPM;
        struct vf_check *c = &vf->ck[ck];
        vf_figs(c, "passes", (int64_t)passes, NULL);
        if (rc < 0) {
            vf_not_evaluated(vf, ck);
            continue;
        }
        vf_figs(c, "expected_rows", f->expected, "gold_rows", f->gold_rows, "matched", f->matched,
                "missing", f->missing, "extra", f->extra, "mismatched", f->mismatched,
                "beyond_watermark", f->beyond, NULL);
        if (!top) {
            vf_figs(c, "inexact_users", f->inexact, NULL);
        }
        if (f->missing || f->extra || f->mismatched) {
            vf_problem(c, "%s", f->ex);
        }
    }
}
