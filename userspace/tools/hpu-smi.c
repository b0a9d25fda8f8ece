/* SPDX-License-Identifier: MIT */
/*
 * hpu-smi: lists the hpu devices, their PCI details (through libpci) and
 * what the driver reports about them.
 *
 * Output format (stable; tests grep it).  One block per device, blocks
 * separated by an empty line.  A block is "device <index>:" followed by lines
 * of two spaces, "<label>:" padded to 17 columns, and the value:
 *
 *   device 0:
 *     node:            /dev/accel/accel0
 *     pci address:     0000:00:04.0
 *     vendor:          1234 <pci.ids name, or "unknown">
 *     device:          4850 <pci.ids name, or "unknown">
 *     subsystem:       1234:0001 <pci.ids name, or "unknown">
 *     class:           1200 Processing accelerators
 *     revision:        01
 *     irq:             <number, or "none": no legacy interrupt>
 *     msi-x:           8 vectors, enabled (or "disabled"; "none" without MSI-X;
 *                      without config space: "enabled, 5 vectors in use" from
 *                      sysfs, or "unknown (...)")
 *     bar<n>:          mem 0xfe000000 64 KiB (32-bit, non-prefetchable)
 *                      (or "io 0xc000 256 B"; one line per implemented BAR)
 *     numa node:       <number, or "none">
 *     link:            2.5 GT/s x1 (max 16 GT/s x16)
 *                      (or "none (conventional PCI)",
 *                       or "none (root complex integrated endpoint)",
 *                       or "unknown (...)" when neither config space nor sysfs tells)
 *     status:          ready | in reset | malfunction | unknown (<number>)
 *     firmware:        1.0.0 (interface 1.0)
 *     hbm:             32 GiB (34359738368 bytes)
 *     engines:         dma 8, mme 2, tpc 8
 *     capabilities:    fp32 bf16 (also fp16, fp8; unknown bits as 0x...; "none" if 0)
 *     abi:             1.3
 *     hw revision:     1
 *     queues:          4, and 16 user queues  (driver ABI 1.1 on: this line and below;
 *                                              user queues 0 before 1.2)
 *     contexts:        1 of 1023 open         (hpu-smi's own included)
 *     hbm used:        2 MiB of 31.9 GiB (2097152 bytes)
 *     jobs:            12 submitted, 11 completed, 1 failed
 *     resets:          2 queue, 1 engine, 1 device (last: hang)
 *                      (from sysfs, whatever the lines above say; a driver
 *                       before ABI 1.3 has no such line; causes: none, timeout,
 *                       hang, heartbeat, request)
 *
 * PCI config space past its first 64 bytes (the capabilities) is root's: for
 * another user, MSI-X and the link come from sysfs (msi_irqs/, *_link_*).
 *
 * If libpci does not see the device, "pci: not found by libpci" replaces the
 * lines from vendor to link.  If the device cannot be opened or queried,
 * "error: <hpu_last_error()>" replaces the lines from status on (from
 * contexts on if only its usage statistics cannot be read).
 *
 * Exit status: 0 if every device listed was queried, 1 if there is no device
 * or a query failed, 2 on bad usage.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hpu/hpu.h>
#include <pci/pci.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static void usage(FILE *out)
{
	fprintf(out,
		"usage: hpu-smi [-d INDEX] [-V] [-h]\n"
		"List the hpu devices with their PCI details and device info.\n"
		"  -d INDEX  show device INDEX only\n"
		"  -V        print the hpu-smi and libhpu versions\n"
		"  -h        show this help\n"
		"Exit status: 0 ok, 1 no device or a device query failed, 2 bad usage.\n");
}

/* One "  label:          value" line. */
__attribute__((format(printf, 2, 3))) static void field(const char *label, const char *fmt, ...)
{
	char key[32];
	va_list ap;

	snprintf(key, sizeof(key), "%s:", label);
	printf("  %-17s", key);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* Binary units; one decimal unless the size is a whole number of units. */
static void format_size(unsigned long long bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	unsigned int u = 0;

	while (u + 1 < ARRAY_SIZE(units) && bytes >> (10 * (u + 1)))
		u++;
	if (bytes & ((1ull << (10 * u)) - 1))
		snprintf(buf, len, "%.1f %s", (double)bytes / (double)(1ull << (10 * u)), units[u]);
	else
		snprintf(buf, len, "%llu %s", bytes >> (10 * u), units[u]);
}

static const char *or_unknown(const char *name)
{
	return name ? name : "unknown";
}

static void show_bars(struct pci_dev *d)
{
	char label[16], size[32];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(d->base_addr); i++) {
		pciaddr_t bar = d->base_addr[i];

		/* Unimplemented BARs and the upper halves of 64-bit ones have no size. */
		if (!d->size[i])
			continue;
		snprintf(label, sizeof(label), "bar%u", i);
		format_size(d->size[i], size, sizeof(size));
		if (bar & PCI_BASE_ADDRESS_SPACE_IO)
			field(label, "io 0x%llx %s", (unsigned long long)(bar & PCI_ADDR_IO_MASK),
			      size);
		else
			field(label, "mem 0x%llx %s (%s, %s)",
			      (unsigned long long)(bar & PCI_ADDR_MEM_MASK), size,
			      (bar & PCI_BASE_ADDRESS_MEM_TYPE_MASK) == PCI_BASE_ADDRESS_MEM_TYPE_64 ?
				      "64-bit" : "32-bit",
			      bar & PCI_BASE_ADDRESS_MEM_PREFETCH ? "prefetchable" :
								    "non-prefetchable");
	}
}

#define SYSFS_PCI "/sys/bus/pci/devices/"
#define NEEDS_ROOT "unknown (PCI config space past 64 bytes is root's)"

/* Whether this process reads the device's config space past the standard header. */
static int config_readable(const char *bus_id)
{
	char path[128], buf[65];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), SYSFS_PCI "%s/config", bus_id);
	f = fopen(path, "rb");
	if (f) {
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
	}
	return n == sizeof(buf);
}

/* The first line of a sysfs attribute of the device, or NULL. */
static char *sysfs_attr(const char *bus_id, const char *attr, char *buf, int len)
{
	char path[512];
	FILE *f;
	char *line;

	snprintf(path, sizeof(path), SYSFS_PCI "%s/%s", bus_id, attr);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	line = fgets(buf, len, f);
	fclose(f);
	if (line)
		line[strcspn(line, "\n")] = 0;
	return line;
}

/* MSI-X vectors the driver uses, as sysfs lists them (the table's size is in config space). */
static unsigned int sysfs_msix_vectors(const char *bus_id)
{
	unsigned int count = 0;
	struct dirent *e;
	char dir[128], attr[16 + sizeof(e->d_name)], mode[16];
	DIR *d;

	snprintf(dir, sizeof(dir), SYSFS_PCI "%s/msi_irqs", bus_id);
	d = opendir(dir);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		snprintf(attr, sizeof(attr), "msi_irqs/%s", e->d_name);
		if (e->d_name[0] != '.' && sysfs_attr(bus_id, attr, mode, sizeof(mode)) &&
		    !strcmp(mode, "msix"))
			count++;
	}
	closedir(d);
	return count;
}

static void show_msix(struct pci_dev *d, const char *bus_id)
{
	struct pci_cap *cap = pci_find_cap(d, PCI_CAP_ID_MSIX, PCI_CAP_NORMAL);
	unsigned int control, vectors;

	if (!cap) {
		vectors = sysfs_msix_vectors(bus_id);
		if (vectors)
			field("msi-x", "enabled, %u vectors in use", vectors);
		else
			field("msi-x", "%s", config_readable(bus_id) ? "none" : NEEDS_ROOT);
		return;
	}
	control = pci_read_word(d, cap->addr + PCI_CAP_FLAGS);
	field("msi-x", "%u vectors, %s", (control & PCI_MSIX_TABSIZE) + 1,
	      control & PCI_MSIX_ENABLE ? "enabled" : "disabled");
}

static const char *link_speed(unsigned int code)
{
	static const char *const speeds[] = { NULL, "2.5", "5", "8", "16", "32", "64" };

	return code < ARRAY_SIZE(speeds) && speeds[code] ? speeds[code] : "unknown";
}

/* The link as sysfs tells it ("2.5 GT/s PCIe" and a width); 0 if it does not. */
static int sysfs_link(const char *bus_id)
{
	char speed[32], width[16], max_speed[32], max_width[16];

	if (!sysfs_attr(bus_id, "current_link_speed", speed, sizeof(speed)) ||
	    !sysfs_attr(bus_id, "current_link_width", width, sizeof(width)) ||
	    !sysfs_attr(bus_id, "max_link_speed", max_speed, sizeof(max_speed)) ||
	    !sysfs_attr(bus_id, "max_link_width", max_width, sizeof(max_width)))
		return 0;
	speed[strcspn(speed, " ")] = 0;
	max_speed[strcspn(max_speed, " ")] = 0;
	field("link", "%s GT/s x%s (max %s GT/s x%s)", speed, width, max_speed, max_width);
	return 1;
}

/* Link registers of the PCI Express capability; config space past 64 bytes needs root. */
static void show_link(struct pci_dev *d, const char *bus_id)
{
	struct pci_cap *cap = pci_find_cap(d, PCI_CAP_ID_EXP, PCI_CAP_NORMAL);
	unsigned int type, lnkcap, lnksta;

	if (!cap) {
		if (!sysfs_link(bus_id))
			field("link", "%s", config_readable(bus_id) ? "none (conventional PCI)" :
				      NEEDS_ROOT);
		return;
	}
	type = (pci_read_word(d, cap->addr + PCI_EXP_FLAGS) & PCI_EXP_FLAGS_TYPE) >> 4;
	if (type == PCI_EXP_TYPE_ROOT_INT_EP) {
		field("link", "none (root complex integrated endpoint)");
		return;
	}
	lnkcap = pci_read_long(d, cap->addr + PCI_EXP_LNKCAP);
	lnksta = pci_read_word(d, cap->addr + PCI_EXP_LNKSTA);
	field("link", "%s GT/s x%u (max %s GT/s x%u)", link_speed(lnksta & PCI_EXP_LNKSTA_SPEED),
	      (lnksta & PCI_EXP_LNKSTA_WIDTH) >> 4, link_speed(lnkcap & PCI_EXP_LNKCAP_SPEED),
	      (lnkcap & PCI_EXP_LNKCAP_WIDTH) >> 4);
}

static struct pci_dev *find_pci_dev(struct pci_access *pacc, const char *bus_id)
{
	unsigned int domain, bus, slot, func;
	struct pci_dev *d;

	if (sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &slot, &func) != 4)
		return NULL;
	for (d = pacc->devices; d; d = d->next) {
		if ((unsigned int)d->domain == domain && d->bus == bus && d->dev == slot &&
		    d->func == func)
			return d;
	}
	return NULL;
}

static void show_pci(struct pci_access *pacc, const char *bus_id)
{
	struct pci_dev *d = find_pci_dev(pacc, bus_id);
	char name[256];

	if (!d) {
		field("pci", "not found by libpci");
		return;
	}
	pci_fill_info(d, PCI_FILL_IDENT | PCI_FILL_CLASS | PCI_FILL_CLASS_EXT | PCI_FILL_SUBSYS |
				 PCI_FILL_IRQ | PCI_FILL_BASES | PCI_FILL_SIZES | PCI_FILL_IO_FLAGS |
				 PCI_FILL_NUMA_NODE);
	/* The hpu IDs are not in pci.ids: print the numbers and whatever libpci knows. */
	field("vendor", "%04x %s", d->vendor_id,
	      or_unknown(pci_lookup_name(pacc, name, sizeof(name),
					 PCI_LOOKUP_VENDOR | PCI_LOOKUP_NO_NUMBERS, d->vendor_id)));
	field("device", "%04x %s", d->device_id,
	      or_unknown(pci_lookup_name(pacc, name, sizeof(name),
					 PCI_LOOKUP_DEVICE | PCI_LOOKUP_NO_NUMBERS, d->vendor_id,
					 d->device_id)));
	field("subsystem", "%04x:%04x %s", d->subsys_vendor_id, d->subsys_id,
	      or_unknown(pci_lookup_name(pacc, name, sizeof(name),
					 PCI_LOOKUP_SUBSYSTEM | PCI_LOOKUP_DEVICE |
						 PCI_LOOKUP_NO_NUMBERS,
					 d->vendor_id, d->device_id, d->subsys_vendor_id,
					 d->subsys_id)));
	field("class", "%04x %s", d->device_class,
	      or_unknown(pci_lookup_name(pacc, name, sizeof(name),
					 PCI_LOOKUP_CLASS | PCI_LOOKUP_NO_NUMBERS, d->device_class)));
	field("revision", "%02x", d->rev_id);
	if (d->irq > 0)
		field("irq", "%d", d->irq);
	else
		field("irq", "none");
	show_msix(d, bus_id);
	show_bars(d);
	if (d->numa_node >= 0)
		field("numa node", "%d", d->numa_node);
	else
		field("numa node", "none");
	show_link(d, bus_id);
}

static const char *status_name(uint32_t status)
{
	static const char *const names[] = {
		[HPU_DEVICE_STATUS_READY] = "ready",
		[HPU_DEVICE_STATUS_IN_RESET] = "in reset",
		[HPU_DEVICE_STATUS_MALFUNCTION] = "malfunction",
	};

	return status < ARRAY_SIZE(names) ? names[status] : NULL;
}

static void show_capabilities(uint64_t caps)
{
	static const struct {
		uint64_t bit;
		const char *name;
	} known[] = {
		{ HPU_CAP_FP32, "fp32" },
		{ HPU_CAP_BF16, "bf16" },
		{ HPU_CAP_FP16, "fp16" },
		{ HPU_CAP_FP8, "fp8" },
	};
	char names[128] = "";
	size_t i, len = 0;

	for (i = 0; i < ARRAY_SIZE(known); i++) {
		if (caps & known[i].bit) {
			len += snprintf(names + len, sizeof(names) - len, "%s%s", len ? " " : "",
					known[i].name);
			caps &= ~known[i].bit;
		}
	}
	/* Bits of a newer driver stay visible. */
	if (caps)
		len += snprintf(names + len, sizeof(names) - len, "%s0x%llx", len ? " " : "",
				(unsigned long long)caps);
	field("capabilities", "%s", len ? names : "none");
}

/* What the device is doing now: the driver's counters. */
static int show_usage(struct hpu_device *dev, uint32_t max_contexts)
{
	struct hpu_device_stats stats = { .size = sizeof(stats) };
	char used[32], total[32];

	if (hpu_device_get_stats(dev, &stats)) {
		field("error", "%s", hpu_last_error());
		return -1;
	}
	field("contexts", "%u of %u open", stats.num_contexts, max_contexts);
	format_size(stats.hbm_used, used, sizeof(used));
	format_size(stats.hbm_total, total, sizeof(total));
	field("hbm used", "%s of %s (%llu bytes)", used, total,
	      (unsigned long long)stats.hbm_used);
	field("jobs", "%llu submitted, %llu completed, %llu failed",
	      (unsigned long long)stats.jobs_submitted, (unsigned long long)stats.jobs_completed,
	      (unsigned long long)stats.jobs_failed);
	return 0;
}

static int show_info(struct hpu_device *dev)
{
	struct hpu_device_info info = { .size = sizeof(info) };
	char hbm[32];

	if (hpu_device_get_info(dev, &info)) {
		field("error", "%s", hpu_last_error());
		return -1;
	}
	if (status_name(info.status))
		field("status", "%s", status_name(info.status));
	else
		field("status", "unknown (%u)", info.status);
	field("firmware", "%u.%u.%u (interface %u.%u)", info.fw_version.major,
	      info.fw_version.minor, info.fw_version.patch, info.fw_if_version.major,
	      info.fw_if_version.minor);
	format_size(info.hbm_size, hbm, sizeof(hbm));
	field("hbm", "%s (%llu bytes)", hbm, (unsigned long long)info.hbm_size);
	field("engines", "dma %u, mme %u, tpc %u", info.num_dma_engines, info.num_mme_engines,
	      info.num_tpc_engines);
	show_capabilities(info.capabilities);
	field("abi", "%u.%u", info.abi_version.major, info.abi_version.minor);
	field("hw revision", "%u", info.hw_revision);
	/* A driver before ABI 1.1 has no queues and no usage statistics. */
	if (!info.num_queues)
		return 0;
	field("queues", "%u, and %u user queues", info.num_queues, info.num_user_queues);
	return show_usage(dev, info.max_contexts);
}

static int show_open(const char *path)
{
	struct hpu_device *dev;
	int ret;

	if (hpu_device_open_path(path, &dev)) {
		field("error", "%s", hpu_last_error());
		return -1;
	}
	ret = show_info(dev);
	hpu_device_close(dev);
	return ret;
}

/* The driver's reset counts and last cause (sysfs, ABI 1.3 on). */
static void show_resets(const char *bus_id)
{
	char queue[16], engine[16], device[16], cause[32];

	if (sysfs_attr(bus_id, "queue_resets", queue, sizeof(queue)) &&
	    sysfs_attr(bus_id, "engine_resets", engine, sizeof(engine)) &&
	    sysfs_attr(bus_id, "device_resets", device, sizeof(device)) &&
	    sysfs_attr(bus_id, "last_reset_cause", cause, sizeof(cause)))
		field("resets", "%s queue, %s engine, %s device (last: %s)", queue, engine,
		      device, cause);
}

static int show_device(struct pci_access *pacc, unsigned int index,
		       const struct hpu_device_desc *desc)
{
	int ret;

	printf("device %u:\n", index);
	field("node", "%s", desc->path);
	field("pci address", "%s", desc->pci_bus_id);
	show_pci(pacc, desc->pci_bus_id);
	ret = show_open(desc->path);
	show_resets(desc->pci_bus_id);
	return ret;
}

static int parse_index(const char *arg, unsigned int *index)
{
	unsigned long value;
	char *end;

	errno = 0;
	value = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || value > ~0u)
		return -EINVAL;
	*index = (unsigned int)value;
	return 0;
}

int main(int argc, char **argv)
{
	struct hpu_device_desc *descs;
	unsigned int i, count, found, first = 0, last;
	struct pci_access *pacc;
	struct hpu_version v;
	int opt, one = 0, status = 0;

	while ((opt = getopt(argc, argv, "d:Vh")) != -1) {
		switch (opt) {
		case 'd':
			if (parse_index(optarg, &first)) {
				fprintf(stderr, "hpu-smi: bad device index '%s'\n", optarg);
				usage(stderr);
				return 2;
			}
			one = 1;
			break;
		case 'V':
			v = hpu_version();
			printf("hpu-smi (libhpu %u.%u.%u)\n", v.major, v.minor, v.patch);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "hpu-smi: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}

	if (hpu_device_count(&count)) {
		fprintf(stderr, "hpu-smi: %s\n", hpu_last_error());
		return 1;
	}
	descs = calloc(count ? count : 1, sizeof(*descs));
	if (!descs) {
		fprintf(stderr, "hpu-smi: out of memory\n");
		return 1;
	}
	if (hpu_device_list(descs, count, &found)) {
		fprintf(stderr, "hpu-smi: %s\n", hpu_last_error());
		free(descs);
		return 1;
	}
	/* Devices may have come or gone between the two calls. */
	if (found < count)
		count = found;
	if (!count) {
		fprintf(stderr, "hpu-smi: no hpu devices found\n");
		free(descs);
		return 1;
	}
	if (one && first >= count) {
		fprintf(stderr, "hpu-smi: no hpu device %u (%u found)\n", first, count);
		free(descs);
		return 1;
	}
	last = one ? first + 1 : count;

	pacc = pci_alloc();
	pci_init(pacc);
	pci_scan_bus(pacc);
	for (i = first; i < last; i++) {
		if (i > first)
			putchar('\n');
		if (show_device(pacc, i, &descs[i]))
			status = 1;
	}
	pci_cleanup(pacc);
	free(descs);
	return status;
}
