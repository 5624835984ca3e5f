/* ast.c: arena allocation and constructors for the syntax tree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/ast.h"

#define CHUNK_SIZE 16384

typedef struct Chunk {
	struct Chunk *next;
	size_t used, size;
	_Alignas(max_align_t) unsigned char data[];
} Chunk;

struct AstArena {
	Chunk *head;
};

AstArena *ast_arena_new(void)
{
	AstArena *a = calloc(1, sizeof *a);
	if (!a) {
		fputs("netc: out of memory\n", stderr);
		abort();
	}
	return a;
}

void ast_arena_free(AstArena *a)
{
	if (!a)
		return;
	for (Chunk *c = a->head, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	free(a);
}

void *ast_alloc(AstArena *a, size_t size)
{
	size = (size + _Alignof(max_align_t) - 1) & ~(_Alignof(max_align_t) - 1);
	Chunk *c = a->head;
	if (!c || c->size - c->used < size) {
		size_t cap = size > CHUNK_SIZE ? size : CHUNK_SIZE;
		c = malloc(sizeof *c + cap);
		if (!c) {
			fputs("netc: out of memory\n", stderr);
			abort();
		}
		c->used = 0;
		c->size = cap;
		c->next = a->head;
		a->head = c;
	}
	void *p = c->data + c->used;
	c->used += size;
	memset(p, 0, size);
	return p;
}

const char *ast_strdup(AstArena *a, const char *s, size_t len)
{
	char *p = ast_alloc(a, len + 1);
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

Expr *ast_expr(AstArena *a, ExprKind kind, SrcLoc loc)
{
	Expr *e = ast_alloc(a, sizeof *e);
	e->kind = kind;
	e->loc = loc;
	return e;
}

Expr *ast_unary(AstArena *a, SrcLoc loc, Expr *x)
{
	Expr *e = ast_expr(a, E_NEG, loc);
	e->l = x;
	e->depth = x->depth + 1;
	return e;
}

Expr *ast_binary(AstArena *a, SrcLoc loc, char op, Expr *l, Expr *r)
{
	Expr *e = ast_expr(a, E_BIN, loc);
	e->op = op;
	e->l = l;
	e->r = r;
	e->depth = (l->depth > r->depth ? l->depth : r->depth) + 1;
	return e;
}

Arg *ast_arg(AstArena *a, SrcLoc loc, const char *key, Expr *val)
{
	Arg *g = ast_alloc(a, sizeof *g);
	g->loc = loc;
	g->key = key;
	g->val = val;
	return g;
}

Stmt *ast_stmt(AstArena *a, StmtKind kind, SrcLoc loc)
{
	Stmt *s = ast_alloc(a, sizeof *s);
	s->kind = kind;
	s->loc = loc;
	return s;
}

/* One reversal for the three list types: each has its link in a field named next. */
#define REVERSE(T, list)                            \
	do {                                        \
		T *prev = NULL;                     \
		while (list) {                      \
			T *next = list->next;       \
			list->next = prev;          \
			prev = list;                \
			list = next;                \
		}                                   \
		return prev;                        \
	} while (0)

Arg *ast_args_reverse(Arg *list) { REVERSE(Arg, list); }
Stmt *ast_stmts_reverse(Stmt *list) { REVERSE(Stmt, list); }
Section *ast_sections_reverse(Section *list) { REVERSE(Section, list); }
