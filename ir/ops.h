/* ops.h: the functions ir/ops.def names in its shape, reference, gradient and flops columns, the
 * trait flags of its traits column, the few helpers the ops files share (internal to ir/), and the
 * attribute decoders everyone uses. */
#ifndef NETC_OPS_H
#define NETC_OPS_H

#include "ir/ir.h"

/* ---- op traits (ir_ops[op].traits): facts passes ask of an op instead of listing ops ---- */
enum {
	/* One input, computed element by element at the same index: runs in any layout, so the
	 * layout pass keeps it in NHWC when its input is (passes/layout.c). */
	TRAIT_LAYOUT_FREE_UNARY = 1u << 0,
	/* Two inputs of one shape, or one a scalar, element by element: NHWC when its inputs are. */
	TRAIT_LAYOUT_FREE_BINARY = 1u << 1,
	/* Must compute in f32 under mixed precision: reductions, exponentials and the losses, whose
	 * range or accumulated rounding half types cannot hold (passes/mixed_precision.c). */
	TRAIT_COMPUTES_F32 = 1u << 2,
	/* Computes in the half type under mixed precision even from f32 inputs: the matrix ops the
	 * speed-up comes from. */
	TRAIT_HALF_COMPUTE = 1u << 3,
};

/* ---- attribute decoders ----
 * ops.def lists each op's attributes by name and position; these decoders, defined next to the op
 * in its ir/ops_*.c file, are the only readers of those positions outside the shape functions.
 * They read attributes a verified graph's shape functions have checked (and normalized). */

/* conv2d, conv2d_grad_input, conv2d_grad_weight */
typedef struct {
	int64_t sh, sw, ph, pw, dh, dw; /* stride, padding, dilation per spatial axis */
	int layout;                     /* LAYOUT_NCHW or LAYOUT_NHWC */
} ConvGeom;
ConvGeom ir_conv_geom(const Node *n);
/* max_pool2d, avg_pool2d and their gradients */
typedef struct {
	int64_t kh, kw, sh, sw, ph, pw; /* kernel, stride, padding per spatial axis */
	bool count_include_pad;         /* avg: padding counts in the divisor (false for max) */
	bool ceil_mode;                 /* the output size rounds up (Caffe) */
	int layout;                     /* LAYOUT_NCHW or LAYOUT_NHWC */
} PoolGeom;
PoolGeom ir_pool_geom(const Node *n);
/* max_pool2d's gradient (attr: max_pool2d's) as its rule emits it: max_pool2d_tiled_grad where the
 * windows tile x, else the window argmax of x, then dy gathered by it; returns dx */
int ir_max_pool2d_backward(Graph *g, int x, const double *attr, int dy);
/* matmul: whether each operand is read transposed */
typedef struct {
	bool ta, tb;
} MatmulFlags;
MatmulFlags ir_matmul_flags(const Node *n);
/* winograd_weight, winograd_input, winograd_output, winograd_output_grad, winograd_weight_grad
 * (ir/ops_winograd.c); each reads its own */
typedef struct {
	int m;             /* output tile m x m: 2 or 4 (ir/winograd.h) */
	int r;             /* filter r x r: 3 or 5 */
	bool flip;         /* weight: rotated 180 degrees, in and out channels swapped */
	int64_t ph, pw;    /* input: padding */
	int64_t n, oh, ow; /* input, output: batch (output only) and output plane */
} WinogradAttrs;
WinogradAttrs ir_winograd_attrs(const Node *n);
/* the tile (ir/winograd.h) its tile and kernel attributes name, NULL if none */
struct WinogradTile;
const struct WinogradTile *ir_winograd_tile(const Node *n);
/* winograd_gemm: whether it multiplies by U transposed (the input gradient's flipped filters) */
bool ir_winograd_transpose_u(const Node *n);
/* unfold and fold: the window and the image it slides over (fold: its output) */
typedef struct {
	int64_t kh, kw, sh, sw, ph, pw, dh, dw;
	int64_t n, c, h, w; /* the image [N, C, H, W] */
	int64_t oh, ow;     /* windows per column and row: L = oh ow */
} UnfoldGeom;
UnfoldGeom ir_unfold_geom(const Graph *g, const Node *n);
/* dwconv2d and its gradients: the same geometry (ir/ops_depthwise.c); a window has at most
 * IR_DEPTHWISE_MAX_TAPS positions (the emitters unroll them) */
#define IR_DEPTHWISE_MAX_TAPS 64
UnfoldGeom ir_depthwise_geom(const Graph *g, const Node *n);
/* one_hot: the number of classes. */
int64_t ir_one_hot_classes(const Node *n);
/* upsample_bilinear and its gradient: the whole scale factor, at most IR_UPSAMPLE_MAX_SCALE (the
 * gradient's emitter unrolls 3 scale + 2 taps per axis) */
#define IR_UPSAMPLE_MAX_SCALE 8
int64_t ir_upsample_scale(const Node *n);
/* Output row (or column) o of an axis of input size `size` upsampled by f reads rows i0 and i1
 * with weights 1 - l1 and l1 (PyTorch's align_corners=False source index). */
void ir_upsample_source(int64_t o, int64_t f, int64_t size, int64_t *i0, int64_t *i1, double *l1);
/* space_to_depth and depth_to_space (ir/ops_space_to_depth.c): the block b (2 .. IR_MAX_BLOCK),
 * the padding of the plane of blocks (under b) and the output plane */
#define IR_MAX_BLOCK 8
typedef struct {
	int64_t b, ph, pw, oh, ow;
} SpaceToDepth;
SpaceToDepth ir_space_to_depth(const Node *n);
/* lrn and lrn_grad (TensorFlow's parameters) */
typedef struct {
	int64_t depth_radius;
	double bias, alpha, beta;
	bool nhwc; /* layout=1 (the layout pass): channels the last axis, else the second */
} LrnParams;
LrnParams ir_lrn_params(const Node *n);
/* The axis of bias_add, softmax, log_softmax and their gradients, concat and slice. */
int ir_axis(const Node *n);
/* sum and mean: the bit mask of reduced axes. */
unsigned ir_reduce_axes(const Node *n);
/* The losses and their gradients: whether the loss is the mean over the batch (else the sum). */
bool ir_loss_is_mean(const Node *n);
/* slice: keeps [start, start + len) of axis. */
typedef struct {
	int axis;
	int64_t start, len;
} SliceRange;
SliceRange ir_slice_range(const Node *n);
/* transpose: output axis d is input axis perm[d], for d below the returned rank (the input's). */
int ir_transpose_perm(const Graph *g, const Node *n, int perm[IR_MAX_DIMS]);
/* dropout: the drop probability and the Philox stream. */
typedef struct {
	double p;
	uint32_t stream;
} DropoutParams;
DropoutParams ir_dropout_params(const Node *n);
/* Elements per row of the first axis (per example of a batch): what a shard starting at row r
 * offsets its dropout counters by, r times this (ir/philox.h). */
int64_t ir_dropout_row_elems(const Node *n);
/* leaky_relu and leaky_relu_grad: the slope below 0. */
double ir_leaky_relu_slope(const Node *n);
/* gelu and gelu_grad: whether the tanh approximation is used (approximate nonzero; else the
 * exact erf form). */
bool ir_gelu_is_tanh(const Node *n);
/* pow: the exponent. */
double ir_pow_exponent(const Node *n);
/* const: the value. */
double ir_const_value(const Node *n);
/* param and state: the InitKind their storage starts from; param: its uniform bound. */
int ir_leaf_init(const Node *n);
double ir_param_bound(const Node *n);
/* runtime: the RuntimeSlot the runtime writes before each step. */
int ir_runtime_slot(const Node *n);

/* ---- helpers shared by ir/ops_*.c (ir/ops_elemwise.c) ---- */

static inline const Node *op_in(const Graph *g, const Node *n, int i) { return &g->node[n->in[i]]; }

/* Writes "op: message" into err and returns false, so shape functions can `return op_fail(...)`. */
bool op_fail(const Node *n, char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Reads attribute i as an integer in [lo, hi]; false with a message naming the attribute otherwise.
 * A hi of OP_ATTR_MAX or IR_MAX_NUMEL is a size's bound, named only to a value above it: OP_ATTR_MAX for
 * windows, strides and padding, IR_MAX_NUMEL (the tensor cap) for sizes taken from tensors (a
 * gradient's input size, a reshape's dims). */
#define OP_ATTR_MAX INT32_MAX
bool op_attr_int(const Node *n, int i, int64_t lo, int64_t hi, int64_t *v, char *err, size_t errlen);
/* Normalizes attribute i, an axis of a rank-`rank` tensor given as -rank..rank-1, to 0..rank-1 in
 * place, so later phases see one spelling. */
bool op_attr_axis(Node *n, int i, int rank, char *err, size_t errlen);
/* Fails unless input i has a float dtype. */
bool op_need_float(const Node *n, const Graph *g, int i, char *err, size_t errlen);
/* Both inputs float of one dtype, which becomes n's. A const is a weakly typed scalar (as a
 * Python number in PyTorch): it takes the other side's dtype, so rules can scale f16 tensors by
 * ir_const values. */
bool op_binary_dtype(Node *n, const Graph *g, char *err, size_t errlen);
/* "f32[64, 10]" */
const char *op_type_str(const Node *v, char *buf, size_t len);
/* Attributes (rank, d0..d5) of reshape and broadcast_to for shape s. */
void op_shape_attrs(const Shape *s, double attr[1 + IR_MAX_DIMS]);
/* Element strides of a tensor of shape in read at the coordinates of shape out under numpy
 * broadcasting (0 along broadcast axes); in->rank <= out->rank. */
void op_bcast_strides(const Shape *in, const Shape *out, int64_t stride[IR_MAX_DIMS]);
/* Offset in the input of output element i, by the strides above. */
int64_t op_bcast_offset(const Shape *out, const int64_t stride[IR_MAX_DIMS], int64_t i);
/* Gradient rules: hands grad to x, summed over the axes along which x was broadcast. */
void op_give_sum_to(GradContext *gc, int x, int grad);
/* Splits shape s around axis into outer x len x inner elements. */
void op_axis_split(const Shape *s, int axis, int64_t *outer, int64_t *len, int64_t *inner);

/* ---- shape and dtype inference ---- */
bool shape_unary(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_binary(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_first(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_dropout(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_minmax_grad(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_standardize(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_assign(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_bias_add(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_reshape(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_transpose(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_broadcast_to(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_reduce(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_softmax(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_loss(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_loss_grad(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_conv2d(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_conv2d_grad_input(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_conv2d_grad_weight(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_matmul(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_pool2d(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_pool2d_grad(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_max_pool2d_tiled_grad(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_pool2d_argmax(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_max_pool2d_grad(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_concat(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_slice(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_embedding(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_one_hot(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_unfold(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_fold(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_dwconv2d(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_dwconv2d_grad_input(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_dwconv2d_wterms(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_upsample_bilinear(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_space_to_depth(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_depth_to_space(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_upsample_bilinear_grad(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_lrn(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_lrn_grad(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_cast(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_select(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_all_finite(Node *n, const Graph *g, char *err, size_t errlen);
/* Whether all_finite n keeps x's first axis (one flag per row). */
bool ir_all_finite_rows(const Node *n);
bool shape_winograd_weight(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_winograd_input(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_winograd_gemm(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_winograd_output(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_winograd_output_grad(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_winograd_weight_gemm(Node *n, const Graph *g, char *err, size_t errlen);
bool shape_winograd_weight_grad(Node *n, const Graph *g, char *err, size_t errlen);

/* ---- float64 references ---- */
#define OP_REF(name) void ref_##name(const Graph *g, const Node *n, const double *const *in, double *out)
OP_REF(const);
OP_REF(neg);
OP_REF(exp);
OP_REF(log);
OP_REF(sqrt);
OP_REF(relu);
OP_REF(copy);
OP_REF(sigmoid);
OP_REF(tanh);
OP_REF(silu);
OP_REF(abs);
OP_REF(sign);
OP_REF(pow);
OP_REF(relu_grad);
OP_REF(leaky_relu);
OP_REF(leaky_relu_grad);
OP_REF(gelu);
OP_REF(gelu_grad);
OP_REF(dropout);
OP_REF(add);
OP_REF(sub);
OP_REF(mul);
OP_REF(div);
OP_REF(maximum);
OP_REF(minimum);
OP_REF(maximum_grad);
OP_REF(minimum_grad);
OP_REF(bias_add);
OP_REF(assign);
OP_REF(reshape);
OP_REF(transpose);
OP_REF(broadcast_to);
OP_REF(sum);
OP_REF(mean);
OP_REF(softmax);
OP_REF(log_softmax);
OP_REF(softmax_grad);
OP_REF(log_softmax_grad);
OP_REF(nll_loss);
OP_REF(cross_entropy);
OP_REF(nll_loss_grad);
OP_REF(cross_entropy_grad);
OP_REF(conv2d);
OP_REF(conv2d_grad_input);
OP_REF(conv2d_grad_weight);
OP_REF(matmul);
OP_REF(max_pool2d);
OP_REF(max_pool2d_argmax);
OP_REF(avg_pool2d);
OP_REF(max_pool2d_grad);
OP_REF(max_pool2d_tiled_grad);
OP_REF(avg_pool2d_grad);
OP_REF(concat);
OP_REF(slice);
OP_REF(embedding);
OP_REF(one_hot);
OP_REF(unfold);
OP_REF(fold);
OP_REF(dwconv2d);
OP_REF(dwconv2d_grad_input);
OP_REF(dwconv2d_wterms);
OP_REF(upsample_bilinear);
OP_REF(space_to_depth);
OP_REF(depth_to_space);
OP_REF(upsample_bilinear_grad);
OP_REF(lrn);
OP_REF(standardize);
OP_REF(lrn_grad);
OP_REF(cast);
OP_REF(select);
OP_REF(all_finite);
OP_REF(winograd_weight);
OP_REF(winograd_input);
OP_REF(winograd_gemm);
OP_REF(winograd_output);
OP_REF(winograd_output_grad);
OP_REF(winograd_weight_gemm);
OP_REF(winograd_weight_grad);
#undef OP_REF

/* ---- gradient rules (n may move when rules emit nodes: they copy what they need first) ---- */
#define OP_GRAD(name) void grad_##name(GradContext *gc, const Node *n, int dy)
OP_GRAD(neg);
OP_GRAD(exp);
OP_GRAD(log);
OP_GRAD(sqrt);
OP_GRAD(relu);
OP_GRAD(copy);
OP_GRAD(sigmoid);
OP_GRAD(tanh);
OP_GRAD(silu);
OP_GRAD(abs);
OP_GRAD(pow);
OP_GRAD(leaky_relu);
OP_GRAD(gelu);
OP_GRAD(dropout);
OP_GRAD(add);
OP_GRAD(sub);
OP_GRAD(mul);
OP_GRAD(div);
OP_GRAD(maximum);
OP_GRAD(minimum);
OP_GRAD(bias_add);
OP_GRAD(reshape);
OP_GRAD(transpose);
OP_GRAD(broadcast_to);
OP_GRAD(sum);
OP_GRAD(mean);
OP_GRAD(softmax);
OP_GRAD(log_softmax);
OP_GRAD(nll_loss);
OP_GRAD(cross_entropy);
OP_GRAD(conv2d);
OP_GRAD(conv2d_grad_input);
OP_GRAD(matmul);
OP_GRAD(max_pool2d);
OP_GRAD(avg_pool2d);
OP_GRAD(concat);
OP_GRAD(embedding);
OP_GRAD(unfold);
OP_GRAD(fold);
OP_GRAD(dwconv2d);
OP_GRAD(upsample_bilinear);
OP_GRAD(space_to_depth);
OP_GRAD(depth_to_space);
OP_GRAD(lrn);
OP_GRAD(standardize);
OP_GRAD(cast);
#undef OP_GRAD

/* ---- floating-point operation counts ---- */
double flops_zero(const Graph *g, const Node *n);
double flops_elemwise(const Graph *g, const Node *n);
double flops_reduce(const Graph *g, const Node *n);
double flops_softmax(const Graph *g, const Node *n);
double flops_loss(const Graph *g, const Node *n);
double flops_conv2d(const Graph *g, const Node *n);
double flops_conv2d_grad(const Graph *g, const Node *n);
double flops_dwconv2d(const Graph *g, const Node *n);
double flops_dwconv2d_wterms(const Graph *g, const Node *n);
double flops_winograd_weight(const Graph *g, const Node *n);
double flops_winograd_input(const Graph *g, const Node *n);
double flops_winograd_gemm(const Graph *g, const Node *n);
double flops_winograd_output(const Graph *g, const Node *n);
double flops_winograd_output_grad(const Graph *g, const Node *n);
double flops_winograd_weight_gemm(const Graph *g, const Node *n);
double flops_winograd_weight_grad(const Graph *g, const Node *n);
double flops_matmul(const Graph *g, const Node *n);
double flops_pool2d(const Graph *g, const Node *n);
double flops_max_pool2d_grad(const Graph *g, const Node *n);
double flops_lrn(const Graph *g, const Node *n);
double flops_upsample(const Graph *g, const Node *n);
double flops_fold(const Graph *g, const Node *n);

/* Whether op is one of concat2..concat4 (ir/ops_concat.c). */
bool op_is_concat(OpId op);

#endif
