/* rt_cuda_gemm_plan: how (and whether) cuBLAS computes an RtMatmulDesc.
 * Pure (no CUDA call), so it is unit-tested without a GPU. See
 * cuda_blas.h for the plan's fields and docs/runtime.md "CUDA programs". */
#include <limits.h>
#include <string.h>

#include "cuda_blas.h"

/* Batch dimensions of size above 1 (size-1 ones address nothing). */
typedef struct Dims {
    int n;
    int64_t size[RT_MATMUL_MAX_BATCH], a[RT_MATMUL_MAX_BATCH], b[RT_MATMUL_MAX_BATCH],
        c[RT_MATMUL_MAX_BATCH];
} Dims;

/* x * y == z exactly, for x > 0 (no overflow: division instead). */
static bool prod_is(int64_t x, int64_t y, int64_t z) {
    return z % x == 0 && z / x == y;
}

/* How cuBLAS reads an r x c matrix (r, c >= 1) with element strides
 * (rs, cs) as a column-major matrix: op N with ld = cs when the rows are
 * contiguous (rs = 1), op T with ld = rs when the columns are (cs = 1).
 * The stride of a size-1 dimension addresses nothing, so a legal ld
 * (>= the stored matrix's rows) is given instead. ld must also reach past
 * a whole column, or elements would alias: cuBLAS requires it anyway. */
static bool colmajor(int64_t r, int64_t c, int64_t rs, int64_t cs, int *op, int *ld) {
    int64_t l;
    if ((rs == 1 || r == 1) && (c == 1 || cs >= r)) {
        *op = CUBLAS_OP_N;
        l = c == 1 ? r : cs;
    } else if ((cs == 1 || c == 1) && (r == 1 || rs >= c)) {
        *op = CUBLAS_OP_T;
        l = r == 1 ? c : rs;
    } else {
        return false;
    }
    if (l > INT_MAX) return false;
    *ld = (int)l;
    return true;
}

/* The operands' layouts for an m x n result: C^T = B^T A^T when C's rows
 * are contiguous (the usual row-major case), else C = A B when its columns
 * are. C itself cannot be transposed, so it must map to op N. place()
 * tries one: Z (r x c) = X (r x k) Y (k x c), each given by its (row,
 * column) strides. */
static bool place(int64_t r, int64_t c, int64_t k, const int64_t x[2], const int64_t y[2],
                  const int64_t z[2], RtCudaGemmPlan *p) {
    int opc;
    if (!colmajor(r, k, x[0], x[1], &p->transa, &p->lda) ||
        !colmajor(k, c, y[0], y[1], &p->transb, &p->ldb) ||
        !colmajor(r, c, z[0], z[1], &opc, &p->ldc) || opc != CUBLAS_OP_N)
        return false;
    p->m = (int)r;
    p->n = (int)c;
    return true;
}

static bool layout(const RtMatmulDesc *d, int64_t m, RtCudaGemmPlan *p) {
    /* Each operand's (row, column) strides, and those of its transpose. */
    const int64_t a[2] = {d->a_rs, d->a_cs}, b[2] = {d->b_rs, d->b_cs}, c[2] = {d->c_rs, d->c_cs};
    const int64_t at[2] = {d->a_cs, d->a_rs}, bt[2] = {d->b_cs, d->b_rs};
    const int64_t ct[2] = {d->c_cs, d->c_rs};
    p->swap = place(d->n, m, d->k, bt, at, ct, p);
    return p->swap || place(m, d->n, d->k, a, b, c, p);
}

/* One attempt: with fold_m, trailing batch dimensions over which B is
 * broadcast and A's and C's rows continue are folded into m (rt_matmul's
 * rule), which only pays when something folds. */
static bool try_plan(const RtMatmulDesc *d, const Dims *bd, bool fold_m, RtCudaGemmPlan *p) {
    int nb = bd->n;
    int64_t m = d->m;
    if (fold_m) {
        while (nb > 0) {
            int i = nb - 1;
            if (bd->b[i] != 0 || !prod_is(m, d->a_rs, bd->a[i]) || !prod_is(m, d->c_rs, bd->c[i]) ||
                m > INT_MAX / bd->size[i])
                break;
            m *= bd->size[i];
            nb--;
        }
        if (nb == bd->n) return false;
    }
    if (m > INT_MAX || !layout(d, m, p)) return false;

    /* The strided batch: the innermost dimension and every one outside it
     * whose strides continue it evenly ([B1, B2] with strides (B2 s, s) is
     * B1 B2 entries s apart). Negative strides and a C stride of 0 (every
     * entry writing the same C, which only a sequential loop gets right)
     * stay on the host loop. */
    int j = nb;
    int64_t count = 1, sa = 0, sb = 0, sc = 0;
    if (nb > 0 && bd->a[nb - 1] >= 0 && bd->b[nb - 1] >= 0 && bd->c[nb - 1] > 0 &&
        bd->size[nb - 1] <= INT_MAX) {
        j = nb - 1;
        count = bd->size[j];
        sa = bd->a[j], sb = bd->b[j], sc = bd->c[j];
        while (j > 0 && prod_is(count, sa, bd->a[j - 1]) && prod_is(count, sb, bd->b[j - 1]) &&
               prod_is(count, sc, bd->c[j - 1]) && count <= INT_MAX / bd->size[j - 1]) {
            j--;
            count *= bd->size[j];
        }
    }
    p->batch = (int)count;
    p->stride_a = p->swap ? sb : sa;
    p->stride_b = p->swap ? sa : sb;
    p->stride_c = sc;
    p->nouter = j;
    for (int i = 0; i < j; i++) {
        p->outer[i] = bd->size[i];
        p->outer_a[i] = bd->a[i];
        p->outer_b[i] = bd->b[i];
        p->outer_c[i] = bd->c[i];
    }
    p->k = (int)d->k;
    p->beta_one = d->accumulate != 0;
    return true;
}

bool rt_cuda_gemm_plan(const RtMatmulDesc *d, RtCudaGemmPlan *p) {
    memset(p, 0, sizeof *p);
    if (!d || d->nbatch < 0 || d->nbatch > RT_MATMUL_MAX_BATCH) return false;
    switch (d->dtype) {
    case RT_F16: p->dtype = CUDA_R_16F, p->compute = CUBLAS_COMPUTE_32F, p->elem = 2; break;
    case RT_BF16: p->dtype = CUDA_R_16BF, p->compute = CUBLAS_COMPUTE_32F, p->elem = 2; break;
    case RT_F32: p->dtype = CUDA_R_32F, p->compute = CUBLAS_COMPUTE_32F, p->elem = 4; break;
    case RT_F64: p->dtype = CUDA_R_64F, p->compute = CUBLAS_COMPUTE_64F, p->elem = 8; break;
    default: return false; /* integers and bool: tg_matmul */
    }
    /* k = 0 (C = 0, or unchanged) is left to tg_matmul: cuBLAS's rules for
     * the leading dimensions of empty operands are not worth relying on. */
    if (d->m < 1 || d->n < 1 || d->k < 1 || d->n > INT_MAX || d->k > INT_MAX) return false;
    Dims bd = {0};
    for (int i = 0; i < d->nbatch; i++) {
        if (d->batch[i] < 1) return false;
        if (d->batch[i] == 1) continue;
        bd.size[bd.n] = d->batch[i];
        bd.a[bd.n] = d->a_bs[i];
        bd.b[bd.n] = d->b_bs[i];
        bd.c[bd.n] = d->c_bs[i];
        bd.n++;
    }
    RtCudaGemmPlan keep = *p;
    if (try_plan(d, &bd, true, p)) return true;
    *p = keep;
    if (try_plan(d, &bd, false, p)) return true;
    memset(p, 0, sizeof *p);
    return false;
}
