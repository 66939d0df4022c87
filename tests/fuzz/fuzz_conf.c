/*
 * fuzz_conf.c — libFuzzer target for the INI configuration
 * (src/conf/conf.c on Debian's inih): the file a user or a deployment
 * writes, read by every command at start.
 *
 * Each input is the file's content, read from a memfd through its
 * /proc/self/fd path exactly as `--config FILE` reads a file. Checks:
 *   1. nothing crashes, leaks or overflows (ASan, UBSan), and a refusal
 *      always says why (a non-empty message);
 *   2. a file that loads prints (fr_conf_print, what `freshet config`
 *      shows) as INI that loads again to the same values: the printed
 *      configuration is a faithful copy of the one in effect. Except
 *      where INI cannot say it: a printed line (value plus its "; origin"
 *      comment) longer than inih's line limit, which the loader refuses
 *      by name, or a value with a ';' at its start or after a space, which
 *      reads back as an inline comment (INI has no escapes);
 *   3. a line longer than that limit is refused, never split into two
 *      (inih parses what does not fit as a line of its own).
 * One thread.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ini.h>

#include "conf/conf.h"
#include "core/err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Load bytes as a config file into conf: the loader's result. */
static int load(struct fr_conf *conf, const void *p, size_t n, char *err, size_t errlen)
{
    int fd = memfd_create("fuzz_conf", MFD_CLOEXEC);
    if (fd < 0 || (n && write(fd, p, n) != (ssize_t)n)) {
        abort(); /* the harness, not the code under test */
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    err[0] = 0;
    int rc = fr_conf_load_file(conf, path, err, errlen);
    close(fd);
    return rc;
}

/* Whether a printed value holds ';' where inih starts an inline comment:
 * after whitespace (the " = " before the value included). */
static int has_inline_semicolon(const char *p, size_t n)
{
    for (const char *line = p; line < p + n;) {
        const char *nl = memchr(line, '\n', (size_t)(p + n - line));
        const char *end = nl ? nl : p + n, *origin = NULL;
        for (const char *c = line; c + 6 <= end; c++) {
            if (memcmp(c, "    ; ", 6) == 0) {
                origin = c;
            }
        }
        for (const char *c = line + 1; origin && c < origin; c++) {
            if (*c == ';' && (c[-1] == ' ' || c[-1] == '\t')) {
                return 1;
            }
        }
        line = end + 1;
    }
    return 0;
}

/* fr_conf_print without the "; origin" comments (the origin is "file"
 * after a reload where it was "default" before). */
static char *print_values(const struct fr_conf *conf, size_t *len)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    if (!f) {
        abort();
    }
    fr_conf_print(conf, f);
    fclose(f);
    char *w = text;
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        char *cut = NULL;
        for (char *c = line; c + 5 < line + n; c++) {
            if (memcmp(c, "    ; ", 6) == 0) {
                cut = c; /* the last one: a value may hold "    ; " itself */
            }
        }
        size_t keep = cut ? (size_t)(cut - line) : n;
        memmove(w, line, keep);
        w += keep;
        *w++ = '\n';
        line += n + (nl ? 1 : 0);
    }
    *w = 0;
    *len = (size_t)(w - text);
    return text;
}

/* The longest line in p[0..n) (without its '\r'), and whether it holds a NUL. */
static size_t longest_line(const char *p, size_t n, int *nul)
{
    size_t best = 0, start = 0;
    *nul = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && p[i] == 0) {
            *nul = 1;
        }
        if (i == n || p[i] == '\n') {
            size_t len = i - start - (i > start && p[i - 1] == '\r');
            best = len > best ? len : best;
            start = i + 1;
        }
    }
    return best;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fr_conf one, two;
    char err[512];
    if (fr_conf_init(&one) != FR_OK || fr_conf_init(&two) != FR_OK) {
        abort();
    }
    int rc = load(&one, data, size, err, sizeof err);
    if (rc != FR_OK && !err[0]) {
        abort(); /* refused without saying why */
    }
    int nul;
    if (rc == FR_OK && (longest_line((const char *)data, size, &nul) > INI_MAX_LINE - 3 || nul)) {
        abort(); /* a line inih splits (or cuts at a NUL) was taken */
    }
    if (rc == FR_OK) {
        size_t n1, n2, np;
        char *printed = NULL;
        FILE *f = open_memstream(&printed, &np);
        if (!f) {
            abort();
        }
        fr_conf_print(&one, f);
        fclose(f);
        if (longest_line(printed, np, &nul) > INI_MAX_LINE - 3 ||
            has_inline_semicolon(printed, np)) {
            goto skip; /* documented: such a value must come from --set or a shorter line */
        }
        if (load(&two, printed, np, err, sizeof err) != FR_OK) {
            fprintf(stderr, "printed configuration does not load: %s\n", err);
            abort();
        }
        char *a = print_values(&one, &n1), *b = print_values(&two, &n2);
        if (n1 != n2 || memcmp(a, b, n1) != 0) {
            fprintf(stderr, "printed configuration loads to other values\n");
            abort();
        }
        free(a);
        free(b);
    skip:
        free(printed);
    }
    fr_conf_free(&one);
    fr_conf_free(&two);
    return 0;
}
