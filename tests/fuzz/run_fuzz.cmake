# Runs the libFuzzer target FUZZER for SECONDS seconds on a fresh copy of CORPUS (cmake -P;
# see CMakeLists.txt). Fails when libFuzzer exits non-zero: a crash, leak,
# sanitizer report, timeout or OOM; the reproducer is left in WORK/artifacts.
#
# SEED (default 1) makes the run a gate rather than a lottery: the same tree
# explores the same inputs, so CI's verdict depends on the code, not on the
# draw (a random run once failed CI on a bug older than the change under
# test). SEED=0 draws a new seed, for bug hunting: scripts/fuzz.sh.
# TIMEOUT (default 20 s) is per input: under ASan on a loaded 2-core CI
# machine an ordinary input can take seconds, and a hang still fails.
foreach(v FUZZER CORPUS DICT WORK SECONDS)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_fuzz.cmake: ${v} is not set")
  endif()
endforeach()
if(NOT DEFINED SEED)
  set(SEED 1)
endif()
if(NOT DEFINED TIMEOUT)
  set(TIMEOUT 20)
endif()

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
message(STATUS "fuzzing for ${SECONDS} s (seed ${SEED}) in ${dir}")
set(dict_flag "")
if(DICT)
  set(dict_flag "-dict=${DICT}")
endif()

# The fuzzer's own output (tens of KiB of progress lines) goes to a log:
# on failure only its head (the seed) and its tail (the sanitizer's report)
# are printed, with the reproducer, so that a CI excerpt of the test's
# output shows the crash itself rather than progress lines.
set(log ${dir}/fuzz.log)
execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -seed=${SEED} ${dict_flag} -timeout=${TIMEOUT}
          -rss_limit_mb=2048 -print_final_stats=1
          -artifact_prefix=${dir}/artifacts/ ${dir}/corpus
  RESULT_VARIABLE rc
  OUTPUT_FILE ${log}
  ERROR_FILE ${log})
file(STRINGS ${log} lines)
list(LENGTH lines n)
if(NOT rc EQUAL 0)
  get_filename_component(name ${FUZZER} NAME)
  set(head_n 6)
  if(n LESS head_n)
    set(head_n ${n})
  endif()
  list(SUBLIST lines 0 ${head_n} head)
  set(tail_from 0)
  if(n GREATER 120)
    math(EXPR tail_from "${n} - 120")
  endif()
  list(SUBLIST lines ${tail_from} -1 tail)
  string(REPLACE ";" "\n" head "${head}")
  string(REPLACE ";" "\n" tail "${tail}")
  message("---- ${name}: the first lines of its output ----\n${head}")
  message("---- ${name}: its last lines (of ${n}) ----\n${tail}")
  file(GLOB repro ${dir}/artifacts/*)
  foreach(f ${repro})
    file(SIZE ${f} size)
    if(size LESS 8192)
      file(READ ${f} hex HEX)
      message("---- reproducer ${f} (${size} bytes, hex) ----\n${hex}")
    else()
      message("---- reproducer ${f} (${size} bytes) ----")
    endif()
  endforeach()
  message(FATAL_ERROR "${name} exited with ${rc}; reproducer(s) in ${dir}/artifacts/, "
                      "its whole output in ${log}")
endif()
foreach(l ${lines})
  if(l MATCHES "^(Done|stat::number_of_executed_units|stat::peak_rss_mb)")
    message(STATUS "${l}")
  endif()
endforeach()
file(REMOVE_RECURSE ${dir})
