/* The pass pipeline, readable in one screen: every pass and planning step
 * from a front end's checked graph to the memory plan, in order. Each pass
 * states in its file what it requires and what it gives; the verifier runs
 * between them. The code generators add only their target's scratch to the
 * plan (codegen/interface.c).
 *
 * The first step runs inside the front end's builder (frontend/frontend.c
 * hands it pipeline_lower), on each op right after its inference, so that
 * value ids and messages follow the source's order. */
#include "passes/pipeline.h"

#include "ir/lower_loss.h"
#include "ir/lower_nn.h"
#include "ir/lower_sugar.h"

/* Sugar ops in primitives: repeat_interleave, attention in f64, pools,
 * norms, pad, interpolate and the like (ir/lower_nn.h), losses. */
Value *pipeline_lower(InferCtx *c, Value *v) {
    if (v->op == OP_REPEAT_INTERLEAVE && !(v = lower_repeat_interleave(c, v))) return NULL;
    if (v->op == OP_SDPA && v->dtype == DT_F64 && !(v = lower_sdpa_f64(c, v))) return NULL;
    if (lower_nn_applies(v->op) && !(v = lower_nn(c, v))) return NULL;
    if (lower_loss_applies(v->op) && !(v = lower_loss(c, v))) return NULL;
    return v;
}

bool pipeline_prepare(Graph *g, Diag *d, const PrecisionPolicy *pol, const TrainSpec *train) {
    pass_verify(g, false);
    if (!train && !pass_train_mode(g, d, false, false, NULL)) return false; /* the eval form */
    if (train && !pass_train(g, d, train)) return false;
    if (train) pass_verify(g, false);
    pass_precision(g, d, pol);
    pass_quantize(g, d, pol);
    if (d->errors) return false;
    pass_verify(g, false);
    pass_insert_casts(g, d);
    pass_broadcast(g, d);
    pass_verify(g, false);
    if (!pass_fold_views(g, d)) return false;
    pass_verify(g, true);
    pass_dce(g, d);
    pass_verify(g, true);
    return true;
}

int pipeline_warn(const Graph *g, Diag *d, ParamRangeFn range, void *ctx) {
    return f16_overflow_warn(g, d, range, ctx);
}

/* After `tgc show`'s view, in the code generators' planning: rewrites that
 * change which ops run but not what the graph computes, then the plan. */
void pipeline_plan(Arena *a, Graph *g, AttnScratchFn attn_scratch, bool channels_last,
                   PipelinePlan *out) {
    if (attn_scratch) pass_attention_fuse(g, attn_scratch);
    pass_conv_epilogue(g);
    if (channels_last) pass_layout(g);
    out->dt = precision_storage_dtypes(a, g); /* by the new value order */
    out->kp = fusion_plan(a, g);
    out->sched = fusion_schedule(a, g, out->kp, out->dt);
    out->mem = memplan_plan(a, out->sched);
}
