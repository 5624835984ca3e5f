/* ast.h: the syntax tree of a .net file. Every node lives in one arena that the parser owns, so
 * error recovery and early returns free everything with one call. */
#ifndef NETC_FE_AST_H
#define NETC_FE_AST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/diag.h"

/* Limits that keep hostile input from exhausting the stack or overflowing arithmetic. */
#define FE_MAX_NAME 64          /* characters in an identifier */
#define FE_MAX_DEPTH 64         /* nesting of ( and [ */
#define FE_MAX_EXPR_DEPTH 200   /* operators in one expression tree, counted along its deepest path */
#define FE_MAX_STRING 255          /* characters of a string ("photos/train") */
#define FE_MAX_INT 1099511627776.0 /* 2^40: the largest integer magnitude a .net file may use */

typedef struct AstArena AstArena;

typedef enum { E_NUM, E_BOOL, E_NAME, E_NEG, E_BIN, E_CALL, E_TUPLE, E_STRING } ExprKind;

typedef struct Arg Arg;

typedef struct Expr {
	ExprKind kind;
	SrcLoc loc;
	int depth;       /* height of the tree under this node */
	double num;      /* E_NUM value, E_BOOL 0 or 1 */
	bool is_int;     /* E_NUM written without '.' or exponent */
	const char *name; /* E_NAME, E_CALL callee, E_STRING text (without the quotes) */
	char op;         /* E_BIN: + - * / % */
	struct Expr *l, *r;
	Arg *args;       /* E_CALL arguments, E_TUPLE elements (positional) */
} Expr;

/* One call argument: positional when key is NULL. */
struct Arg {
	const char *key;
	SrcLoc loc; /* of the key, or of the value when positional */
	Expr *val;
	Arg *next;
};

typedef enum {
	S_INPUT, /* input NAME: DTYPE[dims] */
	S_CONST, /* const NAME = EXPR */
	S_VALUE, /* [loss] [NAME =] EXPR: a layer in the network, a key in the train section */
} StmtKind;

typedef struct Stmt {
	StmtKind kind;
	SrcLoc loc;
	const char *name;   /* NULL for an unnamed layer */
	SrcLoc name_loc;
	bool is_loss;
	const char *dtype;  /* S_INPUT */
	SrcLoc dtype_loc;
	Arg *dims;          /* S_INPUT, positional */
	Expr *value;        /* S_CONST, S_VALUE */
	struct Stmt *next;
} Stmt;

typedef enum { SEC_NETWORK, SEC_TRAIN } SectionKind;

typedef struct Section {
	SectionKind kind;
	SrcLoc loc;
	const char *name; /* network name */
	Stmt *stmts;
	struct Section *next;
} Section;

typedef struct {
	Section *sections;
} AstFile;

/* Parser state: the lexer reaches it through yyextra. */
typedef struct {
	AstArena *arena;
	Diag *diag;
	AstFile file;
	int depth;  /* ( and [ open: newlines inside them do not end a statement */
	int line, col; /* where the lexer is */
	bool quiet; /* this statement already has an error: say nothing more until its end */
} FeParse;

/* Reports an error unless the statement already has one (then the rest is noise). */
void fe_parse_error(FeParse *p, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* builder.c: the forward graph of a parsed file, or NULL after reporting errors. batch > 0
 * overrides the train section's batch size. */
struct Graph *fe_build(const AstFile *f, Diag *d, int64_t batch);

/* parser.y: parses text[0..len) (NUL bytes allowed) into p->file; false after reporting errors. */
bool fe_parse(FeParse *p, const char *text, size_t len);

AstArena *ast_arena_new(void);
void ast_arena_free(AstArena *a);
void *ast_alloc(AstArena *a, size_t size); /* zeroed; aborts on out of memory */
const char *ast_strdup(AstArena *a, const char *s, size_t len);

Expr *ast_expr(AstArena *a, ExprKind kind, SrcLoc loc);
Expr *ast_unary(AstArena *a, SrcLoc loc, Expr *e);
Expr *ast_binary(AstArena *a, SrcLoc loc, char op, Expr *l, Expr *r);
Arg *ast_arg(AstArena *a, SrcLoc loc, const char *key, Expr *val);
Stmt *ast_stmt(AstArena *a, StmtKind kind, SrcLoc loc);
/* The parser prepends to lists (constant time however long the file) and reverses them once. */
Arg *ast_args_reverse(Arg *list);
Stmt *ast_stmts_reverse(Stmt *list);
Section *ast_sections_reverse(Section *list);

#endif
