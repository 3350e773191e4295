"""Hand-written oracle cases. Each source is both the .tg graph and, line by
line, the PyTorch reference (see oracle.py). Every let-bound name is made an
output by the harness, so nothing is dead."""

FIXED = [
    # ---- view ------------------------------------------------------------
    ("view_basic", """
input x : f32[2, 3, 4]
a = x.view(6, 4)
b = x.view(-1)
c = a.view(2, 12)
d = x.view([4, 6])
e = view(x, [3, -1])
f = x.view(2, 3, 4)
"""),
    ("view_size_one_dims", """
input x : f32[1, 4, 1, 3]
a = x.view(4, 3)
b = x.view(1, 12, 1)
c = x[:, 1:3].view(2, 1, 3)
d = x[:, 1:3].view(1, 2, 3, 1)
e = x.view(4, 1, 3, 1)[:, :, 1:]
"""),
    ("view_of_strided", """
input x : f32[4, 6]
t = x.T
a = t.view(6, 2, 2)
b = x[:, 2:].view(2, 2, 4)
c = x[::2].view(2, 3, 2)
d = t.unsqueeze(0).view(1, 6, 4)
"""),
    ("view_invalid_is_error", """
input x : f32[4, 6]
y = x.T.view(24)
"""),
    # ---- reshape / flatten -------------------------------------------------
    ("reshape_copy_vs_view", """
input x : f32[4, 6]
t = x.T
r1 = t.reshape(-1)
r2 = t.reshape(6, 2, 2)
r3 = x[:, :4].reshape(2, 2, 4)
r4 = x[:, :4].reshape(16)
r5 = x[::2].reshape(12)
r6 = x[::2].reshape(2, 3, 2)
r7 = reshape(x, [3, 8])
r8 = t.reshape(6, 4)
"""),
    ("reshape_of_sliced_view", """
input x : f32[2, 3, 4]
a = x[:, 1:].reshape(2, 8)
b = x[:, :, :2].reshape(6, 2)
c = x[:, :, :2].reshape(12)
d = x[1:].reshape(12)
e = x[:, 1].reshape(2, 2, 2)
f = x.permute(1, 0, 2).reshape(3, 8)
"""),
    ("reshape_count_mismatch_is_error", """
input x : f32[4, 6]
y = x.reshape(5, 5)
"""),
    ("flatten", """
input x : f32[2, 3, 4, 5]
input s : f32[]
a = x.flatten()
b = x.flatten(1)
c = x.flatten(0, 1)
d = x.transpose(1, 2).flatten(2)
e = x.transpose(1, 2).flatten(0, 1)
f = x.permute(0, 2, 3, 1).flatten(1, 2)
g = flatten(x, start_dim=-2)
h = s.flatten()
i = x[:, 1].flatten(1)
j = x.flatten(2, 2)
"""),
    # ---- transpose / permute / T / mT ----------------------------------------
    ("transpose_swapaxes", """
input x : f32[2, 3, 4]
a = x.transpose(0, 2)
b = x.transpose(-1, -2)
c = x.swapaxes(0, 1)
d = transpose(x, 1, 1)
e = swapaxes(x, 0, -1)
f = a.transpose(0, 2)
"""),
    ("permute", """
input x : f32[2, 3, 4]
a = x.permute(2, 0, 1)
b = x.permute([1, 2, 0])
c = a.permute(1, 2, 0)
d = x.permute(-1, 0, 1)
e = permute(x, [0, 2, 1])
"""),
    ("T_and_mT", """
input m : f32[3, 5]
input x : f32[2, 3, 5]
a = m.T
b = a.T
c = x.mT
d = c.mT
e = m.mT
f = x[0].T
"""),
    # ---- squeeze / unsqueeze -----------------------------------------------
    ("squeeze_unsqueeze", """
input x : f32[1, 3, 1, 4]
a = x.squeeze()
b = x.squeeze(0)
c = x.squeeze(1)
d = x.squeeze(-2)
e = x.unsqueeze(0)
f = x.unsqueeze(-1)
g = x.unsqueeze(2)
h = squeeze(x, dim=2)
i = unsqueeze(x, dim=4)
"""),
    ("unsqueeze_on_strided", """
input x : f32[4, 6]
t = x.T
a = t.unsqueeze(1)
b = x[:, ::2].unsqueeze(-1)
c = x[1].unsqueeze(0)
d = t.unsqueeze(0)
e = t.unsqueeze(2)
f = x[1:3, 1:5:3].unsqueeze(1)
g = x[:, 2:3].unsqueeze(1).squeeze(2)
"""),
    # ---- expand ------------------------------------------------------------
    ("expand", """
input x : f32[3, 1]
input v : f32[4]
input y : f32[2, 3, 4]
a = x.expand(3, 4)
b = x.expand(2, 3, 5)
c = x.expand(-1, 2)
d = x.expand([2, -1, 4])
e = v.expand(3, 4)
f = e.T
g = x.expand_as(y)
h = expand_as(v, y)
i = x.T.expand(2, 2, 3)
"""),
    ("expand_then_reshape", """
input x : f32[3, 1]
e = x.expand(3, 4)
r1 = e.reshape(12)
r2 = e.reshape(3, 2, 2)
r3 = e.unsqueeze(0).reshape(1, 12)
r4 = e.flatten()
v1 = e.view(3, 2, 2)
r5 = e.reshape(3, 4, 1)
r6 = e.T.reshape(2, 2, 3)
"""),
    ("expand_invalid_is_error", """
input x : f32[3, 2]
y = x.expand(3, 4)
"""),
    # ---- narrow / select -----------------------------------------------------
    ("narrow", """
input x : f32[5, 6]
a = x.narrow(0, 1, 3)
b = x.narrow(1, 2, 4)
c = x.narrow(-1, 0, 1)
d = a.narrow(1, 3, 2)
e = narrow(x, 0, -2, 2)
f = x.T.narrow(0, 5, 1)
g = x.narrow(0, 2, 0)
"""),
    ("narrow_out_of_range_is_error", """
input x : f32[5, 6]
y = x.narrow(0, 3, 5)
"""),
    ("select", """
input x : f32[3, 4, 5]
a = x.select(0, 1)
b = x.select(-1, -1)
c = x.select(1, 2)
d = select(x, 2, 0)
e = a.select(0, 3)
f = e.select(0, 4)
g = x.transpose(0, 2).select(1, -4)
"""),
    ("select_out_of_range_is_error", """
input x : f32[3, 4]
y = x.select(1, 4)
"""),
    # ---- chunk / split (tuple binding) -----------------------------------------
    ("chunk_tuple", """
input x : f32[4, 10]
a, b = x.chunk(2, dim=-1)
c, d = x.chunk(2)
e, f, g = x.chunk(3, dim=1)
p, q, r, s = x.chunk(4, dim=-1)
h1, h2, h3, h4, h5 = x.chunk(6, dim=1)
t1, t2 = chunk(x.T, 2, dim=1)
"""),
    ("chunk_count_mismatch_is_error", """
input x : f32[4, 10]
a, b = x.chunk(3, dim=1)
"""),
    ("split_tuple", """
input x : f32[2, 192]
q, k, v = x.split(64, dim=-1)
a, b = x.split([100, 92], dim=1)
c, d = x.split(1)
e, f, g, h = x.split(50, dim=-1)
i, j = split(x.T, [150, 42])
"""),
    # ---- unflatten / diagonal --------------------------------------------------
    ("unflatten", """
input x : f32[2, 12]
a = x.unflatten(1, [3, 4])
b = x.unflatten(-1, [2, -1, 3])
c = x.T.unflatten(0, [4, 3])
d = unflatten(x, 0, [1, 2])
e = x[:, ::2].unflatten(1, [2, 3])
"""),
    ("diagonal", """
input x : f32[4, 5]
input y : f32[2, 3, 4]
a = x.diagonal()
b = x.diagonal(1)
c = x.diagonal(-2)
d = x.diagonal(offset=2)
e = y.diagonal(0, 1, 2)
f = y.diagonal(1, 0, 2)
g = y.diagonal(offset=-1, dim1=2, dim2=1)
h = x.diagonal(7)
i = diagonal(x.T, 1)
j = y[:, 1:, ::2].diagonal(0, -1, 0)
"""),
    ("diagonal_same_dims_is_error", """
input x : f32[4, 5]
y = x.diagonal(0, 1, 1)
"""),
    # ---- indexing ------------------------------------------------------------
    ("index_ints", """
input x : f32[3, 4, 5]
a = x[0]
b = x[-1]
c = x[1, 2]
d = x[-1, -1, -1]
e = x[:, -2]
f = x[..., 0]
g = x[0, ..., -1]
"""),
    ("index_out_of_range_is_error", """
input x : f32[3, 4]
y = x[3]
"""),
    ("index_slices", """
input x : f32[6, 7]
a = x[1:4]
b = x[::2]
c = x[1::3, ::2]
d = x[:, -3:]
e = x[-100:100]
f = x[5:2]
g = x[2:, 10:]
h = x[:, :-1:4]
i = x[4:100:2, -2:]
j = x[-4:-1:2, 3:-3]
"""),
    ("index_none_ellipsis", """
input x : f32[2, 3, 4]
a = x[None]
b = x[:, None]
c = x[..., None]
d = x[None, ..., None]
e = x[..., 1:, None, 0]
f = x[None, 0, None, ::2]
g = x[...]
h = x[1, None, ..., 2:3]
i = x.T[None, ::2, ..., -1]
"""),
    ("index_tensor_gathers", """
input x : f32[5, 3]
input idx : i64[4]
a = x[idx]
b = a.T
c = x.T[idx.view(2, 2)]
"""),
    ("index_bool_mask_is_error", """
input x : f32[5, 3]
y = x[x > 0]
""", None, "spec_error"),
    # ---- edge cases: empty tensors, size-1 dims, stride 0 ----------------------
    ("empty_views", """
input x : f32[6, 7]
e = x[5:2]
a = e.reshape(0, 14)
b = e.view(7, 0)
c = e.T
d = e.unsqueeze(1)
f = x[:, 3:3].flatten()
g = x.narrow(1, 7, 0)
h = e.expand(2, 0, 7)
i = x[2:2].contiguous()
j = e.view(-1)
k = e.reshape(7, -1)
"""),
    ("empty_view_minus_one_is_error", """
input x : f32[6, 7]
y = x[5:2].view(0, -1)
"""),
    ("contiguous_slices_keep_identity", """
input x : f32[4, 6]
a = x[1:2]
b = a.contiguous()
c = x[1:3].contiguous()
d = x[:, 1:2].contiguous()
e = x[2].contiguous()
f = x[:, 2].contiguous()
g = x[1:2, ::2].contiguous()
h = x.view(4, 1, 6).contiguous()
i = x[None, 1:2, None].contiguous()
"""),
    ("size_one_dim_strides", """
input x : f32[4, 6]
a = x[:, 1:2]
b = a.reshape(4)
c = a.reshape(2, 2)
d = a.view(2, 2, 1)
e = a.T
f = a.T.reshape(4)
g = a.unsqueeze(0).transpose(0, 2)
h = x[1:2].unsqueeze(1)
i = x[1:2].view(6)
j = x[1:2].T.view(1, 6)
k = a.squeeze(1).unsqueeze(1)
"""),
    ("stride_zero_ops", """
input x : f32[3, 1]
input s : f32[]
e = x.expand(3, 5)
a = e.select(1, 2)
b = e[:, 1:4:2]
c = e.T.contiguous()
d = e.diagonal()
f = e.unsqueeze(1).expand(3, 2, 5)
g = f.permute(2, 0, 1).narrow(0, 1, 2)
h = s.expand(2, 3).T
i = h.reshape(6)
j = f.flatten(1)
k = e.contiguous()
"""),
    ("reshape_merges_and_splits", """
input x : f32[2, 3, 4, 5]
p = x.permute(0, 1, 3, 2)
a = p.reshape(6, 5, 4)
b = p.reshape(2, 15, 4)
c = p.reshape(2, 3, 20)
d = x[:, :, 1:3].reshape(6, 2, 5)
e = x[:, :, 1:3].reshape(6, 10)
f = x[..., ::2].reshape(24, 3)
g = x[..., ::2].reshape(2, 3, 4, 3, 1)
h = x.transpose(0, 1).reshape(3, 2, 20)
i = x.transpose(0, 1).reshape(6, 20)
"""),
    ("flatten_unflatten_roundtrip", """
input x : f32[2, 3, 4]
a = x.flatten(1).unflatten(1, [3, 4])
b = x.transpose(1, 2).flatten(0, 1).unflatten(0, [2, 4])
c = x[:, 1:].flatten(1)
d = x[:, :, 1:].flatten(0, 1)
e = x.flatten(0, -1)
"""),
    ("dropout_and_detach_of_views", """
input x : f32[3, 4]
a = dropout(x.T, p=0.0)
b = x[1:].detach().T
c = dropout(x[:, ::2])
d = x.to(f32).to(f32).T
"""),
    ("many_heads_and_merge", """
graph heads(b = 2, s = 8, nh = 4, hd = 8)
input x : f32[b, s, nh * hd * 3]
q, k, v = x.chunk(3, dim=-1)
qh = q.unflatten(-1, [nh, hd]).permute(0, 2, 1, 3)
kt = k.view(b, s, nh, hd).permute(0, 2, 3, 1)
vh = v.reshape(b, s, nh, hd).swapaxes(1, 2)
att = (qh @ kt).softmax(dim=-1)
o = (att @ vh).transpose(1, 2)
m1 = o.flatten(2)
m2 = o.reshape(b * s, nh * hd)
m3 = o.contiguous().view(b, s, -1)
""", {"b": 1, "nh": 2}),
    # ---- compositions ------------------------------------------------------------
    ("views_of_views", """
input x : f32[4, 6, 8]
a = x.transpose(0, 2)
b = a[1:7:2]
c = b.permute(2, 0, 1)
d = c.unsqueeze(1)
e = d.expand(4, 5, 3, 6)
f = e.select(2, -1)
g = f.diagonal(0, 0, 2)
h = g.T[1:, None]
i = b.reshape(3, 2, 3, 4)
j = c.flatten(1)
"""),
    ("contiguous_to_detach_dropout", """
input x : f32[3, 4]
a = x.contiguous()
b = x.to(f32)
c = x.detach()
d = x.T.contiguous()
e = d.contiguous()
f = x.T.to(f32)
g = dropout(x, p=0.1)
h = x.to(f16)
i = x.to(float)
j = x.T.detach()
k = x[:, 1].contiguous()
l = x.T.to(float32).contiguous()
"""),
    ("non_view_ops_are_contiguous", """
input x : f32[3, 4]
t = x.T
a = t + 1
b = t.exp()
c = relu(t)
d = t.sum(0)
e = (t * 2).T
f = t.clone()
g = cat([t, t], dim=0)
h = t.to(f16)
i = where(t > 0, t, 0.0)
j = t.masked_fill(t > 0, 1.0)
k = (t + 1).view(12)
l = (t + 1)[1:]
m = x[:, None].expand(3, 2, 4) * 1
"""),
    ("reductions_and_pairs", """
input x : f32[3, 4, 5]
a, b = x.max(dim=1)
c, d = x.min(dim=-1, keepdim=true)
e = x.sum(dim=[0, 2])
f = x.mean(-1, keepdim=true)
g = x.argmax(dim=0)
h = x.max()
i = x.amax(dim=[1, 2])
j = a.T
k = (x > 0).any(dim=1)
"""),
    ("matmul_shapes", """
input a : f32[2, 3, 4]
input b : f32[4, 5]
input v : f32[4]
c = a @ b
d = a @ v
e = v @ b
f = matmul(a.transpose(1, 2), a)
g = b.T @ b
h = linear(a, b.T)
i = v @ v
"""),
    ("creation_ops", """
input x : f32[2, 3]
m = tril(ones([4, 4]))
mb = m == 0
z = zeros([2, 3], dtype=i64)
r = arange(0, 10, 2)
e = eye(3)
t = tensor([[1, 2], [3, 4]])
f = full([2, 2], 0.5)
zl = zeros_like(x)
ol = ones_like(x, dtype=bf16)
rv = arange(0, 12).view(3, 4).T
"""),
    ("dtypes_of_views", """
input a : f16[2, 3]
input b : i8[3, 4]
input c : bool[4, 2]
input d : bf16[2, 2, 2]
input e : u8[6]
input f : f64[3, 1]
input g : i64[2, 5]
input h : i16[4]
input i : i32[2, 3]
a1 = a.T
b1 = b[1:, ::2]
c1 = c.view(2, 4)
d1 = d.permute(2, 1, 0).reshape(8)
e1 = e.unflatten(0, [2, 3])
f1 = f.expand(3, 4)
g1, g2 = g.chunk(2, dim=1)
h1 = h[None, 1:]
i1 = i.T.contiguous()
c2 = c.T.to(bool)
"""),
    ("zero_dim", """
input s : f32[]
a = s.unsqueeze(0)
b = s.expand(3, 2)
c = s[None, None]
d = s.view(1, 1)
e = s.reshape(-1)
f = s[...]
g = d.squeeze()
h = s.view(-1)
i = s.expand(1)
j = s.expand(2, 1)
k = s.expand(1, 1)
"""),
    ("symbolic_dims_override", """
graph symdims(b = 2, s = 3, h = 4)
input x : f32[b, s, h * 2]
input y : f32[(s + 1) / 2, b * s]
a = x.view(b * s, h * 2)
c = x.view(b, s, 2, h)
d = x.reshape(-1, h)
e = x.expand(3, b, s, h * 2)
f = x.narrow(1, 1, s - 1)
g = y.T.reshape(b, s, (s + 1) / 2)
i = x[:, s - 2]
""", {"b": 3, "s": 5}),
    ("symbolic_dims_default", """
graph symdefault(b = 2, s = 3, h = 4)
input x : f32[b, s, h * 2]
a = x.view(b * s, h * 2)
c = x.view(b, s, 2, h)
f = x.narrow(1, 1, s - 1)
"""),
    ("attention_head_split", """
graph attn(batch = 2, seq = 16)
input  x : f32[batch, seq, 64]
param  w : f32[192, 64]
qkv = linear(x, w)
q, k, v = qkv.split(64, dim=-1)
qh = q.view(batch, seq, 4, 16).transpose(1, 2)
kh = k.view(batch, seq, 4, 16).transpose(1, 2)
vh = v.view(batch, seq, 4, 16).transpose(1, 2)
kt = kh.transpose(-2, -1)
s = qh @ kt * 0.25
mask = tril(ones([seq, seq])) == 0
p = s.masked_fill(mask, -inf).softmax(dim=-1)
o = p @ vh
m = o.transpose(1, 2).reshape(batch, seq, 64)
m2 = o.transpose(1, 2).contiguous().view(batch, seq, 64)
m3 = o.permute(0, 2, 1, 3).flatten(2)
""", {"batch": 3}),
    ("bad_view_in_symbolic", """
graph badsym(n = 4)
input x : f32[n, 6]
y = x.T.view(n * 6)
""", {"n": 2}),
    # ---- modules: def, calls with prefix=, repeat, dotted names ------------
    ("module_block_twice_and_repeat", """
graph module_block_twice_and_repeat(B = 2, D = 4)
input x : f32[B, D]
param wte.weight : f32[D, D]

def Block(x, d):
    param ln.weight : f32[d] = ones
    param ln.bias : f32[d]
    param fc.weight : f32[d, d]
    h = layer_norm(x, [d], ln.weight, ln.bias)
    att = linear(h, fc.weight).view(x.shape[0], 2, d // 2)
    t = att.transpose(0, 1)
    return x + relu(t.transpose(0, 1).reshape(x.shape[0], d))

y0 = x @ wte.weight
y1 = Block(y0, D, prefix="h.0")
y2 = Block(y1, D, prefix="h.1")
y3 = repeat(Block, 3, y2, D, prefix="r")
"""),
    ("module_nested_tuple_anon", """
graph module_nested_tuple_anon(N = 3)
input x : f32[N, 4]

def Scale(x, k):
    s = x * k
    return s

def Pair(x, n):
    param w : f32[4, 4]
    a = Scale(x, 2.0)
    v = a[:, 1:3]
    return a @ w, v.T

p, q = Pair(x, N, prefix="pair")
r = Scale(q, 3)
u, u2 = repeat(Pair, N, x, N, prefix="rep")
"""),
    ("module_repeat_symbolic_count", """
graph module_repeat_symbolic_count(L = 2, D = 6)
input x : f32[3, D]

def Layer(x):
    param fc.weight : f32[x.shape[1], x.shape[1]]
    param fc.bias : f32[x.shape[1]]
    return gelu(linear(x, fc.weight, fc.bias))

y = repeat(Layer, L, x, prefix="layers")
""", {"L": 3}),
]


# One-line graphs PyTorch rejects: tgc must exit 1 on each. (x : f32[4, 6],
# s : f32[] are declared.)
ERROR_LINES = [
    "y = x.view(-1, -1)",
    "y = x.view(5, -1)",
    "y = x.reshape(-1, 5)",
    "y = x.expand(-1, 4, 6)",
    "y = x.expand(4)",
    "y = x.permute(0, 0)",
    "y = x.permute(1)",
    "y = x.transpose(0, 2)",
    "y = x.mT.mT[4]",
    "y = x[1, 2, 3]",
    "y = x[-5]",
    "y = x.select(2, 0)",
    "y = s.select(0, 0)",
    "y = x.narrow(1, -7, 1)",
    "y = x.narrow(0, 0, -1)",
    "y = x.chunk(0)",
    "y = x.split([2, 3], dim=0)",
    "y = x.unflatten(1, [4, -1])",
    "y = x.unflatten(1, [-1, -1])",
    "y = x.diagonal(0, 0, 2)",
    "y = s.diagonal()",
    "y = x.squeeze(2)",
    "y = x.unsqueeze(3)",
    "y = x.flatten(1, 0)",
    "y = x.flatten(0, 2)",
    "y = x.T.view(2, 12)",
    "y = x.expand(2, 4, 6).view(48)",
    "y = x[::2].view(12)",
    "a, b, c = x.split(3, dim=1)",
    "y = x.unsqueeze(0).mT.view(24)",
]


def fixed_cases(Case):
    out = []
    for i, line in enumerate(ERROR_LINES):
        out.append(Case("rejected_%02d_is_error" % i,
                        "input x : f32[4, 6]\ninput s : f32[]\n" + line + "\n",
                        expect="error", group="fixed"))
    for entry in FIXED:
        name, src = entry[0], entry[1]
        defines = entry[2] if len(entry) > 2 else None
        expect = entry[3] if len(entry) > 3 else (
            "error" if name.endswith("_is_error") or name.startswith("bad_") else "ok")
        out.append(Case(name, src, defines, expect, group="fixed"))
    return out
