/* AST -> IR. Expressions evaluate either to tensors (IR values) or to
 * compile-time constants (ints, floats, bools, lists, dtypes, strings), so
 * shapes written as expressions over symbolic dims fold here. */
#include "frontend/tg/build.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/tg/build_const.h"
#include "frontend/tg/build_internal.h"
#include "frontend/tg/graph_name.h"
#include "ir/infer.h"
#include "ir/lower_loss.h"
#include "ir/lower_nn.h"
#include "ir/lower_sugar.h"

/* Small enough that the recursion fits the stack under ASan, whose frames are large. */
enum { MAX_EVAL_DEPTH = 256 };

static Ev ev_err(void) {
    return (Ev){.kind = EV_ERR};
}

static const char *ev_kind_name(const Ev *e) {
    switch (e->kind) {
    case EV_TENSOR: return "a tensor";
    case EV_INT: return "an integer";
    case EV_FLOAT: return "a float";
    case EV_BOOL: return "a bool";
    case EV_STR: return "a string";
    case EV_NONE: return "None";
    case EV_DTYPE: return "a dtype";
    case EV_LIST: return "a list";
    case EV_TUPLE: return "several values";
    case EV_ELLIPSIS: return "'...'";
    case EV_SLICE: return "a slice";
    default: return "an invalid value";
    }
}

static unsigned hash_name(const char *s) {
    unsigned h = 2166136261u; /* FNV-1a */
    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

/* Names are bound once, so the index maps each name to its one binding. */
static Binding *lookup(Builder *B, const char *name) {
    if (!B->index_cap) return NULL;
    for (unsigned i = hash_name(name) & (unsigned)(B->index_cap - 1);;
         i = (i + 1) & (unsigned)(B->index_cap - 1)) {
        int at = B->index[i];
        if (!at) return NULL;
        if (!strcmp(B->binds[at - 1].name, name)) return &B->binds[at - 1];
    }
}

static void index_insert(Builder *B, int pos) {
    unsigned mask = (unsigned)(B->index_cap - 1);
    for (unsigned i = hash_name(B->binds[pos].name) & mask;; i = (i + 1) & mask)
        if (!B->index[i]) {
            B->index[i] = pos + 1;
            return;
        }
}

static int edit_distance(const char *a, const char *b) {
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 32 || lb > 32) return 99;
    int d[33][33];
    for (int i = 0; i <= la; i++)
        d[i][0] = i;
    for (int j = 0; j <= lb; j++)
        d[0][j] = j;
    for (int i = 1; i <= la; i++)
        for (int j = 1; j <= lb; j++) {
            int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
            d[i][j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
    return d[la][lb];
}

/* A close known name, for "did you mean" hints. */
static const char *suggest(Builder *B, const char *name, bool ops) {
    const char *best = NULL;
    int best_d = (int)strlen(name) <= 3 ? 1 : 2;
    best_d++;
    if (ops) {
        for (int i = 0; i < OP_COUNT; i++) {
            if (op_table[i].flags & OPF_INTERNAL) continue;
            int dist = edit_distance(name, op_table[i].name);
            if (dist < best_d) best_d = dist, best = op_table[i].name;
        }
    } else {
        for (int i = 0; i < B->nbinds; i++) {
            int dist = edit_distance(name, B->binds[i].name);
            if (dist < best_d) best_d = dist, best = B->binds[i].name;
        }
    }
    return best;
}

static void bind(Builder *B, const char *name, SrcLoc loc, BindKind kind, Ev ev) {
    Binding b = {.name = name, .kind = kind, .ev = ev, .loc = loc};
    ARENA_PUSH(B->a, B->binds, B->nbinds, B->cap, b);
    if (2 * B->nbinds > B->index_cap) { /* keep the load under one half */
        B->index_cap = B->index_cap ? B->index_cap * 4 : 64;
        B->index = ARENA_ARRAY(B->a, int, B->index_cap);
        for (int i = 0; i < B->nbinds; i++)
            index_insert(B, i);
    } else {
        index_insert(B, B->nbinds - 1);
    }
}

/* Checks a new name is free; reports the earlier binding otherwise. */
static bool name_free(Builder *B, const char *name, SrcLoc loc) {
    Binding *old = lookup(B, name);
    if (!old) {
        if (dtype_from_name(name) != DT_NONE) {
            diag_error(B->d, loc, "'%s' names a dtype and cannot be bound", name);
            return false;
        }
        return true;
    }
    if (old->kind == BIND_DIM)
        diag_error(B->d, loc, "'%s' is already a dimension of the graph; names are bound once",
                   name);
    else
        diag_error(B->d, loc, "'%s' is already bound; names are bound once (no reassignment)",
                   name);
    if (old->loc.line) diag_note(B->d, old->loc, "'%s' was bound here", name);
    return false;
}

static Value *add_value(Builder *B, Value *v) {
    graph_append(B->g, v);
    return v;
}

static Value *make_scalar(Builder *B, const Ev *e) {
    Value *v = value_new(B->g, OP_SCALAR, e->loc);
    v->weak = true;
    v->ndim = 0;
    if (e->kind == EV_BOOL) {
        v->dtype = DT_BOOL;
        v->scalar = (double)e->i;
        v->scalar_is_int = true;
    } else if (e->kind == EV_INT) {
        v->dtype = DT_I64;
        v->scalar = (double)e->i;
        v->scalar_is_int = true;
    } else {
        v->dtype = DT_F32;
        v->scalar = e->f;
    }
    return add_value(B, v);
}

static Ev eval(Builder *B, const Ast *n);

/* ---- argument binding ------------------------------------------------- */

static bool is_number(const Ev *e) {
    return e->kind == EV_INT || e->kind == EV_FLOAT || e->kind == EV_BOOL;
}

static bool param_error(Builder *B, const Ev *e, const char *opname, const ParamSpec *p,
                        const char *expected) {
    diag_error(B->d, e->loc, "argument '%s' of %s must be %s, found %s", p->name, opname, expected,
               ev_kind_name(e));
    return false;
}

static bool ev_to_ints(Builder *B, const Ev *e, Arg *out, const char *opname, const ParamSpec *p) {
    out->kind = ARG_INTS;
    out->loc = e->loc;
    out->n = e->n;
    out->ints = ARENA_ARRAY(B->a, int64_t, e->n ? e->n : 1);
    for (int i = 0; i < e->n; i++) {
        if (e->items[i].kind != EV_INT)
            return param_error(B, &e->items[i], opname, p, "a list of integers");
        out->ints[i] = e->items[i].i;
    }
    return true;
}

/* Flattens a nested numeric list for tensor(...), checking it is rectangular. */
static bool flatten_data(Builder *B, const Ev *e, Arg *out, int depth, double **buf, int *count,
                         int *cap) {
    if (is_number(e)) {
        if (depth != out->data_ndim) goto ragged;
        double x = e->kind == EV_FLOAT ? e->f : (double)e->i;
        if (e->kind == EV_FLOAT) out->data_has_float = true;
        if (e->kind != EV_BOOL) out->data_has_bool_only = false;
        ARENA_PUSH(B->a, *buf, *count, *cap, x);
        return true;
    }
    if (e->kind != EV_LIST) {
        diag_error(B->d, e->loc,
                   "tensor(): data must be numbers or nested lists of numbers, found %s",
                   ev_kind_name(e));
        return false;
    }
    if (depth >= TG_MAX_DIMS) {
        diag_error(B->d, e->loc, "tensor(): at most %d nesting levels are supported", TG_MAX_DIMS);
        return false;
    }
    if (depth == out->data_ndim) { /* first list at this depth fixes the size */
        out->data_ndim++;
        out->data_shape[depth] = e->n;
    } else if (out->data_shape[depth] != e->n) {
        goto ragged;
    }
    for (int i = 0; i < e->n; i++)
        if (!flatten_data(B, &e->items[i], out, depth + 1, buf, count, cap)) return false;
    return true;
ragged:
    diag_error(
        B->d, e->loc,
        "tensor(): expected a rectangular nested list (sequences of equal lengths at each level)");
    return false;
}

static bool convert_arg(Builder *B, const char *opname, const ParamSpec *p, const Ev *e, Arg *out) {
    out->loc = e->loc;
    if (e->kind == EV_ERR) return false;
    if (e->kind == EV_NONE) {
        if (p->optional) {
            out->kind = ARG_ABSENT;
            return true;
        }
        return param_error(B, e, opname, p, "given (it cannot be None)");
    }
    switch (p->type) {
    case PT_TENSOR:
        if (e->kind == EV_TENSOR) {
            *out = arg_tensor(e->t, e->loc);
            return true;
        }
        if (is_number(e)) {
            *out = arg_tensor(make_scalar(B, e), e->loc);
            return true;
        }
        return param_error(B, e, opname, p, "a tensor or a number");
    case PT_INT:
        if (e->kind == EV_INT) {
            *out = arg_int(e->i, e->loc);
            return true;
        }
        if (e->inexact_div) {
            diag_error(B->d, e->loc,
                       "'/' must divide exactly here: %lld / %lld = %g (use // to round down)",
                       (long long)e->num, (long long)e->den, e->f);
            return false;
        }
        return param_error(B, e, opname, p, "an integer");
    case PT_NUM:
        if (e->kind == EV_INT || e->kind == EV_FLOAT) {
            out->kind = ARG_NUM;
            out->num_is_int = e->kind == EV_INT;
            out->f = e->kind == EV_INT ? (double)e->i : e->f;
            return true;
        }
        if (e->kind == EV_BOOL) {
            out->kind = ARG_BOOL;
            out->i = e->i;
            out->f = (double)e->i;
            return true;
        }
        return param_error(B, e, opname, p, "a number");
    case PT_BOOL:
        if (e->kind == EV_BOOL) {
            out->kind = ARG_BOOL;
            out->i = e->i;
            return true;
        }
        return param_error(B, e, opname, p, "true or false");
    case PT_STR:
        if (e->kind == EV_STR) {
            out->kind = ARG_STR;
            out->s = e->s;
            return true;
        }
        return param_error(B, e, opname, p, "a string");
    case PT_DTYPE:
        if (e->kind == EV_DTYPE) {
            *out = arg_dtype(e->dt, e->loc);
            return true;
        }
        return param_error(B, e, opname, p, "a dtype such as f32");
    case PT_PAD:
        if (e->kind == EV_STR) {
            out->kind = ARG_STR;
            out->s = e->s;
            return true;
        }
        if (e->kind != EV_INT && e->kind != EV_LIST)
            return param_error(B, e, opname, p, "an integer, a list of integers or a string");
        /* fall through */
    case PT_INTS:
        if (e->kind == EV_INT) {
            *out = arg_int(e->i, e->loc);
            out->n = 1;
            out->ints = ARENA_ARRAY(B->a, int64_t, 1);
            out->ints[0] = e->i;
            return true;
        }
        if (e->kind == EV_LIST) return ev_to_ints(B, e, out, opname, p);
        return param_error(B, e, opname, p, "an integer or a list of integers");
    case PT_TENSORS:
        if (e->kind == EV_LIST) {
            out->kind = ARG_TENSORS;
            out->n = e->n;
            out->ts = ARENA_ARRAY(B->a, Value *, e->n ? e->n : 1);
            for (int i = 0; i < e->n; i++) {
                if (e->items[i].kind != EV_TENSOR)
                    return param_error(B, &e->items[i], opname, p, "a list of tensors");
                out->ts[i] = e->items[i].t;
            }
            return true;
        }
        return param_error(B, e, opname, p, "a list of tensors");
    case PT_ANY:
        if (e->kind == EV_TENSOR) {
            *out = arg_tensor(e->t, e->loc);
            return true;
        }
        if (e->kind == EV_INT) {
            *out = arg_int(e->i, e->loc);
            return true;
        }
        if (is_number(e) || e->kind == EV_LIST) {
            out->kind = ARG_ANY_LIST;
            out->data_has_bool_only = true;
            int count = 0, cap = 0;
            double *buf = NULL;
            if (!flatten_data(B, e, out, 0, &buf, &count, &cap)) return false;
            if (count > 1 << 20) {
                diag_error(B->d, e->loc, "tensor(): at most 2^20 literal elements are supported");
                return false;
            }
            out->data = buf;
            out->n = count;
            return true;
        }
        return param_error(B, e, opname, p, "a tensor, an integer or a list");
    }
    return false;
}

static void default_arg(Arena *a, const ParamSpec *p, Arg *out, SrcLoc loc) {
    const char *t = p->default_text;
    out->loc = loc;
    out->kind = ARG_ABSENT;
    if (!p->has_default || !strcmp(t, "None")) return;
    if (!strcmp(t, "true") || !strcmp(t, "false")) {
        out->kind = ARG_BOOL;
        out->i = t[0] == 't';
    } else if (t[0] == '"') { /* "none" in the table: the text between the quotes */
        out->kind = ARG_STR;
        size_t n = strlen(t);
        out->s = arena_strndup(a, t + 1, n >= 2 ? n - 2 : 0);
    } else if (p->type == PT_NUM) {
        out->kind = ARG_NUM;
        out->f = strtod(t, NULL);
        out->num_is_int = !strpbrk(t, ".eE");
    } else {
        out->kind = ARG_INT;
        out->i = strtoll(t, NULL, 10);
        out->n = 1;
    }
}

static char *signature_text(Builder *B, const OpInfo *info) {
    char buf[512];
    int n = snprintf(buf, sizeof buf, "%s(", info->name);
    for (int i = 0; i < info->nparams && n < (int)sizeof buf - 40; i++) {
        const ParamSpec *p = &info->params[i];
        n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%s%s%s%s", i ? ", " : "",
                      p->variadic ? "*" : "", p->name, p->has_default ? "=" : "",
                      p->has_default ? p->default_text : "");
    }
    snprintf(buf + n, sizeof buf - (size_t)n, ")");
    return arena_strdup(B->a, buf);
}

typedef struct CallArgs {
    Ev *pos;
    int npos;
    const char **kw;
    SrcLoc *kw_locs;
    Ev *kwv;
    int nkw;
} CallArgs;

static Ev result_of(Builder *B, Value *v) {
    Ev r = {.kind = EV_TENSOR, .loc = v->loc, .t = v};
    if (v->ntuple) {
        r.kind = EV_TUPLE;
        r.n = v->ntuple;
        r.items = ARENA_ARRAY(B->a, Ev, v->ntuple);
        for (int i = 0; i < v->ntuple; i++) {
            add_value(B, v->tuple[i]);
            r.items[i] = (Ev){.kind = EV_TENSOR, .loc = v->loc, .t = v->tuple[i]};
        }
        return r;
    }
    add_value(B, v);
    return r;
}

/* A convolution's library call reads dense operands: a view operand (a
 * channels-last permute, a cropped slice) goes through contiguous(),
 * which stays a view when its layout already is dense. */
static bool dense_conv_operands(Builder *B, Value *v) {
    for (int i = 0; i < 3; i++) {
        Arg *a = &v->args[i];
        if (a->kind != ARG_TENSOR) continue;
        unsigned f = op_info(a->t->op)->flags;
        if (!(f & (OPF_VIEW | OPF_MAYBE_VIEW))) continue;
        Arg ca[1] = {arg_tensor(a->t, a->loc)};
        Value *c = value_make(&B->ic, OP_CONTIGUOUS, a->loc, 1, ca);
        if (!c) return false;
        add_value(B, c);
        a->t = c;
    }
    value_collect_inputs(B->g, v);
    return true;
}

/* Binds positional and keyword arguments to the op's parameters, converts
 * them, and builds the node. */
static Ev call_op(Builder *B, OpCode op, SrcLoc loc, SrcLoc name_loc, CallArgs *ca) {
    const OpInfo *info = op_info(op);
    Ev *slot[8] = {0};
    Ev *var_items = NULL;
    int nvar = 0, var_param = -1;
    int pi = 0;
    for (int k = 0; k < ca->npos; k++) {
        if (ca->pos[k].kind == EV_ERR) return ev_err();
        while (pi < info->nparams && info->params[pi].variadic && var_param >= 0 && var_param != pi)
            pi++;
        if (pi >= info->nparams) {
            diag_error(B->d, ca->pos[k].loc,
                       "%s takes at most %d positional argument%s, found %d; its signature is %s",
                       info->name, info->nparams, info->nparams == 1 ? "" : "s", ca->npos,
                       signature_text(B, info));
            return ev_err();
        }
        if (info->params[pi].variadic) {
            var_param = pi;
            var_items = &ca->pos[k];
            nvar = ca->npos - k;
            break;
        }
        slot[pi++] = &ca->pos[k];
    }
    for (int k = 0; k < ca->nkw; k++) {
        if (ca->kwv[k].kind == EV_ERR) return ev_err();
        int found = -1;
        for (int i = 0; i < info->nparams; i++)
            if (!strcmp(info->params[i].name, ca->kw[k])) found = i;
        /* torch spells some keywords differently per function; accept the usual aliases. */
        if (found < 0 && !strcmp(ca->kw[k], "dims")) {
            for (int i = 0; i < info->nparams; i++)
                if (!strcmp(info->params[i].name, "dim")) found = i;
        }
        if (found < 0) {
            diag_error(B->d, ca->kw_locs[k],
                       "%s got an unexpected keyword argument '%s'; its signature is %s",
                       info->name, ca->kw[k], signature_text(B, info));
            return ev_err();
        }
        if (slot[found] || found == var_param) {
            diag_error(B->d, ca->kw_locs[k], "%s got multiple values for argument '%s'", info->name,
                       ca->kw[k]);
            return ev_err();
        }
        if (info->params[found].variadic) { /* zeros(size=[2, 3]) */
            var_param = found;
            var_items = &ca->kwv[k];
            nvar = 1;
            continue;
        }
        slot[found] = &ca->kwv[k];
    }
    Value *v = value_new(B->g, op, loc);
    v->nargs = info->nparams;
    v->args = ARENA_ARRAY(B->a, Arg, info->nparams ? info->nparams : 1);
    bool ok = true;
    for (int i = 0; i < info->nparams; i++) {
        const ParamSpec *p = &info->params[i];
        Arg *out = &v->args[i];
        if (p->variadic) {
            if (var_param != i || nvar == 0) {
                if (p->has_default) {
                    default_arg(B->a, p, out, loc);
                    continue;
                }
                diag_error(B->d, name_loc, "%s is missing argument '%s'; its signature is %s",
                           info->name, p->name, signature_text(B, info));
                return ev_err();
            }
            Ev list;
            if (nvar == 1 && (var_items[0].kind == EV_LIST)) {
                list = var_items[0];
            } else {
                list = (Ev){.kind = EV_LIST,
                            .loc = loc_span(var_items[0].loc, var_items[nvar - 1].loc),
                            .items = var_items,
                            .n = nvar};
            }
            if (p->type == PT_INTS && nvar == 1 && var_items[0].kind == EV_INT)
                list = (Ev){.kind = EV_LIST, .loc = var_items[0].loc, .items = var_items, .n = 1};
            ok &= convert_arg(B, info->name, p, &list, out);
            if (ok && p->type == PT_INTS &&
                out->kind == ARG_INT) { /* keep the list form for varargs */
                int64_t one = out->i;
                *out = arg_ints(B->a, &one, 1, out->loc);
            }
            continue;
        }
        if (!slot[i]) {
            if (!p->has_default && !p->optional) {
                diag_error(B->d, name_loc, "%s is missing argument '%s'; its signature is %s",
                           info->name, p->name, signature_text(B, info));
                return ev_err();
            }
            default_arg(B->a, p, out, loc);
            continue;
        }
        ok &= convert_arg(B, info->name, p, slot[i], out);
    }
    if (!ok) return ev_err();
    if (!value_infer(&B->ic, v)) return ev_err();
    if ((info->flags & OPF_CONV) && !dense_conv_operands(B, v)) return ev_err();
    if (v->op == OP_REPEAT_INTERLEAVE && !(v = lower_repeat_interleave(&B->ic, v))) return ev_err();
    if (v->op == OP_SDPA && v->dtype == DT_F64 && !(v = lower_sdpa_f64(&B->ic, v))) return ev_err();
    if (lower_nn_applies(v->op) && !(v = lower_nn(&B->ic, v))) return ev_err();
    if (lower_loss_applies(v->op) && !(v = lower_loss(&B->ic, v))) return ev_err();
    return result_of(B, v);
}

static Ev call_simple(Builder *B, OpCode op, SrcLoc loc, int n, Ev *pos) {
    CallArgs ca = {.pos = pos, .npos = n};
    return call_op(B, op, loc, loc, &ca);
}

/* ---- expressions -------------------------------------------------------- */

static Ev eval_name(Builder *B, const Ast *n) {
    Binding *b = lookup(B, n->name);
    if (b) {
        if (b->kind == BIND_ERROR) return ev_err();
        Ev r = b->ev;
        r.loc = n->loc;
        return r;
    }
    DType dt = dtype_from_name(n->name);
    if (dt != DT_NONE) return (Ev){.kind = EV_DTYPE, .dt = dt, .loc = n->loc};
    const char *s = suggest(B, n->name, false);
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
    return ev_err();
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
                   tok_kind_name(op), ev_kind_name(&l), ev_kind_name(&r));
        return ev_err();
    }
    if ((op == TK_SLASH || op == TK_FLOORDIV || op == TK_PERCENT) && rf == 0) {
        diag_error(B->d, n->loc, "division by zero in a constant expression");
        return ev_err();
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
            return ev_err();
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
    Ev l = eval(B, n->lhs), r = eval(B, n->rhs);
    if (l.kind == EV_ERR || r.kind == EV_ERR) return ev_err();
    if (is_number(&l) && is_number(&r)) return fold_numbers(B, n, l, r);
    if ((l.kind == EV_TENSOR || is_number(&l)) && (r.kind == EV_TENSOR || is_number(&r))) {
        Ev pos[2] = {l, r};
        CallArgs ca = {.pos = pos, .npos = 2};
        return call_op(B, binary_op(n->op), n->loc, n->name_loc, &ca);
    }
    const Ev *bad = (l.kind == EV_TENSOR || is_number(&l)) ? &r : &l;
    diag_error(B->d, bad->loc, "operator %s needs tensors or numbers, found %s",
               tok_kind_name(n->op), ev_kind_name(bad));
    return ev_err();
}

static Ev eval_unary(Builder *B, const Ast *n) {
    Ev x = eval(B, n->lhs);
    if (x.kind == EV_ERR) return x;
    if (n->op == TK_MINUS && (x.kind == EV_INT || x.kind == EV_FLOAT)) {
        if (x.kind == EV_INT) {
            if (x.i == INT64_MIN) {
                diag_error(B->d, n->loc, "integer overflow in a constant expression");
                return ev_err();
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
                   tok_kind_name(n->op), ev_kind_name(&x));
        return ev_err();
    }
    return call_simple(B, n->op == TK_MINUS ? OP_NEG : OP_BITWISE_NOT, n->loc, 1, &x);
}

static bool eval_list(Builder *B, Ast *const *items, int n, Ev **out) {
    *out = ARENA_ARRAY(B->a, Ev, n ? n : 1);
    bool ok = true;
    for (int i = 0; i < n; i++) {
        (*out)[i] = eval(B, items[i]);
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
        ca->pos[i + extra] = eval(B, n->items[i]);
        ok &= ca->pos[i + extra].kind != EV_ERR;
    }
    ca->nkw = n->nkw;
    ca->kw = (const char **)n->kw_names;
    ca->kw_locs = n->kw_locs;
    ok &= eval_list(B, n->kw_values, n->nkw, &ca->kwv);
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
                *out = ev_err();
                return true;
            }
            Ev args[2] = {*self, {.kind = EV_DTYPE, .dt = casts[i].dt, .loc = n->name_loc}};
            *out = call_simple(B, OP_TO, n->loc, 2, args);
            return true;
        }
    if (!strcmp(n->name, "size") || !strcmp(n->name, "dim") || !strcmp(n->name, "numel")) {
        if (!strcmp(n->name, "size") && n->nitems == 1 && !n->nkw) {
            Ev d = eval(B, n->items[0]);
            if (d.kind == EV_ERR) {
                *out = d;
                return true;
            }
            if (d.kind != EV_INT) {
                diag_error(B->d, d.loc, "size(dim): dim must be an integer, found %s",
                           ev_kind_name(&d));
                *out = ev_err();
                return true;
            }
            if (!norm_dim(&B->ic, d.loc, &d.i, t->ndim)) {
                *out = ev_err();
                return true;
            }
            *out = (Ev){.kind = EV_INT, .i = t->ndim ? t->shape[d.i] : 1, .loc = n->loc};
            return true;
        }
        if (n->nitems || n->nkw) {
            diag_error(B->d, n->loc, "%s() takes no arguments here", n->name);
            *out = ev_err();
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
        return !lookup(B, n->name) && (!strcmp(n->name, "torch") || !strcmp(n->name, "F"));
    if (n->kind == AST_ATTR)
        return is_module_prefix(B, n->lhs) &&
               (!strcmp(n->name, "nn") || !strcmp(n->name, "functional"));
    return false;
}

/* ---- compile-time numbers (ir/build_const.c) ---- */

static bool is_math_prefix(Builder *B, const Ast *n) {
    return n->kind == AST_NAME && !strcmp(n->name, "math") && !lookup(B, "math");
}

static ConstVal ev_to_const(const Ev *e) {
    switch (e->kind) {
    case EV_INT: return (ConstVal){.kind = CV_INT, .i = e->i};
    case EV_BOOL: return (ConstVal){.kind = CV_BOOL, .i = e->i};
    case EV_FLOAT: return (ConstVal){.kind = CV_FLOAT, .f = e->f};
    case EV_STR: return (ConstVal){.kind = CV_STR, .s = e->s};
    case EV_TENSOR: return (ConstVal){.kind = CV_TENSOR};
    default: return (ConstVal){.kind = CV_OTHER, .what = ev_kind_name(e)};
    }
}

/* 0: not a compile-time call (nothing evaluated); 1: *out is the result;
 * 2: the arguments are in *ca but the call is the tensor operation. */
static int const_call_hook(Builder *B, const Ast *n, CallArgs *ca, Ev *out) {
    bool math = n->kind == AST_METHOD && is_math_prefix(B, n->lhs);
    if (!math && !(n->kind == AST_CALL && !n->nkw && const_builtin_name(n->name))) return 0;
    if (math && n->nkw) {
        diag_error(B->d, n->kw_locs[0], "math.%s() takes no keyword arguments", n->name);
        *out = ev_err();
        return 1;
    }
    if (!eval_call_args(B, n, NULL, ca)) {
        *out = ev_err();
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
        *out = ev_err();
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
        selfv = eval(B, n->lhs);
        if (selfv.kind == EV_ERR) return selfv;
        if (selfv.kind != EV_TENSOR) {
            diag_error(B->d, n->lhs->loc, "methods are called on tensors; this is %s",
                       ev_kind_name(&selfv));
            return ev_err();
        }
        self = &selfv;
        Ev special;
        if (eval_special_method(B, n, self, &special)) return special;
    }
    OpCode op = op_lookup(n->name);
    if (op == OP_COUNT) {
        Binding *b = lookup(B, n->name);
        const char *s = suggest(B, n->name, true);
        if (b && n->kind == AST_CALL)
            diag_error(B->d, n->name_loc, "'%s' is a value, not an operation; it cannot be called",
                       n->name);
        else if (s)
            diag_error(B->d, n->name_loc, "unknown operation '%s'; did you mean '%s'?", n->name, s);
        else
            diag_error(B->d, n->name_loc, "unknown operation '%s'", n->name);
        return ev_err();
    }
    if (cc != 2 && !eval_call_args(B, n, self, &ca)) return ev_err();
    return call_op(B, op, n->loc, n->name_loc, &ca);
}

static Ev eval_attr(Builder *B, const Ast *n) {
    Ev dotted;
    if (module_dotted(B, n, &dotted)) return dotted; /* a dotted param: ln_1.weight */
    double mv;
    if (is_math_prefix(B, n->lhs)) { /* math.pi, math.inf */
        if (const_math_attr(n->name, &mv)) return (Ev){.kind = EV_FLOAT, .f = mv, .loc = n->loc};
        diag_error(B->d, n->name_loc, "module 'math' has no attribute '%s'", n->name);
        return ev_err();
    }
    if (is_module_prefix(B, n->lhs) && dtype_from_name(n->name) != DT_NONE) /* torch.float16 */
        return (Ev){.kind = EV_DTYPE, .dt = dtype_from_name(n->name), .loc = n->loc};
    Ev x = eval(B, n->lhs);
    if (x.kind == EV_ERR) return x;
    if (x.kind != EV_TENSOR) {
        diag_error(B->d, n->lhs->loc, "attribute .%s needs a tensor, found %s", n->name,
                   ev_kind_name(&x));
        return ev_err();
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
        Ev r = call_simple(B, OP_PERMUTE, n->loc, 2, pos);
        if (r.kind == EV_TENSOR) r.t->label = "T";
        return r;
    }
    if (!strcmp(n->name, "mT")) {
        if (t->ndim < 2) {
            diag_error(
                B->d, n->name_loc,
                "tensor.mT is only supported on matrices or batches of matrices. Got %d-D tensor.",
                t->ndim);
            return ev_err();
        }
        Ev pos[3] = {x,
                     {.kind = EV_INT, .i = -2, .loc = n->name_loc},
                     {.kind = EV_INT, .i = -1, .loc = n->name_loc}};
        Ev r = call_simple(B, OP_TRANSPOSE, n->loc, 3, pos);
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
    return ev_err();
}

/* x[...]: basic indexing becomes a chain of select/slice/unsqueeze views;
 * one integer tensor index gathers along its dimension (a copy). */
static Ev eval_index(Builder *B, const Ast *n) {
    Ev base = eval(B, n->lhs);
    if (base.kind == EV_ERR) return base;
    Ev *items = ARENA_ARRAY(B->a, Ev, n->nitems ? n->nitems : 1);
    bool items_ok = true;
    for (int k = 0; k < n->nitems; k++) {
        if (n->items[k]->kind == AST_SLICE) {
            items[k] = (Ev){.kind = EV_SLICE, .loc = n->items[k]->loc};
            continue;
        }
        items[k] = eval(B, n->items[k]);
        items_ok &= items[k].kind != EV_ERR;
    }
    if (!items_ok) return ev_err();
    if (base.kind == EV_LIST) { /* x.shape[0] */
        if (n->nitems != 1 || items[0].kind != EV_INT) {
            diag_error(B->d, n->loc, "a list is indexed by one integer");
            return ev_err();
        }
        int64_t i = items[0].i;
        if (i < -base.n || i >= base.n) {
            diag_error(B->d, items[0].loc, "list index %lld out of range for a list of %d",
                       (long long)i, base.n);
            return ev_err();
        }
        return base.items[i < 0 ? i + base.n : i];
    }
    if (base.kind != EV_TENSOR) {
        diag_error(B->d, n->lhs->loc, "only tensors and lists can be indexed; this is %s",
                   ev_kind_name(&base));
        return ev_err();
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
                return ev_err();
            }
            continue;
        }
        if (it->kind == EV_NONE) continue;
        if (it->kind == EV_TENSOR && it->t->dtype == DT_BOOL) {
            diag_error(
                B->d, it->loc,
                "boolean-mask indexing gives a shape that depends on the data, which tgc cannot "
                "compile; use where(mask, x, other) or x.masked_fill(~mask, value) instead");
            return ev_err();
        }
        if (it->kind == EV_INT || it->kind == EV_TENSOR) {
            consumed++;
            continue;
        }
        diag_error(
            B->d, it->loc,
            "an index must be an integer, a slice, None, '...' or an integer tensor; found %s",
            ev_kind_name(it));
        return ev_err();
    }
    Value *x = base.t;
    if (consumed > x->ndim) {
        diag_error(B->d, n->loc, "too many indices for tensor of dimension %d (%d given)", x->ndim,
                   consumed);
        return ev_err();
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
            r = call_simple(B, OP_UNSQUEEZE, n->loc, 2, pos);
            dim++;
        } else if (it->kind == EV_INT) {
            Ev pos[3] = {cur, {.kind = EV_INT, .i = dim, .loc = it->loc}, *it};
            r = call_simple(B, OP_SELECT, n->loc, 3, pos);
            if (r.kind == EV_TENSOR) r.t->label = "index";
        } else if (it->kind == EV_TENSOR) {
            if (tensor_dim >= 0) {
                diag_error(B->d, it->loc,
                           "indexing with more than one tensor is not supported; use gather or "
                           "index_select");
                return ev_err();
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
                Ev e = eval(B, ia->slice[s]);
                if (e.kind == EV_ERR) return e;
                if (e.kind != EV_INT && e.kind != EV_NONE) {
                    diag_error(B->d, e.loc, "slice bounds must be integers, found %s",
                               ev_kind_name(&e));
                    return ev_err();
                }
                if (s == 2 && e.kind == EV_INT && e.i <= 0) {
                    diag_error(B->d, e.loc,
                               e.i == 0 ? "slice step cannot be zero"
                                        : "step must be greater than zero (negative steps are not "
                                          "supported; use flip)");
                    return ev_err();
                }
                if (s == 2 && e.kind == EV_NONE) e = (Ev){.kind = EV_INT, .i = 1, .loc = e.loc};
                pos[2 + s] = e;
            }
            r = call_simple(B, OP_SLICE, n->loc, 5, pos);
            if (r.kind == EV_TENSOR) r.t->label = "index";
            dim++;
        }
        if (r.kind == EV_ERR) return r;
        cur = r;
    }
    if (n->nitems == 1 && items[0].kind == EV_ELLIPSIS) { /* x[...] is a view of the whole tensor */
        Ev r = call_simple(B, OP_ALIAS, n->loc, 1, &cur);
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
        Ev r = call_simple(B, OP_INDEX, n->loc, 3, pos);
        (void)d;
        return r;
    }
    return cur;
}

static Ev eval_node(Builder *B, const Ast *n);

static Ev eval(Builder *B, const Ast *n) {
    if (B->depth >= MAX_EVAL_DEPTH) {
        if (B->too_deep) return ev_err();
        B->too_deep = true;
        diag_error(B->d, n->loc,
                   "expression is too deep (more than %d nested operations); split it into several "
                   "statements",
                   MAX_EVAL_DEPTH);
        return ev_err();
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
        if (!eval_list(B, n->items, n->nitems, &r.items)) return ev_err();
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
        return ev_err();
    }
    return ev_err();
}

/* ---- statements --------------------------------------------------------- */

static bool eval_dim(Builder *B, const Ast *n, int64_t *out, const char *what) {
    Ev e = eval(B, n);
    if (e.kind == EV_ERR) return false;
    if (e.kind != EV_INT) {
        if (e.inexact_div)
            diag_error(B->d, n->loc,
                       "'/' must divide exactly in %s: %lld / %lld = %g (use // to round down)",
                       what, (long long)e.num, (long long)e.den, e.f);
        else if (e.kind == EV_TENSOR)
            diag_error(B->d, n->loc,
                       "%s must be known at compile time: an integer expression over the graph's "
                       "dimensions, found a tensor",
                       what);
        else
            diag_error(B->d, n->loc, "%s must be an integer, found %s", what, ev_kind_name(&e));
        return false;
    }
    if (e.i < 0) {
        diag_error(B->d, n->loc, "%s must not be negative, found %lld", what, (long long)e.i);
        return false;
    }
    *out = e.i;
    return true;
}

static bool eval_type(Builder *B, const TypeAst *ty, Value *v) {
    DType dt = dtype_from_name(ty->dtype);
    bool ok = true;
    if (dt == DT_NONE) {
        diag_error(B->d, ty->dtype_loc,
                   "unknown dtype '%s' (expected one of f64 f32 f16 bf16 i64 i32 i16 i8 u8 bool)",
                   ty->dtype);
        ok = false;
    }
    if (ty->ndims > TG_MAX_DIMS) {
        diag_error(B->d, ty->loc, "at most %d dimensions are supported, found %d", TG_MAX_DIMS,
                   ty->ndims);
        return false;
    }
    v->dtype = dt;
    v->ndim = ty->ndims;
    for (int i = 0; i < ty->ndims; i++) {
        Binding *b = ty->dims[i]->kind == AST_NAME ? lookup(B, ty->dims[i]->name) : NULL;
        if (ty->dims[i]->kind == AST_NAME && !b && dtype_from_name(ty->dims[i]->name) == DT_NONE) {
            diag_error(B->d, ty->dims[i]->loc,
                       "unknown dimension '%s'; declare it in the graph line: graph NAME(%s = ...)",
                       ty->dims[i]->name, ty->dims[i]->name);
            ok = false;
            continue;
        }
        ok &= eval_dim(B, ty->dims[i], &v->shape[i], "a dimension");
    }
    if (ok && shape_too_large(v->shape, v->ndim)) {
        diag_error(B->d, ty->loc, "tensor is too large (more than 2^48 elements)");
        return false;
    }
    return ok;
}

/* c10's overflows<T>(double), which torch.full applies to its value, for
 * an integral dtype: NaN, the infinities and values past the dtype's range
 * do not convert (bool takes anything). Floating dtypes take inf and nan;
 * a finite value past an f16's range is left to the f16 overflow warning
 * (passes/f16_range.c). */
static bool init_int_fits(double x, DType t) {
    double lo, hi;
    switch (t) {
    case DT_U8: lo = 0, hi = 255; break;
    case DT_I8: lo = -128, hi = 127; break;
    case DT_I16: lo = -32768, hi = 32767; break;
    case DT_I32: lo = -2147483648.0, hi = 2147483647.0; break;
    case DT_I64: lo = -0x1p63, hi = 0x1p63; break; /* INT64_MAX as c10 compares it */
    default: return true;
    }
    return x >= lo && x <= hi; /* false for NaN */
}

/* The initialisers' arguments PyTorch 1.13 refuses, refused by `check`
 * too rather than built into a program whose values PyTorch never gives:
 * torch.full's value must convert to an integral dtype (inf and nan never
 * do; floating dtypes take them), normal_'s std must be >= 0 (nan is not;
 * inf is, and gives +-inf, which no integer holds), and uniform_'s bounds
 * must be finite with a finite difference. */
static bool init_args_valid(Builder *B, const ParamInit *in, DType t, SrcLoc call,
                            const SrcLoc *locs) {
    if (in->kind == INIT_FULL && !init_int_fits(in->a, t)) {
        diag_error(B->d, locs[0], "full: the value %g cannot be converted to %s without overflow",
                   in->a, dtype_name(t));
        return false;
    }
    if (in->kind == INIT_RANDN && !(in->a >= 0)) {
        diag_error(B->d, locs[0], "randn: std must be non-negative, found %g", in->a);
        return false;
    }
    if (in->kind == INIT_RANDN && isinf(in->a) && dtype_is_int(t)) {
        /* +-inf draws, which no integer converts (as full(inf) above). */
        diag_error(B->d, locs[0], "randn: std inf gives infinite values, which %s cannot hold",
                   dtype_name(t));
        return false;
    }
    if (in->kind != INIT_UNIFORM) return true;
    double bounds[2] = {in->a, in->b};
    for (int i = 0; i < 2; i++)
        if (!isfinite(bounds[i])) {
            diag_error(B->d, locs[i], "uniform: %s must be a finite number, found %g",
                       i ? "high" : "low", bounds[i]);
            return false;
        }
    if (!(in->a <= in->b)) {
        diag_error(B->d, call, "uniform: low (%g) must not exceed high (%g)", in->a, in->b);
        return false;
    }
    if (!isfinite(in->b - in->a)) {
        diag_error(B->d, call, "uniform: high - low overflows f64 (low %g, high %g)", in->a, in->b);
        return false;
    }
    return true;
}

static bool param_initialiser(Builder *B, const Ast *e, Value *v) {
    static const struct {
        const char *name;
        InitKind kind;
        const char *params[3];
    } inits[] = {
        {"zeros", INIT_ZEROS, {0}},
        {"ones", INIT_ONES, {0}},
        {"full", INIT_FULL, {"value"}},
        {"randn", INIT_RANDN, {"std", "seed"}},
        {"uniform", INIT_UNIFORM, {"low", "high", "seed"}},
        {"arange", INIT_ARANGE, {0}},
    };
    if (e->kind != AST_CALL && e->kind != AST_NAME) goto bad;
    for (size_t k = 0; k < sizeof inits / sizeof *inits; k++) {
        if (strcmp(e->name, inits[k].name)) continue;
        ParamInit *in = &v->init;
        in->kind = inits[k].kind;
        in->a = in->kind == INIT_RANDN ? 1.0 : 0.0;
        in->b = 1.0;
        int np = 0;
        while (np < 3 && inits[k].params[np])
            np++;
        if (e->kind == AST_NAME) {
            if (in->kind == INIT_FULL) {
                diag_error(B->d, e->loc, "full needs a value: full(VALUE)");
                return false;
            }
            return true;
        }
        double vals[3] = {in->a, in->b, 0};
        bool given[3] = {0};
        SrcLoc locs[3] = {e->loc, e->loc, e->loc}; /* defaults: the call */
        if (in->kind == INIT_UNIFORM) vals[0] = 0.0, vals[1] = 1.0;
        if (e->nitems > np) {
            diag_error(B->d, e->items[np]->loc, "%s takes at most %d argument%s", e->name, np,
                       np == 1 ? "" : "s");
            return false;
        }
        for (int i = 0; i < e->nitems + e->nkw; i++) {
            int slot = i;
            const Ast *a = i < e->nitems ? e->items[i] : e->kw_values[i - e->nitems];
            if (i >= e->nitems) {
                slot = -1;
                for (int p = 0; p < np; p++)
                    if (!strcmp(inits[k].params[p], e->kw_names[i - e->nitems])) slot = p;
                if (slot < 0) {
                    diag_error(B->d, e->kw_locs[i - e->nitems], "%s has no argument '%s'", e->name,
                               e->kw_names[i - e->nitems]);
                    return false;
                }
            }
            if (given[slot]) {
                diag_error(B->d, a->loc, "%s got multiple values for '%s'", e->name,
                           inits[k].params[slot]);
                return false;
            }
            Ev x = eval(B, a);
            if (x.kind == EV_ERR) return false;
            if (!is_number(&x)) {
                diag_error(B->d, x.loc, "%s: '%s' must be a number, found %s", e->name,
                           inits[k].params[slot], ev_kind_name(&x));
                return false;
            }
            bool is_seed = !strcmp(inits[k].params[slot], "seed");
            if (is_seed && x.kind != EV_INT) {
                diag_error(B->d, x.loc, "%s: seed must be an integer", e->name);
                return false;
            }
            vals[slot] = x.kind == EV_FLOAT ? x.f : (double)x.i;
            locs[slot] = a->loc;
            if (is_seed) in->seed = x.i;
            given[slot] = true;
        }
        if (in->kind == INIT_FULL && !given[0]) {
            diag_error(B->d, e->loc, "full needs a value: full(VALUE)");
            return false;
        }
        in->a = vals[0];
        in->b = vals[1];
        return init_args_valid(B, in, v->dtype, e->loc, locs);
    }
bad:
    if (e->kind == AST_CALL || e->kind == AST_NAME) {
        diag_error(B->d, e->name_loc,
                   "unknown initialiser '%s': a param initialiser must be zeros, ones, "
                   "full(VALUE), randn(std, seed), uniform(low, high, seed) or arange",
                   e->name);
        return false;
    }
    diag_error(B->d, e->loc,
               "a param initialiser must be zeros, ones, full(VALUE), randn(std, seed), "
               "uniform(low, high, seed) or arange");
    return false;
}

static void mark_output(Builder *B, Value *v, SrcLoc loc) {
    if (v->is_output) {
        diag_error(B->d, loc, "'%s' is already an output", v->name ? v->name : "this value");
        return;
    }
    v->is_output = true;
    ARENA_PUSH(B->a, B->g->outputs, B->g->noutputs, B->g->cap_outputs, v);
}

/* Names a value; a value that already has a name gets an alias view, so
 * each name keeps its own entry (y = x). */
static Value *name_value(Builder *B, Value *v, const char *name, SrcLoc loc) {
    if (v->name) {
        Ev e = {.kind = EV_TENSOR, .t = v, .loc = loc};
        Ev r = call_simple(B, OP_ALIAS, loc, 1, &e);
        if (r.kind != EV_TENSOR) return NULL;
        v = r.t;
    }
    v->name = name;
    return v;
}

static void stmt_let(Builder *B, const Stmt *s, bool output) {
    bool names_ok = true;
    for (int i = 0; i < s->nnames; i++) {
        names_ok &= name_free(B, s->names[i], s->name_locs[i]);
        for (int k = 0; k < i; k++)
            if (!strcmp(s->names[k], s->names[i])) {
                diag_error(B->d, s->name_locs[i],
                           "'%s' appears twice in this binding; names are bound once", s->names[i]);
                names_ok = false;
            }
    }
    Ev e = eval(B, s->expr);
    if (e.kind == EV_ERR || !names_ok) {
        for (int i = 0; i < s->nnames; i++)
            if (!lookup(B, s->names[i]))
                bind(B, s->names[i], s->name_locs[i], BIND_ERROR, ev_err());
        return;
    }
    if (s->nnames > 1 || e.kind == EV_TUPLE) {
        if (e.kind != EV_TUPLE && e.kind != EV_LIST) {
            diag_error(B->d, s->expr->loc, "cannot unpack %s into %d names", ev_kind_name(&e),
                       s->nnames);
            for (int i = 0; i < s->nnames; i++)
                bind(B, s->names[i], s->name_locs[i], BIND_ERROR, ev_err());
            return;
        }
        if (e.n != s->nnames) {
            diag_error(B->d,
                       s->nnames > 1 ? loc_span(s->name_locs[0], s->name_locs[s->nnames - 1])
                                     : s->name_locs[0],
                       "%d name%s bound, but the expression gives %d values", s->nnames,
                       s->nnames == 1 ? "" : "s", e.n);
            for (int i = 0; i < s->nnames; i++)
                bind(B, s->names[i], s->name_locs[i], BIND_ERROR, ev_err());
            return;
        }
        for (int i = 0; i < s->nnames; i++) {
            Ev item = e.items[i];
            if (item.kind == EV_TENSOR) {
                Value *v =
                    name_value(B, item.t, module_value_name(B, s->names[i]), s->name_locs[i]);
                if (!v) continue;
                item.t = v;
                bind(B, s->names[i], s->name_locs[i], BIND_VALUE, item);
                if (output) mark_output(B, v, s->name_locs[i]);
            } else {
                bind(B, s->names[i], s->name_locs[i], BIND_CONST, item);
            }
        }
        return;
    }
    if (e.kind == EV_TENSOR) {
        Value *v = name_value(B, e.t, module_value_name(B, s->names[0]), s->name_locs[0]);
        if (!v) return;
        e.t = v;
        bind(B, s->names[0], s->name_locs[0], BIND_VALUE, e);
        if (output) mark_output(B, v, s->name_locs[0]);
        return;
    }
    if (output) {
        diag_error(B->d, s->expr->loc, "an output must be a tensor, found %s", ev_kind_name(&e));
        bind(B, s->names[0], s->name_locs[0], BIND_ERROR, ev_err());
        return;
    }
    bind(B, s->names[0], s->name_locs[0], BIND_CONST, e);
}

static void stmt_leaf(Builder *B, const Stmt *s) {
    if (!name_free(B, s->names[0], s->name_locs[0])) return;
    Value *v = value_new(B->g, s->kind == STMT_INPUT ? OP_INPUT : OP_PARAM, s->name_locs[0]);
    v->name = module_value_name(B, s->names[0]); /* h.0.ln_1.weight inside a call */
    bool ok = eval_type(B, &s->type, v);
    if (ok && s->kind == STMT_PARAM) ok = module_param_name(B, v->name, s->name_locs[0]);
    if (ok && s->expr) ok = param_initialiser(B, s->expr, v);
    if (!ok) {
        bind(B, s->names[0], s->name_locs[0], BIND_ERROR, ev_err());
        return;
    }
    add_value(B, v);
    bind(B, s->names[0], s->name_locs[0], BIND_VALUE,
         (Ev){.kind = EV_TENSOR, .t = v, .loc = s->name_locs[0]});
}

static void stmt_output(Builder *B, const Stmt *s) {
    if (s->expr) {
        stmt_let(B, s, true);
        return;
    }
    Binding *b = lookup(B, s->names[0]);
    if (!b) {
        const char *sug = suggest(B, s->names[0], false);
        if (sug)
            diag_error(B->d, s->name_locs[0], "unknown name '%s' in output; did you mean '%s'?",
                       s->names[0], sug);
        else
            diag_error(B->d, s->name_locs[0], "unknown name '%s' in output", s->names[0]);
        return;
    }
    if (b->kind == BIND_ERROR) return;
    if (b->kind != BIND_VALUE) {
        diag_error(B->d, s->name_locs[0], "an output must be a tensor; '%s' is %s", s->names[0],
                   b->kind == BIND_DIM ? "a dimension" : ev_kind_name(&b->ev));
        return;
    }
    mark_output(B, b->ev.t, s->name_locs[0]);
}

static void declare_dims(Builder *B, const Program *prog, const DimOverride *ov, int nov) {
    Graph *g = B->g;
    g->dims = ARENA_ARRAY(B->a, Dim, prog->ndims ? prog->ndims : 1);
    for (int i = 0; i < prog->ndims; i++) {
        Dim *d = &g->dims[g->ndims];
        d->name = prog->dim_names[i];
        d->loc = prog->dim_locs[i];
        bool from_cli = false;
        for (int k = 0; k < nov; k++)
            if (!strcmp(ov[k].name, d->name)) {
                d->value = ov[k].value;
                from_cli = true;
            }
        if (!name_free(B, d->name, d->loc)) continue;
        if (!from_cli && !eval_dim(B, prog->dim_defaults[i], &d->value, "a dimension's default")) {
            bind(B, d->name, d->loc, BIND_ERROR, ev_err());
            continue;
        }
        if (d->value < 1) {
            if (from_cli)
                diag_plain_error(B->d, "-D %s=%lld: a dimension must be at least 1", d->name,
                                 (long long)d->value);
            else
                diag_error(B->d, prog->dim_defaults[i]->loc,
                           "dimension '%s' must be at least 1, found %lld", d->name,
                           (long long)d->value);
            bind(B, d->name, d->loc, BIND_ERROR, ev_err());
            continue;
        }
        g->ndims++;
        bind(B, d->name, d->loc, BIND_DIM, (Ev){.kind = EV_INT, .i = d->value, .loc = d->loc});
    }
    for (int k = 0; k < nov; k++) {
        bool known = false;
        for (int i = 0; i < prog->ndims; i++)
            known |= !strcmp(prog->dim_names[i], ov[k].name);
        if (!known) {
            char list[256] = "";
            int n = 0;
            for (int i = 0; i < prog->ndims && n < 200; i++)
                n += snprintf(list + n, sizeof list - (size_t)n, "%s%s", i ? ", " : "",
                              prog->dim_names[i]);
            diag_plain_error(B->d, "-D %s=%lld: the graph '%s' has no dimension '%s' (%s%s)",
                             ov[k].name, (long long)ov[k].value, prog->name ? prog->name : "?",
                             ov[k].name, prog->ndims ? "it declares: " : "it declares none", list);
        }
    }
}

/* `tgc compile` names every symbol it defines NAME_...: a graph whose
 * NAME_ is a prefix the C library, the linked libraries or the runtime own
 * would define their functions (pthread_create, rt_context_create) or
 * macros (TGCRT_OK). graph_name.c holds the list; the ONNX importer's
 * graphs come through here too. (tests/exec derives the runtime's clashes
 * from runtime/tgcrt.h.) */
static void graph_name_free(Builder *B, const Program *prog) {
    const char *owner = NULL;
    const char *prefix = prog->name ? graph_name_reserved(prog->name, &owner) : NULL;
    if (prefix)
        diag_error(B->d, prog->name_loc,
                   "the graph name '%s' is reserved: tgc compile names its API after the graph "
                   "(%s_create, %s_run, %s_OK...), which would take names of %s (reserved "
                   "prefix '%s'); rename the graph (an ONNX model's: the file, which names it)",
                   prog->name, prog->name, prog->name, prog->name, owner, prefix);
}

Graph *build_graph(Arena *a, Diag *d, const Program *prog, const DimOverride *overrides,
                   int noverrides) {
    Builder B = {.a = a, .d = d};
    B.g = graph_new(a);
    B.ic = (InferCtx){.g = B.g, .d = d};
    B.g->name = prog->name ? prog->name : "graph";
    graph_name_free(&B, prog);
    declare_dims(&B, prog, overrides, noverrides);
    for (int i = 0; i < prog->nstmts; i++)
        if (prog->stmts[i].kind == STMT_DEF) module_declare(&B, &prog->stmts[i]);
    for (int i = 0; i < prog->nstmts && !diag_too_many(d); i++) {
        const Stmt *s = &prog->stmts[i];
        B.too_deep = false;
        if (s->kind == STMT_DEF) continue; /* lowered at each call */
        if (s->broken) {
            for (int k = 0; k < s->nnames; k++)
                if (!lookup(&B, s->names[k]))
                    bind(&B, s->names[k], s->name_locs[k], BIND_ERROR, ev_err());
            continue;
        }
        switch (s->kind) {
        case STMT_INPUT:
        case STMT_PARAM: stmt_leaf(&B, s); break;
        case STMT_LET: stmt_let(&B, s, false); break;
        case STMT_OUTPUT: stmt_output(&B, s); break;
        case STMT_DEF:
        case STMT_RETURN: break; /* the parser reports a return outside a def */
        }
    }
    if (prog->has_graph && B.g->noutputs == 0 && d->errors == 0)
        diag_error(d, prog->name_loc,
                   "graph '%s' has no outputs: mark at least one value with 'output NAME'",
                   B.g->name);
    return B.g;
}

/* ---- for build_module.c ------------------------------------------------- */

Binding *bld_lookup(Builder *B, const char *name) {
    return lookup(B, name);
}
void bld_bind(Builder *B, const char *name, SrcLoc loc, BindKind kind, Ev ev) {
    bind(B, name, loc, kind, ev);
}
bool bld_name_free(Builder *B, const char *name, SrcLoc loc) {
    return name_free(B, name, loc);
}
Ev bld_eval(Builder *B, const Ast *n) {
    return eval(B, n);
}
const char *bld_ev_kind_name(const Ev *e) {
    return ev_kind_name(e);
}
const char *bld_suggest(Builder *B, const char *name) {
    return suggest(B, name, false);
}
void bld_stmt_let(Builder *B, const Stmt *s) {
    stmt_let(B, s, false);
}
void bld_stmt_leaf(Builder *B, const Stmt *s) {
    stmt_leaf(B, s);
}
