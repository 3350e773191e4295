/* The on-disk cache of NVRTC images (cu_nvrtc_cache.h says what it
 * promises). An entry: the magic line, the key's and the image's sizes
 * (two little-endian u64), the key, the image. */
#include "codegen/cuda/cu_nvrtc_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CACHE_MAGIC "TGCNVRTC1\n"
#define CACHE_MAGIC_LEN 10
#define CACHE_HEAD (CACHE_MAGIC_LEN + 16)

const char *cu_cache_dir(void) {
    const char *d = getenv("TGC_NVRTC_CACHE");
    return d && *d ? d : NULL;
}

/* FNV-1a, 64 bits, from a given basis: two bases name an entry with 128
 * bits. Collisions cannot give a wrong image (the key is compared); they
 * would only make two keys evict each other. */
static uint64_t fnv1a(const char *s, size_t n, uint64_t h) {
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static char *entry_path(const char *dir, const char *key, size_t nkey) {
    uint64_t a = fnv1a(key, nkey, 14695981039346656037ull);
    uint64_t b = fnv1a(key, nkey, 0x9e3779b97f4a7c15ull);
    size_t n = strlen(dir) + 48;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%016llx%016llx.nvrtc", dir, (unsigned long long)a,
                 (unsigned long long)b);
    return p;
}

static void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Reads all n bytes into in, or writes them from out, again after a
 * signal; false on an error or an early end of file. */
static bool transfer_all(int fd, char *in, const char *out, size_t n) {
    for (size_t done = 0; done < n;) {
        ssize_t r = out ? write(fd, out + done, n - done) : read(fd, in + done, n - done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        done += (size_t)r;
    }
    return true;
}
static bool read_all(int fd, char *buf, size_t n) {
    return transfer_all(fd, buf, NULL, n);
}
static bool write_all(int fd, const char *buf, size_t n) {
    return transfer_all(fd, NULL, buf, n);
}

bool cu_cache_get(const char *dir, const char *key, size_t nkey, NvrtcImage *out) {
    memset(out, 0, sizeof *out);
    char *path = entry_path(dir, key, nkey);
    int fd = path ? open(path, O_RDONLY) : -1;
    free(path);
    if (fd < 0) return false;
    bool ok = false;
    char *buf = NULL;
    struct stat st;
    unsigned char head[CACHE_HEAD];
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < CACHE_HEAD ||
        !read_all(fd, (char *)head, CACHE_HEAD) || memcmp(head, CACHE_MAGIC, CACHE_MAGIC_LEN))
        goto done;
    uint64_t nk = get_u64(head + CACHE_MAGIC_LEN), ni = get_u64(head + CACHE_MAGIC_LEN + 8);
    if (nk != nkey || ni > (uint64_t)st.st_size || (uint64_t)st.st_size - CACHE_HEAD != nk + ni)
        goto done;
    buf = malloc(nk + (ni ? ni : 1));
    if (!buf || !read_all(fd, buf, nk + ni) || memcmp(buf, key, nkey)) goto done;
    out->data = malloc(ni ? ni : 1);
    if (!out->data) goto done;
    memcpy(out->data, buf + nk, ni);
    out->size = ni;
    ok = true;
    /* Used now: the test harness prunes the entries no run has touched
     * (tests/cuda/run_cuda.py --nvrtc-cache). */
    futimens(fd, NULL);
done:
    free(buf);
    close(fd);
    return ok;
}

void cu_cache_put(const char *dir, const char *key, size_t nkey, const NvrtcImage *img) {
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) return;
    char *path = entry_path(dir, key, nkey);
    size_t n = path ? strlen(path) + 16 : 0;
    char *tmp = path ? malloc(n) : NULL;
    if (!tmp) {
        free(path);
        return;
    }
    snprintf(tmp, n, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd >= 0) {
        unsigned char head[CACHE_HEAD];
        memcpy(head, CACHE_MAGIC, CACHE_MAGIC_LEN);
        put_u64(head + CACHE_MAGIC_LEN, nkey);
        put_u64(head + CACHE_MAGIC_LEN + 8, img->size);
        bool ok = write_all(fd, (const char *)head, CACHE_HEAD) && write_all(fd, key, nkey) &&
                  write_all(fd, img->data, img->size);
        ok = close(fd) == 0 && ok;
        /* rename() replaces an entry atomically: a reader sees the old
         * file or the new one, whole. */
        if (!ok || rename(tmp, path) != 0) unlink(tmp);
    }
    free(tmp);
    free(path);
}
