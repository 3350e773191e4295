/* libFuzzer target for the C that `tgc build` and `tgc compile` write:
 * source text -> checked IR -> fusion, schedule, memory plan -> the glue
 * (executable and library forms, CPU and a stand-in CUDA declaration, with
 * and without embedded weights) and the header, written into memory. The
 * LLVM kernels and the system C compiler are left out: they take far
 * longer per input than fuzzing allows.
 *
 * The system compiler is replaced by checks of the text (gen_check.c) that
 * catch what would make it fail or read back something else: a stray
 * identifier (an `inf` or `nan` printed as a number, a name cut short), an
 * unterminated or wrongly escaped string literal, a byte C does not allow,
 * and every param's initialiser constants read back bit for bit (-0.0 and
 * the sign of a NaN included). A failed check aborts with the text, which
 * libFuzzer reports as a crash.
 *
 * The input picks the precision policy (last byte) and the weights path
 * to embed (first byte), so the policies' storage dtypes and the path
 * escaping for .incbin are covered too. A source that declares `output
 * loss` is built as `tgc build --train loss` builds it (where the driver
 * allows training: no --quantize, no pure f16/bf16), with the optimizer
 * picked by the first byte (gradients only, SGD with momentum and weight
 * decay, AdamW), so the training glue and its state are covered too. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "support/arena.h"
#include "support/diag.h"
#include "passes/fusion.h"
#include "passes/memplan.h"
#include "frontend/frontend.h"
#include "passes/pipeline.h"
#include "passes/precision.h"
#include "passes/train.h"
#include "tests/fuzz/gen_check.h"

/* Paths a --weights file may have: the glue quotes them twice (C, then the
 * assembler's .incbin). None exists, so the embedded length is 0. */
static const char *const embed_paths[] = {
    "/tmp/w.safetensors",
    "/tmp/a \"quoted\" \\ back\\slash.safetensors",
    "/tmp/new\nline\ttab?\?=trigraph.safetensors",
    "/tmp/caf\xc3\xa9 \x7f\x01.safetensors",
};

/* Stands in for cg_cuda_emit's declaration: the glue only pastes it. */
static const char cuda_decl[] = "static const RtCudaProgram tgc_cuda = {0};\n";

static char *render(void (*write)(FILE *, const CgProgram *, const GlueOptions *),
                    const CgProgram *p, const GlueOptions *o) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    write(f, p, o);
    fclose(f);
    return text;
}

static void write_header(FILE *f, const CgProgram *p, const GlueOptions *o) {
    (void)o;
    cg_write_header(f, p, "-ltgcrt -lopenblas -lcjson -lpthread -lm");
}

static void emit_all(const CgProgram *p, uint8_t pick) {
    const char *path = embed_paths[pick % (sizeof embed_paths / sizeof *embed_paths)];
    GlueOptions forms[] = {
        {.with_main = true, .default_threads = 1},
        {.with_main = false, .embed_path = path},
        {.with_main = true, .embed_path = path, .cuda_decl = cuda_decl},
        {.with_main = false, .cuda_decl = cuda_decl},
    };
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        char *text = render(cg_write_glue, p, &forms[i]);
        if (text) gen_check_glue(text, p, &forms[i]);
        free(text);
    }
    char *h = render(write_header, p, NULL);
    if (h) gen_check_header(h, p);
    free(h);
}

static bool contains(const uint8_t *data, size_t size, const char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i + n <= size; i++)
        if (!memcmp(data + i, s, n)) return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > (size_t)INT_MAX) return 0;
    if (size > 0 && memchr(data, 0, size)) return 0; /* the driver rejects NUL */
    SrcFile file = {"fuzz.tg", (const char *)data, (int)size};
    PrecisionPolicy pol = {0};
    const PrecisionPolicy *polp = NULL;
    if (size >= 2 && data[size - 1] % 2 == 1) {
        uint8_t b = data[size - 1] >> 1;
        pol = (PrecisionPolicy){.prec = (Precision)(1 + b % 5),
                                .io = b & 8 ? DT_BF16 : DT_NONE,
                                .quant_bits = b & 16 ? (b & 32 ? 4 : 8) : 0,
                                .group_size = b & 64 ? 3 : 0};
        polp = &pol;
    }
    TrainSpec spec;
    const TrainSpec *train = NULL;
    static const char loss_decl[] = "output loss";
    bool may_train = !polp || (!pol.quant_bits && pol.prec != PREC_F16 && pol.prec != PREC_BF16);
    if (may_train && contains(data, size, loss_decl)) {
        OptimKind k = (OptimKind)((data[0] >> 2) % 3);
        spec = train_spec_default(k);
        spec.loss = "loss";
        if (k == OPTIM_SGD && data[0] & 32) spec.momentum = 0.9, spec.weight_decay = 1e-3;
        spec.loss_scaling = polp && pol.prec == PREC_MIXED_F16 && k != OPTIM_NONE;
        train = &spec;
    }
    Arena a = {0};
    Diag d;
    diag_init(&d, NULL);
    Graph *g = tgc_frontend_train(&a, &d, &file, NULL, 0, polp, train);
    if (g) {
        /* As driver/cmd_build.c builds a program. */
        CgProgram p;
        cg_program_plan(&a, g, &p);
        emit_all(&p, size ? data[0] : 0);
    }
    arena_free(&a);
    return 0;
}
