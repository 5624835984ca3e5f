/* parser.y: the grammar of .net files (docs/language.md). A pure parser: all state is in the
 * scanner and the FeParse it carries; the AST lives in the FeParse arena. Errors recover at the
 * end of the statement, so one run reports every broken statement once. */
%define api.pure full
%define api.prefix {fe_yy}
%define parse.error custom
%define parse.lac full
%locations
%param {yyscan_t scanner}
%parse-param {FeParse *ps}

%code requires {
#include "frontend/ast.h"
#ifndef YY_TYPEDEF_YY_SCANNER_T
#define YY_TYPEDEF_YY_SCANNER_T
typedef void *yyscan_t;
#endif
}

%code {
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define YYSTYPE FE_YYSTYPE
#define YYLTYPE FE_YYLTYPE
#include "lexer.h"

#define LOC(l) ((SrcLoc){(l).first_line, (l).first_column})

void fe_yyerror(YYLTYPE *loc, yyscan_t scanner, FeParse *ps, const char *msg);
static Expr *check_depth(FeParse *ps, Expr *e);
static Section *section(FeParse *ps, SectionKind kind, YYLTYPE loc, const char *name, Stmt *stmts);
}

%union {
	Expr *expr;
	Arg *arg;
	Stmt *stmt;
	Section *sec;
	const char *str;
}

%token T_NETWORK "'network'"
%token T_TRAIN "'train'"
%token T_INPUT "'input'"
%token T_CONST "'const'"
%token T_LOSS "'loss'"
%token T_TRUE "'true'"
%token T_FALSE "'false'"
%token <str> T_IDENT "name"
%token <expr> T_NUMBER "number"
%token <expr> T_STRING "string"
%token T_NEWLINE "end of line"

%type <sec> items section
%type <stmt> stmts body stmt
%type <arg> args arg
%type <expr> expr call

%left '+' '-'
%left '*' '/' '%'
%precedence NEG

%%

file:
	items                   { ps->file.sections = ast_sections_reverse($1); }
	;

items:
	%empty                  { $$ = NULL; }
	| items sep             { $$ = $1; }
	| items section         { $2->next = $1; $$ = $2; }
	| items error sep       { yyerrok; $$ = $1; }
	;

section:
	T_NETWORK T_IDENT nls '{' body '}'  { $$ = section(ps, SEC_NETWORK, @1, $2, $5); }
	| T_TRAIN nls '{' body '}'          { $$ = section(ps, SEC_TRAIN, @1, NULL, $4); }
	;

nls:
	%empty
	| nls T_NEWLINE
	;

sep:
	T_NEWLINE
	| ';'
	;

/* The last statement before '}' needs no separator. */
body:
	stmts                   { $$ = ast_stmts_reverse($1); }
	| stmts stmt            { $2->next = $1; $$ = ast_stmts_reverse($2); }
	;

stmts:
	%empty                  { $$ = NULL; }
	| stmts sep             { $$ = $1; }
	| stmts stmt sep        { $2->next = $1; $$ = $2; }
	| stmts error sep       { yyerrok; $$ = $1; }
	;

stmt:
	T_INPUT T_IDENT ':' T_IDENT '[' args ']' {
		$$ = ast_stmt(ps->arena, S_INPUT, LOC(@1));
		$$->name = $2;
		$$->name_loc = LOC(@2);
		$$->dtype = $4;
		$$->dtype_loc = LOC(@4);
		$$->dims = ast_args_reverse($6);
	}
	| T_CONST T_IDENT '=' expr {
		$$ = ast_stmt(ps->arena, S_CONST, LOC(@1));
		$$->name = $2;
		$$->name_loc = LOC(@2);
		$$->value = $4;
	}
	| T_IDENT '=' expr {
		$$ = ast_stmt(ps->arena, S_VALUE, LOC(@1));
		$$->name = $1;
		$$->name_loc = LOC(@1);
		$$->value = $3;
	}
	| expr {
		$$ = ast_stmt(ps->arena, S_VALUE, LOC(@1));
		$$->value = $1;
	}
	| T_LOSS T_IDENT '=' expr {
		$$ = ast_stmt(ps->arena, S_VALUE, LOC(@1));
		$$->is_loss = true;
		$$->name = $2;
		$$->name_loc = LOC(@2);
		$$->value = $4;
	}
	| T_LOSS expr {
		$$ = ast_stmt(ps->arena, S_VALUE, LOC(@1));
		$$->is_loss = true;
		$$->value = $2;
	}
	;

/* Lists are built backwards (constant time per element) and reversed by their user. */
args:
	arg                     { $$ = $1; }
	| args ',' arg          { $3->next = $1; $$ = $3; }
	;

arg:
	expr                    { $$ = ast_arg(ps->arena, LOC(@1), NULL, $1); }
	| T_IDENT '=' expr      { $$ = ast_arg(ps->arena, LOC(@1), $1, $3); }
	;

call:
	T_IDENT '(' ')' {
		$$ = ast_expr(ps->arena, E_CALL, LOC(@1));
		$$->name = $1;
	}
	| T_IDENT '(' args ')' {
		$$ = ast_expr(ps->arena, E_CALL, LOC(@1));
		$$->name = $1;
		$$->args = ast_args_reverse($3);
	}
	| T_IDENT '(' args ',' ')' {
		$$ = ast_expr(ps->arena, E_CALL, LOC(@1));
		$$->name = $1;
		$$->args = ast_args_reverse($3);
	}
	;

expr:
	T_NUMBER                { $$ = $1; }
	| T_STRING              { $$ = $1; }
	| T_TRUE                { $$ = ast_expr(ps->arena, E_BOOL, LOC(@1)); $$->num = 1; }
	| T_FALSE               { $$ = ast_expr(ps->arena, E_BOOL, LOC(@1)); }
	| T_IDENT               { $$ = ast_expr(ps->arena, E_NAME, LOC(@1)); $$->name = $1; }
	| call                  { $$ = $1; }
	| '(' expr ')'          { $$ = $2; }
	| '(' expr ',' args ')' {
		/* a tuple such as kernel=(3, 1): the elements in order */
		$$ = ast_expr(ps->arena, E_TUPLE, LOC(@1));
		Arg *first = ast_arg(ps->arena, LOC(@2), NULL, $2);
		first->next = ast_args_reverse($4);
		$$->args = first;
	}
	| '-' expr %prec NEG    { if (!($$ = check_depth(ps, ast_unary(ps->arena, LOC(@1), $2)))) YYERROR; }
	| expr '+' expr         { if (!($$ = check_depth(ps, ast_binary(ps->arena, LOC(@2), '+', $1, $3)))) YYERROR; }
	| expr '-' expr         { if (!($$ = check_depth(ps, ast_binary(ps->arena, LOC(@2), '-', $1, $3)))) YYERROR; }
	| expr '*' expr         { if (!($$ = check_depth(ps, ast_binary(ps->arena, LOC(@2), '*', $1, $3)))) YYERROR; }
	| expr '/' expr         { if (!($$ = check_depth(ps, ast_binary(ps->arena, LOC(@2), '/', $1, $3)))) YYERROR; }
	| expr '%' expr         { if (!($$ = check_depth(ps, ast_binary(ps->arena, LOC(@2), '%', $1, $3)))) YYERROR; }
	;

%%

void fe_parse_error(FeParse *p, SrcLoc loc, const char *fmt, ...)
{
	if (p->quiet)
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	diag_error(p->diag, loc, "%s", msg);
	p->quiet = true;
}

static Expr *check_depth(FeParse *ps, Expr *e)
{
	if (e->depth <= FE_MAX_EXPR_DEPTH)
		return e;
	fe_parse_error(ps, e->loc, "expression nested deeper than %d levels", FE_MAX_EXPR_DEPTH);
	return NULL;
}

static Section *section(FeParse *ps, SectionKind kind, YYLTYPE loc, const char *name, Stmt *stmts)
{
	Section *s = ast_alloc(ps->arena, sizeof *s);
	s->kind = kind;
	s->loc = LOC(loc);
	s->name = name;
	s->stmts = stmts;
	return s;
}

void fe_yyerror(YYLTYPE *loc, yyscan_t scanner, FeParse *ps, const char *msg)
{
	/* only bison's own failures land here: syntax errors go to yyreport_syntax_error */
	if (strstr(msg, "exhausted"))
		msg = "input nested too deeply";
	ps->quiet = false;
	fe_parse_error(ps, LOC(*loc), "%s", msg);
}

/* Bison quotes aliases with '"'; drop them ("end of line" reads better bare). */
static const char *token_name(yysymbol_kind_t sym, char *buf, size_t len)
{
	const char *s = yysymbol_name(sym);
	size_t n = strlen(s);
	if (n >= 2 && s[0] == '"' && s[n - 1] == '"')
		snprintf(buf, len, "%.*s", (int)(n - 2), s + 1);
	else
		snprintf(buf, len, "%s", s);
	return buf;
}

/* Arithmetic operators may follow any expression and ';' anything that ends a line: listing
 * them says nothing useful. */
static bool is_operator(yysymbol_kind_t sym)
{
	const char *s = yysymbol_name(sym);
	return strlen(s) == 3 && s[0] == '\'' && strchr("+-*/%;", s[1]);
}

/* "expected ')' or ',' before 'relu'", or "unexpected 'relu'" when too many things would fit. */
static int yyreport_syntax_error(const yypcontext_t *ctx, yyscan_t scanner, FeParse *ps)
{
	enum { MAX_SHOWN = 4 };
	yysymbol_kind_t exp[16];
	int n = yypcontext_expected_tokens(ctx, exp, 16), kept = 0;
	for (int i = 0; i < n; i++)
		if (!is_operator(exp[i]))
			exp[kept++] = exp[i];
	if (kept == 0)
		kept = n;
	/* a stable, readable order: quoted punctuation first, then words */
	for (int i = 1; i < kept; i++)
		for (int j = i; j > 0 && strcmp(yysymbol_name(exp[j - 1]), yysymbol_name(exp[j])) > 0; j--) {
			yysymbol_kind_t t = exp[j];
			exp[j] = exp[j - 1];
			exp[j - 1] = t;
		}

	yysymbol_kind_t tok = yypcontext_token(ctx);
	char what[96], name[48];
	if (tok == YYSYMBOL_T_NEWLINE || tok == YYSYMBOL_YYEOF)
		token_name(tok, what, sizeof what);
	else
		snprintf(what, sizeof what, "'%.64s'", fe_yyget_text(scanner));

	char msg[400];
	size_t m = 0;
	if (n == 0 || kept > MAX_SHOWN) {
		snprintf(msg, sizeof msg, "unexpected %s", what);
	} else {
		m += (size_t)snprintf(msg, sizeof msg, "expected ");
		for (int i = 0; i < kept; i++) {
			const char *joint = i == 0 ? "" : i == kept - 1 ? " or " : ", ";
			m += (size_t)snprintf(msg + m, sizeof msg - m, "%s%s", joint, token_name(exp[i], name, sizeof name));
		}
		snprintf(msg + m, sizeof msg - m, " before %s", what);
	}
	fe_parse_error(ps, LOC(*yypcontext_location(ctx)), "%s", msg);
	/* Recovery skips to the end of the statement: an open bracket must not hide that newline,
	 * and an error found at the newline leaves the next statement free to report its own. */
	ps->depth = 0;
	if (tok == YYSYMBOL_T_NEWLINE || tok == YYSYMBOL_YYEOF)
		ps->quiet = false;
	return 0;
}

bool fe_parse(FeParse *p, const char *text, size_t len)
{
	yyscan_t sc;
	if (fe_yylex_init_extra(p, &sc)) {
		fputs("netc: out of memory\n", stderr);
		abort();
	}
	p->line = p->col = 1;
	p->depth = 0;
	p->quiet = false;
	YY_BUFFER_STATE buf = fe_yy_scan_bytes(text, (int)len, sc);
	int rc = fe_yyparse(sc, p);
	fe_yy_delete_buffer(buf, sc);
	fe_yylex_destroy(sc);
	return rc == 0 && p->diag->errors == 0;
}
