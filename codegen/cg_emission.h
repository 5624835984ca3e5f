/* cg_emission.h: the state of one compile that the driver (codegen/cg_driver.c) and the fused
 * group (codegen/cg_group.c) share through cg->emit; lowerings use cg_util.h instead. */
#ifndef NETC_CG_EMISSION_H
#define NETC_CG_EMISSION_H

#include "codegen/cg_util.h"

typedef struct {
	int id;
	LLVMValueRef lin, value;
	LLVMBasicBlockRef block;
} MemoEntry;

#define CG_LANE_BUFFERS 32

/* A flat GPU kernel's work-item computing n consecutive elements at lin[0..n) (cg_lanes_begin):
 * the vectors read so far, one per buffer, and the lanes' values of each group output. */
typedef struct {
	int n; /* 0: one element per work-item */
	LLVMValueRef base, lin[CG_MAX_LANES];
	int read_id[CG_LANE_BUFFERS], nread;
	LLVMValueRef read[CG_LANE_BUFFERS];
	LLVMValueRef *stored; /* noutputs x n */
} LaneState;

/* The group being emitted: its members and the element values already emitted (valid where they
 * were built: same block, same index value). */
typedef struct {
	const Cg *cg;
	int leader, first;
	int *outputs, noutputs;
	MemoEntry *memo;
	int nmemo, memo_cap;
	LaneState lanes;
} GroupState;


/* The kernels compiled so far (a group's lowering may add several, cg_kernel_next) and the one
 * being emitted, whose body block the driver closes. */
typedef struct {
	CgOutput *out;
	int cap;
	LLVMBasicBlockRef body;
	char base[64]; /* the group's first kernel's name */
} KernelState;

struct CgEmission {
	GroupState group;
	KernelState kernels;
};

/* ---- codegen/cg_group.c ---- */
/* Makes leader's group the one being emitted (its members, outputs, an empty memo); ends it. */
void cg_group_begin(Cg *cg, int leader);
void cg_group_end(Cg *cg);
/* The node whose lowering emits the group's kernel: its anchor (always its first member) when it
 * has one, else the leader (a reduction, or the last of an elementwise group). */
const Node *cg_group_template(const Graph *g, int leader);

#endif
