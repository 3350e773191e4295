/* The flags of tgc build, tgc compile and tgc run (cli.md): parsed and
 * checked here, used by driver/cmd_build.c. */
#ifndef TGC_BUILD_FLAGS_H
#define TGC_BUILD_FLAGS_H
#include <stdbool.h>

#include "codegen/codegen.h"
#include "driver/driver.h"

typedef enum { MODE_BUILD, MODE_COMPILE, MODE_RUN } Mode;

typedef struct BuildOpts {
    Mode mode;
    const char *cmd, *usage;
    Options o; /* file and -D */
    const char *out, *header, *target, *weights, *emit_kind, *emit_dir, *cpu;
    const char *checkpoint, *budget; /* --train --checkpoint auto --budget SIZE */
    bool embed, static_rt, cuda_graph;
    bool layout_nchw; /* --layout nchw: no channels-last pass (passes/layout.c) */
    bool print_link;  /* tgc compile --print-link-line */
    bool generate;    /* --generate: a decoder's prefill and step over one KV cache */
    /* Set by tgc build --generate per program it links (driver/cmd_generate.c):
     * the part ("prefill", "step"): the graph is named NAME_PART, its glue has
     * no main, and -o is begun by the caller. */
    const char *gen_part;
    const char *gpu_arch; /* --gpu-arch LIST, as given */
    int threads;
    /* tgc run: passed to the program */
    char *run_args[512];
    int nrun;
    /* tgc run --profile: the table, and the trace at profile_json (default
     * OUTPUT-DIR/profile.json); passed to the program after run_args. */
    bool profile;
    const char *profile_json;
    CgCpuLevels levels; /* --cpu (the host's when not given); none for cuda */
} BuildOpts;

/* Parses argv into b (zeroed by the caller) for the command of mode:
 * 0 to go on, -1 after --help or --cpu help (exit 0), else the exit status after a
 * message. */
int build_flags_parse(BuildOpts *b, Mode mode, int argc, char **argv);
/* --target cuda's flags: the architectures, --cuda-graph, and which
 * flags need the CUDA target. */
bool build_flags_cuda(const BuildOpts *b, bool cuda, CudaOptions *co);
#endif
