/* Internal to the CUDA backend: the module being written (CUDA C source
 * text compiled by NVRTC, plus the run's steps), and the kernel being
 * written in it. Kernels are rendered from the same description as the
 * LLVM ones (codegen/kernel_desc.h): the same fused expression trees,
 * access patterns and merged iteration spaces.
 *
 * Every kernel is `extern "C" __global__ void NAME(char *const *bufs)`
 * where bufs is the device copy of the CPU forward's buffer table
 * (codegen.h): bufs[0] the arena, then inputs, params, outputs, then the
 * error cell (unsigned long long). Text is built with printf-style
 * helpers; every string a helper returns lives in the module's arena. */
#ifndef TGC_CU_H
#define TGC_CU_H
#include <stdarg.h>

#include "codegen/kernel_desc.h"

/* A growing string. */
typedef struct Sb {
    char *s;
    size_t len, cap;
} Sb;
void sb_printf(Sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vprintf(Sb *b, const char *fmt, va_list ap);
void sb_free(Sb *b);

enum { CU_LAUNCH, CU_MATMUL, CU_CONV }; /* RtCudaStepKind's values */

/* One step of a run, in order (the glue writes them as RtCudaStep). */
typedef struct CuStep {
    int kind;
    const char *kernel;
    int64_t grid;
    int block, smem;
    MM mm;
    int slot[3]; /* MATMUL: a, b, c */
    int64_t off[3];
    int conv; /* CONV: the index in p->convs (kernel: its epilogue, or NULL) */
} CuStep;

typedef struct Cu {
    const CgProgram *p;
    Arena *a; /* strings */
    Sb src;   /* the module: the prelude, then every kernel */
    CuStep *steps;
    int nsteps, cap;
    int nkernels;
    const char **error_names; /* index tensors' names, for the error cell */
    int nerror_names, error_cap;
    int smem_max; /* dynamic shared memory a kernel may take (cu_attention_smem_limit) */
    bool fail;
    char err[256];
} Cu;

#define CU_MAX_VLOADS 96

/* The kernel being written. Threads map onto the iteration space as the
 * kernel's shape requires: cuk_elementwise_begin gives each thread one
 * element of all loops; a reduction gives each block a row of the kept
 * loops and lets its threads stride over the reduced ones. While a loop's
 * index is defined, its C variable is named by cuk_idx(k, l). */
typedef struct CuKern {
    Cu *cu;
    char name[96];
    KSpace sp;
    const Value *ov; /* a copy kernel's source, read through ov_access */
    Access ov_access;
    const Value *root; /* the value the kernel computes */
    Sb head;           /* declarations at the top of the kernel */
    Sb body;           /* the statements so far */
    int ntmp;
    int indent;
    bool open[KMAXD]; /* loop l's index variable is defined */
    bool wide;        /* 64-bit index arithmetic (a large tensor) */
    bool uses_index;  /* the expression reads dim indices: no vector lanes */
    /* Vector lanes (elementwise kernels): each thread computes vec
     * consecutive elements of the innermost loop, lane by lane; lane 0's
     * loads of unit-stride operands fetch whole vectors that later lanes
     * reuse, and the last lane stores the output vector. lane < 0: none. */
    int vec, lane, nvload;
    const char *vloads[CU_MAX_VLOADS];
    const char *vstore;
    int64_t total; /* threads' work items */
} CuKern;

/* Records the first failure (kd_fail): printf-like. */
#define cu_fail(cu, ...) kd_fail(&(cu)->fail, (cu)->err, sizeof(cu)->err, __VA_ARGS__)
char *cu_str(Cu *cu, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- types (cu_types.c) ---- */
const char *cu_ctype(DType t); /* compute type: bool, int, float (f16/bf16), ... */
const char *cu_stype(DType t); /* storage type: unsigned char (bool), unsigned short (f16/bf16) */
/* A literal of dtype t in compute type ("1.5f", "(long long)3", "true";
 * inf and nan spelled with the prelude's constants). */
const char *cu_const(Cu *cu, DType t, double x);
/* x (compute type of from) converted to the compute type of to, with
 * PyTorch's rules (bool: x != 0; to f16/bf16: rounded once). */
const char *cu_convert(CuKern *k, const char *x, DType from, DType to);
/* f16/bf16: x rounded to t (other dtypes: x). */
const char *cu_round(CuKern *k, const char *x, DType t);

/* ---- kernels (cu_kernel.c) ---- */
void cuk_begin(Cu *cu, CuKern *k, const char *what);
/* Appends a statement line (indented, newline added). */
void cuk_emit(CuKern *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Declares a fresh temporary "ctype tN = expr;" and returns "tN". */
const char *cuk_tmp(CuKern *k, DType t, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A temporary of a C type given by name (accumulators: "float", "long long"). */
const char *cuk_tmp_c(CuKern *k, const char *ctype, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *cuk_idx(CuKern *k, int loop);    /* "i3" */
const char *cuk_index_type(const CuKern *k); /* "int" or "long long" */
/* Whether a kernel over sp touching acc needs 64-bit index arithmetic. */
bool cuk_needs_wide(const KSpace *sp, Access **acc, int nacc);
/* The C expression of a's element offset at the open loops. */
const char *cuk_offset(CuKern *k, const Access *a);
/* A typed pointer expression to a's buffer at element 0, e.g.
 * "((const float *)(bufs[0] + 4096))". */
const char *cuk_base(CuKern *k, const Access *a, bool writable);
/* Loads a's element at the open loops: returns a temporary in the compute
 * type of a->dt. */
const char *cuk_load(CuKern *k, const Access *a);
/* Loads element `off` (a C expression) of a's buffer. */
const char *cuk_load_at(CuKern *k, const Access *a, const char *off);
/* Stores x (compute type of from) into a's element at the open loops. */
void cuk_store(CuKern *k, const Access *a, const char *x, DType from);
/* The index of an original dim (unmerged: only asked for when an
 * expression reads indices, and then no dims merge). */
const char *cuk_dim_index(CuKern *k, int dim);
/* Elementwise kernels: one thread per element (or per vec elements) of
 * every loop; defines the loop indices. acc: every access the kernel
 * makes (to choose 32/64-bit indices and vector lanes); set k->uses_index
 * first when the expression reads indices. Then, per lane l in [0,
 * k->vec): cuk_lane_begin(k, l), the element's statements (cu_expr,
 * cuk_load, cuk_store); cuk_elementwise_end closes the thread's loop and
 * finishes the kernel with its launch. */
void cuk_elementwise_begin(CuKern *k, Access **acc, int nacc);
/* The same mapping over loops [0, nloops) only and never with vector
 * lanes (a kernel that walks the other loops itself, as einsum's sums). */
void cuk_threads_begin(CuKern *k, int nloops, Access **acc, int nacc);
void cuk_lane_begin(CuKern *k, int lane);
void cuk_elementwise_end(CuKern *k);
/* Finishes a kernel written by hand (reductions): wraps head and body in
 * the function and adds a launch of grid x block threads, smem bytes. */
void cuk_finish(CuKern *k, int64_t grid, int block, int smem);
/* Registers an index tensor's name for the error cell: the kernel sets the
 * cell with atomicCAS(err, 0ULL, (unsigned long long)RETURNED). */
int cu_error_code(Cu *cu, const char *tensor_name);
/* "((unsigned long long *)bufs[E])": the error cell. */
const char *cuk_error_cell(CuKern *k);

/* ---- expressions (cu_expr.c) ---- */
/* v's element at the open loops, in v's compute type (a temporary or a
 * literal); compute: evaluate v's op even if it is not inlined (the
 * kernel's root). */
const char *cu_expr(CuKern *k, const Value *v, bool compute);
/* The device functions every module starts with (conversions, rounding,
 * integer division, float helpers): NUL-terminated CUDA C. */
extern const char cu_prelude[];

/* ---- kernels by kind ---- */
void cu_k_elementwise(Cu *cu, const Value *v); /* cu_copy.c */
void cu_k_copy(Cu *cu, const KCopy *c);        /* the copies codegen/dispatch.c describes */
void cu_k_broadcast_into(Cu *cu, const Value *src, const Value *dst);
void cu_k_reduce(Cu *cu, const Value *v); /* cu_reduce.c */
void cu_k_norm(Cu *cu, const Value *v);
void cu_k_gather(Cu *cu, const Value *v, KGather *gd); /* cu_gather.c */
struct KEinsum;
void cu_k_contraction(Cu *cu, struct KEinsum *e); /* cu_einsum.c */
/* A product step's operand: v's buffer slot and byte offset (its view offset included). */
void cu_operand(Cu *cu, const Value *v, int *slot, int64_t *off);
void cu_k_product(Cu *cu, const MM *mm, const Value *a, const Value *b, const Value *c);
void cu_k_conv(Cu *cu, const Value *v); /* cu_conv.c */
/* Why cuDNN cannot take one of p's convolutions (a user-facing message,
 * naming the op and its line), or NULL. */
const char *cu_conv_unsupported(const CgProgram *p);
void cu_k_attention(Cu *cu, const Value *v); /* cu_attention.c */
/* attention_backward: two kernels (cu_attention_bwd.c), called by cu_k_attention. */
void cu_k_attention_bwd(Cu *cu, const Value *v);
void cu_k_qmatmul(Cu *cu, const Value *v);     /* cu_qmatmul.c */
void cu_k_slice_write(Cu *cu, const Value *v); /* cu_slice_write.c */
/* The dynamic shared memory (bytes) a block may take on every GPU that
 * the images of archs may run on. */
int cu_attention_smem_limit(const int *archs, int narchs);
/* Why an attention of p cannot be compiled (a user-facing message naming
 * the op and its location), or NULL. */
const char *cu_attention_unsupported(const CgProgram *p, int smem_max);
#endif
