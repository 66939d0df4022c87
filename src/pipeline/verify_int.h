/*
 * verify_int.h — private to `freshet verify` (src/pipeline/verify*.c): the
 * run's state (struct vf), the bounded pass memory, the check results and
 * the helpers the five files share. verify.c runs the families of checks
 * and prints; verify_util.c holds hashing, the pass memory, figures and the
 * table scan; verify_cut.c chooses the consistent cut; verify_gold.c
 * recomputes both gold tables; verify_topics.c gold_top_topics. The rules are in docs/VERIFY.md.
 *
 * One thread; everything here is owned by the struct vf of one run.
 */
#ifndef FR_PIPELINE_VERIFY_INT_H
#define FR_PIPELINE_VERIFY_INT_H

#include "core/buf.h"
#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"
#include "core/progress.h"
#include "iceberg/iceberg.h"
#include "parquet/parquet.h"
#include "pipeline/checkpoint.h"
#include "pipeline/lake.h"
#include "pipeline/pipeline.h"
#include "pipeline/tables.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The checks, in output order: X(enum, name). */
#define VF_CHECKS(X)                                                                               \
    X(CK_BRONZE_COUNT, "bronze_count")                                                             \
    X(CK_POSITIONS, "bronze_positions_unique")                                                     \
    X(CK_SILVER_UNIQUE, "silver_meta_id_unique")                                                   \
    X(CK_SILVER_COVERS, "silver_covers_bronze")                                                    \
    X(CK_FILES, "no_file_in_two_live_snapshots")                                                   \
    X(CK_PAGES, "page_checksums")                                                                  \
    X(CK_GOLD_EPM, "gold_epm_recomputed")                                                          \
    X(CK_GOLD_TOP, "gold_top_recomputed")                                                          \
    X(CK_GOLD_TOPICS, "gold_topics_recomputed")                                                    \
    X(CK_LATE, "late_consistent")                                                                  \
    X(CK_FRESHNESS, "freshness")
#define VF_CK_ENUM(e, name) e,
#define VF_CK_NAME(e, name) name,
enum vf_ck { VF_CHECKS(VF_CK_ENUM) CK_COUNT };

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
    struct fr_lake lake;           /* the catalog and its warehouse (local or S3) */
    struct fr_ice_catalog *cat;    /* lake.cat */
    /* the six tables and dlq_replays; silver_topics and gold_top_topics
     * are loaded by verify_topics.c */
    struct vf_tab tab[FR_TBL_EVERY];
    struct vf_mem mem;
    size_t budget;
    struct fr_pq_read_opts ropts;
    /* the cut */
    int64_t epoch;           /* -1: no epoch of this pipeline in bronze */
    int64_t watermark_us;    /* INT64_MIN: none */
    int64_t watermark_ms;    /* when the snapshot that set it was committed */
    int64_t topics_us;       /* gold_top_topics' frontier at the cut, INT64_MIN: none */
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
    struct fr_progress pg; /* rows read (core/progress.h); each family adds its plan */
    uint64_t pg_rows;
};

struct vf_col {
    const char *name;
    enum fr_pq_type type;
};

typedef int (*vf_batch_fn)(struct vf *vf, const struct fr_pq_batch *b, void *arg);

enum { ENT_POS = 1, ENT_SIL, ENT_LATE, ENT_FILE, ENT_GROUP, ENT_USER, ENT_CTR, ENT_WIN, ENT_LAB };

enum { POS_LATE = 1, POS_REPLAY = 2, POS_DLQ = 4 };

enum { ROLE_BRONZE, ROLE_LATE, ROLE_SILVER, ROLE_REPLAY, ROLE_DLQ, ROLE_EPM, ROLE_TOP, ROLE_N };

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

struct grow;
struct fam_gold {
    int64_t expected, gold_rows, matched, missing, extra, mismatched, beyond, inexact;
    struct grow *want, *gold; /* this pass's lists */
    char ex[300];
};

/* verify_util.c: hashing, the pass memory, figures and problems, scans. */
int vf_tent_eq(const void *ent, const void *key);
uint64_t vf_mix(uint64_t x);
uint64_t vf_hash(const void *data, size_t len, uint64_t seed);
int vf_in_pass(uint64_t h, uint32_t k, uint32_t passes);
uint64_t vf_pos_hash(int32_t part, int64_t off);
int vf_bytes_cmp(const char *a, size_t al, const char *b, size_t bl);
int vf_same_bytes(const char *a, const char *b, size_t n);
int64_t vf_floor_minute(int64_t us);
int vf_uuid_key(const char *s, size_t len, uint8_t key[16]);
int vf_mem_init(struct vf_mem *m, size_t budget);
void vf_mem_free(struct vf_mem *m);
void vf_mem_reset(struct vf_mem *m);
void *vf_mem_alloc(struct vf_mem *m, size_t n);
void *vf_mem_find(const struct vf_mem *m, uint64_t h, vf_eq_fn eq, const void *key);
void *vf_mem_add(struct vf_mem *m, uint64_t h, size_t size);
void **vf_mem_collect(struct vf_mem *m, uint32_t kind, size_t *n);
struct tent *vf_tent_get(struct vf_mem *m, uint64_t h, const struct tent_key *k, int *added);
void vf_figs(struct vf_check *c, ...);
__attribute__((format(printf, 2, 3))) void vf_problem(struct vf_check *c, const char *fmt, ...);
__attribute__((format(printf, 3, 4))) int vf_errf(struct vf *vf, int rc, const char *fmt, ...);
void vf_fmt_time(int64_t us, char out[32]);
__attribute__((format(printf, 3, 4))) void vf_note(char *ex, size_t cap, const char *fmt, ...);
int vf_scan(struct vf *vf, enum fr_tbl t, const struct vf_col *cols, uint32_t ncols, vf_batch_fn fn,
            void *arg);

/* verify_cut.c: the cut (bronze's epoch, then every other table). */
int vf_parse_i64(const char *s, int64_t *out);
int vf_cut_bronze(struct vf *vf);
int vf_cut_table(struct vf *vf, enum fr_tbl t);
void vf_count_table(struct vf *vf, struct vf_tab *tab);
const char *vf_summary_get(const struct fr_ice_snapshot *s, const char *key);

/* verify_gold.c: both gold tables recomputed from silver. */
void vf_check_gold(struct vf *vf, struct fam_gold *f);

/* verify_topics.c: gold_top_topics recomputed from silver_topics (the
 * tables are loaded and cut there; absent tables pass with nothing to check). */
void vf_check_topics(struct vf *vf);
/* verify_pages.c: every page of every live data file against its CRC. */
void vf_check_pages(struct vf *vf);

/* verify.c: the families' runner. */
int vf_run_family(struct vf *vf, const struct vf_family *fy, int64_t keys, size_t per_key,
                  void *fam, size_t fam_size, uint32_t *passes_out);
void vf_not_evaluated(struct vf *vf, enum vf_ck ck);

#endif
