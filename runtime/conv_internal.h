/* Shared by conv.c (oneDNN) and conv_ref.c (the direct loop and the
 * strided conversions); not part of the public interface, not installed. */
#ifndef TGCRT_CONV_INTERNAL_H
#define TGCRT_CONV_INTERNAL_H
#include "tgcrt.h"

/* Operand r of the context's buffers. */
static inline char *rt_conv_ptr(void **bufs, RtConvRef r) {
    return (char *)bufs[r.slot] + r.offset;
}

/* The output padding of a transposed convolution, which the descriptor
 * carries only through out[]: out = (in - 1) * stride - pad_l - pad_r +
 * dilation * (k - 1) + 1 + output_padding. */
int64_t rt_conv_out_pad(const RtConvDesc *d, int i);

/* The bias and the batch norm as one affine map per output channel, in
 * double: y[o] = conv[o] * scale[o] + shift[o], with scale = bn_weight /
 * sqrt(var + eps) (1 without a batch norm) and shift = (bias - mean) *
 * scale + bn_bias. Reads the bias and batch-norm tensors from bufs. */
void rt_conv_channel_affine(const RtConvDesc *d, void **bufs, double *scale, double *shift);

/* An eltwise post-op (any kind but RT_CONV_POST_ADD) in double, with
 * PyTorch's formula. */
double rt_conv_post_eltwise(const RtConvPost *p, double x);

/* The whole convolution in double, one output element at a time (so dst
 * may alias an ADD operand): sum over the window, times scale[o] plus
 * shift[o] (rt_conv_channel_affine), then the post-ops in order, stored
 * rounded once to the dtype. Any dtype; the f64 path, and the fallback
 * when oneDNN has no primitive. */
void rt_conv_direct(const RtConvDesc *d, void **bufs, const double *scale, const double *shift);

/* Strided 4-d copies between a tensor of dtype t (f32, f16 or bf16) and
 * f32: dims N, C, H, W; strides in elements. to_f32 is exact; from_f32
 * rounds to nearest even. */
void rt_conv_to_f32(const void *src, RtDType t, const int64_t dims[4], const int64_t sstr[4],
                    float *dst, const int64_t dstr[4]);
void rt_conv_from_f32(const float *src, const int64_t sstr[4], void *dst, RtDType t,
                      const int64_t dims[4], const int64_t dstr[4]);

/* The implementation convs[index] of a context runs: oneDNN's name for it
 * ("jit:avx2", "x64:gemm:jit"...), or "direct: WHY" for the double loop;
 * plus "; staged" when an f32 convolution runs on dense copies of its
 * tensors, and "; private scratch" when the arena's planned scratch was too
 * small and the context allocated its own. For tests and diagnostics. */
const char *rt_conv_impl(const void *state, int64_t index);
/* The read-only private mappings of files in this process, from
 * /proc/self/maps (page_release.c): the weights file rt_st_open maps, the
 * executable's image that holds embedded weights. r is malloc'ed (free
 * it); empty when /proc cannot be read. */
typedef struct RtFileMaps {
    uintptr_t (*r)[2];
    size_t n;
} RtFileMaps;
void rt_file_maps_read(RtFileMaps *m);
/* Hands the pages lying wholly inside [p, p + n) back to the kernel
 * without changing what they hold: MADV_DONTNEED inside one of m's file
 * mappings, MADV_PAGEOUT anywhere else (page_release.c says why). */
void rt_release_pages(const RtFileMaps *m, const void *p, size_t n);
#endif
