/* SPDX-License-Identifier: MIT */
/*
 * Little-endian loads and stores: every structure the device shares with the
 * host (descriptors, packets, events, page tables) is little-endian whatever
 * the host running the model is.
 */
#ifndef HDM_LE_H
#define HDM_LE_H

#include <stdint.h>

static inline uint32_t hdm_ld_le32(const void *p)
{
	const uint8_t *b = p;

	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static inline uint64_t hdm_ld_le64(const void *p)
{
	return hdm_ld_le32(p) | (uint64_t)hdm_ld_le32((const uint8_t *)p + 4) << 32;
}

static inline void hdm_st_le32(void *p, uint32_t v)
{
	uint8_t *b = p;

	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)(v >> 16);
	b[3] = (uint8_t)(v >> 24);
}

static inline void hdm_st_le64(void *p, uint64_t v)
{
	hdm_st_le32(p, (uint32_t)v);
	hdm_st_le32((uint8_t *)p + 4, (uint32_t)(v >> 32));
}

#endif /* HDM_LE_H */
