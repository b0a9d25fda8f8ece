# What each host unit test links, besides its own file (used by ../../Makefile).
HOST_TEST_SRCS_test_dev_core := qemu-device/core/hpu_dev_core.c
HOST_TEST_LIBS_test_dev_core := -lz
