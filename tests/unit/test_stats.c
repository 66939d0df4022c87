/*
 * test_stats.c — unit tests for src/stats: the metric table's conventions,
 * the stats file (write, read, liveness, carry-over, refusal of foreign
 * files and of a second live writer), seqlock consistency with a writer
 * and a reader in different processes, the Prometheus text (checked by a
 * small parser of the exposition format, and by promtool when installed),
 * the JSON documents and the live view; the scale-out members read as one
 * group (totals by each metric's aggregate, liveness, per-member series).
 */
#include "check.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/err.h"
#include "core/json.h"
#include "stats/stats.h"

#include <ctype.h>
#include <math.h>
#include <signal.h>
#include <sys/wait.h>

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static void test_table_conventions(void)
{
    unsigned next = 0;
    for (int id = 0; id < FR_STATS_COUNT; id++) {
        const struct fr_stats_meta *m = fr_stats_meta((enum fr_stats_id)id);
        CHECK(m != NULL);
        CHECK_EQ_INT(m->slot, next); /* contiguous, in table order */
        next = m->slot + m->width;
        for (const char *p = m->name; *p; p++) {
            CHECK(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_');
        }
        CHECK(strncmp(m->name, fr_stats_stage_name(m->stage),
                      strlen(fr_stats_stage_name(m->stage))) == 0 ||
              m->stage == FR_STATS_SERVE);
        if (m->type == FR_STATS_COUNTER) {
            CHECK(ends_with(m->name, "_total"));
        } else {
            CHECK(!ends_with(m->name, "_total"));
        }
        if (m->unit[0]) {
            char want[64];
            snprintf(want, sizeof want, m->type == FR_STATS_COUNTER ? "_%s_total" : "_%s", m->unit);
            CHECK(ends_with(m->name, want));
        }
        if (m->type == FR_STATS_HISTOGRAM) {
            CHECK(m->nbuckets > 0 && m->nlabels == 1 && m->width == m->nbuckets + 2);
            for (unsigned b = 1; b < m->nbuckets; b++) {
                CHECK(m->bounds[b] > m->bounds[b - 1]);
            }
        } else {
            CHECK_EQ_INT(m->width, m->nlabels);
        }
        CHECK(strlen(m->help) > 10);
    }
    CHECK_EQ_INT(next, FR_STATS_NSLOTS);
    const struct fr_stats_meta *dlq = fr_stats_meta(FR_STATS_PROC_DLQ);
    CHECK_EQ_STR(dlq->label, "reason");
    CHECK_EQ_INT(dlq->nlabels, FR_GATE_REASON_COUNT - 1);
    CHECK_EQ_STR(fr_stats_label_value(dlq, 0), "oversize");
    CHECK_EQ_STR(fr_stats_label_value(fr_stats_meta(FR_STATS_PROC_RECORDS), 3), "dlq");
}

static void test_write_read(void)
{
    const char *dir = check_tmpdir();
    struct fr_stats *st = NULL;
    struct fr_stats_snap snap;
    CHECK_EQ_INT(fr_stats_read(dir, FR_STATS_INGEST, &snap), FR_ENOTFOUND);
    CHECK(!snap.present);
    CHECK_EQ_INT(fr_stats_open(dir, FR_STATS_INGEST, &st), FR_OK);
    CHECK(fr_stats_has_file(st));
    fr_stats_add(st, FR_STATS_INGEST_EVENTS, 0, 41);
    fr_stats_add(st, FR_STATS_INGEST_EVENTS, 0, 1);
    fr_stats_set(st, FR_STATS_INGEST_LAST_EVENT, 0, 1764423844.5);
    fr_stats_observe(st, FR_STATS_INGEST_FSYNC, 0.0007);
    fr_stats_observe(st, FR_STATS_INGEST_FSYNC, 5.0);
    /* Wrong kinds are ignored, never a crash. */
    fr_stats_add(st, FR_STATS_INGEST_LAST_EVENT, 0, 1);
    fr_stats_set(st, FR_STATS_INGEST_EVENTS, 0, 3.0);
    fr_stats_add(st, FR_STATS_PROC_DLQ, 999, 1);
    fr_stats_add(NULL, FR_STATS_INGEST_EVENTS, 0, 1);
    fr_stats_publish(st);
    CHECK_EQ_INT(fr_stats_read(dir, FR_STATS_INGEST, &snap), FR_OK);
    CHECK(snap.present && snap.alive && !snap.torn);
    CHECK_EQ_INT(snap.pid, getpid());
    CHECK(fr_stats_snap_up(&snap, fr_wall_ms()));
    CHECK(!fr_stats_snap_up(&snap, fr_wall_ms() + FR_STATS_STALE_MS + 1));
    CHECK_EQ_INT(fr_stats_snap_counter(&snap, FR_STATS_INGEST_EVENTS, 0), 42);
    CHECK(fr_stats_snap_gauge(&snap, FR_STATS_INGEST_LAST_EVENT, 0) == 1764423844.5);
    CHECK(isnan(fr_stats_snap_gauge(&snap, FR_STATS_INGEST_LAST_APPEND, 0)));
    CHECK_EQ_INT(fr_stats_snap_hist_count(&snap, FR_STATS_INGEST_FSYNC), 2);
    CHECK(fabs(fr_stats_snap_hist_sum(&snap, FR_STATS_INGEST_FSYNC) - 5.0007) < 1e-12);
    const struct fr_stats_meta *h = fr_stats_meta(FR_STATS_INGEST_FSYNC);
    CHECK_EQ_INT(snap.slots[h->slot + 1], 1);           /* 0.0007 <= 0.001 */
    CHECK_EQ_INT(snap.slots[h->slot + h->nbuckets], 1); /* 5 > 1: +Inf */

    /* A second writer of the same stage while the first lives: refused
     * (memory only), and the first's file is untouched. */
    struct fr_stats *second = NULL;
    CHECK_EQ_INT(fr_stats_open(dir, FR_STATS_INGEST, &second), FR_OK);
    CHECK(!fr_stats_has_file(second));
    fr_stats_add(second, FR_STATS_INGEST_EVENTS, 0, 1000);
    fr_stats_close(second);
    CHECK_EQ_INT(fr_stats_read(dir, FR_STATS_INGEST, &snap), FR_OK);
    CHECK_EQ_INT(fr_stats_snap_counter(&snap, FR_STATS_INGEST_EVENTS, 0), 42);

    /* Closing drops the lock: the stage is down, its values stay. */
    fr_stats_close(st);
    CHECK_EQ_INT(fr_stats_read(dir, FR_STATS_INGEST, &snap), FR_OK);
    CHECK(snap.present && !snap.alive);
    CHECK(!fr_stats_snap_up(&snap, fr_wall_ms()));
    CHECK_EQ_INT(fr_stats_snap_counter(&snap, FR_STATS_INGEST_EVENTS, 0), 42);

    /* A restart carries counters and histograms over, not gauges. */
    CHECK_EQ_INT(fr_stats_open(dir, FR_STATS_INGEST, &st), FR_OK);
    fr_stats_add(st, FR_STATS_INGEST_EVENTS, 0, 8);
    fr_stats_publish(st);
    CHECK_EQ_INT(fr_stats_read(dir, FR_STATS_INGEST, &snap), FR_OK);
    CHECK_EQ_INT(fr_stats_snap_counter(&snap, FR_STATS_INGEST_EVENTS, 0), 50);
    CHECK_EQ_INT(fr_stats_snap_hist_count(&snap, FR_STATS_INGEST_FSYNC), 2);
    CHECK(isnan(fr_stats_snap_gauge(&snap, FR_STATS_INGEST_LAST_EVENT, 0)));
    fr_stats_close(st);

    /* A foreign or damaged file is refused, not misread. */
    char path[4200];
    fr_stats_path(dir, FR_STATS_PROCESS, path, sizeof path);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        for (int i = 0; i < 2000; i++) {
            fputc('x', f);
        }
        fclose(f);
    }
    CHECK_EQ_INT(fr_stats_read(dir, FR_STATS_PROCESS, &snap), FR_ECORRUPT);
    CHECK(!snap.present);
    /* ...and a writer replaces it. */
    CHECK_EQ_INT(fr_stats_open(dir, FR_STATS_PROCESS, &st), FR_OK);
    CHECK(fr_stats_has_file(st));
    fr_stats_close(st);
    CHECK_EQ_INT(fr_stats_read(dir, FR_STATS_PROCESS, &snap), FR_OK);
}

/* Every slot of the metrics the writer touches holds the same round number
 * within one snapshot, whatever the reader interleaves with. */
static void test_seqlock_processes(void)
{
    const char *dir = check_tmpdir();
    int ready[2];
    CHECK(pipe(ready) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        struct fr_stats *st = NULL;
        fr_stats_open(dir, FR_STATS_PROCESS, &st);
        char c = 1;
        if (write(ready[1], &c, 1) != 1) {
            _exit(2);
        }
        for (uint64_t round = 1;; round++) {
            for (unsigned r = 0; r < FR_GATE_REASON_COUNT - 1; r++) {
                fr_stats_set_counter(st, FR_STATS_PROC_DLQ, r, round);
            }
            for (unsigned o = 0; o < 4; o++) {
                fr_stats_set_counter(st, FR_STATS_PROC_RECORDS, o, round);
            }
            fr_stats_set(st, FR_STATS_PROC_WATERMARK, 0, (double)round);
            fr_stats_set_counter(st, FR_STATS_PROC_EPOCHS, 0, round);
            fr_stats_publish(st);
        }
    }
    char c;
    CHECK(read(ready[0], &c, 1) == 1);
    struct fr_stats_snap *snap = malloc(sizeof *snap);
    int64_t until = fr_mono_ms() + 1500;
    uint64_t reads = 0, torn = 0, distinct = 0, last = 0;
    while (fr_mono_ms() < until) {
        if (fr_stats_read(dir, FR_STATS_PROCESS, snap) != FR_OK) {
            continue;
        }
        reads++;
        uint64_t round = fr_stats_snap_counter(snap, FR_STATS_PROC_EPOCHS, 0);
        int ok = snap->alive && !snap->torn;
        for (unsigned r = 0; r < FR_GATE_REASON_COUNT - 1; r++) {
            ok &= fr_stats_snap_counter(snap, FR_STATS_PROC_DLQ, r) == round;
        }
        for (unsigned o = 0; o < 4; o++) {
            ok &= fr_stats_snap_counter(snap, FR_STATS_PROC_RECORDS, o) == round;
        }
        ok &= round == 0 || fr_stats_snap_gauge(snap, FR_STATS_PROC_WATERMARK, 0) == (double)round;
        ok &= round >= last; /* never goes back */
        torn += !ok;
        distinct += round != last;
        last = round;
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    fprintf(stderr, "     seqlock: %llu snapshots, %llu distinct rounds, %llu inconsistent\n",
            (unsigned long long)reads, (unsigned long long)distinct, (unsigned long long)torn);
    CHECK(reads > 100);
    CHECK(distinct > 10);
    CHECK_EQ_INT(torn, 0);
    /* The writer was SIGKILLed: the kernel dropped its lock. */
    CHECK_EQ_INT(fr_stats_read(dir, FR_STATS_PROCESS, snap), FR_OK);
    CHECK(!snap->alive);
    free(snap);
    close(ready[0]);
    close(ready[1]);
}

/* A parser for the text exposition format 0.0.4: every sample belongs to
 * the family announced by the preceding TYPE, names and labels are well
 * formed, histogram buckets are cumulative and end in +Inf == _count. */
static int check_exposition(const char *text)
{
    char family[256] = "", type[32] = "";
    int samples = 0;
    double last_bucket = -1;
    const char *p = text;
    while (*p) {
        const char *eol = strchr(p, '\n');
        if (!eol) {
            return -1; /* every line ends in \n */
        }
        char line[2048];
        size_t n = (size_t)(eol - p);
        if (n >= sizeof line) {
            return -2;
        }
        memcpy(line, p, n);
        line[n] = 0;
        p = eol + 1;
        if (strncmp(line, "# HELP ", 7) == 0) {
            continue;
        }
        if (strncmp(line, "# TYPE ", 7) == 0) {
            if (sscanf(line + 7, "%255s %31s", family, type) != 2) {
                return -3;
            }
            if (strcmp(type, "counter") && strcmp(type, "gauge") && strcmp(type, "histogram")) {
                return -4;
            }
            last_bucket = -1;
            continue;
        }
        if (line[0] == '#' || !family[0]) {
            return -5;
        }
        char name[256];
        size_t k = 0;
        while (line[k] && (isalnum((unsigned char)line[k]) || line[k] == '_' || line[k] == ':')) {
            k++;
        }
        if (k == 0 || k >= sizeof name) {
            return -6;
        }
        memcpy(name, line, k);
        name[k] = 0;
        if (strncmp(name, "freshet_", 8) != 0 || strncmp(name, family, strlen(family)) != 0) {
            return -7;
        }
        const char *suffix = name + strlen(family);
        if (strcmp(type, "histogram") == 0
                ? strcmp(suffix, "_bucket") && strcmp(suffix, "_sum") && strcmp(suffix, "_count")
                : suffix[0] != 0) {
            return -8;
        }
        const char *q = line + k;
        if (*q == '{') {
            const char *close = strchr(q, '}');
            if (!close || !strstr(q, "=\"")) {
                return -9;
            }
            q = close + 1;
        }
        if (*q != ' ') {
            return -10;
        }
        char *end;
        double v = strtod(q + 1, &end);
        if (end == q + 1 || *end) {
            return -11;
        }
        if (strcmp(suffix, "_bucket") == 0) {
            if (v < last_bucket) {
                return -12;
            }
            last_bucket = v;
        }
        if (strcmp(suffix, "_count") == 0 && v != last_bucket) {
            return -13;
        }
        samples++;
    }
    return samples;
}

static void test_prometheus_text(void)
{
    const char *dir = check_tmpdir();
    struct fr_stats *in = NULL, *pr = NULL, *sv = NULL;
    fr_stats_open(dir, FR_STATS_INGEST, &in);
    fr_stats_open(dir, FR_STATS_PROCESS, &pr);
    fr_stats_open_memory(FR_STATS_SERVE, &sv);
    fr_stats_add(in, FR_STATS_INGEST_EVENTS, 0, 7);
    fr_stats_observe(in, FR_STATS_INGEST_FSYNC, 0.002);
    fr_stats_set_counter(pr, FR_STATS_PROC_DLQ, 1, 3);
    fr_stats_observe(pr, FR_STATS_PROC_BATCH, 0.4);
    fr_stats_set(pr, FR_STATS_PROC_FRESHNESS, 0, 2.25);
    fr_stats_set(sv, FR_STATS_STAGE_UP, 0, 1);
    fr_stats_publish(in);
    fr_stats_publish(pr);
    struct fr_stats_snap *snaps[FR_STATS_STAGES];
    for (int s = 0; s < FR_STATS_STAGES; s++) {
        snaps[s] = calloc(1, sizeof *snaps[s]);
    }
    CHECK_EQ_INT(fr_stats_read(dir, FR_STATS_INGEST, snaps[0]), FR_OK);
    CHECK_EQ_INT(fr_stats_read(dir, FR_STATS_PROCESS, snaps[1]), FR_OK);
    fr_stats_snapshot(sv, snaps[2]);
    struct fr_buf out;
    fr_buf_init(&out, 1 << 20);
    CHECK_EQ_INT(fr_stats_render_prom((const struct fr_stats_snap *const *)snaps, &out), FR_OK);
    const char *text = fr_buf_cstr(&out);
    int samples = check_exposition(text);
    CHECK(samples > 50);
    if (samples <= 0) {
        fprintf(stderr, "exposition error %d in:\n%s\n", samples, text);
    }
    CHECK(strstr(text, "freshet_ingest_events_received_total 7\n") != NULL);
    CHECK(strstr(text, "freshet_process_dlq_records_total{reason=\"not_json\"} 3\n") != NULL);
    CHECK(strstr(text, "freshet_process_freshness_seconds 2.25\n") != NULL);
    CHECK(strstr(text, "freshet_process_batch_duration_seconds_bucket{le=\"0.5\"} 1\n") != NULL);
    CHECK(strstr(text, "freshet_process_batch_duration_seconds_count 1\n") != NULL);
    CHECK(strstr(text, "freshet_stage_up{stage=\"ingest\"} 1\n") != NULL);
    /* Gauges without a value are left out, not NaN. */
    CHECK(strstr(text, "freshet_process_watermark_timestamp_seconds") == NULL);
    CHECK(strstr(text, "NaN") == NULL);

    /* promtool's own linter, when Prometheus is installed. */
    if (system("command -v promtool >/dev/null 2>&1") == 0) {
        char path[4200];
        snprintf(path, sizeof path, "%s/metrics.txt", dir);
        FILE *f = fopen(path, "w");
        fwrite(out.data, 1, out.len, f);
        fclose(f);
        char cmd[4400];
        snprintf(cmd, sizeof cmd, "promtool check metrics < %s", path);
        CHECK_EQ_INT(system(cmd), 0);
    } else {
        fprintf(stderr, "     (promtool not installed: the built-in parser only)\n");
    }

    /* JSON of each stage, and rates between two snapshots. */
    for (int s = 0; s < FR_STATS_STAGES; s++) {
        fr_buf_reset(&out);
        CHECK_EQ_INT(fr_stats_render_json(snaps[s], &out), FR_OK);
        CHECK_EQ_INT(fr_json_validate((const char *)out.data, (const char *)out.data + out.len),
                     FR_OK);
    }
    struct fr_stats_snap *later = malloc(sizeof *later);
    memcpy(later, snaps[0], sizeof *later);
    later->read_mono_ns += 2000000000;
    later->slots[fr_stats_meta(FR_STATS_INGEST_EVENTS)->slot] += 10;
    fr_buf_reset(&out);
    CHECK_EQ_INT(fr_stats_render_rates(later, snaps[0], &out), FR_OK);
    CHECK(strstr(fr_buf_cstr(&out), "\"ingest_events_received_total\":5,") != NULL);
    fr_buf_reset(&out);
    CHECK_EQ_INT(fr_stats_render_rates(later, NULL, &out), FR_OK);
    CHECK(strstr(fr_buf_cstr(&out), "\"ingest_events_received_total\":null") != NULL);
    free(later);
    fr_buf_free(&out);
    for (int s = 0; s < FR_STATS_STAGES; s++) {
        free(snaps[s]);
    }
    fr_stats_close(in);
    fr_stats_close(pr);
    fr_stats_close(sv);
}

static void test_view_json(void)
{
    struct fr_proc_view *view = calloc(1, sizeof *view);
    view->watermark_us = INT64_C(1764423720000000);
    view->max_event_us = INT64_C(1764423870000000);
    const char *names = "enwikidewikiMain \"Page\"";
    memcpy(view->text, names, strlen(names));
    struct fr_proc_str en = {view->text, 6}, de = {view->text + 6, 6};
    struct fr_proc_str title = {view->text + 12, 11};
    int64_t m0 = INT64_C(1764423780000000);
    view->n_groups = 3;
    view->groups[0] = (struct fr_win_row){m0 + 60000000, m0 + 120000000, en, {.events = 30}, 1};
    view->groups[1] = (struct fr_win_row){m0, m0 + 60000000, de, {.events = 50, .edits = 4}, 1};
    view->groups[2] = (struct fr_win_row){m0, m0 + 60000000, en, {.events = 20}, 1};
    view->n_top = 1;
    view->top_start_us = m0 - 480000000;
    view->top_end_us = m0 + 120000000;
    view->top[0] = (struct fr_top_row){view->top_start_us, view->top_end_us, 1, en, title, 9};
    struct fr_buf out;
    fr_buf_init(&out, 1 << 20);
    CHECK_EQ_INT(fr_stats_view_json(view, 12, 1764423871000, &out), FR_OK);
    const char *text = fr_buf_cstr(&out);
    CHECK_EQ_INT(fr_json_validate(text, text + out.len), FR_OK);
    /* Per wiki, summed, by events descending: dewiki 50 vs enwiki 50 ->
     * name order; the span is 90 s (1.5 minutes). */
    CHECK(strstr(text, "\"wikis\":[{\"wiki\":\"dewiki\",\"events\":50,\"edits\":4") != NULL);
    CHECK(strstr(text, "\"events_per_minute\":33.3") != NULL);
    CHECK(strstr(text, "\"title\":\"Main \\\"Page\\\"\"") != NULL);
    CHECK(strstr(text, "\"epoch\":12,") != NULL);
    /* Nothing seen yet: nulls, no top. */
    memset(view, 0, sizeof *view);
    view->watermark_us = FR_PROC_WM_NONE;
    view->max_event_us = FR_PROC_WM_NONE;
    fr_buf_reset(&out);
    CHECK_EQ_INT(fr_stats_view_json(view, -1, 1, &out), FR_OK);
    CHECK(strstr(fr_buf_cstr(&out), "\"watermark_ms\":null") != NULL);
    CHECK(strstr(fr_buf_cstr(&out), "\"top\":null") != NULL);
    fr_buf_free(&out);
    free(view);
}

/* A member with the given figures, published. */
static struct fr_stats *mk_member(const char *dir, enum fr_stats_role role, int part,
                                  const char *instance)
{
    struct fr_stats_member who = {role, part, instance};
    struct fr_stats *st = NULL;
    CHECK_EQ_INT(fr_stats_open_member(dir, &who, &st), FR_OK);
    CHECK(fr_stats_has_file(st));
    return st;
}

static double group_gauge(const struct fr_stats_snap *s, enum fr_stats_id id)
{
    return fr_stats_snap_gauge(s, id, 0);
}

static void test_group(void)
{
    /* Every process gauge has an aggregate; counters and histograms sum;
     * other stages have none. */
    for (int id = 0; id < FR_STATS_COUNT; id++) {
        const struct fr_stats_meta *m = fr_stats_meta((enum fr_stats_id)id);
        const char *agg = fr_stats_group_agg(m->id);
        if (m->stage != FR_STATS_PROCESS) {
            CHECK(agg == NULL);
        } else if (m->type != FR_STATS_GAUGE) {
            CHECK(agg && strcmp(agg, "sum") == 0);
        } else if (!agg) {
            fprintf(stderr, "     gauge %s has no group aggregate\n", m->name);
            CHECK(agg != NULL);
        }
    }
    CHECK_EQ_STR(fr_stats_group_agg(FR_STATS_PROC_FRESHNESS), "max");
    CHECK_EQ_STR(fr_stats_group_agg(FR_STATS_PROC_WATERMARK), "min");

    const char *dir = check_tmpdir();
    struct fr_stats_member bad = {FR_STATS_ROLE_SINGLE, -1, NULL};
    struct fr_stats *st = NULL;
    CHECK_EQ_INT(fr_stats_open_member(dir, &bad, &st), FR_EINVAL);
    struct fr_stats *s0 = mk_member(dir, FR_STATS_ROLE_SHARD, 0, "h0:1");
    struct fr_stats *s1 = mk_member(dir, FR_STATS_ROLE_SHARD, 1, "h1:2");
    struct fr_stats *fin = mk_member(dir, FR_STATS_ROLE_FINALIZER, -1, "fin:3");
    fr_stats_add(s0, FR_STATS_PROC_EPOCHS, 0, 3);
    fr_stats_set_counter(s0, FR_STATS_PROC_RECORDS, 0, 100);
    fr_stats_set_counter(s0, FR_STATS_PROC_RECORDS, 1, 5);
    fr_stats_observe(s0, FR_STATS_PROC_BATCH, 0.04);
    fr_stats_observe(s0, FR_STATS_PROC_BATCH, 0.3);
    fr_stats_set(s0, FR_STATS_PROC_WATERMARK, 0, 1000);
    fr_stats_set(s0, FR_STATS_PROC_WM_LAG, 0, 5);
    fr_stats_set(s0, FR_STATS_PROC_FRESHNESS, 0, 7);
    fr_stats_set(s0, FR_STATS_PROC_NEWEST, 0, 1010);
    fr_stats_set(s0, FR_STATS_PROC_DEDUP_KEYS, 0, 10);
    fr_stats_set(s0, FR_STATS_PROC_BEHIND, 0, 4);
    fr_stats_set(s0, FR_STATS_PROC_LAST_EPOCH, 0, 2);
    fr_stats_set(s0, FR_STATS_PROC_LAST_COMMIT_TS, 0, 2000);
    fr_stats_add(s1, FR_STATS_PROC_EPOCHS, 0, 2);
    fr_stats_set_counter(s1, FR_STATS_PROC_RECORDS, 0, 50);
    fr_stats_set_counter(s1, FR_STATS_PROC_RECORDS, 2, 3);
    fr_stats_observe(s1, FR_STATS_PROC_BATCH, 0.2);
    fr_stats_set(s1, FR_STATS_PROC_WATERMARK, 0, 900);
    fr_stats_set(s1, FR_STATS_PROC_WM_LAG, 0, 20);
    fr_stats_set(s1, FR_STATS_PROC_FRESHNESS, 0, 3);
    fr_stats_set(s1, FR_STATS_PROC_NEWEST, 0, 1020);
    fr_stats_set(s1, FR_STATS_PROC_DEDUP_KEYS, 0, 6);
    fr_stats_set(s1, FR_STATS_PROC_BEHIND, 0, 1);
    fr_stats_set(s1, FR_STATS_PROC_LAST_EPOCH, 0, 1);
    fr_stats_set(s1, FR_STATS_PROC_LAST_COMMIT_TS, 0, 2100);
    fr_stats_add(fin, FR_STATS_PROC_EPOCHS, 0, 4);
    fr_stats_observe(fin, FR_STATS_PROC_BATCH, 0.02);
    fr_stats_set(fin, FR_STATS_PROC_WATERMARK, 0, 800);
    fr_stats_set(fin, FR_STATS_PROC_WM_LAG, 0, 40);
    fr_stats_set(fin, FR_STATS_PROC_LAST_EPOCH, 0, 9);
    fr_stats_publish(s0);
    fr_stats_publish(s1);
    fr_stats_publish(fin);
    /* Names a writer never makes are not members. */
    char path[4200];
    const char *decoys[] = {"process-p01.stats", "process-px.stats", "process-p1.stats.tmp",
                            "finalize.stats.1.tmp"};
    for (size_t i = 0; i < sizeof decoys / sizeof *decoys; i++) {
        snprintf(path, sizeof path, "%s/stats/%s", dir, decoys[i]);
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        if (f) {
            fclose(f);
        }
    }

    struct fr_stats_group *g = malloc(sizeof *g);
    struct fr_stats_snap *total = malloc(sizeof *total);
    struct fr_stats_snap *single = calloc(1, sizeof *single);
    CHECK_EQ_INT(fr_stats_group_read(dir, g), FR_OK);
    CHECK_EQ_INT(g->n, 3);
    CHECK(g->member[0].role == FR_STATS_ROLE_SHARD && g->member[0].partition == 0);
    CHECK(g->member[1].role == FR_STATS_ROLE_SHARD && g->member[1].partition == 1);
    CHECK(g->member[2].role == FR_STATS_ROLE_FINALIZER && g->member[2].partition == -1);
    CHECK_EQ_STR(g->member[1].instance, "h1:2");
    CHECK(fr_stats_group_active(g, single)); /* no process.stats */
    int64_t now = fr_wall_ms();
    fr_stats_group_total(g, now, total);
    CHECK_EQ_INT(fr_stats_snap_counter(total, FR_STATS_PROC_EPOCHS, 0), 9);
    CHECK_EQ_INT(fr_stats_snap_counter(total, FR_STATS_PROC_RECORDS, 0), 150);
    CHECK_EQ_INT(fr_stats_snap_counter(total, FR_STATS_PROC_RECORDS, 1), 5);
    CHECK_EQ_INT(fr_stats_snap_counter(total, FR_STATS_PROC_RECORDS, 2), 3);
    CHECK_EQ_INT(fr_stats_snap_hist_count(total, FR_STATS_PROC_BATCH), 4);
    CHECK(fabs(fr_stats_snap_hist_sum(total, FR_STATS_PROC_BATCH) - 0.56) < 1e-9);
    const struct fr_stats_meta *bm = fr_stats_meta(FR_STATS_PROC_BATCH);
    CHECK_EQ_INT(total->slots[bm->slot + 1], 1); /* 0.02 <= 0.025 */
    CHECK_EQ_INT(total->slots[bm->slot + 2], 1); /* 0.04 <= 0.05 */
    CHECK_EQ_INT(total->slots[bm->slot + 4], 1); /* 0.2 <= 0.25 */
    CHECK_EQ_INT(total->slots[bm->slot + 5], 1); /* 0.3 <= 0.5 */
    CHECK(group_gauge(total, FR_STATS_PROC_WATERMARK) == 800);
    CHECK(group_gauge(total, FR_STATS_PROC_WM_LAG) == 40);
    CHECK(group_gauge(total, FR_STATS_PROC_FRESHNESS) == 7);
    CHECK(group_gauge(total, FR_STATS_PROC_NEWEST) == 1010);
    CHECK(group_gauge(total, FR_STATS_PROC_DEDUP_KEYS) == 16);
    CHECK(group_gauge(total, FR_STATS_PROC_BEHIND) == 5);
    CHECK(group_gauge(total, FR_STATS_PROC_LAST_EPOCH) == 1);
    CHECK(group_gauge(total, FR_STATS_PROC_LAST_COMMIT_TS) == 2100);
    CHECK(isnan(group_gauge(total, FR_STATS_PROC_DEDUP_BYTES))); /* nobody set it */
    CHECK(total->present && fr_stats_snap_up(total, now));
    /* A heartbeat older than the bound: every member, and the stage, down. */
    int64_t later = now + FR_STATS_STALE_MS + 1;
    fr_stats_group_total(g, later, total);
    CHECK(!fr_stats_snap_up(total, later) && !fr_stats_snap_up(&g->member[0], later));
    fr_stats_group_total(g, now, total);

    /* A shard that leaves cleanly (revoked) is down but does not take the
     * stage down; a crashed one does. */
    fr_stats_close(s1);
    CHECK_EQ_INT(fr_stats_group_read(dir, g), FR_OK);
    CHECK(g->member[1].closed && !fr_stats_snap_up(&g->member[1], now));
    fr_stats_group_total(g, now, total);
    CHECK(fr_stats_snap_up(total, now));
    CHECK_EQ_INT(fr_stats_snap_counter(total, FR_STATS_PROC_EPOCHS, 0), 9); /* still listed */
    pid_t pid = fork();
    if (pid == 0) {
        struct fr_stats_member who = {FR_STATS_ROLE_SHARD, 2, "h2:4"};
        struct fr_stats *c = NULL;
        fr_stats_open_member(dir, &who, &c);
        fr_stats_add(c, FR_STATS_PROC_EPOCHS, 0, 1);
        fr_stats_publish(c);
        _exit(0); /* no close: a crash, as far as the file can tell */
    }
    int wstatus = 0;
    CHECK(waitpid(pid, &wstatus, 0) == pid);
    CHECK_EQ_INT(fr_stats_group_read(dir, g), FR_OK);
    CHECK_EQ_INT(g->n, 4);
    CHECK(g->member[2].partition == 2 && !g->member[2].closed && !g->member[2].alive);
    fr_stats_group_total(g, now, total);
    CHECK(!fr_stats_snap_up(total, now));
    CHECK_EQ_INT(fr_stats_snap_counter(total, FR_STATS_PROC_EPOCHS, 0), 10);
    /* A live process.stats and no live member: the single processor. */
    CHECK_EQ_INT(fr_stats_open(dir, FR_STATS_PROCESS, &st), FR_OK);
    CHECK_EQ_INT(fr_stats_read(dir, FR_STATS_PROCESS, single), FR_OK);
    CHECK(fr_stats_group_active(g, single)); /* s0 and fin are alive */
    struct fr_stats_group *dead = malloc(sizeof *dead);
    memcpy(dead, g, sizeof *dead);
    for (unsigned i = 0; i < dead->n; i++) {
        dead->member[i].alive = 0;
    }
    CHECK(!fr_stats_group_active(dead, single));
    free(dead);
    fr_stats_close(st);

    /* The per-member series and JSON. */
    struct fr_buf out;
    fr_buf_init(&out, 1 << 20);
    CHECK_EQ_INT(fr_stats_render_members_prom(g, now, &out), FR_OK);
    const char *text = fr_buf_cstr(&out);
    int samples = check_exposition(text);
    CHECK(samples > 20);
    if (samples <= 0) {
        fprintf(stderr, "exposition error %d in:\n%s\n", samples, text);
    }
    CHECK(strstr(
        text, "freshet_process_member_up{role=\"shard\",partition=\"0\",instance=\"h0:1\"} 1\n"));
    CHECK(strstr(
        text, "freshet_process_member_up{role=\"shard\",partition=\"1\",instance=\"h1:2\"} 0\n"));
    CHECK(strstr(
        text, "freshet_process_member_up{role=\"shard\",partition=\"2\",instance=\"h2:4\"} 0\n"));
    CHECK(strstr(text, "freshet_process_member_up{role=\"finalizer\",instance=\"fin:3\"} 1\n"));
    CHECK(strstr(text,
                 "freshet_process_member_epochs_total{role=\"finalizer\",instance=\"fin:3\"} 4\n"));
    CHECK(strstr(text, "freshet_process_member_records_total{outcome=\"silver\",role=\"shard\","
                       "partition=\"1\",instance=\"h1:2\"} 50\n"));
    CHECK(strstr(text, "freshet_process_member_freshness_seconds{role=\"shard\",partition=\"0\","
                       "instance=\"h0:1\"} 7\n"));
    /* Not the totals' names, nothing the finalizer does not count. */
    CHECK(strstr(text, "freshet_process_epochs_total") == NULL);
    CHECK(strstr(text, "records_total{outcome=\"silver\",role=\"finalizer\"") == NULL);
    CHECK(strstr(text, "enrich") == NULL);
    if (system("command -v promtool >/dev/null 2>&1") == 0) {
        snprintf(path, sizeof path, "%s/members.txt", dir);
        FILE *f = fopen(path, "w");
        fwrite(out.data, 1, out.len, f);
        fclose(f);
        char cmd[4400];
        snprintf(cmd, sizeof cmd, "promtool check metrics < %s", path);
        CHECK_EQ_INT(system(cmd), 0);
    }
    fr_buf_reset(&out);
    CHECK_EQ_INT(fr_stats_render_members_json(g, now, &out), FR_OK);
    text = fr_buf_cstr(&out);
    CHECK_EQ_INT(fr_json_validate(text, text + out.len), FR_OK);
    CHECK(strstr(text, "{\"role\":\"shard\",\"partition\":1,\"instance\":\"h1:2\"") != NULL);
    CHECK(strstr(text, "{\"role\":\"finalizer\",\"partition\":null,\"instance\":\"fin:3\"") !=
          NULL);
    fr_buf_free(&out);
    fr_stats_close(s0);
    fr_stats_close(fin);
    free(g);
    free(total);
    free(single);
}

int main(void)
{
    RUN(test_table_conventions);
    RUN(test_write_read);
    RUN(test_seqlock_processes);
    RUN(test_prometheus_text);
    RUN(test_view_json);
    RUN(test_group);
    return check_report();
}
