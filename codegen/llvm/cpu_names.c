/* --cpu NAME: which names LLVM accepts for the host's target.
 *
 * LLVM's C API has no way to ask whether a CPU name is valid: creating a
 * target machine with an unknown name prints "'NAME' is not a recognized
 * processor" and goes on, and a 32-bit CPU (i386, pentium4...) aborts the
 * whole process when code is generated ("64-bit code requested on a
 * subtarget that doesn't support it"). So a name is tried in a forked child
 * that emits an empty module to memory, with its stderr captured: the name
 * is valid when the child exits normally and LLVM said nothing about it. The
 * name "help" makes LLVM print its list of CPUs, which is how the list is
 * read. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <llvm/Config/llvm-config.h> /* LLVM_VERSION_MAJOR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/codegen.h"

/* In the child: a target machine for cpu, and an empty function compiled
 * to memory (that is where 64-bit support is checked). */
static void probe_child(const char *cpu) {
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    char *triple = LLVMGetDefaultTargetTriple();
    LLVMTargetRef target;
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(triple, &target, &msg)) _exit(4);
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, cpu, "", LLVMCodeGenLevelNone,
                                                      LLVMRelocPIC, LLVMCodeModelDefault);
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("probe", ctx);
    LLVMSetTarget(mod, triple);
    LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), NULL, 0, false);
    LLVMValueRef fn = LLVMAddFunction(mod, "probe", fty);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
    LLVMBuildRetVoid(b);
    LLVMMemoryBufferRef out = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &msg, &out)) _exit(5);
    fflush(stderr);
    _exit(0);
}

/* Runs probe_child(cpu) and returns what it printed on stderr (malloc'd,
 * NUL-terminated), with *clean set when it exited with status 0. NULL when
 * the child could not be run. */
static char *probe(const char *cpu, bool *clean) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return NULL;
    }
    if (pid == 0) {
        dup2(fds[1], 2);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) dup2(devnull, 1);
        probe_child(cpu);
    }
    close(fds[1]);
    size_t cap = 4096, n = 0;
    char *text = malloc(cap);
    for (;;) {
        if (text && n + 1024 > cap) {
            char *t = realloc(text, cap * 2);
            if (!t) {
                free(text);
                text = NULL;
            } else {
                text = t, cap *= 2;
            }
        }
        char sink[1024];
        ssize_t r = read(fds[0], text ? text + n : sink, 1023);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        if (text) n += (size_t)r;
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) break;
    *clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (text) text[n] = 0;
    return text;
}

/* The CPU names in LLVM's "Available CPUs for this target:" list, one per
 * line, in a malloc'd buffer; NULL when there is none. */
static char *cpu_list(void) {
    bool clean;
    char *text = probe("help", &clean);
    if (!text) return NULL;
    const char *p = strstr(text, "Available CPUs for this target:");
    if (!p) {
        free(text);
        return NULL;
    }
    p = strchr(p, '\n');
    char *names = calloc(strlen(text) + 1, 1);
    size_t n = 0;
    while (p && names) {
        p++;
        /* Entries look like "  znver3         - Select the znver3 processor." */
        const char *s = p;
        while (*s == ' ')
            s++;
        const char *e = s;
        while (*e && *e != ' ' && *e != '\n')
            e++;
        const char *nl = strchr(p, '\n');
        if (e > s && strstr(e, " - ") && (!nl || strstr(e, " - ") < nl)) {
            memcpy(names + n, s, (size_t)(e - s));
            n += (size_t)(e - s);
            names[n++] = '\n';
        } else if (n > 0 && e == s) {
            break; /* the blank line after the list */
        }
        p = nl;
    }
    free(text);
    return names;
}

bool cg_llvm_cpu_valid(const char *cpu, char *err, size_t nerr) {
    char *triple = LLVMGetDefaultTargetTriple();
    bool ok = false;
    if (!*cpu || strchr(cpu, '\n') || !strcmp(cpu, "help")) {
        snprintf(err, nerr, "'%s' is not a CPU name", cpu);
    } else {
        bool clean = false;
        char *said = probe(cpu, &clean);
        if (!said)
            snprintf(err, nerr, "cannot check the CPU name '%s': %s", cpu, strerror(errno));
        else if (strstr(said, "not a recognized processor"))
            snprintf(err, nerr, "'%s' is not a CPU LLVM %d knows for %s", cpu, LLVM_VERSION_MAJOR,
                     triple);
        else if (!clean)
            snprintf(err, nerr, "'%s' cannot run %s code (a 32-bit CPU?)", cpu, triple);
        else
            ok = true;
        free(said);
    }
    LLVMDisposeMessage(triple);
    return ok;
}

int cg_llvm_list_cpus(FILE *out) {
    char *names = cpu_list();
    if (!names) return 0;
    char *triple = LLVMGetDefaultTargetTriple();
    char *host = LLVMGetHostCPUName();
    fprintf(out, "CPU names for %s (LLVM %d); 'native' is this machine's (%s):\n", triple,
            LLVM_VERSION_MAJOR, host);
    int count = 0;
    for (char *s = names, *nl; *s; s = nl + 1) {
        nl = strchr(s, '\n');
        *nl = 0;
        bool clean = false;
        char *said = probe(s, &clean);
        /* Only the names that generate code for this target: LLVM's list
         * includes 32-bit CPUs that would abort. */
        if (said && clean && !strstr(said, "not a recognized processor")) {
            fprintf(out, "  %s\n", s);
            count++;
        }
        free(said);
    }
    free(names);
    LLVMDisposeMessage(host);
    LLVMDisposeMessage(triple);
    return count;
}

/* ---- --cpu's list: the levels and the features each one's code needs ---- */

/* The features the runtime can check with CPUID (runtime/cpu_features.c
 * holds the same names with their CPUID bits): every one the code LLVM
 * generates for our kernels may use, SSE3 up to AVX-512 and AMD's FMA4/XOP.
 * Crypto and bit-manipulation extensions that only intrinsics reach (AES,
 * SHA, ADX...) are left out: a kernel never contains them, and requiring
 * them would refuse CPUs that run the code. */
static const char *const CHECKABLE[] = {
    "sse3",
    "ssse3",
    "sse4.1",
    "sse4.2",
    "popcnt",
    "cx16",
    "sahf",
    "movbe",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "bmi",
    "bmi2",
    "lzcnt",
    "sse4a",
    "fma4",
    "xop",
    "avx512f",
    "avx512dq",
    "avx512cd",
    "avx512bw",
    "avx512vl",
    "avx512ifma",
    "avx512vbmi",
    "avx512vbmi2",
    "avx512vnni",
    "avx512bitalg",
    "avx512vpopcntdq",
    "avx512bf16",
    "avx512fp16",
    "avxvnni",
    "gfni",
};
#define NCHECKABLE (int)(sizeof CHECKABLE / sizeof CHECKABLE[0])

static LLVMValueRef add_attr(LLVMContextRef ctx, LLVMValueRef fn, const char *k, const char *v) {
    LLVMAddAttributeAtIndex(
        fn, LLVMAttributeFunctionIndex,
        LLVMCreateStringAttribute(ctx, k, (unsigned)strlen(k), v, (unsigned)strlen(v)));
    return fn;
}

/* Which CHECKABLE features a CPU (and feature string) implies, asked of
 * LLVM itself: its C API cannot list a CPU's features, but its inliner
 * refuses to inline a callee that needs features its caller lacks (X86's
 * areInlineCompatible compares the subtargets' feature bits, implied ones
 * included). So a caller compiled for the CPU calls one empty function per
 * feature, each for the same CPU plus that feature, and the calls that the
 * inliner leaves are the features the CPU does not have. In process, no
 * code generated: a few milliseconds. */
static bool cpu_checks(const char *cpu, const char *features, char *out, size_t nout) {
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    char *triple = LLVMGetDefaultTargetTriple();
    LLVMTargetRef target;
    char *msg = NULL;
    bool ok = !LLVMGetTargetFromTriple(triple, &target, &msg);
    LLVMDisposeMessage(msg);
    if (!ok) {
        LLVMDisposeMessage(triple);
        return false;
    }
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(
        target, triple, cpu, features, LLVMCodeGenLevelNone, LLVMRelocPIC, LLVMCodeModelDefault);
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("cpu_checks", ctx);
    LLVMSetTarget(mod, triple);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(mod, td);
    LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), NULL, 0, false);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    LLVMValueRef callees[NCHECKABLE];
    size_t flen = strlen(features);
    char *plus = malloc(flen + 64);
    for (int i = 0; i < NCHECKABLE && plus; i++) {
        char name[32];
        snprintf(name, sizeof name, "f%d", i);
        LLVMValueRef fn = LLVMAddFunction(mod, name, fty);
        LLVMSetLinkage(fn, LLVMInternalLinkage);
        snprintf(plus, flen + 64, "%s%s+%s", features, flen ? "," : "", CHECKABLE[i]);
        add_attr(ctx, add_attr(ctx, fn, "target-cpu", cpu), "target-features", plus);
        LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
        LLVMBuildRetVoid(b);
        callees[i] = fn;
    }
    free(plus);
    LLVMValueRef caller = LLVMAddFunction(mod, "caller", fty);
    add_attr(ctx, add_attr(ctx, caller, "target-cpu", cpu), "target-features", features);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, caller, "entry"));
    for (int i = 0; i < NCHECKABLE; i++)
        LLVMBuildCall2(b, fty, callees[i], NULL, 0, "");
    LLVMBuildRetVoid(b);
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMErrorRef e = LLVMRunPasses(mod, "cgscc(inline)", tm, po);
    LLVMDisposePassBuilderOptions(po);
    if (e) {
        LLVMConsumeError(e);
        ok = false;
    }
    /* The callees still called are the features the CPU lacks. */
    bool lacks[NCHECKABLE] = {0};
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(caller); ok && bb;
         bb = LLVMGetNextBasicBlock(bb))
        for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in))
            if (LLVMGetInstructionOpcode(in) == LLVMCall) {
                LLVMValueRef f = LLVMGetCalledValue(in);
                for (int i = 0; i < NCHECKABLE; i++)
                    if (f == callees[i]) lacks[i] = true;
            }
    size_t n = 0;
    out[0] = 0;
    for (int i = 0; ok && i < NCHECKABLE; i++) {
        if (lacks[i]) continue;
        int w = snprintf(out + n, nout - n, "%s%s", n ? "," : "", CHECKABLE[i]);
        if (w < 0 || (size_t)w >= nout - n) ok = false;
        n += (size_t)w;
    }
    LLVMDisposeBuilder(b);
    LLVMDisposeModule(mod);
    LLVMDisposeTargetData(td);
    LLVMContextDispose(ctx);
    LLVMDisposeTargetMachine(tm);
    LLVMDisposeMessage(triple);
    return ok;
}

void cg_cpu_levels_free(CgCpuLevels *l) {
    for (int i = 0; i < l->n; i++) {
        free(l->l[i].features);
        l->l[i].features = NULL;
    }
    l->n = 0;
}

bool cg_cpu_levels(const char *list, CgCpuLevels *out, char *err, size_t nerr) {
    memset(out, 0, sizeof *out);
    const char *s = list ? list : "native";
    for (;;) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (out->n == CG_MAX_CPU_LEVELS) {
            snprintf(err, nerr, "at most %d CPU levels, found more in '%s'", CG_MAX_CPU_LEVELS,
                     list);
            goto fail;
        }
        CgCpuLevel *l = &out->l[out->n];
        if (len == 0 || len >= sizeof l->name) {
            snprintf(err, nerr, "'%.*s' is not a CPU name", (int)len, s);
            goto fail;
        }
        memcpy(l->name, s, len);
        l->name[len] = 0;
        for (int i = 0; i < out->n; i++)
            if (!strcmp(out->l[i].name, l->name)) {
                snprintf(err, nerr, "'%s' is named twice", l->name);
                goto fail;
            }
        if (!strcmp(l->name, "native")) {
            char *host = LLVMGetHostCPUName(), *hf = LLVMGetHostCPUFeatures();
            snprintf(l->cpu, sizeof l->cpu, "%s", host);
            l->features = strdup(hf);
            LLVMDisposeMessage(host);
            LLVMDisposeMessage(hf);
        } else {
            if (!cg_llvm_cpu_valid(l->name, err, nerr)) goto fail;
            memcpy(l->cpu, l->name, sizeof l->cpu); /* the same size */
            l->features = strdup("");
        }
        out->n++;
        if (!l->features) {
            snprintf(err, nerr, "out of memory");
            goto fail;
        }
        if (!cpu_checks(l->cpu, l->features, l->checks, sizeof l->checks)) {
            snprintf(err, nerr, "internal: cannot ask LLVM which features '%s' has", l->name);
            goto fail;
        }
        if (!e) break;
        s = e + 1;
    }
    return true;
fail:
    cg_cpu_levels_free(out);
    return false;
}
