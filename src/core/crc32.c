/*
 * crc32.c — reflected CRC-32s by slicing by 8, for any polynomial
 * (fr_crc_slice8: gzip's CRC-32 here, crc32c.c's CRC-32C without SSE 4.2),
 * and fr_crc32, gzip's CRC-32 (Parquet page headers). A table set is built
 * once on first use (a benign race: every thread computes the same values,
 * and the ready flag is atomic). Little-endian loads.
 */
#include "core/crc32.h"

#include <string.h>

static void slice8_build(struct fr_crc_slice8 *s)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) {
            c = (c & 1) ? (c >> 1) ^ s->poly : c >> 1;
        }
        s->t[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        for (int t = 1; t < 8; t++) {
            uint32_t prev = s->t[t - 1][n];
            s->t[t][n] = (prev >> 8) ^ s->t[0][prev & 0xff];
        }
    }
    atomic_store(&s->ready, 1);
}

uint32_t fr_crc_slice8(struct fr_crc_slice8 *s, uint32_t crc, const void *data, size_t len)
{
    if (!atomic_load(&s->ready)) {
        slice8_build(s);
    }
    const uint32_t(*t)[256] = (const uint32_t(*)[256])s->t;
    const uint8_t *p = data;
    crc = ~crc;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= crc;
        crc = t[7][w & 0xff] ^ t[6][(w >> 8) & 0xff] ^ t[5][(w >> 16) & 0xff] ^
              t[4][(w >> 24) & 0xff] ^ t[3][(w >> 32) & 0xff] ^ t[2][(w >> 40) & 0xff] ^
              t[1][(w >> 48) & 0xff] ^ t[0][w >> 56];
        p += 8;
        len -= 8;
    }
    while (len--) {
        crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xff];
    }
    return ~crc;
}

static struct fr_crc_slice8 crc32_gzip = {.poly = 0xEDB88320u};

uint32_t fr_crc32(uint32_t crc, const void *data, size_t len)
{
    return fr_crc_slice8(&crc32_gzip, crc, data, len);
}
