/* lower_window.h: where a sliding window's positions land, for the emitters that sum over a
 * window from the image's side (fold, the depthwise convolution's input gradient). */
#ifndef NETC_LOWER_WINDOW_H
#define NETC_LOWER_WINDOW_H

#include "codegen/cg_util.h"

/* The window start (output row) whose kernel position p (stride s, dilation d, padding pad) covers
 * image row y, and in *valid whether there is one among the `out` windows; 0 where there is not.
 * (codegen/lower_unfold.c) */
LLVMValueRef cg_window_of(Cg *cg, LLVMValueRef y, int64_t p, int64_t s, int64_t d, int64_t pad, int64_t out,
			  LLVMValueRef *valid);

#endif
