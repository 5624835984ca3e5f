/* suggest.h: the nearest known name to a misspelt one, for "did you mean" in error messages. */
#ifndef NETC_FE_SUGGEST_H
#define NETC_FE_SUGGEST_H

/* The candidate closest to name by edit distance (case and underscores aside, transpositions
 * counting one), or NULL when none is close enough to be a likely typo: at most a third of the
 * longer name's letters (one for names of up to three letters) may differ. */
const char *fe_nearest(const char *name, const char *const *cand, int ncand);

#endif
