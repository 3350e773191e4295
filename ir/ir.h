/* The IR: a graph of typed values. A value is an operation node and its
 * result: dtype + shape + strides + storage offset + storage owner, as in
 * ggml's tensor. Views share their owner's storage; chains of views
 * collapse onto the owner (passes/fold_views.c). */
#ifndef TGC_IR_H
#define TGC_IR_H
#include <stdbool.h>
#include <stdint.h>

#include "support/arena.h"
#include "support/diag.h"
#include "ir/dtype.h"

#define TG_MAX_DIMS 12
/* einsum's operands: the code generators' contraction descriptions are
 * sized for this many, so inference refuses more (a located error). */
#define TG_EINSUM_MAX_OPERANDS 16
#define TG_MAX_NUMEL ((int64_t)1 << 48) /* elements of one tensor, size-0 dims counted as 1 */

typedef enum {
#define OP(id, name, sig, flags, infer, layout, vjp) OP_##id,
#include "ir/ops.def"
#undef OP
    OP_COUNT
} OpCode;

/* Operation flags. */
enum {
    OPF_VIEW = 1 << 0,       /* always shares its input's storage */
    OPF_MAYBE_VIEW = 1 << 1, /* a view when its layout function allows, else a copy */
    OPF_ELEMENTWISE = 1 << 2,
    OPF_REDUCTION = 1 << 3,
    OPF_MATMUL = 1 << 4,
    OPF_CREATION = 1 << 5,
    OPF_TUPLE = 1 << 6,    /* returns several values (chunk, split, max with dim) */
    OPF_INTERNAL = 1 << 7, /* made by the compiler, not callable by name */
    OPF_LEAF = 1 << 8,     /* input, param, constant */
    OPF_NN = 1 << 9,
    OPF_AMP_LOW = 1 << 10, /* mixed precision: runs in the low dtype (autocast's lower list) */
    OPF_AMP_F32 = 1 << 11, /* mixed precision: runs in f32 (autocast's fp32 list) */
    OPF_CONV = 1 << 12,    /* a convolution: one library call (codegen/llvm/k_conv.c) */
};

typedef enum {
    ARG_ABSENT, /* optional and not given, or given as None */
    ARG_TENSOR,
    ARG_INT,
    ARG_NUM,
    ARG_BOOL,
    ARG_STR,
    ARG_DTYPE,
    ARG_INTS,
    ARG_TENSORS,
    ARG_ANY_LIST, /* nested numeric list (tensor(...) data) */
} ArgKind;

typedef struct Value Value;

typedef struct Arg {
    ArgKind kind;
    SrcLoc loc;
    Value *t;
    int64_t i;       /* INT, BOOL */
    double f;        /* NUM */
    bool num_is_int; /* NUM written as an integer */
    const char *s;
    DType dt;
    int64_t *ints; /* INTS */
    Value **ts;    /* TENSORS */
    int n;         /* INTS, TENSORS count */
    double *data;  /* ANY_LIST flattened */
    int data_ndim;
    int64_t data_shape[TG_MAX_DIMS];
    bool data_has_float, data_has_bool_only;
} Arg;

/* A param's initialiser (spec: "Parameter initialisers"). */
typedef enum {
    INIT_NONE,
    INIT_ZEROS,
    INIT_ONES,
    INIT_FULL,
    INIT_RANDN,
    INIT_UNIFORM,
    INIT_ARANGE
} InitKind;
typedef struct ParamInit {
    InitKind kind;
    double a, b; /* full: value; randn: std; uniform: low, high */
    int64_t seed;
} ParamInit;

/* One call of a def block (frontend/tg/build_module.c): the values its
 * body made point at it, so that checkpointing can cut segments at a
 * repeated block's edges (passes/checkpoint.c). */
typedef struct DefCall {
    const char *def;          /* the def's name; NULL: the graph's top level */
    const char *path;         /* the call's prefix, or DEF#N */
    const struct DefCall *up; /* the call this one is in, or NULL */
} DefCall;

struct Value {
    int id;
    const char *name;  /* bound name, or NULL: shown as %id */
    const char *label; /* op name to show when it differs from the table's (T, chunk...) */
    SrcLoc loc;
    OpCode op;
    Arg *args;
    int nargs;
    Value **in; /* tensor operands, in argument order */
    int nin;

    DType dtype;
    int ndim;
    int64_t shape[TG_MAX_DIMS];

    /* Layout, set by passes/fold_views.c. */
    int64_t strides[TG_MAX_DIMS];
    int64_t offset;
    Value *storage; /* the value owning the storage (itself when it owns) */
    bool is_view;
    const char *copy_reason; /* a copy the compiler inserted, and why */

    double scalar; /* OP_SCALAR */
    bool scalar_is_int;
    bool weak; /* a literal: takes part in type promotion as a wrapped number */
    ParamInit init;

    const struct QuantOf *quant;         /* a param made by passes/quantize.c: what it quantizes */
    const struct BatchNormOf *bn;        /* the last node of a lowered batch_norm (ir/lower_nn.h) */
    const struct ConvEpilogue *conv_epi; /* a conv's fused epilogue (ir/conv.h) */

    Value **tuple; /* OPF_TUPLE results */
    int ntuple;

    bool is_output;
    /* A training program's output that becomes this param's value after
     * each step (passes/train.c); NULL otherwise. */
    Value *updates;
    /* A param the optimizer made (momentum, Adam's moments, the step
     * count): saved with the optimizer state, not with the weights. */
    bool optim_state;
    /* A batch norm's running statistic (passes/train_mode.c): a buffer in
     * PyTorch's sense, updated by its batch_norm, never by the optimizer. */
    bool buffer;
    /* A param declared `state` (graph-language "State"): zero when a
     * context is created, kept between runs, never read from a weights
     * file; a slice_scatter into it writes its storage in place. */
    bool state;
    /* A training step's gradient of this param, as the optimizer reads it
     * (passes/train.c); tgc report counts where it lives. */
    const Value *grad_of;
    bool dead;
    int order; /* position in the graph's value list */
    /* The innermost def call whose body made it, or the top level's (a .tg
     * front end's values); NULL: made by a later pass or another front end. */
    const DefCall *call;
};

/* A quantized weight (--quantize): q[n][k] from the weights file's tensor
 * `source` (shape [n, k], or [k, n] when transposed), one f32 scale per
 * `group` elements of a row, kept in the param `scales`. */
typedef struct QuantOf {
    const char *source;
    bool transposed;
    int bits; /* 8: int8 [n][k]; 4: bytes [n][(k+1)/2], element 2j in the low nibble */
    int64_t n, k, group;
    Value *scales;
    ParamInit init; /* the source param's, for when no weights file holds it */
} QuantOf;

typedef struct Dim {
    const char *name;
    int64_t value;
    SrcLoc loc;
} Dim;

/* A value given for a symbolic dimension by name (-D NAME=VALUE), or a
 * range (-D NAME=LO:HI: value is HI, the bound the graph is built at). */
typedef struct DimOverride {
    const char *name;
    int64_t value;
    int64_t lo; /* a range's lower bound; == value when none was given */
    bool range;
} DimOverride;

typedef struct Graph {
    Arena *arena;
    const char *name;
    Dim *dims;
    int ndims;
    Value **values; /* topological (file) order */
    int nvalues, cap_values;
    Value **outputs; /* declaration order */
    int noutputs, cap_outputs;
    int next_id;
    /* A training step (passes/train.c): the loss, whose output the runtime
     * reads after each step, and the optimizer's name; NULL otherwise. */
    Value *train_loss;
    const char *optimizer;
    int backward_id; /* values with an id from here on were made by the gradient pass or later */
} Graph;

/* Context the table's inference functions run in. */
typedef struct InferCtx {
    Graph *g;
    Diag *d;
    bool bool_arg_ok; /* argmax/argmin made for max/min(dim), which accept bool */
} InferCtx;

typedef bool (*InferFn)(InferCtx *c, Value *v);
/* The vector-Jacobian product of v (ir/vjp.h). */
struct VjpCtx;
typedef bool (*VjpFn)(struct VjpCtx *c, Value *v, Value *gy, Value **gx);
/* Computes v's strides and offset from its input's layout; returns false
 * when no view is possible (the op then becomes a copy, or an error). */
typedef bool (*LayoutFn)(Value *v);

typedef enum {
    PT_TENSOR,
    PT_INT,
    PT_NUM,
    PT_BOOL,
    PT_STR,
    PT_DTYPE,
    PT_INTS,
    PT_TENSORS,
    PT_ANY,
    PT_PAD, /* ints, or a string (conv padding "same" / "valid") */
} ParamType;

typedef struct ParamSpec {
    const char *name;
    ParamType type;
    bool optional; /* accepts None */
    bool variadic; /* *name: takes the remaining positional arguments */
    bool has_default;
    const char *default_text;
} ParamSpec;

typedef struct OpInfo {
    const char *name;
    const char *sig;
    unsigned flags;
    InferFn infer;
    LayoutFn layout;
    VjpFn vjp;
    ParamSpec params[12]; /* attention_backward has 12 */
    int nparams;
} OpInfo;

extern OpInfo op_table[OP_COUNT];
void ops_init(void); /* parses the signature strings once */
const OpInfo *op_info(OpCode op);
OpCode op_lookup(const char *name); /* OP_COUNT when unknown or internal */
const char *op_display_name(const Value *v);

/* Graph construction. */
Graph *graph_new(Arena *a);
Value *value_new(Graph *g, OpCode op, SrcLoc loc); /* not yet in g->values */
void graph_append(Graph *g, Value *v);
/* v (not yet in g) placed at position at of g->values (a pass's new node
 * before the value it feeds), the later values' orders renumbered. */
void graph_insert(Graph *g, Value *v, int at);
/* Runs the op's inference on v (args already bound); false on user error. */
bool value_infer(InferCtx *c, Value *v);
/* Makes a node with the given tensor args (for compiler-inserted ops). */
Value *value_make(InferCtx *c, OpCode op, SrcLoc loc, int nargs, Arg *args);
Arg arg_tensor(Value *t, SrcLoc loc);
Arg arg_int(int64_t i, SrcLoc loc);
Arg arg_ints(Arena *a, const int64_t *v, int n, SrcLoc loc);
Arg arg_dtype(DType t, SrcLoc loc);
void value_collect_inputs(Graph *g, Value *v);
const char *value_name(Arena *a, const Value *v); /* name or %id */

/* Shapes. */
int64_t shape_numel(const int64_t *shape, int ndim);
bool shape_too_large(const int64_t *shape, int ndim);
void shape_contiguous_strides(const int64_t *shape, int ndim, int64_t *strides);
bool layout_is_contiguous(const Value *v);                 /* PyTorch's is_contiguous() */
char *shape_str(Arena *a, const int64_t *shape, int ndim); /* "[2, 3]" */
bool value_same_shape(const Value *a, const Value *b);
int64_t value_numel(const Value *v);
int64_t value_bytes(const Value *v); /* bytes of the storage v owns (0 for views) */

/* Dimension normalisation with PyTorch's message; false (and a report) when out of range. */
bool norm_dim(InferCtx *c, SrcLoc loc, int64_t *dim, int ndim);
#endif
