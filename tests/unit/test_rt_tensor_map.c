/* test_rt_tensor_map.c: tensor maps (runtime/tensor_map.h).
 *
 * On any machine: rt_tensor_map_check takes maps the driver encodes and names what is wrong with
 * others; rt_tensor_map_copy gathers the box (zeros outside the tensor) and swizzles it as the
 * CUDA documentation states the patterns row by row (16-byte unit u of row r at u ^ (r % 8) in
 * 128-byte rows, u ^ (r / 2 % 4) in 64-byte rows, u ^ (r / 4 % 2) in 32-byte rows), a statement
 * independent of the model's address-bit form; and ptxas (where installed) assembles the
 * hand-written TMA kernels below for sm_90.
 *
 * On an NVIDIA GPU of sm_90 or newer: a session stores the maps in the arena (the driver encodes
 * them), and each kernel copies its boxes with cp.async.bulk.tensor into shared memory, waits on an
 * mbarrier and writes the shared memory out as it lies; every byte must be the model's, across
 * element types, ranks 2 and 3, each swizzle, coordinates inside, across the edges and negative. */
#include "runtime/device.h"
#include "runtime/rt.h"
#include "runtime/tensor_map.h"
#include "tests/unit/test_util.h"

#include "ir/dtype.h"

enum { BLOCK = 128, NBOX = 6, COORD_BYTES = 16 };

typedef struct {
	BundleTensorMap m;
	int32_t coord[NBOX][4];
	int64_t coords_at, out_at; /* arena offsets: NBOX x COORD_BYTES of int32, NBOX boxes */
} Case;

static int64_t align(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/* Tensor extents, box and swizzle; strides padded past the rows where pad. */
static BundleTensorMap map_of(DType t, int rank, const int64_t *dim, const int32_t *box, int swizzle, int64_t pad)
{
	BundleTensorMap m = {.dtype = t, .rank = rank, .swizzle = swizzle};
	int64_t span = (int64_t)dtype_size(t) * dim[0];
	for (int d = 0; d < rank; d++) {
		m.dim[d] = dim[d];
		m.box[d] = box[d];
		if (d) {
			m.stride[d] = align(span, 16) + pad;
			span = m.stride[d] * dim[d];
		}
	}
	return m;
}

static int64_t tensor_bytes(const BundleTensorMap *m)
{
	return m->rank > 1 ? m->stride[m->rank - 1] * m->dim[m->rank - 1] : (int64_t)dtype_size((DType)m->dtype) * m->dim[0];
}

/* ---- the checks ---- */

static void expect_bad(BundleTensorMap m, const char *want)
{
	char err[256] = "";
	bool ok = rt_tensor_map_check(&m, 1 << 20, err, sizeof err);
	CHECK(!ok && strstr(err, want), "map refused for '%s': %s", want, ok ? "accepted" : err);
}

static void test_check(void)
{
	const int64_t dim[3] = {64, 40, 3};
	const int32_t box[3] = {64, 16, 2};
	BundleTensorMap good = map_of(DT_BF16, 3, dim, box, 128, 32);
	good.at = 4096, good.tensor = 8192;
	char err[256];
	CHECK(rt_tensor_map_check(&good, 1 << 20, err, sizeof err), "a good map: %s", err);
	BundleTensorMap m = good;
	m.rank = 6, expect_bad(m, "rank 6");
	m = good, m.dim[1] = 0, expect_bad(m, "dimension 1 has 0 elements");
	m = good, m.box[2] = 257, expect_bad(m, "256");
	m = good, m.stride[1] += 8, expect_bad(m, "dimension 1's stride");
	m = good, m.stride[2] = m.stride[1], expect_bad(m, "dimension 2's stride");
	m = good, m.box[0] = 4, m.swizzle = 0, expect_bad(m, "multiple of 16 bytes");
	m = good, m.swizzle = 16, expect_bad(m, "a swizzle of 16 bytes");
	m = good, m.swizzle = 64, expect_bad(m, "not the swizzle's 64");
	m = good, m.at = 4096 + 64, expect_bad(m, "128-byte-aligned");
	m = good, m.at = (1 << 20) - 64, expect_bad(m, "128-byte-aligned");
	m = good, m.tensor = 8200, expect_bad(m, "16-byte aligned");
	m = good, m.tensor = (1 << 20) - 1024, expect_bad(m, "16-byte aligned inside the arena");
	m = good, m.dtype = DT_COUNT, expect_bad(m, "element type");
}

/* ---- the model against the documented row patterns ---- */

/* Element e (row-major box index) of the box at coord, read directly: zero outside the tensor. */
static void plain_elem(const BundleTensorMap *m, const uint8_t *tensor, const int32_t *coord, int64_t e, uint8_t *out)
{
	int64_t esize = (int64_t)dtype_size((DType)m->dtype), idx[BUNDLE_TMAP_DIMS] = {0};
	for (int d = 0; d < m->rank; d++) {
		idx[d] = coord[d] + e % m->box[d];
		e /= m->box[d];
		if (idx[d] < 0 || idx[d] >= m->dim[d]) {
			memset(out, 0, (size_t)esize);
			return;
		}
	}
	int64_t at = idx[0] * esize;
	for (int d = 1; d < m->rank; d++)
		at += idx[d] * m->stride[d];
	memcpy(out, tensor + at, (size_t)esize);
}

/* Where the documentation puts byte b of the dense box: rows of `swizzle` bytes, unit u of row r
 * at u ^ f(r). */
static int64_t documented(int swizzle, int64_t b)
{
	if (!swizzle)
		return b;
	int64_t row = b / swizzle, unit = b % swizzle / 16;
	int64_t flip = swizzle == 128 ? row % 8 : swizzle == 64 ? row / 2 % 4 : row / 4 % 2;
	return row * swizzle + (unit ^ flip) * 16 + b % 16;
}

static void fill_random(uint8_t *p, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		p[i] = (uint8_t)(1 + tu_below(255)); /* never zero: zeros mean "outside" */
}

static void test_model(const Case *cases, int ncases)
{
	for (int c = 0; c < ncases; c++) {
		const BundleTensorMap *m = &cases[c].m;
		int64_t bytes = tensor_bytes(m), box = rt_tensor_map_box_bytes(m), esize = (int64_t)dtype_size((DType)m->dtype);
		uint8_t *tensor = tu_calloc((size_t)bytes, 1), *got = tu_calloc((size_t)box, 1), *want = tu_calloc((size_t)box, 1);
		fill_random(tensor, bytes);
		int bad = 0, zeros = 0;
		for (int k = 0; k < NBOX; k++) {
			rt_tensor_map_copy(m, tensor, cases[c].coord[k], got);
			for (int64_t e = 0; e < box / esize; e++)
				plain_elem(m, tensor, cases[c].coord[k], e, want + documented(m->swizzle, e * esize));
			for (int64_t i = 0; i < box; i++) {
				zeros += want[i] == 0;
				if (got[i] != want[i] && bad++ < 3)
					fprintf(stderr, "case %d box %d: byte %lld is %u, want %u\n", c, k, (long long)i, got[i], want[i]);
			}
		}
		CHECK(bad == 0, "case %d (swizzle %d): the model's boxes are the documented ones", c, m->swizzle);
		CHECK(zeros > 0 && zeros < NBOX * box, "case %d: some boxes cross the tensor's edges, not all", c);
		free(tensor), free(got), free(want);
	}
}

/* ---- the hardware ---- */

/* One kernel per case: block b copies box b at the coordinates stored for it, then writes the
 * shared memory out as it lies. */
static const char kernel_format[] =
	".visible .entry k%d_tma(.param .u64 arena)\n{\n"
	"\t.reg .pred %%p<3>;\n\t.reg .b32 %%r<16>;\n\t.reg .b64 %%rd<8>;\n"
	"\tld.param.u64 %%rd1, [arena];\n\tmov.u32 %%r1, %%tid.x;\n\tmov.u32 %%r2, %%ctaid.x;\n"
	"\tadd.s64 %%rd2, %%rd1, %lld;\n"
	"\tmul.wide.u32 %%rd3, %%r2, %d;\n\tadd.s64 %%rd3, %%rd3, %%rd1;\n"
	"\tld.global.u32 %%r3, [%%rd3+%lld];\n\tld.global.u32 %%r4, [%%rd3+%lld];\n\tld.global.u32 %%r5, [%%rd3+%lld];\n"
	"\tmov.u32 %%r6, smem;\n\tadd.u32 %%r7, %%r6, %lld;\n"
	"\tsetp.ne.u32 %%p1, %%r1, 0;\n\t@%%p1 bra.uni WAIT;\n"
	"\tmbarrier.init.shared::cta.b64 [%%r7], 1;\n"
	"\tfence.mbarrier_init.release.cluster;\n\tfence.proxy.async.shared::cta;\n"
	"\tmbarrier.arrive.expect_tx.shared::cta.b64 _, [%%r7], %lld;\n"
	"\tcp.async.bulk.tensor.%dd.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%%r6], [%%rd2, {%s}], [%%r7];\n"
	"WAIT:\n\tbar.sync 0;\n"
	"LOOP:\n\tmbarrier.try_wait.parity.shared::cta.b64 %%p2, [%%r7], 0;\n\t@!%%p2 bra.uni LOOP;\n"
	"\tmul.wide.u32 %%rd4, %%r2, %lld;\n\tadd.s64 %%rd4, %%rd4, %%rd1;\n\tadd.s64 %%rd4, %%rd4, %lld;\n"
	"\tshl.b32 %%r8, %%r1, 2;\n"
	"COPY:\n\tsetp.ge.u32 %%p1, %%r8, %lld;\n\t@%%p1 bra.uni DONE;\n"
	"\tadd.u32 %%r9, %%r6, %%r8;\n\tld.shared.u32 %%r10, [%%r9];\n"
	"\tcvt.u64.u32 %%rd5, %%r8;\n\tadd.s64 %%rd6, %%rd4, %%rd5;\n\tst.global.u32 [%%rd6], %%r10;\n"
	"\tadd.u32 %%r8, %%r8, %d;\n\tbra.uni COPY;\n"
	"DONE:\n\tret;\n}\n";

static char *ptx_of(const Case *cases, int ncases, size_t *size)
{
	size_t cap = 4096 + (size_t)ncases * 4096, n = 0;
	char *ptx = tu_calloc(cap, 1);
	n += (size_t)snprintf(ptx + n, cap - n, ".version 8.0\n.target sm_90\n.address_size 64\n"
					       ".extern .shared .align 1024 .b8 smem[];\n");
	for (int c = 0; c < ncases; c++) {
		const Case *k = &cases[c];
		long long box = rt_tensor_map_box_bytes(&k->m);
		const char *coords = k->m.rank == 2 ? "%r3, %r4" : "%r3, %r4, %r5";
		n += (size_t)snprintf(ptx + n, cap - n, kernel_format, c, (long long)k->m.at, COORD_BYTES,
				      (long long)k->coords_at, (long long)k->coords_at + 4, (long long)k->coords_at + 8,
				      (long long)align(box, 8), box, k->m.rank, coords, box, (long long)k->out_at, box,
				      4 * BLOCK);
	}
	*size = n;
	return ptx;
}

static void test_ptxas(const char *ptx, size_t size)
{
	char ptxas[512], cmd[600], text[8192];
	if (!tu_find_tool("ptxas", ptxas, sizeof ptxas)) {
		printf("note: no ptxas; the TMA kernels are not assembled\n");
		return;
	}
	snprintf(cmd, sizeof cmd, "%s -arch=sm_90 -o /dev/null", ptxas);
	int rc = tu_run_on_file(cmd, ptx, size, text, sizeof text);
	CHECK(rc == 0, "ptxas assembles the TMA kernels: %s", text);
}

/* The arena: each case's tensor, its coordinates, its boxes out, its map. */
static int64_t lay_out(Case *cases, int ncases)
{
	int64_t at = 0;
	for (int c = 0; c < ncases; c++) {
		Case *k = &cases[c];
		k->m.tensor = at;
		at = align(at + tensor_bytes(&k->m), 256);
		k->coords_at = at;
		at = align(at + NBOX * COORD_BYTES, 256);
		k->out_at = at;
		at = align(at + NBOX * rt_tensor_map_box_bytes(&k->m), 256);
		k->m.at = at;
		at += BUNDLE_TMAP_BYTES;
	}
	return align(at, 256);
}

static void test_gpu(Case *cases, int ncases, const char *ptx, size_t size, const char *arch)
{
	Bundle b = {.batch = 1, .image = -1, .label = -1, .loss = -1, .output = -1, .eval_loss = -1, .eval_output = -1,
		    .lr = -1, .rng = -1, .loss_scale = -1, .finite = -1, .update_node = -1};
	snprintf(b.model, sizeof b.model, "tmatest");
	b.arena_bytes = lay_out(cases, ncases);
	BundleCode code = {.kind = CODE_PTX, .wave = 32, .ntrain = ncases, .ntmaps = ncases};
	snprintf(code.target, sizeof code.target, "%s", arch);
	snprintf(code.arch, sizeof code.arch, "%s", arch);
	code.data = (uint8_t *)ptx;
	code.size = size;
	code.train_kernels = tu_calloc((size_t)ncases, sizeof *code.train_kernels);
	code.tmaps = tu_calloc((size_t)ncases, sizeof *code.tmaps);
	for (int c = 0; c < ncases; c++) {
		BundleKernel *k = &code.train_kernels[c];
		snprintf(k->name, sizeof k->name, "k%d_tma", c);
		snprintf(k->symbol, sizeof k->symbol, "k%d_tma", c);
		k->grid = NBOX;
		k->block = BLOCK;
		k->shared = (int32_t)align(rt_tensor_map_box_bytes(&cases[c].m), 8) + 8;
		code.tmaps[c] = cases[c].m;
	}
	b.code = &code;
	b.ncode = 1;
	/* the arena as one buffer, so that the test can write and read any of it */
	BundleBuffer whole = {.offset = 0, .bytes = b.arena_bytes, .dtype = DT_F32, .rank = 1, .dim = {b.arena_bytes / 4}};
	snprintf(whole.name, sizeof whole.name, "arena");
	b.buf = &whole;
	b.nbuf = 1;

	uint8_t *host = tu_calloc((size_t)b.arena_bytes, 1);
	for (int c = 0; c < ncases; c++) {
		fill_random(host + cases[c].m.tensor, tensor_bytes(&cases[c].m));
		memcpy(host + cases[c].coords_at, cases[c].coord, sizeof cases[c].coord);
	}
	char err[1024] = "";
	Session *s = rt_open(&b, "cuda", 0, err, sizeof err);
	CHECK(s != NULL, "open: %s", err);
	if (s) {
		/* the maps' slots as the session stored them, the rest as the test lays it out */
		uint8_t *maps = tu_calloc((size_t)b.arena_bytes, 1);
		rt_read(s, 0, maps, (size_t)b.arena_bytes);
		for (int c = 0; c < ncases; c++)
			memcpy(host + cases[c].m.at, maps + cases[c].m.at, BUNDLE_TMAP_BYTES);
		free(maps);
		rt_write(s, 0, host, (size_t)b.arena_bytes);
		CHECK(rt_run(s, RT_PROG_TRAIN), "run: %s", rt_error(s));
		uint8_t *got = tu_calloc((size_t)b.arena_bytes, 1);
		rt_read(s, 0, got, (size_t)b.arena_bytes);
		CHECK(!rt_error(s), "read: %s", rt_error(s));
		for (int c = 0; c < ncases; c++) {
			const Case *k = &cases[c];
			int64_t box = rt_tensor_map_box_bytes(&k->m);
			uint8_t *want = tu_calloc((size_t)box, 1);
			int bad = 0;
			for (int i = 0; i < NBOX; i++) {
				rt_tensor_map_copy(&k->m, host + k->m.tensor, k->coord[i], want);
				const uint8_t *out = got + k->out_at + i * box;
				for (int64_t j = 0; j < box; j++)
					if (out[j] != want[j] && bad++ < 3)
						fprintf(stderr, "case %d box %d: byte %lld is %u, the model's %u\n", c, i, (long long)j,
							out[j], want[j]);
			}
			CHECK(bad == 0, "case %d (rank %d, swizzle %d): the GPU's copies are the model's", c, k->m.rank,
			      k->m.swizzle);
			printf("case %d: %d boxes of %lld bytes, swizzle %d: %s\n", c, NBOX, (long long)box, k->m.swizzle,
			       bad ? "differ" : "as the model");
			free(want);
		}
		free(got);
	}
	rt_close(s);
	free(host);
	free(code.train_kernels);
	free(code.tmaps);
}

static void set_coords(Case *k, const int32_t (*coords)[4])
{
	for (int i = 0; i < NBOX; i++)
		memcpy(k->coord[i], coords[i], sizeof k->coord[i]);
}

int main(void)
{
	tu_start("test_rt_tensor_map");
	test_check();

	enum { NCASES = 4 };
	Case cases[NCASES] = {0};
	/* bf16 rows of 128 bytes (strides padded), boxes of 64 x 64, 128-byte swizzle */
	cases[0].m = map_of(DT_BF16, 2, (int64_t[]){64, 300}, (int32_t[]){64, 64}, 128, 32);
	set_coords(&cases[0], (const int32_t[NBOX][4]){{0, 0}, {0, 250}, {0, -5}, {8, 10}, {-16, 100}, {0, 299}});
	/* f32 rows of 160 bytes, boxes of 16 x 32 (64-byte runs), 64-byte swizzle */
	cases[1].m = map_of(DT_F32, 2, (int64_t[]){40, 77}, (int32_t[]){16, 32}, 64, 0);
	set_coords(&cases[1], (const int32_t[NBOX][4]){{0, 0}, {24, 50}, {32, -7}, {-8, 3}, {16, 70}, {8, 20}});
	/* f16, rank 3, 32-byte runs, 32-byte swizzle */
	cases[2].m = map_of(DT_F16, 3, (int64_t[]){16, 50, 3}, (int32_t[]){16, 24, 2}, 32, 16);
	set_coords(&cases[2], (const int32_t[NBOX][4]){{0, 0, 0}, {0, 40, 2}, {0, -3, 1}, {8, 7, -1}, {0, 13, 1}, {0, 26, 0}});
	/* f32, rank 3, no swizzle */
	cases[3].m = map_of(DT_F32, 3, (int64_t[]){12, 7, 5}, (int32_t[]){4, 8, 3}, 0, 0);
	set_coords(&cases[3], (const int32_t[NBOX][4]){{0, 0, 0}, {8, 2, 3}, {10, -1, 0}, {4, 3, 2}, {-4, 0, 4}, {0, 6, 1}});
	lay_out(cases, NCASES);
	test_model(cases, NCASES);

	size_t size;
	char *ptx = ptx_of(cases, NCASES, &size);
	test_ptxas(ptx, size);

	char why[256];
	RtDeviceInfo info;
	char err[512];
	if (rt_device_cuda.count(why, sizeof why) <= 0) {
		printf("skipped on the GPU: no NVIDIA GPU (%s)\n", why);
	} else if (!rt_device_cuda.query(0, &info, err, sizeof err) || atoi(info.arch + 3) < 90) {
		printf("skipped on the GPU: %s has no tensor maps (sm_90 and newer)\n", info.arch);
	} else {
		test_gpu(cases, NCASES, ptx, size, info.arch);
	}
	free(ptx);
	return tu_finish("test_rt_tensor_map");
}
