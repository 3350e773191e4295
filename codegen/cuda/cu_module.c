/* The CUDA module of one graph: every kernel of the fusion plan rendered
 * as CUDA C after the prelude, compiled by NVRTC (cu_nvrtc.c) to a CUBIN
 * per architecture and PTX for the highest, and the C declarations the
 * glue embeds: the images (.incbin of the files), the steps of one run
 * (convolutions point into the glue's tgc_convs) and the index tensors'
 * names.
 *
 * The generic product kernel tg_matmul is a program of its own, compiled
 * and embedded beside the module only where a product needs it: its
 * source is the same in every graph, so TGC_NVRTC_CACHE compiles it once
 * (it was about 3.5 s of NVRTC's 3.8 s per architecture for a small graph
 * with one product), and a graph whose products all run on cuBLAS never
 * loads it. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda/cu.h"
#include "codegen/write_file.h"
#include "codegen/cuda/cu_matmul_src.h"
#include "codegen/cuda/cu_nvrtc.h"

/* The CUDA side of the backend interface (codegen/backend.h). */
#define CG_BE_T Cu
#define CG_BE_FN(kind) cu_k_##kind
#define CG_BE_FAIL cu_fail
#define CG_BE_NAME "CUDA "
#include "codegen/backend_impl.h"

/* Writes the C string literal of s. */
static void c_string(Sb *b, const char *s) {
    sb_printf(b, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            sb_printf(b, "\\%c", *s);
        else if ((unsigned char)*s < 32)
            sb_printf(b, "\\%03o", (unsigned char)*s);
        else
            sb_printf(b, "%c", *s);
    }
    sb_printf(b, "\"");
}

static void incbin(Sb *b, const char *sym, const char *path) {
    sb_printf(b, "__asm__(\".section .rodata\\n.balign 64\\n.type %s, @object\\n%s:\\n.incbin \\\"",
              sym, sym);
    for (const char *c = path; *c; c++) {
        if (*c == '"' || *c == '\\') sb_printf(b, "\\\\\\");
        sb_printf(b, "%c", *c);
    }
    sb_printf(b, "\\\"\\n%s_end:\\n.previous\\n\");\n", sym);
    sb_printf(b, "extern const unsigned char %s[], %s_end[];\n", sym, sym);
}

/* The image files cg_cuda_emit writes into image_dir for the module
 * (prefix "") or tg_matmul's program (prefix "mm_"). */
static int image_files(const CudaOptions *o, const char *prefix, char names[][32], int max) {
    int n = 0;
    for (int i = 0; i < o->narchs && n < max; i++)
        snprintf(names[n++], 32, "%ssm_%d.cubin", prefix, o->archs[i]);
    if (n < max) snprintf(names[n++], 32, "%smodule.ptx", prefix);
    return n;
}

/* The images of one program as the array tgc_cuda_<what>images. */
static void write_images(Sb *d, const CudaOptions *o, const char *what, const size_t *sizes) {
    char names[CG_CUDA_MAX_ARCHS + 1][32];
    int ni = image_files(o, *what ? "mm_" : "", names, CG_CUDA_MAX_ARCHS + 1);
    for (int i = 0; i < ni; i++) {
        char sym[48], path[4200];
        snprintf(sym, sizeof sym, "tgc_cuda_%simage%d", what, i);
        snprintf(path, sizeof path, "%s/%s", o->image_dir, names[i]);
        incbin(d, sym, path);
    }
    sb_printf(d, "static const RtCudaImage tgc_cuda_%simages[] = {\n", what);
    for (int i = 0; i < ni; i++) {
        bool ptx = i == ni - 1;
        int sm = ptx ? o->archs[o->narchs - 1] : o->archs[i];
        sb_printf(d, "    {%d, %d, tgc_cuda_%simage%d, %zu},\n", sm, ptx, what, i, sizes[i]);
    }
    sb_printf(d, "};\n");
}

static void write_decl(Sb *d, const Cu *cu, const CudaOptions *o, const size_t *sizes,
                       const size_t *mm_sizes) {
    int ni = o->narchs + 1;
    write_images(d, o, "", sizes);
    if (mm_sizes) write_images(d, o, "mm_", mm_sizes);
    for (int i = 0; i < cu->nsteps; i++) {
        const CuStep *s = &cu->steps[i];
        if (s->kind != CU_MATMUL) continue;
        const MM *m = &s->mm;
        sb_printf(d,
                  "static const RtMatmulDesc tgc_cuda_mm%d = {%" PRId64 ", %" PRId64 ", %" PRId64
                  ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
                  ", %" PRId64 ", %" PRId64 ", %" PRId64,
                  i, m->dtype, m->m, m->n, m->k, m->a_rs, m->a_cs, m->b_rs, m->b_cs, m->c_rs,
                  m->c_cs, m->accumulate, m->nbatch);
        const int64_t *arrs[4] = {m->batch, m->a_bs, m->b_bs, m->c_bs};
        for (int a = 0; a < 4; a++) {
            sb_printf(d, ", {");
            for (int j = 0; j < MAXB; j++)
                sb_printf(d, "%s%" PRId64, j ? ", " : "", arrs[a][j]);
            sb_printf(d, "}");
        }
        sb_printf(d, "};\n");
    }
    sb_printf(d, "static const RtCudaStep tgc_cuda_steps[] = {\n");
    for (int i = 0; i < cu->nsteps; i++) {
        const CuStep *s = &cu->steps[i];
        if (s->kind == CU_LAUNCH)
            sb_printf(d,
                      "    {RT_CUDA_LAUNCH, \"%s\", %" PRId64
                      "u, %du, %du, NULL, {0, 0}, {0, 0}, {0, 0}, NULL},\n",
                      s->kernel, s->grid, s->block, s->smem);
        else if (s->kind == CU_CONV && s->kernel)
            /* tgc_convs: the glue's descriptors (codegen/glue.c), before this. */
            sb_printf(d,
                      "    {RT_CUDA_CONV, \"%s\", %" PRId64
                      "u, %du, 0, NULL, {0, 0}, {0, 0}, {0, 0}, &tgc_convs[%d]},\n",
                      s->kernel, s->grid, s->block, s->conv);
        else if (s->kind == CU_CONV)
            sb_printf(d,
                      "    {RT_CUDA_CONV, NULL, 0, 0, 0, NULL, {0, 0}, {0, 0}, {0, 0}, "
                      "&tgc_convs[%d]},\n",
                      s->conv);
        else
            sb_printf(d,
                      "    {RT_CUDA_MATMUL, NULL, 0, 0, 0, &tgc_cuda_mm%d, {%d, %" PRId64
                      "}, {%d, %" PRId64 "}, {%d, %" PRId64 "}, NULL},\n",
                      i, s->slot[0], s->off[0], s->slot[1], s->off[1], s->slot[2], s->off[2]);
    }
    if (!cu->nsteps)
        sb_printf(d, "    {RT_CUDA_LAUNCH, NULL, 0, 0, 0, NULL, {0, 0}, {0, 0}, {0, 0}, NULL},\n");
    sb_printf(d, "};\nstatic const char *const tgc_cuda_errors[] = {");
    for (int i = 0; i < cu->nerror_names; i++) {
        c_string(d, cu->error_names[i]);
        sb_printf(d, ", ");
    }
    sb_printf(d, "NULL};\n");
    sb_printf(d,
              "static const RtCudaProgram tgc_cuda = {tgc_cuda_images, %d, tgc_cuda_steps, %d, "
              "tgc_cuda_errors, %d, %d, %s, %d};\n",
              ni, cu->nsteps, cu->nerror_names, o->cuda_graph ? 1 : 0,
              mm_sizes ? "tgc_cuda_mm_images" : "NULL", mm_sizes ? ni : 0);
}

static const char *unsupported(const CgProgram *p, int smem_max) {
    const char *why = cu_attention_unsupported(p, smem_max);
    return why ? why : cu_conv_unsupported(p);
}

/* Compiles one program's source (NVRTC's name for it: name) for every
 * image of o, writing the images into image_dir under prefix and, with
 * --emit, DIR/STEM.cu, DIR/STEM.sm_XX.cubin and DIR/STEM.ptx; sizes[i]
 * gets image i's size. Returns 0, 1 (a write failed) or 3 (NVRTC
 * rejected the generated code, kept in o->fail_source). */
static int compile_program(Cu *cu, const CudaOptions *o, const char *src, size_t len,
                           const char *name, const char *stem, const char *prefix, size_t *sizes,
                           char *err, size_t nerr) {
    const char *path;
    if (o->emit_dir && !o->emit_ptx_only) {
        path = cu_str(cu, "%s/%s.cu", o->emit_dir, stem);
        if (!cg_write_file(path, src, len, err, nerr)) return 1;
    }
    char names[CG_CUDA_MAX_ARCHS + 1][32];
    int ni = image_files(o, prefix, names, CG_CUDA_MAX_ARCHS + 1);
    int rc = 0;
    for (int i = 0; i < ni && !rc; i++) {
        bool ptx = i == ni - 1;
        int sm = ptx ? o->archs[o->narchs - 1] : o->archs[i];
        NvrtcImage img;
        if (!cu_nvrtc_compile(src, name, sm, ptx, &img, err, nerr)) {
            if (o->fail_source) cg_write_file(o->fail_source, src, len, err + strlen(err), 0);
            size_t l = strlen(err);
            if (o->fail_source && l + 1 < nerr)
                snprintf(err + l, nerr - l, "\n(the generated CUDA C is in '%s')",
                         o->fail_shown ? o->fail_shown : o->fail_source);
            return 3;
        }
        sizes[i] = img.size;
        path = cu_str(cu, "%s/%s", o->image_dir, names[i]);
        if (!cg_write_file(path, img.data, img.size, err, nerr)) rc = 1;
        if (!rc && o->emit_dir && (ptx || !o->emit_ptx_only)) {
            if (ptx)
                path = cu_str(cu, "%s/%s.ptx", o->emit_dir, stem);
            else
                path = cu_str(cu, "%s/%s.sm_%d.cubin", o->emit_dir, stem, sm);
            if (!cg_write_file(path, img.data, img.size - (ptx ? 1 : 0), err, nerr)) rc = 1;
        }
        free(img.data);
    }
    return rc;
}

int cg_cuda_emit(const CgProgram *p, const CudaOptions *o, char **decl, char *err, size_t nerr) {
    *decl = NULL;
    if (!cg_cuda_available()) {
        snprintf(err, nerr,
                 "error: --target cuda: this tgc was built without the CUDA Toolkit (NVRTC); "
                 "rebuild it where /usr/local/cuda exists, or use --target cpu");
        return 1;
    }
    int smem_max = cu_attention_smem_limit(o->archs, o->narchs);
    const char *why = unsupported(p, smem_max);
    if (why) {
        snprintf(err, nerr, "error: %s", why);
        return 1;
    }
    Arena a = {0};
    Cu cu;
    memset(&cu, 0, sizeof cu);
    cu.p = p;
    cu.a = &a;
    cu.smem_max = smem_max;
    const CgBackend be = cg_backend_of(&cu, p);
    for (int i = 0; i < p->kp->nkernels && !cu.fail; i++)
        cg_emit_kernel(&be, &p->kp->kernels[i]);
    /* tg_matmul's program only where there are products. */
    bool products = false;
    for (int i = 0; i < cu.nsteps; i++)
        products |= cu.steps[i].kind == CU_MATMUL;
    Sb kernels = cu.src;
    memset(&cu.src, 0, sizeof cu.src);
    sb_printf(&cu.src, "// tgc: CUDA kernels of graph '%s' (compiled by NVRTC)\n%s\n%s", p->g->name,
              cu_prelude, kernels.s ? kernels.s : "");
    sb_free(&kernels);
    int rc = 0;
    Sb mm = {0};
    if (cu.fail) {
        snprintf(err, nerr, "%s", cu.err);
        rc = 3;
        goto done;
    }
    size_t sizes[CG_CUDA_MAX_ARCHS + 1], mm_sizes[CG_CUDA_MAX_ARCHS + 1];
    /* Paths and the source's name hold the graph name at its full length
     * (no fixed buffer cuts a long one short). */
    rc = compile_program(&cu, o, cu.src.s, cu.src.len, cu_str(&cu, "%s.cu", p->g->name), p->g->name,
                         "", sizes, err, nerr);
    if (!rc && products) {
        /* The same text in every graph (no graph name in it): one cache
         * entry serves them all. */
        sb_printf(&mm, "// tgc: the generic product kernel tg_matmul (compiled by NVRTC)\n%s\n%s",
                  cu_prelude, cu_matmul_src);
        rc = compile_program(&cu, o, mm.s, mm.len, "tg_matmul.cu",
                             cu_str(&cu, "%s.tg_matmul", p->g->name), "mm_", mm_sizes, err, nerr);
    }
    if (!rc) {
        Sb d = {0};
        write_decl(&d, &cu, o, sizes, products ? mm_sizes : NULL);
        *decl = d.s;
    }
done:
    sb_free(&mm);
    sb_free(&cu.src);
    arena_free(&a);
    return rc;
}
