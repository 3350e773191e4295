/* Kernels with the same code are compiled once. A kernel reads its buffers
 * through the pointer table its caller passes (loops.c: kern_ptr_for), so
 * its code names no slot and no arena offset: the kernels of the layers of
 * a repeated block, or of thousands of outputs of one shape, are the same
 * code. Each kernel is built alone in a scratch module (with the
 * declarations and constants it uses) under one fixed name, so the
 * module's printed text is its identity: a new kernel whose text was seen
 * before is dropped and the earlier function called instead; otherwise it
 * is renamed and linked into the program's module. Printing a function in
 * the program's module would cost time in proportion to that module (LLVM
 * numbers all its metadata first), quadratic in the number of kernels. So
 * a model's compile time grows with its distinct kernels, not its depth. */
#include <llvm-c/Linker.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/llvm/cg.h"

#define SCRATCH_NAME "kernel"

LLVMValueRef cg_share_begin(Cg *cg) {
    cg->main_mod = cg->mod;
    cg->mod = LLVMModuleCreateWithNameInContext(SCRATCH_NAME, cg->ctx);
    LLVMSetTarget(cg->mod, LLVMGetTarget(cg->main_mod));
    LLVMSetDataLayout(cg->mod, LLVMGetDataLayoutStr(cg->main_mod));
    /* External while it is linked (the linker only brings internal symbols
     * that something already references), internal once it is in. */
    return LLVMAddFunction(cg->mod, SCRATCH_NAME, cg->t_kernel);
}

static uint64_t hash_text(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* New kernels are linked into a batch module, and batches into the
 * program's module: linking costs time in proportion to the destination
 * module (LLVM's IRMover walks it), so linking each kernel straight into the
 * program would again be quadratic. */
#define BATCH_KERNELS 64

static bool flush_batch(Cg *cg) {
    if (!cg->batch_mod) return true;
    LLVMModuleRef b = cg->batch_mod;
    cg->batch_mod = NULL;
    cg->nbatch = 0;
    if (LLVMLinkModules2(cg->mod, b)) { /* consumes b */
        cg_fail(cg, "internal: cannot link kernels into the module");
        return false;
    }
    /* The linker replaced the declarations the calls went through with
     * the definitions: look the functions up again, made internal. */
    for (int i = cg->nlinked; i < cg->nshared; i++) {
        cg->shared[i].fn = LLVMGetNamedFunction(cg->mod, cg->shared[i].name);
        LLVMSetLinkage(cg->shared[i].fn, LLVMInternalLinkage);
    }
    cg->nlinked = cg->nshared;
    return true;
}

LLVMValueRef cg_share_end(Cg *cg, const char *name) {
    LLVMModuleRef scratch = cg->mod;
    cg->mod = cg->main_mod;
    char *text = LLVMPrintModuleToString(scratch);
    uint64_t h = hash_text(text);
    for (int i = 0; i < cg->nshared; i++) {
        if (cg->shared[i].hash == h && !strcmp(cg->shared[i].sig, text)) {
            LLVMDisposeMessage(text);
            LLVMDisposeModule(scratch);
            return cg->shared[i].fn;
        }
    }
    LLVMSetValueName2(LLVMGetNamedFunction(scratch, SCRATCH_NAME), name, strlen(name));
    if (!cg->batch_mod) {
        cg->batch_mod = LLVMModuleCreateWithNameInContext("kernels", cg->ctx);
        LLVMSetTarget(cg->batch_mod, LLVMGetTarget(cg->mod));
        LLVMSetDataLayout(cg->batch_mod, LLVMGetDataLayoutStr(cg->mod));
    }
    bool linked = !LLVMLinkModules2(cg->batch_mod, scratch); /* consumes scratch */
    if (!linked) {
        LLVMDisposeMessage(text);
        if (!cg->fail) cg_fail(cg, "internal: cannot link kernel '%s' into the module", name);
        return NULL;
    }
    /* Called through a declaration until its batch is linked in
     * (flush_batch). */
    LLVMValueRef fn = LLVMGetNamedFunction(cg->mod, name);
    if (!fn) fn = LLVMAddFunction(cg->mod, name, cg->t_kernel);
    if (cg->nshared == cg->cap_shared) {
        int cap = cg->cap_shared ? cg->cap_shared * 2 : 64;
        CgSharedKernel *grown = realloc(cg->shared, sizeof *grown * (size_t)cap);
        if (!grown) {
            LLVMDisposeMessage(text);
            cg_fail(cg, "out of memory");
            return NULL;
        }
        cg->shared = grown;
        cg->cap_shared = cap;
    }
    cg->shared[cg->nshared++] = (CgSharedKernel){h, text, fn, {0}};
    snprintf(cg->shared[cg->nshared - 1].name, sizeof cg->shared->name, "%s", name);
    LLVMValueRef call = fn;
    if (++cg->nbatch == BATCH_KERNELS && !flush_batch(cg)) return NULL;
    return cg->nlinked == cg->nshared ? cg->shared[cg->nshared - 1].fn : call;
}

void cg_share_finish(Cg *cg) {
    if (cg->main_mod && cg->mod != cg->main_mod) { /* a kernel left unfinished by a failure */
        LLVMDisposeModule(cg->mod);
        cg->mod = cg->main_mod;
    }
    if (cg->fail) {
        if (cg->batch_mod) LLVMDisposeModule(cg->batch_mod);
        cg->batch_mod = NULL;
        return;
    }
    flush_batch(cg);
}

void cg_share_free(Cg *cg) {
    for (int i = 0; i < cg->nshared; i++)
        LLVMDisposeMessage(cg->shared[i].sig);
    free(cg->shared);
    cg->shared = NULL;
    cg->nshared = cg->cap_shared = 0;
    if (cg->batch_mod) LLVMDisposeModule(cg->batch_mod);
    cg->batch_mod = NULL;
}
