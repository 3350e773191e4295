/* The .tg being written: identifiers made from ONNX names, params declared
 * on first use with their data kept for the weights file, numbers as
 * literals, and one statement per node with the node named in a trailing
 * comment (so a diagnostic's source line says which node it came from). */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/ox.h"

void ox_emit(Ox *x, int part, const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if (x->len[part] + (size_t)n + 1 > x->cap[part]) {
        size_t cap = x->cap[part] ? x->cap[part] : 4096;
        while (cap < x->len[part] + (size_t)n + 1)
            cap *= 2;
        char *nb = realloc(x->buf[part], cap);
        if (!nb) ox_fail(x, "out of memory");
        x->buf[part] = nb;
        x->cap[part] = cap;
    }
    vsnprintf(x->buf[part] + x->len[part], (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    x->len[part] += (size_t)n;
}

/* Names the .tg gives a meaning to: a value may not take them. */
static bool reserved(const char *s) {
    static const char *const kw[] = {
        "graph",  "input", "param",   "output",  "def",     "return",   "repeat",     "true",
        "false",  "True",  "False",   "None",    "inf",     "nan",      "math",       "torch",
        "F",      "nn",    "float",   "int",     "bool",    "abs",      "min",        "max",
        "and",    "or",    "not",     "in",      "is",      "if",       "else",       "for",
        "lambda", "f64",   "f32",     "f16",     "bf16",    "i64",      "i32",        "i16",
        "i8",     "u8",    "float32", "float16", "float64", "half",     "double",     "long",
        "int64",  "int32", "int16",   "int8",    "uint8",   "bfloat16", "functional", "zeros",
        "ones",   "full",  "randn",   "uniform", "arange",  NULL};
    for (int k = 0; kw[k]; k++)
        if (!strcmp(kw[k], s)) return true;
    return op_lookup(s) != OP_COUNT;
}

/* torch's names: "/layer1/layer1.0/conv1/Conv_output_0" -> layer1_0_conv1_conv
 * (a module path segment repeated as the next one's prefix is dropped). */
const char *ox_ident(Ox *x, const char *name, const char *suffix) {
    size_t len = strlen(name ? name : "");
    char *s = arena_alloc(x->a, len + (suffix ? strlen(suffix) : 0) + 16);
    const char *p = name ? name : "";
    if (!strncmp(p, "onnx::", 6)) p += 6;
    /* "/conv1/Conv_output_0": the module's name says it; drop the op. */
    if (!suffix) {
        size_t pl = strlen(p);
        if (pl > 9 && !strcmp(p + pl - 9, "_output_0")) pl -= 9;
        const char *last = NULL, *prev = NULL;
        for (size_t k = 0; k < pl; k++)
            if (p[k] == '/') prev = last, last = p + k;
        if (last && prev) {
            size_t ol = (size_t)(p + pl - last - 1), ml = (size_t)(last - prev - 1);
            while (ol && (isdigit((unsigned char)last[ol]) || last[ol] == '_'))
                ol--;
            bool same = ol <= ml;
            for (size_t k = 0; same && k < ol; k++)
                same = tolower((unsigned char)last[1 + k]) == tolower((unsigned char)prev[1 + k]);
            if (same && ol > 1) p = arena_strndup(x->a, p, (size_t)(last - p));
        }
    }
    while (*p == '/')
        p++;
    size_t o = 0;
    while (*p) {
        const char *seg = p, *end = strchr(p, '/');
        size_t sl = end ? (size_t)(end - p) : strlen(p);
        /* "layer1" followed by "layer1.0": keep the longer */
        if (end && !strncmp(end + 1, seg, sl) && end[1 + sl] == '.') {
            p = end + 1;
            continue;
        }
        if (o) s[o++] = '_';
        for (size_t k = 0; k < sl; k++)
            s[o++] = seg[k];
        p = end ? end + 1 : seg + sl;
    }
    s[o] = 0;
    char *cut = strstr(s, "_output_0");
    if (cut && !cut[9]) *cut = 0;
    if (suffix) strcat(s, suffix);
    /* identifier characters, lower case, single underscores */
    o = 0;
    for (size_t k = 0; s[k]; k++) {
        char c = isalnum((unsigned char)s[k]) ? (char)tolower((unsigned char)s[k]) : '_';
        if (c == '_' && (o == 0 || s[o - 1] == '_')) continue;
        s[o++] = c;
    }
    while (o && s[o - 1] == '_')
        o--;
    s[o] = 0;
    const char *base = s;
    if (!*s || isdigit((unsigned char)s[0])) base = arena_printf(x->a, "v%s%s", *s ? "_" : "", s);
    if (reserved(base)) base = arena_printf(x->a, "%s_", base);
    const char *id = base;
    if (strmap_find(&x->ids, id)) {
        int *next = strmap_at(x->a, &x->next_suffix, base, NULL);
        if (*next < 2) *next = 2;
        do
            id = arena_printf(x->a, "%s_%d", base, (*next)++);
        while (strmap_find(&x->ids, id));
    }
    strmap_add(x->a, &x->ids, id);
    return id;
}

const char *ox_num(Ox *x, double v, bool is_float) {
    if (!is_float) return arena_printf(x->a, "%lld", (long long)v);
    if (v != v) return "nan";
    if (v > 1e308 * 10) return "inf";
    if (v < -1e308 * 10) return "-inf";
    char *s = arena_printf(x->a, "%.9g", v);
    if ((double)(float)v != v) s = arena_printf(x->a, "%.17g", v);
    if (!strpbrk(s, ".eEn")) s = arena_printf(x->a, "%s.0", s);
    return s;
}

const char *ox_scalar(Ox *x, OxVal *v) {
    if (!v || !v->c || v->c->n != 1) return NULL;
    OxConst *c = v->c;
    double d = ox_const_get(x, c, 0);
    if (c->dt == DT_BOOL) return d != 0 ? "true" : "false";
    if (!dtype_is_float(c->dt) && c->sym && c->sym[0]) return c->sym[0];
    return ox_num(x, d, dtype_is_float(c->dt));
}

/* The bytes of c in its dtype (transposed: a 2-d [in, out] as [out, in]). */
static const void *const_bytes(Ox *x, OxConst *c, bool transposed, size_t *nbytes) {
    size_t es = dtype_size(c->dt);
    *nbytes = (size_t)c->n * es;
    if (c->raw && !transposed) return c->raw;
    uint8_t *buf = arena_alloc(x->a, *nbytes ? *nbytes : 1);
    if (c->raw) {
        int64_t r = c->shape[0], cols = c->shape[1];
        for (int64_t i = 0; i < r; i++)
            for (int64_t j = 0; j < cols; j++)
                memcpy(buf + (size_t)(j * r + i) * es, c->raw + (size_t)(i * cols + j) * es, es);
        return buf;
    }
    ox_const_values(x, c);
    for (int64_t k = 0; k < c->n; k++) {
        int64_t src = k;
        if (transposed) src = (k % c->shape[0]) * c->shape[1] + k / c->shape[0];
        uint8_t *p = buf + (size_t)k * es;
        double f = dtype_is_float(c->dt) ? c->f[src] : 0;
        int64_t i = dtype_is_float(c->dt) ? 0 : c->i[src];
        switch (c->dt) {
        case DT_F32: {
            float v = (float)f;
            memcpy(p, &v, 4);
            break;
        }
        case DT_F64: memcpy(p, &f, 8); break;
        case DT_F16:
        case DT_BF16: {
            /* folded f16/bf16 constants: rounded through f32's bits */
            float v = (float)f;
            uint32_t b;
            memcpy(&b, &v, 4);
            uint16_t h;
            if (c->dt == DT_BF16) {
                h = (uint16_t)((b + 0x7fff + ((b >> 16) & 1)) >> 16);
            } else {
                uint32_t sign = (b >> 16) & 0x8000, ex = (b >> 23) & 0xff, m = b & 0x7fffff;
                int e = (int)ex - 127 + 15;
                h = e >= 31  ? (uint16_t)(sign | 0x7c00)
                    : e <= 0 ? (uint16_t)sign
                             : (uint16_t)(sign | (uint32_t)e << 10 | m >> 13);
            }
            memcpy(p, &h, 2);
            break;
        }
        case DT_I64:
        case DT_U64: memcpy(p, &i, 8); break;
        case DT_I32:
        case DT_U32: {
            uint32_t v = (uint32_t)(uint64_t)i;
            memcpy(p, &v, 4);
            break;
        }
        case DT_I16:
        case DT_U16: {
            uint16_t v = (uint16_t)(uint64_t)i;
            memcpy(p, &v, 2);
            break;
        }
        default: *p = (uint8_t)i; break;
        }
    }
    return buf;
}

const char *ox_param(Ox *x, OxConst *c, bool transposed) {
    const char **slot = transposed ? &c->param_t : &c->param;
    if (*slot) return *slot;
    const char *hint = c->hint ? c->hint : "const";
    const char *name = ox_ident(x, hint, transposed && c->param ? "_t" : NULL);
    OnnxParam p = {.name = name, .onnx_name = hint, .dtype = c->dt, .ndim = c->ndim};
    for (int k = 0; k < c->ndim; k++)
        p.shape[k] = c->shape[transposed ? c->ndim - 1 - k : k];
    p.data = const_bytes(x, c, transposed, &p.nbytes);
    ARENA_PUSH(x->a, x->params, x->nparams, x->capparams, p);
    ox_emit(x, OX_PARAMS, "param %s : %s[", name, dtype_name(c->dt));
    for (int k = 0; k < c->ndim; k++)
        ox_emit(x, OX_PARAMS, "%s%lld", k ? ", " : "", (long long)p.shape[k]);
    ox_emit(x, OX_PARAMS, "]");
    if (strcmp(name, hint) || transposed)
        ox_emit(x, OX_PARAMS, "  # %s%s", hint,
                transposed ? ", transposed (linear's [out, in])" : "");
    ox_emit(x, OX_PARAMS, "\n");
    *slot = name;
    return name;
}

const char *ox_param_of(Ox *x, DType dt, int ndim, const int64_t *shape, const int64_t *iv,
                        const double *fv, const char *hint) {
    OxConst *c = ox_const_new(x, dt, ndim, shape);
    ox_const_values(x, c);
    for (int64_t k = 0; k < c->n; k++)
        if (c->i)
            c->i[k] = iv[k];
        else
            c->f[k] = fv[k];
    c->hint = hint;
    return ox_param(x, c, false);
}

const char *ox_ref(Ox *x, OxVal *v, bool scalar_ok) {
    if (!v) ox_fail(x, "a required input is missing");
    if (v->tg) return v->tg;
    if (!v->c) ox_fail(x, "input '%s' has no value yet", v->name);
    if (scalar_ok && v->c->n == 1 && v->c->ndim == 0) return ox_scalar(x, v);
    if (!v->c->hint) {
        /* A name from the node using it: "/conv1/Conv" -> conv1_const. */
        Onnx__NodeProto *n = ox_cur(x);
        const char *nn = n->name && *n->name ? n->name : v->name;
        const char *slash = strrchr(nn, '/');
        v->c->hint = v->is_init && strncmp(v->name, "onnx::", 6) ? v->name
                     : slash && slash != nn
                         ? arena_printf(x->a, "%.*s/const", (int)(slash - nn), nn)
                         : v->name;
    }
    return ox_param(x, v->c, false);
}

void ox_bind(Ox *x, OxVal *out, const char *expr) {
    Onnx__NodeProto *n = ox_cur(x);
    const char *name = ox_ident(x, out->name, NULL);
    ox_emit(x, OX_BODY, "%s%s = %s", out->is_output ? "output " : "", name, expr);
    /* an output renamed: the ONNX name, for callers matching outputs */
    bool renamed = out->is_output && strcmp(name, out->name);
    ox_emit(x, OX_BODY, "  # %s %s%s%s%s\n", n->op_type, n->name && *n->name ? n->name : out->name,
            renamed ? " (output '" : "", renamed ? out->name : "", renamed ? "')" : "");
    out->tg = name;
    out->out_written = out->is_output;
}

const char *ox_tmp(Ox *x, const char *base, const char *suffix, const char *expr) {
    const char *id = ox_ident(x, base, suffix);
    ox_emit(x, OX_BODY, "%s = %s\n", id, expr);
    return id;
}

void ox_set_shape(OxVal *v, DType dt, int ndim, const OxDim *d) {
    v->dt = dt;
    v->ndim = ndim;
    for (int k = 0; k < ndim; k++)
        v->dim[k] = d[k];
}

bool ox_bind_shaped(Ox *x, OxVal *out, const char *expr, DType dt, int ndim, const OxDim *d) {
    ox_bind(x, out, expr);
    ox_set_shape(out, dt, ndim, d);
    return true;
}

static uint64_t hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

OxVal *ox_val(Ox *x, const char *name) {
    if (!name || !*name || !x->tabcap) return NULL;
    for (uint64_t i = hash(name) & (uint64_t)(x->tabcap - 1);;
         i = (i + 1) & (uint64_t)(x->tabcap - 1)) {
        if (!x->tab[i]) return NULL;
        if (!strcmp(x->tab[i]->name, name)) return x->tab[i];
    }
}

OxVal *ox_val_new(Ox *x, const char *name) {
    if (!name || !*name) ox_fail(x, "a value without a name");
    if (ox_val(x, name)) ox_fail(x, "value '%s' is defined twice", name);
    OxVal *v = ARENA_NEW(x->a, OxVal);
    v->name = name;
    v->dt = DT_F32;
    v->producer = -1;
    uint64_t i = hash(name) & (uint64_t)(x->tabcap - 1);
    while (x->tab[i])
        i = (i + 1) & (uint64_t)(x->tabcap - 1);
    x->tab[i] = v;
    return v;
}
