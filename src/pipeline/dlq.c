/*
 * dlq.c — `freshet dlq list` (dead letters by reason, with samples), and
 * for `freshet dlq replay` (dead letters the current rules accept, landed
 * exactly once; the command itself is in dlq_replay.c) the replayed
 * positions, the intent file and the recovery after a crash; the rules
 * are in docs/DLQ.md, the choice of a dlq_replays table in
 * docs/adr/0008-dlq-replay.md.
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
#include "pipeline/dlq_int.h"

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

#define DONE_MAX_KEYS ((size_t)1 << 24) /* replayed positions held: 128 MiB */
#define SAMPLES_MAX 1000
#define SAMPLE_RAW 200

/* ================================================================ helpers */

/* A log position as one sortable key (partitions < 256, offsets < 2^56). */
uint64_t dlq_pos_key(int32_t partition, int64_t offset)
{
    return (uint64_t)(uint32_t)partition << 56 | ((uint64_t)offset & ((UINT64_C(1) << 56) - 1));
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The positions dlq_replays holds, sorted; optional counts by reason. */

int dlq_done_has(const struct done_set *d, uint64_t key)
{
    return d->n && bsearch(&key, d->keys, d->n, sizeof key, u64_cmp) != NULL;
}

static void dlq_done_count(struct done_set *d, const char *reason, size_t len)
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

static uint64_t dlq_done_reason(const struct done_set *d, const char *reason)
{
    for (uint32_t i = 0; i < d->nreasons; i++) {
        if (strcmp(d->reasons[i], reason) == 0) {
            return d->counts[i];
        }
    }
    return 0;
}

int dlq_done_load(const struct fr_lake *lake, struct done_set *d)
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
                d->keys[d->n++] = dlq_pos_key(b->cols[0].v.i32[i], b->cols[1].v.i64[i]);
                dlq_done_count(d, b->cols[2].v.str[i].ptr, b->cols[2].v.str[i].len);
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

void dlq_done_free(struct done_set *d)
{
    free(d->keys);
}

uint32_t dlq_crc_of(const struct fr_buf *state)
{
    return fr_crc32c(0, state->data, state->len);
}

/* ================================================================ recovery */


void dlq_intent_path(const char *dir, const char *name, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s/dlq-replay%s%s", dir, name[0] ? "/" : "", name);
}

/* FR_OK, FR_ENOTFOUND when there is no intent, FR_ECORRUPT. */
int dlq_intent_read(const char *dir, struct intent *in)
{
    char path[4200];
    dlq_intent_path(dir, "intent", path, sizeof path);
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

int dlq_intent_write(const char *dir, const struct intent *in)
{
    char path[4200], text[160];
    dlq_intent_path(dir, "", path, sizeof path);
    int rc = fr_fs_mkdirs(path, 0755);
    if (rc < 0) {
        return rc;
    }
    dlq_intent_path(dir, "intent", path, sizeof path);
    int n = snprintf(text, sizeof text, "id %s\nphase %s\nbase %08" PRIx32 " %" PRIu64 "\n", in->id,
                     in->phase, in->base_crc, in->base_len);
    return fr_fs_write_atomic(path, text, (size_t)n);
}

void dlq_intent_clear(const char *dir)
{
    char path[4200];
    dlq_intent_path(dir, "checkpoint", path, sizeof path);
    unlink(path);
    dlq_intent_path(dir, "intent", path, sizeof path);
    unlink(path);
    dlq_intent_path(dir, "", path, sizeof path);
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
    int rc = dlq_intent_read(dir, &in);
    if (rc == FR_ENOTFOUND) {
        dlq_intent_clear(dir); /* a staged checkpoint without an intent: never committed */
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
        dlq_intent_clear(dir);
        return FR_OK;
    }
    if (for_rebuild) {
        fr_info(who,
                "dlq replay %s landed before it could install its checkpoint; the "
                "rebuild recomputes the operator state",
                in.id);
        dlq_intent_clear(dir);
        return FR_OK;
    }
    struct fr_ck ck, staged;
    fr_buf_init(&ck.state, STATE_CAP);
    fr_buf_init(&staged.state, STATE_CAP);
    char sdir[4200];
    dlq_intent_path(dir, "", sdir, sizeof sdir);
    rc = fr_ck_load(dir, &ck);
    if (rc == FR_OK) {
        rc = fr_ck_load(sdir, &staged);
    }
    if (rc < 0) {
        fr_error(who, "dlq replay %s landed but its checkpoint cannot be finished: %s", in.id,
                 fr_strerror(rc));
    } else if (dlq_crc_of(&ck.state) == in.base_crc && ck.state.len == in.base_len &&
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
        dlq_intent_clear(dir);
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

int dlq_reason_selected(char **reasons, int nreasons, const char *name, size_t len)
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
        replayed += dlq_done_reason(d, rs[i].name);
    }
    fprintf(out, "dlq: %" PRIu64 " dead letters, %" PRIu64 " of them replayed\n", total, replayed);
    if (nr) {
        fprintf(out, "  %-20s %10s %10s\n", "reason", "count", "replayed");
    }
    for (uint32_t i = 0; i < nr; i++) {
        fprintf(out, "  %-20s %10" PRIu64 " %10" PRIu64 "\n", rs[i].name, rs[i].count,
                dlq_done_reason(d, rs[i].name));
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
        replayed += dlq_done_reason(d, rs[i].name);
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
                i ? "," : "", rs[i].name, rs[i].count, dlq_done_reason(d, rs[i].name));
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
    rc = rc ? rc : dlq_done_load(&lake, &done);
    struct fr_lscan_opts lopts = {FR_TBL_DLQ, DLQ_MEMORY, spill, &lake};
    rc = rc ? rc : fr_lscan_open(&files, &lopts, &ls);
    struct fr_lscan_row lr;
    while (rc == FR_OK && (rc = fr_lscan_next(ls, &lr)) == 1) {
        rc = FR_OK;
        if (!dlq_reason_selected(reasons, nreasons, lr.tag, lr.tag_len)) {
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
            s->replayed = dlq_done_has(&done, dlq_pos_key(lr.partition, lr.offset));
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
    dlq_done_free(&done);
    fr_ice_file_list_free(&files);
    fr_ice_table_free(table);
    fr_lake_close(&lake);
    free(reasons);
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
        return fr_dlq_replay_cmd(conf, argc - 1, argv + 1);
    }
    fprintf(stderr, "freshet dlq: unknown subcommand \"%s\"\n", argv[1]);
    dlq_usage(stderr);
    return 2;
}
