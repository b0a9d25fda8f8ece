# What each host unit test links, besides its own file (used by ../../Makefile).
HOST_TEST_SRCS_test_dev_core := qemu-device/core/hpu_dev_core.c
HOST_TEST_LIBS_test_dev_core := -lz
HOST_TEST_LIBS_test_libhpu_api := -L$(BUILD)/userspace/lib -Wl,-rpath,$(BUILD)/userspace/lib \
	-lhpu -pthread -ldl
