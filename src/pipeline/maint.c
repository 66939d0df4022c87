/*
 * maint.c — what `freshet rebuild` and `freshet dlq` share (maint.h, second
 * half): the pipeline lock with its message, snapshot-summary lookups,
 * base64, and the log-ordered scan that replays bronze and
 * dlq rows in log order with bounded memory. No command logic here.
 * One thread per object; nothing global.
 */
#include "pipeline/maint.h"

#include "pipeline/lake.h"

#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"
#include "core/fsutil.h"
#include "core/mem.h"
#include "process/process.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RAW_CAP ((size_t)64 << 20) /* process.max_event_bytes at most */
#define MAINT_MIN_PAGE ((size_t)64 << 10) /* smallest page of the processor's compaction */

/* ================================================================ helpers */

int fr_maint_unbase64(const char *s, size_t len, struct fr_buf *out)
{
    uint32_t acc = 0;
    int bits = 0, pad = 0;
    int rc = fr_buf_reserve(out, len / 4 * 3 + 3);
    if (rc < 0) {
        return rc;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        int v;
        if (c >= 'A' && c <= 'Z') {
            v = c - 'A';
        } else if (c >= 'a' && c <= 'z') {
            v = c - 'a' + 26;
        } else if (c >= '0' && c <= '9') {
            v = c - '0' + 52;
        } else if (c == '+') {
            v = 62;
        } else if (c == '/') {
            v = 63;
        } else if (c == '=') {
            pad++;
            continue;
        } else {
            return FR_EJSON;
        }
        if (pad) {
            return FR_EJSON; /* data after padding */
        }
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out->data[out->len++] = (uint8_t)(acc >> bits);
        }
    }
    return (len % 4 == 0 && pad <= 2) ? FR_OK : FR_EJSON;
}

int fr_maint_ck_dir(const struct fr_conf *conf, const char *pipeline, char *out, size_t outlen)
{
    if (!conf->process_checkpoint_dir[0]) {
        return fr_ck_dir(conf->general_data_dir, pipeline, out, outlen);
    }
    int n = snprintf(out, outlen, "%s/%s", conf->process_checkpoint_dir, pipeline);
    if (n < 0 || (size_t)n >= outlen) {
        return FR_EINVAL;
    }
    return fr_fs_mkdirs(out, 0755);
}

int fr_maint_lock(struct fr_conf *conf, const char *cmd, char *dir, size_t dirlen)
{
    int rc = fr_maint_ck_dir(conf, conf->general_pipeline_id, dir, dirlen);
    if (rc < 0) {
        fr_error(cmd, "cannot create %s/process: %s", conf->general_data_dir, fr_strerror(rc));
        return -1;
    }
    long holder = 0;
    int fd = fr_ck_lock(dir, &holder);
    if (fd == FR_ELOCKED) {
        fr_error(cmd,
                 "pipeline %s is locked by process %ld: stop `freshet up` (or `freshet "
                 "process`, or the other rebuild or dlq replay) first, then run %s again",
                 conf->general_pipeline_id, holder, cmd);
        return -1;
    }
    if (fd < 0) {
        fr_error(cmd, "cannot lock %s: %s", dir, fr_strerror(fd));
        return -1;
    }
    return fd;
}

/* ============================================================ group lakes */

int fr_maint_group_marker(const struct fr_ice_table *table, struct fr_maint_group *g)
{
    size_t idl = strlen(g->pipeline_id);
    uint32_t n = 0;
    const struct fr_ice_snapshot *snaps = fr_ice_table_snapshots(table, &n);
    for (uint32_t i = n; i-- > 0;) { /* newest first */
        const char *p = fr_maint_summary(&snaps[i], FR_ICE_SUMMARY_PIPELINE);
        if (!p || strncmp(p, g->pipeline_id, idl) != 0 || p[idl] != '-') {
            continue;
        }
        const char *tail = p + idl + 1;
        int shard = tail[0] == 'p' && tail[1] && strspn(tail + 1, "0123456789") == strlen(tail + 1);
        if (shard || strcmp(tail, "gold") == 0) {
            snprintf(g->found, sizeof g->found, "%s", p);
            return 1;
        }
    }
    return 0;
}

int fr_maint_group_guard(const struct fr_ice_table *base, void *arg)
{
    return fr_maint_group_marker(base, arg) ? FR_EUNSUPPORTED : FR_OK;
}

void fr_maint_group_refused(const char *cmd, const struct fr_maint_group *g)
{
    if (strcmp(cmd, "rebuild") == 0) {
        fr_error(cmd,
                 "the lake is a consumer group's now (pipeline %s, a scale-out shard or "
                 "finalizer of %s, committed to it while this rebuild ran on what was a single "
                 "process's lake): the rebuild lands nothing. Stop the group and run `freshet "
                 "rebuild` again: on a group's lake it rebuilds every shard and gold "
                 "(docs/REBUILD.md, ADR 0066).",
                 g->found, g->pipeline_id);
        return;
    }
    fr_error(cmd,
             "the lake is a consumer group's (pipeline %s, a scale-out shard or finalizer of "
             "%s, commits to it): %s refuses it. A replay lands dead letters through one "
             "pipeline's operator state; in a group each dead letter belongs to its "
             "partition's shard (its checkpoint on some instance's machine) and its gold "
             "windows to the finalizer: landed here, they would be missing from gold and from "
             "the shards' state. The dead letters stay listed (`freshet dlq list`). Stop the "
             "group, then reprocess the topic into a new lake (another --data or "
             "lake.warehouse) with the setting you want, while the log still holds it "
             "(docs/SCALEOUT.md, ADR 0045).",
             g->found, g->pipeline_id, cmd);
}

int fr_maint_is_group(const struct fr_lake *lake, struct fr_maint_group *g)
{
    static const enum fr_tbl where[] = {FR_TBL_BRONZE, FR_TBL_GOLD_EPM};
    for (size_t k = 0; k < sizeof where / sizeof where[0]; k++) {
        struct fr_ice_table *t = NULL;
        int rc = fr_lake_table(lake, fr_tbl_name(where[k]), &t);
        if (rc == FR_ENOTFOUND) {
            continue;
        }
        if (rc < 0) {
            fr_error("maint", "%s: %s %s", fr_tbl_name(where[k]), fr_strerror(rc),
                     fr_ice_errmsg());
            return -1;
        }
        int group = fr_maint_group_marker(t, g);
        fr_ice_table_free(t);
        if (group) {
            return 1;
        }
    }
    return 0;
}

int fr_maint_refuse_group(struct fr_conf *conf, const struct fr_lake *lake, const char *cmd)
{
    struct fr_maint_group g = {.pipeline_id = conf->general_pipeline_id};
    int group = fr_maint_is_group(lake, &g);
    if (group == 1) {
        fr_maint_group_refused(cmd, &g);
    }
    return group ? -1 : 0;
}

const char *fr_maint_summary(const struct fr_ice_snapshot *s, const char *key)
{
    for (uint32_t i = 0; i < s->nsummary; i++) {
        if (strcmp(s->summary[i].key, key) == 0) {
            return s->summary[i].value;
        }
    }
    return NULL;
}

const struct fr_ice_snapshot *fr_maint_marker(const struct fr_ice_table *table,
                                              const char *pipeline, int64_t epoch)
{
    char want[32];
    snprintf(want, sizeof want, "%" PRId64, epoch);
    uint32_t n = 0;
    const struct fr_ice_snapshot *snaps = fr_ice_table_snapshots(table, &n);
    for (uint32_t i = n; i-- > 0;) { /* newest first */
        const char *p = fr_maint_summary(&snaps[i], FR_ICE_SUMMARY_PIPELINE);
        const char *e = fr_maint_summary(&snaps[i], FR_ICE_SUMMARY_EPOCH);
        if (p && e && strcmp(p, pipeline) == 0 && strcmp(e, want) == 0) {
            return &snaps[i];
        }
    }
    return NULL;
}

int fr_maint_rebuilt_after(const struct fr_ice_table *table, const char *pipeline, int64_t after,
                           char *id, size_t idlen, int64_t *epoch)
{
    uint32_t n = 0;
    const struct fr_ice_snapshot *snaps = fr_ice_table_snapshots(table, &n);
    for (uint32_t i = n; i-- > 0;) { /* newest first */
        const char *p = fr_maint_summary(&snaps[i], FR_ICE_SUMMARY_PIPELINE);
        const char *e = fr_maint_summary(&snaps[i], FR_ICE_SUMMARY_EPOCH);
        const char *r = fr_maint_summary(&snaps[i], FR_SUMMARY_REBUILD);
        const char *d = fr_maint_summary(&snaps[i], FR_SUMMARY_DLQ_REPLAY);
        if (!p || !e || (!r && !d) || strcmp(p, pipeline) != 0) {
            continue;
        }
        long long x = strtoll(e, NULL, 10);
        if (x > after) {
            snprintf(id, idlen, "%s %s", r ? "rebuild" : "dlq replay", r ? r : d);
            *epoch = (int64_t)x;
            return 1;
        }
    }
    return 0;
}

void fr_maint_rebuilt_refused(const char *who, const char *pipeline, int64_t epoch,
                              const char *id, int64_t ck_epoch, const char *dir)
{
    fr_error(who,
             "epoch %" PRId64 " of %s was committed by %s (`freshet rebuild` or `freshet dlq "
             "replay` on the group's lake), and the checkpoint in %s is older (epoch %" PRId64
             "): continuing would carry the state from before it. Start from the checkpoint "
             "it wrote: set process.checkpoint_uri (it copied it to the bucket) or copy "
             "%s/checkpoint from the machine it ran on (docs/REBUILD.md, docs/DLQ.md)",
             epoch, pipeline, id, dir, ck_epoch, pipeline);
}

void fr_maint_proc_opts(const struct fr_conf *conf, struct fr_proc_opts *opts)
{
    fr_proc_opts_default(opts);
    opts->lateness_ms = conf->process_lateness_s * 1000;
    opts->gate.max_future_ms = conf->process_max_future_s * 1000;
    opts->gate.max_event_bytes = (size_t)conf->process_max_event_bytes;
}

int fr_maint_group_quiet(const char *who, const char *cmd, const char *doc, const char *newest,
                         int64_t newest_ms, int64_t quiet_s)
{
    int64_t age_ms = fr_wall_ms() - newest_ms;
    if (age_ms >= quiet_s * 1000) {
        return 0;
    }
    fr_error(who,
             "%s committed %.1f s ago: the group is running (or stopped less than --quiet-s "
             "%" PRId64 " s ago). Stop every instance of the group (`freshet process --group`, "
             "its shards and its finalizer, on every machine), then run `freshet %s` again "
             "(%s, \"A consumer group's lake\")",
             newest, (double)age_ms / 1000.0, quiet_s, cmd, doc);
    return -1;
}

int fr_maint_marker_is(const struct fr_lake *lake, enum fr_tbl tbl, const char *pipeline,
                       int64_t epoch, const char *key, const char *value)
{
    struct fr_ice_table *t = NULL;
    int rc = fr_lake_table(lake, fr_tbl_name(tbl), &t);
    const struct fr_ice_snapshot *m = rc == FR_OK ? fr_maint_marker(t, pipeline, epoch) : NULL;
    const char *v = m ? fr_maint_summary(m, key) : NULL;
    rc = rc < 0 ? rc : v && strcmp(v, value) == 0 ? FR_OK : FR_EEXIST;
    fr_ice_table_free(t);
    return rc;
}

int fr_maint_has_marker(const struct fr_lake *lake, enum fr_tbl tbl, const char *key,
                        const char *value)
{
    struct fr_ice_table *table = NULL;
    int rc = fr_lake_table(lake, fr_tbl_name(tbl), &table);
    if (rc == FR_ENOTFOUND) {
        return 0;
    }
    if (rc < 0) {
        return rc;
    }
    uint32_t n;
    const struct fr_ice_snapshot *snaps = fr_ice_table_snapshots(table, &n);
    int found = 0;
    for (uint32_t i = 0; i < n && !found; i++) {
        const char *v = fr_maint_summary(&snaps[i], key);
        found = v && strcmp(v, value) == 0;
    }
    fr_ice_table_free(table);
    return found;
}

int fr_maint_remove_prefixed(const struct fr_lake *lake, enum fr_tbl tbl, const char *prefix,
                             unsigned *removed)
{
    struct fr_ice_table *table = NULL;
    int rc = fr_lake_table(lake, fr_tbl_name(tbl), &table);
    if (rc == FR_ENOTFOUND) {
        return FR_OK;
    }
    if (rc < 0) {
        return rc;
    }
    struct fr_ice_file_list live;
    rc = fr_ice_files(lake->cat, table, -1, false, &live);
    char data[4200];
    snprintf(data, sizeof data, "%s/data", fr_ice_table_dir(table));
    fr_ice_table_free(table);
    if (rc < 0) {
        return rc;
    }
    size_t plen = strlen(prefix);
    DIR *d = opendir(data);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, prefix, plen) != 0) {
            continue;
        }
        char victim[4600];
        snprintf(victim, sizeof victim, "%s/%s", data, e->d_name);
        int is_live = 0;
        for (size_t i = 0; i < live.nfiles && !is_live; i++) {
            is_live = strcmp(live.files[i].local_path, victim) == 0;
        }
        if (is_live) {
            fr_warn("maint", "%s is live in %s: kept", victim, fr_tbl_name(tbl));
        } else if (unlink(victim) == 0) {
            (*removed)++;
        }
    }
    if (d) {
        closedir(d);
    }
    fr_ice_file_list_free(&live);
    return FR_OK;
}

/* ======================================================= log-ordered scan */

/*
 * Spill run file (a private Parquet file under spill_dir, deleted by
 * fr_lscan_free), rows in scan order:
 *
 *   column  id  name           type    meaning
 *   0       1   log_partition  INT32   partition
 *   1       2   log_offset     INT64   offset
 *   2       3   ingest_us      INT64   append time, µs
 *   3       4   raw            STRING  the bytes, or base64 when b64
 *   4       5   b64            BOOL
 *   5       6   tag            STRING  dlq reason, "" for bronze
 *   6       7   detail         STRING  dlq detail, "" for bronze
 */
static const struct fr_pq_column ls_run_cols[] = {
    {"log_partition", FR_PQ_INT32, false, 1},
    {"log_offset", FR_PQ_INT64, false, 2},
    {"ingest_us", FR_PQ_INT64, false, 3},
    {"raw", FR_PQ_STRING, false, 4},
    {"b64", FR_PQ_BOOL, false, 5},
    {"tag", FR_PQ_STRING, false, 6},
    {"detail", FR_PQ_STRING, false, 7},
};
static const struct fr_pq_schema ls_run_schema = {ls_run_cols, 7};
_Static_assert(sizeof ls_run_cols / sizeof ls_run_cols[0] == 7, "seven spill columns");

#define LS_FANIN 32
#define LS_MAX_RUNS 65536

/* A buffered row: header, then raw, tag and detail bytes, in one allocation. */
struct ls_row {
    int64_t ingest_us;
    int64_t offset;
    int32_t partition;
    uint8_t b64;
    uint32_t raw_len, tag_len, detail_len;
    char bytes[];
};

static size_t ls_row_size(const struct ls_row *row)
{
    return sizeof *row + (size_t)row->raw_len + row->tag_len + row->detail_len;
}

struct ls_file {
    char *path;
    int64_t lower; /* lower bound of ingest_time; INT64_MIN when unknown */
    int64_t seq;
};

/* A spilled run being merged. */
struct ls_src {
    struct fr_pq_reader *reader;
    struct fr_pq_scan *scan;
    const struct fr_pq_batch *batch;
    uint32_t at;
    int done;
};

struct fr_lscan {
    struct fr_lscan_opts opts;
    char spill_dir[4096];
    struct ls_file *files;
    size_t nfiles, next_file;
    /* the file being read */
    struct fr_pq_reader *reader;
    struct fr_pq_scan *scan;
    int64_t *rg_floor; /* per row group: least ingest time there or later */
    uint32_t nrg, cur_rg;
    int exhausted;
    /* buffered rows: a binary min-heap on (ingest, partition, offset) */
    struct ls_row **heap;
    size_t nheap, heap_cap, bytes;
    /* spilling and merging */
    int spilling, merging;
    uint32_t runs[LS_MAX_RUNS]; /* live run numbers, oldest first */
    uint32_t run_head, run_tail, run_next;
    struct ls_src srcs[LS_FANIN];
    uint32_t nsrcs;
    int last_src;
    struct ls_row *last;
    struct fr_lscan_stats stats;
};

static int ls_less(const struct ls_row *a, const struct ls_row *b)
{
    if (a->ingest_us != b->ingest_us) {
        return a->ingest_us < b->ingest_us;
    }
    if (a->partition != b->partition) {
        return a->partition < b->partition;
    }
    return a->offset < b->offset;
}

static int ls_push(struct fr_lscan *ls, struct ls_row *row)
{
    if (ls->nheap == ls->heap_cap) {
        size_t cap = ls->heap_cap ? ls->heap_cap * 2 : 1024;
        struct ls_row **heap = realloc(ls->heap, cap * sizeof *heap);
        if (!heap) {
            return FR_ENOMEM;
        }
        ls->heap = heap;
        ls->bytes += (cap - ls->heap_cap) * sizeof *heap;
        ls->heap_cap = cap;
    }
    size_t i = ls->nheap++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!ls_less(row, ls->heap[up])) {
            break;
        }
        ls->heap[i] = ls->heap[up];
        i = up;
    }
    ls->heap[i] = row;
    ls->bytes += ls_row_size(row);
    if (ls->bytes > ls->stats.peak_bytes) {
        ls->stats.peak_bytes = ls->bytes;
    }
    return FR_OK;
}

static struct ls_row *ls_pop(struct fr_lscan *ls)
{
    struct ls_row *top = ls->heap[0];
    struct ls_row *last = ls->heap[--ls->nheap];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1;
        if (l >= ls->nheap) {
            break;
        }
        size_t m = l + 1 < ls->nheap && ls_less(ls->heap[l + 1], ls->heap[l]) ? l + 1 : l;
        if (!ls_less(ls->heap[m], last)) {
            break;
        }
        ls->heap[i] = ls->heap[m];
        i = m;
    }
    if (ls->nheap) {
        ls->heap[i] = last;
    }
    ls->bytes -= ls_row_size(top);
    return top;
}

static int ls_file_cmp(const void *a, const void *b)
{
    const struct ls_file *x = a, *y = b;
    if (x->lower != y->lower) {
        return x->lower < y->lower ? -1 : 1;
    }
    if (x->seq != y->seq) {
        return x->seq < y->seq ? -1 : 1;
    }
    return strcmp(x->path, y->path);
}

/* ingest_time has field id 3 in bronze and in dlq. */
static int64_t ls_lower_bound(const struct fr_ice_file *f)
{
    for (uint32_t i = 0; i < f->nmetrics; i++) {
        const struct fr_ice_col_metrics *m = &f->metrics[i];
        if (m->field_id == 3 && m->lower && m->lower_len == 8) {
            uint64_t v = 0;
            for (int k = 0; k < 8; k++) {
                v |= (uint64_t)m->lower[k] << (8 * k);
            }
            return (int64_t)v;
        }
    }
    return INT64_MIN;
}

int fr_lscan_open(const struct fr_ice_file_list *list, const struct fr_lscan_opts *opts,
                  struct fr_lscan **out)
{
    *out = NULL;
    if (opts->memory_bytes < ((size_t)1 << 20) ||
        (opts->tbl != FR_TBL_BRONZE && opts->tbl != FR_TBL_DLQ) || !opts->spill_dir) {
        return FR_EINVAL;
    }
    struct fr_lscan *ls = calloc(1, sizeof *ls);
    if (!ls) {
        return FR_ENOMEM;
    }
    ls->opts = *opts;
    snprintf(ls->spill_dir, sizeof ls->spill_dir, "%s", opts->spill_dir);
    ls->opts.spill_dir = ls->spill_dir;
    ls->last_src = -1;
    ls->files = calloc(list->nfiles ? list->nfiles : 1, sizeof *ls->files);
    if (!ls->files) {
        free(ls);
        return FR_ENOMEM;
    }
    for (size_t i = 0; i < list->nfiles; i++) {
        ls->files[i].path = strdup(list->files[i].local_path);
        if (!ls->files[i].path) {
            ls->nfiles = i;
            fr_lscan_free(ls);
            return FR_ENOMEM;
        }
        ls->files[i].lower = ls_lower_bound(&list->files[i]);
        ls->files[i].seq = list->files[i].sequence_number;
    }
    ls->nfiles = list->nfiles;
    qsort(ls->files, ls->nfiles, sizeof *ls->files, ls_file_cmp);
    ls->stats.files = (uint32_t)ls->nfiles;
    *out = ls;
    return FR_OK;
}

static void ls_close_file(struct fr_lscan *ls)
{
    fr_pq_scan_free(ls->scan);
    fr_pq_reader_free(ls->reader);
    free(ls->rg_floor);
    ls->scan = NULL;
    ls->reader = NULL;
    ls->rg_floor = NULL;
    ls->nrg = ls->cur_rg = 0;
}

/* Open the next input file: projection p, o, ingest, raw[, raw_base64,
 * reason, detail]. */
static int ls_open_file(struct fr_lscan *ls)
{
    const char *path = ls->files[ls->next_file++].path;
    struct fr_pq_read_opts ropts;
    fr_pq_read_opts_default(&ropts);
    ropts.batch_rows = 1024;
    struct fr_pq_in in;
    int rc = ls->opts.lake ? fr_lake_pq_in(ls->opts.lake, path, &in) : fr_pq_in_file(path, &in);
    if (rc == FR_OK) {
        rc = fr_pq_reader_open(&in, &ropts, &ls->reader);
    }
    if (rc < 0) {
        return rc;
    }
    static const char *const names[] = {"log_partition", "log_offset", "ingest_time", "raw",
                                        "raw_base64",    "reason",     "detail"};
    uint32_t ncols = ls->opts.tbl == FR_TBL_DLQ ? 7 : 4;
    uint32_t cols[7];
    for (uint32_t i = 0; i < ncols; i++) {
        int c = fr_pq_reader_column(ls->reader, names[i]);
        if (c < 0) {
            ls_close_file(ls);
            return FR_ECORRUPT;
        }
        cols[i] = (uint32_t)c;
    }
    ls->nrg = fr_pq_reader_row_groups(ls->reader);
    ls->rg_floor = calloc(ls->nrg ? ls->nrg : 1, sizeof *ls->rg_floor);
    if (!ls->rg_floor) {
        ls_close_file(ls);
        return FR_ENOMEM;
    }
    int64_t floor = INT64_MAX;
    for (uint32_t g = ls->nrg; g-- > 0;) {
        struct fr_pq_chunk_info info;
        int64_t min = INT64_MIN;
        if (fr_pq_reader_chunk(ls->reader, g, cols[2], &info) == FR_OK && info.has_bounds) {
            min = info.min.v.i64;
        }
        floor = min < floor ? min : floor;
        ls->rg_floor[g] = floor;
    }
    ls->cur_rg = 0;
    struct fr_pq_scan_opts sopts = {cols, ncols, NULL, 0};
    rc = fr_pq_scan_open(ls->reader, &sopts, &ls->scan);
    if (rc < 0) {
        ls_close_file(ls);
    }
    return rc;
}

/* The least ingest time an unread input row can have. */
static int64_t ls_floor(const struct fr_lscan *ls)
{
    int64_t floor = ls->next_file < ls->nfiles ? ls->files[ls->next_file].lower : INT64_MAX;
    if (ls->reader && ls->cur_rg < ls->nrg && ls->rg_floor[ls->cur_rg] < floor) {
        floor = ls->rg_floor[ls->cur_rg];
    }
    return floor;
}

/* Read one batch of input into the heap (or note the end of the input). */
static int ls_read(struct fr_lscan *ls)
{
    if (!ls->reader) {
        if (ls->next_file >= ls->nfiles) {
            ls->exhausted = 1;
            return FR_OK;
        }
        return ls_open_file(ls);
    }
    const struct fr_pq_batch *batch;
    int rc = fr_pq_scan_next(ls->scan, &batch);
    if (rc == FR_EEOF) {
        ls_close_file(ls);
        return FR_OK;
    }
    if (rc < 0) {
        return rc;
    }
    ls->cur_rg = batch->row_group;
    const struct fr_pq_vec *c = batch->cols;
    int dlq = ls->opts.tbl == FR_TBL_DLQ;
    for (uint32_t i = 0; i < batch->nrows; i++) {
        if (c[0].nulls[i] || c[1].nulls[i] || c[2].nulls[i]) {
            return FR_ECORRUPT; /* required columns */
        }
        struct fr_pq_str raw = {"", 0}, tag = {"", 0}, detail = {"", 0};
        uint8_t b64 = 0;
        if (!c[3].nulls[i]) {
            raw = c[3].v.str[i];
        } else if (dlq && !c[4].nulls[i]) {
            raw = c[4].v.str[i];
            b64 = 1;
        }
        if (dlq && !c[5].nulls[i]) {
            tag = c[5].v.str[i];
        }
        if (dlq && !c[6].nulls[i]) {
            detail = c[6].v.str[i];
        }
        struct ls_row *row = malloc(sizeof *row + (size_t)raw.len + tag.len + detail.len);
        if (!row) {
            return FR_ENOMEM;
        }
        row->partition = c[0].v.i32[i];
        row->offset = c[1].v.i64[i];
        row->ingest_us = c[2].v.i64[i];
        row->b64 = b64;
        row->raw_len = raw.len;
        row->tag_len = tag.len;
        row->detail_len = detail.len;
        if (detail.len) {
            memcpy(row->bytes + raw.len + tag.len, detail.ptr, detail.len);
        }
        if (raw.len) {
            memcpy(row->bytes, raw.ptr, raw.len);
        }
        if (tag.len) {
            memcpy(row->bytes + raw.len, tag.ptr, tag.len);
        }
        rc = ls_push(ls, row);
        if (rc < 0) {
            free(row);
            return rc;
        }
    }
    return FR_OK;
}

static void ls_run_path(const struct fr_lscan *ls, uint32_t run, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s/run-%06u.parquet", ls->spill_dir, run);
}

static int ls_run_writer(struct fr_lscan *ls, uint32_t *run, struct fr_pq_writer **w)
{
    if (ls->run_tail - ls->run_head >= LS_MAX_RUNS || ls->run_tail >= LS_MAX_RUNS) {
        return FR_ETOOBIG;
    }
    int rc = fr_fs_mkdirs(ls->spill_dir, 0755);
    if (rc < 0) {
        return rc;
    }
    char path[4200];
    *run = ls->run_next++;
    ls_run_path(ls, *run, path, sizeof path);
    struct fr_pq_opts opts;
    fr_pq_opts_default(&opts);
    opts.codec = FR_PQ_ZSTD;
    opts.zstd_level = 1;
    opts.row_group_bytes = (size_t)4 << 20;
    opts.page_bytes = (size_t)256 << 10;
    opts.dict_max_bytes = 0;
    opts.max_value_bytes = RAW_CAP * 2;
    struct fr_pq_out out;
    rc = fr_pq_out_file(path, &out);
    return rc < 0 ? rc : fr_pq_writer_open(&ls_run_schema, &opts, &out, w);
}

static int ls_run_put(struct fr_pq_writer *w, const struct fr_lscan_row *r)
{
    int rc = fr_pq_write_int32(w, 0, r->partition);
    rc = rc ? rc : fr_pq_write_int64(w, 1, r->offset);
    rc = rc ? rc : fr_pq_write_int64(w, 2, r->ingest_us);
    rc = rc ? rc : fr_pq_write_str(w, 3, r->raw, r->raw_len);
    rc = rc ? rc : fr_pq_write_bool(w, 4, r->b64 != 0);
    rc = rc ? rc : fr_pq_write_str(w, 5, r->tag, r->tag_len);
    rc = rc ? rc : fr_pq_write_str(w, 6, r->detail, r->detail_len);
    return rc ? rc : fr_pq_row_end(w);
}

static void ls_row_view(const struct ls_row *r, struct fr_lscan_row *row)
{
    row->partition = r->partition;
    row->offset = r->offset;
    row->ingest_us = r->ingest_us;
    row->raw = r->bytes;
    row->raw_len = r->raw_len;
    row->b64 = r->b64;
    row->tag = r->bytes + r->raw_len;
    row->tag_len = r->tag_len;
    row->detail = r->bytes + r->raw_len + r->tag_len;
    row->detail_len = r->detail_len;
}

/* Write the whole heap, in order, as a new run. */
static int ls_spill(struct fr_lscan *ls)
{
    uint32_t run;
    struct fr_pq_writer *w = NULL;
    int rc = ls_run_writer(ls, &run, &w);
    while (rc == FR_OK && ls->nheap) {
        struct ls_row *row = ls_pop(ls);
        struct fr_lscan_row view;
        ls_row_view(row, &view);
        rc = ls_run_put(w, &view);
        free(row);
    }
    if (rc == FR_OK) {
        rc = fr_pq_writer_close(w, NULL);
    }
    fr_pq_writer_free(w);
    if (rc == FR_OK) {
        ls->runs[ls->run_tail++] = run;
        ls->stats.spilled_runs++;
    }
    return rc;
}

static void ls_src_close(struct ls_src *src)
{
    fr_pq_scan_free(src->scan);
    fr_pq_reader_free(src->reader);
    memset(src, 0, sizeof *src);
}

static int ls_src_fill(struct ls_src *src)
{
    while (!src->done && (!src->batch || src->at >= src->batch->nrows)) {
        int rc = fr_pq_scan_next(src->scan, &src->batch);
        if (rc == FR_EEOF) {
            src->done = 1;
            src->batch = NULL;
            return FR_OK;
        }
        if (rc < 0) {
            return rc;
        }
        src->at = 0;
    }
    return FR_OK;
}

static int ls_src_open(struct fr_lscan *ls, struct ls_src *src, uint32_t run)
{
    char path[4200];
    ls_run_path(ls, run, path, sizeof path);
    memset(src, 0, sizeof *src);
    struct fr_pq_read_opts ropts;
    fr_pq_read_opts_default(&ropts);
    ropts.batch_rows = 256;
    int rc = fr_pq_reader_open_file(path, &ropts, &src->reader);
    if (rc == FR_OK) {
        rc = fr_pq_scan_open(src->reader, NULL, &src->scan);
    }
    if (rc == FR_OK) {
        rc = ls_src_fill(src);
    }
    if (rc < 0) {
        ls_src_close(src);
    }
    return rc;
}

static void ls_src_row(const struct ls_src *src, struct fr_lscan_row *row)
{
    const struct fr_pq_vec *c = src->batch->cols;
    uint32_t i = src->at;
    row->partition = c[0].v.i32[i];
    row->offset = c[1].v.i64[i];
    row->ingest_us = c[2].v.i64[i];
    row->raw = c[3].v.str[i].ptr;
    row->raw_len = c[3].v.str[i].len;
    row->b64 = c[4].v.b[i] != 0;
    row->tag = c[5].v.str[i].ptr;
    row->tag_len = c[5].v.str[i].len;
    row->detail = c[6].v.str[i].ptr;
    row->detail_len = c[6].v.str[i].len;
}

/* The source holding the least row, or -1 when all are done. */
static int ls_src_pick(const struct ls_src *srcs, uint32_t n)
{
    int best = -1;
    struct fr_lscan_row a, b;
    for (uint32_t i = 0; i < n; i++) {
        if (srcs[i].done) {
            continue;
        }
        ls_src_row(&srcs[i], &a);
        if (best >= 0) {
            ls_src_row(&srcs[best], &b);
            if (a.ingest_us > b.ingest_us ||
                (a.ingest_us == b.ingest_us &&
                 (a.partition > b.partition ||
                  (a.partition == b.partition && a.offset >= b.offset)))) {
                continue;
            }
        }
        best = (int)i;
    }
    return best;
}

static void ls_remove_run(struct fr_lscan *ls, uint32_t run)
{
    char path[4200];
    ls_run_path(ls, run, path, sizeof path);
    unlink(path);
}

/* Open the oldest runs (at most LS_FANIN) as merge sources. */
static int ls_merge_open(struct fr_lscan *ls)
{
    ls->nsrcs = 0;
    while (ls->nsrcs < LS_FANIN && ls->run_head < ls->run_tail) {
        int rc = ls_src_open(ls, &ls->srcs[ls->nsrcs], ls->runs[ls->run_head]);
        if (rc < 0) {
            return rc;
        }
        ls->nsrcs++;
        ls->run_head++;
    }
    return FR_OK;
}

static void ls_merge_close(struct fr_lscan *ls, uint32_t first_run_index)
{
    for (uint32_t i = 0; i < ls->nsrcs; i++) {
        ls_src_close(&ls->srcs[i]);
        ls_remove_run(ls, ls->runs[first_run_index + i]);
    }
    ls->nsrcs = 0;
}

/* Merge runs LS_FANIN at a time into new runs until LS_FANIN or fewer are
 * left, then open those for the final merge. */
static int ls_merge_start(struct fr_lscan *ls)
{
    while (ls->run_tail - ls->run_head > LS_FANIN) {
        uint32_t first = ls->run_head;
        uint32_t run;
        struct fr_pq_writer *w = NULL;
        int rc = ls_merge_open(ls);
        if (rc == FR_OK) {
            rc = ls_run_writer(ls, &run, &w);
        }
        for (int i; rc == FR_OK && (i = ls_src_pick(ls->srcs, ls->nsrcs)) >= 0;) {
            struct fr_lscan_row r;
            ls_src_row(&ls->srcs[i], &r);
            rc = ls_run_put(w, &r);
            ls->srcs[i].at++;
            if (rc == FR_OK) {
                rc = ls_src_fill(&ls->srcs[i]);
            }
        }
        if (rc == FR_OK) {
            rc = fr_pq_writer_close(w, NULL);
        }
        fr_pq_writer_free(w);
        ls_merge_close(ls, first);
        if (rc < 0) {
            return rc;
        }
        ls->runs[ls->run_tail++] = run;
    }
    ls->merging = 1;
    return ls_merge_open(ls);
}

int fr_lscan_next(struct fr_lscan *ls, struct fr_lscan_row *row)
{
    free(ls->last);
    ls->last = NULL;
    int rc;
    for (;;) {
        if (ls->merging) {
            if (ls->last_src >= 0) {
                ls->srcs[ls->last_src].at++;
                rc = ls_src_fill(&ls->srcs[ls->last_src]);
                ls->last_src = -1;
                if (rc < 0) {
                    return rc;
                }
            }
            int i = ls_src_pick(ls->srcs, ls->nsrcs);
            if (i < 0) {
                return 0;
            }
            ls_src_row(&ls->srcs[i], row);
            ls->last_src = i;
            ls->stats.rows++;
            return 1;
        }
        if (!ls->spilling && ls->nheap &&
            (ls->exhausted || ls->heap[0]->ingest_us < ls_floor(ls))) {
            ls->last = ls_pop(ls);
            ls_row_view(ls->last, row);
            ls->stats.rows++;
            return 1;
        }
        if (ls->exhausted) {
            if (!ls->spilling) {
                return 0;
            }
            rc = ls->nheap ? ls_spill(ls) : FR_OK;
            if (rc == FR_OK) {
                rc = ls_merge_start(ls);
            }
            if (rc < 0) {
                return rc;
            }
            continue;
        }
        rc = ls_read(ls);
        if (rc < 0) {
            return rc;
        }
        if (ls->bytes > ls->opts.memory_bytes) {
            if (!ls->spilling) {
                fr_info("maint",
                        "overlapping files hold more than the memory budget: "
                        "sorting through run files in %s",
                        ls->spill_dir);
            }
            ls->spilling = 1;
            rc = ls_spill(ls);
            if (rc < 0) {
                return rc;
            }
        }
    }
}

void fr_lscan_stats(const struct fr_lscan *ls, struct fr_lscan_stats *stats)
{
    *stats = ls->stats;
}

void fr_lscan_free(struct fr_lscan *ls)
{
    if (!ls) {
        return;
    }
    free(ls->last);
    ls_close_file(ls);
    for (uint32_t i = 0; i < ls->nsrcs; i++) {
        ls_src_close(&ls->srcs[i]);
    }
    for (uint32_t i = 0; i < ls->run_next; i++) {
        ls_remove_run(ls, i);
    }
    if (ls->run_next) {
        rmdir(ls->spill_dir);
    }
    while (ls->nheap) {
        free(ls_pop(ls));
    }
    free(ls->heap);
    for (size_t i = 0; i < ls->nfiles; i++) {
        free(ls->files[i].path);
    }
    free(ls->files);
    free(ls);
}
/* Table maintenance by the processor itself, between epochs (after the
 * checkpoint): compaction of small data files, then snapshot expiry. Done
 * here it never races this process's commits, and what each commit
 * rewrites stays bounded: without it a table's metadata lists every
 * snapshot ever made and its manifests every small file, and commit cost
 * grows with the table's age (docs/BENCHMARKS.md, the soak). Compaction
 * commits replace snapshots (no epoch marker); expiry always keeps the
 * newest epoch marker (fr_ice_expire). A failure is reported and left to
 * the next round or to `freshet compact`: the epoch is already safe. */
void fr_maint_tables(struct fr_lake *lake, const struct fr_conf *conf,
                     const uint8_t want[FR_TBL_EVERY], int64_t older_than_ms,
                     struct fr_maint_round *round)
{
    int64_t t0 = fr_mono_ms();
    int64_t cutoff = older_than_ms;
    /* Orphans: a listing of each table's prefix, so not every round. A
     * file younger than orphans_after_s may belong to an epoch in flight
     * (a shard writes its files before its commit names them). */
    int64_t now = fr_wall_ms(), orphan_age_ms = conf->maintenance_orphans_after_s * 1000;
    bool orphans = round && now - round->orphans_ms >= orphan_age_ms / 2;
    if (orphans) {
        round->orphans_ms = now;
    }
    /* The budget: no epoch is cut while a round runs, and on an object
     * store a whole round took minutes (docs/BENCHMARKS.md). Past it no
     * step starts (a bin, an expiry, an orphan scan); the next round goes
     * on from the table this one stopped at. */
    int64_t deadline = conf->process_maintain_budget_ms > 0
                           ? t0 + conf->process_maintain_budget_ms
                           : 0;
    int first = round && round->next_table > 0 && round->next_table < FR_TBL_EVERY
                    ? round->next_table
                    : 0;
    /* the table a round cut short after its compaction: its expiry first
     * (not its compaction again: that one can use the budget up every
     * round, and the tables after it would never get their turn) */
    int expire_first = round && round->next_expire && round->next_table == first;
    int stopped_at = -1, stopped_expire = 0, worked = 0;
    /* Size tiers (fr_ice_compact_opts_stream, ADR 0020): a merged file is
     * read again only once enough files of its size exist, so a round's
     * cost and the live file count do not grow with the table's age. */
    struct fr_ice_compact_opts copts;
    fr_ice_compact_opts_stream(conf->process_compact_target_bytes, &copts);
    /* Small row groups: compaction runs inside the live processor, whose
     * memory they bound. The writer's default of 128 MiB held a whole
     * bronze merge, 20-40 MB of raw JSON, at once; 8 MiB (the epoch files'
     * process.row_group_bytes) still let every column's chunk buffer and
     * dictionary grow with the row group, and readers of the output then
     * hold those dictionaries too: a round raised RSS by ~30 MB. At 1 MiB
     * the rise was ~4 MB for ~1 % larger files (docs/BENCHMARKS.md,
     * session 7), but late rounds, once the state and the snapshot
     * history are full, still passed 32 MB; 512 KiB (the default since
     * session 9) keeps them under it for ~2-3 % larger files. */
    copts.row_group_bytes = (size_t)conf->process_compact_row_group_bytes;
    /* The rest of the writer's and reader's buffers follow the row group:
     * with the writer's 1 MiB pages a column's page of values and the
     * compression scratch were 1-2 MiB each, and so were the reader's
     * 4,096-row batches of bronze's raw JSON. Pages of half the row group,
     * dictionaries of a quarter and 1,024-row batches take 1-2 MB off a
     * round for ~2 % more compacted bronze bytes (256 KiB pages: no less
     * memory, +5 %; docs/BENCHMARKS.md, issue 5's live RSS). */
    copts.page_bytes = copts.row_group_bytes / 2 > MAINT_MIN_PAGE ? copts.row_group_bytes / 2
                                                                  : MAINT_MIN_PAGE;
    copts.dict_max_bytes = copts.page_bytes / 2;
    copts.read_batch_rows = 1024;
    copts.deadline_ms = deadline;
    uint32_t before = 0, after = 0, inputs = 0, outputs = 0, snaps = 0, files = 0, orphaned = 0;
    uint32_t deferred = 0;
    int64_t bytes_in = 0;
    for (int i = 0; i < FR_TBL_EVERY; i++) {
        int t = (first + i) % FR_TBL_EVERY;
        if (!want[t]) {
            continue;
        }
        if (deadline && worked && fr_mono_ms() >= deadline) {
            stopped_at = t;
            break;
        }
        const char *name = fr_tbl_name(t);
        int64_t t_table = fr_mono_ms();
        struct fr_ice_compact_stats cs = {0};
        struct fr_ice_expire_stats es = {0};
        int rc = FR_OK;
        if (!(i == 0 && expire_first)) {
            /* the round's first step starts at least one bin, whatever the
             * budget: a round that cannot finish one would never end one */
            copts.first_bin_always = !worked;
            rc = fr_lake_compact(lake, FR_NS, name, &copts, &cs);
            worked = 1;
            deferred += cs.deferred;
            if (rc < 0) {
                fr_warn("process", "compacting %s: %s %s", name, fr_strerror(rc), fr_ice_errmsg());
            }
            before += cs.files_before;
            after += cs.files_after;
            inputs += cs.inputs;
            outputs += cs.groups;
            bytes_in += cs.bytes_in;
            if (deadline && fr_mono_ms() >= deadline) {
                stopped_at = t; /* this table's expiry and the rest next round */
                stopped_expire = 1;
                break;
            }
        }
        worked = 1;
        rc = fr_lake_expire(lake, FR_NS, name, cutoff, (uint32_t)conf->maintenance_retain_last,
                            &es);
        if (rc < 0) {
            fr_warn("process", "expiring snapshots of %s: %s %s", name, fr_strerror(rc),
                    fr_ice_errmsg());
        }
        snaps += es.snapshots_expired;
        files += es.files_deleted;
        struct fr_ice_orphan_stats os = {0};
        if (orphans) {
            rc = fr_lake_remove_orphans(lake, FR_NS, name, now - orphan_age_ms, false, &os);
            if (rc < 0) {
                fr_warn("process", "removing orphan files of %s: %s %s", name, fr_strerror(rc),
                        fr_ice_errmsg());
            }
            orphaned += os.removed;
        }
        fr_debug("process",
                 "maintenance of %s: %u files compacted into %u, %u snapshots expired "
                 "(scan held %zu KiB) in %" PRId64 " ms",
                 name, cs.inputs, cs.groups, es.snapshots_expired, es.scratch_peak_bytes / 1024,
                 fr_mono_ms() - t_table);
        /* The round's buffers are freed now, but in the heap they stay
         * resident until a trim: without this the next table's (or the
         * next epoch's) differently sized buffers add to them. */
        if (cs.groups) {
            fr_mem_trim_now();
        }
    }
    fr_info("process",
            "maintenance: %u files (%" PRId64 " KiB) compacted into %u, live files %u -> %u, "
            "%u snapshots expired, %u files deleted, %u orphans removed%s in %" PRId64 " ms%s%s%s",
            inputs, bytes_in / 1024, outputs, before, after, snaps, files, orphaned,
            orphans ? "" : " (not looked for this round)", fr_mono_ms() - t0,
            stopped_at >= 0 || deferred ? "; budget spent, the next round goes on from " : "",
            stopped_at >= 0 && stopped_expire ? "the expiry of " : "",
            stopped_at >= 0 ? fr_tbl_name(stopped_at) : deferred ? "the bins left" : "");
    if (round) {
        round->next_table = stopped_at >= 0 ? stopped_at : 0;
        round->next_expire = stopped_at >= 0 && stopped_expire;
    }
}

