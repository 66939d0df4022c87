/*
 * maintenance.c — removing orphan files: files under a table's directory
 * that no retained version of the table reaches. A crash in the middle of
 * a commit (tests/crash) leaves such files: data files written but never
 * committed, manifests, manifest lists and metadata files of an attempt
 * that never swapped the catalog, temporaries of an interrupted write.
 *
 * Reachable (after Java's DeleteOrphanFiles): the current metadata file,
 * every file in its metadata-log, v<N>.metadata.json for the published N
 * and version-hint.text, every retained snapshot's manifest list, every
 * manifest those lists name, and every data file those manifests list as
 * ADDED or EXISTING. The published copies v<K>.metadata.json of the
 * retained metadata files stay too (a catalog-free reader may have just
 * read hint K); older copies are orphans.
 *
 * Invariants: a file is removed only when it is unreachable AND older than
 * the caller's cutoff (a commit in flight writes files before the catalog
 * names them); a manifest or manifest list that cannot be read stops the
 * whole run with an error, so nothing is deleted on a partial view.
 * Expiry lives in commit.c / changes.c (it is a commit); compaction in
 * compact.c.
 */
#include "iceberg/iceberg_int.h"

#include "core/err.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct orphan_walk {
    const struct fr_ice_table *table;
    const struct ice_strset *reachable;
    int64_t older_than_ms;
    bool dry_run;
    struct fr_ice_orphan_stats *stats;
    int64_t published;
};

static bool is_published_copy(const char *path, int64_t published)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strcmp(base, "version-hint.text") == 0) {
        return true;
    }
    char want[64];
    snprintf(want, sizeof want, "v%" PRId64 ".metadata.json", published);
    return published >= 0 && strcmp(base, want) == 0;
}

static int orphan_visit(void *arg, const char *path)
{
    struct orphan_walk *w = arg;
    w->stats->files_seen++;
    if (ice_strset_has(w->reachable, path) || is_published_copy(path, w->published)) {
        return FR_OK;
    }
    w->stats->orphans++;
    int64_t size = 0, mtime = 0;
    const struct fr_ice_io *io = &w->table->cat->io;
    if (ice_io_stat(io, path, &size, &mtime) < 0 || mtime >= w->older_than_ms) {
        return FR_OK;
    }
    if (!w->dry_run && ice_io_remove(io, path) < 0) {
        return FR_OK; /* raced with another cleaner: fine */
    }
    w->stats->removed++;
    w->stats->bytes_removed += size;
    return FR_OK;
}

/* Add a URI's local path to the set (the string lives in arena). */
static int reach(const struct fr_ice_table *t, struct fr_ice_arena *a, struct ice_strset *set,
                 const char *uri)
{
    char local[ICE_PATH_MAX];
    if (ice_local_path(t, uri, local, sizeof local) < 0) {
        return FR_OK; /* outside the table: never ours to delete */
    }
    char *s = ice_strdup(a, local);
    if (!s) {
        return FR_ENOMEM;
    }
    return ice_strset_add(set, s) < 0 ? FR_ENOMEM : FR_OK;
}

/* The published copy v<K>.metadata.json of a retained metadata file. */
static int reach_copy(const struct fr_ice_table *t, struct fr_ice_arena *a, struct ice_strset *set,
                      const char *uri)
{
    int64_t k = ice_meta_version(uri);
    if (k < 0) {
        return FR_OK;
    }
    char *s = ice_sprintf(a, "%s/metadata/v%" PRId64 ".metadata.json", t->dir, k);
    if (!s) {
        return FR_ENOMEM;
    }
    return ice_strset_add(set, s) < 0 ? FR_ENOMEM : FR_OK;
}

int fr_ice_remove_orphans(struct fr_ice_catalog *cat, const char *ns, const char *name,
                          int64_t older_than_ms, bool dry_run, struct fr_ice_orphan_stats *stats)
{
    struct fr_ice_table *t = NULL;
    int rc = fr_ice_table_load(cat, ns, name, &t);
    if (rc == FR_OK) {
        rc = ice_remove_orphans_in(t, older_than_ms, dry_run, true, stats);
    } else if (stats) {
        memset(stats, 0, sizeof *stats);
    }
    fr_ice_table_free(t);
    return rc;
}

int ice_remove_orphans_in(const struct fr_ice_table *t, int64_t older_than_ms, bool dry_run,
                          bool publish, struct fr_ice_orphan_stats *stats)
{
    struct fr_ice_orphan_stats local_stats;
    struct fr_ice_catalog *cat = t->cat;
    struct ice_strset set, seen_manifests;
    struct fr_ice_arena *a = ice_arena_new(1u << 30);
    ice_strset_init(&set);
    ice_strset_init(&seen_manifests);
    if (!stats) {
        stats = &local_stats;
    }
    memset(stats, 0, sizeof *stats);
    int rc = a ? FR_OK : FR_ENOMEM;
    if (rc < 0) {
        goto cleanup;
    }
    const struct ice_meta *m = t->meta;
    rc = reach(t, a, &set, t->meta_location);
    if (rc == FR_OK) {
        rc = reach_copy(t, a, &set, t->meta_location);
    }
    for (uint32_t i = 0; rc == FR_OK && i < m->nmetadata_log; i++) {
        rc = reach(t, a, &set, m->metadata_log[i].file);
        if (rc == FR_OK) {
            rc = reach_copy(t, a, &set, m->metadata_log[i].file);
        }
    }
    for (uint32_t i = 0; rc == FR_OK && i < m->nsnapshots; i++) {
        struct ice_mfile *mfs;
        uint32_t n;
        rc = reach(t, a, &set, m->snapshots[i].pub.manifest_list);
        if (rc == FR_OK) {
            rc = ice_read_mlist(t, &m->snapshots[i], a, &mfs, &n);
        }
        for (uint32_t k = 0; rc == FR_OK && k < n; k++) {
            if (ice_strset_add(&seen_manifests, mfs[k].path) != 1) {
                continue;
            }
            struct ice_entry *e;
            uint32_t ne;
            rc = reach(t, a, &set, mfs[k].path);
            if (rc == FR_OK) {
                rc = ice_read_manifest(t, &mfs[k], a, &e, &ne);
            }
            for (uint32_t j = 0; rc == FR_OK && j < ne; j++) {
                if (e[j].status != ICE_DELETED) {
                    rc = reach(t, a, &set, e[j].file.path);
                }
            }
        }
    }
    if (rc < 0) {
        char why[1024];
        snprintf(why, sizeof why, "%s", fr_ice_errmsg());
        ice_err(rc, "orphan removal stopped, nothing deleted: %s", why);
        goto cleanup;
    }
    /* the hint names the published copy to keep; bring it up to date first
     * (the catalog's own job behind a REST catalog: its commits publish) */
    if (publish) {
        ice_publish(cat, t->dir, t->meta_location, NULL, NULL, 0);
    }
    struct orphan_walk w = {t,       &set,  older_than_ms,
                            dry_run, stats, ice_meta_version(t->meta_location)};
    rc = cat->io.ops->list(cat->io.ctx, t->dir, orphan_visit, &w);
cleanup:
    ice_strset_free(&set);
    ice_strset_free(&seen_manifests);
    ice_arena_free(a);
    return rc;
}
