/* Syntax tree of a .tg file: what the parser produces and frontend/tg/build.c lowers. */
#ifndef TGC_AST_H
#define TGC_AST_H
#include <stdint.h>

#include "support/diag.h"
#include "frontend/tg/lexer.h"

typedef enum {
    AST_NAME,  /* name */
    AST_INT,   /* ival */
    AST_FLOAT, /* fval */
    AST_STR,   /* str */
    AST_BOOL,  /* ival */
    AST_NONE,
    AST_ELLIPSIS, /* ... inside an index */
    AST_LIST,     /* [a, b] or (a, b): items */
    AST_BINARY,   /* lhs op rhs */
    AST_UNARY,    /* op lhs */
    AST_CALL,     /* name(items, kw...) */
    AST_METHOD,   /* lhs.name(items, kw...) */
    AST_ATTR,     /* lhs.name */
    AST_INDEX,    /* lhs[items] */
    AST_SLICE,    /* slice[0]:slice[1]:slice[2], each may be NULL */
} AstKind;

typedef struct Ast Ast;
struct Ast {
    AstKind kind;
    SrcLoc loc;      /* the whole expression */
    SrcLoc name_loc; /* for calls, methods, attributes: the name itself */
    TokKind op;
    const char *name;
    const char *str;
    int64_t ival;
    double fval;
    Ast *lhs, *rhs;
    Ast *slice[3];
    Ast **items;
    int nitems;
    const char **kw_names;
    SrcLoc *kw_locs;
    Ast **kw_values;
    int nkw;
    int paren; /* written inside parentheses: a tuple of one is not a list */
};

typedef enum { STMT_INPUT, STMT_PARAM, STMT_LET, STMT_OUTPUT, STMT_DEF, STMT_RETURN } StmtKind;

typedef struct TypeAst {
    const char *dtype;
    SrcLoc dtype_loc;
    Ast **dims;
    int ndims;
    SrcLoc loc;
} TypeAst;

typedef struct Stmt Stmt;
struct Stmt {
    StmtKind kind;
    SrcLoc loc;
    const char **names;
    SrcLoc *name_locs;
    int nnames;
    TypeAst type; /* input, param */
    Ast *expr;    /* let, output with "=", param initialiser */
    bool state;   /* a param declared `state` (graph-language "State") */
    bool broken;  /* had a syntax error: its names are bound to nothing, quietly */
    /* def NAME(names...): body. A param's name may be dotted (ln_1.weight). */
    const char *def_name;
    SrcLoc def_loc; /* the def's name */
    Stmt *body;
    int nbody;
    /* return a, b: the values */
    Ast **rets;
    int nrets;
};

typedef struct Program {
    const char *name;
    SrcLoc name_loc;
    bool has_graph;
    const char **dim_names;
    SrcLoc *dim_locs;
    Ast **dim_defaults;
    int ndims;
    Stmt *stmts;
    int nstmts;
} Program;

/* Parses a token list; syntax errors go to diag and the parser resumes at
 * the next line, so one run reports every independent error. */
Program *parse_program(Arena *a, Diag *d, TokenList toks);
#endif
