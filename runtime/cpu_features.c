/* Which of a program's CPU levels this CPU runs (tgc build --cpu; docs/
 * codegen.md "CPU levels"). The generated kernels are compiled for a CPU
 * and use its instructions freely; on a CPU without them they die with
 * SIGILL. So the glue records, per level, the features its code may use
 * (codegen/llvm/cpu_names.c asks LLVM which a CPU implies), and a context
 * checks them here against CPUID before any generated code runs: the best
 * level this CPU has is chosen once, or the context is not created and the
 * message names the missing features and the --cpu to rebuild with.
 *
 * This file is compiled with the C compiler's default flags (baseline
 * x86-64), so it runs on every x86-64 CPU. AVX and AVX-512 count only when
 * the operating system saves their registers (XGETBV): a CPU with AVX under
 * a kernel that does not enable it still faults. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tgcrt.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

enum { EAX, EBX, ECX, EDX };
enum { OS_NONE, OS_AVX, OS_AVX512 };

/* The names are LLVM's (cpu_names.c's CHECKABLE list, the same set). */
typedef struct Feature {
    const char *name;
    unsigned leaf, sub;
    int reg, bit;
    int os; /* the register state the OS must enable */
} Feature;

static const Feature FEATURES[] = {
    {"sse3", 1, 0, ECX, 0, OS_NONE},
    {"ssse3", 1, 0, ECX, 9, OS_NONE},
    {"sse4.1", 1, 0, ECX, 19, OS_NONE},
    {"sse4.2", 1, 0, ECX, 20, OS_NONE},
    {"popcnt", 1, 0, ECX, 23, OS_NONE},
    {"cx16", 1, 0, ECX, 13, OS_NONE},
    {"sahf", 0x80000001u, 0, ECX, 0, OS_NONE},
    {"movbe", 1, 0, ECX, 22, OS_NONE},
    {"avx", 1, 0, ECX, 28, OS_AVX},
    {"avx2", 7, 0, EBX, 5, OS_AVX},
    {"fma", 1, 0, ECX, 12, OS_AVX},
    {"f16c", 1, 0, ECX, 29, OS_AVX},
    {"bmi", 7, 0, EBX, 3, OS_NONE},
    {"bmi2", 7, 0, EBX, 8, OS_NONE},
    {"lzcnt", 0x80000001u, 0, ECX, 5, OS_NONE},
    {"sse4a", 0x80000001u, 0, ECX, 6, OS_NONE},
    {"fma4", 0x80000001u, 0, ECX, 16, OS_AVX},
    {"xop", 0x80000001u, 0, ECX, 11, OS_AVX},
    {"avx512f", 7, 0, EBX, 16, OS_AVX512},
    {"avx512dq", 7, 0, EBX, 17, OS_AVX512},
    {"avx512cd", 7, 0, EBX, 28, OS_AVX512},
    {"avx512bw", 7, 0, EBX, 30, OS_AVX512},
    {"avx512vl", 7, 0, EBX, 31, OS_AVX512},
    {"avx512ifma", 7, 0, EBX, 21, OS_AVX512},
    {"avx512vbmi", 7, 0, ECX, 1, OS_AVX512},
    {"avx512vbmi2", 7, 0, ECX, 6, OS_AVX512},
    {"avx512vnni", 7, 0, ECX, 11, OS_AVX512},
    {"avx512bitalg", 7, 0, ECX, 12, OS_AVX512},
    {"avx512vpopcntdq", 7, 0, ECX, 14, OS_AVX512},
    {"avx512bf16", 7, 1, EAX, 5, OS_AVX512},
    {"avx512fp16", 7, 0, EDX, 23, OS_AVX512},
    {"avxvnni", 7, 1, EAX, 4, OS_AVX},
    {"gfni", 7, 0, ECX, 8, OS_NONE},
};
#define NFEATURES (int)(sizeof FEATURES / sizeof FEATURES[0])

/* XCR0: which register state the OS saves (0 without OSXSAVE). */
static unsigned long long xcr0(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

static bool has_feature(const Feature *f) {
    unsigned r[4] = {0};
    /* unsigned: clang's cpuid.h returns int, GCC's unsigned */
    if ((unsigned)__get_cpuid_max(f->leaf & 0x80000000u, NULL) < f->leaf) return false;
    __cpuid_count(f->leaf, f->sub, r[EAX], r[EBX], r[ECX], r[EDX]);
    if (!(r[f->reg] & (1u << f->bit))) return false;
    unsigned long long x = f->os != OS_NONE ? xcr0() : 0;
    if (f->os >= OS_AVX && (x & 0x6) != 0x6) return false;      /* XMM, YMM */
    if (f->os == OS_AVX512 && (x & 0xe0) != 0xe0) return false; /* opmask, ZMM */
    return true;
}

/* A name this table does not know is taken as missing: a program that
 * needs an unknown feature is refused rather than run blind. */
static bool has_named(const char *name, size_t len) {
    for (int i = 0; i < NFEATURES; i++)
        if (strlen(FEATURES[i].name) == len && !memcmp(FEATURES[i].name, name, len))
            return has_feature(&FEATURES[i]);
    return false;
}
#else
static bool has_named(const char *name, size_t len) {
    (void)name, (void)len;
    return true; /* no x86 code to check */
}
#endif

bool rt_cpu_has_all(const char *features, char *missing, size_t nmissing) {
    bool all = true;
    size_t n = 0;
    if (missing && nmissing) missing[0] = 0;
    for (const char *s = features ? features : ""; *s;) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len && !has_named(s, len)) {
            all = false;
            if (missing && n + len + 3 < nmissing) {
                n += (size_t)snprintf(missing + n, nmissing - n, "%s%.*s", n ? ", " : "", (int)len,
                                      s);
            }
        }
        s += len + (e != NULL);
    }
    return all;
}

static int count_features(const char *s) {
    int n = *s != 0;
    for (; *s; s++)
        n += *s == ',';
    return n;
}

int rt_cpu_best(const char *const *features, int n) {
    /* The lists of one build are usually nested (v2 < v3 < v4 < native). */
    int best = -1;
    for (int i = 0; i < n; i++)
        if (rt_cpu_has_all(features[i], NULL, 0) &&
            (best < 0 || count_features(features[i]) > count_features(features[best])))
            best = i;
    return best;
}

/* The best x86-64 psABI level this CPU runs: the --cpu to suggest. */
static const char *best_psabi_level(void) {
    static const char *const levels[][2] = {
        {"x86-64-v4", "avx512f,avx512bw,avx512cd,avx512dq,avx512vl"},
        {"x86-64-v3", "avx,avx2,bmi,bmi2,f16c,fma,lzcnt,movbe"},
        {"x86-64-v2", "cx16,sahf,popcnt,sse3,sse4.1,sse4.2,ssse3"},
    };
    /* Each level includes the ones below it. */
    for (int i = 0; i < 3; i++) {
        bool all = true;
        for (int j = i; j < 3 && all; j++)
            all = rt_cpu_has_all(levels[j][1], NULL, 0);
        if (all) return levels[i][0];
    }
    return "x86-64";
}

RtStatus rt_cpu_select(const RtProgram *p, int *level, RtError *err) {
    *level = 0;
    if (!p->nlevels) return TGCRT_OK;
    if (p->nlevels < 0 || !p->levels)
        return rt_error_set(err, TGCRT_ERR_ARG, "program '%s': malformed CPU levels",
                            p->name ? p->name : "?");
    int least = 0;
    for (int i = 0; i < p->nlevels; i++) {
        const RtCpuLevel *l = &p->levels[i];
        if (!l->name || !l->features || !l->forward)
            return rt_error_set(err, TGCRT_ERR_ARG, "program '%s': malformed CPU level %d",
                                p->name ? p->name : "?", i);
        if (count_features(l->features) < count_features(p->levels[least].features)) least = i;
    }
    const char **features = malloc((size_t)p->nlevels * sizeof *features);
    if (!features) return rt_error_set(err, TGCRT_ERR_NOMEM, "out of memory creating a context");
    for (int i = 0; i < p->nlevels; i++)
        features[i] = p->levels[i].features;
    int best = rt_cpu_best(features, p->nlevels);
    free(features);
    if (best >= 0) {
        *level = best;
        return TGCRT_OK;
    }
    char missing[RT_ERROR_MSG_MAX / 2];
    rt_cpu_has_all(p->levels[least].features, missing, sizeof missing);
    char names[256] = "";
    size_t n = 0;
    for (int i = 0; i < p->nlevels && n + 2 < sizeof names; i++) {
        const RtCpuLevel *l = &p->levels[i];
        bool native = l->cpu && strcmp(l->cpu, l->name);
        n += (size_t)snprintf(names + n, sizeof names - n, "%s%s%s%s%s", i ? "," : "", l->name,
                              native ? " (" : "", native ? l->cpu : "", native ? ")" : "");
    }
    return rt_error_set(err, TGCRT_ERR_DEVICE,
                        "program '%s' was compiled for CPU %s, whose code needs %s, which this "
                        "CPU lacks; rebuild it with tgc build --cpu %s (or a list such as "
                        "--cpu %s,native) to run here",
                        p->name ? p->name : "?", names, missing, best_psabi_level(),
                        best_psabi_level());
}
