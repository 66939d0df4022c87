/*
 * stats.c — the stats file: its layout, the writer (one per stage process)
 * and the reader (freshet serve, tests). Design and alternatives in
 * docs/adr/0009-stats-files.md.
 *
 * File <data>/stats/<stage>.stats, host byte order (it is shared memory
 * between processes of one machine, never copied elsewhere):
 *
 *   offset  size  field
 *        0     8  magic "FRSTATS\0"
 *        8     4  version, 1
 *       12     4  header bytes, 128
 *       16     4  slot count (FR_STATS_NSLOTS)
 *       20     4  layout CRC-32C of the metric table (fr_stats_layout_crc)
 *       24     4  stage (0 ingest, 1 process, 2 serve)
 *       28     4  reserved, 0
 *       32     8  pid of the writer
 *       40     8  writer start time, Unix ms
 *       48     8  seq: even when stable, odd while a publish is in progress
 *       56     8  heartbeat: Unix ms of the newest publish (under seq)
 *       64     8  publishes: count (under seq)
 *       72     4  role (0 the single processor or ingest, 1 a shard, 2 the
 *                 finalizer: ADR 0042; 0 in files of older builds)
 *       76     4  partition of a shard (int32), -1 otherwise
 *       80     4  flags: bit 0 "closed": the writer closed the file on its
 *                 way out (a clean exit, e.g. a revoked shard), not a crash
 *       84     4  reserved, 0
 *       88    40  instance: "hostname:pid" of the `process --group`
 *                 instance that runs the member (or of the member itself),
 *                 NUL-terminated, truncated to 39 bytes
 *      128  8*N   slots in table order (stats.h, enum fr_stats_slot):
 *                 counters and histogram buckets as uint64, gauges and
 *                 histogram sums as IEEE-754 doubles (NaN: no value yet)
 *
 * Invariants:
 *   1. A file is created complete under a temporary name and renamed into
 *      place; it is never truncated or resized afterwards, so a reader's
 *      mapping can never fault (SIGBUS) on a shrinking file.
 *   2. The writer holds an open-file-description write lock (F_OFD_SETLK)
 *      on the whole file for its lifetime; the kernel drops it when the
 *      process dies, however it dies, so "a lock is held" means "a live
 *      writer", without trusting a pid that may have been reused.
 *   3. Seqlock: publish makes seq odd, stores every slot, makes seq even
 *      (release). A reader loads seq (acquire), copies the slots, fences
 *      (acquire) and loads seq again; equal and even means one publish's
 *      values. Every access is a relaxed atomic on a lock-free 8-byte word,
 *      so there is no data race in the C11 sense.
 *   4. A new writer of a stage whose old file is not locked (the old writer
 *      is dead) carries the old file's counters and histograms over, so
 *      counters only reset when the layout changes.
 *   5. Members of the scale-out mode (a shard, the finalizer) each own a
 *      file of their own, <data>/stats/process-p<N>.stats and
 *      finalize.stats, with the process stage's layout; role, partition
 *      and instance are written once at creation, before the rename, and
 *      the header's role must match the file's name for a reader to take
 *      it (group.c reads them as one group).
 */
#include "stats/stats.h"
#include "stats/stats_int.h"

#include "core/clock.h"
#include "core/crc32c.h"
#include "core/diag.h"
#include "core/err.h"
#include "core/fsutil.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATS_MAGIC "FRSTATS"
#define STATS_VERSION 1
#define STATS_HEADER_BYTES 128
#define STATS_FILE_BYTES (STATS_HEADER_BYTES + 8 * FR_STATS_NSLOTS)

struct stats_hdr {
    char magic[8];
    uint32_t version;
    uint32_t header_bytes;
    uint32_t nslots;
    uint32_t layout_crc;
    uint32_t stage;
    uint32_t reserved0;
    int64_t pid;
    int64_t started_ms;
    _Atomic uint64_t seq;
    _Atomic uint64_t heartbeat_ms;
    _Atomic uint64_t publishes;
    uint32_t role;
    int32_t partition;
    _Atomic uint32_t flags;
    uint32_t reserved1;
    char instance[FR_STATS_INSTANCE_MAX];
};

static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "8-byte atomics must be lock-free to share them");
static_assert(sizeof(_Atomic uint64_t) == 8, "slots are 8 bytes");
static_assert(sizeof(double) == 8, "gauges are IEEE-754 doubles");
static_assert(offsetof(struct stats_hdr, version) == 8, "byte table");
static_assert(offsetof(struct stats_hdr, layout_crc) == 20, "byte table");
static_assert(offsetof(struct stats_hdr, stage) == 24, "byte table");
static_assert(offsetof(struct stats_hdr, pid) == 32, "byte table");
static_assert(offsetof(struct stats_hdr, started_ms) == 40, "byte table");
static_assert(offsetof(struct stats_hdr, seq) == 48, "byte table");
static_assert(offsetof(struct stats_hdr, heartbeat_ms) == 56, "byte table");
static_assert(offsetof(struct stats_hdr, publishes) == 64, "byte table");
static_assert(offsetof(struct stats_hdr, role) == 72, "byte table");
static_assert(offsetof(struct stats_hdr, partition) == 76, "byte table");
static_assert(offsetof(struct stats_hdr, flags) == 80, "byte table");
static_assert(offsetof(struct stats_hdr, instance) == 88, "byte table");
static_assert(sizeof(struct stats_hdr) == STATS_HEADER_BYTES, "byte table");
static_assert(ATOMIC_INT_LOCK_FREE == 2, "the flags word is shared between processes");
#define STATS_FLAG_CLOSED 1u

/* ------------------------------------------------------------- the table */

static const double stats_bounds_fsync[] = {FR_STATS_BUCKETS_FSYNC};
static const double stats_bounds_batch[] = {FR_STATS_BUCKETS_BATCH};
static_assert(sizeof stats_bounds_fsync / sizeof(double) == FR_STATS_NBUCK_FSYNC,
              "FSYNC bucket count");
static_assert(sizeof stats_bounds_batch / sizeof(double) == FR_STATS_NBUCK_BATCH,
              "BATCH bucket count");
#define STATS_BOUNDS_NONE NULL
#define STATS_BOUNDS_FSYNC stats_bounds_fsync
#define STATS_BOUNDS_BATCH stats_bounds_batch

enum stats_lset {
#define STATS_LSET_ENUM(set, name, n) STATS_LSET_##set,
    FR_STATS_LABEL_SETS(STATS_LSET_ENUM)
#undef STATS_LSET_ENUM
};
static const char *const stats_lset_names[] = {
#define STATS_LSET_NAME(set, name, n) name,
    FR_STATS_LABEL_SETS(STATS_LSET_NAME)
#undef STATS_LSET_NAME
};

static const char *const stats_outcomes[] = {"silver", "duplicate", "late", "dlq"};
static const char *const stats_stages[] = {"ingest", "process", "serve"};
static const char *const stats_lookups[] = {"resolved", "no_item", "failed", "backlog"};
static_assert(sizeof stats_lookups / sizeof *stats_lookups == FR_STATS_NLAB_LOOKUP,
              "lookup outcome labels");
static const char *const stats_labels[] = {"labelled", "no_label", "missing", "off", "failed"};
static_assert(sizeof stats_labels / sizeof *stats_labels == FR_STATS_NLAB_LABEL,
              "label outcome labels");
static_assert(sizeof stats_outcomes / sizeof *stats_outcomes == FR_STATS_NLAB_OUTCOME,
              "outcome labels");
static_assert(sizeof stats_stages / sizeof *stats_stages == FR_STATS_NLAB_STAGE, "stage labels");
static_assert((int)FR_STATS_STAGES == (int)FR_STATS_NLAB_STAGE, "one stage label per stage");

static const enum stats_lset stats_lsets[FR_STATS_COUNT] = {
#define STATS_META_LSET(id, stage, name, type, unit, labels, buckets, help) STATS_LSET_##labels,
    FR_STATS_TABLE(STATS_META_LSET)
#undef STATS_META_LSET
};

static const struct fr_stats_meta stats_metas[FR_STATS_COUNT] = {
#define STATS_META(mid, stg, nm, typ, un, labels, buckets, hlp)                                    \
    {.id = FR_STATS_##mid,                                                                         \
     .stage = FR_STATS_##stg,                                                                      \
     .name = nm,                                                                                   \
     .type = FR_STATS_##typ,                                                                       \
     .unit = un,                                                                                   \
     .label = "",                                                                                  \
     .nlabels = FR_STATS_NLAB_##labels,                                                            \
     .nbuckets = FR_STATS_NBUCK_##buckets,                                                         \
     .bounds = STATS_BOUNDS_##buckets,                                                             \
     .help = hlp,                                                                                  \
     .slot = FR_STATS_SLOT_##mid,                                                                  \
     .width = FR_STATS_WIDTH_##typ(labels, buckets)},
    FR_STATS_TABLE(STATS_META)
#undef STATS_META
};

static struct fr_stats_meta stats_metas_named[FR_STATS_COUNT];
static uint32_t stats_crc;
static pthread_once_t stats_once = PTHREAD_ONCE_INIT;

static void stats_init_table(void)
{
    uint32_t crc = 0;
    for (int i = 0; i < FR_STATS_COUNT; i++) {
        stats_metas_named[i] = stats_metas[i];
        stats_metas_named[i].label = stats_lset_names[stats_lsets[i]];
        const struct fr_stats_meta *m = &stats_metas_named[i];
        uint32_t fixed[5] = {(uint32_t)m->stage, (uint32_t)m->type, m->nlabels, m->nbuckets,
                             m->slot};
        crc = fr_crc32c(crc, m->name, strlen(m->name) + 1);
        crc = fr_crc32c(crc, fixed, sizeof fixed);
        if (m->nbuckets) {
            crc = fr_crc32c(crc, m->bounds, m->nbuckets * sizeof(double));
        }
    }
    stats_crc = crc;
}

const struct fr_stats_meta *fr_stats_meta(enum fr_stats_id id)
{
    pthread_once(&stats_once, stats_init_table);
    return (unsigned)id < FR_STATS_COUNT ? &stats_metas_named[id] : NULL;
}

uint32_t fr_stats_layout_crc(void)
{
    pthread_once(&stats_once, stats_init_table);
    return stats_crc;
}

const char *fr_stats_label_value(const struct fr_stats_meta *meta, unsigned i)
{
    if (i >= meta->nlabels) {
        return "?";
    }
    switch (stats_lsets[meta->id]) {
    case STATS_LSET_NONE:
        return "";
    case STATS_LSET_REASON:
        return fr_gate_reason_name((enum fr_gate_reason)(i + 1));
    case STATS_LSET_OUTCOME:
        return stats_outcomes[i];
    case STATS_LSET_STAGE:
        return stats_stages[i];
    case STATS_LSET_LOOKUP:
        return stats_lookups[i];
    case STATS_LSET_LABEL:
        return stats_labels[i];
    }
    return "?";
}

const char *fr_stats_stage_name(enum fr_stats_stage stage)
{
    return (unsigned)stage < FR_STATS_STAGES ? stats_stages[stage] : "?";
}

int fr_stats_path(const char *data_dir, enum fr_stats_stage stage, char *out, size_t outlen)
{
    int n = snprintf(out, outlen, "%s/stats/%s.stats", data_dir, fr_stats_stage_name(stage));
    return n < 0 || (size_t)n >= outlen ? FR_ETOOBIG : FR_OK;
}

int fr_stats_member_path(const char *data_dir, const struct fr_stats_member *who, char *out,
                         size_t outlen)
{
    int n = -1;
    if (who->role == FR_STATS_ROLE_SHARD && who->partition >= 0) {
        n = snprintf(out, outlen, "%s/stats/process-p%d.stats", data_dir, who->partition);
    } else if (who->role == FR_STATS_ROLE_FINALIZER) {
        n = snprintf(out, outlen, "%s/stats/finalize.stats", data_dir);
    } else if (who->role == FR_STATS_ROLE_SINGLE) {
        return fr_stats_path(data_dir, FR_STATS_PROCESS, out, outlen);
    } else {
        return FR_EINVAL;
    }
    return n < 0 || (size_t)n >= outlen ? FR_ETOOBIG : FR_OK;
}

const char *fr_stats_role_name(enum fr_stats_role role)
{
    switch (role) {
    case FR_STATS_ROLE_SINGLE:
        return "single";
    case FR_STATS_ROLE_SHARD:
        return "shard";
    case FR_STATS_ROLE_FINALIZER:
        return "finalizer";
    }
    return "?";
}

void fr_stats_default_instance(char *out, size_t outlen)
{
    char host[256];
    if (gethostname(host, sizeof host) < 0) {
        snprintf(host, sizeof host, "localhost");
    }
    host[sizeof host - 1] = '\0';
    char pid[24];
    int pn = snprintf(pid, sizeof pid, ":%ld", (long)getpid());
    /* Keep the ":pid" whole when the host name has to be cut. */
    size_t room = outlen > (size_t)pn + 1 ? outlen - (size_t)pn - 1 : 0;
    snprintf(out, outlen, "%.*s%s", (int)(strlen(host) < room ? strlen(host) : room), host, pid);
}

static uint64_t stats_dbits(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

static double stats_bitsd(uint64_t u)
{
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* ------------------------------------------------------------ the writer */

struct fr_stats {
    enum fr_stats_stage stage;
    struct fr_stats_member who; /* who.instance points at instance below */
    char instance[FR_STATS_INSTANCE_MAX];
    char data_dir[4096];
    pthread_mutex_t lock; /* histograms and publish */
    _Atomic uint64_t local[FR_STATS_NSLOTS];
    int fd;                /* -1: memory only */
    struct stats_hdr *hdr; /* the mapping, NULL: memory only */
    _Atomic uint64_t *slots;
    int64_t started_ms;
    uint64_t publishes;
    struct fr_proc_view *view; /* allocated on the first view publish */
};

static void stats_init_local(struct fr_stats *st)
{
    for (unsigned i = 0; i < FR_STATS_NSLOTS; i++) {
        atomic_init(&st->local[i], 0);
    }
    for (int id = 0; id < FR_STATS_COUNT; id++) {
        const struct fr_stats_meta *m = fr_stats_meta((enum fr_stats_id)id);
        if (m->type == FR_STATS_GAUGE) {
            for (unsigned l = 0; l < m->nlabels; l++) {
                atomic_store(&st->local[m->slot + l], stats_dbits(NAN));
            }
        } else if (m->type == FR_STATS_HISTOGRAM) {
            atomic_store(&st->local[m->slot + m->width - 1], stats_dbits(0.0));
        }
    }
}

static int stats_alloc(enum fr_stats_stage stage, struct fr_stats **out)
{
    struct fr_stats *st = calloc(1, sizeof *st);
    if (!st) {
        return FR_ENOMEM;
    }
    st->stage = stage;
    st->who.role = FR_STATS_ROLE_SINGLE;
    st->who.partition = -1;
    st->who.instance = st->instance;
    st->fd = -1;
    st->started_ms = fr_wall_ms();
    pthread_mutex_init(&st->lock, NULL);
    stats_init_local(st);
    *out = st;
    return FR_OK;
}

int fr_stats_open_memory(enum fr_stats_stage stage, struct fr_stats **out)
{
    if ((unsigned)stage >= FR_STATS_STAGES) {
        return FR_EINVAL;
    }
    return stats_alloc(stage, out);
}

/* 1 when a live process holds a write lock on fd's file, 0 when none. */
static int stats_locked(int fd)
{
    struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    if (fcntl(fd, F_OFD_GETLK, &fl) < 0) {
        return 0;
    }
    return fl.l_type != F_UNLCK;
}

/* Validate a mapped header against this build's layout. */
static int stats_hdr_ok(const struct stats_hdr *hdr, enum fr_stats_stage stage,
                        enum fr_stats_role role)
{
    return memcmp(hdr->magic, STATS_MAGIC, 8) == 0 && hdr->version == STATS_VERSION &&
           hdr->header_bytes == STATS_HEADER_BYTES && hdr->nslots == FR_STATS_NSLOTS &&
           hdr->layout_crc == fr_stats_layout_crc() && hdr->stage == (uint32_t)stage &&
           hdr->role == (uint32_t)role;
}

/* Map a stats file read-only after checking its size. */
static int stats_map_ro(int fd, const struct stats_hdr **hdr)
{
    struct stat sb;
    if (fstat(fd, &sb) < 0) {
        return fr_err_from_errno(errno);
    }
    if (sb.st_size != (off_t)STATS_FILE_BYTES) {
        return FR_ECORRUPT;
    }
    void *p = mmap(NULL, STATS_FILE_BYTES, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        return fr_err_from_errno(errno);
    }
    *hdr = p;
    return FR_OK;
}

/* Seqlock read of a mapped file into snap (invariant 3). A live writer
 * preempted mid-publish is waited for (up to 200 ms, yielding); a dead one
 * that left seq odd gives a torn snapshot after a few tries. */
static void stats_copy(const struct stats_hdr *hdr_c, int writer_alive, struct fr_stats_snap *snap)
{
    struct stats_hdr *hdr = (struct stats_hdr *)hdr_c; /* atomics are read, never written */
    const _Atomic uint64_t *slots =
        (const _Atomic uint64_t *)((const char *)hdr + STATS_HEADER_BYTES);
    int64_t deadline = 0;
    for (unsigned attempt = 0;; attempt++) {
        uint64_t s1 = atomic_load_explicit(&hdr->seq, memory_order_acquire);
        if (!(s1 & 1)) {
            for (unsigned i = 0; i < FR_STATS_NSLOTS; i++) {
                snap->slots[i] = atomic_load_explicit(&slots[i], memory_order_relaxed);
            }
            snap->heartbeat_ms =
                (int64_t)atomic_load_explicit(&hdr->heartbeat_ms, memory_order_relaxed);
            snap->publishes = atomic_load_explicit(&hdr->publishes, memory_order_relaxed);
            atomic_thread_fence(memory_order_acquire);
            if (atomic_load_explicit(&hdr->seq, memory_order_relaxed) == s1) {
                snap->torn = 0;
                return;
            }
        }
        int give_up = !writer_alive && attempt >= 100;
        if (writer_alive && attempt % 64 == 63) {
            int64_t now = fr_mono_ns();
            deadline = deadline ? deadline : now + 200000000;
            give_up = now > deadline;
            sched_yield();
        }
        if (give_up) {
            for (unsigned i = 0; i < FR_STATS_NSLOTS; i++) {
                snap->slots[i] = atomic_load_explicit(&slots[i], memory_order_relaxed);
            }
            snap->heartbeat_ms =
                (int64_t)atomic_load_explicit(&hdr->heartbeat_ms, memory_order_relaxed);
            snap->publishes = atomic_load_explicit(&hdr->publishes, memory_order_relaxed);
            snap->torn = 1;
            return;
        }
    }
}

/* Take counters and histograms of the previous writer of this stage. */
static void stats_carry_over(struct fr_stats *st, const struct stats_hdr *hdr)
{
    struct fr_stats_snap *snap = malloc(sizeof *snap);
    if (!snap) {
        return;
    }
    stats_copy(hdr, 0, snap);
    for (int id = 0; id < FR_STATS_COUNT; id++) {
        const struct fr_stats_meta *m = fr_stats_meta((enum fr_stats_id)id);
        if (m->stage != st->stage || m->type == FR_STATS_GAUGE) {
            continue;
        }
        for (unsigned i = 0; i < m->width; i++) {
            atomic_store(&st->local[m->slot + i], snap->slots[m->slot + i]);
        }
    }
    free(snap);
}

/* Look at the existing file: FR_ELOCKED when a live writer holds it. */
static int stats_inspect_old(struct fr_stats *st, const char *path, int64_t *holder)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return FR_OK;
    }
    int rc = FR_OK;
    const struct stats_hdr *hdr = NULL;
    if (stats_map_ro(fd, &hdr) == FR_OK) {
        if (stats_locked(fd)) {
            *holder = hdr->pid;
            rc = FR_ELOCKED;
        } else if (stats_hdr_ok(hdr, st->stage, st->who.role)) {
            stats_carry_over(st, hdr);
        }
        munmap((void *)hdr, STATS_FILE_BYTES);
    } else if (stats_locked(fd)) {
        *holder = -1;
        rc = FR_ELOCKED;
    }
    close(fd);
    return rc;
}

static int stats_create_file(struct fr_stats *st, const char *path)
{
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    int rc = FR_OK;
    void *p = MAP_FAILED;
    int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        return fr_err_from_errno(errno);
    }
    /* Allocated, not just sized: a sparse file on a full disk maps fine and
     * then SIGBUSes on the first store into it (found by
     * tests/integration/disk_full.py). */
    int e = posix_fallocate(fd, 0, STATS_FILE_BYTES);
    if (e != 0) {
        rc = fr_err_from_errno(e);
        goto cleanup;
    }
    p = mmap(NULL, STATS_FILE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        rc = fr_err_from_errno(errno);
        goto cleanup;
    }
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    if (fcntl(fd, F_OFD_SETLK, &fl) < 0) {
        rc = fr_err_from_errno(errno);
        goto cleanup;
    }
    struct stats_hdr *hdr = p;
    memcpy(hdr->magic, STATS_MAGIC, 8);
    hdr->version = STATS_VERSION;
    hdr->header_bytes = STATS_HEADER_BYTES;
    hdr->nslots = FR_STATS_NSLOTS;
    hdr->layout_crc = fr_stats_layout_crc();
    hdr->stage = (uint32_t)st->stage;
    hdr->pid = (int64_t)getpid();
    hdr->started_ms = st->started_ms;
    hdr->role = (uint32_t)st->who.role;
    hdr->partition = st->who.partition;
    memcpy(hdr->instance, st->instance, sizeof hdr->instance);
    st->hdr = hdr;
    st->slots = (_Atomic uint64_t *)((char *)p + STATS_HEADER_BYTES);
    st->fd = fd;
    fr_stats_publish(st);
    if (rename(tmp, path) < 0) {
        rc = fr_err_from_errno(errno);
        st->hdr = NULL;
        st->slots = NULL;
        st->fd = -1;
        goto cleanup;
    }
    return FR_OK;

cleanup:
    if (p != MAP_FAILED) {
        munmap(p, STATS_FILE_BYTES);
    }
    close(fd);
    unlink(tmp);
    return rc;
}

/* Open the file of stage (who: NULL for a stage's own file, else a
 * member of the scale-out mode, stage PROCESS). */
static int stats_open(const char *data_dir, enum fr_stats_stage stage,
                      const struct fr_stats_member *who, struct fr_stats **out)
{
    if (stage != FR_STATS_INGEST && stage != FR_STATS_PROCESS) {
        return FR_EINVAL;
    }
    struct fr_stats *st = NULL;
    int rc = stats_alloc(stage, &st);
    if (rc < 0) {
        return rc;
    }
    if (who) {
        st->who.role = who->role;
        st->who.partition = who->role == FR_STATS_ROLE_SHARD ? who->partition : -1;
        snprintf(st->instance, sizeof st->instance, "%s", who->instance ? who->instance : "");
    }
    if (!st->instance[0]) {
        fr_stats_default_instance(st->instance, sizeof st->instance);
    }
    snprintf(st->data_dir, sizeof st->data_dir, "%s", data_dir);
    char dir[4200], path[4200];
    snprintf(dir, sizeof dir, "%s/stats", data_dir);
    rc = fr_stats_member_path(data_dir, &st->who, path, sizeof path);
    if (rc == FR_OK && st->who.role == FR_STATS_ROLE_SINGLE) {
        rc = fr_stats_path(data_dir, stage, path, sizeof path);
    }
    if (rc == FR_OK) {
        rc = fr_fs_mkdirs(dir, 0755);
    }
    int64_t holder = 0;
    if (rc == FR_OK) {
        rc = stats_inspect_old(st, path, &holder);
    }
    if (rc == FR_ELOCKED) {
        fr_warn("stats",
                "%s is held by another live %s (pid %lld); this process's figures "
                "are not published",
                path, fr_stats_stage_name(stage), (long long)holder);
    } else if (rc == FR_OK) {
        rc = stats_create_file(st, path);
    }
    if (rc < 0 && rc != FR_ELOCKED) {
        fr_warn("stats", "cannot publish figures in %s: %s; keeping them in memory", path,
                fr_strerror(rc));
    }
    *out = st;
    return FR_OK;
}

int fr_stats_open(const char *data_dir, enum fr_stats_stage stage, struct fr_stats **out)
{
    return stats_open(data_dir, stage, NULL, out);
}

int fr_stats_open_member(const char *data_dir, const struct fr_stats_member *who,
                         struct fr_stats **out)
{
    if (!who || (who->role != FR_STATS_ROLE_SHARD && who->role != FR_STATS_ROLE_FINALIZER) ||
        (who->role == FR_STATS_ROLE_SHARD && who->partition < 0)) {
        return FR_EINVAL;
    }
    return stats_open(data_dir, FR_STATS_PROCESS, who, out);
}

int fr_stats_has_file(const struct fr_stats *st)
{
    return st && st->hdr != NULL;
}

void fr_stats_close(struct fr_stats *st)
{
    if (!st) {
        return;
    }
    if (st->hdr) {
        fr_stats_publish(st);
        /* A clean way out (invariant 5's "closed"): serve tells a member
         * that left (a revoked shard) from one that crashed. */
        atomic_fetch_or_explicit(&st->hdr->flags, STATS_FLAG_CLOSED, memory_order_release);
        munmap(st->hdr, STATS_FILE_BYTES);
    }
    if (st->fd >= 0) {
        close(st->fd); /* drops the lock: readers now see the stage down */
    }
    pthread_mutex_destroy(&st->lock);
    free(st->view);
    free(st);
}

static int stats_check(const struct fr_stats *st, enum fr_stats_id id, unsigned label,
                       enum fr_stats_type type)
{
    const struct fr_stats_meta *m = fr_stats_meta(id);
    return st && m && m->type == type && label < m->nlabels;
}

void fr_stats_add(struct fr_stats *st, enum fr_stats_id id, unsigned label, uint64_t n)
{
    if (stats_check(st, id, label, FR_STATS_COUNTER)) {
        atomic_fetch_add_explicit(&st->local[fr_stats_meta(id)->slot + label], n,
                                  memory_order_relaxed);
    }
}

void fr_stats_set_counter(struct fr_stats *st, enum fr_stats_id id, unsigned label, uint64_t v)
{
    if (stats_check(st, id, label, FR_STATS_COUNTER)) {
        atomic_store_explicit(&st->local[fr_stats_meta(id)->slot + label], v, memory_order_relaxed);
    }
}

void fr_stats_set(struct fr_stats *st, enum fr_stats_id id, unsigned label, double v)
{
    if (stats_check(st, id, label, FR_STATS_GAUGE)) {
        atomic_store_explicit(&st->local[fr_stats_meta(id)->slot + label], stats_dbits(v),
                              memory_order_relaxed);
    }
}

double fr_stats_get(const struct fr_stats *st, enum fr_stats_id id, unsigned label)
{
    if (!stats_check(st, id, label, FR_STATS_GAUGE)) {
        return NAN;
    }
    return stats_bitsd(atomic_load_explicit(
        &((struct fr_stats *)st)->local[fr_stats_meta(id)->slot + label], memory_order_relaxed));
}

void fr_stats_observe(struct fr_stats *st, enum fr_stats_id id, double v)
{
    if (!stats_check(st, id, 0, FR_STATS_HISTOGRAM) || isnan(v)) {
        return;
    }
    const struct fr_stats_meta *m = fr_stats_meta(id);
    unsigned b = 0;
    while (b < m->nbuckets && v > m->bounds[b]) {
        b++;
    }
    pthread_mutex_lock(&st->lock);
    atomic_fetch_add_explicit(&st->local[m->slot + b], 1, memory_order_relaxed);
    _Atomic uint64_t *sum = &st->local[m->slot + m->width - 1];
    atomic_store_explicit(sum, stats_dbits(stats_bitsd(atomic_load(sum)) + v),
                          memory_order_relaxed);
    pthread_mutex_unlock(&st->lock);
}

void fr_stats_publish(struct fr_stats *st)
{
    if (!st) {
        return;
    }
    pthread_mutex_lock(&st->lock);
    st->publishes++;
    if (st->hdr) {
        struct stats_hdr *hdr = st->hdr;
        uint64_t s = atomic_load_explicit(&hdr->seq, memory_order_relaxed);
        atomic_store_explicit(&hdr->seq, s + 1, memory_order_relaxed);
        atomic_thread_fence(memory_order_release);
        for (unsigned i = 0; i < FR_STATS_NSLOTS; i++) {
            atomic_store_explicit(&st->slots[i],
                                  atomic_load_explicit(&st->local[i], memory_order_relaxed),
                                  memory_order_relaxed);
        }
        atomic_store_explicit(&hdr->heartbeat_ms, (uint64_t)fr_wall_ms(), memory_order_relaxed);
        atomic_store_explicit(&hdr->publishes, st->publishes, memory_order_relaxed);
        atomic_store_explicit(&hdr->seq, s + 2, memory_order_release);
    }
    pthread_mutex_unlock(&st->lock);
}

/* ------------------------------------------------------------ the reader */

int fr_stats_read(const char *data_dir, enum fr_stats_stage stage, struct fr_stats_snap *snap)
{
    char path[4200];
    int rc = fr_stats_path(data_dir, stage, path, sizeof path);
    if (rc < 0) {
        memset(snap, 0, sizeof *snap);
        snap->stage = stage;
        return rc;
    }
    return fr_stats_read_file(path, stage, FR_STATS_ROLE_SINGLE, snap);
}

int fr_stats_read_file(const char *path, enum fr_stats_stage stage, enum fr_stats_role role,
                       struct fr_stats_snap *snap)
{
    memset(snap, 0, sizeof *snap);
    snap->stage = stage;
    snap->role = role;
    snap->partition = -1;
    snap->read_mono_ns = fr_mono_ns();
    int rc;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return errno == ENOENT ? FR_ENOTFOUND : fr_err_from_errno(errno);
    }
    const struct stats_hdr *hdr = NULL;
    rc = stats_map_ro(fd, &hdr);
    if (rc == FR_OK) {
        if (stats_hdr_ok(hdr, stage, role)) {
            snap->alive = stats_locked(fd);
            snap->pid = hdr->pid;
            snap->started_ms = hdr->started_ms;
            snap->partition = hdr->partition;
            memcpy(snap->instance, hdr->instance, sizeof snap->instance);
            snap->instance[sizeof snap->instance - 1] = '\0';
            snap->closed =
                (atomic_load_explicit(&((struct stats_hdr *)hdr)->flags, memory_order_acquire) &
                 STATS_FLAG_CLOSED) != 0;
            stats_copy(hdr, snap->alive, snap);
            snap->present = 1;
        } else {
            rc = FR_ECORRUPT;
        }
        munmap((void *)hdr, STATS_FILE_BYTES);
    }
    close(fd);
    return rc;
}

void fr_stats_snapshot(struct fr_stats *st, struct fr_stats_snap *snap)
{
    memset(snap, 0, sizeof *snap);
    snap->stage = st->stage;
    snap->read_mono_ns = fr_mono_ns();
    pthread_mutex_lock(&st->lock);
    for (unsigned i = 0; i < FR_STATS_NSLOTS; i++) {
        snap->slots[i] = atomic_load_explicit(&st->local[i], memory_order_relaxed);
    }
    pthread_mutex_unlock(&st->lock);
    snap->present = 1;
    snap->alive = 1;
    snap->pid = (int64_t)getpid();
    snap->started_ms = st->started_ms;
    snap->heartbeat_ms = fr_wall_ms();
    snap->publishes = st->publishes;
}

int fr_stats_snap_up(const struct fr_stats_snap *snap, int64_t now_ms)
{
    /* heartbeat_ms comes from a file: compared so that no value of it overflows */
    return snap->present && snap->alive && snap->heartbeat_ms > now_ms - FR_STATS_STALE_MS;
}

uint64_t fr_stats_snap_counter(const struct fr_stats_snap *snap, enum fr_stats_id id,
                               unsigned label)
{
    const struct fr_stats_meta *m = fr_stats_meta(id);
    return m && m->type == FR_STATS_COUNTER && label < m->nlabels ? snap->slots[m->slot + label]
                                                                  : 0;
}

double fr_stats_snap_gauge(const struct fr_stats_snap *snap, enum fr_stats_id id, unsigned label)
{
    const struct fr_stats_meta *m = fr_stats_meta(id);
    return m && m->type == FR_STATS_GAUGE && label < m->nlabels
               ? stats_bitsd(snap->slots[m->slot + label])
               : NAN;
}

uint64_t fr_stats_snap_hist_count(const struct fr_stats_snap *snap, enum fr_stats_id id)
{
    const struct fr_stats_meta *m = fr_stats_meta(id);
    if (!m || m->type != FR_STATS_HISTOGRAM) {
        return 0;
    }
    uint64_t n = 0;
    for (unsigned b = 0; b <= m->nbuckets; b++) {
        n += snap->slots[m->slot + b];
    }
    return n;
}

double fr_stats_snap_hist_sum(const struct fr_stats_snap *snap, enum fr_stats_id id)
{
    const struct fr_stats_meta *m = fr_stats_meta(id);
    return m && m->type == FR_STATS_HISTOGRAM ? stats_bitsd(snap->slots[m->slot + m->width - 1])
                                              : NAN;
}

/* The view lives with the handle: it is large (fr_proc_view holds its own
 * text) and one per processor is enough. */
struct fr_proc_view *fr_stats_view_buffer_int(struct fr_stats *st)
{
    if (!st->view) {
        st->view = malloc(sizeof *st->view);
    }
    return st->view;
}

const char *fr_stats_data_dir_int(const struct fr_stats *st)
{
    return st->data_dir;
}

int fr_stats_writes_view_int(const struct fr_stats *st)
{
    return fr_stats_has_file(st) &&
           (st->who.role == FR_STATS_ROLE_SINGLE || st->who.role == FR_STATS_ROLE_FINALIZER);
}
