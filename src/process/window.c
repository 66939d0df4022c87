/*
 * window.c — gold_edits_per_minute: per 1-minute event-time tumbling
 * window [m, m + 1 min) and wiki, over silver rows:
 *
 *   events          every row
 *   edits           type edit
 *   new_pages       type new
 *   bot_events      bot present and true
 *   bytes_added     on edit and new rows with length.new present:
 *   bytes_removed   delta = length.new - (length.old, or 0 when absent);
 *                   delta > 0 adds delta to bytes_added, delta < 0 adds
 *                   -delta to bytes_removed (both saturate at UINT64_MAX)
 *   distinct_users  distinct `user` strings (bytewise, after unescaping);
 *                   rows without a user do not count
 *
 * A window is emitted once, when the watermark reaches its end (end <=
 * watermark), as one row per wiki in wiki byte order, windows in start
 * order; then its memory is freed. A silver row is on time (event time >=
 * watermark), so its window is always still open; fr_win_add counts and
 * ignores a row whose window was emitted (dropped_closed) for callers that
 * use the operator alone.
 *
 * Layout: a sorted array of open minutes; each minute has an array of
 * groups (one per wiki) and an open-addressing index on the wiki's hash;
 * each group keeps its users in an open-addressing set of (hash, offset,
 * length) over a name arena. Caps (logical, so they decide the same way
 * after save/load): groups (a row whose group cannot be created is not
 * counted: dropped_groups), users and name bytes (a name that cannot be
 * kept is counted in dropped_users and marks the group users_exact = 0:
 * its distinct_users is then a lower bound). One thread at a time.
 *
 * Saved state (envelope "FRWN", version 1; body, little-endian):
 *
 *   size  field
 *   8     closed_us: the largest watermark applied (INT64_MIN: none)
 *   8 x 4 rows, dropped_groups, dropped_users, dropped_closed
 *   4     m open minutes, ascending start
 *   m x   { 8 start_us, 4 g groups, ascending wiki bytes
 *           g x { 4+n wiki, 8 x 6 counts (events, edits, new_pages,
 *                 bot_events, bytes_added, bytes_removed), 1 users_exact,
 *                 4 u users, u x (4+n name), ascending bytes } }
 */
#include "process/process_int.h"

#include "core/err.h"

#include <stdlib.h>

#define WIN_MAGIC "FRWN"
#define WIN_VERSION 1
#define WIN_NAME_MAX (1u << 20) /* a user name is at most a record */

struct win_user {
    uint64_t hash;
    uint32_t off, len;
};

struct win_group {
    uint64_t wiki_hash;
    uint32_t wiki_len;
    char wiki[FR_PROC_WIKI_MAX + 1];
    struct fr_win_counts c; /* distinct_users is n_users */
    uint8_t users_exact;
    struct win_user *users; /* open addressing, len 0 = empty */
    uint32_t users_mask;    /* slots - 1, or 0 with users == NULL */
    uint32_t n_users;
    char *names;
    size_t names_len, names_alloc;
};

struct win_minute {
    int64_t start;
    struct win_group **groups;
    uint32_t n, alloc;
    uint32_t *index; /* group + 1; 0 is empty */
    uint32_t index_mask;
};

struct fr_win {
    struct fr_win_opts opts;
    struct win_minute *minutes; /* ascending start */
    uint32_t n_minutes, alloc;
    int64_t closed_us;
    struct fr_win_stats st;
};

/* ------------------------------------------------------------------------ */
/* Groups and minutes                                                         */
/* ------------------------------------------------------------------------ */

static void win_group_free(struct fr_win *win, struct win_group *g)
{
    if (!g) {
        return;
    }
    win->st.bytes -= sizeof *g + (g->users ? ((uint64_t)g->users_mask + 1) * sizeof *g->users : 0) +
                     g->names_alloc;
    free(g->users);
    free(g->names);
    free(g);
}

static void win_minute_free(struct fr_win *win, struct win_minute *m)
{
    for (uint32_t i = 0; i < m->n; i++) {
        win->st.groups--;
        win->st.users -= m->groups[i]->n_users;
        win->st.text_bytes -= m->groups[i]->wiki_len + m->groups[i]->names_len;
        win_group_free(win, m->groups[i]);
    }
    win->st.bytes -= (uint64_t)m->alloc * sizeof *m->groups +
                     (m->index ? ((uint64_t)m->index_mask + 1) * sizeof *m->index : 0);
    free(m->groups);
    free(m->index);
    memset(m, 0, sizeof *m);
}

/* The minute starting at start, created in order when absent. */
static struct win_minute *win_minute_get(struct fr_win *win, int64_t start, int create)
{
    uint32_t i = win->n_minutes;
    while (i > 0 && win->minutes[i - 1].start > start) {
        i--;
    }
    if (i > 0 && win->minutes[i - 1].start == start) {
        return &win->minutes[i - 1];
    }
    if (!create) {
        return NULL;
    }
    if (win->n_minutes == win->alloc) {
        uint32_t n = win->alloc ? win->alloc * 2 : 8;
        struct win_minute *m = realloc(win->minutes, (size_t)n * sizeof *m);
        if (!m) {
            return NULL;
        }
        win->st.bytes += (uint64_t)(n - win->alloc) * sizeof *m;
        win->minutes = m;
        win->alloc = n;
    }
    memmove(&win->minutes[i + 1], &win->minutes[i],
            (size_t)(win->n_minutes - i) * sizeof *win->minutes);
    win->n_minutes++;
    struct win_minute *m = &win->minutes[i];
    memset(m, 0, sizeof *m);
    m->start = start;
    return m;
}

static int win_index_grow(struct fr_win *win, struct win_minute *m)
{
    uint32_t nslots = m->index ? (m->index_mask + 1) * 2 : 16;
    uint32_t *index = calloc(nslots, sizeof *index);
    if (!index) {
        return FR_ENOMEM;
    }
    for (uint32_t k = 0; k < m->n; k++) {
        uint32_t i = (uint32_t)m->groups[k]->wiki_hash & (nslots - 1);
        while (index[i]) {
            i = (i + 1) & (nslots - 1);
        }
        index[i] = k + 1;
    }
    win->st.bytes += (uint64_t)nslots * sizeof *index -
                     (m->index ? ((uint64_t)m->index_mask + 1) * sizeof *m->index : 0);
    free(m->index);
    m->index = index;
    m->index_mask = nslots - 1;
    return FR_OK;
}

/* The group of wiki in m; *rc = FR_ENOMEM, or 1 when the cap refused it. */
static struct win_group *win_group_get(struct fr_win *win, struct win_minute *m, const char *wiki,
                                       uint32_t len, int *rc)
{
    uint64_t h = fr_proc_hash(wiki, len, 0x77);
    *rc = FR_OK;
    if (m->index) {
        for (uint32_t i = (uint32_t)h & m->index_mask; m->index[i]; i = (i + 1) & m->index_mask) {
            struct win_group *g = m->groups[m->index[i] - 1];
            if (g->wiki_hash == h && g->wiki_len == len && memcmp(g->wiki, wiki, len) == 0) {
                return g;
            }
        }
    }
    if (win->st.groups >= win->opts.max_groups ||
        win->st.text_bytes + len > win->opts.max_text_bytes) {
        *rc = 1;
        return NULL;
    }
    if (!m->index || (uint64_t)(m->n + 1) * 2 > (uint64_t)m->index_mask + 1) {
        if ((*rc = win_index_grow(win, m)) < 0) {
            return NULL;
        }
    }
    if (m->n == m->alloc) {
        uint32_t n = m->alloc ? m->alloc * 2 : 8;
        struct win_group **groups = realloc(m->groups, (size_t)n * sizeof *groups);
        if (!groups) {
            *rc = FR_ENOMEM;
            return NULL;
        }
        win->st.bytes += (uint64_t)(n - m->alloc) * sizeof *groups;
        m->groups = groups;
        m->alloc = n;
    }
    struct win_group *g = calloc(1, sizeof *g);
    if (!g) {
        *rc = FR_ENOMEM;
        return NULL;
    }
    win->st.bytes += sizeof *g;
    g->wiki_hash = h;
    g->wiki_len = len;
    memcpy(g->wiki, wiki, len);
    g->users_exact = 1;
    uint32_t i = (uint32_t)h & m->index_mask;
    while (m->index[i]) {
        i = (i + 1) & m->index_mask;
    }
    m->groups[m->n] = g;
    m->index[i] = ++m->n;
    win->st.groups++;
    win->st.text_bytes += len;
    return g;
}

static int win_users_grow(struct fr_win *win, struct win_group *g)
{
    uint32_t nslots = g->users ? (g->users_mask + 1) * 2 : 8;
    struct win_user *users = calloc(nslots, sizeof *users);
    if (!users) {
        return FR_ENOMEM;
    }
    if (g->users) {
        for (uint32_t k = 0; k <= g->users_mask; k++) {
            if (g->users[k].len) {
                uint32_t i = (uint32_t)g->users[k].hash & (nslots - 1);
                while (users[i].len) {
                    i = (i + 1) & (nslots - 1);
                }
                users[i] = g->users[k];
            }
        }
        win->st.bytes -= ((uint64_t)g->users_mask + 1) * sizeof *users;
    }
    win->st.bytes += (uint64_t)nslots * sizeof *users;
    free(g->users);
    g->users = users;
    g->users_mask = nslots - 1;
    return FR_OK;
}

/* Add a user name to g's set. Empty names are stored with length + 1 in
 * the slot (len 0 marks an empty slot), so "" is a user like any other. */
static int win_user_add(struct fr_win *win, struct win_group *g, const char *name, uint32_t len)
{
    uint64_t h = fr_proc_hash(name, len, 0x55);
    if (g->users) {
        for (uint32_t i = (uint32_t)h & g->users_mask; g->users[i].len;
             i = (i + 1) & g->users_mask) {
            const struct win_user *u = &g->users[i];
            if (u->hash == h && u->len - 1 == len && memcmp(g->names + u->off, name, len) == 0) {
                return FR_OK;
            }
        }
    }
    if (win->st.users >= win->opts.max_users || len >= WIN_NAME_MAX ||
        win->st.text_bytes + len > win->opts.max_text_bytes) {
        g->users_exact = 0;
        win->st.dropped_users++;
        return FR_OK;
    }
    if (!g->users || (uint64_t)(g->n_users + 1) * 2 > (uint64_t)g->users_mask + 1) {
        int rc = win_users_grow(win, g);
        if (rc < 0) {
            return rc;
        }
    }
    /* Allocate even for "" so names + off is never NULL arithmetic. */
    if (!g->names || g->names_len + len > g->names_alloc) {
        size_t n = g->names_alloc ? g->names_alloc : 64;
        while (n < g->names_len + len) {
            n *= 2;
        }
        char *names = realloc(g->names, n);
        if (!names) {
            return FR_ENOMEM;
        }
        win->st.bytes += n - g->names_alloc;
        g->names = names;
        g->names_alloc = n;
    }
    if (len) {
        memcpy(g->names + g->names_len, name, len);
    }
    uint32_t i = (uint32_t)h & g->users_mask;
    while (g->users[i].len) {
        i = (i + 1) & g->users_mask;
    }
    g->users[i] = (struct win_user){h, (uint32_t)g->names_len, len + 1};
    g->names_len += len;
    g->n_users++;
    win->st.users++;
    win->st.text_bytes += len;
    return FR_OK;
}

/* ------------------------------------------------------------------------ */
/* Public API                                                                 */
/* ------------------------------------------------------------------------ */

int fr_win_create(const struct fr_win_opts *opts, struct fr_win **out)
{
    *out = NULL;
    if (!opts || opts->max_groups < 1 || opts->max_groups > UINT32_MAX / 2 ||
        opts->max_users > UINT32_MAX / 2 || opts->max_text_bytes < FR_PROC_WIKI_MAX) {
        return FR_EINVAL;
    }
    struct fr_win *win = calloc(1, sizeof *win);
    if (!win) {
        return FR_ENOMEM;
    }
    win->opts = *opts;
    win->closed_us = INT64_MIN;
    win->st.bytes = sizeof *win;
    *out = win;
    return FR_OK;
}

void fr_win_destroy(struct fr_win *win)
{
    if (!win) {
        return;
    }
    for (uint32_t i = 0; i < win->n_minutes; i++) {
        win_minute_free(win, &win->minutes[i]);
    }
    free(win->minutes);
    free(win);
}

int fr_win_add(struct fr_win *win, const struct fr_row *row)
{
    if (!FR_PROC_TIME_OK(row->event_us) || row->wiki.len > FR_PROC_WIKI_MAX) {
        return FR_EINVAL;
    }
    int64_t start = fr_proc_floor(row->event_us, FR_PROC_MINUTE_US);
    if (win->closed_us != INT64_MIN && start + FR_PROC_MINUTE_US <= win->closed_us) {
        win->st.dropped_closed++;
        return FR_OK;
    }
    struct win_minute *m = win_minute_get(win, start, 1);
    if (!m) {
        return FR_ENOMEM;
    }
    int rc;
    struct win_group *g = win_group_get(win, m, row->wiki.s, row->wiki.len, &rc);
    if (!g) {
        if (m->n == 0) {
            /* Do not leave an empty minute behind. */
            win_minute_free(win, m);
            uint32_t i = (uint32_t)(m - win->minutes);
            memmove(m, m + 1, (size_t)(win->n_minutes - i - 1) * sizeof *m);
            win->n_minutes--;
        }
        if (rc == 1) {
            win->st.dropped_groups++;
            return FR_OK;
        }
        return rc;
    }
    g->c.events++;
    g->c.edits += row->type == FR_TYPE_EDIT;
    g->c.new_pages += row->type == FR_TYPE_NEW;
    g->c.bot_events += (row->has & FR_ROW_BOT) && row->bot;
    if ((row->type == FR_TYPE_EDIT || row->type == FR_TYPE_NEW) && (row->has & FR_ROW_LENGTH_NEW)) {
        int64_t old = (row->has & FR_ROW_LENGTH_OLD) ? row->length_old : 0;
        int64_t delta;
        if (__builtin_sub_overflow(row->length_new, old, &delta)) {
            delta = row->length_new > old ? INT64_MAX : INT64_MIN;
        }
        if (delta > 0) {
            g->c.bytes_added = fr_proc_sat_add(g->c.bytes_added, (uint64_t)delta);
        } else if (delta < 0) {
            g->c.bytes_removed = fr_proc_sat_add(g->c.bytes_removed, 0 - (uint64_t)delta);
        }
    }
    if (row->has & FR_ROW_USER) {
        return win_user_add(win, g, row->user.s, row->user.len);
    }
    return FR_OK;
}

static int win_cmp_group(const void *x, const void *y)
{
    const struct win_group *a = *(const struct win_group *const *)x;
    const struct win_group *b = *(const struct win_group *const *)y;
    return fr_proc_strcmp(a->wiki, a->wiki_len, b->wiki, b->wiki_len);
}

static void win_fill_row(const struct win_minute *m, const struct win_group *g,
                         struct fr_win_row *row)
{
    row->window_start_us = m->start;
    row->window_end_us = m->start + FR_PROC_MINUTE_US;
    row->wiki.s = g->wiki;
    row->wiki.len = g->wiki_len;
    row->counts = g->c;
    row->counts.distinct_users = g->n_users;
    row->users_exact = g->users_exact;
}

int fr_win_advance(struct fr_win *win, int64_t watermark_us, fr_win_emit_fn emit, void *arg)
{
    if (watermark_us > win->closed_us) {
        win->closed_us = watermark_us;
    }
    while (win->n_minutes && win->minutes[0].start + FR_PROC_MINUTE_US <= watermark_us) {
        struct win_minute *m = &win->minutes[0];
        qsort(m->groups, m->n, sizeof *m->groups, win_cmp_group);
        for (uint32_t i = 0; i < m->n; i++) {
            struct fr_win_row row;
            win_fill_row(m, m->groups[i], &row);
            win->st.rows++;
            int rc = emit ? emit(arg, &row) : 0;
            if (rc != 0) {
                return rc;
            }
        }
        win_minute_free(win, m);
        memmove(&win->minutes[0], &win->minutes[1], (size_t)(win->n_minutes - 1) * sizeof *m);
        win->n_minutes--;
    }
    return FR_OK;
}

void fr_win_stats(const struct fr_win *win, struct fr_win_stats *stats)
{
    *stats = win->st;
}

void fr_win_view(const struct fr_win *win, struct fr_proc_view *view)
{
    view->n_groups = 0;
    for (uint32_t k = win->n_minutes; k-- > 0;) {
        const struct win_minute *m = &win->minutes[k];
        /* Sort a copy: the minute's index holds positions in groups[]. */
        struct win_group **sorted = malloc((size_t)m->n * sizeof *sorted + 1);
        if (!sorted) {
            view->truncated = 1;
            return;
        }
        memcpy(sorted, m->groups, (size_t)m->n * sizeof *sorted);
        qsort(sorted, m->n, sizeof *sorted, win_cmp_group);
        for (uint32_t i = 0; i < m->n; i++) {
            if (view->n_groups == FR_VIEW_MAX_GROUPS) {
                view->truncated = 1;
                break;
            }
            struct fr_win_row *row = &view->groups[view->n_groups];
            win_fill_row(m, sorted[i], row);
            row->wiki.s = fr_proc_view_text(view, sorted[i]->wiki, sorted[i]->wiki_len);
            if (!row->wiki.s) {
                view->truncated = 1;
                break;
            }
            view->n_groups++;
        }
        free(sorted);
        if (view->truncated) {
            return;
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Save / load                                                                */
/* ------------------------------------------------------------------------ */

struct win_name {
    const char *s;
    uint32_t len;
};

static int win_cmp_name(const void *x, const void *y)
{
    const struct win_name *a = x, *b = y;
    return fr_proc_strcmp(a->s, a->len, b->s, b->len);
}

int fr_win_save(const struct fr_win *win, struct fr_buf *out)
{
    struct fr_proc_out o;
    fr_proc_out_buf(&o, out);
    return fr_win_save_out(win, &o);
}

int fr_win_save_out(const struct fr_win *win, struct fr_proc_out *out)
{
    struct fr_proc_enc enc;
    struct win_group **sorted = NULL;
    struct win_name *names = NULL;
    fr_proc_enc_begin_out(&enc, out, WIN_MAGIC, WIN_VERSION);
    fr_proc_enc_i64(&enc, win->closed_us);
    fr_proc_enc_u64(&enc, win->st.rows);
    fr_proc_enc_u64(&enc, win->st.dropped_groups);
    fr_proc_enc_u64(&enc, win->st.dropped_users);
    fr_proc_enc_u64(&enc, win->st.dropped_closed);
    fr_proc_enc_u32(&enc, win->n_minutes);
    for (uint32_t k = 0; k < win->n_minutes && enc.err == FR_OK; k++) {
        const struct win_minute *m = &win->minutes[k];
        free(sorted);
        sorted = malloc((size_t)m->n * sizeof *sorted + 1);
        if (!sorted) {
            enc.err = FR_ENOMEM;
            break;
        }
        memcpy(sorted, m->groups, (size_t)m->n * sizeof *sorted);
        qsort(sorted, m->n, sizeof *sorted, win_cmp_group);
        fr_proc_enc_i64(&enc, m->start);
        fr_proc_enc_u32(&enc, m->n);
        for (uint32_t i = 0; i < m->n && enc.err == FR_OK; i++) {
            const struct win_group *g = sorted[i];
            fr_proc_enc_str(&enc, g->wiki, g->wiki_len);
            fr_proc_enc_u64(&enc, g->c.events);
            fr_proc_enc_u64(&enc, g->c.edits);
            fr_proc_enc_u64(&enc, g->c.new_pages);
            fr_proc_enc_u64(&enc, g->c.bot_events);
            fr_proc_enc_u64(&enc, g->c.bytes_added);
            fr_proc_enc_u64(&enc, g->c.bytes_removed);
            fr_proc_enc_u8(&enc, g->users_exact);
            fr_proc_enc_u32(&enc, g->n_users);
            free(names);
            names = malloc((size_t)g->n_users * sizeof *names + 1);
            if (!names) {
                enc.err = FR_ENOMEM;
                break;
            }
            uint32_t n = 0;
            for (uint32_t s = 0; g->users && s <= g->users_mask; s++) {
                if (g->users[s].len) {
                    names[n++] = (struct win_name){g->names + g->users[s].off, g->users[s].len - 1};
                }
            }
            qsort(names, n, sizeof *names, win_cmp_name);
            for (uint32_t u = 0; u < n; u++) {
                fr_proc_enc_str(&enc, names[u].s, names[u].len);
            }
        }
    }
    free(sorted);
    free(names);
    return fr_proc_enc_end(&enc);
}

int fr_win_load(struct fr_win *win, const void *bytes, size_t len)
{
    struct fr_win *fresh = NULL;
    struct fr_proc_dec dec;
    int rc = fr_proc_dec_begin(&dec, bytes, len, WIN_MAGIC, WIN_VERSION);
    if (rc < 0) {
        return rc;
    }
    rc = fr_win_create(&win->opts, &fresh);
    if (rc < 0) {
        return rc;
    }
    fresh->closed_us = fr_proc_dec_i64(&dec);
    struct fr_win_stats saved = {0};
    saved.rows = fr_proc_dec_u64(&dec);
    saved.dropped_groups = fr_proc_dec_u64(&dec);
    saved.dropped_users = fr_proc_dec_u64(&dec);
    saved.dropped_closed = fr_proc_dec_u64(&dec);
    uint32_t nm = fr_proc_dec_count(&dec, UINT32_MAX, 12);
    rc = FR_ECORRUPT;
    for (uint32_t k = 0; k < nm && dec.err == FR_OK; k++) {
        int64_t start = fr_proc_dec_i64(&dec);
        uint32_t ng = fr_proc_dec_count(&dec, UINT32_MAX, 4 + 49 + 4);
        if (dec.err != FR_OK || !FR_PROC_TIME_OK(start) ||
            fr_proc_floor(start, FR_PROC_MINUTE_US) != start ||
            (k > 0 && start <= fresh->minutes[fresh->n_minutes - 1].start) ||
            (fresh->closed_us != INT64_MIN && start + FR_PROC_MINUTE_US <= fresh->closed_us)) {
            goto cleanup;
        }
        struct win_minute *m = win_minute_get(fresh, start, 1);
        if (!m) {
            rc = FR_ENOMEM;
            goto cleanup;
        }
        const char *prev_wiki = NULL;
        uint32_t prev_len = 0;
        for (uint32_t i = 0; i < ng; i++) {
            uint32_t wlen;
            const char *wiki = fr_proc_dec_str(&dec, FR_PROC_WIKI_MAX, &wlen);
            if (dec.err != FR_OK ||
                (prev_wiki && fr_proc_strcmp(prev_wiki, prev_len, wiki, wlen) >= 0)) {
                goto cleanup;
            }
            prev_wiki = wiki;
            prev_len = wlen;
            int grc;
            struct win_group *g = win_group_get(fresh, m, wiki, wlen, &grc);
            if (!g) {
                rc = grc < 0 ? grc : FR_ETOOBIG;
                goto cleanup;
            }
            g->c.events = fr_proc_dec_u64(&dec);
            g->c.edits = fr_proc_dec_u64(&dec);
            g->c.new_pages = fr_proc_dec_u64(&dec);
            g->c.bot_events = fr_proc_dec_u64(&dec);
            g->c.bytes_added = fr_proc_dec_u64(&dec);
            g->c.bytes_removed = fr_proc_dec_u64(&dec);
            uint8_t exact = fr_proc_dec_u8(&dec);
            uint32_t nu = fr_proc_dec_count(&dec, UINT32_MAX, 4);
            if (dec.err != FR_OK || exact > 1) {
                goto cleanup;
            }
            const char *prev_name = NULL;
            uint32_t prev_nlen = 0;
            for (uint32_t u = 0; u < nu; u++) {
                uint32_t nlen;
                const char *name = fr_proc_dec_str(&dec, WIN_NAME_MAX - 1, &nlen);
                if (dec.err != FR_OK ||
                    (prev_name && fr_proc_strcmp(prev_name, prev_nlen, name, nlen) >= 0)) {
                    goto cleanup;
                }
                prev_name = name;
                prev_nlen = nlen;
                uint64_t before = fresh->st.users;
                rc = win_user_add(fresh, g, name, nlen);
                if (rc < 0) {
                    goto cleanup;
                }
                if (fresh->st.users == before) {
                    rc = FR_ETOOBIG;
                    goto cleanup;
                }
                rc = FR_ECORRUPT;
            }
            g->users_exact = exact;
        }
        if (m->n == 0) {
            goto cleanup; /* an empty minute is never saved */
        }
    }
    rc = fr_proc_dec_end(&dec);
    if (rc < 0) {
        goto cleanup;
    }
    fresh->st.rows = saved.rows;
    fresh->st.dropped_groups = saved.dropped_groups;
    fresh->st.dropped_users = saved.dropped_users;
    fresh->st.dropped_closed = saved.dropped_closed;
    struct fr_win tmp = *win;
    *win = *fresh;
    *fresh = tmp;
    rc = FR_OK;
cleanup:
    fr_win_destroy(fresh);
    return rc;
}
