/* cu_nvrtc_compile's two shortcuts (codegen/cuda/cu_nvrtc.h):
 *  - the PTX kept from a CUBIN compile is served only for the same source,
 *    name and architecture, and equals a compute_NN compile byte for byte;
 *  - the TGC_NVRTC_CACHE directory: a second compile is a hit, an entry
 *    whose key differs by one byte or that is cut short is a miss (and is
 *    rewritten), the options and the kind of image are in the key, an
 *    unusable directory or a failing compile leaves no entry and no error
 *    of the cache's making, and without the variable nothing is written.
 * Usage: test_nvrtc [FILE.cu]...: also checks the kept PTX of each file
 * (a generated module) against a compute_90 compile of it. */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/cuda/cu_nvrtc.h"
#include "codegen/cuda/cu_nvrtc_cache.h"

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
        }                                                                                          \
    } while (0)

static const char *SRC_A =
    "extern \"C\" __global__ void ka(float *x) { x[threadIdx.x] *= 2.0f; }\n";
static const char *SRC_B =
    "extern \"C\" __global__ void kb(float *x) { x[threadIdx.x] += 3.0f; }\n";
static char err[4096];

static NvrtcImage build(const char *src, const char *name, int sm, bool ptx) {
    NvrtcImage img;
    if (!cu_nvrtc_compile(src, name, sm, ptx, &img, err, sizeof err)) {
        failures++;
        printf("FAIL: NVRTC %s %s_%d: %s\n", name, ptx ? "compute" : "sm", sm, err);
    }
    return img;
}

static bool same(NvrtcImage a, NvrtcImage b) {
    return a.data && b.data && a.size == b.size && !memcmp(a.data, b.data, a.size);
}

static bool has(NvrtcImage a, const char *s) {
    return a.data && strstr(a.data, s) != NULL;
}

/* The kept PTX of src equals a fresh compute_<sm> compile. */
static void kept_equals_fresh(const char *src, const char *name, int sm) {
    cu_nvrtc_forget();
    int runs = cu_nvrtc_runs();
    NvrtcImage cubin = build(src, name, sm, false);
    NvrtcImage kept = build(src, name, sm, true);
    CHECK(cu_nvrtc_runs() == runs + 1, "%s: sm_%d's CUBIN and PTX took %d NVRTC runs, not 1", name,
          sm, cu_nvrtc_runs() - runs);
    cu_nvrtc_forget();
    NvrtcImage fresh = build(src, name, sm, true);
    CHECK(same(kept, fresh),
          "%s: the PTX kept from sm_%d (%zu bytes) differs from compute_%d's (%zu)", name, sm,
          kept.size, sm, fresh.size);
    free(cubin.data);
    free(kept.data);
    free(fresh.data);
}

static void kept_ptx(void) {
    kept_equals_fresh(SRC_A, "a.cu", 90);
    kept_equals_fresh(SRC_B, "b.cu", 80);
    /* Another source, name or architecture than the CUBIN's: compiled. */
    NvrtcImage c = build(SRC_A, "a.cu", 90, false), p = build(SRC_B, "a.cu", 90, true);
    CHECK(has(p, "kb") && !has(p, "ka"), "the PTX of source B after A's CUBIN is not B's");
    free(c.data), free(p.data);
    c = build(SRC_A, "a.cu", 90, false), p = build(SRC_A, "a.cu", 80, true);
    CHECK(has(p, ".target sm_80"), "compute_80's PTX after sm_90's CUBIN does not target sm_80");
    free(c.data), free(p.data);
    c = build(SRC_A, "a.cu", 90, false), p = build(SRC_A, "other.cu", 90, true);
    CHECK(has(p, "other.cu"), "the PTX of other.cu (-lineinfo) does not name other.cu");
    free(c.data), free(p.data);
}

static int count_entries(const char *dir, int *tmp) {
    DIR *d = opendir(dir);
    int n = 0;
    *tmp = 0;
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l > 6 && !strcmp(e->d_name + l - 6, ".nvrtc")) n++;
        if (strstr(e->d_name, ".tmp.")) (*tmp)++;
    }
    closedir(d);
    return n;
}

/* The one entry of dir (its path in path). */
static bool entry_of(const char *dir, char *path, size_t n) {
    DIR *d = opendir(dir);
    bool found = false;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strstr(e->d_name, ".nvrtc")) {
            snprintf(path, n, "%s/%s", dir, e->d_name);
            found = true;
        }
    if (d) closedir(d);
    return found;
}

static long file_size(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

/* Flips the byte at off (from the end when negative) or cuts the file to
 * off bytes. */
static void damage(const char *path, long off, bool cut) {
    long n = file_size(path);
    FILE *f = fopen(path, "r+b");
    if (!f) return;
    if (cut) {
        CHECK(truncate(path, off) == 0, "truncate %s", path);
    } else {
        fseek(f, off < 0 ? n + off : off, SEEK_SET);
        int c = fgetc(f);
        fseek(f, off < 0 ? n + off : off, SEEK_SET);
        fputc(c ^ 0x5a, f);
    }
    fclose(f);
}

static void disk_cache(void) {
    char base[] = "/tmp/tgc-nvrtc-test-XXXXXX";
    if (!mkdtemp(base)) {
        CHECK(0, "mkdtemp");
        return;
    }
    char dir[256], path[600], cmd[400];
    int tmp;
    snprintf(dir, sizeof dir, "%s/cache", base);
    setenv("TGC_NVRTC_CACHE", dir, 1);
    cu_nvrtc_forget();

    NvrtcImage ref = build(SRC_A, "a.cu", 90, false);
    int runs = cu_nvrtc_runs();
    CHECK(count_entries(dir, &tmp) == 1 && !tmp, "after one compile: %d entries, %d temporaries",
          count_entries(dir, &tmp), tmp);
    NvrtcImage again = build(SRC_A, "a.cu", 90, false);
    CHECK(same(ref, again), "the cached CUBIN differs from the compiled one");
    CHECK(cu_nvrtc_runs() == runs, "a cache hit ran NVRTC");
    free(again.data);
    CHECK(entry_of(dir, path, sizeof path), "no entry in %s", dir);
    long size = file_size(path);

    /* A hit reads the entry: its image, changed, is what comes back. */
    damage(path, -1, false);
    again = build(SRC_A, "a.cu", 90, false);
    CHECK(again.size == ref.size && again.data[ref.size - 1] != ref.data[ref.size - 1],
          "a second compile did not come from the cache");
    free(again.data);
    damage(path, -1, false);

    /* One byte of the key (the source's last character) differs: a miss
     * (the image, changed too, is not what comes back), the entry
     * rewritten. */
    damage(path, size - (long)ref.size - 2, false);
    damage(path, -1, false);
    again = build(SRC_A, "a.cu", 90, false);
    CHECK(same(ref, again), "an entry whose key differs in one byte was taken as a hit");
    free(again.data);
    again = build(SRC_A, "a.cu", 90, false);
    CHECK(same(ref, again) && file_size(path) == size, "the damaged entry was not rewritten");
    free(again.data);

    /* Cut short: a miss. */
    damage(path, size - 10, true);
    again = build(SRC_A, "a.cu", 90, false);
    CHECK(same(ref, again), "a truncated entry was taken as a hit");
    free(again.data);
    CHECK(file_size(path) == size, "the truncated entry was not rewritten");
    /* A byte too many: a miss too. */
    FILE *f = fopen(path, "ab");
    if (f) fputc(0, f), fclose(f);
    again = build(SRC_A, "a.cu", 90, false);
    CHECK(same(ref, again) && file_size(path) == size, "an entry with a byte too many was taken");
    free(again.data);

    /* The architecture and the kind of image are in the key. */
    cu_nvrtc_forget();
    NvrtcImage a80 = build(SRC_A, "a.cu", 80, false);
    NvrtcImage ptx = build(SRC_A, "a.cu", 90, true);
    CHECK(!same(ref, a80) && has(ptx, ".target sm_90"), "sm_80 or the PTX came from sm_90's entry");
    CHECK(count_entries(dir, &tmp) == 3 && !tmp, "three images: %d entries, %d temporaries",
          count_entries(dir, &tmp), tmp);
    /* So are the name and the source. */
    free(build(SRC_A, "b.cu", 90, false).data);
    free(build(SRC_B, "a.cu", 90, false).data);
    CHECK(count_entries(dir, &tmp) == 5, "five images: %d entries", count_entries(dir, &tmp));

    /* A failing compile: false with NVRTC's log, no entry. */
    NvrtcImage bad;
    CHECK(!cu_nvrtc_compile("this is not CUDA", "bad.cu", 90, false, &bad, err, sizeof err) &&
              strstr(err, "NVRTC"),
          "a bad source compiled, or its error does not name NVRTC: %s", err);
    CHECK(count_entries(dir, &tmp) == 5, "a failed compile left an entry");

    /* An unusable directory (under a regular file): compiled as usual. */
    snprintf(dir, sizeof dir, "%s/file", base);
    f = fopen(dir, "w");
    if (f) fclose(f);
    snprintf(dir, sizeof dir, "%s/file/cache", base);
    setenv("TGC_NVRTC_CACHE", dir, 1);
    again = build(SRC_A, "a.cu", 90, false);
    CHECK(same(ref, again), "with an unusable cache directory the CUBIN differs");
    free(again.data);

    /* Off: nothing written. */
    setenv("TGC_NVRTC_CACHE", "", 1);
    CHECK(!cu_cache_dir(), "TGC_NVRTC_CACHE= (empty) turns the cache on");
    unsetenv("TGC_NVRTC_CACHE");
    CHECK(!cu_cache_dir(), "the cache is on without TGC_NVRTC_CACHE");
    snprintf(dir, sizeof dir, "%s/cache", base);
    int before = count_entries(dir, &tmp);
    free(build(SRC_B, "off.cu", 80, false).data);
    CHECK(count_entries(dir, &tmp) == before, "without TGC_NVRTC_CACHE an entry was written");

    free(ref.data), free(a80.data), free(ptx.data);
    cu_nvrtc_forget();
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0) printf("note: could not remove %s\n", base);
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) == (size_t)n) {
        s[n] = 0;
    } else {
        free(s);
        s = NULL;
    }
    fclose(f);
    return s;
}

int main(int argc, char **argv) {
    unsetenv("TGC_NVRTC_CACHE");
    kept_ptx();
    for (int i = 1; i < argc; i++) {
        char *src = slurp(argv[i]);
        CHECK(src, "cannot read %s", argv[i]);
        if (src) kept_equals_fresh(src, "module.cu", 90);
        free(src);
    }
    disk_cache();
    printf("test_nvrtc: %d failures\n", failures);
    return failures ? 1 : 0;
}
