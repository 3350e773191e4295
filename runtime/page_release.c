/* Handing a param's pages back once a prepared copy replaces it
 * (conv_internal.h, issue 32). */
#define _DEFAULT_SOURCE /* madvise, MADV_PAGEOUT */
#include "conv_internal.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Linux 5.4's MADV_PAGEOUT, for headers older than the kernel. */
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

void rt_file_maps_read(RtFileMaps *m) {
    m->r = NULL, m->n = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return;
    char line[512];
    size_t cap = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, inode;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s %*s %*s %lu", &lo, &hi, perms, &inode) != 4) continue;
        if (!inode || perms[1] == 'w' || perms[3] != 'p') continue;
        if (m->n == cap) {
            cap = cap ? cap * 2 : 64;
            void *g = realloc(m->r, cap * sizeof *m->r);
            if (!g) break;
            m->r = g;
        }
        m->r[m->n][0] = lo, m->r[m->n][1] = hi;
        m->n++;
    }
    fclose(f);
}

/* Hands the pages lying wholly inside [p, p + n) back to the kernel
 * without changing what they hold. Inside a private read-only mapping of a
 * file, MADV_DONTNEED drops this process's pages (the page cache keeps the
 * file; a later read maps it again), dirty or not: a weights file just
 * written, a just-linked executable. Anywhere else (a buffer the caller or
 * the context allocated) DONTNEED would zero the param, so MADV_PAGEOUT:
 * swapped out where there is swap, left as it is otherwise. Older kernels
 * refuse the advice (EINVAL): the pages stay, nothing else changes. */
void rt_release_pages(const RtFileMaps *m, const void *p, size_t n) {
    long ps = sysconf(_SC_PAGESIZE);
    uintptr_t page = ps > 0 ? (uintptr_t)ps : 4096;
    uintptr_t lo = ((uintptr_t)p + page - 1) / page * page, hi = ((uintptr_t)p + n) / page * page;
    if (hi <= lo) return;
    bool file = false;
    for (size_t i = 0; i < m->n && !file; i++)
        file = m->r[i][0] <= lo && hi <= m->r[i][1];
    (void)madvise((void *)lo, hi - lo, file ? MADV_DONTNEED : MADV_PAGEOUT);
}
