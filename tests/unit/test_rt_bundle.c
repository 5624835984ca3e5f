/* test_rt_bundle.c: bundle files round-trip; every truncation, a foreign file, a newer version,
 * random damage of any byte and fields outside their limits (checksums made to match) are errors
 * naming the file, never crashes or clean reads. */
#include "runtime/bundle.h"
#include "runtime/crc32.h"
#include "tests/unit/test_util.h"

/* A made-up bundle with random contents that still passes validation. */
static void make_bundle(Bundle *b)
{
	memset(b, 0, sizeof *b);
	snprintf(b->model, sizeof b->model, "model%u", (unsigned)tu_below(1000));
	b->batch = 1 + tu_below(128);
	b->train = train_config_default();
	b->train.lr = tu_below(1000) / 1000.0 + 0.001;
	b->train.epochs = 1 + tu_below(20);
	b->flops_per_step = (uint32_t)tu_next() * 1000.0;
	b->nbuf = 5 + (int32_t)tu_below(4);
	b->buf = tu_calloc((size_t)b->nbuf, sizeof *b->buf);
	int64_t offset = 0;
	for (int i = 0; i < b->nbuf; i++) {
		BundleBuffer *x = &b->buf[i];
		snprintf(x->name, sizeof x->name, "buf%d_%u", i, (uint32_t)tu_next());
		x->node = (int32_t)tu_below(100);
		x->role = (int32_t)tu_below(BUF_INPUT + 1);
		x->dtype = (int32_t)tu_below(DT_COUNT);
		x->rank = (int32_t)(1 + tu_below(4));
		int64_t numel = 1;
		for (int d = 0; d < x->rank; d++) {
			numel *= x->dim[d] = 1 + tu_below(7);
			x->perm[d] = x->rank - 1 - d; /* any permutation must survive the trip */
		}
		x->bytes = numel * (int64_t)dtype_size((DType)x->dtype);
		x->offset = offset;
		offset += (x->bytes + 63) / 64 * 64;
		x->init = (int32_t)tu_below(2);
		x->bound = tu_below(1000) / 997.0;
		x->programs = (int32_t)(1 + tu_below(3));
		x->group = (int32_t)tu_below(200) - 1;
	}
	b->arena_bytes = offset;
	b->image = 0, b->label = 1, b->loss = 2, b->output = 2;
	b->eval_loss = -1, b->eval_output = -1, b->lr = -1, b->rng = b->nbuf - 1;
	/* the buffers the runtime writes into have their roles, the data one row per example */
	const int32_t role[4][2] = {{b->image, BUF_IMAGE}, {b->label, BUF_LABEL}, {3, BUF_INPUT}, {b->rng, BUF_RNG}};
	for (int i = 0; i < 4; i++)
		b->buf[role[i][0]].role = role[i][1];
	/* the inputs in declaration order: image, label, then the third */
	b->ninputs = 3;
	b->inputs = tu_calloc(3, sizeof *b->inputs);
	b->inputs[0] = b->image, b->inputs[1] = b->label, b->inputs[2] = 3;
	for (int i = 0; i < 2; i++) {
		BundleBuffer *x = &b->buf[i];
		x->bytes = x->bytes / x->dim[0] * b->batch;
		x->dim[0] = b->batch;
		x->offset = b->arena_bytes;
		b->arena_bytes += x->bytes;
	}
	b->loss_scale = -1, b->finite = 1;
	b->update_node = (int32_t)tu_below(100) - 1;
	b->train.accumulate = 1 + (int64_t)tu_below(8);
	b->train.precision = (PrecisionKind)tu_below(PREC_COUNT);
	b->ncode = 2;
	b->code = tu_calloc(2, sizeof *b->code);
	for (int i = 0; i < 2; i++) {
		BundleCode *c = &b->code[i];
		/* the GPU's code object is AMD's or NVIDIA's (which alone takes dynamic shared memory) */
		bool ptx = i && tu_below(2);
		if (ptx)
			snprintf(c->target, sizeof c->target, "sm_%u", 70 + (unsigned)tu_below(30));
		else
			snprintf(c->target, sizeof c->target, i ? "gfx%u:xnack-" : "host", 900 + (unsigned)tu_below(300));
		snprintf(c->arch, sizeof c->arch, "%.*s", (int)strcspn(c->target, ":"), c->target);
		c->kind = ptx ? CODE_PTX : i ? CODE_HSACO : CODE_HOST;
		c->wave = ptx ? 32 : i ? 64 : 0;
		c->size = 50 + tu_below(300);
		c->data = tu_calloc(c->size, 1);
		for (uint64_t j = 0; j < c->size; j++)
			c->data[j] = (uint8_t)tu_next();
		c->ntrain = 1 + (int32_t)tu_below(6);
		c->neval = (int32_t)tu_below(4);
		c->train_kernels = tu_calloc((size_t)c->ntrain, sizeof *c->train_kernels);
		c->naccum = (int32_t)tu_below(3);
		c->eval_kernels = tu_calloc((size_t)c->neval + 1, sizeof *c->eval_kernels);
		c->accum_kernels = tu_calloc((size_t)c->naccum + 1, sizeof *c->accum_kernels);
		for (int k = 0; k < c->ntrain + c->neval + c->naccum; k++) {
			BundleKernel *kk = k < c->ntrain ? &c->train_kernels[k]
					   : k < c->ntrain + c->neval ? &c->eval_kernels[k - c->ntrain]
								      : &c->accum_kernels[k - c->ntrain - c->neval];
			/* unique names: expect_grid_refused finds a kernel's record by its name */
			snprintf(kk->name, sizeof kk->name, "c%d_k%d_op%u", i, k, (unsigned)tu_below(50));
			kk->node = (int32_t)tu_below(100);
			kk->grid = 1 + (int64_t)tu_below((uint64_t)b->arena_bytes);
			kk->block = i ? 256 : 1;
			kk->shared = ptx && tu_below(2) ? (int32_t)tu_below(256 * 1024 + 1) : 0;
			/* its own code, or (as a kernel of the same IR as one before it) the first's */
			snprintf(kk->symbol, sizeof kk->symbol, "%s", k && tu_below(2) ? c->train_kernels[0].name : kk->name);
			kk->nargs = (int32_t)tu_below(BUNDLE_BUFFER_ARGS + 1);
			for (int a = 0; a < kk->nargs; a++)
				kk->args[a] = (int64_t)tu_below((uint64_t)b->arena_bytes);
			for (int a = 0; a < BUNDLE_SIZE_ARGS; a++)
				kk->sizes[a] = (int64_t)tu_below((uint64_t)b->arena_bytes + 1);
		}
	}
	/* NVIDIA code's tensor maps: over a tensor at the arena's start, stored past its end */
	if (b->code[1].kind == CODE_PTX) {
		BundleCode *c = &b->code[1];
		c->ntmaps = 1 + (int32_t)tu_below(3);
		c->tmaps = tu_calloc((size_t)c->ntmaps, sizeof *c->tmaps);
		int64_t maps_at = (b->arena_bytes + 127) / 128 * 128;
		for (int j = 0; j < c->ntmaps; j++) {
			BundleTensorMap *m = &c->tmaps[j];
			m->at = maps_at + j * BUNDLE_TMAP_BYTES;
			m->tensor = 16 * (int64_t)tu_below(4);
			m->dtype = tu_below(2) ? DT_BF16 : DT_F32;
			m->rank = 2;
			m->swizzle = 32 << tu_below(3);
			m->box[0] = m->swizzle / (int32_t)dtype_size((DType)m->dtype);
			m->box[1] = 1 + (int32_t)tu_below(256);
			m->dim[0] = m->box[0] + (int64_t)tu_below(100);
			m->stride[1] = (m->dim[0] * (int64_t)dtype_size((DType)m->dtype) + 15) / 16 * 16;
			m->dim[1] = 1 + (int64_t)tu_below(1000);
		}
		b->arena_bytes = maps_at + c->ntmaps * BUNDLE_TMAP_BYTES + 1024 * 1024;
	}
	/* the GPU's roofline; the host's stays zero (measured at run time) */
	b->code[1].peak_gflops = 1000 + (double)tu_below(90000);
	b->code[1].peak_gbs = 100 + (double)tu_below(5000);
	snprintf(b->code[1].peak_of, sizeof b->code[1].peak_of, "GPU %u", (unsigned)tu_below(1000));
	b->ngroups = 1 + (int32_t)tu_below(5);
	b->groups = tu_calloc((size_t)b->ngroups, sizeof *b->groups);
	for (int i = 0; i < b->ngroups; i++) {
		BundleGroup *x = &b->groups[i];
		x->node = (i ? b->groups[i - 1].node : 0) + 1 + (int32_t)tu_below(20);
		x->flops = (double)tu_below(1u << 30) * 1000;
		x->bytes = (int64_t)tu_below(1u << 30);
		snprintf(x->members, sizeof x->members, "conv2d+bias_add+relu%u", (unsigned)tu_below(10));
	}
}

static void check_equal(const Bundle *a, const Bundle *b)
{
	CHECK(strcmp(a->model, b->model) == 0, "model %s vs %s", a->model, b->model);
	CHECK(a->batch == b->batch && a->arena_bytes == b->arena_bytes, "batch or arena");
	CHECK(a->flops_per_step == b->flops_per_step, "flops");
	CHECK(a->train.lr == b->train.lr && a->train.epochs == b->train.epochs &&
	      strcmp(a->train.dataset, b->train.dataset) == 0 && a->train.optimizer == b->train.optimizer,
	      "train config");
	CHECK(a->image == b->image && a->label == b->label && a->loss == b->loss && a->rng == b->rng &&
	      a->eval_loss == b->eval_loss && a->lr == b->lr && a->loss_scale == b->loss_scale &&
	      a->finite == b->finite && a->update_node == b->update_node, "indices");
	CHECK(a->train.accumulate == b->train.accumulate && a->train.precision == b->train.precision,
	      "accumulation and precision");
	CHECK(a->ninputs == b->ninputs && memcmp(a->inputs, b->inputs, (size_t)a->ninputs * sizeof *a->inputs) == 0,
	      "input list");
	CHECK(a->nbuf == b->nbuf, "nbuf %d vs %d", a->nbuf, b->nbuf);
	for (int i = 0; i < a->nbuf && a->nbuf == b->nbuf; i++)
		CHECK(memcmp(&a->buf[i], &b->buf[i], sizeof a->buf[i]) == 0 ||
		      (strcmp(a->buf[i].name, b->buf[i].name) == 0 && a->buf[i].offset == b->buf[i].offset &&
		       a->buf[i].bytes == b->buf[i].bytes && a->buf[i].bound == b->buf[i].bound &&
		       memcmp(a->buf[i].dim, b->buf[i].dim, sizeof a->buf[i].dim) == 0 &&
		       memcmp(a->buf[i].perm, b->buf[i].perm, sizeof a->buf[i].perm) == 0 &&
		       a->buf[i].role == b->buf[i].role && a->buf[i].dtype == b->buf[i].dtype &&
		       a->buf[i].group == b->buf[i].group),
		      "buffer %d", i);
	CHECK(a->ncode == b->ncode, "ncode");
	for (int i = 0; i < a->ncode && a->ncode == b->ncode; i++) {
		const BundleCode *x = &a->code[i], *y = &b->code[i];
		CHECK(strcmp(x->target, y->target) == 0 && strcmp(x->arch, y->arch) == 0 && x->kind == y->kind &&
		      x->wave == y->wave && x->size == y->size && memcmp(x->data, y->data, x->size) == 0,
		      "code %d", i);
		CHECK(x->ntrain == y->ntrain && x->neval == y->neval && x->naccum == y->naccum,
		      "kernel counts of code %d", i);
		for (int k = 0; k < x->naccum && x->naccum == y->naccum; k++)
			CHECK(strcmp(x->accum_kernels[k].name, y->accum_kernels[k].name) == 0 &&
			      x->accum_kernels[k].grid == y->accum_kernels[k].grid, "accum kernel %d", k);
		for (int k = 0; k < x->ntrain && x->ntrain == y->ntrain; k++)
			CHECK(strcmp(x->train_kernels[k].name, y->train_kernels[k].name) == 0 &&
			      strcmp(x->train_kernels[k].symbol, y->train_kernels[k].symbol) == 0 &&
			      x->train_kernels[k].nargs == y->train_kernels[k].nargs &&
			      memcmp(x->train_kernels[k].args, y->train_kernels[k].args, sizeof x->train_kernels[k].args) == 0 &&
			      memcmp(x->train_kernels[k].sizes, y->train_kernels[k].sizes, sizeof x->train_kernels[k].sizes) == 0 &&
			      x->train_kernels[k].grid == y->train_kernels[k].grid &&
			      x->train_kernels[k].block == y->train_kernels[k].block &&
			      x->train_kernels[k].shared == y->train_kernels[k].shared, "train kernel %d", k);
		for (int k = 0; k < x->neval && x->neval == y->neval; k++)
			CHECK(strcmp(x->eval_kernels[k].name, y->eval_kernels[k].name) == 0 &&
			      x->eval_kernels[k].node == y->eval_kernels[k].node, "eval kernel %d", k);
		CHECK(x->ntmaps == y->ntmaps &&
		      (!x->ntmaps || memcmp(x->tmaps, y->tmaps, (size_t)x->ntmaps * sizeof *x->tmaps) == 0),
		      "tensor maps of code %d", i);
	}
	for (int i = 0; i < a->ncode && a->ncode == b->ncode; i++)
		CHECK(a->code[i].peak_gflops == b->code[i].peak_gflops && a->code[i].peak_gbs == b->code[i].peak_gbs &&
		      strcmp(a->code[i].peak_of, b->code[i].peak_of) == 0, "roofline of code %d", i);
	CHECK(a->ngroups == b->ngroups, "ngroups %d vs %d", a->ngroups, b->ngroups);
	for (int i = 0; i < a->ngroups && a->ngroups == b->ngroups; i++) {
		const BundleGroup *x = &a->groups[i], *y = bundle_group_of(b, x->node);
		CHECK(y == &b->groups[i] && x->flops == y->flops && x->bytes == y->bytes &&
		      strcmp(x->members, y->members) == 0, "group %d (node %d)", i, x->node);
		CHECK(!bundle_group_of(b, x->node - 1) || (i > 0 && a->groups[i - 1].node == x->node - 1),
		      "bundle_group_of finds node %d, which leads no group", x->node - 1);
	}
	CHECK(bundle_code_for(b, b->code[1].arch) == &b->code[1], "bundle_code_for gfx");
	CHECK(bundle_code_for(b, "host") == &b->code[0], "bundle_code_for host");
	/* the random bundle's NVIDIA codes are sm_70 to sm_99, so no code is sm_100 */
	CHECK(bundle_code_for(b, "sm_100") == NULL, "bundle_code_for missing");
	CHECK(bundle_find_buffer(b, a->buf[1].name) == 1, "find_buffer");
	CHECK(bundle_find_buffer(b, "nope") == -1, "find_buffer missing");
}

static uint8_t *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		abort();
	fseek(f, 0, SEEK_END);
	*size = (size_t)ftell(f);
	rewind(f);
	uint8_t *p = malloc(*size);
	if (!p || fread(p, 1, *size, f) != *size)
		abort();
	fclose(f);
	return p;
}

static void spit(const char *path, const uint8_t *data, size_t size)
{
	/* a new file rather than a truncated one, which ext4 flushes to disk on close */
	remove(path);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size)
		abort();
	fclose(f);
}

/* Reading data must fail with a message that names the file and contains want. */
static void expect_error(const char *path, const uint8_t *data, size_t size, const char *want)
{
	spit(path, data, size);
	Bundle b;
	char err[512] = "";
	bool ok = bundle_read(&b, path, err, sizeof err);
	CHECK(!ok, "%zu bytes read as a bundle", size);
	CHECK(strstr(err, path) == err, "message does not name the file: %s", err);
	CHECK(!want || strstr(err, want), "%zu bytes: '%s' lacks '%s'", size, err, want);
	if (ok)
		bundle_free(&b);
}

/* ---- checksums: the test's own walk over the format, to hand-edit a field and still reach the
 * range checks behind the section checksums ---- */

#define SECTION_HEAD 12 /* u64 length, u32 crc32 */

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Recomputes the checksum of the section at data[at] (after any nested ones); returns its end. */
static size_t reseal_section(uint8_t *data, size_t at)
{
	size_t len = (size_t)get_u64(data + at);
	uint32_t sum = rt_crc32(0, data + at + SECTION_HEAD, len);
	for (int i = 0; i < 4; i++)
		data[at + 8 + i] = (uint8_t)(sum >> (8 * i));
	return at + SECTION_HEAD + len;
}

/* Every section's checksum made to match its (edited) contents. */
static void reseal(uint8_t *data, const Bundle *a)
{
	size_t header = 12, buffers = header + SECTION_HEAD + (size_t)get_u64(data + header);
	size_t inputs = buffers + SECTION_HEAD + (size_t)get_u64(data + buffers);
	size_t code = inputs + SECTION_HEAD + (size_t)get_u64(data + inputs);
	reseal_section(data, header);
	reseal_section(data, buffers);
	reseal_section(data, inputs);
	size_t at = code + SECTION_HEAD + 4;
	for (int i = 0; i < a->ncode; i++) {
		at += 32 + 32 + 4 + 4;
		at += 8 + (size_t)get_u64(data + at);
		for (int list = 0; list < 3; list++)
			at = reseal_section(data, at);
	}
	reseal_section(data, code);
}

/* The byte offset of the first occurrence of a kernel name, the start of its record. */
static size_t find_name(const uint8_t *data, size_t size, const char *name)
{
	size_t n = strlen(name) + 1;
	for (size_t i = 0; i + n <= size; i++)
		if (memcmp(data + i, name, n) == 0)
			return i;
	abort();
}

/* A kernel's grid set by hand in the file, the checksums made to match: refused by the range
 * check. */
static void expect_grid_refused(const char *path, const char *bad, const Bundle *a, const BundleKernel *k,
				int64_t grid)
{
	size_t size;
	uint8_t *d = slurp(path, &size);
	size_t rec = find_name(d, size, k->name);
	CHECK(get_u64(d + rec + 64 + 64 + 4) == (uint64_t)k->grid, "kernel record of %s not found", k->name);
	put_u64(d + rec + 64 + 64 + 4, (uint64_t)grid);
	reseal(d, a);
	expect_error(bad, d, size, "has a grid of");
	free(d);
}

/* A kernel's dynamic shared memory set by hand: refused past what the code object's kind takes
 * (none on the host and AMD, 256 KiB on NVIDIA). */
static void expect_shared_refused(const char *path, const char *bad, const Bundle *a, const BundleKernel *k,
				  int32_t shared)
{
	size_t size;
	uint8_t *d = slurp(path, &size);
	size_t at = find_name(d, size, k->name) + 64 + 64 + 4 + 8 + 4;
	CHECK((int32_t)(get_u64(d + at) & 0xffffffffu) == k->shared, "kernel record of %s not found", k->name);
	for (int i = 0; i < 4; i++)
		d[at + (size_t)i] = (uint8_t)((uint32_t)shared >> (8 * i));
	reseal(d, a);
	expect_error(bad, d, size, "bytes of dynamic shared memory");
	free(d);
}

/* A kernel's buffer arguments set by hand (nargs, then the first offset): refused past 16 or
 * outside the arena. */
static void expect_args_refused(const char *path, const char *bad, const Bundle *a, const BundleKernel *k,
				int32_t nargs, int64_t arg0)
{
	size_t size;
	uint8_t *d = slurp(path, &size);
	size_t at = find_name(d, size, k->name) + 64 + 64 + 4 + 8 + 4 + 4;
	CHECK((int32_t)(get_u64(d + at) & 0xffffffffu) == k->nargs, "kernel record of %s not found", k->name);
	for (int i = 0; i < 4; i++)
		d[at + (size_t)i] = (uint8_t)((uint32_t)nargs >> (8 * i));
	put_u64(d + at + 4, (uint64_t)arg0);
	reseal(d, a);
	expect_error(bad, d, size, "buffer arguments");
	free(d);
}

/* A kernel's size argument `which` set by hand: refused when negative or past the arena's bytes. */
static void expect_size_refused(const char *path, const char *bad, const Bundle *a, const BundleKernel *k,
				int which, int64_t size_arg)
{
	size_t size;
	uint8_t *d = slurp(path, &size);
	size_t at = find_name(d, size, k->name) + 64 + 64 + 4 + 8 + 4 + 4 + 4 + 8 * BUNDLE_BUFFER_ARGS + 8 * (size_t)which;
	CHECK((int64_t)get_u64(d + at) == k->sizes[which], "kernel record of %s not found", k->name);
	put_u64(d + at, (uint64_t)size_arg);
	reseal(d, a);
	expect_error(bad, d, size, "size argument");
	free(d);
}

/* A bundle written with one field changed: the writer seals it, the reader must refuse it. */
static void expect_field_refused(const char *path, const char *bad, const Bundle *c, const char *want)
{
	char err[512];
	size_t size;
	CHECK(bundle_write(c, path, err, sizeof err), "write: %s", err);
	uint8_t *d = slurp(path, &size);
	expect_error(bad, d, size, want);
	free(d);
}

static void test_crc32(void)
{
	CHECK(rt_crc32(0, "123456789", 9) == 0xcbf43926u, "check value %08x", rt_crc32(0, "123456789", 9));
	CHECK(rt_crc32_portable(0, "123456789", 9) == 0xcbf43926u, "portable check value");
	uint8_t buf[4096];
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (uint8_t)tu_next();
	size_t n = 1 + tu_below(sizeof buf), cut = tu_below(n);
	uint32_t whole = rt_crc32(0, buf, n);
	CHECK(rt_crc32_portable(0, buf, n) == whole, "portable and zlib differ over %zu bytes", n);
	CHECK(rt_crc32(rt_crc32(0, buf, cut), buf + cut, n - cut) == whole, "chained at %zu", cut);
}

/* Random damage of each kind: changed bytes, a truncation, inserted bytes. Every copy must be
 * refused with a message naming the file; what was done is printed on failure, and the seed
 * replays the run. */
static void test_random_damage(const char *path, const char *bad, int copies)
{
	size_t size;
	uint8_t *data = slurp(path, &size);
	uint8_t *m = malloc(size + 16);
	int kinds[3] = {0};
	for (int t = 0; t < copies; t++) {
		int kind = (int)tu_below(3);
		size_t n = size, at = tu_below(size), count = 1 + tu_below(8);
		char what[96];
		memcpy(m, data, size);
		if (kind == 0) {
			count = 1 + tu_below(4);
			snprintf(what, sizeof what, "%zu bytes changed, the first at %zu", count, at);
			for (size_t k = 0; k < count; k++, at = tu_below(size))
				m[at] ^= (uint8_t)(1 + tu_below(255));
		} else if (kind == 1) {
			n = at;
			snprintf(what, sizeof what, "truncated to %zu of %zu bytes", n, size);
		} else {
			memmove(m + at + count, data + at, size - at);
			for (size_t k = 0; k < count; k++)
				m[at + k] = (uint8_t)tu_next();
			n = size + count;
			snprintf(what, sizeof what, "%zu bytes inserted at %zu", count, at);
		}
		kinds[kind]++;
		spit(bad, m, n);
		Bundle b;
		char err[512] = "";
		if (bundle_read(&b, bad, err, sizeof err)) {
			FAIL("copy %d (%s) read as a clean bundle", t, what);
			bundle_free(&b);
		} else {
			CHECK(strstr(err, bad) == err, "copy %d (%s): message does not name the file: %s", t, what, err);
		}
	}
	printf("random damage: %d copies refused (%d changed, %d truncated, %d inserted)\n", copies, kinds[0],
	       kinds[1], kinds[2]);
	free(m);
	free(data);
}

/* Header fields and kernel grids beyond what the plan implies, each behind a matching checksum. */
static void test_ranges(const char *path, const char *bad, const Bundle *a)
{
	Bundle c = *a;
	c.train.epochs = INT64_MAX;
	expect_field_refused(path, bad, &c, "epochs is 9223372036854775807, outside 0 to");
	c = *a;
	c.train.accumulate = INT64_MAX;
	expect_field_refused(path, bad, &c, "accumulate is 9223372036854775807, outside 1 to 4096");
	c = *a;
	c.train.steps = -2;
	expect_field_refused(path, bad, &c, "steps is -2");
	c = *a;
	c.batch = (int64_t)1 << 40;
	expect_field_refused(path, bad, &c, "batch is 1099511627776");
	c = *a;
	c.arena_bytes = INT64_MAX;
	expect_field_refused(path, bad, &c, "arena size is 9223372036854775807");
	c = *a;
	c.train.momentum = NAN;
	expect_field_refused(path, bad, &c, "momentum is not finite");
	c = *a;
	c.image = c.rng;
	expect_field_refused(path, bad, &c, "the image buffer");
	c = *a;
	c.batch = a->batch + 1;
	expect_field_refused(path, bad, &c, "rows, not one per example of the batch");

	/* by hand in the file: the kernel lists of the host and the AMD code object */
	char err[512];
	CHECK(bundle_write(a, path, err, sizeof err), "write: %s", err);
	for (int i = 0; i < a->ncode; i++) {
		const BundleKernel *k = &a->code[i].train_kernels[tu_below((uint64_t)a->code[i].ntrain)];
		expect_grid_refused(path, bad, a, k, (int64_t)1 << 31);
		expect_grid_refused(path, bad, a, k, (int64_t)1 << 62);
		expect_grid_refused(path, bad, a, k, 0);
		expect_shared_refused(path, bad, a, k, -1);
		expect_shared_refused(path, bad, a, k, a->code[i].kind == CODE_PTX ? 256 * 1024 + 1 : 4096);
		expect_args_refused(path, bad, a, k, BUNDLE_BUFFER_ARGS + 1, 0);
		expect_args_refused(path, bad, a, k, -1, 0);
		expect_args_refused(path, bad, a, k, 1, a->arena_bytes);
		expect_args_refused(path, bad, a, k, 1, -64);
		expect_size_refused(path, bad, a, k, (int)tu_below(BUNDLE_SIZE_ARGS), -1);
		expect_size_refused(path, bad, a, k, (int)tu_below(BUNDLE_SIZE_ARGS), a->arena_bytes + 1);
	}
	/* and the hand edit, unchanged, reads back: the test's resealing is right */
	size_t size;
	uint8_t *d = slurp(path, &size);
	reseal(d, a);
	spit(bad, d, size);
	Bundle b;
	CHECK(bundle_read(&b, bad, err, sizeof err), "resealed unchanged bundle: %s", err);
	if (b.ncode)
		bundle_free(&b);
	free(d);
}

/* ---- the train fields: every row of ir/train_fields.def is written, read and range-checked ---- */

/* Every field drawn within what the reader accepts. */
/* An input list naming a buffer twice, a buffer that is no data input, a buffer past the table,
 * or with the image not first: each an error. */
static void test_inputs(const char *path, const char *bad, const Bundle *a)
{
	int32_t list[3];
	Bundle c = *a;
	c.inputs = list;
	memcpy(list, a->inputs, sizeof list);
	list[2] = list[1];
	expect_field_refused(path, bad, &c, "input 'buf1_");
	expect_field_refused(path, bad, &c, "is listed twice");
	memcpy(list, a->inputs, sizeof list);
	list[2] = a->rng;
	expect_field_refused(path, bad, &c, "not a data input's");
	list[2] = a->nbuf;
	expect_field_refused(path, bad, &c, "is buffer");
	memcpy(list, a->inputs, sizeof list);
	list[0] = a->inputs[2], list[2] = a->inputs[0];
	expect_field_refused(path, bad, &c, "the image buffer is not the first input");
}

/* Group counts out of order or negative, and a roofline that is not a finite rate: errors. */
static void test_profile_counts(const char *path, const char *bad, const Bundle *a)
{
	Bundle c = *a;
	BundleGroup groups[2] = {{.node = 5, .flops = 1e9, .bytes = 100}, {.node = 5, .flops = 2e9, .bytes = 200}};
	c.groups = groups, c.ngroups = 2;
	expect_field_refused(path, bad, &c, "(nodes ascending, counts finite and at least 0)");
	groups[1].node = 6, groups[1].flops = -1;
	expect_field_refused(path, bad, &c, "has -1 FLOPs");
	groups[1].flops = NAN;
	expect_field_refused(path, bad, &c, "has nan FLOPs");
	groups[1].flops = 1, groups[1].bytes = -7;
	expect_field_refused(path, bad, &c, "and -7 bytes");
	BundleCode code[2];
	memcpy(code, a->code, sizeof code);
	c = *a;
	c.code = code;
	code[1].peak_gbs = INFINITY;
	expect_field_refused(path, bad, &c, "not two finite rates of at least 0");
	code[1].peak_gbs = 10, code[1].peak_gflops = -5;
	expect_field_refused(path, bad, &c, "is -5 GFLOP/s");
}

static void random_train(TrainConfig *c)
{
#define DRAW_INT(m, lo, hi) c->m = (lo) + (int64_t)tu_below((uint64_t)((hi) - (lo)) + 1)
#define DRAW_i32(m, lo, hi) DRAW_INT(m, lo, hi)
#define DRAW_i64(m, lo, hi) DRAW_INT(m, lo, hi)
#define DRAW_f64(m, lo, hi) c->m = tu_uniform(-2, 2)
#define DRAW_str(m, lo, hi) snprintf(c->m, sizeof c->m, "set%u", (unsigned)tu_below(1000))
#define TRAIN_FIELD(wire, member, what, lo, hi, ...) DRAW_##wire(member, lo, hi);
#define TRAIN_LIST(member, count, what, lo, hi)                                                   \
	for (size_t i = 0; i < sizeof c->member / sizeof c->member[0]; i++)                      \
		DRAW_INT(member[i], lo, hi);
#include "ir/train_fields.def"
#undef DRAW_INT
#undef DRAW_i32
#undef DRAW_i64
#undef DRAW_f64
#undef DRAW_str
}

static void check_train_equal(const TrainConfig *a, const TrainConfig *b)
{
#define SAME_i32(m) CHECK(a->m == b->m, #m)
#define SAME_i64(m) CHECK(a->m == b->m, #m)
#define SAME_f64(m) CHECK(a->m == b->m, #m)
#define SAME_str(m) CHECK(strcmp(a->m, b->m) == 0, #m)
#define TRAIN_FIELD(wire, member, ...) SAME_##wire(member);
#define TRAIN_LIST(member, ...) CHECK(memcmp(a->member, b->member, sizeof a->member) == 0, #member);
#include "ir/train_fields.def"
#undef SAME_i32
#undef SAME_i64
#undef SAME_f64
#undef SAME_str
}

/* Little-endian writes for the layout the test spells out by hand. */
static size_t put_le(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return (size_t)bytes;
}

static size_t put_f64(uint8_t *p, double v)
{
	uint64_t u;
	memcpy(&u, &v, sizeof u);
	return put_le(p, u, 8);
}

/* Every field round-trips, and the header holds them in BUNDLE_VERSION 7's order, written out
 * here apart from the table: reordering its rows changes the format. */
/* Tensor maps are NVIDIA code's, and each one is checked against the arena (runtime/tensor_map.h):
 * written as they are, the reader refuses a box past the driver's limit, a map outside the arena
 * and a map of the host's code. */
static void test_tensor_maps(const char *path, const char *bad)
{
	static const char *const want[3] = {"tensor map 0 of the sm_90 code: the box takes 300", "128-byte-aligned slot",
					    "the host code has tensor maps"};
	for (int round = 0; round < 3; round++) {
		Bundle a;
		char err[512];
		make_bundle(&a);
		BundleCode *c = &a.code[round == 2 ? 0 : 1];
		if (round < 2) { /* the GPU's code as NVIDIA's */
			snprintf(c->target, sizeof c->target, "sm_90");
			snprintf(c->arch, sizeof c->arch, "sm_90");
			c->kind = CODE_PTX, c->wave = 32;
		}
		free(c->tmaps);
		c->ntmaps = 1;
		c->tmaps = tu_calloc(1, sizeof *c->tmaps);
		c->tmaps[0] = (BundleTensorMap){.at = (a.arena_bytes - 256) / 128 * 128, .dtype = DT_F32, .rank = 1,
						 .dim = {4}, .box = {4}};
		if (round == 0)
			c->tmaps[0].box[0] = 300;
		if (round == 1)
			c->tmaps[0].at = (a.arena_bytes + 127) / 128 * 128;
		CHECK(bundle_write(&a, path, err, sizeof err), "write: %s", err);
		size_t size;
		uint8_t *data = slurp(path, &size);
		expect_error(bad, data, size, want[round]);
		free(data);
		bundle_free(&a);
	}
}

static void test_train_layout(const char *path, const Bundle *a)
{
	Bundle c = *a, b;
	random_train(&c.train);
	char err[512];
	CHECK(bundle_write(&c, path, err, sizeof err), "write: %s", err);
	CHECK(bundle_read(&b, path, err, sizeof err), "read: %s", err);
	check_train_equal(&c.train, &b.train);
	bundle_free(&b);

	const TrainConfig *t = &c.train;
	uint8_t want[1024];
	size_t n = 0;
	n += put_le(want + n, (uint64_t)t->optimizer, 4);
	n += put_f64(want + n, t->lr);
	n += put_f64(want + n, t->momentum);
	n += put_f64(want + n, t->dampening);
	n += put_le(want + n, (uint64_t)t->nesterov, 4);
	n += put_f64(want + n, t->weight_decay);
	n += put_f64(want + n, t->rho);
	n += put_f64(want + n, t->eps);
	n += put_le(want + n, (uint64_t)t->schedule, 4);
	n += put_le(want + n, (uint64_t)t->step_size, 8);
	n += put_f64(want + n, t->gamma);
	n += put_le(want + n, (uint64_t)t->batch, 8);
	n += put_le(want + n, (uint64_t)t->epochs, 8);
	n += put_le(want + n, (uint64_t)t->steps, 8);
	memcpy(want + n, t->dataset, 32), n += 32;
	n += put_le(want + n, (uint64_t)t->log_every, 8);
	n += put_f64(want + n, t->beta1);
	n += put_f64(want + n, t->beta2);
	n += put_le(want + n, (uint64_t)t->nmilestones, 4);
	for (int i = 0; i < 6; i++)
		n += put_le(want + n, (uint64_t)t->milestones[i], 8);
	n += put_le(want + n, (uint64_t)t->t_max, 8);
	n += put_f64(want + n, t->eta_min);
	n += put_le(want + n, (uint64_t)t->warmup, 8);
	n += put_le(want + n, (uint64_t)t->accumulate, 8);
	n += put_le(want + n, (uint64_t)t->precision, 4);
	memcpy(want + n, t->data_path, sizeof t->data_path), n += sizeof t->data_path;

	size_t size;
	uint8_t *d = slurp(path, &size);
	/* header contents: model[64], batch, arena, FLOPs, 10 buffer indices, the train fields, then
	 * the update node */
	size_t header = 12, at = header + SECTION_HEAD + 64 + 3 * 8 + 10 * 4;
	CHECK(get_u64(d + header) == at - header - SECTION_HEAD + n + 4, "header holds %llu bytes, want %zu",
	      (unsigned long long)get_u64(d + header), at - header - SECTION_HEAD + n + 4);
	CHECK(at + n + 4 <= size && (int32_t)get_u64(d + at + n) == c.update_node, "the update node is not after "
	      "the train fields");
	CHECK(at + n <= size && memcmp(d + at, want, n) == 0, "train fields out of BUNDLE_VERSION 7's order");
	free(d);
}

/* Each integer field just past either end of its range, each real not finite: refused, by name. */
static void test_train_ranges(const char *path, const char *bad, const Bundle *a)
{
	char want[256];
	Bundle c;
	int64_t v;
#define OUTSIDE(base, m, what, lo, hi)                                                            \
	for (int side = 0; side < 2; side++) {                                                    \
		c = *(base);                                                                      \
		c.train.m = side ? (int64_t)(hi) + 1 : (int64_t)(lo) - 1;                         \
		v = (int64_t)c.train.m; /* as the struct holds it: enums may be unsigned */      \
		snprintf(want, sizeof want, "%s is %lld, outside %lld to %lld", what, (long long)v, \
			 (long long)(lo), (long long)(hi));                                       \
		expect_field_refused(path, bad, &c, want);                                        \
	}
#define RANGE_i32(m, what, lo, hi) OUTSIDE(a, m, what, lo, hi)
#define RANGE_i64(m, what, lo, hi) OUTSIDE(a, m, what, lo, hi)
#define RANGE_f64(m, what, lo, hi)                                                                \
	for (int side = 0; side < 2; side++) {                                                    \
		c = *a;                                                                           \
		c.train.m = side ? (double)NAN : (double)INFINITY;                                \
		snprintf(want, sizeof want, "%s is not finite", what);                            \
		expect_field_refused(path, bad, &c, want);                                        \
	}
#define RANGE_str(m, what, lo, hi)
#define TRAIN_FIELD(wire, member, what, lo, hi, ...) RANGE_##wire(member, what, lo, hi)
#define TRAIN_LIST(member, count, what, lo, hi)                                                   \
	{                                                                                         \
		Bundle used = *a;                                                                 \
		used.train.count = 1 + (int)tu_below(sizeof a->train.member / sizeof a->train.member[0]); \
		int i = (int)tu_below((uint64_t)used.train.count);                               \
		OUTSIDE(&used, member[i], what, lo, hi)                                           \
	}
#include "ir/train_fields.def"
#undef OUTSIDE
#undef RANGE_i32
#undef RANGE_i64
#undef RANGE_f64
#undef RANGE_str
}

int main(void)
{
	tu_start("test_rt_bundle");
	test_crc32();
	const char *tmp = tu_tmpdir();
	char path[512], bad[512];
	snprintf(path, sizeof path, "%s/test_rt_bundle_%d.bundle", tmp, (int)getpid());
	snprintf(bad, sizeof bad, "%s/test_rt_bundle_%d.bad", tmp, (int)getpid());

	Bundle a, b;
	char err[512];
	make_bundle(&a);
	CHECK(bundle_write(&a, path, err, sizeof err), "write: %s", err);
	CHECK(bundle_read(&b, path, err, sizeof err), "read: %s", err);
	check_equal(&a, &b);
	bundle_free(&b);

	size_t size;
	uint8_t *data = slurp(path, &size);
	for (size_t n = 0; n < size; n++)
		expect_error(bad, data, n, n < 8 ? NULL : "truncated bundle: expected");
	/* the message says how much was expected of what */
	expect_error(bad, data, size - 1, "bytes of tensor maps, file ends after");

	uint8_t *copy = malloc(size);
	memcpy(copy, data, size);
	copy[3] ^= 0x20;
	expect_error(bad, copy, size, "not a netc bundle (expected magic NETCBNDL)");
	memcpy(copy, data, size);
	copy[8] = BUNDLE_VERSION + 1;
	expect_error(bad, copy, size, "newer");
	memcpy(copy, data, size);
	copy[8] = BUNDLE_VERSION - 1;
	expect_error(bad, copy, size, "older than this netc reads");
	/* one changed byte of a code object: the checksum names the section */
	memcpy(copy, data, size);
	copy[find_name(copy, size, a.code[1].target) + 64 + 8 + 8 + tu_below(a.code[1].size)] ^= 0x10;
	expect_error(bad, copy, size, "damaged bundle: the checksum of the code objects does not match");
	free(copy);
	free(data);

	/* a buffer outside the arena, a kernel list that lies about its count, an index past the
	 * buffers: each an error */
	Bundle c = a;
	BundleBuffer *saved = c.buf;
	c.buf = malloc((size_t)c.nbuf * sizeof *c.buf);
	memcpy(c.buf, saved, (size_t)c.nbuf * sizeof *c.buf);
	c.buf[1].offset = c.arena_bytes - 1;
	CHECK(bundle_write(&c, path, err, sizeof err), "write: %s", err);
	uint8_t *d = slurp(path, &size);
	expect_error(bad, d, size, "outside the arena");
	free(d);
	c.buf[1] = saved[1];
	c.image = c.nbuf;
	CHECK(bundle_write(&c, path, err, sizeof err), "write: %s", err);
	d = slurp(path, &size);
	expect_error(bad, d, size, "image buffer index");
	free(d);
	free(c.buf);

	test_ranges(path, bad, &a);
	test_inputs(path, bad, &a);
	test_profile_counts(path, bad, &a);
	test_train_layout(path, &a);
	test_train_ranges(path, bad, &a);
	test_tensor_maps(path, bad);
	CHECK(bundle_write(&a, path, err, sizeof err), "write: %s", err);
	test_random_damage(path, bad, 1000);

	CHECK(!bundle_read(&b, "/nonexistent/x.bundle", err, sizeof err) && strstr(err, "/nonexistent/x.bundle"),
	      "missing file: %s", err);
	bundle_free(&a);
	remove(path);
	remove(bad);
	return tu_finish("test_rt_bundle");
}
