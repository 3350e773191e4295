/* Lexer: token kinds, values and exact positions (spec: "Lexical rules"). */
#include <math.h>

#include "frontend/tg/lexer.h"
#include "unit.h"

typedef struct Lexed {
    Arena arena;
    SrcFile file;
    Diag diag;
    char *msgs; /* the diagnostics as printed */
    size_t msgs_len;
    FILE *msgs_out;
    TokenList toks;
} Lexed;

static void lex_string(Lexed *L, const char *src) {
    memset(L, 0, sizeof *L);
    L->file = (SrcFile){.path = "t.tg", .text = src, .len = (int)strlen(src)};
    L->msgs_out = open_memstream(&L->msgs, &L->msgs_len);
    diag_init(&L->diag, L->msgs_out);
    L->toks = lex(&L->arena, &L->diag, &L->file);
    fflush(L->msgs_out);
}

static void lexed_free(Lexed *L) {
    fclose(L->msgs_out);
    free(L->msgs);
    arena_free(&L->arena);
}

typedef struct Want {
    TokKind kind;
    int line, col, len;
} Want;

#define END_WANT                                                                                   \
    { (TokKind) - 1, 0, 0, 0 }

/* Checks every token's kind, line, column and length against want[]
 * (terminated by END_WANT), and that there are no more tokens. */
static void check_tokens(const char *ctx, const char *src, const Want *want) {
    Lexed L;
    lex_string(&L, src);
    unit_context = ctx;
    int n = 0;
    while (want[n].kind != (TokKind)-1)
        n++;
    CHECK_INT(n, L.toks.count);
    for (int i = 0; i < n && i < L.toks.count; i++) {
        const Token *t = &L.toks.toks[i];
        if (!CHECK_STR(tok_kind_name(want[i].kind), tok_kind_name(t->kind))) {
            printf("    (token %d)\n", i);
            continue;
        }
        if (!CHECK_INT(want[i].line, t->loc.line) || !CHECK_INT(want[i].col, t->loc.col) ||
            !CHECK_INT(want[i].len, t->loc.len))
            printf("    (token %d, %s)\n", i, tok_kind_name(t->kind));
    }
    CHECK_INT(0, L.diag.errors);
    unit_context = NULL;
    lexed_free(&L);
}

static void test_numbers(void) {
    Lexed L;
    lex_string(&L, "x = 42 + 0.5 * 1e-5 - 3. + inf + nan + .25 + 2E+3 + 7e3 + 1_0");
    Token *t = L.toks.toks;
    CHECK_INT(0, L.diag.errors);
    CHECK_INT(TK_IDENT, t[0].kind);
    CHECK_STR("x", t[0].text);
    CHECK_INT(TK_ASSIGN, t[1].kind);
    CHECK_INT(TK_INT, t[2].kind);
    CHECK_INT(42, t[2].ival);
    CHECK_INT(5, t[2].loc.col);
    CHECK_INT(2, t[2].loc.len);
    CHECK_INT(TK_FLOAT, t[4].kind);
    CHECK_DBL(0.5, t[4].fval);
    CHECK_INT(10, t[4].loc.col);
    CHECK_INT(3, t[4].loc.len);
    CHECK_INT(TK_FLOAT, t[6].kind);
    CHECK_DBL(1e-5, t[6].fval);
    CHECK_INT(16, t[6].loc.col);
    CHECK_INT(4, t[6].loc.len);
    CHECK_INT(TK_FLOAT, t[8].kind); /* "3." */
    CHECK_DBL(3.0, t[8].fval);
    CHECK_INT(23, t[8].loc.col);
    CHECK_INT(2, t[8].loc.len);
    CHECK_INT(TK_FLOAT, t[10].kind); /* inf */
    CHECK(isinf(t[10].fval) && t[10].fval > 0);
    CHECK_INT(28, t[10].loc.col);
    CHECK_INT(3, t[10].loc.len);
    CHECK_INT(TK_FLOAT, t[12].kind); /* nan */
    CHECK(isnan(t[12].fval));
    CHECK_INT(34, t[12].loc.col);
    CHECK_INT(TK_FLOAT, t[14].kind); /* .25 */
    CHECK_DBL(0.25, t[14].fval);
    CHECK_INT(40, t[14].loc.col);
    CHECK_INT(3, t[14].loc.len);
    CHECK_INT(TK_FLOAT, t[16].kind); /* 2E+3 */
    CHECK_DBL(2000.0, t[16].fval);
    CHECK_INT(4, t[16].loc.len);
    CHECK_INT(TK_FLOAT, t[18].kind); /* 7e3: an exponent makes a float, as in Python */
    CHECK_DBL(7000.0, t[18].fval);
    /* "1_0" is not a Python-3.6 digit group here: 1 then the name _0. */
    CHECK_INT(TK_INT, t[20].kind);
    CHECK_INT(1, t[20].ival);
    CHECK_INT(TK_IDENT, t[21].kind);
    CHECK_STR("_0", t[21].text);
    lexed_free(&L);

    /* "1e" is the integer 1 followed by the name e; "2e+" likewise. */
    check_tokens("1e", "1e",
                 (Want[]){{TK_INT, 1, 1, 1},
                          {TK_IDENT, 1, 2, 1},
                          {TK_NEWLINE, 1, 3, 0},
                          {TK_EOF, 1, 3, 0},
                          END_WANT});
    /* Names that start like inf/nan are names. */
    lex_string(&L, "infinity nan2 inf_ Inf");
    CHECK_INT(TK_IDENT, L.toks.toks[0].kind);
    CHECK_STR("infinity", L.toks.toks[0].text);
    CHECK_INT(TK_IDENT, L.toks.toks[1].kind);
    CHECK_INT(TK_IDENT, L.toks.toks[2].kind);
    CHECK_INT(TK_IDENT, L.toks.toks[3].kind);
    lexed_free(&L);

    /* Too big for 64 bits: an error, located at the literal. */
    lex_string(&L, "x = 99999999999999999999");
    CHECK_INT(1, L.diag.errors);
    CHECK(L.msgs && strstr(L.msgs, "t.tg:1:5: error:") != NULL);
    lexed_free(&L);
    lex_string(&L, "x = 9223372036854775807");
    CHECK_INT(0, L.diag.errors);
    CHECK_INT(INT64_MAX, L.toks.toks[2].ival);
    lexed_free(&L);
}

static void test_punctuation(void) {
    check_tokens("operators", "a ** b // c ... <= >= == != < > & | ~ @ % / * + - = : , .",
                 (Want[]){{TK_IDENT, 1, 1, 1},    {TK_POW, 1, 3, 2},
                          {TK_IDENT, 1, 6, 1},    {TK_FLOORDIV, 1, 8, 2},
                          {TK_IDENT, 1, 11, 1},   {TK_ELLIPSIS, 1, 13, 3},
                          {TK_LE, 1, 17, 2},      {TK_GE, 1, 20, 2},
                          {TK_EQ, 1, 23, 2},      {TK_NE, 1, 26, 2},
                          {TK_LT, 1, 29, 1},      {TK_GT, 1, 31, 1},
                          {TK_AMP, 1, 33, 1},     {TK_PIPE, 1, 35, 1},
                          {TK_TILDE, 1, 37, 1},   {TK_AT, 1, 39, 1},
                          {TK_PERCENT, 1, 41, 1}, {TK_SLASH, 1, 43, 1},
                          {TK_STAR, 1, 45, 1},    {TK_PLUS, 1, 47, 1},
                          {TK_MINUS, 1, 49, 1},   {TK_ASSIGN, 1, 51, 1},
                          {TK_COLON, 1, 53, 1},   {TK_COMMA, 1, 55, 1},
                          {TK_DOT, 1, 57, 1},     {TK_NEWLINE, 1, 58, 0},
                          {TK_EOF, 1, 58, 0},     END_WANT});
    /* Maximal munch without spaces: *** is ** then *, a**-b, x[...,-1], x.T */
    check_tokens("munch", "a***b**-c<=d//e",
                 (Want[]){{TK_IDENT, 1, 1, 1},
                          {TK_POW, 1, 2, 2},
                          {TK_STAR, 1, 4, 1},
                          {TK_IDENT, 1, 5, 1},
                          {TK_POW, 1, 6, 2},
                          {TK_MINUS, 1, 8, 1},
                          {TK_IDENT, 1, 9, 1},
                          {TK_LE, 1, 10, 2},
                          {TK_IDENT, 1, 12, 1},
                          {TK_FLOORDIV, 1, 13, 2},
                          {TK_IDENT, 1, 15, 1},
                          {TK_NEWLINE, 1, 16, 0},
                          {TK_EOF, 1, 16, 0},
                          END_WANT});
    check_tokens("index", "x[...,-1].mT",
                 (Want[]){{TK_IDENT, 1, 1, 1},
                          {TK_LBRACKET, 1, 2, 1},
                          {TK_ELLIPSIS, 1, 3, 3},
                          {TK_COMMA, 1, 6, 1},
                          {TK_MINUS, 1, 7, 1},
                          {TK_INT, 1, 8, 1},
                          {TK_RBRACKET, 1, 9, 1},
                          {TK_DOT, 1, 10, 1},
                          {TK_IDENT, 1, 11, 2},
                          {TK_NEWLINE, 1, 13, 0},
                          {TK_EOF, 1, 13, 0},
                          END_WANT});
    /* "x.5": a name, then the float .5 (as Python lexes it). */
    check_tokens("x.5", "x.5",
                 (Want[]){{TK_IDENT, 1, 1, 1},
                          {TK_FLOAT, 1, 2, 2},
                          {TK_NEWLINE, 1, 4, 0},
                          {TK_EOF, 1, 4, 0},
                          END_WANT});
}

static void test_keywords(void) {
    /* True/False are accepted as extensions (docs/language.md). */
    const char *src =
        "graph input param output true false None graphs Input none True param_ f32 float False";
    Lexed L;
    lex_string(&L, src);
    TokKind want[] = {TK_GRAPH, TK_INPUT, TK_PARAM, TK_OUTPUT,  TK_TRUE, TK_FALSE,
                      TK_NONE,  TK_IDENT, TK_IDENT, TK_IDENT,   TK_TRUE, TK_IDENT,
                      TK_IDENT, TK_IDENT, TK_FALSE, TK_NEWLINE, TK_EOF};
    int n = (int)(sizeof want / sizeof *want);
    CHECK_INT(n, L.toks.count);
    for (int i = 0; i < n && i < L.toks.count; i++)
        CHECK_STR(tok_kind_name(want[i]), tok_kind_name(L.toks.toks[i].kind));
    CHECK_STR("graphs", L.toks.toks[7].text);
    CHECK_STR("none", L.toks.toks[9].text);
    CHECK_STR("param_", L.toks.toks[11].text);
    CHECK_INT((int)(strstr(src, "f32") - src) + 1, L.toks.toks[12].loc.col); /* f32 */
    CHECK_INT(3, L.toks.toks[12].loc.len);
    lexed_free(&L);
}

static void test_strings(void) {
    Lexed L;
    lex_string(&L, "e = einsum(\"ij,jk->ik\", a, b) + f('tanh')");
    CHECK_INT(0, L.diag.errors);
    Token *t = L.toks.toks;
    CHECK_INT(TK_STRING, t[4].kind);
    CHECK_STR("ij,jk->ik", t[4].text);
    CHECK_INT(12, t[4].loc.col);
    CHECK_INT(11, t[4].loc.len); /* the quotes included */
    CHECK_INT(TK_STRING, t[13].kind);
    CHECK_STR("tanh", t[13].text);
    CHECK_INT(35, t[13].loc.col);
    CHECK_INT(6, t[13].loc.len);
    lexed_free(&L);

    /* '#' inside a string is not a comment; an empty string is fine. */
    lex_string(&L, "s = \"a # b\" + ''");
    CHECK_INT(0, L.diag.errors);
    CHECK_INT(TK_STRING, L.toks.toks[2].kind);
    CHECK_STR("a # b", L.toks.toks[2].text);
    CHECK_INT(TK_STRING, L.toks.toks[4].kind);
    CHECK_STR("", L.toks.toks[4].text);
    CHECK_INT(TK_NEWLINE, L.toks.toks[5].kind);
    lexed_free(&L);

    /* Unterminated: reported at the opening quote; the next line still lexes. */
    lex_string(&L, "s = 'abc\ny = 1");
    CHECK_INT(1, L.diag.errors);
    CHECK(L.msgs && strstr(L.msgs, "t.tg:1:5: error: unterminated string") != NULL);
    if (L.msgs && !strstr(L.msgs, "t.tg:1:5: error: unterminated string"))
        printf("    diagnostics were:\n%s", L.msgs);
    t = L.toks.toks;
    CHECK_INT(TK_STRING, t[2].kind);
    CHECK(t[2].bad);
    CHECK_INT(5, t[2].loc.col);
    CHECK_INT(4, t[2].loc.len); /* 'abc up to the end of the line */
    CHECK_INT(TK_NEWLINE, t[3].kind);
    CHECK_INT(TK_IDENT, t[4].kind);
    CHECK_INT(2, t[4].loc.line);
    CHECK_INT(1, t[4].loc.col);
    CHECK_INT(TK_INT, t[6].kind);
    CHECK_INT(2, t[6].loc.line);
    CHECK_INT(5, t[6].loc.col);
    lexed_free(&L);

    /* Unterminated inside an open '(': the next line still starts a statement. */
    lex_string(&L, "y = f('abc\nz = 2");
    CHECK_INT(1, L.diag.errors);
    t = L.toks.toks;
    TokKind want[] = {TK_IDENT, TK_ASSIGN, TK_IDENT, TK_LPAREN,  TK_STRING, TK_NEWLINE,
                      TK_IDENT, TK_ASSIGN, TK_INT,   TK_NEWLINE, TK_EOF};
    int n = (int)(sizeof want / sizeof *want);
    CHECK_INT(n, L.toks.count);
    for (int i = 0; i < n && i < L.toks.count; i++)
        CHECK_STR(tok_kind_name(want[i]), tok_kind_name(t[i].kind));
    lexed_free(&L);

    /* Unterminated at end of file; a mismatched quote is unterminated too. */
    lex_string(&L, "x = \"abc'");
    CHECK_INT(1, L.diag.errors);
    CHECK(L.msgs && strstr(L.msgs, "t.tg:1:5:") != NULL);
    CHECK_INT(TK_EOF, L.toks.toks[L.toks.count - 1].kind);
    lexed_free(&L);
}

static void test_comments_and_newlines(void) {
    /* Comments run to end of line; brackets inside them do not count.
     * Leading and repeated blank lines give no NEWLINE tokens. */
    check_tokens("comments", "# header (\n\n\nx = 1  # a ( [ comment\n\n   # only a comment\ny",
                 (Want[]){{TK_IDENT, 4, 1, 1},
                          {TK_ASSIGN, 4, 3, 1},
                          {TK_INT, 4, 5, 1},
                          {TK_NEWLINE, 4, 23, 1},
                          {TK_IDENT, 7, 1, 1},
                          {TK_NEWLINE, 7, 2, 0},
                          {TK_EOF, 7, 2, 0},
                          END_WANT});
    /* Inside ( ) and [ ] newlines are not statement ends. */
    check_tokens("parens", "f(a,\n  b)\ng[1,\n2]\n",
                 (Want[]){{TK_IDENT, 1, 1, 1},
                          {TK_LPAREN, 1, 2, 1},
                          {TK_IDENT, 1, 3, 1},
                          {TK_COMMA, 1, 4, 1},
                          {TK_IDENT, 2, 3, 1},
                          {TK_RPAREN, 2, 4, 1},
                          {TK_NEWLINE, 2, 5, 1},
                          {TK_IDENT, 3, 1, 1},
                          {TK_LBRACKET, 3, 2, 1},
                          {TK_INT, 3, 3, 1},
                          {TK_COMMA, 3, 4, 1},
                          {TK_INT, 4, 1, 1},
                          {TK_RBRACKET, 4, 2, 1},
                          {TK_NEWLINE, 4, 3, 1},
                          {TK_EOF, 5, 1, 0},
                          END_WANT});
    /* Nested brackets: the newline after the outer ')' ends the statement. */
    check_tokens("nested", "f([1,\n(2,\n3)],\n4)\nz",
                 (Want[]){{TK_IDENT, 1, 1, 1},
                          {TK_LPAREN, 1, 2, 1},
                          {TK_LBRACKET, 1, 3, 1},
                          {TK_INT, 1, 4, 1},
                          {TK_COMMA, 1, 5, 1},
                          {TK_LPAREN, 2, 1, 1},
                          {TK_INT, 2, 2, 1},
                          {TK_COMMA, 2, 3, 1},
                          {TK_INT, 3, 1, 1},
                          {TK_RPAREN, 3, 2, 1},
                          {TK_RBRACKET, 3, 3, 1},
                          {TK_COMMA, 3, 4, 1},
                          {TK_INT, 4, 1, 1},
                          {TK_RPAREN, 4, 2, 1},
                          {TK_NEWLINE, 4, 3, 1},
                          {TK_IDENT, 5, 1, 1},
                          {TK_NEWLINE, 5, 2, 0},
                          {TK_EOF, 5, 2, 0},
                          END_WANT});
    /* A stray ')' does not make later newlines disappear. */
    check_tokens("stray", ")\nx\ny",
                 (Want[]){{TK_RPAREN, 1, 1, 1},
                          {TK_NEWLINE, 1, 2, 1},
                          {TK_IDENT, 2, 1, 1},
                          {TK_NEWLINE, 2, 2, 1},
                          {TK_IDENT, 3, 1, 1},
                          {TK_NEWLINE, 3, 2, 0},
                          {TK_EOF, 3, 2, 0},
                          END_WANT});
    /* CRLF line ends and tabs. */
    /* (A line's leading whitespace is indentation, so the tab trails here.) */
    check_tokens("crlf", "a\r\nb\t",
                 (Want[]){{TK_IDENT, 1, 1, 1},
                          {TK_NEWLINE, 1, 3, 1},
                          {TK_IDENT, 2, 1, 1},
                          {TK_NEWLINE, 2, 3, 0},
                          {TK_EOF, 2, 3, 0},
                          END_WANT});
    /* Indentation: INDENT at a deeper line, DEDENT back; blank, comment and
     * bracketed lines do not count; open blocks close at the end. */
    check_tokens("indent", "def f(\n  x):\n  a\n\n    # c\n  b\nc\n  d",
                 (Want[]){{TK_DEF, 1, 1, 3},     {TK_IDENT, 1, 5, 1},  {TK_LPAREN, 1, 6, 1},
                          {TK_IDENT, 2, 3, 1},   {TK_RPAREN, 2, 4, 1}, {TK_COLON, 2, 5, 1},
                          {TK_NEWLINE, 2, 6, 1}, {TK_INDENT, 3, 3, 1}, {TK_IDENT, 3, 3, 1},
                          {TK_NEWLINE, 3, 4, 1}, {TK_IDENT, 6, 3, 1},  {TK_NEWLINE, 6, 4, 1},
                          {TK_DEDENT, 7, 1, 1},  {TK_IDENT, 7, 1, 1},  {TK_NEWLINE, 7, 2, 1},
                          {TK_INDENT, 8, 3, 1},  {TK_IDENT, 8, 3, 1},  {TK_NEWLINE, 8, 4, 0},
                          {TK_DEDENT, 8, 4, 0},  {TK_EOF, 8, 4, 0},    END_WANT});
    /* A backslash at the end of a line joins it with the next (extension). */
    check_tokens("backslash", "a = 1 + \\\n  2\nb",
                 (Want[]){{TK_IDENT, 1, 1, 1},
                          {TK_ASSIGN, 1, 3, 1},
                          {TK_INT, 1, 5, 1},
                          {TK_PLUS, 1, 7, 1},
                          {TK_INT, 2, 3, 1},
                          {TK_NEWLINE, 2, 4, 1},
                          {TK_IDENT, 3, 1, 1},
                          {TK_NEWLINE, 3, 2, 0},
                          {TK_EOF, 3, 2, 0},
                          END_WANT});
    /* The empty file: only EOF. */
    check_tokens("empty", "", (Want[]){{TK_EOF, 1, 1, 0}, END_WANT});
    check_tokens("comment only", "# nothing\n", (Want[]){{TK_EOF, 2, 1, 0}, END_WANT});
}

static void test_bad_characters(void) {
    Lexed L;
    lex_string(&L, "x = $ + 1\ny = a ? b\nz = 2 ! 3");
    CHECK_INT(3, L.diag.errors);
    CHECK(L.msgs && strstr(L.msgs, "t.tg:1:5: error: unexpected character '$'") != NULL);
    CHECK(L.msgs && strstr(L.msgs, "t.tg:2:7: error: unexpected character '?'") != NULL);
    CHECK(L.msgs && strstr(L.msgs, "t.tg:3:7: error: unexpected character '!'") != NULL);
    /* Each bad character becomes one TK_ERROR token, marked bad, at its column. */
    TokKind want[] = {TK_IDENT,  TK_ASSIGN, TK_ERROR, TK_PLUS,    TK_INT,     TK_NEWLINE, TK_IDENT,
                      TK_ASSIGN, TK_IDENT,  TK_ERROR, TK_IDENT,   TK_NEWLINE, TK_IDENT,   TK_ASSIGN,
                      TK_INT,    TK_ERROR,  TK_INT,   TK_NEWLINE, TK_EOF};
    int n = (int)(sizeof want / sizeof *want);
    CHECK_INT(n, L.toks.count);
    for (int i = 0; i < n && i < L.toks.count; i++)
        CHECK_STR(tok_kind_name(want[i]), tok_kind_name(L.toks.toks[i].kind));
    if (L.toks.count == n) {
        Token *t = L.toks.toks;
        CHECK_INT(1, t[2].loc.line);
        CHECK_INT(5, t[2].loc.col);
        CHECK_INT(1, t[2].loc.len);
        CHECK(t[2].bad);
        CHECK(!t[3].bad);
        CHECK_INT(9, t[4].loc.col); /* the 1 after the '$' */
        CHECK_INT(2, t[9].loc.line);
        CHECK_INT(7, t[9].loc.col);
        CHECK_INT(3, t[15].loc.line);
        CHECK_INT(7, t[15].loc.col);
    }
    lexed_free(&L);

    /* A multi-byte UTF-8 character is one error, at its first byte. */
    lex_string(&L, "x = \xc3\xa9 + 1");
    CHECK_INT(1, L.diag.errors);
    CHECK(L.msgs && strstr(L.msgs, "t.tg:1:5: error:") != NULL);
    CHECK_INT(TK_ERROR, L.toks.toks[2].kind);
    CHECK_INT(5, L.toks.toks[2].loc.col);
    CHECK_INT(2, L.toks.toks[2].loc.len); /* the whole character */
    CHECK_INT(TK_PLUS, L.toks.toks[3].kind);
    CHECK_INT(8, L.toks.toks[3].loc.col); /* columns count bytes */
    lexed_free(&L);

    /* A backtick and a control byte. */
    lex_string(&L, "a`b\x01");
    CHECK_INT(2, L.diag.errors);
    CHECK(L.msgs && strstr(L.msgs, "t.tg:1:2: error:") != NULL);
    CHECK(L.msgs && strstr(L.msgs, "t.tg:1:4: error:") != NULL);
    lexed_free(&L);
}

int main(void) {
    test_numbers();
    test_punctuation();
    test_keywords();
    test_strings();
    test_comments_and_newlines();
    test_bad_characters();
    return unit_report("test_lexer");
}
