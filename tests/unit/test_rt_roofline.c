/* test_rt_roofline.c: the host's roofline (runtime/roofline.h): measured when the cache has no
 * line for this CPU and thread count, kept, and read back from the cache afterwards (a line
 * written by hand is what comes back); a garbage line is skipped; the roofline share is the
 * least time at the peaks over the time taken, for random counts on both sides of the ridge. */
#include "runtime/roofline.h"
#include "tests/unit/test_util.h"

static int lines(const char *path)
{
	FILE *f = fopen(path, "r");
	int n = 0, c;
	while (f && (c = fgetc(f)) != EOF)
		n += c == '\n';
	if (f)
		fclose(f);
	return n;
}

int main(void)
{
	tu_start("test_rt_roofline");
	char dir[256], path[300];
	snprintf(dir, sizeof dir, "%s/netc_roofline_%d/sub", tu_tmpdir(), (int)getpid());
	snprintf(path, sizeof path, "%s/roofline", dir);

	RtRoofline r, again;
	CHECK(rt_host_roofline("Test CPU", 1, dir, &r));
	CHECK(r.gflops > 0.1 && r.gbs > 0.1, "measured %g GFLOP/s, %g GB/s", r.gflops, r.gbs);
	CHECK(strncmp(r.source, "measured now, kept in ", 22) == 0, "%s", r.source);
	CHECK(lines(path) == 1);
	CHECK(rt_host_roofline("Test CPU", 1, dir, &again));
	CHECK(strncmp(again.source, "measured before", 15) == 0, "%s", again.source);
	CHECK(fabs(again.gflops - r.gflops) <= 0.05 && fabs(again.gbs - r.gbs) <= 0.05);

	/* the cache is what is read: hand-written values come back, for their CPU and threads only
	 * (values of one decimal, as the cache keeps them) */
	double gflops = round(tu_uniform(10, 1000) * 10) / 10, gbs = round(tu_uniform(1, 100) * 10) / 10;
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fprintf(f, "not a line of numbers\n3\t%.1f\t%.1f\tOther CPU\n3\t%.1f\t%.1f\tTest CPU\n", gflops * 2, gbs * 2,
			gflops, gbs);
		fclose(f);
	}
	CHECK(rt_host_roofline("Test CPU", 3, dir, &again));
	CHECK_NEAR(again.gflops, gflops, 1e-3);
	CHECK_NEAR(again.gbs, gbs, 1e-3);
	CHECK(rt_host_roofline("Test CPU", 1, dir, &again)); /* no line for 1 thread now: measured, added */
	CHECK(strncmp(again.source, "measured now", 12) == 0, "%s", again.source);
	CHECK(lines(path) == 4);
	CHECK(rt_host_roofline("Test CPU", 1, NULL, &again) && strcmp(again.source, "measured now") == 0);
	remove(path);
	rmdir(dir);
	*strrchr(dir, '/') = 0;
	rmdir(dir);

	/* share = max(flops / peak flops, bytes / peak bandwidth) / seconds */
	RtRoofline roof = {.gflops = tu_uniform(10, 100), .gbs = tu_uniform(1, 10)};
	for (int i = 0; i < 20; i++) {
		double flops = tu_uniform(1e6, 1e9), bytes = tu_uniform(1e5, 1e9), sec = tu_uniform(1e-4, 1e-1);
		double want = fmax(flops / (roof.gflops * 1e9), bytes / (roof.gbs * 1e9)) / sec;
		CHECK_NEAR(rt_roofline_share(&roof, flops, bytes, sec), want, 1e-12);
	}
	CHECK(rt_roofline_share(&(RtRoofline){0}, 1e6, 1e6, 1) == 0, "an unknown roofline gives no share");
	CHECK(rt_roofline_share(&roof, 0, 0, 1) == 0);
	return tu_finish("test_rt_roofline");
}
