/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the in-guest suites: find the device, (re)load the
 * module, read sysfs, and look for kernel-log lines written after a mark.
 * The guest launcher (run-guest.sh) exports HPU_TOP and the HPU_EXPECT_*
 * values it gave the device.
 */
#ifndef HPU_TEST_H
#define HPU_TEST_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hpu_regs.h"

#define HPU_SYSFS_PCI "/sys/bus/pci/devices"
#define HPU_SYSFS_DRIVER "/sys/bus/pci/drivers/hpu"

static inline const char *hpu_env(const char *name)
{
	const char *v = getenv(name);

	if (!v) {
		fprintf(stderr, "hpu_test: %s not set (run through tests/guest/run-guest.sh)\n", name);
		exit(1);
	}
	return v;
}

static inline unsigned long long hpu_env_ull(const char *name)
{
	return strtoull(hpu_env(name), NULL, 0);
}

/* Reads a whole small file into buf (NUL-terminated, trailing newline cut). */
static inline int hpu_read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = 0;
	return 0;
}

static inline int hpu_write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n < 0 ? -errno : 0;
}

/* The PCI address (e.g. 0000:00:04.0) of the first hpu device, or -ENODEV. */
static inline int hpu_find_bdf(char *bdf, size_t len)
{
	DIR *d = opendir(HPU_SYSFS_PCI);
	struct dirent *e;
	char path[512], v[32], dev[32];
	int ret = -ENODEV;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), HPU_SYSFS_PCI "/%s/vendor", e->d_name);
		if (hpu_read_file(path, v, sizeof(v)))
			continue;
		snprintf(path, sizeof(path), HPU_SYSFS_PCI "/%s/device", e->d_name);
		if (hpu_read_file(path, dev, sizeof(dev)))
			continue;
		if (strtoul(v, NULL, 16) == HPU_PCI_VENDOR_ID &&
		    strtoul(dev, NULL, 16) == HPU_PCI_DEVICE_ID && strlen(e->d_name) < len) {
			strcpy(bdf, e->d_name);
			ret = 0;
			break;
		}
	}
	closedir(d);
	return ret;
}

/* Reads sysfs attribute `attr` of the device into buf. */
static inline int hpu_read_attr(const char *bdf, const char *attr, char *buf, size_t len)
{
	char path[512];

	snprintf(path, sizeof(path), HPU_SYSFS_PCI "/%s/%s", bdf, attr);
	return hpu_read_file(path, buf, len);
}

/* The value of key in the device's debugfs "usage", or -1 if it is not there. */
static inline long long hpu_usage(const char *bdf, const char *key)
{
	char path[512], buf[1024], *p;
	size_t n = strlen(key);

	if (access("/sys/kernel/debug/hpu", F_OK))
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	snprintf(path, sizeof(path), "/sys/kernel/debug/hpu/%s/usage", bdf);
	if (hpu_read_file(path, buf, sizeof(buf)))
		return -1;
	for (p = buf; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, n) && p[n] == ' ')
			return strtoll(p + n + 1, NULL, 0);
	return -1;
}

/*
 * Writes fault/<kind>/<setting> of the device's debugfs fault injection
 * (kernel/hpu_inject.c), or reads it into *value (value_str NULL).
 */
static inline int hpu_fault_file(const char *bdf, const char *kind, const char *setting,
				 const char *value_str, long long *value)
{
	char path[256], buf[32];
	int err;

	if (access("/sys/kernel/debug/hpu", F_OK))
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	snprintf(path, sizeof(path), "/sys/kernel/debug/hpu/%s/fault/%s/%s", bdf, kind, setting);
	if (value_str)
		return hpu_write_file(path, value_str);
	err = hpu_read_file(path, buf, sizeof(buf));
	if (!err)
		*value = strtoll(buf, NULL, 0);
	return err;
}

/*
 * Arms fault <kind> for the next `times` of its events ("4294967295": every one) in context
 * `asid` (a file's DRM_HPU_INFO_STATS ctx_id, or HPU_FI_ANY_ASID); a cold reset (the
 * module's load) disarms it.  Times last: each write arms the kind with all its settings.
 */
static inline int hpu_fault_aim(const char *bdf, const char *kind, unsigned int asid,
				const char *times)
{
	char id[16];
	int err = hpu_fault_file(bdf, kind, "skip", "0", NULL);

	snprintf(id, sizeof(id), "%u", asid);
	if (!err)
		err = hpu_fault_file(bdf, kind, "probability", "4294967295", NULL);
	if (!err)
		err = hpu_fault_file(bdf, kind, "asid", id, NULL);
	return err ? err : hpu_fault_file(bdf, kind, "times", times, NULL);
}

/* Arms fault <kind> for the next `times` of its events, whoever's. */
static inline int hpu_fault_arm(const char *bdf, const char *kind, const char *times)
{
	return hpu_fault_aim(bdf, kind, HPU_FI_ANY_ASID, times);
}

/* Waits up to 30 s until no freed HBM waits to be zeroed: 0, or the bytes left (-1: no count). */
static inline long long hpu_wait_scrubbed(const char *bdf)
{
	long long left = hpu_usage(bdf, "hbm_scrubbing");

	for (unsigned int i = 0; i < 3000 && left > 0; i++) {
		usleep(10 * 1000);
		left = hpu_usage(bdf, "hbm_scrubbing");
	}
	return left;
}

/* True when the hpu driver is bound to the device. */
static inline int hpu_is_bound(const char *bdf)
{
	char path[512];

	snprintf(path, sizeof(path), HPU_SYSFS_DRIVER "/%s", bdf);
	return access(path, F_OK) == 0;
}

/* The device's render (or accel) node path, or -ENOENT when it has none. */
static inline int hpu_node_path(const char *bdf, char *out, size_t len)
{
	static const char *const dirs[] = { "drm", "accel" };
	char path[512];
	struct dirent *e;
	unsigned int i;
	DIR *d;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), HPU_SYSFS_PCI "/%s/%s", bdf, dirs[i]);
		d = opendir(path);
		if (!d)
			continue;
		while ((e = readdir(d))) {
			if (!strncmp(e->d_name, "renderD", 7) || !strncmp(e->d_name, "accel", 5)) {
				snprintf(out, len, "/dev/%s/%s", i ? "accel" : "dri", e->d_name);
				closedir(d);
				return 0;
			}
		}
		closedir(d);
	}
	return -ENOENT;
}

static inline int hpu_open_node(const char *bdf)
{
	char node[512];
	int err = hpu_node_path(bdf, node, sizeof(node));

	if (err)
		return err;
	err = open(node, O_RDWR | O_CLOEXEC);
	return err < 0 ? -errno : err;
}

/*
 * Unloads hpu, 0 if it was not loaded.  Waits up to 10 s for users to go: a
 * closed file's job fences hold the module until a grace period after they
 * are freed, soon after the file is.
 */
static inline int hpu_unload(void)
{
	for (unsigned int i = 0; i < 1000; i++) {
		if (syscall(SYS_delete_module, "hpu", O_NONBLOCK) == 0 || errno == ENOENT)
			return 0;
		if (errno != EWOULDBLOCK)
			break;
		usleep(10 * 1000);
	}
	return -errno;
}

/* Loads the build's hpu.ko (HPU_KO, run-guest.sh) with module parameters `params` ("" for none). */
static inline int hpu_load(const char *params)
{
	char path[512];
	int fd, ret;

	snprintf(path, sizeof(path), "%s", hpu_env("HPU_KO"));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params, 0);
	ret = ret ? -errno : 0;
	close(fd);
	return ret;
}

static inline int hpu_reload(const char *params)
{
	int err = hpu_unload();

	return err ? err : hpu_load(params);
}

/*
 * A kselftest fixture (for a suite that includes kselftest_harness.h) whose
 * tests start with the device found (self->bdf) and a fresh kernel-log mark
 * (self->mark), and end with `restore`, statements on self that leave the
 * device as the next test expects it.
 */
#define HPU_LOG_FIXTURE(name, restore)                                             \
	FIXTURE(name) {                                                            \
		char bdf[64];                                                      \
		char mark[64];                                                     \
	};                                                                         \
	FIXTURE_SETUP(name)                                                        \
	{                                                                          \
		ASSERT_EQ(0, hpu_find_bdf(self->bdf, sizeof(self->bdf)));          \
		ASSERT_EQ(0, hpu_log_mark(self->mark, sizeof(self->mark)));        \
	}                                                                          \
	FIXTURE_TEARDOWN(name)                                                     \
	{                                                                          \
		restore;                                                           \
	}

/*
 * Writes a unique mark into the kernel log; hpu_log_count() searches after it.
 * With its newline: a record without one stays open for a continuation, and
 * the log shows it only once another line follows.
 */
static inline int hpu_log_mark(char *mark, size_t len)
{
	static unsigned int seq;
	char line[128];

	snprintf(mark, len, "hpu-test mark %d.%u", getpid(), ++seq);
	snprintf(line, sizeof(line), "%s\n", mark);
	return hpu_write_file("/dev/kmsg", line);
}

/*
 * Counts kernel-log lines after `mark` matching the extended regex `re`.
 * Returns the count, or -errno.
 */
static inline int hpu_log_count(const char *mark, const char *re)
{
	int size = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	char *buf, *p, *line;
	regex_t rx;
	int n, count = 0;

	if (size <= 0 || regcomp(&rx, re, REG_EXTENDED | REG_NOSUB))
		return -EINVAL;
	buf = malloc(size + 1);
	if (!buf) {
		regfree(&rx);
		return -ENOMEM;
	}
	n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, size);
	if (n < 0) {
		count = -errno;
		goto out;
	}
	buf[n] = 0;
	p = NULL;
	for (line = strstr(buf, mark); line; line = strstr(line + 1, mark))
		p = line;
	if (!p) {
		count = -ENOENT;
		goto out;
	}
	for (line = strtok(p, "\n"), line = strtok(NULL, "\n"); line; line = strtok(NULL, "\n"))
		count += regexec(&rx, line, 0, NULL, 0) == 0;
out:
	free(buf);
	regfree(&rx);
	return count;
}

#endif /* HPU_TEST_H */
