/* make_bundle.h: a planned, compiled graph as a bundle (runtime/bundle.h). */
#ifndef NETC_MAKE_BUNDLE_H
#define NETC_MAKE_BUNDLE_H

#include "codegen/cg.h"
#include "runtime/bundle.h"

/* Fills b (freed with bundle_free) from the graph's plan and one compiled code object. */
void cg_make_bundle(const Graph *g, const CgOutput *code, const char *target, Bundle *b);

#endif
