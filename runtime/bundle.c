/* bundle.c: writing and reading bundle files.
 *
 * The format is little-endian and built of sections, each its length, then the CRC-32 of its
 * contents, then the contents, so that a reader can check every section against the bytes really
 * there, and against accidental damage, before it trusts a count or a size in it:
 *
 *   "NETCBNDL"  u32 version
 *   header               section: the scalar fields of Bundle, then its TrainConfig in
 *                        ir/train_fields.def's order, then i32 update_node
 *   buffer table         section: u32 count, count records of BUF_RECORD bytes
 *   input list           section: u32 count, count i32 buffer indices (the data inputs in
 *                        declaration order; since version 7)
 *   code objects         section: u32 count, then each: target[32], arch[32], i32 kind, i32 wave,
 *                        u64 size, size bytes, training, evaluation and accumulation kernel lists
 *   kernel list          section: u32 count, count records of KERNEL_RECORD bytes
 *                        (name[64], symbol[64], i32 node, i64 grid, i32 block, i32 shared,
 *                        i32 nargs, 16 i64 args, 4 i64 sizes; shared since version 9,
 *                        symbol, nargs and args since 10, sizes since 11)
 *   rooflines            section: u32 count (one per code object, in their order), records of
 *                        ROOF_RECORD bytes (f64 peak_gflops, f64 peak_gbs, peak_of[48]); since
 *                        version 8
 *   group counts         section: u32 count, records of GROUP_RECORD bytes (i32 node, f64
 *                        flops, i64 bytes, members[96]); since version 8
 *   tensor maps          section: u32 count (one per code object, in their order), then each
 *                        code object's u32 count and records of TMAP_RECORD bytes (i64 at, i64
 *                        tensor, i32 dtype, i32 rank, 5 i64 dim, 5 i64 stride, 5 i32 box, i32
 *                        swizzle; runtime/tensor_map.h); since version 12
 *   section              u64 bytes, u32 crc32 of those bytes, the bytes
 *
 * Strings are fixed-size fields (as in the structs) that must hold a NUL. Past the checksums every
 * field is checked against the limits the plan implies, so that a bundle passing bundle_read cannot
 * make the runtime index, allocate or loop past what it was compiled for. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/bundle.h"
#include "runtime/crc32.h"
#include "runtime/readfile.h"
#include "runtime/tensor_map.h"

#define BUF_RECORD (96 + 4 * 4 + 8 * BUNDLE_MAX_DIMS + 8 + 8 + 4 + 8 + 4 + 4 * BUNDLE_MAX_DIMS + 4)
#define NINDICES 10 /* buffer indices in the header: image ... finite */
#define KERNEL_RECORD (64 + 64 + 4 + 8 + 4 + 4 + 4 + 8 * BUNDLE_BUFFER_ARGS + 8 * BUNDLE_SIZE_ARGS)
#define MAX_SHARED (256 * 1024) /* more dynamic shared memory than any GPU gives a block */
#define ROOF_RECORD (8 + 8 + 48)
#define GROUP_RECORD (4 + 8 + 8 + 96)
#define TMAP_RECORD (8 + 8 + 4 + 4 + 8 * BUNDLE_TMAP_DIMS + 8 * BUNDLE_TMAP_DIMS + 4 * BUNDLE_TMAP_DIMS + 4)
#define CODE_TARGET 32
#define SECTION_HEAD (8 + 4) /* length and checksum */

/* Limits of what a bundle may say, far beyond any real plan, so that the runtime's int64
 * arithmetic cannot overflow on what passed the reader. */
#define MAX_ARENA (INT64_C(1) << 48)  /* 256 TiB: more than any device holds */
#define MAX_RECORDS (1u << 20)        /* buffers, or kernels in one list */
#define MAX_CODES 64u                 /* code objects (targets) */

/* ---- writing ---- */

typedef struct {
	uint8_t *p;
	size_t n, cap;
	bool oom;
} Wr;

static void w_bytes(Wr *w, const void *src, size_t n)
{
	if (w->oom)
		return;
	if (w->n + n > w->cap) {
		size_t cap = w->cap ? w->cap : 4096;
		while (cap < w->n + n)
			cap *= 2;
		uint8_t *p = realloc(w->p, cap);
		if (!p) {
			w->oom = true;
			return;
		}
		w->p = p;
		w->cap = cap;
	}
	memcpy(w->p + w->n, src, n);
	w->n += n;
}

static void w_u64(Wr *w, uint64_t v)
{
	uint8_t b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	w_bytes(w, b, 8);
}

static void w_u32(Wr *w, uint32_t v)
{
	uint8_t b[4];
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	w_bytes(w, b, 4);
}

static void w_i32(Wr *w, int32_t v) { w_u32(w, (uint32_t)v); }
static void w_i64(Wr *w, int64_t v) { w_u64(w, (uint64_t)v); }

static void w_f64(Wr *w, double v)
{
	uint64_t u;
	memcpy(&u, &v, sizeof u);
	w_u64(w, u);
}

/* A section starts with its length and checksum, patched in by w_end. */
static size_t w_begin(Wr *w)
{
	size_t at = w->n;
	w_u64(w, 0);
	w_u32(w, 0);
	return at;
}

static void w_end(Wr *w, size_t at)
{
	if (w->oom)
		return;
	uint64_t len = w->n - at - SECTION_HEAD;
	uint32_t sum = rt_crc32(0, w->p + at + SECTION_HEAD, (size_t)len);
	for (int i = 0; i < 8; i++)
		w->p[at + i] = (uint8_t)(len >> (8 * i));
	for (int i = 0; i < 4; i++)
		w->p[at + 8 + i] = (uint8_t)(sum >> (8 * i));
}

/* The fields in ir/train_fields.def's order. */
static void w_train(Wr *w, const TrainConfig *c)
{
#define W_i32(m) w_i32(w, c->m)
#define W_i64(m) w_i64(w, c->m)
#define W_f64(m) w_f64(w, c->m)
#define W_str(m) w_bytes(w, c->m, sizeof c->m)
#define TRAIN_FIELD(wire, member, ...) W_##wire(member);
#define TRAIN_LIST(member, ...)                                                                   \
	for (size_t i = 0; i < sizeof c->member / sizeof c->member[0]; i++)                      \
		w_i64(w, c->member[i]);
#include "ir/train_fields.def"
#undef W_i32
#undef W_i64
#undef W_f64
#undef W_str
}

static void w_header(Wr *w, const Bundle *b)
{
	size_t at = w_begin(w);
	w_bytes(w, b->model, sizeof b->model);
	w_i64(w, b->batch);
	w_i64(w, b->arena_bytes);
	w_f64(w, b->flops_per_step);
	const int32_t idx[NINDICES] = {b->image, b->label, b->loss, b->output, b->eval_loss,
				       b->eval_output, b->lr, b->rng, b->loss_scale, b->finite};
	for (int i = 0; i < NINDICES; i++)
		w_i32(w, idx[i]);
	w_train(w, &b->train);
	w_i32(w, b->update_node);
	w_end(w, at);
}

static void w_buffers(Wr *w, const Bundle *b)
{
	size_t at = w_begin(w);
	w_u32(w, (uint32_t)b->nbuf);
	for (int i = 0; i < b->nbuf; i++) {
		const BundleBuffer *x = &b->buf[i];
		w_bytes(w, x->name, sizeof x->name);
		w_i32(w, x->node);
		w_i32(w, x->role);
		w_i32(w, x->dtype);
		w_i32(w, x->rank);
		for (int d = 0; d < BUNDLE_MAX_DIMS; d++)
			w_i64(w, x->dim[d]);
		w_i64(w, x->offset);
		w_i64(w, x->bytes);
		w_i32(w, x->init);
		w_f64(w, x->bound);
		w_i32(w, x->programs);
		for (int d = 0; d < BUNDLE_MAX_DIMS; d++)
			w_i32(w, x->perm[d]);
		w_i32(w, x->group);
	}
	w_end(w, at);
}

static void w_inputs(Wr *w, const Bundle *b)
{
	size_t at = w_begin(w);
	w_u32(w, (uint32_t)b->ninputs);
	for (int i = 0; i < b->ninputs; i++)
		w_i32(w, b->inputs[i]);
	w_end(w, at);
}

static void w_kernels(Wr *w, const BundleKernel *k, int32_t n)
{
	size_t at = w_begin(w);
	w_u32(w, (uint32_t)n);
	for (int i = 0; i < n; i++) {
		w_bytes(w, k[i].name, sizeof k[i].name);
		w_bytes(w, k[i].symbol, sizeof k[i].symbol);
		w_i32(w, k[i].node);
		w_i64(w, k[i].grid);
		w_i32(w, k[i].block);
		w_i32(w, k[i].shared);
		w_i32(w, k[i].nargs);
		for (int a = 0; a < BUNDLE_BUFFER_ARGS; a++)
			w_i64(w, k[i].args[a]);
		for (int a = 0; a < BUNDLE_SIZE_ARGS; a++)
			w_i64(w, k[i].sizes[a]);
	}
	w_end(w, at);
}

static void w_code(Wr *w, const Bundle *b)
{
	size_t at = w_begin(w);
	w_u32(w, (uint32_t)b->ncode);
	for (int i = 0; i < b->ncode; i++) {
		const BundleCode *c = &b->code[i];
		w_bytes(w, c->target, CODE_TARGET);
		w_bytes(w, c->arch, CODE_TARGET);
		w_i32(w, c->kind);
		w_i32(w, c->wave);
		w_u64(w, c->size);
		w_bytes(w, c->data, c->size);
		w_kernels(w, c->train_kernels, c->ntrain);
		w_kernels(w, c->eval_kernels, c->neval);
		w_kernels(w, c->accum_kernels, c->naccum);
	}
	w_end(w, at);
}

static void w_rooflines(Wr *w, const Bundle *b)
{
	size_t at = w_begin(w);
	w_u32(w, (uint32_t)b->ncode);
	for (int i = 0; i < b->ncode; i++) {
		w_f64(w, b->code[i].peak_gflops);
		w_f64(w, b->code[i].peak_gbs);
		w_bytes(w, b->code[i].peak_of, sizeof b->code[i].peak_of);
	}
	w_end(w, at);
}

static void w_groups(Wr *w, const Bundle *b)
{
	size_t at = w_begin(w);
	w_u32(w, (uint32_t)b->ngroups);
	for (int i = 0; i < b->ngroups; i++) {
		const BundleGroup *x = &b->groups[i];
		w_i32(w, x->node);
		w_f64(w, x->flops);
		w_i64(w, x->bytes);
		w_bytes(w, x->members, sizeof x->members);
	}
	w_end(w, at);
}

static void w_tmaps(Wr *w, const Bundle *b)
{
	size_t at = w_begin(w);
	w_u32(w, (uint32_t)b->ncode);
	for (int i = 0; i < b->ncode; i++) {
		w_u32(w, (uint32_t)b->code[i].ntmaps);
		for (int j = 0; j < b->code[i].ntmaps; j++) {
			const BundleTensorMap *m = &b->code[i].tmaps[j];
			w_i64(w, m->at);
			w_i64(w, m->tensor);
			w_i32(w, m->dtype);
			w_i32(w, m->rank);
			for (int d = 0; d < BUNDLE_TMAP_DIMS; d++)
				w_i64(w, m->dim[d]);
			for (int d = 0; d < BUNDLE_TMAP_DIMS; d++)
				w_i64(w, m->stride[d]);
			for (int d = 0; d < BUNDLE_TMAP_DIMS; d++)
				w_i32(w, m->box[d]);
			w_i32(w, m->swizzle);
		}
	}
	w_end(w, at);
}

bool bundle_write(const Bundle *b, const char *path, char *err, size_t errlen)
{
	Wr w = {0};
	w_bytes(&w, BUNDLE_MAGIC, 8);
	w_u32(&w, BUNDLE_VERSION);
	w_header(&w, b);
	w_buffers(&w, b);
	w_inputs(&w, b);
	w_code(&w, b);
	w_rooflines(&w, b);
	w_groups(&w, b);
	w_tmaps(&w, b);
	if (w.oom) {
		free(w.p);
		snprintf(err, errlen, "%s: out of memory writing the bundle", path);
		return false;
	}
	FILE *f = fopen(path, "wb");
	if (!f) {
		snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
		free(w.p);
		return false;
	}
	bool ok = fwrite(w.p, 1, w.n, f) == w.n;
	ok = (fclose(f) == 0) && ok;
	free(w.p);
	if (!ok) {
		snprintf(err, errlen, "%s: write failed: %s", path, strerror(errno));
		remove(path);
	}
	return ok;
}

/* ---- reading ---- */

typedef struct {
	const uint8_t *p;
	size_t pos, end;
	const char *file;
	char *err;
	size_t errlen;
	bool ok;
} Rd;

static bool r_fail(Rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The first error wins: later ones are only its consequences. */
static bool r_fail(Rd *r, const char *fmt, ...)
{
	if (!r->ok)
		return false;
	r->ok = false;
	int n = snprintf(r->err, r->errlen, "%s: ", r->file);
	if (n >= 0 && (size_t)n < r->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return false;
}

static size_t r_left(const Rd *r) { return r->end - r->pos; }

/* Inside a section whose length was checked, running out means the section lies about itself. */
static const uint8_t *r_take(Rd *r, size_t n, const char *what)
{
	if (!r->ok)
		return NULL;
	if (n > r_left(r)) {
		r_fail(r, "malformed bundle: %s runs past the end of its section", what);
		return NULL;
	}
	const uint8_t *p = r->p + r->pos;
	r->pos += n;
	return p;
}

static uint64_t r_u64(Rd *r, const char *what)
{
	const uint8_t *b = r_take(r, 8, what);
	uint64_t v = 0;
	for (int i = 0; b && i < 8; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}

static uint32_t r_u32(Rd *r, const char *what)
{
	const uint8_t *b = r_take(r, 4, what);
	uint32_t v = 0;
	for (int i = 0; b && i < 4; i++)
		v |= (uint32_t)b[i] << (8 * i);
	return v;
}

static int32_t r_i32(Rd *r, const char *what) { return (int32_t)r_u32(r, what); }
static int64_t r_i64(Rd *r, const char *what) { return (int64_t)r_u64(r, what); }

static double r_f64(Rd *r, const char *what)
{
	uint64_t u = r_u64(r, what);
	double v;
	memcpy(&v, &u, sizeof v);
	return v;
}

static void r_str(Rd *r, char *dst, size_t n, const char *what)
{
	const uint8_t *b = r_take(r, n, what);
	if (!b)
		return;
	memcpy(dst, b, n);
	if (!memchr(dst, 0, n)) {
		dst[n - 1] = 0;
		r_fail(r, "malformed bundle: %s is not NUL-terminated", what);
	}
}

/* Reads a section's length and checksum and checks them against what the file holds: the one
 * place a truncated or damaged file shows, before anything in the section is trusted. sub reads
 * the section's contents. */
static bool r_section(Rd *r, const char *what, Rd *sub)
{
	if (!r->ok)
		return false;
	if (r_left(r) < SECTION_HEAD)
		return r_fail(r, "truncated bundle: expected %d bytes of %s length and checksum, file ends "
			      "after %zu", SECTION_HEAD, what, r_left(r));
	uint64_t len = r_u64(r, what);
	uint32_t sum = r_u32(r, what);
	if (len > r_left(r))
		return r_fail(r, "truncated bundle: expected %llu bytes of %s, file ends after %zu",
			      (unsigned long long)len, what, r_left(r));
	uint32_t got = rt_crc32(0, r->p + r->pos, (size_t)len);
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
	got = sum; /* fuzzing: a mutated byte must reach the checks past the checksum */
#endif
	if (got != sum)
		return r_fail(r, "damaged bundle: the checksum of the %s does not match its contents "
			      "(stored %08x, computed %08x): the file changed after netc wrote it; copy it "
			      "again or recompile the model", what, sum, got);
	*sub = *r;
	sub->end = r->pos + (size_t)len;
	r->pos = sub->end;
	return true;
}

/* A section's records: count (at most max) then exactly count * size bytes. Returns the count or
 * -1. */
static int32_t r_count(Rd *r, size_t size, uint32_t max, const char *what)
{
	uint32_t n = r_u32(r, what);
	if (!r->ok)
		return -1;
	if (n > max) {
		r_fail(r, "malformed bundle: %s says %u entries, more than the %u netc allows", what, n, max);
		return -1;
	}
	if (size && (uint64_t)n * size != r_left(r)) {
		r_fail(r, "malformed bundle: %s says %u entries of %zu bytes, its section holds %zu bytes",
		       what, n, size, r_left(r));
		return -1;
	}
	return (int32_t)n;
}

static void *r_alloc(Rd *r, size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p)
		r_fail(r, "out of memory reading the bundle");
	return p;
}

static void r_section_end(Rd *sub, const char *what)
{
	if (sub->ok && r_left(sub))
		r_fail(sub, "malformed bundle: %zu unread bytes at the end of the %s", r_left(sub), what);
}

/* The fields in ir/train_fields.def's order, as w_train wrote them. */
static void r_train(Rd *r, TrainConfig *c)
{
#define R_i32(m, what) c->m = r_i32(r, "header")
#define R_i64(m, what) c->m = r_i64(r, "header")
#define R_f64(m, what) c->m = r_f64(r, "header")
#define R_str(m, what) r_str(r, c->m, sizeof c->m, what)
#define TRAIN_FIELD(wire, member, what, ...) R_##wire(member, what);
#define TRAIN_LIST(member, ...)                                                                   \
	for (size_t i = 0; i < sizeof c->member / sizeof c->member[0]; i++)                      \
		c->member[i] = r_i64(r, "header");
#include "ir/train_fields.def"
#undef R_i32
#undef R_i64
#undef R_f64
#undef R_str
}

/* value within [lo, hi], or the error; past the first error, nothing more. */
static void check_range(Rd *r, const char *name, int64_t value, int64_t lo, int64_t hi)
{
	if (r->ok && (value < lo || value > hi))
		r_fail(r, "malformed bundle: %s is %lld, outside %lld to %lld", name, (long long)value,
		       (long long)lo, (long long)hi);
}

static void check_finite(Rd *r, const char *name, double value)
{
	if (r->ok && !isfinite(value))
		r_fail(r, "malformed bundle: %s is not finite", name);
}

/* Every number of the header within what a plan can mean: enums known, counts that the training
 * loop's int64 arithmetic cannot overflow, reals finite. The integers go first, so that a list's
 * count is known good before its elements are read. */
static void check_header(Rd *r, const Bundle *b)
{
	const TrainConfig *c = &b->train;
	check_range(r, "batch", b->batch, 1, TRAIN_MAX_BATCH);
	check_range(r, "arena size", b->arena_bytes, 0, MAX_ARENA);
	check_range(r, "update node", b->update_node, -1, INT32_MAX);
#define CHECK_i32(m, what, lo, hi) check_range(r, what, c->m, lo, hi)
#define CHECK_i64(m, what, lo, hi) check_range(r, what, c->m, lo, hi)
#define CHECK_f64(m, what, lo, hi)
#define CHECK_str(m, what, lo, hi)
#define TRAIN_FIELD(wire, member, what, lo, hi, ...) CHECK_##wire(member, what, lo, hi);
#define TRAIN_LIST(...)
#include "ir/train_fields.def"
#undef CHECK_i32
#undef CHECK_i64
#undef CHECK_f64
#undef CHECK_str
#define TRAIN_FIELD(...)
#define TRAIN_LIST(member, count, what, lo, hi)                                                   \
	for (int i = 0; i < c->count && r->ok; i++)                                               \
		check_range(r, what, c->member[i], lo, hi);
#include "ir/train_fields.def"
#define TRAIN_FIELD(wire, member, what, ...) FINITE_##wire(member, what);
#define FINITE_i32(m, what)
#define FINITE_i64(m, what)
#define FINITE_f64(m, what) check_finite(r, what, c->m)
#define FINITE_str(m, what)
#define TRAIN_LIST(...)
#include "ir/train_fields.def"
#undef FINITE_i32
#undef FINITE_i64
#undef FINITE_f64
#undef FINITE_str
	check_finite(r, "FLOPs per step", b->flops_per_step);
}

static void r_header(Rd *r, Bundle *b)
{
	Rd s;
	if (!r_section(r, "header", &s))
		return;
	r_str(&s, b->model, sizeof b->model, "model name");
	b->batch = r_i64(&s, "header");
	b->arena_bytes = r_i64(&s, "header");
	b->flops_per_step = r_f64(&s, "header");
	int32_t *idx[NINDICES] = {&b->image, &b->label, &b->loss, &b->output, &b->eval_loss,
				  &b->eval_output, &b->lr, &b->rng, &b->loss_scale, &b->finite};
	for (int i = 0; i < NINDICES; i++)
		*idx[i] = r_i32(&s, "header");
	r_train(&s, &b->train);
	b->update_node = r_i32(&s, "header");
	r_section_end(&s, "header");
	if (s.ok)
		check_header(&s, b);
	r->ok = s.ok;
}

static void r_buffer(Rd *r, BundleBuffer *x)
{
	r_str(r, x->name, sizeof x->name, "buffer name");
	x->node = r_i32(r, "buffer");
	x->role = r_i32(r, "buffer");
	x->dtype = r_i32(r, "buffer");
	x->rank = r_i32(r, "buffer");
	for (int d = 0; d < BUNDLE_MAX_DIMS; d++)
		x->dim[d] = r_i64(r, "buffer");
	x->offset = r_i64(r, "buffer");
	x->bytes = r_i64(r, "buffer");
	x->init = r_i32(r, "buffer");
	x->bound = r_f64(r, "buffer");
	x->programs = r_i32(r, "buffer");
	for (int d = 0; d < BUNDLE_MAX_DIMS; d++)
		x->perm[d] = r_i32(r, "buffer");
	x->group = r_i32(r, "buffer");
}

/* perm[0..rank) is a permutation of 0..rank) */
static bool is_permutation(const int32_t *perm, int rank)
{
	unsigned seen = 0;
	for (int d = 0; d < rank; d++) {
		if (perm[d] < 0 || perm[d] >= rank || (seen >> perm[d] & 1))
			return false;
		seen |= 1u << perm[d];
	}
	return true;
}

/* Everything the runtime later trusts: the buffer's storage lies inside the arena and holds its
 * shape. */
static void check_buffer(Rd *r, const Bundle *b, int i)
{
	const BundleBuffer *x = &b->buf[i];
	if (x->node < 0 || (unsigned)x->role > BUF_INPUT || (unsigned)x->dtype >= DT_COUNT ||
	    (unsigned)x->rank > BUNDLE_MAX_DIMS || (unsigned)x->init > 2 || !(x->bound >= 0) ||
	    !isfinite(x->bound) || !is_permutation(x->perm, x->rank) || x->group < -1) {
		r_fail(r, "malformed bundle: buffer %d '%s' has node %d, role %d, dtype %d, rank %d, "
		       "init %d, bound %g", i, x->name, x->node, x->role, x->dtype, x->rank, x->init,
		       x->bound);
		return;
	}
	int64_t numel = 1;
	for (int d = 0; d < x->rank; d++) {
		if (x->dim[d] < 0 || (x->dim[d] && numel > INT64_MAX / 8 / x->dim[d])) {
			r_fail(r, "malformed bundle: buffer '%s' has dimension %lld", x->name,
			       (long long)x->dim[d]);
			return;
		}
		numel *= x->dim[d];
	}
	if (x->offset == -1)
		return;
	if (x->offset < 0 || x->bytes < 0 || x->offset > b->arena_bytes ||
	    x->bytes > b->arena_bytes - x->offset)
		r_fail(r, "malformed bundle: buffer '%s' at offset %lld of %lld bytes lies outside the "
		       "arena of %lld bytes", x->name, (long long)x->offset, (long long)x->bytes,
		       (long long)b->arena_bytes);
	else if (x->bytes < numel * (int64_t)dtype_size((DType)x->dtype))
		r_fail(r, "malformed bundle: buffer '%s' has %lld bytes, too few for its shape",
		       x->name, (long long)x->bytes);
}

static void r_buffers(Rd *r, Bundle *b)
{
	Rd s;
	if (!r_section(r, "buffer table", &s))
		return;
	int32_t n = r_count(&s, BUF_RECORD, MAX_RECORDS, "buffer table");
	if (n >= 0 && (b->buf = r_alloc(&s, (size_t)n, sizeof *b->buf)))
		b->nbuf = n;
	for (int i = 0; i < b->nbuf && s.ok; i++) {
		r_buffer(&s, &b->buf[i]);
		if (s.ok)
			check_buffer(&s, b, i);
	}
	r->ok = s.ok;
}

/* Each input once, a buffer with storage and a data role. */
static void r_inputs(Rd *r, Bundle *b)
{
	Rd s;
	if (!r_section(r, "input list", &s))
		return;
	int32_t n = r_count(&s, 4, MAX_RECORDS, "input list");
	if (n >= 0 && (b->inputs = r_alloc(&s, (size_t)n, sizeof *b->inputs)))
		b->ninputs = n;
	for (int i = 0; i < b->ninputs && s.ok; i++) {
		int32_t k = b->inputs[i] = r_i32(&s, "input list");
		if (s.ok && (k < 0 || k >= b->nbuf || b->buf[k].offset < 0)) {
			r_fail(&s, "malformed bundle: input %d is buffer %d, not one of the %d buffers with storage", i,
			       k, b->nbuf);
			break;
		}
		const BundleBuffer *x = &b->buf[k];
		if (x->role != BUF_IMAGE && x->role != BUF_LABEL && x->role != BUF_INPUT)
			r_fail(&s, "malformed bundle: input '%s' has role %d, not a data input's", x->name, x->role);
		for (int j = 0; j < i && s.ok; j++)
			if (b->inputs[j] == k)
				r_fail(&s, "malformed bundle: input '%s' is listed twice", x->name);
	}
	r->ok = s.ok;
}

/* The largest grid a launch of code c may have. Every work-group writes at least one byte of the
 * arena, so a grid beyond its bytes runs a kernel past the buffers it was compiled for; a GPU
 * takes at most 2^31 - 1 blocks (CUDA) or 2^32 - 1 work-items (HIP). */
static int64_t max_grid(const Bundle *b, const BundleCode *c, int32_t block)
{
	int64_t most = b->arena_bytes > 0 ? b->arena_bytes : 1;
	int64_t driver = c->kind == CODE_PTX ? INT32_MAX : c->kind == CODE_HSACO ? UINT32_MAX / block : most;
	return most < driver ? most : driver;
}

/* Work-group sizes: one on the host (the thread pool splits the grid), 1 to 1024 on a GPU. */
static bool block_fits(const BundleCode *c, int32_t block)
{
	return c->kind == CODE_HOST ? block == 1 : block >= 1 && block <= 1024;
}

/* The buffer arguments of a kernel: at most BUNDLE_BUFFER_ARGS, each an offset in the arena, the
 * unused ones zero. */
static bool args_fit(const Bundle *b, const BundleKernel *k)
{
	if (k->nargs < 0 || k->nargs > BUNDLE_BUFFER_ARGS)
		return false;
	for (int a = 0; a < BUNDLE_BUFFER_ARGS; a++)
		if (a < k->nargs ? k->args[a] < 0 || k->args[a] >= b->arena_bytes : k->args[a] != 0)
			return false;
	return true;
}

/* The size arguments of a kernel: element counts of buffers in the arena, so none is negative
 * or more than its bytes. */
static bool sizes_fit(const Bundle *b, const BundleKernel *k)
{
	for (int a = 0; a < BUNDLE_SIZE_ARGS; a++)
		if (k->sizes[a] < 0 || k->sizes[a] > b->arena_bytes)
			return false;
	return true;
}

static void r_kernels(Rd *r, const Bundle *b, const BundleCode *c, const char *what,
		      BundleKernel **list, int32_t *count)
{
	Rd s;
	if (!r_section(r, what, &s))
		return;
	int32_t n = r_count(&s, KERNEL_RECORD, MAX_RECORDS, what);
	if (n >= 0 && (*list = r_alloc(&s, (size_t)n, sizeof **list)))
		*count = n;
	for (int i = 0; i < *count && s.ok; i++) {
		BundleKernel *k = &(*list)[i];
		r_str(&s, k->name, sizeof k->name, "kernel name");
		r_str(&s, k->symbol, sizeof k->symbol, "kernel symbol");
		k->node = r_i32(&s, what);
		k->grid = r_i64(&s, what);
		k->block = r_i32(&s, what);
		k->shared = r_i32(&s, what);
		k->nargs = r_i32(&s, what);
		for (int a = 0; a < BUNDLE_BUFFER_ARGS; a++)
			k->args[a] = r_i64(&s, what);
		for (int a = 0; a < BUNDLE_SIZE_ARGS; a++)
			k->sizes[a] = r_i64(&s, what);
		if (s.ok && (!k->name[0] || !k->symbol[0] || k->node < 0 || !block_fits(c, k->block)))
			r_fail(&s, "malformed bundle: kernel %d of the %s for '%s': name '%s', symbol '%s', "
			       "node %d, work-group size %d", i, what, c->target, k->name, k->symbol, k->node,
			       k->block);
		else if (s.ok && (k->shared < 0 || k->shared > (c->kind == CODE_PTX ? MAX_SHARED : 0)))
			r_fail(&s, "malformed bundle: kernel '%s' of the %s for '%s' asks for %d bytes of "
			       "dynamic shared memory (expected 0 to %d)", k->name, what, c->target, k->shared,
			       c->kind == CODE_PTX ? MAX_SHARED : 0);
		else if (s.ok && !args_fit(b, k))
			r_fail(&s, "malformed bundle: kernel '%s' of the %s for '%s' has %d buffer arguments "
			       "(expected 0 to %d, each at an offset inside the arena of %lld bytes)", k->name, what,
			       c->target, k->nargs, BUNDLE_BUFFER_ARGS, (long long)b->arena_bytes);
		else if (s.ok && !sizes_fit(b, k))
			r_fail(&s, "malformed bundle: kernel '%s' of the %s for '%s' has a size argument outside "
			       "0 to %lld (the arena's bytes)", k->name, what, c->target, (long long)b->arena_bytes);
		else if (s.ok && (k->grid < 1 || k->grid > max_grid(b, c, k->block)))
			r_fail(&s, "malformed bundle: kernel '%s' of the %s for '%s' has a grid of %lld "
			       "work-groups of %d, outside 1 to %lld (the arena has %lld bytes)", k->name,
			       what, c->target, (long long)k->grid, k->block,
			       (long long)max_grid(b, c, k->block), (long long)b->arena_bytes);
	}
	r->ok = s.ok;
}

/* The kind, the architecture and the wave size agree: the runtime picks a backend by kind and
 * a device by architecture. */
static bool code_kind_fits(const BundleCode *c)
{
	switch (c->kind) {
	case CODE_HOST: return strcmp(c->arch, "host") == 0 && c->wave == 0;
	case CODE_HSACO: return strncmp(c->arch, "gfx", 3) == 0 && (c->wave == 32 || c->wave == 64);
	case CODE_PTX: return strncmp(c->arch, "sm_", 3) == 0 && c->wave == 32;
	default: return false;
	}
}

static void r_code(Rd *r, Bundle *b)
{
	Rd s;
	if (!r_section(r, "code objects", &s))
		return;
	int32_t n = r_count(&s, 0, MAX_CODES, "code objects");
	if (n > 0 && (size_t)n > r_left(&s) / (CODE_TARGET + 8))
		r_fail(&s, "malformed bundle: %d code objects cannot fit in %zu bytes", n, r_left(&s));
	if (s.ok && n >= 0 && (b->code = r_alloc(&s, (size_t)n, sizeof *b->code)))
		b->ncode = n;
	for (int i = 0; i < b->ncode && s.ok; i++) {
		BundleCode *c = &b->code[i];
		r_str(&s, c->target, sizeof c->target, "code object target");
		r_str(&s, c->arch, sizeof c->arch, "code object architecture");
		c->kind = r_i32(&s, "code object kind");
		c->wave = r_i32(&s, "code object wave size");
		if (s.ok && !code_kind_fits(c))
			r_fail(&s, "malformed bundle: code object '%s' (architecture '%s') has kind %d, wave "
			       "size %d", c->target, c->arch, c->kind, c->wave);
		c->size = r_u64(&s, "code object");
		if (!s.ok)
			break;
		if (c->size > r_left(&s)) {
			r_fail(&s, "malformed bundle: code object for '%s' says %llu bytes, its section "
			       "has %zu left", c->target, (unsigned long long)c->size, r_left(&s));
			break;
		}
		if ((c->data = r_alloc(&s, (size_t)c->size, 1)))
			memcpy(c->data, r_take(&s, (size_t)c->size, "code object"), (size_t)c->size);
		r_kernels(&s, b, c, "training kernel list", &c->train_kernels, &c->ntrain);
		r_kernels(&s, b, c, "evaluation kernel list", &c->eval_kernels, &c->neval);
		r_kernels(&s, b, c, "accumulation kernel list", &c->accum_kernels, &c->naccum);
	}
	r_section_end(&s, "code objects");
	r->ok = s.ok;
}

/* Per code object, the peaks of its roofline: finite and not negative (a GPU's from the target
 * table, zeros on the host or where the table has none). */
static void r_rooflines(Rd *r, Bundle *b)
{
	Rd s;
	if (!r_section(r, "rooflines", &s))
		return;
	int32_t n = r_count(&s, ROOF_RECORD, MAX_CODES, "rooflines");
	if (n >= 0 && n != b->ncode)
		r_fail(&s, "malformed bundle: %d rooflines for %d code objects", n, b->ncode);
	for (int i = 0; i < b->ncode && s.ok; i++) {
		BundleCode *c = &b->code[i];
		c->peak_gflops = r_f64(&s, "rooflines");
		c->peak_gbs = r_f64(&s, "rooflines");
		r_str(&s, c->peak_of, sizeof c->peak_of, "roofline's product");
		if (s.ok && !(c->peak_gflops >= 0 && c->peak_gflops < 1e12 && c->peak_gbs >= 0 && c->peak_gbs < 1e12))
			r_fail(&s, "malformed bundle: the roofline of '%s' is %g GFLOP/s and %g GB/s, not two "
			       "finite rates of at least 0", c->target, c->peak_gflops, c->peak_gbs);
	}
	r->ok = s.ok;
}

/* The training program's group counts: a leader node each (at most once), FLOPs and bytes finite
 * and not negative, a members string. */
static void r_groups(Rd *r, Bundle *b)
{
	Rd s;
	if (!r_section(r, "group counts", &s))
		return;
	int32_t n = r_count(&s, GROUP_RECORD, MAX_RECORDS, "group counts");
	if (n >= 0 && (b->groups = r_alloc(&s, (size_t)n, sizeof *b->groups)))
		b->ngroups = n;
	for (int i = 0; i < b->ngroups && s.ok; i++) {
		BundleGroup *x = &b->groups[i];
		x->node = r_i32(&s, "group counts");
		x->flops = r_f64(&s, "group counts");
		x->bytes = r_i64(&s, "group counts");
		r_str(&s, x->members, sizeof x->members, "group's members");
		if (s.ok && (x->node < 0 || (i > 0 && x->node <= b->groups[i - 1].node) || !(x->flops >= 0 && x->flops < 1e21) ||
			     x->bytes < 0 || x->bytes > MAX_ARENA * 64))
			r_fail(&s, "malformed bundle: group %d (node %d, '%s') has %g FLOPs and %lld bytes (nodes "
			       "ascending, counts finite and at least 0)", i, x->node, x->members, x->flops,
			       (long long)x->bytes);
	}
	r->ok = s.ok;
}

/* Per code object, the tensor maps its kernels read: only PTX has them, and each passes
 * rt_tensor_map_check against the arena (the runtime encodes and stores them there). */
static void r_tmaps(Rd *r, Bundle *b)
{
	Rd s;
	if (!r_section(r, "tensor maps", &s))
		return;
	int32_t n = r_count(&s, 0, MAX_CODES, "tensor maps");
	if (n >= 0 && n != b->ncode)
		r_fail(&s, "malformed bundle: tensor maps for %d code objects, there are %d", n, b->ncode);
	for (int i = 0; i < b->ncode && s.ok; i++) {
		BundleCode *c = &b->code[i];
		int32_t k = r_count(&s, 0, MAX_RECORDS, "tensor maps");
		if (s.ok && (uint64_t)k * TMAP_RECORD > r_left(&s))
			r_fail(&s, "malformed bundle: %d tensor maps of the %s code cannot fit in %zu bytes", k, c->target,
			       r_left(&s));
		else if (s.ok && k > 0 && c->kind != CODE_PTX)
			r_fail(&s, "malformed bundle: the %s code has tensor maps, which only NVIDIA code reads", c->target);
		if (s.ok && k >= 0 && (c->tmaps = r_alloc(&s, (size_t)k, sizeof *c->tmaps)))
			c->ntmaps = k;
		for (int j = 0; j < c->ntmaps && s.ok; j++) {
			BundleTensorMap *m = &c->tmaps[j];
			m->at = r_i64(&s, "tensor maps");
			m->tensor = r_i64(&s, "tensor maps");
			m->dtype = r_i32(&s, "tensor maps");
			m->rank = r_i32(&s, "tensor maps");
			for (int d = 0; d < BUNDLE_TMAP_DIMS; d++)
				m->dim[d] = r_i64(&s, "tensor maps");
			for (int d = 0; d < BUNDLE_TMAP_DIMS; d++)
				m->stride[d] = r_i64(&s, "tensor maps");
			for (int d = 0; d < BUNDLE_TMAP_DIMS; d++)
				m->box[d] = r_i32(&s, "tensor maps");
			m->swizzle = r_i32(&s, "tensor maps");
			char why[200];
			if (s.ok && !rt_tensor_map_check(m, b->arena_bytes, why, sizeof why))
				r_fail(&s, "malformed bundle: tensor map %d of the %s code: %s", j, c->target, why);
		}
	}
	r_section_end(&s, "tensor maps");
	r->ok = s.ok;
}

/* The buffers the runtime writes into (data, learning rate, dropout key, loss scale) have the role
 * that says so, and the data buffers hold one batch. */
static void check_indices(Rd *r, const Bundle *b)
{
	const int32_t idx[NINDICES] = {b->image, b->label, b->loss, b->output, b->eval_loss,
				       b->eval_output, b->lr, b->rng, b->loss_scale, b->finite};
	static const char *const name[NINDICES] = {"image", "label", "loss", "output", "eval_loss",
						   "eval_output", "lr", "rng", "loss_scale", "finite"};
	/* -1: any role */
	static const int32_t role[NINDICES] = {BUF_IMAGE, BUF_LABEL, -1, -1, -1, -1, BUF_LR, BUF_RNG,
					       BUF_LOSS_SCALE, -1};
	for (int i = 0; i < NINDICES && r->ok; i++) {
		if (idx[i] < -1 || idx[i] >= b->nbuf || (idx[i] >= 0 && b->buf[idx[i]].offset < 0)) {
			r_fail(r, "malformed bundle: %s buffer index %d is not one of the %d buffers "
			       "with storage", name[i], idx[i], b->nbuf);
			break;
		}
		if (idx[i] < 0)
			continue;
		const BundleBuffer *x = &b->buf[idx[i]];
		bool batched = i == 0 || i == 1;
		if (role[i] >= 0 && x->role != role[i])
			r_fail(r, "malformed bundle: the %s buffer '%s' has role %d, not %d", name[i], x->name,
			       x->role, role[i]);
		else if (batched && (x->rank < 1 || x->dim[0] != b->batch))
			r_fail(r, "malformed bundle: the %s buffer '%s' has %lld rows, not one per example of "
			       "the batch of %lld", name[i], x->name, (long long)(x->rank ? x->dim[0] : 0),
			       (long long)b->batch);
	}
}

/* The header's image and label are the input list's first two, as the runtime binds them. */
static void check_input_order(Rd *r, const Bundle *b)
{
	if (b->image >= 0 && (b->ninputs < 1 || b->inputs[0] != b->image))
		r_fail(r, "malformed bundle: the image buffer is not the first input");
	else if (b->label >= 0 && (b->ninputs < 2 || b->inputs[1] != b->label))
		r_fail(r, "malformed bundle: the label buffer is not the second input");
}

static void r_magic(Rd *r)
{
	size_t n = r_left(r) < 8 ? r_left(r) : 8;
	if (memcmp(r->p, BUNDLE_MAGIC, n) != 0 || n == 0) {
		r_fail(r, "not a netc bundle (expected magic %s)", BUNDLE_MAGIC);
		return;
	}
	if (r_left(r) < 12) {
		r_fail(r, "truncated bundle: expected 12 bytes of magic and version, file ends after %zu",
		       r_left(r));
		return;
	}
	r->pos = 8;
	uint32_t v = r_u32(r, "version");
	if (v > BUNDLE_VERSION)
		r_fail(r, "bundle version %u is newer than this netc reads (%d): rebuild netc, or "
		       "recompile the model with this one", v, BUNDLE_VERSION);
	else if (v < 1)
		r_fail(r, "bundle version %u is not one netc ever wrote", v);
	else if (v < BUNDLE_VERSION)
		r_fail(r, "bundle version %u is older than this netc reads (%d): recompile the model with "
		       "this netc", v, BUNDLE_VERSION);
}

bool bundle_read(Bundle *b, const char *path, char *err, size_t errlen)
{
	memset(b, 0, sizeof *b);
	uint8_t *data;
	size_t size;
	if (!rt_read_file(path, &data, &size, err, errlen))
		return false;
	Rd r = {data, 0, size, path, err, errlen, true};
	r_magic(&r);
	r_header(&r, b);
	r_buffers(&r, b);
	r_inputs(&r, b);
	r_code(&r, b);
	r_rooflines(&r, b);
	r_groups(&r, b);
	r_tmaps(&r, b);
	if (r.ok && r_left(&r))
		r_fail(&r, "malformed bundle: %zu bytes after the last section", r_left(&r));
	if (r.ok)
		check_indices(&r, b);
	if (r.ok)
		check_input_order(&r, b);
	free(data);
	if (!r.ok)
		bundle_free(b);
	return r.ok;
}

void bundle_free(Bundle *b)
{
	free(b->buf);
	free(b->inputs);
	for (int i = 0; i < b->ncode; i++) {
		free(b->code[i].data);
		free(b->code[i].train_kernels);
		free(b->code[i].eval_kernels);
		free(b->code[i].accum_kernels);
		free(b->code[i].tmaps);
	}
	free(b->code);
	free(b->groups);
	memset(b, 0, sizeof *b);
}

int bundle_find_buffer(const Bundle *b, const char *name)
{
	for (int i = 0; i < b->nbuf; i++)
		if (strcmp(b->buf[i].name, name) == 0)
			return i;
	return -1;
}

const BundleCode *bundle_code_for(const Bundle *b, const char *arch)
{
	for (int i = 0; i < b->ncode; i++)
		if (strcmp(b->code[i].arch, arch) == 0)
			return &b->code[i];
	return NULL;
}

const BundleGroup *bundle_group_of(const Bundle *b, int32_t node)
{
	int lo = 0, hi = b->ngroups; /* leaders ascend (the reader checks it) */
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (b->groups[mid].node < node)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < b->ngroups && b->groups[lo].node == node ? &b->groups[lo] : NULL;
}

const BundleKernel *bundle_launch_of(const BundleCode *c, const char *name)
{
	for (int i = 0; i < c->ntrain; i++)
		if (strcmp(c->train_kernels[i].name, name) == 0)
			return &c->train_kernels[i];
	for (int i = 0; i < c->neval; i++)
		if (strcmp(c->eval_kernels[i].name, name) == 0)
			return &c->eval_kernels[i];
	return NULL;
}
