/* Tokens of the .tg language (spec: graph-language.md, "Lexical rules"). */
#ifndef TGC_LEXER_H
#define TGC_LEXER_H
#include <stdint.h>

#include "support/arena.h"
#include "support/diag.h"

typedef enum {
    TK_EOF,
    TK_NEWLINE,
    TK_IDENT,
    TK_INT,
    TK_FLOAT,
    TK_STRING,
    /* keywords */
    TK_GRAPH,
    TK_INPUT,
    TK_PARAM,
    TK_OUTPUT,
    TK_TRUE,
    TK_FALSE,
    TK_NONE,
    TK_DEF,
    TK_RETURN,
    /* layout: a def body's lines are indented (Python's INDENT/DEDENT) */
    TK_INDENT,
    TK_DEDENT,
    /* punctuation */
    TK_LPAREN,
    TK_RPAREN,
    TK_LBRACKET,
    TK_RBRACKET,
    TK_COMMA,
    TK_COLON,
    TK_ASSIGN,
    TK_DOT,
    TK_ELLIPSIS,
    TK_PLUS,
    TK_MINUS,
    TK_STAR,
    TK_SLASH,
    TK_POW,
    TK_PERCENT,
    TK_FLOORDIV,
    TK_AT,
    TK_LT,
    TK_LE,
    TK_GT,
    TK_GE,
    TK_EQ,
    TK_NE,
    TK_AMP,
    TK_PIPE,
    TK_TILDE,
    TK_ERROR, /* a character that starts no token */
} TokKind;

typedef struct Token {
    TokKind kind;
    SrcLoc loc;
    const char *text; /* identifier or string contents (arena) */
    int64_t ival;
    double fval;
    bool bad; /* the lexer reported an error here: the parser stays quiet about this statement */
} Token;

typedef struct TokenList {
    Token *toks;
    int count;
} TokenList;

/* Splits the file into tokens; reports bad characters and unterminated
 * strings to diag and skips them, so parsing can still go on. */
TokenList lex(Arena *a, Diag *d, const SrcFile *file);
const char *tok_kind_name(TokKind k);
#endif
