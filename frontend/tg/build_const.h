/* Compile-time numbers: Python's `math` module (math.sqrt, math.pi, ...),
 * float("-inf"), int(...), and elementwise functions of number literals
 * (sqrt(32.0) is a number, not a step of the graph). frontend/tg/build.c converts its
 * values to ConstVal and calls these; they know nothing of the IR. */
#ifndef TGC_TG_BUILD_CONST_H
#define TGC_TG_BUILD_CONST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { CV_INT, CV_FLOAT, CV_BOOL, CV_STR, CV_TENSOR, CV_OTHER } CvKind;

typedef struct {
    CvKind kind;
    int64_t i;        /* INT, BOOL */
    double f;         /* FLOAT */
    const char *s;    /* STR */
    const char *what; /* OTHER: "a list", ... (for messages) */
} ConstVal;

typedef enum {
    CF_NO, /* not a compile-time call: evaluate it as an operation */
    CF_OK, /* *out holds the result */
    CF_ERR /* msg holds the error; *bad_arg is the argument it is about (-1: the call, -2: the name)
            */
} ConstFold;

/* `math.NAME` (pi, e, tau, inf, nan). False when math has no such constant. */
bool const_math_attr(const char *name, double *out);

/* `math.NAME(args)`: always compile time; a tensor argument is an error as in
 * Python ("must be real number, not Tensor"); an unknown name is an error. */
ConstFold const_math_call(const char *name, int n, const ConstVal *args, ConstVal *out, char *msg,
                          size_t msgsz, int *bad_arg);

/* A plain call NAME(args) with no keywords: int(...), float(...) always fold
 * (CF_ERR on a tensor); sqrt exp log sin cos tanh abs min max fold when every
 * argument is a number and are CF_NO otherwise (the tensor operations). */
/* Whether NAME is one const_builtin_call may fold. */
bool const_builtin_name(const char *name);

ConstFold const_builtin_call(const char *name, int n, const ConstVal *args, ConstVal *out,
                             char *msg, size_t msgsz, int *bad_arg);

#endif
