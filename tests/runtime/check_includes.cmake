# libtgcrt must never include the compiler's headers (it is linked into
# compiled programs, which carry no compiler): fail if any runtime source
# includes a file from support/, frontend/, ir/, passes/, codegen/ or driver/.
# Run as: cmake -DRUNTIME_DIR=.../runtime -P check_includes.cmake
file(GLOB sources ${RUNTIME_DIR}/*.c ${RUNTIME_DIR}/*.h)
set(passed 0)
set(failed 0)
foreach(src ${sources})
  file(STRINGS ${src} bad REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<][./]*(support|frontend|ir|passes|codegen|driver)/")
  if(bad)
    message("FAIL ${src} includes a compiler header: ${bad}")
    math(EXPR failed "${failed} + 1")
  else()
    math(EXPR passed "${passed} + 1")
  endif()
endforeach()
message("runtime: ${passed} passed, ${failed} failed")
if(failed OR passed EQUAL 0)
  message(FATAL_ERROR "runtime sources include compiler headers (or none were found)")
endif()
