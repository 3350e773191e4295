/* No command writes over one of its own inputs (cli.md). A command gathers
 * every file it reads (the graph, the weights, inputs, an ONNX model's
 * external data files) and every file it will write (-o, --header,
 * --html, each --emit listing, each DIR/NAME.npy of tgc run) into one
 * IoSet, and checks them all at once, before it writes anything. */
#ifndef TGC_OUTPUTS_H
#define TGC_OUTPUTS_H
#include <stdbool.h>

/* One file: what it is, for the message ("the input graph", "-o",
 * "--emit llvm"...), its path, and whether it is written. */
typedef struct IoEntry {
    char *what, *path;
    bool written;
} IoEntry;

typedef struct IoSet {
    const char *cmd;
    IoEntry *e;
    int n, cap;
    bool oom;
} IoSet;

void ioset_init(IoSet *s, const char *cmd);
/* Adds a file read or written; a NULL path (a flag not given) is none. */
void ioset_read(IoSet *s, const char *what, const char *path);
void ioset_write(IoSet *s, const char *what, const char *path);
/* Adds n files read, all of one kind (an ONNX model's external data). */
void ioset_read_all(IoSet *s, const char *what, const char *const *paths, int n);
/* False, with "tgc CMD: error: output 'A' (WHAT) is the same file as the
 * input graph 'B'" on stderr, when a file written is the same file as one
 * read or as another written: the same device and inode, however spelled
 * (hard and symbolic links included); for outputs that do not exist yet,
 * the same directory and name. Character devices (/dev/null) are exempt:
 * writing one never destroys it. Inputs that do not exist are skipped
 * (the command reports them itself). */
bool ioset_check(const IoSet *s);
void ioset_free(IoSet *s);
#endif
