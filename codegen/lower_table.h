/* lower_table.h: each op's lowering, indexed by OpId (the lowering column of ir/ops.def). */
#ifndef NETC_LOWER_TABLE_H
#define NETC_LOWER_TABLE_H

#include "codegen/cg.h"

extern const LowerFn cg_lowerings[OP_COUNT];

#endif
