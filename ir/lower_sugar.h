/* Operations the language offers that are compositions of others: the
 * builder binds their arguments and infers their shape like any operation,
 * then replaces the node by the composition (no kernel of their own). */
#ifndef TGC_IR_LOWER_SUGAR_H
#define TGC_IR_LOWER_SUGAR_H
#include "ir/irbuild.h"
#include "ir/ir.h"

/* repeat_interleave(x, repeats, dim): unsqueeze(dim + 1) -> expand -> reshape
 * (a copy), after flattening x when dim is None. The intermediate nodes are
 * appended to the graph; the result is returned unappended, NULL on error. */
Value *lower_repeat_interleave(InferCtx *c, Value *v);
/* scaled_dot_product_attention at f64, which the blockwise kernels (f32
 * arithmetic) do not compute: PyTorch's math path written out,
 * softmax(q @ k^T * scale [masked or + mask], dim=-1) @ v, in f64 with
 * the [..., L, S] scores stored. Same contract as above; v itself when
 * dropout_p is not 0 (passes/train_mode.c writes it out for the build). */
Value *lower_sdpa_f64(InferCtx *c, Value *v);
/* The same math path at any dtype, with drop(ctx, b, probs, dropout_p)
 * applied to the probabilities when drop is not NULL (attention's
 * dropout in a training build, passes/train_mode.c). */
typedef Value *(*SdpaDropFn)(void *ctx, IrB *b, Value *probs, double p);
Value *lower_sdpa_math(InferCtx *c, Value *v, SdpaDropFn drop, void *ctx);
#endif
