/* Modules: def blocks, their calls with prefix=, repeat(DEF, N, x, ...) and
 * dotted param names (spec: graph-language.md, "Additions").
 *
 * A call instantiates the def's body in a scope of its own (the graph's
 * dimensions, the call's arguments, the body's names), so the IR holds one
 * copy of the body per call: repeat unrolls. Params of a call with
 * prefix="h.0" are the graph params h.0.NAME; the values the body names
 * are named h.0.NAME too, for show/report. */
#include <stdio.h>
#include <string.h>

#include "frontend/tg/build_internal.h"

typedef struct ModuleDef {
    const Stmt *def;
    bool failed; /* an instantiation reported errors: later calls stay quiet */
} ModuleDef;

typedef struct ModuleCall {
    struct ModuleCall *up;
    ModuleDef *md;
    const char *prefix; /* full prefix of the params, or NULL */
    const char *path;   /* prefix of value names */
    DefCall *dc;        /* what the values its body makes point at */
    DiagFrame frame;
    bool dup_reported; /* one "param already exists" per call */
} ModuleCall;

static ModuleDef *find_def(Builder *B, const char *name) {
    int *i = strmap_find(&B->def_index, name);
    return i ? &B->defs[*i] : NULL;
}

bool module_is_def(Builder *B, const char *name) {
    return find_def(B, name) != NULL;
}

void module_declare(Builder *B, const Stmt *def) {
    if (!def->def_name) return;
    ModuleDef *old = find_def(B, def->def_name);
    if (old) {
        diag_error(B->d, def->def_loc, "def '%s' is defined twice", def->def_name);
        diag_note(B->d, old->def->def_loc, "'%s' was defined here", def->def_name);
        return;
    }
    if (op_lookup(def->def_name) != OP_COUNT) {
        diag_error(B->d, def->def_loc,
                   "'%s' is an operation; a def cannot take its name (rename the def)",
                   def->def_name);
        return;
    }
    ModuleDef md = {.def = def};
    *strmap_at(B->a, &B->def_index, def->def_name, NULL) = B->ndefs;
    ARENA_PUSH(B->a, B->defs, B->ndefs, B->cap_defs, md);
}

static bool ast_has_prefix_call(const Ast *n) {
    if (!n) return false;
    if (n->kind == AST_CALL)
        for (int i = 0; i < n->nkw; i++)
            if (!strcmp(n->kw_names[i], "prefix")) return true;
    for (int i = 0; i < n->nitems; i++)
        if (ast_has_prefix_call(n->items[i])) return true;
    for (int i = 0; i < n->nkw; i++)
        if (ast_has_prefix_call(n->kw_values[i])) return true;
    for (int i = 0; i < 3; i++)
        if (ast_has_prefix_call(n->slice[i])) return true;
    return ast_has_prefix_call(n->lhs) || ast_has_prefix_call(n->rhs);
}

/* A def that declares params, or calls defs with prefix=, names params:
 * each of its calls needs a prefix of its own. */
static bool needs_prefix(const Stmt *def) {
    for (int i = 0; i < def->nbody; i++) {
        const Stmt *s = &def->body[i];
        if (s->kind == STMT_PARAM || ast_has_prefix_call(s->expr)) return true;
        for (int k = 0; k < s->nrets; k++)
            if (ast_has_prefix_call(s->rets[k])) return true;
    }
    return false;
}

/* A call (or repeat, of a def) that needs_prefix without prefix=: reported
 * with how to give one. */
static Ev no_prefix(Builder *B, const Stmt *def, SrcLoc loc, bool repeat) {
    if (repeat)
        diag_error(B->d, loc,
                   "def '%s' declares params, so repeat needs a prefix naming them: "
                   "repeat(%s, N, ..., prefix=\"NAME\") puts them under NAME.0, NAME.1, ...",
                   def->def_name, def->def_name);
    else
        diag_error(B->d, loc,
                   "def '%s' declares params, so a call of it needs a prefix naming them: "
                   "%s(..., prefix=\"NAME\")",
                   def->def_name, def->def_name);
    diag_note(B->d, def->def_loc, "'%s' is defined here", def->def_name);
    return (Ev){.kind = EV_ERR};
}

static const char *type_text(Builder *B, const Value *v) {
    char buf[256];
    int n = snprintf(buf, sizeof buf, "%s[", dtype_name(v->dtype));
    for (int i = 0; i < v->ndim && n < 200; i++)
        n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%lld", i ? ", " : "",
                      (long long)v->shape[i]);
    snprintf(buf + n, sizeof buf - (size_t)n, "]");
    return arena_strdup(B->a, buf);
}

bool module_param_name(Builder *B, const char *full, SrcLoc loc) {
    if (strmap_add(B->a, &B->pnames, full)) return true;
    if (B->call && B->call->dup_reported) return false;
    if (B->call) B->call->dup_reported = true;
    diag_error(B->d, loc,
               "param '%s' already exists: two calls use the same prefix, or a param of "
               "the graph has this name",
               full);
    return false;
}

const char *module_value_name(Builder *B, const char *local) {
    if (!B->call) return local;
    return arena_printf(B->a, "%s.%s", B->call->path, local);
}

void module_tag_top(Builder *B) {
    static const DefCall top = {.def = NULL, .path = "", .up = NULL};
    for (int i = 0; i < B->g->nvalues; i++)
        if (!B->g->values[i]->call) B->g->values[i]->call = &top;
}

const char *module_scope_hint(void) {
    return " (a def's body sees its arguments, its own names and params, the graph's "
           "dimensions and other defs)";
}

static bool arg_kind_ok(const Ev *e) {
    switch (e->kind) {
    case EV_TENSOR:
    case EV_INT:
    case EV_FLOAT:
    case EV_BOOL:
    case EV_DTYPE:
    case EV_LIST: return true;
    default: return false;
    }
}

static SrcLoc return_loc(const Stmt *def) {
    for (int i = def->nbody - 1; i >= 0; i--)
        if (def->body[i].kind == STMT_RETURN) return def->body[i].loc;
    return def->def_loc;
}

/* Lowers one call of md's def: its body in a fresh scope. */
static Ev instantiate(Builder *B, ModuleDef *md, const Ast *call, Ev *args, int nargs,
                      const char *prefix) {
    const Stmt *def = md->def;
    if (def->broken || md->failed) return (Ev){.kind = EV_ERR};
    for (ModuleCall *c = B->call; c; c = c->up)
        if (c->md == md) {
            diag_error(B->d, call->name_loc,
                       "recursive call of '%s': a def cannot call itself, directly or through "
                       "other defs",
                       def->def_name);
            return (Ev){.kind = EV_ERR};
        }
    if (nargs != def->nnames) {
        diag_error(B->d, call->name_loc, "%s takes %d argument%s, found %d", def->def_name,
                   def->nnames, def->nnames == 1 ? "" : "s", nargs);
        diag_note(B->d, def->def_loc, "'%s' is defined here", def->def_name);
        return (Ev){.kind = EV_ERR};
    }
    for (int i = 0; i < nargs; i++)
        if (!arg_kind_ok(&args[i])) {
            diag_error(B->d, args[i].loc,
                       "argument '%s' of %s must be a tensor, a number, a list or a dtype, "
                       "found %s",
                       def->names[i], def->def_name, bld_ev_kind_name(&args[i]));
            return (Ev){.kind = EV_ERR};
        }
    if (!prefix && needs_prefix(def)) return no_prefix(B, def, call->loc, false);
    ModuleCall mc = {.up = B->call, .md = md};
    if (prefix) {
        mc.prefix = B->call && B->call->prefix
                        ? arena_printf(B->a, "%s.%s", B->call->prefix, prefix)
                        : prefix;
        mc.path = mc.prefix;
    } else {
        const char *anon = arena_printf(B->a, "%s#%d", def->def_name, ++B->anon_calls);
        mc.path = B->call ? arena_printf(B->a, "%s.%s", B->call->path, anon) : anon;
    }
    mc.frame = (DiagFrame){.up = B->d->frame, .loc = call->loc, .what = def->def_name};
    mc.dc = ARENA_NEW(B->a, DefCall);
    *mc.dc = (DefCall){.def = def->def_name, .path = mc.path, .up = B->call ? B->call->dc : NULL};
    int first_value = B->g->nvalues;

    /* a scope of its own */
    Binding *binds = B->binds;
    int nbinds = B->nbinds, cap = B->cap, *index = B->index, index_cap = B->index_cap;
    bool too_deep = B->too_deep;
    B->binds = NULL, B->nbinds = 0, B->cap = 0, B->index = NULL, B->index_cap = 0;
    B->call = &mc;
    B->d->frame = &mc.frame;
    int errors = B->d->errors;

    /* Arguments shadow the graph's dimensions of the same name, as in Python. */
    for (int i = 0; i < nargs; i++) {
        if (!bld_name_free(B, def->names[i], def->name_locs[i])) continue;
        Ev a = args[i];
        bld_bind(B, def->names[i], def->name_locs[i], a.kind == EV_TENSOR ? BIND_VALUE : BIND_CONST,
                 a);
    }
    for (int i = 0; i < B->g->ndims; i++) {
        const Dim *dm = &B->g->dims[i];
        if (!bld_lookup(B, dm->name))
            bld_bind(B, dm->name, dm->loc, BIND_DIM,
                     (Ev){.kind = EV_INT, .i = dm->value, .loc = dm->loc});
    }
    Ev result = {.kind = EV_ERR};
    for (int i = 0; i < def->nbody && !diag_too_many(B->d); i++) {
        const Stmt *s = &def->body[i];
        B->too_deep = false;
        if (s->broken) {
            for (int k = 0; k < s->nnames; k++)
                if (!bld_lookup(B, s->names[k]))
                    bld_bind(B, s->names[k], s->name_locs[k], BIND_ERROR, (Ev){.kind = EV_ERR});
            continue;
        }
        if (s->kind == STMT_PARAM) {
            bld_stmt_leaf(B, s);
        } else if (s->kind == STMT_LET) {
            bld_stmt_let(B, s);
        } else if (s->kind == STMT_RETURN) {
            if (s->nrets == 1) {
                result = bld_eval(B, s->rets[0]);
            } else {
                result = (Ev){.kind = EV_TUPLE, .n = s->nrets, .loc = s->loc};
                result.items = ARENA_ARRAY(B->a, Ev, s->nrets);
                for (int k = 0; k < s->nrets; k++) {
                    result.items[k] = bld_eval(B, s->rets[k]);
                    if (result.items[k].kind == EV_ERR) result.kind = EV_ERR;
                    if (result.items[k].kind == EV_TUPLE) {
                        diag_error(B->d, s->rets[k]->loc,
                                   "a returned value must be one value, found several");
                        result.kind = EV_ERR;
                    }
                }
            }
            break;
        }
    }

    /* The values made here and not inside a nested call are this call's. */
    for (int i = first_value; i < B->g->nvalues; i++)
        if (!B->g->values[i]->call) B->g->values[i]->call = mc.dc;
    B->binds = binds, B->nbinds = nbinds, B->cap = cap, B->index = index, B->index_cap = index_cap;
    B->too_deep = too_deep;
    B->call = mc.up;
    B->d->frame = mc.frame.up;
    if (B->d->errors > errors) {
        md->failed = true;
        return (Ev){.kind = EV_ERR};
    }
    if (result.kind != EV_ERR) result.loc = call->loc;
    return result;
}

/* prefix="..." (the only keyword a call of a def takes). */
static bool call_prefix(Builder *B, const Ast *n, const char *who, const char **prefix) {
    *prefix = NULL;
    for (int k = 0; k < n->nkw; k++) {
        if (strcmp(n->kw_names[k], "prefix")) {
            diag_error(B->d, n->kw_locs[k],
                       "%s got an unexpected keyword argument '%s'; a call of a def takes its "
                       "arguments by position, and prefix=",
                       who, n->kw_names[k]);
            return false;
        }
        Ev p = bld_eval(B, n->kw_values[k]);
        if (p.kind == EV_ERR) return false;
        if (p.kind != EV_STR || !p.s[0]) {
            diag_error(B->d, n->kw_values[k]->loc, "prefix= must be a non-empty string, found %s",
                       p.kind == EV_STR ? "an empty string" : bld_ev_kind_name(&p));
            return false;
        }
        *prefix = p.s;
    }
    return true;
}

/* repeat(DEF, N, x, args..., prefix="h"): x_{i+1} = DEF(x_i, args..., prefix="h.i"). */
static Ev eval_repeat(Builder *B, const Ast *n, ModuleDef *md) {
    const Stmt *def = md->def;
    if (n->nitems < 3) {
        diag_error(B->d, n->loc,
                   "repeat(%s, N, x, args..., prefix=\"NAME\") needs the def, the count and at "
                   "least the first argument",
                   def->def_name);
        return (Ev){.kind = EV_ERR};
    }
    const char *prefix;
    if (!call_prefix(B, n, "repeat", &prefix)) return (Ev){.kind = EV_ERR};
    Ev count = bld_eval(B, n->items[1]);
    if (count.kind == EV_ERR) return count;
    if (count.kind != EV_INT || count.i < 0) {
        diag_error(B->d, n->items[1]->loc,
                   "repeat: the count must be a non-negative integer known at compile time, "
                   "found %s",
                   count.kind == EV_INT ? "a negative integer" : bld_ev_kind_name(&count));
        return (Ev){.kind = EV_ERR};
    }
    Ev *args;
    int nargs = n->nitems - 2;
    if (!bld_eval_list(B, n->items + 2, nargs, &args)) return (Ev){.kind = EV_ERR};
    if (args[0].kind != EV_TENSOR) {
        diag_error(B->d, args[0].loc, "repeat: the first argument of %s must be a tensor, found %s",
                   def->def_name, bld_ev_kind_name(&args[0]));
        return (Ev){.kind = EV_ERR};
    }
    if (!prefix && needs_prefix(def)) return no_prefix(B, def, n->loc, true);
    Ev r = args[0];
    for (int64_t i = 0; i < count.i; i++) {
        const char *p = prefix ? arena_printf(B->a, "%s.%lld", prefix, (long long)i) : NULL;
        r = instantiate(B, md, n, args, nargs, p);
        if (r.kind == EV_ERR) return r;
        Ev first = r.kind == EV_TUPLE ? r.items[0] : r;
        const Value *x = args[0].t, *y = first.kind == EV_TENSOR ? first.t : NULL;
        bool same = y && y->dtype == x->dtype && y->ndim == x->ndim;
        for (int k = 0; same && k < x->ndim; k++)
            same = x->shape[k] == y->shape[k];
        if (!same) {
            diag_error(B->d, return_loc(def),
                       "repeat: %s returns %s%s, but its first argument is %s; the output of one "
                       "application feeds the next, so they must match",
                       def->def_name, y ? type_text(B, y) : bld_ev_kind_name(&first),
                       r.kind == EV_TUPLE ? " first" : "", type_text(B, x));
            diag_note(B->d, n->loc, "in the call of repeat(%s, ...) here", def->def_name);
            md->failed = true;
            return (Ev){.kind = EV_ERR};
        }
        args[0] = first;
        args[0].loc = n->items[2]->loc;
    }
    if (r.kind != EV_ERR) r.loc = n->loc;
    return r;
}

bool module_call(Builder *B, const Ast *n, Ev *out) {
    if (n->kind != AST_CALL) return false;
    if (!strcmp(n->name, "repeat") && n->nitems >= 1 && n->items[0]->kind == AST_NAME) {
        ModuleDef *md = find_def(B, n->items[0]->name);
        if (md) {
            *out = eval_repeat(B, n, md);
            return true;
        }
    }
    ModuleDef *md = find_def(B, n->name);
    if (!md) return false;
    const char *prefix;
    Ev *args;
    if (!call_prefix(B, n, md->def->def_name, &prefix) ||
        !bld_eval_list(B, n->items, n->nitems, &args)) {
        *out = (Ev){.kind = EV_ERR};
        return true;
    }
    *out = instantiate(B, md, n, args, n->nitems, prefix);
    return true;
}

/* The chain a.b.c of attribute names over a plain name, or NULL. */
static const char *dotted_text(Builder *B, const Ast *n) {
    if (n->paren) return NULL;
    if (n->kind == AST_NAME) return n->name;
    if (n->kind != AST_ATTR) return NULL;
    const char *lhs = dotted_text(B, n->lhs);
    return lhs ? arena_printf(B->a, "%s.%s", lhs, n->name) : NULL;
}

static const char *base_name(const Ast *n) {
    while (n->kind == AST_ATTR)
        n = n->lhs;
    return n->kind == AST_NAME ? n->name : NULL;
}

bool module_dotted(Builder *B, const Ast *n, Ev *out) {
    /* Every dotted binding starts with "BASE.": without one, the chain names
     * nothing, and its text (quadratic to build along a long x.T.T... chain,
     * which eval meets at every link) is not needed. */
    const char *base = base_name(n);
    if (!base) return false;
    size_t bl = strlen(base);
    bool dotted_param = false;
    for (int i = 0; i < B->nbinds && !dotted_param; i++)
        dotted_param = !strncmp(B->binds[i].name, base, bl) && B->binds[i].name[bl] == '.';
    if (!dotted_param) return false;
    const char *full = dotted_text(B, n);
    if (!full) return false;
    Binding *b = bld_lookup(B, full);
    if (b) {
        *out = b->kind == BIND_ERROR ? (Ev){.kind = EV_ERR} : b->ev;
        out->loc = n->loc;
        return true;
    }
    /* ln_1.wieght: the base names nothing, but dotted params start with it. */
    if (bld_lookup(B, base)) return false;
    /* The longest dotted prefix of the chain may be a param (x.weight.T): let the
     * attribute path handle it when it is. */
    for (const Ast *m = n->lhs; m && m->kind == AST_ATTR; m = m->lhs) {
        const char *t = dotted_text(B, m);
        if (t && bld_lookup(B, t)) return false;
    }
    const char *s = bld_suggest(B, full, false);
    if (s)
        diag_error(B->d, n->loc, "unknown name '%s'; did you mean '%s'?", full, s);
    else
        diag_error(B->d, n->loc, "unknown name '%s'", full);
    *out = (Ev){.kind = EV_ERR};
    return true;
}
