/* test_cg_tile_cost.c: the tile cost model (codegen/tile_cost.h) against its terms computed here
 * by hand on random GEMMs and kernels, and its choice on cases whose answer is known: a spilling
 * or starved candidate loses to a clean one, the heuristic keeps near ties, and a clearly cheaper
 * candidate replaces it. */
#include <math.h>
#include <string.h>

#include "codegen/targets.h"
#include "codegen/tile_cost.h"
#include "tests/unit/test_util.h"

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int64_t draw(int64_t lo, int64_t hi) { return lo + (int64_t)tu_below((uint64_t)(hi - lo + 1)); }

/* The terms of docs/tuning.md's model for a float32 GEMM on gfx906 (60 CUs, 13.3 TFLOP/s, 1024
 * GB/s), written out again from the text. */
static void test_terms(void)
{
	const CgTargetInfo *ti = cg_target_info("gfx906");
	CgAmdChip chip;
	CHECK(ti && ti->cus == 60 && cg_amd_chip("gfx906", 64, &chip), "gfx906's row and chip");
	if (!ti)
		return;
	for (int rep = 0; rep < 200; rep++) {
		CgCostInput in = {.block = 256};
		snprintf(in.key.arch, sizeof in.key.arch, "gfx906");
		snprintf(in.key.cls, sizeof in.key.cls, "f32");
		in.key.batch = draw(1, 64), in.key.m = draw(1, 5000), in.key.n = draw(1, 5000), in.key.k = draw(1, 20000);
		in.key.split = (int)draw(1, 4);
		bool shared = tu_below(2);
		snprintf(in.key.a, sizeof in.key.a, shared ? "k1s" : "k4");
		in.cfg = (CgTileConfig){.tm = 16 << draw(0, 2), .tn = 16 << draw(0, 2), .kb = 4 << draw(0, 4)};
		in.kernel = (CgAmdKernel){.vgpr = (int)draw(20, 120), .sgpr = (int)draw(10, 90), .wave = 64, .max_wg = 256};
		in.kernel.lds = (uint32_t)draw(0, 32768);
		CgCost c;
		char err[256];
		CHECK(cg_tile_cost(ti, &chip, &in, &c, err, sizeof err), "%s", err);

		const CgTuneKey *k = &in.key;
		double procs = 60, split = (double)k->split;
		double groups = (double)k->batch * cdiv(k->m, in.cfg.tm) * cdiv(k->n, in.cfg.tn) * split;
		double busiest = ceil(groups / procs);
		double kpad = (double)cdiv(cdiv(k->k, k->split), in.cfg.kb) * in.cfg.kb;
		CgAmdOccupancy occ = cg_amd_occupancy(&chip, &in.kernel, 256);
		double filled = ceil(busiest * 4 / 4); /* 4 waves of 64 per work-group, 4 SIMDs */
		double waves = fmin(filled, occ.waves);
		double hide = fmin(1, (waves + 2) / 6);
		double flop_per_ms = 13300e6 / procs;
		double mac = 2 * busiest * in.cfg.tm * in.cfg.tn * kpad / flop_per_ms / hide;
		double stage = 2 * 8 * busiest * (in.cfg.tm + in.cfg.tn) * kpad / flop_per_ms / hide;
		double a = (double)k->batch * k->m * k->k, b = (double)k->batch * k->k * k->n;
		double a_once = shared ? (double)k->m * k->k : a;
		double once = 4 * (a_once + b) + 4.0 * k->batch * k->m * k->n * split;
		double again = 4 * (a * cdiv(k->n, in.cfg.tn) - a_once + b * (cdiv(k->m, in.cfg.tm) - 1));
		double mem = (once + again / 4) / 1024e6;
		CHECK_NEAR(c.mac_ms, mac, 1e-9);
		CHECK_NEAR(c.stage_ms, stage, 1e-9);
		CHECK_NEAR(c.mem_ms, mem, 1e-9);
		CHECK_NEAR(c.ms, fmax(mac + stage, mem), 1e-9);
		CHECK(c.waves == occ.waves && c.starved == (occ.waves < 4 && occ.waves < filled), "waves %d", c.waves);
		CHECK(!c.spills);
	}
}

/* Spills and the matrix units' overlap of staging and products. */
static void test_flags(void)
{
	const CgTargetInfo *ti = cg_target_info("gfx90a");
	CgAmdChip chip;
	cg_amd_chip("gfx90a", 64, &chip);
	CgCostInput in = {.block = 256, .cfg = {64, 64, 16}};
	snprintf(in.key.arch, sizeof in.key.arch, "gfx90a");
	snprintf(in.key.cls, sizeof in.key.cls, "mf32");
	in.key.batch = 1, in.key.m = 4096, in.key.n = 4096, in.key.k = 4096, in.key.split = 1;
	in.kernel = (CgAmdKernel){.vgpr = 64, .sgpr = 20, .wave = 64, .max_wg = 256, .lds = 16384};
	CgCost c;
	char err[256];
	CHECK(cg_tile_cost(ti, &chip, &in, &c, err, sizeof err), "%s", err);
	CHECK_NEAR(c.ms, fmax(fmax(c.mac_ms, c.stage_ms), c.mem_ms), 1e-12);
	CHECK(!c.spills && !c.starved);
	in.kernel.scratch = 16;
	CHECK(cg_tile_cost(ti, &chip, &in, &c, err, sizeof err) && c.spills, "scratch is a spill");
	in.kernel.scratch = 0, in.kernel.vgpr_spill = 2;
	CHECK(cg_tile_cost(ti, &chip, &in, &c, err, sizeof err) && c.spills, "a spilled VGPR is a spill");
	/* 256 VGPRs leave 2 waves on gfx90a while a 4096-square grid would fill 8 */
	in.kernel.vgpr_spill = 0, in.kernel.vgpr = 256;
	CHECK(cg_tile_cost(ti, &chip, &in, &c, err, sizeof err) && c.starved && c.waves == 2, "starved: %d waves", c.waves);
	/* a one-work-group grid fills one wave per SIMD: no candidate could do better */
	in.key.m = 64, in.key.n = 64;
	CHECK(cg_tile_cost(ti, &chip, &in, &c, err, sizeof err) && !c.starved, "a tiny grid is not starved");

	CHECK(!cg_tile_cost(cg_target_info("sm_90"), &chip, &in, &c, err, sizeof err) && strstr(err, "AMD row"),
	      "sm_90 refused: %s", err);
	snprintf(in.key.cls, sizeof in.key.cls, "q8");
	CHECK(!cg_tile_cost(ti, &chip, &in, &c, err, sizeof err) && strstr(err, "'q8'"), "class q8 refused: %s", err);
}

static CgCost cost(double ms, bool spills, bool starved) { return (CgCost){.ms = ms, .spills = spills, .starved = starved}; }

static void test_pick(void)
{
	/* the heuristic (0) spills: the cheapest clean one, even if slower than the spilling one */
	CgCost a[] = {cost(1.0, true, false), cost(1.5, false, false), cost(1.2, false, false)};
	CHECK(cg_tile_cost_pick(a, 3, 0) == 2, "spilling heuristic");
	/* starved candidates lose to full ones; the heuristic keeps a near tie */
	CgCost b[] = {cost(1.05, false, false), cost(0.5, false, true), cost(1.0, false, false)};
	CHECK(cg_tile_cost_pick(b, 3, 0) == 0, "near tie keeps the heuristic");
	b[0].ms = 1.2;
	CHECK(cg_tile_cost_pick(b, 3, 0) == 2, "a clearly cheaper candidate wins");
	/* a candidate 20% cheaper by one microsecond leaves the heuristic too */
	CgCost tiny[] = {cost(0.006, false, false), cost(0.005, false, false)};
	CHECK(cg_tile_cost_pick(tiny, 2, 0) == 0, "a microsecond is a tie");
	/* all starved: the cheapest of them; all spill: the cheapest of them */
	CgCost c[] = {cost(2, false, true), cost(1, false, true)};
	CHECK(cg_tile_cost_pick(c, 2, 0) == 1);
	CgCost d[] = {cost(2, true, false), cost(3, true, false)};
	CHECK(cg_tile_cost_pick(d, 2, 0) == 0);
	/* no heuristic modelled: the cheapest admissible */
	CHECK(cg_tile_cost_pick(b, 3, -1) == 2);
	CHECK(cg_tile_cost_pick(b, 0, -1) == -1, "nothing to pick from");
}

/* A key's kernels summed: times add, a spill or starvation anywhere marks the sum, the fewest
 * waves count. */
static void test_add(void)
{
	CgCost sum = {0}, a = {.ms = 1, .mac_ms = 0.5, .waves = 4, .limit = "vgpr"},
	       b = {.ms = 2, .mem_ms = 2, .waves = 3, .limit = "lds", .spills = true, .starved = true};
	cg_tile_cost_add(&sum, &a);
	CHECK(sum.waves == 4 && !sum.spills && sum.ms == 1, "one kernel");
	cg_tile_cost_add(&sum, &b);
	CHECK(sum.ms == 3 && sum.mac_ms == 0.5 && sum.mem_ms == 2 && sum.waves == 3 && strcmp(sum.limit, "lds") == 0,
	      "two kernels: %g ms, %d waves", sum.ms, sum.waves);
	CHECK(sum.spills && sum.starved, "the flaws of either");
}

int main(void)
{
	tu_start("test_cg_tile_cost");
	test_terms();
	test_flags();
	test_pick();
	test_add();
	return tu_finish("test_cg_tile_cost");
}
