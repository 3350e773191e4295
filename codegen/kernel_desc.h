/* The kernel description both backends render (LLVM for the CPU, CUDA C
 * for the GPU): for each kernel of the fusion plan, the tensors it touches
 * as access patterns (owner, dtype, offset, strides) over its iteration
 * space, that space with adjacent dims merged where every access allows
 * it, the reduced dims and output layout of reductions and norms, and the
 * descriptor of matrix products. Fusion, view folding and this indexing
 * logic exist once; a backend only decides how to walk the space. */
#ifndef TGC_KERNEL_DESC_H
#define TGC_KERNEL_DESC_H
#include "codegen/codegen.h"

#define KMAXD 32 /* iteration dims: repeat splits each of 12 dims in two */

/* One access pattern of a tensor over the kernel's iteration dims. */
typedef struct Access {
    const Value *owner; /* storage owner: selects the buffer */
    int slot;           /* > 0: bufs[slot] itself (an output copy's destination) */
    DType dt;           /* storage dtype of the elements */
    int64_t offset;     /* elements */
    int64_t strides[KMAXD];
} Access;

/* The iteration space: original dims, and the loops that walk them (kept
 * dims first, then reduced ones; each loop one or more merged dims). */
typedef struct KSpace {
    int n;
    int64_t shape[KMAXD];
    bool reduced[KMAXD]; /* dims a reduction runs over (innermost loops) */
    int nloops, nkept;   /* loops [0, nkept) are kept dims, the rest reduced */
    int64_t ext[KMAXD];
    int inner_dim[KMAXD]; /* innermost original dim of each loop (-1: a dummy loop) */
    int loop_of_dim[KMAXD];
    bool coalesced;
} KSpace;

/* Merges adjacent dims of the same class that every access (acc, nacc)
 * walks as one; uses_index: the expression reads dim indices (no merging).
 * A space with no kept dim gets a dummy first loop of one iteration. */
void kspace_build(KSpace *s, const int64_t *shape, int n, const bool *reduced, Access **acc,
                  int nacc, bool uses_index);
/* Orders s's kept loops by dst's strides, the largest outermost (the
 * reduced loops stay inside, as they were). */
void kspace_order_by(KSpace *s, const Access *dst);
int64_t kspace_work_inner(const KSpace *s); /* iterations of loops [1, nloops) */

DType kd_dt(const CgProgram *p, const Value *v); /* storage dtype */
/* Records the first failure of a module's code generation: sets *fail and
 * formats the message into err (n bytes); later ones are dropped, the
 * first being the cause. cg_fail and cu_fail are this on Cg and Cu. */
void kd_fail(bool *fail, char *err, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* v's argument i as a number (ints and bools too), or dflt when absent. */
double kd_num_arg(const Value *v, int i, double dflt);
bool kd_unsigned(DType t);
void kd_access_of(const CgProgram *p, const Value *v, Access *a); /* v's own layout */
void kd_access_contig(const CgProgram *p, const Value *owner, const int64_t *shape, int n,
                      Access *a);
/* v read as if broadcast to n dims: right-aligned, stride 0 where it has
 * size 1 or no dim. */
void kd_access_right_aligned(const CgProgram *p, const Value *v, int n, Access *a);
/* The leaves an expression rooted at v reads (inlined operands are walked
 * through; literals and the override value ov are skipped). */
int kd_collect_leaves(const CgProgram *p, const Value *v, const Value *ov, Access *out, int max,
                      bool *uses_index);
/* The accesses of a kernel storing src into dst, in acc: src's leaves
 * (into leaves) when computed, else src itself unless it is the override
 * value ov; then dst; then ov's access when ov is set. Returns how many. */
#define KD_STORE_LEAVES 64
int kd_store_accesses(const CgProgram *p, const Value *src, bool compute, const Value *ov,
                      Access *ov_access, Access *dst, Access leaves[KD_STORE_LEAVES],
                      Access *acc[KD_STORE_LEAVES + 2], bool *uses_index);
/* True when v's element expression reads its own indices (arange, eye,
 * tensor literals, tril/triu). */
bool kd_uses_index(const Value *v);
bool kd_is_inlined(const CgProgram *p, const Value *v);
/* Where an owner's storage is: bufs[*slot] + the returned byte offset. */
int64_t kd_buffer(const CgProgram *p, const Value *owner, int *slot);

/* Reductions and norms: x's dims, those reduced, the output addressed over
 * x's dims (dst), the row-major index over the reduced dims (lin, for
 * argmax), the norms' weight and bias (aux) and the space over all of it. */
typedef struct KReduce {
    const Value *v, *x;
    DType xt;      /* the input's storage dtype */
    Access dst;    /* the output over the input's dims */
    Access lin;    /* row-major index over the reduced dims (argmax/argmin) */
    Access aux[2]; /* weight and bias of the norms */
    int naux;
    bool aux_is_bias[2];
    int64_t count; /* elements per reduction */
    KSpace space;
} KReduce;
/* same_shape_out: the output has x's shape (softmax, the norms). */
void kd_reduction(const CgProgram *p, const Value *v, bool same_shape_out, KReduce *r);
void kd_reduced_dims(const Value *v, const Value *x, bool *red);
/* Whether a reduction reads its input along the innermost kept loop
 * (space.nkept - 1) with a smaller stride than along any reduced loop: a
 * sum over the leading dims of a contiguous tensor (a bias gradient). Such
 * a reduction is better walked reduced loops outside, kept loop inside,
 * accumulating a row of outputs at once (the LLVM backend's
 * k_reduce_cols.c). Decided by the input's leaves, each voting by its own
 * strides; leaves broadcast over the reduced dims do not vote. */
bool kd_reduction_by_columns(const CgProgram *p, const KReduce *r);

/* A copy that is elementwise over another layout: src's elements over
 * `shape` stored through dst. src is read through src_access when
 * through_src (repeat, flip, broadcasts), else through its own layout. */
typedef struct KCopy {
    const Value *src;
    const char *what; /* the kernel's name */
    Access dst, src_access;
    bool through_src;
    int64_t shape[KMAXD];
    int n;
} KCopy;
/* Output #out_index (a value's layout) into its caller-owned buffer. */
void kd_output_copy(const CgProgram *p, const Value *o, int out_index, KCopy *c);
/* A reshape copy: the input's elements in row-major order. */
void kd_reshape_copy(const CgProgram *p, const Value *v, KCopy *c);
/* cat/concat/stack: one copy per non-empty operand; returns how many were
 * written into parts (at most v's operand count). */
int kd_cat(const CgProgram *p, const Value *v, KCopy *parts);
void kd_repeat(const CgProgram *p, const Value *v,
               KCopy *c);                                   /* each dim split into repeat x size */
void kd_flip(const CgProgram *p, const Value *v, KCopy *c); /* negative strides */
/* src right-aligned and broadcast (stride 0) into dst_v's buffer: linear's bias. */
void kd_broadcast_into(const CgProgram *p, const Value *src, const Value *dst_v, KCopy *c);

/* gather, index_select, embedding and x[idx]: each output element reads
 * one index (ia), then the source (xa, which walks every dim but the
 * indexed one) plus index * dim_stride. size: the indexed dim's extent;
 * wrap: negative indices count from the end (x[idx] only); what: the
 * index tensor as the run's error message names it. */
typedef struct KGather {
    const Value *x, *idx;
    Access xa, ia, dst;
    int64_t size, dim_stride;
    bool wrap;
    /* The index-error description (runtime/rt_index_error.h): the index
     * tensor's shape and strides, then the message. */
    char what[768];
    KSpace space;
} KGather;
void kd_gather(const CgProgram *p, const Value *v, KGather *g);

/* A matrix product: the layout of runtime/tgcrt.h's RtMatmulDesc, so a
 * backend can emit it as a constant i64 array. */
#define MAXB 10
typedef struct MM {
    int64_t dtype, m, n, k;
    int64_t a_rs, a_cs, b_rs, b_cs, c_rs, c_cs;
    int64_t accumulate, nbatch;
    int64_t batch[MAXB], a_bs[MAXB], b_bs[MAXB], c_bs[MAXB];
} MM;
/* matmul/mm/bmm/mv/outer/linear: the descriptor of C = A @ B (operands
 * v->in[0], v->in[1], result v) and linear's bias to broadcast into C
 * first (then mm->accumulate is 1). False with a message in err when the
 * product has more batch dims than the descriptor holds. */
bool kd_matmul(const CgProgram *p, const Value *v, MM *mm, const Value **bias, char *err,
               size_t nerr);
/* The rows of x [..., k] in a product with a 2-D weight whose output has
 * contiguous strides cs (see kernel_desc.c). */
int64_t kd_lead_rows(const Value *x, const int64_t *cs, int64_t *rs, int64_t *nbatch,
                     int64_t *batch, int64_t *x_bs, int64_t *y_bs);

/* A product with a quantized weight (passes/quantize.c): the layout of
 * runtime/tgcrt.h's RtQMatmulDesc. */
typedef struct QMM {
    int64_t x_dtype, y_dtype, m, n, k;
    int64_t x_rs, x_cs, y_rs, y_cs;
    int64_t bits, group, accumulate, nbatch;
    int64_t batch[MAXB], x_bs[MAXB], y_bs[MAXB];
} QMM;
/* qmatmul v: y = x @ dequant(q)^T with x = v->in[0], leading dims of x
 * folded into m when evenly strided (else batch dims); *bias is linear's
 * bias to broadcast into y first (then d->accumulate is 1), or NULL. */
void kd_qmatmul(const CgProgram *p, const Value *v, QMM *d, const Value **bias);
/* Its rows: m times the batch dims. */
int64_t cg_qmm_rows(const QMM *d);
/* On CUDA, up to this many rows read the quantized weight in place
 * (cu_qmatmul.c's k*_qmm); more are dequantized into the scratch tail
 * for cuBLAS when x and y have one dtype. Not measured on a GPU yet. */
#define CG_CUDA_QMM_DIRECT_ROWS 16
bool cg_cuda_qmm_dequantizes(const QMM *d);
#endif
