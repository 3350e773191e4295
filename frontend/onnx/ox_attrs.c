/* The operators the importer maps and, for each, how many inputs and
 * outputs ONNX allows it (counting "" for an omitted optional one; the
 * widest range over opsets 7 to 21) and the attributes its mapping
 * understands (ONNX's, opsets 7 to 21; ox_upgrade.c turns the older forms
 * into the current ones). Every node's counts are checked
 * against this one table before any node is imported, as ONNX Runtime's
 * checker does: the mappings, and the fusions that look ahead, read inputs
 * by position. A node carrying any other attribute is refused before it is
 * folded, fused or written: an attribute the mapping does not read would
 * otherwise be silently ignored, and the .tg would compute something else
 * than the model. Attributes whose every value is not supported are listed
 * here and checked by the mapping (Resize's antialias, ArgMax's
 * select_last_index...). The same table is the list of supported operators
 * that the "not supported" message prints. */
#include <stdio.h>
#include <string.h>

#include "frontend/onnx/ox.h"

static const char *const NONE = "";
static const char *const REDUCE = "axes keepdims noop_with_empty_axes";
/* opset 6's broadcasting attributes (ox_upgrade.c) */
static const char *const BCAST = "axis broadcast";

enum { ANY = 1 << 30 }; /* a variadic operator's maximum */

static const struct {
    const char *op;
    int in_min, in_max, out_min, out_max;
    const char *attrs; /* space-separated names */
} ops[] = {
    {"Abs", 1, 1, 1, 1, NONE},
    {"Acos", 1, 1, 1, 1, NONE},
    {"Acosh", 1, 1, 1, 1, NONE},
    {"Add", 2, 2, 1, 1, BCAST},
    {"And", 2, 2, 1, 1, BCAST},
    {"ArgMax", 1, 1, 1, 1, "axis keepdims select_last_index"},
    {"ArgMin", 1, 1, 1, 1, "axis keepdims select_last_index"},
    {"Asin", 1, 1, 1, 1, NONE},
    {"Asinh", 1, 1, 1, 1, NONE},
    {"Atan", 1, 1, 1, 1, NONE},
    {"Atanh", 1, 1, 1, 1, NONE},
    {"AveragePool", 1, 1, 1, 1,
     "auto_pad ceil_mode count_include_pad dilations kernel_shape pads strides"},
    {"BatchNormalization", 5, 5, 1, 5, "epsilon is_test momentum spatial training_mode"},
    {"BitShift", 2, 2, 1, 1, "direction"},
    {"Cast", 1, 1, 1, 1, "saturate to"},
    {"CastLike", 2, 2, 1, 1, "saturate"},
    {"Ceil", 1, 1, 1, 1, NONE},
    {"Celu", 1, 1, 1, 1, "alpha"},
    {"Clip", 1, 3, 1, 1, "min max"},
    {"Concat", 1, ANY, 1, 1, "axis"},
    {"Compress", 2, 2, 1, 1, "axis"},
    {"Constant", 0, 0, 1, 1, "value value_float value_floats value_int value_ints"},
    {"ConstantOfShape", 1, 1, 1, 1, "value"},
    {"Conv", 2, 3, 1, 1, "auto_pad dilations group kernel_shape pads strides"},
    {"ConvInteger", 2, 4, 1, 1, "auto_pad dilations group kernel_shape pads strides"},
    {"ConvTranspose", 2, 3, 1, 1,
     "auto_pad dilations group kernel_shape output_padding output_shape pads "
     "strides"},
    {"Cos", 1, 1, 1, 1, NONE},
    {"Cosh", 1, 1, 1, 1, NONE},
    {"CumSum", 2, 2, 1, 1, "exclusive reverse"},
    {"DepthToSpace", 1, 1, 1, 1, "blocksize mode"},
    {"DequantizeLinear", 2, 3, 1, 1, "axis block_size"},
    {"Det", 1, 1, 1, 1, NONE},
    {"DFT", 1, 3, 1, 1, "axis inverse onesided"},
    {"Div", 2, 2, 1, 1, BCAST},
    {"Dropout", 1, 3, 1, 2, "is_test ratio seed"},
    {"DynamicQuantizeLinear", 1, 1, 1, 3, NONE},
    {"Einsum", 1, ANY, 1, 1, "equation"},
    {"Elu", 1, 1, 1, 1, "alpha"},
    {"Equal", 2, 2, 1, 1, BCAST},
    {"Erf", 1, 1, 1, 1, NONE},
    {"Exp", 1, 1, 1, 1, NONE},
    {"Expand", 2, 2, 1, 1, NONE},
    {"EyeLike", 1, 1, 1, 1, "dtype k"},
    {"Flatten", 1, 1, 1, 1, "axis"},
    {"Floor", 1, 1, 1, 1, NONE},
    {"Gather", 2, 2, 1, 1, "axis"},
    {"GatherElements", 2, 2, 1, 1, "axis"},
    {"GatherND", 2, 2, 1, 1, "batch_dims"},
    {"Gemm", 2, 3, 1, 1, "alpha beta broadcast transA transB"},
    {"GlobalAveragePool", 1, 1, 1, 1, NONE},
    {"GlobalMaxPool", 1, 1, 1, 1, NONE},
    {"Greater", 2, 2, 1, 1, BCAST},
    {"GreaterOrEqual", 2, 2, 1, 1, NONE},
    {"GridSample", 2, 2, 1, 1, "align_corners mode padding_mode"},
    {"GRU", 3, 6, 1, 2,
     "activation_alpha activation_beta activations clip direction hidden_size layout "
     "linear_before_reset"},
    {"Hardmax", 1, 1, 1, 1, "axis"},
    {"HardSigmoid", 1, 1, 1, 1, "alpha beta"},
    {"HardSwish", 1, 1, 1, 1, NONE},
    {"Identity", 1, 1, 1, 1, NONE},
    /* after ox_control.c's expansion: the condition and two candidates
     * per output */
    {"If", 1, ANY, 1, ANY, "else_branch then_branch"},
    {"InstanceNormalization", 3, 3, 1, 1, "epsilon"},
    {"IsInf", 1, 1, 1, 1, "detect_negative detect_positive"},
    {"IsNaN", 1, 1, 1, 1, NONE},
    {"LayerNormalization", 2, 3, 1, 3, "axis epsilon stash_type"},
    {"LeakyRelu", 1, 1, 1, 1, "alpha"},
    {"Less", 2, 2, 1, 1, BCAST},
    {"LessOrEqual", 2, 2, 1, 1, NONE},
    {"Log", 1, 1, 1, 1, NONE},
    {"LogSoftmax", 1, 1, 1, 1, "axis"},
    {"LRN", 1, 1, 1, 1, "alpha beta bias size"},
    {"LSTM", 3, 8, 1, 3,
     "activation_alpha activation_beta activations clip direction hidden_size input_forget "
     "layout"},
    {"MatMul", 2, 2, 1, 1, NONE},
    {"MatMulInteger", 2, 4, 1, 1, NONE},
    {"Max", 1, ANY, 1, 1, NONE},
    /* storage_order only orders the indices output (ox_pool_indices.c) */
    {"MaxUnpool", 2, 3, 1, 1, "kernel_shape pads strides"},
    {"MaxPool", 1, 1, 1, 2, "auto_pad ceil_mode dilations kernel_shape pads storage_order strides"},
    {"Mean", 1, ANY, 1, 1, NONE},
    {"MeanVarianceNormalization", 1, 1, 1, 1, "axes"},
    {"Min", 1, ANY, 1, 1, NONE},
    {"Mish", 1, 1, 1, 1, NONE},
    {"Mod", 2, 2, 1, 1, "fmod"},
    {"Mul", 2, 2, 1, 1, BCAST},
    {"Neg", 1, 1, 1, 1, NONE},
    {"NegativeLogLikelihoodLoss", 2, 3, 1, 1, "ignore_index reduction"},
    {"Not", 1, 1, 1, 1, NONE},
    {"OneHot", 3, 3, 1, 1, "axis"},
    {"Or", 2, 2, 1, 1, BCAST},
    {"Pad", 1, 4, 1, 1, "mode pads value"},
    {"Pow", 2, 2, 1, 1, BCAST},
    {"PRelu", 2, 2, 1, 1, NONE},
    {"QLinearConv", 8, 9, 1, 1, "auto_pad dilations group kernel_shape pads strides"},
    {"QLinearMatMul", 8, 8, 1, 1, NONE},
    {"QuantizeLinear", 2, 3, 1, 1, "axis block_size saturate"},
    {"Range", 3, 3, 1, 1, NONE},
    {"Reciprocal", 1, 1, 1, 1, NONE},
    {"ReduceL1", 1, 2, 1, 1, REDUCE},
    {"ReduceL2", 1, 2, 1, 1, REDUCE},
    {"ReduceLogSum", 1, 2, 1, 1, REDUCE},
    {"ReduceLogSumExp", 1, 2, 1, 1, REDUCE},
    {"ReduceMax", 1, 2, 1, 1, REDUCE},
    {"ReduceMean", 1, 2, 1, 1, REDUCE},
    {"ReduceMin", 1, 2, 1, 1, REDUCE},
    {"ReduceProd", 1, 2, 1, 1, REDUCE},
    {"ReduceSum", 1, 2, 1, 1, REDUCE},
    {"ReduceSumSquare", 1, 2, 1, 1, REDUCE},
    {"Relu", 1, 1, 1, 1, NONE},
    {"Reshape", 2, 2, 1, 1, "allowzero"},
    /* extrapolation_value: tf_crop_and_resize's (torch writes it always) */
    {"Resize", 1, 4, 1, 1,
     "antialias axes coordinate_transformation_mode cubic_coeff_a exclude_outside "
     "extrapolation_value keep_aspect_ratio_policy mode nearest_mode"},
    {"ReverseSequence", 2, 2, 1, 1, "batch_axis time_axis"},
    {"RoiAlign", 3, 3, 1, 1,
     "coordinate_transformation_mode mode output_height output_width sampling_ratio "
     "spatial_scale"},
    {"RNN", 3, 6, 1, 2,
     "activation_alpha activation_beta activations clip direction hidden_size layout"},
    {"Round", 1, 1, 1, 1, NONE},
    /* expanded by ox_control.c before the walk: listed for the message */
    {"Scan", 1, ANY, 1, ANY,
     "body directions num_scan_inputs scan_input_axes scan_input_directions scan_output_axes "
     "scan_output_directions"},
    {"Scatter", 3, 3, 1, 1, "axis"},
    {"ScatterElements", 3, 3, 1, 1, "axis reduction"},
    {"ScatterND", 3, 3, 1, 1, "reduction"},
    {"Selu", 1, 1, 1, 1, "alpha gamma"},
    {"Shape", 1, 1, 1, 1, "end start"},
    {"Shrink", 1, 1, 1, 1, "bias lambd"},
    {"Sigmoid", 1, 1, 1, 1, NONE},
    {"Sign", 1, 1, 1, 1, NONE},
    {"Sin", 1, 1, 1, 1, NONE},
    {"Sinh", 1, 1, 1, 1, NONE},
    {"Size", 1, 1, 1, 1, NONE},
    {"Slice", 1, 5, 1, 1, "axes ends starts"},
    {"Softmax", 1, 1, 1, 1, "axis"},
    {"SoftmaxCrossEntropyLoss", 2, 3, 1, 2, "ignore_index reduction"},
    {"Softplus", 1, 1, 1, 1, NONE},
    {"Softsign", 1, 1, 1, 1, NONE},
    {"SpaceToDepth", 1, 1, 1, 1, "blocksize"},
    {"Split", 1, 2, 1, ANY, "axis num_outputs split"},
    {"Sqrt", 1, 1, 1, 1, NONE},
    {"Squeeze", 1, 2, 1, 1, "axes"},
    {"Sub", 2, 2, 1, 1, BCAST},
    {"Sum", 1, ANY, 1, 1, NONE},
    {"Tan", 1, 1, 1, 1, NONE},
    {"Tanh", 1, 1, 1, 1, NONE},
    {"TfIdfVectorizer", 1, 1, 1, 1,
     "max_gram_length max_skip_count min_gram_length mode ngram_counts ngram_indexes "
     "pool_int64s pool_strings weights"},
    {"ThresholdedRelu", 1, 1, 1, 1, "alpha"},
    {"Tile", 2, 2, 1, 1, NONE},
    {"TopK", 2, 2, 1, 2, "axis largest sorted"},
    {"Transpose", 1, 1, 1, 1, "perm"},
    {"Trilu", 1, 2, 1, 1, "upper"},
    {"Unsqueeze", 1, 2, 1, 1, "axes"},
    {"Upsample", 1, 2, 1, 1, "mode scales"},
    {"Where", 3, 3, 1, 1, NONE},
    {"Xor", 2, 2, 1, 1, BCAST},
};
enum { NOPS = sizeof ops / sizeof *ops };

static int op_index(const char *op) {
    int k = 0;
    while (k < NOPS && strcmp(ops[k].op, op ? op : ""))
        k++;
    return k;
}

static bool in_list(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; n && (p = strstr(p, name)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || !p[n])) return true;
    return false;
}

const char *ox_supported_ops(Ox *x) {
    char *s = arena_strdup(x->a, "");
    for (int k = 0; k < NOPS; k++)
        s = arena_printf(x->a, "%s%s%s", s, k ? ", " : "", ops[k].op);
    return s;
}

bool ox_is_supported(const char *op) {
    return op_index(op) < NOPS;
}

static const char *count_range(Ox *x, int lo, int hi, const char *what) {
    if (hi == ANY) return arena_printf(x->a, "at least %d %s%s", lo, what, lo == 1 ? "" : "s");
    if (lo == hi) return arena_printf(x->a, "%d %s%s", lo, what, lo == 1 ? "" : "s");
    return arena_printf(x->a, "%d to %d %ss", lo, hi, what);
}

/* Two attributes of one name: which one a mapping reads would be an
 * accident of the order, so neither is. Pairs are compared directly for
 * the few attributes a node has; a set when there are many. */
static void check_duplicate_attrs(Ox *x, Onnx__NodeProto *n) {
    StrMap seen = {0};
    for (size_t i = 0; i < n->n_attribute; i++) {
        const char *an = n->attribute[i] && n->attribute[i]->name ? n->attribute[i]->name : "";
        bool dup = false;
        if (n->n_attribute <= 16) {
            for (size_t j = 0; j < i && !dup; j++)
                dup =
                    n->attribute[j] && n->attribute[j]->name && !strcmp(n->attribute[j]->name, an);
        } else {
            dup = !strmap_add(x->a, &seen, an);
        }
        if (dup) ox_fail(x, "attribute '%s' is given twice (an attribute appears once)", an);
    }
}

void ox_check_node_form(Ox *x) {
    Onnx__NodeProto *n = ox_cur(x);
    check_duplicate_attrs(x, n);
    int k = op_index(n->op_type);
    if (k == NOPS) return; /* the walk says the op is not supported */
    size_t nin = n->n_input, nout = n->n_output;
    if (nin < (size_t)ops[k].in_min || nin > (size_t)ops[k].in_max)
        ox_fail(x, "%s takes %s, found %zu", n->op_type,
                count_range(x, ops[k].in_min, ops[k].in_max, "input"), nin);
    if (nout < (size_t)ops[k].out_min || nout > (size_t)ops[k].out_max)
        ox_fail(x, "%s has %s, found %zu", n->op_type,
                count_range(x, ops[k].out_min, ops[k].out_max, "output"), nout);
}

void ox_check_node_attrs(Ox *x) {
    Onnx__NodeProto *n = ox_cur(x);
    int k = op_index(n->op_type);
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
