/* Convolution epilogues (passes/conv_epilogue.c): which chains after a
 * conv become oneDNN post-ops. The case that matters here is SiLU as ONNX
 * exports it, x * sigmoid(x) (a Sigmoid and a Mul reading the conv's
 * result), which EfficientNet-B0 runs after 49 of its 81 convolutions: as a
 * separate kernel it read and wrote every activation once more (issue 25).
 * Each case compiles on its own, in a child process, so a crash fails only
 * that case. */
#define UNIT_COMPILE
#include "ir/conv.h"
#include "passes/pipeline.h"
#include "unit.h"

static const char *prelude = "graph g\n"
                             "input x : f32[1, 4, 6, 6]\n"
                             "param w : f32[8, 4, 3, 3]\n"
                             "param w2 : f32[8, 8, 1, 1]\n";

typedef struct EpiCase {
    int line;
    const char *body;
    const char *out;  /* the value whose op is checked */
    int npost;        /* post-ops on the conv reading x (0: no epilogue) */
    OpCode post[2];   /* their ops */
    bool out_aliased; /* `out` became an alias of the conv's result */
} EpiCase;

static Value *conv_of_x(Graph *g) {
    Value *x = find_value(g, "x");
    for (int i = 0; g && x && i < g->nvalues; i++) {
        Value *v = g->values[i];
        if (!v->dead && (op_info(v->op)->flags & OPF_CONV) && v->nin > 0 && v->in[0] == x) return v;
    }
    return NULL;
}

static void run_case(void *arg) {
    const EpiCase *k = arg;
    char src[2048];
    snprintf(src, sizeof src, "%s%s\n", prelude, k->body);
    Compiled c;
    unit_context = k->body;
    Graph *g = compile_src(&c, src);
    const char *f = __FILE__;
    if (!unit_check(g != NULL, f, k->line, "the source compiles")) {
        printf("%s", c.msgs ? c.msgs : "");
        goto done;
    }
    Value *out = find_value(g, k->out);
    pass_conv_epilogue(g);
    Value *conv = conv_of_x(g);
    if (!unit_check(conv != NULL && out != NULL, f, k->line, "the conv and the value exist"))
        goto done;
    const ConvEpilogue *e = conv->conv_epi;
    unit_check_int(k->npost, e ? e->npost : 0, f, k->line, "post-ops on the conv");
    for (int i = 0; e && i < k->npost && i < e->npost; i++)
        unit_check_str(op_info(k->post[i])->name, op_info(e->post[i].op)->name, f, k->line,
                       "post-op");
    unit_check(k->out_aliased == (out->op == OP_ALIAS && out->nin == 1 && out->in[0] == conv), f,
               k->line, "the chain's last value aliases the conv's result");
done:
    unit_context = NULL;
    compiled_free(&c);
}

#define CASE(body, out, npost, p0, p1, aliased)                                                    \
    { __LINE__, body, out, npost, {p0, p1}, aliased }

static const EpiCase cases[] = {
    /* ONNX's SiLU, either operand order, alone and followed by another link */
    CASE("h = conv2d(x, w, padding=1)\noutput y = h * sigmoid(h)", "y", 1, OP_SILU, OP_SILU, true),
    CASE("h = conv2d(x, w, padding=1)\noutput y = sigmoid(h) * h", "y", 1, OP_SILU, OP_SILU, true),
    CASE("h = conv2d(x, w, padding=1)\ns = h * sigmoid(h)\noutput y = relu(s)", "y", 2, OP_SILU,
         OP_RELU, true),
    /* the written-out SiLU of a conv feeding another conv, as EfficientNet */
    CASE("h = conv2d(x, w, padding=1)\ns = h * sigmoid(h)\noutput y = conv2d(s, w2)", "s", 1,
         OP_SILU, OP_SILU, true),
    /* silu() itself, for comparison */
    CASE("output y = silu(conv2d(x, w, padding=1))", "y", 1, OP_SILU, OP_SILU, true),
    /* not SiLU: the sigmoid of something else, the sigmoid read again, the
     * conv's result read a third time or an output itself, a square */
    CASE("h = conv2d(x, w, padding=1)\nh2 = conv2d(x, w, padding=1)\noutput y = h * sigmoid(h2)",
         "y", 0, OP_SILU, OP_SILU, false),
    CASE("h = conv2d(x, w, padding=1)\ns = sigmoid(h)\noutput y = h * s\noutput z = s + 1", "y", 0,
         OP_SILU, OP_SILU, false),
    CASE("h = conv2d(x, w, padding=1)\noutput y = h * sigmoid(h) + h", "y", 0, OP_SILU, OP_SILU,
         false),
    CASE("output h = conv2d(x, w, padding=1)\noutput y = h * sigmoid(h)", "y", 0, OP_SILU, OP_SILU,
         false),
    CASE("h = conv2d(x, w, padding=1)\noutput y = h * h", "y", 0, OP_SILU, OP_SILU, false),
};

int main(void) {
    char name[256];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(name, sizeof name, "line %d", cases[i].line);
        unit_isolated(name, run_case, (void *)&cases[i]);
    }
    return unit_report("test_conv_epilogue");
}
