/* The ONNX importer's internal state, shared by its files:
 *   ox_read.c    protobuf -> initializers, inputs, attributes (incl. external data)
 *   ox_dims.c    constant tensors and symbolic dimension arithmetic
 *   ox_fold.c    the import-time evaluator (shape arithmetic, constants)
 *   ox_text.c    names, params, statements: the .tg being written
 *   ox_attrs.c   the supported operators and the attributes each understands
 *   ox_upgrade.c older opsets' forms of an op rewritten to the current one
 *   ox_ops*.c    one mapping per ONNX operator (ox_ops.c tensors, ox_ops_nn.c
 *                networks, ox_ops_index.c index and layout ops and TopK,
 *                ox_ops_math.c elementwise functions and CumSum, ox_ops_quant.c
 *                quantization, ox_scatter.c the scatters and GatherND;
 *                ox_rnn.c the recurrent layers, ox_gridsample.c GridSample,
 *                ox_roialign.c RoiAlign, ox_tfidf.c TfIdfVectorizer,
 *                ox_control.c If and Scan (expanded before the walk),
 *                ox_pool.c, ox_conv3d.c, ox_resize.c the windows and resizes
 *                torch's functions do not take), ox_fuse.c the fused patterns
 *   onnx_import.c  the driver of all of these.
 * Errors longjmp out of the import (ox_fail): every path through a model
 * must be able to stop anywhere without leaking, and the arena owns all. */
#ifndef TGC_OX_H
#define TGC_OX_H
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "frontend/onnx/onnx_import.h"
#include "onnx.pb-c.h"
#include "support/strmap.h"

#define OX_MAX_DIMS 12

/* One dimension: its value under the defaults, and the .tg integer
 * expression over the graph's symbolic dims it stands for (NULL: the
 * constant v). */
typedef struct OxDim {
    int64_t v;
    const char *sym;
} OxDim;

/* A tensor whose data is known at import time. Floating values live in f,
 * integers and bools in i; sym[k] is element k's symbolic expression
 * (integer tensors holding shapes). raw is an initializer's bytes in dt,
 * from which f/i are made on demand. */
typedef struct OxConst {
    DType dt;
    int ndim;
    int64_t shape[OX_MAX_DIMS];
    int64_t n;
    double *f;
    int64_t *i;
    const char **sym;
    const uint8_t *raw;
    const char *param;   /* its .tg param name, once declared */
    const char *param_t; /* the same, stored transposed (a linear weight) */
    const char *hint;    /* a name to derive the param's from */
} OxConst;

typedef struct OxVal {
    const char *name; /* the ONNX name */
    DType dt;
    int ndim;
    OxDim dim[OX_MAX_DIMS];
    OxConst *c;       /* known data, or NULL */
    const char *tg;   /* the .tg name it is bound to, once emitted */
    bool is_init;     /* an initializer (its name is a weight's name) */
    bool is_output;   /* a graph output */
    bool out_written; /* as `output NAME = ...` by its node */
    bool ready;       /* computed: later nodes may read it */
    bool poisoned;    /* its node (or one it depends on) could not be imported */
    int producer;     /* the node computing it; -1 for inputs and initializers */
    int nusers;
    int *users; /* node indices reading it */
} OxVal;

typedef struct Ox {
    Arena *a;
    Diag *d;
    jmp_buf fail;
    /* While the nodes are walked, a node's problem is recorded and the
     * walk goes on (node_fail), so that one import names every problem:
     * a user fixing the first would otherwise meet the next one each time. */
    bool collecting;
    jmp_buf node_fail;
    struct OxProblem {
        int node;
        const char *desc, *msg;
    } * problems;
    int nproblems, capproblems;
    const char *path; /* the model, for messages */
    char *dir;        /* its directory, for external data; NULL: refused */
    Onnx__ModelProto *m;
    Onnx__GraphProto *g;
    int opset;
    /* every value by ONNX name (open addressing) */
    OxVal **tab;
    int tabcap;
    /* the node being imported, for messages */
    int node;
    /* nodes already written as part of a fused group */
    bool *done;
    /* the .tg: header, params, statements (malloc'd buffers) */
    char *buf[3];
    size_t len[3], cap[3];
    /* identifiers in use, and for each base name the next "_k" suffix
     * to try (every smaller one is taken): a name is made in O(1) however
     * many ONNX names sanitize to the same identifier */
    StrMap ids, next_suffix;
    /* symbolic dims: ONNX dim_param, .tg name, default */
    struct OxSymDim {
        const char *onnx, *tg;
        int64_t v;
        bool given;
    } * dims;
    int ndims, capdims;
    StrMap dim_index; /* ONNX dim_param -> its index in dims */
    const DimOverride *ov;
    int nov;
    bool used_defaults; /* a symbolic size decided with its default */
    OnnxParam *params;
    int nparams, capparams;
    /* If and Scan nodes ox_expand_control could not expand, left in the
     * graph with the reason, which the walk reports in its turn */
    struct OxCtlFail {
        const Onnx__NodeProto *n;
        const char *msg;
    } * ctl_fail;
    int nctl_fail, capctl_fail;
    /* the external data files read (OnnxImport.data_files) */
    const char **data_files;
    int ndata_files, capdata_files;
} Ox;

enum { OX_HEAD, OX_PARAMS, OX_BODY };

_Noreturn void ox_fail(Ox *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The node being imported, as messages name it: "node '/conv1/Conv' (Conv)". */
const char *ox_node_desc(Ox *x);
Onnx__NodeProto *ox_cur(Ox *x);

/* ox_read.c */
void ox_read_model(Ox *x, const uint8_t *bytes, size_t n);
OxConst *ox_tensor_const(Ox *x, const Onnx__TensorProto *t, const char *what);
DType ox_dtype(Ox *x, int onnx_type, const char *what);
const Onnx__AttributeProto *ox_attr(Ox *x, const char *name);
int64_t ox_attr_i(Ox *x, const char *name, int64_t def);
float ox_attr_f(Ox *x, const char *name, float def);
const char *ox_attr_s(Ox *x, const char *name, const char *def);
/* An int list attribute: count in *n (0 when absent). */
const int64_t *ox_attr_ints(Ox *x, const char *name, int *n);
/* Fails naming each attribute of the node not in the NULL-terminated list. */
void ox_check_attrs(Ox *x, const char *const *known);

/* ox_dims.c */
OxDim ox_dim_c(int64_t v);
OxDim ox_dim_op(Ox *x, char op, OxDim a, OxDim b); /* + - * / (floor) % */
bool ox_dim_eq(OxDim a, OxDim b);
const char *ox_dim_text(Ox *x, OxDim d);
/* "[a, b, c]" of dims */
const char *ox_dims_text(Ox *x, const OxDim *d, int n);
OxConst *ox_const_new(Ox *x, DType dt, int ndim, const int64_t *shape);
void ox_const_values(Ox *x, OxConst *c); /* makes f or i from raw */
double ox_const_get(Ox *x, OxConst *c, int64_t k);
/* Element k as an integer; a float that fits no int64 fails (x NULL: 0). */
int64_t ox_const_int(Ox *x, OxConst *c, int64_t k);
int64_t ox_f2i(Ox *x, double v);
/* Integer element k as a dim (with its expression). */
OxDim ox_const_dim(Ox *x, OxConst *c, int64_t k);
/* The value's data as int64s: fails naming the input when it is not known. */
OxConst *ox_need_const(Ox *x, OxVal *v, const char *what);
/* Fails unless the node has at least k inputs and the first k are given. */
void ox_need_inputs(Ox *x, OxVal **in, int nin, int k);
/* Whether node n is of ONNX op type op. */
static inline bool ox_op_is(const Onnx__NodeProto *n, const char *op) {
    return !strcmp(n->op_type, op);
}
int64_t ox_numel(const OxConst *c);
/* Normalises axis into [0, rank), failing with the node named. */
int ox_axis(Ox *x, int64_t axis, int rank);
/* The broadcast of two shapes (numpy rule). */
int ox_broadcast(Ox *x, const OxDim *a, int na, const OxDim *b, int nb, OxDim *out);

/* ox_fold.c: evaluates the current node when its inputs are known;
 * false when the op is not one the evaluator computes. */
bool ox_fold(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin);

/* ox_text.c */
void ox_emit(Ox *x, int part, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *ox_ident(Ox *x, const char *onnx_name, const char *suffix);
/* How the .tg refers to v: its name, a param, or a literal for a scalar
 * constant when scalar_ok. */
const char *ox_ref(Ox *x, OxVal *v, bool scalar_ok);
/* The param holding c, declared on first use (transposed: a 2-d weight
 * stored [out, in] for linear). */
const char *ox_param(Ox *x, OxConst *c, bool transposed);
/* A new constant param of dtype dt and shape [ndim], named from hint, its
 * values from iv (an integer dt) or fv (a float one): the tables a
 * lowering computes at import (Resize's taps, TfIdfVectorizer's pool). */
const char *ox_param_of(Ox *x, DType dt, int ndim, const int64_t *shape, const int64_t *iv,
                        const double *fv, const char *hint);
/* Binds the current node's output k to expr; out gets its dtype/shape. */
void ox_bind(Ox *x, OxVal *out, const char *expr);
/* A number as the .tg writes it: "1e-05", "2.0", "-inf". */
const char *ox_num(Ox *x, double v, bool is_float);
/* The value as a literal when it is a 1-element constant, else NULL. */
const char *ox_scalar(Ox *x, OxVal *v);
OxVal *ox_val(Ox *x, const char *name);     /* NULL when absent */
OxVal *ox_val_new(Ox *x, const char *name); /* fails on a duplicate */
void ox_set_shape(OxVal *v, DType dt, int ndim, const OxDim *d);
/* A temporary of the current node: a fresh name made from base and
 * suffix (ox_ident), written as `NAME = expr`; returns the name. */
const char *ox_tmp(Ox *x, const char *base, const char *suffix, const char *expr);
/* ox_bind, then ox_set_shape: an op's output with its dtype and dims;
 * true, an op mapping's "handled". */
bool ox_bind_shaped(Ox *x, OxVal *out, const char *expr, DType dt, int ndim, const OxDim *d);

/* ox_ops.c / ox_ops_nn.c: the mapping of one node; false when op_type is
 * not one of theirs. */
bool ox_op_tensor(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out);
bool ox_op_nn(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out);
/* ox_rnn.c: RNN, GRU and LSTM, unrolled over the sequence; their outputs
 * are all optional, the first included (out[k] NULL when omitted). */
bool ox_op_rnn(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out);
/* ox_versions.c (generated): the version of op's schema active at opset 6,
 * 0 when op does not exist there. */
int ox_version_at_6(const char *op);
/* ox_gridsample.c: GridSample (2-d) as one gather per interpolation tap. */
bool ox_op_gridsample(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out);
/* ox_roialign.c: RoiAlign as one gather per bilinear tap, rois read at
 * run time. */
bool ox_op_roialign(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out);
/* ox_tfidf.c: TfIdfVectorizer, its pool's n-grams compared with strided
 * slices of the tokens. */
bool ox_op_tfidf(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out);
/* ox_control.c: If and Scan expanded into plain nodes before the walk
 * (x->g becomes an arena copy holding them); If's selection of the two
 * branches' outputs, which the expansion leaves as an If node. */
void ox_expand_control(Ox *x);
bool ox_op_control(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out);
/* ox_ops_index.c: GatherElements, DepthToSpace, SpaceToDepth, OneHot, Hardmax */
bool ox_op_index(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out);
/* A conv's or pool's window over the spatial dims of [N, C, ...]. */
typedef struct OxWin {
    int ns; /* spatial dims */
    int64_t k[3], s[3], d[3], pb[3], pe[3];
} OxWin;
/* ox_ops_nn.c: kernel_shape, strides, dilations, pads and auto_pad read
 * into w (fails naming the node); the output size along spatial dim i. */
void ox_window(Ox *x, OxVal *in, const int64_t *kernel, int ns, OxWin *w);
OxDim ox_out_size(Ox *x, OxDim in, const OxWin *w, int i, bool ceil_mode);
/* ox_ops_nn.c: Conv (tr: ConvTranspose) of in[0] by in[1] (+ in[2]) into
 * out, with the current node's window attributes; its dtype is in[0]'s. */
void ox_conv(Ox *x, OxVal **in, int nin, OxVal *out, bool tr);
/* ox_pool.c: MaxPool / AveragePool as the maximum or mean of their
 * windows' strided slices, for what max_pool/avg_pool do not take. */
void ox_pool_slices(Ox *x, OxVal *in, OxVal *out, const OxWin *w, bool mx, bool ceil_mode,
                    bool count_include_pad);
/* ox_pool_indices.c: MaxPool with its Indices output (vals may be NULL). */
void ox_maxpool_indices(Ox *x, OxVal *in, OxVal *vals, OxVal *idx, const OxWin *w, bool ceil_mode);
/* ox_conv3d.c: Conv over [N, C, D, H, W] as one conv2d per kernel depth;
 * wname, bname: how the .tg names the weight and bias (NULL: none). */
void ox_conv3d(Ox *x, OxVal **in, int nin, OxVal *out, const char *wname, const char *bname);
/* ox_convtr3d.c: ConvTranspose over [N, C, D, H, W] as one
 * conv_transpose2d per kernel depth, placed and summed. */
void ox_conv_transpose3d(Ox *x, OxVal **in, int nin, OxVal *out, const char *wname,
                         const char *bname);
/* ox_resize.c: Resize as ONNX's reference computes it, each resized axis
 * a sum of gathers at import-time indices and weights; d: the output's
 * dims, scale: each axis's; roi: tf_crop_and_resize's starts then ends
 * (2 x rank; NULL otherwise), extrap: its value outside the input. */
void ox_resize_taps(Ox *x, OxVal *in, OxVal *out, const OxDim *d, const double *scale,
                    const char *mode, const char *ct, const char *nm, double cubic_a,
                    bool exclude_outside, const double *roi, double extrap);
/* ox_scatter.c: ScatterElements, Scatter, ScatterND, GatherND, MaxUnpool */
bool ox_op_scatter(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out);
/* ox_ops_quant.c: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear */
bool ox_op_quant(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out);
/* ox_linalg.c: Det (unrolled LU), DFT (products with cos/sin params) */
bool ox_op_linalg(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out);
/* ox_qlinear.c: MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv */
bool ox_op_qlinear(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out);
/* ox_ops_train.c: BatchNormalization training_mode=1, Dropout, Compress;
 * the random operators' refusal */
bool ox_op_train(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out);
/* ox_ops_math.c: Tan ... Atanh, Softsign, ThresholdedRelu, Shrink, Celu,
 * IsInf, IsNaN, Mean, EyeLike, CumSum */
bool ox_op_math(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out);
/* ox_attrs.c: "Abs, Add, ..." for the "not supported" message. */
const char *ox_supported_ops(Ox *x);
/* Fails naming an attribute of the current node that its op's mapping
 * does not understand (nothing for an op not supported at all). */
void ox_check_node_attrs(Ox *x);
/* Fails naming the current node when an attribute is given twice, or when
 * its numbers of inputs and outputs are not ones its operator allows. */
void ox_check_node_form(Ox *x);
/* ox_upgrade.c: an older opset's form of the node rewritten to the
 * current one (attributes that became inputs); returns the new number of
 * inputs, in[] filled up to it. */
int ox_upgrade(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin);
/* ox_fuse.c: a fused group starting at node k (gelu, layer_norm, linear);
 * true when written. */
bool ox_fuse(Ox *x, int k);
#endif
