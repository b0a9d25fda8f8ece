/* SPDX-License-Identifier: MIT */
/*
 * The smallest libhpu program: open device 0, print what it is, close it.
 * Build against an installed libhpu with:
 *   cc hpu_info.c $(pkg-config --cflags --libs hpu) -o hpu_info
 */
#include <stdio.h>

#include <hpu/hpu.h>

int main(void)
{
	struct hpu_device_info info = { .size = sizeof(info) };
	struct hpu_device *dev;
	int ret;

	ret = hpu_device_open(0, &dev);
	if (ret) {
		fprintf(stderr, "hpu_info: %s\n", hpu_last_error());
		return 1;
	}
	ret = hpu_device_get_info(dev, &info);
	if (ret)
		fprintf(stderr, "hpu_info: %s\n", hpu_last_error());
	else
		printf("%s (%s): firmware %u.%u.%u, %llu bytes of HBM, %u TPC engines\n",
		       info.path, info.pci_bus_id, info.fw_version.major, info.fw_version.minor,
		       info.fw_version.patch, (unsigned long long)info.hbm_size,
		       info.num_tpc_engines);
	hpu_device_close(dev);
	return ret ? 1 : 0;
}
