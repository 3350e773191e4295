/* Reductions and row-wise normalisations on the GPU, rendered from the
 * same description as the CPU's (kd_reduction: kept loops, reduced loops,
 * the output over the input's dims, argmax's row-major index, the norms'
 * weight and bias).
 *
 * Mapping: the kept loops flatten into a row index and the reduced loops
 * into an index j < NRED. A group of G threads (a power of two) owns a
 * row: its threads stride over j, defining the reduced loops' indices by
 * div/mod so that cu_expr reads the (possibly fused) input element, and
 * their partials combine. Two layouts of a block:
 *  - rows (the reduced dims are the input's innermost): a group is G
 *    adjacent lanes, so a warp reads consecutive elements of a row;
 *    partials combine with butterfly shuffles (__shfl_xor_sync), then,
 *    when G spans several warps, through shared memory. G <= 32 packs
 *    256 / G rows into a block (a warp, or part of one, per row: no
 *    shared memory, no barrier); longer rows get a block of G = 64..1024
 *    threads.
 *  - columns (a kept dim is the innermost, as in sum(x, dim=0)): a warp
 *    takes 32 consecutive rows, so its reads are consecutive elements
 *    across rows; the G threads of a row are RPB apart and combine
 *    through shared memory.
 * Blocks stride over the rows, all threads of a block in step, so
 * barriers and full-warp shuffles are always reached by every thread.
 *
 * The butterfly leaves every thread of the group with the same bits (each
 * step combines the same two values, and + and * commute), and the
 * shared-memory stage is read by every thread in the same order: the
 * passes of var, logsumexp, softmax and layer_norm see one mean or max.
 * Numerics are the CPU's (codegen/llvm/k_reduce.c): sums accumulate in f32
 * (f64 for f64, i64 for integers and bool), max/min of floats compare the
 * order-preserving integer keys of their bit patterns with NaN tracked
 * apart, argmax/argmin keep the first extreme with NaN as the extreme,
 * multi-pass ops re-read their input, and the result is rounded once into
 * the output dtype. Products are __fmul_rn/__dmul_rn so that NVRTC never
 * contracts a product and a sum into an FMA the CPU does not do. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "codegen/cuda/cu.h"

#define MAX_GRID 524288 /* blocks; the row loop covers the rest */
#define ROW_BLOCK 256   /* threads per block when G <= 32 */

typedef struct CuRed {
    CuKern k;
    KReduce d;
    const char *it;     /* index type */
    int64_t rows, nred; /* kept iterations, reduced iterations per row */
    int g;              /* threads per row */
    int block, rpb;     /* threads per block, rows per block */
    bool cols;          /* the column layout: a row's threads are rpb apart */
    int nvar;           /* accumulator names */
} CuRed;

/* ---- threads and rows ---- */

static int64_t ext_product(const KSpace *s, int from, int to) {
    int64_t p = 1;
    for (int l = from; l < to; l++)
        p *= s->ext[l];
    return p;
}

static int pow2_at_least(int64_t x) {
    int p = 1;
    while (p < x && p < 1024)
        p *= 2;
    return p;
}

/* The column layout pays when the input's leaves walk the innermost kept
 * loop with unit stride (some of them) and the innermost reduced loop with
 * a larger one (all of them): consecutive rows are then consecutive
 * elements, and a row's elements are not. */
static bool columns(const KSpace *sp, Access *leaves, int nl) {
    int dk = sp->inner_dim[sp->nkept - 1], dr = sp->inner_dim[sp->nloops - 1];
    if (sp->nloops == sp->nkept || dk < 0 || dr < 0) return false;
    bool unit_kept = false;
    for (int i = 0; i < nl; i++) {
        int64_t sk = leaves[i].strides[dk], sr = leaves[i].strides[dr];
        if (sr == 1 || sr == -1) return false;
        unit_kept |= sk == 1 || sk == -1;
    }
    return unit_kept;
}

static void red_setup(Cu *cu, CuRed *r, const Value *v, bool same_shape_out) {
    memset(r, 0, sizeof *r);
    kd_reduction(cu->p, v, same_shape_out, &r->d);
    CuKern *k = &r->k;
    cuk_begin(cu, k, op_display_name(v));
    k->root = v;
    k->sp = r->d.space;
    /* Every access the kernel makes: the input's leaves, the output,
     * argmax's index, weight and bias. */
    Access leaves[64];
    Access *acc[72];
    int nl = 0, na = 0;
    bool uses_index = false;
    if (kd_is_inlined(cu->p, r->d.x))
        nl = kd_collect_leaves(cu->p, r->d.x, NULL, leaves, 64, &uses_index);
    else if (r->d.x->storage->op != OP_SCALAR)
        kd_access_of(cu->p, r->d.x, &leaves[nl++]);
    for (int i = 0; i < nl; i++)
        acc[na++] = &leaves[i];
    acc[na++] = &r->d.dst;
    acc[na++] = &r->d.lin;
    for (int i = 0; i < r->d.naux; i++)
        acc[na++] = &r->d.aux[i];
    k->uses_index = uses_index;
    k->wide = cuk_needs_wide(&k->sp, acc, na);
    r->it = cuk_index_type(k);
    r->rows = ext_product(&k->sp, 0, k->sp.nkept);
    r->nred = ext_product(&k->sp, k->sp.nkept, k->sp.nloops);
    /* Columns: about 16 elements per thread, up to 32 threads per row,
     * 32..256 rows per block. Rows of up to 32 elements: a group of at
     * most a warp, one element per thread. Longer rows: about 8 elements
     * per thread, 32..1024 threads. */
    r->cols = r->rows >= 32 && r->nred > 1 && columns(&k->sp, leaves, nl);
    if (r->cols) {
        r->g = pow2_at_least((r->nred + 15) / 16);
        if (r->g > 32) r->g = 32;
        r->rpb = 256 / r->g < 32 ? 32 : 256 / r->g;
        int64_t rows32 = (r->rows + 31) / 32 * 32;
        if (rows32 < r->rpb) r->rpb = (int)rows32;
        r->block = r->rpb * r->g;
        return;
    }
    if (r->nred <= 32) {
        r->g = pow2_at_least(r->nred);
        int64_t want = r->rows * r->g;
        r->block = want >= ROW_BLOCK ? ROW_BLOCK : (int)((want + 31) / 32 * 32);
        if (r->block < 32) r->block = 32;
    } else {
        r->g = pow2_at_least((r->nred + 7) / 8);
        if (r->g < 32) r->g = 32;
        r->block = r->g;
    }
    r->rpb = r->block / r->g;
}

/* Declares the indices of loops lo..hi-1 from the linear index held in the
 * variable var (row-major, loop hi-1 fastest), dividing var down, and
 * marks those loops open. */
static void open_loops(CuKern *k, const char *it, const char *var, int lo, int hi) {
    for (int l = hi - 1; l >= lo; l--) {
        if (l == lo) {
            cuk_emit(k, "const %s %s = %s;", it, cuk_idx(k, l), var);
        } else {
            long long e = (long long)k->sp.ext[l];
            cuk_emit(k, "const %s %s = %s %% %lld;", it, cuk_idx(k, l), var, e);
            cuk_emit(k, "%s /= %lld;", var, e);
        }
        k->open[l] = true;
    }
}

/* Opens the row loop: defines row, the kept loops' indices and, when a
 * block holds several rows, whether this thread's row exists (live). */
static void open_rows(CuRed *r) {
    CuKern *k = &r->k;
    const char *it = r->it;
    cuk_emit(k, "for (%s rb = (%s)blockIdx.x * %d; rb < %lld; rb += (%s)gridDim.x * %d) {", it, it,
             r->rpb, (long long)r->rows, it, r->rpb);
    k->indent++;
    if (r->cols) {
        cuk_emit(k, "const %s row = rb + (%s)(threadIdx.x %% %du);", it, it, r->rpb);
        cuk_emit(k, "const bool live = row < %lld;", (long long)r->rows);
        if (r->g > 1) cuk_emit(k, "const unsigned lane = threadIdx.x / %du;", r->rpb);
    } else {
        if (r->rpb > 1) {
            cuk_emit(k, "const %s row = rb + (%s)(threadIdx.x / %du);", it, it, r->g);
            cuk_emit(k, "const bool live = row < %lld;", (long long)r->rows);
        } else {
            cuk_emit(k, "const %s row = rb;", it);
        }
        if (r->g > 1) cuk_emit(k, "const unsigned lane = threadIdx.x %% %du;", r->g);
    }
    cuk_emit(k, "%s rr = row;", it);
    open_loops(k, it, "rr", 0, k->sp.nkept);
    cuk_emit(k, "(void)rr;");
}

static void close_rows(CuRed *r) {
    CuKern *k = &r->k;
    k->indent--;
    cuk_emit(k, "}");
    for (int l = 0; l < k->sp.nkept; l++)
        k->open[l] = false;
}

/* Opens this thread's walk over the row's reduced elements: j from lane
 * by G, the reduced loops' indices from j (row-major, the last loop
 * fastest). */
static void open_reduced(CuRed *r) {
    CuKern *k = &r->k;
    const char *it = r->it;
    const char *live = r->rpb > 1 ? "live && " : "";
    if (r->g > 1)
        cuk_emit(k, "for (%s j = (%s)lane; %sj < %lld; j += %d) {", it, it, live,
                 (long long)r->nred, r->g);
    else
        cuk_emit(k, "for (%s j = 0; %sj < %lld; j++) {", it, live, (long long)r->nred);
    k->indent++;
    if (k->sp.nloops > k->sp.nkept) cuk_emit(k, "%s q = j;", it);
    open_loops(k, it, "q", k->sp.nkept, k->sp.nloops);
}

static void close_reduced(CuRed *r) {
    CuKern *k = &r->k;
    k->indent--;
    cuk_emit(k, "}");
    for (int l = k->sp.nkept; l < k->sp.nloops; l++)
        k->open[l] = false;
}

/* ---- accumulators ---- */

/* How two partial states merge (and how an element joins a partial). */
typedef enum Merge {
    M_ADD,
    M_MUL,
    M_OR,
    M_AND,
    M_MAX, /* integers, or float keys (+ a NaN flag when n == 2) */
    M_MIN,
    M_ARGMAX, /* (value, index): the extreme, NaN first, then the lower index */
    M_ARGMIN,
} Merge;

typedef struct St {
    Merge m;
    int n;                      /* variables: 1, or 2 (a NaN flag, or argmax's index) */
    const char *var[2], *ty[2]; /* shuffle-able C types */
    bool fl, dbl;               /* float (double) arithmetic on var[0] */
} St;

static St st_new(CuRed *r, Merge m, const char *ty, bool fl, bool dbl, const char *init) {
    St s;
    memset(&s, 0, sizeof s);
    s.m = m;
    s.n = 1;
    s.ty[0] = ty;
    s.fl = fl;
    s.dbl = dbl;
    s.var[0] = cu_str(r->k.cu, "acc%d", r->nvar++);
    cuk_emit(&r->k, "%s %s = %s;", ty, s.var[0], init);
    return s;
}

static void st_second(CuRed *r, St *s, const char *ty, const char *init) {
    s->n = 2;
    s->ty[1] = ty;
    s->var[1] = cu_str(r->k.cu, "acc%d", r->nvar++);
    cuk_emit(&r->k, "%s %s = %s;", ty, s->var[1], init);
}

static const char *fmul(CuKern *k, bool dbl, const char *a, const char *b) {
    return cu_str(k->cu, "%s(%s, %s)", dbl ? "__dmul_rn" : "__fmul_rn", a, b);
}

/* s = merge(s, o): o names another partial (or an element's state). */
static void st_merge(CuRed *r, const St *s, const char *const *o) {
    CuKern *k = &r->k;
    const char *a = s->var[0], *b = o[0];
    switch (s->m) {
    case M_ADD:
        if (s->fl)
            cuk_emit(k, "%s = %s + %s;", a, a, b);
        else /* wraps as the CPU's i64 add does (signed overflow is UB in C++) */
            cuk_emit(k, "%s = (long long)((unsigned long long)%s + (unsigned long long)%s);", a, a,
                     b);
        break;
    case M_MUL:
        if (s->fl)
            cuk_emit(k, "%s = %s;", a, fmul(k, s->dbl, a, b));
        else
            cuk_emit(k, "%s = (long long)((unsigned long long)%s * (unsigned long long)%s);", a, a,
                     b);
        break;
    case M_OR: cuk_emit(k, "%s = %s | %s;", a, a, b); break;
    case M_AND: cuk_emit(k, "%s = %s & %s;", a, a, b); break;
    case M_MAX:
    case M_MIN:
        cuk_emit(k, "%s = %s %s %s ? %s : %s;", a, b, s->m == M_MAX ? ">" : "<", a, b, a);
        if (s->n == 2) cuk_emit(k, "%s = %s | %s;", s->var[1], s->var[1], o[1]);
        break;
    case M_ARGMAX:
    case M_ARGMIN: {
        const char *ai = s->var[1], *bi = o[1], *op = s->m == M_ARGMAX ? ">" : "<";
        if (s->fl)
            /* NaN beats any number; two NaNs, or equal numbers: the lower
             * index (the first occurrence, as torch.argmax). */
            cuk_emit(k,
                     "if ((%s != %s) != (%s != %s) ? %s != %s : %s != %s ? %s < %s : %s %s %s || "
                     "(%s == %s && %s < %s)) {",
                     b, b, a, a, b, b, b, b, bi, ai, b, op, a, b, a, bi, ai);
        else
            cuk_emit(k, "if (%s %s %s || (%s == %s && %s < %s)) {", b, op, a, b, a, bi, ai);
        k->indent++;
        cuk_emit(k, "%s = %s;", a, b);
        cuk_emit(k, "%s = %s;", ai, bi);
        k->indent--;
        cuk_emit(k, "}");
        break;
    }
    }
}

/* The column layout's combine: every partial through shared memory, each
 * thread merging its row's G partials in lane order; the second barrier
 * keeps the next combine's writes after every thread's reads. */
static void st_combine_cols(CuRed *r, const St *s) {
    CuKern *k = &r->k;
    const char *sh[2], *o[2];
    for (int i = 0; i < s->n; i++) {
        sh[i] = cu_str(k->cu, "sh%d", r->nvar++);
        sb_printf(&k->head, "    __shared__ %s %s[%d];\n", s->ty[i], sh[i], r->block);
        cuk_emit(k, "%s[threadIdx.x] = %s;", sh[i], s->var[i]);
    }
    cuk_emit(k, "__syncthreads();");
    for (int i = 0; i < s->n; i++)
        cuk_emit(k, "%s = %s[threadIdx.x %% %du];", s->var[i], sh[i], r->rpb);
    cuk_emit(k, "for (int w = 1; w < %d; w++) {", r->g);
    k->indent++;
    for (int i = 0; i < s->n; i++)
        o[i] = cuk_tmp_c(k, s->ty[i], "%s[w * %d + threadIdx.x %% %du]", sh[i], r->rpb, r->rpb);
    st_merge(r, s, o);
    k->indent--;
    cuk_emit(k, "}");
    cuk_emit(k, "__syncthreads();");
}

/* Combines the partials of a row's G threads; afterwards every thread of
 * the group holds the row's result. */
static void st_combine(CuRed *r, const St *s) {
    CuKern *k = &r->k;
    if (r->g == 1) return;
    if (r->cols) {
        st_combine_cols(r, s);
        return;
    }
    int warp = r->g < 32 ? r->g : 32;
    cuk_emit(k, "for (int o = %d; o > 0; o >>= 1) {", warp / 2);
    k->indent++;
    const char *o[2];
    for (int i = 0; i < s->n; i++)
        o[i] = cuk_tmp_c(k, s->ty[i], "__shfl_xor_sync(0xffffffffu, %s, o)", s->var[i]);
    st_merge(r, s, o);
    k->indent--;
    cuk_emit(k, "}");
    if (r->g <= 32) return;
    /* Warp partials through shared memory; the second barrier keeps the
     * next combine's writes after every thread's reads. */
    const char *sh[2];
    for (int i = 0; i < s->n; i++) {
        sh[i] = cu_str(k->cu, "sh%d", r->nvar++);
        sb_printf(&k->head, "    __shared__ %s %s[32];\n", s->ty[i], sh[i]);
    }
    cuk_emit(k, "if ((threadIdx.x & 31u) == 0) {");
    k->indent++;
    for (int i = 0; i < s->n; i++)
        cuk_emit(k, "%s[threadIdx.x >> 5] = %s;", sh[i], s->var[i]);
    k->indent--;
    cuk_emit(k, "}");
    cuk_emit(k, "__syncthreads();");
    for (int i = 0; i < s->n; i++)
        cuk_emit(k, "%s = %s[0];", s->var[i], sh[i]);
    cuk_emit(k, "for (int w = 1; w < %d; w++) {", r->g / 32);
    k->indent++;
    for (int i = 0; i < s->n; i++)
        o[i] = cuk_tmp_c(k, s->ty[i], "%s[w]", sh[i]);
    st_merge(r, s, o);
    k->indent--;
    cuk_emit(k, "}");
    cuk_emit(k, "__syncthreads();");
}

/* ---- element values ---- */

static bool isf(DType t) {
    return dtype_is_float(t);
}
static DType float_acc(DType t) {
    return t == DT_F64 ? DT_F64 : DT_F32;
}

/* The input element at the open loops, converted to at. */
static const char *x_as(CuRed *r, DType at) {
    CuKern *k = &r->k;
    return cu_convert(k, cu_expr(k, r->d.x, false), r->d.xt, at);
}

/* Integer states: i64 and u32 as long long, u64 as unsigned long long,
 * narrower types (and bool) as int, which shuffles and compares them with
 * their values unchanged. */
static const char *int_state_type(DType t) {
    return t == DT_U64 ? "unsigned long long" : t == DT_I64 || t == DT_U32 ? "long long" : "int";
}
/* Whether t's state takes 64-bit literals. */
static bool int_state_wide(DType t) {
    return t == DT_I64 || t == DT_U32 || t == DT_U64;
}

static const char *int_lit(Cu *cu, int64_t x, bool i64) {
    if (!i64) return cu_str(cu, "(%d)", (int)x);
    if (x == INT64_MIN) return "(-9223372036854775807LL - 1)";
    return cu_str(cu, "(%lldLL)", (long long)x);
}

/* The identity of max (min) over integer or bool dtype t. */
static int64_t int_extreme(DType t, bool is_max) {
    switch (t) {
    case DT_BOOL: return is_max ? 0 : 1;
    case DT_U8: return is_max ? 0 : 255;
    case DT_I8: return is_max ? INT8_MIN : INT8_MAX;
    case DT_I16: return is_max ? INT16_MIN : INT16_MAX;
    case DT_I32: return is_max ? INT32_MIN : INT32_MAX;
    case DT_U16: return is_max ? 0 : UINT16_MAX;
    case DT_U32: return is_max ? 0 : UINT32_MAX;
    case DT_U64: return is_max ? 0 : -1; /* 2^64 - 1 in the unsigned state */
    default: return is_max ? INT64_MIN : INT64_MAX;
    }
}

/* The order-preserving key of a float's bit pattern b: b ^ ((b >> 31) &
 * 0x7fffffff) as a signed integer orders like the float (-0 below +0,
 * positive NaNs above +inf) and is its own inverse (the CPU's fmax_pass). */
static int64_t float_key(double x, bool dbl) {
    if (dbl) {
        int64_t b;
        memcpy(&b, &x, sizeof b);
        return b < 0 ? b ^ INT64_MAX : b;
    }
    float f = (float)x;
    int32_t b;
    memcpy(&b, &f, sizeof b);
    return b < 0 ? b ^ INT32_MAX : b;
}

static const char *key_of(CuKern *k, const char *b, bool dbl) {
    return dbl ? cu_str(k->cu, "(%s ^ ((%s >> 63) & 0x7fffffffffffffffLL))", b, b)
               : cu_str(k->cu, "(%s ^ ((%s >> 31) & 0x7fffffff))", b, b);
}

/* One pass: st starts at init, every element of the row joins it (step
 * gives the element's state from x converted to at), the group combines. */
typedef void (*StepFn)(CuRed *r, St *s, const char *x, const char *ctx, const char **elem);

static void step_plain(CuRed *r, St *s, const char *x, const char *ctx, const char **elem) {
    (void)r, (void)s, (void)ctx;
    elem[0] = x;
}
/* (x - mean)^2 */
static void step_sqdev(CuRed *r, St *s, const char *x, const char *ctx, const char **elem) {
    CuKern *k = &r->k;
    const char *d = cuk_tmp_c(k, s->ty[0], "%s - %s", x, ctx);
    elem[0] = cuk_tmp_c(k, s->ty[0], "%s", fmul(k, s->dbl, d, d));
}
static void step_sq(CuRed *r, St *s, const char *x, const char *ctx, const char **elem) {
    CuKern *k = &r->k;
    (void)ctx;
    elem[0] = cuk_tmp_c(k, s->ty[0], "%s", fmul(k, s->dbl, x, x));
}
/* exp(x - m) */
static void step_exp(CuRed *r, St *s, const char *x, const char *ctx, const char **elem) {
    elem[0] = cuk_tmp_c(&r->k, s->ty[0], "%s(%s - %s)", s->dbl ? "exp" : "expf", x, ctx);
}

static St run_pass(CuRed *r, DType at, Merge m, const char *init, StepFn step, const char *ctx) {
    bool fl = isf(at);
    St s = st_new(r, m, fl ? cu_ctype(at) : "long long", fl, at == DT_F64, init);
    open_reduced(r);
    const char *elem[2];
    step(r, &s, x_as(r, at), ctx, elem);
    st_merge(r, &s, elem);
    close_reduced(r);
    st_combine(r, &s);
    return s;
}

/* Sum (sum_mul: product) in at: f32/f64 or i64. */
static const char *sum_pass(CuRed *r, DType at, StepFn step, const char *ctx) {
    return run_pass(r, at, M_ADD, cu_const(r->k.cu, at, 0), step, ctx).var[0];
}

/* Max (min) of a float row in at (f32/f64) through integer keys, NaN
 * tracked apart and winning when nan_wins (amax, logsumexp), as the CPU. */
static const char *fmax_pass(CuRed *r, DType at, bool is_max, bool nan_wins) {
    CuKern *k = &r->k;
    bool dbl = at == DT_F64;
    const char *kt = dbl ? "long long" : "int";
    St s = st_new(r, is_max ? M_MAX : M_MIN, kt, false, dbl,
                  int_lit(k->cu, float_key(is_max ? -INFINITY : INFINITY, dbl), dbl));
    if (nan_wins) st_second(r, &s, "int", "0");
    open_reduced(r);
    const char *x = x_as(r, at);
    const char *b = cuk_tmp_c(k, kt, "%s(%s)", dbl ? "__double_as_longlong" : "__float_as_int", x);
    const char *elem[2] = {cuk_tmp_c(k, kt, "%s", key_of(k, b, dbl)), NULL};
    if (nan_wins) elem[1] = cuk_tmp_c(k, "int", "%s != %s", x, x);
    st_merge(r, &s, elem);
    close_reduced(r);
    st_combine(r, &s);
    const char *bits = cuk_tmp_c(k, kt, "%s", key_of(k, s.var[0], dbl));
    const char *res =
        cuk_tmp(k, at, "%s(%s)", dbl ? "__longlong_as_double" : "__int_as_float", bits);
    if (!nan_wins) return res;
    return cuk_tmp(k, at, "%s ? %s : %s", s.var[1], cu_const(k->cu, at, NAN), res);
}

/* Max (min) of an integer or bool row, in the input's dtype. */
static const char *imax_pass(CuRed *r, bool is_max) {
    CuKern *k = &r->k;
    DType t = r->d.xt;
    bool i64 = int_state_wide(t);
    Merge m = t == DT_BOOL ? (is_max ? M_OR : M_AND) : is_max ? M_MAX : M_MIN;
    St s =
        st_new(r, m, int_state_type(t), false, false, int_lit(k->cu, int_extreme(t, is_max), i64));
    open_reduced(r);
    const char *elem[1] = {cuk_tmp_c(k, s.ty[0], "(%s)(%s)", s.ty[0], x_as(r, t))};
    st_merge(r, &s, elem);
    close_reduced(r);
    st_combine(r, &s);
    return cuk_tmp(k, t, "(%s)(%s)", cu_ctype(t), s.var[0]);
}

/* argmax/argmin: the row-major index over the reduced dims of the first
 * extreme (NaN counting as the extreme), as an i64. */
static const char *arg_pass(CuRed *r, bool is_max) {
    CuKern *k = &r->k;
    DType t = r->d.xt;
    bool fl = isf(t);
    const char *vt = fl ? cu_ctype(t) : int_state_type(t);
    const char *init = fl ? cu_const(k->cu, float_acc(t), is_max ? -INFINITY : INFINITY)
                          : int_lit(k->cu, int_extreme(t, is_max), int_state_wide(t));
    /* The identity (extreme, 0) only wins when every element equals the
     * extreme, where the CPU's answer is index 0 too. */
    St s = st_new(r, is_max ? M_ARGMAX : M_ARGMIN, vt, fl, t == DT_F64, init);
    st_second(r, &s, "long long", "0");
    open_reduced(r);
    const char *x = cu_expr(k, r->d.x, false);
    const char *elem[2] = {fl ? x : cuk_tmp_c(k, vt, "(%s)(%s)", vt, x),
                           cuk_tmp_c(k, "long long", "(long long)(%s)", cuk_offset(k, &r->d.lin))};
    st_merge(r, &s, elem);
    close_reduced(r);
    st_combine(r, &s);
    return s.var[1];
}

/* The statements under "only the row's first thread, of a live row". */
static void open_leader(CuRed *r) {
    CuKern *k = &r->k;
    const char *live = r->rpb > 1 ? "live" : NULL, *lead = r->g > 1 ? "lane == 0" : NULL;
    if (!live && !lead) {
        cuk_emit(k, "{");
    } else {
        cuk_emit(k, "if (%s%s%s) {", live ? live : "", live && lead ? " && " : "",
                 lead ? lead : "");
    }
    k->indent++;
}

static void close_block(CuKern *k) {
    k->indent--;
    cuk_emit(k, "}");
}

static void red_finish(CuRed *r) {
    int64_t grid = (r->rows + r->rpb - 1) / r->rpb;
    if (grid > MAX_GRID) grid = MAX_GRID;
    cuk_finish(&r->k, grid, r->block, 0);
}

static const char *fdiv_const(CuKern *k, DType at, const char *x, double c) {
    return cuk_tmp(k, at, "%s / %s", x, cu_const(k->cu, at, c));
}

void cu_k_reduce(Cu *cu, const Value *v) {
    CuRed r;
    red_setup(cu, &r, v, false);
    CuKern *k = &r.k;
    DType out = kd_dt(cu->p, v), res_t = out;
    const char *res = NULL;
    open_rows(&r);
    switch (v->op) {
    case OP_SUM:
    case OP_PROD: {
        DType at = isf(out) ? float_acc(out) : DT_I64;
        bool sum = v->op == OP_SUM;
        res = run_pass(&r, at, sum ? M_ADD : M_MUL, cu_const(cu, at, sum ? 0 : 1), step_plain, NULL)
                  .var[0];
        res_t = at;
        break;
    }
    case OP_MEAN: {
        DType at = float_acc(out);
        res = fdiv_const(k, at, sum_pass(&r, at, step_plain, NULL), (double)r.d.count);
        res_t = at;
        break;
    }
    case OP_AMAX:
    case OP_AMIN: {
        bool is_max = v->op == OP_AMAX;
        if (isf(r.d.xt)) {
            /* f16/bf16 values are exact in f32: the max is the same. */
            DType at = float_acc(r.d.xt);
            res = fmax_pass(&r, at, is_max, true);
            res_t = at;
        } else {
            res = imax_pass(&r, is_max);
            res_t = r.d.xt;
        }
        break;
    }
    case OP_ARGMAX:
    case OP_ARGMIN:
        res = arg_pass(&r, v->op == OP_ARGMAX);
        res_t = DT_I64;
        break;
    case OP_VAR:
    case OP_STD: {
        DType at = float_acc(out);
        const char *mean = fdiv_const(k, at, sum_pass(&r, at, step_plain, NULL), (double)r.d.count);
        const char *ss = sum_pass(&r, at, step_sqdev, mean);
        int64_t corr = v->args[2].kind == ARG_INT ? v->args[2].i : 1;
        double dof = (double)r.d.count - (double)corr;
        if (dof < 0) dof = 0;
        res = fdiv_const(k, at, ss, dof);
        if (v->op == OP_STD) res = cuk_tmp(k, at, "%s(%s)", at == DT_F64 ? "sqrt" : "sqrtf", res);
        res_t = at;
        break;
    }
    case OP_LOGSUMEXP: {
        DType at = float_acc(out);
        bool dbl = at == DT_F64;
        const char *m = fmax_pass(&r, at, true, true);
        /* An infinite max would make inf - inf: shift by 0 instead. */
        m = cuk_tmp(k, at, "%s(%s) == %s ? %s : %s", dbl ? "fabs" : "fabsf", m,
                    cu_const(cu, at, INFINITY), cu_const(cu, at, 0), m);
        const char *s = sum_pass(&r, at, step_exp, m);
        res = cuk_tmp(k, at, "%s(%s) + %s", dbl ? "log" : "logf", s, m);
        res_t = at;
        break;
    }
    case OP_ALL:
    case OP_ANY: {
        bool all = v->op == OP_ALL;
        St s = st_new(&r, all ? M_AND : M_OR, "int", false, false, all ? "1" : "0");
        open_reduced(&r);
        const char *elem[1] = {cuk_tmp_c(k, "int", "%s ? 1 : 0", x_as(&r, DT_BOOL))};
        st_merge(&r, &s, elem);
        close_reduced(&r);
        st_combine(&r, &s);
        res = cuk_tmp(k, DT_BOOL, "%s != 0", s.var[0]);
        res_t = DT_BOOL;
        break;
    }
    default: cu_fail(cu, "internal: '%s' is not a reduction", op_display_name(v)); return;
    }
    open_leader(&r);
    cuk_store(k, &r.d.dst, res, res_t);
    close_block(k);
    close_rows(&r);
    red_finish(&r);
}

void cu_k_norm(Cu *cu, const Value *v) {
    CuRed r;
    red_setup(cu, &r, v, true);
    CuKern *k = &r.k;
    DType out = kd_dt(cu->p, v);
    DType at = float_acc(out == DT_F64 || r.d.xt == DT_F64 ? DT_F64 : DT_F32);
    bool dbl = at == DT_F64;
    const char *sqrt_fn = dbl ? "sqrt" : "sqrtf";
    open_rows(&r);
    const char *a = NULL, *c = NULL; /* out = f(x) per op, from a and c */
    double eps = 0;
    switch (v->op) {
    case OP_SOFTMAX:
    case OP_LOG_SOFTMAX: {
        const char *m = fmax_pass(&r, at, true, false);
        const char *s = sum_pass(&r, at, step_exp, m);
        a = m;
        c = v->op == OP_SOFTMAX ? cuk_tmp(k, at, "%s / %s", cu_const(cu, at, 1), s)
                                : cuk_tmp(k, at, "%s(%s)", dbl ? "log" : "logf", s);
        break;
    }
    case OP_LAYER_NORM: {
        eps = v->args[4].kind == ARG_NUM ? v->args[4].f : 1e-5;
        const char *mean = fdiv_const(k, at, sum_pass(&r, at, step_plain, NULL), (double)r.d.count);
        const char *ss = sum_pass(&r, at, step_sqdev, mean);
        const char *var = fdiv_const(k, at, ss, (double)r.d.count);
        a = mean;
        c = cuk_tmp(k, at, "%s / %s(%s + %s)", cu_const(cu, at, 1), sqrt_fn, var,
                    cu_const(cu, at, eps));
        break;
    }
    case OP_RMS_NORM: {
        eps = v->args[2].kind == ARG_NUM ? v->args[2].f : 1e-6;
        const char *ss = sum_pass(&r, at, step_sq, NULL);
        const char *ms = fdiv_const(k, at, ss, (double)r.d.count);
        c = cuk_tmp(k, at, "%s / %s(%s + %s)", cu_const(cu, at, 1), sqrt_fn, ms,
                    cu_const(cu, at, eps));
        break;
    }
    default: cu_fail(cu, "internal: '%s' is not a normalisation", op_display_name(v)); return;
    }
    /* The last pass writes every element of the row. */
    open_reduced(&r);
    const char *x = x_as(&r, at), *y;
    switch (v->op) {
    case OP_SOFTMAX:
        y = cuk_tmp(k, at, "%s",
                    fmul(k, dbl, cu_str(cu, "%s(%s - %s)", dbl ? "exp" : "expf", x, a), c));
        break;
    case OP_LOG_SOFTMAX: y = cuk_tmp(k, at, "(%s - %s) - %s", x, a, c); break;
    case OP_LAYER_NORM:
        y = cuk_tmp(k, at, "%s", fmul(k, dbl, cu_str(cu, "(%s - %s)", x, a), c));
        break;
    default: y = cuk_tmp(k, at, "%s", fmul(k, dbl, x, c)); break;
    }
    /* Weight, then bias (layer_norm's args 2 and 3; rms_norm's weight). */
    for (int i = 0; i < r.d.naux; i++) {
        const char *w = cu_convert(k, cuk_load(k, &r.d.aux[i]), r.d.aux[i].dt, at);
        y = r.d.aux_is_bias[i] ? cuk_tmp(k, at, "%s + %s", y, w)
                               : cuk_tmp(k, at, "%s", fmul(k, dbl, y, w));
    }
    cuk_store(k, &r.d.dst, y, at);
    close_reduced(&r);
    close_rows(&r);
    red_finish(&r);
}
