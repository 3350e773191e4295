"""Hand-written diff cases: every operation of the language at every dtype
(dtype sweeps), casts between all dtypes, broadcasting and promotion, views
feeding compute, fused elementwise chains, NaN/inf semantics, initialisers,
symbolic dimensions and the `tgc build` executable modes.

A dtype sweep is one graph per dtype holding several operations of one
family, each bound to its own name (every let-bound name is an output). It is
pruned (`prune=True`): the statements PyTorch 1.13 rejects at that dtype on
CPU are removed before tgc sees the graph (diff.py), so which op accepts
which dtype is decided by PyTorch, not by this file.

Input specs (diff.gen_tensor) keep inputs inside every op's domain: `pos`
for log/sqrt, `nz` for divisors, `idx:N` for indices, `perm` (distinct
values) where ties would make argmax ambiguous, small integers everywhere.
"""

DTYPES = ["f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u8", "bool"]
FLOATS = ["f64", "f32", "f16", "bf16"]
INTS = ["i64", "i32", "i16", "i8", "u8"]

# dtypes whose sweeps are in the reduced sanitizer subset: every op runs at
# least at f32 and i32, and the low-precision paths at f16 / bf16.
ASAN_DTYPES = {"f32", "i32"}


# --------------------------------------------------------------------------
# Dtype sweeps
# --------------------------------------------------------------------------

SWEEPS = [
    # name, body, input specs, tolerance category, extra asan dtypes
    ("arith_binary", """
input a : {dt}[3, 7]
input b : {dt}[3, 7]
r_add = a + b
r_sub = a - b
r_mul = a * b
r_div = a / b
r_mod = a % b
r_fdiv = a // b
f_add = add(a, b)
f_sub = sub(a, b)
f_mul = a.mul(b)
f_div = div(a, b)
r_max = maximum(a, b)
r_min = minimum(a, b)
""", {"a": "small", "b": "nz"}, "default", {"bf16"}),

    ("arith_scalar", """
input a : {dt}[4, 9]
input b : {dt}[4, 9]
s1 = a + 1
s2 = a * 2
s3 = 3 - a
s4 = a * 0.5
s5 = a / 2
s6 = a % 3
s7 = a // 2
s8 = a - 1.5
s9 = 2 * a + 1
s10 = -a
s11 = a % -3
s12 = a // -2
s13 = 7 % b
s14 = 7 // b
s15 = 1 / b
s16 = a - 2
""", {"a": "small", "b": "nz"}, "default", set()),

    ("pow", """
input p : {dt}[3, 5]
input e : {dt}[3, 5]
w1 = p ** e
w2 = p ** 2
w3 = p ** 0.5
w4 = 2 ** e
w5 = pow(p, e)
w6 = p.pow(3)
w7 = p ** 1.5
w8 = p ** -1
w9 = xlogy(e, p)
w10 = xlogy(p, e)
""", {"p": "pos", "e": "ints:0:3"}, "transcendental", set()),

    ("unary_basic", """
input x : {dt}[5, 11]
input h : {dt}[5, 11]
input r : {dt}[5, 11]
u_neg = -x
u_neg2 = neg(x)
u_abs = abs(x)
u_sign = sign(x)
u_sign_h = h.sign()
u_sq = square(x)
u_relu = relu(x)
u_floor = floor(x)
u_ceil = x.ceil()
u_round = round(h)
u_round2 = round(x)
u_trunc = trunc(x)
u_trunc_h = h.trunc()
u_recip = reciprocal(r)
""", {"x": "randn:2", "h": "half", "r": "nz"}, "default", {"f16"}),

    ("unary_math", """
input x : {dt}[5, 11]
input p : {dt}[5, 11]
m_exp = exp(x)
m_log = log(p)
m_log1p = log1p(p)
m_expm1 = expm1(x)
m_sqrt = sqrt(p)
m_rsqrt = p.rsqrt()
m_sin = sin(x)
m_cos = x.cos()
m_tanh = tanh(x)
m_sig = sigmoid(x)
m_gelu = gelu(x)
m_gelut = gelu(x, approximate = "tanh")
m_silu = silu(x)
m_erf = erf(x)
""", {"x": "randn:1.5", "p": "pos"}, "transcendental", {"f16", "bf16"}),

    ("clamp", """
input x : {dt}[4, 8]
c1 = clamp(x, 0, 2)
c2 = x.clamp(min = 1)
c3 = clamp(x, max = 2)
c4 = clamp(x, -0.5, 1.5)
c5 = x.clamp(1, 3)
c6 = x.clamp(2, 1)
""", {"x": "randn:2"}, "default", set()),

    ("compare", """
input a : {dt}[4, 6]
input b : {dt}[4, 6]
k1 = a < b
k2 = a <= b
k3 = a > b
k4 = a >= b
k5 = a == b
k6 = a != b
k7 = eq(a, b)
k8 = ne(a, b)
k9 = lt(a, b)
k10 = le(a, b)
k11 = gt(a, b)
k12 = ge(a, b)
k13 = a > 0
k14 = a == 1
k15 = a <= 0.5
k16 = 1 < a
""", {"a": "half", "b": "half"}, "exact", set()),

    ("logical", """
input a : {dt}[3, 10]
input b : {dt}[3, 10]
input m : bool[3, 10]
l1 = logical_not(a)
l2 = logical_and(a, b)
l3 = logical_or(a, b)
l4 = a.logical_not()
w1 = where(m, a, b)
w2 = where(a > b, a, b)
w3 = where(m, a, 0)
w4 = masked_fill(a, m, 2)
w5 = a.masked_fill(a > 1, 1)
w6 = where(m, 1, a)
w7 = a.masked_fill(m, 2.5)
""", {"a": "half", "b": "half"}, "exact", {"bool"}),

    ("red_sum", """
input x : {dt}[4, 5, 6]
input q : {dt}[4, 5, 6]
r1 = x.sum()
r2 = x.sum(dim = 1)
r3 = sum(x, dim = [0, 2])
r4 = x.sum(-1, keepdim = true)
r5 = x.sum(dim = None)
r6 = x.mean()
r7 = mean(x, dim = 0)
r8 = x.mean(dim = [1, 2], keepdim = true)
r9 = q.prod(dim = 1)
r10 = prod(q, dim = -1, keepdim = true)
r11 = q[0, :2].prod()
""", {"x": "randn", "q": "pm1"}, "reduction", {"f16", "bf16", "bool"}),

    ("red_minmax", """
input x : {dt}[4, 5, 6]
r1 = x.amax(dim = 1)
r2 = amin(x, dim = [0, 2])
r3 = x.amax()
r4 = x.amin(-1, keepdim = true)
r5 = x.argmax()
r6 = argmax(x, dim = 1)
r7 = x.argmin(dim = -1, keepdim = true)
r8 = x.argmin()
r9 = x.max()
r10 = min(x)
v1, i1 = x.max(dim = 1)
v2, i2 = min(x, dim = 0, keepdim = true)
v3, i3 = x.max(-1)
""", {"x": "perm"}, "exact", {"f16", "u8", "bool"}),

    ("red_stat", """
input x : {dt}[4, 5, 6]
input b : {dt}[4, 5, 6]
s1 = x.var()
s2 = var(x, dim = 1)
s3 = x.var(dim = [0, 2], keepdim = true)
s4 = x.std()
s5 = std(x, dim = -1)
s6 = x.var(dim = 1, correction = 0)
s7 = x.std(dim = [1, 2], correction = 0)
s8 = x.logsumexp(dim = 1)
s9 = logsumexp(x, dim = [0, 2])
s10 = x.logsumexp(-1, keepdim = true)
a1 = b.all()
a2 = all(b, dim = 1)
a3 = b.any()
a4 = b.any(dim = -1, keepdim = true)
a5 = b.all(dim = 0)
""", {"x": "randn", "b": "half|bool:0.85"}, "reduction", {"bool", "u8", "bf16"}),

    ("nn", """
input x : {dt}[3, 4, 8]
param w : {dt}[8]
param b : {dt}[8]
param w2 : {dt}[4, 8]
param b2 : {dt}[4, 8]
param lw : {dt}[5, 8]
param lb : {dt}[5]
n1 = softmax(x, dim = -1)
n2 = x.softmax(dim = 0)
n3 = log_softmax(x, dim = 1)
n4 = x.log_softmax(-1)
n5 = layer_norm(x, [8])
n6 = layer_norm(x, [8], w, b)
n7 = layer_norm(x, [4, 8], w2, b2, eps = 1e-3)
n8 = layer_norm(x, [8], weight = w)
n9 = layer_norm(x, [8], bias = b)
n10 = rms_norm(x, w)
n11 = rms_norm(x, w, eps = 1e-5)
n12 = linear(x, lw)
n13 = linear(x, lw, lb)
n14 = x.linear(lw, lb)
n15 = linear(x[0, 0], lw)
n16 = dropout(x, p = 0.25)
""", {"w": "pm1", "b": "randn", "w2": "pm1", "lw": "randn:0.3", "lb": "randn"},
     "transcendental", {"f16", "bf16"}),

    ("matmul_ranks", """
input v : {dt}[4]
input u : {dt}[4]
input A : {dt}[3, 4]
input B : {dt}[4, 5]
input C : {dt}[2, 3, 4]
input D : {dt}[2, 4, 5]
input E : {dt}[2, 1, 3, 4]
m1 = v @ u
m2 = A @ v
m3 = v @ B
m4 = A @ B
m5 = C @ B
m6 = A @ D
m7 = C @ D
m8 = E @ D
m9 = v @ D
m10 = C @ v
m11 = matmul(A, B)
m12 = A.matmul(B)
""", {}, "reduction", {"f16", "bf16", "f64"}),

    ("matmul_views", """
input A : {dt}[4, 3]
input B : {dt}[5, 4]
input C : {dt}[2, 4, 3]
input D : {dt}[2, 5, 4]
input v : {dt}[4]
input w : {dt}[5]
input M : {dt}[6, 8]
t1 = A.T @ B.T
t2 = A.mT @ B.mT
t3 = C.mT @ D.mT
t4 = bmm(C.mT, D.transpose(1, 2))
t5 = mm(A.T, B.T)
t6 = mv(B, v)
t7 = mv(A.T, v)
t8 = outer(v, w)
t9 = M[:, ::2] @ B.T
t10 = M[1:5, 2:6] @ A
t11 = v.expand(3, 4) @ A
t12 = A[None].expand(2, 4, 3).mT @ C
t13 = bmm(C.mT, C)
t14 = mm(A.flip(0).T, A)
t15 = C.permute(2, 0, 1) @ v[:, None].expand(3, 4, 4)
""", {}, "reduction", {"f16", "bf16", "f64"}),

    ("einsum", """
input A : {dt}[3, 4]
input B : {dt}[4, 5]
input C : {dt}[2, 3, 4]
input D : {dt}[2, 4, 5]
input v : {dt}[4]
input w : {dt}[4]
input Q : {dt}[2, 2, 3, 4]
input K : {dt}[2, 2, 5, 4]
input S : {dt}[4, 4]
e1 = einsum("ij,jk->ik", A, B)
e2 = einsum("bij,bjk->bik", C, D)
e3 = einsum("i,i->", v, w)
e4 = einsum("ij->ji", A)
e5 = einsum("ii->i", S)
e6 = einsum("bhqd,bhkd->bhqk", Q, K)
e7 = einsum("ij,j->i", A, v)
e8 = einsum("i,j->ij", v, w)
e9 = einsum("bij->j", C)
e10 = einsum("bij,jk->bik", C, B)
e11 = einsum("ii->", S)
""", {}, "reduction", {"f16"}),

    ("index", """
input x : {dt}[5, 4]
input t : {dt}[6, 3]
input g : i64[5, 4]
input h : i64[5, 2]
input s : i64[3]
input s4 : i64[3]
input e : i64[2, 3]
input e5 : i64[2, 3]
input e32 : i32[2, 3]
input n : i64[4]
q1 = gather(x, 0, g)
q2 = x.gather(1, h)
q3 = index_select(x, 0, s)
q4 = x.index_select(1, s4)
q5 = embedding(e, t)
q6 = x[s]
q7 = x[e5]
q8 = x[n]
q9 = x.T[s4]
q10 = embedding(e32, t)
q11 = x[s, 1:3]
""", {"g": "idx:5", "h": "idx:4", "s": "idx:5", "s4": "idx:4", "e": "idx:6", "e5": "idx:5",
      "e32": "idx:6", "n": "idx:-5:5"}, "exact", {"f16", "bool"}),

    ("copies", """
input a : {dt}[3, 4]
input b : {dt}[2, 4]
input c : {dt}[3, 2]
input q : {dt}[4, 4]
p1 = cat([a, b], dim = 0)
p2 = cat([a, c], dim = 1)
p3 = cat([a, b, a], 0)
p4 = cat([a.T, c.T], dim = 0)
p5 = stack([a, a.flip(0)])
p6 = stack([a, a], dim = 1)
p7 = stack([a, a.T.T], dim = -1)
p8 = a.repeat(2, 3)
p9 = b.repeat(2, 1, 2)
p10 = flip(a, [0])
p11 = a.flip([0, 1])
p12 = a.flip(-1)
p13 = tril(q)
p14 = q.tril(1)
p15 = triu(q, -1)
p16 = q.triu()
p17 = tril(a)
p18 = a.clone()
p19 = a.T.contiguous()
p20 = a.T.reshape(12)
p21 = a[:, 1:3].flatten()
p22 = triu(a.T)
""", {}, "exact", {"bool", "f16"}),

    ("creation", """
input x : {dt}[2, 3]
z1 = zeros([2, 3], dtype = {dt})
z2 = ones([3], dtype = {dt})
z3 = full([2, 2], 3, dtype = {dt})
z4 = arange(5, dtype = {dt})
z5 = arange(1, 7, 2, dtype = {dt})
z6 = tensor([[1, 2], [3, 0]], dtype = {dt})
z7 = zeros_like(x)
z8 = ones_like(x)
z9 = full_like(x, 2)
z10 = x + ones_like(x)
z11 = x * arange(3, dtype = {dt})
z12 = eye(3, dtype = {dt})
""", {"x": "small"}, "exact", {"bool", "bf16"}),
]


def sweep_cases(Case):
    out = []
    for name, body, inputs, tol, extra in SWEEPS:
        for dt in DTYPES:
            specs = {}
            for k, v in inputs.items():
                alts = v.split("|")
                specs[k] = next((a for a in alts if a.startswith("bool")), alts[0]) \
                    if dt == "bool" else alts[0]
            out.append(Case("%s_%s" % (name, dt), body.replace("{dt}", dt), inputs=specs,
                            tol=tol, prune=True, asan=dt in ASAN_DTYPES or dt in extra,
                            group="sweep"))
    return out


# --------------------------------------------------------------------------
# Casts: every source dtype to every target, compared exactly.
# --------------------------------------------------------------------------

def cast_cases(Case):
    out = []
    for s in DTYPES:
        # non-negative values that fit every target (u8 and i8 included)
        body = "input x : %s[5, 7]\n" % s
        body += "".join("c_%s = x.to(%s)\n" % (t, t) for t in DTYPES)
        out.append(Case("cast_pos_%s" % s, body, inputs={"x": "cast+"}, tol="exact",
                        asan=s in ("f32", "i32", "bf16"), group="cast"))
        if s not in ("u8", "bool"):
            # negative values: truncation towards zero; u8 targets left out
            # (negative float -> u8 is undefined in C and in PyTorch)
            body = "input x : %s[5, 7]\n" % s
            body += "".join("c_%s = x.to(%s)\n" % (t, t) for t in DTYPES if t != "u8")
            out.append(Case("cast_neg_%s" % s, body, inputs={"x": "cast-"}, tol="exact",
                            asan=s == "f32", group="cast"))
        if s in FLOATS:
            # rounding ties to even, subnormals, overflow to inf, nan, inf, -0
            body = "input x : %s[35]\n" % s
            body += "".join("c_%s = x.to(%s)\n" % (t, t) for t in FLOATS + ["bool"])
            out.append(Case("cast_special_%s" % s, body, inputs={"x": "special"}, tol="exact",
                            asan=s in ("f32", "f64"), group="cast"))
        if s in ("i64", "i32", "i16"):
            # integers that wrap in narrower targets (two's complement)
            body = "input x : %s[6, 7]\n" % s
            body += "".join("c_%s = x.to(%s)\n" % (t, t) for t in ("i16", "i8", "u8", "bool", "f16"))
            out.append(Case("cast_wrap_%s" % s, body, inputs={"x": "wide"}, tol="exact",
                            asan=s == "i32", group="cast"))
    out.append(Case("cast_aliases", """
input x : f32[3, 4]
input i : i32[3, 4]
a1 = x.to(float16)
a2 = x.to(half)
a3 = x.to(bfloat16)
a4 = x.to(double)
a5 = x.to(float64)
a6 = x.to(long)
a7 = x.to(int)
a8 = x.to(int64)
a9 = x.to(int16)
a10 = x.to(int8)
a11 = x.to(uint8)
a12 = i.to(float)
a13 = i.to(float32)
a14 = x.to(dtype = f16)
a15 = x.to(f32) + 1
a16 = x.to(int32)
""", inputs={"x": "cast+", "i": "cast+"}, tol="exact", asan=True, group="cast"))
    out.append(Case("cast_in_chain", """
input x : f32[4, 8]
input y : f16[4, 8]
a = (x * 3).to(f16) + y
b = (y.to(f32) * 1000).to(i32) // 7
c = (x > 0).to(f32) * x
d = x.to(bf16).to(f32) - x
e = y.to(bf16) * 2
output a
output b
output c
output d
output e
""", add_outputs=False, tol="default", asan=True, group="cast"))
    return out


# --------------------------------------------------------------------------
# Broadcasting and type promotion
# --------------------------------------------------------------------------

def broadcast_cases(Case):
    out = []
    for dt in ("f32", "i32", "f16", "f64", "u8"):
        out.append(Case("bcast_shapes_%s" % dt, """
input a : {dt}[3, 1, 5]
input b : {dt}[4, 1]
input c : {dt}[]
input d : {dt}[5]
input e : {dt}[1]
o1 = a + b
o2 = a * c
o3 = d - a
o4 = b * d
o5 = e + b
o6 = maximum(a, d)
o7 = where(b > 1, a, d)
o8 = c * 2 + e
o9 = a.expand(3, 4, 5) * b
o10 = c + c
o11 = a[:, :, None, :] * b[:, None, :]
""".replace("{dt}", dt), inputs={k: "small" for k in "abcde"}, asan=dt in ("f32", "i32"),
            group="broadcast"))
    out.append(Case("promotion_pairs", """
input h : f16[4]
input bf : bf16[4]
input f : f32[4]
input d : f64[4]
input l : i64[4]
input i : i32[4]
input s : i16[4]
input c : i8[4]
input u : u8[4]
input m : bool[4]
input d0 : f64[]
input f0 : f32[]
input l0 : i64[]
p1 = h + bf
p2 = i + h
p3 = u + c
p4 = m + c
p5 = l * 0.5
p6 = i * 2
p7 = h * 0.5
p8 = u / c
p9 = m * d
p10 = s + l
p11 = f + d
p12 = m + m
p13 = c - u
p14 = bf * 2
p15 = h + d0
p16 = i + f0
p17 = u + l0
p18 = bf - f
p19 = maximum(c, h)
p20 = where(m, u, c)
p21 = where(m, i, 1.5)
p22 = l // c
p23 = i % u
""", inputs={"c": "nz", "u": "nz"}, asan=True, group="broadcast"))
    return out


# --------------------------------------------------------------------------
# Views as operands
# --------------------------------------------------------------------------

VIEW_2D = """
input x : {dt}[6, 8]
v1 = narrow(x, 1, 2, 4) * 3
v2 = x.select(0, 2) * 2 + 1
a, b = x.split(4, dim = 1)
v3 = a * b
c1, c2, c3 = x.chunk(3)
v4 = c1 + c2 - c3
v5 = x.permute(1, 0).sum(dim = 1)
v6 = x.diagonal() * 3
v7 = x.diagonal(offset = 1)[:4] + x.diagonal(offset = -2)
v8 = x.view(2, 3, 8).sum(dim = 1)
v9 = x.unflatten(1, [2, 4]).amax(dim = -1)
v10 = x[1:5:2, ::3] + 1
v11 = x[..., -1] + x[:, 0]
v12 = x[None, :, 2:4].squeeze(0) * 2
v13 = x.T[2:5] - 1
v14 = x.flip(0)[:, 1:3] * x[:, 1:3]
v15 = x.unsqueeze(1).expand(6, 3, 8).sum(dim = 1)
v16 = x.T.flatten()
v17 = relu(x[::2, 1::2])
v18 = x.narrow(0, 1, 3) @ x.T.narrow(1, 0, 5)
v19 = x.reshape(4, 12)[:, 5:] * x.reshape(4, 12)[:, :7]
v20 = x[:1].expand_as(x) + x
v21 = x[2] @ x.T
v22 = x.detach() + x.contiguous()
v23 = x.to({dt}) * 2
v24 = swapaxes(x, 0, 1)[1:3].abs()
s1, s2, s3 = x.split([2, 4, 2], dim = 1)
v25 = s2 - 1 + s3.sum(dim = 1, keepdim = true)
v26 = x.view(-1)[3:40:5] * 2
"""

VIEW_3D = """
input y : {dt}[2, 3, 4]
w1 = y.permute(2, 0, 1) * 2
w2 = y.transpose(0, 2).sum(dim = 0)
w3 = y.mT @ y
w4 = y[:, 1] + y[:, :, 0].T.T[:, 1:2]
w5 = y.select(2, -1) * y.select(1, 0)[:, :3]
w6 = y.diagonal(0, 1, 2) + 1
w7 = y.diagonal(dim1 = 0, dim2 = 2).sum()
w8 = y.flatten(1) - y.reshape(2, 12)
w9 = y.permute(1, 2, 0).flatten() * 1
w10 = y[..., None] * y[:, None, :, :, None]
w11 = y.unsqueeze(0).expand(3, 2, 3, 4).sum(dim = 0)
w12 = y.squeeze() + y.unflatten(-1, [2, 2]).flatten(-2)
w13 = y.transpose(1, 2).softmax(dim = -1)
w14 = y[1:, ::2, 1::2] * y[:1, 1:, 2:]
w15 = y.mT.amax(dim = 1)
h1, h2 = y.chunk(2, dim = -1)
w16 = h2 @ y.transpose(1, 2)[:, :2]
"""


def view_cases(Case):
    out = []
    for dt in ("f32", "f64", "f16", "bf16", "i32", "i8"):
        out.append(Case("views2d_%s" % dt, VIEW_2D.replace("{dt}", dt), tol="reduction",
                        inputs={"x": "small"}, prune=True, asan=dt in ("f32", "i32"), group="views"))
        out.append(Case("views3d_%s" % dt, VIEW_3D.replace("{dt}", dt), tol="reduction",
                        inputs={"y": "small"}, prune=True, asan=dt in ("f32", "f16"), group="views"))
    return out


# --------------------------------------------------------------------------
# Fused elementwise chains
# --------------------------------------------------------------------------

CHAINS = [
    ("chain8", """
input x : {dt}[16, 33]
output y = ((x * 2 + 1).tanh() - x.sigmoid()) * x.abs().sqrt() + exp(-x * x)
""", "chain"),
    ("chain16", """
input x : {dt}[7, 65]
input z : {dt}[7, 65]
t = (x * 0.5 - z).abs() + 1
u = log(t) * z + sin(x) * cos(z)
v = u.clamp(min = -1) - minimum(x, z) / t
output y = (v * v + relu(x) - gelu(z)).clamp(-3, 3) * sigmoid(t)
""", "chain"),
    ("chain_bcast", """
input x : {dt}[8, 1, 16]
input b : {dt}[5, 1]
input c : {dt}[16]
input s : {dt}[]
output y = relu(x * c + b) - (x - c).abs() * 0.5 + s
output z = tanh(b * s) * c
""", "chain"),
    ("chain_reduce", """
input x : {dt}[6, 40]
e = exp(x - x.amax(dim = -1, keepdim = true))
output sm = e / e.sum(dim = -1, keepdim = true)
output ls = (x * x + 1).log().sum(dim = -1)
output mx = (x.abs() * 2 - 1).amax(dim = 0)
output mn = (x * 3).mean()
""", "chain"),
    ("chain_multi_consumer", """
input x : {dt}[9, 10]
t = x * 3 + 1
a = t + 1
b = t * t
output a
output b
output s = (a - b).sum(dim = 1)
output t
""", "chain"),
    ("chain_into_matmul", """
input x : {dt}[5, 12]
param w : {dt}[12, 7]
param b : {dt}[7]
h = (x.tanh() * 2) @ w
output y = gelu(h + b) * 0.5
output z = linear(relu(x - 0.1), w.T, b).softmax(dim = -1)
""", "chain"),
    ("chain_manual_ln", """
input x : {dt}[4, 32]
m = x.mean(-1, keepdim = true)
d = x - m
output y = d / sqrt((d ** 2).mean(-1, keepdim = true) + 1e-5)
output r = x * rsqrt(x.pow(2).mean(-1, keepdim = true) + 1e-6)
""", "chain"),
    ("chain_where", """
input x : {dt}[6, 17]
output y = where((x * 2).abs() > 1, x.exp(), -x) * 0.5
output z = (x > 0) & (x < 1)
output w = masked_fill(x * x, x < -0.5, 0.25) + x
""", "chain"),
    ("chain_large", """
input x : {dt}[64, 1000]
input b : {dt}[1000]
output y = (x * b + 0.5).tanh() * x - b
output s = (x * x).sum(dim = -1)
""", "chain"),
    ("chain_act", """
input x : {dt}[9, 31]
input b : {dt}[31]
t = hardswish(x * 2 + b) - mish(x) * leaky_relu(b, negative_slope = 0.2)
u = elu(t, alpha = 0.7) + softplus(x - b, beta = 2, threshold = 3)
output y = relu6(u * 4) - hardtanh(t, -0.5, 0.5) * hardsigmoid(b)
output z = (softplus(x) * hardsigmoid(x)).sum(dim = -1)
""", "chain"),
    ("chain_views_between", """
input x : {dt}[8, 12]
t = (x * 2).T
u = t[1:7] + 1
v = u.reshape(2, 3, 8).permute(2, 0, 1)
output y = exp(v * 0.1) - v.abs()
output z = (x.T * 3)[::2].sum(dim = 0)
""", "chain"),
]


def chain_cases(Case):
    out = []
    for name, body, tol in CHAINS:
        for dt in ("f32", "f64", "f16", "bf16"):
            if name == "chain_large" and dt in ("f64", "bf16"):
                continue
            out.append(Case("%s_%s" % (name, dt), body.replace("{dt}", dt), tol=tol,
                            add_outputs=False, asan=dt == "f32", group="chain"))
    out.append(Case("chain_int", """
input a : i32[5, 9]
input b : i32[5, 9]
input c : i8[9]
output y = (a * 3 + b) % 7 - (a // 2) * c + abs(b - c)
output z = maximum(a, b * c).clamp(-10, 10) * (a > b)
output w = ((a + c) * (b - 1)).sum(dim = -1)
""", inputs={"a": "small", "b": "small", "c": "small"}, add_outputs=False, asan=True,
        group="chain"))
    out.append(Case("chain_mixed_dtype", """
input x : f16[6, 10]
input i : i32[6, 10]
input m : bool[6, 10]
t = (x.to(f32) * 3).exp()
output y = (t / (t + 1)).to(f16) + x
output z = (x * i + m) * 0.5
output w = where(m, x, i).to(bf16) * 2
""", inputs={"i": "small"}, tol="chain", add_outputs=False, asan=True, group="chain"))
    return out


# --------------------------------------------------------------------------
# NaN and inf semantics
# --------------------------------------------------------------------------

NAN_BODY = """
input x : {dt}[4, 6]
input y : {dt}[4, 6]
input s : {dt}[3, 5]
input m : bool[3, 5]
n1 = maximum(x, y)
n2 = minimum(x, y)
n3 = relu(x)
n4 = clamp(x, -1, 1)
n5 = x.amax(dim = 1)
n6 = x.amin(dim = 0)
n7 = x.sum(dim = 1)
n8 = x == x
n9 = x != x
n10 = where(x != x, 0.0, x)
n11 = x.masked_fill(x != x, 0)
n12 = exp(x)
n13 = sigmoid(x)
n14 = tanh(x)
n15 = x > 0
n16 = softmax(where(m, s, -inf), dim = -1)
n17 = log(y)
n18 = sqrt(y)
n19 = y / zeros_like(y)
n20 = x.max()
n21 = x * 0
n22 = abs(x)
n23 = x.argmax(dim = 1)
v, i = x.max(dim = 1)
n24 = x.prod(dim = 1)
n25 = x.mean(dim = 0)
n26 = x ** 0
n27 = (y.abs() * -1 - 0.5) ** 0.5
n28 = x.amin()
n29 = x.argmin(dim = 0)
n30 = hardswish(x)
n31 = hardsigmoid(x)
n32 = leaky_relu(x, 0.1)
n33 = elu(x)
n34 = softplus(x)
n35 = mish(x)
n36 = hardtanh(x)
n37 = relu6(x)
n38 = softplus(x, beta = 2, threshold = 1)
n39 = xlogy(x, y)
n40 = xlogy(y, x)
n41 = xlogy(x * 0, y)
n42 = xlogy(zeros_like(x), x)
"""


def nan_cases(Case):
    out = []
    for dt in ("f32", "f64", "f16"):
        out.append(Case("nan_inf_%s" % dt, NAN_BODY.replace("{dt}", dt),
                        inputs={"x": "nan", "y": "randn", "s": "randn", "m": "bool:0.6"},
                        tol="transcendental", asan=dt == "f32", group="nan"))
    return out


# --------------------------------------------------------------------------
# Activations (torch.nn.functional's): every float dtype. Not a dtype sweep:
# PyTorch 1.13 takes integer tensors for hardtanh/relu6 (not u8 with
# negative limits, not bool) with messages the sweep pruning does not know,
# so those are separate cases (act_int_*); the other activations take
# floating tensors only (tests/errors/cases/*_of_int.tg). f16 (no CPU
# kernel in 1.13) is referenced in f32, rounded once (diff.py).
# --------------------------------------------------------------------------

ACT_BODY = """
input x : {dt}[6, 13]
input w : {dt}[4, 9]
a_hsw = hardswish(x)
a_hsig = hardsigmoid(x)
a_lrelu = leaky_relu(x)
a_lrelu2 = leaky_relu(x, negative_slope = 0.2)
a_lrelu3 = leaky_relu(x, -1.5)
a_elu = elu(x)
a_elu2 = elu(x, alpha = 0.3)
a_sp = softplus(x)
a_sp2 = softplus(x, beta = 2, threshold = 5)
a_sp3 = softplus(x, 0.5, 1)
a_sp4 = softplus(w)
a_mish = mish(x)
a_mish2 = mish(w)
a_ht = hardtanh(x)
a_ht2 = hardtanh(x, min_val = -0.5, max_val = 2.0)
a_ht3 = hardtanh(x, -2, max_val = 3)
a_ht4 = hardtanh(x, 1.5, 0.5)
a_r6 = relu6(x)
a_r6w = relu6(w)
a_hsw_w = hardswish(w)
"""

# The kinks, thresholds and the ends of exp's range, at every dtype.
ACT_EDGES = ("vals:-inf,inf,nan,-3,3,-1.5,0,-0,6,6.5,-6,20,20.5,19.5,2.5,2.75,-104,-105,-90,89,"
             "90,1e-6,-1e-6,-1e-30,1e-40,-88,-20,-1.1924,1,-1,0.5,-0.5,2,-2,5,-5")


# hardtanh and relu6 of integer tensors: the bounds truncated toward zero
# (-1.7 -> -1, 5.9 -> 5); u8 only with a lower bound that truncates to 0.
ACT_INT_BODY = """
input x : {dt}[5, 7]
a_ht = hardtanh(x, -1.7, 5.9)
a_ht2 = hardtanh(x, min_val = -0.5, max_val = 2)
a_r6 = relu6(x)
a_r6b = relu6(x * 2 + 1)
"""


def activation_cases(Case):
    out = []
    for dt in ("i64", "i32", "i16", "i8"):
        out.append(Case("act_int_%s" % dt, ACT_INT_BODY.replace("{dt}", dt),
                        inputs={"x": "ints:-9:12"}, tol="exact", asan=dt == "i32",
                        group="act"))
    out.append(Case("act_int_u8", """
input x : u8[5, 7]
a_ht = hardtanh(x, -0.5, 5.9)
a_r6 = relu6(x)
""", inputs={"x": "ints:0:12"}, tol="exact", group="act"))
    for dt in FLOATS:
        out.append(Case("act_%s" % dt, ACT_BODY.replace("{dt}", dt),
                        inputs={"x": "randn:3", "w": "wide"}, tol="transcendental",
                        asan=dt in ("f32", "bf16"), group="act"))
        out.append(Case("act_edges_%s" % dt, ACT_BODY.replace("{dt}", dt),
                        inputs={"x": ACT_EDGES, "w": ACT_EDGES}, tol="transcendental",
                        asan=dt == "f16", group="act"))
    return out


# --------------------------------------------------------------------------
# Creation without dtype, initialisers, symbolic dimensions
# --------------------------------------------------------------------------

def misc_cases(Case):
    out = []
    out.append(Case("creation_default_dtypes", """
input x : f32[2, 3]
c1 = zeros([2, 3])
c2 = ones([4])
c3 = full([2, 3], 1.5)
c4 = full([2], 7)
c5 = full([2], true)
c6 = arange(5)
c7 = arange(0, 1, 0.25)
c8 = arange(2, 11, 3)
c9 = eye(3)
c10 = tensor([[1, 2], [3, 4]])
c11 = tensor([1.5, -2.0])
c12 = tensor([true, false])
c13 = arange(-3, 3) * 0.5 + x[0, 0]
c14 = full_like(x, 0.5)
c15 = eye(4, dtype = i32)
c16 = x + arange(3)
c17 = zeros([0, 3]).sum(dim = 0)
c18 = arange(1.5, 4.0)
""", tol="exact", asan=True, group="misc"))
    out.append(Case("outputs_aliasing", """
input x : f32[3, 4]
param p : f32[4]
a = x * 2
unused = x.exp()
output a
output b = a.T
output c = x[1:]
output d = x
output e = a
output f = x.view(12)
output g = a[:, 1]
output h = p
output k = p.expand(2, 4)
""", add_outputs=False, tol="exact", asan=True, group="misc"))
    out.append(Case("no_inputs", """
output a = arange(6).view(2, 3) * 2
output b = eye(3) + ones([3, 3])
output c = full([2, 2], -inf)
output d = full([3], nan)
output e = tensor([[1, 2.5], [-3, 4]])
output f = zeros([4], dtype = i8) - 1
""", add_outputs=False, tol="exact", asan=True, group="misc"))
    out.append(Case("creation_float_arange", """
input x : f32[10]
a = arange(0, 1, 0.1)
b = arange(5, 0, -1)
c = arange(1, 0, -0.25)
d = arange(-2.5, 2.5, 0.7)
e = x + arange(0.0, 10.0)
f = arange(0, 3, 0.5, dtype = f64)
""", tol="default", group="misc"))
    out.append(Case("zero_size", """
input e : f32[0, 4]
input x : f32[3, 4]
o1 = e * 2
o2 = e.sum(dim = 0)
o3 = e.amax(dim = 1)
o4 = cat([e, x])
o5 = e.mean(dim = 0)
o6 = e.T @ e
o7 = e.prod(dim = 0)
o8 = x[2:2] + 1
o9 = x[:, 4:].sum(dim = 1)
""", tol="exact", group="misc"))
    out.append(Case("edge_sizes", """
input x : f32[1, 5, 1]
input v : f32[1]
o1 = x.softmax(dim = 0)
o2 = x.sum(dim = [0, 2])
o3 = x.squeeze() @ x.squeeze()
o4 = x.var(dim = 0)
o5 = x.std(dim = 1)
o6 = x.expand(3, 5, 4) * 2
o7 = x.argmax(dim = 0)
o8 = v @ v
o9 = x.log_softmax(dim = -1)
o10 = x.amax(dim = [0, 1, 2])
""", tol="reduction", asan=True, group="misc"))
    out.append(Case("int_wrap", """
input a : i8[12]
input d : i8[12]
input u : u8[12]
input s : i16[12]
o1 = a + a
o2 = a * a
o3 = a // d
o4 = a % d
o5 = abs(a)
o6 = -a
o7 = u - u.flip(0)
o8 = u * u
o9 = s * s * s
o10 = a.sum()
o11 = (a * 3).to(u8)
""", inputs={"a": "vals:-128,127,-1,0,100,-100,64,-64,3,-3,50,-77",
                "d": "vals:-1,1,-1,3,-7,2,-2,5,-5,1,-1,7", "u": "ints:0:255",
                "s": "ints:-2000:2000"},
        tol="exact", asan=True, group="misc"))
    deep = ["input x : f32[13, 17]", "v0 = x"]
    for i in range(1, 61):
        op = ["v%d * 0.9 + sin(v%d) * 0.1", "tanh(v%d) + v%d * 0.5",
              "v%d - sigmoid(v%d) * 0.25"][i % 3]
        deep.append(("v%d = " % i) + op % (i - 1, i - 1))
    deep.append("output y = v60")
    out.append(Case("chain_deep", "\n".join(deep) + "\n", tol="chain", add_outputs=False,
                    asan=True, group="chain"))
    out.append(Case("initialisers", """
param a : f32[2, 3] = zeros
param b : f32[3] = ones
param c : f32[2, 3] = full(0.5)
param d : f32[2, 3] = arange
param e : i32[4] = arange
param f : f16[3] = full(1.5)
param g : bf16[2, 2] = arange
param h : i64[2] = full(7)
param k : f64[3] = full(-2.25)
param z : u8[3] = ones
input x : f32[2, 3]
o1 = x * a + b
o2 = c + d
o3 = e * 2
o4 = f * 2
o5 = g + 1
o6 = h + 1
o7 = k * x
o8 = z + z
""", weights="init", tol="exact", asan=True, group="misc"))
    # torch.full converts toward zero for integers and to True for any
    # nonzero bool (the runtime rounded to nearest: 2.7 gave 3, 0.4 False).
    out.append(Case("initialisers_full_convert", """
param a : i32[3] = full(2.7)
param b : i64[3] = full(-2.7)
param c : u8[2] = full(2.5)
param m : bool[2] = full(0.4)
param h : i16[2] = full(-0.9)
input x : i32[3]
o1 = x + a
o2 = b * 1
o3 = c * 1
o4 = m & m
o5 = h * 1
""", weights="init", tol="exact", asan=True, group="misc"))
    out.append(Case("initialisers_random_finite", """
param r : f32[3, 4] = randn(std = 0.5, seed = 3)
param u : f32[4] = uniform(low = -1.0, high = 1.0, seed = 2)
param r16 : f16[8] = randn(seed = 1)
input x : f32[3, 4]
output y = x @ r.T + 1
output z = u * 2
output w = r16 + 1
""", weights="init", check="finite", add_outputs=False, asan=True, group="misc"))
    out.append(Case("initialiser_overridden_by_file", """
param a : f32[2, 3] = zeros
param r : f32[3] = randn(seed = 4)
input x : f32[2, 3]
output y = x * a + r
""", weights="file", add_outputs=False, group="misc"))
    src_sym = """
graph sym(n = 4, m = 6)
input x : f32[n, m]
input v : f32[m]
a = x.view(n * m)
b = x.reshape(m, n).sum(dim = 0)
c = x @ v
d = x.view(n, m / 2, 2).amax(dim = -1)
e = zeros([n, 2]) + x[:, :2]
f = arange(0, n) * 2
"""
    out.append(Case("symbolic_dims_default", src_sym, tol="reduction", asan=True, group="misc"))
    out.append(Case("symbolic_dims_D", src_sym, defines={"n": 3, "m": 10}, tol="reduction",
                    group="misc"))
    out.append(Case("scalar_graph", """
input a : f32[]
input b : i64[]
o1 = a * 2 + b
o2 = (a > 0) | (b > 1)
o3 = a.exp()
o4 = b // 2
o5 = stack([a, a + 1])
o6 = a[None].expand(3)
o7 = a.sum()
o8 = b.to(f16)
""", inputs={"b": "pos"}, asan=True, group="misc"))
    out.append(Case("bool_logic", """
input m : bool[4, 5]
input n : bool[4, 5]
input x : f32[4, 5]
b1 = ~m
b2 = m & n
b3 = m | n
b4 = ~(m & n) | (x > 0)
b5 = (m | n) & ~n
b6 = m == n
b7 = m.sum(dim = 1)
b8 = where(m & n, x, -x)
b9 = logical_not(m) & (x < 0.5)
""", tol="exact", asan=True, group="misc"))
    out.append(Case("large_reductions", """
input x : f32[33, 1031]
input h : f16[4, 4096]
r1 = x.sum()
r2 = x.sum(dim = 0)
r3 = x.mean(dim = 1)
r4 = x.var(dim = 1)
r5 = x.logsumexp(dim = 1)
r6 = h.sum(dim = -1)
r7 = softmax(x, dim = -1)
r8 = layer_norm(x, [1031])
r9 = x.amax(dim = 0)
r10 = x.argmax(dim = 1)
r11 = x.T.sum(dim = 1)
r12 = x[:, ::3].amax(dim = 0)
r13 = x.T.softmax(dim = 0)
r14 = x[1::2].mean()
""", tol="long", asan=True, group="misc"))
    out.append(Case("large_matmul", """
input a : f32[70, 300]
input b : f32[300, 90]
input c : f64[3, 40, 50]
input d : bf16[64, 128]
input e : f16[64, 128]
m1 = a @ b
m2 = b.T @ a.T
m3 = c @ c.mT
m4 = d @ d.T
m5 = e @ e.T
m6 = linear(a, b.T)
input i : i64[40, 50]
input j : i32[50, 30]
m7 = i @ i.T
m8 = j.T @ j
""", inputs={"i": "small", "j": "small"}, tol="long", group="misc"))
    # linear of views whose leading dims fold into one product's rows only
    # when the size-1 dims are skipped (ViT's q/k/v projection after
    # transpose(0, 1) of [1, s, d]), fold partly (the innermost evenly
    # strided dims are the rows, the rest batch dims), or not at
    # all; f32, and quantized products take the same path.
    out.append(Case("linear_lead_views", """
input x : f32[1, 37, 24]
input y : f32[3, 5, 1, 4, 24]
input z : f32[6, 24, 5]
param w : f32[40, 24]
param b : f32[40]
l1 = linear(x.transpose(0, 1), w, b)
l2 = linear(y.permute([2, 0, 3, 1, 4]), w)
l3 = linear(y.transpose(0, 1), w, b)
l4 = linear(z.transpose(1, 2), w)
l5 = linear(z.permute([2, 0, 1])[:, :, 3:], w[:, 3:])
l6 = linear(y[:, :, 0].transpose(1, 2), w, b)
""", inputs={"w": "randn:0.2"}, tol="reduction", asan=True, group="misc"))
    return out


# --------------------------------------------------------------------------
# tgc build + the executable: weights by file, embedded, threads 1 and 2
# --------------------------------------------------------------------------

BUILD_MLP = """
graph small_mlp(batch = 8)
input x : f32[batch, 20]
param w1 : f32[32, 20]
param b1 : f32[32]
param w2 : f32[5, 32]
param b2 : f32[5]
h = gelu(linear(x, w1, b1))
output p = softmax(linear(h, w2, b2), dim = -1)
output s = h.sum(dim = 0)
"""

BUILD_MIXED = """
input x : f16[4, 16]
input ids : i64[6]
param t : bf16[10, 16]
param w : f16[16, 16]
param k : i32[6]
e = embedding(ids, t)
output y = (x @ w).tanh()
output z = e.to(f32).sum(dim = -1) + k
output c = layer_norm(x, [16])
"""

BUILD_LARGE = """
input x : f32[256, 512]
param w : f32[512, 384]
output y = relu(x @ w) * 0.5 + x[:, :384]
output s = (x * x).sum(dim = -1)
output a = x.softmax(dim = -1)
"""

# Many small outputs (issue 18, item 8: build time grew with them), around
# the size up to which a kernel runs as one chunk with constant loop bounds
# (4096 elements: codegen/llvm/loops.c) and just above it.
BUILD_MANY_OUTPUTS = """
input x : f32[4]
input y : f32[4097]
input z : f32[64, 64]
output ya = y * 2
output yb = y[:4096] + 1
output zs = z.sum(dim = -1)
output zm = z.softmax(dim = 0)
output zt = z.transpose(0, 1) * 3
""" + "".join("output o%d = x * %d + y[%d:%d]\n" % (i, i, i, i + 4) for i in range(600))


def build_cases(Case):
    out = []
    for mode in ("build", "build-embed", "build-threads"):
        out.append(Case("%s_mlp" % mode.replace("-", "_"), BUILD_MLP, mode=mode,
                        inputs={"w1": "randn:0.2", "w2": "randn:0.2"}, tol="reduction",
                        add_outputs=False, asan=True, group="build"))
        out.append(Case("%s_mixed" % mode.replace("-", "_"), BUILD_MIXED, mode=mode,
                        inputs={"ids": "idx:10", "w": "randn:0.25", "k": "small"},
                        tol="reduction", add_outputs=False, group="build"))
    out.append(Case("build_threads_large", BUILD_LARGE, mode="build-threads",
                    inputs={"w": "randn:0.05"}, tol="long", add_outputs=False, asan=True,
                    group="build"))
    out.append(Case("build_precision_bf16_mlp", BUILD_MLP, mode="build", precision="bf16",
                    inputs={"w1": "randn:0.2", "w2": "randn:0.2"}, add_outputs=False,
                    group="build"))
    out.append(Case("build_many_outputs", BUILD_MANY_OUTPUTS, mode="build", tol="reduction",
                    add_outputs=False, group="build"))
    out.append(Case("build_sym_D", BUILD_MLP, mode="build", defines={"batch": 3},
                    inputs={"w1": "randn:0.2", "w2": "randn:0.2"}, tol="reduction",
                    add_outputs=False, group="build"))
    return out


# --------------------------------------------------------------------------
# The rest of the language a PyTorch user reaches for (issue 17, item 5)
# --------------------------------------------------------------------------

def language_cases(Case):
    out = []
    # math.*, float("-inf") and functions of numbers fold at compile time;
    # the reference evaluates them as Python does (tests/oracle/oracle.py).
    out.append(Case("lang_math_consts", """
graph g(d = 64)
input x : f32[4, 8]
input m : bool[4, 8]
y1 = x / math.sqrt(64)
y2 = x / math.sqrt(d) + math.pi
y3 = masked_fill(x, m, float("-inf"))
y4 = x.masked_fill(m, math.inf).clamp(max = float("inf"))
y5 = x * sqrt(32.0) + exp(1.0) - log(2.0)
y6 = x * math.exp(0.5) + math.log(10, 2) + math.cos(0.25) - math.sin(1) + math.tanh(0.5)
y7 = x + abs(-3) + min(2, 0.5) + max(1, 2, 3) + int(3.9) + float(2) + int("7")
y8 = masked_fill(x, m, float("nan"))
y9 = x * math.floor(2.5) + math.ceil(0.5) + math.e - math.sqrt(x.size(-1))
y10 = (x * (1 / math.sqrt(x.shape[1]))).softmax(dim = -1)
y11 = where(m, x, -math.inf).softmax(dim = -1)
""", inputs={"m": "bool:0.3"}, tol="transcendental", asan=True, group="misc"))
    # prod over a list of dims and logsumexp over all dims (the spec's
    # reductions; the reference reduces dim by dim, PyTorch 1.13 having neither).
    for dt in ("f32", "f64", "i32"):
        out.append(Case("lang_reduce_lists_%s" % dt, """
input x : {dt}[4, 5, 6]
input s : {dt}[3, 2]
p1 = x.prod(dim = [0, 2])
p2 = prod(x, dim = [2, -3], keepdim = true)
p3 = x.prod(dim = [1])
p4 = s.prod(dim = [0, 1])
""".replace("{dt}", dt) + ("""
l1 = x.logsumexp()
l2 = logsumexp(x, keepdim = true)
l3 = s.logsumexp()
""" if dt != "i32" else ""), inputs={"x": "pm1", "s": "pm1"}, tol="reduction",
                        asan=dt == "f32", group="misc"))
    # all/any over a list of dims (the spec's reductions; PyTorch 1.13 takes
    # one dim, so the reference reduces dim by dim).
    for dt in ("bool", "f32", "u8"):
        out.append(Case("lang_all_any_dims_%s" % dt, """
input x : {dt}[4, 5, 6]
a1 = x.all(dim = [0, 2])
a2 = all(x, dim = [2, -3], keepdim = true)
a3 = x.any(dim = [1])
a4 = any(x, dim = [0, 1, 2])
a5 = (x > 0.5).all(dim = [1, 2])
a6 = x.any(dim = 1)
""".replace("{dt}", dt), inputs={"x": "bool:0.9" if dt == "bool" else "ints:0:1"},
                        tol="exact", asan=dt == "bool", group="misc"))
    # repeat_interleave: an integer repeats, with and without dim; composed of
    # unsqueeze -> expand -> reshape (a copy), at every dtype.
    for dt in ("f32", "f16", "i64", "bool"):
        out.append(Case("lang_repeat_interleave_%s" % dt, """
input x : {dt}[3, 4]
input z : {dt}[]
r1 = repeat_interleave(x, 2)
r2 = x.repeat_interleave(3, dim = 1)
r3 = repeat_interleave(x, repeats = 2, dim = -2, output_size = 6)
r4 = x.T.repeat_interleave(2, dim = 0)
r5 = x.repeat_interleave(1, dim = 1) + x
r6 = x.repeat_interleave(0, dim = 0)
r7 = z.repeat_interleave(3)
r8 = x[:, 1:3].repeat_interleave(2, dim = -1)
""".replace("{dt}", dt).replace("r5 = x.repeat_interleave(1, dim = 1) + x\n", "" if dt == "bool" else
                                  "r5 = x.repeat_interleave(1, dim = 1) + x\n"),
                        tol="exact", asan=dt in ("f32", "f16"), group="misc"))
    return out


def cases(Case):
    return (sweep_cases(Case) + cast_cases(Case) + broadcast_cases(Case) + view_cases(Case)
            + chain_cases(Case) + nan_cases(Case) + activation_cases(Case) + misc_cases(Case)
            + build_cases(Case) + language_cases(Case))
