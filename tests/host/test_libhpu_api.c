/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of libhpu: everything that needs no device.  Discovery on a
 * machine without hpu finds nothing, bad arguments fail with -errno and a
 * message naming the call, messages are per thread, the library exports
 * exactly its API, and the public structs keep their layout.  Prints TAP.
 *
 * Links against the built libhpu.so (make -C userspace test).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hpu/hpu.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static bool test_failed;
static const char *test_skip; /* set by a test that cannot run here */

#define EXPECT(cond)                                                                       \
	do {                                                                               \
		if (!(cond)) {                                                             \
			printf("#   %s:%d: expected %s\n", __FILE__, __LINE__, #cond);       \
			test_failed = true;                                                \
		}                                                                          \
	} while (0)

/* want_len: how much of want must match; strlen(want) + 1 for the whole string. */
#define EXPECT_STRN(got, want, want_len)                                                  \
	do {                                                                               \
		if (strncmp(got, want, want_len)) {                                        \
			printf("#   %s:%d: got \"%s\", expected \"%s\"%s\n", __FILE__,       \
			       __LINE__, got, want,                                        \
			       (want_len) > strlen(want) ? "" : " at the start");          \
			test_failed = true;                                                \
		}                                                                          \
	} while (0)
#define EXPECT_STR(got, want) EXPECT_STRN(got, want, strlen(want) + 1)
#define EXPECT_PREFIX(got, want) EXPECT_STRN(got, want, strlen(want))

static void test_version(void)
{
	struct hpu_version v = hpu_version();

	EXPECT(v.major == HPU_VERSION_MAJOR);
	EXPECT(v.minor == HPU_VERSION_MINOR);
	EXPECT(v.patch == HPU_VERSION_PATCH);
}

static bool hpu_present(void)
{
	unsigned int count = 0;

	if (hpu_device_count(&count) == 0 && count == 0)
		return false;
	test_skip = "an hpu device is present (or discovery failed)";
	return true;
}

static void test_discovery_finds_nothing(void)
{
	struct hpu_device_desc descs[2];
	unsigned int count = 7;

	if (hpu_present())
		return;
	EXPECT(hpu_device_list(descs, ARRAY_SIZE(descs), &count) == 0);
	EXPECT(count == 0);
	EXPECT(hpu_device_list(NULL, 0, &count) == 0);
	EXPECT(count == 0);
}

static void test_open_absent_index(void)
{
	struct hpu_device *dev = (struct hpu_device *)&dev;

	if (hpu_present())
		return;
	EXPECT(hpu_device_open(3, &dev) == -ENODEV);
	EXPECT(dev == NULL);
	/* The count may be followed by nodes that could not be opened. */
	EXPECT_PREFIX(hpu_last_error(), "hpu_device_open: no hpu device 3 (0 found");
}

/* Each call fails before it touches a device. */
static unsigned int out_count;
static struct hpu_device_desc out_desc;
static struct hpu_device *out_dev;
static struct hpu_device_info out_info = { .size = sizeof(out_info) };
static char long_path[HPU_PATH_MAX + 1];

static int count_null(void)
{
	return hpu_device_count(NULL);
}

static int list_null_descs(void)
{
	return hpu_device_list(NULL, 1, &out_count);
}

static int list_null_count(void)
{
	return hpu_device_list(&out_desc, 1, NULL);
}

static int open_null_devp(void)
{
	return hpu_device_open(0, NULL);
}

static int open_path_null_path(void)
{
	return hpu_device_open_path(NULL, &out_dev);
}

static int open_path_null_devp(void)
{
	return hpu_device_open_path("/dev/null", NULL);
}

static int open_path_missing(void)
{
	return hpu_device_open_path("/nonexistent/renderD128", &out_dev);
}

static int open_path_not_drm(void)
{
	return hpu_device_open_path("/dev/null", &out_dev);
}

static int open_path_too_long(void)
{
	memset(long_path, 'a', sizeof(long_path) - 1);
	return hpu_device_open_path(long_path, &out_dev);
}

static int get_info_null_dev(void)
{
	return hpu_device_get_info(NULL, &out_info);
}

/* message: what hpu_last_error() starts with; clears_dev: the call must set *devp = NULL. */
static const struct {
	const char *name;
	int (*call)(void);
	int ret;
	const char *message;
	bool clears_dev;
} failures[] = {
	{ "hpu_device_count(NULL)", count_null, -EINVAL, "hpu_device_count: count is NULL", false },
	{ "hpu_device_list(NULL, 1, &n)", list_null_descs, -EINVAL,
	  "hpu_device_list: descs is NULL but capacity is 1", false },
	{ "hpu_device_list(d, 1, NULL)", list_null_count, -EINVAL,
	  "hpu_device_list: count is NULL", false },
	{ "hpu_device_open(0, NULL)", open_null_devp, -EINVAL, "hpu_device_open: devp is NULL",
	  false },
	{ "hpu_device_open_path(NULL, &dev)", open_path_null_path, -EINVAL,
	  "hpu_device_open_path: path is NULL", true },
	{ "hpu_device_open_path(path, NULL)", open_path_null_devp, -EINVAL,
	  "hpu_device_open_path: devp is NULL", false },
	{ "hpu_device_open_path(missing node)", open_path_missing, -ENOENT,
	  "hpu_device_open_path: cannot open /nonexistent/renderD128: No such file or directory",
	  true },
	{ "hpu_device_open_path(/dev/null)", open_path_not_drm, -ENODEV,
	  "hpu_device_open_path: /dev/null is not a DRM device node", true },
	{ "hpu_device_open_path(too long)", open_path_too_long, -ENAMETOOLONG,
	  "hpu_device_open_path: path longer than 127 bytes: aaaa", true },
	{ "hpu_device_get_info(NULL, &info)", get_info_null_dev, -EINVAL,
	  "hpu_device_get_info: dev is NULL", false },
};

static void test_failure(size_t i)
{
	out_dev = (struct hpu_device *)&out_dev;
	EXPECT(failures[i].call() == failures[i].ret);
	EXPECT_PREFIX(hpu_last_error(), failures[i].message);
	if (failures[i].clears_dev)
		EXPECT(out_dev == NULL);
}

static void test_close_null(void)
{
	hpu_device_close(NULL);
}

struct thread_errors {
	char initial[256]; /* hpu_last_error() of a fresh thread */
	char own[256];     /* after a failure in that thread */
};

static void *thread_fail(void *arg)
{
	struct thread_errors *seen = arg;

	snprintf(seen->initial, sizeof(seen->initial), "%s", hpu_last_error());
	hpu_device_open(0, NULL);
	snprintf(seen->own, sizeof(seen->own), "%s", hpu_last_error());
	return NULL;
}

static void test_error_is_per_thread(void)
{
	struct thread_errors seen;
	pthread_t thread;

	EXPECT(hpu_device_count(NULL) == -EINVAL);
	EXPECT(pthread_create(&thread, NULL, thread_fail, &seen) == 0);
	EXPECT(pthread_join(thread, NULL) == 0);
	EXPECT(seen.initial[0] == '\0');
	EXPECT_STR(seen.own, "hpu_device_open: devp is NULL");
	EXPECT_STR(hpu_last_error(), "hpu_device_count: count is NULL");
}

/* Naming each function makes the compiler check that the header declares it. */
#define API(fn) { #fn, (void (*)(void))fn }

static const struct {
	const char *name;
	void (*fn)(void);
} api[] = {
	API(hpu_version),     API(hpu_last_error),       API(hpu_device_count),
	API(hpu_device_list), API(hpu_device_open),      API(hpu_device_open_path),
	API(hpu_device_close), API(hpu_device_get_info),
};

#define VERSION_NODE "HPU_0.1"
#define SYMBOL_VERSION "@@" VERSION_NODE

/* nm lists every defined dynamic symbol: each must be API, under SYMBOL_VERSION. */
static void test_exports_are_the_api(void)
{
	bool found[ARRAY_SIZE(api)] = { false };
	char cmd[4200], line[512], name[256], type;
	Dl_info where;
	size_t i;
	FILE *nm;

	if (!dladdr((void *)hpu_version, &where) || !where.dli_fname) {
		printf("#   dladdr does not find libhpu\n");
		test_failed = true;
		return;
	}
	printf("#   library: %s\n", where.dli_fname);
	snprintf(cmd, sizeof(cmd), "nm -D --defined-only '%s'", where.dli_fname);
	nm = popen(cmd, "r");
	if (!nm) {
		printf("#   cannot run %s: %s\n", cmd, strerror(errno));
		test_failed = true;
		return;
	}
	while (fgets(line, sizeof(line), nm)) {
		char *at;

		if (sscanf(line, "%*s %c %255s", &type, name) != 2)
			continue;
		/* The version node itself: "0000000000000000 A HPU_0.1". */
		if (type == 'A' && !strcmp(name, VERSION_NODE))
			continue;
		at = strstr(name, SYMBOL_VERSION);
		if (!at || at[strlen(SYMBOL_VERSION)]) {
			printf("#   %s is not under %s\n", name, SYMBOL_VERSION);
			test_failed = true;
			continue;
		}
		*at = '\0';
		for (i = 0; i < ARRAY_SIZE(api) && strcmp(api[i].name, name); i++)
			;
		if (i == ARRAY_SIZE(api)) {
			printf("#   %s is exported but not API\n", name);
			test_failed = true;
		} else {
			found[i] = true;
		}
	}
	EXPECT(pclose(nm) == 0);
	for (i = 0; i < ARRAY_SIZE(api); i++) {
		if (!found[i]) {
			printf("#   %s is not exported\n", api[i].name);
			test_failed = true;
		}
	}
}

/*
 * The public structs are ABI: written out by hand, to change only with a
 * new soname (or by appending to a struct that has a size member).
 */
#define F(type, member, off, sz)                                                            \
	{ #type "." #member, offsetof(struct type, member),                                  \
	  sizeof(((struct type *)0)->member), off, sz }

static const struct {
	const char *name;
	size_t offset, size;
	size_t want_offset, want_size;
} fields[] = {
	F(hpu_version, major, 0, 2),
	F(hpu_version, minor, 2, 2),
	F(hpu_version, patch, 4, 2),
	F(hpu_device_desc, pci_bus_id, 0, HPU_PCI_BUS_ID_MAX),
	F(hpu_device_desc, path, 32, HPU_PATH_MAX),
	F(hpu_device_info, size, 0, 4),
	F(hpu_device_info, status, 4, 4),
	F(hpu_device_info, capabilities, 8, 8),
	F(hpu_device_info, hbm_size, 16, 8),
	F(hpu_device_info, pci_revision, 24, 4),
	F(hpu_device_info, hw_revision, 28, 4),
	F(hpu_device_info, num_dma_engines, 32, 4),
	F(hpu_device_info, num_mme_engines, 36, 4),
	F(hpu_device_info, num_tpc_engines, 40, 4),
	F(hpu_device_info, pci_vendor_id, 44, 2),
	F(hpu_device_info, pci_device_id, 46, 2),
	F(hpu_device_info, pci_subsystem_vendor_id, 48, 2),
	F(hpu_device_info, pci_subsystem_id, 50, 2),
	F(hpu_device_info, abi_version, 52, 6),
	F(hpu_device_info, fw_version, 58, 6),
	F(hpu_device_info, fw_if_version, 64, 6),
	F(hpu_device_info, pci_bus_id, 70, HPU_PCI_BUS_ID_MAX),
	F(hpu_device_info, path, 102, HPU_PATH_MAX),
};

static void test_layout(void)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(fields); i++) {
		if (fields[i].offset != fields[i].want_offset ||
		    fields[i].size != fields[i].want_size) {
			printf("#   %s at %zu size %zu, expected at %zu size %zu\n", fields[i].name,
			       fields[i].offset, fields[i].size, fields[i].want_offset,
			       fields[i].want_size);
			test_failed = true;
		}
	}
	EXPECT(HPU_PCI_BUS_ID_MAX == 32 && HPU_PATH_MAX == 128);
	EXPECT(sizeof(struct hpu_version) == 6);
	EXPECT(sizeof(struct hpu_device_desc) == 160);
	EXPECT(sizeof(struct hpu_device_info) == 232);
	EXPECT(HPU_DEVICE_INFO_SIZE_V1 == 232);
}

static const struct {
	const char *name;
	void (*run)(void);
} tests[] = {
	{ "hpu_version() matches the header", test_version },
	{ "discovery finds no device", test_discovery_finds_nothing },
	{ "opening an absent index fails with -ENODEV", test_open_absent_index },
	{ "hpu_device_close(NULL) is a no-op", test_close_null },
	{ "hpu_last_error() is per thread", test_error_is_per_thread },
	{ "libhpu exports exactly the API", test_exports_are_the_api },
	{ "public struct layouts are frozen", test_layout },
};

static bool report(unsigned int n, const char *name)
{
	if (test_skip)
		printf("ok %u - %s # SKIP %s\n", n, name, test_skip);
	else
		printf("%s %u - %s\n", test_failed ? "not ok" : "ok", n, name);
	if (test_failed)
		printf("#   last error: \"%s\"\n", hpu_last_error());
	return !test_failed;
}

int main(void)
{
	unsigned int n = 0, failed = 0;
	char name[128];
	size_t i;

	printf("TAP version 13\n1..%zu\n", ARRAY_SIZE(tests) + ARRAY_SIZE(failures));
	for (i = 0; i < ARRAY_SIZE(tests); i++) {
		test_failed = false;
		test_skip = NULL;
		tests[i].run();
		failed += !report(++n, tests[i].name);
	}
	for (i = 0; i < ARRAY_SIZE(failures); i++) {
		test_failed = false;
		test_skip = NULL;
		test_failure(i);
		snprintf(name, sizeof(name), "%s fails with %d", failures[i].name,
			 failures[i].ret);
		failed += !report(++n, name);
	}
	return failed ? 1 : 0;
}
