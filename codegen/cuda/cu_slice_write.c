/* slice_scatter on the GPU: input copied into the result first (a copy
 * kernel; none into a state, which is written in place), then one thread
 * per element of src storing it at its place in the slice: element
 * offset + start * stride(dim), the slice's dim stepping by step. A
 * run-time start (a 0-d integer tensor) is read by every thread; out of
 * [0, size - len] it sets the error cell (runtime/rt_index_error.h: the
 * description codegen/slice_write_desc.c writes, the start, offset 0),
 * the first thread winning, and nothing is written. Elements move as
 * their storage type: src and the result share the dtype. */
#include <stdio.h>

#include "codegen/cuda/cu.h"
#include "ir/state.h"

void cu_k_slice_write(Cu *cu, const Value *v) {
    const CgProgram *p = cu->p;
    const Value *x = v->args[0].t, *src = v->args[1].t;
    const Arg *s = &v->args[3];
    RtSliceWriteDesc d;
    char what[512];
    if (!cg_slice_write_describe(p, v, &d, what, sizeof what)) {
        cu_fail(cu, "%s", what);
        return;
    }
    if (!ir_is_state_update(v)) cu_k_broadcast_into(cu, x, v);
    int dim = (int)d.dim;
    Access sa, da, pa;
    kd_access_of(p, src, &sa);
    kd_access_of(p, v, &da);
    int64_t stride = da.strides[dim];
    da.offset += d.start * stride; /* 0 with a tensor start: added per thread */
    da.strides[dim] *= d.step;
    Access *acc[3] = {&sa, &da, &pa};
    int nacc = 2;
    if (s->kind == ARG_TENSOR) {
        kd_access_right_aligned(p, s->t, src->ndim, &pa);
        nacc = 3;
    }
    CuKern k;
    cuk_begin(cu, &k, "slice_scatter");
    k.root = v;
    kspace_build(&k.sp, src->shape, src->ndim, NULL, acc, nacc, false);
    /* No vector lanes: each thread computes its own destination. */
    cuk_threads_begin(&k, k.sp.nloops, acc, nacc);
    const char *dst = cu_str(cu, "(long long)(%s)", cuk_offset(&k, &da));
    const char *val = cu_str(cu, "%s[%s]", cuk_base(&k, &sa, false), cuk_offset(&k, &sa));
    if (s->kind == ARG_TENSOR) {
        const char *st = cu_convert(&k, cuk_load(&k, &pa), pa.dt, DT_I64);
        const char *ix = cuk_tmp_c(&k, "long long", "%s", st);
        int code = cu_error_code(cu, what);
        /* Unsigned: a negative start is out of range too. */
        cuk_emit(&k, "if ((unsigned long long)%s > %lldULL) {", ix,
                 (long long)(d.shape[dim] - d.len));
        cuk_emit(&k, "  if (atomicCAS(%s, 0ULL, %dULL) == 0ULL) {", cuk_error_cell(&k), code);
        cuk_emit(&k, "    %s[1] = (unsigned long long)%s;", cuk_error_cell(&k), ix);
        cuk_emit(&k, "    %s[2] = 0ULL;", cuk_error_cell(&k));
        cuk_emit(&k, "  }");
        cuk_emit(&k, "} else {");
        cuk_emit(&k, "  %s[%s + %s * %lldLL] = %s;", cuk_base(&k, &da, true), dst, ix,
                 (long long)stride, val);
        cuk_emit(&k, "}");
    } else {
        cuk_emit(&k, "%s[%s] = %s;", cuk_base(&k, &da, true), dst, val);
    }
    cuk_elementwise_end(&k);
}
