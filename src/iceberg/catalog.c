/*
 * catalog.c — the catalog: one SQLite file in the layout of Iceberg's
 * JdbcCatalog (Java) and pyiceberg's SqlCatalog, so Spark, Trino and
 * pyiceberg open the same file freshet writes (docs/ENGINES.md).
 *
 *   iceberg_tables(catalog_name, table_namespace, table_name,
 *                  metadata_location, previous_metadata_location,
 *                  iceberg_type)                 PK (catalog, namespace, name)
 *   iceberg_namespace_properties(catalog_name, namespace, property_key,
 *                  property_value)               PK (catalog, namespace, key)
 *
 * iceberg_type is created up front, so Java and pyiceberg both run in
 * their "V1" mode; a catalog created by an older Java (V0, no such column)
 * is detected and used without the column.
 *
 * A commit is a compare-and-swap: UPDATE ... SET metadata_location = new
 * WHERE metadata_location = old, exactly one changed row per table. All
 * tables of one transaction swap inside one BEGIN IMMEDIATE ... COMMIT, so
 * they move together or not at all. The file is in WAL mode with
 * synchronous=FULL: a COMMIT that returned is durable. A catalog locked
 * past the busy timeout gives FR_EBUSY (retriable, nothing changed).
 *
 * Namespaces (fr_ice_ns_*, at the end of the file) are the distinct
 * namespaces of both tables; creating, updating and dropping one runs in
 * its own BEGIN IMMEDIATE transaction.
 *
 * A handle opened files_only (the tables are in a REST catalog) has no
 * connection at all: no catalog.db is opened or created, and every row
 * operation fails with FR_EUNSUPPORTED (no_db) instead of reading an empty
 * local catalog.
 *
 * One connection per struct fr_ice_catalog; one thread at a time.
 */
#include "iceberg/iceberg_int.h"

#include "core/clock.h"
#include "core/err.h"
#include "core/fsutil.h"
#include "core/syncset.h"

#include <errno.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char ddl[] = "CREATE TABLE IF NOT EXISTS iceberg_tables ("
                          " catalog_name VARCHAR(255) NOT NULL,"
                          " table_namespace VARCHAR(255) NOT NULL,"
                          " table_name VARCHAR(255) NOT NULL,"
                          " metadata_location VARCHAR(1000),"
                          " previous_metadata_location VARCHAR(1000),"
                          " iceberg_type VARCHAR(5),"
                          " PRIMARY KEY (catalog_name, table_namespace, table_name));"
                          "CREATE TABLE IF NOT EXISTS iceberg_namespace_properties ("
                          " catalog_name VARCHAR(255) NOT NULL,"
                          " namespace VARCHAR(255) NOT NULL,"
                          " property_key VARCHAR(255) NOT NULL,"
                          " property_value VARCHAR(1000) NOT NULL,"
                          " PRIMARY KEY (catalog_name, namespace, property_key));";

static int sql_err(struct fr_ice_catalog *cat, int src, const char *what)
{
    int code;
    switch (src & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        code = FR_EBUSY;
        break;
    case SQLITE_FULL:
        code = FR_ENOSPC;
        break;
    case SQLITE_NOMEM:
        code = FR_ENOMEM;
        break;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        code = FR_ECORRUPT;
        break;
    default:
        code = FR_EIO;
        break;
    }
    /* A full disk shows as an I/O error when SQLite cannot grow its -shm or
     * -wal file (which even a reader needs): say so. */
    int oserr = cat->db ? sqlite3_system_errno(cat->db) : 0;
    if (code == FR_EIO && (oserr == ENOSPC || oserr == EDQUOT)) {
        code = FR_ENOSPC;
        return ice_err(code, "catalog %s/catalog.db: %s: %s (no space left on device: SQLite "
                       "needs room for catalog.db-wal and -shm, even to read)",
                       cat->lake_dir, what, sqlite3_errmsg(cat->db));
    }
    return ice_err(code, "catalog %s/catalog.db: %s: %s", cat->lake_dir, what,
                   cat->db ? sqlite3_errmsg(cat->db) : sqlite3_errstr(src));
}

static bool cat_has_type(struct fr_ice_catalog *cat)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(cat->db, "SELECT iceberg_type FROM iceberg_tables LIMIT 0", -1, &st,
                                NULL);
    sqlite3_finalize(st);
    return rc == SQLITE_OK;
}

int ice_cat_open_db(struct fr_ice_catalog *cat, const char *path, int busy_ms)
{
    int rc = sqlite3_open_v2(
        path, &cat->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        return sql_err(cat, rc, "open");
    }
    sqlite3_busy_timeout(cat->db, busy_ms);
    /* Switching to WAL (and the first DDL) can answer SQLITE_BUSY without
     * calling the busy handler while another process opens the same file
     * (the scale-out shards start together): retry for up to busy_ms. */
    static const char *const steps[2][2] = {
        {"PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", "set WAL mode"},
        {ddl, "create tables"}};
    for (int k = 0; k < 2; k++) {
        int64_t deadline = fr_mono_ms() + busy_ms;
        for (;;) {
            char *msg = NULL;
            rc = sqlite3_exec(cat->db, steps[k][0], NULL, NULL, &msg);
            sqlite3_free(msg);
            if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || fr_mono_ms() >= deadline) {
                break;
            }
            fr_sleep_ms(20);
        }
        if (rc != SQLITE_OK) {
            return sql_err(cat, rc, steps[k][1]);
        }
    }
    cat->v1 = cat_has_type(cat);
    return FR_OK;
}

/* A handle opened files_only has no database: its rows are another
 * catalog's (fr_ice_catalog_opts.files_only). */
static int no_db(const struct fr_ice_catalog *cat)
{
    return ice_err(FR_EUNSUPPORTED,
                   "catalog: this handle only maps the warehouse %s; the tables are in another "
                   "catalog (a REST catalog, lake.catalog_uri), not in a local catalog.db",
                   cat->warehouse_uri);
}

static int prep(struct fr_ice_catalog *cat, const char *sql, sqlite3_stmt **st)
{
    if (!cat->db) {
        *st = NULL;
        return no_db(cat);
    }
    int rc = sqlite3_prepare_v2(cat->db, sql, -1, st, NULL);
    return rc == SQLITE_OK ? FR_OK : sql_err(cat, rc, "prepare");
}

int ice_cat_get(struct fr_ice_catalog *cat, const char *ns, const char *name, char *buf, size_t cap)
{
    sqlite3_stmt *st = NULL;
    int rc = prep(cat,
                  cat->v1 ? "SELECT metadata_location FROM iceberg_tables WHERE catalog_name=? AND "
                            "table_namespace=? AND table_name=? AND (iceberg_type='TABLE' OR "
                            "iceberg_type IS NULL)"
                          : "SELECT metadata_location FROM iceberg_tables WHERE catalog_name=? AND "
                            "table_namespace=? AND table_name=?",
                  &st);
    if (rc < 0) {
        return rc;
    }
    sqlite3_bind_text(st, 1, cat->catalog_name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, ns, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) {
        const unsigned char *loc = sqlite3_column_text(st, 0);
        if (!loc) {
            rc =
                ice_err(FR_ECORRUPT, "table %s.%s: catalog row has no metadata_location", ns, name);
        } else if (strlen((const char *)loc) >= cap) {
            rc = ice_err(FR_ETOOBIG, "table %s.%s: metadata_location too long", ns, name);
        } else {
            snprintf(buf, cap, "%s", (const char *)loc);
        }
    } else if (s == SQLITE_DONE) {
        rc = ice_err(FR_ENOTFOUND, "table %s.%s: not in catalog %s", ns, name, cat->catalog_name);
    } else {
        rc = sql_err(cat, s, "read table row");
    }
    sqlite3_finalize(st);
    return rc;
}

int ice_cat_sync(struct fr_ice_catalog *cat)
{
    if (!cat->defer) {
        return FR_OK;
    }
    const char *what = "";
    int rc = fr_syncset_flush(cat->defer, &what);
    if (rc < 0) {
        return ice_err(rc,
                       "cannot make the new files durable before the catalog names them: "
                       "fsync %s: %s",
                       what, fr_strerror(rc));
    }
    return FR_OK;
}

int ice_cat_insert(struct fr_ice_catalog *cat, const char *ns, const char *name,
                   const char *location)
{
    sqlite3_stmt *st = NULL;
    char *msg = NULL;
    int rc = cat->db ? ice_cat_sync(cat) : no_db(cat);
    if (rc < 0) {
        return rc;
    }
    int s = sqlite3_exec(cat->db, "BEGIN IMMEDIATE", NULL, NULL, &msg);
    sqlite3_free(msg);
    if (s != SQLITE_OK) {
        return sql_err(cat, s, "begin");
    }
    rc = prep(cat,
              "INSERT OR IGNORE INTO iceberg_namespace_properties (catalog_name, namespace, "
              "property_key, property_value) VALUES (?, ?, 'exists', 'true')",
              &st);
    if (rc < 0) {
        goto cleanup;
    }
    sqlite3_bind_text(st, 1, cat->catalog_name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, ns, -1, SQLITE_STATIC);
    s = sqlite3_step(st);
    sqlite3_finalize(st);
    st = NULL;
    if (s != SQLITE_DONE) {
        rc = sql_err(cat, s, "create namespace");
        goto cleanup;
    }
    rc = prep(cat,
              cat->v1 ? "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, "
                        "metadata_location, previous_metadata_location, iceberg_type) VALUES "
                        "(?, ?, ?, ?, NULL, 'TABLE')"
                      : "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, "
                        "metadata_location, previous_metadata_location) VALUES (?, ?, ?, ?, NULL)",
              &st);
    if (rc < 0) {
        goto cleanup;
    }
    sqlite3_bind_text(st, 1, cat->catalog_name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, ns, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, location, -1, SQLITE_STATIC);
    s = sqlite3_step(st);
    if ((s & 0xff) == SQLITE_CONSTRAINT) {
        rc = ice_err(FR_EEXIST, "table %s.%s already exists", ns, name);
    } else if (s != SQLITE_DONE) {
        rc = sql_err(cat, s, "insert table row");
    }
cleanup:
    sqlite3_finalize(st);
    s = sqlite3_exec(cat->db, rc == FR_OK ? "COMMIT" : "ROLLBACK", NULL, NULL, &msg);
    sqlite3_free(msg);
    if (rc == FR_OK && s != SQLITE_OK) {
        rc = sql_err(cat, s, "commit");
        sqlite3_exec(cat->db, "ROLLBACK", NULL, NULL, NULL);
    }
    return rc;
}

int ice_cat_swap(struct fr_ice_catalog *cat, const struct ice_cat_update *updates, uint32_t n)
{
    sqlite3_stmt *st = NULL;
    char *msg = NULL;
    char detail[300];
    int rc = cat->db ? ice_cat_sync(cat) : no_db(cat);
    if (rc < 0) {
        return rc;
    }
    int s = sqlite3_exec(cat->db, "BEGIN IMMEDIATE", NULL, NULL, &msg);
    sqlite3_free(msg);
    if (s != SQLITE_OK) {
        return sql_err(cat, s, "begin commit transaction");
    }
    ice_io_step(&cat->io, FR_ICE_STEP_CATALOG_BEGIN, cat->lake_dir);
    rc = prep(cat,
              cat->v1 ? "UPDATE iceberg_tables SET metadata_location = ?, "
                        "previous_metadata_location = ? WHERE catalog_name = ? AND "
                        "table_namespace = ? AND table_name = ? AND metadata_location = ? AND "
                        "(iceberg_type = 'TABLE' OR iceberg_type IS NULL)"
                      : "UPDATE iceberg_tables SET metadata_location = ?, "
                        "previous_metadata_location = ? WHERE catalog_name = ? AND "
                        "table_namespace = ? AND table_name = ? AND metadata_location = ?",
              &st);
    for (uint32_t i = 0; rc == FR_OK && i < n; i++) {
        const struct ice_cat_update *u = &updates[i];
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, u->new_location, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, u->old_location, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, cat->catalog_name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, u->ns, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, u->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, u->old_location, -1, SQLITE_STATIC);
        s = sqlite3_step(st);
        if (s != SQLITE_DONE) {
            rc = sql_err(cat, s, "compare-and-swap");
        } else if (sqlite3_changes(cat->db) != 1) {
            rc = ice_err(FR_ECONFLICT,
                         "table %s.%s: metadata_location moved past %s (concurrent commit)", u->ns,
                         u->name, u->old_location);
        } else {
            snprintf(detail, sizeof detail, "%s.%s", u->ns, u->name);
            ice_io_step(&cat->io, FR_ICE_STEP_CATALOG_UPDATED, detail);
        }
    }
    sqlite3_finalize(st);
    if (rc != FR_OK) {
        sqlite3_exec(cat->db, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    s = sqlite3_exec(cat->db, "COMMIT", NULL, NULL, &msg);
    sqlite3_free(msg);
    if (s != SQLITE_OK) {
        rc = sql_err(cat, s, "commit");
        if (!sqlite3_get_autocommit(cat->db)) {
            sqlite3_exec(cat->db, "ROLLBACK", NULL, NULL, NULL);
        }
        return rc;
    }
    ice_io_step(&cat->io, FR_ICE_STEP_CATALOG_COMMITTED, cat->lake_dir);
    return FR_OK;
}

int ice_cat_delete(struct fr_ice_catalog *cat, const char *ns, const char *name)
{
    sqlite3_stmt *st = NULL;
    int rc = prep(cat,
                  "DELETE FROM iceberg_tables WHERE catalog_name=? AND table_namespace=? AND "
                  "table_name=?",
                  &st);
    if (rc < 0) {
        return rc;
    }
    sqlite3_bind_text(st, 1, cat->catalog_name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, ns, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
    int s = sqlite3_step(st);
    if (s != SQLITE_DONE) {
        rc = sql_err(cat, s, "drop table");
    } else if (sqlite3_changes(cat->db) != 1) {
        rc = ice_err(FR_ENOTFOUND, "table %s.%s: not in catalog", ns, name);
    }
    sqlite3_finalize(st);
    return rc;
}

int fr_ice_list_tables(struct fr_ice_catalog *cat, struct fr_ice_ident **idents, size_t *count)
{
    sqlite3_stmt *st = NULL;
    *idents = NULL;
    *count = 0;
    int rc = prep(cat,
                  cat->v1 ? "SELECT table_namespace, table_name FROM iceberg_tables WHERE "
                            "catalog_name=? AND (iceberg_type='TABLE' OR iceberg_type IS NULL) "
                            "ORDER BY 1, 2"
                          : "SELECT table_namespace, table_name FROM iceberg_tables WHERE "
                            "catalog_name=? ORDER BY 1, 2",
                  &st);
    if (rc < 0) {
        return rc;
    }
    sqlite3_bind_text(st, 1, cat->catalog_name, -1, SQLITE_STATIC);
    size_t cap = 0;
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        if (*count == cap) {
            cap = cap ? cap * 2 : 16;
            struct fr_ice_ident *n = realloc(*idents, cap * sizeof *n);
            if (!n) {
                rc = FR_ENOMEM;
                break;
            }
            *idents = n;
        }
        struct fr_ice_ident *id = &(*idents)[*count];
        snprintf(id->ns, sizeof id->ns, "%s", (const char *)sqlite3_column_text(st, 0));
        snprintf(id->name, sizeof id->name, "%s", (const char *)sqlite3_column_text(st, 1));
        (*count)++;
    }
    if (rc == FR_OK && s != SQLITE_DONE) {
        rc = sql_err(cat, s, "list tables");
    }
    sqlite3_finalize(st);
    if (rc < 0) {
        free(*idents);
        *idents = NULL;
        *count = 0;
    }
    return rc;
}

/* ------------------------------------------------------ open / close -- */

int fr_ice_catalog_open(const struct fr_ice_catalog_opts *opts, struct fr_ice_catalog **out)
{
    *out = NULL;
    ice_err_clear();
    if (!opts || !opts->data_dir) {
        return ice_err(FR_EINVAL, "catalog: no data directory");
    }
    struct fr_ice_catalog *cat = calloc(1, sizeof *cat);
    if (!cat) {
        return FR_ENOMEM;
    }
    int rc = FR_OK;
    char path[ICE_PATH_MAX], abs[PATH_MAX];
    snprintf(path, sizeof path, "%s/lake/warehouse", opts->data_dir);
    rc = fr_fs_mkdirs(path, 0755);
    if (rc < 0) {
        ice_err(rc, "catalog: cannot create %s: %s", path, fr_strerror(rc));
        goto cleanup;
    }
    if (!realpath(path, abs)) {
        rc = ice_err(FR_EIO, "catalog: cannot resolve %s", path);
        goto cleanup;
    }
    cat->warehouse = strdup(abs);
    size_t wl = strlen(abs);
    cat->lake_dir = strndup(abs, wl - strlen("/warehouse"));
    if (opts->warehouse_uri) {
        cat->warehouse_uri = strdup(opts->warehouse_uri);
        size_t ul = cat->warehouse_uri ? strlen(cat->warehouse_uri) : 0;
        while (ul > 0 && cat->warehouse_uri[ul - 1] == '/') {
            cat->warehouse_uri[--ul] = 0;
        }
    } else {
        size_t n = wl + 8;
        cat->warehouse_uri = malloc(n);
        if (cat->warehouse_uri) {
            snprintf(cat->warehouse_uri, n, "file://%s", abs);
        }
    }
    cat->mcache = opts->meta_cache;
    if (!cat->mcache) {
        cat->mcache = fr_ice_meta_cache_new();
        cat->mcache_owned = true;
    }
    cat->catalog_name = strdup(opts->catalog_name ? opts->catalog_name : "freshet");
    cat->max_retries = opts->max_retries == 0 ? 4 : opts->max_retries < 0 ? 0 : opts->max_retries;
    if (opts->io) {
        cat->io = *opts->io;
    } else {
        cat->io.ops = fr_ice_io_posix();
        cat->io.ctx = NULL;
    }
    if (!cat->warehouse || !cat->lake_dir || !cat->warehouse_uri || !cat->catalog_name ||
        !cat->mcache) {
        rc = FR_ENOMEM;
        goto cleanup;
    }
    if (!opts->files_only) {
        snprintf(path, sizeof path, "%s/catalog.db", cat->lake_dir);
        rc = ice_cat_open_db(cat, path, opts->busy_timeout_ms > 0 ? opts->busy_timeout_ms : 5000);
    }
cleanup:
    if (rc < 0) {
        fr_ice_catalog_close(cat);
        return rc;
    }
    *out = cat;
    return FR_OK;
}

void fr_ice_catalog_close(struct fr_ice_catalog *cat)
{
    if (!cat) {
        return;
    }
    if (cat->db) {
        sqlite3_close_v2(cat->db);
    }
    fr_syncset_free(cat->defer); /* publishes' directories: flushed here */
    if (cat->mcache_owned) {
        fr_ice_meta_cache_free(cat->mcache);
    }
    free(cat->lake_dir);
    free(cat->warehouse);
    free(cat->warehouse_uri);
    free(cat->catalog_name);
    free(cat);
}

int fr_ice_catalog_defer_sync(struct fr_ice_catalog *cat)
{
    if (!cat->defer) {
        cat->defer = fr_syncset_new();
    }
    return cat->defer ? FR_OK : FR_ENOMEM;
}

struct fr_syncset *fr_ice_catalog_syncset(const struct fr_ice_catalog *cat)
{
    return cat->defer;
}

const char *fr_ice_catalog_warehouse(const struct fr_ice_catalog *cat)
{
    return cat->warehouse;
}

const char *fr_ice_catalog_warehouse_uri(const struct fr_ice_catalog *cat)
{
    return cat->warehouse_uri;
}

/* --------------------------------------------------------- namespaces -- */

/* Namespaces live in iceberg_namespace_properties (the JDBC layout: one
 * row per property, and the marker property "exists" = "true" for a
 * namespace created without any) and, implicitly, in the table rows that
 * name them. Levels are joined with '.'. */

#define NS_MAX_LISTED 10000

int fr_ice_ns_exists(struct fr_ice_catalog *cat, const char *ns)
{
    sqlite3_stmt *st = NULL;
    ice_err_clear();
    int rc = prep(cat,
                  "SELECT 1 FROM iceberg_namespace_properties WHERE catalog_name=?1 AND "
                  "namespace=?2 UNION ALL SELECT 1 FROM iceberg_tables WHERE catalog_name=?1 AND "
                  "table_namespace=?2 LIMIT 1",
                  &st);
    if (rc < 0) {
        return rc;
    }
    sqlite3_bind_text(st, 1, cat->catalog_name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, ns, -1, SQLITE_STATIC);
    int s = sqlite3_step(st);
    rc = s == SQLITE_ROW ? 1 : s == SQLITE_DONE ? 0 : sql_err(cat, s, "namespace exists");
    sqlite3_finalize(st);
    return rc;
}

int fr_ice_ns_list(struct fr_ice_catalog *cat, const char *parent,
                   int (*fn)(void *arg, const char *ns), void *arg)
{
    sqlite3_stmt *st = NULL;
    char **seen = NULL;
    size_t nseen = 0;
    ice_err_clear();
    size_t plen = parent ? strlen(parent) : 0;
    int rc = prep(cat,
                  "SELECT namespace FROM iceberg_namespace_properties WHERE catalog_name=?1 "
                  "UNION SELECT table_namespace FROM iceberg_tables WHERE catalog_name=?1 "
                  "ORDER BY 1",
                  &st);
    if (rc < 0) {
        return rc;
    }
    seen = calloc(NS_MAX_LISTED, sizeof *seen);
    if (!seen) {
        rc = FR_ENOMEM;
        goto cleanup;
    }
    sqlite3_bind_text(st, 1, cat->catalog_name, -1, SQLITE_STATIC);
    int s;
    while (rc == FR_OK && (s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *ns = (const char *)sqlite3_column_text(st, 0);
        if (!ns) {
            continue;
        }
        /* the child level under parent: "p.x.y" -> "p.x" */
        if (plen && (strncmp(ns, parent, plen) != 0 || ns[plen] != '.')) {
            continue;
        }
        const char *level = ns + (plen ? plen + 1 : 0);
        const char *dot = strchr(level, '.');
        size_t n = dot ? (size_t)(dot - ns) : strlen(ns);
        bool dup = false;
        for (size_t i = 0; i < nseen && !dup; i++) {
            dup = strlen(seen[i]) == n && strncmp(seen[i], ns, n) == 0;
        }
        if (dup) {
            continue;
        }
        if (nseen == NS_MAX_LISTED) {
            rc = ice_err(FR_ETOOBIG, "catalog: more than %d namespaces", NS_MAX_LISTED);
            break;
        }
        seen[nseen] = strndup(ns, n);
        if (!seen[nseen]) {
            rc = FR_ENOMEM;
            break;
        }
        rc = fn(arg, seen[nseen++]);
    }
    if (rc == FR_OK && s != SQLITE_DONE) {
        rc = sql_err(cat, s, "list namespaces");
    }
cleanup:
    sqlite3_finalize(st);
    for (size_t i = 0; i < nseen; i++) {
        free(seen[i]);
    }
    free(seen);
    return rc;
}

/* Insert or replace one property row (inside the caller's transaction). */
static int ns_put(struct fr_ice_catalog *cat, const char *ns, const char *key, const char *value)
{
    sqlite3_stmt *st = NULL;
    int rc = prep(cat,
                  "INSERT OR REPLACE INTO iceberg_namespace_properties (catalog_name, namespace, "
                  "property_key, property_value) VALUES (?, ?, ?, ?)",
                  &st);
    if (rc < 0) {
        return rc;
    }
    sqlite3_bind_text(st, 1, cat->catalog_name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, ns, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, value, -1, SQLITE_STATIC);
    int s = sqlite3_step(st);
    sqlite3_finalize(st);
    return s == SQLITE_DONE ? FR_OK : sql_err(cat, s, "write namespace property");
}

static int ns_begin(struct fr_ice_catalog *cat)
{
    if (!cat->db) {
        return no_db(cat);
    }
    int s = sqlite3_exec(cat->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    return s == SQLITE_OK ? FR_OK : sql_err(cat, s, "begin");
}

static int ns_end(struct fr_ice_catalog *cat, int rc)
{
    int s = sqlite3_exec(cat->db, rc == FR_OK ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL);
    if (rc == FR_OK && s != SQLITE_OK) {
        rc = sql_err(cat, s, "commit");
        if (!sqlite3_get_autocommit(cat->db)) {
            sqlite3_exec(cat->db, "ROLLBACK", NULL, NULL, NULL);
        }
    }
    return rc;
}

int fr_ice_ns_create(struct fr_ice_catalog *cat, const char *ns, const struct fr_ice_kv *props,
                     uint32_t nprops)
{
    ice_err_clear();
    if (!ns || !*ns || strlen(ns) > 127 || strchr(ns, '/') || ns[0] == '.' ||
        ns[strlen(ns) - 1] == '.' || strstr(ns, "..")) {
        return ice_err(FR_EINVAL, "bad namespace name \"%s\"", ns ? ns : "");
    }
    int rc = ns_begin(cat);
    if (rc < 0) {
        return rc;
    }
    int have = fr_ice_ns_exists(cat, ns);
    rc = have < 0 ? have : have ? ice_err(FR_EEXIST, "namespace %s already exists", ns) : FR_OK;
    if (rc == FR_OK) {
        rc = ns_put(cat, ns, "exists", "true");
    }
    for (uint32_t i = 0; rc == FR_OK && i < nprops; i++) {
        rc = ns_put(cat, ns, props[i].key, props[i].value);
    }
    return ns_end(cat, rc);
}

int fr_ice_ns_props(struct fr_ice_catalog *cat, const char *ns,
                    int (*fn)(void *arg, const char *key, const char *value), void *arg)
{
    int have = fr_ice_ns_exists(cat, ns);
    if (have <= 0) {
        return have < 0 ? have : ice_err(FR_ENOTFOUND, "namespace %s does not exist", ns);
    }
    sqlite3_stmt *st = NULL;
    int rc = prep(cat,
                  "SELECT property_key, property_value FROM iceberg_namespace_properties WHERE "
                  "catalog_name=? AND namespace=? AND property_key <> 'exists' ORDER BY 1",
                  &st);
    if (rc < 0) {
        return rc;
    }
    sqlite3_bind_text(st, 1, cat->catalog_name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, ns, -1, SQLITE_STATIC);
    int s;
    while (rc == FR_OK && (s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(st, 0);
        const char *v = (const char *)sqlite3_column_text(st, 1);
        rc = fn(arg, k ? k : "", v ? v : "");
    }
    if (rc == FR_OK && s != SQLITE_DONE) {
        rc = sql_err(cat, s, "read namespace properties");
    }
    sqlite3_finalize(st);
    return rc;
}

int fr_ice_ns_update(struct fr_ice_catalog *cat, const char *ns, const struct fr_ice_kv *updates,
                     uint32_t nupdates, const char *const *removals, uint32_t nremovals,
                     int (*missing)(void *arg, const char *key), void *arg)
{
    ice_err_clear();
    for (uint32_t i = 0; i < nupdates; i++) {
        for (uint32_t k = 0; k < nremovals; k++) {
            if (strcmp(updates[i].key, removals[k]) == 0) {
                return ice_err(FR_EINVAL, "property %s is both updated and removed",
                               removals[k]);
            }
        }
    }
    int rc = ns_begin(cat);
    if (rc < 0) {
        return rc;
    }
    int have = fr_ice_ns_exists(cat, ns);
    rc = have < 0 ? have : !have ? ice_err(FR_ENOTFOUND, "namespace %s does not exist", ns) : FR_OK;
    for (uint32_t i = 0; rc == FR_OK && i < nupdates; i++) {
        rc = ns_put(cat, ns, updates[i].key, updates[i].value);
    }
    sqlite3_stmt *st = NULL;
    if (rc == FR_OK && nremovals) {
        rc = prep(cat,
                  "DELETE FROM iceberg_namespace_properties WHERE catalog_name=? AND namespace=? "
                  "AND property_key=? AND property_key <> 'exists'",
                  &st);
    }
    for (uint32_t i = 0; rc == FR_OK && i < nremovals; i++) {
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, cat->catalog_name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, ns, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, removals[i], -1, SQLITE_STATIC);
        int s = sqlite3_step(st);
        if (s != SQLITE_DONE) {
            rc = sql_err(cat, s, "remove namespace property");
        } else if (sqlite3_changes(cat->db) == 0 && missing) {
            rc = missing(arg, removals[i]);
        }
    }
    sqlite3_finalize(st);
    /* keep the marker so a namespace without properties still exists */
    if (rc == FR_OK) {
        rc = ns_put(cat, ns, "exists", "true");
    }
    return ns_end(cat, rc);
}

int fr_ice_ns_drop(struct fr_ice_catalog *cat, const char *ns)
{
    ice_err_clear();
    int rc = ns_begin(cat);
    if (rc < 0) {
        return rc;
    }
    sqlite3_stmt *st = NULL;
    rc = prep(cat,
              "SELECT count(*) FROM iceberg_tables WHERE catalog_name=?1 AND (table_namespace=?2 "
              "OR substr(table_namespace, 1, length(?2) + 1) = ?2 || '.')",
              &st);
    if (rc == FR_OK) {
        sqlite3_bind_text(st, 1, cat->catalog_name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, ns, -1, SQLITE_STATIC);
        int s = sqlite3_step(st);
        if (s != SQLITE_ROW) {
            rc = sql_err(cat, s, "count tables");
        } else if (sqlite3_column_int64(st, 0) > 0) {
            rc = ice_err(FR_ENOTEMPTY, "namespace %s holds %lld table(s)", ns,
                         (long long)sqlite3_column_int64(st, 0));
        }
        sqlite3_finalize(st);
        st = NULL;
    }
    if (rc == FR_OK) {
        rc = prep(cat,
                  "DELETE FROM iceberg_namespace_properties WHERE catalog_name=? AND namespace=?",
                  &st);
    }
    if (rc == FR_OK) {
        sqlite3_bind_text(st, 1, cat->catalog_name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, ns, -1, SQLITE_STATIC);
        int s = sqlite3_step(st);
        if (s != SQLITE_DONE) {
            rc = sql_err(cat, s, "drop namespace");
        } else if (sqlite3_changes(cat->db) == 0) {
            rc = ice_err(FR_ENOTFOUND, "namespace %s does not exist", ns);
        }
        sqlite3_finalize(st);
    }
    return ns_end(cat, rc);
}
