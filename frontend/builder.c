/* builder.c: the syntax tree to the forward graph. Evaluates constant expressions, binds call
 * arguments to layer signatures, builds each layer through the layer table, and reads the train
 * section into the graph's TrainConfig. A failed layer leaves a poisoned name behind so the
 * statements that use it stay quiet instead of piling up follow-on errors. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "frontend/ast.h"
#include "frontend/layers.h"
#include "frontend/suggest.h"

/* V_FAILED: a constant whose definition failed; its uses fail quietly, as a failed layer's do. */
typedef enum { V_NUM, V_BOOL, V_TENSOR, V_FAILED } ValueKind;

typedef struct {
	ValueKind kind;
	double v;
	bool is_int;
	int node; /* V_TENSOR; -1 when the layer that made it failed */
} Value;

typedef struct {
	const char *name;
	SrcLoc loc;
	Value val;
} Sym;

typedef struct {
	Graph *g;
	Diag *d;
	Sym *sym;
	int nsym, cap;
	int *slot;              /* hash index over sym (open addressing): -1 or a sym index */
	int nslots;             /* a power of two, at least twice nsym */
	int *counter;           /* per layer, for generated names */
	const char *batch_name; /* the symbolic batch dimension */
	int prev;               /* value of the previous layer (or the first input); -1: failed */
	bool have_prev;
	int inputs[2], ninputs;
	SrcLoc loss_loc;
} Builder;

/* ---- names ---- */

static void *xrealloc(void *p, size_t size)
{
	p = realloc(p, size);
	if (!p) {
		fputs("netc: out of memory\n", stderr);
		abort();
	}
	return p;
}

/* FNV-1a: names are looked up once per use, so a file of many names must not cost their square. */
static unsigned name_hash(const char *s)
{
	unsigned h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* The slot of name: where it is, or the free slot where it would go. */
static int *find_slot(const Builder *b, const char *name)
{
	unsigned mask = (unsigned)b->nslots - 1;
	for (unsigned i = name_hash(name) & mask;; i = (i + 1) & mask)
		if (b->slot[i] < 0 || !strcmp(b->sym[b->slot[i]].name, name))
			return &b->slot[i];
}

static Sym *lookup(Builder *b, const char *name)
{
	int *slot = b->nslots ? find_slot(b, name) : NULL;
	return slot && *slot >= 0 ? &b->sym[*slot] : NULL;
}

/* Adds a name that lookup does not know yet. */
static void define(Builder *b, const char *name, SrcLoc loc, Value v)
{
	if (b->nsym == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 32;
		b->sym = xrealloc(b->sym, (size_t)b->cap * sizeof *b->sym);
	}
	if (2 * (b->nsym + 1) > b->nslots) { /* keep it at most half full: rehash into twice the slots */
		b->nslots = b->nslots ? 2 * b->nslots : 64;
		b->slot = xrealloc(b->slot, (size_t)b->nslots * sizeof *b->slot);
		memset(b->slot, -1, (size_t)b->nslots * sizeof *b->slot);
		for (int i = 0; i < b->nsym; i++)
			*find_slot(b, b->sym[i].name) = i;
	}
	*find_slot(b, name) = b->nsym;
	b->sym[b->nsym++] = (Sym){name, loc, v};
}

/* False, with an error and a note at the first definition, when name is taken. */
static bool check_new_name(Builder *b, const char *name, SrcLoc loc)
{
	Sym *s = lookup(b, name);
	if (!s)
		return true;
	diag_error(b->d, loc, "'%s' is already defined", name);
	diag_note(b->d, s->loc, "'%s' was defined here", name);
	return false;
}

/* "; did you mean 'near'?" after an unknown name, or "" when nothing known is close to it. */
static const char *did_you_mean(const char *near, char *buf, size_t len)
{
	if (!near)
		return "";
	snprintf(buf, len, "; did you mean '%s'?", near);
	return buf;
}

/* ---- constant expressions ---- */

static const char *value_str(const Value *v, char *buf, size_t len)
{
	if (v->kind == V_BOOL)
		return v->v ? "true" : "false";
	if (v->kind == V_TENSOR)
		return "a tensor";
	snprintf(buf, len, "%.17g", v->v);
	return buf;
}

static bool eval(Builder *b, const Expr *e, Value *out);

static bool eval_number(Builder *b, const Expr *e, Value *out)
{
	if (!eval(b, e, out))
		return false;
	if (out->kind == V_NUM)
		return true;
	diag_error(b->d, e->loc, "expected a number, got %s", out->kind == V_BOOL ? "a boolean" : "a tensor");
	return false;
}

/* Integers stay integers while exact: '/' of integers that divide evenly is an integer. */
static bool eval_binary(Builder *b, const Expr *e, Value *out)
{
	Value l, r;
	if (!eval_number(b, e->l, &l) || !eval_number(b, e->r, &r))
		return false;
	bool ints = l.is_int && r.is_int;
	if ((e->op == '/' || e->op == '%') && r.v == 0) {
		diag_error(b->d, e->loc, "division by zero in a constant expression");
		return false;
	}
	if (e->op == '%' && !ints) {
		diag_error(b->d, e->loc, "'%%' needs integers");
		return false;
	}
	double v = 0;
	switch (e->op) {
	case '+': v = l.v + r.v; break;
	case '-': v = l.v - r.v; break;
	case '*': v = l.v * r.v; break;
	case '/': v = l.v / r.v; ints = ints && fmod(l.v, r.v) == 0; break;
	case '%': v = fmod(l.v, r.v); break;
	}
	if (!isfinite(v) || (ints && fabs(v) > FE_MAX_INT)) {
		diag_error(b->d, e->loc, "constant expression overflows");
		return false;
	}
	*out = (Value){V_NUM, v, ints, -1};
	return true;
}

static bool eval_name(Builder *b, const Expr *e, Value *out)
{
	Sym *s = lookup(b, e->name);
	if (!s) {
		diag_error(b->d, e->loc, "unknown name '%s'", e->name);
		return false;
	}
	*out = s->val;
	return s->val.kind != V_FAILED; /* its error is out already */
}

static bool eval(Builder *b, const Expr *e, Value *out)
{
	switch (e->kind) {
	case E_NUM: *out = (Value){V_NUM, e->num, e->is_int, -1}; return true;
	case E_BOOL: *out = (Value){V_BOOL, e->num, false, -1}; return true;
	case E_NAME: return eval_name(b, e, out);
	case E_BIN: return eval_binary(b, e, out);
	case E_NEG:
		if (!eval_number(b, e->l, out))
			return false;
		out->v = -out->v;
		return true;
	case E_CALL: break;
	case E_TUPLE:
		diag_error(b->d, e->loc, "a tuple is allowed only where a layer takes one per axis (kernel, stride, padding, dilation)");
		return false;
	case E_STRING:
		diag_error(b->d, e->loc, "a string is allowed only as a data set's folder: data = folder(\"DIR\")");
		return false;
	}
	diag_error(b->d, e->loc, "a call to '%s' is not allowed here", e->name);
	return false;
}

/* ---- binding arguments to signatures ---- */

static bool check_kind(Builder *b, const Signature *s, int i, const Value *v, SrcLoc loc)
{
	static const char *const want[] = {
		[ARG_NUM] = "a number", [ARG_NNUM] = "a number >= 0", [ARG_PROB] = "a number in [0, 1)",
		[ARG_INT] = "an integer", [ARG_POS] = "a positive integer",
		[ARG_NONNEG] = "an integer >= 0", [ARG_BOOL] = "true or false",
	};
	ArgKind k = s->arg[i].kind;
	bool ok;
	if (k == ARG_WORD)
		return true; /* eval_word checked it */
	if (k == ARG_BOOL)
		ok = v->kind == V_BOOL;
	else if (v->kind != V_NUM)
		ok = false;
	else if (k == ARG_NUM || k == ARG_NNUM || k == ARG_PROB)
		ok = (k == ARG_NUM || v->v >= 0) && (k != ARG_PROB || v->v < 1);
	else
		ok = v->is_int && (k == ARG_INT || v->v > 0 || (k == ARG_NONNEG && v->v == 0));
	if (!ok) {
		char buf[32];
		diag_error(b->d, loc, "argument '%s' of %s must be %s, got %s", s->arg[i].name, s->name,
			   want[k], value_str(v, buf, sizeof buf));
	}
	return ok;
}

/* An ARG_WORD argument: a bare name among the argument's words (as `data = synthetic`), bound as
 * its index in the list, which is what the layer's attribute stores. */
static bool eval_word(Builder *b, const Signature *s, int i, const Expr *e, Value *out)
{
	const char *const *words = arg_words[(int)s->arg[i].def];
	char list[128] = "";
	for (int k = 0; words[k]; k++) {
		if (e->kind == E_NAME && !strcmp(e->name, words[k])) {
			*out = (Value){V_NUM, k, true, -1};
			return true;
		}
		strncat(list, k ? ", " : "", sizeof list - strlen(list) - 1);
		strncat(list, words[k], sizeof list - strlen(list) - 1);
	}
	if (e->kind == E_NAME)
		diag_error(b->d, e->loc, "argument '%s' of %s must be one of %s, got '%s'", s->arg[i].name, s->name,
			   list, e->name);
	else
		diag_error(b->d, e->loc, "argument '%s' of %s must be one of %s", s->arg[i].name, s->name, list);
	return false;
}

static int arg_index(const Signature *s, const char *key)
{
	for (int i = 0; i < s->nargs; i++)
		if (!strcmp(s->arg[i].name, key))
			return i;
	return -1;
}

/* An ARG_PAIR argument given as a tuple: exactly two elements, each of the argument's kind. */
static bool bind_pair(Builder *b, const Signature *s, int i, const Arg *a, BoundArgs *out)
{
	Value v[2];
	int n = 0;
	for (const Arg *e = a->val->args; e; e = e->next, n++) {
		if (n == 2 || e->key) {
			diag_error(b->d, a->val->loc, "argument '%s' of %s takes one number or a tuple of two (h, w)",
				   s->arg[i].name, s->name);
			return false;
		}
		if (!eval(b, e->val, &v[n]) || !check_kind(b, s, i, &v[n], e->val->loc))
			return false;
	}
	if (n != 2) {
		diag_error(b->d, a->val->loc, "argument '%s' of %s takes one number or a tuple of two (h, w)", s->arg[i].name,
			   s->name);
		return false;
	}
	if (out->given[i]) {
		diag_error(b->d, a->loc, "argument '%s' of %s is given twice", s->arg[i].name, s->name);
		return false;
	}
	out->v[i] = v[0].v, out->v2[i] = v[1].v;
	out->given[i] = true;
	return true;
}

static bool bind_one(Builder *b, const Signature *s, const Arg *a, int *npos, BoundArgs *out)
{
	Value v;
	int i = a->key ? arg_index(s, a->key) : (*npos)++;
	if (a->key && i < 0) {
		const char *names[SIG_MAX_ARGS];
		for (int k = 0; k < s->nargs; k++)
			names[k] = s->arg[k].name;
		char hint[FE_NAME_BUF + 24];
		diag_error(b->d, a->loc, "unknown argument '%s' for %s%s", a->key, s->name,
			   did_you_mean(fe_nearest(a->key, names, s->nargs), hint, sizeof hint));
		return false;
	}
	if (!a->key && s->variadic) {
		if (i >= IR_MAX_DIMS) {
			diag_error(b->d, a->loc, "%s takes at most %d dimensions", s->name, IR_MAX_DIMS);
			return false;
		}
		if (!eval_number(b, a->val, &v))
			return false;
		if (!v.is_int) {
			diag_error(b->d, a->val->loc, "dimension of %s must be an integer, got %.17g", s->name, v.v);
			return false;
		}
		out->var[out->nvar++] = (int64_t)v.v;
		return true;
	}
	if (i < s->nargs && (s->arg[i].flags & ARG_PAIR) && a->val->kind == E_TUPLE)
		return bind_pair(b, s, i, a, out);
	if (i < s->nargs && s->arg[i].kind == ARG_WORD ? !eval_word(b, s, i, a->val, &v) : !eval(b, a->val, &v))
		return false;
	if (i >= s->nargs) {
		diag_error(b->d, a->loc, "too many positional arguments for %s (it takes %d)", s->name, s->nargs);
		return false;
	}
	if (out->given[i]) {
		diag_error(b->d, a->loc, "argument '%s' of %s is given twice", s->arg[i].name, s->name);
		return false;
	}
	if (!check_kind(b, s, i, &v, a->val->loc))
		return false;
	out->v[i] = out->v2[i] = v.v;
	out->given[i] = true;
	return true;
}

/* Binds the non-tensor args (tensor ones are NULL-skipped by the caller) and fills defaults. */
static bool bind(Builder *b, const Signature *s, const Arg *args, const Arg *const *skip, int nskip,
		 SrcLoc loc, BoundArgs *out)
{
	memset(out, 0, sizeof *out);
	int npos = 0;
	bool seen_key = false;
	for (const Arg *a = args; a; a = a->next) {
		bool skipped = false;
		for (int i = 0; i < nskip; i++)
			skipped |= skip[i] == a;
		if (!a->key && seen_key) {
			diag_error(b->d, a->loc, "positional argument after a keyword argument");
			return false;
		}
		seen_key |= a->key != NULL;
		if (!skipped && !bind_one(b, s, a, &npos, out))
			return false;
	}
	for (int i = 0; i < s->nargs; i++) {
		const SigArg *sa = &s->arg[i];
		if (out->given[i] || (sa->flags & ARG_OPTIONAL))
			continue;
		if (sa->flags & ARG_REQUIRED) {
			diag_error(b->d, loc, "%s needs argument '%s'", s->name, sa->name);
			return false;
		}
		out->v[i] = sa->kind == ARG_WORD ? 0 : (sa->flags & ARG_SAME) ? out->v[(int)sa->def] : sa->def;
		out->v2[i] = (sa->flags & ARG_SAME) ? out->v2[(int)sa->def] : out->v[i];
	}
	return true;
}

/* ---- layers ---- */

/* Positional names of tensors are the layer's inputs; *poisoned when one comes from a failed layer. */
static int tensor_args(Builder *b, const Arg *args, const Arg **targ, int *in, bool *poisoned)
{
	int n = 0;
	for (const Arg *a = args; a; a = a->next) {
		if (a->key || a->val->kind != E_NAME)
			continue;
		Sym *s = lookup(b, a->val->name);
		if (!s || s->val.kind != V_TENSOR)
			continue;
		if (n < FE_MAX_TENSORS) {
			targ[n] = a;
			in[n] = s->val.node;
		}
		*poisoned |= s->val.node < 0;
		n++;
	}
	return n;
}

static const char *layer_name(Builder *b, const Layer *l, const Stmt *st, char *buf, size_t len)
{
	if (st->name)
		return st->name;
	do
		snprintf(buf, len, "%s_%d", l->sig.name, ++b->counter[layer_index(l)]);
	while (lookup(b, buf));
	return buf;
}

/* Builds the layer a statement calls; -1 after an error (or quietly, after an earlier one). */
static int build_layer(Builder *b, const Stmt *st, const Layer *l, const char *name)
{
	const Expr *call = st->value;
	const Arg *targ[FE_MAX_TENSORS] = {0};
	int in[FE_MAX_TENSORS + 1], nin = 0; /* room to put the previous value first */
	bool poisoned = false, variadic = l->ntensor == LAYER_VARIADIC;
	int least = variadic ? 2 : l->ntensor, most = variadic ? FE_MAX_TENSORS : l->ntensor;
	int given = tensor_args(b, call->args, targ, in + 1, &poisoned);
	if (given > most && variadic) {
		diag_error(b->d, call->loc, "%s takes at most %d tensor inputs, got %d", l->sig.name, most, given);
		return -1;
	}
	if (given > most) {
		diag_error(b->d, call->loc, "%s takes %d tensor input%s, got %d", l->sig.name, l->ntensor,
			   l->ntensor == 1 ? "" : "s", given);
		return -1;
	}
	if (given < least) {
		if (!b->have_prev) {
			diag_error(b->d, call->loc, "%s has no input: no input or layer comes before it", l->sig.name);
			return -1;
		}
		in[0] = b->prev, nin = 1;
		poisoned |= b->prev < 0;
	}
	memmove(in + nin, in + 1, (size_t)given * sizeof *in);
	nin += given;
	if (nin < least) {
		diag_error(b->d, call->loc, "%s takes %s%d tensor inputs, got %d", l->sig.name, variadic ? "at least " : "",
			   least, given);
		return -1;
	}
	BoundArgs args;
	if (!bind(b, &l->sig, call->args, targ, given, call->loc, &args) || poisoned)
		return -1;
	LayerCall c = {b->g, b->d, call->loc, name, l->sig.name, {0}, nin, &args};
	memcpy(c.in, in, (size_t)nin * sizeof *in);
	return l->build(l, &c);
}

static void set_loss(Builder *b, const Stmt *st, int id)
{
	Graph *g = b->g;
	b->loss_loc = st->loc;
	g->loss = id;
	if (id < 0)
		return;
	if (shape_numel(&g->node[id].shape) != 1) {
		char buf[96];
		diag_error(b->d, st->value->loc, "the loss must be a scalar, got %s",
			   shape_str(&g->node[id].shape, buf, sizeof buf));
		return;
	}
	g->output = g->node[id].nin > 0 ? g->node[id].in[0] : -1;
}

/* The layer a statement calls, or NULL after an error. */
static const Layer *stmt_layer(Builder *b, const Stmt *st)
{
	const Expr *e = st->value;
	if (e->kind != E_CALL && e->kind != E_NAME) {
		diag_error(b->d, e->loc, "expected a layer such as relu or dense(10)%s",
			   st->name ? "; write 'const NAME = EXPR' for a constant" : "");
		return NULL;
	}
	const Layer *l = layer_lookup(e->name);
	char hint[FE_NAME_BUF + 24];
	const char *near = l ? NULL : layer_nearest(e->name);
	if (!l && near)
		diag_error(b->d, e->loc, "unknown op '%s'%s", e->name, did_you_mean(near, hint, sizeof hint));
	else if (!l)
		diag_error(b->d, e->loc, "unknown op '%s' (`netc layers` lists the layers)", e->name);
	return l;
}

/* Whatever fails, the statement still defines its name, is the previous value and marks the
 * loss, each as failed, so the statements after it report nothing more about it. */
static void layer_stmt(Builder *b, const Stmt *st)
{
	const Layer *l = stmt_layer(b, st);
	bool taken = st->name && lookup(b, st->name);
	bool second_loss = st->is_loss && b->loss_loc.line;
	if (l && taken) {
		check_new_name(b, st->name, st->name_loc);
	} else if (l && second_loss) {
		diag_error(b->d, st->loc, "a network has one loss; this is a second");
		diag_note(b->d, b->loss_loc, "the first loss is here");
	}
	int id = -1;
	if (l && !taken && !second_loss) {
		char buf[FE_NAME_BUF];
		const char *name = layer_name(b, l, st, buf, sizeof buf);
		/* a bare name is a call without arguments */
		Expr call = *st->value;
		call.kind = E_CALL;
		Stmt s = *st;
		s.value = &call;
		id = build_layer(b, &s, l, name);
	}
	if (st->name && !taken)
		define(b, st->name, st->name_loc, (Value){V_TENSOR, 0, false, id});
	b->prev = id;
	b->have_prev = true;
	if (st->is_loss && !second_loss)
		set_loss(b, st, id);
}

/* ---- inputs and constants ---- */

static bool dtype_lookup(const char *name, DType *t)
{
	for (int i = 0; i < DT_COUNT; i++)
		if (!strcmp(name, dtype_name((DType)i))) {
			*t = (DType)i;
			return true;
		}
	return false;
}

/* The first dimension may be a name that is no constant: the batch, sized by the train section. */
static bool input_dim(Builder *b, const Arg *a, int i, int64_t batch, int64_t *dim)
{
	const Expr *e = a->val;
	if (a->key) {
		diag_error(b->d, a->loc, "a dimension is a number, not '%s = ...'", a->key);
		return false;
	}
	if (e->kind == E_NAME && !lookup(b, e->name)) {
		if (i > 0) {
			diag_error(b->d, e->loc, "symbolic dimension '%s' must be the first", e->name);
			return false;
		}
		if (b->batch_name && strcmp(b->batch_name, e->name)) {
			diag_error(b->d, e->loc, "symbolic dimension '%s' differs from the batch '%s'", e->name,
				   b->batch_name);
			return false;
		}
		b->batch_name = e->name;
		*dim = batch;
		return true;
	}
	Value v;
	if (!eval_number(b, e, &v))
		return false;
	if (!v.is_int || v.v <= 0) {
		diag_error(b->d, e->loc, "a dimension must be a positive integer, got %.17g", v.v);
		return false;
	}
	*dim = (int64_t)v.v;
	return true;
}

/* The input node, or -1 after an error. */
static int input_node(Builder *b, const Stmt *st)
{
	DType t;
	if (!dtype_lookup(st->dtype, &t)) {
		diag_error(b->d, st->dtype_loc, "unknown dtype '%s' (known: f32, f16, bf16, f64, i32)", st->dtype);
		return -1;
	}
	Shape s = {0};
	for (const Arg *a = st->dims; a; a = a->next, s.rank++) {
		if (s.rank == IR_MAX_DIMS) {
			diag_error(b->d, a->loc, "an input has at most %d dimensions", IR_MAX_DIMS);
			return -1;
		}
		if (!input_dim(b, a, s.rank, b->g->batch, &s.dim[s.rank]))
			return -1;
	}
	if (!shape_fits(&s)) {
		diag_error(b->d, st->loc, "input '%s' has too many elements (more than 2^40)", st->name);
		return -1;
	}
	int id = ir_leaf(b->g, OP_input, st->name, s, t, NULL);
	b->g->node[id].loc = st->loc;
	return id;
}

/* A float input of another type than f32 is stored as declared (the runtime writes it so) and
 * converted once, by a cast right after it, to f32, what the layers compute in; its name stands
 * for that f32 value. Returns the value the network reads, -1 after an error. */
static int as_f32(Builder *b, int input)
{
	if (input < 0 || b->g->node[input].dtype == DT_F32 || !dtype_is_float(b->g->node[input].dtype))
		return input;
	char name[FE_NAME_BUF], err[256];
	snprintf(name, sizeof name, "%s.f32", b->g->node[input].name);
	double to = DT_F32;
	int id = ir_add(b->g, OP_cast, &input, &to, name, err, sizeof err);
	if (id < 0)
		diag_error(b->d, b->g->node[input].loc, "%s", err);
	else
		b->g->node[id].loc = b->g->node[input].loc;
	return id;
}

/* Inputs past the image are fed one row per example. */
static void batch_rows_error(Builder *b, const Node *input)
{
	diag_error(b->d, input->loc, "input '%s' must have the batch as its first dimension: the data set feeds it one row per example",
		   input->name);
}

/* A failed input still counts as one, so the data binding says nothing more about it. */
static void input_stmt(Builder *b, const Stmt *st)
{
	bool fresh = check_new_name(b, st->name, st->name_loc);
	int id = fresh ? input_node(b, st) : -1, value = as_f32(b, id);
	if (fresh)
		define(b, st->name, st->name_loc, (Value){V_TENSOR, 0, false, value});
	if (b->ninputs < 2)
		b->inputs[b->ninputs] = id;
	if (b->ninputs >= 2 && id >= 0 && b->g->node[id].shape.dim[0] != b->g->batch)
		batch_rows_error(b, &b->g->node[id]);
	b->ninputs++;
	if (!b->have_prev)
		b->prev = value, b->have_prev = true;
}

/* A constant whose value fails is defined as failed, so its uses stay quiet. */
static void const_stmt(Builder *b, const Stmt *st)
{
	Value v;
	bool ok = eval(b, st->value, &v);
	if (ok && v.kind == V_TENSOR) {
		diag_error(b->d, st->value->loc, "a constant must be a number or a boolean, not a tensor");
		ok = false;
	}
	if (ok ? !check_new_name(b, st->name, st->name_loc) : lookup(b, st->name) != NULL)
		return;
	define(b, st->name, st->name_loc, ok ? v : (Value){V_FAILED, 0, false, -1});
}

static void network_stmt(Builder *b, const Stmt *st)
{
	switch (st->kind) {
	case S_INPUT: input_stmt(b, st); break;
	case S_CONST: const_stmt(b, st); break;
	case S_VALUE: layer_stmt(b, st); break;
	}
}

/* ---- the train section ---- */

static const Signature optimizers[OPT_COUNT] = {
	[OPT_SGD] = {"sgd", 5, {{"lr", ARG_NNUM, 0, ARG_REQUIRED}, {"momentum", ARG_NNUM, 0, 0},
				{"dampening", ARG_NUM, 0, 0}, {"nesterov", ARG_BOOL, 0, 0},
				{"weight_decay", ARG_NNUM, 0, 0}}, false},
	[OPT_ADADELTA] = {"adadelta", 4, {{"lr", ARG_NNUM, 1.0, 0}, {"rho", ARG_NNUM, 0.9, 0},
					  {"eps", ARG_NNUM, 1e-6, 0}, {"weight_decay", ARG_NNUM, 0, 0}}, false},
	[OPT_ADAM] = {"adam", 5, {{"lr", ARG_NNUM, 1e-3, 0}, {"beta1", ARG_PROB, 0.9, 0},
				  {"beta2", ARG_PROB, 0.999, 0}, {"eps", ARG_NNUM, 1e-8, 0},
				  {"weight_decay", ARG_NNUM, 0, 0}}, false},
	[OPT_ADAMW] = {"adamw", 5, {{"lr", ARG_NNUM, 1e-3, 0}, {"beta1", ARG_PROB, 0.9, 0},
				    {"beta2", ARG_PROB, 0.999, 0}, {"eps", ARG_NNUM, 1e-8, 0},
				    {"weight_decay", ARG_NNUM, 1e-2, 0}}, false},
};

static const Signature schedules[SCHED_COUNT] = {
	[SCHED_NONE] = {"none", 1, {{"warmup", ARG_NONNEG, 0, 0}}, false},
	[SCHED_STEP] = {"step", 3, {{"step_size", ARG_POS, 0, ARG_REQUIRED}, {"gamma", ARG_NNUM, 0.1, 0},
				    {"warmup", ARG_NONNEG, 0, 0}}, false},
	/* multistep(30, 60, 90, gamma=0.1): the milestones (epochs) are positional */
	[SCHED_MULTISTEP] = {"multistep", 2, {{"gamma", ARG_NNUM, 0.1, 0}, {"warmup", ARG_NONNEG, 0, 0}}, true},
	[SCHED_COSINE] = {"cosine", 3, {{"t_max", ARG_NONNEG, 0, 0}, {"eta_min", ARG_NNUM, 0, 0},
					{"warmup", ARG_NONNEG, 0, 0}}, false},
};

/* "name" or "name(args)" against a table of signatures: its index, -1 after an error. */
static int train_call(Builder *b, const Expr *e, const Signature *table, int n, const char *what,
		      BoundArgs *args)
{
	if (e->kind != E_CALL && e->kind != E_NAME) {
		diag_error(b->d, e->loc, "expected %s such as %s", what, table[n - 1].name);
		return -1;
	}
	const char *names[16]; /* more than any table of optimizers or schedules holds */
	_Static_assert(OPT_COUNT <= 16 && SCHED_COUNT <= 16, "names[] holds every optimizer and schedule");
	for (int i = 0; i < n; i++) {
		if (!strcmp(e->name, table[i].name))
			return bind(b, &table[i], e->kind == E_CALL ? e->args : NULL, NULL, 0, e->loc, args) ? i : -1;
		names[i] = table[i].name;
	}
	char hint[FE_NAME_BUF + 24];
	diag_error(b->d, e->loc, "unknown %s '%s'%s", what, e->name, did_you_mean(fe_nearest(e->name, names, n), hint, sizeof hint));
	return -1;
}

static void train_optimizer(Builder *b, const Expr *e, TrainConfig *c)
{
	BoundArgs a;
	int k = train_call(b, e, optimizers, OPT_COUNT, "optimizer", &a);
	if (k < 0)
		return;
	c->optimizer = (OptimizerKind)k;
	c->lr = a.v[0];
	if (k == OPT_SGD) {
		c->momentum = a.v[1], c->dampening = a.v[2], c->nesterov = a.v[3] != 0, c->weight_decay = a.v[4];
	} else if (k == OPT_ADADELTA) {
		c->rho = a.v[1], c->eps = a.v[2], c->weight_decay = a.v[3];
	} else {
		c->beta1 = a.v[1], c->beta2 = a.v[2], c->eps = a.v[3], c->weight_decay = a.v[4];
	}
}

/* multistep's milestones: epochs, at least one, each after the one before. */
static void train_milestones(Builder *b, const Expr *e, const BoundArgs *a, TrainConfig *c)
{
	if (a->nvar == 0)
		diag_error(b->d, e->loc, "multistep needs its milestones (epochs), such as multistep(30, 60, gamma=0.1)");
	for (int i = 0; i < a->nvar; i++) {
		if (a->var[i] <= (i ? a->var[i - 1] : 0)) {
			diag_error(b->d, e->loc, "multistep's milestones must be positive and increasing, got %lld after %lld",
				   (long long)a->var[i], (long long)(i ? a->var[i - 1] : 0));
			return;
		}
		c->milestones[i] = a->var[i];
	}
	c->nmilestones = a->nvar;
}

static void train_schedule(Builder *b, const Expr *e, TrainConfig *c)
{
	BoundArgs a;
	int k = train_call(b, e, schedules, SCHED_COUNT, "schedule", &a);
	if (k < 0)
		return;
	c->schedule = (ScheduleKind)k;
	const Signature *sig = &schedules[k];
	c->warmup = (int64_t)a.v[sig->nargs - 1];
	if (k == SCHED_STEP) {
		c->step_size = (int64_t)a.v[0], c->gamma = a.v[1];
	} else if (k == SCHED_MULTISTEP) {
		train_milestones(b, e, &a, c);
		c->gamma = a.v[0];
	} else if (k == SCHED_COSINE) {
		c->t_max = (int64_t)a.v[0], c->eta_min = a.v[1];
	}
}

/* folder("DIR") or npy("DIR"): DIR, relative to the .net file's directory unless absolute, must
 * be a folder; its resolved path goes into c->data_path. */
static void train_data_path(Builder *b, const Expr *e, TrainConfig *c)
{
	const Arg *a = e->args;
	if (!a || a->next || a->key || a->val->kind != E_STRING) {
		diag_error(b->d, a ? a->loc : e->loc, "%s takes one argument, its folder in quotes: data = %s(\"DIR\")", e->name,
			   e->name);
		return;
	}
	const char *dir = a->val->name, *file = b->d->file ? b->d->file : "";
	const char *slash = strrchr(file, '/');
	int base = dir[0] == '/' || !slash ? 0 : (int)(slash - file + 1);
	int n = snprintf(c->data_path, sizeof c->data_path, "%.*s%s", base, file, dir);
	if (n < 0 || (size_t)n >= sizeof c->data_path) {
		diag_error(b->d, a->loc, "the folder's path '%.*s%s' is longer than %zu characters", base, file, dir,
			   sizeof c->data_path - 1);
		c->data_path[0] = '\0';
		return;
	}
	struct stat st;
	bool found = stat(c->data_path, &st) == 0;
	if (!found || !S_ISDIR(st.st_mode)) {
		diag_error(b->d, a->loc, "%s '%s'%s", found ? "not a folder:" : "no folder", c->data_path,
			   base ? " (a relative path starts at the .net file's directory)" : "");
		c->data_path[0] = '\0';
	}
}

static void train_data(Builder *b, const Expr *e, TrainConfig *c)
{
	static const char *const known[] = {"mnist", "cifar10", "synthetic", "folder", "npy"};
	int k = 0, nknown = (int)(sizeof known / sizeof known[0]);
	while ((e->kind == E_NAME || e->kind == E_CALL) && k < nknown && strcmp(e->name, known[k]))
		k++;
	if ((e->kind != E_NAME && e->kind != E_CALL) || k == nknown) {
		diag_error(b->d, e->loc, "unknown data set (known: mnist, cifar10, synthetic, folder, npy)");
		return;
	}
	bool takes_path = !strcmp(e->name, "folder") || !strcmp(e->name, "npy");
	if (e->kind == E_CALL && !takes_path) {
		diag_error(b->d, e->loc, "data set '%s' takes no arguments (folder(\"DIR\") and npy(\"DIR\") take a folder)", e->name);
		return;
	}
	snprintf(c->dataset, sizeof c->dataset, "%s", e->name);
	if (e->kind == E_CALL)
		train_data_path(b, e, c);
}

/* key = N: a whole number in [parse == TP_NONNEG ? 0 : 1, hi] */
static void train_int(Builder *b, const Expr *e, const char *key, TrainParse parse, int64_t hi, const char *unit,
		      int64_t *out)
{
	Value v;
	if (!eval_number(b, e, &v))
		return;
	bool zero_ok = parse == TP_NONNEG;
	if (!v.is_int || v.v < 0 || (v.v == 0 && !zero_ok)) {
		diag_error(b->d, e->loc, "%s must be %s integer, got %.17g", key, zero_ok ? "a non-negative" : "a positive", v.v);
		return;
	}
	if (v.v > (double)hi) {
		diag_error(b->d, e->loc, "%s must be at most %lld%s%s, got %.17g", key, (long long)hi, unit ? " " : "",
			   unit ? unit : "", v.v);
		return;
	}
	*out = (int64_t)v.v;
}

/* precision = fp32|fp16|bf16|tf32: what the forward and backward passes compute in
 * (passes/mixed_precision.c; tf32 in the GEMM templates) */
static void train_precision(Builder *b, const Expr *e, TrainConfig *c)
{
	int k = 0;
	while (e->kind == E_NAME && k < PREC_COUNT && strcmp(e->name, precision_name((PrecisionKind)k)))
		k++;
	if (e->kind != E_NAME || k == PREC_COUNT) {
		diag_error(b->d, e->loc, "unknown precision (known: " PRECISION_LIST ")");
		return;
	}
	c->precision = (PrecisionKind)k;
}

/* The train section's keys: the rows of ir/train_fields.def, of which those with a key count. */
typedef struct {
	const char *key; /* NULL: no key of its own */
	TrainParse parse;
	size_t offset;   /* of the member in TrainConfig */
	int64_t hi;
	const char *unit;
} TrainKey;

/* A whole-number key's member is int64_t, which train_int writes. */
#define IS_I64(member) _Generic(((TrainConfig *)0)->member, int64_t: 1, default: 0)
#define TRAIN_FIELD(wire, member, what, lo, hi, key, parse, unit)                                 \
	_Static_assert(((parse) != TP_POSITIVE && (parse) != TP_NONNEG) || IS_I64(member),        \
		       "train key of " #member ": a whole number needs an int64_t member");
#define TRAIN_LIST(...)
#include "ir/train_fields.def"
#undef IS_I64

static const TrainKey train_keys[] = {
#define TRAIN_FIELD(wire, member, what, lo, hi, key, parse, unit) {key, parse, offsetof(TrainConfig, member), hi, unit},
#define TRAIN_LIST(...)
#include "ir/train_fields.def"
};
#define NKEYS ((int)(sizeof train_keys / sizeof train_keys[0]))

static void train_stmt(Builder *b, const Stmt *st, TrainConfig *c, const Stmt **seen)
{
	if (st->kind != S_VALUE || st->is_loss || !st->name) {
		diag_error(b->d, st->loc, "the train section holds 'key = value' lines only");
		return;
	}
	int k = 0;
	while (k < NKEYS && !(train_keys[k].key && strcmp(st->name, train_keys[k].key) == 0))
		k++;
	if (k == NKEYS) {
		const char *keys[NKEYS];
		int nkeys = 0;
		for (int i = 0; i < NKEYS; i++)
			if (train_keys[i].key)
				keys[nkeys++] = train_keys[i].key;
		char hint[FE_NAME_BUF + 24];
		diag_error(b->d, st->name_loc, "unknown key '%s' in train section%s", st->name,
			   did_you_mean(fe_nearest(st->name, keys, nkeys), hint, sizeof hint));
		return;
	}
	if (seen[k]) {
		diag_error(b->d, st->name_loc, "'%s' is already set", st->name);
		diag_note(b->d, seen[k]->name_loc, "'%s' was set here", st->name);
		return;
	}
	seen[k] = st;
	const TrainKey *key = &train_keys[k];
	switch (key->parse) {
	case TP_OPTIMIZER: train_optimizer(b, st->value, c); break;
	case TP_SCHEDULE: train_schedule(b, st->value, c); break;
	case TP_DATA: train_data(b, st->value, c); break;
	case TP_PRECISION: train_precision(b, st->value, c); break;
	case TP_POSITIVE:
	case TP_NONNEG:
		train_int(b, st->value, key->key, key->parse, key->hi, key->unit, (int64_t *)((char *)c + key->offset));
		break;
	case TP_NONE: break; /* no key: never matched */
	}
}

/* ---- the file ---- */

/* The one section of a kind, or NULL; a second one is an error. */
static const Section *only_section(Builder *b, const AstFile *f, SectionKind kind, const char *what)
{
	const Section *first = NULL;
	for (const Section *s = f->sections; s; s = s->next) {
		if (s->kind != kind)
			continue;
		if (first) {
			diag_error(b->d, s->loc, "a file has one %s section; this is a second", what);
			diag_note(b->d, first->loc, "the first %s section is here", what);
		} else
			first = s;
	}
	return first;
}

/* The data set feeds inputs in declaration order: images, then labels (i32[batch] classes, or
 * float targets of any shape whose first axis is the batch), or images alone for a loss that
 * reads no second input (an autoencoder's). .npy arrays bind any number of inputs by name. */
static void bind_data(Builder *b, const Section *net)
{
	Graph *g = b->g;
	bool by_name = strcmp(g->train.dataset, "npy") == 0;
	if (b->ninputs == 0 || (b->ninputs > 2 && !by_name)) {
		diag_error(b->d, net->loc, "network '%s' declares %d input%s; data set '%s' feeds one or two (images, then labels or targets), data = npy any number by name",
			   net->name, b->ninputs, b->ninputs == 1 ? "" : "s", g->train.dataset);
		return;
	}
	if (b->inputs[0] < 0 || (b->ninputs >= 2 && b->inputs[1] < 0))
		return; /* their errors are out already */
	g->image = b->inputs[0];
	if (b->ninputs == 1)
		return;
	g->label = b->inputs[1];
	const Node *label = &g->node[g->label];
	bool classes = label->dtype == DT_I32 && label->shape.rank == 1;
	bool targets = dtype_is_float(label->dtype) && label->shape.dim[0] == g->batch;
	if (by_name && label->shape.dim[0] != g->batch)
		batch_rows_error(b, label);
	else if (!classes && !targets && !by_name)
		diag_error(b->d, label->loc, "the label input '%s' must be i32[batch] (classes) or a float tensor whose first dimension is the batch (targets)",
			   label->name);
}

static void build_network(Builder *b, const Section *net)
{
	for (const Stmt *st = net->stmts; st; st = st->next)
		network_stmt(b, st);
	if (b->g->loss < 0 && b->loss_loc.line == 0)
		diag_error(b->d, net->loc, "network '%s' has no loss: mark the value to minimize with 'loss'", net->name);
	bind_data(b, net);
}

Graph *fe_build(const AstFile *f, Diag *d, int64_t batch)
{
	Builder b = {0};
	b.d = d;
	const Section *net = only_section(&b, f, SEC_NETWORK, "network");
	const Section *train = only_section(&b, f, SEC_TRAIN, "train");
	if (!net) {
		diag_error(d, (SrcLoc){0, 0}, "no network section");
		return NULL;
	}
	b.g = ir_graph_new(net->name);
	Graph *g = b.g;
	g->train = train_config_default();
	g->image = g->label = g->output = g->loss = g->rng = -1;
	const Stmt *seen[NKEYS] = {0};
	for (const Stmt *st = train ? train->stmts : NULL; st; st = st->next)
		train_stmt(&b, st, &g->train, seen);
	if (batch > 0)
		g->train.batch = batch;
	g->batch = g->train.batch;

	b.counter = calloc((size_t)layer_count(), sizeof *b.counter);
	if (!b.counter) {
		fputs("netc: out of memory\n", stderr);
		abort();
	}
	build_network(&b, net);
	free(b.counter);
	free(b.sym);
	free(b.slot);
	if (d->errors) {
		ir_graph_free(g);
		return NULL;
	}
	return g;
}
