/* The profiler's step table (RtStepInfo, runtime/tgcrt.h): one row per
 * kernel of the plan, in the order the forward runs them, naming what the
 * profiler prints beside each step's time: the ops fused into the kernel,
 * the value it computes and its place in the .tg file, the shapes written
 * and read, which implementation runs it, and its FLOPs and bytes (for
 * GFLOP/s and GB/s). The LLVM backend marks the start of kernel i as step
 * i (codegen/llvm/module.c), so the two walk the same list. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/kernel_desc.h"
#include "ir/state.h"
#include "passes/flops.h"

/* A growing string (the op list and the shapes can be long). */
typedef struct Str {
    char *s;
    size_t n, cap;
} Str;

static void str_add(Str *b, const char *t) {
    size_t l = strlen(t);
    if (b->n + l + 1 > b->cap) {
        b->cap = (b->n + l + 1) * 2;
        b->s = realloc(b->s, b->cap);
        TGC_ASSERT(b->s);
    }
    memcpy(b->s + b->n, t, l + 1);
    b->n += l;
}

static void str_type(Str *b, DType dt, const Value *v) {
    char t[32];
    str_add(b, dtype_name(dt));
    str_add(b, "[");
    for (int d = 0; d < v->ndim; d++) {
        snprintf(t, sizeof t, "%s%" PRId64, d ? ", " : "", v->shape[d]);
        str_add(b, t);
    }
    str_add(b, "]");
}

static double nbytes(const CgProgram *p, const Value *v) {
    double n = (double)dtype_size(p->dt[v->order]);
    for (int d = 0; d < v->ndim; d++)
        n *= (double)v->shape[d];
    return n;
}

/* The values computed by the kernel whose root is v: v and the operands
 * inlined into it (kd_collect_leaves' walk), operands first. */
static void fused_ops(const CgProgram *p, const Value *v, Str *ops, double *flops, int depth) {
    if (depth < 64 && !(op_info(v->op)->flags & OPF_CREATION))
        for (int i = 0; i < v->nin; i++)
            if (v->in[i]->storage->op != OP_SCALAR && kd_is_inlined(p, v->in[i]))
                fused_ops(p, v->in[i], ops, flops, depth + 1);
    if (ops->n) str_add(ops, "+");
    str_add(ops, op_display_name(v));
    *flops += (double)flops_value(v);
}

static const char *impl_of(const CgProgram *p, const Kernel *kn) {
    const Value *v = kn->root;
    if (kn->out_copy >= 0) return "generated copy";
    bool f64 = p->dt[v->order] == DT_F64, f32 = p->dt[v->order] == DT_F32;
    bool lowp = p->dt[v->order] == DT_F16 || p->dt[v->order] == DT_BF16;
    switch (v->op) {
    case OP_MATMUL:
    case OP_MM:
    case OP_BMM:
    case OP_MV:
    case OP_OUTER:
    case OP_LINEAR:
        return f64    ? "rt_matmul: BLAS dgemm"
               : f32  ? "rt_matmul: BLAS sgemm"
               : lowp ? "rt_matmul: f32 BLAS sgemm, rounded"
                      : "rt_matmul: integer loop";
    case OP_QMATMUL: {
        /* rt_qmatmul's two regimes, by its rows (tgcrt_abi.h) */
        QMM d;
        const Value *bias;
        kd_qmatmul(p, v, &d, &bias);
        return cg_qmm_rows(&d) <= RT_QMATMUL_GEMV_MAX_ROWS
                   ? "rt_qmatmul: weights read in place"
                   : "rt_qmatmul: dequantized blocks, BLAS sgemm";
    }
    case OP_SDPA: return "rt_attention: flash attention";
    case OP_SDPA_DROP: return "rt_attention: flash attention, dropout per tile";
    case OP_SDPA_BWD: return "rt_attention_backward: flash attention backward";
    case OP_EINSUM: return "generated contraction";
    case OP_SLICE_SCATTER: return "rt_slice_write: slice write";
    case OP_CONV1D:
    case OP_CONV2D:
    case OP_CONV_TRANSPOSE1D:
    case OP_CONV_TRANSPOSE2D: return f64 ? "rt_conv: direct loop (f64)" : "rt_conv: oneDNN";
    default: break;
    }
    if (fusion_is_expression(v)) return "generated elementwise";
    if (op_info(v->op)->flags & OPF_REDUCTION) return "generated reduction";
    switch (v->op) {
    case OP_SOFTMAX:
    case OP_LOG_SOFTMAX:
    case OP_LAYER_NORM:
    case OP_RMS_NORM: return "generated norm";
    case OP_GATHER:
    case OP_INDEX_SELECT:
    case OP_EMBEDDING:
    case OP_INDEX: return "generated gather";
    default: return "generated copy";
    }
}

static void write_step(FILE *f, const CgProgram *p, const Kernel *kn) {
    const Value *v = kn->root;
    Str ops = {0}, shapes = {0};
    double flops = 0, bytes = nbytes(p, v);
    char t[64];
    if (kn->out_copy >= 0) {
        str_add(&ops, "copy to output");
    } else {
        fused_ops(p, v, &ops, &flops, 0);
    }
    str_type(&shapes, p->dt[v->order], v);
    /* What the kernel reads: the schedule's operands (an output copy reads
     * the value it copies). */
    int nreads = kn->out_copy >= 0 ? 1 : kn->step.nreads;
    for (int i = 0; i < nreads; i++) {
        const Value *r = kn->out_copy >= 0 ? v : kn->step.reads[i];
        str_add(&shapes, i ? ", " : " <- ");
        str_type(&shapes, p->dt[r->order], r);
        bytes += nbytes(p, r);
    }
    /* An in-place update moves its slice, not the state: src read, written. */
    if (kn->out_copy < 0 && ir_is_state_update(v)) bytes = 2 * nbytes(p, v->args[1].t);
    fputs("    {", f);
    cg_write_c_string(f, ops.s);
    fputs(", ", f);
    if (v->name) {
        cg_write_c_string(f, v->name);
    } else {
        snprintf(t, sizeof t, "%%%d", v->id);
        cg_write_c_string(f, t);
    }
    fputs(", ", f);
    if (v->loc.file && v->loc.line > 0) {
        const char *path = v->loc.file->path ? v->loc.file->path : "?";
        const char *base = strrchr(path, '/');
        Str w = {0};
        str_add(&w, base ? base + 1 : path);
        snprintf(t, sizeof t, ":%d", v->loc.line);
        str_add(&w, t);
        cg_write_c_string(f, w.s);
        free(w.s);
    } else {
        fputs("\"\"", f);
    }
    fputs(", ", f);
    cg_write_c_string(f, shapes.s);
    fputs(", ", f);
    cg_write_c_string(f, impl_of(p, kn));
    int conv = kn->out_copy < 0 && (op_info(v->op)->flags & OPF_CONV) ? cg_conv_index(p, v) : -1;
    fprintf(f, ", %d, %.17g, %.17g},\n", conv, flops, bytes);
    free(ops.s);
    free(shapes.s);
}

void cg_write_steps(FILE *f, const CgProgram *p) {
    const KernelPlan *kp = p->kp;
    fprintf(f, "\nstatic const RtStepInfo tgc_steps[%d] = {\n",
            kp->nkernels > 0 ? kp->nkernels : 1);
    for (int i = 0; i < kp->nkernels; i++)
        write_step(f, p, &kp->kernels[i]);
    if (!kp->nkernels) fputs("    {0},\n", f);
    fputs("};\n", f);
}

int cg_profile_slot(const CgProgram *p) {
    return p->iface.nslots;
}

void cg_write_profile_api(FILE *f, const CgProgram *p) {
    fprintf(f,
            "int %1$s_profile(%1$s_ctx *ctx, int on) {\n"
            "    return (int)rt_context_profile((RtContext *)ctx, on != 0);\n}\n"
            "int %1$s_profile_print(const %1$s_ctx *ctx, FILE *f, double measured_us) {\n"
            "    return (int)rt_context_profile_print((const RtContext *)ctx, f, measured_us);\n}\n"
            "int %1$s_profile_write_json(%1$s_ctx *ctx, const char *path) {\n"
            "    return (int)rt_context_profile_write_json((RtContext *)ctx, path);\n}\n",
            p->g->name);
}

void cg_write_profile_decls(FILE *f, const CgProgram *p) {
    fprintf(f,
            "/* The profiler: %1$s_profile(ctx, 1) records the time of every step of every\n"
            " * later run (0 stops; 1 again starts afresh); %1$s_profile_print writes the\n"
            " * table (steps sorted by median time, with their op, .tg line, shapes,\n"
            " * implementation, share, GFLOP/s and GB/s; measured_us, the run time you\n"
            " * measured for the same runs, is printed beside the total, < 0: not);\n"
            " * %1$s_profile_write_json writes Chrome trace events (Perfetto). */\n"
            "int %1$s_profile(%1$s_ctx *ctx, int on);\n"
            "int %1$s_profile_print(const %1$s_ctx *ctx, FILE *f, double measured_us);\n"
            "int %1$s_profile_write_json(%1$s_ctx *ctx, const char *path);\n\n",
            p->g->name);
}
