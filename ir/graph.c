/* Graph and value construction, and the shape helpers every stage uses. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir/infer.h"

Graph *graph_new(Arena *a) {
    ops_init();
    Graph *g = ARENA_NEW(a, Graph);
    g->arena = a;
    return g;
}

void graph_append(Graph *g, Value *v) {
    v->order = g->nvalues;
    ARENA_PUSH(g->arena, g->values, g->nvalues, g->cap_values, v);
}

void graph_insert(Graph *g, Value *v, int at) {
    graph_append(g, v); /* grows the list by one */
    memmove(&g->values[at + 1], &g->values[at], sizeof *g->values * (size_t)(g->nvalues - 1 - at));
    g->values[at] = v;
    for (int i = at; i < g->nvalues; i++)
        g->values[i]->order = i;
}

Value *value_new(Graph *g, OpCode op, SrcLoc loc) {
    Value *v = ARENA_NEW(g->arena, Value);
    v->id = g->next_id++;
    v->op = op;
    v->loc = loc;
    v->dtype = DT_NONE;
    v->storage = v;
    return v;
}

void value_collect_inputs(Graph *g, Value *v) {
    int cap = 0;
    v->nin = 0;
    v->in = NULL;
    for (int i = 0; i < v->nargs; i++) {
        Arg *a = &v->args[i];
        if (a->kind == ARG_TENSOR) ARENA_PUSH(g->arena, v->in, v->nin, cap, a->t);
        if (a->kind == ARG_TENSORS)
            for (int k = 0; k < a->n; k++)
                ARENA_PUSH(g->arena, v->in, v->nin, cap, a->ts[k]);
    }
}

bool shape_too_large(const int64_t *shape, int ndim) {
    /* Counting size-0 dims as 1 bounds the strides too, not just the numel. */
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        if (__builtin_mul_overflow(n, shape[i] > 1 ? shape[i] : 1, &n) || n > TG_MAX_NUMEL)
            return true;
    return false;
}

bool value_infer(InferCtx *c, Value *v) {
    value_collect_inputs(c->g, v);
    const OpInfo *info = op_info(v->op);
    if (!info->infer) return true;
    if (!info->infer(c, v)) return false;
    /* Every later stage computes strides and sizes in int64 without checks. */
    if (!v->ntuple && shape_too_large(v->shape, v->ndim))
        return infer_error(
            c, v->loc,
            "%s gives a tensor of shape %s, which is too large (more than 2^48 elements)",
            op_info(v->op)->name, shape_str(c->g->arena, v->shape, v->ndim));
    return true;
}

Value *value_make(InferCtx *c, OpCode op, SrcLoc loc, int nargs, Arg *args) {
    Value *v = value_new(c->g, op, loc);
    const OpInfo *info = op_info(op);
    v->nargs = info->nparams > nargs ? info->nparams : nargs;
    v->args = ARENA_ARRAY(c->g->arena, Arg, v->nargs);
    for (int i = 0; i < nargs; i++)
        v->args[i] = args[i];
    for (int i = nargs; i < v->nargs; i++)
        v->args[i].loc = loc;
    if (!value_infer(c, v)) return NULL;
    return v;
}

Arg arg_tensor(Value *t, SrcLoc loc) {
    return (Arg){.kind = ARG_TENSOR, .t = t, .loc = loc};
}
Arg arg_int(int64_t i, SrcLoc loc) {
    return (Arg){.kind = ARG_INT, .i = i, .loc = loc};
}
Arg arg_dtype(DType t, SrcLoc loc) {
    return (Arg){.kind = ARG_DTYPE, .dt = t, .loc = loc};
}
Arg arg_ints(Arena *a, const int64_t *v, int n, SrcLoc loc) {
    Arg r = {.kind = ARG_INTS, .n = n, .loc = loc};
    r.ints = arena_dup(a, v, sizeof(int64_t) * (size_t)n);
    return r;
}

const char *value_name(Arena *a, const Value *v) {
    return v->name ? v->name : arena_printf(a, "%%%d", v->id);
}

int64_t shape_numel(const int64_t *shape, int ndim) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    return n;
}

int64_t value_numel(const Value *v) {
    return shape_numel(v->shape, v->ndim);
}

int64_t value_bytes(const Value *v) {
    if (v->is_view || v->storage != v) return 0;
    return value_numel(v) * (int64_t)dtype_size(v->dtype);
}

void shape_contiguous_strides(const int64_t *shape, int ndim, int64_t *strides) {
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i] > 1 ? shape[i] : 1;
    }
}

/* c10's compute_contiguous: size-1 dims do not constrain their stride. */
bool layout_is_contiguous(const Value *v) {
    if (value_numel(v) == 0) return true;
    int64_t expected = 1;
    for (int i = v->ndim - 1; i >= 0; i--) {
        if (v->shape[i] == 1) continue;
        if (v->strides[i] != expected) return false;
        expected *= v->shape[i];
    }
    return true;
}

char *shape_str(Arena *a, const int64_t *shape, int ndim) {
    char buf[TG_MAX_DIMS * 24 + 4];
    int n = snprintf(buf, sizeof buf, "[");
    for (int i = 0; i < ndim; i++)
        n +=
            snprintf(buf + n, sizeof buf - (size_t)n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    snprintf(buf + n, sizeof buf - (size_t)n, "]");
    return arena_strdup(a, buf);
}

bool value_same_shape(const Value *a, const Value *b) {
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

bool infer_error(InferCtx *c, SrcLoc loc, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    diag_error(c->d, loc, "%s", buf);
    return false;
}

void set_shape(Value *v, const int64_t *shape, int ndim) {
    v->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        v->shape[i] = shape[i];
}

bool norm_dim(InferCtx *c, SrcLoc loc, int64_t *dim, int ndim) {
    int64_t n = ndim > 0 ? ndim : 1; /* a 0-d tensor accepts dims -1 and 0 */
    if (*dim < -n || *dim >= n)
        return infer_error(c, loc,
                           "Dimension out of range (expected to be in range of [%lld, %lld], but "
                           "got %lld)",
                           (long long)-n, (long long)(n - 1), (long long)*dim);
    if (*dim < 0) *dim += n;
    return true;
}

bool broadcast_into(InferCtx *c, int64_t *shape, int *ndim, const Value *b, SrcLoc loc,
                    const char *what_a, const char *what_b) {
    int n = *ndim > b->ndim ? *ndim : b->ndim;
    int64_t out[TG_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        int ia = i - (n - *ndim), ib = i - (n - b->ndim);
        int64_t sa = ia >= 0 ? shape[ia] : 1, sb = ib >= 0 ? b->shape[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1) {
            Arena *ar = c->g->arena;
            return infer_error(c, loc,
                               "shapes %s (%s) and %s (%s) do not broadcast: dimension %d is %lld "
                               "in the first and %lld in the second (sizes must be equal or 1)",
                               shape_str(ar, shape, *ndim), what_a,
                               shape_str(ar, b->shape, b->ndim), what_b, i - n, (long long)sa,
                               (long long)sb);
        }
        out[i] = sa == 1 ? sb : sa;
    }
    memcpy(shape, out, sizeof(int64_t) * (size_t)n);
    *ndim = n;
    return true;
}

bool reduce_shape(InferCtx *c, Value *v, Arg *dims, bool keepdim, bool reduced[TG_MAX_DIMS]) {
    Value *x = IN0(v);
    memset(reduced, 0, sizeof(bool) * TG_MAX_DIMS);
    if (dims->kind == ARG_ABSENT || (dims->kind == ARG_INTS && dims->n == 0)) {
        for (int i = 0; i < x->ndim; i++)
            reduced[i] = true;
    } else {
        int n = dims->kind == ARG_INT ? 1 : dims->n;
        for (int k = 0; k < n; k++) {
            int64_t d = dims->kind == ARG_INT ? dims->i : dims->ints[k];
            if (!norm_dim(c, dims->loc, &d, x->ndim)) return false;
            if (x->ndim && reduced[d])
                return infer_error(c, dims->loc,
                                   "dim %lld appears multiple times in the list of dims",
                                   (long long)d);
            if (x->ndim) reduced[d] = true;
        }
    }
    int nd = 0;
    int64_t shape[TG_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) {
        if (!reduced[i])
            shape[nd++] = x->shape[i];
        else if (keepdim)
            shape[nd++] = 1;
    }
    set_shape(v, shape, nd);
    return true;
}

bool infer_size(InferCtx *c, SrcLoc loc, int64_t *shape, int ndim, int64_t numel) {
    int infer_at = -1;
    int64_t known = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == -1) {
            if (infer_at >= 0)
                return infer_error(c, loc, "only one dimension can be inferred (-1)");
            infer_at = i;
        } else if (shape[i] < 0) {
            return infer_error(c, loc, "invalid shape dimension %lld", (long long)shape[i]);
        } else if (__builtin_mul_overflow(known, shape[i], &known)) {
            return infer_error(c, loc, "shape '%s' is too large",
                               shape_str(c->g->arena, shape, ndim));
        }
    }
    if (infer_at >= 0) {
        if (known != 0 && numel % known == 0) {
            shape[infer_at] = numel / known;
            return true;
        }
    } else if (known == numel) {
        return true;
    }
    return infer_error(c, loc, "shape '%s' is invalid for input of size %lld",
                       shape_str(c->g->arena, shape, ndim), (long long)numel);
}
