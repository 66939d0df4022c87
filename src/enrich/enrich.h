/*
 * enrich.h — the enrichment lookup client: (wiki, title) to its Wikidata
 * item through the MediaWiki API (action=query&prop=pageprops&ppprop=
 * wikibase_item), off the caller's hot path.
 *
 * The caller submits keys and polls for results; nothing blocks but
 * fr_enrich_poll, and only up to the timeout it is given. In between:
 *   - a bounded cache (LRU, entries and bytes capped) answers keys already
 *     resolved or known to have no item, without a request;
 *   - a bounded pending queue (fr_enrich_submit returns FR_EAGAIN when it is
 *     full: backpressure, never growth);
 *   - keys are batched per wiki, up to 50 titles per request (the API's
 *     limit), after a short linger so batches fill;
 *   - a token bucket caps requests per second, at most K requests are in
 *     flight (libcurl multi, one connection per request slot);
 *   - API etiquette: a descriptive User-Agent, maxlag=5, Retry-After
 *     honoured, exponential backoff with jitter on 429, 5xx, maxlag and
 *     transport errors, at most N attempts, then outcome FAILED with a reason.
 * docs/ENRICH.md is the full description; ADR 0017 the decisions.
 *
 * Threads: a struct fr_enrich belongs to one thread (the one that created
 * it); every call must come from that thread. libcurl runs inside
 * fr_enrich_poll on that thread.
 */
#ifndef FR_ENRICH_H
#define FR_ENRICH_H

#include <stddef.h>
#include <stdint.h>

#define FR_ENRICH_WIKI_MAX 63   /* bytes of a wiki name (db name or host) */
#define FR_ENRICH_TITLE_MAX 255 /* bytes of a normalised title (MediaWiki's limit) */
#define FR_ENRICH_BATCH_MAX 50  /* titles per request (the API's limit) */
#define FR_ENRICH_LABEL_MAX 1024 /* bytes of a label: Wikidata's 250 characters fit */
#define FR_ENRICH_LANG_MAX 15    /* bytes of a language code ("be-tarask") */

enum fr_enrich_outcome {
    FR_ENRICH_RESOLVED = 1, /* item holds the Q-id */
    FR_ENRICH_NO_ITEM,      /* the page has no item: talk/user pages, missing, invalid */
    FR_ENRICH_FAILED        /* the lookup failed: err and reason say why */
};

/* Why a key has no item (NO_ITEM only). */
enum fr_enrich_why {
    FR_ENRICH_WHY_NONE = 0,
    FR_ENRICH_WHY_NO_PROP, /* the page exists without a wikibase_item */
    FR_ENRICH_WHY_MISSING, /* the API says "missing" (deleted or never created) */
    FR_ENRICH_WHY_INVALID  /* the title is invalid (by the API, or locally before any request) */
};

/* Why a resolved key has no label (labels on, RESOLVED only; label.c). */
enum fr_enrich_label_why {
    FR_ENRICH_LABEL_OK = 0,    /* label and label_lang are set */
    FR_ENRICH_LABEL_NONE,      /* the item has no label in the wiki's language nor in English */
    FR_ENRICH_LABEL_MISSING,   /* Wikidata says the item is missing (deleted) */
    FR_ENRICH_LABEL_OFF        /* labels are not looked up (cfg.labels == 0) */
};

struct fr_enrich_result {
    uint64_t tag; /* what the caller passed to fr_enrich_submit */
    enum fr_enrich_outcome outcome;
    enum fr_enrich_why why;
    int cached;       /* answered from the cache, no request made for it */
    int attempts;     /* requests this key took part in */
    int err;          /* FAILED: the last error (FR_EHTTP, FR_ERATELIMIT, FR_EMAXLAG, ...) */
    char item[24];    /* RESOLVED: "Q42" */
    char reason[128]; /* FAILED: e.g. "HTTP 503 (5 attempts)"; else empty */
    char wiki[FR_ENRICH_WIKI_MAX + 1];
    char title[FR_ENRICH_TITLE_MAX + 1]; /* normalised as the client does (norm.c) */
    /* RESOLVED with labels on: the item's label in the wiki's content
     * language, else English (label_lang says which), else empty with
     * label_why saying why. */
    enum fr_enrich_label_why label_why;
    char label_lang[FR_ENRICH_LANG_MAX + 1];
    char label[FR_ENRICH_LABEL_MAX + 1];
};

/* Settings; fr_enrich_config_init sets the defaults of the [enrich] section
 * of src/conf/conf_table.h. Strings are borrowed until fr_enrich_new returns
 * (they are copied). */
struct fr_enrich_config {
    const char *api_url;    /* template; "{wiki}" is replaced by the key's wiki */
    const char *user_agent; /* sent on every request */
    int rate_per_s;         /* requests per second (token bucket, burst = max(1, rate)) */
    int batch_titles;       /* 1..50 */
    int max_inflight;       /* requests at once */
    int linger_ms;          /* wait this long for a batch to fill */
    int64_t cache_entries;  /* 0 disables the cache */
    int64_t cache_bytes;
    int64_t queue_cap; /* keys pending (queued, in flight or with a result not yet polled) */
    int timeout_ms;    /* per request, connect included */
    int max_attempts;
    int backoff_min_ms;
    int backoff_max_ms;
    int maxlag_s;  /* 0: no maxlag parameter */
    uint64_t seed; /* for the backoff jitter */
    /* 1: a resolved key's result waits for its item's label (wbgetentities
     * on label_wiki, props=labels, up to batch_titles ids a request) with
     * the same cache, rate limit, backoff and attempts. 0 (the library's
     * default; `enrich.labels` turns it on in freshet): label_why OFF. */
    int labels;
    const char *label_wiki; /* "{wiki}" in api_url becomes this: www.wikidata.org */
};

void fr_enrich_config_init(struct fr_enrich_config *cfg);

/* The content language of wiki (a host as in server_name, or a database
 * name) as Wikidata names languages: "fr.wikipedia.org" and "frwiki" are
 * "fr", "no.wikipedia.org" is "nb", "simple.wikipedia.org" is "en",
 * multilingual wikis (Wikidata, Commons, Meta, ...) are "en". Writes
 * out[FR_ENRICH_LANG_MAX + 1]; FR_EINVAL (out "en") for a name it cannot
 * read. Any thread. */
int fr_enrich_wiki_lang(const char *wiki, char out[FR_ENRICH_LANG_MAX + 1]);

struct fr_conf;
/* Fill cfg from the [enrich] section of conf (strings borrowed from conf). */
void fr_enrich_config_from_conf(const struct fr_conf *conf, struct fr_enrich_config *cfg);

/* Clock and sleep, so tests run the scheduling on a fake clock. NULL ops
 * (or NULL members) mean the monotonic clock and nanosleep. */
struct fr_enrich_ops {
    int64_t (*now_ms)(void *ctx);
    void (*sleep_ms)(void *ctx, int64_t ms);
    void *ctx;
};

struct fr_enrich;

/* Create a client. FR_ECONFIG with a message in err for bad settings,
 * FR_ENOMEM. The caller owns *out and frees it with fr_enrich_free. ops is
 * copied (its ctx must outlive the client). */
int fr_enrich_new(const struct fr_enrich_config *cfg, const struct fr_enrich_ops *ops,
                  struct fr_enrich **out, char *err, size_t errlen);
/* Abort requests in flight and free everything. Accepts NULL. Keys still
 * pending are dropped: the caller must hold them in its own checkpointed
 * state (see fr_enrich_pending). */
void fr_enrich_free(struct fr_enrich *enrich);

/* Submit (wiki, title[0..len)) with the caller's tag. FR_OK: a result will
 * come out of fr_enrich_poll (immediately for a cache hit or an invalid
 * title). FR_EAGAIN: the pending queue is full; poll and retry. FR_EINVAL:
 * wiki is empty, too long or has characters outside [A-Za-z0-9.-_]. The
 * strings are copied. */
int fr_enrich_submit(struct fr_enrich *enrich, const char *wiki, const char *title, size_t len,
                     uint64_t tag);
/* Drive the lookups for up to timeout_ms (0: do what can be done now) and
 * copy up to max results into out. Returns the number of results (returns
 * as soon as there is at least one), or a negative code on a fatal error. */
int fr_enrich_poll(struct fr_enrich *enrich, int timeout_ms, struct fr_enrich_result *out,
                   size_t max);
/* Keys submitted whose result has not been polled yet. */
size_t fr_enrich_pending(const struct fr_enrich *enrich);

struct fr_enrich_stats {
    int64_t submitted, resolved, no_item, failed; /* outcomes polled out */
    int64_t cache_hits, cache_misses, cache_evictions, cache_entries, cache_bytes;
    int64_t invalid_local; /* titles found invalid before any request */
    int64_t requests;      /* HTTP requests started (label requests included) */
    int64_t label_requests; /* of them, wbgetentities requests for labels */
    int64_t retries;       /* keys sent again after a failed request */
    int64_t http_429, http_5xx, maxlag, transport_errors, bad_answers;
    int64_t rejected_full; /* submits refused with FR_EAGAIN */
    int64_t inflight, queued;
};
void fr_enrich_stats_get(const struct fr_enrich *enrich, struct fr_enrich_stats *stats);

#endif
