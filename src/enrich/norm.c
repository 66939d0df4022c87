/*
 * norm.c — MediaWiki title normalisation as far as a client can do it
 * without the wiki's siteinfo. The cache key is the normalised title, so
 * "Marie_Curie" and "Marie Curie" share an entry; the API's "normalized"
 * list (parse.c) maps whatever the server normalises further (namespace
 * names, the first letter after a namespace prefix).
 *
 * Rules, in order (MediaWiki's MediaWikiTitleCodec::splitTitleString):
 *   '_' becomes ' '; runs of spaces become one; both ends are trimmed; one
 *   leading ':' is dropped; the title is invalid when empty, longer than
 *   255 bytes, not UTF-8, or holding a control character, DEL or one of
 *   # < > [ ] { } |; the first letter is upper-cased (simple mapping for
 *   Latin-1, Latin Extended-A, Greek, Cyrillic and Armenian) except on
 *   Wiktionaries ($wgCapitalLinks = false there).
 * Pure functions; any thread.
 */
#include "enrich/enrich_int.h"

#include "core/utf8.h"
#include "core/err.h"

#include <string.h>

int fr_enrich_norm_is_wiktionary(const char *wiki)
{
    size_t n = strlen(wiki);
    return (n >= 10 && strcmp(wiki + n - 10, "wiktionary") == 0) ||
           strstr(wiki, ".wiktionary.") != NULL;
}

uint32_t fr_enrich_norm_upper(uint32_t cp)
{
    if (cp >= 'a' && cp <= 'z') {
        return cp - 32;
    }
    if (cp >= 0xE0 && cp <= 0xFE && cp != 0xF7) {
        return cp - 0x20;
    }
    /* Latin Extended-A pairs: upper even / lower odd, then odd / even. */
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

/* Decode one code point; its length, or 0 when s is not UTF-8 there
 * (overlong forms, surrogates and values past U+10FFFF included). */
static size_t norm_cp(const unsigned char *s, size_t len, uint32_t *cp)
{
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
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < min[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        return 0;
    }
    *cp = v;
    return n;
}

int fr_enrich_norm_title(const char *wiki, const char *title, size_t len,
                         char out[FR_ENRICH_TITLE_MAX + 1])
{
    const unsigned char *s = (const unsigned char *)title;
    size_t i = 0, n = 0;
    int space = 1, first = 1, colon_done = 0;
    int capital = !fr_enrich_norm_is_wiktionary(wiki);
    while (i < len) {
        uint32_t cp;
        size_t k = norm_cp(s + i, len - i, &cp);
        if (k == 0) {
            return FR_EINVAL;
        }
        i += k;
        if (cp == '_') {
            cp = ' ';
        }
        if (cp < 0x20 || cp == 0x7F || (cp < 0x80 && strchr("#<>[]{}|", (int)cp))) {
            return FR_EINVAL;
        }
        if (cp == ' ') {
            if (!space) {
                space = 1;
                if (n + 1 > FR_ENRICH_TITLE_MAX) {
                    return FR_EINVAL;
                }
                out[n++] = ' ';
            }
            continue;
        }
        space = 0;
        if (cp == ':' && first && !colon_done) {
            colon_done = 1; /* a leading ':' is dropped, and spaces after it */
            space = 1;
            continue;
        }
        if (first && capital) {
            cp = fr_enrich_norm_upper(cp);
        }
        first = 0;
        char enc[4];
        size_t e = fr_utf8_put(enc, cp);
        if (n + e > FR_ENRICH_TITLE_MAX) {
            return FR_EINVAL;
        }
        memcpy(out + n, enc, e);
        n += e;
    }
    while (n > 0 && out[n - 1] == ' ') {
        n--;
    }
    out[n] = 0;
    return n == 0 ? FR_EINVAL : (int)n;
}
