/* Classifies a batch of random inputs with the MLP of examples/mlp.tg,
 * compiled at build time by tgc_add_model() (see CMakeLists.txt):
 *
 *   classify [WEIGHTS.safetensors|-] [PROBS_OUT] [INPUT_F32]
 *
 * WEIGHTS: the weights (- or absent: the graph's initialisers). PROBS_OUT:
 * where to write the probabilities as raw little-endian f32, batch x 10.
 * INPUT_F32: the input as raw f32, batch x 784 (absent: uniform random
 * values in [0, 1) from a fixed seed). Prints each row's class and
 * probabilities. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlp_model.h"

static int read_input(const char *path, float *x, size_t bytes) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    size_t n = fread(x, 1, bytes, f);
    int extra = fgetc(f);
    fclose(f);
    if (n != bytes || extra != EOF) {
        fprintf(stderr, "%s: expected %zu bytes of f32 input\n", path, bytes);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *weights = argc > 1 && strcmp(argv[1], "-") ? argv[1] : NULL;
    const char *probs_path = argc > 2 ? argv[2] : NULL;
    const char *input_path = argc > 3 ? argv[3] : NULL;

    size_t in_bytes = mlp_input_bytes(0), out_bytes = mlp_output_bytes(0);
    size_t classes = 10, batch = out_bytes / sizeof(float) / classes;
    float *x = malloc(in_bytes), *probs = malloc(out_bytes);
    mlp_ctx *ctx = NULL;
    int rc = 1;
    if (!x || !probs) goto out;
    if (input_path) {
        if (read_input(input_path, x, in_bytes)) goto out;
    } else {
        unsigned long long s = 42;
        for (size_t i = 0; i < in_bytes / sizeof(float); i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            x[i] = (float)(s >> 40) / (float)(1 << 24);
        }
    }

    if (mlp_create(&ctx, weights, 0) != mlp_OK || mlp_run(ctx, x, probs) != mlp_OK) {
        fprintf(stderr, "classify: %s\n", ctx ? mlp_error(ctx) : "out of memory");
        goto out;
    }
    for (size_t r = 0; r < batch; r++) {
        const float *p = probs + r * classes;
        size_t best = 0;
        for (size_t c = 1; c < classes; c++)
            if (p[c] > p[best]) best = c;
        printf("row %zu: class %zu (p=%.4f) probs:", r, best, p[best]);
        for (size_t c = 0; c < classes; c++)
            printf(" %.4f", p[c]);
        printf("\n");
    }
    if (probs_path) {
        FILE *f = fopen(probs_path, "wb");
        if (!f || fwrite(probs, 1, out_bytes, f) != out_bytes || fclose(f) != 0) {
            perror(probs_path);
            goto out;
        }
    }
    rc = 0;
out:
    mlp_destroy(ctx);
    free(x);
    free(probs);
    return rc;
}
