/* No command writes over one of its own inputs (cli.md): the files a
 * command reads and the files it writes, compared by identity. */
#ifndef TGC_OUTPUTS_H
#define TGC_OUTPUTS_H
#include <stdbool.h>

/* One file a command names: path (NULL when the flag was not given) and
 * what it is, for the message ("the input graph", "-o", "--header"...). */
typedef struct IoPath {
    const char *what;
    const char *path;
} IoPath;

/* False, with "tgc CMD: error: output 'A' (WHAT) is the same file as the
 * input graph 'B'" on stderr, when an output is the same file as an input
 * or as another output: the same device and inode, however spelled (hard
 * and symbolic links included); for outputs that do not exist yet, the
 * same directory and name. Character devices (/dev/null) are exempt:
 * writing one never destroys it. Inputs that do not exist are skipped
 * (the command reports them itself). */
bool outputs_distinct(const char *cmd, const IoPath *inputs, int nin, const IoPath *outputs,
                      int nout);
#endif
