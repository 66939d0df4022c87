/*
 * compact_cmd.c — `freshet compact`: table maintenance by hand (or by
 * `freshet up`'s schedule) on whatever lake the configuration names: the
 * SQLite catalog or a REST one (lake.catalog_uri), a local warehouse or S3
 * (lake.warehouse). Compaction, snapshot expiry and orphan removal are
 * fr_lake_compact / fr_lake_expire / fr_lake_remove_orphans, the same calls
 * the processor's and the finalizer's own maintenance make, so the rules
 * are one: size-tiered bins (or one tier here), each rewrite a
 * compare-and-swap that a concurrent append makes again, expiry that keeps
 * each pipeline's newest marker, orphans only past their age.
 * One thread.
 */
#include "pipeline/pipeline.h"

#include "pipeline/lake.h"
#include "pipeline/maint.h"
#include "pipeline/tables.h"

#include "core/clock.h"
#include "core/err.h"
#include "core/progress.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    "Works on the lake the configuration names: local or S3 warehouse\n"
    "(lake.warehouse), SQLite or REST catalog (lake.catalog_uri); inputs in a\n"
    "bucket are read with ranged GETs and outputs uploaded as they are written.\n"
    "Safe while the pipeline runs. --dry-run only counts orphans.\n";

struct compact_opts {
    bool json, compact, expire, orphans, dry_run;
    const char *only;
    struct fr_ice_compact_opts copts;
    int64_t expire_s, orphan_s, retain;
};

static int maintain(struct fr_lake *lake, const char *ns, const char *name,
                    const struct compact_opts *o, bool first)
{
    struct fr_ice_compact_stats cs = {0};
    struct fr_ice_expire_stats es = {0};
    struct fr_ice_orphan_stats os = {0};
    int rc = FR_OK;
    int64_t now = fr_wall_ms();
    if (o->compact) {
        rc = fr_lake_compact(lake, ns, name, &o->copts, &cs);
    }
    if (rc == FR_OK && o->expire) {
        rc = fr_lake_expire(lake, ns, name, now - o->expire_s * 1000, (uint32_t)o->retain, &es);
    }
    if (rc == FR_OK && o->orphans) {
        rc = fr_lake_remove_orphans(lake, ns, name, now - o->orphan_s * 1000, o->dry_run, &os);
    }
    if (rc < 0) {
        fprintf(stderr, "freshet compact: %s.%s: %s (%s)\n", ns, name, fr_ice_errmsg(),
                fr_err_name(rc));
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

static int parse_args(int argc, char **argv, struct compact_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        char *end = NULL;
        bool has_val = i + 1 < argc;
        long long v = has_val ? strtoll(argv[i + 1], &end, 10) : -1;
        bool num = has_val && *argv[i + 1] && end && !*end && v >= 0;
        if (strcmp(a, "--json") == 0) {
            o->json = true;
        } else if (strcmp(a, "--no-compact") == 0) {
            o->compact = false;
        } else if (strcmp(a, "--no-expire") == 0) {
            o->expire = false;
        } else if (strcmp(a, "--no-orphans") == 0) {
            o->orphans = false;
        } else if (strcmp(a, "--dry-run") == 0) {
            o->dry_run = true;
        } else if (strcmp(a, "--table") == 0 && has_val) {
            o->only = argv[++i];
        } else if (num && strcmp(a, "--target-bytes") == 0) {
            o->copts.target_bytes = v;
            i++;
        } else if (num && strcmp(a, "--min-inputs") == 0) {
            o->copts.min_inputs = (uint32_t)v;
            i++;
        } else if (num && strcmp(a, "--expire-older-than") == 0) {
            o->expire_s = v;
            i++;
        } else if (num && strcmp(a, "--retain-last") == 0) {
            o->retain = v < 1 ? 1 : v;
            i++;
        } else if (num && strcmp(a, "--orphans-older-than") == 0) {
            o->orphan_s = v;
            i++;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(compact_usage, stdout);
            return 0;
        } else {
            fprintf(stderr, "freshet compact: bad argument '%s'\n%s", a, compact_usage);
            return 2;
        }
    }
    if (o->only) {
        const char *dot = strrchr(o->only, '.');
        if (!dot || dot == o->only || !dot[1] || (size_t)(dot - o->only) >= 128 ||
            strlen(dot + 1) >= 128) {
            fprintf(stderr, "freshet compact: --table wants NS.NAME\n%s", compact_usage);
            return 2;
        }
    }
    return -1;
}

int fr_cmd_compact(struct fr_conf *conf, int argc, char **argv)
{
    struct compact_opts o = {.compact = true,
                             .expire = true,
                             .orphans = true,
                             .expire_s = 86400,
                             .orphan_s = 3600,
                             .retain = 50};
    int status = parse_args(argc, argv, &o);
    if (status >= 0) {
        return status;
    }
    if (!fr_lake_maybe_exists(conf)) {
        fprintf(stderr, "freshet compact: no lake under %s/lake\n", conf->general_data_dir);
        return 1;
    }
    struct fr_lake lake;
    if (fr_lake_open(conf, &lake) < 0) {
        return 1; /* logged, naming the setting, the bucket or the catalog */
    }
    char only_ns[128] = "";
    if (o.only) {
        snprintf(only_ns, sizeof only_ns, "%.*s", (int)(strrchr(o.only, '.') - o.only), o.only);
    }
    struct fr_ice_ident *ids = NULL;
    size_t n = 0;
    int rc = fr_lake_list_tables(&lake, o.only ? only_ns : NULL, &ids, &n);
    if (rc < 0) {
        fprintf(stderr, "freshet compact: %s (%s)\n", fr_ice_errmsg(), fr_err_name(rc));
        fr_lake_close(&lake);
        return 1;
    }
    bool first = true;
    status = 0;
    struct fr_progress pg;
    fr_progress_start(&pg, "compact", "tables", o.only ? 1 : n);
    uint64_t done = 0;
    if (o.json) {
        printf("{\"tables\":[");
    }
    for (size_t i = 0; i < n; i++) {
        char ident[300];
        snprintf(ident, sizeof ident, "%s.%s", ids[i].ns, ids[i].name);
        if (o.only && strcmp(o.only, ident) != 0) {
            continue;
        }
        if (maintain(&lake, ids[i].ns, ids[i].name, &o, first) < 0) {
            status = 1;
        } else {
            first = false;
        }
        fr_progress_tick(&pg, ++done);
    }
    fr_progress_end(&pg);
    if (o.json) {
        printf("]}\n");
    }
    free(ids);
    fr_lake_close(&lake);
    return status;
}
