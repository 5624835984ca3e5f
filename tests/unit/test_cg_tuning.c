/* test_cg_tuning.c: tuned tiles (codegen/tuning.h).
 *
 * - Every candidate tiling is one the template computes correctly: a convolution (forward, input
 *   and weight gradients) and a dense layer (matmuls of every transpose) whose M, N and K are no
 *   multiples of the tiles, in float32 and fp16, compiled under each candidate index (every GEMM
 *   takes its i-th candidate) on the host template and on the GPU template under host emulation
 *   (NVIDIA's SIMT tiles, wide ones included; gfx906's narrow tiles and its dot2 tiles for fp16;
 *   sm_80's mma.sync through its lane model for fp16), against the float64 reference on random
 *   inputs.
 * - The kernels note which candidate they took; a table's entry takes its configuration (and the
 *   IR, so the kernel cache's key, changes), an entry that is no candidate of the GEMM is ignored,
 *   and no table gives the heuristic's tiles.
 * - The keys' precision classes: half operands in f32 registers (f16f32) apart from float32.
 * - Tuning files: the text round-trips, and bad files are errors naming the file, the line and
 *   what was expected.
 * - A table of thousands of keys finds each one's configuration, replaces one set again, and finds
 *   no key that differs from one of them in a single field. */
#include <stdlib.h>

#include "codegen/gemm_gpu.h"
#include "codegen/tuning.h"
#include "tests/unit/cg_anchor_cases.h"
#include "tests/unit/matrix_lane_models.h"
#include "tests/unit/test_util.h"

typedef struct {
	const char *name;
	bool gpu;          /* the GPU template, emulated */
	const char *arch;  /* the emulated unit's target (NULL: NVIDIA-like SIMT tiles) */
	bool fp16_only, half; /* which of float32 and fp16 it runs */
} Mode;

static const Mode modes[] = {
	{"host", false, NULL, false, true},
	{"gpu simt", true, NULL, false, false}, /* fp16 takes the same tiles as float32 there */
	{"gpu gfx906", true, "gfx906", false, true},
	{"gpu sm_80 mma", true, "sm_80", true, true},
};

static const Mode *mode;

static void emulate(bool on)
{
	if (!mode->gpu)
		return;
	cg_gpu_emulation(on);
	cg_gpu_emulation_mma(on ? mode->arch : NULL, 0, lane_models, LANE_NMODELS);
}

/* The GEMM kernels' notes of the graph compiled for the host (emulated as the mode says). */
static int notes_of(CgHarness *h, CgTileNote *notes, int max)
{
	CgOutput out;
	emulate(true);
	bool ok = ch_compile(h, false, &out);
	emulate(false);
	if (!ok) {
		tu_failures++;
		return 0;
	}
	int n = 0;
	for (int i = 0; i < out.nkernels && n < max; i++)
		if (out.kernels[i].tiles.source != CG_TILES_NONE)
			notes[n++] = out.kernels[i].tiles;
	cg_output_free(&out);
	return n;
}

/* Candidate i of every GEMM against the reference; with `noted`, the kernels say they took it. */
static void run_candidate(CgHarness *h, int i, bool noted)
{
	cg_tuning_candidate(i);
	emulate(true);
	int bad = ch_run(h);
	emulate(false);
	CHECK(!bad, "%s [%s]: candidate %d computes wrong values", h->name, mode->name, i);
	tu_failures += bad;
	CgTileNote notes[16];
	int n = noted ? notes_of(h, notes, 16) : -1;
	CHECK(n != 0, "%s [%s]: no GEMM kernel noted its tiles", h->name, mode->name);
	for (int k = 0; k < n; k++)
		CHECK(notes[k].source == CG_TILES_CANDIDATE && notes[k].index == (i < notes[k].ncand ? i : 0),
		      "%s [%s]: candidate %d asked, a kernel took %d of %d (%s)", h->name, mode->name, i, notes[k].index,
		      notes[k].ncand, notes[k].why);
	cg_tuning_candidate(-1);
}

static char *ir_of(CgHarness *h)
{
	emulate(true);
	char *ir = ch_ir(h);
	emulate(false);
	return ir;
}

/* A table entry for the first GEMM's second candidate: taken, and the IR changes with it. */
static void run_table(CgHarness *h)
{
	CgTileNote before[16], c1[16], after[16];
	int n = notes_of(h, before, 16);
	for (int k = 0; k < n; k++)
		CHECK(before[k].source == CG_TILES_HEURISTIC && before[k].index == 0, "%s [%s]: no table, yet %s",
		      h->name, mode->name, before[k].why);
	if (n == 0 || before[0].ncand < 2)
		return;
	char *ir0 = ir_of(h);
	/* the configuration of candidate 1, as the kernel noted it */
	cg_tuning_candidate(1);
	notes_of(h, c1, 16);
	cg_tuning_candidate(-1);
	CgTuning t = {.source = "test.tune"};
	cg_tuning_set(&t, &before[0].key, &c1[0].cfg, "test");
	const CgTuning *use = &t;
	cg_tuning_use(&use, 1);
	notes_of(h, after, 16);
	char *ir1 = ir_of(h);
	CHECK(after[0].source == CG_TILES_TUNED && after[0].index == 1 && strstr(after[0].why, "test.tune"),
	      "%s [%s]: the table's entry was not taken: %s", h->name, mode->name, after[0].why);
	CHECK(ir0 && ir1 && strcmp(ir0, ir1) != 0, "%s [%s]: a tuned configuration left the IR as it was", h->name,
	      mode->name);
	/* a configuration the GEMM has no candidate for is ignored */
	CgTileConfig bogus = {.tm = 3, .tn = 5, .kb = 7};
	cg_tuning_set(&t, &before[0].key, &bogus, NULL);
	notes_of(h, after, 16);
	CHECK(after[0].source == CG_TILES_HEURISTIC && strstr(after[0].why, "no candidate"),
	      "%s [%s]: a configuration that is no candidate: %s", h->name, mode->name, after[0].why);
	cg_tuning_use(NULL, 0);
	cg_tuning_free(&t);
	free(ir0);
	free(ir1);
}

static void run(CgHarness *h, DType dt)
{
	h->g->train.precision = dt == DT_F16 ? PREC_FP16 : PREC_FP32;
	cg_tuning_reset_seen();
	run_candidate(h, 0, false);
	int n = cg_tuning_candidates_seen();
	CHECK(n >= 2, "%s [%s]: %d candidates", h->name, mode->name, n);
	for (int i = 1; i < n; i++)
		run_candidate(h, i, i == 1 || i == n - 1);
	run_table(h);
	printf("%s [%s]: %d candidates\n", h->name, mode->name, n);
	ch_free(h);
}

/* The precision class of the first GEMM's key when h is compiled in precision dt under mode m. */
static void class_is(const Mode *m, CgHarness *h, DType dt, const char *want)
{
	mode = m;
	h->g->train.precision = dt == DT_F16 ? PREC_FP16 : dt == DT_BF16 ? PREC_BF16 : PREC_FP32;
	CgTileNote notes[16];
	int n = notes_of(h, notes, 16);
	CHECK(n > 0 && strcmp(notes[0].key.cls, want) == 0, "%s [%s] %s: precision class %s, want %s", h->name,
	      m->name, dt == DT_F16 ? "fp16" : dt == DT_BF16 ? "bf16" : "fp32", n > 0 ? notes[0].key.cls : "(no GEMM)", want);
	ch_free(h);
}

/* gfx906's narrow float32 tiles with a side of 16 have candidates of 2-wide register tiles
 * (`reg=2x2` and the like; every candidate's values are checked in run()): a GEMM of M = 16 lists
 * some, a table entry naming one is taken, and the same entry without its `reg=` is another
 * configuration (taken as that candidate where there is one, else no candidate). NVIDIA's SIMT
 * tiles and fp16's matrix tiles have none. */
static void small_registers(void)
{
	mode = &modes[2];
	CgHarness *h = anchor_matmul(16, 40, 300, 1);
	CgTileNote notes[16], seen[96];
	cg_tuning_reset_seen();
	notes_of(h, notes, 16);
	int n = cg_tuning_candidates_seen(), small = -1, nsmall = 0;
	n = n < 96 ? n : 96;
	for (int i = 0; i < n; i++) {
		cg_tuning_candidate(i);
		CHECK(notes_of(h, notes, 16) > 0, "matmul m=16: candidate %d noted no GEMM", i);
		cg_tuning_candidate(-1);
		seen[i] = notes[0];
		if (seen[i].cfg.rm == 2 && seen[i].cfg.rn == 2) {
			small = i;
			nsmall++;
		}
	}
	CHECK(small > 0, "matmul m=16 on gfx906: no candidate of 2 x 2 register tiles among %d", n);
	if (small > 0) {
		CgTileConfig plain = seen[small].cfg;
		plain.rm = plain.rn = 0;
		int twin = -1;
		for (int i = 0; i < n; i++)
			if (!seen[i].cfg.rm && seen[i].cfg.tm == plain.tm && seen[i].cfg.tn == plain.tn && seen[i].cfg.kb == plain.kb)
				twin = i;
		for (int v = 0; v < 2; v++) {
			CgTuning t = {.source = "reg.tune"};
			cg_tuning_set(&t, &seen[small].key, v ? &plain : &seen[small].cfg, NULL);
			const CgTuning *use = &t;
			cg_tuning_use(&use, 1);
			bool got = notes_of(h, notes, 16) > 0;
			if (!v)
				CHECK(got && notes[0].source == CG_TILES_TUNED && notes[0].index == small && notes[0].cfg.rm == 2,
				      "matmul m=16: the entry of candidate %d (reg=2x2) was not taken: %s", small, notes[0].why);
			else if (twin >= 0)
				CHECK(got && notes[0].source == CG_TILES_TUNED && notes[0].index == twin && notes[0].cfg.rm == 0,
				      "matmul m=16: the entry without reg= took candidate %d, not %d", notes[0].index, twin);
			else
				CHECK(got && notes[0].source == CG_TILES_HEURISTIC && strstr(notes[0].why, "no candidate"),
				      "matmul m=16: the entry without reg= is no candidate, yet: %s", notes[0].why);
			cg_tuning_use(NULL, 0);
			cg_tuning_free(&t);
		}
	}
	printf("matmul 16x40x300 [%s]: %d of %d candidates with 2 x 2 register tiles\n", mode->name, nsmall, n);
	ch_free(h);
	static const int others[] = {1, 3}; /* NVIDIA's SIMT tiles; sm_80's mma (fp16) */
	for (size_t m = 0; m < sizeof others / sizeof *others; m++) {
		mode = &modes[others[m]];
		h = anchor_matmul_of(16, 40, 300, 1, mode->fp16_only ? DT_F16 : DT_F32);
		h->g->train.precision = mode->fp16_only ? PREC_FP16 : PREC_FP32;
		cg_tuning_reset_seen();
		notes_of(h, notes, 16);
		n = cg_tuning_candidates_seen();
		int other = 0;
		for (int i = 0; i < n; i++) {
			cg_tuning_candidate(i);
			other += notes_of(h, notes, 16) > 0 && notes[0].cfg.rm != 0;
			cg_tuning_candidate(-1);
		}
		CHECK(other == 0, "matmul m=16 [%s]: %d candidates with other register tiles", mode->name, other);
		ch_free(h);
	}
}

/* Half operands multiplied in f32 registers (the GPU SIMT template) are keyed apart from float32
 * ones: their conversions take other registers, so their tiles are tuned apart. */
static void classes(void)
{
	Conv c = {2, 5, 11, 13, 19, 3, 3, 1, 1, 1, 1, 1, 1};
	class_is(&modes[1], anchor_conv(c, DT_F32), DT_F32, "f32");
	class_is(&modes[1], anchor_conv(c, DT_F16), DT_F16, "f16f32");
	class_is(&modes[1], anchor_conv(c, DT_BF16), DT_BF16, "bf16f32");
	class_is(&modes[2], anchor_conv(c, DT_F16), DT_F16, "dot2");
	class_is(&modes[0], anchor_conv(c, DT_F16), DT_F16, "f32");
}

/* ---- tuning files ---- */

static void parse_fails(const char *text, const char *want)
{
	CgTuning t;
	char err[512] = "";
	bool ok = cg_tuning_parse(text, strlen(text), "bad.tune", &t, err, sizeof err);
	CHECK(!ok && strstr(err, want), "parsing %s: want an error with \"%s\", got %s", text, want, ok ? "none" : err);
	if (ok)
		cg_tuning_free(&t);
}

static void files(void)
{
	const char *text = CG_TUNING_HEADER "\n# comment\n\n"
			   "sm_90 f32 batch=2 m=19 n=143 k=45 a=m1 b=n4 split=1 : tile=32x64 kb=16  # 0.1 ms\n"
			   "host-skylake f64 batch=3 m=7 n=9 k=11 a=k1s b=k2 split=1 : tile=8x16 kb=12\n"
			   "gfx906 f32 batch=36 m=16 n=16 k=8192 a=k4 b=k4 split=16 : tile=16x16 kb=32 reg=2x2  # x\n"
			   "sm_90 bf16 batch=1 m=3136 n=64 k=576 a=k8 b=k8 split=1 : tile=256x64 kb=16 rows\n"
			   "sm_90 bf16 batch=1 m=784 n=64 k=576 a=k8 b=k8 split=1 : tile=256x64 kb=16 rows stages=2  # y\n"
			   "sm_90 bf16 batch=1 m=3211264 n=64 k=576 a=k8 b=k8 split=1 : tile=256x64 kb=16 rows stages=2 tiles=49\n"
			   "sm_90 bf16 batch=1 m=3211264 n=64 k=576 a=k8 b=n8 split=1 : tile=256x64 kb=16 rows tiles=97\n";
	CgTuning t;
	char err[512];
	CHECK(cg_tuning_parse(text, strlen(text), "ok.tune", &t, err, sizeof err), "%s", err);
	CHECK(t.n == 7 && t.e[5].cfg.stages == 2 && t.e[5].cfg.tiles == 49 && !t.e[6].cfg.stages && t.e[6].cfg.tiles == 97 &&
	      !t.e[4].cfg.tiles && t.e[0].line == 4 && t.e[0].cfg.rm == 0 && t.e[2].cfg.rm == 2 && t.e[2].cfg.rn == 2 &&
	      !t.e[2].cfg.rows && t.e[3].cfg.rows && t.e[3].cfg.tm == 256 && !t.e[3].cfg.rm && !t.e[3].cfg.stages &&
	      t.e[4].cfg.rows && t.e[4].cfg.stages == 2 && strcmp(t.e[4].comment, "y") == 0 &&
	      strcmp(t.e[2].comment, "x") == 0 && t.e[0].cfg.tm == 32 && t.e[0].cfg.tn == 64 && t.e[0].cfg.kb == 16 &&
	      strcmp(t.e[0].comment, "0.1 ms") == 0 && strcmp(t.e[1].key.a, "k1s") == 0 && t.e[1].key.batch == 3,
	      "the file's entries read back wrong");
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cg_tuning_write(f, &t, "about");
	fclose(f);
	CgTuning back;
	CHECK(cg_tuning_parse(buf, len, "back.tune", &back, err, sizeof err), "%s", err);
	CHECK(back.n == 7 && back.e[5].cfg.tiles == 49 && back.e[6].cfg.tiles == 97 && strstr(buf, "rows stages=2 tiles=49") &&
	      strstr(buf, "kb=16 rows tiles=97") && cg_tune_key_equal(&back.e[1].key, &t.e[1].key) && back.e[1].cfg.kb == 12 &&
	      back.e[1].cfg.rm == 0 && back.e[2].cfg.rm == 2 && back.e[2].cfg.rn == 2 && strstr(buf, "kb=32 reg=2x2") &&
	      back.e[3].cfg.rows && strstr(buf, "kb=16 rows") && back.e[4].cfg.stages == 2 &&
	      strstr(buf, "kb=16 rows stages=2"),
	      "the written file reads back wrong:\n%s", buf);
	free(buf);
	cg_tuning_free(&back);
	cg_tuning_free(&t);

	parse_fails("", "bad.tune:1: expected the header");
	parse_fails("netc-tuning 2\n", "bad.tune:1: unsupported format");
	parse_fails(CG_TUNING_HEADER "\nsm_90 f33 batch=1\n", "bad.tune:2: unknown precision class `f33`");
	parse_fails(CG_TUNING_HEADER "\nsm_90 bf16 batch=1 m=8 n=64 k=576 a=k8 b=k8 split=1 : tile=256x64 kb=16 rows rows\n",
		    "bad.tune:2: expected `stages=N`, `tiles=N` or a comment (#) after `rows`");
	parse_fails(CG_TUNING_HEADER "\nsm_90 bf16 batch=1 m=8 n=64 k=576 a=k8 b=k8 split=1 : tile=256x64 kb=16 rows tiles=1\n",
		    "bad.tune:2: tiles=1: a work-group of padded rows takes 2 to 4096 tiles");
	parse_fails(CG_TUNING_HEADER "\nsm_90 bf16 batch=1 m=8 n=64 k=576 a=k8 b=k8 split=1 : tile=256x64 kb=16 rows tiles=3 stages=2\n",
		    "bad.tune:2: unexpected `text` after the configuration");
	parse_fails(CG_TUNING_HEADER "\nsm_90 bf16 batch=1 m=8 n=64 k=576 a=k8 b=k8 split=1 : tile=256x64 kb=16 rows stages=1\n",
		    "bad.tune:2: stages=1: padded rows take 2 to 8 buffers");
	parse_fails(CG_TUNING_HEADER "\nsm_90 bf16 batch=1 m=8 n=64 k=576 a=k8 b=k8 split=1 : tile=256x64 kb=16 rows stages=x\n",
		    "bad.tune:2: expected `stages=N` (N a positive integer)");
	parse_fails(CG_TUNING_HEADER "\nsm_90 bf16 batch=1 m=8 n=64 k=576 a=k8 b=k8 split=1 : tile=256x64 kb=16 rows stages=2 x\n",
		    "bad.tune:2: unexpected `text` after the configuration");
	parse_fails(CG_TUNING_HEADER "\nsm_90 bf16 batch=1 m=8 n=64 k=576 a=k8 b=k8 split=1 : tile=256x64 kb=16 row\n",
		    "bad.tune:2: expected `reg=RMxRN`, `rows` or a comment (#) after the k-block");
	parse_fails(CG_TUNING_HEADER "\nsm_90 f32 batch=1 m=0\n", "bad.tune:2: expected `m=N`");
	parse_fails(CG_TUNING_HEADER "\nsm_90 f32 batch=1 m=1 n=1 k=1 a=x1 b=n1 split=1 : tile=1x1 kb=1\n",
		    "bad.tune:2: expected `a=` then k or m");
	parse_fails(CG_TUNING_HEADER "\n\nsm_90 f32 batch=1 m=1 n=1 k=1 a=m1 b=n1 split=1 tile=1x1 kb=1\n",
		    "bad.tune:3: expected ` : `");
	parse_fails(CG_TUNING_HEADER "\nsm_90 f32 batch=1 m=1 n=1 k=1 a=m1 b=n1 split=1 : tile=64 kb=1\n",
		    "bad.tune:2: expected `tile=MxN`");
	parse_fails(CG_TUNING_HEADER "\nsm_90 f32 batch=1 m=1 n=1 k=1 a=m1 b=n1 split=1 : tile=1x1 kb=1 x\n",
		    "bad.tune:2: expected `reg=RMxRN`, `rows` or a comment (#) after the k-block");
	parse_fails(CG_TUNING_HEADER "\nsm_90 f32 batch=1 m=1 n=1 k=1 a=m1 b=n1 split=1 : tile=1x1 kb=1 reg=2\n",
		    "bad.tune:2: expected `reg=RMxRN`, `rows` or a comment");
	parse_fails(CG_TUNING_HEADER "\nsm_90 f32 batch=1 m=1 n=1 k=1 a=m1 b=n1 split=1 : tile=1x1 kb=1 reg=0x2\n",
		    "bad.tune:2: expected `reg=RMxRN` (RM and RN positive integers)");
	parse_fails(CG_TUNING_HEADER "\nsm_90 f32 batch=1 m=1 n=1 k=1 a=m1 b=n1 split=1 : tile=1x1 kb=1 reg=2x2 y\n",
		    "bad.tune:2: unexpected");
	parse_fails(CG_TUNING_HEADER "\nsm_90 f32 batch=1 m=1 n=1 k=1 a=m1 b=n1 split=1 : tile=1x1 kb=1\n"
				     "sm_90 f32 batch=1 m=1 n=1 k=1 a=m1 b=n1 split=1 : tile=2x1 kb=1\n",
		    "bad.tune:3: duplicate key");
}

/* Keys spread as a model's GEMMs spread theirs: i picks the sizes, the operands and the class. */
static CgTuneKey many_key(int i)
{
	CgTuneKey k = {.batch = 1 + i % 3, .m = 64 + 7 * i, .n = 3136 - i % 97, .k = 27 + 9 * (i % 211), .split = 1 + i % 5};
	snprintf(k.arch, sizeof k.arch, "%s", i % 4 ? "sm_90" : "gfx906");
	snprintf(k.cls, sizeof k.cls, "%s", i % 7 ? "f32" : "bf16f32");
	snprintf(k.a, sizeof k.a, "%c%d", i % 2 ? 'k' : 'm', 1 + i % 4);
	snprintf(k.b, sizeof k.b, "%c%d", i % 3 ? 'k' : 'n', 4);
	return k;
}

static void many_keys(void)
{
	enum { N = 5000 };
	CgTuning t = {.source = "many.tune"};
	for (int i = 0; i < N; i++) {
		CgTuneKey k = many_key(i);
		cg_tuning_set(&t, &k, &(CgTileConfig){.tm = 16 << (i % 4), .tn = 8 + i % 120, .kb = 8}, NULL);
	}
	CgTuneKey again = many_key(1234);
	cg_tuning_set(&t, &again, &(CgTileConfig){.tm = 128, .tn = 256, .kb = 32}, "again");
	int wrong = 0, found_near = 0;
	for (int i = 0; i < N; i++) {
		CgTuneKey k = many_key(i);
		const CgTuneEntry *e = cg_tuning_find(&t, &k);
		int64_t tn = i == 1234 ? 256 : 8 + i % 120;
		wrong += !e || !cg_tune_key_equal(&e->key, &k) || e->cfg.tn != tn;
		CgTuneKey near[] = {k, k, k, k};
		near[0].m += 1;                          /* m = 64 + 7i: never another key's */
		near[1].split += 5;                      /* beyond every key's 1..5 */
		near[2].a[0] = k.a[0] == 'k' ? 'x' : 'y'; /* no key's operand */
		snprintf(near[3].arch, sizeof near[3].arch, "sm_80");
		for (int j = 0; j < 4; j++)
			found_near += cg_tuning_find(&t, &near[j]) != NULL;
	}
	CHECK(t.n == N && wrong == 0 && found_near == 0,
	      "a table of %d keys: %d entries, %d keys found wrong or not at all, %d keys found that it does not hold", N,
	      t.n, wrong, found_near);
	cg_tuning_free(&t);
	CgTuneKey k = many_key(0);
	CHECK(cg_tuning_find(&t, &k) == NULL, "an emptied table finds a key");
}

int main(void)
{
	ch_start("test_cg_tuning");
	files();
	many_keys();
	classes();
	small_registers();
	for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
		mode = &modes[m];
		for (int half = 0; half < 2; half++) {
			DType dt = half ? DT_F16 : DT_F32;
			if ((mode->fp16_only && !half) || (half && !mode->half))
				continue;
			/* M = 19 output channels, N = 11 x 13 positions, K = 5 x 3 x 3 */
			run(anchor_conv((Conv){2, 5, 11, 13, 19, 3, 3, 1, 1, 1, 1, 1, 1}, dt), dt);
			/* a dense layer of 37 inputs and 131 outputs on 70 rows, wide enough for the
			 * 128-wide tiles; both operands along k and both not */
			run(anchor_matmul_of(70, 131, 37, 0x9, dt), dt);
		}
	}
	return tu_finish("test_cg_tuning");
}
