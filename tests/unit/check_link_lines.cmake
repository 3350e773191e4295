# Every link line the documentation and the generated header's comment
# show comes from the one list, cmake/TgcLinkLibs.cmake: a line naming
# -ltgcrt and libraries after it must list them as the driver links them
# (driver/link_line.c: CONV for the CPU, BLAS, BASE, CUDA for --target
# cuda), and docs/runtime.md's table of groups must hold each group's. So
# a library added to the list fails here until every copy says it.
# Run as: cmake -DSOURCE_DIR=<repository root> -P check_link_lines.cmake
include(${SOURCE_DIR}/cmake/TgcLinkLibs.cmake)
tgc_link_flags(cpu ${TGC_LINK_CONV} ${TGC_LINK_BLAS} ${TGC_LINK_BASE})
tgc_link_flags(cuda ${TGC_LINK_BLAS} ${TGC_LINK_BASE} ${TGC_LINK_CUDA})
tgc_link_flags(all ${TGC_LINK_ALL})
set(passed 0)
set(failed 0)
set(files ${SOURCE_DIR}/README.md ${SOURCE_DIR}/codegen/glue.c ${SOURCE_DIR}/cmake/tgcrt.pc.in)
file(GLOB docs ${SOURCE_DIR}/docs/*.md)
list(APPEND files ${docs})
foreach(f ${files})
  file(STRINGS ${f} lines REGEX "-ltgcrt")
  foreach(line ${lines})
    # The -lNAME words after -ltgcrt, up to the first word that is not one.
    string(REGEX MATCH "-ltgcrt(( +-l[A-Za-z0-9_+]+)*)" m "${line}")
    string(STRIP "${CMAKE_MATCH_1}" libs)
    string(REGEX REPLACE " +" " " libs "${libs}")
    if(libs STREQUAL "" OR libs STREQUAL cpu OR libs STREQUAL cuda OR libs STREQUAL all)
      math(EXPR passed "${passed} + 1")
    else()
      message("FAIL ${f}: '${libs}' is none of the lines cmake/TgcLinkLibs.cmake makes:\n"
              "  CPU  '${cpu}'\n  CUDA '${cuda}'\n  all  '${all}'")
      math(EXPR failed "${failed} + 1")
    endif()
  endforeach()
endforeach()
# docs/runtime.md's table: "| group | `-lA -lB` | when |".
file(STRINGS ${SOURCE_DIR}/docs/runtime.md rows REGEX "^\\| (conv|BLAS|base|CUDA) \\| `")
foreach(group CONV BLAS BASE CUDA)
  tgc_link_flags(want ${TGC_LINK_${group}})
  string(TOLOWER ${group} lower)
  set(found "")
  foreach(row ${rows})
    string(TOLOWER "${row}" lrow)
    if(lrow MATCHES "^\\| ${lower} \\| `([^`]*)`")
      string(REGEX MATCH "^\\| [A-Za-z]+ \\| `([^`]*)`" m "${row}")
      set(found "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  if(found STREQUAL want)
    math(EXPR passed "${passed} + 1")
  else()
    message("FAIL docs/runtime.md's row for the ${group} group says '${found}', "
            "cmake/TgcLinkLibs.cmake '${want}'")
    math(EXPR failed "${failed} + 1")
  endif()
endforeach()
message("link lines: ${passed} passed, ${failed} failed")
if(failed OR passed LESS 6)
  message(FATAL_ERROR "a link line is not the one cmake/TgcLinkLibs.cmake makes (or none was found)")
endif()
