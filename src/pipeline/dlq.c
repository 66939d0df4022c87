/*
 * dlq.c — `freshet dlq list` (dead letters by reason, with samples) and
 * `freshet dlq replay` (dead letters the current rules accept, landed
 * exactly once); the rules are in docs/DLQ.md, the choice of a
 * dlq_replays table in docs/adr/0008-dlq-replay.md.
 *
 * A replayed record arrives when it is replayed: it goes through the
 * gate and then the live operator state from the processor checkpoint,
 * exactly as if the log had delivered it after the last committed epoch,
 * keeping its original log position and ingest time. It lands in bronze,
 * and in silver, late_arrivals or (as a duplicate) nowhere else, as
 * fr_proc decides; gold windows it settles are emitted with it. Each
 * landed record gets a row in wiki.dlq_replays, committed in the same
 * catalog transaction; a dead letter with a dlq_replays row is never
 * replayed again. Records the gate still rejects are counted and left.
 *
 * A replay, as a state machine (<dir> is the checkpoint directory):
 *
 *   LOCK ──► RECOVER ──► CHECK ──► INTENT(writing) ──► REPLAY ──► FILES
 *                                                                   │
 *        DONE ◄── CLEAN ◄── INSTALL ◄── COMMIT ◄── INTENT(staged) ◄─ STAGE
 *
 *   INTENT   <dir>/dlq-replay/intent names the replay id and phase
 *   STAGE    <dir>/dlq-replay/checkpoint: the checkpoint the replay
 *            leaves (same epoch and offsets, the new operator state)
 *   staged   the intent also records the CRC of the state it replaces
 *   COMMIT   ONE catalog transaction: appends to bronze, silver,
 *            late_arrivals, gold and dlq_replays, summary
 *            freshet.dlq-replay=<id>, no epoch marker (with a REST
 *            catalog one POST /transactions/commit, maint_rest.c; an
 *            unknown outcome stops here with files and intent kept, and
 *            the rerun's recovery below decides)
 *   INSTALL  the staged checkpoint replaces <dir>/checkpoint
 *   CLEAN    intent and staged checkpoint removed
 *
 * Crashes (fr_dlq_recover, run first by every replay and rebuild):
 *   - intent absent: nothing in flight (a stray staged file is removed);
 *   - no snapshot carries freshet.dlq-replay=<id>: the commit never
 *     landed; the replay's data files are removed, as if it never ran;
 *   - it landed and the checkpoint still holds the state the intent
 *     names: INSTALL and CLEAN are finished;
 *   - it landed and the checkpoint moved on without it (a processor ran
 *     in between): reported; `freshet rebuild` recomputes the state.
 * So each dead letter lands at most once (dlq_replays is committed with
 * the rows) and, after a rerun, at least once.
 *
 * One thread; holds the pipeline lock while replaying. `dlq list` only
 * reads and takes no lock.
 */
#include "pipeline/maint.h"

#include "pipeline/lake.h"

#include "core/clock.h"
#include "core/crc32c.h"
#include "core/diag.h"
#include "core/err.h"
#include "core/fsutil.h"
#include "core/progress.h"
#include "process/process.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STATE_CAP ((size_t)1 << 30)
#define RAW_CAP ((size_t)128 << 20)
#define DONE_MAX_KEYS ((size_t)1 << 24) /* replayed positions held: 128 MiB */
#define SAMPLES_MAX 1000
#define SAMPLE_RAW 200
#define REASONS_MAX 64
#define DLQ_MEMORY ((size_t)64 << 20)

/* ================================================================ helpers */

/* A log position as one sortable key (partitions < 256, offsets < 2^56). */
static uint64_t pos_key(int32_t partition, int64_t offset)
{
    return (uint64_t)(uint32_t)partition << 56 | ((uint64_t)offset & ((UINT64_C(1) << 56) - 1));
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The positions dlq_replays holds, sorted; optional counts by reason. */
struct done_set {
    uint64_t *keys;
    size_t n, cap;
    char reasons[REASONS_MAX][40];
    uint64_t counts[REASONS_MAX];
    uint32_t nreasons;
};

static int done_has(const struct done_set *d, uint64_t key)
{
    return d->n && bsearch(&key, d->keys, d->n, sizeof key, u64_cmp) != NULL;
}

static void done_count(struct done_set *d, const char *reason, size_t len)
{
    uint32_t i;
    for (i = 0; i < d->nreasons; i++) {
        if (strlen(d->reasons[i]) == len && memcmp(d->reasons[i], reason, len) == 0) {
            break;
        }
    }
    if (i == d->nreasons) {
        if (d->nreasons == REASONS_MAX || len >= sizeof d->reasons[0]) {
            return;
        }
        memcpy(d->reasons[i], reason, len);
        d->reasons[i][len] = 0;
        d->nreasons++;
    }
    d->counts[i]++;
}

static uint64_t done_reason(const struct done_set *d, const char *reason)
{
    for (uint32_t i = 0; i < d->nreasons; i++) {
        if (strcmp(d->reasons[i], reason) == 0) {
            return d->counts[i];
        }
    }
    return 0;
}

static int done_load(const struct fr_lake *lake, struct done_set *d)
{
    struct fr_ice_catalog *cat = lake->cat;
    memset(d, 0, sizeof *d);
    struct fr_ice_table *table = NULL;
    int rc = fr_lake_table(lake, fr_tbl_name(FR_TBL_DLQ_REPLAYS), &table);
    if (rc == FR_ENOTFOUND) {
        return FR_OK; /* never replayed */
    }
    if (rc < 0) {
        return rc;
    }
    struct fr_ice_file_list list;
    rc = fr_ice_files(cat, table, -1, true, &list);
    fr_ice_table_free(table);
    if (rc < 0) {
        return rc;
    }
    if ((uint64_t)list.total_records > DONE_MAX_KEYS) {
        fr_error("dlq",
                 "dlq_replays holds %" PRId64 " rows, more than the %zu this command "
                 "keeps in memory",
                 list.total_records, DONE_MAX_KEYS);
        fr_ice_file_list_free(&list);
        return FR_ETOOBIG;
    }
    d->cap = list.total_records > 0 ? (size_t)list.total_records : 1;
    d->keys = malloc(d->cap * sizeof *d->keys);
    rc = d->keys ? FR_OK : FR_ENOMEM;
    for (size_t f = 0; rc == FR_OK && f < list.nfiles; f++) {
        struct fr_pq_reader *reader = NULL;
        struct fr_pq_scan *scan = NULL;
        struct fr_pq_in in;
        rc = fr_lake_pq_in(lake, list.files[f].local_path, &in);
        if (rc == FR_OK) {
            rc = fr_pq_reader_open(&in, NULL, &reader);
        }
        int cp = rc ? -1 : fr_pq_reader_column(reader, "log_partition");
        int co = rc ? -1 : fr_pq_reader_column(reader, "log_offset");
        int cr = rc ? -1 : fr_pq_reader_column(reader, "reason");
        if (rc == FR_OK && (cp < 0 || co < 0 || cr < 0)) {
            rc = FR_ECORRUPT;
        }
        uint32_t cols[3] = {(uint32_t)cp, (uint32_t)co, (uint32_t)cr};
        struct fr_pq_scan_opts sopts = {cols, 3, NULL, 0};
        if (rc == FR_OK) {
            rc = fr_pq_scan_open(reader, &sopts, &scan);
        }
        const struct fr_pq_batch *b;
        while (rc == FR_OK && (rc = fr_pq_scan_next(scan, &b)) == FR_OK) {
            for (uint32_t i = 0; i < b->nrows && rc == FR_OK; i++) {
                if (d->n == d->cap) {
                    rc = FR_ECORRUPT; /* more rows than the manifests say */
                    break;
                }
                d->keys[d->n++] = pos_key(b->cols[0].v.i32[i], b->cols[1].v.i64[i]);
                done_count(d, b->cols[2].v.str[i].ptr, b->cols[2].v.str[i].len);
            }
        }
        if (rc == FR_EEOF) {
            rc = FR_OK;
        }
        fr_pq_scan_free(scan);
        fr_pq_reader_free(reader);
    }
    fr_ice_file_list_free(&list);
    if (rc == FR_OK) {
        qsort(d->keys, d->n, sizeof *d->keys, u64_cmp);
    }
    return rc;
}

static void done_free(struct done_set *d)
{
    free(d->keys);
}

static uint32_t crc_of(const struct fr_buf *state)
{
    return fr_crc32c(0, state->data, state->len);
}

/* ================================================================ recovery */

struct intent {
    char id[32];
    char phase[16];
    uint32_t base_crc;
    uint64_t base_len;
};

static void intent_path(const char *dir, const char *name, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s/dlq-replay%s%s", dir, name[0] ? "/" : "", name);
}

/* FR_OK, FR_ENOTFOUND when there is no intent, FR_ECORRUPT. */
static int intent_read(const char *dir, struct intent *in)
{
    char path[4200];
    intent_path(dir, "intent", path, sizeof path);
    struct fr_buf b;
    fr_buf_init(&b, 4096);
    int rc = fr_fs_read_file(path, &b);
    if (rc < 0) {
        fr_buf_free(&b);
        return rc;
    }
    memset(in, 0, sizeof *in);
    const char *text = fr_buf_cstr(&b);
    rc = text && sscanf(text, "id %31s phase %15s base %" SCNx32 " %" SCNu64, in->id, in->phase,
                        &in->base_crc, &in->base_len) == 4
             ? FR_OK
             : FR_ECORRUPT;
    fr_buf_free(&b);
    return rc;
}

static int intent_write(const char *dir, const struct intent *in)
{
    char path[4200], text[160];
    intent_path(dir, "", path, sizeof path);
    int rc = fr_fs_mkdirs(path, 0755);
    if (rc < 0) {
        return rc;
    }
    intent_path(dir, "intent", path, sizeof path);
    int n = snprintf(text, sizeof text, "id %s\nphase %s\nbase %08" PRIx32 " %" PRIu64 "\n", in->id,
                     in->phase, in->base_crc, in->base_len);
    return fr_fs_write_atomic(path, text, (size_t)n);
}

static void intent_clear(const char *dir)
{
    char path[4200];
    intent_path(dir, "checkpoint", path, sizeof path);
    unlink(path);
    intent_path(dir, "intent", path, sizeof path);
    unlink(path);
    intent_path(dir, "", path, sizeof path);
    rmdir(path);
}

/* Remove the data files replay id wrote into any table (they are named
 * "<pipeline>-replay-<id>.parquet", temporary names after that). The
 * crashed replay is always the newest (replays hold the lock and recover
 * first), so its snapshot would be dlq_replays' current one: none of its
 * files can be live, and fr_maint_remove_prefixed keeps any that is. */
static unsigned remove_replay_files(struct fr_conf *conf, const struct fr_lake *lake,
                                    const char *id)
{
    char prefix[256];
    snprintf(prefix, sizeof prefix, "%s-replay-%s.", conf->general_pipeline_id, id);
    unsigned removed = 0;
    for (int t = 0; t < FR_TBL_ALL; t++) {
        if (fr_maint_remove_prefixed(lake, (enum fr_tbl)t, prefix, &removed) < 0) {
            fr_warn("dlq",
                    "%s: cannot list its files (%s); the crashed replay's files there "
                    "stay until `freshet compact` removes orphans",
                    fr_tbl_name((enum fr_tbl)t), fr_ice_errmsg());
        }
    }
    return removed;
}

int fr_dlq_recover(struct fr_conf *conf, const char *dir, const struct fr_lake *lake,
                   int for_rebuild)
{
    const char *who = for_rebuild ? "rebuild" : "dlq";
    struct intent in;
    int rc = intent_read(dir, &in);
    if (rc == FR_ENOTFOUND) {
        intent_clear(dir); /* a staged checkpoint without an intent: never committed */
        return FR_OK;
    }
    if (rc < 0) {
        fr_error(who,
                 "%s/dlq-replay/intent is damaged (%s): remove it only if no replay's "
                 "commit carries its id",
                 dir, fr_strerror(rc));
        return rc;
    }
    int landed = fr_maint_has_marker(lake, FR_TBL_DLQ_REPLAYS, FR_SUMMARY_DLQ_REPLAY, in.id);
    if (landed < 0) {
        fr_error(who, "cannot read dlq_replays: %s %s", fr_strerror(landed), fr_ice_errmsg());
        return landed;
    }
    if (!landed) {
        unsigned n = remove_replay_files(conf, lake, in.id);
        fr_info(who, "dlq replay %s stopped before its commit: undone (%u files removed)", in.id,
                n);
        intent_clear(dir);
        return FR_OK;
    }
    if (for_rebuild) {
        fr_info(who,
                "dlq replay %s landed before it could install its checkpoint; the "
                "rebuild recomputes the operator state",
                in.id);
        intent_clear(dir);
        return FR_OK;
    }
    struct fr_ck ck, staged;
    fr_buf_init(&ck.state, STATE_CAP);
    fr_buf_init(&staged.state, STATE_CAP);
    char sdir[4200];
    intent_path(dir, "", sdir, sizeof sdir);
    rc = fr_ck_load(dir, &ck);
    if (rc == FR_OK) {
        rc = fr_ck_load(sdir, &staged);
    }
    if (rc < 0) {
        fr_error(who, "dlq replay %s landed but its checkpoint cannot be finished: %s", in.id,
                 fr_strerror(rc));
    } else if (crc_of(&ck.state) == in.base_crc && ck.state.len == in.base_len &&
               ck.epoch == staged.epoch) {
        rc = fr_ck_save(dir, &staged);
        if (rc == FR_OK) {
            fr_info(who, "dlq replay %s had landed: its checkpoint is now installed", in.id);
        }
    } else if (ck.state.len == staged.state.len && ck.epoch == staged.epoch &&
               memcmp(ck.state.data, staged.state.data, ck.state.len) == 0) {
        rc = FR_OK; /* installed; only the clean-up was missing */
    } else {
        fr_error(who,
                 "dlq replay %s landed, but the processor checkpoint moved on without its "
                 "operator state (a processor ran before the replay was finished); run "
                 "`freshet rebuild` to recompute the state",
                 in.id);
        rc = FR_ESTATE;
    }
    if (rc == FR_OK) {
        intent_clear(dir);
    }
    fr_buf_free(&ck.state);
    fr_buf_free(&staged.state);
    return rc;
}

/* ==================================================================== list */

struct sample {
    int32_t partition;
    int64_t offset;
    int64_t ingest_us;
    uint32_t raw_len;
    int b64;
    int replayed;
    char detail[FR_GATE_DETAIL_MAX * 2];
    uint8_t head[SAMPLE_RAW];
    uint32_t head_len;
};

struct reason_count {
    char name[40];
    uint64_t count;
    uint32_t nsamples;
    struct sample *samples;
};

/* The first bytes of a dead letter, for showing: decoded when base64. */
static void sample_head(struct sample *s, const struct fr_lscan_row *lr)
{
    s->head_len = 0;
    if (!lr->b64) {
        uint32_t n = lr->raw_len < SAMPLE_RAW ? lr->raw_len : SAMPLE_RAW;
        /* cut at a UTF-8 character boundary */
        while (n > 0 && n < lr->raw_len && ((unsigned char)lr->raw[n] & 0xC0) == 0x80) {
            n--;
        }
        memcpy(s->head, lr->raw, n);
        s->head_len = n;
        s->raw_len = lr->raw_len;
        return;
    }
    struct fr_buf b;
    fr_buf_init(&b, RAW_CAP);
    size_t take = lr->raw_len < 4 * (SAMPLE_RAW / 3 + 1) ? lr->raw_len : 4 * (SAMPLE_RAW / 3 + 1);
    if (fr_maint_unbase64(lr->raw, take - take % 4, &b) == FR_OK) {
        s->head_len = b.len < SAMPLE_RAW ? (uint32_t)b.len : SAMPLE_RAW;
        memcpy(s->head, b.data, s->head_len);
    }
    fr_buf_free(&b);
    uint32_t pad = 0;
    for (uint32_t i = lr->raw_len; i > 0 && pad < 2 && lr->raw[i - 1] == '='; i--) {
        pad++;
    }
    s->raw_len = lr->raw_len / 4 * 3 - (lr->raw_len >= 4 ? pad : 0);
}

/* Bytes for a terminal or a JSON string: UTF-8 text as is (control bytes
 * escaped); binary bytes as \xNN. */
static void put_escaped(struct fr_buf *out, const uint8_t *p, size_t n, int binary)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        if (c == '\\') {
            fr_buf_puts(out, "\\\\");
        } else if (c < 0x20 || c == 0x7f || (binary && c >= 0x80)) {
            fr_buf_printf(out, "\\x%02x", c);
        } else {
            fr_buf_putc(out, c);
        }
    }
}

static int reason_cmp(const void *a, const void *b)
{
    const struct reason_count *x = a, *y = b;
    if (x->count != y->count) {
        return x->count > y->count ? -1 : 1;
    }
    return strcmp(x->name, y->name);
}

static void list_usage(FILE *out)
{
    fprintf(out,
            "usage: freshet dlq list [--json] [--samples N] [--reason R]...\n\n"
            "Dead letters (table wiki.dlq) by reason, with how many a replay has landed and\n"
            "the first N of each in log order (default 3, at most %d): log position, ingest\n"
            "time, the gate's detail and the first %d bytes of the record. Read-only: it\n"
            "runs beside a live pipeline. Reasons: docs/QUALITY.md.\n"
            "  --json        one JSON object (docs/DLQ.md)\n"
            "  --samples N   samples per reason, 0..%d\n"
            "  --reason R    only this reason (repeatable)\n",
            SAMPLES_MAX, SAMPLE_RAW, SAMPLES_MAX);
}

static int reason_selected(char **reasons, int nreasons, const char *name, size_t len)
{
    if (nreasons == 0) {
        return 1;
    }
    for (int i = 0; i < nreasons; i++) {
        if (strlen(reasons[i]) == len && memcmp(reasons[i], name, len) == 0) {
            return 1;
        }
    }
    return 0;
}

static void list_text(FILE *out, struct reason_count *rs, uint32_t nr, const struct done_set *d,
                      uint64_t total)
{
    uint64_t replayed = 0;
    for (uint32_t i = 0; i < nr; i++) {
        replayed += done_reason(d, rs[i].name);
    }
    fprintf(out, "dlq: %" PRIu64 " dead letters, %" PRIu64 " of them replayed\n", total, replayed);
    if (nr) {
        fprintf(out, "  %-20s %10s %10s\n", "reason", "count", "replayed");
    }
    for (uint32_t i = 0; i < nr; i++) {
        fprintf(out, "  %-20s %10" PRIu64 " %10" PRIu64 "\n", rs[i].name, rs[i].count,
                done_reason(d, rs[i].name));
    }
    struct fr_buf b;
    fr_buf_init(&b, 4096);
    for (uint32_t i = 0; i < nr; i++) {
        if (!rs[i].nsamples) {
            continue;
        }
        fprintf(out, "\n%s:\n", rs[i].name);
        for (uint32_t k = 0; k < rs[i].nsamples; k++) {
            const struct sample *s = &rs[i].samples[k];
            char when[32];
            fr_time_format_ms(s->ingest_us, when);
            fprintf(out, "  %d:%" PRId64 "  %s  %s%s\n", s->partition, s->offset, when, s->detail,
                    s->replayed ? "  (replayed)" : "");
            fr_buf_reset(&b);
            put_escaped(&b, s->head, s->head_len, s->b64);
            fprintf(out, "    %.*s%s  (%" PRIu32 " bytes%s)\n", (int)b.len, (const char *)b.data,
                    s->head_len < s->raw_len ? "..." : "", s->raw_len, s->b64 ? ", not UTF-8" : "");
        }
    }
    fr_buf_free(&b);
}

static void list_json(FILE *out, struct reason_count *rs, uint32_t nr, const struct done_set *d,
                      uint64_t total, int64_t snapshot_id)
{
    uint64_t replayed = 0;
    for (uint32_t i = 0; i < nr; i++) {
        replayed += done_reason(d, rs[i].name);
    }
    fprintf(out,
            "{\"table\":\"%s.%s\",\"snapshot_id\":%" PRId64 ",\"total\":%" PRIu64
            ",\"replayed\":%" PRIu64 ",\"reasons\":[",
            FR_NS, fr_tbl_name(FR_TBL_DLQ), snapshot_id, total, replayed);
    struct fr_buf b;
    fr_buf_init(&b, 65536);
    for (uint32_t i = 0; i < nr; i++) {
        fprintf(out,
                "%s{\"reason\":\"%s\",\"count\":%" PRIu64 ",\"replayed\":%" PRIu64 ",\"samples\":[",
                i ? "," : "", rs[i].name, rs[i].count, done_reason(d, rs[i].name));
        for (uint32_t k = 0; k < rs[i].nsamples; k++) {
            const struct sample *s = &rs[i].samples[k];
            char when[32];
            fr_time_format_ms(s->ingest_us, when);
            fr_buf_reset(&b);
            fr_buf_json_str(&b, s->detail, strlen(s->detail));
            fr_buf_puts(&b, ",\"raw_head\":");
            if (s->b64) {
                struct fr_buf esc;
                fr_buf_init(&esc, 4096);
                put_escaped(&esc, s->head, s->head_len, 1);
                fr_buf_json_str(&b, (const char *)esc.data, esc.len);
                fr_buf_free(&esc);
            } else {
                fr_buf_json_str(&b, (const char *)s->head, s->head_len);
            }
            fprintf(out,
                    "%s{\"log_partition\":%d,\"log_offset\":%" PRId64
                    ",\"ingest_time\":\"%s\",\"replayed\":%s,\"raw_bytes\":%" PRIu32
                    ",\"raw_encoding\":\"%s\",\"detail\":%.*s}",
                    k ? "," : "", s->partition, s->offset, when, s->replayed ? "true" : "false",
                    s->raw_len, s->b64 ? "escaped" : "utf-8", (int)b.len, (const char *)b.data);
        }
        fprintf(out, "]}");
    }
    fprintf(out, "]}\n");
    fr_buf_free(&b);
}

static int dlq_list(struct fr_conf *conf, int argc, char **argv)
{
    static const struct option opts[] = {{"json", no_argument, 0, 'j'},
                                         {"samples", required_argument, 0, 'n'},
                                         {"reason", required_argument, 0, 'r'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int json = 0;
    long samples = 3;
    char **reasons = calloc((size_t)argc + 1, sizeof *reasons);
    int nreasons = 0;
    int c;
    char *end;
    int status = 2;
    if (!reasons) {
        return 1;
    }
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            json = 1;
            break;
        case 'n':
            samples = strtol(optarg, &end, 10);
            if (*end || samples < 0 || samples > SAMPLES_MAX) {
                fprintf(stderr, "freshet dlq list: --samples takes 0..%d\n", SAMPLES_MAX);
                free(reasons);
                return 2;
            }
            break;
        case 'r':
            reasons[nreasons++] = optarg;
            break;
        case 'h':
            list_usage(stdout);
            free(reasons);
            return 0;
        default:
            list_usage(stderr);
            free(reasons);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "freshet dlq list: unexpected argument \"%s\"\n", argv[optind]);
        free(reasons);
        return 2;
    }
    struct fr_lake lake = {0};
    struct fr_ice_catalog *cat = NULL;
    struct fr_ice_table *table = NULL;
    struct fr_ice_file_list files = {0};
    struct fr_lscan *ls = NULL;
    struct done_set done = {0};
    struct reason_count *rs = calloc(REASONS_MAX, sizeof *rs);
    uint32_t nr = 0;
    uint64_t total = 0;
    status = 1;
    if (!rs) {
        goto cleanup;
    }
    char spill[4200];
    if (!fr_lake_maybe_exists(conf)) {
        fprintf(stderr, "freshet dlq list: no lake at %s (has `freshet process` run?)\n",
                fr_lake_catalog_name(conf, spill, sizeof spill));
        goto cleanup;
    }
    snprintf(spill, sizeof spill, "%s/tmp-dlq-list-%ld", conf->general_data_dir, (long)getpid());
    int rc = fr_lake_open(conf, &lake);
    cat = lake.cat;
    rc = rc ? rc : fr_lake_table(&lake, fr_tbl_name(FR_TBL_DLQ), &table);
    if (rc == FR_ENOTFOUND) {
        fprintf(stderr, "freshet dlq list: no table wiki.dlq yet (has `freshet process` run?)\n");
        goto cleanup;
    }
    rc = rc ? rc : fr_ice_files(cat, table, -1, true, &files);
    rc = rc ? rc : done_load(&lake, &done);
    struct fr_lscan_opts lopts = {FR_TBL_DLQ, DLQ_MEMORY, spill, &lake};
    rc = rc ? rc : fr_lscan_open(&files, &lopts, &ls);
    struct fr_lscan_row lr;
    while (rc == FR_OK && (rc = fr_lscan_next(ls, &lr)) == 1) {
        rc = FR_OK;
        if (!reason_selected(reasons, nreasons, lr.tag, lr.tag_len)) {
            continue;
        }
        total++;
        uint32_t i;
        for (i = 0; i < nr; i++) {
            if (strlen(rs[i].name) == lr.tag_len && memcmp(rs[i].name, lr.tag, lr.tag_len) == 0) {
                break;
            }
        }
        if (i == nr) {
            if (nr == REASONS_MAX || lr.tag_len >= sizeof rs[0].name) {
                continue; /* not a reason the gate writes */
            }
            memcpy(rs[i].name, lr.tag, lr.tag_len);
            rs[nr++].samples = samples ? calloc((size_t)samples, sizeof *rs[i].samples) : NULL;
            if (samples && !rs[i].samples) {
                rc = FR_ENOMEM;
                break;
            }
        }
        rs[i].count++;
        if (rs[i].nsamples < (uint32_t)samples) {
            struct sample *s = &rs[i].samples[rs[i].nsamples++];
            s->partition = lr.partition;
            s->offset = lr.offset;
            s->ingest_us = lr.ingest_us;
            s->b64 = lr.b64;
            s->replayed = done_has(&done, pos_key(lr.partition, lr.offset));
            snprintf(s->detail, sizeof s->detail, "%.*s", (int)lr.detail_len, lr.detail);
            sample_head(s, &lr);
        }
    }
    if (rc < 0) {
        fprintf(stderr, "freshet dlq list: %s (%s) %s %s\n", fr_strerror(rc), fr_err_name(rc),
                fr_ice_errmsg(), fr_pq_errmsg());
        goto cleanup;
    }
    qsort(rs, nr, sizeof *rs, reason_cmp);
    if (json) {
        list_json(stdout, rs, nr, &done, total, files.snapshot_id);
    } else {
        list_text(stdout, rs, nr, &done, total);
        if (fr_dlq_list_lookups(conf, &lake, stdout) < 0) {
            fprintf(stderr, "freshet dlq list: dlq_lookups: %s %s\n", fr_ice_errmsg(),
                    fr_pq_errmsg());
        }
    }
    status = 0;

cleanup:
    for (uint32_t i = 0; rs && i < nr; i++) {
        free(rs[i].samples);
    }
    free(rs);
    fr_lscan_free(ls);
    done_free(&done);
    fr_ice_file_list_free(&files);
    fr_ice_table_free(table);
    fr_lake_close(&lake);
    free(reasons);
    return status;
}

/* ================================================================== replay */

enum { RP_BRONZE, RP_SILVER, RP_LATE, RP_EPM, RP_TOP, RP_REPLAYS, RP_NOUT };
static const enum fr_tbl rp_tbl[RP_NOUT] = {FR_TBL_BRONZE,   FR_TBL_SILVER,   FR_TBL_LATE,
                                            FR_TBL_GOLD_EPM, FR_TBL_GOLD_TOP, FR_TBL_DLQ_REPLAYS};

struct rp {
    struct fr_conf *conf;
    char dir[4096];
    char id[32];
    int64_t replayed_at_us;
    const char *crash_after;
    int dry_run;
    char **reasons;
    int nreasons;
    struct fr_lake lake;        /* the catalog and its warehouse (local or S3) */
    struct fr_ice_catalog *cat; /* lake.cat */
    struct fr_proc *proc;
    struct fr_gate *gate;
    struct fr_ck ck;
    struct done_set done;
    struct fr_tw tw[RP_NOUT];
    int committed;
    int unknown; /* a REST commit's outcome is unknown: keep files and intent */
    /* counts */
    uint64_t seen, skipped_reason, already, landed;
    uint64_t silver, late, duplicates, gold;
    uint64_t still[FR_GATE_REASON_COUNT];
};

static void rp_crash_point(const struct rp *rp, const char *step)
{
    if (rp->crash_after && strcmp(rp->crash_after, step) == 0) {
        fprintf(stderr, "freshet dlq replay: --crash-after %s: exiting as if killed\n", step);
        _exit(3);
    }
}

static int rp_minute(void *arg, const struct fr_win_row *row)
{
    struct rp *rp = arg;
    rp->gold++;
    return rp->dry_run ? FR_OK : fr_tw_gold_epm(&rp->tw[RP_EPM], row);
}

static int rp_top(void *arg, const struct fr_top_row *row)
{
    struct rp *rp = arg;
    rp->gold++;
    return rp->dry_run ? FR_OK : fr_tw_gold_top(&rp->tw[RP_TOP], row);
}

static const struct fr_proc_sink rp_sink = {rp_minute, rp_top};

/* One dead letter: gate, then the operators, then the rows. */
static int rp_record(struct rp *rp, const struct fr_lscan_row *lr, const char *raw, size_t len)
{
    struct fr_proc_pos pos = {lr->partition, lr->offset, lr->ingest_us / 1000};
    struct fr_row row;
    char detail[FR_GATE_DETAIL_MAX];
    enum fr_gate_reason why = fr_gate_decode(rp->gate, &pos, raw, len, &row, detail);
    if (why != FR_GATE_OK) {
        rp->still[why]++;
        return FR_OK; /* still a dead letter: nothing changes */
    }
    struct fr_proc_result res;
    int rc = fr_proc_record(rp->proc, &pos, raw, len, &rp_sink, rp, &res);
    if (rc < 0) {
        return rc;
    }
    const char *outcome;
    switch (res.outcome) {
    case FR_PROC_SILVER:
        outcome = "silver";
        rp->silver++;
        rc = rp->dry_run ? FR_OK : fr_tw_silver(&rp->tw[RP_SILVER], res.row);
        break;
    case FR_PROC_LATE:
        outcome = "late";
        rp->late++;
        rc = rp->dry_run ? FR_OK
                         : fr_tw_late(&rp->tw[RP_LATE], res.row, res.watermark_us, res.lateness_us);
        break;
    case FR_PROC_DUPLICATE:
        outcome = "duplicate";
        rp->duplicates++;
        break;
    default:
        return FR_ESTATE; /* the gate passed it: fr_proc cannot reject it */
    }
    rp->landed++;
    if (rc < 0 || rp->dry_run) {
        return rc;
    }
    char reason[64];
    snprintf(reason, sizeof reason, "%.*s", (int)lr->tag_len, lr->tag);
    rc = fr_tw_bronze(&rp->tw[RP_BRONZE], res.row, raw, len);
    return rc < 0 ? rc
                  : fr_tw_dlq_replay(&rp->tw[RP_REPLAYS], res.row, reason, rp->id,
                                     rp->replayed_at_us, outcome);
}

/* Every selected dead letter not yet replayed, in log order. */
static int rp_scan(struct rp *rp, const struct fr_ice_file_list *files)
{
    char spill[4200];
    snprintf(spill, sizeof spill, "%s/dlq-replay-spill", rp->dir);
    struct fr_lscan_opts lopts = {FR_TBL_DLQ, DLQ_MEMORY, spill, &rp->lake};
    struct fr_lscan *ls = NULL;
    struct fr_buf bytes;
    fr_buf_init(&bytes, RAW_CAP);
    struct fr_progress pg;
    fr_progress_start(&pg, "dlq replay", "rows", (uint64_t)files->total_records);
    uint64_t prev = UINT64_MAX;
    int rc = fr_lscan_open(files, &lopts, &ls);
    struct fr_lscan_row lr;
    while (rc == FR_OK && (rc = fr_lscan_next(ls, &lr)) == 1) {
        rc = FR_OK;
        fr_progress_tick(&pg, ++rp->seen);
        uint64_t key = pos_key(lr.partition, lr.offset);
        if (!reason_selected(rp->reasons, rp->nreasons, lr.tag, lr.tag_len)) {
            rp->skipped_reason++;
            continue;
        }
        if (done_has(&rp->done, key)) {
            rp->already++;
            continue;
        }
        if (key == prev) {
            continue; /* one position twice in dlq: replayed once */
        }
        prev = key;
        const char *raw = lr.raw;
        size_t len = lr.raw_len;
        if (lr.b64) {
            fr_buf_reset(&bytes);
            rc = fr_maint_unbase64(lr.raw, lr.raw_len, &bytes);
            if (rc < 0) {
                fr_error("dlq", "dlq row %d:%" PRId64 ": raw_base64 does not decode", lr.partition,
                         lr.offset);
                break;
            }
            raw = (const char *)bytes.data;
            len = bytes.len;
        }
        rc = rp_record(rp, &lr, raw, len);
        if (rc < 0) {
            fr_error("dlq", "dlq row %d:%" PRId64 ": %s %s", lr.partition, lr.offset,
                     fr_strerror(rc), fr_pq_errmsg());
        }
    }
    fr_progress_end(&pg);
    if (rc < 0) {
        fr_error("dlq", "reading dlq: %s %s", fr_strerror(rc), fr_pq_errmsg());
    }
    fr_buf_free(&bytes);
    fr_lscan_free(ls);
    return rc < 0 ? rc : FR_OK;
}

/* STAGE, COMMIT, INSTALL, CLEAN (the state machine at the top). */
static int rp_commit(struct rp *rp)
{
    for (int k = 0; k < RP_NOUT; k++) {
        int rc = fr_tw_finish(&rp->tw[k]);
        if (rc < 0) {
            fr_error("dlq", "writing %s: %s %s", fr_tbl_name(rp_tbl[k]), fr_strerror(rc),
                     fr_pq_errmsg());
            return rc;
        }
    }
    rp_crash_point(rp, "files");
    struct fr_ck staged = rp->ck;
    fr_buf_init(&staged.state, STATE_CAP);
    struct intent in = {.base_crc = crc_of(&rp->ck.state), .base_len = rp->ck.state.len};
    snprintf(in.id, sizeof in.id, "%s", rp->id);
    snprintf(in.phase, sizeof in.phase, "staged");
    char sdir[4200];
    intent_path(rp->dir, "", sdir, sizeof sdir);
    int rc = fr_proc_save(rp->proc, &staged.state);
    rc = rc ? rc : fr_ck_save(sdir, &staged);
    rc = rc ? rc : intent_write(rp->dir, &in);
    if (rc < 0) {
        fr_error("dlq", "staging the checkpoint in %s: %s", sdir, fr_strerror(rc));
        fr_buf_free(&staged.state);
        return rc;
    }
    rp_crash_point(rp, "staged");

    struct fr_proc_stats st;
    fr_proc_stats(rp->proc, &st);
    char wm[32], records[32];
    snprintf(wm, sizeof wm, "%" PRId64, st.watermark_us);
    snprintf(records, sizeof records, "%" PRIu64, rp->landed);
    struct fr_ice_kv props[] = {{FR_SUMMARY_DLQ_REPLAY, rp->id},
                                {FR_SUMMARY_DLQ_REPLAY_RECORDS, records},
                                {FR_SUMMARY_WATERMARK, wm}};
    struct fr_ice_commit_info info = {NULL, -1, NULL, props, sizeof props / sizeof props[0]};
    if (rp->lake.rest) {
        /* the same appends in one REST transaction (maint_rest.c) */
        struct fr_lake_append apps[RP_NOUT];
        uint32_t n = 0;
        for (int k = 0; k < RP_NOUT; k++) {
            if (rp->tw[k].rows) {
                apps[n++] = (struct fr_lake_append){fr_tbl_name(rp_tbl[k]), &rp->tw[k].file, 1};
            }
        }
        rc = fr_maint_commit_rest(&rp->lake, apps, n, 0, &info, "dlq");
        rp->unknown = rc == FR_EUNKNOWN;
        if (rc < 0) {
            fr_buf_free(&staged.state);
            return rc; /* logged */
        }
    }
    struct fr_ice_txn *txn = NULL;
    /* A shard or finalizer that committed since the start makes it a
     * group's lake: refused inside the swap (ADR 0045; the SQLite catalog's
     * transaction; through REST the start's check stands). */
    struct fr_maint_group group = {.pipeline_id = rp->conf->general_pipeline_id};
    rc = rp->lake.rest ? FR_OK : fr_ice_txn_begin(rp->cat, &txn);
    if (rc == FR_OK && txn) {
        fr_ice_txn_guard(txn, fr_maint_group_guard, &group);
    }
    for (int k = 0; txn && rc == FR_OK && k < RP_NOUT; k++) {
        if (rp->tw[k].rows) {
            rc = fr_ice_txn_append(txn, FR_NS, fr_tbl_name(rp_tbl[k]), &rp->tw[k].file, 1, &info);
        }
    }
    if (txn && rc == FR_OK) {
        struct fr_ice_commit_result res;
        rc = fr_ice_txn_commit(txn, &res);
    }
    fr_ice_txn_free(txn);
    if (rc < 0 && group.found[0]) {
        fr_maint_group_refused("dlq replay", &group);
        fr_buf_free(&staged.state);
        return rc;
    }
    if (rc < 0) {
        fr_error("dlq", "commit failed: %s (%s) %s", fr_strerror(rc), fr_err_name(rc),
                 fr_ice_errmsg());
        fr_buf_free(&staged.state);
        return rc;
    }
    rp->committed = 1;
    rp_crash_point(rp, "commit");
    rc = fr_ck_save(rp->dir, &staged);
    fr_buf_free(&staged.state);
    if (rc < 0) {
        fr_error("dlq",
                 "replay %s landed but its checkpoint could not be installed: %s; run "
                 "`freshet dlq replay` again before starting the processor (it finishes this)",
                 rp->id, fr_strerror(rc));
        return rc;
    }
    intent_clear(rp->dir);
    return FR_OK;
}

static void rp_report(const struct rp *rp, int64_t ms)
{
    printf("dlq replay %s%s: %" PRIu64 " dead letters read", rp->id,
           rp->dry_run ? " (dry run: nothing written)" : "", rp->seen);
    if (rp->nreasons) {
        printf(", %" PRIu64 " of other reasons skipped", rp->skipped_reason);
    }
    printf(", %" PRIu64 " replayed before, in %.1f s\n", rp->already, (double)ms / 1000.0);
    printf("  landed %" PRIu64 ": %" PRIu64 " silver, %" PRIu64 " late, %" PRIu64
           " duplicates; %" PRIu64 " gold rows settled\n",
           rp->landed, rp->silver, rp->late, rp->duplicates, rp->gold);
    uint64_t still = 0;
    for (int r = 1; r < FR_GATE_REASON_COUNT; r++) {
        still += rp->still[r];
    }
    printf("  still rejected %" PRIu64, still);
    const char *sep = " (";
    for (int r = 1; r < FR_GATE_REASON_COUNT; r++) {
        if (rp->still[r]) {
            printf("%s%s %" PRIu64, sep, fr_gate_reason_name((enum fr_gate_reason)r), rp->still[r]);
            sep = ", ";
        }
    }
    printf("%s\n", still ? ")" : "");
}

static void replay_usage(FILE *out)
{
    fprintf(out, "usage: freshet dlq replay [--reason R]... [--dry-run] [--crash-after STEP]\n"
                 "       freshet dlq replay --lookups [--dry-run]\n\n"
                 "Run the dead letters (wiki.dlq) that no replay has landed yet through the\n"
                 "current gate (process.max_future_s, process.max_event_bytes, the schema rules)\n"
                 "and the live operator state from the processor checkpoint, as records arriving\n"
                 "now: each one the gate accepts lands exactly once, in bronze and in silver,\n"
                 "late_arrivals or (a duplicate) bronze only, with its original log position;\n"
                 "wiki.dlq_replays records it, in the same catalog transaction. The others stay\n"
                 "dead letters. See docs/DLQ.md.\n\n"
                 "The processor must not run: stop `freshet up` (or `freshet process`) first;\n"
                 "replay takes the pipeline lock. A replay that is killed is finished or undone\n"
                 "by the next `freshet dlq replay` (or `freshet rebuild`); run it again.\n\n"
                 "  --lookups        only the enrichment stage's failed lookups\n"
                 "                   (wiki.dlq_lookups), looked up again through enrich.api_url\n"
                 "                   and landed exactly once in silver_topics, with the\n"
                 "                   gold_top_topics windows they change recomputed\n"
                 "                   (docs/ENRICH.md); without it, a pipeline with\n"
                 "                   enrich.enabled = 1 replays both (unless --reason is given)\n"
                 "  --reason R       only dead letters of reason R (repeatable; docs/QUALITY.md)\n"
                 "  --dry-run        say what would land; write nothing\n"
                 "  --crash-after S  testing: exit(3) right after step S (files, staged,\n"
                 "                   commit), as a crash would\n");
}

static int dlq_replay(struct fr_conf *conf, int argc, char **argv)
{
    static const struct option opts[] = {{"reason", required_argument, 0, 'r'},
                                         {"dry-run", no_argument, 0, 'n'},
                                         {"lookups", no_argument, 0, 'L'},
                                         {"crash-after", required_argument, 0, 'C'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    struct rp *rp = calloc(1, sizeof *rp);
    char **reasons = calloc((size_t)argc + 1, sizeof *reasons);
    if (!rp || !reasons) {
        free(rp);
        free(reasons);
        return 1;
    }
    int status = 2;
    int lock_fd = -1;
    int lookups = 0;
    struct fr_ice_table *bronze = NULL, *dlq = NULL;
    struct fr_ice_file_list files = {0};
    fr_buf_init(&rp->ck.state, STATE_CAP);
    rp->conf = conf;
    rp->reasons = reasons;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'r':
            if (fr_gate_reason_from_name(optarg, strlen(optarg)) <= 0) {
                fprintf(stderr, "freshet dlq replay: unknown reason \"%s\" (docs/QUALITY.md)\n",
                        optarg);
                goto cleanup;
            }
            reasons[rp->nreasons++] = optarg;
            break;
        case 'n':
            rp->dry_run = 1;
            break;
        case 'L':
            lookups = 1;
            break;
        case 'C':
            if (strcmp(optarg, "files") != 0 && strcmp(optarg, "staged") != 0 &&
                strcmp(optarg, "commit") != 0) {
                fprintf(stderr, "freshet dlq replay: --crash-after takes files, staged or "
                                "commit\n");
                goto cleanup;
            }
            rp->crash_after = optarg;
            break;
        case 'h':
            replay_usage(stdout);
            status = 0;
            goto cleanup;
        default:
            replay_usage(stderr);
            goto cleanup;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "freshet dlq replay: unexpected argument \"%s\"\n", argv[optind]);
        goto cleanup;
    }
    status = 1;
    int64_t t0 = fr_mono_ms();
    rp->replayed_at_us = fr_wall_us();
    snprintf(rp->id, sizeof rp->id, "%" PRId64, rp->replayed_at_us / 1000);

    if (!fr_lake_maybe_exists(conf)) {
        char where[4200];
        fprintf(stderr, "freshet dlq replay: no lake at %s (has `freshet process` run?)\n",
                fr_lake_catalog_name(conf, where, sizeof where));
        goto cleanup;
    }
    lock_fd = fr_maint_lock(conf, "dlq replay", rp->dir, sizeof rp->dir);
    if (lock_fd < 0) {
        goto cleanup;
    }
    int rc = fr_lake_open(conf, &rp->lake);
    rp->cat = rp->lake.cat;
    if (rc == FR_OK && fr_maint_refuse_group(conf, &rp->lake, "dlq replay") < 0) {
        goto cleanup;
    }
    rc = rc ? rc : fr_maint_ensure(&rp->lake, 1);
    if (rc < 0) {
        fr_error("dlq", "catalog: %s (%s) %s", fr_strerror(rc), fr_err_name(rc), fr_ice_errmsg());
        goto cleanup;
    }
    rc = fr_dlq_recover(conf, rp->dir, &rp->lake, 0);
    if (rc < 0) {
        goto cleanup;
    }
    if (lookups) {
        /* The enrichment stage's dead letters, not the gate's. */
        status = fr_dlq_replay_lookups(conf, rp->dir, &rp->lake, rp->dry_run) < 0 ? 1 : 0;
        goto cleanup;
    }

    /* CHECK: the checkpoint must describe the lake exactly. */
    rc = fr_lake_table(&rp->lake, fr_tbl_name(FR_TBL_BRONZE), &bronze);
    int64_t lake_epoch = -1;
    if (rc == FR_OK) {
        rc = fr_ice_last_epoch(bronze, conf->general_pipeline_id, &lake_epoch, NULL);
        rc = rc == FR_ENOTFOUND ? FR_OK : rc;
    }
    if (rc < 0) {
        fr_error("dlq", "bronze: %s %s", fr_strerror(rc), fr_ice_errmsg());
        goto cleanup;
    }
    rc = fr_ck_load(rp->dir, &rp->ck);
    if (rc == FR_ENOTFOUND && lake_epoch < 0) {
        printf("dlq replay: nothing to replay (the processor has not committed an epoch)\n");
        status = 0;
        goto cleanup;
    }
    if (rc < 0) {
        fr_error("dlq", "processor checkpoint in %s: %s", rp->dir, fr_strerror(rc));
        goto cleanup;
    }
    if (rp->ck.epoch != lake_epoch) {
        fr_error("dlq",
                 "the lake holds epoch %" PRId64 " but the processor checkpoint is at epoch "
                 "%" PRId64 ": run `freshet process --once` first so the checkpoint catches up",
                 lake_epoch, rp->ck.epoch);
        goto cleanup;
    }

    struct fr_proc_opts popts;
    fr_proc_opts_default(&popts);
    popts.lateness_ms = conf->process_lateness_s * 1000;
    popts.gate.max_future_ms = conf->process_max_future_s * 1000;
    popts.gate.max_event_bytes = (size_t)conf->process_max_event_bytes;
    rc = fr_proc_create(&popts, &rp->proc);
    rc = rc ? rc : fr_gate_create(&popts.gate, &rp->gate);
    rc = rc ? rc : fr_proc_load(rp->proc, rp->ck.state.data, rp->ck.state.len);
    if (rc == FR_ECONFIG) {
        fr_error("dlq", "the checkpoint was saved with another process.lateness_s: run the "
                        "replay with the processor's configuration (or `freshet rebuild` "
                        "first to change the policy)");
        goto cleanup;
    }
    if (rc < 0) {
        fr_error("dlq", "operators: %s", fr_strerror(rc));
        goto cleanup;
    }
    rc = done_load(&rp->lake, &rp->done);
    rc = rc ? rc : fr_lake_table(&rp->lake, fr_tbl_name(FR_TBL_DLQ), &dlq);
    rc = rc ? rc : fr_ice_files(rp->cat, dlq, -1, true, &files);
    if (rc < 0) {
        fr_error("dlq", "reading the dlq: %s %s", fr_strerror(rc), fr_ice_errmsg());
        goto cleanup;
    }
    for (int k = 0; k < RP_NOUT; k++) {
        struct fr_ice_table *table = NULL;
        rc = fr_lake_table(&rp->lake, fr_tbl_name(rp_tbl[k]), &table);
        if (rc < 0) {
            fr_error("dlq", "%s: %s %s", fr_tbl_name(rp_tbl[k]), fr_strerror(rc), fr_ice_errmsg());
            goto cleanup;
        }
        char rel[512];
        snprintf(rel, sizeof rel, "data/%s-replay-%s.parquet", conf->general_pipeline_id, rp->id);
        fr_tw_init_named(&rp->tw[k], rp_tbl[k], fr_ice_table_dir(table), rel,
                         (size_t)conf->process_row_group_bytes);
        rp->tw[k].lake = &rp->lake;
        fr_ice_table_free(table);
    }
    if (!rp->dry_run) {
        struct intent in = {0};
        snprintf(in.id, sizeof in.id, "%s", rp->id);
        snprintf(in.phase, sizeof in.phase, "writing");
        rc = intent_write(rp->dir, &in);
        if (rc < 0) {
            fr_error("dlq", "%s/dlq-replay/intent: %s", rp->dir, fr_strerror(rc));
            goto cleanup;
        }
    }
    rc = rp_scan(rp, &files);
    if (rc == FR_OK && rp->landed && !rp->dry_run) {
        rc = rp_commit(rp);
    }
    if (rc < 0) {
        goto cleanup;
    }
    if (!rp->committed && !rp->dry_run) {
        intent_clear(rp->dir); /* nothing landed: nothing written */
    }
    rp_report(rp, fr_mono_ms() - t0);
    status = 0;
    /* A pipeline that enriches: its failed lookups too (all of them: the
     * --reason filters name the gate's reasons). */
    if (conf->enrich_enabled && rp->nreasons == 0 &&
        fr_dlq_replay_lookups(conf, rp->dir, &rp->lake, rp->dry_run) < 0) {
        status = 1;
    }

cleanup:
    if (status == 1 && !rp->committed && !rp->unknown && rp->cat && rp->id[0] && !rp->dry_run) {
        /* undo what this attempt wrote, as recovery would */
        for (int k = 0; k < RP_NOUT; k++) {
            if (rp->tw[k].finished && rp->tw[k].rows) {
                unlink(rp->tw[k].path);
            }
        }
        struct intent in;
        if (intent_read(rp->dir, &in) == FR_OK && strcmp(in.id, rp->id) == 0) {
            intent_clear(rp->dir);
        }
    }
    for (int k = 0; k < RP_NOUT; k++) {
        fr_tw_abort(&rp->tw[k]);
    }
    fr_ice_file_list_free(&files);
    fr_ice_table_free(bronze);
    fr_ice_table_free(dlq);
    done_free(&rp->done);
    fr_gate_destroy(rp->gate);
    fr_proc_destroy(rp->proc);
    fr_lake_close(&rp->lake);
    fr_buf_free(&rp->ck.state);
    free(rp);
    free(reasons);
    if (lock_fd >= 0) {
        close(lock_fd);
    }
    return status;
}

/* ================================================================= command */

static void dlq_usage(FILE *out)
{
    fprintf(out, "usage: freshet dlq list [--json] [--samples N] [--reason R]...\n"
                 "       freshet dlq replay [--reason R]... [--dry-run]\n\n"
                 "  list     dead letters by reason, with samples (read-only)\n"
                 "  replay   land the dead letters the current rules accept, exactly once\n"
                 "           (stop the processor first)\n"
                 "Each takes --help. See docs/DLQ.md.\n");
}

int fr_cmd_dlq(struct fr_conf *conf, int argc, char **argv)
{
    if (argc < 2) {
        dlq_usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        dlq_usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "list") == 0) {
        return dlq_list(conf, argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "replay") == 0) {
        return dlq_replay(conf, argc - 1, argv + 1);
    }
    fprintf(stderr, "freshet dlq: unknown subcommand \"%s\"\n", argv[1]);
    dlq_usage(stderr);
    return 2;
}
