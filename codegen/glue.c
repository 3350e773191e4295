/* The C side of a compiled program: the RtProgram descriptor (names,
 * dtypes, shapes, initialisers, arena size, the forward function and any
 * embedded weights), then main() for an executable or the API that
 * `tgc compile`'s header declares. Written as C so that the system C
 * compiler handles the platform's conventions; every kernel is in the
 * LLVM object. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "codegen/codegen.h"

static const char *rt_dtype(DType t) {
    static const char *names[DT_COUNT] = {"RT_BOOL", "RT_U8",  "RT_I8",   "RT_I16", "RT_I32",
                                          "RT_I64",  "RT_F16", "RT_BF16", "RT_F32", "RT_F64",
                                          "RT_U16",  "RT_U32", "RT_U64"};
    return t >= 0 && t < DT_COUNT ? names[t] : "RT_DTYPE_NONE";
}

static const char *c_type(DType t) {
    switch (t) {
    case DT_BOOL:
    case DT_U8: return "uint8_t";
    case DT_I8: return "int8_t";
    case DT_I16: return "int16_t";
    case DT_I32: return "int32_t";
    case DT_I64: return "int64_t";
    case DT_U16: return "uint16_t";
    case DT_U32: return "uint32_t";
    case DT_U64: return "uint64_t";
    case DT_F16:
    case DT_BF16: return "uint16_t";
    case DT_F32: return "float";
    default: return "double";
    }
}

static const char *init_kind(InitKind k) {
    switch (k) {
    case INIT_ZEROS: return "RT_INIT_ZEROS";
    case INIT_ONES: return "RT_INIT_ONES";
    case INIT_FULL: return "RT_INIT_FULL";
    case INIT_RANDN: return "RT_INIT_RANDN";
    case INIT_UNIFORM: return "RT_INIT_UNIFORM";
    case INIT_ARANGE: return "RT_INIT_ARANGE";
    default: return "RT_INIT_NONE";
    }
}

/* A double as a C constant expression that reads back as exactly the
 * same value: a hex float when finite (exact; %.17g would turn -0.0 into
 * the integer "-0"), else <math.h>'s INFINITY or NAN with the value's
 * sign. full(-inf) and full(nan) are valid initialisers, as in PyTorch. */
static void c_double(FILE *f, double x) {
    if (isnan(x))
        fputs(signbit(x) ? "(-NAN)" : "NAN", f);
    else if (isinf(x))
        fputs(x < 0 ? "(-INFINITY)" : "INFINITY", f);
    else
        fprintf(f, "%a", x);
}

/* A name as a C string literal. The lexer's identifiers need no escape
 * today; escaping every byte that could end or bend a literal (quotes,
 * backslashes, control and non-ASCII bytes, '?' of trigraphs) keeps the
 * glue compiling whatever names a front end lets through. Octal escapes
 * take at most three digits, so a digit after one is not absorbed. */
static void c_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c < 0x20 || *c >= 0x7f || *c == '?')
            fprintf(f, "\\%03o", *c);
        else
            fputc(*c, f);
    }
    fputc('"', f);
}

void cg_write_c_string(FILE *f, const char *s) {
    c_string(f, s);
}

/* Whether s can follow "in_" in a C identifier. */
static bool ident_tail(const char *s) {
    if (!*s) return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_'))
            return false;
    return true;
}

/* The run function's parameter for input i: in_NAME as the header
 * documents it, or in_<i> for a name that is no identifier (a dotted one):
 * unique either way, since an identifier cannot start with a digit. */
static void input_param(FILE *f, const CgInterface *it, int i) {
    const char *n = it->inputs[i]->name;
    if (n && ident_tail(n))
        fprintf(f, "in_%s", n);
    else
        fprintf(f, "in_%d", i);
}

static void tensor_table(FILE *f, const CgProgram *p, const char *name, Value **vs, int n) {
    fprintf(f, "static const RtTensorInfo %s[%d] = {\n", name, n > 0 ? n : 1);
    for (int i = 0; i < n; i++) {
        const Value *v = vs[i];
        fputs("    {", f);
        c_string(f, v->name ? v->name : "");
        fprintf(f, ", {%s, %d, {", rt_dtype(v->dtype), v->ndim);
        for (int d = 0; d < v->ndim; d++)
            fprintf(f, "%s%" PRId64, d ? ", " : "", v->shape[d]);
        fprintf(f, "}}, %s, %s, ", rt_dtype(p->dt[v->order]), init_kind(v->init.kind));
        c_double(f, v->init.a);
        fputs(", ", f);
        c_double(f, v->init.b);
        fprintf(f, ", %" PRId64 ", %d},\n", v->init.seed, v->state ? 1 : 0); /* .state */
    }
    if (n == 0) fprintf(f, "    {0},\n");
    fprintf(f, "};\n");
}

static void write_ref(FILE *f, const char *name, RtConvRef r) {
    fprintf(f, " .%s = {%d, %" PRId64 "},", name, r.slot, r.offset);
}
static void write_i64s(FILE *f, const char *name, const int64_t *v, int n) {
    fprintf(f, " .%s = {", name);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%" PRId64, i ? ", " : "", v[i]);
    fputs("},", f);
}

/* The convolutions' descriptors (codegen/conv_desc.c), as designated
 * initialisers; doubles and floats printed exactly as hex floats. */
static void write_convs(FILE *f, const CgProgram *p) {
    if (!p->nconvs) return;
    fprintf(f, "\nstatic const RtConvDesc tgc_convs[%d] = {\n", p->nconvs);
    for (int i = 0; i < p->nconvs; i++) {
        const RtConvDesc *d = &p->convs[i];
        fprintf(f,
                "  {.dtype = %d, .transposed = %d, .n = %" PRId64 ", .cin = %" PRId64
                ", .cout = %" PRId64 ", .groups = %" PRId64 ",",
                d->dtype, d->transposed, d->n, d->cin, d->cout, d->groups);
        write_i64s(f, "in", d->in, 2);
        write_i64s(f, "out", d->out, 2);
        write_i64s(f, "k", d->k, 2);
        write_i64s(f, "stride", d->stride, 2);
        write_i64s(f, "dilation", d->dilation, 2);
        write_i64s(f, "pad_l", d->pad_l, 2);
        write_i64s(f, "pad_r", d->pad_r, 2);
        fputs("\n   ", f);
        write_ref(f, "src", d->src);
        write_ref(f, "weight", d->weight);
        write_ref(f, "bias", d->bias);
        write_ref(f, "dst", d->dst);
        write_i64s(f, "src_strides", d->src_strides, 4);
        write_i64s(f, "dst_strides", d->dst_strides, 4);
        fprintf(f, " .constant_weights = %d, .has_bn = %d,", d->constant_weights, d->has_bn);
        if (d->has_bn) {
            write_ref(f, "bn_mean", d->bn_mean);
            write_ref(f, "bn_var", d->bn_var);
            write_ref(f, "bn_weight", d->bn_weight);
            write_ref(f, "bn_bias", d->bn_bias);
            fprintf(f, " .bn_eps = %a,", d->bn_eps);
        }
        fprintf(f, " .npost = %d, .post = {", d->npost);
        for (int k = 0; k < d->npost; k++) {
            const RtConvPost *q = &d->post[k];
            fprintf(f, "{.kind = %d, .alpha = %af, .beta = %af, .src = {%d, %" PRId64 "},", q->kind,
                    (double)q->alpha, (double)q->beta, q->src.slot, q->src.offset);
            write_i64s(f, "strides", q->strides, 4);
            fputs("}, ", f);
        }
        fprintf(f, "}, .scratch_offset = %" PRId64 ", .scratch_bytes = %" PRId64 "},\n",
                d->scratch_offset, d->scratch_bytes);
    }
    fputs("};\n", f);
}

static int64_t arena_bytes(const CgProgram *p) {
    return p->plan->arena_bytes;
}

/* A path inside the .incbin string of an __asm__ statement: two levels
 * of quoting, C's and the assembler's. Bytes that either would read
 * specially become the assembler's octal escapes. */
static void asm_path(FILE *f, const char *path) {
    for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\\\\\%c", *c);
        else if (*c < 0x20 || *c >= 0x7f || *c == '?')
            fprintf(f, "\\\\%03o", *c);
        else
            fputc(*c, f);
    }
}

/* int NAME_run(NAME_ctx *ctx, const T *in_x, ..., T *out_0, ...): the same
 * in the glue and the header. */
/* States (params declared `state`) get their API only where there are
 * some: a program without them links no state functions. */
static bool has_states(const CgProgram *p) {
    for (int i = 0; i < p->iface.nparams; i++)
        if (p->iface.params[i]->state) return true;
    return false;
}

static void run_prototype(FILE *f, const CgProgram *p) {
    const CgInterface *it = &p->iface;
    fprintf(f, "int %s_run(%s_ctx *ctx", p->g->name, p->g->name);
    for (int i = 0; i < it->ninputs; i++) {
        fprintf(f, ", const %s *", c_type(it->inputs[i]->dtype));
        input_param(f, it, i);
    }
    for (int i = 0; i < it->noutputs; i++)
        fprintf(f, ", %s *out_%d", c_type(it->outputs[i]->dtype), i);
    fputs(")", f);
}

/* A training program's descriptor (tgcrt.h RtTrainDesc): which param each
 * update output replaces, and which params are optimizer state. */
static void write_train(FILE *f, const CgProgram *p) {
    const CgInterface *it = &p->iface;
    int loss = -1;
    fprintf(f, "static const int32_t tgc_update_of[] = {");
    for (int i = 0; i < it->noutputs; i++) {
        const Value *o = it->outputs[i], *u = o->updates;
        if (o == p->g->train_loss && loss < 0) loss = i;
        fprintf(f, "%d, ", u ? it->slot[u->order] - 1 - it->ninputs : -1);
    }
    fprintf(f, "0};\nstatic const uint8_t tgc_role[] = {");
    for (int i = 0; i < it->nparams; i++)
        fprintf(f, "%d, ", it->params[i]->optim_state ? 1 : 0);
    fprintf(f, "0};\nstatic const uint8_t tgc_in_place[] = {");
    for (int i = 0; i < it->noutputs; i++)
        fprintf(f, "%d, ", it->in_place[i] ? 1 : 0);
    fprintf(f, "0};\nstatic const RtTrainDesc tgc_train = {%d, tgc_update_of, tgc_role, ", loss);
    c_string(f, p->g->optimizer);
    fputs(", tgc_in_place};\n", f);
}

/* tgc compile --train: a step, and the params and optimizer states by index. */
static void write_train_api(FILE *f, const CgProgram *p) {
    fprintf(f,
            "int %1$s_train_step(%1$s_ctx *ctx, const void *const *inputs, double *loss) {\n"
            "    return (int)rt_context_train_step((RtContext *)ctx, inputs, loss);\n}\n"
            "int %1$s_num_params(void) { return %2$d; }\n"
            "const char *%1$s_param_name(int i) { return i >= 0 && i < %2$d ? tgc_params[i].name "
            ": NULL; }\n"
            "int %1$s_param_is_state(int i) { return i >= 0 && i < %2$d ? tgc_role[i] : 0; }\n"
            "size_t %1$s_param_bytes(int i) {\n"
            "    int64_t n = 0;\n"
            "    if (i < 0 || i >= %2$d || !rt_desc_numel(&tgc_params[i].desc, &n)) return 0;\n"
            "    return (size_t)n * rt_dtype_size(tgc_params[i].storage);\n}\n"
            "int %1$s_get_param(%1$s_ctx *ctx, int i, void *dst) {\n"
            "    return (int)rt_context_get_param((RtContext *)ctx, i, dst);\n}\n"
            "int %1$s_set_param(%1$s_ctx *ctx, int i, const void *src) {\n"
            "    return (int)rt_context_set_param((RtContext *)ctx, i, src);\n}\n"
            "int %1$s_save_params(%1$s_ctx *ctx, const char *path, int state) {\n"
            "    return (int)rt_context_save_params((RtContext *)ctx, path, state ? 1 : 0);\n}\n"
            "int %1$s_load_params(%1$s_ctx *ctx, const char *path, int state) {\n"
            "    return (int)rt_context_load_params((RtContext *)ctx, path, state ? 1 : 0);\n}\n",
            p->g->name, p->iface.nparams);
}

/* The CPU levels the kernels were compiled for (codegen/llvm/module.c) and
 * the features each one's code may use: the runtime checks them against
 * CPUID before running any and picks the best (runtime/cpu_features.c). */
static void write_levels(FILE *f, const char *g, const CgCpuLevels *lv, int n) {
    if (!n) return;
    fprintf(f, "static const RtCpuLevel tgc_cpu_levels[%d] = {\n", n);
    for (int i = 0; i < n; i++) {
        fputs("    {", f);
        c_string(f, lv->l[i].name);
        fputs(", ", f);
        c_string(f, lv->l[i].cpu);
        fputs(", ", f);
        c_string(f, lv->l[i].checks);
        if (n > 1)
            fprintf(f, ", %s__forward_cpu%d},\n", g, i);
        else
            fprintf(f, ", %s__forward},\n", g);
    }
    fputs("};\n\n", f);
}

void cg_write_glue(FILE *f, const CgProgram *p, const GlueOptions *o) {
    const CgInterface *it = &p->iface;
    const char *g = p->g->name;
    /* The graph's name is a lexer identifier: it goes into comments and
     * symbols as it is, at any length (no fixed-size buffer holds it). */
    fprintf(f,
            "/* Generated by tgc from graph '%s'. */\n#include <math.h>\n#include <stddef.h>\n"
            "#include <stdint.h>\n#include <string.h>\n#include \"tgcrt.h\"\n\n",
            g);
    int nlv = o->cuda_decl || !o->levels ? 0 : o->levels->n;
    if (!o->cuda_decl && nlv <= 1)
        fprintf(f, "extern void %s__forward(void **bufs, RtPool *pool);\n\n", g);
    for (int i = 0; nlv > 1 && i < nlv; i++)
        fprintf(f, "extern void %s__forward_cpu%d(void **bufs, RtPool *pool);\n%s", g, i,
                i + 1 == nlv ? "\n" : "");
    write_levels(f, g, o->levels, nlv);
    tensor_table(f, p, "tgc_inputs", it->inputs, it->ninputs);
    tensor_table(f, p, "tgc_params", it->params, it->nparams);
    tensor_table(f, p, "tgc_outputs", it->outputs, it->noutputs);
    long long embed_len = 0;
    if (o->embed_path) {
        FILE *w = fopen(o->embed_path, "rb");
        if (w) {
            fseek(w, 0, SEEK_END);
            embed_len = ftell(w);
            fclose(w);
        }
        /* The weights go into .rodata as they are, aligned for mmap-like
         * zero-copy use. */
        fprintf(f, "__asm__(\".section .rodata\\n.balign 64\\n.type tgc_weights, @object\\n"
                   "tgc_weights:\\n.incbin \\\"");
        asm_path(f, o->embed_path);
        fprintf(f, "\\\"\\n.previous\\n\");\nextern const unsigned char tgc_weights[];\n");
    }
    write_convs(f, p); /* before the CUDA steps, which point into it */
    bool train = p->g->train_loss != NULL;
    if (train) write_train(f, p);
    if (o->cuda_decl) fprintf(f, "\n%s", o->cuda_decl);
    if (!o->cuda_decl) cg_write_steps(f, p); /* the profiler's (CPU only) */
    fputs("\nstatic const RtProgram tgc_program = {", f);
    c_string(f, g);
    fprintf(f, ", %d, %d, %d, tgc_inputs, tgc_params, tgc_outputs, %" PRId64 ", %d, ", it->ninputs,
            it->nparams, it->noutputs, arena_bytes(p), o->default_threads);
    if (o->cuda_decl)
        fputs("NULL", f);
    else
        fprintf(f, "%s__forward%s", g, nlv > 1 ? "_cpu0" : "");
    fprintf(f, ", %s, %lld, %s", o->embed_path ? "tgc_weights" : "NULL", embed_len,
            o->cuda_decl ? "&tgc_cuda" : "NULL");
    /* A CUDA program's convolutions are its steps' (cuDNN): no oneDNN. */
    if (p->nconvs && !o->cuda_decl)
        fprintf(f, ", tgc_convs, %d, %d, rt_conv_context_setup, rt_conv_context_free", p->nconvs,
                p->iface.conv_slot);
    else
        fputs(", NULL, 0, 0, NULL, NULL", f);
    fprintf(f, ", %s", train ? "&tgc_train" : "NULL");
    if (o->cuda_decl)
        fputs(", 0, NULL, 0, NULL, 0, NULL};\n\n", f);
    else
        fprintf(f, ", %d, tgc_steps, %d, %s, %d, %s};\n\n", p->kp->nkernels, cg_profile_slot(p),
                p->nconvs ? "rt_conv_impl" : "NULL", nlv, nlv ? "tgc_cpu_levels" : "NULL");
    if (o->with_main) {
        fprintf(f,
                "int main(int argc, char **argv) { return rt_main(&tgc_program, argc, argv); }\n");
        return;
    }
    /* The header's API over the runtime's contexts; the descriptor itself
     * for programs that drive contexts (tgc build --generate's main). */
    fprintf(f, "const RtProgram *%s_program(void) { return &tgc_program; }\n", g);
    fprintf(f,
            "typedef struct %1$s_ctx %1$s_ctx;\n"
            "int %1$s_create(%1$s_ctx **out, const char *weights_path, int threads) {\n"
            "    RtContext *c = NULL;\n"
            "    if (!out) return (int)TGCRT_ERR_ARG; /* as rt_context_create */\n"
            "    int s = (int)rt_context_create(&tgc_program, weights_path, threads, &c);\n"
            "    *out = (%1$s_ctx *)c;\n    return s;\n}\n"
            "int %1$s_create_from_memory(%1$s_ctx **out, const void *safetensors, size_t len, "
            "int threads) {\n"
            "    RtContext *c = NULL;\n"
            "    if (!out) return (int)TGCRT_ERR_ARG;\n"
            "    int s = (int)rt_context_create_from_memory(&tgc_program, safetensors, len, "
            "threads, &c);\n"
            "    *out = (%1$s_ctx *)c;\n    return s;\n}\n"
            "int %1$s_run_buffers(%1$s_ctx *ctx, const void *const *inputs, void *const "
            "*outputs) {\n"
            "    return (int)rt_context_run((RtContext *)ctx, inputs, outputs);\n}\n"
            "const char *%1$s_error(const %1$s_ctx *ctx) {\n"
            "    return ctx ? rt_context_error((const RtContext *)ctx) : \"out of memory\";\n}\n"
            "void %1$s_destroy(%1$s_ctx *ctx) { rt_context_destroy((RtContext *)ctx); }\n"
            "size_t %1$s_arena_bytes(void) { return tgc_program.arena_bytes; }\n"
            "int %1$s_num_inputs(void) { return %2$d; }\n"
            "int %1$s_num_outputs(void) { return %3$d; }\n"
            "static size_t tgc_bytes(const RtTensorInfo *t) {\n"
            "    size_t n = 0;\n    rt_desc_nbytes(&t->desc, &n);\n    return n;\n}\n"
            "size_t %1$s_input_bytes(int i) { return i >= 0 && i < %2$d ? "
            "tgc_bytes(&tgc_inputs[i]) : 0; }\n"
            "size_t %1$s_output_bytes(int i) { return i >= 0 && i < %3$d ? "
            "tgc_bytes(&tgc_outputs[i]) : 0; }\n"
            "size_t %1$s_params_bytes(void) {\n"
            "    size_t s = 0;\n"
            "    for (int i = 0; i < %4$d; i++) {\n"
            "        int64_t n = 0;\n"
            "        rt_desc_numel(&tgc_params[i].desc, &n);\n"
            "        s += (size_t)n * rt_dtype_size(tgc_params[i].storage);\n"
            "    }\n"
            "    return s;\n}\n"
            "const char *%1$s_input_name(int i) { return i >= 0 && i < %2$d ? tgc_inputs[i].name "
            ": NULL; }\n"
            "const char *%1$s_output_name(int i) { return i >= 0 && i < %3$d ? "
            "tgc_outputs[i].name : NULL; }\n",
            g, it->ninputs, it->noutputs, it->nparams);
    if (p->g->train_loss) write_train_api(f, p);
    run_prototype(f, p);
    fprintf(f, " {\n    const void *in[%d] = {", it->ninputs + 1);
    for (int i = 0; i < it->ninputs; i++) {
        if (i) fputs(", ", f);
        input_param(f, it, i);
    }
    if (!it->ninputs) fprintf(f, "0");
    fprintf(f, "};\n    void *out[%d] = {", it->noutputs + 1);
    for (int i = 0; i < it->noutputs; i++)
        fprintf(f, "%sout_%d", i ? ", " : "", i);
    fprintf(f, "};\n    return %s_run_buffers(ctx, in, out);\n}\n", g);
    if (has_states(p))
        fprintf(f,
                "int %1$s_reset_state(%1$s_ctx *ctx) {\n"
                "    return (int)rt_context_reset_state((RtContext *)ctx);\n}\n"
                "int %1$s_get_state(%1$s_ctx *ctx, const char *name, void *dst) {\n"
                "    return (int)rt_context_get_state((RtContext *)ctx, name, dst);\n}\n",
                g);
    cg_write_profile_api(f, p);
}

static void shape_comment(FILE *f, const Value *v) {
    fprintf(f, "%s[", dtype_name(v->dtype));
    for (int d = 0; d < v->ndim; d++)
        fprintf(f, "%s%" PRId64, d ? ", " : "", v->shape[d]);
    fprintf(f, "]");
}

void cg_write_header(FILE *f, const CgProgram *p, const char *link_line) {
    const CgInterface *it = &p->iface;
    const char *g = p->g->name;
    /* The line this graph needs, which the driver makes (driver/link_line.c)
     * from the groups of cmake/TgcLinkLibs.cmake, the one list. */
    fprintf(f,
            "/* Generated by tgc from graph '%1$s'. Link the object with libtgcrt.a\n"
            " * (-L its directory) and what this graph needs:\n"
            " *   %3$s\n"
            " * (tgc compile --print-link-line prints it with -L; pkg-config tgcrt and\n"
            " * CMake's tgc::tgcrt give every library, enough for any graph).\n"
            " *\n"
            " * A context holds the weights, the activation arena (%2$" PRId64
            " bytes) and a thread\n"
            " * pool; there is no global state, so contexts may run at once on different\n"
            " * threads (one run at a time per context). Buffers are the caller's: dense, C\n"
            " * order, at the dtypes below (bool as one byte, f16/bf16 as their 16-bit\n"
            " * patterns). Functions return 0 on success, else an error code: 1-6 and 9 the\n"
            " * input is wrong (I/O, format, shape, dtype, missing tensor, out of memory, an\n"
            " * index out of range), 7-8 a bug, 10 this machine cannot run it (%1$s_create:\n"
            " * a CPU without the instructions the kernels were compiled for, tgc compile\n"
            " * --cpu; or no GPU); %1$s_error() says what and where. */\n"
            "#ifndef TGC_%1$s_H\n#define TGC_%1$s_H\n#include <stddef.h>\n#include "
            "<stdint.h>\n#include <stdio.h>\n\n"
            "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
            "#define %1$s_OK 0\n\n"
            "typedef struct %1$s_ctx %1$s_ctx;\n\n"
            "/* Loads the weights from a safetensors file (NULL: embedded weights or the\n"
            " * graph's initialisers) and starts `threads` threads (0: one per core). On\n"
            " * failure *out is still set (NULL only when out of memory): read\n"
            " * %1$s_error(*out), then %1$s_destroy(*out). */\n"
            "int %1$s_create(%1$s_ctx **out, const char *weights_path, int threads);\n"
            "/* The same with a safetensors image the caller keeps alive until destroy. */\n"
            "int %1$s_create_from_memory(%1$s_ctx **out, const void *safetensors, size_t len, "
            "int threads);\n",
            g, (int64_t)p->plan->arena_bytes, link_line);
    fprintf(f, "/* Runs the graph. Inputs:");
    for (int i = 0; i < it->ninputs; i++) {
        fputs("\n *   ", f);
        input_param(f, it, i);
        fputs(": ", f);
        shape_comment(f, it->inputs[i]);
    }
    fprintf(f, "\n * Outputs:");
    for (int i = 0; i < it->noutputs; i++) {
        fprintf(f, "\n *   out_%d: %s ", i, it->outputs[i]->name);
        shape_comment(f, it->outputs[i]);
    }
    fputs(" */\n", f);
    run_prototype(f, p);
    fprintf(
        f,
        ";\n"
        "/* The same with arrays of buffers in declaration order. */\n"
        "int %1$s_run_buffers(%1$s_ctx *ctx, const void *const *inputs, void *const *outputs);\n"
        "const char *%1$s_error(const %1$s_ctx *ctx); /* \"\" when there was none */\n"
        "void %1$s_destroy(%1$s_ctx *ctx);\n\n"
        "size_t %1$s_arena_bytes(void);\n"
        "/* The weights a context holds, at their storage dtypes (scales included). */\n"
        "size_t %1$s_params_bytes(void);\n"
        "int %1$s_num_inputs(void);\n"
        "int %1$s_num_outputs(void);\n"
        "size_t %1$s_input_bytes(int i);\n"
        "size_t %1$s_output_bytes(int i);\n"
        "const char *%1$s_input_name(int i);\n"
        "const char *%1$s_output_name(int i);\n"
        "/* The program's descriptor, for the runtime's own API (tgcrt.h). */\n"
        "const struct RtProgram *%1$s_program(void);\n\n",
        g);
    if (p->g->train_loss)
        fprintf(f,
                "/* Training (tgc compile --train): one step of the optimizer on the inputs\n"
                " * (declared dtypes, in order; the loss as a double). The new params take\n"
                " * effect for the next step; a NaN or infinite loss changes nothing and\n"
                " * returns 9. Params are indexed 0..num_params-1 in declaration order, the\n"
                " * optimizer's states (param_is_state) after the graph's own; get/set copy\n"
                " * param_bytes(i) bytes at the param's storage dtype. save/load_params write\n"
                " * or read the weights (state 0) or the optimizer state (state 1) as\n"
                " * safetensors. */\n"
                "int %1$s_train_step(%1$s_ctx *ctx, const void *const *inputs, double *loss);\n"
                "int %1$s_num_params(void);\n"
                "const char *%1$s_param_name(int i);\n"
                "int %1$s_param_is_state(int i);\n"
                "size_t %1$s_param_bytes(int i);\n"
                "int %1$s_get_param(%1$s_ctx *ctx, int i, void *dst);\n"
                "int %1$s_set_param(%1$s_ctx *ctx, int i, const void *src);\n"
                "int %1$s_save_params(%1$s_ctx *ctx, const char *path, int state);\n"
                "int %1$s_load_params(%1$s_ctx *ctx, const char *path, int state);\n\n",
                g);
    if (has_states(p)) {
        fprintf(f, "/* States (`state` in the graph: a KV cache), kept between runs: zero when\n"
                   " * the context is created and after reset_state; get_state copies one, by\n"
                   " * name, at its storage dtype:");
        for (int i = 0; i < it->nparams; i++)
            if (it->params[i]->state) {
                fprintf(f, "\n *   %s: ", it->params[i]->name);
                shape_comment(f, it->params[i]);
            }
        fprintf(f,
                " */\n"
                "int %1$s_reset_state(%1$s_ctx *ctx);\n"
                "int %1$s_get_state(%1$s_ctx *ctx, const char *name, void *dst);\n\n",
                g);
    }
    cg_write_profile_decls(f, p);
    fputs("#ifdef __cplusplus\n}\n#endif\n#endif\n", f);
}
