/* The operators the importer maps and, for each, the attributes its
 * mapping understands (ONNX's, opsets 11 to 18). A node carrying any other
 * attribute is refused before it is folded, fused or written: an attribute
 * the mapping does not read would otherwise be silently ignored, and the
 * .tg would compute something else than the model. Attributes whose every
 * value is not supported are listed here and checked by the mapping (Resize's
 * antialias, ArgMax's select_last_index...). The same table is the list of
 * supported operators that the "not supported" message prints. */
#include <stdio.h>
#include <string.h>

#include "frontend/onnx/ox.h"

static const char *const NONE = "";
static const char *const REDUCE = "axes keepdims noop_with_empty_axes";

static const struct {
    const char *op, *attrs; /* attrs: space-separated names */
} ops[] = {
    {"Abs", NONE},
    {"Add", NONE},
    {"And", NONE},
    {"ArgMax", "axis keepdims select_last_index"},
    {"ArgMin", "axis keepdims select_last_index"},
    {"AveragePool", "auto_pad ceil_mode count_include_pad dilations kernel_shape pads strides"},
    {"BatchNormalization", "epsilon momentum training_mode"},
    {"Cast", "to"},
    {"Ceil", NONE},
    {"Clip", "min max"},
    {"Concat", "axis"},
    {"Constant", "value value_float value_floats value_int value_ints"},
    {"ConstantOfShape", "value"},
    {"Conv", "auto_pad dilations group kernel_shape pads strides"},
    {"ConvTranspose", "auto_pad dilations group kernel_shape output_padding output_shape pads "
                      "strides"},
    {"Cos", NONE},
    {"Div", NONE},
    {"Dropout", "ratio seed"},
    {"Einsum", "equation"},
    {"Elu", "alpha"},
    {"Equal", NONE},
    {"Erf", NONE},
    {"Exp", NONE},
    {"Expand", NONE},
    {"Flatten", "axis"},
    {"Floor", NONE},
    {"Gather", "axis"},
    {"Gemm", "alpha beta transA transB"},
    {"GlobalAveragePool", NONE},
    {"GlobalMaxPool", NONE},
    {"Greater", NONE},
    {"GreaterOrEqual", NONE},
    {"HardSigmoid", "alpha beta"},
    {"HardSwish", NONE},
    {"Identity", NONE},
    {"InstanceNormalization", "epsilon"},
    {"LayerNormalization", "axis epsilon stash_type"},
    {"LeakyRelu", "alpha"},
    {"Less", NONE},
    {"LessOrEqual", NONE},
    {"Log", NONE},
    {"LogSoftmax", "axis"},
    {"MatMul", NONE},
    {"Max", NONE},
    /* storage_order only orders the indices output, which is refused */
    {"MaxPool", "auto_pad ceil_mode dilations kernel_shape pads storage_order strides"},
    {"Min", NONE},
    {"Mish", NONE},
    {"Mod", "fmod"},
    {"Mul", NONE},
    {"Neg", NONE},
    {"Not", NONE},
    {"Or", NONE},
    {"Pad", "mode"},
    {"Pow", NONE},
    {"PRelu", NONE},
    {"Range", NONE},
    {"Reciprocal", NONE},
    {"ReduceMax", REDUCE},
    {"ReduceMean", REDUCE},
    {"ReduceMin", REDUCE},
    {"ReduceProd", REDUCE},
    {"ReduceSum", REDUCE},
    {"Relu", NONE},
    {"Reshape", "allowzero"},
    /* cubic_coeff_a and extrapolation_value only matter to the cubic and
     * tf_crop_and_resize modes, which are refused; torch writes the first */
    {"Resize", "antialias axes coordinate_transformation_mode cubic_coeff_a exclude_outside "
               "extrapolation_value keep_aspect_ratio_policy mode nearest_mode"},
    {"Round", NONE},
    {"ScatterND", "reduction"},
    {"Shape", "end start"},
    {"Sigmoid", NONE},
    {"Sign", NONE},
    {"Sin", NONE},
    {"Size", NONE},
    {"Slice", NONE},
    {"Softmax", "axis"},
    {"Softplus", NONE},
    {"Split", "axis num_outputs split"},
    {"Sqrt", NONE},
    {"Squeeze", "axes"},
    {"Sub", NONE},
    {"Sum", NONE},
    {"Tanh", NONE},
    {"Tile", NONE},
    {"Transpose", "perm"},
    {"Trilu", "upper"},
    {"Unsqueeze", "axes"},
    {"Where", NONE},
    {"Xor", NONE},
};
enum { NOPS = sizeof ops / sizeof *ops };

static bool in_list(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; n && (p = strstr(p, name)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || !p[n])) return true;
    return false;
}

const char *ox_supported_ops(Ox *x) {
    char *s = arena_strdup(x->a, "");
    for (int k = 0; k < NOPS; k++)
        s = arena_printf(x->a, "%s%s%s%s", s, k ? ", " : "", ops[k].op,
                         !strcmp(ops[k].op, "ScatterND") ? " (constant)" : "");
    return s;
}

bool ox_is_supported(const char *op) {
    for (int k = 0; k < NOPS; k++)
        if (!strcmp(ops[k].op, op)) return true;
    return false;
}

void ox_check_node_attrs(Ox *x) {
    Onnx__NodeProto *n = ox_cur(x);
    int k = 0;
    while (k < NOPS && strcmp(ops[k].op, n->op_type ? n->op_type : ""))
        k++;
    if (k == NOPS) return; /* the walk says the op is not supported */
    for (size_t i = 0; i < n->n_attribute; i++) {
        const char *an = n->attribute[i] && n->attribute[i]->name ? n->attribute[i]->name : "";
        if (in_list(ops[k].attrs, an)) continue;
        char list[256] = "";
        for (const char *p = ops[k].attrs; *p;) {
            size_t w = strcspn(p, " ");
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%.*s", *list ? ", " : "",
                     (int)w, p);
            p += w + (p[w] == ' ');
        }
        ox_fail(x, "attribute '%s' of %s is not supported (supported: %s)", an, n->op_type,
                *list ? list : "none");
    }
}
