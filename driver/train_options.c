/* The training flags (cli.md "Additions"): --train LOSS and the
 * optimizer's hyper-parameters, shared by build, compile, run, show and
 * report. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "driver/driver.h"

static int need_value(const Options *o, const char *flag, const char *usage_line) {
    fprintf(stderr, "tgc %s: %s needs an argument\nusage: %s\n", o->command, flag, usage_line);
    return 2;
}

static bool parse_num(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) return false;
    *out = v;
    return true;
}

static int bad(const Options *o, const char *flag, const char *v, const char *expected) {
    fprintf(stderr, "tgc %s: error: %s %s: expected %s\n", o->command, flag, v, expected);
    return 1;
}

int options_train_flag(Options *o, int argc, char **argv, int *i, const char *usage_line) {
    static const char *flags[] = {"--train",        "--optimizer", "--lr",  "--momentum",
                                  "--weight-decay", "--betas",     "--eps", "--freeze"};
    const char *a = argv[*i];
    int f = -1;
    for (int k = 0; k < 8; k++)
        if (!strcmp(a, flags[k])) f = k;
    if (f < 0) return -1;
    if (*i + 1 >= argc) return need_value(o, a, usage_line);
    const char *v = argv[++*i];
    TrainFlags *t = &o->tf;
    t->given |= 1u << f;
    switch (f) {
    case 0:
        if (!*v) return bad(o, a, "''", "the name of a 0-d output");
        t->loss = v;
        return 0;
    case 1:
        if (!optim_parse(v, &t->optim)) return bad(o, a, v, "sgd, adamw or none");
        return 0;
    case 2: return parse_num(v, &t->lr) && t->lr >= 0 ? 0 : bad(o, a, v, "a number >= 0");
    case 3:
        return parse_num(v, &t->momentum) && t->momentum >= 0 ? 0 : bad(o, a, v, "a number >= 0");
    case 4:
        return parse_num(v, &t->weight_decay) && t->weight_decay >= 0
                   ? 0
                   : bad(o, a, v, "a number >= 0");
    case 5: {
        const char *comma = strchr(v, ',');
        char b1[64];
        if (!comma || (size_t)(comma - v) >= sizeof b1) return bad(o, a, v, "B1,B2");
        memcpy(b1, v, (size_t)(comma - v));
        b1[comma - v] = 0;
        if (!parse_num(b1, &t->beta1) || !parse_num(comma + 1, &t->beta2) || t->beta1 < 0 ||
            t->beta1 >= 1 || t->beta2 < 0 || t->beta2 >= 1)
            return bad(o, a, v, "B1,B2 with each in [0, 1)");
        return 0;
    }
    case 6: return parse_num(v, &t->eps) && t->eps >= 0 ? 0 : bad(o, a, v, "a number >= 0");
    default: {
        /* a comma-separated list; repeated flags add to it */
        for (const char *p = v; *p;) {
            size_t w = strcspn(p, ",");
            if (!w || t->nfreeze == TRAIN_MAX_FREEZE)
                return bad(o, a, v, "NAME,... (names or shell patterns, at most 256, none empty)");
            t->freeze[t->nfreeze++] = strndup(p, w);
            p += w + (p[w] == ',');
        }
        return 0;
    }
    }
}

int options_train_finish(Options *o) {
    TrainFlags *t = &o->tf;
    enum { TRAIN = 1, OPTIM = 2, LR = 4, MOMENTUM = 8, WD = 16, BETAS = 32, EPS = 64 };
    if (t->given && !(t->given & TRAIN)) {
        fprintf(stderr, "tgc %s: error: the optimizer flags need --train LOSS\n", o->command);
        return 1;
    }
    if (!t->given) return 0;
    if (!(t->given & OPTIM)) t->optim = OPTIM_SGD;
    TrainSpec d = train_spec_default(t->optim);
    if ((t->given & MOMENTUM) && t->optim != OPTIM_SGD) {
        fprintf(stderr, "tgc %s: error: --momentum applies to --optimizer sgd\n", o->command);
        return 1;
    }
    if ((t->given & (BETAS | EPS)) && t->optim != OPTIM_ADAMW) {
        fprintf(stderr, "tgc %s: error: --betas and --eps apply to --optimizer adamw\n",
                o->command);
        return 1;
    }
    if (o->quant_bits) {
        fprintf(stderr, "tgc %s: error: --quantize cannot be combined with --train\n", o->command);
        return 1;
    }
    if (o->prec == PREC_F16 || o->prec == PREC_BF16) {
        fprintf(stderr,
                "tgc %s: error: --train keeps f32 master weights: use --precision mixed-bf16 or "
                "mixed-f16, not %s\n",
                o->command, precision_name(o->prec));
        return 1;
    }
    TrainSpec *s = &o->train;
    *s = d;
    s->loss = t->loss;
    if (t->given & LR) s->lr = t->lr;
    if (t->given & MOMENTUM) s->momentum = t->momentum;
    if (t->given & WD) s->weight_decay = t->weight_decay;
    if (t->given & BETAS) s->beta1 = t->beta1, s->beta2 = t->beta2;
    if (t->given & EPS) s->eps = t->eps;
    s->loss_scaling = o->prec == PREC_MIXED_F16 && t->optim != OPTIM_NONE;
    s->freeze = (const char *const *)t->freeze;
    s->nfreeze = t->nfreeze;
    o->has_train = true;
    return 0;
}

void options_train_free(Options *o) {
    for (int i = 0; i < o->tf.nfreeze; i++)
        free(o->tf.freeze[i]);
    o->tf.nfreeze = 0;
}
