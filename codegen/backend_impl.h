/* The adapters from CgBackend's untyped slots to one backend's functions.
 * A backend includes this once, in the file that runs the dispatch, after
 * defining:
 *   CG_BE_T        its module state (Cg, Cu);
 *   CG_BE_FN(kind) its function writing a kernel of that kind
 *                  (CG_BACKEND_KINDS), a KCopy (kind copy), a gather, a product
 *                  (product) or an einsum's contraction (contraction);
 *   CG_BE_FAIL     its printf-like failure report, (CG_BE_T *, fmt, ...);
 *   CG_BE_NAME     its name in internal errors ("" or "CUDA ").
 * It defines cg_backend_of(CG_BE_T *, const CgProgram *), that backend's
 * CgBackend. Not a header of declarations: it writes static functions
 * into its includer. */
#include "codegen/backend.h"

#define CG_BE_ADAPT(kind)                                                                          \
    static void be_##kind(void *ctx, const Value *v) {                                             \
        CG_BE_FN(kind)((CG_BE_T *)ctx, v);                                                         \
    }
CG_BACKEND_KINDS(CG_BE_ADAPT)
#undef CG_BE_ADAPT

static void be_copy(void *ctx, const KCopy *c) {
    CG_BE_FN(copy)((CG_BE_T *)ctx, c);
}
static void be_gather(void *ctx, const Value *v, KGather *gd) {
    CG_BE_FN(gather)((CG_BE_T *)ctx, v, gd);
}
static void be_product(void *ctx, const MM *mm, const Value *a, const Value *b, const Value *c) {
    CG_BE_FN(product)((CG_BE_T *)ctx, mm, a, b, c);
}
static void be_contraction(void *ctx, KEinsum *e) {
    CG_BE_FN(contraction)((CG_BE_T *)ctx, e);
}
static void be_fail(void *ctx, const char *msg) {
    CG_BE_FAIL((CG_BE_T *)ctx, "%s", msg);
}

static CgBackend cg_backend_of(CG_BE_T *ctx, const CgProgram *p) {
#define CG_BE_SLOT(kind) [CGK_##kind] = be_##kind,
    CgBackend be = {ctx,     p,         CG_BE_NAME, {CG_BACKEND_KINDS(CG_BE_SLOT)},
                    be_copy, be_gather, be_product, be_contraction,
                    be_fail};
#undef CG_BE_SLOT
    return be;
}
