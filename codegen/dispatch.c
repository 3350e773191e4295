/* The one dispatch from ops to kernels (codegen/backend.h): the kind
 * comes from ir/emit.def; copies, gathers, products and einsums are described
 * here (kernel_desc.c, einsum_desc.c) and written by the backend's copy,
 * gather, product and contraction, every other kind by the backend. */
#include <stdio.h>
#include <stdlib.h>

#include "codegen/backend.h"

static const unsigned char kernel_kind[OP_COUNT] = {
#define KERNEL(op, kind) [OP_##op] = CGK_##kind,
#include "ir/emit.def"
};

CgKernelKind cg_kernel_kind(const Value *v) {
    if (fusion_is_expression(v)) return CGK_elementwise;
    return (unsigned)v->op < OP_COUNT ? (CgKernelKind)kernel_kind[v->op] : CGK_NONE;
}

/* cat/concat/stack: a copy per non-empty operand. */
static void emit_cat(const CgBackend *be, const Value *v) {
    KCopy *parts = calloc((size_t)v->args[0].n + 1, sizeof *parts);
    if (!parts) {
        be->fail(be->ctx, "out of memory");
        return;
    }
    int n = kd_cat(be->p, v, parts);
    for (int i = 0; i < n; i++)
        be->copy(be->ctx, &parts[i]);
    free(parts);
}

/* Products: linear's bias broadcast into the output first (a copy), then
 * the product accumulating onto it. */
static void emit_matmul(const CgBackend *be, const Value *v) {
    MM mm;
    const Value *bias;
    char err[128];
    if (!kd_matmul(be->p, v, &mm, &bias, err, sizeof err)) {
        be->fail(be->ctx, err);
        return;
    }
    if (bias) {
        KCopy c;
        kd_broadcast_into(be->p, bias, v, &c);
        be->copy(be->ctx, &c);
    }
    be->product(be->ctx, &mm, v->in[0], v->in[1], v);
}

/* einsum: a matrix-product-shaped equation is a product, any other a
 * contraction. */
static void emit_einsum(const CgBackend *be, const Value *v) {
    KEinsum e;
    char err[128];
    if (!kd_einsum(be->p, v, &e, err, sizeof err)) {
        be->fail(be->ctx, err);
        return;
    }
    const Arg *ops = &v->args[1];
    if (e.is_matmul)
        be->product(be->ctx, &e.mm, ops->ts[0], ops->ts[1], v);
    else
        be->contraction(be->ctx, &e);
}

void cg_emit_kernel(const CgBackend *be, const Kernel *kn) {
    const Value *v = kn->root;
    KCopy c;
    if (kn->out_copy >= 0) {
        kd_output_copy(be->p, v, kn->out_copy, &c);
        be->copy(be->ctx, &c);
        return;
    }
    CgKernelKind kind = cg_kernel_kind(v);
    switch (kind) {
    case CGK_reshape_copy: kd_reshape_copy(be->p, v, &c); break;
    case CGK_repeat: kd_repeat(be->p, v, &c); break;
    case CGK_flip: kd_flip(be->p, v, &c); break;
    case CGK_cat: emit_cat(be, v); return;
    case CGK_gather: {
        KGather gd;
        kd_gather(be->p, v, &gd);
        be->gather(be->ctx, v, &gd);
        return;
    }
    case CGK_matmul: emit_matmul(be, v); return;
    case CGK_einsum: emit_einsum(be, v); return;
    default:
        if (kind != CGK_NONE && be->kernel[kind]) {
            be->kernel[kind](be->ctx, v);
        } else {
            char msg[160];
            snprintf(msg, sizeof msg, "internal: no %scode generator for op '%s'", be->name,
                     op_display_name(v));
            be->fail(be->ctx, msg);
        }
        return;
    }
    be->copy(be->ctx, &c);
}
