/* TfIdfVectorizer (opset 9): X [C] or [B, C] of int32/int64 tokens ->
 * [O] or [B, O] float counts of the pool's n-grams, O = max(ngram_indexes)
 * + 1. The pool is attributes, so every n-gram and every skip is known at
 * import; what is counted follows ONNX Runtime's tfidfvectorizer.cc: an
 * n-gram of size n with skip distance d (1 to max_skip_count + 1) starts
 * at s and reads X[s], X[s + d], ..., X[s + (n - 1) d], all in the row;
 * sizes min_gram_length to max_gram_length are counted, unigrams only at
 * d = 1 (a skip does not change them). The i-th n-gram of the pool
 * (levels in order, level k holding the (k+1)-grams from ngram_counts[k])
 * counts into output ngram_indexes[i]. For each counted level n and
 * distance d: the n strided slices of X, each compared with one column of
 * the level's n-grams ([L, Pn] per slice), their AND summed over the
 * start positions; the levels' counts [.., P] then go to their outputs
 * as a product with a 0/1 [P, O] matrix (exact for counts below 2^24).
 * mode: TF the counts; IDF weights[j] (1 without weights) where output j
 * counted anything, else 0; TFIDF counts * weights[j]. Weights are read by
 * output position, as ONNX Runtime reads them. pool_strings (a string
 * input) is refused: tgc has no string tensors. */
#include <string.h>

#include "frontend/onnx/ox.h"

/* A constant param: n values of dt (integers in iv or floats in fv), in
 * shape [d0] or [d0, d1] (d1 0: 1-d). */
/* An int list attribute of any length (ox_attr_ints bounds its lists by
 * the rank: a pool holds thousands); *n 0 when absent. */
static const int64_t *long_ints(Ox *x, const char *name, int *n) {
    const Onnx__AttributeProto *at = ox_attr(x, name);
    *n = 0;
    if (!at) return NULL;
    if ((at->has_type && at->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS) || at->n_floats ||
        at->n_strings)
        ox_fail(x, "attribute '%s' should be a list of integers", name);
    if (at->n_ints > ((size_t)1 << 24))
        ox_fail(x, "attribute '%s' has %zu values: too many", name, at->n_ints);
    *n = (int)at->n_ints;
    return at->ints;
}

bool ox_op_tfidf(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "TfIdfVectorizer")) return false;
    ox_need_inputs(x, in, nin, 1);
    OxVal *X = in[0];
    Arena *a = x->a;
    if (X->dt != DT_I32 && X->dt != DT_I64)
        ox_fail(x, "X is %s; TfIdfVectorizer takes int32 or int64 tokens", dtype_name(X->dt));
    if (X->ndim != 1 && X->ndim != 2)
        ox_fail(x, "X has shape %s; expected [C] or [N, C]", ox_dims_text(x, X->dim, X->ndim));
    OxDim cd = X->dim[X->ndim - 1];
    if (cd.sym)
        ox_fail(x, "X's last dim (%s) must be known when the graph is built", ox_dim_text(x, cd));
    int64_t C = cd.v;
    if (ox_attr(x, "pool_strings"))
        ox_fail(x, "pool_strings is not supported (string tensors are not; pool_int64s is)");
    int np = 0, nc = 0, ni = 0, nw = 0;
    const int64_t *pool = long_ints(x, "pool_int64s", &np);
    const int64_t *counts = long_ints(x, "ngram_counts", &nc);
    const int64_t *idx = long_ints(x, "ngram_indexes", &ni);
    const Onnx__AttributeProto *wa = ox_attr(x, "weights");
    if (wa && (wa->n_ints || wa->n_strings))
        ox_fail(x, "attribute 'weights' should be a list of floats");
    if (wa) nw = (int)wa->n_floats;
    int64_t mn = ox_attr_i(x, "min_gram_length", -1), mx = ox_attr_i(x, "max_gram_length", -1);
    int64_t skips = ox_attr_i(x, "max_skip_count", -1);
    if (mn < 1 || mx < mn || mx > 64)
        ox_fail(x,
                "min_gram_length %lld and max_gram_length %lld must satisfy 1 <= min <= max <= 64",
                (long long)mn, (long long)mx);
    if (skips < 0) ox_fail(x, "max_skip_count %lld must be given and >= 0", (long long)skips);
    const char *mode = ox_attr_s(x, "mode", "");
    int m = !strcmp(mode, "TF") ? 0 : !strcmp(mode, "IDF") ? 1 : !strcmp(mode, "TFIDF") ? 2 : -1;
    if (m < 0) ox_fail(x, "mode '%s' (TF, IDF or TFIDF)", mode);
    if (nc < 1) ox_fail(x, "ngram_counts must give each level's start in the pool");
    /* the levels: [start, end) of the pool, each a whole number of n-grams */
    int64_t total = 0;
    for (int k = 0; k < nc; k++) {
        int64_t s = counts[k], e = k + 1 < nc ? counts[k + 1] : np;
        if (s < 0 || e < s || e > np || (e - s) % (k + 1))
            ox_fail(x,
                    "ngram_counts[%d] = %lld: level %d spans pool_int64s[%lld:%lld], which must be "
                    "whole %d-grams inside the pool (%d values)",
                    k, (long long)s, k + 1, (long long)s, (long long)e, k + 1, np);
        total += (e - s) / (k + 1);
    }
    if (ni != total)
        ox_fail(x, "ngram_indexes has %d entries; the pool holds %lld n-grams", ni,
                (long long)total);
    int64_t O = 0;
    for (int k = 0; k < ni; k++) {
        if (idx[k] < 0 || idx[k] >= (1 << 24))
            ox_fail(x, "ngram_indexes[%d] = %lld is out of range", k, (long long)idx[k]);
        if (idx[k] + 1 > O) O = idx[k] + 1;
    }
    if (O == 0) ox_fail(x, "the pool is empty: the output would have no elements");
    if (wa && nw < O) ox_fail(x, "weights has %d values; the output has %lld", nw, (long long)O);
    const char *xs = ox_ref(x, X, false), *base = out[0]->name;
    const char *lead = X->ndim == 2 ? ":, " : "";
    /* each counted level's counts [.., Pn], and the rows of the 0/1 matrix */
    const char *cat = NULL;
    int64_t rows = 0, first_id = 0;
    int64_t *sel = arena_alloc(a, sizeof *sel * (size_t)(ni + 1));
    for (int k = 0; k < nc; k++) {
        int64_t g = k + 1, s = counts[k], e = k + 1 < nc ? counts[k + 1] : np, pn = (e - s) / g;
        int64_t id0 = first_id;
        first_id += pn;
        if (pn == 0 || g < mn || g > mx || g > C) continue;
        const char *sum = NULL;
        for (int64_t d = 1; d <= (g == 1 ? 1 : skips + 1); d++) {
            int64_t L = C - (g - 1) * d; /* the start positions */
            if (L < 1) break;
            const char *match = NULL;
            for (int64_t t = 0; t < g; t++) {
                int64_t *col = arena_alloc(a, sizeof *col * (size_t)pn);
                for (int64_t p = 0; p < pn; p++)
                    col[p] = pool[s + p * g + t];
                const char *cp = ox_param_of(
                    x, X->dt, 1, &pn, col, NULL,
                    arena_printf(a, "%s_pool%lld_%lld", base, (long long)g, (long long)t));
                const char *eq = arena_printf(a, "unsqueeze(%s[%s%lld:%lld], -1) == %s", xs, lead,
                                              (long long)(t * d), (long long)(t * d + L), cp);
                match = match ? arena_printf(a, "logical_and(%s, %s)", match, eq) : eq;
            }
            const char *c = arena_printf(a, "sum(%s.to(f32), -2)", match);
            sum = sum ? arena_printf(a, "%s + %s", sum, c) : c;
            /* one statement per distance keeps each expression small */
            sum = ox_tmp(x, base, arena_printf(a, "_%lldgram", (long long)g), sum);
        }
        cat = cat ? arena_printf(a, "%s, %s", cat, sum) : sum;
        for (int64_t p = 0; p < pn; p++)
            sel[rows++] = idx[id0 + p];
    }
    OxDim d[2];
    int r = X->ndim;
    if (r == 2) d[0] = X->dim[0];
    d[r - 1] = ox_dim_c(O);
    const char *y;
    if (!cat) {
        y = arena_printf(a, "zeros(%s, dtype=f32)", ox_dims_text(x, d, r));
    } else {
        double *mat = arena_alloc(a, sizeof *mat * (size_t)(rows * O));
        memset(mat, 0, sizeof *mat * (size_t)(rows * O));
        for (int64_t i = 0; i < rows; i++)
            mat[i * O + sel[i]] = 1;
        int64_t shape[2] = {rows, O};
        const char *mp =
            ox_param_of(x, DT_F32, 2, shape, NULL, mat, arena_printf(a, "%s_to_output", base));
        y = ox_tmp(x, base, "_tf", arena_printf(a, "matmul(cat([%s], -1), %s)", cat, mp));
    }
    if (m != 0) {
        const char *w = "1.0";
        if (wa) {
            double *wv = arena_alloc(a, sizeof *wv * (size_t)O);
            for (int64_t j = 0; j < O; j++)
                wv[j] = wa->floats[j];
            w = ox_param_of(x, DT_F32, 1, &O, NULL, wv, arena_printf(a, "%s_weights", base));
        }
        if (m == 1)
            y = arena_printf(a, "where(%s > 0.0, %s, 0.0)", y, w);
        else if (wa)
            y = arena_printf(a, "%s * %s", y, w);
    }
    return ox_bind_shaped(x, out[0], y, DT_F32, r, d);
}
