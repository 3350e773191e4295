#ifndef TGC_TOOLCHAIN_H
#define TGC_TOOLCHAIN_H
#include <stdbool.h>
#include <stddef.h>

/* libtgcrt.a and the directory of tgcrt.h: $TGC_RUNTIME_DIR, else an
 * installed copy beside the tgc binary, else the build tree's. */
bool toolchain_find_runtime(char *lib, char *inc, size_t cap);
const char *toolchain_cc(void); /* $CC, else the compiler that built tgc, else cc */
/* -fuse-ld=lld or gold when the machine has one (a faster link), or NULL;
 * TGC_LD=bfd|gold|lld|default overrides. */
const char *toolchain_linker_flag(void);
/* The flag programs link with when the runtime is instrumented, or NULL. */
const char *toolchain_sanitize_flag(void);
/* Runs argv, waits; the exit status, 128 + signal, or -1. */
int toolchain_exec(char *const *argv, bool quiet);
/* The same with the child's stdout and stderr written to the file log. */
int toolchain_exec_log(char *const *argv, const char *log);
#endif
