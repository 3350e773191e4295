/* Code generation: a fused, planned graph becomes native code.
 *
 * Requires: a graph after every pass, its KernelPlan (passes/fusion.h), the
 * Schedule and MemPlan of that plan, and the storage dtype of every value.
 * Gives: an object file defining `NAME__forward(void **bufs, RtPool *pool)`
 * (the RtForwardFn of runtime/tgcrt.h), and the C glue (program
 * descriptor, main or the header's API) that the driver compiles beside it.
 *
 * bufs: [0] the arena, then each input, param and output in declaration
 * order (CgInterface), then the error cell (three int64 words,
 * runtime/rt_index_error.h) that kernels set when an index tensor holds a
 * value out of range. */
#ifndef TGC_CODEGEN_H
#define TGC_CODEGEN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "passes/fusion.h"
#include "passes/memplan.h"
#include "tgcrt_abi.h"  /* the runtime as generated code sees it */
#include "tgcrt_cuda.h" /* and a CUDA program's descriptor */

typedef struct CgInterface {
    Value **inputs, **params, **outputs; /* declaration order */
    int ninputs, nparams, noutputs;
    int *slot;      /* by Value.order: bufs index of an input/param/output owner, -1 */
    int error_slot; /* bufs index of the error cell */
    int conv_slot;  /* bufs index of the context's conv state (error_slot + 1), or -1 */
    int nslots;     /* error_slot + 1, + 1 with convolutions */
    /* By output: a training step's update that its kernel writes straight
     * into the param's own buffer (its slot is the param's). */
    bool *in_place;
} CgInterface;

typedef struct CgProgram {
    const Graph *g;
    const KernelPlan *kp;
    const Schedule *sched;
    const MemPlan *plan;
    const DType *dt; /* storage dtype by Value.order */
    CgInterface iface;
    /* Convolutions (codegen/conv_desc.c): the runtime's descriptors, in
     * graph order, and the conv node of each. */
    RtConvDesc *convs;
    const Value **conv_values;
    int nconvs;
    int64_t conv_scratch_bytes;  /* the arena's tail: the largest conv's scratch */
    int64_t conv_prepared_bytes; /* folded, reordered weights kept outside the arena */
    /* Attention (codegen/attn_desc.c): the blocks' scratch, sharing the
     * convolutions' tail of the arena (they never run at once). */
    int64_t attn_scratch_offset, attn_scratch_bytes;
    /* Quantized products on CUDA at many rows (codegen/qmm_desc.c): the
     * largest weight dequantized for cuBLAS, in the same tail. */
    int64_t qmm_scratch_offset, qmm_scratch_bytes;
} CgProgram;

void cg_interface_init(Arena *a, CgProgram *p);
/* Fills p->convs from the plan and appends the convolutions' scratch to
 * the arena (p->plan's arena_bytes grows by conv_scratch_bytes), sized by
 * the runtime of the target: oneDNN's (rt_conv_scratch_bytes,
 * rt_conv_prepared_bytes) or, for cuda, cuDNN's (rt_cuda_conv_*). */
void cg_conv_plan(Arena *a, CgProgram *p, MemPlan *plan, bool cuda);
/* Plans the scratch of the attention nodes (CPU target only): the tail of
 * the arena grows to the largest rt_attention_scratch_bytes. */
void cg_attn_plan(CgProgram *p, MemPlan *plan, bool cuda);
/* Plans the scratch of the quantized products that CUDA dequantizes for
 * cuBLAS (cuda only; the CPU's rt_qmatmul allocates its own blocks): the
 * tail of the arena grows to the largest such weight in x's dtype. */
void cg_qmm_plan(CgProgram *p, MemPlan *plan, bool cuda);
/* The runtime descriptor of attention node v (scratch not included). */
void cg_attn_describe(const CgProgram *p, const Value *v, RtAttnDesc *d);
/* The same for an attention_backward node (its packed result's strides too). */
void cg_attn_bwd_describe(const CgProgram *p, const Value *v, RtAttnBwdDesc *d);
/* The runtime descriptor of slice_scatter node v (codegen/slice_write_desc.c)
 * and its index-error description (runtime/rt_index_error.h) into what;
 * false with the reason in what when the operands' storage dtypes differ. */
bool cg_slice_write_describe(const CgProgram *p, const Value *v, RtSliceWriteDesc *d, char *what,
                             size_t nwhat);
/* The index of conv node v in p->convs. */
int cg_conv_index(const CgProgram *p, const Value *v);
/* The whole plan of a checked graph, as tgc build makes it: the planning
 * passes, storage dtypes, fusion, schedule and memory plan
 * (pipeline_plan, which rewrites g), then the interface and the target's
 * scratch. */
void cg_program_plan(Arena *a, Graph *g, CgProgram *p);
/* The same for a target: cuda plans the convolutions' scratch and prepared
 * weights for cuDNN instead of oneDNN. */
void cg_program_plan_target(Arena *a, Graph *g, CgProgram *p, bool cuda);
/* The same with the layout pass chosen: channels_last false keeps every
 * activation generated code sees NCHW (tgc build --layout nchw); the
 * others plan channels-last on the CPU (passes/layout.c). */
void cg_program_plan_layout(Arena *a, Graph *g, CgProgram *p, bool cuda, bool channels_last);

/* --cpu's list (codegen/llvm/cpu_names.c): one entry per CPU level the
 * kernels are compiled for, in the order given. `checks` are the features
 * the runtime can test with CPUID (runtime/cpu_features.c) that this level's
 * code may use: what the program records and checks before running it. */
#define CG_MAX_CPU_LEVELS 8
typedef struct CgCpuLevel {
    char name[64];     /* as given ("x86-64-v3", "native") */
    char cpu[64];      /* LLVM's CPU name (the host's for native) */
    char *features;    /* LLVM's feature string: the host's for native, else "" */
    char checks[1024]; /* runtime-checkable features, comma-separated */
} CgCpuLevel;
typedef struct CgCpuLevels {
    int n;
    CgCpuLevel l[CG_MAX_CPU_LEVELS];
} CgCpuLevels;
/* Parses --cpu's value (NULL: the host, as "native"): names separated by
 * commas, each "native" or a CPU name LLVM knows, none twice; fills out.
 * False with the reason in err (a usage error). */
bool cg_cpu_levels(const char *list, CgCpuLevels *out, char *err, size_t nerr);
void cg_cpu_levels_free(CgCpuLevels *l);

typedef struct CgOptions {
    const char *cpu;                            /* unused when levels is set */
    const CgCpuLevels *levels;                  /* NULL: the host's CPU alone */
    const char *obj_path;                       /* the object to write */
    const char *emit_llvm_path, *emit_asm_path; /* optional listings */
} CgOptions;

/* --cpu NAME: true when LLVM generates code for the host's target with that
 * CPU; else false with the reason in err. Runs a short child process. */
bool cg_llvm_cpu_valid(const char *cpu, char *err, size_t nerr);
/* Prints the CPU names cg_llvm_cpu_valid accepts; returns their count. */
int cg_llvm_list_cpus(FILE *out);

/* Builds, optimises (default<O3>) and writes the object. Returns false with
 * a message in err on failure (an internal error: the graph is valid). */
bool cg_llvm_emit(const CgProgram *p, const CgOptions *o, char *err, size_t nerr);

/* The C glue: the RtProgram descriptor, then `main` (tgc build) or the
 * header's API (tgc compile). weights_path: a safetensors file to embed, or
 * NULL. */
typedef struct GlueOptions {
    const char *embed_path;
    int default_threads;
    bool with_main;
    const char *cuda_decl;     /* --target cuda: cg_cuda_emit's `tgc_cuda` (then no forward) */
    const CgCpuLevels *levels; /* what cg_llvm_emit compiled (CPU target) */
} GlueOptions;
void cg_write_glue(FILE *f, const CgProgram *p, const GlueOptions *o);
/* link_line: the libraries the object links with ("-ltgcrt ..."), for
 * the header's comment. */
void cg_write_header(FILE *f, const CgProgram *p, const char *link_line);
/* s as a C string literal, every byte that could end or bend it escaped. */
void cg_write_c_string(FILE *f, const char *s);

/* The profiler (codegen/step_info.c): the glue's `tgc_steps` table, one
 * RtStepInfo per kernel of the plan in run order (the steps the forward
 * marks); the bufs slot the forward reads the RtProfile pointer from (after
 * every slot of the interface); the header API's profile functions and
 * their declarations. */
void cg_write_steps(FILE *f, const CgProgram *p);
int cg_profile_slot(const CgProgram *p);
void cg_write_profile_api(FILE *f, const CgProgram *p);
void cg_write_profile_decls(FILE *f, const CgProgram *p);

/* The CUDA backend (codegen/cuda/): the same kernels as CUDA C, compiled
 * by NVRTC to a CUBIN per architecture plus PTX for the highest one. */
#define CG_CUDA_MAX_ARCHS 8
typedef struct CudaOptions {
    int archs[CG_CUDA_MAX_ARCHS]; /* 80 for sm_80, ... ascending */
    int narchs;
    bool cuda_graph;
    const char *image_dir;   /* where the images go for the glue to embed (.incbin) */
    const char *emit_dir;    /* NULL, or DIR for NAME.cu, NAME.sm_XX.cubin, NAME.ptx */
    bool emit_ptx_only;      /* --emit ptx: only NAME.ptx */
    const char *fail_source; /* where the source is written when NVRTC rejects it */
    const char *fail_shown;  /* the path the message names (where the caller moves it), or NULL */
} CudaOptions;
/* Whether this tgc can compile CUDA (it was built with NVRTC). */
bool cg_cuda_available(void);
/* Attention recognition's weight on --target cuda (passes/attention_fuse.c):
 * the flash kernel needs no arena scratch, so 0 where its tiles fit the
 * shared memory every supported GPU has (48 KiB) and its grid the
 * runtime's, else SIZE_MAX (the written-out form stays). */
size_t cg_cuda_attention_scratch(const RtAttnDesc *d);
/* Renders, compiles and writes the images; *decl gets the C text defining
 * `static const RtCudaProgram tgc_cuda` (malloc'd). Returns 0, or 1 with a
 * message in err when the graph needs what the backend lacks, or 3 when
 * NVRTC failed (an internal error: the source is at o->fail_source). */
int cg_cuda_emit(const CgProgram *p, const CudaOptions *o, char **decl, char *err, size_t nerr);
#endif
