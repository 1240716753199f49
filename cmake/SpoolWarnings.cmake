# The project's warning flags, defined once. spool_warnings(target) applies them to one
# of this project's targets, privately: consumers of the installed package never see them.
# -Werror only where spool is the top-level project or SPOOL_WERROR=ON (CI sets it): a user
# who adds spool with add_subdirectory and a newer compiler gets warnings, not a broken build.
option(SPOOL_WERROR "Treat spool's compiler warnings as errors" ${PROJECT_IS_TOP_LEVEL})
set(SPOOL_WARNING_FLAGS -Wall -Wextra -Wpedantic)
if(SPOOL_WERROR)
  list(APPEND SPOOL_WARNING_FLAGS -Werror)
endif()
# spool_warnings(target [LIBRARY]). LIBRARY, for libspool's own sources: also a global
# function defined without an earlier declaration (g++'s -Wmissing-declarations, clang's
# -Wmissing-prototypes), since a definition that does not see its public SPOOL_API
# declaration is hidden in libspool.so, and programs that call it fail to link.
function(spool_warnings target)
  target_compile_options(${target} PRIVATE ${SPOOL_WARNING_FLAGS})
  if(ARGV1 STREQUAL "LIBRARY")
    target_compile_options(${target} PRIVATE
      $<IF:$<CXX_COMPILER_ID:Clang>,-Wmissing-prototypes,-Wmissing-declarations>)
  endif()
endfunction()
