/* commands.h: netc commands that live in files of their own. */
#ifndef NETC_TOOLS_COMMANDS_H
#define NETC_TOOLS_COMMANDS_H

#include "tools/args.h"
#include "tools/model.h"

/* Each takes the compile options the command line made (tools/netc.c). */
int cmd_check(const Args *a, const CompileOptions *o); /* tools/check.c */
int cmd_dot(const Args *a, const CompileOptions *o);   /* tools/dot.c: the graph with fused groups as Graphviz clusters */
/* tools/opt.c: a text graph through exactly the passes of o, printed back */
int cmd_opt(const Args *a, const CompileOptions *o);

/* tools/onnx_cmd.c: ONNX models to .net files and checkpoints, and back */
int cmd_import(const Args *a, const CompileOptions *o);
int cmd_export(const Args *a, const CompileOptions *o);

/* tools/tune.c: tuned GEMM tiles; the runtime-only build times candidates made elsewhere */
int cmd_tune(const Args *a, const CompileOptions *o);

#endif
