/* The steps of tgc build, compile and run (driver/cmd_build.c), shared
 * with tgc build --generate (driver/cmd_generate.c), which runs them once
 * per program it links. */
#ifndef TGC_BUILD_INTERNAL_H
#define TGC_BUILD_INTERNAL_H
#include <limits.h>

#include "codegen/codegen.h"
#include "driver/build_flags.h"
#include "driver/link_line.h"
#include "driver/outputs.h"
#include "frontend/onnx/onnx_import.h"
#include "support/atomic_file.h"

/* One build's state: what drive's steps share, and what its end frees.
 * Each step returns false to stop, with rc the exit status. */
typedef struct Build {
    BuildOpts b;
    int rc;
    Arena a;
    Diag d;
    SrcFile file;
    Graph *g;
    CgProgram p;
    LinkNeeds needs;
    bool cuda;
    CudaOptions cuo;
    IoSet io;
    OnnxImport onnx;
    RtAtomicFile outf, hdrf;
    char tmp[PATH_MAX];
    int tmp_slot;
    char lib[PATH_MAX], inc[PATH_MAX];
    char oweights[PATH_MAX + 32], qweights[PATH_MAX + 32]; /* weights made here */
    char obj[PATH_MAX + 32], glue_path[PATH_MAX + 32];
    char emit_tmp[PATH_MAX + 16];
    char prog[PATH_MAX + 160];
    char *cuda_decl;
    const char *emitted[2 * CG_CUDA_MAX_ARCHS + 4];
    int nemit;
    const char *dest; /* what the linker wrote */
    char scratch[PATH_MAX + 32];
} Build;

/* What a build's steps start from (s->b set: rc 1, no temporary, no
 * output begun) and what its end frees (s->b's options stay the caller's). */
void build_begin(Build *s);
void build_end(Build *s);

/* Each returns false to stop, with s->rc the exit status. */
bool build_plan(Build *s);         /* the graph planned, outputs checked and begun */
bool build_stage(Build *s);        /* the temporary directory, the weights staged */
bool build_emit(Build *s);         /* the kernels' object */
bool build_glue_compile(Build *s); /* the C glue, compiled */
bool build_link_program(Build *s); /* the object or the executable */
bool build_publish(Build *s);      /* -o (and --header) committed */

/* tgc build --generate (driver/cmd_generate.c): b parsed; returns the exit
 * status. b's options stay the caller's to free. */
int cmd_generate(const BuildOpts *b);
#endif
