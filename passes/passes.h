/* passes.h: graph passes and the pass manager. Each pass is one file,
 * bool pass_NAME(Graph *, const PassOptions *, Diag *), and one row of the table in
 * passes/manager.c; docs/passes.md says how to add one. */
#ifndef NETC_PASSES_H
#define NETC_PASSES_H

#include "ir/ir.h"

/* The pipeline a plain run uses. */
/* PassOptions.layout only: let the layout pass choose */
#define LAYOUT_AUTO 2
/* PassOptions.conv_algo: how convolutions are computed (passes/conv_algo.c) */
typedef enum { CONV_ALGO_AUTO = 0, CONV_ALGO_DIRECT, CONV_ALGO_WINOGRAD } ConvAlgo;

#define PASSES_DEFAULT                                                                              \
	"layout,mixed-precision,make-eval,autodiff,unscale-gradients,accumulate-gradients,check-finite,optimizer," \
	"accumulation-program,conv-algo,fuse,share-eval,plan-memory"

/* Each pass's run as passes_run records it for a compile's trace: its begin and end on the
 * monotonic clock, in seconds (runtime/clock.h's clock). */
#define PASS_SPANS_MAX 64
typedef struct {
	const char *name;
	double begin, end;
} PassSpan;
typedef struct {
	int n;
	PassSpan span[PASS_SPANS_MAX];
} PassSpans;

/* What the command line asks of the passes. All zero: the default pipeline, optimized. */
typedef struct PassOptions {
	const char *passes;      /* --passes: the pipeline, comma-separated; NULL: PASSES_DEFAULT */
	const char *disable;     /* --disable-pass: comma-separated passes to take out */
	const char *print_after; /* --print-after: comma-separated passes, or "all" */
	bool time_passes;        /* --time-passes: each pass's time */
	bool O0;                 /* -O0: no optimization passes, and plan-memory without reuse */
	bool no_reuse;           /* plan-memory gives every value a block of its own, as `netc check`
	                          * needs to read every value after a step */
	FILE *log;               /* where --print-after and --time-passes write; NULL: stderr */
	int layout;              /* LAYOUT_NCHW, LAYOUT_NHWC (ir.h) or LAYOUT_AUTO: the layout pass
	                          * picks from the graph (passes/layout.c) */
	ConvAlgo conv_algo;      /* --conv-algo: auto (the pass's cost rule), direct or winograd */
	bool gpu_first;          /* the first --target is a GPU: auto choices follow GPU measurements */
	bool copies_first;       /* its matrix unit takes half operands copied from memory (NVIDIA
	                          * sm_80+: cp.async of NHWC channel runs, codegen/gemm_gpu.c) */
	bool f32_copies_first;   /* ... and float32 ones of TF32 products (sm_90's wgmma) */
	bool split_update;       /* --data-parallel: fusion keeps the update apart from backward, so a
	                          * step can sum the gradients across ranks in between (passes/fuse.c) */
	bool listed_only;        /* netc opt: run exactly --passes (none without it) on a graph read
	                          * as text; no pass is required */
	PassSpans *spans;        /* where passes_run records each pass's time (compile --trace); NULL: nowhere */
} PassOptions;

typedef bool (*PassFn)(Graph *g, const PassOptions *o, Diag *d);

/* One row of the pass table. */
typedef struct {
	const char *name;       /* as pipelines spell it: "plan-memory" */
	PassFn run;
	const char *what;       /* one line for `netc passes` */
	bool required;          /* a pipeline without it is an error */
	bool optimization;      /* -O0 leaves it out */
	const char *after;      /* comma-separated passes that must run earlier when both run */
} PassInfo;

/* ---- the pass manager (passes/manager.c) ---- */
/* The table row of name, or NULL. */
const PassInfo *passes_lookup(const char *name);
/* `netc passes`: every pass, whether it is required, and the default pipeline. */
void passes_list(FILE *out);
/* The pipeline the options make (at most max passes, in order), after --passes, --disable-pass and
 * -O0; checks --print-after too. False with one line in err for an unknown pass (the message lists
 * them), a required pass missing or disabled, a pass twice, or passes out of order. */
bool passes_resolve(const PassOptions *o, const PassInfo **list, int max, int *n, char *err, size_t errlen);
/* Runs the pipeline of o over a forward graph and verifies the graph after each pass. */
bool passes_run(Graph *g, const PassOptions *o, Diag *d);
/* passes_run with the default options. */
bool passes_run_default(Graph *g, Diag *d);

/* ---- the passes ---- */
/* autodiff: from the loss, gradient nodes by each op's rule, each marked with Node.grad_of; the
 * training program so far (forward and backward) (passes/autodiff.c) */
bool pass_autodiff(Graph *g, const PassOptions *o, Diag *d);
/* The roots every step program shares: the loss, the scores (for accuracy) and the assigns among
 * nodes [0, upto) (the frontend's, such as batch norm's running statistics; the optimizer's).
 * Returns a malloc'd array with room for nnodes + 2 roots, for the caller's own; *n gets the count. */
int *passes_step_roots(const Graph *g, int upto, int *n);
/* grad[p] for every param p: the gradient the update reads, the node Node.grad_of marks last
 * (autodiff's, or a rewrite of it); -1 elsewhere. Caller frees. */
int *passes_param_gradients(const Graph *g);
/* Marks grad as param p's gradient from now on (a pass that rewrites gradients). */
void passes_set_gradient(Graph *g, int p, int grad);
/* unscale-gradients: fp16: every param's gradient divided by Graph.loss_scale (passes/loss_scale.c) */
bool pass_unscale_gradients(Graph *g, const PassOptions *o, Diag *d);
/* accumulate-gradients: train.accumulate = K > 1: per-param accumulators "<p>.grad_acc", the
 * gradient the update reads becomes (acc + grad) / K, and the training step resets acc
 * (passes/accumulate.c) */
bool pass_accumulate_gradients(Graph *g, const PassOptions *o, Diag *d);
/* accumulation-program: after the optimizer, PROG_ACCUM: forward, backward, acc += grad for every
 * accumulator and the frontend's updates, no optimizer step; nothing when K = 1 (passes/accumulate.c) */
bool pass_accumulation_program(Graph *g, const PassOptions *o, Diag *d);
/* check-finite: fp16: Graph.finite, whether every gradient the update reads is finite (passes/loss_scale.c) */
bool pass_check_finite(Graph *g, const PassOptions *o, Diag *d);
/* With Graph.finite: select(finite, value, target), so a step whose gradients overflowed leaves
 * target unchanged; value itself otherwise (passes/loss_scale.c) */
int loss_scale_guard(Graph *g, int target, int value);
/* optimizer: the update of every param as graph nodes, from the gradients passes_param_gradients
 * gives; the lr runtime node and the training program with the updates (passes/optimizer.c) */
bool pass_optimizer(Graph *g, const PassOptions *o, Diag *d);
/* layout: conv activations NHWC and weights OHWI when o->layout asks, transposes only where
 * layouts meet (passes/layout.c) */
bool pass_layout(Graph *g, const PassOptions *o, Diag *d);
/* conv-algo: each convolution's algorithm (--conv-algo): the direct implicit GEMM, or Winograd
 * for 3x3 and 5x5 stride-1 ones where o->conv_algo asks (passes/conv_algo.c) */
bool pass_conv_algo(Graph *g, const PassOptions *o, Diag *d);
/* Every convolution of a program that Winograd can take as F(tile x tile, r x r) where that tile
 * exists (3x3: 2 or 4; 5x5: 2 or 3), else as auto would (the pass's rewrite, for tests that pick
 * the tile; half convolutions take F(2x2) whatever tile says). */
void conv_algo_winograd(Graph *g, int tile);
/* The algorithm that computes node n, as `netc info` shows it ("direct", "winograd F(2x2,3x3)"),
 * or NULL when n is no convolution. */
const char *conv_algo_name(const Graph *g, const Node *n);
/* make-eval: the evaluation program, the forward nodes again with dropout taken out (passes/make_eval.c) */
bool pass_make_eval(Graph *g, const PassOptions *o, Diag *d);
/* fuse: groups of nodes that one kernel computes (Node.group), TVM's FuseOps rules (passes/fuse.c) */
bool pass_fuse(Graph *g, const PassOptions *o, Diag *d);
/* fuse's first step (passes/recompute.c): elementwise nodes that rescale one tensor by smaller
 * ones get a copy per reader, so each fuses into its reader instead of being stored. */
void recompute_producers(Graph *g);
/* Whether every group is one the code generator handles (the contract in passes/fuse.c). */
bool fuse_verify(const Graph *g, char *err, size_t errlen);
/* share-eval: evaluation groups that are twins of training groups run the training group's kernel
 * instead (passes/share_eval.c) */
bool pass_share_eval(Graph *g, const PassOptions *o, Diag *d);
/* plan-memory: a byte offset in one arena for every value that needs storage, blocks shared
 * between values whose lifetimes do not meet (passes/plan_memory.c) */
bool pass_plan_memory(Graph *g, const PassOptions *o, Diag *d);

/* Reverse-mode gradients of loss: adds the gradient nodes and returns an array (caller frees)
 * mapping each node id that existed before to the id of its gradient, -1 where none flows. */
int *autodiff_gradients(Graph *g, int loss);

/* The optimizer's update nodes for one param p with gradient grad (passes/optimizer.c). */
void optimizer_emit_update(Graph *g, int p, int grad);

/* ---- mixed precision (passes/mixed_precision.c) ---- */
/* mixed-precision: the forward graph in train.precision's half type, f32 master weights, the
 * loss-scale runtime node for fp16; nothing for fp32 */
bool pass_mixed_precision(Graph *g, const PassOptions *o, Diag *d);

/* ---- lifetimes of stored values (passes/liveness.c) ---- */
/* How a value is stored. */
typedef enum {
	LIVE_NONE,     /* no storage: a constant, a dead node, a member inside its fused group */
	LIVE_ALIAS,    /* an assign: its target's storage */
	LIVE_RESIDENT, /* a block of its own for the whole run: leaves, gradients, program roots */
	LIVE_TEMP      /* a block from def to last, then free for others */
} LiveKind;

/* Times are kernel positions: a node's kernel runs at its group's id, in the training program
 * first (times 0..nnodes-1) and the evaluation program after (nnodes..2*nnodes-1), so values of
 * the two programs, which never run at once, may share blocks. */
typedef struct {
	int n;            /* nodes */
	LiveKind *kind;
	int *def, *last;  /* LIVE_TEMP: the time its kernel writes it and the last time one reads it */
	/* a LIVE_TEMP training value that evaluation computes again (passes/share_eval.c): the same
	 * in evaluation, kept in the same block as in training; -1 for other values */
	int *eval_def, *eval_last;
	LiveKind *ws_kind; /* split-K workspace: LIVE_NONE, LIVE_TEMP (during its node's kernel only)
	                    * or LIVE_RESIDENT (a node of both programs) */
	int *ws_time;      /* LIVE_TEMP workspaces: its node's kernel time */
	GroupIndex groups; /* the fused groups' members and outputs */
} Liveness;

void liveness_compute(const Graph *g, Liveness *l);
/* Makes id's two lifetimes one, from its training write to its last evaluation read: for a value
 * whose block is not free again when evaluation writes it. */
void liveness_hold(Liveness *l, int id);
/* Whether temporary id is read for the last time at time t, in either of its lifetimes. */
bool liveness_dies_at(const Liveness *l, int id, int t);
void liveness_free(Liveness *l);
/* The kernel time of a non-leaf node in program prog (PROG_TRAIN and PROG_ACCUM share one
 * timeline, PROG_EVAL has its own). */
int liveness_time(const Graph *g, const Node *n, unsigned prog);
/* Bytes of node id's value (numel times dtype size), and of its split-K workspace (0 for none). */
int64_t liveness_bytes(const Graph *g, int id);
int64_t liveness_ws_bytes(const Graph *g, int id);
/* Whether group's kernel may write its output into input x's block: every member is elementwise
 * (reads each input at the output's element index), the group has one stored output, x comes from
 * outside the group with the output's shape and dtype. Lifetimes are the caller's business. */
bool liveness_inplace_ok(const Graph *g, const Liveness *l, int group, int x);

/* ---- the memory plan, reported (passes/plan_memory.c) ---- */
#define PLAN_ALIGN 64
int64_t plan_align(int64_t bytes);
/* The arena a plan without reuse needs: every stored value and workspace in a block of its own. */
int64_t plan_memory_sum(const Graph *g);
/* `netc info --plan`: one line per block (offset, bytes, lifetime, value, how it was placed). */
void plan_memory_print(FILE *out, const Graph *g);

/* ---- memory traffic (passes/traffic.c) ---- */
typedef struct {
	int kernels;      /* kernel launches of the program: one per fused group */
	int64_t read;     /* bytes the kernels read: each kernel's external inputs, once per kernel */
	int64_t written;  /* bytes the kernels write: each kernel's stored outputs */
} PassTraffic;

/* The kernels of program prog (PROG_TRAIN or PROG_EVAL) and the bytes they move, as the compiler
 * counts them (workspaces and constants not included). */
PassTraffic passes_traffic(const Graph *g, unsigned prog);
/* The same, and each kernel's bytes (read and written) added to bytes[its group's leader]
 * (g->nnodes entries, zeroed by the caller; NULL: none). */
PassTraffic passes_traffic_by_group(const Graph *g, unsigned prog, int64_t *bytes);

#endif
