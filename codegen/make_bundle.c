/* make_bundle.c: a planned graph and its compiled code objects become a bundle, the format the
 * runtime reads. Every node with storage is listed as a buffer (by node id) so tools such as
 * `netc check` can read any value after a step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cg_util.h"
#include "codegen/make_bundle.h"
#include "codegen/target.h"
#include "codegen/targets.h"
#include "ir/ops.h"
#include "passes/passes.h"

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p)
		abort();
	return p;
}

static int32_t role_of(const Graph *g, const Node *n, bool final_gradient)
{
	if (final_gradient && (n->programs & PROG_TRAIN))
		return BUF_GRAD;
	if (n->id == g->image)
		return BUF_IMAGE;
	if (n->id == g->label)
		return BUF_LABEL;
	switch (n->op) {
	case OP_input:
		return BUF_INPUT;
	case OP_param:
		return BUF_PARAM;
	case OP_state:
		return BUF_STATE;
	case OP_assign:
		return BUF_ALIAS;
	case OP_runtime:
		switch (ir_runtime_slot(n)) {
		case RUNTIME_LR: return BUF_LR;
		case RUNTIME_RNG: return BUF_RNG;
		default: return BUF_LOSS_SCALE;
		}
	default:
		return BUF_ACTIVATION;
	}
}

static void fill_buffer(const Graph *g, const Node *n, bool final_gradient, BundleBuffer *b)
{
	snprintf(b->name, sizeof b->name, "%s", n->name);
	b->node = n->id;
	b->role = role_of(g, n, final_gradient);
	b->dtype = n->dtype;
	b->rank = n->shape.rank;
	bool permuted = ir_stored_permuted(n);
	for (int d = 0; d < n->shape.rank; d++) {
		b->dim[d] = n->shape.dim[d];
		b->perm[d] = permuted ? n->perm[d] : d;
	}
	b->offset = n->offset;
	b->bytes = shape_numel(&n->shape) * (int64_t)dtype_size(n->dtype);
	b->programs = n->programs;
	b->group = n->group;
	if (n->op == OP_param || n->op == OP_state)
		b->init = (int32_t)ir_leaf_init(n);
	if (n->op == OP_param)
		b->bound = ir_param_bound(n);
}

_Static_assert(BUNDLE_BUFFER_ARGS == CG_BUFFER_ARGS, "a bundle holds every buffer argument");
_Static_assert(BUNDLE_SIZE_ARGS == CG_SIZE_ARGS, "a bundle holds every size argument");

static BundleKernel *kernel_list(const Graph *g, const CgOutput *code, unsigned prog, int32_t *count)
{
	BundleKernel *list = xcalloc(code->nkernels, sizeof *list);
	int n = 0;
	for (int i = 0; i < code->nkernels; i++) {
		const CgKernel *k = &code->kernels[i];
		if (!(g->node[k->node].programs & prog))
			continue;
		snprintf(list[n].name, sizeof list[n].name, "%s", k->name);
		snprintf(list[n].symbol, sizeof list[n].symbol, "%s", k->symbol);
		list[n].node = k->node;
		list[n].grid = k->grid;
		list[n].block = k->block > 0 ? k->block : 1;
		list[n].shared = k->shared;
		list[n].nargs = k->nargs;
		memcpy(list[n].args, k->args, sizeof list[n].args);
		memcpy(list[n].sizes, k->sizes, sizeof list[n].sizes);
		n++;
	}
	*count = n;
	return list;
}

/* The tensor maps of the code's kernels, each slot once (a kernel launched in several programs is
 * one kernel); two different maps in one slot would be a compiler bug. */
static void collect_tensor_maps(const CgOutput *out, BundleCode *c)
{
	for (int i = 0; i < out->nkernels; i++)
		for (int j = 0; j < out->kernels[i].ntmaps; j++) {
			const BundleTensorMap *m = &out->kernels[i].tmaps[j];
			int k = 0;
			while (k < c->ntmaps && c->tmaps[k].at != m->at)
				k++;
			if (k < c->ntmaps && memcmp(&c->tmaps[k], m, sizeof *m) != 0)
				CG_FAIL("two tensor maps in the arena slot at %lld", (long long)m->at);
			if (k < c->ntmaps)
				continue;
			c->tmaps = realloc(c->tmaps, (size_t)(c->ntmaps + 1) * sizeof *c->tmaps);
			if (!c->tmaps)
				CG_FAIL("out of memory");
			c->tmaps[c->ntmaps++] = *m;
		}
}

static void fill_code(const Graph *g, const CgTarget *t, const CgOutput *out, BundleCode *c)
{
	snprintf(c->target, sizeof c->target, "%s", t->name);
	snprintf(c->arch, sizeof c->arch, "%s", t->arch[0] ? t->arch : t->name);
	const CgTargetInfo *info = cg_target_info(c->arch);
	if (info && info->peak_gflops > 0) {
		const char *unit;
		c->peak_gflops = cg_target_peak_gflops(t, g->train.precision, &unit);
		c->peak_gbs = info->peak_gbs;
		snprintf(c->peak_of, sizeof c->peak_of, "%s, %s", info->peak_of, unit);
	}
	c->kind = t->ops->code_kind;
	c->wave = t->wave; /* 0 on the host */
	collect_tensor_maps(out, c);
	c->train_kernels = kernel_list(g, out, PROG_TRAIN, &c->ntrain);
	c->eval_kernels = kernel_list(g, out, PROG_EVAL, &c->neval);
	c->accum_kernels = kernel_list(g, out, PROG_ACCUM, &c->naccum);
	/* the CUDA driver reads PTX as a C string: keep a terminating NUL */
	bool nul = c->kind == CODE_PTX && (out->size == 0 || out->code[out->size - 1] != 0);
	c->size = out->size + nul;
	c->data = xcalloc(c->size, 1);
	if (out->size)
		memcpy(c->data, out->code, out->size);
}

/* The data inputs in declaration order (the graph's input leaves in node order), image and label
 * first as the bundle's header names them. */
static void list_inputs(const Graph *g, const int *index, Bundle *b)
{
	b->inputs = xcalloc((size_t)g->nnodes, sizeof *b->inputs);
	if (b->image >= 0)
		b->inputs[b->ninputs++] = b->image;
	if (b->label >= 0)
		b->inputs[b->ninputs++] = b->label;
	for (int i = 0; i < g->nnodes; i++)
		if (g->node[i].op == OP_input && i != g->image && i != g->label && index[i] >= 0)
			b->inputs[b->ninputs++] = index[i];
}

/* op appended to a "+"-joined list, "..." once it no longer fits */
static void append(char *buf, size_t len, const char *op)
{
	size_t at = strlen(buf);
	if (at + strlen(op) + 2 < len)
		snprintf(buf + at, len - at, "%s%s", at ? "+" : "", op);
	else if (at + 4 < len && (at < 3 || strcmp(buf + at - 3, "...") != 0))
		snprintf(buf + at, len - at, "...");
}

/* The training program's groups with their FLOPs, bytes and ops, in leader order (a group's
 * leader is its last member: Node.group). */
static void fill_groups(const Graph *g, Bundle *b)
{
	int64_t *bytes = xcalloc((size_t)g->nnodes + 1, sizeof *bytes);
	int *at = xcalloc((size_t)g->nnodes, sizeof *at);
	passes_traffic_by_group(g, PROG_TRAIN, bytes);
	b->groups = xcalloc((size_t)g->nnodes, sizeof *b->groups);
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->node[i];
		at[i] = -1;
		if ((n->programs & PROG_TRAIN) && !ir_is_leaf(n->op) && n->group == i) {
			at[i] = b->ngroups;
			b->groups[b->ngroups++] = (BundleGroup){.node = i, .bytes = bytes[i]};
		}
	}
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->node[i];
		if (!(n->programs & PROG_TRAIN) || ir_is_leaf(n->op) || n->group < 0 || at[n->group] < 0)
			continue;
		BundleGroup *x = &b->groups[at[n->group]];
		if (ir_ops[n->op].flops)
			x->flops += ir_ops[n->op].flops(g, n);
		append(x->members, sizeof x->members, ir_ops[n->op].name);
	}
	free(at);
	free(bytes);
}

static void fill_plan(const Graph *g, Bundle *b)
{
	snprintf(b->model, sizeof b->model, "%s", g->name);
	b->batch = g->batch;
	b->arena_bytes = g->arena_bytes;
	b->train = g->train;
	b->flops_per_step = ir_flops(g, PROG_TRAIN);

	int *index = xcalloc(g->nnodes, sizeof *index), *grad = ir_final_gradients(g);
	bool *final = xcalloc(g->nnodes, sizeof *final);
	for (int i = 0; i < g->nnodes; i++)
		if (grad[i] >= 0)
			final[grad[i]] = true;
	b->buf = xcalloc(g->nnodes, sizeof *b->buf);
	for (int i = 0; i < g->nnodes; i++) {
		index[i] = -1;
		if (g->node[i].offset < 0)
			continue;
		index[i] = b->nbuf;
		fill_buffer(g, &g->node[i], final[i], &b->buf[b->nbuf++]);
	}
	b->update_node = ir_update_split(g);
	free(grad);
	free(final);
	b->image = g->image >= 0 ? index[g->image] : -1;
	b->label = g->label >= 0 ? index[g->label] : -1;
	b->loss = g->loss >= 0 ? index[g->loss] : -1;
	b->output = g->output >= 0 ? index[g->output] : -1;
	b->eval_loss = g->eval_loss >= 0 ? index[g->eval_loss] : -1;
	b->eval_output = g->eval_output >= 0 ? index[g->eval_output] : -1;
	b->lr = g->lr >= 0 ? index[g->lr] : -1;
	b->rng = g->rng >= 0 ? index[g->rng] : -1;
	b->loss_scale = g->loss_scale >= 0 ? index[g->loss_scale] : -1;
	b->finite = g->finite >= 0 ? index[g->finite] : -1;
	list_inputs(g, index, b);
	free(index);
	fill_groups(g, b);
}

void cg_make_bundle(const Graph *g, const CgTarget *targets, const CgOutput *code, int n, Bundle *b)
{
	memset(b, 0, sizeof *b);
	fill_plan(g, b);
	b->ncode = n;
	b->code = xcalloc(n, sizeof *b->code);
	for (int i = 0; i < n; i++) {
		fill_code(g, &targets[i], &code[i], &b->code[i]);
		/* the tensor maps' slots lie past the plan's arena */
		for (int j = 0; j < b->code[i].ntmaps; j++)
			if (b->arena_bytes < b->code[i].tmaps[j].at + BUNDLE_TMAP_BYTES)
				b->arena_bytes = b->code[i].tmaps[j].at + BUNDLE_TMAP_BYTES;
	}
}
