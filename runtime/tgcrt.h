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
 * for the validation rules.
 *
 * This is the public embedding API: what a program that links a compiled
 * graph (tgc compile, docs/integration.md) or drives one by hand includes.
 * It includes the ABI that generated code calls (tgcrt_abi.h: dtypes,
 * RtProgram, the kernels' descriptors) and the CUDA programs' descriptor
 * (tgcrt_cuda.h), so that one include still gives everything. */
#ifndef TGCRT_H
#define TGCRT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h> /* FILE: rt_context_profile_print */

#include "tgcrt_abi.h"
#include "tgcrt_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

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

/* ---- contexts: running a compiled program (program.c, cpu_features.c) ---- */

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

/* ---- state kept between runs (params declared `state`: a KV cache) ---- */

/* Zeroes every state of c (what a new context holds). */
RtStatus rt_context_reset_state(RtContext *c);
/* Creates a context of p over owner's params and states (matched by
 * name, declared type and storage dtype: TGCRT_ERR_ARG naming the first
 * that differs), owner's arena (p's must fit in it) and owner's thread
 * pool: two programs over one KV cache (tgc build --generate's prefill
 * and step), run one at a time on one thread. owner must outlive it;
 * destroying it frees only what it owns. */
RtStatus rt_context_create_shared(const RtProgram *p, RtContext *owner, RtContext **out);

/* ---- sampling the next token (sample.c; docs/runtime.md "Generation") ---- */

typedef struct RtSampling {
    double temperature; /* 0: greedy (argmax, first index of the largest); else > 0 */
    int64_t top_k;      /* keep the k largest (and what ties with the k-th); 0: no limit */
    double top_p;       /* keep the smallest most likely set of mass >= top_p; in (0, 1], 1: all */
    uint64_t seed;      /* the draws' seed (row r draws from its own stream) */
} RtSampling;

/* TGCRT_ERR_ARG, saying which, for settings out of the ranges above. */
RtStatus rt_sampling_check(const RtSampling *s, RtError *err);

/* xoshiro256** seeded by splitmix64 from seed XOR ((stream + 1) *
 * 0xD1B54A32D192ED03): a stream per (seed, stream). */
typedef struct RtRng {
    uint64_t s[4];
} RtRng;
void rt_rng_seed(RtRng *r, uint64_t seed, uint64_t stream);
uint64_t rt_rng_next(RtRng *r);
double rt_rng_uniform(RtRng *r); /* (next >> 11) * 2^-53: [0, 1) */

/* torch.argmax of n floating values (f64, f32, f16, bf16): the first index
 * of the largest; a NaN is the largest. */
int64_t rt_argmax(const void *logits, RtDType dt, int64_t n);

/* A sampler over rows of `vocab` logits, one generator per row (0..rows). */
typedef struct RtSampler RtSampler;
RtStatus rt_sampler_create(const RtSampling *s, int64_t vocab, int64_t rows, RtSampler **out,
                           RtError *err);
/* The next token of `row` from its logits (vocab values of dt): greedy at
 * temperature 0, else Hugging Face's order (temperature, top-k, top-p)
 * and one draw of the row's generator from the renormalised rest.
 * TGCRT_ERR_VALUE when sampling meets a NaN or +inf logit, or only -inf. */
RtStatus rt_sampler_next(RtSampler *r, int64_t row, const void *logits, RtDType dt, int64_t *token,
                         RtError *err);
void rt_sampler_destroy(RtSampler *r); /* NULL is fine */

/* ---- generation over an RtGenProgram (gen.c; rt_gen_main is gen_main.c's) ----
 *
 * Two contexts over one set of params and states (the KV cache): the
 * program with the larger arena is created first and owns them, the other
 * is shared over it (rt_context_create_shared). A generation resets the
 * states, runs the prompt through `prefill` in chunks (the last padded
 * with token 0), then `step` once per new token after the first. */
typedef struct RtGen RtGen;
/* Weights from weights_path, else the programs' embedded image, else the
 * initialisers; threads as rt_context_create. On failure *out is still an
 * RtGen (unless out of memory: NULL) whose rt_gen_error says why. */
RtStatus rt_gen_create(const RtGenProgram *g, const char *weights_path, int threads, RtGen **out);
/* The same with the weights as a safetensors image in memory (kept alive
 * by the caller); st NULL: initialisers only. */
RtStatus rt_gen_create_from_memory(const RtGenProgram *g, const void *st, size_t len, int threads,
                                   RtGen **out);
/* Generates max_new tokens after each of `batch` prompts (prompt: i64
 * [batch, prompt_len], 1 <= batch <= g->batch, prompt_len >= 1, ids in
 * [0, vocab), prompt_len + max_new <= g->max_seq) into tokens_out (i64
 * [batch, prompt_len + max_new]: the prompt, then the new tokens). Rows
 * are independent: rows past `batch` of the build's batch run copies of
 * row 0 and are dropped. TGCRT_ERR_SHAPE / TGCRT_ERR_VALUE for prompts
 * out of those ranges, a run's error as rt_context_run gives it. */
RtStatus rt_gen_generate(RtGen *gen, const int64_t *prompt, int64_t batch, int64_t prompt_len,
                         int64_t max_new, const RtSampling *s, int64_t *tokens_out);
/* The last generation's times: the prompt's tokens and the prefill runs'
 * time; the decode's step runs (one per new token after the first, which
 * the prefill's logits give) and their time. Per sequence: a batch of b
 * rows counts its tokens once. */
typedef struct RtGenStats {
    int64_t prefill_tokens, prefill_runs;
    double prefill_ms;
    int64_t decode_tokens;
    double decode_ms;
} RtGenStats;
const RtGenStats *rt_gen_stats(const RtGen *gen);
const char *rt_gen_error(const RtGen *gen); /* "" when none */
/* The prefill's (0) or the step's (1) context, NULL for another index. */
RtContext *rt_gen_context(RtGen *gen, int which);
void rt_gen_destroy(RtGen *gen); /* NULL is fine */

/* ---- profiling a context (profile.c; rt_prof_mark, what the forward
 * calls, is in tgcrt_abi.h) ---- */

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
