/* suggest.c: nearest names by optimal-string-alignment distance (Levenshtein plus adjacent
 * transpositions), on lower-cased names without underscores, so `ReLU`, `maxpool2d` and `kernal`
 * find relu, max_pool2d and kernel. */
#include <ctype.h>
#include <string.h>

#include "frontend/ast.h"
#include "frontend/suggest.h"

/* name lower-cased without '_', at most FE_MAX_NAME letters (names are no longer) */
static int fold(const char *name, char *out)
{
	int n = 0;
	for (; *name && n < FE_MAX_NAME; name++)
		if (*name != '_')
			out[n++] = (char)tolower((unsigned char)*name);
	out[n] = '\0';
	return n;
}

static int min3(int a, int b, int c) { return a < b ? (a < c ? a : c) : (b < c ? b : c); }

static int distance(const char *a, int na, const char *b, int nb)
{
	int d[FE_MAX_NAME + 1][FE_MAX_NAME + 1];
	for (int i = 0; i <= na; i++)
		d[i][0] = i;
	for (int j = 0; j <= nb; j++)
		d[0][j] = j;
	for (int i = 1; i <= na; i++)
		for (int j = 1; j <= nb; j++) {
			d[i][j] = min3(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]));
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < d[i][j])
				d[i][j] = d[i - 2][j - 2] + 1;
		}
	return d[na][nb];
}

const char *fe_nearest(const char *name, const char *const *cand, int ncand)
{
	char a[FE_MAX_NAME + 1], b[FE_MAX_NAME + 1];
	int na = fold(name, a), best = -1, best_d = 0;
	for (int i = 0; i < ncand; i++) {
		int nb = fold(cand[i], b), longer = na > nb ? na : nb;
		int limit = longer <= 3 ? 1 : longer / 3, dist = distance(a, na, b, nb);
		if (dist <= limit && (best < 0 || dist < best_d))
			best = i, best_d = dist;
	}
	return best < 0 ? NULL : cand[best];
}
