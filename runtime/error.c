/* Status codes and the per-context error message: no global state, the
 * caller owns the RtError the message goes into. */
#include "tgcrt.h"

#include <stdarg.h>
#include <stdio.h>

void rt_error_clear(RtError *e) {
    if (!e) return;
    e->status = TGCRT_OK;
    e->msg[0] = 0;
}

RtStatus rt_error_set(RtError *e, RtStatus status, const char *fmt, ...) {
    if (!e) return status;
    e->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return status;
}

const char *rt_status_name(RtStatus s) {
    static const char *const names[TGCRT_STATUS_COUNT] = {
        [TGCRT_OK] = "ok",
        [TGCRT_ERR_IO] = "io",
        [TGCRT_ERR_FORMAT] = "format",
        [TGCRT_ERR_SHAPE] = "shape",
        [TGCRT_ERR_DTYPE] = "dtype",
        [TGCRT_ERR_MISSING] = "missing",
        [TGCRT_ERR_NOMEM] = "nomem",
        [TGCRT_ERR_ARG] = "argument",
        [TGCRT_ERR_INTERNAL] = "internal",
        [TGCRT_ERR_VALUE] = "value",
        [TGCRT_ERR_DEVICE] = "device",
    };
    return s >= 0 && s < TGCRT_STATUS_COUNT ? names[s] : "unknown";
}

int rt_status_exit_code(RtStatus s) {
    switch (s) {
    case TGCRT_OK: return 0;
    case TGCRT_ERR_IO:
    case TGCRT_ERR_FORMAT:
    case TGCRT_ERR_SHAPE:
    case TGCRT_ERR_DTYPE:
    case TGCRT_ERR_MISSING:
    case TGCRT_ERR_NOMEM:
    case TGCRT_ERR_VALUE:
    case TGCRT_ERR_DEVICE: return 1; /* no usable GPU: the machine, not a bug */
    default: return 3;
    }
}
