/* libFuzzer target for the ONNX importer: protobuf bytes -> .tg text ->
 * checked IR, as `tgc check MODEL.onnx` runs them.
 *
 * The bytes are libFuzzer's buffer itself, so a read past their end is an
 * AddressSanitizer report. No path is given: external data is refused (the
 * fuzzer never opens files). A model that imports is compiled by the .tg
 * front end; text it rejects is an importer weakness, not a crash, so only
 * crashes, sanitizer reports, leaks and internal errors count. Half the
 * inputs (by their last byte) import with -D batch=3, the name torch's
 * exports give dynamic batch axes, to run the symbolic-dim paths. */
#include <stdint.h>
#include <stdio.h>

#include "frontend/frontend.h"
#include "frontend/onnx/onnx_import.h"
#include "support/arena.h"
#include "support/diag.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Arena a = {0};
    Diag d;
    diag_init(&d, NULL);
    DimOverride ov = {"batch", 3, 3, false};
    int nov = size && (data[size - 1] & 1) ? 1 : 0;
    OnnxImport im;
    if (onnx_import(&a, &d, NULL, data, size, &ov, nov, &im)) {
        SrcFile f = {"fuzz.onnx (imported)", im.text, im.len};
        Diag d2;
        diag_init(&d2, NULL);
        tgc_frontend(&a, &d2, &f, &ov, nov, NULL);
        onnx_import_free(&im);
    }
    arena_free(&a);
    return 0;
}
