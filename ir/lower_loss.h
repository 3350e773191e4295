/* The loss functions of torch.nn.functional (mse_loss, l1_loss,
 * smooth_l1_loss, nll_loss, cross_entropy,
 * binary_cross_entropy_with_logits): checked by ir/infer_loss.c, then
 * written right after inference (ir/lower_loss.c) in primitive ops that
 * both backends run and that all have vector-Jacobian products
 * (log_softmax, gather, index_select, where, abs, square, exp, log,
 * sum, mean...), so the gradient pass differentiates a loss through its
 * primitives and a training graph needs no loss kernel of its own. */
#ifndef TGC_IR_LOWER_LOSS_H
#define TGC_IR_LOWER_LOSS_H
#include "ir/ir.h"

typedef enum { LOSS_NONE, LOSS_MEAN, LOSS_SUM } LossReduction;

/* Where each loss keeps its arguments in its ops.def signature (-1: the
 * loss has no such argument). PyTorch's deprecated size_average and
 * reduce keep their places, so positional calls bind as in PyTorch. */
typedef struct LossArgs {
    int weight, size_average, reduce, reduction, ignore_index, pos_weight;
    int extra; /* smooth_l1_loss's beta, cross_entropy's label_smoothing */
} LossArgs;

/* NULL for an op that is not a loss. */
const LossArgs *loss_args(OpCode op);
/* The reduction v asks for, PyTorch's legacy rule included: a given
 * size_average or reduce overrides reduction (reduce=false: none, else
 * size_average=false: sum, else mean). -1 for an unknown reduction
 * string (inference reports it). */
int loss_reduction(const Value *v);

/* True for the loss ops. */
bool lower_loss_applies(OpCode op);
/* v has passed inference and is not in the graph yet; returns the node
 * that replaces it (not yet appended; its helpers are), or NULL after a
 * report. */
Value *lower_loss(InferCtx *c, Value *v);
#endif
