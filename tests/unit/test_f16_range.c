/* f16 overflow warnings (passes/f16_range.c): graphs that overflow f16 warn
 * once, at the line:column of the value where the overflow starts, with a
 * note suggesting bf16; graphs that cannot overflow, or whose values are
 * not f16, stay silent; and the analysis survives every graph the repo's
 * tests hold. Set TGC_F16_VERBOSE=1 to print every case's messages, and
 * TGC_F16_SWEEP=DIR[:DIR...] to sweep more .tg files (the differential
 * suite's graphs, dumped by `tests/diff/diff.py --list`, say). */
#define UNIT_COMPILE
#include <ctype.h>
#include <dirent.h>

#include "passes/f16_range.h"
#include "unit.h"

static bool verbose;

typedef struct Warned {
    Compiled c;
    int n;      /* f16_overflow_warn's result */
    char *msgs; /* what it printed */
    size_t len;
    bool compiled; /* the source compiled */
} Warned;

/* Compiles src (under pol, NULL: declared dtypes) and runs the analysis. */
static bool run_src(Warned *w, const char *src, const PrecisionPolicy *pol, ParamRangeFn fn,
                    void *ctx) {
    memset(w, 0, sizeof *w);
    if (!compile_src_policy(&w->c, src, pol)) {
        fprintf(stdout, "source does not compile:\n%s\n%s\n", src, w->c.msgs);
        return false;
    }
    w->compiled = true;
    FILE *out = open_memstream(&w->msgs, &w->len);
    Diag d;
    diag_init(&d, out);
    w->n = f16_overflow_warn(w->c.g, &d, fn, ctx);
    fclose(out);
    CHECK_INT(w->n, d.warnings);
    if (verbose) fprintf(stdout, "---\n%s=> %d\n%s", src, w->n, w->msgs);
    return true;
}

static void warned_free(Warned *w) {
    if (w->compiled) compiled_free(&w->c);
    free(w->msgs);
}

/* Does the output hold "u.tg:LOC: warning: f16 overflow" followed (on a
 * later line) by "u.tg:LOC: note: --precision bf16"? */
static bool has_warning_at(const char *msgs, const char *loc) {
    char want[64], note[64];
    snprintf(want, sizeof want, "u.tg:%s: warning: f16 overflow", loc);
    snprintf(note, sizeof note, "u.tg:%s: note: --precision bf16", loc);
    const char *w = strstr(msgs, want);
    return w && strstr(w, note);
}

/* expect(src, n, locs...): n warnings, at each "line:col" listed. */
#define expect(src, n, ...)                                                                        \
    expect_at(__LINE__, (src), NULL, (n), (const char *[]){__VA_ARGS__, NULL})
#define expect_pol(src, pol, n, ...)                                                               \
    expect_at(__LINE__, (src), (pol), (n), (const char *[]){__VA_ARGS__, NULL})
#define expect_none(src) expect_at(__LINE__, (src), NULL, 0, (const char *[]){NULL})

static void expect_at(int line, const char *src, const PrecisionPolicy *pol, int n,
                      const char **locs) {
    char ctx[32];
    snprintf(ctx, sizeof ctx, "case at line %d", line);
    unit_context = ctx;
    Warned w;
    if (run_src(&w, src, pol, NULL, NULL)) {
        if (!CHECK_INT(n, w.n)) fprintf(stdout, "%s%s", src, w.msgs);
        for (int i = 0; locs[i]; i++)
            if (!CHECK(has_warning_at(w.msgs, locs[i])))
                fprintf(stdout, "  no warning + note at %s in:\n%s", locs[i], w.msgs);
    } else {
        CHECK(false);
    }
    warned_free(&w);
    unit_context = NULL;
}

/* The graphs that overflow f16, with a placeholder DT for their dtype. */
static const char *const overflowing[] = {
    /* exp of an input */
    "graph g\ninput x : DT[4, 8]\noutput y = exp(x)\n",
    /* a sum of 100000 values in [0, 1] */
    "graph g\ninput x : DT[2, 100000]\noutput s = sigmoid(x).sum(dim = 1)\n",
    /* a dot product of depth 70000 of values in [-1, 1] */
    "graph g\ninput a : DT[1, 70000]\ninput b : DT[70000, 1]\noutput y = tanh(a) @ tanh(b)\n",
    /* a weight above 65504 */
    "graph g\ninput x : DT[4]\nparam w : DT[4] = full(1e5)\noutput y = x * w\n",
    /* constants whose product is above 65504 */
    "graph g\noutput y = full([2], 300.0, dtype = DT) * full([2], 300.0, dtype = DT)\n",
    /* mean of exp: the exp warns, not the mean */
    "graph g\ninput x : DT[4, 8]\noutput m = exp(x).mean(dim = -1)\n",
};
/* Where each warns (line:col) when DT is f16. */
static const char *const overflowing_at[] = {"3:12", "3:12", "4:12", "3:7", "2:12", "3:12"};

static char *with_dtype(const char *src, const char *dt) {
    size_t n = strlen(src), k = strlen(dt);
    char *out = malloc(n * (k + 1) + 1), *o = out;
    for (const char *p = src; *p;) {
        if (p[0] == 'D' && p[1] == 'T') {
            memcpy(o, dt, k);
            o += k;
            p += 2;
        } else {
            *o++ = *p++;
        }
    }
    *o = 0;
    return out;
}

static void test_overflowing_graphs(void) {
    for (size_t i = 0; i < sizeof overflowing / sizeof *overflowing; i++) {
        char *f16 = with_dtype(overflowing[i], "f16");
        char *f32 = with_dtype(overflowing[i], "f32");
        char *bf16 = with_dtype(overflowing[i], "bf16");
        expect(f16, 1, overflowing_at[i]);
        expect_none(f32);
        expect_none(bf16);
        free(f16);
        free(f32);
        free(bf16);
    }
}

static void test_more_overflows(void) {
    /* Two origins in one graph: two warnings, each at its own value. */
    expect("graph g\ninput x : f16[2, 100000]\n"
           "e = exp(x)\n"
           "s = sigmoid(x).sum(dim = 1)\n"
           "output y = e[:, 0] + s\n",
           2, "3:5", "4:5");
    /* A fill value f16 cannot hold (PyTorch refuses it for half tensors). */
    expect("graph g\ninput x : f16[4, 4]\ninput m : bool[4, 4]\n"
           "output y = x.masked_fill(m, -1e9)\n",
           1, "4:29");
    /* A number literal turned f16 by promotion. */
    expect("graph g\ninput x : f16[4]\noutput y = x * 1e5\n", 1, "3:16");
    /* Exponential growth through pow's exponent. */
    expect("graph g\ninput x : f16[4]\noutput y = 2.0 ** x\n", 1, "3:12");
    /* A product of 20 values up to 2. */
    expect("graph g\ninput x : f16[3, 20]\noutput p = (sigmoid(x) * 2.0).prod(dim = 1)\n", 1,
           "3:13");
    /* einsum's contraction, like matmul's. */
    expect("graph g\ninput a : f16[1, 70000]\ninput b : f16[70000, 1]\n"
           "output y = einsum(\"ij,jk->ik\", tanh(a), tanh(b))\n",
           1, "4:12");
    /* linear of bounded activations with all-ones weights, depth 70000. */
    expect("graph g\ninput x : f16[2, 70000]\nparam w : f16[3, 70000] = ones\n"
           "output y = linear(tanh(x), w)\n",
           1, "4:12");
    /* layer_norm's output reaches sqrt(255) * 1e4 with these weights. */
    expect("graph g\ninput x : f16[2, 256]\nparam w : f16[256] = full(1e4)\n"
           "output y = layer_norm(x, [256], w)\n",
           1, "4:12");
    /* A tensor literal holding 70000. */
    expect("graph g\ninput x : f16[2]\noutput y = x + tensor([1.0, 70000.0], dtype = f16)\n", 1,
           "3:16");
    /* arange's 100000 integers converted to f16. */
    expect("graph g\ninput x : f16[100000]\noutput y = x + arange(0, 100000).half()\n", 1, "3:16");
    /* An f32 sum that fits, converted into f16 where it does not. */
    expect("graph g\ninput x : f32[2, 100000]\n"
           "output y = sigmoid(x).sum(dim = 1).to(f16)\n",
           1, "3:12");
    /* uniform initialisers are exact bounds. */
    expect("graph g\ninput x : f16[4]\nparam w : f16[4] = uniform(-7e4, 1.0)\n"
           "output y = x * w\n",
           1, "3:7");
    /* An f32 exp brought into f16 by a cast: the cast warns. */
    expect("graph g\ninput x : f32[4]\noutput y = exp(x).half() + 1.0\n", 1, "3:12");
}

static void test_no_overflow(void) {
    /* softmax and the stable forms of exp. */
    expect_none("graph g\ninput x : f16[4, 8]\noutput y = softmax(x, dim = -1)\n");
    expect_none("graph g\ninput x : f16[4, 8]\n"
                "output y = exp(x - amax(x, -1, keepdim = true))\n");
    expect_none("graph g\ninput x : f16[4, 8]\nm, i = x.max(dim = -1, keepdim = true)\n"
                "output y = exp(x - m)\noutput j = i\n");
    expect_none("graph g\ninput x : f16[4, 8]\n"
                "output y = exp(x - logsumexp(x, -1, keepdim = true))\n");
    expect_none("graph g\ninput x : f16[4, 8]\n"
                "e = exp(x - amax(x, -1, keepdim = true))\n"
                "output y = e / e.sum(dim = -1, keepdim = true)\n");
    expect_none("graph g\ninput x : f16[4, 8]\noutput y = log_softmax(x, dim = -1)\n");
    expect_none("graph g\ninput x : f16[4, 8]\noutput y = exp(tanh(x))\n");
    expect_none("graph g\ninput x : f16[4, 8]\noutput y = exp(-x * x) + exp(-(x * x))\n");
    /* Unbounded inputs through unbounded ops: nothing starts an overflow. */
    expect_none("graph g\ninput x : f16[4, 64]\nparam w : f16[64, 64]\n"
                "output y = relu(x @ w)\n");
    expect_none("graph g\ninput x : f16[4, 64]\noutput y = x * 2\n");
    expect_none("graph g\ninput x : f16[4, 64]\noutput y = x ** 2\n");
    expect_none("graph g\ninput x : f16[4, 64]\noutput y = gelu(x) + silu(x)\n");
    /* Norms are bounded whatever their input. */
    expect_none("graph g\ninput x : f16[4, 256]\noutput y = layer_norm(x, [256])\n");
    expect_none("graph g\ninput x : f16[4, 256]\nparam w : f16[256] = ones\n"
                "param b : f16[256] = zeros\noutput y = layer_norm(x, [256], w, b) * 100.0\n");
    expect_none("graph g\ninput x : f16[4, 256]\nparam w : f16[256] = ones\n"
                "output y = rms_norm(x, w) * 1000.0\n");
    /* A small sum of bounded values. */
    expect_none("graph g\ninput x : f16[2, 100]\noutput s = sigmoid(x).sum(dim = 1)\n");
    expect_none("graph g\ninput x : f16[2, 100000]\noutput s = sigmoid(x).mean(dim = 1)\n");
    /* Division by what may be 0 is inf in every dtype: bf16 would not help. */
    expect_none("graph g\ninput x : f16[4]\noutput y = 1.0 / sigmoid(x)\n");
    /* Inputs converted to f16, integers included: their declared range is
     * no fact about their data. */
    expect_none("graph g\ninput x : f32[4]\noutput y = x.half() * 2.0\n");
    expect_none("graph g\ninput i : i64[4]\noutput y = i.half() + 1.0\n");
    /* Deliberate infinities are no overflow. */
    expect_none("graph g\ninput x : f16[4, 4]\ninput m : bool[4, 4]\n"
                "output y = softmax(x.masked_fill(m, -inf), dim = -1)\n");
    /* A weight whose values are unknown (randn) is not "above 65504". */
    expect_none("graph g\ninput x : f16[4, 8]\nparam w : f16[8, 8] = randn(std = 100.0)\n"
                "output y = x @ w\n");
    /* Values that are not f16 never warn. */
    expect_none("graph g\ninput x : f32[4]\noutput y = exp(x) * 1e30\n");
    expect_none("graph g\ninput x : bf16[2, 100000]\noutput y = (sigmoid(x) * 1e4).sum(dim = 1)\n");
}

/* The weights file's facts win over the initialiser. */
static bool range_of(void *ctx, const Value *param, double *lo, double *hi) {
    const double *r = ctx;
    if (!param->name || strcmp(param->name, "w")) return false;
    *lo = r[0];
    *hi = r[1];
    return true;
}

static void test_param_ranges(void) {
    const char *src = "graph g\ninput x : f16[8]\nparam w : f16[8] = full(1e5)\n"
                      "param v : f16[8] = ones\noutput y = x * w + v\n";
    Warned w;
    double small[2] = {-1, 1}, big[2] = {-2e5, 3.0};
    if (run_src(&w, src, NULL, NULL, NULL)) CHECK_INT(1, w.n);
    warned_free(&w);
    if (run_src(&w, src, NULL, range_of, small)) CHECK_INT(0, w.n);
    warned_free(&w);
    if (run_src(&w, src, NULL, range_of, big)) {
        CHECK_INT(1, w.n);
        CHECK(has_warning_at(w.msgs, "3:7"));
        CHECK(strstr(w.msgs, "param 'w' holds values up to 200000") != NULL);
    }
    warned_free(&w);
    /* A callback that answers makes a randn weight known. */
    const char *src2 = "graph g\ninput x : f16[8]\nparam w : f16[8] = randn\noutput y = x * w\n";
    if (run_src(&w, src2, NULL, range_of, big)) CHECK_INT(1, w.n);
    warned_free(&w);
    if (run_src(&w, src2, NULL, NULL, NULL)) CHECK_INT(0, w.n);
    warned_free(&w);
}

/* The intervals themselves, for a few ops. */
static void test_intervals(void) {
    Compiled c;
    const char *src = "graph g\ninput x : f16[4, 100]\nparam w : f16[100] = uniform(-2.0, 3.0)\n"
                      "s = sigmoid(x)\nt = s.sum(dim = -1)\nr = relu(x)\nn = layer_norm(x, [100])\n"
                      "q = (x - x.amax(dim = -1, keepdim = true))\nk = w * w\n"
                      "e = exp(tanh(x))\nv = tanh(x).var(dim = -1)\n"
                      "output o = t + r.sum(dim = -1) + n.sum(dim = -1) + q.sum(dim = -1) + "
                      "k.sum() + e.sum(dim = -1) + v\n";
    if (!compile_src(&c, src)) {
        CHECK(false);
        fprintf(stdout, "%s\n", c.msgs);
        compiled_free(&c);
        return;
    }
    double lo, hi;
    struct {
        const char *name;
        double lo, hi;
    } want[] = {
        {"s", 0, 1},
        {"t", 0, 100},
        {"r", 0, INFINITY},
        {"n", -sqrt(99.0), sqrt(99.0)},
        {"q", -INFINITY, 0},
        {"k", 0, 9},
        /* w * w: one value met twice */ {"e", exp(-1), exp(1)},
        {"v", 0, 4.0 / 4 * 100 / 99},
        {"w", -2, 3},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        unit_context = want[i].name;
        if (CHECK(f16_value_range(c.g, find_value(c.g, want[i].name), NULL, NULL, &lo, &hi))) {
            CHECK_DBL(want[i].lo, lo);
            CHECK_DBL(want[i].hi, hi);
        }
    }
    unit_context = NULL;
    compiled_free(&c);
}

/* ---- the shipped examples and every graph of the repo's tests ---------- */

static char root[4096];

static void find_root(void) {
    /* __FILE__ is absolute in CMake builds: strip tests/unit/test_f16_range.c. */
    snprintf(root, sizeof root, "%s", __FILE__);
    for (int up = 0; up < 3; up++) {
        char *s = strrchr(root, '/');
        if (!s) {
            snprintf(root, sizeof root, ".");
            return;
        }
        *s = 0;
    }
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)(n > 0 ? n : 0) + 1);
    size_t got = fread(buf, 1, (size_t)(n > 0 ? n : 0), f);
    buf[got] = 0;
    fclose(f);
    return buf;
}

/* Every floating dtype written as f16 (f32, f64 and bf16 by name). */
static char *to_f16(const char *src) {
    char *out = malloc(strlen(src) * 2 + 1), *o = out;
    for (const char *p = src; *p;) {
        bool word_start = p == src || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
        const char *from[] = {"bf16", "f32", "f64", NULL};
        int hit = -1;
        for (int k = 0; word_start && from[k]; k++) {
            size_t n = strlen(from[k]);
            if (!strncmp(p, from[k], n) && !(isalnum((unsigned char)p[n]) || p[n] == '_')) hit = k;
        }
        if (hit >= 0) {
            memcpy(o, "f16", 3);
            o += 3;
            p += strlen(from[hit]);
        } else {
            *o++ = *p++;
        }
    }
    *o = 0;
    return out;
}

static const char *const examples[] = {"embedding_classifier", "gated_mlp", "mlp", "rms_attention",
                                       "transformer_block"};

static void test_examples_in_f16(void) {
    for (size_t i = 0; i < sizeof examples / sizeof *examples; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/examples/%s.tg", root, examples[i]);
        char *src = read_file(path);
        unit_context = examples[i];
        if (!CHECK(src != NULL)) {
            fprintf(stdout, "  cannot read %s\n", path);
            continue;
        }
        char *f16 = to_f16(src);
        CHECK(strstr(f16, "f32") == NULL);
        Warned w;
        if (run_src(&w, f16, NULL, NULL, NULL) && !CHECK_INT(0, w.n)) fprintf(stdout, "%s", w.msgs);
        warned_free(&w);
        /* The same through the precision pass, as `--precision f16` runs it. */
        PrecisionPolicy pol = {.prec = PREC_F16, .io = DT_NONE};
        if (run_src(&w, src, &pol, NULL, NULL) && !CHECK_INT(0, w.n)) fprintf(stdout, "%s", w.msgs);
        warned_free(&w);
        free(f16);
        free(src);
    }
    unit_context = NULL;
}

/* The precision pass's f16 is the same f16: an exp of an input warns. */
static void test_policy(void) {
    PrecisionPolicy f16 = {.prec = PREC_F16, .io = DT_NONE};
    PrecisionPolicy bf16 = {.prec = PREC_BF16, .io = DT_NONE};
    PrecisionPolicy f32 = {.prec = PREC_F32, .io = DT_NONE};
    const char *src = "graph g\ninput x : f32[4, 8]\noutput y = exp(x)\n";
    expect_pol(src, &f16, 1, "3:12");
    expect_pol(src, &bf16, 0, NULL);
    expect_pol(src, &f32, 0, NULL);
    const char *sum = "graph g\ninput x : f32[2, 100000]\noutput s = sigmoid(x).sum(dim = 1)\n";
    expect_pol(sum, &f16, 1, "3:12");
    expect_pol(sum, &bf16, 0, NULL);
}

/* One file: as written, with every float as f16, and through the f16
 * policy; each must not crash (unit_isolated reports a crash). */
static void sweep_one(void *arg) {
    const char *path = arg;
    char *src = read_file(path);
    if (!src) return;
    char *f16 = to_f16(src);
    const char *variants[2] = {src, f16};
    PrecisionPolicy pol = {.prec = PREC_F16, .io = DT_NONE};
    for (int v = 0; v < 3; v++) {
        Compiled c;
        Graph *g = compile_src_policy(&c, variants[v == 1], v == 2 ? &pol : NULL);
        if (g) {
            Diag d;
            diag_init(&d, NULL);
            int n = f16_overflow_warn(g, &d, NULL, NULL);
            CHECK(n == d.warnings && n >= 0);
            if (verbose && n) {
                FILE *out = stdout;
                diag_init(&d, out);
                fprintf(out, "--- %s (variant %d)\n", path, v);
                f16_overflow_warn(g, &d, NULL, NULL);
            }
        }
        compiled_free(&c);
    }
    free(f16);
    free(src);
}

static int sweep_dir(const char *dir) {
    DIR *dp = opendir(dir);
    if (!dp) return 0;
    struct dirent *e;
    int n = 0;
    char **names = NULL;
    int cap = 0;
    while ((e = readdir(dp))) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 3, ".tg")) continue;
        if (n == cap) names = realloc(names, sizeof(char *) * (size_t)(cap = cap ? 2 * cap : 64));
        names[n++] = strdup(e->d_name);
    }
    closedir(dp);
    for (int i = 0; i < n; i++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unit_isolated(path, sweep_one, path);
        free(names[i]);
    }
    free(names);
    return n;
}

static void test_sweep(void) {
    const char *dirs[] = {"examples", "bench/graphs", "tests/errors/cases", "tests/fuzz/corpus"};
    int total = 0;
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", root, dirs[i]);
        total += sweep_dir(path);
    }
    CHECK(total >= 100);
    const char *extra = getenv("TGC_F16_SWEEP");
    if (extra && *extra) {
        char *list = strdup(extra);
        for (char *tok = strtok(list, ":"); tok; tok = strtok(NULL, ":"))
            total += sweep_dir(tok);
        free(list);
    }
    fprintf(stdout, "swept %d .tg files\n", total);
}

int main(void) {
    verbose = getenv("TGC_F16_VERBOSE") != NULL;
    find_root();
    test_overflowing_graphs();
    test_more_overflows();
    test_no_overflow();
    test_param_ranges();
    test_intervals();
    test_examples_in_f16();
    test_policy();
    test_sweep();
    return unit_report("test_f16_range");
}
