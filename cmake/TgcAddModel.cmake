# tgc_add_model(TARGET GRAPH file.tg [WEIGHTS file] [TARGET_DEVICE cpu|cuda]
#               [DIMS name=value ...] [EMBED_WEIGHTS])
#
# Compiles the graph at build time with `tgc compile` into
#   ${CMAKE_CURRENT_BINARY_DIR}/tgc_models/TARGET/TARGET.o and TARGET.h
# and makes TARGET a static library of that object: linking it adds the
# header's directory to the include path (#include "TARGET.h") and links
# tgc::tgcrt with every library a model may need (oneDNN and OpenMP for
# convolutions, OpenBLAS, cJSON, pthreads, libm, libdl: the list of
# cmake/TgcLinkLibs.cmake). The command reruns
# when the graph, the weights or the tgc executable change, and only then.
# Relative GRAPH and WEIGHTS paths are relative to CMAKE_CURRENT_SOURCE_DIR.
# WEIGHTS are checked at build time (and embedded with EMBED_WEIGHTS; else
# the program passes a weights path, or NULL for the graph's initialisers,
# to NAME_create). Needs the targets tgc::tgc and tgc::tgcrt:
# find_package(tgc) or add_subdirectory(tgc) defines them.
# See docs/integration.md.
include_guard(GLOBAL)

function(tgc_add_model target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "EMBED_WEIGHTS" "GRAPH;WEIGHTS;TARGET_DEVICE" "DIMS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "tgc_add_model(${target}): unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_GRAPH)
    message(FATAL_ERROR "tgc_add_model(${target}): GRAPH file.tg is required")
  endif()
  if(NOT TARGET tgc::tgc OR NOT TARGET tgc::tgcrt)
    message(FATAL_ERROR "tgc_add_model(${target}): the targets tgc::tgc and tgc::tgcrt are "
                        "missing: use find_package(tgc) or add_subdirectory() of tgc first")
  endif()
  if(ARG_EMBED_WEIGHTS AND NOT ARG_WEIGHTS)
    message(FATAL_ERROR "tgc_add_model(${target}): EMBED_WEIGHTS needs WEIGHTS file")
  endif()

  get_filename_component(graph "${ARG_GRAPH}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/tgc_models/${target}")
  set(obj "${dir}/${target}.o")
  set(hdr "${dir}/${target}.h")
  set(args compile "${graph}" -o "${obj}" --header "${hdr}")
  set(deps "${graph}")
  if(ARG_TARGET_DEVICE)
    if(NOT ARG_TARGET_DEVICE MATCHES "^(cpu|cuda)$")
      message(FATAL_ERROR "tgc_add_model(${target}): TARGET_DEVICE must be cpu or cuda, "
                          "not '${ARG_TARGET_DEVICE}'")
    endif()
    list(APPEND args --target ${ARG_TARGET_DEVICE})
  endif()
  if(ARG_WEIGHTS)
    get_filename_component(weights "${ARG_WEIGHTS}" ABSOLUTE
                           BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND args --weights "${weights}")
    list(APPEND deps "${weights}")
    if(ARG_EMBED_WEIGHTS)
      list(APPEND args --embed-weights)
    endif()
  endif()
  foreach(d IN LISTS ARG_DIMS)
    if(NOT d MATCHES "^[A-Za-z_][A-Za-z0-9_]*=-?[0-9]+$")
      message(FATAL_ERROR "tgc_add_model(${target}): DIMS expects name=value, found '${d}'")
    endif()
    list(APPEND args -D "${d}")
  endforeach()

  # Rerun when tgc itself is rebuilt: the in-tree target (add_subdirectory)
  # or the imported executable's file.
  get_target_property(tgc_real tgc::tgc ALIASED_TARGET)
  if(tgc_real)
    list(APPEND deps ${tgc_real})
  else()
    list(APPEND deps "$<TARGET_FILE:tgc::tgc>")
  endif()

  file(MAKE_DIRECTORY "${dir}")
  add_custom_command(
    OUTPUT "${obj}" "${hdr}"
    COMMAND tgc::tgc ${args}
    DEPENDS ${deps}
    COMMENT "Generating tgc model ${target} from ${ARG_GRAPH}"
    VERBATIM)
  set_source_files_properties("${obj}" PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  set_source_files_properties("${hdr}" PROPERTIES GENERATED TRUE HEADER_FILE_ONLY TRUE)
  add_library(${target} STATIC "${obj}" "${hdr}")
  set_target_properties(${target} PROPERTIES LINKER_LANGUAGE C)
  target_include_directories(${target} PUBLIC "$<BUILD_INTERFACE:${dir}>")
  target_link_libraries(${target} PUBLIC tgc::tgcrt)
  set_property(TARGET ${target} PROPERTY TGC_MODEL_HEADER "${hdr}")
  set_property(TARGET ${target} PROPERTY TGC_MODEL_OBJECT "${obj}")
endfunction()
