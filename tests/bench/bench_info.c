// SPDX-License-Identifier: MIT
/*
 * bench-info: cost of asking the device what it is, straight through the
 * ioctl and through libhpu, measured in one run so the ratio is the
 * runtime's overhead on the ioctl path.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <hpu/hpu.h>
#include <drm/hpu_accel.h>

#define CALLS 20000

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int raw_info(int fd, struct drm_hpu_device_info *di)
{
	struct drm_hpu_info args = {
		.data_ptr = (uintptr_t)di,
		.data_size = sizeof(*di),
		.query = DRM_HPU_INFO_DEVICE,
	};

	return ioctl(fd, DRM_IOCTL_HPU_INFO, &args) ? -errno : 0;
}

int main(void)
{
	struct hpu_device_info info = { .size = sizeof(info) };
	struct drm_hpu_device_info di;
	struct hpu_device *dev;
	double t0, raw, rt;
	int i, fd, err;

	err = hpu_device_open(0, &dev);
	if (err) {
		fprintf(stderr, "bench-info: %s\n", hpu_last_error());
		return 1;
	}
	err = hpu_device_get_info(dev, &info);
	fd = err ? -1 : open(info.path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "bench-info: cannot open the device node\n");
		return 1;
	}

	/* Interleave the two so drift of a busy host hits both alike. */
	raw = rt = 0;
	for (i = 0; i < CALLS && !err; i++) {
		t0 = now_ns();
		err = raw_info(fd, &di);
		raw += now_ns() - t0;
		t0 = now_ns();
		err = err ? err : hpu_device_get_info(dev, &info);
		rt += now_ns() - t0;
	}
	if (err) {
		fprintf(stderr, "bench-info: INFO failed: %s\n", strerror(-err));
		return 1;
	}
	printf("BENCH info_ioctl %.0f ns/call\n", raw / CALLS);
	printf("BENCH info_runtime %.0f ns/call\n", rt / CALLS);
	printf("BENCH info_runtime_over_ioctl %.2f ratio\n", rt / raw);
	close(fd);
	hpu_device_close(dev);
	return 0;
}
