/* Quantized products (passes/quantize.c) on CUDA: which of them are
 * dequantized for cuBLAS, and the arena scratch that takes. The weight is
 * dequantized into x's dtype at the arena's tail, where the convolutions'
 * scratch is (steps run one at a time, so the tail is the largest of them,
 * not their sum); the arena the executable allocates is then the one `tgc
 * report` prints. */
#include "codegen/kernel_desc.h"

int64_t cg_qmm_rows(const QMM *d) {
    int64_t r = d->m;
    for (int i = 0; i < d->nbatch; i++)
        r *= d->batch[i];
    return r;
}

bool cg_cuda_qmm_dequantizes(const QMM *d) {
    return cg_qmm_rows(d) > CG_CUDA_QMM_DIRECT_ROWS && d->x_dtype == d->y_dtype && d->n > 0 &&
           d->k > 0;
}

void cg_qmm_plan(CgProgram *p, MemPlan *plan, bool cuda) {
    const Graph *g = p->g;
    if (!cuda) return; /* rt_qmatmul dequantizes blocks into its own scratch */
    int64_t need = 0;
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        if (v->op != OP_QMATMUL || v->dead) continue;
        QMM d;
        const Value *bias;
        kd_qmatmul(p, v, &d, &bias);
        if (!cg_cuda_qmm_dequantizes(&d)) continue;
        int64_t s = d.n * d.k * (int64_t)dtype_size((DType)d.x_dtype);
        if (s > need) need = s;
    }
    if (!need) return;
    int64_t base = p->conv_scratch_bytes   ? p->convs[0].scratch_offset
                   : p->attn_scratch_bytes ? p->attn_scratch_offset
                                           : memplan_align(plan->arena_bytes);
    p->qmm_scratch_offset = base;
    p->qmm_scratch_bytes = memplan_align(need);
    if (base + p->qmm_scratch_bytes > plan->arena_bytes)
        plan->arena_bytes = base + p->qmm_scratch_bytes;
}
