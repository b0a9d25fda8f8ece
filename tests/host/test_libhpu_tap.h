/* SPDX-License-Identifier: MIT */
/*
 * The TAP harness of the libhpu host tests: expectations that record a
 * failure and go on, and one "ok"/"not ok" line per test.
 */
#ifndef TEST_LIBHPU_TAP_H
#define TEST_LIBHPU_TAP_H

#include <stdbool.h>
#include <stdio.h>
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

struct tap_test {
	const char *name;
	void (*run)(void);
};

/* Prints test n's line; true if it passed. */
static inline bool tap_report(unsigned int n, const char *name)
{
	if (test_skip)
		printf("ok %u - %s # SKIP %s\n", n, name, test_skip);
	else
		printf("%s %u - %s\n", test_failed ? "not ok" : "ok", n, name);
	if (test_failed)
		printf("#   last error: \"%s\"\n", hpu_last_error());
	return !test_failed;
}

static inline void tap_start(void)
{
	test_failed = false;
	test_skip = NULL;
}

/* Runs tests[], numbering on from *n; returns how many failed. */
static inline unsigned int tap_run(const struct tap_test *tests, size_t count, unsigned int *n)
{
	unsigned int failed = 0;
	size_t i;

	for (i = 0; i < count; i++) {
		tap_start();
		tests[i].run();
		failed += !tap_report(++*n, tests[i].name);
	}
	return failed;
}

#endif /* TEST_LIBHPU_TAP_H */
