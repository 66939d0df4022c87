/*
 * test_iceberg_meta_cache.c — unit tests for the commit path's metadata
 * handling (src/iceberg/metadata.c ice_meta_clone, table.c's metadata
 * cache): the soak of 2026-12-02 found every commit parsing each table's
 * metadata JSON three times (load, and a write + parse to clone it), so its
 * time followed the retained snapshot count.
 *
 *  - the structural copy serialises byte for byte like the original, on a
 *    table that went through appends with summaries, a partition spec,
 *    an added column, a compaction, expiry and a metadata log;
 *  - a handle's commits after its own commit read no metadata file (the
 *    counting io ops below; before the cache every commit read one per
 *    table), and loads from the cache equal loads from the file;
 *  - a commit by another handle in between is seen (the row names another
 *    file: it is read) and no row is lost;
 *  - more tables than cache slots: every table stays correct;
 *  - memory held for a long snapshot history (issue 5's live RSS): loads
 *    after a handle's own commit share its one cached version instead of
 *    copying it, and a snapshot costs under SNAP_MEM_MAX bytes of metadata
 *    arena (its summary keys and common values are not copied): with a copy
 *    per load and per commit and ~1,400 bytes a snapshot, the processor's
 *    RSS grew by ~4 MB over 660 one-second epochs (docs/BENCHMARKS.md);
 *  - expiry's scan of the kept snapshots holds one manifest list and one
 *    manifest at a time plus the paths it has seen: under EXPIRE_MEM_MAX
 *    bytes per live data file (here the largest manifest, a merged one,
 *    lists all 300; measured ~2,100). Parsing every kept snapshot's list
 *    and every manifest into one arena held ~19,000 here (5.7 MB), and
 *    ~10 MB in the live processor's rounds once snapshots expire;
 *  - the live file list (fr_ice_files, which compaction plans from) holds
 *    the live files and the manifest list, not the entries earlier
 *    compactions deleted (each with its bounds) that the manifests still
 *    carry: under FILES_MEM_MAX arena bytes here, with 240 deleted entries
 *    (measured 22,864; 142,320 when every manifest was parsed into it).
 * Single-threaded; files under check_tmpdir().
 */
#include "check.h"

#include "test_iceberg_util.c"

#include "core/buf.h"
#include "core/clock.h"
#include "iceberg/iceberg_int.h"
#include "iceberg/rest.h"

/* io ops counting reads of metadata JSON files, else POSIX */
struct counting {
    int meta_reads;
};

static int c_create(void *ctx, const char *path, const void *data, size_t len)
{
    (void)ctx;
    return fr_ice_io_posix()->create(NULL, path, data, len);
}
static int c_replace(void *ctx, const char *path, const void *data, size_t len)
{
    (void)ctx;
    return fr_ice_io_posix()->replace(NULL, path, data, len);
}
static int c_link(void *ctx, const char *existing, const char *path)
{
    (void)ctx;
    return fr_ice_io_posix()->link(NULL, existing, path);
}
static int c_read(void *ctx, const char *path, struct fr_buf *buf)
{
    struct counting *k = ctx;
    size_t n = strlen(path);
    if (n > 14 && strcmp(path + n - 14, ".metadata.json") == 0) {
        k->meta_reads++;
    }
    return fr_ice_io_posix()->read(NULL, path, buf);
}
static int c_remove(void *ctx, const char *path)
{
    (void)ctx;
    return fr_ice_io_posix()->remove(NULL, path);
}
static int c_stat(void *ctx, const char *path, int64_t *size, int64_t *mtime)
{
    (void)ctx;
    return fr_ice_io_posix()->stat(NULL, path, size, mtime);
}
static int c_list(void *ctx, const char *dir, int (*fn)(void *arg, const char *path), void *arg)
{
    (void)ctx;
    return fr_ice_io_posix()->list(NULL, dir, fn, arg);
}
static void c_step(void *ctx, enum fr_ice_step step, const char *detail)
{
    (void)ctx;
    (void)step;
    (void)detail;
}
static const struct fr_ice_io_ops counting_ops = {c_create, c_replace, c_link, c_read,
                                                  c_remove, c_stat,    c_list, c_step};

static struct fr_ice_catalog *open_shared(const char *dir, struct counting *k,
                                          struct fr_ice_meta_cache *mc)
{
    struct fr_ice_io io = {&counting_ops, k};
    struct fr_ice_catalog_opts o = {
        .data_dir = dir, .busy_timeout_ms = 2000, .io = k ? &io : NULL, .meta_cache = mc};
    struct fr_ice_catalog *cat = NULL;
    if (fr_ice_catalog_open(&o, &cat) < 0) {
        fprintf(stderr, "open: %s\n", fr_ice_errmsg());
    }
    return cat;
}

static struct fr_ice_catalog *open_cat(const char *dir, struct counting *k)
{
    return open_shared(dir, k, NULL);
}

/* The table's metadata as ice_meta_write gives it, from a load by cat. */
static int meta_text(struct fr_ice_catalog *cat, const char *name, struct fr_buf *out)
{
    struct fr_ice_table *t = NULL;
    int rc = fr_ice_table_load(cat, TI_NS, name, &t);
    if (rc == FR_OK) {
        rc = ice_meta_write(t->meta, out);
    }
    fr_ice_table_free(t);
    return rc;
}

static void test_clone_is_the_round_trip(void)
{
    const char *dir = check_tmpdir();
    struct fr_ice_catalog *cat = open_cat(dir, NULL);
    CHECK(cat != NULL);
    struct fr_ice_kv props[] = {{"commit.manifest.min-count-to-merge", "4"},
                                {"write.metadata.previous-versions-max", "6"}};
    struct fr_ice_table_def def = ti_def(true, props, 2);
    CHECK_EQ_INT(fr_ice_table_create(cat, TI_NS, "t", &def, NULL), FR_OK);
    for (int i = 0; i < 12; i++) {
        struct fr_ice_kv extra[] = {{"freshet.watermark", "1790000000000000"}};
        struct fr_ice_commit_info info = {"pipe", i, "p0:0-10", extra, 1};
        CHECK_EQ_INT(ti_append(cat, "t", i * 10, 10, true, &info), FR_OK);
    }
    /* (compaction first: after an added column it overflows a buffer in
     * compact.c's rewrite_bin, a separate bug, see the soak2 report) */
    struct fr_ice_compact_stats cs;
    struct fr_ice_compact_opts co = {.target_bytes = 1 << 20};
    CHECK_EQ_INT(fr_ice_compact(cat, TI_NS, "t", &co, &cs), FR_OK);
    CHECK_EQ_INT(fr_ice_add_column(cat, TI_NS, "t", "note", FR_ICE_STRING, "a \"doc\"", NULL),
                 FR_OK);
    CHECK_EQ_INT(fr_ice_expire(cat, TI_NS, "t", fr_wall_ms() + 1, 3, NULL), FR_OK);

    struct fr_ice_table *t = NULL;
    CHECK_EQ_INT(fr_ice_table_load(cat, TI_NS, "t", &t), FR_OK);
    struct fr_buf a, b, c;
    fr_buf_init(&a, 16u << 20);
    fr_buf_init(&b, 16u << 20);
    fr_buf_init(&c, 16u << 20);
    CHECK_EQ_INT(ice_meta_write(t->meta, &a), FR_OK);
    struct ice_meta *copy = NULL, *parsed = NULL;
    CHECK_EQ_INT(ice_meta_clone(t->meta, &copy), FR_OK);
    CHECK(copy != NULL && copy->arena != t->meta->arena);
    /* the copy does not share the base's arrays: a change to it stays there */
    CHECK(copy->snapshots != t->meta->snapshots && copy->schemas != t->meta->schemas);
    CHECK_EQ_INT(ice_meta_write(copy, &b), FR_OK);
    CHECK_EQ_INT((int64_t)b.len, (int64_t)a.len);
    CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
    /* and what the old write + parse gave */
    CHECK_EQ_INT(ice_meta_parse((const char *)a.data, a.len, &parsed), FR_OK);
    CHECK_EQ_INT(ice_meta_write(parsed, &c), FR_OK);
    CHECK(a.len == c.len && memcmp(a.data, c.data, a.len) == 0);
    CHECK_EQ_INT(copy->nschemas, 2);
    CHECK_EQ_INT(copy->nsnapshots, parsed->nsnapshots);
    CHECK(copy->nmetadata_log > 0 && copy->nmetadata_log <= 6);
    CHECK_EQ_STR(copy->specs[0].fields[0].transform, parsed->specs[0].fields[0].transform);
    CHECK_EQ_INT(copy->specs[0].fields[0].tf, FR_ICE_DAY);
    ice_meta_free(copy);
    ice_meta_free(parsed);
    fr_ice_table_free(t);
    fr_buf_free(&a);
    fr_buf_free(&b);
    fr_buf_free(&c);
    fr_ice_catalog_close(cat);
}

static void test_commits_do_not_reread_their_metadata(void)
{
    const char *dir = check_tmpdir();
    struct counting k = {0};
    struct fr_ice_catalog *cat = open_cat(dir, &k);
    CHECK(cat != NULL);
    struct fr_ice_table_def def = ti_def(false, NULL, 0);
    CHECK_EQ_INT(fr_ice_table_create(cat, TI_NS, "a", &def, NULL), FR_OK);
    CHECK_EQ_INT(fr_ice_table_create(cat, TI_NS, "b", &def, NULL), FR_OK);
    CHECK_EQ_INT(ti_append(cat, "a", 0, 5, false, NULL), FR_OK);
    CHECK_EQ_INT(ti_append(cat, "b", 0, 5, false, NULL), FR_OK);
    k.meta_reads = 0;
    /* 40 epochs of a two-table transaction, then an expiry of each */
    for (int e = 1; e <= 40; e++) {
        struct ti_file fa, fb;
        char pa[4096], pb[4096];
        snprintf(pa, sizeof pa, "%s/wiki/a/data/e-%d.parquet", fr_ice_catalog_warehouse(cat), e);
        snprintf(pb, sizeof pb, "%s/wiki/b/data/e-%d.parquet", fr_ice_catalog_warehouse(cat), e);
        CHECK_EQ_INT(ti_write(&fa, pa, e * 5, 5, false), FR_OK);
        CHECK_EQ_INT(ti_write(&fb, pb, e * 5, 5, false), FR_OK);
        struct fr_ice_commit_info info = {"pipe", e, NULL, NULL, 0};
        struct fr_ice_txn *txn = NULL;
        CHECK_EQ_INT(fr_ice_txn_begin(cat, &txn), FR_OK);
        CHECK_EQ_INT(fr_ice_txn_append(txn, TI_NS, "a", &fa.df, 1, &info), FR_OK);
        CHECK_EQ_INT(fr_ice_txn_append(txn, TI_NS, "b", &fb.df, 1, &info), FR_OK);
        struct fr_ice_commit_result res;
        CHECK_EQ_INT(fr_ice_txn_commit(txn, &res), FR_OK);
        CHECK_EQ_INT(res.attempts, 1);
        CHECK(res.timing.metadata_bytes > 0 && res.timing.max_snapshots >= (uint32_t)e);
        fr_ice_txn_free(txn);
        ti_free(&fa);
        ti_free(&fb);
    }
    CHECK_EQ_INT(fr_ice_expire(cat, TI_NS, "a", fr_wall_ms() + 1, 10, NULL), FR_OK);
    CHECK_EQ_INT(fr_ice_expire(cat, TI_NS, "b", fr_wall_ms() + 1, 10, NULL), FR_OK);
    /* every base was a version this handle wrote: not one file read */
    CHECK_EQ_INT(k.meta_reads, 0);

    /* the cached version is the file's content: a fresh handle loads the same */
    struct fr_buf x, y;
    fr_buf_init(&x, 16u << 20);
    fr_buf_init(&y, 16u << 20);
    struct fr_ice_catalog *other = open_cat(dir, NULL);
    CHECK(other != NULL);
    CHECK_EQ_INT(meta_text(cat, "a", &x), FR_OK);
    CHECK_EQ_INT(k.meta_reads, 0);
    CHECK_EQ_INT(meta_text(other, "a", &y), FR_OK);
    CHECK(x.len == y.len && x.len > 0 && memcmp(x.data, y.data, x.len) == 0);

    /* another writer moves the row: the next commit here reads its file */
    CHECK_EQ_INT(ti_append(other, "a", 1000, 5, false, NULL), FR_OK);
    CHECK_EQ_INT(ti_append(cat, "a", 2000, 5, false, NULL), FR_OK);
    CHECK_EQ_INT(k.meta_reads, 1);
    struct ti_sum sum;
    CHECK_EQ_INT(ti_read_table(cat, "a", &sum, 4000), FR_OK);
    CHECK_EQ_INT(sum.rows, 5 + 40 * 5 + 5 + 5);
    CHECK_EQ_INT(sum.dupes, 0);
    CHECK_EQ_INT(ti_read_table(other, "b", &sum, 4000), FR_OK);
    CHECK_EQ_INT(sum.rows, 5 + 40 * 5);
    CHECK_EQ_INT(sum.id_sum, ti_expected_sum(0, 205));
    fr_buf_free(&x);
    fr_buf_free(&y);
    fr_ice_catalog_close(other);
    fr_ice_catalog_close(cat);
}

static void test_more_tables_than_slots(void)
{
    const char *dir = check_tmpdir();
    struct counting k = {0};
    struct fr_ice_catalog *cat = open_cat(dir, &k);
    CHECK(cat != NULL);
    enum { NT = ICE_META_CACHE + 4 };
    struct fr_ice_table_def def = ti_def(false, NULL, 0);
    for (int r = 0; r < 3; r++) {
        for (int i = 0; i < NT; i++) {
            char name[32];
            snprintf(name, sizeof name, "t%d", i);
            if (r == 0) {
                CHECK_EQ_INT(fr_ice_table_create(cat, TI_NS, name, &def, NULL), FR_OK);
            }
            CHECK_EQ_INT(ti_append(cat, name, r * 10, 10, false, NULL), FR_OK);
        }
    }
    /* round robin over more tables than slots: the evicted are read again */
    CHECK(k.meta_reads > 0);
    for (int i = 0; i < NT; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%d", i);
        struct ti_sum sum;
        CHECK_EQ_INT(ti_read_table(cat, name, &sum, 100), FR_OK);
        CHECK_EQ_INT(sum.rows, 30);
        CHECK_EQ_INT(sum.id_sum, ti_expected_sum(0, 30));
    }
    fr_ice_catalog_close(cat);
}

/* Arena bytes a snapshot of an epoch append may cost in a loaded
 * metadata: its struct, its manifest-list path, the summary's array (16
 * bytes an entry) and the values that are not summary words (numbers, the
 * offsets): ~810 parsed, ~910 in a commit's version. With every key and
 * value copied it was ~1,440 parsed and ~1,550 in a commit's version. */
enum { SNAP_MEM_MAX = 1000, HISTORY = 150 };

static void test_history_memory(void)
{
    const char *dir = check_tmpdir();
    struct counting k = {0};
    struct fr_ice_catalog *cat = open_cat(dir, &k);
    CHECK(cat != NULL);
    struct fr_ice_table_def def = ti_def(false, NULL, 0);
    CHECK_EQ_INT(fr_ice_table_create(cat, TI_NS, "h", &def, NULL), FR_OK);
    for (int i = 0; i < HISTORY; i++) { /* the processor's epoch appends */
        char off[32];
        snprintf(off, sizeof off, "p0:%d-%d", i * 10, i * 10 + 10);
        struct fr_ice_kv extra[] = {{"freshet.watermark-us", "1790000000000000"},
                                    {"freshet.epoch-records", "10"}};
        struct fr_ice_commit_info info = {"pipe", i, off, extra, 2};
        CHECK_EQ_INT(ti_append(cat, "h", i * 10, 10, false, &info), FR_OK);
    }
    int reads = k.meta_reads; /* the first append read what create wrote */
    struct fr_ice_table *a = NULL, *b = NULL;
    CHECK_EQ_INT(fr_ice_table_load(cat, TI_NS, "h", &a), FR_OK);
    CHECK_EQ_INT(fr_ice_table_load(cat, TI_NS, "h", &b), FR_OK);
    if (!a || !b) {
        fr_ice_table_free(a);
        fr_ice_table_free(b);
        fr_ice_catalog_close(cat);
        return;
    }
    CHECK_EQ_INT(k.meta_reads, reads);
    CHECK(a->meta == b->meta); /* one version, shared by the cache and both loads */
    CHECK_EQ_INT(a->meta->nsnapshots, HISTORY);
    size_t per_snap = a->meta->arena->used / a->meta->nsnapshots;
    fprintf(stderr, "  %u snapshots: %zu arena bytes each (loaded from the cache)\n",
            a->meta->nsnapshots, per_snap);
    CHECK(per_snap < SNAP_MEM_MAX);
    /* the same from the file, parsed by another handle */
    struct fr_ice_catalog *other = open_cat(dir, NULL);
    struct fr_ice_table *c = NULL;
    CHECK(other != NULL);
    CHECK_EQ_INT(fr_ice_table_load(other, TI_NS, "h", &c), FR_OK);
    if (c) {
        per_snap = c->meta->arena->used / c->meta->nsnapshots;
        fprintf(stderr, "  %zu arena bytes each (parsed)\n", per_snap);
        CHECK(per_snap < SNAP_MEM_MAX);
        /* and both say the same */
        struct fr_buf x, y;
        fr_buf_init(&x, 16u << 20);
        fr_buf_init(&y, 16u << 20);
        CHECK_EQ_INT(ice_meta_write(a->meta, &x), FR_OK);
        CHECK_EQ_INT(ice_meta_write(c->meta, &y), FR_OK);
        CHECK(x.len == y.len && memcmp(x.data, y.data, x.len) == 0);
        fr_buf_free(&x);
        fr_buf_free(&y);
    }
    fr_ice_table_free(c);
    fr_ice_catalog_close(other);
    /* a table freed after its handle's cache moved on keeps its version */
    CHECK_EQ_INT(ti_append(cat, "h", HISTORY * 10, 10, false, NULL), FR_OK);
    fr_ice_table_free(a);
    CHECK_EQ_INT(b->meta->nsnapshots, HISTORY);
    fr_ice_table_free(b);
    struct ti_sum sum;
    CHECK_EQ_INT(ti_read_table(cat, "h", &sum, 100), FR_OK);
    CHECK_EQ_INT(sum.rows, HISTORY * 10 + 10);
    fr_ice_catalog_close(cat);
}

enum { EXPIRE_SNAPS = 300, EXPIRE_OLD = 30, EXPIRE_MEM_MAX = 4096 };

static void test_expire_memory(void)
{
    const char *dir = check_tmpdir();
    struct fr_ice_catalog *cat = open_cat(dir, NULL);
    CHECK(cat != NULL);
    struct fr_ice_table_def def = ti_def(false, NULL, 0);
    CHECK_EQ_INT(fr_ice_table_create(cat, TI_NS, "x", &def, NULL), FR_OK);
    for (int i = 0; i < EXPIRE_SNAPS; i++) {
        CHECK_EQ_INT(ti_append(cat, "x", i * 10, 10, false, NULL), FR_OK);
    }
    /* everything is older than the cutoff: the retain count decides */
    struct fr_ice_expire_stats es = {0};
    CHECK_EQ_INT(fr_ice_expire(cat, TI_NS, "x", INT64_MAX, EXPIRE_SNAPS - EXPIRE_OLD, &es), FR_OK);
    CHECK_EQ_INT(es.snapshots_expired, EXPIRE_OLD);
    size_t kept = EXPIRE_SNAPS - EXPIRE_OLD;
    fprintf(stderr, "  expiry scan: %zu bytes at most, %zu a data file\n", es.scratch_peak_bytes,
            es.scratch_peak_bytes / EXPIRE_SNAPS);
    CHECK(es.scratch_peak_bytes > 0);
    CHECK(es.scratch_peak_bytes / EXPIRE_SNAPS < EXPIRE_MEM_MAX);
    /* appends only: every data file is still live, and readable */
    struct ti_sum sum;
    CHECK_EQ_INT(ti_read_table(cat, "x", &sum, 100), FR_OK);
    CHECK_EQ_INT(sum.rows, EXPIRE_SNAPS * 10);
    struct fr_ice_table *t = NULL;
    CHECK_EQ_INT(fr_ice_table_load(cat, TI_NS, "x", &t), FR_OK);
    if (t) {
        CHECK_EQ_INT(t->meta->nsnapshots, kept);
    }
    fr_ice_table_free(t);
    fr_ice_catalog_close(cat);
}

enum { FILES_ROUNDS = 4, FILES_PER_ROUND = 60, FILES_MEM_MAX = 48 * 1024 };

static void test_files_memory(void)
{
    const char *dir = check_tmpdir();
    struct fr_ice_catalog *cat = open_cat(dir, NULL);
    CHECK(cat != NULL);
    struct fr_ice_table_def def = ti_def(false, NULL, 0);
    CHECK_EQ_INT(fr_ice_table_create(cat, TI_NS, "f", &def, NULL), FR_OK);
    /* rounds of small appends, each compacted into one file: the deleted
     * entries stay in the manifests the current snapshot reaches */
    int64_t id = 0;
    for (int r = 0; r < FILES_ROUNDS; r++) {
        for (int i = 0; i < FILES_PER_ROUND; i++, id += 5) {
            CHECK_EQ_INT(ti_append(cat, "f", id, 5, false, NULL), FR_OK);
        }
        struct fr_ice_compact_stats cs;
        struct fr_ice_compact_opts co = {.target_bytes = 1 << 20};
        CHECK_EQ_INT(fr_ice_compact(cat, TI_NS, "f", &co, &cs), FR_OK);
        CHECK(cs.groups >= 1);
    }
    struct fr_ice_table *t = NULL;
    CHECK_EQ_INT(fr_ice_table_load(cat, TI_NS, "f", &t), FR_OK);
    struct fr_ice_file_list list;
    CHECK_EQ_INT(fr_ice_files(cat, t, -1, true, &list), FR_OK);
    CHECK(list.nfiles >= 1 && list.nfiles <= FILES_ROUNDS);
    CHECK_EQ_INT(list.total_records, FILES_ROUNDS * FILES_PER_ROUND * 5);
    /* the list's files are whole: paths readable, metrics copied */
    for (size_t i = 0; i < list.nfiles; i++) {
        CHECK(list.files[i].path && strstr(list.files[i].path, ".parquet") != NULL);
        CHECK(list.files[i].nmetrics > 0 && list.files[i].metrics != NULL);
        for (uint32_t k = 0; k < list.files[i].nmetrics; k++) {
            const struct fr_ice_col_metrics *mx = &list.files[i].metrics[k];
            CHECK(mx->value_count >= 0);
            CHECK(!mx->lower_len || mx->lower != NULL);
        }
    }
    size_t used = list.arena ? list.arena->used : 0;
    fprintf(stderr, "  live file list: %zu files, %zu arena bytes\n", list.nfiles, used);
    CHECK(used < FILES_MEM_MAX);
    fr_ice_file_list_free(&list);
    /* the table reads back whole after all of it */
    struct ti_sum sum;
    CHECK_EQ_INT(ti_read_table(cat, "f", &sum, id), FR_OK);
    CHECK_EQ_INT(sum.rows, id);
    CHECK_EQ_INT(sum.id_sum, ti_expected_sum(0, id));
    fr_ice_table_free(t);
    fr_ice_catalog_close(cat);
}

/* serve opens a handle per request and shares one cache among them: a
 * version one handle committed or read is neither read nor parsed again by
 * the next, and a REST load answers it from the cache's bytes (the counting
 * ops are not the POSIX ones, so commits keep the bytes as on S3). */
static void test_shared_between_handles(void)
{
    const char *dir = check_tmpdir();
    struct fr_ice_meta_cache *mc = fr_ice_meta_cache_new();
    CHECK(mc != NULL);
    struct counting ka = {0}, kb = {0};
    struct fr_ice_catalog *a = open_shared(dir, &ka, mc);
    CHECK(a != NULL);
    struct fr_ice_table_def def = ti_def(false, NULL, 0);
    CHECK_EQ_INT(fr_ice_table_create(a, TI_NS, "s", &def, NULL), FR_OK);
    CHECK_EQ_INT(ti_append(a, "s", 0, 5, false, NULL), FR_OK);
    fr_ice_catalog_close(a); /* the cache outlives the handle */

    struct fr_ice_catalog *b = open_shared(dir, &kb, mc);
    CHECK(b != NULL);
    CHECK_EQ_INT(ti_append(b, "s", 5, 5, false, NULL), FR_OK);
    CHECK_EQ_INT(kb.meta_reads, 0); /* the base was a's commit, from the cache */
    struct fr_buf r1, r2;
    fr_buf_init(&r1, 16u << 20);
    fr_buf_init(&r2, 16u << 20);
    CHECK_EQ_INT(fr_ice_rest_load(b, TI_NS, "s", &r1), FR_OK);
    CHECK_EQ_INT(kb.meta_reads, 0); /* b's own commit's bytes */
    fr_ice_catalog_close(b);

    /* a handle with its own cache reads the file: the same answer */
    struct counting kc = {0};
    struct fr_ice_catalog *c = open_cat(dir, &kc);
    CHECK(c != NULL);
    CHECK_EQ_INT(fr_ice_rest_load(c, TI_NS, "s", &r2), FR_OK);
    CHECK_EQ_INT(kc.meta_reads, 1);
    CHECK(r1.len == r2.len && r1.len > 0 && memcmp(r1.data, r2.data, r1.len) == 0);
    /* ... and its second load of that version reads nothing */
    fr_buf_reset(&r2);
    CHECK_EQ_INT(fr_ice_rest_load(c, TI_NS, "s", &r2), FR_OK);
    CHECK_EQ_INT(kc.meta_reads, 1);
    CHECK(r1.len == r2.len && memcmp(r1.data, r2.data, r1.len) == 0);
    /* a commit through c moves the row: a shared handle sees the new
     * version (read once from the file, then from the cache) */
    CHECK_EQ_INT(ti_append(c, "s", 10, 5, false, NULL), FR_OK);
    fr_ice_catalog_close(c);
    struct counting kd = {0};
    struct fr_ice_catalog *d = open_shared(dir, &kd, mc);
    CHECK(d != NULL);
    struct ti_sum sum;
    CHECK_EQ_INT(ti_read_table(d, "s", &sum, 100), FR_OK);
    CHECK_EQ_INT(sum.rows, 15);
    CHECK_EQ_INT(sum.id_sum, ti_expected_sum(0, 15));
    CHECK_EQ_INT(kd.meta_reads, 1);
    CHECK_EQ_INT(ti_read_table(d, "s", &sum, 100), FR_OK);
    CHECK_EQ_INT(kd.meta_reads, 1);
    fr_ice_catalog_close(d);
    fr_buf_free(&r1);
    fr_buf_free(&r2);
    fr_ice_meta_cache_free(mc);
}

int main(void)
{
    RUN(test_clone_is_the_round_trip);
    RUN(test_commits_do_not_reread_their_metadata);
    RUN(test_more_tables_than_slots);
    RUN(test_history_memory);
    RUN(test_expire_memory);
    RUN(test_files_memory);
    RUN(test_shared_between_handles);
    return check_report();
}
