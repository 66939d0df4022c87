/*
 * group.c — the scale-out mode's members as one group (docs/adr/0042):
 * reading every member's stats file of a data directory, the group's totals
 * under the existing metric names, and the per-member series and JSON.
 *
 * A member is a shard (`process --partition N`, <data>/stats/
 * process-p<N>.stats) or the finalizer (`process --finalize`,
 * finalize.stats); each writes its own file exactly as the single processor
 * writes process.stats (stats.c), with its role, partition and instance in
 * the header. Nothing here writes: serve (any thread) and tests call these
 * on snapshots they own.
 *
 * Per member: freshet_process_member_up / _heartbeat_age_seconds /
 * _start_time_seconds, and each counter and gauge of the process stage
 * again as freshet_process_member_<name without "process_"> — new names,
 * never the totals' with more labels, so `sum(x)`, `rate(x)` and the
 * shipped rules see one series per serve, as with the single processor.
 * Labels: role ("shard", "finalizer"), partition (shards), instance.
 *
 * Totals: counters and histogram buckets are summed (a histogram's buckets
 * share one bucket set, so the sum is the histogram of all observations);
 * each process gauge has a stated aggregate in group_aggs below — the worst
 * member for staleness (freshness, watermark lag: max; watermark, newest
 * event, last epoch: min), sums for sizes (dedup state, offsets behind),
 * max for durations and for the configured trigger. A member with no value
 * (NaN) is left out of min and max; a sum of no values is NaN (absent).
 *
 * Invariants:
 *   1. Every gauge of the process stage has exactly one aggregate (a unit
 *      test walks the table); counters and histograms are always summed.
 *   2. A member stays listed after it dies, with up 0: its file stays
 *      (stats.c, invariant 1), so a SIGKILLed shard shows as down.
 */
#include "stats/stats.h"
#include "stats/stats_int.h"

#include "core/buf.h"
#include "core/err.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum group_agg { GROUP_SUM = 0, GROUP_MIN, GROUP_MAX };

/* The gauges' aggregates (counters and histograms: GROUP_SUM). */
static const struct {
    enum fr_stats_id id;
    enum group_agg agg;
} group_aggs[] = {
    {FR_STATS_PROC_LAST_EPOCH, GROUP_MIN},     /* the member furthest behind */
    {FR_STATS_PROC_LAST_BATCH, GROUP_MAX},     /* the slowest member's newest epoch */
    {FR_STATS_PROC_TRIGGER, GROUP_MAX},        /* configured; the same everywhere */
    {FR_STATS_PROC_WATERMARK, GROUP_MIN},      /* DESIGN: min over partitions */
    {FR_STATS_PROC_WM_LAG, GROUP_MAX},         /* the worst member */
    {FR_STATS_PROC_DEDUP_KEYS, GROUP_SUM},     /* each shard holds its own keys */
    {FR_STATS_PROC_DEDUP_BYTES, GROUP_SUM},    /* and its own memory */
    {FR_STATS_PROC_LAST_COMMIT, GROUP_MAX},    /* the slowest newest commit */
    {FR_STATS_PROC_BEHIND, GROUP_SUM},         /* records of every partition */
    {FR_STATS_PROC_NEWEST, GROUP_MIN},         /* the stalest member's newest */
    {FR_STATS_PROC_FRESHNESS, GROUP_MAX},      /* the worst member */
    {FR_STATS_PROC_LAST_COMMIT_TS, GROUP_MAX}, /* the group's newest commit */
    {FR_STATS_PROC_ENRICH_PENDING, GROUP_SUM}, {FR_STATS_PROC_ENRICH_FRONTIER, GROUP_MIN},
};

static const char *const group_agg_names[] = {"sum", "min", "max"};

static int group_agg_of(enum fr_stats_id id, enum group_agg *agg)
{
    const struct fr_stats_meta *m = fr_stats_meta(id);
    if (!m || m->stage != FR_STATS_PROCESS) {
        return 0;
    }
    if (m->type != FR_STATS_GAUGE) {
        *agg = GROUP_SUM;
        return 1;
    }
    for (size_t i = 0; i < sizeof group_aggs / sizeof *group_aggs; i++) {
        if (group_aggs[i].id == id) {
            *agg = group_aggs[i].agg;
            return 1;
        }
    }
    return 0;
}

const char *fr_stats_group_agg(enum fr_stats_id id)
{
    enum group_agg agg;
    return group_agg_of(id, &agg) ? group_agg_names[agg] : NULL;
}

/* ------------------------------------------------------------- reading */

/* The member a file name names: 1 and *who, or 0 for any other file. */
static int group_name(const char *name, struct fr_stats_member *who)
{
    if (strcmp(name, "finalize.stats") == 0) {
        who->role = FR_STATS_ROLE_FINALIZER;
        who->partition = -1;
        return 1;
    }
    if (strncmp(name, "process-p", 9) != 0) {
        return 0;
    }
    const char *p = name + 9;
    int part = 0, digits = 0;
    while (*p >= '0' && *p <= '9' && digits < 3) {
        part = part * 10 + (*p++ - '0');
        digits++;
    }
    /* "process-p07.stats" is not a name a writer makes: not a member. */
    if (!digits || (digits > 1 && name[9] == '0') || strcmp(p, ".stats") != 0 ||
        part >= FR_STATS_MEMBERS_MAX - 1) {
        return 0;
    }
    who->role = FR_STATS_ROLE_SHARD;
    who->partition = part;
    return 1;
}

static int group_cmp(const void *a, const void *b)
{
    const struct fr_stats_snap *x = a, *y = b;
    /* shards by partition, the finalizer (partition -1) last */
    int kx = x->role == FR_STATS_ROLE_FINALIZER ? 1 << 20 : x->partition;
    int ky = y->role == FR_STATS_ROLE_FINALIZER ? 1 << 20 : y->partition;
    return (kx > ky) - (kx < ky);
}

int fr_stats_group_read(const char *data_dir, struct fr_stats_group *g)
{
    g->n = 0;
    g->skipped = 0;
    char dir[4200];
    int dn = snprintf(dir, sizeof dir, "%s/stats", data_dir);
    if (dn < 0 || (size_t)dn >= sizeof dir) {
        return FR_ETOOBIG;
    }
    DIR *d = opendir(dir);
    if (!d) {
        return FR_OK; /* no stats directory yet: no members */
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL && g->n < FR_STATS_MEMBERS_MAX) {
        struct fr_stats_member who = {0};
        char path[4500];
        if (!group_name(e->d_name, &who)) {
            continue;
        }
        if (fr_stats_member_path(data_dir, &who, path, sizeof path) < 0) {
            continue;
        }
        struct fr_stats_snap *snap = &g->member[g->n];
        int rc = fr_stats_read_file(path, FR_STATS_PROCESS, who.role, snap);
        if (rc < 0 || !snap->present || snap->partition != who.partition) {
            g->skipped += rc == FR_ENOTFOUND ? 0 : 1; /* gone meanwhile: not an error */
            continue;
        }
        g->n++;
    }
    closedir(d);
    qsort(g->member, g->n, sizeof g->member[0], group_cmp);
    return FR_OK;
}

int fr_stats_group_active(const struct fr_stats_group *g, const struct fr_stats_snap *single)
{
    if (g->n == 0) {
        return 0;
    }
    if (!single || !single->present || !single->alive) {
        return 1;
    }
    for (unsigned i = 0; i < g->n; i++) {
        if (g->member[i].alive) {
            return 1;
        }
    }
    return 0;
}

/* -------------------------------------------------------------- totals */

static double group_bitsd(uint64_t u)
{
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static uint64_t group_dbits(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

void fr_stats_group_total(const struct fr_stats_group *g, int64_t now_ms,
                          struct fr_stats_snap *total)
{
    memset(total, 0, sizeof *total);
    total->stage = FR_STATS_PROCESS;
    total->role = FR_STATS_ROLE_SINGLE;
    total->partition = -1;
    total->present = g->n > 0;
    for (unsigned i = 0; i < g->n; i++) {
        int64_t t = g->member[i].read_mono_ns;
        total->read_mono_ns = i == 0 || t < total->read_mono_ns ? t : total->read_mono_ns;
    }
    for (int id = 0; id < FR_STATS_COUNT; id++) {
        const struct fr_stats_meta *m = fr_stats_meta((enum fr_stats_id)id);
        enum group_agg agg;
        if (!group_agg_of(m->id, &agg)) {
            continue;
        }
        for (unsigned k = 0; k < m->width; k++) {
            unsigned slot = m->slot + k;
            /* A histogram's last slot is its sum of observations: a double. */
            int is_double =
                m->type == FR_STATS_GAUGE || (m->type == FR_STATS_HISTOGRAM && k == m->width - 1);
            if (!is_double) {
                uint64_t sum = 0;
                for (unsigned i = 0; i < g->n; i++) {
                    sum += g->member[i].slots[slot];
                }
                total->slots[slot] = sum;
                continue;
            }
            double acc = NAN;
            for (unsigned i = 0; i < g->n; i++) {
                double v = group_bitsd(g->member[i].slots[slot]);
                if (isnan(v)) {
                    continue;
                }
                if (isnan(acc)) {
                    acc = v;
                } else if (agg == GROUP_SUM) {
                    acc += v;
                } else if (agg == GROUP_MIN) {
                    acc = v < acc ? v : acc;
                } else {
                    acc = v > acc ? v : acc;
                }
            }
            /* An empty histogram's sum is 0, not absent. */
            if (isnan(acc) && m->type == FR_STATS_HISTOGRAM) {
                acc = 0;
            }
            total->slots[slot] = group_dbits(acc);
        }
    }
    /* Liveness (stats.h): some member up, and every member that did not
     * leave cleanly up; the heartbeat is the oldest among those counted. */
    int any_up = 0, all_up = 1;
    int64_t oldest = INT64_MAX, newest = 0, started = INT64_MAX;
    for (unsigned i = 0; i < g->n; i++) {
        const struct fr_stats_snap *s = &g->member[i];
        int up = fr_stats_snap_up(s, now_ms);
        any_up |= up;
        if (!up && !s->closed) {
            all_up = 0;
        }
        if (up || !s->closed) {
            oldest = s->heartbeat_ms < oldest ? s->heartbeat_ms : oldest;
        }
        newest = s->heartbeat_ms > newest ? s->heartbeat_ms : newest;
        started = s->started_ms < started ? s->started_ms : started;
        total->publishes += s->publishes;
    }
    total->alive = any_up && all_up;
    total->heartbeat_ms = oldest != INT64_MAX ? oldest : newest;
    total->started_ms = started != INT64_MAX ? started : 0;
    total->pid = -1; /* many processes */
}

/* ----------------------------------------------------------- rendering */

/* The labels of a member's sample: {label="value",}role=..,partition=..,instance=.. */
static int group_labels(struct fr_buf *out, const struct fr_stats_snap *s, const char *lname,
                        const char *lvalue)
{
    int rc = fr_buf_putc(out, '{');
    if (rc == FR_OK && lname && lname[0]) {
        rc = fr_buf_printf(out, "%s=\"", lname);
        if (rc == FR_OK) {
            rc = fr_stats_put_label_value(out, lvalue);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, "\",");
        }
    }
    if (rc == FR_OK) {
        rc = fr_buf_printf(out, "role=\"%s\",", fr_stats_role_name(s->role));
    }
    if (rc == FR_OK && s->role == FR_STATS_ROLE_SHARD) {
        rc = fr_buf_printf(out, "partition=\"%d\",", s->partition);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, "instance=\"");
    }
    if (rc == FR_OK) {
        rc = fr_stats_put_label_value(out, s->instance);
    }
    return rc == FR_OK ? fr_buf_puts(out, "\"} ") : rc;
}

static int group_family(struct fr_buf *out, const char *name, const char *type, const char *help)
{
    int rc = fr_buf_printf(out, "# HELP freshet_%s ", name);
    if (rc == FR_OK) {
        rc = fr_stats_put_help(out, help);
    }
    return rc == FR_OK ? fr_buf_printf(out, "\n# TYPE freshet_%s %s\n", name, type) : rc;
}

/* The member-only families: up, heartbeat age, start time. */
static int group_member_state(const struct fr_stats_group *g, int64_t now_ms, struct fr_buf *out)
{
    static const char *const names[] = {"process_member_up", "process_member_heartbeat_age_seconds",
                                        "process_member_start_time_seconds"};
    static const char *const helps[] = {
        "1 when the member (shard or finalizer) is alive (it holds its stats file: its "
        "process exists) and its heartbeat is younger than 30 s, else 0; a member that died "
        "or left stays listed with 0.",
        "Seconds since the member last published its figures.",
        "When the member's current (or last) process started, Unix seconds."};
    int rc = FR_OK;
    for (int f = 0; rc == FR_OK && f < 3; f++) {
        rc = group_family(out, names[f], "gauge", helps[f]);
        for (unsigned i = 0; rc == FR_OK && i < g->n; i++) {
            const struct fr_stats_snap *s = &g->member[i];
            rc = fr_buf_printf(out, "freshet_%s", names[f]);
            if (rc == FR_OK) {
                rc = group_labels(out, s, NULL, NULL);
            }
            if (rc == FR_OK) {
                double v = f == 0   ? (double)fr_stats_snap_up(s, now_ms)
                           : f == 1 ? ((double)now_ms - (double)s->heartbeat_ms) / 1000.0
                                    : (double)s->started_ms / 1000.0;
                rc = fr_stats_put_double(out, v, "NaN");
            }
            if (rc == FR_OK) {
                rc = fr_buf_putc(out, '\n');
            }
        }
    }
    return rc;
}

/* Whether a member publishes metric m at all: enrichment does not run in
 * the scale-out mode (epoch.c refuses it), and the finalizer counts no
 * records (each log record is counted once, by its shard). */
static int group_member_has(const struct fr_stats_meta *m, const struct fr_stats_snap *s)
{
    if (strncmp(m->name, "process_enrich_", 15) == 0) {
        return 0;
    }
    return s->role != FR_STATS_ROLE_FINALIZER ||
           (m->id != FR_STATS_PROC_RECORDS && m->id != FR_STATS_PROC_DLQ);
}

int fr_stats_render_members_prom(const struct fr_stats_group *g, int64_t now_ms, struct fr_buf *out)
{
    static const char *const types[] = {"", "counter", "gauge", "histogram"};
    if (g->n == 0) {
        return FR_OK;
    }
    int rc = group_member_state(g, now_ms, out);
    for (int id = 0; rc == FR_OK && id < FR_STATS_COUNT; id++) {
        const struct fr_stats_meta *m = fr_stats_meta((enum fr_stats_id)id);
        if (m->stage != FR_STATS_PROCESS || m->type == FR_STATS_HISTOGRAM) {
            continue;
        }
        char name[160], help[600];
        snprintf(name, sizeof name, "process_member_%s", m->name + strlen("process_"));
        snprintf(help, sizeof help, "Per member of the group: %s", m->help);
        int header = 0;
        for (unsigned i = 0; rc == FR_OK && i < g->n; i++) {
            const struct fr_stats_snap *s = &g->member[i];
            if (!group_member_has(m, s)) {
                continue;
            }
            for (unsigned l = 0; rc == FR_OK && l < m->nlabels; l++) {
                uint64_t raw = s->slots[m->slot + l];
                if (m->type == FR_STATS_GAUGE && isnan(group_bitsd(raw))) {
                    continue;
                }
                if (!header) {
                    rc = group_family(out, name, types[m->type], help);
                    header = 1;
                }
                if (rc == FR_OK) {
                    rc = fr_buf_printf(out, "freshet_%s", name);
                }
                if (rc == FR_OK) {
                    rc = group_labels(out, s, m->label, fr_stats_label_value(m, l));
                }
                if (rc == FR_OK) {
                    rc = m->type == FR_STATS_COUNTER
                             ? fr_buf_printf(out, "%llu", (unsigned long long)raw)
                             : fr_stats_put_double(out, group_bitsd(raw), "NaN");
                }
                if (rc == FR_OK) {
                    rc = fr_buf_putc(out, '\n');
                }
            }
        }
    }
    return rc;
}

int fr_stats_render_members_json(const struct fr_stats_group *g, int64_t now_ms, struct fr_buf *out)
{
    int rc = fr_buf_putc(out, '[');
    for (unsigned i = 0; rc == FR_OK && i < g->n; i++) {
        const struct fr_stats_snap *s = &g->member[i];
        rc = fr_buf_printf(out, "%s{\"role\":\"%s\",\"partition\":", i ? "," : "",
                           fr_stats_role_name(s->role));
        if (rc == FR_OK) {
            rc = s->role == FR_STATS_ROLE_SHARD ? fr_buf_printf(out, "%d", s->partition)
                                                : fr_buf_puts(out, "null");
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, ",\"instance\":\"");
        }
        /* hostname:pid: JSON-escape the few characters that need it */
        for (const char *p = s->instance; rc == FR_OK && *p; p++) {
            unsigned char c = (unsigned char)*p;
            rc = c == '"' || c == '\\' ? fr_buf_printf(out, "\\%c", c)
                 : c < 0x20            ? fr_buf_printf(out, "\\u%04x", c)
                                       : fr_buf_putc(out, c);
        }
        if (rc == FR_OK) {
            rc = fr_buf_printf(out,
                               "\",\"pid\":%lld,\"up\":%s,\"closed\":%s,\"started_ms\":%lld,"
                               "\"heartbeat_ms\":%lld,\"heartbeat_age_seconds\":%.3f,\"metrics\":",
                               (long long)s->pid, fr_stats_snap_up(s, now_ms) ? "true" : "false",
                               s->closed ? "true" : "false", (long long)s->started_ms,
                               (long long)s->heartbeat_ms,
                               ((double)now_ms - (double)s->heartbeat_ms) / 1000.0);
        }
        if (rc == FR_OK) {
            rc = fr_stats_render_json(s, out);
        }
        if (rc == FR_OK) {
            rc = fr_buf_putc(out, '}');
        }
    }
    return rc == FR_OK ? fr_buf_putc(out, ']') : rc;
}
