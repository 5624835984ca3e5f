/* tensor_map.h: the tensor maps of NVIDIA's Tensor Memory Accelerator (TMA, sm_90 and newer), as
 * netc describes them (BundleTensorMap) and as the hardware copies through them.
 *
 * A tiled tensor map names a tensor of up to 5 dimensions in global memory and a box; one
 * cp.async.bulk.tensor instruction copies the box at signed element coordinates (innermost
 * first) into shared memory, elements outside the tensor as zeros, and signals an mbarrier with
 * the bytes it wrote. The box lands dense and row-major (dimension 0 fastest), then the 16-byte
 * units of each row are swizzled: with a swizzle span of 128, 64 or 32 bytes, address bits 4..6,
 * 4..5 or 4 are XORed with bits 7..9, 7..8 or 7 (CUDA driver API, "Tensor Map Object
 * Management"; PTX ISA, "Tensor copy ... swizzling modes"), the pattern wgmma's descriptors read
 * (codegen/gemm_gpu.c), given a shared-memory destination aligned to 1024 bytes.
 *
 * rt_tensor_map_check holds a map to what the driver accepts and to the arena; rt_tensor_map_copy
 * is the copy as the hardware makes it, on the CPU, which tests compare the GPU's copies against
 * (tests/unit/test_rt_tensor_map.c) and GPU emulation can run. */
#ifndef NETC_TENSOR_MAP_H
#define NETC_TENSOR_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/bundle.h"

/* Whether m is a map the driver encodes and its tensor and map lie in an arena of arena_bytes:
 * rank 1..5; dtype f32, f16, bf16, f64 or i32; the map 128-aligned, the tensor 16-aligned; every
 * extent 1..2^32, strides multiples of 16 below 2^40 and at least the extent below them; box
 * extents 1..256 whose innermost run is a multiple of 16 bytes; a swizzle of 0, 32, 64 or 128
 * bytes, and with one the box's innermost run exactly that many bytes. err names what is wrong. */
bool rt_tensor_map_check(const BundleTensorMap *m, int64_t arena_bytes, char *err, size_t errlen);

/* Bytes one copy of m's box writes to shared memory. */
int64_t rt_tensor_map_box_bytes(const BundleTensorMap *m);

/* The shared-memory byte offset where m's copies put byte `offset` of the dense row-major box
 * (the swizzle; the identity without one). */
int64_t rt_tensor_map_swizzled(const BundleTensorMap *m, int64_t offset);

/* The copy of m's box at element coordinates coord[0..rank) from the tensor at `tensor` (host
 * memory laid out as m says) into dst (rt_tensor_map_box_bytes bytes), as the hardware makes it:
 * zeros outside the tensor, swizzled. m must pass rt_tensor_map_check. */
void rt_tensor_map_copy(const BundleTensorMap *m, const void *tensor, const int32_t *coord, void *dst);

#endif
