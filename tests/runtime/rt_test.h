/* Checks for the runtime's C tests: each failure prints file:line and what
 * was expected and found; main() ends with rt_test_report(), which prints
 * the suite's "runtime: N passed, M failed" line and returns the exit code. */
#ifndef TGCRT_TEST_H
#define TGCRT_TEST_H
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int rt_test_passed, rt_test_failed;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond)                                                                                  \
            rt_test_passed++;                                                                      \
        else {                                                                                     \
            rt_test_failed++;                                                                      \
            printf("%s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond);                                \
        }                                                                                          \
    } while (0)

#define CHECK_INT(expected, found)                                                                 \
    do {                                                                                           \
        long long e_ = (long long)(expected), f_ = (long long)(found);                             \
        if (e_ == f_)                                                                              \
            rt_test_passed++;                                                                      \
        else {                                                                                     \
            rt_test_failed++;                                                                      \
            printf("%s:%d: FAIL: %s: expected %lld, found %lld\n", __FILE__, __LINE__, #found, e_, \
                   f_);                                                                            \
        }                                                                                          \
    } while (0)

#define CHECK_STR(expected, found)                                                                 \
    do {                                                                                           \
        const char *e_ = (expected), *f_ = (found);                                                \
        if (!strcmp(e_, f_))                                                                       \
            rt_test_passed++;                                                                      \
        else {                                                                                     \
            rt_test_failed++;                                                                      \
            printf("%s:%d: FAIL: %s: expected \"%s\", found \"%s\"\n", __FILE__, __LINE__, #found, \
                   e_, f_);                                                                        \
        }                                                                                          \
    } while (0)

/* The message contains needle. */
#define CHECK_HAS(haystack, needle)                                                                \
    do {                                                                                           \
        const char *h_ = (haystack), *n_ = (needle);                                               \
        if (strstr(h_, n_))                                                                        \
            rt_test_passed++;                                                                      \
        else {                                                                                     \
            rt_test_failed++;                                                                      \
            printf("%s:%d: FAIL: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__, h_, n_);   \
        }                                                                                          \
    } while (0)

static inline int rt_test_report(void) {
    printf("runtime: %d passed, %d failed\n", rt_test_passed, rt_test_failed);
    return rt_test_failed ? 1 : 0;
}
#endif
