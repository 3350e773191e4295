/* Dropout in training mode: the mask's definition, shared by both code
 * generators and documented in docs/training.md ("Dropout's mask"), so a
 * Python loop can redraw it.
 *
 * Element i (the row-major index over the first nmask dims of the
 * input) of dropout site `site` at step `step` under seed `seed` draws
 * Philox 4x32-10 (Salmon et al. 2011, the generator of PyTorch's CUDA
 * path) with key (seed mod 2^32, seed >> 32) and counter (i mod 2^32,
 * i >> 32, site, step mod 2^32); its first word r keeps the element when
 * (r >> 8) < dropout_threshold(p), i.e. when the 24-bit uniform
 * (r >> 8) / 2^24 is below 1 - p. A kept element is multiplied by
 * 1 / (1 - p) computed as PyTorch's CPU dropout computes it (1 divided by
 * the f32 keep probability, in the input's dtype), a dropped one by 0. */
#ifndef TGC_IR_DROPOUT_H
#define TGC_IR_DROPOUT_H
#include <stdint.h>

#include "ir/ir.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

/* ceil((1 - p) * 2^24): the 24-bit draws below it are kept. */
uint32_t dropout_threshold(double p);
/* The factor a kept element is multiplied by (before rounding to the
 * input's dtype), as ATen's noise.div_(1 - p) computes it: in f64 for f64
 * input, else 1.0f / (float)(1 - p); 0 for p = 1. */
double dropout_scale(double p, DType t);
/* The first word of Philox 4x32-10 (the reference for the tests). */
uint32_t philox_first(uint64_t seed, uint64_t index, uint32_t site, uint64_t step);
#endif
