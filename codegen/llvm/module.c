/* The LLVM module of one graph: the forward function that runs every
 * kernel in plan order, optimised with default<O3> and written as an
 * object for the host CPU (or --cpu), with optional .ll / .s listings. */
#include <llvm-c/Analysis.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/llvm/cg.h"
#include "codegen/write_file.h"

LLVMValueRef cg_fwd_ptr(Cg *cg, const Value *v);

/* The LLVM side of the backend interface (codegen/backend.h). */
#define CG_BE_T Cg
#define CG_BE_FN(kind) k_##kind
#define CG_BE_FAIL cg_fail
#define CG_BE_NAME ""
#include "codegen/backend_impl.h"

/* The forward function runs the steps in parts of at most FWD_PART_STEPS,
 * each a function of its own that forward calls in order: a part fills
 * each kernel's pointer table and calls it, and LLVM's instruction
 * scheduler is quadratic in the length of a basic block, which one
 * forward function of thousands of steps would be. */
#define FWD_PART_STEPS 64

static void fwd_part_begin(Cg *cg) {
    char name[32];
    snprintf(name, sizeof name, "forward_part%d", cg->nparts++);
    cg->fwd = LLVMAddFunction(cg->mod, name, cg->t_fwd);
    LLVMSetLinkage(cg->fwd, LLVMInternalLinkage);
    LLVMAddAttributeAtIndex(
        cg->fwd, LLVMAttributeFunctionIndex,
        LLVMCreateEnumAttribute(cg->ctx, LLVMGetEnumAttributeKindForName("noinline", 8), 0));
    LLVMAppendBasicBlockInContext(cg->ctx, cg->fwd, "entry");
    LLVMPositionBuilderAtEnd(cg->b, LLVMGetLastBasicBlock(cg->fwd));
    cg->fwd_bufs = LLVMBuildBitCast(cg->b, LLVMGetParam(cg->fwd, 0), cg->t_ptr, "bufs");
    cg->fwd_pool = LLVMGetParam(cg->fwd, 1);
    cg->fwd_ptrs = LLVMBuildAlloca(cg->b, LLVMArrayType(cg->t_ptr, KERN_MAX_BASES), "ptrs");
    cg->fwd_steps = 0;
    /* The profiler's pointer, read once per part: kernels never write bufs,
     * but LLVM cannot know that across their calls. */
    LLVMValueRef slot = LLVMBuildInBoundsGEP2(
        cg->b, cg->t_ptr, LLVMBuildBitCast(cg->b, cg->fwd_bufs, cg->t_pptr, ""),
        (LLVMValueRef[]){LLVMConstInt(cg->t_i64, (unsigned long long)cg_profile_slot(cg->p), 0)}, 1,
        "");
    cg->fwd_prof = LLVMBuildLoad2(cg->b, cg->t_ptr, slot, "prof");
}

/* Profiling hook: `if (prof) rt_prof_mark(prof, step)` at the end of the
 * current part, step being the kernel about to start (nkernels after the
 * last). rt_prof_mark is declared cold, so the call stays off the straight
 * path: a run that does not profile pays a compare and a predicted branch
 * per step. */
static void prof_mark(Cg *cg, int step) {
    LLVMModuleRef m = LLVMGetGlobalParent(cg->fwd);
    LLVMTypeRef pt[2] = {cg->t_ptr, cg->t_i64};
    LLVMTypeRef ft = LLVMFunctionType(cg->t_void, pt, 2, false);
    LLVMValueRef fn = LLVMGetNamedFunction(m, "rt_prof_mark");
    if (!fn) {
        fn = LLVMAddFunction(m, "rt_prof_mark", ft);
        LLVMAddAttributeAtIndex(
            fn, LLVMAttributeFunctionIndex,
            LLVMCreateEnumAttribute(cg->ctx, LLVMGetEnumAttributeKindForName("cold", 4), 0));
    }
    LLVMPositionBuilderAtEnd(cg->b, LLVMGetLastBasicBlock(cg->fwd));
    LLVMValueRef on = LLVMBuildIsNotNull(cg->b, cg->fwd_prof, "profiling");
    LLVMBasicBlockRef mark = LLVMAppendBasicBlockInContext(cg->ctx, cg->fwd, "prof_mark");
    LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(cg->ctx, cg->fwd, "step");
    LLVMBuildCondBr(cg->b, on, mark, next);
    LLVMPositionBuilderAtEnd(cg->b, mark);
    LLVMValueRef args[2] = {cg->fwd_prof, LLVMConstInt(cg->t_i64, (unsigned long long)step, 0)};
    LLVMBuildCall2(cg->b, ft, fn, args, 2, "");
    LLVMBuildBr(cg->b, next);
    LLVMPositionBuilderAtEnd(cg->b, next);
}

static void fwd_part_end(Cg *cg) {
    LLVMPositionBuilderAtEnd(cg->b, LLVMGetLastBasicBlock(cg->fwd));
    LLVMBuildRetVoid(cg->b);
    LLVMPositionBuilderAtEnd(cg->b, LLVMGetLastBasicBlock(cg->fwd_top));
    LLVMValueRef args[2] = {LLVMGetParam(cg->fwd_top, 0), LLVMGetParam(cg->fwd_top, 1)};
    LLVMBuildCall2(cg->b, cg->t_fwd, cg->fwd, args, 2, "");
}

void cg_fwd_step_done(Cg *cg) {
    if (++cg->fwd_steps < FWD_PART_STEPS) return;
    fwd_part_end(cg);
    fwd_part_begin(cg);
}

static void init_types(Cg *cg) {
    LLVMContextRef c = cg->ctx;
    cg->t_void = LLVMVoidTypeInContext(c);
    cg->t_i1 = LLVMInt1TypeInContext(c);
    cg->t_i8 = LLVMInt8TypeInContext(c);
    cg->t_i16 = LLVMInt16TypeInContext(c);
    cg->t_i32 = LLVMInt32TypeInContext(c);
    cg->t_i64 = LLVMInt64TypeInContext(c);
    cg->t_half = LLVMHalfTypeInContext(c);
    cg->t_f32 = LLVMFloatTypeInContext(c);
    cg->t_f64 = LLVMDoubleTypeInContext(c);
    cg->t_ptr = LLVMPointerType(cg->t_i8, 0);
    cg->t_pptr = LLVMPointerType(cg->t_ptr, 0);
    LLVMTypeRef kp[4] = {cg->t_ptr, cg->t_i64, cg->t_i64, cg->t_i32};
    cg->t_kernel = LLVMFunctionType(cg->t_void, kp, 4, false);
    LLVMTypeRef pp[6] = {cg->t_ptr, cg->t_i64, cg->t_i64, cg->t_i64, cg->t_ptr, cg->t_ptr};
    cg->t_pfor = LLVMFunctionType(cg->t_void, pp, 6, false);
}

/* The object or the assembly, made in memory and written by write_file:
 * LLVMTargetMachineEmitToFile's stream aborts the process ("IO failure on
 * output stream") when the file cannot be written whole. */
static bool emit_file(LLVMTargetMachineRef tm, LLVMModuleRef m, LLVMCodeGenFileType kind,
                      const char *path, char *err, size_t nerr) {
    char *msg = NULL;
    LLVMMemoryBufferRef buf = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, kind, &msg, &buf)) {
        snprintf(err, nerr, "internal: LLVM cannot generate '%s': %s", path, msg ? msg : "");
        LLVMDisposeMessage(msg);
        return false;
    }
    bool ok = cg_write_file(path, LLVMGetBufferStart(buf), LLVMGetBufferSize(buf), err, nerr);
    LLVMDisposeMemoryBuffer(buf);
    return ok;
}

/* LLVM's diagnostics: a loop with the vectorize hint that cannot be
 * vectorised (f64 exp calls libm) is reported as a remark or a warning,
 * which the default handler printed on every such build ("remark: loop not
 * vectorized"). They concern the generated code's speed, not the user's
 * graph, so only errors are shown (and those also fail the build). */
static void llvm_diagnostic(LLVMDiagnosticInfoRef di, void *ctx) {
    (void)ctx;
    if (LLVMGetDiagInfoSeverity(di) != LLVMDSError) return;
    char *m = LLVMGetDiagInfoDescription(di);
    fprintf(stderr, "tgc: LLVM error: %s\n", m);
    LLVMDisposeMessage(m);
}

static void set_fn_attr(LLVMContextRef c, LLVMValueRef fn, const char *k, const char *v) {
    LLVMAddAttributeAtIndex(
        fn, LLVMAttributeFunctionIndex,
        LLVMCreateStringAttribute(c, k, (unsigned)strlen(k), v, (unsigned)strlen(v)));
}

/* --cpu with several levels: the module, made once, cloned per level,
 * every function of a clone given that level's target-cpu and
 * target-features (which the optimiser's cost model and the code generator
 * read per function), its forward renamed NAME__forward_cpuI, and the
 * clones linked into one module (the linker renames their internal
 * kernels apart). One object, one optimisation run: the glue's table of
 * forwards (codegen/glue.c) and the runtime's choice (cpu_features.c) pick
 * one level at start. */
static bool clone_levels(Cg *cg, const CgCpuLevels *lv, char *err, size_t nerr) {
    const char *g = cg->p->g->name;
    size_t gl = strlen(g);
    char *fwd = malloc(gl + sizeof "__forward"), *name = malloc(gl + 64);
    TGC_ASSERT(fwd && name);
    snprintf(fwd, gl + sizeof "__forward", "%s__forward", g);
    LLVMModuleRef dest = NULL;
    bool ok = true, consumed = false;
    for (int i = 0; ok && i < lv->n; i++) {
        LLVMModuleRef m = i + 1 < lv->n ? LLVMCloneModule(cg->mod) : cg->mod;
        for (LLVMValueRef fn = LLVMGetFirstFunction(m); fn; fn = LLVMGetNextFunction(fn)) {
            if (LLVMIsDeclaration(fn)) continue;
            set_fn_attr(cg->ctx, fn, "target-cpu", lv->l[i].cpu);
            set_fn_attr(cg->ctx, fn, "target-features", lv->l[i].features);
        }
        snprintf(name, gl + 64, "%s__forward_cpu%d", g, i);
        LLVMValueRef top = LLVMGetNamedFunction(m, fwd);
        TGC_ASSERT(top);
        LLVMSetValueName2(top, name, strlen(name));
        if (!dest) {
            dest = m;
            continue;
        }
        consumed = m == cg->mod;
        if (LLVMLinkModules2(dest, m)) { /* consumes m, linked or not */
            snprintf(err, nerr, "internal: cannot link the module of CPU level '%s'",
                     lv->l[i].name);
            ok = false;
        }
    }
    /* The first clone holds every level once the module itself, the last,
     * was linked into it: it becomes the module. */
    if (consumed)
        cg->mod = dest;
    else if (dest)
        LLVMDisposeModule(dest);
    free(fwd);
    free(name);
    return ok;
}

bool cg_llvm_emit(const CgProgram *p, const CgOptions *o, char *err, size_t nerr) {
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    char *triple = LLVMGetDefaultTargetTriple();
    LLVMTargetRef target;
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
        snprintf(err, nerr, "LLVM has no target for '%s': %s", triple, msg);
        LLVMDisposeMessage(msg);
        LLVMDisposeMessage(triple);
        return false;
    }
    char *host_cpu = LLVMGetHostCPUName(), *host_features = LLVMGetHostCPUFeatures();
    const char *cpu = o->cpu ? o->cpu : host_cpu;
    const char *features = o->cpu ? "" : host_features;
    const CgCpuLevels *lv = o->levels;
    if (lv && lv->n == 1) cpu = lv->l[0].cpu, features = lv->l[0].features;
    /* Several levels: each function says its CPU in its attributes, and the
     * machine is the baseline that every x86-64 CPU runs. */
    bool multi = lv && lv->n > 1;
    if (multi) cpu = "x86-64", features = "";
    LLVMTargetMachineRef tm =
        LLVMCreateTargetMachine(target, triple, cpu, features, LLVMCodeGenLevelAggressive,
                                LLVMRelocPIC, LLVMCodeModelDefault);
    Cg cg;
    memset(&cg, 0, sizeof cg);
    cg.p = p;
    cg.ctx = LLVMContextCreate();
    LLVMContextSetDiagnosticHandler(cg.ctx, llvm_diagnostic, NULL);
    /* Symbols are built at the graph name's full length: the glue refers
     * to NAME__forward, and a name cut short would not link. */
    size_t gl = strlen(p->g->name);
    char *sym = malloc(gl + sizeof "__forward");
    TGC_ASSERT(sym);
    memcpy(sym, "tgc_", 4);
    memcpy(sym + 4, p->g->name, gl + 1);
    cg.mod = LLVMModuleCreateWithNameInContext(sym, cg.ctx); /* copies the name */
    memcpy(sym, p->g->name, gl);
    memcpy(sym + gl, "__forward", sizeof "__forward");
    LLVMSetTarget(cg.mod, triple);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(cg.mod, td);
    cg.b = LLVMCreateBuilderInContext(cg.ctx);
    init_types(&cg);
    LLVMAddFunction(cg.mod, "rt_pool_parallel_for", cg.t_pfor);

    LLVMTypeRef fp[2] = {cg.t_pptr, cg.t_ptr};
    cg.t_fwd = LLVMFunctionType(cg.t_void, fp, 2, false);
    cg.fwd_top = LLVMAddFunction(cg.mod, sym, cg.t_fwd);
    free(sym);
    LLVMAppendBasicBlockInContext(cg.ctx, cg.fwd_top, "entry");
    fwd_part_begin(&cg);
    const CgBackend be = cg_backend_of(&cg, p);
    for (int i = 0; i < p->kp->nkernels && !cg.fail; i++) {
        prof_mark(&cg, i);
        cg_emit_kernel(&be, &p->kp->kernels[i]);
    }
    prof_mark(&cg, p->kp->nkernels);
    cg_share_finish(&cg);
    fwd_part_end(&cg);
    LLVMPositionBuilderAtEnd(cg.b, LLVMGetLastBasicBlock(cg.fwd_top));
    LLVMBuildRetVoid(cg.b);

    bool ok = !cg.fail;
    if (!ok) snprintf(err, nerr, "%s", cg.err);
    if (ok && LLVMVerifyModule(cg.mod, LLVMReturnStatusAction, &msg)) {
        snprintf(err, nerr, "internal: generated LLVM IR does not verify: %.400s", msg);
        ok = false;
    }
    if (msg) LLVMDisposeMessage(msg), msg = NULL;
    if (ok && multi) ok = clone_levels(&cg, lv, err, nerr);
    if (ok) {
        LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
        LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
        LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
        /* No loop unrolling beyond the vectorizer's interleaving: O3's
         * full and partial unrolling of the kernels' constant-trip loops
         * made DenseNet-121's module 30 MB of IR and its build 34 s of
         * CPU (5.7 s without), and gained nothing measurable at run time
         * (1 thread, min of 100 runs, unrolled -> not: ViT-tiny 101 ->
         * 96 us, MobileNetV3-small 270 -> 262 us, a layer_norm + gelu +
         * softmax graph [64, 768] 84 -> 84 us, DenseNet-121 9.6 -> 9.8 ms,
         * within its noise). Loops a pragma asks to unroll still are. */
        LLVMPassBuilderOptionsSetLoopUnrolling(po, 0);
        LLVMErrorRef e = LLVMRunPasses(cg.mod, "default<O3>", tm, po);
        LLVMDisposePassBuilderOptions(po);
        if (e) {
            char *em = LLVMGetErrorMessage(e);
            snprintf(err, nerr, "internal: LLVM passes failed: %s", em);
            LLVMDisposeErrorMessage(em);
            ok = false;
        }
    }
    if (ok && o->emit_llvm_path) {
        char *text = LLVMPrintModuleToString(cg.mod);
        ok = cg_write_file(o->emit_llvm_path, text, strlen(text), err, nerr);
        LLVMDisposeMessage(text);
    }
    if (ok && o->emit_asm_path)
        ok = emit_file(tm, cg.mod, LLVMAssemblyFile, o->emit_asm_path, err, nerr);
    if (ok && o->obj_path) ok = emit_file(tm, cg.mod, LLVMObjectFile, o->obj_path, err, nerr);
    cg_share_free(&cg);
    LLVMDisposeBuilder(cg.b);
    LLVMDisposeModule(cg.mod);
    LLVMDisposeTargetData(td);
    LLVMContextDispose(cg.ctx);
    LLVMDisposeTargetMachine(tm);
    LLVMDisposeMessage(triple);
    LLVMDisposeMessage(host_cpu);
    LLVMDisposeMessage(host_features);
    return ok;
}
