/*
 * view.c — the processor's provisional view of its open windows as JSON
 * (docs/API.md, /api/v1/live "view"), written to <data>/stats/view.json
 * after every epoch and read by `freshet serve`.
 *
 * The file is derived data, rewritten every epoch: it is replaced
 * atomically (write a temporary file, rename) so a reader sees the old or
 * the new document whole, but it is not fsynced (after a crash the next
 * epoch rewrites it). Its size is bounded by fr_proc_view's own caps
 * (512 groups, 20 top pages, 64 KiB of names), about 200 KiB at most.
 * Called on the processor's thread only.
 */
#include "stats/stats.h"
#include "stats/stats_int.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/err.h"
#include "core/fsutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VIEW_JSON_CAP ((size_t)2 << 20)

struct view_wiki {
    struct fr_proc_str wiki;
    struct fr_win_counts sum;
};

static int view_str_cmp(struct fr_proc_str a, struct fr_proc_str b)
{
    size_t n = a.len < b.len ? a.len : b.len;
    int c = memcmp(a.s, b.s, n);
    return c ? c : (a.len > b.len) - (a.len < b.len);
}

static int view_cmp_name(const void *pa, const void *pb)
{
    const struct view_wiki *a = pa, *b = pb;
    return view_str_cmp(a->wiki, b->wiki);
}

static int view_cmp_events(const void *pa, const void *pb)
{
    const struct view_wiki *a = pa, *b = pb;
    if (a->sum.events != b->sum.events) {
        return a->sum.events > b->sum.events ? -1 : 1;
    }
    return view_str_cmp(a->wiki, b->wiki);
}

static int view_put_str(struct fr_buf *out, struct fr_proc_str s)
{
    return fr_buf_json_str(out, s.s ? s.s : "", s.len);
}

static int view_put_ms(struct fr_buf *out, const char *key, int64_t us)
{
    if (us == FR_PROC_WM_NONE) {
        return fr_buf_printf(out, "\"%s\":null", key);
    }
    return fr_buf_printf(out, "\"%s\":%lld", key, (long long)(us / 1000));
}

static int view_put_counts(struct fr_buf *out, const struct fr_win_counts *c)
{
    return fr_buf_printf(out,
                         "\"events\":%llu,\"edits\":%llu,\"new_pages\":%llu,\"bot_events\":%llu,"
                         "\"bytes_added\":%llu,\"bytes_removed\":%llu",
                         (unsigned long long)c->events, (unsigned long long)c->edits,
                         (unsigned long long)c->new_pages, (unsigned long long)c->bot_events,
                         (unsigned long long)c->bytes_added, (unsigned long long)c->bytes_removed);
}

static void view_add(struct fr_win_counts *sum, const struct fr_win_counts *c)
{
    sum->events += c->events;
    sum->edits += c->edits;
    sum->new_pages += c->new_pages;
    sum->bot_events += c->bot_events;
    sum->bytes_added += c->bytes_added;
    sum->bytes_removed += c->bytes_removed;
}

static int view_wikis(const struct fr_proc_view *view, struct fr_buf *out)
{
    size_t n = view->n_groups;
    if (n == 0) {
        return fr_buf_puts(out, "\"wikis\":[]");
    }
    struct view_wiki *w = calloc(n, sizeof *w);
    if (!w) {
        return FR_ENOMEM;
    }
    int64_t oldest = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        w[i].wiki = view->groups[i].wiki;
        w[i].sum = view->groups[i].counts;
        if (view->groups[i].window_start_us < oldest) {
            oldest = view->groups[i].window_start_us;
        }
    }
    qsort(w, n, sizeof *w, view_cmp_name);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k > 0 && view_str_cmp(w[k - 1].wiki, w[i].wiki) == 0) {
            view_add(&w[k - 1].sum, &w[i].sum);
        } else {
            w[k++] = w[i];
        }
    }
    qsort(w, k, sizeof *w, view_cmp_events);
    double span_min = 0;
    if (view->max_event_us != FR_PROC_WM_NONE && oldest != INT64_MAX) {
        int64_t span_us = view->max_event_us - oldest;
        span_min = (double)(span_us < 1000000 ? 1000000 : span_us) / 60e6;
    }
    int rc = fr_buf_puts(out, "\"wikis\":[");
    for (size_t i = 0; rc == FR_OK && i < k; i++) {
        rc = fr_buf_printf(out, "%s{\"wiki\":", i ? "," : "");
        if (rc == FR_OK) {
            rc = view_put_str(out, w[i].wiki);
        }
        if (rc == FR_OK) {
            rc = fr_buf_putc(out, ',');
        }
        if (rc == FR_OK) {
            rc = view_put_counts(out, &w[i].sum);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, ",\"events_per_minute\":");
        }
        if (rc == FR_OK) {
            double rate = (double)w[i].sum.events / span_min;
            rc = span_min > 0 ? fr_stats_put_double(out, round(rate * 10.0) / 10.0, "null")
                              : fr_buf_puts(out, "null");
        }
        if (rc == FR_OK) {
            rc = fr_buf_putc(out, '}');
        }
    }
    free(w);
    return rc == FR_OK ? fr_buf_putc(out, ']') : rc;
}

int fr_stats_view_json(const struct fr_proc_view *view, int64_t epoch, int64_t now_ms,
                       struct fr_buf *out)
{
    int rc = fr_buf_printf(out, "{\"updated_ms\":%lld,\"epoch\":%lld,", (long long)now_ms,
                           (long long)epoch);
    if (rc == FR_OK) {
        rc = view_put_ms(out, "watermark_ms", view->watermark_us);
    }
    if (rc == FR_OK) {
        rc = fr_buf_putc(out, ',');
    }
    if (rc == FR_OK) {
        rc = view_put_ms(out, "max_event_ms", view->max_event_us);
    }
    if (rc == FR_OK) {
        rc = fr_buf_printf(out, ",\"truncated\":%s,", view->truncated ? "true" : "false");
    }
    if (rc == FR_OK) {
        rc = view_wikis(view, out);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, ",\"minutes\":[");
    }
    for (size_t i = 0; rc == FR_OK && i < view->n_groups; i++) {
        const struct fr_win_row *g = &view->groups[i];
        rc = fr_buf_printf(out, "%s{\"start_ms\":%lld,\"end_ms\":%lld,\"wiki\":", i ? "," : "",
                           (long long)(g->window_start_us / 1000),
                           (long long)(g->window_end_us / 1000));
        if (rc == FR_OK) {
            rc = view_put_str(out, g->wiki);
        }
        if (rc == FR_OK) {
            rc = fr_buf_putc(out, ',');
        }
        if (rc == FR_OK) {
            rc = view_put_counts(out, &g->counts);
        }
        if (rc == FR_OK) {
            rc = fr_buf_printf(out, ",\"distinct_users\":%llu}",
                               (unsigned long long)g->counts.distinct_users);
        }
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, "],\"top\":");
    }
    if (rc == FR_OK && view->n_top == 0) {
        rc = fr_buf_puts(out, "null");
    } else if (rc == FR_OK) {
        rc = fr_buf_printf(out, "{\"start_ms\":%lld,\"end_ms\":%lld,\"pages\":[",
                           (long long)(view->top_start_us / 1000),
                           (long long)(view->top_end_us / 1000));
        for (size_t i = 0; rc == FR_OK && i < view->n_top; i++) {
            const struct fr_top_row *t = &view->top[i];
            rc = fr_buf_printf(out, "%s{\"rank\":%u,\"wiki\":", i ? "," : "", t->rank);
            if (rc == FR_OK) {
                rc = view_put_str(out, t->wiki);
            }
            if (rc == FR_OK) {
                rc = fr_buf_puts(out, ",\"title\":");
            }
            if (rc == FR_OK) {
                rc = view_put_str(out, t->title);
            }
            if (rc == FR_OK) {
                rc = fr_buf_printf(out, ",\"count\":%llu}", (unsigned long long)t->count);
            }
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, "]}");
        }
    }
    return rc == FR_OK ? fr_buf_putc(out, '}') : rc;
}

/* Write view to <data>/stats/view.json when the handle is the one that
 * does (fr_stats_writes_view_int). */
static int view_write(struct fr_stats *st, const struct fr_proc_view *view, int64_t epoch)
{
    if (!fr_stats_writes_view_int(st)) {
        return FR_OK;
    }
    struct fr_buf buf;
    fr_buf_init(&buf, VIEW_JSON_CAP);
    char path[4200];
    snprintf(path, sizeof path, "%s/stats/view.json", fr_stats_data_dir_int(st));
    int rc = fr_stats_view_json(view, epoch, fr_wall_ms(), &buf);
    if (rc == FR_OK) {
        rc = fr_buf_putc(&buf, '\n');
    }
    if (rc == FR_OK) {
        rc = fr_fs_write_replace(path, buf.data, buf.len); /* a view: no fsync */
    }
    fr_buf_free(&buf);
    return rc;
}

int fr_stats_view_publish(struct fr_stats *st, struct fr_proc *proc, int64_t epoch,
                          int64_t *max_event_us)
{
    if (max_event_us) {
        *max_event_us = FR_PROC_WM_NONE;
    }
    struct fr_proc_view *view = st ? fr_stats_view_buffer_int(st) : NULL;
    if (!view) {
        return st ? FR_ENOMEM : FR_OK;
    }
    fr_proc_view(proc, view);
    if (max_event_us) {
        *max_event_us = view->max_event_us;
    }
    return view_write(st, view, epoch);
}

int fr_stats_view_publish_windows(struct fr_stats *st, const struct fr_win *win, struct fr_top *top,
                                  int64_t watermark_us, int64_t max_event_us, int64_t epoch)
{
    struct fr_proc_view *view = st ? fr_stats_view_buffer_int(st) : NULL;
    if (!view) {
        return st ? FR_ENOMEM : FR_OK;
    }
    view->watermark_us = watermark_us;
    view->max_event_us = max_event_us;
    view->truncated = 0;
    view->text_len = 0;
    fr_win_view(win, view);
    fr_win_top_view(top, view);
    return view_write(st, view, epoch);
}
