/* The whole pipeline from a front end's checked graph to the memory plan:
 * pipeline_prepare (the passes up to `tgc show`'s view), pipeline_warn
 * (with the weights' ranges, where the driver has them), then pipeline_plan
 * (the rewrites, fusion, schedule and memory plan the code generators
 * emit). passes/pipeline.c lists every step in order. */
#ifndef TGC_PIPELINE_H
#define TGC_PIPELINE_H
#include <stddef.h>

#include "ir/infer.h"
#include "ir/ir.h"
#include "passes/f16_range.h"
#include "passes/fusion.h"
#include "passes/memplan.h"
#include "passes/precision.h"
#include "passes/train.h"

/* The first step, which the front end's builder runs on each op right
 * after its inference (frontend/tg/build.h: BuildLowerFn): the sugar ops
 * written in primitives. */
Value *pipeline_lower(InferCtx *c, Value *v);

/* Runs every pass on a front end's graph up to (not including) fusion, the
 * precision policy pol (NULL: declared dtypes) included. Returns false when
 * a pass reported errors to d. */
/* With train set (a training build), the gradients and the optimizer's update
 * (passes/train.h) join the graph first. */
bool pipeline_prepare(Graph *g, Diag *d, const PrecisionPolicy *pol, const TrainSpec *train);

/* After pipeline_prepare, where the weights are known (the driver's
 * load_graph; range NULL: none): the checks that only warn, the values the
 * precision policy put in f16 that can overflow it (passes/f16_range.h).
 * Returns the number of warnings; changes nothing in g. */
int pipeline_warn(const Graph *g, Diag *d, ParamRangeFn range, void *ctx);

void pass_insert_casts(Graph *g, Diag *d);
void pass_broadcast(Graph *g, Diag *d);
bool pass_fold_views(Graph *g, Diag *d);
bool contiguous_materialize(Value *v, Diag *d);
void pass_dce(Graph *g, Diag *d);
void pass_verify(const Graph *g, bool layouts);
/* Folds batch norms into convs and fuses their epilogues (passes/conv_epilogue.c);
 * run by the code generators' planning, after `tgc show`'s view. */
void pass_conv_epilogue(Graph *g);
/* The runtime's scratch bytes for one attention (rt_attention_scratch_bytes,
 * runtime/tgcrt.h): given by the code generators, since the compiler's core
 * does not link the runtime. */
struct RtAttnDesc;
typedef size_t (*AttnScratchFn)(const struct RtAttnDesc *d);
/* Recognises attention written out (softmax(q @ k^T * c [+ mask]) @ v) as
 * scaled_dot_product_attention where that saves memory
 * (passes/attention_fuse.c). */
void pass_attention_fuse(Graph *g, AttnScratchFn scratch);
/* The same in a training build, before the gradient pass (pass_train), at
 * any length, where both targets' kernels run it (head dims <= 256): the
 * op's gradient (ir/vjp_attention.c) then stores no [..., L, S] tensor. */
void pass_attention_fuse_train(Graph *g);
/* Stores the 4-d activations of convolution networks channels-last (NHWC
 * strides over their logical NCHW shape) where every reader indexes by
 * strides (passes/layout.c); run after pass_conv_epilogue. CPU only: the
 * CUDA backend's conv epilogues assume NCHW. */
void pass_layout(Graph *g);
/* What the planning gives the code generators: the storage dtype of every
 * value (by Value.order), the kernels, their order and the memory plan. */
typedef struct PipelinePlan {
    DType *dt;
    KernelPlan *kp;
    Schedule *sched;
    MemPlan *mem;
} PipelinePlan;
/* The planning of a prepared graph (after `tgc show`'s view): attention
 * recognition (attn_scratch NULL: none), the conv epilogues, then
 * (channels_last) the layout pass; then the storage dtypes, fusion, the
 * schedule and the memory plan, into *out. */
void pipeline_plan(Arena *a, Graph *g, AttnScratchFn attn_scratch, bool channels_last,
                   PipelinePlan *out);
#endif
