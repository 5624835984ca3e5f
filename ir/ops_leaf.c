/* ops_leaf.c: the attributes of the leaves whose storage the runtime fills (param, state, runtime);
 * their shapes are set by whoever creates them. */
#include "ir/ops.h"

int ir_leaf_init(const Node *n) { return (int)n->attr[0]; }

double ir_param_bound(const Node *n) { return n->attr[1]; }

int ir_runtime_slot(const Node *n) { return (int)n->attr[0]; }
