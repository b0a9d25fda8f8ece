# What each host unit test links, besides its own file (used by ../../Makefile).
# The device core includes "hpu_packets.h" flat, as in QEMU's tree: -Iuapi/drm (flags work here).
# The kernels built as QEMU builds them (qemu-device/qemu/meson.build): vectorized.
HPU_KERNEL_CFLAGS := -O3 -fno-math-errno
HPU_DEV_TEST_SRCS := $(wildcard qemu-device/core/*.c) tests/host/hdm_harness.c
HPU_DEV_TEST_LIBS := $(HPU_KERNEL_CFLAGS) -Iuapi/drm -lz -lopenblas -lm -pthread
HOST_TEST_SRCS_test_dev_core := $(HPU_DEV_TEST_SRCS)
# The core suite makes HBM's mapping fail.
HOST_TEST_LIBS_test_dev_core := $(HPU_DEV_TEST_LIBS) -Wl,--wrap=mmap
HOST_TEST_SRCS_test_dev_queue := $(HPU_DEV_TEST_SRCS)
HOST_TEST_LIBS_test_dev_queue := $(HPU_DEV_TEST_LIBS)
HOST_TEST_SRCS_test_dev_call := $(HPU_DEV_TEST_SRCS)
HOST_TEST_LIBS_test_dev_call := $(HPU_DEV_TEST_LIBS)
HOST_TEST_SRCS_test_dev_uq := $(HPU_DEV_TEST_SRCS)
HOST_TEST_LIBS_test_dev_uq := $(HPU_DEV_TEST_LIBS)
HOST_TEST_SRCS_test_dev_preempt := $(HPU_DEV_TEST_SRCS)
HOST_TEST_LIBS_test_dev_preempt := $(HPU_DEV_TEST_LIBS)
# The compute suite adds test kernels in front of the library's table, and weighs the memory held.
HOST_TEST_SRCS_test_dev_compute := $(HPU_DEV_TEST_SRCS)
HOST_TEST_LIBS_test_dev_compute := $(HPU_DEV_TEST_LIBS) -Wl,--wrap=hdm_kernel_lookup \
	-Wl,--wrap=malloc -Wl,--wrap=calloc -Wl,--wrap=free
HOST_TEST_LIBS_test_libhpu_api := -L$(BUILD)/userspace/lib -Wl,-rpath,$(BUILD)/userspace/lib \
	-lhpu -pthread -ldl
HOST_TEST_SRCS_test_libhpu_internals := userspace/lib/mem/hpu_suballoc.c \
	userspace/lib/submit/hpu_cb.c userspace/lib/util/hpu_error.c \
	userspace/lib/util/hpu_bulk_copy.c userspace/lib/util/hpu_counters.c
HOST_TEST_LIBS_test_libhpu_internals := -pthread
# Kernel suites: the kernel families they cover, the shared kernel harness, libm and threads.
HPU_KERNEL_TEST_LIBS := $(HPU_KERNEL_CFLAGS) -Iuapi/drm -lm -pthread
HOST_TEST_SRCS_test_kernels_eltwise := qemu-device/core/hdm_kernel_eltwise.c \
	tests/host/hdm_kernel_harness.c
HOST_TEST_LIBS_test_kernels_eltwise := $(HPU_KERNEL_TEST_LIBS)
HOST_TEST_SRCS_test_kernels_reduce := qemu-device/core/hdm_kernel_reduce.c \
	qemu-device/core/hdm_kernel_eltwise.c tests/host/hdm_kernel_harness.c
HOST_TEST_LIBS_test_kernels_reduce := $(HPU_KERNEL_TEST_LIBS)
HOST_TEST_SRCS_test_libhpu_tensor := $(addprefix userspace/lib/ops/,hpu_layout.c \
	hpu_encode.c hpu_fallback.c) $(wildcard userspace/lib/ops/hpu_op_*.c) userspace/lib/util/hpu_error.c
HOST_TEST_LIBS_test_libhpu_tensor := -pthread -lm
HOST_TEST_SRCS_test_kernels_nn := qemu-device/core/hdm_kernel_nn.c \
	qemu-device/core/hdm_kernel_loss.c tests/host/hdm_kernel_harness.c
HOST_TEST_LIBS_test_kernels_nn := $(HPU_KERNEL_TEST_LIBS)
HOST_TEST_SRCS_test_kernels_optim := qemu-device/core/hdm_kernel_optim.c \
	tests/host/hdm_kernel_harness.c
HOST_TEST_LIBS_test_kernels_optim := $(HPU_KERNEL_TEST_LIBS)
HOST_TEST_SRCS_test_kernels_foreach := qemu-device/core/hdm_kernel_foreach.c \
	tests/host/hdm_kernel_harness.c
HOST_TEST_LIBS_test_kernels_foreach := $(HPU_KERNEL_TEST_LIBS)
HOST_TEST_SRCS_test_kernels_rmsnorm := qemu-device/core/hdm_kernel_rmsnorm.c \
	tests/host/hdm_kernel_harness.c
HOST_TEST_LIBS_test_kernels_rmsnorm := $(HPU_KERNEL_TEST_LIBS)
HOST_TEST_SRCS_test_kernels_misc := qemu-device/core/hdm_kernel_misc.c \
	tests/host/hdm_kernel_harness.c
HOST_TEST_LIBS_test_kernels_misc := $(HPU_KERNEL_TEST_LIBS)
# The convolutions multiply on OpenBLAS.
HOST_TEST_SRCS_test_kernels_conv := qemu-device/core/hdm_kernel_conv.c \
	tests/host/hdm_kernel_harness.c
HOST_TEST_LIBS_test_kernels_conv := $(HPU_KERNEL_TEST_LIBS) -lopenblas
HOST_TEST_SRCS_test_kernels_index := qemu-device/core/hdm_kernel_index.c \
	tests/host/hdm_kernel_harness.c
HOST_TEST_LIBS_test_kernels_index := $(HPU_KERNEL_TEST_LIBS)
HOST_TEST_SRCS_test_kernels_pool := qemu-device/core/hdm_kernel_pool.c \
	tests/host/hdm_kernel_harness.c
HOST_TEST_LIBS_test_kernels_pool := $(HPU_KERNEL_TEST_LIBS)
HOST_TEST_SRCS_test_kernels_bnorm := qemu-device/core/hdm_kernel_bnorm.c \
	tests/host/hdm_kernel_harness.c
HOST_TEST_LIBS_test_kernels_bnorm := $(HPU_KERNEL_TEST_LIBS)
# Group norm walks with batch norm's helpers.
HOST_TEST_SRCS_test_kernels_gnorm := qemu-device/core/hdm_kernel_gnorm.c \
	qemu-device/core/hdm_kernel_bnorm.c tests/host/hdm_kernel_harness.c
HOST_TEST_LIBS_test_kernels_gnorm := $(HPU_KERNEL_TEST_LIBS)
# Random fills draw the Philox stream as dropout does (hdm_kernel_nn.c).
HOST_TEST_SRCS_test_kernels_random := qemu-device/core/hdm_kernel_random.c \
	qemu-device/core/hdm_kernel_nn.c tests/host/hdm_kernel_harness.c
HOST_TEST_LIBS_test_kernels_random := $(HPU_KERNEL_TEST_LIBS)
HOST_TEST_SRCS_test_kernels_sdpa := qemu-device/core/hdm_kernel_sdpa.c \
	tests/host/hdm_kernel_harness.c
HOST_TEST_LIBS_test_kernels_sdpa := $(HPU_KERNEL_TEST_LIBS) -lopenblas
# Hostile launches run by the whole device core, its engine on a thread.
HOST_TEST_SRCS_test_kernels_hostile := $(HPU_DEV_TEST_SRCS)
HOST_TEST_LIBS_test_kernels_hostile := $(HPU_DEV_TEST_LIBS)
# The graph IR and its compiler, on what they call below: encoding, layouts, packets, util.
HOST_TEST_SRCS_test_libhpu_graph := $(addprefix userspace/lib/recipe/,hpu_ir.c hpu_compiler.c) \
	$(addprefix userspace/lib/ops/,hpu_encode.c hpu_layout.c) userspace/lib/submit/hpu_cb.c \
	$(addprefix userspace/lib/util/,hpu_error.c hpu_bytes.c) tests/host/hpu_graph_fakes.c
# The dynamic-shape helpers and the recompile warnings; the op calls of padding are faked.
HOST_TEST_SRCS_test_libhpu_dynamic := userspace/lib/graph/hpu_dynamic.c \
	userspace/lib/recipe/hpu_recompile.c userspace/lib/ops/hpu_layout.c \
	$(addprefix userspace/lib/util/,hpu_error.c hpu_bytes.c hpu_counters.c)
HOST_TEST_LIBS_test_libhpu_dynamic := -pthread
# The recipe caches, memory and disk, on the compiler's sources: files, a thread, forked processes.
HOST_TEST_SRCS_test_libhpu_disk_cache := $(HOST_TEST_SRCS_test_libhpu_graph) \
	$(addprefix userspace/lib/recipe/,hpu_recipe_cache.c hpu_disk_cache.c hpu_recompile.c) \
	userspace/lib/util/hpu_counters.c
HOST_TEST_LIBS_test_libhpu_disk_cache := -pthread -lz
# The metrics, on the counters and the sub-allocator's stats; no device is open.
HOST_TEST_SRCS_test_libhpu_metrics := userspace/lib/top/hpu_metrics.c \
	userspace/lib/mem/hpu_suballoc.c $(addprefix userspace/lib/util/,hpu_error.c hpu_counters.c)
HOST_TEST_LIBS_test_libhpu_metrics := -pthread
# Resets and fault injection (1.7): engines on threads, hung and reset.
HOST_TEST_SRCS_test_dev_faults := $(HPU_DEV_TEST_SRCS)
HOST_TEST_LIBS_test_dev_faults := $(HPU_DEV_TEST_LIBS)
