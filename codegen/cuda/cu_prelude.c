/* The device helpers every CUDA module starts with. NVRTC compiles the
 * module with no include path and no headers, so nothing here includes
 * anything: f16 goes through PTX's cvt instructions instead of
 * cuda_fp16.h, bf16 through bit arithmetic. Each helper mirrors what the
 * LLVM backend computes for the same op (codegen/llvm/expr.c, types.c and
 * runtime/kernel_support.c), so that both backends give the same bits
 * wherever CUDA's math is correctly rounded. Everything is prefixed tg_
 * and static, so a module's names never clash with NVRTC's builtins. */
#include "codegen/cuda/cu.h"

const char cu_prelude[] =
    "/* tgc device prelude */\n"
    "typedef long long tg_i64;\n"
    "typedef unsigned long long tg_u64;\n"
    "#define TG_D static __device__ __forceinline__ __attribute__((unused))\n"
    /* Constants as bit patterns: no header defines INFINITY or NAN here. */
    "#define TG_INF __int_as_float(0x7f800000)\n"
    "#define TG_NAN __int_as_float(0x7fc00000)\n"
    "#define TG_DINF __longlong_as_double(0x7ff0000000000000LL)\n"
    "#define TG_DNAN __longlong_as_double(0x7ff8000000000000LL)\n"
    "\n"
    /* f16: the hardware conversion rounds to nearest even like F16C; a NaN
     * keeps its sign and top payload bits with the quiet bit set, as x86's
     * vcvtps2ph does (PTX would give the canonical 0x7fff). */
    "TG_D float tg_h2f(unsigned short h) {\n"
    "    float f;\n"
    "    asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h));\n"
    "    return f;\n"
    "}\n"
    "TG_D unsigned short tg_f2h(float f) {\n"
    "    unsigned short h;\n"
    "    asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n"
    "    if (f != f) {\n"
    "        unsigned u = __float_as_uint(f);\n"
    "        h = (unsigned short)(((u >> 16) & 0x8000u) | 0x7e00u | ((u >> 13) & 0x3ffu));\n"
    "    }\n"
    "    return h;\n"
    "}\n"
    /* bf16: c10's round_to_nearest_even; NaN -> 0x7fc0 as the CPU does. */
    "TG_D float tg_b2f(unsigned short b) {\n"
    "    return __uint_as_float((unsigned)b << 16);\n"
    "}\n"
    "TG_D unsigned short tg_f2b(float f) {\n"
    "    if (f != f) return (unsigned short)0x7fc0;\n"
    "    unsigned u = __float_as_uint(f);\n"
    "    return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
    "}\n"
    /* A float rounded to f16/bf16 and back: PyTorch rounds every f16/bf16
     * op's result once. */
    "TG_D float tg_rh(float x) {\n"
    "    return tg_h2f(tg_f2h(x));\n"
    "}\n"
    "TG_D float tg_rb(float x) {\n"
    "    return tg_b2f(tg_f2b(x));\n"
    "}\n"
    "\n"
    /* Integer division with the divisor made safe, as the CPU backend does:
     * x / 0 gives 0 (PyTorch raises ZeroDivisionError; compiled code
     * cannot), INT_MIN / -1 wraps to INT_MIN with remainder 0. The i32
     * versions also serve i8, i16, u8 and bool, whose values an int holds
     * exactly (the caller's narrowing wraps -128 / -1 back to -128). */
    "TG_D int tg_div_i32(int n, int d) {\n"
    "    return d == 0 ? 0 : d == -1 ? (int)(0u - (unsigned)n) : n / d;\n"
    "}\n"
    "TG_D int tg_mod_i32(int n, int d) {\n"
    "    return d == 0 || d == -1 ? 0 : n % d;\n"
    "}\n"
    "TG_D tg_i64 tg_div_i64(tg_i64 n, tg_i64 d) {\n"
    "    return d == 0 ? 0 : d == -1 ? (tg_i64)(0ull - (tg_u64)n) : n / d;\n"
    "}\n"
    "TG_D tg_i64 tg_mod_i64(tg_i64 n, tg_i64 d) {\n"
    "    return d == 0 || d == -1 ? 0 : n % d;\n"
    "}\n"
    /* Python's floor semantics: when the remainder is non-zero and its sign
     * differs from the divisor's, the quotient goes down by one and the
     * remainder up by the divisor. */
    "TG_D int tg_floordiv_i32(int n, int d) {\n"
    "    int q = tg_div_i32(n, d), r = tg_mod_i32(n, d);\n"
    "    return r != 0 && ((r < 0) != (d < 0)) ? q - 1 : q;\n"
    "}\n"
    "TG_D int tg_rem_i32(int n, int d) {\n"
    "    int r = tg_mod_i32(n, d);\n"
    "    return r != 0 && ((r < 0) != (d < 0)) ? r + d : r;\n"
    "}\n"
    "TG_D tg_i64 tg_floordiv_i64(tg_i64 n, tg_i64 d) {\n"
    "    tg_i64 q = tg_div_i64(n, d), r = tg_mod_i64(n, d);\n"
    "    return r != 0 && ((r < 0) != (d < 0)) ? q - 1 : q;\n"
    "}\n"
    "TG_D tg_i64 tg_rem_i64(tg_i64 n, tg_i64 d) {\n"
    "    tg_i64 r = tg_mod_i64(n, d);\n"
    "    return r != 0 && ((r < 0) != (d < 0)) ? (tg_i64)((tg_u64)r + (tg_u64)d) : r;\n"
    "}\n"
    /* torch's integer pow: negative exponents give 1 / base^|e| truncated;
     * the product wraps (unsigned arithmetic: no signed overflow). */
    "TG_D tg_i64 tg_ipow(tg_i64 base, tg_i64 e) {\n"
    "    if (e < 0) return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;\n"
    "    tg_u64 r = 1, b = (tg_u64)base;\n"
    "    while (e) {\n"
    "        if (e & 1) r *= b;\n"
    "        b *= b;\n"
    "        e >>= 1;\n"
    "    }\n"
    "    return (tg_i64)r;\n"
    "}\n"
    "\n"
    /* Float helpers. Products use __fmul_rn/__dmul_rn so that NVRTC's
     * default --fmad=true never contracts them into an FMA: the CPU
     * backend rounds every product and sum separately. */
    /* ATen's div_floor_floating. */
    "TG_D float tg_floordiv_f32(float a, float b) {\n"
    "    float mod = fmodf(a, b);\n"
    "    float div = (a - mod) / b;\n"
    "    if (mod != 0.0f && ((b < 0.0f) != (mod < 0.0f))) div = div - 1.0f;\n"
    "    float fl = floorf(div);\n"
    "    if (div - fl > 0.5f) fl = fl + 1.0f;\n"
    "    float q = a / b;\n"
    "    float r = div != 0.0f ? fl : copysignf(0.0f, q);\n"
    "    return b == 0.0f ? q : r;\n"
    "}\n"
    "TG_D double tg_floordiv_f64(double a, double b) {\n"
    "    double mod = fmod(a, b);\n"
    "    double div = (a - mod) / b;\n"
    "    if (mod != 0.0 && ((b < 0.0) != (mod < 0.0))) div = div - 1.0;\n"
    "    double fl = floor(div);\n"
    "    if (div - fl > 0.5) fl = fl + 1.0;\n"
    "    double q = a / b;\n"
    "    double r = div != 0.0 ? fl : copysign(0.0, q);\n"
    "    return b == 0.0 ? q : r;\n"
    "}\n"
    /* Python's float remainder: the result takes the divisor's sign. */
    "TG_D float tg_rem_f32(float a, float b) {\n"
    "    float m = fmodf(a, b);\n"
    "    return m != 0.0f && ((b < 0.0f) != (m < 0.0f)) ? m + b : m;\n"
    "}\n"
    "TG_D double tg_rem_f64(double a, double b) {\n"
    "    double m = fmod(a, b);\n"
    "    return m != 0.0 && ((b < 0.0) != (m < 0.0)) ? m + b : m;\n"
    "}\n"
    /* maximum/minimum: a NaN operand propagates (a's first). */
    "TG_D float tg_max_f32(float a, float b) {\n"
    "    return a != a ? a : b != b ? b : a > b ? a : b;\n"
    "}\n"
    "TG_D float tg_min_f32(float a, float b) {\n"
    "    return a != a ? a : b != b ? b : a < b ? a : b;\n"
    "}\n"
    "TG_D double tg_max_f64(double a, double b) {\n"
    "    return a != a ? a : b != b ? b : a > b ? a : b;\n"
    "}\n"
    "TG_D double tg_min_f64(double a, double b) {\n"
    "    return a != a ? a : b != b ? b : a < b ? a : b;\n"
    "}\n"
    "TG_D float tg_sigmoid_f32(float x) {\n"
    "    return 1.0f / (1.0f + expf(-x));\n"
    "}\n"
    "TG_D double tg_sigmoid_f64(double x) {\n"
    "    return 1.0 / (1.0 + exp(-x));\n"
    "}\n"
    /* gelu: x / 2 * (1 + erf(x / sqrt(2))), or with the tanh approximation
     * 1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)). */
    "TG_D float tg_gelu_f32(float x) {\n"
    "    float inner = erff(__fmul_rn(x, 0.7071067811865476f));\n"
    "    return __fmul_rn(__fmul_rn(x, 0.5f), 1.0f + inner);\n"
    "}\n"
    "TG_D double tg_gelu_f64(double x) {\n"
    "    double inner = erf(__dmul_rn(x, 0.7071067811865476));\n"
    "    return __dmul_rn(__dmul_rn(x, 0.5), 1.0 + inner);\n"
    "}\n"
    "TG_D float tg_gelu_tanh_f32(float x) {\n"
    "    float x3 = __fmul_rn(__fmul_rn(x, x), x);\n"
    "    float in = __fmul_rn(0.7978845608028654f, x + __fmul_rn(0.044715f, x3));\n"
    "    return __fmul_rn(__fmul_rn(x, 0.5f), 1.0f + tanhf(in));\n"
    "}\n"
    "TG_D double tg_gelu_tanh_f64(double x) {\n"
    "    double x3 = __dmul_rn(__dmul_rn(x, x), x);\n"
    "    double in = __dmul_rn(0.7978845608028654, x + __dmul_rn(0.044715, x3));\n"
    "    return __dmul_rn(__dmul_rn(x, 0.5), 1.0 + tanh(in));\n"
    "}\n"
    "\n";
