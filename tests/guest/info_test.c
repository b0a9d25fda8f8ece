// SPDX-License-Identifier: MIT
/*
 * The probed device and DRM_IOCTL_HPU_INFO: every field against what the
 * launcher gave the device, the PCI config space and the firmware image; and
 * every rejection path of the ioctl.
 */
#include <sys/mman.h>

#include <xf86drm.h>

#include "kselftest_harness.h"

#include <drm/hpu_accel.h>
#include "hpu_abi.h"
#include "hpu_fw_if.h"
#include "hpu_test.h"

FIXTURE(dev) {
	char bdf[64];
	int fd;
};

FIXTURE_SETUP(dev)
{
	ASSERT_EQ(0, hpu_find_bdf(self->bdf, sizeof(self->bdf)));
	self->fd = hpu_open_node(self->bdf);
	ASSERT_LE(0, self->fd) TH_LOG("no hpu node for %s: %s", self->bdf, strerror(-self->fd));
}

FIXTURE_TEARDOWN(dev)
{
	close(self->fd);
}

/* Issues INFO; returns 0 or -errno. */
static int info(int fd, struct drm_hpu_info *args)
{
	return ioctl(fd, DRM_IOCTL_HPU_INFO, args) ? -errno : 0;
}

static int device_info(int fd, struct drm_hpu_device_info *di)
{
	struct drm_hpu_info args = {
		.data_ptr = (uintptr_t)di,
		.data_size = sizeof(*di),
		.query = DRM_HPU_INFO_DEVICE,
	};

	return info(fd, &args);
}

static unsigned long attr_ul(const char *bdf, const char *attr)
{
	char buf[64] = "";

	if (hpu_read_attr(bdf, attr, buf, sizeof(buf)))
		return ~0ul;
	return strtoul(buf, NULL, 0);
}

TEST_F(dev, bound_with_drm_identity)
{
	drmVersionPtr v;

	ASSERT_TRUE(hpu_is_bound(self->bdf));
	v = drmGetVersion(self->fd);
	ASSERT_NE(NULL, v);
	EXPECT_STREQ(DRM_HPU_DRIVER_NAME, v->name);
	EXPECT_EQ(DRM_HPU_ABI_MAJOR, v->version_major);
	EXPECT_EQ(DRM_HPU_ABI_MINOR, v->version_minor);
	drmFreeVersion(v);
}

TEST_F(dev, info_pci_identity)
{
	struct drm_hpu_device_info di;

	ASSERT_EQ(0, device_info(self->fd, &di));
	EXPECT_EQ(attr_ul(self->bdf, "vendor"), di.pci_vendor_id);
	EXPECT_EQ(attr_ul(self->bdf, "device"), di.pci_device_id);
	EXPECT_EQ(attr_ul(self->bdf, "subsystem_vendor"), di.pci_subsystem_vendor_id);
	EXPECT_EQ(attr_ul(self->bdf, "subsystem_device"), di.pci_subsystem_id);
	EXPECT_EQ(attr_ul(self->bdf, "revision"), di.pci_revision);
	EXPECT_EQ(HPU_PCI_VENDOR_ID, di.pci_vendor_id);
	EXPECT_EQ(HPU_PCI_DEVICE_ID, di.pci_device_id);
	EXPECT_EQ(HPU_PCI_SUBSYSTEM_VENDOR_ID, di.pci_subsystem_vendor_id);
	EXPECT_EQ(HPU_PCI_SUBSYSTEM_ID, di.pci_subsystem_id);
	EXPECT_EQ(HPU_PCI_REVISION, di.pci_revision);
	EXPECT_EQ(HPU_PCI_CLASS, attr_ul(self->bdf, "class"));
}

TEST_F(dev, info_versions_and_status)
{
	struct drm_hpu_device_info di;
	struct hpu_fw_header hdr;
	char path[512];
	int fd;

	ASSERT_EQ(0, device_info(self->fd, &di));
	EXPECT_EQ(DRM_HPU_ABI_VERSION, di.abi_version);
	EXPECT_EQ(DRM_HPU_STATUS_READY, di.status);
	EXPECT_EQ(HPU_HW_REVISION, di.hw_revision);

	/* The firmware version is the one in the image the guest booted. */
	snprintf(path, sizeof(path), "%s/build/firmware/" HPU_FW_DEFAULT_NAME, hpu_env("HPU_TOP"));
	fd = open(path, O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(sizeof(hdr), read(fd, &hdr, sizeof(hdr)));
	close(fd);
	EXPECT_EQ(hdr.fw_version, di.fw_version);
	EXPECT_EQ(hdr.if_version, di.fw_if_version);
	EXPECT_EQ(HPU_FW_IF_VERSION, di.fw_if_version);
}

TEST_F(dev, info_memory_engines_caps)
{
	struct drm_hpu_device_info di;

	memset(&di, 0xa5, sizeof(di));
	ASSERT_EQ(0, device_info(self->fd, &di));
	EXPECT_EQ(hpu_env_ull("HPU_EXPECT_HBM_SIZE"), di.hbm_size);
	EXPECT_EQ(hpu_env_ull("HPU_EXPECT_NUM_DMA"), di.num_dma_engines);
	EXPECT_EQ(hpu_env_ull("HPU_EXPECT_NUM_MME"), di.num_mme_engines);
	EXPECT_EQ(hpu_env_ull("HPU_EXPECT_NUM_TPC"), di.num_tpc_engines);
	/* fp16 and fp8 have bits but no kernel: the device does not claim them. */
	EXPECT_EQ(DRM_HPU_CAP_FP32 | DRM_HPU_CAP_BF16, di.capabilities);
	EXPECT_EQ(0, di.pad);
}

/* sysfs says what INFO says. */
TEST_F(dev, sysfs_matches_info)
{
	struct drm_hpu_device_info di;
	char buf[64], want[64];

	ASSERT_EQ(0, device_info(self->fd, &di));
	EXPECT_EQ(di.hbm_size, attr_ul(self->bdf, "hbm_size"));
	EXPECT_EQ(di.num_dma_engines, attr_ul(self->bdf, "num_dma_engines"));
	EXPECT_EQ(di.num_mme_engines, attr_ul(self->bdf, "num_mme_engines"));
	EXPECT_EQ(di.num_tpc_engines, attr_ul(self->bdf, "num_tpc_engines"));
	EXPECT_EQ(di.hw_revision, attr_ul(self->bdf, "hw_revision"));
	EXPECT_EQ(di.capabilities, attr_ul(self->bdf, "capabilities"));

	ASSERT_EQ(0, hpu_read_attr(self->bdf, "fw_version", buf, sizeof(buf)));
	snprintf(want, sizeof(want), "%u.%u.%u", HPU_FW_VERSION_MAJOR(di.fw_version),
		 HPU_FW_VERSION_MINOR(di.fw_version), HPU_FW_VERSION_PATCH(di.fw_version));
	EXPECT_STREQ(want, buf);
	ASSERT_EQ(0, hpu_read_attr(self->bdf, "fw_if_version", buf, sizeof(buf)));
	snprintf(want, sizeof(want), "%u.%u", HPU_FW_IF_MAJOR(di.fw_if_version),
		 HPU_FW_IF_MINOR(di.fw_if_version));
	EXPECT_STREQ(want, buf);
	ASSERT_EQ(0, hpu_read_attr(self->bdf, "status", buf, sizeof(buf)));
	EXPECT_STREQ("ready", buf);
}

/*
 * (1.3) The reset ladder's counts and last cause, in INFO and sysfs alike.
 * Suites before this one may have reset queues, so the counts are not 0;
 * no reset runs meanwhile.
 */
TEST_F(dev, reset_counts_in_info_and_sysfs)
{
	static const char * const causes[] = {
		[DRM_HPU_RESET_CAUSE_NONE] = "none",
		[DRM_HPU_RESET_CAUSE_TIMEOUT] = "timeout",
		[DRM_HPU_RESET_CAUSE_HANG] = "hang",
		[DRM_HPU_RESET_CAUSE_HEARTBEAT] = "heartbeat",
		[DRM_HPU_RESET_CAUSE_REQUEST] = "request",
	};
	struct drm_hpu_device_info di;
	char buf[64];

	memset(&di, 0xa5, sizeof(di));
	ASSERT_EQ(0, device_info(self->fd, &di));
	EXPECT_EQ(di.queue_resets, attr_ul(self->bdf, "queue_resets"));
	EXPECT_EQ(di.engine_resets, attr_ul(self->bdf, "engine_resets"));
	EXPECT_EQ(di.device_resets, attr_ul(self->bdf, "device_resets"));
	ASSERT_GT(sizeof(causes) / sizeof(causes[0]), di.last_reset_cause);
	ASSERT_EQ(0, hpu_read_attr(self->bdf, "last_reset_cause", buf, sizeof(buf)));
	EXPECT_STREQ(causes[di.last_reset_cause], buf);
	/* A cause only with a reset, and a reset only with a cause. */
	EXPECT_EQ(di.queue_resets + di.engine_resets + di.device_resets == 0,
		  di.last_reset_cause == DRM_HPU_RESET_CAUSE_NONE);
}

/*
 * (1.4) STATS names the calling file's context: two open files see two ids,
 * neither the driver's own ASID 0, each the same at every call; a caller
 * of the 1.1 size gets its 88 bytes and nothing past them.
 * (train_faults_test checks that a fault aimed at an id hits that file.)
 */
TEST_F(dev, stats_name_each_files_context)
{
	struct drm_hpu_stats a, b, again;
	unsigned char v1[sizeof(struct drm_hpu_stats)];
	struct drm_hpu_info args = {
		.data_ptr = (uintptr_t)v1,
		.data_size = DRM_HPU_STATS_SIZE_V1,
		.query = DRM_HPU_INFO_STATS,
	};
	int fd2 = hpu_open_node(self->bdf);
	size_t i;

	ASSERT_LE(0, fd2);
	memset(&a, 0xa5, sizeof(a));
	memset(&b, 0xa5, sizeof(b));
	ASSERT_EQ(0, hpu_stats(self->fd, &a));
	ASSERT_EQ(0, hpu_stats(fd2, &b));
	ASSERT_EQ(0, hpu_stats(self->fd, &again));
	EXPECT_NE(0, a.ctx_id);
	EXPECT_NE(0, b.ctx_id);
	EXPECT_NE(a.ctx_id, b.ctx_id);
	EXPECT_EQ(a.ctx_id, again.ctx_id);
	EXPECT_EQ(0, a.pad1);
	EXPECT_EQ(0, b.pad1);

	memset(v1, 0xa5, sizeof(v1));
	ASSERT_EQ(0, info(fd2, &args));
	EXPECT_EQ(DRM_HPU_STATS_SIZE_V1, args.data_size);
	for (i = DRM_HPU_STATS_SIZE_V1; i < sizeof(v1); i++)
		ASSERT_EQ(0xa5, v1[i]);
	close(fd2);
}

/* A caller built against a later, larger struct gets the known prefix. */
TEST_F(dev, info_larger_buffer_reports_written_size)
{
	unsigned char buf[2 * sizeof(struct drm_hpu_device_info)];
	struct drm_hpu_info args = {
		.data_ptr = (uintptr_t)buf,
		.data_size = sizeof(buf),
		.query = DRM_HPU_INFO_DEVICE,
	};
	size_t i;

	memset(buf, 0xa5, sizeof(buf));
	ASSERT_EQ(0, info(self->fd, &args));
	EXPECT_EQ(sizeof(struct drm_hpu_device_info), args.data_size);
	for (i = sizeof(struct drm_hpu_device_info); i < sizeof(buf); i++)
		ASSERT_EQ(0xa5, buf[i]);
}

TEST_F(dev, reject_nonzero_pad)
{
	struct drm_hpu_device_info di;
	struct drm_hpu_info args = {
		.data_ptr = (uintptr_t)&di,
		.data_size = sizeof(di),
		.pad = 1,
	};

	EXPECT_EQ(-EINVAL, info(self->fd, &args));
}

TEST_F(dev, reject_unknown_flags)
{
	struct drm_hpu_device_info di;
	struct drm_hpu_info args = {
		.data_ptr = (uintptr_t)&di,
		.data_size = sizeof(di),
	};
	unsigned int bit;

	for (bit = 0; bit < 32; bit++) {
		args.flags = 1u << bit;
		EXPECT_EQ(-EINVAL, info(self->fd, &args)) TH_LOG("flag bit %u", bit);
	}
}

TEST_F(dev, reject_unknown_query)
{
	struct drm_hpu_device_info di;
	struct drm_hpu_info args = {
		.data_ptr = (uintptr_t)&di,
		.data_size = sizeof(di),
		/* The first query past the last one: 96 bytes would suit STATS (1.1). */
		.query = DRM_HPU_INFO_STATS + 1,
	};

	EXPECT_EQ(-EINVAL, info(self->fd, &args));
	args.query = ~0u;
	EXPECT_EQ(-EINVAL, info(self->fd, &args));
}

TEST_F(dev, reject_short_size)
{
	struct drm_hpu_device_info di;
	struct drm_hpu_info args = {
		.data_ptr = (uintptr_t)&di,
		.data_size = DRM_HPU_DEVICE_INFO_SIZE_V1 - 1,
	};

	memset(&di, 0xa5, sizeof(di));
	EXPECT_EQ(-EINVAL, info(self->fd, &args));
	args.data_size = 0;
	EXPECT_EQ(-EINVAL, info(self->fd, &args));
	/* Nothing was written on rejection. */
	EXPECT_EQ(0xa5a5a5a5u, di.abi_version);
}

TEST_F(dev, reject_bad_pointer)
{
	struct drm_hpu_info args = {
		.data_size = sizeof(struct drm_hpu_device_info),
	};
	void *ro;

	args.data_ptr = 0;
	EXPECT_EQ(-EFAULT, info(self->fd, &args));
	args.data_ptr = 0xffff800000000000ull; /* kernel half */
	EXPECT_EQ(-EFAULT, info(self->fd, &args));

	/* Read-only user memory cannot be written either. */
	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	args.data_ptr = (uintptr_t)ro;
	EXPECT_EQ(-EFAULT, info(self->fd, &args));
	munmap(ro, 4096);

	/* The device is still fine. */
	struct drm_hpu_device_info di;

	EXPECT_EQ(0, device_info(self->fd, &di));
}

TEST_F(dev, reject_unknown_ioctl)
{
	struct drm_hpu_info args = { 0 };

	EXPECT_NE(0, ioctl(self->fd, DRM_IOWR(DRM_COMMAND_BASE + 0x3f, struct drm_hpu_info),
			   &args));
	EXPECT_EQ(EINVAL, errno);
}

TEST_HARNESS_MAIN
