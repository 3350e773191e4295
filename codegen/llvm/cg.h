/* Internal to the LLVM backend: the module being built, and the kernel
 * being built in it. */
#ifndef TGC_CG_H
#define TGC_CG_H
#include <llvm-c/Core.h>
#include <stdint.h>

#include "codegen/kernel_desc.h"

/* A kernel function kept for later kernels with the same code
 * (kernel_share.c). */
typedef struct CgSharedKernel {
    uint64_t hash;
    char *sig;       /* its scratch module's text */
    LLVMValueRef fn; /* a declaration until its batch is linked, then the definition */
    char name[96];
} CgSharedKernel;

/* The most buffers one kernel reads or writes (its pointer table): fusion
 * caps an expression at FUSION_MAX_NODES, plus the destination, a copy's
 * source and the error cell. */
#define KERN_MAX_BASES (FUSION_MAX_NODES + 8)

typedef struct Cg {
    const CgProgram *p;
    LLVMContextRef ctx;
    LLVMModuleRef mod;       /* where code is built: a kernel's scratch module while it is */
    LLVMModuleRef main_mod;  /* the program's module while a kernel is being built */
    LLVMModuleRef batch_mod; /* new kernels not yet linked into the program (kernel_share.c) */
    int nbatch;
    LLVMBuilderRef b;
    LLVMTypeRef t_void, t_i1, t_i8, t_i16, t_i32, t_i64, t_half, t_f32, t_f64, t_ptr, t_pptr;
    LLVMTypeRef t_kernel;                 /* void (i8* ctx, i64 begin, i64 end, i32 thread) */
    LLVMTypeRef t_pfor;                   /* rt_pool_parallel_for */
    LLVMValueRef fwd_top;                 /* NAME__forward: calls the parts in order (module.c) */
    LLVMTypeRef t_fwd;                    /* void (i8** bufs, i8* pool) */
    int nparts, fwd_steps;                /* parts so far; steps in the current one */
    LLVMValueRef fwd, fwd_bufs, fwd_pool; /* the current part of forward, its arguments */
    LLVMValueRef fwd_prof; /* the part's RtProfile pointer, loaded once (NULL: not profiling) */
    LLVMValueRef fwd_ptrs; /* forward's [KERN_MAX_BASES x i8*]: the pointer table of a call */
    int nkernels;
    CgSharedKernel *shared; /* kernel_share.c */
    int nshared, cap_shared;
    int nlinked; /* shared[0..nlinked) are defined in the program's module */
    bool fail;
    char err[256];
} Cg;

typedef struct Kern {
    Cg *cg;
    LLVMValueRef fn, bufs, begin, end, entry_term;
    LLVMBasicBlockRef entry;
    LLVMValueRef bufs_pp; /* the pointer table as i8** (entry block) */
    /* The pointer table: entry j is bufs[base_slot[j]] + base_off[j] bytes,
     * filled by the caller, loaded once in the entry block (base_val). */
    int nbases;
    int base_slot[KERN_MAX_BASES];
    int64_t base_off[KERN_MAX_BASES];
    LLVMValueRef base_val[KERN_MAX_BASES];
    KSpace sp;               /* the iteration space (codegen/kernel_desc.h) */
    LLVMValueRef idx[KMAXD]; /* the open loops' induction values, NULL when closed */
    /* A copy kernel's source read through another layout than its own. */
    const Value *ov;
    Access ov_access;
    const Value *root; /* the value the kernel computes */
    char name[96];     /* k<N>_<what> */
    /* The whole space is one chunk of the thread pool: loop 0 runs over the
     * constant range [0, ext[0]) and the forward function calls the kernel
     * directly (see kern_open). */
    bool single_chunk;
} Kern;

/* types.c */
LLVMTypeRef cg_ctype(Cg *cg, DType t); /* compute type: f16/bf16 -> float */
LLVMTypeRef cg_stype(Cg *cg, DType t); /* storage type: bool -> i8, f16/bf16 -> i16 */
LLVMValueRef cg_load(Kern *k, LLVMValueRef ptr, DType t);              /* -> compute type */
void cg_store(Kern *k, LLVMValueRef ptr, LLVMValueRef v, DType t);     /* from compute type */
LLVMValueRef cg_convert(Cg *cg, LLVMValueRef v, DType from, DType to); /* compute types */
LLVMValueRef cg_round(Cg *cg, LLVMValueRef v, DType t); /* f16/bf16: round a float to t */
LLVMValueRef cg_const(Cg *cg, DType t, double x);       /* compute type */
LLVMValueRef cg_const_i64(Cg *cg, int64_t x);
LLVMValueRef cg_truthy(Cg *cg, LLVMValueRef v, DType t); /* -> i1 */
LLVMValueRef cg_call(Cg *cg, const char *name, LLVMTypeRef ret, LLVMValueRef *args, int n);
LLVMValueRef cg_intrinsic(Cg *cg, const char *name, LLVMTypeRef t, LLVMValueRef *args, int n);
bool dt_unsigned(DType t);

/* math.c: vectorisable float math (exp, log, tanh, erf) and libm fallbacks */
LLVMValueRef cg_exp(Cg *cg, LLVMValueRef x, DType t);
LLVMValueRef cg_log(Cg *cg, LLVMValueRef x, DType t);
LLVMValueRef cg_tanh(Cg *cg, LLVMValueRef x, DType t);
LLVMValueRef cg_erf(Cg *cg, LLVMValueRef x, DType t);
LLVMValueRef cg_libm1(Cg *cg, const char *fname, LLVMValueRef x, DType t);

/* loops.c */
void kern_begin(Cg *cg, Kern *k, const char *what);
/* The iteration space: shape, which dims reduce, the accesses that must
 * stay affine when dims merge (NULL-terminated list), and whether the
 * expression reads loop indices (then no dims merge). */
void kern_space(Kern *k, const int64_t *shape, int n, const bool *reduced, Access **acc, int nacc,
                bool uses_index);
/* Opens loops [from, to); the first loop runs [begin, end) when from == 0. */
typedef struct LoopNest {
    int from, to;
    LLVMBasicBlockRef header[KMAXD], latch[KMAXD], exit[KMAXD];
    LLVMValueRef phi[KMAXD];
    bool hint; /* force-vectorise the innermost loop (lets float reductions reassociate) */
} LoopNest;
void kern_open(Kern *k, LoopNest *ln, int from, int to, bool vectorize_hint);
/* Marks the loop whose latch branch is br for forced vectorisation. */
void kern_hint_vectorize(Cg *cg, LLVMValueRef br);
void kern_close(Kern *k, LoopNest *ln);
/* Finishes the kernel and calls it from the forward function over its
 * first loop, in parallel when there is enough work. */
void kern_end(Kern *k, int64_t work_per_outer);
/* The same over [0, n) of a kernel that splits its work itself. */
void kern_end_n(Kern *k, int64_t n, int64_t work_per_outer);
/* Work below which a kernel is one chunk (see loops.c, kern_open). */
#define KERN_SINGLE_CHUNK_WORK (32768 / 8)
LLVMValueRef kern_ptr(Kern *k, const Access *a);     /* element address at the open loops */
LLVMValueRef kern_offset(Kern *k, const Access *a);  /* its element offset (i64) */
LLVMValueRef kern_base(Kern *k, const Value *owner); /* i8* of the owner's buffer */
LLVMValueRef kern_slot(Kern *k, int slot);           /* bufs[slot], loaded once per kernel */

/* kernel_share.c: cg_share_begin points cg->mod at a scratch module for one
 * kernel and returns its function; cg_share_end gives back the function to
 * call, named `name` (the kernel, linked into the program's module) or an
 * earlier one with the same code. */
LLVMValueRef cg_share_begin(Cg *cg);
LLVMValueRef cg_share_end(Cg *cg, const char *name);
/* After the last kernel: links what is pending and makes kernels internal. */
void cg_share_finish(Cg *cg);
void cg_share_free(Cg *cg);
/* module.c: after each step's call in forward (starts a new part when the
 * current one is full). */
void cg_fwd_step_done(Cg *cg);
LLVMValueRef kern_dim_index(Kern *k, int dim);      /* i64 index of an original dim */
void access_of(Kern *k, const Value *v, Access *a); /* a value's own layout */
void access_contig(Kern *k, const Value *owner, const int64_t *shape, int n, Access *a);
/* v read as if broadcast to n dims: right-aligned, stride 0 where it has
 * size 1 or no dim. */
void access_right_aligned(Kern *k, const Value *v, int n, Access *a);
LLVMValueRef kern_alloca(Kern *k, LLVMTypeRef t); /* in the entry block */

/* expr.c */
/* v's element at the open loops, in v's compute type; compute: evaluate v's
 * op even if it is not inlined (the kernel's root). */
LLVMValueRef cg_expr(Kern *k, const Value *v, bool compute);

void k_product(Cg *cg, const MM *mm, const Value *a, const Value *b, const Value *c);
void k_qmatmul(Cg *cg, const Value *v);
void k_conv(Cg *cg, const Value *v);
void k_attention(Cg *cg, const Value *v);
void k_slice_write(Cg *cg, const Value *v); /* k_slice_write.c */
LLVMValueRef cg_fwd_ptr(Cg *cg, const Value *v);

/* kernels */
void k_elementwise(Cg *cg, const Value *v);
void k_copy_into(Cg *cg, const Value *src, const Value *dst_owner, int64_t dst_offset,
                 const int64_t *dst_strides, const int64_t *shape, int n);
void k_copy(Cg *cg, const KCopy *c); /* the copies codegen/dispatch.c describes */
void k_reduce(Cg *cg, const Value *v);
/* k_reduce_cols.c: a reduction over leading dims (kd_reduction_by_columns);
 * false, having emitted nothing, when v is not one. */
bool k_reduce_cols(Cg *cg, const Value *v);
/* k_reduce.c: the identity of max (min) in t's compute type. */
LLVMValueRef cg_red_extreme(Cg *cg, DType t, bool is_max);
void k_norm(Cg *cg, const Value *v);
void k_gather(Cg *cg, const Value *v, KGather *gd);
struct KEinsum;
void k_contraction(Cg *cg, struct KEinsum *e); /* k_einsum.c */

DType cg_dt(Cg *cg, const Value *v); /* storage dtype */
/* Records the first failure (kd_fail): printf-like. */
#define cg_fail(cg, ...) kd_fail(&(cg)->fail, (cg)->err, sizeof(cg)->err, __VA_ARGS__)
#endif
