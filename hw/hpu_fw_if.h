/* SPDX-License-Identifier: MIT */
/*
 * hpu firmware interface: the image format and the boot handshake.
 *
 * Shared, unmodified, by the firmware builder (firmware-stub/), the driver
 * (kernel/) and the device model (qemu-device/).  All fields little-endian.
 *
 * Versioning: HPU_FW_IF_VERSION is major << 16 | minor.  A device accepts an
 * image whose major equals its own and whose minor is not newer than its own.
 * Only append fields and codes; never renumber.
 */
#ifndef HPU_FW_IF_H
#define HPU_FW_IF_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#endif

#define HPU_FW_IF_VERSION_MAJOR 1
#define HPU_FW_IF_VERSION_MINOR 0
#define HPU_FW_IF_VERSION \
	((HPU_FW_IF_VERSION_MAJOR << 16) | HPU_FW_IF_VERSION_MINOR)
#define HPU_FW_IF_MAJOR(v) ((v) >> 16)
#define HPU_FW_IF_MINOR(v) ((v) & 0xffff)

/* Firmware version encoding: major.minor.patch. */
#define HPU_FW_VERSION(maj, min, pat) \
	(((uint32_t)(maj) << 16) | ((uint32_t)(min) << 8) | (uint32_t)(pat))
#define HPU_FW_VERSION_MAJOR(v) (((v) >> 16) & 0xffff)
#define HPU_FW_VERSION_MINOR(v) (((v) >> 8) & 0xff)
#define HPU_FW_VERSION_PATCH(v) ((v) & 0xff)

/* Name the driver asks request_firmware() for, relative to the firmware path. */
#define HPU_FW_DEFAULT_NAME "hpu/hpu-fw.bin"

#define HPU_FW_MAGIC 0x46555048u /* "HPUF" */

/* Largest image the device's boot SRAM holds, header included. */
#define HPU_FW_MAX_IMAGE_SIZE (1u << 20)

/*
 * Image layout: this header, then payload_size bytes of payload.
 * crc32 is CRC-32 (IEEE 802.3, as zlib's crc32()) over the header bytes
 * before the crc32 field followed by the whole payload.
 */
struct hpu_fw_header {
	uint32_t magic;           /* HPU_FW_MAGIC */
	uint32_t if_version;      /* HPU_FW_IF_VERSION the image was built for */
	uint32_t header_size;     /* sizeof(struct hpu_fw_header) */
	uint32_t payload_size;    /* bytes after the header */
	uint32_t fw_version;      /* HPU_FW_VERSION() */
	uint32_t flags;           /* none defined: must be 0 */
	char version_str[32];     /* NUL-terminated, e.g. "hpu-fw 1.0.0" */
	uint32_t reserved;        /* must be 0 */
	uint32_t crc32;
};

#define HPU_FW_HEADER_SIZE 64u
#define HPU_FW_CRC_OFFSET 60u

/* Boot state, read from HPU_REG_BOOT_STATUS. */
enum hpu_fw_boot_status {
	HPU_FW_BOOT_IDLE = 0,    /* after reset: waiting for an image */
	HPU_FW_BOOT_LOADING = 1, /* image fetched, being verified and started */
	HPU_FW_BOOT_READY = 2,   /* firmware running; capability registers valid */
	HPU_FW_BOOT_FAILED = 3,  /* reason in HPU_REG_BOOT_ERROR */
};

/* Why a boot failed, read from HPU_REG_BOOT_ERROR. */
enum hpu_fw_boot_error {
	HPU_FW_ERR_NONE = 0,
	HPU_FW_ERR_BAD_MAGIC = 1,      /* magic is not HPU_FW_MAGIC */
	HPU_FW_ERR_BAD_IF_VERSION = 2, /* interface major differs or minor too new */
	HPU_FW_ERR_BAD_SIZE = 3,       /* sizes disagree with the transfer or exceed the SRAM */
	HPU_FW_ERR_BAD_CRC = 4,        /* crc32 does not match */
	HPU_FW_ERR_DMA = 5,            /* the device could not read the image */
	HPU_FW_ERR_BAD_FLAGS = 6,      /* flags or reserved not zero */
	HPU_FW_ERR_NO_HBM = 7,         /* the last reset found no host memory for HBM */
	HPU_FW_ERR_INJECTED = 8,       /* (1.7) fault injection (HPU_FAULT_BOOT_FAIL) */
	HPU_FW_ERR_COUNT
};

/* How the device and the driver name a boot error in their logs; NULL if unknown. */
static inline const char *hpu_fw_boot_error_name(uint32_t code)
{
	static const char *const names[HPU_FW_ERR_COUNT] = {
		[HPU_FW_ERR_NONE] = "none",
		[HPU_FW_ERR_BAD_MAGIC] = "bad magic",
		[HPU_FW_ERR_BAD_IF_VERSION] = "bad interface version",
		[HPU_FW_ERR_BAD_SIZE] = "bad size",
		[HPU_FW_ERR_BAD_CRC] = "bad CRC",
		[HPU_FW_ERR_DMA] = "DMA error",
		[HPU_FW_ERR_BAD_FLAGS] = "bad flags",
		[HPU_FW_ERR_NO_HBM] = "no device memory",
		[HPU_FW_ERR_INJECTED] = "injected fault",
	};

	return code < HPU_FW_ERR_COUNT ? names[code] : (const char *)0;
}

#endif /* HPU_FW_IF_H */
