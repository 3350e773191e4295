/* rt_train_main: the main() of a training executable (tgc build --train;
 * cli.md "Additions"; docs/runtime.md "Training programs"). rt_main hands
 * over to it when the program has a train descriptor.
 *
 *   ./EXE [--weights W] --input NAME=FILE.npy... --steps N
 *         [--save-weights OUT.safetensors] [--save-state S] [--load-state S]
 *         [--output-dir D] [--log-every K] [--threads N] [--profile]
 *         [--profile-json FILE] [--help]
 *
 * It checks the command line and every file name before anything runs,
 * creates a training context (params from --weights, the embedded image or
 * the initialisers; the optimizer state from --load-state or its
 * initialisers), loads every input (a file may hold k batches stacked
 * along the first dimension: step s uses batch s mod k, or with --shuffle
 * SEED the batch that epoch s / k's shuffle puts at s mod k), runs N steps and
 * only then writes what was asked: a failed step (a NaN loss) writes
 * nothing. Exit codes as rt_main's: 0 ok, 1 bad input, 2 bad command line,
 * 3 a bug. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exe_internal.h"
#include "support/atomic_file.h"

typedef RtExeArgs Args;

/* One input: the whole file at the declared dtype, and its batches. */
typedef struct Data {
    RtArray arr;
    size_t batch; /* bytes of one batch: the declared type's */
    int64_t k;    /* batches in the file */
} Data;

typedef struct Train {
    RtContext *ctx;
    Data *data;
    const void **in;
    void *conv;    /* an output converted to its declared dtype */
    int64_t *perm; /* --shuffle: this epoch's order of the k batches */
    int64_t k;     /* --shuffle: the data sets' batch count (1: none) */
} Train;

static bool trained(const RtProgram *p, int param) {
    for (int i = 0; i < p->noutputs; i++)
        if (p->train->update_of[i] == param) return true;
    return false;
}

static void print_help(const RtProgram *p, const Args *a) {
    char s[RT_DESC_STR_MAX];
    const RtTrainDesc *tr = p->train;
    printf("usage: %s %s\n\n", a->prog, rt_exe_usage(a));
    /* Not yet checked by a context: read only what is there. */
    if (!tr->optimizer || tr->loss_output < 0 || tr->loss_output >= p->noutputs || !tr->update_of ||
        (p->nparams && !tr->role) || (p->ninputs && !p->inputs) || (p->nparams && !p->params) ||
        !p->outputs) {
        printf("(the program's train descriptor is malformed)\n");
        return;
    }
    printf("Trains the graph '%s' (optimizer %s, loss '%s'). Each step computes the loss,\n"
           "the gradients and the update; the next step uses the updated params.\n",
           p->name ? p->name : "?", tr->optimizer, p->outputs[tr->loss_output].name);
    printf("\ninputs (.npy files of exactly this dtype and shape, or data sets of k batches\n"
           "stacked along the first dimension, one batch per step in turn; bf16 from float32):\n");
    for (int i = 0; i < p->ninputs; i++)
        printf("  %s: %s\n", p->inputs[i].name, rt_desc_format(&p->inputs[i].desc, s, sizeof s));
    printf("\nparams (--weights, --save-weights):\n");
    for (int i = 0; i < p->nparams; i++)
        if (tr->role[i] == RT_ROLE_WEIGHT)
            printf("  %s: %s, %s\n", p->params[i].name,
                   rt_desc_format(&p->params[i].desc, s, sizeof s),
                   p->params[i].state ? "a state (kept between steps, never saved)"
                   : trained(p, i)    ? "trained"
                                      : "frozen");
    printf("\noptimizer state (--load-state, --save-state):\n");
    for (int i = 0; i < p->nparams; i++)
        if (tr->role[i] == RT_ROLE_STATE)
            printf("  %s: %s\n", p->params[i].name,
                   rt_desc_format(&p->params[i].desc, s, sizeof s));
    printf("\noutputs (--output-dir):\n");
    for (int i = 0; i < p->noutputs; i++)
        if (tr->update_of[i] < 0)
            printf("  %s: %s\n", p->outputs[i].name,
                   rt_desc_format(&p->outputs[i].desc, s, sizeof s));
    printf("\noptions:\n"
           "  --weights W.safetensors  the params' initial values (default: the embedded\n"
           "                           weights, else the graph's initialisers)\n"
           "  --input NAME=FILE.npy    the input NAME (every input is required)\n"
           "  --steps N                run N training steps (0: none, the params are saved\n"
           "                           as loaded)\n"
           "  --save-weights FILE      after the last step, write every param (trained and\n"
           "                           frozen) to FILE (safetensors, declared dtypes)\n"
           "  --save-state FILE        after the last step, write the optimizer state to FILE\n"
           "  --load-state FILE        start from the optimizer state in FILE (default: its\n"
           "                           initialisers)\n"
           "  --output-dir DIR         after the last step, write each output to DIR/NAME.npy\n"
           "  --log-every K            print \"step S loss L\" after every K steps and the last\n"
           "  --shuffle SEED           read the k batches of the data sets in a random order\n"
           "                           each epoch (docs/training.md \"Shuffling\")\n"
           "  --seed S                 dropout's seed (default 0, or the one --load-state\n"
           "                           restores; docs/training.md \"Dropout's mask\")\n"
           "  --threads N              threads to use (0: the program's default%s)\n"
           "  --profile                after the steps, print the time of every step of the\n"
           "                           program (the median over the training steps)\n"
           "  --profile-json FILE      write every training step's steps to FILE as Chrome\n"
           "                           trace events\n"
           "  --help                   this message\n",
           p->default_threads ? "" : ", one per core");
}

/* "f32[k*2, 4]": the type of a data set of k batches of d. */
static char *dataset_format(const RtDesc *d, char *buf, size_t cap) {
    char one[RT_DESC_STR_MAX];
    rt_desc_format(d, one, sizeof one);
    char *br = strchr(one, '[');
    if (!br) return rt_desc_format(d, buf, cap);
    snprintf(buf, cap, "%.*sk*%s", (int)(br + 1 - one), one, br + 1);
    return buf;
}

/* Reads input t's file whole: its type must be t's (bf16 from float32),
 * or a data set of k batches of it. */
static int load_data(const Args *a, const RtTensorInfo *t, const char *file, Data *d) {
    RtError err;
    rt_error_clear(&err);
    RtStatus s = rt_npy_read(file, &d->arr, &err);
    if (s) return rt_exe_error(a, rt_status_exit_code(s), "input '%s': %s", t->name, err.msg);
    const RtDesc *want = &t->desc, *f = &d->arr.desc;
    RtDType stored = want->dtype == RT_BF16 ? RT_F32 : want->dtype;
    bool ok = f->dtype == stored && f->ndim == want->ndim;
    for (int i = 1; ok && i < want->ndim; i++)
        ok = f->shape[i] == want->shape[i];
    d->k = 1;
    if (ok && want->ndim > 0 && f->shape[0] != want->shape[0]) {
        int64_t n = want->shape[0];
        ok = n > 0 && f->shape[0] % n == 0; /* f->shape[0] is not n: k >= 2 or 0 */
        d->k = ok ? f->shape[0] / n : 0;
        ok = d->k >= 2;
    }
    if (!ok) {
        char e[RT_DESC_STR_MAX], k[RT_DESC_STR_MAX], g[RT_DESC_STR_MAX];
        if (want->ndim == 0)
            return rt_exe_error(a, 1, "input '%s' (%s): expected %s%s, found %s", t->name, file,
                                rt_desc_format(want, e, sizeof e),
                                stored != want->dtype ? " as a float32 array" : "",
                                rt_desc_format(f, g, sizeof g));
        return rt_exe_error(
            a, 1,
            "input '%s' (%s): expected %s, or a data set %s of k batches%s, "
            "found %s",
            t->name, file, rt_desc_format(want, e, sizeof e), dataset_format(want, k, sizeof k),
            stored != want->dtype ? " (as a float32 array)" : "", rt_desc_format(f, g, sizeof g));
    }
    rt_desc_nbytes(want, &d->batch); /* checked by rt_context_create */
    if (want->dtype == RT_BF16) {
        /* Rounded in place: element i's 2 bytes land below element i's 4,
         * over elements already read. */
        unsigned char *b = d->arr.data;
        for (size_t i = 0; i < d->arr.nbytes / 4; i++) {
            float v;
            memcpy(&v, b + 4 * i, 4);
            uint16_t h = rt_f32_to_bf16(v);
            memcpy(b + 2 * i, &h, 2);
        }
    }
    return 0;
}

static void log_loss(long long step, double loss) {
    printf("step %lld loss %.9g\n", step, loss);
    fflush(stdout); /* progress, when piped */
}

/* The median of n step times (sorts them). */
static double median_of(double *us, long long n) {
    return us && n > 0 ? rt_bench_stats(us, (size_t)n).median_us : 0; /* NULL: not profiling */
}

static int run_steps(const RtProgram *p, const Args *a, Train *r) {
    double loss = NAN;
    /* --profile: every step, each timed as a whole for the table's
     * "measured" (what the steps' rows must add up to). */
    bool prof = a->profile || a->profile_json;
    bool fits = (unsigned long long)a->steps < SIZE_MAX / sizeof(double) - 1;
    double *step_us = prof && fits ? malloc(((size_t)a->steps + 1) * sizeof *step_us) : NULL;
    if (prof && !step_us) return rt_exe_error(a, 1, "out of memory for the profile");
    int rc = rt_exe_profile_start(a, r->ctx);
    for (long long st = 0; !rc && st < a->steps; st++) {
        if (r->perm && st % r->k == 0)
            rt_train_shuffle(a->shuffle_seed, (uint64_t)(st / r->k), r->k, r->perm);
        for (int i = 0; i < p->ninputs; i++) {
            const Data *d = &r->data[i];
            int64_t b = d->k == 1 ? 0 : r->perm ? r->perm[st % r->k] : st % d->k;
            r->in[i] = (const char *)d->arr.data + (size_t)b * d->batch;
        }
        int64_t t0 = rt_now_ns();
        RtStatus s = rt_context_train_step(r->ctx, r->in, &loss);
        if (step_us) step_us[st] = (double)(rt_now_ns() - t0) / 1000.0;
        if (s) {
            rc = rt_exe_error(a, rt_status_exit_code(s), "step %lld: %s", st + 1,
                              rt_context_error(r->ctx));
            break;
        }
        if (a->log_set && (st + 1) % a->log_every == 0) log_loss(st + 1, loss);
    }
    if (!rc && a->log_set && a->steps > 0 && a->steps % a->log_every) log_loss(a->steps, loss);
    /* Which of the program's CPU levels ran (tgc build --cpu A,B,...). */
    if (!rc && a->profile && *rt_context_cpu_level(r->ctx))
        printf("cpu level: %s\n", rt_context_cpu_level(r->ctx));
    if (!rc) rc = rt_exe_profile_finish(a, r->ctx, median_of(step_us, a->steps));
    free(step_us);
    return rc;
}

/* After the last step: the params and state asked for, then the outputs
 * (converted to their declared dtypes). */
static int save(const RtProgram *p, const Args *a, Train *r) {
    const char *path[2] = {a->save_weights, a->save_state};
    /* Interrupted, the program removes the temporary it was writing. */
    rt_tmp_install_signals();
    if (path[0] && path[1]) { /* both written, then both renamed: one pair mark */
        RtStatus s = rt_train_save_pair(r->ctx, path[0], path[1]);
        if (s) return rt_exe_error(a, rt_status_exit_code(s), "%s", rt_context_error(r->ctx));
    }
    for (int role = RT_ROLE_WEIGHT; role <= RT_ROLE_STATE && !(path[0] && path[1]); role++) {
        RtStatus s = path[role] ? rt_context_save_params(r->ctx, path[role], role) : TGCRT_OK;
        if (s) return rt_exe_error(a, rt_status_exit_code(s), "%s", rt_context_error(r->ctx));
    }
    if (!a->outdir_set || a->steps == 0) return 0; /* no step: no outputs */
    for (int i = 0; i < p->noutputs; i++) {
        const RtTensorInfo *t = &p->outputs[i];
        if (p->train->update_of[i] >= 0) continue;
        const void *data = rt_context_output_data(r->ctx, i);
        if (t->storage != t->desc.dtype) {
            size_t nb;
            int64_t n;
            rt_desc_nbytes(&t->desc, &nb);
            rt_desc_numel(&t->desc, &n);
            rt_aligned_free(r->conv);
            if (!(r->conv = rt_aligned_alloc(nb)))
                return rt_exe_error(a, 1, "out of memory for output '%s' (%zu bytes)", t->name, nb);
            rt_convert_float(data, t->storage, r->conv, t->desc.dtype, (size_t)n);
            data = r->conv;
        }
        int rc = rt_exe_write_output(a, t, data);
        if (rc) return rc;
    }
    return 0;
}

/* --shuffle: the data sets (inputs of k >= 2 batches) are read in one
 * order, so they must hold the same number of batches. */
static int shuffle_setup(const RtProgram *p, const Args *a, Train *r) {
    int first = -1;
    for (int i = 0; i < p->ninputs; i++) {
        if (r->data[i].k < 2) continue;
        if (first < 0) {
            first = i;
        } else if (r->data[i].k != r->data[first].k) {
            return rt_exe_error(a, 1,
                                "--shuffle: input '%s' holds %lld batches and input '%s' %lld; "
                                "shuffled data sets must hold the same number",
                                p->inputs[first].name, (long long)r->data[first].k,
                                p->inputs[i].name, (long long)r->data[i].k);
        }
    }
    r->k = first < 0 ? 1 : r->data[first].k;
    if (first >= 0 && !(r->perm = malloc((size_t)r->k * sizeof *r->perm)))
        return rt_exe_error(a, 1, "out of memory for --shuffle's order of %lld batches",
                            (long long)r->k);
    return 0;
}

/* --seed S: dropout's key, the 0-d i64 state __dropout_seed (set after
 * --load-state, so the flag wins over a saved seed). A program without
 * dropout in training mode draws nothing: the seed changes nothing. */
static int set_dropout_seed(const RtProgram *p, const Args *a, Train *r) {
    for (int i = 0; i < p->nparams; i++) {
        if (strcmp(p->params[i].name, "__dropout_seed")) continue;
        int64_t v = (int64_t)a->dropout_seed; /* the bits of the u64 */
        RtStatus s = rt_context_set_param(r->ctx, i, &v);
        if (s) return rt_exe_error(a, rt_status_exit_code(s), "%s", rt_context_error(r->ctx));
    }
    return 0;
}

static int train(const RtProgram *p, Args *a, Train *r) {
    int rc = rt_exe_check_inputs(p, a);
    if (!rc && a->outdir_set) rc = rt_exe_check_outdir(a);
    if (!rc) rc = rt_exe_check_files(p, a);
    if (!rc) rc = rt_exe_profile_check(a, p);
    if (rc) return rc;

    RtStatus s = rt_context_create(p, a->weights, (int)a->threads, &r->ctx);
    if (!s && a->load_state) s = rt_context_load_params(r->ctx, a->load_state, RT_ROLE_STATE);
    if (s)
        return rt_exe_error(a, rt_status_exit_code(s), "%s",
                            r->ctx ? rt_context_error(r->ctx) : "out of memory");
    if (a->dropout_seed_set && (rc = set_dropout_seed(p, a, r))) return rc;

    r->data = calloc((size_t)p->ninputs + 1, sizeof *r->data);
    r->in = calloc((size_t)p->ninputs + 1, sizeof *r->in);
    if (!r->data || !r->in) return rt_exe_error(a, 1, "out of memory");
    for (int i = 0; i < p->ninputs; i++)
        if ((rc =
                 load_data(a, &p->inputs[i], rt_exe_input_file(a, p->inputs[i].name), &r->data[i])))
            return rc;
    if (a->shuffle_set && (rc = shuffle_setup(p, a, r))) return rc;

    if ((rc = run_steps(p, a, r)) || (rc = save(p, a, r))) return rc;
    if (fflush(stdout) || ferror(stdout))
        return rt_exe_error(a, 1, "cannot write to standard output");
    return 0;
}

int rt_train_main(const RtProgram *p, int argc, char **argv) {
    Args a = {.train = true};
    int rc = rt_exe_args_parse(&a, p, argc, argv);
    if (!rc && !p->train) {
        rc = rt_exe_error(&a, 3, "program '%s' is not a training program", a.prog);
    } else if (!rc && a.help) {
        print_help(p, &a);
        rc = fflush(stdout) ? 1 : 0;
    } else if (!rc && !a.steps_set) {
        rc = rt_exe_usage_error(&a, "--steps N is required (the number of training steps)%s", "");
    } else if (!rc) {
        Train r = {0};
        rc = train(p, &a, &r);
        if (r.data)
            for (int i = 0; i < p->ninputs; i++)
                rt_array_free(&r.data[i].arr);
        free(r.data);
        free(r.in);
        free(r.perm);
        rt_aligned_free(r.conv);
        rt_context_destroy(r.ctx);
    }
    rt_exe_args_free(&a);
    return rc;
}
