/* libtgcrt's ABI: what code that tgc generates calls and fills in, and what
 * the compiler asks the runtime at build time (scratch sizes).
 *
 * The kernels (an LLVM object) and the C glue of a compiled program see
 * only this: status codes, dtypes and tensor descriptors, the thread pool
 * they run on, the program descriptor the glue fills (RtProgram and what it
 * points at), and the entry points of the kernels the runtime implements
 * (matrix products, convolutions, quantized products, attention) with their
 * descriptors, laid out as generated code emits them. The compiler
 * (codegen/, passes/) includes only this header (and tgcrt_cuda.h for CUDA
 * programs); programs that embed a compiled graph include tgcrt.h, the
 * public API, which includes this one. */
#ifndef TGCRT_ABI_H
#define TGCRT_ABI_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define RT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define RT_PRINTF(f, a)
#endif

/* ---- status codes and messages (error.c) ---- */

typedef enum RtStatus {
    TGCRT_OK = 0,
    TGCRT_ERR_IO,       /* a file could not be opened, read or written */
    TGCRT_ERR_FORMAT,   /* a file is malformed (bad header, truncated...) */
    TGCRT_ERR_SHAPE,    /* a shape differs from the declared one */
    TGCRT_ERR_DTYPE,    /* an unknown dtype, or one that differs from the declared one */
    TGCRT_ERR_MISSING,  /* a named tensor is not there */
    TGCRT_ERR_NOMEM,    /* an allocation failed */
    TGCRT_ERR_ARG,      /* a runtime function was called wrongly (a bug in the caller) */
    TGCRT_ERR_INTERNAL, /* an invariant of the runtime broke (a bug in the runtime) */
    TGCRT_ERR_VALUE,    /* input data out of range (an index tensor's value) */
    TGCRT_ERR_DEVICE,   /* no usable GPU: no CUDA driver, no device, no code for it */
    TGCRT_STATUS_COUNT,
} RtStatus;

#define RT_ERROR_MSG_MAX 1024

/* One per context (or per call site): the last error's code and message. */
typedef struct RtError {
    RtStatus status;
    char msg[RT_ERROR_MSG_MAX];
} RtError;

void rt_error_clear(RtError *e);
/* Records status and a printf-style message in e (when e is not NULL) and
 * returns status, so that `return rt_error_set(e, ...)` reads well. */
RtStatus rt_error_set(RtError *e, RtStatus status, const char *fmt, ...) RT_PRINTF(3, 4);
const char *rt_status_name(RtStatus s); /* "ok", "io", "format", ... */
/* The exit code the command-line contract gives a status: 0 ok, 1 the
 * user's input is wrong (including out of memory for it), 3 a bug. */
int rt_status_exit_code(RtStatus s);

/* ---- element types and tensor descriptors (dtype.c) ---- */

/* Same order and names as the compiler's dtypes (ir/dtype.h). */
typedef enum RtDType {
    RT_BOOL,
    RT_U8,
    RT_I8,
    RT_I16,
    RT_I32,
    RT_I64,
    RT_F16,
    RT_BF16,
    RT_F32,
    RT_F64,
    RT_U16,
    RT_U32,
    RT_U64,
    RT_DTYPE_COUNT,
    RT_DTYPE_NONE = -1,
} RtDType;

/* numpy's NPY_MAXDIMS: every array numpy can write fits. */
#define RT_MAX_DIMS 32

/* A dense, C-ordered tensor's type: dtype and shape. */
typedef struct RtDesc {
    RtDType dtype;
    int ndim;
    int64_t shape[RT_MAX_DIMS];
} RtDesc;

const char *rt_dtype_name(RtDType t);         /* "f32", "bf16", ...; "none" if invalid */
size_t rt_dtype_size(RtDType t);              /* bytes per element; 0 if invalid */
RtDType rt_dtype_from_name(const char *name); /* tgc names; RT_DTYPE_NONE if unknown */

/* Element count and byte size; false when a dimension is negative or the
 * product overflows (int64 elements, size_t bytes). */
bool rt_desc_numel(const RtDesc *d, int64_t *numel);
bool rt_desc_nbytes(const RtDesc *d, size_t *nbytes);
bool rt_desc_equal(const RtDesc *a, const RtDesc *b);
/* Writes "f32[2, 784]" ("f32[]" for a scalar) into buf, truncating to cap;
 * returns buf. */
char *rt_desc_format(const RtDesc *d, char *buf, size_t cap);
#define RT_DESC_STR_MAX 400 /* enough for 32 dims of 10 digits */

/* ---- element conversions (convert.c) ---- */

/* float32 -> bfloat16, rounded to nearest even as torch.Tensor.to(
 * torch.bfloat16) does; every NaN becomes the quiet NaN 0x7fc0 (c10's
 * round_to_nearest_even; torch's vectorised CPU path gives 0xffff, also a
 * NaN). */
uint16_t rt_f32_to_bf16(float x);
float rt_bf16_to_f32(uint16_t x);
float rt_f16_to_f32(uint16_t x); /* IEEE binary16, exact */
void rt_f32_to_bf16_n(const float *src, uint16_t *dst, size_t n);
void rt_bf16_to_f32_n(const uint16_t *src, float *dst, size_t n);
/* Element i of a floating array (f64, f32, f16, bf16) as a double, exact;
 * 0 for any other dtype. */
double rt_load_float(const void *p, RtDType t, size_t i);

/* ---- the thread pool (threadpool.c) ---- */

typedef struct RtPool RtPool;

/* The most threads a pool may have: rt_pool_create, the executables'
 * --threads and `tgc build --threads` all accept 0 (one per core) to this. */
#define TGCRT_MAX_THREADS 1024

/* Called on [begin, end), a piece of the whole range, by thread `thread`
 * (0 is the calling thread, 1..n-1 the workers): per-thread scratch can be
 * indexed by it. */
typedef void (*RtRangeFn)(void *ctx, int64_t begin, int64_t end, int thread);

/* n threads in all, the caller included (n - 1 workers are started);
 * n = 0 means one per online core. */
RtStatus rt_pool_create(int n, RtPool **out, RtError *err);
int rt_pool_threads(const RtPool *p); /* 1 for a NULL pool */
/* Runs fn over [begin, end) split into pieces of at least `grain` indices,
 * on the workers and the calling thread, and returns when all are done.
 * A NULL pool, a range of one piece, or a call made while the pool is
 * already running a loop (from inside fn, or from another thread) runs fn
 * once over the whole range on the calling thread. */
void rt_pool_parallel_for(RtPool *p, int64_t begin, int64_t end, int64_t grain, RtRangeFn fn,
                          void *ctx);
void rt_pool_destroy(RtPool *p); /* NULL is fine */

/* ---- compiled programs: descriptor, contexts, the executable's main (program.c, exe_main.c) ----
 *
 * tgc emits, per graph, the kernels (an LLVM object) and a small C file that
 * fills an RtProgram; everything else a compiled program does (loading
 * weights and inputs, the arena, threads, --print, --bench, writing
 * outputs) is here, written once. */

/* A param's initialiser, used when no weights file holds it (graph-language
 * "Parameter initialisers"). randn/uniform are deterministic in (seed, name,
 * element index). */
typedef enum RtInitKind {
    RT_INIT_NONE, /* the weights file must hold it */
    RT_INIT_ZEROS,
    RT_INIT_ONES,
    RT_INIT_FULL,    /* a = value */
    RT_INIT_RANDN,   /* a = std (mean 0) */
    RT_INIT_UNIFORM, /* [a, b) */
    RT_INIT_ARANGE,  /* 0, 1, 2, ... in row-major order */
} RtInitKind;

/* Fills dst (numel elements of dt) with initialiser `kind`'s values for
 * the param `name`: what a program uses when no weights file holds it
 * (the compiler calls it too, to quantize such a param at build time). */
void rt_fill(RtPool *pool, int kind, double a, double b, uint64_t seed, const char *name,
             RtDType dt, void *dst, int64_t numel);

typedef struct RtTensorInfo {
    const char *name;
    RtDesc desc;     /* declared dtype and shape: what files hold */
    RtDType storage; /* the dtype the kernels use (differs under --precision) */
    RtInitKind init; /* params only */
    double init_a, init_b;
    int64_t init_seed;
    /* params only: declared `state` (a KV cache): zero when the context is
     * created and after rt_context_reset_state, kept between runs, never
     * read from a weights file; written in place by the forward. */
    bool state;
} RtTensorInfo;

/* The generated entry point. bufs[0] is the arena, then one pointer per
 * input, param and output, in declaration order, each holding its tensor
 * densely in C order at its storage dtype (bool as one byte 0/1, bf16/f16 as
 * their 16-bit patterns); last, a pointer to three int64 words, zeroed
 * before each run: a kernel that finds an index tensor's value out of range
 * claims word 0 by compare-and-swap with the address of a constant string
 * describing the index tensor, and the winner stores the value and its
 * element offset in the index tensor into words 1 and 2 (the run then fails
 * with TGCRT_ERR_VALUE and a message naming the value, its position and the
 * valid range). */
typedef void (*RtForwardFn)(void **bufs, RtPool *pool);

/* ---- training programs (train.c, train_main.c) ----
 * tgc build --train LOSS emits a program whose graph computes, in one run,
 * the loss, the gradients and the optimizer's update: the updated value of
 * every trained param and every optimizer state is an output, and the
 * runtime makes it the param's value for the next step. */
typedef enum RtParamRole {
    RT_ROLE_WEIGHT = 0, /* a param of the graph, trained or frozen: --save-weights writes it */
    /* optimizer state ("w.exp_avg", "w.momentum_buffer", "__step"): --save-state */
    RT_ROLE_STATE = 1,
} RtParamRole;
typedef struct RtTrainDesc {
    int loss_output;          /* index in outputs of the 0-d floating loss */
    const int32_t *update_of; /* per output: the param whose value it becomes after a step, or -1 */
    const uint8_t *role;      /* per param: RtParamRole */
    const char *optimizer;    /* "sgd", "adamw" (messages and --help) */
    /* Per output (NULL: none): 1 when the step's kernel writes the update
     * straight over its param's own buffer (the compiler proved no later
     * kernel reads the old value), so it needs no spare and no swap. The
     * compiled step leaves every param as it was when the loss is not
     * finite, so a refused step changes nothing either way. */
    const uint8_t *in_place;
} RtTrainDesc;

/* One step of a CPU program's forward (one kernel of the plan, in run
 * order), as the profiler names it (profile.c; emitted by the compiler as
 * a constant table). */
typedef struct RtStepInfo {
    const char *op;     /* the op as the graph names it, fused ops joined by '+' */
    const char *value;  /* the value it computes: its name, or %ID */
    const char *where;  /* "FILE.tg:LINE" of that value, or "" */
    const char *shapes; /* "f32[2, 10] <- f32[2, 784], f32[784, 10]": written <- read */
    const char *impl;   /* "generated loop", "BLAS sgemm", "oneDNN", "flash attention", ... */
    int32_t conv;       /* index in RtProgram.convs, or -1 (oneDNN names its kernel at setup) */
    double flops;       /* floating-point operations (passes/flops.c's convention) */
    double bytes;       /* bytes the step reads and writes, each operand once */
} RtStepInfo;

/* One CPU level the forward was compiled for (tgc build --cpu A,B,...):
 * the name given, the features its code may use (CPUID-checkable names,
 * comma-separated: cpu_features.c), and its forward. */
typedef struct RtCpuLevel {
    const char *name;
    const char *cpu; /* LLVM's CPU name ("znver3" for native) */
    const char *features;
    RtForwardFn forward;
} RtCpuLevel;

typedef struct RtProgram {
    const char *name;
    int ninputs, nparams, noutputs;
    const RtTensorInfo *inputs, *params, *outputs;
    size_t arena_bytes;  /* the planned arena: the size tgc report prints */
    int default_threads; /* tgc build --threads; 0 = one per online core */
    RtForwardFn forward;
    const void *embedded_weights; /* safetensors image (--embed-weights), or NULL */
    size_t embedded_weights_len;
    const struct RtCudaProgram *cuda; /* --target cuda: runs on a GPU (forward is NULL) */
    /* Convolutions (conv.c): set up once per context after the params are
     * loaded; the forward calls rt_conv(bufs, i) for convs[i]. bufs[conv_slot]
     * holds the context's conv state. NULL/0 when the graph has none (then
     * oneDNN is not linked). */
    const struct RtConvDesc *convs;
    int nconvs;
    int conv_slot;
    /* rt_conv_context_setup / rt_conv_context_free, set by the glue only
     * when nconvs > 0, so that programs without convolutions never pull
     * conv.c (and oneDNN) in from the static library. */
    RtStatus (*conv_setup)(const struct RtProgram *p, void **bufs, int threads, void **state,
                           struct RtError *err);
    void (*conv_free)(void *state);
    const struct RtTrainDesc *train; /* tgc build --train, else NULL */
    /* The profiler (profile.c): the forward's steps, and the bufs slot the
     * forward reads its RtProfile pointer from (the last; 0: the forward
     * has no hooks). NULL there: not profiling, one branch per step. */
    int nsteps;
    const RtStepInfo *steps;
    int prof_slot;
    /* rt_conv_impl, set by the glue only when nconvs > 0 (as conv_setup):
     * the profiler names each convolution's oneDNN kernel. */
    const char *(*conv_impl)(const void *conv_state, int64_t index);
    /* The CPU levels (0/NULL: a program without the record, run as it is):
     * a context runs the forward of the level with the most features that
     * this CPU has, chosen once when it is created, and is not created
     * (TGCRT_ERR_DEVICE, naming the missing features and the --cpu to
     * rebuild with) when the CPU has none of them. */
    int nlevels;
    const RtCpuLevel *levels;
} RtProgram;

/* The main() of an executable from tgc build: the flags and behaviour of
 * cli.md "Compiled executables". Returns the exit code. */
int rt_main(const RtProgram *p, int argc, char **argv);

/* ---- generation (tgc build --generate; gen.c, gen_main.c) ----
 * A decoder compiled twice over the same params and states (its KV
 * cache): `prefill` takes `chunk` tokens a run, `step` one. Both take the
 * token ids (i64[batch, seq]) and the position of the run's first token
 * (i64[]), and give the logits (f32[batch, seq, vocab], or another
 * floating dtype); the runs write the states in place. A prompt runs in
 * chunks, the last one padded (a causal decoder's padding only writes
 * cache rows that decoding overwrites before it reads them), then one step
 * per new token. */
typedef struct RtGenProgram {
    const RtProgram *prefill; /* seq = chunk */
    const RtProgram *step;    /* seq = 1 */
    int64_t batch, chunk, max_seq, vocab;
    int ids_input, pos_input; /* indices in each program's inputs (the same in both) */
    int logits_output;        /* index in each program's outputs */
    /* An ONNX decoder's (Hugging Face's convention) inputs the run fills,
     * or -1: attention_mask [batch, max_seq] (i64, i32, f32 or bool; 1 up
     * to the run's last position, 0 after) and position_ids [batch, seq]
     * (i64 or i32: pos + j). */
    int mask_input, positions_input;
    /* 1: the prefill attends to its chunk's keys as the cache's last
     * `chunk` rows, after its first max_seq - chunk (an ONNX decoder's
     * Concat(cache, new), whose causal mask is built for the last rows:
     * tgc's passes/cache_state.c). Its attention_mask then covers the rows
     * before pos and the last chunk rows, not the gap between. Needs
     * mask_input. */
    int prefill_keys_last;
    /* 1: the prefill's last input is `gen_row` (i64[1]) and its logits are
     * [batch, 1, vocab], that row's of the chunk (tgc's
     * passes/logits_row.h: generation reads one row, the prompt's last
     * token's). The run sets it before each chunk. */
    int prefill_logits_row;
} RtGenProgram;
/* The main() of a generating executable: cli.md "Additions (round 3)"
 * (--prompt, --max-new-tokens, --temperature, --top-k, --top-p, --seed,
 * --output-dir, --weights, --threads). Returns the exit code. */
int rt_gen_main(const RtGenProgram *g, int argc, char **argv);

/* ---- the profiler (profile.c) ----
 *
 * A profiling context records the time of every step of every run (and
 * training step): the forward calls rt_prof_mark(prof, i) as step i
 * starts and rt_prof_mark(prof, nsteps) after the last, only when its
 * profile slot holds a profiler, so a context that does not profile pays
 * one predictable branch per step. */
typedef struct RtProfile RtProfile;
/* Called by generated code: the time at which step `step` starts. */
void rt_prof_mark(RtProfile *prof, int64_t step);

/* ---- matrix products for generated code (matmul.c) ----
 *
 * C[b] (+)= A[b] @ B[b] for every batch index b: A is [m, k], B [k, n],
 * C [m, n], each addressed with element strides. All int64 fields so that
 * generated code can emit a descriptor as a constant i64 array. */
#define RT_MATMUL_MAX_BATCH 10
typedef struct RtMatmulDesc {
    int64_t dtype; /* RtDType of A, B and C */
    int64_t m, n, k;
    int64_t a_rs, a_cs, b_rs, b_cs, c_rs, c_cs; /* row and column strides, elements */
    int64_t accumulate;                         /* 1: C += A@B (C holds a bias), 0: C = A@B */
    int64_t nbatch;                             /* batch dimensions, <= RT_MATMUL_MAX_BATCH */
    int64_t batch[RT_MATMUL_MAX_BATCH];
    int64_t a_bs[RT_MATMUL_MAX_BATCH], b_bs[RT_MATMUL_MAX_BATCH], c_bs[RT_MATMUL_MAX_BATCH];
} RtMatmulDesc;

/* f32/f64 through cblas_sgemm/dgemm (a transposed operand becomes a
 * transpose flag and leading dimension; only layouts BLAS cannot take are
 * copied), f16/bf16 through f32 with one rounding, integers by a loop.
 * a, b, c point at element 0 of batch 0. */
void rt_matmul(const RtMatmulDesc *d, const void *a, const void *b, void *c, RtPool *pool);
/* OpenBLAS's thread count: set once per context to the pool's size. */
void rt_blas_set_threads(int n);
uint16_t rt_f32_to_f16(float x); /* round to nearest even, as torch does */

/* ---- convolutions for generated code (conv.c, through oneDNN) ----
 *
 * One descriptor per convolution node, in the glue: 2-d geometry (a 1-d
 * convolution has height 1), where each operand is (bufs[slot] + offset
 * bytes, with element strides over N, C, H, W), a batch norm folded into
 * the weights and bias, and post-ops applied to the result in order.
 *
 * Weight, bias and batch-norm tensors are dense (C order) in the conv's
 * dtype. dst must not overlap src or an ADD operand (oneDNN writes dst
 * before it applies the post-ops). f32 runs through oneDNN; f16/bf16
 * through oneDNN in f32 (inputs widened, result rounded once; npost must
 * be 0); f64 through a direct loop in double, as does any convolution
 * oneDNN has no primitive for. A transposed convolution's output_padding
 * is implied by out[] (the extra rows/columns at the bottom/right). */
#define RT_CONV_MAX_POST 4
typedef struct RtConvRef {
    int32_t slot;   /* -1: absent */
    int64_t offset; /* bytes */
} RtConvRef;
typedef enum RtConvPostKind {
    RT_CONV_POST_ADD,         /* dst += tensor (dst's shape, its own strides) */
    RT_CONV_POST_RELU,        /* alpha: negative slope (0: relu, else leaky_relu) */
    RT_CONV_POST_CLIP,        /* [alpha, beta]: relu6, hardtanh */
    RT_CONV_POST_HARDSWISH,   /* x * relu6(x + 3) / 6 */
    RT_CONV_POST_HARDSIGMOID, /* relu6(x + 3) / 6 (3 oneDNN post-ops: 2.6 has no hardsigmoid) */
    RT_CONV_POST_ELU,         /* alpha */
    RT_CONV_POST_SIGMOID,
    RT_CONV_POST_TANH,
    RT_CONV_POST_SILU,
    RT_CONV_POST_GELU_ERF,
    RT_CONV_POST_GELU_TANH,
    RT_CONV_POST_MISH,
} RtConvPostKind;
typedef struct RtConvPost {
    int32_t kind; /* RtConvPostKind */
    float alpha, beta;
    RtConvRef src;      /* ADD: the other operand */
    int64_t strides[4]; /* ADD: its element strides over N, C, H, W */
} RtConvPost;
typedef struct RtConvDesc {
    int32_t dtype;      /* RtDType of src, weight, bias and dst: f32, f64, f16 or bf16 */
    int32_t transposed; /* conv_transpose: weight is [cin, cout / groups, kh, kw] */
    int64_t n, cin, cout, groups;
    int64_t in[2], out[2], k[2];                        /* [0] height, [1] width */
    int64_t stride[2], dilation[2], pad_l[2], pad_r[2]; /* dilation 1 = dense; pad_l top/left */
    RtConvRef src, weight, bias, dst;                   /* bias.slot -1: none */
    int64_t src_strides[4], dst_strides[4];             /* elements, N C H W */
    /* 1: weight, bias and the batch norm's tensors are params (constant for
     * the context's life): folded and reordered once at setup, never per
     * run. 0: they are computed by the graph: folded and reordered at every
     * call (into memory allocated at setup). */
    int32_t constant_weights;
    /* A batch norm applied to the result, folded into weight and bias:
     * y = (conv - mean) / sqrt(var + eps) * bn_weight + bn_bias (slots -1:
     * absent: mean 0, var 1, bn_weight 1, bn_bias 0). */
    int32_t has_bn;
    RtConvRef bn_mean, bn_var, bn_weight, bn_bias;
    double bn_eps;
    int32_t npost;
    RtConvPost post[RT_CONV_MAX_POST];
    /* The conv's scratch space in the arena (bufs[0] + scratch_offset, best
     * 64-byte aligned) and its size: rt_conv_scratch_bytes(desc, threads)
     * as the compiler planned it. A context that needs more (another
     * machine, another thread count) allocates its own instead; 0 means
     * none was planned. */
    int64_t scratch_offset;
    int64_t scratch_bytes;
} RtConvDesc;

/* Bytes of arena scratch the convolution needs at run time (oneDNN's
 * scratchpad in user mode, plus dense f32 copies of src and dst for
 * f16/bf16 convs or for f32 strides only oneDNN's slow reference kernel
 * takes, plus a copy of an ADD operand laid out otherwise than dst), for
 * a context of `threads` threads (0: one per online core), on this
 * machine. 0 for f64 and for a malformed descriptor. The compiler calls it
 * to plan the arena, the context to check the plan. */
size_t rt_conv_scratch_bytes(const RtConvDesc *d, int threads);
/* Bytes a context keeps per convolution outside the arena: its weights
 * and bias folded and reordered into oneDNN's preferred layout (plus the
 * plain f32 weights of a non-constant conv, and 16 bytes per output
 * channel). Needs no buffers: the compiler calls it at build time. */
size_t rt_conv_prepared_bytes(const RtConvDesc *d);
/* Creates the primitives of every p->convs[i] and prepares constant
 * weights (bufs: the context's buffers, params loaded); threads: the
 * context's (0: one per online core), which oneDNN's OpenMP then uses.
 * TGCRT_ERR_ARG for a malformed descriptor, TGCRT_ERR_NOMEM; a conv oneDNN
 * cannot run is not an error (it runs the direct loop). *state NULL on
 * failure. */
RtStatus rt_conv_context_setup(const RtProgram *p, void **bufs, int threads, void **state,
                               RtError *err);
void rt_conv_context_free(void *state);
/* Runs p->convs[index] on the context's buffers; state is bufs[p->conv_slot]
 * (what rt_conv_context_setup made). The forward calls it. */
void rt_conv(void *state, void **bufs, int64_t index);

/* ---- quantized matrix products (qmatmul.c) ----
 *
 * y[b] (+)= x[b] @ dequant(q)^T: x is [m, k] (f32, f16 or bf16), y [m, n]
 * (f32, f16 or bf16), each addressed with element strides and batch
 * strides; the weight has no batch dimensions. All int64 fields, in this
 * order, so that generated code can emit the descriptor as a constant i64
 * array. The batch arrays have RT_MATMUL_MAX_BATCH entries, like
 * RtMatmulDesc's, so the compiler can fill both from one batch layout. */
#define RT_QMATMUL_MAX_BATCH RT_MATMUL_MAX_BATCH
typedef struct RtQMatmulDesc {
    int64_t x_dtype; /* RtDType of x: f32, f16 or bf16 */
    int64_t y_dtype; /* RtDType of y: f32, f16 or bf16 */
    int64_t m, n, k;
    int64_t x_rs, x_cs; /* x[m][k] row and column strides, elements */
    int64_t y_rs, y_cs; /* y[m][n] strides, elements */
    /* 8: q is int8 [n][k] row-major; 4: q is bytes [n][(k+1)/2], element 2j
     * in the low nibble, 2j+1 in the high nibble, each a two's-complement
     * 4-bit value in [-8, 7]. */
    int64_t bits;
    /* k elements per scale (k itself for per-output-channel); scales are
     * f32 [n][ceil(k/group)] row-major. */
    int64_t group;
    int64_t accumulate; /* 1: y += product (y already holds a bias, in y_dtype), 0: y = product */
    int64_t nbatch;     /* batch dims of x and y, <= RT_QMATMUL_MAX_BATCH */
    int64_t batch[RT_MATMUL_MAX_BATCH];
    int64_t x_bs[RT_MATMUL_MAX_BATCH], y_bs[RT_MATMUL_MAX_BATCH];
} RtQMatmulDesc;

/* y[m][n] = (accumulate ? y[m][n] : 0) + sum_k x[m][k] * (q[n][k] * scales[n][k / group]),
 * dequantized on the fly (w = (float)q * scale, one f32 product),
 * accumulated in f32, rounded once to y's dtype (to nearest even). x and y
 * point at element (0, 0) of batch 0. Zero-size dimensions do nothing
 * (k = 0: y = 0, or unchanged when accumulating); a malformed descriptor
 * (bad dtype or bits, group < 1, negative sizes, too many batch dims) does
 * nothing; an allocation failure falls back to slower kernels, never to
 * an error. */
void rt_qmatmul(const RtQMatmulDesc *d, const void *x, const void *q, const float *scales, void *y,
                RtPool *pool);
/* Up to this many rows (batch * m) rt_qmatmul reads the weights in place
 * (the kernel for decoding one token); more are dequantized in blocks for
 * sgemm. The profiler names the kernel by it. */
#define RT_QMATMUL_GEMV_MAX_ROWS 32

/* ---- scaled dot-product attention (attention.c) ----
 *
 * out[b] = softmax(q[b] @ k[b]^T * scale + mask[b]) @ v[b], flash-attention
 * style: for each block of RT_ATTN_BLOCK_M query rows the keys are visited
 * in blocks of RT_ATTN_BLOCK_N with a running row max and sum, so the
 * [l, s] scores are never stored whole. q is [l, e], k [s, e], v [s, ev],
 * out [l, ev], mask [l, s], each addressed with element strides and batch
 * strides (0 where broadcast). All int64 fields (scale: a double's bits) so
 * that generated code can emit the descriptor as a constant i64 array. */
#define RT_ATTN_MAX_BATCH 10
#define RT_ATTN_BLOCK_M 64
#define RT_ATTN_BLOCK_N 256
/* At most this many blocks run at once, each with its own scratch, so the
 * planned scratch does not depend on the run's thread count. */
#define RT_ATTN_MAX_SLOTS 16
typedef struct RtAttnDesc {
    int64_t dtype;     /* RtDType of q, k, v and out: f32, f16 or bf16 (computed in f32) */
    int64_t mask_kind; /* 0: none; 1: bool (one byte, nonzero takes part); 2: float, added */
    int64_t causal;    /* 1: key j takes part in query i's row only when j <= i */
    double scale;
    int64_t l, s, e, ev;
    int64_t q_rs, q_cs, k_rs, k_cs, v_rs, v_cs, o_rs, o_cs, m_rs, m_cs;
    int64_t nbatch; /* <= RT_ATTN_MAX_BATCH */
    int64_t batch[RT_ATTN_MAX_BATCH];
    int64_t q_bs[RT_ATTN_MAX_BATCH], k_bs[RT_ATTN_MAX_BATCH], v_bs[RT_ATTN_MAX_BATCH];
    int64_t m_bs[RT_ATTN_MAX_BATCH], o_bs[RT_ATTN_MAX_BATCH];
    /* dropout_p in a training build (dropout = 1): each probability tile
     * is multiplied by dropout's mask (docs/training.md, "Dropout's
     * mask"): element (b, i, j), b the flat index over batch, draws
     * Philox 4x32-10 at index (b * l + i) * s + j, site drop_site, under
     * the seed and step the call is given, and is kept, times drop_scale,
     * when the draw's top 24 bits are below drop_threshold; the row's
     * normaliser is the undropped one's. */
    int64_t dropout, drop_threshold, drop_site;
    double drop_scale;
} RtAttnDesc;

/* Bytes of scratch rt_attention needs (the compiler plans them in the
 * arena): per slot, the f32 blocks of q, k, v, the scores, the output
 * accumulator and the row statistics. 0 for a malformed descriptor. */
size_t rt_attention_scratch_bytes(const RtAttnDesc *d);
/* Computes out; scratch holds rt_attention_scratch_bytes(d) bytes, 64-byte
 * aligned. A row whose keys are all masked out is NaN, as in PyTorch; s = 0
 * gives zeros. seed and step (0-d i64) key d->dropout's mask, NULL
 * without it. A malformed descriptor does nothing. */
void rt_attention(const RtAttnDesc *d, const void *q, const void *k, const void *v,
                  const void *mask, const int64_t *seed, const int64_t *step, void *out,
                  void *scratch, RtPool *pool);

/* The gradient of rt_attention (attention_bwd.c), FlashAttention-2's
 * backward: per block of query rows the row log-sum-exp is found by a
 * sweep over the keys, D = rowsum(grad_out * out), and then for each key
 * block the probabilities P = exp(S - lse) are recomputed from q and k,
 * dS = P * (grad_out v^T - D), and dq += scale dS k, dk += scale dS^T q,
 * dv += P^T grad_out are accumulated: no [l, s] buffer. f (the forward's
 * descriptor) addresses q, k, v, mask and the forward's out (o_*); g_*
 * address grad_out (f.dtype). The result is f32, one packed block per
 * batch index of [l + 2s, w] rows, w = max(e, ev) + 2 (row stride w,
 * column stride 1, batch strides r_bs): rows [0, l) hold dq in columns
 * [0, e) and each row's log-sum-exp and D in columns w - 2, w - 1; rows
 * [l, l + s) hold dk, rows [l + s, l + 2s) dv (columns [0, ev)). */
typedef struct RtAttnBwdDesc {
    RtAttnDesc f;
    int64_t g_rs, g_cs;
    int64_t g_bs[RT_ATTN_MAX_BATCH], r_bs[RT_ATTN_MAX_BATCH];
} RtAttnBwdDesc;
#define RT_ATTN_BWD_BLOCK_N 128
/* Bytes of scratch rt_attention_backward needs: per slot the f32 blocks
 * of q, grad_out, k, v, the probabilities and their gradient. 0 for a
 * malformed descriptor. */
size_t rt_attention_backward_scratch_bytes(const RtAttnBwdDesc *d);
/* With dropout (f.dropout, seed and step as for rt_attention), the mask
 * Z (keep * drop_scale, else 0) is redrawn per tile: dv += (P Z)^T
 * grad_out and dS = P * ((grad_out v^T) Z - D), D = rowsum(grad_out *
 * out) as before (out being the dropped result).
 * Computes the packed result; batch indices run in parallel on the pool,
 * each in a slot of the scratch (64-byte aligned). A malformed descriptor
 * does nothing. */
void rt_attention_backward(const RtAttnBwdDesc *d, const void *q, const void *k, const void *v,
                           const void *mask, const int64_t *seed, const int64_t *step,
                           const void *out, const void *grad_out, float *result, void *scratch,
                           RtPool *pool);

/* ---- slice_scatter's write for generated code (slice_write.c) ----
 *
 * dst = input with dst[..., start : start + len*step : step, ...] along
 * dim replaced by src (torch.slice_scatter). In place (input NULL) dst is
 * a state's storage and only the slice is written; else input is copied
 * into dst first. All int64 fields, emitted as a constant i64 array. */
#define RT_SLICE_WRITE_MAX_DIMS 12
typedef struct RtSliceWriteDesc {
    int64_t elem_bytes; /* one element of dst, input and src */
    int64_t ndim, dim;
    int64_t start; /* the start when the start pointer is NULL */
    int64_t step, len;
    int64_t start_dtype;                     /* RtDType of *start (an integer type) */
    int64_t shape[RT_SLICE_WRITE_MAX_DIMS];  /* dst's and input's; src's has len at dim */
    int64_t dst_st[RT_SLICE_WRITE_MAX_DIMS]; /* element strides */
    int64_t in_st[RT_SLICE_WRITE_MAX_DIMS];
    int64_t src_st[RT_SLICE_WRITE_MAX_DIMS];
} RtSliceWriteDesc;
/* A run-time start (start not NULL) outside [0, shape[dim] - len] writes
 * nothing and sets the index-error cell (rt_index_error.h): description
 * `what`, the start's value, offset 0; the run then fails. */
void rt_slice_write(const RtSliceWriteDesc *d, void *dst, const void *input, const void *src,
                    const void *start, int64_t *error_cell, const char *what);
/* Copies state `name` of c (a param declared `state`) into dst, at its
 * storage dtype (state_read.c; tgc compile's NAME_get_state). */
struct RtContext;
RtStatus rt_context_get_state(struct RtContext *c, const char *name, void *dst);

/* ---- naming a convolution's kernel for the profiler (conv.c) ---- */

/* The implementation convolution `index` of a context's conv state runs:
 * oneDNN's kernel name ("brg:avx512_core", "jit:avx2"...), or "direct: WHY"
 * (conv.c; what RtProgram.conv_impl points at). */
const char *rt_conv_impl(const void *state, int64_t index);

#ifdef __cplusplus
}
#endif
#endif
