/* test_cg_isa_twins.c: ISA twins (codegen/isa_twins.h). The table's twins agree on every fact a
 * lowering reads, so a twin's kernels are its mate's; which targets cg_isa_twins pairs; and a code
 * object renamed by cg_isa_twin_code is byte for byte the twin's own, while code objects that differ
 * in more than the name are refused. */
#include <stdlib.h>

#include "codegen/isa_twins.h"
#include "codegen/matrix_layout.h"
#include "codegen/targets.h"
#include "frontend/frontend.h"
#include "passes/passes.h"
#include "tests/unit/test_util.h"

static bool names(const CgMatrixInstr *mi, const char *arch)
{
	for (int i = 0; i < CG_MATRIX_MAX_ARCHS && mi->on[i].arch; i++)
		if (strcmp(mi->on[i].arch, arch) == 0)
			return true;
	return false;
}

/* Rows of one ISA class: the same facts for lowering and occupancy, names of one length, and the
 * same matrix instruction rows. */
static void test_table(void)
{
	int n, nm, pairs = 0;
	const CgTargetInfo *t = cg_target_table(&n);
	const CgMatrixInstr *mi = cg_matrix_instrs(&nm);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			const CgTargetInfo *a = &t[i], *b = &t[j];
			if (!a->isa_class || !b->isa_class || strcmp(a->isa_class, b->isa_class) != 0)
				continue;
			pairs++;
			CHECK(a->kind == b->kind && a->wave == b->wave && a->wave32 == b->wave32 && a->wave64 == b->wave64 &&
				      strcmp(a->features, b->features) == 0 && a->matrix == b->matrix,
			      "%s and %s: kind, waves, features or matrix differ", a->name, b->name);
			CHECK(a->lds_bytes == b->lds_bytes && a->max_vgprs == b->max_vgprs &&
				      a->vgprs_simd32 == b->vgprs_simd32 && a->vgprs_simd64 == b->vgprs_simd64 &&
				      a->vgpr_granule32 == b->vgpr_granule32 && a->vgpr_granule64 == b->vgpr_granule64 &&
				      a->sgprs_simd == b->sgprs_simd && a->max_sgprs == b->max_sgprs &&
				      a->sgpr_granule == b->sgpr_granule && a->max_waves_simd == b->max_waves_simd,
			      "%s and %s: register or LDS budgets differ", a->name, b->name);
			CHECK(a->o3_class && b->o3_class && strcmp(a->o3_class, b->o3_class) == 0, "%s and %s: O3 classes differ",
			      a->name, b->name);
			CHECK(strlen(a->name) == strlen(b->name), "%s and %s: names of different lengths", a->name, b->name);
			for (int k = 0; k < nm; k++)
				CHECK(names(&mi[k], a->name) == names(&mi[k], b->name), "%s names %s but not %s", mi[k].name,
				      names(&mi[k], a->name) ? a->name : b->name, names(&mi[k], a->name) ? b->name : a->name);
		}
	CHECK(pairs == 2, "%d pairs of ISA twins in the table, want 2 (gfx1030/gfx1031, gfx1200/gfx1201)", pairs);
}

static bool target(const char *spec, int wave, CgTarget *t)
{
	char err[512];
	CgTargetOptions o = {.wave = wave};
	bool ok = cg_target_lookup(spec, &o, t, err, sizeof err);
	CHECK(ok, "%s: %s", spec, err);
	return ok;
}

static bool twins(const char *a, const char *b, int wave)
{
	CgTarget x, y;
	return target(a, wave, &x) && target(b, wave, &y) && cg_isa_twins(&x, &y);
}

static void test_pairs(void)
{
	CHECK(twins("gfx1200", "gfx1201", 0), "gfx1200 and gfx1201 are twins");
	CHECK(twins("rx6900xt", "rx6700xt", 64), "gfx1030 and gfx1031 at wave64 are twins");
	CHECK(!twins("gfx1100", "gfx1101", 0), "gfx1100 has user-sgpr-init16-bug, gfx1101 not");
	CHECK(!twins("gfx1030", "gfx1200", 0), "other generations");
	CHECK(!twins("gfx906", "gfx908", 0), "no ISA class");
	CgTarget a, b;
	if (target("gfx1030", 32, &a) && target("gfx1031", 64, &b))
		CHECK(!cg_isa_twins(&a, &b), "wave32 and wave64");
	setenv("NETC_ISA_TWINS", "0", 1);
	CHECK(!twins("gfx1200", "gfx1201", 0), "NETC_ISA_TWINS=0 turns twinning off");
	unsetenv("NETC_ISA_TWINS");
}

static Graph *tiny_graph(void)
{
	char path[1024];
	tu_source_path("tests/lit/inputs/tiny.net", path, sizeof path);
	Graph *g = fe_load_file(path, 0, DIAG_MAX_ERRORS, stderr);
	Diag d;
	diag_init(&d, path, NULL);
	if (g && !passes_run_default(g, &d)) {
		ir_graph_free(g);
		return NULL;
	}
	return g;
}

/* The code object of g for spec, compiled alone (no twin takes part). */
static bool compile(const Graph *g, const char *spec, CgOutput *out)
{
	CgTarget t;
	char err[1024];
	if (!target(spec, 0, &t))
		return false;
	bool ok = cg_compile(g, &t, false, out, err, sizeof err);
	CHECK(ok, "compiling tiny.net for %s: %s", spec, err);
	return ok;
}

/* code renamed as probe's target: the same bytes as want, or an error containing refusal. */
static void rename_as(const CgOutput *code, const CgOutput *probe, const CgOutput *want, const char *refusal)
{
	uint8_t *out;
	size_t size;
	char err[1024] = "";
	bool ok = cg_isa_twin_code(code->code, code->size, probe->code, probe->size, &out, &size, err, sizeof err);
	if (refusal) {
		CHECK(!ok && strstr(err, refusal), "refused with '%s', got %s", refusal, ok ? "a code object" : err);
	} else {
		CHECK(ok, "renaming: %s", err);
		CHECK(ok && size == want->size && memcmp(out, want->code, size) == 0, "the renamed code object is not the twin's own");
	}
	free(out);
}

static void test_rename(void)
{
	Graph *g = tiny_graph();
	CHECK(g, "tiny.net does not load");
	enum { G1200, G1201, G1030, G803, G90A_OFF, G90A_ON, N };
	const char *specs[N] = {"gfx1200", "gfx1201", "gfx1030", "gfx803", "gfx90a:xnack-", "gfx90a:xnack+"};
	CgOutput o[N] = {0};
	bool ok = g != NULL;
	for (int i = 0; ok && i < N; i++)
		ok = compile(g, specs[i], &o[i]);
	if (ok) {
		/* the whole code object of one twin is a probe for it as good as the empty one */
		rename_as(&o[G1200], &o[G1201], &o[G1201], NULL);
		rename_as(&o[G1201], &o[G1200], &o[G1200], NULL);
		rename_as(&o[G90A_OFF], &o[G90A_ON], NULL, "more than the target");
		rename_as(&o[G803], &o[G1030], NULL, "different lengths");
		CgOutput cut = o[G1200];
		cut.size = 40;
		rename_as(&cut, &o[G1201], NULL, "internal error");
	}
	for (int i = 0; i < N; i++)
		cg_output_free(&o[i]);
	if (g)
		ir_graph_free(g);
}

int main(void)
{
	tu_start("test_cg_isa_twins");
	test_table();
	test_pairs();
	test_rename();
	return tu_finish("test_cg_isa_twins");
}
