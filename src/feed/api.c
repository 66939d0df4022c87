/*
 * api.c — the feed's MediaWiki-API fixture: `GET /api/<wiki>/w/api.php?
 * action=query&prop=pageprops&ppprop=wikibase_item&titles=A|B&format=json&
 * formatversion=2[&maxlag=N]` for the pages the generator invents, so the
 * enrichment client (src/enrich) runs offline. docs/ENRICH.md is the spec.
 *
 * Which wiki: the path segment after /api/ names it, either by database name
 * (`enwiki`) or by host (`en.wikipedia.org`, the events' server_name), for
 * any wiki of the generator's table. The real API's URL is
 * https://<server_name>/w/api.php, so a URL template "…/api/{wiki}/w/api.php"
 * fed with server_name works against both.
 *
 * Answers are a pure function of (wiki, title) — independent of the seed, of
 * the order of requests and of the batch a title arrives in:
 *   1. normalise as MediaWiki does (fr_feed_api_page: underscores to spaces,
 *      runs of spaces collapsed, trimmed, a leading ':' dropped, known
 *      namespace prefixes matched case-insensitively and written in their
 *      canonical form, first letter upper-cased except on Wiktionaries);
 *   2. invalid: empty, longer than 255 bytes, bad UTF-8, or one of # < > [ ]
 *      { } | or a control character;
 *   3. talk namespaces (odd), User (2), File (6) and Wikidata's Property,
 *      Lexeme and EntitySchema pages exist but carry no wikibase_item
 *      (10 % of user pages are missing);
 *   4. Wikidata main namespace: "Q<n>" is item Q<n>, anything else missing;
 *   5. any other page: h = H(db, title); h % 100 < 4 missing (deleted),
 *      < 12 exists without an item, else, with t = H(ns, text) where text
 *      is the title without its namespace prefix: for an article (ns 0)
 *      with t % 100 < 40, one of 200 shared topics, item Q(1 + x² / 200)
 *      with x = (h >> 20) % 200, so that items trend across wikis; otherwise
 *      Q(1 + t % 125000000), which does not depend on the wiki: the same
 *      title in any language names the same topic (ADR 0017 says why).
 *   H is FNV-1a 64 over the bytes, finished with splitmix64's mixer.
 *
 * Faults (per request, decided from (seed, request number), so a run with
 * the same flags and the same request sequence sees the same faults):
 *   latency ─► rate limit (token bucket, 429 + Retry-After: 1)
 *           ─► u < error_rate: 503 ─► u < +429_rate: 429 + Retry-After: 1
 *           ─► maxlag given and u < +maxlag_rate: the maxlag error (HTTP 200,
 *              Retry-After: 1, X-Database-Lag) ─► the answer.
 *
 * Labels (issue 33): action=wbgetentities on the Wikidata host answers
 * items' labels (api_labels.c), after the same fault draw.
 *
 * Threads: called on the connection's MHD thread; counters are atomics and
 * the rate bucket has its own mutex.
 */
#include "feed/feed_int.h"

#include "core/utf8.h"
#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API_BODY_CAP ((size_t)4 << 20)
#define API_MAX_TITLES 50

struct fr_feed_api {
    const struct fr_feed_stream *stream;
    atomic_llong counters[FR_FEED_API_NCOUNTERS];
    atomic_llong seq; /* request number, for the fault draw */
    pthread_mutex_t mu;
    double tokens;
    int64_t refill_ns;
};

static const char *const api_counter_names[FR_FEED_API_NCOUNTERS] = {
#define API_NAME(sym, name, doc) name,
    FR_FEED_API_COUNTERS(API_NAME)
#undef API_NAME
};

const char *fr_feed_api_counter_name(int counter)
{
    return counter >= 0 && counter < FR_FEED_API_NCOUNTERS ? api_counter_names[counter] : "?";
}

/* ---- the deterministic answers ---------------------------------------- */

static uint64_t api_hash(uint64_t h, const void *p, size_t len)
{
    const uint8_t *s = p;
    for (size_t i = 0; i < len; i++) {
        h = (h ^ s[i]) * 1099511628211ULL;
    }
    return h;
}

#define API_FNV_BASIS 1469598103934665603ULL

int fr_feed_api_wiki(const char *name, size_t len)
{
    for (size_t i = 0; i < fr_feed_nwikis; i++) {
        const struct fr_feed_wiki *w = &fr_feed_wikis[i];
        if ((strlen(w->db) == len && memcmp(w->db, name, len) == 0) ||
            (strlen(w->host) == len && memcmp(w->host, name, len) == 0)) {
            return (int)i;
        }
    }
    return -1;
}

/* Upper-case the code point where MediaWiki's ucfirst would for the scripts
 * the generator writes (Latin-1, Latin Extended-A, Greek, Cyrillic,
 * Armenian); other code points are returned unchanged. */
uint32_t fr_feed_api_upper(uint32_t cp)
{
    if (cp >= 'a' && cp <= 'z') {
        return cp - 32;
    }
    if (cp >= 0xE0 && cp <= 0xFE && cp != 0xF7) {
        return cp - 0x20;
    }
    if ((cp >= 0x101 && cp <= 0x137 && (cp & 1)) || (cp >= 0x14B && cp <= 0x177 && (cp & 1))) {
        return cp - 1;
    }
    if ((cp >= 0x13A && cp <= 0x148 && !(cp & 1)) || (cp >= 0x17A && cp <= 0x17E && !(cp & 1))) {
        return cp - 1;
    }
    if (cp >= 0x3B1 && cp <= 0x3C9 && cp != 0x3C2) {
        return cp - 0x20;
    }
    if (cp >= 0x430 && cp <= 0x44F) {
        return cp - 0x20;
    }
    if (cp >= 0x450 && cp <= 0x45F) {
        return cp - 0x50;
    }
    if (cp >= 0x561 && cp <= 0x586) {
        return cp - 0x30;
    }
    return cp;
}

/* Decode one UTF-8 code point at s[0..len); returns its length, 0 when bad. */
static size_t api_cp(const uint8_t *s, size_t len, uint32_t *cp)
{
    if (len == 0) {
        return 0;
    }
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    size_t n = (s[0] & 0xE0) == 0xC0   ? 2
               : (s[0] & 0xF0) == 0xE0 ? 3
               : (s[0] & 0xF8) == 0xF0 ? 4
                                       : 0;
    if (n == 0 || n > len) {
        return 0;
    }
    uint32_t v = s[0] & (0x7F >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            return 0;
        }
        v = (v << 6) | (s[i] & 0x3F);
    }
    *cp = v;
    return n;
}

/* Case-insensitive (ASCII) comparison of a prefix with a namespace name. */
static int api_ns_eq(const char *s, size_t len, const char *name)
{
    if (!name || strlen(name) != len) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char a = (unsigned char)s[i], b = (unsigned char)name[i];
        if (a >= 'A' && a <= 'Z') {
            a = (unsigned char)(a + 32);
        }
        if (b >= 'A' && b <= 'Z') {
            b = (unsigned char)(b + 32);
        }
        if (a != b) {
            return 0;
        }
    }
    return 1;
}

/* The namespace named by prefix s[0..len) on wiki w; -1 when none. *canon
 * receives the canonical (localised) name. */
static int api_ns_of(const struct fr_feed_wiki *w, const char *s, size_t len, const char **canon)
{
    struct fr_feed_lang l, en;
    fr_feed_lang_resolve(w->ns_lang, &l);
    fr_feed_lang_resolve("en", &en);
    const struct {
        int ns;
        const char *local, *english;
    } names[] = {{1, l.talk, en.talk},
                 {2, l.user, en.user},
                 {3, l.user_talk, en.user_talk},
                 {6, l.file, en.file},
                 {10, l.tmpl, en.tmpl},
                 {12, l.help, en.help},
                 {14, l.category, en.category},
                 {118, "Draft", "Draft"},
                 {120, "Property", "Property"},
                 {146, "Lexeme", "Lexeme"},
                 {640, "EntitySchema", "EntitySchema"},
                 {828, "Module", "Module"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (api_ns_eq(s, len, names[i].local) || api_ns_eq(s, len, names[i].english)) {
            *canon = names[i].local;
            return names[i].ns;
        }
    }
    return -1;
}

/* Copy src[0..len) into out (cap bytes) with '_' as ' ', runs of spaces
 * collapsed and both ends trimmed. Returns the length, or -1 when too long. */
static int api_spaces(const char *src, size_t len, char *out, size_t cap)
{
    size_t n = 0;
    int space = 1; /* drop leading spaces */
    for (size_t i = 0; i < len; i++) {
        char c = src[i] == '_' ? ' ' : src[i];
        if (c == ' ') {
            if (space) {
                continue;
            }
            space = 1;
        } else {
            space = 0;
        }
        if (n + 1 >= cap) {
            return -1;
        }
        out[n++] = c;
    }
    while (n > 0 && out[n - 1] == ' ') {
        n--;
    }
    out[n] = 0;
    return (int)n;
}

/* Append s[0..len) to page->title with its first letter upper-cased. */
static void api_put_ucfirst(struct fr_feed_page *page, size_t *at, const char *s, size_t len,
                            int capital)
{
    uint32_t cp;
    size_t n = capital ? api_cp((const uint8_t *)s, len, &cp) : 0;
    if (n) {
        *at += fr_utf8_put(page->title + *at, fr_feed_api_upper(cp));
        s += n;
        len -= n;
    }
    memcpy(page->title + *at, s, len);
    *at += len;
    page->title[*at] = 0;
}

static void api_invalid(struct fr_feed_page *page, const char *reason)
{
    page->kind = FR_FEED_PAGE_INVALID;
    page->ns = 0;
    page->reason = reason;
}

int fr_feed_api_page(int wiki, const char *title, size_t len, struct fr_feed_page *page)
{
    memset(page, 0, sizeof *page);
    if (wiki < 0 || (size_t)wiki >= fr_feed_nwikis) {
        return FR_EINVAL;
    }
    const struct fr_feed_wiki *w = &fr_feed_wikis[wiki];
    /* The original text, for "invalid" answers (which echo it). */
    size_t keep = len < sizeof page->title - 1 ? len : sizeof page->title - 1;
    memcpy(page->title, title, keep);
    page->title[keep] = 0;
    char tmp[FR_FEED_TITLE_MAX * 2];
    int n = api_spaces(title, len, tmp, sizeof tmp);
    if (n < 0) {
        api_invalid(page, "The requested page title is too long.");
        return FR_OK;
    }
    const char *s = tmp;
    if (n > 0 && *s == ':') {
        s++;
        n--;
        while (n > 0 && *s == ' ') {
            s++;
            n--;
        }
    }
    for (int i = 0; i < n;) {
        uint32_t cp;
        size_t k = api_cp((const uint8_t *)s + i, (size_t)(n - i), &cp);
        if (k == 0) {
            api_invalid(page, "The requested page title contains invalid UTF-8.");
            return FR_OK;
        }
        if (cp < 0x20 || cp == 0x7F || (cp < 0x80 && strchr("#<>[]{}|", (int)cp))) {
            api_invalid(page, "The requested page title contains invalid characters.");
            return FR_OK;
        }
        i += (int)k;
    }
    if (n == 0) {
        api_invalid(page, "The requested page title is empty or contains only the name of a "
                          "namespace.");
        return FR_OK;
    }
    int capital = w->family != FR_FEED_WIKT;
    const char *colon = memchr(s, ':', (size_t)n);
    const char *canon = NULL;
    int ns = 0;
    if (colon) {
        size_t plen = (size_t)(colon - s);
        while (plen > 0 && s[plen - 1] == ' ') {
            plen--;
        }
        ns = api_ns_of(w, s, plen, &canon);
        if (ns < 0) {
            ns = 0;
        }
    }
    const char *text = s;
    size_t tlen = (size_t)n;
    if (canon) {
        text = colon + 1;
        tlen = (size_t)(s + n - text);
        while (tlen > 0 && *text == ' ') {
            text++;
            tlen--;
        }
        if (tlen == 0) {
            api_invalid(page, "The requested page title is empty or contains only the name of a "
                              "namespace.");
            return FR_OK;
        }
    }
    size_t at = 0;
    if (canon) {
        memcpy(page->title, canon, strlen(canon));
        at = strlen(canon);
        page->title[at++] = ':';
    }
    size_t text_at = at;
    api_put_ucfirst(page, &at, text, tlen, capital || ns != 0);
    if (at > FR_FEED_TITLE_MAX) {
        memcpy(page->title, title, keep);
        page->title[keep] = 0;
        api_invalid(page, "The requested page title is too long.");
        return FR_OK;
    }
    page->ns = ns;
    uint64_t h =
        fr_feed_mix64(api_hash(api_hash(API_FNV_BASIS, w->db, strlen(w->db) + 1), page->title, at));
    page->pageid = 1 + (int64_t)(h % 80000000);
    const char *body = page->title + text_at;
    size_t blen = at - text_at;
    if (w->family == FR_FEED_WIKIDATA && ns == 0) {
        int64_t q = 0;
        int ok = blen >= 2 && blen <= 12 && body[0] == 'Q' && body[1] >= '1' && body[1] <= '9';
        for (size_t i = 1; ok && i < blen; i++) {
            ok = body[i] >= '0' && body[i] <= '9';
            q = q * 10 + (body[i] - '0');
        }
        page->kind = ok ? FR_FEED_PAGE_ITEM : FR_FEED_PAGE_MISSING;
        page->qid = ok ? q : 0;
        return FR_OK;
    }
    if ((ns & 1) || ns == 2 || ns == 6 || ns == 120 || ns == 146 || ns == 640) {
        page->kind = ns == 2 && h % 10 == 0 ? FR_FEED_PAGE_MISSING : FR_FEED_PAGE_NO_ITEM;
        return FR_OK;
    }
    if (h % 100 < 4) {
        page->kind = FR_FEED_PAGE_MISSING;
    } else if (h % 100 < 12) {
        page->kind = FR_FEED_PAGE_NO_ITEM;
    } else {
        uint32_t ns32 = (uint32_t)ns;
        uint64_t t =
            fr_feed_mix64(api_hash(api_hash(API_FNV_BASIS, &ns32, sizeof ns32), body, blen));
        page->kind = FR_FEED_PAGE_ITEM;
        /* 40 % of the articles are about one of 200 shared topics, picked
         * by the page's own hash and skewed toward the first (x² / 200 for
         * x uniform in 0..199): the generator's titles differ between
         * languages, so this is what makes items trend across wikis. */
        uint64_t x = (h >> 20) % 200;
        page->qid = ns == 0 && t % 100 < 40 ? 1 + (int64_t)(x * x / 200)
                                            : 1 + (int64_t)(t % 125000000);
    }
    return FR_OK;
}

/* ---- the endpoint ----------------------------------------------------- */

int fr_feed_api_new(const struct fr_feed_stream *stream, struct fr_feed_api **out)
{
    struct fr_feed_api *api = calloc(1, sizeof *api);
    if (!api) {
        return FR_ENOMEM;
    }
    api->stream = stream;
    for (int i = 0; i < FR_FEED_API_NCOUNTERS; i++) {
        atomic_init(&api->counters[i], 0);
    }
    atomic_init(&api->seq, 0);
    pthread_mutex_init(&api->mu, NULL);
    double rl = fr_feed_stream_opts(stream)->api_rate_limit;
    api->tokens = rl > 0 ? (rl < 1 ? 1 : rl) : 0;
    api->refill_ns = fr_mono_ns();
    *out = api;
    return FR_OK;
}

void fr_feed_api_free(struct fr_feed_api *api)
{
    if (!api) {
        return;
    }
    pthread_mutex_destroy(&api->mu);
    free(api);
}

int64_t fr_feed_api_counter(const struct fr_feed_api *api, int counter)
{
    if (!api || counter < 0 || counter >= FR_FEED_API_NCOUNTERS) {
        return 0;
    }
    return atomic_load(&((struct fr_feed_api *)api)->counters[counter]);
}

static void api_count(struct fr_feed_api *api, int counter, int64_t n)
{
    atomic_fetch_add(&api->counters[counter], n);
}

int fr_feed_api_counters_json(const struct fr_feed_api *api, struct fr_buf *out)
{
    int rc = fr_buf_putc(out, '{');
    for (int i = 0; i < FR_FEED_API_NCOUNTERS && rc == FR_OK; i++) {
        rc = fr_buf_printf(out, "%s\"%s\":%lld", i ? "," : "", api_counter_names[i],
                           (long long)fr_feed_api_counter(api, i));
    }
    return rc == FR_OK ? fr_buf_putc(out, '}') : rc;
}

/* The server's token bucket: 1 when the request may go ahead. Burst = one
 * second's worth (at least 1). */
static int api_bucket_take(struct fr_feed_api *api, double rate)
{
    if (rate <= 0) {
        return 1;
    }
    double burst = rate < 1 ? 1 : rate;
    pthread_mutex_lock(&api->mu);
    int64_t now = fr_mono_ns();
    api->tokens += (double)(now - api->refill_ns) / 1e9 * rate;
    api->refill_ns = now;
    if (api->tokens > burst) {
        api->tokens = burst;
    }
    int ok = api->tokens >= 1;
    if (ok) {
        api->tokens -= 1;
    }
    pthread_mutex_unlock(&api->mu);
    return ok;
}

static enum MHD_Result api_send(struct MHD_Connection *mc, unsigned status, const char *type,
                                const void *body, size_t len, int retry_after, const char *lag)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!resp) {
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (retry_after > 0) {
        char ra[16];
        snprintf(ra, sizeof ra, "%d", retry_after);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
    }
    if (lag) {
        MHD_add_response_header(resp, "X-Database-Lag", lag);
    }
    enum MHD_Result r = MHD_queue_response(mc, status, resp);
    MHD_destroy_response(resp);
    return r;
}

static enum MHD_Result api_error(struct MHD_Connection *mc, const char *code, const char *info)
{
    char body[512];
    int n = snprintf(body, sizeof body,
                     "{\"error\":{\"code\":\"%s\",\"info\":\"%s\",\"docref\":\"See "
                     "https://www.mediawiki.org/w/api.php for API usage.\"},\"servedby\":"
                     "\"freshet-feed\"}",
                     code, info);
    return api_send(mc, MHD_HTTP_OK, "application/json; charset=utf-8", body, (size_t)n, 0, NULL);
}

/* The answer body for titles (already URL-decoded by MHD). */
static int api_answer(struct fr_feed_api *api, int wiki, const char *titles, struct fr_buf *body)
{
    struct fr_buf norm, pages;
    fr_buf_init(&norm, API_BODY_CAP);
    fr_buf_init(&pages, API_BODY_CAP);
    char sep = '|';
    const char *p = titles;
    if ((unsigned char)*p == 0x1F) { /* the API's alternative separator */
        sep = 0x1F;
        p++;
    }
    /* Pages appear once each, in request order (the real API orders them
     * differently; clients must not rely on either). */
    struct fr_feed_page seen[API_MAX_TITLES];
    int nseen = 0, ntitles = 0, too_many = 0;
    int rc = FR_OK;
    struct fr_feed_page page;
    for (const char *end; rc == FR_OK && *p; p = *end ? end + 1 : end) {
        end = strchr(p, sep);
        if (!end) {
            end = p + strlen(p);
        }
        if (ntitles == API_MAX_TITLES) {
            too_many = 1;
            break;
        }
        ntitles++;
        fr_feed_api_page(wiki, p, (size_t)(end - p), &page);
        size_t len = (size_t)(end - p);
        if (page.kind != FR_FEED_PAGE_INVALID &&
            (strlen(page.title) != len || memcmp(page.title, p, len) != 0)) {
            rc = fr_buf_printf(&norm, "%s{\"fromencoded\":false,\"from\":", norm.len ? "," : "");
            if (rc == FR_OK) {
                rc = fr_buf_json_str(&norm, p, len);
            }
            if (rc == FR_OK) {
                rc = fr_buf_puts(&norm, ",\"to\":");
            }
            if (rc == FR_OK) {
                rc = fr_buf_json_str(&norm, page.title, strlen(page.title));
            }
            if (rc == FR_OK) {
                rc = fr_buf_putc(&norm, '}');
            }
        }
        int dup = 0;
        for (int i = 0; i < nseen && !dup; i++) {
            dup = strcmp(seen[i].title, page.title) == 0;
        }
        if (dup || rc != FR_OK) {
            continue;
        }
        seen[nseen++] = page;
        if (pages.len) {
            rc = fr_buf_putc(&pages, ',');
        }
        switch (page.kind) {
        case FR_FEED_PAGE_INVALID:
            api_count(api, FR_FEED_API_PAGES_INVALID, 1);
            if (rc == FR_OK) {
                rc = fr_buf_puts(&pages, "{\"title\":");
            }
            if (rc == FR_OK) {
                rc = fr_buf_json_str(&pages, p, len);
            }
            if (rc == FR_OK) {
                rc = fr_buf_printf(&pages, ",\"invalidreason\":\"%s\",\"invalid\":true}",
                                   page.reason);
            }
            break;
        case FR_FEED_PAGE_MISSING:
            api_count(api, FR_FEED_API_PAGES_MISSING, 1);
            if (rc == FR_OK) {
                rc = fr_buf_printf(&pages, "{\"ns\":%d,\"title\":", page.ns);
            }
            if (rc == FR_OK) {
                rc = fr_buf_json_str(&pages, page.title, strlen(page.title));
            }
            if (rc == FR_OK) {
                rc = fr_buf_puts(&pages, ",\"missing\":true}");
            }
            break;
        default:
            api_count(api,
                      page.kind == FR_FEED_PAGE_ITEM ? FR_FEED_API_PAGES_ITEM
                                                     : FR_FEED_API_PAGES_NO_ITEM,
                      1);
            if (rc == FR_OK) {
                rc = fr_buf_printf(&pages,
                                   "{\"pageid\":%lld,\"ns\":%d,\"title\":", (long long)page.pageid,
                                   page.ns);
            }
            if (rc == FR_OK) {
                rc = fr_buf_json_str(&pages, page.title, strlen(page.title));
            }
            if (rc == FR_OK && page.kind == FR_FEED_PAGE_ITEM) {
                rc = fr_buf_printf(&pages, ",\"pageprops\":{\"wikibase_item\":\"Q%lld\"}",
                                   (long long)page.qid);
            }
            if (rc == FR_OK) {
                rc = fr_buf_putc(&pages, '}');
            }
        }
    }
    api_count(api, FR_FEED_API_TITLES, ntitles);
    if (rc == FR_OK) {
        rc = fr_buf_puts(body, "{\"batchcomplete\":true");
    }
    if (rc == FR_OK && too_many) {
        rc = fr_buf_puts(body, ",\"warnings\":{\"main\":{\"warnings\":\"Too many values supplied "
                               "for parameter \\\"titles\\\". The limit is 50.\"}}");
    }
    if (rc == FR_OK && ntitles) {
        rc = fr_buf_puts(body, ",\"query\":{");
        if (rc == FR_OK && norm.len) {
            rc = fr_buf_puts(body, "\"normalized\":[");
            if (rc == FR_OK) {
                rc = fr_buf_append(body, norm.data, norm.len);
            }
            if (rc == FR_OK) {
                rc = fr_buf_puts(body, "],");
            }
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(body, "\"pages\":[");
        }
        if (rc == FR_OK) {
            rc = fr_buf_append(body, pages.data, pages.len);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(body, "]}");
        }
    }
    if (rc == FR_OK) {
        rc = fr_buf_putc(body, '}');
    }
    fr_buf_free(&norm);
    fr_buf_free(&pages);
    return rc;
}

static const char *api_arg(struct MHD_Connection *mc, const char *key)
{
    return MHD_lookup_connection_value(mc, MHD_GET_ARGUMENT_KIND, key);
}

/* action=wbgetentities (Wikidata only): labels, api_labels.c. */
static enum MHD_Result api_entities(struct fr_feed_api *api, struct MHD_Connection *mc, int wiki)
{
    const char *props = api_arg(mc, "props"), *format = api_arg(mc, "format");
    if (strcmp(fr_feed_wikis[wiki].db, "wikidatawiki") != 0 || !props ||
        !strstr(props, "labels") || !format || strcmp(format, "json") != 0) {
        api_count(api, FR_FEED_API_BAD_REQUEST, 1);
        return api_error(mc, "badvalue",
                         "The fixture answers action=wbgetentities&props=labels&format=json "
                         "on Wikidata only.");
    }
    struct fr_buf body;
    fr_buf_init(&body, API_BODY_CAP);
    int64_t counts[3] = {0, 0, 0};
    const char *code = NULL;
    int rc = fr_feed_api_entities(api_arg(mc, "ids"), api_arg(mc, "languages"), &body, counts,
                                  &code);
    enum MHD_Result r;
    if (rc == FR_EINVAL) {
        api_count(api, FR_FEED_API_BAD_REQUEST, 1);
        r = api_error(mc, code, "The fixture refuses these ids.");
    } else if (rc < 0) {
        r = api_error(mc, "internal_api_error", "answer too large");
    } else {
        api_count(api, FR_FEED_API_ANSWERED, 1);
        api_count(api, FR_FEED_API_ENTITIES, counts[0]);
        api_count(api, FR_FEED_API_ENTITIES_MISSING, counts[1]);
        api_count(api, FR_FEED_API_LABELS, counts[2]);
        r = api_send(mc, MHD_HTTP_OK, "application/json; charset=utf-8", body.data, body.len, 0,
                     NULL);
    }
    fr_buf_free(&body);
    return r;
}

int fr_feed_api_request(struct fr_feed_api *api, struct MHD_Connection *mc, const char *url)
{
    const struct fr_feed_opts *o = fr_feed_stream_opts(api->stream);
    if (strcmp(url, "/api/counters") == 0) {
        struct fr_buf b;
        fr_buf_init(&b, 4096);
        fr_feed_api_counters_json(api, &b);
        enum MHD_Result r = api_send(mc, MHD_HTTP_OK, "application/json", b.data, b.len, 0, NULL);
        fr_buf_free(&b);
        return r;
    }
    /* /api/<wiki>/w/api.php */
    const char *name = url + 5;
    const char *slash = strchr(name, '/');
    static const char tail[] = "/w/api.php";
    int wiki =
        slash && strcmp(slash, tail) == 0 ? fr_feed_api_wiki(name, (size_t)(slash - name)) : -1;
    if (wiki < 0) {
        static const char nf[] = "{\"error\":\"no such wiki or path; use /api/<wiki>/w/api.php\"}";
        return api_send(mc, MHD_HTTP_NOT_FOUND, "application/json", nf, sizeof nf - 1, 0, NULL);
    }
    api_count(api, FR_FEED_API_REQUESTS, 1);
    if (o->api_latency_ms > 0) {
        fr_sleep_ms(o->api_latency_ms);
    }
    if (!api_bucket_take(api, o->api_rate_limit)) {
        api_count(api, FR_FEED_API_RATE_LIMITED, 1);
        static const char tm[] = "Too many requests (rate limit of the freshet feed fixture)\n";
        return api_send(mc, 429, "text/plain; charset=utf-8", tm, sizeof tm - 1, 1, NULL);
    }
    struct fr_feed_rng rng;
    fr_feed_rng_seed(&rng, o->seed, (uint64_t)atomic_fetch_add(&api->seq, 1), FR_FEED_SALT_API);
    double u = fr_feed_rng_unit(&rng);
    if (u < o->api_error_rate) {
        api_count(api, FR_FEED_API_ERR_5XX, 1);
        static const char se[] = "<!DOCTYPE html><title>Wikimedia Error</title>"
                                 "<p>Our servers are currently under maintenance or "
                                 "experiencing a technical issue.</p>\n";
        return api_send(mc, MHD_HTTP_SERVICE_UNAVAILABLE, "text/html; charset=utf-8", se,
                        sizeof se - 1, 0, NULL);
    }
    u -= o->api_error_rate;
    if (u >= 0 && u < o->api_429_rate) {
        api_count(api, FR_FEED_API_ERR_429, 1);
        static const char tm[] = "Too many requests\n";
        return api_send(mc, 429, "text/plain; charset=utf-8", tm, sizeof tm - 1, 1, NULL);
    }
    u -= o->api_429_rate;
    const char *maxlag = api_arg(mc, "maxlag");
    if (maxlag && u >= 0 && u < o->api_maxlag_rate) {
        api_count(api, FR_FEED_API_MAXLAG, 1);
        double lag = atof(maxlag) + 0.5;
        char body[512], lag_s[32];
        snprintf(lag_s, sizeof lag_s, "%.0f", lag + 0.5);
        int n = snprintf(body, sizeof body,
                         "{\"error\":{\"code\":\"maxlag\",\"info\":\"Waiting for 10.64.0.1: %.3f "
                         "seconds lagged.\",\"host\":\"10.64.0.1\",\"lag\":%.3f,\"type\":\"db\","
                         "\"docref\":\"See https://www.mediawiki.org/w/api.php for API usage.\"},"
                         "\"servedby\":\"freshet-feed\"}",
                         lag, lag);
        return api_send(mc, MHD_HTTP_OK, "application/json; charset=utf-8", body, (size_t)n, 1,
                        lag_s);
    }
    const char *action = api_arg(mc, "action");
    if (action && strcmp(action, "wbgetentities") == 0) {
        return api_entities(api, mc, wiki);
    }
    const char *prop = api_arg(mc, "prop");
    const char *format = api_arg(mc, "format"), *fv = api_arg(mc, "formatversion");
    if (!action || strcmp(action, "query") != 0 || !prop || !strstr(prop, "pageprops") || !format ||
        strcmp(format, "json") != 0 || !fv || strcmp(fv, "2") != 0) {
        api_count(api, FR_FEED_API_BAD_REQUEST, 1);
        return api_error(mc, "badvalue",
                         "The fixture answers action=query&prop=pageprops&format=json&"
                         "formatversion=2 only.");
    }
    const char *titles = api_arg(mc, "titles");
    struct fr_buf body;
    fr_buf_init(&body, API_BODY_CAP);
    int rc = api_answer(api, wiki, titles ? titles : "", &body);
    enum MHD_Result r;
    if (rc < 0) {
        r = api_error(mc, "internal_api_error", "answer too large");
    } else {
        api_count(api, FR_FEED_API_ANSWERED, 1);
        r = api_send(mc, MHD_HTTP_OK, "application/json; charset=utf-8", body.data, body.len, 0,
                     NULL);
    }
    fr_buf_free(&body);
    return r;
}
