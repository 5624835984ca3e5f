/* lower_table.h: each op's lowering and elemental emitter, indexed by OpId (the lowering and
 * emitter columns of ir/ops.def). */
#ifndef NETC_LOWER_TABLE_H
#define NETC_LOWER_TABLE_H

#include "codegen/cg.h"

extern const LowerFn cg_lowerings[OP_COUNT];

/* An output index of a node's shape (struct ElemIndex: codegen/cg_util.h). */
typedef struct ElemIndex ElemIndex;
/* Emits one element of n at index at, in n's compute type. */
typedef LLVMValueRef (*ElemFn)(Cg *cg, const Node *n, ElemIndex *at);

/* NULL for ops with no elemental form (leaves, reductions, anchors). */
extern const ElemFn cg_elementals[OP_COUNT];

/* ---- emitters named in ir/ops.def (codegen/lower_elemwise.c) ---- */
#define CG_ELEM(name) LLVMValueRef cg_elem_##name(Cg *cg, const Node *n, ElemIndex *at)
CG_ELEM(neg);
CG_ELEM(exp);
CG_ELEM(log);
CG_ELEM(sqrt);
CG_ELEM(relu);
CG_ELEM(sigmoid);
CG_ELEM(tanh);
CG_ELEM(silu);
CG_ELEM(abs);
CG_ELEM(sign);
CG_ELEM(pow);
CG_ELEM(relu_grad);
CG_ELEM(standardize);
CG_ELEM(leaky_relu);
CG_ELEM(leaky_relu_grad);
CG_ELEM(gelu);
CG_ELEM(gelu_grad);
CG_ELEM(dropout);
CG_ELEM(add); /* add and bias_add */
CG_ELEM(sub);
CG_ELEM(mul);
CG_ELEM(div);
CG_ELEM(maximum);
CG_ELEM(minimum);
CG_ELEM(maximum_grad);
CG_ELEM(minimum_grad);
CG_ELEM(first); /* operand 0 at the index the op maps to: copy, reshape, transpose, slice, ... */
CG_ELEM(assign);
CG_ELEM(concat);
CG_ELEM(lrn); /* lrn and lrn_grad */
CG_ELEM(embedding); /* embedding and one_hot: codegen/lower_embedding.c */
CG_ELEM(one_hot);
CG_ELEM(unfold); /* unfold and fold: codegen/lower_unfold.c */
CG_ELEM(fold);
CG_ELEM(dwconv2d); /* dwconv2d and its gradients: codegen/lower_depthwise.c */
CG_ELEM(dwconv2d_grad_input);
CG_ELEM(dwconv2d_wterms);
CG_ELEM(upsample_bilinear);      /* codegen/lower_upsample.c */
CG_ELEM(upsample_bilinear_grad);
CG_ELEM(space_to_depth);         /* codegen/lower_space_to_depth.c */
CG_ELEM(depth_to_space);
CG_ELEM(cast);
CG_ELEM(select);
CG_ELEM(winograd_weight); /* codegen/lower_winograd.c */
CG_ELEM(winograd_weight_grad); /* codegen/lower_winograd.c */
#undef CG_ELEM

#endif
