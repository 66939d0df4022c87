/*
 * crc32.c — CRC-32 (gzip's), slicing by 8. The table is built once on
 * first use (a benign race: every thread computes the same values, and the
 * ready flag is atomic). Little-endian loads, as crc32c.c.
 */
#include "core/crc32.h"

#include <stdatomic.h>
#include <string.h>

static uint32_t crc32_table[8][256];
static atomic_int crc32_table_ready;

static void crc32_table_build(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) {
            c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
        }
        crc32_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        for (int t = 1; t < 8; t++) {
            uint32_t prev = crc32_table[t - 1][n];
            crc32_table[t][n] = (prev >> 8) ^ crc32_table[0][prev & 0xff];
        }
    }
    atomic_store(&crc32_table_ready, 1);
}

uint32_t fr_crc32(uint32_t crc, const void *data, size_t len)
{
    if (!atomic_load(&crc32_table_ready)) {
        crc32_table_build();
    }
    const uint8_t *p = data;
    crc = ~crc;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= crc;
        crc = crc32_table[7][w & 0xff] ^ crc32_table[6][(w >> 8) & 0xff] ^
              crc32_table[5][(w >> 16) & 0xff] ^ crc32_table[4][(w >> 24) & 0xff] ^
              crc32_table[3][(w >> 32) & 0xff] ^ crc32_table[2][(w >> 40) & 0xff] ^
              crc32_table[1][(w >> 48) & 0xff] ^ crc32_table[0][w >> 56];
        p += 8;
        len -= 8;
    }
    while (len--) {
        crc = (crc >> 8) ^ crc32_table[0][(crc ^ *p++) & 0xff];
    }
    return ~crc;
}
