/*
 * test_enrich_label.c — the label choice of issue 33 (src/enrich/label.c):
 * which language a wiki's label is asked in, and which label a
 * wbgetentities answer gives (the wiki's content language, else English,
 * else none with the reason). Every expected value is written here by
 * hand; the answers are hand-written JSON in the real API's shape.
 * Also the cache keeping a label's text (cache.c). One thread.
 */
#include "check.h"

#include "core/err.h"
#include "enrich/enrich_int.h"

#include <string.h>

static void lang_is(const char *wiki, int want_rc, const char *want)
{
    char out[FR_ENRICH_LANG_MAX + 1];
    int rc = fr_enrich_wiki_lang(wiki, out);
    CHECK_EQ_INT(rc, want_rc);
    if (strcmp(out, want) != 0) {
        fprintf(stderr, "  wiki %s: lang %s, want %s\n", wiki, out, want);
    }
    CHECK(strcmp(out, want) == 0);
}

static void test_wiki_lang(void)
{
    lang_is("fr.wikipedia.org", FR_OK, "fr");
    lang_is("frwiki", FR_OK, "fr");
    lang_is("ja.wikipedia.org", FR_OK, "ja");
    lang_is("de.wiktionary.org", FR_OK, "de");
    lang_is("dewiktionary", FR_OK, "de");
    lang_is("pl.wikisource.org", FR_OK, "pl");
    lang_is("itwikivoyage", FR_OK, "it");
    /* codes Wikidata writes differently */
    lang_is("no.wikipedia.org", FR_OK, "nb");
    lang_is("nowiki", FR_OK, "nb");
    lang_is("simple.wikipedia.org", FR_OK, "en");
    lang_is("simplewiki", FR_OK, "en");
    lang_is("zh-yue.wikipedia.org", FR_OK, "yue");
    lang_is("zh_yuewiki", FR_OK, "yue");
    lang_is("be-x-old.wikipedia.org", FR_OK, "be-tarask");
    lang_is("als.wikipedia.org", FR_OK, "gsw");
    lang_is("be-tarask.wikipedia.org", FR_OK, "be-tarask");
    /* multilingual wikis ask in English */
    lang_is("www.wikidata.org", FR_OK, "en");
    lang_is("wikidatawiki", FR_OK, "en");
    lang_is("commons.wikimedia.org", FR_OK, "en");
    lang_is("commonswiki", FR_OK, "en");
    lang_is("meta.wikimedia.org", FR_OK, "en");
    lang_is("www.mediawiki.org", FR_OK, "en");
    lang_is("www.wikisource.org", FR_OK, "en");
    lang_is("species.wikimedia.org", FR_OK, "en");
    /* names it cannot read: English, and says so */
    lang_is("", FR_EINVAL, "en");
    lang_is("enwikiextra", FR_EINVAL, "en");
    lang_is("xwiki", FR_EINVAL, "en");
    lang_is("X_Ywiki", FR_EINVAL, "en");
}

static const char ANSWER[] =
    "{\"entities\":{"
    "\"Q1\":{\"type\":\"item\",\"id\":\"Q1\",\"labels\":{"
    "\"fr\":{\"language\":\"fr\",\"value\":\"Univers\"},"
    "\"en\":{\"language\":\"en\",\"value\":\"universe\"}}},"
    "\"Q2\":{\"type\":\"item\",\"id\":\"Q2\",\"labels\":{"
    "\"en\":{\"language\":\"en\",\"value\":\"Earth\"}}},"
    "\"Q3\":{\"type\":\"item\",\"id\":\"Q3\",\"labels\":{"
    "\"de\":{\"language\":\"de\",\"value\":\"Leben\"}}},"
    "\"Q4\":{\"type\":\"item\",\"id\":\"Q4\",\"labels\":{}},"
    "\"Q5\":{\"id\":\"Q5\",\"missing\":\"\"},"
    "\"Q6\":{\"type\":\"item\",\"id\":\"Q6\",\"labels\":[]},"
    "\"Q7\":{\"type\":\"item\",\"id\":\"Q7\",\"labels\":{"
    "\"ja\":{\"language\":\"ja\",\"value\":\"\\u6771\\u4eac \\\"\\u90fd\\\"\"}}},"
    "\"Q8\":{\"type\":\"item\",\"id\":\"Q8\",\"labels\":{"
    "\"fr\":{\"language\":\"fr\",\"value\":\"\"},"
    "\"en\":{\"language\":\"en\",\"value\":\"empty French\"}}},"
    "\"Q9\":{\"type\":\"item\",\"id\":\"Q9\",\"labels\":{\"fr\":{\"language\":\"fr\"}}}"
    "},\"success\":1}";

static void label_is(const char *id, const char *lang, int want_rc, int want_why,
                     const char *want_lang, const char *want_text)
{
    struct fr_enrich_label l;
    int rc = fr_enrich_labels_find(ANSWER, sizeof ANSWER - 1, id, lang, &l);
    CHECK_EQ_INT(rc, want_rc);
    if (rc != FR_OK) {
        return;
    }
    CHECK_EQ_INT(l.why, want_why);
    if (strcmp(l.lang, want_lang) != 0 || strcmp(l.text, want_text) != 0) {
        fprintf(stderr, "  %s/%s: [%s] \"%s\", want [%s] \"%s\"\n", id, lang, l.lang, l.text,
                want_lang, want_text);
    }
    CHECK(strcmp(l.lang, want_lang) == 0);
    CHECK(strcmp(l.text, want_text) == 0);
}

static void test_choice(void)
{
    char code[64];
    CHECK_EQ_INT(fr_enrich_labels_check(ANSWER, sizeof ANSWER - 1, code, sizeof code), FR_OK);
    /* the content language when the item has a label in it */
    label_is("Q1", "fr", FR_OK, FR_ENRICH_LABEL_OK, "fr", "Univers");
    label_is("Q1", "en", FR_OK, FR_ENRICH_LABEL_OK, "en", "universe");
    /* else English */
    label_is("Q2", "fr", FR_OK, FR_ENRICH_LABEL_OK, "en", "Earth");
    label_is("Q1", "ja", FR_OK, FR_ENRICH_LABEL_OK, "en", "universe");
    /* an empty label is no label: English */
    label_is("Q8", "fr", FR_OK, FR_ENRICH_LABEL_OK, "en", "empty French");
    /* else none, with the reason: a label in a third language does not count */
    label_is("Q3", "fr", FR_OK, FR_ENRICH_LABEL_NONE, "", "");
    label_is("Q3", "en", FR_OK, FR_ENRICH_LABEL_NONE, "", "");
    label_is("Q3", "de", FR_OK, FR_ENRICH_LABEL_OK, "de", "Leben");
    label_is("Q4", "fr", FR_OK, FR_ENRICH_LABEL_NONE, "", "");
    label_is("Q6", "en", FR_OK, FR_ENRICH_LABEL_NONE, "", ""); /* PHP's empty array */
    label_is("Q5", "fr", FR_OK, FR_ENRICH_LABEL_MISSING, "", "");
    /* escapes decoded */
    label_is("Q7", "ja", FR_OK, FR_ENRICH_LABEL_OK, "ja", "\xe6\x9d\xb1\xe4\xba\xac \"\xe9\x83\xbd\"");
    /* an item the answer does not mention; a label without a value */
    label_is("Q10", "fr", FR_EPROTO, 0, "", "");
    label_is("Q9", "fr", FR_EJSON, 0, "", "");
}

static void test_check(void)
{
    char code[64];
    static const char maxlag[] = "{\"error\":{\"code\":\"maxlag\",\"info\":\"Waiting\",\"lag\":6}}";
    CHECK_EQ_INT(fr_enrich_labels_check(maxlag, sizeof maxlag - 1, code, sizeof code),
                 FR_EMAXLAG);
    static const char other[] = "{\"error\":{\"code\":\"no-such-entity\",\"info\":\"x\"}}";
    CHECK_EQ_INT(fr_enrich_labels_check(other, sizeof other - 1, code, sizeof code), FR_EAPI);
    CHECK(strcmp(code, "no-such-entity") == 0);
    static const char *const bad[] = {"", "[]", "{}", "{\"entities\":[]}", "{\"entities\":{}",
                                      "<html>503</html>", "{\"error\":\"x\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_EQ_INT(fr_enrich_labels_check(bad[i], strlen(bad[i]), code, sizeof code),
                     FR_EJSON);
    }
    /* every proper prefix of a good answer is refused */
    for (size_t n = 0; n < sizeof ANSWER - 1; n++) {
        CHECK(fr_enrich_labels_check(ANSWER, n, code, sizeof code) < 0);
    }
}

static void test_cache_label(void)
{
    struct fr_enrich_cache *c = NULL;
    CHECK_EQ_INT(fr_enrich_cache_new(10, 1 << 20, &c), FR_OK);
    struct fr_enrich_answer a = {.outcome = FR_ENRICH_RESOLVED,
                                 .item = "fr",
                                 .label_why = FR_ENRICH_LABEL_OK,
                                 .label = "Univers",
                                 .label_len = 7};
    CHECK_EQ_INT(fr_enrich_cache_put(c, "#fr", "Q1", &a), FR_OK);
    CHECK_EQ_INT(fr_enrich_cache_bytes(c), (int64_t)(fr_enrich_cache_entry_bytes(3, 2) + 8));
    struct fr_enrich_answer got;
    CHECK_EQ_INT(fr_enrich_cache_get(c, "#fr", "Q1", &got), 1);
    CHECK_EQ_INT(got.label_why, FR_ENRICH_LABEL_OK);
    CHECK(got.label_len == 7 && memcmp(got.label, "Univers", 7) == 0);
    CHECK(strcmp(got.item, "fr") == 0);
    /* another label for the same key replaces it, and its charge */
    a.label = "Le cosmos";
    a.label_len = 9;
    CHECK_EQ_INT(fr_enrich_cache_put(c, "#fr", "Q1", &a), FR_OK);
    CHECK_EQ_INT(fr_enrich_cache_entries(c), 1);
    CHECK_EQ_INT(fr_enrich_cache_bytes(c), (int64_t)(fr_enrich_cache_entry_bytes(3, 2) + 10));
    CHECK_EQ_INT(fr_enrich_cache_get(c, "#fr", "Q1", &got), 1);
    CHECK(got.label_len == 9 && memcmp(got.label, "Le cosmos", 9) == 0);
    /* no label */
    struct fr_enrich_answer none = {.outcome = FR_ENRICH_RESOLVED,
                                    .label_why = FR_ENRICH_LABEL_NONE};
    CHECK_EQ_INT(fr_enrich_cache_put(c, "#fr", "Q3", &none), FR_OK);
    CHECK_EQ_INT(fr_enrich_cache_get(c, "#fr", "Q3", &got), 1);
    CHECK_EQ_INT(got.label_why, FR_ENRICH_LABEL_NONE);
    CHECK(got.label == NULL && got.label_len == 0);
    /* a label is not an item key: (frwiki, Q1) is not cached */
    CHECK_EQ_INT(fr_enrich_cache_get(c, "fr", "Q1", &got), 0);
    fr_enrich_cache_free(c);
}

int main(void)
{
    RUN(test_wiki_lang);
    RUN(test_choice);
    RUN(test_check);
    RUN(test_cache_label);
    return check_report();
}
