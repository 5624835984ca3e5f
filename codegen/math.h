/* math.h: exp, log and erf emitted as LLVM IR (no libm calls), so the loops around them vectorize and
 * the same code serves every target. */
#ifndef NETC_CG_MATH_H
#define NETC_CG_MATH_H

#include "codegen/cg.h"

/* e^x and ln x of a float or double value: f32 by range reduction and a polynomial (relative
 * error < 2e-7), f64 on GPUs likewise (< 1e-15), f64 on the host through llvm.exp/llvm.log. */
LLVMValueRef cg_exp(Cg *cg, LLVMValueRef x);
LLVMValueRef cg_log(Cg *cg, LLVMValueRef x);
/* erf x of a float or double value, on every target: f32 by Eigen's rational approximation on
 * [-4, 4] (relative error < 2e-7; beyond, erf is +-1 in f32), f64 by its Maclaurin series for
 * |x| <= 2 and 1 - erfc by a continued fraction above (relative error < 1e-15). */
LLVMValueRef cg_erf(Cg *cg, LLVMValueRef x);

#endif
