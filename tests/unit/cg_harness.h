/* cg_harness.h: runs compiled kernels against the float64 reference interpreter (header only).
 *
 *     ch_start("test_cg_foo");                  // seed from time or NETC_TEST_SEED, printed
 *     CgHarness *h = ch_new("relu 7x13");
 *     int x = ch_param(h, DT_F32, "7,13");      // random non-zero values
 *     ch_op(h, OP_relu, NULL, x);
 *     failures += ch_run(h);                    // compile, run, compare every kernel's node
 *     ch_free(h);
 *
 * ch_run marks every non-leaf node PROG_TRAIN, plans memory, compiles for the host, loads the
 * shared object, fills the arena (unwritten bytes are NaN patterns), runs each kernel in node
 * order over its grid in two pieces ([0, g/2) then [g/2, g)), snapshots its node, and compares
 * with ir_interp: max |got - want| / max |want| <= dtype_tolerance (or h->tol when set). NaN and
 * infinite reference values must be matched exactly. ch_ir gives the optimized IR instead, for
 * tests of what the code looks like (vectorized loops). */
#ifndef NETC_CG_HARNESS_H
#define NETC_CG_HARNESS_H

#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codegen/cg.h"
#include "passes/passes.h"
#include "runtime/host_kernel.h"

#define CH_MAX_NODES 256
/* header-only: a test uses what it needs */
#define CH_API static __attribute__((unused))

/* Host kernel fn (as dlsym gives it) of CgKernel ker over work-groups [wg_begin, wg_end), with its
 * buffer and size arguments. */
CH_API void ch_call(void *fn, uint8_t *arena, const CgKernel *ker, int64_t wg_begin, int64_t wg_end)
{
	rt_host_kernel_call(fn, arena, wg_begin, wg_end, ker->nargs, ker->args, ker->sizes);
}

typedef struct {
	Graph *g;
	char name[128];
	double lo[CH_MAX_NODES], hi[CH_MAX_NODES]; /* leaf fill ranges; lo == hi: signed default */
	int classes[CH_MAX_NODES];                 /* i32 leaves: values in [0, classes) */
	double *fixed[CH_MAX_NODES];               /* leaf values given by the test (ch_set) */
	double *want[CH_MAX_NODES];                /* reference values, every node */
	double *got[CH_MAX_NODES];                 /* compiled values, nodes with a kernel */
	double tol;                                /* > 0: overrides dtype_tolerance */
	double scale;                              /* > 0: errors are relative to at least this (an
						      output of a few products that cancel has no
						      scale of its own) */
} CgHarness;

static uint64_t ch_state __attribute__((unused));
static unsigned long long ch_seed __attribute__((unused));

CH_API void ch_start(const char *test)
{
	const char *env = getenv("NETC_TEST_SEED");
	ch_seed = env ? strtoull(env, NULL, 10) : (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 16);
	ch_state = ch_seed * 0x9E3779B97F4A7C15ull + 1;
	printf("%s: seed %llu (NETC_TEST_SEED=%llu replays it)\n", test, ch_seed, ch_seed);
}

CH_API uint64_t ch_next(void)
{
	/* splitmix64 */
	uint64_t z = (ch_state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

CH_API double ch_uniform(double lo, double hi)
{
	return lo + (hi - lo) * (double)(ch_next() >> 11) * (1.0 / 9007199254740992.0);
}

CH_API CgHarness *ch_new(const char *name)
{
	CgHarness *h = calloc(1, sizeof *h);
	if (!h)
		abort();
	h->g = ir_graph_new("cg_test");
	snprintf(h->name, sizeof h->name, "%s", name);
	return h;
}

CH_API void ch_free(CgHarness *h)
{
	for (int i = 0; i < CH_MAX_NODES; i++) {
		free(h->fixed[i]);
		free(h->want[i]);
		free(h->got[i]);
	}
	ir_graph_free(h->g);
	free(h);
}

CH_API void ch_check_id(const CgHarness *h, int id)
{
	if (id < 0 || id >= CH_MAX_NODES) {
		fprintf(stderr, "%s: harness supports %d nodes\n", h->name, CH_MAX_NODES);
		abort();
	}
}

/* "4,1,5" -> shape; "" is a scalar */
CH_API Shape ch_shape(const char *dims)
{
	Shape s = {0};
	const char *p = dims;
	while (*p && s.rank < IR_MAX_DIMS) {
		char *end;
		long long v = strtoll(p, &end, 10);
		if (end == p)
			break;
		s.dim[s.rank++] = v;
		p = *end == ',' ? end + 1 : end;
	}
	return s;
}

CH_API int ch_leaf(CgHarness *h, OpId op, DType dt, const char *dims, double slot)
{
	double attr[IR_MAX_ATTRS] = {slot};
	int id = ir_leaf(h->g, op, NULL, ch_shape(dims), dt, attr);
	ch_check_id(h, id);
	return id;
}

/* A param of random non-zero values in +-[0.1, 1]. */
CH_API int ch_param(CgHarness *h, DType dt, const char *dims) { return ch_leaf(h, OP_param, dt, dims, INIT_UNIFORM); }

/* Fill leaf id uniformly from [lo, hi) instead (keep 0 out of the range). */
CH_API void ch_range(CgHarness *h, int id, double lo, double hi)
{
	h->lo[id] = lo;
	h->hi[id] = hi;
}

/* Exact leaf values (numel of them). */
CH_API void ch_set(CgHarness *h, int id, const double *v)
{
	int64_t n = shape_numel(&h->g->node[id].shape);
	free(h->fixed[id]);
	h->fixed[id] = malloc((size_t)n * sizeof(double));
	if (!h->fixed[id])
		abort();
	memcpy(h->fixed[id], v, (size_t)n * sizeof(double));
}

/* i32 labels [n] in [0, classes): the graph's label input. */
CH_API int ch_labels(CgHarness *h, int64_t n, int classes)
{
	char dims[32];
	snprintf(dims, sizeof dims, "%lld", (long long)n);
	int id = ch_leaf(h, OP_input, DT_I32, dims, 0);
	h->classes[id] = classes;
	h->g->label = id;
	return id;
}

/* The runtime rng i32[3] (seed, step, first row), all random. */
CH_API int ch_rng(CgHarness *h)
{
	int id = ch_leaf(h, OP_runtime, DT_I32, "3", RUNTIME_RNG);
	h->g->rng = id;
	return id;
}

/* Adds op over the given input ids (as many as the op takes); attr may be NULL. */
CH_API int ch_op(CgHarness *h, OpId op, const double *attr, ...)
{
	int in[IR_MAX_INPUTS] = {0};
	va_list ap;
	va_start(ap, attr);
	for (int i = 0; i < ir_ops[op].nin; i++)
		in[i] = va_arg(ap, int);
	va_end(ap);
	char err[256];
	int id = ir_add(h->g, op, in, attr, NULL, err, sizeof err);
	if (id < 0) {
		fprintf(stderr, "%s: bad test graph: %s\n", h->name, err);
		abort();
	}
	ch_check_id(h, id);
	return id;
}

CH_API uint16_t ch_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)(u >> 16 | 0x40);
	return (uint16_t)((u + 0x7fffu + (u >> 16 & 1)) >> 16);
}

CH_API float ch_from_bf16(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

CH_API void ch_write(void *p, DType dt, double v)
{
	switch (dt) {
	case DT_F32: *(float *)p = (float)v; break;
	case DT_F16: *(_Float16 *)p = (_Float16)(float)v; break;
	case DT_BF16: *(uint16_t *)p = ch_to_bf16((float)v); break;
	case DT_F64: *(double *)p = v; break;
	case DT_I32: *(int32_t *)p = (int32_t)v; break;
	default: abort();
	}
}

CH_API double ch_read(const void *p, DType dt)
{
	switch (dt) {
	case DT_F32: return *(const float *)p;
	case DT_F16: return (double)*(const _Float16 *)p;
	case DT_BF16: return ch_from_bf16(*(const uint16_t *)p);
	case DT_F64: return *(const double *)p;
	case DT_I32: return *(const int32_t *)p;
	default: abort();
	}
}

CH_API double ch_leaf_value(const CgHarness *h, const Node *n, int64_t i)
{
	if (n->op == OP_const)
		return n->attr[0];
	if (h->fixed[n->id])
		return h->fixed[n->id][i];
	if (n->dtype == DT_I32)
		return h->classes[n->id] > 0 ? (double)(ch_next() % (uint64_t)h->classes[n->id]) : (double)(int32_t)ch_next();
	if (h->lo[n->id] != h->hi[n->id])
		return ch_uniform(h->lo[n->id], h->hi[n->id]);
	double v = ch_uniform(0.1, 1.0);
	return ch_next() & 1 ? v : -v;
}

/* Random leaf values into want[] (rounded to the leaf's dtype) and the arena. */
CH_API void ch_fill_leaves(CgHarness *h, uint8_t *arena)
{
	for (int id = 0; id < h->g->nnodes; id++) {
		const Node *n = &h->g->node[id];
		if (!ir_is_leaf(n->op))
			continue;
		size_t size = dtype_size(n->dtype);
		for (int64_t i = 0; i < shape_numel(&n->shape); i++) {
			uint8_t tmp[8];
			uint8_t *p = n->offset >= 0 ? arena + n->offset + i * (int64_t)size : tmp;
			ch_write(p, n->dtype, ch_leaf_value(h, n, i));
			h->want[id][i] = ch_read(p, n->dtype);
		}
	}
}

/* v as the dtype stores it (a reference beyond FLT_MAX is inf in f32) */
CH_API double ch_round(double v, DType dt)
{
	uint8_t tmp[8];
	ch_write(tmp, dt, v);
	return ch_read(tmp, dt);
}

/* Error of got against want rounded to dt, relative to the largest |want| or to scale if larger;
 * NaN and infinities must match exactly. */
CH_API double ch_error_scaled(const double *got, const double *want, int64_t m, DType dt, int64_t *worst, double scale)
{
	double max_ref = 0, max_diff = 0;
	*worst = 0;
	for (int64_t i = 0; i < m; i++) {
		double w = ch_round(want[i], dt);
		if (!isfinite(w)) {
			bool same = isnan(w) ? isnan(got[i]) : got[i] == w;
			if (!same) {
				*worst = i;
				return INFINITY;
			}
			continue;
		}
		max_ref = fmax(max_ref, fabs(w));
		double d = fabs(got[i] - w);
		if (!(d <= max_diff)) {
			max_diff = isnan(d) ? INFINITY : d;
			*worst = i;
		}
	}
	return max_diff / fmax(max_ref, fmax(scale, 1e-30));
}

/* Relative error of got against want rounded to dt (ch_error_scaled without a scale). */
CH_API double ch_error(const double *got, const double *want, int64_t m, DType dt, int64_t *worst)
{
	return ch_error_scaled(got, want, m, dt, worst, 0);
}

CH_API int ch_compare(CgHarness *h, const Node *n)
{
	int64_t m = shape_numel(&n->shape), worst;
	double err = ch_error_scaled(h->got[n->id], h->want[n->id], m, n->dtype, &worst, h->scale);
	double tol = h->tol > 0 ? h->tol : dtype_tolerance(n->dtype);
	if (err <= tol)
		return 0;
	char s[96];
	printf("FAIL %s: seed %llu node %d (%s) %s%s %s: error %.3g > %.3g (element %lld: got %.9g, want %.9g)\n",
	       h->name, ch_seed, n->id, n->name, ir_ops[n->op].name, shape_str(&n->shape, s, sizeof s),
	       dtype_name(n->dtype), err, tol, (long long)worst, h->got[n->id][worst], h->want[n->id][worst]);
	return 1;
}

CH_API void *ch_load(CgHarness *h, const CgOutput *out)
{
	char path[] = "/tmp/netc-cg-test-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	bool ok = write(fd, out->code, out->size) == (ssize_t)out->size;
	close(fd);
	void *so = ok ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
	if (!so)
		printf("FAIL %s: cannot load the code object: %s\n", h->name, ok ? dlerror() : "write failed");
	unlink(path);
	return so;
}

/* Runs the kernels in node order, snapshots each group's node after its last kernel and compares it. */
CH_API int ch_execute(CgHarness *h, const CgOutput *out, void *so, uint8_t *arena)
{
	int failures = 0;
	for (int k = 0; k < out->nkernels; k++) {
		const CgKernel *ker = &out->kernels[k];
		const Node *n = &h->g->node[ker->node];
		void *fn = dlsym(so, ker->symbol);
		if (!fn) {
			printf("FAIL %s: kernel %s missing from the code object\n", h->name, ker->name);
			failures++;
			continue;
		}
		ch_call(fn, arena, ker, 0, ker->grid / 2);
		ch_call(fn, arena, ker, ker->grid / 2, ker->grid);
		/* a group of several kernels (partials, then their sum) is compared after its last */
		if (k + 1 < out->nkernels && out->kernels[k + 1].node == ker->node)
			continue;
		int64_t m = shape_numel(&n->shape);
		size_t size = dtype_size(n->dtype);
		free(h->got[n->id]); /* a harness run again (test_cg_tuning's candidates) */
		h->got[n->id] = malloc((size_t)(m ? m : 1) * sizeof(double));
		if (!h->got[n->id])
			abort();
		for (int64_t i = 0; i < m; i++)
			h->got[n->id][i] = ch_read(arena + n->offset + i * (int64_t)size, n->dtype);
		failures += ch_compare(h, n);
	}
	return failures;
}

/* Puts every computed node in the training program and plans memory. */
CH_API bool ch_plan(CgHarness *h)
{
	Graph *g = h->g;
	for (int i = 0; i < g->nnodes; i++)
		if (!ir_is_leaf(g->node[i].op))
			g->node[i].programs = PROG_TRAIN;
	Diag d;
	diag_init(&d, h->name, NULL);
	PassOptions po = {0};
	if (!pass_plan_memory(g, &po, &d)) {
		printf("FAIL %s: plan-memory failed\n", h->name);
		return false;
	}
	return true;
}

/* Marks the program, plans memory and compiles for the host. */
CH_API bool ch_compile(CgHarness *h, bool want_ir, CgOutput *out)
{
	Graph *g = h->g;
	if (!ch_plan(h))
		return false;
	CgTarget t;
	char err[1024] = "no host target";
	if (!cg_target_host(&t) || !cg_compile(g, &t, want_ir, out, err, sizeof err)) {
		printf("FAIL %s: cg_compile: %s\n", h->name, err);
		return false;
	}
	return true;
}

/* The optimized LLVM IR of the graph's kernels (caller frees), or NULL. */
CH_API char *ch_ir(CgHarness *h)
{
	CgOutput out;
	if (!ch_compile(h, true, &out))
		return NULL;
	char *ir = out.ir;
	out.ir = NULL;
	cg_output_free(&out);
	return ir;
}

/* The expected values of every node (the float64 interpreter) and an arena holding the leaves,
 * every other byte NaN so a value a kernel forgets to write shows. The caller frees the arena. */
CH_API uint8_t *ch_prepare(CgHarness *h)
{
	Graph *g = h->g;
	for (int i = 0; i < g->nnodes; i++) {
		int64_t m = shape_numel(&g->node[i].shape);
		free(h->want[i]);
		h->want[i] = calloc((size_t)(m ? m : 1), sizeof(double));
		if (!h->want[i])
			abort();
	}
	size_t bytes = ((size_t)g->arena_bytes + 63) / 64 * 64 + 64;
	uint8_t *arena = aligned_alloc(64, bytes);
	if (!arena)
		abort();
	memset(arena, 0xff, bytes);
	ch_fill_leaves(h, arena);
	ir_interp(g, PROG_TRAIN, h->want);
	return arena;
}

CH_API int ch_run(CgHarness *h)
{
	CgOutput out;
	if (!ch_compile(h, false, &out))
		return 1;
	uint8_t *arena = ch_prepare(h);
	int failures = 1;
	void *so = ch_load(h, &out);
	if (so) {
		failures = ch_execute(h, &out, so, arena);
		dlclose(so);
	}
	free(arena);
	cg_output_free(&out);
	return failures;
}

#endif
