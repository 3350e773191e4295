# The libraries a program compiled by tgc links after libtgcrt.a, by what
# its graph uses: the one list behind every link line tgc states. From it
#   - the driver links executables and prints the line (tgc build/run, the
#     comment of tgc compile's header, tgc compile --print-link-line), through
#     the generated tgc_link_libs.h (driver/link_line.c);
#   - tgcrt.pc and tgcConfig.cmake's tgc::tgcrt carry every group, so that
#     any model links with them;
#   - runtime/CMakeLists.txt links libtgcrt itself.
# A library added or changed here follows everywhere.
#
# The groups, in link order after libtgcrt.a:
#   CONV  every program for the CPU: oneDNN (convolutions, runtime/conv.c,
#         and f32 products, runtime/matmul_dnnl.c)
#   BLAS  every program: OpenBLAS (between -Wl,-Bstatic and -Wl,-Bdynamic
#         with --static-runtime)
#   BASE  every program: cJSON (safetensors headers), libgomp (OpenMP, the
#         one threading runtime: the pool's loops, runtime/threadpool.c, and
#         oneDNN's), pthreads, libm
#   CUDA  --target cuda: libdl (the driver, cuBLAS and cuDNN are loaded
#         with dlopen; nothing of CUDA is linked)
# Names only (-lNAME): libgomp is found by the compiler driver in its own
# directory, where find_library does not look.
set(TGC_LINK_CONV dnnl)
set(TGC_LINK_BLAS openblas)
set(TGC_LINK_BASE cjson gomp pthread m)
set(TGC_LINK_CUDA dl)
set(TGC_LINK_ALL ${TGC_LINK_CONV} ${TGC_LINK_BLAS} ${TGC_LINK_BASE} ${TGC_LINK_CUDA})
# Those that come from a package (README's table): checked by
# tgcConfig.cmake so that a missing one is named at configure time.
set(TGC_LINK_PACKAGED dnnl openblas cjson)

# "-lA -lB" of the list in out (for pkg-config).
function(tgc_link_flags out)
  list(TRANSFORM ARGN PREPEND "-l")
  list(JOIN ARGN " " s)
  set(${out} "${s}" PARENT_SCOPE)
endfunction()

# "\"-lA\", \"-lB\", " of the list in out (a C initializer's head; the
# table in driver/link_line.c ends each with NULL).
function(tgc_link_c_strings out)
  set(s "")
  foreach(l IN LISTS ARGN)
    string(APPEND s "\"-l${l}\", ")
  endforeach()
  set(${out} "${s}" PARENT_SCOPE)
endfunction()
