# A compile-fail check, run by CTest (`cmake -P`): SOURCE compiled with -DSPOOL_CASE_<CASE>
# must fail with a diagnostic matching EXPECT in at most MAX_LINES lines (the point of these
# errors is to be short), and compile cleanly with -DSPOOL_CASE_<CASE> -DSPOOL_FIXED too, so
# that the failure is the misuse's, not a broken snippet's.
# Inputs: CXX, SOURCE, INCLUDE, CASE, EXPECT, MAX_LINES, FLAGS (a ;-list).
foreach(var IN ITEMS CXX SOURCE INCLUDE CASE EXPECT MAX_LINES)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check.cmake: ${var} is not set")
  endif()
endforeach()
set(command ${CXX} -std=c++20 -fsyntax-only ${FLAGS} -I${INCLUDE} -DSPOOL_CASE_${CASE} ${SOURCE})

execute_process(COMMAND ${command} -DSPOOL_FIXED RESULT_VARIABLE fixed_rc
                OUTPUT_VARIABLE fixed_out ERROR_VARIABLE fixed_out)
if(NOT fixed_rc EQUAL 0)
  message(FATAL_ERROR "the fixed form of ${CASE} does not compile:\n${fixed_out}")
endif()

execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0)
  message(FATAL_ERROR "${CASE} compiled; it must be refused with \"${EXPECT}\"")
endif()
if(NOT out MATCHES "${EXPECT}")
  message(FATAL_ERROR "${CASE} failed without saying \"${EXPECT}\":\n${out}")
endif()
string(REGEX MATCHALL "\n" newlines "${out}")
list(LENGTH newlines lines)
if(lines GREATER MAX_LINES)
  message(FATAL_ERROR "${CASE}: ${lines} lines of errors, more than ${MAX_LINES}:\n${out}")
endif()
message(STATUS "${CASE} refused in ${lines} lines")
