/* Shape/dtype inference and view-layout functions named in ir/ops.def, and
 * the helpers they share. */
#ifndef TGC_INFER_H
#define TGC_INFER_H
#include "ir/ir.h"

/* clang-format off */
#define INFER_FNS(X) \
    X(infer_identity) X(infer_cast) X(infer_slice) X(infer_index_tensor) X(infer_reshape) \
    X(infer_flatten) X(infer_unflatten) X(infer_transpose) X(infer_permute) X(infer_squeeze) \
    X(infer_unsqueeze) X(infer_expand) X(infer_expand_as) X(infer_narrow) X(infer_select) \
    X(infer_chunk) X(infer_split) X(infer_diagonal) X(infer_to) X(infer_dropout) X(infer_cat) \
    X(infer_stack) X(infer_gather) X(infer_index_select) X(infer_embedding) X(infer_repeat) \
    X(infer_flip) X(infer_tri) X(infer_add_sub) X(infer_arith) X(infer_div) X(infer_xlogy) X(infer_compare) \
    X(infer_bitwise) X(infer_where) X(infer_masked_fill) X(infer_clamp) \
    X(infer_unary_keep_nobool) X(infer_unary_keep) X(infer_square) X(infer_unary_float) \
    X(infer_gelu) X(infer_float_only) X(infer_clip_activation) X(infer_logical_not) X(infer_bitwise_not) \
    X(infer_sum_prod) X(infer_mean) X(infer_amax) X(infer_argmax) X(infer_var) \
    X(infer_logsumexp) X(infer_all_any) X(infer_max_min) X(infer_softmax) X(infer_layer_norm) \
    X(infer_rms_norm) X(infer_linear) X(infer_qmatmul) X(infer_matmul) X(infer_mm) X(infer_bmm) X(infer_mv) \
    X(infer_outer) X(infer_einsum) X(infer_fill_shape) X(infer_full) X(infer_arange) \
    X(infer_eye) X(infer_tensor) X(infer_fill_like) X(infer_full_like) \
    X(infer_repeat_interleave) X(infer_conv) X(infer_pool) X(infer_adaptive_pool) \
    X(infer_batch_norm) X(infer_group_norm) X(infer_instance_norm) X(infer_pad) \
    X(infer_interpolate) X(infer_pixel_shuffle) X(infer_windows) \
    X(infer_pointwise_loss) X(infer_nll_loss) X(infer_cross_entropy) X(infer_bce_with_logits) \
    X(infer_sdpa) X(infer_sdpa_bwd) X(infer_dropout_apply) X(infer_slice_scatter)

#define LAYOUT_FNS(X) \
    X(layout_identity) X(layout_slice) X(layout_reshape) X(layout_transpose) X(layout_permute) \
    X(layout_squeeze) X(layout_unsqueeze) X(layout_expand) X(layout_narrow) X(layout_select) \
    X(layout_diagonal) X(layout_contiguous) X(layout_to) X(layout_windows) \
    X(layout_slice_scatter)
/* clang-format on */

#define DECLARE_INFER(fn) bool fn(InferCtx *c, Value *v);
#define DECLARE_LAYOUT(fn) bool fn(Value *v);
INFER_FNS(DECLARE_INFER)
LAYOUT_FNS(DECLARE_LAYOUT)
#undef DECLARE_INFER
#undef DECLARE_LAYOUT

/* Helpers shared by the inference files. */
#define ARG(v, i) (&(v)->args[i])
#define IN0(v) ((v)->args[0].t)
bool infer_error(InferCtx *c, SrcLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void set_shape(Value *v, const int64_t *shape, int ndim);
/* Broadcasts b into (shape, ndim) in place; false and a report when they do not broadcast. */
bool broadcast_into(InferCtx *c, int64_t *shape, int *ndim, const Value *b, SrcLoc loc,
                    const char *what_a, const char *what_b);
/* Reduction output shape over dims (ARG_ABSENT: all dims). Marks reduced dims in reduced[]. */
bool reduce_shape(InferCtx *c, Value *v, Arg *dims, bool keepdim, bool reduced[TG_MAX_DIMS]);
/* squeeze's dropped dims of x: the dims of d (normalised) or, when d is
 * absent, all dims, that have size 1. Shared by inference and layout. */
void squeeze_dropped(const Value *x, const Arg *d, bool drop[TG_MAX_DIMS]);
/* Resolves one -1 in a shape for numel elements, with PyTorch's message. */
bool infer_size(InferCtx *c, SrcLoc loc, int64_t *shape, int ndim, int64_t numel);
#endif
