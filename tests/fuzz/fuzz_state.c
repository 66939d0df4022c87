/*
 * fuzz_state.c — libFuzzer target for the processor's own files, as a
 * crash, a bad disk or an older build may leave them: the checkpoint and
 * the operator state inside it (src/pipeline/checkpoint.c,
 * src/process/state.c and the operators' loaders), the offsets WAL and its
 * torn-tail cut (checkpoint.c), and the enrichment stage's state files
 * (src/pipeline/estage.c, src/process/topics.c).
 *
 * Input: a kind byte (0 checkpoint, 1 offsets WAL, 2 enrichment state), a
 * flags byte, then the file. Random bytes never carry a valid CRC-32C, so
 * with flag 1 the target fixes the file's CRCs first (the checkpoint's and
 * the state's trailer, each WAL entry's), which lets the fuzzer reach the
 * decoders behind them. Checks, besides ASan and UBSan:
 *   checkpoint: an operator state that loads saves, loads into a fresh
 *     processor and saves again to the same bytes;
 *   WAL: after fr_ck_wal_last the file holds only whole entries (a second
 *     call cuts nothing and returns the same range), and an entry appended
 *     then is the one read back; a file it refuses as damage (FR_ECORRUPT,
 *     ADR 0061) is left byte for byte as it was, and does hold a whole
 *     entry (magic, parts, CRC, found here by its own scan) after a bad one;
 *   enrichment state: a stage that loads saves to a file that loads
 *     again and saves the same bytes (but for the epoch and the CRC).
 * Files go to a directory of this process under /dev/shm, removed at exit.
 * The table writers are never called by a load; their three entry points
 * the enrichment stage links to are defined below and abort if called.
 * One thread.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/conf.h"
#include "core/buf.h"
#include "core/crc32c.h"
#include "core/diag.h"
#include "core/err.h"
#include "core/fsutil.h"
#include "pipeline/checkpoint.h"
#include "pipeline/estage.h"
#include "pipeline/tables.h"
#include "process/process.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Never reached from a load or a save: link stubs for estage.c. */
int fr_tw_topic(struct fr_tw *tw, const struct fr_topic_edit *e, const char *outcome,
                const char *why, const char *item, const struct fr_topic_label *label,
                const char *replay_id)
{
    (void)tw, (void)e, (void)outcome, (void)why, (void)item, (void)label, (void)replay_id;
    abort();
}
int fr_tw_gold_topics(struct fr_tw *tw, const struct fr_topic_row *row)
{
    (void)tw, (void)row;
    abort();
}
int fr_tw_dlq_lookup(struct fr_tw *tw, const struct fr_topic_edit *e, const char *reason,
                     const char *detail, int attempts, int64_t failed_at_us)
{
    (void)tw, (void)e, (void)reason, (void)detail, (void)attempts, (void)failed_at_us;
    abort();
}

static char dir[128], edir[160];
static struct fr_conf conf;

static void clear(const char *d)
{
    DIR *dp = opendir(d);
    struct dirent *e;
    char path[400];
    while (dp && (e = readdir(dp))) {
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", d, e->d_name);
            unlink(path);
        }
    }
    if (dp) {
        closedir(dp);
    }
}

static void remove_dirs(void)
{
    clear(edir);
    rmdir(edir);
    clear(dir);
    rmdir(dir);
}

static void put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4); /* the files are little-endian, as this machine */
}

static void write_file(const char *path, const uint8_t *p, size_t n)
{
    if (fr_fs_write_atomic(path, p, n) != FR_OK) {
        abort(); /* the harness, not the code under test */
    }
}

static void proc_opts(struct fr_proc_opts *opts)
{
    fr_proc_opts_default(opts);
}

static void check_checkpoint(void)
{
    struct fr_ck ck;
    struct fr_buf one, two;
    struct fr_proc *a = NULL, *b = NULL;
    struct fr_proc_opts opts;
    fr_buf_init(&ck.state, 64u << 20);
    fr_buf_init(&one, 64u << 20);
    fr_buf_init(&two, 64u << 20);
    proc_opts(&opts);
    if (fr_ck_load(dir, &ck) != FR_OK) {
        goto cleanup;
    }
    if (fr_proc_create(&opts, &a) != FR_OK || fr_proc_create(&opts, &b) != FR_OK) {
        abort();
    }
    if (fr_proc_load(a, ck.state.data, ck.state.len) != FR_OK) {
        goto cleanup;
    }
    if (fr_proc_save(a, &one) != FR_OK) {
        abort();
    }
    if (fr_proc_load(b, one.data, one.len) != FR_OK) {
        abort(); /* the state we saved does not load */
    }
    if (fr_proc_save(b, &two) != FR_OK || one.len != two.len ||
        memcmp(one.data, two.data, one.len) != 0) {
        abort(); /* save, load, save is not stable */
    }
cleanup:
    fr_proc_destroy(a);
    fr_proc_destroy(b);
    fr_buf_free(&ck.state);
    fr_buf_free(&one);
    fr_buf_free(&two);
}

/* Whether f holds a whole, checksummed entry at an offset other than a
 * chain of whole entries from byte 0 reaches: the harness's own reading
 * of the format in checkpoint.c's byte table. */
static int wal_whole_after_bad(const uint8_t *f, size_t n)
{
    size_t at = 0, len;
    int chain = 1;
    for (size_t p = 0; p + 20 <= n; p++) {
        len = 0;
        if (memcmp(f + p, "FRWL", 4) == 0) {
            uint32_t np, crc;
            memcpy(&np, f + p + 12, 4);
            size_t body = 16 + 16 * (size_t)np;
            if (np <= FR_CK_MAX_PARTS && p + body + 4 <= n) {
                memcpy(&crc, f + p + body, 4);
                len = fr_crc32c(0, f + p, body) == crc ? body + 4 : 0;
            }
        }
        if (chain && p == at) {
            if (len) {
                at += len;
            } else {
                chain = 0; /* the first bad byte: any whole entry from here on */
            }
        } else if (!chain && len) {
            return 1;
        }
    }
    return 0;
}

static void check_wal(const uint8_t *f, size_t n)
{
    struct fr_ck_range r1, r2;
    char path[200];
    struct stat st1, st2;
    snprintf(path, sizeof path, "%s/offsets.wal", dir);
    int rc1 = fr_ck_wal_last(dir, &r1);
    int damaged = wal_whole_after_bad(f, n);
    if (rc1 == FR_ECORRUPT || damaged) {
        struct fr_buf b;
        fr_buf_init(&b, 8u << 20);
        if (rc1 != FR_ECORRUPT || !damaged || fr_fs_read_file(path, &b) != FR_OK ||
            b.len != n || memcmp(b.data, f, n) != 0) {
            abort(); /* damage cut as a torn tail, a torn tail refused, or the file changed */
        }
        fr_buf_free(&b);
        return;
    }
    if (rc1 != FR_OK && rc1 != FR_ENOTFOUND) {
        return;
    }
    if (stat(path, &st1) < 0) {
        abort();
    }
    int rc2 = fr_ck_wal_last(dir, &r2);
    if (stat(path, &st2) < 0 || rc2 != rc1 || st2.st_size != st1.st_size ||
        (rc1 == FR_OK && (r1.epoch != r2.epoch || r1.nparts != r2.nparts))) {
        abort(); /* the first call left a tail the second one cuts */
    }
    struct fr_ck_range add = {.epoch = 77, .nparts = 2, .start = {1, 2}, .end = {3, 4}};
    if (fr_ck_wal_append(dir, &add) != FR_OK || fr_ck_wal_last(dir, &r2) != FR_OK ||
        r2.epoch != 77 || r2.nparts != 2 || r2.end[1] != 4) {
        abort(); /* an entry appended after the cut is not the one read back */
    }
}

static void check_estage(int64_t epoch)
{
    struct fr_estage *es = NULL;
    if (fr_estage_open(&conf, dir, &es) != FR_OK || !es) {
        abort();
    }
    if (fr_estage_load(es, epoch) == FR_OK) {
        uint32_t fa = 0, fb = 0;
        if (fr_estage_save(es, epoch + 1, &fa) != FR_OK ||
            fr_estage_load_exact(es, epoch + 1, fa) != FR_OK ||
            fr_estage_save(es, epoch + 2, &fb) != FR_OK) {
            abort(); /* what a loaded stage saves does not load */
        }
        /* The two saves differ only in the epoch (bytes 8..15) and the CRC. */
        struct fr_buf a, b;
        char pa[220], pb[220];
        fr_buf_init(&a, 64u << 20);
        fr_buf_init(&b, 64u << 20);
        snprintf(pa, sizeof pa, "%s/state-%012lld-%08x", edir, (long long)epoch + 1, (unsigned)fa);
        snprintf(pb, sizeof pb, "%s/state-%012lld-%08x", edir, (long long)epoch + 2, (unsigned)fb);
        if (fr_fs_read_file(pa, &a) != FR_OK || fr_fs_read_file(pb, &b) != FR_OK ||
            a.len != b.len || a.len < 20 || memcmp(a.data, b.data, 8) != 0 ||
            memcmp(a.data + 16, b.data + 16, a.len - 20) != 0) {
            abort(); /* save, load, save is not stable */
        }
        fr_buf_free(&a);
        fr_buf_free(&b);
    }
    fr_estage_free(es);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        char err[256];
        fr_diag_set_level(FR_DIAG_ERROR);
        snprintf(dir, sizeof dir, "/dev/shm/fuzz_state.%d", (int)getpid());
        snprintf(edir, sizeof edir, "%s/enrich", dir);
        if (fr_fs_mkdirs(edir, 0755) != FR_OK || fr_conf_init(&conf) != FR_OK ||
            fr_conf_set(&conf, "enrich.enabled=1", FR_CONF_FLAG, err, sizeof err) != FR_OK ||
            fr_conf_set(&conf, "enrich.pending_max=64", FR_CONF_FLAG, err, sizeof err) != FR_OK ||
            fr_conf_set(&conf, "enrich.cache_entries=16", FR_CONF_FLAG, err, sizeof err) != FR_OK ||
            fr_conf_set(&conf, "enrich.queue_cap=64", FR_CONF_FLAG, err, sizeof err) != FR_OK ||
            fr_conf_set(&conf, "enrich.api_url=http://127.0.0.1:9/{wiki}", FR_CONF_FLAG, err,
                        sizeof err) != FR_OK) {
            abort();
        }
        atexit(remove_dirs);
    }
    if (size < 2 || size > (4u << 20)) {
        return 0;
    }
    int kind = data[0] % 3, fix = data[1] & 1;
    size_t n = size - 2;
    uint8_t *f = malloc(n + 1);
    memcpy(f, data + 2, n);
    char path[200];
    if (kind == 1) {
        size_t at = 0;
        while (fix && at + 20 <= n && memcmp(f + at, "FRWL", 4) == 0) {
            uint32_t np;
            memcpy(&np, f + at + 12, 4);
            size_t len = 16 + 16 * (size_t)np;
            if (np > FR_CK_MAX_PARTS || at + len + 4 > n) {
                break;
            }
            put32(f + at + len, fr_crc32c(0, f + at, len));
            at += len + 4;
        }
        snprintf(path, sizeof path, "%s/offsets.wal", dir);
        write_file(path, f, n);
        check_wal(f, n);
    } else {
        if (fix && n >= 4) {
            put32(f + n - 4, fr_crc32c(0, f, n - 4));
        }
        if (kind == 0) {
            snprintf(path, sizeof path, "%s/checkpoint", dir);
            write_file(path, f, n);
            check_checkpoint();
        } else {
            int64_t epoch = 0;
            if (n >= 16) {
                memcpy(&epoch, f + 8, 8); /* the epoch the file names itself */
            }
            epoch = epoch < 0 || epoch > 999999999999LL ? 0 : epoch;
            snprintf(path, sizeof path, "%s/state-%012lld", edir, (long long)epoch);
            write_file(path, f, n);
            check_estage(epoch);
        }
    }
    clear(edir);
    clear(dir);
    free(f);
    return 0;
}
