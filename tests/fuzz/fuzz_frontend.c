/* libFuzzer target for the front end: source text -> checked IR -> `tgc show`.
 *
 * Every input runs through tgc_frontend exactly as the driver runs a file
 * (inputs with a NUL byte are skipped: the driver rejects them before the
 * front end sees them). The text is passed as libFuzzer's buffer itself, of
 * exactly Size bytes and not NUL-terminated, so a read past the end of the
 * source is an AddressSanitizer report. A quarter of the inputs (chosen by
 * their last byte) compile a second time with one -D override of the first
 * declared dimension, its value picked by their first byte; another quarter
 * compile a second time with their diagnostics rendered (to /dev/null), so
 * the caret and source-window code runs too. A graph that compiles is
 * printed both ways (`tgc show --json` and `tgc show`).
 *
 * Any crash, sanitizer report, leak, internal error (tgc_internal_error
 * exits, which libFuzzer reports) or slow input is a compiler bug. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/arena.h"
#include "frontend/tg/ast.h"
#include "support/diag.h"
#include "frontend/tg/lexer.h"
#include "frontend/tg/build.h"
#include "ir/print.h"
#include "frontend/frontend.h"
#include "passes/pipeline.h"

static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    devnull = fopen("/dev/null", "w");
    return 0;
}

/* Values a user could give with -D NAME=VALUE (the driver accepts any long
 * long): ordinary sizes, the edges a shape computation must survive, and
 * values that do not make a valid dimension. */
static const int64_t override_values[] = {
    1,
    2,
    3,
    4,
    7,
    8,
    16,
    64,
    128,
    1000,
    0,
    -1,
    -2,
    -64,
    (int64_t)1 << 31,
    ((int64_t)1 << 31) - 1,
    (int64_t)1 << 32,
    (int64_t)1 << 40,
    (int64_t)1 << 62,
    INT64_MAX,
    INT64_MIN,
    INT64_MIN + 1,
    3037000500, /* squares past INT64_MAX */
    2147483648LL * 3,
};

static void show(const Graph *g) {
    char *json = print_show_json(g);
    free(json);
    if (devnull) {
        print_show_text(devnull, g);
        fflush(devnull);
    }
}

/* One compilation, in its own arena, as the driver does it; diagnostics go
 * to diag_out (NULL: counted, not printed). */
static void compile_policy(const SrcFile *file, const DimOverride *ov, int nov, FILE *diag_out,
                           const PrecisionPolicy *pol) {
    Arena a = {0};
    Diag d;
    diag_init(&d, diag_out);
    Graph *g = tgc_frontend(&a, &d, file, ov, nov, pol);
    if (g) show(g);
    arena_free(&a);
}

static void compile(const SrcFile *file, const DimOverride *ov, int nov, FILE *diag_out) {
    compile_policy(file, ov, nov, diag_out, NULL);
}

/* The name of the first dimension the graph line declares, copied into buf;
 * false when there is none. */
static int first_dim_name(const SrcFile *file, char *buf, size_t cap) {
    Arena a = {0};
    Diag d;
    diag_init(&d, NULL);
    TokenList toks = lex(&a, &d, file);
    Program *prog = parse_program(&a, &d, toks);
    int ok = 0;
    if (prog && prog->ndims > 0 && prog->dim_names && prog->dim_names[0]) {
        size_t n = strlen(prog->dim_names[0]);
        if (n > 0 && n < cap) {
            memcpy(buf, prog->dim_names[0], n + 1);
            ok = 1;
        }
    }
    arena_free(&a);
    return ok;
}

/* A training step (passes/train.c): the graph's first 0-d float output as
 * the loss (else its first output: the error path), an optimizer, loss
 * scaling and recomputed values chosen by the input's first byte. */
static void compile_train(const SrcFile *file, uint8_t knob) {
    Arena a = {0};
    Diag d;
    diag_init(&d, NULL);
    Graph *g = tgc_frontend(&a, &d, file, NULL, 0, NULL);
    const char *loss = NULL;
    for (int i = 0; g && i < g->noutputs && !loss; i++)
        if (g->outputs[i]->ndim == 0 && dtype_is_float(g->outputs[i]->dtype))
            loss = g->outputs[i]->name;
    if (g && !loss && g->noutputs) loss = g->outputs[0]->name;
    if (loss) {
        Arena b = {0};
        Diag d2;
        diag_init(&d2, NULL);
        static const int ids[] = {1, 2, 3, 5, 8, 13, 21};
        TrainSpec t = train_spec_default((OptimKind)(knob % 3));
        t.loss = loss;
        t.momentum = knob & 4 ? 0.9 : 0;
        t.loss_scaling = (knob & 8) && t.optim != OPTIM_NONE;
        t.recompute = ids;
        t.nrecompute = knob & 16 ? 7 : 0;
        PrecisionPolicy pol = {.prec = knob & 8 ? PREC_MIXED_F16 : PREC_DECLARED, .io = DT_NONE};
        Graph *tg = tgc_frontend_train(&b, &d2, file, NULL, 0, &pol, &t);
        if (tg) show(tg);
        arena_free(&b);
    }
    arena_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > (size_t)INT_MAX) return 0;
    if (size > 0 && memchr(data, 0, size)) return 0; /* the driver rejects NUL */

    SrcFile file = {"fuzz.tg", (const char *)data, (int)size};
    compile(&file, NULL, 0, NULL);

    if (size >= 2 && data[size - 1] % 4 == 0) {
        char name[256];
        if (first_dim_name(&file, name, sizeof name)) {
            size_t nvals = sizeof override_values / sizeof override_values[0];
            DimOverride ov = {name, override_values[data[0] % nvals], 0, false};
            compile(&file, &ov, 1, NULL);
        }
    } else if (size >= 2 && data[size - 1] % 4 == 1 && devnull) {
        compile(&file, NULL, 0, devnull);
        fflush(devnull);
    } else if (size >= 2 && data[size - 1] % 4 == 2) {
        /* Every precision policy, with and without quantized weights. */
        PrecisionPolicy pol = {.prec = (Precision)(1 + data[0] % 5),
                               .io = data[0] & 8 ? DT_BF16 : DT_NONE,
                               .quant_bits = data[0] & 16 ? (data[0] & 32 ? 4 : 8) : 0,
                               .group_size = data[0] & 64 ? 3 : 0};
        compile_policy(&file, NULL, 0, NULL, &pol);
    } else if (size >= 2) {
        compile_train(&file, data[0]);
    }
    return 0;
}
