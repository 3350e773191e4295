/* Expressions: each evaluates either to a tensor (an IR value) or to a
 * compile-time constant (an int, float, bool, list, dtype or string), so
 * shapes written as expressions over symbolic dims fold here. */
#include <math.h>
#include <string.h>

#include "frontend/tg/build_const.h"
#include "frontend/tg/build_internal.h"

/* Small enough that the recursion fits the stack under ASan, whose frames are large. */
enum { MAX_EVAL_DEPTH = 256 };

static Ev eval_name(Builder *B, const Ast *n) {
    Binding *b = bld_lookup(B, n->name);
    if (b) {
        if (b->kind == BIND_ERROR) return bld_ev_err();
        Ev r = b->ev;
        r.loc = n->loc;
        return r;
    }
    DType dt = dtype_from_name(n->name);
    if (dt != DT_NONE) return (Ev){.kind = EV_DTYPE, .dt = dt, .loc = n->loc};
    const char *s = bld_suggest(B, n->name, false);
    if (op_lookup(n->name) != OP_COUNT)
        diag_error(B->d, n->loc, "'%s' is an operation, not a value; call it: %s(...)", n->name,
                   n->name);
    else if (module_is_def(B, n->name))
        diag_error(B->d, n->loc, "'%s' is a def, not a value; call it: %s(...)", n->name, n->name);
    else if (s)
        diag_error(B->d, n->loc, "unknown name '%s'; did you mean '%s'?%s", n->name, s,
                   B->call ? module_scope_hint() : "");
    else
        diag_error(B->d, n->loc, "unknown name '%s'%s", n->name,
                   B->call ? module_scope_hint() : "");
    return bld_ev_err();
}

static OpCode binary_op(TokKind k) {
    switch (k) {
    case TK_PLUS: return OP_ADD;
    case TK_MINUS: return OP_SUB;
    case TK_STAR: return OP_MUL;
    case TK_SLASH: return OP_DIV;
    case TK_POW: return OP_POW;
    case TK_PERCENT: return OP_REMAINDER;
    case TK_FLOORDIV: return OP_FLOOR_DIVIDE;
    case TK_AT: return OP_MATMUL;
    case TK_LT: return OP_LT;
    case TK_LE: return OP_LE;
    case TK_GT: return OP_GT;
    case TK_GE: return OP_GE;
    case TK_EQ: return OP_EQ;
    case TK_NE: return OP_NE;
    case TK_AMP: return OP_BITWISE_AND;
    case TK_PIPE: return OP_BITWISE_OR;
    default: return OP_COUNT;
    }
}

static int64_t floordiv_i(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}

/* Folds arithmetic on compile-time numbers, with Python's semantics. */
static Ev fold_numbers(Builder *B, const Ast *n, Ev l, Ev r) {
    Ev out = {.loc = n->loc};
    bool ints = (l.kind == EV_INT || l.kind == EV_BOOL) && (r.kind == EV_INT || r.kind == EV_BOOL);
    double lf = l.kind == EV_FLOAT ? l.f : (double)l.i, rf = r.kind == EV_FLOAT ? r.f : (double)r.i;
    TokKind op = n->op;
    if (op == TK_LT || op == TK_LE || op == TK_GT || op == TK_GE || op == TK_EQ || op == TK_NE) {
        bool v = op == TK_LT   ? lf < rf
                 : op == TK_LE ? lf <= rf
                 : op == TK_GT ? lf > rf
                 : op == TK_GE ? lf >= rf
                 : op == TK_EQ ? lf == rf
                               : lf != rf;
        return (Ev){.kind = EV_BOOL, .i = v, .loc = n->loc};
    }
    if (op == TK_AT || op == TK_AMP || op == TK_PIPE) {
        if (op != TK_AT && l.kind == EV_BOOL && r.kind == EV_BOOL)
            return (Ev){
                .kind = EV_BOOL, .i = op == TK_AMP ? (l.i & r.i) : (l.i | r.i), .loc = n->loc};
        diag_error(B->d, n->name_loc, "'%s' needs tensor operands, found %s and %s",
                   tok_kind_name(op), bld_ev_kind_name(&l), bld_ev_kind_name(&r));
        return bld_ev_err();
    }
    if ((op == TK_SLASH || op == TK_FLOORDIV || op == TK_PERCENT) && rf == 0) {
        diag_error(B->d, n->loc, "division by zero in a constant expression");
        return bld_ev_err();
    }
    if (ints) {
        int64_t a = l.i, b = r.i, v;
        bool of = false;
        switch (op) {
        case TK_PLUS: of = __builtin_add_overflow(a, b, &v); break;
        case TK_MINUS: of = __builtin_sub_overflow(a, b, &v); break;
        case TK_STAR: of = __builtin_mul_overflow(a, b, &v); break;
        case TK_FLOORDIV:
            if (a == INT64_MIN && b == -1)
                of = true;
            else
                v = floordiv_i(a, b);
            break;
        case TK_PERCENT:
            /* Python's sign (the divisor's), from C's remainder: a -
             * floordiv(a, b) * b overflowed near INT64_MIN (found by
             * fuzz_glue: crash-int-mod-overflow.tg). */
            if (a == INT64_MIN && b == -1) {
                v = 0;
                break;
            }
            v = a % b;
            if (v != 0 && ((v < 0) != (b < 0))) v += b;
            break;
        case TK_SLASH:
            if (a == INT64_MIN && b == -1) {
                of = true;
                break;
            }
            if (a % b == 0) {
                v = a / b;
                break;
            }
            out.kind = EV_FLOAT;
            out.f = (double)a / (double)b;
            out.inexact_div = true;
            out.num = a;
            out.den = b;
            return out;
        case TK_POW:
            if (b < 0) {
                out.kind = EV_FLOAT;
                out.f = pow((double)a, (double)b);
                return out;
            }
            v = 1;
            for (int64_t k = 0; k < b && !of; k++)
                of = __builtin_mul_overflow(v, a, &v);
            break;
        default: v = 0;
        }
        if (of) {
            diag_error(B->d, n->loc, "integer overflow in a constant expression");
            return bld_ev_err();
        }
        out.kind = EV_INT;
        out.i = v;
        return out;
    }
    out.kind = EV_FLOAT;
    switch (op) {
    case TK_PLUS: out.f = lf + rf; break;
    case TK_MINUS: out.f = lf - rf; break;
    case TK_STAR: out.f = lf * rf; break;
    case TK_SLASH: out.f = lf / rf; break;
    case TK_FLOORDIV: out.f = floor(lf / rf); break;
    case TK_PERCENT: out.f = lf - floor(lf / rf) * rf; break;
    case TK_POW: out.f = pow(lf, rf); break;
    default: out.f = 0;
    }
    return out;
}

static Ev eval_binary(Builder *B, const Ast *n) {
    Ev l = bld_eval(B, n->lhs), r = bld_eval(B, n->rhs);
    if (l.kind == EV_ERR || r.kind == EV_ERR) return bld_ev_err();
    if (bld_is_number(&l) && bld_is_number(&r)) return fold_numbers(B, n, l, r);
    if ((l.kind == EV_TENSOR || bld_is_number(&l)) && (r.kind == EV_TENSOR || bld_is_number(&r))) {
        Ev pos[2] = {l, r};
        CallArgs ca = {.pos = pos, .npos = 2};
        return bld_call_op(B, binary_op(n->op), n->loc, n->name_loc, &ca);
    }
    const Ev *bad = (l.kind == EV_TENSOR || bld_is_number(&l)) ? &r : &l;
    diag_error(B->d, bad->loc, "operator %s needs tensors or numbers, found %s",
               tok_kind_name(n->op), bld_ev_kind_name(bad));
    return bld_ev_err();
}

static Ev eval_unary(Builder *B, const Ast *n) {
    Ev x = bld_eval(B, n->lhs);
    if (x.kind == EV_ERR) return x;
    if (n->op == TK_MINUS && (x.kind == EV_INT || x.kind == EV_FLOAT)) {
        if (x.kind == EV_INT) {
            if (x.i == INT64_MIN) {
                diag_error(B->d, n->loc, "integer overflow in a constant expression");
                return bld_ev_err();
            }
            x.i = -x.i;
        } else {
            x.f = -x.f;
        }
        x.loc = n->loc;
        return x;
    }
    if (n->op == TK_TILDE && x.kind == EV_BOOL)
        return (Ev){.kind = EV_BOOL, .i = !x.i, .loc = n->loc};
    if (n->op == TK_TILDE && x.kind == EV_INT)
        return (Ev){.kind = EV_INT, .i = ~x.i, .loc = n->loc};
    if (x.kind != EV_TENSOR) {
        diag_error(B->d, x.loc, "operator %s needs a tensor or a number, found %s",
                   tok_kind_name(n->op), bld_ev_kind_name(&x));
        return bld_ev_err();
    }
    return bld_call_simple(B, n->op == TK_MINUS ? OP_NEG : OP_BITWISE_NOT, n->loc, 1, &x);
}

bool bld_eval_list(Builder *B, Ast *const *items, int n, Ev **out) {
    *out = ARENA_ARRAY(B->a, Ev, n ? n : 1);
    bool ok = true;
    for (int i = 0; i < n; i++) {
        (*out)[i] = bld_eval(B, items[i]);
        ok &= (*out)[i].kind != EV_ERR;
    }
    return ok;
}

static bool eval_call_args(Builder *B, const Ast *n, const Ev *self, CallArgs *ca) {
    int extra = self ? 1 : 0;
    ca->npos = n->nitems + extra;
    ca->pos = ARENA_ARRAY(B->a, Ev, ca->npos ? ca->npos : 1);
    bool ok = true;
    if (self) ca->pos[0] = *self;
    for (int i = 0; i < n->nitems; i++) {
        ca->pos[i + extra] = bld_eval(B, n->items[i]);
        ok &= ca->pos[i + extra].kind != EV_ERR;
    }
    ca->nkw = n->nkw;
    ca->kw = (const char **)n->kw_names;
    ca->kw_locs = n->kw_locs;
    ok &= bld_eval_list(B, n->kw_values, n->nkw, &ca->kwv);
    return ok;
}

/* Methods that are not ops: compile-time queries and dtype shorthands. */
static bool eval_special_method(Builder *B, const Ast *n, const Ev *self, Ev *out) {
    static const struct {
        const char *name;
        DType dt;
    } casts[] = {{"float", DT_F32}, {"half", DT_F16}, {"double", DT_F64}, {"bfloat16", DT_BF16},
                 {"long", DT_I64},  {"int", DT_I32},  {"short", DT_I16},  {"bool", DT_BOOL},
                 {"byte", DT_U8},   {"char", DT_I8}};
    Value *t = self->t;
    for (size_t i = 0; i < sizeof casts / sizeof *casts; i++)
        if (!strcmp(n->name, casts[i].name)) {
            if (n->nitems || n->nkw) {
                diag_error(B->d, n->loc, "%s() takes no arguments", n->name);
                *out = bld_ev_err();
                return true;
            }
            Ev args[2] = {*self, {.kind = EV_DTYPE, .dt = casts[i].dt, .loc = n->name_loc}};
            *out = bld_call_simple(B, OP_TO, n->loc, 2, args);
            return true;
        }
    if (!strcmp(n->name, "size") || !strcmp(n->name, "dim") || !strcmp(n->name, "numel")) {
        if (!strcmp(n->name, "size") && n->nitems == 1 && !n->nkw) {
            Ev d = bld_eval(B, n->items[0]);
            if (d.kind == EV_ERR) {
                *out = d;
                return true;
            }
            if (d.kind != EV_INT) {
                diag_error(B->d, d.loc, "size(dim): dim must be an integer, found %s",
                           bld_ev_kind_name(&d));
                *out = bld_ev_err();
                return true;
            }
            if (!norm_dim(&B->ic, d.loc, &d.i, t->ndim)) {
                *out = bld_ev_err();
                return true;
            }
            *out = (Ev){.kind = EV_INT, .i = t->ndim ? t->shape[d.i] : 1, .loc = n->loc};
            return true;
        }
        if (n->nitems || n->nkw) {
            diag_error(B->d, n->loc, "%s() takes no arguments here", n->name);
            *out = bld_ev_err();
            return true;
        }
        if (!strcmp(n->name, "dim"))
            *out = (Ev){.kind = EV_INT, .i = t->ndim, .loc = n->loc};
        else if (!strcmp(n->name, "numel"))
            *out = (Ev){.kind = EV_INT, .i = value_numel(t), .loc = n->loc};
        else {
            Ev *items = ARENA_ARRAY(B->a, Ev, t->ndim ? t->ndim : 1);
            for (int i = 0; i < t->ndim; i++)
                items[i] = (Ev){.kind = EV_INT, .i = t->shape[i], .loc = n->loc};
            *out = (Ev){.kind = EV_LIST, .items = items, .n = t->ndim, .loc = n->loc};
        }
        return true;
    }
    return false;
}

static bool is_module_prefix(Builder *B, const Ast *n) {
    if (n->kind == AST_NAME)
        return !bld_lookup(B, n->name) && (!strcmp(n->name, "torch") || !strcmp(n->name, "F"));
    if (n->kind == AST_ATTR)
        return is_module_prefix(B, n->lhs) &&
               (!strcmp(n->name, "nn") || !strcmp(n->name, "functional"));
    return false;
}

/* ---- compile-time numbers (ir/build_const.c) ---- */

static bool is_math_prefix(Builder *B, const Ast *n) {
    return n->kind == AST_NAME && !strcmp(n->name, "math") && !bld_lookup(B, "math");
}

static ConstVal ev_to_const(const Ev *e) {
    switch (e->kind) {
    case EV_INT: return (ConstVal){.kind = CV_INT, .i = e->i};
    case EV_BOOL: return (ConstVal){.kind = CV_BOOL, .i = e->i};
    case EV_FLOAT: return (ConstVal){.kind = CV_FLOAT, .f = e->f};
    case EV_STR: return (ConstVal){.kind = CV_STR, .s = e->s};
    case EV_TENSOR: return (ConstVal){.kind = CV_TENSOR};
    default: return (ConstVal){.kind = CV_OTHER, .what = bld_ev_kind_name(e)};
    }
}

/* 0: not a compile-time call (nothing evaluated); 1: *out is the result;
 * 2: the arguments are in *ca but the call is the tensor operation. */
static int const_call_hook(Builder *B, const Ast *n, CallArgs *ca, Ev *out) {
    bool math = n->kind == AST_METHOD && is_math_prefix(B, n->lhs);
    if (!math && !(n->kind == AST_CALL && !n->nkw && const_builtin_name(n->name))) return 0;
    if (math && n->nkw) {
        diag_error(B->d, n->kw_locs[0], "math.%s() takes no keyword arguments", n->name);
        *out = bld_ev_err();
        return 1;
    }
    if (!eval_call_args(B, n, NULL, ca)) {
        *out = bld_ev_err();
        return 1;
    }
    ConstVal *cv = ARENA_ARRAY(B->a, ConstVal, ca->npos ? ca->npos : 1), r;
    for (int i = 0; i < ca->npos; i++)
        cv[i] = ev_to_const(&ca->pos[i]);
    char msg[512];
    int bad = -1;
    ConstFold f = math ? const_math_call(n->name, ca->npos, cv, &r, msg, sizeof msg, &bad)
                       : const_builtin_call(n->name, ca->npos, cv, &r, msg, sizeof msg, &bad);
    if (f == CF_NO) return 2;
    if (f == CF_ERR) {
        diag_error(B->d,
                   bad >= 0 && bad < ca->npos ? ca->pos[bad].loc
                   : bad == -2                ? n->name_loc
                                              : n->loc,
                   "%s", msg);
        *out = bld_ev_err();
        return 1;
    }
    *out = r.kind == CV_FLOAT
               ? (Ev){.kind = EV_FLOAT, .f = r.f, .loc = n->loc}
               : (Ev){.kind = r.kind == CV_BOOL ? EV_BOOL : EV_INT, .i = r.i, .loc = n->loc};
    return 1;
}

static Ev eval_call(Builder *B, const Ast *n) {
    const Ev *self = NULL;
    Ev selfv;
    Ev called;
    if (module_call(B, n, &called)) return called; /* a def, or repeat(DEF, ...) */
    CallArgs ca;
    Ev folded;
    int cc = const_call_hook(B, n, &ca, &folded);
    if (cc == 1) return folded;
    /* torch.relu(x), F.softmax(x, dim=-1), torch.nn.functional.gelu(x): the
     * module prefix names no value, so the call is the plain function. */
    if (n->kind == AST_METHOD && is_module_prefix(B, n->lhs)) {
        Ast plain = *n;
        plain.kind = AST_CALL;
        plain.lhs = NULL;
        return eval_call(B, &plain);
    }
    if (n->kind == AST_METHOD) {
        selfv = bld_eval(B, n->lhs);
        if (selfv.kind == EV_ERR) return selfv;
        if (selfv.kind != EV_TENSOR) {
            diag_error(B->d, n->lhs->loc, "methods are called on tensors; this is %s",
                       bld_ev_kind_name(&selfv));
            return bld_ev_err();
        }
        self = &selfv;
        Ev special;
        if (eval_special_method(B, n, self, &special)) return special;
    }
    OpCode op = op_lookup(n->name);
    if (op == OP_COUNT) {
        Binding *b = bld_lookup(B, n->name);
        const char *s = bld_suggest(B, n->name, true);
        if (b && n->kind == AST_CALL)
            diag_error(B->d, n->name_loc, "'%s' is a value, not an operation; it cannot be called",
                       n->name);
        else if (s)
            diag_error(B->d, n->name_loc, "unknown operation '%s'; did you mean '%s'?", n->name, s);
        else
            diag_error(B->d, n->name_loc, "unknown operation '%s'", n->name);
        return bld_ev_err();
    }
    if (cc != 2 && !eval_call_args(B, n, self, &ca)) return bld_ev_err();
    return bld_call_op(B, op, n->loc, n->name_loc, &ca);
}

static Ev eval_attr(Builder *B, const Ast *n) {
    Ev dotted;
    if (module_dotted(B, n, &dotted)) return dotted; /* a dotted param: ln_1.weight */
    double mv;
    if (is_math_prefix(B, n->lhs)) { /* math.pi, math.inf */
        if (const_math_attr(n->name, &mv)) return (Ev){.kind = EV_FLOAT, .f = mv, .loc = n->loc};
        diag_error(B->d, n->name_loc, "module 'math' has no attribute '%s'", n->name);
        return bld_ev_err();
    }
    if (is_module_prefix(B, n->lhs) && dtype_from_name(n->name) != DT_NONE) /* torch.float16 */
        return (Ev){.kind = EV_DTYPE, .dt = dtype_from_name(n->name), .loc = n->loc};
    Ev x = bld_eval(B, n->lhs);
    if (x.kind == EV_ERR) return x;
    if (x.kind != EV_TENSOR) {
        diag_error(B->d, n->lhs->loc, "attribute .%s needs a tensor, found %s", n->name,
                   bld_ev_kind_name(&x));
        return bld_ev_err();
    }
    Value *t = x.t;
    if (!strcmp(n->name, "T")) {
        int64_t perm[TG_MAX_DIMS];
        for (int i = 0; i < t->ndim; i++)
            perm[i] = t->ndim - 1 - i;
        Ev pos[2] = {x, {.kind = EV_LIST, .loc = n->name_loc}};
        Ev *items = ARENA_ARRAY(B->a, Ev, t->ndim ? t->ndim : 1);
        for (int i = 0; i < t->ndim; i++)
            items[i] = (Ev){.kind = EV_INT, .i = perm[i], .loc = n->name_loc};
        pos[1].items = items;
        pos[1].n = t->ndim;
        Ev r = bld_call_simple(B, OP_PERMUTE, n->loc, 2, pos);
        if (r.kind == EV_TENSOR) r.t->label = "T";
        return r;
    }
    if (!strcmp(n->name, "mT")) {
        if (t->ndim < 2) {
            diag_error(
                B->d, n->name_loc,
                "tensor.mT is only supported on matrices or batches of matrices. Got %d-D tensor.",
                t->ndim);
            return bld_ev_err();
        }
        Ev pos[3] = {x,
                     {.kind = EV_INT, .i = -2, .loc = n->name_loc},
                     {.kind = EV_INT, .i = -1, .loc = n->name_loc}};
        Ev r = bld_call_simple(B, OP_TRANSPOSE, n->loc, 3, pos);
        if (r.kind == EV_TENSOR) r.t->label = "mT";
        return r;
    }
    if (!strcmp(n->name, "shape")) {
        Ev *items = ARENA_ARRAY(B->a, Ev, t->ndim ? t->ndim : 1);
        for (int i = 0; i < t->ndim; i++)
            items[i] = (Ev){.kind = EV_INT, .i = t->shape[i], .loc = n->loc};
        return (Ev){.kind = EV_LIST, .items = items, .n = t->ndim, .loc = n->loc};
    }
    if (!strcmp(n->name, "ndim")) return (Ev){.kind = EV_INT, .i = t->ndim, .loc = n->loc};
    if (!strcmp(n->name, "dtype")) return (Ev){.kind = EV_DTYPE, .dt = t->dtype, .loc = n->loc};
    diag_error(B->d, n->name_loc,
               "unknown attribute '.%s' (tensors have .T, .mT, .shape, .ndim, .dtype)", n->name);
    return bld_ev_err();
}

/* x[...]: basic indexing becomes a chain of select/slice/unsqueeze views;
 * one integer tensor index gathers along its dimension (a copy). */
static Ev eval_index(Builder *B, const Ast *n) {
    Ev base = bld_eval(B, n->lhs);
    if (base.kind == EV_ERR) return base;
    Ev *items = ARENA_ARRAY(B->a, Ev, n->nitems ? n->nitems : 1);
    bool items_ok = true;
    for (int k = 0; k < n->nitems; k++) {
        if (n->items[k]->kind == AST_SLICE) {
            items[k] = (Ev){.kind = EV_SLICE, .loc = n->items[k]->loc};
            continue;
        }
        items[k] = bld_eval(B, n->items[k]);
        items_ok &= items[k].kind != EV_ERR;
    }
    if (!items_ok) return bld_ev_err();
    if (base.kind == EV_LIST) { /* x.shape[0] */
        if (n->nitems != 1 || items[0].kind != EV_INT) {
            diag_error(B->d, n->loc, "a list is indexed by one integer");
            return bld_ev_err();
        }
        int64_t i = items[0].i;
        if (i < -base.n || i >= base.n) {
            diag_error(B->d, items[0].loc, "list index %lld out of range for a list of %d",
                       (long long)i, base.n);
            return bld_ev_err();
        }
        return base.items[i < 0 ? i + base.n : i];
    }
    if (base.kind != EV_TENSOR) {
        diag_error(B->d, n->lhs->loc, "only tensors and lists can be indexed; this is %s",
                   bld_ev_kind_name(&base));
        return bld_ev_err();
    }
    int consumed = 0, ellipses = 0;
    for (int k = 0; k < n->nitems; k++) {
        Ev *it = &items[k];
        const Ast *ia = n->items[k];
        if (ia->kind == AST_SLICE) {
            it->kind = EV_SLICE;
            consumed++;
            continue;
        }
        if (it->kind == EV_ELLIPSIS) {
            if (++ellipses > 1) {
                diag_error(B->d, it->loc, "an index can only have a single ellipsis ('...')");
                return bld_ev_err();
            }
            continue;
        }
        if (it->kind == EV_NONE) continue;
        if (it->kind == EV_TENSOR && it->t->dtype == DT_BOOL) {
            diag_error(
                B->d, it->loc,
                "boolean-mask indexing gives a shape that depends on the data, which tgc cannot "
                "compile; use where(mask, x, other) or x.masked_fill(~mask, value) instead");
            return bld_ev_err();
        }
        if (it->kind == EV_INT || it->kind == EV_TENSOR) {
            consumed++;
            continue;
        }
        diag_error(
            B->d, it->loc,
            "an index must be an integer, a slice, None, '...' or an integer tensor; found %s",
            bld_ev_kind_name(it));
        return bld_ev_err();
    }
    Value *x = base.t;
    if (consumed > x->ndim) {
        diag_error(B->d, n->loc, "too many indices for tensor of dimension %d (%d given)", x->ndim,
                   consumed);
        return bld_ev_err();
    }
    Ev cur = base;
    int dim = 0;
    int tensor_dim = -1;
    Ev tensor_ix = {0};
    for (int k = 0; k < n->nitems; k++) {
        Ev *it = &items[k];
        const Ast *ia = n->items[k];
        Ev r;
        if (it->kind == EV_ELLIPSIS) {
            dim += x->ndim - consumed;
            continue;
        }
        if (it->kind == EV_NONE) {
            Ev pos[2] = {cur, {.kind = EV_INT, .i = dim, .loc = it->loc}};
            r = bld_call_simple(B, OP_UNSQUEEZE, n->loc, 2, pos);
            dim++;
        } else if (it->kind == EV_INT) {
            Ev pos[3] = {cur, {.kind = EV_INT, .i = dim, .loc = it->loc}, *it};
            r = bld_call_simple(B, OP_SELECT, n->loc, 3, pos);
            if (r.kind == EV_TENSOR) r.t->label = "index";
        } else if (it->kind == EV_TENSOR) {
            if (tensor_dim >= 0) {
                diag_error(B->d, it->loc,
                           "indexing with more than one tensor is not supported; use gather or "
                           "index_select");
                return bld_ev_err();
            }
            tensor_dim = dim++;
            tensor_ix = *it;
            continue;
        } else {
            Ev pos[5] = {cur, {.kind = EV_INT, .i = dim, .loc = ia->loc}};
            for (int s = 0; s < 3; s++) {
                if (!ia->slice[s]) {
                    pos[2 + s] = (Ev){.kind = s == 2 ? EV_INT : EV_NONE, .i = 1, .loc = ia->loc};
                    continue;
                }
                Ev e = bld_eval(B, ia->slice[s]);
                if (e.kind == EV_ERR) return e;
                if (e.kind != EV_INT && e.kind != EV_NONE) {
                    diag_error(B->d, e.loc, "slice bounds must be integers, found %s",
                               bld_ev_kind_name(&e));
                    return bld_ev_err();
                }
                if (s == 2 && e.kind == EV_INT && e.i <= 0) {
                    diag_error(B->d, e.loc,
                               e.i == 0 ? "slice step cannot be zero"
                                        : "step must be greater than zero (negative steps are not "
                                          "supported; use flip)");
                    return bld_ev_err();
                }
                if (s == 2 && e.kind == EV_NONE) e = (Ev){.kind = EV_INT, .i = 1, .loc = e.loc};
                pos[2 + s] = e;
            }
            r = bld_call_simple(B, OP_SLICE, n->loc, 5, pos);
            if (r.kind == EV_TENSOR) r.t->label = "index";
            dim++;
        }
        if (r.kind == EV_ERR) return r;
        cur = r;
    }
    if (n->nitems == 1 && items[0].kind == EV_ELLIPSIS) { /* x[...] is a view of the whole tensor */
        Ev r = bld_call_simple(B, OP_ALIAS, n->loc, 1, &cur);
        if (r.kind == EV_TENSOR) r.t->label = "index";
        return r;
    }
    if (tensor_dim >= 0) {
        /* Selects before the tensor index removed dims; count the dims left in front of it. */
        int before = 0;
        int d = 0;
        for (int k = 0; k < n->nitems; k++) {
            Ev *it = &items[k];
            if (it->kind == EV_TENSOR) break;
            if (it->kind == EV_ELLIPSIS) {
                before += x->ndim - consumed;
                d += x->ndim - consumed;
            } else if (it->kind == EV_INT) {
                d++;
            } else {
                before++;
                d++;
            }
        }
        Ev pos[3] = {cur, {.kind = EV_INT, .i = before, .loc = tensor_ix.loc}, tensor_ix};
        Ev r = bld_call_simple(B, OP_INDEX, n->loc, 3, pos);
        (void)d;
        return r;
    }
    return cur;
}

static Ev eval_node(Builder *B, const Ast *n);

Ev bld_eval(Builder *B, const Ast *n) {
    if (B->depth >= MAX_EVAL_DEPTH) {
        if (B->too_deep) return bld_ev_err();
        B->too_deep = true;
        diag_error(B->d, n->loc,
                   "expression is too deep (more than %d nested operations); split it into several "
                   "statements",
                   MAX_EVAL_DEPTH);
        return bld_ev_err();
    }
    B->depth++;
    Ev r = eval_node(B, n);
    B->depth--;
    return r;
}

static Ev eval_node(Builder *B, const Ast *n) {
    switch (n->kind) {
    case AST_NAME: return eval_name(B, n);
    case AST_INT: return (Ev){.kind = EV_INT, .i = n->ival, .loc = n->loc};
    case AST_FLOAT: return (Ev){.kind = EV_FLOAT, .f = n->fval, .loc = n->loc};
    case AST_STR: return (Ev){.kind = EV_STR, .s = n->str, .loc = n->loc};
    case AST_BOOL: return (Ev){.kind = EV_BOOL, .i = n->ival, .loc = n->loc};
    case AST_NONE: return (Ev){.kind = EV_NONE, .loc = n->loc};
    case AST_ELLIPSIS: return (Ev){.kind = EV_ELLIPSIS, .loc = n->loc};
    case AST_LIST: {
        Ev r = {.kind = EV_LIST, .loc = n->loc, .n = n->nitems};
        if (!bld_eval_list(B, n->items, n->nitems, &r.items)) return bld_ev_err();
        return r;
    }
    case AST_BINARY: return eval_binary(B, n);
    case AST_UNARY: return eval_unary(B, n);
    case AST_CALL:
    case AST_METHOD: return eval_call(B, n);
    case AST_ATTR: return eval_attr(B, n);
    case AST_INDEX: return eval_index(B, n);
    case AST_SLICE:
        diag_error(B->d, n->loc, "a slice (a:b) is only allowed inside [ ]");
        return bld_ev_err();
    }
    return bld_ev_err();
}
