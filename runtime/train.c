/* Training contexts (tgcrt.h "training contexts"; docs/runtime.md
 * "Training programs").
 *
 * The generated forward of a training program computes, in one run, the
 * loss, the gradients and the optimizer's update, and writes each updated
 * param (and optimizer state) to an output of the param's storage dtype
 * and shape. A step points those outputs at spare buffers, runs the
 * forward and, when the loss is finite, swaps each spare with its param's
 * buffer: the update costs no copy, and the forward never writes a buffer
 * it reads (the params it reads and the spares it writes are distinct).
 * The price is one spare per updated param, allocated in one block whose
 * size rt_context_train_extra_bytes gives to tgc report.
 *
 * On a GPU (p->cuda) the params live on the device and the step's updates
 * become their values there (cuda_run.c): no spares, no swap. The host
 * copies of the params are then what the API hands out: downloaded when
 * read, and, once handed out for writing or loaded from a file, uploaded
 * before the next step. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context_internal.h"
#include "exe_internal.h"
#include "support/atomic_file.h"

static void forget_pair(RtContext *c, int role);
static int role_of(const RtProgram *p, int i);

struct RtTrainState {
    void *block;  /* every spare buffer, at spare_layout's offsets */
    void **spare; /* per output: where the next step writes its update, or NULL */
    void **out;   /* per output that updates nothing: its buffer (storage dtype), or NULL */
    bool stepped; /* a step has run: out holds its values */
    /* CUDA, per param: the host copy is newer than the device's (handed
     * out by rt_context_param_data, or loaded): uploaded before the next
     * step; ... */
    bool *lent;
    /* ... the host copy equals the device's (downloaded since the last
     * step). */
    bool *fresh;
};

static size_t pad64(size_t n) {
    return n > SIZE_MAX - (RT_ALIGN - 1) ? SIZE_MAX : (n + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN;
}

/* Bytes of output i at its storage dtype; 0 for an invalid descriptor. */
static size_t out_bytes(const RtTensorInfo *t) {
    RtDesc d = t->desc;
    size_t nb = 0;
    d.dtype = t->storage;
    if (d.ndim < 0 || d.ndim > RT_MAX_DIMS || !rt_desc_nbytes(&d, &nb)) return 0;
    return nb;
}

/* The spare buffers' offsets in the one block (off[i] for each output
 * that updates a param, when off is not NULL) and the block's size, each
 * buffer padded to 64 bytes as rt_aligned_alloc pads; SIZE_MAX on
 * overflow. The allocation and rt_context_train_extra_bytes both use it,
 * so what tgc report adds is what a context allocates. */
static size_t spare_layout(const RtProgram *p, size_t *off) {
    size_t total = 0;
    if (p->cuda) return 0; /* the updates are device outputs */
    for (int i = 0; i < p->noutputs; i++) {
        int32_t u = p->train->update_of[i];
        if (u < 0 || u >= p->nparams || rt_output_in_place(p, i)) continue;
        size_t nb = pad64(out_bytes(&p->outputs[i]));
        if (off) off[i] = total;
        if (nb > SIZE_MAX - total) return SIZE_MAX;
        total += nb;
    }
    return total;
}

size_t rt_context_train_extra_bytes(const RtProgram *p) {
    if (!p || !p->train || p->noutputs <= 0 || !p->outputs || !p->train->update_of) return 0;
    return spare_layout(p, NULL);
}

/* ---- --shuffle ---- */

/* splitmix64 (Steele, Lea and Flood 2014; Vigna's reference code): one
 * 64-bit step of the state, one mixed 64-bit output. */
static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

/* A Fisher-Yates shuffle (Durstenfeld's, from the last position down) of
 * 0..k-1 driven by splitmix64 whose state starts at seed XOR (epoch + 1) *
 * 0xD1342543DE82EF95 (mod 2^64), so each epoch has its own order and a
 * Python loop can redraw it (docs/training.md "Shuffling"). j = draw mod
 * (i + 1): the bias is below k / 2^64, and the order is defined by it. */
void rt_train_shuffle(uint64_t seed, uint64_t epoch, int64_t k, int64_t *perm) {
    uint64_t x = seed ^ ((epoch + 1) * 0xD1342543DE82EF95u);
    for (int64_t i = 0; i < k; i++)
        perm[i] = i;
    for (int64_t i = k - 1; i > 0; i--) {
        int64_t j = (int64_t)(splitmix64(&x) % (uint64_t)(i + 1));
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* ---- the descriptor ---- */

static const char *pname(const RtProgram *p) {
    return p->name ? p->name : "?";
}

RtStatus rt_train_check(RtContext *c) {
    const RtProgram *p = c->p;
    const RtTrainDesc *tr = p->train;
    char e[RT_DESC_STR_MAX], f[RT_DESC_STR_MAX];
    if (!tr->optimizer || (p->noutputs && !tr->update_of) || (p->nparams && !tr->role) ||
        tr->loss_output < 0 || tr->loss_output >= p->noutputs)
        return rt_error_set(&c->err, TGCRT_ERR_ARG, "program '%s': malformed train descriptor",
                            pname(p));
    const RtTensorInfo *loss = &p->outputs[tr->loss_output];
    if (loss->desc.ndim != 0 || !rt_dtype_is_float(loss->storage) ||
        tr->update_of[tr->loss_output] != -1)
        return rt_error_set(&c->err, TGCRT_ERR_ARG,
                            "program '%s': the loss '%s' must be a 0-d floating output that "
                            "updates no param",
                            pname(p), loss->name);
    for (int i = 0; i < p->nparams; i++)
        if (tr->role[i] != RT_ROLE_WEIGHT && tr->role[i] != RT_ROLE_STATE)
            return rt_error_set(&c->err, TGCRT_ERR_ARG, "param '%s': unknown role %d",
                                p->params[i].name, (int)tr->role[i]);
    /* by[u]: 1 + the output that updates param u (two would race for it) */
    int *by = calloc((size_t)p->nparams + 1, sizeof *by);
    if (!by) return rt_error_set(&c->err, TGCRT_ERR_NOMEM, "out of memory creating a context");
    RtStatus s = TGCRT_OK;
    for (int i = 0; !s && i < p->noutputs; i++) {
        const RtTensorInfo *o = &p->outputs[i];
        int32_t u = tr->update_of[i];
        if (u == -1) continue;
        if (u < -1 || u >= p->nparams) {
            s = rt_error_set(&c->err, TGCRT_ERR_ARG,
                             "output '%s': updates param %d, which does not exist", o->name,
                             (int)u);
            break;
        }
        const RtTensorInfo *t = &p->params[u];
        RtDesc od = o->desc, pd = t->desc;
        od.dtype = o->storage, pd.dtype = t->storage;
        if (by[u])
            s = rt_error_set(&c->err, TGCRT_ERR_ARG,
                             "param '%s' is updated by two outputs ('%s' and '%s')", t->name,
                             p->outputs[by[u] - 1].name, o->name);
        else if (!rt_desc_equal(&od, &pd))
            s = rt_error_set(&c->err, TGCRT_ERR_ARG,
                             "output '%s' updates param '%s' but is stored as %s, not %s", o->name,
                             t->name, rt_desc_format(&od, e, sizeof e),
                             rt_desc_format(&pd, f, sizeof f));
        by[u] = i + 1;
    }
    free(by);
    return s;
}

/* A convolution whose weights are folded once at setup (constant_weights)
 * would keep using the first step's weights: refuse it if a step updates
 * any of its operands. */
static RtStatus check_convs(RtContext *c) {
    const RtProgram *p = c->p;
    int first = 1 + p->ninputs;
    for (int k = 0; k < p->nconvs; k++) {
        const RtConvDesc *d = &p->convs[k];
        if (!d->constant_weights) continue;
        const RtConvRef refs[] = {d->weight, d->bias,      d->bn_mean,
                                  d->bn_var, d->bn_weight, d->bn_bias};
        for (size_t r = 0; r < sizeof refs / sizeof refs[0]; r++) {
            int slot = refs[r].slot;
            if (slot < first || slot >= first + p->nparams) continue;
            for (int i = 0; i < p->noutputs; i++)
                if (p->train->update_of[i] == slot - first)
                    return rt_error_set(&c->err, TGCRT_ERR_ARG,
                                        "program '%s': convolution %d folds param '%s' once "
                                        "(constant_weights), but a step updates it",
                                        pname(p), k, p->params[slot - first].name);
        }
    }
    return TGCRT_OK;
}

/* ---- the context's buffers ---- */

RtStatus rt_train_setup(RtContext *c) {
    const RtProgram *p = c->p;
    RtStatus s = check_convs(c);
    if (s) return s;
    RtTrainState *tr = c->train = calloc(1, sizeof *tr);
    size_t *off = calloc((size_t)p->noutputs + 1, sizeof *off);
    if (tr) {
        tr->spare = calloc((size_t)p->noutputs + 1, sizeof *tr->spare);
        tr->out = calloc((size_t)p->noutputs + 1, sizeof *tr->out);
        tr->lent = calloc((size_t)p->nparams + 1, sizeof *tr->lent);
        tr->fresh = calloc((size_t)p->nparams + 1, sizeof *tr->fresh);
    }
    if (!tr || !off || !tr->spare || !tr->out || !tr->lent || !tr->fresh) {
        free(off);
        return rt_error_set(&c->err, TGCRT_ERR_NOMEM, "out of memory creating a context");
    }
    size_t extra = spare_layout(p, off);
    if (extra == SIZE_MAX || (extra && !(tr->block = rt_aligned_alloc(extra)))) {
        free(off);
        return rt_error_set(&c->err, TGCRT_ERR_NOMEM,
                            "out of memory for the updated params' spare buffers (%zu bytes)",
                            extra);
    }
    for (int i = 0; tr->block && i < p->noutputs; i++) /* no block: CUDA, or nothing to spare */
        if (p->train->update_of[i] >= 0 && !rt_output_in_place(p, i))
            tr->spare[i] = (char *)tr->block + off[i];
    free(off);
    for (int i = 0; i < p->noutputs; i++) {
        if (p->train->update_of[i] >= 0) continue;
        size_t nb = rt_ctx_storage_bytes(&p->outputs[i]);
        if (!(tr->out[i] = rt_aligned_alloc(nb)))
            return rt_error_set(&c->err, TGCRT_ERR_NOMEM,
                                "out of memory for output '%s' (%zu bytes)", p->outputs[i].name,
                                nb);
    }
    return TGCRT_OK;
}

void rt_train_free(RtContext *c) {
    forget_pair(c, RT_ROLE_WEIGHT);
    forget_pair(c, RT_ROLE_STATE);
    RtTrainState *tr = c->train;
    if (!tr) return;
    for (int i = 0; tr->out && i < c->p->noutputs; i++)
        rt_aligned_free(tr->out[i]);
    rt_aligned_free(tr->block);
    free(tr->spare);
    free(tr->out);
    free(tr->lent);
    free(tr->fresh);
    free(tr);
    c->train = NULL;
}

void *rt_train_out_stage(RtContext *c, int i) {
    const RtTensorInfo *t = &c->p->outputs[i];
    if (t->storage == t->desc.dtype) return NULL;
    return c->p->train->update_of[i] >= 0 ? c->train->spare[i] : c->train->out[i];
}

/* ---- a step ---- */

static RtStatus not_training(RtContext *c, const char *fn) {
    return rt_error_set(&c->err, TGCRT_ERR_ARG,
                        "%s: program '%s' is not a training program (tgc build --train)", fn,
                        pname(c->p));
}

/* ---- the host copies of a CUDA context's params ---- */

/* Makes the host copy of param i current (downloading it unless it is
 * already): TGCRT_OK at once off CUDA, where the host copy is the param. */
static RtStatus host_current(const RtContext *c, int i, RtError *err) {
    RtTrainState *tr = c->train;
    if (!c->cuda || tr->lent[i] || tr->fresh[i]) return TGCRT_OK;
    RtStatus s = rt_cuda_param_download(c->cuda, i, c->bufs[1 + c->p->ninputs + i], err);
    tr->fresh[i] = s == TGCRT_OK;
    return s;
}

/* Before a CUDA step: the host copies handed out or loaded go up. */
static RtStatus upload_lent(RtContext *c) {
    RtTrainState *tr = c->train;
    for (int i = 0; i < c->p->nparams; i++) {
        if (!tr->lent[i]) continue;
        RtStatus s = rt_cuda_param_upload(c->cuda, i, c->bufs[1 + c->p->ninputs + i], &c->err);
        if (s) return s;
        tr->lent[i] = false;
    }
    return TGCRT_OK;
}

static RtStatus cuda_step(RtContext *c, const void *const *inputs) {
    RtStatus s = upload_lent(c);
    if (s) return s;
    s = rt_cuda_train_run(c->cuda, inputs, c->train->out, c->pool, &c->err);
    /* The device's params may have changed, even on an error. */
    memset(c->train->fresh, 0, (size_t)c->p->nparams * sizeof *c->train->fresh);
    return s;
}

RtStatus rt_context_train_step(RtContext *c, const void *const *inputs, double *loss) {
    if (loss) *loss = NAN;
    if (!c) return TGCRT_ERR_ARG;
    if (c->ready && !c->train) return not_training(c, "rt_context_train_step");
    RtStatus s = rt_ctx_stage_inputs(c, inputs, "rt_context_train_step");
    if (s) return s;
    const RtProgram *p = c->p;
    const RtTrainDesc *td = p->train;
    RtTrainState *tr = c->train;
    void **params = c->bufs + 1 + p->ninputs, **out = params + p->nparams;
    for (int i = 0; i < p->noutputs; i++)
        out[i] = td->update_of[i] < 0       ? tr->out[i]
                 : rt_output_in_place(p, i) ? params[td->update_of[i]]
                                            : tr->spare[i];
    s = c->cuda ? cuda_step(c, inputs) : rt_ctx_forward(c);
    tr->stepped = true;
    if (s) return s;
    double l = rt_load_float(tr->out[td->loss_output], p->outputs[td->loss_output].storage, 0);
    if (loss) *loss = l;
    if (!isfinite(l))
        return rt_error_set(&c->err, TGCRT_ERR_VALUE, "the loss is %s",
                            isnan(l) ? "nan"
                            : l > 0  ? "inf"
                                     : "-inf");
    for (int i = 0; !c->cuda && i < p->noutputs; i++) {
        int32_t u = td->update_of[i];
        if (u < 0 || rt_output_in_place(p, i)) continue;
        void *old = params[u];
        params[u] = tr->spare[i];
        tr->spare[i] = old;
    }
    forget_pair(c, RT_ROLE_WEIGHT); /* the params are no file's any more */
    forget_pair(c, RT_ROLE_STATE);
    rt_error_clear(&c->err);
    return TGCRT_OK;
}

const void *rt_context_output_data(const RtContext *c, int i) {
    if (!c || !c->train || !c->train->stepped || i < 0 || i >= c->p->noutputs) return NULL;
    int32_t u = c->p->train->update_of[i];
    if (u < 0) return c->train->out[i];
    RtError e; /* c is const: a failed download is only NULL */
    rt_error_clear(&e);
    return host_current(c, u, &e) ? NULL : c->bufs[1 + c->p->ninputs + u];
}

const void *rt_train_param_current(RtContext *c, int i) {
    if (rt_train_check_index(c, "get_param", i) || host_current(c, i, &c->err)) return NULL;
    return c->bufs[1 + c->p->ninputs + i];
}

void *rt_context_param_data(RtContext *c, int i) {
    if (!c || rt_train_check_index(c, "rt_context_param_data", i)) return NULL;
    if (host_current(c, i, &c->err)) return NULL;
    if (c->cuda) c->train->lent[i] = true; /* the caller may write to it */
    forget_pair(c, role_of(c->p, i));
    return c->bufs[1 + c->p->ninputs + i];
}

/* ---- saving and loading params ---- */

static int role_of(const RtProgram *p, int i) {
    return p->train ? p->train->role[i] : RT_ROLE_WEIGHT;
}

static RtStatus check_call(RtContext *c, const char *fn, const char *path, int role) {
    if (!c->ready) {
        if (c->err.status) return c->err.status;
        return rt_error_set(&c->err, TGCRT_ERR_ARG, "the context was not created");
    }
    if (!path) return rt_error_set(&c->err, TGCRT_ERR_ARG, "%s: no path given", fn);
    if (role != RT_ROLE_WEIGHT && role != RT_ROLE_STATE)
        return rt_error_set(&c->err, TGCRT_ERR_ARG, "%s: unknown role %d", fn, role);
    return TGCRT_OK;
}

/* ---- the pair mark ---- */

/* A hash of every param and state (their host copies, made current), as
 * 16 hex digits: what two files saved from the same moment share. 64-bit
 * words mixed one at a time (FNV-1a's multiply on words): a save is rare,
 * and this costs about what reading the params once does. */
static RtStatus pair_mark(RtContext *c, char out[17]) {
    const RtProgram *p = c->p;
    uint64_t h = 0xcbf29ce484222325u;
    for (int i = 0; i < p->nparams; i++) {
        RtStatus s = c->train ? host_current(c, i, &c->err) : TGCRT_OK;
        if (s) return s;
        const unsigned char *b = c->bufs[1 + p->ninputs + i];
        size_t nb = rt_ctx_storage_bytes(&p->params[i]), k = 0;
        for (; k + 8 <= nb; k += 8) {
            uint64_t w;
            memcpy(&w, b + k, 8);
            h = (h ^ w) * 0x100000001b3u;
            h ^= h >> 29;
        }
        for (; k < nb; k++)
            h = (h ^ b[k]) * 0x100000001b3u;
        h = (h ^ (uint64_t)i) * 0x100000001b3u; /* where one param ends */
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
    return TGCRT_OK;
}

static void forget_pair(RtContext *c, int role) {
    free(c->pair[role]);
    free(c->pair_file[role]);
    c->pair[role] = c->pair_file[role] = NULL;
}

RtStatus rt_train_pair_check(RtContext *c, const RtSafetensors *st, int role, bool note) {
    const char *m = rt_st_pair(st);
    int other = role == RT_ROLE_WEIGHT ? RT_ROLE_STATE : RT_ROLE_WEIGHT;
    if (m && c->pair[other] && strcmp(m, c->pair[other]))
        return rt_error_set(&c->err, TGCRT_ERR_VALUE,
                            "%s and %s were not saved together (pair marks %s and %s): the %s "
                            "of one run moment and the %s of another, as a save interrupted "
                            "between its two files leaves them; load the %s saved with these "
                            "%s (or neither)",
                            rt_st_name(st), c->pair_file[other], m, c->pair[other],
                            role == RT_ROLE_STATE ? "optimizer state" : "weights",
                            role == RT_ROLE_STATE ? "weights" : "optimizer state",
                            role == RT_ROLE_STATE ? "state" : "weights",
                            role == RT_ROLE_STATE ? "weights" : "state");
    if (!note) return TGCRT_OK;
    forget_pair(c, role);
    if (m && (!(c->pair[role] = strdup(m)) || !(c->pair_file[role] = strdup(rt_st_name(st))))) {
        forget_pair(c, role);
        return rt_error_set(&c->err, TGCRT_ERR_NOMEM, "out of memory");
    }
    return TGCRT_OK;
}

/* ---- saving ---- */

/* Writes role's params to a temporary for path (af), with the pair mark. */
static RtStatus write_role(RtContext *c, RtAtomicFile *af, const char *path, int role,
                           const char *pair) {
    const RtProgram *p = c->p;
    RtStatus s = TGCRT_OK;
    RtStTensorOut *t = calloc((size_t)p->nparams + 1, sizeof *t);
    void **conv = calloc((size_t)p->nparams + 1, sizeof *conv); /* converted copies */
    size_t n = 0;
    rt_afile_init(af);
    if (!t || !conv) s = rt_error_set(&c->err, TGCRT_ERR_NOMEM, "out of memory writing '%s'", path);
    for (int i = 0; !s && i < p->nparams; i++) {
        const RtTensorInfo *ti = &p->params[i];
        /* A state (a KV cache) belongs to the runs, not to the model. */
        if (role_of(p, i) != role || ti->state) continue;
        if (c->train && (s = host_current(c, i, &c->err))) break;
        const void *data = c->bufs[1 + p->ninputs + i];
        size_t nb = 0;
        int64_t numel = 0;
        rt_desc_nbytes(&ti->desc, &nb); /* checked by rt_context_create */
        rt_desc_numel(&ti->desc, &numel);
        if (ti->storage != ti->desc.dtype) { /* files hold the declared dtype */
            if (!(conv[n] = rt_aligned_alloc(nb))) {
                s = rt_error_set(&c->err, TGCRT_ERR_NOMEM,
                                 "out of memory converting param '%s' (%zu bytes)", ti->name, nb);
                break;
            }
            rt_convert_float_par(c->pool, data, ti->storage, conv[n], ti->desc.dtype,
                                 (size_t)numel);
            data = conv[n];
        }
        t[n++] = (RtStTensorOut){.name = ti->name, .desc = ti->desc, .data = data, .nbytes = nb};
    }
    if (!s) s = rt_st_write_begin(af, path, t, n, pair, &c->err);
    for (size_t i = 0; conv && i < n; i++)
        rt_aligned_free(conv[i]);
    free(conv);
    free(t);
    return s;
}

RtStatus rt_context_save_params(RtContext *c, const char *path, int role) {
    if (!c) return TGCRT_ERR_ARG;
    RtStatus s = check_call(c, "rt_context_save_params", path, role);
    if (s) return s;
    char pair[17];
    /* Only a training context has a state to pair with. */
    RtAtomicFile af;
    rt_afile_init(&af);
    if (!c->train || !(s = pair_mark(c, pair)))
        s = write_role(c, &af, path, role, c->train ? pair : NULL);
    if (!s) s = rt_st_write_commit(&af, &c->err);
    rt_afile_abort(&af);
    if (!s) rt_error_clear(&c->err);
    return s;
}

RtStatus rt_train_save_pair(RtContext *c, const char *wpath, const char *spath) {
    RtStatus s = check_call(c, "rt_train_save_pair", wpath, RT_ROLE_WEIGHT);
    if (!s) s = check_call(c, "rt_train_save_pair", spath, RT_ROLE_STATE);
    if (s) return s;
    char pair[17];
    RtAtomicFile w, st;
    rt_afile_init(&w);
    rt_afile_init(&st);
    if (!(s = pair_mark(c, pair)) && !(s = write_role(c, &w, wpath, RT_ROLE_WEIGHT, pair)))
        s = write_role(c, &st, spath, RT_ROLE_STATE, pair);
    /* Both are complete on disk: the renames are all that is left. */
    if (!s) s = rt_st_write_commit(&w, &c->err);
    if (!s) s = rt_st_write_commit(&st, &c->err);
    rt_afile_abort(&w);
    rt_afile_abort(&st);
    if (!s) rt_error_clear(&c->err);
    return s;
}

RtStatus rt_context_load_params(RtContext *c, const char *path, int role) {
    if (!c) return TGCRT_ERR_ARG;
    RtStatus s = check_call(c, "rt_context_load_params", path, role);
    if (s) return s;
    if (!c->train) return not_training(c, "rt_context_load_params");
    const RtProgram *p = c->p;
    RtSafetensors *st = NULL;
    if ((s = rt_st_open(path, &st, &c->err))) return s;
    /* Every tensor is checked before any is copied: a bad file changes
     * nothing. */
    for (int i = 0; !s && i < p->nparams; i++) {
        const RtTensorInfo *t = &p->params[i];
        if (role_of(p, i) != role || t->state) continue; /* never from a file */
        const RtStTensor *w = rt_st_find(st, t->name);
        char e[RT_DESC_STR_MAX];
        if (!w)
            s = rt_error_set(&c->err, TGCRT_ERR_MISSING, "%s: missing tensor '%s' (expected %s)",
                             rt_st_name(st), t->name, rt_desc_format(&t->desc, e, sizeof e));
        else
            s = rt_ctx_check_param_tensor(c, st, w, t);
        if (!s && role == RT_ROLE_STATE)
            s = rt_train_check_state(&c->err, rt_st_name(st), t, w->data, w->desc.dtype);
    }
    if (!s) s = rt_train_pair_check(c, st, role, true);
    for (int i = 0; !s && i < p->nparams; i++)
        if (role_of(p, i) == role && !p->params[i].state) {
            rt_ctx_copy_param_tensor(c, rt_st_find(st, p->params[i].name), &p->params[i],
                                     c->bufs[1 + p->ninputs + i]);
            if (c->cuda) c->train->lent[i] = true; /* uploaded before the next step */
        }
    rt_st_close(st);
    if (!s) rt_error_clear(&c->err);
    return s;
}
