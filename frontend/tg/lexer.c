#include "frontend/tg/lexer.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct Lexer {
    Arena *a;
    Diag *d;
    const SrcFile *f;
    int pos, line, line_start;
    int depth;       /* ( and [ nesting: newlines inside are not statement ends */
    bool bol;        /* at the start of a logical line: its indentation counts */
    int indents[64]; /* indentation columns of the open blocks (Python's stack) */
    int nindents;
    Token *toks;
    int count, cap;
} Lexer;

static const struct {
    const char *word;
    TokKind kind;
} keywords[] = {
    {"graph", TK_GRAPH},
    {"input", TK_INPUT},
    {"param", TK_PARAM},
    {"output", TK_OUTPUT},
    {"true", TK_TRUE},
    {"false", TK_FALSE},
    {"None", TK_NONE},
    {"def", TK_DEF},
    {"return", TK_RETURN},
    /* Python's spelling, which PyTorch users type by habit. */
    {"True", TK_TRUE},
    {"False", TK_FALSE},
};

const char *tok_kind_name(TokKind k) {
    static const char *names[] = {
        [TK_EOF] = "end of file",
        [TK_NEWLINE] = "end of line",
        [TK_IDENT] = "a name",
        [TK_INT] = "an integer",
        [TK_FLOAT] = "a number",
        [TK_STRING] = "a string",
        [TK_GRAPH] = "'graph'",
        [TK_INPUT] = "'input'",
        [TK_PARAM] = "'param'",
        [TK_OUTPUT] = "'output'",
        [TK_TRUE] = "'true'",
        [TK_FALSE] = "'false'",
        [TK_NONE] = "'None'",
        [TK_LPAREN] = "'('",
        [TK_DEF] = "'def'",
        [TK_RETURN] = "'return'",
        [TK_INDENT] = "an indented line",
        [TK_DEDENT] = "the end of an indented block",
        [TK_RPAREN] = "')'",
        [TK_LBRACKET] = "'['",
        [TK_RBRACKET] = "']'",
        [TK_COMMA] = "','",
        [TK_COLON] = "':'",
        [TK_ASSIGN] = "'='",
        [TK_DOT] = "'.'",
        [TK_ELLIPSIS] = "'...'",
        [TK_PLUS] = "'+'",
        [TK_MINUS] = "'-'",
        [TK_STAR] = "'*'",
        [TK_SLASH] = "'/'",
        [TK_POW] = "'**'",
        [TK_PERCENT] = "'%'",
        [TK_FLOORDIV] = "'//'",
        [TK_AT] = "'@'",
        [TK_LT] = "'<'",
        [TK_LE] = "'<='",
        [TK_GT] = "'>'",
        [TK_GE] = "'>='",
        [TK_EQ] = "'=='",
        [TK_NE] = "'!='",
        [TK_AMP] = "'&'",
        [TK_PIPE] = "'|'",
        [TK_TILDE] = "'~'",
        [TK_ERROR] = "an invalid character",
    };
    return (unsigned)k < sizeof names / sizeof *names && names[k] ? names[k] : "a token";
}

static SrcLoc here(Lexer *L, int start) {
    SrcLoc loc = {L->f, L->line, start - L->line_start + 1, start, L->pos - start};
    return loc;
}

static Token *push(Lexer *L, TokKind kind, int start) {
    Token t = {0};
    t.kind = kind;
    t.loc = here(L, start);
    ARENA_PUSH(L->a, L->toks, L->count, L->cap, t);
    return &L->toks[L->count - 1];
}

static bool lex_number(Lexer *L) {
    const char *s = L->f->text;
    int start = L->pos, n = L->f->len;
    bool is_float = false;
    while (L->pos < n && isdigit((unsigned char)s[L->pos]))
        L->pos++;
    if (L->pos < n && s[L->pos] == '.' &&
        !(L->pos + 1 < n && s[L->pos + 1] == '.')) { /* "3." but not "3..." */
        is_float = true;
        L->pos++;
        while (L->pos < n && isdigit((unsigned char)s[L->pos]))
            L->pos++;
    }
    if (L->pos < n && (s[L->pos] == 'e' || s[L->pos] == 'E')) {
        int save = L->pos++;
        if (L->pos < n && (s[L->pos] == '+' || s[L->pos] == '-')) L->pos++;
        if (L->pos < n && isdigit((unsigned char)s[L->pos])) {
            is_float = true;
            while (L->pos < n && isdigit((unsigned char)s[L->pos]))
                L->pos++;
        } else {
            L->pos = save;
        }
    }
    char buf[64];
    int len = L->pos - start;
    if (len >= (int)sizeof buf) {
        Token *t = push(L, TK_INT, start);
        t->bad = true;
        diag_error(L->d, t->loc, "number literal is too long");
        return false;
    }
    memcpy(buf, s + start, (size_t)len);
    buf[len] = 0;
    Token *t = push(L, is_float ? TK_FLOAT : TK_INT, start);
    errno = 0;
    if (is_float) {
        t->fval = strtod(buf, NULL);
    } else {
        t->ival = strtoll(buf, NULL, 10);
        if (errno == ERANGE) diag_error(L->d, t->loc, "integer literal does not fit in 64 bits");
        t->fval = (double)t->ival;
    }
    return true;
}

static void lex_string(Lexer *L) {
    const char *s = L->f->text;
    char quote = s[L->pos];
    int start = L->pos++;
    while (L->pos < L->f->len && s[L->pos] != quote && s[L->pos] != '\n')
        L->pos++;
    if (L->pos >= L->f->len || s[L->pos] != quote) {
        Token *t = push(L, TK_STRING, start);
        t->text = "";
        t->bad = true;
        L->depth = 0; /* the rest of the line is lost; let the next line start a statement */
        diag_error(L->d, t->loc, "unterminated string: expected a closing %c", quote);
        return;
    }
    L->pos++;
    Token *t = push(L, TK_STRING, start);
    t->text = arena_strndup(L->a, s + start + 1, (size_t)(L->pos - start - 2));
}

static TokKind punct(const char *s, int avail, int *len) {
    static const struct {
        const char *p;
        TokKind k;
    } ops[] = {
        {"...", TK_ELLIPSIS}, {"**", TK_POW},     {"//", TK_FLOORDIV}, {"<=", TK_LE},
        {">=", TK_GE},        {"==", TK_EQ},      {"!=", TK_NE},       {"(", TK_LPAREN},
        {")", TK_RPAREN},     {"[", TK_LBRACKET}, {"]", TK_RBRACKET},  {",", TK_COMMA},
        {":", TK_COLON},      {"=", TK_ASSIGN},   {".", TK_DOT},       {"+", TK_PLUS},
        {"-", TK_MINUS},      {"*", TK_STAR},     {"/", TK_SLASH},     {"%", TK_PERCENT},
        {"@", TK_AT},         {"<", TK_LT},       {">", TK_GT},        {"&", TK_AMP},
        {"|", TK_PIPE},       {"~", TK_TILDE},
    };
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        int l = (int)strlen(ops[i].p);
        if (l <= avail && !strncmp(s, ops[i].p, (size_t)l)) {
            *len = l;
            return ops[i].k;
        }
    }
    return TK_EOF;
}

/* At the start of a logical line outside brackets: measures its
 * indentation (spaces; a tab is an error) and emits INDENT or DEDENTs as
 * Python does. Blank and comment-only lines do not count. */
static void lex_indent(Lexer *L) {
    const char *s = L->f->text;
    int n = L->f->len, p = L->pos, col = 0, tab = -1;
    while (p < n && (s[p] == ' ' || s[p] == '\t' || s[p] == '\r' || s[p] == '\f')) {
        if (s[p] == '\t' && tab < 0) tab = p;
        if (s[p] == ' ' || s[p] == '\t') col++;
        p++;
    }
    if (p >= n || s[p] == '\n' || s[p] == '#') return; /* blank line: still at a line start */
    L->bol = false;
    if (tab >= 0) {
        SrcLoc loc = {L->f, L->line, tab - L->line_start + 1, tab, 1};
        diag_error(L->d, loc, "a tab in indentation; indent with spaces");
    }
    SrcLoc loc = {L->f, L->line, p - L->line_start + 1, p, 1};
    int cur = L->nindents ? L->indents[L->nindents - 1] : 0;
    Token t = {0};
    t.loc = loc;
    t.bad = tab >= 0;
    if (col > cur) {
        if (L->nindents < (int)(sizeof L->indents / sizeof *L->indents))
            L->indents[L->nindents++] = col;
        t.kind = TK_INDENT;
        ARENA_PUSH(L->a, L->toks, L->count, L->cap, t);
        return;
    }
    /* Back to an enclosing level: the innermost one at or left of col; a
     * column between two levels stays in the deeper block (reported). */
    int j = L->nindents - 1;
    while (j >= 0 && L->indents[j] > col)
        j--;
    if (!(j < 0 ? col == 0 : L->indents[j] == col)) {
        diag_error(L->d, loc, "this line's indentation matches no enclosing block's indentation");
        j++;
    }
    t.kind = TK_DEDENT;
    while (L->nindents - 1 > j) {
        L->nindents--;
        ARENA_PUSH(L->a, L->toks, L->count, L->cap, t);
    }
}

TokenList lex(Arena *a, Diag *d, const SrcFile *file) {
    Lexer L = {.a = a, .d = d, .f = file, .line = 1, .bol = true};
    const char *s = file->text;
    int n = file->len;
    while (L.pos < n) {
        if (L.bol && L.depth == 0) lex_indent(&L);
        if (L.pos >= n) break;
        char c = s[L.pos];
        if (c == '\n') {
            if (L.depth == 0 && L.count && L.toks[L.count - 1].kind != TK_NEWLINE) {
                push(&L, TK_NEWLINE, L.pos)->loc.len = 1;
            }
            L.pos++;
            L.line++;
            L.line_start = L.pos;
            if (L.depth == 0) L.bol = true;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            L.pos++;
            continue;
        }
        if (c == '#') {
            while (L.pos < n && s[L.pos] != '\n')
                L.pos++;
            continue;
        }
        if (c == '\\' && L.pos + 1 < n && s[L.pos + 1] == '\n') { /* explicit line joining */
            L.pos += 2;
            L.line++;
            L.line_start = L.pos;
            continue;
        }
        if (isdigit((unsigned char)c) ||
            (c == '.' && L.pos + 1 < n && isdigit((unsigned char)s[L.pos + 1]))) {
            lex_number(&L);
            continue;
        }
        if (isalpha((unsigned char)c) || c == '_') {
            int start = L.pos;
            while (L.pos < n && (isalnum((unsigned char)s[L.pos]) || s[L.pos] == '_'))
                L.pos++;
            size_t len = (size_t)(L.pos - start);
            TokKind kind = TK_IDENT;
            for (size_t i = 0; i < sizeof keywords / sizeof *keywords; i++)
                if (strlen(keywords[i].word) == len && !memcmp(keywords[i].word, s + start, len))
                    kind = keywords[i].kind;
            /* inf and nan are float literals, except as an attribute name (math.inf). */
            bool after_dot = L.count && L.toks[L.count - 1].kind == TK_DOT;
            if (kind == TK_IDENT && !after_dot &&
                ((len == 3 && !memcmp(s + start, "inf", 3)) ||
                 (len == 3 && !memcmp(s + start, "nan", 3)))) {
                Token *t = push(&L, TK_FLOAT, start);
                t->fval = s[start] == 'i' ? INFINITY : NAN;
                continue;
            }
            Token *t = push(&L, kind, start);
            t->text = arena_strndup(a, s + start, len);
            continue;
        }
        if (c == '"' || c == '\'') {
            lex_string(&L);
            continue;
        }
        int len = 0;
        TokKind k = punct(s + L.pos, n - L.pos, &len);
        if (k != TK_EOF) {
            int start = L.pos;
            L.pos += len;
            if (k == TK_LPAREN || k == TK_LBRACKET) L.depth++;
            if ((k == TK_RPAREN || k == TK_RBRACKET) && L.depth > 0) L.depth--;
            push(&L, k, start);
            continue;
        }
        int start = L.pos++;
        /* Skip the rest of a UTF-8 sequence so the caret sits under one character. */
        while (L.pos < n && ((unsigned char)s[L.pos] & 0xC0) == 0x80)
            L.pos++;
        Token *bad = push(&L, TK_ERROR, start);
        bad->bad = true;
        SrcLoc loc = bad->loc;
        if (isprint((unsigned char)c))
            diag_error(d, loc, "unexpected character '%c'", c);
        else
            diag_error(d, loc, "unexpected byte 0x%02x", (unsigned char)c);
    }
    if (L.count && L.toks[L.count - 1].kind != TK_NEWLINE) push(&L, TK_NEWLINE, L.pos);
    for (; L.nindents > 0; L.nindents--)
        push(&L, TK_DEDENT, L.pos);
    push(&L, TK_EOF, L.pos);
    TokenList r = {L.toks, L.count};
    return r;
}
