/* `tgc report --accuracy N` (see accuracy.h). */
#define _XOPEN_SOURCE 700
#include "driver/accuracy.h"
#include "support/atomic_file.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver/st_write.h"
#include "driver/toolchain.h"
#include "tgcrt.h"

static bool self_exe(char *buf, size_t cap) {
    ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
    if (n <= 0) return false;
    buf[n] = 0;
    return true;
}

/* Float params without an initialiser get uniform(-1/sqrt(fan_in),
 * +1/sqrt(fan_in)) (torch.nn.Linear's range), from a fixed generator so
 * two reports agree; integer ones get zeros. */
static bool synthesize_weights(const Graph *g, const char *path) {
    StBlob *b = calloc((size_t)g->nvalues + 1, sizeof *b);
    int nb = 0;
    bool ok = b != NULL;
    uint64_t state = 0x9E3779B97F4A7C15ull;
    for (int i = 0; ok && i < g->nvalues; i++) {
        const Value *v = g->values[i];
        if (v->op != OP_PARAM || v->dead || v->init.kind != INIT_NONE) continue;
        bool fl = dtype_is_float(v->dtype);
        int64_t numel = value_numel(v);
        StBlob *t = &b[nb++];
        t->name = v->name;
        t->dtype = fl ? RT_F32 : (RtDType)v->dtype; /* RtDType follows DType's order */
        t->ndim = v->ndim;
        for (int d = 0; d < v->ndim; d++)
            t->shape[d] = v->shape[d];
        t->nbytes = (size_t)numel * (fl ? 4 : dtype_size(v->dtype));
        t->data = t->owned = calloc(t->nbytes ? t->nbytes : 1, 1);
        ok = t->owned != NULL;
        if (!ok || !fl) continue; /* integers: zeros */
        int64_t fan_in = v->ndim ? v->shape[v->ndim - 1] : 1;
        float bound = 1.0f / sqrtf((float)(fan_in > 0 ? fan_in : 1));
        float *x = t->owned;
        for (int64_t j = 0; j < numel; j++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            float u = (float)((state >> 40) * (1.0 / 16777216.0)); /* [0, 1) */
            x[j] = (2 * u - 1) * bound;
        }
    }
    if (!ok)
        fprintf(stderr, "tgc report: error: out of memory making up weights\n");
    else
        ok = st_write("report", path, b, nb);
    for (int i = 0; b && i < nb; i++)
        free(b[i].owned);
    free(b);
    return ok;
}

bool accuracy_begin(AccSession *s, const Options *o, const Graph *declared, const char *weights,
                    int runs) {
    memset(s, 0, sizeof *s);
    s->o = o;
    s->runs = runs;
    const char *tdir = getenv("TMPDIR");
    /* Registered: an interrupted or killed report removes it (rt_atomic.h). */
    s->dir_slot =
        rt_tmp_mkdtemp(tdir && *tdir ? tdir : "/tmp", "tgc-accuracy", s->dir, sizeof s->dir);
    if (s->dir_slot < 0) {
        fprintf(stderr, "tgc report: error: cannot create a temporary directory: %s\n",
                strerror(errno));
        s->dir[0] = 0;
        return false;
    }
    if (weights) {
        s->weights = weights;
        return true;
    }
    snprintf(s->wpath, sizeof s->wpath, "%s/weights.safetensors", s->dir);
    if (!synthesize_weights(declared, s->wpath)) return false;
    s->weights = s->wpath;
    s->synthesized = true;
    return true;
}

/* tgc build FILE -o exe under pol; false when the build fails. */
static bool build(AccSession *s, const PrecisionPolicy *pol, const char *exe) {
    char self[PATH_MAX], group[32];
    if (!self_exe(self, sizeof self)) return false;
    char *argv[160];
    int n = 0;
    argv[n++] = self;
    argv[n++] = "build";
    argv[n++] = (char *)s->o->file;
    argv[n++] = "-o";
    argv[n++] = (char *)exe;
    argv[n++] = "--weights";
    argv[n++] = (char *)s->weights;
    argv[n++] = "--precision";
    argv[n++] = (char *)(pol->prec == PREC_DECLARED ? "f32" : precision_name(pol->prec));
    if (pol->quant_bits) {
        argv[n++] = "--quantize";
        argv[n++] = pol->quant_bits == 8 ? "int8" : "int4";
        if (pol->group_size) {
            snprintf(group, sizeof group, "%lld", (long long)pol->group_size);
            argv[n++] = "--group-size";
            argv[n++] = group;
        }
    }
    if (pol->io != DT_NONE) {
        argv[n++] = "--precision-io";
        argv[n++] = (char *)dtype_name(pol->io);
    }
    char defs[64][160];
    for (int i = 0; i < s->o->ndims && i < 64; i++) {
        snprintf(defs[i], sizeof defs[i], "-D%s=%lld", s->o->dims[i].name,
                 (long long)s->o->dims[i].value);
        argv[n++] = defs[i];
    }
    argv[n] = NULL;
    /* Its warnings were the report's own already; its errors are shown. */
    char log[4300];
    snprintf(log, sizeof log, "%s/build.log", s->dir);
    if (toolchain_exec_log(argv, log) == 0) return true;
    FILE *f = fopen(log, "r");
    char line[1024];
    while (f && fgets(line, sizeof line, f))
        fputs(line, stderr);
    if (f) fclose(f);
    return false;
}

static bool run_exe(const char *exe, int seed, const char *outdir) {
    char sd[32];
    snprintf(sd, sizeof sd, "%d", seed);
    mkdir(outdir, 0777);
    char *argv[] = {(char *)exe, "--random-inputs", sd, "--output-dir", (char *)outdir, NULL};
    return toolchain_exec(argv, false) == 0;
}

static double element(const RtArray *a, int64_t i) {
    const char *p = a->data;
    switch (a->desc.dtype) {
    case RT_I64: {
        int64_t v;
        memcpy(&v, p + 8 * i, 8);
        return (double)v;
    }
    case RT_I32: {
        int32_t v;
        memcpy(&v, p + 4 * i, 4);
        return v;
    }
    case RT_I16: {
        int16_t v;
        memcpy(&v, p + 2 * i, 2);
        return v;
    }
    case RT_I8: return (int8_t)p[i];
    case RT_U16:
    case RT_U32:
    case RT_U64: {
        uint64_t v = 0; /* little-endian: the low bytes */
        memcpy(&v, p + rt_dtype_size(a->desc.dtype) * (size_t)i, rt_dtype_size(a->desc.dtype));
        return (double)v;
    }
    case RT_U8:
    case RT_BOOL: return (uint8_t)p[i];
    default: return rt_load_float(p, a->desc.dtype, (size_t)i);
    }
}

bool accuracy_measure(AccSession *s, const PrecisionPolicy *pol, const Graph *g, Accuracy *acc) {
    char ref[4200], exe[4200], d1[4300], d2[4300], f1[4600], f2[4600];
    snprintf(ref, sizeof ref, "%s/f32", s->dir);
    if (!s->ref_built) {
        PrecisionPolicy f32 = {.prec = PREC_F32, .io = pol->io};
        if (!build(s, &f32, ref)) return false;
        s->ref_built = true;
    }
    snprintf(exe, sizeof exe, "%s/policy", s->dir);
    unlink(exe);
    if (!build(s, pol, exe)) return false;
    acc->nout = g->noutputs;
    acc->out = calloc((size_t)(g->noutputs > 0 ? g->noutputs : 1), sizeof *acc->out);
    acc->max_abs = acc->max_rel = 0;
    double *refmax = calloc((size_t)(g->noutputs > 0 ? g->noutputs : 1), sizeof(double));
    bool ok = acc->out && refmax;
    for (int r = 0; ok && r < s->runs; r++) {
        snprintf(d1, sizeof d1, "%s/ref%d", s->dir, r);
        snprintf(d2, sizeof d2, "%s/out%d", s->dir, r);
        ok = run_exe(ref, r, d1) && run_exe(exe, r, d2);
        for (int k = 0; ok && k < g->noutputs; k++) {
            AccOutput *o = &acc->out[k];
            o->name = g->outputs[k]->name;
            snprintf(f1, sizeof f1, "%s/%s.npy", d1, o->name);
            snprintf(f2, sizeof f2, "%s/%s.npy", d2, o->name);
            RtArray a = {0}, b = {0};
            RtError e;
            rt_error_clear(&e);
            if (rt_npy_read(f1, &a, &e) != TGCRT_OK || rt_npy_read(f2, &b, &e) != TGCRT_OK ||
                a.nbytes / rt_dtype_size(a.desc.dtype) != b.nbytes / rt_dtype_size(b.desc.dtype)) {
                fprintf(stderr, "tgc report: error: --accuracy: %s\n",
                        e.msg[0] ? e.msg : "outputs of different sizes");
                ok = false;
            }
            int64_t numel = ok ? (int64_t)(a.nbytes / rt_dtype_size(a.desc.dtype)) : 0;
            for (int64_t i = 0; i < numel; i++) {
                double x = element(&a, i), y = element(&b, i);
                if (!isfinite(x)) continue;
                if (!isfinite(y)) {
                    o->nonfinite = true;
                    continue;
                }
                if (fabs(x - y) > o->max_abs) o->max_abs = fabs(x - y);
                if (fabs(x) > refmax[k]) refmax[k] = fabs(x);
            }
            rt_array_free(&a);
            rt_array_free(&b);
        }
    }
    for (int k = 0; ok && k < g->noutputs; k++) {
        AccOutput *o = &acc->out[k];
        o->max_rel = refmax[k] > 0 ? o->max_abs / refmax[k] : o->max_abs > 0 ? INFINITY : 0;
        if (o->nonfinite) o->max_abs = o->max_rel = INFINITY;
        if (o->max_abs > acc->max_abs) acc->max_abs = o->max_abs;
        if (o->max_rel > acc->max_rel) acc->max_rel = o->max_rel;
    }
    free(refmax);
    if (!ok) fprintf(stderr, "tgc report: error: --accuracy: a build or run failed (above)\n");
    return ok;
}

void accuracy_end(AccSession *s) {
    if (s->dir[0]) rt_tmp_remove(s->dir_slot);
    s->dir[0] = 0;
}
