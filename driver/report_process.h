/* tgc report: what the executable's process holds beyond the planned
 * buffers (issue 32): which params the runtime releases once their
 * prepared copies exist, and the peak while the weights are prepared. */
#ifndef TGC_DRIVER_REPORT_PROCESS_H
#define TGC_DRIVER_REPORT_PROCESS_H

#include <stdint.h>

#include "codegen/codegen.h"

typedef struct ReportProcess {
    /* Params whose only readers are constant convolutions that oneDNN
     * prepares (folded, reordered): runtime/conv.c releases their pages
     * once folded, so the process holds those weights once. */
    int64_t released_bytes;
    int nreleased;
    /* The largest constant convolution's weights as plain f32, held only
     * while that convolution is prepared (at load, before the arena is
     * touched). */
    int64_t load_plain_bytes;
    /* The whole process on the CPU: the runtime and the libraries the
     * program links and runs (oneDNN with convolutions, OpenBLAS with
     * matrix products, libgomp, libc), measured per library set and
     * thread count (docs/memory.md "The whole process"). */
    bool has_runtime;
    const char *libraries; /* "libc", "OpenBLAS", "oneDNN", "oneDNN+OpenBLAS" */
    int threads;
    int nconvs;              /* oneDNN convolutions: each keeps its primitive and JIT code */
    int64_t blas_pack_bytes; /* OpenBLAS's packing buffer as the largest product touches it */
    int64_t runtime_bytes;   /* base + per thread + per convolution + blas_pack_bytes */
    /* The executable's inputs and outputs at their declared dtype, beside
     * the storage-dtype buffers the report counts, where the two differ
     * (--precision, --precision-io): rt_main reads and writes the declared
     * dtype and the context converts through its staging buffers. */
    int64_t io_declared_bytes;
    int64_t peak_bytes; /* the report's peak + runtime_bytes */
} ReportProcess;

/* The figures of plan cp on the CPU (zero on cuda, where the runtime
 * keeps its host params). dt: storage dtypes by Value.order. */
void report_process_build(const CgProgram *cp, const DType *dt, bool cuda, ReportProcess *out);
/* The runtime term for a run at `threads` threads (0: one per online
 * core, as a program built without --threads), added to peak (the
 * report's peak_bytes). Nothing on cuda (its fixed bytes are counted). */
void report_process_runtime(ReportProcess *p, const Graph *g, const DType *dt, bool cuda,
                            int threads, int64_t peak);
#endif
