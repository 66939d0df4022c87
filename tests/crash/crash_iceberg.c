/*
 * crash_iceberg.c — kill the writer at every step of a commit, over many
 * seeds, and check that the lake is never corrupt (after SQLite's crash9
 * and Redis's aof tests).
 *
 * Each run: a parent prepares two tables (a, b) with a committed history,
 * then forks a child that writes new data files and commits one epoch to
 * both tables in one transaction, through an io ops table that counts
 * every effect (file create / replace / link / remove, and the commit steps:
 * loaded, manifest, manifest list, metadata, catalog begin, catalog
 * updated, catalog committed, published) and _exit()s at effect number k,
 * before it, after it, or (for creates) after leaving a torn temporary
 * file. A dry run counts the effects; k runs over all of them. Then a
 * second loop SIGKILLs real committing children at random times.
 *
 * After every crash the parent checks, with a fresh catalog handle:
 *  1. both tables are at the old snapshot or both at the new one (the
 *     epoch marker tells), with exactly the rows of that state, every file
 *     the manifests list present with its size, no row twice;
 *  2. version-hint.text never names a version past the catalog's;
 *  3. orphan removal finds what the crash left (data files, manifests,
 *     lists, metadata, temporaries), removes it, and a second pass finds
 *     nothing; the table still reads the same;
 *  4. the pipeline can go on: re-committing the epoch lands (old state) or
 *     is refused as already committed (new state).
 *
 * Usage: crash_iceberg [SEEDS [KILLS]]   (defaults 6 and 30; ctest runs 4 20)
 */
#include "check.h"

#include "../unit/test_iceberg_util.c"

#include "core/clock.h"
#include "core/fsutil.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#define PIPE "crash-pipeline"

enum crash_mode { CRASH_BEFORE = 0, CRASH_AFTER, CRASH_TORN, CRASH_MODES };

struct crash_io {
    int target; /* effect number to die at; 0: never */
    int mode;
    int count;
};

static void crash_point(struct crash_io *c, const char *path, const void *data, size_t len,
                        bool after)
{
    if (c->count != c->target) {
        return;
    }
    if (!after && c->mode == CRASH_TORN && path && data) {
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.tmp-%d-torn", path, (int)getpid());
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            ssize_t w = write(fd, data, len / 2);
            (void)w;
            close(fd);
        }
        _exit(0);
    }
    if (after == (c->mode == CRASH_AFTER) || (c->mode == CRASH_TORN && after)) {
        _exit(0);
    }
}

static int c_create(void *ctx, const char *path, const void *data, size_t len)
{
    struct crash_io *c = ctx;
    c->count++;
    crash_point(c, path, data, len, false);
    int rc = fr_ice_io_posix()->create(NULL, path, data, len);
    crash_point(c, path, data, len, true);
    return rc;
}

static int c_replace(void *ctx, const char *path, const void *data, size_t len)
{
    struct crash_io *c = ctx;
    c->count++;
    crash_point(c, path, data, len, false);
    int rc = fr_ice_io_posix()->replace(NULL, path, data, len);
    crash_point(c, path, data, len, true);
    return rc;
}

static int c_link(void *ctx, const char *existing, const char *path)
{
    struct crash_io *c = ctx;
    c->count++;
    crash_point(c, NULL, NULL, 0, false);
    int rc = fr_ice_io_posix()->link(NULL, existing, path);
    crash_point(c, NULL, NULL, 0, true);
    return rc;
}

static int c_remove(void *ctx, const char *path)
{
    struct crash_io *c = ctx;
    c->count++;
    crash_point(c, NULL, NULL, 0, false);
    int rc = fr_ice_io_posix()->remove(NULL, path);
    crash_point(c, NULL, NULL, 0, true);
    return rc;
}

static void c_step(void *ctx, enum fr_ice_step step, const char *detail)
{
    (void)step;
    (void)detail;
    struct crash_io *c = ctx;
    c->count++;
    crash_point(c, NULL, NULL, 0, false);
    crash_point(c, NULL, NULL, 0, true);
}

static struct fr_ice_catalog *open_cat(const char *dir, struct fr_ice_io *io)
{
    struct fr_ice_catalog *cat = NULL;
    /* A fixed warehouse URI: locations in metadata do not name the
     * directory, so a copied lake (each crash run starts from a copy of
     * the same prepared lake) maps to its own files. */
    struct fr_ice_catalog_opts o = {.data_dir = dir,
                                    .io = io,
                                    .busy_timeout_ms = 10000,
                                    .warehouse_uri = "http://127.0.0.1:9/lake"};
    if (fr_ice_catalog_open(&o, &cat) < 0) {
        fprintf(stderr, "open %s: %s\n", dir, fr_ice_errmsg());
        return NULL;
    }
    return cat;
}

/* The rows epoch e adds to each table: ids [e*1000, e*1000 + rows_of(e)). */
static int rows_of(uint64_t seed, int64_t epoch)
{
    return 5 + (int)((seed * 31 + (uint64_t)epoch * 17) % 40);
}
static int files_of(uint64_t seed, int64_t epoch)
{
    return 1 + (int)((seed + (uint64_t)epoch) % 3);
}

/* Write epoch e's data files for both tables and commit them in one
 * transaction. Returns the commit's result. */
static int commit_epoch(struct fr_ice_catalog *cat, uint64_t seed, int64_t epoch)
{
    static const char *const tables[2] = {"a", "b"};
    int nfiles = files_of(seed, epoch);
    int rows = rows_of(seed, epoch);
    struct ti_file *f = calloc(2 * (size_t)nfiles, sizeof *f);
    struct fr_ice_data_file dfs[2][4];
    struct fr_ice_txn *txn = NULL;
    int rc = f ? fr_ice_txn_begin(cat, &txn) : FR_ENOMEM;
    for (int t = 0; t < 2 && rc == FR_OK; t++) {
        int64_t first = epoch * 1000;
        for (int k = 0; k < nfiles && rc == FR_OK; k++) {
            int n = rows / nfiles + (k == nfiles - 1 ? rows % nfiles : 0);
            char path[4096];
            snprintf(path, sizeof path, "%s/wiki/%s/data/e%" PRId64 "-%d-%d.parquet",
                     fr_ice_catalog_warehouse(cat), tables[t], epoch, k, (int)getpid());
            rc = ti_write(&f[t * nfiles + k], path, first, n, t == 1);
            dfs[t][k] = f[t * nfiles + k].df;
            first += n;
        }
        char offsets[64];
        snprintf(offsets, sizeof offsets, "recentchange/0:%" PRId64 "-%" PRId64, epoch * 1000,
                 epoch * 1000 + rows);
        struct fr_ice_commit_info info = {PIPE, epoch, offsets, NULL, 0};
        if (rc == FR_OK) {
            rc = fr_ice_txn_append(txn, TI_NS, tables[t], dfs[t], (uint32_t)nfiles, &info);
        }
    }
    if (rc == FR_OK) {
        rc = fr_ice_txn_commit(txn, NULL);
    }
    fr_ice_txn_free(txn);
    for (int i = 0; f && i < 2 * nfiles; i++) {
        ti_free(&f[i]);
    }
    free(f);
    return rc;
}

static void setup(const char *dir, uint64_t seed, int64_t epochs)
{
    struct fr_ice_catalog *cat = open_cat(dir, NULL);
    struct fr_ice_kv props[] = {{"commit.manifest.min-count-to-merge", "3"}};
    struct fr_ice_table_def da = ti_def(false, props, 1), db = ti_def(true, props, 1);
    CHECK_EQ_INT(fr_ice_table_create(cat, TI_NS, "a", &da, NULL), FR_OK);
    CHECK_EQ_INT(fr_ice_table_create(cat, TI_NS, "b", &db, NULL), FR_OK);
    for (int64_t e = 0; e < epochs; e++) {
        CHECK_EQ_INT(commit_epoch(cat, seed, e), FR_OK);
    }
    fr_ice_catalog_close(cat);
}

static int64_t rows_through(uint64_t seed, int64_t last_epoch)
{
    int64_t n = 0;
    for (int64_t e = 0; e <= last_epoch; e++) {
        n += rows_of(seed, e);
    }
    return n;
}

/* Checks 1-3; returns the last epoch both tables hold. */
static int64_t verify(const char *dir, uint64_t seed, int64_t old_epoch, const char *what)
{
    struct fr_ice_catalog *cat = open_cat(dir, NULL);
    int64_t last[2] = {-1, -1};
    static const char *const tables[2] = {"a", "b"};
    for (int t = 0; t < 2 && cat; t++) {
        struct fr_ice_table *tb = NULL;
        int rc = fr_ice_table_load(cat, TI_NS, tables[t], &tb);
        if (rc != FR_OK) {
            fprintf(stderr, "%s: load %s: %s\n", what, tables[t], fr_ice_errmsg());
        }
        CHECK_EQ_INT(rc, FR_OK);
        if (rc != FR_OK) {
            continue;
        }
        CHECK_EQ_INT(fr_ice_last_epoch(tb, PIPE, &last[t], NULL), FR_OK);
        /* 2: the hint never leads the catalog */
        char path[4096];
        struct fr_buf b;
        fr_buf_init(&b, 64);
        snprintf(path, sizeof path, "%s/metadata/version-hint.text", fr_ice_table_dir(tb));
        if (fr_fs_read_file(path, &b) == FR_OK) {
            const char *loc = strrchr(fr_ice_table_metadata_file(tb), '/') + 1;
            CHECK(strtoll(fr_buf_cstr(&b), NULL, 10) <= strtoll(loc, NULL, 10));
        }
        fr_buf_free(&b);
        fr_ice_table_free(tb);
        struct ti_sum sum;
        rc = ti_read_table(cat, tables[t], &sum, 100000);
        if (rc != FR_OK) {
            fprintf(stderr, "%s: read %s: %s\n", what, tables[t], fr_ice_errmsg());
        }
        CHECK_EQ_INT(rc, FR_OK);
        CHECK_EQ_INT(sum.rows, rows_through(seed, last[t]));
        CHECK_EQ_INT(sum.dupes, 0);
        CHECK_EQ_INT(sum.bad_values, 0);
    }
    /* 1: all or nothing across the two tables, and old or new only */
    CHECK_EQ_INT(last[0], last[1]);
    CHECK(last[0] == old_epoch || last[0] == old_epoch + 1);
    /* 3: orphans removed, then none */
    for (int t = 0; t < 2 && cat; t++) {
        struct fr_ice_orphan_stats os;
        CHECK_EQ_INT(fr_ice_remove_orphans(cat, TI_NS, tables[t], fr_wall_ms() + 60000, false, &os),
                     FR_OK);
        CHECK_EQ_INT(os.orphans, os.removed);
        CHECK_EQ_INT(fr_ice_remove_orphans(cat, TI_NS, tables[t], fr_wall_ms() + 60000, true, &os),
                     FR_OK);
        CHECK_EQ_INT(os.orphans, 0);
        struct ti_sum sum;
        CHECK_EQ_INT(ti_read_table(cat, tables[t], &sum, 100000), FR_OK);
        CHECK_EQ_INT(sum.rows, rows_through(seed, last[t]));
    }
    fr_ice_catalog_close(cat);
    return last[0];
}

/* Check 4: the pipeline resumes. */
static void resume(const char *dir, uint64_t seed, int64_t last, int64_t old_epoch)
{
    struct fr_ice_catalog *cat = open_cat(dir, NULL);
    int rc = commit_epoch(cat, seed, old_epoch + 1);
    CHECK_EQ_INT(rc, last == old_epoch ? FR_OK : FR_EEXIST);
    fr_ice_catalog_close(cat);
}

static int run_child(const char *dir, uint64_t seed, int64_t epoch, int target, int mode)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        struct crash_io c = {target, mode, 0};
        struct fr_ice_io_ops ops = *fr_ice_io_posix();
        ops.create = c_create;
        ops.replace = c_replace;
        ops.remove = c_remove;
        ops.link = c_link;
        ops.step = c_step;
        struct fr_ice_io io = {&ops, &c};
        struct fr_ice_catalog *cat = open_cat(dir, &io);
        int rc = cat ? commit_epoch(cat, seed, epoch) : FR_EIO;
        fr_ice_catalog_close(cat);
        /* exit status: 100 + the number of effects when it ran to the end */
        _exit(rc == FR_OK ? 100 + (c.count > 150 ? 150 : c.count) : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void copy_tree(const char *from, const char *to)
{
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -a '%s' '%s'", to, from, to);
    CHECK(system(cmd) == 0);
}

static int steps_failed;

static void crash_steps(uint64_t seed)
{
    const char *base = check_tmpdir();
    char golden[4200], dir[4200];
    snprintf(golden, sizeof golden, "%s/golden", base);
    snprintf(dir, sizeof dir, "%s/run", base);
    int64_t epochs = 2 + (int64_t)(seed % 3);
    setup(golden, seed, epochs);
    /* dry run: how many effects does one commit have? */
    copy_tree(golden, dir);
    int st = run_child(dir, seed, epochs, 0, 0);
    CHECK(st > 100);
    int effects = st - 100;
    int runs = 0;
    for (int k = 1; k <= effects; k++) {
        for (int mode = 0; mode < CRASH_MODES; mode++) {
            copy_tree(golden, dir);
            int before = check_case_failed;
            check_case_failed = 0;
            run_child(dir, seed, epochs, k, mode);
            char what[64];
            snprintf(what, sizeof what, "seed %llu effect %d mode %d", (unsigned long long)seed, k,
                     mode);
            int64_t last = verify(dir, seed, epochs - 1, what);
            resume(dir, seed, last, epochs - 1);
            if (check_case_failed) {
                fprintf(stderr, "  ^ failed at %s\n", what);
                steps_failed++;
            }
            check_case_failed |= before;
            runs++;
        }
    }
    fprintf(stderr, "seed %llu: %d effects per commit, %d crash runs\n", (unsigned long long)seed,
            effects, runs);
}

/* Real SIGKILLs at random times into a child committing epoch after epoch. */
static void crash_kills(uint64_t seed, int kills)
{
    const char *dir = check_tmpdir();
    setup(dir, seed, 1);
    int64_t done = 0; /* last committed epoch */
    uint64_t rnd = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int i = 0; i < kills; i++) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            struct fr_ice_catalog *cat = open_cat(dir, NULL);
            for (int64_t e = done + 1; cat; e++) {
                if (commit_epoch(cat, seed, e) != FR_OK) {
                    _exit(1);
                }
            }
            _exit(2);
        }
        rnd ^= rnd << 13;
        rnd ^= rnd >> 7;
        rnd ^= rnd << 17;
        fr_sleep_ms((int64_t)(rnd % 400));
        kill(pid, SIGKILL);
        int status;
        waitpid(pid, &status, 0);
        CHECK(WIFSIGNALED(status));
        /* the child may have committed several epochs: find out, then check */
        struct fr_ice_catalog *cat = open_cat(dir, NULL);
        struct fr_ice_table *t = NULL;
        int64_t last = done;
        if (cat && fr_ice_table_load(cat, TI_NS, "a", &t) == FR_OK) {
            fr_ice_last_epoch(t, PIPE, &last, NULL);
        }
        fr_ice_table_free(t);
        fr_ice_catalog_close(cat);
        char what[64];
        snprintf(what, sizeof what, "seed %llu kill %d", (unsigned long long)seed, i);
        int64_t got = verify(dir, seed, last > done ? last - 1 : done, what);
        CHECK(got >= done);
        done = got;
    }
    fprintf(stderr, "seed %llu: %d kills, %" PRId64 " epochs committed\n", (unsigned long long)seed,
            kills, done);
}

static int nseeds = 6, nkills = 30;

static void test_crash_every_step(void)
{
    for (int s = 1; s <= nseeds; s++) {
        crash_steps((uint64_t)s);
    }
    CHECK_EQ_INT(steps_failed, 0);
}

static void test_sigkill(void)
{
    for (int s = 1; s <= (nseeds + 1) / 2; s++) {
        crash_kills((uint64_t)s * 7919, nkills);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        nseeds = atoi(argv[1]);
    }
    if (argc > 2) {
        nkills = atoi(argv[2]);
    }
    RUN(test_crash_every_step);
    RUN(test_sigkill);
    return check_report();
}
