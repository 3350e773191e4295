/* A model's graph inputs as declared, without importing it: tgc build
 * --generate reads the names of an ONNX decoder's dynamic axes (batch,
 * sequence, past length) from them before it imports the model with a
 * value for each (driver/cmd_generate.c). */
#include <stdlib.h>

#include "frontend/onnx/ox.h"

bool onnx_read_inputs(Arena *a, Diag *d, const char *path, const uint8_t *bytes, size_t n,
                      OnnxInput **out, int *nout) {
    *out = NULL;
    *nout = 0;
    Ox *x = ARENA_NEW(a, Ox);
    x->a = a;
    x->d = d;
    x->path = path ? path : "model.onnx";
    x->node = -1;
    if (setjmp(x->fail)) {
        if (x->m) onnx__model_proto__free_unpacked(x->m, NULL);
        return false;
    }
    ox_read_model(x, bytes, n);
    const Onnx__GraphProto *g = x->g;
    OnnxInput *in = ARENA_ARRAY(a, OnnxInput, g->n_input ? g->n_input : 1);
    int k = 0;
    for (size_t i = 0; i < g->n_input; i++) {
        const Onnx__ValueInfoProto *vi = g->input[i];
        if (!vi || !vi->name) ox_fail(x, "graph input %zu has no name", i);
        /* An initializer listed as an input (IR < 4) is a weight. */
        bool init = false;
        for (size_t j = 0; j < g->n_initializer && !init; j++)
            init = g->initializer[j] && g->initializer[j]->name &&
                   !strcmp(g->initializer[j]->name, vi->name);
        if (init) continue;
        OnnxInput *o = &in[k++];
        o->name = arena_strdup(a, vi->name);
        const char *what = arena_printf(a, "graph input '%s'", vi->name);
        const Onnx__TypeProto__Tensor *tt =
            vi->type && vi->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE
                ? vi->type->tensor_type
                : NULL;
        if (!tt || !tt->shape) ox_fail(x, "%s is not a tensor of known rank", what);
        o->dtype = ox_dtype(x, tt->has_elem_type ? tt->elem_type : 0, what);
        if (tt->shape->n_dim > OX_MAX_DIMS)
            ox_fail(x, "%s has more than %d dims", what, OX_MAX_DIMS);
        o->ndim = (int)tt->shape->n_dim;
        for (int dd = 0; dd < o->ndim; dd++) {
            const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[dd];
            o->dim_param[dd] = NULL;
            o->dim_value[dd] = 0;
            if (dm && dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
                o->dim_value[dd] = dm->dim_value;
            else /* the name the import gives the axis (onnx_import.c add_inputs) */
                o->dim_param[dd] =
                    dm && dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                            dm->dim_param && *dm->dim_param
                        ? arena_strdup(a, dm->dim_param)
                        : arena_printf(a, "%s_dim%d", vi->name, dd);
        }
    }
    onnx__model_proto__free_unpacked(x->m, NULL);
    *out = in;
    *nout = k;
    return true;
}
