/* test_ir_checked.c: overflow-checked size arithmetic (ir/checked.h) and the cap every tensor is
 * held to: products against 128-bit ones, shapes at the cap's edge, ops whose result or geometry
 * would pass it refused with a message, and the verifier's check. Sizes are random; the seed is
 * printed (NETC_TEST_SEED=n replays a run). */
#include "ir/checked.h"
#include "tests/unit/test_ir_util.h"

/* A random value of random magnitude (up to 63 bits), either sign. */
static int64_t random_i64(void)
{
	int bits = 1 + (int)tu_below(63);
	int64_t v = (int64_t)(tu_below(UINT64_MAX) >> (64 - bits)); /* below 2^63 */
	return tu_below(2) ? -v : v;
}

static void test_checked_arithmetic(void)
{
	for (int i = 0; i < 10000; i++) {
		int64_t a = random_i64(), b = random_i64(), r;
		__int128 p = (__int128)a * b, s = (__int128)a + b;
		bool mul_over = p > INT64_MAX || p < INT64_MIN, add_over = s > INT64_MAX || s < INT64_MIN;
		CHECK(ckd_mul_i64(a, b, &r) == mul_over && (mul_over || r == (int64_t)p), "%lld * %lld", (long long)a,
		      (long long)b);
		CHECK(ckd_add_i64(a, b, &r) == add_over && (add_over || r == (int64_t)s), "%lld + %lld", (long long)a,
		      (long long)b);
		int64_t pa = a > 0 ? a : -a, pb = b > 0 ? b : -b; /* totals add sizes, never negative */
		__int128 ps = (__int128)pa + pb;
		CHECK(sat_add_i64(pa, pb) == (ps > INT64_MAX ? INT64_MAX : (int64_t)ps), "%lld +sat %lld", (long long)pa,
		      (long long)pb);
	}
	CHECK(sat_add_i64(INT64_MAX - 5, 6) == INT64_MAX && sat_add_i64(40, 2) == 42);
}

/* shape_fits: positive dimensions whose product is at most 2^40, never computed past int64. */
static void test_shape_fits(void)
{
	for (int i = 0; i < 1000; i++) {
		int rank = 1 + (int)tu_below(IR_MAX_DIMS);
		int64_t dim[IR_MAX_DIMS];
		__int128 numel = 1; /* stops growing past the cap, so six 2^40s cannot wrap it */
		for (int d = 0; d < rank; d++) {
			dim[d] = (int64_t)1 << tu_below(41);
			dim[d] += (int64_t)tu_below(3) - 1; /* around powers of two */
			if (dim[d] < 1)
				dim[d] = 1;
			if (numel <= IR_MAX_NUMEL)
				numel *= dim[d];
		}
		Shape s = shape_make(rank, dim);
		CHECK(shape_fits(&s) == (numel <= IR_MAX_NUMEL), "rank %d, %s elements", rank, numel <= IR_MAX_NUMEL ? "few" : "many");
	}
	int64_t edge[2] = {(int64_t)1 << 20, (int64_t)1 << 20}, over[3] = {(int64_t)1 << 20, (int64_t)1 << 20, 2};
	int64_t zero[2] = {4, 0}, wrap[4] = {(int64_t)1 << 40, (int64_t)1 << 40, (int64_t)1 << 40, 1};
	Shape a = shape_make(2, edge), b = shape_make(3, over), c = shape_make(2, zero), d = shape_make(4, wrap);
	Shape scalar = {0};
	CHECK(shape_fits(&a) && !shape_fits(&b) && !shape_fits(&c) && !shape_fits(&d) && shape_fits(&scalar));
}

static int big_leaf(Graph *g, int rank, const int64_t *dim)
{
	return ir_leaf(g, OP_param, NULL, shape_make(rank, dim), DT_F32, NULL);
}

/* Results past the cap are refused where they are made, naming the op and the shape. */
static void test_results_capped(void)
{
	Graph *g = ir_graph_new("t");
	int64_t m = (int64_t)1 << (21 + tu_below(5)), n = ((int64_t)1 << 40) / m * 2;
	int64_t da[2] = {m, 1}, db[2] = {1, n}, dfit[2] = {1, n / 2};
	int a = big_leaf(g, 2, da), b = big_leaf(g, 2, db), fit = big_leaf(g, 2, dfit);
	char want[160];
	snprintf(want, sizeof want, "matmul: the result [%lld, %lld] has more than 2^40 elements", (long long)m, (long long)n);
	expect_error(g, OP_matmul, (int[]){a, b}, A(0, 0), want);
	snprintf(want, sizeof want, "[%lld, %lld]", (long long)m, (long long)(n / 2));
	expect_shape(g, tu_add(g, OP_matmul, (int[]){a, fit}, A(0, 0)), want); /* exactly 2^40 */
	snprintf(want, sizeof want, "add: the result [%lld, %lld] has more than 2^40 elements", (long long)m, (long long)n);
	expect_error(g, OP_add, (int[]){a, b}, NULL, want);

	/* a conv whose dilated kernel passes int64: too large for the input, not a wrapped size */
	int64_t dx[4] = {1, 1, 4, 4}, dw[4] = {1, 1, 1, (int64_t)1 << 39};
	int x = big_leaf(g, 4, dx), w = big_leaf(g, 4, dw);
	expect_error(g, OP_conv2d, (int[]){x, w}, A(1, 1, 0, 0, 2147483647, 2147483647, 0),
		     "conv2d: kernel 1x549755813888 (dilation 2147483647x2147483647) is larger than the input [1, 1, 4, 4] "
		     "padded by 0x0");

	/* limits that sizes run into are stated */
	int v = big_leaf(g, 1, (int64_t[]){4});
	expect_error(g, OP_reshape, &v, A(2, 1, 2199023255552.0), "reshape: d1 must be at most 1099511627776, got 2199023255552");
	expect_error(g, OP_reshape, &v, A(3, 2, 1099511627776.0, 1099511627776.0),
		     "reshape: the target shape has more than 2^40 elements");
	expect_error(g, OP_max_pool2d, &x, A(3e9, 3e9, 1, 1, 0, 0, 0), "max_pool2d: k_h must be at most 2147483647, got 3000000000");

	char err[256];
	CHECK(ir_verify(g, err, sizeof err), "%s", err);
	int64_t dhuge[2] = {m, n};
	big_leaf(g, 2, dhuge);
	CHECK(!ir_verify(g, err, sizeof err) && strstr(err, "more than 2^40 elements"), "verify: %s", err);
	ir_graph_free(g);
}

int main(void)
{
	tu_start("test_ir_checked");
	test_checked_arithmetic();
	test_shape_fits();
	test_results_capped();
	return tu_finish("test_ir_checked");
}
