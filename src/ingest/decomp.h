/*
 * decomp.h — one input of `freshet ingest --file`: a file or standard input,
 * read as plain bytes, gzip (zlib) or zstd (libzstd), and its identity.
 *
 * The codec comes from the name's suffix (".gz", ".zst"); standard input
 * ("-") has no name, so its first bytes decide (gzip's 1f 8b, zstd's
 * 28 b5 2f fd). Concatenated gzip members and zstd frames are read as one
 * stream, as gzip -d and zstd -d do.
 *
 * Identity (docs/adr/0047): the stored size (-1 for a pipe) and a 64-bit
 * FNV-1a hash of the first FR_INGEST_HEAD_BYTES stored (compressed) bytes.
 * It is read at open, before anything else, so a resumed import can tell
 * the file it started from a file that changed since.
 *
 * Offsets are in the decompressed stream. One thread owns a source.
 */
#ifndef FR_INGEST_DECOMP_H
#define FR_INGEST_DECOMP_H

#include <stddef.h>
#include <stdint.h>

#define FR_INGEST_HEAD_BYTES (64 * 1024)

enum fr_ingest_codec { FR_INGEST_PLAIN, FR_INGEST_GZIP, FR_INGEST_ZSTD };

struct fr_ingest_ident {
    int64_t size;  /* bytes stored (compressed size for .gz/.zst); -1: a pipe */
    uint64_t head; /* FNV-1a 64 of the first min(size, FR_INGEST_HEAD_BYTES) stored bytes */
};

struct fr_ingest_src; /* opaque */

/* Open path ("-": standard input, which is not closed at the end) and read
 * its head. FR_ENOTFOUND / FR_EIO with a message on stderr; FR_ENOMEM.
 * Free with fr_ingest_src_close. */
int fr_ingest_src_open(const char *path, struct fr_ingest_src **out);
const struct fr_ingest_ident *fr_ingest_src_ident(const struct fr_ingest_src *src);
enum fr_ingest_codec fr_ingest_src_codec(const struct fr_ingest_src *src);
/* FNV-1a 64 of len bytes (the identity's hash; exposed for the tests). */
uint64_t fr_ingest_hash64(const void *data, size_t len);
/* Up to cap decompressed bytes into buf; *n == 0 at the end of input.
 * FR_ECORRUPT: not valid gzip/zstd data; FR_ETRUNC: the compressed stream
 * ends inside a member or frame; FR_EIO: read error. Messages name path. */
int fr_ingest_src_read(struct fr_ingest_src *src, void *buf, size_t cap, size_t *n);
/* Skip n decompressed bytes (an lseek for a plain regular file, else read
 * and discard). FR_ETRUNC when the input ends first. */
int fr_ingest_src_skip(struct fr_ingest_src *src, uint64_t n);
/* Accepts NULL. */
void fr_ingest_src_close(struct fr_ingest_src *src);

#endif
