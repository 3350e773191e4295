/* View layouts: the strides and storage offset a view gets over its input's
 * storage, computed exactly as PyTorch 1.13 does (aten/src/ATen/native/
 * TensorShape.cpp, TensorUtils.cpp computeStride, ExpandUtils.cpp
 * inferExpandGeometry). Each returns false when no view exists. */
#include <string.h>

#include "ir/infer.h"

static void keep_offset(Value *v) {
    v->offset = IN0(v)->offset;
}

bool layout_identity(Value *v) {
    Value *x = IN0(v);
    memcpy(v->strides, x->strides, sizeof v->strides);
    keep_offset(v);
    return true;
}

bool layout_contiguous(Value *v) {
    return layout_is_contiguous(IN0(v)) && layout_identity(v);
}

bool layout_to(Value *v) {
    return IN0(v)->dtype == v->dtype && layout_identity(v);
}

/* TensorUtils.cpp computeStride: can the input's strides express the new
 * shape? Walks "chunks" of dims that are contiguous among themselves. */
static bool compute_stride(const int64_t *oshape, const int64_t *ostride, int on,
                           const int64_t *nshape, int nn, int64_t *nstride) {
    if (on == 0) {
        for (int i = 0; i < nn; i++)
            nstride[i] = 1;
        return true;
    }
    int64_t numel = shape_numel(oshape, on);
    if (numel == 0) {
        bool same = on == nn && !memcmp(oshape, nshape, sizeof(int64_t) * (size_t)on);
        if (same) {
            memcpy(nstride, ostride, sizeof(int64_t) * (size_t)on);
            return true;
        }
        for (int d = nn - 1; d >= 0; d--)
            nstride[d] = d == nn - 1 ? 1 : (nshape[d + 1] > 1 ? nshape[d + 1] : 1) * nstride[d + 1];
        return true;
    }
    int view_d = nn - 1;
    int64_t chunk_base_stride = ostride[on - 1], tensor_numel = 1, view_numel = 1;
    for (int td = on - 1; td >= 0; td--) {
        tensor_numel *= oshape[td];
        if (td == 0 ||
            (oshape[td - 1] != 1 && ostride[td - 1] != tensor_numel * chunk_base_stride)) {
            while (view_d >= 0 && (view_numel < tensor_numel || nshape[view_d] == 1)) {
                nstride[view_d] = view_numel * chunk_base_stride;
                view_numel *= nshape[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return false;
            if (td > 0) {
                chunk_base_stride = ostride[td - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

bool layout_reshape(Value *v) {
    Value *x = IN0(v);
    if (v->op == OP_FLATTEN && x->ndim > 0 && v->args[1].i == v->args[2].i)
        return layout_identity(v);
    keep_offset(v);
    return compute_stride(x->shape, x->strides, x->ndim, v->shape, v->ndim, v->strides);
}

bool layout_transpose(Value *v) {
    Value *x = IN0(v);
    layout_identity(v);
    if (x->ndim) {
        int64_t a = v->args[1].i, b = v->args[2].i;
        v->strides[a] = x->strides[b];
        v->strides[b] = x->strides[a];
    }
    return true;
}

bool layout_permute(Value *v) {
    Value *x = IN0(v);
    Arg *d = &v->args[1];
    for (int i = 0; i < d->n; i++)
        v->strides[i] = x->strides[d->ints[i]];
    keep_offset(v);
    return true;
}

bool layout_squeeze(Value *v) {
    Value *x = IN0(v);
    /* The kept dims are those whose size the inference kept, in order. */
    bool drop[TG_MAX_DIMS];
    squeeze_dropped(x, &v->args[1], drop);
    int n = 0;
    for (int i = 0; i < x->ndim; i++)
        if (!drop[i]) v->strides[n++] = x->strides[i];
    keep_offset(v);
    return true;
}

/* inferUnsqueezeGeometry: the new dim's stride is size*stride of the dim it precedes. */
bool layout_unsqueeze(Value *v) {
    Value *x = IN0(v);
    int64_t dim = v->args[1].i;
    for (int i = 0, k = 0; i < v->ndim; i++) {
        if (i == dim)
            v->strides[i] = dim >= x->ndim ? 1 : x->shape[dim] * x->strides[dim];
        else
            v->strides[i] = x->strides[k++];
    }
    keep_offset(v);
    return true;
}

/* inferExpandGeometry: stretched dims get stride 0; new leading dims of
 * size 1 get the stride a contiguous tensor would give them. */
bool layout_expand(Value *v) {
    Value *x = IN0(v);
    int n = v->ndim;
    for (int i = n - 1; i >= 0; i--) {
        int d = i - (n - x->ndim);
        int64_t size = d >= 0 ? x->shape[d] : 1;
        /* A 0-d input has no stride to extend: PyTorch gives its new dims stride 0. */
        int64_t stride =
            d >= 0 ? x->strides[d] : (i + 1 < n ? v->shape[i + 1] * v->strides[i + 1] : 0);
        if (size != v->shape[i]) stride = 0;
        v->strides[i] = stride;
    }
    keep_offset(v);
    return true;
}

bool layout_narrow(Value *v) {
    layout_identity(v);
    v->offset += v->args[2].i * IN0(v)->strides[v->args[1].i];
    return true;
}

bool layout_slice(Value *v) {
    Value *x = IN0(v);
    int64_t d = v->args[1].i;
    layout_identity(v);
    v->offset += v->args[2].i * x->strides[d];
    v->strides[d] = x->strides[d] * v->args[4].i;
    return true;
}

bool layout_select(Value *v) {
    Value *x = IN0(v);
    int64_t d = v->args[1].i;
    int n = 0;
    for (int i = 0; i < x->ndim; i++)
        if (i != d) v->strides[n++] = x->strides[i];
    v->offset = x->offset + v->args[2].i * x->strides[d];
    return true;
}

bool layout_diagonal(Value *v) {
    Value *x = IN0(v);
    int64_t off = v->args[1].i, d1 = v->args[2].i, d2 = v->args[3].i;
    int n = 0;
    for (int i = 0; i < x->ndim; i++)
        if (i != d1 && i != d2) v->strides[n++] = x->strides[i];
    v->strides[n] = x->strides[d1] + x->strides[d2];
    v->offset = x->offset;
    if (v->shape[v->ndim - 1] != 0)
        v->offset += off >= 0 ? off * x->strides[d2] : -off * x->strides[d1];
    return true;
}
