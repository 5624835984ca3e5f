/* test_cg_gpu.c: GPU targets and GPU code generation, checked without a GPU.
 *
 * - target lookup: names, aliases, features, wave sizes, code-object versions and their errors;
 * - a graph with every op that has a kernel (f32, and f16/bf16/f64 where they take other paths)
 *   compiled for gfx906 (wave64), gfx1100 (wave32), gfx1201 (code object 4) and sm_90, and a
 *   smaller one for every other target, gfx1030 in wave64 with code object 6 and gfx90a:xnack-:
 *   the optimized IR verifies; a .hsaco is an AMDGPU ELF of
 *   the requested code-object version whose note names the architecture, whose kernels carry the
 *   wave size, which defines every kernel and has no undefined symbol, and which llvm-objdump
 *   disassembles; ptxas accepts the PTX for the sm_ it names (where ptxas is installed and still
 *   knows that sm_);
 * - the host kernels of the graph still match the float64 reference (the GPU paths leave them be).
 * The numbers on a GPU are checked where one is: `netc check --device cuda|hip`. */
#include <elf.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/IRReader.h>

#include "codegen/targets.h"
#include "ir/ops.h"
#include "tests/unit/cg_harness.h"
#include "tests/unit/test_util.h"

#define EM_AMDGPU_ 224
#define OSABI_AMDGPU_HSA 64

/* ---- targets ---- */

static bool lookup(const char *spec, int wave, int cov, CgTarget *t, char *err, size_t errlen)
{
	CgTargetOptions o = {.wave = wave, .code_object_version = cov};
	err[0] = 0;
	return cg_target_lookup(spec, &o, t, err, errlen);
}

static void expect_error(const char *spec, int wave, int cov, const char *words)
{
	CgTarget t;
	char err[256];
	bool ok = lookup(spec, wave, cov, &t, err, sizeof err);
	CHECK(!ok && strstr(err, words), "%s (wave %d, cov %d): want an error with '%s', got %s '%s'", spec, wave, cov,
	      words, ok ? "success" : "error", err);
}

static void expect_target(const char *spec, int wave, int cov, const char *name, const char *arch, int want_wave,
			  const char *feature)
{
	CgTarget t;
	char err[256];
	bool ok = lookup(spec, wave, cov, &t, err, sizeof err);
	CHECK(ok, "%s: %s", spec, err);
	if (!ok)
		return;
	CHECK(!strcmp(t.name, name) && !strcmp(t.arch, arch), "%s: name %s arch %s, want %s %s", spec, t.name, t.arch,
	      name, arch);
	CHECK(t.wave == want_wave, "%s: wave %d, want %d", spec, t.wave, want_wave);
	CHECK(!feature || strstr(t.features, feature), "%s: features '%s' lack %s", spec, t.features, feature);
}

static void test_lookup(void)
{
	expect_target("gfx906", 0, 0, "gfx906", "gfx906", 64, NULL);
	expect_target("rx580", 0, 0, "gfx803", "gfx803", 64, NULL);
	expect_target("radeon-vii", 64, 0, "gfx906", "gfx906", 64, NULL);
	expect_target("gfx1100", 0, 0, "gfx1100", "gfx1100", 32, "+wavefrontsize32");
	expect_target("rx6800", 64, 0, "gfx1030", "gfx1030", 64, "+wavefrontsize64");
	expect_target("gfx90a:xnack-", 0, 0, "gfx90a:xnack-", "gfx90a", 64, "-xnack");
	expect_target("mi50:xnack+:sramecc-", 0, 0, "gfx906:sramecc-:xnack+", "gfx906", 64, "-sramecc");
	expect_target("sm_90", 0, 0, "sm_90", "sm_90", 32, "+ptx80");
	CgTarget h100;
	char cpu_err[256];
	/* wgmma is architecture-specific: LLVM's CPU (the PTX's .target) is sm_90a */
	CHECK(lookup("sm_90", 0, 0, &h100, cpu_err, sizeof cpu_err) && !strcmp(h100.cpu, "sm_90a"), "sm_90: cpu %s, want sm_90a",
	      h100.cpu);
	expect_target("h100", 32, 0, "sm_90", "sm_90", 32, NULL);
	expect_target("sm_75", 64, 0, "sm_75", "sm_75", 32, NULL); /* the wave option is for AMD */
	expect_error("gfx906", 32, 0, "wave64 only");
	expect_error("gfx1030", 48, 0, "32 or 64");
	expect_error("gfx1030:xnack-", 0, 0, "no features");
	expect_error("gfx906:xnack", 0, 0, "unknown feature");
	expect_error("gfx906:fast+", 0, 0, "unknown feature");
	expect_error("gfx1234", 0, 0, "netc targets");
	expect_error("sm_90:xnack-", 0, 0, "no features");
	expect_error("host:avx", 0, 0, "no features");
	expect_error("gfx906", 0, 7, "4, 5 or 6");
	expect_error("", 0, 0, "unknown target");

	CgTarget t;
	char err[256];
	CHECK(lookup("gfx942", 0, 4, &t, err, sizeof err) && t.code_object_version == 4 && t.kind == CG_AMDGPU &&
		      !strcmp(t.triple, "amdgcn-amd-amdhsa"),
	      "gfx942 cov 4: %s", err);
	CHECK(lookup("gfx942", 0, 0, &t, err, sizeof err) && t.code_object_version == 5, "default code object 5");
	CHECK(lookup("host", 0, 0, &t, err, sizeof err) && t.kind == CG_HOST && !strcmp(t.arch, "host"), "host: %s", err);

	/* every row and alias resolves to its row, and `netc targets` lists them all */
	int n;
	const CgTargetInfo *tab = cg_target_table(&n);
	char *listing = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&listing, &len);
	cg_targets_print(f);
	fclose(f);
	for (int i = 0; i < n; i++) {
		CHECK(cg_target_info(tab[i].name) == &tab[i], "cg_target_info(%s)", tab[i].name);
		CHECK(strstr(listing, tab[i].name), "`netc targets` lacks %s", tab[i].name);
		char alias[64];
		for (const char *p = tab[i].aliases; *p;) {
			size_t k = strcspn(p, ",");
			snprintf(alias, sizeof alias, "%.*s", (int)k, p);
			CHECK(strstr(listing, alias), "`netc targets` lacks %s", alias);
			CHECK(lookup(alias, 0, 0, &t, err, sizeof err) && !strcmp(t.arch, tab[i].name), "alias %s: %s", alias,
			      err);
			p += k + (p[k] == ',');
		}
	}
	free(listing);
}

/* ---- graphs ---- */

static int scalar_op(CgHarness *h, OpId op, int x) { return ch_op(h, op, NULL, x); }

/* elementwise, broadcast and injective ops, and dropout */
static void add_elementwise(CgHarness *h, DType dt)
{
	int x = ch_param(h, dt, "4,3,17"), y = ch_param(h, dt, "3,1");
	ch_range(h, x, 0.5, 2);
	scalar_op(h, OP_neg, x);
	scalar_op(h, OP_exp, x);
	scalar_op(h, OP_log, x);
	scalar_op(h, OP_sqrt, x);
	int r = scalar_op(h, OP_relu, x);
	scalar_op(h, OP_copy, r);
	ch_op(h, OP_relu_grad, NULL, x, r);
	ch_op(h, OP_add, NULL, x, y);
	ch_op(h, OP_sub, NULL, y, x);
	ch_op(h, OP_mul, NULL, x, y);
	ch_op(h, OP_div, NULL, x, y);
	double axis = 1;
	ch_op(h, OP_bias_add, &axis, x, ch_param(h, dt, "3"));
	double shape[IR_MAX_ATTRS] = {2, 12, 17};
	ch_op(h, OP_reshape, shape, x);
	double bshape[IR_MAX_ATTRS] = {3, 2, 3, 5};
	ch_op(h, OP_broadcast_to, bshape, ch_param(h, dt, "3,1"));
	double drop[2] = {0.3, 7};
	ch_op(h, OP_dropout, drop, ch_param(h, dt, "5000"), ch_rng(h));
}

/* sum/mean short and long, softmax family on short and long rows */
static void add_reductions(CgHarness *h, DType dt)
{
	int x = ch_param(h, dt, "6,130,5");
	double mask[2][2] = {{0x2, 0}, {0x5, 1}};
	ch_op(h, OP_sum, mask[0], x);
	ch_op(h, OP_mean, mask[1], x);
	ch_op(h, OP_sum, mask[0], ch_param(h, dt, "4,9,3"));
	for (int k = 0; k < 2; k++) {
		double axis = 1;
		int s = ch_param(h, dt, k ? "3,300" : "5,10");
		int y = ch_op(h, OP_softmax, &axis, s), ly = ch_op(h, OP_log_softmax, &axis, s);
		int dy = ch_param(h, dt, k ? "3,300" : "5,10");
		ch_op(h, OP_softmax_grad, &axis, dy, y);
		ch_op(h, OP_log_softmax_grad, &axis, dy, ly);
	}
}

static void add_losses(CgHarness *h)
{
	int x = ch_param(h, DT_F32, "70,10"), l = ch_labels(h, 70, 10);
	/* log-probabilities as nll_loss takes them: one sign, so that the mean over the batch cannot
	 * cancel to near zero, where a relative error measures rounding only (seed 1415203904 made
	 * nll_loss -1.1e-5 from mixed signs, 2.1e-4 relative) */
	ch_range(h, x, -4, -0.1);
	double red[2] = {0, 1};
	int nll = ch_op(h, OP_nll_loss, &red[0], x, l), ce = ch_op(h, OP_cross_entropy, &red[1], x, l);
	ch_op(h, OP_nll_loss_grad, &red[0], nll, x, l);
	ch_op(h, OP_cross_entropy_grad, &red[1], ce, x, l);
}

/* conv2d, matmul, pooling (another engineer's kernels, compiled here so every op is covered) */
static void add_anchors(CgHarness *h)
{
	int x = ch_param(h, DT_F32, "2,3,8,8"), w = ch_param(h, DT_F32, "4,3,3,3");
	double conv[IR_MAX_ATTRS] = {1, 1, 1, 1, 1, 1};
	int y = ch_op(h, OP_conv2d, conv, x, w);
	double gi[IR_MAX_ATTRS] = {1, 1, 1, 1, 1, 1, 8, 8}, gw[IR_MAX_ATTRS] = {1, 1, 1, 1, 1, 1, 3, 3};
	ch_op(h, OP_conv2d_grad_input, gi, y, w);
	ch_op(h, OP_conv2d_grad_weight, gw, y, x);
	double tr[2] = {0, 1};
	ch_op(h, OP_matmul, tr, ch_param(h, DT_F32, "5,7"), ch_param(h, DT_F32, "6,7"));
	double pool[IR_MAX_ATTRS] = {2, 2, 2, 2, 0, 0, 1};
	int mp = ch_op(h, OP_max_pool2d, pool, y), ap = ch_op(h, OP_avg_pool2d, pool, y);
	ir_max_pool2d_backward(h->g, y, pool, mp);
	ch_op(h, OP_avg_pool2d_grad, pool, ap, y);
}

/* f16, bf16 and f64 through conversions, the f64 exp/log and the LDS trees */
static void add_dtypes(CgHarness *h)
{
	static const DType dts[3] = {DT_F16, DT_BF16, DT_F64};
	for (int i = 0; i < 3; i++) {
		int x = ch_param(h, dts[i], "3,300");
		ch_range(h, x, 0.5, 2);
		double axis = 1, mask[2] = {0x2, 0};
		ch_op(h, OP_add, NULL, ch_op(h, OP_exp, NULL, x), ch_op(h, OP_log, NULL, x));
		ch_op(h, OP_sum, mask, x);
		ch_op(h, OP_softmax, &axis, x);
		ch_op(h, OP_log_softmax, &axis, ch_param(h, dts[i], "4,7"));
	}
}

static void add_assign(CgHarness *h)
{
	int p = ch_param(h, DT_F32, "33");
	ch_op(h, OP_assign, NULL, p, ch_op(h, OP_mul, NULL, p, ch_param(h, DT_F32, "33")));
}

/* full: every op with a kernel and every dtype path; else a few ops of each kind of kernel */
static CgHarness *test_graph(bool full)
{
	CgHarness *h = ch_new(full ? "every op" : "some ops");
	if (!full) {
		int x = ch_param(h, DT_F32, "3,300");
		double axis = 1, mask[2] = {0x2, 0}, drop[2] = {0.5, 1};
		ch_op(h, OP_dropout, drop, ch_op(h, OP_relu, NULL, x), ch_rng(h));
		ch_op(h, OP_sum, mask, x);
		ch_op(h, OP_softmax, &axis, x);
		add_losses(h);
		return h;
	}
	add_elementwise(h, DT_F32);
	add_reductions(h, DT_F32);
	add_losses(h);
	add_dtypes(h);
	add_anchors(h);
	add_assign(h);
	return h;
}

/* ---- checking code objects ---- */

static void check_ir(const char *target, const char *ir)
{
	LLVMContextRef ctx = LLVMContextCreate();
	LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(ir, strlen(ir), "ir");
	LLVMModuleRef m = NULL;
	char *msg = NULL;
	bool parsed = !LLVMParseIRInContext(ctx, buf, &m, &msg);
	CHECK(parsed, "%s: the IR does not parse: %s", target, msg ? msg : "?");
	LLVMDisposeMessage(msg);
	msg = NULL;
	if (parsed) {
		CHECK(!LLVMVerifyModule(m, LLVMReturnStatusAction, &msg), "%s: the IR does not verify: %s", target, msg);
		LLVMDisposeMessage(msg);
		LLVMDisposeModule(m);
	}
	LLVMContextDispose(ctx);
}

static const Elf64_Shdr *section(const uint8_t *elf, size_t size, int i)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)elf;
	size_t off = eh->e_shoff + (size_t)i * eh->e_shentsize;
	return off + sizeof(Elf64_Shdr) <= size ? (const Elf64_Shdr *)(elf + off) : NULL;
}

static bool has_bytes(const uint8_t *p, size_t n, const char *s)
{
	size_t k = strlen(s);
	for (size_t i = 0; i + k <= n; i++)
		if (!memcmp(p + i, s, k))
			return true;
	return false;
}

/* Dynamic symbols: none undefined, every kernel defined; the note names the target. */
static void check_elf_tables(const CgTarget *t, const CgOutput *out, const uint8_t *elf, size_t size)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)elf;
	bool note = false;
	int defined = 0;
	char target_id[64];
	snprintf(target_id, sizeof target_id, "amdgcn-amd-amdhsa--%s", t->name);
	for (int i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *sh = section(elf, size, i);
		if (!sh || sh->sh_offset + sh->sh_size > size)
			break;
		if (sh->sh_type == SHT_NOTE)
			note |= has_bytes(elf + sh->sh_offset, sh->sh_size, target_id);
		if (sh->sh_type != SHT_DYNSYM)
			continue;
		const Elf64_Shdr *strs = section(elf, size, (int)sh->sh_link);
		const Elf64_Sym *sym = (const Elf64_Sym *)(elf + sh->sh_offset);
		for (size_t k = 1; strs && k < sh->sh_size / sizeof *sym; k++) {
			const char *name = (const char *)elf + strs->sh_offset + sym[k].st_name;
			CHECK(sym[k].st_shndx != SHN_UNDEF, "%s: undefined symbol %s", t->name, name);
			for (int j = 0; j < out->nkernels; j++)
				defined += !strcmp(name, out->kernels[j].symbol);
		}
	}
	CHECK(note, "%s: no note names %s", t->name, target_id);
	CHECK(defined == out->nkernels, "%s: %d of %d kernels defined", t->name, defined, out->nkernels);
}

/* The kernels of distinct code: those of the same IR launch one (codegen/kernel_share.h). */
static int distinct_kernels(const CgOutput *out)
{
	int n = 0;
	for (int i = 0; i < out->nkernels; i++) {
		int j = 0;
		while (j < i && strcmp(out->kernels[j].symbol, out->kernels[i].symbol))
			j++;
		n += j == i;
	}
	return n;
}

/* Every kernel's metadata says the target's wave size. */
static void check_wave(const CgTarget *t, const CgOutput *out)
{
	int count = 0, distinct = distinct_kernels(out);
	for (const char *p = out->assembly; (p = strstr(p, ".wavefront_size:")); p++) {
		int w = atoi(p + strlen(".wavefront_size:"));
		CHECK(w == t->wave, "%s: a kernel has wave %d, want %d", t->name, w, t->wave);
		count++;
	}
	CHECK(count == distinct, "%s: %d kernels list a wave size, want %d", t->name, count, distinct);
}

static void check_hsaco(const CgTarget *t, const CgOutput *out)
{
	const uint8_t *elf = out->code;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)elf;
	bool ok = out->size > sizeof *eh && !memcmp(elf, ELFMAG, SELFMAG) && elf[EI_CLASS] == ELFCLASS64;
	CHECK(ok, "%s: the code object is not a 64-bit ELF", t->name);
	if (!ok)
		return;
	CHECK(eh->e_machine == EM_AMDGPU_ && elf[EI_OSABI] == OSABI_AMDGPU_HSA, "%s: machine %d osabi %d", t->name,
	      eh->e_machine, elf[EI_OSABI]);
	/* ELFABIVERSION_AMDGPU_HSA_V4 = 2, V5 = 3, V6 = 4 */
	CHECK(elf[EI_ABIVERSION] == t->code_object_version - 2, "%s: ABI version %d for code object %d", t->name,
	      elf[EI_ABIVERSION], t->code_object_version);
	check_elf_tables(t, out, elf, out->size);
	check_wave(t, out);
	char objdump[512], cmd[600], text[8192];
	if (tu_find_tool("llvm-objdump", objdump, sizeof objdump)) {
		snprintf(cmd, sizeof cmd, "%s -d --mcpu=%s", objdump, t->arch);
		int rc = tu_run_on_file(cmd, out->code, out->size, text, sizeof text);
		CHECK(rc == 0 && strstr(text, "s_endpgm"), "%s: llvm-objdump -d fails: %.300s", t->name, text);
	}
}

static void check_ptx(const CgTarget *t, const CgOutput *out)
{
	const char *ptx = (const char *)out->code;
	CHECK(out->size > 0 && ptx[out->size - 1] == 0 && strlen(ptx) == out->size - 1, "%s: PTX is not one string",
	      t->name);
	char want[96];
	snprintf(want, sizeof want, ".target %s", t->arch);
	CHECK(strstr(ptx, want), "%s: PTX lacks '%s'", t->name, want);
	for (int i = 0; i < out->nkernels; i++) {
		snprintf(want, sizeof want, ".entry %s(", out->kernels[i].symbol);
		CHECK(strstr(ptx, want), "%s: PTX lacks '%s'", t->name, want);
	}
	CHECK(strstr(ptx, ".maxntid"), "%s: PTX gives no .maxntid", t->name);
	char ptxas[512], cmd[600], text[8192], as[48];
	if (!tu_find_tool("ptxas", ptxas, sizeof ptxas)) {
		printf("note: no ptxas; the PTX for %s is not assembled\n", t->name);
		return;
	}
	snprintf(cmd, sizeof cmd, "%s -arch=%s -o /dev/null", ptxas, tu_ptx_arch(out->code, out->size, t->arch, as, sizeof as));
	int rc = tu_run_on_file(cmd, out->code, out->size - 1, text, sizeof text);
	if (rc != 0 && strstr(text, "is not defined for option 'gpu-name'")) {
		printf("note: this ptxas no longer knows %s; its PTX is not assembled\n", t->arch);
		return;
	}
	CHECK(rc == 0, "%s: ptxas rejects the PTX: %.600s", t->name, text);
}

static void check_kernels(const CgTarget *t, const Graph *g, const CgOutput *out)
{
	int want = 0;
	for (int i = 0; i < g->nnodes; i++)
		want += cg_has_kernel(&g->node[i]);
	CHECK(out->nkernels == want, "%s: %d kernels, want %d", t->name, out->nkernels, want);
	for (int i = 0; i < out->nkernels; i++) {
		const CgKernel *k = &out->kernels[i];
		CHECK(k->grid >= 1 && k->block >= 1 && k->block <= 1024 && (t->kind == CG_HOST) == (k->block == 1),
		      "%s: kernel %s grid %lld block %d", t->name, k->name, (long long)k->grid, k->block);
	}
}

static void compile_for(const char *spec, int wave, int cov, bool full)
{
	CgHarness *h = test_graph(full);
	CgTarget t;
	char err[1024];
	CgOutput out;
	if (!lookup(spec, wave, cov, &t, err, sizeof err) || !ch_plan(h)) {
		CHECK(0, "%s: %s", spec, err);
		ch_free(h);
		return;
	}
	bool ok = cg_compile(h->g, &t, true, &out, err, sizeof err);
	CHECK(ok, "%s (%s): cg_compile: %s", spec, h->name, err);
	if (ok) {
		CHECK(out.ir && out.assembly, "%s: no IR or assembly kept", spec);
		check_kernels(&t, h->g, &out);
		check_ir(t.name, out.ir);
		if (t.kind == CG_AMDGPU)
			check_hsaco(&t, &out);
		else
			check_ptx(&t, &out);
		cg_output_free(&out);
	}
	ch_free(h);
}

static void test_codegen(void)
{
	static const char *const full[] = {"gfx906", "gfx1100", "gfx1201", "sm_90"};
	compile_for("gfx906", 0, 0, true);
	compile_for("gfx1100", 0, 0, true);
	compile_for("gfx1201", 0, 4, true);
	compile_for("sm_90", 0, 0, true);
	compile_for("gfx1030", 64, 6, false);
	compile_for("gfx90a:xnack-", 0, 0, false);
	int n;
	const CgTargetInfo *tab = cg_target_table(&n);
	for (int i = 0; i < n; i++) {
		bool done = tab[i].kind == CG_HOST;
		for (size_t k = 0; k < sizeof full / sizeof full[0]; k++)
			done |= !strcmp(tab[i].name, full[k]);
		if (!done)
			compile_for(tab[i].name, 0, 0, false);
	}
}

/* The GPU paths leave the host's kernels as they were: the same graph still matches there. */
static void test_host(void)
{
	CgHarness *h = test_graph(true);
	tu_failures += ch_run(h);
	ch_free(h);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	ch_start("test_cg_gpu");
	test_lookup();
	test_codegen();
	test_host();
	return tu_finish("test_cg_gpu");
}
