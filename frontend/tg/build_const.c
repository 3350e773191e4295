/* Compile-time numbers with Python's semantics: the `math` module, int() and
 * float(), and elementwise functions whose arguments are all numbers. */
#include "frontend/tg/build_const.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PI_ 3.14159265358979323846
#define E_ 2.71828182845904523536

bool const_math_attr(const char *name, double *out) {
    static const struct {
        const char *name;
        double v;
    } k[] = {{"pi", PI_}, {"e", E_}, {"tau", 2 * PI_}, {"inf", INFINITY}, {"nan", NAN}};
    for (size_t i = 0; i < sizeof k / sizeof *k; i++)
        if (!strcmp(name, k[i].name)) {
            *out = k[i].v;
            return true;
        }
    return false;
}

static bool is_num(const ConstVal *v) {
    return v->kind == CV_INT || v->kind == CV_FLOAT || v->kind == CV_BOOL;
}

static double as_f(const ConstVal *v) {
    return v->kind == CV_FLOAT ? v->f : (double)v->i;
}

/* Python's type name of a non-number, for "must be real number, not X". */
static const char *py_type(const ConstVal *v) {
    switch (v->kind) {
    case CV_TENSOR: return "Tensor";
    case CV_STR: return "str";
    default: return v->what ? v->what : "object";
    }
}

static ConstVal f_val(double f) {
    return (ConstVal){.kind = CV_FLOAT, .f = f};
}

static ConstFold fail(char *msg, size_t msgsz, int *bad_arg, int arg, const char *fmt,
                      const char *a, const char *b) {
    snprintf(msg, msgsz, fmt, a, b);
    *bad_arg = arg;
    return CF_ERR;
}

typedef double (*Fn1)(double);

static double sigmoid(double x) {
    return 1.0 / (1.0 + exp(-x));
}
static double rsqrt(double x) {
    return 1.0 / sqrt(x);
}
static double degrees(double x) {
    return x * 180.0 / PI_;
}
static double radians(double x) {
    return x * PI_ / 180.0;
}

/* domain: 0 any, 1 x >= 0, 2 x > 0, 3 x > -1, 4 |x| <= 1 */
static const struct {
    const char *name;
    Fn1 fn;
    int domain;
} math_fns[] = {
    {"sqrt", sqrt, 1},       {"exp", exp, 0},     {"log", log, 2},     {"log2", log2, 2},
    {"log10", log10, 2},     {"log1p", log1p, 3}, {"expm1", expm1, 0}, {"sin", sin, 0},
    {"cos", cos, 0},         {"tan", tan, 0},     {"tanh", tanh, 0},   {"sinh", sinh, 0},
    {"cosh", cosh, 0},       {"asin", asin, 4},   {"acos", acos, 4},   {"atan", atan, 0},
    {"erf", erf, 0},         {"erfc", erfc, 0},   {"fabs", fabs, 0},   {"degrees", degrees, 0},
    {"radians", radians, 0},
};

static bool in_domain(int domain, double x) {
    switch (domain) {
    case 1: return !(x < 0);
    case 2: return !(x <= 0);
    case 3: return !(x <= -1);
    case 4: return !(fabs(x) > 1);
    default: return true;
    }
}

static ConstFold check_nums(const char *name, int n, const ConstVal *args, char *msg, size_t msgsz,
                            int *bad_arg) {
    for (int i = 0; i < n; i++)
        if (!is_num(&args[i]))
            return fail(msg, msgsz, bad_arg, i,
                        "math.%s(): must be real number, not %s (the math module works on "
                        "numbers; use the tensor operation instead)",
                        name, py_type(&args[i]));
    return CF_OK;
}

static ConstFold nargs_error(const char *name, int want, int n, char *msg, size_t msgsz,
                             int *bad_arg) {
    char w[64];
    snprintf(w, sizeof w, "%d argument%s, got %d", want, want == 1 ? "" : "s", n);
    return fail(msg, msgsz, bad_arg, -1, "math.%s() takes exactly %s", name, w);
}

static ConstFold to_int(double x, ConstVal *out, char *msg, size_t msgsz, int *bad_arg, int arg) {
    if (isinf(x))
        return fail(msg, msgsz, bad_arg, arg, "cannot convert float infinity to integer%s%s", "",
                    "");
    if (isnan(x))
        return fail(msg, msgsz, bad_arg, arg, "cannot convert float NaN to integer%s%s", "", "");
    if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0))
        return fail(msg, msgsz, bad_arg, arg, "integer %s%sout of range of a 64-bit integer", "",
                    "");
    *out = (ConstVal){.kind = CV_INT, .i = (int64_t)x};
    return CF_OK;
}

ConstFold const_math_call(const char *name, int n, const ConstVal *args, ConstVal *out, char *msg,
                          size_t msgsz, int *bad_arg) {
    for (size_t k = 0; k < sizeof math_fns / sizeof *math_fns; k++) {
        if (strcmp(name, math_fns[k].name)) continue;
        if (!strcmp(name, "log") && n == 2) { /* math.log(x, base) */
            if (check_nums(name, n, args, msg, msgsz, bad_arg) != CF_OK) return CF_ERR;
            double x = as_f(&args[0]), b = as_f(&args[1]);
            if (!in_domain(2, x) || !in_domain(2, b))
                return fail(msg, msgsz, bad_arg, -1, "math domain error (math.%s)%s", name, "");
            if (b == 1) return fail(msg, msgsz, bad_arg, -1, "float division by zero%s%s", "", "");
            *out = f_val(log(x) / log(b));
            return CF_OK;
        }
        if (n != 1) return nargs_error(name, 1, n, msg, msgsz, bad_arg);
        if (check_nums(name, n, args, msg, msgsz, bad_arg) != CF_OK) return CF_ERR;
        double x = as_f(&args[0]);
        if (!in_domain(math_fns[k].domain, x))
            return fail(msg, msgsz, bad_arg, 0, "math domain error (math.%s)%s", name, "");
        double r = math_fns[k].fn(x);
        if (isinf(r) && !isinf(x))
            return fail(msg, msgsz, bad_arg, 0, "math range error%s%s", "", "");
        *out = f_val(r);
        return CF_OK;
    }
    if (!strcmp(name, "floor") || !strcmp(name, "ceil") || !strcmp(name, "trunc")) {
        if (n != 1) return nargs_error(name, 1, n, msg, msgsz, bad_arg);
        if (check_nums(name, n, args, msg, msgsz, bad_arg) != CF_OK) return CF_ERR;
        if (args[0].kind != CV_FLOAT) {
            *out = (ConstVal){.kind = CV_INT, .i = args[0].i};
            return CF_OK;
        }
        double x = args[0].f;
        x = name[0] == 'f' ? floor(x) : name[0] == 'c' ? ceil(x) : trunc(x);
        return to_int(x, out, msg, msgsz, bad_arg, 0);
    }
    if (!strcmp(name, "pow") || !strcmp(name, "atan2") || !strcmp(name, "hypot") ||
        !strcmp(name, "fmod") || !strcmp(name, "copysign")) {
        if (n != 2) return nargs_error(name, 2, n, msg, msgsz, bad_arg);
        if (check_nums(name, n, args, msg, msgsz, bad_arg) != CF_OK) return CF_ERR;
        double a = as_f(&args[0]), b = as_f(&args[1]), r;
        if (!strcmp(name, "pow")) {
            if ((a == 0 && b < 0) || (a < 0 && isfinite(b) && b != floor(b)))
                return fail(msg, msgsz, bad_arg, -1, "math domain error (math.%s)%s", name, "");
            r = pow(a, b);
        } else if (!strcmp(name, "atan2")) {
            r = atan2(a, b);
        } else if (!strcmp(name, "hypot")) {
            r = hypot(a, b);
        } else if (!strcmp(name, "fmod")) {
            if (b == 0 || isinf(a))
                return fail(msg, msgsz, bad_arg, -1, "math domain error (math.%s)%s", name, "");
            r = fmod(a, b);
        } else {
            r = copysign(a, b);
        }
        *out = f_val(r);
        return CF_OK;
    }
    if (!strcmp(name, "isnan") || !strcmp(name, "isinf") || !strcmp(name, "isfinite")) {
        if (n != 1) return nargs_error(name, 1, n, msg, msgsz, bad_arg);
        if (check_nums(name, n, args, msg, msgsz, bad_arg) != CF_OK) return CF_ERR;
        double x = as_f(&args[0]);
        bool v = name[2] == 'n' ? isnan(x) : name[2] == 'i' ? isinf(x) : isfinite(x);
        *out = (ConstVal){.kind = CV_BOOL, .i = v};
        return CF_OK;
    }
    return fail(msg, msgsz, bad_arg, -2, "module 'math' has no attribute '%s'%s", name, "");
}

/* float("-inf"), float("1e-3"): Python's accepted spellings. */
static bool parse_float(const char *s, double *out) {
    while (isspace((unsigned char)*s))
        s++;
    const char *p = s;
    bool neg = false;
    if (*p == '+' || *p == '-') neg = *p++ == '-';
    if (!strcasecmp(p, "inf") || !strcasecmp(p, "infinity")) {
        *out = neg ? -INFINITY : INFINITY;
        return true;
    }
    if (!strcasecmp(p, "nan")) {
        *out = NAN;
        return true;
    }
    if (!*p || !(isdigit((unsigned char)*p) || *p == '.')) return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    while (isspace((unsigned char)*end))
        end++;
    if (*end || end == s) return false;
    *out = v;
    return true;
}

static bool parse_int(const char *s, int64_t *out, bool *range) {
    while (isspace((unsigned char)*s))
        s++;
    const char *p = s;
    if (*p == '+' || *p == '-') p++;
    if (!isdigit((unsigned char)*p)) return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    while (isspace((unsigned char)*end))
        end++;
    if (*end) return false;
    *range = errno == ERANGE;
    *out = v;
    return true;
}

static const char *const fold_fns[] = {"sqrt", "exp",     "log",   "log1p", "expm1", "sin", "cos",
                                       "tanh", "sigmoid", "rsqrt", "erf",   "abs",   "min", "max"};

bool const_builtin_name(const char *name) {
    if (!strcmp(name, "float") || !strcmp(name, "int")) return true;
    for (size_t k = 0; k < sizeof fold_fns / sizeof *fold_fns; k++)
        if (!strcmp(name, fold_fns[k])) return true;
    return false;
}

ConstFold const_builtin_call(const char *name, int n, const ConstVal *args, ConstVal *out,
                             char *msg, size_t msgsz, int *bad_arg) {
    bool is_float = !strcmp(name, "float"), is_int = !strcmp(name, "int");
    if (is_float || is_int) {
        if (n == 0) {
            *out = is_float ? f_val(0) : (ConstVal){.kind = CV_INT};
            return CF_OK;
        }
        if (n > 1)
            return fail(msg, msgsz, bad_arg, 1, "%s() takes at most 1 argument here%s", name, "");
        const ConstVal *a = &args[0];
        if (a->kind == CV_TENSOR)
            return fail(msg, msgsz, bad_arg, 0,
                        "%s() of a tensor needs its value at run time, which tgc cannot compile; "
                        "to cast a tensor use x.%s",
                        name, is_float ? "float() or x.to(f32)" : "long() or x.to(i64)");
        if (a->kind == CV_STR) {
            if (is_float) {
                double v;
                if (!parse_float(a->s, &v))
                    return fail(msg, msgsz, bad_arg, 0, "could not convert string to float: '%s'%s",
                                a->s, "");
                *out = f_val(v);
                return CF_OK;
            }
            int64_t v;
            bool range = false;
            if (!parse_int(a->s, &v, &range))
                return fail(msg, msgsz, bad_arg, 0,
                            "invalid literal for int() with base 10: '%s'%s", a->s, "");
            if (range)
                return fail(msg, msgsz, bad_arg, 0,
                            "integer '%s' is out of range of a 64-bit "
                            "integer%s",
                            a->s, "");
            *out = (ConstVal){.kind = CV_INT, .i = v};
            return CF_OK;
        }
        if (!is_num(a))
            return fail(msg, msgsz, bad_arg, 0,
                        "%s() argument must be a string or a real number, not %s", name,
                        py_type(a));
        if (is_float) {
            *out = f_val(as_f(a));
            return CF_OK;
        }
        if (a->kind != CV_FLOAT) {
            *out = (ConstVal){.kind = CV_INT, .i = a->i};
            return CF_OK;
        }
        return to_int(trunc(a->f), out, msg, msgsz, bad_arg, 0);
    }
    bool known = false;
    for (size_t k = 0; k < sizeof fold_fns / sizeof *fold_fns; k++)
        known |= !strcmp(name, fold_fns[k]);
    if (!known || n == 0) return CF_NO;
    for (int i = 0; i < n; i++)
        if (!is_num(&args[i])) return CF_NO;
    if (!strcmp(name, "min") || !strcmp(name, "max")) {
        if (n < 2) return CF_NO;
        bool mx = name[1] == 'a';
        int best = 0;
        for (int i = 1; i < n; i++) {
            double a = as_f(&args[i]), b = as_f(&args[best]);
            if (mx ? a > b : a < b) best = i; /* Python keeps the first of equals */
        }
        *out = args[best];
        return CF_OK;
    }
    if (n != 1) return CF_NO;
    if (!strcmp(name, "abs")) {
        if (args[0].kind == CV_FLOAT) {
            *out = f_val(fabs(args[0].f));
            return CF_OK;
        }
        if (args[0].i == INT64_MIN)
            return fail(msg, msgsz, bad_arg, 0, "integer overflow in a constant expression%s%s", "",
                        "");
        *out = (ConstVal){.kind = CV_INT, .i = args[0].i < 0 ? -args[0].i : args[0].i};
        return CF_OK;
    }
    /* Elementwise functions of numbers: the value torch computes (sqrt(-1.0) is nan). */
    double x = as_f(&args[0]);
    static const struct {
        const char *name;
        Fn1 fn;
    } fns[] = {{"sqrt", sqrt},       {"exp", exp},     {"log", log}, {"log1p", log1p},
               {"expm1", expm1},     {"sin", sin},     {"cos", cos}, {"tanh", tanh},
               {"sigmoid", sigmoid}, {"rsqrt", rsqrt}, {"erf", erf}};
    for (size_t k = 0; k < sizeof fns / sizeof *fns; k++)
        if (!strcmp(name, fns[k].name)) {
            *out = f_val(fns[k].fn(x));
            return CF_OK;
        }
    return CF_NO;
}
