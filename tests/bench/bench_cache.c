// SPDX-License-Identifier: MIT
/*
 * bench-cache: the persistent recipe cache on the MNIST example's graph
 * modes.  Each mode runs one step twice, as two processes sharing a cache
 * directory (HPU_RECIPE_CACHE_CONFIG): cold (the directory cleared at
 * open), then warm.  The example prints its time to the first step (the
 * graphs captured, compiled or loaded, and the step run) and its
 * compilations; this prints, per mode and over all of them:
 *   cache_<mode>_cold_first_step_ms, cache_<mode>_warm_first_step_ms
 *   cache_<mode>_cold_compiles, cache_<mode>_warm_compiles
 *   cache_warm_compiles          warm compilations, all modes
 *   cache_first_step_speedup     cold / warm time to the first step, all modes
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mnist_run.h"

static const char *const modes[] = { "lazy", "graphed_callables", "capture_replay",
				     "module_cacher" };

/* One process of the example; *first_ms and *compiles from its BENCH lines. */
static int run(const char *top, const char *dir, const char *mode, int cold, double *first_ms,
	       double *compiles)
{
	static const char *const want[] = { "_first_step_ms", "_compiles" };
	double got[2] = { -1, -1 };
	char env[4400], args[128];
	int ret;

	snprintf(env, sizeof(env), "HPU_RECIPE_CACHE_CONFIG=%s,%s,256", dir,
		 cold ? "true" : "false");
	snprintf(args, sizeof(args), "-B -s 1 -m %s", mode);
	ret = mnist_run(top, env, args, false, 2, want, got);
	*first_ms = got[0];
	*compiles = got[1];
	return ret || got[0] < 0 || got[1] < 0 ? -1 : 0;
}

int main(void)
{
	const char *top = getenv("HPU_TOP"), *tmp = getenv("TMPDIR");
	double cold_ms = 0, warm_ms = 0, warm_compiles = 0;
	char dir[4200];
	size_t i;

	if (!top) {
		fprintf(stderr, "bench-cache: HPU_TOP not set (run through tests/run-bench.sh)\n");
		return 1;
	}
	/* A local directory: in the guest, TMPDIR is a tmpfs (the results share is 9p). */
	snprintf(dir, sizeof(dir), "%s/bench-cache-recipes", tmp ? tmp : "/tmp");
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		double first[2], compiles[2];
		int warm;

		for (warm = 0; warm < 2; warm++) {
			if (run(top, dir, modes[i], !warm, &first[warm], &compiles[warm])) {
				fprintf(stderr, "bench-cache: mode %s failed\n", modes[i]);
				return 1;
			}
			printf("BENCH cache_%s_%s_first_step_ms %.2f ms\n", modes[i],
			       warm ? "warm" : "cold", first[warm]);
			printf("BENCH cache_%s_%s_compiles %.0f compiles\n", modes[i],
			       warm ? "warm" : "cold", compiles[warm]);
			fflush(stdout);
		}
		cold_ms += first[0];
		warm_ms += first[1];
		warm_compiles += compiles[1];
	}
	printf("BENCH cache_warm_compiles %.0f compiles\n", warm_compiles);
	printf("BENCH cache_first_step_speedup %.2f ratio\n", cold_ms / warm_ms);
	return 0;
}
