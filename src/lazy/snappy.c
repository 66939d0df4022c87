/*
 * snappy.c — libsnappy, opened on first use (lazy.h, docs/adr/0027): only
 * Parquet files written with the SNAPPY codec need it (other engines' files,
 * read back or compacted). libsnappy is C++, so linking it maps the C++
 * runtime into every process.
 */
#include <snappy-c.h>

#include "lazy/lazy.h"

#define SNAPPY_FUNCS(X)                                                                    \
    X(snappy_status, snappy_compress,                                                      \
      (const char *input, size_t input_length, char *compressed, size_t *compressed_length), \
      (input, input_length, compressed, compressed_length), SNAPPY_INVALID_INPUT)          \
    X(snappy_status, snappy_uncompress,                                                    \
      (const char *compressed, size_t compressed_length, char *uncompressed,               \
       size_t *uncompressed_length),                                                       \
      (compressed, compressed_length, uncompressed, uncompressed_length),                  \
      SNAPPY_INVALID_INPUT)                                                                \
    X(size_t, snappy_max_compressed_length, (size_t source_length), (source_length), 0)    \
    X(snappy_status, snappy_uncompressed_length,                                           \
      (const char *compressed, size_t compressed_length, size_t *result),                 \
      (compressed, compressed_length, result), SNAPPY_INVALID_INPUT)

LAZY_LIBRARY(snappy_dl, "libsnappy.so.1", "libsnappy1v5", SNAPPY_FUNCS, LAZY_NONE, LAZY_NONE);

#define SNAPPY_STUB(ret, name, params, args, fail) \
    LAZY_STUB(snappy_dl, ret, name, params, args, fail)
SNAPPY_FUNCS(SNAPPY_STUB)
