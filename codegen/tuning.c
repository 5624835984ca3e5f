/* tuning.c: tuning tables, their text, and the choice between a GEMM's candidate tiles (tuning.h). */
#include "codegen/tuning.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cg_emission.h"
#include "codegen/cg_util.h"

/* ---- text ---- */

void cg_tune_key_text(const CgTuneKey *k, char *buf, size_t len)
{
	snprintf(buf, len, "%s %s batch=%lld m=%lld n=%lld k=%lld a=%s b=%s split=%d", k->arch, k->cls,
		 (long long)k->batch, (long long)k->m, (long long)k->n, (long long)k->k, k->a, k->b, k->split);
}

void cg_tile_config_text(const CgTileConfig *c, char *buf, size_t len)
{
	int n = snprintf(buf, len, "tile=%lldx%lld kb=%lld", (long long)c->tm, (long long)c->tn, (long long)c->kb);
	if (c->rm && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " reg=%lldx%lld", (long long)c->rm, (long long)c->rn);
	if (c->rows && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " rows");
	if (c->rows && c->stages && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " stages=%lld", (long long)c->stages);
	if (c->rows && c->tiles && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " tiles=%lld", (long long)c->tiles);
}

bool cg_tune_key_equal(const CgTuneKey *a, const CgTuneKey *b)
{
	return strcmp(a->arch, b->arch) == 0 && strcmp(a->cls, b->cls) == 0 && a->batch == b->batch && a->m == b->m &&
	       a->n == b->n && a->k == b->k && strcmp(a->a, b->a) == 0 && strcmp(a->b, b->b) == 0 &&
	       a->split == b->split;
}

/* ---- parsing ---- */

typedef struct {
	const char *p, *end; /* the line, its comment cut off */
	const char *source;
	int line;
	char *err;
	size_t errlen;
} Line;

static bool fail(Line *l, const char *fmt, const char *what)
{
	char msg[200];
	snprintf(msg, sizeof msg, fmt, what);
	snprintf(l->err, l->errlen, "%s:%d: %s", l->source, l->line, msg);
	return false;
}

static void skip_space(Line *l)
{
	while (l->p < l->end && (*l->p == ' ' || *l->p == '\t' || *l->p == '\r'))
		l->p++;
}

/* The next whitespace-separated word into buf; false at the end of the line or when too long. */
static bool word(Line *l, char *buf, size_t len)
{
	skip_space(l);
	size_t n = 0;
	while (l->p < l->end && *l->p != ' ' && *l->p != '\t' && *l->p != '\r') {
		if (n + 1 >= len)
			return false;
		buf[n++] = *l->p++;
	}
	buf[n] = 0;
	return n > 0;
}

/* A positive integer from s (all of it). */
static bool positive(const char *s, int64_t *v)
{
	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	char *end;
	long long x = strtoll(s, &end, 10);
	if (errno || *end || x < 1)
		return false;
	*v = x;
	return true;
}

/* `name=N` with N a positive integer. */
static bool field(Line *l, const char *name, int64_t *v)
{
	char w[64], want[80];
	snprintf(want, sizeof want, "`%s=N` (N a positive integer)", name);
	size_t n = strlen(name);
	if (!word(l, w, sizeof w) || strncmp(w, name, n) != 0 || w[n] != '=' || !positive(w + n + 1, v))
		return fail(l, "expected %s", want);
	return true;
}

/* An operand's facts: its contiguous index (k, or other), a run length, and 's' where allowed. */
static bool operand(Line *l, const char *name, char other, bool shared_ok, char *out)
{
	char w[32], want[120];
	snprintf(want, sizeof want, "`%s=` then k or %c, a run length%s (as `%s=%c4`)", name, other,
		 shared_ok ? " and an optional s" : "", name, other);
	size_t n = strlen(name);
	if (!word(l, w, sizeof w) || strncmp(w, name, n) != 0 || w[n] != '=')
		return fail(l, "expected %s", want);
	const char *v = w + n + 1;
	if (*v != 'k' && *v != other)
		return fail(l, "expected %s", want);
	char *end;
	long runs = strtol(v + 1, &end, 10);
	if (end == v + 1 || runs < 1 || runs > 64 || (*end && !(shared_ok && strcmp(end, "s") == 0)) ||
	    strlen(v) >= 16)
		return fail(l, "expected %s", want);
	snprintf(out, 16, "%s", v);
	return true;
}

/* The optional words after the k-block: `reg=RMxRN`, a register tile other than the template's
 * own, then `rows`, the halo tiles. */
static bool tile_options(Line *l, CgTileConfig *c)
{
	const char *want = "`reg=RMxRN`, `rows` or a comment (#) after the k-block";
	char w[64];
	if (!word(l, w, sizeof w))
		return fail(l, "expected %s", want);
	if (strcmp(w, "rows") == 0) {
		c->rows = true;
		return true;
	}
	if (c->rm)
		return fail(l, "unexpected `%s` after the configuration (a comment starts with #)", "text");
	if (strncmp(w, "reg=", 4) != 0)
		return fail(l, "expected %s", want);
	char *x = strchr(w + 4, 'x');
	if (!x)
		return fail(l, "expected %s", want);
	*x = 0;
	if (!positive(w + 4, &c->rm) || !positive(x + 1, &c->rn))
		return fail(l, "expected %s", "`reg=RMxRN` (RM and RN positive integers)");
	return true;
}

/* `name=N` after `rows`, N from lo to hi (else: "name=N: range"). */
static bool rows_option(Line *l, const char *name, int64_t lo, int64_t hi, const char *range, int64_t *v)
{
	if (!field(l, name, v))
		return false;
	if (*v < lo || *v > hi) {
		char n[96];
		snprintf(n, sizeof n, "%s=%lld: %s", name, (long long)*v, range);
		return fail(l, "%s", n);
	}
	skip_space(l);
	return true;
}

static bool parse_entry(Line *l, CgTuneEntry *e)
{
	memset(e, 0, sizeof *e);
	e->line = l->line;
	CgTuneKey *k = &e->key;
	if (!word(l, k->arch, sizeof k->arch))
		return fail(l, "expected %s", "an architecture (sm_90, gfx906, host-CPU)");
	if (!word(l, k->cls, sizeof k->cls))
		return fail(l, "expected %s", "a precision class (f32, f16f32, bf16f32, f64, tf32, xf32, mf32, f16, bf16, dot2, f16x2, bf16x2)");
	static const char *const classes[] = {"f32", "f16f32", "bf16f32", "f64", "tf32", "xf32", "mf32", "f16", "bf16", "dot2", "f16x2", "bf16x2"};
	bool known = false;
	for (size_t i = 0; i < sizeof classes / sizeof *classes; i++)
		known |= strcmp(k->cls, classes[i]) == 0;
	if (!known)
		return fail(l, "unknown precision class `%s` (f32, f16f32, bf16f32, f64, tf32, xf32, mf32, f16, bf16, dot2, f16x2, bf16x2)", k->cls);
	int64_t split;
	if (!field(l, "batch", &k->batch) || !field(l, "m", &k->m) || !field(l, "n", &k->n) || !field(l, "k", &k->k) ||
	    !operand(l, "a", 'm', true, k->a) || !operand(l, "b", 'n', false, k->b) || !field(l, "split", &split))
		return false;
	if (split > 4096)
		return fail(l, "split=%s is more slices than any GEMM takes", "N");
	k->split = (int)split;
	char w[64];
	if (!word(l, w, sizeof w) || strcmp(w, ":") != 0)
		return fail(l, "expected %s", "` : ` between the key and the configuration");
	if (!word(l, w, sizeof w) || strncmp(w, "tile=", 5) != 0)
		return fail(l, "expected %s", "`tile=MxN`");
	char *x = strchr(w + 5, 'x');
	if (!x)
		return fail(l, "expected %s", "`tile=MxN`");
	*x = 0;
	if (!positive(w + 5, &e->cfg.tm) || !positive(x + 1, &e->cfg.tn))
		return fail(l, "expected %s", "`tile=MxN` (M and N positive integers)");
	if (!field(l, "kb", &e->cfg.kb))
		return false;
	skip_space(l);
	for (int words = 0; words < 2 && l->p < l->end && !e->cfg.rows; words++) {
		if (!tile_options(l, &e->cfg))
			return false;
		skip_space(l);
	}
	/* after `rows`: its buffers, then its tiles per work-group, each optional */
	if (e->cfg.rows && l->p < l->end) {
		if (strncmp(l->p, "stages=", 7) != 0 && strncmp(l->p, "tiles=", 6) != 0)
			return fail(l, "expected %s", "`stages=N`, `tiles=N` or a comment (#) after `rows`");
		if (strncmp(l->p, "stages=", 7) == 0 && !rows_option(l, "stages", 2, 8, "padded rows take 2 to 8 buffers", &e->cfg.stages))
			return false;
		if (strncmp(l->p, "tiles=", 6) == 0 &&
		    !rows_option(l, "tiles", 2, 4096, "a work-group of padded rows takes 2 to 4096 tiles", &e->cfg.tiles))
			return false;
	}
	if (l->p < l->end)
		return fail(l, "unexpected `%s` after the configuration (a comment starts with #)", "text");
	return true;
}

/* FNV-1a over the key's fields, so that a file of thousands of keys is read and searched in linear
 * time (every GEMM of every unit looks its key up). */
static uint64_t key_hash(const CgTuneKey *k)
{
	uint64_t h = 14695981039346656037u;
	const char *texts[] = {k->arch, k->cls, k->a, k->b};
	for (int i = 0; i < 4; i++)
		for (const char *s = texts[i];; s++) {
			h = (h ^ (unsigned char)*s) * 1099511628211u;
			if (!*s)
				break;
		}
	int64_t nums[] = {k->batch, k->m, k->n, k->k, k->split};
	for (int i = 0; i < 5; i++)
		for (int b = 0; b < 8; b++)
			h = (h ^ (uint8_t)(nums[i] >> (8 * b))) * 1099511628211u;
	return h;
}

/* The slot of key in t's index: the entry's, or the empty one where it would go. */
static int *key_slot(const CgTuning *t, const CgTuneKey *key)
{
	size_t mask = (size_t)t->nslot - 1;
	for (size_t i = key_hash(key) & mask;; i = (i + 1) & mask)
		if (!t->slot[i] || cg_tune_key_equal(&t->e[t->slot[i] - 1].key, key))
			return &t->slot[i];
}

/* An index of at least twice the entries' slots. */
static void reindex(CgTuning *t)
{
	free(t->slot);
	t->nslot = 64;
	while (t->nslot < 2 * t->n + 2)
		t->nslot *= 2;
	t->slot = calloc((size_t)t->nslot, sizeof *t->slot);
	if (!t->slot)
		abort();
	for (int i = 0; i < t->n; i++)
		*key_slot(t, &t->e[i].key) = i + 1;
}

static void push(CgTuning *t, const CgTuneEntry *e)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 16;
		t->e = realloc(t->e, (size_t)t->cap * sizeof *t->e);
		if (!t->e)
			abort();
	}
	t->e[t->n++] = *e;
	if (t->nslot < 2 * t->n + 2)
		reindex(t);
	else
		*key_slot(t, &e->key) = t->n;
}

bool cg_tuning_parse(const char *text, size_t len, const char *source, CgTuning *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof *t);
	snprintf(t->source, sizeof t->source, "%s", source);
	const char *p = text, *end = text + len;
	bool header = false;
	for (int line = 1; p < end; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *hash = memchr(p, '#', (size_t)(le - p));
		Line l = {.p = p, .end = hash ? hash : le, .source = source, .line = line, .err = err, .errlen = errlen};
		skip_space(&l);
		bool blank = l.p == l.end;
		if (!header && !blank) {
			char magic[32], version[32];
			if (!word(&l, magic, sizeof magic) || strcmp(magic, CG_TUNING_MAGIC) != 0) {
				cg_tuning_free(t);
				return fail(&l, "expected the header `%s` (a tuning file written by netc tune)", CG_TUNING_HEADER);
			}
			bool version_ok = word(&l, version, sizeof version) && strcmp(version, CG_TUNING_VERSION) == 0;
			skip_space(&l);
			if (!version_ok || l.p < l.end) {
				cg_tuning_free(t);
				return fail(&l, "unsupported format version (this netc reads `%s`)", CG_TUNING_HEADER);
			}
			header = true;
		} else if (!blank) {
			CgTuneEntry e;
			if (!parse_entry(&l, &e)) {
				cg_tuning_free(t);
				return false;
			}
			if (hash) {
				const char *c = hash + 1;
				while (c < le && *c == ' ')
					c++;
				size_t n = (size_t)(le - c);
				while (n && (c[n - 1] == '\r' || c[n - 1] == ' '))
					n--;
				snprintf(e.comment, sizeof e.comment, "%.*s", (int)n, c);
			}
			if (cg_tuning_find(t, &e.key)) {
				cg_tuning_free(t);
				return fail(&l, "%s: this key has a line already", "duplicate key");
			}
			push(t, &e);
		}
		p = nl ? nl + 1 : end;
	}
	if (!header) {
		Line l = {.source = source, .line = 1, .err = err, .errlen = errlen};
		return fail(&l, "expected the header `%s`; the file is empty", CG_TUNING_HEADER);
	}
	return true;
}

bool cg_tuning_load(const char *path, CgTuning *t, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: cannot read the tuning file: %s", path, strerror(errno));
		return false;
	}
	size_t cap = 1 << 16, n = 0;
	char *text = malloc(cap);
	size_t got;
	while (text && (got = fread(text + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap)
			text = realloc(text, cap *= 2);
	}
	bool bad = ferror(f);
	fclose(f);
	if (!text)
		abort();
	if (bad) {
		free(text);
		snprintf(err, errlen, "%s: cannot read the tuning file", path);
		return false;
	}
	bool ok = memchr(text, 0, n) == NULL;
	if (!ok)
		snprintf(err, errlen, "%s:1: not a tuning file (it holds NUL bytes)", path);
	ok = ok && cg_tuning_parse(text, n, path, t, err, errlen);
	free(text);
	return ok;
}

void cg_tuning_free(CgTuning *t)
{
	free(t->e);
	free(t->slot);
	t->e = NULL;
	t->slot = NULL;
	t->n = t->cap = t->nslot = 0;
}

const CgTuneEntry *cg_tuning_find(const CgTuning *t, const CgTuneKey *key)
{
	if (!t->nslot)
		return NULL;
	int i = *key_slot(t, key);
	return i ? &t->e[i - 1] : NULL;
}

void cg_tuning_set(CgTuning *t, const CgTuneKey *key, const CgTileConfig *cfg, const char *comment)
{
	CgTuneEntry e = {.key = *key, .cfg = *cfg};
	if (comment)
		snprintf(e.comment, sizeof e.comment, "%s", comment);
	CgTuneEntry *had = (CgTuneEntry *)cg_tuning_find(t, key);
	if (had)
		*had = e;
	else
		push(t, &e);
}

void cg_tuning_write(FILE *f, const CgTuning *t, const char *about)
{
	fprintf(f, "%s\n", CG_TUNING_HEADER);
	for (const char *p = about; p && *p;) {
		const char *nl = strchr(p, '\n');
		int n = nl ? (int)(nl - p) : (int)strlen(p);
		fprintf(f, "# %.*s\n", n, p);
		p = nl ? nl + 1 : p + n;
	}
	for (int i = 0; i < t->n; i++) {
		char key[256], cfg[64];
		cg_tune_key_text(&t->e[i].key, key, sizeof key);
		cg_tile_config_text(&t->e[i].cfg, cfg, sizeof cfg);
		fprintf(f, "%s : %s%s%s\n", key, cfg, t->e[i].comment[0] ? "  # " : "", t->e[i].comment);
	}
}

/* ---- what this process's compiles use ---- */

enum { MAX_TABLES = 8 };
static const CgTuning *tables[MAX_TABLES];
static int ntables;
static int candidate = -1;
static atomic_int seen;

void cg_tuning_use(const CgTuning *const *t, int n)
{
	ntables = n < MAX_TABLES ? n : MAX_TABLES;
	for (int i = 0; i < ntables; i++)
		tables[i] = t[i];
}

void cg_tuning_candidate(int i) { candidate = i; }
int cg_tuning_candidates_seen(void) { return atomic_load(&seen); }
void cg_tuning_reset_seen(void) { atomic_store(&seen, 0); }

static void note_seen(int n)
{
	int had = atomic_load(&seen);
	while (n > had && !atomic_compare_exchange_weak(&seen, &had, n))
		;
}

static int find_config(const CgTileConfig *cand, int n, const CgTileConfig *c)
{
	for (int i = 0; i < n; i++)
		if (cand[i].tm == c->tm && cand[i].tn == c->tn && cand[i].kb == c->kb && cand[i].rm == c->rm &&
		    cand[i].rn == c->rn && cand[i].rows == c->rows && cand[i].stages == c->stages &&
		    cand[i].tiles == c->tiles)
			return i;
	return -1;
}

/* The tile note of the kernel being emitted (NULL: nobody records them). */
static CgTileNote *current_note(struct Cg *cg)
{
	if (!cg->emit || !cg->emit->kernels.out || cg->emit->kernels.out->nkernels <= 0)
		return NULL;
	return &cg->emit->kernels.out->kernels[cg->emit->kernels.out->nkernels - 1].tiles;
}

int cg_tuning_choose(struct Cg *cg, const CgTuneKey *key, const CgTileConfig *cand, int n)
{
	note_seen(n);
	CgTileNote note = {.source = CG_TILES_HEURISTIC, .key = *key, .ncand = n};
	snprintf(note.why, sizeof note.why, "heuristic");
	if (candidate >= 0) {
		note.index = candidate < n ? candidate : 0;
		note.source = CG_TILES_CANDIDATE;
		snprintf(note.why, sizeof note.why, "candidate %d of %d%s", note.index, n,
			 candidate < n ? "" : " (fewer candidates than asked for: the heuristic's)");
	} else {
		for (int t = 0; t < ntables; t++) {
			const CgTuneEntry *e = cg_tuning_find(tables[t], key);
			if (!e)
				continue;
			int i = find_config(cand, n, &e->cfg);
			if (i < 0) {
				snprintf(note.why, sizeof note.why, "heuristic (%.255s:%d is no candidate of this GEMM)",
					 tables[t]->source, e->line);
				break;
			}
			note.index = i;
			note.source = CG_TILES_TUNED;
			snprintf(note.why, sizeof note.why, "tuned from %.255s:%d%s%.159s", tables[t]->source, e->line,
				 e->comment[0] ? ": " : "", e->comment);
			break;
		}
	}
	note.cfg = cand[note.index];
	CgTileNote *kernel = current_note(cg);
	if (kernel)
		*kernel = note;
	return note.index;
}

void cg_tuning_note_instr(struct Cg *cg, const char *instr)
{
	CgTileNote *kernel = current_note(cg);
	if (kernel)
		snprintf(kernel->instr, sizeof kernel->instr, "%s", instr);
}

/* ---- the shipped tables (the .tune files of tuning/, built in by CMake as tuning_shipped.c) ---- */

extern const char *const cg_shipped_tuning_names[];
extern const char *const cg_shipped_tuning_texts[];
extern const int cg_shipped_tuning_count;

static CgTuning *shipped;
static pthread_once_t shipped_once = PTHREAD_ONCE_INIT;

static void load_shipped(void)
{
	shipped = calloc(cg_shipped_tuning_count ? (size_t)cg_shipped_tuning_count : 1, sizeof *shipped);
	if (!shipped)
		abort();
	for (int i = 0; i < cg_shipped_tuning_count; i++) {
		char err[512];
		const char *text = cg_shipped_tuning_texts[i];
		/* checked at build time by the tests (tests/lit/cli/tuning.test): a bad file is an
		 * internal error */
		if (!cg_tuning_parse(text, strlen(text), cg_shipped_tuning_names[i], &shipped[i], err, sizeof err)) {
			fprintf(stderr, "netc: internal error: shipped %s\n", err);
			abort();
		}
	}
}

int cg_tuning_shipped_count(void) { return cg_shipped_tuning_count; }

const CgTuning *cg_tuning_shipped(int i)
{
	pthread_once(&shipped_once, load_shipped);
	return i >= 0 && i < cg_shipped_tuning_count ? &shipped[i] : NULL;
}

/* tuning/ARCH.tune serves ARCH */
const CgTuning *cg_tuning_shipped_for(const char *arch)
{
	for (int i = 0; i < cg_shipped_tuning_count; i++) {
		const char *base = strrchr(cg_shipped_tuning_names[i], '/');
		base = base ? base + 1 : cg_shipped_tuning_names[i];
		size_t n = strlen(arch);
		if (strncmp(base, arch, n) == 0 && strcmp(base + n, ".tune") == 0)
			return cg_tuning_shipped(i);
	}
	return NULL;
}
