/* einsum on the GPU, rendered from its shared description
 * (codegen/einsum_desc.h), as the CPU does: a matrix-product-shaped
 * equation of floats is one product step (cu_k_product, with the same
 * descriptor the CPU passes to rt_matmul); anything else is the generic
 * contraction, one thread per output element looping over the summed
 * letters, products and sum in f32 (f64 for f64, i64 for integers and
 * bool) rounded once into the output dtype. */
#include "codegen/cuda/cu.h"
#include "codegen/einsum_desc.h"

void cu_k_contraction(Cu *cu, KEinsum *e) {
    CuKern k;
    cuk_begin(cu, &k, "einsum");
    Access *acc[KEIN_MAXOPS + 1];
    int na = 0;
    for (int o = 0; o < e->nops; o++)
        acc[na++] = &e->op[o];
    acc[na++] = &e->dst;
    /* The threads take the output loops (the kept ones); each walks the
     * summed loops itself. */
    k.sp = e->space;
    cuk_threads_begin(&k, e->space.nkept, acc, na);
    const char *it = cuk_index_type(&k);
    DType at = e->at;
    bool f = dtype_is_float(at);
    const char *sum = cu_str(cu, "acc%d", k.ntmp++);
    cuk_emit(&k, "%s %s = %s;", cu_ctype(at), sum, cu_const(cu, at, 0));
    for (int l = k.sp.nkept; l < k.sp.nloops; l++) {
        const char *i = cuk_idx(&k, l);
        cuk_emit(&k, "for (%s %s = 0; %s < %lld; %s++) {", it, i, i, (long long)k.sp.ext[l], i);
        k.indent++;
        k.open[l] = true;
    }
    const char *prod = e->nops ? NULL : cu_const(cu, at, 1);
    for (int o = 0; o < e->nops; o++) {
        const char *x = cu_convert(&k, cuk_load(&k, &e->op[o]), e->op[o].dt, at);
        if (!prod)
            prod = x;
        else if (f) /* never contracted into an FMA with the sum: the CPU rounds both */
            prod = cuk_tmp(&k, at, "%s(%s, %s)", at == DT_F64 ? "__dmul_rn" : "__fmul_rn", prod, x);
        else /* i64 products and sums wrap, as the CPU's do */
            prod = cuk_tmp(&k, at, "(long long)((unsigned long long)%s * (unsigned long long)%s)",
                           prod, x);
    }
    if (f)
        cuk_emit(&k, "%s = %s + %s;", sum, sum, prod);
    else
        cuk_emit(&k, "%s = (long long)((unsigned long long)%s + (unsigned long long)%s);", sum, sum,
                 prod);
    for (int l = k.sp.nloops - 1; l >= k.sp.nkept; l--) {
        k.indent--;
        cuk_emit(&k, "}");
        k.open[l] = false;
    }
    cuk_store(&k, &e->dst, sum, at);
    cuk_elementwise_end(&k);
}
