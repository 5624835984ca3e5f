/* tile_cost.h: the static cost model that picks GEMM tiles for GPUs no one can time here (AMD's:
 * none is reachable from netc's machines). `netc tune --cost-model` compiles every candidate
 * tiling (codegen/tuning.h), reads each GEMM kernel's resources from its code object (registers,
 * LDS, scratch: codegen/amdgpu_info.h), and asks this model what the kernel would cost; per GEMM
 * the cheapest admissible candidate wins, the heuristic's on a near tie (docs/tuning.md, "The cost
 * model").
 *
 * Pure arithmetic on what it is given: it compiles and reads nothing itself. */
#ifndef NETC_TILE_COST_H
#define NETC_TILE_COST_H

#include <stdbool.h>

#include "codegen/amdgpu_info.h"
#include "codegen/tuning.h"

struct CgTargetInfo; /* codegen/targets.h: the header stays free of LLVM's for the runtime-only build */

/* The model's constants, named where docs/tuning.md explains them. */
enum {
	CG_COST_MIN_WAVES = 4,      /* waves per SIMD a GEMM kernel should keep resident */
	CG_COST_STAGE_INSTRS = 8,   /* vector instructions per element staged into LDS (load, convert, store, address) */
	CG_COST_L2_SPEEDUP = 4,     /* re-reads come from L2, this many times faster than memory */
	CG_COST_TIE_PERCENT = 10,   /* a candidate must beat the heuristic by more than this to replace it, */
	CG_COST_TIE_US = 2,         /* and by more than these microseconds (a launch costs as much) */
};

/* One GEMM kernel of one candidate: what it computes and what its code object says of it. */
typedef struct {
	CgTuneKey key;
	CgTileConfig cfg;
	CgAmdKernel kernel;     /* resources from the code object's metadata */
	int block;              /* work-items per work-group, as the bundle launches it */
} CgCostInput;

typedef struct {
	bool spills;            /* scratch or spilled registers: never taken while a candidate does not */
	int waves;              /* waves per SIMD the resources allow */
	/* the resources keep fewer than CG_COST_MIN_WAVES waves per SIMD where the grid would fill
	 * more (a grid too small to fill them is no reason to pass a candidate over) */
	bool starved;
	const char *limit;      /* what limits them: "vgpr", "lds", ... */
	double mac_ms, stage_ms, mem_ms; /* the terms */
	double ms;              /* the estimate */
} CgCost;

/* Whether ti's row has what the model needs: compute units and peaks (the AMD rows). */
bool cg_tile_cost_models(const struct CgTargetInfo *ti);

/* The estimate for one kernel on chip (the row ti of the target table; its compute units and
 * peaks). False with a message when the row lacks what the model needs (no AMD row, no peaks). */
bool cg_tile_cost(const struct CgTargetInfo *ti, const CgAmdChip *chip, const CgCostInput *in, CgCost *out, char *err,
		  size_t errlen);

/* The waves per SIMD that a grid of `groups` work-groups of `block` work-items fills on the busiest
 * processor of chip (a CU; a WGP on gfx10 and later), whatever the resources allow. */
int64_t cg_tile_cost_filled_waves(const struct CgTargetInfo *ti, const CgAmdChip *chip, int64_t groups, int block);

/* Whether a kernel whose resources allow `waves` per SIMD is starved where its grid fills `filled`. */
bool cg_tile_cost_starved(int waves, int64_t filled);

/* Sums b into a: the cost of one configuration over every kernel of its key (a kernel that
 * spills makes the configuration spill; the fewest waves count). */
void cg_tile_cost_add(CgCost *a, const CgCost *b);

/* Which of cost[0..n) a GEMM takes (heuristic: the index of the heuristic's configuration, -1 if
 * it was not modelled): among the admissible ones, those that neither spill nor starve (failing
 * that, those that do not spill; failing that, all), the least estimate; the heuristic's where it
 * is admissible and within CG_COST_TIE_PERCENT or CG_COST_TIE_US of that. */
int cg_tile_cost_pick(const CgCost *cost, int n, int heuristic);

#endif
