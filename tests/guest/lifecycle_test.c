// SPDX-License-Identifier: MIT
/*
 * Probe, remove and firmware boot: unbind/rebind, module unload/reload with a
 * node open, and every way a boot can fail (missing, corrupt or oversized
 * image, boot timeout).  A failed probe must leave one clear log line, no
 * node, and a device the next load boots normally.
 */
#include <sys/mman.h>

#include "kselftest_harness.h"

#include <drm/hpu_accel.h>
#include "hpu_fw_if.h"
#include "hpu_test.h"

#define FW_TMP_DIR "/run/hpu-fw" /* the guest's writable tmpfs */
#define FW_PATH_PARAM "/sys/module/firmware_class/parameters/path"

static int info_ok(int fd)
{
	struct drm_hpu_device_info di;
	struct drm_hpu_info args = {
		.data_ptr = (uintptr_t)&di,
		.data_size = sizeof(di),
		.query = DRM_HPU_INFO_DEVICE,
	};

	if (ioctl(fd, DRM_IOCTL_HPU_INFO, &args))
		return -errno;
	return di.status == DRM_HPU_STATUS_READY ? 0 : -EIO;
}

/* Each test leaves the default module loaded and the device bound. */
#define LIFECYCLE_FIXTURE(name)                                                    \
	HPU_LOG_FIXTURE(name, {                                                    \
		if (!hpu_is_bound(self->bdf))                                      \
			ASSERT_EQ(0, hpu_reload(""));                              \
		ASSERT_TRUE(hpu_is_bound(self->bdf));                              \
	})

LIFECYCLE_FIXTURE(lifecycle)

/* After a healthy probe: bound, one "ready" line, a working node. */
static void assert_healthy(struct __test_metadata *_metadata, const char *bdf, const char *mark)
{
	int fd;

	ASSERT_TRUE(hpu_is_bound(bdf));
	EXPECT_EQ(1, hpu_log_count(mark, "hpu .*firmware .* ready"));
	fd = hpu_open_node(bdf);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, info_ok(fd));
	close(fd);
}

TEST_F(lifecycle, reload_module)
{
	ASSERT_EQ(0, hpu_reload(""));
	assert_healthy(_metadata, self->bdf, self->mark);
	EXPECT_EQ(0, hpu_log_count(self->mark, "boot failed"));
}

TEST_F(lifecycle, unbind_rebind)
{
	char node[512];

	ASSERT_EQ(0, hpu_write_file(HPU_SYSFS_DRIVER "/unbind", self->bdf));
	EXPECT_FALSE(hpu_is_bound(self->bdf));
	EXPECT_EQ(-ENOENT, hpu_node_path(self->bdf, node, sizeof(node)));
	ASSERT_EQ(0, hpu_write_file(HPU_SYSFS_DRIVER "/bind", self->bdf));
	assert_healthy(_metadata, self->bdf, self->mark);
}

/* An fd held across unbind fails cleanly, and the device rebinds. */
TEST_F(lifecycle, unbind_with_open_node)
{
	int fd = hpu_open_node(self->bdf);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, info_ok(fd));
	ASSERT_EQ(0, hpu_write_file(HPU_SYSFS_DRIVER "/unbind", self->bdf));
	EXPECT_EQ(-ENODEV, info_ok(fd));
	close(fd);
	ASSERT_EQ(0, hpu_write_file(HPU_SYSFS_DRIVER "/bind", self->bdf));
	assert_healthy(_metadata, self->bdf, self->mark);
}

/* The module cannot go while a node is open, and can once it is closed. */
TEST_F(lifecycle, unload_with_open_node)
{
	int fd = hpu_open_node(self->bdf);

	ASSERT_LE(0, fd);
	if (syscall(SYS_delete_module, "hpu", O_NONBLOCK) == 0)
		TH_LOG("module unloaded with a node open");
	EXPECT_EQ(EWOULDBLOCK, errno);
	EXPECT_EQ(0, info_ok(fd));
	close(fd);
	ASSERT_EQ(0, hpu_reload(""));
	assert_healthy(_metadata, self->bdf, self->mark);
}

/* Loads the module with an image named `name` from FW_TMP_DIR. */
static int load_with_image(const char *name, const void *img, size_t len, char *saved,
			   size_t saved_len)
{
	char path[512], params[256];
	int fd, err;

	mkdir(FW_TMP_DIR, 0755);
	mkdir(FW_TMP_DIR "/hpu", 0755);
	snprintf(path, sizeof(path), FW_TMP_DIR "/hpu/%s", name);
	if (img) {
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			return -errno;
		if (write(fd, img, len) != (ssize_t)len) {
			close(fd);
			return -EIO;
		}
		close(fd);
	}
	err = hpu_read_file(FW_PATH_PARAM, saved, saved_len);
	if (err)
		return err;
	err = hpu_write_file(FW_PATH_PARAM, FW_TMP_DIR);
	if (err)
		return err;
	snprintf(params, sizeof(params), "fw_name=hpu/%s", name);
	err = hpu_reload(params);
	hpu_write_file(FW_PATH_PARAM, saved);
	return err;
}

/* Reads the good image into a buffer `extra` bytes larger than the file. */
static unsigned char *good_image(size_t *len, size_t extra)
{
	char path[512];
	unsigned char *buf;
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/build/firmware/" HPU_FW_DEFAULT_NAME, hpu_env("HPU_TOP"));
	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		return NULL;
	buf = calloc(1, st.st_size + extra);
	if (buf && read(fd, buf, st.st_size) != st.st_size) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	*len = st.st_size;
	return buf;
}

/*
 * The probe failed with exactly one "boot failed" line matching `why`, left
 * no node, and a default reload then boots the device normally.
 */
static void assert_probe_failed(struct __test_metadata *_metadata, const char *bdf,
				const char *mark, const char *why)
{
	char node[512], mark2[64];

	EXPECT_FALSE(hpu_is_bound(bdf));
	EXPECT_EQ(-ENOENT, hpu_node_path(bdf, node, sizeof(node)));
	EXPECT_EQ(1, hpu_log_count(mark, "hpu .*boot failed: "));
	EXPECT_EQ(1, hpu_log_count(mark, why)) TH_LOG("no log line matching '%s'", why);
	EXPECT_EQ(0, hpu_log_count(mark, "ready"));

	ASSERT_EQ(0, hpu_log_mark(mark2, sizeof(mark2)));
	ASSERT_EQ(0, hpu_reload(""));
	assert_healthy(_metadata, bdf, mark2);
}

/* A copy of the good image with one byte changed, and the reason expected. */
LIFECYCLE_FIXTURE(corrupt)

FIXTURE_VARIANT(corrupt) {
	size_t offset;
	unsigned char xor;
	const char *why;
};

#define CORRUPT(id, off, x, reason)                                               \
	FIXTURE_VARIANT_ADD(corrupt, id) {                                        \
		.offset = off, .xor = x, .why = "rejected by device: " reason,    \
	}

CORRUPT(bad_magic, 0, 0x01, "bad magic");
CORRUPT(if_major, 6, 0x01, "bad interface version");
CORRUPT(if_minor_newer, 4, 0x01, "bad interface version");
CORRUPT(header_size, 8, 0x04, "bad size");
CORRUPT(payload_size, 12, 0x01, "bad size");
CORRUPT(flags, 20, 0x01, "bad flags");
CORRUPT(reserved, 56, 0x80, "bad flags");
CORRUPT(version_str, 24, 0x20, "bad CRC");
CORRUPT(payload, HPU_FW_HEADER_SIZE + 3, 0x01, "bad CRC");
CORRUPT(crc, HPU_FW_CRC_OFFSET, 0x01, "bad CRC");

TEST_F(corrupt, image_refused)
{
	char saved[512];
	unsigned char *img;
	size_t len;

	img = good_image(&len, 0);
	ASSERT_NE(NULL, img);
	ASSERT_GT(len, variant->offset);
	img[variant->offset] ^= variant->xor;
	ASSERT_EQ(0, load_with_image("corrupt.bin", img, len, saved, sizeof(saved)));
	free(img);
	assert_probe_failed(_metadata, self->bdf, self->mark, variant->why);
}

TEST_F(lifecycle, missing_image)
{
	char saved[512];

	ASSERT_EQ(0, load_with_image("does-not-exist.bin", NULL, 0, saved, sizeof(saved)));
	assert_probe_failed(_metadata, self->bdf, self->mark,
			    "firmware hpu/does-not-exist.bin not found \\(error -2\\)");
}

TEST_F(lifecycle, truncated_image)
{
	char saved[512];
	unsigned char *img;
	size_t len;

	img = good_image(&len, 0);
	ASSERT_NE(NULL, img);
	ASSERT_EQ(0, load_with_image("truncated.bin", img, HPU_FW_HEADER_SIZE - 1, saved,
				     sizeof(saved)));
	free(img);
	assert_probe_failed(_metadata, self->bdf, self->mark, "has invalid size 63");
}

TEST_F(lifecycle, oversized_image)
{
	size_t len, big = HPU_FW_MAX_IMAGE_SIZE + 1;
	unsigned char *img;
	char saved[512];

	img = good_image(&len, big);
	ASSERT_NE(NULL, img);
	ASSERT_EQ(0, load_with_image("oversized.bin", img, big, saved, sizeof(saved)));
	free(img);
	assert_probe_failed(_metadata, self->bdf, self->mark, "has invalid size 1048577");
}

/* The device takes HPU_BOOT_DELAY_MS to boot; a 1 ms budget must time out. */
TEST_F(lifecycle, boot_timeout)
{
	ASSERT_LE(50, hpu_env_ull("HPU_BOOT_DELAY_MS"));
	ASSERT_EQ(0, hpu_reload("boot_timeout_ms=1"));
	assert_probe_failed(_metadata, self->bdf, self->mark, "did not boot within 1 ms");
}

TEST_HARNESS_MAIN
