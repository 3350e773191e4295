/* The flags of tgc build, tgc compile and tgc run: usage, --help, parsing
 * and the checks that need every flag at once. */
#include "driver/build_flags.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *USAGE_BUILD =
    "tgc build FILE -o EXE [--target cpu|cuda] [--weights W.safetensors] [--embed-weights]\n"
    "                 [-D NAME=VALUE]... [--precision P] [--precision-io D]\n"
    "                 [--quantize int8|int4 [--group-size N]] [--emit llvm|asm|cuda|ptx DIR]\n"
    "                 [--cpu NAME] [--threads N] [--static-runtime]\n"
    "                 [--gpu-arch sm_80,sm_90] [--cuda-graph]\n"
    "                 " TRAIN_FLAGS_USAGE " [--checkpoint auto --budget SIZE]";
static const char *USAGE_COMPILE =
    "tgc compile FILE -o OBJ.o --header H.h [same options as build]\n"
    "       tgc compile [FILE] --print-link-line [--target cpu|cuda] [--static-runtime]";
static const char *USAGE_RUN =
    "tgc run FILE [--input NAME=FILE.npy]... [--weights W] [--output-dir D] [--random-inputs "
    "SEED]\n"
    "               [--print] [--bench N] [--profile] [--profile-json FILE]\n"
    "               [same options as build]";

static int usage_err(BuildOpts *b, const char *fmt, const char *arg) {
    fprintf(stderr, "tgc %s: ", b->cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: %s\n", b->usage);
    return 2;
}

static void help(BuildOpts *b) {
    printf("usage: %s\n\n", b->usage);
    printf("  -o PATH              the executable (build) or object file (compile)\n"
           "  --header H.h         the C header declaring the object's API (compile)\n"
           "  --weights W          safetensors weights: checked now; embedded with "
           "--embed-weights, else the default for the program's --weights\n"
           "  --embed-weights      put the weights file into the executable\n"
           "  -D NAME=VALUE        set a symbolic dimension\n" PRECISION_FLAGS_HELP
           "  --emit KIND DIR      also write the generated code: llvm (.ll) or asm (.s); with\n"
           "                       --target cuda: cuda (.cu, a .cubin per arch, .ptx) or ptx\n"
           "  --cpu NAME           generate code for this CPU (LLVM name), not the host's;\n"
           "                       'native' is the host, 'help' lists the names; a list\n"
           "                       (x86-64-v2,x86-64-v3,native) compiles the kernels once\n"
           "                       per CPU and runs the best the machine has\n"
           "  --threads N          default thread count of the program (0: every core)\n"
           "  --layout L           activations of convolution networks: channels-last\n"
           "                       (default: NHWC between the convolutions) or nchw\n"
           "  --static-runtime     link OpenBLAS statically (to run on another machine)\n"
           "  --target cpu|cuda    the backend (cpu)\n"
           "  --gpu-arch LIST      CUDA architectures to compile for (sm_90); PTX for the last\n"
           "                       is embedded too, for newer GPUs\n"
           "  --cuda-graph         run the kernels as one captured CUDA graph (less launch "
           "overhead)\n" TRAIN_FLAGS_HELP "  --checkpoint auto --budget SIZE\n"
           "                       --train: recompute activations in the backward pass until the\n"
           "                       step's peak fits SIZE (as tgc report --checkpoint auto)\n");
    if (b->mode == MODE_COMPILE)
        printf("  --print-link-line    print the libraries the object links with (-L, -ltgcrt\n"
               "                       and the rest: FILE's; without FILE, what any graph\n"
               "                       for --target needs, or every one); writes nothing\n");
    if (b->mode == MODE_RUN)
        printf("  --input NAME=FILE    an input .npy file\n"
               "  --output-dir D       where outputs are written (default .)\n"
               "  --random-inputs SEED, --print, --bench N: as the executable's flags\n"
               "  --profile            print the time of every step after the run(s) and\n"
               "                       write them as Chrome trace events to D/profile.json\n"
               "  --profile-json FILE  the same with the trace at FILE\n");
}

static bool parse_int(const char *s, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > TGCRT_MAX_THREADS) return false;
    *out = (int)v;
    return true;
}

int build_flags_parse(BuildOpts *b, Mode mode, int argc, char **argv) {
    b->mode = mode;
    b->cmd = argv[0];
    b->usage = mode == MODE_BUILD ? USAGE_BUILD : mode == MODE_COMPILE ? USAGE_COMPILE : USAGE_RUN;
    b->o.command = b->cmd;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int prc = options_precision_flag(&b->o, argc, argv, &i, b->usage);
        if (prc < 0) prc = options_train_flag(&b->o, argc, argv, &i, b->usage);
        if (prc >= 0) {
            if (prc) return prc;
            continue;
        }
#define NEED()                                                                                     \
    do {                                                                                           \
        if (i + 1 >= argc) return usage_err(b, "%s needs an argument", a);                         \
    } while (0)
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            help(b);
            return -1;
        } else if (!strcmp(a, "-o")) {
            NEED();
            b->out = argv[++i];
        } else if (!strcmp(a, "--header") && b->mode == MODE_COMPILE) {
            NEED();
            b->header = argv[++i];
        } else if (!strcmp(a, "--checkpoint") || !strcmp(a, "--budget")) {
            NEED();
            *(a[2] == 'c' ? &b->checkpoint : &b->budget) = argv[++i];
        } else if (!strcmp(a, "--target")) {
            NEED();
            b->target = argv[++i];
        } else if (!strcmp(a, "--weights")) {
            NEED();
            b->weights = argv[++i];
        } else if (!strcmp(a, "--gpu-arch")) {
            NEED();
            b->gpu_arch = argv[++i];
        } else if (!strcmp(a, "--cuda-graph")) {
            b->cuda_graph = true;
        } else if (!strcmp(a, "--generate")) {
            b->generate = true;
        } else if (!strcmp(a, "--embed-weights")) {
            b->embed = true;
        } else if (!strcmp(a, "--static-runtime")) {
            b->static_rt = true;
        } else if (!strcmp(a, "--print-link-line") && b->mode == MODE_COMPILE) {
            b->print_link = true;
        } else if (!strcmp(a, "--layout")) {
            NEED();
            const char *l = argv[++i];
            if (strcmp(l, "nchw") && strcmp(l, "channels-last"))
                return usage_err(b, "--layout expects channels-last or nchw, found '%s'", l);
            b->layout_nchw = !strcmp(l, "nchw");
        } else if (!strcmp(a, "--cpu")) {
            NEED();
            b->cpu = argv[++i];
        } else if (!strcmp(a, "--threads")) {
            NEED();
            if (!parse_int(argv[++i], &b->threads)) {
                /* The executable's limit (tgcrt.h): a build it would refuse
                 * to run is refused here. */
                char fmt[96];
                snprintf(fmt, sizeof fmt, "--threads expects a count from 0 to %d, found '%%s'",
                         TGCRT_MAX_THREADS);
                return usage_err(b, fmt, argv[i]);
            }
            if (b->mode == MODE_RUN && b->nrun < 500) {
                b->run_args[b->nrun++] = "--threads";
                b->run_args[b->nrun++] = argv[i];
            }
        } else if (!strcmp(a, "--emit")) {
            if (i + 2 >= argc) return usage_err(b, "%s needs KIND and DIR", a);
            b->emit_kind = argv[++i];
            b->emit_dir = argv[++i];
        } else if (!strcmp(a, "-D") || !strncmp(a, "-D", 2)) {
            const char *def = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
            if (!def) return usage_err(b, "-D needs NAME=VALUE%s", "");
            if (b->o.ndims >= 64) return usage_err(b, "too many -D options%s", "");
            if (!options_parse_define(def, &b->o.dims[b->o.ndims])) {
                fprintf(stderr,
                        "tgc %s: error: -D %s: expected NAME=VALUE with an integer VALUE, or "
                        "NAME=LO:HI with LO <= HI\n",
                        b->cmd, def);
                return 1;
            }
            b->o.ndims++;
        } else if (b->mode == MODE_RUN &&
                   (!strcmp(a, "--input") || !strcmp(a, "--output-dir") ||
                    !strcmp(a, "--random-inputs") || !strcmp(a, "--bench"))) {
            NEED();
            if (b->nrun < 500) {
                b->run_args[b->nrun++] = (char *)a;
                b->run_args[b->nrun++] = argv[++i];
            }
        } else if (b->mode == MODE_RUN && !strcmp(a, "--print")) {
            if (b->nrun < 500) b->run_args[b->nrun++] = (char *)a;
        } else if (b->mode == MODE_RUN && !strcmp(a, "--profile")) {
            b->profile = true;
        } else if (b->mode == MODE_RUN && !strcmp(a, "--profile-json")) {
            NEED();
            b->profile = true;
            b->profile_json = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            return usage_err(b, "unknown option '%s'", a);
        } else if (!b->o.file) {
            b->o.file = a;
        } else {
            return usage_err(b, "unexpected argument '%s' (one FILE only)", a);
        }
#undef NEED
    }
    if (b->print_link && (b->out || b->header))
        return usage_err(b, "--print-link-line writes no file: drop %s",
                         b->out ? "-o" : "--header");
    if (!b->o.file && !b->print_link) return usage_err(b, "missing FILE%s", "");
    if (b->mode != MODE_RUN && !b->out && !b->print_link) return usage_err(b, "missing -o%s", "");
    if (b->mode == MODE_COMPILE && !b->header && !b->print_link)
        return usage_err(b, "missing --header%s", "");
    if ((b->checkpoint || b->budget) &&
        (!b->checkpoint || strcmp(b->checkpoint, "auto") || !b->budget || !(b->o.tf.given & 1))) {
        fprintf(stderr,
                "tgc %s: error: --checkpoint auto and --budget SIZE go together, with "
                "--train LOSS\n",
                b->cmd);
        return 1;
    }
    if (b->target && strcmp(b->target, "cpu") && strcmp(b->target, "cuda"))
        return usage_err(b, "--target expects cpu or cuda, found '%s'", b->target);
    if (b->emit_kind && strcmp(b->emit_kind, "llvm") && strcmp(b->emit_kind, "asm") &&
        strcmp(b->emit_kind, "cuda") && strcmp(b->emit_kind, "ptx"))
        return usage_err(b, "--emit expects llvm, asm, cuda or ptx, found '%s'", b->emit_kind);
    if (b->cpu && !strcmp(b->cpu, "help")) {
        cg_llvm_list_cpus(stdout);
        return -1;
    }
    if (b->cpu && !strcmp(b->cpu, "native")) b->cpu = NULL; /* the host, as without --cpu */
    char why[256];
    /* The CPU levels (a list: codegen/llvm/cpu_names.c), and what each
     * one's code needs, which the program records and checks at start. */
    bool cuda = b->target && !strcmp(b->target, "cuda");
    if (!cuda && !cg_cpu_levels(b->cpu, &b->levels, why, sizeof why)) {
        fprintf(stderr, "tgc %s: --cpu: %s; 'tgc %s --cpu help' lists the valid names\n", b->cmd,
                why, b->cmd);
        fprintf(stderr, "usage: %s\n", b->usage);
        return 2;
    }
    if (!b->generate && options_refuse_ranges(b->cmd, b->o.dims, b->o.ndims)) return 1;
    int rc = options_precision_finish(&b->o);
    return rc ? rc : options_train_finish(&b->o);
}

bool build_flags_cuda(const BuildOpts *b, bool cuda, CudaOptions *co) {
    bool cuda_emit =
        b->emit_kind && (!strcmp(b->emit_kind, "cuda") || !strcmp(b->emit_kind, "ptx"));
    const char *need = cuda_emit       ? "--emit cuda/ptx"
                       : b->gpu_arch   ? "--gpu-arch"
                       : b->cuda_graph ? "--cuda-graph"
                                       : NULL;
    if (!cuda && need) {
        fprintf(stderr, "tgc %s: error: %s needs --target cuda\n", b->cmd, need);
        return false;
    }
    if (cuda && b->emit_kind && !cuda_emit) {
        fprintf(stderr, "tgc %s: error: --emit %s is for --target cpu; use --emit cuda or ptx\n",
                b->cmd, b->emit_kind);
        return false;
    }
    if (!cuda) return true;
    if (b->cpu || b->static_rt) {
        fprintf(stderr, "tgc %s: error: %s is for --target cpu\n", b->cmd,
                b->cpu ? "--cpu" : "--static-runtime");
        return false;
    }
    /* The architectures NVRTC of CUDA 13 compiles for. */
    static const int known[] = {75, 80, 86, 87, 89, 90, 100, 103, 110, 120, 121};
    const char *list = b->gpu_arch ? b->gpu_arch : "sm_90";
    const char *c = list;
    while (*c) {
        int sm = 0, nd = 0;
        if (strncmp(c, "sm_", 3) != 0) goto bad;
        c += 3;
        while (*c >= '0' && *c <= '9' && nd < 4)
            sm = sm * 10 + (*c++ - '0'), nd++;
        if (!nd || (*c && *c != ',')) goto bad;
        bool ok = false;
        for (size_t i = 0; i < sizeof known / sizeof *known; i++)
            ok |= known[i] == sm;
        if (!ok) {
            fprintf(stderr,
                    "tgc %s: error: --gpu-arch: sm_%d is not an architecture NVRTC compiles for; "
                    "expected sm_75, sm_80, sm_86, sm_87, sm_89, sm_90, sm_100, sm_103, sm_110, "
                    "sm_120 or sm_121\n",
                    b->cmd, sm);
            return false;
        }
        bool dup = false;
        for (int i = 0; i < co->narchs; i++)
            dup |= co->archs[i] == sm;
        if (!dup) {
            if (co->narchs == CG_CUDA_MAX_ARCHS) goto bad;
            /* Ascending: the PTX is for the highest. */
            int j = co->narchs++;
            while (j > 0 && co->archs[j - 1] > sm) {
                co->archs[j] = co->archs[j - 1];
                j--;
            }
            co->archs[j] = sm;
        }
        if (*c == ',') c++;
    }
    if (co->narchs) {
        co->cuda_graph = b->cuda_graph;
        return true;
    }
bad:
    fprintf(stderr,
            "tgc %s: error: --gpu-arch: expected a comma-separated list such as sm_80,sm_90 "
            "of sm_75, sm_80, sm_86, sm_87, sm_89, sm_90, sm_100, sm_103, sm_110, sm_120, "
            "sm_121; found '%s'\n",
            b->cmd, list);
    return false;
}
