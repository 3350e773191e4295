/* Training: the gradient pass (passes/grad.c) and the optimizer's update
 * (passes/train.c), written into the graph as IR before precision,
 * broadcasting and view folding, so that the backward pass and the update
 * are fused, planned and code-generated like the forward pass. */
#ifndef TGC_PASSES_TRAIN_H
#define TGC_PASSES_TRAIN_H
#include "ir/ir.h"

typedef enum {
    OPTIM_NONE,  /* no update: the gradients become outputs ("NAME.grad") */
    OPTIM_SGD,   /* torch.optim.SGD: momentum, dampening 0, weight decay added to the gradient */
    OPTIM_ADAMW, /* torch.optim.AdamW */
} OptimKind;

typedef struct TrainSpec {
    const char *loss; /* the name of the 0-d floating output to minimise */
    OptimKind optim;
    double lr, momentum, weight_decay, beta1, beta2, eps;
    const char *const *freeze; /* params not trained */
    int nfreeze;
    /* mixed-f16: dynamic loss scaling as torch.cuda.amp.GradScaler does
     * (initial scale 2^16, halved and the step skipped when a gradient is
     * not finite, doubled after 2000 good steps). */
    bool loss_scaling;
    /* Activation checkpointing: ids of forward values to recompute in the
     * backward pass instead of keeping (tgc report --checkpoint auto). */
    const int *recompute;
    int nrecompute;
    /* --target cuda: attention's dropout_p stays written out (softmax,
     * dropout_apply, @ v), the CUDA kernels applying no mask. */
    bool attn_dropout_written;
} TrainSpec;

/* The defaults of torch.optim (lr 1e-3; SGD without momentum or weight
 * decay; AdamW betas (0.9, 0.999), eps 1e-8, weight decay 1e-2). */
TrainSpec train_spec_default(OptimKind k);
const char *optim_name(OptimKind k);
bool optim_parse(const char *s, OptimKind *out);

/* The trainable params that get a gradient and those gradients (in the
 * params' shapes and dtypes), in graph order. */
typedef struct GradSet {
    Value *loss;
    Value *scale; /* loss_scaling: the f32 state the gradients are scaled by */
    Value **params, **grads;
    int n;
} GradSet;

/* Requires: a checked graph (inferred, before pass_precision). Gives:
 * nodes computing d loss / d param for every float param not frozen that
 * the loss depends on. Reports a loss that is not a 0-d floating output,
 * an unknown --freeze name, and a gradient that would have to flow
 * through an op with no derivative, at that op. */
bool pass_grad(Graph *g, Diag *d, const TrainSpec *t, GradSet *out);

/* pass_grad, then the optimizer's update: for every trained param (and
 * every optimizer state, made as params with zero initialisers) an output
 * holding its value after the step, whose Value.updates names the param
 * it replaces. OPTIM_NONE makes the gradients outputs instead. */
bool pass_train(Graph *g, Diag *d, const TrainSpec *t);

/* The states a training-mode op updates each step: batch norm's running
 * statistics (and num_batches_tracked under momentum=None), dropout's
 * step counter. */
typedef struct TrainModeUpdate {
    Value *param, *next;
} TrainModeUpdate;
typedef struct TrainModeUpdates {
    TrainModeUpdate *u;
    int n, cap;
} TrainModeUpdates;

/* Requires: a checked graph. Gives: batch_norm(training=true) and
 * dropout/dropout1d/dropout2d(training=true) and attention's dropout_p
 * resolved: with training (a --train build) in their training form (the
 * batch's statistics; x * a Philox mask made by dropout_apply from the 0-d
 * i64 states __dropout_seed and __dropout_step; attention as
 * attention_dropout, the blockwise kernels applying the same mask per tile,
 * or with written_attn (and where that op cannot serve) written out with
 * the mask on its probabilities), the updates of the states they own in
 * *up (when up is not NULL); otherwise in their eval form (the running
 * statistics; the identity; no attention dropout), as PyTorch's
 * model.eval() runs them. Every batch norm's running statistics are marked
 * buffers, which pass_grad never trains. Reports a running statistic
 * that is not a param, or that two batch norms share. */
bool pass_train_mode(Graph *g, Diag *d, bool training, bool written_attn, TrainModeUpdates *up);

/* Whether v may be recomputed in the backward pass: a forward value that
 * is computed (not a leaf, a view or a creation op). */
bool checkpoint_candidate(const Graph *g, const Value *v);
/* A candidate or a view of one: a segment recomputes the views inside it
 * too, so that the backward pass reads none of the originals. */
bool checkpoint_recomputable(const Graph *g, const Value *v);
/* Requires pass_train's output. Gives: for every forward value named in
 * t->recompute that the backward pass reads, or that such a clone reads
 * (a segment, recomputed as a chain), a clone computed just before its
 * first reader there, read in its place (passes/checkpoint.c). */
bool pass_checkpoint(Graph *g, Diag *d, const TrainSpec *t);
#endif
