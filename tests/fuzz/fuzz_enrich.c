/*
 * fuzz_enrich.c — libFuzzer target for src/enrich's parsers.
 *
 * Byte 0 picks the mode; the rest is the input, copied to a heap block of
 * exactly its length (so ASan sees any read past it).
 *
 *   even: fr_enrich_parse on the bytes as an API answer:
 *           1. FR_OK only when src/core/json.c validates the whole text;
 *           2. parsing twice gives the same code and the same pages;
 *           3. an accepted item is "Q" and digits, and every page found by
 *              its own title through fr_enrich_reply_find.
 *   odd:  fr_enrich_norm_title on the bytes as a title (byte 1 picks an
 *         ordinary wiki or a Wiktionary):
 *           1. a result is valid UTF-8, at most 255 bytes, without '_',
 *              runs of spaces or spaces at either end;
 *           2. normalising the result again gives it back unchanged (unless
 *              it starts with ':', left by an input starting with "::").
 *
 * Any difference aborts. Built with clang -fsanitize=fuzzer,address,
 * undefined by tests/fuzz/enrich.cmake; the ctest test fuzz_enrich runs it
 * for 10 s on tests/fuzz/corpus/enrich.
 */
#include "core/err.h"
#include "core/json.h"
#include "core/utf8.h"
#include "enrich/enrich_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct fr_enrich_reply r1, r2;

static void fz_parse(const char *s, size_t n)
{
    int a = fr_enrich_parse(s, n, &r1);
    int b = fr_enrich_parse(s, n, &r2);
    if (a != b) {
        abort();
    }
    if (a == FR_OK && fr_json_validate(s, s + n) < 0) {
        abort();
    }
    if (a != FR_OK) {
        return;
    }
    if (r1.npages != r2.npages || r1.nnorm != r2.nnorm) {
        abort();
    }
    for (int i = 0; i < r1.npages; i++) {
        const struct fr_enrich_reply_page *p = &r1.pages[i];
        if (strcmp(p->title, r2.pages[i].title) != 0 || strcmp(p->item, r2.pages[i].item) != 0) {
            abort();
        }
        if (p->item[0]) {
            if (p->item[0] != 'Q' || p->item[1] < '1' || p->item[1] > '9') {
                abort();
            }
            for (const char *c = p->item + 1; *c; c++) {
                if (*c < '0' || *c > '9') {
                    abort();
                }
            }
        }
        /* a page is found by its own title unless a normalized entry
         * redirects that title elsewhere, or an earlier page has it */
        int redirected = 0;
        for (int k = 0; k < r1.nnorm; k++) {
            redirected |= strcmp(r1.norm[k].from, p->title) == 0;
        }
        const struct fr_enrich_reply_page *f = fr_enrich_reply_find(&r1, p->title);
        if (!redirected && (!f || strcmp(f->title, p->title) != 0)) {
            abort();
        }
    }
}

static void fz_norm(const char *wiki, const char *s, size_t n)
{
    char out[FR_ENRICH_TITLE_MAX + 1], again[FR_ENRICH_TITLE_MAX + 1];
    int k = fr_enrich_norm_title(wiki, s, n, out);
    if (k < 0) {
        if (k != FR_EINVAL) {
            abort();
        }
        return;
    }
    if (k == 0 || k > FR_ENRICH_TITLE_MAX || strlen(out) != (size_t)k ||
        !fr_utf8_valid((const unsigned char *)out, (size_t)k) || strchr(out, '_') ||
        strstr(out, "  ") || out[0] == ' ' || out[k - 1] == ' ') {
        abort();
    }
    if (out[0] == ':') {
        return; /* "::x" keeps one colon (MediaWiki drops one), so it is not a fixed point */
    }
    int k2 = fr_enrich_norm_title(wiki, out, (size_t)k, again);
    if (k2 != k || memcmp(out, again, (size_t)k) != 0) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) {
        return 0;
    }
    size_t n = size - 1;
    char *copy = malloc(n ? n : 1);
    if (!copy) {
        return 0;
    }
    memcpy(copy, data + 1, n);
    if (data[0] % 2 == 0) {
        fz_parse(copy, n);
    } else {
        fz_norm(data[0] & 2 ? "enwiktionary" : "en.wikipedia.org", copy, n);
    }
    free(copy);
    return 0;
}
