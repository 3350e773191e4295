/* --print: a tensor's values as torch prints them (str(tensor) with
 * torch's default print options: precision 4, threshold 1000, edgeitems 3,
 * linewidth 80, sci_mode automatic). This follows torch/_tensor_str.py
 * (1.13) step by step: the _Formatter's choice of integer, fixed or
 * scientific notation and its column width from the non-zero finite
 * values of the (summarised) data; _vector_str's elements per line; the
 * nested brackets with one blank line per dimension between slices; the
 * "..." of summarisation; and the dtype= / size= suffixes. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

#define PRECISION 4
#define THRESHOLD 1000
#define EDGEITEMS 3
#define LINEWIDTH 80

typedef struct Buf {
    char *s;
    size_t len, cap;
    bool oom;
} Buf;

static void put(Buf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

static void puts_(Buf *b, const char *s) {
    put(b, s, strlen(s));
}

static void spaces(Buf *b, int n) {
    for (int i = 0; i < n; i++)
        put(b, " ", 1);
}

/* ---- the formatter ---- */

typedef struct Fmt {
    RtDType t;
    bool floating, int_mode, sci_mode;
    int width;
    const char *data;
    const RtDesc *d;
    int64_t strides[RT_MAX_DIMS];
    bool summarize;
} Fmt;

/* Python's str() of the value, before padding. */
static int format_value(const Fmt *f, int64_t off, char *out, size_t cap) {
    if (!f->floating) {
        const char *p = f->data + (size_t)off * rt_dtype_size(f->t);
        switch (f->t) {
        case RT_BOOL: return snprintf(out, cap, "%s", *(const uint8_t *)p ? "True" : "False");
        case RT_U8: return snprintf(out, cap, "%u", (unsigned)*(const uint8_t *)p);
        case RT_U16: {
            uint16_t v;
            memcpy(&v, p, 2);
            return snprintf(out, cap, "%u", (unsigned)v);
        }
        case RT_U32: {
            uint32_t v;
            memcpy(&v, p, 4);
            return snprintf(out, cap, "%lu", (unsigned long)v);
        }
        case RT_U64: {
            uint64_t v;
            memcpy(&v, p, 8);
            return snprintf(out, cap, "%llu", (unsigned long long)v);
        }
        case RT_I8: return snprintf(out, cap, "%d", (int)*(const int8_t *)p);
        case RT_I16: {
            int16_t v;
            memcpy(&v, p, 2);
            return snprintf(out, cap, "%d", (int)v);
        }
        case RT_I32: {
            int32_t v;
            memcpy(&v, p, 4);
            return snprintf(out, cap, "%ld", (long)v);
        }
        default: {
            int64_t v;
            memcpy(&v, p, 8);
            return snprintf(out, cap, "%lld", (long long)v);
        }
        }
    }
    double v = rt_load_float(f->data, f->t, (size_t)off);
    if (isnan(v)) return snprintf(out, cap, "nan"); /* Python never prints "-nan" */
    if (f->sci_mode) return snprintf(out, cap, "%.*e", PRECISION, v);
    if (f->int_mode) return snprintf(out, cap, isinf(v) ? "%.0f" : "%.0f.", v);
    return snprintf(out, cap, "%.*f", PRECISION, v);
}

/* The indices of dimension `dim` that are shown: all, or the first and
 * last EDGEITEMS when summarising (get_summarized_data). */
static int64_t shown(const Fmt *f, int dim, int64_t j, bool *cut) {
    int64_t n = f->d->shape[dim];
    *cut = f->summarize && n > 2 * EDGEITEMS;
    if (!*cut) return j;
    return j < EDGEITEMS ? j : n - 2 * EDGEITEMS + j;
}

static int64_t shown_count(const Fmt *f, int dim) {
    int64_t n = f->d->shape[dim];
    return f->summarize && n > 2 * EDGEITEMS ? 2 * EDGEITEMS : n;
}

typedef struct Stats {
    bool any, int_mode;
    double min_abs, max_abs;
} Stats;

/* Visits every shown element (row-major over the shown indices). */
static void visit(Fmt *f, int dim, int64_t off, void (*fn)(Fmt *, int64_t, void *), void *ctx) {
    if (dim == f->d->ndim) {
        fn(f, off, ctx);
        return;
    }
    int64_t cnt = shown_count(f, dim);
    for (int64_t j = 0; j < cnt; j++) {
        bool cut;
        visit(f, dim + 1, off + shown(f, dim, j, &cut) * f->strides[dim], fn, ctx);
    }
}

static void stats_fn(Fmt *f, int64_t off, void *ctx) {
    Stats *s = ctx;
    double v = rt_load_float(f->data, f->t, (size_t)off);
    if (!isfinite(v) || v == 0) return;
    double a = fabs(v);
    if (!s->any || a < s->min_abs) s->min_abs = a;
    if (!s->any || a > s->max_abs) s->max_abs = a;
    s->any = true;
    if (v != ceil(v)) s->int_mode = false;
}

static void width_fn(Fmt *f, int64_t off, void *ctx) {
    (void)ctx;
    char s[512];
    if (f->floating) {
        double v = rt_load_float(f->data, f->t, (size_t)off);
        if (!isfinite(v) || v == 0) return;
    }
    int n = format_value(f, off, s, sizeof s);
    if (n > f->width) f->width = n;
}

static void init_fmt(Fmt *f) {
    f->floating = rt_dtype_is_float(f->t);
    f->int_mode = true;
    f->sci_mode = false;
    f->width = 1;
    if (f->floating) {
        Stats s = {false, true, 0, 0};
        visit(f, 0, 0, stats_fn, &s);
        if (!s.any) return;
        f->int_mode = s.int_mode;
        if (s.int_mode)
            f->sci_mode = s.max_abs / s.min_abs > 1000. || s.max_abs > 1.e8;
        else
            f->sci_mode = s.max_abs / s.min_abs > 1000. || s.max_abs > 1.e8 || s.min_abs < 1.e-4;
    }
    /* int_mode's "." counts in the width: format_value appends it. */
    visit(f, 0, 0, width_fn, NULL);
}

static void element(Buf *b, const Fmt *f, int64_t off) {
    char s[512];
    int n = format_value(f, off, s, sizeof s);
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof s) n = sizeof s - 1;
    spaces(b, f->width - n);
    put(b, s, (size_t)n);
}

/* ---- the nested brackets ---- */

static void vector_str(Buf *b, const Fmt *f, int64_t off, int indent) {
    int dim = f->d->ndim - 1;
    int64_t n = f->d->shape[dim];
    int element_length = f->width + 2;
    int per_line = (LINEWIDTH - indent) / element_length;
    if (per_line < 1) per_line = 1;
    bool cut = f->summarize && n > 2 * EDGEITEMS;
    int64_t items = cut ? 2 * EDGEITEMS + 1 : n;
    put(b, "[", 1);
    for (int64_t i = 0; i < items; i++) {
        if (i) {
            if (i % per_line == 0) {
                put(b, ",\n", 2);
                spaces(b, indent + 1);
            } else {
                put(b, ", ", 2);
            }
        }
        if (cut && i == EDGEITEMS) {
            put(b, " ...", 4);
            continue;
        }
        int64_t j = cut && i > EDGEITEMS ? n - (items - i) : i;
        element(b, f, off + j * f->strides[dim]);
    }
    put(b, "]", 1);
}

static void tensor_str(Buf *b, const Fmt *f, int dim, int64_t off, int indent) {
    if (dim == f->d->ndim - 1) {
        vector_str(b, f, off, indent);
        return;
    }
    int64_t n = f->d->shape[dim];
    bool cut = f->summarize && n > 2 * EDGEITEMS;
    int64_t items = cut ? 2 * EDGEITEMS + 1 : n;
    int newlines = f->d->ndim - dim - 1;
    put(b, "[", 1);
    for (int64_t i = 0; i < items; i++) {
        if (i) {
            put(b, ",", 1);
            for (int k = 0; k < newlines; k++)
                put(b, "\n", 1);
            spaces(b, indent + 1);
        }
        if (cut && i == EDGEITEMS) {
            put(b, "...", 3);
            continue;
        }
        int64_t j = cut && i > EDGEITEMS ? n - (items - i) : i;
        tensor_str(b, f, dim + 1, off + j * f->strides[dim], indent + 1);
    }
    put(b, "]", 1);
}

static const char *torch_dtype(RtDType t) {
    switch (t) {
    case RT_BOOL: return "torch.bool";
    case RT_U8: return "torch.uint8";
    case RT_I8: return "torch.int8";
    case RT_I16: return "torch.int16";
    case RT_I32: return "torch.int32";
    case RT_I64: return "torch.int64";
    case RT_U16: return "torch.uint16";
    case RT_U32: return "torch.uint32";
    case RT_U64: return "torch.uint64";
    case RT_F16: return "torch.float16";
    case RT_BF16: return "torch.bfloat16";
    case RT_F32: return "torch.float32";
    default: return "torch.float64";
    }
}

char *rt_tensor_str(const RtDesc *d, const void *data) {
    int64_t numel;
    if (!d || !rt_desc_numel(d, &numel) || !rt_dtype_size(d->dtype)) return NULL;
    Buf b = {0};
    const int indent = 7; /* "tensor(" */
    puts_(&b, "tensor(");
    char suffix[2][RT_DESC_STR_MAX + 32];
    int nsuffix = 0;
    if (numel == 0) {
        puts_(&b, "[]");
        if (d->ndim != 1) {
            /* Python's tuple repr: "(2, 0)" */
            size_t at = (size_t)snprintf(suffix[0], sizeof suffix[0], "size=(");
            for (int i = 0; i < d->ndim && at < sizeof suffix[0]; i++)
                at += (size_t)snprintf(suffix[0] + at, sizeof suffix[0] - at, "%s%lld",
                                       i ? ", " : "", (long long)d->shape[i]);
            if (at < sizeof suffix[0]) snprintf(suffix[0] + at, sizeof suffix[0] - at, ")");
            nsuffix++;
        }
        if (d->dtype != RT_F32)
            snprintf(suffix[nsuffix++], sizeof suffix[0], "dtype=%s", torch_dtype(d->dtype));
    } else {
        Fmt f = {.t = d->dtype, .data = data, .d = d, .summarize = numel > THRESHOLD};
        int64_t st = 1;
        for (int i = d->ndim - 1; i >= 0; i--) {
            f.strides[i] = st;
            st *= d->shape[i];
        }
        init_fmt(&f);
        if (d->ndim == 0)
            element(&b, &f, 0);
        else
            tensor_str(&b, &f, 0, 0, indent);
        if (d->dtype != RT_F32 && d->dtype != RT_I64 && d->dtype != RT_BOOL)
            snprintf(suffix[nsuffix++], sizeof suffix[0], "dtype=%s", torch_dtype(d->dtype));
    }
    /* _add_suffixes: a suffix goes on a new line when it would pass the
     * line width (torch's arithmetic, off-by-ones included). */
    if (!b.oom) {
        const char *nl = strrchr(b.s, '\n');
        long last = (long)b.len - (nl ? (long)(nl - b.s) : -1) + 1;
        for (int i = 0; i < nsuffix; i++) {
            long n = (long)strlen(suffix[i]);
            if (last + n + 2 > LINEWIDTH) {
                put(&b, ",\n", 2);
                spaces(&b, indent);
                last = indent + n;
            } else {
                put(&b, ", ", 2);
                last += n + 2;
            }
            puts_(&b, suffix[i]);
        }
    }
    put(&b, ")", 1);
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
