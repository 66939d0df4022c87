/*
 * crc32c.c — CRC-32C. The table is built once on first use (a benign race:
 * every thread computes the same values, and the ready flag is atomic).
 */
#include "core/crc32c.h"

#include "core/crc32.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

static struct fr_crc_slice8 crc32c_table = {.poly = 0x82F63B78u};

uint32_t fr_crc32c_sw(uint32_t crc, const void *data, size_t len)
{
    return fr_crc_slice8(&crc32c_table, crc, data, len);
}

#if defined(__x86_64__)
/* The CRC register (no inversions) after data, from c; one instruction per
 * 8 bytes, each waiting for the one before. */
__attribute__((target("sse4.2"))) static uint32_t crc_hw_raw(uint32_t c, const uint8_t *p,
                                                              size_t len)
{
    uint64_t c64 = c;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c64 = _mm_crc32_u64(c64, w);
        p += 8;
        len -= 8;
    }
    uint32_t c32 = (uint32_t)c64;
    while (len--) {
        c32 = _mm_crc32_u8(c32, *p++);
    }
    return c32;
}

/*
 * Three lanes. The crc32 instruction takes 3 cycles but can start every
 * cycle, so a block of 3 x CRC_LANE bytes is run as three independent
 * registers (the first from c, the others from 0) and joined: for the raw
 * register, crc(c, A || B) = Z_|B|(crc(c, A)) ^ crc(0, B), where Z_n (the
 * register after n zero bytes) is linear over GF(2), so it is four table
 * lookups, one per byte of the register (crc_zero_tab, built once from
 * crc_hw_raw itself).
 */
#define CRC_LANE 128
static uint32_t crc_zero_tab[2][4][256]; /* Z_LANE, Z_2LANE */
static pthread_once_t crc_zero_once = PTHREAD_ONCE_INIT;

static void crc_zero_build(void)
{
    static const uint8_t zeros[2 * CRC_LANE];
    for (int z = 0; z < 2; z++) {
        for (int j = 0; j < 4; j++) {
            for (uint32_t b = 0; b < 256; b++) {
                crc_zero_tab[z][j][b] = crc_hw_raw(b << (8 * j), zeros, (size_t)(z + 1) * CRC_LANE);
            }
        }
    }
}

static inline uint32_t crc_zeros(const uint32_t tab[4][256], uint32_t c)
{
    return tab[0][c & 0xff] ^ tab[1][(c >> 8) & 0xff] ^ tab[2][(c >> 16) & 0xff] ^ tab[3][c >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const void *data,
                                                          size_t len)
{
    const uint8_t *p = data;
    uint32_t c = ~crc;
    if (len >= 3 * CRC_LANE) {
        pthread_once(&crc_zero_once, crc_zero_build);
        while (len >= 3 * CRC_LANE) {
            uint64_t c0 = c, c1 = 0, c2 = 0;
            for (size_t i = 0; i < CRC_LANE; i += 8) {
                uint64_t w0, w1, w2;
                memcpy(&w0, p + i, 8);
                memcpy(&w1, p + CRC_LANE + i, 8);
                memcpy(&w2, p + 2 * CRC_LANE + i, 8);
                c0 = _mm_crc32_u64(c0, w0);
                c1 = _mm_crc32_u64(c1, w1);
                c2 = _mm_crc32_u64(c2, w2);
            }
            c = crc_zeros(crc_zero_tab[1], (uint32_t)c0) ^ crc_zeros(crc_zero_tab[0], (uint32_t)c1) ^
                (uint32_t)c2;
            p += 3 * CRC_LANE;
            len -= 3 * CRC_LANE;
        }
    }
    return ~crc_hw_raw(c, p, len);
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
