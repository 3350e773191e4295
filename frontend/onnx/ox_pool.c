/* MaxPool and AveragePool for the windows torch's max_pool1d/2d and
 * avg_pool1d/2d do not take (3-d windows, integer inputs, pads larger than
 * half the kernel, AveragePool's dilations and its uncounted asymmetric
 * pads): the input padded once, then for each of the kernel's offsets
 * the strided slice of the padded input that offset reads in every
 * window; MaxPool is their maximum, AveragePool their sum over the number
 * of counted positions in each window. All of it is one fused elementwise
 * kernel of prod(kernel) loads per output, exact as the pools' own. */
#include <math.h>
#include <string.h>

#include "frontend/onnx/ox.h"

enum { MAX_TERMS = 512 }; /* kernel positions: a longer expression is refused */

/* "pad(src, [...], value=V)": pb/pe per spatial dim (extra added at the end). */
static const char *pad_text(Ox *x, const char *src, const OxWin *w, const int64_t *extra, bool pads,
                            const char *value) {
    char *s = arena_printf(x->a, "pad(%s, [", src);
    for (int i = w->ns - 1; i >= 0; i--)
        s = arena_printf(x->a, "%s%s%lld, %lld", s, i == w->ns - 1 ? "" : ", ",
                         (long long)(pads ? w->pb[i] : 0),
                         (long long)((pads ? w->pe[i] : 0) + (extra ? extra[i] : 0)));
    return arena_printf(x->a, "%s], value=%s)", s, value);
}

/* The slices of p for kernel offset number t (row-major over the kernel). */
static const char *slice_text(Ox *x, const char *p, const OxWin *w, const int64_t *o, int64_t t) {
    int64_t off[3];
    for (int i = w->ns - 1; i >= 0; i--)
        off[i] = t % w->k[i], t /= w->k[i];
    char *s = arena_printf(x->a, "%s[:, :", p);
    for (int i = 0; i < w->ns; i++) {
        int64_t a = off[i] * w->d[i];
        s = arena_printf(x->a, "%s, %lld:%lld:%lld", s, (long long)a,
                         (long long)(a + (o[i] - 1) * w->s[i] + 1), (long long)w->s[i]);
    }
    return arena_printf(x->a, "%s]", s);
}

/* Combines the prod(kernel) slices of p with fn ("maximum" or "+"). */
static const char *combine(Ox *x, const char *p, const OxWin *w, const int64_t *o, int64_t terms,
                           bool mx) {
    const char *e = slice_text(x, p, w, o, 0);
    for (int64_t t = 1; t < terms; t++)
        e = mx ? arena_printf(x->a, "maximum(%s, %s)", e, slice_text(x, p, w, o, t))
               : arena_printf(x->a, "%s + %s", e, slice_text(x, p, w, o, t));
    return e;
}

void ox_pool_slices(Ox *x, OxVal *in, OxVal *out, const OxWin *w, bool mx, bool ceil_mode,
                    bool cip) {
    DType dt = in->dt;
    const char *low;
    if (dtype_is_float(dt))
        low = mx ? "-inf" : "0.0";
    else if (mx && (dt == DT_U8 || dt == DT_I8))
        low = dt == DT_U8 ? "0" : "-128"; /* the type's least: never the maximum */
    else
        ox_fail(x, "%s of %s is not supported (floating-point, and int8 or uint8 for MaxPool)",
                mx ? "MaxPool" : "AveragePool", dtype_name(dt));
    int64_t terms = 1, o[3] = {0}, extra[3] = {0};
    OxDim d[OX_MAX_DIMS];
    d[0] = in->dim[0], d[1] = in->dim[1];
    bool any_extra = false;
    for (int i = 0; i < w->ns; i++) {
        terms *= w->k[i];
        if (terms > MAX_TERMS)
            ox_fail(x, "a %s window of more than %d positions is not supported here",
                    w->ns == 3 ? "3-d" : "padded", MAX_TERMS);
        d[2 + i] = ox_out_size(x, in->dim[2 + i], w, i, ceil_mode);
        o[i] = d[2 + i].v;
        /* ceil_mode's last window may reach past the padded input */
        int64_t reach = (o[i] - 1) * w->s[i] + (w->k[i] - 1) * w->d[i] + 1;
        int64_t have = in->dim[2 + i].v + w->pb[i] + w->pe[i];
        extra[i] = reach > have ? reach - have : 0;
        any_extra |= extra[i] > 0;
    }
    const char *p = ox_ident(x, out->name, "_padded");
    ox_emit(x, OX_BODY, "%s = %s\n", p, pad_text(x, ox_ref(x, in, false), w, extra, true, low));
    const char *e = combine(x, p, w, o, terms, mx);
    if (!mx) {
        bool pads = false;
        for (int i = 0; i < w->ns; i++)
            pads |= w->pb[i] || w->pe[i];
        if (!any_extra && (cip || !pads)) {
            e = arena_printf(x->a, "(%s) / %s", e, ox_num(x, (double)terms, true));
        } else {
            /* each window's count: ones over the input (and its pads when
             * counted), zeros elsewhere, summed over the same slices */
            const char *m = ox_ident(x, out->name, "_count");
            OxDim sd[OX_MAX_DIMS];
            memcpy(sd, in->dim, sizeof sd);
            sd[0] = sd[1] = ox_dim_c(1); /* the same for every image and channel */
            const char *ones = arena_printf(x->a, "full(%s, 1.0, dtype=%s)",
                                            ox_dims_text(x, sd, in->ndim), dtype_name(dt));
            const char *mask = pad_text(x, ones, w, NULL, true, cip ? "1.0" : "0.0");
            if (any_extra) mask = pad_text(x, mask, w, extra, false, "0.0");
            ox_emit(x, OX_BODY, "%s = %s\n", m, mask);
            e = arena_printf(x->a, "(%s) / (%s)", e, combine(x, m, w, o, terms, false));
        }
    }
    ox_bind(x, out, e);
    ox_set_shape(out, dt, w->ns + 2, d);
}
