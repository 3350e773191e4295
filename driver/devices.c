/* Device presets and sizes. A GPU's size is the memory.total nvidia-smi
 * reports for it (the nominal size less what the driver reserves), since
 * that is what a process can allocate from. */
#include "driver/devices.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MIB(n) ((int64_t)(n) << 20)

static Device presets[] = {
    {"t4", "NVIDIA T4", MIB(15360), "16 GB", true},
    {"l4", "NVIDIA L4", MIB(23034), "24 GB", true},
    {"a10", "NVIDIA A10", MIB(23028), "24 GB", true},
    {"rtx3090", "NVIDIA GeForce RTX 3090", MIB(24576), "24 GB", true},
    {"rtx4090", "NVIDIA GeForce RTX 4090", MIB(24564), "24 GB", true},
    {"a100-40gb", "NVIDIA A100 40GB", MIB(40960), "40 GB", true},
    {"a100-80gb", "NVIDIA A100 80GB", MIB(81920), "80 GB", true},
    {"h100", "NVIDIA H100 80GB", MIB(81559), "80 GB", true},
    {"h200", "NVIDIA H200", MIB(143771), "141 GB", true},
    {"b200", "NVIDIA B200", MIB(183359), "192 GB", true},
    {"cpu", "this machine's RAM (MemTotal in /proc/meminfo)", 0, "-", false},
};
#define NPRESETS ((int)(sizeof presets / sizeof *presets))

const Link devices_links[2] = {
    {"PCIe 4.0 x16", 25e9, 31.5e9},
    {"PCIe 5.0 x16", 50e9, 63e9},
};

/* MemTotal in /proc/meminfo, in bytes; 0 when unreadable. */
static int64_t meminfo_total(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemTotal: %lld kB", &kb) == 1) break;
    fclose(f);
    return kb > 0 ? (int64_t)kb * 1024 : 0;
}

int devices_count(void) {
    return NPRESETS;
}

const Device *devices_get(int i) {
    Device *d = &presets[i];
    if (!d->gpu && !d->bytes) d->bytes = meminfo_total();
    return d;
}

/* Compares ignoring case, '-', '_' and spaces. */
static bool same_name(const char *a, const char *b) {
    for (;;) {
        while (*a == '-' || *a == '_' || *a == ' ')
            a++;
        while (*b == '-' || *b == '_' || *b == ' ')
            b++;
        if (!*a || !*b) return !*a && !*b;
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return false;
        a++, b++;
    }
}

const Device *devices_find(const char *name) {
    for (int i = 0; i < NPRESETS; i++)
        if (same_name(presets[i].name, name)) return devices_get(i);
    /* A few spellings people use. */
    static const struct {
        const char *alias, *name;
    } aliases[] = {
        {"a100", "a100-80gb"}, {"a100-40", "a100-40gb"}, {"a100-80", "a100-80gb"},
        {"h100-80gb", "h100"}, {"4090", "rtx4090"},      {"3090", "rtx3090"},
        {"host", "cpu"},
    };
    for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++)
        if (same_name(aliases[i].alias, name)) return devices_find(aliases[i].name);
    return NULL;
}

void devices_list_text(FILE *out) {
    fprintf(out, "%-10s %-48s %8s %16s %10s\n", "device", "product", "nominal", "bytes", "GiB");
    for (int i = 0; i < NPRESETS; i++) {
        const Device *d = devices_get(i);
        fprintf(out, "%-10s %-48s %8s %16lld %10.2f\n", d->name, d->label, d->nominal,
                (long long)d->bytes, (double)d->bytes / (double)(1 << 30));
    }
    fprintf(out, "\nGPU sizes are the memory.total nvidia-smi reports (the nominal size less the\n"
                 "driver's reservation); cpu is MemTotal from /proc/meminfo. For anything else\n"
                 "use --budget SIZE (24GiB, 24GB = 24*10^9, 512MiB, or bytes).\n");
}

char *devices_list_json(void) {
    cJSON *root = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(root, "devices");
    for (int i = 0; i < NPRESETS; i++) {
        const Device *d = devices_get(i);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", d->name);
        cJSON_AddStringToObject(o, "product", d->label);
        cJSON_AddStringToObject(o, "nominal", d->nominal);
        cJSON_AddNumberToObject(o, "bytes", (double)d->bytes);
        cJSON_AddBoolToObject(o, "gpu", d->gpu);
        cJSON_AddItemToArray(arr, o);
    }
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}

bool devices_parse_size(const char *s, int64_t *out) {
    static const struct {
        const char *unit;
        double mul;
    } units[] = {
        {"", 1},
        {"b", 1},
        {"kb", 1e3},
        {"mb", 1e6},
        {"gb", 1e9},
        {"tb", 1e12},
        {"kib", 1024.0},
        {"mib", 1048576.0},
        {"gib", 1073741824.0},
        {"tib", 1099511627776.0},
    };
    if (!s || !*s || isspace((unsigned char)*s) || *s == '-' || *s == '+') return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v <= 0) return false;
    /* strtod also reads hex and "inf"; sizes are plain decimals. */
    for (const char *p = s; p < end; p++)
        if (!isdigit((unsigned char)*p) && *p != '.') return false;
    while (*end == ' ')
        end++;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
        if (strcasecmp(end, units[i].unit)) continue;
        double bytes = v * units[i].mul;
        if (bytes < 1 || bytes > 9.0e18) return false;
        *out = (int64_t)bytes;
        return true;
    }
    return false;
}
