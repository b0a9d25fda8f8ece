/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hpu PCI device: QEMU glue around the device core in hdm_core.c.
 *
 * This file only adapts QEMU services (BAR0, BAR1 and BAR4 MMIO, MSI-X,
 * bus-master DMA, a virtual-clock timer for the deferred boot, a thread for
 * the engine, reset and properties) to struct hdm_core_ops; all device
 * semantics live in the core.
 *
 * Fault injection at power-on: one string property per kind,
 * fault-<kind>=TIMES[:SKIP[:PROB[:SEED[:ASID]]]] (syntax in hdm_fault.h), parsed
 * by the core at realize; every QEMU reset arms them again as set.
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/rcu.h"
#include "qemu/thread.h"
#include "qemu/timer.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "hw/pci/msix.h"
#include "hw/pci/pci.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"

#include "hdm_core.h"

#define TYPE_HPU_PCI "hpu"

struct hdm_pci {
	PCIDevice parent_obj;
	MemoryRegion regs;
	MemoryRegion uq_db;
	MemoryRegion mmu;
	QEMUTimer *boot_timer;
	QemuThread engine;
	uint32_t boot_delay_ms;
	char *fault[HPU_FAULT_KINDS]; /* the fault-* properties, by kind */
	struct hdm_core_config cfg; /* from properties, caps and faults set at realize */
	struct hdm_core core;
};

DECLARE_INSTANCE_CHECKER(struct hdm_pci, HPU_PCI, TYPE_HPU_PCI)

/* Refuse up front when bus mastering is off: QEMU would log a warning per word. */
static bool hdm_pci_master(struct hdm_pci *s)
{
	return pci_get_word(s->parent_obj.config + PCI_COMMAND) & PCI_COMMAND_MASTER;
}

/* Called from the engine thread too: pci_dma_*() take the BQL themselves if they reach MMIO. */
static int hdm_pci_dma_read(void *opaque, uint64_t bus_addr, void *buf, uint64_t len)
{
	struct hdm_pci *s = opaque;

	if (!hdm_pci_master(s))
		return -EIO;
	return pci_dma_read(&s->parent_obj, bus_addr, buf, len) == MEMTX_OK ? 0 : -EIO;
}

static int hdm_pci_dma_write(void *opaque, uint64_t bus_addr, const void *buf, uint64_t len)
{
	struct hdm_pci *s = opaque;

	if (!hdm_pci_master(s))
		return -EIO;
	return pci_dma_write(&s->parent_obj, bus_addr, buf, len) == MEMTX_OK ? 0 : -EIO;
}

static void hdm_pci_irq_raise(void *opaque, unsigned int vector)
{
	struct hdm_pci *s = opaque;
	/* MMIO and timers arrive holding the BQL; the engine thread does not. */
	bool locked = qemu_mutex_iothread_locked();

	if (!locked)
		qemu_mutex_lock_iothread();
	/* msix_notify() itself latches the PBA bit while the vector is masked. */
	msix_notify(&s->parent_obj, vector);
	if (!locked)
		qemu_mutex_unlock_iothread();
}

static void hdm_pci_schedule_boot(void *opaque)
{
	struct hdm_pci *s = opaque;

	timer_mod(s->boot_timer, qemu_clock_get_ms(QEMU_CLOCK_VIRTUAL) + s->boot_delay_ms);
}

static void hdm_pci_cancel_boot(void *opaque)
{
	struct hdm_pci *s = opaque;

	timer_del(s->boot_timer);
}

static void hdm_pci_log_guest_error(void *opaque, const char *msg)
{
	qemu_log_mask(LOG_GUEST_ERROR, "%s: %s\n", TYPE_HPU_PCI, msg);
}

/* Virtual time: it stops with the VM, like the boot delay. */
static uint64_t hdm_pci_now_ns(void *opaque)
{
	return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

static const struct hdm_core_ops hdm_pci_core_ops = {
	.dma_read = hdm_pci_dma_read,
	.dma_write = hdm_pci_dma_write,
	.irq_raise = hdm_pci_irq_raise,
	.schedule_boot = hdm_pci_schedule_boot,
	.cancel_boot = hdm_pci_cancel_boot,
	.log_guest_error = hdm_pci_log_guest_error,
	.now_ns = hdm_pci_now_ns,
};

static void hdm_pci_boot_timer(void *opaque)
{
	struct hdm_pci *s = opaque;

	hdm_core_boot_run(&s->core);
}

/*
 * A BAR the core handles: its MMIO callbacks and ops.  Every size and
 * alignment reaches the core, which reports the bad ones.
 */
#define HDM_PCI_BAR_OPS(bar, core_read, core_write)					\
static uint64_t hdm_pci_##bar##_read(void *opaque, hwaddr addr, unsigned int size)	\
{											\
	struct hdm_pci *s = opaque;							\
											\
	return core_read(&s->core, addr, size);						\
}											\
											\
static void hdm_pci_##bar##_write(void *opaque, hwaddr addr, uint64_t val,		\
				  unsigned int size)					\
{											\
	struct hdm_pci *s = opaque;							\
											\
	core_write(&s->core, addr, val, size);						\
}											\
											\
static const MemoryRegionOps hdm_pci_##bar##_ops = {					\
	.read = hdm_pci_##bar##_read,							\
	.write = hdm_pci_##bar##_write,							\
	.endianness = DEVICE_LITTLE_ENDIAN,						\
	.valid = {									\
		.min_access_size = 1,							\
		.max_access_size = 8,							\
		.unaligned = true,							\
	},										\
	.impl = {									\
		.min_access_size = 1,							\
		.max_access_size = 8,							\
		.unaligned = true,							\
	},										\
}

HDM_PCI_BAR_OPS(mmio, hdm_core_mmio_read, hdm_core_mmio_write);
HDM_PCI_BAR_OPS(uq_db, hdm_core_uq_db_read, hdm_core_uq_db_write);
HDM_PCI_BAR_OPS(mmu, hdm_core_mmu_read, hdm_core_mmu_write);

/* The engine: runs jobs off the vCPU threads, without the BQL. */
static void *hdm_pci_engine_thread(void *opaque)
{
	struct hdm_pci *s = opaque;

	/* pci_dma_*() look up the memory map under RCU. */
	rcu_register_thread();
	while (hdm_core_engine_wait(&s->core))
		hdm_core_engine_run(&s->core);
	rcu_unregister_thread();
	return NULL;
}

static void hdm_pci_realize(PCIDevice *pdev, Error **errp)
{
	struct hdm_pci *s = HPU_PCI(pdev);
	char why[128];
	unsigned int v;

	s->cfg.caps = HDM_CORE_CAPS;
	if (hdm_core_check_config(&s->cfg, why, sizeof(why))) {
		error_setg(errp, "%s: %s", TYPE_HPU_PCI, why);
		return;
	}
	for (v = 1; v < HPU_FAULT_KINDS; v++) {
		if (hdm_fault_parse(s->fault[v], &s->cfg.faults[v], why, sizeof(why))) {
			error_setg(errp, "%s: fault-%s: %s", TYPE_HPU_PCI, hdm_fault_names[v], why);
			return;
		}
	}

	if (hdm_core_init(&s->core, &hdm_pci_core_ops, s, &s->cfg)) {
		error_setg(errp, "%s: the host has no room for %" PRIu64 " bytes of HBM", TYPE_HPU_PCI,
			   s->cfg.hbm_size);
		hdm_core_destroy(&s->core);
		return;
	}

	pci_config_set_prog_interface(pdev->config, HPU_PCI_CLASS & 0xff);
	memory_region_init_io(&s->regs, OBJECT(s), &hdm_pci_mmio_ops, s, "hpu-regs",
			      HPU_BAR_REGS_SIZE);
	pci_register_bar(pdev, HPU_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY, &s->regs);
	/* Page u is user queue u's doorbell: the driver maps each into one process. */
	memory_region_init_io(&s->uq_db, OBJECT(s), &hdm_pci_uq_db_ops, s, "hpu-uq-doorbell",
			      HPU_NUM_UQ * HPU_UQ_DB_PAGE_SIZE);
	pci_register_bar(pdev, HPU_BAR_UQ_DOORBELL, PCI_BASE_ADDRESS_SPACE_MEMORY, &s->uq_db);
	memory_region_init_io(&s->mmu, OBJECT(s), &hdm_pci_mmu_ops, s, "hpu-mmu",
			      HPU_MMU_REGION_SIZE);
	pci_register_bar(pdev, HPU_BAR_MMU,
			 PCI_BASE_ADDRESS_SPACE_MEMORY | PCI_BASE_ADDRESS_MEM_TYPE_64, &s->mmu);

	if (msix_init_exclusive_bar(pdev, HPU_MSIX_VECTORS, HPU_BAR_MSIX, errp)) {
		hdm_core_destroy(&s->core);
		return;
	}
	for (v = 0; v < HPU_MSIX_VECTORS; v++)
		msix_vector_use(pdev, v);

	s->boot_timer = timer_new_ms(QEMU_CLOCK_VIRTUAL, hdm_pci_boot_timer, s);
	qemu_thread_create(&s->engine, "hpu-engine", hdm_pci_engine_thread, s,
			   QEMU_THREAD_JOINABLE);
}

static void hdm_pci_exit(PCIDevice *pdev)
{
	struct hdm_pci *s = HPU_PCI(pdev);

	hdm_core_engine_stop(&s->core);
	/* The engine may be waiting for the BQL (an interrupt, DMA to MMIO) before it can stop. */
	qemu_mutex_unlock_iothread();
	qemu_thread_join(&s->engine);
	qemu_mutex_lock_iothread();
	hdm_core_destroy(&s->core);
	timer_free(s->boot_timer);
	msix_uninit_exclusive_bar(pdev);
}

static void hdm_pci_reset_hold(Object *obj)
{
	struct hdm_pci *s = HPU_PCI(obj);

	hdm_core_reset(&s->core);
}

static Property hdm_pci_properties[] = {
	DEFINE_PROP_SIZE("hbm-size", struct hdm_pci, cfg.hbm_size, 32 * GiB),
	DEFINE_PROP_UINT32("num-dma", struct hdm_pci, cfg.num_dma, 8),
	DEFINE_PROP_UINT32("num-mme", struct hdm_pci, cfg.num_mme, 2),
	DEFINE_PROP_UINT32("num-tpc", struct hdm_pci, cfg.num_tpc, 8),
	DEFINE_PROP_UINT32("boot-delay-ms", struct hdm_pci, boot_delay_ms, 20),
	/* Named as hdm_fault_names[] says. */
	DEFINE_PROP_STRING("fault-engine-hang", struct hdm_pci, fault[HPU_FAULT_ENGINE_HANG]),
	DEFINE_PROP_STRING("fault-mmu-fault", struct hdm_pci, fault[HPU_FAULT_MMU_FAULT]),
	DEFINE_PROP_STRING("fault-dma-error", struct hdm_pci, fault[HPU_FAULT_DMA_ERROR]),
	DEFINE_PROP_STRING("fault-lost-irq", struct hdm_pci, fault[HPU_FAULT_LOST_IRQ]),
	DEFINE_PROP_STRING("fault-bad-completion", struct hdm_pci,
			   fault[HPU_FAULT_BAD_COMPLETION]),
	DEFINE_PROP_STRING("fault-heartbeat-loss", struct hdm_pci,
			   fault[HPU_FAULT_HEARTBEAT_LOSS]),
	DEFINE_PROP_STRING("fault-boot-fail", struct hdm_pci, fault[HPU_FAULT_BOOT_FAIL]),
	DEFINE_PROP_STRING("fault-reset-fail", struct hdm_pci, fault[HPU_FAULT_RESET_FAIL]),
	DEFINE_PROP_END_OF_LIST(),
};

static const struct {
	const char *name;
	const char *desc;
} hdm_pci_property_docs[] = {
	{ "hbm-size", "HBM size in bytes, a multiple of 2 MiB from 66 MiB to 1 TiB" },
	{ "num-dma", "number of DMA engines" },
	{ "num-mme", "number of matrix engines" },
	{ "num-tpc", "number of tensor processor cores" },
	{ "boot-delay-ms", "virtual time from BOOT_CTRL=START to boot completion" },
	{ "fault-engine-hang", "TIMES[:SKIP[:PROB[:SEED[:ASID]]]]: packets that hang" },
	{ "fault-mmu-fault", "TIMES[:SKIP[:PROB[:SEED[:ASID]]]]: jobs failed by an MMU fault" },
	{ "fault-dma-error", "TIMES[:SKIP[:PROB[:SEED[:ASID]]]]: jobs failed by a DMA error" },
	{ "fault-lost-irq", "TIMES[:SKIP[:PROB[:SEED[:ASID]]]]: MSI-X messages not sent" },
	{ "fault-bad-completion",
	  "TIMES[:SKIP[:PROB[:SEED[:ASID]]]]: completion writes with a wrong value" },
	{ "fault-heartbeat-loss", "TIMES[:SKIP[:PROB[:SEED]]]: the heartbeat stops" },
	{ "fault-boot-fail", "TIMES[:SKIP[:PROB[:SEED]]]: firmware boots that fail" },
	{ "fault-reset-fail", "TIMES[:SKIP[:PROB[:SEED]]]: engine or warm resets ignored" },
};

/* Boot SRAM, HBM, running jobs and a pending boot timer are not worth migrating. */
static const VMStateDescription hdm_pci_vmstate = {
	.name = TYPE_HPU_PCI,
	.unmigratable = 1,
};

static void hdm_pci_class_init(ObjectClass *klass, void *data)
{
	DeviceClass *dc = DEVICE_CLASS(klass);
	ResettableClass *rc = RESETTABLE_CLASS(klass);
	PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);
	size_t i;

	k->realize = hdm_pci_realize;
	k->exit = hdm_pci_exit;
	k->vendor_id = HPU_PCI_VENDOR_ID;
	k->device_id = HPU_PCI_DEVICE_ID;
	k->subsystem_vendor_id = HPU_PCI_SUBSYSTEM_VENDOR_ID;
	k->subsystem_id = HPU_PCI_SUBSYSTEM_ID;
	k->revision = HPU_PCI_REVISION;
	k->class_id = HPU_PCI_CLASS >> 8; /* base class and subclass */
	rc->phases.hold = hdm_pci_reset_hold;
	dc->desc = "hpu AI accelerator";
	dc->vmsd = &hdm_pci_vmstate;
	set_bit(DEVICE_CATEGORY_MISC, dc->categories);
	device_class_set_props(dc, hdm_pci_properties);
	for (i = 0; i < ARRAY_SIZE(hdm_pci_property_docs); i++)
		object_class_property_set_description(klass, hdm_pci_property_docs[i].name,
						      hdm_pci_property_docs[i].desc);
}

static const TypeInfo hdm_pci_info = {
	.name = TYPE_HPU_PCI,
	.parent = TYPE_PCI_DEVICE,
	.instance_size = sizeof(struct hdm_pci),
	.class_init = hdm_pci_class_init,
	.interfaces = (InterfaceInfo[]) {
		{ INTERFACE_CONVENTIONAL_PCI_DEVICE },
		{ },
	},
};

static void hdm_pci_register_types(void)
{
	type_register_static(&hdm_pci_info);
}

type_init(hdm_pci_register_types)
