/*
 * verify.c — `freshet verify`: checks one consistent cut of the lake
 * against the delivery contract; the exact rules, figures and memory
 * design are in docs/VERIFY.md.
 *
 * The cut. Bronze commits in every epoch, so the epoch E of bronze's
 * current snapshot fixes it; every other table is read at the newest
 * snapshot of its lineage whose nearest marker (freshet.epoch <= E, or a
 * `dlq replay` id that bronze holds) is inside the cut. Unmarked snapshots
 * (compactions, rebuilds) belong where their parent does. Bronze is loaded
 * first, so a live pipeline can only have moved the others past the cut.
 *
 * Bounded memory. No table is held whole. Each family of checks (keyed by
 * log position, meta_id, file path, (minute, wiki) or window) runs K passes;
 * pass k keeps only the keys whose hash h has (h >> 32) % K == k, in one
 * index and one bump arena that never exceed --memory-mb. K comes from the
 * manifests' row counts; a pass that still overflows restarts the family
 * with 2K. Parquet is read a batch at a time, only the columns needed.
 *
 * Gold is recomputed here with plain hash maps and sorts, not with the
 * operators in src/process: the point is an independent check.
 *
 * One thread; read-only (no commit, no file written); nice 10.
 */
#include "pipeline/verify.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"
#include "iceberg/iceberg.h"
#include "parquet/parquet.h"
#include "pipeline/checkpoint.h"
#include "pipeline/lake.h"
#include "pipeline/pipeline.h"
#include "pipeline/tables.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#define VF_MINUTE_US INT64_C(60000000)
#define VF_TOP_WINDOW_US (10 * VF_MINUTE_US)
#define VF_TOP_N 20
#define VF_NICE 10
#define VF_MAX_PASSES (1u << 20)
#define VF_MAX_FIGS 16
#define VF_DEFAULT_MB 64
#define VF_MIN_MB 1
#define VF_MAX_MB 65536
/* Summary keys of `freshet dlq replay` and `freshet rebuild` (defined in
 * maint.h's private half; docs/DLQ.md and docs/REBUILD.md). */
#define VF_SUMMARY_REPLAY "freshet.dlq-replay"
#define VF_SUMMARY_REBUILD "freshet.rebuild"
#define VF_SUMMARY_REBUILD_EPOCH "freshet.rebuild-epoch"
#define VF_SUMMARY_REBUILD_REJECTED "freshet.rebuild-rejected"

/* ------------------------------------------------------------- hashing */

static uint64_t vf_mix(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    x ^= x >> 31;
    return x;
}

static uint64_t vf_hash(const void *data, size_t len, uint64_t seed)
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

static int in_pass(uint64_t h, uint32_t k, uint32_t passes)
{
    return (uint32_t)((h >> 32) % passes) == k;
}

static uint64_t pos_hash(int32_t part, int64_t off)
{
    return vf_mix(vf_mix((uint64_t)(uint32_t)part + UINT64_C(0x51ed27)) ^ (uint64_t)off);
}

/* Unsigned bytewise order, a prefix first (SEMANTICS §5). */
static int bytes_cmp(const char *a, size_t al, const char *b, size_t bl)
{
    size_t n = al < bl ? al : bl;
    int c = n ? memcmp(a, b, n) : 0;
    if (c) {
        return c;
    }
    return al < bl ? -1 : al > bl;
}

static int same_bytes(const char *a, const char *b, size_t n)
{
    return n == 0 || memcmp(a, b, n) == 0;
}

static int64_t floor_minute(int64_t us)
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
static int uuid_key(const char *s, size_t len, uint8_t key[16])
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

/*
 * One pass's memory: an index of slots (a quarter of the budget, load at
 * most 3/4) and a bump arena (the rest) for entries, their text and the
 * sort arrays. Both are allocated once per run and reset between passes;
 * nothing grows past them. A full index or arena sets overflow and the
 * caller answers FR_ETOOBIG, which makes the family restart with 2K.
 */
struct vf_slot {
    uint64_t h;
    void *ent; /* NULL: empty */
};

struct vf_mem {
    struct vf_slot *slots;
    size_t nslots, used, max_used;
    uint8_t *arena;
    size_t len, cap;
    size_t peak;  /* largest index + arena use of any pass */
    size_t units; /* partition units (windows, groups) kept in this pass */
    int overflow;
};

typedef int (*vf_eq_fn)(const void *ent, const void *key);

static int mem_init(struct vf_mem *m, size_t budget)
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

static void mem_free(struct vf_mem *m)
{
    free(m->slots);
    free(m->arena);
    m->slots = NULL;
    m->arena = NULL;
}

static void mem_reset(struct vf_mem *m)
{
    if (m->used) {
        memset(m->slots, 0, m->nslots * sizeof *m->slots);
    }
    m->used = 0;
    m->len = 0;
    m->units = 0;
    m->overflow = 0;
}

static void *mem_alloc(struct vf_mem *m, size_t n)
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

static void *mem_find(const struct vf_mem *m, uint64_t h, vf_eq_fn eq, const void *key)
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
static void *mem_add(struct vf_mem *m, uint64_t h, size_t size)
{
    if (m->used >= m->max_used) {
        m->overflow = 1;
        return NULL;
    }
    void *ent = mem_alloc(m, size);
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
static void **mem_collect(struct vf_mem *m, uint32_t kind, size_t *n)
{
    *n = 0;
    for (size_t i = 0; i < m->nslots; i++) {
        const uint32_t *k = m->slots[i].ent;
        *n += k && *k == kind;
    }
    void **arr = mem_alloc(m, sizeof *arr * (*n ? *n : 1));
    for (size_t i = 0, j = 0; arr && i < m->nslots; i++) {
        const uint32_t *k = m->slots[i].ent;
        if (k && *k == kind) {
            arr[j++] = m->slots[i].ent;
        }
    }
    return arr;
}

/*
 * The common entry: a kind, a 64-bit key (a window start, a group's
 * address, 0) and the bytes a then b (wiki then title, a user name, a
 * path), with a counter. Entries of other shapes start with a kind too.
 */
struct tent {
    uint32_t kind, alen, blen, pad;
    int64_t key;
    uint64_t count;
    char text[];
};

struct tent_key {
    uint32_t kind;
    int64_t key;
    struct fr_pq_str a, b;
};

static int tent_eq(const void *ent, const void *key)
{
    const struct tent *e = ent;
    const struct tent_key *k = key;
    return e->kind == k->kind && e->key == k->key && e->alen == k->a.len && e->blen == k->b.len &&
           same_bytes(e->text, k->a.ptr, k->a.len) &&
           same_bytes(e->text + e->alen, k->b.ptr, k->b.len);
}

/* Find k under h, or add it (*added = 1); NULL when the pass is full. */
static struct tent *tent_get(struct vf_mem *m, uint64_t h, const struct tent_key *k, int *added)
{
    struct tent *e = mem_find(m, h, tent_eq, k);
    *added = !e;
    if (!e && (e = mem_add(m, h, sizeof *e + k->a.len + k->b.len)) != NULL) {
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

/* --------------------------------------------------------------- state */

/* The checks, in output order: X(enum, name). */
#define VF_CHECKS(X)                                                                               \
    X(CK_BRONZE_COUNT, "bronze_count")                                                             \
    X(CK_POSITIONS, "bronze_positions_unique")                                                     \
    X(CK_SILVER_UNIQUE, "silver_meta_id_unique")                                                   \
    X(CK_SILVER_COVERS, "silver_covers_bronze")                                                    \
    X(CK_FILES, "no_file_in_two_live_snapshots")                                                   \
    X(CK_GOLD_EPM, "gold_epm_recomputed")                                                          \
    X(CK_GOLD_TOP, "gold_top_recomputed")                                                          \
    X(CK_LATE, "late_consistent")                                                                  \
    X(CK_FRESHNESS, "freshness")
#define VF_CK_ENUM(e, name) e,
#define VF_CK_NAME(e, name) name,
enum vf_ck { VF_CHECKS(VF_CK_ENUM) CK_COUNT };
static const char *const ck_names[CK_COUNT] = {VF_CHECKS(VF_CK_NAME)};

struct vf_fig {
    const char *key;
    int64_t v;
};

struct vf_check {
    int failed; /* any failing figure, or not evaluated */
    struct vf_fig figs[VF_MAX_FIGS];
    uint32_t nfigs;
    char detail[512]; /* the first problem found, or why it was not evaluated */
};

/* One table at the cut. */
struct vf_tab {
    struct fr_ice_table *table;
    int64_t current; /* current snapshot id, -1: none */
    int64_t snap;    /* cut snapshot id, -1: empty at the cut */
    int64_t epoch;   /* the cut snapshot's epoch, -1: none */
    int64_t rows;    /* from the manifests */
    int64_t nfiles;
    char broken[512]; /* why its files cannot be listed; "" when they can */
};

struct vf {
    struct fr_conf *conf;
    struct fr_lake lake;        /* the catalog and its warehouse (local or S3) */
    struct fr_ice_catalog *cat; /* lake.cat */
    struct vf_tab tab[FR_TBL_ALL]; /* the six tables and dlq_replays */
    struct vf_mem mem;
    size_t budget;
    struct fr_pq_read_opts ropts;
    /* the cut */
    int64_t epoch;           /* -1: no epoch of this pipeline in bronze */
    int64_t watermark_us;    /* INT64_MIN: none */
    int64_t watermark_ms;    /* when the snapshot that set it was committed */
    int64_t consumed;        /* sum of the end offsets; consumed_ok when they parse */
    int64_t history_records; /* sum of epoch-records, -1: history incomplete */
    int64_t history_epochs;  /* marked snapshots in bronze's lineage */
    const char **replays;    /* dlq replay ids in bronze's lineage (malloc'd) */
    uint32_t nreplays;
    int64_t rebuild_rejected; /* bronze rows the newest rebuild's gate rejected */
    int consumed_ok;
    char offsets[2048];
    /* The scale-out mode (docs/SCALEOUT.md): bronze holds the epochs of
     * shards "<id>-p<N>" and gold those of the finalizer "<id>-gold". The
     * cut is each shard's newest epoch in bronze's lineage (shard_epoch[p],
     * -1: none) and gold's newest finalizer epoch whose shard epochs are
     * all inside it; the watermark is that epoch's frontier. */
    int sharded;
    int64_t shard_epoch[FR_CK_MAX_PARTS];
    /* the pass being run: keys with (h >> 32) % passes == k; the table read */
    uint32_t k, passes;
    int role;
    /* results */
    struct vf_check ck[CK_COUNT];
    int positions_ok; /* the positions family ran: bronze was read */
    char err[1024];   /* the last read error */
};

/* Set figures: (const char *key, int64_t value) pairs, then NULL. */
static void figs(struct vf_check *c, ...)
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
__attribute__((format(printf, 2, 3))) static void problem(struct vf_check *c, const char *fmt, ...)
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

__attribute__((format(printf, 3, 4))) static int vf_errf(struct vf *vf, int rc, const char *fmt,
                                                         ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(vf->err, sizeof vf->err, fmt, ap);
    va_end(ap);
    return rc;
}

static void fmt_time(int64_t us, char out[32])
{
    if (us == INT64_MIN) {
        snprintf(out, 32, "none");
    } else {
        fr_time_format_ms(us, out);
    }
}

/* ----------------------------------------------------------------- cut */

static const char *summary_get(const struct fr_ice_snapshot *s, const char *key)
{
    for (uint32_t i = 0; i < s->nsummary; i++) {
        if (strcmp(s->summary[i].key, key) == 0) {
            return s->summary[i].value;
        }
    }
    return NULL;
}

static int parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s) {
        return FR_EINVAL;
    }
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end || errno) {
        return FR_EINVAL;
    }
    *out = v;
    return FR_OK;
}

/* This pipeline's epoch marker on s, or -1. */
static int64_t snap_marker(const struct vf *vf, const struct fr_ice_snapshot *s)
{
    const char *p = summary_get(s, FR_ICE_SUMMARY_PIPELINE);
    int64_t e;
    if (!p || strcmp(p, vf->conf->general_pipeline_id) != 0 ||
        parse_i64(summary_get(s, FR_ICE_SUMMARY_EPOCH), &e) < 0 || e < 0) {
        return -1;
    }
    return e;
}

/* The scale-out shard marker on s ("<id>-p<N>", epoch): 1 with *part and
 * *epoch, or 0. */
static int shard_marker(const struct vf *vf, const struct fr_ice_snapshot *s, uint32_t *part,
                        int64_t *epoch)
{
    const char *p = summary_get(s, FR_ICE_SUMMARY_PIPELINE);
    size_t n = strlen(vf->conf->general_pipeline_id);
    if (!p || strncmp(p, vf->conf->general_pipeline_id, n) != 0 || p[n] != '-' ||
        p[n + 1] != 'p') {
        return 0;
    }
    char *end;
    long k = strtol(p + n + 2, &end, 10);
    if (*end || end == p + n + 2 || k < 0 || k >= FR_CK_MAX_PARTS ||
        parse_i64(summary_get(s, FR_ICE_SUMMARY_EPOCH), epoch) < 0 || *epoch < 0) {
        return 0;
    }
    *part = (uint32_t)k;
    return 1;
}

/* Whether s carries the finalizer's marker ("<id>-gold"). */
static int final_marker(const struct vf *vf, const struct fr_ice_snapshot *s)
{
    const char *p = summary_get(s, FR_ICE_SUMMARY_PIPELINE);
    size_t n = strlen(vf->conf->general_pipeline_id);
    return p && strncmp(p, vf->conf->general_pipeline_id, n) == 0 &&
           strcmp(p + n, FR_PIPE_FINAL_SUFFIX) == 0;
}

/* Whether every shard epoch a finalizer snapshot consumed ("shard/0:4-9,
 * ...", ends exclusive) is inside the cut. */
static int final_in_cut(const struct vf *vf, const struct fr_ice_snapshot *s)
{
    const char *text = summary_get(s, FR_ICE_SUMMARY_OFFSETS);
    struct fr_ck_range r;
    if (!text || fr_ck_range_parse(text, FR_PIPE_FINAL_RANGE, 0, &r) < 0) {
        return 0;
    }
    for (uint32_t p = 0; p < r.nparts; p++) {
        if (r.end[p] > r.start[p] && r.end[p] - 1 > vf->shard_epoch[p]) {
            return 0;
        }
    }
    return 1;
}

/* The lineage of a table's current snapshot, newest first (one backward
 * sweep: snapshots are listed in commit order; an expired ancestor ends
 * it), with the largest epoch marker at or below each. *chain and *eff are
 * malloc'd (free them). */
static int lineage(const struct vf *vf, const struct fr_ice_table *table, uint32_t **chain,
                   int64_t **eff, uint32_t *n)
{
    *chain = NULL;
    *eff = NULL;
    *n = 0;
    uint32_t nsnap = 0;
    const struct fr_ice_snapshot *snaps = table ? fr_ice_table_snapshots(table, &nsnap) : NULL;
    if (nsnap == 0) {
        return FR_OK; /* not created yet, or no snapshot */
    }
    *chain = malloc(sizeof **chain * nsnap);
    *eff = malloc(sizeof **eff * nsnap);
    if (!*chain || !*eff) {
        return FR_ENOMEM;
    }
    int64_t id = fr_ice_table_snapshot_id(table);
    for (uint32_t i = nsnap; id >= 0 && i-- > 0;) {
        if (snaps[i].snapshot_id == id) {
            (*chain)[(*n)++] = i;
            id = snaps[i].parent_id;
        }
    }
    int64_t e = -1;
    for (uint32_t k = *n; k-- > 0;) {
        int64_t m = snap_marker(vf, &snaps[(*chain)[k]]);
        e = m > e ? m : e;
        (*eff)[k] = e;
    }
    return FR_OK;
}

/* "recentchange/0:100-200,recentchange/1:7-9": the sum of the ends. */
static int parse_offsets(const char *s, int64_t *sum)
{
    *sum = 0;
    if (!s) {
        return FR_EINVAL;
    }
    const char *p = s;
    while (*p) {
        const char *comma = strchr(p, ',');
        if (!comma) {
            comma = p + strlen(p);
        }
        const char *colon = memchr(p, ':', (size_t)(comma - p));
        if (!colon) {
            return FR_EINVAL;
        }
        char *end;
        errno = 0;
        long long a = strtoll(colon + 1, &end, 10);
        if (*end != '-' || errno) {
            return FR_EINVAL;
        }
        long long b = strtoll(end + 1, &end, 10);
        if (end != comma || errno || a < 0 || b < a || b > INT64_MAX - *sum) {
            return FR_EINVAL;
        }
        *sum += b;
        p = *comma ? comma + 1 : comma;
    }
    return FR_OK;
}

/* Bronze in the scale-out mode: each shard's newest epoch, the sum of
 * their end offsets, and each shard's history (complete when its markers,
 * newest first, are E, E-1, ..., 0). The watermark comes from gold's cut
 * (cut_table). */
static int cut_shards(struct vf *vf)
{
    struct vf_tab *tab = &vf->tab[FR_TBL_BRONZE];
    uint32_t nsnap = 0, n;
    uint32_t *chain;
    int64_t *eff;
    int rc = lineage(vf, tab->table, &chain, &eff, &n);
    const struct fr_ice_snapshot *snaps = n ? fr_ice_table_snapshots(tab->table, &nsnap) : NULL;
    int64_t next[FR_CK_MAX_PARTS], records = 0;
    int complete = 1;
    vf->consumed = 0;
    vf->consumed_ok = 1;
    vf->epoch = -1;
    tab->snap = tab->current;
    vf->replays = calloc(n ? n : 1, sizeof *vf->replays);
    rc = rc == FR_OK && !vf->replays ? FR_ENOMEM : rc;
    for (uint32_t k = 0; rc == FR_OK && k < n; k++) {
        const struct fr_ice_snapshot *s = &snaps[chain[k]];
        uint32_t p;
        int64_t e, r, end;
        if (!shard_marker(vf, s, &p, &e)) {
            continue;
        }
        if (vf->shard_epoch[p] < 0) {
            vf->shard_epoch[p] = e;
            next[p] = e;
            vf->epoch = e > vf->epoch ? e : vf->epoch;
            vf->consumed_ok &= parse_offsets(summary_get(s, FR_ICE_SUMMARY_OFFSETS), &end) == FR_OK;
            vf->consumed += vf->consumed_ok ? end : 0;
        }
        if (e != next[p] || parse_i64(summary_get(s, FR_SUMMARY_RECORDS), &r) < 0 || r < 0) {
            complete = 0;
        } else {
            records += r;
        }
        next[p] = e - 1;
        vf->history_epochs++;
    }
    size_t at = 0;
    for (uint32_t p = 0; p < FR_CK_MAX_PARTS && at < sizeof vf->offsets; p++) {
        if (vf->shard_epoch[p] >= 0) {
            complete &= next[p] == -1;
            int w = snprintf(vf->offsets + at, sizeof vf->offsets - at, "%sp%u:%" PRId64,
                             at ? "," : "shard epochs ", p, vf->shard_epoch[p]);
            at += w > 0 ? (size_t)w : 0;
        }
    }
    vf->history_records = complete ? records : -1;
    tab->epoch = vf->epoch;
    free(chain);
    free(eff);
    return rc;
}

/* Bronze: the cut epoch, its offsets, the replays it holds, the watermark
 * (its snapshot marked E, or a replay committed after it) and the history
 * (complete when the markers, newest first, are E, E-1, ..., 0). */
static int cut_bronze(struct vf *vf)
{
    struct vf_tab *tab = &vf->tab[FR_TBL_BRONZE];
    uint32_t nsnap = 0, n;
    /* The scale-out mode: shard markers and none of the pipeline's own. */
    {
        uint32_t ns = 0, p;
        int64_t e;
        int shards = 0, own = 0;
        const struct fr_ice_snapshot *ss = tab->table ? fr_ice_table_snapshots(tab->table, &ns)
                                                      : NULL;
        for (uint32_t i = 0; i < ns; i++) {
            shards |= shard_marker(vf, &ss[i], &p, &e);
            own |= snap_marker(vf, &ss[i]) >= 0;
        }
        for (uint32_t q = 0; q < FR_CK_MAX_PARTS; q++) {
            vf->shard_epoch[q] = -1;
        }
        vf->sharded = shards && !own;
        if (vf->sharded) {
            vf->watermark_us = INT64_MIN;
            vf->watermark_ms = INT64_MIN;
            return cut_shards(vf);
        }
    }
    uint32_t *chain;
    int64_t *eff;
    int rc = lineage(vf, tab->table, &chain, &eff, &n);
    const struct fr_ice_snapshot *snaps = n ? fr_ice_table_snapshots(tab->table, &nsnap) : NULL;
    vf->epoch = n ? eff[0] : -1;
    vf->watermark_us = INT64_MIN;
    vf->watermark_ms = INT64_MIN;
    tab->snap = tab->current;
    tab->epoch = vf->epoch;
    vf->replays = calloc(n ? n : 1, sizeof *vf->replays);
    rc = rc == FR_OK && !vf->replays ? FR_ENOMEM : rc;
    int64_t next = vf->epoch, records = 0;
    int complete = vf->epoch >= 0;
    const struct fr_ice_snapshot *marked = NULL, *replay = NULL;
    for (uint32_t k = 0; rc == FR_OK && k < n; k++) {
        const struct fr_ice_snapshot *s = &snaps[chain[k]];
        int64_t m = snap_marker(vf, s), r;
        const char *id = summary_get(s, VF_SUMMARY_REPLAY);
        if (id) {
            vf->replays[vf->nreplays++] = id;
            replay = replay || marked ? replay : s; /* the newest, after E */
        }
        if (m < 0) {
            continue;
        }
        marked = !marked && m == vf->epoch ? s : marked;
        if (m != next || parse_i64(summary_get(s, FR_SUMMARY_RECORDS), &r) < 0 || r < 0) {
            complete = 0;
        } else {
            records += r;
        }
        next = m - 1;
        vf->history_epochs++;
    }
    free(chain);
    free(eff);
    vf->history_records = complete && next == -1 ? records : -1;
    vf->consumed = 0;
    vf->consumed_ok = vf->epoch < 0; /* nothing consumed yet */
    if (marked) {
        const char *off = summary_get(marked, FR_ICE_SUMMARY_OFFSETS);
        snprintf(vf->offsets, sizeof vf->offsets, "%s", off ? off : "");
        vf->consumed_ok = parse_offsets(off, &vf->consumed) == FR_OK;
    }
    for (int i = 0; i < 2; i++) {
        const struct fr_ice_snapshot *s = i ? replay : marked;
        int64_t w;
        if (s && parse_i64(summary_get(s, FR_SUMMARY_WATERMARK), &w) == FR_OK) {
            vf->watermark_us = w;
            vf->watermark_ms = s->timestamp_ms;
        }
    }
    return rc;
}

/* Whether a snapshot's own marker is inside the cut: 1, 0, or -1 when it
 * carries none (it belongs where its parent does). */
static int in_cut(const struct vf *vf, const struct fr_ice_snapshot *s)
{
    int64_t m = snap_marker(vf, s);
    const char *id = summary_get(s, VF_SUMMARY_REPLAY);
    uint32_t part;
    int64_t e;
    if (vf->sharded && shard_marker(vf, s, &part, &e)) {
        return e <= vf->shard_epoch[part];
    }
    if (vf->sharded && final_marker(vf, s)) {
        return final_in_cut(vf, s);
    }
    if (m >= 0) {
        return m <= vf->epoch;
    }
    for (uint32_t i = 0; id && i < vf->nreplays; i++) {
        if (strcmp(vf->replays[i], id) == 0) {
            return 1;
        }
    }
    return id ? 0 : -1;
}

/* Another table: the newest snapshot of its lineage inside the cut. Silver's
 * newest rebuild says how many bronze rows its gate rejected; a rebuild of
 * gold at epoch E after the watermark's snapshot moves it (REBUILD.md). */
static int cut_table(struct vf *vf, enum fr_tbl t)
{
    struct vf_tab *tab = &vf->tab[t];
    uint32_t nsnap = 0, n, best = UINT32_MAX;
    uint32_t *chain;
    int64_t *eff;
    int rc = lineage(vf, tab->table, &chain, &eff, &n);
    const struct fr_ice_snapshot *snaps = n ? fr_ice_table_snapshots(tab->table, &nsnap) : NULL;
    int known = 1;
    for (uint32_t k = n; k-- > 0;) { /* oldest first */
        int in = in_cut(vf, &snaps[chain[k]]);
        known = in < 0 ? known : in;
        best = known ? k : best;
    }
    tab->snap = best < n ? snaps[chain[best]].snapshot_id : -1;
    tab->epoch = best < n ? eff[best] : -1;
    if (n && best >= n) { /* every snapshot kept is newer than the cut */
        snprintf(tab->broken, sizeof tab->broken,
                 "no snapshot at or before epoch %" PRId64 " is kept (expired?)", vf->epoch);
    }
    /* Scale-out: the watermark is the frontier of gold's cut finalizer
     * epoch (at or before the cut snapshot: compactions carry no marker). */
    for (uint32_t k = best; vf->sharded && t == FR_TBL_GOLD_EPM && k < n; k++) {
        const struct fr_ice_snapshot *s = &snaps[chain[k]];
        int64_t w;
        if (final_marker(vf, s)) {
            if (parse_i64(summary_get(s, FR_SUMMARY_WATERMARK), &w) == FR_OK) {
                vf->watermark_us = w;
                vf->watermark_ms = s->timestamp_ms;
            }
            break;
        }
    }
    for (uint32_t k = best; !vf->sharded && (t == FR_TBL_SILVER || t == FR_TBL_GOLD_EPM) && k < n;
         k++) {
        const struct fr_ice_snapshot *s = &snaps[chain[k]];
        int64_t e, w, r;
        if (!summary_get(s, VF_SUMMARY_REBUILD)) {
            if (t == FR_TBL_GOLD_EPM && snap_marker(vf, s) >= 0) {
                break; /* an epoch after any older rebuild */
            }
            continue;
        }
        if (t == FR_TBL_SILVER &&
            parse_i64(summary_get(s, VF_SUMMARY_REBUILD_REJECTED), &r) == FR_OK) {
            vf->rebuild_rejected = r;
            break;
        }
        if (t == FR_TBL_GOLD_EPM &&
            parse_i64(summary_get(s, VF_SUMMARY_REBUILD_EPOCH), &e) == FR_OK && e == vf->epoch &&
            parse_i64(summary_get(s, FR_SUMMARY_WATERMARK), &w) == FR_OK &&
            s->timestamp_ms > vf->watermark_ms) {
            vf->watermark_us = w;
            vf->watermark_ms = s->timestamp_ms;
            break;
        }
    }
    free(chain);
    free(eff);
    return rc;
}

/* Row and file counts at the cut, from the manifests (they plan the passes;
 * the checks count the rows they read). Every data file must exist with its
 * size, or the table is unreadable. */
static void count_table(struct vf *vf, struct vf_tab *tab)
{
    if (tab->snap < 0) {
        return; /* empty at the cut */
    }
    struct fr_ice_file_list list;
    int rc = fr_ice_files(vf->cat, tab->table, tab->snap, true, &list);
    if (rc < 0) {
        snprintf(tab->broken, sizeof tab->broken, "%s", fr_ice_errmsg());
        return;
    }
    tab->rows = list.total_records;
    tab->nfiles = (int64_t)list.nfiles;
    fr_ice_file_list_free(&list);
}

/* ---------------------------------------------------------------- scan */

struct vf_col {
    const char *name;
    enum fr_pq_type type;
};

typedef int (*vf_batch_fn)(struct vf *vf, const struct fr_pq_batch *b, void *arg);

/* fr_lake_batch_fn over a vf_batch_fn. */
struct vf_scan_arg {
    struct vf *vf;
    vf_batch_fn fn;
    void *arg;
};

static int vf_scan_batch(void *arg, const struct fr_pq_batch *b)
{
    struct vf_scan_arg *sa = arg;
    return sa->fn(sa->vf, b, sa->arg);
}

/* Call fn with every batch of the columns cols of table t at the cut. */
static int vf_scan(struct vf *vf, enum fr_tbl t, const struct vf_col *cols, uint32_t ncols,
                   vf_batch_fn fn, void *arg)
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
            vf_errf(vf, rc, "%s: %s", path, fr_pq_errmsg()); /* fn's, unless a full pass */
        }
    }
    fr_ice_file_list_free(&list);
    return rc;
}

/* ------------------------------------------------- family: positions */

enum { ENT_POS = 1, ENT_SIL, ENT_LATE, ENT_FILE, ENT_GROUP, ENT_USER, ENT_CTR, ENT_WIN };
enum { POS_LATE = 1, POS_REPLAY = 2, POS_DLQ = 4 };
enum { ROLE_BRONZE, ROLE_LATE, ROLE_SILVER, ROLE_REPLAY, ROLE_DLQ, ROLE_EPM, ROLE_TOP, ROLE_N };

/* A log position and its meta_id (ENT_POS; ENT_LATE in the ids family). */
struct pos_ent {
    uint32_t kind;
    int32_t part;
    int64_t off;
    uint8_t id[16];
    uint32_t flags;
};

static int pos_eq(const void *ent, const void *key)
{
    const struct pos_ent *e = ent, *k = key; /* kind, part and off make the key */
    return e->kind == k->kind && e->part == k->part && e->off == k->off;
}

static struct pos_ent *pos_add(struct vf_mem *m, uint64_t h, uint32_t kind, int32_t part,
                               int64_t off, const uint8_t id[16])
{
    struct pos_ent *e = mem_add(m, h, sizeof *e);
    if (e) {
        *e = (struct pos_ent){kind, part, off, {0}, 0};
        memcpy(e->id, id, 16);
    }
    return e;
}

/* Keep the first example of a problem. */
__attribute__((format(printf, 3, 4))) static void note(char *ex, size_t cap, const char *fmt, ...)
{
    if (ex[0]) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ex, cap, fmt, ap);
    va_end(ap);
}

struct fam_pos {
    int64_t rows[ROLE_N]; /* by the table read */
    int64_t dup_positions, late_missing, late_id_mismatch, late_dup, late_in_silver,
        silver_not_in_bronze;
    int64_t dlq_in_bronze, replay_not_in_bronze, replay_not_dlq, replay_dup;
    char ex_dup[160], ex_late[160], ex_silver[160], ex_replay[160];
};

/* dlq rows have no meta_id: only the first two columns are read */
static const struct vf_col pos_cols[] = {
    {"log_partition", FR_PQ_INT32}, {"log_offset", FR_PQ_INT64}, {"meta_id", FR_PQ_STRING}};

/* Bronze positions go in; late, silver, dlq_replays and dlq rows are
 * looked up in them (a dead letter is in bronze only once replayed). */
static int pos_rows(struct vf *vf, const struct fr_pq_batch *b, void *arg)
{
    struct fam_pos *f = arg;
    for (uint32_t i = 0; i < b->nrows; i++) {
        f->rows[vf->role] += vf->k == 0;
        int32_t part = b->cols[0].v.i32[i];
        int64_t off = b->cols[1].v.i64[i];
        uint64_t h = pos_hash(part, off);
        if (!in_pass(h, vf->k, vf->passes)) {
            continue;
        }
        struct fr_pq_str s =
            vf->role == ROLE_DLQ ? (struct fr_pq_str){NULL, 0} : b->cols[2].v.str[i];
        uint8_t id[16];
        uuid_key(s.ptr, s.len, id);
        struct pos_ent key = {ENT_POS, part, off, {0}, 0};
        struct pos_ent *e = mem_find(&vf->mem, h, pos_eq, &key);
        if (vf->role == ROLE_DLQ) {
            if (e && !(e->flags & POS_REPLAY)) {
                f->dlq_in_bronze++;
                note(f->ex_replay, sizeof f->ex_replay,
                     "dead letter %d:%" PRId64 " is in bronze but was never replayed", part, off);
            }
            if (e) {
                e->flags |= POS_DLQ;
            }
        } else if (vf->role == ROLE_REPLAY) {
            if (!e || memcmp(e->id, id, 16) != 0) {
                f->replay_not_in_bronze++;
                note(f->ex_replay, sizeof f->ex_replay,
                     "replayed %d:%" PRId64 " %.*s is not that bronze row", part, off, (int)s.len,
                     s.ptr);
            } else if (e->flags & POS_REPLAY) {
                f->replay_dup++;
                note(f->ex_replay, sizeof f->ex_replay, "%d:%" PRId64 " was replayed twice", part,
                     off);
            }
            if (e) {
                e->flags |= POS_REPLAY;
            }
        } else if (vf->role == ROLE_BRONZE) {
            if (e) {
                f->dup_positions++;
                note(f->ex_dup, sizeof f->ex_dup,
                     "log position %d:%" PRId64 " is in bronze "
                     "more than once",
                     part, off);
            } else if (!pos_add(&vf->mem, h, ENT_POS, part, off, id)) {
                return FR_ETOOBIG; /* the pass is full: more passes */
            }
        } else if (vf->role == ROLE_SILVER && (!e || memcmp(e->id, id, 16) != 0)) {
            f->silver_not_in_bronze++;
            note(f->ex_silver, sizeof f->ex_silver,
                 "silver row %d:%" PRId64 " %.*s is not that bronze row", part, off, (int)s.len,
                 s.ptr);
        } else if (vf->role == ROLE_SILVER && (e->flags & POS_LATE)) {
            f->late_in_silver++;
            note(f->ex_late, sizeof f->ex_late, "late position %d:%" PRId64 " is in silver", part,
                 off);
        } else if (vf->role == ROLE_LATE && !e) {
            f->late_missing++;
            note(f->ex_late, sizeof f->ex_late, "late row %d:%" PRId64 " is not in bronze", part,
                 off);
        } else if (vf->role == ROLE_LATE) {
            if (memcmp(e->id, id, 16) != 0) {
                f->late_id_mismatch++;
                note(f->ex_late, sizeof f->ex_late,
                     "late row %d:%" PRId64 " has another meta_id than bronze", part, off);
            }
            if (e->flags & POS_LATE) {
                f->late_dup++;
                note(f->ex_late, sizeof f->ex_late, "late row %d:%" PRId64 " appears twice", part,
                     off);
            }
            e->flags |= POS_LATE;
        }
    }
    return FR_OK;
}

/* After the scans: every replayed position must be a dead letter. */
static int pos_finish(struct vf *vf, void *fam)
{
    struct fam_pos *f = fam;
    for (size_t i = 0; i < vf->mem.nslots; i++) {
        const struct pos_ent *e = vf->mem.slots[i].ent;
        if (e && e->kind == ENT_POS && (e->flags & (POS_REPLAY | POS_DLQ)) == POS_REPLAY) {
            f->replay_not_dlq++;
            note(f->ex_replay, sizeof f->ex_replay, "replayed %d:%" PRId64 " is not a dead letter",
                 e->part, e->off);
        }
    }
    return FR_OK;
}

/* --------------------------------------------------------- family: ids */

struct fam_ids {
    int64_t rows[ROLE_N], bad_ids[ROLE_N]; /* by the table read */
    int64_t late_skipped, covered, missing, dup_ids, reused_ids;
    int64_t max_event_us;
    char ex_dup[160], ex_missing[160];
};

static const struct vf_col ids_cols[] = {{"meta_id", FR_PQ_STRING},
                                         {"event_time", FR_PQ_TIMESTAMP},
                                         {"log_partition", FR_PQ_INT32},
                                         {"log_offset", FR_PQ_INT64}};

/* Silver ids and late positions go in; bronze rows are looked up. */
static int ids_rows(struct vf *vf, const struct fr_pq_batch *b, void *arg)
{
    struct fam_ids *f = arg;
    for (uint32_t i = 0; i < b->nrows; i++) {
        struct fr_pq_str s = b->cols[0].v.str[i];
        int64_t ev = b->cols[1].v.i64[i];
        int32_t part = b->cols[2].v.i32[i];
        int64_t off = b->cols[3].v.i64[i];
        uint8_t id[16];
        int good = uuid_key(s.ptr, s.len, id);
        if (vf->k == 0) {
            f->rows[vf->role]++;
            f->bad_ids[vf->role] += !good;
            if (vf->role == ROLE_SILVER && (f->rows[ROLE_SILVER] == 1 || ev > f->max_event_us)) {
                f->max_event_us = ev;
            }
        }
        uint64_t h = vf_hash(id, 16, 3);
        if (!in_pass(h, vf->k, vf->passes)) {
            continue;
        }
        struct pos_ent key = {ENT_LATE, part, off, {0}, 0};
        const struct pos_ent *late =
            vf->role == ROLE_SILVER ? NULL : mem_find(&vf->mem, pos_hash(part, off), pos_eq, &key);
        /* a silver id: a the 16 bytes, count the event time */
        struct tent_key sk = {ENT_SIL, 0, {(const char *)id, 16}, {NULL, 0}};
        struct tent *e = vf->role == ROLE_LATE ? NULL : mem_find(&vf->mem, h, tent_eq, &sk);
        if (vf->role == ROLE_LATE) {
            /* a late row twice is late_consistent's to report */
            if (!late && !pos_add(&vf->mem, pos_hash(part, off), ENT_LATE, part, off, id)) {
                return FR_ETOOBIG; /* the pass is full: more passes */
            }
        } else if (vf->role == ROLE_BRONZE) {
            if (late && memcmp(late->id, id, 16) == 0) {
                f->late_skipped++;
            } else if (e) {
                f->covered++;
            } else {
                f->missing++;
                note(f->ex_missing, sizeof f->ex_missing,
                     "bronze row %d:%" PRId64 " meta_id %.*s is not late and not in silver", part,
                     off, (int)s.len, s.ptr);
            }
        } else if (e && (int64_t)e->count == ev) {
            f->dup_ids++;
            note(f->ex_dup, sizeof f->ex_dup, "meta_id %.*s twice in silver", (int)s.len, s.ptr);
        } else if (e) {
            f->reused_ids++; /* another event time: allowed (SEMANTICS §3) */
        } else {
            int added;
            if (!(e = tent_get(&vf->mem, h, &sk, &added))) {
                return FR_ETOOBIG; /* the pass is full: more passes */
            }
            e->count = (uint64_t)ev;
        }
    }
    return FR_OK;
}

/* ------------------------------------------------------- family: files */

struct fam_files {
    int64_t files, dup_in_table, shared, unlistable;
    char ex[600];
};

static int files_pass(struct vf *vf, void *fam)
{
    struct fam_files *f = fam;
    for (int t = 0; t < FR_TBL_ALL; t++) {
        struct vf_tab *tab = &vf->tab[t];
        if (tab->broken[0] && vf->k == 0) {
            f->unlistable++;
            note(f->ex, sizeof f->ex, "%s: %s", fr_tbl_name(t), tab->broken);
        }
        struct fr_ice_file_list list = {0};
        int rc = tab->broken[0] || tab->snap < 0
                     ? FR_OK
                     : fr_ice_files(vf->cat, tab->table, tab->snap, false, &list);
        if (rc < 0) {
            return vf_errf(vf, rc, "%s", fr_ice_errmsg());
        }
        for (size_t i = 0; rc == FR_OK && i < list.nfiles; i++) {
            const char *p = list.files[i].local_path;
            size_t len = strlen(p);
            uint64_t h = vf_hash(p, len, 5);
            f->files += vf->k == 0;
            if (!in_pass(h, vf->k, vf->passes)) {
                continue;
            }
            /* the path; the table that lists it in count */
            struct tent_key key = {ENT_FILE, 0, {p, (uint32_t)len}, {NULL, 0}};
            int added;
            struct tent *e = tent_get(&vf->mem, h, &key, &added);
            if (!e) {
                rc = FR_ETOOBIG; /* the pass is full: more passes */
            } else if (added) {
                e->count = (uint64_t)t;
            } else {
                *(e->count == (uint64_t)t ? &f->dup_in_table : &f->shared) += 1;
                note(f->ex, sizeof f->ex, "%s is live in %s and %s", p,
                     fr_tbl_name((enum fr_tbl)e->count), fr_tbl_name(t));
            }
        }
        fr_ice_file_list_free(&list);
        if (rc < 0) {
            return rc;
        }
    }
    return FR_OK;
}

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

struct fam_gold {
    int64_t expected, gold_rows, matched, missing, extra, mismatched, beyond, inexact;
    struct grow *want, *gold; /* this pass's lists */
    char ex[300];
};

static struct grow *grow_new(struct vf_mem *m, struct grow **list, int64_t start, const char *wiki,
                             uint32_t wiki_len, const char *title, uint32_t title_len)
{
    struct grow *g = mem_alloc(m, sizeof *g + wiki_len + title_len);
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
    return bytes_cmp(x->text, x->keylen, y->text, y->keylen);
}

static void gold_example(struct fam_gold *f, const char *what, const struct grow *g,
                         const char *more)
{
    char ts[32], rank[16] = "";
    fmt_time(g->start, ts);
    if (g->rank) {
        snprintf(rank, sizeof rank, " rank %d", g->rank);
    }
    note(f->ex, sizeof f->ex, "%s: window %s %.*s%s %.*s%s", what, ts,
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
    struct grow **arr = mem_alloc(m, sizeof *arr * (*n ? *n : 1));
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
                   bytes_cmp(g->text, g->wiki_len + g->title_len, e->text,
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
           same_bytes(g->text, k->a.ptr, k->a.len);
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
        int64_t start = floor_minute(c[0].v.i64[i]);
        if (vf->watermark_us == INT64_MIN || start > vf->watermark_us - VF_MINUTE_US) {
            continue; /* window not settled at the cut */
        }
        struct fr_pq_str wiki = c[1].v.str[i];
        uint64_t h = group_hash(start, wiki.ptr, wiki.len);
        if (!in_pass(h, vf->k, vf->passes)) {
            continue;
        }
        struct tent_key key = {ENT_GROUP, start, wiki, {NULL, 0}};
        struct grow *g = mem_find(&vf->mem, h, group_eq, &key);
        if (!g) {
            if (!(g = mem_add(&vf->mem, h, sizeof *g + wiki.len))) {
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
            if (!tent_get(&vf->mem, uh, &uk, &added)) {
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
        int64_t m = floor_minute(c[0].v.i64[i]);
        /* the ten windows [s, s + 10 min) that hold minute m, if settled */
        for (int64_t s = m - 9 * VF_MINUTE_US; s <= m && s <= vf->watermark_us - VF_TOP_WINDOW_US;
             s += VF_MINUTE_US) {
            if (!in_pass(window_hash(s), vf->k, vf->passes)) {
                continue;
            }
            /* the counter; its window, the unit of this family, once */
            struct tent_key key = {ENT_CTR, s, wiki, title},
                            win = {ENT_WIN, s, {NULL, 0}, {NULL, 0}};
            int added, new_win = 0;
            struct tent *ctr = tent_get(&vf->mem, vf_mix(ph ^ vf_mix((uint64_t)s)), &key, &added);
            if (!ctr || (added && !tent_get(&vf->mem, window_hash(s), &win, &new_win))) {
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
    int c = bytes_cmp(x->text, x->alen, y->text, y->alen);
    return c ? c : bytes_cmp(x->text + x->alen, x->blen, y->text + y->alen, y->blen);
}

/* The first 20 counters of each window of this pass, ranked 1..20. */
static int top_expected(struct vf *vf, struct fam_gold *f)
{
    size_t nc;
    void **ctr = mem_collect(&vf->mem, ENT_CTR, &nc);
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
        if (!in_pass(h, vf->k, vf->passes)) {
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

/* -------------------------------------------------------------- passes */

/* One scan of a family's pass: a table, the columns, the callback. */
struct vf_step {
    enum fr_tbl tbl;
    int role;
    const struct vf_col *cols;
    uint32_t ncols;
    vf_batch_fn fn;
};

/* A family: its scans in order, then finish (may be NULL) on what they kept. */
struct vf_family {
    const char *name;
    struct vf_step steps[5];
    uint32_t nsteps;
    int (*finish)(struct vf *vf, void *fam);
};

static int epm_finish(struct vf *vf, void *fam)
{
    return gold_compare(vf, fam, 7, VF_MINUTE_US);
}

static int top_finish(struct vf *vf, void *fam)
{
    int rc = top_expected(vf, fam);
    return rc == FR_OK ? gold_compare(vf, fam, 1, VF_TOP_WINDOW_US) : rc;
}

static const struct vf_family fam_positions = {
    "positions",
    {{FR_TBL_BRONZE, ROLE_BRONZE, pos_cols, 3, pos_rows},
     {FR_TBL_LATE, ROLE_LATE, pos_cols, 3, pos_rows},
     {FR_TBL_SILVER, ROLE_SILVER, pos_cols, 3, pos_rows},
     {FR_TBL_DLQ_REPLAYS, ROLE_REPLAY, pos_cols, 3, pos_rows},
     {FR_TBL_DLQ, ROLE_DLQ, pos_cols, 2, pos_rows}},
    5,
    pos_finish};
static const struct vf_family fam_ids = {"ids",
                                         {{FR_TBL_SILVER, ROLE_SILVER, ids_cols, 4, ids_rows},
                                          {FR_TBL_LATE, ROLE_LATE, ids_cols, 4, ids_rows},
                                          {FR_TBL_BRONZE, ROLE_BRONZE, ids_cols, 4, ids_rows}},
                                         3,
                                         NULL};
static const struct vf_family fam_files = {"files", {{0}}, 0, files_pass};
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

/*
 * Run one family: K passes planned from keys x bytes per key against half
 * of the arena (and half of the index), each pass from a reset memory; on
 * overflow, reset the family's figures and start again with 2K.
 */
static int run_family(struct vf *vf, const struct vf_family *fy, int64_t keys, size_t per_key,
                      void *fam, size_t fam_size, uint32_t *passes_out)
{
    size_t by_index = vf->mem.max_used / 2;
    size_t by_arena = vf->mem.cap / 2 / per_key;
    size_t per_pass = by_index < by_arena ? by_index : by_arena;
    if (per_pass == 0) {
        per_pass = 1;
    }
    uint64_t want = keys > 0 ? ((uint64_t)keys + per_pass - 1) / per_pass : 1;
    vf->passes = want > VF_MAX_PASSES ? VF_MAX_PASSES : (uint32_t)(want ? want : 1);
    for (;;) {
        memset(fam, 0, fam_size);
        int rc = FR_OK;
        for (vf->k = 0; rc == FR_OK && vf->k < vf->passes; vf->k++) {
            mem_reset(&vf->mem);
            for (uint32_t i = 0; rc == FR_OK && i < fy->nsteps; i++) {
                const struct vf_step *st = &fy->steps[i];
                vf->role = st->role;
                rc = vf_scan(vf, st->tbl, st->cols, st->ncols, st->fn, fam);
            }
            if (rc == FR_OK && fy->finish) {
                rc = fy->finish(vf, fam);
            }
        }
        *passes_out = vf->passes;
        if (rc != FR_ETOOBIG || !vf->mem.overflow) {
            mem_reset(&vf->mem);
            return rc;
        }
        /* A pass that overflowed with one window or group (its units; for
         * the other families every key is one) cannot be split further. */
        int one = vf->mem.units ? vf->mem.units == 1 : vf->mem.used <= 1;
        if (one || vf->passes >= VF_MAX_PASSES) {
            return vf_errf(vf, FR_ETOOBIG,
                           "%s: one %s needs more than the --memory-mb budget (%zu bytes); "
                           "raise it",
                           fy->name, vf->mem.units ? "window" : "key", vf->budget);
        }
        fr_debug("verify", "%s: a pass filled %zu bytes; again with %u passes", fy->name,
                 vf->budget, vf->passes * 2);
        vf->passes *= 2;
    }
}

/* -------------------------------------------------------------- checks */

static void not_evaluated(struct vf *vf, enum vf_ck ck)
{
    problem(&vf->ck[ck], "not evaluated: %.400s", vf->err);
}

static void check_positions(struct vf *vf, struct fam_pos *f)
{
    uint32_t passes = 0;
    int rc = run_family(vf, &fam_positions, vf->tab[FR_TBL_BRONZE].rows, sizeof(struct pos_ent) + 8,
                        f, sizeof *f, &passes);
    struct vf_check *pos = &vf->ck[CK_POSITIONS], *late = &vf->ck[CK_LATE];
    struct vf_check *cov = &vf->ck[CK_SILVER_COVERS];
    figs(pos, "passes", (int64_t)passes, NULL);
    figs(late, "passes", (int64_t)passes, NULL);
    figs(cov, "position_passes", (int64_t)passes, NULL);
    if (rc < 0) {
        not_evaluated(vf, CK_POSITIONS);
        not_evaluated(vf, CK_LATE);
        not_evaluated(vf, CK_SILVER_COVERS);
        return;
    }
    vf->positions_ok = 1;
    figs(pos, "bronze_rows", f->rows[ROLE_BRONZE], "duplicate_positions", f->dup_positions, NULL);
    figs(late, "late_rows", f->rows[ROLE_LATE], "not_in_bronze", f->late_missing, "meta_id_differs",
         f->late_id_mismatch, "duplicate_positions", f->late_dup, "in_silver", f->late_in_silver,
         NULL);
    figs(cov, "silver_not_in_bronze", f->silver_not_in_bronze, NULL);
    if (f->dup_positions) {
        problem(pos, "%s", f->ex_dup);
    }
    if (f->late_missing || f->late_id_mismatch || f->late_dup || f->late_in_silver) {
        problem(late, "%s", f->ex_late);
    }
    if (f->silver_not_in_bronze) {
        problem(cov, "%s", f->ex_silver);
    }
}

static void check_ids(struct vf *vf, struct fam_ids *f)
{
    uint32_t passes = 0;
    int64_t keys = vf->tab[FR_TBL_SILVER].rows + vf->tab[FR_TBL_LATE].rows;
    int rc = run_family(vf, &fam_ids, keys, sizeof(struct tent) + 24, f, sizeof *f, &passes);
    struct vf_check *uniq = &vf->ck[CK_SILVER_UNIQUE], *cov = &vf->ck[CK_SILVER_COVERS];
    struct vf_check *fresh = &vf->ck[CK_FRESHNESS];
    figs(uniq, "passes", (int64_t)passes, NULL);
    figs(cov, "passes", (int64_t)passes, NULL);
    if (rc < 0) {
        not_evaluated(vf, CK_SILVER_UNIQUE);
        not_evaluated(vf, CK_SILVER_COVERS);
        snprintf(fresh->detail, sizeof fresh->detail, "not evaluated: %.400s", vf->err);
        return;
    }
    figs(uniq, "silver_rows", f->rows[ROLE_SILVER], "duplicate_ids", f->dup_ids, "reused_ids",
         f->reused_ids, "malformed_ids", f->bad_ids[ROLE_SILVER], NULL);
    figs(cov, "bronze_rows", f->rows[ROLE_BRONZE], "late_rows_skipped", f->late_skipped, "covered",
         f->covered, "missing", f->missing, "rebuild_rejected", vf->rebuild_rejected,
         "malformed_ids", f->bad_ids[ROLE_BRONZE], NULL);
    if (f->dup_ids) {
        problem(uniq, "%s", f->ex_dup);
    }
    if (f->bad_ids[ROLE_SILVER]) {
        problem(uniq, "silver meta_id values that are not UUIDs");
    }
    if (f->missing > vf->rebuild_rejected) { /* rows a rebuild's gate rejected are nowhere */
        problem(cov, "%s", f->ex_missing);
    }
    if (f->bad_ids[ROLE_BRONZE]) {
        problem(cov, "bronze meta_id values that are not UUIDs");
    }
    /* freshness: informational, never fails */
    char ts[32];
    fmt_time(f->max_event_us, ts);
    int64_t age = f->max_event_us == INT64_MIN ? -1 : (fr_wall_us() - f->max_event_us) / 1000000;
    figs(fresh, "seconds", age, NULL);
    snprintf(fresh->detail, sizeof fresh->detail, "newest silver event_time %s", ts);
}

static void check_files(struct vf *vf, struct fam_files *f)
{
    int64_t files = 0;
    for (int t = 0; t < FR_TBL_ALL; t++) {
        files += vf->tab[t].nfiles;
    }
    uint32_t passes = 0;
    int rc = run_family(vf, &fam_files, files, sizeof(struct tent) + 256, f, sizeof *f, &passes);
    struct vf_check *c = &vf->ck[CK_FILES];
    figs(c, "passes", (int64_t)passes, NULL);
    if (rc < 0) {
        not_evaluated(vf, CK_FILES);
        return;
    }
    figs(c, "files", f->files, "duplicate_in_table", f->dup_in_table, "shared_between_tables",
         f->shared, "unlistable_tables", f->unlistable, NULL);
    if (f->dup_in_table || f->shared || f->unlistable) {
        problem(c, "%s", f->ex);
    }
}

static void check_gold(struct vf *vf, struct fam_gold *f)
{
    int64_t silver = vf->tab[FR_TBL_SILVER].rows;
    for (int top = 0; top <= 1; top++) {
        uint32_t passes = 0;
        int rc = top ? run_family(vf, &fam_top, 10 * silver + vf->tab[FR_TBL_GOLD_TOP].rows,
                                  sizeof(struct tent) + 64, f, sizeof *f, &passes)
                     : run_family(vf, &fam_epm, 2 * silver + vf->tab[FR_TBL_GOLD_EPM].rows,
                                  sizeof(struct grow) + 32, f, sizeof *f, &passes);
        enum vf_ck ck = top ? CK_GOLD_TOP : CK_GOLD_EPM;
        struct vf_check *c = &vf->ck[ck];
        figs(c, "passes", (int64_t)passes, NULL);
        if (rc < 0) {
            not_evaluated(vf, ck);
            continue;
        }
        figs(c, "expected_rows", f->expected, "gold_rows", f->gold_rows, "matched", f->matched,
             "missing", f->missing, "extra", f->extra, "mismatched", f->mismatched,
             "beyond_watermark", f->beyond, NULL);
        if (!top) {
            figs(c, "inexact_users", f->inexact, NULL);
        }
        if (f->missing || f->extra || f->mismatched) {
            problem(c, "%s", f->ex);
        }
    }
}

static void check_bronze_count(struct vf *vf, const struct fam_pos *pos)
{
    struct vf_check *c = &vf->ck[CK_BRONZE_COUNT];
    int64_t bronze = pos->rows[ROLE_BRONZE], dlq = pos->rows[ROLE_DLQ];
    int64_t replayed = pos->rows[ROLE_REPLAY], want = vf->consumed - dlq + replayed;
    figs(c, "bronze_rows", bronze, "consumed", vf->consumed, "dlq_rows", dlq, "replayed_rows",
         replayed, "expected", want, "history_records", vf->history_records, "history_complete",
         (int64_t)(vf->history_records >= 0), "epochs", vf->history_epochs, NULL);
    if (!vf->positions_ok) {
        problem(c, "not evaluated: bronze, dlq or dlq_replays cannot be read");
        return;
    }
    figs(c, "dead_letters_in_bronze", pos->dlq_in_bronze, "replays_not_in_bronze",
         pos->replay_not_in_bronze, "replays_not_dead_letters", pos->replay_not_dlq,
         "replays_twice", pos->replay_dup, NULL);
    if (!vf->consumed_ok) {
        problem(c, "the cut snapshot's %s \"%s\" does not parse", FR_ICE_SUMMARY_OFFSETS,
                vf->offsets);
    } else if (bronze != want) {
        problem(c,
                "bronze holds %" PRId64 " rows; %" PRId64 " consumed - %" PRId64 " dlq + %" PRId64
                " replayed = %" PRId64,
                bronze, vf->consumed, dlq, replayed, want);
    } else if (vf->history_records >= 0 && vf->history_records != vf->consumed) {
        problem(c, "the epochs' %s sum to %" PRId64 ", the offsets to %" PRId64, FR_SUMMARY_RECORDS,
                vf->history_records, vf->consumed);
    }
    if (pos->dlq_in_bronze || pos->replay_not_in_bronze || pos->replay_not_dlq || pos->replay_dup) {
        problem(c, "%s", pos->ex_replay);
    }
}

/* -------------------------------------------------------------- output */

/* s as a JSON string; NULL as null. */
static void put_str(FILE *out, const char *s)
{
    if (!s) {
        fputs("null", out);
        return;
    }
    struct fr_buf b;
    fr_buf_init(&b, 1u << 16);
    if (fr_buf_json_str(&b, s, strlen(s)) == FR_OK) {
        fwrite(b.data, 1, b.len, out);
    } else {
        fputs("\"\"", out);
    }
    fr_buf_free(&b);
}

static int64_t maxrss_kb(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (int64_t)ru.ru_maxrss : -1;
}

static int print_text(const struct vf *vf, FILE *out)
{
    char wm[32];
    fmt_time(vf->watermark_us, wm);
    if (vf->sharded) {
        fprintf(out, "cut: pipeline %s, scale-out (shards and finalizer), %s, gold frontier %s\n",
                vf->conf->general_pipeline_id, vf->offsets[0] ? vf->offsets : "-", wm);
    } else {
        fprintf(out, "cut: pipeline %s, epoch %" PRId64 ", watermark %s, offsets %s\n",
                vf->conf->general_pipeline_id, vf->epoch, wm, vf->offsets[0] ? vf->offsets : "-");
    }
    for (int t = 0; t < FR_TBL_ALL; t++) {
        const struct vf_tab *tab = &vf->tab[t];
        fprintf(out,
                "  %-22s snapshot %" PRId64 "%s epoch %" PRId64 ", %" PRId64 " rows in %" PRId64
                " files%s%s\n",
                fr_tbl_name(t), tab->snap,
                !tab->table                 ? " (not created yet)"
                : tab->snap != tab->current ? " (older than current)"
                                            : "",
                tab->epoch, tab->rows, tab->nfiles, tab->broken[0] ? "; UNREADABLE: " : "",
                tab->broken);
    }
    int failed = 0;
    for (int i = 0; i < CK_COUNT; i++) {
        const struct vf_check *c = &vf->ck[i];
        failed += c->failed;
        fprintf(out, "%-30s %s ", ck_names[i], c->failed ? "FAIL" : "PASS");
        for (uint32_t k = 0; k < c->nfigs; k++) {
            fprintf(out, " %s=%" PRId64, c->figs[k].key, c->figs[k].v);
        }
        fprintf(out, "%s%s\n", c->detail[0] ? "  -- " : "", c->detail);
    }
    fprintf(out, "memory: budget %zu bytes, peak %zu bytes, maxrss %" PRId64 " KiB, nice %d\n",
            vf->budget, vf->mem.peak, maxrss_kb(), VF_NICE);
    fprintf(out, "verify: %d of %d checks failed\n", failed, CK_COUNT);
    return failed;
}

static int print_json(const struct vf *vf, FILE *out)
{
    int failed = 0;
    for (int i = 0; i < CK_COUNT; i++) {
        failed += vf->ck[i].failed;
    }
    fprintf(out, "{\"ok\":%s,\"pipeline_id\":", failed ? "false" : "true");
    put_str(out, vf->conf->general_pipeline_id);
    /* watermark_us: null before the first watermark */
    char wm[32] = "null";
    if (vf->watermark_us != INT64_MIN) {
        snprintf(wm, sizeof wm, "%" PRId64, vf->watermark_us);
    }
    fprintf(out,
            ",\"cut\":{\"epoch\":%" PRId64 ",\"watermark_us\":%s,\"source_offsets\":", vf->epoch,
            wm);
    put_str(out, vf->offsets);
    fprintf(out, ",\"consumed\":%" PRId64 ",\"history_records\":%" PRId64 ",\"tables\":[",
            vf->consumed, vf->history_records);
    for (int t = 0, first = 1; t < FR_TBL_ALL; t++) {
        const struct vf_tab *tab = &vf->tab[t];
        if (!tab->table) {
            continue; /* the tables of the lake: one not created yet is left out */
        }
        fprintf(out,
                "%s{\"name\":\"%s\",\"snapshot_id\":%" PRId64 ",\"current_snapshot_id\":%" PRId64
                ",\"epoch\":%" PRId64 ",\"rows\":%" PRId64 ",\"files\":%" PRId64 ",\"error\":",
                first ? "" : ",", fr_tbl_name(t), tab->snap, tab->current, tab->epoch, tab->rows,
                tab->nfiles);
        first = 0;
        put_str(out, tab->broken[0] ? tab->broken : NULL);
        fputs("}", out);
    }
    fputs("]},\"checks\":[", out);
    for (int i = 0; i < CK_COUNT; i++) {
        const struct vf_check *c = &vf->ck[i];
        fprintf(out, "%s{\"name\":\"%s\",\"status\":\"%s\",\"figures\":{", i ? "," : "",
                ck_names[i], c->failed ? "FAIL" : "PASS");
        for (uint32_t k = 0; k < c->nfigs; k++) {
            fprintf(out, "%s\"%s\":%" PRId64, k ? "," : "", c->figs[k].key, c->figs[k].v);
        }
        fputs("},\"detail\":", out);
        put_str(out, c->detail);
        fputs("}", out);
    }
    fprintf(out,
            "],\"memory\":{\"budget_bytes\":%zu,\"peak_bytes\":%zu,\"maxrss_kib\":%" PRId64
            ",\"nice\":%d},\"failed\":%d}\n",
            vf->budget, vf->mem.peak, maxrss_kb(), VF_NICE, failed);
    return failed;
}

/* ------------------------------------------------------------- command */

static void verify_usage(FILE *out)
{
    fprintf(out,
            "usage: freshet verify [--json] [--memory-mb N]\n\n"
            "Check one consistent cut of the lake (the epoch of bronze's current snapshot)\n"
            "against the delivery contract, one line per check (docs/VERIFY.md):\n"
            "  bronze_count                   bronze rows = log records consumed - dlq rows\n"
            "  bronze_positions_unique        no log position twice in bronze\n"
            "  silver_meta_id_unique          no meta.id (with its event time) twice in silver\n"
            "  silver_covers_bronze           every bronze meta.id that is not late is in silver\n"
            "  no_file_in_two_live_snapshots  no data file listed twice, nor in two tables\n"
            "  gold_epm_recomputed            gold_edits_per_minute = a recomputation from silver\n"
            "  gold_top_recomputed            gold_top_pages = a recomputation from silver\n"
            "  late_consistent                late rows are bronze rows, none in silver\n"
            "  freshness                      now - newest silver event time (never fails)\n\n"
            "It runs beside a live pipeline without competing with it: it only reads,\n"
            "lowers its own CPU priority to nice %d, and holds at most --memory-mb\n"
            "(default %d) of keys, in as many hash-partitioned passes as that takes.\n"
            "  --json        one JSON object with every check and its figures\n"
            "  --memory-mb N memory budget for keys, %d..%d MiB\n"
            "Exit status: 0 every check passes, 1 a check fails or the lake cannot be\n"
            "read, 2 usage.\n",
            VF_NICE, VF_DEFAULT_MB, VF_MIN_MB, VF_MAX_MB);
}

static void lower_priority(void)
{
    errno = 0;
    int cur = getpriority(PRIO_PROCESS, 0);
    if ((cur != -1 || errno == 0) && cur < VF_NICE && setpriority(PRIO_PROCESS, 0, VF_NICE) < 0) {
        fr_warn("verify", "cannot lower the CPU priority: %s", strerror(errno));
    }
}

static int verify_run(struct vf *vf, int json)
{
    int status = 1;
    struct fams {
        struct fam_pos pos;
        struct fam_ids ids;
        struct fam_files files;
        struct fam_gold gold;
    } *fam = calloc(1, sizeof *fam);
    struct fr_ice_ident *idents = NULL;
    size_t nidents = 0;
    if (!fam) {
        fprintf(stderr, "freshet verify: out of memory\n");
        goto cleanup;
    }
    /* Bronze first: the others can only be as new or newer. */
    static const enum fr_tbl order[FR_TBL_ALL] = {FR_TBL_BRONZE,     FR_TBL_SILVER, FR_TBL_GOLD_EPM,
                                                  FR_TBL_GOLD_TOP,   FR_TBL_LATE,   FR_TBL_DLQ,
                                                  FR_TBL_DLQ_REPLAYS};
    int rc = fr_ice_list_tables(vf->cat, &idents, &nidents);
    for (int i = 0; rc == FR_OK && i < FR_TBL_ALL; i++) {
        struct vf_tab *tab = &vf->tab[order[i]];
        tab->current = -1;
        /* Not created yet (process creates them at its start): empty. */
        int listed = 0;
        for (size_t k = 0; k < nidents; k++) {
            listed |= strcmp(idents[k].ns, FR_NS) == 0 &&
                      strcmp(idents[k].name, fr_tbl_name(order[i])) == 0;
        }
        if (!listed) {
            continue;
        }
        rc = fr_ice_table_load(vf->cat, FR_NS, fr_tbl_name(order[i]), &tab->table);
        if (rc < 0) {
            fprintf(stderr, "freshet verify: table %s.%s: %s %s\n", FR_NS, fr_tbl_name(order[i]),
                    fr_strerror(rc), fr_ice_errmsg());
            goto cleanup;
        }
        tab->current = fr_ice_table_snapshot_id(tab->table);
    }
    if (rc == FR_OK) {
        rc = cut_bronze(vf);
    }
    for (int t = 1; rc == FR_OK && t < FR_TBL_ALL; t++) { /* bronze is 0 */
        rc = cut_table(vf, (enum fr_tbl)t);
    }
    if (rc < 0) {
        fprintf(stderr, "freshet verify: %s %s\n", fr_strerror(rc), fr_ice_errmsg());
        goto cleanup;
    }
    for (int t = 0; t < FR_TBL_ALL; t++) {
        count_table(vf, &vf->tab[t]);
    }
    check_positions(vf, &fam->pos);
    check_bronze_count(vf, &fam->pos);
    check_ids(vf, &fam->ids);
    check_files(vf, &fam->files);
    check_gold(vf, &fam->gold);
    int failed = json ? print_json(vf, stdout) : print_text(vf, stdout);
    status = failed ? 1 : 0;

cleanup:
    free(idents);
    free(fam);
    return status;
}

int fr_cmd_verify(struct fr_conf *conf, int argc, char **argv)
{
    static const struct option opts[] = {{"json", no_argument, 0, 'j'},
                                         {"memory-mb", required_argument, 0, 'm'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int json = 0;
    int64_t mb = VF_DEFAULT_MB;
    int c;
    while ((c = getopt_long(argc, argv, "jm:h", opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            json = 1;
            break;
        case 'm':
            if (parse_i64(optarg, &mb) < 0 || mb < VF_MIN_MB || mb > VF_MAX_MB) {
                fprintf(stderr, "freshet verify: --memory-mb takes %d..%d, not \"%s\"\n", VF_MIN_MB,
                        VF_MAX_MB, optarg);
                return 2;
            }
            break;
        case 'h':
            verify_usage(stdout);
            return 0;
        default:
            verify_usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "freshet verify: unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }
    lower_priority();
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/lake/catalog.db", conf->general_data_dir);
    if (stat(path, &st) != 0) {
        fprintf(stderr, "freshet verify: no lake at %s (nothing to verify)\n", path);
        return 1;
    }
    struct vf *vf = calloc(1, sizeof *vf);
    if (!vf) {
        return 1;
    }
    int status = 1;
    vf->conf = conf;
    vf->budget = (size_t)mb << 20;
    fr_pq_read_opts_default(&vf->ropts);
    vf->ropts.batch_rows = 1024;
    if (mem_init(&vf->mem, vf->budget) < 0) {
        fprintf(stderr, "freshet verify: cannot allocate the %" PRId64 " MiB budget\n", mb);
        goto cleanup;
    }
    /* The warehouse may be an S3 bucket (lake.warehouse): data files are
     * then read with ranged GETs. */
    int rc = fr_lake_open_catalog(conf, &vf->lake);
    if (rc < 0) {
        goto cleanup; /* logged */
    }
    vf->cat = vf->lake.cat;
    status = verify_run(vf, json);

cleanup:
    for (int t = 0; t < FR_TBL_ALL; t++) {
        fr_ice_table_free(vf->tab[t].table);
    }
    free(vf->replays);
    fr_lake_close(&vf->lake);
    mem_free(&vf->mem);
    free(vf);
    return status;
}
