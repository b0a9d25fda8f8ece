// SPDX-License-Identifier: MIT
/*
 * hpu_guilty: a guilty process for the tests that are not C suites (the
 * PyTorch bridge's userspace/pytorch/tests/test_train_faults.py; root, as
 * fault injection is debugfs).  It takes faults of the kinds named, one
 * kind after the other (hpu_faults.h: each in a new file of its own, aimed
 * at that file's context id, or device-wide), until its standard input
 * ends and it has taken at least MIN of them; it prints a line per fault
 * and one of totals:
 *
 *   fault N KIND ok          (or: fault N KIND failed: WHY)
 *   done faults F failed X resets QUEUE ENGINE DEVICE status S
 *
 * and exits 0 if every fault ended as its kind means, INFO counted exactly
 * their resets (QUEUE, ENGINE, DEVICE: since it started) and the device
 * is READY (S is INFO's status).
 *
 *   hpu_guilty [-n MIN] KIND...     (KIND: a name of hpu_fault_cases[])
 */
#include <poll.h>

#include "hpu_abi.h"
#include "hpu_test.h"
#include "hpu_faults.h"

#define MAX_KINDS 16

/* Whether standard input has ended (what is written to it is read and dropped). */
static bool input_ended(void)
{
	struct pollfd p = { .fd = 0, .events = POLLIN };
	char buf[64];

	return poll(&p, 1, 0) == 1 && read(0, buf, sizeof(buf)) <= 0;
}

static int usage(void)
{
	size_t i;

	fprintf(stderr, "usage: hpu_guilty [-n MIN] KIND...\nkinds:");
	for (i = 0; i < sizeof(hpu_fault_cases) / sizeof(hpu_fault_cases[0]); i++)
		fprintf(stderr, " %s", hpu_fault_cases[i].name);
	fprintf(stderr, "\n");
	return 2;
}

int main(int argc, char **argv)
{
	const struct hpu_fault_case *cases[MAX_KINDS], *c;
	unsigned int ncases = 0, min = 1, faults = 0, failed = 0, want[3] = { 0 }, got[3];
	struct drm_hpu_device_info before, after;
	bool more = true;
	char bdf[64], why[160];
	int opt, fd;

	while ((opt = getopt(argc, argv, "n:")) != -1) {
		if (opt != 'n')
			return usage();
		min = strtoul(optarg, NULL, 0);
	}
	for (; optind < argc; optind++) {
		if (ncases == MAX_KINDS || !(cases[ncases++] = hpu_fault_case(argv[optind])))
			return usage();
	}
	if (!ncases)
		return usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	fd = hpu_find_bdf(bdf, sizeof(bdf));
	fd = fd ? fd : hpu_open_node(bdf);
	if (fd < 0 || device_info(fd, &before)) {
		printf("done: no device (%d)\n", fd);
		return 1;
	}
	while (more || faults < min) {
		c = cases[faults % ncases];
		if (hpu_guilty_fault(bdf, c, why, sizeof(why))) {
			printf("fault %u %s failed: %s\n", faults + 1, c->name, why);
			failed++;
			break;
		}
		printf("fault %u %s ok\n", ++faults, c->name);
		want[0] += c->queue_resets;
		want[1] += c->engine_resets;
		want[2] += c->device_resets;
		more = more && !input_ended();
	}
	if (device_info(fd, &after)) {
		printf("done: INFO failed\n");
		return 1;
	}
	got[0] = after.queue_resets - before.queue_resets;
	got[1] = after.engine_resets - before.engine_resets;
	got[2] = after.device_resets - before.device_resets;
	if (memcmp(got, want, sizeof(got)) || after.status != DRM_HPU_STATUS_READY) {
		printf("resets %u %u %u expected, status %u\n", want[0], want[1], want[2],
		       after.status);
		failed++;
	}
	printf("done faults %u failed %u resets %u %u %u status %u\n", faults, failed, got[0],
	       got[1], got[2], after.status);
	close(fd);
	return failed ? 1 : 0;
}
