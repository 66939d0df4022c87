/*
 * crc32c.h — CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the
 * checksum of the log's record frames. Uses the SSE4.2 crc32 instruction
 * when the CPU has it, a slicing-by-8 table otherwise; both give identical
 * results (tests/unit/test_core.c checks the RFC 3720 vectors). Thread-safe.
 */
#ifndef FR_CRC32C_H
#define FR_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continue a CRC: pass 0 to start. fr_crc32c(0, "123456789", 9) == 0xE3069283. */
uint32_t fr_crc32c(uint32_t crc, const void *data, size_t len);
/* The portable table version, exposed so tests can compare both paths. */
uint32_t fr_crc32c_sw(uint32_t crc, const void *data, size_t len);

#endif
