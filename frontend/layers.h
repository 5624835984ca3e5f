/* layers.h: the layers a .net file can call, their arguments, and how each becomes IR nodes.
 * The same signature type describes the train section's optimizers and schedules. */
#ifndef NETC_FE_LAYERS_H
#define NETC_FE_LAYERS_H

#include <stdbool.h>

#include "frontend/ast.h"
#include "ir/ir.h"

#define SIG_MAX_ARGS 8
/* The most tensor inputs one call takes (concat and add take any number, from 2). */
#define FE_MAX_TENSORS 64
/* Layer.ntensor of concat and add: any number of tensors from 2 to FE_MAX_TENSORS. */
#define LAYER_VARIADIC (-1)
#define FE_NAME_BUF (FE_MAX_NAME + 32) /* a layer name and a suffix such as ".weight" */

/* What an argument accepts. */
typedef enum {
	ARG_NUM,    /* any number */
	ARG_NNUM,   /* number >= 0 */
	ARG_PROB,   /* number in [0, 1) */
	ARG_INT,    /* integer, may be negative (axes) */
	ARG_POS,    /* integer > 0 */
	ARG_NONNEG, /* integer >= 0 */
	ARG_BOOL,   /* true or false */
	ARG_WORD,   /* a bare word from the list arg_words[def], bound as its index there */
} ArgKind;

enum {
	ARG_REQUIRED = 1, /* no default */
	ARG_SAME = 2,     /* defaults to the argument whose index is in def (stride=kernel) */
	ARG_OPTIONAL = 4, /* no default: absent means "all" (sum's dim) */
	ARG_PAIR = 8,     /* a number or a tuple (h, w) of two, as PyTorch's kernel_size: v2 holds w */
};

typedef struct {
	const char *name;
	ArgKind kind;
	double def; /* the default; ARG_WORD: its ArgWords list (the default is the list's first word) */
	unsigned flags;
} SigArg;

/* The word lists of ARG_WORD arguments, NULL-terminated (frontend/layers.c). */
typedef enum {
	WORDS_APPROXIMATE, /* PyTorch's GELU approximations: none, tanh */
	WORDS_REDUCTION,   /* a loss's reduction: mean, sum */
	WORDS_UPSAMPLE,    /* upsample's mode: nearest, bilinear */
	WORDS_COUNT
} ArgWords;
extern const char *const *const arg_words[WORDS_COUNT];

typedef struct {
	const char *name;
	int nargs;
	SigArg arg[SIG_MAX_ARGS];
	bool variadic; /* any number (up to IR_MAX_DIMS) of positional integers: reshape */
} Signature;

/* Arguments after binding: every one has a value unless it is ARG_OPTIONAL and absent. */
typedef struct {
	double v[SIG_MAX_ARGS];
	double v2[SIG_MAX_ARGS]; /* ARG_PAIR: the second of the pair (v's value when one was given) */
	bool given[SIG_MAX_ARGS];
	int64_t var[IR_MAX_DIMS];
	int nvar;
} BoundArgs;

/* One layer being built. */
typedef struct {
	Graph *g;
	Diag *d;
	SrcLoc loc;
	const char *name; /* the layer's name; the last node gets it, params derive theirs from it */
	const char *layer; /* what the statement calls, for messages */
	int in[FE_MAX_TENSORS];
	int nin; /* tensor inputs in in[] */
	const BoundArgs *args;
} LayerCall;

typedef struct Layer {
	Signature sig;
	int ntensor;                 /* tensor inputs it takes, or LAYER_VARIADIC */
	OpId op;                     /* the IR op, for layers that are one node */
	int (*build)(const struct Layer *l, LayerCall *c); /* node id, or -1 after reporting */
} Layer;

/* The layer called name (aliases included), or NULL. */
const Layer *layer_lookup(const char *name);
/* Position in the table, for per-layer counters; < layer_count(). */
int layer_index(const Layer *l);
int layer_count(void);
/* The layer at position i < layer_count(). */
const Layer *layer_at(int i);
/* Alias i < layer_alias_count() (as `linear`), and the layer it names in *layer. */
int layer_alias_count(void);
const char *layer_alias(int i, const Layer **layer);
/* A layer name or alias close to name (a likely typo), or NULL (frontend/suggest.c's rule). */
const char *layer_nearest(const char *name);

#endif
