"""Modules (def blocks, calls with prefix=, repeat, dotted param names) as
diff cases: values computed inside blocks, with the params in the weights
file under their full dotted names (h.0.ln_1.weight), as a PyTorch
state_dict saved as safetensors names them. The oracle evaluator runs each
def call in a scope of its own (tests/oracle/oracle.py)."""

# A small GPT-2-style block, called twice with prefixes and then repeated.
GPT_BLOCK = """
graph gpt_blocks(B = 2, T = 5, D = 8, NH = 2, L = 2)
input x : f32[B, T, D]
param wpe.weight : f32[T, D]
param ln_f.weight : f32[D] = ones
param ln_f.bias : f32[D] = zeros

def Block(x, d, nh):
    param ln_1.weight : f32[d] = ones
    param ln_1.bias : f32[d] = zeros
    param attn.c_attn.weight : f32[3 * d, d]
    param attn.c_attn.bias : f32[3 * d]
    param attn.c_proj.weight : f32[d, d]
    param ln_2.weight : f32[d] = ones
    param ln_2.bias : f32[d] = zeros
    param mlp.c_fc.weight : f32[4 * d, d]
    param mlp.c_proj.weight : f32[d, 4 * d]
    param mlp.c_proj.bias : f32[d]
    b = x.shape[0]
    t = x.shape[1]
    h = layer_norm(x, [d], ln_1.weight, ln_1.bias)
    qkv = linear(h, attn.c_attn.weight, attn.c_attn.bias)
    q, k, v = qkv.split(d, dim=-1)
    q4 = q.view(b, t, nh, d // nh).transpose(1, 2)
    k4 = k.view(b, t, nh, d // nh).transpose(1, 2)
    v4 = v.view(b, t, nh, d // nh).transpose(1, 2)
    att = softmax((q4 @ k4.transpose(-2, -1)) * 0.5, dim=-1)
    y = (att @ v4).transpose(1, 2).reshape(b, t, d)
    x1 = x + linear(y, attn.c_proj.weight)
    h2 = layer_norm(x1, [d], ln_2.weight, ln_2.bias)
    return x1 + linear(gelu(linear(h2, mlp.c_fc.weight)), mlp.c_proj.weight, mlp.c_proj.bias)

x0 = x + wpe.weight
h0 = Block(x0, D, NH, prefix="h.0")
h1 = Block(h0, D, NH, prefix="h.1")
hr = repeat(Block, L, h1, D, NH, prefix="r")
output out = layer_norm(hr, [D], ln_f.weight, ln_f.bias)
"""

# Nested defs, a def without params called without prefix, tuple returns
# through repeat, integer and float arguments.
NESTED = """
graph nested(N = 3, D = 4)
input x : f32[N, D]

def Scale(x, k):
    return x * k

def Pair(x, n, s):
    param w : f32[x.shape[1], x.shape[1]]
    param b : f32[n]
    a = Scale(x, s)
    return tanh(a @ w) + b.view(n, 1), a.sum(dim=-1)

p, q = Pair(x, N, 0.5, prefix="pair")
u, u2 = repeat(Pair, N, p, N, 2.0, prefix="rep")
output r = Scale(u, 3) + q.view(N, 1) + u2.view(N, 1)
"""


def cases(Case):
    out = []
    for mode in ("run", "build"):
        out.append(Case("module_gpt_blocks_%s" % mode, GPT_BLOCK, tol="long", mode=mode,
                        add_outputs=False, asan=(mode == "run"), group="modules"))
    out.append(Case("module_gpt_blocks_small_L", GPT_BLOCK, tol="long", defines={"L": 1, "T": 3},
                    add_outputs=False, group="modules"))
    out.append(Case("module_nested", NESTED, add_outputs=False, asan=True, group="modules"))
    out.append(Case("module_nested_outputs", NESTED, group="modules"))
    return out
