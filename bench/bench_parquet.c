/*
 * bench_parquet.c — write and read throughput of src/parquet on a realistic
 * silver table of Wikimedia recentchange events (DESIGN.md: meta id, wiki,
 * type, namespace, title, user, bot, minor, patrolled, length old/new,
 * revision old/new, server name, comment, log type/action, event time).
 *
 * Rows are built from recorded events (the shared sample,
 * gokulportfolio-sample_events.jsonl): each row starts from a random
 * recorded event and varies it — titles and comments get words and numbers
 * spliced in from other events, users follow a Zipf law over the recorded
 * users plus synthetic ones, revision ids and event times advance like a live
 * stream (with out-of-order jitter), lengths drift, flags flip now and then,
 * fields absent from the event (patrolled, old length, log type) stay NULL.
 * Generation is deterministic per --seed and not timed.
 *
 *   bench_parquet --sample FILE [--rows N] [--out DIR] [--codec zstd|snappy|none]
 *                 [--level L] [--api row|batch] [--workers 0|1] [--seed S] [--ndjson]
 *                 [--repeat K]
 *
 * Prints one "result" JSON line per phase (write, read) with seconds, CPU
 * seconds (user + system, all threads: robust when the machine is shared), rows/s,
 * MB/s of logical data (string bytes + fixed-width values, NULLs excluded),
 * the file size, and memory: the RSS high-water mark during the phase
 * (reset through /proc/self/clear_refs) and its growth over the RSS at the
 * phase start. --repeat K runs both phases K times (one line each), for
 * medians on a shared machine. --ndjson also writes DIR/rows.ndjson for
 * bench/parquet.sh, which has DuckDB write the same rows.
 */
#include "core/buf.h"
#include "core/clock.h"
#include "core/err.h"
#include "core/fsutil.h"
#include "core/json.h"
#include "parquet/parquet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* ---------------------------------------------------------------- memory */

static long status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, field, n) == 0) {
            kb = strtol(line + n + 1, NULL, 10);
            break;
        }
    }
    if (f) {
        fclose(f);
    }
    return kb;
}

/* CPU seconds of the process (user + system, all threads). */
static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) {
        fputs("5", f);
        fclose(f);
    }
}

/* ----------------------------------------------------------------- random */

static uint64_t rng_state = 42;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static double rndf(void)
{
    return (double)(rnd() >> 11) / 9007199254740992.0;
}

/* ----------------------------------------------------------------- events */

struct event {
    char *wiki, *type, *title, *user, *server, *comment, *log_type, *log_action;
    int32_t ns;
    bool has_ns, bot, has_bot, minor, has_minor, patrolled, has_patrolled;
    bool has_len_old, has_len_new, has_rev_old, has_rev_new;
    int32_t len_old, len_new;
    int64_t rev_old, rev_new, dt_us;
};

static char *jstr(const struct fr_json_val *obj, const char *key)
{
    struct fr_json_val v;
    if (fr_json_member(obj, key, &v) != 1 || v.type != FR_JSON_STRING) {
        return NULL;
    }
    size_t cap = (size_t)(v.end - v.start) + 1;
    char *s = malloc(cap);
    int n = fr_json_unescape(&v, s, cap);
    if (n < 0) {
        free(s);
        return NULL;
    }
    s[n] = 0;
    return s;
}

static bool jbool(const struct fr_json_val *obj, const char *key, bool *out)
{
    struct fr_json_val v;
    if (fr_json_member(obj, key, &v) != 1 || (v.type != FR_JSON_TRUE && v.type != FR_JSON_FALSE)) {
        return false;
    }
    *out = v.type == FR_JSON_TRUE;
    return true;
}

static bool jint(const struct fr_json_val *obj, const char *key, int64_t *out)
{
    struct fr_json_val v;
    return fr_json_member(obj, key, &v) == 1 && v.type == FR_JSON_NUMBER &&
           fr_json_int64(&v, out) == FR_OK;
}

static size_t load_events(const char *path, struct event **out)
{
    struct fr_buf file;
    fr_buf_init(&file, (size_t)1 << 30);
    int rc = fr_fs_read_file(path, &file);
    if (rc < 0) {
        fprintf(stderr, "bench_parquet: %s: %s\n", path, fr_strerror(rc));
        exit(1);
    }
    size_t n = 0, cap = 2048;
    struct event *ev = calloc(cap, sizeof *ev);
    const char *p = (const char *)file.data, *end = p + file.len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        struct fr_json_val o, meta, len, rev;
        if (fr_json_value(fr_json_ws(p, le), le, &o) && o.type == FR_JSON_OBJECT) {
            if (n == cap) {
                cap *= 2;
                ev = realloc(ev, cap * sizeof *ev);
            }
            struct event *e = &ev[n];
            memset(e, 0, sizeof *e);
            e->wiki = jstr(&o, "wiki");
            e->type = jstr(&o, "type");
            e->title = jstr(&o, "title");
            e->user = jstr(&o, "user");
            e->server = jstr(&o, "server_name");
            e->comment = jstr(&o, "comment");
            e->log_type = jstr(&o, "log_type");
            e->log_action = jstr(&o, "log_action");
            int64_t x;
            if ((e->has_ns = jint(&o, "namespace", &x))) {
                e->ns = (int32_t)x;
            }
            e->has_bot = jbool(&o, "bot", &e->bot);
            e->has_minor = jbool(&o, "minor", &e->minor);
            e->has_patrolled = jbool(&o, "patrolled", &e->patrolled);
            if (fr_json_member(&o, "length", &len) == 1 && len.type == FR_JSON_OBJECT) {
                if ((e->has_len_old = jint(&len, "old", &x))) {
                    e->len_old = (int32_t)x;
                }
                if ((e->has_len_new = jint(&len, "new", &x))) {
                    e->len_new = (int32_t)x;
                }
            }
            if (fr_json_member(&o, "revision", &rev) == 1 && rev.type == FR_JSON_OBJECT) {
                e->has_rev_old = jint(&rev, "old", &e->rev_old);
                e->has_rev_new = jint(&rev, "new", &e->rev_new);
            }
            if (fr_json_member(&o, "meta", &meta) == 1) {
                char *dt = jstr(&meta, "dt");
                if (dt) {
                    fr_time_parse_rfc3339(dt, strlen(dt), &e->dt_us);
                    free(dt);
                }
            }
            if (e->wiki && e->type && e->title && e->server) {
                n++;
            }
        }
        p = le + 1;
    }
    fr_buf_free(&file);
    *out = ev;
    return n;
}

/* ------------------------------------------------------------------ table */

enum {
    C_ID, C_WIKI, C_TYPE, C_NS, C_TITLE, C_USER, C_BOT, C_MINOR, C_PATROLLED, C_LEN_OLD,
    C_LEN_NEW, C_REV_OLD, C_REV_NEW, C_SERVER, C_COMMENT, C_LOG_TYPE, C_LOG_ACTION, C_TIME,
    NCOLS
};

static const struct fr_pq_column silver[NCOLS] = {
    {"meta_id", FR_PQ_STRING, false, 1},      {"wiki", FR_PQ_STRING, false, 2},
    {"type", FR_PQ_STRING, false, 3},         {"namespace", FR_PQ_INT32, true, 4},
    {"title", FR_PQ_STRING, true, 5},         {"user", FR_PQ_STRING, true, 6},
    {"bot", FR_PQ_BOOL, true, 7},             {"minor", FR_PQ_BOOL, true, 8},
    {"patrolled", FR_PQ_BOOL, true, 9},       {"length_old", FR_PQ_INT32, true, 10},
    {"length_new", FR_PQ_INT32, true, 11},    {"revision_old", FR_PQ_INT64, true, 12},
    {"revision_new", FR_PQ_INT64, true, 13},  {"server_name", FR_PQ_STRING, true, 14},
    {"comment", FR_PQ_STRING, true, 15},      {"log_type", FR_PQ_STRING, true, 16},
    {"log_action", FR_PQ_STRING, true, 17},   {"event_time", FR_PQ_TIMESTAMP, false, 18},
};

struct rows {
    size_t n;
    uint8_t *nulls[NCOLS];
    struct fr_pq_str *str[NCOLS];
    int32_t *i32[NCOLS];
    int64_t *i64[NCOLS];
    uint8_t *b[NCOLS];
    struct fr_buf arena; /* string bytes */
    uint64_t logical_bytes;
};

/* Words from recorded titles and comments, to splice into new ones. */
struct words {
    char **w;
    size_t n, cap;
};

static void add_words(struct words *ws, const char *s)
{
    while (s && *s) {
        while (*s == ' ') {
            s++;
        }
        const char *e = s;
        while (*e && *e != ' ') {
            e++;
        }
        if (e > s && e - s < 40) {
            if (ws->n == ws->cap) {
                ws->cap = ws->cap ? ws->cap * 2 : 1024;
                ws->w = realloc(ws->w, ws->cap * sizeof *ws->w);
            }
            ws->w[ws->n++] = strndup(s, (size_t)(e - s));
        }
        s = e;
    }
}

static struct fr_pq_str put(struct rows *t, const char *s, size_t len)
{
    /* Offsets for now; fixed up to pointers once the arena stops growing. */
    size_t off = t->arena.len;
    fr_buf_append(&t->arena, s, len);
    t->logical_bytes += len;
    return (struct fr_pq_str){(const char *)(uintptr_t)off, (uint32_t)len};
}

static void make_rows(struct rows *t, size_t n, const struct event *ev, size_t nev)
{
    memset(t, 0, sizeof *t);
    t->n = n;
    fr_buf_init(&t->arena, (size_t)8 << 30);
    for (int c = 0; c < NCOLS; c++) {
        t->nulls[c] = calloc(n, 1);
        switch (silver[c].type) {
        case FR_PQ_STRING: t->str[c] = calloc(n, sizeof *t->str[c]); break;
        case FR_PQ_INT32: t->i32[c] = calloc(n, sizeof *t->i32[c]); break;
        case FR_PQ_BOOL: t->b[c] = calloc(n, 1); break;
        default: t->i64[c] = calloc(n, sizeof *t->i64[c]); break;
        }
    }
    struct words tw = {0}, cw = {0};
    size_t nusers = 0;
    const char **users = calloc(nev, sizeof *users);
    for (size_t i = 0; i < nev; i++) {
        add_words(&tw, ev[i].title);
        add_words(&cw, ev[i].comment);
        if (ev[i].user) {
            users[nusers++] = ev[i].user;
        }
    }
    int64_t t0 = ev[0].dt_us, rev = 1246090335;
    char buf[4096];
    for (size_t r = 0; r < n; r++) {
        const struct event *e = &ev[rnd() % nev];
        /* meta.id: a random UUID v4. */
        uint64_t a = rnd(), b = rnd();
        int len = snprintf(buf, sizeof buf, "%08x-%04x-4%03x-%04x-%012llx", (unsigned)(a >> 32),
                           (unsigned)(a >> 16) & 0xffff, (unsigned)a & 0xfff,
                           (unsigned)(0x8000 | ((b >> 48) & 0x3fff)),
                           (unsigned long long)(b & 0xffffffffffffull));
        t->str[C_ID][r] = put(t, buf, (size_t)len);
        const struct event *we = rnd() % 10 == 0 ? &ev[rnd() % nev] : e;
        t->str[C_WIKI][r] = put(t, we->wiki, strlen(we->wiki));
        t->str[C_SERVER][r] = put(t, we->server, strlen(we->server));
        t->str[C_TYPE][r] = put(t, e->type, strlen(e->type));
        t->nulls[C_NS][r] = !e->has_ns;
        t->i32[C_NS][r] = e->ns;
        t->logical_bytes += 4 * e->has_ns;
        /* Title: the recorded one, usually varied by spliced words/numbers. */
        double u = rndf();
        if (u < 0.25) {
            len = snprintf(buf, sizeof buf, "%s", e->title);
        } else if (u < 0.7) {
            len = snprintf(buf, sizeof buf, "%s %s (%llu)", e->title, tw.w[rnd() % tw.n],
                           (unsigned long long)(rnd() % 100000));
        } else {
            len = snprintf(buf, sizeof buf, "%s %s %s", tw.w[rnd() % tw.n], tw.w[rnd() % tw.n],
                           tw.w[rnd() % tw.n]);
        }
        t->str[C_TITLE][r] = put(t, buf, (size_t)len);
        /* User: Zipf over recorded users, then a long tail of synthetic ones. */
        size_t rank = (size_t)floor(pow(50001.0, rndf())) - 1;
        if (rank < nusers) {
            t->str[C_USER][r] = put(t, users[rank], strlen(users[rank]));
        } else {
            len = snprintf(buf, sizeof buf, "%s%zu", users[rank % nusers], rank);
            t->str[C_USER][r] = put(t, buf, (size_t)len);
        }
        t->nulls[C_BOT][r] = !e->has_bot;
        t->b[C_BOT][r] = e->bot;
        t->nulls[C_MINOR][r] = !e->has_minor;
        t->b[C_MINOR][r] = e->minor ^ (rnd() % 10 == 0);
        t->nulls[C_PATROLLED][r] = !e->has_patrolled;
        t->b[C_PATROLLED][r] = e->patrolled ^ (rnd() % 8 == 0);
        t->logical_bytes += e->has_bot + e->has_minor + e->has_patrolled;
        int32_t drift = (int32_t)(rnd() % 2001) - 1000;
        t->nulls[C_LEN_OLD][r] = !e->has_len_old;
        t->i32[C_LEN_OLD][r] = e->len_old + drift;
        t->nulls[C_LEN_NEW][r] = !e->has_len_new;
        t->i32[C_LEN_NEW][r] = e->len_new + drift + (int32_t)(rnd() % 801) - 400;
        t->logical_bytes += 4 * (e->has_len_old + e->has_len_new);
        rev += 1 + (int64_t)(rnd() % 5);
        t->nulls[C_REV_NEW][r] = !e->has_rev_new;
        t->i64[C_REV_NEW][r] = rev;
        t->nulls[C_REV_OLD][r] = !e->has_rev_old;
        t->i64[C_REV_OLD][r] = rev - 1 - (int64_t)(rnd() % 5000000);
        t->logical_bytes += 8 * (e->has_rev_new + e->has_rev_old);
        /* Comment: recorded, varied, or assembled from recorded words. */
        u = rndf();
        if (!e->comment || u < 0.08) {
            t->nulls[C_COMMENT][r] = !e->comment;
            t->str[C_COMMENT][r] = put(t, "", 0);
        } else if (u < 0.55) {
            t->str[C_COMMENT][r] = put(t, e->comment, strlen(e->comment));
        } else {
            size_t k = strlen(e->comment) / 3, words = 2 + rnd() % 16;
            while (k > 0 && ((uint8_t)e->comment[k] & 0xc0) == 0x80) {
                k--; /* keep whole characters */
            }
            k = (size_t)snprintf(buf, sizeof buf, "%.*s", (int)k, e->comment);
            for (size_t w = 0; w < words && k < sizeof buf - 64; w++) {
                k += (size_t)snprintf(buf + k, sizeof buf - k, " %s", cw.w[rnd() % cw.n]);
            }
            /* Do not cut a multi-byte character in half. */
            while (k > 0 && ((uint8_t)buf[k - 1] & 0xc0) == 0x80) {
                k--;
            }
            if (k > 0 && (uint8_t)buf[k - 1] >= 0xc0) {
                k--;
            }
            t->str[C_COMMENT][r] = put(t, buf, k);
        }
        t->nulls[C_LOG_TYPE][r] = !e->log_type;
        t->nulls[C_LOG_ACTION][r] = !e->log_action;
        t->str[C_LOG_TYPE][r] = e->log_type ? put(t, e->log_type, strlen(e->log_type)) : put(t, "", 0);
        t->str[C_LOG_ACTION][r] =
            e->log_action ? put(t, e->log_action, strlen(e->log_action)) : put(t, "", 0);
        /* A live stream: ~800 events/s with a few seconds of disorder. */
        t->i64[C_TIME][r] = t0 + (int64_t)r * 1250 + (int64_t)(rnd() % 4000000) - 2000000;
        t->logical_bytes += 8;
    }
    for (int c = 0; c < NCOLS; c++) {
        for (size_t r = 0; t->str[c] && r < n; r++) {
            t->str[c][r].ptr = (const char *)t->arena.data + (uintptr_t)t->str[c][r].ptr;
        }
    }
    for (size_t i = 0; i < tw.n; i++) {
        free(tw.w[i]);
    }
    for (size_t i = 0; i < cw.n; i++) {
        free(cw.w[i]);
    }
    free(tw.w);
    free(cw.w);
    free(users);
}

/* ------------------------------------------------------------------ phases */

static void check(int rc, const char *what)
{
    if (rc < 0) {
        fprintf(stderr, "bench_parquet: %s: %s (%s)\n", what, fr_err_name(rc), fr_pq_errmsg());
        exit(1);
    }
}

static int write_rows_api(struct fr_pq_writer *w, const struct rows *t)
{
    for (size_t r = 0; r < t->n; r++) {
        for (uint32_t c = 0; c < NCOLS; c++) {
            int rc;
            if (t->nulls[c][r]) {
                rc = fr_pq_write_null(w, c);
            } else {
                switch (silver[c].type) {
                case FR_PQ_STRING: rc = fr_pq_write_str(w, c, t->str[c][r].ptr, t->str[c][r].len); break;
                case FR_PQ_INT32: rc = fr_pq_write_int32(w, c, t->i32[c][r]); break;
                case FR_PQ_BOOL: rc = fr_pq_write_bool(w, c, t->b[c][r]); break;
                default: rc = fr_pq_write_int64(w, c, t->i64[c][r]); break;
                }
            }
            if (rc < 0) {
                return rc;
            }
        }
        int rc = fr_pq_row_end(w);
        if (rc < 0) {
            return rc;
        }
    }
    return FR_OK;
}

static int write_rows_batch(struct fr_pq_writer *w, const struct rows *t)
{
    enum { SLICE = 8192 };
    struct fr_pq_vec v[NCOLS];
    for (size_t r0 = 0; r0 < t->n; r0 += SLICE) {
        uint32_t n = (uint32_t)(t->n - r0 < SLICE ? t->n - r0 : SLICE);
        for (uint32_t c = 0; c < NCOLS; c++) {
            v[c] = (struct fr_pq_vec){.column = c, .type = silver[c].type, .nulls = t->nulls[c] + r0};
            switch (silver[c].type) {
            case FR_PQ_STRING: v[c].v.str = t->str[c] + r0; break;
            case FR_PQ_INT32: v[c].v.i32 = t->i32[c] + r0; break;
            case FR_PQ_BOOL: v[c].v.b = t->b[c] + r0; break;
            default: v[c].v.i64 = t->i64[c] + r0; break;
            }
        }
        struct fr_pq_batch b = {.nrows = n, .ncols = NCOLS, .cols = v};
        int rc = fr_pq_write_batch(w, &b);
        if (rc < 0) {
            return rc;
        }
    }
    return FR_OK;
}

static void result(const char *phase, const char *tool, const char *api, unsigned workers,
                   double secs, double cpu, size_t rows, uint64_t bytes, uint64_t file_bytes,
                   long rss0, long hwm)
{
    printf("result {\"phase\":\"%s\",\"tool\":\"%s\",\"api\":\"%s\",\"workers\":%u,"
           "\"seconds\":%.4f,\"cpu_seconds\":%.4f,"
           "\"rows\":%zu,\"rows_per_s\":%.0f,\"mb_per_s\":%.1f,\"file_bytes\":%llu,"
           "\"peak_rss_mb\":%.1f,\"rss_growth_mb\":%.1f}\n",
           phase, tool, api, workers, secs, cpu, rows, (double)rows / secs, (double)bytes / 1e6 / secs,
           (unsigned long long)file_bytes, (double)hwm / 1024, (double)(hwm - rss0) / 1024);
    fflush(stdout);
}

static void write_ndjson(const struct rows *t, const char *path)
{
    FILE *f = fopen(path, "w");
    struct fr_buf b;
    fr_buf_init(&b, 1 << 20);
    for (size_t r = 0; r < t->n; r++) {
        fr_buf_reset(&b);
        fr_buf_putc(&b, '{');
        for (int c = 0; c < NCOLS; c++) {
            fr_buf_printf(&b, "%s\"%s\":", c ? "," : "", silver[c].name);
            if (t->nulls[c][r]) {
                fr_buf_puts(&b, "null");
                continue;
            }
            switch (silver[c].type) {
            case FR_PQ_STRING: fr_buf_json_str(&b, t->str[c][r].ptr, t->str[c][r].len); break;
            case FR_PQ_INT32: fr_buf_printf(&b, "%d", t->i32[c][r]); break;
            case FR_PQ_BOOL: fr_buf_puts(&b, t->b[c][r] ? "true" : "false"); break;
            default: fr_buf_printf(&b, "%lld", (long long)t->i64[c][r]); break;
            }
        }
        fr_buf_puts(&b, "}\n");
        fwrite(b.data, 1, b.len, f);
    }
    fr_buf_free(&b);
    fclose(f);
}

/* One write phase and one read phase; prints a result line for each. */
static int bench_once(const struct rows *t, const char *out, const struct fr_pq_opts *o,
                      const char *api)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/freshet.parquet", out);
    struct fr_pq_schema schema = {silver, NCOLS};
    struct fr_pq_out po;
    struct fr_pq_writer *w;
    long rss0 = status_kb("VmRSS:");
    reset_peak();
    double c0 = cpu_seconds();
    int64_t t0 = fr_mono_ns();
    check(fr_pq_out_file(path, &po), "out_file");
    check(fr_pq_writer_open(&schema, o, &po, &w), "writer_open");
    check(!strcmp(api, "batch") ? write_rows_batch(w, t) : write_rows_api(w, t), "write");
    struct fr_pq_file_stats st;
    check(fr_pq_writer_close(w, &st), "close");
    fr_pq_writer_free(w);
    double secs = (double)(fr_mono_ns() - t0) / 1e9;
    double cpu = cpu_seconds() - c0;
    long hwm = status_kb("VmHWM:");
    result("write", "freshet", api, o->compress_workers, secs, cpu, t->n, t->logical_bytes, st.file_bytes, rss0, hwm);
    fprintf(stderr, "freshet wrote %s: %u row groups, %.1f MB\n", path, st.nrow_groups,
            (double)st.file_bytes / 1e6);
    fr_pq_file_stats_free(&st);

    /* Read every value back. */
    rss0 = status_kb("VmRSS:");
    reset_peak();
    c0 = cpu_seconds();
    t0 = fr_mono_ns();
    struct fr_pq_reader *r;
    check(fr_pq_reader_open_file(path, NULL, &r), "reader_open");
    struct fr_pq_scan *s;
    check(fr_pq_scan_open(r, NULL, &s), "scan_open");
    const struct fr_pq_batch *b;
    uint64_t sum = 0, seen = 0;
    int rc;
    while ((rc = fr_pq_scan_next(s, &b)) == FR_OK) {
        for (uint32_t c = 0; c < b->ncols; c++) {
            const struct fr_pq_vec *v = &b->cols[c];
            for (uint32_t i = 0; i < b->nrows; i++) {
                if (v->nulls[i]) {
                    continue;
                }
                switch (v->type) {
                case FR_PQ_STRING:
                    sum += v->v.str[i].len + (v->v.str[i].len ? (uint8_t)v->v.str[i].ptr[0] : 0);
                    break;
                case FR_PQ_INT32: sum += (uint32_t)v->v.i32[i]; break;
                case FR_PQ_BOOL: sum += v->v.b[i]; break;
                default: sum += (uint64_t)v->v.i64[i]; break;
                }
            }
        }
        seen += b->nrows;
    }
    check(rc == FR_EEOF ? FR_OK : rc, "scan");
    fr_pq_scan_free(s);
    fr_pq_reader_free(r);
    secs = (double)(fr_mono_ns() - t0) / 1e9;
    cpu = cpu_seconds() - c0;
    hwm = status_kb("VmHWM:");
    if (seen != t->n) {
        fprintf(stderr, "bench_parquet: read %llu rows, wrote %zu\n", (unsigned long long)seen,
                t->n);
        return -1;
    }
    result("read", "freshet", api, o->compress_workers, secs, cpu, t->n, t->logical_bytes, 0, rss0, hwm);
    fprintf(stderr, "read checksum %llu\n", (unsigned long long)sum);
    return 0;
}

int main(int argc, char **argv)
{
    const char *sample = NULL, *out = ".", *api = "row";
    size_t nrows = 1000000;
    struct fr_pq_opts o;
    fr_pq_opts_default(&o);
    bool ndjson = false;
    int repeat = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--sample")) { sample = v; i++; }
        else if (!strcmp(a, "--rows")) { nrows = strtoull(v, NULL, 10); i++; }
        else if (!strcmp(a, "--out")) { out = v; i++; }
        else if (!strcmp(a, "--level")) { o.zstd_level = atoi(v); i++; }
        else if (!strcmp(a, "--seed")) { rng_state = strtoull(v, NULL, 10) | 1; i++; }
        else if (!strcmp(a, "--api")) { api = v; i++; }
        else if (!strcmp(a, "--ndjson")) { ndjson = true; }
        else if (!strcmp(a, "--repeat")) { repeat = atoi(v) > 0 ? atoi(v) : 1; i++; }
        else if (!strcmp(a, "--workers")) { o.compress_workers = (unsigned)atoi(v); i++; }
        else if (!strcmp(a, "--codec")) {
            o.codec = !strcmp(v, "snappy") ? FR_PQ_SNAPPY : !strcmp(v, "none") ? FR_PQ_UNCOMPRESSED : FR_PQ_ZSTD;
            i++;
        } else {
            fprintf(stderr, "usage: bench_parquet --sample FILE [--rows N] [--out DIR] "
                            "[--codec zstd|snappy|none] [--level L] [--api row|batch] "
                            "[--workers 0|1] [--seed S] [--ndjson] [--repeat K]\n");
            return 2;
        }
    }
    if (!sample) {
        fprintf(stderr, "bench_parquet: --sample FILE (recorded recentchange events) is required\n");
        return 2;
    }
    struct event *ev;
    size_t nev = load_events(sample, &ev);
    if (nev == 0) {
        fprintf(stderr, "bench_parquet: no usable events in %s\n", sample);
        return 1;
    }
    struct rows t;
    int64_t g0 = fr_mono_ns();
    make_rows(&t, nrows, ev, nev);
    fprintf(stderr, "generated %zu rows from %zu recorded events in %.2f s: %.1f MB of values\n",
            nrows, nev, (double)(fr_mono_ns() - g0) / 1e9, (double)t.logical_bytes / 1e6);
    char path[4096];
    if (ndjson) {
        snprintf(path, sizeof path, "%s/rows.ndjson", out);
        write_ndjson(&t, path);
    }

    for (int rep = 0; rep < repeat; rep++) {
        if (bench_once(&t, out, &o, api) < 0) {
            return 1;
        }
    }
    printf("logical_bytes %llu\n", (unsigned long long)t.logical_bytes);
    return 0;
}
