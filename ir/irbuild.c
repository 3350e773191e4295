/* Building IR from inside the compiler (see irbuild.h). */
#include "ir/irbuild.h"

#include <string.h>

IrB irb_init(InferCtx *c, SrcLoc loc) {
    return (IrB){.c = c, .loc = loc, .a = c->g->arena};
}

Value *irb_op(IrB *b, OpCode op, int n, Arg *args) {
    for (int i = 0; i < n; i++) {
        if (args[i].kind == ARG_TENSOR && !args[i].t) return NULL;
        if (args[i].kind == ARG_TENSORS)
            for (int k = 0; k < args[i].n; k++)
                if (!args[i].ts[k]) return NULL;
    }
    Value *v = value_make(b->c, op, b->loc, n, args);
    if (v) graph_append(b->c->g, v);
    return v;
}
Arg irb_t(IrB *b, Value *v) {
    return arg_tensor(v, b->loc);
}
Arg irb_i(IrB *b, int64_t i) {
    return arg_int(i, b->loc);
}
Arg irb_is(IrB *b, const int64_t *v, int n) {
    return arg_ints(b->a, v, n, b->loc);
}
Arg irb_num(IrB *b, double f) {
    return (Arg){.kind = ARG_NUM, .f = f, .loc = b->loc};
}
Arg irb_bool(IrB *b, bool x) {
    return (Arg){.kind = ARG_BOOL, .i = x, .loc = b->loc};
}
Arg irb_ts(IrB *b, Value *const *ts, int n) {
    Arg r = {.kind = ARG_TENSORS, .loc = b->loc, .n = n};
    r.ts = arena_dup(b->a, ts, sizeof(Value *) * (size_t)(n ? n : 1));
    return r;
}

Value *irb_scalar(IrB *b, double x) {
    Value *v = value_new(b->c->g, OP_SCALAR, b->loc);
    v->weak = true;
    v->dtype = DT_F32;
    v->scalar = x;
    graph_append(b->c->g, v);
    return v;
}
Value *irb_unary(IrB *b, OpCode op, Value *x) {
    Arg a[1] = {irb_t(b, x)};
    return irb_op(b, op, 1, a);
}
Value *irb_binary(IrB *b, OpCode op, Value *x, Value *y) {
    Arg a[2] = {irb_t(b, x), irb_t(b, y)};
    return irb_op(b, op, 2, a);
}
Value *irb_to(IrB *b, Value *x, DType t) {
    if (!x || x->dtype == t) return x;
    Arg a[2] = {irb_t(b, x), arg_dtype(t, b->loc)};
    return irb_op(b, OP_TO, 2, a);
}
Value *irb_reshape(IrB *b, Value *x, const int64_t *shape, int n) {
    Arg a[2] = {irb_t(b, x), irb_is(b, shape, n)};
    return irb_op(b, OP_RESHAPE, 2, a);
}
Value *irb_permute(IrB *b, Value *x, const int64_t *dims, int n) {
    Arg a[2] = {irb_t(b, x), irb_is(b, dims, n)};
    return irb_op(b, OP_PERMUTE, 2, a);
}
Value *irb_reduce(IrB *b, OpCode op, Value *x, const int64_t *dims, int n) {
    Arg a[2] = {irb_t(b, x), irb_is(b, dims, n)};
    return irb_op(b, op, 2, a);
}
Value *irb_reduce_keep(IrB *b, OpCode op, Value *x, const int64_t *dims, int n, bool keepdim) {
    Arg a[3] = {irb_t(b, x), irb_is(b, dims, n), irb_bool(b, keepdim)};
    return irb_op(b, op, 3, a);
}
Value *irb_slice(IrB *b, Value *x, int dim, int64_t start, int64_t end, int64_t step) {
    Arg a[5] = {irb_t(b, x), irb_i(b, dim), irb_i(b, start), irb_i(b, end), irb_i(b, step)};
    return irb_op(b, OP_SLICE, 5, a);
}
Value *irb_windows(IrB *b, Value *x, int dim, int64_t size, int64_t step) {
    Arg a[4] = {irb_t(b, x), irb_i(b, dim), irb_i(b, size), irb_i(b, step)};
    return irb_op(b, OP_WINDOWS, 4, a);
}
Value *irb_expand(IrB *b, Value *x, const int64_t *shape, int n) {
    Arg a[2] = {irb_t(b, x), irb_is(b, shape, n)};
    return irb_op(b, OP_EXPAND, 2, a);
}
Value *irb_transpose(IrB *b, Value *x, int d0, int d1) {
    Arg a[3] = {irb_t(b, x), irb_i(b, d0), irb_i(b, d1)};
    return irb_op(b, OP_TRANSPOSE, 3, a);
}
Value *irb_constant(IrB *b, const double *data, const int64_t *shape, int n, DType t) {
    Arg d = {.kind = ARG_ANY_LIST, .loc = b->loc, .data_ndim = n, .data_has_float = true};
    int64_t count = shape_numel(shape, n);
    d.data = arena_dup(b->a, data, sizeof(double) * (size_t)(count ? count : 1));
    d.n = (int)count;
    for (int i = 0; i < n; i++)
        d.data_shape[i] = shape[i];
    Arg a[2] = {d, arg_dtype(t, b->loc)};
    return irb_op(b, OP_TENSOR, 2, a);
}
Value *irb_full(IrB *b, const int64_t *shape, int n, double value, DType t) {
    Arg a[3] = {irb_is(b, shape, n), irb_num(b, value), arg_dtype(t, b->loc)};
    return irb_op(b, OP_FULL, 3, a);
}
Value *irb_index_select(IrB *b, Value *x, int dim, const int64_t *idx, int64_t n) {
    if (!x) return NULL;
    double *d = ARENA_ARRAY(b->a, double, n ? n : 1);
    for (int64_t i = 0; i < n; i++)
        d[i] = (double)idx[i];
    Value *t = irb_constant(b, d, &n, 1, DT_I64);
    Arg a[3] = {irb_t(b, x), irb_i(b, dim), irb_t(b, t)};
    return irb_op(b, OP_INDEX_SELECT, 3, a);
}
Value *irb_cat(IrB *b, Value *const *ts, int n, int dim) {
    Arg a[2] = {irb_ts(b, ts, n), irb_i(b, dim)};
    return irb_op(b, OP_CAT, 2, a);
}
Value *irb_pad_constant(IrB *b, Value *x, int dim, int64_t left, int64_t right, double value) {
    if (!x) return NULL;
    if (left < 0 || right < 0) {
        x = irb_slice(b, x, dim, left < 0 ? -left : 0, x->shape[dim] + (right < 0 ? right : 0), 1);
        if (!x) return NULL;
        left = left > 0 ? left : 0, right = right > 0 ? right : 0;
    }
    if (!left && !right) return x;
    Value *parts[3];
    int n = 0;
    for (int side = 0; side < 3; side++) {
        int64_t w = side == 0 ? left : side == 2 ? right : 0;
        if (side == 1) {
            parts[n++] = x;
            continue;
        }
        if (!w) continue;
        int64_t shape[TG_MAX_DIMS];
        memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        shape[dim] = w;
        if (!(parts[n++] = irb_full(b, shape, x->ndim, value, x->dtype))) return NULL;
    }
    return irb_cat(b, parts, n, dim);
}
