/* Device presets for `tgc report --device`, memory sizes (--budget SIZE)
 * and the CUDA runtime's assumed fixed needs and link speeds. */
#ifndef TGC_DEVICES_H
#define TGC_DEVICES_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct Device {
    const char *name;  /* what --device accepts */
    const char *label; /* the product */
    int64_t bytes;     /* usable device memory: nvidia-smi's memory.total */
    const char *nominal;
    bool gpu;
} Device;

/* The presets in table order; cpu's size is read from /proc/meminfo. */
int devices_count(void);
const Device *devices_get(int i);
/* By name, case-insensitive, '-' and '_' ignored ("RTX-4090" finds rtx4090). NULL if unknown. */
const Device *devices_find(const char *name);
void devices_list_text(FILE *out);
char *devices_list_json(void); /* malloc'ed */

/* SIZE: "24GiB", "24GB" (10^9), "512MiB", "1.5TB", "4096" (bytes). The
 * units B, KB, MB, GB, TB (powers of 1000) and KiB, MiB, GiB, TiB (powers
 * of 1024), case-insensitive. False when malformed or not positive. */
bool devices_parse_size(const char *s, int64_t *out);

/* CUDA runtime figures, stated in the report's assumptions. */
#define CUDA_CONTEXT_BYTES ((int64_t)512 << 20)  /* context, loaded kernels and modules */
#define CUDA_WORKSPACE_BYTES ((int64_t)32 << 20) /* cuBLAS / cuBLASLt workspace */
typedef struct Link {
    const char *name;
    double bytes_per_s; /* effective, pinned memory, one direction */
    double peak_bytes_per_s;
} Link;
extern const Link devices_links[2];
#endif
