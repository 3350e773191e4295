#include "ir/print.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static cJSON *int_array(const int64_t *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v[i]));
    return a;
}

static const char *storage_name(Arena *a, const Value *v) {
    return value_name(a, v->storage);
}

char *print_show_json(const Graph *g) {
    Arena *a = g->arena;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "graph", g->name);
    cJSON *dims = cJSON_AddObjectToObject(root, "dims");
    for (int i = 0; i < g->ndims; i++)
        cJSON_AddNumberToObject(dims, g->dims[i].name, (double)g->dims[i].value);
    cJSON *vals = cJSON_AddArrayToObject(root, "values");
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", value_name(a, v));
        cJSON_AddStringToObject(o, "op", op_display_name(v));
        cJSON_AddStringToObject(o, "dtype", dtype_name(v->dtype));
        cJSON_AddItemToObject(o, "shape", int_array(v->shape, v->ndim));
        cJSON_AddItemToObject(o, "strides", int_array(v->strides, v->ndim));
        cJSON_AddNumberToObject(o, "offset", (double)v->offset);
        cJSON_AddBoolToObject(o, "contiguous", layout_is_contiguous(v));
        cJSON_AddBoolToObject(o, "view", v->is_view);
        cJSON_AddStringToObject(o, "storage", storage_name(a, v));
        cJSON_AddNumberToObject(o, "bytes", (double)value_bytes(v));
        if (v->copy_reason) cJSON_AddStringToObject(o, "copy_reason", v->copy_reason);
        if (v->is_output) cJSON_AddBoolToObject(o, "output", true);
        if (v->dead) cJSON_AddBoolToObject(o, "dead", true);
        if (v->loc.line) cJSON_AddNumberToObject(o, "line", v->loc.line);
        cJSON_AddItemToArray(vals, o);
    }
    cJSON *outs = cJSON_AddArrayToObject(root, "outputs");
    for (int i = 0; i < g->noutputs; i++)
        cJSON_AddItemToArray(outs, cJSON_CreateString(value_name(a, g->outputs[i])));
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}

static void human_bytes(char *buf, size_t n, int64_t b) {
    if (b >= (int64_t)1 << 30)
        snprintf(buf, n, "%.2f GiB", (double)b / (double)(1 << 30));
    else if (b >= 1 << 20)
        snprintf(buf, n, "%.2f MiB", (double)b / (1 << 20));
    else if (b >= 1 << 10)
        snprintf(buf, n, "%.1f KiB", (double)b / (1 << 10));
    else
        snprintf(buf, n, "%lld B", (long long)b);
}

void print_show_text(FILE *out, const Graph *g) {
    Arena *a = g->arena;
    fprintf(out, "graph %s", g->name);
    for (int i = 0; i < g->ndims; i++)
        fprintf(out, "%s%s=%lld", i ? ", " : "(", g->dims[i].name, (long long)g->dims[i].value);
    fprintf(out, "%s\n\n", g->ndims ? ")" : "");
    fprintf(out, "%-14s %-11s %-5s %-18s %-18s %6s  %-4s  %-26s %s\n", "value", "op", "dtype",
            "shape", "strides", "offset", "cont", "storage", "bytes");
    int64_t owned = 0;
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        char bytes[32];
        human_bytes(bytes, sizeof bytes, value_bytes(v));
        owned += value_bytes(v);
        const char *storage = v->is_view ? arena_printf(a, "view of %s", storage_name(a, v))
                              : v->copy_reason && v->op != OP_TO ? "copy (see below)"
                                                                 : "own";
        fprintf(out, "%-14s %-11s %-5s %-18s %-18s %6lld  %-4s  %-26s %s%s%s\n", value_name(a, v),
                op_display_name(v), dtype_name(v->dtype), shape_str(a, v->shape, v->ndim),
                shape_str(a, v->strides, v->ndim), (long long)v->offset,
                layout_is_contiguous(v) ? "yes" : "no", storage, v->is_view ? "-" : bytes,
                v->is_output ? "  [output]" : "", v->dead ? "  [dead]" : "");
    }
    bool header = false;
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        if (!v->copy_reason || v->op == OP_TO) continue;
        if (!header) fprintf(out, "\ncopies inserted:\n");
        header = true;
        fprintf(out, "  %s (%s", value_name(a, v), op_display_name(v));
        if (v->loc.line) fprintf(out, ", line %d", v->loc.line);
        fprintf(out, "): %s\n", v->copy_reason);
    }
    char total[32];
    human_bytes(total, sizeof total, owned);
    fprintf(out, "\n%d values, %s of storage owned in all\n", g->nvalues, total);
}
