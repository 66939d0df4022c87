/*
 * gen_text.c — the synthetic generator's text: words in fifteen scripts,
 * titles, user names, emoji, and MediaWiki's two renderings that events
 * carry (wfUrlencode for URLs, the comment formatter for parsedcomment).
 *
 * Words come from a per-language vocabulary: word k of language L is
 * spelled by a generator seeded with (L, k), and k is drawn Zipf-like, so
 * text repeats the way real text does (a few words often, most rarely).
 * That repetition, not a handful of templates, is what keeps the
 * compression ratio of generated events close to the recorded ones.
 *
 * Pure functions of their arguments: thread-safe.
 */
#include "feed/feed_int.h"

#include "core/err.h"

#include <stdio.h>
#include <string.h>

#define TEXT_VOCAB 40000
#define TEXT_WORD_MAX 160

int fr_feed_utf8_put(struct fr_buf *out, uint32_t cp)
{
    uint8_t b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (uint8_t)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (uint8_t)(0xC0 | (cp >> 6));
        b[1] = (uint8_t)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (uint8_t)(0xE0 | (cp >> 12));
        b[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (uint8_t)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        b[0] = (uint8_t)(0xF0 | (cp >> 18));
        b[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        b[3] = (uint8_t)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return fr_buf_append(out, b, n);
}

/* ---- letters and syllables per script -------------------------------- */

static const char *const lat_onset[] = {
    "",   "",   "b",  "c",  "d",   "f",  "g",  "h",  "j",  "k",  "l",  "m",  "n", "p",  "r",  "s",
    "t",  "v",  "w",  "z",  "br",  "bl", "ch", "cr", "dr", "fr", "gr", "gl", "k", "pl", "pr", "sh",
    "sp", "st", "th", "tr", "str", "qu", "l",  "m",  "n",  "r",  "s",  "t",  "d", "sch"};
static const char *const lat_vowel[] = {"a",  "e",  "i",  "o",  "u", "a",  "e",  "i", "o", "ou",
                                        "ei", "ie", "au", "ea", "y", "io", "ia", "e", "a", "o"};
static const char *const lat_coda[] = {"",  "",   "",   "",   "n",  "r", "s",  "l", "t",
                                       "m", "nd", "rt", "ng", "st", "x", "ck", "n", "r"};
static const char *const cyr_onset[] = {
    "",  "",  "б", "в", "г", "д",  "ж",  "з",  "к",  "л",  "м",  "н",  "п", "р", "с", "т", "ф",
    "х", "ц", "ч", "ш", "щ", "ст", "пр", "кр", "тр", "гр", "сл", "бр", "в", "н", "р", "с", "т"};
static const char *const cyr_vowel[] = {"а", "е", "и", "о", "у", "ы", "я",
                                        "ю", "е", "а", "о", "и", "о", "а"};
static const char *const cyr_coda[] = {"",  "",  "",  "н", "в", "й", "к",
                                       "т", "р", "л", "м", "ь", "с"};
static const char *const grk_onset[] = {"",  "π", "τ", "κ", "μ", "ν", "λ",  "ρ",  "σ",
                                        "δ", "γ", "θ", "χ", "φ", "β", "στ", "τρ", "κρ"};
static const char *const grk_vowel[] = {"α",  "ε", "ι", "ο", "υ", "η", "ω", "ου", "αι",
                                        "ει", "ά", "έ", "ί", "ό", "ή", "ύ", "ώ"};
static const char *const ara_letter[] = {"ا", "ب", "ت", "ث", "ج", "ح", "خ", "د", "ذ", "ر", "ز", "س",
                                         "ش", "ص", "ض", "ط", "ظ", "ع", "غ", "ف", "ق", "ك", "ل", "م",
                                         "ن", "ه", "و", "ي", "ا", "ي", "و", "ل", "م", "ن", "ر"};
static const char *const ara_end[] = {"", "", "", "ة", "ى", "ين", "ات"};
static const char *const geo_vowel[] = {"ა", "ე", "ი", "ო", "უ"};
static const char *const geo_cons[] = {"ბ", "გ", "დ", "ვ", "ზ", "თ", "კ", "ლ", "მ", "ნ",
                                       "პ", "ჟ", "რ", "ს", "ტ", "ფ", "ქ", "ღ", "ყ", "შ",
                                       "ჩ", "ც", "ძ", "წ", "ჭ", "ხ", "ჯ", "ჰ"};
static const char *const arm_vowel[] = {"ա", "ե", "է", "ը", "ի", "ո", "օ", "ու"};
static const char *const arm_cons[] = {"բ", "գ", "դ", "զ", "թ", "ժ", "լ", "խ", "ծ", "կ",
                                       "հ", "ձ", "ղ", "ճ", "մ", "յ", "ն", "շ", "չ", "պ",
                                       "ջ", "ռ", "ս", "վ", "տ", "ր", "ց", "փ", "ք", "ֆ"};
static const uint16_t ben_cons[] = {0x0995, 0x0996, 0x0997, 0x0998, 0x099A, 0x099B, 0x099C, 0x099D,
                                    0x099F, 0x09A0, 0x09A1, 0x09A3, 0x09A4, 0x09A5, 0x09A6, 0x09A7,
                                    0x09A8, 0x09AA, 0x09AB, 0x09AC, 0x09AD, 0x09AE, 0x09AF, 0x09B0,
                                    0x09B2, 0x09B6, 0x09B7, 0x09B8, 0x09B9};
static const uint16_t ben_matra[] = {0x09BE, 0x09BF, 0x09C0, 0x09C1, 0x09C2, 0x09C7, 0x09CB};
static const uint16_t tam_cons[] = {0x0B95, 0x0B99, 0x0B9A, 0x0B9E, 0x0B9F, 0x0BA3,
                                    0x0BA4, 0x0BA8, 0x0BAA, 0x0BAE, 0x0BAF, 0x0BB0,
                                    0x0BB2, 0x0BB5, 0x0BB4, 0x0BB3, 0x0BB1, 0x0BA9};
static const uint16_t tam_matra[] = {0x0BBE, 0x0BBF, 0x0BC0, 0x0BC1,
                                     0x0BC2, 0x0BC6, 0x0BC7, 0x0BC8};
static const uint16_t dev_matra[] = {0x093E, 0x093F, 0x0940, 0x0941, 0x0942,
                                     0x0947, 0x0948, 0x094B, 0x094C};
static const uint16_t mal_matra[] = {0x0D3E, 0x0D3F, 0x0D40, 0x0D41,
                                     0x0D42, 0x0D46, 0x0D47, 0x0D48};
static const uint16_t thai_after[] = {0x0E30, 0x0E32, 0x0E34, 0x0E35,
                                      0x0E36, 0x0E37, 0x0E38, 0x0E39};

#define PICK(arr, rng) ((arr)[fr_feed_rng_below((rng), sizeof(arr) / sizeof((arr)[0]))])

/* Pick one token of a space-separated list. */
static int text_token(struct fr_buf *out, const char *list, struct fr_feed_rng *rng)
{
    size_t n = 1;
    for (const char *p = list; *p; p++) {
        n += *p == ' ';
    }
    uint64_t k = fr_feed_rng_below(rng, n);
    const char *p = list;
    while (k > 0) {
        if (*p++ == ' ') {
            k--;
        }
    }
    const char *e = strchr(p, ' ');
    return fr_buf_append(out, p, e ? (size_t)(e - p) : strlen(p));
}

static int text_syllables(struct fr_buf *out, struct fr_feed_rng *rng, int n)
{
    int rc = FR_OK;
    for (int i = 0; i < n && rc == FR_OK; i++) {
        rc = fr_buf_puts(out, PICK(lat_onset, rng));
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, PICK(lat_vowel, rng));
        }
        if (rc == FR_OK && fr_feed_rng_unit(rng) < 0.3) {
            rc = fr_buf_puts(out, PICK(lat_coda, rng));
        }
    }
    return rc;
}

static int text_nsyl(struct fr_feed_rng *rng)
{
    double u = fr_feed_rng_unit(rng);
    return u < 0.22 ? 1 : u < 0.67 ? 2 : u < 0.93 ? 3 : 4;
}

/* Spell one word of script into out with the word's own generator w. */
static int text_spell(struct fr_buf *out, int script, const char *accents, struct fr_feed_rng *w)
{
    int rc = FR_OK;
    int n = text_nsyl(w);
    switch (script) {
    case FR_FEED_LATIN:
        for (int i = 0; i < n && rc == FR_OK; i++) {
            rc = fr_buf_puts(out, PICK(lat_onset, w));
            if (rc == FR_OK) {
                rc = accents && fr_feed_rng_unit(w) < 0.15 ? text_token(out, accents, w)
                                                           : fr_buf_puts(out, PICK(lat_vowel, w));
            }
            if (rc == FR_OK && fr_feed_rng_unit(w) < 0.3) {
                rc = fr_buf_puts(out, PICK(lat_coda, w));
            }
        }
        break;
    case FR_FEED_CYRILLIC:
        for (int i = 0; i < n && rc == FR_OK; i++) {
            rc = fr_buf_puts(out, PICK(cyr_onset, w));
            if (rc == FR_OK) {
                rc = accents && fr_feed_rng_unit(w) < 0.15 ? text_token(out, accents, w)
                                                           : fr_buf_puts(out, PICK(cyr_vowel, w));
            }
            if (rc == FR_OK && fr_feed_rng_unit(w) < 0.35) {
                rc = fr_buf_puts(out, PICK(cyr_coda, w));
            }
        }
        break;
    case FR_FEED_GREEK:
        for (int i = 0; i < n && rc == FR_OK; i++) {
            rc = fr_buf_puts(out, PICK(grk_onset, w));
            if (rc == FR_OK) {
                rc = fr_buf_puts(out, PICK(grk_vowel, w));
            }
        }
        if (rc == FR_OK && fr_feed_rng_unit(w) < 0.35) {
            rc = fr_buf_puts(out, "ς");
        }
        break;
    case FR_FEED_ARABIC:
        if (fr_feed_rng_unit(w) < 0.25) {
            rc = fr_buf_puts(out, "ال");
        }
        for (int i = 0; i < n + 2 && rc == FR_OK; i++) {
            rc = accents && fr_feed_rng_unit(w) < 0.15 ? text_token(out, accents, w)
                                                       : fr_buf_puts(out, PICK(ara_letter, w));
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, PICK(ara_end, w));
        }
        break;
    case FR_FEED_HEBREW:
        for (int i = 0; i < n + 2 && rc == FR_OK; i++) {
            uint32_t cp = 0x05D0 + (uint32_t)fr_feed_rng_below(w, 27);
            /* final forms only at the end */
            if (cp == 0x05DA || cp == 0x05DD || cp == 0x05DF || cp == 0x05E3 || cp == 0x05E5) {
                cp++;
            }
            rc = fr_feed_utf8_put(out, cp);
        }
        break;
    case FR_FEED_DEVANAGARI:
    case FR_FEED_MALAYALAM:
        for (int i = 0; i < n + 1 && rc == FR_OK; i++) {
            uint32_t base = script == FR_FEED_DEVANAGARI ? 0x0915 : 0x0D15;
            uint32_t cp =
                base + (uint32_t)fr_feed_rng_below(w, script == FR_FEED_DEVANAGARI ? 37 : 20);
            rc = fr_feed_utf8_put(out, cp);
            if (rc == FR_OK && fr_feed_rng_unit(w) < 0.6) {
                rc = fr_feed_utf8_put(out, script == FR_FEED_DEVANAGARI ? PICK(dev_matra, w)
                                                                        : PICK(mal_matra, w));
            }
        }
        if (rc == FR_OK && fr_feed_rng_unit(w) < 0.1) {
            rc = fr_feed_utf8_put(out, script == FR_FEED_DEVANAGARI ? 0x0902 : 0x0D4D);
        }
        break;
    case FR_FEED_BENGALI:
    case FR_FEED_TAMIL:
        for (int i = 0; i < n + 1 && rc == FR_OK; i++) {
            rc = fr_feed_utf8_put(out, script == FR_FEED_BENGALI ? PICK(ben_cons, w)
                                                                 : PICK(tam_cons, w));
            if (rc == FR_OK && fr_feed_rng_unit(w) < 0.6) {
                rc = fr_feed_utf8_put(out, script == FR_FEED_BENGALI ? PICK(ben_matra, w)
                                                                     : PICK(tam_matra, w));
            }
        }
        if (rc == FR_OK && script == FR_FEED_TAMIL && fr_feed_rng_unit(w) < 0.3) {
            rc = fr_feed_utf8_put(out, 0x0BCD);
        }
        break;
    case FR_FEED_THAI:
        for (int i = 0; i < n + 1 && rc == FR_OK; i++) {
            if (fr_feed_rng_unit(w) < 0.25) {
                rc = fr_feed_utf8_put(out, 0x0E40 + (uint32_t)fr_feed_rng_below(w, 5));
            }
            if (rc == FR_OK) {
                rc = fr_feed_utf8_put(out, 0x0E01 + (uint32_t)fr_feed_rng_below(w, 46));
            }
            if (rc == FR_OK && fr_feed_rng_unit(w) < 0.5) {
                rc = fr_feed_utf8_put(out, PICK(thai_after, w));
            }
            if (rc == FR_OK && fr_feed_rng_unit(w) < 0.2) {
                rc = fr_feed_utf8_put(out, 0x0E48 + (uint32_t)fr_feed_rng_below(w, 2));
            }
        }
        break;
    case FR_FEED_GEORGIAN:
    case FR_FEED_ARMENIAN:
        for (int i = 0; i < n + 1 && rc == FR_OK; i++) {
            rc = fr_buf_puts(out,
                             script == FR_FEED_GEORGIAN ? PICK(geo_cons, w) : PICK(arm_cons, w));
            if (rc == FR_OK) {
                rc = fr_buf_puts(out, script == FR_FEED_GEORGIAN ? PICK(geo_vowel, w)
                                                                 : PICK(arm_vowel, w));
            }
        }
        break;
    case FR_FEED_HAN: {
        int chars = n == 1 ? 1 : n == 4 ? 3 : 2;
        for (int i = 0; i < chars && rc == FR_OK; i++) {
            uint64_t k = fr_feed_rng_zipf(w, 6000);
            rc = fr_feed_utf8_put(out, 0x4E00 + (uint32_t)((k * 7919 + 131) % 20902));
        }
        break;
    }
    case FR_FEED_KANA: {
        double u = fr_feed_rng_unit(w);
        if (u < 0.35) {
            for (int i = 0; i < n + 1 && rc == FR_OK; i++) {
                rc = fr_feed_utf8_put(out, 0x30A2 + (uint32_t)fr_feed_rng_below(w, 81));
            }
            if (rc == FR_OK && fr_feed_rng_unit(w) < 0.3) {
                rc = fr_feed_utf8_put(out, 0x30FC);
            }
        } else if (u < 0.8) {
            rc = text_spell(out, FR_FEED_HAN, NULL, w);
        } else {
            for (int i = 0; i < n + 1 && rc == FR_OK; i++) {
                rc = fr_feed_utf8_put(out, 0x3042 + (uint32_t)fr_feed_rng_below(w, 81));
            }
        }
        break;
    }
    case FR_FEED_HANGUL:
        for (int i = 0; i < n + 1 && rc == FR_OK; i++) {
            uint32_t cho = (uint32_t)fr_feed_rng_below(w, 19),
                     jung = (uint32_t)fr_feed_rng_below(w, 21);
            uint32_t jong = fr_feed_rng_unit(w) < 0.6 ? 0 : (uint32_t)fr_feed_rng_below(w, 28);
            rc = fr_feed_utf8_put(out, 0xAC00 + (cho * 21 + jung) * 28 + jong);
        }
        break;
    default:
        rc = text_syllables(out, w, n);
    }
    return rc;
}

static int text_joins(int script)
{
    return !(script == FR_FEED_HAN || script == FR_FEED_KANA || script == FR_FEED_THAI);
}

int fr_feed_text_spaced(int script)
{
    return text_joins(script);
}

/* Upper-case the first letter of the word at out->data[at..] where the
 * script has case (the shifted forms have the same UTF-8 length). */
static void text_capitalize(struct fr_buf *out, size_t at)
{
    if (at >= out->len) {
        return;
    }
    uint8_t *p = out->data + at;
    if (*p >= 'a' && *p <= 'z') {
        *p = (uint8_t)(*p - 32);
        return;
    }
    if (out->len - at < 2 || (p[0] & 0xE0) != 0xC0) {
        return;
    }
    uint32_t cp = ((uint32_t)(p[0] & 0x1F) << 6) | (p[1] & 0x3F);
    if (cp >= 0x430 && cp <= 0x44F) {
        cp -= 0x20;
    } else if (cp >= 0x450 && cp <= 0x45F) {
        cp -= 0x50;
    } else if (cp >= 0x3B1 && cp <= 0x3C9 && cp != 0x3C2) {
        cp -= 0x20;
    } else if (cp >= 0x561 && cp <= 0x586) {
        cp -= 0x30;
    } else if (cp >= 0xE0 && cp <= 0xFE && cp != 0xF7) {
        cp -= 0x20;
    } else {
        return;
    }
    p[0] = (uint8_t)(0xC0 | (cp >> 6));
    p[1] = (uint8_t)(0x80 | (cp & 0x3F));
}

static uint64_t text_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h = (h ^ (uint8_t)*s) * 1099511628211ULL;
    }
    return h;
}

int fr_feed_text_word(struct fr_buf *out, const struct fr_feed_wiki *wiki, struct fr_feed_rng *rng,
                      int capital)
{
    uint64_t k = fr_feed_rng_zipf(rng, TEXT_VOCAB);
    struct fr_feed_rng w;
    fr_feed_rng_seed(&w, text_hash(wiki->code), k, FR_FEED_SALT_WORD);
    const struct fr_feed_lang *lang = fr_feed_lang_get(wiki->code);
    const char *accents = strcmp(lang->code, wiki->code) == 0 ? lang->accents : NULL;
    size_t at = out->len;
    int rc = text_spell(out, wiki->script, accents, &w);
    if (rc == FR_OK && capital) {
        text_capitalize(out, at);
    }
    return rc;
}

int fr_feed_text_words(struct fr_buf *out, const struct fr_feed_wiki *wiki, struct fr_feed_rng *rng,
                       int n, int capital)
{
    int rc = FR_OK;
    for (int i = 0; i < n && rc == FR_OK; i++) {
        if (i > 0 && text_joins(wiki->script)) {
            rc = fr_buf_putc(out, ' ');
        }
        /* Latin-script text on other wikis now and then (names, loanwords). */
        if (rc == FR_OK && wiki->script != FR_FEED_LATIN && fr_feed_rng_unit(rng) < 0.06) {
            static const struct fr_feed_wiki latin = {.code = "en", .script = FR_FEED_LATIN};
            if (!text_joins(wiki->script) && i > 0) {
                rc = fr_buf_putc(out, ' ');
            }
            if (rc == FR_OK && wiki->rtl) {
                rc = fr_feed_utf8_put(out, 0x200E); /* LEFT-TO-RIGHT MARK around LTR runs */
            }
            if (rc == FR_OK) {
                rc = fr_feed_text_word(out, &latin, rng, 1);
            }
            if (rc == FR_OK && wiki->rtl) {
                rc = fr_feed_utf8_put(out, 0x200E);
            }
            continue;
        }
        /* French, Italian and Catalan elide articles: l'…, d'…, un'… */
        if (rc == FR_OK && i > 0 && fr_feed_rng_unit(rng) < 0.08 &&
            (strcmp(wiki->code, "fr") == 0 || strcmp(wiki->code, "it") == 0 ||
             strcmp(wiki->code, "ca") == 0)) {
            static const char *const elide[] = {"l'", "d'", "un'", "qu'", "s'"};
            rc = fr_buf_puts(out, elide[fr_feed_rng_below(rng, 5)]);
        }
        if (rc == FR_OK) {
            rc = fr_feed_text_word(out, wiki, rng, capital && i == 0);
        }
    }
    return rc;
}

int fr_feed_text_phrase(struct fr_buf *out, const struct fr_feed_wiki *wiki,
                        struct fr_feed_rng *rng)
{
    double u = fr_feed_rng_unit(rng);
    int n = u < 0.2 ? 1 : u < 0.55 ? 2 : u < 0.8 ? 3 : u < 0.92 ? 4 : 5;
    int capital = wiki->family != FR_FEED_WIKT;
    int rc = FR_OK;
    for (int i = 0; i < n && rc == FR_OK; i++) {
        if (i > 0 && text_joins(wiki->script)) {
            rc = fr_buf_putc(out, ' ');
        }
        if (rc == FR_OK) {
            rc = fr_feed_text_word(out, wiki, rng,
                                   capital && (i == 0 || fr_feed_rng_unit(rng) < 0.4));
        }
    }
    u = fr_feed_rng_unit(rng);
    if (rc == FR_OK && u < 0.08 && wiki->family != FR_FEED_WIKT) {
        rc = fr_buf_puts(out, text_joins(wiki->script) ? " (" : "（");
        if (rc == FR_OK) {
            rc = fr_feed_text_word(out, wiki, rng, 0);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, text_joins(wiki->script) ? ")" : "）");
        }
    } else if (rc == FR_OK && u < 0.13 && wiki->family != FR_FEED_WIKT) {
        rc = fr_buf_printf(out, " %d", (int)fr_feed_rng_range(rng, 1500, 2026));
    }
    return rc;
}

int fr_feed_text_user(struct fr_buf *out, uint64_t seed, uint64_t index, int bot)
{
    struct fr_feed_rng r;
    fr_feed_rng_seed(&r, seed, index, FR_FEED_SALT_USER + (bot ? 1000 : 0));
    size_t at = out->len;
    int rc;
    if (bot) {
        static const char *const suffix[] = {"Bot",  "Bot",  "Bot", "bot",
                                             " bot", "-bot", "BOT", "Bot"};
        if (fr_feed_rng_unit(&r) < 0.2) {
            int n = (int)fr_feed_rng_range(&r, 2, 4);
            rc = FR_OK;
            for (int i = 0; i < n && rc == FR_OK; i++) {
                rc = fr_buf_putc(out, (uint8_t)('A' + fr_feed_rng_below(&r, 26)));
            }
        } else {
            rc = text_syllables(out, &r, text_nsyl(&r));
            text_capitalize(out, at);
            if (rc == FR_OK && fr_feed_rng_unit(&r) < 0.4) {
                size_t at2 = out->len;
                rc = text_syllables(out, &r, text_nsyl(&r));
                text_capitalize(out, at2);
            }
        }
        return rc == FR_OK ? fr_buf_puts(out, PICK(suffix, &r)) : rc;
    }
    double u = fr_feed_rng_unit(&r);
    if (u < 0.3) { /* First Last */
        rc = text_syllables(out, &r, 1 + (int)fr_feed_rng_below(&r, 2));
        text_capitalize(out, at);
        if (rc == FR_OK) {
            rc = fr_buf_putc(out, ' ');
        }
        size_t at2 = out->len;
        if (rc == FR_OK) {
            rc = text_syllables(out, &r, text_nsyl(&r));
        }
        text_capitalize(out, at2);
    } else if (u < 0.6) { /* Nickname, sometimes with digits or a hyphen */
        rc = text_syllables(out, &r, text_nsyl(&r) + 1);
        text_capitalize(out, at);
        double v = fr_feed_rng_unit(&r);
        if (rc == FR_OK && v < 0.25) {
            rc = fr_buf_printf(out, "%d", (int)fr_feed_rng_range(&r, 1, 2025));
        } else if (rc == FR_OK && v < 0.35) {
            rc = fr_buf_putc(out, '-');
            if (rc == FR_OK) {
                rc = text_syllables(out, &r, 1);
            }
        }
    } else if (u < 0.75) { /* CamelCase */
        rc = text_syllables(out, &r, text_nsyl(&r));
        text_capitalize(out, at);
        size_t at2 = out->len;
        if (rc == FR_OK) {
            rc = text_syllables(out, &r, text_nsyl(&r));
        }
        text_capitalize(out, at2);
    } else if (u < 0.92) { /* a name in another script */
        static const uint8_t scripts[] = {FR_FEED_CYRILLIC, FR_FEED_KANA,   FR_FEED_HAN,
                                          FR_FEED_ARABIC,   FR_FEED_HEBREW, FR_FEED_DEVANAGARI,
                                          FR_FEED_HANGUL,   FR_FEED_GREEK,  FR_FEED_CYRILLIC,
                                          FR_FEED_THAI,     FR_FEED_BENGALI};
        int script = PICK(scripts, &r);
        rc = text_spell(out, script, NULL, &r);
        text_capitalize(out, at);
        if (rc == FR_OK && fr_feed_rng_unit(&r) < 0.4 && text_joins(script)) {
            rc = fr_buf_putc(out, ' ');
            size_t at2 = out->len;
            if (rc == FR_OK) {
                rc = text_spell(out, script, NULL, &r);
            }
            text_capitalize(out, at2);
        }
    } else { /* Word Word 123 */
        rc = text_syllables(out, &r, 2);
        text_capitalize(out, at);
        if (rc == FR_OK) {
            rc = fr_buf_printf(out, " %d", (int)fr_feed_rng_range(&r, 10, 99999));
        }
    }
    return rc;
}

int fr_feed_text_emoji(struct fr_buf *out, struct fr_feed_rng *rng)
{
    static const char *const emoji[] = {
        "😀",           "🙂", "😂",    "👍", "🎉", "🔥", "✨", "❤️", "🌍", "📷", "🏳️‍🌈",
        "👩‍💻", "🇫🇷",   "🤔", "🙏", "😊", "⭐", "✅", "🚀",      "🌸", "🎶", "⚽",
        "🐈",           "☕"};
    return fr_buf_puts(out, PICK(emoji, rng));
}

/* ---- MediaWiki renderings -------------------------------------------- */

int fr_feed_text_urlencode(struct fr_buf *out, const char *s, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    int rc = FR_OK;
    for (size_t i = 0; i < len && rc == FR_OK; i++) {
        uint8_t c = (uint8_t)s[i];
        if (c == ' ') {
            rc = fr_buf_putc(out, '_');
        } else if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                   strchr("-_.~;@$!*(),/:", c)) {
            rc = fr_buf_putc(out, c);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            rc = fr_buf_append(out, e, 3);
        }
    }
    return rc;
}

int fr_feed_text_html_escape(struct fr_buf *out, const char *s, size_t len)
{
    int rc = FR_OK;
    for (size_t i = 0; i < len && rc == FR_OK; i++) {
        switch (s[i]) {
        case '&':
            rc = fr_buf_puts(out, "&amp;");
            break;
        case '<':
            rc = fr_buf_puts(out, "&lt;");
            break;
        case '>':
            rc = fr_buf_puts(out, "&gt;");
            break;
        case '"':
            rc = fr_buf_puts(out, "&quot;");
            break;
        case '\'':
            rc = fr_buf_puts(out, "&#039;");
            break;
        default:
            rc = fr_buf_putc(out, (uint8_t)s[i]);
        }
    }
    return rc;
}

/* Interwiki prefixes that comments use, and where they point. */
static const char *text_interwiki(const char *target, size_t len, size_t *prefix)
{
    static const struct {
        const char *prefix, *base;
    } iw[] = {{"toollabs:", "https://iw.toolforge.org/"},
              {"d:", "https://www.wikidata.org/wiki/"},
              {"c:", "https://commons.wikimedia.org/wiki/"},
              {"m:", "https://meta.wikimedia.org/wiki/"},
              {"w:", "https://en.wikipedia.org/wiki/"}};
    for (size_t i = 0; i < sizeof iw / sizeof iw[0]; i++) {
        size_t n = strlen(iw[i].prefix);
        if (len > n && memcmp(target, iw[i].prefix, n) == 0) {
            *prefix = n;
            return iw[i].base;
        }
    }
    return NULL;
}

/* [[target|label]] and plain text to HTML. */
static int text_links(struct fr_buf *out, const char *s, size_t len,
                      const struct fr_feed_links *links)
{
    int rc = FR_OK;
    size_t i = 0;
    while (i < len && rc == FR_OK) {
        const char *open = NULL;
        for (size_t j = i; j + 1 < len; j++) {
            if (s[j] == '[' && s[j + 1] == '[') {
                open = s + j;
                break;
            }
        }
        const char *close = NULL;
        if (open) {
            for (const char *q = open + 2; q + 1 < s + len; q++) {
                if (q[0] == ']' && q[1] == ']') {
                    close = q;
                    break;
                }
            }
        }
        if (!open || !close) {
            return fr_feed_text_html_escape(out, s + i, len - i);
        }
        rc = fr_feed_text_html_escape(out, s + i, (size_t)(open - (s + i)));
        const char *t = open + 2;
        if (t < close && *t == ':') {
            t++;
        }
        const char *bar = memchr(t, '|', (size_t)(close - t));
        size_t tlen = (size_t)((bar ? bar : close) - t);
        const char *label = bar ? bar + 1 : t;
        size_t llen = bar ? (size_t)(close - label) : tlen;
        if (bar && llen == 0) { /* [[User:X|]]: the pipe trick shows the name */
            label = t;
            llen = tlen;
        }
        size_t pfx = 0;
        const char *base = text_interwiki(t, tlen, &pfx);
        i = (size_t)(close + 2 - s);
        if (rc == FR_OK && !base && links) {
            rc = links->render(links->ctx, out, t, tlen, label, llen);
            if (rc == 1) {
                rc = FR_OK;
                continue;
            }
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, "<a href=\"");
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, base ? base : "/wiki/");
        }
        if (rc == FR_OK) {
            rc = fr_feed_text_urlencode(out, t + pfx, tlen - pfx);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, base ? "\" class=\"extiw\" title=\"" : "\" title=\"");
        }
        if (rc == FR_OK) {
            rc = fr_feed_text_html_escape(out, t, tlen);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, "\">");
        }
        if (rc == FR_OK) {
            rc = fr_feed_text_html_escape(out, label, llen);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, "</a>");
        }
    }
    return rc;
}

int fr_feed_text_parse_comment(struct fr_buf *out, const char *comment, size_t len,
                               const char *page, const char *wb_text, const char *wb_sep,
                               const struct fr_feed_links *links)
{
    if (len < 6 || memcmp(comment, "/* ", 3) != 0) {
        return text_links(out, comment, len, links);
    }
    const char *end = NULL;
    for (size_t i = 3; i + 3 <= len; i++) {
        if (memcmp(comment + i, " */", 3) == 0) {
            end = comment + i;
            break;
        }
    }
    if (!end) {
        return text_links(out, comment, len, links);
    }
    const char *sect = comment + 3;
    size_t slen = (size_t)(end - sect);
    const char *rest = end + 3;
    size_t rlen = len - (size_t)(rest - comment);
    if (rlen && *rest == ' ') {
        rest++;
        rlen--;
    }
    int rc;
    if (wb_text) {
        rc = fr_feed_utf8_put(out, 0x200E);
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, "<span dir=\"auto\"><span class=\"autocomment\">");
        }
        if (rc == FR_OK) {
            rc = fr_feed_text_html_escape(out, wb_text, strlen(wb_text));
        }
        if (rc == FR_OK && rlen) {
            rc = fr_buf_puts(out, wb_sep ? wb_sep : ": ");
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, rlen ? "</span></span> " : "</span></span>");
        }
    } else {
        rc = fr_buf_puts(out, "<span class=\"autocomment\"><a href=\"/wiki/");
        if (rc == FR_OK) {
            rc = fr_feed_text_urlencode(out, page, strlen(page));
        }
        if (rc == FR_OK) {
            rc = fr_buf_putc(out, '#');
        }
        if (rc == FR_OK) {
            rc = fr_feed_text_urlencode(out, sect, slen);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, "\" title=\"");
        }
        if (rc == FR_OK) {
            rc = fr_feed_text_html_escape(out, page, strlen(page));
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, "\">→<bdi dir=\"ltr\">");
        }
        if (rc == FR_OK) {
            rc = fr_feed_text_html_escape(out, sect, slen);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, rlen ? "</bdi></a>: </span> " : "</bdi></a></span>");
        }
    }
    if (rc == FR_OK && rlen) {
        rc = text_links(out, rest, rlen, links);
    }
    return rc;
}
