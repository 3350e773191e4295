/* The backend-neutral kernel description (kernel_desc.h): access
 * patterns, the merged iteration space, reductions' layouts and matrix
 * product descriptors. */
#include "codegen/kernel_desc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

double kd_num_arg(const Value *v, int i, double dflt) {
    const Arg *a = &v->args[i];
    if (a->kind == ARG_NUM) return a->f;
    if (a->kind == ARG_INT || a->kind == ARG_BOOL) return (double)a->i;
    return dflt;
}

void kd_fail(bool *fail, char *err, size_t n, const char *fmt, ...) {
    if (*fail) return;
    *fail = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
}

DType kd_dt(const CgProgram *p, const Value *v) {
    return p->dt[v->order];
}

bool kd_unsigned(DType t) {
    return dtype_is_unsigned(t) || t == DT_BOOL;
}

bool kd_is_inlined(const CgProgram *p, const Value *v) {
    return v->storage == v && p->kp->inlined[v->order];
}

int64_t kd_buffer(const CgProgram *p, const Value *owner, int *slot) {
    *slot = p->iface.slot[owner->order];
    if (*slot >= 0) return 0;
    *slot = 0;
    int bi = p->sched->buf_of[owner->order];
    if (bi < 0 || p->plan->offset[bi] < 0) return -1;
    return p->plan->offset[bi];
}

void kd_access_of(const CgProgram *p, const Value *v, Access *a) {
    memset(a, 0, sizeof *a);
    a->owner = v->storage;
    a->dt = kd_dt(p, v->storage);
    a->offset = v->offset;
    for (int d = 0; d < v->ndim; d++)
        a->strides[d] = v->strides[d];
}

void kd_access_right_aligned(const CgProgram *p, const Value *v, int n, Access *a) {
    kd_access_of(p, v, a);
    memset(a->strides, 0, sizeof a->strides);
    int pad = n - v->ndim;
    for (int d = 0; d < v->ndim; d++)
        a->strides[pad + d] = v->shape[d] == 1 ? 0 : v->strides[d];
}

void kd_access_contig(const CgProgram *p, const Value *owner, const int64_t *shape, int n,
                      Access *a) {
    memset(a, 0, sizeof *a);
    a->owner = owner;
    a->dt = kd_dt(p, owner);
    int64_t s = 1;
    for (int d = n - 1; d >= 0; d--) {
        a->strides[d] = s;
        s *= shape[d] > 0 ? shape[d] : 1;
    }
}

bool kd_uses_index(const Value *v) {
    switch (v->op) {
    case OP_ARANGE:
    case OP_EYE:
    case OP_TENSOR:
    case OP_TRIL:
    case OP_TRIU:
    case OP_DROPOUT_APPLY: return true;
    default: return false;
    }
}

int kd_collect_leaves(const CgProgram *p, const Value *v, const Value *ov, Access *out, int max,
                      bool *uses_index) {
    int n = 0;
    if (kd_uses_index(v)) *uses_index = true;
    if (op_info(v->op)->flags & OPF_CREATION) return 0;
    for (int i = 0; i < v->nin; i++) {
        const Value *u = v->in[i];
        if (u->storage->op == OP_SCALAR || u == ov) continue;
        if (kd_is_inlined(p, u)) {
            n += kd_collect_leaves(p, u, ov, out + n, max - n, uses_index);
            continue;
        }
        if (n < max) kd_access_of(p, u, &out[n++]);
    }
    return n;
}

int kd_store_accesses(const CgProgram *p, const Value *src, bool compute, const Value *ov,
                      Access *ov_access, Access *dst, Access leaves[KD_STORE_LEAVES],
                      Access *acc[KD_STORE_LEAVES + 2], bool *uses_index) {
    int nl = 0;
    *uses_index = false;
    if (compute)
        nl = kd_collect_leaves(p, src, ov, leaves, KD_STORE_LEAVES, uses_index);
    else if (src != ov)
        kd_access_of(p, src, &leaves[nl++]);
    int na = 0;
    for (int i = 0; i < nl; i++)
        acc[na++] = &leaves[i];
    acc[na++] = dst;
    if (ov) acc[na++] = ov_access;
    return na;
}

void kspace_build(KSpace *k, const int64_t *shape, int n, const bool *reduced, Access **acc,
                  int nacc, bool uses_index) {
    memset(k, 0, sizeof *k);
    k->n = n;
    for (int d = 0; d < n; d++) {
        k->shape[d] = shape[d];
        k->reduced[d] = reduced ? reduced[d] : false;
        k->loop_of_dim[d] = -1;
    }
    /* Groups of adjacent dims of the same class that every access walks as
     * one: stride[d] == stride[d + 1] * shape[d + 1]. Size-1 dims vanish
     * (their index is always 0) unless an expression reads indices. */
    int groups[2][KMAXD][2], ng[2] = {0, 0};
    for (int cls = 0; cls < 2; cls++) {
        int last = -1;
        for (int d = 0; d < n; d++) {
            if (k->reduced[d] != (cls == 1)) continue;
            if (shape[d] == 1 && !uses_index) continue;
            bool merge = last >= 0 && !uses_index;
            for (int i = 0; merge && i < nacc; i++)
                merge = acc[i]->strides[last] == acc[i]->strides[d] * shape[d];
            /* Merging across a skipped size-1 dim: only adjacent ones. */
            if (merge && last != d - 1) {
                for (int j = last + 1; j < d; j++)
                    if (shape[j] != 1) merge = false;
            }
            if (merge) {
                groups[cls][ng[cls] - 1][1] = d;
            } else {
                groups[cls][ng[cls]][0] = groups[cls][ng[cls]][1] = d;
                ng[cls]++;
            }
            last = d;
        }
    }
    k->nloops = 0;
    k->coalesced = false;
    for (int cls = 0; cls < 2; cls++) {
        if (cls == 1) k->nkept = k->nloops;
        for (int gi = 0; gi < ng[cls]; gi++) {
            int a = groups[cls][gi][0], b = groups[cls][gi][1];
            int64_t e = 1;
            for (int d = a; d <= b; d++)
                e *= shape[d];
            if (b > a) k->coalesced = true;
            k->ext[k->nloops] = e;
            k->inner_dim[k->nloops] = b;
            for (int d = a; d <= b; d++)
                k->loop_of_dim[d] = k->nloops;
            k->nloops++;
        }
    }
    /* The first loop is what the CPU pool splits: a kernel with no kept
     * dim gets a loop of one iteration. */
    if (k->nkept == 0) {
        memmove(&k->ext[1], &k->ext[0], sizeof(int64_t) * (size_t)k->nloops);
        memmove(&k->inner_dim[1], &k->inner_dim[0], sizeof(int) * (size_t)k->nloops);
        for (int d = 0; d < n; d++)
            if (k->loop_of_dim[d] >= 0) k->loop_of_dim[d]++;
        k->ext[0] = 1;
        k->inner_dim[0] = -1;
        k->nloops++;
        k->nkept = 1;
    }
}

/* Reorders the kept loops of a space (the outer nkept; reduced loops stay
 * inside, in their order) by dst's strides, the largest outermost: a
 * channels-last store (passes/layout.c) then walks C innermost, contiguous
 * for it and for its channels-last operands (and a per-channel operand of
 * a batch norm), where the logical order would walk W with a stride of C.
 * A reduction over windows of a channels-last map (max_pool2d) then has C
 * as its innermost kept loop, which k_reduce_cols vectorises. Each loop
 * keeps its dim (inner_dim), so every access still addresses the same
 * elements. */
void kspace_order_by(KSpace *sp, const Access *dst) {
    int n = sp->nkept;
    for (int l = 0; l < n; l++)
        if (sp->inner_dim[l] < 0 || sp->reduced[sp->inner_dim[l]]) return;
    int order[KMAXD];
    for (int l = 0; l < n; l++) {
        int64_t s = dst->strides[sp->inner_dim[l]];
        int j = l;
        for (; j > 0 && dst->strides[sp->inner_dim[order[j - 1]]] < s; j--) /* stable */
            order[j] = order[j - 1];
        order[j] = l;
    }
    KSpace old = *sp;
    for (int j = 0; j < n; j++) {
        sp->ext[j] = old.ext[order[j]];
        sp->inner_dim[j] = old.inner_dim[order[j]];
    }
    for (int d = 0; d < sp->n; d++)
        for (int j = 0; j < n; j++)
            if (old.loop_of_dim[d] == order[j]) sp->loop_of_dim[d] = j;
}

int64_t kspace_work_inner(const KSpace *s) {
    int64_t w = 1;
    for (int l = 1; l < s->nloops; l++)
        w *= s->ext[l];
    return w;
}

/* ---- reductions ---- */

static int wrap_dim(int64_t d, int n) {
    return (int)(d < 0 ? d + n : d);
}

void kd_reduced_dims(const Value *v, const Value *x, bool *red) {
    memset(red, 0, sizeof(bool) * KMAXD);
    int n = x->ndim;
    switch (v->op) {
    case OP_SOFTMAX:
    case OP_LOG_SOFTMAX:
        if (n) red[wrap_dim(v->args[1].i, n)] = true;
        return;
    case OP_LAYER_NORM:
        for (int i = 0; i < v->args[1].n; i++)
            red[n - 1 - i] = true;
        return;
    case OP_RMS_NORM:
        if (n) red[n - 1] = true;
        return;
    default: break;
    }
    const Arg *d = &v->args[1];
    if (d->kind == ARG_INT) {
        if (n) red[wrap_dim(d->i, n)] = true;
    } else if (d->kind == ARG_INTS && d->n > 0) {
        for (int i = 0; i < d->n; i++)
            if (n) red[wrap_dim(d->ints[i], n)] = true;
    } else {
        for (int i = 0; i < n; i++)
            red[i] = true;
    }
}

void kd_reduction(const CgProgram *p, const Value *v, bool same_shape_out, KReduce *r) {
    memset(r, 0, sizeof *r);
    r->v = v;
    r->x = v->in[0];
    const Value *x = r->x;
    r->xt = kd_dt(p, x);
    bool red[KMAXD];
    kd_reduced_dims(v, x, red);
    /* The output, addressed over x's dims. */
    r->dst.owner = v;
    r->dst.dt = kd_dt(p, v);
    int64_t cs[TG_MAX_DIMS];
    shape_contiguous_strides(v->shape, v->ndim, cs);
    /* An owner is dense, channels-last where passes/layout.c made it so. */
    if (!layout_is_contiguous(v)) memcpy(cs, v->strides, sizeof cs);
    if (same_shape_out) {
        for (int d = 0; d < x->ndim; d++)
            r->dst.strides[d] = cs[d];
    } else {
        bool keep = v->ndim == x->ndim;
        for (int d = 0, o = 0; d < x->ndim; d++) {
            if (red[d]) {
                if (keep) o++;
                continue;
            }
            r->dst.strides[d] = cs[o++];
        }
    }
    r->count = 1;
    int64_t s = 1;
    for (int d = x->ndim - 1; d >= 0; d--)
        if (red[d]) {
            r->lin.strides[d] = s;
            s *= x->shape[d];
            r->count *= x->shape[d];
        }
    /* Weight and bias of layer_norm (args 2, 3) and rms_norm's weight (arg
     * 1), aligned to x's last dims. */
    const Value *aux[2] = {NULL, NULL};
    if (v->op == OP_LAYER_NORM) {
        for (int i = 2; i <= 3 && i < v->nargs; i++)
            if (v->args[i].kind == ARG_TENSOR) {
                r->aux_is_bias[r->naux] = i == 3;
                aux[r->naux++] = v->args[i].t;
            }
    } else if (v->op == OP_RMS_NORM && v->args[1].kind == ARG_TENSOR) {
        aux[r->naux++] = v->args[1].t;
    }
    for (int i = 0; i < r->naux; i++)
        kd_access_right_aligned(p, aux[i], x->ndim, &r->aux[i]);
    Access leaves[64];
    Access *acc[72];
    int na = 0, nl = 0;
    bool uses_index = false;
    if (kd_is_inlined(p, x))
        nl = kd_collect_leaves(p, x, NULL, leaves, 64, &uses_index);
    else if (x->storage->op != OP_SCALAR)
        kd_access_of(p, x, &leaves[nl++]);
    for (int i = 0; i < nl; i++)
        acc[na++] = &leaves[i];
    acc[na++] = &r->dst;
    acc[na++] = &r->lin;
    for (int i = 0; i < r->naux; i++)
        acc[na++] = &r->aux[i];
    kspace_build(&r->space, x->shape, x->ndim, red, acc, na, uses_index);
    /* A channels-last output (passes/layout.c): walk its kept dims in
     * memory order, as elementwise stores do. */
    if (!layout_is_contiguous(v)) kspace_order_by(&r->space, &r->dst);
}

static int64_t abs64(int64_t x) {
    return x < 0 ? -x : x;
}

bool kd_reduction_by_columns(const CgProgram *p, const KReduce *r) {
    const KSpace *s = &r->space;
    int col = s->nkept - 1;
    if (s->nloops <= s->nkept || s->inner_dim[col] < 0) return false; /* no kept dim */
    for (int l = 0; l < s->nloops; l++)
        if (s->ext[l] <= 0) return false; /* empty: nothing to gain */
    Access leaves[64];
    int nl = 0;
    bool uses_index = false;
    if (kd_is_inlined(p, r->x))
        nl = kd_collect_leaves(p, r->x, NULL, leaves, 64, &uses_index);
    else if (r->x->storage->op != OP_SCALAR)
        kd_access_of(p, r->x, &leaves[nl++]);
    int votes = 0;
    for (int i = 0; i < nl; i++) {
        int64_t kept = abs64(leaves[i].strides[s->inner_dim[col]]), red = 0;
        for (int l = s->nkept; l < s->nloops; l++) {
            int64_t st = abs64(leaves[i].strides[s->inner_dim[l]]);
            if (st && (!red || st < red)) red = st;
        }
        if (!red) continue;
        votes += kept && kept < red ? 1 : -1;
    }
    return votes > 0;
}

/* ---- copies over another layout ---- */

static void copy_init(KCopy *c, const Value *src, const char *what, const int64_t *shape, int n) {
    memset(c, 0, sizeof *c);
    c->src = src;
    c->what = what;
    c->n = n;
    for (int d = 0; d < n; d++)
        c->shape[d] = shape[d];
}

void kd_output_copy(const CgProgram *p, const Value *o, int out_index, KCopy *c) {
    copy_init(c, o, "output", o->shape, o->ndim);
    kd_access_contig(p, o, o->shape, o->ndim, &c->dst);
    c->dst.slot = 1 + p->iface.ninputs + p->iface.nparams + out_index;
    c->dst.dt = kd_dt(p, o);
}

void kd_reshape_copy(const CgProgram *p, const Value *v, KCopy *c) {
    /* Row-major order is the same on both sides: walk the input's shape,
     * write the output as if it had that shape. */
    const Value *x = v->in[0];
    copy_init(c, x, "reshape", x->shape, x->ndim);
    kd_access_contig(p, v, x->shape, x->ndim, &c->dst);
}

int kd_cat(const CgProgram *p, const Value *v, KCopy *parts) {
    const Arg *ts = &v->args[0];
    bool stack = v->op == OP_STACK;
    int d = wrap_dim(v->args[1].kind == ARG_INT ? v->args[1].i : 0, v->ndim);
    int64_t cs[TG_MAX_DIMS];
    shape_contiguous_strides(v->shape, v->ndim, cs);
    if (!layout_is_contiguous(v)) memcpy(cs, v->strides, sizeof cs); /* passes/layout.c */
    int64_t at = 0;
    int np = 0;
    for (int i = 0; i < ts->n; i++) {
        const Value *x = ts->ts[i];
        int64_t start = at;
        at += stack ? 1 : (x->ndim ? x->shape[d] : 0);
        /* cat skips empty 1-d tensors, as torch does (legacy behaviour). */
        if (value_numel(x) == 0) continue;
        KCopy *c = &parts[np++];
        copy_init(c, x, stack ? "stack" : "cat", x->shape, x->ndim);
        c->dst.owner = v;
        c->dst.dt = kd_dt(p, v);
        for (int j = 0, o = 0; j < v->ndim; j++) {
            if (stack && j == d) continue;
            c->dst.strides[o++] = cs[j];
        }
        c->dst.offset = start * cs[d];
    }
    return np;
}

void kd_repeat(const CgProgram *p, const Value *v, KCopy *c) {
    const Value *x = v->in[0];
    int m = v->ndim, pad = m - x->ndim;
    int64_t cs[TG_MAX_DIMS];
    shape_contiguous_strides(v->shape, v->ndim, cs);
    copy_init(c, x, "repeat", NULL, 0);
    c->n = 2 * m;
    c->through_src = true;
    kd_access_of(p, x, &c->src_access); /* strides set below, per split dim */
    c->dst.owner = v;
    c->dst.dt = kd_dt(p, v);
    for (int d = 0; d < m; d++) {
        int64_t s = d >= pad ? x->shape[d - pad] : 1;
        int64_t r = s ? v->shape[d] / s : 0;
        c->shape[2 * d] = r;
        c->shape[2 * d + 1] = s;
        c->dst.strides[2 * d] = s * cs[d];
        c->dst.strides[2 * d + 1] = cs[d];
        c->src_access.strides[2 * d] = 0;
        c->src_access.strides[2 * d + 1] = d >= pad ? x->strides[d - pad] : 0;
    }
}

void kd_flip(const CgProgram *p, const Value *v, KCopy *c) {
    const Value *x = v->in[0];
    copy_init(c, x, "flip", x->shape, x->ndim);
    c->through_src = true;
    kd_access_of(p, x, &c->src_access);
    const Arg *dims = &v->args[1];
    for (int i = 0; i < dims->n; i++) {
        int d = wrap_dim(dims->ints[i], x->ndim);
        if (d < 0 || d >= x->ndim) continue;
        c->src_access.offset += (x->shape[d] - 1) * x->strides[d];
        c->src_access.strides[d] = -x->strides[d];
    }
    kd_access_contig(p, v, v->shape, v->ndim, &c->dst);
}

void kd_broadcast_into(const CgProgram *p, const Value *src, const Value *dst_v, KCopy *c) {
    copy_init(c, src, "bias", dst_v->shape, dst_v->ndim);
    c->through_src = true;
    kd_access_right_aligned(p, src, dst_v->ndim, &c->src_access);
    kd_access_contig(p, dst_v, dst_v->shape, dst_v->ndim, &c->dst);
}

/* ---- indexed reads ---- */

void kd_gather(const CgProgram *p, const Value *v, KGather *g) {
    memset(g, 0, sizeof *g);
    const Value *x, *idx;
    int dim;
    Access xa, ia;
    memset(&xa, 0, sizeof xa);
    memset(&ia, 0, sizeof ia);
    int n = v->ndim;
    bool wrap = false;
    switch (v->op) {
    case OP_EMBEDDING:
        idx = v->in[0], x = v->in[1], dim = 0;
        for (int d = 0; d < idx->ndim; d++)
            ia.strides[d] = idx->strides[d];
        xa.strides[n - 1] = x->strides[1];
        break;
    case OP_GATHER:
        x = v->in[0], idx = v->in[1];
        dim = (int)(v->args[1].i < 0 ? v->args[1].i + x->ndim : v->args[1].i);
        for (int d = 0; d < n; d++) {
            ia.strides[d] = idx->strides[d];
            xa.strides[d] = d == dim ? 0 : x->strides[d];
        }
        break;
    case OP_INDEX_SELECT:
        x = v->in[0], idx = v->in[1];
        dim = (int)(v->args[1].i < 0 ? v->args[1].i + x->ndim : v->args[1].i);
        for (int d = 0; d < n; d++) {
            xa.strides[d] = d == dim ? 0 : x->strides[d];
            ia.strides[d] = d == dim && idx->ndim ? idx->strides[0] : 0;
        }
        break;
    default: /* OP_INDEX: x[idx] along dim, negative indices counting from the end */
        x = v->in[0], idx = v->in[1];
        dim = (int)(v->args[1].i < 0 ? v->args[1].i + x->ndim : v->args[1].i);
        wrap = true;
        for (int d = 0; d < dim; d++)
            xa.strides[d] = x->strides[d];
        for (int d = 0; d < idx->ndim; d++)
            ia.strides[dim + d] = idx->strides[d];
        for (int d = dim + 1; d < x->ndim; d++)
            xa.strides[d - 1 + idx->ndim] = x->strides[d];
        break;
    }
    xa.owner = x->storage;
    xa.dt = kd_dt(p, x->storage);
    xa.offset = x->offset;
    ia.owner = idx->storage;
    ia.dt = kd_dt(p, idx->storage);
    ia.offset = idx->offset;
    g->x = x, g->idx = idx, g->xa = xa, g->ia = ia, g->wrap = wrap;
    /* An index_select the layout pass made channels-last (a pad or an
     * interpolate between convolutions) stores by its strides, in their
     * memory order. */
    bool dense = layout_is_contiguous(v);
    if (dense)
        kd_access_contig(p, v, v->shape, n, &g->dst);
    else
        kd_access_of(p, v, &g->dst);
    Access *acc[3] = {&g->xa, &g->ia, &g->dst};
    kspace_build(&g->space, v->shape, n, NULL, acc, 3, false);
    if (!dense) kspace_order_by(&g->space, &g->dst);
    g->size = x->ndim ? x->shape[dim] : 1;
    g->dim_stride = x->ndim ? (v->op == OP_EMBEDDING ? x->strides[0] : x->strides[dim]) : 0;
    /* "@SHAPE;STRIDES;index {value} at position {pos} of 'ids' (embedding, line 4)
     * is out of range for dimension 0 of 'wte.weight' (size 5): expected 0 to 4" */
    size_t at = (size_t)snprintf(g->what, sizeof g->what, "@");
    for (int pass = 0; pass < 2; pass++) {
        for (int d = 0; d < idx->ndim && at < sizeof g->what; d++)
            at += (size_t)snprintf(g->what + at, sizeof g->what - at, "%s%lld", d ? "," : "",
                                   (long long)(pass ? idx->strides[d] : idx->shape[d]));
        if (at < sizeof g->what) at += (size_t)snprintf(g->what + at, sizeof g->what - at, ";");
    }
    int xdim = v->op == OP_EMBEDDING ? 0 : dim;
    char xname[160];
    if (x->name)
        snprintf(xname, sizeof xname, "'%s'", x->name);
    else
        snprintf(xname, sizeof xname, "the %s result (line %d)", op_display_name(x), x->loc.line);
    char iname[160];
    if (idx->name)
        snprintf(iname, sizeof iname, "'%s'", idx->name);
    else if (idx->is_view && idx->storage && idx->storage->name)
        snprintf(iname, sizeof iname, "a %s view of '%s'", op_display_name(idx),
                 idx->storage->name);
    else
        snprintf(iname, sizeof iname, "the %s result (line %d)", op_display_name(idx),
                 idx->loc.line);
    if (at < sizeof g->what)
        snprintf(g->what + at, sizeof g->what - at,
                 "index {value}%s of %s (%s, line %d) is out of range for dimension %d of %s "
                 "(size %lld): expected %lld to %lld",
                 idx->ndim ? " at position {pos}" : "", iname, op_display_name(v), v->loc.line,
                 xdim, xname, (long long)g->size, wrap ? -(long long)g->size : 0LL,
                 (long long)g->size - 1);
}

/* ---- matrix products ---- */

/* Batch dims of operand t (its leading ndim - nmat dims), right-aligned
 * against nb output batch dims: stride, or 0 where it broadcasts. */
static void batch_strides(const Value *t, int nmat, int nb, int64_t *out) {
    int tb = t->ndim - nmat;
    for (int j = 0; j < nb; j++) {
        int d = j - (nb - tb);
        out[j] = d >= 0 && t->shape[d] != 1 ? t->strides[d] : 0;
    }
}

/* The rows of x [..., k] in a product with a 2-D weight, whose output has
 * contiguous strides cs: the innermost leading dims that are evenly
 * strided fold into the row count (returned), the others are batch dims
 * (at most TG_MAX_DIMS - 2, within MAXB). Dims of size 1 are skipped: their
 * strides are arbitrary (a transpose(0, 1) of [1, s, d] gives [s, 1, d]
 * with strides (d, s * d, 1), whose s rows must stay one product, not s
 * products of one row that each pack the whole weight). Sets the row
 * stride, the batch sizes and x's and the output's batch strides. */
_Static_assert(TG_MAX_DIMS - 2 <= MAXB, "lead_rows' batch dims fit the descriptors");
int64_t kd_lead_rows(const Value *x, const int64_t *cs, int64_t *rs, int64_t *nbatch,
                     int64_t *batch, int64_t *x_bs, int64_t *y_bs) {
    int lead = x->ndim - 1, dims[TG_MAX_DIMS], nd = 0;
    for (int d = 0; d < lead; d++)
        if (x->shape[d] != 1) dims[nd++] = d;
    if (nd == 0) {
        *rs = lead ? x->strides[lead - 1] : 0;
        return 1;
    }
    int first = nd - 1; /* the outermost dim folded into the rows */
    while (first > 0 &&
           x->strides[dims[first - 1]] == x->strides[dims[first]] * x->shape[dims[first]])
        first--;
    int64_t m = 1;
    for (int i = first; i < nd; i++)
        m *= x->shape[dims[i]];
    *rs = x->strides[dims[nd - 1]];
    for (int j = 0; j < first; j++) {
        batch[j] = x->shape[dims[j]];
        x_bs[j] = x->strides[dims[j]];
        y_bs[j] = cs[dims[j]];
    }
    *nbatch = first;
    return m;
}

void kd_qmatmul(const CgProgram *p, const Value *v, QMM *d, const Value **bias) {
    const Value *x = v->in[0];
    const QuantOf *qo = v->args[1].t->quant;
    memset(d, 0, sizeof *d);
    d->x_dtype = kd_dt(p, x);
    d->y_dtype = kd_dt(p, v);
    d->n = qo->n, d->k = qo->k;
    d->bits = qo->bits, d->group = qo->group;
    d->x_cs = x->strides[x->ndim - 1];
    d->y_cs = 1;
    int64_t cs[TG_MAX_DIMS];
    shape_contiguous_strides(v->shape, v->ndim, cs);
    d->m = kd_lead_rows(x, cs, &d->x_rs, &d->nbatch, d->batch, d->x_bs, d->y_bs);
    d->y_rs = d->n;
    *bias = v->nargs > 3 && v->args[3].kind == ARG_TENSOR ? v->args[3].t : NULL;
    d->accumulate = *bias != NULL;
}

bool kd_matmul(const CgProgram *p, const Value *v, MM *mm, const Value **bias, char *err,
               size_t nerr) {
    const Value *a = v->in[0], *b = v->in[1];
    memset(mm, 0, sizeof *mm);
    *bias = NULL;
    mm->dtype = kd_dt(p, v);
    int64_t cs[TG_MAX_DIMS];
    shape_contiguous_strides(v->shape, v->ndim, cs);
    int amat = a->ndim >= 2 ? 2 : a->ndim, bmat = b->ndim >= 2 ? 2 : b->ndim;
    if (v->op == OP_OUTER) {
        mm->m = a->shape[0], mm->n = b->shape[0], mm->k = 1;
        mm->a_rs = a->strides[0], mm->b_cs = b->strides[0];
        mm->c_rs = cs[0], mm->c_cs = 1;
    } else if (v->op == OP_LINEAR) {
        /* x [..., k] @ W[n, k]^T: W's strides swapped, no copy. Leading dims
         * of x fold into m when they are evenly strided. */
        const Value *w = b;
        if (v->nargs > 2 && v->args[2].kind == ARG_TENSOR) *bias = v->args[2].t;
        mm->k = a->shape[a->ndim - 1];
        mm->a_cs = a->strides[a->ndim - 1];
        mm->n = w->ndim == 2 ? w->shape[0] : 1;
        mm->b_rs = w->strides[w->ndim - 1];
        mm->b_cs = w->ndim == 2 ? w->strides[0] : 0;
        mm->c_cs = w->ndim == 2 ? 1 : 0;
        mm->m = kd_lead_rows(a, cs, &mm->a_rs, &mm->nbatch, mm->batch, mm->a_bs, mm->c_bs);
        mm->c_rs = mm->n;
    } else {
        /* matmul / mm / bmm / mv: torch.matmul's rules. */
        int omat = (a->ndim >= 2) + (b->ndim >= 2);
        int nb = v->ndim - omat;
        if (a->ndim >= 2) {
            mm->m = a->shape[a->ndim - 2], mm->k = a->shape[a->ndim - 1];
            mm->a_rs = a->strides[a->ndim - 2], mm->a_cs = a->strides[a->ndim - 1];
        } else {
            mm->m = 1, mm->k = a->shape[0], mm->a_cs = a->strides[0];
        }
        if (b->ndim >= 2) {
            mm->n = b->shape[b->ndim - 1];
            mm->b_rs = b->strides[b->ndim - 2], mm->b_cs = b->strides[b->ndim - 1];
        } else {
            mm->n = 1, mm->b_rs = b->strides[0];
        }
        /* C: [..., m, n], [..., m] or [..., n] */
        if (a->ndim >= 2 && b->ndim >= 2)
            mm->c_rs = cs[v->ndim - 2], mm->c_cs = 1;
        else if (a->ndim >= 2)
            mm->c_rs = 1, mm->c_cs = 0;
        else
            mm->c_rs = 0, mm->c_cs = b->ndim >= 2 ? 1 : 0;
        if (nb > MAXB) {
            snprintf(err, nerr, "matmul with more than %d batch dimensions", MAXB);
            return false;
        }
        mm->nbatch = nb;
        batch_strides(a, amat, nb, mm->a_bs);
        batch_strides(b, bmat, nb, mm->b_bs);
        for (int j = 0; j < nb; j++) {
            mm->batch[j] = v->shape[j];
            mm->c_bs[j] = cs[j];
        }
    }
    if (*bias) mm->accumulate = 1;
    return true;
}
