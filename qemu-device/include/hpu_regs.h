/* SPDX-License-Identifier: MIT */
/*
 * hpu device registers: PCI identity and the BAR0 register map.
 *
 * Shared, unmodified, by the device model (qemu-device/) and the driver
 * (kernel/).  All registers are 32 bits wide, little-endian, accessed with
 * aligned 32-bit loads and stores; other accesses are guest errors.
 *
 * Versioning: HPU_REGS_VERSION (major << 16 | minor) is readable at
 * HPU_REG_REGS_VERSION.  Only add registers and bits; never move them.
 */
#ifndef HPU_REGS_H
#define HPU_REGS_H

#define HPU_REGS_VERSION_MAJOR 1
#define HPU_REGS_VERSION_MINOR 0
#define HPU_REGS_VERSION ((HPU_REGS_VERSION_MAJOR << 16) | HPU_REGS_VERSION_MINOR)

/*
 * PCI identity.  0x1234 is the vendor ID QEMU's own emulated devices use; no
 * upstream driver binds device 0x4850 ("HP"), so only hpu claims it.
 * Class 0x1200 is "processing accelerator".
 */
#define HPU_PCI_VENDOR_ID 0x1234
#define HPU_PCI_DEVICE_ID 0x4850
#define HPU_PCI_SUBSYSTEM_VENDOR_ID 0x1234
#define HPU_PCI_SUBSYSTEM_ID 0x0001
#define HPU_PCI_REVISION 0x01
#define HPU_PCI_CLASS 0x120000

/* BARs: registers, MSI-X table and PBA. */
#define HPU_BAR_REGS 0
#define HPU_BAR_REGS_SIZE 0x10000
#define HPU_BAR_MSIX 2

#define HPU_MSIX_VECTORS 8
#define HPU_MSIX_VEC_MISC 0 /* boot completion and device errors */

#define HPU_ID_VALUE 0x48505530u /* "HPU0" */
#define HPU_HW_REVISION 1

/* Identity and control. */
#define HPU_REG_ID 0x000           /* RO: HPU_ID_VALUE */
#define HPU_REG_REGS_VERSION 0x004 /* RO: HPU_REGS_VERSION */
#define HPU_REG_HW_REV 0x008       /* RO: HPU_HW_REVISION */
#define HPU_REG_SCRATCH 0x00c      /* RW: no effect, for bus checks */
#define HPU_REG_RESET 0x010        /* WO: write HPU_RESET_KEY for a full reset */
#define HPU_REG_ERR_CODE 0x014     /* RO: last guest error, HPU_ERR_*; cleared by reset */

#define HPU_RESET_KEY 0x52535400u /* "RST\0": a stray write does not reset */

/* Firmware boot mailbox (protocol in hpu_fw_if.h). */
#define HPU_REG_BOOT_ADDR_LO 0x100 /* RW: bus address of the image */
#define HPU_REG_BOOT_ADDR_HI 0x104
#define HPU_REG_BOOT_SIZE 0x108    /* RW: image size in bytes */
#define HPU_REG_BOOT_CTRL 0x10c    /* WO: HPU_BOOT_CTRL_START */
#define HPU_REG_BOOT_STATUS 0x110  /* RO: enum hpu_fw_boot_status */
#define HPU_REG_BOOT_ERROR 0x114   /* RO: enum hpu_fw_boot_error */

#define HPU_BOOT_CTRL_START 0x1u

/* Capabilities: valid while BOOT_STATUS is READY, zero otherwise. */
#define HPU_REG_FW_VERSION 0x200    /* HPU_FW_VERSION() of the running firmware */
#define HPU_REG_FW_IF_VERSION 0x204 /* interface version of the running firmware */
#define HPU_REG_HBM_SIZE_LO 0x208   /* HBM size in bytes */
#define HPU_REG_HBM_SIZE_HI 0x20c
#define HPU_REG_NUM_DMA 0x210       /* DMA engines */
#define HPU_REG_NUM_MME 0x214       /* matrix engines */
#define HPU_REG_NUM_TPC 0x218       /* tensor processor cores */
#define HPU_REG_CAPS 0x21c          /* HPU_REG_CAPS_* */

#define HPU_REG_CAPS_FP32 (1u << 0)
#define HPU_REG_CAPS_BF16 (1u << 1)
#define HPU_REG_CAPS_FP16 (1u << 2)
#define HPU_REG_CAPS_FP8 (1u << 3)

/* Interrupts: cause is write-1-to-clear; a set mask bit suppresses the MSI-X. */
#define HPU_REG_IRQ_CAUSE 0x300
#define HPU_REG_IRQ_MASK 0x304 /* all ones after reset */

#define HPU_IRQ_BOOT_DONE (1u << 0) /* BOOT_STATUS became READY or FAILED */
#define HPU_IRQ_ERROR (1u << 1)     /* a guest error was logged in ERR_CODE */
#define HPU_IRQ_ALL (HPU_IRQ_BOOT_DONE | HPU_IRQ_ERROR)

/* Guest errors reported in HPU_REG_ERR_CODE. */
enum hpu_err_code {
	HPU_ERR_NONE = 0,
	HPU_ERR_BAD_ACCESS = 1,    /* unaligned, not 32-bit, or unmapped offset */
	HPU_ERR_READ_ONLY = 2,     /* write to a read-only register */
	HPU_ERR_BOOT_BUSY = 3,     /* BOOT_CTRL written while a boot is in progress or done */
	HPU_ERR_BAD_RESET_KEY = 4, /* RESET written with a value other than the key */
	HPU_ERR_BAD_CTRL = 5,      /* unknown bit written to a control register */
};

#endif /* HPU_REGS_H */
