/* layout.h: buffers stored in another axis order than their public one (BundleBuffer.perm, set by
 * the layout pass: a conv weight stored OHWI whose public order is OIHW). Checkpoints and
 * parameter init work in the public order and go through these (runtime/layout.c). */
#ifndef NETC_RT_LAYOUT_H
#define NETC_RT_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/bundle.h"

/* Whether x is stored in its public order (perm is the identity). */
bool rt_layout_identity(const BundleBuffer *x);
/* The public shape of x: public axis perm[d] has the stored extent dim[d]. */
void rt_layout_public_shape(const BundleBuffer *x, int64_t *dim);
/* Copies x's elements (esize bytes each) from the stored order in src to the public order in dst
 * (to_public), or back. src and dst do not overlap. */
void rt_layout_permute(const BundleBuffer *x, size_t esize, const void *src, void *dst, bool to_public);

#endif
