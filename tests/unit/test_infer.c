/* Shape and dtype inference: matmul and friends, einsum, reductions,
 * cat/stack, and the errors for shapes that do not fit. Each expected
 * shape was printed by PyTorch 1.13 (/usr/bin/python3) for the expression
 * in the case's comment string, with E = torch.empty; each error case
 * is one PyTorch raises for. Each case compiles on its own, in a child
 * process, so a crash fails only that case. */
#define UNIT_COMPILE
#include "unit.h"

typedef struct ShapeCase {
    int line;
    const char *torch; /* the PyTorch expression the shape comes from */
    const char *decls; /* "a:f32[2,3] b:f32[3]": the inputs */
    const char *body;  /* statements; a body without " = " is the expression of "output r = ..." */
    const char *name;  /* the value checked */
    int ndim;
    int64_t shape[TG_MAX_DIMS];
    DType dtype; /* DT_NONE: not checked */
} ShapeCase;

/* Builds "graph g\ninput a : f32[2,3]\n...\n" + body. */
static void make_source(char *src, size_t n, const char *decls, const char *body) {
    size_t k = (size_t)snprintf(src, n, "graph g\n");
    const char *p = decls;
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p) break;
        const char *colon = strchr(p, ':');
        const char *end = strchr(p, ' ');
        if (!end) end = p + strlen(p);
        if (!colon || colon > end) break;
        k += (size_t)snprintf(src + k, n - k, "input %.*s : %.*s\n", (int)(colon - p), p,
                              (int)(end - colon - 1), colon + 1);
        p = end;
    }
    if (strstr(body, " = "))
        snprintf(src + k, n - k, "%s\n", body);
    else
        snprintf(src + k, n - k, "output r = %s\n", body);
}

static void run_shape_case(void *arg) {
    const ShapeCase *k = arg;
    char src[2048];
    make_source(src, sizeof src, k->decls, k->body);
    Compiled c;
    unit_context = k->torch;
    Graph *g = compile_src(&c, src);
    const char *f = __FILE__;
    if (!unit_check(g != NULL, f, k->line, "the source compiles")) {
        printf("%s%s", src, c.msgs ? c.msgs : "");
        goto done;
    }
    Value *v = find_value(g, k->name);
    if (!unit_check(v != NULL, f, k->line, "the value exists")) goto done;
    unit_check_ints(k->shape, k->ndim, v->shape, v->ndim, f, k->line, "shape");
    if (k->dtype != DT_NONE)
        unit_check_str(dtype_name(k->dtype), dtype_name(v->dtype), f, k->line, "dtype");
done:
    unit_context = NULL;
    compiled_free(&c);
}

#define S(...)                                                                                     \
    (sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), {                                        \
        __VA_ARGS__                                                                                \
    }
#define S0                                                                                         \
    0, {                                                                                           \
        0                                                                                          \
    }
/* SHAPE(torch expression, inputs, body, S(shape)): checks r's shape. */
#define SHAPE(torch, decls, body, shape)                                                           \
    { __LINE__, torch, decls, body, "r", shape, DT_NONE }
/* SHAPE_OF(torch expression, inputs, body, name, S(shape), dtype) */
#define SHAPE_OF(torch, decls, body, name, shape, dtype)                                           \
    { __LINE__, torch, decls, body, name, shape, dtype }

static const ShapeCase shape_cases[] = {
    /* matmul: 1-D, 2-D, batched with broadcasting */
    SHAPE("E(3) @ E(3)", "a:f32[3] b:f32[3]", "a @ b", S0),
    SHAPE("E(3) @ E(3, 4)", "a:f32[3] b:f32[3,4]", "a @ b", S(4)),
    SHAPE("E(2, 3) @ E(3)", "a:f32[2,3] b:f32[3]", "a @ b", S(2)),
    SHAPE("E(2, 3) @ E(3, 4)", "a:f32[2,3] b:f32[3,4]", "a @ b", S(2, 4)),
    SHAPE("E(5, 2, 3) @ E(3, 4)", "a:f32[5,2,3] b:f32[3,4]", "a @ b", S(5, 2, 4)),
    SHAPE("E(3) @ E(5, 3, 4)", "a:f32[3] b:f32[5,3,4]", "a @ b", S(5, 4)),
    SHAPE("E(5, 2, 3) @ E(3)", "a:f32[5,2,3] b:f32[3]", "a @ b", S(5, 2)),
    SHAPE("E(2, 1, 2, 3) @ E(5, 3, 4)", "a:f32[2,1,2,3] b:f32[5,3,4]", "a @ b", S(2, 5, 2, 4)),
    SHAPE("E(1, 2, 3) @ E(6, 3, 4)", "a:f32[1,2,3] b:f32[6,3,4]", "matmul(a, b)", S(6, 2, 4)),
    SHAPE("E(6, 1, 2, 3) @ E(3)", "a:f32[6,1,2,3] b:f32[3]", "a.matmul(b)", S(6, 1, 2)),
    SHAPE("E(2, 3).T @ E(2, 4)", "a:f32[2,3] b:f32[2,4]", "a.T @ b", S(3, 4)),
    SHAPE_OF("E(2, 3, dtype=f16) @ E(3, 4, dtype=f16)", "a:f16[2,3] b:f16[3,4]", "a @ b", "r",
             S(2, 4), DT_F16),
    SHAPE("torch.mm(E(2, 3), E(3, 4))", "a:f32[2,3] b:f32[3,4]", "mm(a, b)", S(2, 4)),
    SHAPE("torch.bmm(E(5, 2, 3), E(5, 3, 4))", "a:f32[5,2,3] b:f32[5,3,4]", "bmm(a, b)",
          S(5, 2, 4)),
    SHAPE("torch.mv(E(2, 3), E(3))", "a:f32[2,3] b:f32[3]", "mv(a, b)", S(2)),
    SHAPE("torch.outer(E(3), E(4))", "a:f32[3] b:f32[4]", "outer(a, b)", S(3, 4)),
    SHAPE("F.linear(E(2, 3), E(4, 3), E(4))", "a:f32[2,3] w:f32[4,3] c:f32[4]", "linear(a, w, c)",
          S(2, 4)),
    SHAPE("F.linear(E(5, 2, 3), E(4, 3))", "a:f32[5,2,3] w:f32[4,3]", "linear(a, w)", S(5, 2, 4)),
    SHAPE("F.linear(E(3), E(4, 3))", "a:f32[3] w:f32[4,3]", "linear(a, w)", S(4)),
    /* einsum: explicit and implicit outputs */
    SHAPE("einsum('ij,jk->ik', E(2, 3), E(3, 4))", "a:f32[2,3] b:f32[3,4]",
          "einsum(\"ij,jk->ik\", a, b)", S(2, 4)),
    SHAPE("einsum('ij,jk', E(2, 3), E(3, 4))", "a:f32[2,3] b:f32[3,4]", "einsum(\"ij,jk\", a, b)",
          S(2, 4)),
    SHAPE("einsum('ba,ac', E(2, 3), E(3, 4))", "a:f32[2,3] b:f32[3,4]", "einsum(\"ba,ac\", a, b)",
          S(2, 4)),
    SHAPE("einsum('ji', E(2, 3))  (implicit output is sorted: ij)", "a:f32[2,3]",
          "einsum(\"ji\", a)", S(3, 2)),
    SHAPE("einsum('ii->i', E(3, 3))", "a:f32[3,3]", "einsum(\"ii->i\", a)", S(3)),
    SHAPE("einsum('ii', E(3, 3))", "a:f32[3,3]", "einsum(\"ii\", a)", S0),
    SHAPE("einsum('bij,bjk->bik', E(5, 2, 3), E(5, 3, 4))", "a:f32[5,2,3] b:f32[5,3,4]",
          "einsum(\"bij,bjk->bik\", a, b)", S(5, 2, 4)),
    SHAPE("einsum('i,j->ij', E(3), E(4))", "a:f32[3] b:f32[4]", "einsum(\"i,j->ij\", a, b)",
          S(3, 4)),
    SHAPE("einsum('...ij,...jk->...ik', E(2, 1, 2, 3), E(5, 3, 4))", "a:f32[2,1,2,3] b:f32[5,3,4]",
          "einsum(\"...ij,...jk->...ik\", a, b)", S(2, 5, 2, 4)),
    SHAPE("einsum('...ij,...jk', E(2, 1, 2, 3), E(5, 3, 4))", "a:f32[2,1,2,3] b:f32[5,3,4]",
          "einsum(\"...ij,...jk\", a, b)", S(2, 5, 2, 4)),
    SHAPE("einsum('ij->', E(2, 3))", "a:f32[2,3]", "einsum(\"ij->\", a)", S0),
    SHAPE("einsum('i,i->', E(3), E(3))", "a:f32[3] b:f32[3]", "einsum(\"i,i->\", a, b)", S0),
    SHAPE("einsum('bhqd,bhkd->bhqk', E(2, 4, 5, 8), E(2, 4, 6, 8))",
          "a:f32[2,4,5,8] b:f32[2,4,6,8]", "einsum(\"bhqd,bhkd->bhqk\", a, b)", S(2, 4, 5, 6)),
    SHAPE("einsum('ij,ij->ij', E(2, 1), E(2, 3))", "a:f32[2,1] b:f32[2,3]",
          "einsum(\"ij,ij->ij\", a, b)", S(2, 3)),
    SHAPE("einsum('ij -> ji', E(2, 3))", "a:f32[2,3]", "einsum(\"ij -> ji\", a)", S(3, 2)),
    SHAPE("einsum('i...->...', E(2, 3, 4))", "a:f32[2,3,4]", "einsum(\"i...->...\", a)", S(3, 4)),
    SHAPE("einsum('bij->jb', E(2, 3, 4))", "a:f32[2,3,4]", "einsum(\"bij->jb\", a)", S(4, 2)),
    SHAPE("einsum('...ij,jk->...ik', E(5, 2, 3), E(3, 4))", "c:f32[5,2,3] b:f32[3,4]",
          "einsum(\"...ij,jk->...ik\", c, b)", S(5, 2, 4)),
    SHAPE("einsum('ij,jk->ki', E(2, 3), E(3, 4))", "a:f32[2,3] b:f32[3,4]",
          "einsum(\"ij,jk->ki\", a, b)", S(4, 2)),
    SHAPE("einsum('Ij,jK->IK', E(2, 3), E(3, 4))", "a:f32[2,3] b:f32[3,4]",
          "einsum(\"Ij,jK->IK\", a, b)", S(2, 4)),
    SHAPE("einsum('ij->...ij', E(2, 3))", "a:f32[2,3]", "einsum(\"ij->...ij\", a)", S(2, 3)),
    SHAPE("einsum('..., ...', E(2, 3), E(3))", "a:f32[2,3] v:f32[3]", "einsum(\"..., ...\", a, v)",
          S(2, 3)),
    SHAPE("einsum('i...i', E(2, 2, 2))", "a:f32[2,2,2]", "einsum(\"i...i\", a)", S(2)),
    SHAPE("einsum('iij->j', E(2, 2, 4))", "a:f32[2,2,4]", "einsum(\"iij->j\", a)", S(4)),
    SHAPE("einsum('->', E(()))", "z:f32[]", "einsum(\"->\", z)", S0),
    SHAPE("E(0, 3) @ E(3, 4)", "e:f32[0,3] b:f32[3,4]", "e @ b", S(0, 4)),
    SHAPE("torch.stack([E(2, 3, 4)])", "x:f32[2,3,4]", "stack([x])", S(1, 2, 3, 4)),
    SHAPE("torch.cat([E(2, 3).T, E(2, 3).T], 1)", "a:f32[2,3]", "cat([a.T, a.T], 1)", S(3, 4)),
    SHAPE("E(()).sum(0)", "z:f32[]", "z.sum(0)", S0),
    SHAPE("torch.stack([E(()), E(())])", "z:f32[]", "stack([z, z])", S(2)),
    SHAPE("E(()).argmax(dim=0)", "z:f32[]", "z.argmax(dim=0)", S0),
    SHAPE("E(2, 3, 4).mean([])  (all dims in PyTorch 1.13)", "x:f32[2,3,4]", "x.mean([])", S0),
    /* reductions with keepdim and negative dims */
    SHAPE("x.sum()", "x:f32[2,3,4]", "x.sum()", S0),
    SHAPE("x.sum(1)", "x:f32[2,3,4]", "x.sum(1)", S(2, 4)),
    SHAPE("x.sum(-1, keepdim=True)", "x:f32[2,3,4]", "x.sum(-1, keepdim=true)", S(2, 3, 1)),
    SHAPE("x.sum([0, 2])", "x:f32[2,3,4]", "x.sum([0, 2])", S(3)),
    SHAPE("x.sum([0, -1], keepdim=True)", "x:f32[2,3,4]", "sum(x, dim=[0, -1], keepdim=true)",
          S(1, 3, 1)),
    SHAPE("x.sum(dim=[])  (all dims in PyTorch 1.13)", "x:f32[2,3,4]", "x.sum(dim=[])", S0),
    SHAPE("x.mean(dim=(0, 1))", "x:f32[2,3,4]", "x.mean(dim=(0, 1))", S(4)),
    SHAPE("x.amax(-2)", "x:f32[2,3,4]", "x.amax(-2)", S(2, 4)),
    SHAPE("x.amin([0, 1], keepdim=True)", "x:f32[2,3,4]", "x.amin([0, 1], keepdim=true)",
          S(1, 1, 4)),
    SHAPE_OF("x.argmax()", "x:f32[2,3,4]", "x.argmax()", "r", S0, DT_I64),
    SHAPE_OF("x.argmax(dim=1, keepdim=True)", "x:f32[2,3,4]", "x.argmax(dim=1, keepdim=true)", "r",
             S(2, 1, 4), DT_I64),
    SHAPE("x.var(1)", "x:f32[2,3,4]", "x.var(1)", S(2, 4)),
    SHAPE("x.std()", "x:f32[2,3,4]", "x.std()", S0),
    SHAPE("x.std(dim=[1, 2], correction=0, keepdim=True)", "x:f32[2,3,4]",
          "x.std(dim=[1, 2], correction=0, keepdim=true)", S(2, 1, 1)),
    SHAPE("x.logsumexp(-1)", "x:f32[2,3,4]", "x.logsumexp(-1)", S(2, 3)),
    SHAPE_OF("x.max(dim=1).values", "x:f32[2,3,4]", "v, i = x.max(dim=1)\noutput v\noutput i", "v",
             S(2, 4), DT_F32),
    SHAPE_OF("x.max(dim=1).indices", "x:f32[2,3,4]", "v, i = x.max(dim=1)\noutput v\noutput i", "i",
             S(2, 4), DT_I64),
    SHAPE_OF("x.min(dim=-1, keepdim=True).values", "x:f32[2,3,4]",
             "v, i = x.min(dim=-1, keepdim=true)\noutput v\noutput i", "v", S(2, 3, 1), DT_F32),
    SHAPE_OF("x.max()", "x:f32[2,3,4]", "x.max()", "r", S0, DT_F32),
    SHAPE("x.prod(1)", "x:f32[2,3,4]", "x.prod(1)", S(2, 4)),
    SHAPE("x.prod(-1, keepdim=True)", "x:f32[2,3,4]", "x.prod(-1, keepdim=true)", S(2, 3, 1)),
    SHAPE_OF("(x > 0).all()", "x:f32[2,3,4]", "(x > 0).all()", "r", S0, DT_BOOL),
    SHAPE_OF("(x > 0).any(0)", "x:f32[2,3,4]", "(x > 0).any(0)", "r", S(3, 4), DT_BOOL),
    SHAPE("(x > 0).all(dim=-1, keepdim=True)", "x:f32[2,3,4]", "(x > 0).all(dim=-1, keepdim=true)",
          S(2, 3, 1)),
    SHAPE("torch.softmax(x, -1)", "x:f32[2,3,4]", "softmax(x, -1)", S(2, 3, 4)),
    SHAPE("F.layer_norm(x, [4])", "x:f32[2,3,4]", "layer_norm(x, [4])", S(2, 3, 4)),
    /* cat and stack */
    SHAPE("torch.cat([E(2, 3), E(4, 3)])", "a:f32[2,3] b:f32[4,3]", "cat([a, b])", S(6, 3)),
    SHAPE("torch.cat([E(2, 3), E(2, 5)], dim=1)", "a:f32[2,3] b:f32[2,5]", "cat([a, b], dim=1)",
          S(2, 8)),
    SHAPE("torch.cat([E(2, 3), E(2, 5), E(2, 1)], dim=-1)", "a:f32[2,3] b:f32[2,5] c:f32[2,1]",
          "cat([a, b, c], dim=-1)", S(2, 9)),
    SHAPE("torch.cat([E(2, 3)])", "a:f32[2,3]", "cat([a])", S(2, 3)),
    SHAPE_OF("torch.cat([E(2, dtype=int32), E(2, dtype=float16)])", "a:i32[2] b:f16[2]",
             "cat([a, b])", "r", S(4), DT_F16),
    SHAPE("torch.stack([E(2, 3), E(2, 3)])", "a:f32[2,3] b:f32[2,3]", "stack([a, b])", S(2, 2, 3)),
    SHAPE("torch.stack([E(2, 3), E(2, 3)], dim=1)", "a:f32[2,3] b:f32[2,3]", "stack([a, b], dim=1)",
          S(2, 2, 3)),
    SHAPE("torch.stack([E(2, 3)] * 3, dim=2)", "a:f32[2,3] b:f32[2,3]", "stack([a, b, a], dim=2)",
          S(2, 3, 3)),
    SHAPE("torch.stack([E(2, 3), E(2, 3)], dim=-1)", "a:f32[2,3] b:f32[2,3]",
          "stack([a, b], dim=-1)", S(2, 3, 2)),
    SHAPE("torch.stack([E(2, 3), E(2, 3)], dim=-3)", "a:f32[2,3] b:f32[2,3]",
          "stack([a, b], dim=-3)", S(2, 2, 3)),
    /* broadcasting */
    SHAPE("E(2, 1, 4) + E(3, 1)", "a:f32[2,1,4] b:f32[3,1]", "a + b", S(2, 3, 4)),
    SHAPE("torch.where(E(3, 1) > 0, E(4), 0.0)", "c:f32[3,1] a:f32[4]", "where(c > 0, a, 0.0)",
          S(3, 4)),
};

typedef struct ErrCase {
    int line;
    const char *torch_msg; /* what PyTorch 1.13 says */
    const char *decls;
    const char *body;
    const char *message; /* a part of tgc's message */
} ErrCase;

static void run_error_case(void *arg) {
    const ErrCase *k = arg;
    char src[2048];
    make_source(src, sizeof src, k->decls, k->body);
    Compiled c;
    unit_context = k->body;
    Graph *g = compile_src(&c, src);
    unit_check(g == NULL, __FILE__, k->line, "the source is rejected");
    unit_check(c.diag.errors > 0, __FILE__, k->line, "Diag errors > 0");
    /* every error names the file, line and column */
    unit_check(c.msgs && strstr(c.msgs, "u.tg:") && strstr(c.msgs, ": error: "), __FILE__, k->line,
               "an error with file:line:col");
    if (k->message &&
        !unit_check(c.msgs && strstr(c.msgs, k->message), __FILE__, k->line, "the message"))
        printf("    wanted \"%s\" (PyTorch: \"%s\") in:\n%s", k->message, k->torch_msg,
               c.msgs ? c.msgs : "");
    unit_context = NULL;
    compiled_free(&c);
}

#define ERR(torch_msg, decls, body, message)                                                       \
    { __LINE__, torch_msg, decls, body, message }

static const ErrCase error_cases[] = {
    ERR("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)", "a:f32[2,3] b:f32[4,5]", "a @ b",
        "cannot be multiplied"),
    ERR("both arguments to matmul need to be at least 1D, but they are 0D and 1D",
        "a:f32[] b:f32[3]", "a @ b", "1D"),
    ERR("The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0",
        "a:f32[2,2,3] b:f32[3,3,4]", "a @ b", "do not broadcast"),
    ERR("inner dims of 1-D @ 2-D", "a:f32[4] b:f32[3,4]", "a @ b", NULL),
    ERR("self must be a matrix", "a:f32[2,2,3] b:f32[3,4]", "mm(a, b)", NULL),
    ERR("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)", "a:f32[2,3] b:f32[4,5]",
        "mm(a, b)", NULL),
    ERR("batch1 must be a 3D tensor", "a:f32[2,3] b:f32[3,4]", "bmm(a, b)", NULL),
    ERR("Expected size for first two dimensions of batch2 tensor to be: [5, 3] but got: [4, 3].",
        "a:f32[5,2,3] b:f32[4,3,4]", "bmm(a, b)", NULL),
    ERR("size mismatch, got 2, 2x3,4", "a:f32[2,3] b:f32[4]", "mv(a, b)", NULL),
    ERR("mat1 and mat2 shapes cannot be multiplied (2x3 and 5x4)", "a:f32[2,3] w:f32[4,5]",
        "linear(a, w)", NULL),
    ERR("einsum(): fewer operands were provided than specified in the equation", "a:f32[2,3]",
        "einsum(\"ij,jk->ik\", a)", NULL),
    ERR("einsum(): the number of subscripts in the equation (3) does not match the number of "
        "dimensions (2) for operand 0",
        "a:f32[2,3] b:f32[3,4]", "einsum(\"ijk,jk->ik\", a, b)", NULL),
    ERR("einsum(): subscript j has size 4 for operand 1 which does not broadcast with previously "
        "seen size 3",
        "a:f32[2,3] b:f32[4,4]", "einsum(\"ij,jk->ik\", a, b)", NULL),
    ERR("einsum(): output subscript l does not appear in the equation for any input operand",
        "a:f32[2,3] b:f32[3,4]", "einsum(\"ij,jk->il\", a, b)", NULL),
    ERR("einsum(): output subscript i appears more than once in the output",
        "a:f32[2,3] b:f32[3,4]", "einsum(\"ij,jk->iki\", a, b)", NULL),
    ERR("einsum(): invalid subscript given at index 1 in the equation string",
        "a:f32[2,3] b:f32[3,4]", "einsum(\"i1,1k->ik\", a, b)", NULL),
    ERR("einsum(): output subscript i appears more than once in the output", "v:f32[3]",
        "einsum(\"i->ii\", v)", NULL),
    ERR("einsum(): more operands were provided than specified in the equation",
        "a:f32[2,3] b:f32[3,4]", "einsum(\"ij,jk->ik\", a, b, b)", NULL),
    ERR("einsum(): dimension 0 covered by ellipsis in operand 1 has size 4 which does not "
        "broadcast",
        "v:f32[3] w:f32[4]", "einsum(\"...,...->...\", v, w)", NULL),
    ERR("inconsistent tensor size, expected tensor [3] and src [4] to have the same number of "
        "elements",
        "v:f32[3] w:f32[4]", "v @ w", NULL),
    ERR("torch.cat(): expected a non-empty list of Tensors", "a:f32[2]", "cat([])", NULL),
    ERR("stack expects a non-empty TensorList", "a:f32[2]", "stack([])", NULL),
    ERR("Dimension out of range (expected to be in range of [-3, 2], but got 3)", "x:f32[2,3,4]",
        "x.sum(3)", "out of range"),
    ERR("dim 1 appears multiple times in the list of dims", "x:f32[2,3,4]", "x.sum([1, 1])",
        "multiple times"),
    ERR("Dimension out of range (expected to be in range of [-3, 2], but got -4)", "x:f32[2,3,4]",
        "x.amax(-4)", "out of range"),
    ERR("Dimension out of range (max with dim 3)", "x:f32[2,3,4]", "v, i = x.max(dim=3)\noutput v",
        "out of range"),
    ERR("mean(): could not infer output dtype. Input dtype must be either a floating point or "
        "complex dtype. Got: Int",
        "x:i32[2,3]", "x.mean()", NULL),
    ERR("Dimension out of range (softmax dim 3)", "x:f32[2,3,4]", "softmax(x, 3)", "out of range"),
    ERR("Given normalized_shape=[3], expected input with shape [*, 3], but got input of size[2, 3, "
        "4]",
        "x:f32[2,3,4]", "layer_norm(x, [3])", NULL),
    ERR("Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for "
        "tensor number 1 in the list.",
        "a:f32[2,3] b:f32[2,4]", "cat([a, b])", NULL),
    ERR("Dimension out of range (expected to be in range of [-2, 1], but got 2)",
        "a:f32[2,3] b:f32[2,3]", "cat([a, b], dim=2)", "out of range"),
    ERR("Tensors must have same number of dimensions: got 2 and 3", "a:f32[2,3] b:f32[2,3,1]",
        "cat([a, b])", NULL),
    ERR("stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [3, 2] at entry "
        "1",
        "a:f32[2,3] b:f32[3,2]", "stack([a, b])", NULL),
    ERR("Dimension out of range (expected to be in range of [-3, 2], but got 3)",
        "a:f32[2,3] b:f32[2,3]", "stack([a, b], dim=3)", "out of range"),
    ERR("The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1",
        "a:f32[2,3] b:f32[4]", "a + b", NULL),
    ERR("2 names bound to 3 values", "x:f32[6]", "a, b = x.chunk(3)\noutput a", NULL),
};

/* The broadcast error names both shapes and the offending dimension (spec: "Broadcasting"). */
static void test_broadcast_message(void *unused) {
    (void)unused;
    Compiled c;
    compile_src(&c, "graph g\ninput a : f32[2, 3]\ninput b : f32[4]\noutput r = a + b\n");
    CHECK(c.g == NULL);
    CHECK(c.msgs && strstr(c.msgs, "u.tg:4:"));
    CHECK(c.msgs && strstr(c.msgs, "[2, 3]"));
    CHECK(c.msgs && strstr(c.msgs, "[4]"));
    if (c.msgs && !(strstr(c.msgs, "[2, 3]") && strstr(c.msgs, "[4]"))) printf("%s", c.msgs);
    compiled_free(&c);
    /* Several independent shape errors are all reported. */
    compile_src(&c, "graph g\ninput a : f32[2, 3]\ninput b : f32[4, 5]\n"
                    "c = a @ b\nd = a + b\ne = mm(b, a)\noutput r = a.sum()\n");
    CHECK(c.g == NULL);
    CHECK_INT(3, c.diag.errors);
    CHECK(c.msgs && strstr(c.msgs, "u.tg:4:"));
    CHECK(c.msgs && strstr(c.msgs, "u.tg:5:"));
    CHECK(c.msgs && strstr(c.msgs, "u.tg:6:"));
    compiled_free(&c);
}

int main(void) {
    char name[256];
    for (size_t i = 0; i < sizeof shape_cases / sizeof *shape_cases; i++) {
        snprintf(name, sizeof name, "%s, line %d", shape_cases[i].torch, shape_cases[i].line);
        unit_isolated(name, run_shape_case, (void *)&shape_cases[i]);
    }
    for (size_t i = 0; i < sizeof error_cases / sizeof *error_cases; i++) {
        snprintf(name, sizeof name, "%s, line %d", error_cases[i].body, error_cases[i].line);
        unit_isolated(name, run_error_case, (void *)&error_cases[i]);
    }
    unit_isolated("broadcast messages", test_broadcast_message, NULL);
    return unit_report("test_infer");
}
