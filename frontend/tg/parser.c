/* Recursive-descent parser for .tg files. Each function's grammar rule sits
 * above it. On a syntax error the statement is abandoned and parsing resumes
 * after the next newline. */
#include <stdarg.h>
#include <string.h>

#include "frontend/tg/ast.h"
#include "support/strmap.h"

typedef struct Parser {
    Arena *a;
    Diag *d;
    Token *t;
    int pos, count;
    bool failed; /* the current statement already reported an error */
    int nesting; /* recursion depth of the expression being parsed */
} Parser;

/* Deeper expressions than this are an error rather than a stack overflow,
 * in the parser and in every later recursive walk of the tree. */
enum { MAX_NESTING = 256 };

static Token *peek(Parser *P) {
    return &P->t[P->pos];
}
static Token *peek_at(Parser *P, int k) {
    int i = P->pos + k;
    return &P->t[i < P->count ? i : P->count - 1];
}
static bool at(Parser *P, TokKind k) {
    return peek(P)->kind == k;
}
static Token *next(Parser *P) {
    Token *t = peek(P);
    if (t->kind != TK_EOF) P->pos++;
    return t;
}
static bool accept(Parser *P, TokKind k) {
    if (!at(P, k)) return false;
    next(P);
    return true;
}

static void describe(Token *t, char *buf, size_t n) {
    switch (t->kind) {
    case TK_IDENT: snprintf(buf, n, "name '%s'", t->text); break;
    case TK_INT:
    case TK_FLOAT:
        snprintf(buf, n, "number '%.*s'", t->loc.len, t->loc.file->text + t->loc.off);
        break;
    case TK_STRING: snprintf(buf, n, "a string"); break;
    default: snprintf(buf, n, "%s", tok_kind_name(t->kind));
    }
}

static void syntax_error(Parser *P, Token *t, const char *expected) {
    if (P->failed) return;
    P->failed = true;
    char found[96];
    describe(t, found, sizeof found);
    diag_error(P->d, t->loc, "expected %s, found %s", expected, found);
}

static void parse_error(Parser *P, SrcLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void parse_error(Parser *P, SrcLoc loc, const char *fmt, ...) {
    if (P->failed) return;
    P->failed = true;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    diag_error(P->d, loc, "%s", buf);
}

static Token *expect(Parser *P, TokKind k, const char *what) {
    if (at(P, k)) return next(P);
    syntax_error(P, peek(P), what ? what : tok_kind_name(k));
    return NULL;
}

static Ast *new_ast(Parser *P, AstKind kind, SrcLoc loc) {
    Ast *n = ARENA_NEW(P->a, Ast);
    n->kind = kind;
    n->loc = loc;
    n->name_loc = loc;
    return n;
}

static SrcLoc prev_loc(Parser *P) {
    return P->t[P->pos > 0 ? P->pos - 1 : 0].loc;
}

static Ast *parse_expr(Parser *P);

/* args := (expr | NAME '=' expr) (',' ...)* [','] */
static bool parse_args(Parser *P, Ast *call, TokKind close) {
    int cap_items = 0, cap_kw = 0, cap_kwl = 0, cap_kwv = 0;
    while (!at(P, close)) {
        if (at(P, TK_IDENT) && peek_at(P, 1)->kind == TK_ASSIGN) {
            Token *name = next(P);
            next(P);
            Ast *v = parse_expr(P);
            if (!v) return false;
            for (int i = 0; i < call->nkw; i++)
                if (!strcmp(call->kw_names[i], name->text)) {
                    parse_error(P, name->loc, "keyword argument '%s' given twice", name->text);
                    return false;
                }
            int n = call->nkw, n2 = call->nkw, n3 = call->nkw;
            ARENA_PUSH(P->a, call->kw_names, n, cap_kw, name->text);
            ARENA_PUSH(P->a, call->kw_locs, n2, cap_kwl, name->loc);
            ARENA_PUSH(P->a, call->kw_values, n3, cap_kwv, v);
            call->nkw++;
        } else {
            Token *start = peek(P);
            Ast *v = parse_expr(P);
            if (!v) return false;
            if (call->nkw) {
                parse_error(P, start->loc, "positional argument after a keyword argument");
                return false;
            }
            ARENA_PUSH(P->a, call->items, call->nitems, cap_items, v);
        }
        if (!accept(P, TK_COMMA)) break;
    }
    Token *end = expect(P, close, close == TK_RPAREN ? "',' or ')'" : "',' or ']'");
    if (!end) return false;
    call->loc = loc_span(call->loc, end->loc);
    return true;
}

/* subscript := expr | [expr] ':' [expr] [':' [expr]] | 'None' | '...' */
static Ast *parse_subscript(Parser *P) {
    Token *start = peek(P);
    if (accept(P, TK_ELLIPSIS)) return new_ast(P, AST_ELLIPSIS, start->loc);
    Ast *first = NULL;
    if (!at(P, TK_COLON)) {
        first = parse_expr(P);
        if (!first || !at(P, TK_COLON)) return first;
    }
    Ast *s = new_ast(P, AST_SLICE, start->loc);
    s->slice[0] = first;
    for (int part = 1; part < 3 && accept(P, TK_COLON); part++) {
        if (!at(P, TK_COLON) && !at(P, TK_COMMA) && !at(P, TK_RBRACKET)) {
            s->slice[part] = parse_expr(P);
            if (!s->slice[part]) return NULL;
        }
    }
    s->loc = loc_span(start->loc, prev_loc(P));
    return s;
}

/* [expr (',' expr)* [',']] up to ']', appended to *items (*n of them):
 * the ']', or NULL after a report. */
static Token *parse_bracket_items(Parser *P, Ast ***items, int *n) {
    int cap = 0;
    while (!at(P, TK_RBRACKET)) {
        Ast *x = parse_expr(P);
        if (!x) return NULL;
        ARENA_PUSH(P->a, *items, *n, cap, x);
        if (!accept(P, TK_COMMA)) break;
    }
    return expect(P, TK_RBRACKET, "',' or ']'");
}

/* The next token, a name or a literal, as its leaf node of kind k. */
static Ast *leaf(Parser *P, AstKind k) {
    Token *t = next(P);
    Ast *n = new_ast(P, k, t->loc);
    switch (k) {
    case AST_NAME: n->name = t->text; break;
    case AST_INT: n->ival = t->ival; break;
    case AST_FLOAT: n->fval = t->fval; break;
    case AST_STR: n->str = t->text; break;
    case AST_BOOL: n->ival = t->kind == TK_TRUE; break;
    default: break;
    }
    return n;
}

/* atom := NAME | INT | FLOAT | STRING | true | false | None | '(' expr [',' ...] ')'
 *       | '[' [expr (',' expr)*] ']' */
static Ast *parse_atom(Parser *P) {
    Token *t = peek(P);
    switch (t->kind) {
    case TK_IDENT: return leaf(P, AST_NAME);
    case TK_INT: return leaf(P, AST_INT);
    case TK_FLOAT: return leaf(P, AST_FLOAT);
    case TK_STRING: return leaf(P, AST_STR);
    case TK_TRUE:
    case TK_FALSE: return leaf(P, AST_BOOL);
    case TK_NONE: return leaf(P, AST_NONE);
    case TK_LPAREN: {
        next(P);
        if (at(P, TK_RPAREN)) { /* () is an empty tuple */
            Ast *n = new_ast(P, AST_LIST, loc_span(t->loc, next(P)->loc));
            return n;
        }
        Ast *e = parse_expr(P);
        if (!e) return NULL;
        if (at(P, TK_COMMA)) {
            Ast *list = new_ast(P, AST_LIST, t->loc);
            int cap = 0;
            ARENA_PUSH(P->a, list->items, list->nitems, cap, e);
            while (accept(P, TK_COMMA) && !at(P, TK_RPAREN)) {
                Ast *x = parse_expr(P);
                if (!x) return NULL;
                ARENA_PUSH(P->a, list->items, list->nitems, cap, x);
            }
            Token *end = expect(P, TK_RPAREN, "',' or ')'");
            if (!end) return NULL;
            list->loc = loc_span(t->loc, end->loc);
            return list;
        }
        Token *end = expect(P, TK_RPAREN, "')'");
        if (!end) return NULL;
        e->paren = 1;
        return e;
    }
    case TK_LBRACKET: {
        next(P);
        Ast *list = new_ast(P, AST_LIST, t->loc);
        Token *end = parse_bracket_items(P, &list->items, &list->nitems);
        if (!end) return NULL;
        list->loc = loc_span(t->loc, end->loc);
        return list;
    }
    default: syntax_error(P, t, "an expression"); return NULL;
    }
}

/* postfix := atom ('(' args ')' | '.' NAME ['(' args ')'] | '[' subscripts ']')* */
static Ast *parse_postfix(Parser *P) {
    Ast *e = parse_atom(P);
    while (e) {
        Token *t = peek(P);
        if (t->kind == TK_LPAREN) {
            if (e->kind != AST_NAME || e->paren) {
                syntax_error(P, t, "an operator or end of line (only names can be called)");
                return NULL;
            }
            next(P);
            e->kind = AST_CALL;
            e->name_loc = e->loc;
            if (!parse_args(P, e, TK_RPAREN)) return NULL;
        } else if (t->kind == TK_DOT) {
            next(P);
            Token *name = expect(P, TK_IDENT, "a method or attribute name after '.'");
            if (!name) return NULL;
            Ast *m = new_ast(P, AST_ATTR, loc_span(e->loc, name->loc));
            m->name = name->text;
            m->name_loc = name->loc;
            m->lhs = e;
            if (accept(P, TK_LPAREN)) {
                m->kind = AST_METHOD;
                if (!parse_args(P, m, TK_RPAREN)) return NULL;
            }
            e = m;
        } else if (t->kind == TK_LBRACKET) {
            next(P);
            Ast *ix = new_ast(P, AST_INDEX, e->loc);
            ix->lhs = e;
            int cap = 0;
            if (at(P, TK_RBRACKET)) {
                syntax_error(P, peek(P), "an index");
                return NULL;
            }
            while (!at(P, TK_RBRACKET)) {
                Ast *s = parse_subscript(P);
                if (!s) return NULL;
                ARENA_PUSH(P->a, ix->items, ix->nitems, cap, s);
                if (!accept(P, TK_COMMA)) break;
            }
            Token *end = expect(P, TK_RBRACKET, "',' or ']'");
            if (!end) return NULL;
            ix->loc = loc_span(e->loc, end->loc);
            e = ix;
        } else {
            break;
        }
    }
    return e;
}

static Ast *parse_unary(Parser *P);

static Ast *binary(Parser *P, TokKind op, Ast *l, Ast *r, SrcLoc op_loc) {
    Ast *n = new_ast(P, AST_BINARY, loc_span(l->loc, r->loc));
    n->op = op;
    n->lhs = l;
    n->rhs = r;
    n->name_loc = op_loc;
    return n;
}

/* power := postfix ['**' unary]   (right-associative, binds tighter than unary minus on its left)
 */
static Ast *parse_power(Parser *P) {
    Ast *base = parse_postfix(P);
    if (!base || !at(P, TK_POW)) return base;
    Token *op = next(P);
    Ast *exp = parse_unary(P);
    return exp ? binary(P, TK_POW, base, exp, op->loc) : NULL;
}

/* unary := ('-' | '+' | '~') unary | power */
static Ast *parse_unary_inner(Parser *P);

static Ast *parse_unary(Parser *P) {
    if (P->nesting >= MAX_NESTING) {
        parse_error(P, peek(P)->loc, "expression is nested too deeply (more than %d levels)",
                    MAX_NESTING);
        return NULL;
    }
    P->nesting++;
    Ast *r = parse_unary_inner(P);
    P->nesting--;
    return r;
}

static Ast *parse_unary_inner(Parser *P) {
    Token *t = peek(P);
    if (t->kind == TK_MINUS || t->kind == TK_PLUS || t->kind == TK_TILDE) {
        next(P);
        Ast *x = parse_unary(P);
        if (!x) return NULL;
        if (t->kind == TK_PLUS) return x;
        Ast *n = new_ast(P, AST_UNARY, loc_span(t->loc, x->loc));
        n->op = t->kind;
        n->lhs = x;
        n->name_loc = t->loc;
        return n;
    }
    return parse_power(P);
}

/* One level of left-associative binary operators: sub (op sub)*, with op
 * one of ops (ended by TK_EOF). */
static Ast *parse_left(Parser *P, Ast *(*sub)(Parser *), const TokKind *ops) {
    Ast *l = sub(P);
    while (l) {
        TokKind k = peek(P)->kind;
        int i = 0;
        while (ops[i] != TK_EOF && ops[i] != k)
            i++;
        if (ops[i] == TK_EOF) break;
        Token *op = next(P);
        Ast *r = sub(P);
        l = r ? binary(P, k, l, r, op->loc) : NULL;
    }
    return l;
}

/* term := unary (('*' | '/' | '@' | '%' | '//') unary)* */
static Ast *parse_term(Parser *P) {
    static const TokKind ops[] = {TK_STAR, TK_SLASH, TK_AT, TK_PERCENT, TK_FLOORDIV, TK_EOF};
    return parse_left(P, parse_unary, ops);
}

/* sum := term (('+' | '-') term)* */
static Ast *parse_sum(Parser *P) {
    static const TokKind ops[] = {TK_PLUS, TK_MINUS, TK_EOF};
    return parse_left(P, parse_term, ops);
}

static bool is_cmp(TokKind k) {
    return k == TK_LT || k == TK_LE || k == TK_GT || k == TK_GE || k == TK_EQ || k == TK_NE;
}

/* comparison := sum [cmpop sum]   (not chained) */
static Ast *parse_comparison(Parser *P) {
    Ast *l = parse_sum(P);
    if (!l || !is_cmp(peek(P)->kind)) return l;
    Token *op = next(P);
    Ast *r = parse_sum(P);
    if (!r) return NULL;
    Ast *n = binary(P, op->kind, l, r, op->loc);
    if (is_cmp(peek(P)->kind)) {
        Token *t = peek(P);
        parse_error(P, t->loc, "comparisons cannot be chained; write (a < b) & (b < c) instead");
        return NULL;
    }
    return n;
}

/* conj := comparison ('&' comparison)* ;  expr := conj ('|' conj)* */
static Ast *parse_conj(Parser *P) {
    static const TokKind ops[] = {TK_AMP, TK_EOF};
    return parse_left(P, parse_comparison, ops);
}

static Ast *parse_expr(Parser *P) {
    static const TokKind ops[] = {TK_PIPE, TK_EOF};
    return parse_left(P, parse_conj, ops);
}

/* type := NAME '[' [expr (',' expr)*] ']' */
static bool parse_type(Parser *P, TypeAst *ty) {
    Token *dt = expect(P, TK_IDENT, "a dtype such as f32");
    if (!dt) return false;
    ty->dtype = dt->text;
    ty->dtype_loc = dt->loc;
    if (!expect(P, TK_LBRACKET, "'[' and the dimensions (write f32[] for a scalar)")) return false;
    Token *end = parse_bracket_items(P, &ty->dims, &ty->ndims);
    if (!end) return false;
    ty->loc = loc_span(dt->loc, end->loc);
    return true;
}

static void end_statement(Parser *P) {
    if (!P->failed && !at(P, TK_NEWLINE) && !at(P, TK_EOF)) syntax_error(P, peek(P), "end of line");
    while (!at(P, TK_NEWLINE) && !at(P, TK_EOF))
        next(P);
    accept(P, TK_NEWLINE);
}

static void add_name(Parser *P, Stmt *s, Token *t, int *cap, int *cap2) {
    int n = s->nnames;
    ARENA_PUSH(P->a, s->names, n, *cap, t->text);
    ARENA_PUSH(P->a, s->name_locs, s->nnames, *cap2, t->loc);
}

/* graph := 'graph' NAME ['(' [NAME '=' expr (',' NAME '=' expr)*] ')'] */
static void parse_graph(Parser *P, Program *prog) {
    Token *kw = next(P);
    Token *name = expect(P, TK_IDENT, "the graph's name after 'graph'");
    prog->has_graph = true;
    if (!name) return;
    prog->name = name->text;
    prog->name_loc = name->loc;
    if (!accept(P, TK_LPAREN)) return;
    int c1 = 0, c2 = 0, c3 = 0;
    StrMap seen = {0}; /* a graph may declare tens of thousands of dims */
    while (!at(P, TK_RPAREN)) {
        Token *d = expect(P, TK_IDENT, "a dimension name");
        if (!d || !expect(P, TK_ASSIGN, "'=' and the dimension's default value")) return;
        Ast *e = parse_expr(P);
        if (!e) return;
        if (!strmap_add(P->a, &seen, d->text)) {
            parse_error(P, d->loc, "dimension '%s' is declared twice", d->text);
            return;
        }
        int n = prog->ndims, n2 = prog->ndims;
        ARENA_PUSH(P->a, prog->dim_names, n, c1, d->text);
        ARENA_PUSH(P->a, prog->dim_locs, n2, c2, d->loc);
        ARENA_PUSH(P->a, prog->dim_defaults, prog->ndims, c3, e);
        if (!accept(P, TK_COMMA)) break;
    }
    expect(P, TK_RPAREN, "',' or ')'");
    (void)kw;
}

/* stmt := 'input' NAME ':' type | 'param' NAME ':' type ['=' expr] | 'state' NAME ':' type
 *       | 'output' NAME ['=' expr] | NAME (',' NAME)* '=' expr */
static bool parse_stmt(Parser *P, Stmt *s, bool in_def) {
    Token *t = peek(P);
    int c1 = 0, c2 = 0;
    s->loc = t->loc;
    if (in_def && (t->kind == TK_INPUT || t->kind == TK_OUTPUT)) {
        parse_error(P, t->loc,
                    t->kind == TK_INPUT
                        ? "'input' is not allowed inside a def (a def's inputs are its arguments)"
                        : "'output' is not allowed inside a def (return the value and mark it "
                          "an output at the top level)");
        return false;
    }
    /* 'state' is a keyword only before a name: a value may still be called state. */
    bool state =
        t->kind == TK_IDENT && !strcmp(t->text, "state") && peek_at(P, 1)->kind == TK_IDENT;
    if (t->kind == TK_INPUT || t->kind == TK_PARAM || state) {
        next(P);
        s->kind = t->kind == TK_INPUT ? STMT_INPUT : STMT_PARAM;
        s->state = state;
        Token *name = expect(P, TK_IDENT,
                             t->kind == TK_INPUT ? "the input's name"
                             : state             ? "the state's name"
                                                 : "the param's name");
        if (!name) return false;
        if (s->kind == STMT_PARAM && at(P, TK_DOT)) { /* a dotted name: ln_1.weight */
            Token dotted = *name;
            size_t len = strlen(name->text);
            char *buf = NULL;
            while (accept(P, TK_DOT)) {
                Token *part = expect(P, TK_IDENT, "a name after '.' in the param's dotted name");
                if (!part) return false;
                size_t l2 = strlen(part->text);
                char *nb = arena_alloc(P->a, len + l2 + 2);
                memcpy(nb, buf ? buf : name->text, len);
                nb[len] = '.';
                memcpy(nb + len + 1, part->text, l2 + 1);
                buf = nb;
                len += l2 + 1;
                dotted.loc = loc_span(dotted.loc, part->loc);
            }
            dotted.text = buf;
            add_name(P, s, &dotted, &c1, &c2);
        } else {
            add_name(P, s, name, &c1, &c2);
        }
        if (!expect(P, TK_COLON, "':' and a type such as f32[batch, 784]")) return false;
        if (!parse_type(P, &s->type)) return false;
        if (state && at(P, TK_ASSIGN)) {
            parse_error(P, peek(P)->loc,
                        "a state has no initialiser: it is zero when a context is created and "
                        "after a reset, then holds what the program writes into it");
            return false;
        }
        if (s->kind == STMT_PARAM && accept(P, TK_ASSIGN)) {
            s->expr = parse_expr(P);
            if (!s->expr) return false;
        } else if (s->kind == STMT_INPUT && at(P, TK_ASSIGN)) {
            syntax_error(P, peek(P), "end of line (inputs have no initialiser; use 'param')");
            return false;
        }
        return true;
    }
    if (t->kind == TK_OUTPUT) {
        next(P);
        s->kind = STMT_OUTPUT;
        Token *name = expect(P, TK_IDENT, "the output's name");
        if (!name) return false;
        add_name(P, s, name, &c1, &c2);
        if (accept(P, TK_ASSIGN)) {
            s->expr = parse_expr(P);
            if (!s->expr) return false;
        }
        return true;
    }
    if (t->kind == TK_GRAPH) {
        parse_error(P, t->loc, "'graph' may appear only once, as the first statement");
        return false;
    }
    if (t->kind == TK_DEF) {
        if (in_def) {
            parse_error(P, t->loc,
                        "a def cannot be nested inside another def; define it at the "
                        "top level and call it from here");
            return false;
        }
        next(P);
        s->kind = STMT_DEF;
        Token *name = expect(P, TK_IDENT, "the def's name after 'def'");
        if (!name) return false;
        s->def_name = name->text;
        s->def_loc = name->loc;
        if (!expect(P, TK_LPAREN, "'(' and the def's arguments")) return false;
        while (!at(P, TK_RPAREN)) {
            Token *arg = expect(P, TK_IDENT, "an argument name");
            if (!arg) return false;
            for (int i = 0; i < s->nnames; i++)
                if (!strcmp(s->names[i], arg->text)) {
                    parse_error(P, arg->loc, "argument '%s' appears twice", arg->text);
                    return false;
                }
            add_name(P, s, arg, &c1, &c2);
            if (!accept(P, TK_COMMA)) break;
        }
        if (!expect(P, TK_RPAREN, "',' or ')'")) return false;
        return expect(P, TK_COLON, "':' after the def's arguments") != NULL;
    }
    if (t->kind == TK_RETURN) {
        if (!in_def) {
            parse_error(P, t->loc, "'return' outside a def");
            return false;
        }
        next(P);
        s->kind = STMT_RETURN;
        int cap = 0;
        do {
            Ast *e = parse_expr(P);
            if (!e) return false;
            ARENA_PUSH(P->a, s->rets, s->nrets, cap, e);
        } while (accept(P, TK_COMMA) && !at(P, TK_NEWLINE) && !at(P, TK_EOF));
        return true;
    }
    if (t->kind != TK_IDENT) {
        syntax_error(P, t, "a statement (input, param, output or NAME = expression)");
        return false;
    }
    s->kind = STMT_LET;
    for (;;) {
        Token *name = expect(P, TK_IDENT, "a name");
        if (!name) return false;
        add_name(P, s, name, &c1, &c2);
        if (!accept(P, TK_COMMA)) break;
    }
    if (!expect(P, TK_ASSIGN,
                s->nnames > 1 ? "'='" : "'=' (a statement binds a name: NAME = expression)"))
        return false;
    s->expr = parse_expr(P);
    return s->expr != NULL;
}

/* One statement and its end of line; a broken statement is kept (flagged)
 * when it declares names, so later uses of them stay quiet. */
static bool parse_one(Parser *P, Stmt *s, bool in_def) {
    P->failed = false;
    P->nesting = 0;
    for (int k = P->pos; k < P->count && P->t[k].kind != TK_NEWLINE && P->t[k].kind != TK_EOF; k++)
        if (P->t[k].bad) P->failed = true;
    bool quiet = P->failed;
    bool ok = parse_stmt(P, s, in_def);
    end_statement(P); /* trailing junk fails the statement too */
    ok = ok && !quiet && !P->failed;
    if (!ok) s->broken = true;
    return ok || s->nnames || s->kind == STMT_DEF || s->kind == STMT_RETURN;
}

/* An INDENT where no block opens: reported (unless the lexer already
 * complained about this line), then the line is parsed as usual. */
static void unexpected_indent(Parser *P) {
    Token *t = next(P);
    if (!t->bad)
        diag_error(P->d, t->loc,
                   "unexpected indentation: only the body of a def is indented (one level)");
}

/* body := NEWLINE INDENT stmt+ DEDENT, ending in 'return'. */
static void parse_body(Parser *P, Stmt *def) {
    if (!at(P, TK_INDENT)) {
        if (!def->broken)
            diag_error(P->d, peek(P)->loc,
                       "expected the indented body of def '%s' on the next line", def->def_name);
        def->broken = true;
        return;
    }
    next(P);
    int extra = 0, cap = 0;
    bool saw_return = false, after_return = false;
    while (!at(P, TK_EOF) && !diag_too_many(P->d)) {
        if (accept(P, TK_NEWLINE)) continue;
        if (at(P, TK_INDENT)) {
            unexpected_indent(P);
            extra++;
            continue;
        }
        if (at(P, TK_DEDENT)) {
            next(P);
            if (extra) {
                extra--;
                continue;
            }
            break;
        }
        Stmt s = {0};
        bool is_return = at(P, TK_RETURN);
        if (saw_return && !after_return) {
            after_return = true;
            diag_error(P->d, peek(P)->loc,
                       "a statement after 'return' in def '%s'; return must be the last statement",
                       def->def_name);
        }
        if (at(P, TK_DEF)) { /* a nested def: reported, and its body skipped */
            parse_one(P, &s, true);
            for (int depth = 0; at(P, TK_INDENT) || (depth && !at(P, TK_EOF));) { /* its body */
                if (at(P, TK_INDENT)) depth++;
                if (at(P, TK_DEDENT) && depth-- == 0) break;
                next(P);
                if (depth == 0) break;
            }
            continue;
        }
        if (parse_one(P, &s, true)) ARENA_PUSH(P->a, def->body, def->nbody, cap, s);
        saw_return |= is_return;
    }
    if (!saw_return && !def->broken)
        diag_error(P->d, def->def_loc,
                   "def '%s' has no return statement; end its body with 'return VALUE'",
                   def->def_name);
}

Program *parse_program(Arena *a, Diag *d, TokenList toks) {
    Parser P = {.a = a, .d = d, .t = toks.toks, .count = toks.count};
    Program *prog = ARENA_NEW(a, Program);
    int cap = 0;
    while (accept(&P, TK_NEWLINE) || accept(&P, TK_DEDENT)) {
    }
    if (at(&P, TK_INDENT)) unexpected_indent(&P);
    if (at(&P, TK_GRAPH)) {
        parse_graph(&P, prog);
        end_statement(&P);
    } else {
        Token *t = peek(&P);
        if (t->kind == TK_EOF)
            diag_error(d, t->loc,
                       "expected 'graph NAME' as the first statement, found an empty file");
        else
            diag_error(d, t->loc, "expected 'graph NAME' as the first statement");
    }
    while (!at(&P, TK_EOF) && !diag_too_many(d)) {
        if (accept(&P, TK_NEWLINE) || accept(&P, TK_DEDENT)) continue;
        if (at(&P, TK_INDENT)) {
            unexpected_indent(&P);
            continue;
        }
        Stmt s = {0};
        bool keep = parse_one(&P, &s, false);
        if (s.kind == STMT_DEF && (keep || at(&P, TK_INDENT))) parse_body(&P, &s);
        if (keep) ARENA_PUSH(a, prog->stmts, prog->nstmts, cap, s);
    }
    return prog;
}
