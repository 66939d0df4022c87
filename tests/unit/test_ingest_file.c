/*
 * test_ingest_file.c — the pure parts of `ingest --file`: the file_pos
 * header value, the identity hash (FNV-1a 64 reference vectors), the line
 * splitter against a one-pass oracle over random streams and random read
 * sizes, and the decompressing sources on files written by the gzip and
 * zstd command-line tools (truncated, corrupt and concatenated inputs too),
 * and zlib opened only once a .gz is read.
 */
#include "check.h"

#include "core/dynlib.h"
#include "core/err.h"
#include "ingest/decomp.h"
#include "ingest/file.h"

#include <stdlib.h>

static void test_fpos(void)
{
    struct fr_ingest_fpos pos = {.size = 1451234567, .head = 0x0123456789abcdefull, .offset = 42};
    snprintf(pos.name, sizeof pos.name, "rc 2026-11.ndjson.zst");
    char out[400];
    int n = fr_ingest_fpos_format(&pos, out, sizeof out);
    CHECK_EQ_STR(out, "1451234567 0123456789abcdef 42 rc 2026-11.ndjson.zst");
    CHECK_EQ_INT(n, (int)strlen(out));
    struct fr_ingest_fpos back;
    CHECK_EQ_INT(fr_ingest_fpos_parse(out, (size_t)n, &back), FR_OK);
    CHECK(back.size == pos.size && back.head == pos.head && back.offset == pos.offset);
    CHECK_EQ_STR(back.name, pos.name);
    const char *pipe = "-1 ffffffffffffffff 0 -";
    CHECK_EQ_INT(fr_ingest_fpos_parse(pipe, strlen(pipe), &back), FR_OK);
    CHECK(back.size == -1 && back.head == UINT64_MAX && back.offset == 0);
    CHECK_EQ_STR(back.name, "-");
    const char *bad[] = {"",
                         "1 0123456789abcdef 2",
                         "1 0123456789abcdef 2 ",
                         "1 0123456789ABCDEF 2 x",
                         "1 0123456789abcde 2 x",
                         "x 0123456789abcdef 2 x",
                         "-2 0123456789abcdef 2 x",
                         "1 0123456789abcdef -2 x",
                         "99999999999999999999 0123456789abcdef 2 x"};
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_EQ_INT(fr_ingest_fpos_parse(bad[i], strlen(bad[i]), &back), FR_ECORRUPT);
    }
    CHECK_EQ_INT(fr_ingest_fpos_format(&pos, out, 10), FR_ETOOBIG);
}

static void test_hash(void)
{
    /* FNV-1a 64 reference values (the FNV authors' test suite). */
    CHECK(fr_ingest_hash64("", 0) == 0xcbf29ce484222325ull);
    CHECK(fr_ingest_hash64("a", 1) == 0xaf63dc4c8601ec8cull);
    CHECK(fr_ingest_hash64("foobar", 6) == 0x85944171f73967e8ull);
}

/* The oracle: split the whole stream at once. */
struct oline {
    size_t off, len;
    int oversize;
};
static size_t oracle(const char *s, size_t n, size_t max, struct oline *out)
{
    size_t count = 0, start = 0;
    while (start < n) {
        const char *nl = memchr(s + start, '\n', n - start);
        size_t end = nl ? (size_t)(nl - s) : n;
        size_t len = end - start;
        if (len > 0 && s[end - 1] == '\r') {
            len--;
        }
        out[count++] = (struct oline){start, len, len > max};
        start = end + 1;
    }
    return count;
}

static void test_lines_model(void)
{
    enum { MAX = 64, CHUNK = 16, STREAM = 20000 };
    char *s = malloc(STREAM);
    struct oline *want = malloc(sizeof *want * STREAM);
    srand(20261206);
    for (int round = 0; round < 300; round++) {
        size_t n = 0;
        while (n < STREAM - 400) {
            int kind = rand() % 10;
            size_t len = kind == 0   ? 0
                         : kind == 1 ? MAX + 1 + (size_t)(rand() % 300)
                                     : (size_t)(rand() % (MAX + 1));
            if (kind == 2) {
                len = MAX; /* exactly at the limit, then with a CR */
            }
            for (size_t i = 0; i < len; i++) {
                s[n++] = (char)('a' + rand() % 26);
            }
            if (rand() % 3 == 0) {
                s[n++] = '\r';
            }
            s[n++] = '\n';
        }
        if (round % 2) {
            n--; /* a final line without '\n' (or a lone '\r' line) */
        }
        size_t nwant = oracle(s, n, MAX, want);
        struct fr_ingest_lines lines;
        CHECK_EQ_INT(fr_ingest_lines_init(&lines, MAX, CHUNK), FR_OK);
        size_t fed = 0, got = 0;
        int eof = 0, bad = 0;
        while (!bad) {
            struct fr_ingest_line line;
            while (fr_ingest_lines_next(&lines, eof, &line) == 1) {
                if (got >= nwant || line.offset != want[got].off || line.len != want[got].len ||
                    line.oversize != want[got].oversize ||
                    (!line.oversize && memcmp(line.data, s + line.offset, line.len) != 0)) {
                    bad = 1;
                    if (got < nwant) {
                        fprintf(stderr,
                                "line %zu: got off %llu len %zu over %d, want off %zu len %zu over "
                                "%d\n",
                                got, (unsigned long long)line.offset, line.len, line.oversize,
                                want[got].off, want[got].len, want[got].oversize);
                    }
                    break;
                }
                got++;
            }
            if (eof) {
                break;
            }
            uint8_t *at;
            size_t room;
            fr_ingest_lines_space(&lines, &at, &room);
            CHECK(room >= CHUNK);
            size_t k = 1 + (size_t)rand() % CHUNK;
            k = k < n - fed ? k : n - fed;
            memcpy(at, s + fed, k);
            fr_ingest_lines_added(&lines, k);
            fed += k;
            eof = k == 0;
        }
        CHECK(!bad);
        CHECK_EQ_INT((int)got, (int)nwant);
        fr_ingest_lines_free(&lines);
        if (check_case_failed) {
            fprintf(stderr, "round %d: %zu of %zu lines matched\n", round, got, nwant);
            break;
        }
    }
    free(s);
    free(want);
}

/* Read a whole source; FR_OK and the bytes, or the error. */
static int read_all(const char *path, uint64_t skip, char *out, size_t cap, size_t *len)
{
    struct fr_ingest_src *src;
    int rc = fr_ingest_src_open(path, &src);
    if (rc < 0) {
        return rc;
    }
    *len = 0;
    if (skip) {
        rc = fr_ingest_src_skip(src, skip);
    }
    while (rc == FR_OK) {
        size_t got;
        rc = fr_ingest_src_read(src, out + *len, cap - *len < 7 ? cap - *len : 7, &got);
        if (rc == FR_OK && got == 0) {
            break;
        }
        *len += got;
    }
    fr_ingest_src_close(src);
    return rc;
}

static int sh(const char *cmd)
{
    int rc = system(cmd);
    if (rc != 0) {
        fprintf(stderr, "command failed: %s\n", cmd);
    }
    return rc;
}

static void test_sources(void)
{
    const char *dir = check_tmpdir();
    char plain[4200], cmd[9000];
    snprintf(plain, sizeof plain, "%s/x.ndjson", dir);
    enum { N = 200000 };
    char *text = malloc(N), *back = malloc(N + 16);
    for (size_t i = 0; i < N; i++) {
        text[i] = i % 50 == 49 ? '\n' : (char)('a' + rand() % 26);
    }
    FILE *f = fopen(plain, "w");
    fwrite(text, 1, N, f);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "cd %s && gzip -c x.ndjson > x.ndjson.gz && zstd -q -c x.ndjson > x.ndjson.zst && "
             "head -c 100000 x.ndjson | gzip -c > two.gz && tail -c +100001 x.ndjson | gzip -c "
             ">> two.gz && head -c 100000 x.ndjson | zstd -q -c > two.zst && "
             "tail -c +100001 x.ndjson | zstd -q -c >> two.zst && "
             "head -c 3000 x.ndjson.gz > cut.gz && head -c 3000 x.ndjson.zst > cut.zst && "
             "cp x.ndjson bad.gz && cp x.ndjson bad.zst",
             dir);
    CHECK_EQ_INT(sh(cmd), 0);
    const char *whole[] = {"x.ndjson", "x.ndjson.gz", "x.ndjson.zst", "two.gz", "two.zst"};
    const enum fr_ingest_codec codec[] = {FR_INGEST_PLAIN, FR_INGEST_GZIP, FR_INGEST_ZSTD,
                                          FR_INGEST_GZIP, FR_INGEST_ZSTD};
    for (unsigned i = 0; i < 5; i++) {
        char path[4300];
        snprintf(path, sizeof path, "%s/%s", dir, whole[i]);
        size_t len = 0;
        CHECK_EQ_INT(read_all(path, 0, back, N + 16, &len), FR_OK);
        CHECK_EQ_INT((int)len, N);
        CHECK(memcmp(back, text, N) == 0);
        /* Skipping lands on the same bytes, whatever the codec. */
        CHECK_EQ_INT(read_all(path, 123457, back, N + 16, &len), FR_OK);
        CHECK_EQ_INT((int)len, N - 123457);
        CHECK(memcmp(back, text + 123457, len) == 0);
        struct fr_ingest_src *src;
        CHECK_EQ_INT(fr_ingest_src_open(path, &src), FR_OK);
        CHECK_EQ_INT((int)fr_ingest_src_codec(src), (int)codec[i]);
        struct stat st;
        stat(path, &st);
        CHECK(fr_ingest_src_ident(src)->size == st.st_size);
        CHECK(fr_ingest_src_skip(src, N + 1) == FR_ETRUNC);
        fr_ingest_src_close(src);
    }
    /* The identity: the stored size and the hash of the first 64 KiB. */
    struct fr_ingest_src *src;
    CHECK_EQ_INT(fr_ingest_src_open(plain, &src), FR_OK);
    CHECK(fr_ingest_src_ident(src)->head == fr_ingest_hash64(text, FR_INGEST_HEAD_BYTES));
    fr_ingest_src_close(src);
    const char *broken[] = {"cut.gz", "cut.zst", "bad.gz", "bad.zst"};
    const int want[] = {FR_ETRUNC, FR_ETRUNC, FR_ECORRUPT, FR_ECORRUPT};
    for (unsigned i = 0; i < 4; i++) {
        char path[4300];
        snprintf(path, sizeof path, "%s/%s", dir, broken[i]);
        size_t len = 0;
        CHECK_EQ_INT(read_all(path, 0, back, N + 16, &len), want[i]);
    }
    char missing[4300];
    snprintf(missing, sizeof missing, "%s/none.ndjson", dir);
    CHECK_EQ_INT(fr_ingest_src_open(missing, &src), FR_ENOTFOUND);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    sh(cmd);
    free(text);
    free(back);
}

/* zlib is opened on first use (src/lazy/zlib.c, ADR 0027): not mapped
 * before a .gz is read, mapped after. */
static void test_zlib_not_mapped_yet(void)
{
    CHECK(!fr_dl_mapped("libz.so.1"));
}
static void test_zlib_mapped_after_gz(void)
{
    CHECK(fr_dl_mapped("libz.so.1"));
}

int main(void)
{
    RUN(test_zlib_not_mapped_yet);
    RUN(test_fpos);
    RUN(test_hash);
    RUN(test_lines_model);
    RUN(test_sources);
    RUN(test_zlib_mapped_after_gz);
    return check_report();
}
