/*
 * commit.c — the commit protocol: one or more table changes made durable
 * together, or not at all. The public transaction API and the one-table
 * shorthands are thin layers over txn_run below.
 *
 * State machine (one attempt per pass; io step names in parentheses):
 *
 *      BEGIN ─► LOAD: each table's catalog row + its metadata (loaded)
 *                 │ an epoch of this pipeline >= ours already there,
 *                 │ or the transaction's guard refuses the table
 *                 │   ──► STOP: FR_EEXIST (the guard's own code), nothing moved
 *                 ▼
 *               APPLY: manifests (manifest), manifest list (manifest-list)
 *                 │ change no longer applies ──► ABORT: FR_ECONFLICT
 *                 ▼
 *               METADATA: NNNNN-<uuid>.metadata.json, no clobber (metadata)
 *                 ▼
 *               SWAP: BEGIN IMMEDIATE (catalog-begin); per table
 *                 │   UPDATE ... WHERE metadata_location = old, 1 row
 *                 │   (catalog-updated); COMMIT (catalog-committed)
 *                 ├─ a row moved ─► CLEANUP ─► LOAD again (at most
 *                 │                 max_retries), then FR_ECONFLICT
 *                 ├─ locked / I/O error before COMMIT ─► ABORT (FR_EBUSY, FR_EIO)
 *                 ├─ COMMIT failed ─► re-read the row: moved ─► PUBLISH;
 *                 │                   not moved ─► ABORT; unreadable ─► FR_EIO,
 *                 │                   files kept (the outcome is unknown)
 *                 ▼
 *               PUBLISH: v<N>.metadata.json, version-hint.text (published)
 *                 ▼
 *               FINISH: delete files only expired snapshots reached ─► DONE
 *
 * LOAD always reads the catalog row; the metadata it names is shared
 * (read-only) from the handle's cache when this handle committed that very
 * file (ADR 0025, table.c), else read and parsed. FINISH puts each new
 * version there, shared as well.
 *
 * CLEANUP and ABORT delete every file the attempt wrote except the append
 * manifest, which does not depend on the base and is reused by the next
 * attempt (ABORT deletes it too).
 *
 * Crash invariants (tests/crash/crash_iceberg.c checks each step):
 *  1. Before COMMIT is durable the catalog names the old metadata file:
 *     readers see the old snapshot; what the attempt wrote is orphaned and
 *     fr_ice_remove_orphans removes it.
 *  2. After COMMIT every table of the transaction names its new file; the
 *     hint may lag until the next publish, never lead.
 *  3. Nothing the old version reaches is deleted before the commit lands.
 */
#include "iceberg/iceberg_int.h"

#include "core/clock.h"
#include "core/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct fr_ice_txn {
    struct fr_ice_catalog *cat;
    struct ice_change *changes[ICE_MAX_CHANGES];
    uint32_t n;
    bool done;
    fr_ice_guard_fn guard; /* fr_ice_txn_guard, or NULL */
    void *guard_arg;
};

/* The caller's check at LOAD (fr_ice_txn_guard). */
struct txn_guard {
    fr_ice_guard_fn fn;
    void *arg;
};

static void cleanup_attempt(struct ice_change **cs, uint32_t n, bool remove_files)
{
    for (uint32_t i = 0; i < n; i++) {
        if (cs[i]->base) {
            ice_change_reset(cs[i], remove_files);
        }
    }
}

static void drop_kept(struct fr_ice_catalog *cat, struct ice_change **cs, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (cs[i]->kept_manifest) {
            ice_io_remove(&cat->io, cs[i]->kept_manifest);
            free(cs[i]->kept_manifest);
            cs[i]->kept_manifest = NULL;
        }
    }
}

static int64_t since_us(int64_t *t)
{
    int64_t now = fr_mono_ns(), d = (now - *t) / 1000;
    *t = now;
    return d;
}

/* LOAD for one change. */
static int load_base(struct fr_ice_catalog *cat, struct ice_change *c,
                     const struct txn_guard *guard, struct fr_ice_commit_timing *tm)
{
    char loc[ICE_PATH_MAX];
    int64_t t = fr_mono_ns();
    int rc = ice_cat_get(cat, c->ns, c->name, loc, sizeof loc);
    tm->cat_us += since_us(&t);
    if (rc == FR_OK) {
        rc = ice_table_load_at(cat, c->ns, c->name, loc, &c->base);
    }
    tm->load_us += since_us(&t);
    if (rc < 0) {
        return rc;
    }
    ice_io_step(&cat->io, FR_ICE_STEP_LOADED, loc);
    if (c->pipeline_id && c->epoch >= 0) {
        int64_t last;
        if (fr_ice_last_epoch(c->base, c->pipeline_id, &last, NULL) == FR_OK && last >= c->epoch) {
            return ice_err(FR_EEXIST,
                           "table %s.%s: epoch %lld of pipeline %s is already committed (last "
                           "epoch %lld)",
                           c->ns, c->name, (long long)c->epoch, c->pipeline_id, (long long)last);
        }
    }
    if (guard && guard->fn) {
        rc = guard->fn(c->base, guard->arg);
        if (rc < 0) {
            return ice_err(rc, "table %s.%s: refused by the committer's check", c->ns, c->name);
        }
    }
    return FR_OK;
}

/* After a failed COMMIT: did the first table's row move to our file? */
static int commit_outcome(struct fr_ice_catalog *cat, struct ice_change *c)
{
    char loc[ICE_PATH_MAX];
    int rc = ice_cat_get(cat, c->ns, c->name, loc, sizeof loc);
    if (rc < 0) {
        return rc;
    }
    return strcmp(loc, c->next_location) == 0 ? 1 : 0;
}

static int txn_run(struct fr_ice_catalog *cat, struct ice_change **cs, uint32_t n,
                   const struct txn_guard *guard, struct fr_ice_commit_result *res)
{
    struct ice_cat_update ups[ICE_MAX_CHANGES];
    struct fr_ice_commit_timing tm = {0};
    int64_t t;
    int rc = FR_OK;
    int attempt;
    ice_err_clear();
    for (attempt = 0; attempt <= cat->max_retries; attempt++) {
        uint32_t nups = 0;
        /* LOAD, APPLY, METADATA */
        for (uint32_t i = 0; i < n && rc == FR_OK; i++) {
            cs[i]->attempt = attempt;
            rc = load_base(cat, cs[i], guard, &tm);
            t = fr_mono_ns();
            if (rc == FR_OK) {
                rc = ice_change_apply(cs[i]);
            }
            tm.apply_us += since_us(&t);
            if (rc == FR_OK && cs[i]->next) {
                rc = ice_write_metadata(cs[i]);
            }
            if (rc == FR_OK && cs[i]->next) { /* a deferring catalog's hint */
                rc = ice_publish_prepare(cat, cs[i]->base->dir, cs[i]->next_location,
                                         &cs[i]->hint_tmp);
            }
            tm.metadata_us += since_us(&t);
            if (rc == FR_OK && cs[i]->next) {
                ups[nups++] = (struct ice_cat_update){
                    cs[i]->ns, cs[i]->name, cs[i]->base->meta_location, cs[i]->next_location};
            }
        }
        if (rc < 0) {
            break; /* ABORT */
        }
        if (nups == 0) {
            goto finish; /* every change was a no-op */
        }
        /* SWAP */
        t = fr_mono_ns();
        rc = ice_cat_swap(cat, ups, nups);
        tm.swap_us += since_us(&t);
        if (rc == FR_ECONFLICT) {
            cleanup_attempt(cs, n, true); /* CLEANUP, then LOAD again */
            rc = FR_OK;
            /* Several writers (the scale-out shards) racing for the same
             * tables: back off a random 1..5*2^k ms (k <= 6) so they stop
             * colliding in lockstep. */
            if (attempt < cat->max_retries) {
                uint64_t x = (uint64_t)fr_mono_ms() * UINT64_C(6364136223846793005) ^
                             (uint64_t)getpid() * UINT64_C(1442695040888963407);
                fr_sleep_ms((int64_t)(1 + (x >> 33) % (5u << (attempt < 6 ? attempt : 6))));
            }
            continue;
        }
        if (rc < 0 && rc != FR_EBUSY) {
            char why[1024];
            snprintf(why, sizeof why, "%s", fr_ice_errmsg());
            struct ice_change *first = NULL;
            for (uint32_t i = 0; i < n && !first; i++) {
                first = cs[i]->next ? cs[i] : NULL;
            }
            int moved = commit_outcome(cat, first);
            if (moved == 1) {
                rc = FR_OK; /* the COMMIT landed after all */
            } else if (moved < 0) {
                ice_err(FR_EIO, "commit outcome unknown (%s); files kept", why);
                cleanup_attempt(cs, n, false); /* keep the files: they may be live */
                return FR_EIO;
            } else {
                ice_err(rc, "%s", why);
            }
        }
        if (rc < 0) {
            break; /* ABORT */
        }
        /* PUBLISH */
        t = fr_mono_ns();
        for (uint32_t i = 0; i < n; i++) {
            if (cs[i]->next && ice_publish(cat, cs[i]->base->dir, cs[i]->next_location,
                                           cs[i]->hint_tmp, cs[i]->next_json,
                                           cs[i]->next_json_len) == FR_OK) {
                ice_io_step(&cat->io, FR_ICE_STEP_PUBLISHED, cs[i]->next_location);
            }
            free(cs[i]->hint_tmp); /* ice_publish renamed or removed it */
            cs[i]->hint_tmp = NULL;
        }
        tm.publish_us += since_us(&t);
        goto finish;
    }
    if (rc == FR_OK) {
        char last[600];
        snprintf(last, sizeof last, "%s", fr_ice_errmsg());
        rc = ice_err(FR_ECONFLICT,
                     "table %s.%s%s: commit lost the race %d times, nothing moved (%s)", cs[0]->ns,
                     cs[0]->name, n > 1 ? " and the others of the transaction" : "", attempt, last);
    }
    cleanup_attempt(cs, n, true);
    drop_kept(cat, cs, n);
    return rc;

finish:
    /* FINISH: results, then files only expired snapshots reached */
    t = fr_mono_ns();
    for (uint32_t i = 0; i < n; i++) {
        struct ice_change *c = cs[i];
        if (c->next) {
            tm.metadata_bytes += c->metadata_bytes;
            tm.max_snapshots =
                c->next->nsnapshots > tm.max_snapshots ? c->next->nsnapshots : tm.max_snapshots;
            tm.max_metadata_log = c->next->nmetadata_log > tm.max_metadata_log
                                      ? c->next->nmetadata_log
                                      : tm.max_metadata_log;
            tm.max_manifests = c->nmanifests > tm.max_manifests ? c->nmanifests : tm.max_manifests;
        }
    }
    if (res) {
        memset(res, 0, sizeof *res);
        res->attempts = attempt + 1;
    }
    for (uint32_t i = 0; i < n; i++) {
        struct ice_change *c = cs[i];
        if (res && i < ICE_MAX_CHANGES) {
            res->snapshot_id[i] =
                c->next ? c->next->current_snapshot_id : c->base->meta->current_snapshot_id;
            res->sequence_number[i] =
                c->next ? c->next->last_sequence_number : c->base->meta->last_sequence_number;
        }
        for (uint32_t k = 0; k < c->ndoomed; k++) {
            if (ice_io_remove(&cat->io, c->doomed[k]) == FR_OK) {
                c->deleted++;
            }
        }
        free(c->kept_manifest);
        c->kept_manifest = NULL;
        if (c->next) { /* the next load of this table copies it (table.c) */
            ice_meta_cache_put(cat, c->ns, c->name, c->next_location, (int64_t)c->metadata_bytes,
                               c->next);
            ice_meta_cache_put_raw(cat, c->ns, c->name, c->next_location, &c->next_json,
                                   c->next_json_len);
        }
    }
    tm.finish_us += since_us(&t);
    if (res) {
        res->timing = tm;
    }
    return FR_OK;
}

/* ------------------------------------------------------------ the API -- */

int fr_ice_txn_begin(struct fr_ice_catalog *cat, struct fr_ice_txn **txn)
{
    *txn = calloc(1, sizeof **txn);
    if (!*txn) {
        return FR_ENOMEM;
    }
    (*txn)->cat = cat;
    return FR_OK;
}

static int txn_add(struct fr_ice_txn *txn, enum ice_change_kind kind, const char *ns,
                   const char *name, const struct fr_ice_data_file *files, uint32_t nfiles,
                   const struct fr_ice_commit_info *info)
{
    ice_err_clear();
    if (txn->done) {
        return ice_err(FR_ESTATE, "transaction already committed");
    }
    if (txn->n == ICE_MAX_CHANGES) {
        return ice_err(FR_EINVAL, "transaction holds at most %d tables", ICE_MAX_CHANGES);
    }
    for (uint32_t i = 0; i < txn->n; i++) {
        if (strcmp(txn->changes[i]->ns, ns) == 0 && strcmp(txn->changes[i]->name, name) == 0) {
            return ice_err(FR_EINVAL, "table %s.%s: already in this transaction", ns, name);
        }
    }
    if (nfiles && !files) {
        return ice_err(FR_EINVAL, "table %s.%s: no files", ns, name);
    }
    struct ice_change *c;
    int rc = ice_change_new(txn->cat, kind, ns, name, &c);
    if (rc == FR_OK) {
        rc = ice_change_set_files(c, NULL, files, nfiles);
    }
    if (rc == FR_OK) {
        rc = ice_change_set_info(c, info);
    }
    if (rc < 0) {
        ice_change_free(c);
        return rc;
    }
    txn->changes[txn->n++] = c;
    return FR_OK;
}

int ice_txn_add_change(struct fr_ice_txn *txn, struct ice_change *c)
{
    int rc = FR_OK;
    if (txn->done) {
        rc = ice_err(FR_ESTATE, "transaction already committed");
    } else if (txn->n == ICE_MAX_CHANGES) {
        rc = ice_err(FR_EINVAL, "transaction holds at most %d tables", ICE_MAX_CHANGES);
    }
    for (uint32_t i = 0; rc == FR_OK && i < txn->n; i++) {
        if (strcmp(txn->changes[i]->ns, c->ns) == 0 && strcmp(txn->changes[i]->name, c->name) == 0) {
            rc = ice_err(FR_EINVAL, "table %s.%s: already in this transaction", c->ns, c->name);
        }
    }
    if (rc < 0) {
        ice_change_free(c);
        return rc;
    }
    txn->changes[txn->n++] = c;
    return FR_OK;
}

int fr_ice_txn_append(struct fr_ice_txn *txn, const char *ns, const char *name,
                      const struct fr_ice_data_file *files, uint32_t nfiles,
                      const struct fr_ice_commit_info *info)
{
    return txn_add(txn, ICE_CH_APPEND, ns, name, files, nfiles, info);
}

int fr_ice_txn_overwrite(struct fr_ice_txn *txn, const char *ns, const char *name,
                         const struct fr_ice_data_file *files, uint32_t nfiles,
                         const struct fr_ice_commit_info *info)
{
    return txn_add(txn, ICE_CH_OVERWRITE, ns, name, files, nfiles, info);
}

int fr_ice_txn_commit(struct fr_ice_txn *txn, struct fr_ice_commit_result *res)
{
    if (txn->done) {
        return ice_err(FR_ESTATE, "transaction already committed");
    }
    if (txn->n == 0) {
        return ice_err(FR_EINVAL, "empty transaction");
    }
    txn->done = true;
    struct txn_guard guard = {txn->guard, txn->guard_arg};
    return txn_run(txn->cat, txn->changes, txn->n, &guard, res);
}

void fr_ice_txn_guard(struct fr_ice_txn *txn, fr_ice_guard_fn fn, void *arg)
{
    txn->guard = fn;
    txn->guard_arg = arg;
}

void fr_ice_txn_free(struct fr_ice_txn *txn)
{
    if (!txn) {
        return;
    }
    for (uint32_t i = 0; i < txn->n; i++) {
        ice_change_free(txn->changes[i]);
    }
    free(txn);
}

int ice_commit_one(struct fr_ice_catalog *cat, struct ice_change *c, int64_t *snapshot_id)
{
    struct fr_ice_commit_result res = {0};
    int rc = txn_run(cat, &c, 1, NULL, &res);
    if (rc == FR_OK && snapshot_id) {
        *snapshot_id = res.snapshot_id[0];
    }
    return rc;
}

static int one(struct fr_ice_catalog *cat, enum ice_change_kind kind, const char *ns,
               const char *name, const struct fr_ice_data_file *files, uint32_t nfiles,
               const struct fr_ice_commit_info *info, int64_t *snapshot_id)
{
    struct fr_ice_txn *txn;
    struct fr_ice_commit_result res = {0};
    int rc = fr_ice_txn_begin(cat, &txn);
    if (rc < 0) {
        return rc;
    }
    rc = txn_add(txn, kind, ns, name, files, nfiles, info);
    if (rc == FR_OK) {
        rc = fr_ice_txn_commit(txn, &res);
    }
    if (rc == FR_OK && snapshot_id) {
        *snapshot_id = res.snapshot_id[0];
    }
    fr_ice_txn_free(txn);
    return rc;
}

int fr_ice_append(struct fr_ice_catalog *cat, const char *ns, const char *name,
                  const struct fr_ice_data_file *files, uint32_t nfiles,
                  const struct fr_ice_commit_info *info, int64_t *snapshot_id)
{
    return one(cat, ICE_CH_APPEND, ns, name, files, nfiles, info, snapshot_id);
}

int fr_ice_overwrite(struct fr_ice_catalog *cat, const char *ns, const char *name,
                     const struct fr_ice_data_file *files, uint32_t nfiles,
                     const struct fr_ice_commit_info *info, int64_t *snapshot_id)
{
    return one(cat, ICE_CH_OVERWRITE, ns, name, files, nfiles, info, snapshot_id);
}

int fr_ice_rewrite(struct fr_ice_catalog *cat, const char *ns, const char *name,
                   const char *const *remove_paths, uint32_t nremove,
                   const struct fr_ice_data_file *files, uint32_t nfiles, int64_t *snapshot_id)
{
    ice_err_clear();
    if (nremove == 0 || !remove_paths) {
        return ice_err(FR_EINVAL, "table %s.%s: a rewrite must remove at least one file", ns, name);
    }
    struct ice_change *c;
    int rc = ice_change_new(cat, ICE_CH_REWRITE, ns, name, &c);
    if (rc == FR_OK) {
        rc = ice_change_set_files(c, NULL, files, nfiles);
    }
    if (rc == FR_OK) {
        c->remove = ice_alloc(c->arena, sizeof *c->remove * nremove);
        rc = c->remove ? FR_OK : FR_ENOMEM;
        for (uint32_t i = 0; rc == FR_OK && i < nremove; i++) {
            c->remove[i] = ice_strdup(c->arena, remove_paths[i]);
            rc = c->remove[i] ? FR_OK : FR_ENOMEM;
        }
        c->nremove = nremove;
    }
    if (rc == FR_OK) {
        rc = ice_commit_one(cat, c, snapshot_id);
    }
    ice_change_free(c);
    return rc;
}

int fr_ice_add_column(struct fr_ice_catalog *cat, const char *ns, const char *name,
                      const char *column, enum fr_ice_type type, const char *doc, int32_t *field_id)
{
    ice_err_clear();
    if (!ice_name_ok(column) || type < FR_ICE_BOOLEAN || type > FR_ICE_TIMESTAMPTZ) {
        return ice_err(FR_EINVAL, "table %s.%s: bad column name or type", ns, name);
    }
    struct ice_change *c;
    int rc = ice_change_new(cat, ICE_CH_ADD_COLUMN, ns, name, &c);
    if (rc < 0) {
        return rc;
    }
    c->column = ice_strdup(c->arena, column);
    c->column_type = type;
    c->column_doc = doc ? ice_strdup(c->arena, doc) : NULL;
    rc = ice_commit_one(cat, c, NULL);
    if (rc == FR_OK && field_id) {
        *field_id = c->new_field_id;
    }
    ice_change_free(c);
    return rc;
}

int fr_ice_expire(struct fr_ice_catalog *cat, const char *ns, const char *name,
                  int64_t older_than_ms, uint32_t retain_last, struct fr_ice_expire_stats *stats)
{
    ice_err_clear();
    struct ice_change *c;
    int rc = ice_change_new(cat, ICE_CH_EXPIRE, ns, name, &c);
    if (rc < 0) {
        return rc;
    }
    c->older_than_ms = older_than_ms;
    c->retain_last = retain_last < 1 ? 1 : retain_last;
    rc = ice_commit_one(cat, c, NULL);
    if (stats) {
        stats->snapshots_expired = rc == FR_OK ? c->expired : 0;
        stats->files_deleted = c->deleted;
        stats->scratch_peak_bytes = c->expire_scan_peak;
    }
    ice_change_free(c);
    return rc;
}
