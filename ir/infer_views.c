/* Shape and dtype inference of the view operations. Their layouts (strides,
 * offset) are computed later from the input's layout: ir/layout_views.c. */
#include <string.h>

#include "ir/infer.h"

bool infer_identity(InferCtx *c, Value *v) {
    (void)c;
    Value *x = IN0(v);
    v->dtype = x->dtype;
    set_shape(v, x->shape, x->ndim);
    return true;
}

/* dropout, dropout1d, dropout2d: views of their input until
 * passes/train_mode.c resolves training=true (docs/training.md). */
bool infer_dropout(InferCtx *c, Value *v) {
    const char *name = op_info(v->op)->name;
    double p = ARG(v, 1)->f;
    if (!(p >= 0 && p <= 1))
        return infer_error(c, ARG(v, 1)->loc,
                           "%s probability has to be between 0 and 1, but got %g", name, p);
    const Value *x = IN0(v);
    if (v->op == OP_DROPOUT1D && x->ndim != 2 && x->ndim != 3)
        return infer_error(c, v->args[0].loc,
                           "dropout1d: Expected 2D or 3D input, but received a %dD input", x->ndim);
    if (v->op == OP_DROPOUT2D && x->ndim != 3 && x->ndim != 4)
        return infer_error(c, v->args[0].loc,
                           "dropout2d: Expected 3D or 4D input, but received a %dD input", x->ndim);
    if (ARG(v, 2)->i && !dtype_is_float(x->dtype))
        return infer_error(c, v->args[0].loc,
                           "%s with training=true needs a floating-point input, found %s", name,
                           dtype_name(x->dtype));
    return infer_identity(c, v);
}

bool infer_to(InferCtx *c, Value *v) {
    infer_identity(c, v);
    v->dtype = ARG(v, 1)->dt;
    return true;
}

bool infer_cast(InferCtx *c, Value *v) {
    return infer_to(c, v);
}

bool infer_reshape(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *s = ARG(v, 1);
    if (s->n > TG_MAX_DIMS)
        return infer_error(c, s->loc, "at most %d dimensions are supported, found %d", TG_MAX_DIMS,
                           s->n);
    int64_t shape[TG_MAX_DIMS];
    memcpy(shape, s->ints, sizeof(int64_t) * (size_t)s->n);
    if (!infer_size(c, s->loc, shape, s->n, value_numel(x))) return false;
    v->dtype = x->dtype;
    set_shape(v, shape, s->n);
    return true;
}

bool infer_flatten(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *sa = ARG(v, 1), *ea = ARG(v, 2);
    if (!norm_dim(c, sa->loc, &sa->i, x->ndim) || !norm_dim(c, ea->loc, &ea->i, x->ndim))
        return false;
    if (sa->i > ea->i)
        return infer_error(c, sa->loc,
                           "flatten() has invalid args: start_dim cannot come after end_dim");
    v->dtype = x->dtype;
    if (x->ndim == 0) {
        int64_t one = 1;
        set_shape(v, &one, 1);
        return true;
    }
    int64_t shape[TG_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (i > sa->i && i <= ea->i)
            shape[n - 1] *= x->shape[i];
        else
            shape[n++] = x->shape[i];
    }
    set_shape(v, shape, n);
    return true;
}

bool infer_unflatten(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *da = ARG(v, 1), *sz = ARG(v, 2);
    if (!norm_dim(c, da->loc, &da->i, x->ndim)) return false;
    if (sz->n == 0) return infer_error(c, sz->loc, "unflatten: sizes must be non-empty");
    if (x->ndim - 1 + sz->n > TG_MAX_DIMS)
        return infer_error(c, sz->loc, "at most %d dimensions are supported", TG_MAX_DIMS);
    int64_t sizes[TG_MAX_DIMS];
    memcpy(sizes, sz->ints, sizeof(int64_t) * (size_t)sz->n);
    int64_t dsize = x->ndim ? x->shape[da->i] : 1;
    int64_t known = 1;
    int minus = 0;
    for (int k = 0; k < sz->n; k++) {
        if (sizes[k] == -1)
            minus++;
        else if (sizes[k] < -1 || __builtin_mul_overflow(known, sizes[k], &known))
            return infer_error(c, sz->loc, "unflatten: invalid sizes %s",
                               shape_str(c->g->arena, sizes, sz->n));
    }
    if ((minus == 0 && known != dsize) || (minus == 1 && (known == 0 || dsize % known)))
        return infer_error(
            c, sz->loc,
            "unflatten: Provided sizes %s don't multiply up to the size of dim %lld (%lld) "
            "in the input tensor %s",
            shape_str(c->g->arena, sizes, sz->n), (long long)da->i, (long long)dsize,
            shape_str(c->g->arena, x->shape, x->ndim));
    if (!infer_size(c, sz->loc, sizes, sz->n, dsize)) return false;
    int64_t shape[TG_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (i == da->i)
            for (int k = 0; k < sz->n; k++)
                shape[n++] = sizes[k];
        else
            shape[n++] = x->shape[i];
    }
    v->dtype = x->dtype;
    set_shape(v, shape, n);
    return true;
}

bool infer_transpose(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *a = ARG(v, 1), *b = ARG(v, 2);
    if (!norm_dim(c, a->loc, &a->i, x->ndim) || !norm_dim(c, b->loc, &b->i, x->ndim)) return false;
    infer_identity(c, v);
    if (x->ndim) {
        v->shape[a->i] = x->shape[b->i];
        v->shape[b->i] = x->shape[a->i];
    }
    return true;
}

bool infer_permute(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *d = ARG(v, 1);
    if (d->n != x->ndim)
        return infer_error(c, d->loc,
                           "permute(): number of dims don't match: the input has %d dimensions but "
                           "%d were given",
                           x->ndim, d->n);
    bool seen[TG_MAX_DIMS] = {0};
    for (int i = 0; i < d->n; i++) {
        if (!norm_dim(c, d->loc, &d->ints[i], x->ndim)) return false;
        if (seen[d->ints[i]])
            return infer_error(c, d->loc, "permute(): duplicate dims are not allowed");
        seen[d->ints[i]] = true;
    }
    v->dtype = x->dtype;
    v->ndim = x->ndim;
    for (int i = 0; i < d->n; i++)
        v->shape[i] = x->shape[d->ints[i]];
    return true;
}

void squeeze_dropped(const Value *x, const Arg *d, bool drop[TG_MAX_DIMS]) {
    memset(drop, 0, TG_MAX_DIMS * sizeof *drop);
    if (d->kind == ARG_ABSENT) {
        for (int i = 0; i < x->ndim; i++)
            drop[i] = x->shape[i] == 1;
        return;
    }
    int n = d->kind == ARG_INT ? 1 : d->n;
    for (int k = 0; k < n; k++) {
        int64_t dim = d->kind == ARG_INT ? d->i : d->ints[k];
        /* A 0-d input's one valid dim (0 or -1) names no dim to drop. */
        if (x->ndim) drop[dim] = x->shape[dim] == 1;
    }
}

bool infer_squeeze(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *d = ARG(v, 1);
    /* Normalised in place: layout_squeeze reads the same dims later. */
    if (d->kind != ARG_ABSENT) {
        int n = d->kind == ARG_INT ? 1 : d->n;
        for (int k = 0; k < n; k++)
            if (!norm_dim(c, d->loc, d->kind == ARG_INT ? &d->i : &d->ints[k], x->ndim))
                return false;
    }
    bool drop[TG_MAX_DIMS];
    squeeze_dropped(x, d, drop);
    v->dtype = x->dtype;
    v->ndim = 0;
    for (int i = 0; i < x->ndim; i++)
        if (!drop[i]) v->shape[v->ndim++] = x->shape[i];
    return true;
}

bool infer_unsqueeze(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *d = ARG(v, 1);
    if (x->ndim >= TG_MAX_DIMS)
        return infer_error(c, v->loc, "at most %d dimensions are supported", TG_MAX_DIMS);
    int64_t n = x->ndim + 1;
    if (d->i < -n || d->i >= n)
        return infer_error(c, d->loc,
                           "Dimension out of range (expected to be in range of [%lld, %lld], but "
                           "got %lld)",
                           (long long)-n, (long long)(n - 1), (long long)d->i);
    if (d->i < 0) d->i += n;
    v->dtype = x->dtype;
    v->ndim = x->ndim + 1;
    for (int i = 0, k = 0; i < v->ndim; i++)
        v->shape[i] = i == d->i ? 1 : x->shape[k++];
    return true;
}

static bool expand_to(InferCtx *c, Value *v, const int64_t *sizes, int n, SrcLoc loc) {
    Value *x = IN0(v);
    Arena *a = c->g->arena;
    if (n < x->ndim)
        return infer_error(c, loc,
                           "expand: the number of sizes provided (%d) must be greater or equal to "
                           "the number of dimensions in the tensor (%d)",
                           n, x->ndim);
    if (n > TG_MAX_DIMS)
        return infer_error(c, loc, "at most %d dimensions are supported", TG_MAX_DIMS);
    int64_t out[TG_MAX_DIMS];
    for (int i = n - 1; i >= 0; i--) {
        int d = i - (n - x->ndim);
        int64_t size = d >= 0 ? x->shape[d] : 1, target = sizes[i];
        if (target == -1) {
            if (d < 0)
                return infer_error(
                    c, loc, "expand: -1 is not allowed in a leading, non-existing dimension %d", i);
            target = size;
        } else if (target < 0) {
            return infer_error(c, loc, "expand: invalid size %lld", (long long)target);
        }
        if (size != target && size != 1)
            return infer_error(
                c, loc,
                "The expanded size of the tensor (%lld) must match the existing size "
                "(%lld) at non-singleton dimension %d.  Target sizes: %s.  Tensor "
                "sizes: %s",
                (long long)target, (long long)size, i, shape_str(a, sizes, n),
                shape_str(a, x->shape, x->ndim));
        out[i] = target;
    }
    v->dtype = x->dtype;
    set_shape(v, out, n);
    return true;
}

bool infer_expand(InferCtx *c, Value *v) {
    return expand_to(c, v, ARG(v, 1)->ints, ARG(v, 1)->n, ARG(v, 1)->loc);
}

bool infer_expand_as(InferCtx *c, Value *v) {
    Value *o = ARG(v, 1)->t;
    return expand_to(c, v, o->shape, o->ndim, v->loc);
}

/* Normalises the dim argument d of an op whose input must have a dim:
 * false after scalar_msg (a 0-dim input) or the range error. */
static bool dim_of_nonscalar(InferCtx *c, Value *v, Arg *d, const char *scalar_msg) {
    const Value *x = IN0(v);
    if (x->ndim == 0) return infer_error(c, v->loc, "%s", scalar_msg);
    return norm_dim(c, d->loc, &d->i, x->ndim);
}

bool infer_narrow(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *d = ARG(v, 1), *s = ARG(v, 2), *l = ARG(v, 3);
    if (!dim_of_nonscalar(c, v, d, "narrow() cannot be applied to a 0-dim tensor.")) return false;
    int64_t size = x->shape[d->i];
    if (s->i < -size || s->i > size)
        return infer_error(
            c, s->loc, "start out of range (expected to be in range of [%lld, %lld], but got %lld)",
            (long long)-size, (long long)size, (long long)s->i);
    if (s->i < 0) s->i += size;
    if (l->i < 0) return infer_error(c, l->loc, "narrow(): length must be non-negative.");
    if (l->i > size - s->i)
        return infer_error(c, l->loc, "start (%lld) + length (%lld) exceeds dimension size (%lld).",
                           (long long)s->i, (long long)l->i, (long long)size);
    infer_identity(c, v);
    v->shape[d->i] = l->i;
    return true;
}

bool infer_select(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *d = ARG(v, 1), *ix = ARG(v, 2);
    if (!dim_of_nonscalar(c, v, d, "select() cannot be applied to a 0-dim tensor.")) return false;
    int64_t size = x->shape[d->i];
    if (ix->i < -size || ix->i >= size)
        return infer_error(c, ix->loc,
                           "index %lld is out of bounds for dimension %lld with size %lld",
                           (long long)ix->i, (long long)d->i, (long long)size);
    if (ix->i < 0) ix->i += size;
    v->dtype = x->dtype;
    v->ndim = 0;
    for (int i = 0; i < x->ndim; i++)
        if (i != d->i) v->shape[v->ndim++] = x->shape[i];
    return true;
}

/* Python slice semantics with clamping; stores the resolved start in arg 2
 * and the resolved end in arg 3 (as ints). */
bool infer_slice(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *d = ARG(v, 1), *s = ARG(v, 2), *e = ARG(v, 3), *st = ARG(v, 4);
    if (!dim_of_nonscalar(c, v, d, "cannot slice a 0-dim tensor")) return false;
    if (st->i <= 0)
        return infer_error(c, st->loc, "slice step must be positive, found %lld", (long long)st->i);
    if (st->i > ((int64_t)1 << 32))
        return infer_error(c, st->loc, "slice step %lld is too large", (long long)st->i);
    int64_t size = x->shape[d->i];
    int64_t start = s->kind == ARG_ABSENT ? 0 : s->i;
    int64_t end = e->kind == ARG_ABSENT ? size : e->i;
    if (start < 0) start += size;
    if (end < 0) end += size;
    if (start < 0)
        start = 0;
    else if (start > size)
        start = size;
    if (end < start)
        end = start;
    else if (end > size)
        end = size;
    s->kind = e->kind = ARG_INT;
    s->i = start;
    e->i = end;
    infer_identity(c, v);
    v->shape[d->i] = (end - start + st->i - 1) / st->i;
    return true;
}

/* A tuple op's element is a narrow view; it is made here and named by the
 * statement that binds it. */
static Value *narrow_part(InferCtx *c, Value *v, int64_t dim, int64_t start, int64_t len) {
    Arg args[4] = {arg_tensor(IN0(v), v->loc), arg_int(dim, v->loc), arg_int(start, v->loc),
                   arg_int(len, v->loc)};
    Value *p = value_make(c, OP_NARROW, v->loc, 4, args);
    if (p) p->label = op_info(v->op)->name;
    return p;
}

static bool split_by_sizes(InferCtx *c, Value *v, int64_t dim, const int64_t *sizes, int n) {
    v->tuple = ARENA_ARRAY(c->g->arena, Value *, n);
    v->ntuple = n;
    int64_t start = 0;
    for (int i = 0; i < n; i++) {
        v->tuple[i] = narrow_part(c, v, dim, start, sizes[i]);
        if (!v->tuple[i]) return false;
        start += sizes[i];
    }
    return true;
}

static bool split_even(InferCtx *c, Value *v, int64_t dim, int64_t split_size) {
    int64_t dim_size = IN0(v)->shape[dim];
    int64_t num = split_size ? dim_size / split_size + (dim_size % split_size != 0) : 1;
    if (num < 1) num = 1;
    if (num > 4096)
        return infer_error(c, v->loc, "split into %lld pieces: at most 4096 are supported",
                           (long long)num);
    int64_t *sizes = ARENA_ARRAY(c->g->arena, int64_t, num);
    for (int64_t i = 0; i < num; i++) {
        int64_t left = dim_size - i * split_size;
        sizes[i] = left < split_size ? left : split_size;
    }
    return split_by_sizes(c, v, dim, sizes, (int)num);
}

bool infer_chunk(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *n = ARG(v, 1), *d = ARG(v, 2);
    if (x->ndim == 0)
        return infer_error(c, v->loc, "chunk expects at least a 1-dimensional tensor");
    if (n->i <= 0)
        return infer_error(c, n->loc, "chunk expects `chunks` to be greater than 0, got: %lld",
                           (long long)n->i);
    if (!norm_dim(c, d->loc, &d->i, x->ndim)) return false;
    int64_t size = x->shape[d->i];
    int64_t split_size = size / n->i + (size % n->i != 0); /* ceil without overflow */
    if (split_size == 0 && size == 0) {
        int64_t *sizes = ARENA_ARRAY(c->g->arena, int64_t, n->i > 4096 ? 4096 : n->i);
        return split_by_sizes(c, v, d->i, sizes, (int)(n->i > 4096 ? 4096 : n->i));
    }
    return split_even(c, v, d->i, split_size);
}

bool infer_split(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *s = ARG(v, 1), *d = ARG(v, 2);
    if (!dim_of_nonscalar(c, v, d, "split expects at least a 1-dimensional tensor")) return false;
    int64_t size = x->shape[d->i];
    if (s->kind == ARG_INT) {
        if (s->i < 0)
            return infer_error(c, s->loc,
                               "split expects split_size be non-negative, but got split_size=%lld",
                               (long long)s->i);
        if (s->i == 0 && size != 0)
            return infer_error(
                c, s->loc,
                "split_size can only be 0 if dimension size is 0, but got dimension size of %lld",
                (long long)size);
        return split_even(c, v, d->i, s->i);
    }
    int64_t sum = 0;
    for (int i = 0; i < s->n; i++) {
        if (s->ints[i] < 0)
            return infer_error(c, s->loc,
                               "split_with_sizes expects split_sizes have only non-negative "
                               "entries, but got split_sizes=%s",
                               shape_str(c->g->arena, s->ints, s->n));
        if (__builtin_add_overflow(sum, s->ints[i], &sum))
            return infer_error(c, s->loc, "split_with_sizes: the sizes %s overflow",
                               shape_str(c->g->arena, s->ints, s->n));
    }
    if (sum != size)
        return infer_error(c, s->loc,
                           "split_with_sizes expects split_sizes to sum exactly to %lld (input "
                           "tensor's size at dimension %lld), but got split_sizes=%s",
                           (long long)size, (long long)d->i, shape_str(c->g->arena, s->ints, s->n));
    return split_by_sizes(c, v, d->i, s->ints, s->n);
}

bool infer_diagonal(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *off = ARG(v, 1), *d1 = ARG(v, 2), *d2 = ARG(v, 3);
    if (x->ndim < 2)
        return infer_error(
            c, v->loc, "diagonal expects a tensor with at least 2 dimensions, found %d", x->ndim);
    if (!norm_dim(c, d1->loc, &d1->i, x->ndim) || !norm_dim(c, d2->loc, &d2->i, x->ndim))
        return false;
    if (d1->i == d2->i)
        return infer_error(c, d2->loc, "diagonal dimensions cannot be identical %lld, %lld",
                           (long long)d1->i, (long long)d2->i);
    int64_t s1 = x->shape[d1->i], s2 = x->shape[d2->i], o = off->i, n;
    if (o >= 0)
        n = s1 < s2 - o ? s1 : s2 - o;
    else
        n = s1 + o < s2 ? s1 + o : s2;
    if (n < 0) n = 0;
    v->dtype = x->dtype;
    v->ndim = 0;
    for (int i = 0; i < x->ndim; i++)
        if (i != d1->i && i != d2->i) v->shape[v->ndim++] = x->shape[i];
    v->shape[v->ndim++] = n;
    return true;
}
