/*
 * status_cmd.c — `freshet status`: the pipeline on one screen, from the
 * stats files (src/stats, summary.c) and the lake's catalog (pipeline/lake.h,
 * the same way `freshet tables` opens it, so every topology works: local or
 * S3 warehouse, SQLite or REST catalog, one processor or a group).
 *
 *   freshet status [--json] [--watch] [--interval S] [--count N]
 *
 * What it shows: each stage up or down with its pid (the group's members
 * in the scale-out mode), events and records per second, freshness,
 * watermark lag, offsets behind, the silver, duplicate, late and dead-letter
 * counts, with enrichment the resolved edits by label outcome
 * (process_enrich_labels_total), and each table's rows, files and bytes.
 * Rates are measured over one second (two reads of the stats files) while
 * a stage is up, 0 for a stage that is down, null when it never ran. It
 * works while the pipeline runs, after it stopped (figures as they were
 * last published, stages down), and on a data directory with no stats
 * files or no lake yet.
 *
 * --watch redraws in place, like top, every --interval seconds (default 2)
 * until Ctrl-C (or after --count redraws); the lake stays open between
 * redraws. One thread; output on stdout, messages on stderr.
 */
#include "main/cmd.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/err.h"
#include "core/fmt.h"
#include "iceberg/iceberg.h"
#include "iceberg/rest.h"
#include "pipeline/lake.h"
#include "stats/stats.h"

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STATUS_TABLES_MAX 32

static const char status_usage[] =
    "usage: freshet status [--json] [--watch] [--interval S] [--count N]\n"
    "\n"
    "The pipeline on one screen, from the stats files under <data>/stats and the\n"
    "lake's catalog: each stage up or down with its pid, events and records per\n"
    "second, freshness, watermark lag, offsets behind, duplicate, late and dead-letter\n"
    "counts, and each table's rows, files and bytes. Works while the pipeline runs,\n"
    "after it stopped, and before it ever ran.\n"
    "  --json        one JSON object (for scripts; with --watch, one per line each time)\n"
    "  --watch       redraw in place every --interval seconds, like top; Ctrl-C stops\n"
    "  --interval S  seconds between redraws (default 2, 1..3600)\n"
    "  --count N     stop after N redraws (--watch; default: until Ctrl-C)\n";

struct status_table {
    char ns[128], name[128];
    int ok;
    int64_t rows, files, bytes;
};

struct status_view {
    struct fr_stats_summary sum;
    struct fr_stats_group *group; /* members, or NULL */
    int lake;                     /* 1: a lake was read; 0: none yet; -1: unreadable */
    char lake_err[256];
    char catalog[4200];
    size_t ntables;
    struct status_table tables[STATUS_TABLES_MAX];
};

static volatile sig_atomic_t status_stop;

static void status_on_signal(int sig)
{
    (void)sig;
    status_stop = 1;
}

/* ------------------------------------------------------------- reading */

static void status_read_tables(struct fr_lake *lake, struct status_view *v)
{
    struct fr_ice_ident *ids = NULL;
    size_t n = 0;
    int rc = fr_lake_list(lake, &ids, &n);
    if (rc == FR_ENOTFOUND && lake->rest) {
        rc = FR_OK, n = 0; /* the catalog answered: no namespace yet */
    }
    if (rc < 0) {
        v->lake = -1;
        snprintf(v->lake_err, sizeof v->lake_err, "%s", fr_ice_errmsg());
        free(ids);
        return;
    }
    v->lake = 1;
    for (size_t i = 0; i < n && v->ntables < STATUS_TABLES_MAX; i++) {
        struct status_table *st = &v->tables[v->ntables++];
        snprintf(st->ns, sizeof st->ns, "%s", ids[i].ns);
        snprintf(st->name, sizeof st->name, "%s", ids[i].name);
        struct fr_ice_table *t = NULL;
        struct fr_ice_file_list list = {0};
        rc = lake->rest ? fr_ice_rest_table(lake->rest, lake->cat, ids[i].ns, ids[i].name, &t)
                        : fr_ice_table_load(lake->cat, ids[i].ns, ids[i].name, &t);
        if (rc == FR_OK) {
            rc = fr_ice_files(lake->cat, t, -1, false, &list);
        }
        if (rc == FR_OK) {
            st->ok = 1;
            st->rows = list.total_records;
            st->files = (int64_t)list.nfiles;
            st->bytes = list.total_bytes;
        }
        fr_ice_file_list_free(&list);
        fr_ice_table_free(t);
    }
    free(ids);
}

/* Two reads of the stats files one second apart while a stage is up (the
 * rates), one read otherwise. */
static int status_read(struct fr_conf *conf, struct fr_lake *lake, int lake_open,
                       struct status_view *v)
{
    const char *dir = conf->general_data_dir;
    struct fr_stats_snap *snaps = calloc(4, sizeof *snaps);
    if (!snaps) {
        return FR_ENOMEM;
    }
    struct fr_stats_group *g0 = NULL;
    int rc = fr_stats_read_pipeline(dir, fr_wall_ms(), &snaps[0], &snaps[1], &g0);
    int64_t now = fr_wall_ms();
    int moving = fr_stats_snap_up(&snaps[0], now) || fr_stats_snap_up(&snaps[1], now);
    if (rc == FR_OK && moving) {
        fr_sleep_ms(1000);
        rc = fr_stats_read_pipeline(dir, fr_wall_ms(), &snaps[2], &snaps[3], &v->group);
        now = fr_wall_ms();
        if (rc == FR_OK) {
            fr_stats_summarize(&snaps[2], &snaps[3], &snaps[0], &snaps[1], now, &v->sum);
        }
        free(g0);
    } else if (rc == FR_OK) {
        v->group = g0;
        fr_stats_summarize(&snaps[0], &snaps[1], NULL, NULL, now, &v->sum);
        /* Nothing runs: nothing moves. */
        if (snaps[0].present) {
            v->sum.events_rate = 0;
        }
        if (snaps[1].present) {
            v->sum.records_rate = v->sum.silver_rate = v->sum.duplicate_rate = 0;
            v->sum.late_rate = v->sum.dlq_rate = 0;
        }
    }
    free(snaps);
    if (rc < 0) {
        return rc;
    }
    fr_lake_catalog_name(conf, v->catalog, sizeof v->catalog);
    if (lake_open) {
        status_read_tables(lake, v);
    }
    return FR_OK;
}

/* ----------------------------------------------------------- rendering */

static const char *fmt_rate(char *out, size_t cap, double v)
{
    if (isnan(v)) {
        snprintf(out, cap, "-");
    } else {
        snprintf(out, cap, v < 100 ? "%.1f" : "%.0f", v);
    }
    return out;
}

static const char *fmt_bytes(char *out, size_t cap, int64_t v)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double d = (double)v;
    int u = 0;
    while (d >= 1024 && u < 4) {
        d /= 1024, u++;
    }
    snprintf(out, cap, u ? "%.1f %s" : "%.0f %s", d, units[u]);
    return out;
}

static void status_text(FILE *out, const struct fr_conf *conf, const struct status_view *v)
{
    const struct fr_stats_summary *s = &v->sum;
    char when[32], a[48], b[48], c[48];
    fr_time_format_ms(s->now_ms * 1000, when);
    fprintf(out, "freshet status  %s  %s\n\n", conf->general_data_dir, when);
    static const char *names[2] = {"ingest", "process"};
    fprintf(out, "%-9s %-5s %-8s %-11s %s\n", "stage", "state", "pid", "running", "rate");
    for (int i = 0; i < 2; i++) {
        const int group = i == 1 && v->group;
        if (!s->stage[i].present) {
            fprintf(out, "%-9s %-5s %-8s %-11s %s\n", names[i], "down", "-", "-",
                    "never ran here (no stats file)");
            continue;
        }
        char pid[24];
        if (group) {
            snprintf(pid, sizeof pid, "group");
        } else {
            snprintf(pid, sizeof pid, "%" PRId64, s->stage[i].pid);
        }
        double age = (double)(s->now_ms - s->stage[i].started_ms) / 1000.0;
        if (s->stage[i].up) {
            fr_fmt_age(b, sizeof b, age, true);
        } else {
            snprintf(b, sizeof b, "stopped");
        }
        if (i == 0) {
            fprintf(out, "%-9s %-5s %-8s %-11s %s events/s\n", names[i],
                    s->stage[i].up ? "up" : "down", pid, b, fmt_rate(a, sizeof a, s->events_rate));
        } else {
            fprintf(out, "%-9s %-5s %-8s %-11s %s records/s\n", names[i],
                    s->stage[i].up ? "up" : "down", pid, b, fmt_rate(a, sizeof a, s->records_rate));
        }
    }
    if (v->group) {
        int64_t now = s->now_ms;
        for (unsigned m = 0; m < v->group->n; m++) {
            const struct fr_stats_snap *ms = &v->group->member[m];
            char who[24];
            if (ms->role == FR_STATS_ROLE_SHARD) {
                snprintf(who, sizeof who, "  p%d", ms->partition);
            } else {
                snprintf(who, sizeof who, "  final");
            }
            int up = fr_stats_snap_up(ms, now);
            if (up) {
                fr_fmt_age(b, sizeof b, (double)(now - ms->started_ms) / 1000.0, true);
            } else {
                snprintf(b, sizeof b, "stopped");
            }
            fprintf(out, "%-9s %-5s %-8" PRId64 " %-11s %s\n", who,
                    up           ? "up"
                    : ms->closed ? "left"
                                 : "down",
                    ms->pid, b, ms->instance);
        }
    }
    fprintf(out, "\nfreshness %s   watermark lag %s   offsets behind %s   epochs %s\n",
            fr_fmt_age(a, sizeof a, s->freshness_s, true),
            fr_fmt_age(b, sizeof b, s->watermark_lag_s, true),
            isnan(s->offsets_behind) ? "-" : fr_fmt_count(c, sizeof c, (uint64_t)s->offsets_behind),
            fr_fmt_count((char[32]){0}, 32, s->epochs));
    fprintf(out, "events %s   records %s   silver %s\n", fr_fmt_count(a, sizeof a, s->events),
            fr_fmt_count(b, sizeof b, s->records), fr_fmt_count(c, sizeof c, s->silver));
    fprintf(out, "duplicates %s   late %s   dead letters %s\n",
            fr_fmt_count(a, sizeof a, s->duplicates), fr_fmt_count(b, sizeof b, s->late),
            fr_fmt_count(c, sizeof c, s->dlq));
    if (s->enrich_edits) { /* with enrichment: resolved edits by label (docs/ENRICH.md) */
        const struct fr_stats_meta *m = fr_stats_meta(FR_STATS_PROC_ENRICH_LABELS);
        fprintf(out, "labels");
        for (unsigned l = 0; l < FR_STATS_NLAB_LABEL; l++) {
            fprintf(out, "   %s %s", fr_stats_label_value(m, l),
                    fr_fmt_count(a, sizeof a, s->labels[l]));
        }
        fprintf(out, "\n");
    }

    fprintf(out, "\n");
    if (v->lake == 0) {
        fprintf(out, "no lake yet (%s)\n", v->catalog);
        return;
    }
    if (v->lake < 0) {
        fprintf(out, "lake unreadable (%s): %s\n", v->catalog, v->lake_err);
        return;
    }
    fprintf(out, "%-28s %14s %8s %12s\n", "table", "rows", "files", "bytes");
    for (size_t i = 0; i < v->ntables; i++) {
        const struct status_table *t = &v->tables[i];
        if (!t->ok) {
            fprintf(out, "%-28s %14s %8s %12s\n", t->name, "?", "?", "?");
            continue;
        }
        fprintf(out, "%-28s %14s %8" PRId64 " %12s\n", t->name,
                fr_fmt_count(a, sizeof a, (uint64_t)t->rows), t->files,
                fmt_bytes(b, sizeof b, t->bytes));
    }
    fprintf(out, "catalog %s\n", v->catalog);
}

static void json_num(struct fr_buf *o, const char *key, double v)
{
    if (isnan(v) || isinf(v)) {
        fr_buf_printf(o, "\"%s\":null", key);
    } else {
        fr_buf_printf(o, "\"%s\":%.10g", key, v);
    }
}

static int status_json(struct fr_buf *o, const struct fr_conf *conf, const struct status_view *v)
{
    const struct fr_stats_summary *s = &v->sum;
    fr_buf_puts(o, "{\"data_dir\":");
    fr_buf_json_str(o, conf->general_data_dir, strlen(conf->general_data_dir));
    fr_buf_printf(o, ",\"now_ms\":%" PRId64 ",\"stages\":{", s->now_ms);
    static const char *names[2] = {"ingest", "process"};
    for (int i = 0; i < 2; i++) {
        fr_buf_printf(o, "%s\"%s\":{\"present\":%s,\"up\":%s,", i ? "," : "", names[i],
                      s->stage[i].present ? "true" : "false", s->stage[i].up ? "true" : "false");
        if (s->stage[i].present && !(i == 1 && v->group)) {
            fr_buf_printf(o, "\"pid\":%" PRId64 ",", s->stage[i].pid);
        } else {
            fr_buf_puts(o, "\"pid\":null,");
        }
        if (s->stage[i].present) {
            fr_buf_printf(o, "\"started_ms\":%" PRId64 ",\"heartbeat_ms\":%" PRId64,
                          s->stage[i].started_ms, s->stage[i].heartbeat_ms);
        } else {
            fr_buf_puts(o, "\"started_ms\":null,\"heartbeat_ms\":null");
        }
        if (i == 1) {
            fr_buf_printf(o, ",\"group\":%s,\"members\":[", v->group ? "true" : "false");
            for (unsigned m = 0; v->group && m < v->group->n; m++) {
                const struct fr_stats_snap *ms = &v->group->member[m];
                fr_buf_printf(o, "%s{\"role\":\"%s\",\"partition\":", m ? "," : "",
                              fr_stats_role_name(ms->role));
                if (ms->role == FR_STATS_ROLE_SHARD) {
                    fr_buf_printf(o, "%d", ms->partition);
                } else {
                    fr_buf_puts(o, "null");
                }
                fr_buf_printf(o,
                              ",\"pid\":%" PRId64 ",\"up\":%s,\"closed\":%s,\"instance\":", ms->pid,
                              fr_stats_snap_up(ms, s->now_ms) ? "true" : "false",
                              ms->closed ? "true" : "false");
                fr_buf_json_str(o, ms->instance, strlen(ms->instance));
                fr_buf_putc(o, '}');
            }
            fr_buf_putc(o, ']');
        }
        fr_buf_putc(o, '}');
    }
    fr_buf_puts(o, "},\"rates\":{");
    json_num(o, "events_per_s", s->events_rate);
    fr_buf_putc(o, ',');
    json_num(o, "records_per_s", s->records_rate);
    fr_buf_putc(o, ',');
    json_num(o, "silver_per_s", s->silver_rate);
    fr_buf_puts(o, "},");
    json_num(o, "freshness_s", s->freshness_s);
    fr_buf_putc(o, ',');
    json_num(o, "watermark_lag_s", s->watermark_lag_s);
    fr_buf_putc(o, ',');
    json_num(o, "offsets_behind", s->offsets_behind);
    fr_buf_printf(o,
                  ",\"totals\":{\"events\":%" PRIu64 ",\"records\":%" PRIu64 ",\"silver\":%" PRIu64
                  ",\"duplicate\":%" PRIu64 ",\"late\":%" PRIu64 ",\"dlq\":%" PRIu64
                  ",\"epochs\":%" PRIu64 "},\"catalog\":",
                  s->events, s->records, s->silver, s->duplicates, s->late, s->dlq, s->epochs);
    fr_buf_json_str(o, v->catalog, strlen(v->catalog));
    {
        const struct fr_stats_meta *m = fr_stats_meta(FR_STATS_PROC_ENRICH_LABELS);
        fr_buf_puts(o, ",\"labels\":{");
        for (unsigned l = 0; l < FR_STATS_NLAB_LABEL; l++) {
            fr_buf_printf(o, "%s\"%s\":%" PRIu64, l ? "," : "", fr_stats_label_value(m, l),
                          s->labels[l]);
        }
        fr_buf_putc(o, '}');
    }
    if (v->lake < 0) {
        fr_buf_puts(o, ",\"lake_error\":");
        fr_buf_json_str(o, v->lake_err, strlen(v->lake_err));
    } else {
        fr_buf_puts(o, ",\"lake_error\":null");
    }
    fr_buf_puts(o, ",\"tables\":");
    fr_buf_puts(o, v->lake > 0 ? "[" : "null");
    for (size_t i = 0; v->lake > 0 && i < v->ntables; i++) {
        const struct status_table *t = &v->tables[i];
        fr_buf_puts(o, i ? ",{\"namespace\":" : "{\"namespace\":");
        fr_buf_json_str(o, t->ns, strlen(t->ns));
        fr_buf_puts(o, ",\"name\":");
        fr_buf_json_str(o, t->name, strlen(t->name));
        if (t->ok) {
            fr_buf_printf(o, ",\"rows\":%" PRId64 ",\"files\":%" PRId64 ",\"bytes\":%" PRId64 "}",
                          t->rows, t->files, t->bytes);
        } else {
            fr_buf_puts(o, ",\"rows\":null,\"files\":null,\"bytes\":null}");
        }
    }
    if (v->lake > 0) {
        fr_buf_putc(o, ']');
    }
    return fr_buf_puts(o, "}\n");
}

/* --------------------------------------------------------------- command */

int fr_cmd_status(struct fr_conf *conf, int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, 0, 'j'},           {"watch", no_argument, 0, 'w'},
        {"interval", required_argument, 0, 'i'}, {"count", required_argument, 0, 'n'},
        {"help", no_argument, 0, 'h'},           {0, 0, 0, 0}};
    int json = 0, watch = 0;
    long interval = 2, count = 0;
    int c;
    char *end;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            json = 1;
            break;
        case 'w':
            watch = 1;
            break;
        case 'i':
            interval = strtol(optarg, &end, 10);
            if (*end || interval < 1 || interval > 3600) {
                fprintf(stderr, "freshet status: bad --interval\n%s", status_usage);
                return 2;
            }
            break;
        case 'n':
            count = strtol(optarg, &end, 10);
            if (*end || count < 1) {
                fprintf(stderr, "freshet status: bad --count\n%s", status_usage);
                return 2;
            }
            break;
        case 'h':
            fputs(status_usage, stdout);
            return 0;
        default:
            fputs(status_usage, stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "freshet status: unexpected argument \"%s\"\n%s", argv[optind],
                status_usage);
        return 2;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = status_on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    int status = 1;
    struct fr_lake lake;
    memset(&lake, 0, sizeof lake);
    int lake_open = 0;
    struct status_view *v = NULL;
    struct fr_buf o;
    fr_buf_init(&o, (size_t)1 << 20);
    for (long round = 0; !status_stop; round++) {
        /* Open the lake once it exists (it may appear while watching). */
        if (!lake_open && fr_lake_maybe_exists(conf)) {
            lake_open = fr_lake_open(conf, &lake) == FR_OK;
        }
        free(v ? v->group : NULL);
        free(v);
        v = calloc(1, sizeof *v);
        if (!v || status_read(conf, &lake, lake_open, v) < 0) {
            fprintf(stderr, "freshet status: out of memory\n");
            goto cleanup;
        }
        if (!lake_open && fr_lake_maybe_exists(conf)) {
            v->lake = -1;
            snprintf(v->lake_err, sizeof v->lake_err, "cannot open the catalog: %s",
                     fr_ice_errmsg());
        }
        o.len = 0;
        if (json) {
            status_json(&o, conf, v);
            fwrite(o.data, 1, o.len, stdout);
        } else {
            if (watch) {
                fputs("\033[H\033[2J", stdout); /* home, clear: redraw in place */
            }
            status_text(stdout, conf, v);
            if (watch) {
                printf("\nevery %ld s · Ctrl-C to stop\n", interval);
            }
        }
        fflush(stdout);
        if (!watch || (count && round + 1 >= count)) {
            break;
        }
        /* The read itself took a second when something runs. */
        for (long ms = 0; ms < interval * 1000 && !status_stop; ms += 100) {
            fr_sleep_ms(100);
        }
    }
    status = 0;

cleanup:
    if (v) {
        free(v->group);
    }
    free(v);
    fr_buf_free(&o);
    if (lake_open) {
        fr_lake_close(&lake);
    }
    return status;
}
