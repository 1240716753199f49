# Script mode (cmake -P), run after a test binary is linked: asks it for its tests
# (--gtest_list_tests) and writes CTEST_FILE, which registers one CTest test per gtest test
# suite, run with --gtest_filter=Suite.*. One process per suite instead of one per test: each
# process start costs about 0.15 s under the sanitizers, which was half of the suite's time.
# Parameters: EXECUTABLE, CTEST_FILE, LABEL, TIMEOUT, and optionally PREFIX (put before each
# name) and ENVIRONMENT (KEY=VALUE, set for each test).
execute_process(COMMAND "${EXECUTABLE}" --gtest_list_tests
                OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE status
                TIMEOUT 60)
if(NOT status EQUAL 0)
  file(REMOVE "${CTEST_FILE}")
  message(FATAL_ERROR "${EXECUTABLE} --gtest_list_tests failed (${status}): ${errors}")
endif()

set(script "")
string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
foreach(line IN LISTS lines)
  # A suite's line starts in column 0 and ends with '.', before gtest's "  # TypeParam" note.
  if(line MATCHES "^([^ #][^ ]*)\\.( .*)?$")
    set(suite "${CMAKE_MATCH_1}")
    if(suite MATCHES "^DISABLED_|/DISABLED_")
      continue()
    endif()
    set(name "${PREFIX}${suite}")
    string(APPEND script
           "add_test([==[${name}]==] [==[${EXECUTABLE}]==] [==[--gtest_filter=${suite}.*]==])\n"
           "set_tests_properties([==[${name}]==] PROPERTIES LABELS ${LABEL} TIMEOUT ${TIMEOUT}")
    if(ENVIRONMENT)
      string(APPEND script " ENVIRONMENT [==[${ENVIRONMENT}]==]")
    endif()
    string(APPEND script ")\n")
  endif()
endforeach()
if(script STREQUAL "")
  message(FATAL_ERROR "${EXECUTABLE} lists no test suite")
endif()
file(WRITE "${CTEST_FILE}" "${script}")
