%{
/* placeholder until the real grammar lands */
int yylex(void);
void yyerror(const char *s);
%}
%token END
%%
file: ;
%%
