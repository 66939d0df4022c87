/*
 * crc32c.c — CRC-32C. The table is built once on first use (a benign race:
 * every thread computes the same values, and the ready flag is atomic).
 */
#include "core/crc32c.h"

#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

static uint32_t crc_table[8][256];
static atomic_int crc_table_ready;

static void crc_table_build(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) {
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        }
        crc_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        for (int t = 1; t < 8; t++) {
            uint32_t prev = crc_table[t - 1][n];
            crc_table[t][n] = (prev >> 8) ^ crc_table[0][prev & 0xff];
        }
    }
    atomic_store(&crc_table_ready, 1);
}

uint32_t fr_crc32c_sw(uint32_t crc, const void *data, size_t len)
{
    if (!atomic_load(&crc_table_ready)) {
        crc_table_build();
    }
    const uint8_t *p = data;
    crc = ~crc;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= crc;
        crc = crc_table[7][w & 0xff] ^ crc_table[6][(w >> 8) & 0xff] ^
              crc_table[5][(w >> 16) & 0xff] ^ crc_table[4][(w >> 24) & 0xff] ^
              crc_table[3][(w >> 32) & 0xff] ^ crc_table[2][(w >> 40) & 0xff] ^
              crc_table[1][(w >> 48) & 0xff] ^ crc_table[0][w >> 56];
        p += 8;
        len -= 8;
    }
    while (len--) {
        crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
    }
    return ~crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const void *data,
                                                          size_t len)
{
    const uint8_t *p = data;
    uint64_t c = ~crc;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8;
        len -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (len--) {
        c32 = _mm_crc32_u8(c32, *p++);
    }
    return ~c32;
}
#endif

uint32_t fr_crc32c(uint32_t crc, const void *data, size_t len)
{
#if defined(__x86_64__)
    static int have_hw = -1;
    if (have_hw < 0) {
        __builtin_cpu_init();
        have_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
    }
    if (have_hw) {
        return crc_hw(crc, data, len);
    }
#endif
    return fr_crc32c_sw(crc, data, len);
}
