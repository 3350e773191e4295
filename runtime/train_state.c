/* The optimizer state's values, and params by index (tgcrt.h "training
 * contexts").
 *
 * A state file is input like any other: a NaN step count or a negative
 * second moment would not fail a step, it would make every loss NaN (or,
 * for the loss scale, skip every step forever) with nothing naming the
 * file. So every value of an optimizer state is checked where it enters a
 * context (a weights or state file, rt_context_set_param) against the
 * rule its name gives. The names are the ones the compiler's optimizer
 * gives its states (passes/train.c, passes/grad.c; docs/training.md); a
 * state of another name must be finite. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "context_internal.h"

typedef enum StateRule {
    RULE_FINITE, /* any finite value */
    RULE_NONNEG, /* finite and >= 0 */
    RULE_COUNT,  /* a non-negative integer */
    RULE_SCALE,  /* finite, positive and normal: 1/scale must be finite in f32 */
} StateRule;

static const struct {
    const char *name; /* the whole name, or (suffix) its end */
    bool suffix;
    StateRule rule;
    const char *what;
} rules[] = {
    {"__step", false, RULE_COUNT, "the step count"},
    {"__growth_tracker", false, RULE_COUNT, "the loss scaler's count of good steps"},
    {"__loss_scale", false, RULE_SCALE, "the loss scale"},
    {".exp_avg_sq", true, RULE_NONNEG, "AdamW's second moment (a running mean of squares)"},
    {".exp_avg", true, RULE_FINITE, "AdamW's first moment"},
    {".momentum_buffer", true, RULE_FINITE, "SGD's momentum buffer"},
};

static const char *rule_text(StateRule r) {
    switch (r) {
    case RULE_NONNEG: return "finite and >= 0";
    case RULE_COUNT: return "a non-negative integer";
    case RULE_SCALE: return "finite, positive and a normal f32 (not below 1.2e-38)";
    default: return "finite";
    }
}

/* Element i of data (dtype t) as a double; integers exactly up to 2^53. */
static double load_value(const void *data, RtDType t, size_t i) {
    if (rt_dtype_is_float(t)) return rt_load_float(data, t, i);
    return (double)rt_load_int(data, t, i);
}

static bool obeys(StateRule r, double v) {
    switch (r) {
    case RULE_NONNEG: return isfinite(v) && v >= 0;
    case RULE_COUNT: return isfinite(v) && v >= 0 && v == floor(v);
    case RULE_SCALE: return isfinite(v) && v >= FLT_MIN;
    default: return isfinite(v);
    }
}

RtStatus rt_train_check_state(RtError *err, const char *where, const RtTensorInfo *t,
                              const void *data, RtDType dtype) {
    StateRule rule = RULE_FINITE;
    const char *what = "an optimizer state";
    size_t nl = strlen(t->name);
    for (size_t k = 0; k < sizeof rules / sizeof *rules; k++) {
        size_t rl = strlen(rules[k].name);
        if (rules[k].suffix ? nl > rl && !strcmp(t->name + nl - rl, rules[k].name)
                            : !strcmp(t->name, rules[k].name)) {
            rule = rules[k].rule;
            what = rules[k].what;
            break;
        }
    }
    int64_t n = 0;
    rt_desc_numel(&t->desc, &n); /* checked by rt_context_create */
    for (int64_t i = 0; i < n; i++) {
        double v = load_value(data, dtype, (size_t)i);
        if (obeys(rule, v)) continue;
        char at[48] = "";
        if (t->desc.ndim > 0) snprintf(at, sizeof at, " at element %lld", (long long)i);
        return rt_error_set(err, TGCRT_ERR_VALUE,
                            "%s: tensor '%s' is %.9g%s, but %s must be %s: not an optimizer "
                            "state tgc saved (or a damaged one)",
                            where, t->name, v, at, what, rule_text(rule));
    }
    return TGCRT_OK;
}

/* ---- params by index (tgc compile's NAME_get_param, NAME_set_param) ---- */

RtStatus rt_train_check_index(RtContext *c, const char *fn, int i) {
    if (!c->ready) {
        if (c->err.status) return c->err.status;
        return rt_error_set(&c->err, TGCRT_ERR_ARG, "the context was not created");
    }
    const RtProgram *p = c->p;
    if (!c->train)
        return rt_error_set(&c->err, TGCRT_ERR_ARG,
                            "%s: program '%s' is not a training program (tgc build --train)", fn,
                            p->name ? p->name : "?");
    if (i < 0 || i >= p->nparams) {
        if (!p->nparams)
            return rt_error_set(&c->err, TGCRT_ERR_ARG,
                                "%s: param index %d is out of range: the program has no params", fn,
                                i);
        return rt_error_set(&c->err, TGCRT_ERR_ARG,
                            "%s: param index %d is out of range: the program has %d params "
                            "(0..%d)",
                            fn, i, p->nparams, p->nparams - 1);
    }
    return TGCRT_OK;
}

RtStatus rt_context_get_param(RtContext *c, int i, void *dst) {
    if (!c) return TGCRT_ERR_ARG;
    RtStatus s = rt_train_check_index(c, "get_param", i);
    if (s) return s;
    if (!dst)
        return rt_error_set(&c->err, TGCRT_ERR_ARG, "get_param: param %d ('%s'): dst is NULL", i,
                            c->p->params[i].name);
    const void *src = rt_train_param_current(c, i);
    if (!src) return c->err.status ? c->err.status : TGCRT_ERR_INTERNAL;
    size_t nb = rt_ctx_storage_bytes(&c->p->params[i]);
    if (nb) memcpy(dst, src, nb);
    rt_error_clear(&c->err);
    return TGCRT_OK;
}

RtStatus rt_context_set_param(RtContext *c, int i, const void *src) {
    if (!c) return TGCRT_ERR_ARG;
    RtStatus s = rt_train_check_index(c, "set_param", i);
    if (s) return s;
    const RtTensorInfo *t = &c->p->params[i];
    if (!src)
        return rt_error_set(&c->err, TGCRT_ERR_ARG, "set_param: param %d ('%s'): src is NULL", i,
                            t->name);
    if (c->p->train->role[i] == RT_ROLE_STATE) {
        char where[64];
        snprintf(where, sizeof where, "set_param %d", i);
        if ((s = rt_train_check_state(&c->err, where, t, src, t->storage))) return s;
    }
    void *dst = rt_context_param_data(c, i);
    if (!dst) return c->err.status ? c->err.status : TGCRT_ERR_INTERNAL;
    size_t nb = rt_ctx_storage_bytes(t);
    if (nb) memcpy(dst, src, nb);
    rt_error_clear(&c->err);
    return TGCRT_OK;
}
