/*
 * zlib.c — zlib, opened on first use (lazy.h, docs/adr/0027): only
 * `freshet ingest --file X.gz` inflates anything, so the other commands
 * never map it. inflateInit2() is a macro over inflateInit2_, which is the
 * symbol the library exports.
 */
#include <zlib.h>

#include "lazy/lazy.h"

#define ZLIB_FUNCS(X)                                                                              \
    X(int, inflateInit2_, (z_streamp strm, int windowBits, const char *version, int size),         \
      (strm, windowBits, version, size), Z_VERSION_ERROR)                                          \
    X(int, inflate, (z_streamp strm, int flush), (strm, flush), Z_STREAM_ERROR)                    \
    X(int, inflateReset, (z_streamp strm), (strm), Z_STREAM_ERROR)                                 \
    X(int, inflateEnd, (z_streamp strm), (strm), Z_STREAM_ERROR)

LAZY_LIBRARY(zlib_dl, "libz.so.1", "zlib1g", ZLIB_FUNCS, LAZY_NONE, LAZY_NONE);

#define ZLIB_STUB(ret, name, params, args, fail) LAZY_STUB(zlib_dl, ret, name, params, args, fail)
ZLIB_FUNCS(ZLIB_STUB)
