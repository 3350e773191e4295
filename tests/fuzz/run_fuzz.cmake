# Runs the libFuzzer target FUZZER for SECONDS seconds on a fresh copy of CORPUS (cmake -P;
# see CMakeLists.txt). Fails when libFuzzer exits non-zero: a crash, leak,
# sanitizer report, timeout or OOM; the reproducer is left in WORK/artifacts.
foreach(v FUZZER CORPUS DICT WORK SECONDS)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_fuzz.cmake: ${v} is not set")
  endif()
endforeach()

string(RANDOM LENGTH 8 suffix)
set(dir ${WORK}/run-${suffix})
file(REMOVE_RECURSE ${dir})
file(MAKE_DIRECTORY ${dir}/corpus ${dir}/artifacts)
# PATTERN: the seed files (default *.tg); an empty DICT: no dictionary.
if(NOT DEFINED PATTERN)
  set(PATTERN "*.tg")
endif()
file(GLOB seeds ${CORPUS}/${PATTERN})
file(COPY ${seeds} DESTINATION ${dir}/corpus)
message(STATUS "fuzzing for ${SECONDS} s in ${dir}")
set(dict_flag "")
if(DICT)
  set(dict_flag "-dict=${DICT}")
endif()

execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} ${dict_flag} -timeout=5
          -rss_limit_mb=2048 -print_final_stats=1
          -artifact_prefix=${dir}/artifacts/ ${dir}/corpus
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  get_filename_component(name ${FUZZER} NAME)
  message(FATAL_ERROR "${name} exited with ${rc}; reproducer(s) in ${dir}/artifacts/")
endif()
file(REMOVE_RECURSE ${dir})
