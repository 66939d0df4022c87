/*
 * bench_gate.c — throughput of the quality gate and of fr_proc on real
 * events, against src/core/json.c's scanner on the same bytes.
 *
 * Input: the 1200 recorded events of gokulportfolio-sample_events.jsonl
 * (real recentchange events, ~1.5 KB each, \uXXXX-escaped), repeated until
 * `count` events, each copy with its own meta.id (a counter written into
 * the UUID) and its meta.dt moved forward by 97 s per round, so event time
 * advances like a live stream (~12 events per event-second). In the same
 * run it measures, one core, no I/O, best of `passes`:
 *
 *   gate      fr_gate_decode on every event (validate + extract, one walk)
 *   json.c    the scanner approach: fr_json_validate, then fr_json_member
 *             for each silver field (each call walks its object again)
 *             and fr_json_unescape for the strings: less checking than the
 *             gate, the baseline the ADR compares against
 *   validate  fr_json_validate alone: json.c's single pass, no extraction
 *   json.walk json.c at its best: fr_json_validate, then one walk over the
 *             members with fr_json_value (each value scanned again)
 *   proc      fr_proc_record end to end: gate, lateness, dedup, minute
 *             windows, top-pages panes and their emission
 *
 * and prints MB/s (10^6 bytes) and events/s for each.
 *
 *   usage: bench_gate [events.jsonl] [count] [passes]
 *          (defaults $FR_SHARED_DIR/data/wikimedia/gokulportfolio-sample_events.jsonl,
 *           200000 and 5)
 */
#include "core/clock.h"
#include "core/err.h"
#include "core/json.h"
#include "process/process.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bench_events {
    char *data;
    size_t *off, *len;
    size_t n, bytes;
    int64_t *ingest_ms;
};

static char *bench_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = malloc((size_t)n + 1);
    *len = fread(data, 1, (size_t)n, f);
    data[*len] = 0;
    fclose(f);
    return data;
}

/* Rewrite the 36-byte meta.id after `"id":"` inside meta and the 24-byte
 * meta.dt in place. */
static void bench_vary(char *ev, size_t len, uint64_t serial, int64_t shift_us, int64_t *event_us)
{
    char *meta = strstr(ev, "\"meta\":{");
    char *id = meta ? strstr(meta, "\"id\":\"") : NULL;
    if (id && (size_t)(id - ev) + 6 + 36 < len) {
        char hex[17];
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)serial);
        memcpy(id + 6, hex, 8);
        memcpy(id + 6 + 9, hex + 8, 4);
        memcpy(id + 6 + 14, hex + 12, 4);
    }
    char *dt = meta ? strstr(meta, "\"dt\":\"") : NULL;
    if (dt) {
        char *q = strchr(dt + 6, '"');
        int64_t us;
        if (q && fr_time_parse_rfc3339(dt + 6, (size_t)(q - dt - 6), &us) == FR_OK &&
            q - dt - 6 == 24) {
            char out[32];
            fr_time_format_ms(us + shift_us, out);
            memcpy(dt + 6, out, 24);
            *event_us = us + shift_us;
        }
    }
}

static int bench_build(const char *path, size_t count, struct bench_events *ev)
{
    size_t flen;
    char *file = bench_slurp(path, &flen);
    if (!file) {
        fprintf(stderr, "bench_gate: cannot read %s\n", path);
        return -1;
    }
    size_t lines = 0;
    const char *line[4096];
    size_t llen[4096];
    for (char *p = file; *p && lines < 4096;) {
        char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n) {
            line[lines] = p;
            llen[lines++] = n;
        }
        p += n + (nl != NULL);
    }
    size_t total = 0;
    for (size_t i = 0; i < count; i++) {
        total += llen[i % lines];
    }
    ev->data = malloc(total);
    ev->off = malloc(count * sizeof *ev->off);
    ev->len = malloc(count * sizeof *ev->len);
    ev->ingest_ms = malloc(count * sizeof *ev->ingest_ms);
    ev->n = count;
    ev->bytes = total;
    size_t at = 0;
    for (size_t i = 0; i < count; i++) {
        size_t k = i % lines;
        memcpy(ev->data + at, line[k], llen[k]);
        int64_t event_us = 0;
        bench_vary(ev->data + at, llen[k], i, (int64_t)(i / lines) * 97000000, &event_us);
        ev->off[i] = at;
        ev->len[i] = llen[k];
        ev->ingest_ms[i] = event_us / 1000 + 1500;
        at += llen[k];
    }
    free(file);
    return 0;
}

/* The json.c approach: validate, then one fr_json_member per field. */
static int bench_jsonc_one(const char *json, size_t len, char *scratch, size_t cap)
{
    static const char *const top_str[] = {"wiki",    "type",        "title",    "user",
                                          "comment", "server_name", "log_type", "log_action"};
    static const char *const top_int[] = {"namespace", "id", "log_id", "timestamp"};
    static const char *const top_bool[] = {"bot", "minor", "patrolled"};
    struct fr_json_val top, meta, v, sub;
    if (fr_json_validate(json, json + len) < 0 || !fr_json_value(json, json + len, &top) ||
        top.type != FR_JSON_OBJECT || fr_json_member(&top, "meta", &meta) != 1) {
        return -1;
    }
    int sum = 0;
    size_t used = 0;
    int64_t i64;
    if (fr_json_member(&meta, "id", &v) == 1) {
        sum += fr_json_unescape(&v, scratch, cap);
    }
    if (fr_json_member(&meta, "dt", &v) == 1 &&
        fr_time_parse_rfc3339(v.start, (size_t)(v.end - v.start), &i64) == FR_OK) {
        sum += (int)(i64 & 1);
    }
    if (fr_json_member(&meta, "domain", &v) == 1) {
        sum += fr_json_str_eq(&v, "canary");
    }
    for (size_t i = 0; i < sizeof top_str / sizeof top_str[0]; i++) {
        if (fr_json_member(&top, top_str[i], &v) == 1 && v.type == FR_JSON_STRING) {
            int n = fr_json_unescape(&v, scratch + used, cap - used);
            if (n > 0) {
                used += (size_t)n;
            }
        }
    }
    for (size_t i = 0; i < sizeof top_int / sizeof top_int[0]; i++) {
        if (fr_json_member(&top, top_int[i], &v) == 1 && fr_json_int64(&v, &i64) == FR_OK) {
            sum += (int)(i64 & 1);
        }
    }
    for (size_t i = 0; i < sizeof top_bool / sizeof top_bool[0]; i++) {
        if (fr_json_member(&top, top_bool[i], &v) == 1) {
            sum += v.type == FR_JSON_TRUE;
        }
    }
    static const char *const objs[] = {"length", "revision"};
    for (int o = 0; o < 2; o++) {
        if (fr_json_member(&top, objs[o], &sub) == 1 && sub.type == FR_JSON_OBJECT) {
            if (fr_json_member(&sub, "old", &v) == 1 && fr_json_int64(&v, &i64) == FR_OK) {
                sum += (int)(i64 & 1);
            }
            if (fr_json_member(&sub, "new", &v) == 1 && fr_json_int64(&v, &i64) == FR_OK) {
                sum += (int)(i64 & 1);
            }
        }
    }
    return sum + (int)used;
}

/* The best json.c can do: validate, then one fr_json_value walk over the
 * members of the top-level object and of meta/length/revision. */
static int bench_jsonc_members(const struct fr_json_val *obj, char *scratch, size_t cap,
                               size_t *used, int depth)
{
    static const char *const keep[] = {"id",   "dt",      "wiki",        "type",     "title",
                                       "user", "comment", "server_name", "log_type", "log_action"};
    int sum = 0;
    const char *end = obj->end - 1; /* the closing brace */
    const char *p = fr_json_ws(obj->start + 1, end);
    while (p < end) {
        struct fr_json_val k, v;
        p = fr_json_value(p, end, &k);
        if (!p || k.type != FR_JSON_STRING) {
            return -1;
        }
        p = fr_json_ws(p, end);
        p = fr_json_value(p + 1, end, &v); /* after ':' */
        if (!p) {
            return -1;
        }
        size_t klen = (size_t)(k.end - k.start);
        if (v.type == FR_JSON_OBJECT && depth == 0 &&
            ((klen == 4 && memcmp(k.start, "meta", 4) == 0) ||
             (klen == 6 && memcmp(k.start, "length", 6) == 0) ||
             (klen == 8 && memcmp(k.start, "revision", 8) == 0))) {
            sum += bench_jsonc_members(&v, scratch, cap, used, 1);
        } else if (v.type == FR_JSON_STRING) {
            for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
                if (strlen(keep[i]) == klen && memcmp(keep[i], k.start, klen) == 0) {
                    int n = fr_json_unescape(&v, scratch + *used, cap - *used);
                    *used += n > 0 ? (size_t)n : 0;
                }
            }
        } else if (v.type == FR_JSON_NUMBER) {
            int64_t i64;
            sum += fr_json_int64(&v, &i64) == FR_OK && (i64 & 1);
        } else {
            sum += v.type == FR_JSON_TRUE;
        }
        p = fr_json_ws(p, end);
        if (p < end && *p == ',') {
            p = fr_json_ws(p + 1, end);
        }
    }
    return sum;
}

static int bench_jsonc_walk(const char *json, size_t len, char *scratch, size_t cap)
{
    struct fr_json_val top;
    if (fr_json_validate(json, json + len) < 0 || !fr_json_value(json, json + len, &top) ||
        top.type != FR_JSON_OBJECT) {
        return -1;
    }
    size_t used = 0;
    return bench_jsonc_members(&top, scratch, cap, &used, 0) + (int)used;
}

static int bench_count_minute(void *arg, const struct fr_win_row *row)
{
    ((uint64_t *)arg)[0] += row->counts.events;
    return 0;
}

static int bench_count_top(void *arg, const struct fr_top_row *row)
{
    ((uint64_t *)arg)[1] += row->count;
    return 0;
}

static void bench_report(const char *name, const struct bench_events *ev, int64_t best_ns)
{
    double s = (double)best_ns / 1e9;
    printf("%-10s %9.1f MB/s %11.0f events/s  (%.3f s for %zu events, %.1f MB)\n", name,
           (double)ev->bytes / 1e6 / s, (double)ev->n / s, s, ev->n, (double)ev->bytes / 1e6);
}

int main(int argc, char **argv)
{
    char def[4096];
    const char *shared = getenv("FR_SHARED_DIR");
    snprintf(def, sizeof def, "%s/data/wikimedia/gokulportfolio-sample_events.jsonl",
             shared ? shared : "../shared");
    const char *path = argc > 1 ? argv[1] : def;
    size_t count = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 200000;
    int passes = argc > 3 ? atoi(argv[3]) : 5;
    if (count == 0 || passes <= 0) {
        fprintf(stderr, "usage: bench_gate [events.jsonl] [count] [passes]\n");
        return 2;
    }
    struct bench_events ev;
    if (bench_build(path, count, &ev) < 0) {
        return 1;
    }
    struct fr_gate_opts gopts = {FR_GATE_DEFAULT_MAX_EVENT_BYTES, FR_GATE_DEFAULT_MAX_FUTURE_MS};
    struct fr_gate *gate = NULL;
    if (fr_gate_create(&gopts, &gate) < 0) {
        return 1;
    }
    static char scratch[1 << 20];
    struct fr_row row;
    char detail[FR_GATE_DETAIL_MAX];
    int64_t best_gate = INT64_MAX, best_jsonc = INT64_MAX, best_valid = INT64_MAX;
    int64_t best_proc = INT64_MAX, best_walk = INT64_MAX;
    uint64_t accepted = 0, sink = 0, minute_events = 0, top_counts = 0;
    struct fr_proc_stats st = {0};
    for (int pass = 0; pass < passes; pass++) {
        int64_t t0 = fr_mono_ns();
        accepted = 0;
        for (size_t i = 0; i < ev.n; i++) {
            struct fr_proc_pos pos = {0, (int64_t)i, ev.ingest_ms[i]};
            accepted += fr_gate_decode(gate, &pos, ev.data + ev.off[i], ev.len[i], &row, detail) ==
                        FR_GATE_OK;
            sink += row.title.len;
        }
        int64_t t1 = fr_mono_ns();
        for (size_t i = 0; i < ev.n; i++) {
            sink +=
                (uint64_t)bench_jsonc_one(ev.data + ev.off[i], ev.len[i], scratch, sizeof scratch);
        }
        int64_t t2 = fr_mono_ns();
        for (size_t i = 0; i < ev.n; i++) {
            sink +=
                (uint64_t)fr_json_validate(ev.data + ev.off[i], ev.data + ev.off[i] + ev.len[i]);
        }
        int64_t t3 = fr_mono_ns();
        for (size_t i = 0; i < ev.n; i++) {
            sink +=
                (uint64_t)bench_jsonc_walk(ev.data + ev.off[i], ev.len[i], scratch, sizeof scratch);
        }
        int64_t t3b = fr_mono_ns();
        best_walk = t3b - t3 < best_walk ? t3b - t3 : best_walk;
        struct fr_proc_opts popts;
        fr_proc_opts_default(&popts);
        struct fr_proc *proc = NULL;
        if (fr_proc_create(&popts, &proc) < 0) {
            return 1;
        }
        struct fr_proc_sink psink = {bench_count_minute, bench_count_top};
        uint64_t counts[2] = {0, 0};
        int64_t t4 = fr_mono_ns();
        for (size_t i = 0; i < ev.n; i++) {
            struct fr_proc_pos pos = {0, (int64_t)i, ev.ingest_ms[i]};
            struct fr_proc_result res;
            if (fr_proc_record(proc, &pos, ev.data + ev.off[i], ev.len[i], &psink, counts, &res) <
                0) {
                return 1;
            }
        }
        int64_t t5 = fr_mono_ns();
        minute_events = counts[0];
        top_counts = counts[1];
        fr_proc_stats(proc, &st);
        fr_proc_destroy(proc);
        best_gate = t1 - t0 < best_gate ? t1 - t0 : best_gate;
        best_jsonc = t2 - t1 < best_jsonc ? t2 - t1 : best_jsonc;
        best_valid = t3 - t2 < best_valid ? t3 - t2 : best_valid;
        best_proc = t5 - t4 < best_proc ? t5 - t4 : best_proc;
    }
    printf("# bench_gate: %zu events from %s, best of %d passes, one core\n", ev.n, path, passes);
    bench_report("gate", &ev, best_gate);
    bench_report("json.c", &ev, best_jsonc);
    bench_report("validate", &ev, best_valid);
    bench_report("json.walk", &ev, best_walk);
    bench_report("proc", &ev, best_proc);
    printf("gate/json.c speed-up: %.2fx; gate accepted %llu of %zu\n",
           (double)best_jsonc / (double)best_gate, (unsigned long long)accepted, ev.n);
    printf("proc: %llu silver, %llu late, %llu duplicates, %llu minute rows (%llu events), "
           "%llu top windows; dedup peak state %llu keys, %llu bytes\n",
           (unsigned long long)st.silver, (unsigned long long)st.late,
           (unsigned long long)st.duplicates, (unsigned long long)st.win.rows,
           (unsigned long long)minute_events, (unsigned long long)st.top.windows,
           (unsigned long long)st.dedup.keys, (unsigned long long)st.dedup.bytes);
    fprintf(stderr, "(checksum %llu, top-pages counts %llu)\n", (unsigned long long)sink,
            (unsigned long long)top_counts);
    fr_gate_destroy(gate);
    free(ev.data);
    free(ev.off);
    free(ev.len);
    free(ev.ingest_ms);
    return accepted == ev.n ? 0 : 1;
}
