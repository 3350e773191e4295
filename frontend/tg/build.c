/* AST -> IR: the statements (dims, inputs, params, lets, outputs) in order.
 * Names live in build_scope.c, calls bind their arguments in build_args.c,
 * expressions evaluate in build_expr.c and defs in build_module.c. */
#include "frontend/tg/build.h"

#include <math.h>
#include <string.h>

#include "frontend/tg/build_internal.h"
#include "frontend/tg/graph_name.h"
#include "ir/state.h"

static bool eval_dim(Builder *B, const Ast *n, int64_t *out, const char *what) {
    Ev e = bld_eval(B, n);
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
            diag_error(B->d, n->loc, "%s must be an integer, found %s", what, bld_ev_kind_name(&e));
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
        Binding *b = ty->dims[i]->kind == AST_NAME ? bld_lookup(B, ty->dims[i]->name) : NULL;
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
    case DT_U16: lo = 0, hi = 65535; break;
    case DT_U32: lo = 0, hi = 4294967295.0; break;
    case DT_U64: lo = 0, hi = 0x1p64; break;
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
            Ev x = bld_eval(B, a);
            if (x.kind == EV_ERR) return false;
            if (!bld_is_number(&x)) {
                diag_error(B->d, x.loc, "%s: '%s' must be a number, found %s", e->name,
                           inits[k].params[slot], bld_ev_kind_name(&x));
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
        Ev r = bld_call_simple(B, OP_ALIAS, loc, 1, &e);
        if (r.kind != EV_TENSOR) return NULL;
        v = r.t;
    }
    v->name = name;
    return v;
}

static void stmt_let(Builder *B, const Stmt *s, bool output) {
    bool names_ok = true;
    for (int i = 0; i < s->nnames; i++) {
        names_ok &= bld_name_free(B, s->names[i], s->name_locs[i]);
        for (int k = 0; k < i; k++)
            if (!strcmp(s->names[k], s->names[i])) {
                diag_error(B->d, s->name_locs[i],
                           "'%s' appears twice in this binding; names are bound once", s->names[i]);
                names_ok = false;
            }
    }
    Ev e = bld_eval(B, s->expr);
    if (e.kind == EV_ERR || !names_ok) {
        for (int i = 0; i < s->nnames; i++)
            if (!bld_lookup(B, s->names[i]))
                bld_bind(B, s->names[i], s->name_locs[i], BIND_ERROR, bld_ev_err());
        return;
    }
    if (s->nnames > 1 || e.kind == EV_TUPLE) {
        if (e.kind != EV_TUPLE && e.kind != EV_LIST) {
            diag_error(B->d, s->expr->loc, "cannot unpack %s into %d names", bld_ev_kind_name(&e),
                       s->nnames);
            for (int i = 0; i < s->nnames; i++)
                bld_bind(B, s->names[i], s->name_locs[i], BIND_ERROR, bld_ev_err());
            return;
        }
        if (e.n != s->nnames) {
            diag_error(B->d,
                       s->nnames > 1 ? loc_span(s->name_locs[0], s->name_locs[s->nnames - 1])
                                     : s->name_locs[0],
                       "%d name%s bound, but the expression gives %d values", s->nnames,
                       s->nnames == 1 ? "" : "s", e.n);
            for (int i = 0; i < s->nnames; i++)
                bld_bind(B, s->names[i], s->name_locs[i], BIND_ERROR, bld_ev_err());
            return;
        }
        for (int i = 0; i < s->nnames; i++) {
            Ev item = e.items[i];
            if (item.kind == EV_TENSOR) {
                Value *v =
                    name_value(B, item.t, module_value_name(B, s->names[i]), s->name_locs[i]);
                if (!v) continue;
                item.t = v;
                bld_bind(B, s->names[i], s->name_locs[i], BIND_VALUE, item);
                if (output) mark_output(B, v, s->name_locs[i]);
            } else {
                bld_bind(B, s->names[i], s->name_locs[i], BIND_CONST, item);
            }
        }
        return;
    }
    if (e.kind == EV_TENSOR) {
        Value *v = name_value(B, e.t, module_value_name(B, s->names[0]), s->name_locs[0]);
        if (!v) return;
        e.t = v;
        bld_bind(B, s->names[0], s->name_locs[0], BIND_VALUE, e);
        if (output) mark_output(B, v, s->name_locs[0]);
        return;
    }
    if (output) {
        diag_error(B->d, s->expr->loc, "an output must be a tensor, found %s",
                   bld_ev_kind_name(&e));
        bld_bind(B, s->names[0], s->name_locs[0], BIND_ERROR, bld_ev_err());
        return;
    }
    bld_bind(B, s->names[0], s->name_locs[0], BIND_CONST, e);
}

static void stmt_leaf(Builder *B, const Stmt *s) {
    if (!bld_name_free(B, s->names[0], s->name_locs[0])) return;
    Value *v = value_new(B->g, s->kind == STMT_INPUT ? OP_INPUT : OP_PARAM, s->name_locs[0]);
    v->name = module_value_name(B, s->names[0]); /* h.0.ln_1.weight inside a call */
    v->state = s->state;
    if (v->state) {
        v->label = "state"; /* tgc show's op column */
        v->init.kind = INIT_ZEROS;
    }
    bool ok = eval_type(B, &s->type, v);
    if (ok && s->kind == STMT_PARAM) ok = module_param_name(B, v->name, s->name_locs[0]);
    if (ok && s->expr) ok = param_initialiser(B, s->expr, v);
    if (!ok) {
        bld_bind(B, s->names[0], s->name_locs[0], BIND_ERROR, bld_ev_err());
        return;
    }
    bld_add_value(B, v);
    bld_bind(B, s->names[0], s->name_locs[0], BIND_VALUE,
             (Ev){.kind = EV_TENSOR, .t = v, .loc = s->name_locs[0]});
}

static void stmt_output(Builder *B, const Stmt *s) {
    if (s->expr) {
        stmt_let(B, s, true);
        return;
    }
    Binding *b = bld_lookup(B, s->names[0]);
    if (!b) {
        const char *sug = bld_suggest(B, s->names[0], false);
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
                   b->kind == BIND_DIM ? "a dimension" : bld_ev_kind_name(&b->ev));
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
        if (!bld_name_free(B, d->name, d->loc)) continue;
        if (!from_cli && !eval_dim(B, prog->dim_defaults[i], &d->value, "a dimension's default")) {
            bld_bind(B, d->name, d->loc, BIND_ERROR, bld_ev_err());
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
            bld_bind(B, d->name, d->loc, BIND_ERROR, bld_ev_err());
            continue;
        }
        g->ndims++;
        bld_bind(B, d->name, d->loc, BIND_DIM, (Ev){.kind = EV_INT, .i = d->value, .loc = d->loc});
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
                   int noverrides, BuildLowerFn lower) {
    Builder B = {.a = a, .d = d, .lower = lower};
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
                if (!bld_lookup(&B, s->names[k]))
                    bld_bind(&B, s->names[k], s->name_locs[k], BIND_ERROR, bld_ev_err());
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
    module_tag_top(&B);
    if (d->errors == 0) ir_check_states(B.g, d);
    if (prog->has_graph && B.g->noutputs == 0 && d->errors == 0)
        diag_error(d, prog->name_loc,
                   "graph '%s' has no outputs: mark at least one value with 'output NAME'",
                   B.g->name);
    return B.g;
}

/* ---- for build_module.c ------------------------------------------------- */

void bld_stmt_let(Builder *B, const Stmt *s) {
    stmt_let(B, s, false);
}
void bld_stmt_leaf(Builder *B, const Stmt *s) {
    stmt_leaf(B, s);
}
