/* The layout pass (passes/layout.c, issue 25): which values between
 * convolutions it stores channels-last (strides H*W*C, 1, W*C, C over the
 * logical N, C, H, W shape). The cases here are the ops lowered to
 * index_select (reflect and replicate pads, nearest and bilinear
 * interpolation), which used to stay NCHW between two channels-last
 * convolutions, so the second one ran on a staged NHWC copy. Each case
 * compiles on its own, in a child process, so a crash fails only that
 * case. */
#define UNIT_COMPILE
#include "passes/pipeline.h"
#include "unit.h"

static const char *prelude = "graph g\n"
                             "input x : f32[1, 4, 6, 5]\n"
                             "param w : f32[8, 4, 3, 3]\n"
                             "param w2 : f32[8, 8, 1, 1]\n"
                             "param wl : f32[8, 8]\n";

typedef struct LayCase {
    int line;
    const char *body;
    const char *name;    /* the value checked */
    bool cl;             /* stored channels-last */
    const char *view_of; /* when set: name's first operand is a view of this value's storage */
} LayCase;

static void run_case(void *arg) {
    const LayCase *k = arg;
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
    pass_conv_epilogue(g);
    pass_layout(g);
    Value *v = find_value(g, k->name);
    if (!unit_check(v != NULL && v->ndim == 4, f, k->line, "the 4-d value exists")) goto done;
    int64_t want[4];
    if (k->cl) {
        want[1] = 1, want[3] = v->shape[1], want[2] = v->shape[3] * v->shape[1];
        want[0] = v->shape[2] * want[2];
    } else {
        want[3] = 1, want[2] = v->shape[3], want[1] = v->shape[2] * v->shape[3];
        want[0] = v->shape[1] * want[1];
    }
    unit_check_ints(want, 4, v->strides, v->ndim, f, k->line, "strides");
    if (k->view_of) {
        Value *o = find_value(g, k->view_of);
        unit_check(o && v->nin > 0 && v->in[0]->is_view && v->in[0]->storage == o->storage, f,
                   k->line, "the first operand is a view of the named value, not a copy");
    }
done:
    unit_context = NULL;
    compiled_free(&c);
}

#define CASE(body, name, cl)                                                                       \
    { __LINE__, body, name, cl, NULL }
#define CASE_VIEW(body, name, view_of)                                                             \
    { __LINE__, body, name, true, view_of }

#define CONVNEXT                                                                                   \
    "h = conv2d(x, w, padding=1)\n"                                                                \
    "t = layer_norm(h.permute(0, 2, 3, 1), [8])\n"                                                 \
    "m = linear(gelu(linear(t, wl)), wl).permute(0, 3, 1, 2) * 0.5\n"                              \
    "r = m + h\n"                                                                                  \
    "output y = conv2d(r, w2)"

static const LayCase cases[] = {
    /* between two convolutions: channels-last like them */
    CASE("h = conv2d(x, w, padding=1)\np = pad(h, [1, 1, 1, 1], mode=\"reflect\")\n"
         "output y = conv2d(p, w2)",
         "p", true),
    CASE("h = conv2d(x, w, padding=1)\np = pad(h, [2, 1, 0, 1], mode=\"replicate\")\n"
         "output y = conv2d(p, w2)",
         "p", true),
    CASE("h = conv2d(x, w, padding=1)\nu = interpolate(h, scale_factor=2.0, mode=\"nearest\")\n"
         "output y = conv2d(u, w2)",
         "u", true),
    CASE("h = conv2d(x, w, padding=1)\n"
         "u = interpolate(h, size=[9, 7], mode=\"bilinear\", align_corners=true)\n"
         "output y = conv2d(u, w2)",
         "u", true),
    /* ConvNeXt's block: layer norm over the channels through a permute,
     * linears on N, H, W, C, permuted back, scaled and added to the
     * residual; the conv's result is read by the layer norm, and the
     * scale reads the product permuted back, already NHWC in memory */
    CASE(CONVNEXT, "h", true),
    CASE(CONVNEXT, "m", true),
    CASE(CONVNEXT, "r", true),
    /* a conv reading a permute of an N, H, W, C tensor (ConvNeXt's
     * downsampling after its layer norm): the contiguous() the front end
     * puts before it copies nothing once the conv reads NHWC */
    CASE_VIEW("h = conv2d(x, w, padding=1)\nt = layer_norm(h.permute(0, 2, 3, 1), [8])\n"
              "d = conv2d(t.permute(0, 3, 1, 2), w2)\noutput y = conv2d(d, w2)",
              "d", "t"),
    /* softmax over the channels reads by strides too */
    CASE("h = conv2d(x, w, padding=1)\noutput s = softmax(h, 1)\noutput y = conv2d(h, w2)", "h",
         true),
    /* the conv's result itself, for comparison */
    CASE("h = conv2d(x, w, padding=1)\np = pad(h, [1, 1, 1, 1], mode=\"reflect\")\n"
         "output y = conv2d(p, w2)",
         "h", true),
    /* no convolution before it: the layout flows from convolutions only */
    CASE("p = pad(x, [1, 1, 1, 1], mode=\"reflect\")\noutput y = conv2d(p, w)", "p", false),
    /* a reader that does not index by strides (a product) keeps it NCHW */
    CASE("h = conv2d(x, w, padding=1)\np = pad(h, [1, 1, 1, 1], mode=\"reflect\")\n"
         "output y = matmul(p, p.transpose(2, 3))",
         "p", false),
};

int main(void) {
    char name[256];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(name, sizeof name, "line %d", cases[i].line);
        unit_isolated(name, run_case, (void *)&cases[i]);
    }
    return unit_report("test_layout_pass");
}
