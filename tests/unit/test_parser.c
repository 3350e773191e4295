/* Parser: precedence and associativity (spec: "Expressions"), postfix forms,
 * statements, and error recovery. Expressions are printed as
 * S-expressions and compared as strings. */
#include <stdarg.h>

#define UNIT_COMPILE
#include "frontend/tg/ast.h"
#include "unit.h"

typedef struct Parsed {
    Arena arena;
    SrcFile file;
    Diag diag;
    char *msgs;
    size_t msgs_len;
    FILE *msgs_out;
    Program *prog;
} Parsed;

static void parse_string(Parsed *P, const char *src) {
    memset(P, 0, sizeof *P);
    P->file = (SrcFile){.path = "p.tg", .text = src, .len = (int)strlen(src)};
    P->msgs_out = open_memstream(&P->msgs, &P->msgs_len);
    diag_init(&P->diag, P->msgs_out);
    TokenList toks = lex(&P->arena, &P->diag, &P->file);
    P->prog = parse_program(&P->arena, &P->diag, toks);
    fflush(P->msgs_out);
}

static void parsed_free(Parsed *P) {
    fclose(P->msgs_out);
    free(P->msgs);
    arena_free(&P->arena);
}

/* ---- S-expression printer ---------------------------------------------- */

typedef struct Buf {
    char s[2048];
    size_t n;
} Buf;

static void put(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(Buf *b, const char *fmt, ...) {
    if (b->n >= sizeof b->s) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->s + b->n, sizeof b->s - b->n, fmt, ap);
    va_end(ap);
    if (k > 0) b->n += (size_t)k;
    if (b->n >= sizeof b->s) b->n = sizeof b->s - 1;
}

static const char *op_text(TokKind k) {
    switch (k) {
    case TK_PLUS: return "+";
    case TK_MINUS: return "-";
    case TK_STAR: return "*";
    case TK_SLASH: return "/";
    case TK_POW: return "**";
    case TK_PERCENT: return "%";
    case TK_FLOORDIV: return "//";
    case TK_AT: return "@";
    case TK_LT: return "<";
    case TK_LE: return "<=";
    case TK_GT: return ">";
    case TK_GE: return ">=";
    case TK_EQ: return "==";
    case TK_NE: return "!=";
    case TK_AMP: return "&";
    case TK_PIPE: return "|";
    case TK_TILDE: return "~";
    default: return "?";
    }
}

static void sexpr(Buf *b, const Ast *n);

static void args(Buf *b, const Ast *n) {
    for (int i = 0; i < n->nitems; i++) {
        put(b, " ");
        sexpr(b, n->items[i]);
    }
    for (int i = 0; i < n->nkw; i++) {
        put(b, " %s=", n->kw_names[i]);
        sexpr(b, n->kw_values[i]);
    }
}

static void sexpr(Buf *b, const Ast *n) {
    if (!n) {
        put(b, "_");
        return;
    }
    switch (n->kind) {
    case AST_NAME: put(b, "%s", n->name); break;
    case AST_INT: put(b, "%lld", (long long)n->ival); break;
    case AST_FLOAT: put(b, "%g", n->fval); break;
    case AST_STR: put(b, "\"%s\"", n->str); break;
    case AST_BOOL: put(b, "%s", n->ival ? "true" : "false"); break;
    case AST_NONE: put(b, "None"); break;
    case AST_ELLIPSIS: put(b, "..."); break;
    case AST_LIST:
        put(b, "[");
        for (int i = 0; i < n->nitems; i++) {
            if (i) put(b, " ");
            sexpr(b, n->items[i]);
        }
        put(b, "]");
        break;
    case AST_BINARY:
        put(b, "(%s ", op_text(n->op));
        sexpr(b, n->lhs);
        put(b, " ");
        sexpr(b, n->rhs);
        put(b, ")");
        break;
    case AST_UNARY:
        put(b, "(%s ", op_text(n->op));
        sexpr(b, n->lhs);
        put(b, ")");
        break;
    case AST_CALL:
        put(b, "(call %s", n->name);
        args(b, n);
        put(b, ")");
        break;
    case AST_METHOD:
        put(b, "(.%s ", n->name);
        sexpr(b, n->lhs);
        args(b, n);
        put(b, ")");
        break;
    case AST_ATTR:
        put(b, "(.%s ", n->name);
        sexpr(b, n->lhs);
        put(b, ")");
        break;
    case AST_INDEX:
        put(b, "(index ");
        sexpr(b, n->lhs);
        for (int i = 0; i < n->nitems; i++) {
            put(b, " ");
            sexpr(b, n->items[i]);
        }
        put(b, ")");
        break;
    case AST_SLICE:
        put(b, "(: ");
        sexpr(b, n->slice[0]);
        put(b, " ");
        sexpr(b, n->slice[1]);
        put(b, " ");
        sexpr(b, n->slice[2]);
        put(b, ")");
        break;
    }
}

/* Parses "graph g\ny = EXPR" and compares EXPR's S-expression. */
static void check_expr_at(const char *expr, const char *want, const char *file, int line) {
    char src[1024];
    snprintf(src, sizeof src, "graph g\ny = %s\n", expr);
    Parsed P;
    parse_string(&P, src);
    unit_context = expr;
    unit_check_int(0, P.diag.errors, file, line, "syntax errors");
    if (P.diag.errors && P.msgs) printf("%s", P.msgs);
    if (unit_check_int(1, P.prog->nstmts, file, line, "statements") && P.prog->stmts[0].expr) {
        Buf b = {.n = 0};
        sexpr(&b, P.prog->stmts[0].expr);
        unit_check_str(want, b.s, file, line, "parse tree");
    }
    unit_context = NULL;
    parsed_free(&P);
}
#define CHECK_EXPR(expr, want) check_expr_at((expr), (want), __FILE__, __LINE__)

/* Parses src and checks the number of errors and that each "line:col"
 * in locs (a NULL-terminated list) starts an error line. */
static void check_errors_at(const char *src, int nerrors, const char *const *locs, const char *file,
                            int line) {
    Parsed P;
    parse_string(&P, src);
    unit_context = src;
    unit_check_int(nerrors, P.diag.errors, file, line, "errors");
    for (int i = 0; locs && locs[i]; i++) {
        char want[64];
        snprintf(want, sizeof want, "p.tg:%s: error:", locs[i]);
        if (!unit_check(P.msgs && strstr(P.msgs, want), file, line,
                        "an error at the expected position"))
            printf("    wanted \"%s\" in:\n%s", want, P.msgs ? P.msgs : "");
    }
    unit_context = NULL;
    parsed_free(&P);
}
#define CHECK_ERRORS(src, n, ...)                                                                  \
    check_errors_at((src), (n), (const char *const[]){__VA_ARGS__, NULL}, __FILE__, __LINE__)

static void test_precedence(void) {
    /* ** binds tighter than unary minus on its left, looser on its right. */
    CHECK_EXPR("-2 ** 2", "(- (** 2 2))");
    CHECK_EXPR("2 ** -1", "(** 2 (- 1))");
    CHECK_EXPR("2 ** 3 ** 2", "(** 2 (** 3 2))"); /* right-associative */
    CHECK_EXPR("-x ** -y ** 2", "(- (** x (- (** y 2))))");
    CHECK_EXPR("a ** b * c", "(* (** a b) c)");
    CHECK_EXPR("--a", "(- (- a))");
    CHECK_EXPR("+a * -b", "(* a (- b))");
    CHECK_EXPR("-a * b", "(* (- a) b)");
    /* multiplicative over additive, both left-associative */
    CHECK_EXPR("a + b * c", "(+ a (* b c))");
    CHECK_EXPR("a * b + c", "(+ (* a b) c)");
    CHECK_EXPR("a @ b + c", "(+ (@ a b) c)");
    CHECK_EXPR("c + a @ b", "(+ c (@ a b))");
    CHECK_EXPR("a - b - c", "(- (- a b) c)");
    CHECK_EXPR("a / b // c % d @ e * f", "(* (@ (% (// (/ a b) c) d) e) f)");
    CHECK_EXPR("(a + b) * c", "(* (+ a b) c)");
    CHECK_EXPR("a - (b - c)", "(- a (- b c))");
    /* comparisons below + and above & and | */
    CHECK_EXPR("a + b < c * d", "(< (+ a b) (* c d))");
    CHECK_EXPR("a - 1 >= b", "(>= (- a 1) b)");
    CHECK_EXPR("a == b + 1", "(== a (+ b 1))");
    CHECK_EXPR("a != b", "(!= a b)");
    CHECK_EXPR("a <= b", "(<= a b)");
    CHECK_EXPR("a < b & c > d", "(& (< a b) (> c d))");
    CHECK_EXPR("a > 0 | b <= 1", "(| (> a 0) (<= b 1))");
    /* & binds tighter than |; both left-associative */
    CHECK_EXPR("a | b & c", "(| a (& b c))");
    CHECK_EXPR("a & b | c", "(| (& a b) c)");
    CHECK_EXPR("a & b | c & d", "(| (& a b) (& c d))");
    CHECK_EXPR("a | b | c", "(| (| a b) c)");
    CHECK_EXPR("a & b & c", "(& (& a b) c)");
    CHECK_EXPR("~a & b", "(& (~ a) b)");
    CHECK_EXPR("~(a < b)", "(~ (< a b))");
    /* postfix binds tightest */
    CHECK_EXPR("-x.T", "(- (.T x))");
    CHECK_EXPR("-x[0] ** 2", "(- (** (index x 0) 2))");
    CHECK_EXPR("a @ b.mT", "(@ a (.mT b))");
    CHECK_EXPR("x ** y.sum()", "(** x (.sum y))");
}

static void test_postfix(void) {
    CHECK_EXPR("f(a, b, k=v)", "(call f a b k=v)");
    CHECK_EXPR("f()", "(call f)");
    CHECK_EXPR("f(a,)", "(call f a)");
    CHECK_EXPR("softmax(x, dim = -1)", "(call softmax x dim=(- 1))");
    CHECK_EXPR("x.softmax(dim=-1)", "(.softmax x dim=(- 1))");
    CHECK_EXPR("x.transpose(0, 1).reshape(2, -1)", "(.reshape (.transpose x 0 1) 2 (- 1))");
    CHECK_EXPR("f(x).sum(dim=[0, 1], keepdim=true)", "(.sum (call f x) dim=[0 1] keepdim=true)");
    CHECK_EXPR("x.T.mT", "(.mT (.T x))");
    CHECK_EXPR("layer_norm(x, [4], weight=w, bias=None, eps=1e-5)",
               "(call layer_norm x [4] weight=w bias=None eps=1e-05)");
    CHECK_EXPR("einsum(\"bij,bjk->bik\", a, b)", "(call einsum \"bij,bjk->bik\" a b)");
    CHECK_EXPR("gelu(x, approximate='tanh')", "(call gelu x approximate=\"tanh\")");
    CHECK_EXPR("zeros([2, 3], dtype=f16)", "(call zeros [2 3] dtype=f16)");
    CHECK_EXPR("cat([a, b], 1)", "(call cat [a b] 1)");
    CHECK_EXPR("cat((a, b), dim=1)", "(call cat [a b] dim=1)");
    CHECK_EXPR("x.view((2, 3))", "(.view x [2 3])");
    CHECK_EXPR("f((a,))", "(call f [a])");
    CHECK_EXPR("f(())", "(call f [])");
    CHECK_EXPR("f([])", "(call f [])");
    CHECK_EXPR("tensor([[1, 2], [3, 4]])", "(call tensor [[1 2] [3 4]])");
    CHECK_EXPR("clamp(x, min=0.5, max=inf)", "(call clamp x min=0.5 max=inf)");
    /* indexing */
    CHECK_EXPR("x[0]", "(index x 0)");
    CHECK_EXPR("x[-1]", "(index x (- 1))");
    CHECK_EXPR("x[1:3]", "(index x (: 1 3 _))");
    CHECK_EXPR("x[:]", "(index x (: _ _ _))");
    CHECK_EXPR("x[::]", "(index x (: _ _ _))");
    CHECK_EXPR("x[2:]", "(index x (: 2 _ _))");
    CHECK_EXPR("x[:2]", "(index x (: _ 2 _))");
    CHECK_EXPR("x[::2]", "(index x (: _ _ 2))");
    CHECK_EXPR("x[1::2]", "(index x (: 1 _ 2))");
    CHECK_EXPR("x[:-1:3]", "(index x (: _ (- 1) 3))");
    CHECK_EXPR("x[a:b:c]", "(index x (: a b c))");
    CHECK_EXPR("x[n - 1:n + 1]", "(index x (: (- n 1) (+ n 1) _))");
    CHECK_EXPR("x[None, ..., -1]", "(index x None ... (- 1))");
    CHECK_EXPR("x[:, 1::2, None]", "(index x (: _ _ _) (: 1 _ 2) None)");
    CHECK_EXPR("x[..., :2]", "(index x ... (: _ 2 _))");
    CHECK_EXPR("x[0][1]", "(index (index x 0) 1)");
    CHECK_EXPR("x[idx]", "(index x idx)");
    CHECK_EXPR("x[0,]", "(index x 0)");
    CHECK_EXPR("x.mT[0].sum()", "(.sum (index (.mT x) 0))");
    CHECK_EXPR("x[0].T", "(.T (index x 0))");
    CHECK_EXPR("x.shape[0]", "(index (.shape x) 0)");
    /* literals */
    CHECK_EXPR("true", "true");
    CHECK_EXPR("False", "false");
    CHECK_EXPR("None", "None");
    CHECK_EXPR("3.", "3");
    CHECK_EXPR("1e-5", "1e-05");
}

static void test_statements(void) {
    Parsed P;
    parse_string(&P, "# a model\n"
                     "graph mlp(batch = 64, d = 2 * 8)\n"
                     "input  x : f32[batch, 784]\n"
                     "input  s : f32[]\n"
                     "param  w : f16[784, d] = randn(std=0.02, seed=1)\n"
                     "a, b, c = x.chunk(3,\n"
                     "                  dim=1)\n"
                     "h = relu(\n"
                     "    x @ w\n"
                     ")\n"
                     "output probs = softmax(h, dim=-1)\n"
                     "output a\n");
    CHECK_INT(0, P.diag.errors);
    Program *p = P.prog;
    CHECK(p->has_graph);
    CHECK_STR("mlp", p->name);
    CHECK_INT(2, p->ndims);
    if (p->ndims == 2) {
        CHECK_STR("batch", p->dim_names[0]);
        CHECK_STR("d", p->dim_names[1]);
        CHECK_INT(AST_INT, p->dim_defaults[0]->kind);
        CHECK_INT(64, p->dim_defaults[0]->ival);
        CHECK_INT(AST_BINARY, p->dim_defaults[1]->kind);
        CHECK_INT(2, p->dim_locs[0].line);
        CHECK_INT(11, p->dim_locs[0].col);
    }
    CHECK_INT(7, p->nstmts);
    if (p->nstmts == 7) {
        Stmt *s = p->stmts;
        CHECK_INT(STMT_INPUT, s[0].kind);
        CHECK_STR("x", s[0].names[0]);
        CHECK_STR("f32", s[0].type.dtype);
        CHECK_INT(2, s[0].type.ndims);
        CHECK_INT(3, s[0].name_locs[0].line);
        CHECK_INT(8, s[0].name_locs[0].col);
        CHECK_INT(STMT_INPUT, s[1].kind);
        CHECK_INT(0, s[1].type.ndims);
        CHECK_INT(STMT_PARAM, s[2].kind);
        CHECK_STR("f16", s[2].type.dtype);
        CHECK(s[2].expr != NULL);
        if (s[2].expr) {
            Buf b = {.n = 0};
            sexpr(&b, s[2].expr);
            CHECK_STR("(call randn std=0.02 seed=1)", b.s);
        }
        /* tuple binding over two lines */
        CHECK_INT(STMT_LET, s[3].kind);
        CHECK_INT(3, s[3].nnames);
        if (s[3].nnames == 3) {
            CHECK_STR("a", s[3].names[0]);
            CHECK_STR("b", s[3].names[1]);
            CHECK_STR("c", s[3].names[2]);
            CHECK_INT(4, s[3].name_locs[1].col);
        }
        Buf b = {.n = 0};
        sexpr(&b, s[3].expr);
        CHECK_STR("(.chunk x 3 dim=1)", b.s);
        /* a call spanning three lines */
        CHECK_INT(STMT_LET, s[4].kind);
        CHECK_INT(8, s[4].loc.line);
        b.n = 0;
        sexpr(&b, s[4].expr);
        CHECK_STR("(call relu (@ x w))", b.s);
        CHECK_INT(STMT_OUTPUT, s[5].kind);
        CHECK_INT(11, s[5].loc.line);
        CHECK(s[5].expr != NULL);
        CHECK_INT(STMT_OUTPUT, s[6].kind);
        CHECK(s[6].expr == NULL);
        CHECK_STR("a", s[6].names[0]);
        for (int i = 0; i < 7; i++)
            CHECK(!s[i].broken);
    }
    parsed_free(&P);

    /* keyword argument location, and the whole call's extent */
    parse_string(&P, "graph g\ny = f(a,\n  kk=2)\n");
    CHECK_INT(0, P.diag.errors);
    if (P.prog->nstmts == 1) {
        Ast *e = P.prog->stmts[0].expr;
        CHECK_INT(AST_CALL, e->kind);
        CHECK_INT(1, e->nkw);
        if (e->nkw == 1) {
            CHECK_STR("kk", e->kw_names[0]);
            CHECK_INT(3, e->kw_locs[0].line);
            CHECK_INT(3, e->kw_locs[0].col);
        }
        CHECK_INT(2, e->loc.line);
        CHECK_INT(5, e->loc.col);
        CHECK_INT((int)strlen("f(a,\n  kk=2)"), e->loc.len);
    }
    parsed_free(&P);
}

static void test_errors(void) {
    /* Several independent errors on different lines are all reported, and
     * the good statements between them survive. */
    const char *src = "graph g\n"
                      "a = 1 +\n" /* 2: expression missing */
                      "b = 2\n"
                      "c = * 3\n"        /* 4 */
                      "d = e f\n"        /* 5: end of line expected */
                      "input x f32[2]\n" /* 6: ':' expected */
                      "output = 3\n"     /* 7: name expected */
                      "1 = x\n"          /* 8: a statement expected */
                      "k = 7\n";
    CHECK_ERRORS(src, 6, "2:8", "4:5", "5:7", "6:9", "7:8", "8:1");
    Parsed P;
    parse_string(&P, src);
    /* Only b and k are whole; "d = e f" had a syntax error, so it is broken
     * too (Stmt.broken: "had a syntax error"). */
    int good = 0;
    for (int i = 0; i < P.prog->nstmts; i++)
        if (!P.prog->stmts[i].broken) {
            good++;
            if (!CHECK(!strcmp(P.prog->stmts[i].names[0], "b") ||
                       !strcmp(P.prog->stmts[i].names[0], "k")))
                printf("    statement '%s' on line %d is not marked broken\n",
                       P.prog->stmts[i].names[0], P.prog->stmts[i].loc.line);
        }
    CHECK_INT(2, good);
    parsed_free(&P);

    /* The first error of a statement is the only one reported for it. */
    CHECK_ERRORS("graph g\ny = ) ) )\nz = ]\n", 2, "2:5", "3:5");
    /* Chained comparisons, duplicate and misplaced keywords. */
    CHECK_ERRORS("graph g\ny = a < b < c\n", 1, "2:11");
    CHECK_ERRORS("graph g\ny = f(a, k=1, k=2)\n", 1, "2:15");
    CHECK_ERRORS("graph g\ny = f(k=1, a)\nz = f(a b)\n", 2, "2:12", "3:9");
    /* Only names can be called; an empty index; a second graph. */
    CHECK_ERRORS("graph g\ny = (f)(x)\nz = x[]\ngraph h\n", 3, "2:8", "3:7", "4:1");
    /* An unclosed '(' swallows the newlines up to the end of the file: one error. */
    CHECK_ERRORS("graph g\ny = f(a,\nz = 1\n", 1, "4:1");
    /* A missing graph statement. */
    CHECK_ERRORS("input x : f32[2]\n", 1, "1:1");
    CHECK_ERRORS("", 1, "1:1");
    /* Inputs take no initialiser; a type needs its brackets. */
    CHECK_ERRORS("graph g\ninput x : f32[2] = zeros\ninput y : f32\n", 2, "2:18", "3:14");
    /* A lexer error makes the parser quiet about that statement. */
    CHECK_ERRORS("graph g\ny = a $ b\nz = (\n", 2, "2:7");
    /* A Diag with no output still counts. */
    Arena a = {0};
    const char *bad = "graph g\na = +\nb = -\nc = *\n";
    SrcFile f = {.path = "q.tg", .text = bad, .len = (int)strlen(bad)};
    Diag d;
    diag_init(&d, NULL);
    parse_program(&a, &d, lex(&a, &d, &f));
    CHECK_INT(3, d.errors);
    arena_free(&a);
}

/* Through the whole front end: a statement with trailing garbage reports the
 * syntax error only, not a cascade from its half-parsed expression. */
static void test_no_cascade(void) {
    Compiled c;
    compile_src(&c, "graph g\ninput x : f32[2]\nd = e f\noutput o = x + 1\n");
    CHECK(c.g == NULL);
    if (!CHECK_INT(1, c.diag.errors)) printf("%s", c.msgs ? c.msgs : "");
    compiled_free(&c);
    compile_src(&c, "graph g\ninput x : f32[2]\ny = x $ 2\noutput o = y + 1\n");
    if (!CHECK_INT(1, c.diag.errors)) printf("%s", c.msgs ? c.msgs : "");
    compiled_free(&c);
}

/* Precedence decides values: integer arguments fold at compile time with
 * Python's rules, so x.view(N, -1) shows what N evaluated to. */
static void check_fold_at(const char *expr, int64_t want, const char *file, int line) {
    char src[512];
    snprintf(src, sizeof src, "graph g\ninput x : f32[720]\noutput r = x.view(%s, -1)\n", expr);
    Compiled c;
    unit_context = expr;
    Graph *g = compile_src(&c, src);
    if (unit_check(g != NULL, file, line, "compiles")) {
        Value *r = find_value(g, "r");
        if (unit_check(r && r->ndim == 2, file, line, "r is 2-D"))
            unit_check_int(want, r->shape[0], file, line, "folded value");
    } else {
        printf("%s", c.msgs ? c.msgs : "");
    }
    unit_context = NULL;
    compiled_free(&c);
}
#define CHECK_FOLD(expr, want) check_fold_at((expr), (want), __FILE__, __LINE__)

static void test_folding(void) {
    /* expected values are Python's */
    CHECK_FOLD("-2 ** 2 + 10", 6); /* -(2 ** 2) + 10 */
    CHECK_FOLD("(-2) ** 2 + 2", 6);
    CHECK_FOLD("2 ** 3 ** 2 // 64", 8); /* 2 ** 9 // 64 */
    CHECK_FOLD("2 + 3 * 6", 20);
    CHECK_FOLD("(2 + 3) * 4", 20);
    CHECK_FOLD("20 - 6 - 4", 10);
    CHECK_FOLD("7 // -2 + 10", 6); /* floor division: -4 */
    CHECK_FOLD("-7 % 3 * 3", 6);   /* the divisor's sign: 2 */
    CHECK_FOLD("720 // 6 // 2", 60);
    CHECK_FOLD("12 / 2", 6); /* exact integer division */
    CHECK_FOLD("- -6", 6);
    CHECK_FOLD("2 * 3 ** 2", 18);
}

static void test_defs(void) {
    Parsed P;
    parse_string(&P, "graph g(d = 4)\n"
                     "param wte.weight : f32[d, d]\n"
                     "def Block(x, n):\n"
                     "    param ln_1.weight : f32[n] = ones\n"
                     "\n"
                     "    # a comment at another indentation\n"
                     "    h = layer_norm(x, [n],\n"
                     "  ln_1.weight)\n"
                     "    return h, x\n"
                     "y, z = Block(wte.weight, d, prefix=\"h.0\")\n"
                     "output y\n");
    CHECK_INT(0, P.diag.errors);
    Program *p = P.prog;
    CHECK_INT(4, p->nstmts);
    if (p->nstmts == 4) {
        Stmt *s = p->stmts;
        CHECK_INT(STMT_PARAM, s[0].kind);
        CHECK_STR("wte.weight", s[0].names[0]);
        CHECK_INT(7, s[0].name_locs[0].col);
        CHECK_INT(10, s[0].name_locs[0].len);
        CHECK_INT(STMT_DEF, s[1].kind);
        CHECK_STR("Block", s[1].def_name);
        CHECK_INT(2, s[1].nnames);
        CHECK_INT(3, s[1].nbody);
        if (s[1].nbody == 3) {
            CHECK_INT(STMT_PARAM, s[1].body[0].kind);
            CHECK_STR("ln_1.weight", s[1].body[0].names[0]);
            CHECK_INT(STMT_LET, s[1].body[1].kind);
            CHECK_INT(STMT_RETURN, s[1].body[2].kind);
            CHECK_INT(2, s[1].body[2].nrets);
        }
        CHECK_INT(STMT_LET, s[2].kind);
        CHECK_INT(1, s[2].expr->nkw);
    }
    parsed_free(&P);
}

int main(void) {
    test_no_cascade();
    test_folding();
    test_precedence();
    test_postfix();
    test_statements();
    test_errors();
    test_defs();
    return unit_report("test_parser");
}
