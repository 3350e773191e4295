/* Vector-Jacobian products of the elementwise ops (see vjp.h). The
 * formulas are PyTorch's (tools/autograd/derivatives.yaml and the
 * *_backward kernels), including which side of a kink gets the gradient,
 * so that gradients match torch.autograd's bit for bit where the
 * arithmetic allows. Contributions keep the result's (broadcast) shape:
 * the pass sums them down to each operand. */
#include <math.h>
#include <string.h>

/* C11 has no M_* constants. */
#define SQRT2 1.41421356237309504880
#define TWO_OVER_SQRTPI 1.12837916709551257390
#define SQRT1_2 0.70710678118654752440

#include "ir/infer.h"
#include "ir/vjp.h"

static Value *S(VjpCtx *c, double x) {
    return irb_scalar(&c->b, x);
}
static Value *B(VjpCtx *c, OpCode op, Value *a, Value *b) {
    return irb_binary(&c->b, op, a, b);
}
static Value *U(VjpCtx *c, OpCode op, Value *a) {
    return irb_unary(&c->b, op, a);
}
static Value *mul(VjpCtx *c, Value *a, Value *b) {
    return B(c, OP_MUL, a, b);
}
static Value *where(VjpCtx *c, Value *cond, Value *a, Value *b) {
    Arg args[3] = {irb_t(&c->b, cond), irb_t(&c->b, a), irb_t(&c->b, b)};
    return irb_op(&c->b, OP_WHERE, 3, args);
}
/* g where cond holds, else 0. */
static Value *keep(VjpCtx *c, Value *cond, Value *g) {
    return where(c, cond, g, S(c, 0));
}
static double num_arg(const Value *v, int i, double dflt) {
    const Arg *a = &v->args[i];
    return a->kind == ARG_NUM ? a->f : a->kind == ARG_INT ? (double)a->i : dflt;
}

bool vjp_add_sub(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    double alpha = num_arg(v, 2, 1.0);
    vjp_set(c, v, 0, gx, gy);
    if (vjp_needs(c, v, 1)) {
        double k = v->op == OP_SUB ? -alpha : alpha;
        vjp_set(c, v, 1, gx, k == 1.0 ? gy : mul(c, gy, S(c, k)));
    }
    return true;
}

bool vjp_mul(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    Value *x = IN0(v), *y = v->args[1].t;
    if (vjp_needs(c, v, 0)) vjp_set(c, v, 0, gx, mul(c, gy, y));
    if (vjp_needs(c, v, 1)) vjp_set(c, v, 1, gx, mul(c, gy, x));
    return true;
}

bool vjp_div(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    Value *x = IN0(v), *y = v->args[1].t;
    if (v->args[2].kind == ARG_STR) { /* rounding_mode: zero wherever defined, as in torch */
        if (vjp_needs(c, v, 0)) vjp_set(c, v, 0, gx, vjp_zeros_like(&c->b, v));
        if (vjp_needs(c, v, 1)) vjp_set(c, v, 1, gx, vjp_zeros_like(&c->b, v));
        return true;
    }
    if (vjp_needs(c, v, 0)) vjp_set(c, v, 0, gx, B(c, OP_DIV, gy, y));
    /* -grad * ((self / other) / other) */
    if (vjp_needs(c, v, 1))
        vjp_set(c, v, 1, gx, mul(c, U(c, OP_NEG, gy), B(c, OP_DIV, B(c, OP_DIV, x, y), y)));
    return true;
}

/* derivatives.yaml: self: xlogy(grad, other).masked_fill((self == 0) &
 * (other <= 0), 0); other: grad * self / other. */
bool vjp_xlogy(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    Value *x = IN0(v), *y = v->args[1].t;
    if (vjp_needs(c, v, 0)) {
        Value *zero = B(c, OP_LOGICAL_AND, B(c, OP_EQ, x, S(c, 0)), B(c, OP_LE, y, S(c, 0)));
        vjp_set(c, v, 0, gx, where(c, zero, S(c, 0), B(c, OP_XLOGY, gy, y)));
    }
    if (vjp_needs(c, v, 1)) vjp_set(c, v, 1, gx, B(c, OP_DIV, mul(c, gy, x), y));
    return true;
}

/* A number literal (weak) computes in the dtype of the tensor it meets, so
 * arithmetic on literals alone (exponent - 1, log(base)) is folded here:
 * as a node it would compute in f32 whatever the gradient's dtype. */
static bool literal(const Value *x) {
    return x->op == OP_SCALAR && x->weak;
}

bool vjp_pow(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    Value *x = IN0(v), *e = v->args[1].t;
    if (vjp_needs(c, v, 0)) {
        /* exponent == 0 ? 0 : grad * exponent * self^(exponent - 1) */
        Value *em1 = literal(e) ? S(c, e->scalar - 1) : B(c, OP_SUB, e, S(c, 1));
        Value *d = mul(c, mul(c, gy, e), B(c, OP_POW, x, em1));
        vjp_set(c, v, 0, gx, where(c, B(c, OP_EQ, e, S(c, 0)), S(c, 0), d));
    }
    if (vjp_needs(c, v, 1)) {
        /* grad * (self == 0 && exponent >= 0 ? 0 : result * log(self)) */
        Value *zero = B(c, OP_LOGICAL_AND, B(c, OP_EQ, x, S(c, 0)), B(c, OP_GE, e, S(c, 0)));
        Value *logx = literal(x) ? S(c, log(x->scalar)) : U(c, OP_LOG, x);
        vjp_set(c, v, 1, gx, mul(c, gy, where(c, zero, S(c, 0), mul(c, v, logx))));
    }
    return true;
}

bool vjp_remainder(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    Value *x = IN0(v), *y = v->args[1].t;
    vjp_set(c, v, 0, gx, gy);
    if (vjp_needs(c, v, 1)) {
        Arg a[3] = {
            irb_t(&c->b, x), irb_t(&c->b, y), {.kind = ARG_STR, .s = "floor", .loc = c->b.loc}};
        Value *q = irb_op(&c->b, OP_DIV, 3, a);
        vjp_set(c, v, 1, gx, mul(c, U(c, OP_NEG, gy), q));
    }
    return true;
}

/* maximum: at ties each side gets half; the smaller side nothing. */
bool vjp_min_max(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    Value *x = IN0(v), *y = v->args[1].t;
    Value *shared = where(c, B(c, OP_EQ, x, y), mul(c, gy, S(c, 0.5)), gy);
    OpCode lose_x = v->op == OP_MAXIMUM ? OP_LT : OP_GT;
    OpCode lose_y = v->op == OP_MAXIMUM ? OP_GT : OP_LT;
    if (vjp_needs(c, v, 0)) vjp_set(c, v, 0, gx, where(c, B(c, lose_x, x, y), S(c, 0), shared));
    if (vjp_needs(c, v, 1)) vjp_set(c, v, 1, gx, where(c, B(c, lose_y, x, y), S(c, 0), shared));
    return true;
}

bool vjp_where(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    Value *cond = IN0(v);
    if (vjp_needs(c, v, 1)) vjp_set(c, v, 1, gx, keep(c, cond, gy));
    if (vjp_needs(c, v, 2)) vjp_set(c, v, 2, gx, where(c, cond, S(c, 0), gy));
    return true;
}

bool vjp_masked_fill(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    Value *mask = v->args[1].t;
    if (vjp_needs(c, v, 0)) vjp_set(c, v, 0, gx, where(c, mask, S(c, 0), gy));
    if (vjp_needs(c, v, 2)) vjp_set(c, v, 2, gx, keep(c, mask, gy));
    return true;
}

/* clamp: the gradient passes where min <= x <= max (inclusive). */
bool vjp_clamp(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    Value *x = IN0(v), *in = NULL;
    for (int i = 1; i <= 2; i++) {
        if (v->args[i].kind != ARG_NUM && v->args[i].kind != ARG_INT) continue;
        Value *ok = B(c, i == 1 ? OP_GE : OP_LE, x, S(c, num_arg(v, i, 0)));
        in = in ? B(c, OP_LOGICAL_AND, in, ok) : ok;
    }
    vjp_set(c, v, 0, gx, in ? keep(c, in, gy) : gy);
    return true;
}

/* Ops whose gradient is zero wherever it exists (floor, round, sign...). */
bool vjp_zero(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    (void)gy;
    vjp_set(c, v, 0, gx, vjp_zeros_like(&c->b, IN0(v)));
    return true;
}

static Value *gelu_grad(VjpCtx *c, Value *v, Value *x) {
    const Arg *ap = &v->args[1];
    if (ap->kind == ARG_STR && !strcmp(ap->s, "tanh")) {
        /* ATen's GeluBackward, tanh approximation */
        const double beta = SQRT2 * TWO_OVER_SQRTPI * 0.5, kappa = 0.044715;
        Value *x2 = mul(c, x, x);
        Value *inner = mul(c, S(c, beta), B(c, OP_ADD, x, mul(c, S(c, kappa), mul(c, x2, x))));
        Value *t = U(c, OP_TANH, inner);
        Value *left = mul(c, S(c, 0.5), x);
        Value *right = B(c, OP_ADD, S(c, 1), t);
        Value *dleft = mul(c, S(c, 0.5), right);
        Value *dtanh = B(c, OP_SUB, S(c, 1), mul(c, t, t));
        Value *dinner = mul(c, S(c, beta), B(c, OP_ADD, S(c, 1), mul(c, S(c, 3 * kappa), x2)));
        return B(c, OP_ADD, dleft, mul(c, mul(c, left, dtanh), dinner));
    }
    /* cdf + x * pdf */
    Value *cdf = mul(c, S(c, 0.5), B(c, OP_ADD, S(c, 1), U(c, OP_ERF, mul(c, x, S(c, SQRT1_2)))));
    Value *pdf = mul(c, S(c, 0.5 * TWO_OVER_SQRTPI * SQRT1_2),
                     U(c, OP_EXP, mul(c, S(c, -0.5), mul(c, x, x))));
    return B(c, OP_ADD, cdf, mul(c, x, pdf));
}

bool vjp_unary(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    Value *x = IN0(v), *g = NULL;
    switch (v->op) {
    case OP_NEG: g = U(c, OP_NEG, gy); break;
    case OP_ABS: g = mul(c, gy, U(c, OP_SIGN, x)); break;
    case OP_RELU: g = keep(c, B(c, OP_GT, v, S(c, 0)), gy); break;
    case OP_SQUARE: g = mul(c, mul(c, gy, S(c, 2)), x); break;
    case OP_EXP: g = mul(c, gy, v); break;
    case OP_LOG: g = B(c, OP_DIV, gy, x); break;
    case OP_LOG1P: g = B(c, OP_DIV, gy, B(c, OP_ADD, x, S(c, 1))); break;
    case OP_EXPM1: g = mul(c, gy, B(c, OP_ADD, v, S(c, 1))); break;
    case OP_SQRT: g = B(c, OP_DIV, gy, mul(c, S(c, 2), v)); break;
    case OP_RSQRT: g = mul(c, mul(c, S(c, -0.5), gy), mul(c, mul(c, v, v), v)); break;
    case OP_RECIPROCAL: g = mul(c, U(c, OP_NEG, gy), mul(c, v, v)); break;
    case OP_SIN: g = mul(c, gy, U(c, OP_COS, x)); break;
    case OP_COS: g = mul(c, gy, U(c, OP_NEG, U(c, OP_SIN, x))); break;
    case OP_TANH: g = mul(c, gy, B(c, OP_SUB, S(c, 1), mul(c, v, v))); break;
    case OP_SIGMOID: g = mul(c, mul(c, gy, B(c, OP_SUB, S(c, 1), v)), v); break;
    case OP_ERF:
        g = mul(c, mul(c, S(c, TWO_OVER_SQRTPI), U(c, OP_EXP, U(c, OP_NEG, mul(c, x, x)))), gy);
        break;
    case OP_GELU: g = mul(c, gy, gelu_grad(c, v, x)); break;
    case OP_SILU: {
        Value *s = U(c, OP_SIGMOID, x);
        g = mul(c, mul(c, gy, s), B(c, OP_ADD, S(c, 1), mul(c, x, B(c, OP_SUB, S(c, 1), s))));
        break;
    }
    case OP_HARDSWISH:
        g = where(c, B(c, OP_LT, x, S(c, -3)), S(c, 0),
                  where(c, B(c, OP_LE, x, S(c, 3)),
                        mul(c, gy, B(c, OP_ADD, B(c, OP_DIV, x, S(c, 3)), S(c, 0.5))), gy));
        break;
    case OP_HARDSIGMOID:
        g = keep(c, B(c, OP_LOGICAL_AND, B(c, OP_GT, x, S(c, -3)), B(c, OP_LT, x, S(c, 3))),
                 B(c, OP_DIV, gy, S(c, 6)));
        break;
    case OP_LEAKY_RELU:
        g = where(c, B(c, OP_GT, x, S(c, 0)), gy, mul(c, gy, S(c, num_arg(v, 1, 0.01))));
        break;
    case OP_ELU:
        g = where(c, B(c, OP_GT, x, S(c, 0)), gy,
                  mul(c, gy, mul(c, S(c, num_arg(v, 1, 1.0)), U(c, OP_EXP, x))));
        break;
    case OP_SOFTPLUS: {
        double beta = num_arg(v, 1, 1), threshold = num_arg(v, 2, 20);
        Value *bx = mul(c, x, S(c, beta));
        Value *z = U(c, OP_EXP, bx);
        g = where(c, B(c, OP_GT, bx, S(c, threshold)), gy,
                  B(c, OP_DIV, mul(c, gy, z), B(c, OP_ADD, z, S(c, 1))));
        break;
    }
    case OP_MISH: {
        Arg a[1] = {irb_t(&c->b, x)};
        Value *sp = irb_op(&c->b, OP_SOFTPLUS, 1, a);
        Value *t = U(c, OP_TANH, sp);
        Value *dt = B(c, OP_SUB, S(c, 1), mul(c, t, t));
        g = mul(c, gy, B(c, OP_ADD, t, mul(c, mul(c, x, U(c, OP_SIGMOID, x)), dt)));
        break;
    }
    case OP_HARDTANH:
    case OP_RELU6: {
        double lo = v->op == OP_RELU6 ? 0 : num_arg(v, 1, -1);
        double hi = v->op == OP_RELU6 ? 6 : num_arg(v, 2, 1);
        g = keep(c, B(c, OP_LOGICAL_AND, B(c, OP_GT, x, S(c, lo)), B(c, OP_LT, x, S(c, hi))), gy);
        break;
    }
    default: return vjp_unsupported(c, v, "no gradient rule");
    }
    vjp_set(c, v, 0, gx, g);
    return true;
}
