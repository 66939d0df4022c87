/*
 * estage.c — the enrichment stage of `freshet process`: the pending table,
 * the lookup client, answers into silver_topics / dlq_lookups, resolved
 * items into the topics operator, the state file saved before each commit.
 * The contract (frontier, exactly once, the state file's byte table) is in
 * estage.h; the user's view in docs/ENRICH.md.
 *
 * Pending table: pending_max slots allocated once. A slot moves
 *
 *   FREE ──edit──► WAITING ──submit──► SUBMITTED ──answer──► ANSWERED ──apply──► FREE
 *                    ▲   (client full: stays, retried by pump)
 *                    └── load: every saved edit starts WAITING again
 *
 * Tags sent to the client are (generation << 32 | slot); a load bumps the
 * generation, so an answer for a slot of the state that was replaced is
 * recognised and ignored. Only the epoch loop's thread touches any of it.
 */
#include "pipeline/estage.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/crc32c.h"
#include "core/diag.h"
#include "core/err.h"
#include "core/fsutil.h"
#include "enrich/enrich.h"
#include "stats/stats.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ES_MAGIC "FRES"
#define ES_VERSION 2 /* 1: without the label counters */
#define ES_STATE_CAP ((size_t)1 << 30)
#define ES_KEEP 3
#define ES_POLL_BATCH 64
#define ES_TEXT_MAX 1024 /* wiki + server_name + title bytes of one edit */

enum es_state { ES_FREE = 0, ES_WAITING, ES_SUBMITTED, ES_ANSWERED };

struct es_slot {
    uint8_t state;
    uint8_t outcome; /* enum fr_enrich_outcome once ANSWERED */
    uint8_t why;     /* enum fr_enrich_why */
    uint16_t attempts;
    uint16_t wiki_len, server_len, title_len;
    int32_t partition;
    int64_t offset;
    int64_t event_us;
    uint64_t item;
    char meta_id[37];
    char *text;   /* wiki NUL server_name NUL title NUL */
    char *reason; /* FAILED: the client's reason */
    char *label;  /* RESOLVED with a label: its text (label_lang says which language) */
    uint8_t label_why; /* enum fr_enrich_label_why */
    char label_lang[FR_ENRICH_LANG_MAX + 1];
};

struct fr_estage {
    char dir[4200]; /* <ck_dir>/enrich */
    int64_t backlog_wait_ms;
    struct fr_enrich *client;
    struct fr_topics *topics;
    uint32_t cap;
    struct es_slot *slots;
    uint32_t *free_list, n_free;
    uint32_t *fifo, fifo_head, fifo_n; /* WAITING slots, in arrival order */
    uint32_t *answered, n_answered;
    uint32_t used;
    uint32_t gen;
    int gold; /* 0 on a shard: items are not counted, no window is settled */
    int64_t frontier;
    struct fr_estage_counts c;
    struct fr_enrich_result results[ES_POLL_BATCH];
};

/* ------------------------------------------------------------ the table */

static void slot_clear(struct es_slot *s)
{
    free(s->text);
    free(s->reason);
    free(s->label);
    memset(s, 0, sizeof *s);
}

static void es_clear(struct fr_estage *es)
{
    for (uint32_t i = 0; i < es->cap; i++) {
        slot_clear(&es->slots[i]);
    }
    es->n_free = es->cap;
    for (uint32_t i = 0; i < es->cap; i++) {
        es->free_list[i] = es->cap - 1 - i; /* slot 0 is taken first */
    }
    es->fifo_head = es->fifo_n = 0;
    es->n_answered = 0;
    es->used = 0;
    es->gen++;
}

static void es_release(struct fr_estage *es, uint32_t i)
{
    slot_clear(&es->slots[i]);
    es->free_list[es->n_free++] = i;
    es->used--;
}

static void fifo_push(struct fr_estage *es, uint32_t i)
{
    es->fifo[(es->fifo_head + es->fifo_n) % es->cap] = i;
    es->fifo_n++;
}

/* Hand WAITING slots to the client until it pushes back. */
static void es_submit(struct fr_estage *es)
{
    while (es->fifo_n) {
        uint32_t i = es->fifo[es->fifo_head];
        struct es_slot *s = &es->slots[i];
        uint64_t tag = (uint64_t)es->gen << 32 | i;
        const char *server = s->text + s->wiki_len + 1;
        const char *title = server + s->server_len + 1;
        int rc = fr_enrich_submit(es->client, server, title, s->title_len, tag);
        if (rc == FR_EAGAIN) {
            return;
        }
        es->fifo_head = (es->fifo_head + 1) % es->cap;
        es->fifo_n--;
        if (rc == FR_OK) {
            s->state = ES_SUBMITTED;
            continue;
        }
        /* A server name the client refuses: the page cannot be looked up. */
        s->state = ES_ANSWERED;
        s->outcome = FR_ENRICH_NO_ITEM;
        s->why = FR_ENRICH_WHY_INVALID;
        es->answered[es->n_answered++] = i;
    }
}

/* Take a slot for an edit; NULL when the table is full. */
static struct es_slot *es_take(struct fr_estage *es, const char *wiki, size_t wlen,
                               const char *server, size_t slen, const char *title, size_t tlen,
                               uint32_t *idx)
{
    if (es->n_free == 0 || wlen + slen + tlen + 3 > ES_TEXT_MAX) {
        return NULL;
    }
    char *text = malloc(wlen + slen + tlen + 3);
    if (!text) {
        return NULL;
    }
    uint32_t i = es->free_list[--es->n_free];
    struct es_slot *s = &es->slots[i];
    memset(s, 0, sizeof *s);
    memcpy(text, wiki, wlen);
    text[wlen] = 0;
    memcpy(text + wlen + 1, server, slen);
    text[wlen + 1 + slen] = 0;
    memcpy(text + wlen + slen + 2, title, tlen);
    text[wlen + slen + 2 + tlen] = 0;
    s->text = text;
    s->wiki_len = (uint16_t)wlen;
    s->server_len = (uint16_t)slen;
    s->title_len = (uint16_t)tlen;
    s->state = ES_WAITING;
    es->used++;
    *idx = i;
    return s;
}

static void es_edit_of(const struct es_slot *s, struct fr_topic_edit *e)
{
    memset(e, 0, sizeof *e);
    memcpy(e->meta_id, s->meta_id, sizeof s->meta_id);
    e->event_us = s->event_us;
    e->partition = s->partition;
    e->offset = s->offset;
    e->wiki = s->text;
    e->server_name = s->text + s->wiki_len + 1;
    e->title = e->server_name + s->server_len + 1;
}

/* ------------------------------------------------------------------ API */

int fr_estage_open(const struct fr_conf *conf, const char *ck_dir, struct fr_estage **out)
{
    *out = NULL;
    if (!conf->enrich_enabled) {
        return FR_OK;
    }
    struct fr_estage *es = calloc(1, sizeof *es);
    if (!es) {
        return FR_ENOMEM;
    }
    int rc = FR_ENOMEM;
    es->cap = (uint32_t)conf->enrich_pending_max;
    es->backlog_wait_ms = conf->enrich_backlog_wait_ms;
    es->slots = calloc(es->cap, sizeof *es->slots);
    es->free_list = malloc((size_t)es->cap * sizeof *es->free_list);
    es->fifo = malloc((size_t)es->cap * sizeof *es->fifo);
    es->answered = malloc((size_t)es->cap * sizeof *es->answered);
    if (!es->slots || !es->free_list || !es->fifo || !es->answered) {
        goto fail;
    }
    struct fr_topics_opts topts = {FR_TOPICS_DEFAULT_MAX_ENTRIES, FR_TOPICS_DEFAULT_MAX_WIKIS};
    if ((rc = fr_topics_create(&topts, &es->topics)) < 0) {
        goto fail;
    }
    struct fr_enrich_config cfg;
    fr_enrich_config_from_conf(conf, &cfg);
    char err[256] = "";
    if ((rc = fr_enrich_new(&cfg, NULL, &es->client, err, sizeof err)) < 0) {
        fr_error("process", "enrichment: %s", err[0] ? err : fr_strerror(rc));
        goto fail;
    }
    snprintf(es->dir, sizeof es->dir, "%s/enrich", ck_dir);
    if ((rc = fr_fs_mkdirs(es->dir, 0755)) < 0) {
        fr_error("process", "cannot create %s: %s", es->dir, fr_strerror(rc));
        goto fail;
    }
    es->frontier = FR_PROC_WM_NONE;
    es->gold = 1;
    es_clear(es);
    *out = es;
    return FR_OK;
fail:
    fr_estage_free(es);
    return rc;
}

void fr_estage_free(struct fr_estage *es)
{
    if (!es) {
        return;
    }
    if (es->slots) {
        for (uint32_t i = 0; i < es->cap; i++) {
            slot_clear(&es->slots[i]);
        }
    }
    fr_enrich_free(es->client);
    fr_topics_destroy(es->topics);
    free(es->slots);
    free(es->free_list);
    free(es->fifo);
    free(es->answered);
    free(es);
}

void fr_estage_reset(struct fr_estage *es)
{
    es_clear(es);
    struct fr_topics *fresh = NULL;
    struct fr_topics_opts topts = {FR_TOPICS_DEFAULT_MAX_ENTRIES, FR_TOPICS_DEFAULT_MAX_WIKIS};
    if (fr_topics_create(&topts, &fresh) == FR_OK) {
        fr_topics_destroy(es->topics);
        es->topics = fresh;
    }
    memset(&es->c, 0, sizeof es->c);
    es->frontier = FR_PROC_WM_NONE;
}

int fr_estage_edit(struct fr_estage *es, const struct fr_row *row, struct fr_tw *tw)
{
    if (row->type != FR_TYPE_EDIT && row->type != FR_TYPE_NEW) {
        return FR_OK;
    }
    if (!(row->has & FR_ROW_TITLE) || !(row->has & FR_ROW_SERVER_NAME) || row->title.len == 0 ||
        row->meta_id.len != 36) {
        es->c.skipped++;
        return FR_OK;
    }
    /* Full: wait for room when allowed (answers are written as they come,
     * which frees their slots), else dead-letter. */
    if (es->n_free == 0 && es->backlog_wait_ms > 0) {
        int64_t until = fr_mono_ms() + es->backlog_wait_ms;
        while (es->n_free == 0) {
            int64_t left = until - fr_mono_ms();
            if (left <= 0) {
                break;
            }
            int rc = fr_estage_pump(es, left < 50 ? (int)left : 50);
            if (rc == FR_OK) {
                rc = fr_estage_write(es, tw, fr_wall_ms() * 1000);
            }
            if (rc < 0) {
                return rc;
            }
        }
    }
    uint32_t i = 0;
    struct es_slot *s = es_take(es, row->wiki.s, row->wiki.len, row->server_name.s,
                                row->server_name.len, row->title.s, row->title.len, &i);
    if (!s) {
        /* Full (or an edit whose names are absurdly long): dead-lettered,
         * replayable, never a reason to grow. */
        struct fr_topic_edit e;
        char wiki[FR_PROC_WIKI_MAX + 1], server[ES_TEXT_MAX], title[ES_TEXT_MAX];
        snprintf(wiki, sizeof wiki, "%.*s", (int)row->wiki.len, row->wiki.s);
        snprintf(server, sizeof server, "%.*s", (int)row->server_name.len, row->server_name.s);
        snprintf(title, sizeof title, "%.*s", (int)row->title.len, row->title.s);
        memset(&e, 0, sizeof e);
        memcpy(e.meta_id, row->meta_id.s, 36);
        e.event_us = row->event_us;
        e.partition = row->partition;
        e.offset = row->offset;
        e.wiki = wiki;
        e.server_name = server;
        e.title = title;
        char detail[96];
        snprintf(detail, sizeof detail, "%u edits were waiting for a lookup (enrich.pending_max)",
                 es->cap);
        es->c.backlog++;
        return fr_tw_dlq_lookup(&tw[FR_TBL_DLQ_LOOKUPS], &e, "backlog", detail, 0,
                                fr_wall_ms() * 1000);
    }
    memcpy(s->meta_id, row->meta_id.s, 36);
    s->meta_id[36] = 0;
    s->event_us = row->event_us;
    s->partition = row->partition;
    s->offset = row->offset;
    es->c.submitted++;
    fifo_push(es, i);
    es_submit(es);
    return FR_OK;
}

int fr_estage_pump(struct fr_estage *es, int timeout_ms)
{
    es_submit(es);
    for (int first = 1;; first = 0) {
        int n = fr_enrich_poll(es->client, first ? timeout_ms : 0, es->results, ES_POLL_BATCH);
        if (n < 0) {
            return n;
        }
        for (int k = 0; k < n; k++) {
            const struct fr_enrich_result *r = &es->results[k];
            uint32_t i = (uint32_t)(r->tag & 0xffffffffu);
            if ((uint32_t)(r->tag >> 32) != es->gen || i >= es->cap ||
                es->slots[i].state != ES_SUBMITTED) {
                continue; /* for a state that was replaced */
            }
            struct es_slot *s = &es->slots[i];
            s->state = ES_ANSWERED;
            s->outcome = (uint8_t)r->outcome;
            s->why = (uint8_t)r->why;
            s->attempts = (uint16_t)(r->attempts > 0 ? r->attempts : 0);
            if (r->outcome == FR_ENRICH_RESOLVED) {
                char *end = NULL;
                unsigned long long q = r->item[0] == 'Q' ? strtoull(r->item + 1, &end, 10) : 0;
                if (q == 0 || !end || *end) {
                    /* The client only hands out Q<digits>; anything else is
                     * a bug there, treated as no item rather than trusted. */
                    s->outcome = FR_ENRICH_NO_ITEM;
                    s->why = FR_ENRICH_WHY_INVALID;
                }
                s->item = q;
                s->label_why = (uint8_t)r->label_why;
                memcpy(s->label_lang, r->label_lang, sizeof s->label_lang);
                if (r->label_why == FR_ENRICH_LABEL_OK && r->label[0]) {
                    s->label = strdup(r->label);
                    if (!s->label) {
                        return FR_ENOMEM;
                    }
                }
            } else if (r->outcome == FR_ENRICH_FAILED) {
                s->reason = strdup(r->reason[0] ? r->reason : fr_strerror(r->err));
            }
            es->answered[es->n_answered++] = i;
        }
        es_submit(es);
        if (n < ES_POLL_BATCH) {
            return FR_OK;
        }
    }
}

size_t fr_estage_waiting(const struct fr_estage *es)
{
    return es->used - es->n_answered;
}

size_t fr_estage_answered(const struct fr_estage *es)
{
    return es->n_answered;
}

struct es_gold {
    struct fr_tw *tw;
    uint64_t rows;
};

static int es_emit(void *arg, const struct fr_topic_row *row)
{
    struct es_gold *g = arg;
    g->rows++;
    return fr_tw_gold_topics(g->tw, row);
}

static const char *why_name(int why)
{
    switch (why) {
    case FR_ENRICH_WHY_NO_PROP:
        return "no_prop";
    case FR_ENRICH_WHY_MISSING:
        return "missing";
    case FR_ENRICH_WHY_INVALID:
        return "invalid";
    default:
        return NULL;
    }
}

const char *fr_estage_label_why(int label_why)
{
    switch (label_why) {
    case FR_ENRICH_LABEL_OK:
        return NULL;
    case FR_ENRICH_LABEL_NONE:
        return "no_label";
    case FR_ENRICH_LABEL_MISSING:
        return "missing";
    default:
        return "off";
    }
}

/* What a resolved slot's row says of its label (the columns fr_tw_topic
 * writes: a label, else label_why). */
static enum fr_estage_label es_label_outcome(const struct es_slot *s)
{
    if (s->label) {
        return FR_ESTAGE_LABELLED;
    }
    switch (s->label_why) {
    case FR_ENRICH_LABEL_MISSING:
        return FR_ESTAGE_LABEL_MISSING;
    case FR_ENRICH_LABEL_OFF:
        return FR_ESTAGE_LABEL_OFF;
    default:
        return FR_ESTAGE_LABEL_NONE;
    }
}

int fr_estage_write(struct fr_estage *es, struct fr_tw *tw, int64_t now_us)
{
    int rc = FR_OK;
    for (uint32_t k = 0; k < es->n_answered && rc >= 0; k++) {
        uint32_t i = es->answered[k];
        struct es_slot *s = &es->slots[i];
        struct fr_topic_edit e;
        es_edit_of(s, &e);
        if (s->outcome == FR_ENRICH_RESOLVED) {
            char item[32];
            snprintf(item, sizeof item, "Q%llu", (unsigned long long)s->item);
            struct fr_topic_label label = {s->label, s->label ? s->label_lang : NULL,
                                           fr_estage_label_why(s->label_why)};
            rc = fr_tw_topic(&tw[FR_TBL_SILVER_TOPICS], &e, "resolved", NULL, item, &label,
                             NULL);
            es->c.labels[es_label_outcome(s)]++;
            if (rc >= 0 && es->gold) {
                rc = fr_topics_add(es->topics, s->event_us, s->item, s->text, s->wiki_len,
                                   s->label, s->label ? strlen(s->label) : 0);
            }
            es->c.resolved++;
        } else if (s->outcome == FR_ENRICH_NO_ITEM) {
            rc = fr_tw_topic(&tw[FR_TBL_SILVER_TOPICS], &e, "no_item", why_name(s->why), NULL,
                             NULL, NULL);
            es->c.no_item++;
        } else {
            rc = fr_tw_dlq_lookup(&tw[FR_TBL_DLQ_LOOKUPS], &e, "lookup_failed",
                                  s->reason ? s->reason : "", s->attempts, now_us);
            es->c.failed++;
            if (s->reason && strncmp(s->reason, "labels: ", 8) == 0) { /* the label round's */
                es->c.labels[FR_ESTAGE_LABEL_FAILED]++;
            }
        }
    }
    if (rc < 0) {
        return rc; /* the epoch fails; the state is reloaded on restart */
    }
    for (uint32_t k = 0; k < es->n_answered; k++) {
        es_release(es, es->answered[k]);
    }
    es->n_answered = 0;
    return FR_OK;
}

int fr_estage_apply(struct fr_estage *es, struct fr_tw *tw, int64_t watermark_us, int64_t now_us,
                    uint64_t *gold_rows)
{
    *gold_rows = 0;
    int rc = fr_estage_write(es, tw, now_us);
    if (rc < 0) {
        return rc;
    }
    /* Hold the frontier back to the oldest edit still waiting. */
    int64_t frontier = watermark_us;
    for (uint32_t i = 0, seen = 0; i < es->cap && seen < es->used; i++) {
        if (es->slots[i].state == ES_FREE) {
            continue;
        }
        seen++;
        if (es->slots[i].event_us < frontier) {
            frontier = es->slots[i].event_us;
        }
    }
    if (frontier != FR_PROC_WM_NONE && (es->frontier == FR_PROC_WM_NONE || frontier > es->frontier)) {
        es->frontier = frontier;
    }
    if (!es->gold) {
        return FR_OK; /* a shard: the finalizer settles the windows */
    }
    struct es_gold g = {&tw[FR_TBL_GOLD_TOPICS], 0};
    rc = fr_topics_advance(es->topics, es->frontier, es_emit, &g);
    *gold_rows = g.rows;
    return rc;
}

/* ------------------------------------------------------------ the state */

/* The file name of epoch's state: "state-<epoch>-<fingerprint>" (the
 * file's own CRC-32C, ADR 0064), or the name before fingerprints,
 * "state-<epoch>", when fp is NULL. */
static void state_name(int64_t epoch, const uint32_t *fp, char *out, size_t outlen)
{
    if (fp) {
        snprintf(out, outlen, "state-%012" PRId64 "-%08" PRIx32, epoch, *fp);
    } else {
        snprintf(out, outlen, "state-%012" PRId64, epoch);
    }
}

static void state_path(const struct fr_estage *es, int64_t epoch, const uint32_t *fp, char *out,
                       size_t outlen)
{
    char name[64];
    state_name(epoch, fp, name, sizeof name);
    snprintf(out, outlen, "%s/%s", es->dir, name);
}

void fr_estage_state_name(int64_t epoch, uint32_t fp, char *out, size_t outlen)
{
    state_name(epoch, &fp, out, outlen);
}

const char *fr_estage_dir(const struct fr_estage *es)
{
    return es->dir;
}

static void put_u16(struct fr_buf *b, uint16_t v, int *rc)
{
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    if (*rc == FR_OK) {
        *rc = fr_buf_append(b, x, 2);
    }
}

static void put_u32(struct fr_buf *b, uint32_t v, int *rc)
{
    uint8_t x[4];
    for (int i = 0; i < 4; i++) {
        x[i] = (uint8_t)(v >> (8 * i));
    }
    if (*rc == FR_OK) {
        *rc = fr_buf_append(b, x, 4);
    }
}

static void put_u64(struct fr_buf *b, uint64_t v, int *rc)
{
    uint8_t x[8];
    for (int i = 0; i < 8; i++) {
        x[i] = (uint8_t)(v >> (8 * i));
    }
    if (*rc == FR_OK) {
        *rc = fr_buf_append(b, x, 8);
    }
}

static void put_bytes(struct fr_buf *b, const void *p, size_t n, int *rc)
{
    if (*rc == FR_OK && n) {
        *rc = fr_buf_append(b, p, n);
    }
}

static void prune(struct fr_estage *es, int64_t epoch)
{
    DIR *d = opendir(es->dir);
    if (!d) {
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        long long e;
        int used = 0;
        if (sscanf(de->d_name, "state-%lld%n", &e, &used) == 1 &&
            (de->d_name[used] == 0 || de->d_name[used] == '-') && e <= epoch - ES_KEEP) {
            char path[4600];
            snprintf(path, sizeof path, "%s/%s", es->dir, de->d_name);
            unlink(path);
        }
    }
    closedir(d);
}

int fr_estage_save(struct fr_estage *es, int64_t epoch, uint32_t *fp)
{
    struct fr_buf b, t;
    fr_buf_init(&b, ES_STATE_CAP);
    fr_buf_init(&t, ES_STATE_CAP);
    int rc = fr_topics_save(es->topics, &t);
    put_bytes(&b, ES_MAGIC, 4, &rc);
    put_u16(&b, ES_VERSION, &rc);
    put_u16(&b, 0, &rc);
    put_u64(&b, (uint64_t)epoch, &rc);
    const uint64_t counts[6] = {es->c.submitted, es->c.resolved, es->c.no_item,
                                es->c.failed,    es->c.backlog,  es->c.skipped};
    for (int k = 0; k < 6; k++) {
        put_u64(&b, counts[k], &rc);
    }
    put_u32(&b, es->used, &rc);
    for (uint32_t i = 0; i < es->cap && rc == FR_OK; i++) {
        const struct es_slot *s = &es->slots[i];
        if (s->state == ES_FREE) {
            continue;
        }
        put_u64(&b, (uint64_t)s->event_us, &rc);
        put_u32(&b, (uint32_t)s->partition, &rc);
        put_u64(&b, (uint64_t)s->offset, &rc);
        put_bytes(&b, s->meta_id, 36, &rc);
        put_u16(&b, s->wiki_len, &rc);
        put_u16(&b, s->server_len, &rc);
        put_u16(&b, s->title_len, &rc);
        put_bytes(&b, s->text, s->wiki_len, &rc);
        put_bytes(&b, s->text + s->wiki_len + 1, s->server_len, &rc);
        put_bytes(&b, s->text + s->wiki_len + s->server_len + 2, s->title_len, &rc);
    }
    put_u64(&b, t.len, &rc);
    put_bytes(&b, t.data, t.len, &rc);
    for (int k = 0; k < FR_ESTAGE_LABEL_OUTCOMES; k++) {
        put_u64(&b, es->c.labels[k], &rc);
    }
    uint32_t crc = rc == FR_OK ? fr_crc32c(0, b.data, b.len) : 0;
    put_u32(&b, crc, &rc);
    if (rc == FR_OK) {
        char path[4300];
        state_path(es, epoch, &crc, path, sizeof path);
        rc = fr_fs_write_atomic(path, b.data, b.len);
    }
    *fp = crc;
    fr_buf_free(&b);
    fr_buf_free(&t);
    if (rc < 0) {
        fr_error("process", "epoch %" PRId64 ": cannot save the enrichment state: %s", epoch,
                 fr_strerror(rc));
        return rc;
    }
    prune(es, epoch);
    return FR_OK;
}

struct rd {
    const uint8_t *p, *end;
    int bad;
};

static const uint8_t *rd_take(struct rd *r, size_t n)
{
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = 1;
        return NULL;
    }
    const uint8_t *at = r->p;
    r->p += n;
    return at;
}

static uint64_t rd_u(struct rd *r, int bytes)
{
    const uint8_t *p = rd_take(r, (size_t)bytes);
    uint64_t v = 0;
    for (int i = 0; p && i < bytes; i++) {
        v |= (uint64_t)p[i] << (8 * i);
    }
    return v;
}

static int load_path(struct fr_estage *es, int64_t epoch, const uint32_t *fp)
{
    char path[4300];
    state_path(es, epoch, fp, path, sizeof path);
    struct fr_buf b;
    fr_buf_init(&b, ES_STATE_CAP);
    int rc = fr_fs_read_file(path, &b);
    if (rc < 0) {
        fr_buf_free(&b);
        return rc;
    }
    struct fr_topics *topics = NULL;
    rc = FR_ECORRUPT;
    if (b.len < 4 + 4 + 8 + 48 + 4 + 8 + 4) {
        goto done;
    }
    uint32_t crc = 0;
    for (int i = 0; i < 4; i++) {
        crc |= (uint32_t)b.data[b.len - 4 + (size_t)i] << (8 * i);
    }
    if (crc != fr_crc32c(0, b.data, b.len - 4) || (fp && crc != *fp)) {
        rc = FR_ECRC;
        goto done;
    }
    struct rd r = {b.data, b.data + b.len - 4, 0};
    const uint8_t *magic = rd_take(&r, 4);
    uint64_t version = magic ? rd_u(&r, 2) : 0;
    if (!magic || memcmp(magic, ES_MAGIC, 4) != 0 || version < 1 || version > ES_VERSION ||
        rd_u(&r, 2) != 0 || (int64_t)rd_u(&r, 8) != epoch) {
        goto done;
    }
    struct fr_estage_counts c;
    memset(&c, 0, sizeof c);
    c.submitted = rd_u(&r, 8);
    c.resolved = rd_u(&r, 8);
    c.no_item = rd_u(&r, 8);
    c.failed = rd_u(&r, 8);
    c.backlog = rd_u(&r, 8);
    c.skipped = rd_u(&r, 8);
    uint32_t n = (uint32_t)rd_u(&r, 4);
    if (r.bad) {
        goto done;
    }
    if (n > es->cap) {
        fr_error("process", "%s holds %u pending lookups, more than enrich.pending_max (%u)", path,
                 n, es->cap);
        rc = FR_ETOOBIG;
        goto done;
    }
    es_clear(es); /* bumps the generation: older answers are ignored */
    for (uint32_t k = 0; k < n; k++) {
        int64_t ev = (int64_t)rd_u(&r, 8);
        int32_t part = (int32_t)rd_u(&r, 4);
        int64_t off = (int64_t)rd_u(&r, 8);
        const uint8_t *id = rd_take(&r, 36);
        uint16_t wl = (uint16_t)rd_u(&r, 2), sl = (uint16_t)rd_u(&r, 2), tl = (uint16_t)rd_u(&r, 2);
        const uint8_t *w = rd_take(&r, wl), *sv = rd_take(&r, sl), *ti = rd_take(&r, tl);
        uint32_t i = 0;
        struct es_slot *s = r.bad ? NULL
                                  : es_take(es, (const char *)w, wl, (const char *)sv, sl,
                                            (const char *)ti, tl, &i);
        if (!s) {
            es_clear(es);
            goto done;
        }
        memcpy(s->meta_id, id, 36);
        s->event_us = ev;
        s->partition = part;
        s->offset = off;
        fifo_push(es, i);
    }
    uint64_t tlen = rd_u(&r, 8);
    const uint8_t *tb = rd_take(&r, (size_t)tlen);
    for (int k = 0; version >= 2 && k < FR_ESTAGE_LABEL_OUTCOMES; k++) {
        c.labels[k] = rd_u(&r, 8);
    }
    if (!tb || r.bad || r.p != r.end) {
        es_clear(es);
        goto done;
    }
    struct fr_topics_opts topts = {FR_TOPICS_DEFAULT_MAX_ENTRIES, FR_TOPICS_DEFAULT_MAX_WIKIS};
    if ((rc = fr_topics_create(&topts, &topics)) < 0 ||
        (rc = fr_topics_load(topics, tb, (size_t)tlen)) < 0) {
        es_clear(es);
        goto done;
    }
    fr_topics_destroy(es->topics);
    es->topics = topics;
    topics = NULL;
    es->c = c;
    int64_t settled = fr_topics_settled(es->topics);
    es->frontier = settled; /* the next apply recomputes it, never below this */
    es_submit(es);
    rc = FR_OK;
done:
    if (rc < 0 && rc != FR_ENOTFOUND) {
        fr_error("process", "enrichment state %s is unusable: %s", path, fr_strerror(rc));
    }
    fr_topics_destroy(topics);
    fr_buf_free(&b);
    return rc;
}

int fr_estage_load(struct fr_estage *es, int64_t epoch)
{
    return load_path(es, epoch, NULL);
}

int fr_estage_load_exact(struct fr_estage *es, int64_t epoch, uint32_t fp)
{
    return load_path(es, epoch, &fp);
}

void fr_estage_no_gold(struct fr_estage *es)
{
    es->gold = 0;
}

/* ---------------------------------------------------------- publishing */

void fr_estage_counts(const struct fr_estage *es, struct fr_estage_counts *counts)
{
    *counts = es->c;
}

int64_t fr_estage_frontier(const struct fr_estage *es)
{
    return es->frontier;
}

int fr_topics_json(struct fr_topics *topics, int64_t epoch, int64_t frontier_us,
                   const char *counts, struct fr_buf *out)
{
    int rc = fr_buf_printf(out, "{\"updated_ms\":%lld,\"epoch\":%lld,\"frontier_ms\":",
                           (long long)fr_wall_ms(), (long long)epoch);
    if (rc == FR_OK) {
        rc = frontier_us == FR_PROC_WM_NONE
                 ? fr_buf_puts(out, "null")
                 : fr_buf_printf(out, "%lld", (long long)(frontier_us / 1000));
    }
    if (rc == FR_OK) {
        rc = fr_buf_printf(out, ",\"counts\":%s,\"top\":", counts ? counts : "null");
    }
    struct fr_topic_row rows[FR_TOP_N];
    uint32_t n = 0;
    if (rc == FR_OK && fr_topics_view(topics, rows, &n) < 0) {
        n = 0;
    }
    if (rc == FR_OK && n == 0) {
        rc = fr_buf_puts(out, "null");
    } else if (rc == FR_OK) {
        rc = fr_buf_printf(out, "{\"start_ms\":%lld,\"end_ms\":%lld,\"topics\":[",
                           (long long)(rows[0].window_start_us / 1000),
                           (long long)(rows[0].window_end_us / 1000));
        for (uint32_t i = 0; rc == FR_OK && i < n; i++) {
            rc = fr_buf_printf(out, "%s{\"rank\":%u,\"item\":\"Q%llu\",\"label\":",
                               i ? "," : "", rows[i].rank, (unsigned long long)rows[i].item);
            if (rc == FR_OK) {
                rc = rows[i].label.s ? fr_buf_json_str(out, rows[i].label.s, rows[i].label.len)
                                     : fr_buf_puts(out, "null");
            }
            if (rc == FR_OK) {
                rc = fr_buf_printf(out, ",\"edits\":%llu,\"wikis\":%u,\"top_wikis\":[",
                                   (unsigned long long)rows[i].edits, rows[i].wikis);
            }
            for (uint32_t k = 0; rc == FR_OK && k < rows[i].n_top; k++) {
                rc = fr_buf_puts(out, k ? ",{\"wiki\":" : "{\"wiki\":");
                if (rc == FR_OK) {
                    rc = fr_buf_json_str(out, rows[i].top[k].wiki.s, rows[i].top[k].wiki.len);
                }
                if (rc == FR_OK) {
                    rc = fr_buf_printf(out, ",\"edits\":%llu}",
                                       (unsigned long long)rows[i].top[k].edits);
                }
            }
            if (rc == FR_OK) {
                rc = fr_buf_puts(out, "]}");
            }
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, "]}");
        }
    }
    return rc == FR_OK ? fr_buf_puts(out, "}\n") : rc;
}

void fr_topics_json_write(const char *data_dir, const struct fr_buf *doc, const char *who)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/stats/topics.json", data_dir);
    int rc = fr_fs_write_replace(path, doc->data, doc->len); /* a view: no fsync */
    if (rc < 0) {
        fr_warn(who, "cannot write the topics view %s: %s", path, fr_strerror(rc));
    }
}

/* The counters and gauges; cs receives the client's figures they came from. */
static void publish_stats(struct fr_estage *es, struct fr_stats *st, struct fr_enrich_stats *out)
{
    struct fr_enrich_stats cs;
    fr_enrich_stats_get(es->client, &cs);
    const uint64_t outcomes[4] = {es->c.resolved, es->c.no_item, es->c.failed, es->c.backlog};
    for (unsigned k = 0; k < 4; k++) {
        fr_stats_set_counter(st, FR_STATS_PROC_ENRICH_EDITS, k, outcomes[k]);
    }
    for (unsigned k = 0; k < FR_ESTAGE_LABEL_OUTCOMES; k++) {
        fr_stats_set_counter(st, FR_STATS_PROC_ENRICH_LABELS, k, es->c.labels[k]);
    }
    fr_stats_set(st, FR_STATS_PROC_ENRICH_PENDING, 0, (double)es->used);
    fr_stats_set_counter(st, FR_STATS_PROC_ENRICH_CACHE_HITS, 0, (uint64_t)cs.cache_hits);
    fr_stats_set_counter(st, FR_STATS_PROC_ENRICH_CACHE_MISSES, 0, (uint64_t)cs.cache_misses);
    fr_stats_set_counter(st, FR_STATS_PROC_ENRICH_REQUESTS, 0, (uint64_t)cs.requests);
    if (es->gold && es->frontier != FR_PROC_WM_NONE) { /* a shard settles no window */
        fr_stats_set(st, FR_STATS_PROC_ENRICH_FRONTIER, 0, (double)es->frontier / 1e6);
    }
    *out = cs;
}

void fr_estage_publish_stats(struct fr_estage *es, struct fr_stats *st)
{
    struct fr_enrich_stats cs;
    publish_stats(es, st, &cs);
}

void fr_estage_publish(struct fr_estage *es, struct fr_stats *st, const char *data_dir,
                       int64_t epoch)
{
    struct fr_enrich_stats cs;
    publish_stats(es, st, &cs);
    char counts[512];
    snprintf(counts, sizeof counts,
             "{\"submitted\":%llu,\"resolved\":%llu,\"no_item\":%llu,\"failed\":%llu,"
             "\"backlog\":%llu,\"pending\":%u,\"cache_hits\":%lld,\"cache_misses\":%lld,"
             "\"requests\":%lld,\"labelled\":%llu}",
             (unsigned long long)es->c.submitted, (unsigned long long)es->c.resolved,
             (unsigned long long)es->c.no_item, (unsigned long long)es->c.failed,
             (unsigned long long)es->c.backlog, es->used, (long long)cs.cache_hits,
             (long long)cs.cache_misses, (long long)cs.requests,
             (unsigned long long)es->c.labels[FR_ESTAGE_LABELLED]);
    struct fr_buf buf;
    fr_buf_init(&buf, FR_TOPICS_JSON_CAP);
    int rc = fr_topics_json(es->topics, epoch, es->frontier, counts, &buf);
    if (rc == FR_OK) {
        fr_topics_json_write(data_dir, &buf, "process");
    } else {
        fr_warn("process", "cannot write the topics view: %s", fr_strerror(rc));
    }
    fr_buf_free(&buf);
}
