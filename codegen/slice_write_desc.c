/* slice_scatter nodes as the runtime's RtSliceWriteDesc
 * (runtime/slice_write.c): shapes, element strides and the start, the
 * same for both backends. */
#include <stdio.h>
#include <string.h>

#include "codegen/codegen.h"
#include "ir/state.h"

static const char *name_of(const Value *v, char *buf, size_t n) {
    if (v->name)
        snprintf(buf, n, "'%s'", v->name);
    else
        snprintf(buf, n, "the %s result (line %d)", op_display_name(v), v->loc.line);
    return buf;
}

bool cg_slice_write_describe(const CgProgram *p, const Value *v, RtSliceWriteDesc *d, char *what,
                             size_t nwhat) {
    const Value *x = v->args[0].t, *src = v->args[1].t;
    const Arg *s = &v->args[3];
    DType dt = p->dt[v->storage->order];
    if (p->dt[src->storage->order] != dt || p->dt[x->storage->order] != dt) {
        snprintf(what, nwhat,
                 "slice_scatter at line %d: its operands are stored in different "
                 "dtypes",
                 v->loc.line);
        return false;
    }
    TGC_ASSERT(v->ndim >= 1 && v->ndim <= RT_SLICE_WRITE_MAX_DIMS);
    memset(d, 0, sizeof *d);
    d->elem_bytes = (int64_t)dtype_size(dt);
    d->ndim = v->ndim;
    d->dim = v->args[2].i;
    d->start = s->kind == ARG_INT ? s->i : 0;
    d->step = v->args[5].i;
    d->len = src->shape[d->dim];
    d->start_dtype = s->kind == ARG_TENSOR ? (int64_t)p->dt[s->t->storage->order] : RT_I64;
    for (int i = 0; i < v->ndim; i++) {
        d->shape[i] = v->shape[i];
        d->dst_st[i] = v->strides[i];
        d->in_st[i] = x->strides[i];
        d->src_st[i] = src->strides[i];
    }
    /* "@;;TEXT": a 0-d start, so no position. */
    char xname[160], sname[160];
    int64_t size = v->shape[d->dim];
    snprintf(what, nwhat,
             "@;;start {value} of %s (slice_scatter, line %d) is out of range for a slice of "
             "length %lld along dimension %lld of %s (size %lld): expected 0 to %lld",
             s->kind == ARG_TENSOR ? name_of(s->t, sname, sizeof sname) : "the slice", v->loc.line,
             (long long)d->len, (long long)d->dim, name_of(x, xname, sizeof xname), (long long)size,
             (long long)(size - d->len));
    return true;
}
