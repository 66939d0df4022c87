/*
 * verify_util.c — `freshet verify`: hashing, the bounded memory of one pass (index +
 * arena), figures and problems of the checks, and the scan of a table at the
 * cut. Private half in verify_int.h; one thread.
 */
#include "pipeline/verify_int.h"

/* ------------------------------------------------------------- hashing */

uint64_t vf_mix(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    x ^= x >> 31;
    return x;
}

uint64_t vf_hash(const void *data, size_t len, uint64_t seed)
{
    const uint8_t *p = data;
    uint64_t h = vf_mix(seed ^ (len * UINT64_C(0x9e3779b97f4a7c15)));
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = vf_mix(h ^ w);
        p += 8;
        len -= 8;
    }
    uint64_t w = 0;
    if (len) {
        memcpy(&w, p, len);
    }
    return vf_mix(h ^ w ^ ((uint64_t)len << 56));
}

int vf_in_pass(uint64_t h, uint32_t k, uint32_t passes)
{
    return (uint32_t)((h >> 32) % passes) == k;
}

uint64_t vf_pos_hash(int32_t part, int64_t off)
{
    return vf_mix(vf_mix((uint64_t)(uint32_t)part + UINT64_C(0x51ed27)) ^ (uint64_t)off);
}

/* Unsigned bytewise order, a prefix first (SEMANTICS §5). */
int vf_bytes_cmp(const char *a, size_t al, const char *b, size_t bl)
{
    size_t n = al < bl ? al : bl;
    int c = n ? memcmp(a, b, n) : 0;
    if (c) {
        return c;
    }
    return al < bl ? -1 : al > bl;
}

int vf_same_bytes(const char *a, const char *b, size_t n)
{
    return n == 0 || memcmp(a, b, n) == 0;
}

int64_t vf_floor_minute(int64_t us)
{
    int64_t m = us / VF_MINUTE_US;
    if (us % VF_MINUTE_US < 0) {
        m--;
    }
    return m * VF_MINUTE_US;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    c = (char)(c | 0x20);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* meta.id as 16 bytes (8-4-4-4-12 hex, either case): 1, or 0 when it is
 * not a UUID (then key is a hash of the text, so counting can go on). */
int vf_uuid_key(const char *s, size_t len, uint8_t key[16])
{
    static const uint8_t at[16] = {0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34};
    int ok = len == 36 && s[8] == '-' && s[13] == '-' && s[18] == '-' && s[23] == '-';
    for (int j = 0; ok && j < 16; j++) {
        int hi = hexval(s[at[j]]), lo = hexval(s[at[j] + 1]);
        ok = hi >= 0 && lo >= 0;
        key[j] = ok ? (uint8_t)(hi << 4 | lo) : 0;
    }
    if (!ok) {
        uint64_t a = vf_hash(s, len, 1), b = vf_hash(s, len, 2);
        memcpy(key, &a, 8);
        memcpy(key + 8, &b, 8);
    }
    return ok;
}

/* -------------------------------------------------------------- memory */

int vf_mem_init(struct vf_mem *m, size_t budget)
{
    memset(m, 0, sizeof *m);
    size_t n = 256;
    while (n * 2 * sizeof(struct vf_slot) <= budget / 4) {
        n *= 2;
    }
    m->nslots = n;
    m->max_used = n / 4 * 3;
    m->cap = budget - n * sizeof(struct vf_slot);
    m->slots = calloc(n, sizeof *m->slots);
    m->arena = malloc(m->cap);
    return m->slots && m->arena ? FR_OK : FR_ENOMEM;
}

void vf_mem_free(struct vf_mem *m)
{
    free(m->slots);
    free(m->arena);
    m->slots = NULL;
    m->arena = NULL;
}

void vf_mem_reset(struct vf_mem *m)
{
    if (m->used) {
        memset(m->slots, 0, m->nslots * sizeof *m->slots);
    }
    m->used = 0;
    m->len = 0;
    m->units = 0;
    m->overflow = 0;
}

void *vf_mem_alloc(struct vf_mem *m, size_t n)
{
    n = (n + 7) & ~(size_t)7;
    if (n > m->cap - m->len) {
        m->overflow = 1;
        return NULL;
    }
    void *p = m->arena + m->len;
    m->len += n;
    size_t use = m->len + m->nslots * sizeof(struct vf_slot);
    if (use > m->peak) {
        m->peak = use;
    }
    return p;
}

void *vf_mem_find(const struct vf_mem *m, uint64_t h, vf_eq_fn eq, const void *key)
{
    size_t mask = m->nslots - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        const struct vf_slot *s = &m->slots[i];
        if (!s->ent) {
            return NULL;
        }
        if (s->h == h && eq(s->ent, key)) {
            return s->ent;
        }
    }
}

/* A new zeroed entry of size bytes under h (the caller checked it is absent). */
void *vf_mem_add(struct vf_mem *m, uint64_t h, size_t size)
{
    if (m->used >= m->max_used) {
        m->overflow = 1;
        return NULL;
    }
    void *ent = vf_mem_alloc(m, size);
    if (!ent) {
        return NULL;
    }
    memset(ent, 0, size);
    size_t mask = m->nslots - 1;
    size_t i = h & mask;
    while (m->slots[i].ent) {
        i = (i + 1) & mask;
    }
    m->slots[i].h = h;
    m->slots[i].ent = ent;
    m->used++;
    return ent;
}

/* The entries of one kind (their first uint32_t) in this pass, as an
 * array from the arena; NULL when the arena is full. */
void **vf_mem_collect(struct vf_mem *m, uint32_t kind, size_t *n)
{
    *n = 0;
    for (size_t i = 0; i < m->nslots; i++) {
        const uint32_t *k = m->slots[i].ent;
        *n += k && *k == kind;
    }
    void **arr = vf_mem_alloc(m, sizeof *arr * (*n ? *n : 1));
    for (size_t i = 0, j = 0; arr && i < m->nslots; i++) {
        const uint32_t *k = m->slots[i].ent;
        if (k && *k == kind) {
            arr[j++] = m->slots[i].ent;
        }
    }
    return arr;
}

int vf_tent_eq(const void *ent, const void *key)
{
    const struct tent *e = ent;
    const struct tent_key *k = key;
    return e->kind == k->kind && e->key == k->key && e->alen == k->a.len && e->blen == k->b.len &&
           vf_same_bytes(e->text, k->a.ptr, k->a.len) &&
           vf_same_bytes(e->text + e->alen, k->b.ptr, k->b.len);
}

/* Find k under h, or add it (*added = 1); NULL when the pass is full. */
struct tent *vf_tent_get(struct vf_mem *m, uint64_t h, const struct tent_key *k, int *added)
{
    struct tent *e = vf_mem_find(m, h, vf_tent_eq, k);
    *added = !e;
    if (!e && (e = vf_mem_add(m, h, sizeof *e + k->a.len + k->b.len)) != NULL) {
        e->kind = k->kind;
        e->key = k->key;
        e->alen = k->a.len;
        e->blen = k->b.len;
        if (k->a.len) {
            memcpy(e->text, k->a.ptr, k->a.len);
        }
        if (k->b.len) {
            memcpy(e->text + k->a.len, k->b.ptr, k->b.len);
        }
    }
    return e;
}

/* Set figures: (const char *key, int64_t value) pairs, then NULL. */
void vf_figs(struct vf_check *c, ...)
{
    va_list ap;
    va_start(ap, c);
    for (const char *key; (key = va_arg(ap, const char *)) != NULL;) {
        int64_t v = va_arg(ap, int64_t);
        uint32_t i = 0;
        while (i < c->nfigs && strcmp(c->figs[i].key, key) != 0) {
            i++;
        }
        if (i < VF_MAX_FIGS) {
            c->figs[i] = (struct vf_fig){key, v};
            c->nfigs += i == c->nfigs;
        }
    }
    va_end(ap);
}

/* Record a problem (the first detail wins) and fail the check. */
__attribute__((format(printf, 2, 3))) void vf_problem(struct vf_check *c, const char *fmt, ...)
{
    c->failed = 1;
    if (c->detail[0]) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->detail, sizeof c->detail, fmt, ap);
    va_end(ap);
}

__attribute__((format(printf, 3, 4))) int vf_errf(struct vf *vf, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(vf->err, sizeof vf->err, fmt, ap);
    va_end(ap);
    return rc;
}

void vf_fmt_time(int64_t us, char out[32])
{
    if (us == INT64_MIN) {
        snprintf(out, 32, "none");
    } else {
        fr_time_format_ms(us, out);
    }
}

/* Keep the first example of a problem. */
__attribute__((format(printf, 3, 4))) void vf_note(char *ex, size_t cap, const char *fmt, ...)
{
    if (ex[0]) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ex, cap, fmt, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------- scan */

/* fr_lake_batch_fn over a vf_batch_fn. */
struct vf_scan_arg {
    struct vf *vf;
    vf_batch_fn fn;
    void *arg;
};

static int vf_scan_batch(void *arg, const struct fr_pq_batch *b)
{
    struct vf_scan_arg *sa = arg;
    sa->vf->pg_rows += b->nrows;
    fr_progress_tick(&sa->vf->pg, sa->vf->pg_rows);
    return sa->fn(sa->vf, b, sa->arg);
}

/* Call fn with every batch of the columns cols of table t at the cut. */
int vf_scan(struct vf *vf, enum fr_tbl t, const struct vf_col *cols, uint32_t ncols, vf_batch_fn fn,
            void *arg)
{
    struct vf_tab *tab = &vf->tab[t];
    if (tab->broken[0] || ncols > 16) {
        return vf_errf(vf, FR_ECORRUPT, "%s", tab->broken);
    }
    if (tab->snap < 0) {
        return FR_OK;
    }
    struct fr_ice_file_list list;
    int rc = fr_ice_files(vf->cat, tab->table, tab->snap, false, &list);
    if (rc < 0) {
        return vf_errf(vf, rc, "%s", fr_ice_errmsg());
    }
    struct fr_lake_col lcols[16];
    for (uint32_t c = 0; c < ncols; c++) {
        lcols[c] = (struct fr_lake_col){cols[c].name, cols[c].type};
    }
    struct vf_scan_arg sa = {vf, fn, arg};
    char err[512];
    for (size_t i = 0; rc == FR_OK && i < list.nfiles; i++) {
        const char *path = list.files[i].local_path;
        rc = fr_lake_scan_file(&vf->lake, path, &vf->ropts, lcols, ncols, vf_scan_batch, &sa, err,
                               sizeof err);
        if (rc < 0 && err[0]) {
            vf_errf(vf, rc, "%s", err); /* the file or its columns */
        } else if (rc < 0 && !vf->mem.overflow) {
            vf_errf(vf, rc, "%s: %s", list.files[i].path, /* the URI */
                    fr_pq_errmsg());                      /* fn's, unless a full pass */
        }
    }
    fr_ice_file_list_free(&list);
    return rc;
}
