/* Schedule, liveness and the arena planner: hand-made graphs whose plan is
 * known, the planner's invariants on random graphs (memplan_verify: no two
 * buffers live at one step overlap, every buffer inside the arena, arena >=
 * lower bound), and a benchmark line for a 10,000-node graph. */
#define UNIT_COMPILE
#include <ctype.h>
#include <stdarg.h>
#include <time.h>

#include "passes/memplan.h"
#include "passes/precision.h"
#include "unit.h"

typedef struct Planned {
    Compiled c;
    Schedule *s;
    MemPlan *p;
} Planned;

static bool plan_src(Planned *P, const char *src, Precision prec) {
    memset(P, 0, sizeof *P);
    PrecisionPolicy pol = {.prec = prec, .io = DT_NONE};
    if (!compile_src_policy(&P->c, src, &pol)) {
        fprintf(stdout, "source does not compile:\n%s\n%s\n", src, P->c.msgs);
        return false;
    }
    DType *dt = precision_storage_dtypes(&P->c.arena, P->c.g);
    P->s = schedule_from_graph(&P->c.arena, P->c.g, dt);
    P->p = memplan_plan(&P->c.arena, P->s);
    return true;
}

static int buf_named(Planned *P, const char *name) {
    Value *v = find_value(P->c.g, name);
    return v ? P->s->buf_of[v->order] : -1;
}

static void check_verified(Planned *P) {
    char why[256] = "";
    bool ok = memplan_verify(P->p, P->s, why, sizeof why);
    if (!CHECK(ok)) fprintf(stdout, "  memplan_verify: %s\n", why);
    CHECK(P->p->arena_bytes >= P->p->lower_bound_bytes);
    CHECK(P->p->arena_bytes <= P->p->unplanned_bytes);
}

/* A chain of elementwise ops runs in one slot: each output takes over the
 * operand that dies where it is made. */
static void test_inplace_chain(void) {
    Planned P;
    if (!plan_src(&P,
                  "graph g\ninput x : f32[4, 64]\na = x * 2.0\nb = relu(a)\nc = exp(b)\nd = "
                  "-c\noutput y = d + 1.0\n",
                  PREC_DECLARED))
        return;
    CHECK_INT(5, P.s->nsteps);
    CHECK_INT(3, P.p->ninplace);
    CHECK_INT(1024, P.p->arena_bytes);
    CHECK_INT(1024, P.p->lower_bound_bytes);
    CHECK_INT(4096, P.p->unplanned_bytes);
    int a = buf_named(&P, "a"), d = buf_named(&P, "d");
    CHECK_INT(P.p->offset[a], P.p->offset[d]);
    CHECK_INT(BUF_OUTPUT, P.s->bufs[buf_named(&P, "y")].kind);
    CHECK_INT(-1, P.p->offset[buf_named(&P, "y")]);
    check_verified(&P);
    compiled_free(&P.c);
}

/* A view allocates nothing and keeps its storage alive to its last use; an
 * operand read through a transposed view is never overwritten in place. */
static void test_views_extend_lifetime(void) {
    Planned P;
    if (!plan_src(&P,
                  "graph g\ninput x : f32[8, 8]\nparam w : f32[8, 8]\n"
                  "a = x @ w\n"         /* step 0 */
                  "t = a.T\n"           /* a view: no step */
                  "b = relu(x)\n"       /* step 1 */
                  "c = b * 3.0\n"       /* step 2: b dies here, same size: in place */
                  "d = c + t\n"         /* step 3: a, through t, dies here */
                  "output y = d + a\n", /* step 4: a read directly and d dies */
                  PREC_DECLARED))
        return;
    CHECK_INT(5, P.s->nsteps);
    int a = buf_named(&P, "a"), b = buf_named(&P, "b"), c = buf_named(&P, "c"),
        d = buf_named(&P, "d");
    CHECK_INT(buf_named(&P, "a"), buf_named(&P, "t"));
    CHECK_INT(0, P.s->bufs[a].first);
    CHECK_INT(4, P.s->bufs[a].last);
    CHECK_INT(b, P.p->inplace_of[c]);
    CHECK_INT(c, P.p->inplace_of[d]); /* c dies at 3, read directly; a lives on (step 4) */
    check_verified(&P);
    compiled_free(&P.c);

    /* y = a + a.T: a dies here but is read through a transposed view. */
    if (!plan_src(&P, "graph g\ninput x : f32[8, 8]\na = exp(x)\noutput y = relu(a + a.T)\n",
                  PREC_DECLARED))
        return;
    Value *sum = NULL;
    for (int i = 0; i < P.c.g->nvalues; i++)
        if (P.c.g->values[i]->op == OP_ADD) sum = P.c.g->values[i];
    CHECK(sum != NULL);
    if (sum) CHECK_INT(-1, P.p->inplace_of[P.s->buf_of[sum->order]]);
    check_verified(&P);
    compiled_free(&P.c);
}

/* An output that is a view of an intermediate keeps that storage to the end. */
static void test_output_view(void) {
    Planned P;
    if (!plan_src(
            &P,
            "graph g\ninput x : f32[4, 8]\na = exp(x)\nb = relu(x)\noutput o = b\noutput t = a.T\n",
            PREC_DECLARED))
        return;
    int a = buf_named(&P, "a");
    CHECK_INT(BUF_INTERMEDIATE, P.s->bufs[a].kind);
    CHECK_INT(P.s->nsteps - 1, P.s->bufs[a].last);
    check_verified(&P);
    compiled_free(&P.c);
}

/* f16 halves every floating size; integers and bools keep theirs. */
static void test_precision(void) {
    const char *src =
        "graph g\ninput x : f32[16, 16]\ninput i : i64[16]\nparam w : f32[16, 16]\n"
        "h = relu(x @ w)\nm = h > 0.5\noutput y = where(m, h, 0.0)\noutput j = i + 1\n";
    Planned P32, P16;
    if (!plan_src(&P32, src, PREC_DECLARED)) return;
    if (!plan_src(&P16, src, PREC_F16)) {
        compiled_free(&P32.c);
        return;
    }
    CHECK_INT(1024, P32.s->bufs[buf_named(&P32, "h")].bytes);
    CHECK_INT(512, P16.s->bufs[buf_named(&P16, "h")].bytes);
    CHECK_INT(256, P16.s->bufs[buf_named(&P16, "m")].bytes); /* bool */
    CHECK_INT(128, P16.s->bufs[buf_named(&P16, "i")].bytes); /* i64 */
    CHECK_INT(512, P16.s->bufs[buf_named(&P16, "w")].bytes);
    check_verified(&P16);
    compiled_free(&P32.c);
    compiled_free(&P16.c);
}

/* ---- random graphs ------------------------------------------------------- */

typedef struct Gen {
    uint64_t state;
    char *src;
    size_t len, cap;
    int n;            /* tensors t0..t(n-1) */
    char kind[20000]; /* 's' [n,n] f32, 'h' [n,n] f16, 'v' [n] f32 */
} Gen;

static uint32_t rnd(Gen *g) {
    g->state = g->state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(g->state >> 33);
}

static void emit(Gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(Gen *g, const char *fmt, ...) {
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(g->src + g->len, g->cap - g->len, fmt, ap);
        va_end(ap);
        if (k >= 0 && (size_t)k < g->cap - g->len) {
            g->len += (size_t)k;
            return;
        }
        g->cap = g->cap * 2 + (size_t)k + 64;
        g->src = realloc(g->src, g->cap);
    }
}

/* A recent tensor of the wanted kind (random graphs should mostly chain,
 * with some long-lived values), or -1. */
static int pick(Gen *g, char kind) {
    for (int tries = 0; tries < 24; tries++) {
        int back = (rnd(g) % 4) ? (int)(rnd(g) % 6) : (int)(rnd(g) % (unsigned)(g->n + 1));
        int i = g->n - 1 - back;
        if (i >= 0 && g->kind[i] == kind) return i;
    }
    for (int i = g->n - 1; i >= 0; i--)
        if (g->kind[i] == kind) return i;
    return -1;
}

static void add_tensor(Gen *g, char kind, const char *fmt, int a, int b) {
    emit(g, "t%d = ", g->n);
    emit(g, fmt, a, b, a, b);
    emit(g, "\n");
    g->kind[g->n++] = kind;
}

static char *gen_graph(uint64_t seed, int nodes, int size) {
    Gen g = {.state = seed * 2654435761u + 1, .cap = 4096};
    g.src = malloc(g.cap);
    emit(&g, "graph r%llu\ninput x : f32[%d, %d]\ninput u : f32[%d]\nparam w : f32[%d, %d]\n",
         (unsigned long long)seed, size, size, size, size, size);
    emit(&g, "t0 = x * 1.0\nt1 = u + 0.0\n");
    g.kind[0] = 's', g.kind[1] = 'v';
    g.n = 2;
    while (g.n < nodes) {
        int a = pick(&g, 's'), b = pick(&g, 's'), h = pick(&g, 'h'), v = pick(&g, 'v');
        switch (rnd(&g) % 12) {
        case 0: add_tensor(&g, 's', "relu(t%d)", a, 0); break;
        case 1: add_tensor(&g, 's', "t%d + t%d", a, b); break;
        case 2: add_tensor(&g, 's', "t%d * t%d.T", a, b); break;
        case 3: add_tensor(&g, 's', "t%d @ w", a, 0); break;
        case 4: add_tensor(&g, 's', "exp(t%d) + t%d", a, v); break;
        case 5: add_tensor(&g, 'v', "t%d.sum(dim = 0)", a, 0); break;
        case 6: add_tensor(&g, 'h', "t%d.to(f16)", a, 0); break;
        case 7:
            if (h >= 0)
                add_tensor(&g, 's', "t%d.to(f32) - t%d", h, a);
            else
                add_tensor(&g, 'h', "(t%d * 0.5).to(f16)", a, 0);
            break;
        case 8: /* a view pair: both halves of a cat keep it alive */
            emit(&g, "c%d, d%d = cat([t%d, t%d]).chunk(2)\n", g.n, g.n, a, b);
            add_tensor(&g, 's', "c%d * d%d", g.n, g.n);
            break;
        case 9: add_tensor(&g, 's', "t%d.T.contiguous()", a, 0); break;
        case 10: add_tensor(&g, 'v', "t%d * t%d", v, v); break;
        default: add_tensor(&g, 's', "t%d @ t%d", a, b); break;
        }
    }
    /* Every tensor no later one reads joins a final sum, so that (almost)
     * every node is live; then the outputs: the sum and some random
     * tensors, a few through views. */
    bool *used = calloc((size_t)g.n, 1);
    for (const char *p = g.src; (p = strchr(p, 't')) != NULL; p++) {
        if (p > g.src && (p[-1] == '\n' || isalnum((unsigned char)p[-1]))) continue;
        int i = atoi(p + 1);
        if (isdigit((unsigned char)p[1]) && i < g.n) used[i] = true;
    }
    int k = 0;
    emit(&g, "s0 = t0 * 1.0\n");
    for (int i = 1; i < g.n; i++)
        if (!used[i]) {
            emit(&g, "s%d = s%d + t%d", k + 1, k, i);
            emit(&g, g.kind[i] == 'h' ? ".to(f32)\n" : "\n");
            k++;
        }
    free(used);
    emit(&g, "output s%d\n", k);
    for (int k = 0; k < 2; k++) {
        int i = (int)(rnd(&g) % (unsigned)(g.n - 1));
        if (i == g.n - 1) continue;
        if (g.kind[i] == 's' && rnd(&g) % 2)
            emit(&g, "output o%d_%d = t%d.T\n", k, i, i);
        else
            emit(&g, "output o%d_%d = t%d\n", k, i, i);
    }
    return g.src;
}

typedef struct RandArg {
    int from, to;
} RandArg;

static void test_random(void *arg) {
    RandArg *r = arg;
    for (int seed = r->from; seed < r->to; seed++) {
        char *src = gen_graph((uint64_t)seed, 5 + seed % 60, 3 + seed % 29);
        char ctx[64];
        snprintf(ctx, sizeof ctx, "random graph seed %d", seed);
        /* MEMPLAN_DUMP=FILE: the source about to be compiled, for a crash. */
        const char *dump = getenv("MEMPLAN_DUMP");
        FILE *df = dump ? fopen(dump, "w") : NULL;
        if (df) fputs(src, df), fclose(df);
        unit_context = ctx;
        Planned P;
        for (int prec = PREC_DECLARED; prec <= PREC_MIXED_BF16; prec++)
            if (plan_src(&P, src, (Precision)prec)) {
                check_verified(&P);
                compiled_free(&P.c);
            } else {
                CHECK(!"generated graph compiles");
                compiled_free(&P.c);
            }
        unit_context = NULL;
        free(src);
    }
}

static double clock_s(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
static double now(void) {
    return clock_s(CLOCK_MONOTONIC);
}
static double cpu(void) {
    return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

/* Not a timed assertion: prints the time to schedule and plan 10,000 nodes. */
static void bench_10k(void *arg) {
    (void)arg;
    char *src = gen_graph(12345, 10000, 16);
    Compiled c;
    double t0 = now();
    Graph *g = compile_src(&c, src);
    double t1 = now();
    CHECK(g != NULL);
    if (g) {
        double c1 = cpu();
        DType *dt = precision_storage_dtypes(&c.arena, g);
        Schedule *s = schedule_from_graph(&c.arena, g, dt);
        MemPlan *p = memplan_plan(&c.arena, s);
        double t2 = now(), c2 = cpu();
        fprintf(stdout,
                "bench: memplan values=%d steps=%d buffers=%d frontend_ms=%.1f plan_ms=%.1f "
                "plan_cpu_ms=%.1f "
                "arena=%lld lower_bound=%lld ratio=%.4f\n",
                g->nvalues, s->nsteps, s->nbufs, (t1 - t0) * 1e3, (t2 - t1) * 1e3, (c2 - c1) * 1e3,
                (long long)p->arena_bytes, (long long)p->lower_bound_bytes,
                (double)p->arena_bytes / (double)(p->lower_bound_bytes ? p->lower_bound_bytes : 1));
        char why[256] = "";
        bool ok = memplan_verify(p, s, why, sizeof why);
        if (!CHECK(ok)) fprintf(stdout, "  memplan_verify: %s\n", why);
        CHECK(g->nvalues >= 10000);
    }
    compiled_free(&c);
    free(src);
}

int main(void) {
    test_inplace_chain();
    test_views_extend_lifetime();
    test_output_view();
    test_precision();
    RandArg ra = {1, 301};
    unit_isolated("random graphs", test_random, &ra);
    unit_isolated("10,000-node benchmark", bench_10k, NULL);
    return unit_report("test_memplan");
}
