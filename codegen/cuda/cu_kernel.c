/* Kernels as CUDA C: the function, its buffers, the mapping of threads onto
 * the iteration space, element addresses, loads and stores, and the launch
 * step. Elementwise kernels give each thread VEC consecutive elements of
 * the innermost loop when every access allows it (unit or zero stride
 * there, aligned), so contiguous operands move as 8- or 16-byte vectors. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda/cu.h"

#define BLOCK 256
#define MAX_GRID 524288 /* blocks; a grid-stride loop covers the rest */

void sb_vprintf(Sb *b, const char *fmt, va_list ap) {
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (n < 0) return;
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) abort(); /* the compiler has no recovery from out of memory */
        b->s = s, b->cap = cap;
    }
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void sb_printf(Sb *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(b, fmt, ap);
    va_end(ap);
}

void sb_free(Sb *b) {
    free(b->s);
    memset(b, 0, sizeof *b);
}

char *cu_str(Cu *cu, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    Sb b = {0};
    sb_vprintf(&b, fmt, ap);
    va_end(ap);
    char *s = arena_strdup(cu->a, b.s ? b.s : "");
    sb_free(&b);
    return s;
}

void cuk_begin(Cu *cu, CuKern *k, const char *what) {
    memset(k, 0, sizeof *k);
    k->cu = cu;
    k->lane = -1;
    k->vec = 1;
    char clean[64];
    size_t j = 0;
    for (const char *c = what; *c && j + 1 < sizeof clean; c++)
        clean[j++] =
            (char)((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')
                       ? *c
                       : '_');
    clean[j] = 0;
    snprintf(k->name, sizeof k->name, "k%d_%s", cu->nkernels++, clean);
    k->indent = 1;
}

void cuk_emit(CuKern *k, const char *fmt, ...) {
    for (int i = 0; i < k->indent; i++)
        sb_printf(&k->body, "    ");
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&k->body, fmt, ap);
    va_end(ap);
    sb_printf(&k->body, "\n");
}

static const char *tmp_v(CuKern *k, const char *ctype, const char *fmt, va_list ap) {
    Sb e = {0};
    sb_vprintf(&e, fmt, ap);
    const char *name = cu_str(k->cu, "t%d", k->ntmp++);
    cuk_emit(k, "const %s %s = %s;", ctype, name, e.s ? e.s : "0");
    sb_free(&e);
    return name;
}

const char *cuk_tmp(CuKern *k, DType t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const char *r = tmp_v(k, cu_ctype(t), fmt, ap);
    va_end(ap);
    return r;
}

const char *cuk_tmp_c(CuKern *k, const char *ctype, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const char *r = tmp_v(k, ctype, fmt, ap);
    va_end(ap);
    return r;
}

const char *cuk_idx(CuKern *k, int loop) {
    if (k->lane >= 0 && loop == k->sp.nloops - 1) return cu_str(k->cu, "i%d_%d", loop, k->lane);
    return cu_str(k->cu, "i%d", loop);
}

const char *cuk_index_type(const CuKern *k) {
    return k->wide ? "long long" : "int";
}

const char *cuk_dim_index(CuKern *k, int dim) {
    int l = k->sp.loop_of_dim[dim];
    if (l < 0 || !k->open[l]) return "0";
    return cuk_idx(k, l);
}

const char *cuk_offset(CuKern *k, const Access *a) {
    Sb e = {0};
    sb_printf(&e, "%lld", (long long)a->offset);
    for (int l = 0; l < k->sp.nloops; l++) {
        if (!k->open[l] || k->sp.inner_dim[l] < 0) continue;
        int64_t s = a->strides[k->sp.inner_dim[l]];
        if (s == 0) continue;
        /* 32-bit arithmetic unless some offset of the kernel needs more. */
        const char *cast = k->wide ? "(long long)" : "";
        if (s == 1)
            sb_printf(&e, " + %s%s", cast, cuk_idx(k, l));
        else
            sb_printf(&e, " + %s%s * %lld%s", cast, cuk_idx(k, l), (long long)s,
                      k->wide ? "LL" : "");
    }
    const char *r = cu_str(k->cu, "%s", e.s);
    sb_free(&e);
    return r;
}

const char *cuk_base(CuKern *k, const Access *a, bool writable) {
    const CgProgram *p = k->cu->p;
    int slot = a->slot;
    int64_t off = 0;
    if (slot <= 0) {
        off = kd_buffer(p, a->owner, &slot);
        if (off < 0) {
            cu_fail(k->cu, "internal: value %%%d has no buffer", a->owner->id);
            off = 0;
        }
    }
    const char *c = writable ? "" : "const ";
    if (off)
        return cu_str(k->cu, "((%s%s *)(bufs[%d] + %lld))", c, cu_stype(a->dt), slot,
                      (long long)off);
    return cu_str(k->cu, "((%s%s *)bufs[%d])", c, cu_stype(a->dt), slot);
}

static const char *from_storage(CuKern *k, const char *x, DType t) {
    switch (t) {
    case DT_BOOL: return cuk_tmp(k, t, "(%s != 0)", x);
    case DT_F16: return cuk_tmp(k, t, "tg_h2f(%s)", x);
    case DT_BF16: return cuk_tmp(k, t, "tg_b2f(%s)", x);
    default: return cuk_tmp(k, t, "%s", x);
    }
}

static const char *to_storage(CuKern *k, const char *x, DType t) {
    switch (t) {
    case DT_BOOL: return cu_str(k->cu, "(unsigned char)(%s)", x);
    case DT_F16: return cu_str(k->cu, "tg_f2h(%s)", x);
    case DT_BF16: return cu_str(k->cu, "tg_f2b(%s)", x);
    default: return x;
    }
}

const char *cuk_load_at(CuKern *k, const Access *a, const char *off) {
    return from_storage(k, cu_str(k->cu, "%s[%s]", cuk_base(k, a, false), off), a->dt);
}

/* ---- vector lanes ---- */

/* The vector type moving VEC elements of a storage type of `es` bytes. */
static const char *vec_type(int es) {
    return es == 4 ? "uint4" : es == 2 ? "uint2" : "unsigned int";
}

static bool vec_access(const CuKern *k, const Access *a) {
    int inner = k->sp.nloops - 1;
    return k->vec > 1 && a->strides[k->sp.inner_dim[inner]] == 1;
}

const char *cuk_load(CuKern *k, const Access *a) {
    if (k->lane < 0 || !vec_access(k, a)) return cuk_load_at(k, a, cuk_offset(k, a));
    /* Lane 0 loads the whole vector; later lanes evaluate the same
     * expression in the same order, so the n-th load of a lane is the n-th
     * vector. */
    int n = k->nvload++;
    if (n >= CU_MAX_VLOADS) {
        cu_fail(k->cu, "internal: too many vector loads in one kernel");
        return "0";
    }
    int es = (int)dtype_size(a->dt);
    if (k->lane == 0) {
        const char *name = cu_str(k->cu, "v%d", k->ntmp++);
        cuk_emit(k, "const %s %s = *(const %s *)(%s + (%s));", vec_type(es), name, vec_type(es),
                 cuk_base(k, a, false), cuk_offset(k, a));
        k->vloads[n] = name;
    }
    const char *elem =
        cu_str(k->cu, "((const %s *)&%s)[%d]", cu_stype(a->dt), k->vloads[n], k->lane);
    return from_storage(k, elem, a->dt);
}

void cuk_store(CuKern *k, const Access *a, const char *x, DType from) {
    const char *v = cu_convert(k, x, from, a->dt);
    const char *s = to_storage(k, v, a->dt);
    if (k->lane < 0 || !vec_access(k, a)) {
        cuk_emit(k, "%s[%s] = %s;", cuk_base(k, a, true), cuk_offset(k, a), s);
        return;
    }
    /* Lanes fill a vector; the last lane stores it. */
    int es = (int)dtype_size(a->dt);
    if (k->lane == 0) {
        k->vstore = cu_str(k->cu, "w%d", k->ntmp++);
        cuk_emit(k, "%s %s;", vec_type(es), k->vstore);
    }
    cuk_emit(k, "((%s *)&%s)[%d] = %s;", cu_stype(a->dt), k->vstore, k->lane, s);
    if (k->lane == k->vec - 1) {
        int lane = k->lane;
        k->lane = 0; /* the vector starts at lane 0's element */
        const char *off = cuk_offset(k, a);
        k->lane = lane;
        cuk_emit(k, "*(%s *)(%s + (%s)) = %s;", vec_type(es), cuk_base(k, a, true), off, k->vstore);
    }
}

/* ---- the error cell ---- */

int cu_error_code(Cu *cu, const char *tensor_name) {
    for (int i = 0; i < cu->nerror_names; i++)
        if (!strcmp(cu->error_names[i], tensor_name)) return i + 1;
    ARENA_PUSH(cu->a, cu->error_names, cu->nerror_names, cu->error_cap,
               arena_strdup(cu->a, tensor_name));
    return cu->nerror_names;
}

const char *cuk_error_cell(CuKern *k) {
    return cu_str(k->cu, "((unsigned long long *)bufs[%d])", k->cu->p->iface.error_slot);
}

/* ---- finishing ---- */

static void add_launch(Cu *cu, const char *name, int64_t grid, int block, int smem) {
    CuStep s;
    memset(&s, 0, sizeof s);
    s.kind = CU_LAUNCH;
    s.kernel = arena_strdup(cu->a, name);
    s.grid = grid < 1 ? 1 : grid;
    s.block = block;
    s.smem = smem;
    ARENA_PUSH(cu->a, cu->steps, cu->nsteps, cu->cap, s);
}

void cuk_finish(CuKern *k, int64_t grid, int block, int smem) {
    Cu *cu = k->cu;
    sb_printf(&cu->src,
              "\nextern \"C\" __global__ void __launch_bounds__(%d) %s(char *const *bufs) {\n",
              block, k->name);
    if (k->head.s) sb_printf(&cu->src, "%s", k->head.s);
    if (k->body.s) sb_printf(&cu->src, "%s", k->body.s);
    sb_printf(&cu->src, "}\n");
    sb_free(&k->head);
    sb_free(&k->body);
    add_launch(cu, k->name, grid, block, smem);
}

/* ---- elementwise kernels ---- */

bool cuk_needs_wide(const KSpace *sp, Access **acc, int nacc) {
    /* 2^30, not 2^31: a grid-stride step (g += gridDim.x * blockDim.x)
     * and an offset plus a term must not overflow int either. */
    const int64_t lim = (int64_t)1 << 30;
    int64_t total = 1;
    for (int l = 0; l < sp->nloops; l++)
        total *= sp->ext[l];
    if (total >= lim) return true;
    for (int i = 0; i < nacc; i++) {
        int64_t span = acc[i]->offset < 0 ? -acc[i]->offset : acc[i]->offset;
        for (int d = 0; d < sp->n; d++) {
            int64_t s = acc[i]->strides[d] < 0 ? -acc[i]->strides[d] : acc[i]->strides[d];
            span += s * (sp->shape[d] > 0 ? sp->shape[d] - 1 : 0);
        }
        if (span >= lim) return true;
    }
    return false;
}

/* VEC elements per thread when the innermost loop's extent is a multiple
 * of it and every access has stride 0 or 1 there, unit-stride ones with
 * an aligned start and outer strides, and elements of at most 4 bytes. */
static int choose_vec(const CuKern *k, Access **acc, int nacc) {
    if (k->sp.nloops < 1 || k->uses_index) return 1;
    int inner = k->sp.nloops - 1;
    int d = k->sp.inner_dim[inner];
    const int vec = 4;
    if (d < 0 || k->sp.ext[inner] % vec) return 1;
    for (int i = 0; i < nacc; i++) {
        const Access *a = acc[i];
        int64_t s = a->strides[d];
        if (s != 0 && s != 1) return 1;
        if (dtype_size(a->dt) > 4) return 1;
        if (s == 0) continue;
        int slot = a->slot;
        int64_t base = a->slot > 0 ? 0 : kd_buffer(k->cu->p, a->owner, &slot);
        int64_t es = (int64_t)dtype_size(a->dt);
        /* Buffers start 256-byte aligned (cuMemAlloc); arena slots at
         * their planned offsets. */
        if (base < 0 || (base + a->offset * es) % (vec * es)) return 1;
        for (int l = 0; l < inner; l++) {
            int dd = k->sp.inner_dim[l];
            if (dd >= 0 && a->strides[dd] % vec) return 1;
        }
    }
    return vec;
}

/* Threads over loops [0, nloops), vec elements of the last one each. */
static void threads_begin(CuKern *k, int nloops, bool lanes_ok, Access **acc, int nacc) {
    /* The index width sees every access over every dim, the thread count
     * only the loops the threads take. */
    KSpace threads = k->sp;
    threads.nloops = nloops;
    k->wide = cuk_needs_wide(&threads, acc, nacc);
    k->vec = lanes_ok ? choose_vec(k, acc, nacc) : 1;
    const char *it = cuk_index_type(k);
    int64_t total = 1;
    for (int l = 0; l < nloops; l++)
        total *= k->sp.ext[l];
    total /= k->vec;
    cuk_emit(k,
             "for (%s g = (%s)blockIdx.x * blockDim.x + threadIdx.x; g < %lld; g += (%s)gridDim.x "
             "* blockDim.x) {",
             it, it, (long long)total, it);
    k->indent++;
    cuk_emit(k, "%s r = g;", it);
    for (int l = nloops - 1; l >= 0; l--) {
        int64_t e = k->sp.ext[l];
        bool lanes = l == nloops - 1 && k->vec > 1;
        if (lanes) e /= k->vec;
        if (l == 0)
            cuk_emit(k, "const %s i%d%s = r;", it, l, lanes ? "v" : "");
        else
            cuk_emit(k, "const %s i%d%s = r %% %lld; r /= %lld;", it, l, lanes ? "v" : "",
                     (long long)e, (long long)e);
        k->open[l] = true;
    }
    cuk_emit(k, "(void)r;");
    k->total = total;
}

void cuk_threads_begin(CuKern *k, int nloops, Access **acc, int nacc) {
    threads_begin(k, nloops, false, acc, nacc);
}

void cuk_elementwise_begin(CuKern *k, Access **acc, int nacc) {
    threads_begin(k, k->sp.nloops, true, acc, nacc);
}

void cuk_lane_begin(CuKern *k, int lane) {
    if (k->vec <= 1) return;
    int inner = k->sp.nloops - 1;
    k->lane = lane;
    k->nvload = 0;
    cuk_emit(k, "const %s i%d_%d = i%dv * %d + %d;", cuk_index_type(k), inner, lane, inner, k->vec,
             lane);
}

void cuk_elementwise_end(CuKern *k) {
    k->lane = -1;
    k->indent--;
    cuk_emit(k, "}");
    for (int l = 0; l < KMAXD; l++)
        k->open[l] = false;
    int64_t grid = (k->total + BLOCK - 1) / BLOCK;
    if (grid > MAX_GRID) grid = MAX_GRID;
    cuk_finish(k, grid, BLOCK, 0);
}
