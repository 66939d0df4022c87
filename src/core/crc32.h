/*
 * crc32.h — CRC-32 (the gzip/zlib one: reflected polynomial 0xEDB88320),
 * the checksum of a Parquet page (the page header's `crc` field, computed
 * over the page's bytes as written, after compression). A slicing-by-8
 * table, built once on first use. Thread-safe.
 */
#ifndef FR_CRC32_H
#define FR_CRC32_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Continue a CRC: pass 0 to start. fr_crc32(0, "123456789", 9) == 0xCBF43926. */
uint32_t fr_crc32(uint32_t crc, const void *data, size_t len);

/* A reflected CRC-32 of polynomial poly (reversed form, e.g. 0xEDB88320),
 * by slicing by 8; its tables are built on first use. Static storage:
 * static struct fr_crc_slice8 s = {.poly = P}; */
struct fr_crc_slice8 {
    uint32_t poly;
    atomic_int ready;
    uint32_t t[8][256];
};
uint32_t fr_crc_slice8(struct fr_crc_slice8 *s, uint32_t crc, const void *data, size_t len);

#endif
