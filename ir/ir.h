/* ir.h: the graph IR. A graph is an array of nodes in topological order; every node computes one
 * value (a tensor with a static shape and dtype) from the values of earlier nodes. */
#ifndef NETC_IR_H
#define NETC_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ir/diag.h"
#include "ir/dtype.h"
#include "ir/train_config.h"

#define IR_MAX_DIMS 6
#define IR_MAX_INPUTS 4
#define IR_MAX_ATTRS 10
#define IR_MAX_EVAL_SWAPS 128

typedef enum {
#define OP(id, name, pattern, nin, attrs, shape, ref, grad, flops, lower, emit, traits) OP_##id,
#include "ir/ops.def"
#undef OP
	OP_COUNT
} OpId;

/* Fusion patterns in TVM's order: a fused group's pattern is the largest of its members'. */
typedef enum {
	PAT_ELEMWISE,
	PAT_BROADCAST,
	PAT_INJECTIVE,
	PAT_REDUCE,
	PAT_ANCHOR, /* out-elemwise-fusable: conv, matmul, pooling */
	PAT_OPAQUE
} Pattern;

/* Which programs a node runs in. */
/* PROG_ACCUM: a micro-batch of gradient accumulation (forward, backward, gradients added to
 * their accumulators, no update); the last micro-batch of a step runs PROG_TRAIN. */
enum { PROG_TRAIN = 1, PROG_EVAL = 2, PROG_ACCUM = 4 };

/* param->attr[0] (init) and state->attr[0] */
enum { INIT_ZERO = 0, INIT_UNIFORM = 1, INIT_ONE = 2 };
/* runtime->attr[0] (slot): values the runtime writes before each step */
enum { RUNTIME_LR = 0, RUNTIME_RNG = 1, RUNTIME_LOSS_SCALE = 2 };
/* The rng runtime node is i32[RNG_WORDS]: the seed, the optimizer step, and the row of the step's
 * global batch where this batch starts (another rank's shard or micro-batch: ir/philox.h). */
enum { RNG_WORDS = 3 };

typedef struct {
	int rank;
	int64_t dim[IR_MAX_DIMS];
} Shape;

typedef struct Node {
	int id;
	OpId op;
	int nin;
	int in[IR_MAX_INPUTS];       /* ids of input nodes, all smaller than id */
	double attr[IR_MAX_ATTRS];   /* by the op's attribute list in ops.def */
	Shape shape;
	DType dtype;
	char *name;                  /* unique in the graph; owned by the graph */
	SrcLoc loc;                  /* where the .net file made it; line 0 if a pass did */
	unsigned programs;           /* PROG_* bits */
	int grad_of;                 /* gradient nodes: the node whose gradient this is; else -1 */
	int64_t offset;              /* byte offset in the arena (plan-memory); -1 for none */
	int64_t ws_offset;           /* scratch for split-K partial sums (plan-memory); -1 for none */
	int group;                   /* fused group (fuse): the id of its last member; a node alone
	                              * is its own group; -1 for leaves */
	/* params and state stored in another axis order (layout): stored axis d holds public axis
	 * perm[d], so checkpoints and init keep the public order; all zero means identity */
	int8_t perm[IR_MAX_DIMS];
} Node;

typedef struct Graph {
	char name[64];
	Node *node;
	int nnodes, cap;
	int64_t batch;
	TrainConfig train;
	int image, label;       /* data inputs */
	int output;             /* scores the loss consumes (training program) */
	int loss;               /* training loss, a scalar */
	int eval_output, eval_loss; /* the same in the evaluation program, -1 until make-eval */
	int lr, rng;            /* runtime nodes: the frontend makes rng for dropout, autodiff lr */
	/* fp16 loss scaling (mixed-precision): the runtime node of the scale, and the f32 scalar that
	 * is 1 when the step's gradients were finite and its update ran; -1 when absent */
	int loss_scale, finite;
	int64_t arena_bytes;    /* set by plan-memory */
	/* Nodes the evaluation program replaces by a state leaf reshaped to their shape (batch
	 * norm: its batch mean and variance by its running ones); set by the frontend, read by
	 * make-eval. */
	struct {
		int node, state;
	} eval_swap[IR_MAX_EVAL_SWAPS];
	int neval_swaps;
	/* name -> node (ir/names.c): hash buckets of node ids, chained through next[] */
	struct {
		int *bucket, *next;
		int nbuckets, ncap;
	} names;
} Graph;

typedef struct GradContext GradContext;

typedef bool (*ShapeFn)(Node *n, const Graph *g, char *err, size_t errlen);
typedef void (*RefFn)(const Graph *g, const Node *n, const double *const *in, double *out);
typedef void (*GradFn)(GradContext *gc, const Node *n, int dy);
typedef double (*FlopsFn)(const Graph *g, const Node *n);

typedef struct {
	const char *name;
	Pattern pattern;
	int nin;
	const char *attrs; /* comma-separated attribute names */
	ShapeFn shape;
	RefFn ref;
	GradFn grad;
	FlopsFn flops;
	unsigned traits; /* TRAIT_* flags (ir/ops.h) */
} OpInfo;

extern const OpInfo ir_ops[OP_COUNT];

/* ---- ops and shapes (ir/graph.c) ---- */
int ir_op_lookup(const char *name);                 /* OpId or -1 */
int ir_op_nattrs(OpId op);
int ir_attr_index(OpId op, const char *attr);       /* index or -1 */
const char *ir_attr_name(OpId op, int i, char *buf, size_t len);

int64_t shape_numel(const Shape *s);
/* Whether s has positive dimensions and at most IR_MAX_NUMEL (2^40, ir/checked.h) elements, the
 * size every tensor is held to (ir_add checks each computed value; the frontend its inputs and
 * parameters), so shape_numel and the byte counts made from it cannot overflow. */
bool shape_fits(const Shape *s);
bool shape_eq(const Shape *a, const Shape *b);
Shape shape_make(int rank, const int64_t *dim);
/* "[64, 1, 28, 28]" */
const char *shape_str(const Shape *s, char *buf, size_t len);

/* ---- building graphs (ir/graph.c) ---- */
Graph *ir_graph_new(const char *name);
void ir_graph_free(Graph *g);
/* Adds a node of op with inputs in[0..nin) and attributes attr[0..nattrs) (NULL: zeros), infers its
 * shape and dtype, and names it name (NULL: a fresh "%id" style name). Returns its id, or -1 with
 * a message in err when the inputs do not fit the op (the message names the op and the shapes). */
int ir_add(Graph *g, OpId op, const int *in, const double *attr, const char *name, char *err, size_t errlen);
/* ir_add for passes, whose nodes are right by construction: aborts with the message otherwise. */
int ir_emit(Graph *g, OpId op, const int *in, const double *attr);
/* Leaves: the caller gives shape and dtype. */
int ir_leaf(Graph *g, OpId op, const char *name, Shape shape, DType dtype, const double *attr);
int ir_const(Graph *g, double value);               /* f32 scalar */
/* Zero-initialized f32 state "<param>.<slot>" of the given shape (optimizer slots, gradient
 * accumulators); of the param's shape, it is stored in the param's axis order (Node.perm), so
 * checkpoints hold it in the public order too. */
int ir_state_for(Graph *g, int param, const char *slot, Shape shape);
/* Whether n is stored in another axis order than its public one (Node.perm is not all zero). */
bool ir_stored_permuted(const Node *n);
int ir_find(const Graph *g, const char *name);      /* node id or -1 */
void ir_set_name(Graph *g, int id, const char *name);
/* The name index behind ir_find (ir/names.c): graph.c keeps it up to date as nodes are named. */
void ir_names_insert(Graph *g, int id);
void ir_names_remove(Graph *g, int id);
void ir_names_free(Graph *g);
/* Adds prog to the programs of every non-leaf node that roots[0..nroots) depend on. */
void ir_mark_program(Graph *g, const int *roots, int nroots, unsigned prog);
/* Whether op is a leaf: its value comes from outside the program (input, param, state, runtime,
 * const). */
bool ir_is_leaf(OpId op);
/* The layout of the 4-D ops that take a `layout` attribute (conv, pooling): activations NCHW and
 * conv weights OIHW, or activations NHWC and conv weights OHWI (passes/layout.c). */
enum { LAYOUT_NCHW = 0, LAYOUT_NHWC = 1 };
/* n's layout attribute, LAYOUT_NCHW for ops without one (ir/graph.c). */
int ir_layout(const Node *n);
/* Sum x over the axes along which it was broadcast to reach its shape from shape to. */
int ir_sum_to(Graph *g, int x, const Shape *to);

/* ---- fused groups (ir/groups.c) ---- */
/* The most sibling reductions (sums and means over one shape and the same axes) one reduction
 * group computes side by side (passes/fuse.c), an accumulator each. */
#define IR_MAX_GROUP_REDUCTIONS 4
/* Whether node id is a value the runtime reads after a step: the loss, the scores, their
 * evaluation twins or the finite flag. */
bool ir_is_program_root(const Graph *g, int id);
/* Whether node id's value leaves its fused group: a member of another group or a program root
 * (loss, scores, evaluation outputs) reads it. Group outputs have storage; other members live
 * only inside their group's kernel. A node alone in its group is its own output. */
bool ir_group_output(const Graph *g, int id);
/* The same, for a pass that keeps the users of id at hand: user[0..nuser) are all of them. */
bool ir_group_output_users(const Graph *g, int id, const int *user, int nuser);
/* Every group's members and outputs at once, in time linear in the graph (ir_group_output asks
 * about one node and scans the nodes after it). */
typedef struct {
	int *first;   /* by leader: its first member in node order; -1 for a node that leads none */
	int *next;    /* the next member of the same group in node order; -1 after the last */
	bool *output; /* ir_group_output of every node */
} GroupIndex;
void ir_group_index(GroupIndex *ix, const Graph *g);
void ir_group_index_free(GroupIndex *ix);
/* Puts every non-leaf node in a group of its own (what fuse undoes and -O0 keeps). */
void ir_ungroup(Graph *g);

/* ---- the update's place in the training step (ir/update_split.c) ---- */
/* By parameter: the node of its gradient as the optimizer reads it (the last node Node.grad_of
 * marks), -1 for other nodes. malloc'd. */
int *ir_final_gradients(const Graph *g);
/* By node: whether a training node belongs to the update: it is not needed by the final
 * gradients, the loss, the scores or an assign that reads no gradient (the optimizer's update,
 * fp16's finite check). malloc'd. */
bool *ir_update_nodes(const Graph *g);
/* After fusion and memory planning: the id of the training program's first update kernel (its
 * group's leader) when every final gradient has storage, no fused group holds nodes of both
 * sides and every backward kernel runs before it, so a step may run [backward], sum the
 * gradients across ranks, then [update]; else -1. */
int ir_update_split(const Graph *g);

/* ---- GEMM shape and split-K (ir/gemm_shape.c) ---- */
/* The GEMM a node computes as C[b][m][n] = sum_k A(b,m,k) B(b,k,n): conv2d, its two gradients
 * and matmul. Returns false for other ops. */
bool ir_gemm_shape(const Graph *g, const Node *n, int64_t *batch, int64_t *m, int64_t *nn, int64_t *k);
/* How many slices of K a GPU kernel may sum separately (1: no split). A long K with a small
 * output (weight gradients) would leave most of a GPU idle; the partial sums go to the node's
 * workspace (split * m * n floats, batch 1 only) and are added in a fixed order. Column
 * reductions are split the same way (ir_reduce_slices). */
int ir_split_k(const Graph *g, const Node *n);
/* The side of the square tiles whose work-groups ir_split_k counts. */
enum { IR_SPLIT_TILE = 128 };
/* The most slices a GPU kernel of n may sum, which its workspace holds (most * m * n floats):
 * ir_split_k's for 128 x 128 tiles, up to twice that for wider ones, which make fewer
 * work-groups per slice (codegen/gemm_gpu.c); the same as ir_split_k's where that is 1. */
int ir_split_k_most(const Graph *g, const Node *n);
/* How many slices a GPU sums a sum or mean in, with partials of split * outputs floats in the
 * node's workspace (ir/ops_reduce.c); 1: no split. Column reductions (ir_reduce_columns: the
 * reduced axes lead, the kept ones contiguous, as the bias gradients of NHWC convolutions) split
 * their rows; others (batch norm's statistics over N, H and W) split each output's elements while
 * outputs are few. */
int ir_reduce_slices(const Graph *g, const Node *n);
bool ir_reduce_columns(const Graph *g, const Node *n);

/* ---- checking and printing ---- */
bool ir_verify(const Graph *g, char *err, size_t errlen);                 /* ir/verify.c */
/* Prints the nodes of the given programs as text; 0: every node, the text form ir_parse_text
 * reads back (docs/passes.md). */
void ir_print(FILE *out, const Graph *g, unsigned programs);             /* ir/print.c */
/* The training settings passes read (the optimizer and its hyper-parameters, accumulate,
 * precision), by the names of the text form's `train` line (ir/print.c, ir/parse_ir.c). */
typedef enum { TRAIN_FIELD_DOUBLE, TRAIN_FIELD_INT, TRAIN_FIELD_I64, TRAIN_FIELD_ENUM } TrainFieldKind;
typedef struct {
	const char *name;
	size_t offset;             /* in TrainConfig */
	TrainFieldKind kind;
	const char *const *values; /* TRAIN_FIELD_ENUM: the names of 0..hi */
	int64_t lo, hi;            /* the integers allowed; enums: 0..hi */
} TrainField;
extern const TrainField ir_train_fields[];
extern const int ir_ntrain_fields;
/* Reads the text ir_print writes (docs/passes.md) into a graph, through ir_add and ir_leaf so
 * shapes are inferred and checked, then ir_verify; NULL after "file:line:col: error: ..." lines
 * on d for text it cannot read (ir/parse_ir.c). text must end with a NUL. */
Graph *ir_parse_text(const char *text, Diag *d);
double ir_flops(const Graph *g, unsigned programs);                      /* ir/graph.c */
int64_t ir_param_count(const Graph *g);                                  /* ir/graph.c */

/* ---- reference interpreter (ir/interp.c) ---- */
void ir_eval_node(const Graph *g, const Node *n, const double *const *in, double *out);
/* Evaluates, in node order, every non-leaf node of the programs into values[id] (arrays of
 * shape_numel doubles the caller owns). Leaf values must be filled in before. */
void ir_interp(const Graph *g, unsigned programs, double **values);
/* x rounded to the nearest value of float type t (ties to even, infinity past its largest
 * value), as a cast to t stores it (ir/ops_precision.c). */
double ir_round_to(double x, DType t);

/* ---- gradient rules: what a GradFn may call (ir/grad_context.c; passes/autodiff.c drives) ---- */
Graph *gc_graph(GradContext *gc);
/* Adds grad to the gradient flowing into node x (summing contributions). */
void gc_accumulate(GradContext *gc, int x, int grad);
/* The runtime rng node, for ops whose gradient needs the same random draws. */
int gc_rng(GradContext *gc);

#endif
