/* The C side of the CUDA suite's `tgc compile --target cuda` check (see
 * run_cuda.py): includes the generated header (-DTGC_HEADER='"g.h"'),
 * whose graph name is -DTGC_GRAPH=g, and links the object with libtgcrt.
 *
 * Usage: cuda_main WEIGHTS.safetensors
 *
 * Creates a context from the weights path, then another from the same file
 * read into memory, and prints for each:
 *   CREATE path|memory RC ctx|null MESSAGE
 * Where a context was created (a machine with a GPU), it also runs the graph
 * once on zero-filled inputs and prints RUN RC MESSAGE. It prints the size
 * queries as QUERY lines; run_cuda.py judges all of it. Exit status 0 unless
 * the program itself failed (a file it cannot read). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include TGC_HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define API(x) CAT(TGC_GRAPH, x)

typedef API(_ctx) Ctx;

static void one_line(const char *s) {
    for (; s && *s; s++)
        putchar(*s == '\n' ? ' ' : *s);
    putchar('\n');
}

static int try_run(Ctx *ctx) {
    int ni = API(_num_inputs)(), no = API(_num_outputs)();
    const void **in = calloc((size_t)ni + 1, sizeof *in);
    void **out = calloc((size_t)no + 1, sizeof *out);
    int rc = -1;
    if (!in || !out) goto done;
    for (int i = 0; i < ni; i++)
        if (!(in[i] = calloc(1, API(_input_bytes)(i) + 1))) goto done;
    for (int i = 0; i < no; i++)
        if (!(out[i] = calloc(1, API(_output_bytes)(i) + 1))) goto done;
    rc = API(_run_buffers)(ctx, (const void *const *)in, (void *const *)out);
    printf("RUN %d ", rc);
    one_line(API(_error)(ctx));
done:
    for (int i = 0; in && i < ni; i++)
        free((void *)in[i]);
    for (int i = 0; out && i < no; i++)
        free(out[i]);
    free(in);
    free(out);
    return rc;
}

static void report(const char *how, int rc, Ctx *ctx) {
    printf("CREATE %s %d %s ", how, rc, ctx ? "ctx" : "null");
    one_line(ctx ? API(_error)(ctx) : "");
    if (rc == 0 && ctx) try_run(ctx);
    API(_destroy)(ctx);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: cuda_main WEIGHTS.safetensors\n");
        return 2;
    }
    printf("QUERY num_inputs %d\nQUERY num_outputs %d\nQUERY arena_bytes %zu\n", API(_num_inputs)(),
           API(_num_outputs)(), API(_arena_bytes)());
    Ctx *ctx = NULL;
    int rc = API(_create)(&ctx, argv[1], 0);
    report("path", rc, ctx);

    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        fclose(f);
        free(buf);
        return 1;
    }
    fclose(f);
    ctx = NULL;
    rc = API(_create_from_memory)(&ctx, buf, (size_t)n, 0);
    report("memory", rc, ctx);
    free(buf);
    return 0;
}
