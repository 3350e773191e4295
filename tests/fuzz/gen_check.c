/* What the system C compiler would reject in generated C, checked on the
 * text alone so that the fuzz target can run it on every input:
 *
 *  - lexing: comments close, string literals close on their line and use
 *    only the escapes the glue writes (\" \\ \n \? and octal), numbers are
 *    C integers or hex floats, no byte outside a literal or comment is one
 *    C has no use for (a backslash, '@', '$', non-ASCII...);
 *  - every identifier outside literals is one the glue may write: C's
 *    words and the fixed locals of the glue, the runtime's (rt_, Rt, RT_),
 *    the glue's own (tgc_, TGC_), INFINITY and NAN, the graph's API
 *    (NAME_...), and in_X / out_N naming an actual input or output. A
 *    printed `inf` or `nan`, or a graph name cut short, fails here;
 *  - the glue's tables: each row's name literal reads back as the tensor's
 *    name, and a param's two initialiser constants read back as the same
 *    bits (-0.0 and a NaN's sign included); the program's name literal is
 *    the graph's name, NAME__forward is declared and used (CPU forms), and
 *    an embedded weights path reads back through both quotings (C's, then
 *    the assembler's .incbin string). */
#include "tests/fuzz/gen_check.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { T_IDENT, T_NUM, T_STR, T_PUNCT } TokKind;

typedef struct {
    TokKind kind;
    const char *s; /* in the text */
    size_t n;
    char *str; /* T_STR: the decoded bytes, NUL-terminated */
    size_t strn;
} Tok;

typedef struct {
    const char *text, *what;
    const CgProgram *p;
    Tok *t;
    int n, cap;
} Gen;

static _Noreturn void fail(const Gen *g, const char *fmt, ...) {
    fprintf(stderr, "gen_check: %s: ", g->what);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n--- the generated text (first 8000 bytes) ---\n%.8000s\n", g->text);
    abort();
}

static Tok *push(Gen *g, TokKind k, const char *s, size_t n) {
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 256;
        g->t = realloc(g->t, (size_t)g->cap * sizeof *g->t);
        if (!g->t) abort();
    }
    Tok *t = &g->t[g->n++];
    *t = (Tok){k, s, n, NULL, 0};
    return t;
}

static bool is_ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* A string literal from its opening quote; returns the byte after it. */
static const char *lex_string(Gen *g, const char *c) {
    const char *start = c++;
    size_t cap = 16, n = 0;
    char *out = malloc(cap);
    if (!out) abort();
    while (*c != '"') {
        if (!*c || *c == '\n') fail(g, "a string literal does not close on its line");
        int byte = (unsigned char)*c++;
        if (byte == '\\') {
            if (*c >= '0' && *c <= '7') {
                byte = 0;
                for (int k = 0; k < 3 && *c >= '0' && *c <= '7'; k++)
                    byte = byte * 8 + (*c++ - '0');
            } else if (*c == '"' || *c == '\\' || *c == '?') {
                byte = *c++;
            } else if (*c == 'n') {
                byte = '\n', c++;
            } else {
                fail(g, "escape '\\%c' in a string literal", *c ? *c : '0');
            }
        } else if (byte < 0x20 || byte >= 0x7f || byte == '?') {
            /* Raw control bytes, non-ASCII bytes (the source charset) and
             * '?' (trigraphs under -std=c11) are what the escapes are for. */
            fail(g, "byte 0x%02x unescaped in a string literal", byte);
        }
        if (n + 2 > cap) {
            cap *= 2;
            out = realloc(out, cap);
            if (!out) abort();
        }
        out[n++] = (char)byte;
    }
    out[n] = 0;
    Tok *t = push(g, T_STR, start, (size_t)(c + 1 - start));
    t->str = out;
    t->strn = n;
    return c + 1;
}

static void check_number(const Gen *g, const char *s, size_t n) {
    char buf[128];
    if (n >= sizeof buf) fail(g, "a number of %zu characters", n);
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    if (buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X')) {
        strtod(buf, &end); /* a hex float, or a hex integer */
    } else {
        end = buf;
        while (*end >= '0' && *end <= '9')
            end++;
        if (*end == '.' || *end == 'e' || *end == 'E') strtod(buf, &end);
    }
    static const char *const suffixes[] = {"", "u", "U", "ll", "LL", "ull", "ULL", "f"};
    for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++)
        if (!strcmp(end, suffixes[i]) && end != buf) return;
    fail(g, "'%s' is not a C number", buf);
}

static void lex(Gen *g) {
    const char *c = g->text;
    while (*c) {
        if (*c == ' ' || *c == '\t' || *c == '\n') {
            c++;
        } else if (c[0] == '/' && c[1] == '*') {
            const char *e = strstr(c + 2, "*/");
            if (!e) fail(g, "a comment does not close");
            c = e + 2;
        } else if (c[0] == '/' && c[1] == '/') {
            while (*c && *c != '\n')
                c++;
        } else if (*c == '"') {
            c = lex_string(g, c);
        } else if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_') {
            const char *s = c;
            while (is_ident_char(*c))
                c++;
            push(g, T_IDENT, s, (size_t)(c - s));
        } else if ((*c >= '0' && *c <= '9') || (*c == '.' && c[1] >= '0' && c[1] <= '9')) {
            const char *s = c;
            while (is_ident_char(*c) || *c == '.' ||
                   ((*c == '+' || *c == '-') && strchr("eEpP", c[-1])))
                c++;
            check_number(g, s, (size_t)(c - s));
            push(g, T_NUM, s, (size_t)(c - s));
        } else if (strchr("{}[]()=;,*&<>.:+-!?|/%~^#", *c)) {
            push(g, T_PUNCT, c, 1);
            c++;
        } else {
            fail(g, "byte 0x%02x outside a literal or comment", (unsigned char)*c);
        }
    }
}

static bool tok_is(const Tok *t, const char *s) {
    return t->n == strlen(s) && !memcmp(t->s, s, t->n);
}

static bool has_prefix(const Tok *t, const char *s, size_t n) {
    return t->n >= n && !memcmp(t->s, s, n);
}

/* The identifiers of the glue's fixed text: C's words, the headers it
 * includes (#include <math.h> lexes as math . h), its locals and the
 * runtime's struct fields it reads. */
static const char *const fixed_words[] = {
    "static",
    "const",
    "int",
    "void",
    "char",
    "unsigned",
    "return",
    "typedef",
    "struct",
    "extern",
    "size_t",
    "int8_t",
    "int16_t",
    "int32_t",
    "int64_t",
    "uint8_t",
    "uint16_t",
    "float",
    "double",
    "NULL",
    "__asm__",
    "main",
    "argc",
    "argv",
    "for",
    "if",
    "else",
    "sizeof",
    "include",
    "define",
    "ifndef",
    "ifdef",
    "endif",
    "math",
    "h",
    "stddef",
    "stdint",
    "__cplusplus",
    "INFINITY",
    "NAN",
    "c",
    "s",
    "n",
    "i",
    "t",
    "ctx",
    "out",
    "in",
    "safetensors",
    "len",
    "threads",
    "weights_path",
    "inputs",
    "outputs",
    "bufs",
    "pool",
    "arena_bytes",
    "desc",
    "storage",
    "name",
    /* <string.h>, and the locals of the training API (tgc compile --train) */
    "string",
    "memcpy",
    "loss",
    "dst",
    "src",
    "d",
    "path",
    "state",
    /* the profiler's API (codegen/step_info.c): <stdio.h>'s FILE and its locals */
    "stdio",
    "FILE",
    "f",
    "on",
    "measured_us",
};

/* in_X for input i as glue.c names the run function's parameters. */
static bool input_param_is(const Tok *t, const Value *v, int i) {
    const char *n = v->name ? v->name : "";
    bool ident = *n != 0;
    for (const char *c = n; *c; c++)
        ident &= is_ident_char(*c);
    char idx[24];
    snprintf(idx, sizeof idx, "%d", i);
    const char *want = ident ? n : idx;
    return t->n == 3 + strlen(want) && !memcmp(t->s + 3, want, t->n - 3);
}

static void check_ident(const Gen *g, const Tok *t) {
    for (size_t i = 0; i < sizeof fixed_words / sizeof *fixed_words; i++)
        if (tok_is(t, fixed_words[i])) return;
    static const char *const prefixes[] = {"rt_", "Rt", "RT_", "tgc_", "TGC_", "TGCRT_"};
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
        if (has_prefix(t, prefixes[i], strlen(prefixes[i]))) return;
    const char *gname = g->p->g->name;
    size_t gl = strlen(gname);
    if (t->n > gl && !memcmp(t->s, gname, gl) && t->s[gl] == '_') return;
    const CgInterface *it = &g->p->iface;
    if (has_prefix(t, "in_", 3))
        for (int i = 0; i < it->ninputs; i++)
            if (input_param_is(t, it->inputs[i], i)) return;
    if (has_prefix(t, "out_", 4) && t->n > 4 && t->n < 14) {
        char buf[16];
        memcpy(buf, t->s + 4, t->n - 4);
        buf[t->n - 4] = 0;
        char *end;
        long k = strtol(buf, &end, 10);
        if (!*end && buf[0] >= '0' && buf[0] <= '9' && k < it->noutputs) return;
    }
    fail(g, "identifier '%.*s' is not one the glue writes (graph '%.60s'...)", (int)t->n, t->s,
         gname);
}

static void lex_and_check(Gen *g) {
    lex(g);
    for (int i = 0; i < g->n; i++)
        if (g->t[i].kind == T_IDENT) check_ident(g, &g->t[i]);
}

static void gen_free(Gen *g) {
    for (int i = 0; i < g->n; i++)
        free(g->t[i].str);
    free(g->t);
}

static const Tok *at(const Gen *g, int i) {
    if (i >= g->n) fail(g, "the text ends early");
    return &g->t[i];
}

static void expect(const Gen *g, int *i, const char *s) {
    if (!tok_is(at(g, *i), s))
        fail(g, "expected '%s', found '%.*s'", s, (int)at(g, *i)->n, at(g, *i)->s);
    (*i)++;
}

/* The first identifier s followed by next (a punctuator), or -1. */
static int find(const Gen *g, const char *s, const char *next) {
    for (int i = 0; i + 1 < g->n; i++)
        if (g->t[i].kind == T_IDENT && tok_is(&g->t[i], s) && tok_is(&g->t[i + 1], next)) return i;
    return -1;
}

static void expect_string(const Gen *g, int *i, const char *want, const char *what) {
    const Tok *t = at(g, *i);
    if (t->kind != T_STR) fail(g, "%s: expected a string literal", what);
    if (t->strn != strlen(want) || memcmp(t->str, want, t->strn))
        fail(g, "%s: the literal reads back as '%.60s', not '%.60s'", what, t->str, want);
    (*i)++;
}

/* A constant as glue.c prints a double: ["("] ["-"] (number | INFINITY |
 * NAN) [")"], read as C would. */
static double read_const(const Gen *g, int *i) {
    bool paren = tok_is(at(g, *i), "(");
    *i += paren;
    bool neg = tok_is(at(g, *i), "-");
    *i += neg;
    const Tok *t = at(g, (*i)++);
    double v;
    bool integer = false; /* C negates an integer literal as an integer: -0 is +0.0 */
    if (tok_is(t, "INFINITY")) {
        v = INFINITY;
    } else if (tok_is(t, "NAN")) {
        v = NAN;
    } else if (t->kind == T_NUM) {
        char buf[128];
        memcpy(buf, t->s, t->n);
        buf[t->n] = 0;
        v = strtod(buf, NULL);
        bool hex = buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X');
        integer = !strpbrk(buf, hex ? ".pP" : ".eE");
    } else {
        fail(g, "'%.*s' is not a floating constant", (int)t->n, t->s);
    }
    if (paren) expect(g, i, ")");
    return neg && !(integer && v == 0) ? -v : v;
}

static bool same_double(double a, double b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b) && !signbit(a) == !signbit(b);
    return !memcmp(&a, &b, sizeof a);
}

/* {"NAME", {DTYPE, NDIM, {SHAPE}}, STORAGE, INIT, A, B, SEED, STATE}, per tensor. */
static void check_table(const Gen *g, const char *table, Value *const *vs, int n) {
    int i = find(g, table, "[");
    if (i < 0) fail(g, "no table %s", table);
    while (!tok_is(at(g, i), "{"))
        i++;
    i++;
    for (int k = 0; k < n; k++) {
        const Value *v = vs[k];
        expect(g, &i, "{");
        expect_string(g, &i, v->name ? v->name : "", table);
        expect(g, &i, ",");
        expect(g, &i, "{");
        for (int depth = 1; depth; i++)
            depth += tok_is(at(g, i), "{") - tok_is(at(g, i), "}");
        expect(g, &i, ",");
        i += 4; /* STORAGE , INIT , */
        double a = read_const(g, &i);
        expect(g, &i, ",");
        double b = read_const(g, &i);
        if (!same_double(a, v->init.a) || !same_double(b, v->init.b))
            fail(g, "%s: initialiser of '%.60s' reads back as (%a, %a), not (%a, %a)", table,
                 v->name, a, b, v->init.a, v->init.b);
        expect(g, &i, ",");
        i += tok_is(at(g, i), "-");
        if (at(g, i++)->kind != T_NUM) fail(g, "%s: the seed is no number", table);
        expect(g, &i, ",");
        expect(g, &i, v->state ? "1" : "0");
        expect(g, &i, "}");
        expect(g, &i, ",");
    }
}

/* The path in `.incbin "PATH"` of the embedded weights, after the
 * assembler's escapes (\\, \", \ooo). */
static void check_incbin(const Gen *g, const char *path) {
    int i = find(g, "__asm__", "(");
    if (i < 0) fail(g, "no __asm__ for the embedded weights");
    i += 2;
    const Tok *t = at(g, i);
    if (t->kind != T_STR) fail(g, "__asm__ without a string literal");
    const char *c = strstr(t->str, ".incbin \"");
    if (!c) fail(g, "no .incbin in the __asm__");
    c += strlen(".incbin \"");
    size_t n = 0, plen = strlen(path);
    while (*c != '"') {
        if (!*c) fail(g, ".incbin's string does not close");
        int byte = (unsigned char)*c++;
        if (byte == '\\') {
            if (*c >= '0' && *c <= '7') {
                byte = 0;
                for (int k = 0; k < 3 && *c >= '0' && *c <= '7'; k++)
                    byte = byte * 8 + (*c++ - '0');
            } else if (*c == '\\' || *c == '"') {
                byte = *c++;
            } else {
                fail(g, "an assembler escape '\\%c' in .incbin", *c);
            }
        } else if (byte == '\n') {
            fail(g, "a raw newline in .incbin's string");
        }
        if (n >= plen || (unsigned char)path[n] != byte)
            fail(g, ".incbin's path differs from '%s' at byte %zu", path, n);
        n++;
    }
    if (n != plen) fail(g, ".incbin's path is '%s' cut at %zu bytes", path, n);
}

void gen_check_glue(const char *text, const CgProgram *p, const GlueOptions *o) {
    Gen g = {.text = text, .what = "glue", .p = p};
    lex_and_check(&g);
    const CgInterface *it = &p->iface;
    check_table(&g, "tgc_inputs", it->inputs, it->ninputs);
    check_table(&g, "tgc_params", it->params, it->nparams);
    check_table(&g, "tgc_outputs", it->outputs, it->noutputs);
    int i = find(&g, "tgc_program", "=");
    if (i < 0) fail(&g, "no tgc_program");
    i += 2;
    expect(&g, &i, "{");
    expect_string(&g, &i, p->g->name, "the program's name");
    size_t gl = strlen(p->g->name);
    int forwards = 0;
    for (int k = 0; k < g.n; k++) {
        const Tok *t = &g.t[k];
        forwards += t->kind == T_IDENT && t->n == gl + 9 && !memcmp(t->s, p->g->name, gl) &&
                    !memcmp(t->s + gl, "__forward", 9);
    }
    if (forwards != (o->cuda_decl ? 0 : 2)) fail(&g, "NAME__forward appears %d times", forwards);
    if (o->embed_path) check_incbin(&g, o->embed_path);
    gen_free(&g);
}

void gen_check_header(const char *text, const CgProgram *p) {
    Gen g = {.text = text, .what = "header", .p = p};
    lex_and_check(&g);
    size_t gl = strlen(p->g->name);
    bool found = false;
    for (int k = 0; k < g.n && !found; k++) {
        const Tok *t = &g.t[k];
        found = t->kind == T_IDENT && t->n == gl + 4 && !memcmp(t->s, p->g->name, gl) &&
                !memcmp(t->s + gl, "_run", 4);
    }
    if (!found) fail(&g, "no NAME_run declared");
    gen_free(&g);
}
