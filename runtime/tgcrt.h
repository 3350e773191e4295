/* libtgcrt: the runtime that programs compiled by tgc link against.
 *
 * It reads inputs (.npy) and weights (safetensors), writes outputs (.npy),
 * runs parallel loops on a thread pool, allocates the activation arena and
 * times runs for --bench. It never includes the compiler's headers, and it
 * has no global mutable state: every function works on the objects it is
 * given, so two contexts may run at once on different threads.
 *
 * Errors: a function that can fail returns an RtStatus and, when its RtError
 * argument is not NULL, writes a message there that names the file (and the
 * tensor) and says what was expected and what was found. See docs/runtime.md
 * for the validation rules. */
#ifndef TGCRT_H
#define TGCRT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h> /* FILE: rt_context_profile_print */

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

/* ---- 64-byte aligned memory and the activation arena (arena.c) ---- */

#define RT_ALIGN 64

/* 64-byte aligned; size 0 still gives a unique pointer; NULL on failure. */
void *rt_aligned_alloc(size_t size);
void rt_aligned_free(void *p);

/* The one buffer that holds every intermediate value at its planned offset. */
typedef struct RtArena {
    void *base;  /* 64-byte aligned */
    size_t size; /* the requested size rounded up to a multiple of 64 */
} RtArena;

RtStatus rt_arena_init(RtArena *a, size_t size, RtError *err);
void rt_arena_release(RtArena *a); /* safe on a zeroed or released arena */

/* ---- opening files to read (file_open.c) ---- */

/* Opens path read-only for the caller to read whole (inputs, weights, a
 * graph file). Without blocking: a FIFO with no writer would hang a plain
 * open(). Anything but a regular file (FIFO, directory, device, socket) is
 * refused with TGCRT_ERR_IO and "PATH: is a FIFO (named pipe), not a
 * regular file". Returns the descriptor (blocking again, close-on-exec),
 * with the file's size in *size when size is not NULL; -1 on error. */
int rt_open_regular(const char *path, uint64_t *size, RtError *err);

/* ---- .npy files (npy.c, npy_input.c) ---- */

/* A tensor read from a file; owns data (64-byte aligned, rt_array_free). */
typedef struct RtArray {
    RtDesc desc;
    void *data;
    size_t nbytes;
} RtArray;

void rt_array_free(RtArray *a);

/* Parses an .npy image held in memory (the whole file, len bytes); name is
 * used in messages. On success *desc is the array's type and the data
 * starts at buf + *data_offset, exactly the bytes the shape needs. */
RtStatus rt_npy_parse(const void *buf, size_t len, const char *name, RtDesc *desc,
                      size_t *data_offset, RtError *err);
/* Reads a whole .npy file (format 1.0, 2.0 or 3.0, C order, little-endian;
 * f8 f4 f2 i8 i4 i2 i1 u1 b1). */
RtStatus rt_npy_read(const char *path, RtArray *out, RtError *err);
/* Writes data (desc's type, C order) as a format 1.0 .npy file, padded as
 * numpy pads it; bf16 is written as float32. The file is written to a
 * temporary name in the same directory and renamed: it appears whole or
 * not at all. */
RtStatus rt_npy_write(const char *path, const RtDesc *desc, const void *data, RtError *err);

/* Loads the graph input `input` from path into dst (caller-owned, of
 * rt_desc_nbytes(declared) bytes). The file's dtype and shape must equal the declared ones,
 * except that a bf16 input is read from a float32 array and rounded to
 * nearest even. Mismatches are TGCRT_ERR_DTYPE / TGCRT_ERR_SHAPE with
 * "input 'x' (x.npy): expected f32[2, 784], found f64[2, 784]". */
RtStatus rt_npy_load_input(const char *path, const char *input, const RtDesc *declared, void *dst,
                           RtError *err);

/* ---- safetensors files (safetensors.c) ---- */

typedef struct RtSafetensors RtSafetensors;

typedef struct RtStTensor {
    const char *name;
    RtDesc desc;
    const void *data; /* into the mapping or buffer: read-only, and aligned only
                         as the file's layout makes it */
    size_t nbytes;
} RtStTensor;

/* Maps path read-only and validates every field of its header. */
RtStatus rt_st_open(const char *path, RtSafetensors **out, RtError *err);
/* The same over a buffer the caller keeps alive until rt_st_close (weights
 * embedded in an executable); name is used in messages. */
RtStatus rt_st_open_memory(const void *buf, size_t len, const char *name, RtSafetensors **out,
                           RtError *err);
void rt_st_close(RtSafetensors *st); /* NULL is fine */
const char *rt_st_name(const RtSafetensors *st);
size_t rt_st_count(const RtSafetensors *st);
const RtStTensor *rt_st_get(const RtSafetensors *st, size_t i);          /* header order */
const RtStTensor *rt_st_find(const RtSafetensors *st, const char *name); /* NULL if absent */
/* Finds `name` and checks it has the declared type: TGCRT_ERR_MISSING,
 * TGCRT_ERR_DTYPE or TGCRT_ERR_SHAPE with a message naming the tensor. */
RtStatus rt_st_expect(const RtSafetensors *st, const char *name, const RtDesc *declared,
                      const RtStTensor **out, RtError *err);

/* One tensor to write (safetensors_write.c): desc's dtype and shape, and
 * nbytes = rt_desc_nbytes(desc) bytes of data in C order (bf16/f16 as their
 * 16-bit patterns, bool one byte 0/1). */
typedef struct RtStTensorOut {
    const char *name;
    RtDesc desc;
    const void *data;
    size_t nbytes;
} RtStTensorOut;

/* Writes the n tensors to path, laid out in order after a JSON header
 * padded with spaces to a multiple of 8 bytes (with "__metadata__":
 * {"producer": "tgc"}), whole or not at all (through a temporary renamed
 * over path, as rt_npy_write does). TGCRT_ERR_ARG for a tensor whose nbytes
 * is not its desc's size or that has no name or no data; TGCRT_ERR_IO
 * ("cannot write 'PATH': REASON") when the file cannot be written. */
RtStatus rt_st_write(const char *path, const RtStTensorOut *t, size_t n, RtError *err);

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

/* ---- time (timer.c) ---- */

int64_t rt_now_ns(void); /* CLOCK_MONOTONIC */
int64_t rt_now_us(void);

typedef struct RtBenchStats {
    size_t runs;
    double median_us, min_us, max_us;
} RtBenchStats;

/* Summarises per-run times (sorts samples in place). */
RtBenchStats rt_bench_stats(double *samples_us, size_t n);
/* "bench: runs=N median_us=M min_us=A max_us=B", the line --bench prints. */
char *rt_bench_format(const RtBenchStats *s, char *buf, size_t cap);

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

typedef struct RtContext RtContext;

/* Creates a context: loads params from weights_path (a safetensors file),
 * else from the embedded image, else from the initialisers; allocates the
 * arena; starts `threads` threads (0: the program's default). A param found
 * in the file must have the declared shape; a floating param may be stored
 * in another floating dtype (converted); any other mismatch, a missing param
 * without an initialiser or a malformed file is an error naming the tensor.
 * On failure *out is still a context (unless out of memory: NULL) whose
 * rt_context_error() says why; destroy it. */
RtStatus rt_context_create(const RtProgram *p, const char *weights_path, int threads,
                           RtContext **out);
/* The same with the weights as a safetensors image in memory, kept alive by
 * the caller until rt_context_destroy; st NULL: no weights at all (not even
 * embedded ones), initialisers only. */
RtStatus rt_context_create_from_memory(const RtProgram *p, const void *st, size_t len, int threads,
                                       RtContext **out);
/* Runs the graph on caller-owned buffers: inputs[i] and outputs[i] in
 * declaration order, dense, at the declared dtype (converted from/to the
 * storage dtype when they differ). */
RtStatus rt_context_run(RtContext *c, const void *const *inputs, void *const *outputs);
const char *rt_context_error(const RtContext *c); /* "" when none */
const RtProgram *rt_context_program(const RtContext *c);
/* The CPU level whose forward c runs ("" for a program without levels). */
const char *rt_context_cpu_level(const RtContext *c);
/* cpu_features.c: the index of the best of p's levels this CPU runs, or -1
 * with the message in err; 0 when p has no levels. */
RtStatus rt_cpu_select(const RtProgram *p, int *level, struct RtError *err);
/* Whether this CPU has every feature of the comma-separated list; the
 * missing ones into missing (comma-separated, may be NULL). */
bool rt_cpu_has_all(const char *features, char *missing, size_t nmissing);
/* The rule rt_cpu_select (and tgc report --cpu) chooses by: the index of
 * the feature list with the most features among those this CPU has all
 * of, or -1 when it has none. */
int rt_cpu_best(const char *const *features, int n);
void rt_context_destroy(RtContext *c); /* NULL is fine */

/* The main() of an executable from tgc build: the flags and behaviour of
 * cli.md "Compiled executables". Returns the exit code. */
int rt_main(const RtProgram *p, int argc, char **argv);

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

/* Starts (on) or stops recording the runs of c; starting again clears what
 * was recorded. TGCRT_ERR_ARG when the program has no step table (a CUDA
 * program, or one built by hand), TGCRT_ERR_NOMEM. */
RtStatus rt_context_profile(RtContext *c, bool on);
/* How many runs were recorded (0 when not profiling). */
size_t rt_context_profile_runs(const RtContext *c);
/* The median time of step i over the recorded runs, in microseconds; -1
 * for an index out of range or when nothing was recorded. */
double rt_context_profile_step_us(const RtContext *c, int i);
/* Prints the table: one row per step, sorted by time (median over the
 * runs), with its share, GFLOP/s and GB/s, the op, its .tg line, shapes
 * and implementation; then the rows' total beside measured_us (the run
 * time the caller measured for the same runs; < 0: not shown). */
RtStatus rt_context_profile_print(const RtContext *c, FILE *f, double measured_us);
/* Writes the recorded runs to path as Chrome trace events (one "X" event
 * per step per run, ts/dur in microseconds; Perfetto and chrome://tracing
 * open it), whole or not at all. */
RtStatus rt_context_profile_write_json(RtContext *c, const char *path);
/* The implementation convolution `index` of a context's conv state runs:
 * oneDNN's kernel name ("brg:avx512_core", "jit:avx2"...), or "direct: WHY"
 * (conv.c; what RtProgram.conv_impl points at). */
const char *rt_conv_impl(const void *state, int64_t index);

/* ---- training contexts (train.c) ----
 *
 * A context of a program with `train` set owns a writable copy of every
 * param (never the weights file's mapping) and, per output that updates a
 * param, a spare buffer of the param's size: a step computes the new values
 * into the spares and then swaps each spare with its param's buffer, so
 * the update costs no copy and the next step reads the new values.
 * rt_context_create checks the train descriptor (TGCRT_ERR_ARG when
 * malformed).
 *
 * A CUDA program (--target cuda) keeps its params on the GPU: a step's
 * updates become their values there (written over them by the step's
 * kernel, or copied), and the context's host copies are what the calls
 * below read and write: downloaded when read, uploaded before the next
 * step once handed out by rt_context_param_data or loaded.
 * rt_context_run refuses a CUDA training program (its in-place updates
 * would change the params): use rt_context_train_step. */

/* The bytes a training context allocates beyond an inference context of
 * the same program: the spare buffers, one per output with update_of >= 0,
 * of that output's storage bytes rounded up to 64 (what tgc report adds to
 * the peak). It reads only noutputs, outputs[].desc/.storage, nparams and
 * train->update_of, so a partly filled descriptor will do. 0 for a program
 * without `train`, and for a CUDA program (its updates are device outputs,
 * which tgc report counts as outputs). */
size_t rt_context_train_extra_bytes(const RtProgram *p);
/* Runs one step on inputs (declared dtypes, as rt_context_run takes them).
 * *loss (when loss is not NULL) is the loss as a double. When it is finite
 * the updated params become the params' values; when it is NaN or
 * infinite nothing changes and the status is TGCRT_ERR_VALUE ("the loss is
 * nan", "inf", "-inf"). Index errors are reported as rt_context_run
 * reports them (nothing changes). TGCRT_ERR_ARG for a context whose program
 * has no `train`. */
RtStatus rt_context_train_step(RtContext *c, const void *const *inputs, double *loss);
/* Output i of the last step, at its storage dtype: an output that updates
 * a param is that param's current value (after a refused step: the value
 * before it). NULL before the first step, for an index out of range, or
 * when c is not a training context. */
const void *rt_context_output_data(const RtContext *c, int i);
/* Param i's current buffer at its storage dtype; writing to it sets the
 * param (on CUDA: the host copy, uploaded before the next step; the
 * pointer's contents are current until then). NULL for an index out of
 * range, when c is not a training context (an inference context's params
 * may be a read-only mapping), or when a CUDA download failed
 * (rt_context_error says why: the index and the valid range, ...). */
void *rt_context_param_data(RtContext *c, int i);
/* Copy param i's value (its storage bytes) to dst, or from src: tgc
 * compile's NAME_get_param and NAME_set_param. TGCRT_ERR_ARG, with a
 * message naming the index and the valid range, for an index out of range
 * (or naming the NULL buffer); set_param checks an optimizer state's
 * values as load_params does (TGCRT_ERR_VALUE, nothing changed). */
RtStatus rt_context_get_param(RtContext *c, int i, void *dst);
RtStatus rt_context_set_param(RtContext *c, int i, const void *src);
/* Writes every param whose role is `role` (RtParamRole) to path as
 * safetensors, under its name, at its declared dtype (converted from the
 * storage dtype when they differ; bf16 stays bf16), whole or not at all.
 * Any context: an inference context's params are all RT_ROLE_WEIGHT. */
RtStatus rt_context_save_params(RtContext *c, const char *path, int role);
/* Loads every param whose role is `role` from the safetensors file path:
 * each must be there with the declared shape; a floating one may have
 * another floating dtype (converted). An optimizer state's values must be
 * ones a step can continue from (a step count a non-negative integer, the
 * loss scale positive and normal, a second moment >= 0, the rest finite:
 * TGCRT_ERR_VALUE otherwise; rt_context_create checks states found in its
 * weights file alike). On any error (named: file, tensor, expected and
 * found) no param is changed. Training contexts only (TGCRT_ERR_ARG
 * otherwise). */
RtStatus rt_context_load_params(RtContext *c, const char *path, int role);

/* The main() of a training executable (train_main.c; rt_main calls it when
 * p->train is set): the flags of cli.md "Additions" (--steps, --save-weights,
 * --save-state, --load-state, --log-every). Returns the exit code. */
int rt_train_main(const RtProgram *p, int argc, char **argv);

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
} RtAttnDesc;

/* Bytes of scratch rt_attention needs (the compiler plans them in the
 * arena): per slot, the f32 blocks of q, k, v, the scores, the output
 * accumulator and the row statistics. 0 for a malformed descriptor. */
size_t rt_attention_scratch_bytes(const RtAttnDesc *d);
/* Computes out; scratch holds rt_attention_scratch_bytes(d) bytes, 64-byte
 * aligned. A row whose keys are all masked out is NaN, as in PyTorch; s = 0
 * gives zeros. A malformed descriptor does nothing. */
void rt_attention(const RtAttnDesc *d, const void *q, const void *k, const void *v,
                  const void *mask, void *out, void *scratch, RtPool *pool);

/* ---- CUDA programs (cuda*.c) ----
 *
 * tgc build --target cuda emits, instead of a forward function, the
 * kernels as CUDA C compiled by NVRTC (a CUBIN per chosen architecture and
 * one PTX) and the list of steps one run makes. The runtime loads the CUDA
 * driver with dlopen("libcuda.so.1") (and cuBLAS likewise) only when a
 * context is created, so such executables start anywhere and fail with
 * TGCRT_ERR_DEVICE where there is no driver or GPU.
 *
 * Every RT_CUDA_LAUNCH kernel is `extern "C" __global__ void NAME(char *const
 * *bufs)`: bufs is a device array of device pointers in the CPU forward's
 * order ([0] the arena, then each input, param and output in declaration
 * order, then the error cell, three unsigned long longs: a kernel claims
 * the first with atomicCAS(cell, 0, 1 + i) when index tensor error_names[i]
 * holds a value out of range, and the winner writes the value and its
 * element offset in the index tensor into the other two). */
typedef enum RtCudaStepKind {
    RT_CUDA_LAUNCH, /* kernel<<<grid, block, smem>>>(bufs) */
    RT_CUDA_MATMUL, /* C (+)= A @ B with RtMatmulDesc: cuBLAS, else the module's tg_matmul */
    RT_CUDA_CONV,   /* a convolution (RtConvDesc) through cuDNN, then its epilogue kernel */
} RtCudaStepKind;
/* A device address: bufs[slot] + offset bytes. */
typedef struct RtCudaRef {
    int32_t slot;
    int64_t offset;
} RtCudaRef;
typedef struct RtCudaStep {
    int32_t kind;           /* RtCudaStepKind */
    const char *kernel;     /* LAUNCH: the function's name in the module */
    uint32_t grid, block;   /* LAUNCH: 1-D grid of blocks, threads per block */
    uint32_t smem;          /* LAUNCH: dynamic shared memory, bytes */
    const RtMatmulDesc *mm; /* MATMUL: sizes and element strides, as on the CPU */
    RtCudaRef a, b, c;      /* MATMUL: element 0 of batch 0 of each operand */
    /* CONV: the descriptor (scratch_offset/bytes: rt_cuda_conv_scratch_bytes's
     * plan). kernel, when not NULL, is its epilogue, launched after cuDNN as
     * kernel<<<grid, block>>>(bufs, prepared): bias, batch norm, post-ops
     * and the staged result's window (RtCudaConvGeom); prepared is the
     * context's folded per-channel shift (rt_cuda_conv_prepared_bytes), or
     * NULL. */
    const struct RtConvDesc *conv;
} RtCudaStep;
/* One compiled image of the module: a CUBIN for sm (80 for sm_80...), or
 * PTX (ptx = 1) for compute capability sm and newer, JIT-compiled by the
 * driver when no CUBIN matches the device. */
typedef struct RtCudaImage {
    int32_t sm;
    int32_t ptx;
    const void *data;
    size_t size;
} RtCudaImage;
typedef struct RtCudaProgram {
    const RtCudaImage *images;
    int nimages;
    const RtCudaStep *steps;
    int nsteps;
    const char *const *error_names; /* index tensors' names, for the error cell */
    int nerror_names;
    int cuda_graph; /* tgc build --cuda-graph: the steps are captured once and replayed */
    /* tg_matmul's own program (the products cuBLAS does not take), loaded
     * only when a product needs it; none: tg_matmul is in images. */
    const RtCudaImage *mm_images;
    int nmm_images;
} RtCudaProgram;

/* ---- convolutions of CUDA programs (cuda_conv_plan.c: pure, no GPU) ----
 *
 * cuDNN's legacy API takes a symmetric padding and, for a transposed
 * convolution (cudnnConvolutionBackwardData), an output whose size the
 * forward convolution maps back onto the input. Geometries outside that
 * (a "same" padding with an odd total, an output_padding of at least the
 * stride) compute the raw result into a staging tensor at the scratch's
 * start and let the epilogue kernel copy the window dst needs: dst[h][w]
 * = raw[h + shift[0]][w + shift[1]], 0 where that is outside raw (a
 * transposed convolution's extra rows that no input reaches). */
typedef struct RtCudaConvGeom {
    int32_t staged;      /* 1: cuDNN writes a dense NCHW staging tensor, not dst */
    int64_t pad[2];      /* the symmetric padding cuDNN gets */
    int64_t raw[2];      /* the raw result's spatial size (out when not staged) */
    int64_t shift[2];    /* where dst's first row and column are in raw */
    int64_t stage_bytes; /* the staging tensor, a multiple of 256 (0: not staged) */
    int32_t epilogue;    /* 1: the result needs the epilogue kernel (bias, batch norm,
                          * post-ops or staged) */
} RtCudaConvGeom;
/* false, with why (one line) in why[cap], when cuDNN cannot compute d. */
bool rt_cuda_conv_geom(const RtConvDesc *d, RtCudaConvGeom *g, char *why, size_t cap);
/* The workspace a convolution's cuDNN algorithm may use (its "cap"):
 * src + dst bytes, at least 8 MiB and at most 256 MiB, a multiple of 256.
 * The context picks the fastest algorithm whose workspace fits. */
size_t rt_cuda_conv_workspace_cap(const RtConvDesc *d);
/* The arena scratch a convolution is planned with: its staging tensor (if
 * any) then its workspace cap; 0 for a descriptor cuDNN cannot take. Every
 * convolution gets the largest of these (the arena's shared tail), and its
 * algorithm may use all of it after its staging. */
size_t rt_cuda_conv_scratch_bytes(const RtConvDesc *d);
/* Device bytes a context keeps for a convolution outside the arena: with a
 * batch norm folded into constant weights, the folded weights and the
 * per-channel shift (f32, f64 for f64), each a multiple of 256; else 0. */
size_t rt_cuda_conv_prepared_bytes(const RtConvDesc *d);

/* ---- printing (print.c) ---- */

/* A dense tensor's values as str(tensor) prints them in torch (default
 * print options: 4 decimals, scientific notation when needed, "..." past
 * 1000 elements, dtype= and size= suffixes): "tensor([[0.1000, 0.2000]])".
 * bf16/f16 data are their 16-bit patterns, bool one byte per element.
 * Returns a malloc'd string (free() it), NULL when out of memory or d is
 * invalid. --print writes "NAME: f32[2, 3]" and then this. */
char *rt_tensor_str(const RtDesc *d, const void *data);

#ifdef __cplusplus
}
#endif
#endif
