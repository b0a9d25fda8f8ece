// SPDX-License-Identifier: MIT
/*
 * libhpu and hpu-smi against the live device: discovery, open/close, info
 * equal to what the driver reports, errors with messages.
 */
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

TEST_HARNESS_MAIN
