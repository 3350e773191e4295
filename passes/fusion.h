/* Fusion: which values become kernels, and which are computed inside the
 * kernel of their only consumer.
 *
 * Requires: a graph after view folding and dead-value removal.
 * Gives: a KernelPlan: kernels in run order, each with the value it writes
 * (its root) and the SchedStep the memory planner and the report use, and,
 * per value, whether it is inlined (computed in registers inside its
 * consumer's loop nest, never stored).
 *
 * A value is inlined when it is an expression of the element at the same
 * index (an elementwise op, a cast, a same-shape copy, a creation op,
 * tril/triu), it is not an output, and its one use is a direct operand (not
 * a view) of a consumer that evaluates operands per element: another such
 * expression, a reduction, or the input of softmax, log_softmax,
 * layer_norm or rms_norm. Chains of elementwise ops, with broadcasts and
 * strided inputs at their leaves, so become one loop nest with no
 * intermediate buffers. A kernel's expression is capped at FUSION_MAX_NODES
 * nodes to bound compile time and recomputation. */
#ifndef TGC_FUSION_H
#define TGC_FUSION_H
#include "passes/schedule.h"

#define FUSION_MAX_NODES 64

typedef struct Kernel {
    Value *root;    /* the value written; an output's value for output copies */
    int out_copy;   /* >= 0: copies graph output #out_copy into its buffer (no step) */
    SchedStep step; /* writes, reads (leaf operands, views allowed) */
} Kernel;

typedef struct KernelPlan {
    Kernel *kernels; /* compute kernels in run order, then output copies */
    int nkernels;
    int ncompute;     /* kernels[0, ncompute) have steps; the rest are output copies */
    SchedStep *steps; /* the compute kernels' steps, for schedule_build */
    bool *inlined;    /* by Value.order */
} KernelPlan;

/* True when v computes its element i from the elements i of its operands
 * (or from i itself): the ops fusion may inline. */
bool fusion_is_expression(const Value *v);
KernelPlan *fusion_plan(Arena *a, const Graph *g);
/* The schedule of the plan's kernels (liveness for the memory planner). */
Schedule *fusion_schedule(Arena *a, const Graph *g, const KernelPlan *kp,
                          const DType *storage_dtype);
#endif
