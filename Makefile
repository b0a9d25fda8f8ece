# SPDX-License-Identifier: MIT
# hpu: build everything, run it in the emulated machine, test it.
#
#   make          build QEMU with the device, firmware, module, runtime, PyTorch bridge, tests
#   make run      boot the emulated machine, load the driver, print hpu-smi
#   make test     host unit tests + in-guest suites; last line "N passed, M failed"
#   make test-debug  the in-guest suites on a debug kernel (KASAN, lockdep, kmemleak, DMA-API)
#   make bench    every benchmark (make bench-<name> for one), in the guest
#   make test-fuzz  the ioctl fuzzer's million calls, in the guest
#   make install  module through DKMS, firmware, runtime (on a real host)

BUILD := $(CURDIR)/build
HPU_CACHE_DIR ?= /var/cache/hpu
export HPU_CACHE_DIR

# Deferred (=): evaluated in recipes, after `setup` has installed the kernel.
KVER = $(shell scripts/guest-kernel.sh)
KDIR = /lib/modules/$(KVER)/build

FW_VERSION := 1.0.0
FW_IMAGE := $(BUILD)/firmware/hpu/hpu-fw.bin
MKFW := $(BUILD)/firmware-stub/hpu-mkfw
KSFT_DIR := $(BUILD)/kselftest
# The harness's macros compare mixed signs and leave fixtures unused.
KSFT_CFLAGS := -Wno-sign-compare -Wno-unused-parameter

HOST_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror -MMD -MP
# AddressSanitizer and UBSan, for a second run of the host suites and of the runtime's in-guest
# ones: the device core parses what a guest writes, the runtime what a user passes.
# Instrumented code gives GCC false "may be used uninitialized" warnings; the plain build keeps
# them.
SAN_CFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
	-Wno-maybe-uninitialized
INCLUDES = -Iuapi -Ihw -Iqemu-device/core \
	-Iuserspace/include $(shell pkg-config --cflags libdrm 2>/dev/null)

HOST_TESTS := $(patsubst tests/host/%.c,$(BUILD)/tests/host/%,$(wildcard tests/host/test_*.c))
GUEST_TESTS := $(patsubst tests/guest/%.c,$(BUILD)/tests/guest/%,$(wildcard tests/guest/*_test.c))
# Programs the in-guest tests run: the guilty process of userspace/pytorch's fault test.
GUEST_TOOLS := $(BUILD)/tests/guest/hpu_guilty
BENCH_BINS := $(patsubst tests/bench/%.c,$(BUILD)/tests/bench/%,$(wildcard tests/bench/bench_*.c))
# Benchmarks of the PyTorch bridge (bench_<name>.py) run from the tree, with hpu_torch.
BENCHES := $(patsubst tests/bench/bench_%.c,%,$(wildcard tests/bench/bench_*.c)) \
	$(patsubst tests/bench/bench_%.py,%,$(wildcard tests/bench/bench_*.py))
# Host halves of benchmarks (host_<name>.c), run by tests/run-bench.sh before the guest boots.
BENCH_HOST_BINS := $(patsubst tests/bench/%.c,$(BUILD)/tests/bench/%,$(wildcard tests/bench/host_*.c))

.PHONY: all setup qemu firmware module check-dkms userspace pytorch userspace-san userspace-tsan host-tests guest-tests run test bench \
	install clean $(addprefix bench-,$(BENCHES))

all: qemu firmware module userspace pytorch userspace-san userspace-tsan host-tests guest-tests

setup:
	@scripts/setup-host.sh

qemu: setup
	@scripts/build-qemu.sh $(BUILD)/qemu-system-x86_64

firmware: $(FW_IMAGE)

$(MKFW): firmware-stub/hpu_mkfw.c hw/hpu_fw_if.h | setup
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) -Ihw $< -lz -o $@

$(FW_IMAGE): $(MKFW) firmware-stub/hpu_fw_payload.txt
	@mkdir -p $(@D)
	$(MKFW) -V $(FW_VERSION) -p firmware-stub/hpu_fw_payload.txt -o $@

module: setup
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

# The module built once more from its DKMS package alone (scripts/dkms-tree.sh), so that a file
# the driver reads from outside the package fails here and not on a user's machine. Run by
# `make test`; again only when the package's sources change.
DKMS_CHECK := $(BUILD)/dkms-check
check-dkms: $(DKMS_CHECK)/built

$(DKMS_CHECK)/built: Kbuild dkms.conf scripts/dkms-tree.sh $(wildcard kernel/Kbuild kernel/*.[ch] \
		uapi/drm/*.h hw/*.h) | setup
	scripts/dkms-tree.sh $(DKMS_CHECK)/src
	$(MAKE) -C $(KDIR) M=$(DKMS_CHECK)/src modules
	touch $@

userspace: setup
	$(MAKE) -C userspace O=$(BUILD)/userspace

# The PyTorch bridge, hpu_torch, over this build's libhpu: importable from the build tree with
# PYTHONPATH=$(BUILD)/userspace/pytorch (userspace/pytorch/Makefile).
pytorch: userspace
	$(MAKE) -C userspace/pytorch O=$(BUILD)/userspace/pytorch LIBHPU=$(BUILD)/userspace/lib

# The runtime built once more, into $(BUILD)/<target>, with the flags $(1).
define userspace-instrumented
$(MAKE) -C userspace O=$(BUILD)/$@ CFLAGS="-O1 -g $(1)" LDFLAGS="$(1)"
endef

# The runtime under ASan and UBSan, for the in-guest suites' second run (run-suites.sh).
userspace-san: setup
	$(call userspace-instrumented,$(SAN_CFLAGS))

# The runtime under ThreadSanitizer, for the suites that use it from several threads.
# The fence before a doorbell orders memory for the device, which TSan does not model: -Wno-tsan.
TSAN_CFLAGS := -fsanitize=thread -fno-omit-frame-pointer -Wno-tsan
userspace-tsan: setup
	$(call userspace-instrumented,$(TSAN_CFLAGS))

# The host suites once more under the sanitizers.
HOST_SAN_TESTS := $(patsubst $(BUILD)/tests/host/%,$(BUILD)/tests/host-san/%,$(HOST_TESTS))

host-tests: $(HOST_TESTS) $(HOST_SAN_TESTS)

# Each host test links the sources it covers; see tests/host/sources.mk.
include tests/host/sources.mk

.SECONDEXPANSION:
# A test built from several sources gets one .d, so depend on every header.
HOST_TEST_HEADERS := $(wildcard uapi/drm/*.h hw/*.h qemu-device/core/*.h userspace/include/hpu/*.h \
	tests/host/*.h)

$(BUILD)/tests/host/%: tests/host/%.c $$(HOST_TEST_SRCS_$$*) $(HOST_TEST_HEADERS) | setup userspace
	$(call host-test-link,)

$(BUILD)/tests/host-san/%: tests/host/%.c $$(HOST_TEST_SRCS_$$*) $(HOST_TEST_HEADERS) | setup userspace
	$(call host-test-link,$(SAN_CFLAGS))

# $(1): flags added to the host tests' own.
define host-test-link
@mkdir -p $(@D)
$(CC) $(HOST_CFLAGS) $(1) $(INCLUDES) $< $(HOST_TEST_SRCS_$*) $(HOST_TEST_LIBS_$*) -o $@
endef

# kselftest_harness.h ships only inside the kernel source tarball.
$(KSFT_DIR)/kselftest_harness.h: | setup
	@mkdir -p $(@D)
	tar -xJf /usr/src/linux-source-6.1.tar.xz -C $(@D) --strip-components=4 \
		linux-source-6.1/tools/testing/selftests/kselftest_harness.h \
		linux-source-6.1/tools/testing/selftests/kselftest.h

guest-tests: $(GUEST_TESTS) $(GUEST_TOOLS) $(BENCH_BINS) $(BENCH_HOST_BINS)

# In-guest suites and benchmarks run against the driver and link libhpu.
$(BUILD)/tests/guest/%: tests/guest/%.c tests/guest/hpu_test.h tests/guest/hpu_mlp.h \
		tests/guest/hpu_faults.h $(KSFT_DIR)/kselftest_harness.h \
		| userspace
	$(guest-link)

$(BUILD)/tests/bench/%: tests/bench/%.c | userspace
	$(guest-link)

$(BUILD)/tests/bench/host_%: tests/bench/host_%.c $(wildcard tests/bench/*.h) | setup
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $< -lopenblas -o $@

define guest-link
@mkdir -p $(@D)
$(CC) $(HOST_CFLAGS) $(KSFT_CFLAGS) $(INCLUDES) -I$(KSFT_DIR) -Itests/guest $< \
	-L$(BUILD)/userspace/lib -Wl,-rpath,$(BUILD)/userspace/lib -lhpu \
	$(shell pkg-config --libs libdrm 2>/dev/null) -o $@
endef

run: all
	tests/guest/run-guest.sh -- tests/guest/show-smi.sh

test: all check-dkms
	tests/run-tests.sh

bench: all
	tests/run-bench.sh $(BENCHES)

# The ioctl fuzzer's full run, a million calls in one boot (make test runs a quarter of it);
# FUZZ_ARGS="-s SEED -j 1" replays a seed call for call (tests/guest/ioctl_fuzz_test.c).
.PHONY: test-fuzz
test-fuzz: all
	tests/guest/run-guest.sh -t 3600 -o $(BUILD)/guest-run-fuzz -- sh -c \
		'tests/guest/load-driver.sh && build/tests/guest/ioctl_fuzz_test -n 1000000 $(FUZZ_ARGS)'

# The fault-injection suite in one guest boot: per fault kind, BENCH fault_<kind>_recover_ms,
# _innocent_lost and _innocent_wrong (docs/TESTING.md).
.PHONY: test-faults
test-faults: all
	tests/guest/run-guest.sh -t 1200 -o $(BUILD)/guest-faults -- tests/guest/run-faults.sh

$(addprefix bench-,$(BENCHES)): bench-%: all
	tests/run-bench.sh $*

install: module firmware userspace
	scripts/install.sh

# The debug kernel (scripts/build-debug-kernel.sh: KASAN, lockdep, kmemleak, DMA-API debugging,
# fault injection; built once into $(HPU_CACHE_DIR)), the module built against it, and one boot
# of it running the in-guest suites (tests/run-debug.sh; TEST_DEBUG_FLAGS=-a adds the runtime's
# passes).  Too slow for `make test`.
.PHONY: debug-kernel module-debug test-debug
DEBUG_KDIR := $(BUILD)/debug/kernel
DEBUG_MOD := $(BUILD)/debug/hpu

debug-kernel: setup
	@scripts/build-debug-kernel.sh $(DEBUG_KDIR)

# Kbuild writes a module's objects beside its sources: the debug build gets a tree of its own,
# of links to this one's sources, so that both builds stay incremental.
module-debug: debug-kernel
	@mkdir -p $(DEBUG_MOD)/kernel
	@ln -sfn $(CURDIR)/Kbuild $(DEBUG_MOD)/Kbuild
	@ln -sfn $(CURDIR)/uapi $(DEBUG_MOD)/uapi
	@ln -sfn $(CURDIR)/hw $(DEBUG_MOD)/hw
	@ln -sf $(CURDIR)/kernel/Kbuild $(wildcard $(CURDIR)/kernel/hpu_*.[ch]) $(DEBUG_MOD)/kernel/
	$(MAKE) -C $(DEBUG_KDIR) M=$(DEBUG_MOD) modules

test-debug: all module-debug
	tests/run-debug.sh $(TEST_DEBUG_FLAGS)

# A build output named as typed in the top directory (make build/tests/host/test_x) is the same
# file as its absolute name, which the rules above make.
build/%: $(BUILD)/% ;

-include $(wildcard $(BUILD)/tests/*/*.d)

clean:
	rm -rf $(BUILD)
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean
