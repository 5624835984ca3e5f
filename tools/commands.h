/* commands.h: netc commands that live in files of their own. */
#ifndef NETC_TOOLS_COMMANDS_H
#define NETC_TOOLS_COMMANDS_H

#include "tools/args.h"

int cmd_check(const Args *a); /* tools/check.c */
int cmd_dot(const Args *a);   /* tools/dot.c: the graph with fused groups as Graphviz clusters */
struct PassOptions;
/* tools/opt.c: a text graph through exactly the passes of o, printed back */
int cmd_opt(const Args *a, const struct PassOptions *o);

#endif
