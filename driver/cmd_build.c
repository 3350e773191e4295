/* tgc build, tgc compile and tgc run: a graph through fusion, memory
 * planning and LLVM code generation, then linked by the system C compiler
 * against libtgcrt and OpenBLAS (cli.md). */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "driver/driver.h"
#include "driver/build_cc.h"
#include "driver/build_flags.h"
#include "driver/build_internal.h"
#include "driver/link_line.h"
#include "driver/devices.h"
#include "driver/report_checkpoint.h"
#include "driver/outputs.h"
#include "driver/toolchain.h"
#include "driver/quantize_weights.h"
#include "driver/st_write.h"
#include "frontend/onnx/onnx_import.h"
#include "passes/precision.h"
#include "support/atomic_file.h"
#include "tgcrt.h"

/* --checkpoint auto: the step with the activations report --checkpoint
 * would recompute (driver/report_checkpoint.c) to fit --budget. */
static Graph *checkpointed(BuildOpts *b, Arena *a, Diag *d, Graph *g, SrcFile *file, bool cuda) {
    int64_t budget;
    if (!devices_parse_size(b->budget, &budget)) {
        fprintf(stderr, "tgc %s: error: --budget %s: expected a size such as 24GiB or 512MiB\n",
                b->cmd, b->budget);
        return NULL;
    }
    Target t = cuda ? TARGET_CUDA : TARGET_CPU;
    Report *r = report_build(a, g, b->o.prec, t);
    CkptInput in = {.file = file, .o = &b->o, .prec = b->o.prec, .target = t, .budget = budget};
    CkptResult ck;
    report_checkpoint_search(a, &in, r, &ck);
    if (!ck.fits)
        fprintf(stderr,
                "tgc %s: warning: --checkpoint auto: the step needs %lld bytes with %d "
                "activations recomputed, more than --budget %s\n",
                b->cmd, (long long)ck.peak_after, ck.n, b->budget);
    if (!ck.n) return g;
    b->o.train.recompute = ck.ids;
    b->o.train.nrecompute = ck.n;
    if (b->o.onnx_out) onnx_import_free(b->o.onnx_out); /* replaced by the new import */
    return load_graph(a, d, &b->o, file);
}

/* Weights are checked at build time too: a bad file is the user's error
 * now rather than at every start of the program. */
static bool check_weights(const BuildOpts *b, const CgProgram *p) {
    RtSafetensors *st = NULL;
    RtError e;
    rt_error_clear(&e);
    if (rt_st_open(b->weights, &st, &e) != TGCRT_OK) {
        fprintf(stderr, "tgc %s: error: %s\n", b->cmd, e.msg);
        return false;
    }
    bool ok = true;
    for (int i = 0; i < p->iface.nparams && ok; i++) {
        const Value *v = p->iface.params[i];
        const RtStTensor *t = rt_st_find(st, v->name);
        if (!t) {
            if (v->init.kind == INIT_NONE) {
                fprintf(stderr,
                        "tgc %s: error: %s: missing tensor '%s' (param '%s' has no initialiser)\n",
                        b->cmd, b->weights, v->name, v->name);
                ok = false;
            }
            continue;
        }
        bool shape_ok = t->desc.ndim == v->ndim;
        for (int d = 0; shape_ok && d < v->ndim; d++)
            shape_ok = t->desc.shape[d] == v->shape[d];
        char found[RT_DESC_STR_MAX];
        rt_desc_format(&t->desc, found, sizeof found);
        bool float_pair =
            dtype_is_float(v->dtype) && (t->desc.dtype == RT_F16 || t->desc.dtype == RT_BF16 ||
                                         t->desc.dtype == RT_F32 || t->desc.dtype == RT_F64);
        if (!shape_ok || ((int)t->desc.dtype != (int)v->dtype && !float_pair)) {
            fprintf(stderr, "tgc %s: error: %s: tensor '%s': expected %s[", b->cmd, b->weights,
                    v->name, dtype_name(v->dtype));
            for (int d = 0; d < v->ndim; d++)
                fprintf(stderr, "%s%lld", d ? ", " : "", (long long)v->shape[d]);
            fprintf(stderr, "], found %s\n", found);
            ok = false;
        }
    }
    rt_st_close(st);
    return ok;
}

/* Starts the atomic write of an output (support/atomic_file.h); false after a
 * message naming the real cause (a name too long, a missing directory). */
static bool begin_output(const BuildOpts *b, RtAtomicFile *f, const char *path) {
    int e = rt_afile_begin(f, path);
    if (e) fprintf(stderr, "tgc %s: error: cannot write '%s': %s\n", b->cmd, path, strerror(e));
    return !e;
}

static bool commit_output(const BuildOpts *b, RtAtomicFile *f, const char *path, mode_t mode) {
    int e = rt_afile_commit(f, mode);
    if (e) fprintf(stderr, "tgc %s: error: cannot write '%s': %s\n", b->cmd, path, strerror(e));
    return !e;
}

/* The header of tgc compile, through its atomic file; its comment gives
 * the link line of needs. */
static bool write_header(const BuildOpts *b, RtAtomicFile *hf, const CgProgram *p,
                         const LinkNeeds *needs) {
    char line[512];
    if (!link_line_format(needs, NULL, line, sizeof line)) line[0] = '\0';
    FILE *h = rt_afile_stream(hf);
    if (h) cg_write_header(h, p, line);
    if (h && !ferror(h)) return true;
    fprintf(stderr, "tgc %s: error: cannot write '%s': %s\n", b->cmd, b->header,
            strerror(errno ? errno : EIO));
    return false;
}

/* Writes a copy of the file src at dest through the atomic writer. */
static bool publish_copy(const BuildOpts *b, const char *src, const char *dest) {
    int e = rt_afile_copy(src, dest, 0666);
    if (e) fprintf(stderr, "tgc %s: error: cannot write '%s': %s\n", b->cmd, dest, strerror(e));
    return !e;
}

/* The names of the files --emit may write into DIR, as codegen names them
 * (module.c: NAME.ll or NAME.s; cu_module.c: NAME.cu, NAME.sm_XX.cubin per
 * architecture, NAME.ptx, and the same for NAME.tg_matmul when the graph
 * has products: those are known only after code generation, so they are
 * always checked and published where made); at most 2 * CG_CUDA_MAX_ARCHS
 * + 4. */
static int emit_names(const BuildOpts *b, Arena *a, const char *name, const CudaOptions *co,
                      const char **names) {
    const char *k = b->emit_kind;
    int n = 0;
    if (!k) return 0;
    if (!strcmp(k, "llvm") || !strcmp(k, "asm"))
        names[n++] = arena_printf(a, "%s.%s", name, k[0] == 'l' ? "ll" : "s");
    for (int mm = 0; mm < 2; mm++) {
        const char *stem = mm ? arena_printf(a, "%s.tg_matmul", name) : name;
        if (!strcmp(k, "cuda")) {
            names[n++] = arena_printf(a, "%s.cu", stem);
            for (int i = 0; i < co->narchs; i++)
                names[n++] = arena_printf(a, "%s.sm_%d.cubin", stem, co->archs[i]);
        }
        if (!strcmp(k, "cuda") || !strcmp(k, "ptx")) names[n++] = arena_printf(a, "%s.ptx", stem);
    }
    return n;
}

/* Every file the command reads and every file it writes, checked at once
 * before anything is written (outputs.h): the graph, the weights, an ONNX
 * model's external data and tgc run's --input files against -o, --header,
 * each --emit listing, and each DIR/NAME.npy and the --profile trace tgc
 * run's program writes (as exe_main.c names them: a training program
 * writes its user outputs, and only with --output-dir). */
static bool files_distinct(const BuildOpts *b, Arena *a, const CgProgram *p, const OnnxImport *onnx,
                           const char *const *emitted, int nemit, IoSet *io) {
    ioset_read(io, "the input graph", b->o.file);
    ioset_read(io, "the weights", b->weights);
    ioset_read_all(io, "the model's external data", onnx->data_files, onnx->ndata_files);
    if (b->mode != MODE_RUN) {
        ioset_write(io, "-o", b->out);
        ioset_write(io, "--header", b->header);
    }
    const char *what = b->emit_kind ? arena_printf(a, "--emit %s", b->emit_kind) : NULL;
    for (int i = 0; i < nemit; i++)
        ioset_write(io, what, arena_printf(a, "%s/%s", b->emit_dir, emitted[i]));
    if (b->mode != MODE_RUN) return ioset_check(io);
    const char *dir = NULL;
    for (int i = 0; i + 1 < b->nrun; i++) {
        const char *f = b->run_args[i], *v = b->run_args[i + 1];
        if (!strcmp(f, "--input") && strchr(v, '='))
            ioset_read(io,
                       arena_printf(a, "the file of input '%.*s'", (int)(strchr(v, '=') - v), v),
                       strchr(v, '=') + 1);
        else if (!strcmp(f, "--output-dir") && !dir)
            dir = v;
        if (strcmp(f, "--print")) i++; /* a flag and its value */
    }
    if (b->profile)
        ioset_write(io, "--profile-json",
                    b->profile_json ? b->profile_json
                                    : arena_printf(a, "%s/profile.json", dir ? dir : "."));
    bool train = p->g->train_loss != NULL;
    size_t dl = dir ? strlen(dir) : 0;
    for (int i = 0; i < p->iface.noutputs && (!train || dir); i++) {
        const Value *v = p->iface.outputs[i];
        if (train && v->updates) continue;
        ioset_write(io, arena_printf(a, "output '%s' of the program", v->name),
                    arena_printf(a, "%s%s%s.npy", dir ? dir : ".",
                                 dl && dir[dl - 1] == '/' ? "" : "/", v->name));
    }
    return ioset_check(io);
}

/* The --emit listings, made in the temporary directory src, written into
 * DIR through the atomic writer, like every file tgc writes (tg_matmul's
 * only where the graph has products: where they were made). */
static bool publish_emitted(const BuildOpts *b, Arena *a, const char *src, const char *const *names,
                            int n) {
    for (int i = 0; i < n; i++)
        if ((!strstr(names[i], ".tg_matmul.") ||
             access(arena_printf(a, "%s/%s", src, names[i]), F_OK) == 0) &&
            !publish_copy(b, arena_printf(a, "%s/%s", src, names[i]),
                          arena_printf(a, "%s/%s", b->emit_dir, names[i])))
            return false;
    return true;
}

/* The graph, planned (pipeline_plan through cg_program_plan_layout), and
 * every output checked and begun: nothing is written before every output
 * is checked against every file read and every other output (cli.md). */
bool build_plan(Build *s) {
    BuildOpts *b = &s->b;
    if (!build_flags_cuda(b, s->cuda, &s->cuo)) return false;
    if (b->print_link && !b->o.file) {
        LinkNeeds any = link_needs_any(b->target, b->static_rt);
        s->rc = link_line_print(b->cmd, &any);
        return false;
    }
    if (b->embed && !b->weights) {
        fprintf(stderr, "tgc %s: error: --embed-weights needs --weights FILE\n", b->cmd);
        return false;
    }
    /* Interrupted or killed, tgc takes its temporaries and compilers with
     * it (support/atomic_file.h, support/tmp_registry.c). */
    rt_tmp_install_signals();
    rt_tmp_start_guardian();
    b->o.weights = b->weights;
    /* An ONNX model: its initializers become the weights, unless
     * --weights names others (written by stage, once there is a temporary
     * directory). */
    if (onnx_is_model_path(b->o.file)) b->o.onnx_out = &s->onnx;
    b->o.train.attn_dropout_written = s->cuda;
    s->g = load_graph(&s->a, &s->d, &b->o, &s->file);
    if (!s->g) {
        if (s->d.errors > 1 && s->d.out) fprintf(stderr, "%d errors\n", s->d.errors);
        return false;
    }
    if (b->checkpoint && !(s->g = checkpointed(b, &s->a, &s->d, s->g, &s->file, s->cuda)))
        return false;
    if (b->gen_part) s->g->name = arena_printf(&s->a, "%s_%s", s->g->name, b->gen_part);
    cg_program_plan_layout(&s->a, s->g, &s->p, s->cuda, !b->layout_nchw);
    /* What the program links: oneDNN on the CPU (convolutions, f32 products). */
    s->needs = (LinkNeeds){.conv = !s->cuda, .cuda = s->cuda, .static_blas = b->static_rt};
    if (b->print_link) {
        s->rc = link_line_print(b->cmd, &s->needs);
        return false;
    }
    s->nemit = emit_names(b, &s->a, s->g->name, &s->cuo, s->emitted);
    if (!files_distinct(b, &s->a, &s->p, &s->onnx, s->emitted, s->nemit, &s->io)) return false;
    if (b->mode != MODE_RUN && !b->gen_part && !begin_output(b, &s->outf, b->out)) return false;
    if (b->mode == MODE_COMPILE && !b->gen_part && !begin_output(b, &s->hdrf, b->header))
        return false;
    return !b->weights || b->o.quant_bits || check_weights(b, &s->p);
}

/* The runtime found, the temporary directory made, and the weights the
 * program embeds written there: an ONNX model's initializers, or the
 * quantized weights (the scales are part of what was built). */
bool build_stage(Build *s) {
    BuildOpts *b = &s->b;
    if (!toolchain_find_runtime(s->lib, s->inc, sizeof s->lib)) {
        fprintf(stderr,
                "tgc %s: error: cannot find the runtime library libtgcrt.a (set "
                "TGC_RUNTIME_DIR to the directory holding libtgcrt.a and tgcrt.h)\n",
                b->cmd);
        return false;
    }
    const char *tdir = getenv("TMPDIR");
    s->tmp_slot = rt_tmp_mkdtemp(tdir && *tdir ? tdir : "/tmp", "tgc", s->tmp, sizeof s->tmp);
    if (s->tmp_slot < 0) {
        fprintf(stderr, "tgc %s: error: cannot create a temporary directory: %s\n", b->cmd,
                strerror(errno));
        return false;
    }
    const OnnxImport *onnx = &s->onnx;
    if (b->o.onnx_out && !b->weights && onnx->nparams) {
        snprintf(s->oweights, sizeof s->oweights, "%s/onnx_weights.safetensors", s->tmp);
        StBlob *blobs = st_blobs_of_onnx(onnx);
        bool ok = blobs != NULL;
        ok = ok && st_write(b->cmd, s->oweights, blobs, onnx->nparams);
        free(blobs);
        if (!ok) return false;
        b->weights = s->oweights;
        /* build and compile embed them: the program is the model */
        if (b->mode != MODE_RUN) b->embed = true;
        if (!b->o.quant_bits && !check_weights(b, &s->p)) return false;
    }
    if (b->o.quant_bits) {
        snprintf(s->qweights, sizeof s->qweights, "%s/weights.safetensors", s->tmp);
        if (!quantize_weights_write(s->g, b->weights, s->qweights, b->cmd)) return false;
        b->weights = s->qweights;
        b->embed = true;
        if (!check_weights(b, &s->p)) return false;
    }
    snprintf(s->obj, sizeof s->obj, "%s/kernels.o", s->tmp);
    snprintf(s->glue_path, sizeof s->glue_path, "%s/glue.c", s->tmp);
    /* tgc run's program is named after the graph: its messages say so.
     * Cut to 64 characters: a file name has at most NAME_MAX (255) bytes,
     * and a graph name has no limit. */
    snprintf(s->prog, sizeof s->prog, "%s/%.64s", s->tmp, s->g->name);
    if (b->emit_kind && mkdir(b->emit_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "tgc %s: error: --emit: cannot create '%s': %s\n", b->cmd, b->emit_dir,
                strerror(errno));
        return false;
    }
    /* Listings are written into the temporary directory first and then
     * published through the atomic writer, like every file tgc writes. */
    snprintf(s->emit_tmp, sizeof s->emit_tmp, "%s/emit", s->tmp);
    if (b->emit_kind && mkdir(s->emit_tmp, 0700) != 0) {
        fprintf(stderr, "tgc %s: error: cannot create '%s': %s\n", b->cmd, s->emit_tmp,
                strerror(errno));
        return false;
    }
    return true;
}

/* CUDA's kernels through NVRTC: a rejected source is kept for the user
 * (the --emit directory, else next to the output). */
static bool emit_cuda(Build *s) {
    BuildOpts *b = &s->b;
    char err[2048], fail_src[PATH_MAX + 256], fail_dest[PATH_MAX + 256];
    if (b->emit_kind)
        snprintf(fail_dest, sizeof fail_dest, "%s/%s.cu", b->emit_dir, s->g->name);
    else if (b->mode != MODE_RUN)
        snprintf(fail_dest, sizeof fail_dest, "%s.cu", b->out);
    else
        snprintf(fail_dest, sizeof fail_dest, "%.64s.cu", s->g->name);
    snprintf(fail_src, sizeof fail_src, "%s/rejected.cu", s->tmp);
    CudaOptions *cuo = &s->cuo;
    cuo->image_dir = s->tmp;
    cuo->emit_dir = b->emit_kind ? s->emit_tmp : NULL;
    cuo->emit_ptx_only = b->emit_kind && !strcmp(b->emit_kind, "ptx");
    cuo->fail_source = fail_src;
    cuo->fail_shown = fail_dest;
    int crc = cg_cuda_emit(&s->p, cuo, &s->cuda_decl, err, sizeof err);
    if (!crc) return true;
    fprintf(stderr, "tgc %s: %s\n", b->cmd, err);
    /* Not over a file read either: --emit cuda's NAME.cu was checked
     * with the rest, another place is checked now. */
    bool checked = b->emit_kind && !cuo->emit_ptx_only;
    if (!checked) ioset_write(&s->io, "the rejected CUDA source", fail_dest);
    if (access(fail_src, F_OK) == 0 && (checked || ioset_check(&s->io)))
        publish_copy(b, fail_src, fail_dest);
    s->rc = crc;
    return false;
}

/* The kernels' object file (and the --emit listings, published). */
bool build_emit(Build *s) {
    BuildOpts *b = &s->b;
    if (s->cuda) {
        if (!emit_cuda(s)) return false;
    } else {
        CgOptions co = {.cpu = b->cpu, .levels = &b->levels, .obj_path = s->obj};
        char err[2048], listing[PATH_MAX + 256];
        if (b->emit_kind) {
            bool ll = !strcmp(b->emit_kind, "llvm");
            snprintf(listing, sizeof listing, "%s/%s.%s", s->emit_tmp, s->g->name, ll ? "ll" : "s");
            if (ll)
                co.emit_llvm_path = listing;
            else
                co.emit_asm_path = listing;
        }
        if (!cg_llvm_emit(&s->p, &co, err, sizeof err)) {
            fprintf(stderr, "tgc %s: %s\n", b->cmd, err);
            s->rc = strstr(err, "cannot write") ? 1 : 3;
            return false;
        }
    }
    return publish_emitted(b, &s->a, s->emit_tmp, s->emitted, s->nemit);
}

/* The C glue (program descriptor, main or the header's API), written and
 * compiled on its own first: the compiler rejecting generated code is an
 * internal error (build_cc.c). */
bool build_glue_compile(Build *s) {
    BuildOpts *b = &s->b;
    FILE *f = fopen(s->glue_path, "w");
    if (!f) {
        fprintf(stderr, "tgc %s: error: cannot write '%s': %s\n", b->cmd, s->glue_path,
                strerror(errno));
        return false;
    }
    char wabs[PATH_MAX];
    GlueOptions go = {.default_threads = b->threads,
                      .with_main = b->mode != MODE_COMPILE && !b->gen_part,
                      .cuda_decl = s->cuda_decl,
                      .levels = &b->levels};
    if (b->embed) go.embed_path = realpath(b->weights, wabs) ? wabs : b->weights;
    cg_write_glue(f, &s->p, &go);
    bool glue_bad = ferror(f); /* a full disk may fail a write before the close */
    if (fclose(f) != 0 || glue_bad) {
        fprintf(stderr, "tgc %s: error: cannot write '%s': %s\n", b->cmd, s->glue_path,
                strerror(errno));
        return false;
    }
    int rc =
        build_cc_glue(b->cmd, s->inc, s->tmp, b->mode == MODE_COMPILE, b->mode != MODE_COMPILE);
    if (rc) s->rc = rc;
    return !rc;
}

/* The object (tgc compile, with its header) or the executable. The linker
 * writes the temporary beside -o; a device or FIFO at -o is written in
 * place, from a scratch file. */
bool build_link_program(Build *s) {
    BuildOpts *b = &s->b;
    snprintf(s->scratch, sizeof s->scratch, "%s/link.out", s->tmp);
    s->dest = b->mode == MODE_RUN       ? s->prog
              : rt_afile_path(&s->outf) ? rt_afile_path(&s->outf)
                                        : s->scratch;
    if (b->mode == MODE_COMPILE)
        return !build_cc_link_object(b->cmd, s->tmp, !s->cuda, s->dest, b->out) &&
               write_header(b, &s->hdrf, &s->p, &s->needs);
    return !build_cc_link_exe(b->cmd, s->lib, s->tmp, !s->cuda, &s->needs, s->dest,
                              b->mode == MODE_BUILD ? b->out : s->prog);
}

/* -o (and --header) committed through the atomic writer. */
bool build_publish(Build *s) {
    BuildOpts *b = &s->b;
    int e = s->dest == s->scratch ? rt_afile_copy_from(&s->outf, s->scratch) : 0;
    if (e) {
        fprintf(stderr, "tgc %s: error: cannot write '%s': %s\n", b->cmd, b->out, strerror(e));
        return false;
    }
    mode_t m = b->mode == MODE_BUILD ? 0777 : 0666;
    if ((b->mode == MODE_COMPILE && !commit_output(b, &s->hdrf, b->header, 0666)) ||
        !commit_output(b, &s->outf, b->out, m))
        return false;
    s->rc = 0;
    return true;
}

/* tgc run: the program runs with the run's flags; its status is tgc's. */
static void run_program(Build *s) {
    BuildOpts *b = &s->b;
    char *run[520];
    int r = 0;
    run[r++] = s->prog;
    if (b->weights && !b->embed) {
        run[r++] = "--weights";
        run[r++] = (char *)b->weights;
    }
    for (int i = 0; i < b->nrun; i++)
        run[r++] = b->run_args[i];
    if (b->profile) {
        const char *dir = ".";
        for (int i = 0; i + 1 < b->nrun; i++)
            if (!strcmp(b->run_args[i], "--output-dir")) dir = b->run_args[i + 1];
        run[r++] = "--profile";
        run[r++] = "--profile-json";
        run[r++] =
            b->profile_json ? (char *)b->profile_json : arena_printf(&s->a, "%s/profile.json", dir);
    }
    run[r] = NULL;
    s->rc = toolchain_exec(run, false);
    if (s->rc < 0 || s->rc > 3) {
        fprintf(stderr, "tgc run: internal error: the program ended with status %d\n", s->rc);
        s->rc = 3;
    }
}

void build_begin(Build *s) {
    s->rc = 1;
    diag_init(&s->d, stderr);
    s->tmp_slot = -1;
    rt_afile_init(&s->outf);
    rt_afile_init(&s->hdrf);
    ioset_init(&s->io, s->b.cmd);
}

void build_end(Build *s) {
    ioset_free(&s->io);
    onnx_import_free(&s->onnx);
    rt_afile_abort(&s->outf);
    rt_afile_abort(&s->hdrf);
    rt_tmp_remove(s->tmp_slot);
    free(s->cuda_decl);
    arena_free(&s->a);
}

/* plan -> stage -> emit -> glue_compile -> link_program -> publish (or run). */
static int drive(Mode mode, int argc, char **argv) {
    Build st;
    memset(&st, 0, sizeof st);
    Build *s = &st;
    BuildOpts *b = &s->b;
    int rc = build_flags_parse(b, mode, argc, argv);
    if (rc) {
        options_free(&b->o);
        cg_cpu_levels_free(&b->levels);
        return rc < 0 ? 0 : rc;
    }
    if (b->generate) {
        rc = cmd_generate(b);
        options_free(&b->o);
        cg_cpu_levels_free(&b->levels);
        return rc;
    }
    build_begin(s);
    s->cuda = b->target && !strcmp(b->target, "cuda");
    if (build_plan(s) && build_stage(s) && build_emit(s) && build_glue_compile(s) &&
        build_link_program(s)) {
        if (mode == MODE_RUN)
            run_program(s);
        else
            build_publish(s);
    }
    build_end(s);
    options_free(&b->o);
    cg_cpu_levels_free(&b->levels);
    return s->rc;
}

int cmd_build(int argc, char **argv) {
    return drive(MODE_BUILD, argc, argv);
}
int cmd_compile(int argc, char **argv) {
    return drive(MODE_COMPILE, argc, argv);
}
int cmd_run(int argc, char **argv) {
    return drive(MODE_RUN, argc, argv);
}
