/* The backend interface: what a code generator (codegen/llvm,
 * codegen/cuda) fills so that one dispatch (codegen/dispatch.c) picks
 * every kernel's generator from the op table (ir/emit.def). A backend
 * holds only what differs: how each kind of kernel is written, and how a
 * copy (codegen/kernel_desc.h's KCopy) is.
 *
 * Kinds are named by ir/emit.def's KERNEL rows, plus elementwise (a fused
 * expression: the EXPR rows). */
#ifndef TGC_CODEGEN_BACKEND_H
#define TGC_CODEGEN_BACKEND_H
#include "codegen/einsum_desc.h"
#include "codegen/kernel_desc.h"

/* Kernels each backend writes itself. */
#define CG_BACKEND_KINDS(X)                                                                        \
    X(elementwise) X(reduce) X(norm) X(qmatmul) X(attention) X(conv) X(slice_write)
/* Kinds the dispatch describes (kernel_desc.c, einsum_desc.c) and writes
 * through the backend's copy, gather, product and contraction. */
#define CG_DESCRIBED_KINDS(X) X(reshape_copy) X(cat) X(repeat) X(flip) X(gather) X(matmul) X(einsum)

typedef enum CgKernelKind {
    CGK_NONE,
#define CGK_ENUM(kind) CGK_##kind,
    CG_BACKEND_KINDS(CGK_ENUM) CG_DESCRIBED_KINDS(CGK_ENUM)
#undef CGK_ENUM
        CGK_COUNT
} CgKernelKind;

typedef struct CgBackend {
    void *ctx; /* the backend's module state: Cg or Cu */
    const CgProgram *p;
    const char *name; /* its name in internal errors: "" or "CUDA " */
    /* By kind, for the CG_BACKEND_KINDS. */
    void (*kernel[CGK_COUNT])(void *ctx, const Value *v);
    void (*copy)(void *ctx, const KCopy *c);
    void (*gather)(void *ctx, const Value *v, KGather *gd);
    /* c = a @ b as mm describes (c already holds a broadcast bias). */
    void (*product)(void *ctx, const MM *mm, const Value *a, const Value *b, const Value *c);
    /* An einsum that is no matrix product. */
    void (*contraction)(void *ctx, KEinsum *e);
    void (*fail)(void *ctx, const char *msg);
} CgBackend;

/* The kind of kernel whose root is v (CGK_NONE: none can compute it). */
CgKernelKind cg_kernel_kind(const Value *v);
/* Writes kernel kn through be. */
void cg_emit_kernel(const CgBackend *be, const Kernel *kn);
#endif
