/*
 * render.c — snapshots of the stats files as text: the Prometheus text
 * exposition format 0.0.4 (`GET /metrics`), the JSON objects of
 * `GET /api/v1/status` (docs/API.md) and docs/METRICS.md. Everything is
 * driven by the metric table, so a metric added there appears in all three.
 * Pure functions over snapshots; thread-safe.
 */
#include "stats/stats.h"
#include "stats/stats_int.h"

#include "core/buf.h"
#include "core/err.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fr_stats_put_double(struct fr_buf *out, double v, const char *nan_text)
{
    if (isnan(v)) {
        return fr_buf_puts(out, nan_text);
    }
    if (isinf(v)) {
        return fr_buf_puts(out, v > 0 ? "+Inf" : "-Inf");
    }
    if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        return fr_buf_printf(out, "%lld", (long long)v);
    }
    char text[40];
    snprintf(text, sizeof text, "%.15g", v);
    if (strtod(text, NULL) != v) {
        snprintf(text, sizeof text, "%.17g", v);
    }
    return fr_buf_puts(out, text);
}

/* A JSON number, or null for NaN and infinities. */
static int render_json_double(struct fr_buf *out, double v)
{
    return isnan(v) || isinf(v) ? fr_buf_puts(out, "null") : fr_stats_put_double(out, v, "null");
}

static double render_gauge_slot(const struct fr_stats_snap *snap, unsigned slot)
{
    double v;
    memcpy(&v, &snap->slots[slot], sizeof v);
    return v;
}

/* ------------------------------------------------------------ Prometheus */

/* HELP text: backslash and newline escaped (exposition format). */
int fr_stats_put_help(struct fr_buf *out, const char *s)
{
    int rc = FR_OK;
    for (; *s && rc == FR_OK; s++) {
        if (*s == '\\') {
            rc = fr_buf_puts(out, "\\\\");
        } else if (*s == '\n') {
            rc = fr_buf_puts(out, "\\n");
        } else {
            rc = fr_buf_putc(out, (uint8_t)*s);
        }
    }
    return rc;
}

/* A label value: backslash, double quote and newline escaped. */
int fr_stats_put_label_value(struct fr_buf *out, const char *s)
{
    int rc = FR_OK;
    for (; *s && rc == FR_OK; s++) {
        if (*s == '\\' || *s == '"') {
            rc = fr_buf_putc(out, '\\');
            if (rc == FR_OK) {
                rc = fr_buf_putc(out, (uint8_t)*s);
            }
        } else if (*s == '\n') {
            rc = fr_buf_puts(out, "\\n");
        } else {
            rc = fr_buf_putc(out, (uint8_t)*s);
        }
    }
    return rc;
}

/* Whether a metric has at least one sample to show. */
static int render_has_sample(const struct fr_stats_meta *m, const struct fr_stats_snap *snap)
{
    if (m->type != FR_STATS_GAUGE) {
        return 1;
    }
    for (unsigned l = 0; l < m->nlabels; l++) {
        if (!isnan(render_gauge_slot(snap, m->slot + l))) {
            return 1;
        }
    }
    return 0;
}

static int render_prom_metric(const struct fr_stats_meta *m, const struct fr_stats_snap *snap,
                              struct fr_buf *out)
{
    static const char *types[] = {"", "counter", "gauge", "histogram"};
    int rc = fr_buf_printf(out, "# HELP freshet_%s ", m->name);
    if (rc == FR_OK) {
        rc = fr_stats_put_help(out, m->help);
    }
    if (rc == FR_OK) {
        rc = fr_buf_printf(out, "\n# TYPE freshet_%s %s\n", m->name, types[m->type]);
    }
    if (m->type == FR_STATS_HISTOGRAM) {
        uint64_t cum = 0;
        for (unsigned b = 0; rc == FR_OK && b <= m->nbuckets; b++) {
            cum += snap->slots[m->slot + b];
            if (b < m->nbuckets) {
                rc = fr_buf_printf(out, "freshet_%s_bucket{le=\"%g\"} %llu\n", m->name,
                                   m->bounds[b], (unsigned long long)cum);
            } else {
                rc = fr_buf_printf(out, "freshet_%s_bucket{le=\"+Inf\"} %llu\n", m->name,
                                   (unsigned long long)cum);
            }
        }
        if (rc == FR_OK) {
            rc = fr_buf_printf(out, "freshet_%s_sum ", m->name);
        }
        if (rc == FR_OK) {
            rc = fr_stats_put_double(out, render_gauge_slot(snap, m->slot + m->width - 1), "NaN");
        }
        if (rc == FR_OK) {
            rc = fr_buf_printf(out, "\nfreshet_%s_count %llu\n", m->name, (unsigned long long)cum);
        }
        return rc;
    }
    for (unsigned l = 0; rc == FR_OK && l < m->nlabels; l++) {
        double g = 0;
        if (m->type == FR_STATS_GAUGE) {
            g = render_gauge_slot(snap, m->slot + l);
            if (isnan(g)) {
                continue;
            }
        }
        rc = fr_buf_printf(out, "freshet_%s", m->name);
        if (rc == FR_OK && m->label[0]) {
            rc = fr_buf_printf(out, "{%s=\"", m->label);
            if (rc == FR_OK) {
                rc = fr_stats_put_label_value(out, fr_stats_label_value(m, l));
            }
            if (rc == FR_OK) {
                rc = fr_buf_puts(out, "\"}");
            }
        }
        if (rc == FR_OK) {
            rc = fr_buf_putc(out, ' ');
        }
        if (rc == FR_OK) {
            rc = m->type == FR_STATS_COUNTER
                     ? fr_buf_printf(out, "%llu", (unsigned long long)snap->slots[m->slot + l])
                     : fr_stats_put_double(out, g, "NaN");
        }
        if (rc == FR_OK) {
            rc = fr_buf_putc(out, '\n');
        }
    }
    return rc;
}

int fr_stats_render_prom(const struct fr_stats_snap *const snaps[FR_STATS_STAGES],
                         struct fr_buf *out)
{
    int rc = FR_OK;
    for (int id = 0; rc == FR_OK && id < FR_STATS_COUNT; id++) {
        const struct fr_stats_meta *m = fr_stats_meta((enum fr_stats_id)id);
        const struct fr_stats_snap *snap = snaps[m->stage];
        if (!snap || !snap->present || !render_has_sample(m, snap)) {
            continue;
        }
        rc = render_prom_metric(m, snap, out);
    }
    return rc;
}

/* ------------------------------------------------------------------ JSON */

static int render_json_hist(const struct fr_stats_meta *m, const struct fr_stats_snap *snap,
                            struct fr_buf *out)
{
    uint64_t count = fr_stats_snap_hist_count(snap, m->id);
    int rc = fr_buf_printf(out, "{\"count\":%llu,\"sum\":", (unsigned long long)count);
    if (rc == FR_OK) {
        rc = render_json_double(out, fr_stats_snap_hist_sum(snap, m->id));
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, ",\"le\":[");
    }
    for (unsigned b = 0; rc == FR_OK && b < m->nbuckets; b++) {
        rc = fr_buf_printf(out, "%s%g", b ? "," : "", m->bounds[b]);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, "],\"counts\":[");
    }
    uint64_t cum = 0;
    for (unsigned b = 0; rc == FR_OK && b <= m->nbuckets; b++) {
        cum += snap->slots[m->slot + b];
        rc = fr_buf_printf(out, "%s%llu", b ? "," : "", (unsigned long long)cum);
    }
    return rc == FR_OK ? fr_buf_puts(out, "]}") : rc;
}

static int render_json_value(const struct fr_stats_meta *m, const struct fr_stats_snap *snap,
                             unsigned l, struct fr_buf *out)
{
    if (m->type == FR_STATS_COUNTER) {
        return fr_buf_printf(out, "%llu", (unsigned long long)snap->slots[m->slot + l]);
    }
    return render_json_double(out, render_gauge_slot(snap, m->slot + l));
}

int fr_stats_render_json(const struct fr_stats_snap *snap, struct fr_buf *out)
{
    int rc = fr_buf_putc(out, '{');
    int first = 1;
    for (int id = 0; rc == FR_OK && id < FR_STATS_COUNT; id++) {
        const struct fr_stats_meta *m = fr_stats_meta((enum fr_stats_id)id);
        if (m->stage != snap->stage || !snap->present) {
            continue;
        }
        rc = fr_buf_printf(out, "%s\"%s\":", first ? "" : ",", m->name);
        first = 0;
        if (rc != FR_OK) {
            break;
        }
        if (m->type == FR_STATS_HISTOGRAM) {
            rc = render_json_hist(m, snap, out);
        } else if (m->label[0]) {
            rc = fr_buf_putc(out, '{');
            for (unsigned l = 0; rc == FR_OK && l < m->nlabels; l++) {
                rc = fr_buf_printf(out, "%s\"%s\":", l ? "," : "", fr_stats_label_value(m, l));
                if (rc == FR_OK) {
                    rc = render_json_value(m, snap, l, out);
                }
            }
            if (rc == FR_OK) {
                rc = fr_buf_putc(out, '}');
            }
        } else {
            rc = render_json_value(m, snap, 0, out);
        }
    }
    return rc == FR_OK ? fr_buf_putc(out, '}') : rc;
}

static int render_rate(struct fr_buf *out, uint64_t now, uint64_t old, double dt)
{
    if (dt <= 0) {
        return fr_buf_puts(out, "null");
    }
    /* A counter that went down was reset (layout change): count from 0. */
    double inc = now >= old ? (double)(now - old) : (double)now;
    return render_json_double(out, round(inc / dt * 1000.0) / 1000.0);
}

int fr_stats_render_rates(const struct fr_stats_snap *now, const struct fr_stats_snap *old,
                          struct fr_buf *out)
{
    double dt = old && old->present && now->present
                    ? (double)(now->read_mono_ns - old->read_mono_ns) / 1e9
                    : 0;
    int rc = fr_buf_putc(out, '{');
    int first = 1;
    for (int id = 0; rc == FR_OK && id < FR_STATS_COUNT; id++) {
        const struct fr_stats_meta *m = fr_stats_meta((enum fr_stats_id)id);
        if (m->stage != now->stage || !now->present || m->type == FR_STATS_GAUGE) {
            continue;
        }
        rc = fr_buf_printf(out, "%s\"%s\":", first ? "" : ",", m->name);
        first = 0;
        if (rc != FR_OK) {
            break;
        }
        if (m->type == FR_STATS_HISTOGRAM) {
            rc = render_rate(out, fr_stats_snap_hist_count(now, m->id),
                             dt > 0 ? fr_stats_snap_hist_count(old, m->id) : 0, dt);
        } else if (m->label[0]) {
            rc = fr_buf_putc(out, '{');
            for (unsigned l = 0; rc == FR_OK && l < m->nlabels; l++) {
                rc = fr_buf_printf(out, "%s\"%s\":", l ? "," : "", fr_stats_label_value(m, l));
                if (rc == FR_OK) {
                    rc = render_rate(out, now->slots[m->slot + l],
                                     dt > 0 ? old->slots[m->slot + l] : 0, dt);
                }
            }
            if (rc == FR_OK) {
                rc = fr_buf_putc(out, '}');
            }
        } else {
            rc = render_rate(out, now->slots[m->slot], dt > 0 ? old->slots[m->slot] : 0, dt);
        }
    }
    return rc == FR_OK ? fr_buf_putc(out, '}') : rc;
}

/* ------------------------------------------------------------- METRICS.md */

/* The scale-out mode's section: how each process metric is totalled over
 * the members (group.c) and the per-member families. */
static int render_group_markdown(struct fr_buf *out)
{
    int rc = fr_buf_puts(
        out,
        "\n## Consumer group (scale-out mode)\n\n"
        "In the scale-out mode ([SCALEOUT.md](SCALEOUT.md), [ADR 0042](adr/0042-group-metrics.md)) "
        "every shard (`freshet process --partition N`) and the finalizer (`freshet process "
        "--finalize`) publish their own stats file, `<data>/stats/process-p<N>.stats` and "
        "`<data>/stats/finalize.stats`, with the process metrics above. `freshet serve` then "
        "shows every process metric above as the group's **total**, under the same name and "
        "labels, so dashboards and alert rules work unchanged; the column below says how each "
        "is totalled over the members that have a value (min and max skip members without "
        "one). The finalizer counts no records (each log record is counted once, by its "
        "shard); its watermark is gold's frontier. `freshet_stage_up{stage=\"process\"}` is 1 "
        "when at least one member is up and every member is up except those that stopped "
        "cleanly (a shard revoked from this host); a crashed, hung or killed member makes it "
        "0.\n\n"
        "| metric | group total |\n|---|---|\n");
    for (int id = 0; rc == FR_OK && id < FR_STATS_COUNT; id++) {
        const struct fr_stats_meta *m = fr_stats_meta((enum fr_stats_id)id);
        const char *agg = fr_stats_group_agg(m->id);
        if (agg) {
            rc = fr_buf_printf(out, "| `freshet_%s` | %s%s |\n", m->name,
                               m->type == FR_STATS_HISTOGRAM ? "bucket-wise " : "", agg);
        }
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(
            out,
            "\nBeside the totals, serve renders one series per member, labelled `role` "
            "(`shard` or `finalizer`), `partition` (shards only) and `instance` (hostname:pid "
            "of the `freshet process --group` instance running it, or of the member itself; "
            "`freshet process --instance ID` sets it). These families exist only in this "
            "mode and have names of their own, so a `sum()` or `rate()` over a total never "
            "counts a member twice:\n\n"
            "| name | type | description |\n|---|---|---|\n"
            "| `freshet_process_member_up` | gauge | 1 when the member's process is alive (it "
            "holds its stats file) and its heartbeat is younger than 30 s, else 0; a member "
            "that died or stopped stays listed with 0. |\n"
            "| `freshet_process_member_heartbeat_age_seconds` | gauge | Seconds since the "
            "member last published. |\n"
            "| `freshet_process_member_start_time_seconds` | gauge | When the member's current "
            "(or last) process started, Unix seconds. |\n"
            "| `freshet_process_member_<name>` | as the total | Every counter and gauge of "
            "the process stage above (histograms: totals only), `process_` replaced by "
            "`process_member_`, e.g. `freshet_process_member_records_total{outcome,role,"
            "partition,instance}`, `freshet_process_member_freshness_seconds`. Enrichment "
            "series are left out (it does not run in this mode). |\n");
    }
    return rc;
}

int fr_stats_markdown(struct fr_buf *out)
{
    static const char *types[] = {"", "counter", "gauge", "histogram"};
    static const char *where[] = {"`<data>/stats/ingest.stats`, written by `freshet ingest`",
                                  "`<data>/stats/process.stats`, written by `freshet process`",
                                  "kept in memory by `freshet serve`"};
    int rc = fr_buf_puts(
        out,
        "# Metrics\n\n"
        "Generated from `src/stats/stats_table.h` by `freshet serve --metrics-markdown`; a test "
        "fails when this file drifts from the table.\n\n"
        "Each stage process publishes its figures in a memory-mapped stats file under "
        "`<data>/stats/` ([ADR 0009](adr/0009-stats-files.md)); `freshet serve` reads them and "
        "exposes every metric below at `GET /metrics` with the prefix `freshet_` (Prometheus "
        "text format 0.0.4) and in `GET /api/v1/status` under its name without the prefix "
        "([API.md](API.md)). A stage that is down keeps its last values and "
        "`freshet_stage_up{stage=...}` is 0. Counters continue across restarts of a stage (a "
        "new process carries its predecessor's values over); `process_records_total` and "
        "`process_dlq_records_total` are the pipeline's totals kept in its checkpoint, so they "
        "count every record exactly once however often the processor restarts. Timestamps are "
        "Unix seconds, durations seconds, sizes bytes. A gauge with no value yet (such as the "
        "watermark before the first record) is absent from `/metrics` and `null` in JSON.\n");
    enum fr_stats_stage stage = FR_STATS_STAGES;
    for (int id = 0; rc == FR_OK && id < FR_STATS_COUNT; id++) {
        const struct fr_stats_meta *m = fr_stats_meta((enum fr_stats_id)id);
        if (m->stage != stage) {
            stage = m->stage;
            rc = fr_buf_printf(out,
                               "\n## %s\n\nPublished in %s.\n\n"
                               "| name | type | unit | labels | description |\n"
                               "|---|---|---|---|---|\n",
                               fr_stats_stage_name(stage), where[stage]);
        }
        if (rc == FR_OK) {
            rc = fr_buf_printf(out, "| `freshet_%s` | %s | %s | %s%s%s | %s |\n", m->name,
                               types[m->type], m->unit[0] ? m->unit : "—", m->label[0] ? "`" : "",
                               m->label[0] ? m->label : "—", m->label[0] ? "`" : "", m->help);
        }
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, "\n## Label values\n\n| label | values |\n|---|---|\n");
    }
    const enum fr_stats_id with_labels[] = {FR_STATS_PROC_DLQ, FR_STATS_PROC_RECORDS,
                                            FR_STATS_STAGE_UP};
    for (size_t i = 0; rc == FR_OK && i < sizeof with_labels / sizeof *with_labels; i++) {
        const struct fr_stats_meta *m = fr_stats_meta(with_labels[i]);
        rc = fr_buf_printf(out, "| `%s` | ", m->label);
        for (unsigned l = 0; rc == FR_OK && l < m->nlabels; l++) {
            rc = fr_buf_printf(out, "%s`%s`", l ? ", " : "", fr_stats_label_value(m, l));
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, " |\n");
        }
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, "\n## Histogram buckets\n\n| histogram | upper bounds (seconds; "
                              "`+Inf` implied) |\n|---|---|\n");
    }
    for (int id = 0; rc == FR_OK && id < FR_STATS_COUNT; id++) {
        const struct fr_stats_meta *m = fr_stats_meta((enum fr_stats_id)id);
        if (m->type != FR_STATS_HISTOGRAM) {
            continue;
        }
        rc = fr_buf_printf(out, "| `freshet_%s` | ", m->name);
        for (unsigned b = 0; rc == FR_OK && b < m->nbuckets; b++) {
            rc = fr_buf_printf(out, "%s%g", b ? ", " : "", m->bounds[b]);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, " |\n");
        }
    }
    return rc == FR_OK ? render_group_markdown(out) : rc;
}
