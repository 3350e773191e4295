/* `tgc report`: every figure is computed once, here, into a Report; the
 * text, JSON and HTML writers only format it. */
#ifndef TGC_REPORT_H
#define TGC_REPORT_H
#include <stdio.h>

#include "driver/devices.h"
#include "driver/report_process.h"
#include "passes/memplan.h"
#include "passes/precision.h"

typedef enum { TARGET_CPU, TARGET_CUDA } Target;

/* One storage choice for the weights (the by_dtype table). */
typedef struct ReportQuant {
    const char *dtype;  /* f32 bf16 f16 mixed-bf16 mixed-f16 int8 int4 */
    const char *scheme; /* what is stored how */
    PrecisionPolicy policy;
    int64_t params_bytes, scale_bytes, peak_bytes; /* -1: the graph does not build so */
    bool has_error;                                /* --accuracy measured it */
    bool refused; /* a training step: --train does not build this choice (no figures) */
    double max_abs, max_rel;
} ReportQuant;
#define REPORT_NQUANT 7

/* --fit DIM: the largest value whose peak fits the budget. */
typedef struct ReportFit {
    bool present;
    const char *dim;
    int64_t value;     /* 0: does not fit even at 1 */
    int64_t peak_at;   /* peak at value (-1 when value is 0) */
    int64_t peak_next; /* peak at value + 1 (-1 when the graph does not compile there) */
    bool capped;       /* the search stopped at cap, which fits */
    int64_t cap;
    int evaluations;
    int64_t failed_value; /* a value at which the graph did not compile (treated as no fit), or 0 */
    int64_t first_value;  /* the smallest value tried that compiles (0: none of 1..64 does) */
} ReportFit;

typedef struct Report {
    Arena *a;
    const Graph *g;
    Precision prec;
    const char
        *prec_name; /* the figure's precision: f32, f16, bf16, or a declared dtype / "mixed" */
    Target target;
    const DType *dt; /* storage dtype by Value.order */
    Schedule *sched;
    struct KernelPlan *kernels; /* fused kernels: the steps shown */
    MemPlan *plan;
    int64_t params_count, params_bytes;
    int nparams, ninputs, noutputs;
    int64_t inputs_bytes, outputs_bytes;
    int64_t fixed_bytes; /* the runtime's own needs on the target */
    /* The larger of the run's peak (resident params + inputs + outputs +
     * arena + fixed + prepared conv weights) and the load's (resident
     * params + fixed + prepared + one conv's plain weights). */
    int64_t peak_bytes;
    int64_t run_peak_bytes, load_peak_bytes;
    ReportProcess proc;         /* params released after preparation, the load's transient */
    int64_t conv_scratch_bytes; /* part of the arena: oneDNN's scratchpad (largest conv) */
    int64_t attn_scratch_bytes; /* part of the arena: attention blocks (shares the conv tail) */
    int64_t qmm_scratch_bytes;  /* part of the arena: a weight CUDA dequantizes (same tail) */
    int64_t
        conv_prepared_bytes; /* convs' weights folded and reordered at load, outside the arena */
    int64_t flops;
    ReportQuant quant[REPORT_NQUANT]; /* ranked by peak (report_choices) */
    int nquant;                       /* rows in quant (REPORT_NQUANT once report_choices ran) */
    bool has_choices;
    int64_t scale_bytes;  /* of this report's own quantized weights */
    const char *quantize; /* "int8", "int4" or NULL */
    int64_t group_size;

    struct Accuracy *acc; /* --accuracy: this policy against f32 */
    int acc_runs;
    bool acc_synthesized; /* the weights were made up */

    bool has_budget;
    const char *budget_name; /* a preset's name, or "custom" */
    const char *budget_label;
    int64_t budget_bytes;
    ReportFit fit;
    const char *note;          /* a remark on the options (e.g. a target chosen from the device) */
    struct ReportTrain *train; /* --train: the training step's parts (driver/report_train.h) */
    struct ReportCpu *cpu;     /* --target cpu: the CPU levels compiled (driver/report_cpu.h) */
    const bool *in_place;      /* by output: an update written over its param (no buffer) */
    struct ReportGen *gen;     /* --generate: both programs' figures (driver/report_generate.h) */
} Report;

/* The Report of the same graph and options under another policy, or NULL
 * when it does not compile so. */
typedef Report *(*ReportOfPolicy)(void *ctx, const PrecisionPolicy *pol);
void report_choices(Report *r, const PrecisionPolicy *base, ReportOfPolicy fn, void *ctx);

Report *report_build(Arena *a, Graph *g, Precision p, Target t);
const char *report_target_name(Target t);
/* The assumptions every writer prints; NULL-terminated. */
const char **report_assumptions(const Report *r);
/* The buffers live at a step, largest first; returns how many. */
int report_live_at(const Report *r, int step, int *out, int max);
/* The value a step writes first (its name in the timeline). */
const Value *report_step_value(const Report *r, int step);

/* Formatting shared by the writers. */
void report_fmt_bytes(char *buf, size_t n, int64_t b); /* "1.25 MiB" */
void report_fmt_count(char *buf, size_t n, int64_t v); /* "1,577,216" */
void report_fmt_flops(char *buf, size_t n, int64_t f); /* "1.07 GFLOP" */

void report_text(FILE *out, const Report *r);
char *report_json(const Report *r); /* malloc'ed */
/* Writes the HTML page; false (errno set) when the file cannot be written. */
bool report_html(const char *path, const Report *r);
#endif
