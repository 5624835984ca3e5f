/* cg_fused_harness.h: runs the kernels of fused groups against the float64 reference
 * interpreter (header only, on top of cg_harness.h).
 *
 *     CgHarness *h = ch_new("conv+bias+relu");
 *     ... ch_param, ch_op as in cg_harness.h ...
 *     cf_group(h, (int[]){c, b, r}, 3);      // one group, its leader the last id
 *     tu_failures += cf_run(h, false);       // host; true: GPU templates emulated on the host
 *     tu_failures += cf_gpu(h);              // compiles for gfx906, gfx1100 and sm_90
 *
 * The graph's memory is planned as for any graph, then the members that do not leave their group
 * lose their storage (offset -1, as the fused plan gives them): a kernel that still reads or
 * writes one aborts in codegen. After each kernel every group output of its group is compared
 * with the reference: max |got - want| / max |want| <= tolerance. */
#ifndef NETC_CG_FUSED_HARNESS_H
#define NETC_CG_FUSED_HARNESS_H

#include "codegen/gemm_gpu.h"
#include "ir/ops.h"
#include "tests/unit/cg_harness.h"
#include "tests/unit/matrix_lane_models.h"
#include "tests/unit/test_util.h"

/* Whether the graph has a float32 GEMM (float64 ones stay SIMT on every target). */
CH_API bool cf_has_f32_gemm(const Graph *g)
{
	for (int i = 0; i < g->nnodes; i++)
		if (g->node[i].dtype == DT_F32 && (ir_ops[g->node[i].op].traits & TRAIT_HALF_COMPUTE))
			return true;
	return false;
}

/* Puts ids[0..n) (in node order) in one group led by the last. */
CH_API void cf_group(CgHarness *h, const int *ids, int n)
{
	for (int i = 0; i < n; i++)
		h->g->node[ids[i]].group = ids[n - 1];
}

/* dw = conv2d_grad_weight(dy, x) of a 3x3 convolution without padding (x [n, cin, hw, hw], dy
 * [n, cout, hw - 2, hw - 2], parameters of type t); returns dw's id. */
CH_API int cf_grad_weight(CgHarness *h, DType t, int n, int cin, int hw, int cout)
{
	char dims[64];
	snprintf(dims, sizeof dims, "%d,%d,%d,%d", n, cout, hw - 2, hw - 2);
	int dy = ch_param(h, t, dims);
	snprintf(dims, sizeof dims, "%d,%d,%d,%d", n, cin, hw, hw);
	int x = ch_param(h, t, dims);
	double a[IR_MAX_ATTRS] = {1, 1, 0, 0, 1, 1, 3, 3};
	return ch_op(h, OP_conv2d_grad_weight, a, dy, x);
}

/* cf_grad_weight with the update w + dw * s after it, the three in one group: a weight gradient
 * whose epilogue is an optimizer's. Returns dw's id. */
CH_API int cf_grad_weight_update(CgHarness *h, DType t, int n, int cin, int hw, int cout)
{
	char dims[64];
	int dw = cf_grad_weight(h, t, n, cin, hw, cout);
	snprintf(dims, sizeof dims, "%d,%d,3,3", cout, cin);
	int w = ch_param(h, t, dims), s = ch_param(h, t, dims);
	int scaled = ch_op(h, OP_mul, NULL, dw, s);
	int upd = ch_op(h, OP_add, NULL, w, scaled);
	cf_group(h, (int[]){dw, scaled, upd}, 3);
	return dw;
}

/* Programs, plan-memory, and no storage for members inside their group. */
CH_API bool cf_plan(CgHarness *h)
{
	Graph *g = h->g;
	if (!ch_plan(h))
		return false;
	for (int i = 0; i < g->nnodes; i++)
		if (!ir_is_leaf(g->node[i].op) && !ir_group_output(g, i))
			g->node[i].offset = -1;
	return true;
}

CH_API bool cf_compile(CgHarness *h, const char *target, CgOutput *out)
{
	CgTarget t;
	char err[1024];
	CgTargetOptions o = {0};
	if (!cg_target_lookup(target, &o, &t, err, sizeof err) || !cg_compile(h->g, &t, false, out, err, sizeof err)) {
		printf("FAIL %s [%s]: %s\n", h->name, target, err);
		return false;
	}
	return true;
}

/* The matrix unit that cf_compile_emulated_split_k emulates where asked to: target arch at wave
 * (0: its default), executed through the lane models. */
static const char *cf_mma_arch __attribute__((unused)) = "sm_80";
static int cf_mma_wave __attribute__((unused));
/* ... with these target options besides the wave (--no-matrix-units, --packed-half) */
static CgTargetOptions cf_mma_options __attribute__((unused));

/* Compiles for the host with the GPU templates emulated and split-K on (mma: the matrix path's
 * emulation too, as cf_mma_arch), and turns the emulation off again. */
CH_API bool cf_compile_emulated_split_k(CgHarness *h, bool mma, CgOutput *out)
{
	cg_gpu_emulation(true);
	cg_gpu_emulation_split_k(true);
	CgTargetOptions o = cf_mma_options;
	o.wave = cf_mma_wave;
	cg_gpu_emulation_target(mma ? cf_mma_arch : NULL, &o, lane_models, LANE_NMODELS);
	bool ok = cf_compile(h, "host", out);
	cg_gpu_emulation_mma(NULL, 0, NULL, 0);
	cg_gpu_emulation_split_k(false);
	cg_gpu_emulation(false);
	return ok;
}

/* Compares the group outputs of kernel k's group after it ran. */
CH_API int cf_check_kernel(CgHarness *h, const CgKernel *k, const uint8_t *arena)
{
	const Graph *g = h->g;
	int failures = 0, outputs = 0;
	for (int id = 0; id <= k->node; id++) {
		const Node *n = &g->node[id];
		if (n->group != k->node || !ir_group_output(g, id))
			continue;
		outputs++;
		int64_t m = shape_numel(&n->shape);
		size_t size = dtype_size(n->dtype);
		free(h->got[id]);
		h->got[id] = tu_calloc((size_t)m, sizeof(double));
		for (int64_t i = 0; i < m; i++)
			h->got[id][i] = ch_read(arena + n->offset + i * (int64_t)size, n->dtype);
		failures += ch_compare(h, n);
	}
	if (!outputs) {
		printf("FAIL %s: kernel %s stores no group output\n", h->name, k->name);
		failures++;
	}
	return failures;
}

/* Plans h, compiles it emulated with split-K (mma: the mma path too), runs every kernel over its
 * grid in two pieces and compares each group's outputs after its last kernel (a partials kernel's
 * group is checked after the sum kernel that follows it). Returns the failures; *splits gets how
 * many groups split K. */
CH_API int cf_run_split_k(CgHarness *h, bool mma, int *splits)
{
	CgOutput out;
	*splits = 0;
	if (!cf_plan(h) || !cf_compile_emulated_split_k(h, mma, &out))
		return 1;
	uint8_t *arena = ch_prepare(h);
	void *so = ch_load(h, &out);
	int failures = so ? 0 : 1;
	if (!so)
		printf("FAIL %s: the emulated kernels do not load\n", h->name);
	for (int k = 0; so && k < out.nkernels; k++) {
		const CgKernel *ker = &out.kernels[k];
		void *fn = dlsym(so, ker->symbol);
		if (!fn) {
			printf("FAIL %s: kernel %s missing\n", h->name, ker->name);
			failures++;
			continue;
		}
		ch_call(fn, arena, ker, 0, ker->grid / 2);
		ch_call(fn, arena, ker, ker->grid / 2, ker->grid);
		if (k + 1 < out.nkernels && out.kernels[k + 1].node == ker->node)
			++*splits;
		else
			failures += cf_check_kernel(h, ker, arena);
	}
	if (so)
		dlclose(so);
	free(arena);
	cg_output_free(&out);
	return failures;
}

/* Compiles for the host (emulate: the GPU templates emulated), runs every kernel in order over
 * its grid in two pieces and compares every group output. Returns the failures. */
CH_API int cf_run(CgHarness *h, bool emulate)
{
	CgOutput out;
	if (!cf_plan(h))
		return 1;
	cg_gpu_emulation(emulate);
	bool ok = cf_compile(h, "host", &out);
	cg_gpu_emulation(false);
	if (!ok)
		return 1;
	uint8_t *arena = ch_prepare(h);
	int failures = 1;
	void *so = ch_load(h, &out);
	if (so) {
		failures = 0;
		for (int k = 0; k < out.nkernels; k++) {
			const CgKernel *ker = &out.kernels[k];
			void *fn = dlsym(so, ker->symbol);
			if (!fn) {
				printf("FAIL %s: kernel %s missing from the code object\n", h->name, ker->name);
				failures++;
				continue;
			}
			ch_call(fn, arena, ker, 0, ker->grid / 2);
			ch_call(fn, arena, ker, ker->grid / 2, ker->grid);
			failures += cf_check_kernel(h, ker, arena);
		}
		dlclose(so);
	}
	free(arena);
	cg_output_free(&out);
	return failures;
}

/* The kernels' count and names: one per group, named after its leader. */
CH_API int cf_check_kernels(const CgHarness *h, const char *target, const CgOutput *out)
{
	const Graph *g = h->g;
	int want = 0, failures = 0;
	for (int i = 0; i < g->nnodes; i++)
		want += cg_has_kernel(&g->node[i]);
	if (out->nkernels != want) {
		printf("FAIL %s [%s]: %d kernels, want one per group (%d)\n", h->name, target, out->nkernels, want);
		failures++;
	}
	for (int k = 0; k < out->nkernels; k++) {
		const Node *n = &g->node[out->kernels[k].node];
		char name[64];
		snprintf(name, sizeof name, "k%d_%s", n->id, ir_ops[n->op].name);
		if (n->group != n->id || strcmp(name, out->kernels[k].name)) {
			printf("FAIL %s [%s]: kernel %s for node %d\n", h->name, target, out->kernels[k].name, n->id);
			failures++;
		}
	}
	return failures;
}

/* ptxas assembles the PTX for arch (or the PTX's architecture-specific form of it, as sm_90a
 * for sm_90) where it is installed; returns the failures. */
CH_API int cf_ptxas(const CgHarness *h, const char *arch, const CgOutput *out)
{
	char ptxas[512], cmd[600], text[4096], as[48];
	if (!tu_find_tool("ptxas", ptxas, sizeof ptxas))
		return 0;
	snprintf(cmd, sizeof cmd, "%s -arch=%s -o /dev/null", ptxas, tu_ptx_arch(out->code, out->size, arch, as, sizeof as));
	if (tu_run_on_file(cmd, out->code, strnlen((const char *)out->code, out->size), text, sizeof text) == 0)
		return 0;
	printf("FAIL %s [%s]: ptxas rejects the PTX: %.600s\n", h->name, arch, text);
	return 1;
}

/* The graph (planned by cf_run or here) compiles for gfx906, gfx1100 and sm_90: the LLVM verifier
 * passes, one kernel per group, and ptxas accepts the PTX. */
CH_API int cf_gpu(CgHarness *h)
{
	static const char *const targets[] = {"gfx906", "gfx1100", "sm_90"};
	if (!cf_plan(h))
		return 1;
	int failures = 0;
	for (size_t i = 0; i < sizeof targets / sizeof *targets; i++) {
		CgOutput out;
		if (!cf_compile(h, targets[i], &out)) {
			failures++;
			continue;
		}
		failures += cf_check_kernels(h, targets[i], &out);
		if (!strcmp(targets[i], "sm_90"))
			failures += cf_ptxas(h, "sm_90", &out);
		cg_output_free(&out);
	}
	return failures;
}

/* matmul(a, b) of m x k by k x nn with transposes ta, tb (attributes trans_a, trans_b), named
 * "<prefix>matmul MxNxK taA tbB"; epilogue: bias_add(relu(.)) fused after it, and anchor_out: the
 * product is read outside the group too (a neg of it). */
CH_API CgHarness *cf_matmul_case(const char *prefix, int m, int nn, int k, int ta, int tb, bool epilogue,
				 bool anchor_out)
{
	char name[128], da[32], db[32];
	snprintf(name, sizeof name, "%smatmul %dx%dx%d ta%d tb%d%s%s", prefix, m, nn, k, ta, tb,
		 epilogue ? " + epilogue" : "", anchor_out ? " mm out" : "");
	CgHarness *h = ch_new(name);
	snprintf(da, sizeof da, ta ? "%d,%d" : "%2$d,%1$d", k, m);
	snprintf(db, sizeof db, tb ? "%d,%d" : "%2$d,%1$d", nn, k);
	int a = ch_param(h, DT_F32, da), b = ch_param(h, DT_F32, db);
	double attr[2] = {ta, tb}, axis1[1] = {1};
	int mm = ch_op(h, OP_matmul, attr, a, b);
	if (epilogue) {
		snprintf(db, sizeof db, "%d", nn);
		int bias = ch_param(h, DT_F32, db);
		int r = ch_op(h, OP_relu, NULL, mm);
		int ba = ch_op(h, OP_bias_add, axis1, r, bias);
		if (anchor_out)
			ch_op(h, OP_neg, NULL, mm);
		cf_group(h, (int[]){mm, r, ba}, 3);
	}
	return h;
}

#endif
