/* MaxPool with its Indices output (torch's max_pool*d(return_indices=True)
 * exports it, and MaxUnpool reads it): the windows as one strided slice
 * of the input padded with -inf per kernel offset, stacked last to
 * [N, C, O..., K] (as ox_pool.c's slices, kept apart here); the values
 * are their amax, the indices their argmax (the first maximum in the
 * window's row-major order, as ONNX Runtime scans) turned back into input
 * positions: pos_i = o_i * stride_i - pad_i + k_i * dilation_i, and the
 * index into the whole input flattened, row-major (storage_order 0:
 * ((n * C + c) * H + h) * W + w) or with the spatial dims reversed
 * (storage_order 1: ((n * C + c) * W + w) * H + h). */
#include "frontend/onnx/ox.h"

void ox_maxpool_indices(Ox *x, OxVal *in, OxVal *vals, OxVal *idx, const OxWin *w, bool ceil_mode) {
    Arena *a = x->a;
    int ns = w->ns, r = ns + 2;
    int64_t order = ox_attr_i(x, "storage_order", 0);
    if (order != 0 && order != 1) ox_fail(x, "storage_order %lld (0 or 1)", (long long)order);
    const char *base = idx->name;
    OxDim d[OX_MAX_DIMS];
    d[0] = in->dim[0], d[1] = in->dim[1];
    int64_t O[3], K = 1;
    for (int i = 0; i < ns; i++) {
        if (in->dim[2 + i].sym)
            ox_fail(x, "MaxPool's indices need the spatial dims known when the graph is built");
        d[2 + i] = ox_out_size(x, in->dim[2 + i], w, i, ceil_mode);
        O[i] = d[2 + i].v;
        if (O[i] < 1) ox_fail(x, "MaxPool's output would be empty");
        K *= w->k[i];
    }
    /* -inf pads: the given ones, and at the end what ceil_mode's last
     * window needs */
    const char *src = ox_ref(x, in, false);
    int64_t post[3];
    bool pad = false;
    for (int i = 0; i < ns; i++) {
        int64_t need = (O[i] - 1) * w->s[i] + (w->k[i] - 1) * w->d[i] + 1;
        post[i] = need - (in->dim[2 + i].v + w->pb[i]);
        if (post[i] < 0) post[i] = 0;
        pad |= w->pb[i] || post[i];
    }
    if (pad) {
        char *p = arena_strdup(a, "[");
        for (int i = ns - 1; i >= 0; i--)
            p = arena_printf(a, "%s%s%lld, %lld", p, i == ns - 1 ? "" : ", ", (long long)w->pb[i],
                             (long long)post[i]);
        src = ox_tmp(x, base, "_padded", arena_printf(a, "pad(%s, %s], value=-inf)", src, p));
    }
    /* one strided slice of the padded input per kernel offset, stacked
     * last in the window's row-major order */
    char *stack = arena_strdup(a, "stack([");
    for (int64_t kk = 0; kk < K; kk++) {
        int64_t rest = kk, off[3];
        for (int i = ns - 1; i >= 0; i--) {
            off[i] = rest % w->k[i];
            rest /= w->k[i];
        }
        char *sl = arena_printf(a, "%s[:, :", src);
        for (int i = 0; i < ns; i++) {
            int64_t b = off[i] * w->d[i];
            sl = arena_printf(a, "%s, %lld:%lld:%lld", sl, (long long)b,
                              (long long)(b + (O[i] - 1) * w->s[i] + 1), (long long)w->s[i]);
        }
        stack = arena_printf(a, "%s%s%s]", stack, kk ? ", " : "", sl);
    }
    const char *flat = ox_tmp(x, base, "_windows", arena_printf(a, "%s], dim=%d)", stack, r));
    if (vals) {
        ox_bind(x, vals, arena_printf(a, "amax(%s, dim=%d)", flat, r));
        ox_set_shape(vals, in->dt, r, d);
    }
    const char *k = ox_tmp(x, base, "_k", arena_printf(a, "argmax(%s, dim=%d)", flat, r));
    /* each spatial dim's input position, [O_i] placed at dim 2 + i */
    const char *pos[3];
    int64_t inner = K;
    for (int i = 0; i < ns; i++) {
        inner /= w->k[i];
        const char *off = arena_printf(a, "remainder(floor_divide(%s, %lld), %lld)", k,
                                       (long long)inner, (long long)w->k[i]);
        char *shape = arena_printf(a, "[%lld", (long long)O[i]);
        for (int j = i + 1; j < ns; j++)
            shape = arena_printf(a, "%s, 1", shape);
        shape = arena_printf(a, "%s]", shape);
        pos[i] = ox_tmp(x, base, "_pos",
                        arena_printf(a, "reshape(arange(%lld) * %lld - %lld, %s) + %s * %lld",
                                     (long long)O[i], (long long)w->s[i], (long long)w->pb[i],
                                     shape, off, (long long)w->d[i]));
    }
    char *nshape = arena_printf(a, "[%s", ox_dim_text(x, d[0]));
    char *cshape = arena_printf(a, "[%s", ox_dim_text(x, d[1]));
    for (int i = 0; i < ns; i++) {
        nshape = arena_printf(a, "%s, 1", nshape);
        cshape = arena_printf(a, "%s, 1", cshape);
    }
    char *e = arena_printf(a, "reshape(arange(%s), %s, 1]) * %s + reshape(arange(%s), %s])",
                           ox_dim_text(x, d[0]), nshape, ox_dim_text(x, d[1]), ox_dim_text(x, d[1]),
                           cshape);
    for (int j = 0; j < ns; j++) {
        int i = order ? ns - 1 - j : j;
        e = arena_printf(a, "(%s) * %lld + %s", e, (long long)in->dim[2 + i].v, pos[i]);
    }
    ox_bind(x, idx, e);
    ox_set_shape(idx, DT_I64, r, d);
}
