/* Runs the model of convnet.tg, compiled by tgc into convnet_model.o and
 * convnet_model.h, once: the integration suite links this program three
 * ways (the header's line, pkg-config tgcrt, find_package(tgc) with
 * tgc_add_model) and compares what it writes with PyTorch.
 *
 *   convnet WEIGHTS.safetensors INPUT_F32 OUTPUT_F32
 *
 * INPUT_F32 and OUTPUT_F32: raw little-endian f32 of the graph's input x
 * and output y. */
#include <stdio.h>
#include <stdlib.h>

#include "convnet_model.h"

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: convnet WEIGHTS.safetensors INPUT_F32 OUTPUT_F32\n");
        return 2;
    }
    size_t in_bytes = convnet_input_bytes(0), out_bytes = convnet_output_bytes(0);
    float *x = malloc(in_bytes), *y = malloc(out_bytes);
    convnet_ctx *ctx = NULL;
    int rc = 1;
    FILE *f = fopen(argv[2], "rb");
    if (!x || !y || !f || fread(x, 1, in_bytes, f) != in_bytes) {
        fprintf(stderr, "convnet: cannot read %zu bytes of input from %s\n", in_bytes, argv[2]);
        goto out;
    }
    if (convnet_create(&ctx, argv[1], 1) != convnet_OK || convnet_run(ctx, x, y) != convnet_OK) {
        fprintf(stderr, "convnet: %s\n", ctx ? convnet_error(ctx) : "out of memory");
        goto out;
    }
    FILE *o = fopen(argv[3], "wb");
    if (!o || fwrite(y, 1, out_bytes, o) != out_bytes || fclose(o) != 0) {
        perror(argv[3]);
        goto out;
    }
    rc = 0;
out:
    if (f) fclose(f);
    convnet_destroy(ctx);
    free(x);
    free(y);
    return rc;
}
