# Every public header, included on its own with -fno-exceptions, must hit config.hpp's #error
# (the API throws, so such a build is refused with a message that says why). Preprocessing is
# enough to see it, and 20 times faster than parsing (clang parses on after an #error).
# Run by CTest (`cmake -P`). Inputs: CXX, INCLUDE (the directory that holds spool/).
foreach(var IN ITEMS CXX INCLUDE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "no_exceptions.cmake: ${var} is not set")
  endif()
endforeach()
file(GLOB_RECURSE headers RELATIVE "${INCLUDE}" "${INCLUDE}/spool/*.hpp")
list(SORT headers)
set(source "${CMAKE_CURRENT_BINARY_DIR}/no_exceptions.cpp")
foreach(header IN LISTS headers)
  file(WRITE "${source}" "#include \"${header}\"\n")
  execute_process(COMMAND ${CXX} -std=c++20 -E -fno-exceptions -I${INCLUDE} ${source}
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE out)
  if(rc EQUAL 0)
    message(FATAL_ERROR "${header} was accepted with -fno-exceptions; it must include "
                        "spool/config.hpp, which refuses such builds")
  endif()
  if(NOT out MATCHES "spool needs C\\+\\+ exceptions")
    message(FATAL_ERROR "${header} with -fno-exceptions failed without config.hpp's #error:\n${out}")
  endif()
endforeach()
list(LENGTH headers count)
message(STATUS "all ${count} public headers refuse -fno-exceptions with config.hpp's message")
