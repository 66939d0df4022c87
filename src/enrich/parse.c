/*
 * parse.c — answers of action=query&prop=pageprops&formatversion=2.
 *
 * The shapes accepted (MediaWiki API:Query, API:Pageprops, Manual:Maxlag
 * parameter):
 *   {"batchcomplete":true,"query":{
 *      "normalized":[{"fromencoded":false,"from":"marie_curie","to":"Marie curie"}],
 *      "pages":[{"pageid":736,"ns":0,"title":"Albert Einstein",
 *                "pageprops":{"wikibase_item":"Q937"}},
 *               {"ns":0,"title":"Gone","missing":true},
 *               {"title":"A<b","invalidreason":"…","invalid":true}]}}
 *   {"batchcomplete":true}                       (no titles asked)
 *   {"error":{"code":"maxlag","info":"Waiting for …","lag":1.5,…}}  -> FR_EMAXLAG
 *   {"error":{"code":"<other>",…}}                                 -> FR_EAPI
 * The whole body must be one valid JSON value; anything else, or these
 * members with other types, is FR_EJSON. The top of the body (an object,
 * the error member) is checked by fr_enrich_api_root, which label.c's
 * wbgetentities answers share. Pure functions; any thread.
 */
#include "enrich/enrich_int.h"

#include "core/err.h"
#include "core/json.h"

#include <string.h>

/* Decode a string member into out[cap] (NUL-terminated). 1 found, 0 absent,
 * FR_EJSON wrong type or too long. */
static int parse_str(const struct fr_json_val *obj, const char *key, char *out, size_t cap)
{
    struct fr_json_val v;
    int rc = fr_json_member(obj, key, &v);
    if (rc <= 0) {
        return rc;
    }
    if (v.type != FR_JSON_STRING) {
        return FR_EJSON;
    }
    return fr_json_cstr(&v, out, cap) < 0 ? FR_EJSON : 1;
}

/* A boolean flag: true (v2) or "" (v1 style) count as set. */
static int parse_flag(const struct fr_json_val *obj, const char *key, int *out)
{
    struct fr_json_val v;
    int rc = fr_json_member(obj, key, &v);
    if (rc < 0) {
        return rc;
    }
    *out = rc == 1 && (v.type == FR_JSON_TRUE || v.type == FR_JSON_STRING);
    return FR_OK;
}

/* Call each element of array arr: returns FR_EJSON on bad text. */
#define PARSE_EACH(arr, elem, ...)                                                                 \
    do {                                                                                           \
        const char *pe_end = (arr).end;                                                            \
        const char *pe_p = fr_json_ws((arr).start + 1, pe_end);                                    \
        if (pe_p < pe_end && *pe_p == ']') {                                                       \
            break;                                                                                 \
        }                                                                                          \
        while (pe_p && pe_p < pe_end) {                                                            \
            struct fr_json_val elem;                                                               \
            pe_p = fr_json_value(pe_p, pe_end, &elem);                                             \
            if (!pe_p) {                                                                           \
                return FR_EJSON;                                                                   \
            }                                                                                      \
            __VA_ARGS__;                                                                           \
            pe_p = fr_json_ws(pe_p, pe_end);                                                       \
            if (pe_p < pe_end && *pe_p == ',') {                                                   \
                pe_p = fr_json_ws(pe_p + 1, pe_end);                                               \
                continue;                                                                          \
            }                                                                                      \
            break;                                                                                 \
        }                                                                                          \
    } while (0)

static int parse_item_ok(const char *s)
{
    if (s[0] != 'Q' || s[1] < '1' || s[1] > '9') {
        return 0;
    }
    size_t n = strlen(s);
    for (size_t i = 2; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return 0;
        }
    }
    return n <= 20;
}

static int parse_page(const struct fr_json_val *pv, struct fr_enrich_reply_page *page)
{
    if (pv->type != FR_JSON_OBJECT) {
        return FR_EJSON;
    }
    memset(page, 0, sizeof *page);
    if (parse_str(pv, "title", page->title, sizeof page->title) != 1) {
        return FR_EJSON;
    }
    if (parse_flag(pv, "missing", &page->missing) < 0 ||
        parse_flag(pv, "invalid", &page->invalid) < 0) {
        return FR_EJSON;
    }
    struct fr_json_val props;
    int rc = fr_json_member(pv, "pageprops", &props);
    if (rc < 0) {
        return FR_EJSON;
    }
    if (rc == 1) {
        if (props.type != FR_JSON_OBJECT) {
            return FR_EJSON;
        }
        rc = parse_str(&props, "wikibase_item", page->item, sizeof page->item);
        if (rc < 0 || (rc == 1 && !parse_item_ok(page->item))) {
            return FR_EJSON;
        }
    }
    return FR_OK;
}

int fr_enrich_api_root(const char *body, size_t len, struct fr_json_val *root, char *errcode,
                       size_t cap)
{
    if (cap) {
        errcode[0] = 0;
    }
    if (fr_json_validate(body, body + len) < 0) {
        return FR_EJSON;
    }
    struct fr_json_val v;
    if (!fr_json_value(body, body + len, root) || root->type != FR_JSON_OBJECT) {
        return FR_EJSON;
    }
    int rc = fr_json_member(root, "error", &v);
    if (rc < 0) {
        return FR_EJSON;
    }
    if (rc == 1) {
        if (v.type != FR_JSON_OBJECT || parse_str(&v, "code", errcode, cap) != 1) {
            return FR_EJSON;
        }
        return strcmp(errcode, "maxlag") == 0 ? FR_EMAXLAG : FR_EAPI;
    }
    return FR_OK;
}

int fr_enrich_parse(const char *body, size_t len, struct fr_enrich_reply *reply)
{
    reply->nnorm = reply->npages = 0;
    struct fr_json_val root;
    int rc = fr_enrich_api_root(body, len, &root, reply->errcode, sizeof reply->errcode);
    if (rc != FR_OK) {
        return rc;
    }
    struct fr_json_val query;
    rc = fr_json_member(&root, "query", &query);
    if (rc < 0) {
        return FR_EJSON;
    }
    if (rc == 0) {
        /* Only an answer to no titles at all has no query member. */
        struct fr_json_val bc;
        return fr_json_member(&root, "batchcomplete", &bc) == 1 ? FR_OK : FR_EJSON;
    }
    if (query.type != FR_JSON_OBJECT) {
        return FR_EJSON;
    }
    struct fr_json_val arr;
    rc = fr_json_member(&query, "normalized", &arr);
    if (rc < 0 || (rc == 1 && arr.type != FR_JSON_ARRAY)) {
        return FR_EJSON;
    }
    if (rc == 1) {
        PARSE_EACH(arr, nv, {
            if (reply->nnorm == FR_ENRICH_REPLY_MAX || nv.type != FR_JSON_OBJECT) {
                return FR_EJSON;
            }
            if (parse_str(&nv, "from", reply->norm[reply->nnorm].from,
                          sizeof reply->norm[0].from) != 1 ||
                parse_str(&nv, "to", reply->norm[reply->nnorm].to, sizeof reply->norm[0].to) != 1) {
                return FR_EJSON;
            }
            reply->nnorm++;
        });
    }
    rc = fr_json_member(&query, "pages", &arr);
    if (rc != 1 || arr.type != FR_JSON_ARRAY) {
        return FR_EJSON; /* v1's object keyed by page id is not accepted either */
    }
    PARSE_EACH(arr, pv, {
        if (reply->npages == FR_ENRICH_REPLY_MAX ||
            parse_page(&pv, &reply->pages[reply->npages]) < 0) {
            return FR_EJSON;
        }
        reply->npages++;
    });
    return FR_OK;
}

const struct fr_enrich_reply_page *fr_enrich_reply_find(const struct fr_enrich_reply *reply,
                                                        const char *sent)
{
    const char *want = sent;
    for (int i = 0; i < reply->nnorm; i++) {
        if (strcmp(reply->norm[i].from, sent) == 0) {
            want = reply->norm[i].to;
            break;
        }
    }
    for (int i = 0; i < reply->npages; i++) {
        if (strcmp(reply->pages[i].title, want) == 0) {
            return &reply->pages[i];
        }
    }
    return NULL;
}
