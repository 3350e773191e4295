/* Vector-Jacobian products: each differentiable op's rule for the gradient
 * pass (passes/grad.c), named in the op's row of ir/ops.def.
 *
 * vjp(c, v, gy, gx): gy is the gradient of the loss with respect to v (v's
 * shape, v's dtype). For every tensor operand i of v (v->in order) with
 * c->needs[i], the rule sets gx[i] to the operand's gradient contribution,
 * or leaves it NULL for none (zero). A contribution may still have the
 * broadcast shape of the op's result and any floating dtype: the pass sums
 * it over broadcast dimensions and casts it to the operand's dtype. A rule
 * builds its nodes through c->b (they pass inference and join the graph as
 * any other node does, so the backward graph is fused and planned like the
 * forward one); it returns false after reporting what it cannot
 * differentiate, at v's location. */
#ifndef TGC_IR_VJP_H
#define TGC_IR_VJP_H
#include "ir/irbuild.h"

typedef struct VjpCtx {
    IrB b;             /* makes the gradient's nodes, at the op's location */
    const bool *needs; /* needs[i]: v->in[i] needs a gradient */
} VjpCtx;

/* clang-format off */
#define VJP_FNS(X) \
    /* vjp_views.c */ \
    X(vjp_identity) X(vjp_cast) X(vjp_reshape) X(vjp_transpose) X(vjp_permute) X(vjp_expand) \
    X(vjp_slice) X(vjp_select) X(vjp_diagonal) X(vjp_windows) X(vjp_flip) X(vjp_tri) \
    /* vjp_copies.c */ \
    X(vjp_cat) X(vjp_stack) X(vjp_repeat) X(vjp_gather) X(vjp_index_select) X(vjp_embedding) \
    /* vjp_elementwise.c */ \
    X(vjp_add_sub) X(vjp_mul) X(vjp_div) X(vjp_xlogy) X(vjp_pow) X(vjp_remainder) X(vjp_min_max) \
    X(vjp_where) X(vjp_masked_fill) X(vjp_clamp) X(vjp_unary) X(vjp_zero) \
    /* vjp_reduce.c */ \
    X(vjp_sum_mean) X(vjp_prod) X(vjp_amax) X(vjp_var_std) X(vjp_logsumexp) \
    X(vjp_softmax) X(vjp_log_softmax) X(vjp_layer_norm) X(vjp_rms_norm) \
    /* vjp_products.c */ \
    X(vjp_linear) X(vjp_matmul) X(vjp_outer) X(vjp_einsum) X(vjp_conv) X(vjp_conv_transpose) \
    /* vjp_attention.c */ \
    X(vjp_sdpa) \
    /* dropout.c */ \
    X(vjp_dropout_apply) \
    /* infer_scatter.c */ \
    X(vjp_slice_scatter)
/* clang-format on */
#define DECLARE_VJP(fn) bool fn(VjpCtx *c, Value *v, Value *gy, Value **gx);
VJP_FNS(DECLARE_VJP)
#undef DECLARE_VJP

/* Helpers the rules share (vjp_util.c). */

/* The v->in index of v's tensor argument at position argpos; -1 when that
 * argument is absent or not a tensor. */
int vjp_in(const Value *v, int argpos);
/* Whether the tensor argument at argpos needs a gradient. */
bool vjp_needs(const VjpCtx *c, const Value *v, int argpos);
/* Sets gx[] for the tensor argument at argpos (when it needs one). */
void vjp_set(const VjpCtx *c, const Value *v, int argpos, Value **gx, Value *g);
/* g summed down to (shape, ndim): the adjoint of broadcasting. */
Value *vjp_sum_to(IrB *b, Value *g, const int64_t *shape, int ndim);
/* g, the gradient of a reduction of x over dims (reduced[d] true, keepdim
 * as the reduction had it), reshaped so that it broadcasts against x. */
Value *vjp_unreduce(IrB *b, Value *g, const Value *x, const bool *reduced, bool keepdim);
/* The reduced dims of a reduction whose dims argument is at argpos (absent
 * or None: all), as flags over x's dims; false after a report. */
bool vjp_reduced_dims(VjpCtx *c, const Value *v, int argpos, bool *reduced);
/* A located error: v's op cannot be differentiated here, and why. */
bool vjp_unsupported(VjpCtx *c, const Value *v, const char *why);
Value *vjp_zeros_like(IrB *b, const Value *x);
#endif
