// check_mma_layouts.cu: runs each NVIDIA mma.sync row of codegen/matrix_layout.c on the GPU at
// hand. The host distributes random A, B and C tiles to the 32 lanes' registers with the row's
// fragment-index functions (the ones the GEMM template emits its loads and stores through), one
// warp executes the instruction, and D, gathered back with the same functions, must equal a
// plain GEMM on the host. Small integers keep tf32, f16 and bf16 exact, so any wrong lane or slot
// shows as a mismatch. Build and run on an NVIDIA sm_80+ machine, from the repository root:
//   cc -O2 -I. -c codegen/matrix_layout.c -o /tmp/matrix_layout.o
//   nvcc -O2 -arch=sm_80 -I. scripts/gpu/check_mma_layouts.cu /tmp/matrix_layout.o -o /tmp/mma && /tmp/mma
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

extern "C" {
#include "codegen/matrix_layout.h"
}

enum { LANES = 32, MAXV = 8 };

// One warp: lane l reads its registers from a[l*4..], b[l*2..], c[l*4..] and writes d[l*4..].
template <int KIND>
__global__ void run_mma(const uint32_t *a, const uint32_t *b, const float *c, float *d)
{
	int l = threadIdx.x;
	uint32_t a0 = a[l * 4], a1 = a[l * 4 + 1], a2 = a[l * 4 + 2], a3 = a[l * 4 + 3];
	uint32_t b0 = b[l * 2], b1 = b[l * 2 + 1];
	float c0 = c[l * 4], c1 = c[l * 4 + 1], c2 = c[l * 4 + 2], c3 = c[l * 4 + 3], d0, d1, d2, d3;
	if (KIND == 0)
		asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
			     "{%10,%11,%12,%13};"
			     : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
			     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(c0), "f"(c1), "f"(c2), "f"(c3));
	else if (KIND == 1)
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
			     "{%10,%11,%12,%13};"
			     : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
			     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(c0), "f"(c1), "f"(c2), "f"(c3));
	else
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
			     "{%10,%11,%12,%13};"
			     : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
			     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(c0), "f"(c1), "f"(c2), "f"(c3));
	d[l * 4] = d0, d[l * 4 + 1] = d1, d[l * 4 + 2] = d2, d[l * 4 + 3] = d3;
}

// The bits of value v (a small integer) as the row's element type.
static uint32_t elem_bits(CgMatrixElem e, float v)
{
	uint32_t u;
	if (e == CG_MELEM_F16) {
		__half h = __float2half(v);
		memcpy(&u, &h, 2);
		return u & 0xffff;
	}
	if (e == CG_MELEM_BF16) {
		memcpy(&u, &v, 4);
		return u >> 16; // exact for small integers
	}
	memcpy(&u, &v, 4);
	return u;
}

// Packs slot values into 32-bit registers, low half first; `per` slots per register.
static void put(uint32_t *regs, int slot, int per, uint32_t bits)
{
	int bitsz = 32 / per;
	regs[slot / per] |= bits << (bitsz * (slot % per));
}

static int check(const CgMatrixInstr *mi, int kind, uint64_t *seed)
{
	int m = mi->m, n = mi->n, k = mi->k, per = 32 / cg_matrix_elem_bits(mi->elem);
	float A[16 * 16], B[16 * 8], C[16 * 8], want[16 * 8];
	for (int i = 0; i < m * k; i++)
		A[i] = (float)((int)((*seed = *seed * 6364136223846793005ull + 1442695040888963407ull) >> 60) - 8);
	for (int i = 0; i < k * n; i++)
		B[i] = (float)((int)((*seed = *seed * 6364136223846793005ull + 1442695040888963407ull) >> 60) - 8);
	for (int i = 0; i < m * n; i++)
		C[i] = (float)((int)((*seed = *seed * 6364136223846793005ull + 1442695040888963407ull) >> 56) - 128);
	for (int r = 0; r < m; r++)
		for (int c = 0; c < n; c++) {
			float s = C[r * n + c];
			for (int q = 0; q < k; q++)
				s += A[r * k + q] * B[q * n + c];
			want[r * n + c] = s;
		}
	uint32_t ha[LANES * 4] = {0}, hb[LANES * 2] = {0};
	float hc[LANES * 4] = {0}, hd[LANES * 4];
	for (int l = 0; l < LANES; l++) {
		for (int s = 0; s < mi->a_per_lane; s++) {
			CgMatrixCoord at = mi->a_at(mi, l, s);
			put(&ha[l * 4], s, per, elem_bits(mi->elem, A[at.row * k + at.col]));
		}
		for (int s = 0; s < mi->b_per_lane; s++) {
			CgMatrixCoord at = mi->b_at(mi, l, s);
			put(&hb[l * 2], s, per, elem_bits(mi->elem, B[at.row * n + at.col]));
		}
		for (int s = 0; s < mi->c_per_lane; s++) {
			CgMatrixCoord at = mi->c_at(mi, l, s);
			hc[l * 4 + s] = C[at.row * n + at.col];
		}
	}
	uint32_t *da, *db;
	float *dc, *dd;
	cudaMalloc(&da, sizeof ha), cudaMalloc(&db, sizeof hb), cudaMalloc(&dc, sizeof hc), cudaMalloc(&dd, sizeof hd);
	cudaMemcpy(da, ha, sizeof ha, cudaMemcpyHostToDevice);
	cudaMemcpy(db, hb, sizeof hb, cudaMemcpyHostToDevice);
	cudaMemcpy(dc, hc, sizeof hc, cudaMemcpyHostToDevice);
	if (kind == 0)
		run_mma<0><<<1, LANES>>>(da, db, dc, dd);
	else if (kind == 1)
		run_mma<1><<<1, LANES>>>(da, db, dc, dd);
	else
		run_mma<2><<<1, LANES>>>(da, db, dc, dd);
	cudaError_t err = cudaMemcpy(hd, dd, sizeof hd, cudaMemcpyDeviceToHost);
	cudaFree(da), cudaFree(db), cudaFree(dc), cudaFree(dd);
	if (err != cudaSuccess) {
		printf("%s: CUDA error %s\n", mi->name, cudaGetErrorString(err));
		return 1;
	}
	int bad = 0;
	for (int l = 0; l < LANES; l++)
		for (int s = 0; s < mi->c_per_lane; s++) {
			CgMatrixCoord at = mi->c_at(mi, l, s);
			float w = want[at.row * n + at.col];
			if (hd[l * 4 + s] != w && bad++ < 5)
				printf("%s: lane %d slot %d (D[%d][%d]) = %g, want %g\n", mi->name, l, s, at.row, at.col,
				       hd[l * 4 + s], w);
		}
	return bad;
}

int main(void)
{
	const char *names[3] = {"mma.m16n8k8.tf32", "mma.m16n8k16.f16", "mma.m16n8k16.bf16"};
	uint64_t seed = 0x5eed0000u ^ (uint64_t)time(NULL);
	printf("seed %llu\n", (unsigned long long)seed);
	int failed = 0;
	for (int kind = 0; kind < 3; kind++) {
		const CgMatrixInstr *mi = cg_matrix_instr_find(CG_MATRIX_MMA, names[kind], 32);
		if (!mi) {
			printf("%s: no such row in codegen/matrix_layout.c\n", names[kind]);
			failed++;
			continue;
		}
		int bad = 0;
		for (int trial = 0; trial < 20; trial++)
			bad += check(mi, kind, &seed);
		printf("%s: %s (20 random tiles, %d wrong elements)\n", mi->name, bad ? "FAIL" : "ok", bad);
		failed += bad != 0;
	}
	return failed != 0;
}
