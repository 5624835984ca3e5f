/* tile_cost.c: the static cost model of a GPU GEMM kernel's tiles (tile_cost.h; the terms and
 * why: docs/tuning.md, "The cost model").
 *
 * A kernel's time is the larger of its arithmetic and its memory traffic:
 *   - arithmetic: the busiest processor's work-groups, each bm x bn x (K padded to k-blocks)
 *     multiply-adds at the class's peak, and (bm + bn) x K elements staged into LDS at
 *     CG_COST_STAGE_INSTRS vector instructions each; on the vector units the two add up, beside a
 *     matrix unit they overlap; both slowed where fewer than CG_COST_MIN_WAVES waves hide latency;
 *   - memory: each operand read once from memory (an A that serves every batch once in all), its
 *     re-reads (A once per column of tiles, B once per row) from L2 at CG_COST_L2_SPEEDUP times
 *     the bandwidth, the output written once per split-K slice in float32. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "codegen/tile_cost.h"
#include "codegen/targets.h"

typedef struct {
	double peak;    /* GFLOP/s of the products */
	bool matrix;    /* on a matrix unit (overlaps the vector units' staging) */
	int esize;      /* bytes of an operand element in memory */
} ClassRate;

static bool class_rate(const CgTargetInfo *ti, const char *cls, ClassRate *r)
{
	*r = (ClassRate){ti->peak_gflops, false, 4};
	if (strcmp(cls, "f32") == 0)
		return true;
	if (strcmp(cls, "f16f32") == 0 || strcmp(cls, "bf16f32") == 0) {
		r->esize = 2; /* half operands, multiplied at the f32 rate */
		return true;
	}
	if (strcmp(cls, "f64") == 0) {
		/* CDNA runs f64 at half the f32 rate, the consumer chips at a sixteenth */
		r->peak /= (ti->matrix & CG_MATRIX_MFMA) ? 2 : 16;
		r->esize = 8;
		return true;
	}
	if (strcmp(cls, "dot2") == 0 || strcmp(cls, "f16x2") == 0 || strcmp(cls, "bf16x2") == 0) {
		/* v_dot2_f32_f16, or packed FMAs: two products per lane and instruction (the packed
		 * tiles' conversions into float32, one per output and k-block, left out) */
		r->peak *= 2;
		r->esize = 2;
		return true;
	}
	struct {
		const char *cls;
		double peak;
		int esize;
	} unit[] = {{"mf32", ti->peak_mf32, 4}, {"xf32", ti->peak_tf32, 4}, {"tf32", ti->peak_tf32, 4},
		    {"f16", ti->peak_f16, 2}, {"bf16", ti->peak_bf16, 2}};
	for (size_t i = 0; i < sizeof unit / sizeof *unit; i++)
		if (strcmp(cls, unit[i].cls) == 0) {
			/* no cited figure (RDNA 3 and 4's WMMA): twice the vector rate, what a packed
			 * half instruction gives, as a floor */
			*r = (ClassRate){unit[i].peak > 0 ? unit[i].peak : 2 * ti->peak_gflops, true, unit[i].esize};
			return true;
		}
	return false;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* gfx10 and later share LDS and work-groups per WGP (two CUs), as the occupancy does */
static int processors(const CgTargetInfo *ti, const CgAmdChip *chip) { return chip->major >= 10 ? ti->cus / 2 : ti->cus; }

int64_t cg_tile_cost_filled_waves(const CgTargetInfo *ti, const CgAmdChip *chip, int64_t groups, int block)
{
	int per_wg = (int)cdiv(block > 0 ? block : 256, chip->wave);
	return cdiv(cdiv(groups, processors(ti, chip)) * per_wg, chip->simds);
}

/* How well waves per SIMD hide latency: a register-tiled GEMM keeps some independent work in
 * every wave, so one wave does half as well as CG_COST_MIN_WAVES and better in between. */
static double latency_hiding(int waves)
{
	double e = (waves + 2.0) / (CG_COST_MIN_WAVES + 2.0);
	return e < 1 ? e : 1;
}

bool cg_tile_cost_starved(int waves, int64_t filled) { return waves < CG_COST_MIN_WAVES && waves < filled; }

bool cg_tile_cost_models(const CgTargetInfo *ti)
{
	return ti && ti->cus > 0 && ti->peak_gflops > 0 && ti->peak_gbs > 0;
}

bool cg_tile_cost(const CgTargetInfo *ti, const CgAmdChip *chip, const CgCostInput *in, CgCost *out, char *err,
		  size_t errlen)
{
	memset(out, 0, sizeof *out);
	ClassRate rate;
	if (!cg_tile_cost_models(ti)) {
		snprintf(err, errlen, "%s: the cost model needs an AMD row of the target table with its compute "
				      "units and peaks", ti ? ti->name : "?");
		return false;
	}
	if (!class_rate(ti, in->key.cls, &rate)) {
		snprintf(err, errlen, "%s: no rate for precision class '%s'", ti->name, in->key.cls);
		return false;
	}
	const CgTuneKey *k = &in->key;
	const CgTileConfig *c = &in->cfg;
	if (c->tm <= 0 || c->tn <= 0 || c->kb <= 0 || k->m <= 0 || k->n <= 0 || k->k <= 0 || k->batch <= 0) {
		snprintf(err, errlen, "%s: a GEMM of no extent or no tile", ti->name);
		return false;
	}
	int split = k->split > 1 ? k->split : 1;
	CgAmdOccupancy occ = cg_amd_occupancy(chip, &in->kernel, in->block);
	out->waves = occ.waves;
	out->limit = occ.limit;
	out->spills = in->kernel.scratch > 0 || in->kernel.vgpr_spill > 0 || in->kernel.sgpr_spill > 0;

	int procs = processors(ti, chip);
	int64_t groups = k->batch * cdiv(k->m, c->tm) * cdiv(k->n, c->tn) * split;
	int64_t busiest = cdiv(groups, procs);
	int64_t kpad = cdiv(cdiv(k->k, split), c->kb) * c->kb;
	double macs = (double)busiest * (double)c->tm * (double)c->tn * (double)kpad;
	double staged = (double)busiest * (double)(c->tm + c->tn) * (double)kpad;
	/* the waves the busiest processor's work-groups fill, at most what the resources allow */
	int64_t filled = cg_tile_cost_filled_waves(ti, chip, groups, in->block);
	int waves = filled < occ.waves ? (int)filled : occ.waves;
	out->starved = cg_tile_cost_starved(occ.waves, filled);
	double hide = latency_hiding(waves < 1 ? 1 : waves);
	double per_proc = 1e9 / 1e3 / procs; /* GFLOP/s of the chip -> FLOP per ms of one processor */
	out->mac_ms = 2 * macs / (rate.peak * per_proc) / hide;
	out->stage_ms = 2 * CG_COST_STAGE_INSTRS * staged / (ti->peak_gflops * per_proc) / hide;

	/* every work-group reads its rows of A and columns of B; an A that serves every batch (the
	 * key's 's': a convolution's weights) is in memory once */
	double a = (double)k->batch * k->m * k->k, b = (double)k->batch * k->k * k->n;
	double a_once = strchr(k->a, 's') ? (double)k->m * k->k : a;
	double a_all = a * cdiv(k->n, c->tn), b_all = b * cdiv(k->m, c->tm);
	double once = (a_once + b) * rate.esize + 4.0 * k->batch * k->m * k->n * split;
	double again = (a_all - a_once + b_all - b) * rate.esize;
	out->mem_ms = (once + again / CG_COST_L2_SPEEDUP) / (ti->peak_gbs * 1e6);

	double alu = rate.matrix ? fmax(out->mac_ms, out->stage_ms) : out->mac_ms + out->stage_ms;
	out->ms = fmax(alu, out->mem_ms);
	return true;
}

void cg_tile_cost_add(CgCost *a, const CgCost *b)
{
	if (!a->limit || b->waves < a->waves) {
		a->waves = b->waves;
		a->limit = b->limit;
	}
	a->spills |= b->spills;
	a->starved |= b->starved;
	a->mac_ms += b->mac_ms;
	a->stage_ms += b->stage_ms;
	a->mem_ms += b->mem_ms;
	a->ms += b->ms;
}

/* How far c is from admissible: 0 neither spills nor starves, 1 starves, 2 spills. */
static int flaws(const CgCost *c) { return c->spills ? 2 : c->starved ? 1 : 0; }

int cg_tile_cost_pick(const CgCost *cost, int n, int heuristic)
{
	int least = 2;
	for (int i = 0; i < n; i++)
		if (flaws(&cost[i]) < least)
			least = flaws(&cost[i]);
	int best = -1;
	for (int i = 0; i < n; i++)
		if (flaws(&cost[i]) == least && (best < 0 || cost[i].ms < cost[best].ms))
			best = i;
	if (heuristic >= 0 && heuristic < n && best >= 0 && flaws(&cost[heuristic]) == least &&
	    (cost[heuristic].ms <= cost[best].ms * (1 + CG_COST_TIE_PERCENT / 100.0) ||
	     cost[heuristic].ms <= cost[best].ms + CG_COST_TIE_US / 1e3))
		best = heuristic;
	return best;
}
