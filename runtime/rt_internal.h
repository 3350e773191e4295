/* Helpers shared by the runtime's own sources (program.c, init.c,
 * exe_main.c, print.c, matmul.c, convert.c); not part of the public
 * interface, not installed, not included by generated code. */
#ifndef TGCRT_INTERNAL_H
#define TGCRT_INTERNAL_H
#include <string.h> /* memcpy: rt_load_int */

#include "tgcrt.h"

/* Output `out` of a training program is an update that its kernel writes
 * straight over its param (RtTrainDesc.in_place): the output's buffer is
 * the param's, and tgc report counts no buffer of its own for it. */
static inline bool rt_output_in_place(const RtProgram *p, int out) {
    return p->train && p->train->in_place && p->train->in_place[out] &&
           p->train->update_of[out] >= 0;
}

static inline bool rt_dtype_is_float(RtDType t) {
    return t == RT_F16 || t == RT_BF16 || t == RT_F32 || t == RT_F64;
}

/* ---- files written together (safetensors*.c, train.c) ----
 *
 * A training run's --save-weights and --save-state files carry the same
 * mark in their __metadata__ (RT_ST_PAIR_KEY: a hash of every param and
 * state when they were saved), so that a pair whose halves come from
 * different moments (a save killed between its two renames) is refused
 * when loaded together instead of resuming from a mix. */
#define RT_ST_PAIR_KEY "tgc.pair"
struct RtAtomicFile;
/* rt_st_write's two halves: the whole file written to a temporary (af,
 * which the caller provides) with `pair` (NULL: none) in its metadata,
 * and then renamed over path. After a failed begin af holds nothing; a
 * begun file that will not be committed is dropped with rt_afile_abort. */
RtStatus rt_st_write_begin(struct RtAtomicFile *af, const char *path, const RtStTensorOut *t,
                           size_t n, const char *pair, RtError *err);
RtStatus rt_st_write_commit(struct RtAtomicFile *af, RtError *err);
/* The file's pair mark, or NULL. */
const char *rt_st_pair(const RtSafetensors *st);
/* Where reading may go up to: a mapped file's last page is readable to its
 * end (zeros past the file), a buffer only to its length (safetensors.c). */
const char *rt_st_readable_end(const RtSafetensors *st);
/* Drops this process's pages lying wholly inside [p, p + n) of a mapped
 * file (read again from the file if read); nothing for a buffer. */
void rt_st_release(const RtSafetensors *st, const void *p, size_t n);
/* Writes a training context's weights to wpath and its optimizer state to
 * spath (train.c), both with one pair mark: both temporaries first, then
 * the renames (weights, then state), so that only a kill between the two
 * renames can leave a new weights file beside an old state, and loading
 * that pair together is refused. */
RtStatus rt_train_save_pair(RtContext *c, const char *wpath, const char *spath);

/* One f32, f16 or bf16 element at p as a float, and a float stored at p
 * rounded to nearest even (16-bit patterns for f16/bf16): the half-width
 * kernels' element access (attention.c, qmatmul.c). t is one of the three;
 * inline, since their inner loops call it. */
static inline float rt_load_f(const char *p, RtDType t) {
    uint16_t h;
    float f;
    switch (t) {
    case RT_F32: memcpy(&f, p, 4); return f;
    case RT_F16: memcpy(&h, p, 2); return rt_f16_to_f32(h);
    default: memcpy(&h, p, 2); return rt_bf16_to_f32(h);
    }
}
static inline void rt_store_f(char *p, RtDType t, float f) {
    uint16_t h;
    switch (t) {
    case RT_F32: memcpy(p, &f, 4); return;
    case RT_F16: h = rt_f32_to_f16(f); break;
    default: h = rt_f32_to_bf16(f); break;
    }
    memcpy(p, &h, 2);
}
/* Steps idx, an index over n batch dimensions of sizes dims (the last
 * fastest), to the next one, moving each of three operands' element
 * offsets off[o] by its batch strides strides[o]; false (offsets back at
 * 0) after the last. The loop of rt_matmul and of a CUDA product's
 * host-looped batch dimensions. */
static inline bool rt_batch_next(int n, const int64_t *dims, const int64_t *const strides[3],
                                 int64_t *idx, int64_t off[3]) {
    for (int j = n - 1; j >= 0; j--) {
        for (int o = 0; o < 3; o++)
            off[o] += strides[o][j];
        if (++idx[j] < dims[j]) return true;
        for (int o = 0; o < 3; o++)
            off[o] -= strides[o][j] * dims[j];
        idx[j] = 0;
    }
    return false;
}
/* rt_load_float: declared in tgcrt_abi.h. Element i of an integer or bool
 * array (u8, i8, i16, i32, i64, bool) as an int64, exact; inline, since
 * the integer matrix product's inner loop calls it. */
static inline int64_t rt_load_int(const void *p, RtDType t, size_t i) {
    const char *b = (const char *)p;
    int16_t v16;
    int32_t v32;
    int64_t v64;
    switch (t) {
    case RT_I8: return ((const int8_t *)p)[i];
    case RT_I16: memcpy(&v16, b + i * 2, 2); return v16;
    case RT_I32: memcpy(&v32, b + i * 4, 4); return v32;
    case RT_I64:
    case RT_U64: memcpy(&v64, b + i * 8, 8); return v64; /* u64: its bits */
    case RT_U16: return ((const uint16_t *)p)[i];
    case RT_U32: return ((const uint32_t *)p)[i];
    default: return ((const uint8_t *)p)[i]; /* u8, bool */
    }
}
/* Stores v as element i of a floating array: f64 exactly, f32 rounded,
 * f16/bf16 through f32 (as torch converts a double). */
void rt_store_float(void *p, RtDType t, size_t i, double v);
/* Converts n elements between floating dtypes (any direction; the same
 * dtype copies). Rounds to nearest even; f64 -> f16/bf16 goes through f32,
 * as torch's .to() does. */
void rt_convert_float(const void *src, RtDType st, void *dst, RtDType dt, size_t n);
/* rt_convert_float over the pool, in chunks (large tensors). */
void rt_convert_float_par(RtPool *pool, const void *src, RtDType st, void *dst, RtDType dt,
                          size_t n);

/* The deterministic generators (init.c, docs/runtime.md "Initialisers"). */
enum { RT_FILL_RANDOM_INPUT = 100 }; /* --random-inputs: randn / [0, 10) / 0-1 */
/* Fills elements [0, numel) of dst (dtype dt) with initialiser `kind`
 * (an RtInitKind or RT_FILL_RANDOM_INPUT) for tensor `name`, on the pool. */
/* rt_fill: declared in tgcrt_abi.h. */
/* The AVX-512 BF16 GEMM (matmul_bf16.c): C (+)= A @ B on bf16 operands,
 * f32 accumulation, C in ct (bf16 or f32) rounded once; false when the CPU
 * lacks AVX-512 BF16 or memory is short (the caller falls back). */
bool rt_matmul_bf16(int64_t m, int64_t n, int64_t k, const uint16_t *a, int64_t a_rs, int64_t a_cs,
                    const uint16_t *b, int64_t b_rs, int64_t b_cs, void *c, RtDType ct,
                    int64_t c_rs, int64_t c_cs, bool acc, RtPool *pool);
/* f16/bf16 C (+)= A @ B with few rows or columns on AVX2 + FMA (+ F16C),
 * reading B in place (matmul_half_gemv.c); false when the CPU, the shape
 * or B's layout does not suit it, or memory is short (the caller widens). */
bool rt_matmul_half_gemv(RtDType t, int64_t m, int64_t n, int64_t k, const uint16_t *a,
                         int64_t a_rs, int64_t a_cs, const uint16_t *b, int64_t b_rs, int64_t b_cs,
                         uint16_t *c, int64_t c_rs, int64_t c_cs, bool acc, RtPool *pool);
/* n contiguous f16/bf16 elements widened to f32, or n f32 rounded to
 * f16/bf16 (nearest even, NaN as rt_f32_to_f16/bf16 give it), 8 at a time
 * on AVX2 (+ F16C for f16) (matmul_half_gemv.c); false when the CPU lacks
 * them (the caller converts one by one). */
bool rt_half_widen_row(float *dst, const uint16_t *src, int64_t n, bool f16);
bool rt_half_narrow_row(uint16_t *dst, const float *src, int64_t n, bool f16);

/* ---- one threading runtime (threadpool.c, matmul.c, matmul_dnnl.c) ----
 *
 * OpenBLAS is kept single-threaded for the whole process (called once, by
 * every pool's creation): its own pthreads would be a second set of
 * threads beside OpenMP's. Parallel products come from oneDNN or from
 * splitting a product over the pool (docs/runtime.md "Threads"). */
void rt_blas_single_thread(void);
/* cblas_sgemm (row-major; ta/tb: the operand is stored transposed; acc:
 * beta 1, else 0) split over the pool's threads when big enough
 * (matmul.c); m, n, k <= INT_MAX. */
void rt_sgemm_par(RtPool *pool, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
                  int lda, const float *b, int ldb, bool acc, float *c, int ldc);

/* The executables' threading settings, run from .preinit_array
 * (exe_omp.c); referenced by rt_main to link them in. */
void rt_exe_omp_preinit(int argc, char **argv, char **envp);

/* f32 products through oneDNN's matmul primitive, kept per pool (one per
 * context) and freed with it. */
typedef struct RtMmCache RtMmCache;
#define RT_MM_DNNL_MAX_DIMS 4 /* two batch dimensions and the matrix */
/* An operand: element (0, ...) and per dimension (batch dims first, then
 * rows and columns) its size and element stride; stride 0 in a batch
 * dimension broadcasts it (A, B only). */
typedef struct RtMmOperand {
    const void *p;
    int64_t dims[RT_MM_DNNL_MAX_DIMS], strides[RT_MM_DNNL_MAX_DIMS];
} RtMmOperand;
/* C (+= when acc) = A @ B for ops {A, B, C} of nd dimensions through the
 * pool's cached primitive for that shape; false (C untouched) when oneDNN
 * has no fast kernel for it, or no pool. */
bool rt_matmul_dnnl(RtPool *pool, int nd, bool acc, const RtMmOperand ops[3]);
/* The pool's cache slot, locked (a context's products may come from more
 * than one thread), and its unlock; rt_pool_destroy frees a cache in the
 * slot with free_fn. */
RtMmCache **rt_pool_mm_lock(RtPool *p, void (*free_fn)(RtMmCache *));
void rt_pool_mm_unlock(RtPool *p);
#endif
