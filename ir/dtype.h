/* Element types and PyTorch's type-promotion rules (c10/core/ScalarType.h). */
#ifndef TGC_DTYPE_H
#define TGC_DTYPE_H
#include <stdbool.h>
#include <stddef.h>

typedef enum {
    DT_BOOL,
    DT_U8,
    DT_I8,
    DT_I16,
    DT_I32,
    DT_I64,
    DT_F16,
    DT_BF16,
    DT_F32,
    DT_F64,
    DT_U16,
    DT_U32,
    DT_U64,
    DT_COUNT,
    DT_NONE = -1,
} DType;

const char *dtype_name(DType t);
size_t dtype_size(DType t);
bool dtype_is_float(DType t);
bool dtype_is_int(DType t);      /* integral, bool excluded */
bool dtype_is_unsigned(DType t); /* u8, u16, u32, u64 (bool excluded) */
/* Looks up a dtype by its name or torch alias (float32, half, long...). */
DType dtype_from_name(const char *name);
/* PyTorch's promoteTypes for two tensors of the same priority. */
DType dtype_promote(DType a, DType b);

/* PyTorch's result_type over operands of three priorities: tensors with
 * dims, 0-d tensors, and "wrapped numbers" (literals, which are weak). */
typedef struct DTypeState {
    DType dim, zero, wrapped;
} DTypeState;
void dtype_state_init(DTypeState *s);
void dtype_state_add(DTypeState *s, DType t, int ndim, bool weak);
DType dtype_state_result(const DTypeState *s);
#endif
