# Writes OUT, a header defining FP4MOE_GIT_COMMIT (the checkout's short commit,
# "-dirty" when tracked files differ from it, "unknown" outside git). Run at
# every build by tools/CMakeLists.txt; rewrites OUT only when that changes,
# so the benchmark names the commit it was built from, not the one CMake
# was configured at, and an unchanged commit recompiles nothing.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY "${SRC}"
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
else()
  execute_process(COMMAND git diff --quiet HEAD WORKING_DIRECTORY "${SRC}" RESULT_VARIABLE dirty ERROR_QUIET)
  if(NOT dirty EQUAL 0)
    string(APPEND commit "-dirty")
  endif()
endif()
set(content "#pragma once\n#define FP4MOE_GIT_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL content)
  file(WRITE "${OUT}" "${content}")
endif()
