/*
 * tables.c — `GET /api/v1/tables`: the lake's tables from the catalog,
 * with the live data files of each table's current snapshot as URLs under
 * /lake/ (served by files.c), so the explorer in the browser can read them
 * with range requests. Opens its own catalog handle per request (any
 * number of handles may read the catalog while the processor commits);
 * never creates a lake that does not exist. With an S3 warehouse the
 * catalog reads its metadata through a client of lake_s3.c's pool, and the
 * URLs are the same /lake/<path> (lake_s3.c maps them to keys). With
 * lake.catalog_uri the tables are listed and loaded through that REST
 * catalog (a client per request; the local handle only maps the shared
 * warehouse).
 */
#include "serve/serve_int.h"

#include "iceberg/rest.h"

#include "core/buf.h"
#include "core/err.h"
#include "iceberg/iceberg.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TABLES_CAP ((size_t)32 << 20)
#define TABLES_MAX_FILES 10000

static const char *tables_type_name(enum fr_ice_type type)
{
    switch (type) {
    case FR_ICE_BOOLEAN:
        return "boolean";
    case FR_ICE_INT:
        return "int";
    case FR_ICE_LONG:
        return "long";
    case FR_ICE_DOUBLE:
        return "double";
    case FR_ICE_STRING:
        return "string";
    case FR_ICE_DATE:
        return "date";
    case FR_ICE_TIMESTAMP:
        return "timestamp";
    case FR_ICE_TIMESTAMPTZ:
        return "timestamptz";
    }
    return "?";
}

/* The catalog's warehouse: its local directory (the one an S3 warehouse's
 * paths are mapped onto), that directory resolved, and its URI. */
struct tables_wh {
    const char *dir;
    char real[PATH_MAX];
    const char *uri;
};

static const char *tables_under(const char *s, const char *root)
{
    size_t n = root ? strlen(root) : 0;
    return s && n && strncmp(s, root, n) == 0 && s[n] == '/' ? s + n + 1 : NULL;
}

/* "/lake/<rel>" for a path or URI inside the warehouse, else null. */
static int tables_put_url(struct fr_buf *out, const struct tables_wh *wh, const char *local)
{
    const char *rel = tables_under(local, wh->uri);
    if (!rel && local && strncmp(local, "file://", 7) == 0) {
        local += 7;
    }
    if (!rel) {
        rel = tables_under(local, wh->dir);
    }
    if (!rel) {
        rel = tables_under(local, wh->real);
    }
    if (!rel) {
        return fr_buf_puts(out, "null");
    }
    int rc = fr_buf_puts(out, "\"/lake/");
    if (rc == FR_OK) {
        rc = serve_url_path(out, rel);
    }
    return rc == FR_OK ? fr_buf_putc(out, '"') : rc;
}

static int tables_one(struct fr_ice_catalog *cat, struct fr_ice_rest *rest,
                      const struct fr_ice_ident *ident, const struct tables_wh *wh,
                      struct fr_buf *out)
{
    struct fr_ice_table *table = NULL;
    struct fr_ice_file_list list;
    memset(&list, 0, sizeof list);
    int rc = rest ? fr_ice_rest_table(rest, cat, ident->ns, ident->name, &table)
                  : fr_ice_table_load(cat, ident->ns, ident->name, &table);
    if (rc < 0) {
        return rc;
    }
    int64_t snap = fr_ice_table_snapshot_id(table);
    if (snap >= 0) {
        rc = fr_ice_files(cat, table, -1, false, &list);
        if (rc < 0) {
            goto cleanup;
        }
    }
    rc = fr_buf_puts(out, "{\"namespace\":");
    if (rc == FR_OK) {
        rc = fr_buf_json_str(out, ident->ns, strlen(ident->ns));
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, ",\"name\":");
    }
    if (rc == FR_OK) {
        rc = fr_buf_json_str(out, ident->name, strlen(ident->name));
    }
    if (rc == FR_OK) {
        rc = snap >= 0 ? fr_buf_printf(out, ",\"snapshot_id\":%lld", (long long)snap)
                       : fr_buf_puts(out, ",\"snapshot_id\":null");
    }
    if (rc == FR_OK) {
        rc = fr_buf_printf(out, ",\"records\":%lld,\"bytes\":%lld,\"metadata_url\":",
                           (long long)list.total_records, (long long)list.total_bytes);
    }
    if (rc == FR_OK) {
        rc = tables_put_url(out, wh, fr_ice_table_metadata_file(table));
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, ",\"columns\":[");
    }
    uint32_t nfields = 0;
    const struct fr_ice_field *fields = fr_ice_table_fields(table, &nfields);
    for (uint32_t i = 0; rc == FR_OK && i < nfields; i++) {
        rc = fr_buf_printf(out, "%s{\"id\":%d,\"name\":", i ? "," : "", (int)fields[i].id);
        if (rc == FR_OK) {
            rc = fr_buf_json_str(out, fields[i].name, strlen(fields[i].name));
        }
        if (rc == FR_OK) {
            rc = fr_buf_printf(out, ",\"type\":\"%s\",\"required\":%s}",
                               tables_type_name(fields[i].type),
                               fields[i].required ? "true" : "false");
        }
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, "],\"files\":[");
    }
    size_t shown = list.nfiles < TABLES_MAX_FILES ? list.nfiles : TABLES_MAX_FILES;
    for (size_t i = 0; rc == FR_OK && i < shown; i++) {
        const struct fr_ice_file *f = &list.files[i];
        rc = fr_buf_printf(out, "%s{\"url\":", i ? "," : "");
        if (rc == FR_OK) {
            rc = tables_put_url(out, wh, f->local_path ? f->local_path : f->path);
        }
        if (rc == FR_OK) {
            rc = fr_buf_printf(out, ",\"bytes\":%lld,\"records\":%lld}", (long long)f->file_size,
                               (long long)f->record_count);
        }
    }
    if (rc == FR_OK) {
        rc =
            fr_buf_printf(out, "],\"files_truncated\":%s}", shown < list.nfiles ? "true" : "false");
    }

cleanup:
    fr_ice_file_list_free(&list);
    fr_ice_table_free(table);
    return rc;
}

enum MHD_Result serve_tables(struct fr_serve *srv, struct MHD_Connection *conn)
{
    struct fr_buf body;
    fr_buf_init(&body, TABLES_CAP);
    int rc = fr_buf_puts(&body, "{\"warehouse\":\"/lake/\",\"tables\":[");
    char db[4200];
    snprintf(db, sizeof db, "%s/lake/catalog.db", srv->data_dir);
    struct stat st;
    const struct fr_conf *conf = srv->opts.conf;
    /* the tables are in a REST catalog: the local handle only maps the
     * warehouse (files_only: no catalog.db is opened or created) */
    const bool rest_uri = conf && conf->lake_catalog_uri && conf->lake_catalog_uri[0];
    struct fr_ice_catalog *cat = NULL;
    struct fr_ice_rest *rest = NULL;
    struct fr_ice_ident *idents = NULL;
    size_t count = 0;
    const char *where = "";
    struct serve_s3_catalog sc;
    memset(&sc, 0, sizeof sc);
    if (rc == FR_OK && (rest_uri || stat(db, &st) == 0)) {
        where = "catalog";
        if (srv->s3) {
            rc = serve_s3_catalog_open(srv, &sc, rest_uri);
            cat = sc.cat;
        } else {
            struct fr_ice_catalog_opts copts = {
                .data_dir = srv->data_dir, .busy_timeout_ms = 2000, .files_only = rest_uri};
            rc = fr_ice_catalog_open(&copts, &cat);
        }
        if (rc == FR_OK && rest_uri) {
            struct fr_ice_rest_opts ropts = {.uri = conf->lake_catalog_uri,
                                             .token = conf->lake_catalog_token};
            where = conf->lake_catalog_uri;
            rc = fr_ice_rest_open(&ropts, &rest);
        }
        if (rc == FR_OK) {
            rc = rest ? fr_ice_rest_list_tables(rest, &idents, &count)
                      : fr_ice_list_tables(cat, &idents, &count);
            rc = rc == FR_ENOTFOUND && rest ? FR_OK : rc; /* no namespace yet */
        }
        struct tables_wh wh = {.dir = cat ? fr_ice_catalog_warehouse(cat) : "",
                               .uri = cat ? fr_ice_catalog_warehouse_uri(cat) : NULL};
        if (!realpath(wh.dir, wh.real)) {
            wh.real[0] = 0;
        }
        for (size_t i = 0; rc == FR_OK && i < count; i++) {
            if (i) {
                rc = fr_buf_putc(&body, ',');
            }
            if (rc == FR_OK) {
                where = idents[i].name;
                rc = tables_one(cat, rest, &idents[i], &wh, &body);
            }
        }
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(&body, "]}\n");
    }
    char msg[300] = "";
    if (rc < 0) {
        snprintf(msg, sizeof msg, "%s: %s %s", where, fr_strerror(rc), fr_ice_errmsg());
    }
    free(idents);
    fr_ice_rest_close(rest);
    if (srv->s3) {
        serve_s3_catalog_close(&sc); /* the catalog, its io, the client back to the pool */
    } else {
        fr_ice_catalog_close(cat);
    }
    if (rc < 0) {
        fr_buf_free(&body);
        /* The bucket unavailable: 503 (counted) as /lake/ answers it. */
        if (srv->s3 && fr_err_class(rc) == FR_ERRC_RETRY) {
            return serve_error(conn, serve_s3_status(srv, rc), "unavailable",
                               "cannot read the lake: %s", msg);
        }
        return serve_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
                           "cannot read the lake: %s", msg);
    }
    return serve_send_json(conn, MHD_HTTP_OK, &body);
}
