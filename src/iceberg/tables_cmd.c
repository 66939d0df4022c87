/*
 * tables_cmd.c — `freshet tables` (tables, snapshots, files and sizes, as a
 * table or --json). Formats and options in iceberg_cmd.h and the usage text
 * below (`freshet compact` is src/pipeline/compact_cmd.c). Reads through the public API only. One thread.
 */
#include "iceberg/iceberg_cmd.h"

#include "iceberg/iceberg.h"
#include "iceberg/rest.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/err.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char tables_usage[] =
    "usage: freshet tables [--json] [--table NS.NAME] [--files] [--snapshot ID | --at MS]\n"
    "\n"
    "List the lake's Iceberg tables (catalog <data>/lake/catalog.db, or the REST\n"
    "catalog of lake.catalog_uri): current\n"
    "snapshot, live data files, records and bytes, and every snapshot kept.\n"
    "  --json          one JSON object: {\"catalog\",\"warehouse\",\"tables\":[...]}\n"
    "  --table NS.NAME only this table\n"
    "  --files         also list each live data file (path, bytes, records)\n"
    "  --snapshot ID   files as of that snapshot (time travel)\n"
    "  --at MS         files as of that time, Unix milliseconds (time travel)\n";

static bool lake_exists(const char *data_dir)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/lake/catalog.db", data_dir);
    return stat(path, &st) == 0;
}

static void put_json_str(FILE *out, const char *s)
{
    struct fr_buf b;
    fr_buf_init(&b, 1u << 20);
    if (fr_buf_json_str(&b, s, strlen(s)) == FR_OK) {
        fwrite(b.data, 1, b.len, out);
    } else {
        fputs("null", out);
    }
    fr_buf_free(&b);
}

static void put_value(FILE *out, const struct fr_ice_value *v)
{
    if (v->is_null) {
        fputs("null", out);
        return;
    }
    switch (v->type) {
    case FR_ICE_BOOLEAN:
        fputs(v->v.b ? "true" : "false", out);
        break;
    case FR_ICE_INT:
    case FR_ICE_DATE:
        fprintf(out, "%d", (int)v->v.i32);
        break;
    case FR_ICE_DOUBLE:
        fprintf(out, "%.17g", v->v.f64);
        break;
    case FR_ICE_STRING: {
        char tmp[1024];
        snprintf(tmp, sizeof tmp, "%.*s", (int)v->v.str.len, v->v.str.ptr);
        put_json_str(out, tmp);
        break;
    }
    default:
        fprintf(out, "%" PRId64, v->v.i64);
        break;
    }
}

struct tables_opts {
    bool json, files;
    int64_t snapshot, at;
    const char *only;
};

static int show_table(struct fr_ice_catalog *cat, struct fr_ice_rest *rest, const char *ns,
                      const char *name, const struct tables_opts *o, bool first)
{
    struct fr_ice_table *t = NULL;
    struct fr_ice_file_list list = {0};
    int rc =
        rest ? fr_ice_rest_table(rest, cat, ns, name, &t) : fr_ice_table_load(cat, ns, name, &t);
    int64_t snap = o->snapshot;
    if (rc == FR_OK && o->at >= 0) {
        rc = fr_ice_snapshot_at(t, o->at, &snap);
    }
    if (rc == FR_OK) {
        rc = fr_ice_files(cat, t, snap, false, &list);
    }
    if (rc < 0) {
        fprintf(stderr, "freshet tables: %s.%s: %s\n", ns, name, fr_ice_errmsg());
        fr_ice_table_free(t);
        return rc;
    }
    uint32_t nsnap;
    const struct fr_ice_snapshot *snaps = fr_ice_table_snapshots(t, &nsnap);
    FILE *out = stdout;
    /* A warehouse in a bucket has no local copy: its files are named by URI
     * only (local_path null), never by the local path they map onto. */
    const bool local = strncmp(fr_ice_catalog_warehouse_uri(cat), "file://", 7) == 0;
    if (o->json) {
        fputs(first ? "" : ",", out);
        fputs("{\"namespace\":", out);
        put_json_str(out, ns);
        fputs(",\"name\":", out);
        put_json_str(out, name);
        fputs(",\"location\":", out);
        put_json_str(out, fr_ice_table_location(t));
        fputs(",\"metadata_file\":", out);
        put_json_str(out, fr_ice_table_metadata_file(t));
        fprintf(out,
                ",\"current_snapshot_id\":%" PRId64 ",\"listed_snapshot_id\":%" PRId64
                ",\"sequence_number\":%" PRId64 ",\"files\":%zu,\"records\":%" PRId64
                ",\"bytes\":%" PRId64 ",\"snapshots\":[",
                fr_ice_table_snapshot_id(t), list.snapshot_id, fr_ice_table_sequence(t),
                list.nfiles, list.total_records, list.total_bytes);
        for (uint32_t i = 0; i < nsnap; i++) {
            const struct fr_ice_snapshot *s = &snaps[i];
            fprintf(out,
                    "%s{\"snapshot_id\":%" PRId64 ",\"parent_id\":%" PRId64
                    ",\"sequence_number\":%" PRId64 ",\"timestamp_ms\":%" PRId64 ",\"operation\":",
                    i ? "," : "", s->snapshot_id, s->parent_id, s->sequence_number,
                    s->timestamp_ms);
            put_json_str(out, s->operation);
            fputs(",\"summary\":{", out);
            for (uint32_t k = 0; k < s->nsummary; k++) {
                fputs(k ? "," : "", out);
                put_json_str(out, s->summary[k].key);
                fputc(':', out);
                put_json_str(out, s->summary[k].value);
            }
            fputs("}}", out);
        }
        fputc(']', out);
        if (o->files) {
            fputs(",\"data_files\":[", out);
            for (size_t i = 0; i < list.nfiles; i++) {
                const struct fr_ice_file *f = &list.files[i];
                fputs(i ? ",{\"path\":" : "{\"path\":", out);
                put_json_str(out, f->path);
                fputs(",\"local_path\":", out);
                if (local) {
                    put_json_str(out, f->local_path);
                } else {
                    fputs("null", out);
                }
                fprintf(out,
                        ",\"bytes\":%" PRId64 ",\"records\":%" PRId64 ",\"snapshot_id\":%" PRId64
                        ",\"sequence_number\":%" PRId64 ",\"partition\":[",
                        f->file_size, f->record_count, f->snapshot_id, f->sequence_number);
                for (uint32_t p = 0; p < f->npartition; p++) {
                    fputs(p ? "," : "", out);
                    put_value(out, &f->partition[p]);
                }
                fputs("]}", out);
            }
            fputc(']', out);
        }
        fputc('}', out);
    } else {
        fprintf(out,
                "%s.%s  snapshot %" PRId64 "  seq %" PRId64 "  files %zu  records %" PRId64
                "  bytes %" PRId64 "  snapshots kept %u\n",
                ns, name, list.snapshot_id, fr_ice_table_sequence(t), list.nfiles,
                list.total_records, list.total_bytes, nsnap);
        fprintf(out, "  location %s\n  metadata %s\n", fr_ice_table_location(t),
                fr_ice_table_metadata_file(t));
        for (uint32_t i = 0; i < nsnap; i++) {
            const struct fr_ice_snapshot *s = &snaps[i];
            char when[32];
            fr_time_format_ms(s->timestamp_ms * 1000, when);
            const char *epoch = NULL, *added = "0", *total = "?";
            for (uint32_t k = 0; k < s->nsummary; k++) {
                if (strcmp(s->summary[k].key, FR_ICE_SUMMARY_EPOCH) == 0) {
                    epoch = s->summary[k].value;
                } else if (strcmp(s->summary[k].key, "added-records") == 0) {
                    added = s->summary[k].value;
                } else if (strcmp(s->summary[k].key, "total-records") == 0) {
                    total = s->summary[k].value;
                }
            }
            fprintf(out, "  %c %-20" PRId64 " seq %-6" PRId64 " %s  %-9s +%s rows, %s total%s%s\n",
                    s->snapshot_id == fr_ice_table_snapshot_id(t) ? '*' : ' ', s->snapshot_id,
                    s->sequence_number, when, s->operation, added, total, epoch ? ", epoch " : "",
                    epoch ? epoch : "");
        }
        if (o->files) {
            for (size_t i = 0; i < list.nfiles; i++) {
                fprintf(out, "    %12" PRId64 " B %10" PRId64 " rows  %s\n",
                        list.files[i].file_size, list.files[i].record_count,
                        local ? list.files[i].local_path : list.files[i].path);
            }
        }
    }
    fr_ice_file_list_free(&list);
    fr_ice_table_free(t);
    return FR_OK;
}

static int parse_i64(const char *s, int64_t *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end) {
        return FR_EINVAL;
    }
    *out = v;
    return FR_OK;
}

int fr_cmd_tables(const char *data_dir, int argc, char **argv)
{
    return fr_cmd_tables_cat(NULL, NULL, NULL, data_dir, argc, argv);
}

int fr_cmd_tables_cat(struct fr_ice_catalog *given, struct fr_ice_rest *rest, const char *catalog,
                      const char *data_dir, int argc, char **argv)
{
    struct tables_opts o = {false, false, -1, -1, NULL};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0) {
            o.json = true;
        } else if (strcmp(a, "--files") == 0) {
            o.files = true;
        } else if (strcmp(a, "--table") == 0 && i + 1 < argc) {
            o.only = argv[++i];
        } else if (strcmp(a, "--snapshot") == 0 && i + 1 < argc) {
            if (parse_i64(argv[++i], &o.snapshot) < 0) {
                fprintf(stderr, "freshet tables: bad --snapshot\n%s", tables_usage);
                return 2;
            }
        } else if (strcmp(a, "--at") == 0 && i + 1 < argc) {
            if (parse_i64(argv[++i], &o.at) < 0) {
                fprintf(stderr, "freshet tables: bad --at\n%s", tables_usage);
                return 2;
            }
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(tables_usage, stdout);
            return 0;
        } else {
            fprintf(stderr, "freshet tables: unknown argument '%s'\n%s", a, tables_usage);
            return 2;
        }
    }
    if (!given && !lake_exists(data_dir)) {
        if (o.json) {
            printf("{\"catalog\":null,\"warehouse\":null,\"tables\":[]}\n");
        } else {
            printf("no lake yet under %s/lake\n", data_dir);
        }
        return 0;
    }
    struct fr_ice_catalog *cat = given;
    struct fr_ice_catalog_opts copts = {.data_dir = data_dir};
    struct fr_ice_ident *ids = NULL;
    size_t n = 0;
    int rc = given ? FR_OK : fr_ice_catalog_open(&copts, &cat);
    if (rc == FR_OK) {
        rc = rest ? fr_ice_rest_list_tables(rest, &ids, &n) : fr_ice_list_tables(cat, &ids, &n);
        if (rc == FR_ENOTFOUND && rest) {
            rc = FR_OK; /* the catalog answered: it has no namespace yet */
        }
    }
    if (rc < 0) {
        fprintf(stderr, "freshet tables: %s\n", fr_ice_errmsg());
        if (!given) {
            fr_ice_catalog_close(cat);
        }
        return 1;
    }
    if (o.json) {
        char dbpath[4200];
        snprintf(dbpath, sizeof dbpath, "%s/lake/catalog.db", data_dir);
        printf("{\"catalog\":");
        put_json_str(stdout, catalog ? catalog : dbpath);
        printf(",\"warehouse\":");
        put_json_str(stdout, fr_ice_catalog_warehouse_uri(cat));
        printf(",\"tables\":[");
    }
    int status = 0;
    bool first = true;
    for (size_t i = 0; i < n; i++) {
        char ident[300];
        snprintf(ident, sizeof ident, "%s.%s", ids[i].ns, ids[i].name);
        if (o.only && strcmp(o.only, ident) != 0) {
            continue;
        }
        if (show_table(cat, rest, ids[i].ns, ids[i].name, &o, first) < 0) {
            status = 1;
        } else {
            first = false;
        }
    }
    if (o.json) {
        printf("]}\n");
    }
    free(ids);
    if (!given) {
        fr_ice_catalog_close(cat);
    }
    return status;
}
