/*
 * label.c — labels of Wikidata items (issue 33): which language a wiki's
 * label is asked in, and the label chosen from a wbgetentities answer.
 *
 * The rule (docs/ENRICH.md "Labels", ADR 0056): the label in the content
 * language of the wiki the edit came from where the item has one, else the
 * English label, else none, with the reason (NONE: neither; MISSING: the
 * item is deleted). The content language comes from the wiki's name alone:
 * a language-edition host ("fr.wikipedia.org", "de.wiktionary.org") or
 * database name ("frwiki", "dewiktionary") gives its language code, mapped
 * to Wikidata's code where the two differ ("no" is "nb", "simple" is "en",
 * "zh-yue" is "yue", ...); every other wiki (Wikidata, Commons, Meta,
 * MediaWiki.org, Species, ...) is multilingual and asks in English.
 *
 * Answers read (action=wbgetentities&props=labels&languages=fr|en&ids=…):
 *   {"entities":{"Q42":{"type":"item","id":"Q42","labels":{
 *        "fr":{"language":"fr","value":"Douglas Adams"},
 *        "en":{"language":"en","value":"Douglas Adams"}}},
 *    "Q999":{"id":"Q999","missing":""}},"success":1}
 *   {"error":{"code":"maxlag",…}}  -> FR_EMAXLAG;  other errors -> FR_EAPI
 * Pure functions; any thread.
 */
#include "enrich/enrich_int.h"

#include "core/err.h"
#include "core/json.h"

#include <stdio.h>
#include <string.h>

/* Language-edition projects: <lang>.<project>.org and <lang><suffix>. */
static const struct {
    const char *host, *db;
} label_projects[] = {
    {".wikipedia.org", "wiki"},         {".wiktionary.org", "wiktionary"},
    {".wikibooks.org", "wikibooks"},    {".wikinews.org", "wikinews"},
    {".wikiquote.org", "wikiquote"},    {".wikisource.org", "wikisource"},
    {".wikiversity.org", "wikiversity"}, {".wikivoyage.org", "wikivoyage"},
};

/* Database names ending in "wiki" that are not language editions. */
static const char *const label_multi_db[] = {
    "commonswiki",    "wikidatawiki",  "metawiki",       "specieswiki",      "mediawikiwiki",
    "sourceswiki",    "incubatorwiki", "wikimaniawiki",  "foundationwiki",   "outreachwiki",
    "testwiki",       "test2wiki",     "testwikidatawiki", "testcommonswiki", "loginwiki",
    "votewiki",       "strategywiki",  "wikifunctionswiki", "nostalgiawiki",  "tenwiki",
    "donatewiki",     "usabilitywiki", "advisorywiki",   "api-portalwiki",   "beta-wikiversity",
};

/* Wiki language codes that Wikidata writes differently. */
static const struct {
    const char *wiki, *wikidata;
} label_remap[] = {
    {"simple", "en"},       {"no", "nb"},           {"als", "gsw"},
    {"bat-smg", "sgs"},     {"be-x-old", "be-tarask"}, {"fiu-vro", "vro"},
    {"roa-rup", "rup"},     {"zh-classical", "lzh"}, {"zh-min-nan", "nan"},
    {"zh-yue", "yue"},
};

static int label_code_ok(const char *s, size_t n)
{
    if (n < 2 || n > FR_ENRICH_LANG_MAX) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) {
            return 0;
        }
    }
    return s[0] != '-' && s[n - 1] != '-';
}

static int label_set(char out[FR_ENRICH_LANG_MAX + 1], const char *code, size_t n)
{
    char tmp[FR_ENRICH_LANG_MAX + 1];
    for (size_t i = 0; i < n; i++) {
        tmp[i] = code[i] == '_' ? '-' : code[i]; /* database names write zh_min_nan */
    }
    tmp[n] = 0;
    for (size_t i = 0; i < sizeof label_remap / sizeof label_remap[0]; i++) {
        if (strcmp(tmp, label_remap[i].wiki) == 0) {
            snprintf(out, FR_ENRICH_LANG_MAX + 1, "%s", label_remap[i].wikidata);
            return FR_OK;
        }
    }
    memcpy(out, tmp, n + 1);
    return FR_OK;
}

static int label_ends(const char *s, size_t n, const char *suffix, size_t *prefix)
{
    size_t m = strlen(suffix);
    if (n <= m || memcmp(s + n - m, suffix, m) != 0) {
        return 0;
    }
    *prefix = n - m;
    return 1;
}

int fr_enrich_wiki_lang(const char *wiki, char out[FR_ENRICH_LANG_MAX + 1])
{
    snprintf(out, FR_ENRICH_LANG_MAX + 1, "en");
    size_t n = wiki ? strlen(wiki) : 0;
    if (n == 0 || n > FR_ENRICH_WIKI_MAX) {
        return FR_EINVAL;
    }
    size_t p;
    if (strchr(wiki, '.')) { /* a host */
        for (size_t i = 0; i < sizeof label_projects / sizeof label_projects[0]; i++) {
            if (label_ends(wiki, n, label_projects[i].host, &p)) {
                if (memchr(wiki, '.', p) || !label_code_ok(wiki, p) ||
                    (p == 3 && memcmp(wiki, "www", 3) == 0)) {
                    return FR_OK; /* www.wikisource.org, m.…: multilingual */
                }
                return label_set(out, wiki, p);
            }
        }
        return FR_OK; /* wikidata.org, wikimedia.org, mediawiki.org, …: English */
    }
    for (size_t i = 0; i < sizeof label_multi_db / sizeof label_multi_db[0]; i++) {
        if (strcmp(wiki, label_multi_db[i]) == 0) {
            return FR_OK;
        }
    }
    for (size_t i = 0; i < sizeof label_projects / sizeof label_projects[0]; i++) {
        if (label_ends(wiki, n, label_projects[i].db, &p)) {
            if (!label_code_ok(wiki, p)) {
                return FR_EINVAL;
            }
            return label_set(out, wiki, p);
        }
    }
    return FR_EINVAL;
}

int fr_enrich_labels_check(const char *body, size_t len, char *errcode, size_t cap)
{
    struct fr_json_val root, v;
    int rc = fr_enrich_api_root(body, len, &root, errcode, cap);
    if (rc != FR_OK) {
        return rc;
    }
    rc = fr_json_member(&root, "entities", &v);
    return rc == 1 && v.type == FR_JSON_OBJECT ? FR_OK : FR_EJSON;
}

/* labels[lang].value into out->text: 1 found, 0 absent, FR_EJSON. */
static int label_value(const struct fr_json_val *labels, const char *lang,
                       struct fr_enrich_label *out)
{
    struct fr_json_val l, value;
    int rc = fr_json_member(labels, lang, &l);
    if (rc <= 0) {
        return rc;
    }
    if (l.type != FR_JSON_OBJECT || fr_json_member(&l, "value", &value) != 1 ||
        value.type != FR_JSON_STRING ||
        fr_json_cstr(&value, out->text, sizeof out->text) < 0) {
        return FR_EJSON;
    }
    if (out->text[0] == 0) {
        return 0; /* an empty label is no label */
    }
    snprintf(out->lang, sizeof out->lang, "%s", lang);
    return 1;
}

int fr_enrich_labels_find(const char *body, size_t len, const char *id, const char *lang,
                          struct fr_enrich_label *out)
{
    memset(out, 0, sizeof *out);
    out->why = FR_ENRICH_LABEL_NONE;
    struct fr_json_val root, ents, ent, labels, flag;
    if (!fr_json_value(body, body + len, &root) || root.type != FR_JSON_OBJECT ||
        fr_json_member(&root, "entities", &ents) != 1 || ents.type != FR_JSON_OBJECT) {
        return FR_EJSON;
    }
    int rc = fr_json_member(&ents, id, &ent);
    if (rc < 0) {
        return FR_EJSON;
    }
    if (rc == 0) {
        return FR_EPROTO;
    }
    if (ent.type != FR_JSON_OBJECT || (rc = fr_json_member(&ent, "missing", &flag)) < 0) {
        return FR_EJSON;
    }
    if (rc == 1) {
        out->why = FR_ENRICH_LABEL_MISSING;
        return FR_OK;
    }
    rc = fr_json_member(&ent, "labels", &labels);
    if (rc < 0 || (rc == 1 && labels.type != FR_JSON_OBJECT)) {
        /* an empty PHP array is written [] by the real API: no labels */
        if (rc == 1 && labels.type == FR_JSON_ARRAY) {
            return FR_OK;
        }
        return FR_EJSON;
    }
    if (rc == 0) {
        return FR_OK;
    }
    rc = label_value(&labels, lang, out);
    if (rc == 0 && strcmp(lang, "en") != 0) {
        rc = label_value(&labels, "en", out);
    }
    if (rc < 0) {
        memset(out, 0, sizeof *out);
        return FR_EJSON;
    }
    if (rc == 1) {
        out->why = FR_ENRICH_LABEL_OK;
    }
    return FR_OK;
}
