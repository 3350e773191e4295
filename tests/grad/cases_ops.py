"""Gradient cases, one per differentiable op (run_grad.py's header says how
they run): every op of ir/ops.def whose VJP column is not NULL, and the ops
ir/lower_nn.c lowers into primitives (pools, batch/group/instance norm,
pad, interpolate, pixel_(un)shuffle, repeat_interleave), whose gradients
come from the primitives' VJPs.

Each case is a graph body with {dt} for the float dtype; it runs at f32 and
at f64 (two cases, `_f32` / `_f64`). Shapes are graph dims drawn at random
from the (lo, hi) ranges given (seeded by the case name, so a run is
reproducible). Every op is differentiated with respect to params; inputs
are what must not get a gradient (indices, masks, conditions). Operands
come broadcast ([m, 1, n] * [k, n]), as strided views (transposes, stepped
slices, expands) and repeated (a * a), so the VJPs' reductions over
broadcast dims and their accumulation are exercised.

Input specs are diff.gen_tensor's: pos (0.2..3), nz (|x| >= 0.3), half
(multiples of 0.5 in [-3, 3]: exact ties and kinks), vals:..., idx:N, bool.
"""

FLOATS = ("f32", "f64")

# name: (body, dims, input specs[, options])
# Options: dtypes (default FLOATS), freeze, widen, factor ({dtype: factor}
# of the tolerance), ys (None: the body has its own `output loss`), asan
# (default: f32 in the sanitizer subset).
OPS = {}


def op(name, body, dims=None, inputs=None, **kw):
    assert name not in OPS, name
    OPS[name] = (body, dims or {}, inputs or {}, kw)


M = (2, 4)
N = (3, 6)
K = (2, 5)

# ---- elementwise, binary (broadcasting) ----------------------------------
op("add_bcast", """
param a : {dt}[m, 1, n]
param b : {dt}[k, n]
y = a + b
""", dict(m=M, n=N, k=K))
op("add_alpha", """
param a : {dt}[m, n]
param b : {dt}[n]
y = add(a, b, alpha=-0.5)
""", dict(m=M, n=N))
op("sub_alpha_bcast", """
param a : {dt}[n]
param b : {dt}[m, 1]
y = sub(a, b, alpha=2.5)
""", dict(m=M, n=N))
op("sub_scalar", """
param a : {dt}[m, n]
y = 1.5 - a
""", dict(m=M, n=N))
op("mul_bcast", """
param a : {dt}[m, 1, n]
param b : {dt}[k, n]
y = a * b
""", dict(m=M, n=N, k=K))
op("mul_self", """
param a : {dt}[m, n]
y = a * a * 0.5
""", dict(m=M, n=N))
op("mul_views", """
param a : {dt}[n, m]
param b : {dt}[m, 2 * n]
param c : {dt}[1, n]
y = a.T * b[:, ::2] * c.expand(m, n)
""", dict(m=M, n=N))
op("div_bcast", """
param a : {dt}[m, n]
param b : {dt}[n]
y = a / b
""", dict(m=M, n=N), {"b": "nz"})
op("div_scalar_num", """
param b : {dt}[m, n]
y = 2.0 / b
""", dict(m=M, n=N), {"b": "nz"})
op("xlogy", """
param a : {dt}[m, n]
param b : {dt}[n]
y = xlogy(a, b) + xlogy(a.T.T * 0.5, 3.0)
""", dict(m=M, n=N), {"b": "pos"})
op("pow_tensor", """
param a : {dt}[m, n]
param e : {dt}[n]
y = a ** e
""", dict(m=M, n=N), {"a": "pos"})
op("pow_scalar_exp", """
param a : {dt}[m, n]
y = a ** 3 + a ** 0.5 + a ** -1.5 + a ** 0.3
""", dict(m=M, n=N), {"a": "pos"})
op("pow_scalar_base", """
param e : {dt}[m, n]
y = 2.0 ** e + 0.3 ** e
""", dict(m=M, n=N))
op("pow_zeros", """
param a : {dt}[m, n]
param e : {dt}[m, n]
y = pow(a, e)
""", dict(m=(3, 3), n=(4, 4)), {"a": "vals:0,0.5,2,0,1.5", "e": "vals:0,1,0,2,3,0.5"})
op("div_rounding", """
param a : {dt}[m, n]
param b : {dt}[n]
y = div(a, b, rounding_mode="floor") + div(a, b, rounding_mode="trunc") + a
""", dict(m=M, n=N), {"a": "randn:3", "b": "nz"})
op("remainder", """
param a : {dt}[m, n]
param b : {dt}[n]
y = a % b
""", dict(m=M, n=N), {"a": "randn:3", "b": "nz"})
op("remainder_fn", """
param a : {dt}[m, n]
y = remainder(a, 0.7)
""", dict(m=M, n=N), {"a": "randn:3"})
op("maximum_ties", """
param a : {dt}[m, n]
param b : {dt}[n]
y = maximum(a, b)
""", dict(m=(3, 5), n=(4, 6)), {"a": "half", "b": "half"})
op("minimum_ties", """
param a : {dt}[m, n]
param b : {dt}[m, n]
y = minimum(a, b)
""", dict(m=(3, 5), n=(4, 6)), {"a": "half", "b": "half"})
op("where", """
input c : bool[m, 1]
param a : {dt}[m, n]
param b : {dt}[n]
y = where(c, a, b)
""", dict(m=M, n=N))
op("where_scalar", """
input c : bool[m, n]
param a : {dt}[m, n]
y = where(c, 0.5, a)
""", dict(m=M, n=N))
op("masked_fill", """
input mask : bool[m, n]
param a : {dt}[m, n]
y = a.masked_fill(mask, 2.0)
""", dict(m=M, n=N))
op("masked_fill_tensor_value", """
input mask : bool[n]
param a : {dt}[m, n]
param v : {dt}[]
y = a.masked_fill(mask, v)
""", dict(m=M, n=N))
op("clamp", """
param a : {dt}[m, n]
y = clamp(a, -0.5, 0.5) + clamp(a, min=0.1) * 2 + clip(a, max=-0.2) * 3
""", dict(m=(3, 5), n=(4, 6)), {"a": "half"})

# ---- elementwise, unary --------------------------------------------------
UNARY = {
    # name: (expression of a, spec)
    "neg": ("-a", "randn"),
    "abs": ("abs(a)", "half"),
    "sign": ("sign(a) * a", "randn"),
    "relu": ("relu(a)", "half"),
    "floor": ("floor(a) + a", "randn:2"),
    "ceil": ("ceil(a) * a", "randn:2"),
    "round": ("round(a) * a", "randn:2"),
    "trunc": ("trunc(a) + a", "randn:2"),
    "square": ("square(a)", "randn"),
    "exp": ("exp(a)", "randn"),
    "log": ("log(a)", "pos"),
    "log1p": ("log1p(a)", "pos"),
    "expm1": ("expm1(a)", "randn"),
    "sqrt": ("sqrt(a)", "pos"),
    "rsqrt": ("rsqrt(a)", "pos"),
    "reciprocal": ("reciprocal(a)", "nz"),
    "sin": ("sin(a)", "randn:2"),
    "cos": ("cos(a)", "randn:2"),
    "tanh": ("tanh(a)", "randn"),
    "sigmoid": ("sigmoid(a)", "randn:2"),
    "erf": ("erf(a)", "randn"),
    "gelu": ("gelu(a)", "randn:2"),
    "gelu_tanh": ("gelu(a, approximate=\"tanh\")", "randn:2"),
    "silu": ("silu(a)", "randn:2"),
    # not +3: there torch's scalar kernel gives 1.5 * grad and its vectorised
    # one (>= 4 contiguous elements) grad; tgc gives 1.5 * grad, as the
    # scalar kernel and derivatives.yaml's formula do
    "hardswish": ("hardswish(a)", "vals:-3,-3.5,-2.5,-0.5,0,0.5,2.5,3.5,-1"),
    "hardsigmoid": ("hardsigmoid(a)", "half"),
    "leaky_relu": ("leaky_relu(a, 0.2)", "half"),
    "elu": ("elu(a, alpha=0.7)", "half"),
    "softplus": ("softplus(a, beta=2, threshold=1)", "randn"),
    "mish": ("mish(a)", "randn:2"),
    "hardtanh": ("hardtanh(a, -0.5, 1.5)", "half"),
    "relu6": ("relu6(a * 2.0)", "half"),
}
# torch's hardsigmoid backward multiplies by 1/6 rounded to f32 (ATen's
# `scalar_t(1.0f / 6.0f)`), also at f64: 3e-8 from the exact 1/6 tgc uses.
UNARY_FACTOR = {"hardsigmoid": {"f64": 1e3}}
for _n, (_e, _s) in UNARY.items():
    op("unary_" + _n, """
param a : {dt}[m, n]
y = %s
""" % _e, dict(m=M, n=N), {"a": _s}, factor=UNARY_FACTOR.get(_n, {}))

# ---- reductions, softmaxes, norms ----------------------------------------
op("sum_all", """
param a : {dt}[m, n, k]
y = a.sum()
""", dict(m=M, n=N, k=K))
op("sum_dims_keepdim", """
param a : {dt}[m, n, k]
y = a.sum(dim=[0, 2], keepdim=true)
""", dict(m=M, n=N, k=K))
op("sum_neg_dim_view", """
param a : {dt}[n, m]
y = a.T.sum(dim=-1)
""", dict(m=M, n=N))
op("mean_dims", """
param a : {dt}[m, n, k]
y = a.mean(dim=[-1, 0]) + a.mean()
""", dict(m=M, n=N, k=K))
op("prod_dim", """
param a : {dt}[m, n, k]
y = a.prod(dim=1) + a.prod(dim=[0, 2], keepdim=true).sum()
""", dict(m=M, n=(2, 4), k=K), {"a": "pm1"})
op("prod_all", """
param a : {dt}[m, n]
y = a.prod()
""", dict(m=M, n=(2, 4)), {"a": "pm1"})
op("prod_zeros", """
param a : {dt}[m, n]
y = a.prod(dim=1)
""", dict(m=(4, 4), n=(5, 5)), {"a": "vals:0,1.5,-0.5,2,0.7, 0,0,1.1,1.2,1.3, 0.9,1,1.1,1.2,1.3, "
                                      "0,0,0,2,1"})
op("amax_ties", """
param a : {dt}[m, n]
y = a.amax(dim=1) + a.amin(dim=0).sum() + a.amax()
""", dict(m=(3, 5), n=(4, 6)), {"a": "ints:-1:1"})
op("amax_keepdim", """
param a : {dt}[m, n, k]
y = amax(a, dim=[0, 2], keepdim=true) * amin(a, dim=-1, keepdim=true)
""", dict(m=M, n=N, k=K))
op("max_reduce", """
param a : {dt}[m, n]
y = a.max() + a.min()
""", dict(m=M, n=N), {"a": "ints:-2:2"})
op("max_dim", """
param a : {dt}[m, n]
v, i = a.max(dim=1)
w, j = min(a, 0, keepdim=true)
y = v.sum() + w.sum()
""", dict(m=M, n=N))
op("max_dim_ties", """
param a : {dt}[m, n]
v, i = a.max(dim=1)
y = v
""", dict(m=M, n=N), {"a": "ints:-1:1"})
op("max_pool_ties", """
param a : {dt}[1, 2, n]
param b : {dt}[2, 5, n]
y = (max_pool1d(a, 2)
   + max_pool1d(a, 3, stride=1).sum()
   + adaptive_max_pool1d(a, 4).sum()
   + max_pool2d(b, 2, stride=1, padding=1).sum()
   + adaptive_max_pool2d(b, (2, 4)).sum())
""", dict(n=(6, 9)), {"a": "ints:-1:1", "b": "ints:-1:1"})
op("var", """
param a : {dt}[m, n, k]
y = a.var(dim=[1]) + a.var(dim=[0, 1, 2], correction=0)
""", dict(m=M, n=N, k=K))
op("std", """
param a : {dt}[m, n, k]
y = a.std(dim=[0, 2], keepdim=true) + a.std(dim=1, correction=0).sum()
""", dict(m=M, n=N, k=K))
op("std_zero", """
param a : {dt}[m, n]
param b : {dt}[m, n]
y = (a * 0.0 + 1.0).std(dim=1) + b.std()
""", dict(m=M, n=N))
op("logsumexp", """
param a : {dt}[m, n, k]
y = a.logsumexp(dim=[1]) + logsumexp(a, dim=[0, 2], keepdim=true).sum()
""", dict(m=M, n=N, k=K), {"a": "randn:3"})
op("softmax", """
param a : {dt}[m, n, k]
y = softmax(a, dim=-1) + softmax(a, dim=0) * 0.5
""", dict(m=M, n=N, k=K), {"a": "randn:2"})
op("softmax_view", """
param a : {dt}[k, m]
y = softmax(a.T, dim=1)
""", dict(m=M, k=K))
op("log_softmax", """
param a : {dt}[m, n, k]
y = log_softmax(a, dim=1)
""", dict(m=M, n=N, k=K), {"a": "randn:2"})
op("layer_norm", """
param x : {dt}[m, n, k]
param w : {dt}[n, k]
param b : {dt}[n, k]
y = layer_norm(x, [n, k], w, b, eps=1e-3)
""", dict(m=M, n=N, k=K), {"x": "randn:2"})
op("layer_norm_weight_only", """
param x : {dt}[m, n]
param w : {dt}[m]
y = layer_norm(x.T, [m]) + layer_norm(x.T, [m], w, eps=1e-2) * 0.5
""", dict(m=(3, 8), n=N))
op("rms_norm", """
param x : {dt}[m, n, k]
param w : {dt}[k]
y = rms_norm(x, w, eps=1e-4)
""", dict(m=M, n=N, k=(3, 9)))

# ---- views -----------------------------------------------------------------
op("alias_clone_contiguous", """
param a : {dt}[m, n]
b = a
y = (b.clone() + a.T.contiguous().T * 2 + dropout(a, 0.3) + dropout1d(a, 0.3, false)
     + dropout2d(a.unsqueeze(0), p=0.5, training=false).squeeze(0))
""", dict(m=M, n=N))
op("view_reshape", """
param a : {dt}[m, n, k]
y = a.view(m * n, k) * 2 + a.transpose(0, 1).reshape(n, m * k).T.reshape(m * n, k)
""", dict(m=M, n=N, k=K))
op("flatten_unflatten", """
param a : {dt}[m, n, k]
y = (a.flatten(1)
   + a.permute(2, 0, 1).flatten(0, 1).unflatten(0, [k, m]).permute(1, 0, 2).flatten(1))
""", dict(m=M, n=N, k=K))
op("transpose_swapaxes", """
param a : {dt}[m, n, k]
y = a.transpose(0, 2) + a.swapaxes(-1, 0) * 2
""", dict(m=M, n=N, k=K))
op("permute_mT", """
param a : {dt}[m, n, k]
y = a.permute(1, 2, 0) + a.mT.permute(2, 1, 0) * 3
""", dict(m=M, n=N, k=K))
op("squeeze_unsqueeze", """
param a : {dt}[m, 1, n]
y = a.squeeze(1).unsqueeze(0) + a.squeeze().unsqueeze(-1).squeeze(2)[None]
""", dict(m=M, n=N))
op("expand", """
param a : {dt}[m, 1]
param b : {dt}[n]
param c : {dt}[]
y = a.expand(m, n) + b.expand(k, m, n) * 2 + c.expand_as(b)
""", dict(m=M, n=N, k=K))
op("slice_step", """
param a : {dt}[m, n]
y = a[1:, ::2] * 3 + a[:m - 1, 1::3].sum()
""", dict(m=(3, 6), n=(5, 9)))
op("slice_clamp_narrow", """
param a : {dt}[m, n]
y = a[-2:, 1:100] + a.narrow(1, -n + 1, n - 1).narrow(0, 1, 2)
""", dict(m=(3, 6), n=(3, 7)))
op("select_index", """
param a : {dt}[m, n, k]
y = a[1] + (a[:, -1, :] * 2).sum() + a.select(2, -2).T.sum() + a[..., 0].sum()
""", dict(m=(2, 4), n=(3, 5), k=(2, 5)))
op("diagonal", """
param a : {dt}[m, n, k]
y = (a.diagonal()
   + a.diagonal(1, 1, 2).sum()
   + diagonal(a, -1, 0, 2).sum()
   + a.diagonal(0, 2, 0).sum())
""", dict(m=(3, 4), n=(3, 5), k=(4, 6)))
op("diagonal_2d", """
param a : {dt}[m, n]
y = a.diagonal(2) + a.T.diagonal(-1)[:m] * 0.5
""", dict(m=(3, 5), n=(6, 8)))
op("chunk_split", """
param a : {dt}[m, 2 * n]
p, q = a.chunk(2, dim=1)
r, s, t = a.split([1, n, n - 1], dim=-1)
y = p * q + s * 2 + r.sum() + t.sum()
""", dict(m=M, n=N))
op("detach", """
param a : {dt}[m, n]
param b : {dt}[n]
y = a * a.detach() + b.detach()
""", dict(m=M, n=N))
op("flip", """
param a : {dt}[m, n, k]
y = a.flip([0, 2]) * 2 + flip(a, [-2])
""", dict(m=M, n=N, k=K))
op("tril_triu", """
param a : {dt}[m, n]
y = tril(a) + triu(a, 1) * 2 + tril(a, -1) * 3 + triu(a.T, -1).T
""", dict(m=(3, 6), n=(3, 6)))

# ---- copies ------------------------------------------------------------------
op("cat", """
param a : {dt}[m, n]
param b : {dt}[m, k]
param c : {dt}[k, m]
y = cat([a, b, c.T, a], dim=1)
""", dict(m=M, n=N, k=K))
op("concat_dim0", """
param a : {dt}[m, n]
param b : {dt}[n]
y = concat([a, b[None], a[::2]], dim=0)
""", dict(m=M, n=N))
op("stack", """
param a : {dt}[m, n]
param b : {dt}[n, m]
y = stack([a, b.T, a], dim=-1) + stack([a, a], dim=0).sum()
""", dict(m=M, n=N))
op("gather", """
param a : {dt}[m, n]
input i : i64[m, j]
y = gather(a, 1, i)
""", dict(m=M, n=N, j=(4, 8)), {"i": "idx:{n}"})
op("gather_narrow", """
param a : {dt}[m, n, k]
input i : i64[j, n - 1, 2]
y = a.gather(0, i)
""", dict(m=M, n=N, k=(3, 5), j=(3, 6)), {"i": "idx:{m}"})
op("index_select", """
param a : {dt}[m, n, k]
input i : i64[j]
y = index_select(a, 1, i)
""", dict(m=M, n=N, k=K, j=(4, 8)), {"i": "idx:{n}"})
op("slice_scatter", """
param a : {dt}[m, n]
param b : {dt}[m - 1, n]
param c : {dt}[m, 3]
input p : i64[]
y = slice_scatter(a * a, b * 2, dim=0, start=1) + slice_scatter(a, c, 1, 0, 3).sum()
y2 = slice_scatter(a.transpose(0, 1), b.transpose(0, 1), dim=1, start=-(m - 1), step=1) * 3
y3 = slice_scatter(a, c, dim=1, start=p) * 1.5
""", dict(m=(3, 6), n=(4, 8)), {"p": "vals:1"}, ys=("y", "y2", "y3"))
op("index_tensor", """
param a : {dt}[m, n]
input i : i64[j, 2]
y = a[i] + a[:, i].sum()
""", dict(m=(3, 6), n=(3, 6), j=(2, 4)), {"i": "idx:-3:3"})
op("embedding", """
param table : {dt}[v, d]
input ids : i64[m, n]
y = embedding(ids, table)
""", dict(v=(3, 6), d=K, m=M, n=N), {"ids": "idx:{v}"})
op("repeat", """
param a : {dt}[m, n]
y = a.repeat(2, 1, 3)
""", dict(m=M, n=N))
op("repeat_interleave", """
param a : {dt}[m, n]
y = a.repeat_interleave(2, dim=1) + a.T.repeat_interleave(3, dim=0)[:n].sum()
""", dict(m=M, n=N))

# ---- products ----------------------------------------------------------------
op("matmul_2d", """
param a : {dt}[m, k]
param b : {dt}[k, n]
y = a @ b
""", dict(m=M, n=N, k=K))
op("matmul_1d", """
param a : {dt}[k]
param b : {dt}[k, n]
param c : {dt}[m, k]
param d : {dt}[k]
y = (a @ b).sum() + (c @ d).sum() + a @ d
""", dict(m=M, n=N, k=K))
op("matmul_batched_bcast", """
param a : {dt}[b, 1, m, k]
param w : {dt}[h, k, n]
y = a @ w
""", dict(b=(2, 3), h=(2, 3), m=M, n=N, k=K))
op("matmul_transposed", """
param a : {dt}[k, m]
param b : {dt}[n, k]
y = a.T @ b.T + (a.T @ a).sum()
""", dict(m=M, n=N, k=K))
op("matmul_3d_1d", """
param a : {dt}[b, m, k]
param v : {dt}[k]
param u : {dt}[m]
y = (a @ v).sum() + u @ a
""", dict(b=(2, 3), m=M, k=K))
op("mm_bmm_mv", """
param a : {dt}[m, k]
param b : {dt}[k, n]
param c : {dt}[bs, m, k]
param d : {dt}[bs, k, n]
param v : {dt}[k]
y = mm(a, b) + bmm(c, d).sum(dim=0) + mv(a, v)[:, None]
""", dict(bs=(2, 3), m=M, n=N, k=K))
op("outer", """
param a : {dt}[m]
param b : {dt}[n]
y = outer(a, b) + outer(a, a).sum()
""", dict(m=M, n=N))
op("linear", """
param x : {dt}[b, m, k]
param w : {dt}[n, k]
param bias : {dt}[n]
y = linear(x, w, bias) + linear(x, w).sum() + linear(x[0, 0], w, bias).sum()
""", dict(b=(2, 3), m=M, n=N, k=K))
op("einsum", """
param a : {dt}[b, m, k]
param c : {dt}[b, k, n]
param d : {dt}[n]
y = (einsum("bmk,bkn->bmn", a, c)
   + einsum("bkn,n->bk", c, d).sum()
   + einsum("bmk,bkn", a, c).sum())
""", dict(b=(2, 3), m=M, n=N, k=K))
op("einsum_ellipsis", """
param a : {dt}[b, h, m, k]
param c : {dt}[h, n, k]
param d : {dt}[h, 1, k]
param e : {dt}[m, k]
y = (einsum("...mk,...nk->...mn", a, c)
   + einsum("...k,...k", a, d).sum()
   + einsum("...mk->...", a).sum()
   + einsum("bh...k,...k->bh...", a, e).sum()
   + einsum("mk,...->...mk", e, c).sum())
""", dict(b=(2, 3), h=(1, 3), m=M, n=N, k=K))
op("einsum_sum_labels", """
param a : {dt}[m, k]
param c : {dt}[n]
y = (einsum("mk,n->kn", a, c)
   + einsum("mk->", a)
   + einsum("mk->km", a).sum()
   + einsum("mk,mk->", a, a))
""", dict(m=M, n=N, k=K))

# ---- convolutions ----------------------------------------------------------------
op("conv2d", """
param x : {dt}[2, c, h, w]
param wt : {dt}[o, c, 3, 3]
param b : {dt}[o]
y = conv2d(x, wt, b, stride=2, padding=1)
""", dict(c=(2, 4), h=(6, 9), w=(6, 9), o=(2, 5)), {"wt": "randn:0.3"})
op("conv2d_dilation_groups", """
param x : {dt}[2, 4, h, w]
param wt : {dt}[6, 2, 3, 2]
param wd : {dt}[4, 1, 3, 3]
y = (conv2d(x, wt, None, (1, 2), (2, 1), (2, 1), 2)
   + conv2d(x, wd, stride=3, padding=2, groups=4).sum())
""", dict(h=(7, 10), w=(7, 10)), {"wt": "randn:0.3", "wd": "randn:0.3"})
op("conv2d_same_even", """
param x : {dt}[1, 3, h, w]
param wt : {dt}[4, 3, 4, 2]
param b : {dt}[4]
y = conv2d(x, wt, b, padding="same") + conv2d(x, wt, padding="same", dilation=(1, 3)).sum()
""", dict(h=(5, 8), w=(5, 8)), {"wt": "randn:0.3"})
op("conv2d_unbatched_view", """
param x : {dt}[h, w, 3]
param wt : {dt}[2, 3, 3, 3]
y = conv2d(x.permute(2, 0, 1), wt, padding=1)
""", dict(h=(4, 7), w=(4, 7)), {"wt": "randn:0.3"})
op("conv1d", """
param x : {dt}[2, c, l]
param wt : {dt}[o, c, 3]
param wg : {dt}[6, 1, 5]
param b : {dt}[o]
y = (conv1d(x, wt, b, stride=2, padding=2, dilation=2)
   + conv1d(x[:, :3], wg, groups=3, padding="same").sum())
""", dict(c=(3, 3), l=(9, 16), o=(2, 5)), {"wt": "randn:0.3", "wg": "randn:0.3"})
op("conv1d_unbatched", """
param x : {dt}[c, l]
param wt : {dt}[o, c, 2]
y = conv1d(x, wt, padding="same", dilation=3)
""", dict(c=(2, 4), l=(6, 10), o=(2, 4)), {"wt": "randn:0.3"})
op("conv_transpose2d", """
param x : {dt}[2, c, h, w]
param wt : {dt}[c, o, 3, 3]
param b : {dt}[o]
y = conv_transpose2d(x, wt, b, stride=2, padding=1, output_padding=1)
""", dict(c=(2, 4), h=(3, 6), w=(3, 6), o=(2, 4)), {"wt": "randn:0.3"})
op("conv_transpose2d_groups_dilation", """
param x : {dt}[2, 4, h, w]
param wt : {dt}[4, 2, 3, 2]
param wd : {dt}[4, 3, 2, 3]
y = (conv_transpose2d(x, wt, None, (2, 3), (1, 0), (1, 2), 2)
   + conv_transpose2d(x, wd, dilation=2, padding=(1, 2)).sum())
""", dict(h=(3, 6), w=(3, 6)), {"wt": "randn:0.3", "wd": "randn:0.3"})
op("conv_transpose1d", """
param x : {dt}[2, 4, l]
param wt : {dt}[4, 3, 3]
param wg : {dt}[4, 1, 4]
param b : {dt}[3]
y = (conv_transpose1d(x, wt, b, stride=2, padding=1, output_padding=1)
   + conv_transpose1d(x[0], wg, stride=3, groups=4, dilation=2).sum())
""", dict(l=(4, 8)), {"wt": "randn:0.3", "wg": "randn:0.3"})

# ---- lowered by ir/lower_nn.c ----------------------------------------------------
op("max_pool2d", """
param x : {dt}[2, c, h, w]
y = (max_pool2d(x, 3, stride=2, padding=1)
   + max_pool2d(x, 2, ceil_mode=true)[:, :, :1, :1].sum())
""", dict(c=(2, 3), h=(5, 9), w=(5, 9)))
op("max_pool_dilation_1d", """
param x : {dt}[2, c, h, w]
param z : {dt}[c, l]
y = max_pool2d(x, (2, 3), dilation=2).sum() + max_pool1d(z, 3, stride=2, padding=1).sum()
""", dict(c=(2, 3), h=(6, 9), w=(7, 9), l=(6, 11)))
op("avg_pool", """
param x : {dt}[2, c, h, w]
param z : {dt}[2, c, l]
y = (avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=true, count_include_pad=false).sum()
   + avg_pool2d(x, 2, divisor_override=3).sum()
   + avg_pool1d(z, 4, stride=3, padding=2).sum())
""", dict(c=(2, 3), h=(5, 9), w=(5, 9), l=(6, 11)))
op("adaptive_pools", """
param x : {dt}[2, c, h, w]
param z : {dt}[c, l]
y = (adaptive_avg_pool2d(x, (3, 2)).sum()
   + adaptive_max_pool2d(x, (2, 3)).sum()
   + adaptive_avg_pool1d(z, 4).sum()
   + adaptive_max_pool1d(z, 3).sum())
""", dict(c=(2, 3), h=(5, 9), w=(5, 9), l=(6, 11)))
op("batch_norm", """
param x : {dt}[2, c, h, w]
param rm : {dt}[c]
param rv : {dt}[c]
param g : {dt}[c]
param b : {dt}[c]
y = batch_norm(x, rm, rv, g, b, eps=1e-3)
""", dict(c=(2, 4), h=(2, 4), w=(2, 4)), {"rv": "pos"}, freeze=("rm", "rv"))
# Training mode: the batch's statistics (biased variance), differentiated
# through mean and var; the running update (on the frozen statistics, on
# both sides) changes no gradient.
op("batch_norm_train", """
param x : {dt}[n, c, h]
param rm : {dt}[c]
param rv : {dt}[c]
param g : {dt}[c]
param b : {dt}[c]
y = batch_norm(x, rm, rv, g, b, training=true, momentum=0.2, eps=1e-3) * x
""", dict(n=(2, 3), c=(2, 3), h=(2, 4)), {"rv": "pos"}, freeze=("rm", "rv"))
op("batch_norm_1d", """
param x : {dt}[n, c]
param rm : {dt}[c]
param rv : {dt}[c]
y = batch_norm(x, rm, rv)
""", dict(n=(2, 5), c=(2, 4)), {"rv": "pos"}, freeze=("rm", "rv"))
op("group_norm", """
param x : {dt}[2, 2 * g, h, w]
param wt : {dt}[2 * g]
param b : {dt}[2 * g]
y = group_norm(x, g, wt, b) + group_norm(x, 1).sum()
""", dict(g=(1, 3), h=(2, 4), w=(2, 4)))
op("instance_norm", """
param x : {dt}[2, c, l]
param wt : {dt}[c]
param b : {dt}[c]
y = instance_norm(x, weight=wt, bias=b, eps=1e-3)
""", dict(c=(2, 4), l=(3, 7)))
op("pad_modes", """
param x : {dt}[2, c, h, w]
y = (pad(x, (1, 2, 2, 1), mode="reflect") * 2
   + pad(x, (1, -1, 2, 1), value=1.5).sum()
   + pad(x[0], (3, 2), mode="circular").sum()
   + pad(x, (1, 1, 2, 0), mode="replicate").sum())
""", dict(c=(2, 3), h=(3, 5), w=(4, 6)))
op("interpolate_nearest", """
param x : {dt}[2, c, h, w]
y = (interpolate(x, scale_factor=2)
   + interpolate(x, size=(2 * h, 2 * w), mode="nearest-exact") * 2)
""", dict(c=(2, 3), h=(3, 5), w=(4, 6)))
op("interpolate_downsample", """
param x : {dt}[2, c, h, w]
y = (interpolate(x, size=(h - 1, w + 3)).sum()
   + interpolate(x, size=(h + 3, w - 1), mode="nearest-exact").sum())
""", dict(c=(2, 3), h=(3, 5), w=(4, 6)))
op("interpolate_linear", """
param x : {dt}[2, c, h, w]
param z : {dt}[c, l]
y = (interpolate(x, size=(5, 7), mode="bilinear").sum()
   + interpolate(x, size=(h + 2, 3), mode="bilinear", align_corners=true).sum()
   + interpolate(z[None], scale_factor=1.5, mode="linear").sum())
""", dict(c=(2, 3), h=(3, 5), w=(4, 6), l=(4, 7)))
op("pixel_shuffle", """
param x : {dt}[2, 4 * c, h, w]
y = pixel_shuffle(x, 2) + pixel_unshuffle(pixel_shuffle(x, 2), 2).sum()
""", dict(c=(1, 2), h=(2, 4), w=(2, 4)))

# ---- loss functions (ir/lower_loss.c writes them in primitives) -------------------
# Each case is its own loss (ys=()): the loss function's output is `loss`.
LOSSES = {
    "mse_loss": ("""
param a : {dt}[m, n]
input t : {dt}[m, n]
output loss = mse_loss(a, t) + mse_loss(a.T, t.T, reduction="sum") * 0.5
""", {}),
    "l1_loss": ("""
param a : {dt}[m, n]
input t : {dt}[n]
output loss = (l1_loss(a, t.expand(m, n))
             + l1_loss(a, t.expand(m, n), reduction="none")[0].sum())
""", {}),
    "smooth_l1_loss": ("""
param a : {dt}[m, n]
input t : {dt}[m, n]
output loss = smooth_l1_loss(a, t, beta=0.5) + smooth_l1_loss(a, t, reduction="sum")
""", {"a": "randn:2"}),
    "nll_loss": ("""
param a : {dt}[m, n]
input t : i64[m]
input w : {dt}[n]
output loss = (nll_loss(log_softmax(a, dim=1), t)
             + nll_loss(log_softmax(a, dim=1), t, weight=w, ignore_index=1))
""", {"t": "idx:{n}", "w": "pos"}),
    "cross_entropy": ("""
param a : {dt}[m, n, k]
input t : i64[m, k]
input p : {dt}[m, n]
output loss = (cross_entropy(a, t)
             + cross_entropy(a[:, :, 0], p, label_smoothing=0.1)
             + cross_entropy(a[:, :, 1], t[:, 0], reduction="sum", label_smoothing=0.2))
""", {"t": "idx:{n}", "p": "pos"}),
}
for _n, (_src, _specs) in LOSSES.items():
    op("loss_" + _n, _src, dict(m=M, n=N, k=K), _specs, ys=None)

# ---- dtype mixes (torch's own f32 autograd as the reference) --------------------------
op("cast_promotion", """
param a : f32[m, n]
param b : f64[n]
input x : f64[m, n]
y = (a * x
   + b
   + a.double() * 0.5
   + b.float().sum()
   + a.sum(dim=1, dtype=f64)[:, None]
   + softmax(a, dim=1, dtype=f64)
   + log_softmax(a.to(f64), 0) * 0.5
   + a.mean(dtype=f64))
""", dict(m=M, n=N), dtypes=("f32",), widen=False)


# ---- coverage: every op with a VJP (and every op lowered into others) has a case

# Ops the front end writes for syntax or makes itself: the case covering each.
# Attention (ir/vjp_attention.c): f32 only, as tgc has no f64 attention;
# key and value broadcast over the query's batch dims, the mask over them,
# a strided (transposed) query, and a causal call with its own scale.
op("scaled_dot_product_attention", """
param qt : {dt}[2, l, 3, e]
param k : {dt}[2, 1, s, e]
param v : {dt}[3, s, e]
param m : {dt}[l, s]
q = qt.transpose(1, 2)
y = scaled_dot_product_attention(q, k, v, m)
y2 = scaled_dot_product_attention(q, k, v, is_causal=true, scale=0.7)
""", dict(l=(3, 9), s=(4, 11), e=(2, 5)), ys=("y", "y2"), dtypes=("f32",))

BY_CASE = {
    "alias": "alias_clone_contiguous", "cast": "cast_promotion", "slice": "slice_step",
    "index": "index_tensor", "unfold": "max_pool2d", "add": "add_bcast", "sub": "sub_scalar",
    "mul": "mul_bcast", "div": "div_bcast", "pow": "pow_tensor", "remainder": "remainder",
    "neg": "unary_neg", "matmul": "matmul_2d",
    "copy": None,  # compiler-made only (never written in a .tg); vjp_identity
    # compiler-made (training-mode dropout, passes/train_mode.c): its random
    # mask has no torch.autograd reference here; tests/train/run_bn_dropout.py
    # checks its gradient against PyTorch given the same mask
    "dropout_apply": None,
    # compiler-made likewise (attention with dropout_p in a CPU training
    # build, passes/train_mode.c); run_bn_dropout.py's attention_f32 checks
    # its gradient against torch.autograd in f64 given the same mask
    "attention_dropout": None,
}
LOWERED_OPS = ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
               "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d", "batch_norm",
               "group_norm", "instance_norm", "pad", "interpolate", "pixel_shuffle",
               "pixel_unshuffle", "repeat_interleave"]


def uncovered(root, extra_srcs=()):
    """The ops of ir/ops.def with a VJP (last column not NULL), the lowered
    ops and the loss functions that no case's source calls."""
    import re
    with open(root + "/ir/ops.def") as f:
        rows = re.findall(r'^OP\((\w+), "([^"]+)",.*,\s*(\w+)\)\s*$', f.read(), re.M)
    want = [name for _, name, vjp in rows if vjp != "NULL"] + LOWERED_OPS
    want += [name for ident, name, _ in rows if ident.endswith("_LOSS") or ident == "CROSS_ENTROPY"]
    srcs = "\n".join([body for body, _, _, _ in OPS.values()] + list(extra_srcs))
    missing = []
    for name in want:
        if name in BY_CASE:
            if BY_CASE[name] is not None and BY_CASE[name] not in OPS:
                missing.append(name)
        elif not re.search(r"(?<![\w.])%s\(|\.%s\(" % (name, name), srcs):
            missing.append(name)
    return missing


def cases(GradCase):
    out = []
    for name, (body, dims, inputs, kw) in OPS.items():
        for dt in kw.get("dtypes", FLOATS):
            out.append(GradCase("%s_%s" % (name, dt), body, dt, dims=dims, inputs=inputs,
                                ys=kw.get("ys", ("y",)),
                                freeze=kw.get("freeze", ()), widen=kw.get("widen", True),
                                factor=kw.get("factor", {}).get(dt, 1),
                                asan=kw.get("asan", dt == "f32"), group="ops"))
    return out
