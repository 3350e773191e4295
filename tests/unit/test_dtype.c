/* Type promotion (spec: "Type promotion"), against PyTorch 1.13:
 * dtype_promote vs torch.promote_types over every pair, DTypeState vs
 * torch.result_type, dtype names, and the dtypes the compiler infers. */
#define UNIT_COMPILE
#include "ir/dtype.h"
#include "unit.h"

static const DType all[DT_COUNT] = {DT_BOOL, DT_U8,  DT_I8,  DT_I16, DT_I32, DT_I64, DT_F16,
                                    DT_BF16, DT_F32, DT_F64, DT_U16, DT_U32, DT_U64};

/* torch.promote_types(row, column), printed by
 *   for a in ts: [torch.promote_types(a, b) for b in ts]
 * with ts = bool uint8 int8 int16 int32 int64 float16 bfloat16 float32 float64;
 * then u16, u32, u64 (PyTorch 2.3+ promotes them only with a float, which
 * wins; with the others numpy's np.promote_types, so u64 with a signed
 * type is f64). */
static const DType torch_promote[DT_COUNT][DT_COUNT] = {
#define F_ DT_F16, DT_BF16, DT_F32, DT_F64
    {DT_BOOL, DT_U8, DT_I8, DT_I16, DT_I32, DT_I64, F_, DT_U16, DT_U32, DT_U64},  /* bool */
    {DT_U8, DT_U8, DT_I16, DT_I16, DT_I32, DT_I64, F_, DT_U16, DT_U32, DT_U64},   /* u8 */
    {DT_I8, DT_I16, DT_I8, DT_I16, DT_I32, DT_I64, F_, DT_I32, DT_I64, DT_F64},   /* i8 */
    {DT_I16, DT_I16, DT_I16, DT_I16, DT_I32, DT_I64, F_, DT_I32, DT_I64, DT_F64}, /* i16 */
    {DT_I32, DT_I32, DT_I32, DT_I32, DT_I32, DT_I64, F_, DT_I32, DT_I64, DT_F64}, /* i32 */
    {DT_I64, DT_I64, DT_I64, DT_I64, DT_I64, DT_I64, F_, DT_I64, DT_I64, DT_F64}, /* i64 */
#undef F_
    {DT_F16, DT_F16, DT_F16, DT_F16, DT_F16, DT_F16, DT_F16, DT_F32, DT_F32, DT_F64, DT_F16, DT_F16,
     DT_F16}, /* f16 */
    {DT_BF16, DT_BF16, DT_BF16, DT_BF16, DT_BF16, DT_BF16, DT_F32, DT_BF16, DT_F32, DT_F64, DT_BF16,
     DT_BF16, DT_BF16}, /* bf16 */
    {DT_F32, DT_F32, DT_F32, DT_F32, DT_F32, DT_F32, DT_F32, DT_F32, DT_F32, DT_F64, DT_F32, DT_F32,
     DT_F32}, /* f32 */
    {DT_F64, DT_F64, DT_F64, DT_F64, DT_F64, DT_F64, DT_F64, DT_F64, DT_F64, DT_F64, DT_F64, DT_F64,
     DT_F64}, /* f64 */
#define F_ DT_F16, DT_BF16, DT_F32, DT_F64
    {DT_U16, DT_U16, DT_I32, DT_I32, DT_I32, DT_I64, F_, DT_U16, DT_U32, DT_U64}, /* u16 */
    {DT_U32, DT_U32, DT_I64, DT_I64, DT_I64, DT_I64, F_, DT_U32, DT_U32, DT_U64}, /* u32 */
    {DT_U64, DT_U64, DT_F64, DT_F64, DT_F64, DT_F64, F_, DT_U64, DT_U64, DT_U64}, /* u64 */
#undef F_
};

#define CHECK_DT(expected, found)                                                                  \
    unit_check_str(dtype_name(expected), dtype_name(found), __FILE__, __LINE__, #found)

static void test_promote_table(void) {
    char ctx[64];
    for (int i = 0; i < DT_COUNT; i++)
        for (int j = 0; j < DT_COUNT; j++) {
            snprintf(ctx, sizeof ctx, "promote(%s, %s)", dtype_name(all[i]), dtype_name(all[j]));
            unit_context = ctx;
            CHECK_DT(torch_promote[i][j], dtype_promote(all[i], all[j]));
        }
    unit_context = NULL;
    /* The cases the brief names, spelled out. */
    CHECK_DT(DT_I16, dtype_promote(DT_U8, DT_I8));
    CHECK_DT(DT_I16, dtype_promote(DT_I8, DT_U8));
    CHECK_DT(DT_F32, dtype_promote(DT_F16, DT_BF16));
    CHECK_DT(DT_F32, dtype_promote(DT_BF16, DT_F16));
    CHECK_DT(DT_U8, dtype_promote(DT_BOOL, DT_U8));
    CHECK_DT(DT_F16, dtype_promote(DT_I64, DT_F16));
    /* DT_NONE is the identity (an absent operand). */
    CHECK_DT(DT_I8, dtype_promote(DT_NONE, DT_I8));
    CHECK_DT(DT_BF16, dtype_promote(DT_BF16, DT_NONE));
}

typedef struct Opnd {
    DType t;
    int ndim;
    bool weak;
} Opnd;

static DType result_of(int n, const Opnd *o) {
    DTypeState s;
    dtype_state_init(&s);
    for (int i = 0; i < n; i++)
        dtype_state_add(&s, o[i].t, o[i].ndim, o[i].weak);
    return dtype_state_result(&s);
}
#define RESULT(...)                                                                                \
    result_of((int)(sizeof((Opnd[]){__VA_ARGS__}) / sizeof(Opnd)), (Opnd[]){__VA_ARGS__})
/* A literal: an int literal is an i64 wrapped number, a float one f64 (PyTorch's double). */
#define INT_LIT                                                                                    \
    { DT_I64, 0, true }
#define FLOAT_LIT                                                                                  \
    { DT_F64, 0, true }
#define BOOL_LIT                                                                                   \
    { DT_BOOL, 0, true }
#define DIM(t)                                                                                     \
    { t, 1, false }
#define ZERO_D(t)                                                                                  \
    { t, 0, false }

static void test_result_type(void) {
    /* Each expected value is torch.result_type(a, b) in PyTorch 1.13, with
     * T = torch.zeros((2,), dtype=...) and Z = torch.zeros((), dtype=...). */
    CHECK_DT(DT_I32, RESULT(DIM(DT_I32), INT_LIT));           /* T(int32) * 2 */
    CHECK_DT(DT_F32, RESULT(DIM(DT_I32), FLOAT_LIT));         /* T(int32) * 0.5 */
    CHECK_DT(DT_F16, RESULT(DIM(DT_F16), FLOAT_LIT));         /* T(float16) * 0.5 */
    CHECK_DT(DT_F64, RESULT(DIM(DT_F64), FLOAT_LIT));         /* T(float64) * 0.5 */
    CHECK_DT(DT_BF16, RESULT(DIM(DT_BF16), INT_LIT));         /* T(bfloat16) + 2 */
    CHECK_DT(DT_I64, RESULT(DIM(DT_BOOL), INT_LIT));          /* T(bool) + 1 */
    CHECK_DT(DT_F32, RESULT(DIM(DT_BOOL), FLOAT_LIT));        /* T(bool) + 1.5 */
    CHECK_DT(DT_BOOL, RESULT(DIM(DT_BOOL), BOOL_LIT));        /* T(bool) + True */
    CHECK_DT(DT_U8, RESULT(DIM(DT_U8), INT_LIT));             /* T(uint8) + 1000 */
    CHECK_DT(DT_I8, RESULT(DIM(DT_I8), BOOL_LIT));            /* T(int8) + True */
    CHECK_DT(DT_F32, RESULT(ZERO_D(DT_F64), DIM(DT_F32)));    /* Z(float64) + T(float32) */
    CHECK_DT(DT_F64, RESULT(ZERO_D(DT_F64), DIM(DT_I32)));    /* Z(float64) + T(int32) */
    CHECK_DT(DT_F64, RESULT(DIM(DT_I32), ZERO_D(DT_F64)));    /* order does not matter */
    CHECK_DT(DT_I8, RESULT(ZERO_D(DT_I64), DIM(DT_I8)));      /* Z(int64) + T(int8) */
    CHECK_DT(DT_BF16, RESULT(ZERO_D(DT_F16), DIM(DT_BF16)));  /* Z(float16) + T(bfloat16) */
    CHECK_DT(DT_F16, RESULT(ZERO_D(DT_F32), DIM(DT_F16)));    /* Z(float32) + T(float16) */
    CHECK_DT(DT_U8, RESULT(ZERO_D(DT_I32), DIM(DT_U8)));      /* Z(int32) + T(uint8) */
    CHECK_DT(DT_U8, RESULT(ZERO_D(DT_BOOL), DIM(DT_U8)));     /* Z(bool) + T(uint8) */
    CHECK_DT(DT_I64, RESULT(ZERO_D(DT_I64), DIM(DT_BOOL)));   /* Z(int64) + T(bool) */
    CHECK_DT(DT_F64, RESULT(ZERO_D(DT_F64), DIM(DT_BOOL)));   /* Z(float64) + T(bool) */
    CHECK_DT(DT_I32, RESULT(ZERO_D(DT_I32), ZERO_D(DT_I16))); /* Z(int32) + Z(int16) */
    CHECK_DT(DT_F32, RESULT(ZERO_D(DT_I32), FLOAT_LIT));      /* Z(int32) + 2.5 */
    CHECK_DT(DT_F64, RESULT(ZERO_D(DT_F64), FLOAT_LIT));      /* Z(float64) + 2.5 */
    CHECK_DT(DT_U8, RESULT(ZERO_D(DT_U8), INT_LIT));          /* Z(uint8) + 5 */
    CHECK_DT(DT_I64, RESULT(ZERO_D(DT_BOOL), INT_LIT));       /* Z(bool) + 5 */
    CHECK_DT(DT_I16, RESULT(DIM(DT_U8), DIM(DT_I8)));         /* T(uint8) + T(int8) */
    CHECK_DT(DT_F32, RESULT(DIM(DT_F16), DIM(DT_BF16)));      /* T(float16) + T(bfloat16) */
    /* three priorities at once: (T(int16) + Z(float64)) + 1.5 is float64 */
    CHECK_DT(DT_F64, RESULT(DIM(DT_I16), ZERO_D(DT_F64), FLOAT_LIT));
    /* literals alone: 2 + 2.5 would be the default dtype */
    CHECK_DT(DT_F32, RESULT(INT_LIT, FLOAT_LIT));
    CHECK_DT(DT_I64, RESULT(INT_LIT, INT_LIT));
    /* a weak float literal given as f32 counts the same as f64 */
    CHECK_DT(DT_F16, RESULT(DIM(DT_F16), {DT_F32, 0, true}));
}

static void test_names(void) {
    struct {
        const char *name;
        DType t;
    } names[] = {
        {"f64", DT_F64},        {"f32", DT_F32},     {"f16", DT_F16},       {"bf16", DT_BF16},
        {"i64", DT_I64},        {"i32", DT_I32},     {"i16", DT_I16},       {"i8", DT_I8},
        {"u8", DT_U8},          {"bool", DT_BOOL},   {"float32", DT_F32},   {"float", DT_F32},
        {"float16", DT_F16},    {"half", DT_F16},    {"bfloat16", DT_BF16}, {"float64", DT_F64},
        {"double", DT_F64},     {"int64", DT_I64},   {"long", DT_I64},      {"int32", DT_I32},
        {"int", DT_I32},        {"int16", DT_I16},   {"int8", DT_I8},       {"uint8", DT_U8},
        {"F32", DT_NONE},       {"float8", DT_NONE}, {"", DT_NONE},         {"x", DT_NONE},
        {"f32 ", DT_NONE},      {"u16", DT_U16},     {"uint16", DT_U16},    {"u32", DT_U32},
        {"uint32", DT_U32},     {"u64", DT_U64},     {"uint64", DT_U64},    {"u128", DT_NONE},
        {"complex64", DT_NONE},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        unit_context = names[i].name;
        CHECK_DT(names[i].t, dtype_from_name(names[i].name));
    }
    unit_context = NULL;
    /* dtype_name gives back the canonical name; sizes and categories */
    for (int i = 0; i < DT_COUNT; i++)
        CHECK_DT(all[i], dtype_from_name(dtype_name(all[i])));
    CHECK_INT(1, dtype_size(DT_BOOL));
    CHECK_INT(2, dtype_size(DT_BF16));
    CHECK_INT(8, dtype_size(DT_I64));
    CHECK_INT(4, dtype_size(DT_F32));
    CHECK(dtype_is_float(DT_BF16) && !dtype_is_float(DT_I64) && !dtype_is_float(DT_BOOL));
    CHECK(dtype_is_int(DT_U8) && dtype_is_int(DT_I64) && !dtype_is_int(DT_BOOL) &&
          !dtype_is_int(DT_F16));
    CHECK(dtype_is_int(DT_U16) && dtype_is_int(DT_U32) && dtype_is_int(DT_U64));
    CHECK(dtype_is_unsigned(DT_U8) && dtype_is_unsigned(DT_U64) && !dtype_is_unsigned(DT_I64) &&
          !dtype_is_unsigned(DT_BOOL));
    CHECK_INT(2, dtype_size(DT_U16));
    CHECK_INT(4, dtype_size(DT_U32));
    CHECK_INT(8, dtype_size(DT_U64));
}

/* ---- the dtypes the compiler gives, end to end ---------------------------- */

typedef struct DtCase {
    int line;
    const char *expr; /* the value of output r */
    DType want;
} DtCase;

static void run_dt_case(void *arg) {
    const DtCase *k = arg;
    char src[1024];
    snprintf(src, sizeof src,
             "graph g\n"
             "input xi32 : i32[2]\ninput xf16 : f16[2]\ninput xbf16 : bf16[2]\ninput xb : bool[2]\n"
             "input xu8 : u8[2]\ninput xi8 : i8[2]\ninput xi64 : i64[2]\ninput xf32 : f32[2]\n"
             "input zf64 : f64[]\ninput zi32 : i32[]\n"
             "input xu16 : u16[2]\ninput xu32 : u32[2]\ninput xu64 : u64[2]\n"
             "output r = %s\n",
             k->expr);
    Compiled c;
    unit_context = k->expr;
    Graph *g = compile_src(&c, src);
    if (unit_check(g != NULL, __FILE__, k->line, "the source compiles")) {
        Value *r = find_value(g, "r");
        if (unit_check(r != NULL, __FILE__, k->line, "r exists"))
            unit_check_str(dtype_name(k->want), dtype_name(r->dtype), __FILE__, k->line,
                           "r's dtype");
    } else if (c.msgs) {
        printf("%s", c.msgs);
    }
    unit_context = NULL;
    compiled_free(&c);
}

static void test_compiled(void) {
    /* Expected dtypes printed by PyTorch 1.13 for the same expression on
     * tensors of these dtypes (e.g. (torch.zeros(2, dtype=torch.int32) * 2).dtype). */
    static const DtCase cases[] = {
        {__LINE__, "xi32 * 2", DT_I32},
        {__LINE__, "xi32 * 0.5", DT_F32},
        {__LINE__, "xf16 * 0.5", DT_F16},
        {__LINE__, "xb + 1", DT_I64},
        {__LINE__, "xb + 1.5", DT_F32},
        {__LINE__, "xb + xb", DT_BOOL},
        {__LINE__, "xu8 + xi8", DT_I16},
        {__LINE__, "xf16 + xbf16", DT_F32},
        {__LINE__, "xi32 + zf64", DT_F64}, /* T(int32) + Z(float64) */
        {__LINE__, "xf32 + zf64", DT_F32}, /* T(float32) + Z(float64) */
        {__LINE__, "xf16 * zf64", DT_F16},
        {__LINE__, "xu8 + zi32", DT_U8},
        {__LINE__, "zf64 + 1", DT_F64},
        {__LINE__, "xi32 / 2", DT_F32}, /* true division of integers */
        {__LINE__, "xb / xb", DT_F32},
        {__LINE__, "xf16 / 2", DT_F16},
        {__LINE__, "xi64 // 2", DT_I64},
        {__LINE__, "xi32 ** 2", DT_I32},
        {__LINE__, "xi32 ** 0.5", DT_F32},
        {__LINE__, "xi32 < 0.5", DT_BOOL},
        {__LINE__, "xi8 % 3", DT_I8},
        {__LINE__, "xu8 * -1", DT_U8},
        {__LINE__, "xb * true", DT_BOOL},
        {__LINE__, "-xi8", DT_I8},
        {__LINE__, "where(xb, xi32, 1.5)", DT_F32},
        {__LINE__, "xi32.to(f16)", DT_F16},
        {__LINE__, "xi32.to(float64)", DT_F64},
        {__LINE__, "xi32.sum()", DT_I64},
        {__LINE__, "xb.sum()", DT_I64},
        {__LINE__, "xi32.exp()", DT_F32},
        {__LINE__, "xi64.mean(dtype=f64)", DT_F64},
        {__LINE__, "(xf16 > 0) & (xi32 < 2)", DT_BOOL},
        {__LINE__, "xi32.argmax()", DT_I64},
        {__LINE__, "xb ** 2", DT_I64},
        {__LINE__, "xi32 / xi32", DT_F32},
        {__LINE__, "xi32 // 0.5", DT_F32},
        {__LINE__, "xu8 - 1", DT_U8},
        {__LINE__, "xb * 2.5", DT_F32},
        {__LINE__, "xi64.sigmoid()", DT_F32},
        {__LINE__, "xb.exp()", DT_F32},
        {__LINE__, "xi8.square()", DT_I8},
        {__LINE__, "xb.square()", DT_I64},
        {__LINE__, "xf16.sum()", DT_F16},
        {__LINE__, "xf16.mean()", DT_F16},
        {__LINE__, "xi32.prod()", DT_I64},
        {__LINE__, "xu8.all()", DT_U8},
        {__LINE__, "xb.all()", DT_BOOL},
        {__LINE__, "xi32.amax()", DT_I32},
        {__LINE__, "xi32.clamp(0.5)", DT_F32},
        {__LINE__, "xi32.clamp(min=1)", DT_I32},
        {__LINE__, "where(xb, 1, 0)", DT_I64},
        {__LINE__, "where(xb, 1.0, 0)", DT_F32},
        {__LINE__, "xi32.masked_fill(xb, 1.5)", DT_I32},
        {__LINE__, "xf16.masked_fill(xb, -inf)", DT_F16},
        {__LINE__, "xi32.pow(2.5)", DT_F32},
        {__LINE__, "2 ** xi32", DT_I32},
        {__LINE__, "2.0 ** xi32", DT_F32},
        {__LINE__, "xi32 % 2.5", DT_F32},
        {__LINE__, "xi32 & xi32", DT_I32},
        {__LINE__, "xi32 < xf16", DT_BOOL},
        {__LINE__, "maximum(xi32, xf16)", DT_F16},
        {__LINE__, "xi32.to(bool)", DT_BOOL},
        {__LINE__, "~xb", DT_BOOL},
        {__LINE__, "~xi32", DT_I32},
        {__LINE__, "xb.sign()", DT_BOOL},
        {__LINE__, "xu8.neg()", DT_U8},
        {__LINE__, "xi32.relu()", DT_I32},
        {__LINE__, "xi32.floor()", DT_I32},
        {__LINE__, "xi32.logical_and(xf32)", DT_BOOL},
        {__LINE__, "xb.sum(dtype=f16)", DT_F16},
        /* u16/u32/u64: PyTorch 2.3's result_type where it has one, numpy's
         * np.result_type otherwise (docs/language.md). */
        {__LINE__, "xu32 + 1", DT_U32},
        {__LINE__, "xu64 * -1", DT_U64},
        {__LINE__, "xu16 + xi8", DT_I32},
        {__LINE__, "xu32 + xi32", DT_I64},
        {__LINE__, "xu64 + xi64", DT_F64},
        {__LINE__, "xu16 + xu64", DT_U64},
        {__LINE__, "xu32 + zi32", DT_U32},
        {__LINE__, "xu32 * 0.5", DT_F32},
        {__LINE__, "xu64 + xf16", DT_F16},
        {__LINE__, "xu32 // 3", DT_U32},
        {__LINE__, "xu16 < 2", DT_BOOL},
        {__LINE__, "xu16.sum()", DT_I64},
        {__LINE__, "xu64.sum()", DT_U64},
        {__LINE__, "xu32.amax()", DT_U32},
        {__LINE__, "xu32.argmax()", DT_I64},
        {__LINE__, "xu32.all()", DT_BOOL},
        {__LINE__, "xf32.to(u64)", DT_U64},
        {__LINE__, "xu16.neg()", DT_U16},
    };
    char name[64];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(name, sizeof name, "%s (line %d)", cases[i].expr, cases[i].line);
        unit_isolated(name, run_dt_case, (void *)&cases[i]);
    }
}

/* Operations PyTorch 1.13 rejects for these dtypes (its message in the comment). */
static void run_dt_error(void *arg) {
    const DtCase *k = arg;
    char src[1024];
    snprintf(
        src, sizeof src,
        "graph g\ninput xi32 : i32[2]\ninput xb : bool[2]\ninput xf32 : f32[2]\noutput r = %s\n",
        k->expr);
    Compiled c;
    unit_context = k->expr;
    Graph *g = compile_src(&c, src);
    unit_check(g == NULL, __FILE__, k->line, "the source is rejected");
    unit_check(c.diag.errors > 0 && c.msgs && strstr(c.msgs, "u.tg:5:"), __FILE__, k->line,
               "an error on line 5");
    unit_context = NULL;
    compiled_free(&c);
}

static void test_compiled_errors(void) {
    static const DtCase cases[] = {
        {__LINE__, "xb - xb",
         DT_NONE}, /* Subtraction, the `-` operator, with two bool tensors is not supported */
        {__LINE__, "-xb",
         DT_NONE}, /* Negation, the `-` operator, on a bool tensor is not supported */
        {__LINE__, "~xf32",
         DT_NONE}, /* ~ (operator.invert) is only implemented on integer and Boolean-type tensors */
        {__LINE__, "abs(xb)", DT_NONE},     /* "abs_cpu" not implemented for 'Bool' */
        {__LINE__, "xb.argmax()", DT_NONE}, /* "argmax_cpu" not implemented for 'Bool' */
        {__LINE__, "xi32.var()",
         DT_NONE}, /* std and var only support floating point and complex dtypes */
        {__LINE__, "xi32.softmax(0)",
         DT_NONE}, /* "softmax_lastdim_kernel_impl" not implemented for 'Int' */
        {__LINE__, "xi32.mean()", DT_NONE}, /* mean(): could not infer output dtype */
        {__LINE__, "xf32 & xf32", DT_NONE}, /* "bitwise_and_cpu" not implemented for 'Float' */
        {__LINE__, "xb.relu()", DT_NONE},   /* Boolean inputs not supported for relu */
    };
    char name[64];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(name, sizeof name, "%s (line %d)", cases[i].expr, cases[i].line);
        unit_isolated(name, run_dt_error, (void *)&cases[i]);
    }
}

int main(void) {
    test_promote_table();
    test_result_type();
    test_names();
    test_compiled();
    test_compiled_errors();
    return unit_report("test_dtype");
}
