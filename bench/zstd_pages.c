/*
 * zstd_pages.c — compress a file in independent pages as the Parquet writer
 * does (one zstd frame per page) and print the compressed size, so that
 * bench/zstd_pages.sh can count the instructions under callgrind. Options
 * are zstd parameters; 0 or absent leaves the level's own value:
 *
 *   zstd_pages FILE PAGE_BYTES LEVEL HASHLOG MINMATCH TARGETLEN LITERALS
 *
 * LITERALS: 1 forces Huffman-coded literals (ZSTD_c_literalCompressionMode,
 * what src/parquet/codec.c's PQ_COMP_RANDOM sets), 2 stores them raw, 0
 * leaves zstd's choice.
 * TARGETLEN -1 leaves the level's value.
 */
#define ZSTD_STATIC_LINKING_ONLY
#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>

static int set(ZSTD_CCtx *c, ZSTD_cParameter p, int v)
{
    size_t rc = ZSTD_CCtx_setParameter(c, p, v);
    if (ZSTD_isError(rc)) {
        fprintf(stderr, "zstd_pages: parameter %d = %d: %s\n", (int)p, v, ZSTD_getErrorName(rc));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 8) {
        fprintf(stderr, "usage: zstd_pages FILE PAGE_BYTES LEVEL HASHLOG MINMATCH TARGETLEN LITERALS\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    size_t page = strtoul(argv[2], NULL, 10);
    int level = atoi(argv[3]), hlog = atoi(argv[4]), mml = atoi(argv[5]);
    int tlen = atoi(argv[6]), lit = atoi(argv[7]);
    char *in = malloc(page), *out = malloc(ZSTD_compressBound(page));
    ZSTD_CCtx *c = ZSTD_createCCtx();
    if (!page || !in || !out || !c) {
        fprintf(stderr, "zstd_pages: no memory\n");
        return 1;
    }
    unsigned long long total_in = 0, total_out = 0;
    size_t n;
    while ((n = fread(in, 1, page, f)) > 0) {
        ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
        if (set(c, ZSTD_c_compressionLevel, level) || (hlog && set(c, ZSTD_c_hashLog, hlog)) ||
            (mml && set(c, ZSTD_c_minMatch, mml)) ||
            (tlen >= 0 && set(c, ZSTD_c_targetLength, tlen)) ||
            (lit && set(c, ZSTD_c_literalCompressionMode, lit == 2 ? ZSTD_ps_disable : ZSTD_ps_enable))) {
            return 1;
        }
        size_t r = ZSTD_compress2(c, out, ZSTD_compressBound(page), in, n);
        if (ZSTD_isError(r)) {
            fprintf(stderr, "zstd_pages: %s\n", ZSTD_getErrorName(r));
            return 1;
        }
        total_in += n;
        total_out += r;
    }
    fclose(f);
    printf("%llu %llu\n", total_in, total_out);
    ZSTD_freeCCtx(c);
    free(in);
    free(out);
    return 0;
}
