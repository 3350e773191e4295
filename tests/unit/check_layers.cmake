# Data flows one way: support <- front ends -> ir -> passes -> codegen. Fail
# if a layer includes a header from a layer above it: support/ includes only
# support/; ir/, passes/ and codegen/ include no front end (frontend/) and no
# driver; frontend/tg/ includes no other front end; runtime/ (libtgcrt,
# linked into compiled programs, which carry no compiler) includes no
# compiler header at all (of support/, only the helpers it shares: below). An include counts with any "./" or "../" before
# the folder's name.
# Run as: cmake -DSOURCE_DIR=<repository root> -P check_layers.cmake
cmake_policy(SET CMP0057 NEW) # if(... IN_LIST ...)
set(rules
    "support|frontend|ir|passes|codegen|driver|runtime"
    "ir|frontend|passes|codegen|driver"
    "passes|frontend|codegen|driver"
    "codegen|frontend|driver"
    "frontend/tg|frontend/onnx|passes|codegen|driver"
    "runtime|frontend|ir|passes|codegen|driver")
set(passed 0)
set(failed 0)
# One file's verdict: WHY and the offending includes when BAD is not empty.
macro(tally src why bad)
  if(${bad})
    message("FAIL ${src} ${why}: ${${bad}}")
    math(EXPR failed "${failed} + 1")
  else()
    math(EXPR passed "${passed} + 1")
  endif()
endmacro()
foreach(rule ${rules})
  string(REPLACE "|" ";" parts "${rule}")
  list(POP_FRONT parts layer)
  list(JOIN parts "|" forbidden)
  file(GLOB_RECURSE sources ${SOURCE_DIR}/${layer}/*.c ${SOURCE_DIR}/${layer}/*.h
                                  ${SOURCE_DIR}/${layer}/*.def)
  foreach(src ${sources})
    file(STRINGS ${src} includes REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
    set(bad "")
    foreach(inc ${includes})
      if(inc MATCHES "[\"<][./]*(${forbidden})/")
        list(APPEND bad "${inc}")
      endif()
    endforeach()
    tally(${src} "(${layer}/) includes from a layer above it" bad)
  endforeach()
endforeach()
# The runtime's headers by audience (runtime/tgcrt.h's header says which is
# which). The compiler (support, front ends, ir, passes, codegen) includes
# of runtime/ only the ABI that generated code calls: tgcrt_abi.h,
# tgcrt_cuda.h and the dtype table both enums follow (dtype_table.h, which
# includes dtype.def); the driver the public API too (tgcrt.h), never the
# runtime's internals; support/ nothing. And runtime/ includes of support/
# only the libc-only helpers it shares with the driver, which it compiles.
# A runtime header counts whether spelled "runtime/NAME" or plain "NAME"
# (the runtime's folder is on the compiler's include path).
set(abi "tgcrt_abi.h|tgcrt_cuda.h|dtype_table.h|dtype.def")
set(audiences
    "support"
    "frontend|${abi}"
    "ir|${abi}"
    "passes|${abi}"
    "codegen|${abi}"
    "driver|tgcrt.h|${abi}")
file(GLOB runtime_headers RELATIVE ${SOURCE_DIR}/runtime ${SOURCE_DIR}/runtime/*.h
                                                         ${SOURCE_DIR}/runtime/*.def)
foreach(rule ${audiences})
  string(REPLACE "|" ";" allowed "${rule}")
  list(POP_FRONT allowed layer)
  file(GLOB_RECURSE sources ${SOURCE_DIR}/${layer}/*.c ${SOURCE_DIR}/${layer}/*.h
                                  ${SOURCE_DIR}/${layer}/*.def)
  foreach(src ${sources})
    file(STRINGS ${src} includes REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
    set(bad "")
    foreach(inc ${includes})
      if(NOT inc MATCHES "[\"<]([^\">]*)[\">]")
        continue()
      endif()
      set(name "${CMAKE_MATCH_1}")
      string(REGEX REPLACE "^[./]*runtime/" "" name "${name}")
      if(name IN_LIST runtime_headers AND NOT name IN_LIST allowed)
        list(APPEND bad "${inc}")
      endif()
    endforeach()
    tally(${src} "(${layer}/) includes runtime headers not meant for it" bad)
  endforeach()
endforeach()
set(shared "atomic_file.h|file_id.h")
file(GLOB sources ${SOURCE_DIR}/runtime/*.c ${SOURCE_DIR}/runtime/*.h)
foreach(src ${sources})
  file(STRINGS ${src} includes REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<][./]*support/")
  set(bad "")
  foreach(inc ${includes})
    if(NOT inc MATCHES "support/(${shared})[\">]")
      list(APPEND bad "${inc}")
    endif()
  endforeach()
  tally(${src} "(runtime/) includes a compiler header from support/" bad)
endforeach()
message("layers: ${passed} passed, ${failed} failed")
if(failed OR passed EQUAL 0)
  message(FATAL_ERROR "a layer includes a header from a layer above it (or no sources were found)")
endif()
