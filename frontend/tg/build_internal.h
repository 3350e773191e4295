/* Internals of the AST -> IR lowering shared by its files: build_scope.c
 * (names), build_args.c (argument binding), build_expr.c (expressions),
 * build.c (statements) and build_module.c (def, calls with prefix=, repeat). */
#ifndef TGC_BUILD_INTERNAL_H
#define TGC_BUILD_INTERNAL_H
#include "frontend/tg/ast.h"
#include "frontend/tg/build.h"
#include "ir/infer.h"
#include "ir/ir.h"
#include "support/strmap.h"

typedef enum {
    EV_ERR,
    EV_TENSOR,
    EV_INT,
    EV_FLOAT,
    EV_BOOL,
    EV_STR,
    EV_NONE,
    EV_DTYPE,
    EV_LIST,
    EV_TUPLE,
    EV_ELLIPSIS,
    EV_SLICE
} EvKind;

typedef struct Ev Ev;
struct Ev {
    EvKind kind;
    SrcLoc loc;
    Value *t;
    int64_t i;
    double f;
    const char *s;
    DType dt;
    Ev *items; /* LIST, TUPLE, SLICE (3 items: start, stop, step; EV_NONE when absent) */
    int n;
    bool inexact_div; /* a FLOAT made by int / int that did not divide: num / den */
    int64_t num, den;
};

typedef enum { BIND_VALUE, BIND_CONST, BIND_DIM, BIND_ERROR } BindKind;
typedef struct Binding {
    const char *name;
    BindKind kind;
    Ev ev; /* value or constant */
    SrcLoc loc;
} Binding;

typedef struct Builder {
    Arena *a;
    Diag *d;
    Graph *g;
    InferCtx ic;
    BuildLowerFn lower; /* build.h */
    Binding *binds;
    int nbinds, cap;
    int *index; /* open-addressing hash of binding positions (+1; 0 = empty) */
    int index_cap;
    int depth;     /* recursion depth of eval(): long operator chains nest deeply */
    bool too_deep; /* reported once per statement */
    /* modules (build_module.c) */
    struct ModuleDef *defs; /* every def of the program */
    int ndefs, cap_defs;
    StrMap def_index;        /* def name -> its index in defs */
    struct ModuleCall *call; /* the innermost def call being lowered, or NULL */
    StrMap pnames;           /* full names of the graph's params */
    int anon_calls;          /* calls without prefix=, numbered for value names */
} Builder;

/* The positional and keyword arguments of a call, evaluated. */
typedef struct CallArgs {
    Ev *pos;
    int npos;
    const char **kw;
    SrcLoc *kw_locs;
    Ev *kwv;
    int nkw;
} CallArgs;

/* build_scope.c: names, bound once */
Ev bld_ev_err(void);
const char *bld_ev_kind_name(const Ev *e);
Binding *bld_lookup(Builder *B, const char *name);
void bld_bind(Builder *B, const char *name, SrcLoc loc, BindKind kind, Ev ev);
/* Checks a new name is free; reports the earlier binding otherwise. */
bool bld_name_free(Builder *B, const char *name, SrcLoc loc);
/* A close known name for "did you mean" hints: among the ops (ops) or the
 * bindings; NULL when none is close. */
const char *bld_suggest(Builder *B, const char *name, bool ops);
Value *bld_add_value(Builder *B, Value *v);
Value *bld_make_scalar(Builder *B, const Ev *e);

/* build_args.c: calls of ops, through the op table's signatures */
bool bld_is_number(const Ev *e);
Ev bld_call_op(Builder *B, OpCode op, SrcLoc loc, SrcLoc name_loc, CallArgs *ca);
Ev bld_call_simple(Builder *B, OpCode op, SrcLoc loc, int n, Ev *pos);

/* build_expr.c: expressions */
Ev bld_eval(Builder *B, const Ast *n);
/* Evaluates n items into *out (arena); false when one is an error. */
bool bld_eval_list(Builder *B, Ast *const *items, int n, Ev **out);

/* build.c: statements */
void bld_stmt_let(Builder *B, const Stmt *s);
void bld_stmt_leaf(Builder *B, const Stmt *s);

/* build_module.c */
/* Records a def (before any statement is lowered, so defs may call defs
 * declared later). */
void module_declare(Builder *B, const Stmt *def);
/* A call of a def or repeat(DEF, ...): true when n is one, with *out its value. */
bool module_call(Builder *B, const Ast *n, Ev *out);
/* A dotted name a.b.c naming a param in scope: true with *out its value. */
bool module_dotted(Builder *B, const Ast *n, Ev *out);
/* The name a value bound to `local` gets: prefix.local inside a call. */
const char *module_value_name(Builder *B, const char *local);
/* Whether a def of that name exists. */
bool module_is_def(Builder *B, const char *name);
/* Appended to "unknown name" inside a def's body. */
const char *module_scope_hint(void);
/* Registers a param's full name; false (reported) when it exists already. */
bool module_param_name(Builder *B, const char *full, SrcLoc loc);
/* Points the values made outside every def call at the top level's DefCall
 * (no def): Value.call NULL is then a later pass's value. */
void module_tag_top(Builder *B);
#endif
