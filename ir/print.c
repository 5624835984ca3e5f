/* print.c: the graph as text, the form ir/parse_ir.c reads back (docs/passes.md, "Testing a pass
 * with lit"). A header, one node per line in node order, then the graph's special nodes:
 *   graph NAME (batch N)
 *     %name: dtype[dims] = op(%input, ...) {attr=value, ...} stored perm=[...] in PROGRAMS
 *         group %LEADER at OFFSET ws OFFSET  ; grad of %node
 *     loss %name   (and output, image, label, lr, rng, eval_output, eval_loss, loss_scale, finite,
 *                   eval_swap %node %state, arena BYTES, train SETTING=VALUE ...)
 * Every clause after the op is optional and printed only when it says something: `in` when the
 * node runs in a program, `group` for a member fused into a later node's group, `at` and `ws`
 * once plan-memory has placed it. `programs` picks which computed nodes are shown (0: all of
 * them, the complete text); leaves are always shown. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

static const char *const optimizer_names[] = {"sgd", "adadelta", "adam", "adamw"};
static const char *const precision_names[PREC_COUNT] = PRECISION_NAMES;

_Static_assert(sizeof(OptimizerKind) == sizeof(int) && sizeof(PrecisionKind) == sizeof(int),
	       "TrainConfig's enum fields are read and written as int");
#define TF(field, kind, values, lo, hi) {#field, offsetof(TrainConfig, field), kind, values, lo, hi}
const TrainField ir_train_fields[] = {
	TF(optimizer, TRAIN_FIELD_ENUM, optimizer_names, 0, OPT_COUNT - 1),
	TF(lr, TRAIN_FIELD_DOUBLE, NULL, 0, 0),
	TF(momentum, TRAIN_FIELD_DOUBLE, NULL, 0, 0),
	TF(dampening, TRAIN_FIELD_DOUBLE, NULL, 0, 0),
	TF(nesterov, TRAIN_FIELD_INT, NULL, 0, 1),
	TF(weight_decay, TRAIN_FIELD_DOUBLE, NULL, 0, 0),
	TF(rho, TRAIN_FIELD_DOUBLE, NULL, 0, 0),
	TF(eps, TRAIN_FIELD_DOUBLE, NULL, 0, 0),
	TF(beta1, TRAIN_FIELD_DOUBLE, NULL, 0, 0),
	TF(beta2, TRAIN_FIELD_DOUBLE, NULL, 0, 0),
	TF(accumulate, TRAIN_FIELD_I64, NULL, 1, TRAIN_MAX_ACCUMULATE),
	TF(precision, TRAIN_FIELD_ENUM, precision_names, 0, PREC_COUNT - 1),
};
#undef TF
const int ir_ntrain_fields = sizeof ir_train_fields / sizeof *ir_train_fields;

/* The shortest of %.15g..%.17g that reads back as v, so the text keeps every attribute exactly
 * and still prints 0.1 as 0.1. */
static void print_number(FILE *out, double v)
{
	char buf[40];
	for (int digits = 15; digits <= 17; digits++) {
		snprintf(buf, sizeof buf, "%.*g", digits, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	fputs(buf, out);
}

/* "train,eval": the PROG_* bits as the `in` clause spells them */
static const char *programs_str(unsigned programs, char *buf, size_t len)
{
	static const struct {
		unsigned bit;
		const char *name;
	} names[] = {{PROG_TRAIN, "train"}, {PROG_EVAL, "eval"}, {PROG_ACCUM, "accum"}};
	size_t n = 0;
	buf[0] = 0;
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (programs & names[i].bit)
			n += snprintf(buf + n, n < len ? len - n : 0, "%s%s", n ? "," : "", names[i].name);
	return buf;
}

static void print_node(FILE *out, const Graph *g, const Node *n)
{
	char buf[128];
	fprintf(out, "  %%%s: %s%s = %s", n->name, dtype_name(n->dtype), shape_str(&n->shape, buf, sizeof buf),
		ir_ops[n->op].name);
	if (n->nin) {
		fputc('(', out);
		for (int i = 0; i < n->nin; i++)
			fprintf(out, "%s%%%s", i ? ", " : "", g->node[n->in[i]].name);
		fputc(')', out);
	}
	int na = ir_op_nattrs(n->op);
	if (n->op == OP_reshape || n->op == OP_broadcast_to)
		na = 0; /* the target shape is the node's own shape */
	for (int i = 0; i < na; i++) {
		fprintf(out, "%s%s=", i ? ", " : " {", ir_attr_name(n->op, i, buf, sizeof buf));
		print_number(out, n->attr[i]);
	}
	if (na)
		fputc('}', out);
	if (ir_stored_permuted(n)) { /* stored in another axis order than the public one */
		fprintf(out, " stored perm=[");
		for (int d = 0; d < n->shape.rank; d++)
			fprintf(out, "%s%d", d ? ", " : "", n->perm[d]);
		fputc(']', out);
	}
	if (n->programs)
		fprintf(out, " in %s", programs_str(n->programs, buf, sizeof buf));
	if (n->group >= 0 && n->group != n->id)
		fprintf(out, " group %%%s", g->node[n->group].name);
	if (n->offset >= 0)
		fprintf(out, " at %lld", (long long)n->offset);
	if (n->ws_offset >= 0)
		fprintf(out, " ws %lld", (long long)n->ws_offset);
	if (n->grad_of >= 0)
		fprintf(out, "  ; grad of %%%s", g->node[n->grad_of].name);
	fputc('\n', out);
}

static int64_t field_int(const TrainConfig *c, const TrainField *f)
{
	const char *p = (const char *)c + f->offset;
	if (f->kind == TRAIN_FIELD_I64)
		return *(const int64_t *)(const void *)p;
	return *(const int *)(const void *)p; /* int and enum fields */
}

/* `train name=value ...`: the settings passes read, those that differ from the defaults only. */
static void print_train(FILE *out, const Graph *g)
{
	TrainConfig plain = train_config_default();
	bool any = false;
	for (int i = 0; i < ir_ntrain_fields; i++) {
		const TrainField *f = &ir_train_fields[i];
		bool dbl = f->kind == TRAIN_FIELD_DOUBLE;
		double v = dbl ? *(const double *)(const void *)((const char *)&g->train + f->offset) : 0;
		double v0 = dbl ? *(const double *)(const void *)((const char *)&plain + f->offset) : 0;
		if (dbl ? v == v0 : field_int(&g->train, f) == field_int(&plain, f))
			continue;
		fprintf(out, "%s %s=", any ? "" : "  train", f->name);
		any = true;
		if (dbl)
			print_number(out, v);
		else if (f->kind == TRAIN_FIELD_ENUM)
			fputs(f->values[field_int(&g->train, f)], out);
		else
			fprintf(out, "%lld", (long long)field_int(&g->train, f));
	}
	if (any)
		fputc('\n', out);
}

/* The graph's special nodes, one `KEY %name` line each, in the order ir/parse_ir.c knows them. */
static void print_special(FILE *out, const Graph *g)
{
	const struct {
		const char *key;
		int id;
	} special[] = {
		{"loss", g->loss}, {"output", g->output}, {"image", g->image}, {"label", g->label},
		{"lr", g->lr}, {"rng", g->rng}, {"eval_output", g->eval_output}, {"eval_loss", g->eval_loss},
		{"loss_scale", g->loss_scale}, {"finite", g->finite},
	};
	for (size_t i = 0; i < sizeof special / sizeof *special; i++)
		if (special[i].id >= 0)
			fprintf(out, "  %s %%%s\n", special[i].key, g->node[special[i].id].name);
	for (int i = 0; i < g->neval_swaps; i++)
		fprintf(out, "  eval_swap %%%s %%%s\n", g->node[g->eval_swap[i].node].name,
			g->node[g->eval_swap[i].state].name);
	if (g->arena_bytes > 0)
		fprintf(out, "  arena %lld\n", (long long)g->arena_bytes);
	print_train(out, g);
}

void ir_print(FILE *out, const Graph *g, unsigned programs)
{
	fprintf(out, "graph %s (batch %lld)\n", g->name, (long long)g->batch);
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->node[i];
		if (programs && !ir_is_leaf(n->op) && !(n->programs & programs))
			continue;
		print_node(out, g, n);
	}
	print_special(out, g);
}
