/* The same-file check of outputs.h. Identity is (device, inode) from
 * stat(), which follows symbolic links, so a link to the input is the
 * input. An output that does not exist yet is identified by its
 * directory's (device, inode) and its last name, so `-o x.o --header x.o`
 * and `-o x.o --header ./x.o` are caught before either exists
 * (runtime/file_id.c, shared with the compiled executables). */
#include "driver/outputs.h"

#include <stdio.h>

#include "rt_file_id.h"

bool outputs_distinct(const char *cmd, const IoPath *inputs, int nin, const IoPath *outputs,
                      int nout) {
    RtFileId in[8], out[8];
    if (nin > 8 || nout > 8) return true; /* callers name a handful */
    for (int i = 0; i < nin; i++)
        in[i] = rt_file_id(inputs[i].path, false);
    for (int i = 0; i < nout; i++)
        out[i] = rt_file_id(outputs[i].path, true);
    for (int i = 0; i < nout; i++) {
        for (int j = 0; j < nin; j++)
            if (rt_same_file(&out[i], &in[j])) {
                fprintf(stderr, "tgc %s: error: output '%s' (%s) is the same file as %s '%s'\n",
                        cmd, outputs[i].path, outputs[i].what, inputs[j].what, inputs[j].path);
                return false;
            }
        for (int j = 0; j < i; j++)
            if (rt_same_file(&out[i], &out[j])) {
                fprintf(stderr,
                        "tgc %s: error: output '%s' (%s) is the same file as output '%s' (%s)\n",
                        cmd, outputs[i].path, outputs[i].what, outputs[j].path, outputs[j].what);
                return false;
            }
    }
    return true;
}
