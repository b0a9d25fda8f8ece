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

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#endif

#define HPU_REGS_VERSION_MAJOR 1
#define HPU_REGS_VERSION_MINOR 7
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

/* BARs: registers, MSI-X table and PBA, the MMU region of HBM (1.1). */
#define HPU_BAR_REGS 0
#define HPU_BAR_REGS_SIZE 0x10000
#define HPU_BAR_MSIX 2
#define HPU_BAR_MMU 4 /* 64-bit BAR onto HBM [0, HPU_MMU_REGION_SIZE) */
#define HPU_BAR_UQ_DOORBELL 1 /* (1.3) one page per user queue, see hpu_packets.h */

#define HPU_MSIX_VECTORS 8
#define HPU_MSIX_VEC_MISC 0 /* boot completion, device errors, events */
/* Vectors 1..7 are raised only by HPU_PKT_INTERRUPT packets (hpu_packets.h). */

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
/*
 * (1.7) Written to HPU_REG_RESET: a warm reset, which keeps HBM's contents (see "Version
 * 1.7" below).  HPU_RESET_KEY is a cold reset: HBM back to zeros.
 */
#define HPU_RESET_KEY_WARM 0x52535457u /* "RSTW" */

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
#define HPU_REG_NUM_UQ 0x220        /* (1.3) user queues */

#define HPU_REG_CAPS_FP32 (1u << 0)
#define HPU_REG_CAPS_BF16 (1u << 1)
#define HPU_REG_CAPS_FP16 (1u << 2)
#define HPU_REG_CAPS_FP8 (1u << 3)

/* Interrupts: cause is write-1-to-clear; a set mask bit suppresses the MSI-X. */
#define HPU_REG_IRQ_CAUSE 0x300
#define HPU_REG_IRQ_MASK 0x304 /* all ones after reset */

#define HPU_IRQ_BOOT_DONE (1u << 0) /* BOOT_STATUS became READY or FAILED */
#define HPU_IRQ_ERROR (1u << 1)     /* a guest error was logged in ERR_CODE */
#define HPU_IRQ_EVENT (1u << 2)     /* the event queue got an entry (1.1) */
#define HPU_IRQ_UQ (1u << 3)        /* an armed user queue's CI advanced (1.3) */
#define HPU_IRQ_ALL (HPU_IRQ_BOOT_DONE | HPU_IRQ_ERROR | HPU_IRQ_EVENT | HPU_IRQ_UQ)

/* Guest errors reported in HPU_REG_ERR_CODE. */
enum hpu_err_code {
	HPU_ERR_NONE = 0,
	HPU_ERR_BAD_ACCESS = 1,    /* unaligned, not 32-bit, or unmapped offset */
	HPU_ERR_READ_ONLY = 2,     /* write to a read-only register */
	HPU_ERR_BOOT_BUSY = 3,     /* BOOT_CTRL written while a boot is in progress or done */
	HPU_ERR_BAD_RESET_KEY = 4, /* RESET written with a value other than the key */
	HPU_ERR_BAD_CTRL = 5,      /* unknown bit written to a control register */
	HPU_ERR_BAD_QUEUE = 6,     /* queue or event ring programmed with a bad size or while active */
	HPU_ERR_PREEMPT = 7,       /* (1.6) HPU_Q_CTRL_PREEMPT refused (see there) */
};

/*
 * ---- Version 1.1: HBM, device MMU, hardware queues, event queue ----
 *
 * HBM is device memory of HBM_SIZE bytes, reached only by the engines and,
 * for its first HPU_MMU_REGION_SIZE bytes, by the host through BAR4.  That
 * region holds the MMU: the context table and every page table.  Buffers
 * live above it.
 */
#define HPU_MMU_REGION_SIZE (64ull << 20)
#define HPU_HBM_USER_BASE HPU_MMU_REGION_SIZE

/*
 * Context table at HBM offset 0: one u64 per ASID, HPU_PTE_PRESENT | the HBM
 * offset of that context's root table.  ASID 0 is the driver's own.
 */
#define HPU_MMU_CTX_TABLE 0x0
#define HPU_MMU_NUM_ASIDS 1024

/*
 * Device virtual addresses are 48 bits, translated per context through four
 * levels of 512 u64 entries (level 0 is the root), 4 KiB pages; a level-2
 * entry with HPU_PTE_HUGE maps 2 MiB.  Tables are 4 KiB, 4 KiB aligned, and
 * must lie in the MMU region; anything else is a fault.
 */
#define HPU_MMU_VA_BITS 48
#define HPU_MMU_LEVELS 4
#define HPU_MMU_PAGE_SHIFT 12
#define HPU_MMU_PAGE_SIZE (1ull << HPU_MMU_PAGE_SHIFT)
#define HPU_MMU_HUGE_SHIFT 21
#define HPU_MMU_HUGE_SIZE (1ull << HPU_MMU_HUGE_SHIFT)
#define HPU_MMU_LEVEL_SHIFT(level) (39 - 9 * (level))
#define HPU_MMU_INDEX(va, level) (((va) >> HPU_MMU_LEVEL_SHIFT(level)) & 511)

#define HPU_PTE_PRESENT (1ull << 0)
#define HPU_PTE_WRITE (1ull << 1) /* leaf: engines may write */
#define HPU_PTE_HOST (1ull << 2)  /* leaf: address is a host bus address, not HBM */
#define HPU_PTE_HUGE (1ull << 7)  /* level-2 leaf of 2 MiB */
#define HPU_PTE_ADDR_MASK 0x000ffffffffff000ull

/*
 * Hardware queues.  Queue q's registers are at HPU_REG_Q(q, HPU_Q_*).  Its
 * ring is an array of struct hpu_queue_desc in host memory; the driver
 * writes descriptors and then PI, the device executes them in order on its
 * own thread and advances CI as each job ends (completed or failed).
 */
#define HPU_NUM_QUEUES 4
#define HPU_REG_QUEUE_BASE 0x1000
#define HPU_REG_QUEUE_STRIDE 0x40
#define HPU_REG_Q(q, reg) (HPU_REG_QUEUE_BASE + (q) * HPU_REG_QUEUE_STRIDE + (reg))

#define HPU_Q_RING_LO 0x00   /* RW: bus address of the ring */
#define HPU_Q_RING_HI 0x04
#define HPU_Q_RING_SIZE 0x08 /* RW: entries, a power of two 2..4096; 0 disables */
#define HPU_Q_PI 0x0c        /* RW: doorbell, producer index (free running) */
#define HPU_Q_CI 0x10        /* RO: consumer index: jobs ended (free running) */
#define HPU_Q_STATUS 0x14    /* RO: HPU_Q_STATUS_* */
#define HPU_Q_CTRL 0x18      /* WO: HPU_Q_CTRL_* */
/*
 * RO (1.4): microseconds (saturating) that the job at CI has been ready to
 * run while the engine ran other queues' jobs; 0 again when CI moves.  The
 * engine takes queues in turns, a slice of HPU_ENGINE_SLICE_US at most
 * between packets, so a job's time at the head of its ring less this is
 * what it ran (or waited on a sync object) itself: what a timeout charges.
 */
#define HPU_Q_DEFERRED_US 0x1c
/*
 * RO (1.5), kernel queues: where the job the last CTRL RESET aborted was
 * parked, if that was a WAIT inside a CALL's callee, the job having run
 * nothing since it parked: HPU_Q_IN_CALL_PARKED and the WAIT's offset in
 * the callee.  Else 0.  Set as the aborted job ends, before CI moves; the
 * ABORTED event names the CALL.  A driver resumes such a job at a CALL of
 * the callee's rest.
 */
#define HPU_Q_ABORT_IN_CALL 0x20
#define HPU_Q_IN_CALL_PARKED (1u << 31)
/*
 * RO (1.6), kernel queues: entries free in the queue's table of preempted
 * jobs (HPU_Q_PREEMPT_SLOTS of them, see HPU_Q_CTRL_PREEMPT; a warm reset has
 * one more of its own, 1.7).
 */
#define HPU_Q_PREEMPT_FREE 0x24
#define HPU_Q_PREEMPT_SLOTS 4u

#define HPU_Q_STATUS_BUSY (1u << 0)    /* a job is executing */
#define HPU_Q_STATUS_WAITING (1u << 1) /* stalled on an HPU_PKT_WAIT */
/*
 * 1.4: the engine is in the job now (BUSY, not yielded or waiting).  A
 * reset of a queue whose job is not in the engine ends when the engine
 * gets back to it, which other queues' packets may delay: only a job the
 * engine is in can keep a reset from ending.
 */
#define HPU_Q_STATUS_ENGINE (1u << 2)

/*
 * (1.7) Kernel queues: the tag of the job the last warm reset saved (its progress is in the
 * queue's table of preempted jobs, as HPU_Q_CTRL_PREEMPT would have put it); 0: none.
 */
#define HPU_Q_SAVED_TAG_LO 0x28
#define HPU_Q_SAVED_TAG_HI 0x2c

/*
 * Abort the running job (reported as HPU_EVENT_ABORTED) and drop queued ones: CI = PI.  On a
 * kernel queue the entries of its table of preempted jobs stay (1.6): those jobs are not
 * queued, and go on when pushed again with HPU_QUEUE_DESC_RESUME.  A pending PREEMPT is
 * cancelled.  Written with HPU_Q_CTRL_PREEMPT, see there.
 */
#define HPU_Q_CTRL_RESET (1u << 0)
/*
 * (1.6) Kernel queues: set the job at CI aside at its next yield point (between two
 * packets, between the steps of a LIN_DMA, TPC_LAUNCH or MME_GEMM, or where it waits on a
 * WAIT).  Its progress (packet offset, CALL position, the packet's partial work, its
 * staging buffers and kernel scratch) goes into a free entry of the queue's table, keyed
 * by the descriptor's tag; the device posts HPU_EVENT_PREEMPTED (addr: the offset of the
 * packet it goes on at) and CI moves past the job.  Pushed again with
 * HPU_QUEUE_DESC_RESUME, the job takes its entry back and goes on where it stopped.  A job
 * that ends first (completed or failed; past its last packet there is no yield point) ends
 * as usual: the request lapses.  Refused with HPU_ERR_PREEMPT: no job queued (PI == CI),
 * no free entry (HPU_Q_PREEMPT_FREE 0), a reset pending, or (then the job goes on) its tag
 * has an entry when the set-aside comes.  A user queue refuses the bit (HPU_ERR_BAD_CTRL).
 *
 * RESET | PREEMPT: set the job aside, then drop the rest.  If the engine has started the
 * job at CI (STATUS not 0) and no reset is pending, it is set aside as above, or ends first
 * as usual, and then CI moves to PI as it was at the write: the jobs behind it are dropped
 * unstarted, nothing is aborted; STATUS reads busy until then.  If it cannot be set aside
 * (no free entry, its tag has an entry, no memory), the write is a RESET (the job is
 * aborted; HPU_ERR_PREEMPT but for no memory); with no job started or a reset pending, it
 * is a RESET.  A RESET written before the set-aside aborts the job.
 */
#define HPU_Q_CTRL_PREEMPT (1u << 1)

/*
 * The longest the engine runs one queue's job before it lets other queues'
 * ready jobs run (1.4); a packet with staged operands runs longer.
 */
#define HPU_ENGINE_SLICE_US 2000u

/* The driver's tail (completion write, interrupt) after a user command buffer is at most this. */
#define HPU_QUEUE_TAIL_MAX 256u

struct hpu_queue_desc {
	uint64_t cb_addr;     /* bus address of the command buffer (driver-owned copy) */
	uint32_t cb_size;     /* bytes, a multiple of 8, at most HPU_CB_MAX_SIZE + HPU_QUEUE_TAIL_MAX */
	uint32_t priv_offset; /* privileged packets are legal only at or after this offset */
	uint32_t asid;        /* context the job's addresses are translated in */
	uint32_t flags;       /* HPU_QUEUE_DESC_*; others must be 0 */
	uint64_t tag;         /* reported in this job's events */
};

/*
 * (1.6) Resume the job with this tag that HPU_Q_CTRL_PREEMPT set aside on this queue:
 * cb_size, priv_offset, asid and the command buffer's bytes must be those it had (cb_addr
 * may differ).  The entry is taken either way; no entry or a different job fails the job
 * with HPU_EVENT_NOT_RESUMABLE, having run nothing.
 */
#define HPU_QUEUE_DESC_RESUME (1u << 0)

/*
 * Event queue: a ring of struct hpu_event in host memory.  The device writes
 * an entry at EQ_PI, advances it and raises HPU_IRQ_EVENT; the driver
 * consumes up to EQ_CI.  When the ring is full the device drops the event
 * and sets HPU_EQ_STATUS_OVERFLOW until the driver writes EQ_CI.
 */
#define HPU_REG_EQ_RING_LO 0x400
#define HPU_REG_EQ_RING_HI 0x404
#define HPU_REG_EQ_RING_SIZE 0x408 /* entries, a power of two 2..4096; 0 disables */
#define HPU_REG_EQ_PI 0x40c        /* RO: events written (free running) */
#define HPU_REG_EQ_CI 0x410        /* RW: events consumed (free running) */
#define HPU_REG_EQ_STATUS 0x414    /* RO: HPU_EQ_STATUS_* */

#define HPU_EQ_STATUS_OVERFLOW (1u << 0)

/* A job failed; the rest of it, kernel tail included, was skipped (but see HPU_EVENT_PREEMPTED). */
enum hpu_event_type {
	HPU_EVENT_MMU_FAULT = 1,       /* addr: the VA with no valid, permitted mapping */
	/* Packet errors name a packet by its offset in the job's command buffer, or inside a CALL by its VA. */
	HPU_EVENT_ILLEGAL_PACKET = 2,  /* addr: the packet */
	HPU_EVENT_PRIV_PACKET = 3,     /* addr: a privileged packet before priv_offset, or in a callee */
	HPU_EVENT_DMA_ERROR = 4,       /* addr: the bus address that failed */
	HPU_EVENT_ABORTED = 5,         /* the queue was reset while the job ran */
	HPU_EVENT_BAD_KERNEL = 6,      /* (1.2) addr: a GEMM or launch whose parameters break its rules */
	/* (1.6) Not a failure: HPU_Q_CTRL_PREEMPT set the job aside; addr: where it goes on. */
	HPU_EVENT_PREEMPTED = 7,
	HPU_EVENT_NOT_RESUMABLE = 8,   /* (1.6) a RESUME whose tag has no entry, or not its job */
};

/* Events of user queue u (1.3) carry this queue number. */
#define HPU_EVENT_QUEUE_UQ(u) (0x100u + (u))

/* Engines named in events: DMA engine n is HPU_ENGINE_DMA + n. */
#define HPU_ENGINE_QMAN 0x000 /* the queue manager itself (fetch, decode) */
#define HPU_ENGINE_DMA 0x100
#define HPU_ENGINE_MME 0x200 /* (1.2) matrix engine n: HPU_ENGINE_MME + n */
#define HPU_ENGINE_TPC 0x300 /* (1.2) tensor engines: HPU_ENGINE_TPC + the first TPC of the launch */

struct hpu_event {
	uint32_t type;   /* enum hpu_event_type */
	uint32_t queue;
	uint32_t asid;
	uint32_t engine; /* HPU_ENGINE_* */
	uint64_t tag;    /* of the failed job */
	uint64_t addr;
};

/*
 * ---- Version 1.3: user queues ----
 *
 * A user queue is a hardware queue a process drives itself, without a
 * system call per job.  The driver binds it to the process's context (ASID)
 * and gives the process the queue's doorbell page (BAR HPU_BAR_UQ_DOORBELL,
 * page u; its layout and the descriptor format are in hpu_packets.h, since
 * the runtime writes them).  On a user queue the device itself enforces
 * what the driver checks on a kernel queue: the ring, each descriptor and
 * each command buffer are reached through the MMU in the bound context,
 * every privileged packet fails the job, and the device writes each job's
 * status back into its descriptor.  A failed job also posts its event with
 * queue HPU_EVENT_QUEUE_UQ(u).  The engine runs user queues round robin
 * with the kernel ones.
 *
 * Queue u's privileged registers are at HPU_REG_UQ(u, HPU_UQ_*).
 */
#define HPU_NUM_UQ 16
#define HPU_REG_UQ_BASE 0x2000
#define HPU_REG_UQ_STRIDE 0x40
#define HPU_REG_UQ(u, reg) (HPU_REG_UQ_BASE + (u) * HPU_REG_UQ_STRIDE + (reg))

#define HPU_UQ_RING_LO 0x00   /* RW: device VA of the ring in the bound context */
#define HPU_UQ_RING_HI 0x04
/*
 * RW: entries, a power of two 2..4096; 0 disables.  Writable only while the
 * queue is idle (PI == CI), and to a non-zero size only with the ring
 * aligned to a descriptor; every accepted write sets PI, CI and ERRORS to 0.
 * RING_LO/HI, like ASID, are writable only while the queue is disabled.
 */
#define HPU_UQ_RING_SIZE 0x08
#define HPU_UQ_ASID 0x0c      /* RW: the bound context; writable only while disabled */
#define HPU_UQ_PI 0x10        /* RO: producer index, as last written to the doorbell */
#define HPU_UQ_CI 0x14        /* RO: jobs ended (free running) */
#define HPU_UQ_STATUS 0x18    /* RO: HPU_Q_STATUS_* */
#define HPU_UQ_CTRL 0x1c      /* WO: HPU_Q_CTRL_RESET, as for a kernel queue */
/* RW: HPU_UQ_ARMED: the next time CI advances the device clears it, sets bit u of UQ_IRQ_PENDING and raises HPU_IRQ_UQ. */
#define HPU_UQ_ARM 0x20
#define HPU_UQ_ERRORS 0x24    /* RO: jobs failed (free running) */
#define HPU_UQ_DEFERRED_US 0x28 /* RO (1.4): as HPU_Q_DEFERRED_US */

#define HPU_UQ_ARMED (1u << 0)

/* W1C: user queues whose armed CI advanced, bit u for queue u. */
#define HPU_REG_UQ_IRQ_PENDING 0x500

/*
 * ---- Version 1.7: heartbeat, engine and warm resets, fault injection ----
 *
 * HEARTBEAT: the running firmware adds one every HPU_FW_HEARTBEAT_MS; 0 while BOOT_STATUS
 * is not READY.  A driver that sees it stand still for several periods resets the device.
 */
#define HPU_REG_FW_HEARTBEAT 0x600 /* RO */
#define HPU_FW_HEARTBEAT_MS 10u
/*
 * ENGINE_RESET (WO, HPU_RESET_KEY; another value is HPU_ERR_BAD_RESET_KEY): the engine
 * leaves the job it is in at once, even inside a packet that does not yield (the
 * packet's partial work is dropped), if that job is the one a reset could not end: its
 * queue has a CTRL RESET (or RESET | PREEMPT) pending, or it hangs by injection.  That
 * job ends as a CTRL RESET's abort does (HPU_EVENT_ABORTED, engine HPU_ENGINE_QMAN),
 * and every queue with a CTRL RESET pending completes it.  A job the engine took up
 * after the reset's job left it, and jobs the engine is not in, keep their progress.
 * It is done by the time the write returns: the aborted queue's STATUS no longer
 * reads ENGINE.
 */
#define HPU_REG_ENGINE_RESET 0x604

/*
 * A warm reset (HPU_RESET_KEY_WARM) returns the device to IDLE as a cold one does
 * (firmware stopped, registers, interrupt mask and cause, event queue, kernel queues'
 * rings disabled with PI = CI = 0) but keeps:
 *  - HBM's contents, but for the MMU's context table (HPU_MMU_CTX_TABLE, one u64 per
 *    ASID), which it zeroes: the driver writes it again before the engines run;
 *  - each kernel queue's table of preempted jobs, and there the progress of the job
 *    the queue had started (yielded, or parked on a WAIT) if it had one: its tag is in
 *    HPU_Q_SAVED_TAG_LO/HI, and a push with HPU_QUEUE_DESC_RESUME takes it back (the
 *    table has an entry for it beyond the HPU_Q_PREEMPT_SLOTS that PREEMPTs fill);
 *  - the user queues as they were (ring, ASID, size, PI, CI, ERRORS, ARM, and the
 *    progress of a started job); they run again once the firmware is READY;
 *  - the fault injection settings.
 * The job the engine is in when the reset comes, if it does not reach a yield point
 * within HPU_ENGINE_SLICE_US, is dropped: on a user queue it ends as aborted (status
 * written back, CI past it) once the firmware is READY again.
 */

/*
 * Fault injection (test registers), one kind at a time: write FI_SELECT, then the
 * kind's settings, then FI_CTRL ARM.  A kind counts its events (below) that pass the
 * ASID filter; it skips FI_SKIP of them, then fails each further one with probability
 * FI_PROB / 2^32 (0xffffffff: always), drawing from a generator seeded with FI_SEED at
 * ARM, until it has injected FI_TIMES faults (0xffffffff: no limit).  The device's
 * "fault-*" properties set the same at power-on.  A cold reset disarms every kind.
 */
#define HPU_REG_FI_SELECT 0x610   /* RW: enum hpu_fault_kind whose settings the others show */
#define HPU_REG_FI_TIMES 0x614    /* RW: faults still to inject */
#define HPU_REG_FI_SKIP 0x618     /* RW: events to let pass first */
#define HPU_REG_FI_PROB 0x61c     /* RW: probability of each further event, / 2^32 */
#define HPU_REG_FI_SEED 0x620     /* RW */
#define HPU_REG_FI_ASID 0x624     /* RW: events of this context only; 0xffffffff: any */
#define HPU_REG_FI_INJECTED 0x628 /* RO: faults of the kind injected since power-on */
#define HPU_REG_FI_CTRL 0x62c     /* WO: HPU_FI_CTRL_* */

#define HPU_FI_CTRL_ARM (1u << 0)    /* the settings written take effect for FI_SELECT's kind */
#define HPU_FI_CTRL_DISARM (1u << 1) /* FI_SELECT's kind injects nothing more */
#define HPU_FI_ANY_ASID 0xffffffffu

/* What each kind fails, and the event it counts. */
enum hpu_fault_kind {
	HPU_FAULT_ENGINE_HANG = 1,    /* a packet the engine starts: it never ends nor yields */
	HPU_FAULT_MMU_FAULT = 2,      /* a job the engine starts: HPU_EVENT_MMU_FAULT */
	HPU_FAULT_DMA_ERROR = 3,      /* a job the engine starts: HPU_EVENT_DMA_ERROR */
	HPU_FAULT_LOST_IRQ = 4,       /* an MSI-X message: not sent */
	HPU_FAULT_BAD_COMPLETION = 5, /* a privileged write packet (a job's completion): wrong value */
	HPU_FAULT_HEARTBEAT_LOSS = 6, /* a heartbeat period: HEARTBEAT stands still from then on */
	HPU_FAULT_BOOT_FAIL = 7,      /* a boot: FAILED, HPU_FW_ERR_INJECTED */
	HPU_FAULT_RESET_FAIL = 8,     /* an ENGINE_RESET or warm RESET: ignored */
	HPU_FAULT_KINDS
};

#endif /* HPU_REGS_H */
