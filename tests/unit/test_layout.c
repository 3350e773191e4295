/* View layouts (spec: "Operations", "The memory model"): the shape, strides,
 * storage offset and storage owner of views, against PyTorch 1.13. Every
 * expected value was printed by /usr/bin/python3 with torch 1.13 for the
 * PyTorch expression in the case's first string, on
 *   x = torch.empty(2, 3, 4); m = torch.empty(4, 5); y = torch.empty(2, 7)
 *   b3 = torch.empty(3, 1); b = torch.empty(3); q = torch.empty(2, 1, 3)
 *   t = x.transpose(0, 2); s = x[:, 1:3]
 * as z.shape, z.stride(), z.storage_offset(), and whether z shares x's
 * storage (a view) or not (a copy). Each case compiles on its own, in a
 * child process, so a crash fails only that case. */
#define UNIT_COMPILE
#include "unit.h"

static const char *prelude = "graph g\n"
                             "input x : f32[2, 3, 4]\n"
                             "input m : f32[4, 5]\n"
                             "input y : f32[2, 7]\n"
                             "input b3 : f32[3, 1]\n"
                             "input b : f32[3]\n"
                             "input q : f32[2, 1, 3]\n";

typedef struct LayoutCase {
    int line;
    const char *torch; /* the PyTorch expression the numbers come from */
    const char *body;  /* .tg statements after the prelude */
    const char *name;  /* the value checked */
    int ndim;
    int64_t shape[TG_MAX_DIMS], strides[TG_MAX_DIMS];
    int64_t offset;
    const char *base; /* a view of this value's storage; NULL: a copy (own, contiguous storage) */
} LayoutCase;

static void run_layout_case(void *arg) {
    const LayoutCase *k = arg;
    char src[2048];
    snprintf(src, sizeof src, "%s%s\n", prelude, k->body);
    Compiled c;
    unit_context = k->torch;
    Graph *g = compile_src(&c, src);
    const char *f = __FILE__;
    if (!unit_check(g != NULL, f, k->line, "the source compiles")) {
        printf("    %s\n%s", k->body, c.msgs ? c.msgs : "");
        goto done;
    }
    Value *v = find_value(g, k->name);
    if (!unit_check(v != NULL, f, k->line, "the value exists")) goto done;
    unit_check_ints(k->shape, k->ndim, v->shape, v->ndim, f, k->line, "shape");
    unit_check_ints(k->strides, k->ndim, v->strides, v->ndim, f, k->line, "strides");
    unit_check_int(k->offset, v->offset, f, k->line, "storage offset");
    if (k->base) {
        Value *base = find_value(g, k->base);
        unit_check(v->is_view, f, k->line, "is_view");
        unit_check(base && v->storage == base, f, k->line, "shares the base's storage");
        unit_check(v->copy_reason == NULL, f, k->line, "no copy_reason");
    } else {
        unit_check(!v->is_view, f, k->line, "not a view (a copy)");
        unit_check(v->storage == v, f, k->line, "owns its storage");
    }
done:
    unit_context = NULL;
    compiled_free(&c);
}

#define S(...)                                                                                     \
    (sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), {                                        \
        __VA_ARGS__                                                                                \
    }
/* CASE(torch expression, .tg body, checked name, S(shape), {strides}, offset, base or NULL) */
#define CASE(torch, body, name, shape, ...)                                                        \
    { __LINE__, torch, body, name, shape, __VA_ARGS__ }

static const LayoutCase cases[] = {
    /* transpose, permute, .T, .mT, swapaxes */
    CASE("x.transpose(0, 2)", "output r = x.transpose(0, 2)", "r", S(4, 3, 2), {1, 4, 12}, 0, "x"),
    CASE("x.transpose(-1, 0)", "output r = x.transpose(-1, 0)", "r", S(4, 3, 2), {1, 4, 12}, 0,
         "x"),
    CASE("x.swapaxes(0, 1)", "output r = x.swapaxes(0, 1)", "r", S(3, 2, 4), {4, 12, 1}, 0, "x"),
    CASE("x.permute(2, 0, 1)", "output r = x.permute(2, 0, 1)", "r", S(4, 2, 3), {1, 12, 4}, 0,
         "x"),
    CASE("x.permute(-1, 0, -2)", "output r = x.permute(-1, 0, -2)", "r", S(4, 2, 3), {1, 12, 4}, 0,
         "x"),
    CASE("m.T", "output r = m.T", "r", S(5, 4), {1, 5}, 0, "m"),
    CASE("x.T (3-D: all dims reversed)", "output r = x.T", "r", S(4, 3, 2), {1, 4, 12}, 0, "x"),
    CASE("x.mT", "output r = x.mT", "r", S(2, 4, 3), {12, 1, 4}, 0, "x"),
    CASE("x[1].T", "output r = x[1].T", "r", S(4, 3), {1, 4}, 12, "x"),
    /* reshape / view / flatten / unflatten */
    CASE("t.reshape(6, 4)  (copy)", "t = x.transpose(0, 2)\noutput r = t.reshape(6, 4)", "r",
         S(6, 4), {4, 1}, 0, NULL),
    CASE("s.reshape(2, 8)  (view of a contiguous-enough slice)",
         "s = x[:, 1:3]\noutput r = s.reshape(2, 8)", "r", S(2, 8), {12, 1}, 4, "x"),
    CASE("x[1:].reshape(-1)", "output r = x[1:].reshape(-1)", "r", S(12), {1}, 12, "x"),
    CASE("x.view(6, -1)", "output r = x.view(6, -1)", "r", S(6, 4), {4, 1}, 0, "x"),
    CASE("m.T.reshape(5, 2, 2)", "output r = m.T.reshape(5, 2, 2)", "r", S(5, 2, 2), {1, 10, 5}, 0,
         "m"),
    CASE("m.T.reshape(20)  (copy)", "output r = m.T.reshape(20)", "r", S(20), {1}, 0, NULL),
    CASE("m.T.reshape(1, 5, 1, 4)", "output r = m.T.reshape(1, 5, 1, 4)", "r", S(1, 5, 1, 4),
         {5, 1, 20, 5}, 0, "m"),
    CASE("m.T.view(5, 2, 2)", "output r = m.T.view(5, 2, 2)", "r", S(5, 2, 2), {1, 10, 5}, 0, "m"),
    CASE("x.transpose(1, 2)[0].reshape(12)  (copy)", "output r = x.transpose(1, 2)[0].reshape(12)",
         "r", S(12), {1}, 0, NULL),
    CASE("x[:, :, 1:3].reshape(6, 2)", "output r = x[:, :, 1:3].reshape(6, 2)", "r", S(6, 2),
         {4, 1}, 1, "x"),
    CASE("x[:, :, 1:3].reshape(2, 6)  (copy)", "output r = x[:, :, 1:3].reshape(2, 6)", "r",
         S(2, 6), {6, 1}, 0, NULL),
    CASE("t.flatten()  (copy)", "t = x.transpose(0, 2)\noutput r = t.flatten()", "r", S(24), {1}, 0,
         NULL),
    CASE("t.flatten(1)  (copy)", "t = x.transpose(0, 2)\noutput r = t.flatten(1)", "r", S(4, 6),
         {6, 1}, 0, NULL),
    CASE("s.flatten(1)", "s = x[:, 1:3]\noutput r = s.flatten(1)", "r", S(2, 8), {12, 1}, 4, "x"),
    CASE("s.flatten()  (copy)", "s = x[:, 1:3]\noutput r = s.flatten()", "r", S(16), {1}, 0, NULL),
    CASE("x.flatten(0, 1)", "output r = x.flatten(0, 1)", "r", S(6, 4), {4, 1}, 0, "x"),
    CASE("t.flatten(1, 1)  (the input itself)", "t = x.transpose(0, 2)\noutput r = t.flatten(1, 1)",
         "r", S(4, 3, 2), {1, 4, 12}, 0, "x"),
    CASE("x.unflatten(2, [2, 2])", "output r = x.unflatten(2, [2, 2])", "r", S(2, 3, 2, 2),
         {12, 4, 2, 1}, 0, "x"),
    CASE("x.mT.unflatten(1, (2, 2))", "output r = x.mT.unflatten(1, (2, 2))", "r", S(2, 2, 2, 3),
         {12, 2, 1, 4}, 0, "x"),
    /* expand, expand_as */
    CASE("b3.expand(2, 3, 4)", "output r = b3.expand(2, 3, 4)", "r", S(2, 3, 4), {0, 1, 0}, 0,
         "b3"),
    CASE("b.expand(2, 3)", "output r = b.expand(2, 3)", "r", S(2, 3), {0, 1}, 0, "b"),
    CASE("b.expand(1, 3)", "output r = b.expand(1, 3)", "r", S(1, 3), {3, 1}, 0, "b"),
    CASE("x.expand(3, 2, 3, 4)", "output r = x.expand(3, 2, 3, 4)", "r", S(3, 2, 3, 4),
         {0, 12, 4, 1}, 0, "x"),
    CASE("x.expand(-1, 3, -1)", "output r = x.expand(-1, 3, -1)", "r", S(2, 3, 4), {12, 4, 1}, 0,
         "x"),
    CASE("b3.expand_as(x)", "output r = b3.expand_as(x)", "r", S(2, 3, 4), {0, 1, 0}, 0, "b3"),
    /* unsqueeze, squeeze */
    CASE("x.unsqueeze(1)", "output r = x.unsqueeze(1)", "r", S(2, 1, 3, 4), {12, 12, 4, 1}, 0, "x"),
    CASE("x.unsqueeze(-1)", "output r = x.unsqueeze(-1)", "r", S(2, 3, 4, 1), {12, 4, 1, 1}, 0,
         "x"),
    CASE("x.unsqueeze(0)", "output r = x.unsqueeze(0)", "r", S(1, 2, 3, 4), {24, 12, 4, 1}, 0, "x"),
    CASE("t.unsqueeze(1)", "t = x.transpose(0, 2)\noutput r = t.unsqueeze(1)", "r", S(4, 1, 3, 2),
         {1, 12, 4, 12}, 0, "x"),
    CASE("t.unsqueeze(3)", "t = x.transpose(0, 2)\noutput r = t.unsqueeze(3)", "r", S(4, 3, 2, 1),
         {1, 4, 12, 1}, 0, "x"),
    CASE("q.squeeze(1)", "output r = q.squeeze(1)", "r", S(2, 3), {3, 1}, 0, "q"),
    CASE("q.squeeze()", "output r = q.squeeze()", "r", S(2, 3), {3, 1}, 0, "q"),
    CASE("q.squeeze(0)  (size 2: unchanged)", "output r = q.squeeze(0)", "r", S(2, 1, 3), {3, 3, 1},
         0, "q"),
    /* diagonal */
    CASE("m.diagonal()", "output r = m.diagonal()", "r", S(4), {6}, 0, "m"),
    CASE("m.diagonal(2)", "output r = m.diagonal(2)", "r", S(3), {6}, 2, "m"),
    CASE("m.diagonal(-1)", "output r = m.diagonal(-1)", "r", S(3), {6}, 5, "m"),
    CASE("m.diagonal(7)", "output r = m.diagonal(7)", "r", S(0), {6}, 0, "m"),
    CASE("m.diagonal(-7)", "output r = m.diagonal(-7)", "r", S(0), {6}, 0, "m"),
    CASE("x.diagonal(1, 1, 2)", "output r = x.diagonal(1, 1, 2)", "r", S(2, 3), {12, 5}, 1, "x"),
    CASE("x.diagonal(-1, 0, 2)", "output r = x.diagonal(-1, 0, 2)", "r", S(3, 1), {4, 13}, 12, "x"),
    CASE("x.diagonal(0, 2, 0)", "output r = x.diagonal(0, 2, 0)", "r", S(3, 2), {4, 13}, 0, "x"),
    CASE("x.diagonal(offset=1, dim1=-2, dim2=-1)",
         "output r = x.diagonal(offset=1, dim1=-2, dim2=-1)", "r", S(2, 3), {12, 5}, 1, "x"),
    /* select, narrow, integer indices */
    CASE("x[:, 1]", "output r = x[:, 1]", "r", S(2, 4), {12, 1}, 4, "x"),
    CASE("x.select(1, 1)", "output r = x.select(1, 1)", "r", S(2, 4), {12, 1}, 4, "x"),
    CASE("x.select(-1, -2)", "output r = x.select(-1, -2)", "r", S(2, 3), {12, 4}, 2, "x"),
    CASE("x[-1]", "output r = x[-1]", "r", S(3, 4), {4, 1}, 12, "x"),
    CASE("x[1, 2, 3]  (0-d)", "output r = x[1, 2, 3]", "r", 0, {0}, {0}, 23, "x"),
    CASE("x.narrow(2, 1, 2)", "output r = x.narrow(2, 1, 2)", "r", S(2, 3, 2), {12, 4, 1}, 1, "x"),
    CASE("x.narrow(-1, 3, 1)", "output r = x.narrow(-1, 3, 1)", "r", S(2, 3, 1), {12, 4, 1}, 3,
         "x"),
    CASE("t.narrow(1, 1, 2)", "t = x.transpose(0, 2)\noutput r = t.narrow(1, 1, 2)", "r",
         S(4, 2, 2), {1, 4, 12}, 4, "x"),
    /* slices: steps, clamped bounds, None, ... */
    CASE("x[:, 1:3]", "output r = x[:, 1:3]", "r", S(2, 2, 4), {12, 4, 1}, 4, "x"),
    CASE("x[:, ::2, 1::2]", "output r = x[:, ::2, 1::2]", "r", S(2, 2, 2), {12, 8, 2}, 1, "x"),
    CASE("x[:, 1:100]", "output r = x[:, 1:100]", "r", S(2, 2, 4), {12, 4, 1}, 4, "x"),
    CASE("x[:, -100:2]", "output r = x[:, -100:2]", "r", S(2, 2, 4), {12, 4, 1}, 0, "x"),
    CASE("x[5:]", "output r = x[5:]", "r", S(0, 3, 4), {12, 4, 1}, 24, "x"),
    CASE("x[:, 2:1]", "output r = x[:, 2:1]", "r", S(2, 0, 4), {12, 4, 1}, 8, "x"),
    CASE("x[:, -2:, ::3]", "output r = x[:, -2:, ::3]", "r", S(2, 2, 2), {12, 4, 3}, 4, "x"),
    CASE("x[..., -1]", "output r = x[..., -1]", "r", S(2, 3), {12, 4}, 3, "x"),
    CASE("x[None, :, 0]", "output r = x[None, :, 0]", "r", S(1, 2, 4), {24, 12, 1}, 0, "x"),
    CASE("x[1, None, ..., 1:3]", "output r = x[1, None, ..., 1:3]", "r", S(1, 3, 2), {12, 4, 1}, 13,
         "x"),
    CASE("x[..., None]", "output r = x[..., None]", "r", S(2, 3, 4, 1), {12, 4, 1, 1}, 0, "x"),
    CASE("m.T[1:, ::2]", "output r = m.T[1:, ::2]", "r", S(4, 2), {1, 10}, 1, "m"),
    CASE("y[:, 1:6:2]", "output r = y[:, 1:6:2]", "r", S(2, 3), {7, 2}, 1, "y"),
    CASE("y[:, 1:7:4]", "output r = y[:, 1:7:4]", "r", S(2, 2), {7, 4}, 1, "y"),
    /* chunk, split: element views */
    CASE("y.chunk(3, dim=1)[0]", "a, c, d = y.chunk(3, dim=1)\noutput a\noutput c\noutput d", "a",
         S(2, 3), {7, 1}, 0, "y"),
    CASE("y.chunk(3, dim=1)[1]", "a, c, d = y.chunk(3, dim=1)\noutput a\noutput c\noutput d", "c",
         S(2, 3), {7, 1}, 3, "y"),
    CASE("y.chunk(3, dim=1)[2]", "a, c, d = y.chunk(3, dim=1)\noutput a\noutput c\noutput d", "d",
         S(2, 1), {7, 1}, 6, "y"),
    CASE("y.split([2, 5], dim=1)[1]", "a, c = y.split([2, 5], dim=1)\noutput a\noutput c", "c",
         S(2, 5), {7, 1}, 2, "y"),
    CASE("y.split(3, dim=1)[2]", "a, c, d = y.split(3, dim=1)\noutput a\noutput c\noutput d", "d",
         S(2, 1), {7, 1}, 6, "y"),
    CASE("x.chunk(2, -1)[1]", "a, c = x.chunk(2, -1)\noutput a\noutput c", "c", S(2, 3, 2),
         {12, 4, 1}, 2, "x"),
    CASE("t.chunk(2, 0)[1]", "t = x.transpose(0, 2)\na, c = t.chunk(2, 0)\noutput a\noutput c", "c",
         S(2, 3, 2), {1, 4, 12}, 2, "x"),
    /* contiguous, identity views */
    CASE("t.contiguous()  (copy)", "t = x.transpose(0, 2)\noutput r = t.contiguous()", "r",
         S(4, 3, 2), {6, 2, 1}, 0, NULL),
    CASE("x.contiguous()  (x itself)", "output r = x.contiguous()", "r", S(2, 3, 4), {12, 4, 1}, 0,
         "x"),
    CASE("x.detach()", "output r = x.detach()", "r", S(2, 3, 4), {12, 4, 1}, 0, "x"),
    CASE("x.to(torch.float32)  (x itself)", "output r = x.to(f32)", "r", S(2, 3, 4), {12, 4, 1}, 0,
         "x"),
    CASE("x.to(torch.float16)  (a new tensor)", "output r = x.to(f16)", "r", S(2, 3, 4), {12, 4, 1},
         0, NULL),
    CASE("x[...]", "output r = x[...]", "r", S(2, 3, 4), {12, 4, 1}, 0, "x"),
    /* chains collapse onto the owner */
    CASE("x[1:].transpose(0, 2)[1:3].unsqueeze(0)",
         "output r = x[1:].transpose(0, 2)[1:3].unsqueeze(0)", "r", S(1, 2, 3, 1), {2, 1, 4, 12},
         13, "x"),
    CASE("(x + 1).transpose(0, 1)  (a view of the sum)", "z = x + 1\noutput r = z.transpose(0, 1)",
         "r", S(3, 2, 4), {4, 12, 1}, 0, "z"),
    /* more: expanded, empty, 0-d and size-1 inputs, chains (printed by the same script) */
    CASE("b.expand(2, 3).reshape(6)  (copy)", "output r = b.expand(2, 3).reshape(6)", "r", S(6),
         {1}, 0, NULL),
    CASE("b.expand(2, 3).reshape(2, 3, 1)", "output r = b.expand(2, 3).reshape(2, 3, 1)", "r",
         S(2, 3, 1), {0, 1, 1}, 0, "b"),
    CASE("b3.expand(2, 3, 4).reshape(6, 4)  (copy)", "output r = b3.expand(2, 3, 4).reshape(6, 4)",
         "r", S(6, 4), {4, 1}, 0, NULL),
    CASE("b3.expand(2, 3, 4).reshape(2, 3, 2, 2)",
         "output r = b3.expand(2, 3, 4).reshape(2, 3, 2, 2)", "r", S(2, 3, 2, 2), {0, 1, 0, 0}, 0,
         "b3"),
    CASE("b.expand(2, 3).unsqueeze(1)", "output r = b.expand(2, 3).unsqueeze(1)", "r", S(2, 1, 3),
         {0, 3, 1}, 0, "b"),
    CASE("b.expand(2, 3).unsqueeze(0)", "output r = b.expand(2, 3).unsqueeze(0)", "r", S(1, 2, 3),
         {0, 0, 1}, 0, "b"),
    CASE("x[5:].reshape(0, 12)", "output r = x[5:].reshape(0, 12)", "r", S(0, 12), {12, 1}, 24,
         "x"),
    CASE("x[5:].reshape(-1)", "output r = x[5:].reshape(-1)", "r", S(0), {1}, 24, "x"),
    CASE("x[5:].reshape(3, 0, 4)", "output r = x[5:].reshape(3, 0, 4)", "r", S(3, 0, 4), {4, 4, 1},
         24, "x"),
    CASE("x[:, 2:1].reshape(2, 4, 0)", "output r = x[:, 2:1].reshape(2, 4, 0)", "r", S(2, 4, 0),
         {4, 1, 1}, 8, "x"),
    CASE("x[1, 2, 3].reshape(1, 1)", "output r = x[1, 2, 3].reshape(1, 1)", "r", S(1, 1), {1, 1},
         23, "x"),
    CASE("x[1, 2, 3].unsqueeze(0)", "output r = x[1, 2, 3].unsqueeze(0)", "r", S(1), {1}, 23, "x"),
    CASE("x[1, 2, 3].expand(2, 3)", "output r = x[1, 2, 3].expand(2, 3)", "r", S(2, 3), {0, 0}, 23,
         "x"),
    CASE("x[1, 2, 3].flatten()", "output r = x[1, 2, 3].flatten()", "r", S(1), {1}, 23, "x"),
    CASE("t.diagonal()", "t = x.transpose(0, 2)\noutput r = t.diagonal()", "r", S(2, 3), {12, 5}, 0,
         "x"),
    CASE("x[:, 1:2].squeeze(1)", "output r = x[:, 1:2].squeeze(1)", "r", S(2, 4), {12, 1}, 4, "x"),
    CASE("b3.expand(2, 3, 4)[1]", "output r = b3.expand(2, 3, 4)[1]", "r", S(3, 4), {1, 0}, 0,
         "b3"),
    CASE("b.expand(4, 3)[1:3]", "output r = b.expand(4, 3)[1:3]", "r", S(2, 3), {0, 1}, 0, "b"),
    CASE("x.narrow(2, -2, 2)", "output r = x.narrow(2, -2, 2)", "r", S(2, 3, 2), {12, 4, 1}, 2,
         "x"),
    CASE("x.permute(1, 0, 2).reshape(3, 8)  (copy)", "output r = x.permute(1, 0, 2).reshape(3, 8)",
         "r", S(3, 8), {8, 1}, 0, NULL),
    CASE("x.permute(1, 0, 2).reshape(3, 2, 2, 2)",
         "output r = x.permute(1, 0, 2).reshape(3, 2, 2, 2)", "r", S(3, 2, 2, 2), {4, 12, 2, 1}, 0,
         "x"),
    CASE("x.permute(1, 0, 2).reshape(3, 2, 4)", "output r = x.permute(1, 0, 2).reshape(3, 2, 4)",
         "r", S(3, 2, 4), {4, 12, 1}, 0, "x"),
    CASE("b.expand(1, 1, 3)", "output r = b.expand(1, 1, 3)", "r", S(1, 1, 3), {3, 3, 1}, 0, "b"),
    CASE("x.unflatten(1, (-1, 1))", "output r = x.unflatten(1, (-1, 1))", "r", S(2, 3, 1, 4),
         {12, 4, 4, 1}, 0, "x"),
    CASE("b.T", "output r = b.T", "r", S(3), {1}, 0, "b"),
    CASE("m.mT", "output r = m.mT", "r", S(5, 4), {1, 5}, 0, "m"),
    CASE("x.swapaxes(1, 1)", "output r = x.swapaxes(1, 1)", "r", S(2, 3, 4), {12, 4, 1}, 0, "x"),
    CASE("x[None, None]", "output r = x[None, None]", "r", S(1, 1, 2, 3, 4), {24, 24, 12, 4, 1}, 0,
         "x"),
    CASE("x[:, None, 1]", "output r = x[:, None, 1]", "r", S(2, 1, 4), {12, 12, 1}, 4, "x"),
    CASE("x[:, :-1]", "output r = x[:, :-1]", "r", S(2, 2, 4), {12, 4, 1}, 0, "x"),
    CASE("x[:, 10:]", "output r = x[:, 10:]", "r", S(2, 0, 4), {12, 4, 1}, 12, "x"),
    CASE("y[:, ::10]", "output r = y[:, ::10]", "r", S(2, 1), {7, 10}, 0, "y"),
    CASE("y[:, 5:2:2]", "output r = y[:, 5:2:2]", "r", S(2, 0), {7, 2}, 5, "y"),
    CASE("y[:, -1:]", "output r = y[:, -1:]", "r", S(2, 1), {7, 1}, 6, "y"),
    CASE("y[-1, 6]", "output r = y[-1, 6]", "r", 0, {0}, {0}, 13, "y"),
    CASE("y.T.reshape(7, 2, 1)", "output r = y.T.reshape(7, 2, 1)", "r", S(7, 2, 1), {1, 7, 7}, 0,
         "y"),
    CASE("y.T.reshape(7, 1, 2)", "output r = y.T.reshape(7, 1, 2)", "r", S(7, 1, 2), {1, 14, 7}, 0,
         "y"),
    CASE("y.T[None].reshape(7, 2)", "output r = y.T[None].reshape(7, 2)", "r", S(7, 2), {1, 7}, 0,
         "y"),
    CASE("x.transpose(0, 1).transpose(1, 2)", "output r = x.transpose(0, 1).transpose(1, 2)", "r",
         S(3, 4, 2), {4, 1, 12}, 0, "x"),
    CASE("x.unsqueeze(3).expand(2, 3, 4, 5)", "output r = x.unsqueeze(3).expand(2, 3, 4, 5)", "r",
         S(2, 3, 4, 5), {12, 4, 1, 0}, 0, "x"),
    CASE("q.squeeze(1).unsqueeze(1)", "output r = q.squeeze(1).unsqueeze(1)", "r", S(2, 1, 3),
         {3, 3, 1}, 0, "q"),
    CASE("q.expand(2, 4, 3)", "output r = q.expand(2, 4, 3)", "r", S(2, 4, 3), {3, 0, 1}, 0, "q"),
    CASE("q.transpose(0, 1).reshape(2, 3)", "output r = q.transpose(0, 1).reshape(2, 3)", "r",
         S(2, 3), {3, 1}, 0, "q"),
    CASE("q.transpose(1, 2).reshape(2, 3)", "output r = q.transpose(1, 2).reshape(2, 3)", "r",
         S(2, 3), {3, 1}, 0, "q"),
    CASE("q.transpose(1, 2).flatten(1)", "output r = q.transpose(1, 2).flatten(1)", "r", S(2, 3),
         {3, 1}, 0, "q"),
    CASE("m.diagonal(1).unsqueeze(1)", "output r = m.diagonal(1).unsqueeze(1)", "r", S(4, 1),
         {6, 1}, 1, "m"),
    CASE("x.diagonal(0, -1, 0)", "output r = x.diagonal(0, -1, 0)", "r", S(3, 2), {4, 13}, 0, "x"),
    CASE("x.chunk(3, 1)[2]", "a, c, d = x.chunk(3, 1)\noutput a\noutput c\noutput d", "d",
         S(2, 1, 4), {12, 4, 1}, 8, "x"),
    CASE("y.chunk(5, 1)[3]  (4 pieces)",
         "a, c, d, e = y.chunk(5, 1)\noutput a\noutput c\noutput d\noutput e", "e", S(2, 1), {7, 1},
         6, "y"),
    CASE("y.chunk(4, 1)[1]", "a, c, d, e = y.chunk(4, 1)\noutput a\noutput c\noutput d\noutput e",
         "c", S(2, 2), {7, 1}, 2, "y"),
    CASE("y.split([0, 7], 1)[0]", "a, c = y.split([0, 7], 1)\noutput a\noutput c", "a", S(2, 0),
         {7, 1}, 0, "y"),
    CASE("y.split([0, 7], 1)[1]", "a, c = y.split([0, 7], 1)\noutput a\noutput c", "c", S(2, 7),
         {7, 1}, 0, "y"),
    /* contiguous(): PyTorch's is_contiguous ignores the strides of size-1 dims, and empty tensors
       are contiguous */
    CASE("q.transpose(0, 1).contiguous()", "output r = q.transpose(0, 1).contiguous()", "r",
         S(1, 2, 3), {3, 3, 1}, 0, "q"),
    CASE("m.T[:, :1].contiguous()", "output r = m.T[:, :1].contiguous()", "r", S(5, 1), {1, 5}, 0,
         "m"),
    CASE("m.T[:1].contiguous()  (copy)", "output r = m.T[:1].contiguous()", "r", S(1, 4), {4, 1}, 0,
         NULL),
    CASE("x[5:].contiguous()", "output r = x[5:].contiguous()", "r", S(0, 3, 4), {12, 4, 1}, 24,
         "x"),
    CASE("x[:, 3:].transpose(0, 2).contiguous()",
         "output r = x[:, 3:].transpose(0, 2).contiguous()", "r", S(4, 0, 2), {1, 4, 12}, 12, "x"),
    CASE("b.expand(2, 3).contiguous()  (copy)", "output r = b.expand(2, 3).contiguous()", "r",
         S(2, 3), {3, 1}, 0, NULL),
    CASE("x.float()", "output r = x.float()", "r", S(2, 3, 4), {12, 4, 1}, 0, "x"),
    CASE("m.T[:, :1].view(5)", "output r = m.T[:, :1].view(5)", "r", S(5), {1}, 0, "m"),
    CASE("b.expand(1, 3).contiguous()", "output r = b.expand(1, 3).contiguous()", "r", S(1, 3),
         {3, 1}, 0, "b"),
    CASE("x[1:2].contiguous()", "output r = x[1:2].contiguous()", "r", S(1, 3, 4), {12, 4, 1}, 12,
         "x"),
    CASE("q.transpose(0, 1).view(6)", "output r = q.transpose(0, 1).view(6)", "r", S(6), {1}, 0,
         "q"),

};

/* Views of dead values, and dead values whose inputs are unnamed: the
 * layouts must still be computed and the pipeline must not fail. */
static const LayoutCase dead_cases[] = {
    CASE("x[:, 1:3]  (dead)", "s = x[:, 1:3]\noutput o = x + 1", "s", S(2, 2, 4), {12, 4, 1}, 4,
         "x"),
    CASE("x[:, 1]  (dead)", "s = x[:, 1]\noutput o = x + 1", "s", S(2, 4), {12, 1}, 4, "x"),
    CASE("x.transpose(0, 2).reshape(6, 4)  (dead)",
         "r = x.transpose(0, 2).reshape(6, 4)\noutput o = x + 1", "r", S(6, 4), {4, 1}, 0, NULL),
    CASE("y.chunk(3, dim=1)[1]  (dead)", "a, c, d = y.chunk(3, dim=1)\noutput o = x + 1", "c",
         S(2, 3), {7, 1}, 3, "y"),
};

typedef struct ErrCase {
    int line;
    const char *body;
    const char *message; /* a part of the expected error message */
    const char *where;   /* "line:col" of the error: the call, or the argument at fault */
} ErrCase;

static void run_error_case(void *arg) {
    const ErrCase *k = arg;
    char src[2048];
    snprintf(src, sizeof src, "%s%s\n", prelude, k->body);
    Compiled c;
    unit_context = k->body;
    Graph *g = compile_src(&c, src);
    unit_check(g == NULL, __FILE__, k->line, "the source is rejected");
    unit_check(c.diag.errors > 0, __FILE__, k->line, "errors reported");
    if (!unit_check(c.msgs && strstr(c.msgs, k->message), __FILE__, k->line, "the message"))
        printf("    wanted \"%s\" in:\n%s", k->message, c.msgs ? c.msgs : "");
    char at[64];
    snprintf(at, sizeof at, "u.tg:%s: error:", k->where);
    if (!unit_check(c.msgs && strstr(c.msgs, at), __FILE__, k->line, "the position"))
        printf("    wanted \"%s\" in:\n%s", at, c.msgs ? c.msgs : "");
    unit_context = NULL;
    compiled_free(&c);
}

static const ErrCase errors[] = {
    /* t.view(4, 6) with t = x.transpose(0, 2): PyTorch raises "view size is not compatible
     * with input tensor's size and stride ... Use .reshape(...) instead." */
    {__LINE__, "t = x.transpose(0, 2)\noutput r = t.view(4, 6)", "view size is not compatible",
     "9:12"},
    {__LINE__, "output r = m.T.view(20)", "view size is not compatible", "8:12"},
    {__LINE__, "output r = x[:, :, 1:3].view(2, 6)", "view size is not compatible", "8:12"},
    /* element counts differ: "shape '[5, 5]' is invalid for input of size 24" */
    {__LINE__, "output r = x.reshape(5, 5)", "invalid for input of size 24", "8:22"},
    {__LINE__, "output r = x.view(-1, -1)", "only one dimension can be inferred", "8:19"},
    /* expand of a non-1 dim: "The expanded size of the tensor (5) must match the existing size (3)
       ..." */
    {__LINE__, "output r = b3.expand(5, 4)", "must match the existing size", "8:22"},
    /* select out of range: "index 3 is out of bounds for dimension 1 with size 3" */
    {__LINE__, "output r = x.select(1, 3)", "out of", "8:24"},
    {__LINE__, "output r = x[2]", "out of", "8:14"},
    /* narrow past the end: "start (3) + length (2) exceeds dimension size (4)." */
    {__LINE__, "output r = x.narrow(2, 3, 2)", "exceeds dimension size", "8:27"},
    /* PyTorch 1.13 rejects negative steps: "step must be greater than zero" */
    {__LINE__, "output r = x[::-1]", "flip", "8:16"},
    /* dimension out of range: "Dimension out of range (expected to be in range of [-3, 2], but got
       3)" */
    {__LINE__, "output r = x.transpose(0, 3)", "out of range", "8:27"},
    /* permute with a repeated dim: "permute(): duplicate dims are not allowed." */
    {__LINE__, "output r = x.permute(0, 0, 1)", "duplicate", "8:22"},
    /* diagonal with dim1 == dim2: "diagonal dimensions cannot be identical 1, 1" */
    {__LINE__, "output r = x.diagonal(0, 1, 1)", "identical", "8:29"},
};

int main(void) {
    char name[256];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(name, sizeof name, "%s, line %d", cases[i].torch, cases[i].line);
        unit_isolated(name, run_layout_case, (void *)&cases[i]);
    }
    for (size_t i = 0; i < sizeof dead_cases / sizeof *dead_cases; i++) {
        snprintf(name, sizeof name, "%s, line %d", dead_cases[i].torch, dead_cases[i].line);
        unit_isolated(name, run_layout_case, (void *)&dead_cases[i]);
    }
    for (size_t i = 0; i < sizeof errors / sizeof *errors; i++) {
        snprintf(name, sizeof name, "%s, line %d", errors[i].body, errors[i].line);
        unit_isolated(name, run_error_case, (void *)&errors[i]);
    }
    return unit_report("test_layout");
}
