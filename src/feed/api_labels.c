/*
 * api_labels.c — the fixture's Wikidata labels: `action=wbgetentities&
 * ids=Q1|Q2&props=labels&languages=fr|en&format=json` on
 * /api/www.wikidata.org/w/api.php (or /api/wikidatawiki/…), so the
 * enrichment client's label lookups (src/enrich/label.c) run offline.
 * docs/ENRICH.md ("The fixture") is the spec; api.c wires it into the
 * endpoint after the same fault draw as every other request.
 *
 * Labels are a pure function of (item, language), independent of the seed
 * and of request order (fr_feed_api_label, the tests' oracle). With
 * g = H(item number as 8 little-endian bytes):
 *   - g % 1000 < 5: the item is missing (deleted): {"id":…,"missing":""};
 *   - else (g >> 10) % 100 < 5: the item has no label at all;
 *   - else English: a label unless (g >> 20) % 100 < 10;
 *   - another language L with a Wikipedia in the generator's table: a label
 *     when H(L NUL item bytes) % 100 < 60; languages without one: none.
 * A label's text is 1 to 3 words of L's vocabulary and script (gen_text.c)
 * drawn from (item, L), so it reads as L does. H is FNV-1a 64 finished with
 * splitmix64's mixer, as in api.c.
 *
 * Threads: pure functions; any thread.
 */
#include "feed/feed_int.h"
#include "feed/gen_int.h"

#include "core/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LABEL_MAX_IDS 50
#define LABEL_MAX_LANGS 50

static uint64_t label_fnv(uint64_t h, const void *p, size_t len)
{
    const uint8_t *s = p;
    for (size_t i = 0; i < len; i++) {
        h = (h ^ s[i]) * 1099511628211ULL;
    }
    return h;
}

static uint64_t label_item_hash(uint64_t qid, const char *lang)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++) {
        b[i] = (uint8_t)(qid >> (8 * i));
    }
    uint64_t h = 1469598103934665603ULL;
    if (lang) {
        h = label_fnv(h, lang, strlen(lang) + 1);
    }
    return fr_feed_mix64(label_fnv(h, b, sizeof b));
}

/* The Wikipedia of lang in the generator's table, NULL when none. */
static const struct fr_feed_wiki *label_wiki(const char *lang)
{
    for (size_t i = 0; i < fr_feed_nwikis; i++) {
        if (fr_feed_wikis[i].family == FR_FEED_WP && strcmp(fr_feed_wikis[i].code, lang) == 0) {
            return &fr_feed_wikis[i];
        }
    }
    return NULL;
}

int fr_feed_api_label(uint64_t qid, const char *lang, struct fr_buf *out)
{
    uint64_t g = label_item_hash(qid, NULL);
    if (g % 1000 < 5) {
        return FR_ENOTFOUND;
    }
    if ((g >> 10) % 100 < 5) {
        return 0;
    }
    const struct fr_feed_wiki *w = label_wiki(lang);
    if (!w) {
        return 0;
    }
    if (strcmp(lang, "en") == 0 ? (g >> 20) % 100 < 10 : label_item_hash(qid, lang) % 100 >= 60) {
        return 0;
    }
    struct fr_feed_rng rng;
    fr_feed_rng_seed(&rng, qid, label_item_hash(qid, lang), FR_FEED_SALT_API);
    int words = 1 + (int)fr_feed_rng_below(&rng, 3);
    int rc = fr_feed_text_words(out, w, &rng, words, 1);
    return rc < 0 ? rc : 1;
}

/* "Q<n>" with n in [1, 2^63): its number, else 0. */
static uint64_t label_qid(const char *s, size_t len)
{
    if (len < 2 || len > 20 || s[0] != 'Q' || s[1] < '1' || s[1] > '9') {
        return 0;
    }
    uint64_t q = 0;
    for (size_t i = 1; i < len; i++) {
        if (s[i] < '0' || s[i] > '9' || q > (UINT64_MAX >> 1) / 10) {
            return 0;
        }
        q = q * 10 + (uint64_t)(s[i] - '0');
    }
    return q;
}

/* Split list at '|' into at most max pieces (ptr, len). -1 past max. */
static int label_split(const char *list, const char **p, size_t *n, int max)
{
    int k = 0;
    for (const char *s = list, *end; *s; s = *end ? end + 1 : end) {
        end = strchr(s, '|');
        if (!end) {
            end = s + strlen(s);
        }
        if (end == s) {
            continue;
        }
        if (k == max) {
            return -1;
        }
        p[k] = s;
        n[k++] = (size_t)(end - s);
    }
    return k;
}

int fr_feed_api_entities(const char *ids, const char *languages, struct fr_buf *body,
                         int64_t counts[3], const char **errcode)
{
    const char *ip[LABEL_MAX_IDS + 1], *lp[LABEL_MAX_LANGS + 1];
    size_t in[LABEL_MAX_IDS + 1], ln[LABEL_MAX_LANGS + 1];
    int nid = label_split(ids ? ids : "", ip, in, LABEL_MAX_IDS);
    int nl = label_split(languages ? languages : "", lp, ln, LABEL_MAX_LANGS);
    if (nid < 0 || nl < 0) {
        *errcode = "toomanyvalues";
        return FR_EINVAL;
    }
    if (nid == 0) {
        *errcode = "param-missing";
        return FR_EINVAL;
    }
    for (int i = 0; i < nid; i++) {
        if (!label_qid(ip[i], in[i])) {
            *errcode = "no-such-entity";
            return FR_EINVAL;
        }
    }
    struct fr_buf text;
    fr_buf_init(&text, FR_FEED_TITLE_MAX * 4);
    int rc = fr_buf_puts(body, "{\"entities\":{");
    for (int i = 0; i < nid && rc == FR_OK; i++) {
        uint64_t q = label_qid(ip[i], in[i]);
        int dup = 0;
        for (int j = 0; j < i && !dup; j++) {
            dup = label_qid(ip[j], in[j]) == q;
        }
        if (dup) {
            continue;
        }
        counts[0]++;
        rc = fr_buf_printf(body, "%s\"Q%llu\":{", body->data[body->len - 1] == '{' ? "" : ",",
                           (unsigned long long)q);
        fr_buf_reset(&text);
        if (rc == FR_OK && fr_feed_api_label(q, "en", &text) == FR_ENOTFOUND) {
            counts[1]++;
            rc = fr_buf_printf(body, "\"id\":\"Q%llu\",\"missing\":\"\"}", (unsigned long long)q);
            continue;
        }
        if (rc == FR_OK) {
            rc = fr_buf_printf(body, "\"type\":\"item\",\"id\":\"Q%llu\",\"labels\":{",
                               (unsigned long long)q);
        }
        int first = 1;
        for (int l = 0; l < nl && rc == FR_OK; l++) {
            char lang[32];
            if (ln[l] >= sizeof lang) {
                continue;
            }
            memcpy(lang, lp[l], ln[l]);
            lang[ln[l]] = 0;
            fr_buf_reset(&text);
            int has = fr_feed_api_label(q, lang, &text);
            if (has < 0) {
                rc = has;
                break;
            }
            if (!has) {
                continue;
            }
            counts[2]++;
            rc = fr_buf_printf(body, "%s\"%s\":{\"language\":\"%s\",\"value\":", first ? "" : ",",
                               lang, lang);
            if (rc == FR_OK) {
                rc = fr_buf_json_str(body, (const char *)text.data, text.len);
            }
            if (rc == FR_OK) {
                rc = fr_buf_putc(body, '}');
            }
            first = 0;
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(body, "}}");
        }
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(body, "},\"success\":1}");
    }
    fr_buf_free(&text);
    return rc;
}
