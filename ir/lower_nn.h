/* Pools, norms, pad, interpolate and pixel_(un)shuffle written in the
 * language's simpler ops right after inference (as repeat_interleave is,
 * ir/lower_sugar.h): windows views (Tensor.unfold) and reductions, gathers
 * with constant indices, layer_norm and elementwise arithmetic. Both
 * backends then fuse and run them with the kernels they already have. The
 * last node carries the op's name as its label (what `tgc show` prints). */
#ifndef TGC_IR_LOWER_NN_H
#define TGC_IR_LOWER_NN_H
#include "ir/ir.h"

/* True for the ops lower_nn rewrites. */
bool lower_nn_applies(OpCode op);
/* v has passed inference and is not in the graph yet; returns the node
 * that replaces it (not yet appended; its helpers are), or NULL after a
 * report. */
Value *lower_nn(InferCtx *c, Value *v);

/* interpolate's output sizes and the scales its index arithmetic uses
 * (0: input / output size), per spatial dim. */
bool interpolate_sizes(const Value *v, int64_t *out, double *scale);

/* A batch_norm written as x * alpha + beta: what the conv epilogue pass
 * (passes/conv_epilogue.c) folds into a preceding convolution. */
typedef struct BatchNormOf {
    Value *x, *mean, *var, *weight, *bias; /* weight, bias: NULL when absent */
    double eps;
} BatchNormOf;

#include "ir/irbuild.h"

/* batch_norm's inference form with running statistics mean and var (its
 * result carries the BatchNormOf). */
Value *lower_batch_norm_eval(IrB *l, Value *x, Value *mean, Value *var, Value *w, Value *b,
                             double eps);
/* The batch's statistics of a training-mode batch_norm: per channel [C],
 * in the compute dtype (f32 for f16/bf16), var biased; count: the values
 * each is over (N times the spatial size). */
typedef struct BatchStats {
    Value *mean, *var;
    int64_t count;
} BatchStats;
/* batch_norm in training mode: normalised with the batch's statistics
 * (set in *st for the running statistics' update). */
Value *lower_batch_norm_batch(IrB *l, Value *x, Value *w, Value *b, double eps, BatchStats *st);
#endif
