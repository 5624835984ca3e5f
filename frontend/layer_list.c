/* layer_list.c: `netc layers`, every layer of the table as a call with its arguments and their
 * defaults, read from the signatures the builder binds against (so the list cannot go stale). */
#include <stdio.h>

#include "frontend/frontend.h"
#include "frontend/layers.h"

/* The names of a layer's tensor inputs, as docs/language.md writes them. */
static const char *tensor_names(int n)
{
	static const char *const names[] = {"", "x", "a, b", "a, b, c", "a, b, c, d"};
	if (n == LAYER_VARIADIC)
		return "a, b, ...";
	return n >= 0 && n < (int)(sizeof names / sizeof names[0]) ? names[n] : "...";
}

static void print_default(FILE *out, const Signature *s, const SigArg *a)
{
	if (a->flags & ARG_REQUIRED)
		return;
	if (a->flags & ARG_SAME) {
		fprintf(out, "=%s", s->arg[(int)a->def].name);
	} else if (a->flags & ARG_OPTIONAL) {
		fprintf(out, "=(all)");
	} else if (a->kind == ARG_WORD) {
		const char *const *w = arg_words[(int)a->def];
		for (int k = 0; w[k]; k++)
			fprintf(out, "%s%s", k ? "|" : "=", w[k]);
	} else if (a->kind == ARG_BOOL) {
		fprintf(out, "=%s", a->def != 0 ? "true" : "false");
	} else {
		fprintf(out, "=%g", a->def);
	}
}

static void print_layer(FILE *out, const Layer *l)
{
	const Signature *s = &l->sig;
	fprintf(out, "%s(%s", s->name, tensor_names(l->ntensor));
	const char *sep = l->ntensor ? ", " : "";
	if (s->variadic)
		fprintf(out, "%sd0, d1, ...", sep), sep = ", ";
	for (int i = 0; i < s->nargs; i++, sep = ", ") {
		fprintf(out, "%s%s", sep, s->arg[i].name);
		print_default(out, s, &s->arg[i]);
	}
	fprintf(out, ")");
	/* the arguments that take a tuple (h, w) as well as one number */
	sep = "  # ";
	for (int i = 0; i < s->nargs; i++)
		if (s->arg[i].flags & ARG_PAIR)
			fprintf(out, "%s%s", sep, s->arg[i].name), sep = ", ";
	fprintf(out, "%s\n", *sep == ',' ? ": a number or (h, w)" : "");
}

void fe_print_layers(FILE *out)
{
	for (int i = 0; i < layer_count(); i++)
		print_layer(out, layer_at(i));
	for (int i = 0; i < layer_alias_count(); i++) {
		const Layer *l;
		const char *alias = layer_alias(i, &l);
		fprintf(out, "%s: another name for %s\n", alias, l->sig.name);
	}
}
