/* Reductions over leading dims ("column sums": a bias gradient is the sum
 * over the batch of a [batch, n] gradient). k_reduce walks kept dims
 * outside and reduced ones inside, which reads such an input with a stride
 * of a whole row per element. When kd_reduction_by_columns says the input
 * is contiguous along the innermost kept loop (`col`), this kernel walks
 * the reduced loops outside instead and accumulates a block of outputs at
 * once, in a stack row that stays in L1:
 *
 *   x [O..., R..., E] (O: outer kept loops, R: reduced, E: loop col)
 *   for each task t = (o, block b of at most `block` columns c0 + j):
 *     acc[j] = init                                  j < n
 *     for r in R (the innermost reduced loop 4 rows at a time):
 *       acc[j] = step(acc[j], x[o, r, c0 + j])       j < n, vectorised
 *     out[o, c0 + j] = finish(acc[j])
 *
 * Each lane is its own output, so the inner loops vectorise without
 * reassociating anything (no fast-math) and every output is summed over
 * its rows in order (the row kernel keeps a vector of partial sums
 * instead: the last bits may differ between the two). The pool splits the
 * tasks; a large reduction over few outer kept rows is cut into column
 * blocks so both threads get work. Accumulator types are k_reduce's: f32
 * for f16/bf16, f64 for f64, i64 for integer sums. The input's elementwise
 * producers are computed in the inner loop (cg_expr at the loops' indices). */
#include <string.h>

#include "codegen/llvm/cg.h"

#define B (cg->b)

/* Block widths. Wide blocks read long runs of each row: on the Zen 4 of
 * docs/performance.md (loaded by other work), one thread summed
 * [1024, 1024] + [1024, 768] + [1024, 256] f32 over dim 0 in 125 us with
 * whole rows, 155 us with blocks of 512 and 150 to 170 us with blocks of
 * 128 to 256. So a block is as wide as an accumulator row of
 * COLS_ACC_BYTES allows, and is narrowed for the pool only down to
 * COLS_MIN_BLOCK columns. */
enum {
    COLS_UNROLL = 4,        /* reduced rows per load and store of acc[j] */
    COLS_ACC_BYTES = 16384, /* the accumulator row: half of L1 */
    COLS_MIN_BLOCK = 512,   /* columns per task when splitting */
    COLS_TASKS = 4,         /* tasks wanted from a reduction worth splitting */
    COLS_ALIGN = 16,        /* block widths: whole vectors of every type */
};
/* Elements from which a reduction is split into tasks: below it the pool's
 * dispatch costs about what the second thread saves. */
#define COLS_SPLIT_WORK (4 * 32768)

/* A counted loop [lo, hi), step 1; the builder is in its body after
 * cl_open and after its exit after cl_close. */
typedef struct CLoop {
    LLVMBasicBlockRef header, exit;
    LLVMValueRef phi;
} CLoop;

static LLVMValueRef cl_open(Kern *k, CLoop *l, LLVMValueRef lo, LLVMValueRef hi) {
    Cg *cg = k->cg;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
    l->header = LLVMAppendBasicBlockInContext(cg->ctx, k->fn, "cloop");
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(cg->ctx, k->fn, "cbody");
    l->exit = LLVMAppendBasicBlockInContext(cg->ctx, k->fn, "cdone");
    LLVMBuildBr(B, l->header);
    LLVMPositionBuilderAtEnd(B, l->header);
    l->phi = LLVMBuildPhi(B, cg->t_i64, "c");
    LLVMAddIncoming(l->phi, &lo, &pre, 1);
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, l->phi, hi, ""), body, l->exit);
    LLVMPositionBuilderAtEnd(B, body);
    return l->phi;
}

static void cl_close(Kern *k, CLoop *l, bool vectorize) {
    Cg *cg = k->cg;
    LLVMBasicBlockRef cur = LLVMGetInsertBlock(B);
    LLVMValueRef next = LLVMBuildAdd(B, l->phi, cg_const_i64(cg, 1), "");
    LLVMValueRef br = LLVMBuildBr(B, l->header);
    if (vectorize) kern_hint_vectorize(cg, br);
    LLVMAddIncoming(l->phi, &next, &cur, 1);
    LLVMPositionBuilderAtEnd(B, l->exit);
}

typedef struct Cols {
    Kern k;
    KReduce d;
    const Value *v;
    int col;          /* the kept loop walked innermost */
    DType at, out;    /* accumulator and output dtypes */
    LLVMTypeRef acct; /* the accumulator's LLVM type */
    LLVMValueRef acc; /* [block x acct] in the entry block */
    int64_t block;    /* columns per task */
    LLVMValueRef c0;  /* the task's first column */
    LLVMValueRef n;   /* and its number of columns */
} Cols;

static bool isf(DType t) {
    return dtype_is_float(t);
}

/* k_reduce's accumulator types. */
static DType acc_dtype(const Value *v, DType out, DType xt) {
    switch (v->op) {
    case OP_SUM:
    case OP_PROD: return isf(out) ? (out == DT_F64 ? DT_F64 : DT_F32) : DT_I64;
    case OP_MEAN: return out == DT_F64 ? DT_F64 : DT_F32;
    case OP_AMAX:
    case OP_AMIN: return isf(xt) ? (xt == DT_F64 ? DT_F64 : DT_F32) : xt;
    default: return DT_BOOL; /* all, any */
    }
}

static LLVMValueRef init_of(Cg *cg, const Cols *c) {
    switch (c->v->op) {
    case OP_SUM:
    case OP_MEAN: return cg_const(cg, c->at, 0);
    case OP_PROD: return cg_const(cg, c->at, 1);
    case OP_AMAX:
    case OP_AMIN: return cg_red_extreme(cg, c->at, c->v->op == OP_AMAX);
    default: return LLVMConstInt(cg->t_i1, c->v->op == OP_ALL, false);
    }
}

static LLVMValueRef step(Cg *cg, const Cols *c, LLVMValueRef a, LLVMValueRef x) {
    bool fl = isf(c->at);
    switch (c->v->op) {
    case OP_SUM:
    case OP_MEAN: return fl ? LLVMBuildFAdd(B, a, x, "") : LLVMBuildAdd(B, a, x, "");
    case OP_PROD: return fl ? LLVMBuildFMul(B, a, x, "") : LLVMBuildMul(B, a, x, "");
    case OP_ALL: return LLVMBuildAnd(B, a, x, "");
    case OP_ANY: return LLVMBuildOr(B, a, x, "");
    default: break;
    }
    bool is_max = c->v->op == OP_AMAX;
    if (c->at == DT_BOOL) return is_max ? LLVMBuildOr(B, a, x, "") : LLVMBuildAnd(B, a, x, "");
    LLVMValueRef keep;
    if (fl) {
        /* NaN wins and then stays (PyTorch's amax propagates NaN): keep
         * a when it is NaN or ordered at least as far as x. */
        keep = LLVMBuildFCmp(B, is_max ? LLVMRealOGE : LLVMRealOLE, a, x, "");
        keep = LLVMBuildOr(B, keep, LLVMBuildFCmp(B, LLVMRealUNO, a, a, ""), "");
    } else {
        bool u = dt_unsigned(c->at);
        keep = LLVMBuildICmp(
            B, is_max ? (u ? LLVMIntUGE : LLVMIntSGE) : (u ? LLVMIntULE : LLVMIntSLE), a, x, "");
    }
    return LLVMBuildSelect(B, keep, a, x, "");
}

static LLVMValueRef acc_at(Cg *cg, Cols *c, LLVMValueRef j) {
    LLVMValueRef ix[2] = {cg_const_i64(cg, 0), j};
    return LLVMBuildInBoundsGEP2(B, LLVMArrayType(c->acct, (unsigned)c->block), c->acc, ix, 2, "");
}

/* Opens the loop over the task's columns and points loop col at c0 + j. */
static LLVMValueRef cols_open(Cg *cg, Cols *c, CLoop *l) {
    LLVMValueRef j = cl_open(&c->k, l, cg_const_i64(cg, 0), c->n);
    c->k.idx[c->col] = LLVMBuildAdd(B, c->c0, j, "");
    return j;
}

static void cols_close(Cols *c, CLoop *l) {
    c->k.idx[c->col] = NULL;
    cl_close(&c->k, l, true);
}

/* Rows [row, row + rows) of the innermost reduced loop (last) folded into
 * acc, at the outer reduced loops' current indices. */
static void accumulate(Cg *cg, Cols *c, int last, LLVMValueRef row, int rows) {
    Kern *k = &c->k;
    CLoop jl;
    LLVMValueRef slot = acc_at(cg, c, cols_open(cg, c, &jl));
    LLVMValueRef a = LLVMBuildLoad2(B, c->acct, slot, "");
    for (int u = 0; u < rows; u++) {
        k->idx[last] = LLVMBuildAdd(B, row, cg_const_i64(cg, u), "");
        LLVMValueRef x = cg_convert(cg, cg_expr(k, c->d.x, false), c->d.xt, c->at);
        a = step(cg, c, a, x);
    }
    k->idx[last] = NULL;
    LLVMBuildStore(B, a, slot);
    cols_close(c, &jl);
}

/* The reduced loops from l inwards; the innermost one COLS_UNROLL rows at
 * a time, then its remainder. */
static void reduce_loops(Cg *cg, Cols *c, int l) {
    Kern *k = &c->k;
    const KSpace *sp = &k->sp;
    int64_t ext = sp->ext[l];
    if (l < sp->nloops - 1) {
        CLoop ol;
        k->idx[l] = cl_open(k, &ol, cg_const_i64(cg, 0), cg_const_i64(cg, ext));
        reduce_loops(cg, c, l + 1);
        k->idx[l] = NULL;
        cl_close(k, &ol, false);
        return;
    }
    int64_t whole = ext / COLS_UNROLL * COLS_UNROLL;
    if (whole) {
        CLoop rl;
        LLVMValueRef i =
            cl_open(k, &rl, cg_const_i64(cg, 0), cg_const_i64(cg, whole / COLS_UNROLL));
        accumulate(cg, c, l, LLVMBuildMul(B, i, cg_const_i64(cg, COLS_UNROLL), ""), COLS_UNROLL);
        cl_close(k, &rl, false);
    }
    if (whole < ext) {
        CLoop rl;
        LLVMValueRef i = cl_open(k, &rl, cg_const_i64(cg, whole), cg_const_i64(cg, ext));
        accumulate(cg, c, l, i, 1);
        cl_close(k, &rl, false);
    }
}

static int64_t round_up(int64_t x, int64_t m) {
    return (x + m - 1) / m * m;
}

bool k_reduce_cols(Cg *cg, const Value *v) {
    switch (v->op) {
    case OP_SUM:
    case OP_MEAN:
    case OP_PROD:
    case OP_AMAX:
    case OP_AMIN:
    case OP_ALL:
    case OP_ANY: break;
    default: return false; /* argmax's index and the multi-pass ops: k_reduce */
    }
    Cols c;
    memset(&c, 0, sizeof c);
    kd_reduction(cg->p, v, false, &c.d);
    if (!kd_reduction_by_columns(cg->p, &c.d)) return false;
    const KSpace *sp = &c.d.space;
    c.v = v;
    c.col = sp->nkept - 1;
    c.out = cg_dt(cg, v);
    c.at = acc_dtype(v, c.out, c.d.xt);
    c.acct = cg_ctype(cg, c.at);
    int64_t cols = sp->ext[c.col], outer = 1, rows = 1;
    for (int l = 0; l < c.col; l++)
        outer *= sp->ext[l];
    for (int l = sp->nkept; l < sp->nloops; l++)
        rows *= sp->ext[l];
    double total = (double)outer * (double)cols * (double)rows;
    bool single = total <= KERN_SINGLE_CHUNK_WORK;
    /* Blocks of columns: whole rows when the kernel is one chunk (constant
     * trip counts), else at most an accumulator row of COLS_ACC_BYTES,
     * and narrower (not below COLS_MIN_BLOCK) when there are too few tasks
     * to share. Equal widths, rounded up to whole vectors. */
    int64_t block = cols;
    if (!single) {
        int64_t max_block = COLS_ACC_BYTES / (int64_t)dtype_size(c.at);
        if (block > max_block) block = max_block;
        if (total >= COLS_SPLIT_WORK && outer < COLS_TASKS) {
            int64_t per = (COLS_TASKS + outer - 1) / outer; /* blocks per outer row */
            int64_t want = (cols + per - 1) / per;
            if (want < COLS_MIN_BLOCK) want = COLS_MIN_BLOCK;
            if (want < block) block = want;
        }
        int64_t nblk = (cols + block - 1) / block;
        block = round_up((cols + nblk - 1) / nblk, COLS_ALIGN);
        if (block > cols) block = cols;
    }
    int64_t nblk = (cols + block - 1) / block, ntasks = outer * nblk;

    Kern *k = &c.k;
    kern_begin(cg, k, op_display_name(v));
    k->root = v;
    k->sp = *sp;
    k->single_chunk = single;
    c.block = block;
    c.acc = kern_alloca(k, LLVMArrayType(c.acct, (unsigned)block));
    CLoop tl;
    LLVMValueRef t = cl_open(k, &tl, single ? cg_const_i64(cg, 0) : k->begin,
                             single ? cg_const_i64(cg, ntasks) : k->end);
    /* Task t: outer kept rows o = t / nblk (unflattened into loops [0, col)),
     * columns from c0 = (t % nblk) * block. */
    LLVMValueRef o = t, b = cg_const_i64(cg, 0);
    if (nblk > 1) {
        LLVMValueRef nb = cg_const_i64(cg, nblk);
        o = LLVMBuildUDiv(B, t, nb, "");
        b = LLVMBuildURem(B, t, nb, "");
    }
    for (int l = c.col - 1; l >= 0; l--) {
        LLVMValueRef e = cg_const_i64(cg, sp->ext[l]);
        k->idx[l] = l ? LLVMBuildURem(B, o, e, "") : o;
        if (l) o = LLVMBuildUDiv(B, o, e, "");
    }
    c.c0 = LLVMBuildMul(B, b, cg_const_i64(cg, block), "");
    if (nblk > 1) {
        LLVMValueRef left = LLVMBuildSub(B, cg_const_i64(cg, cols), c.c0, "");
        LLVMValueRef full = cg_const_i64(cg, block);
        c.n = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, left, full, ""), left, full, "");
    } else {
        c.n = cg_const_i64(cg, cols);
    }

    CLoop jl;
    LLVMValueRef j = cols_open(cg, &c, &jl);
    LLVMBuildStore(B, init_of(cg, &c), acc_at(cg, &c, j));
    cols_close(&c, &jl);

    reduce_loops(cg, &c, sp->nkept);

    j = cols_open(cg, &c, &jl);
    LLVMValueRef res = LLVMBuildLoad2(B, c.acct, acc_at(cg, &c, j), "");
    if (v->op == OP_MEAN) res = LLVMBuildFDiv(B, res, cg_const(cg, c.at, (double)c.d.count), "");
    cg_store(k, kern_ptr(k, &c.d.dst), cg_convert(cg, res, c.at, c.out), c.out);
    cols_close(&c, &jl);

    for (int l = 0; l < c.col; l++)
        k->idx[l] = NULL;
    cl_close(k, &tl, false);
    kern_end_n(k, ntasks, block * rows * 2);
    return true;
}
