/*
 * enrich_int.h — private to src/enrich and its unit tests: the token bucket
 * and backoff (limit.c), the LRU cache (cache.c), title normalisation
 * (norm.c) and the API answer parser (parse.c). All of it is plain data
 * owned by one client on one thread; nothing here locks.
 */
#ifndef FR_ENRICH_INT_H
#define FR_ENRICH_INT_H

#include "enrich/enrich.h"

#include <stddef.h>
#include <stdint.h>

/* ---- token bucket and backoff (limit.c) ------------------------------ */

/* rate tokens per second, up to burst; rate 0 means unlimited. Starts full. */
struct fr_enrich_bucket {
    double rate, burst, tokens;
    int64_t last_ms;
};

void fr_enrich_bucket_init(struct fr_enrich_bucket *bucket, double rate, double burst,
                           int64_t now_ms);
/* Take one token: 0 when taken, else the ms until one is available (nothing
 * is taken then). A clock that goes backwards adds no tokens. */
int64_t fr_enrich_bucket_take(struct fr_enrich_bucket *bucket, int64_t now_ms);

/* Delay before attempt number attempt + 1 (attempt >= 1 failed so far):
 * base = min(max_ms, min_ms * 2^(attempt-1)), the delay uniform in
 * [base/2, base] ("equal jitter"), drawn from *rng (splitmix64 state). */
int64_t fr_enrich_backoff_ms(int attempt, int min_ms, int max_ms, uint64_t *rng);

/* ---- batching (limit.c) --------------------------------------------- */

/* A key waiting for a request, as the batcher sees it. */
struct fr_enrich_cand {
    const char *wiki;
    const char *title; /* normalised */
    int64_t ready_ms;  /* when it may be sent (after its backoff) */
};

/* Choose the next request from the waiting keys cand[0..n) (oldest first):
 * the first key ready at now, then every later ready key of the same wiki,
 * up to batch_titles distinct titles and max_keys keys (a title asked twice
 * rides along without counting). Writes their indexes to out and the number
 * of distinct titles to *ntitles; returns the number of keys (0: none ready).
 * *wake receives the earliest ready_ms still in the future (INT64_MAX when
 * none). */
size_t fr_enrich_batch_pick(const struct fr_enrich_cand *cand, size_t n, int64_t now,
                            int batch_titles, size_t max_keys, size_t *out, int *ntitles,
                            int64_t *wake);

/* ---- LRU cache (cache.c) --------------------------------------------- */

/* What the cache keeps for a key: RESOLVED with its item, or NO_ITEM.
 * A label key (wiki "#<lang>", title the item) keeps its label choice:
 * label_why, item holds the label's language, label[0..label_len) the text
 * (borrowed: from the caller on put, from the cache on get, valid until the
 * next put). */
struct fr_enrich_answer {
    enum fr_enrich_outcome outcome;
    enum fr_enrich_why why;
    char item[24];
    enum fr_enrich_label_why label_why;
    const char *label;
    size_t label_len;
};

struct fr_enrich_cache;

/* max_entries 0 makes a cache that keeps nothing. FR_ENOMEM. */
int fr_enrich_cache_new(int64_t max_entries, int64_t max_bytes, struct fr_enrich_cache **out);
void fr_enrich_cache_free(struct fr_enrich_cache *cache);
/* 1 and *ans on a hit (the entry becomes the most recent), 0 on a miss. */
int fr_enrich_cache_get(struct fr_enrich_cache *cache, const char *wiki, const char *title,
                        struct fr_enrich_answer *ans);
/* Insert or replace, then evict least-recent entries until both caps hold.
 * FR_ETOOBIG when one entry alone exceeds max_bytes (nothing stored). */
int fr_enrich_cache_put(struct fr_enrich_cache *cache, const char *wiki, const char *title,
                        const struct fr_enrich_answer *ans);
/* Bytes an entry for these key lengths is charged (struct + key text); a
 * label is charged its length + 1 on top. */
size_t fr_enrich_cache_entry_bytes(size_t wiki_len, size_t title_len);
int64_t fr_enrich_cache_entries(const struct fr_enrich_cache *cache);
int64_t fr_enrich_cache_bytes(const struct fr_enrich_cache *cache);
int64_t fr_enrich_cache_evictions(const struct fr_enrich_cache *cache);

/* ---- title normalisation (norm.c) ------------------------------------ */

/* Normalise title[0..len) for wiki as MediaWiki does without knowing the
 * wiki's namespaces: '_' to ' ', runs of spaces collapsed, ends trimmed, one
 * leading ':' dropped, the first letter upper-cased (not on Wiktionaries).
 * Writes a NUL-terminated title to out[FR_ENRICH_TITLE_MAX + 1]. Returns its
 * length, or FR_EINVAL when the title is invalid (empty, too long, bad
 * UTF-8, a control character or one of # < > [ ] { } |). */
int fr_enrich_norm_title(const char *wiki, const char *title, size_t len,
                         char out[FR_ENRICH_TITLE_MAX + 1]);
/* Whether wiki (db name or host) is a Wiktionary (no first-letter case). */
int fr_enrich_norm_is_wiktionary(const char *wiki);
/* Simple upper-case mapping of the first letter (Latin-1, Latin Extended-A,
 * Greek, Cyrillic, Armenian; others unchanged). */
uint32_t fr_enrich_norm_upper(uint32_t cp);

/* ---- API answers (parse.c) ------------------------------------------- */

#define FR_ENRICH_REPLY_MAX 64 /* pages / normalized entries accepted per answer */

struct fr_enrich_reply_page {
    char title[FR_ENRICH_TITLE_MAX * 2 + 1];
    int missing, invalid;
    char item[24]; /* empty when no wikibase_item */
};

struct fr_enrich_reply {
    char errcode[64]; /* error.code when the answer is an error */
    int nnorm, npages;
    struct {
        char from[FR_ENRICH_TITLE_MAX * 2 + 1];
        char to[FR_ENRICH_TITLE_MAX * 2 + 1];
    } norm[FR_ENRICH_REPLY_MAX];
    struct fr_enrich_reply_page pages[FR_ENRICH_REPLY_MAX];
};

struct fr_json_val;
/* The top of any MediaWiki API answer body (pageprops and wbgetentities
 * alike): one valid JSON object, into root. FR_OK: no "error" member.
 * FR_EMAXLAG: the maxlag error; FR_EAPI: another error, its code in
 * errcode[cap]; FR_EJSON: not such a body (or an error without a string
 * code that fits). errcode is "" unless FR_EAPI or FR_EMAXLAG. */
int fr_enrich_api_root(const char *body, size_t len, struct fr_json_val *root, char *errcode,
                       size_t cap);

/* Parse a formatversion=2 answer body. FR_OK: reply holds the pages and the
 * normalized list. FR_EMAXLAG: the maxlag error. FR_EAPI: another error
 * (errcode says which). FR_EJSON: not JSON, or not the shape of an answer
 * (pages not an array, a page without a title, an item that is not a
 * Q-id, more than FR_ENRICH_REPLY_MAX entries, ...). */
int fr_enrich_parse(const char *body, size_t len, struct fr_enrich_reply *reply);
/* Find the page answering the title sent (through the normalized list);
 * NULL when the answer does not mention it. */
const struct fr_enrich_reply_page *fr_enrich_reply_find(const struct fr_enrich_reply *reply,
                                                        const char *sent);

/* ---- labels: wbgetentities answers (label.c) ------------------------- */

/* The label chosen for one item. */
struct fr_enrich_label {
    enum fr_enrich_label_why why;
    char lang[FR_ENRICH_LANG_MAX + 1];
    char text[FR_ENRICH_LABEL_MAX + 1];
};

/* Check a wbgetentities answer body as a whole: FR_OK (an object with an
 * "entities" object), FR_EMAXLAG, FR_EAPI (errcode[cap] says which), or
 * FR_EJSON. */
int fr_enrich_labels_check(const char *body, size_t len, char *errcode, size_t cap);
/* The label of item id (e.g. "Q42") in a checked answer, chosen for lang:
 * labels[lang] when present, else labels["en"], else why NONE; why MISSING
 * when the entity is marked missing. FR_EPROTO when the answer does not
 * mention id, FR_EJSON for a malformed entity or a label past
 * FR_ENRICH_LABEL_MAX bytes. */
int fr_enrich_labels_find(const char *body, size_t len, const char *id, const char *lang,
                          struct fr_enrich_label *out);

#endif
