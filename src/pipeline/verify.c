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
 * The work is split over six files sharing verify_int.h: this one (the
 * families of checks, their runner, the output, the command),
 * verify_util.c (hashing, pass memory, figures, scans), verify_cut.c (the
 * cut), verify_gold.c (gold recomputed), verify_topics.c
 * (gold_top_topics recomputed) and verify_pages.c (page CRCs).
 *
 * One thread; read-only (no commit, no file written); nice 10.
 */
#include "pipeline/verify.h"
#include "pipeline/verify_int.h"

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

/* --------------------------------------------------------------- state */

static const char *const ck_names[CK_COUNT] = {VF_CHECKS(VF_CK_NAME)};

/* ------------------------------------------------- family: positions */

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
    struct pos_ent *e = vf_mem_add(m, h, sizeof *e);
    if (e) {
        *e = (struct pos_ent){kind, part, off, {0}, 0};
        memcpy(e->id, id, 16);
    }
    return e;
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
        uint64_t h = vf_pos_hash(part, off);
        if (!vf_in_pass(h, vf->k, vf->passes)) {
            continue;
        }
        struct fr_pq_str s =
            vf->role == ROLE_DLQ ? (struct fr_pq_str){NULL, 0} : b->cols[2].v.str[i];
        uint8_t id[16];
        vf_uuid_key(s.ptr, s.len, id);
        struct pos_ent key = {ENT_POS, part, off, {0}, 0};
        struct pos_ent *e = vf_mem_find(&vf->mem, h, pos_eq, &key);
        if (vf->role == ROLE_DLQ) {
            if (e && !(e->flags & POS_REPLAY)) {
                f->dlq_in_bronze++;
                vf_note(f->ex_replay, sizeof f->ex_replay,
                        "dead letter %d:%" PRId64 " is in bronze but was never replayed", part,
                        off);
            }
            if (e) {
                e->flags |= POS_DLQ;
            }
        } else if (vf->role == ROLE_REPLAY) {
            if (!e || memcmp(e->id, id, 16) != 0) {
                f->replay_not_in_bronze++;
                vf_note(f->ex_replay, sizeof f->ex_replay,
                        "replayed %d:%" PRId64 " %.*s is not that bronze row", part, off,
                        (int)s.len, s.ptr);
            } else if (e->flags & POS_REPLAY) {
                f->replay_dup++;
                vf_note(f->ex_replay, sizeof f->ex_replay, "%d:%" PRId64 " was replayed twice",
                        part, off);
            }
            if (e) {
                e->flags |= POS_REPLAY;
            }
        } else if (vf->role == ROLE_BRONZE) {
            if (e) {
                f->dup_positions++;
                vf_note(f->ex_dup, sizeof f->ex_dup,
                        "log position %d:%" PRId64 " is in bronze "
                        "more than once",
                        part, off);
            } else if (!pos_add(&vf->mem, h, ENT_POS, part, off, id)) {
                return FR_ETOOBIG; /* the pass is full: more passes */
            }
        } else if (vf->role == ROLE_SILVER && (!e || memcmp(e->id, id, 16) != 0)) {
            f->silver_not_in_bronze++;
            vf_note(f->ex_silver, sizeof f->ex_silver,
                    "silver row %d:%" PRId64 " %.*s is not that bronze row", part, off, (int)s.len,
                    s.ptr);
        } else if (vf->role == ROLE_SILVER && (e->flags & POS_LATE)) {
            f->late_in_silver++;
            vf_note(f->ex_late, sizeof f->ex_late, "late position %d:%" PRId64 " is in silver",
                    part, off);
        } else if (vf->role == ROLE_LATE && !e) {
            f->late_missing++;
            vf_note(f->ex_late, sizeof f->ex_late, "late row %d:%" PRId64 " is not in bronze", part,
                    off);
        } else if (vf->role == ROLE_LATE) {
            if (memcmp(e->id, id, 16) != 0) {
                f->late_id_mismatch++;
                vf_note(f->ex_late, sizeof f->ex_late,
                        "late row %d:%" PRId64 " has another meta_id than bronze", part, off);
            }
            if (e->flags & POS_LATE) {
                f->late_dup++;
                vf_note(f->ex_late, sizeof f->ex_late, "late row %d:%" PRId64 " appears twice",
                        part, off);
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
            vf_note(f->ex_replay, sizeof f->ex_replay,
                    "replayed %d:%" PRId64 " is not a dead letter", e->part, e->off);
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
        int good = vf_uuid_key(s.ptr, s.len, id);
        if (vf->k == 0) {
            f->rows[vf->role]++;
            f->bad_ids[vf->role] += !good;
            if (vf->role == ROLE_SILVER && (f->rows[ROLE_SILVER] == 1 || ev > f->max_event_us)) {
                f->max_event_us = ev;
            }
        }
        uint64_t h = vf_hash(id, 16, 3);
        if (!vf_in_pass(h, vf->k, vf->passes)) {
            continue;
        }
        struct pos_ent key = {ENT_LATE, part, off, {0}, 0};
        const struct pos_ent *late =
            vf->role == ROLE_SILVER ? NULL
                                    : vf_mem_find(&vf->mem, vf_pos_hash(part, off), pos_eq, &key);
        /* a silver id: a the 16 bytes, count the event time */
        struct tent_key sk = {ENT_SIL, 0, {(const char *)id, 16}, {NULL, 0}};
        struct tent *e = vf->role == ROLE_LATE ? NULL : vf_mem_find(&vf->mem, h, vf_tent_eq, &sk);
        if (vf->role == ROLE_LATE) {
            /* a late row twice is late_consistent's to report */
            if (!late && !pos_add(&vf->mem, vf_pos_hash(part, off), ENT_LATE, part, off, id)) {
                return FR_ETOOBIG; /* the pass is full: more passes */
            }
        } else if (vf->role == ROLE_BRONZE) {
            if (late && memcmp(late->id, id, 16) == 0) {
                f->late_skipped++;
            } else if (e) {
                f->covered++;
            } else {
                f->missing++;
                vf_note(f->ex_missing, sizeof f->ex_missing,
                        "bronze row %d:%" PRId64 " meta_id %.*s is not late and not in silver",
                        part, off, (int)s.len, s.ptr);
            }
        } else if (e && (int64_t)e->count == ev) {
            f->dup_ids++;
            vf_note(f->ex_dup, sizeof f->ex_dup, "meta_id %.*s twice in silver", (int)s.len, s.ptr);
        } else if (e) {
            f->reused_ids++; /* another event time: allowed (SEMANTICS §3) */
        } else {
            int added;
            if (!(e = vf_tent_get(&vf->mem, h, &sk, &added))) {
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
            vf_note(f->ex, sizeof f->ex, "%s: %s", fr_tbl_name(t), tab->broken);
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
            if (!vf_in_pass(h, vf->k, vf->passes)) {
                continue;
            }
            /* the path; the table that lists it in count */
            struct tent_key key = {ENT_FILE, 0, {p, (uint32_t)len}, {NULL, 0}};
            int added;
            struct tent *e = vf_tent_get(&vf->mem, h, &key, &added);
            if (!e) {
                rc = FR_ETOOBIG; /* the pass is full: more passes */
            } else if (added) {
                e->count = (uint64_t)t;
            } else {
                *(e->count == (uint64_t)t ? &f->dup_in_table : &f->shared) += 1;
                vf_note(f->ex, sizeof f->ex, "%s is live in %s and %s", list.files[i].path,
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

/* -------------------------------------------------------------- passes */

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

/*
 * Run one family: K passes planned from keys x bytes per key against half
 * of the arena (and half of the index), each pass from a reset memory; on
 * overflow, reset the family's figures and start again with 2K.
 */
int vf_run_family(struct vf *vf, const struct vf_family *fy, int64_t keys, size_t per_key,
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
        uint64_t plan = 0; /* rows this run of the family reads: the meter's total grows */
        for (uint32_t i = 0; i < fy->nsteps; i++) {
            plan += vf->tab[fy->steps[i].tbl].rows > 0 ? (uint64_t)vf->tab[fy->steps[i].tbl].rows : 0;
        }
        fr_progress_total(&vf->pg, vf->pg.total + plan * vf->passes);
        memset(fam, 0, fam_size);
        int rc = FR_OK;
        for (vf->k = 0; rc == FR_OK && vf->k < vf->passes; vf->k++) {
            vf_mem_reset(&vf->mem);
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
            vf_mem_reset(&vf->mem);
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

void vf_not_evaluated(struct vf *vf, enum vf_ck ck)
{
    vf_problem(&vf->ck[ck], "not evaluated: %.400s", vf->err);
}

static void check_positions(struct vf *vf, struct fam_pos *f)
{
    uint32_t passes = 0;
    int rc = vf_run_family(vf, &fam_positions, vf->tab[FR_TBL_BRONZE].rows,
                           sizeof(struct pos_ent) + 8, f, sizeof *f, &passes);
    struct vf_check *pos = &vf->ck[CK_POSITIONS], *late = &vf->ck[CK_LATE];
    struct vf_check *cov = &vf->ck[CK_SILVER_COVERS];
    vf_figs(pos, "passes", (int64_t)passes, NULL);
    vf_figs(late, "passes", (int64_t)passes, NULL);
    vf_figs(cov, "position_passes", (int64_t)passes, NULL);
    if (rc < 0) {
        vf_not_evaluated(vf, CK_POSITIONS);
        vf_not_evaluated(vf, CK_LATE);
        vf_not_evaluated(vf, CK_SILVER_COVERS);
        return;
    }
    vf->positions_ok = 1;
    vf_figs(pos, "bronze_rows", f->rows[ROLE_BRONZE], "duplicate_positions", f->dup_positions,
            NULL);
    vf_figs(late, "late_rows", f->rows[ROLE_LATE], "not_in_bronze", f->late_missing,
            "meta_id_differs", f->late_id_mismatch, "duplicate_positions", f->late_dup, "in_silver",
            f->late_in_silver, NULL);
    vf_figs(cov, "silver_not_in_bronze", f->silver_not_in_bronze, NULL);
    if (f->dup_positions) {
        vf_problem(pos, "%s", f->ex_dup);
    }
    if (f->late_missing || f->late_id_mismatch || f->late_dup || f->late_in_silver) {
        vf_problem(late, "%s", f->ex_late);
    }
    if (f->silver_not_in_bronze) {
        vf_problem(cov, "%s", f->ex_silver);
    }
}

static void check_ids(struct vf *vf, struct fam_ids *f)
{
    uint32_t passes = 0;
    int64_t keys = vf->tab[FR_TBL_SILVER].rows + vf->tab[FR_TBL_LATE].rows;
    int rc = vf_run_family(vf, &fam_ids, keys, sizeof(struct tent) + 24, f, sizeof *f, &passes);
    struct vf_check *uniq = &vf->ck[CK_SILVER_UNIQUE], *cov = &vf->ck[CK_SILVER_COVERS];
    struct vf_check *fresh = &vf->ck[CK_FRESHNESS];
    vf_figs(uniq, "passes", (int64_t)passes, NULL);
    vf_figs(cov, "passes", (int64_t)passes, NULL);
    if (rc < 0) {
        vf_not_evaluated(vf, CK_SILVER_UNIQUE);
        vf_not_evaluated(vf, CK_SILVER_COVERS);
        snprintf(fresh->detail, sizeof fresh->detail, "not evaluated: %.400s", vf->err);
        return;
    }
    vf_figs(uniq, "silver_rows", f->rows[ROLE_SILVER], "duplicate_ids", f->dup_ids, "reused_ids",
            f->reused_ids, "malformed_ids", f->bad_ids[ROLE_SILVER], NULL);
    vf_figs(cov, "bronze_rows", f->rows[ROLE_BRONZE], "late_rows_skipped", f->late_skipped,
            "covered", f->covered, "missing", f->missing, "rebuild_rejected", vf->rebuild_rejected,
            "malformed_ids", f->bad_ids[ROLE_BRONZE], NULL);
    if (f->dup_ids) {
        vf_problem(uniq, "%s", f->ex_dup);
    }
    if (f->bad_ids[ROLE_SILVER]) {
        vf_problem(uniq, "silver meta_id values that are not UUIDs");
    }
    if (f->missing > vf->rebuild_rejected) { /* rows a rebuild's gate rejected are nowhere */
        vf_problem(cov, "%s", f->ex_missing);
    }
    if (f->bad_ids[ROLE_BRONZE]) {
        vf_problem(cov, "bronze meta_id values that are not UUIDs");
    }
    /* freshness: informational, never fails */
    char ts[32];
    vf_fmt_time(f->max_event_us, ts);
    int64_t age = f->max_event_us == INT64_MIN ? -1 : (fr_wall_us() - f->max_event_us) / 1000000;
    vf_figs(fresh, "seconds", age, NULL);
    snprintf(fresh->detail, sizeof fresh->detail, "newest silver event_time %s", ts);
}

static void check_files(struct vf *vf, struct fam_files *f)
{
    int64_t files = 0;
    for (int t = 0; t < FR_TBL_ALL; t++) {
        files += vf->tab[t].nfiles;
    }
    uint32_t passes = 0;
    int rc = vf_run_family(vf, &fam_files, files, sizeof(struct tent) + 256, f, sizeof *f, &passes);
    struct vf_check *c = &vf->ck[CK_FILES];
    vf_figs(c, "passes", (int64_t)passes, NULL);
    if (rc < 0) {
        vf_not_evaluated(vf, CK_FILES);
        return;
    }
    vf_figs(c, "files", f->files, "duplicate_in_table", f->dup_in_table, "shared_between_tables",
            f->shared, "unlistable_tables", f->unlistable, NULL);
    if (f->dup_in_table || f->shared || f->unlistable) {
        vf_problem(c, "%s", f->ex);
    }
}

static void check_bronze_count(struct vf *vf, const struct fam_pos *pos)
{
    struct vf_check *c = &vf->ck[CK_BRONZE_COUNT];
    int64_t bronze = pos->rows[ROLE_BRONZE], dlq = pos->rows[ROLE_DLQ];
    int64_t replayed = pos->rows[ROLE_REPLAY], want = vf->consumed - dlq + replayed;
    vf_figs(c, "bronze_rows", bronze, "consumed", vf->consumed, "dlq_rows", dlq, "replayed_rows",
            replayed, "expected", want, "history_records", vf->history_records, "history_complete",
            (int64_t)(vf->history_records >= 0), "epochs", vf->history_epochs, NULL);
    if (!vf->positions_ok) {
        vf_problem(c, "not evaluated: bronze, dlq or dlq_replays cannot be read");
        return;
    }
    vf_figs(c, "dead_letters_in_bronze", pos->dlq_in_bronze, "replays_not_in_bronze",
            pos->replay_not_in_bronze, "replays_not_dead_letters", pos->replay_not_dlq,
            "replays_twice", pos->replay_dup, NULL);
    if (!vf->consumed_ok) {
        vf_problem(c, "the cut snapshot's %s \"%s\" does not parse", FR_ICE_SUMMARY_OFFSETS,
                   vf->offsets);
    } else if (bronze != want) {
        vf_problem(c,
                   "bronze holds %" PRId64 " rows; %" PRId64 " consumed - %" PRId64
                   " dlq + %" PRId64 " replayed = %" PRId64,
                   bronze, vf->consumed, dlq, replayed, want);
    } else if (vf->history_records >= 0 && vf->history_records != vf->consumed) {
        vf_problem(c, "the epochs' %s sum to %" PRId64 ", the offsets to %" PRId64,
                   FR_SUMMARY_RECORDS, vf->history_records, vf->consumed);
    }
    if (pos->dlq_in_bronze || pos->replay_not_in_bronze || pos->replay_not_dlq || pos->replay_dup) {
        vf_problem(c, "%s", pos->ex_replay);
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
    vf_fmt_time(vf->watermark_us, wm);
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
            "  gold_topics_recomputed         gold_top_topics = a recomputation from\n"
            "                                 silver_topics (with enrichment)\n"
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
    int rc = fr_lake_list(&vf->lake, &idents, &nidents);
    if (rc == FR_ENOTFOUND && vf->lake.rest) {
        rc = FR_OK; /* the REST catalog has no namespace yet: empty tables */
    }
    if (rc < 0) {
        fprintf(stderr, "freshet verify: listing the tables: %s %s\n", fr_strerror(rc),
                fr_ice_errmsg());
        goto cleanup;
    }
    if (vf->lake.rest && nidents == 0) { /* as a missing catalog.db */
        fprintf(stderr, "freshet verify: no lake at %s (no tables: nothing to verify)\n",
                vf->conf->lake_catalog_uri);
        goto cleanup;
    }
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
        rc = fr_lake_table(&vf->lake, fr_tbl_name(order[i]), &tab->table);
        if (rc < 0) {
            fprintf(stderr, "freshet verify: table %s.%s: %s %s\n", FR_NS, fr_tbl_name(order[i]),
                    fr_strerror(rc), fr_ice_errmsg());
            goto cleanup;
        }
        tab->current = fr_ice_table_snapshot_id(tab->table);
    }
    if (rc == FR_OK) {
        rc = vf_cut_bronze(vf);
    }
    for (int t = 1; rc == FR_OK && t < FR_TBL_ALL; t++) { /* bronze is 0 */
        rc = vf_cut_table(vf, (enum fr_tbl)t);
    }
    if (rc < 0) {
        fprintf(stderr, "freshet verify: %s %s\n", fr_strerror(rc), fr_ice_errmsg());
        goto cleanup;
    }
    for (int t = 0; t < FR_TBL_ALL; t++) {
        vf_count_table(vf, &vf->tab[t]);
    }
    fr_progress_start(&vf->pg, "verify", "rows", 0);
    check_positions(vf, &fam->pos);
    check_bronze_count(vf, &fam->pos);
    check_ids(vf, &fam->ids);
    check_files(vf, &fam->files);
    vf_check_gold(vf, &fam->gold);
    vf_check_topics(vf);
    vf_check_pages(vf); /* after topics: it loads the enrichment tables */
    fr_progress_end(&vf->pg);
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
            if (vf_parse_i64(optarg, &mb) < 0 || mb < VF_MIN_MB || mb > VF_MAX_MB) {
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
    if (!fr_lake_maybe_exists(conf)) {
        fprintf(stderr, "freshet verify: no lake at %s (nothing to verify)\n",
                fr_lake_catalog_name(conf, path, sizeof path));
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
    if (vf_mem_init(&vf->mem, vf->budget) < 0) {
        fprintf(stderr, "freshet verify: cannot allocate the %" PRId64 " MiB budget\n", mb);
        goto cleanup;
    }
    /* The warehouse may be an S3 bucket (lake.warehouse): data files are
     * then read with ranged GETs; the catalog may be a REST catalog
     * (lake.catalog_uri): tables are listed and loaded through it. */
    int rc = fr_lake_open(conf, &vf->lake);
    if (rc < 0) {
        goto cleanup; /* logged */
    }
    vf->cat = vf->lake.cat;
    status = verify_run(vf, json);

cleanup:
    for (int t = 0; t < FR_TBL_EVERY; t++) {
        fr_ice_table_free(vf->tab[t].table);
    }
    free(vf->replays);
    fr_lake_close(&vf->lake);
    vf_mem_free(&vf->mem);
    free(vf);
    return status;
}
