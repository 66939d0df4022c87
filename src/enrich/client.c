/*
 * client.c — the lookup client: a fixed pool of key slots, the batcher, the
 * request slots on one libcurl multi handle, retries and results.
 *
 * Memory is fixed at creation: queue_cap key slots (each holds its wiki,
 * normalised title and result), max_inflight request slots (each with a
 * capped body buffer), the cache (capped in entries and bytes). Nothing
 * grows with the input: a full pool makes fr_enrich_submit return FR_EAGAIN.
 *
 * One key:
 *
 *   submit ──► invalid title? ──────────────────────────────► DONE (NO_ITEM, invalid)
 *      │       cache hit? ──────────────────────────────────► DONE (cached)
 *      ▼
 *   WAITING ──(ready, picked into a batch, a token, a free slot)──► INFLIGHT
 *      ▲                                                             │
 *      │  429 / 5xx / maxlag / transport / bad answer,               │ answer names the page
 *      └──── attempts < max: ready = now + backoff (≥ Retry-After) ◄─┤──► DONE (RESOLVED | NO_ITEM)
 *                                     attempts == max or 4xx/API error ──► DONE (FAILED, reason)
 *   DONE ──(fr_enrich_poll copies it out)──► FREE
 *
 * With labels on (cfg.labels), a key that resolves to an item is not DONE
 * yet: it goes round once more as a label key, in the same pool, lists,
 * cache, bucket and backoff. Its batch group becomes "#<lang>" (the
 * wiki's content language, label.c) and its "title" the item, so the
 * batcher puts up to batch_titles ids of one language in one request
 *
 *   GET {api_url, {wiki} = label_wiki}?action=wbgetentities&format=json
 *       &props=labels&languages=<lang>|en&ids=Q1|Q2|…&maxlag=5
 *
 *   RESOLVED ──label cache hit──────────────────────────────► DONE (label chosen)
 *      └──► WAITING (label) ──► INFLIGHT ──► DONE (label chosen: lang, en, none, missing)
 *                                   └──── max attempts ──► DONE (FAILED, "labels: …")
 * A label key has max_attempts of its own; the result's attempts count both
 * rounds. A label that fails makes the whole key FAILED (the caller dead-
 * letters and replays it; the item is in the cache by then).
 *
 * A Retry-After (429, 503, maxlag) also pauses every request until it has
 * passed: the API asks the client, not the key, to wait.
 *
 * Threads: everything runs on the caller's thread, inside its calls.
 */
#include "enrich/enrich_int.h"

#include "conf/conf.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CLIENT_BODY_CAP ((size_t)8 << 20) /* an answer for 50 titles is ~10 KiB */
#define CLIENT_URL_CAP ((size_t)64 << 10)

enum key_state { KEY_FREE = 0, KEY_WAITING, KEY_INFLIGHT, KEY_DONE };

struct enrich_key {
    enum key_state state;
    int prev, next; /* links in the list of its state (free uses next only) */
    uint64_t tag;
    int attempts;       /* in this round (item or label) */
    int attempts_item;  /* the item round's, once the key is a label key */
    int label;          /* 1: the label round */
    char group[FR_ENRICH_LANG_MAX + 2]; /* "#<lang>": the batch group and cache wiki */
    int64_t enqueued_ms, ready_ms;
    struct fr_enrich_result res; /* wiki and title filled at submit */
};

struct key_list {
    int head, tail;
    size_t n;
};

struct enrich_req {
    CURL *easy;
    int active;
    struct fr_buf body;
    struct fr_buf url;
    long retry_after_s;
    size_t nkeys;
    int *keys; /* key slots, max_keys of them */
    char errbuf[CURL_ERROR_SIZE];
};

struct fr_enrich {
    struct fr_enrich_config cfg;
    char *api_url, *user_agent, *label_wiki;
    struct fr_enrich_ops ops;
    struct enrich_key *keys;
    size_t nkeys;
    size_t used; /* slots not free */
    struct key_list waiting, done;
    int free_head;
    struct fr_enrich_cache *cache;
    struct fr_enrich_bucket bucket;
    CURLM *multi;
    struct enrich_req *reqs;
    int ninflight;
    size_t max_keys; /* keys per request, riders included */
    int64_t pause_until;
    uint64_t rng;
    /* scratch for the batcher, one entry per key slot */
    struct fr_enrich_cand *cand;
    int *cand_key;
    size_t *pick;
    struct fr_enrich_reply *reply;
    struct fr_enrich_label label_scratch;
    struct fr_enrich_stats st;
};

/* ---- defaults and configuration ------------------------------------- */

void fr_enrich_config_init(struct fr_enrich_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->api_url = "https://{wiki}/w/api.php";
    cfg->user_agent = "freshet/" FR_VERSION " (https://github.com/freshet/freshet; "
                      "ops@freshet.invalid) enrich";
    cfg->rate_per_s = 10;
    cfg->batch_titles = 50;
    cfg->max_inflight = 4;
    cfg->linger_ms = 20;
    cfg->cache_entries = 100000;
    cfg->cache_bytes = 32 << 20;
    cfg->queue_cap = 10000;
    cfg->timeout_ms = 10000;
    cfg->max_attempts = 5;
    cfg->backoff_min_ms = 500;
    cfg->backoff_max_ms = 30000;
    cfg->maxlag_s = 5;
    cfg->seed = 1;
    cfg->labels = 0;
    cfg->label_wiki = "www.wikidata.org";
}

void fr_enrich_config_from_conf(const struct fr_conf *conf, struct fr_enrich_config *cfg)
{
    fr_enrich_config_init(cfg);
    cfg->api_url = conf->enrich_api_url;
    cfg->user_agent = conf->enrich_user_agent;
    cfg->rate_per_s = (int)conf->enrich_rate_per_s;
    cfg->batch_titles = (int)conf->enrich_batch_titles;
    cfg->max_inflight = (int)conf->enrich_max_inflight;
    cfg->linger_ms = (int)conf->enrich_linger_ms;
    cfg->cache_entries = conf->enrich_cache_entries;
    cfg->cache_bytes = conf->enrich_cache_bytes;
    cfg->queue_cap = conf->enrich_queue_cap;
    cfg->timeout_ms = (int)conf->enrich_timeout_ms;
    cfg->max_attempts = (int)conf->enrich_max_attempts;
    cfg->backoff_min_ms = (int)conf->enrich_backoff_min_ms;
    cfg->backoff_max_ms = (int)conf->enrich_backoff_max_ms;
    cfg->maxlag_s = (int)conf->enrich_maxlag_s;
    cfg->labels = (int)conf->enrich_labels;
}

static int64_t client_mono_ms(void *ctx)
{
    (void)ctx;
    return fr_mono_ms();
}

static void client_sleep_ms(void *ctx, int64_t ms)
{
    (void)ctx;
    fr_sleep_ms(ms);
}

static int64_t client_now(const struct fr_enrich *e)
{
    return e->ops.now_ms(e->ops.ctx);
}

/* ---- key lists -------------------------------------------------------- */

static void list_push(struct fr_enrich *e, struct key_list *l, int k)
{
    e->keys[k].prev = l->tail;
    e->keys[k].next = -1;
    if (l->tail >= 0) {
        e->keys[l->tail].next = k;
    } else {
        l->head = k;
    }
    l->tail = k;
    l->n++;
}

static void list_remove(struct fr_enrich *e, struct key_list *l, int k)
{
    struct enrich_key *key = &e->keys[k];
    if (key->prev >= 0) {
        e->keys[key->prev].next = key->next;
    } else {
        l->head = key->next;
    }
    if (key->next >= 0) {
        e->keys[key->next].prev = key->prev;
    } else {
        l->tail = key->prev;
    }
    key->prev = key->next = -1;
    l->n--;
}

/* Move key k (not on any list) to DONE with its result filled in. */
static void key_done(struct fr_enrich *e, int k)
{
    e->keys[k].state = KEY_DONE;
    e->keys[k].res.attempts = e->keys[k].attempts;
    e->keys[k].res.attempts += e->keys[k].attempts_item;
    list_push(e, &e->done, k);
}

/* The label round's answer (from the cache or a request). */
static void key_label(struct fr_enrich *e, int k, const struct fr_enrich_answer *ans, int cached)
{
    struct fr_enrich_result *r = &e->keys[k].res;
    r->label_why = ans->label_why;
    r->cached = r->cached && cached;
    if (ans->label_why == FR_ENRICH_LABEL_OK && ans->label_len <= FR_ENRICH_LABEL_MAX) {
        memcpy(r->label, ans->label, ans->label_len);
        r->label[ans->label_len] = 0;
        size_t n = strnlen(ans->item, FR_ENRICH_LANG_MAX);
        memcpy(r->label_lang, ans->item, n);
        r->label_lang[n] = 0;
    }
    key_done(e, k);
}

/* The item round's answer. A resolved key with labels on starts its label
 * round: answered from the cache when it can, else queued. */
static void key_answer(struct fr_enrich *e, int k, const struct fr_enrich_answer *ans, int cached)
{
    struct enrich_key *key = &e->keys[k];
    struct fr_enrich_result *r = &key->res;
    r->outcome = ans->outcome;
    r->why = ans->why;
    r->cached = cached;
    snprintf(r->item, sizeof r->item, "%s", ans->item);
    r->label_why = FR_ENRICH_LABEL_OFF;
    if (ans->outcome != FR_ENRICH_RESOLVED || !e->cfg.labels) {
        key_done(e, k);
        return;
    }
    char lang[FR_ENRICH_LANG_MAX + 1];
    (void)fr_enrich_wiki_lang(r->wiki, lang); /* unreadable: English */
    snprintf(key->group, sizeof key->group, "#%s", lang);
    key->label = 1;
    key->attempts_item = key->attempts;
    key->attempts = 0;
    struct fr_enrich_answer la;
    if (fr_enrich_cache_get(e->cache, key->group, r->item, &la)) {
        e->st.cache_hits++;
        key_label(e, k, &la, 1);
        return;
    }
    key->ready_ms = client_now(e);
    key->state = KEY_WAITING;
    list_push(e, &e->waiting, k);
}

/* ---- lifecycle -------------------------------------------------------- */

static int client_wiki_ok(const char *wiki);

static int client_check(const struct fr_enrich_config *c, char *err, size_t errlen)
{
#define BAD(...)                                                                                   \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return FR_ECONFIG;                                                                         \
    } while (0)
    if (!c->api_url || !strstr(c->api_url, "{wiki}") ||
        (strncmp(c->api_url, "http://", 7) != 0 && strncmp(c->api_url, "https://", 8) != 0)) {
        BAD("enrich.api_url must be an http(s) URL containing {wiki}");
    }
    if (!c->user_agent || strlen(c->user_agent) < 8) {
        BAD("enrich.user_agent must describe the client and a contact (Wikimedia's policy)");
    }
    if (c->labels && (!c->label_wiki || !client_wiki_ok(c->label_wiki))) {
        BAD("enrich: the label wiki must be a host name");
    }
    if (c->batch_titles < 1 || c->batch_titles > FR_ENRICH_BATCH_MAX) {
        BAD("enrich.batch_titles must be within [1, %d]", FR_ENRICH_BATCH_MAX);
    }
    if (c->rate_per_s < 0 || c->max_inflight < 1 || c->max_inflight > 256 || c->queue_cap < 1 ||
        c->queue_cap > 10000000 || c->timeout_ms < 1 || c->max_attempts < 1 ||
        c->backoff_min_ms < 1 || c->backoff_max_ms < c->backoff_min_ms || c->linger_ms < 0 ||
        c->maxlag_s < 0 || c->cache_entries < 0 || c->cache_bytes < 0) {
        BAD("enrich: a setting is out of range (see docs/CONFIGURATION.md)");
    }
#undef BAD
    return FR_OK;
}

static size_t client_header(char *buf, size_t size, size_t n, void *ud)
{
    struct enrich_req *req = ud;
    size_t len = size * n;
    static const char name[] = "retry-after:";
    if (len > sizeof name && strncasecmp(buf, name, sizeof name - 1) == 0) {
        char tmp[32];
        size_t m =
            len - (sizeof name - 1) < sizeof tmp - 1 ? len - (sizeof name - 1) : sizeof tmp - 1;
        memcpy(tmp, buf + sizeof name - 1, m);
        tmp[m] = 0;
        long v = strtol(tmp, NULL, 10); /* an HTTP-date gives 0: the backoff applies */
        req->retry_after_s = v > 0 && v < 3600 ? v : 0;
    }
    return len;
}

static size_t client_write(char *buf, size_t size, size_t n, void *ud)
{
    struct enrich_req *req = ud;
    /* Past the cap the transfer fails (CURLE_WRITE_ERROR): a bad answer. */
    return fr_buf_append(&req->body, buf, size * n) == FR_OK ? size * n : 0;
}

int fr_enrich_new(const struct fr_enrich_config *cfg, const struct fr_enrich_ops *ops,
                  struct fr_enrich **out, char *err, size_t errlen)
{
    *out = NULL;
    int rc = client_check(cfg, err, errlen);
    if (rc < 0) {
        return rc;
    }
    struct fr_enrich *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(err, errlen, "out of memory");
        return FR_ENOMEM;
    }
    e->cfg = *cfg;
    e->ops.now_ms = ops && ops->now_ms ? ops->now_ms : client_mono_ms;
    e->ops.sleep_ms = ops && ops->sleep_ms ? ops->sleep_ms : client_sleep_ms;
    e->ops.ctx = ops ? ops->ctx : NULL;
    e->nkeys = (size_t)cfg->queue_cap;
    e->max_keys = (size_t)cfg->batch_titles * 4;
    e->waiting = (struct key_list){-1, -1, 0};
    e->done = (struct key_list){-1, -1, 0};
    e->rng = cfg->seed * 0x9e3779b97f4a7c15ULL + 1;
    e->api_url = strdup(cfg->api_url);
    e->user_agent = strdup(cfg->user_agent);
    e->label_wiki = strdup(cfg->label_wiki ? cfg->label_wiki : "www.wikidata.org");
    e->keys = calloc(e->nkeys, sizeof *e->keys);
    e->cand = calloc(e->nkeys, sizeof *e->cand);
    e->cand_key = calloc(e->nkeys, sizeof *e->cand_key);
    e->pick = calloc(e->max_keys, sizeof *e->pick);
    e->reqs = calloc((size_t)cfg->max_inflight, sizeof *e->reqs);
    e->reply = malloc(sizeof *e->reply);
    rc = FR_ENOMEM;
    if (!e->api_url || !e->user_agent || !e->label_wiki || !e->keys || !e->cand || !e->cand_key || !e->pick ||
        !e->reqs || !e->reply) {
        goto cleanup;
    }
    e->cfg.api_url = e->api_url;
    e->cfg.user_agent = e->user_agent;
    e->cfg.label_wiki = e->label_wiki;
    for (size_t i = 0; i < e->nkeys; i++) {
        e->keys[i].next = i + 1 < e->nkeys ? (int)i + 1 : -1;
        e->keys[i].prev = -1;
    }
    e->free_head = 0;
    if ((rc = fr_enrich_cache_new(cfg->cache_entries, cfg->cache_bytes, &e->cache)) < 0) {
        goto cleanup;
    }
    fr_enrich_bucket_init(&e->bucket, cfg->rate_per_s, cfg->rate_per_s > 1 ? cfg->rate_per_s : 1,
                          client_now(e));
    rc = FR_EIO;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || !(e->multi = curl_multi_init())) {
        goto cleanup;
    }
    for (int i = 0; i < cfg->max_inflight; i++) {
        struct enrich_req *req = &e->reqs[i];
        fr_buf_init(&req->body, CLIENT_BODY_CAP);
        fr_buf_init(&req->url, CLIENT_URL_CAP);
        req->keys = calloc(e->max_keys, sizeof *req->keys);
        req->easy = curl_easy_init();
        if (!req->keys || !req->easy) {
            rc = FR_ENOMEM;
            goto cleanup;
        }
        CURL *h = req->easy;
        curl_easy_setopt(h, CURLOPT_USERAGENT, e->user_agent);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, client_write);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, req);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, client_header);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, req);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)cfg->timeout_ms);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)cfg->timeout_ms);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, ""); /* gzip, as the etiquette asks */
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, req->errbuf);
        curl_easy_setopt(h, CURLOPT_PRIVATE, req);
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    }
    *out = e;
    return FR_OK;
cleanup:
    snprintf(err, errlen, "%s", rc == FR_ENOMEM ? "out of memory" : "cannot initialise libcurl");
    fr_enrich_free(e);
    return rc;
}

void fr_enrich_free(struct fr_enrich *e)
{
    if (!e) {
        return;
    }
    for (int i = 0; e->reqs && i < e->cfg.max_inflight; i++) {
        struct enrich_req *req = &e->reqs[i];
        if (req->active) {
            curl_multi_remove_handle(e->multi, req->easy);
        }
        if (req->easy) {
            curl_easy_cleanup(req->easy);
        }
        fr_buf_free(&req->body);
        fr_buf_free(&req->url);
        free(req->keys);
    }
    if (e->multi) {
        curl_multi_cleanup(e->multi);
    }
    fr_enrich_cache_free(e->cache);
    free(e->reqs);
    free(e->keys);
    free(e->cand);
    free(e->cand_key);
    free(e->pick);
    free(e->reply);
    free(e->api_url);
    free(e->user_agent);
    free(e->label_wiki);
    free(e);
}

/* ---- submit ----------------------------------------------------------- */

static int client_wiki_ok(const char *wiki)
{
    size_t n = strlen(wiki);
    if (n == 0 || n > FR_ENRICH_WIKI_MAX) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        char c = wiki[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_')) {
            return 0;
        }
    }
    return 1;
}

int fr_enrich_submit(struct fr_enrich *e, const char *wiki, const char *title, size_t len,
                     uint64_t tag)
{
    if (!client_wiki_ok(wiki)) {
        return FR_EINVAL;
    }
    if (e->free_head < 0) {
        e->st.rejected_full++;
        return FR_EAGAIN;
    }
    int k = e->free_head;
    struct enrich_key *key = &e->keys[k];
    e->free_head = key->next;
    e->used++;
    memset(key, 0, sizeof *key);
    key->prev = key->next = -1;
    key->tag = tag;
    key->res.tag = tag;
    snprintf(key->res.wiki, sizeof key->res.wiki, "%s", wiki);
    key->enqueued_ms = key->ready_ms = client_now(e);
    e->st.submitted++;
    int n = fr_enrich_norm_title(wiki, title, len, key->res.title);
    if (n < 0) {
        size_t keep = len < FR_ENRICH_TITLE_MAX ? len : FR_ENRICH_TITLE_MAX;
        memcpy(key->res.title, title, keep);
        key->res.title[keep] = 0;
        e->st.invalid_local++;
        struct fr_enrich_answer ans = {.outcome = FR_ENRICH_NO_ITEM, .why = FR_ENRICH_WHY_INVALID};
        key_answer(e, k, &ans, 0);
        return FR_OK;
    }
    struct fr_enrich_answer ans;
    if (fr_enrich_cache_get(e->cache, key->res.wiki, key->res.title, &ans)) {
        e->st.cache_hits++;
        key_answer(e, k, &ans, 1);
        return FR_OK;
    }
    key->state = KEY_WAITING;
    list_push(e, &e->waiting, k);
    return FR_OK;
}

/* ---- requests --------------------------------------------------------- */

/* The URL for req's keys: template with {wiki}, the query, the titles. */
static int client_url(struct fr_enrich *e, struct enrich_req *req, int ntitles)
{
    struct fr_buf *u = &req->url;
    fr_buf_reset(u);
    const char *t = e->api_url, *w = strstr(t, "{wiki}");
    const struct enrich_key *first = &e->keys[req->keys[0]];
    const char *wiki = first->label ? e->label_wiki : first->res.wiki;
    int rc = fr_buf_append(u, t, (size_t)(w - t));
    if (rc == FR_OK) {
        rc = fr_buf_puts(u, wiki);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(u, w + 6);
    }
    if (rc == FR_OK && first->label) {
        const char *lang = first->group + 1;
        rc = fr_buf_printf(u,
                           "%saction=wbgetentities&format=json&props=labels&languages=%s%s",
                           strchr(t, '?') ? "&" : "?", lang,
                           strcmp(lang, "en") == 0 ? "" : "%7Cen");
    } else if (rc == FR_OK) {
        rc = fr_buf_printf(u,
                           "%saction=query&format=json&formatversion=2&prop=pageprops"
                           "&ppprop=wikibase_item",
                           strchr(t, '?') ? "&" : "?");
    }
    if (rc == FR_OK && e->cfg.maxlag_s > 0) {
        rc = fr_buf_printf(u, "&maxlag=%d", e->cfg.maxlag_s);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(u, first->label ? "&ids=" : "&titles=");
    }
    int added = 0;
    for (size_t i = 0; i < req->nkeys && rc == FR_OK; i++) {
        const struct enrich_key *key = &e->keys[req->keys[i]];
        const char *title = key->label ? key->res.item : key->res.title;
        int dup = 0;
        for (size_t j = 0; j < i && !dup; j++) {
            const struct enrich_key *o = &e->keys[req->keys[j]];
            dup = strcmp(o->label ? o->res.item : o->res.title, title) == 0;
        }
        if (dup) {
            continue;
        }
        char *esc = curl_easy_escape(req->easy, title, (int)strlen(title));
        if (!esc) {
            return FR_ENOMEM;
        }
        rc = added++ ? fr_buf_puts(u, "%7C") : FR_OK;
        if (rc == FR_OK) {
            rc = fr_buf_puts(u, esc);
        }
        curl_free(esc);
    }
    (void)ntitles;
    return rc;
}

/* A key's request failed with err: retry later or give up. */
static void client_key_failed(struct fr_enrich *e, int k, int err, const char *why, int retry,
                              int64_t now, int64_t retry_after_ms)
{
    struct enrich_key *key = &e->keys[k];
    if (retry && key->attempts < e->cfg.max_attempts) {
        int64_t delay = fr_enrich_backoff_ms(key->attempts, e->cfg.backoff_min_ms,
                                             e->cfg.backoff_max_ms, &e->rng);
        key->ready_ms = now + (delay > retry_after_ms ? delay : retry_after_ms);
        key->state = KEY_WAITING;
        list_push(e, &e->waiting, k);
        e->st.retries++;
        return;
    }
    key->res.outcome = FR_ENRICH_FAILED;
    key->res.err = err;
    key->res.label_why = FR_ENRICH_LABEL_OFF;
    snprintf(key->res.reason, sizeof key->res.reason, "%s%s (%d attempt%s)",
             key->label ? "labels: " : "", why, key->attempts, key->attempts == 1 ? "" : "s");
    key_done(e, k);
}

/* API error codes worth another attempt (Wikimedia's transient ones). */
static int client_api_retriable(const char *code)
{
    return strcmp(code, "readonly") == 0 || strcmp(code, "ratelimited") == 0 ||
           strncmp(code, "internal_api_error", 18) == 0;
}

/* Key k of a label request whose answer passed fr_enrich_labels_check. */
static void client_label_answer(struct fr_enrich *e, struct enrich_req *req, int k, int64_t now)
{
    struct enrich_key *key = &e->keys[k];
    struct fr_enrich_label *lab = &e->label_scratch;
    int rc = fr_enrich_labels_find((const char *)req->body.data, req->body.len, key->res.item,
                                   key->group + 1, lab);
    if (rc < 0) {
        e->st.bad_answers++;
        client_key_failed(e, k, rc, rc == FR_EPROTO ? "answer does not name the item"
                                                    : "malformed entity", 1, now, 0);
        return;
    }
    struct fr_enrich_answer ans = {FR_ENRICH_RESOLVED, FR_ENRICH_WHY_NONE, "", lab->why, NULL, 0};
    if (lab->why == FR_ENRICH_LABEL_OK) {
        snprintf(ans.item, sizeof ans.item, "%s", lab->lang);
        ans.label = lab->text;
        ans.label_len = strlen(lab->text);
    }
    (void)fr_enrich_cache_put(e->cache, key->group, key->res.item, &ans);
    key_label(e, k, &ans, 0);
}

static void client_finish(struct fr_enrich *e, struct enrich_req *req, CURLcode cc)
{
    int64_t now = client_now(e);
    long status = 0;
    curl_easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &status);
    curl_multi_remove_handle(e->multi, req->easy);
    req->active = 0;
    e->ninflight--;
    int err = FR_OK, retry = 1, prc = FR_OK;
    int label = req->nkeys > 0 && e->keys[req->keys[0]].label;
    char why[96];
    if (cc != CURLE_OK) {
        err = cc == CURLE_OPERATION_TIMEDOUT ? FR_ETIMEOUT : FR_EIO;
        snprintf(why, sizeof why, "transport: %.80s",
                 req->errbuf[0] ? req->errbuf : curl_easy_strerror(cc));
        e->st.transport_errors++;
    } else if (status == 429) {
        err = FR_ERATELIMIT;
        snprintf(why, sizeof why, "HTTP 429");
        e->st.http_429++;
    } else if (status >= 500) {
        err = FR_EHTTP;
        snprintf(why, sizeof why, "HTTP %ld", status);
        e->st.http_5xx++;
    } else if (status != 200) {
        err = FR_EHTTP;
        retry = 0;
        snprintf(why, sizeof why, "HTTP %ld", status);
    } else if ((prc = label ? fr_enrich_labels_check((const char *)req->body.data, req->body.len,
                                                     e->reply->errcode, sizeof e->reply->errcode)
                            : fr_enrich_parse((const char *)req->body.data, req->body.len,
                                              e->reply)) < 0) {
        err = prc;
        if (prc == FR_EMAXLAG) {
            e->st.maxlag++;
            snprintf(why, sizeof why, "maxlag");
        } else if (prc == FR_EAPI) {
            retry = client_api_retriable(e->reply->errcode);
            snprintf(why, sizeof why, "API error %s", e->reply->errcode);
        } else {
            e->st.bad_answers++;
            snprintf(why, sizeof why, "malformed answer");
        }
    }
    int64_t ra_ms = err < 0 ? (int64_t)req->retry_after_s * 1000 : 0;
    if (ra_ms > 0 && now + ra_ms > e->pause_until) {
        e->pause_until = now + ra_ms;
    }
    for (size_t i = 0; i < req->nkeys; i++) {
        int k = req->keys[i];
        if (err < 0) {
            client_key_failed(e, k, err, why, retry, now, ra_ms);
            continue;
        }
        if (label) {
            client_label_answer(e, req, k, now);
            continue;
        }
        const struct fr_enrich_reply_page *page =
            fr_enrich_reply_find(e->reply, e->keys[k].res.title);
        if (!page) {
            e->st.bad_answers++;
            client_key_failed(e, k, FR_EPROTO, "answer does not name the title", 1, now, 0);
            continue;
        }
        struct fr_enrich_answer ans = {.outcome = FR_ENRICH_NO_ITEM, .why = FR_ENRICH_WHY_NO_PROP};
        if (page->invalid) {
            ans.why = FR_ENRICH_WHY_INVALID;
        } else if (page->missing) {
            ans.why = FR_ENRICH_WHY_MISSING;
        } else if (page->item[0]) {
            ans.outcome = FR_ENRICH_RESOLVED;
            ans.why = FR_ENRICH_WHY_NONE;
            snprintf(ans.item, sizeof ans.item, "%s", page->item);
        }
        (void)fr_enrich_cache_put(e->cache, e->keys[k].res.wiki, e->keys[k].res.title, &ans);
        key_answer(e, k, &ans, 0);
    }
    req->nkeys = 0;
}

/* Start as many requests as the limits allow. Returns when the next
 * dispatch could happen (INT64_MAX: only on an event). */
static int64_t client_dispatch(struct fr_enrich *e, int64_t now)
{
    while (e->ninflight < e->cfg.max_inflight && e->waiting.n > 0) {
        if (now < e->pause_until) {
            return e->pause_until;
        }
        size_t n = 0;
        for (int k = e->waiting.head; k >= 0; k = e->keys[k].next) {
            const struct enrich_key *key = &e->keys[k];
            e->cand[n] = key->label
                             ? (struct fr_enrich_cand){key->group, key->res.item, key->ready_ms}
                             : (struct fr_enrich_cand){key->res.wiki, key->res.title,
                                                       key->ready_ms};
            e->cand_key[n++] = k;
        }
        int ntitles = 0;
        int64_t ready_wake;
        size_t npick = fr_enrich_batch_pick(e->cand, n, now, e->cfg.batch_titles, e->max_keys,
                                            e->pick, &ntitles, &ready_wake);
        if (npick == 0) {
            return ready_wake;
        }
        /* Cache answers that arrived since these keys were queued. */
        size_t kept = 0;
        for (size_t i = 0; i < npick; i++) {
            int k = e->cand_key[e->pick[i]];
            struct fr_enrich_answer ans;
            const struct fr_enrich_cand *c = &e->cand[e->pick[i]];
            if (fr_enrich_cache_get(e->cache, c->wiki, c->title, &ans)) {
                list_remove(e, &e->waiting, k);
                e->st.cache_hits++;
                if (e->keys[k].label) {
                    key_label(e, k, &ans, 1);
                } else {
                    key_answer(e, k, &ans, 1);
                }
            } else {
                e->pick[kept++] = e->pick[i];
            }
        }
        if (kept == 0) {
            continue;
        }
        /* Linger: let a batch fill unless it is full or has waited enough. */
        int64_t first_ready = e->keys[e->cand_key[e->pick[0]]].ready_ms;
        if (ntitles < e->cfg.batch_titles && now < first_ready + e->cfg.linger_ms) {
            return first_ready + e->cfg.linger_ms;
        }
        int64_t wait = fr_enrich_bucket_take(&e->bucket, now);
        if (wait > 0) {
            return now + wait;
        }
        struct enrich_req *req = NULL;
        for (int i = 0; i < e->cfg.max_inflight && !req; i++) {
            req = e->reqs[i].active ? NULL : &e->reqs[i];
        }
        req->nkeys = 0;
        for (size_t i = 0; i < kept; i++) {
            int k = e->cand_key[e->pick[i]];
            list_remove(e, &e->waiting, k);
            e->keys[k].state = KEY_INFLIGHT;
            if (e->keys[k].attempts++ == 0) {
                e->st.cache_misses++;
            }
            req->keys[req->nkeys++] = k;
        }
        fr_buf_reset(&req->body);
        req->retry_after_s = 0;
        req->errbuf[0] = 0;
        int rc = client_url(e, req, ntitles);
        if (rc == FR_OK) {
            curl_easy_setopt(req->easy, CURLOPT_URL, fr_buf_cstr(&req->url));
            rc = curl_multi_add_handle(e->multi, req->easy) == CURLM_OK ? FR_OK : FR_EIO;
        }
        if (rc < 0) {
            for (size_t i = 0; i < req->nkeys; i++) {
                client_key_failed(e, req->keys[i], rc, "cannot build the request", 0, now, 0);
            }
            req->nkeys = 0;
            continue;
        }
        req->active = 1;
        e->ninflight++;
        e->st.requests++;
        e->st.label_requests += e->keys[req->keys[0]].label;
    }
    return INT64_MAX;
}

/* Copy finished keys out and free their slots. */
static size_t client_drain(struct fr_enrich *e, struct fr_enrich_result *out, size_t max)
{
    size_t n = 0;
    while (n < max && e->done.head >= 0) {
        int k = e->done.head;
        list_remove(e, &e->done, k);
        out[n++] = e->keys[k].res;
        switch (e->keys[k].res.outcome) {
        case FR_ENRICH_RESOLVED:
            e->st.resolved++;
            break;
        case FR_ENRICH_NO_ITEM:
            e->st.no_item++;
            break;
        default:
            e->st.failed++;
        }
        e->keys[k].state = KEY_FREE;
        e->used--;
        e->keys[k].next = e->free_head;
        e->free_head = k;
    }
    return n;
}

int fr_enrich_poll(struct fr_enrich *e, int timeout_ms, struct fr_enrich_result *out, size_t max)
{
    int64_t now = client_now(e);
    int64_t deadline = now + (timeout_ms > 0 ? timeout_ms : 0);
    for (;;) {
        int64_t wake = client_dispatch(e, now);
        int running = 0;
        if (e->ninflight > 0 && curl_multi_perform(e->multi, &running) != CURLM_OK) {
            return FR_EIO;
        }
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(e->multi, &left)) != NULL) {
            if (msg->msg == CURLMSG_DONE) {
                struct enrich_req *req = NULL;
                curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&req);
                client_finish(e, req, msg->data.result);
            }
        }
        size_t n = client_drain(e, out, max);
        if (n > 0 || max == 0) {
            return (int)n;
        }
        now = client_now(e);
        if (now >= deadline || (e->ninflight == 0 && e->waiting.n == 0)) {
            return 0;
        }
        int64_t wait = deadline - now;
        if (wake != INT64_MAX && wake - now < wait) {
            wait = wake - now > 0 ? wake - now : 0;
        }
        if (e->ninflight > 0) {
            /* Wake for the socket, or for the next dispatch, whichever is first. */
            curl_multi_poll(e->multi, NULL, 0, (int)(wait > 0 ? wait : 1), NULL);
        } else if (wait > 0) {
            e->ops.sleep_ms(e->ops.ctx, wait);
        }
        now = client_now(e);
    }
}

size_t fr_enrich_pending(const struct fr_enrich *e)
{
    return e->used;
}

void fr_enrich_stats_get(const struct fr_enrich *e, struct fr_enrich_stats *st)
{
    *st = e->st;
    st->cache_evictions = fr_enrich_cache_evictions(e->cache);
    st->cache_entries = fr_enrich_cache_entries(e->cache);
    st->cache_bytes = fr_enrich_cache_bytes(e->cache);
    st->inflight = e->ninflight;
    st->queued = (int64_t)e->waiting.n;
}
