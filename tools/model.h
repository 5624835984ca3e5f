/* model.h: what the commands share: a .net file or a compiled bundle, loaded and compiled. */
#ifndef NETC_TOOLS_MODEL_H
#define NETC_TOOLS_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/bundle.h"

typedef struct Graph Graph;

/* Whether path starts with the bundle magic (a compiled artifact rather than a .net file). */
bool model_is_bundle(const char *path);

/* A .net file through the frontend and the pass pipeline (training graph, planned memory).
 * training false stops at the forward graph. Prints errors and returns NULL on failure. */
Graph *model_load_graph(const char *path, int64_t batch, bool training);

/* A bundle from either a .net file (compiled now for the host) or a bundle file. batch > 0 must
 * match a bundle file's. Prints errors and returns false on failure. graph_out, if not NULL, gets
 * the graph of a .net file (NULL for a bundle file); the caller frees it. */
bool model_load_bundle(const char *path, int64_t batch, Bundle *b, Graph **graph_out);

#endif
