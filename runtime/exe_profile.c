/* --profile and --profile-json FILE of the executables (rt_main and
 * rt_train_main): start the context's profiler before the runs to report,
 * then print its table and write its trace. */
#include <stdio.h>

#include "exe_internal.h"

int rt_exe_profile_check(const RtExeArgs *a, const RtProgram *p) {
    if ((!a->profile && !a->profile_json) || !p || !p->cuda) return 0;
    return rt_exe_error(a, 1,
                        "%s is not yet supported for CUDA programs (--target cuda); build for "
                        "the CPU to profile",
                        a->profile ? "--profile" : "--profile-json");
}

int rt_exe_profile_start(const RtExeArgs *a, RtContext *c) {
    if (!a->profile && !a->profile_json) return 0;
    int rc = rt_exe_profile_check(a, rt_context_program(c));
    if (rc) return rc;
    RtStatus s = rt_context_profile(c, true);
    return s ? rt_exe_error(a, rt_status_exit_code(s), "%s", rt_context_error(c)) : 0;
}

int rt_exe_profile_finish(const RtExeArgs *a, RtContext *c, double measured_us) {
    if (!a->profile && !a->profile_json) return 0;
    rt_context_profile(c, false);
    RtStatus s = TGCRT_OK;
    if (a->profile && (s = rt_context_profile_print(c, stdout, measured_us)))
        return rt_exe_error(a, rt_status_exit_code(s), "cannot print the profile");
    if (a->profile_json && (s = rt_context_profile_write_json(c, a->profile_json)))
        return rt_exe_error(a, rt_status_exit_code(s), "%s", rt_context_error(c));
    return 0;
}
