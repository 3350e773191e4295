/* Argument binding: a call's positional and keyword arguments are matched
 * against the op table's signature (ir/ops.def), converted to the op's
 * attribute kinds, and the op's value is made and inferred. */
#include <stdlib.h>
#include <string.h>

#include "frontend/tg/build_internal.h"

bool bld_is_number(const Ev *e) {
    return e->kind == EV_INT || e->kind == EV_FLOAT || e->kind == EV_BOOL;
}

static bool param_error(Builder *B, const Ev *e, const char *opname, const ParamSpec *p,
                        const char *expected) {
    diag_error(B->d, e->loc, "argument '%s' of %s must be %s, found %s", p->name, opname, expected,
               bld_ev_kind_name(e));
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
    if (bld_is_number(e)) {
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
                   bld_ev_kind_name(e));
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
        if (bld_is_number(e)) {
            *out = arg_tensor(bld_make_scalar(B, e), e->loc);
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
    case PT_DTYPE:
        if (e->kind == EV_DTYPE) {
            *out = arg_dtype(e->dt, e->loc);
            return true;
        }
        return param_error(B, e, opname, p, "a dtype such as f32");
    case PT_STR:
    case PT_PAD: /* a string, or ints as PT_INTS takes them */
        if (e->kind == EV_STR) {
            out->kind = ARG_STR;
            out->s = e->s;
            return true;
        }
        if (p->type == PT_STR) return param_error(B, e, opname, p, "a string");
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
        if (bld_is_number(e) || e->kind == EV_LIST) {
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

static Ev result_of(Builder *B, Value *v) {
    Ev r = {.kind = EV_TENSOR, .loc = v->loc, .t = v};
    if (v->ntuple) {
        r.kind = EV_TUPLE;
        r.n = v->ntuple;
        r.items = ARENA_ARRAY(B->a, Ev, v->ntuple);
        for (int i = 0; i < v->ntuple; i++) {
            bld_add_value(B, v->tuple[i]);
            r.items[i] = (Ev){.kind = EV_TENSOR, .loc = v->loc, .t = v->tuple[i]};
        }
        return r;
    }
    bld_add_value(B, v);
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
        bld_add_value(B, c);
        a->t = c;
    }
    value_collect_inputs(B->g, v);
    return true;
}

/* Binds positional and keyword arguments to the op's parameters, converts
 * them, and builds the node. */
Ev bld_call_op(Builder *B, OpCode op, SrcLoc loc, SrcLoc name_loc, CallArgs *ca) {
    const OpInfo *info = op_info(op);
    Ev *slot[8] = {0};
    Ev *var_items = NULL;
    int nvar = 0, var_param = -1;
    int pi = 0;
    for (int k = 0; k < ca->npos; k++) {
        if (ca->pos[k].kind == EV_ERR) return bld_ev_err();
        while (pi < info->nparams && info->params[pi].variadic && var_param >= 0 && var_param != pi)
            pi++;
        if (pi >= info->nparams) {
            diag_error(B->d, ca->pos[k].loc,
                       "%s takes at most %d positional argument%s, found %d; its signature is %s",
                       info->name, info->nparams, info->nparams == 1 ? "" : "s", ca->npos,
                       signature_text(B, info));
            return bld_ev_err();
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
        if (ca->kwv[k].kind == EV_ERR) return bld_ev_err();
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
            return bld_ev_err();
        }
        if (slot[found] || found == var_param) {
            diag_error(B->d, ca->kw_locs[k], "%s got multiple values for argument '%s'", info->name,
                       ca->kw[k]);
            return bld_ev_err();
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
                return bld_ev_err();
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
                return bld_ev_err();
            }
            default_arg(B->a, p, out, loc);
            continue;
        }
        ok &= convert_arg(B, info->name, p, slot[i], out);
    }
    if (!ok) return bld_ev_err();
    if (!value_infer(&B->ic, v)) return bld_ev_err();
    if ((info->flags & OPF_CONV) && !dense_conv_operands(B, v)) return bld_ev_err();
    if (B->lower && !(v = B->lower(&B->ic, v))) return bld_ev_err();
    return result_of(B, v);
}

Ev bld_call_simple(Builder *B, OpCode op, SrcLoc loc, int n, Ev *pos) {
    CallArgs ca = {.pos = pos, .npos = n};
    return bld_call_op(B, op, loc, loc, &ca);
}
