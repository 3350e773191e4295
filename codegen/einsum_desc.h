/* einsum's kernel description, shared by the backends (LLVM for the CPU,
 * CUDA C for the GPU): the equation parsed into iteration dims, the
 * matrix-product form when the equation has one, and otherwise the
 * generic contraction's accesses and iteration space. A backend only
 * renders one or the other. */
#ifndef TGC_EINSUM_DESC_H
#define TGC_EINSUM_DESC_H
#include "codegen/kernel_desc.h"

#define KEIN_MAXOPS TG_EINSUM_MAX_OPERANDS
/* Subscript codes: letters are their character, ellipsis dims 128 + i. */
#define KEIN_NCODES (128 + TG_MAX_DIMS)

typedef struct KEinsum {
    int nops;
    /* Every subscript (and each ellipsis dim) is an iteration dim: output
     * dims first (no of them), then the summed ones. */
    int n, no;
    int64_t shape[KMAXD];
    bool red[KMAXD];
    int code[KMAXD];                     /* subscript of each iteration dim */
    unsigned in_ops[KEIN_NCODES];        /* operands holding each subscript (bit k) */
    bool repeated;                       /* a subscript twice in one operand */
    int64_t strides[KEIN_MAXOPS][KMAXD]; /* per operand, per iteration dim */
    /* is_matmul: C = A @ B with mm (operands 0 and 1, result v). Else the
     * generic contraction: op[o] and dst over the iteration dims, the
     * space (summed dims are the reduced ones) and the accumulator's
     * dtype (f32, f64 for f64, i64 for integers and bool). */
    bool is_matmul;
    MM mm;
    Access op[KEIN_MAXOPS], dst;
    DType at;
    KSpace space;
} KEinsum;

/* Describes einsum v. False with a message in err when the equation is
 * beyond the description (more than KEIN_MAXOPS operands). */
bool kd_einsum(const CgProgram *p, const Value *v, KEinsum *e, char *err, size_t nerr);
#endif
