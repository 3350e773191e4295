# Data flows one way: support <- front ends -> ir -> passes -> codegen. Fail
# if a layer includes a header from a layer above it: support/ includes only
# support/; ir/, passes/ and codegen/ include no front end (frontend/) and no
# driver; frontend/tg/ includes no other front end; runtime/ (libtgcrt,
# linked into compiled programs, which carry no compiler) includes no
# compiler header at all. An include counts with any "./" or "../" before
# the folder's name.
# Run as: cmake -DSOURCE_DIR=<repository root> -P check_layers.cmake
set(rules
    "support|frontend|ir|passes|codegen|driver|runtime"
    "ir|frontend|passes|codegen|driver"
    "passes|frontend|codegen|driver"
    "codegen|frontend|driver"
    "frontend/tg|frontend/onnx|passes|codegen|driver"
    "runtime|support|frontend|ir|passes|codegen|driver")
set(passed 0)
set(failed 0)
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
    if(bad)
      message("FAIL ${src} (${layer}/) includes from a layer above it: ${bad}")
      math(EXPR failed "${failed} + 1")
    else()
      math(EXPR passed "${passed} + 1")
    endif()
  endforeach()
endforeach()
message("layers: ${passed} passed, ${failed} failed")
if(failed OR passed EQUAL 0)
  message(FATAL_ERROR "a layer includes a header from a layer above it (or no sources were found)")
endif()
