/* make_bundle.h: a planned graph and its code objects as a bundle (runtime/bundle.h). */
#ifndef NETC_MAKE_BUNDLE_H
#define NETC_MAKE_BUNDLE_H

#include "codegen/cg.h"
#include "runtime/bundle.h"

/* Fills b (freed with bundle_free) from the graph's plan, stored once, and n code objects:
 * code[i] compiled for targets[i], each with its own launch lists (grids and block sizes differ
 * per target). */
void cg_make_bundle(const Graph *g, const CgTarget *targets, const CgOutput *code, int n, Bundle *b);

#endif
