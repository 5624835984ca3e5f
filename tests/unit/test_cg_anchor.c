/* test_cg_anchor.c: the anchor lowerings (GEMM template: conv2d, its gradients, matmul; pooling
 * and its gradients) compiled for the host against the float64 reference: strides, padding,
 * dilation, non-square kernels, odd sizes that are no multiple of the tiles, all transposes of
 * matmul, overlapping pooling windows, and the MNIST network's shapes. */
#include "tests/unit/cg_anchor_cases.h"
#include "tests/unit/test_util.h"

static void run(CgHarness *h)
{
	tu_failures += ch_run(h);
	ch_free(h);
}

static void convs(void)
{
	anchor_run_convs(run, 64, 16);
	/* n cin h w cout kh kw sh sw ph pw dh dw: a wide image through a 1x3 kernel */
	run(anchor_conv((Conv){2, 5, 6, 40, 11, 1, 3, 1, 1, 0, 1, 1, 1}, DT_F32));
}

static void matmuls(void)
{
	anchor_run_matmuls(run, true);
	/* the MNIST dense layer 9216 -> 128 at batch 64: forward and both gradients */
	run(anchor_matmul(64, 128, 9216, 1u << 2));
	run(anchor_matmul(64, 9216, 128, 1u << 0));
	run(anchor_matmul(128, 9216, 64, 1u << 1));
}

int main(void)
{
	ch_start("test_cg_anchor");
	convs();
	matmuls();
	anchor_run_pools(run, 64);
	return tu_finish("test_cg_anchor");
}
