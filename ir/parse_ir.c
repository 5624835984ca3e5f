/* parse_ir.c: reads the text form ir/print.c writes back into a graph (docs/passes.md), so a lit
 * test can hand one pass a graph written by hand. Nodes are made through ir_leaf and ir_add, so
 * each op's shape inference checks its inputs, and the type a line declares must be the one the
 * op infers. The first mistake stops the reader with "file:line:col: error: ..." and a caret. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir/checked.h"
#include "ir/ops.h"

#define NAME_MAX_LEN 200

/* A name a clause refers to that may come later in the file (group leaders), resolved at the end. */
typedef struct {
	int node;
	bool group; /* group leader; else grad_of */
	SrcLoc loc;
	char name[NAME_MAX_LEN + 1];
} Ref;

typedef struct {
	const char *p;     /* the cursor */
	const char *line0; /* where the cursor's line starts */
	int line;
	Diag *d;
	Graph *g;
	bool failed;
	Ref *ref;
	int nref, capref;
} Reader;

static SrcLoc here(const Reader *r) { return (SrcLoc){r->line, (int)(r->p - r->line0) + 1}; }

/* Reports the first error (the reader stops there) and returns false. */
__attribute__((format(printf, 3, 4))) static bool fail_at(Reader *r, SrcLoc loc, const char *fmt, ...)
{
	if (r->failed)
		return false;
	r->failed = true;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	diag_error(r->d, loc, "%s", msg);
	return false;
}

static void skip_blanks(Reader *r)
{
	while (*r->p == ' ' || *r->p == '\t' || *r->p == '\r')
		r->p++;
}

static bool at_line_end(Reader *r)
{
	skip_blanks(r);
	return *r->p == '\n' || *r->p == 0;
}

/* What the cursor points at, for messages: "'x'" or "the end of the line". */
static const char *found(const Reader *r, char *buf, size_t len)
{
	if (*r->p == '\n' || *r->p == 0 || *r->p == '\r')
		return "the end of the line";
	size_t n = 0;
	while (r->p[n] && !isspace((unsigned char)r->p[n]) && n < 16)
		n++;
	snprintf(buf, len, "'%.*s'", (int)(n ? n : 1), r->p);
	return buf;
}

static bool expect(Reader *r, char c, const char *what)
{
	skip_blanks(r);
	if (*r->p == c) {
		r->p++;
		return true;
	}
	char buf[32];
	return fail_at(r, here(r), "expected %s, found %s", what, found(r, buf, sizeof buf));
}

static bool word_char(char c) { return isalnum((unsigned char)c) || c == '_'; }
static bool name_char(char c) { return word_char(c) || c == '.' || c == '-' || c == '$'; }

/* A keyword, op or dtype: [A-Za-z0-9_]+; false (no error) when there is none. */
static bool word(Reader *r, char *buf, size_t len)
{
	skip_blanks(r);
	size_t n = 0;
	while (word_char(r->p[n]))
		n++;
	if (n == 0 || n >= len)
		return false;
	memcpy(buf, r->p, n);
	buf[n] = 0;
	r->p += n;
	return true;
}

static bool expect_word(Reader *r, char *buf, size_t len, const char *what)
{
	SrcLoc at = (skip_blanks(r), here(r));
	char f[32];
	if (!word(r, buf, len))
		return fail_at(r, at, "expected %s, found %s", what, found(r, f, sizeof f));
	return true;
}

/* %name */
static bool value_name(Reader *r, char buf[NAME_MAX_LEN + 1], SrcLoc *loc)
{
	skip_blanks(r);
	*loc = here(r); /* at the '%' */
	if (!expect(r, '%', "'%' and a value's name"))
		return false;
	size_t n = 0;
	while (name_char(r->p[n]))
		n++;
	if (n == 0) {
		char f[32];
		return fail_at(r, here(r), "expected a value's name after '%%', found %s", found(r, f, sizeof f));
	}
	if (n > NAME_MAX_LEN)
		return fail_at(r, *loc, "a name longer than %d characters", NAME_MAX_LEN);
	memcpy(buf, r->p, n);
	buf[n] = 0;
	r->p += n;
	return true;
}

/* %name of a node defined above */
static bool node_ref(Reader *r, int *id)
{
	char name[NAME_MAX_LEN + 1];
	SrcLoc loc;
	if (!value_name(r, name, &loc))
		return false;
	*id = ir_find(r->g, name);
	if (*id < 0)
		return fail_at(r, loc, "%%%s is not defined above (a value is defined before its uses)", name);
	return true;
}

static bool integer(Reader *r, int64_t lo, int64_t hi, int64_t *v, const char *what)
{
	skip_blanks(r);
	SrcLoc at = here(r);
	char f[32];
	if (!isdigit((unsigned char)*r->p) && !(*r->p == '-' && isdigit((unsigned char)r->p[1])))
		return fail_at(r, at, "expected %s, found %s", what, found(r, f, sizeof f));
	char *end;
	errno = 0;
	long long x = strtoll(r->p, &end, 10);
	if (errno || x < lo || x > hi)
		return fail_at(r, at, "%s %.*s is out of range (%lld to %lld)", what, (int)(end - r->p), r->p,
			       (long long)lo, (long long)hi);
	r->p = end;
	*v = x;
	return true;
}

static bool number(Reader *r, double *v, const char *what)
{
	skip_blanks(r);
	SrcLoc at = here(r);
	char f[32], *end;
	if (isspace((unsigned char)*r->p) || !*r->p)
		return fail_at(r, at, "expected %s, found %s", what, found(r, f, sizeof f));
	*v = strtod(r->p, &end);
	if (end == r->p)
		return fail_at(r, at, "expected %s, found %s", what, found(r, f, sizeof f));
	r->p = end;
	return true;
}

/* ---- node lines ---- */

static bool dtype_of(Reader *r, DType *t)
{
	char w[16];
	SrcLoc at = (skip_blanks(r), here(r));
	if (!expect_word(r, w, sizeof w, "a dtype (f32, f16, bf16, f64, i32)"))
		return false;
	for (int k = 0; k < DT_COUNT; k++)
		if (strcmp(w, dtype_name((DType)k)) == 0) {
			*t = (DType)k;
			return true;
		}
	return fail_at(r, at, "unknown dtype '%s' (f32, f16, bf16, f64, i32)", w);
}

/* [d0, d1, ...] */
static bool dims(Reader *r, Shape *s)
{
	*s = (Shape){0};
	if (!expect(r, '[', "'[' and the dimensions"))
		return false;
	skip_blanks(r);
	if (*r->p == ']') {
		r->p++;
		return true;
	}
	for (;;) {
		if (s->rank == IR_MAX_DIMS)
			return fail_at(r, here(r), "more than %d dimensions", IR_MAX_DIMS);
		if (!integer(r, 1, IR_MAX_NUMEL, &s->dim[s->rank++], "a dimension"))
			return false;
		skip_blanks(r);
		if (*r->p == ']') {
			r->p++;
			return true;
		}
		if (!expect(r, ',', "',' or ']'"))
			return false;
	}
}

/* (%a, %b): exactly the op's input count */
static bool inputs(Reader *r, OpId op, int in[IR_MAX_INPUTS])
{
	SrcLoc at = (skip_blanks(r), here(r));
	int nin = ir_ops[op].nin, k = 0;
	if (!expect(r, '(', "'(' and the op's inputs"))
		return false;
	for (;;) {
		int id;
		if (k == nin)
			return fail_at(r, at, "%s takes %d input%s", ir_ops[op].name, nin, nin == 1 ? "" : "s");
		if (!node_ref(r, &id))
			return false;
		in[k++] = id;
		skip_blanks(r);
		if (*r->p == ')') {
			r->p++;
			break;
		}
		if (!expect(r, ',', "',' or ')'"))
			return false;
	}
	if (k != nin)
		return fail_at(r, at, "%s takes %d input%s, got %d", ir_ops[op].name, nin, nin == 1 ? "" : "s", k);
	return true;
}

/* {name=value, ...}: attributes by the names ops.def gives them; those left out are 0 */
static bool attributes(Reader *r, OpId op, double attr[IR_MAX_ATTRS])
{
	SrcLoc open = here(r);
	r->p++; /* '{' */
	if (op == OP_reshape || op == OP_broadcast_to)
		return fail_at(r, open, "%s takes no attributes: its target is the node's own shape", ir_ops[op].name);
	unsigned given = 0;
	for (;;) {
		char key[64], buf[64];
		SrcLoc at = (skip_blanks(r), here(r));
		if (!expect_word(r, key, sizeof key, "an attribute name"))
			return false;
		int i = ir_attr_index(op, key);
		if (i < 0) {
			const char *all = ir_ops[op].attrs;
			return fail_at(r, at, "%s has no attribute '%s' (%s%s)", ir_ops[op].name, key,
				       *all ? "it has " : "it has none", all);
		}
		if (given & (1u << i))
			return fail_at(r, at, "attribute '%s' given twice", ir_attr_name(op, i, buf, sizeof buf));
		given |= 1u << i;
		if (!expect(r, '=', "'=' and the attribute's value") || !number(r, &attr[i], "a number"))
			return false;
		skip_blanks(r);
		if (*r->p == '}') {
			r->p++;
			return true;
		}
		if (!expect(r, ',', "',' or '}'"))
			return false;
	}
}

/* stored perm=[p0, ...]: a permutation of the node's axes */
static bool stored_perm(Reader *r, Node *n)
{
	char w[16];
	SrcLoc at = (skip_blanks(r), here(r));
	if (!expect_word(r, w, sizeof w, "'perm'") || !expect(r, '=', "'='") || !expect(r, '[', "'['"))
		return false;
	if (strcmp(w, "perm") != 0)
		return fail_at(r, at, "expected 'perm', found '%s'", w);
	unsigned seen = 0;
	for (int d = 0; d < n->shape.rank; d++) {
		int64_t v;
		if ((d && !expect(r, ',', "','")) || !integer(r, 0, n->shape.rank - 1, &v, "an axis"))
			return false;
		if (seen & (1u << v))
			return fail_at(r, at, "perm names axis %lld twice", (long long)v);
		seen |= 1u << v;
		n->perm[d] = (int8_t)v;
	}
	return expect(r, ']', "']' after the node's rank of axes");
}

/* in train,eval,accum */
static bool programs(Reader *r, Node *n, SrcLoc clause)
{
	static const struct {
		const char *name;
		unsigned bit;
	} progs[] = {{"train", PROG_TRAIN}, {"eval", PROG_EVAL}, {"accum", PROG_ACCUM}};
	if (ir_is_leaf(n->op))
		return fail_at(r, clause, "%%%s: a leaf runs in no program", n->name);
	do {
		char w[16];
		SrcLoc at = (skip_blanks(r), here(r));
		if (!expect_word(r, w, sizeof w, "a program (train, eval, accum)"))
			return false;
		size_t k = 0;
		while (k < sizeof progs / sizeof *progs && strcmp(progs[k].name, w) != 0)
			k++;
		if (k == sizeof progs / sizeof *progs)
			return fail_at(r, at, "unknown program '%s' (train, eval, accum)", w);
		n->programs |= progs[k].bit;
		skip_blanks(r);
	} while (*r->p == ',' && r->p++);
	return true;
}

static bool add_ref(Reader *r, int node, bool group)
{
	if (r->nref == r->capref) {
		r->capref = r->capref ? 2 * r->capref : 64;
		Ref *grown = realloc(r->ref, (size_t)r->capref * sizeof *grown);
		if (!grown)
			abort();
		r->ref = grown;
	}
	Ref *f = &r->ref[r->nref];
	f->node = node;
	f->group = group;
	if (!value_name(r, f->name, &f->loc))
		return false;
	r->nref++;
	return true;
}

/* What follows the op: stored perm, in, group, at, ws, and a comment that may say "grad of %x". */
static bool clauses(Reader *r, int id)
{
	for (;;) {
		char w[16], f[32];
		if (at_line_end(r))
			return true;
		SrcLoc at = here(r);
		if (*r->p == ';') {
			r->p++;
			skip_blanks(r);
			if (strncmp(r->p, "grad of", 7) == 0) {
				r->p += 7;
				if (!add_ref(r, id, false) || !at_line_end(r))
					return fail_at(r, here(r), "expected the end of the line after '; grad of %%name'");
			}
			r->p += strcspn(r->p, "\n");
			return true;
		}
		if (!word(r, w, sizeof w))
			return fail_at(r, at, "expected a clause (stored, in, group, at, ws) or the end of the line, "
				       "found %s", found(r, f, sizeof f));
		Node *n = &r->g->node[id];
		int64_t v;
		if (strcmp(w, "stored") == 0) {
			if (!stored_perm(r, n))
				return false;
		} else if (strcmp(w, "in") == 0) {
			if (!programs(r, n, at))
				return false;
		} else if (strcmp(w, "group") == 0) {
			if (ir_is_leaf(n->op))
				return fail_at(r, at, "%%%s: a leaf belongs to no fused group", n->name);
			if (!add_ref(r, id, true))
				return false;
		} else if (strcmp(w, "at") == 0 || strcmp(w, "ws") == 0) {
			if (!integer(r, 0, INT64_C(1) << 48, &v, "a byte offset"))
				return false;
			*(strcmp(w, "at") == 0 ? &n->offset : &n->ws_offset) = v;
		} else
			return fail_at(r, at, "unknown clause '%s' (stored, in, group, at, ws)", w);
	}
}

static bool same_type(const Node *n, DType t, const Shape *s) { return n->dtype == t && shape_eq(&n->shape, s); }

/* %name: dtype[dims] = op(%in, ...) {attrs} clauses */
static bool node_line(Reader *r)
{
	char name[NAME_MAX_LEN + 1], opname[64], a[96], b[96];
	SrcLoc at, op_at;
	DType t = DT_F32;
	Shape s;
	if (!value_name(r, name, &at))
		return false;
	int prev = ir_find(r->g, name);
	if (prev >= 0) {
		fail_at(r, at, "%%%s is defined twice", name);
		diag_note(r->d, r->g->node[prev].loc, "first defined here");
		return false;
	}
	if (!expect(r, ':', "':' and the value's type"))
		return false;
	SrcLoc type_at = (skip_blanks(r), here(r));
	if (!dtype_of(r, &t) || !dims(r, &s) || !expect(r, '=', "'=' and an op"))
		return false;
	op_at = (skip_blanks(r), here(r));
	if (!expect_word(r, opname, sizeof opname, "an op"))
		return false;
	int op = ir_op_lookup(opname);
	if (op < 0)
		return fail_at(r, op_at, "unknown op '%s'", opname);
	double attr[IR_MAX_ATTRS] = {0};
	int in[IR_MAX_INPUTS] = {0}, id;
	bool leaf = ir_is_leaf((OpId)op);
	skip_blanks(r);
	if (!leaf && !inputs(r, (OpId)op, in))
		return false;
	skip_blanks(r);
	if (*r->p == '(' && leaf)
		return fail_at(r, here(r), "%s is a leaf and takes no inputs", opname);
	if (*r->p == '{' && !attributes(r, (OpId)op, attr))
		return false;
	if (op == OP_reshape || op == OP_broadcast_to)
		op_shape_attrs(&s, attr);
	if (leaf) {
		if (!shape_fits(&s))
			return fail_at(r, type_at, "%s has more than 2^40 elements", shape_str(&s, a, sizeof a));
		id = ir_leaf(r->g, (OpId)op, name, s, t, attr);
	} else {
		char err[256];
		id = ir_add(r->g, (OpId)op, in, attr, name, err, sizeof err);
		if (id < 0)
			return fail_at(r, op_at, "%s", err);
		const Node *n = &r->g->node[id];
		if (!same_type(n, t, &s))
			return fail_at(r, type_at, "%%%s is declared %s%s, but %s makes %s%s", name, dtype_name(t),
				       shape_str(&s, a, sizeof a), opname, dtype_name(n->dtype),
				       shape_str(&n->shape, b, sizeof b));
	}
	r->g->node[id].loc = at;
	return clauses(r, id);
}

/* ---- the header and the graph's special nodes ---- */

/* graph NAME (batch N) */
static bool header(Reader *r)
{
	char w[64], name[64];
	int64_t batch;
	SrcLoc at = here(r);
	if (!word(r, w, sizeof w) || strcmp(w, "graph") != 0)
		return fail_at(r, at, "expected 'graph NAME (batch N)' first");
	if (!expect_word(r, name, sizeof name, "the graph's name") || !expect(r, '(', "'(batch N)'"))
		return false;
	SrcLoc b_at = (skip_blanks(r), here(r));
	if (!word(r, w, sizeof w) || strcmp(w, "batch") != 0)
		return fail_at(r, b_at, "expected 'batch N'");
	if (!integer(r, 1, TRAIN_MAX_BATCH, &batch, "a batch size") || !expect(r, ')', "')'"))
		return false;
	if (!at_line_end(r))
		return fail_at(r, here(r), "expected the end of the line after the header");
	snprintf(r->g->name, sizeof r->g->name, "%s", name);
	r->g->batch = r->g->train.batch = batch;
	return true;
}

/* train name=value ...: the settings passes read; those not given keep their defaults */
static bool train_settings(Reader *r)
{
	while (!at_line_end(r)) {
		char key[32], value[32];
		SrcLoc at = here(r);
		if (!expect_word(r, key, sizeof key, "a training setting") || !expect(r, '=', "'=' and its value"))
			return false;
		int i = 0;
		while (i < ir_ntrain_fields && strcmp(ir_train_fields[i].name, key) != 0)
			i++;
		if (i == ir_ntrain_fields)
			return fail_at(r, at, "unknown training setting '%s'", key);
		const TrainField *f = &ir_train_fields[i];
		void *field = (char *)&r->g->train + f->offset;
		int64_t v;
		if (f->kind == TRAIN_FIELD_DOUBLE) {
			if (!number(r, (double *)field, "a number"))
				return false;
			continue;
		}
		if (f->kind == TRAIN_FIELD_ENUM) {
			SrcLoc v_at = (skip_blanks(r), here(r));
			if (!expect_word(r, value, sizeof value, "a name"))
				return false;
			for (v = 0; v <= f->hi && strcmp(f->values[v], value) != 0; v++)
				;
			if (v > f->hi)
				return fail_at(r, v_at, "unknown %s '%s'", key, value);
		} else if (!integer(r, f->lo, f->hi, &v, key))
			return false;
		if (f->kind == TRAIN_FIELD_I64)
			*(int64_t *)field = v;
		else
			*(int *)field = (int)v;
	}
	return true;
}

/* loss %x, eval_swap %node %state, arena N, train ... */
static bool special_line(Reader *r)
{
	Graph *g = r->g;
	const struct {
		const char *key;
		int *id;
	} special[] = {
		{"loss", &g->loss}, {"output", &g->output}, {"image", &g->image}, {"label", &g->label},
		{"lr", &g->lr}, {"rng", &g->rng}, {"eval_output", &g->eval_output}, {"eval_loss", &g->eval_loss},
		{"loss_scale", &g->loss_scale}, {"finite", &g->finite},
	};
	char key[32], f[32];
	SrcLoc at = here(r);
	if (!word(r, key, sizeof key))
		return fail_at(r, at, "expected a node ('%%name: ...'), a special node (loss %%x, ...) or "
			       "'arena N', found %s", found(r, f, sizeof f));
	for (size_t i = 0; i < sizeof special / sizeof *special; i++)
		if (strcmp(key, special[i].key) == 0) {
			if (*special[i].id >= 0)
				return fail_at(r, at, "'%s' given twice", key);
			return node_ref(r, special[i].id);
		}
	if (strcmp(key, "eval_swap") == 0) {
		if (g->neval_swaps == IR_MAX_EVAL_SWAPS)
			return fail_at(r, at, "more than %d eval_swap lines", IR_MAX_EVAL_SWAPS);
		int node, state;
		if (!node_ref(r, &node) || !node_ref(r, &state))
			return false;
		g->eval_swap[g->neval_swaps].node = node;
		g->eval_swap[g->neval_swaps++].state = state;
		return true;
	}
	if (strcmp(key, "train") == 0)
		return train_settings(r);
	if (strcmp(key, "arena") == 0)
		return integer(r, 1, INT64_C(1) << 48, &g->arena_bytes, "the arena's bytes");
	return fail_at(r, at, "unknown line '%s' (a node '%%name: ...', loss, output, image, label, lr, rng, "
		       "eval_output, eval_loss, loss_scale, finite, eval_swap or arena)", key);
}

/* group and grad-of names, now that every node is known; a group's leader is its last member
 * and is its own group */
static bool resolve(Reader *r)
{
	Graph *g = r->g;
	for (int i = 0; i < r->nref; i++) {
		const Ref *f = &r->ref[i];
		int id = ir_find(g, f->name);
		if (id < 0)
			return fail_at(r, f->loc, "%%%s is not defined", f->name);
		if (!f->group) {
			g->node[f->node].grad_of = id;
			continue;
		}
		if (id <= f->node || ir_is_leaf(g->node[id].op))
			return fail_at(r, f->loc, "%%%s cannot lead %%%s's group: a group is named by its last "
				       "member, a computed node after the others", f->name, g->node[f->node].name);
		g->node[f->node].group = id;
	}
	for (int i = 0; i < r->nref; i++) {
		const Ref *f = &r->ref[i];
		int leader = f->group ? g->node[f->node].group : -1;
		if (leader >= 0 && g->node[leader].group != leader)
			return fail_at(r, f->loc, "%%%s cannot lead a group: it is itself in %%%s's group", f->name,
				       g->node[g->node[leader].group].name);
	}
	return true;
}

static void next_line(Reader *r)
{
	r->p += strcspn(r->p, "\n");
	if (*r->p == '\n') {
		r->p++;
		r->line++;
		r->line0 = r->p;
	}
}

Graph *ir_parse_text(const char *text, Diag *d)
{
	Reader r = {.p = text, .line0 = text, .line = 1, .d = d, .g = ir_graph_new(NULL)};
	bool seen_header = false, seen_special = false;
	for (; *r.p && !r.failed; next_line(&r)) {
		if (at_line_end(&r) || *r.p == ';')
			continue;
		if (!seen_header) {
			seen_header = header(&r);
			continue;
		}
		if (*r.p == '%') {
			if (seen_special) {
				fail_at(&r, here(&r), "nodes come before the special nodes (loss, output, ...) and 'arena'");
				break;
			}
			node_line(&r);
		} else {
			seen_special = true;
			if (special_line(&r) && !at_line_end(&r)) {
				char f[32];
				fail_at(&r, here(&r), "expected the end of the line, found %s", found(&r, f, sizeof f));
			}
		}
	}
	if (!r.failed && !seen_header)
		fail_at(&r, (SrcLoc){0, 0}, "no 'graph NAME (batch N)' header: not a netc text graph");
	if (!r.failed)
		resolve(&r);
	char err[512];
	if (!r.failed && !ir_verify(r.g, err, sizeof err))
		fail_at(&r, (SrcLoc){0, 0}, "%s", err);
	free(r.ref);
	if (r.failed) {
		ir_graph_free(r.g);
		return NULL;
	}
	return r.g;
}
