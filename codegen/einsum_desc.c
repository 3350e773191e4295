/* einsum's description (einsum_desc.h). Every subscript (and each
 * ellipsis dim) is an iteration dim: output dims outer, summed ones inner,
 * each operand addressed by the sum of its strides on a subscript (a
 * repeated subscript walks a diagonal, a size-1 dim broadcasts with stride
 * 0). A two-operand contraction whose subscripts sort into batch / m / n /
 * k groups of at most one letter each (batch: any number) is a matrix
 * product with those strides; anything else is a generic contraction. */
#include "codegen/einsum_desc.h"

#include "ir/einsum_eq.h"

#include <stdio.h>
#include <string.h>

static bool parse(const Value *v, KEinsum *e, char *err, size_t nerr) {
    const Arg *ops = &v->args[1];
    if (ops->n > KEIN_MAXOPS) {
        snprintf(err, nerr, "einsum with more than %d operands", KEIN_MAXOPS);
        return false;
    }
    int ranks[KEIN_MAXOPS];
    for (int k = 0; k < ops->n; k++)
        ranks[k] = ops->ts[k]->ndim;
    EinsumEq eq;
    if (!einsum_eq_read(v->args[0].s, ops->n, ranks, &eq, err, nerr)) return false;
    int iter_of[KEIN_NCODES];
    int64_t size[KEIN_NCODES];
    for (int i = 0; i < KEIN_NCODES; i++)
        iter_of[i] = -1, size[i] = 1;
    e->nops = ops->n;
    for (int k = 0; k < ops->n; k++) {
        const Value *t = ops->ts[k];
        bool seen[KEIN_NCODES] = {0};
        for (int d = 0; d < t->ndim; d++) {
            int c = eq.code[k][d];
            if (seen[c]) e->repeated = true;
            seen[c] = true;
            if (iter_of[c] < 0 || size[c] == 1) size[c] = t->shape[d];
            iter_of[c] = 0;
            e->in_ops[c] |= 1u << k;
        }
    }
    for (int i = 0; i < eq.nout; i++) {
        iter_of[eq.out[i]] = e->n;
        e->code[e->n] = eq.out[i];
        e->shape[e->n++] = size[eq.out[i]];
    }
    e->no = eq.nout;
    for (int c = 0; c < KEIN_NCODES; c++)
        if (iter_of[c] == 0) {
            bool is_out = false;
            for (int i = 0; i < eq.nout; i++)
                is_out |= eq.out[i] == c;
            if (is_out) continue;
            iter_of[c] = e->n;
            e->code[e->n] = c;
            e->red[e->n] = true;
            e->shape[e->n++] = size[c];
        }
    for (int k = 0; k < ops->n; k++) {
        const Value *t = ops->ts[k];
        for (int d = 0; d < t->ndim; d++) {
            int c = eq.code[k][d];
            if (t->shape[d] != 1 || size[c] == 1) e->strides[k][iter_of[c]] += t->strides[d];
        }
    }
    return true;
}

/* The matrix-product form, when there is one. */
static bool as_matmul(const CgProgram *p, const Value *v, KEinsum *e) {
    MM *mm = &e->mm;
    if (e->nops != 2 || e->repeated) return false;
    memset(mm, 0, sizeof *mm);
    mm->dtype = kd_dt(p, v);
    mm->m = mm->n = mm->k = 1;
    int64_t cs[TG_MAX_DIMS];
    shape_contiguous_strides(v->shape, v->ndim, cs);
    int nm = 0, nn = 0, nk = 0;
    for (int i = 0; i < e->n; i++) {
        unsigned in = e->in_ops[e->code[i]];
        const int64_t *sa = e->strides[0], *sb = e->strides[1];
        if (i < e->no) {
            if (in == 3) {
                if (mm->nbatch >= MAXB) return false;
                mm->batch[mm->nbatch] = e->shape[i];
                mm->a_bs[mm->nbatch] = sa[i];
                mm->b_bs[mm->nbatch] = sb[i];
                mm->c_bs[mm->nbatch++] = cs[i];
            } else if (in == 1) {
                if (nm++) return false;
                mm->m = e->shape[i], mm->a_rs = sa[i], mm->c_rs = cs[i];
            } else {
                if (nn++) return false;
                mm->n = e->shape[i], mm->b_cs = sb[i], mm->c_cs = cs[i];
            }
        } else {
            if (in != 3 || nk++) return false; /* a letter summed in one operand only */
            mm->k = e->shape[i], mm->a_cs = sa[i], mm->b_rs = sb[i];
        }
    }
    return true;
}

/* The generic contraction: output dims outer, summed letters inner. */
static void contraction(const CgProgram *p, const Value *v, KEinsum *e) {
    const Arg *ops = &v->args[1];
    Access *acc[KEIN_MAXOPS + 1];
    int na = 0;
    for (int o = 0; o < e->nops; o++) {
        Access *a = &e->op[o];
        kd_access_of(p, ops->ts[o], a);
        memcpy(a->strides, e->strides[o], sizeof a->strides);
        acc[na++] = a;
    }
    Access *dst = &e->dst;
    memset(dst, 0, sizeof *dst);
    dst->owner = v;
    dst->dt = kd_dt(p, v);
    int64_t cs[TG_MAX_DIMS];
    shape_contiguous_strides(v->shape, v->ndim, cs);
    for (int i = 0; i < e->no; i++)
        dst->strides[i] = cs[i];
    acc[na++] = dst;
    kspace_build(&e->space, e->shape, e->n, e->red, acc, na, false);
    DType t = dst->dt;
    e->at = dtype_is_float(t) ? (t == DT_F64 ? DT_F64 : DT_F32) : DT_I64;
}

bool kd_einsum(const CgProgram *p, const Value *v, KEinsum *e, char *err, size_t nerr) {
    memset(e, 0, sizeof *e);
    if (!parse(v, e, err, nerr)) return false;
    /* Integer products stay in the generic kernel: rt_matmul's integer path
     * is a plain loop too, and PyTorch sums them in int64 the same way. */
    e->is_matmul = dtype_is_float(kd_dt(p, v)) && as_matmul(p, v, e);
    if (!e->is_matmul) contraction(p, v, e);
    return true;
}
