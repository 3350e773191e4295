/* The pass pipeline, readable in one screen. Each pass states in its file
 * what it requires and what it gives; the verifier runs between them. */
#include "passes/pipeline.h"

bool pipeline_prepare(Graph *g, Diag *d, const PrecisionPolicy *pol, const TrainSpec *train) {
    pass_verify(g, false);
    if (!train && !pass_train_mode(g, d, false, NULL)) return false; /* the eval form */
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

/* After `tgc show`'s view, in the code generators' planning: rewrites that
 * change which ops run but not what the graph computes. */
void pipeline_plan(Graph *g, AttnScratchFn attn_scratch, bool channels_last) {
    if (attn_scratch) pass_attention_fuse(g, attn_scratch);
    pass_conv_epilogue(g);
    if (channels_last) pass_layout(g);
}
