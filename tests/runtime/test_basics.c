/* The runtime's small pieces: dtypes and descriptors, error messages and
 * exit codes, aligned memory and the arena, the timer and --bench summary,
 * bf16/f16 conversions, .npy / safetensors parsing from memory, and
 * opening only regular files (a FIFO must not block). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* mkdtemp, nanosleep */
#endif
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rt_test.h"
#include "tgcrt.h"

static void test_dtypes(void) {
    CHECK_STR("bf16", rt_dtype_name(RT_BF16));
    CHECK_STR("bool", rt_dtype_name(RT_BOOL));
    CHECK_STR("none", rt_dtype_name((RtDType)42));
    CHECK_INT(8, rt_dtype_size(RT_F64));
    CHECK_INT(2, rt_dtype_size(RT_BF16));
    CHECK_INT(0, rt_dtype_size(RT_DTYPE_NONE));
    for (int t = 0; t < RT_DTYPE_COUNT; t++)
        CHECK_INT(t, rt_dtype_from_name(rt_dtype_name((RtDType)t)));
    CHECK_INT(RT_DTYPE_NONE, rt_dtype_from_name("float32"));

    char buf[RT_DESC_STR_MAX];
    RtDesc d = {RT_F32, 2, {2, 784}};
    CHECK_STR("f32[2, 784]", rt_desc_format(&d, buf, sizeof buf));
    RtDesc scalar = {RT_I64, 0, {0}};
    CHECK_STR("i64[]", rt_desc_format(&scalar, buf, sizeof buf));
    CHECK_STR("f32[2, ", rt_desc_format(&d, buf, 8)); /* truncated, still terminated */
    int64_t n;
    size_t nb;
    CHECK(rt_desc_numel(&d, &n) && n == 1568);
    CHECK(rt_desc_nbytes(&d, &nb) && nb == 6272);
    CHECK(rt_desc_numel(&scalar, &n) && n == 1);
    RtDesc big = {RT_F64, 3, {1ll << 40, 1ll << 20, 1ll << 10}};
    CHECK(!rt_desc_numel(&big, &n));
    RtDesc bytes = {RT_F64, 2, {1ll << 31, 1ll << 31}};
    CHECK(rt_desc_numel(&bytes, &n) && !rt_desc_nbytes(&bytes, &nb));
    RtDesc zero = {RT_F32, 3, {1ll << 62, 0, 1ll << 62}};
    CHECK(rt_desc_numel(&zero, &n) && n == 0);
    RtDesc neg = {RT_F32, 1, {-1}};
    CHECK(!rt_desc_numel(&neg, &n));
    RtDesc d2 = d;
    CHECK(rt_desc_equal(&d, &d2));
    d2.shape[1] = 785;
    CHECK(!rt_desc_equal(&d, &d2));
}

static void test_errors(void) {
    RtError e;
    rt_error_clear(&e);
    CHECK_INT(TGCRT_OK, e.status);
    CHECK_STR("", e.msg);
    CHECK_INT(TGCRT_ERR_SHAPE, rt_error_set(&e, TGCRT_ERR_SHAPE, "%s: expected %d", "x.npy", 3));
    CHECK_STR("x.npy: expected 3", e.msg);
    CHECK_INT(TGCRT_ERR_IO, rt_error_set(NULL, TGCRT_ERR_IO, "ignored"));
    CHECK_STR("format", rt_status_name(TGCRT_ERR_FORMAT));
    CHECK_INT(0, rt_status_exit_code(TGCRT_OK));
    CHECK_INT(1, rt_status_exit_code(TGCRT_ERR_MISSING));
    CHECK_INT(1, rt_status_exit_code(TGCRT_ERR_NOMEM));
    CHECK_INT(3, rt_status_exit_code(TGCRT_ERR_INTERNAL));
    CHECK_INT(3, rt_status_exit_code(TGCRT_ERR_ARG));
    char longname[3000];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    rt_error_set(&e, TGCRT_ERR_IO, "%s", longname); /* truncated, not overflowed */
    CHECK_INT(RT_ERROR_MSG_MAX - 1, strlen(e.msg));
}

static void test_memory(void) {
    for (size_t size = 0; size < 300; size += 37) {
        unsigned char *p = rt_aligned_alloc(size);
        CHECK(p && (uintptr_t)p % 64 == 0);
        if (p && size) memset(p, 1, size);
        rt_aligned_free(p);
    }
    RtArena a;
    RtError e;
    CHECK_INT(TGCRT_OK, rt_arena_init(&a, 1000, &e));
    CHECK((uintptr_t)a.base % 64 == 0);
    CHECK_INT(1024, a.size);
    memset(a.base, 0, a.size); /* the rounded-up size is usable */
    rt_arena_release(&a);
    CHECK(a.base == NULL);
    rt_arena_release(&a); /* twice is fine */
    CHECK_INT(TGCRT_OK, rt_arena_init(&a, 0, &e));
    CHECK_INT(64, a.size);
    rt_arena_release(&a);
    CHECK_INT(TGCRT_ERR_NOMEM, rt_arena_init(&a, SIZE_MAX - 3, &e));
    CHECK_HAS(e.msg, "too large");
}

static void test_timer(void) {
    int64_t t0 = rt_now_us();
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    int64_t t1 = rt_now_us();
    CHECK(t1 - t0 >= 20000);
    CHECK(t1 - t0 < 5000000);
    int64_t a = rt_now_ns(), b = rt_now_ns();
    CHECK(b >= a);

    double odd[] = {5, 1, 3, 9, 7};
    RtBenchStats s = rt_bench_stats(odd, 5);
    CHECK(s.runs == 5 && s.median_us == 5 && s.min_us == 1 && s.max_us == 9);
    double even[] = {4, 1, 2, 3};
    s = rt_bench_stats(even, 4);
    CHECK(s.median_us == 2.5);
    char buf[128];
    CHECK_STR("bench: runs=4 median_us=2.5 min_us=1.0 max_us=4.0",
              rt_bench_format(&s, buf, sizeof buf));
    s = rt_bench_stats(NULL, 0);
    CHECK_INT(0, s.runs);
}

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float float_of(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void test_conversions(void) {
    CHECK_INT(0x3f80, rt_f32_to_bf16(1.0f));
    CHECK_INT(0x3f80, rt_f32_to_bf16(float_of(0x3f808000))); /* tie: to even (down) */
    CHECK_INT(0x3f82, rt_f32_to_bf16(float_of(0x3f818000))); /* tie: to even (up) */
    CHECK_INT(0x3f81, rt_f32_to_bf16(float_of(0x3f808001)));
    CHECK_INT(0x7f80, rt_f32_to_bf16(float_of(0x7f7fffff))); /* rounds to infinity */
    CHECK_INT(0xff80, rt_f32_to_bf16(-INFINITY));
    CHECK_INT(0x7fc0, rt_f32_to_bf16(NAN));
    CHECK_INT(0x8000, rt_f32_to_bf16(-0.0f));
    CHECK_INT(0x40490000, bits_of(rt_bf16_to_f32(0x4049)));
    uint16_t b[3];
    float f[3] = {1.0f, 2.0f, -3.0f}, g[3];
    rt_f32_to_bf16_n(f, b, 3);
    rt_bf16_to_f32_n(b, g, 3);
    CHECK(g[0] == 1.0f && g[1] == 2.0f && g[2] == -3.0f);

    CHECK(rt_f16_to_f32(0x3c00) == 1.0f);
    CHECK(rt_f16_to_f32(0xc000) == -2.0f);
    CHECK(rt_f16_to_f32(0x0001) == ldexpf(1.0f, -24)); /* smallest subnormal */
    CHECK(rt_f16_to_f32(0x03ff) == ldexpf(1023.0f, -24));
    CHECK(rt_f16_to_f32(0x7bff) == 65504.0f);
    CHECK(isinf(rt_f16_to_f32(0x7c00)));
    CHECK(isnan(rt_f16_to_f32(0x7e00)));
    CHECK_INT(0x80000000u, bits_of(rt_f16_to_f32(0x8000)));
}

/* An .npy image with the given header text and data. */
static size_t make_npy(unsigned char *buf, const char *header, const void *data, size_t n) {
    size_t h = strlen(header);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)(h & 0xff);
    buf[9] = (unsigned char)(h >> 8);
    memcpy(buf + 10, header, h);
    memcpy(buf + 10 + h, data, n);
    return 10 + h + n;
}

static void test_npy_memory(void) {
    unsigned char buf[512];
    float data[6] = {1, 2, 3, 4, 5, 6};
    RtDesc d;
    size_t off;
    RtError e;
    size_t len = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n",
                          data, sizeof data);
    CHECK_INT(TGCRT_OK, rt_npy_parse(buf, len, "m.npy", &d, &off, &e));
    RtDesc want = {RT_F32, 2, {2, 3}};
    CHECK(rt_desc_equal(&d, &want));
    CHECK(off == len - sizeof data && !memcmp(buf + off, data, sizeof data));
    CHECK_INT(TGCRT_ERR_FORMAT, rt_npy_parse(buf, len - 1, "m.npy", &d, &off, &e));
    CHECK_STR("m.npy: truncated: header says 24 bytes of data (f32[2, 3]), file has 23", e.msg);
    len = make_npy(buf, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }\n", data,
                   sizeof data);
    CHECK_INT(TGCRT_ERR_DTYPE, rt_npy_parse(buf, len, "m.npy", &d, &off, &e));
    CHECK_HAS(e.msg, "big-endian");
    len = make_npy(buf, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }\n", data,
                   sizeof data);
    CHECK_INT(TGCRT_ERR_FORMAT, rt_npy_parse(buf, len, "m.npy", &d, &off, &e));
    CHECK_HAS(e.msg, "m.npy: Fortran-ordered");
    len = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }\n", data, 4);
    CHECK_INT(TGCRT_OK, rt_npy_parse(buf, len, "m.npy", &d, &off, &e));
    CHECK_INT(0, d.ndim);
    CHECK_INT(TGCRT_ERR_FORMAT, rt_npy_parse(buf, 3, "m.npy", &d, &off, &e));
    CHECK_HAS(e.msg, "not an .npy file");
    CHECK_INT(TGCRT_ERR_FORMAT, rt_npy_parse(NULL, 0, "m.npy", &d, &off, &e));
}

static void test_npy_files(void) {
    char dir[] = "/tmp/tgcrt-test-XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    char path[64];
    snprintf(path, sizeof path, "%s/a.npy", dir);
    int16_t v[4] = {1, -2, 300, -32768};
    RtDesc d = {RT_I16, 2, {2, 2}};
    RtError e;
    CHECK_INT(TGCRT_OK, rt_npy_write(path, &d, v, &e));
    RtArray a;
    CHECK_INT(TGCRT_OK, rt_npy_read(path, &a, &e));
    CHECK(rt_desc_equal(&a.desc, &d) && a.nbytes == 8 && !memcmp(a.data, v, 8));
    CHECK((uintptr_t)a.data % 64 == 0);
    rt_array_free(&a);
    int16_t w[4];
    CHECK_INT(TGCRT_OK, rt_npy_load_input(path, "x", &d, w, &e));
    CHECK(!memcmp(w, v, 8));
    RtDesc other = {RT_I16, 2, {4, 1}};
    CHECK_INT(TGCRT_ERR_SHAPE, rt_npy_load_input(path, "x", &other, w, &e));
    CHECK_HAS(e.msg, "input 'x' (");
    CHECK_HAS(e.msg, "a.npy): expected i16[4, 1], found i16[2, 2]");
    RtDesc bad = {RT_DTYPE_NONE, 1, {1}};
    CHECK_INT(TGCRT_ERR_ARG, rt_npy_write(path, &bad, v, &e));
    unlink(path);
    rmdir(dir);
}

static size_t make_st(unsigned char *buf, const char *json, const void *data, size_t n) {
    size_t h = strlen(json);
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(buf + 8, json, h);
    memcpy(buf + 8 + h, data, n);
    return 8 + h + n;
}

static void test_st_memory(void) {
    unsigned char buf[1024];
    float w[6] = {1, 2, 3, 4, 5, 6};
    size_t len = make_st(buf,
                         "{\"__metadata__\":{\"format\":\"pt\"},"
                         "\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[8,24]},"
                         "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}  ",
                         w, sizeof w);
    RtSafetensors *st;
    RtError e;
    CHECK_INT(TGCRT_OK, rt_st_open_memory(buf, len, "emb", &st, &e));
    if (!st) return;
    CHECK_INT(2, rt_st_count(st));
    CHECK_STR("w", rt_st_get(st, 0)->name);
    CHECK(rt_st_get(st, 2) == NULL);
    const RtStTensor *t = rt_st_find(st, "b");
    float second = 0;
    if (t) memcpy(&second, (const char *)t->data + 4, 4); /* the data need not be aligned */
    CHECK(t && t->nbytes == 8 && second == 2.0f);
    CHECK(rt_st_find(st, "c") == NULL);
    RtDesc want = {RT_F32, 2, {2, 2}};
    CHECK_INT(TGCRT_OK, rt_st_expect(st, "w", &want, &t, &e));
    CHECK(t && !memcmp(t->data, w + 2, 16));
    want.dtype = RT_F16;
    CHECK_INT(TGCRT_ERR_DTYPE, rt_st_expect(st, "w", &want, &t, &e));
    CHECK_STR("emb: tensor 'w': expected f16[2, 2], found f32[2, 2]", e.msg);
    CHECK_INT(TGCRT_ERR_MISSING, rt_st_expect(st, "fc.weight", &want, &t, &e));
    CHECK_STR("emb: missing tensor 'fc.weight' (expected f16[2, 2])", e.msg);
    rt_st_close(st);

    len =
        make_st(buf, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}", w, 20);
    CHECK_INT(TGCRT_ERR_FORMAT, rt_st_open_memory(buf, len, "emb", &st, &e));
    CHECK(st == NULL);
    CHECK_STR("emb: tensor 'w': data_offsets [0, 20] hold 20 bytes, but F32 [2, 3] needs 24",
              e.msg);
    CHECK_INT(TGCRT_ERR_FORMAT, rt_st_open_memory(buf, 5, "emb", &st, &e));
    CHECK_INT(TGCRT_ERR_FORMAT, rt_st_open_memory(NULL, 0, "emb", &st, &e));
}

/* Names are compared whole: a NUL in one (escaped or raw) or a raw control
 * byte is a malformed header, not a shorter name; \u0000 in the free-form
 * __metadata__ is accepted, and an escaped backslash is no NUL. */
static void test_st_names(void) {
    unsigned char buf[512];
    float w[2] = {1, 2};
    RtSafetensors *st;
    RtError e;
    size_t len =
        make_st(buf, "{\"b\\u0000zzz\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                w, sizeof w);
    CHECK_INT(TGCRT_ERR_FORMAT, rt_st_open_memory(buf, len, "W.safetensors", &st, &e));
    CHECK_STR("W.safetensors: tensor name 'b\\u0000zzz' contains a NUL character", e.msg);
    len = make_st(buf, "{\"b\":{\"dtype\":\"F32\\u0000\",\"shape\":[2],\"data_offsets\":[0,8]}}", w,
                  sizeof w);
    CHECK_INT(TGCRT_ERR_FORMAT, rt_st_open_memory(buf, len, "W.safetensors", &st, &e));
    CHECK_STR("W.safetensors: tensor 'b': the string 'F32\\u0000' contains a NUL character", e.msg);
    len = make_st(buf, "{\"b\x01\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", w,
                  sizeof w);
    CHECK_INT(TGCRT_ERR_FORMAT, rt_st_open_memory(buf, len, "W.safetensors", &st, &e));
    CHECK_HAS(e.msg, "tensor name 'b\\x01' contains the control byte 0x01");
    /* make_st takes a C string: the raw NUL goes in afterwards. */
    len = make_st(buf, "{\"bXzzz\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", w,
                  sizeof w);
    buf[8 + 3] = 0;
    CHECK_INT(TGCRT_ERR_FORMAT, rt_st_open_memory(buf, len, "W.safetensors", &st, &e));
    CHECK_STR("W.safetensors: tensor name 'b\\x00zzz' contains a NUL byte", e.msg);
    len = make_st(buf,
                  "{\"__metadata__\":{\"k\\u0000\":\"v\\u0000\"},"
                  "\"b\\\\u0000\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                  w, sizeof w);
    CHECK_INT(TGCRT_OK, rt_st_open_memory(buf, len, "W.safetensors", &st, &e));
    CHECK(st && rt_st_find(st, "b\\u0000") != NULL);
    rt_st_close(st);
}

/* rt_open_regular: a regular file opens (blocking again, with its size);
 * a FIFO with no writer, a directory and a device are refused at once. */
static void test_open_regular(void) {
    char dir[] = "/tmp/tgcrt-test-XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    char file[64], fifo[64];
    snprintf(file, sizeof file, "%s/f.bin", dir);
    snprintf(fifo, sizeof fifo, "%s/p.npy", dir);
    FILE *f = fopen(file, "wb");
    if (f) {
        fputs("hello", f);
        fclose(f);
    }
    RtError e;
    uint64_t size = 0;
    int fd = rt_open_regular(file, &size, &e);
    CHECK(fd >= 0);
    CHECK_INT(5, size);
    if (fd >= 0) {
        CHECK(!(fcntl(fd, F_GETFL) & O_NONBLOCK));
        CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
        close(fd);
    }
    CHECK_INT(0, mkfifo(fifo, 0600));
    CHECK_INT(-1, rt_open_regular(fifo, &size, &e));
    CHECK_INT(TGCRT_ERR_IO, e.status);
    CHECK_HAS(e.msg, "p.npy: is a FIFO (named pipe), not a regular file");
    CHECK_INT(-1, rt_open_regular(dir, NULL, &e));
    CHECK_HAS(e.msg, ": is a directory, not a regular file");
    CHECK_INT(-1, rt_open_regular("/dev/null", NULL, &e));
    CHECK_STR("/dev/null: is a character device, not a regular file", e.msg);
    CHECK_INT(-1, rt_open_regular("/nonexistent-dir/x.npy", NULL, NULL)); /* NULL err is fine */
    CHECK_INT(-1, rt_open_regular("/nonexistent-dir/x.npy", NULL, &e));
    CHECK_HAS(e.msg, "/nonexistent-dir/x.npy: cannot open: ");
    /* The readers go through it: no hang, exit-1 status. */
    RtArray a;
    CHECK_INT(TGCRT_ERR_IO, rt_npy_read(fifo, &a, &e));
    CHECK_HAS(e.msg, "is a FIFO");
    RtSafetensors *st;
    CHECK_INT(TGCRT_ERR_IO, rt_st_open(fifo, &st, &e));
    CHECK_HAS(e.msg, "is a FIFO");
    CHECK_INT(1, rt_status_exit_code(e.status));
    unlink(fifo);
    unlink(file);
    rmdir(dir);
}

int main(void) {
    test_dtypes();
    test_errors();
    test_memory();
    test_timer();
    test_conversions();
    test_npy_memory();
    test_npy_files();
    test_st_memory();
    test_st_names();
    test_open_regular();
    return rt_test_report();
}
