/* The geometry of convolutions and pools, computed once from a checked
 * node's arguments (PyTorch's rules: ATen's ConvUtils.h and Pool.h) and
 * shared by inference, the lowering of pools and the code generators.
 * 1-d ops are described as 2-d ones of height 1. */
#ifndef TGC_IR_CONV_H
#define TGC_IR_CONV_H
#include "ir/ir.h"
#include "ir/lower_nn.h"

typedef struct ConvGeom {
    bool transposed, batched;
    int nd; /* spatial dims of the op: 1 or 2 */
    int64_t n, cin, cout, groups;
    int64_t in[2], out[2], k[2]; /* [0] height (1 for 1-d ops), [1] width */
    int64_t stride[2], dilation[2], pad_l[2], pad_r[2], out_pad[2];
    bool has_bias;
} ConvGeom;

/* conv1d/2d, conv_transpose1d/2d: v must have passed inference. */
void conv_geometry(const Value *v, ConvGeom *g);

/* Pools: kernel, stride, padding, dilation per spatial dim, as 2-d. */
typedef struct PoolGeom {
    int nd;
    bool batched, ceil_mode, is_max, count_include_pad;
    int64_t divisor_override; /* 0: none */
    int64_t in[2], out[2], k[2], stride[2], pad[2], dilation[2];
} PoolGeom;
void pool_geometry(const Value *v, PoolGeom *g);

/* What passes/conv_epilogue.c fused into a convolution: a batch norm of
 * params folded into its weights and bias, then elementwise post-ops
 * (an activation, or the addition of a tensor of the result's shape) in
 * order. The last node of the chain becomes an alias of the conv. */
#define CONV_MAX_POST 4
typedef struct ConvPost {
    OpCode op; /* OP_ADD or an activation */
    double alpha, beta;
    const Value *other; /* OP_ADD: the tensor added */
} ConvPost;
typedef struct ConvEpilogue {
    const BatchNormOf *bn;
    int npost;
    ConvPost post[CONV_MAX_POST];
} ConvEpilogue;

/* Reads an int-or-tuple argument of nd entries into out; false when it
 * has another length (1 is broadcast). */
bool conv_int_tuple(const Arg *a, int nd, int64_t *out);
#endif
