/* image_dtype.h: the image input in the dtype the model stores it in. Data sets (and netc check)
 * make images as f32; a .net file may declare its image input f16, bf16 or f64, which the network
 * casts to f32 right after the input (docs/language.md), so the buffer holds that dtype. */
#ifndef NETC_RT_IMAGE_DTYPE_H
#define NETC_RT_IMAGE_DTYPE_H

#include <stdint.h>

#include "runtime/rt.h"

/* The dtype the image input of b must have: its own when that is a float type, else f32 (so a
 * check against it reports the non-float one). */
DType rt_image_dtype(const Bundle *b);

/* Writes n f32 values into buffer buf of s, converted to the buffer's dtype (rounding to nearest
 * even); buf must be a float buffer of n elements. */
void rt_write_image(Session *s, int buf, const float *values, int64_t n);

/* Writes n values into buffer buf of s, converted to its dtype (f32, f16 and bf16 rounded to
 * nearest, f64 exact, i32 truncated: the .npy loader checked they are whole). */
void rt_write_values(Session *s, int buf, const double *values, int64_t n);

#endif
