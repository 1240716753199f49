# The project's warning flags, defined once. spool_warnings(target) applies them to one
# of this project's targets, privately: consumers of the installed package never see them.
set(SPOOL_WARNING_FLAGS -Wall -Wextra -Wpedantic -Werror)
function(spool_warnings target)
  target_compile_options(${target} PRIVATE ${SPOOL_WARNING_FLAGS})
endfunction()
