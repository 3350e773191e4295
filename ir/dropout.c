/* dropout_apply: x * noise, the noise a Philox draw per element (see
 * dropout.h). Its own vector-Jacobian product is the same op applied to
 * the incoming gradient: the mask is a function of (seed, step, site,
 * index), so the backward recomputes it instead of storing it. */
#include "ir/dropout.h"

#include <math.h>

#include "ir/infer.h"
#include "ir/vjp.h"

uint32_t dropout_threshold(double p) {
    double t = ceil((1.0 - p) * 16777216.0); /* exact: a power-of-two scaling */
    return t <= 0 ? 0 : t >= 16777216.0 ? 16777216u : (uint32_t)t;
}

double dropout_scale(double p, DType t) {
    if (t == DT_F64) return p == 1 ? 0.0 : 1.0 / (1.0 - p);
    float keep = (float)(1.0 - p);
    return keep == 0.0f ? 0.0 : (double)(1.0f / keep);
}

uint32_t philox_first(uint64_t seed, uint64_t index, uint32_t site, uint64_t step) {
    uint32_t c0 = (uint32_t)index, c1 = (uint32_t)(index >> 32), c2 = site, c3 = (uint32_t)step;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1, c3 = (uint32_t)p0, c0 = n0, c2 = n2;
        k0 += PHILOX_W0, k1 += PHILOX_W1;
    }
    return c0;
}

bool infer_dropout_apply(InferCtx *c, Value *v) {
    for (int i = 1; i <= 2; i++)
        if (v->args[i].t->ndim != 0 || v->args[i].t->dtype != DT_I64)
            return infer_error(c, v->args[i].loc, "internal: dropout_apply's %s must be 0-d i64",
                               i == 1 ? "seed" : "step");
    if (v->args[5].i < 0 || v->args[5].i > IN0(v)->ndim)
        return infer_error(c, v->args[5].loc, "internal: dropout_apply's nmask is out of range");
    return infer_identity(c, v);
}

bool vjp_dropout_apply(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    if (!vjp_needs(c, v, 0)) return true;
    Arg a[6] = {irb_t(&c->b, gy),
                irb_t(&c->b, v->args[1].t),
                irb_t(&c->b, v->args[2].t),
                v->args[3],
                v->args[4],
                v->args[5]};
    vjp_set(c, v, 0, gx, irb_op(&c->b, OP_DROPOUT_APPLY, 6, a));
    return true;
}
