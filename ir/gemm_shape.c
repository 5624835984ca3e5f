/* gemm_shape.c: the matrix product inside each GEMM-shaped op, and when its K is worth splitting. */
#include "ir/ops.h"

bool ir_gemm_shape(const Graph *g, const Node *n, int64_t *batch, int64_t *m, int64_t *nn, int64_t *k)
{
	const Shape *out = &n->shape;
	const Shape *a = n->nin > 0 ? &g->node[n->in[0]].shape : NULL;
	const Shape *b = n->nin > 1 ? &g->node[n->in[1]].shape : NULL;
	switch (n->op) {
	case OP_conv2d: /* per image: Cout x (Ho*Wo), K = Cin*KH*KW */
		*batch = out->dim[0], *m = out->dim[1], *nn = out->dim[2] * out->dim[3];
		*k = b->dim[1] * b->dim[2] * b->dim[3];
		return true;
	case OP_conv2d_grad_input: /* per image: Cin x (H*W), K = Cout*KH*KW; in = (dy, w) */
		*batch = out->dim[0], *m = out->dim[1], *nn = out->dim[2] * out->dim[3];
		*k = b->dim[0] * b->dim[2] * b->dim[3];
		return true;
	case OP_conv2d_grad_weight: /* Cout x (Cin*KH*KW), K = N*Ho*Wo; in = (dy, x) */
		*batch = 1, *m = out->dim[0], *nn = out->dim[1] * out->dim[2] * out->dim[3];
		*k = a->dim[0] * a->dim[2] * a->dim[3];
		return true;
	case OP_winograd_gemm: /* per transform point: K x P, K = C; in = (U, V) */
		*batch = out->dim[0], *m = out->dim[1], *nn = out->dim[2], *k = b->dim[1];
		return true;
	case OP_winograd_weight_gemm: /* per transform point: K x C, K = the tiles; in = (dM, V) */
		*batch = out->dim[0], *m = out->dim[1], *nn = out->dim[2], *k = a->dim[2];
		return true;
	case OP_matmul:
		*batch = 1, *m = out->dim[0], *nn = out->dim[1];
		*k = ir_matmul_flags(n).ta ? a->dim[0] : a->dim[1];
		return true;
	default:
		return false;
	}
}

#define SPLIT_MAX 128
#define SPLIT_MIN_K 512    /* each slice keeps at least this much of K */
/* Outputs at least this large fill a GPU with tiles on their own. The weight gradients of 224x224
 * convolutions (300k-660k outputs, K up to 93312) are far below it: split, they ran 2x faster on an
 * H200 (alexnet_bench conv2: 6.87 -> 3.51 ms, 2026-11-21). */
#define SPLIT_MAX_MN (1 << 24)
/* K is split until the output's 128 x 128 tiles and their slices make about this many work-groups
 * (four per SM of an H100), no further: each slice writes a float32 copy of the output that a
 * second kernel reads back. vgg16's 512 x 4608 weight gradients had been split 32 ways (302 MB of
 * partials each), while its 64 x 576 one (five such tiles, K = 3.2M) ran 1.81 ms split 32 ways and
 * 1.24 ms split 128 ways on an H100. Of 256, 512 and 1024 work-groups, 512 gave the fastest steps
 * over vgg16, alexnet, alexnet_bench, resnet50 and googlenet (docs/performance.md, 2026-12-06). */
#define SPLIT_GROUPS 512
/* Tiles of more outputs than IR_SPLIT_TILE x IR_SPLIT_TILE make fewer work-groups; they may take up
 * to this many times ir_split_k's slices (ir_split_k_most), which the workspace holds. */
#define SPLIT_WIDE 2

int ir_split_k(const Graph *g, const Node *n)
{
	int64_t batch, m, nn, k;
	if (n->op == OP_sum || n->op == OP_mean)
		return ir_reduce_slices(g, n);
	/* a batch of GEMMs is split only when it is the transform points of a Winograd weight
	 * gradient, whose K is every tile of the batch; per-image convolutions have enough tiles */
	if (!ir_gemm_shape(g, n, &batch, &m, &nn, &k) || (batch != 1 && n->op != OP_winograd_weight_gemm) ||
	    batch * m * nn >= SPLIT_MAX_MN)
		return 1;
	int64_t tiles = batch * ((m + IR_SPLIT_TILE - 1) / IR_SPLIT_TILE) * ((nn + IR_SPLIT_TILE - 1) / IR_SPLIT_TILE);
	int64_t split = k / SPLIT_MIN_K, enough = (SPLIT_GROUPS + tiles - 1) / tiles;
	if (split > enough)
		split = enough;
	return split < 1 ? 1 : split > SPLIT_MAX ? SPLIT_MAX : (int)split;
}

int ir_split_k_most(const Graph *g, const Node *n)
{
	int64_t batch, m, nn, k;
	int split = ir_split_k(g, n);
	if (split < 2 || !ir_gemm_shape(g, n, &batch, &m, &nn, &k))
		return split;
	/* split <= K / SPLIT_MIN_K and SPLIT_MAX already, so neither bound takes it under split */
	int64_t most = (int64_t)split * SPLIT_WIDE, longest = k / SPLIT_MIN_K;
	most = most < longest ? most : longest;
	return most > SPLIT_MAX ? SPLIT_MAX : (int)most;
}
