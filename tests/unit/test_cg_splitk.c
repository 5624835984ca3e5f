/* test_cg_splitk.c: GPU GEMMs split over K (ir_split_k > 1): the partials kernel k<L>_<op> and
 * the sum kernel k<L>_<op>_sum.
 *
 * Each graph is planned (its split anchors get workspaces), then:
 * - emulated on the host (the GPU kernels with work-items as loops, split-K on): the kernel list
 *   holds each split group's two launches, in order; after the partials kernel the group's
 *   outputs are still untouched (the sum kernel writes them); after the sum kernel they match the
 *   float64 reference; a second run with the grids cut differently gives the same bits;
 * - compiled for gfx906, gfx1100 and sm_90: the same two launches in order, 256 work-items each,
 *   the sum kernel one work-item per output element, both kernels in the code object (AMD: no
 *   scratch), ptxas accepts the PTX where it is installed, and a bundle written and read back
 *   launches the kernels in the same order.
 * Cases: conv2d_grad_weight with the MNIST network's conv1 and conv2 shapes at small batches,
 * matmuls with long K under every transpose, each alone and fused with an elementwise epilogue
 * (with and without the anchor itself a group output), and the batched GEMM of a Winograd weight
 * gradient (one split GEMM per transform point). */
#include "codegen/amdgpu_info.h"
#include "codegen/cg_util.h"
#include "codegen/make_bundle.h"
#include "tests/unit/cg_fused_harness.h"
#include "tests/unit/test_ir_util.h"

static const char *const gpu_targets[] = {"gfx906", "gfx1100", "sm_90"};

/* Whether kernel k is the partials kernel of a split group (the next one is its sum). */
static bool is_partials(const CgOutput *out, int k)
{
	if (k + 1 >= out->nkernels)
		return false;
	const CgKernel *a = &out->kernels[k], *b = &out->kernels[k + 1];
	size_t len = strlen(a->name);
	return a->node == b->node && !strncmp(a->name, b->name, len) && !strcmp(b->name + len, "_sum");
}

/* The kernel list: one kernel per group, named after its leader, in node order, and for every
 * group whose anchor splits K its sum kernel right after it. Returns the split groups found. */
static int check_list(const CgHarness *h, const char *target, const CgOutput *out)
{
	const Graph *g = h->g;
	int k = 0, split = 0;
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->node[i];
		if (!cg_has_kernel(n))
			continue;
		const Node *anchor = &g->node[cg_group_first(g, i)];
		bool want_split = ir_split_k(g, anchor) > 1;
		char name[64];
		snprintf(name, sizeof name, "k%d_%s", i, ir_ops[n->op].name);
		CHECK(k < out->nkernels && out->kernels[k].node == i && !strcmp(out->kernels[k].name, name),
		      "%s [%s]: kernel %d is %s, want %s", h->name, target, k, k < out->nkernels ? out->kernels[k].name : "none",
		      name);
		if (want_split) {
			CHECK(is_partials(out, k), "%s [%s]: %s is not followed by %s_sum", h->name, target, name, name);
			split++;
			k++;
		}
		k++;
	}
	CHECK(k == out->nkernels, "%s [%s]: %d kernels, want %d", h->name, target, out->nkernels, k);
	return split;
}

static void run_kernel(void *so, const CgKernel *k, uint8_t *arena, int pieces)
{
	void *fn = dlsym(so, k->symbol);
	CHECK(fn != NULL, "kernel %s missing from the code object", k->name);
	if (!fn)
		return;
	for (int p = 0; p < pieces; p++)
		ch_call(fn, arena, k, k->grid * p / pieces, k->grid * (p + 1) / pieces);
}

/* The fill pattern of the arena: every byte 0xff (a NaN in every float type). */
static bool untouched(const uint8_t *arena, const Node *n)
{
	int64_t bytes = shape_numel(&n->shape) * (int64_t)dtype_size(n->dtype);
	for (int64_t i = 0; i < bytes; i++)
		if (arena[n->offset + i] != 0xff)
			return false;
	return true;
}

/* Runs every kernel (its grid in `pieces` pieces); checks group outputs before a sum kernel
 * (untouched) and after a group's last kernel (against the reference). */
static int execute(CgHarness *h, const CgOutput *out, void *so, uint8_t *arena, int pieces)
{
	const Graph *g = h->g;
	int failures = 0;
	for (int k = 0; k < out->nkernels; k++) {
		const CgKernel *ker = &out->kernels[k];
		run_kernel(so, ker, arena, pieces);
		if (!is_partials(out, k)) {
			failures += cf_check_kernel(h, ker, arena);
			continue;
		}
		for (int id = 0; id <= ker->node; id++)
			if (g->node[id].group == ker->node && ir_group_output(g, id) && !untouched(arena, &g->node[id])) {
				printf("FAIL %s: %s wrote %s, the sum kernel's output\n", h->name, ker->name, g->node[id].name);
				failures++;
			}
	}
	return failures;
}

static uint8_t *new_arena(const Graph *g, size_t *bytes)
{
	*bytes = ((size_t)g->arena_bytes + 63) / 64 * 64 + 64;
	uint8_t *arena = aligned_alloc(64, *bytes);
	if (!arena)
		abort();
	memset(arena, 0xff, *bytes);
	return arena;
}

/* The emulated kernels against the reference, twice: the second run cuts the grids into three
 * pieces and must give the same bits. */
static void emulated(CgHarness *h)
{
	const Graph *g = h->g;
	CgOutput out;
	if (!cf_compile_emulated_split_k(h, false, &out)) {
		tu_failures++;
		return;
	}
	CHECK(check_list(h, "emulated", &out) > 0, "%s: no group splits K", h->name);
	for (int i = 0; i < g->nnodes; i++) {
		free(h->want[i]);
		h->want[i] = tu_calloc((size_t)shape_numel(&g->node[i].shape), sizeof(double));
	}
	size_t bytes;
	uint8_t *arena = new_arena(g, &bytes), *again = new_arena(g, &bytes);
	ch_fill_leaves(h, arena);
	memcpy(again, arena, bytes);
	ir_interp(g, PROG_TRAIN, h->want);
	void *so = ch_load(h, &out);
	if (so) {
		tu_failures += execute(h, &out, so, arena, 2);
		for (int k = 0; k < out.nkernels; k++)
			run_kernel(so, &out.kernels[k], again, 3);
		for (int i = 0; i < g->nnodes; i++) {
			const Node *n = &g->node[i];
			size_t size = (size_t)(shape_numel(&n->shape) * (int64_t)dtype_size(n->dtype));
			CHECK(n->offset < 0 || ir_is_leaf(n->op) || !memcmp(arena + n->offset, again + n->offset, size),
			      "%s: %s differs when the grids are cut differently", h->name, n->name);
		}
		dlclose(so);
	} else {
		tu_failures++;
	}
	free(arena);
	free(again);
	cg_output_free(&out);
}

/* Both kernels of every split group in the AMD code object, without scratch. */
static void amd_code(const CgHarness *h, const char *target, const CgOutput *out)
{
	CgAmdCode code;
	char err[256];
	if (!cg_amd_read(out->code, out->size, &code, err, sizeof err)) {
		FAIL("%s [%s]: %s", h->name, target, err);
		return;
	}
	for (int k = 0; k < out->nkernels; k++) {
		const CgAmdKernel *found = NULL;
		for (int i = 0; i < code.nkernels; i++)
			if (!strcmp(code.kernels[i].name, out->kernels[k].symbol))
				found = &code.kernels[i];
		CHECK(found && !found->scratch && !found->vgpr_spill, "%s [%s]: kernel %s %s", h->name, target,
		      out->kernels[k].name, found ? "uses scratch" : "missing from the code object");
	}
	cg_amd_free(&code);
}

/* The launches: 256 work-items; a sum kernel covers its anchor's outputs one per work-item. */
static void check_launches(const CgHarness *h, const char *target, const CgOutput *out)
{
	for (int k = 0; k < out->nkernels; k++) {
		const CgKernel *ker = &out->kernels[k];
		CHECK(ker->block == CG_GPU_BLOCK && ker->grid >= 1, "%s [%s]: %s: grid %lld of %d work-items", h->name,
		      target, ker->name, (long long)ker->grid, ker->block);
		if (!is_partials(out, k))
			continue;
		const Node *anchor = &h->g->node[cg_group_first(h->g, ker->node)];
		int64_t want = (shape_numel(&anchor->shape) + CG_GPU_BLOCK - 1) / CG_GPU_BLOCK;
		CHECK(out->kernels[k + 1].grid == want, "%s [%s]: %s has grid %lld, want %lld", h->name, target,
		      out->kernels[k + 1].name, (long long)out->kernels[k + 1].grid, (long long)want);
	}
}

/* The bundle's training launches, written and read back, are the compiled kernels in order. */
static void bundle_order(const CgHarness *h, const char *target, const CgOutput *out)
{
	CgTarget t;
	CgTargetOptions o = {0};
	char err[512], path[] = "/tmp/netc-splitk-XXXXXX";
	Bundle made, back;
	int fd = mkstemp(path);
	if (fd < 0 || !cg_target_lookup(target, &o, &t, err, sizeof err)) {
		FAIL("%s [%s]: no temporary file or target", h->name, target);
		return;
	}
	close(fd);
	cg_make_bundle(h->g, &t, out, 1, &made);
	bool ok = bundle_write(&made, path, err, sizeof err) && bundle_read(&back, path, err, sizeof err);
	unlink(path);
	bundle_free(&made);
	if (!ok) {
		FAIL("%s [%s]: bundle: %s", h->name, target, err);
		return;
	}
	const BundleCode *c = &back.code[0];
	bool same = c->ntrain == out->nkernels;
	for (int k = 0; same && k < out->nkernels; k++)
		same = !strcmp(c->train_kernels[k].name, out->kernels[k].name) &&
		       c->train_kernels[k].grid == out->kernels[k].grid && c->train_kernels[k].block == out->kernels[k].block;
	CHECK(same, "%s [%s]: the bundle's %d launches are not the %d kernels in order", h->name, target, c->ntrain,
	      out->nkernels);
	bundle_free(&back);
}

static void gpus(CgHarness *h)
{
	for (size_t i = 0; i < sizeof gpu_targets / sizeof *gpu_targets; i++) {
		CgOutput out;
		if (!cf_compile(h, gpu_targets[i], &out)) {
			tu_failures++;
			continue;
		}
		CHECK(check_list(h, gpu_targets[i], &out) > 0, "%s [%s]: no group splits K", h->name, gpu_targets[i]);
		check_launches(h, gpu_targets[i], &out);
		bundle_order(h, gpu_targets[i], &out);
		if (out.nkernels && !strcmp(gpu_targets[i], "sm_90"))
			tu_failures += cf_ptxas(h, "sm_90", &out);
		else
			amd_code(h, gpu_targets[i], &out);
		cg_output_free(&out);
	}
}

static void run(CgHarness *h)
{
	char err[512];
	if (!ir_verify(h->g, err, sizeof err)) {
		FAIL("%s: %s", h->name, err);
	} else if (cf_plan(h)) {
		emulated(h);
		gpus(h);
	} else {
		tu_failures++;
	}
	ch_free(h);
}

/* ---- graphs ---- */

/* dw = conv2d_grad_weight(dy, x) of a 3x3 convolution without padding; epilogue: also
 * w + dw * s in the same kernel (and, with anchor_out, dw read outside the group). */
static void grad_weight(int n, int cin, int hw, int cout, bool epilogue, bool anchor_out)
{
	char name[128];
	snprintf(name, sizeof name, "grad_weight x[%d,%d,%d,%d] cout %d%s%s", n, cin, hw, hw, cout,
		 epilogue ? " + epilogue" : "", anchor_out ? " dw out" : "");
	CgHarness *h = ch_new(name);
	if (!epilogue)
		cf_grad_weight(h, DT_F32, n, cin, hw, cout);
	else if (anchor_out)
		ch_op(h, OP_neg, NULL, cf_grad_weight_update(h, DT_F32, n, cin, hw, cout));
	else
		cf_grad_weight_update(h, DT_F32, n, cin, hw, cout);
	run(h);
}

/* dU = winograd_weight_gemm(dM, V): a batch of GEMMs (the transform points), each split over its
 * long K (the tiles of the batch). */
static void weight_gemm(int pts, int k, int c, int p)
{
	char name[128], dims[64];
	snprintf(name, sizeof name, "winograd_weight_gemm %d points of %dx%d, K %d", pts, k, c, p);
	CgHarness *h = ch_new(name);
	snprintf(dims, sizeof dims, "%d,%d,%d", pts, k, p);
	int dm = ch_param(h, DT_F32, dims);
	snprintf(dims, sizeof dims, "%d,%d,%d", pts, c, p);
	int v = ch_param(h, DT_F32, dims);
	int du = ch_op(h, OP_winograd_weight_gemm, NULL, dm, v);
	CHECK(ir_split_k(h->g, &h->g->node[du]) > 1, "%s: not split", name);
	run(h);
}

/* matmul(a, b) with transposes ta, tb; epilogue: bias_add(relu(...)) fused after it. */
static void matmul(int m, int nn, int k, int ta, int tb, bool epilogue, bool anchor_out)
{
	CgHarness *h = cf_matmul_case("", m, nn, k, ta, tb, epilogue, anchor_out);
	run(h);
}

/* The tiles of split problems: at least two slices of whole k-blocks that cover K, no more
 * slices than asked for, and more work-groups than without the split. */
static void tiles(void)
{
	static const struct {
		int64_t m, n, k;
		int slices;
	} cases[] = {
		{9, 32, 43264, 32},   /* MNIST conv1 grad_weight at batch 64 */
		{288, 64, 36864, 32}, /* MNIST conv2 grad_weight at batch 64 */
		{9, 32, 2028, 3},
		{40, 24, 1500, 2},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		GemmSpec s = {.batch = 1, .m = cases[i].m, .n = cases[i].n, .k = cases[i].k};
		GpuTiles t = cg_gemm_gpu_split_tiles(&s, cases[i].slices, true), one = cg_gemm_gpu_tiles(&s, true);
		int64_t groups = t.slices * t.nmb * t.nnb, groups1 = one.nmb * one.nnb;
		bool ok = t.slices >= 2 && t.slices <= cases[i].slices && t.kslice % t.bk == 0 &&
			  t.kslice * t.slices >= s.k && t.kslice * (t.slices - 1) < s.k && groups > groups1 &&
			  (t.bm / t.tm) * (t.bn / t.tn) * t.ks == t.block && one.slices == 1 && one.kslice == s.k;
		CHECK(ok, "split tiles %lldx%lldx%lld / %d: %d slices of %lld (k-block %d), %lld work-groups against %lld",
		      (long long)s.m, (long long)s.n, (long long)s.k, cases[i].slices, t.slices, (long long)t.kslice, t.bk,
		      (long long)groups, (long long)groups1);
	}
}

/* What a slice rule (ir_split_k, ir_split_k_most) gives a lone matmul of m x n x k (a transposed:
 * the weight gradients' layout); only shapes are built, no data. */
static int lone_matmul(int m, int n, int k, int (*rule)(const Graph *, const Node *))
{
	Graph *g = ir_graph_new("split");
	int a = ir_leaf(g, OP_param, NULL, S(2, k, m), DT_F32, NULL), b = ir_leaf(g, OP_param, NULL, S(2, k, n), DT_F32, NULL);
	int in[2] = {a, b}, mm = tu_add(g, OP_matmul, in, A(1, 0));
	int slices = rule(g, &g->node[mm]);
	ir_graph_free(g);
	return slices;
}

/* The split rule: K is cut into slices of at least 512 until the output's 128 x 128 tiles and
 * their slices make about 512 work-groups, at most 128 slices; outputs that fill a GPU alone and
 * short K stay whole. */
static void split_rule(void)
{
	static const struct {
		int m, n, k, want;
	} cases[] = {
		{512, 4608, 12544, 4},    /* vgg16's 14x14 weight gradients: 144 tiles, ceil(512 / 144) */
		{256, 2304, 200704, 15},  /* vgg16's 56x56 ones: 36 tiles */
		{64, 576, 3211264, 103},  /* vgg16's 224x224 one: 5 tiles */
		{64, 72, 3211264, 128},   /* its first layer's: one tile, at most 128 slices */
		{9, 32, 43264, 84},       /* MNIST conv1 at batch 64: K / 512 */
		{40, 24, 1500, 2},
		{64, 64, 1000, 1},        /* K under two slices' worth */
		{4096, 4096, 65536, 1},   /* 2^24 outputs: enough tiles alone */
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		int got = lone_matmul(cases[i].m, cases[i].n, cases[i].k, ir_split_k);
		CHECK(got == cases[i].want, "split of %dx%dx%d: %d, want %d", cases[i].m, cases[i].n, cases[i].k, got,
		      cases[i].want);
	}
}

/* The most slices a lone matmul's workspace holds (ir_split_k_most): twice the split, at most K /
 * 512 and 128, none past 1 where it does not split. */
static void split_most(void)
{
	static const struct {
		int m, n, k, want;
	} cases[] = {
		{512, 4608, 12544, 8},   /* split 4 */
		{256, 2304, 200704, 30}, /* split 15 */
		{64, 576, 3211264, 128}, /* split 103, at most 128 */
		{9, 32, 43264, 84},      /* split 84 = K / 512 already */
		{64, 64, 1000, 1},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		int got = lone_matmul(cases[i].m, cases[i].n, cases[i].k, ir_split_k_most);
		CHECK(got == cases[i].want, "most slices of %dx%dx%d: %d, want %d", cases[i].m, cases[i].n, cases[i].k, got,
		      cases[i].want);
	}
}

/* A split m x n x k matmul on sm_90 in tf32 (wgmma) under each of its candidate tilings: a tile of
 * 128 x 256 outputs takes twice ir_split_k's slices (codegen/gemm_gpu.c widened) where the
 * workspace holds them (ir_split_k_most), so that its partials kernel makes as many work-groups as
 * 128 x 128 tiles do; the others, and every tile where it does not, take ir_split_k's. Compiled
 * only: the slices' numerics are the other cases'. Counts the wide tilings that took twice the
 * slices (*widened) and those that could not (*kept). */
static void wide_tiles(int m, int n, int k, int want_split, int *widened, int *kept)
{
	CgHarness *h = cf_matmul_case("wide ", m, n, k, 0, 1, false, false);
	h->g->train.precision = PREC_TF32;
	int split = 0, most = 0, narrow = 0;
	if (!cf_plan(h)) {
		tu_failures++;
		ch_free(h);
		return;
	}
	for (int i = 0; i < h->g->nnodes; i++)
		if (h->g->node[i].op == OP_matmul) {
			split = ir_split_k(h->g, &h->g->node[i]);
			most = ir_split_k_most(h->g, &h->g->node[i]);
		}
	CHECK(split == want_split, "%s %dx%dx%d: split %d, want %d", h->name, m, n, k, split, want_split);
	cg_tuning_reset_seen();
	CgOutput out;
	if (cf_compile(h, "sm_90", &out))
		cg_output_free(&out);
	int seen = cg_tuning_candidates_seen();
	for (int c = 0; c < seen; c++) {
		cg_tuning_candidate(c);
		bool ok = cf_compile(h, "sm_90", &out);
		cg_tuning_candidate(-1);
		if (!ok) {
			tu_failures++;
			continue;
		}
		for (int i = 0; i < out.nkernels; i++) {
			const CgTileConfig *t = &out.kernels[i].tiles.cfg;
			if (!is_partials(&out, i))
				continue;
			int64_t outputs = (int64_t)t->tm * t->tn, tiles = (m + t->tm - 1) / t->tm * ((n + t->tn - 1) / t->tn);
			bool wide = outputs > 128 * 128, doubled = wide && 2 * split <= most;
			/* each slice a whole number of k-blocks: K 9216 in 16 takes 15 of 640 on kb 128 */
			int64_t asked = doubled ? 2 * split : split, per = (k + asked - 1) / asked;
			per = (per + t->kb - 1) / t->kb * t->kb;
			int64_t slices = (k + per - 1) / per;
			CHECK(out.kernels[i].grid == tiles * slices, "%s %dx%dx%d: candidate %d (%dx%d): %lld work-groups, want %lld",
			      h->name, m, n, k, c, (int)t->tm, (int)t->tn, (long long)out.kernels[i].grid,
			      (long long)(tiles * slices));
			*widened += doubled;
			*kept += wide && !doubled;
			narrow += !wide;
		}
		cg_output_free(&out);
	}
	CHECK(narrow > 0, "%s %dx%dx%d: no split tiling of 128 x 128 outputs or fewer among %d candidates", h->name, m, n, k,
	      seen);
	ch_free(h);
}

int main(void)
{
	ch_start("test_cg_splitk");
	split_rule();
	split_most();
	tiles();
	/* K 131072: 128 slices at most, twice 64; K 9216 (alexnet's first dense layer): 18 at most,
	 * under twice 16 */
	int widened = 0, kept = 0;
	wide_tiles(256, 512, 131072, 64, &widened, &kept);
	CHECK(widened > 0 && kept == 0, "256x512x131072: %d wide tilings widened, %d kept", widened, kept);
	widened = kept = 0;
	wide_tiles(128, 4096, 9216, 16, &widened, &kept);
	CHECK(widened == 0 && kept > 0, "128x4096x9216: %d wide tilings widened, %d kept", widened, kept);
	/* MNIST conv1 (1 -> 32 channels, 28x28) and conv2 (32 -> 64, 26x26) at batches 3 and 2 */
	grad_weight(3, 1, 28, 32, false, false);
	grad_weight(2, 32, 26, 64, false, false);
	grad_weight(3, 1, 28, 32, true, false);
	grad_weight(2, 32, 26, 64, true, true);
	for (int t = 0; t < 4; t++)
		matmul(24, 40, 1500, t & 1, t >> 1, false, false);
	matmul(10, 7, 3000, 1, 0, false, false); /* sizes no multiple of anything */
	matmul(24, 40, 1500, 0, 1, true, false);
	matmul(33, 70, 2600, 1, 1, true, true);
	weight_gemm(16, 5, 7, 1700);
	return tu_finish("test_cg_splitk");
}
