/* test_cg_amdgpu_info.c: the occupancy rules on known cases (each checked against the occupancy
 * LLVM 19's AMDGPU backend prints for the same registers, LDS and work-group size), properties of
 * the VGPR rule over random register counts, damaged files, and the metadata of real code objects
 * compiled here. */
#include "codegen/amdgpu_info.h"
#include "codegen/cg.h"
#include "frontend/frontend.h"
#include "passes/passes.h"
#include "tests/unit/test_util.h"

static int occupancy(const char *arch, int wave, int vgpr, int agpr, int sgpr, uint32_t lds, int wg)
{
	CgAmdChip chip;
	if (!cg_amd_chip(arch, wave, &chip)) {
		FAIL("%s wave%d unknown", arch, wave);
		return -1;
	}
	CgAmdKernel k = {.vgpr = vgpr, .agpr = agpr, .sgpr = sgpr, .lds = lds, .wave = wave, .max_wg = wg};
	return cg_amd_occupancy(&chip, &k, wg).waves;
}

typedef struct {
	const char *arch;
	int wave, vgpr, agpr, sgpr;
	uint32_t lds;
	int wg, waves;
} Case;

static void test_known_cases(void)
{
	static const Case cases[] = {
		/* VGPRs: 256 per lane on gfx9, granule 4, 10 waves at most */
		{"gfx906", 64, 256, 0, 16, 0, 256, 1},
		{"gfx906", 64, 24, 0, 16, 0, 256, 10},
		{"gfx906", 64, 100, 0, 65, 16384, 256, 2},
		{"gfx803", 64, 100, 0, 61, 16384, 256, 2},
		{"gfx906", 64, 0, 0, 0, 0, 64, 10},
		/* gfx908: AGPRs in a file of their own; gfx90a/gfx942: one file of 512, granule 8, 8 waves */
		{"gfx908", 64, 41, 21, 4, 0, 1024, 5},
		{"gfx90a", 64, 65, 21, 4, 0, 1024, 7},
		{"gfx942", 64, 100, 0, 67, 16384, 256, 4},
		{"gfx90a", 64, 2, 0, 12, 16384, 1024, 8},
		/* RDNA2: 1024 per lane at wave32 (granule 16), 512 at wave64 (granule 8), 16 waves */
		{"gfx1030", 32, 100, 0, 61, 16384, 256, 9},
		{"gfx1030", 64, 100, 0, 61, 16384, 256, 4},
		{"gfx1031", 64, 41, 0, 0, 0, 1024, 10},
		/* RDNA3 Navi 31/32 and RDNA4: 1.5x the VGPRs, granule 24 (wave32) or 12 (wave64) */
		{"gfx1100", 32, 100, 0, 61, 16384, 256, 12},
		{"gfx1101", 64, 100, 0, 61, 16384, 256, 7},
		{"gfx1200", 32, 100, 0, 61, 16384, 256, 12},
		{"gfx1201:xnack-", 64, 100, 0, 61, 16384, 256, 7},
		/* SGPRs limit gfx8/9 only */
		{"gfx906", 64, 8, 0, 88, 0, 64, 9},
		{"gfx906", 64, 8, 0, 102, 0, 64, 7},
		{"gfx1030", 32, 8, 0, 106, 0, 64, 16},
		/* work-group size and barriers: 16 waves per group on gfx9 leave room for 2 groups per CU */
		{"gfx803", 64, 2, 0, 8, 16384, 1024, 8},
		/* LDS: 64 KiB per CU on gfx9, 128 KiB per WGP on gfx10+ */
		{"gfx906", 64, 8, 0, 16, 65536, 256, 1},
		{"gfx906", 64, 8, 0, 16, 32768, 64, 1},
		{"gfx1030", 32, 8, 0, 16, 32768, 64, 2},
		{"gfx1100", 32, 8, 0, 16, 40000, 256, 6},
		{"gfx1100", 32, 8, 0, 16, 65536, 256, 4},
		{"gfx90a", 64, 8, 0, 16, 20000, 512, 6},
		{"gfx1201", 64, 8, 0, 16, 30000, 128, 2},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const Case *c = &cases[i];
		int got = occupancy(c->arch, c->wave, c->vgpr, c->agpr, c->sgpr, c->lds, c->wg);
		CHECK(got == c->waves, "%s wave%d vgpr %d agpr %d sgpr %d lds %u wg %d: %d waves, want %d", c->arch,
		      c->wave, c->vgpr, c->agpr, c->sgpr, c->lds, c->wg, got, c->waves);
	}
}

static void test_chip_errors(void)
{
	CgAmdChip chip;
	CHECK(!cg_amd_chip("gfx906", 32, &chip), "gfx906 has no wave32");
	CHECK(!cg_amd_chip("sm_90", 32, &chip), "sm_90 is no AMD chip");
	CHECK(!cg_amd_chip("gfx", 64, &chip), "'gfx' alone");
	CHECK(!cg_amd_chip("gfxzz1", 64, &chip), "'gfxzz1'");
	CHECK(!cg_amd_chip("gfx1030", 48, &chip), "wave48");
	CHECK(cg_amd_chip("gfx90a:sramecc+:xnack-", 64, &chip) && chip.unified_agpr, "gfx90a with features");
}

/* The VGPR rule, restated: the most waves w (up to the chip's limit) whose rounded-up registers
 * fit the lane's budget; never fewer than one. */
static void test_vgpr_property(void)
{
	static const char *arches[] = {"gfx803", "gfx900", "gfx906", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1201"};
	for (int i = 0; i < 400; i++) {
		const char *arch = arches[tu_next() % 8];
		int wave = arch[3] == '1' && (tu_next() & 1) ? 32 : 64;
		int vgpr = 1 + (int)(tu_next() % 256);
		CgAmdChip chip;
		cg_amd_chip(arch, wave, &chip);
		CgAmdKernel k = {.vgpr = vgpr, .wave = wave, .max_wg = wave};
		CgAmdOccupancy o = cg_amd_occupancy(&chip, &k, wave);
		int rounded = (vgpr + chip.vgpr_granule - 1) / chip.vgpr_granule * chip.vgpr_granule;
		int want = 1;
		for (int w = 1; w <= chip.max_waves; w++)
			if (w * rounded <= chip.vgpr_total)
				want = w;
		if (vgpr < chip.vgpr_granule)
			want = chip.max_waves;
		CHECK(o.by_vgpr == want, "%s wave%d vgpr %d: %d waves by VGPRs, want %d", arch, wave, vgpr, o.by_vgpr, want);
		CHECK(o.waves <= o.by_vgpr && o.waves >= 1, "%s vgpr %d: %d waves overall", arch, vgpr, o.waves);
		CgAmdKernel more = k;
		more.vgpr += chip.vgpr_granule;
		CHECK(cg_amd_occupancy(&chip, &more, wave).by_vgpr <= o.by_vgpr, "%s: more VGPRs, more waves", arch);
	}
}

/* ---- real code objects ---- */

static Graph *tiny_graph(void)
{
	char path[1024];
	tu_source_path("tests/lit/inputs/tiny.net", path, sizeof path);
	Graph *g = fe_load_file(path, 0, DIAG_MAX_ERRORS, stderr);
	if (!g)
		return NULL;
	Diag d;
	diag_init(&d, path, NULL);
	if (!passes_run_default(g, &d)) {
		ir_graph_free(g);
		return NULL;
	}
	return g;
}

static const CgAmdKernel *find_kernel(const CgAmdCode *code, const char *name)
{
	for (int i = 0; i < code->nkernels; i++)
		if (strcmp(code->kernels[i].name, name) == 0)
			return &code->kernels[i];
	return NULL;
}

/* Damaged copies of a good code object: every one an error or a read, never a crash. */
static void test_damaged(const CgOutput *out)
{
	char err[256];
	CgAmdCode code;
	uint8_t *copy = malloc(out->size);
	for (int i = 0; i < 200; i++) {
		memcpy(copy, out->code, out->size);
		size_t size = out->size;
		if (i % 2)
			size = tu_next() % out->size;
		else
			for (int j = 0; j < 8; j++)
				copy[tu_next() % size] = (uint8_t)tu_next();
		if (cg_amd_read(copy, size, &code, err, sizeof err))
			cg_amd_free(&code);
		else
			CHECK(err[0], "damaged code object: empty error");
	}
	free(copy);
	CHECK(!cg_amd_read((const uint8_t *)"\177ELF", 4, &code, err, sizeof err), "4-byte ELF read");
	CHECK(!cg_amd_read((const uint8_t *)"hello, world", 12, &code, err, sizeof err) && strstr(err, "not an ELF"),
	      "text read as a code object: %s", err);
}

static void test_real(Graph *g, const char *spec, int wave)
{
	CgTarget t;
	CgTargetOptions o = {.wave = wave};
	char err[1024];
	if (!cg_target_lookup(spec, &o, &t, err, sizeof err)) {
		CHECK(0, "%s: %s", spec, err);
		return;
	}
	CgOutput out;
	if (!cg_compile(g, &t, false, &out, err, sizeof err)) {
		CHECK(0, "compiling tiny.net for %s: %s", spec, err);
		return;
	}
	CgAmdCode code;
	if (!cg_amd_read(out.code, out.size, &code, err, sizeof err)) {
		CHECK(0, "%s: %s", spec, err);
		cg_output_free(&out);
		return;
	}
	char want[64];
	snprintf(want, sizeof want, "amdgcn-amd-amdhsa--%s", t.arch);
	CHECK(strncmp(code.target, want, strlen(want)) == 0, "%s: amdhsa.target '%s'", spec, code.target);
	CHECK(code.version[0] == 1 && code.version[1] == 2, "%s: amdhsa.version %d.%d, want 1.2 (v5)", spec,
	      code.version[0], code.version[1]);
	/* kernels of the same code launch one symbol (codegen/kernel_share.h) */
	int symbols = 0;
	for (int i = 0; i < out.nkernels; i++)
		symbols += strcmp(out.kernels[i].symbol, out.kernels[i].name) == 0;
	CHECK(code.nkernels == symbols, "%s: %d kernels in the metadata, %d compiled", spec, code.nkernels, symbols);
	CgAmdChip chip;
	CHECK(cg_amd_chip(t.arch, t.wave, &chip), "%s: no chip limits", spec);
	for (int i = 0; i < out.nkernels; i++) {
		const CgAmdKernel *k = find_kernel(&code, out.kernels[i].symbol);
		CHECK(k, "%s: kernel %s not in the metadata", spec, out.kernels[i].name);
		if (!k)
			continue;
		CHECK(k->wave == t.wave, "%s %s: .wavefront_size %d, want %d", spec, k->name, k->wave, t.wave);
		CHECK(k->vgpr > 0 && k->sgpr > 0, "%s %s: vgpr %d sgpr %d", spec, k->name, k->vgpr, k->sgpr);
		CHECK(out.kernels[i].block <= k->max_wg, "%s %s: block %d over .max_flat_workgroup_size %d", spec,
		      k->name, out.kernels[i].block, k->max_wg);
		int w = cg_amd_occupancy(&chip, k, out.kernels[i].block).waves;
		CHECK(w >= 1 && w <= chip.max_waves, "%s %s: %d waves", spec, k->name, w);
	}
	if (wave == 0 && t.wave == 64)
		test_damaged(&out);
	cg_amd_free(&code);
	cg_output_free(&out);
}

int main(void)
{
	tu_start("test_cg_amdgpu_info");
	test_known_cases();
	test_chip_errors();
	test_vgpr_property();
	Graph *g = tiny_graph();
	CHECK(g, "tiny.net does not load");
	if (g) {
		test_real(g, "gfx906", 0);
		test_real(g, "rx7900xtx", 0);
		test_real(g, "gfx1030", 64);
		ir_graph_free(g);
	}
	return tu_finish("test_cg_amdgpu_info");
}
