/*
 * tables_cmd.c — `freshet tables` (tables, snapshots, files and sizes, as a
 * table or --json) and `freshet compact` (maintenance by hand: compaction,
 * snapshot expiry, orphan removal). Formats and options in iceberg_cmd.h
 * and the usage texts below. Reads through the public API only. One thread.
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

static const char compact_usage[] =
    "usage: freshet compact [--json] [--table NS.NAME] [--target-bytes N] [--min-inputs N]\n"
    "                       [--expire-older-than SECONDS] [--retain-last N]\n"
    "                       [--orphans-older-than SECONDS] [--no-compact] [--no-expire]\n"
    "                       [--no-orphans] [--dry-run]\n"
    "\n"
    "Maintain every table (or one): bin-pack small files into files of about\n"
    "--target-bytes (default 134217728) as replace snapshots, expire snapshots\n"
    "older than --expire-older-than (default 86400) keeping at least\n"
    "--retain-last (default 50) and each pipeline's newest epoch marker, and\n"
    "remove unreferenced files older than --orphans-older-than (default 3600;\n"
    "a commit in flight writes files before the catalog names them).\n"
    "Safe while the pipeline runs. --dry-run only counts orphans.\n";

static int split_ident(const char *s, char *ns, char *name)
{
    const char *dot = strrchr(s, '.');
    if (!dot || dot == s || !dot[1] || (size_t)(dot - s) >= 128 || strlen(dot + 1) >= 128) {
        return FR_EINVAL;
    }
    memcpy(ns, s, (size_t)(dot - s));
    ns[dot - s] = 0;
    snprintf(name, 128, "%s", dot + 1);
    return FR_OK;
}

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

/* -------------------------------------------------------------- compact -- */

struct compact_opts {
    bool json, compact, expire, orphans, dry_run;
    const char *only;
    struct fr_ice_compact_opts copts;
    int64_t expire_s, orphan_s, retain;
};

static int maintain(struct fr_ice_catalog *cat, const char *ns, const char *name,
                    const struct compact_opts *o, bool first)
{
    struct fr_ice_compact_stats cs = {0};
    struct fr_ice_expire_stats es = {0};
    struct fr_ice_orphan_stats os = {0};
    int rc = FR_OK;
    int64_t now = fr_wall_ms();
    if (o->compact) {
        rc = fr_ice_compact(cat, ns, name, &o->copts, &cs);
    }
    if (rc == FR_OK && o->expire) {
        rc = fr_ice_expire(cat, ns, name, now - o->expire_s * 1000, (uint32_t)o->retain, &es);
    }
    if (rc == FR_OK && o->orphans) {
        rc = fr_ice_remove_orphans(cat, ns, name, now - o->orphan_s * 1000, o->dry_run, &os);
    }
    if (rc < 0) {
        fprintf(stderr, "freshet compact: %s.%s: %s\n", ns, name, fr_ice_errmsg());
        return rc;
    }
    if (o->json) {
        printf("%s{\"namespace\":\"%s\",\"name\":\"%s\",\"groups\":%u,\"files_before\":%u,"
               "\"files_after\":%u,\"bytes_before\":%" PRId64 ",\"bytes_after\":%" PRId64
               ",\"conflicts\":%u,\"snapshots_expired\":%u,\"files_deleted\":%u,"
               "\"orphans\":%u,\"orphans_removed\":%u,\"orphan_bytes_removed\":%" PRId64 "}",
               first ? "" : ",", ns, name, cs.groups, cs.files_before, cs.files_after,
               cs.bytes_before, cs.bytes_after, cs.conflicts, es.snapshots_expired,
               es.files_deleted, os.orphans, os.removed, os.bytes_removed);
    } else {
        printf("%s.%s: compacted %u groups, files %u -> %u, bytes %" PRId64 " -> %" PRId64
               "%s; expired %u snapshots (%u files deleted); orphans %u, removed %u (%" PRId64
               " bytes)%s\n",
               ns, name, cs.groups, cs.files_before, cs.files_after, cs.bytes_before,
               cs.bytes_after, cs.conflicts ? " (some groups lost a race)" : "",
               es.snapshots_expired, es.files_deleted, os.orphans, os.removed, os.bytes_removed,
               o->dry_run ? " [dry run]" : "");
    }
    return FR_OK;
}

int fr_cmd_compact(const char *data_dir, int argc, char **argv)
{
    struct compact_opts o = {.compact = true,
                             .expire = true,
                             .orphans = true,
                             .expire_s = 86400,
                             .orphan_s = 3600,
                             .retain = 50};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int64_t v = 0;
        bool has_val = i + 1 < argc;
        if (strcmp(a, "--json") == 0) {
            o.json = true;
        } else if (strcmp(a, "--no-compact") == 0) {
            o.compact = false;
        } else if (strcmp(a, "--no-expire") == 0) {
            o.expire = false;
        } else if (strcmp(a, "--no-orphans") == 0) {
            o.orphans = false;
        } else if (strcmp(a, "--dry-run") == 0) {
            o.dry_run = true;
        } else if (strcmp(a, "--table") == 0 && has_val) {
            o.only = argv[++i];
        } else if (has_val && parse_i64(argv[i + 1], &v) == FR_OK && v >= 0 &&
                   (strcmp(a, "--target-bytes") == 0 || strcmp(a, "--min-inputs") == 0 ||
                    strcmp(a, "--expire-older-than") == 0 || strcmp(a, "--retain-last") == 0 ||
                    strcmp(a, "--orphans-older-than") == 0)) {
            i++;
            if (strcmp(a, "--target-bytes") == 0) {
                o.copts.target_bytes = v;
            } else if (strcmp(a, "--min-inputs") == 0) {
                o.copts.min_inputs = (uint32_t)v;
            } else if (strcmp(a, "--expire-older-than") == 0) {
                o.expire_s = v;
            } else if (strcmp(a, "--retain-last") == 0) {
                o.retain = v < 1 ? 1 : v;
            } else {
                o.orphan_s = v;
            }
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(compact_usage, stdout);
            return 0;
        } else {
            fprintf(stderr, "freshet compact: bad argument '%s'\n%s", a, compact_usage);
            return 2;
        }
    }
    if (o.only) {
        char ns[128], name[128];
        if (split_ident(o.only, ns, name) < 0) {
            fprintf(stderr, "freshet compact: --table wants NS.NAME\n%s", compact_usage);
            return 2;
        }
    }
    if (!lake_exists(data_dir)) {
        fprintf(stderr, "freshet compact: no lake under %s/lake\n", data_dir);
        return 1;
    }
    struct fr_ice_catalog *cat = NULL;
    struct fr_ice_catalog_opts copts = {.data_dir = data_dir};
    struct fr_ice_ident *ids = NULL;
    size_t n = 0;
    int rc = fr_ice_catalog_open(&copts, &cat);
    if (rc == FR_OK) {
        rc = fr_ice_list_tables(cat, &ids, &n);
    }
    if (rc < 0) {
        fprintf(stderr, "freshet compact: %s\n", fr_ice_errmsg());
        fr_ice_catalog_close(cat);
        return 1;
    }
    int status = 0;
    bool first = true;
    if (o.json) {
        printf("{\"tables\":[");
    }
    for (size_t i = 0; i < n; i++) {
        char ident[300];
        snprintf(ident, sizeof ident, "%s.%s", ids[i].ns, ids[i].name);
        if (o.only && strcmp(o.only, ident) != 0) {
            continue;
        }
        if (maintain(cat, ids[i].ns, ids[i].name, &o, first) < 0) {
            status = 1;
        } else {
            first = false;
        }
    }
    if (o.json) {
        printf("]}\n");
    }
    free(ids);
    fr_ice_catalog_close(cat);
    return status;
}
