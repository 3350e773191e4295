"""Dtype promotion: every ordered pair of the 10 dtypes (tensor with tensor,
0-d with dim tensor, 0-d with 0-d), and every dtype with each literal kind.
Each line is tried in PyTorch alone: the accepted lines of a pair form one
graph (dtype and shape of every result are compared, with everything else);
each line PyTorch rejects (e.g. `bool - bool`) becomes its own graph, for
which tgc must exit 1. Lines PyTorch lacks a CPU kernel for are dropped."""

DTYPES = ["f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u8", "bool"]

PAIR_LINES = [
    "r_add = a + b",
    "r_sub = a - b",
    "r_mul = a * b",
    "r_div = a / b",
    "r_lt = a < b",
    "r_eq = a == b",
    "r_where = where(c, a, b)",
    "r_maximum = maximum(a, b)",
    "r_minimum = minimum(a, b)",
    "r_pow = a ** b",
    "r_floordiv = a // b",
    "r_mod = a % b",
    "r_ge = a >= b",
    "r_ne = ne(a, b)",
    "r_add_fn = add(a, b)",
    "z_add = sa + b",
    "z_mul = a * sb",
    "z_both = sa + sb",
    "z_where = where(c, sa, b)",
    "z_where_both = where(c, sa, sb)",
    "z_div = sa / b",
    "z_cmp = a > sb",
]

LITERAL_LINES = [
    "l_int = x + 2",
    "l_float = x * 0.5",
    "l_bool = x + true",
    "l_div = x / 2",
    "l_cmp = x < 1",
    "l_rsub = 2 - x",
    "l_neg = -x",
    "l_pow = x ** 2",
    "l_where = where(c, x, 0.0)",
    "l_ieq = x == 3",
    "l_fdiv = x / 0.5",
    "l_zero_d = sx * 2.5",
    "l_zero_d_int = sx + 1",
    "l_pow_f = x ** 0.5",
    "l_floordiv = x // 2",
    "l_mod = x % 2",
    "l_neg_int = x * -1",
    "l_small = x + 1e-5",
    "l_inf = x + inf",
    "l_false = x * false",
    "l_rdiv = 1 / x",
    "l_clamp = clamp(x, min=0)",
    "l_where_int = where(c, 1, x)",
]


def _split(Case, evaluate, RefError, name, header, lines, group):
    ok, out = [], []
    for line in lines:
        try:
            evaluate("\n".join(header + [line]) + "\n")
            ok.append(line)
        except RefError as e:
            if e.skip:
                continue
            lhs = line.split("=")[0].strip()
            out.append(Case("%s_%s_rejected" % (name, lhs), "\n".join(header + [line]),
                            expect="auto", group=group))
    if ok:
        out.insert(0, Case(name, "\n".join(header + ok), group=group))
    return out


def dtype_cases(Case, evaluate, RefError):
    out = []
    for A in DTYPES:
        for B in DTYPES:
            header = ["input a : %s[2, 3]" % A, "input b : %s[3]" % B,
                      "input sa : %s[]" % A, "input sb : %s[]" % B,
                      "input c : bool[2, 3]"]
            out += _split(Case, evaluate, RefError, "dtype_%s_%s" % (A, B), header,
                          PAIR_LINES, "dtype")
    for X in DTYPES:
        header = ["input x : %s[2, 3]" % X, "input sx : %s[]" % X, "input c : bool[2, 3]"]
        out += _split(Case, evaluate, RefError, "literal_%s" % X, header, LITERAL_LINES, "dtype")
    return out
