/* What the executables' two mains share (exe_main.c: rt_main, for
 * inference; train_main.c: rt_train_main, for training): the command
 * line, messages and exit codes, inputs named on the command line, the
 * output directory, the check that nothing written is a file read, and
 * writing an output. Internal to the runtime. */
#ifndef TGCRT_EXE_INTERNAL_H
#define TGCRT_EXE_INTERNAL_H
#include "rt_internal.h"

typedef struct RtExeArgs {
    bool train; /* a training executable's flags (rt_train_main) */
    const char *prog, *weights, *outdir;
    const char **in_name, **in_file; /* --input, in command-line order */
    int nin;
    bool random, print, help, bench_set, threads_set, outdir_set;
    bool profile;             /* --profile: print the profiler's table after the runs */
    const char *profile_json; /* --profile-json FILE: its Chrome trace */
    uint64_t seed;
    long long bench, threads;
    /* training only */
    bool steps_set, log_set;
    long long steps, log_every;
    const char *save_weights, *save_state, *load_state;
    bool shuffle_set; /* --shuffle SEED: batches in a random order each epoch */
    uint64_t shuffle_seed;
    bool dropout_seed_set; /* --seed S: dropout's key (the param __dropout_seed) */
    uint64_t dropout_seed;
} RtExeArgs;

/* --shuffle: the order in which epoch `epoch` reads k batches, perm[0..k)
 * (train.c; the algorithm is docs/training.md's "Shuffling"). */
void rt_train_shuffle(uint64_t seed, uint64_t epoch, int64_t k, int64_t *perm);

/* "EXE: error: MESSAGE" on stderr; returns code. */
int rt_exe_error(const RtExeArgs *a, int code, const char *fmt, ...) RT_PRINTF(3, 4);
/* The same with the usage line after it; returns 2. */
int rt_exe_usage_error(const RtExeArgs *a, const char *fmt, const char *arg);
/* A decimal integer in [0, max]: digits only, no sign, no spaces. */
bool rt_exe_parse_count(const char *s, unsigned long long max, unsigned long long *out);
/* The flags after the program's name, for "usage:" lines and --help. */
const char *rt_exe_usage(const RtExeArgs *a);
/* Names the program (argv[0]'s last component) and parses the flags of
 * the mode a->train selects into a (which keeps pointers into argv): 0, or
 * the exit code to return (2: a bad command line, said). Free with
 * rt_exe_args_free, whatever it returned. */
int rt_exe_args_parse(RtExeArgs *a, const RtProgram *p, int argc, char **argv);
void rt_exe_args_free(RtExeArgs *a);
/* The file --input gives the input `name`, NULL if none. */
const char *rt_exe_input_file(const RtExeArgs *a, const char *name);
/* Every --input names an input, once; every input is given (training, or
 * no --random-inputs). 0 or exit code 1, said. */
int rt_exe_check_inputs(const RtProgram *p, const RtExeArgs *a);
/* Creates --output-dir when missing (mkdir -p) and checks it is a
 * writable directory. 0 or 1, said. */
int rt_exe_check_outdir(const RtExeArgs *a);
/* No file the run will write (outputs in --output-dir: every output, or
 * for training the user outputs when --output-dir is given; --save-weights;
 * --save-state) is, by device and inode, a file it reads (--input,
 * --weights, --load-state) or another file it writes. 0 or 1, said. */
int rt_exe_check_files(const RtProgram *p, const RtExeArgs *a);
/* Writes output t's data (its declared dtype) to OUTDIR/NAME.npy. 0 or
 * the exit code, said. */
int rt_exe_write_output(const RtExeArgs *a, const RtTensorInfo *t, const void *data);
/* --profile / --profile-json on a program that cannot profile (a CUDA
 * program, not yet): 1, said, before anything runs; else 0. */
int rt_exe_profile_check(const RtExeArgs *a, const RtProgram *p);
/* --profile / --profile-json: starts recording c's runs (0), or says why
 * it cannot (1 or the status's code). */
int rt_exe_profile_start(const RtExeArgs *a, RtContext *c);
/* After the runs: the table (measured_us: the median time of the same
 * runs as the caller measured them) and the trace file. 0 or the exit
 * code, said. */
int rt_exe_profile_finish(const RtExeArgs *a, RtContext *c, double measured_us);
#endif
