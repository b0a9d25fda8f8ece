// SPDX-License-Identifier: MIT
/*
 * libhpu and hpu-smi against the live device: discovery, open/close, info
 * equal to what the driver reports, errors with messages.
 */
#include <stdarg.h>
#include <sys/wait.h>

#include <hpu/hpu.h>

#include "kselftest_harness.h"

#include <drm/hpu_accel.h>
#include "hpu_test.h"

FIXTURE(rt) {
	char bdf[64];
	char node[512];
	struct hpu_device *dev;
};

FIXTURE_SETUP(rt)
{
	ASSERT_EQ(0, hpu_find_bdf(self->bdf, sizeof(self->bdf)));
	ASSERT_EQ(0, hpu_node_path(self->bdf, self->node, sizeof(self->node)));
	ASSERT_EQ(0, hpu_device_open(0, &self->dev)) TH_LOG("%s", hpu_last_error());
}

FIXTURE_TEARDOWN(rt)
{
	hpu_device_close(self->dev);
}

TEST_F(rt, discovery_finds_the_device)
{
	struct hpu_device_desc descs[4];
	unsigned int count = 0;

	ASSERT_EQ(0, hpu_device_count(&count));
	ASSERT_EQ(1, count);
	ASSERT_EQ(0, hpu_device_list(descs, 4, &count));
	ASSERT_EQ(1, count);
	EXPECT_STREQ(self->bdf, descs[0].pci_bus_id);
	EXPECT_STREQ(self->node, descs[0].path);
}

TEST_F(rt, info_equals_driver)
{
	struct hpu_device_info info = { .size = sizeof(info) };
	struct drm_hpu_device_info di;
	struct drm_hpu_info args = {
		.data_ptr = (uintptr_t)&di,
		.data_size = sizeof(di),
		.query = DRM_HPU_INFO_DEVICE,
	};
	int fd;

	ASSERT_EQ(0, hpu_device_get_info(self->dev, &info)) TH_LOG("%s", hpu_last_error());
	fd = hpu_open_node(self->bdf);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_HPU_INFO, &args));
	close(fd);

	EXPECT_EQ(sizeof(info), info.size);
	EXPECT_EQ(di.status, info.status);
	EXPECT_EQ(di.capabilities, info.capabilities);
	EXPECT_EQ(di.hbm_size, info.hbm_size);
	EXPECT_EQ(hpu_env_ull("HPU_EXPECT_HBM_SIZE"), info.hbm_size);
	EXPECT_EQ(di.pci_revision, info.pci_revision);
	EXPECT_EQ(di.hw_revision, info.hw_revision);
	EXPECT_EQ(di.num_dma_engines, info.num_dma_engines);
	EXPECT_EQ(di.num_mme_engines, info.num_mme_engines);
	EXPECT_EQ(di.num_tpc_engines, info.num_tpc_engines);
	EXPECT_EQ(di.pci_vendor_id, info.pci_vendor_id);
	EXPECT_EQ(di.pci_device_id, info.pci_device_id);
	EXPECT_EQ(di.pci_subsystem_vendor_id, info.pci_subsystem_vendor_id);
	EXPECT_EQ(di.pci_subsystem_id, info.pci_subsystem_id);
	EXPECT_EQ(DRM_HPU_ABI_MAJOR, info.abi_version.major);
	EXPECT_EQ(DRM_HPU_ABI_MINOR, info.abi_version.minor);
	EXPECT_EQ(di.fw_version >> 16, info.fw_version.major);
	EXPECT_EQ((di.fw_version >> 8) & 0xff, info.fw_version.minor);
	EXPECT_EQ(di.fw_version & 0xff, info.fw_version.patch);
	EXPECT_EQ(di.fw_if_version >> 16, info.fw_if_version.major);
	EXPECT_EQ(di.fw_if_version & 0xffff, info.fw_if_version.minor);
	EXPECT_STREQ(self->bdf, info.pci_bus_id);
	EXPECT_STREQ(self->node, info.path);
}

TEST_F(rt, info_rejects_short_size)
{
	struct hpu_device_info info = { .size = HPU_DEVICE_INFO_SIZE_V1 - 1 };

	EXPECT_EQ(-EINVAL, hpu_device_get_info(self->dev, &info));
	EXPECT_NE(0, strlen(hpu_last_error()));
}

TEST_F(rt, open_missing_index_fails_with_message)
{
	struct hpu_device *dev = (struct hpu_device *)1;

	EXPECT_EQ(-ENODEV, hpu_device_open(1, &dev));
	EXPECT_EQ(NULL, dev);
	EXPECT_NE(NULL, strstr(hpu_last_error(), "1"));
}

TEST_F(rt, open_path)
{
	struct hpu_device *dev = NULL;

	ASSERT_EQ(0, hpu_device_open_path(self->node, &dev)) TH_LOG("%s", hpu_last_error());
	hpu_device_close(dev);
	/* A node of another driver is not an hpu device. */
	EXPECT_GT(0, hpu_device_open_path("/dev/null", &dev));
	EXPECT_EQ(NULL, dev);
	EXPECT_EQ(-ENOENT, hpu_device_open_path("/dev/dri/no-such-node", &dev));
}

/* Two handles on the same device are independent. */
TEST_F(rt, open_twice)
{
	struct hpu_device_info info = { .size = sizeof(info) };
	struct hpu_device *dev2 = NULL;

	ASSERT_EQ(0, hpu_device_open(0, &dev2));
	hpu_device_close(self->dev);
	self->dev = NULL;
	EXPECT_EQ(0, hpu_device_get_info(dev2, &info));
	hpu_device_close(dev2);
}

/* Runs hpu-smi with args; returns its exit status and its stdout in out. */
static int smi(const char *args, char *out, size_t len)
{
	char cmd[512];
	size_t n = 0;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s/build/userspace/bin/hpu-smi %s 2>/dev/null",
		 hpu_env("HPU_TOP"), args);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (n + 1 < len && (st = fread(out + n, 1, len - 1 - n, p)) > 0)
		n += st;
	out[n] = 0;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Formats a line and checks hpu-smi's output has it. */
static void __attribute__((format(printf, 3, 4)))
expect_line(struct __test_metadata *_metadata, const char *out, const char *fmt, ...)
{
	char want[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(want, sizeof(want), fmt, ap);
	va_end(ap);
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("no '%s' in:\n%s", want, out);
}

/* hpu-smi shows the device with what the driver and PCI config space say. */
TEST_F(rt, smi_lists_the_device)
{
	struct hpu_device_info info = { .size = sizeof(info) };
	char out[8192];

	ASSERT_EQ(0, hpu_device_get_info(self->dev, &info));
	ASSERT_EQ(0, smi("", out, sizeof(out)));
	expect_line(_metadata, out, "device 0:\n");
	expect_line(_metadata, out, "  node:            %s\n", self->node);
	expect_line(_metadata, out, "  pci address:     %s\n", self->bdf);
	expect_line(_metadata, out, "  vendor:          1234 ");
	expect_line(_metadata, out, "  device:          4850 ");
	expect_line(_metadata, out, "  class:           1200 ");
	/* Only root reads the MSI-X table's size in config space; others see sysfs's count. */
	if (geteuid())
		expect_line(_metadata, out, "  msi-x:           enabled, ");
	else
		expect_line(_metadata, out, "  msi-x:           8 vectors, enabled\n");
	expect_line(_metadata, out, "  status:          ready\n");
	expect_line(_metadata, out, "  firmware:        %u.%u.%u (interface %u.%u)\n",
		    info.fw_version.major, info.fw_version.minor, info.fw_version.patch,
		    info.fw_if_version.major, info.fw_if_version.minor);
	expect_line(_metadata, out, "  hbm:             32 GiB (%llu bytes)\n",
		    (unsigned long long)info.hbm_size);
	expect_line(_metadata, out, "  engines:         dma %u, mme %u, tpc %u\n",
		    info.num_dma_engines, info.num_mme_engines, info.num_tpc_engines);
	expect_line(_metadata, out, "  capabilities:    fp32 bf16\n");
}

TEST_F(rt, smi_usage_errors)
{
	char out[8192];

	EXPECT_EQ(0, smi("-d 0", out, sizeof(out)));
	EXPECT_EQ(1, smi("-d 1", out, sizeof(out)));
	EXPECT_EQ(2, smi("-x", out, sizeof(out)));
	EXPECT_EQ(2, smi("-d zero", out, sizeof(out)));
	EXPECT_EQ(0, smi("-h", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "usage: hpu-smi"));
}

TEST_HARNESS_MAIN
