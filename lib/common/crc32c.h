/* The two CRC32C implementations behind gf_crc32c() (gpufeed.h), for the
 * tests that compare them. gf_crc32c_hw falls back to the table when the
 * CPU lacks the instruction; gf_crc32c_hw_available says whether it does.
 * Any thread. */
#ifndef GF_CRC32C_H
#define GF_CRC32C_H

#include "common/common.h"

uint32_t gf_crc32c_sw(uint32_t crc, const void *buf, size_t len);
uint32_t gf_crc32c_hw(uint32_t crc, const void *buf, size_t len);
bool gf_crc32c_hw_available(void);

#endif /* GF_CRC32C_H */
