/* Which params the CPU runtime releases after preparing convolutions, and
 * the load's peak (report_process.h). The rule is runtime/conv.c's: a
 * constant convolution oneDNN runs (not f64, which runs the direct loop on
 * the params as they are) folds its weight, bias and batch norm and then
 * hands those params' pages back. A param any other kernel reads comes
 * back on that kernel's first read, so it counts as resident. Weights are
 * assumed read from a file or the embedded image at their storage dtype
 * (mapped, as tgc build's own files are). */
#include "driver/report_process.h"

#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "passes/schedule.h"

/* Whether step s writes a convolution the runtime prepares once. */
static const RtConvDesc *prepared_conv(const CgProgram *cp, const SchedStep *s) {
    for (int w = 0; w < s->nwrites; w++)
        for (int k = 0; k < cp->nconvs; k++)
            if (cp->conv_values[k] == s->writes[w] && cp->convs[k].constant_weights &&
                cp->convs[k].dtype != RT_F64)
                return &cp->convs[k];
    return NULL;
}

void report_process_build(const CgProgram *cp, const DType *dt, bool cuda, ReportProcess *out) {
    memset(out, 0, sizeof *out);
    if (cuda || !cp->nconvs) return;
    const Graph *g = cp->g;
    const Schedule *sc = cp->sched;
    /* By Value.order: 1 read by a prepared conv, 2 read by anything else. */
    unsigned char *seen = calloc((size_t)g->nvalues, 1);
    if (!seen) return;
    for (int i = 0; i < sc->nsteps; i++) {
        const SchedStep *s = &sc->steps[i];
        const RtConvDesc *d = prepared_conv(cp, s);
        for (int j = 0; j < s->nreads; j++) {
            const Value *o = s->reads[j]->storage;
            if (o->op == OP_PARAM) seen[o->order] |= d ? 1 : 2;
        }
        if (d) {
            int64_t plain = d->cout * (d->cin / d->groups) * d->k[0] * d->k[1] * 4;
            if (plain > out->load_plain_bytes) out->load_plain_bytes = plain;
        }
    }
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        /* A param with an initialiser is filled into the context's own
         * memory, which the runtime cannot drop without losing it: it
         * stays (conv.c's MADV_PAGEOUT frees it only to swap). */
        if (v->op != OP_PARAM || v->dead || seen[v->order] != 1 || v->is_output ||
            v->init.kind != INIT_NONE)
            continue;
        bool out_view = false; /* an output viewing the param copies it after the run */
        for (int k = 0; k < g->noutputs && !out_view; k++)
            out_view = g->outputs[k]->storage == v;
        if (out_view) continue;
        out->released_bytes += schedule_value_bytes(v, dt[v->order]);
        out->nreleased++;
    }
    free(seen);
}

/* Peak RSS of small programs less their report's peak, by library set:
 * GNU time's maximum resident set size of executables built by tgc build
 * (Debian's libdnnl 2.6, OpenBLAS 0.3.21 pthreads, glibc 2.36) at --threads
 * 1, 2, 4, 8 and 16, fitted as base + slope x threads; 71 KiB per further
 * oneDNN convolution (8 against 32 convolutions of distinct shapes with
 * batch norm and relu); and OpenBLAS's packing buffer (below). The
 * programs and figures are in docs/memory.md. */
typedef struct LibSet {
    const char *name;
    int64_t base_kib, per_thread_kib;
} LibSet;
static const LibSet LIBSETS[4] = {
    {"libc", 5250, 0},              /* elementwise kernels only */
    {"OpenBLAS", 9356, 240},        /* + matrix products */
    {"oneDNN", 13060, 72},          /* + convolutions */
    {"oneDNN+OpenBLAS", 13300, 60}, /* both */
};
#define PER_CONV_KIB 71
/* OpenBLAS packs the rows side of a product (the m rows of x[m, k] @ w,
 * n in its column-major terms) in blocks of up to GEMM_R rows by GEMM_Q of
 * k, f32, into one buffer it maps once and touches as far as the largest
 * product reaches: min(m, R) x min(k, Q) x 4 bytes. Q is Haswell's 384; R
 * is fitted to ConvNeXt-tiny at batch 16 (m 50176, k 384: 19.2 MiB of the
 * buffer resident), and the 1024 x 1024 products give 1.5 MiB as
 * predicted. */
#define BLAS_Q 384
#define BLAS_R 12970

static int64_t blas_pack_bytes(const Value *v) {
    if (v->op == OP_OUTER || v->op == OP_QMATMUL || v->op == OP_EINSUM || v->nargs < 2 ||
        v->args[0].kind != ARG_TENSOR || v->args[1].kind != ARG_TENSOR || v->ndim < 1)
        return 0;
    const Value *x = v->args[0].t, *w = v->args[1].t;
    if (x->ndim < 1) return 0;
    int64_t k = x->shape[x->ndim - 1], n = v->shape[v->ndim - 1], m;
    if (w->ndim <= 2) /* a weight: the batch dims are rows too */
        m = n ? value_numel(v) / n : 0;
    else
        m = v->ndim >= 2 ? v->shape[v->ndim - 2] : 1;
    return (m < BLAS_R ? m : BLAS_R) * (k < BLAS_Q ? k : BLAS_Q) * 4;
}

void report_process_runtime(ReportProcess *p, const Graph *g, const DType *dt, bool cuda,
                            int threads, int64_t peak) {
    p->has_runtime = false;
    p->peak_bytes = peak;
    if (cuda) return;
    bool blas = false;
    int nconv = 0;
    int64_t pack = 0;
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        if (v->dead) continue;
        int f = op_info(v->op)->flags;
        if (f & OPF_MATMUL) {
            blas = true;
            int64_t b = blas_pack_bytes(v);
            if (b > pack) pack = b;
        }
        nconv += (f & OPF_CONV) != 0;
    }
    int64_t io = 0;
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        if (v->op == OP_INPUT && !v->dead && dt[v->order] != v->dtype)
            io += value_numel(v) * (int64_t)dtype_size(v->dtype);
    }
    for (int i = 0; i < g->noutputs; i++) {
        const Value *v = g->outputs[i];
        if (dt[v->order] != v->dtype) io += value_numel(v) * (int64_t)dtype_size(v->dtype);
    }
    if (threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n < 1 ? 1 : (int)n;
    }
    const LibSet *l = &LIBSETS[(nconv > 0) * 2 + blas];
    p->has_runtime = true;
    p->libraries = l->name;
    p->threads = threads;
    p->nconvs = nconv;
    p->blas_pack_bytes = pack;
    int64_t kib = l->base_kib + l->per_thread_kib * threads +
                  (nconv > 1 ? (int64_t)(nconv - 1) * PER_CONV_KIB : 0);
    p->runtime_bytes = kib * 1024 + pack;
    p->io_declared_bytes = io;
    p->peak_bytes = peak + p->runtime_bytes + io;
}
